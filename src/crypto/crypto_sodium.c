/*
 * crypto_sodium.c - the libsodium backend of struct edhoc_crypto_ops.
 *
 * This is the only file of the project that includes libsodium headers.
 *
 * libsodium implements part of what EDHOC and OSCORE need: X25519,
 * Ed25519, ChaCha20-Poly1305 (IETF), SHA-256 and HMAC-SHA-256 (so HKDF
 * with SHA-256), and a random source. Everything else (P-256, P-384, X448,
 * Ed448, AES-CCM/GCM, SHA-384, SHAKE256/KMAC256) it does not have, and the
 * table hands it to the OpenSSL backend, so edhoc_crypto_sodium() serves
 * every cipher suite. sodium_supports() says which part is libsodium's own;
 * the composite backend (crypto_select.c) uses it.
 *
 * Private keys that pass through here (expanded Ed25519 secret keys, HMAC
 * states) are wiped with sodium_memzero before returning. libsodium's
 * primitives are constant-time in the secret inputs.
 *
 * Ed25519 verification enforces one rule for both backends (see
 * edhoc_ed25519_strict_reject in crypto_internal.h): libsodium refuses
 * small-order and non-canonical public keys and small-order R, where
 * OpenSSL 3.0 accepts them; both backends refuse them, so a peer is
 * accepted or refused the same way whichever backend a process runs.
 */
#include "edhoc/crypto.h"
#include "crypto_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

static int sodium_random(void *rng_ctx, uint8_t *out, size_t len);
/* A non-NULL pointer for empty inputs: libsodium declares its pointer
 * parameters nonnull even where the length may be zero (an empty salt, an
 * empty info, an empty message), and passing NULL there is undefined. */
static const uint8_t empty_input[1];
#define NONNULL_INPUT(p, len) ((len) > 0 ? (p) : empty_input)

static int sodium_hash(int hash_alg, const uint8_t *msg, size_t len, uint8_t *out);
static int sodium_hkdf_extract(int hash_alg, const uint8_t *salt, size_t salt_len,
                               const uint8_t *ikm, size_t ikm_len, uint8_t *prk);
static int sodium_hkdf_expand(int hash_alg, const uint8_t *prk, size_t prk_len, const uint8_t *info,
                              size_t info_len, uint8_t *out, size_t out_len);
static int sodium_aead_encrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                               const uint8_t *aad, size_t aad_len, const uint8_t *pt, size_t pt_len,
                               uint8_t *ct);
static int sodium_aead_decrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                               const uint8_t *aad, size_t aad_len, const uint8_t *ct, size_t ct_len,
                               uint8_t *pt);
static int sodium_keygen(int curve, bool for_ecdh, uint8_t *priv, uint8_t *pub, size_t *pub_len);
static int sodium_public_key(int curve, bool for_ecdh, const uint8_t *priv, uint8_t *pub,
                             size_t *pub_len);
static int sodium_ecdh(int curve, const uint8_t *priv, const uint8_t *peer_pub, size_t peer_pub_len,
                       uint8_t *shared);
static int sodium_sign(int curve, const uint8_t *priv, const uint8_t *msg, size_t msg_len,
                       uint8_t *sig);
static int sodium_verify(int curve, const uint8_t *pub, size_t pub_len, const uint8_t *msg,
                         size_t msg_len, const uint8_t *sig, size_t sig_len);
static void sodium_aead_forget(const uint8_t *key, size_t key_len);

/* Not const: the name holds the run-time library versions (filled once). */
static struct edhoc_crypto_ops sodium_ops = {
    .name = "libsodium",
    .random = sodium_random,
    .rng_ctx = NULL,
    .hash = sodium_hash,
    .hkdf_extract = sodium_hkdf_extract,
    .hkdf_expand = sodium_hkdf_expand,
    .aead_encrypt = sodium_aead_encrypt,
    .aead_decrypt = sodium_aead_decrypt,
    .keygen = sodium_keygen,
    .public_key = sodium_public_key,
    .ecdh = sodium_ecdh,
    .sign = sodium_sign,
    .verify = sodium_verify,
    .aead_forget = sodium_aead_forget,
};

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;
static bool sodium_ready;
static char sodium_name[64];

static void sodium_setup(void)
{
    /* sodium_init picks the CPU-specific implementations and opens the
     * random source; 1 means an earlier caller already did. */
    sodium_ready = sodium_init() >= 0;
    snprintf(sodium_name, sizeof sodium_name, "libsodium %s", sodium_version_string());
    sodium_ops.name = sodium_name;
}

static const struct edhoc_crypto_ops *fallback(void)
{
    return edhoc_crypto_openssl();
}

const struct edhoc_crypto_ops *edhoc_crypto_sodium(void)
{
    pthread_once(&sodium_once, sodium_setup);
    /* Without a working libsodium every operation is OpenSSL's. */
    return sodium_ready ? &sodium_ops : fallback();
}

bool edhoc_crypto_sodium_implements(enum edhoc_crypto_op op, int alg)
{
    switch (op) {
    case EDHOC_CRYPTO_OP_RANDOM: return true;
    case EDHOC_CRYPTO_OP_HASH:
    case EDHOC_CRYPTO_OP_HKDF: return alg == EDHOC_COSE_SHA256;
    case EDHOC_CRYPTO_OP_AEAD: return alg == EDHOC_COSE_CHACHA20_POLY1305;
    case EDHOC_CRYPTO_OP_KEYGEN:
        return alg == EDHOC_COSE_CRV_X25519 || alg == EDHOC_COSE_CRV_ED25519;
    case EDHOC_CRYPTO_OP_ECDH: return alg == EDHOC_COSE_CRV_X25519;
    case EDHOC_CRYPTO_OP_SIGN:
    case EDHOC_CRYPTO_OP_VERIFY: return alg == EDHOC_COSE_CRV_ED25519;
    default: return false;
    }
}

/* ------------------------------------------------------------------------
 * Random, hash, HKDF
 */

/* libsodium's system random source (getrandom); rng_ctx is unused. */
static int sodium_random(void *rng_ctx, uint8_t *out, size_t len)
{
    (void)rng_ctx;
    if (len > 0)
        randombytes_buf(out, len);
    return 0;
}

static int sodium_hash(int hash_alg, const uint8_t *msg, size_t len, uint8_t *out)
{
    if (hash_alg != EDHOC_COSE_SHA256)
        return fallback()->hash(hash_alg, msg, len, out);
    return crypto_hash_sha256(out, NONNULL_INPUT(msg, len), len) == 0 ? 0
                                                                      : EDHOC_CRYPTO_ERR_BACKEND;
}

static int sodium_hkdf_extract(int hash_alg, const uint8_t *salt, size_t salt_len,
                               const uint8_t *ikm, size_t ikm_len, uint8_t *prk)
{
    crypto_auth_hmacsha256_state st;

    if (hash_alg != EDHOC_COSE_SHA256)
        return fallback()->hkdf_extract(hash_alg, salt, salt_len, ikm, ikm_len, prk);
    /* An empty salt is an HMAC key of zero length, which HMAC pads to the
     * same block as RFC 5869's HashLen zero bytes. */
    crypto_auth_hmacsha256_init(&st, NONNULL_INPUT(salt, salt_len), salt_len);
    crypto_auth_hmacsha256_update(&st, NONNULL_INPUT(ikm, ikm_len), ikm_len);
    crypto_auth_hmacsha256_final(&st, prk);
    sodium_memzero(&st, sizeof st);
    return 0;
}

/* HKDF-Expand (RFC 5869 Section 2.3): T(i) = HMAC(PRK, T(i-1) || info || i).
 * The keyed state is built once and copied per round. Same limits and
 * errors as the OpenSSL backend: out_len > 255 * 32 is
 * EDHOC_CRYPTO_ERR_INVALID, out_len 0 writes nothing. */
static int sodium_hkdf_expand(int hash_alg, const uint8_t *prk, size_t prk_len, const uint8_t *info,
                              size_t info_len, uint8_t *out, size_t out_len)
{
    crypto_auth_hmacsha256_state keyed, st;
    uint8_t block[crypto_auth_hmacsha256_BYTES];
    size_t done = 0;
    uint8_t counter = 0;

    if (hash_alg != EDHOC_COSE_SHA256)
        return fallback()->hkdf_expand(hash_alg, prk, prk_len, info, info_len, out, out_len);
    if (out_len > 255 * sizeof block)
        return EDHOC_CRYPTO_ERR_INVALID;
    if (out_len == 0)
        return 0;
    crypto_auth_hmacsha256_init(&keyed, NONNULL_INPUT(prk, prk_len), prk_len);
    while (done < out_len) {
        size_t take = out_len - done < sizeof block ? out_len - done : sizeof block;

        counter++;
        st = keyed;
        if (counter > 1)
            crypto_auth_hmacsha256_update(&st, block, sizeof block);
        crypto_auth_hmacsha256_update(&st, NONNULL_INPUT(info, info_len), info_len);
        crypto_auth_hmacsha256_update(&st, &counter, 1);
        crypto_auth_hmacsha256_final(&st, block);
        memcpy(out + done, block, take);
        done += take;
    }
    sodium_memzero(&keyed, sizeof keyed);
    sodium_memzero(&st, sizeof st);
    sodium_memzero(block, sizeof block);
    return 0;
}

/* ------------------------------------------------------------------------
 * AEAD: ChaCha20-Poly1305 (RFC 8439), libsodium's "IETF" variant
 */

/* ct and pt may be the same buffer (in-place). */
static int sodium_aead_encrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                               const uint8_t *aad, size_t aad_len, const uint8_t *pt, size_t pt_len,
                               uint8_t *ct)
{
    unsigned long long ct_len = 0;

    if (aead_alg != EDHOC_COSE_CHACHA20_POLY1305)
        return fallback()->aead_encrypt(aead_alg, key, nonce, aad, aad_len, pt, pt_len, ct);
    if (pt_len > EDHOC_AEAD_LEN_MAX || aad_len > EDHOC_AEAD_LEN_MAX)
        return EDHOC_CRYPTO_ERR_INVALID;
    if (crypto_aead_chacha20poly1305_ietf_encrypt(ct, &ct_len, pt_len > 0 ? pt : empty_input,
                                                  pt_len, aad_len > 0 ? aad : empty_input, aad_len,
                                                  NULL, nonce, key) != 0 ||
        ct_len != pt_len + crypto_aead_chacha20poly1305_ietf_ABYTES) {
        sodium_memzero(ct, pt_len + crypto_aead_chacha20poly1305_ietf_ABYTES);
        return EDHOC_CRYPTO_ERR_BACKEND;
    }
    return 0;
}

/* Returns EDHOC_CRYPTO_ERR_INVALID for ct_len shorter than the tag and
 * EDHOC_CRYPTO_ERR_AUTH (pt wiped) for a tag that does not verify, as the
 * OpenSSL backend does. */
static int sodium_aead_decrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                               const uint8_t *aad, size_t aad_len, const uint8_t *ct, size_t ct_len,
                               uint8_t *pt)
{
    const size_t tag_len = crypto_aead_chacha20poly1305_ietf_ABYTES;
    unsigned long long pt_len = 0;
    uint8_t scratch[1] = {0};

    if (aead_alg != EDHOC_COSE_CHACHA20_POLY1305)
        return fallback()->aead_decrypt(aead_alg, key, nonce, aad, aad_len, ct, ct_len, pt);
    if (ct_len < tag_len || ct_len > EDHOC_AEAD_LEN_MAX || aad_len > EDHOC_AEAD_LEN_MAX)
        return EDHOC_CRYPTO_ERR_INVALID;
    /* libsodium checks the tag before it writes any plaintext. */
    if (crypto_aead_chacha20poly1305_ietf_decrypt(ct_len > tag_len ? pt : scratch, &pt_len, NULL,
                                                  ct, ct_len, aad_len > 0 ? aad : empty_input,
                                                  aad_len, nonce, key) != 0) {
        if (ct_len > tag_len)
            sodium_memzero(pt, ct_len - tag_len);
        return EDHOC_CRYPTO_ERR_AUTH;
    }
    return 0;
}

/* No keyed state is kept: nothing to forget here, but the fallback's. */
static void sodium_aead_forget(const uint8_t *key, size_t key_len)
{
    const struct edhoc_crypto_ops *o = fallback();
    if (o->aead_forget != NULL)
        o->aead_forget(key, key_len);
}

/* ------------------------------------------------------------------------
 * X25519 and Ed25519
 */

static int sodium_keygen(int curve, bool for_ecdh, uint8_t *priv, uint8_t *pub, size_t *pub_len)
{
    /* Draws through this table's `random` like every backend's keygen. */
    return edhoc_crypto_keygen(edhoc_crypto_sodium(), curve, for_ecdh, priv, pub, pub_len);
}

static int sodium_public_key(int curve, bool for_ecdh, const uint8_t *priv, uint8_t *pub,
                             size_t *pub_len)
{
    if (curve == EDHOC_COSE_CRV_X25519) {
        /* RFC 7748 Section 6.1: the public key is X25519(a, 9). */
        if (crypto_scalarmult_curve25519_base(pub, priv) != 0)
            return EDHOC_CRYPTO_ERR_BACKEND;
        *pub_len = crypto_scalarmult_curve25519_BYTES;
        return 0;
    }
    if (curve == EDHOC_COSE_CRV_ED25519) {
        uint8_t sk[crypto_sign_ed25519_SECRETKEYBYTES];
        int rc;

        if (for_ecdh)
            return EDHOC_CRYPTO_ERR_UNSUPPORTED;
        /* The COSE 'd' of an Ed25519 key is RFC 8032's 32-byte seed. */
        rc = crypto_sign_ed25519_seed_keypair(pub, sk, priv);
        sodium_memzero(sk, sizeof sk);
        if (rc != 0)
            return EDHOC_CRYPTO_ERR_BACKEND;
        *pub_len = crypto_sign_ed25519_PUBLICKEYBYTES;
        return 0;
    }
    return fallback()->public_key(curve, for_ecdh, priv, pub, pub_len);
}

/* X25519; a small-order peer point (all-zero secret, RFC 7748 Section 6.1)
 * is EDHOC_CRYPTO_ERR_INVALID as with OpenSSL. */
static int sodium_ecdh(int curve, const uint8_t *priv, const uint8_t *peer_pub, size_t peer_pub_len,
                       uint8_t *shared)
{
    if (curve != EDHOC_COSE_CRV_X25519)
        return fallback()->ecdh(curve, priv, peer_pub, peer_pub_len, shared);
    if (peer_pub_len != crypto_scalarmult_curve25519_BYTES)
        return EDHOC_CRYPTO_ERR_INVALID;
    if (crypto_scalarmult_curve25519(shared, priv, peer_pub) != 0) {
        sodium_memzero(shared, crypto_scalarmult_curve25519_BYTES);
        return EDHOC_CRYPTO_ERR_INVALID;
    }
    return 0;
}

static int sodium_sign(int curve, const uint8_t *priv, const uint8_t *msg, size_t msg_len,
                       uint8_t *sig)
{
    uint8_t pk[crypto_sign_ed25519_PUBLICKEYBYTES];
    uint8_t sk[crypto_sign_ed25519_SECRETKEYBYTES];
    int rc;

    if (curve != EDHOC_COSE_CRV_ED25519)
        return fallback()->sign(curve, priv, msg, msg_len, sig);
    /* Pure Ed25519 (RFC 8032 Section 5.1.6) over the whole message. */
    rc = crypto_sign_ed25519_seed_keypair(pk, sk, priv) == 0 &&
                 crypto_sign_ed25519_detached(sig, NULL, msg_len > 0 ? msg : empty_input, msg_len,
                                              sk) == 0
             ? 0
             : EDHOC_CRYPTO_ERR_BACKEND;
    sodium_memzero(sk, sizeof sk);
    if (rc != 0)
        sodium_memzero(sig, crypto_sign_ed25519_BYTES);
    return rc;
}

static int sodium_verify(int curve, const uint8_t *pub, size_t pub_len, const uint8_t *msg,
                         size_t msg_len, const uint8_t *sig, size_t sig_len)
{
    if (curve != EDHOC_COSE_CRV_ED25519)
        return fallback()->verify(curve, pub, pub_len, msg, msg_len, sig, sig_len);
    if (sig_len != crypto_sign_ed25519_BYTES)
        return EDHOC_CRYPTO_ERR_INVALID;
    if (pub_len != crypto_sign_ed25519_PUBLICKEYBYTES)
        return EDHOC_CRYPTO_ERR_INVALID;
    /* The rule both backends share (crypto_internal.h), with OpenSSL's
     * error for it: libsodium alone would say only "did not verify". */
    int strict = edhoc_ed25519_strict_reject(pub, sig);
    if (strict != 0)
        return strict;
    return crypto_sign_ed25519_verify_detached(sig, msg_len > 0 ? msg : empty_input, msg_len,
                                               pub) == 0
               ? 0
               : EDHOC_CRYPTO_ERR_AUTH;
}
