/*
 * crypto_openssl.c - the OpenSSL 3 backend of struct edhoc_crypto_ops.
 *
 * This is the only file of the project that includes OpenSSL headers.
 *
 * Algorithm objects (EVP_MD, EVP_CIPHER, EVP_MAC contexts with their digest
 * already set, EC_GROUPs) are fetched once, on first use, under
 * pthread_once: an implicit fetch by name costs a locked lookup in the
 * provider store on every call, which shows in the handshake-versus-crypto
 * benchmarks. The cached objects are only read afterwards, so any number
 * of threads may use the backend at once; they live until process exit.
 *
 * Hash lengths (edhoc_crypto_hash_len): SHA-256 32, SHA-384 48, SHAKE256
 * 64. COSE -45 is SHAKE256 with 512-bit output (RFC 9054), which matches
 * the 512-bit EDHOC_Extract output KMAC256(salt, IKM, 512, "") of RFC 9528
 * Section 4.1.1, so hash_length is 64 throughout an EDHOC session.
 *
 * P-256 / P-384 arithmetic goes through the (non-deprecated) EC_POINT
 * interface: ECDH and public-key derivation are a single scalar
 * multiplication, which OpenSSL performs with its constant-time ladder, and
 * skipping the EVP_PKEY import saves most of the per-call overhead. ECDSA
 * goes through EVP_PKEY_sign/verify on a digest computed here.
 */
#include "edhoc/crypto.h"
#include "crypto_internal.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/params.h>
#include <openssl/rand.h>

/* ------------------------------------------------------------------------
 * Cached algorithm objects
 */

struct backend_algs {
    EVP_MD *sha256;
    EVP_MD *sha384;
    EVP_MD *shake256;
    EVP_MAC_CTX *hmac_sha256; /* digest set, no key: dup'd per call */
    EVP_MAC_CTX *hmac_sha384;
    EVP_MAC_CTX *kmac256;
    EVP_CIPHER *aes128ccm;
    EVP_CIPHER *aes128gcm;
    EVP_CIPHER *aes256gcm;
    EVP_CIPHER *chacha20poly1305;
    EC_GROUP *p256;
    EC_GROUP *p384;
    /* Domain parameters only; a verification key is a dup of this plus
     * the encoded point, which skips the EC_GROUP construction that an
     * EVP_PKEY_fromdata import repeats on every call (~3x slower). */
    EVP_PKEY *p256_params;
    EVP_PKEY *p384_params;
};

static struct backend_algs algs;
static pthread_once_t algs_once = PTHREAD_ONCE_INIT;
static char backend_name[64];

static int openssl_random(void *rng_ctx, uint8_t *out, size_t len);
static int openssl_hash(int hash_alg, const uint8_t *msg, size_t len, uint8_t *out);
static int openssl_hkdf_extract(int hash_alg, const uint8_t *salt, size_t salt_len,
                                const uint8_t *ikm, size_t ikm_len, uint8_t *prk);
static int openssl_hkdf_expand(int hash_alg, const uint8_t *prk, size_t prk_len,
                               const uint8_t *info, size_t info_len, uint8_t *out,
                               size_t out_len);
static int openssl_aead_encrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                                const uint8_t *aad, size_t aad_len, const uint8_t *pt,
                                size_t pt_len, uint8_t *ct);
static int openssl_aead_decrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                                const uint8_t *aad, size_t aad_len, const uint8_t *ct,
                                size_t ct_len, uint8_t *pt);
static int openssl_keygen(int curve, bool for_ecdh, uint8_t *priv, uint8_t *pub,
                          size_t *pub_len);
static int openssl_public_key(int curve, bool for_ecdh, const uint8_t *priv,
                              uint8_t *pub, size_t *pub_len);
static int openssl_ecdh(int curve, const uint8_t *priv, const uint8_t *peer_pub,
                        size_t peer_pub_len, uint8_t *shared);
static int openssl_sign(int curve, const uint8_t *priv, const uint8_t *msg,
                        size_t msg_len, uint8_t *sig);
static int openssl_verify(int curve, const uint8_t *pub, size_t pub_len,
                          const uint8_t *msg, size_t msg_len, const uint8_t *sig,
                          size_t sig_len);
static void openssl_aead_forget(const uint8_t *key, size_t key_len);

/* Not const: `name` is only known at run time (the library may be newer
 * than the headers we were built against). Filled once in algs_init(). */
static struct edhoc_crypto_ops openssl_ops = {
    .name = "OpenSSL",
    .random = openssl_random,
    .rng_ctx = NULL,
    .hash = openssl_hash,
    .hkdf_extract = openssl_hkdf_extract,
    .hkdf_expand = openssl_hkdf_expand,
    .aead_encrypt = openssl_aead_encrypt,
    .aead_decrypt = openssl_aead_decrypt,
    .keygen = openssl_keygen,
    .public_key = openssl_public_key,
    .ecdh = openssl_ecdh,
    .sign = openssl_sign,
    .verify = openssl_verify,
    .aead_forget = openssl_aead_forget,
};

static EVP_MAC_CTX *mac_template(EVP_MAC *mac, const char *digest)
{
    EVP_MAC_CTX *ctx;
    OSSL_PARAM params[2];

    if (mac == NULL)
        return NULL;
    ctx = EVP_MAC_CTX_new(mac);
    if (ctx == NULL)
        return NULL;
    if (digest != NULL) {
        params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                     (char *)digest, 0);
        params[1] = OSSL_PARAM_construct_end();
        if (EVP_MAC_CTX_set_params(ctx, params) != 1) {
            EVP_MAC_CTX_free(ctx);
            return NULL;
        }
    }
    return ctx;
}

static EVP_PKEY *ec_params_template(const char *group_name)
{
    OSSL_PARAM params[2];
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    EVP_PKEY *pkey = NULL;

    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME,
                                                 (char *)group_name, 0);
    params[1] = OSSL_PARAM_construct_end();
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_KEY_PARAMETERS, params) != 1)
        pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}

static void algs_init(void)
{
    EVP_MAC *hmac, *kmac;

    /* Each object is fetched on its own: a provider lacking one algorithm
     * (e.g. a FIPS build without X448) disables only that algorithm, whose
     * functions then return EDHOC_CRYPTO_ERR_BACKEND. */
    algs.sha256 = EVP_MD_fetch(NULL, "SHA2-256", NULL);
    algs.sha384 = EVP_MD_fetch(NULL, "SHA2-384", NULL);
    algs.shake256 = EVP_MD_fetch(NULL, "SHAKE-256", NULL);
    hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    algs.hmac_sha256 = mac_template(hmac, "SHA2-256");
    algs.hmac_sha384 = mac_template(hmac, "SHA2-384");
    EVP_MAC_free(hmac); /* the contexts hold their own references */
    kmac = EVP_MAC_fetch(NULL, "KMAC-256", NULL);
    algs.kmac256 = mac_template(kmac, NULL);
    EVP_MAC_free(kmac);
    algs.aes128ccm = EVP_CIPHER_fetch(NULL, "AES-128-CCM", NULL);
    algs.aes128gcm = EVP_CIPHER_fetch(NULL, "AES-128-GCM", NULL);
    algs.aes256gcm = EVP_CIPHER_fetch(NULL, "AES-256-GCM", NULL);
    algs.chacha20poly1305 = EVP_CIPHER_fetch(NULL, "ChaCha20-Poly1305", NULL);
    algs.p256 = EC_GROUP_new_by_curve_name_ex(NULL, NULL, NID_X9_62_prime256v1);
    algs.p384 = EC_GROUP_new_by_curve_name_ex(NULL, NULL, NID_secp384r1);
    algs.p256_params = ec_params_template("P-256");
    algs.p384_params = ec_params_template("P-384");

    snprintf(backend_name, sizeof backend_name, "OpenSSL %s",
             OpenSSL_version(OPENSSL_VERSION_STRING));
    openssl_ops.name = backend_name;
}

static const struct backend_algs *algs_get(void)
{
    pthread_once(&algs_once, algs_init);
    return &algs;
}

const struct edhoc_crypto_ops *edhoc_crypto_openssl(void)
{
    algs_get();
    return &openssl_ops;
}

/* ------------------------------------------------------------------------
 * Sizes and names
 */

size_t edhoc_crypto_hash_len(int hash_alg)
{
    switch (hash_alg) {
    case EDHOC_COSE_SHA256: return 32;
    case EDHOC_COSE_SHA384: return 48;
    case EDHOC_COSE_SHAKE256: return 64;
    default: return 0;
    }
}

size_t edhoc_crypto_aead_key_len(int aead_alg)
{
    switch (aead_alg) {
    case EDHOC_COSE_AES_CCM_16_64_128:
    case EDHOC_COSE_AES_CCM_16_128_128:
    case EDHOC_COSE_A128GCM: return 16;
    case EDHOC_COSE_A256GCM:
    case EDHOC_COSE_CHACHA20_POLY1305: return 32;
    default: return 0;
    }
}

size_t edhoc_crypto_aead_nonce_len(int aead_alg)
{
    switch (aead_alg) {
    case EDHOC_COSE_AES_CCM_16_64_128:
    case EDHOC_COSE_AES_CCM_16_128_128: return 13;
    case EDHOC_COSE_A128GCM:
    case EDHOC_COSE_A256GCM:
    case EDHOC_COSE_CHACHA20_POLY1305: return 12;
    default: return 0;
    }
}

size_t edhoc_crypto_aead_tag_len(int aead_alg)
{
    switch (aead_alg) {
    case EDHOC_COSE_AES_CCM_16_64_128: return 8;
    case EDHOC_COSE_AES_CCM_16_128_128:
    case EDHOC_COSE_A128GCM:
    case EDHOC_COSE_A256GCM:
    case EDHOC_COSE_CHACHA20_POLY1305: return 16;
    default: return 0;
    }
}

size_t edhoc_crypto_priv_len(int curve)
{
    switch (curve) {
    case EDHOC_COSE_CRV_P256:
    case EDHOC_COSE_CRV_X25519:
    case EDHOC_COSE_CRV_ED25519: return 32;
    case EDHOC_COSE_CRV_P384: return 48;
    case EDHOC_COSE_CRV_X448: return 56;
    case EDHOC_COSE_CRV_ED448: return 57;
    default: return 0;
    }
}

size_t edhoc_crypto_ecdh_pub_len(int curve)
{
    switch (curve) {
    case EDHOC_COSE_CRV_P256:
    case EDHOC_COSE_CRV_X25519: return 32;
    case EDHOC_COSE_CRV_P384: return 48;
    case EDHOC_COSE_CRV_X448: return 56;
    default: return 0; /* Ed25519/Ed448 do no ECDH */
    }
}

size_t edhoc_crypto_ecdh_secret_len(int curve)
{
    return edhoc_crypto_ecdh_pub_len(curve);
}

size_t edhoc_crypto_sig_len(int curve)
{
    switch (curve) {
    case EDHOC_COSE_CRV_P256:
    case EDHOC_COSE_CRV_ED25519: return 64;
    case EDHOC_COSE_CRV_P384: return 96;
    case EDHOC_COSE_CRV_ED448: return 114;
    default: return 0;
    }
}

const char *edhoc_crypto_alg_name(int cose_alg)
{
    switch (cose_alg) {
    case EDHOC_COSE_SHA256: return "SHA-256";
    case EDHOC_COSE_SHA384: return "SHA-384";
    case EDHOC_COSE_SHAKE256: return "SHAKE256";
    case EDHOC_COSE_AES_CCM_16_64_128: return "AES-CCM-16-64-128";
    case EDHOC_COSE_AES_CCM_16_128_128: return "AES-CCM-16-128-128";
    case EDHOC_COSE_A128GCM: return "A128GCM";
    case EDHOC_COSE_A256GCM: return "A256GCM";
    case EDHOC_COSE_CHACHA20_POLY1305: return "ChaCha20/Poly1305";
    case EDHOC_COSE_ES256: return "ES256";
    case EDHOC_COSE_ES384: return "ES384";
    case EDHOC_COSE_EDDSA: return "EdDSA";
    default: return "unknown";
    }
}

const char *edhoc_crypto_curve_name(int curve)
{
    switch (curve) {
    case EDHOC_COSE_CRV_P256: return "P-256";
    case EDHOC_COSE_CRV_P384: return "P-384";
    case EDHOC_COSE_CRV_X25519: return "X25519";
    case EDHOC_COSE_CRV_X448: return "X448";
    case EDHOC_COSE_CRV_ED25519: return "Ed25519";
    case EDHOC_COSE_CRV_ED448: return "Ed448";
    default: return "unknown";
    }
}

bool edhoc_ct_equal(const void *a, const void *b, size_t len)
{
    if (len == 0)
        return true;
    return CRYPTO_memcmp(a, b, len) == 0;
}

void edhoc_wipe(void *p, size_t len)
{
    if (p != NULL && len > 0)
        OPENSSL_cleanse(p, len);
}

/* ------------------------------------------------------------------------
 * Random
 */

/* The default `random` entry: OpenSSL's DRBG (seeded from the OS); rng_ctx
 * is unused. Returns 0 or EDHOC_CRYPTO_ERR_RANDOM. */
static int openssl_random(void *rng_ctx, uint8_t *out, size_t len)
{
    (void)rng_ctx;
    while (len > 0) {
        int chunk = len > INT_MAX ? INT_MAX : (int)len;
        if (RAND_bytes(out, chunk) != 1)
            return EDHOC_CRYPTO_ERR_RANDOM;
        out += chunk;
        len -= (size_t)chunk;
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * Hash
 */

static const EVP_MD *sha2_md(int hash_alg)
{
    const struct backend_algs *a = algs_get();

    if (hash_alg == EDHOC_COSE_SHA256)
        return a->sha256;
    if (hash_alg == EDHOC_COSE_SHA384)
        return a->sha384;
    return NULL;
}

/* SHA-256 (32 bytes), SHA-384 (48) or SHAKE256 (64). Returns 0,
 * EDHOC_CRYPTO_ERR_UNSUPPORTED (other hash_alg), EDHOC_CRYPTO_ERR_BACKEND. */
static int openssl_hash(int hash_alg, const uint8_t *msg, size_t len, uint8_t *out)
{
    const struct backend_algs *a = algs_get();
    EVP_MD_CTX *ctx;
    int ok;

    if (hash_alg == EDHOC_COSE_SHA256 || hash_alg == EDHOC_COSE_SHA384) {
        const EVP_MD *md = sha2_md(hash_alg);
        if (md == NULL)
            return EDHOC_CRYPTO_ERR_BACKEND;
        return EVP_Digest(msg, len, out, NULL, md, NULL) == 1 ? 0
                                                             : EDHOC_CRYPTO_ERR_BACKEND;
    }
    if (hash_alg != EDHOC_COSE_SHAKE256)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    if (a->shake256 == NULL)
        return EDHOC_CRYPTO_ERR_BACKEND;
    ctx = EVP_MD_CTX_new();
    if (ctx == NULL)
        return EDHOC_CRYPTO_ERR_BACKEND;
    ok = EVP_DigestInit_ex2(ctx, a->shake256, NULL) == 1 &&
         EVP_DigestUpdate(ctx, msg, len) == 1 &&
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
static int kmac256(const uint8_t *key, size_t key_len, const uint8_t *msg,
                   size_t msg_len, uint8_t *out, size_t out_len)
{
    const struct backend_algs *a = algs_get();
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
    ok = EVP_MAC_init(ctx, key, key_len, params) == 1 &&
         EVP_MAC_update(ctx, msg, msg_len) == 1 &&
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
    const struct backend_algs *a = algs_get();
    const EVP_MAC_CTX *tmpl =
        hash_alg == EDHOC_COSE_SHA256 ? a->hmac_sha256 : a->hmac_sha384;

    return tmpl == NULL ? NULL : EVP_MAC_CTX_dup(tmpl);
}

/* A non-NULL pointer for zero-length inputs: OpenSSL treats a NULL key as
 * "keep the previous key" rather than "empty key". */
static const uint8_t empty_input[1];

/* EDHOC_Extract: HKDF-Extract (SHA-2) or KMAC256(salt, IKM, 512, "")
 * (SHAKE256). Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (other hash_alg),
 * EDHOC_CRYPTO_ERR_INVALID (SHAKE256 with a salt outside 4..512 bytes),
 * EDHOC_CRYPTO_ERR_BACKEND (prk wiped). */
static int openssl_hkdf_extract(int hash_alg, const uint8_t *salt, size_t salt_len,
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
static int openssl_hkdf_expand(int hash_alg, const uint8_t *prk, size_t prk_len,
                               const uint8_t *info, size_t info_len, uint8_t *out,
                               size_t out_len)
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
            EVP_MAC_update(ctx, info, info_len) != 1 ||
            EVP_MAC_update(ctx, &counter, 1) != 1 ||
            EVP_MAC_final(ctx, block, &written, sizeof block) != 1 ||
            written != hash_len) {
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

/* ------------------------------------------------------------------------
 * AEAD
 */

struct aead_params {
    const EVP_CIPHER *cipher;
    size_t nonce_len;
    size_t tag_len;
    bool ccm;
};

static int aead_lookup(int aead_alg, struct aead_params *p)
{
    const struct backend_algs *a = algs_get();

    switch (aead_alg) {
    case EDHOC_COSE_AES_CCM_16_64_128:
    case EDHOC_COSE_AES_CCM_16_128_128:
        p->cipher = a->aes128ccm;
        p->ccm = true;
        break;
    case EDHOC_COSE_A128GCM:
        p->cipher = a->aes128gcm;
        p->ccm = false;
        break;
    case EDHOC_COSE_A256GCM:
        p->cipher = a->aes256gcm;
        p->ccm = false;
        break;
    case EDHOC_COSE_CHACHA20_POLY1305:
        p->cipher = a->chacha20poly1305;
        p->ccm = false;
        break;
    default:
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    }
    p->nonce_len = edhoc_crypto_aead_nonce_len(aead_alg);
    p->tag_len = edhoc_crypto_aead_tag_len(aead_alg);
    return p->cipher == NULL ? EDHOC_CRYPTO_ERR_BACKEND : 0;
}

/* EVP lengths are int; keep room for the tag. */
#define AEAD_LEN_MAX ((size_t)INT_MAX - 64)

/* ---- Keyed AEAD contexts, kept between calls ----
 * Setting up an EVP_CIPHER_CTX (allocation, provider parameter plumbing,
 * key schedule) costs more than sealing a 100-byte CoAP message, and
 * OSCORE seals every message of a context with the same two keys. So
 * keyed contexts are kept per thread, found by algorithm, direction and
 * key; a call with a known key only sets the nonce. A responder serves
 * many peers in turn (two keys each), so the cache is a set-associative
 * table: a seeded hash of the key picks a set of AEAD_CACHE_WAYS entries
 * (the seed is random, so the set says nothing about the key), and the
 * least recently used entry of the set is freed (OpenSSL wipes its key
 * schedule) when room is needed. Callers drop a key they are done with
 * through aead_forget. The copy of the key used to find a context is
 * wiped with it. */

#define AEAD_CACHE_WAYS 4
#define AEAD_CACHE_SETS 32
#define AEAD_CACHE_SLOTS (AEAD_CACHE_WAYS * AEAD_CACHE_SETS)

struct aead_slot {
    EVP_CIPHER_CTX *ctx; /* NULL: free slot */
    int alg;
    int enc;
    size_t key_len;
    uint64_t last_use;
    uint8_t key[EDHOC_CRYPTO_MAX_KEY];
};

static _Thread_local struct aead_slot aead_cache[AEAD_CACHE_SLOTS];
static _Thread_local uint64_t aead_clock;

static uint64_t aead_cache_seed;
static pthread_once_t aead_seed_once = PTHREAD_ONCE_INIT;

static void aead_seed_init(void)
{
    uint64_t seed = 0;
    if (RAND_bytes((unsigned char *)&seed, sizeof seed) != 1)
        seed = (uint64_t)(uintptr_t)&seed ^ 0x9e3779b97f4a7c15u;
    aead_cache_seed = seed;
}

/* The first slot of the set for this key (and algorithm and direction). */
static size_t aead_set_of(int alg, int enc, const uint8_t *key, size_t key_len)
{
    pthread_once(&aead_seed_once, aead_seed_init);
    uint64_t h = aead_cache_seed ^ ((uint64_t)(uint32_t)alg << 1) ^ (uint64_t)enc;
    for (size_t i = 0; i < key_len; i++)
        h = (h ^ key[i]) * 0x100000001b3u;
    h ^= h >> 29;
    return (size_t)(h % AEAD_CACHE_SETS) * AEAD_CACHE_WAYS;
}

static void aead_slot_drop(struct aead_slot *slot)
{
    EVP_CIPHER_CTX_free(slot->ctx);
    OPENSSL_cleanse(slot, sizeof *slot);
}

/* A thread's contexts are freed when it ends (the process's main thread
 * keeps its own until exit). */
static pthread_key_t aead_cache_key;
static pthread_once_t aead_cache_once = PTHREAD_ONCE_INIT;

static void aead_cache_thread_exit(void *unused)
{
    (void)unused;
    for (size_t i = 0; i < AEAD_CACHE_SLOTS; i++)
        if (aead_cache[i].ctx != NULL)
            aead_slot_drop(&aead_cache[i]);
}

static void aead_cache_key_create(void)
{
    if (pthread_key_create(&aead_cache_key, aead_cache_thread_exit) != 0)
        aead_cache_key = (pthread_key_t)-1;
}

/* Arrange for aead_cache_thread_exit in this thread. */
static void aead_cache_register_thread(void)
{
    static _Thread_local bool registered;
    if (registered)
        return;
    registered = true;
    pthread_once(&aead_cache_once, aead_cache_key_create);
    if (aead_cache_key != (pthread_key_t)-1)
        pthread_setspecific(aead_cache_key, &registered);
}

static void openssl_aead_forget(const uint8_t *key, size_t key_len)
{
    if (key == NULL || key_len == 0 || key_len > EDHOC_CRYPTO_MAX_KEY)
        return;
    /* Whatever the algorithm and direction it was used with. */
    for (size_t i = 0; i < AEAD_CACHE_SLOTS; i++) {
        struct aead_slot *slot = &aead_cache[i];
        if (slot->ctx != NULL && slot->key_len == key_len &&
            CRYPTO_memcmp(slot->key, key, key_len) == 0)
            aead_slot_drop(slot);
    }
}

/* A context for one operation with key and nonce set (and for CCM the tag
 * length, and when decrypting the expected tag). NULL on failure. The
 * caller drops *slot_out when the operation fails midway. */
static EVP_CIPHER_CTX *aead_ctx_get(int aead_alg, const struct aead_params *p, int enc,
                                    const uint8_t *key, const uint8_t *nonce,
                                    const uint8_t *tag, struct aead_slot **slot_out)
{
    size_t key_len = edhoc_crypto_aead_key_len(aead_alg);
    if (key_len == 0 || key_len > EDHOC_CRYPTO_MAX_KEY)
        return NULL;
    size_t first = aead_set_of(aead_alg, enc, key, key_len);
    struct aead_slot *victim = &aead_cache[first];
    for (size_t i = first; i < first + AEAD_CACHE_WAYS; i++) {
        struct aead_slot *slot = &aead_cache[i];
        if (slot->ctx != NULL && slot->alg == aead_alg && slot->enc == enc &&
            slot->key_len == key_len && CRYPTO_memcmp(slot->key, key, key_len) == 0) {
            *slot_out = slot;
            if (EVP_CipherInit_ex2(slot->ctx, NULL, NULL, nonce, enc, NULL) != 1 ||
                (p->ccm && !enc &&
                 EVP_CIPHER_CTX_ctrl(slot->ctx, EVP_CTRL_AEAD_SET_TAG, (int)p->tag_len,
                                     (void *)tag) != 1)) {
                aead_slot_drop(slot);
                return NULL;
            }
            slot->last_use = ++aead_clock;
            return slot->ctx;
        }
        if (victim->ctx != NULL && (slot->ctx == NULL || slot->last_use < victim->last_use))
            victim = slot;
    }
    if (victim->ctx != NULL)
        aead_slot_drop(victim);
    aead_cache_register_thread();
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL)
        return NULL;
    /* CCM wants the nonce and tag lengths (and when decrypting the tag)
     * before the key. */
    if (EVP_CipherInit_ex2(ctx, p->cipher, NULL, NULL, enc, NULL) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, (int)p->nonce_len, NULL) != 1 ||
        (p->ccm && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, (int)p->tag_len,
                                       enc ? NULL : (void *)tag) != 1) ||
        EVP_CipherInit_ex2(ctx, NULL, key, nonce, enc, NULL) != 1) {
        EVP_CIPHER_CTX_free(ctx);
        return NULL;
    }
    victim->ctx = ctx;
    victim->alg = aead_alg;
    victim->enc = enc;
    victim->key_len = key_len;
    memcpy(victim->key, key, key_len);
    victim->last_use = ++aead_clock;
    *slot_out = victim;
    return ctx;
}

/* The rest of the setup: for CCM the total length first, then the AAD. */
static bool aead_feed_aad(EVP_CIPHER_CTX *ctx, const struct aead_params *p, const uint8_t *aad,
                          size_t aad_len, size_t msg_len)
{
    int outl;
    if (p->ccm && EVP_CipherUpdate(ctx, NULL, &outl, NULL, (int)msg_len) != 1)
        return false;
    if (aad_len > 0 && EVP_CipherUpdate(ctx, NULL, &outl, aad, (int)aad_len) != 1)
        return false;
    return true;
}

/*
 * ct and pt may be the same buffer (in-place); no other overlap.
 * Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (unknown aead_alg),
 * EDHOC_CRYPTO_ERR_INVALID (length beyond INT_MAX), EDHOC_CRYPTO_ERR_BACKEND.
 */
static int openssl_aead_encrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                                const uint8_t *aad, size_t aad_len, const uint8_t *pt,
                                size_t pt_len, uint8_t *ct)
{
    struct aead_params p;
    struct aead_slot *slot = NULL;
    int outl = 0, finl = 0;
    int ret = aead_lookup(aead_alg, &p);
    bool ok;

    if (ret != 0)
        return ret;
    if (pt_len > AEAD_LEN_MAX || aad_len > AEAD_LEN_MAX)
        return EDHOC_CRYPTO_ERR_INVALID;
    EVP_CIPHER_CTX *ctx = aead_ctx_get(aead_alg, &p, 1, key, nonce, NULL, &slot);
    if (ctx == NULL)
        return EDHOC_CRYPTO_ERR_BACKEND;
    ok = aead_feed_aad(ctx, &p, aad, aad_len, pt_len);
    /* CCM must see the (possibly empty) payload update to produce its tag,
     * and OpenSSL reads a NULL input as "finalise" there: pass real
     * pointers even for an empty plaintext. */
    if (ok && (pt_len > 0 || p.ccm))
        ok = EVP_CipherUpdate(ctx, pt_len > 0 ? ct : (uint8_t *)empty_input, &outl,
                              pt_len > 0 ? pt : empty_input, (int)pt_len) == 1 &&
             (size_t)outl == pt_len;
    if (ok && !p.ccm) {
        uint8_t none[EDHOC_CRYPTO_MAX_TAG]; /* GCM/ChaCha20 finalise writes nothing */
        ok = EVP_CipherFinal_ex(ctx, none, &finl) == 1 && finl == 0;
    }
    if (ok)
        ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, (int)p.tag_len,
                                 ct + pt_len) == 1;
    if (!ok) {
        aead_slot_drop(slot); /* its state is unknown */
        edhoc_wipe(ct, pt_len + p.tag_len);
        return EDHOC_CRYPTO_ERR_BACKEND;
    }
    return 0;
}

/*
 * Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (unknown aead_alg),
 * EDHOC_CRYPTO_ERR_INVALID (ct_len shorter than the tag, or beyond INT_MAX),
 * EDHOC_CRYPTO_ERR_AUTH (tag mismatch; pt wiped), EDHOC_CRYPTO_ERR_BACKEND.
 */
static int openssl_aead_decrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                                const uint8_t *aad, size_t aad_len, const uint8_t *ct,
                                size_t ct_len, uint8_t *pt)
{
    struct aead_params p;
    struct aead_slot *slot = NULL;
    uint8_t tag[EDHOC_CRYPTO_MAX_TAG];
    size_t pt_len;
    int outl = 0, finl = 0;
    int ret = aead_lookup(aead_alg, &p);

    if (ret != 0)
        return ret;
    if (ct_len < p.tag_len || ct_len > AEAD_LEN_MAX || aad_len > AEAD_LEN_MAX)
        return EDHOC_CRYPTO_ERR_INVALID;
    pt_len = ct_len - p.tag_len;
    /* The ctrl interface wants a writable tag buffer. */
    memcpy(tag, ct + pt_len, p.tag_len);
    EVP_CIPHER_CTX *ctx = aead_ctx_get(aead_alg, &p, 0, key, nonce, tag, &slot);
    if (ctx == NULL) {
        ret = EDHOC_CRYPTO_ERR_BACKEND;
    } else if (!aead_feed_aad(ctx, &p, aad, aad_len, pt_len)) {
        ret = EDHOC_CRYPTO_ERR_BACKEND;
    } else if (p.ccm) {
        /* CCM verifies inside the (single) payload update. */
        if (EVP_CipherUpdate(ctx, pt_len > 0 ? pt : (uint8_t *)empty_input, &outl,
                             pt_len > 0 ? ct : empty_input, (int)pt_len) != 1)
            ret = EDHOC_CRYPTO_ERR_AUTH;
    } else {
        if (pt_len > 0 && EVP_CipherUpdate(ctx, pt, &outl, ct, (int)pt_len) != 1)
            ret = EDHOC_CRYPTO_ERR_BACKEND;
        else if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, (int)p.tag_len, tag) != 1)
            ret = EDHOC_CRYPTO_ERR_BACKEND;
        else if (EVP_CipherFinal_ex(ctx, tag, &finl) != 1) /* writes nothing */
            ret = EDHOC_CRYPTO_ERR_AUTH;
    }
    /* A context that failed midway (or saw a forgery) is not kept for the
     * next message: a fresh one costs little next to a rare failure. */
    if (ret != 0 && slot != NULL && slot->ctx == ctx)
        aead_slot_drop(slot);
    if (ret != 0)
        edhoc_wipe(pt, pt_len);
    return ret;
}

/* ------------------------------------------------------------------------
 * Key generation (through the table's random entry)
 */

/* Group orders n, big-endian: private scalars must lie in [1, n-1]. */
static const uint8_t p256_order[32] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17,
    0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};
static const uint8_t p384_order[48] = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xc7, 0x63, 0x4d, 0x81, 0xf4, 0x37, 0x2d, 0xdf, 0x58, 0x1a, 0x0d, 0xb2,
    0x48, 0xb0, 0xa7, 0x7a, 0xec, 0xec, 0x19, 0x6a, 0xcc, 0xc5, 0x29, 0x73,
};

/* Constant-time check 0 < scalar < order (both big-endian, len bytes). */
static bool ec2_scalar_in_range(const uint8_t *scalar, const uint8_t *order, size_t len)
{
    unsigned nonzero = 0, lt = 0, gt = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned s = scalar[i], o = order[i];
        unsigned undecided = (lt | gt) ^ 1u;
        lt |= undecided & ((s - o) >> 8 & 1u);  /* s < o */
        gt |= undecided & ((o - s) >> 8 & 1u);  /* s > o */
        nonzero |= s;
    }
    return nonzero != 0 && lt == 1;
}

/* A random scalar falls outside [1, n-1] with probability < 2^-32 for these
 * curves; a source that keeps producing such values is broken. */
#define KEYGEN_ATTEMPTS 64

int edhoc_crypto_keygen(const struct edhoc_crypto_ops *ops, int curve, bool for_ecdh,
                        uint8_t *priv, uint8_t *pub, size_t *pub_len)
{
    size_t priv_len = edhoc_crypto_priv_len(curve);
    const uint8_t *order = NULL;
    int ret;

    if (priv_len == 0)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    if (for_ecdh && edhoc_crypto_ecdh_pub_len(curve) == 0)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED; /* Ed25519/Ed448 */
    if (curve == EDHOC_COSE_CRV_P256)
        order = p256_order;
    else if (curve == EDHOC_COSE_CRV_P384)
        order = p384_order;
    for (int attempt = 0;; attempt++) {
        if (attempt == KEYGEN_ATTEMPTS) {
            ret = EDHOC_CRYPTO_ERR_RANDOM;
            goto fail;
        }
        ret = ops->random(ops->rng_ctx, priv, priv_len);
        if (ret != 0) {
            ret = EDHOC_CRYPTO_ERR_RANDOM;
            goto fail;
        }
        if (order == NULL || ec2_scalar_in_range(priv, order, priv_len))
            break;
    }
    ret = ops->public_key(curve, for_ecdh, priv, pub, pub_len);
    if (ret == 0)
        return 0;
fail:
    edhoc_wipe(priv, priv_len);
    return ret;
}

/* The table's keygen: edhoc_crypto_keygen() with this backend's own table
 * (so with the system random source). */
static int openssl_keygen(int curve, bool for_ecdh, uint8_t *priv, uint8_t *pub,
                          size_t *pub_len)
{
    return edhoc_crypto_keygen(edhoc_crypto_openssl(), curve, for_ecdh, priv, pub,
                               pub_len);
}

/* ------------------------------------------------------------------------
 * P-256 / P-384 (EC2)
 */

struct ec2_curve {
    const EC_GROUP *group;
    const uint8_t *order;
    size_t field_len; /* = scalar length for both curves */
    const char *group_name;
    EVP_PKEY *params; /* template for public keys */
    int hash_alg;      /* ECDSA hash */
};

static int ec2_lookup(int curve, struct ec2_curve *c)
{
    const struct backend_algs *a = algs_get();

    if (curve == EDHOC_COSE_CRV_P256) {
        c->group = a->p256;
        c->order = p256_order;
        c->field_len = 32;
        c->group_name = "P-256";
        c->params = a->p256_params;
        c->hash_alg = EDHOC_COSE_SHA256;
    } else if (curve == EDHOC_COSE_CRV_P384) {
        c->group = a->p384;
        c->order = p384_order;
        c->field_len = 48;
        c->group_name = "P-384";
        c->params = a->p384_params;
        c->hash_alg = EDHOC_COSE_SHA384;
    } else {
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    }
    return c->group == NULL || c->params == NULL ? EDHOC_CRYPTO_ERR_BACKEND : 0;
}

static bool is_ec2(int curve)
{
    return curve == EDHOC_COSE_CRV_P256 || curve == EDHOC_COSE_CRV_P384;
}

/* The private scalar as a BIGNUM marked for constant-time arithmetic;
 * NULL if out of [1, n-1] (*ret INVALID) or on allocation failure. */
static BIGNUM *ec2_priv_bn(const struct ec2_curve *c, const uint8_t *priv, int *ret)
{
    BIGNUM *d;

    if (!ec2_scalar_in_range(priv, c->order, c->field_len)) {
        *ret = EDHOC_CRYPTO_ERR_INVALID;
        return NULL;
    }
    d = BN_secure_new();
    if (d == NULL || BN_bin2bn(priv, (int)c->field_len, d) == NULL) {
        BN_clear_free(d);
        *ret = EDHOC_CRYPTO_ERR_BACKEND;
        return NULL;
    }
    BN_set_flags(d, BN_FLG_CONSTTIME);
    return d;
}

/* Decode an EC2 public key: x-only (a point with that x; which of the two
 * does not matter for ECDH), 0x02/0x03||x, or 0x04||x||y. OpenSSL's
 * decoder rejects coordinates >= p and points off the curve. */
static int ec2_point_decode(const struct ec2_curve *c, const uint8_t *in, size_t len,
                            bool allow_x_only, EC_POINT *point, BN_CTX *bn)
{
    uint8_t buf[1 + 48];
    size_t f = c->field_len;

    if (allow_x_only && len == f) {
        buf[0] = 0x02;
        memcpy(buf + 1, in, f);
        in = buf;
        len = f + 1;
    } else if (len == f + 1) {
        if (in[0] != 0x02 && in[0] != 0x03)
            return EDHOC_CRYPTO_ERR_INVALID;
    } else if (len == 2 * f + 1) {
        if (in[0] != 0x04)
            return EDHOC_CRYPTO_ERR_INVALID;
    } else {
        return EDHOC_CRYPTO_ERR_INVALID;
    }
    if (EC_POINT_oct2point(c->group, point, in, len, bn) != 1 ||
        EC_POINT_is_on_curve(c->group, point, bn) != 1 ||
        EC_POINT_is_at_infinity(c->group, point)) {
        return EDHOC_CRYPTO_ERR_INVALID;
    }
    return 0;
}

/* out = x (x_only) or 0x04||x||y of point. */
static int ec2_point_encode(const struct ec2_curve *c, const EC_POINT *point, bool x_only,
                            uint8_t *out, size_t *out_len, BN_CTX *bn)
{
    uint8_t buf[1 + 2 * 48];
    size_t f = c->field_len;

    if (EC_POINT_point2oct(c->group, point, POINT_CONVERSION_UNCOMPRESSED, buf,
                           sizeof buf, bn) != 2 * f + 1)
        return EDHOC_CRYPTO_ERR_BACKEND;
    if (x_only) {
        memcpy(out, buf + 1, f);
        *out_len = f;
    } else {
        memcpy(out, buf, 2 * f + 1);
        *out_len = 2 * f + 1;
    }
    return 0;
}

static int ec2_public_key(const struct ec2_curve *c, bool x_only, const uint8_t *priv,
                          uint8_t *pub, size_t *pub_len)
{
    int ret = EDHOC_CRYPTO_ERR_BACKEND;
    BN_CTX *bn = BN_CTX_secure_new();
    EC_POINT *q = EC_POINT_new(c->group);
    BIGNUM *d = NULL;

    if (bn == NULL || q == NULL)
        goto out;
    d = ec2_priv_bn(c, priv, &ret);
    if (d == NULL)
        goto out;
    if (EC_POINT_mul(c->group, q, d, NULL, NULL, bn) != 1) {
        ret = EDHOC_CRYPTO_ERR_BACKEND;
        goto out;
    }
    ret = ec2_point_encode(c, q, x_only, pub, pub_len, bn);
out:
    BN_clear_free(d);
    EC_POINT_free(q);
    BN_CTX_free(bn);
    return ret;
}

static int ec2_ecdh(const struct ec2_curve *c, const uint8_t *priv, const uint8_t *peer,
                    size_t peer_len, uint8_t *shared)
{
    int ret = EDHOC_CRYPTO_ERR_BACKEND;
    BN_CTX *bn = BN_CTX_secure_new();
    EC_POINT *q = EC_POINT_new(c->group);
    EC_POINT *s = EC_POINT_new(c->group);
    BIGNUM *d = NULL, *x = NULL;

    if (bn == NULL || q == NULL || s == NULL)
        goto out;
    ret = ec2_point_decode(c, peer, peer_len, true, q, bn);
    if (ret != 0)
        goto out;
    d = ec2_priv_bn(c, priv, &ret);
    if (d == NULL)
        goto out;
    ret = EDHOC_CRYPTO_ERR_BACKEND;
    x = BN_secure_new();
    if (x == NULL || EC_POINT_mul(c->group, s, NULL, q, d, bn) != 1)
        goto out;
    /* Cofactor 1 and a valid peer point: d*Q is never the point at
     * infinity, but refuse it rather than output zeros. */
    if (EC_POINT_is_at_infinity(c->group, s)) {
        ret = EDHOC_CRYPTO_ERR_INVALID;
        goto out;
    }
    if (EC_POINT_get_affine_coordinates(c->group, s, x, NULL, bn) != 1 ||
        BN_bn2binpad(x, shared, (int)c->field_len) != (int)c->field_len)
        goto out;
    ret = 0;
out:
    if (ret != 0)
        edhoc_wipe(shared, c->field_len);
    BN_clear_free(x);
    BN_clear_free(d);
    EC_POINT_clear_free(s);
    EC_POINT_free(q);
    BN_CTX_free(bn);
    return ret;
}

/* Copy a big-endian integer into the host-order buffer OSSL_PARAM BIGNUM
 * parameters use. */
static void to_native_endian(uint8_t *dst, const uint8_t *src, size_t len)
{
    const uint16_t probe = 1;

    if (*(const uint8_t *)&probe == 1) {
        for (size_t i = 0; i < len; i++)
            dst[i] = src[len - 1 - i];
    } else {
        memcpy(dst, src, len);
    }
}

/* An EVP_PKEY holding the private key, for ECDSA signing. (OpenSSL 3.0
 * cannot set a private key on a dup of the parameter template, so this
 * import builds the group again.) */
static int ec2_priv_pkey(const struct ec2_curve *c, const uint8_t *priv, EVP_PKEY **pkey)
{
    uint8_t native[48];
    OSSL_PARAM params[3];
    EVP_PKEY_CTX *ctx;
    int ret = EDHOC_CRYPTO_ERR_BACKEND;

    if (!ec2_scalar_in_range(priv, c->order, c->field_len))
        return EDHOC_CRYPTO_ERR_INVALID;
    to_native_endian(native, priv, c->field_len);
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME,
                                                 (char *)c->group_name, 0);
    params[1] = OSSL_PARAM_construct_BN(OSSL_PKEY_PARAM_PRIV_KEY, native, c->field_len);
    params[2] = OSSL_PARAM_construct_end();
    *pkey = NULL;
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (ctx != NULL && EVP_PKEY_fromdata_init(ctx) == 1 &&
        EVP_PKEY_fromdata(ctx, pkey, EVP_PKEY_KEYPAIR, params) == 1)
        ret = 0;
    EVP_PKEY_CTX_free(ctx);
    edhoc_wipe(native, sizeof native);
    return ret;
}

/* An EVP_PKEY holding an encoded public point (0x04||x||y or 0x02/0x03||x).
 * Returns EDHOC_CRYPTO_ERR_INVALID for a point OpenSSL cannot decode (off
 * the curve, coordinate >= p). */
static int ec2_pub_pkey(const struct ec2_curve *c, const uint8_t *pub, size_t pub_len,
                        EVP_PKEY **pkey)
{
    *pkey = EVP_PKEY_dup(c->params);
    if (*pkey == NULL)
        return EDHOC_CRYPTO_ERR_BACKEND;
    if (EVP_PKEY_set_octet_string_param(*pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY,
                                        (unsigned char *)pub, pub_len) != 1) {
        EVP_PKEY_free(*pkey);
        *pkey = NULL;
        return EDHOC_CRYPTO_ERR_INVALID;
    }
    return 0;
}

/* DER SEQUENCE { INTEGER r, INTEGER s } from COSE r||s (each f bytes). */
static size_t der_put_int(uint8_t *out, const uint8_t *v, size_t f)
{
    size_t skip = 0, n = 0;

    while (skip < f - 1 && v[skip] == 0)
        skip++;
    out[n++] = 0x02;
    out[n++] = (uint8_t)(f - skip + (v[skip] & 0x80 ? 1 : 0));
    if (v[skip] & 0x80)
        out[n++] = 0x00;
    memcpy(out + n, v + skip, f - skip);
    return n + f - skip;
}

static size_t ecdsa_sig_to_der(const uint8_t *rs, size_t f, uint8_t *der)
{
    size_t n = 2;

    n += der_put_int(der + n, rs, f);
    n += der_put_int(der + n, rs + f, f);
    der[0] = 0x30;
    der[1] = (uint8_t)(n - 2); /* <= 2 * (3 + 48) < 128: short form */
    return n;
}

/* One DER INTEGER (non-negative, at most f significant bytes) into a
 * big-endian field of f bytes. */
static bool der_get_int(const uint8_t **p, const uint8_t *end, uint8_t *out, size_t f)
{
    const uint8_t *q = *p;
    size_t len;

    if (end - q < 2 || q[0] != 0x02 || q[1] >= 0x80)
        return false;
    len = q[1];
    q += 2;
    if ((size_t)(end - q) < len || len == 0 || (q[0] & 0x80))
        return false;
    while (len > 0 && q[0] == 0) {
        q++;
        len--;
    }
    if (len > f)
        return false;
    memset(out, 0, f - len);
    memcpy(out + f - len, q, len);
    *p = q + len;
    return true;
}

static bool ecdsa_sig_from_der(const uint8_t *der, size_t der_len, size_t f, uint8_t *rs)
{
    const uint8_t *p = der, *end = der + der_len;

    if (der_len < 2 || der[0] != 0x30 || der[1] != der_len - 2)
        return false;
    p += 2;
    return der_get_int(&p, end, rs, f) && der_get_int(&p, end, rs + f, f) && p == end;
}

#define ECDSA_DER_MAX (2 + 2 * (3 + 48))

static int ecdsa_sign(const struct ec2_curve *c, const uint8_t *priv, const uint8_t *msg,
                      size_t msg_len, uint8_t *sig)
{
    uint8_t digest[48];
    uint8_t der[ECDSA_DER_MAX + 8];
    size_t der_len = sizeof der;
    size_t dlen = edhoc_crypto_hash_len(c->hash_alg);
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    int ret;

    ret = openssl_hash(c->hash_alg, msg, msg_len, digest);
    if (ret != 0)
        return ret;
    ret = ec2_priv_pkey(c, priv, &pkey);
    if (ret != 0)
        return ret;
    ret = EDHOC_CRYPTO_ERR_BACKEND;
    ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    if (ctx != NULL && EVP_PKEY_sign_init(ctx) == 1 &&
        EVP_PKEY_sign(ctx, der, &der_len, digest, dlen) == 1 &&
        ecdsa_sig_from_der(der, der_len, c->field_len, sig))
        ret = 0;
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pkey);
    return ret;
}

static int ecdsa_verify(const struct ec2_curve *c, const uint8_t *pub, size_t pub_len,
                        const uint8_t *msg, size_t msg_len, const uint8_t *sig)
{
    uint8_t digest[48];
    uint8_t der[ECDSA_DER_MAX];
    size_t der_len, dlen = edhoc_crypto_hash_len(c->hash_alg);
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    int ret, v;

    /* Signature keys are full points (the sign of y matters to ECDSA). */
    if (!((pub_len == 2 * c->field_len + 1 && pub[0] == 0x04) ||
          (pub_len == c->field_len + 1 && (pub[0] == 0x02 || pub[0] == 0x03))))
        return EDHOC_CRYPTO_ERR_INVALID;
    ret = ec2_pub_pkey(c, pub, pub_len, &pkey);
    if (ret != 0)
        return ret;
    ret = openssl_hash(c->hash_alg, msg, msg_len, digest);
    if (ret != 0)
        goto out;
    der_len = ecdsa_sig_to_der(sig, c->field_len, der);
    ret = EDHOC_CRYPTO_ERR_BACKEND;
    ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    if (ctx == NULL || EVP_PKEY_verify_init(ctx) != 1)
        goto out;
    /* 0 = bad signature; < 0 also covers r or s out of range. */
    v = EVP_PKEY_verify(ctx, der, der_len, digest, dlen);
    ret = v == 1 ? 0 : EDHOC_CRYPTO_ERR_AUTH;
out:
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pkey);
    return ret;
}

/* ------------------------------------------------------------------------
 * X25519 / X448 / Ed25519 / Ed448 (raw keys)
 */

static const char *okp_name(int curve)
{
    switch (curve) {
    case EDHOC_COSE_CRV_X25519: return "X25519";
    case EDHOC_COSE_CRV_X448: return "X448";
    case EDHOC_COSE_CRV_ED25519: return "ED25519";
    case EDHOC_COSE_CRV_ED448: return "ED448";
    default: return NULL;
    }
}

static size_t okp_pub_len(int curve)
{
    return curve == EDHOC_COSE_CRV_ED448 ? 57 : edhoc_crypto_priv_len(curve);
}

static int okp_public_key(int curve, const uint8_t *priv, uint8_t *pub, size_t *pub_len)
{
    size_t len = okp_pub_len(curve);
    EVP_PKEY *pkey = EVP_PKEY_new_raw_private_key_ex(NULL, okp_name(curve), NULL, priv,
                                                     edhoc_crypto_priv_len(curve));
    int ret = EDHOC_CRYPTO_ERR_BACKEND;

    if (pkey != NULL && EVP_PKEY_get_raw_public_key(pkey, pub, &len) == 1 &&
        len == okp_pub_len(curve)) {
        *pub_len = len;
        ret = 0;
    }
    EVP_PKEY_free(pkey); /* cleanses the private key */
    return ret;
}

/* The own key of an X25519/X448 derivation. Importing a bare private key
 * makes OpenSSL compute its public half, a scalar multiplication as costly
 * as the ECDH itself; the derivation reads only the private half, so a
 * placeholder public half is imported with it. The object never leaves
 * okp_ecdh(). */
static EVP_PKEY *xdh_priv_pkey(int curve, const uint8_t *priv)
{
    uint8_t placeholder[56] = {0};
    size_t len = edhoc_crypto_priv_len(curve);
    OSSL_PARAM params[3];
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, okp_name(curve), NULL);
    EVP_PKEY *pkey = NULL;

    params[0] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PRIV_KEY, (void *)priv, len);
    params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, placeholder, len);
    params[2] = OSSL_PARAM_construct_end();
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_KEYPAIR, params) != 1)
        pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}

static int okp_ecdh(int curve, const uint8_t *priv, const uint8_t *peer, size_t peer_len,
                    uint8_t *shared)
{
    size_t len = edhoc_crypto_ecdh_secret_len(curve);
    EVP_PKEY *mine = NULL, *theirs = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    int ret = EDHOC_CRYPTO_ERR_BACKEND;

    if (peer_len != edhoc_crypto_ecdh_pub_len(curve))
        return EDHOC_CRYPTO_ERR_INVALID;
    mine = xdh_priv_pkey(curve, priv);
    theirs = EVP_PKEY_new_raw_public_key_ex(NULL, okp_name(curve), NULL, peer, peer_len);
    if (mine == NULL || theirs == NULL)
        goto out;
    ctx = EVP_PKEY_CTX_new_from_pkey(NULL, mine, NULL);
    if (ctx == NULL || EVP_PKEY_derive_init(ctx) != 1 ||
        EVP_PKEY_derive_set_peer_ex(ctx, theirs, 0) != 1)
        goto out;
    /* OpenSSL refuses an all-zero result (a small-order peer point,
     * RFC 7748 Section 6): that is the peer's fault, not ours. */
    if (EVP_PKEY_derive(ctx, shared, &len) != 1 || len != edhoc_crypto_ecdh_secret_len(curve))
        ret = EDHOC_CRYPTO_ERR_INVALID;
    else
        ret = 0;
out:
    if (ret != 0)
        edhoc_wipe(shared, edhoc_crypto_ecdh_secret_len(curve));
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(theirs);
    EVP_PKEY_free(mine);
    return ret;
}

static int eddsa_sign(int curve, const uint8_t *priv, const uint8_t *msg, size_t msg_len,
                      uint8_t *sig)
{
    size_t sig_len = edhoc_crypto_sig_len(curve);
    EVP_PKEY *pkey = EVP_PKEY_new_raw_private_key_ex(NULL, okp_name(curve), NULL, priv,
                                                     edhoc_crypto_priv_len(curve));
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ret = EDHOC_CRYPTO_ERR_BACKEND;

    /* Pure EdDSA: no digest, the message is passed whole. */
    if (pkey != NULL && md != NULL &&
        EVP_DigestSignInit_ex(md, NULL, NULL, NULL, NULL, pkey, NULL) == 1 &&
        EVP_DigestSign(md, sig, &sig_len, msg, msg_len) == 1 &&
        sig_len == edhoc_crypto_sig_len(curve))
        ret = 0;
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pkey);
    return ret;
}

static int eddsa_verify(int curve, const uint8_t *pub, size_t pub_len, const uint8_t *msg,
                        size_t msg_len, const uint8_t *sig, size_t sig_len)
{
    EVP_PKEY *pkey;
    EVP_MD_CTX *md;
    int ret = EDHOC_CRYPTO_ERR_BACKEND;

    if (pub_len != okp_pub_len(curve))
        return EDHOC_CRYPTO_ERR_INVALID;
    /* OpenSSL 3.0 accepts small-order and non-canonical Ed25519 keys that
     * libsodium refuses: both backends apply the stricter rule. */
    if (curve == EDHOC_COSE_CRV_ED25519) {
        ret = edhoc_ed25519_strict_reject(pub, sig);
        if (ret != 0)
            return ret;
    }
    pkey = EVP_PKEY_new_raw_public_key_ex(NULL, okp_name(curve), NULL, pub, pub_len);
    if (pkey == NULL)
        return EDHOC_CRYPTO_ERR_INVALID;
    md = EVP_MD_CTX_new();
    if (md != NULL && EVP_DigestVerifyInit_ex(md, NULL, NULL, NULL, NULL, pkey, NULL) == 1)
        ret = EVP_DigestVerify(md, sig, sig_len, msg, msg_len) == 1 ? 0
                                                                  : EDHOC_CRYPTO_ERR_AUTH;
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pkey);
    return ret;
}

/* ------------------------------------------------------------------------
 * Table entries for keys, ECDH and signatures
 */

/*
 * X25519/X448 always give the raw ECDH key (for_ecdh is ignored); Ed25519/
 * Ed448 give the raw signature key and refuse for_ecdh; P-256/P-384 give
 * the x-coordinate when for_ecdh, else 0x04||x||y. pub must hold
 * EDHOC_CRYPTO_MAX_PUB bytes.
 * Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (unknown curve, or an Ed curve
 * with for_ecdh), EDHOC_CRYPTO_ERR_INVALID (EC2 scalar 0 or >= n),
 * EDHOC_CRYPTO_ERR_BACKEND.
 */
static int openssl_public_key(int curve, bool for_ecdh, const uint8_t *priv,
                              uint8_t *pub, size_t *pub_len)
{
    struct ec2_curve c;
    int ret;

    if (is_ec2(curve)) {
        ret = ec2_lookup(curve, &c);
        return ret != 0 ? ret : ec2_public_key(&c, for_ecdh, priv, pub, pub_len);
    }
    if (okp_name(curve) == NULL)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    if (for_ecdh && (curve == EDHOC_COSE_CRV_ED25519 || curve == EDHOC_COSE_CRV_ED448))
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    return okp_public_key(curve, priv, pub, pub_len);
}

/*
 * Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (not an ECDH curve),
 * EDHOC_CRYPTO_ERR_INVALID (peer key of a wrong length or encoding, not on
 * the curve, or giving an all-zero X25519/X448 secret; EC2 scalar out of
 * range), EDHOC_CRYPTO_ERR_BACKEND. shared is wiped on failure.
 */
static int openssl_ecdh(int curve, const uint8_t *priv, const uint8_t *peer_pub,
                        size_t peer_pub_len, uint8_t *shared)
{
    struct ec2_curve c;
    int ret;

    if (is_ec2(curve)) {
        ret = ec2_lookup(curve, &c);
        return ret != 0 ? ret : ec2_ecdh(&c, priv, peer_pub, peer_pub_len, shared);
    }
    if (curve != EDHOC_COSE_CRV_X25519 && curve != EDHOC_COSE_CRV_X448)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    return okp_ecdh(curve, priv, peer_pub, peer_pub_len, shared);
}

/*
 * Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (not a signature curve),
 * EDHOC_CRYPTO_ERR_INVALID (EC2 scalar out of range), EDHOC_CRYPTO_ERR_BACKEND.
 */
static int openssl_sign(int curve, const uint8_t *priv, const uint8_t *msg,
                        size_t msg_len, uint8_t *sig)
{
    struct ec2_curve c;
    int ret;

    if (is_ec2(curve)) {
        ret = ec2_lookup(curve, &c);
        return ret != 0 ? ret : ecdsa_sign(&c, priv, msg, msg_len, sig);
    }
    if (curve != EDHOC_COSE_CRV_ED25519 && curve != EDHOC_COSE_CRV_ED448)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    return eddsa_sign(curve, priv, msg, msg_len, sig);
}

/*
 * Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (not a signature curve),
 * EDHOC_CRYPTO_ERR_INVALID (sig_len is not edhoc_crypto_sig_len(curve);
 * public key of a wrong length/encoding or not on the curve),
 * EDHOC_CRYPTO_ERR_AUTH (the signature does not verify),
 * EDHOC_CRYPTO_ERR_BACKEND.
 */
static int openssl_verify(int curve, const uint8_t *pub, size_t pub_len,
                          const uint8_t *msg, size_t msg_len, const uint8_t *sig,
                          size_t sig_len)
{
    struct ec2_curve c;
    int ret;

    if (is_ec2(curve)) {
        ret = ec2_lookup(curve, &c);
        if (ret != 0)
            return ret;
        if (sig_len != 2 * c.field_len)
            return EDHOC_CRYPTO_ERR_INVALID;
        return ecdsa_verify(&c, pub, pub_len, msg, msg_len, sig);
    }
    if (curve != EDHOC_COSE_CRV_ED25519 && curve != EDHOC_COSE_CRV_ED448)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    if (sig_len != edhoc_crypto_sig_len(curve))
        return EDHOC_CRYPTO_ERR_INVALID;
    return eddsa_verify(curve, pub, pub_len, msg, msg_len, sig, sig_len);
}
