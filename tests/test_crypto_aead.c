/*
 * Tests of the AEADs: known answers from RFC 8613 Appendix C and the RFC
 * 9529 traces, round trips and single-byte corruptions for every algorithm,
 * the keyed contexts kept between calls, in-place use, the exact error for
 * each bad input. Every test runs against each backend in turn (OpenSSL,
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

/* ---- AEAD ------------------------------------------------------------- */
static void check_aead_kat(struct vec_scope v, const char *key_name, const char *nonce_name,
                           const char *aad_name, const char *pt_name, const char *ct_name, int alg)
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
    EDHOC_COSE_A256GCM,           EDHOC_COSE_CHACHA20_POLY1305,
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
                assert_int_equal(ops->aead_decrypt(alg, key, nonce, aad, aad_len, ct, ct_len, back),
                                 0);
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
                assert_int_equal(ops->aead_decrypt(alg, key, nonce, aad, aad_len, ct, ct_len, back),
                                 EDHOC_CRYPTO_ERR_AUTH);
                nonce[0] ^= 1;
                key[0] ^= 1;
                assert_int_equal(ops->aead_decrypt(alg, key, nonce, aad, aad_len, ct, ct_len, back),
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
                assert_int_equal(
                    ops->aead_decrypt(alg, key, nonce, aad, sizeof aad, ct, PT + tag, back), 0);
                assert_bytes_equal(back, pt, PT);
                if (round == 2 && k % 3 == 0) {
                    /* A forgery, then the valid message again. */
                    ct[PT] ^= 1;
                    assert_int_equal(
                        ops->aead_decrypt(alg, key, nonce, aad, sizeof aad, ct, PT + tag, back),
                        EDHOC_CRYPTO_ERR_AUTH);
                    ct[PT] ^= 1;
                    assert_int_equal(
                        ops->aead_decrypt(alg, key, nonce, aad, sizeof aad, ct, PT + tag, back), 0);
                    assert_bytes_equal(back, pt, PT);
                }
                if (round == 3 && ops->aead_forget) {
                    ops->aead_forget(key, edhoc_crypto_aead_key_len(alg));
                    assert_int_equal(
                        ops->aead_encrypt(alg, key, nonce, aad, sizeof aad, pt, PT, ct), 0);
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
        assert_int_equal(
            ops->aead_encrypt(EDHOC_COSE_AES_CCM_16_64_128, key, nonce, NULL, 0, pt, PT, ct8), 0);
        assert_int_equal(
            ops->aead_encrypt(EDHOC_COSE_AES_CCM_16_128_128, key, nonce, NULL, 0, pt, PT, ct16), 0);
        assert_memory_equal(ct8, ct16, PT); /* same keystream */
        assert_memory_not_equal(ct8 + PT, ct16 + PT, 8);
        uint8_t back[PT];
        assert_int_equal(ops->aead_decrypt(EDHOC_COSE_AES_CCM_16_128_128, key, nonce, NULL, 0, ct16,
                                           PT + 16, back),
                         0);
        assert_int_equal(ops->aead_decrypt(EDHOC_COSE_AES_CCM_16_64_128, key, nonce, NULL, 0, ct16,
                                           PT + 8, back),
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

int main(void)
{
    int failed = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aead_oscore_vectors), cmocka_unit_test(test_aead_edhoc_vectors),
        cmocka_unit_test(test_aead_round_trips),    cmocka_unit_test(test_aead_keyed_contexts),
        cmocka_unit_test(test_aead_in_place),       cmocka_unit_test(test_aead_errors),
    };
    for (current = 0; current < sizeof backends / sizeof backends[0]; current++)
        failed += cmocka_run_group_tests_name(backends[current].group, tests, setup, NULL);
    return failed;
}
