/*
 * Tests of signatures: Ed25519 against the RFC 9529 trace 1 and RFC 8032,
 * Ed448 against RFC 8032, ES256 against RFC 6979, round trips and
 * corruptions on every curve, and the strict Ed25519 rule both backends
 * enforce (crypto_internal.h). Every test runs against each backend in turn (OpenSSL,
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
        "528c8a3fcc2f044e39a3fc5b94492f8f032e7549a20098f95b",
        sk, 57);
    hex("5fd7449b59b461fd2ce787ec616ad46a1da1342485a70e1f8a0ea75d80e96778"
        "edf124769b46c7061bd6783df1e50f6cd1fa1abeafe8256180",
        pk, 57);
    hex("533a37f6bbe457251f023c0d88f976ae2dfb504a843e34d2074fd823d41a591f"
        "2b233f034f628281f2fd7a22ddd47d7828c59bd0a21bfd3980ff0d2028d4b18a"
        "9df63e006c5d1c2d345b925d8dc00b4104852db99ac5c7cdda8530a113a0f4db"
        "b61149f05a7363268c71d95808ff2e652600",
        want, 114);
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
        "7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299",
        pub, 65);
    hex("efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"
        "f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8",
        sig, 64);
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
    static const int curves[] = {EDHOC_COSE_CRV_P256, EDHOC_COSE_CRV_P384, EDHOC_COSE_CRV_ED25519,
                                 EDHOC_COSE_CRV_ED448};
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
            assert_int_not_equal(ops->verify(EDHOC_COSE_CRV_ED25519, pk, 32, msg, msg_len, sig, 64),
                                 0);
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
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7,
        0xa2, 0xde, 0xf9, 0xde, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
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
        "1cf9b46bd25bf5f0595bbe24655141438e7a100b",
        good, 64);
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

int main(void)
{
    int failed = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ed25519_trace1),       cmocka_unit_test(test_ed448_rfc8032),
        cmocka_unit_test(test_es256_rfc6979_verify), cmocka_unit_test(test_sign_verify_round_trips),
        cmocka_unit_test(test_ed25519_rfc8032),      cmocka_unit_test(test_ed25519_strict_rule),
    };
    for (current = 0; current < sizeof backends / sizeof backends[0]; current++)
        failed += cmocka_run_group_tests_name(backends[current].group, tests, setup, NULL);
    return failed;
}
