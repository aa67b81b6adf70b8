/*
 * crypto_openssl.c - the OpenSSL 3 backend of struct edhoc_crypto_ops: its
 * table, the algorithm objects every operation uses, the random source,
 * key generation, and the key, ECDH and signature entries, which hand each
 * curve to its family (crypto_openssl_ec2.c, crypto_openssl_okp.c). Hash
 * and key derivation are in crypto_openssl_kdf.c, AEAD in
 * crypto_openssl_aead.c (crypto_openssl_internal.h).
 *
 * Algorithm objects (EVP_MD, EVP_CIPHER, EVP_MAC contexts with their digest
 * already set, EC_GROUPs) are fetched once, on first use, under
 * pthread_once: an implicit fetch by name costs a locked lookup in the
 * provider store on every call, which shows in the handshake-versus-crypto
 * benchmarks. The cached objects are only read afterwards, so any number
 * of threads may use the backend at once; they live until process exit.
 */
#include "edhoc/crypto.h"
#include "crypto_openssl_internal.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>

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

static struct backend_algs algs;
static pthread_once_t algs_once = PTHREAD_ONCE_INIT;
static char backend_name[64];

static int openssl_random(void *rng_ctx, uint8_t *out, size_t len);
static int openssl_keygen(int curve, bool for_ecdh, uint8_t *priv, uint8_t *pub, size_t *pub_len);
static int openssl_public_key(int curve, bool for_ecdh, const uint8_t *priv, uint8_t *pub,
                              size_t *pub_len);
static int openssl_ecdh(int curve, const uint8_t *priv, const uint8_t *peer_pub,
                        size_t peer_pub_len, uint8_t *shared);
static int openssl_sign(int curve, const uint8_t *priv, const uint8_t *msg, size_t msg_len,
                        uint8_t *sig);
static int openssl_verify(int curve, const uint8_t *pub, size_t pub_len, const uint8_t *msg,
                          size_t msg_len, const uint8_t *sig, size_t sig_len);

/* Not const: `name` is only known at run time (the library may be newer
 * than the headers we were built against). Filled once in algs_init(). */
static struct edhoc_crypto_ops openssl_ops = {
    .name = "OpenSSL",
    .random = openssl_random,
    .rng_ctx = NULL,
    .hash = edhoc_openssl_hash,
    .hkdf_extract = edhoc_openssl_hkdf_extract,
    .hkdf_expand = edhoc_openssl_hkdf_expand,
    .aead_encrypt = edhoc_openssl_aead_encrypt,
    .aead_decrypt = edhoc_openssl_aead_decrypt,
    .keygen = openssl_keygen,
    .public_key = openssl_public_key,
    .ecdh = openssl_ecdh,
    .sign = openssl_sign,
    .verify = openssl_verify,
    .aead_forget = edhoc_openssl_aead_forget,
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
        params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0);
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

    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)group_name, 0);
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

const struct backend_algs *edhoc_openssl_algs(void)
{
    pthread_once(&algs_once, algs_init);
    return &algs;
}

const struct edhoc_crypto_ops *edhoc_crypto_openssl(void)
{
    edhoc_openssl_algs();
    return &openssl_ops;
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
 * Key generation (through the table's random entry)
 */

/* A random scalar falls outside [1, n-1] with probability < 2^-32 for these
 * curves; a source that keeps producing such values is broken. */
#define KEYGEN_ATTEMPTS 64

int edhoc_crypto_keygen(const struct edhoc_crypto_ops *ops, int curve, bool for_ecdh, uint8_t *priv,
                        uint8_t *pub, size_t *pub_len)
{
    size_t priv_len = edhoc_crypto_priv_len(curve);
    const uint8_t *order = NULL;
    int ret;

    if (priv_len == 0)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    if (for_ecdh && edhoc_crypto_ecdh_pub_len(curve) == 0)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED; /* Ed25519/Ed448 */
    if (curve == EDHOC_COSE_CRV_P256)
        order = edhoc_openssl_p256_order;
    else if (curve == EDHOC_COSE_CRV_P384)
        order = edhoc_openssl_p384_order;
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
        if (order == NULL || edhoc_openssl_ec2_scalar_in_range(priv, order, priv_len))
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
static int openssl_keygen(int curve, bool for_ecdh, uint8_t *priv, uint8_t *pub, size_t *pub_len)
{
    return edhoc_crypto_keygen(edhoc_crypto_openssl(), curve, for_ecdh, priv, pub, pub_len);
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
static int openssl_public_key(int curve, bool for_ecdh, const uint8_t *priv, uint8_t *pub,
                              size_t *pub_len)
{
    struct ec2_curve c;
    int ret;

    if (edhoc_openssl_is_ec2(curve)) {
        ret = edhoc_openssl_ec2_lookup(curve, &c);
        return ret != 0 ? ret : edhoc_openssl_ec2_public_key(&c, for_ecdh, priv, pub, pub_len);
    }
    if (edhoc_openssl_okp_name(curve) == NULL)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    if (for_ecdh && (curve == EDHOC_COSE_CRV_ED25519 || curve == EDHOC_COSE_CRV_ED448))
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    return edhoc_openssl_okp_public_key(curve, priv, pub, pub_len);
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

    if (edhoc_openssl_is_ec2(curve)) {
        ret = edhoc_openssl_ec2_lookup(curve, &c);
        return ret != 0 ? ret : edhoc_openssl_ec2_ecdh(&c, priv, peer_pub, peer_pub_len, shared);
    }
    if (curve != EDHOC_COSE_CRV_X25519 && curve != EDHOC_COSE_CRV_X448)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    return edhoc_openssl_okp_ecdh(curve, priv, peer_pub, peer_pub_len, shared);
}

/*
 * Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (not a signature curve),
 * EDHOC_CRYPTO_ERR_INVALID (EC2 scalar out of range), EDHOC_CRYPTO_ERR_BACKEND.
 */
static int openssl_sign(int curve, const uint8_t *priv, const uint8_t *msg, size_t msg_len,
                        uint8_t *sig)
{
    struct ec2_curve c;
    int ret;

    if (edhoc_openssl_is_ec2(curve)) {
        ret = edhoc_openssl_ec2_lookup(curve, &c);
        return ret != 0 ? ret : edhoc_openssl_ecdsa_sign(&c, priv, msg, msg_len, sig);
    }
    if (curve != EDHOC_COSE_CRV_ED25519 && curve != EDHOC_COSE_CRV_ED448)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    return edhoc_openssl_eddsa_sign(curve, priv, msg, msg_len, sig);
}

/*
 * Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (not a signature curve),
 * EDHOC_CRYPTO_ERR_INVALID (sig_len is not edhoc_crypto_sig_len(curve);
 * public key of a wrong length/encoding or not on the curve),
 * EDHOC_CRYPTO_ERR_AUTH (the signature does not verify),
 * EDHOC_CRYPTO_ERR_BACKEND.
 */
static int openssl_verify(int curve, const uint8_t *pub, size_t pub_len, const uint8_t *msg,
                          size_t msg_len, const uint8_t *sig, size_t sig_len)
{
    struct ec2_curve c;
    int ret;

    if (edhoc_openssl_is_ec2(curve)) {
        ret = edhoc_openssl_ec2_lookup(curve, &c);
        if (ret != 0)
            return ret;
        if (sig_len != 2 * c.field_len)
            return EDHOC_CRYPTO_ERR_INVALID;
        return edhoc_openssl_ecdsa_verify(&c, pub, pub_len, msg, msg_len, sig);
    }
    if (curve != EDHOC_COSE_CRV_ED25519 && curve != EDHOC_COSE_CRV_ED448)
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    if (sig_len != edhoc_crypto_sig_len(curve))
        return EDHOC_CRYPTO_ERR_INVALID;
    return edhoc_openssl_eddsa_verify(curve, pub, pub_len, msg, msg_len, sig, sig_len);
}
