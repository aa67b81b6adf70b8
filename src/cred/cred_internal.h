/* Private interfaces between the credential module's files: the pure CBOR
 * side (cred.c, store.c) and the OpenSSL side (x509_openssl.c,
 * keyfile_openssl.c). */
#ifndef EDHOC_CRED_INTERNAL_H
#define EDHOC_CRED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "edhoc/cred.h"

/* Copy `why` text into a caller buffer (NULL-safe). */
void cred_why(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Is pub a valid public key of that curve (EC2: 0x04||x||y on the curve)?
 * (cred_openssl.c) */
bool cred_pub_is_valid(int curve, const uint8_t *pub, size_t len);

/* Leaf certificate facts read with OpenSSL. */
struct cred_x509_info {
    int curve;
    uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
    size_t pub_len;
    bool is_ca;
    /* Validity window; has_validity false when the times are unreadable. */
    bool has_validity;
    int64_t not_before;
    int64_t not_after;
};

/* Read one DER certificate. len_used receives its length when der holds
 * more than one (DER concatenation). Returns 0 or EDHOC_CRED_ERR_FORMAT. */
int cred_x509_inspect(const uint8_t *der, size_t len, size_t *len_used,
                      struct cred_x509_info *info);

/* Lay out DER certificates (leaf first) in cred as an X.509 credential
 * (data, certs, cred = leaf as a CBOR bstr) without reading them: curve,
 * pub and the validity window are left for the caller. Returns 0,
 * EDHOC_CRED_ERR_FORMAT (no or empty certificate), EDHOC_CRED_ERR_TOO_LARGE. */
int cred_x509_assemble(struct edhoc_cred *cred, const uint8_t *const *certs, const size_t *lens,
                       size_t n);

/* Copy what reading the leaf gave into cred. */
void cred_x509_set_leaf_info(struct edhoc_cred *cred, const struct cred_x509_info *info);

/* A received x5chain that is no configured credential: decode each
 * certificate once, lay the chain out in out (as edhoc_cred_from_der_chain)
 * and verify it against the store's anchors at store->now. Returns 0,
 * EDHOC_CRED_ERR_FORMAT, EDHOC_CRED_ERR_UNTRUSTED, EDHOC_CRED_ERR_EXPIRED;
 * out is zeroed on failure. */
int cred_x509_resolve_chain(const struct edhoc_cred_store *store, const uint8_t *const *certs,
                            const size_t *lens, size_t n, struct edhoc_cred *out);

/* The certificates of a received x5bag, each decoded once. */
struct cred_x509_bag {
    size_t n; /* distinct certificates (duplicates dropped) */
    const uint8_t *der[EDHOC_CRED_MAX_BAG];
    size_t len[EDHOC_CRED_MAX_BAG];
    bool is_ca[EDHOC_CRED_MAX_BAG];
    void *x509[EDHOC_CRED_MAX_BAG]; /* X509 *, owned */
    struct edhoc_cred scratch;      /* room for a candidate chain */
};

/* Decode the bag (duplicates by bytes dropped). Returns 0 or
 * EDHOC_CRED_ERR_FORMAT (a certificate that does not decode); the bag is
 * closed on failure. */
int cred_x509_bag_open(struct cred_x509_bag *bag, const uint8_t *const *certs, const size_t *lens,
                       size_t n);
/* The chain from bag certificate `leaf` through the bag to one of the
 * store's anchors, verified as an x5chain is (cred_x509_resolve_chain),
 * into out leaf first. Returns 0, EDHOC_CRED_ERR_CHAIN_LOOP,
 * EDHOC_CRED_ERR_CHAIN_DEPTH, EDHOC_CRED_ERR_UNTRUSTED,
 * EDHOC_CRED_ERR_EXPIRED, EDHOC_CRED_ERR_FORMAT. */
int cred_x509_bag_chain(const struct cred_x509_bag *bag, const struct edhoc_cred_store *store,
                        size_t leaf, struct edhoc_cred *out);
void cred_x509_bag_close(struct cred_x509_bag *bag);

/* 0 when a key on `curve` can check a COSE signature of `alg` (-8 EdDSA:
 * Ed25519 / Ed448, -7 ES256: P-256, -35 ES384: P-384), else
 * EDHOC_CRED_ERR_KEY_TYPE. */
int cred_cwt_alg_curve(int alg, int curve);

/* cnf {1: COSE_Key} for a public key (edhoc_cred.pub form) with an
 * optional kid, labels in deterministic order. Returns 0 or
 * EDHOC_CRED_ERR_FORMAT (curve / key length / kid length). */
struct edhoc_cbor_writer;
int cred_put_cnf(struct edhoc_cbor_writer *w, int curve, const uint8_t *pub, size_t pub_len,
                 const uint8_t *kid, size_t kid_len);

/* CCS parsing; check_point false skips the (costly) check that an EC2 key
 * is a point of its curve, for bytes already known to hold a valid one. */
int cred_ccs_parse(struct edhoc_cred *cred, const uint8_t *ccs, size_t len, bool check_point);

/* PEM certificates -> DER list; returns the count or EDHOC_CRED_ERR_*. The
 * DER bytes are written consecutively into buf. */
int cred_pem_to_der(const uint8_t *pem, size_t len, uint8_t *buf, size_t cap, size_t *lens,
                    size_t max_certs);

/* The kid of each certificate block of a PEM text: an "EDHOC-kid: HEX"
 * line outside the blocks names the next certificate (kid_lens[i] 0: no
 * kid). Fills at most max entries; returns the number of certificate
 * blocks, or EDHOC_CRED_ERR_FORMAT (a kid that is not 1 to 16 bytes of
 * hex, two kids before one certificate, a kid after the last). */
int cred_pem_kids(const uint8_t *pem, size_t len, uint8_t (*kids)[EDHOC_CRED_MAX_KID],
                  size_t *kid_lens, size_t max);

/* Only the validity window of the leaf (the one cached in cred when there
 * is one, so no decoding). Returns 0, EDHOC_CRED_ERR_EXPIRED,
 * EDHOC_CRED_ERR_FORMAT. */
int cred_x509_check_time(const struct edhoc_cred *cred, int64_t now);

/* SHA-256 of msg into out[32]. Returns 0 or EDHOC_CRED_ERR_FORMAT.
 * (cred_openssl.c) */
int cred_sha256(const uint8_t *msg, size_t len, uint8_t out[32]);

/* Hex text (whitespace, ':' and a leading "0x" ignored) into out.
 * Returns the length or -1 (not hex, odd digit count, over cap). */
long cred_hex_decode(const uint8_t *text, size_t len, uint8_t *out, size_t cap);

/* Read a whole regular file of at most max bytes into a malloc'd buffer.
 * When private_key, fstat() of the opened file must show no group/other
 * permission (checked on the descriptor, so the file cannot be swapped
 * between check and read). Returns 0, EDHOC_CRED_ERR_FILE,
 * EDHOC_CRED_ERR_PERMISSIONS, EDHOC_CRED_ERR_TOO_LARGE; why names the file. */
int cred_read_file(const char *path, size_t max, bool private_key, uint8_t **data, size_t *len,
                   char *why, size_t why_cap);

#endif
