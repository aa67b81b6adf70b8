/* Private interfaces between the credential module's files: the pure CBOR
 * side (cred.c, store.c) and the OpenSSL side (x509_openssl.c,
 * keyfile_openssl.c). */
#ifndef EDHOC_CRED_INTERNAL_H
#define EDHOC_CRED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "edhoc/cred.h"

/* Copy `why` text into a caller buffer (NULL-safe). */
void cred_why(char *why, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Is pub a valid public key of that curve (EC2: 0x04||x||y on the curve)? */
bool cred_pub_is_valid(int curve, const uint8_t *pub, size_t len);

/* Leaf certificate facts read with OpenSSL. */
struct cred_x509_info {
    int curve;
    uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
    size_t pub_len;
    bool is_ca;
};

/* Read one DER certificate. len_used receives its length when der holds
 * more than one (DER concatenation). Returns 0 or EDHOC_CRED_ERR_FORMAT. */
int cred_x509_inspect(const uint8_t *der, size_t len, size_t *len_used,
                      struct cred_x509_info *info);

/* PEM certificates -> DER list; returns the count or EDHOC_CRED_ERR_*. The
 * DER bytes are written consecutively into buf. */
int cred_pem_to_der(const uint8_t *pem, size_t len, uint8_t *buf, size_t cap,
                    size_t *lens, size_t max_certs);

/* Verify the chain in cred (leaf first) against the store's anchors at
 * time `now` (0 = current). Returns 0, EDHOC_CRED_ERR_UNTRUSTED,
 * EDHOC_CRED_ERR_EXPIRED, EDHOC_CRED_ERR_FORMAT. */
int cred_x509_verify_chain(const struct edhoc_cred_store *store, const struct edhoc_cred *cred,
                           int64_t now);

/* Only the validity window of the leaf. Returns 0, EDHOC_CRED_ERR_EXPIRED,
 * EDHOC_CRED_ERR_FORMAT. */
int cred_x509_check_time(const struct edhoc_cred *cred, int64_t now);

/* SHA-256 of msg into out[32]. Returns 0 or EDHOC_CRED_ERR_FORMAT. */
int cred_sha256(const uint8_t *msg, size_t len, uint8_t out[32]);

/* Hex text (whitespace, ':' and a leading "0x" ignored) into out.
 * Returns the length or -1 (not hex, odd digit count, over cap). */
long cred_hex_decode(const uint8_t *text, size_t len, uint8_t *out, size_t cap);

/* Read a whole regular file of at most max bytes into a malloc'd buffer.
 * When private_key, fstat() of the opened file must show no group/other
 * permission (checked on the descriptor, so the file cannot be swapped
 * between check and read). Returns 0, EDHOC_CRED_ERR_FILE,
 * EDHOC_CRED_ERR_PERMISSIONS, EDHOC_CRED_ERR_TOO_LARGE; why names the file. */
int cred_read_file(const char *path, size_t max, bool private_key, uint8_t **data,
                   size_t *len, char *why, size_t why_cap);

#endif
