/*
 * crypto_openssl_ec2.c - P-256 / P-384 in the OpenSSL backend: private
 * scalar checks, public keys, ECDH, ECDSA.
 *
 * The arithmetic goes through the (non-deprecated) EC_POINT interface:
 * ECDH and public-key derivation are a single scalar multiplication, which
 * OpenSSL performs with its constant-time ladder, and skipping the
 * EVP_PKEY import saves most of the per-call overhead. ECDSA goes through
 * EVP_PKEY_sign/verify on a digest computed here.
 */
#include "edhoc/crypto.h"
#include "crypto_openssl_internal.h"

#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/params.h>

const uint8_t edhoc_openssl_p256_order[32] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};
const uint8_t edhoc_openssl_p384_order[48] = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc7, 0x63, 0x4d, 0x81, 0xf4, 0x37, 0x2d, 0xdf,
    0x58, 0x1a, 0x0d, 0xb2, 0x48, 0xb0, 0xa7, 0x7a, 0xec, 0xec, 0x19, 0x6a, 0xcc, 0xc5, 0x29, 0x73,
};

bool edhoc_openssl_ec2_scalar_in_range(const uint8_t *scalar, const uint8_t *order, size_t len)
{
    unsigned nonzero = 0, lt = 0, gt = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned s = scalar[i], o = order[i];
        unsigned undecided = (lt | gt) ^ 1u;
        lt |= undecided & ((s - o) >> 8 & 1u); /* s < o */
        gt |= undecided & ((o - s) >> 8 & 1u); /* s > o */
        nonzero |= s;
    }
    return nonzero != 0 && lt == 1;
}

/* ------------------------------------------------------------------------
 * P-256 / P-384 (EC2)
 */

int edhoc_openssl_ec2_lookup(int curve, struct ec2_curve *c)
{
    const struct backend_algs *a = edhoc_openssl_algs();

    if (curve == EDHOC_COSE_CRV_P256) {
        c->group = a->p256;
        c->order = edhoc_openssl_p256_order;
        c->field_len = 32;
        c->group_name = "P-256";
        c->params = a->p256_params;
        c->hash_alg = EDHOC_COSE_SHA256;
    } else if (curve == EDHOC_COSE_CRV_P384) {
        c->group = a->p384;
        c->order = edhoc_openssl_p384_order;
        c->field_len = 48;
        c->group_name = "P-384";
        c->params = a->p384_params;
        c->hash_alg = EDHOC_COSE_SHA384;
    } else {
        return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    }
    return c->group == NULL || c->params == NULL ? EDHOC_CRYPTO_ERR_BACKEND : 0;
}

bool edhoc_openssl_is_ec2(int curve)
{
    return curve == EDHOC_COSE_CRV_P256 || curve == EDHOC_COSE_CRV_P384;
}

/* The private scalar as a BIGNUM marked for constant-time arithmetic;
 * NULL if out of [1, n-1] (*ret INVALID) or on allocation failure. */
static BIGNUM *ec2_priv_bn(const struct ec2_curve *c, const uint8_t *priv, int *ret)
{
    BIGNUM *d;

    if (!edhoc_openssl_ec2_scalar_in_range(priv, c->order, c->field_len)) {
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

    if (EC_POINT_point2oct(c->group, point, POINT_CONVERSION_UNCOMPRESSED, buf, sizeof buf, bn) !=
        2 * f + 1)
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

int edhoc_openssl_ec2_public_key(const struct ec2_curve *c, bool x_only, const uint8_t *priv,
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

int edhoc_openssl_ec2_ecdh(const struct ec2_curve *c, const uint8_t *priv, const uint8_t *peer,
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

    if (!edhoc_openssl_ec2_scalar_in_range(priv, c->order, c->field_len))
        return EDHOC_CRYPTO_ERR_INVALID;
    to_native_endian(native, priv, c->field_len);
    params[0] =
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)c->group_name, 0);
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

int edhoc_openssl_ecdsa_sign(const struct ec2_curve *c, const uint8_t *priv, const uint8_t *msg,
                             size_t msg_len, uint8_t *sig)
{
    uint8_t digest[48];
    uint8_t der[ECDSA_DER_MAX + 8];
    size_t der_len = sizeof der;
    size_t dlen = edhoc_crypto_hash_len(c->hash_alg);
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    int ret;

    ret = edhoc_openssl_hash(c->hash_alg, msg, msg_len, digest);
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

int edhoc_openssl_ecdsa_verify(const struct ec2_curve *c, const uint8_t *pub, size_t pub_len,
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
    ret = edhoc_openssl_hash(c->hash_alg, msg, msg_len, digest);
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
