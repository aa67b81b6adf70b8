/* Private helpers shared by the files of the EDHOC core. */
#ifndef EDHOC_INTERNAL_H
#define EDHOC_INTERNAL_H

#include "edhoc/cbor.h"
#include "edhoc/edhoc.h"

/* Session flags */
#define EDHOC_SF_OWN_CID_SET 0x01
#define EDHOC_SF_EXPLICIT_EPH 0x02
#define EDHOC_SF_M4_DONE 0x04
#define EDHOC_SF_CID_SENT 0x08
#define EDHOC_SF_PEER_CID 0x10
/* Candidate MACs of the diagnosis are not traced: the trace shows the
 * handshake as it ran, not the variants tried after a failure. */
#define EDHOC_SF_QUIET 0x20

/* edhoc_session.dev_info */
#define EDHOC_DI_DONE 0x01      /* a Signature_or_MAC_x failed and was diagnosed */
#define EDHOC_DI_M3 0x02        /* ... in message_3 (else message_2) */
#define EDHOC_DI_SIG 0x04       /* ... a signature (methods 0/2), else a MAC */
#define EDHOC_DI_MATCH 0x08     /* dev_found makes it verify (0: RFC 9528 as written) */
#define EDHOC_DI_KID 0x10       /* dev_kid is the one-byte kid of the peer's ID_CRED_x */
#define EDHOC_DI_CRED_BSTR 0x20 /* CRED_x is a byte string: cred-wrap unwraps it */

#define EDHOC_NO_SUITE (-128)

/* The step a session was in when it failed (for error texts). */
enum edhoc_step {
    EDHOC_STEP_NONE = 0,
    EDHOC_STEP_PREPARE_M1,
    EDHOC_STEP_PROCESS_M1,
    EDHOC_STEP_PREPARE_M2,
    EDHOC_STEP_PROCESS_M2,
    EDHOC_STEP_VERIFY_M2,
    EDHOC_STEP_PREPARE_M3,
    EDHOC_STEP_PROCESS_M3,
    EDHOC_STEP_VERIFY_M3,
    EDHOC_STEP_PREPARE_M4,
    EDHOC_STEP_PROCESS_M4,
    EDHOC_STEP_PEER_ERROR,
};

/* Largest transcript / context input built on the stack: context_2 holds
 * C_R, ID_CRED_R, TH_2, CRED_R and EAD_2; TH_3 input holds TH_2,
 * PLAINTEXT_2 (which holds ID_CRED_R) and CRED_R. */
#define EDHOC_MAX_CRED_BYTES (EDHOC_CRED_MAX_DATA + 8)
#define EDHOC_MAX_TRANSCRIPT                                                                      \
    (EDHOC_MAX_PLAINTEXT + EDHOC_MAX_CRED_BYTES + EDHOC_CRYPTO_MAX_HASH + 16)

/* Whether the sender of message_2 (R) or message_3 (I) authenticates
 * with a static DH key rather than a signature (RFC 9528 Section 3.2). */
static inline bool edhoc_static_dh_sender(int method, int msg_no)
{
    return msg_no == 2 ? (method == 1 || method == 3) : (method == 2 || method == 3);
}

/* CBOR reader error -> EDHOC error. */
int edhoc_map_cbor_err(int cbor_err);

/* True when the single byte b is the encoding of an int in -24..23. */
static inline bool edhoc_is_one_byte_int(uint8_t b)
{
    return b <= 0x17 || (b >= 0x20 && b <= 0x37);
}

/* Write a connection identifier / compact kid: the int form for one-byte
 * values that have one, else a bstr. */
void edhoc_put_bstr_id(struct edhoc_cbor_writer *w, const uint8_t *id, size_t len);
/* Read one: returns 0 with the byte-string value in out (cap bytes), or
 * EDHOC_ERR_MALFORMED / _NOT_DETERMINISTIC / _CONN_ID_ENCODING (bad_enc is
 * the code used for a bstr that should have been an int) / _TOO_LARGE. */
int edhoc_get_bstr_id(struct edhoc_cbor_reader *r, uint8_t *out, size_t cap, size_t *len,
                      int bad_enc);

/* Next EAD item from r: its label and, when a bstr follows, its value.
 * Returns 0, EDHOC_ERR_MALFORMED, _NOT_DETERMINISTIC. */
int edhoc_ead_next(struct edhoc_cbor_reader *r, struct edhoc_ead_item *item);
/* Parse EAD_x bytes: well-formed items, padding dropped, others listed in
 * rx (if not NULL). Returns 0, EDHOC_ERR_MALFORMED, _NOT_DETERMINISTIC,
 * _TOO_LARGE. */
int edhoc_ead_parse(const uint8_t *p, size_t len, struct edhoc_received *rx);
/* Encode items into w. */
void edhoc_ead_write(struct edhoc_cbor_writer *w, const struct edhoc_ead_item *items, size_t n);

/* The int a one-byte int encoding stands for (b: 0x00-0x17, 0x20-0x37). */
static inline int edhoc_one_byte_int_value(uint8_t b)
{
    return b <= 0x17 ? (int)b : -1 - (int)(b - 0x20);
}

/* When map is exactly {4: bstr kid}, point kid into it and return true. */
bool edhoc_lone_kid(const uint8_t *map, size_t len, const uint8_t **kid, size_t *kid_len);

/* ID_CRED = {4: kid}, the full form of a kid. */
void edhoc_put_id_cred_kid(struct edhoc_cbor_writer *w, const uint8_t *kid, size_t len);
/* The ID_CRED map as it goes into PLAINTEXT_x: a lone kid compacted. */
void edhoc_put_id_cred_compact(struct edhoc_cbor_writer *w, const uint8_t *map, size_t len);

#endif
