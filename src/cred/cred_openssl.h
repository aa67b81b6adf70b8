/* The OpenSSL primitives of the credential module (cred_openssl.c): the
 * lowest layer of src/cred, which the other files build on. Private; the
 * two that need no OpenSSL type (cred_pub_is_valid, cred_sha256) are
 * declared in cred_internal.h for the files that include no OpenSSL. */
#ifndef EDHOC_CRED_OPENSSL_H
#define EDHOC_CRED_OPENSSL_H

#include <openssl/evp.h>

#include "edhoc/cred.h"
#include "cred_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* EVP_PKEY_X25519 / _X448 / _ED25519 / _ED448 of an OKP curve, else 0. */
int cred_okp_type(int curve);
/* Bytes of a raw private key on curve (the form of edhoc/crypto.h); 0 when
 * unknown. */
size_t cred_priv_len(int curve);
/* NID of an EC2 curve (P-256, P-384), else NID_undef. */
int cred_ec_nid(int curve);
/* 0x04||x||y of d*G, after checking 0 < d < n. */
bool cred_ec_public_from_private(int curve, const uint8_t *priv, uint8_t *pub, size_t *pub_len);
/* EVP_PKEY (key pair) from a raw private key; NULL when invalid. */
EVP_PKEY *cred_pkey_from_key(const struct edhoc_key *key);
/* COSE curve of an EVP_PKEY and its public key in the edhoc_cred.pub form.
 * Returns 0 or EDHOC_CRED_ERR_FORMAT (unsupported key type). */
int cred_pkey_public(EVP_PKEY *pkey, int *curve, uint8_t *pub, size_t *pub_len);

#endif
