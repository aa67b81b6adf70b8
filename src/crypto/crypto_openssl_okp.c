/*
 * crypto_openssl_okp.c - X25519 / X448 (ECDH) and Ed25519 / Ed448 (EdDSA)
 * on raw keys in the OpenSSL backend.
 */
#include "edhoc/crypto.h"
#include "crypto_internal.h"
#include "crypto_openssl_internal.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

/* ------------------------------------------------------------------------
 * X25519 / X448 / Ed25519 / Ed448 (raw keys)
 */

const char *edhoc_openssl_okp_name(int curve)
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

int edhoc_openssl_okp_public_key(int curve, const uint8_t *priv, uint8_t *pub, size_t *pub_len)
{
    size_t len = okp_pub_len(curve);
    EVP_PKEY *pkey = EVP_PKEY_new_raw_private_key_ex(NULL, edhoc_openssl_okp_name(curve), NULL,
                                                     priv, edhoc_crypto_priv_len(curve));
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
 * edhoc_openssl_okp_ecdh(). */
static EVP_PKEY *xdh_priv_pkey(int curve, const uint8_t *priv)
{
    uint8_t placeholder[56] = {0};
    size_t len = edhoc_crypto_priv_len(curve);
    OSSL_PARAM params[3];
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, edhoc_openssl_okp_name(curve), NULL);
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

int edhoc_openssl_okp_ecdh(int curve, const uint8_t *priv, const uint8_t *peer, size_t peer_len,
                           uint8_t *shared)
{
    size_t len = edhoc_crypto_ecdh_secret_len(curve);
    EVP_PKEY *mine = NULL, *theirs = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    int ret = EDHOC_CRYPTO_ERR_BACKEND;

    if (peer_len != edhoc_crypto_ecdh_pub_len(curve))
        return EDHOC_CRYPTO_ERR_INVALID;
    mine = xdh_priv_pkey(curve, priv);
    theirs =
        EVP_PKEY_new_raw_public_key_ex(NULL, edhoc_openssl_okp_name(curve), NULL, peer, peer_len);
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

int edhoc_openssl_eddsa_sign(int curve, const uint8_t *priv, const uint8_t *msg, size_t msg_len,
                             uint8_t *sig)
{
    size_t sig_len = edhoc_crypto_sig_len(curve);
    EVP_PKEY *pkey = EVP_PKEY_new_raw_private_key_ex(NULL, edhoc_openssl_okp_name(curve), NULL,
                                                     priv, edhoc_crypto_priv_len(curve));
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

int edhoc_openssl_eddsa_verify(int curve, const uint8_t *pub, size_t pub_len, const uint8_t *msg,
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
    pkey = EVP_PKEY_new_raw_public_key_ex(NULL, edhoc_openssl_okp_name(curve), NULL, pub, pub_len);
    if (pkey == NULL)
        return EDHOC_CRYPTO_ERR_INVALID;
    md = EVP_MD_CTX_new();
    if (md != NULL && EVP_DigestVerifyInit_ex(md, NULL, NULL, NULL, NULL, pkey, NULL) == 1)
        ret = EVP_DigestVerify(md, sig, sig_len, msg, msg_len) == 1 ? 0 : EDHOC_CRYPTO_ERR_AUTH;
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(pkey);
    return ret;
}
