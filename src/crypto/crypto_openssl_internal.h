/*
 * crypto_openssl_internal.h - what the files of the OpenSSL backend share:
 * the algorithm objects fetched once (crypto_openssl.c) and the operations
 * each file implements for the one table of crypto_openssl.c. Not exported
 * from libedhoc.
 *
 *   crypto_openssl.c       the table, the cached objects, random, keygen,
 *                          and the key / ECDH / signature entries, which
 *                          pick the curve family
 *   crypto_openssl_kdf.c   hash, HKDF (SHA-2), KMAC256 (SHAKE256)
 *   crypto_openssl_aead.c  AEAD with keyed contexts kept per thread
 *   crypto_openssl_ec2.c   P-256 / P-384: ECDH, public keys, ECDSA
 *   crypto_openssl_okp.c   X25519 / X448 / Ed25519 / Ed448 on raw keys
 */
#ifndef EDHOC_CRYPTO_OPENSSL_INTERNAL_H
#define EDHOC_CRYPTO_OPENSSL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ec.h>
#include <openssl/evp.h>

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

/* The objects, fetched on the first call (pthread_once); an object a
 * provider lacks is NULL. */
const struct backend_algs *edhoc_openssl_algs(void);

/* ---- crypto_openssl_kdf.c: the table's hash, hkdf_extract, hkdf_expand */
int edhoc_openssl_hash(int hash_alg, const uint8_t *msg, size_t len, uint8_t *out);
int edhoc_openssl_hkdf_extract(int hash_alg, const uint8_t *salt, size_t salt_len,
                               const uint8_t *ikm, size_t ikm_len, uint8_t *prk);
int edhoc_openssl_hkdf_expand(int hash_alg, const uint8_t *prk, size_t prk_len, const uint8_t *info,
                              size_t info_len, uint8_t *out, size_t out_len);

/* ---- crypto_openssl_aead.c: the table's aead_encrypt, aead_decrypt,
 * aead_forget */
int edhoc_openssl_aead_encrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                               const uint8_t *aad, size_t aad_len, const uint8_t *pt, size_t pt_len,
                               uint8_t *ct);
int edhoc_openssl_aead_decrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                               const uint8_t *aad, size_t aad_len, const uint8_t *ct, size_t ct_len,
                               uint8_t *pt);
void edhoc_openssl_aead_forget(const uint8_t *key, size_t key_len);

/* ---- crypto_openssl_ec2.c: P-256 / P-384 */

/* Group orders n, big-endian: private scalars must lie in [1, n-1]. */
extern const uint8_t edhoc_openssl_p256_order[32];
extern const uint8_t edhoc_openssl_p384_order[48];

/* Constant-time check 0 < scalar < order (both big-endian, len bytes). */
bool edhoc_openssl_ec2_scalar_in_range(const uint8_t *scalar, const uint8_t *order, size_t len);

struct ec2_curve {
    const EC_GROUP *group;
    const uint8_t *order;
    size_t field_len; /* = scalar length for both curves */
    const char *group_name;
    EVP_PKEY *params; /* template for public keys */
    int hash_alg;     /* ECDSA hash */
};

bool edhoc_openssl_is_ec2(int curve);
/* Fills c for P-256 or P-384. Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED,
 * EDHOC_CRYPTO_ERR_BACKEND (the provider lacks the curve). */
int edhoc_openssl_ec2_lookup(int curve, struct ec2_curve *c);
int edhoc_openssl_ec2_public_key(const struct ec2_curve *c, bool x_only, const uint8_t *priv,
                                 uint8_t *pub, size_t *pub_len);
int edhoc_openssl_ec2_ecdh(const struct ec2_curve *c, const uint8_t *priv, const uint8_t *peer,
                           size_t peer_len, uint8_t *shared);
/* sig is r||s, 2 * field_len bytes. */
int edhoc_openssl_ecdsa_sign(const struct ec2_curve *c, const uint8_t *priv, const uint8_t *msg,
                             size_t msg_len, uint8_t *sig);
int edhoc_openssl_ecdsa_verify(const struct ec2_curve *c, const uint8_t *pub, size_t pub_len,
                               const uint8_t *msg, size_t msg_len, const uint8_t *sig);

/* ---- crypto_openssl_okp.c: X25519 / X448 / Ed25519 / Ed448 */

/* OpenSSL's name of the curve, NULL for a curve not of this family. */
const char *edhoc_openssl_okp_name(int curve);
int edhoc_openssl_okp_public_key(int curve, const uint8_t *priv, uint8_t *pub, size_t *pub_len);
int edhoc_openssl_okp_ecdh(int curve, const uint8_t *priv, const uint8_t *peer, size_t peer_len,
                           uint8_t *shared);
int edhoc_openssl_eddsa_sign(int curve, const uint8_t *priv, const uint8_t *msg, size_t msg_len,
                             uint8_t *sig);
int edhoc_openssl_eddsa_verify(int curve, const uint8_t *pub, size_t pub_len, const uint8_t *msg,
                               size_t msg_len, const uint8_t *sig, size_t sig_len);

#endif
