/*
 * crypto_internal.h - what the backends of src/crypto share and do not
 * export from libedhoc.
 */
#ifndef EDHOC_CRYPTO_INTERNAL_H
#define EDHOC_CRYPTO_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "edhoc/crypto.h"

/* Both backends bound AEAD lengths alike (EVP lengths are int; keep room
 * for the tag), so a length one refuses the other refuses too. */
#define EDHOC_AEAD_LEN_MAX ((size_t)INT_MAX - 64)

/*
 * The Ed25519 verification rule both backends enforce before checking the
 * equation; the stricter of the two libraries', so that a signature is
 * accepted or refused the same way by either:
 *   - S must be below the group order L (RFC 8032 Section 5.1.7 step 1);
 *     both libraries check it;
 *   - the public key A must be a canonical encoding (y < p) and not a point
 *     of small order (order 1, 2, 4 or 8); libsodium refuses these keys,
 *     OpenSSL 3.0 accepts them, and with such a key a "signature" can be
 *     made without any private key (RFC 8032 Section 8.4 lets a verifier
 *     refuse them);
 *   - R must not be a point of small order (libsodium's rule).
 * pub is 32 bytes, sig 64. Returns 0 when the rule holds,
 * EDHOC_CRYPTO_ERR_INVALID for a bad public key, EDHOC_CRYPTO_ERR_AUTH
 * for a bad signature.
 */
int edhoc_ed25519_strict_reject(const uint8_t *pub, const uint8_t *sig);

#endif
