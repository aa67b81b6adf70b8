/*
 * edhoc/crypto.h - the one table of cryptographic operations the EDHOC and
 * OSCORE cores use.
 *
 * The cores never call a crypto library directly: they call through a
 * `const struct edhoc_crypto_ops *`. The OpenSSL 3 backend is returned by
 * edhoc_crypto_openssl(). Tests replace single entries (typically `random`)
 * in a copy of the table to pin ephemeral keys.
 *
 * Algorithms and curves are named by their COSE identifiers (IANA "COSE
 * Algorithms" / "COSE Elliptic Curves"), because that is how EDHOC cipher
 * suites and COSE_Keys name them:
 *
 *   hash:  EDHOC_COSE_SHA256 (-16), EDHOC_COSE_SHA384 (-43),
 *          EDHOC_COSE_SHAKE256 (-45)
 *   AEAD:  EDHOC_COSE_AES_CCM_16_64_128 (10), EDHOC_COSE_AES_CCM_16_128_128 (30),
 *          EDHOC_COSE_A128GCM (1), EDHOC_COSE_A256GCM (3),
 *          EDHOC_COSE_CHACHA20_POLY1305 (24)
 *   curve: EDHOC_COSE_CRV_P256 (1), EDHOC_COSE_CRV_P384 (2),
 *          EDHOC_COSE_CRV_X25519 (4), EDHOC_COSE_CRV_X448 (5),
 *          EDHOC_COSE_CRV_ED25519 (6), EDHOC_COSE_CRV_ED448 (7)
 *
 * Key encodings (all raw byte strings, no ASN.1):
 *   - private keys: the scalar / seed as in COSE_Key 'd': 32 bytes for
 *     P-256, X25519, Ed25519; 48 for P-384; 56 for X448; 57 for Ed448.
 *   - ECDH public keys: X25519/X448 raw (32/56); P-256/P-384 the
 *     x-coordinate only (32/48), as EDHOC sends G_X/G_Y (RFC 9528 Section
 *     3.7). ecdh() also accepts 0x04||x||y and 0x02/0x03||x.
 *   - signature public keys: Ed25519/Ed448 raw (32/57); P-256/P-384
 *     uncompressed 0x04||x||y (65/97), or x-coordinate with sign bit
 *     0x02/0x03||x.
 *   - ECDH shared secret: X25519/X448 raw; P-256/P-384 the x-coordinate.
 *   - ECDSA signatures: COSE form r||s (64 / 96 bytes); EdDSA 64 / 114.
 *
 * All functions return 0 on success or a negative EDHOC_CRYPTO_ERR_* code.
 */
#ifndef EDHOC_CRYPTO_H
#define EDHOC_CRYPTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* COSE algorithm identifiers */
#define EDHOC_COSE_SHA256             (-16)
#define EDHOC_COSE_SHA384             (-43)
#define EDHOC_COSE_SHAKE256           (-45)
#define EDHOC_COSE_AES_CCM_16_64_128  10
#define EDHOC_COSE_AES_CCM_16_128_128 30
#define EDHOC_COSE_A128GCM            1
#define EDHOC_COSE_A256GCM            3
#define EDHOC_COSE_CHACHA20_POLY1305  24
#define EDHOC_COSE_ES256              (-7)
#define EDHOC_COSE_ES384              (-35)
#define EDHOC_COSE_EDDSA              (-8)

/* COSE elliptic curve identifiers */
#define EDHOC_COSE_CRV_P256    1
#define EDHOC_COSE_CRV_P384    2
#define EDHOC_COSE_CRV_X25519  4
#define EDHOC_COSE_CRV_X448    5
#define EDHOC_COSE_CRV_ED25519 6
#define EDHOC_COSE_CRV_ED448   7

/* Upper bounds, usable for buffers */
#define EDHOC_CRYPTO_MAX_HASH     64 /* SHA-384 is 48; SHAKE256 output room */
#define EDHOC_CRYPTO_MAX_KEY      32 /* AEAD key */
#define EDHOC_CRYPTO_MAX_NONCE    13 /* AEAD nonce (CCM 13, GCM/ChaCha 12) */
#define EDHOC_CRYPTO_MAX_TAG      16
#define EDHOC_CRYPTO_MAX_PRIV     57
#define EDHOC_CRYPTO_MAX_PUB      97 /* 0x04||x||y for P-384 */
#define EDHOC_CRYPTO_MAX_ECDH_PUB 56 /* X448; P-384 x is 48 */
#define EDHOC_CRYPTO_MAX_SECRET   56
#define EDHOC_CRYPTO_MAX_SIG      114

/* Error codes (negative) */
#define EDHOC_CRYPTO_ERR_UNSUPPORTED (-1001) /* unknown algorithm or curve */
#define EDHOC_CRYPTO_ERR_INVALID     (-1002) /* bad length or malformed key */
#define EDHOC_CRYPTO_ERR_AUTH        (-1003) /* AEAD tag or signature did not verify */
#define EDHOC_CRYPTO_ERR_BACKEND     (-1004) /* the library failed (allocation, ...) */
#define EDHOC_CRYPTO_ERR_RANDOM      (-1005) /* the random source failed */

struct edhoc_crypto_ops {
    /* "OpenSSL 3.0.x" - printed in benchmark tables */
    const char *name;

    /* Fill out with len random bytes. The default uses the system CSPRNG;
     * tests install a deterministic source. rng_ctx is passed back. */
    int (*random)(void *rng_ctx, uint8_t *out, size_t len);
    void *rng_ctx;

    /* out receives edhoc_crypto_hash_len(alg) bytes. */
    int (*hash)(int hash_alg, const uint8_t *msg, size_t len, uint8_t *out);

    /* HKDF (RFC 5869) with the given hash. For SHAKE256, EDHOC defines
     * Extract/Expand with KMAC256 (RFC 9528 Section 4.1.1); the backend
     * implements that mapping. prk receives edhoc_crypto_hash_len(alg)
     * bytes. */
    int (*hkdf_extract)(int hash_alg, const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
                        size_t ikm_len, uint8_t *prk);
    int (*hkdf_expand)(int hash_alg, const uint8_t *prk, size_t prk_len, const uint8_t *info,
                       size_t info_len, uint8_t *out, size_t out_len);

    /* AEAD. ct receives pt_len + tag_len bytes (ciphertext || tag).
     * key/nonce lengths are those of the algorithm. */
    int (*aead_encrypt)(int aead_alg, const uint8_t *key, const uint8_t *nonce, const uint8_t *aad,
                        size_t aad_len, const uint8_t *pt, size_t pt_len, uint8_t *ct);
    /* ct_len includes the tag; pt receives ct_len - tag_len bytes.
     * Returns EDHOC_CRYPTO_ERR_AUTH when the tag does not verify (pt is then
     * wiped). */
    int (*aead_decrypt)(int aead_alg, const uint8_t *key, const uint8_t *nonce, const uint8_t *aad,
                        size_t aad_len, const uint8_t *ct, size_t ct_len, uint8_t *pt);

    /* Key pair for ECDH (curve 1, 2, 4, 5) or signing (1, 2, 6, 7) from the
     * `random` entry. pub in the ECDH form for curves 4/5 and x-only for
     * 1/2 when for_ecdh, else in the signature form. */
    int (*keygen)(int curve, bool for_ecdh, uint8_t *priv, uint8_t *pub, size_t *pub_len);
    /* Public key of a private key, same forms as keygen. */
    int (*public_key)(int curve, bool for_ecdh, const uint8_t *priv, uint8_t *pub, size_t *pub_len);
    /* ECDH. shared receives edhoc_crypto_ecdh_secret_len(curve) bytes. */
    int (*ecdh)(int curve, const uint8_t *priv, const uint8_t *peer_pub, size_t peer_pub_len,
                uint8_t *shared);

    /* Signatures. curve selects the algorithm: 6 Ed25519, 7 Ed448,
     * 1 ES256 (SHA-256), 2 ES384 (SHA-384). sig receives
     * edhoc_crypto_sig_len(curve) bytes. */
    int (*sign)(int curve, const uint8_t *priv, const uint8_t *msg, size_t msg_len, uint8_t *sig);
    int (*verify)(int curve, const uint8_t *pub, size_t pub_len, const uint8_t *msg, size_t msg_len,
                  const uint8_t *sig, size_t sig_len);

    /* Optional (NULL: nothing to do). A backend may keep keyed AEAD state
     * between calls with the same key (OSCORE seals every message of a
     * context with the same two keys); this drops and wipes whatever it
     * keeps for key, once the caller is done with that key. */
    void (*aead_forget)(const uint8_t *key, size_t key_len);
};

/* The OpenSSL 3 backend (static table; never NULL). */
const struct edhoc_crypto_ops *edhoc_crypto_openssl(void);

/* The libsodium backend (static table; never NULL): X25519, Ed25519,
 * ChaCha20-Poly1305, SHA-256, HMAC-SHA-256 (HKDF) and the random source are
 * libsodium's; what libsodium lacks (P-256, P-384, X448, Ed448, AES-CCM/GCM,
 * SHA-384, SHAKE256) is handed to the OpenSSL backend, so it serves every
 * cipher suite. Ed25519 verification follows the same rule in both
 * backends: small-order and non-canonical public keys are
 * EDHOC_CRYPTO_ERR_INVALID, small-order R and S >= L are
 * EDHOC_CRYPTO_ERR_AUTH. */
const struct edhoc_crypto_ops *edhoc_crypto_sodium(void);

/* The composite backend (static table; never NULL): each operation on each
 * algorithm from whichever of the two backends is faster on it, by a table
 * measured with `edhoc-cli bench crypto` (edhoc_crypto_auto_source). Wire
 * bytes are those of either backend. */
const struct edhoc_crypto_ops *edhoc_crypto_auto(void);

/* The operations of the table, for edhoc_crypto_auto_source. */
enum edhoc_crypto_op {
    EDHOC_CRYPTO_OP_RANDOM = 0,
    EDHOC_CRYPTO_OP_HASH,   /* hash */
    EDHOC_CRYPTO_OP_HKDF,   /* hkdf_extract, hkdf_expand */
    EDHOC_CRYPTO_OP_AEAD,   /* aead_encrypt, aead_decrypt */
    EDHOC_CRYPTO_OP_KEYGEN, /* keygen, public_key */
    EDHOC_CRYPTO_OP_ECDH,
    EDHOC_CRYPTO_OP_SIGN,
    EDHOC_CRYPTO_OP_VERIFY,
};

/* Whether libsodium itself implements op on alg (a COSE algorithm or
 * curve; ignored for EDHOC_CRYPTO_OP_RANDOM); otherwise
 * edhoc_crypto_sodium() hands the operation to OpenSSL. */
bool edhoc_crypto_sodium_implements(enum edhoc_crypto_op op, int alg);

/* The backend edhoc_crypto_auto() uses for op on alg (a COSE algorithm or
 * curve; ignored for EDHOC_CRYPTO_OP_RANDOM): edhoc_crypto_openssl() or
 * edhoc_crypto_sodium(). */
const struct edhoc_crypto_ops *edhoc_crypto_auto_source(enum edhoc_crypto_op op, int alg);

/* A backend by name: "openssl", "sodium" or "auto"; NULL for any other
 * name. */
const struct edhoc_crypto_ops *edhoc_crypto_by_name(const char *name);

/* The process's backend: the one the EDHOC_CRYPTO environment variable
 * names ("openssl", "sodium", "auto"), edhoc_crypto_auto() when it is unset,
 * empty or names none of them. Read at each call. */
const struct edhoc_crypto_ops *edhoc_crypto_default(void);

/* Key pair for `curve` whose private key is drawn through ops->random (with
 * ops->rng_ctx) and whose public key comes from ops->public_key, in the forms
 * of the keygen entry. This is how the cores create ephemeral keys: the
 * table's own keygen entry cannot see a `random` replaced in a copy of the
 * table, this function can, so a pinned random source pins the key. For
 * P-256/P-384 a scalar of 0 or >= n is drawn again. priv receives
 * edhoc_crypto_priv_len(curve) bytes (wiped on failure), pub up to
 * EDHOC_CRYPTO_MAX_PUB. Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (unknown
 * curve, or Ed25519/Ed448 with for_ecdh), EDHOC_CRYPTO_ERR_RANDOM (random
 * failed, or gave 64 out-of-range scalars in a row), or public_key's errors. */
int edhoc_crypto_keygen(const struct edhoc_crypto_ops *ops, int curve, bool for_ecdh, uint8_t *priv,
                        uint8_t *pub, size_t *pub_len);

/* Sizes; 0 for an unknown identifier. */
/* (hash_len: SHA-256 32, SHA-384 48, SHAKE256 64 - COSE -45 is SHAKE256
 * with 512-bit output, the size of EDHOC_Extract = KMAC256(.., 512, "").) */
size_t edhoc_crypto_hash_len(int hash_alg);
size_t edhoc_crypto_aead_key_len(int aead_alg);
size_t edhoc_crypto_aead_nonce_len(int aead_alg);
size_t edhoc_crypto_aead_tag_len(int aead_alg);
size_t edhoc_crypto_priv_len(int curve);
size_t edhoc_crypto_ecdh_pub_len(int curve); /* the EDHOC wire form */
size_t edhoc_crypto_ecdh_secret_len(int curve);
size_t edhoc_crypto_sig_len(int curve);
const char *edhoc_crypto_alg_name(int cose_alg); /* "AES-CCM-16-64-128" */
const char *edhoc_crypto_curve_name(int curve);  /* "P-256" */
/* (Both names are "unknown" for an unknown identifier, never NULL.) */

/* Constant-time comparison: true when equal. */
bool edhoc_ct_equal(const void *a, const void *b, size_t len);
/* Wipe memory in a way the compiler cannot remove. */
void edhoc_wipe(void *p, size_t len);

#ifdef __cplusplus
}
#endif
#endif
