/*
 * crypto_openssl_kdf.c - hash and key derivation in the OpenSSL backend:
 * SHA-256, SHA-384, SHAKE256; HKDF (RFC 5869) built on HMAC for SHA-2
 * (OpenSSL 3.0 cannot copy HKDF contexts, and an HMAC context with its
 * digest set is copied per call); KMAC256 for SHAKE256 (RFC 9528 Section
 * 4.1).
 *
 * Hash lengths (edhoc_crypto_hash_len): SHA-256 32, SHA-384 48, SHAKE256
 * 64. COSE -45 is SHAKE256 with 512-bit output (RFC 9054), which matches
 * the 512-bit EDHOC_Extract output KMAC256(salt, IKM, 512, "") of RFC 9528
 * Section 4.1.1, so hash_length is 64 throughout an EDHOC session.
 */
#include "edhoc/crypto.h"
#include "crypto_openssl_internal.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

/* ------------------------------------------------------------------------
 * Hash
 */

static const EVP_MD *sha2_md(int hash_alg)
{
    const struct backend_algs *a = edhoc_openssl_algs();

    if (hash_alg == EDHOC_COSE_SHA256)
        return a->sha256;
    if (hash_alg == EDHOC_COSE_SHA384)
        return a->sha384;
    return NULL;
}

/* SHA-256 (32 bytes), SHA-384 (48) or SHAKE256 (64). Returns 0,
 * EDHOC_CRYPTO_ERR_UNSUPPORTED (other hash_alg), EDHOC_CRYPTO_ERR_BACKEND. */
int edhoc_openssl_hash(int hash_alg, const uint8_t *msg, size_t len, uint8_t *out)
{
    const struct backend_algs *a = edhoc_openssl_algs();
    EVP_MD_CTX *ctx;
    int ok;

    if (hash_alg == EDHOC_COSE_SHA256 || hash_alg == EDHOC_COSE_SHA384) {
        const EVP_MD *md = sha2_md(hash_alg);
        if (md == NULL)
            return EDHOC_CRYPTO_ERR_BACKEND;
        return EVP_Digest(msg, len, out, NULL, md, NULL) == 1 ? 0 : EDHOC_CRYPTO_ERR_BACKEND;
    }
    if (hash_alg != EDHOC_COSE_SHAKE256)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    if (a->shake256 == NULL)
        return EDHOC_CRYPTO_ERR_BACKEND;
    ctx = EVP_MD_CTX_new();
    if (ctx == NULL)
        return EDHOC_CRYPTO_ERR_BACKEND;
    ok = EVP_DigestInit_ex2(ctx, a->shake256, NULL) == 1 && EVP_DigestUpdate(ctx, msg, len) == 1 &&
         EVP_DigestFinalXOF(ctx, out, edhoc_crypto_hash_len(hash_alg)) == 1;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : EDHOC_CRYPTO_ERR_BACKEND;
}

/* ------------------------------------------------------------------------
 * HKDF (RFC 5869) for SHA-2, KMAC256 for SHAKE256 (RFC 9528 Section 4.1)
 */

/* OpenSSL's KMAC accepts keys of 4..512 bytes only; EDHOC's keys (salts
 * and PRKs) are transcript hashes or PRKs of hash_length = 64 bytes. */
#define KMAC_KEY_MIN 4
#define KMAC_KEY_MAX 512
/* OpenSSL's bound on the KMAC output length (0xFFFFFF bits). */
#define KMAC_OUT_MAX (0xFFFFFF / 8)

/* KMAC256(key, msg, 8 * out_len, "") */
static int kmac256(const uint8_t *key, size_t key_len, const uint8_t *msg, size_t msg_len,
                   uint8_t *out, size_t out_len)
{
    const struct backend_algs *a = edhoc_openssl_algs();
    EVP_MAC_CTX *ctx;
    OSSL_PARAM params[2];
    size_t written = 0;
    int ok;

    if (key_len < KMAC_KEY_MIN || key_len > KMAC_KEY_MAX || out_len > KMAC_OUT_MAX)
        return EDHOC_CRYPTO_ERR_INVALID;
    if (a->kmac256 == NULL)
        return EDHOC_CRYPTO_ERR_BACKEND;
    ctx = EVP_MAC_CTX_dup(a->kmac256);
    if (ctx == NULL)
        return EDHOC_CRYPTO_ERR_BACKEND;
    /* The requested length is part of the KMAC input (right_encode(L)),
     * so a 16-byte output is not a prefix of a 32-byte one. */
    params[0] = OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &out_len);
    params[1] = OSSL_PARAM_construct_end();
    ok = EVP_MAC_init(ctx, key, key_len, params) == 1 && EVP_MAC_update(ctx, msg, msg_len) == 1 &&
         EVP_MAC_final(ctx, out, &written, out_len) == 1 && written == out_len;
    EVP_MAC_CTX_free(ctx); /* the provider cleanses its state on free */
    if (!ok) {
        edhoc_wipe(out, out_len);
        return EDHOC_CRYPTO_ERR_BACKEND;
    }
    return 0;
}

static EVP_MAC_CTX *hmac_new(int hash_alg)
{
    const struct backend_algs *a = edhoc_openssl_algs();
    const EVP_MAC_CTX *tmpl = hash_alg == EDHOC_COSE_SHA256 ? a->hmac_sha256 : a->hmac_sha384;

    return tmpl == NULL ? NULL : EVP_MAC_CTX_dup(tmpl);
}

/* A non-NULL pointer for zero-length inputs: OpenSSL treats a NULL key as
 * "keep the previous key" rather than "empty key". */
static const uint8_t empty_input[1];

/* EDHOC_Extract: HKDF-Extract (SHA-2) or KMAC256(salt, IKM, 512, "")
 * (SHAKE256). Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (other hash_alg),
 * EDHOC_CRYPTO_ERR_INVALID (SHAKE256 with a salt outside 4..512 bytes),
 * EDHOC_CRYPTO_ERR_BACKEND (prk wiped). */
int edhoc_openssl_hkdf_extract(int hash_alg, const uint8_t *salt, size_t salt_len,
                               const uint8_t *ikm, size_t ikm_len, uint8_t *prk)
{
    size_t hash_len = edhoc_crypto_hash_len(hash_alg);
    EVP_MAC_CTX *ctx;
    size_t written = 0;
    int ok;

    if (hash_alg == EDHOC_COSE_SHAKE256)
        return kmac256(salt, salt_len, ikm, ikm_len, prk, hash_len);
    if (hash_alg != EDHOC_COSE_SHA256 && hash_alg != EDHOC_COSE_SHA384)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    ctx = hmac_new(hash_alg);
    if (ctx == NULL)
        return EDHOC_CRYPTO_ERR_BACKEND;
    /* An empty salt is an HMAC key of zero length, which HMAC pads to the
     * same block as RFC 5869's HashLen zero bytes. */
    ok = EVP_MAC_init(ctx, salt_len > 0 ? salt : empty_input, salt_len, NULL) == 1 &&
         EVP_MAC_update(ctx, ikm, ikm_len) == 1 &&
         EVP_MAC_final(ctx, prk, &written, hash_len) == 1 && written == hash_len;
    EVP_MAC_CTX_free(ctx);
    if (!ok) {
        edhoc_wipe(prk, hash_len);
        return EDHOC_CRYPTO_ERR_BACKEND;
    }
    return 0;
}

/* EDHOC_Expand: HKDF-Expand (SHA-2) or KMAC256(PRK, info, 8 * out_len, "")
 * (SHAKE256). out_len 0 writes nothing and succeeds. Returns 0,
 * EDHOC_CRYPTO_ERR_UNSUPPORTED (other hash_alg), EDHOC_CRYPTO_ERR_INVALID
 * (SHA-2: out_len > 255 * hash length; SHAKE256: PRK outside 4..512 bytes or
 * out_len > 2^21 - 1), EDHOC_CRYPTO_ERR_BACKEND (out wiped). */
int edhoc_openssl_hkdf_expand(int hash_alg, const uint8_t *prk, size_t prk_len, const uint8_t *info,
                              size_t info_len, uint8_t *out, size_t out_len)
{
    size_t hash_len = edhoc_crypto_hash_len(hash_alg);
    uint8_t block[EDHOC_CRYPTO_MAX_HASH];
    EVP_MAC_CTX *ctx;
    size_t done = 0;
    uint8_t counter = 0;
    int ret = 0;

    if (hash_alg == EDHOC_COSE_SHAKE256)
        return out_len == 0 ? 0 : kmac256(prk, prk_len, info, info_len, out, out_len);
    if (hash_alg != EDHOC_COSE_SHA256 && hash_alg != EDHOC_COSE_SHA384)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    if (out_len > 255 * hash_len)
        return EDHOC_CRYPTO_ERR_INVALID;
    if (out_len == 0)
        return 0;
    ctx = hmac_new(hash_alg);
    if (ctx == NULL)
        return EDHOC_CRYPTO_ERR_BACKEND;
    /* T(i) = HMAC(PRK, T(i-1) || info || i); the key is set once and later
     * rounds only re-initialise the context (EVP_MAC_init with NULL key). */
    while (done < out_len) {
        size_t take, written = 0;
        const uint8_t *key = counter == 0 ? (prk_len > 0 ? prk : empty_input) : NULL;

        counter++;
        if (EVP_MAC_init(ctx, key, prk_len, NULL) != 1 ||
            (counter > 1 && EVP_MAC_update(ctx, block, hash_len) != 1) ||
            EVP_MAC_update(ctx, info, info_len) != 1 || EVP_MAC_update(ctx, &counter, 1) != 1 ||
            EVP_MAC_final(ctx, block, &written, sizeof block) != 1 || written != hash_len) {
            ret = EDHOC_CRYPTO_ERR_BACKEND;
            break;
        }
        take = out_len - done < hash_len ? out_len - done : hash_len;
        memcpy(out + done, block, take);
        done += take;
    }
    EVP_MAC_CTX_free(ctx);
    edhoc_wipe(block, sizeof block);
    if (ret != 0)
        edhoc_wipe(out, out_len);
    return ret;
}
