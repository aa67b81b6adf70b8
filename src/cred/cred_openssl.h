/* Private helpers shared by the two files of the module that use OpenSSL. */
#ifndef EDHOC_CRED_OPENSSL_H
#define EDHOC_CRED_OPENSSL_H

#include <openssl/evp.h>

#include "edhoc/cred.h"

/* EVP_PKEY (key pair) from a raw private key; NULL when invalid. */
EVP_PKEY *cred_pkey_from_key(const struct edhoc_key *key);
/* COSE curve of an EVP_PKEY and its public key in the edhoc_cred.pub form.
 * Returns 0 or EDHOC_CRED_ERR_FORMAT (unsupported key type). */
int cred_pkey_public(EVP_PKEY *pkey, int *curve, uint8_t *pub, size_t *pub_len);

#endif
