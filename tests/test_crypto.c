/*
 * Tests of the crypto ops table as a whole: names and sizes, constant-time
 * comparison and wiping, the random source, concurrent use from threads, a
 * handshake's worth of operations repeated, the backends agreeing byte for
 * byte, and the choices of `auto`. Every test runs against each backend in turn (OpenSSL,
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

    static const struct {
        int alg;
        size_t key, nonce, tag;
    } aead[] = {
        {EDHOC_COSE_AES_CCM_16_64_128, 16, 13, 8},  {EDHOC_COSE_AES_CCM_16_128_128, 16, 13, 16},
        {EDHOC_COSE_A128GCM, 16, 12, 16},           {EDHOC_COSE_A256GCM, 32, 12, 16},
        {EDHOC_COSE_CHACHA20_POLY1305, 32, 12, 16}, {EDHOC_COSE_SHA256, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof aead / sizeof aead[0]; i++) {
        assert_int_equal(edhoc_crypto_aead_key_len(aead[i].alg), aead[i].key);
        assert_int_equal(edhoc_crypto_aead_nonce_len(aead[i].alg), aead[i].nonce);
        assert_int_equal(edhoc_crypto_aead_tag_len(aead[i].alg), aead[i].tag);
    }

    static const struct {
        int crv;
        size_t priv, ecdh, sig;
        const char *name;
    } crv[] = {
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
    assert_string_equal(edhoc_crypto_alg_name(EDHOC_COSE_AES_CCM_16_64_128), "AES-CCM-16-64-128");
    assert_string_equal(edhoc_crypto_alg_name(EDHOC_COSE_CHACHA20_POLY1305), "ChaCha20/Poly1305");
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
        assert_int_equal(
            ops->aead_encrypt(EDHOC_COSE_AES_CCM_16_64_128, k4, iv4, a4, a4_len, NULL, 0, ct), 0);
        assert_bytes_equal(ct, ct4, 8);
        assert_int_equal(
            ops->aead_decrypt(EDHOC_COSE_AES_CCM_16_64_128, k4, iv4, a4, a4_len, ct, 8, NULL), 0);
    }
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
        uint8_t ref_shared[32], ref_sig[64], ref_ct[116], ref_hash[32], ref_prk[32], ref_okm[80];
        assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, priv, pub_peer, lp, ref_shared), 0);
        assert_int_equal(ops->sign(EDHOC_COSE_CRV_ED25519, mine_sig_priv, msg, sizeof msg, ref_sig),
                         0);
        assert_int_equal(ops->aead_encrypt(EDHOC_COSE_CHACHA20_POLY1305, key, nonce, aad,
                                           sizeof aad, pt, sizeof pt, ref_ct),
                         0);
        assert_int_equal(ops->hash(EDHOC_COSE_SHA256, msg, (size_t)round * 9, ref_hash), 0);
        assert_int_equal(
            ops->hkdf_extract(EDHOC_COSE_SHA256, ref_hash, 32, ref_shared, 32, ref_prk), 0);
        assert_int_equal(ops->hkdf_expand(EDHOC_COSE_SHA256, ref_prk, 32, msg, (size_t)round,
                                          ref_okm, sizeof ref_okm),
                         0);
        for (size_t b = 0; b < sizeof all / sizeof all[0]; b++) {
            const struct edhoc_crypto_ops *o = all[b];
            uint8_t shared[32], sig[64], ct[116], back[100], h[32], prk[32], okm[80];
            uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
            size_t len = 0;
            assert_int_equal(o->public_key(EDHOC_COSE_CRV_X25519, true, priv, pub, &len), 0);
            assert_bytes_equal(pub, pub_mine, 32);
            assert_int_equal(o->ecdh(EDHOC_COSE_CRV_X25519, peer, pub_mine, lm, shared), 0);
            assert_bytes_equal(shared, ref_shared, 32);
            assert_int_equal(o->public_key(EDHOC_COSE_CRV_ED25519, false, mine_sig_priv, pub, &len),
                             0);
            assert_bytes_equal(pub, sig_pub, 32);
            assert_int_equal(o->sign(EDHOC_COSE_CRV_ED25519, mine_sig_priv, msg, sizeof msg, sig),
                             0);
            assert_bytes_equal(sig, ref_sig, 64);
            assert_int_equal(
                o->verify(EDHOC_COSE_CRV_ED25519, sig_pub, 32, msg, sizeof msg, ref_sig, 64), 0);
            assert_int_equal(o->aead_encrypt(EDHOC_COSE_CHACHA20_POLY1305, key, nonce, aad,
                                             sizeof aad, pt, sizeof pt, ct),
                             0);
            assert_bytes_equal(ct, ref_ct, sizeof ct);
            assert_int_equal(o->aead_decrypt(EDHOC_COSE_CHACHA20_POLY1305, key, nonce, aad,
                                             sizeof aad, ref_ct, sizeof ref_ct, back),
                             0);
            assert_bytes_equal(back, pt, sizeof pt);
            assert_int_equal(o->hash(EDHOC_COSE_SHA256, msg, (size_t)round * 9, h), 0);
            assert_bytes_equal(h, ref_hash, 32);
            assert_int_equal(o->hkdf_extract(EDHOC_COSE_SHA256, ref_hash, 32, ref_shared, 32, prk),
                             0);
            assert_bytes_equal(prk, ref_prk, 32);
            assert_int_equal(
                o->hkdf_expand(EDHOC_COSE_SHA256, ref_prk, 32, msg, (size_t)round, okm, sizeof okm),
                0);
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
    static const struct {
        enum edhoc_crypto_op op;
        int alg;
    } openssl_only[] = {
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

int main(void)
{
    int failed = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_and_sizes),
        cmocka_unit_test(test_ct_equal_and_wipe),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_handshake_mix_repeated),
        cmocka_unit_test(test_backends_agree),
        cmocka_unit_test(test_backend_selection),
    };
    for (current = 0; current < sizeof backends / sizeof backends[0]; current++)
        failed += cmocka_run_group_tests_name(backends[current].group, tests, setup, NULL);
    return failed;
}
