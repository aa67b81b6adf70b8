/*
 * The OpenSSL primitives the credential files share (cred_openssl.h): key
 * types and sizes per COSE curve, public key validation and derivation,
 * raw keys to and from EVP_PKEY, SHA-256. They use OpenSSL and nothing
 * else of the module, so every other file may build on them.
 */
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include "cred_openssl.h"

int cred_sha256(const uint8_t *msg, size_t len, uint8_t out[32])
{
    unsigned int n = 0;
    if (EVP_Digest(msg, len, out, &n, EVP_sha256(), NULL) != 1 || n != 32)
        return EDHOC_CRED_ERR_FORMAT;
    return 0;
}

int cred_pkey_public(EVP_PKEY *pkey, int *curve, uint8_t *pub, size_t *pub_len)
{
    size_t n = EDHOC_CRYPTO_MAX_PUB;
    switch (EVP_PKEY_get_base_id(pkey)) {
    case EVP_PKEY_ED25519: *curve = EDHOC_COSE_CRV_ED25519; break;
    case EVP_PKEY_ED448: *curve = EDHOC_COSE_CRV_ED448; break;
    case EVP_PKEY_X25519: *curve = EDHOC_COSE_CRV_X25519; break;
    case EVP_PKEY_X448: *curve = EDHOC_COSE_CRV_X448; break;
    case EVP_PKEY_EC: {
        char group[32];
        size_t glen = 0;
        if (EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group,
                                           &glen) != 1)
            return EDHOC_CRED_ERR_FORMAT;
        size_t c;
        if (!strcmp(group, "prime256v1") || !strcmp(group, "P-256")) {
            *curve = EDHOC_COSE_CRV_P256;
            c = 32;
        } else if (!strcmp(group, "secp384r1") || !strcmp(group, "P-384")) {
            *curve = EDHOC_COSE_CRV_P384;
            c = 48;
        } else {
            return EDHOC_CRED_ERR_FORMAT;
        }
        /* Coordinates rather than the encoded point: a certificate may
         * carry a compressed point, edhoc_cred.pub is always 0x04||x||y. */
        BIGNUM *x = NULL, *y = NULL;
        int ok = EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_EC_PUB_X, &x) == 1 &&
                 EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_EC_PUB_Y, &y) == 1 &&
                 BN_bn2binpad(x, pub + 1, (int)c) == (int)c &&
                 BN_bn2binpad(y, pub + 1 + c, (int)c) == (int)c;
        BN_free(x);
        BN_free(y);
        if (!ok)
            return EDHOC_CRED_ERR_FORMAT;
        pub[0] = 0x04;
        *pub_len = 1 + 2 * c;
        return 0;
    }
    default: return EDHOC_CRED_ERR_FORMAT;
    }
    if (EVP_PKEY_get_raw_public_key(pkey, pub, &n) != 1)
        return EDHOC_CRED_ERR_FORMAT;
    *pub_len = n;
    return 0;
}

int cred_okp_type(int curve)
{
    switch (curve) {
    case EDHOC_COSE_CRV_X25519: return EVP_PKEY_X25519;
    case EDHOC_COSE_CRV_X448: return EVP_PKEY_X448;
    case EDHOC_COSE_CRV_ED25519: return EVP_PKEY_ED25519;
    case EDHOC_COSE_CRV_ED448: return EVP_PKEY_ED448;
    default: return 0;
    }
}

size_t cred_priv_len(int curve)
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

int cred_ec_nid(int curve)
{
    return curve == EDHOC_COSE_CRV_P256   ? NID_X9_62_prime256v1
           : curve == EDHOC_COSE_CRV_P384 ? NID_secp384r1
                                          : NID_undef;
}

bool cred_pub_is_valid(int curve, const uint8_t *pub, size_t len)
{
    int nid = cred_ec_nid(curve);
    if (nid == NID_undef)
        return cred_okp_type(curve) != 0 &&
               len == (curve == EDHOC_COSE_CRV_ED448 ? 57u : cred_priv_len(curve));
    EC_GROUP *g = EC_GROUP_new_by_curve_name(nid);
    EC_POINT *pt = g ? EC_POINT_new(g) : NULL;
    bool ok = pt && len >= 1 && pub[0] == 0x04 && EC_POINT_oct2point(g, pt, pub, len, NULL) == 1 &&
              EC_POINT_is_on_curve(g, pt, NULL) == 1 && !EC_POINT_is_at_infinity(g, pt);
    EC_POINT_free(pt);
    EC_GROUP_free(g);
    ERR_clear_error();
    return ok;
}

/* 0x04||x||y of d*G, after checking 0 < d < n. */
bool cred_ec_public_from_private(int curve, const uint8_t *priv, uint8_t *pub, size_t *pub_len)
{
    size_t c = cred_priv_len(curve);
    EC_GROUP *g = EC_GROUP_new_by_curve_name(cred_ec_nid(curve));
    EC_POINT *pt = g ? EC_POINT_new(g) : NULL;
    BIGNUM *d = BN_bin2bn(priv, (int)c, NULL);
    bool ok =
        pt && d && !BN_is_zero(d) && BN_cmp(d, EC_GROUP_get0_order(g)) < 0 &&
        EC_POINT_mul(g, pt, d, NULL, NULL, NULL) == 1 &&
        EC_POINT_point2oct(g, pt, POINT_CONVERSION_UNCOMPRESSED, pub, 1 + 2 * c, NULL) == 1 + 2 * c;
    if (ok)
        *pub_len = 1 + 2 * c;
    BN_clear_free(d);
    EC_POINT_free(pt);
    EC_GROUP_free(g);
    ERR_clear_error();
    return ok;
}

EVP_PKEY *cred_pkey_from_key(const struct edhoc_key *key)
{
    if (cred_priv_len(key->curve) == 0 || key->priv_len != cred_priv_len(key->curve))
        return NULL;
    int type = cred_okp_type(key->curve);
    if (type != 0)
        return EVP_PKEY_new_raw_private_key(type, NULL, key->priv, key->priv_len);

    uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
    size_t pub_len;
    if (!cred_ec_public_from_private(key->curve, key->priv, pub, &pub_len))
        return NULL;
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    BIGNUM *d = BN_secure_new();
    OSSL_PARAM *params = NULL;
    const char *group = key->curve == EDHOC_COSE_CRV_P256 ? "prime256v1" : "secp384r1";
    if (ctx && bld && d && BN_bin2bn(key->priv, (int)key->priv_len, d) &&
        OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, d) &&
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, pub_len) &&
        (params = OSSL_PARAM_BLD_to_param(bld)) != NULL && EVP_PKEY_fromdata_init(ctx) == 1)
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_KEYPAIR, params);
    OSSL_PARAM_free(params);
    BN_clear_free(d);
    OSSL_PARAM_BLD_free(bld);
    EVP_PKEY_CTX_free(ctx);
    ERR_clear_error();
    return pkey;
}
