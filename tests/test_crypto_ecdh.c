/*
 * Tests of keys and ECDH: the RFC 9529 traces (X25519, P-256), RFC 7748
 * (X25519, X448) with its small-order points, P-384 known answers, key
 * generation refusing out-of-range scalars, invalid peer keys, agreement on
 * every curve. Every test runs against each backend in turn (OpenSSL,
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
        "74a9419744897391006382a6f127ab1d9ac2d8c0a598726b",
        a, 56);
    hex("9b08f7cc31b7e3e67d22d5aea121074a273bd2b83de09c63faa73d2c22c5d9bb"
        "c836647241d953d40c5b12da88120d53177f80e532c41fa0",
        a_pub, 56);
    hex("1c306a7ac2a0e2e0990b294470cba339e6453772b075811d8fad0d1d6927c120"
        "bb5ee8972b0d3e21374c9c921b09d1b0366f10b65173992d",
        b, 56);
    hex("3eb7a829b0cd20f5bcfc0b599b6feccf6da4627107bdb0d4f345b43027d8b972"
        "fc3e34fb4232a13ca706dcb57aec3dae07bdc1c67bf33609",
        b_pub, 56);
    hex("07fff4181ac6cc95ec1c16a94a0f74d12da232ce40a77552281d282bb60c0b56"
        "fd2464c335543936521c24403085d59a449a5037514a879d",
        k, 56);
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
        "a4f188e9118bdaa14546c8100444c8c0",
        d1, 48);
    hex("04703d4e1fe3d4e1dfe5a4e8e9ef1529894edc0f790478cd33eacd4093e4ef2757"
        "8ead4b24c4f85878cb2f98029c3e1ccf8e6e12e47de6e35403bdbfeac60988d631"
        "663cd62db143ba46d508a3f7aa3d19037b5699db32a739a1898ed78616d643",
        q1, 97);
    hex("99bb3209b2e9cb765f97da03a5f05905513c60fd6f854ed87ab2e221a3df64cf"
        "97d09342dc43e068c26015769f4922d3",
        q2x, 48);
    hex("2004b8bfd063c4db826c0ab8e1d2490c2e56b3b87d578006a5edfb56d7aa4cc4"
        "42ef0fc4d1437bf2abd23e118a0d6c5a",
        shared, 48);
    hex("4e47a237cc608f03d38bf953c2c25c8cb99de4bbada9288a6b43656520b25591"
        "43f1fd344dde210802bbc630315996bea5055ae162859d034cb20fff81461259"
        "f4e61d0caaf268ca75ec190ba37a7d58dc65c73c845bd17d055f3bdeaf046beb",
        sig, 96);
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
    static const int curves[] = {EDHOC_COSE_CRV_P256, EDHOC_COSE_CRV_P384, EDHOC_COSE_CRV_X25519,
                                 EDHOC_COSE_CRV_X448};
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
    assert_int_equal(ops->ecdh(EDHOC_COSE_CRV_X25519, b, apub, 31, s2), EDHOC_CRYPTO_ERR_INVALID);
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

int main(void)
{
    int failed = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_x25519_trace1),
        cmocka_unit_test(test_p256_trace2),
        cmocka_unit_test(test_keygen_rejects_out_of_range_scalars),
        cmocka_unit_test(test_p256_invalid_peer_keys),
        cmocka_unit_test(test_x448_rfc7748),
        cmocka_unit_test(test_p384_known_answers),
        cmocka_unit_test(test_ecdh_agreement_all_curves),
        cmocka_unit_test(test_x25519_rfc7748),
        cmocka_unit_test(test_x25519_small_order_points),
    };
    for (current = 0; current < sizeof backends / sizeof backends[0]; current++)
        failed += cmocka_run_group_tests_name(backends[current].group, tests, setup, NULL);
    return failed;
}
