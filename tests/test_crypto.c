/*
 * Tests of the crypto backends: known answers from RFC 5869, NIST
 * SP 800-185, RFC 6979, RFC 7748, RFC 8032, RFC 8613 Appendix C and the
 * RFC 9529 traces; round trips and single-byte corruptions; the exact error
 * for each bad input. Every test runs against each backend in turn (OpenSSL,
 * libsodium, the composite `auto`), as issue #18 asks: the same answers and
 * the same refusals from all three.
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

static const struct edhoc_crypto_ops *ops;

/* The backends every test runs against; setup() installs backends[current]. */
static const struct backend {
    const char *group;
    const struct edhoc_crypto_ops *(*get)(void);
    const char *name_prefix;
} backends[] = {
    {"openssl", edhoc_crypto_openssl, "OpenSSL 3"},
    {"sodium", edhoc_crypto_sodium, "libsodium 1."},
    {"auto", edhoc_crypto_auto, "auto (libsodium 1."},
};
static size_t current;

/* vec_load keeps the text allocated: load each file once and keep it
 * reachable from here. */
static struct vec_scope vectors(const char *name)
{
    static struct { const char *name; struct vec_scope scope; } cache[4];
    for (size_t i = 0; i < sizeof cache / sizeof cache[0]; i++) {
        if (cache[i].name == NULL) {
            cache[i].name = name;
            cache[i].scope = vec_load(name);
        }
        if (strcmp(cache[i].name, name) == 0)
            return cache[i].scope;
    }
    fail_msg("too many vector files");
    return cache[0].scope;
}

static size_t hex(const char *h, uint8_t *out, size_t cap)
{
    long n = hex_decode(h, out, cap);
    assert_true(n >= 0);
    return (size_t)n;
}

#define assert_bytes_equal(a, b, n) assert_memory_equal((a), (b), (n))

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return false;
    return true;
}

/* ---- deterministic random source -------------------------------------- */

/* Hands out the concatenation of `chunks` in order, one chunk per call. */
struct fixed_random {
    const uint8_t *chunks[4];
    size_t lens[4];
    size_t next;
    size_t calls;
};

static int fixed_random(void *ctx, uint8_t *out, size_t len)
{
    struct fixed_random *fr = ctx;
    fr->calls++;
    if (fr->next >= 4 || fr->chunks[fr->next] == NULL || fr->lens[fr->next] != len)
        return EDHOC_CRYPTO_ERR_RANDOM;
    memcpy(out, fr->chunks[fr->next], len);
    fr->next++;
    return 0;
}

static struct edhoc_crypto_ops pinned_ops(struct fixed_random *fr)
{
    struct edhoc_crypto_ops copy = *ops;
    copy.random = fixed_random;
    copy.rng_ctx = fr;
    return copy;
}

/* ---- names, sizes, helpers --------------------------------------------- */

static void test_name_and_sizes(void **state)
{
    (void)state;
    assert_non_null(ops->name);
    const char *prefix = backends[current].name_prefix;
    assert_int_equal(strncmp(ops->name, prefix, strlen(prefix)), 0);
    assert_ptr_equal(ops, backends[current].get());

    assert_int_equal(edhoc_crypto_hash_len(EDHOC_COSE_SHA256), 32);
    assert_int_equal(edhoc_crypto_hash_len(EDHOC_COSE_SHA384), 48);
    assert_int_equal(edhoc_crypto_hash_len(EDHOC_COSE_SHAKE256), 64);
    assert_int_equal(edhoc_crypto_hash_len(EDHOC_COSE_AES_CCM_16_64_128), 0);

    static const struct { int alg; size_t key, nonce, tag; } aead[] = {
        {EDHOC_COSE_AES_CCM_16_64_128, 16, 13, 8},
        {EDHOC_COSE_AES_CCM_16_128_128, 16, 13, 16},
        {EDHOC_COSE_A128GCM, 16, 12, 16},
        {EDHOC_COSE_A256GCM, 32, 12, 16},
        {EDHOC_COSE_CHACHA20_POLY1305, 32, 12, 16},
        {EDHOC_COSE_SHA256, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof aead / sizeof aead[0]; i++) {
        assert_int_equal(edhoc_crypto_aead_key_len(aead[i].alg), aead[i].key);
        assert_int_equal(edhoc_crypto_aead_nonce_len(aead[i].alg), aead[i].nonce);
        assert_int_equal(edhoc_crypto_aead_tag_len(aead[i].alg), aead[i].tag);
    }

    static const struct { int crv; size_t priv, ecdh, sig; const char *name; } crv[] = {
        {EDHOC_COSE_CRV_P256, 32, 32, 64, "P-256"},
        {EDHOC_COSE_CRV_P384, 48, 48, 96, "P-384"},
        {EDHOC_COSE_CRV_X25519, 32, 32, 0, "X25519"},
        {EDHOC_COSE_CRV_X448, 56, 56, 0, "X448"},
        {EDHOC_COSE_CRV_ED25519, 32, 0, 64, "Ed25519"},
        {EDHOC_COSE_CRV_ED448, 57, 0, 114, "Ed448"},
        {99, 0, 0, 0, "unknown"},
    };
    for (size_t i = 0; i < sizeof crv / sizeof crv[0]; i++) {
        assert_int_equal(edhoc_crypto_priv_len(crv[i].crv), crv[i].priv);
        assert_int_equal(edhoc_crypto_ecdh_pub_len(crv[i].crv), crv[i].ecdh);
        assert_int_equal(edhoc_crypto_ecdh_secret_len(crv[i].crv), crv[i].ecdh);
        assert_int_equal(edhoc_crypto_sig_len(crv[i].crv), crv[i].sig);
        assert_string_equal(edhoc_crypto_curve_name(crv[i].crv), crv[i].name);
    }
    assert_string_equal(edhoc_crypto_alg_name(EDHOC_COSE_AES_CCM_16_64_128),
                        "AES-CCM-16-64-128");
    assert_string_equal(edhoc_crypto_alg_name(EDHOC_COSE_CHACHA20_POLY1305),
                        "ChaCha20/Poly1305");
    assert_string_equal(edhoc_crypto_alg_name(EDHOC_COSE_ES256), "ES256");
    assert_string_equal(edhoc_crypto_alg_name(EDHOC_COSE_SHAKE256), "SHAKE256");
    assert_string_equal(edhoc_crypto_alg_name(12345), "unknown");
}

static void test_ct_equal_and_wipe(void **state)
{
    (void)state;
    uint8_t a[40], b[40];
    memset(a, 0x5a, sizeof a);
    memcpy(b, a, sizeof b);
    assert_true(edhoc_ct_equal(a, b, sizeof a));
    assert_true(edhoc_ct_equal(a, b, 0));
    for (size_t i = 0; i < sizeof a; i++) {
        b[i] ^= 0x01;
        assert_false(edhoc_ct_equal(a, b, sizeof a));
        b[i] ^= 0x01;
    }
    edhoc_wipe(a, sizeof a);
    assert_true(all_zero(a, sizeof a));
    edhoc_wipe(NULL, 0);
}

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
        "8086072ba1e7cc2358baeca134c825a7", want, 64);
    assert_bytes_equal(out, want, 48);

    /* SHAKE256 with the 512-bit output COSE -45 names. */
    assert_int_equal(ops->hash(EDHOC_COSE_SHAKE256, abc, 3, out), 0);
    hex("483366601360a8771c6863080cc4114d8db44530f8f1e1ee4f94ea37e78b5739"
        "d5a15bef186a5386c75744c0527e1faa9f8726e462a12a4feb06bd8801e751e4", want, 64);
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
        "34007208d5b887185865", want, 100);
    assert_bytes_equal(okm, want, 42);

    /* Test case 3: empty salt and info */
    assert_int_equal(ops->hkdf_extract(EDHOC_COSE_SHA256, NULL, 0, ikm, 22, prk), 0);
    hex("19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04", want, 100);
    assert_bytes_equal(prk, want, 32);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, prk, 32, NULL, 0, okm, 42), 0);
    hex("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"
        "9d201395faa4b61a96c8", want, 100);
    assert_bytes_equal(okm, want, 42);

    /* SHA-384 with test case 1's inputs, 100 bytes (3 blocks); reference
     * computed with an independent HMAC implementation. */
    assert_int_equal(ops->hkdf_extract(EDHOC_COSE_SHA384, salt, 13, ikm, 22, prk), 0);
    hex("704b39990779ce1dc548052c7dc39f303570dd13fb39f7acc564680bef80e8de"
        "c70ee9a7e1f3e293ef68eceb072a5ade", want, 100);
    assert_bytes_equal(prk, want, 48);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA384, prk, 48, info, 10, okm, 100), 0);
    hex("9b5097a86038b805309076a44b3a9f38063e25b516dcbf369f394cfab43685f7"
        "48b6457763e4f0204fc5d95d1da3e62587b22eb8943d0fab6bb631a2fe9df1a6"
        "8c6ce5d56116a52005b3f122b88b39b7251fcd6c44d3ef25f20ed96802bf1b2c"
        "1d98bf74", want, 100);
    assert_bytes_equal(okm, want, 100);
}

static void test_hkdf_limits(void **state)
{
    (void)state;
    uint8_t prk[32] = {1}, out[64];
    static uint8_t big[255 * 32 + 1];

    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, prk, 32, NULL, 0, big, 255 * 32), 0);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, prk, 32, NULL, 0, big,
                                      255 * 32 + 1),
                     EDHOC_CRYPTO_ERR_INVALID);
    /* Zero-length output is a no-op. */
    memset(out, 0xee, sizeof out);
    assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, prk, 32, NULL, 0, out, 0), 0);
    assert_int_equal(out[0], 0xee);
    assert_int_equal(ops->hkdf_extract(EDHOC_COSE_A128GCM, prk, 32, prk, 32, out),
                     EDHOC_CRYPTO_ERR_UNSUPPORTED);
    assert_int_equal(ops->hkdf_expand(7, prk, 32, NULL, 0, out, 16),
                     EDHOC_CRYPTO_ERR_UNSUPPORTED);
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
        "589d27cf5e15369cbbff8b9a4c2eb17800855d0235ff635da82533ec6b759b69", want, 64);
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

/* ---- AEAD ------------------------------------------------------------- */

static void check_aead_kat(struct vec_scope v, const char *key_name, const char *nonce_name,
                           const char *aad_name, const char *pt_name, const char *ct_name,
                           int alg)
{
    uint8_t key[32], nonce[13], aad[128], pt[256], ct[300], want[300], back[256];
    vec_hex(v, key_name, key, sizeof key);
    vec_hex(v, nonce_name, nonce, sizeof nonce);
    size_t aad_len = vec_hex(v, aad_name, aad, sizeof aad);
    size_t pt_len = vec_hex(v, pt_name, pt, sizeof pt);
    size_t ct_len = vec_hex(v, ct_name, want, sizeof want);
    assert_int_equal(ct_len, pt_len + edhoc_crypto_aead_tag_len(alg));
    assert_int_equal(ops->aead_encrypt(alg, key, nonce, aad, aad_len, pt, pt_len, ct), 0);
    assert_bytes_equal(ct, want, ct_len);
    memset(back, 0xaa, sizeof back);
    assert_int_equal(ops->aead_decrypt(alg, key, nonce, aad, aad_len, ct, ct_len, back), 0);
    if (pt_len > 0)
        assert_bytes_equal(back, pt, pt_len);
    /* Corrupted tag: authentication fails. */
    ct[ct_len - 1] ^= 0x80;
    assert_int_equal(ops->aead_decrypt(alg, key, nonce, aad, aad_len, ct, ct_len, back),
                     EDHOC_CRYPTO_ERR_AUTH);
}

static void test_aead_oscore_vectors(void **state)
{
    (void)state;
    struct vec_scope c = vectors("rfc8613-appendix-c.json");
    check_aead_kat(vec_object(c, "C.4"), "encryption_key", "nonce", "aad", "plaintext",
                   "ciphertext", EDHOC_COSE_AES_CCM_16_64_128);
    check_aead_kat(vec_object(c, "C.7"), "encryption_key", "nonce", "aad", "plaintext",
                   "ciphertext", EDHOC_COSE_AES_CCM_16_64_128);
    check_aead_kat(vec_object(c, "C.8"), "encryption_key", "nonce", "aad", "plaintext",
                   "ciphertext", EDHOC_COSE_AES_CCM_16_64_128);
}

static void test_aead_edhoc_vectors(void **state)
{
    (void)state;
    /* message_3: AES-CCM-16-64-128 with the Enc_structure as AAD. */
    struct vec_scope t1 = vectors("rfc9529-trace1.json");
    check_aead_kat(t1, "k_3", "iv_3", "a_3", "plaintext_3", "ciphertext_3",
                   EDHOC_COSE_AES_CCM_16_64_128);
    /* message_4: empty PLAINTEXT_4, the ciphertext is the bare 8-byte tag. */
    check_aead_kat(t1, "k_4", "iv_4", "a_4", "plaintext_4", "ciphertext_4",
                   EDHOC_COSE_AES_CCM_16_64_128);
    struct vec_scope t2 = vectors("rfc9529-trace2.json");
    check_aead_kat(t2, "k_3", "iv_3", "a_3", "plaintext_3", "ciphertext_3",
                   EDHOC_COSE_AES_CCM_16_64_128);
    check_aead_kat(t2, "k_4", "iv_4", "a_4", "plaintext_4", "ciphertext_4",
                   EDHOC_COSE_AES_CCM_16_64_128);
}

static const int aead_algs[] = {
    EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_AES_CCM_16_128_128, EDHOC_COSE_A128GCM,
    EDHOC_COSE_A256GCM, EDHOC_COSE_CHACHA20_POLY1305,
};

static void test_aead_round_trips(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 16, 1000};
    static uint8_t pt[1000], ct[1016], back[1000];
    uint8_t key[32], nonce[13], aad[37];
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (uint8_t)(3 * i + 1);
    for (size_t i = 0; i < sizeof nonce; i++)
        nonce[i] = (uint8_t)(0xa0 + i);
    for (size_t i = 0; i < sizeof aad; i++)
        aad[i] = (uint8_t)(0x55 ^ i);
    for (size_t i = 0; i < sizeof pt; i++)
        pt[i] = (uint8_t)(i * 7);

    for (size_t a = 0; a < sizeof aead_algs / sizeof aead_algs[0]; a++) {
        int alg = aead_algs[a];
        size_t tag = edhoc_crypto_aead_tag_len(alg);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            for (size_t aad_len = 0; aad_len <= sizeof aad; aad_len += sizeof aad) {
                size_t n = sizes[s], ct_len = n + tag;
                assert_int_equal(ops->aead_encrypt(alg, key, nonce, aad, aad_len, pt, n, ct), 0);
                if (n > 0)
                    assert_memory_not_equal(ct, pt, n);
                memset(back, 0xaa, sizeof back);
                assert_int_equal(
                    ops->aead_decrypt(alg, key, nonce, aad, aad_len, ct, ct_len, back), 0);
                if (n > 0)
                    assert_bytes_equal(back, pt, n);
                /* Every single flipped byte of ct || tag is caught, and the
                 * output is wiped. (For 1000 bytes, every 37th byte plus the
                 * whole tag keeps the test fast.) */
                for (size_t i = 0; i < ct_len; i += (n > 100 && i < n) ? 37 : 1) {
                    ct[i] ^= 0x01;
                    memset(back, 0xaa, sizeof back);
                    assert_int_equal(
                        ops->aead_decrypt(alg, key, nonce, aad, aad_len, ct, ct_len, back),
                        EDHOC_CRYPTO_ERR_AUTH);
                    assert_true(all_zero(back, n));
                    ct[i] ^= 0x01;
                }
                /* A changed AAD, nonce or key is caught too. */
                if (aad_len > 0) {
                    aad[0] ^= 1;
                    assert_int_equal(
                        ops->aead_decrypt(alg, key, nonce, aad, aad_len, ct, ct_len, back),
                        EDHOC_CRYPTO_ERR_AUTH);
                    aad[0] ^= 1;
                }
                nonce[0] ^= 1;
                assert_int_equal(
                    ops->aead_decrypt(alg, key, nonce, aad, aad_len, ct, ct_len, back),
                    EDHOC_CRYPTO_ERR_AUTH);
                nonce[0] ^= 1;
                key[0] ^= 1;
                assert_int_equal(
                    ops->aead_decrypt(alg, key, nonce, aad, aad_len, ct, ct_len, back),
                    EDHOC_CRYPTO_ERR_AUTH);
                key[0] ^= 1;
            }
        }
    }
}

/* The backend keeps keyed contexts between calls: results must not depend
 * on what ran before. Forty keys in both directions and every AEAD (400
 * keyed contexts, more than the backend keeps), interleaved, each message checked against the answer of
 * a first pass in the opposite key order; a forgery between two valid
 * messages under one key; the two CCM tag lengths under one key; and a
 * key used again after aead_forget. */
static void test_aead_keyed_contexts(void **state)
{
    (void)state;
    enum { KEYS = 40, ROUNDS = 3, PT = 40 };
    static uint8_t ref[sizeof aead_algs / sizeof aead_algs[0]][KEYS][PT + 16];
    uint8_t pt[PT], aad[7] = {1, 2, 3, 4, 5, 6, 7};
    for (size_t i = 0; i < PT; i++)
        pt[i] = (uint8_t)(i * 7);
    for (int round = 0; round <= ROUNDS; round++) {
        for (size_t a = 0; a < sizeof aead_algs / sizeof aead_algs[0]; a++) {
            int alg = aead_algs[a];
            size_t tag = edhoc_crypto_aead_tag_len(alg);
            for (int kk = 0; kk < KEYS; kk++) {
                int k = round == 0 ? KEYS - 1 - kk : kk;
                uint8_t key[32], nonce[13], ct[PT + 16], back[PT];
                memset(key, 0x40 + k, sizeof key);
                memset(nonce, 0x11, sizeof nonce);
                nonce[0] = (uint8_t)k;
                assert_int_equal(ops->aead_encrypt(alg, key, nonce, aad, sizeof aad, pt, PT, ct),
                                 0);
                if (round == 0)
                    memcpy(ref[a][k], ct, PT + tag);
                else
                    assert_bytes_equal(ct, ref[a][k], PT + tag);
                assert_int_equal(ops->aead_decrypt(alg, key, nonce, aad, sizeof aad, ct,
                                                   PT + tag, back),
                                 0);
                assert_bytes_equal(back, pt, PT);
                if (round == 2 && k % 3 == 0) {
                    /* A forgery, then the valid message again. */
                    ct[PT] ^= 1;
                    assert_int_equal(ops->aead_decrypt(alg, key, nonce, aad, sizeof aad, ct,
                                                       PT + tag, back),
                                     EDHOC_CRYPTO_ERR_AUTH);
                    ct[PT] ^= 1;
                    assert_int_equal(ops->aead_decrypt(alg, key, nonce, aad, sizeof aad, ct,
                                                       PT + tag, back),
                                     0);
                    assert_bytes_equal(back, pt, PT);
                }
                if (round == 3 && ops->aead_forget) {
                    ops->aead_forget(key, edhoc_crypto_aead_key_len(alg));
                    assert_int_equal(ops->aead_encrypt(alg, key, nonce, aad, sizeof aad, pt, PT,
                                                       ct),
                                     0);
                    assert_bytes_equal(ct, ref[a][k], PT + tag);
                }
            }
        }
    }
    /* One key, AES-CCM with 8- and 16-byte tags alternately: the first 8
     * bytes of the tags differ (the tag length is part of B_0). */
    uint8_t key[16], nonce[13], ct8[PT + 8], ct16[PT + 16];
    memset(key, 0x5a, sizeof key);
    memset(nonce, 0x21, sizeof nonce);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(ops->aead_encrypt(EDHOC_COSE_AES_CCM_16_64_128, key, nonce, NULL, 0, pt,
                                           PT, ct8),
                         0);
        assert_int_equal(ops->aead_encrypt(EDHOC_COSE_AES_CCM_16_128_128, key, nonce, NULL, 0,
                                           pt, PT, ct16),
                         0);
        assert_memory_equal(ct8, ct16, PT); /* same keystream */
        assert_memory_not_equal(ct8 + PT, ct16 + PT, 8);
        uint8_t back[PT];
        assert_int_equal(ops->aead_decrypt(EDHOC_COSE_AES_CCM_16_128_128, key, nonce, NULL, 0,
                                           ct16, PT + 16, back),
                         0);
        assert_int_equal(ops->aead_decrypt(EDHOC_COSE_AES_CCM_16_64_128, key, nonce, NULL, 0,
                                           ct16, PT + 8, back),
                         EDHOC_CRYPTO_ERR_AUTH);
    }
}

static void test_aead_in_place(void **state)
{
    (void)state;
    uint8_t key[32] = {9}, nonce[13] = {4}, buf[64 + 16], ref[64 + 16], pt[64];
    for (size_t i = 0; i < sizeof pt; i++)
        pt[i] = (uint8_t)i;
    for (size_t a = 0; a < sizeof aead_algs / sizeof aead_algs[0]; a++) {
        int alg = aead_algs[a];
        size_t tag = edhoc_crypto_aead_tag_len(alg);
        assert_int_equal(ops->aead_encrypt(alg, key, nonce, NULL, 0, pt, 64, ref), 0);
        memcpy(buf, pt, 64);
        assert_int_equal(ops->aead_encrypt(alg, key, nonce, NULL, 0, buf, 64, buf), 0);
        assert_bytes_equal(buf, ref, 64 + tag);
        assert_int_equal(ops->aead_decrypt(alg, key, nonce, NULL, 0, buf, 64 + tag, buf), 0);
        assert_bytes_equal(buf, pt, 64);
    }
}

static void test_aead_errors(void **state)
{
    (void)state;
    uint8_t key[32] = {0}, nonce[13] = {0}, ct[32] = {0}, pt[32];
    for (size_t a = 0; a < sizeof aead_algs / sizeof aead_algs[0]; a++) {
        int alg = aead_algs[a];
        size_t tag = edhoc_crypto_aead_tag_len(alg);
        /* Shorter than the tag. */
        assert_int_equal(ops->aead_decrypt(alg, key, nonce, NULL, 0, ct, tag - 1, pt),
                         EDHOC_CRYPTO_ERR_INVALID);
        assert_int_equal(ops->aead_decrypt(alg, key, nonce, NULL, 0, ct, 0, pt),
                         EDHOC_CRYPTO_ERR_INVALID);
        /* Exactly a (wrong) tag: empty plaintext that does not verify. */
        assert_int_equal(ops->aead_decrypt(alg, key, nonce, NULL, 0, ct, tag, pt),
                         EDHOC_CRYPTO_ERR_AUTH);
    }
    assert_int_equal(ops->aead_encrypt(2, key, nonce, NULL, 0, pt, 1, ct),
                     EDHOC_CRYPTO_ERR_UNSUPPORTED);
    assert_int_equal(ops->aead_decrypt(EDHOC_COSE_SHA256, key, nonce, NULL, 0, ct, 16, pt),
                     EDHOC_CRYPTO_ERR_UNSUPPORTED);
}

/* ---- ECDH and keys ---------------------------------------------------- */

static void test_x25519_trace1(void **state)
{
    (void)state;
    struct vec_scope t = vectors("rfc9529-trace1.json");
    uint8_t x[32], g_x[32], y[32], g_y[32], g_xy[32], out[EDHOC_CRYPTO_MAX_PUB];
    size_t len = 0;
    vec_hex(t, "x", x, 32);
    vec_hex(t, "g_x", g_x, 32);
    vec_hex(t, "y", y, 32);
    vec_hex(t, "g_y", g_y, 32);
    vec_hex(t, "g_xy", g_xy, 32);

    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, x, g_y, 32, out), 0);
    assert_bytes_equal(out, g_xy, 32);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, y, g_x, 32, out), 0);
    assert_bytes_equal(out, g_xy, 32);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_X25519, true, x, out, &len), 0);
    assert_int_equal(len, 32);
    assert_bytes_equal(out, g_x, 32);

    /* keygen through a pinned random source gives the trace's key. */
    struct fixed_random fr = {.chunks = {y}, .lens = {32}};
    struct edhoc_crypto_ops pinned = pinned_ops(&fr);
    uint8_t priv[32];
    assert_int_equal(edhoc_crypto_keygen(&pinned, EDHOC_COSE_CRV_X25519, true, priv, out, &len), 0);
    assert_bytes_equal(priv, y, 32);
    assert_int_equal(len, 32);
    assert_bytes_equal(out, g_y, 32);

    /* Wrong peer lengths; a small-order point (all-zero shared secret). */
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, x, g_y, 31, out), EDHOC_CRYPTO_ERR_INVALID);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, x, g_y, 33, out), EDHOC_CRYPTO_ERR_INVALID);
    uint8_t zero[32] = {0};
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, x, zero, 32, out), EDHOC_CRYPTO_ERR_INVALID);
    uint8_t one[32] = {1};
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, x, one, 32, out), EDHOC_CRYPTO_ERR_INVALID);
    /* Not ECDH curves. */
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_ED25519, x, g_y, 32, out),
                     EDHOC_CRYPTO_ERR_UNSUPPORTED);
    assert_int_equal(ops->ecdh(42, x, g_y, 32, out), EDHOC_CRYPTO_ERR_UNSUPPORTED);
}

static void test_p256_trace2(void **state)
{
    (void)state;
    struct vec_scope t = vectors("rfc9529-trace2.json");
    uint8_t x[32], g_x[32], g_x_y[32], y[32], g_y[32], g_y_y[32], g_xy[32];
    uint8_t r[32], g_r[32], g_rx[32], i[32], g_i[32], g_iy[32];
    uint8_t out[EDHOC_CRYPTO_MAX_PUB], peer[65];
    size_t len = 0;
    vec_hex(t, "x", x, 32);
    vec_hex(t, "g_x", g_x, 32);
    vec_hex(t, "g_x_y_coordinate", g_x_y, 32);
    vec_hex(t, "y", y, 32);
    vec_hex(t, "g_y", g_y, 32);
    vec_hex(t, "g_y_y_coordinate", g_y_y, 32);
    vec_hex(t, "g_xy", g_xy, 32);
    vec_hex(t, "sk_r", r, 32);
    vec_hex(t, "pk_r_x", g_r, 32);
    vec_hex(t, "g_rx", g_rx, 32);
    vec_hex(t, "sk_i", i, 32);
    vec_hex(t, "pk_i_x", g_i, 32);
    vec_hex(t, "g_iy", g_iy, 32);

    /* Ephemeral-ephemeral with x-only peer keys, both directions. */
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, g_y, 32, out), 0);
    assert_bytes_equal(out, g_xy, 32);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, y, g_x, 32, out), 0);
    assert_bytes_equal(out, g_xy, 32);
    /* The same peer in every accepted encoding, either sign of y. */
    peer[0] = 0x02;
    memcpy(peer + 1, g_y, 32);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 33, out), 0);
    assert_bytes_equal(out, g_xy, 32);
    peer[0] = 0x03;
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 33, out), 0);
    assert_bytes_equal(out, g_xy, 32);
    peer[0] = 0x04;
    memcpy(peer + 33, g_y_y, 32);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 65, out), 0);
    assert_bytes_equal(out, g_xy, 32);
    /* ... but not with a y that is off the curve. */
    peer[64] ^= 1;
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 65, out), EDHOC_CRYPTO_ERR_INVALID);
    assert_true(all_zero(out, 32));

    /* Static-ephemeral: G_RX = ECDH(R, G_X) = ECDH(X, G_R); G_IY likewise. */
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, r, g_x, 32, out), 0);
    assert_bytes_equal(out, g_rx, 32);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, g_r, 32, out), 0);
    assert_bytes_equal(out, g_rx, 32);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, i, g_y, 32, out), 0);
    assert_bytes_equal(out, g_iy, 32);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, y, g_i, 32, out), 0);
    assert_bytes_equal(out, g_iy, 32);

    /* Public keys: x-only for ECDH, 0x04||x||y otherwise. */
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_P256, true, x, out, &len), 0);
    assert_int_equal(len, 32);
    assert_bytes_equal(out, g_x, 32);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_P256, false, x, out, &len), 0);
    assert_int_equal(len, 65);
    assert_int_equal(out[0], 0x04);
    assert_bytes_equal(out + 1, g_x, 32);
    assert_bytes_equal(out + 33, g_x_y, 32);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_P256, true, r, out, &len), 0);
    assert_bytes_equal(out, g_r, 32);

    /* keygen from a pinned source. */
    struct fixed_random fr = {.chunks = {x}, .lens = {32}};
    struct edhoc_crypto_ops pinned = pinned_ops(&fr);
    uint8_t priv[32];
    assert_int_equal(edhoc_crypto_keygen(&pinned, EDHOC_COSE_CRV_P256, true, priv, out, &len), 0);
    assert_bytes_equal(priv, x, 32);
    assert_int_equal(len, 32);
    assert_bytes_equal(out, g_x, 32);
    assert_int_equal(fr.calls, 1);
}

static const uint8_t p256_n[32] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};

static void test_keygen_rejects_out_of_range_scalars(void **state)
{
    (void)state;
    struct vec_scope t = vectors("rfc9529-trace2.json");
    uint8_t x[32], g_x[32], zero[32] = {0}, priv[32], pub[EDHOC_CRYPTO_MAX_PUB];
    size_t len = 0;
    vec_hex(t, "x", x, 32);
    vec_hex(t, "g_x", g_x, 32);
    uint8_t all_ff[32];
    memset(all_ff, 0xff, sizeof all_ff);

    /* 0, n and 2^256-1 are drawn again; the fourth draw is used. */
    struct fixed_random fr = {.chunks = {zero, p256_n, all_ff, x}, .lens = {32, 32, 32, 32}};
    struct edhoc_crypto_ops pinned = pinned_ops(&fr);
    assert_int_equal(edhoc_crypto_keygen(&pinned, EDHOC_COSE_CRV_P256, true, priv, pub, &len), 0);
    assert_int_equal(fr.calls, 4);
    assert_bytes_equal(priv, x, 32);
    assert_bytes_equal(pub, g_x, 32);

    /* n - 1 is a valid scalar, used as drawn. */
    uint8_t n_minus_1[32];
    memcpy(n_minus_1, p256_n, 32);
    n_minus_1[31]--;
    struct fixed_random fr2 = {.chunks = {n_minus_1}, .lens = {32}};
    pinned = pinned_ops(&fr2);
    assert_int_equal(edhoc_crypto_keygen(&pinned, EDHOC_COSE_CRV_P256, false, priv, pub, &len), 0);
    assert_int_equal(fr2.calls, 1);
    assert_int_equal(len, 65);

    /* A failing source: EDHOC_CRYPTO_ERR_RANDOM, priv wiped. */
    struct fixed_random empty = {0};
    pinned = pinned_ops(&empty);
    memset(priv, 0x77, sizeof priv);
    assert_int_equal(edhoc_crypto_keygen(&pinned, EDHOC_COSE_CRV_X25519, true, priv, pub, &len),
                     EDHOC_CRYPTO_ERR_RANDOM);
    assert_true(all_zero(priv, 32));
    assert_int_equal(edhoc_crypto_keygen(&pinned, 77, true, priv, pub, &len),
                     EDHOC_CRYPTO_ERR_UNSUPPORTED);
    assert_int_equal(edhoc_crypto_keygen(&pinned, EDHOC_COSE_CRV_ED25519, true, priv, pub, &len),
                     EDHOC_CRYPTO_ERR_UNSUPPORTED);
    assert_int_equal(empty.calls, 1); /* unsupported requests draw nothing */

    /* Out-of-range private scalars are refused by public_key and ecdh. */
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_P256, true, zero, pub, &len),
                     EDHOC_CRYPTO_ERR_INVALID);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_P256, true, p256_n, pub, &len),
                     EDHOC_CRYPTO_ERR_INVALID);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, p256_n, g_x, 32, pub),
                     EDHOC_CRYPTO_ERR_INVALID);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_ED25519, true, x, pub, &len),
                     EDHOC_CRYPTO_ERR_UNSUPPORTED);
    assert_int_equal(ops->public_key(3, true, x, pub, &len), EDHOC_CRYPTO_ERR_UNSUPPORTED);
}

static void test_p256_invalid_peer_keys(void **state)
{
    (void)state;
    struct vec_scope t = vectors("rfc9529-trace2.json");
    uint8_t x[32], g_y[32], out[32], peer[66];
    vec_hex(t, "x", x, 32);
    vec_hex(t, "g_y", g_y, 32);
    /* p - 1 and 1 are not x-coordinates of P-256 points (x^3 - 3x + b is
     * not a square mod p for them); p + 5 is >= p although 5 is a valid x. */
    static const char *bad_x[] = {
        "ffffffff00000001000000000000000000000000fffffffffffffffffffffffe",
        "0000000000000000000000000000000000000000000000000000000000000001",
        "ffffffff00000001000000000000000000000001000000000000000000000004",
        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    };
    for (size_t k = 0; k < sizeof bad_x / sizeof bad_x[0]; k++) {
        hex(bad_x[k], peer, 32);
        memset(out, 0x33, sizeof out);
        assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 32, out),
                         EDHOC_CRYPTO_ERR_INVALID);
        assert_true(all_zero(out, 32));
    }
    /* 5 itself is a valid x: the check above is about the encoding. */
    hex("0000000000000000000000000000000000000000000000000000000000000005", peer, 32);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 32, out), 0);

    /* Lengths and prefixes. */
    memcpy(peer + 1, g_y, 32);
    peer[0] = 0x02;
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 0, out), EDHOC_CRYPTO_ERR_INVALID);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, g_y, 31, out), EDHOC_CRYPTO_ERR_INVALID);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 34, out), EDHOC_CRYPTO_ERR_INVALID);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 65, out), EDHOC_CRYPTO_ERR_INVALID);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 66, out), EDHOC_CRYPTO_ERR_INVALID);
    peer[0] = 0x04;
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 33, out), EDHOC_CRYPTO_ERR_INVALID);
    peer[0] = 0x00;
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 33, out), EDHOC_CRYPTO_ERR_INVALID);
    /* A P-384-sized key on P-256. */
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, peer, 48, out), EDHOC_CRYPTO_ERR_INVALID);
}

static void test_x448_rfc7748(void **state)
{
    (void)state;
    /* RFC 7748 Section 6.2 */
    uint8_t a[56], a_pub[56], b[56], b_pub[56], k[56], out[EDHOC_CRYPTO_MAX_PUB];
    size_t len = 0;
    hex("9a8f4925d1519f5775cf46b04b5800d4ee9ee8bae8bc5565d498c28dd9c9baf5"
        "74a9419744897391006382a6f127ab1d9ac2d8c0a598726b", a, 56);
    hex("9b08f7cc31b7e3e67d22d5aea121074a273bd2b83de09c63faa73d2c22c5d9bb"
        "c836647241d953d40c5b12da88120d53177f80e532c41fa0", a_pub, 56);
    hex("1c306a7ac2a0e2e0990b294470cba339e6453772b075811d8fad0d1d6927c120"
        "bb5ee8972b0d3e21374c9c921b09d1b0366f10b65173992d", b, 56);
    hex("3eb7a829b0cd20f5bcfc0b599b6feccf6da4627107bdb0d4f345b43027d8b972"
        "fc3e34fb4232a13ca706dcb57aec3dae07bdc1c67bf33609", b_pub, 56);
    hex("07fff4181ac6cc95ec1c16a94a0f74d12da232ce40a77552281d282bb60c0b56"
        "fd2464c335543936521c24403085d59a449a5037514a879d", k, 56);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_X448, true, a, out, &len), 0);
    assert_int_equal(len, 56);
    assert_bytes_equal(out, a_pub, 56);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_X448, true, b, out, &len), 0);
    assert_bytes_equal(out, b_pub, 56);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X448, a, b_pub, 56, out), 0);
    assert_bytes_equal(out, k, 56);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X448, b, a_pub, 56, out), 0);
    assert_bytes_equal(out, k, 56);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X448, a, b_pub, 32, out), EDHOC_CRYPTO_ERR_INVALID);
}

static void test_p384_known_answers(void **state)
{
    (void)state;
    /* Computed with an independent affine-coordinate P-384 implementation:
     * d1 and d2 are SHA-384 digests reduced mod n, the signature uses a
     * fixed nonce k. */
    uint8_t d1[48], q1[97], q2x[48], shared[48], sig[96], out[EDHOC_CRYPTO_MAX_PUB];
    size_t len = 0;
    hex("2563714a9d927daa24a4b6a30f124f168efec32de81b073ab24fc2fbdcc6f194"
        "a4f188e9118bdaa14546c8100444c8c0", d1, 48);
    hex("04703d4e1fe3d4e1dfe5a4e8e9ef1529894edc0f790478cd33eacd4093e4ef2757"
        "8ead4b24c4f85878cb2f98029c3e1ccf8e6e12e47de6e35403bdbfeac60988d631"
        "663cd62db143ba46d508a3f7aa3d19037b5699db32a739a1898ed78616d643", q1, 97);
    hex("99bb3209b2e9cb765f97da03a5f05905513c60fd6f854ed87ab2e221a3df64cf"
        "97d09342dc43e068c26015769f4922d3", q2x, 48);
    hex("2004b8bfd063c4db826c0ab8e1d2490c2e56b3b87d578006a5edfb56d7aa4cc4"
        "42ef0fc4d1437bf2abd23e118a0d6c5a", shared, 48);
    hex("4e47a237cc608f03d38bf953c2c25c8cb99de4bbada9288a6b43656520b25591"
        "43f1fd344dde210802bbc630315996bea5055ae162859d034cb20fff81461259"
        "f4e61d0caaf268ca75ec190ba37a7d58dc65c73c845bd17d055f3bdeaf046beb", sig, 96);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_P384, false, d1, out, &len), 0);
    assert_int_equal(len, 97);
    assert_bytes_equal(out, q1, 97);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_P384, true, d1, out, &len), 0);
    assert_int_equal(len, 48);
    assert_bytes_equal(out, q1 + 1, 48);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P384, d1, q2x, 48, out), 0);
    assert_bytes_equal(out, shared, 48);
    const uint8_t *msg = (const uint8_t *)"sample";
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_P384, q1, 97, msg, 6, sig, 96), 0);
    sig[95] ^= 1;
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_P384, q1, 97, msg, 6, sig, 96),
                     EDHOC_CRYPTO_ERR_AUTH);
    /* The ES256 length on P-384 is refused. */
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_P384, q1, 97, msg, 6, sig, 64),
                     EDHOC_CRYPTO_ERR_INVALID);
}

/* ECDH agreement with freshly generated keys on every curve. */
static void test_ecdh_agreement_all_curves(void **state)
{
    (void)state;
    static const int curves[] = {EDHOC_COSE_CRV_P256, EDHOC_COSE_CRV_P384,
                                 EDHOC_COSE_CRV_X25519, EDHOC_COSE_CRV_X448};
    for (size_t c = 0; c < 4; c++) {
        int crv = curves[c];
        uint8_t a[EDHOC_CRYPTO_MAX_PRIV], b[EDHOC_CRYPTO_MAX_PRIV];
        uint8_t pa[EDHOC_CRYPTO_MAX_PUB], pb[EDHOC_CRYPTO_MAX_PUB], pa2[EDHOC_CRYPTO_MAX_PUB];
        uint8_t s1[EDHOC_CRYPTO_MAX_SECRET], s2[EDHOC_CRYPTO_MAX_SECRET];
        size_t la = 0, lb = 0, la2 = 0, n = edhoc_crypto_ecdh_secret_len(crv);
        assert_int_equal(ops->keygen(crv, true, a, pa, &la), 0);
        assert_int_equal(ops->keygen(crv, true, b, pb, &lb), 0);
        assert_int_equal(la, edhoc_crypto_ecdh_pub_len(crv));
        assert_int_equal(lb, la);
        assert_memory_not_equal(a, b, edhoc_crypto_priv_len(crv));
        assert_int_equal(ops->public_key(crv, true, a, pa2, &la2), 0);
        assert_int_equal(la2, la);
        assert_bytes_equal(pa2, pa, la);
        assert_int_equal(ops->ecdh(crv, a, pb, lb, s1), 0);
        assert_int_equal(ops->ecdh(crv, b, pa, la, s2), 0);
        assert_bytes_equal(s1, s2, n);
        assert_false(all_zero(s1, n));
        assert_int_equal(ops->ecdh(crv, a, pb, lb - 1, s1), EDHOC_CRYPTO_ERR_INVALID);
    }
}

/* ---- signatures ------------------------------------------------------- */

static void test_ed25519_trace1(void **state)
{
    (void)state;
    struct vec_scope t = vectors("rfc9529-trace1.json");
    uint8_t sk[32], pk[32], msg[512], want[64], sig[64], pub[EDHOC_CRYPTO_MAX_PUB];
    size_t len = 0;
    static const char *const keys[2][4] = {
        {"sk_r", "pk_r", "message_to_be_signed_2", "signature_or_mac_2"},
        {"sk_i", "pk_i", "message_to_be_signed_3", "signature_or_mac_3"},
    };
    for (size_t k = 0; k < 2; k++) {
        vec_hex(t, keys[k][0], sk, 32);
        vec_hex(t, keys[k][1], pk, 32);
        size_t msg_len = vec_hex(t, keys[k][2], msg, sizeof msg);
        vec_hex(t, keys[k][3], want, 64);
        assert_int_equal(ops->public_key(EDHOC_COSE_CRV_ED25519, false, sk, pub, &len), 0);
        assert_int_equal(len, 32);
        assert_bytes_equal(pub, pk, 32);
        /* Ed25519 is deterministic: the trace's signature byte for byte. */
        assert_int_equal(ops->sign(EDHOC_COSE_CRV_ED25519, sk, msg, msg_len, sig), 0);
        assert_bytes_equal(sig, want, 64);
        assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, pk, 32, msg, msg_len, sig, 64), 0);
        msg[msg_len - 1] ^= 1;
        assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, pk, 32, msg, msg_len, sig, 64),
                         EDHOC_CRYPTO_ERR_AUTH);
    }
}

static void test_ed448_rfc8032(void **state)
{
    (void)state;
    /* RFC 8032 Section 7.4, "Blank" (empty message, no context). */
    uint8_t sk[57], pk[57], want[114], sig[114], pub[EDHOC_CRYPTO_MAX_PUB];
    size_t len = 0;
    hex("6c82a562cb808d10d632be89c8513ebf6c929f34ddfa8c9f63c9960ef6e348a3"
        "528c8a3fcc2f044e39a3fc5b94492f8f032e7549a20098f95b", sk, 57);
    hex("5fd7449b59b461fd2ce787ec616ad46a1da1342485a70e1f8a0ea75d80e96778"
        "edf124769b46c7061bd6783df1e50f6cd1fa1abeafe8256180", pk, 57);
    hex("533a37f6bbe457251f023c0d88f976ae2dfb504a843e34d2074fd823d41a591f"
        "2b233f034f628281f2fd7a22ddd47d7828c59bd0a21bfd3980ff0d2028d4b18a"
        "9df63e006c5d1c2d345b925d8dc00b4104852db99ac5c7cdda8530a113a0f4db"
        "b61149f05a7363268c71d95808ff2e652600", want, 114);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_ED448, false, sk, pub, &len), 0);
    assert_int_equal(len, 57);
    assert_bytes_equal(pub, pk, 57);
    assert_int_equal(ops->sign(EDHOC_COSE_CRV_ED448, sk, NULL, 0, sig), 0);
    assert_bytes_equal(sig, want, 114);
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED448, pk, 57, NULL, 0, sig, 114), 0);
}

static void test_es256_rfc6979_verify(void **state)
{
    (void)state;
    /* RFC 6979 A.2.5: P-256, SHA-256, message "sample". */
    uint8_t d[32], pub[65], sig[64], out[EDHOC_CRYPTO_MAX_PUB];
    size_t len = 0;
    hex("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721", d, 32);
    hex("0460fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6"
        "7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299", pub, 65);
    hex("efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"
        "f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8", sig, 64);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_P256, false, d, out, &len), 0);
    assert_int_equal(len, 65);
    assert_bytes_equal(out, pub, 65);
    const uint8_t *msg = (const uint8_t *)"sample";
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_P256, pub, 65, msg, 6, sig, 64), 0);
    /* Compressed form of the same key (y is odd: ...99 -> 0x03). */
    uint8_t comp[33];
    comp[0] = 0x03;
    memcpy(comp + 1, pub + 1, 32);
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_P256, comp, 33, msg, 6, sig, 64), 0);
    comp[0] = 0x02; /* the other point with this x */
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_P256, comp, 33, msg, 6, sig, 64),
                     EDHOC_CRYPTO_ERR_AUTH);
    /* x-only is not a signature key. */
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_P256, pub + 1, 32, msg, 6, sig, 64),
                     EDHOC_CRYPTO_ERR_INVALID);
    /* r = 0 and s = n are out of range. */
    uint8_t bad[64];
    memcpy(bad, sig, 64);
    memset(bad, 0, 32);
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_P256, pub, 65, msg, 6, bad, 64),
                     EDHOC_CRYPTO_ERR_AUTH);
    memcpy(bad, sig, 32);
    memcpy(bad + 32, p256_n, 32);
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_P256, pub, 65, msg, 6, bad, 64),
                     EDHOC_CRYPTO_ERR_AUTH);
    /* A public key off the curve. */
    pub[64] ^= 1;
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_P256, pub, 65, msg, 6, sig, 64),
                     EDHOC_CRYPTO_ERR_INVALID);
}

static void test_sign_verify_round_trips(void **state)
{
    (void)state;
    static const int curves[] = {EDHOC_COSE_CRV_P256, EDHOC_COSE_CRV_P384,
                                 EDHOC_COSE_CRV_ED25519, EDHOC_COSE_CRV_ED448};
    uint8_t msg[300];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i ^ 0x3c);
    for (size_t c = 0; c < 4; c++) {
        int crv = curves[c];
        size_t sig_len = edhoc_crypto_sig_len(crv);
        uint8_t priv[EDHOC_CRYPTO_MAX_PRIV], pub[EDHOC_CRYPTO_MAX_PUB];
        uint8_t other_priv[EDHOC_CRYPTO_MAX_PRIV], other_pub[EDHOC_CRYPTO_MAX_PUB];
        uint8_t sig[EDHOC_CRYPTO_MAX_SIG + 1];
        size_t pub_len = 0, other_len = 0;
        assert_int_equal(ops->keygen(crv, false, priv, pub, &pub_len), 0);
        assert_int_equal(ops->keygen(crv, false, other_priv, other_pub, &other_len), 0);
        if (crv == EDHOC_COSE_CRV_P256 || crv == EDHOC_COSE_CRV_P384) {
            assert_int_equal(pub_len, 2 * edhoc_crypto_priv_len(crv) + 1);
            assert_int_equal(pub[0], 0x04);
        } else {
            assert_int_equal(pub_len, edhoc_crypto_priv_len(crv));
        }
        for (size_t m = 0; m <= sizeof msg; m += sizeof msg) {
            assert_int_equal(ops->sign(crv, priv, msg, m, sig), 0);
            assert_int_equal(ops->verify(crv, pub, pub_len, msg, m, sig, sig_len), 0);
            /* Every flipped signature byte fails. */
            for (size_t i = 0; i < sig_len; i++) {
                sig[i] ^= 0x10;
                assert_int_equal(ops->verify(crv, pub, pub_len, msg, m, sig, sig_len),
                                 EDHOC_CRYPTO_ERR_AUTH);
                sig[i] ^= 0x10;
            }
            /* Wrong lengths. */
            assert_int_equal(ops->verify(crv, pub, pub_len, msg, m, sig, sig_len - 1),
                             EDHOC_CRYPTO_ERR_INVALID);
            assert_int_equal(ops->verify(crv, pub, pub_len, msg, m, sig, sig_len + 1),
                             EDHOC_CRYPTO_ERR_INVALID);
            assert_int_equal(ops->verify(crv, pub, pub_len, msg, m, sig, 0),
                             EDHOC_CRYPTO_ERR_INVALID);
            assert_int_equal(ops->verify(crv, pub, pub_len - 1, msg, m, sig, sig_len),
                             EDHOC_CRYPTO_ERR_INVALID);
            /* Another key. */
            assert_int_equal(ops->verify(crv, other_pub, other_len, msg, m, sig, sig_len),
                             EDHOC_CRYPTO_ERR_AUTH);
            if (m > 0) {
                msg[m / 2] ^= 1;
                assert_int_equal(ops->verify(crv, pub, pub_len, msg, m, sig, sig_len),
                                 EDHOC_CRYPTO_ERR_AUTH);
                msg[m / 2] ^= 1;
            }
        }
    }
    uint8_t k[64] = {1}, sig[128];
    assert_int_equal(ops->sign(EDHOC_COSE_CRV_X25519, k, k, 1, sig), EDHOC_CRYPTO_ERR_UNSUPPORTED);
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_X448, k, 56, k, 1, sig, 64),
                     EDHOC_CRYPTO_ERR_UNSUPPORTED);
    uint8_t zero[48] = {0};
    assert_int_equal(ops->sign(EDHOC_COSE_CRV_P384, zero, k, 1, sig), EDHOC_CRYPTO_ERR_INVALID);
}

/* ---- random ----------------------------------------------------------- */

static void test_random(void **state)
{
    (void)state;
    uint8_t a[64] = {0}, b[64] = {0};
    assert_int_equal(ops->random(ops->rng_ctx, a, sizeof a), 0);
    assert_int_equal(ops->random(ops->rng_ctx, b, sizeof b), 0);
    assert_memory_not_equal(a, b, sizeof a);
    assert_int_equal(ops->random(ops->rng_ctx, NULL, 0), 0);
}

/* ---- concurrent use --------------------------------------------------- */

static void *thread_handshake_ops(void *arg)
{
    const struct edhoc_crypto_ops *o = arg;
    uint8_t a[32], b[32], pa[EDHOC_CRYPTO_MAX_PUB], pb[EDHOC_CRYPTO_MAX_PUB];
    uint8_t s1[32], s2[32], prk[32], key[16], ct[40], pt[32], sig[64];
    size_t la, lb;
    for (int i = 0; i < 50; i++) {
        if (o->keygen(EDHOC_COSE_CRV_X25519, true, a, pa, &la) != 0 ||
            o->keygen(EDHOC_COSE_CRV_X25519, true, b, pb, &lb) != 0 ||
            o->ecdh(EDHOC_COSE_CRV_X25519, a, pb, lb, s1) != 0 ||
            o->ecdh(EDHOC_COSE_CRV_X25519, b, pa, la, s2) != 0 || memcmp(s1, s2, 32) != 0)
            return (void *)1;
        if (o->keygen(EDHOC_COSE_CRV_P256, false, a, pa, &la) != 0 ||
            o->sign(EDHOC_COSE_CRV_P256, a, s1, 32, sig) != 0 ||
            o->verify(EDHOC_COSE_CRV_P256, pa, la, s1, 32, sig, 64) != 0)
            return (void *)1;
        if (o->keygen(EDHOC_COSE_CRV_P256, true, a, pa, &la) != 0 ||
            o->keygen(EDHOC_COSE_CRV_P256, true, b, pb, &lb) != 0 ||
            o->ecdh(EDHOC_COSE_CRV_P256, a, pb, lb, s1) != 0 ||
            o->ecdh(EDHOC_COSE_CRV_P256, b, pa, la, s2) != 0 || memcmp(s1, s2, 32) != 0 ||
            o->hkdf_extract(EDHOC_COSE_SHA256, s1, 32, s2, 32, prk) != 0 ||
            o->hkdf_expand(EDHOC_COSE_SHA256, prk, 32, a, 8, key, 16) != 0 ||
            o->aead_encrypt(EDHOC_COSE_AES_CCM_16_64_128, key, a, NULL, 0, s1, 32, ct) != 0 ||
            o->aead_decrypt(EDHOC_COSE_AES_CCM_16_64_128, key, a, NULL, 0, ct, 40, pt) != 0 ||
            memcmp(pt, s1, 32) != 0)
            return (void *)1;
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, thread_handshake_ops, (void *)ops), 0);
    for (int i = 0; i < 4; i++) {
        void *ret = (void *)1;
        assert_int_equal(pthread_join(th[i], &ret), 0);
        assert_null(ret);
    }
}

/* ---- a handshake's worth of operations, repeated ---------------------- */

/* The operation mix of one EDHOC method-3 suite-2 handshake (4 ECDH, key
 * generation, the hashes and KDF calls, 2 AEAD), run many times as a
 * self-check of the paths the benchmarks time. Every result is checked;
 * nothing is timed. */
static void test_handshake_mix_repeated(void **state)
{
    (void)state;
    struct vec_scope t = vectors("rfc9529-trace2.json");
    uint8_t x[32], g_y[32], g_xy[32], th2_in[128], th2[32], prk_2e[32];
    vec_hex(t, "x", x, 32);
    vec_hex(t, "g_y", g_y, 32);
    vec_hex(t, "g_xy", g_xy, 32);
    size_t th2_in_len = vec_hex(t, "input_th_2", th2_in, sizeof th2_in);
    vec_hex(t, "th_2", th2, 32);
    vec_hex(t, "prk_2e", prk_2e, 32);
    uint8_t k4[16], iv4[13], a4[64], ct4[8];
    vec_hex(t, "k_4", k4, 16);
    vec_hex(t, "iv_4", iv4, 13);
    size_t a4_len = vec_hex(t, "a_4", a4, sizeof a4);
    vec_hex(t, "ciphertext_4", ct4, 8);

    for (int i = 0; i < 200; i++) {
        uint8_t priv[32], pub[EDHOC_CRYPTO_MAX_PUB], s[32], h[32], prk[32], okm[64], ct[8];
        size_t len;
        assert_int_equal(ops->keygen(EDHOC_COSE_CRV_P256, true, priv, pub, &len), 0);
        assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_P256, x, g_y, 32, s), 0);
        assert_bytes_equal(s, g_xy, 32);
        assert_int_equal(ops->hash(EDHOC_COSE_SHA256, th2_in, th2_in_len, h), 0);
        assert_bytes_equal(h, th2, 32);
        assert_int_equal(ops->hkdf_extract(EDHOC_COSE_SHA256, h, 32, s, 32, prk), 0);
        assert_bytes_equal(prk, prk_2e, 32);
        assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, prk, 32, h, 32, okm, 64), 0);
        assert_int_equal(ops->aead_encrypt(EDHOC_COSE_AES_CCM_16_64_128, k4, iv4, a4, a4_len,
                                           NULL, 0, ct), 0);
        assert_bytes_equal(ct, ct4, 8);
        assert_int_equal(ops->aead_decrypt(EDHOC_COSE_AES_CCM_16_64_128, k4, iv4, a4, a4_len,
                                           ct, 8, NULL), 0);
    }
}

/* ---- RFC 7748 / RFC 8032 vectors and edge cases, every backend -------- */

static void test_x25519_rfc7748(void **state)
{
    (void)state;
    /* RFC 7748 Section 5.2: two scalar/u-coordinate pairs. */
    static const char *const kat[2][3] = {
        {"a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
         "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
         "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"},
        {"4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
         "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
         "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957"},
    };
    uint8_t k[32], u[32], want[32], got[32], pub[EDHOC_CRYPTO_MAX_PUB];
    size_t len = 0;
    for (size_t i = 0; i < 2; i++) {
        hex(kat[i][0], k, 32);
        hex(kat[i][1], u, 32);
        hex(kat[i][2], want, 32);
        assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, k, u, 32, got), 0);
        assert_bytes_equal(got, want, 32);
    }
    /* RFC 7748 Section 6.1: Alice and Bob. */
    uint8_t a[32], b[32], apub[32], bpub[32], shared[32], s1[32], s2[32];
    hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", a, 32);
    hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a", apub, 32);
    hex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb", b, 32);
    hex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f", bpub, 32);
    hex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742", shared, 32);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_X25519, true, a, pub, &len), 0);
    assert_int_equal(len, 32);
    assert_bytes_equal(pub, apub, 32);
    assert_int_equal(ops->public_key(EDHOC_COSE_CRV_X25519, true, b, pub, &len), 0);
    assert_bytes_equal(pub, bpub, 32);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, a, bpub, 32, s1), 0);
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, b, apub, 32, s2), 0);
    assert_bytes_equal(s1, shared, 32);
    assert_bytes_equal(s2, shared, 32);
    /* RFC 7748 Section 5: the top bit of u is masked, not an error. */
    apub[31] |= 0x80;
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, b, apub, 32, s2), 0);
    assert_bytes_equal(s2, shared, 32);
    /* A wrong length is refused. */
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, b, apub, 31, s2),
                     EDHOC_CRYPTO_ERR_INVALID);
}

/* RFC 7748 Section 6.1: "implementations MAY check whether the shared
 * secret is the all-zero value and abort if so"; every backend does, for
 * each point of small order and each encoding of one (u >= p, top bit set):
 * the peer's key is refused and no secret is left behind. */
static void test_x25519_small_order_points(void **state)
{
    (void)state;
    static const char *const small[] = {
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0100000000000000000000000000000000000000000000000000000000000000",
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
        "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    };
    uint8_t priv[32], u[32], shared[32];
    memset(priv, 0x5a, sizeof priv);
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        for (int top = 0; top < 2; top++) {
            hex(small[i], u, 32);
            u[31] |= (uint8_t)(top << 7);
            memset(shared, 0xaa, sizeof shared);
            assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, priv, u, 32, shared),
                             EDHOC_CRYPTO_ERR_INVALID);
            assert_true(all_zero(shared, sizeof shared));
        }
    }
}

static void test_ed25519_rfc8032(void **state)
{
    (void)state;
    /* RFC 8032 Section 7.1, TEST 1, 2 and 3. */
    static const char *const kat[3][4] = {
        {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
         "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
         "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e3970"
         "1cf9b46bd25bf5f0595bbe24655141438e7a100b"},
        {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
         "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
         "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613"
         "d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
        {"c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
         "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
         "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760"
         "984dc6594a7c15e9716ed28dc027beceea1ec40a"},
    };
    uint8_t sk[32], pk[32], msg[2], want[64], sig[64], pub[EDHOC_CRYPTO_MAX_PUB];
    size_t len = 0;
    for (size_t i = 0; i < 3; i++) {
        hex(kat[i][0], sk, 32);
        hex(kat[i][1], pk, 32);
        size_t msg_len = hex(kat[i][2], msg, sizeof msg);
        hex(kat[i][3], want, 64);
        assert_int_equal(ops->public_key(EDHOC_COSE_CRV_ED25519, false, sk, pub, &len), 0);
        assert_int_equal(len, 32);
        assert_bytes_equal(pub, pk, 32);
        assert_int_equal(ops->sign(EDHOC_COSE_CRV_ED25519, sk, msg, msg_len, sig), 0);
        assert_bytes_equal(sig, want, 64);
        assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, pk, 32, msg, msg_len, sig, 64), 0);
        /* Any flipped bit of R or S is refused. */
        for (size_t b = 0; b < 64; b += 7) {
            sig[b] ^= 0x01;
            assert_int_not_equal(
                ops->verify(EDHOC_COSE_CRV_ED25519, pk, 32, msg, msg_len, sig, 64), 0);
            sig[b] ^= 0x01;
        }
        assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, pk, 32, msg, msg_len, sig, 63),
                         EDHOC_CRYPTO_ERR_INVALID);
        assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, pk, 31, msg, msg_len, sig, 64),
                         EDHOC_CRYPTO_ERR_INVALID);
    }
}

/* Add the group order L to the little-endian scalar s (32 bytes): the same
 * S modulo L, a non-canonical encoding. */
static void add_order(uint8_t *s)
{
    static const uint8_t l[32] = {
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
    };
    unsigned carry = 0;
    for (size_t i = 0; i < 32; i++) {
        carry += (unsigned)s[i] + l[i];
        s[i] = (uint8_t)carry;
        carry >>= 8;
    }
}

/* The rule both backends share (include/edhoc/crypto.h): where OpenSSL 3.0
 * alone accepts and libsodium refuses, both refuse. */
static void test_ed25519_strict_rule(void **state)
{
    (void)state;
    /* The base point B, and the neutral element (order 1) as a public key. */
    static const char base[] = "5866666666666666666666666666666666666666666666666666666666666666";
    uint8_t pk[32] = {1}, sig[64] = {0}, msg[3] = {'a', 'b', 'c'};
    /* With A the neutral element, R = B and S = 1 satisfy the cofactorless
     * equation [S]B = R + [k]A for every message: a "signature" anyone can
     * make. RFC 8032 Section 5.1.7 does not forbid such a key, libsodium
     * refuses it and so does every backend here. */
    hex(base, sig, 32);
    sig[32] = 1;
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, pk, 32, msg, 3, sig, 64),
                     EDHOC_CRYPTO_ERR_INVALID);
    /* The same key with the sign bit set, and y = p + 1 (non-canonical 1). */
    pk[31] = 0x80;
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, pk, 32, msg, 3, sig, 64),
                     EDHOC_CRYPTO_ERR_INVALID);
    hex("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", pk, 32);
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, pk, 32, msg, 3, sig, 64),
                     EDHOC_CRYPTO_ERR_INVALID);
    /* Order-8 points as keys. */
    hex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a", pk, 32);
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, pk, 32, msg, 3, sig, 64),
                     EDHOC_CRYPTO_ERR_INVALID);
    /* A non-canonical y (y = p + 2, the canonical value 2 is not a
     * point, so this is off the curve too): refused as a key. */
    hex("efffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", pk, 32);
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, pk, 32, msg, 3, sig, 64),
                     EDHOC_CRYPTO_ERR_INVALID);

    /* A good signature (RFC 8032 TEST 1) with S + L in place of S: RFC 8032
     * Section 5.1.7 step 1 refuses S >= L. */
    uint8_t good_pk[32], good[64];
    hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", good_pk, 32);
    hex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e3970"
        "1cf9b46bd25bf5f0595bbe24655141438e7a100b", good, 64);
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, good_pk, 32, NULL, 0, good, 64), 0);
    memcpy(sig, good, 64);
    add_order(sig + 32);
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, good_pk, 32, NULL, 0, sig, 64),
                     EDHOC_CRYPTO_ERR_AUTH);
    /* R of small order. */
    memcpy(sig, good, 64);
    memset(sig, 0, 32);
    sig[0] = 1;
    assert_int_equal(ops->verify(EDHOC_COSE_CRV_ED25519, good_pk, 32, NULL, 0, sig, 64),
                     EDHOC_CRYPTO_ERR_AUTH);
}

/* Deterministic operations give the same bytes from every backend, and a
 * key or ciphertext made by one is taken by the others. */
static void test_backends_agree(void **state)
{
    (void)state;
    const struct edhoc_crypto_ops *all[] = {edhoc_crypto_openssl(), edhoc_crypto_sodium(),
                                            edhoc_crypto_auto()};
    uint8_t key[32], nonce[12], aad[20], pt[100], msg[200];
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (uint8_t)(3 * i + 1);
    memset(nonce, 0x24, sizeof nonce);
    memset(aad, 0x33, sizeof aad);
    for (size_t i = 0; i < sizeof pt; i++)
        pt[i] = (uint8_t)i;
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 13);
    for (int round = 0; round < 20; round++) {
        uint8_t priv[32], peer[32], pub_mine[EDHOC_CRYPTO_MAX_PUB], pub_peer[EDHOC_CRYPTO_MAX_PUB];
        size_t lm = 0, lp = 0;
        assert_int_equal(ops->keygen(EDHOC_COSE_CRV_X25519, true, priv, pub_mine, &lm), 0);
        assert_int_equal(ops->keygen(EDHOC_COSE_CRV_X25519, true, peer, pub_peer, &lp), 0);
        uint8_t mine_sig_priv[32], sig_pub[EDHOC_CRYPTO_MAX_PUB];
        size_t ls = 0;
        assert_int_equal(ops->keygen(EDHOC_COSE_CRV_ED25519, false, mine_sig_priv, sig_pub, &ls),
                         0);
        uint8_t ref_shared[32], ref_sig[64], ref_ct[116], ref_hash[32], ref_prk[32],
            ref_okm[80];
        assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, priv, pub_peer, lp, ref_shared), 0);
        assert_int_equal(ops->sign(EDHOC_COSE_CRV_ED25519, mine_sig_priv, msg, sizeof msg,
                                   ref_sig), 0);
        assert_int_equal(ops->aead_encrypt(EDHOC_COSE_CHACHA20_POLY1305, key, nonce, aad,
                                           sizeof aad, pt, sizeof pt, ref_ct), 0);
        assert_int_equal(ops->hash(EDHOC_COSE_SHA256, msg, (size_t)round * 9, ref_hash), 0);
        assert_int_equal(ops->hkdf_extract(EDHOC_COSE_SHA256, ref_hash, 32, ref_shared, 32,
                                           ref_prk), 0);
        assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, ref_prk, 32, msg, (size_t)round,
                                          ref_okm, sizeof ref_okm), 0);
        for (size_t b = 0; b < sizeof all / sizeof all[0]; b++) {
            const struct edhoc_crypto_ops *o = all[b];
            uint8_t shared[32], sig[64], ct[116], back[100], h[32], prk[32], okm[80];
            uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
            size_t len = 0;
            assert_int_equal(o->public_key(EDHOC_COSE_CRV_X25519, true, priv, pub, &len), 0);
            assert_bytes_equal(pub, pub_mine, 32);
            assert_int_equal(o->ecdh(EDHOC_COSE_CRV_X25519, peer, pub_mine, lm, shared), 0);
            assert_bytes_equal(shared, ref_shared, 32);
            assert_int_equal(o->public_key(EDHOC_COSE_CRV_ED25519, false, mine_sig_priv, pub,
                                           &len), 0);
            assert_bytes_equal(pub, sig_pub, 32);
            assert_int_equal(o->sign(EDHOC_COSE_CRV_ED25519, mine_sig_priv, msg, sizeof msg, sig),
                             0);
            assert_bytes_equal(sig, ref_sig, 64);
            assert_int_equal(o->verify(EDHOC_COSE_CRV_ED25519, sig_pub, 32, msg, sizeof msg,
                                       ref_sig, 64), 0);
            assert_int_equal(o->aead_encrypt(EDHOC_COSE_CHACHA20_POLY1305, key, nonce, aad,
                                             sizeof aad, pt, sizeof pt, ct), 0);
            assert_bytes_equal(ct, ref_ct, sizeof ct);
            assert_int_equal(o->aead_decrypt(EDHOC_COSE_CHACHA20_POLY1305, key, nonce, aad,
                                             sizeof aad, ref_ct, sizeof ref_ct, back), 0);
            assert_bytes_equal(back, pt, sizeof pt);
            assert_int_equal(o->hash(EDHOC_COSE_SHA256, msg, (size_t)round * 9, h), 0);
            assert_bytes_equal(h, ref_hash, 32);
            assert_int_equal(o->hkdf_extract(EDHOC_COSE_SHA256, ref_hash, 32, ref_shared, 32,
                                             prk), 0);
            assert_bytes_equal(prk, ref_prk, 32);
            assert_int_equal(o->hkdf_expand(EDHOC_COSE_SHA256, ref_prk, 32, msg, (size_t)round,
                                             okm, sizeof okm), 0);
            assert_bytes_equal(okm, ref_okm, sizeof okm);
        }
        key[round % 32] ^= (uint8_t)round;
    }
}

/* --crypto / EDHOC_CRYPTO (issue #18): names, the default, and which
 * library the composite takes each operation from. */
static void test_backend_selection(void **state)
{
    (void)state;
    assert_ptr_equal(edhoc_crypto_by_name("openssl"), edhoc_crypto_openssl());
    assert_ptr_equal(edhoc_crypto_by_name("sodium"), edhoc_crypto_sodium());
    assert_ptr_equal(edhoc_crypto_by_name("auto"), edhoc_crypto_auto());
    assert_null(edhoc_crypto_by_name("OpenSSL"));
    assert_null(edhoc_crypto_by_name(""));
    assert_null(edhoc_crypto_by_name(NULL));

    char *saved = getenv("EDHOC_CRYPTO") ? strdup(getenv("EDHOC_CRYPTO")) : NULL;
    unsetenv("EDHOC_CRYPTO");
    assert_ptr_equal(edhoc_crypto_default(), edhoc_crypto_auto());
    setenv("EDHOC_CRYPTO", "openssl", 1);
    assert_ptr_equal(edhoc_crypto_default(), edhoc_crypto_openssl());
    setenv("EDHOC_CRYPTO", "sodium", 1);
    assert_ptr_equal(edhoc_crypto_default(), edhoc_crypto_sodium());
    setenv("EDHOC_CRYPTO", "nonsense", 1);
    assert_ptr_equal(edhoc_crypto_default(), edhoc_crypto_auto());
    if (saved) {
        setenv("EDHOC_CRYPTO", saved, 1);
        free(saved);
    } else {
        unsetenv("EDHOC_CRYPTO");
    }

    /* What libsodium lacks is always OpenSSL's. */
    static const struct { enum edhoc_crypto_op op; int alg; } openssl_only[] = {
        {EDHOC_CRYPTO_OP_ECDH, EDHOC_COSE_CRV_P256},
        {EDHOC_CRYPTO_OP_ECDH, EDHOC_COSE_CRV_X448},
        {EDHOC_CRYPTO_OP_SIGN, EDHOC_COSE_CRV_P384},
        {EDHOC_CRYPTO_OP_SIGN, EDHOC_COSE_CRV_ED448},
        {EDHOC_CRYPTO_OP_AEAD, EDHOC_COSE_AES_CCM_16_64_128},
        {EDHOC_CRYPTO_OP_AEAD, EDHOC_COSE_A256GCM},
        {EDHOC_CRYPTO_OP_HASH, EDHOC_COSE_SHAKE256},
        {EDHOC_CRYPTO_OP_HKDF, EDHOC_COSE_SHA384},
    };
    for (size_t i = 0; i < sizeof openssl_only / sizeof openssl_only[0]; i++)
        assert_ptr_equal(edhoc_crypto_auto_source(openssl_only[i].op, openssl_only[i].alg),
                         edhoc_crypto_openssl());
    /* The reason for the backend: Ed25519 is libsodium's (about twice as
     * fast, `edhoc-cli bench crypto`). */
    assert_ptr_equal(edhoc_crypto_auto_source(EDHOC_CRYPTO_OP_SIGN, EDHOC_COSE_CRV_ED25519),
                     edhoc_crypto_sodium());
    assert_ptr_equal(edhoc_crypto_auto_source(EDHOC_CRYPTO_OP_VERIFY, EDHOC_COSE_CRV_ED25519),
                     edhoc_crypto_sodium());
}

static int setup(void **state)
{
    (void)state;
    ops = backends[current].get();
    return ops == NULL;
}

int main(void)
{
    int failed = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_and_sizes),
        cmocka_unit_test(test_ct_equal_and_wipe),
        cmocka_unit_test(test_hash_known_answers),
        cmocka_unit_test(test_hash_trace1_th2),
        cmocka_unit_test(test_hkdf_rfc5869),
        cmocka_unit_test(test_hkdf_limits),
        cmocka_unit_test(test_hkdf_trace1_prk_2e),
        cmocka_unit_test(test_kmac256),
        cmocka_unit_test(test_aead_oscore_vectors),
        cmocka_unit_test(test_aead_edhoc_vectors),
        cmocka_unit_test(test_aead_round_trips),
        cmocka_unit_test(test_aead_keyed_contexts),
        cmocka_unit_test(test_aead_in_place),
        cmocka_unit_test(test_aead_errors),
        cmocka_unit_test(test_x25519_trace1),
        cmocka_unit_test(test_p256_trace2),
        cmocka_unit_test(test_keygen_rejects_out_of_range_scalars),
        cmocka_unit_test(test_p256_invalid_peer_keys),
        cmocka_unit_test(test_x448_rfc7748),
        cmocka_unit_test(test_p384_known_answers),
        cmocka_unit_test(test_ecdh_agreement_all_curves),
        cmocka_unit_test(test_ed25519_trace1),
        cmocka_unit_test(test_ed448_rfc8032),
        cmocka_unit_test(test_es256_rfc6979_verify),
        cmocka_unit_test(test_sign_verify_round_trips),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_handshake_mix_repeated),
        cmocka_unit_test(test_x25519_rfc7748),
        cmocka_unit_test(test_x25519_small_order_points),
        cmocka_unit_test(test_ed25519_rfc8032),
        cmocka_unit_test(test_ed25519_strict_rule),
        cmocka_unit_test(test_backends_agree),
        cmocka_unit_test(test_backend_selection),
    };
    for (current = 0; current < sizeof backends / sizeof backends[0]; current++)
        failed += cmocka_run_group_tests_name(backends[current].group, tests, setup, NULL);
    return failed;
}
