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

#define EDHOC_CRED_MAX_DATA 4096  /* CCS, or DER certificates of one chain */
#define EDHOC_CRED_MAX_CHAIN 4    /* certificates in an x5chain */
#define EDHOC_CRED_MAX_KID 16
#define EDHOC_CRED_MAX_ID_CRED (EDHOC_CRED_MAX_DATA + 32)

#define EDHOC_CRED_ERR_FORMAT (-3001)    /* not a CCS / certificate / key we can read */
#define EDHOC_CRED_ERR_UNKNOWN (-3002)   /* ID_CRED matches no configured credential */
#define EDHOC_CRED_ERR_UNTRUSTED (-3003) /* chain does not verify to a trust anchor */
#define EDHOC_CRED_ERR_EXPIRED (-3004)   /* certificate outside its validity window */
#define EDHOC_CRED_ERR_KEY_TYPE (-3005)  /* key type does not fit the method/suite */
#define EDHOC_CRED_ERR_FILE (-3006)      /* cannot read a file */
#define EDHOC_CRED_ERR_PERMISSIONS (-3007) /* private key file readable by others */
#define EDHOC_CRED_ERR_TOO_LARGE (-3008)

enum edhoc_cred_type {
    EDHOC_CRED_CCS = 1,  /* CWT Claims Set with a COSE_Key in 'cnf' */
    EDHOC_CRED_X509 = 2, /* X.509 certificate (leaf first when a chain) */
};

enum edhoc_id_cred_type {
    EDHOC_ID_CRED_KID = 4,     /* {4: kid} */
    EDHOC_ID_CRED_KCCS = 14,   /* {14: CCS} */
    EDHOC_ID_CRED_X5CHAIN = 33,/* {33: bstr / [+ bstr]} */
    EDHOC_ID_CRED_X5T = 34,    /* {34: COSE_CertHash [alg, hash]} */
};

struct edhoc_cred {
    enum edhoc_cred_type type;
    /* CRED_x exactly as it enters context_2/3 and TH_3/TH_4 (RFC 9528
     * Section 3.5.2): the CCS map bytes as provisioned, or the DER of the
     * leaf certificate wrapped in a CBOR byte string. Points into data[]. */
    const uint8_t *cred;
    size_t cred_len;
    /* kid: the CCS COSE_Key 'kid', or one given at load time (any type). */
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
};

/* A private authentication key (or an ephemeral key). */
struct edhoc_key {
    int curve;
    uint8_t priv[EDHOC_CRYPTO_MAX_PRIV];
    size_t priv_len;
};

#ifdef __cplusplus
}
#endif
#endif
