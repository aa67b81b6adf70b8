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
    uint16_t cfg_size;    /* sizeof the application's struct edhoc_config */
    uint8_t role;         /* enum edhoc_role */
    uint8_t state;        /* enum edhoc_state */
    int8_t method;        /* -1 until known */
    int8_t suite;         /* selected suite id; -128 until known */
    int8_t retry_suite;   /* I: suite to select after error code 2; -128 none */
    int8_t suites_r_hint; /* R: suite to put in SUITES_R; -128: all ours */
    uint8_t flags;        /* EDHOC_SF_* (private) */
    uint8_t failed_step;  /* the step that failed (for the error text) */
    int16_t error;        /* the EDHOC_ERR_* that aborted the session */
    uint8_t own_cid_len, peer_cid_len;
    uint8_t own_cid[EDHOC_MAX_CONN_ID];
    uint8_t peer_cid[EDHOC_MAX_CONN_ID];
    uint8_t eph_priv_len, peer_eph_len, own_eph_len, th_len;
    uint8_t eph_priv[EDHOC_CRYPTO_MAX_PRIV];     /* X or Y */
    uint8_t own_eph[EDHOC_CRYPTO_MAX_ECDH_PUB];  /* R: G_Y until message_2 is sent */
    uint8_t peer_eph[EDHOC_CRYPTO_MAX_ECDH_PUB]; /* I: G_Y; R: G_X */
    uint8_t th[EDHOC_CRYPTO_MAX_HASH];           /* TH_2, then TH_3, then TH_4 */
    uint8_t prk[EDHOC_CRYPTO_MAX_HASH];          /* PRK_2e -> PRK_3e2m -> PRK_4e3m */
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
#define EDHOC_CONFIG_SIZE_V1 (offsetof(struct edhoc_config, pad_message_1) + sizeof(size_t))
#define EDHOC_CFG_HAS(s, field)                                                                    \
    ((s)->cfg_size >= offsetof(struct edhoc_config, field) + sizeof((s)->cfg->field))

/* Session flags */
#define EDHOC_SF_OWN_CID_SET  0x01
#define EDHOC_SF_EXPLICIT_EPH 0x02
#define EDHOC_SF_M4_DONE      0x04
#define EDHOC_SF_CID_SENT     0x08
#define EDHOC_SF_PEER_CID     0x10
/* Candidate MACs of the diagnosis are not traced: the trace shows the
 * handshake as it ran, not the variants tried after a failure. */
#define EDHOC_SF_QUIET 0x20

/* edhoc_session.dev_info */
#define EDHOC_DI_DONE      0x01 /* a Signature_or_MAC_x failed and was diagnosed */
#define EDHOC_DI_M3        0x02 /* ... in message_3 (else message_2) */
#define EDHOC_DI_SIG       0x04 /* ... a signature (methods 0/2), else a MAC */
#define EDHOC_DI_MATCH     0x08 /* dev_found makes it verify (0: RFC 9528 as written) */
#define EDHOC_DI_KID       0x10 /* dev_kid is the one-byte kid of the peer's ID_CRED_x */
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
#define EDHOC_MAX_TRANSCRIPT                                                                       \
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

/* ---- shared by the files of the EDHOC core ---- */

static inline const struct edhoc_suite *edhoc_suite_of(const struct edhoc_session *s)
{
    return edhoc_suite_find(s->suite);
}

static inline size_t edhoc_hash_len_of(const struct edhoc_suite *su)
{
    return edhoc_crypto_hash_len(su->hash);
}

static inline void edhoc_trace(const struct edhoc_session *s, const char *name, const uint8_t *v,
                               size_t len)
{
    if (s->cfg && s->cfg->trace && !(s->flags & EDHOC_SF_QUIET))
        s->cfg->trace(s->cfg->trace_ctx, name, v, len);
}

static inline int edhoc_crypto_err(int rc)
{
    return rc ? EDHOC_ERR_CRYPTO : 0;
}

/* What tells the authentication of message_2 from that of message_3
 * (RFC 9528 Sections 5.3.2 and 5.4.2): KDF labels and the names of the
 * intermediate values. The steps themselves are the same. */
struct edhoc_auth_msg {
    int msg_no;         /* 2 or 3 */
    int64_t salt_label; /* SALT_3e2m / SALT_4e3m */
    int64_t mac_label;  /* MAC_2 / MAC_3 */
    const char *salt, *dh, *prk, *context, *mac, *to_be_signed, *sig_or_mac, *plaintext;
    const char *input_th, *th; /* the transcript hash that follows */
};

/* What goes into context_x = << ? C_R, ID_CRED_x, TH_x, CRED_x, ? EAD_x >>
 * (C_R for message_2 only) and, for a signature, into the COSE protected
 * header, and how: as RFC 9528 says, or with the deviations of deployed
 * implementations (context_deviate). */
struct edhoc_context_in {
    const uint8_t *c_r; /* NULL for message_3 */
    size_t c_r_len;
    bool c_r_bstr; /* c-bstr: C_R as a byte string even with an int form */
    const uint8_t *id_cred;
    size_t id_cred_len;
    const uint8_t *cred;
    size_t cred_len;
    bool cred_wrapped; /* cred-wrap: CRED_x inside an extra byte string */
    const uint8_t *ead;
    size_t ead_len;
    /* kid-int / id-cred-compact forms of ID_CRED_x (id_cred points here) */
    uint8_t id_buf[EDHOC_CRED_MAX_KID + 10];
};

typedef int (*edhoc_process_fn)(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                struct edhoc_received *rx);
typedef int (*edhoc_verify_fn)(struct edhoc_session *s, const struct edhoc_received *rx,
                               const struct edhoc_cred *cred);

/* session.c (session set-up, accessors, abort) */
void edhoc_wipe_secrets(struct edhoc_session *s);
void edhoc_received_wipe(struct edhoc_received *rx);
int edhoc_fail(struct edhoc_session *s, int err, enum edhoc_step step);
int edhoc_ensure_own_cid(struct edhoc_session *s);
bool edhoc_suite_in(const int *list, size_t n, int suite);
int edhoc_preferred_common(const struct edhoc_config *cfg, const int *list, size_t n);

/* keys.c (key schedule) */
int edhoc_kdf_session(const struct edhoc_session *s, const uint8_t *prk, int64_t label,
                      const uint8_t *ctx, size_t ctx_len, uint8_t *out, size_t len);
int edhoc_hash_session(const struct edhoc_session *s, const uint8_t *in, size_t len, uint8_t *out);
int edhoc_compute_th_2(struct edhoc_session *s, const uint8_t *g_y, size_t g_y_len);
int edhoc_compute_prk_2e(struct edhoc_session *s, const uint8_t *peer_eph, size_t peer_len);
int edhoc_derive_auth_prk(struct edhoc_session *s, const struct edhoc_auth_msg *m, bool static_dh,
                          const uint8_t *priv, const uint8_t *pub, size_t pub_len,
                          uint8_t *prk_out);
int edhoc_advance_key_schedule(struct edhoc_session *s, const struct edhoc_auth_msg *m,
                               const uint8_t *pt, size_t pt_len, const struct edhoc_cred *cred,
                               const uint8_t *prk_next);
bool edhoc_beyond_one_expand(const struct edhoc_suite *su, size_t len);

/* aead.c (AEAD of message_3 and message_4) */
int edhoc_seal(struct edhoc_session *s, int msg_no, const uint8_t *pt, size_t pt_len, uint8_t *out,
               size_t cap, size_t *out_len);
int edhoc_open_message(struct edhoc_session *s, int msg_no, const uint8_t *msg, size_t len,
                       struct edhoc_received *rx, size_t *pt_len);

/* ead.c (EAD items to and from the application) */
int edhoc_deliver_ead(const struct edhoc_session *s, int message, const uint8_t *p, size_t len);
int edhoc_own_ead(const struct edhoc_config *c, int message, uint8_t *buf, size_t cap, size_t *len);

/* diagnosis.c (deviations of deployed implementations) */
bool edhoc_cred_is_bstr(const uint8_t *cred, size_t len, const uint8_t **content,
                        size_t *content_len);
unsigned edhoc_deviations_applicable(const struct edhoc_context_in *rfc);
void edhoc_context_deviate(const struct edhoc_context_in *rfc, unsigned mask,
                           struct edhoc_context_in *out);
void edhoc_diagnosis_text(const struct edhoc_session *s, char *buf, size_t cap);

/* auth.c (authentication of message_2 and message_3) */
int edhoc_own_id_cred(const struct edhoc_config *c, uint8_t *buf, size_t cap, const uint8_t **map,
                      size_t *len);
extern const struct edhoc_auth_msg edhoc_auth_msg_2;
extern const struct edhoc_auth_msg edhoc_auth_msg_3;
int edhoc_build_own_plaintext(struct edhoc_session *s, const struct edhoc_auth_msg *m,
                              uint8_t *prk_next, uint8_t *pt, size_t cap, size_t *pt_len);
int edhoc_verify_step(struct edhoc_session *s, const struct edhoc_received *rx,
                      const struct edhoc_cred *cred, enum edhoc_role role,
                      enum edhoc_state expected, const struct edhoc_auth_msg *m,
                      enum edhoc_step step, enum edhoc_state next);
int edhoc_handle_message(struct edhoc_session *s, const uint8_t *msg, size_t len,
                         struct edhoc_received *rx, edhoc_cred_resolver resolve, void *resolve_ctx,
                         edhoc_process_fn process, edhoc_verify_fn verify,
                         enum edhoc_step verify_step);

#endif
