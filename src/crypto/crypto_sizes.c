/*
 * crypto_sizes.c - the sizes and names of the COSE algorithms and curves
 * the ops table knows, whichever backend serves them; constant-time
 * comparison and wiping of secrets.
 */
#include "edhoc/crypto.h"

#include <openssl/crypto.h>

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
