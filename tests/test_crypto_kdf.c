/*
 * Tests of hash and key derivation: SHA-2 and SHAKE256 known answers, the
 * RFC 9529 trace 1 TH_2 and PRK_2e, HKDF against RFC 5869 and its limits,
 * KMAC256 against NIST SP 800-185. Every test runs against each backend in turn (OpenSSL,
 * libsodium, the composite `auto`).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "edhoc/crypto.h"
#include "vectors.h"

#include "crypto_test_common.h"

/* ---- hash ------------------------------------------------------------- */
static void test_hash_known_answers(void **state)
{
    (void)state;
    uint8_t out[64], want[64];
    const uint8_t *abc = (const uint8_t *)"abc";

    assert_int_equal(ops->hash(EDHOC_COSE_SHA256, abc, 3, out), 0);
    hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", want, 64);
    assert_bytes_equal(out, want, 32);

    assert_int_equal(ops->hash(EDHOC_COSE_SHA384, abc, 3, out), 0);
    hex("cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
        "8086072ba1e7cc2358baeca134c825a7",
        want, 64);
    assert_bytes_equal(out, want, 48);

    /* SHAKE256 with the 512-bit output COSE -45 names. */
    assert_int_equal(ops->hash(EDHOC_COSE_SHAKE256, abc, 3, out), 0);
    hex("483366601360a8771c6863080cc4114d8db44530f8f1e1ee4f94ea37e78b5739"
        "d5a15bef186a5386c75744c0527e1faa9f8726e462a12a4feb06bd8801e751e4",
        want, 64);
    assert_bytes_equal(out, want, 64);

    /* Empty input, NULL pointer. */
    assert_int_equal(ops->hash(EDHOC_COSE_SHA256, NULL, 0, out), 0);
    hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", want, 64);
    assert_bytes_equal(out, want, 32);

    assert_int_equal(ops->hash(EDHOC_COSE_AES_CCM_16_64_128, abc, 3, out),
                     EDHOC_CRYPTO_ERR_UNSUPPORTED);
}

static void test_hash_trace1_th2(void **state)
{
    (void)state;
    struct vec_scope t = vectors("rfc9529-trace1.json");
    uint8_t in[256], want[32], out[32];
    size_t n = vec_hex(t, "input_th_2", in, sizeof in);
    vec_hex(t, "th_2", want, sizeof want);
    assert_int_equal(ops->hash(EDHOC_COSE_SHA256, in, n, out), 0);
    assert_bytes_equal(out, want, 32);
}

/* ---- HKDF / KMAC ------------------------------------------------------ */
static void test_hkdf_rfc5869(void **state)
{
    (void)state;
    uint8_t ikm[22], salt[13], info[10], prk[48], okm[100], want[100];
    memset(ikm, 0x0b, sizeof ikm);
    for (size_t i = 0; i < sizeof salt; i++)
        salt[i] = (uint8_t)i;
    for (size_t i = 0; i < sizeof info; i++)
        info[i] = (uint8_t)(0xf0 + i);

    /* Test case 1 */
    assert_int_equal(ops->hkdf_extract(EDHOC_COSE_SHA256, salt, 13, ikm, 22, prk), 0);
    hex("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5", want, 100);
    assert_bytes_equal(prk, want, 32);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, prk, 32, info, 10, okm, 42), 0);
    hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
        "34007208d5b887185865",
        want, 100);
    assert_bytes_equal(okm, want, 42);

    /* Test case 3: empty salt and info */
    assert_int_equal(ops->hkdf_extract(EDHOC_COSE_SHA256, NULL, 0, ikm, 22, prk), 0);
    hex("19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04", want, 100);
    assert_bytes_equal(prk, want, 32);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, prk, 32, NULL, 0, okm, 42), 0);
    hex("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"
        "9d201395faa4b61a96c8",
        want, 100);
    assert_bytes_equal(okm, want, 42);

    /* SHA-384 with test case 1's inputs, 100 bytes (3 blocks); reference
     * computed with an independent HMAC implementation. */
    assert_int_equal(ops->hkdf_extract(EDHOC_COSE_SHA384, salt, 13, ikm, 22, prk), 0);
    hex("704b39990779ce1dc548052c7dc39f303570dd13fb39f7acc564680bef80e8de"
        "c70ee9a7e1f3e293ef68eceb072a5ade",
        want, 100);
    assert_bytes_equal(prk, want, 48);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA384, prk, 48, info, 10, okm, 100), 0);
    hex("9b5097a86038b805309076a44b3a9f38063e25b516dcbf369f394cfab43685f7"
        "48b6457763e4f0204fc5d95d1da3e62587b22eb8943d0fab6bb631a2fe9df1a6"
        "8c6ce5d56116a52005b3f122b88b39b7251fcd6c44d3ef25f20ed96802bf1b2c"
        "1d98bf74",
        want, 100);
    assert_bytes_equal(okm, want, 100);
}

static void test_hkdf_limits(void **state)
{
    (void)state;
    uint8_t prk[32] = {1}, out[64];
    static uint8_t big[255 * 32 + 1];

    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, prk, 32, NULL, 0, big, 255 * 32), 0);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, prk, 32, NULL, 0, big, 255 * 32 + 1),
                     EDHOC_CRYPTO_ERR_INVALID);
    /* Zero-length output is a no-op. */
    memset(out, 0xee, sizeof out);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, prk, 32, NULL, 0, out, 0), 0);
    assert_int_equal(out[0], 0xee);
    assert_int_equal(ops->hkdf_extract(EDHOC_COSE_A128GCM, prk, 32, prk, 32, out),
                     EDHOC_CRYPTO_ERR_UNSUPPORTED);
    assert_int_equal(ops->hkdf_expand(7, prk, 32, NULL, 0, out, 16), EDHOC_CRYPTO_ERR_UNSUPPORTED);
}

static void test_hkdf_trace1_prk_2e(void **state)
{
    (void)state;
    struct vec_scope t = vectors("rfc9529-trace1.json");
    uint8_t salt[32], g_xy[32], want[32], prk[32], info[128], k3[16], want_k3[16];
    vec_hex(t, "salt", salt, sizeof salt);
    vec_hex(t, "g_xy", g_xy, sizeof g_xy);
    vec_hex(t, "prk_2e", want, sizeof want);
    assert_int_equal(ops->hkdf_extract(EDHOC_COSE_SHA256, salt, 32, g_xy, 32, prk), 0);
    assert_bytes_equal(prk, want, 32);

    /* K_3 = EDHOC_KDF(PRK_3e2m, 3, TH_3, 16) = HKDF-Expand(PRK_3e2m, info). */
    uint8_t prk_3e2m[32];
    vec_hex(t, "prk_3e2m", prk_3e2m, sizeof prk_3e2m);
    size_t info_len = vec_hex(t, "info_k_3", info, sizeof info);
    vec_hex(t, "k_3", want_k3, sizeof want_k3);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, prk_3e2m, 32, info, info_len, k3, 16), 0);
    assert_bytes_equal(k3, want_k3, 16);
}

static void test_kmac256(void **state)
{
    (void)state;
    uint8_t key[32], data[200], out[64], want[64], out2[64], hmac[64];
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (uint8_t)(0x40 + i);
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)i;
    /* NIST SP 800-185 KMAC256 sample #5: S = "" (as EDHOC uses), L = 512. */
    hex("75358cf39e41494e949707927cee0af20a3ff553904c86b08f21cc414bcfd691"
        "589d27cf5e15369cbbff8b9a4c2eb17800855d0235ff635da82533ec6b759b69",
        want, 64);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHAKE256, key, 32, data, 200, out, 64), 0);
    assert_bytes_equal(out, want, 64);
    /* EDHOC_Extract(salt, IKM) = KMAC256(salt, IKM, 512, ""): the same call. */
    assert_int_equal(ops->hkdf_extract(EDHOC_COSE_SHAKE256, key, 32, data, 200, out2), 0);
    assert_bytes_equal(out2, want, 64);

    /* L is part of the input: a shorter output is not a prefix. */
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHAKE256, key, 32, data, 200, out2, 32), 0);
    assert_memory_not_equal(out2, out, 32);
    /* Deterministic, and not HMAC. */
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHAKE256, key, 32, data, 200, out, 32), 0);
    assert_bytes_equal(out, out2, 32);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, key, 32, data, 200, hmac, 32), 0);
    assert_memory_not_equal(out, hmac, 32);
    /* Long outputs (keystream for a long PLAINTEXT_2). */
    static uint8_t ks[9000];
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHAKE256, key, 32, data, 4, ks, sizeof ks), 0);
    assert_false(all_zero(ks + sizeof ks - 64, 64));
    /* Keys OpenSSL's KMAC cannot take. */
    assert_int_equal(ops->hkdf_extract(EDHOC_COSE_SHAKE256, NULL, 0, data, 4, out),
                     EDHOC_CRYPTO_ERR_INVALID);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHAKE256, key, 3, data, 4, out, 16),
                     EDHOC_CRYPTO_ERR_INVALID);
}

int main(void)
{
    int failed = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_known_answers), cmocka_unit_test(test_hash_trace1_th2),
        cmocka_unit_test(test_hkdf_rfc5869),       cmocka_unit_test(test_hkdf_limits),
        cmocka_unit_test(test_hkdf_trace1_prk_2e), cmocka_unit_test(test_kmac256),
    };
    for (current = 0; current < sizeof backends / sizeof backends[0]; current++)
        failed += cmocka_run_group_tests_name(backends[current].group, tests, setup, NULL);
    return failed;
}
