/*
 * edhoc/cred.h - authentication credentials, their identifiers (ID_CRED),
 * private keys, and the store that resolves a received ID_CRED to a
 * trusted credential.
 *
 * The EDHOC core never looks credentials up itself ("parse, then verify"):
 * it hands the received ID_CRED_x (always in its full map form, compact
 * encodings already expanded) to the application, which resolves it with
 * edhoc_cred_store_resolve() or its own logic and passes the resulting
 * `struct edhoc_cred` back for verification.
 */
#ifndef EDHOC_CRED_H
#define EDHOC_CRED_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "edhoc/crypto.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EDHOC_CRED_MAX_DATA    4096 /* CCS, or DER certificates of one chain */
#define EDHOC_CRED_MAX_CHAIN   4    /* certificates in an x5chain, or a chain built from a bag */
#define EDHOC_CRED_MAX_BAG     8    /* certificates in a received x5bag */
#define EDHOC_CRED_MAX_KID     16
#define EDHOC_CRED_MAX_ID_CRED (EDHOC_CRED_MAX_DATA + 32)

#define EDHOC_CRED_ERR_FORMAT      (-3001) /* not a CCS / certificate / key we can read */
#define EDHOC_CRED_ERR_UNKNOWN     (-3002) /* ID_CRED matches no configured credential */
#define EDHOC_CRED_ERR_UNTRUSTED   (-3003) /* chain does not verify to a trust anchor */
#define EDHOC_CRED_ERR_EXPIRED     (-3004) /* certificate outside its validity window */
#define EDHOC_CRED_ERR_KEY_TYPE    (-3005) /* key type does not fit the method/suite */
#define EDHOC_CRED_ERR_FILE        (-3006) /* cannot read a file */
#define EDHOC_CRED_ERR_PERMISSIONS (-3007) /* private key file readable by others */
#define EDHOC_CRED_ERR_TOO_LARGE   (-3008)
#define EDHOC_CRED_ERR_CHAIN_LOOP  (-3009) /* x5bag: the issuers found form a loop */
#define EDHOC_CRED_ERR_CHAIN_DEPTH (-3010) /* x5bag: no anchor within EDHOC_CRED_MAX_CHAIN */
#define EDHOC_CRED_ERR_AMBIGUOUS   (-3011) /* x5bag: several end-entity certificates verify */

enum edhoc_cred_type {
    EDHOC_CRED_CCS = 1,  /* CWT Claims Set with a COSE_Key in 'cnf' */
    EDHOC_CRED_X509 = 2, /* X.509 certificate (leaf first when a chain) */
    EDHOC_CRED_CWT = 3,  /* CWT (COSE_Sign1 over a claims set with 'cnf') */
};

enum edhoc_id_cred_type {
    EDHOC_ID_CRED_KID = 4,      /* {4: kid} */
    EDHOC_ID_CRED_KCWT = 13,    /* {13: CWT} (RFC 9528 Section 3.5.3.1) */
    EDHOC_ID_CRED_KCCS = 14,    /* {14: CCS} */
    EDHOC_ID_CRED_X5BAG = 32,   /* {32: bstr / [+ bstr]}, unordered (RFC 9360) */
    EDHOC_ID_CRED_X5CHAIN = 33, /* {33: bstr / [+ bstr]} */
    EDHOC_ID_CRED_X5T = 34,     /* {34: COSE_CertHash [alg, hash]} */
};

struct edhoc_cred {
    enum edhoc_cred_type type;
    /* CRED_x exactly as it enters context_2/3 and TH_3/TH_4 (RFC 9528
     * Section 3.5.2): the CCS map bytes as provisioned, the DER of the
     * leaf certificate wrapped in a CBOR byte string, or the untagged CWT
     * (the COSE_Sign1 array). Points into data[]. */
    const uint8_t *cred;
    size_t cred_len;
    /* kid: the CCS / CWT COSE_Key 'kid', or one given at load time (any
     * type: an "EDHOC-kid: HEX" line before a PEM certificate, or
     * edhoc_cred_set_kid). */
    uint8_t kid[EDHOC_CRED_MAX_KID];
    size_t kid_len;
    /* X.509: DER certificates, leaf first; point into data[]. */
    const uint8_t *certs[EDHOC_CRED_MAX_CHAIN];
    size_t cert_lens[EDHOC_CRED_MAX_CHAIN];
    size_t n_certs;
    /* The authentication public key: curve (COSE crv) and bytes in the
     * edhoc/crypto.h forms. For EC2 curves both forms are kept, since the
     * same key may be used for signing (0x04||x||y) or static DH (x). */
    int curve;
    uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
    size_t pub_len;
    uint8_t data[EDHOC_CRED_MAX_DATA];
    size_t data_len;
    /* X.509: the leaf's validity window (Unix seconds, UTC), read once when
     * the certificate is parsed so that checking it at every lookup costs
     * no decoding. has_validity is false for a CCS, and for a certificate
     * whose times could not be read (edhoc_cred_x509_validity then decodes
     * the leaf and reports the error). CWT: nbf / exp (INT64_MIN /
     * INT64_MAX when the claim is absent), has_validity always true. */
    bool has_validity;
    int64_t not_before;
    int64_t not_after;
};

/* A private authentication key (or an ephemeral key). */
struct edhoc_key {
    int curve;
    uint8_t priv[EDHOC_CRYPTO_MAX_PRIV];
    size_t priv_len;
};

/* ======================================================================
 * Everything below is built on the types above. Unless a comment says
 * otherwise, functions return 0 on success or a negative EDHOC_CRED_ERR_*
 * code and leave *out unspecified on failure. CCS and ID_CRED functions
 * and kid/x5t/kccs lookups never allocate; X.509, key and file functions
 * use the heap transiently (OpenSSL objects, file buffers) and free it
 * before returning.
 * ====================================================================== */

/* Human-readable name of an EDHOC_CRED_ERR_* code (or "unknown error"). */
const char *edhoc_cred_strerror(int err);

/* ---- Credentials ---------------------------------------------------- */

/* CCS (RFC 8392 CWT Claims Set) as a credential. The map must contain
 * cnf (8) -> {1 (COSE_Key): {1: kty, ?2: kid, -1: crv, -2: x, ?-3: y}}
 * with kty 1 (OKP: Ed25519, Ed448, X25519, X448) or 2 (EC2: P-256, P-384,
 * y required, uncompressed). Other claims (sub, iss, ...) are skipped.
 * cred->cred is exactly `ccs` (copied into cred->data); pub is 0x04||x||y
 * for EC2 and the raw key for OKP; kid is the COSE_Key kid (or empty).
 * The whole buffer must be one deterministic CBOR item.
 * Returns 0, EDHOC_CRED_ERR_FORMAT (malformed, unsupported kty/crv, wrong
 * key length, trailing bytes), EDHOC_CRED_ERR_TOO_LARGE. */
int edhoc_cred_from_ccs(struct edhoc_cred *cred, const uint8_t *ccs, size_t len);

/* Build a CCS {2: subject (if non-NULL), 8: {1: COSE_Key}} for a public
 * key (EC2 pub as 0x04||x||y or x-only is refused; OKP raw) and parse it
 * into cred. kid may be empty (kid_len 0, then no kid in the COSE_Key).
 * Returns 0, EDHOC_CRED_ERR_FORMAT (bad curve/key length),
 * EDHOC_CRED_ERR_TOO_LARGE. */
int edhoc_cred_build_ccs(struct edhoc_cred *cred, int curve, const uint8_t *pub, size_t pub_len,
                         const uint8_t *kid, size_t kid_len, const char *subject);

/* X.509 from DER or PEM: one certificate, a DER concatenation, or several
 * PEM blocks, leaf first (at most EDHOC_CRED_MAX_CHAIN). cred->cred is the
 * leaf DER wrapped in a CBOR bstr (RFC 9528 Section 3.5.2); curve/pub come
 * from the leaf's SubjectPublicKeyInfo (Ed25519, Ed448, X25519, X448,
 * P-256, P-384). No trust decision is taken here (see the store).
 * Returns 0, EDHOC_CRED_ERR_FORMAT (not a certificate, unsupported key),
 * EDHOC_CRED_ERR_TOO_LARGE (chain over EDHOC_CRED_MAX_DATA/MAX_CHAIN). */
int edhoc_cred_from_x509(struct edhoc_cred *cred, const uint8_t *data, size_t len);

/* Same from separate DER certificates, leaf first (as received in an
 * x5chain). Same returns. */
int edhoc_cred_from_der_chain(struct edhoc_cred *cred, const uint8_t *const *certs,
                              const size_t *lens, size_t n);

/* CWT (RFC 8392) as a credential: an untagged COSE_Sign1 (RFC 9052
 * Section 4.2) [protected: bstr .cbor {1: alg, ?4: issuer kid},
 * unprotected: {?4: issuer kid}, payload: bstr .cbor claims, signature:
 * bstr], alg -8 (EdDSA), -7 (ES256) or -35 (ES384) and a signature of that
 * algorithm's length. The claims are a CCS as edhoc_cred_from_ccs reads
 * it (cnf with a COSE_Key required), where iss (1) and sub (2) must be
 * text and exp (4), nbf (5), iat (6) integers (NumericDate without
 * fraction). Other header parameters (crit among them) are refused.
 * cred->cred is the CWT itself (RFC 9528 Section 3.5.2: "CRED_x SHALL be
 * the untagged CWT"); curve, pub and kid come from the COSE_Key, the
 * validity window from nbf / exp. The signature is not checked here (see
 * edhoc_cwt_verify and the store). Returns 0, EDHOC_CRED_ERR_FORMAT,
 * EDHOC_CRED_ERR_TOO_LARGE. */
int edhoc_cred_from_cwt(struct edhoc_cred *cred, const uint8_t *cwt, size_t len);

/* The issuer's part of a CWT credential (one edhoc_cred_from_cwt accepted):
 * COSE algorithm and the issuer kid of its headers (NULL / 0 when none;
 * the protected one when both carry one). Returns 0 or
 * EDHOC_CRED_ERR_FORMAT. */
int edhoc_cwt_issuer(const struct edhoc_cred *cwt, int *alg, const uint8_t **issuer_kid,
                     size_t *issuer_kid_len);

/* Check a CWT credential's COSE_Sign1 signature with an issuer public key
 * (curve and pub in the edhoc_cred forms; the curve must be that of the
 * CWT's alg). Returns 0, EDHOC_CRED_ERR_UNTRUSTED (does not verify, or a
 * key of another curve), EDHOC_CRED_ERR_FORMAT. */
int edhoc_cwt_verify(const struct edhoc_cred *cwt, int issuer_curve, const uint8_t *issuer_pub,
                     size_t issuer_pub_len);

struct edhoc_cwt_params {
    /* The subject's public key (edhoc_cred.pub form) and the COSE_Key kid
     * (kid_len 0: none). */
    int curve;
    const uint8_t *pub;
    size_t pub_len;
    const uint8_t *kid;
    size_t kid_len;
    const char *subject;     /* sub; NULL: none */
    const char *issuer_name; /* iss; NULL: none */
    int64_t not_before;      /* nbf */
    int64_t not_after;       /* exp */
    int64_t issued_at;       /* iat; 0: none */
    /* Signing key (Ed25519, Ed448, P-256, P-384) and the kid that names it
     * in the protected header (issuer_kid_len 0: none). */
    const struct edhoc_key *issuer_key;
    const uint8_t *issuer_kid;
    size_t issuer_kid_len;
};

/* Make a CWT: claims {?1: iss, ?2: sub, 4: exp, 5: nbf, ?6: iat, 8: {1:
 * COSE_Key}} (deterministic order) signed as an untagged COSE_Sign1 with
 * the issuer key, parsed into cred. Returns 0, EDHOC_CRED_ERR_KEY_TYPE
 * (issuer key cannot sign), EDHOC_CRED_ERR_FORMAT, EDHOC_CRED_ERR_TOO_LARGE. */
int edhoc_cwt_create(struct edhoc_cred *cred, const struct edhoc_cwt_params *p);

/* Auto-detect: PEM certificate(s) (a line "EDHOC-kid: HEX" before a
 * certificate's BEGIN line gives it a kid), DER certificate(s), CCS as
 * CBOR binary, CWT (a CBOR array) as CBOR binary, or CCS / CWT / DER as
 * hex text (whitespace ignored). Same returns. */
int edhoc_cred_parse(struct edhoc_cred *cred, const uint8_t *data, size_t len);

/* Attach a kid to any credential (the CCS kid is set by parsing already).
 * Returns 0 or EDHOC_CRED_ERR_TOO_LARGE (over EDHOC_CRED_MAX_KID). */
int edhoc_cred_set_kid(struct edhoc_cred *cred, const uint8_t *kid, size_t kid_len);

/* Deep copy (pointers re-based into dst->data). */
void edhoc_cred_copy(struct edhoc_cred *dst, const struct edhoc_cred *src);

/* Same CRED_x bytes (and so the same key). */
bool edhoc_cred_equal(const struct edhoc_cred *a, const struct edhoc_cred *b);

/* The public key in the ECDH form of edhoc/crypto.h (EC2: x only; OKP
 * raw), for static-DH methods. Returns 0 or EDHOC_CRED_ERR_KEY_TYPE when
 * the key is a signature-only curve (Ed25519, Ed448). */
int edhoc_cred_dh_pub(const struct edhoc_cred *cred, const uint8_t **pub, size_t *len);

/* Validity window of an X.509 leaf (seconds since the epoch, UTC): the
 * one cached at parse time (has_validity), else read by decoding the leaf.
 * Returns 0 or EDHOC_CRED_ERR_FORMAT (not X.509, unreadable times). */
int edhoc_cred_x509_validity(const struct edhoc_cred *cred, int64_t *not_before,
                             int64_t *not_after);

/* ---- Method / suite fit --------------------------------------------- */

/* The COSE curve the authentication key of `initiator` (true) or responder
 * must have for `method` (0..3) and cipher `suite`: the suite's signature
 * curve (Ed25519 6, Ed448 7, P-256 1 for ES256, P-384 2 for ES384) when
 * that side signs, else the suite's ECDH curve (X25519 4, X448 5, P-256 1,
 * P-384 2). *for_dh (may be NULL) tells which. Returns the curve (> 0) or
 * EDHOC_CRED_ERR_KEY_TYPE for an unknown method or suite. */
int edhoc_cred_auth_curve(int method, bool initiator, int suite, bool *for_dh);

/* Does cred's key fit method/role/suite? Returns 0 or
 * EDHOC_CRED_ERR_KEY_TYPE (wrong curve, unknown method or suite). */
int edhoc_cred_check_key_type(const struct edhoc_cred *cred, int method, bool initiator, int suite);

/* ---- ID_CRED (RFC 9528 Section 3.5.3) -------------------------------- */

#define EDHOC_COSE_SHA256_64 (-15) /* COSE_CertHash alg of RFC 9529 trace 1 */

/* A parsed ID_CRED_x map. Pointers point into the parsed buffer.
 *
 * A map may hold several header parameters (RFC 9528 Section 3.5.3: "one
 * or more"). Every entry we know is parsed into its fields below and its
 * bit set in `labels`; `type` is the one entry a lookup goes by:
 *  - the entry that carries the credential (kcwt 13, kccs 14, x5bag 32,
 *    x5chain 33), when there is one: the credential itself is there, and
 *    a reference beside it adds nothing a lookup could trust more. At
 *    most one such entry: two would name two credentials.
 *  - else x5t (a hash names one certificate), else kid (which RFC 9052
 *    Section 3.1 says need not be unique).
 * An x5t beside an x5bag picks the end-entity certificate out of the bag
 * (RFC 9528 Section 3.5.2: the bag's certificates are unordered); beside
 * an x5chain it must be the hash of the chain's first certificate. Labels
 * we do not know are skipped (COSE header parameters that are not
 * understood are ignored, RFC 9052 Section 3); a map with none we know,
 * or with a label twice, is malformed. */
#define EDHOC_ID_CRED_LABEL_BIT(type) (1u << ((unsigned)(type)&31u))
struct edhoc_id_cred {
    enum edhoc_id_cred_type type;
    unsigned labels;    /* EDHOC_ID_CRED_LABEL_BIT of every entry parsed */
    const uint8_t *kid; /* KID: the kid bytes */
    size_t kid_len;
    const uint8_t *ccs; /* KCCS: the encoded CCS map */
    size_t ccs_len;
    const uint8_t *cwt; /* KCWT: the encoded (untagged) CWT */
    size_t cwt_len;
    int x5t_alg; /* X5T: -15 (SHA-256/64) or -16 (SHA-256) */
    const uint8_t *x5t_hash;
    size_t x5t_hash_len;
    /* X5CHAIN: DER, leaf first (at most EDHOC_CRED_MAX_CHAIN); X5BAG: DER in
     * the order received (at most EDHOC_CRED_MAX_BAG). */
    const uint8_t *certs[EDHOC_CRED_MAX_BAG];
    size_t cert_lens[EDHOC_CRED_MAX_BAG];
    size_t n_certs;
};

/* Encode ID_CRED_x for cred as the full map, always one entry: kid
 * {4: bstr} (needs a kid; any credential type), kccs {14: CCS} (CCS only),
 * kcwt {13: CWT} (CWT only), x5t {34: [alg, hash]} (X.509 only; x5t_alg 0
 * means -15 SHA-256/64, also -16 SHA-256), x5chain {33: bstr} for one
 * certificate or {33: [+ bstr]} for a chain, x5bag the same under 32 (the
 * leaf and its intermediates; X.509 only).
 * *out_len receives the length. Returns 0, EDHOC_CRED_ERR_FORMAT (type not
 * possible for this credential, no kid, unknown hash alg),
 * EDHOC_CRED_ERR_TOO_LARGE (cap). */
int edhoc_id_cred_encode(const struct edhoc_cred *cred, enum edhoc_id_cred_type type, int x5t_alg,
                         uint8_t *out, size_t cap, size_t *out_len);

/* Parse a full ID_CRED_x map (deterministic CBOR, no trailing bytes) with
 * one or more entries, as struct edhoc_id_cred above describes. The KCCS
 * value is only checked to be a map and the KCWT value an array here
 * (edhoc_cred_from_ccs / edhoc_cred_from_cwt check the rest).
 * Returns 0 or EDHOC_CRED_ERR_FORMAT. */
int edhoc_id_cred_parse(const uint8_t *map, size_t len, struct edhoc_id_cred *out);

/* COSE_CertHash of a DER certificate: SHA-256 truncated to 8 bytes (-15)
 * or full (-16). Returns 0 or EDHOC_CRED_ERR_FORMAT (other alg). */
int edhoc_cred_cert_hash(int alg, const uint8_t *der, size_t der_len, uint8_t *out,
                         size_t *out_len);

/* ---- Credential store ------------------------------------------------ */

/* Fixed capacity, no heap: sizeof(struct edhoc_cred_store) is about
 * (EDHOC_CRED_STORE_MAX_CREDS + EDHOC_CRED_STORE_MAX_ANCHORS) * 4.4 KB,
 * i.e. ~250 KB: allocate it statically or on the heap, not on the stack.
 * 48 holds every built-in demo credential (edhoc_demo_trust adds 40). */
#define EDHOC_CRED_STORE_MAX_CREDS   48
#define EDHOC_CRED_STORE_MAX_ANCHORS 8

/* Facts about one configured credential, computed when it is added. */
struct edhoc_cred_store_facts {
    uint8_t leaf_sha256[32]; /* X.509: SHA-256 of the leaf DER, i.e. its x5t
                              * for -16 and, first 8 bytes, for -15 */
    bool has_leaf_sha256;
    bool pub_checked; /* pub was found to be a valid key of curve */
};

struct edhoc_cred_store {
    struct edhoc_cred creds[EDHOC_CRED_STORE_MAX_CREDS]; /* accepted peers */
    size_t n_creds;
    struct edhoc_cred anchors[EDHOC_CRED_STORE_MAX_ANCHORS]; /* CA certificates */
    size_t n_anchors;
    int64_t now; /* validation time (Unix seconds); 0 = the current time */
    /* What edhoc_cred_store_add_cred worked out once about creds[i], so
     * that a lookup hashes and parses nothing. creds[] must therefore only
     * be filled through edhoc_cred_store_add_cred (an entry put there by
     * hand has no facts and is looked up the slow way). */
    struct edhoc_cred_store_facts facts[EDHOC_CRED_STORE_MAX_CREDS];
};

void edhoc_cred_store_init(struct edhoc_cred_store *store);
/* Verify certificates at this time instead of now (tests). */
void edhoc_cred_store_set_time(struct edhoc_cred_store *store, int64_t unix_seconds);
/* A configured peer credential (CCS or X.509), accepted as is. What a
 * lookup needs is worked out here, once: the leaf's SHA-256 (x5t), the
 * validity window (when cred lacks it), the key check of a CCS.
 * Returns 0 or EDHOC_CRED_ERR_TOO_LARGE (store full). */
int edhoc_cred_store_add_cred(struct edhoc_cred_store *store, const struct edhoc_cred *cred);
/* A trust anchor: an X.509 CA certificate (only the leaf of `ca` is used).
 * Returns 0, EDHOC_CRED_ERR_FORMAT (not X.509), EDHOC_CRED_ERR_TOO_LARGE. */
int edhoc_cred_store_add_anchor(struct edhoc_cred_store *store, const struct edhoc_cred *ca);
/* Load a trust file: every certificate in it (PEM or DER) that is a CA
 * (basicConstraints cA) becomes an anchor, every other certificate and a
 * CCS (binary or hex) a configured credential. why (may be NULL) receives
 * a message naming the file on failure. Returns 0, EDHOC_CRED_ERR_FILE,
 * EDHOC_CRED_ERR_FORMAT, EDHOC_CRED_ERR_TOO_LARGE. */
int edhoc_cred_store_add_file(struct edhoc_cred_store *store, const char *path, char *why,
                              size_t why_cap);

/* Resolve a received ID_CRED_x (full map form, the entry struct
 * edhoc_id_cred's `type` names) to a trusted credential:
 *  - kid: the configured credential with that kid;
 *  - x5t: the configured X.509 credential whose leaf has that hash;
 *  - kccs: accepted only when equal to a configured credential (same
 *    bytes or same public key); *out is then the received CCS;
 *  - x5chain: a configured X.509 credential with the same leaf DER
 *    (compared as bytes; the leaf is not decoded, key and validity are
 *    the configured ones), else the chain verified with OpenSSL against
 *    the anchors (signatures, validity at store->now, basic constraints);
 *    *out is the received chain.
 *  - x5bag: the end-entity certificate is the one an x5t beside the bag
 *    names, else each certificate of the bag that is no CA: a configured
 *    credential with that leaf, else the chain built from it through the
 *    bag's certificates (in any order; duplicates and certificates that
 *    issue nothing on the way are ignored) to an anchor, at most
 *    EDHOC_CRED_MAX_CHAIN certificates, verified as an x5chain is. An
 *    issuer already on the path is EDHOC_CRED_ERR_CHAIN_LOOP, no anchor
 *    within the depth EDHOC_CRED_ERR_CHAIN_DEPTH, two end-entity
 *    certificates that both verify EDHOC_CRED_ERR_AMBIGUOUS (name the
 *    leaf with an x5t beside the bag). *out is the chain, leaf first.
 *  - kcwt: the CWT parsed (edhoc_cred_from_cwt), its signature checked
 *    with a configured credential's or an anchor's key whose kid is the
 *    CWT's issuer kid (every key of the algorithm's curve when the CWT
 *    names none), and nbf <= now <= exp; a CWT equal to a configured
 *    credential is accepted as configured (times still checked).
 * X.509 and CWT results are checked against the validity window in every
 * case (also when found by kid).
 * Configured credentials are found by comparing bytes with what
 * edhoc_cred_store_add_cred cached: no decoding, hashing or key check
 * (only certificates a peer appends to a configured chain are read).
 * Returns 0, EDHOC_CRED_ERR_FORMAT (bad map or certificate/CCS),
 * EDHOC_CRED_ERR_UNKNOWN (nothing matches: EDHOC error code 3),
 * EDHOC_CRED_ERR_UNTRUSTED (chain or CWT does not verify to an anchor or
 * issuer), EDHOC_CRED_ERR_EXPIRED (outside the validity window),
 * EDHOC_CRED_ERR_CHAIN_LOOP, EDHOC_CRED_ERR_CHAIN_DEPTH,
 * EDHOC_CRED_ERR_AMBIGUOUS. */
int edhoc_cred_store_resolve(const struct edhoc_cred_store *store, const uint8_t *id_cred,
                             size_t len, struct edhoc_cred *out);

/* ---- Private keys ---------------------------------------------------- */

/* A fresh key pair from the system CSPRNG (curve 1, 2, 4, 5, 6, 7).
 * Returns 0, EDHOC_CRED_ERR_KEY_TYPE (curve). */
int edhoc_key_generate(struct edhoc_key *key, int curve);
/* Public key of key in the signature form of edhoc/crypto.h (EC2
 * 0x04||x||y, OKP raw): the form of edhoc_cred.pub. Returns 0 or
 * EDHOC_CRED_ERR_FORMAT (invalid private key). */
int edhoc_key_public(const struct edhoc_key *key, uint8_t *pub, size_t *pub_len);
/* Does key belong to cred's public key? Returns 0 or EDHOC_CRED_ERR_KEY_TYPE. */
int edhoc_key_check_cred(const struct edhoc_key *key, const struct edhoc_cred *cred);

/* PEM (PKCS#8 "PRIVATE KEY", also "EC PRIVATE KEY") or raw hex text. Raw
 * hex does not name its curve: curve_hint (usually the credential's
 * curve; 0 = guess from the length, 48 P-384, 56 X448, 57 Ed448) gives
 * it. Returns 0, EDHOC_CRED_ERR_FORMAT (unreadable, unsupported curve,
 * length does not fit curve_hint or is ambiguous). */
int edhoc_key_parse(struct edhoc_key *key, const uint8_t *data, size_t len, int curve_hint);
/* PKCS#8 PEM text (NUL-terminated) into out. Returns 0,
 * EDHOC_CRED_ERR_FORMAT, EDHOC_CRED_ERR_TOO_LARGE. */
int edhoc_key_to_pem(const struct edhoc_key *key, char *out, size_t cap, size_t *out_len);

/* Load a private key file. Refused when its mode grants any permission to
 * group or others: EDHOC_CRED_ERR_PERMISSIONS, and why says "<file> ...
 * run: chmod 600 <file>". why (may be NULL) receives a message naming the
 * file on any failure. Returns 0, EDHOC_CRED_ERR_FILE,
 * EDHOC_CRED_ERR_PERMISSIONS, EDHOC_CRED_ERR_FORMAT. */
int edhoc_key_load_file(struct edhoc_key *key, const char *path, int curve_hint, char *why,
                        size_t why_cap);
/* Write key as PKCS#8 PEM into a new file created with mode 0600 (an
 * existing file is replaced only when overwrite). Returns 0,
 * EDHOC_CRED_ERR_FILE, EDHOC_CRED_ERR_FORMAT. */
int edhoc_key_write_file(const struct edhoc_key *key, const char *path, bool overwrite, char *why,
                         size_t why_cap);

/* Load a credential file (see edhoc_cred_parse for the formats).
 * Returns 0, EDHOC_CRED_ERR_FILE, EDHOC_CRED_ERR_FORMAT,
 * EDHOC_CRED_ERR_TOO_LARGE. */
int edhoc_cred_load_file(struct edhoc_cred *cred, const char *path, char *why, size_t why_cap);

/* ---- X.509 creation (keygen) ---------------------------------------- */

struct edhoc_x509_params {
    const char *subject_cn; /* CN of the new certificate */
    int64_t not_before;     /* Unix seconds */
    int64_t not_after;
    uint64_t serial; /* 0 = random */
    bool is_ca;      /* basicConstraints cA=TRUE, keyCertSign */
    /* Issuer: NULL = self-signed with `subject_key` (impossible for X25519
     * and X448 keys, which cannot sign). */
    const struct edhoc_cred *issuer;
    const struct edhoc_key *issuer_key;
    /* Leaf without any v3 extension (no basicConstraints, no key
     * identifiers): the smallest certificate, for constrained links. */
    bool no_extensions;
};

/* Certificate for subject_key's public key; the result (leaf first,
 * followed by the issuer's certificates except a self-signed root) is
 * parsed into cred. Returns 0,
 * EDHOC_CRED_ERR_KEY_TYPE (self-signed X25519/X448, issuer key cannot
 * sign or does not match the issuer certificate), EDHOC_CRED_ERR_FORMAT,
 * EDHOC_CRED_ERR_TOO_LARGE. */
int edhoc_x509_create(struct edhoc_cred *cred, const struct edhoc_key *subject_key,
                      const struct edhoc_x509_params *params);
/* PEM text of cred's certificates (leaf first). Returns 0,
 * EDHOC_CRED_ERR_FORMAT, EDHOC_CRED_ERR_TOO_LARGE. */
int edhoc_x509_to_pem(const struct edhoc_cred *cred, char *out, size_t cap, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif
