/* Private helpers shared by the files of the EDHOC core. */
#ifndef EDHOC_INTERNAL_H
#define EDHOC_INTERNAL_H

/* The library's own view of struct edhoc_session: the public header
 * leaves it out and this one defines it (see the end of the session's
 * layout below). Nothing may include edhoc/edhoc.h before this file. */
#define EDHOC_SESSION_LAYOUT_PRIVATE 1
#include "edhoc/cbor.h"
#include "edhoc/edhoc.h"

#include <stdalign.h>
#include <stddef.h>

/* The private layout of struct edhoc_session (include/edhoc/edhoc.h
 * gives applications EDHOC_SESSION_SIZE opaque bytes): fields may change
 * in any release as long as they fit. */
struct edhoc_session {
    const struct edhoc_config *cfg;
    uint16_t cfg_size;      /* sizeof the application's struct edhoc_config */
    uint8_t role;           /* enum edhoc_role */
    uint8_t state;          /* enum edhoc_state */
    int8_t method;          /* -1 until known */
    int8_t suite;           /* selected suite id; -128 until known */
    int8_t retry_suite;     /* I: suite to select after error code 2; -128 none */
    int8_t suites_r_hint;   /* R: suite to put in SUITES_R; -128: all ours */
    uint8_t flags;          /* EDHOC_SF_* (private) */
    uint8_t failed_step;    /* the step that failed (for the error text) */
    int16_t error;          /* the EDHOC_ERR_* that aborted the session */
    uint8_t own_cid_len, peer_cid_len;
    uint8_t own_cid[EDHOC_MAX_CONN_ID];
    uint8_t peer_cid[EDHOC_MAX_CONN_ID];
    uint8_t eph_priv_len, peer_eph_len, own_eph_len, th_len;
    uint8_t eph_priv[EDHOC_CRYPTO_MAX_PRIV];       /* X or Y */
    uint8_t own_eph[EDHOC_CRYPTO_MAX_ECDH_PUB];    /* R: G_Y until message_2 is sent */
    uint8_t peer_eph[EDHOC_CRYPTO_MAX_ECDH_PUB];   /* I: G_Y; R: G_X */
    uint8_t th[EDHOC_CRYPTO_MAX_HASH];             /* TH_2, then TH_3, then TH_4 */
    uint8_t prk[EDHOC_CRYPTO_MAX_HASH];            /* PRK_2e -> PRK_3e2m -> PRK_4e3m */
    uint8_t prk_out[EDHOC_CRYPTO_MAX_HASH];
    /* Private: what the diagnosis of a failed Signature_or_MAC_x found
     * (edhoc_session_diagnosis); these bytes sit in what was padding. */
    uint8_t dev_found;     /* EDHOC_DEV_* under which it verifies */
    uint8_t dev_tolerated; /* EDHOC_DEV_* accepted on this handshake */
    uint8_t dev_own;       /* EDHOC_DEV_* this side emulated in that context */
    uint8_t dev_info;      /* EDHOC_DI_* (private) */
    uint8_t dev_kid;       /* the peer's one-byte kid, for the text */
    uint8_t dev_followed;  /* EDHOC_DEV_* our message_3 commits because message_2 did */
};

_Static_assert(sizeof(struct edhoc_session) <= EDHOC_SESSION_SIZE,
               "the private session layout outgrew EDHOC_SESSION_SIZE (an ABI change)");
_Static_assert(alignof(struct edhoc_session) <= 8,
               "the private session layout needs more alignment than the public one gives");

/* The first published layout of struct edhoc_config ends with
 * pad_message_1; a config smaller than that is refused. A field added
 * later is read only when the application's layout has it:
 * EDHOC_CFG_HAS(s, field). */
#define EDHOC_CONFIG_SIZE_V1 \
    (offsetof(struct edhoc_config, pad_message_1) + sizeof(size_t))
#define EDHOC_CFG_HAS(s, field)                                                         \
    ((s)->cfg_size >= offsetof(struct edhoc_config, field) + sizeof((s)->cfg->field))

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
