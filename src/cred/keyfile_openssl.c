/*
 * Private keys with OpenSSL: raw <-> EVP_PKEY, generation, public key
 * derivation, PKCS#8 PEM in and out, and public key validation.
 */
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include "edhoc/cred.h"
#include "cred_internal.h"
#include "cred_openssl.h"

/* PEM_read_* must never prompt on a terminal for a passphrase. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1;
}

/* Raw private key of an EVP_PKEY. Returns 0 or EDHOC_CRED_ERR_FORMAT. */
static int key_from_pkey(struct edhoc_key *key, EVP_PKEY *pkey)
{
    uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
    size_t pub_len;
    int curve;
    memset(key, 0, sizeof *key);
    if (cred_pkey_public(pkey, &curve, pub, &pub_len) != 0)
        return EDHOC_CRED_ERR_FORMAT;
    size_t n = cred_priv_len(curve);
    if (cred_okp_type(curve) != 0) {
        size_t got = n;
        if (EVP_PKEY_get_raw_private_key(pkey, key->priv, &got) != 1 || got != n)
            goto bad;
    } else {
        BIGNUM *d = NULL;
        int ok = EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_PRIV_KEY, &d) == 1 &&
                 BN_bn2binpad(d, key->priv, (int)n) == (int)n;
        BN_clear_free(d);
        if (!ok)
            goto bad;
    }
    key->curve = curve;
    key->priv_len = n;
    return 0;
bad:
    ERR_clear_error();
    edhoc_wipe(key, sizeof *key);
    return EDHOC_CRED_ERR_FORMAT;
}

int edhoc_key_generate(struct edhoc_key *key, int curve)
{
    EVP_PKEY *pkey = NULL;
    switch (curve) {
    case EDHOC_COSE_CRV_P256: pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"); break;
    case EDHOC_COSE_CRV_P384: pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384"); break;
    case EDHOC_COSE_CRV_X25519: pkey = EVP_PKEY_Q_keygen(NULL, NULL, "X25519"); break;
    case EDHOC_COSE_CRV_X448: pkey = EVP_PKEY_Q_keygen(NULL, NULL, "X448"); break;
    case EDHOC_COSE_CRV_ED25519: pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519"); break;
    case EDHOC_COSE_CRV_ED448: pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED448"); break;
    default: return EDHOC_CRED_ERR_KEY_TYPE;
    }
    if (!pkey)
        return EDHOC_CRED_ERR_KEY_TYPE;
    int rc = key_from_pkey(key, pkey);
    EVP_PKEY_free(pkey);
    return rc;
}

int edhoc_key_public(const struct edhoc_key *key, uint8_t *pub, size_t *pub_len)
{
    if (cred_ec_nid(key->curve) != NID_undef) {
        if (key->priv_len != cred_priv_len(key->curve))
            return EDHOC_CRED_ERR_FORMAT;
        return cred_ec_public_from_private(key->curve, key->priv, pub, pub_len)
                   ? 0
                   : EDHOC_CRED_ERR_FORMAT;
    }
    EVP_PKEY *pkey = cred_pkey_from_key(key);
    if (!pkey)
        return EDHOC_CRED_ERR_FORMAT;
    size_t n = EDHOC_CRYPTO_MAX_PUB;
    int rc = EVP_PKEY_get_raw_public_key(pkey, pub, &n) == 1 ? 0 : EDHOC_CRED_ERR_FORMAT;
    *pub_len = n;
    EVP_PKEY_free(pkey);
    return rc;
}

int edhoc_key_check_cred(const struct edhoc_key *key, const struct edhoc_cred *cred)
{
    uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
    size_t n;
    if (key->curve != cred->curve || edhoc_key_public(key, pub, &n) != 0 || n != cred->pub_len ||
        memcmp(pub, cred->pub, n) != 0)
        return EDHOC_CRED_ERR_KEY_TYPE;
    return 0;
}

static bool contains(const uint8_t *data, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(data + i, needle, n) == 0)
            return true;
    return false;
}

int edhoc_key_parse(struct edhoc_key *key, const uint8_t *data, size_t len, int curve_hint)
{
    memset(key, 0, sizeof *key);
    if (!data || len == 0 || len > 65536)
        return EDHOC_CRED_ERR_FORMAT;
    if (contains(data, len, "-----BEGIN")) {
        BIO *bio = BIO_new_mem_buf(data, (int)len);
        EVP_PKEY *pkey = bio ? PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL) : NULL;
        int rc = pkey ? key_from_pkey(key, pkey) : EDHOC_CRED_ERR_FORMAT;
        EVP_PKEY_free(pkey);
        BIO_free(bio);
        ERR_clear_error();
        if (rc == 0 && curve_hint != 0 && key->curve != curve_hint) {
            edhoc_wipe(key, sizeof *key);
            return EDHOC_CRED_ERR_FORMAT;
        }
        return rc;
    }
    uint8_t raw[EDHOC_CRYPTO_MAX_PRIV + 1];
    long n = cred_hex_decode(data, len, raw, sizeof raw);
    int curve = curve_hint;
    if (curve == 0) {
        /* Only lengths that name one curve; 32 bytes could be any of three. */
        curve = n == 48   ? EDHOC_COSE_CRV_P384
                : n == 56 ? EDHOC_COSE_CRV_X448
                : n == 57 ? EDHOC_COSE_CRV_ED448
                          : 0;
    }
    int rc = EDHOC_CRED_ERR_FORMAT;
    if (n > 0 && cred_priv_len(curve) == (size_t)n) {
        key->curve = curve;
        key->priv_len = (size_t)n;
        memcpy(key->priv, raw, (size_t)n);
        /* An EC scalar must be in range; catch it now, not mid-handshake. */
        uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
        size_t pl;
        rc = edhoc_key_public(key, pub, &pl);
        if (rc != 0)
            edhoc_wipe(key, sizeof *key);
    }
    edhoc_wipe(raw, sizeof raw);
    return rc;
}

int edhoc_key_to_pem(const struct edhoc_key *key, char *out, size_t cap, size_t *out_len)
{
    EVP_PKEY *pkey = cred_pkey_from_key(key);
    if (!pkey)
        return EDHOC_CRED_ERR_FORMAT;
    BIO *bio = BIO_new(BIO_s_secmem());
    int rc = EDHOC_CRED_ERR_FORMAT;
    /* PEM_write_bio_PKCS8PrivateKey: "PRIVATE KEY", unencrypted PKCS#8. */
    if (bio && PEM_write_bio_PKCS8PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL) == 1) {
        char *mem = NULL;
        long n = BIO_get_mem_data(bio, &mem);
        if (n < 0 || (size_t)n + 1 > cap) {
            rc = EDHOC_CRED_ERR_TOO_LARGE;
        } else {
            memcpy(out, mem, (size_t)n);
            out[n] = '\0';
            *out_len = (size_t)n;
            rc = 0;
        }
    }
    BIO_free(bio);
    EVP_PKEY_free(pkey);
    ERR_clear_error();
    return rc;
}
