/*
 * The responder engine: EDHOC over CoAP (RFC 9528 Appendix A.2, the
 * RFC 9668 combined request, and the bare framing of devices that predate
 * A.2), the OSCORE contexts it establishes, and the OSCORE-protected
 * resources. Works on CoAP message bytes; no sockets, no libcoap.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "edhoc/coap_msg.h"
#include "edhoc/edhoc.h"
#include "edhoc/oscore.h"
#include "edhoc/state.h"
#include "edhoc/blockwise.h"
#include "edhoc/server_tables.h"
#include "edhoc/transport.h"
#include "edhoc/amplification.h"
#include "edhoc/reuseport.h"

#define MAX_OBSERVERS 64
#define MAX_PEER_NAME 64
#define CF_TEXT 0
#define CF_LINK_FORMAT 40
/* Established contexts whose first OSCORE request is still to be
 * reported (interop records); the oldest gives way. */
#define FIRST_REQUESTS 32

/* ---- Connection identifier prefixes ---- */

long edhoc_coap_cid_encode(const uint8_t *cid, size_t len, uint8_t *out, size_t cap)
{
    if (len > EDHOC_MAX_CONN_ID)
        return -1;
    if (len == 1 && (cid[0] <= 0x17 || (cid[0] >= 0x20 && cid[0] <= 0x37))) {
        if (cap < 1)
            return -1;
        out[0] = cid[0];
        return 1;
    }
    if (cap < len + 1)
        return -1;
    out[0] = (uint8_t)(0x40 | len);
    memcpy(out + 1, cid, len);
    return (long)len + 1;
}

long edhoc_coap_cid_decode(const uint8_t *p, size_t len, uint8_t *cid, size_t *cid_len)
{
    if (len < 1)
        return -1;
    if (p[0] <= 0x17 || (p[0] >= 0x20 && p[0] <= 0x37)) {
        cid[0] = p[0];
        *cid_len = 1;
        return 1;
    }
    if ((p[0] & 0xe0) == 0x40 && (p[0] & 0x1f) <= EDHOC_MAX_CONN_ID) {
        size_t n = p[0] & 0x1f;
        if (len < n + 1)
            return -1;
        /* A one-byte identifier with an int form must use it (3.3.2). */
        if (n == 1 && (p[1] <= 0x17 || (p[1] >= 0x20 && p[1] <= 0x37)))
            return -1;
        memcpy(cid, p + 1, n);
        *cid_len = n;
        return (long)n + 1;
    }
    return -1;
}

long edhoc_coap_bstr_item_len(const uint8_t *p, size_t len)
{
    if (len < 1 || (p[0] & 0xe0) != 0x40)
        return -1;
    unsigned ai = p[0] & 0x1f;
    size_t head, n;
    if (ai < 24) {
        head = 1;
        n = ai;
    } else if (ai == 24 && len >= 2) {
        head = 2;
        n = p[1];
    } else if (ai == 25 && len >= 3) {
        head = 3;
        n = (size_t)p[1] << 8 | p[2];
    } else if (ai == 26 && len >= 5) {
        head = 5;
        n = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
    } else {
        return -1;
    }
    if (len - head < n)
        return -1;
    return (long)(head + n);
}

/* ---- Server state ---- */

/* What names a context (RFC 8613 Section 3.3): its ID Context -- none,
 * or present and possibly empty, which derive different keys -- together
 * with its Recipient ID. */
struct ctx_key {
    uint8_t rid[OSCORE_MAX_ID];
    uint8_t rid_len;
    bool has_idc;
    uint8_t idc_len;
    uint8_t idc[OSCORE_MAX_ID_CONTEXT];
};

/* In srv->ctx_pool, named by index: the links are 4 bytes each, and the
 * whole stays within 256 bytes (a million contexts: `bench contexts`). */
struct peer_ctx {
    struct oscore_context osc;
    struct edhoc_server *srv;
    uint32_t self;           /* its index */
    uint32_t chain;          /* next in its srv->contexts chain */
    struct edhoc_ilink lru;  /* in srv->ctx_lru (EDHOC-derived only) */
    uint32_t used_ds;        /* last verified request, tenths of a second (to_ds) */
    struct ctx_key key;
    bool is_static;
    uint8_t use;             /* USE_DIRTY */
};

/* With group commit, a context's marks (store_ssn), in a side table by
 * context index (the context itself has no byte to spare): `queued` went
 * to the state writer with `ticket` (durable once edhoc_state_wait says
 * so; ticket 0: durable already). */
struct ctx_mark {
    uint64_t queued, ticket;
};
_Static_assert(sizeof(struct peer_ctx) <= 256, "a context within 256 bytes");

struct pending {
    bool used;
    bool indexed; /* in pending_by_c_r (and pending_by_peer when bare) */
    uint8_t framing;
    uint8_t c_r[EDHOC_MAX_CONN_ID];
    uint8_t c_r_len;
    uint64_t started_ms;
    uint64_t seq; /* age order for eviction */
    char peer[MAX_PEER_NAME];
    size_t bytes; /* EDHOC bytes so far (message_1 + message_2) */
    const struct edhoc_config *cfg;
    edhoc_cred_resolver resolve;
    void *resolve_ctx;
    /* For the interop record of this handshake. */
    uint64_t hs_id;
    uint64_t t0_ms; /* monotonic, at message_1 */
    int8_t suites_i[EDHOC_MAX_SUITES];
    uint8_t n_suites_i;
    uint16_t m1_bytes, m2_bytes;
    uint32_t self;                  /* its index in srv->pending_pool */
    uint32_t c_r_chain, peer_chain; /* in pending_by_c_r / pending_by_peer */
    struct edhoc_ilink age;         /* in pending_age, oldest first out */
    /* Its endpoint's trust at message_1 (enum edhoc_amp_trust), and its
     * place in pending_by_trust[trust]: eviction takes the lowest first. */
    uint8_t trust;
    struct edhoc_ilink trust_age;
    struct edhoc_session s;
};

/* A context whose first OSCORE request is to be reported. */
struct first_request {
    bool used;
    uint64_t hs_id;
    struct ctx_key key;
    char peer[MAX_PEER_NAME];
};

struct observer {
    bool used;
    struct edhoc_transport_peer *peer;
    struct ctx_key key; /* of the context its notifications are protected with */
    uint8_t token[8];
    uint8_t token_len;
    uint32_t seq;
    struct oscore_binding b;
};

/* A static context configured with rfc8613_b_2 (RFC 8613 Appendix B.2):
 * the immutable inputs every new context is derived from (a copy: it
 * holds the master secret, wiped with the entry), the R2 values of runs
 * in progress, and which context of the table is the one in use with the
 * client now: the configured one, or the last run's ID3 = R2 || R3 ("This
 * security context replaces the previous security context with the
 * client", step 4). Its replay state is valid unless the context needs an
 * Echo exchange (resumed after a restart: oscore_context_needs_echo),
 * which B.2 replaces. Kept by the worker that owns the Recipient ID, to
 * which requests with that kid are steered. */
struct b2_entry {
    struct oscore_config cfg;
    struct oscore_b2_server run;
    struct ctx_key configured; /* its row keeps the mark across restarts */
    struct ctx_key current;
};

/* Rows of ID3 contexts carry this before the peer's address (method -1,
 * as static rows): the next start deletes them (edhoc_server_load_state). */
#define B2_ROW_TAG "B.2 "

struct edhoc_server {
    struct edhoc_server_config cfg;
    struct b2_entry *b2; /* static contexts with Appendix B.2 */
    size_t n_b2;
    struct ctx_key *stale_b2; /* while loading: rows of earlier B.2 runs */
    size_t n_stale_b2, cap_stale_b2;
    /* Contexts by Recipient ID (every context a kid can name without
     * 'kid context' is on one chain), the EDHOC-derived ones also in
     * least-recently-used order. */
    struct edhoc_pool ctx_pool;
    struct ctx_mark *marks; /* by context index, marks_cap entries (store_ssn) */
    uint32_t marks_cap;
    struct edhoc_itab contexts;
    struct edhoc_ilru ctx_lru;
    size_t n_contexts;
    struct edhoc_tab_seed seed; /* keys every table's hash */
    uint64_t use_pass_ms;       /* last pass storing use times */
    uint32_t start_ds;          /* when the server started (to_ds) */
    bool state_txn;             /* a transaction of cfg.db is open (state_write_begin) */
    int store_err;              /* the last failed sequence-number mark write (store_ssn) */
    /* Pending handshakes: by C_R, by bare peer address, and in age order
     * (eviction and expiry take the oldest). */
    struct edhoc_pool pending_pool;
    size_t n_pending;
    struct edhoc_itab pending_by_c_r, pending_by_peer;
    struct edhoc_ilru pending_age;
    struct edhoc_ilru pending_by_trust[EDHOC_AMP_TRUST_LEVELS];
    struct edhoc_cid_space cids; /* C_Rs of pending handshakes and contexts */
    uint64_t c_r_one_allowed[4]; /* one-byte C_Rs of cfg.c_r_form */
    uint64_t pending_seq;
    uint64_t now_ms; /* last tick */
    uint64_t last_scan_ms;
    uint64_t next_counter_ms;
    uint32_t counter;
    struct observer observers[MAX_OBSERVERS];
    struct edhoc_server_stats st;
    uint8_t echo_secret[32]; /* keys the stateless Echo values */
    struct edhoc_received rx; /* transient */
    /* Interop records: the handshake being handled, and what the
     * credential lookup of its message_3 saw (the core wipes rx when the
     * check fails, so the record keeps its own copy). */
    uint64_t hs_next, hs_current;
    const char *hs_peer;
    uint64_t req_t0_ms;
    struct pending *m3_h;
    const struct edhoc_cred *m3_cred;
    size_t m3_id_cred_len, m3_id_cred_sent_len;
    uint8_t m3_id_cred[EDHOC_MAX_ID_CRED];
    uint8_t m3_id_cred_sent[EDHOC_MAX_ID_CRED];
    struct first_request first[FIRST_REQUESTS];
    size_t first_next;
    uint8_t buf[EDHOC_MAX_MESSAGE + 16];
    /* Decrypted requests, whole responses and the block of them that is
     * sent: each max_body plus room for header and options. */
    uint8_t *inner, *inner_resp, *inner_cut;
    size_t inner_cap;
    uint8_t *bytes_body; /* /bytes: the pattern, max_body long */
    struct edhoc_bw_server *bw; /* inner block-wise transfers */
    uint8_t c_r_pool[128];    /* random bytes for C_R candidates (choose_c_r) */
    size_t c_r_pool_left;
};

static void logf_(struct edhoc_server *srv, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#include <stdarg.h>
static bool log_wanted(const struct edhoc_server *srv, int level)
{
    return srv->cfg.log && (!srv->cfg.log_max_level || level <= srv->cfg.log_max_level);
}

static void logf_(struct edhoc_server *srv, int level, const char *fmt, ...)
{
    if (!log_wanted(srv, level))
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    srv->cfg.log(srv->cfg.log_user, level, line);
}

static void hex(const uint8_t *p, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    if (n == 0 && cap > 2) {
        strcpy(out, "''");
        return;
    }
    for (size_t i = 0; i < n && o + 3 <= cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%02x", p[i]);
    if (o < cap)
        out[o] = '\0';
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- Interop records ---- */

/* The label of the first entry of an ID_CRED map. */
static const char *id_cred_type_name(const uint8_t *m, size_t len)
{
    if (!m || len < 2 || (m[0] & 0xe0) != 0xa0)
        return "other";
    unsigned key;
    if (m[1] < 0x18)
        key = m[1];
    else if (m[1] == 0x18 && len > 2)
        key = m[2];
    else
        return "other";
    switch (key) {
    case 4:
        return "kid";
    case 13:
        return "kcwt";
    case 14:
        return "kccs";
    case 32:
        return "x5bag";
    case 33:
        return "x5chain";
    case 34:
        return "x5t";
    default:
        return "other";
    }
}

static void hs_init(struct edhoc_server *srv, struct edhoc_server_handshake *r, uint64_t id,
                    const char *peer, int framing)
{
    memset(r, 0, sizeof *r);
    r->id = id;
    r->peer = peer;
    r->method = -1;
    r->suite = -1;
    r->framing = (enum edhoc_coap_framing)framing;
    r->message_4 = srv->cfg.message_4;
    r->step = "";
    r->error_text = "";
    r->err_code = -1;
    r->peer_diagnostic = "";
    r->causes = "";
    r->diagnosis = "";
}

static void hs_from_pending(struct edhoc_server *srv, const struct pending *h,
                            struct edhoc_server_handshake *r)
{
    hs_init(srv, r, h->hs_id, h->peer, h->framing);
    r->method = edhoc_session_method(&h->s);
    for (size_t i = 0; i < h->n_suites_i; i++)
        r->suites_i[i] = h->suites_i[i];
    r->n_suites_i = h->n_suites_i;
    r->suite = h->n_suites_i ? h->suites_i[h->n_suites_i - 1] : -1;
    size_t c_i_len = 0;
    const uint8_t *c_i = edhoc_session_peer_conn_id(&h->s, &c_i_len);
    if (c_i)
        memcpy(r->c_i, c_i, c_i_len);
    r->c_i_len = c_i ? c_i_len : 0;
    memcpy(r->c_r, h->c_r, h->c_r_len);
    r->c_r_len = h->c_r_len;
    r->id_cred_r_type = h->cfg ? (h->cfg->id_cred ? id_cred_type_name(h->cfg->id_cred,
                                                                       h->cfg->id_cred_len)
                                                  : "kid")
                               : NULL;
    r->bytes[1] = h->m1_bytes;
    r->bytes[2] = h->m2_bytes;
    r->duration_ms = mono_ms() - h->t0_ms;
}

/* What message_3's credential lookup saw, into the record. */
static void hs_add_message_3(struct edhoc_server *srv, const struct pending *h,
                             struct edhoc_server_handshake *r)
{
    if (srv->m3_h != h || !srv->m3_id_cred_len)
        return;
    r->id_cred_i = srv->m3_id_cred;
    r->id_cred_i_len = srv->m3_id_cred_len;
    r->id_cred_i_sent = srv->m3_id_cred_sent;
    r->id_cred_i_sent_len = srv->m3_id_cred_sent_len;
    r->id_cred_i_type = id_cred_type_name(srv->m3_id_cred, srv->m3_id_cred_len);
    if (srv->m3_cred && srv->m3_cred->cred) {
        r->cred_i = srv->m3_cred->cred;
        r->cred_i_len = srv->m3_cred->cred_len;
    }
}

/* The error message we are sending, into the record. */
static void hs_sent_error(struct edhoc_server_handshake *r, const uint8_t *msg, size_t len)
{
    struct edhoc_error_info info;
    r->error_bytes = len;
    if (edhoc_error_message_parse(msg, len, &info))
        return;
    r->err_code = (int)info.code;
    for (size_t i = 0; i < info.n_suites && i < EDHOC_MAX_SUITES; i++)
        r->suites_r[i] = info.suites[i];
    r->n_suites_r = info.n_suites;
}

static size_t list_ints(const int *v, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%d", i ? ", " : "", v[i]);
    return o;
}

/* The most likely causes of a failure, for someone comparing our trace
 * with the device's log. */
static void hs_causes(const struct edhoc_server_handshake *r, char *buf, size_t cap)
{
    char tmp[200];
    buf[0] = '\0';
    switch (r->outcome) {
    case EDHOC_SERVER_OK:
        return;
    case EDHOC_SERVER_EXPIRED:
    case EDHOC_SERVER_EVICTED:
        snprintf(buf, cap,
                 "the initiator sent no message_3: it could not process our message_2 (check "
                 "its log: C_R encoding, ID_CRED_R by %s / CRED_R not in its trust, MAC_2 or "
                 "Signature_or_MAC_2 verification, EAD_2, suite parameters) or it stopped",
                 r->id_cred_r_type ? r->id_cred_r_type : "?");
        return;
    case EDHOC_SERVER_PEER_ERROR:
        if (r->err_code == 3)
            snprintf(buf, cap,
                     "the initiator does not know our credential (ID_CRED_R by %s): add it to the "
                     "device's trust, or name it another way (--id-cred)",
                     r->id_cred_r_type ? r->id_cred_r_type : "?");
        else if (r->err_code == 1 && (strstr(r->peer_diagnostic, "MAC") ||
                                      strstr(r->peer_diagnostic, "ignature") ||
                                      strstr(r->peer_diagnostic, "verif")))
            snprintf(buf, cap,
                     "the initiator could not verify message_2: check our CRED_R as the device "
                     "stores it (the exact bytes hashed into context_2 / TH_3), ID_CRED_R (kid as "
                     "integer vs byte string), C_R encoding, EAD_2");
        else if (r->err_code == 2)
            snprintf(buf, cap, "the initiator refused the selected suite");
        else
            snprintf(buf, cap, "the initiator refused message_2%s%s",
                     r->peer_diagnostic[0] ? ": " : "", r->peer_diagnostic);
        return;
    case EDHOC_SERVER_FAILED:
        snprintf(buf, cap, "our side failed (%s): see the daemon's log", r->error_text);
        return;
    case EDHOC_SERVER_SHUTDOWN:
        snprintf(buf, cap, "none on the initiator's side: the responder stopped while waiting "
                           "for its message_3");
        return;
    case EDHOC_SERVER_VERIFY:
        if (r->error == EDHOC_ERR_SIGNATURE)
            snprintf(buf, cap,
                     "the initiator's signature over TH_3, CRED_I, EAD_3 differs: check the "
                     "CRED_I bytes it signs (credential encoding; ours are in the trace), "
                     "ID_CRED_I (kid as integer vs byte string), EAD_3, and that its signing key "
                     "matches its credential");
        else if (r->error == EDHOC_ERR_MAC)
            snprintf(buf, cap,
                     "check the initiator's TH_3 inputs: CRED_I encoding (the exact bytes it "
                     "hashes; ours are in the trace), ID_CRED_I (kid as integer vs byte string), "
                     "EAD_3; and its static DH key (G_IY) against its credential");
        else
            snprintf(buf, cap,
                     "message_3 did not decrypt: the initiator's K_3 / IV_3 differ - check its "
                     "TH_3 = H(TH_2, PLAINTEXT_2, CRED_R) (our CRED_R as the device stores it, C_R "
                     "encoding in PLAINTEXT_2), PRK_3e2m (methods 1 and 3: the static DH with our "
                     "credential) and the suite parameters");
        return;
    case EDHOC_SERVER_REFUSED:
        break;
    }
    switch (r->error) {
    case EDHOC_ERR_WRONG_SUITE:
        list_ints(r->suites_r, r->n_suites_r, tmp, sizeof tmp);
        snprintf(buf, cap,
                 "suite %d is not served here, or a suite the initiator prefers is (RFC 9528 "
                 "6.3): we answered SUITES_R = [%s]; the initiator should retry with one of "
                 "them (--suites)",
                 r->suite, tmp);
        return;
    case EDHOC_ERR_UNKNOWN_CREDENTIAL:
        hex(r->id_cred_i, r->id_cred_i_len < 48 ? r->id_cred_i_len : 48, tmp, sizeof tmp);
        snprintf(buf, cap,
                 "we could not resolve ID_CRED_I %s (%s): add the device's credential with "
                 "--trust, or check how it names it (kid as integer vs byte string, x5t hash "
                 "algorithm, kccs encoding)",
                 tmp, r->id_cred_i_type ? r->id_cred_i_type : "?");
        return;
    case EDHOC_ERR_CREDENTIAL:
        snprintf(buf, cap,
                 "the device's credential was found but cannot be used (%s): certificate chain "
                 "and validity, key type for method %d and suite %d",
                 r->error_text, r->method, r->suite);
        return;
    case EDHOC_ERR_METHOD:
        snprintf(buf, cap, "method %d is not accepted here (--method) or we have no credential "
                           "for it", r->method);
        return;
    case EDHOC_ERR_SUITES_ENCODING:
        snprintf(buf, cap, "SUITES_I holding one suite must be an int, not an array "
                           "(RFC 9528 5.2.2)");
        return;
    case EDHOC_ERR_CONN_ID_ENCODING:
        snprintf(buf, cap, "C_I encoding: a one-byte identifier that has an int form must be "
                           "sent as that int (RFC 9528 3.3.2)");
        return;
    case EDHOC_ERR_EPHEMERAL_LENGTH:
    case EDHOC_ERR_INVALID_POINT:
        snprintf(buf, cap, "G_X does not fit suite %d: wrong suite parameters (curve, "
                           "x-coordinate only)", r->suite);
        return;
    case EDHOC_ERR_NOT_DETERMINISTIC:
    case EDHOC_ERR_TRAILING:
    case EDHOC_ERR_MALFORMED:
        snprintf(buf, cap, "the %s is not deterministic CBOR as RFC 9528 3.1 and 5 require: check "
                           "the device's encoder (int vs byte string forms, lengths, trailing "
                           "bytes)", r->step[0] ? r->step : "message");
        return;
    case EDHOC_ERR_ID_CRED_ENCODING:
        snprintf(buf, cap, "ID_CRED_I not in compact form: a lone kid must be sent as the kid "
                           "itself (RFC 9528 3.5.3.2)");
        return;
    case EDHOC_ERR_MAC_LENGTH:
        snprintf(buf, cap, "Signature_or_MAC_3 has the wrong length for method %d and suite %d: "
                           "wrong method or suite parameters", r->method, r->suite);
        return;
    case EDHOC_ERR_EAD_CRITICAL:
    case EDHOC_ERR_EAD_REJECTED:
        snprintf(buf, cap, "missing or extra EAD: the initiator sent a critical EAD item we do "
                           "not accept (--ead-accept)");
        return;
    default:
        break;
    }
    if (strstr(r->error_text, "unknown C_R"))
        snprintf(buf, cap,
                 "the C_R prefix names no handshake in progress: check how the initiator encodes "
                 "C_R (a one-byte C_R with an int form is sent as that int, RFC 9528 3.3.2), or "
                 "the handshake expired first (--handshake-timeout)");
    else if (strstr(r->error_text, "message_4 required"))
        snprintf(buf, cap, "we send message_4 (--message-4), which the RFC 9668 combined request "
                           "cannot carry");
    else
        snprintf(buf, cap, "compare the trace with the device's log line by line");
}

static void hs_emit(struct edhoc_server *srv, struct edhoc_server_handshake *r)
{
    if (!srv->cfg.record)
        return;
    char causes[600];
    if (!r->causes[0]) {
        hs_causes(r, causes, sizeof causes);
        r->causes = causes;
    }
    srv->cfg.record(srv->cfg.record_user, r);
}

/* A handshake in progress ends without message_3 or by an outside event. */
static void hs_end_pending(struct edhoc_server *srv, const struct pending *h,
                           enum edhoc_server_outcome outcome, const char *step, const char *text)
{
    if (!srv->cfg.record)
        return;
    struct edhoc_server_handshake r;
    hs_from_pending(srv, h, &r);
    r.outcome = outcome;
    r.step = step;
    r.error_text = text;
    hs_emit(srv, &r);
}

/* Fill a key; idc NULL: no ID Context. The lengths must fit (callers
 * check against OSCORE_MAX_ID / OSCORE_MAX_ID_CONTEXT). */
static void key_set(struct ctx_key *k, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                    size_t rid_len)
{
    memset(k, 0, sizeof *k);
    k->rid_len = (uint8_t)rid_len;
    if (rid_len)
        memcpy(k->rid, rid, rid_len);
    k->has_idc = idc != NULL;
    if (idc) {
        k->idc_len = (uint8_t)idc_len;
        if (idc_len)
            memcpy(k->idc, idc, idc_len);
    }
}

static bool key_rid_is(const struct ctx_key *k, const uint8_t *rid, size_t rid_len)
{
    return k->rid_len == rid_len && (rid_len == 0 || !memcmp(k->rid, rid, rid_len));
}

static bool key_equal(const struct ctx_key *a, const struct ctx_key *b)
{
    return key_rid_is(a, b->rid, b->rid_len) && a->has_idc == b->has_idc &&
           a->idc_len == b->idc_len && (a->idc_len == 0 || !memcmp(a->idc, b->idc, a->idc_len));
}

/* The ID Context argument of the state API for a key: NULL for none. */
static const uint8_t *key_idc(const struct ctx_key *k)
{
    return k->has_idc ? k->idc : NULL;
}

static void first_request_add(struct edhoc_server *srv, uint64_t hs_id, const struct ctx_key *key,
                              const char *peer)
{
    if (!srv->cfg.oscore)
        return;
    for (size_t i = 0; i < FIRST_REQUESTS; i++) {
        struct first_request *f = &srv->first[i];
        if (f->used && key_equal(&f->key, key))
            f->used = false;
    }
    struct first_request *f = &srv->first[srv->first_next++ % FIRST_REQUESTS];
    f->used = true;
    f->hs_id = hs_id;
    f->key = *key;
    snprintf(f->peer, sizeof f->peer, "%s", peer);
}

/* The awaiting entry of a context (key) or else of a peer (key NULL). */
static struct first_request *first_request_find(struct edhoc_server *srv,
                                                const struct ctx_key *key, const char *peer)
{
    if (!srv->cfg.oscore)
        return NULL;
    for (size_t i = 0; i < FIRST_REQUESTS; i++) {
        struct first_request *f = &srv->first[i];
        if (!f->used)
            continue;
        if (key ? key_equal(&f->key, key) : !strcmp(f->peer, peer))
            return f;
    }
    return NULL;
}

static void first_request_report(struct edhoc_server *srv, struct first_request *f, int err,
                                 const char *text)
{
    struct edhoc_server_oscore_first r = {
        .handshake = f->hs_id,
        .peer = f->peer,
        .error = err,
        .text = text ? text : "",
    };
    srv->cfg.oscore(srv->cfg.record_user, &r);
    f->used = false;
}

uint64_t edhoc_server_current_handshake(const struct edhoc_server *srv, const char **peer)
{
    if (peer)
        *peer = srv->hs_current ? srv->hs_peer : NULL;
    return srv->hs_current;
}

/* A Recipient ID of a context that went (evicted or expired) is not given
 * to a new handshake as C_R for this long, so that its peer's next
 * request finds no context (4.01 "Security context not found", RFC 8613
 * Section 8.2 step 2) instead of failing to decrypt under another peer's.
 * Only one-byte values are held: longer ones are drawn from a space at
 * most half full, where meeting a given value again is unlikely. */
#define RID_HOLD_MS 60000u
/* Last uses reach the state in a pass every USE_PASS_MS, a context when
 * its last use moved into another minute (USE_DIRTY): after a crash its
 * stored last use is at most a minute old. A clean stop stores the last
 * use of every context used during the run, in recency order
 * (edhoc_server_save_state). */
#define USE_PASS_MS 1000u
#define USE_DIRTY 1u
/* Room for static contexts in the context pool, besides max_contexts. */
#define STATIC_ROOM 1024u

/* The server's clock: the last tick, or the monotonic clock before the
 * first one (contexts loaded at start). */
static uint64_t clock_ms(const struct edhoc_server *srv)
{
    return srv->now_ms ? srv->now_ms : mono_ms();
}

/* A context's last use in tenths of a second of the monotonic clock (time
 * since boot): 32 bits last 13 years of uptime, then the value stays at
 * its maximum (the recency order, which the list keeps, is unaffected). */
static uint32_t to_ds(uint64_t ms)
{
    uint64_t ds = ms / 100;
    return ds > UINT32_MAX ? UINT32_MAX : (uint32_t)ds;
}

static uint64_t used_ms(const struct peer_ctx *p)
{
    return (uint64_t)p->used_ds * 100;
}

static int64_t wall_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The state keeps Unix time, which survives a restart; the server runs on
 * the monotonic clock, which setting the date does not move. */
static int64_t wall_ms_of(const struct edhoc_server *srv, uint64_t t_ms)
{
    uint64_t now = clock_ms(srv);
    int64_t age = now > t_ms ? (int64_t)(now - t_ms) : 0;
    int64_t wall = wall_now_ms();
    return wall > age ? wall - age : 0;
}

static uint64_t server_ms_of(const struct edhoc_server *srv, int64_t wall_ms)
{
    int64_t age = wall_now_ms() - wall_ms;
    uint64_t now = clock_ms(srv);
    if (age <= 0)
        return now;
    return (uint64_t)age < now ? now - (uint64_t)age : 0;
}

/* The writes of one pass (a context established with the ones it evicts,
 * a tick's expiries and use times) go in one transaction: one sync. */
static void state_write_begin(struct edhoc_server *srv)
{
    /* With group commit the writer batches these with everything else,
     * and none of them must be durable before a packet leaves: a lost
     * deletion brings back a context with its durable mark, a lost use
     * time an earlier one, a lost new context costs a new handshake
     * (establish). What must be, marks, waits in store_ssn. */
    if (srv->cfg.db && !srv->state_txn && !edhoc_state_is_grouped(srv->cfg.db))
        srv->state_txn = edhoc_state_begin(srv->cfg.db) == 0;
}

static int state_write_end(struct edhoc_server *srv)
{
    if (!srv->state_txn)
        return 0;
    srv->state_txn = false;
    int rc = edhoc_state_commit(srv->cfg.db);
    if (rc)
        logf_(srv, EDHOC_LOG_ERR, "state: cannot commit: %s", edhoc_state_strerror(rc));
    return rc;
}

static struct peer_ctx *ctx_at(const struct edhoc_server *srv, uint32_t i)
{
    return edhoc_pool_at(&srv->ctx_pool, i);
}

/* Chains hold every context with one Recipient ID, whatever its ID
 * Context, so a request without 'kid context' finds all it may name. */
static uint64_t rid_hash(const struct edhoc_server *srv, const uint8_t *rid, size_t len)
{
    return edhoc_tab_hash(&srv->seed, rid, len);
}

static uint64_t ctx_hash_of(const void *entry, void *user)
{
    const struct peer_ctx *p = entry;
    return rid_hash(user, p->key.rid, p->key.rid_len);
}

static struct peer_ctx *ctx_find(struct edhoc_server *srv, const struct ctx_key *key)
{
    uint64_t h = rid_hash(srv, key->rid, key->rid_len);
    for (uint32_t i = edhoc_itab_first(&srv->contexts, h); i != EDHOC_NONE;
         i = edhoc_itab_next(&srv->contexts, i)) {
        struct peer_ctx *p = ctx_at(srv, i);
        if (key_equal(&p->key, key))
            return p;
    }
    return NULL;
}

/* The static context with Appendix B.2 whose Recipient ID this is. */
static struct b2_entry *b2_find(struct edhoc_server *srv, const uint8_t *rid, size_t len)
{
    for (size_t i = 0; i < srv->n_b2; i++) {
        if (key_rid_is(&srv->b2[i].configured, rid, len))
            return &srv->b2[i];
    }
    return NULL;
}

/* Whether any context, whatever its ID Context, has this Recipient ID. */
static bool rid_in_use(struct edhoc_server *srv, const uint8_t *rid, size_t len)
{
    uint64_t h = rid_hash(srv, rid, len);
    for (uint32_t i = edhoc_itab_first(&srv->contexts, h); i != EDHOC_NONE;
         i = edhoc_itab_next(&srv->contexts, i)) {
        if (key_rid_is(&ctx_at(srv, i)->key, rid, len))
            return true;
    }
    return false;
}

/* Unlink p from every table and release it (its row is the caller's).
 * hold_until_ms: its Recipient ID is not a new C_R before then. */
static void ctx_free(struct edhoc_server *srv, struct peer_ctx *p, uint64_t hold_until_ms)
{
    uint32_t i = p->self;
    edhoc_itab_remove(&srv->contexts, i, rid_hash(srv, p->key.rid, p->key.rid_len));
    edhoc_ilru_remove(&srv->ctx_lru, i);
    edhoc_cid_space_remove(&srv->cids, p->key.rid, p->key.rid_len, hold_until_ms);
    oscore_context_wipe(&p->osc);
    edhoc_pool_release(&srv->ctx_pool, i);
    srv->n_contexts--;
}

static void ctx_remove(struct edhoc_server *srv, const struct ctx_key *key)
{
    struct peer_ctx *p = ctx_find(srv, key);
    if (p)
        ctx_free(srv, p, 0);
}

/* The OSCORE persistence callback: numbers below `mark` are about to be
 * used, so a mark at least that high must be durable first (RFC 8613
 * Section 7.2.1 and Appendix B.1.1). With group commit the next block's
 * mark goes to the writer as soon as a block is entered, so it is durable
 * long before the block is used up and the sender seldom waits; it waits
 * (edhoc_state_wait) only when it is not yet, and a mark that cannot be
 * stored fails the message (5.03, as before). */
static struct ctx_mark *ctx_mark_of(struct edhoc_server *srv, const struct peer_ctx *p)
{
    if (p->self >= srv->marks_cap) {
        uint32_t cap = srv->marks_cap ? srv->marks_cap : 64;
        while (cap <= p->self && cap < UINT32_MAX / 2)
            cap *= 2;
        if (cap <= p->self)
            return NULL;
        struct ctx_mark *m = realloc(srv->marks, (size_t)cap * sizeof *m);
        if (!m)
            return NULL;
        memset(m + srv->marks_cap, 0, (size_t)(cap - srv->marks_cap) * sizeof *m);
        srv->marks = m;
        srv->marks_cap = cap;
    }
    return &srv->marks[p->self];
}

static int store_ssn(void *user, uint64_t mark)
{
    struct peer_ctx *p = user;
    struct edhoc_server *srv = p->srv;
    struct edhoc_state_db *db = srv->cfg.db;
    /* Ahead of need with a local writer thread only: through the writer
     * process a mark is one round trip either way. */
    struct ctx_mark *m = edhoc_state_event_fd(db) >= 0 ? ctx_mark_of(srv, p) : NULL;
    int rc = 0;
    if (m && m->queued >= mark) {
        rc = edhoc_state_wait(db, m->ticket, true); /* at once when durable already */
        if (!rc)
            m->ticket = 0;
    } else {
        uint64_t t = 0;
        rc = edhoc_state_store_ssn_async(db, key_idc(&p->key), p->key.idc_len, p->key.rid,
                                         p->key.rid_len, mark, &t);
        if (!rc)
            rc = edhoc_state_wait(db, t, true);
        if (!rc && m)
            *m = (struct ctx_mark){mark, 0};
    }
    if (rc) {
        srv->store_err = rc;
        logf_(srv, EDHOC_LOG_ERR, "cannot store the sequence number mark: %s",
              edhoc_state_strerror(rc));
        return rc;
    }
    /* The next block's mark, queued now: durable long before this block
     * is used up, so the next call finds it there. */
    uint64_t next = mark + srv->cfg.ssn_freq;
    if (m && next <= OSCORE_SSN_MAX + 1) {
        uint64_t t = 0;
        if (edhoc_state_store_ssn_async(db, key_idc(&p->key), p->key.idc_len, p->key.rid,
                                        p->key.rid_len, next, &t) == 0)
            *m = (struct ctx_mark){next, t};
    }
    return 0;
}

/* A new context under key, replacing the one with exactly that key (and
 * no other: contexts with the same Recipient ID and another ID Context
 * stay). An EDHOC-derived one is the most recently used; a static one
 * is outside the recency order (never evicted or expired). */
static struct peer_ctx *ctx_insert(struct edhoc_server *srv, const struct ctx_key *key,
                                   bool is_static)
{
    ctx_remove(srv, key);
    uint32_t i = edhoc_pool_alloc(&srv->ctx_pool);
    if (i == EDHOC_NONE)
        return NULL;
    struct peer_ctx *p = ctx_at(srv, i);
    p->self = i;
    p->srv = srv;
    p->key = *key;
    p->is_static = is_static;
    p->used_ds = to_ds(clock_ms(srv));
    if (i < srv->marks_cap)
        srv->marks[i] = (struct ctx_mark){0, 0};
    edhoc_itab_insert(&srv->contexts, i, rid_hash(srv, key->rid, key->rid_len));
    if (!is_static)
        edhoc_ilru_push(&srv->ctx_lru, i);
    edhoc_cid_space_add(&srv->cids, key->rid, key->rid_len);
    srv->n_contexts++;
    return p;
}

static void ctx_persist(struct peer_ctx *p)
{
    if (p->srv->cfg.db)
        oscore_context_set_persistence(&p->osc, store_ssn, p, p->srv->cfg.ssn_freq);
}

static void observer_drop(struct observer *o);

/* An EDHOC-derived context goes, with its row and mark (one row): the
 * least recently used one for a new one (max_contexts), or one idle for
 * longer than context_lifetime_ms. RFC 8613 Section 8.2 step 2: its
 * peer's next request gets 4.01 "Security context not found", and the
 * peer runs EDHOC again. */
static void ctx_drop(struct edhoc_server *srv, struct peer_ctx *p, bool expired)
{
    char rid[2 * OSCORE_MAX_ID + 1];
    hex(p->key.rid, p->key.rid_len, rid, sizeof rid);
    uint64_t now = clock_ms(srv);
    unsigned long long idle_s = now > used_ms(p) ? (now - used_ms(p)) / 1000 : 0;
    if (expired) {
        srv->st.contexts_expired++;
        logf_(srv, EDHOC_LOG_INFO, "context kid=%s expired: no verified request for %llu s", rid,
              idle_s);
    } else {
        srv->st.contexts_evicted++;
        logf_(srv, EDHOC_LOG_INFO,
              "context kid=%s evicted (max contexts %zu reached; idle %llu s, the longest)", rid,
              srv->cfg.max_contexts, idle_s);
    }
    for (size_t i = 0; i < MAX_OBSERVERS; i++) {
        if (srv->observers[i].used && key_equal(&srv->observers[i].key, &p->key))
            observer_drop(&srv->observers[i]);
    }
    if (srv->cfg.db) {
        state_write_begin(srv);
        int rc = edhoc_state_delete_peer(srv->cfg.db, key_idc(&p->key), p->key.idc_len,
                                         p->key.rid, p->key.rid_len);
        if (rc && rc != EDHOC_STATE_ERR_NOT_FOUND)
            logf_(srv, EDHOC_LOG_ERR, "state: cannot delete context kid=%s: %s", rid,
                  edhoc_state_strerror(rc));
    }
    ctx_free(srv, p, now + RID_HOLD_MS);
}

/* Room for one more EDHOC-derived context: the least recently used go. */
static void ctx_make_room(struct edhoc_server *srv)
{
    uint32_t i;
    while (srv->ctx_lru.count >= srv->cfg.max_contexts &&
           (i = edhoc_ilru_oldest(&srv->ctx_lru)) != EDHOC_NONE)
        ctx_drop(srv, ctx_at(srv, i), false);
}

/* A request that verified under p (n: what unprotecting it returned; an
 * Echo challenge follows a request that verified too) makes p the most
 * recently used. A request that did not verify proves nothing: the kid
 * is public, so anyone could keep a context alive with it otherwise. */
static void ctx_verified(struct edhoc_server *srv, struct peer_ctx *p, long n)
{
    if (!p || (n < 0 && n != OSCORE_ERR_ECHO_REQUIRED))
        return;
    uint32_t now = to_ds(clock_ms(srv));
    if (now / 600 != p->used_ds / 600)
        p->use |= USE_DIRTY;
    p->used_ds = now;
    if (!p->is_static)
        edhoc_ilru_touch(&srv->ctx_lru, p->self);
}

/* Store the last use of contexts used at or after since_ds (the recency
 * order is the order of use, so the walk stops at the first older one)
 * that are marked USE_DIRTY. */
static void uses_store(struct edhoc_server *srv, uint32_t since_ds)
{
    for (uint32_t i = edhoc_ilru_newest(&srv->ctx_lru); i != EDHOC_NONE;
         i = edhoc_ilru_older(&srv->ctx_lru, i)) {
        struct peer_ctx *p = ctx_at(srv, i);
        if (p->used_ds < since_ds)
            break;
        if (!(p->use & USE_DIRTY))
            continue;
        state_write_begin(srv);
        int rc = edhoc_state_touch_peer(srv->cfg.db, key_idc(&p->key), p->key.idc_len,
                                        p->key.rid, p->key.rid_len, wall_ms_of(srv, used_ms(p)));
        if (rc && rc != EDHOC_STATE_ERR_NOT_FOUND) {
            logf_(srv, EDHOC_LOG_ERR, "state: cannot store when a context was used: %s",
                  edhoc_state_strerror(rc));
            return;
        }
        p->use = 0;
    }
}

/* Idle contexts go (oldest first, so the walk stops at the first that is
 * not), and use times reach the state: one transaction. */
static void contexts_tick(struct edhoc_server *srv, uint64_t now)
{
    if (!srv->use_pass_ms)
        srv->use_pass_ms = now;
    uint32_t i;
    while ((i = edhoc_ilru_oldest(&srv->ctx_lru)) != EDHOC_NONE) {
        struct peer_ctx *p = ctx_at(srv, i);
        if (now <= used_ms(p) || now - used_ms(p) <= srv->cfg.context_lifetime_ms)
            break;
        ctx_drop(srv, p, true);
    }
    if (srv->cfg.db && now - srv->use_pass_ms >= USE_PASS_MS) {
        uses_store(srv, to_ds(srv->use_pass_ms));
        srv->use_pass_ms = now;
    }
    state_write_end(srv);
}

/* ---- Pending handshakes ---- */

static struct pending *pending_at(const struct edhoc_server *srv, uint32_t i)
{
    return edhoc_pool_at(&srv->pending_pool, i);
}

static uint64_t c_r_hash_of(const void *entry, void *user)
{
    const struct pending *h = entry;
    return edhoc_tab_hash(&((const struct edhoc_server *)user)->seed, h->c_r, h->c_r_len);
}

static uint64_t peer_hash(const struct edhoc_server *srv, const char *peer)
{
    return edhoc_tab_hash(&srv->seed, peer, strlen(peer));
}

static uint64_t peer_hash_of(const void *entry, void *user)
{
    return peer_hash(user, ((const struct pending *)entry)->peer);
}

/* The A.2 handshake whose C_R this is (a bare one is found by address). */
static struct pending *pending_find(struct edhoc_server *srv, const uint8_t *c_r, size_t len)
{
    uint64_t hash = edhoc_tab_hash(&srv->seed, c_r, len);
    for (uint32_t i = edhoc_itab_first(&srv->pending_by_c_r, hash); i != EDHOC_NONE;
         i = edhoc_itab_next(&srv->pending_by_c_r, i)) {
        struct pending *h = pending_at(srv, i);
        if (h->framing == EDHOC_FRAMING_A2 && h->c_r_len == len && !memcmp(h->c_r, c_r, len))
            return h;
    }
    return NULL;
}

/* Whether a handshake in progress, of either framing, has this C_R. */
static bool pending_c_r_in_use(struct edhoc_server *srv, const uint8_t *c_r, size_t len)
{
    uint64_t hash = edhoc_tab_hash(&srv->seed, c_r, len);
    for (uint32_t i = edhoc_itab_first(&srv->pending_by_c_r, hash); i != EDHOC_NONE;
         i = edhoc_itab_next(&srv->pending_by_c_r, i)) {
        struct pending *h = pending_at(srv, i);
        if (h->c_r_len == len && !memcmp(h->c_r, c_r, len))
            return true;
    }
    return false;
}

/* The bare handshake of a peer address (the newest if there were two). */
static struct pending *pending_find_bare(struct edhoc_server *srv, const char *peer)
{
    struct pending *best = NULL;
    uint64_t hash = peer_hash(srv, peer);
    for (uint32_t i = edhoc_itab_first(&srv->pending_by_peer, hash); i != EDHOC_NONE;
         i = edhoc_itab_next(&srv->pending_by_peer, i)) {
        struct pending *h = pending_at(srv, i);
        if (!strcmp(h->peer, peer) && (!best || h->seq > best->seq))
            best = h;
    }
    return best;
}

/* Index a handshake once its C_R, framing and peer are set: by C_R, and a
 * bare one by its peer's address too. */
static void pending_index(struct edhoc_server *srv, struct pending *h)
{
    if (h->indexed)
        return;
    edhoc_itab_insert(&srv->pending_by_c_r, h->self, c_r_hash_of(h, srv));
    if (h->framing == EDHOC_FRAMING_BARE)
        edhoc_itab_insert(&srv->pending_by_peer, h->self, peer_hash(srv, h->peer));
    edhoc_cid_space_add(&srv->cids, h->c_r, h->c_r_len);
    h->indexed = true;
}

static void pending_free(struct edhoc_server *srv, struct pending *h)
{
    if (!h->used)
        return;
    if (h->indexed) {
        edhoc_itab_remove(&srv->pending_by_c_r, h->self, c_r_hash_of(h, srv));
        if (h->framing == EDHOC_FRAMING_BARE)
            edhoc_itab_remove(&srv->pending_by_peer, h->self, peer_hash(srv, h->peer));
        edhoc_cid_space_remove(&srv->cids, h->c_r, h->c_r_len, 0);
    }
    edhoc_ilru_remove(&srv->pending_age, h->self);
    edhoc_ilru_remove(&srv->pending_by_trust[h->trust], h->self);
    edhoc_session_wipe(&h->s);
    edhoc_pool_release(&srv->pending_pool, h->self);
    srv->n_pending--;
}

/* A slot for a handshake of an endpoint of this trust, or NULL: the table
 * is full and every handshake in it is of an endpoint ranked above. Full:
 * the oldest handshake of the lowest trust present makes room (its
 * initiator may retry), so that addresses that only answered an Echo --
 * which a distributed flood of real hosts can (RFC 9528 Section 9.7) --
 * push out each other and unverified ones, never a peer that completed
 * EDHOC or OSCORE; a new endpoint is refused rather than evict one ranked
 * above it. O(1): one recency list per trust level. */
static struct pending *pending_alloc(struct edhoc_server *srv, enum edhoc_amp_trust trust)
{
    uint32_t i = edhoc_pool_alloc(&srv->pending_pool);
    if (i == EDHOC_NONE) {
        uint32_t victim = EDHOC_NONE;
        for (int t = 0; victim == EDHOC_NONE && t <= (int)trust; t++)
            victim = edhoc_ilru_oldest(&srv->pending_by_trust[t]);
        if (victim == EDHOC_NONE) {
            edhoc_amp_note_pending_refused(srv->cfg.amp);
            return NULL;
        }
        struct pending *oldest = pending_at(srv, victim);
        logf_(srv, EDHOC_LOG_INFO, "handshake peer=%s evicted (max pending %zu reached)",
              oldest->peer, srv->cfg.max_pending);
        srv->st.evicted++;
        edhoc_amp_note_pending_evicted(srv->cfg.amp, (enum edhoc_amp_trust)oldest->trust);
        char why[96];
        snprintf(why, sizeof why, "evicted before message_3: max pending %zu reached",
                 srv->cfg.max_pending);
        hs_end_pending(srv, oldest, EDHOC_SERVER_EVICTED, "message_3", why);
        pending_free(srv, oldest);
        i = edhoc_pool_alloc(&srv->pending_pool);
        if (i == EDHOC_NONE)
            return NULL;
    }
    struct pending *h = pending_at(srv, i);
    h->self = i;
    h->used = true;
    h->seq = ++srv->pending_seq;
    h->trust = (uint8_t)trust;
    edhoc_ilru_push(&srv->pending_age, i);
    edhoc_ilru_push(&srv->pending_by_trust[trust], i);
    srv->n_pending++;
    return h;
}

/* A longer C_R candidate: not C_I, no handshake's, no context's. */
static bool c_r_in_use(struct edhoc_server *srv, const uint8_t *c, size_t len, const uint8_t *c_i,
                       size_t c_i_len)
{
    if (len == c_i_len && !memcmp(c, c_i, len))
        return true;
    /* C_R becomes our Recipient ID: one shared with a static context of
     * any ID Context would make requests without 'kid context' try both. */
    return pending_c_r_in_use(srv, c, len) || rid_in_use(srv, c, len);
}

/* Random bytes for C_R candidates, drawn from the RNG in batches: C_R is
 * public (sent in clear in message_2), and one RNG call per candidate was
 * a sixth of a loaded responder's CPU (OpenSSL's DRBG makes a getpid()
 * system call on every call). */
static int c_r_random(struct edhoc_server *srv, uint8_t *out, size_t len)
{
    if (srv->c_r_pool_left < len) {
        if (srv->cfg.ops->random(srv->cfg.ops->rng_ctx, srv->c_r_pool, sizeof srv->c_r_pool))
            return -1;
        srv->c_r_pool_left = sizeof srv->c_r_pool;
    }
    memcpy(out, srv->c_r_pool + sizeof srv->c_r_pool - srv->c_r_pool_left, len);
    srv->c_r_pool_left -= len;
    return 0;
}

/* The one-byte C_Rs a form allows. RFC 9528 Section 3.3.2: 0x00-0x17 and
 * 0x20-0x37 have an int form (sent as that CBOR int). Never 0..3: a bare
 * message_1 starts with METHOD 0..3, so such a C_R would make a
 * C_R-prefixed message_3 ambiguous. */
static void c_r_one_byte_allowed(int form, uint64_t out[4])
{
    memset(out, 0, 4 * sizeof *out);
    for (unsigned b = 4; b < 256; b++) {
        bool int_form = b <= 0x17 || (b >= 0x20 && b <= 0x37);
        if (form == EDHOC_C_R_FORM_ANY || (form == EDHOC_C_R_FORM_BSTR) != int_form)
            out[b / 64] |= (uint64_t)1 << (b % 64);
    }
}

/* C_R distinct from C_I and unique among live handshakes and contexts
 * (RFC 9528 Section 3.3, RFC 9668 Section 4.2): one byte while there is
 * room, uniformly among the free values of the configured form; longer
 * when the one-byte space is full. The counters of srv->cids make this
 * constant work however many C_Rs are taken: the one-byte choice reads
 * four bitmap words, and a longer C_R is drawn at the shortest length
 * that is less than half full, so each try succeeds with probability
 * above 1/2 (8 tries per length; all failing at every length: below
 * 2^-8 per length). */
static int choose_c_r(struct edhoc_server *srv, const uint8_t *c_i, size_t c_i_len, uint8_t *out,
                      size_t *out_len)
{
    if (srv->cfg.c_r_len) {
        /* A fixed C_R, for a test with one peer. */
        memcpy(out, srv->cfg.c_r, srv->cfg.c_r_len);
        *out_len = srv->cfg.c_r_len;
        return 0;
    }
    unsigned workers = srv->cfg.workers > 1 ? srv->cfg.workers : 1;
    uint8_t r[4];
    if (c_r_random(srv, r, sizeof r))
        return -1;
    uint32_t rv = (uint32_t)r[0] << 24 | (uint32_t)r[1] << 16 | (uint32_t)r[2] << 8 | r[3];
    int one = edhoc_cid_space_pick_one(&srv->cids, srv->c_r_one_allowed,
                                       c_i_len == 1 ? c_i[0] : -1, clock_ms(srv), rv);
    if (one >= 0) {
        out[0] = (uint8_t)one;
        *out_len = 1;
        return 0;
    }
    for (size_t len = edhoc_cid_space_len(&srv->cids, 4); len <= 4; len++) {
        for (int attempt = 0; attempt < 8; attempt++) {
            uint8_t c[4];
            if (c_r_random(srv, c, len))
                return -1;
            /* Among several workers, one whose last byte names this one
             * (edhoc_state_owner): its OSCORE requests are steered here. */
            if (workers > 1) {
                unsigned b = c[len - 1] - c[len - 1] % workers + srv->cfg.worker_index;
                c[len - 1] = (uint8_t)(b > 255 ? b - workers : b);
            }
            if (!c_r_in_use(srv, c, len, c_i, c_i_len)) {
                memcpy(out, c, len);
                *out_len = len;
                return 0;
            }
        }
    }
    return -1;
}

struct edhoc_server *edhoc_server_new(const struct edhoc_server_config *cfg)
{
    if (!cfg || !cfg->ops || !cfg->select ||
        (cfg->workers > 1 &&
         (cfg->workers > EDHOC_REUSEPORT_MAX_WORKERS || cfg->worker_index >= cfg->workers)))
        return NULL;
    struct edhoc_server *srv = calloc(1, sizeof *srv);
    if (!srv)
        return NULL;
    srv->cfg = *cfg;
    if (!srv->cfg.max_pending)
        srv->cfg.max_pending = 256;
    if (!srv->cfg.pending_timeout_s)
        srv->cfg.pending_timeout_s = 60;
    if (!srv->cfg.ssn_freq)
        srv->cfg.ssn_freq = 32;
    if (!srv->cfg.counter_period_ms)
        srv->cfg.counter_period_ms = 1000;
    if (!srv->cfg.max_body)
        srv->cfg.max_body = EDHOC_BW_DEFAULT_MAX_BODY;
    if (!srv->cfg.block_size)
        srv->cfg.block_size = 1024;
    if (!srv->cfg.max_contexts)
        srv->cfg.max_contexts = EDHOC_SERVER_DEFAULT_MAX_CONTEXTS;
    if (!srv->cfg.context_lifetime_ms)
        srv->cfg.context_lifetime_ms = EDHOC_SERVER_DEFAULT_CONTEXT_LIFETIME_MS;
    if (srv->cfg.max_contexts > UINT32_MAX - 2 * STATIC_ROOM)
        srv->cfg.max_contexts = UINT32_MAX - 2 * STATIC_ROOM;
    if (srv->cfg.max_pending > UINT32_MAX - 2)
        srv->cfg.max_pending = UINT32_MAX - 2;
    edhoc_cid_space_init(&srv->cids);
    c_r_one_byte_allowed(srv->cfg.c_r_form, srv->c_r_one_allowed);
    if (srv->cfg.workers > 1) {
        for (unsigned b = 0; b < 256; b++) {
            if (b % srv->cfg.workers != srv->cfg.worker_index)
                srv->c_r_one_allowed[b / 64] &= ~((uint64_t)1 << (b % 64));
        }
    }
    srv->start_ds = to_ds(clock_ms(srv));
    /* Buckets for every context the cap allows (static ones on top): the
     * chains stay short at a million, and the pages no context reached
     * cost address space only. The handshakes' pool is all there from the
     * start, so that one evicted always makes room. */
    size_t n_ctx = srv->cfg.max_contexts + STATIC_ROOM;
    bool tables_ok =
        edhoc_pool_init(&srv->ctx_pool, sizeof(struct peer_ctx), (uint32_t)n_ctx) == 0 &&
        edhoc_pool_init(&srv->pending_pool, sizeof(struct pending),
                        (uint32_t)srv->cfg.max_pending) == 0 &&
        edhoc_pool_prealloc(&srv->pending_pool) == 0 &&
        edhoc_itab_init(&srv->contexts, &srv->ctx_pool, offsetof(struct peer_ctx, chain),
                        ctx_hash_of, srv, n_ctx) == 0 &&
        edhoc_itab_init(&srv->pending_by_c_r, &srv->pending_pool,
                        offsetof(struct pending, c_r_chain), c_r_hash_of, srv,
                        srv->cfg.max_pending) == 0 &&
        edhoc_itab_init(&srv->pending_by_peer, &srv->pending_pool,
                        offsetof(struct pending, peer_chain), peer_hash_of, srv,
                        srv->cfg.max_pending) == 0;
    edhoc_ilru_init(&srv->ctx_lru, &srv->ctx_pool, offsetof(struct peer_ctx, lru));
    edhoc_ilru_init(&srv->pending_age, &srv->pending_pool, offsetof(struct pending, age));
    for (int t = 0; t < EDHOC_AMP_TRUST_LEVELS; t++)
        edhoc_ilru_init(&srv->pending_by_trust[t], &srv->pending_pool,
                        offsetof(struct pending, trust_age));
    srv->inner_cap = srv->cfg.max_body + EDHOC_TRANSPORT_MAX_MESSAGE;
    struct edhoc_bw_limits limits = {.max_body = srv->cfg.max_body,
                                     .lifetime_ms = srv->cfg.transfer_lifetime_ms};
    srv->inner = malloc(srv->inner_cap);
    srv->inner_resp = malloc(srv->inner_cap);
    srv->inner_cut = malloc(srv->inner_cap);
    srv->bw = edhoc_bw_server_new(&limits);
    if (!srv->inner || !srv->inner_resp || !srv->inner_cut || !srv->bw || !tables_ok) {
        edhoc_server_free(srv);
        return NULL;
    }
    uint8_t seed[16];
    if (srv->cfg.ops->random(srv->cfg.ops->rng_ctx, srv->echo_secret, sizeof srv->echo_secret) ||
        srv->cfg.ops->random(srv->cfg.ops->rng_ctx, seed, sizeof seed)) {
        edhoc_server_free(srv);
        return NULL;
    }
    for (int i = 0; i < 8; i++) {
        srv->seed.k0 = srv->seed.k0 << 8 | seed[i];
        srv->seed.k1 = srv->seed.k1 << 8 | seed[8 + i];
    }
    edhoc_wipe(seed, sizeof seed);
    srv->st.bytes_per_context = sizeof(struct peer_ctx);
    srv->st.bytes_per_pending = sizeof(struct pending);
    return srv;
}

void edhoc_server_free(struct edhoc_server *srv)
{
    if (!srv)
        return;
    /* Every handshake in progress is in the age list, every context in
     * the table: wiped (released entries were zeroed when released). */
    for (uint32_t i = edhoc_ilru_oldest(&srv->pending_age); i != EDHOC_NONE;
         i = edhoc_ilru_newer(&srv->pending_age, i))
        edhoc_session_wipe(&pending_at(srv, i)->s);
    for (size_t b = 0; srv->contexts.buckets && b <= srv->contexts.mask; b++) {
        for (uint32_t i = srv->contexts.buckets[b]; i != EDHOC_NONE;
             i = edhoc_itab_next(&srv->contexts, i))
            oscore_context_wipe(&ctx_at(srv, i)->osc);
    }
    if (srv->b2)
        edhoc_wipe(srv->b2, srv->n_b2 * sizeof *srv->b2);
    free(srv->b2);
    edhoc_itab_free(&srv->contexts);
    edhoc_itab_free(&srv->pending_by_c_r);
    edhoc_itab_free(&srv->pending_by_peer);
    edhoc_pool_free(&srv->ctx_pool);
    edhoc_pool_free(&srv->pending_pool);
    free(srv->marks);
    if (srv->state_txn)
        edhoc_state_rollback(srv->cfg.db);
    for (size_t i = 0; i < MAX_OBSERVERS; i++) {
        if (srv->observers[i].used)
            edhoc_transport_peer_release(srv->observers[i].peer);
    }
    edhoc_wipe(&srv->rx, sizeof srv->rx);
    /* Decrypted requests and responses may be secret. */
    if (srv->inner)
        edhoc_wipe(srv->inner, srv->inner_cap);
    if (srv->inner_resp)
        edhoc_wipe(srv->inner_resp, srv->inner_cap);
    if (srv->inner_cut)
        edhoc_wipe(srv->inner_cut, srv->inner_cap);
    free(srv->inner);
    free(srv->inner_resp);
    free(srv->inner_cut);
    free(srv->bytes_body);
    edhoc_bw_server_free(srv->bw);
    free(srv);
}

void edhoc_server_get_stats(const struct edhoc_server *srv, struct edhoc_server_stats *st)
{
    *st = srv->st;
    st->pending = srv->n_pending;
    st->contexts = srv->n_contexts;
    st->max_contexts = srv->cfg.max_contexts;
    size_t obs = 0;
    for (size_t i = 0; i < MAX_OBSERVERS; i++)
        obs += srv->observers[i].used;
    st->observers = obs;
}

void edhoc_server_set_sender(struct edhoc_server *srv,
                             int (*send)(void *user, struct edhoc_transport_peer *peer,
                                         const uint8_t *msg, size_t len),
                             void *user)
{
    srv->cfg.send = send;
    srv->cfg.send_user = user;
}

void edhoc_server_drop_pending(struct edhoc_server *srv)
{
    for (uint32_t i; (i = edhoc_ilru_oldest(&srv->pending_age)) != EDHOC_NONE;) {
        struct pending *h = pending_at(srv, i);
        hs_end_pending(srv, h, EDHOC_SERVER_FAILED, "message_3",
                       "dropped before message_3: the server's credentials were reloaded");
        pending_free(srv, h);
    }
}

size_t edhoc_server_record_shutdown(struct edhoc_server *srv, const char *why)
{
    size_t n = 0;
    for (uint32_t i = edhoc_ilru_oldest(&srv->pending_age); i != EDHOC_NONE;
         i = edhoc_ilru_newer(&srv->pending_age, i), n++)
        hs_end_pending(srv, pending_at(srv, i), EDHOC_SERVER_SHUTDOWN, "message_3", why);
    return n;
}

/* ---- State ---- */

static int load_one(void *user, const struct edhoc_state_peer *sp)
{
    struct edhoc_server *srv = user;
    struct oscore_params prm = {
        .aead_alg = sp->aead_alg,
        .hkdf_alg = sp->hkdf_alg,
        .master_secret = sp->master_secret,
        .master_secret_len = sp->master_secret_len,
        .master_salt = sp->master_salt,
        .master_salt_len = sp->master_salt_len,
        .id_context = sp->has_id_context ? sp->id_context : NULL,
        .id_context_len = sp->id_context_len,
        .sender_id = sp->sender_id,
        .sender_id_len = sp->sender_id_len,
        .recipient_id = sp->recipient_id,
        .recipient_id_len = sp->recipient_id_len,
    };
    if (sp->recipient_id_len > OSCORE_MAX_ID || sp->id_context_len > OSCORE_MAX_ID_CONTEXT)
        return 0;
    if (sp->method < 0) {
        /* Static contexts come back with their --oscore-context file. The
         * ID3 of an Appendix B.2 run does not: its replay window is gone,
         * which is what B.2 step 2 starts a new run for ("the server has
         * lost part of its security context, e.g., ... Replay Window"),
         * and that run draws a new R2, so no key of the old ID3 is ever
         * used again: its row goes. */
        if (strncmp(sp->peer, B2_ROW_TAG, strlen(B2_ROW_TAG)))
            return 0;
        if (srv->n_stale_b2 == srv->cap_stale_b2) {
            size_t cap = srv->cap_stale_b2 ? 2 * srv->cap_stale_b2 : 8;
            struct ctx_key *k = realloc(srv->stale_b2, cap * sizeof *k);
            if (!k)
                return OSCORE_ERR_NOMEM;
            srv->stale_b2 = k;
            srv->cap_stale_b2 = cap;
        }
        key_set(&srv->stale_b2[srv->n_stale_b2++], sp->has_id_context ? sp->id_context : NULL,
                sp->id_context_len, sp->recipient_id, sp->recipient_id_len);
        return 0;
    }
    struct ctx_key key;
    key_set(&key, prm.id_context, sp->id_context_len, sp->recipient_id, sp->recipient_id_len);
    /* Loaded in key order; put in order of use once all are in. */
    struct peer_ctx *p = ctx_insert(srv, &key, false);
    if (!p)
        return OSCORE_ERR_INVALID;
    p->used_ds = to_ds(server_ms_of(srv, sp->last_used));
    int rc = oscore_context_init(&p->osc, srv->cfg.ops, &prm);
    if (!rc)
        rc = oscore_context_resume(&p->osc, sp->ssn_mark);
    if (rc) {
        ctx_remove(srv, &key);
        return 0;
    }
    ctx_persist(p);
    return 0;
}

static int ctx_used_before(const void *a, const void *b)
{
    uint32_t x = ((const struct peer_ctx *)a)->used_ds, y = ((const struct peer_ctx *)b)->used_ds;
    return x < y ? -1 : x > y;
}

long edhoc_server_load_state(struct edhoc_server *srv)
{
    if (!srv->cfg.db)
        return 0;
    /* The policy holds across restarts: rows idle for longer than the
     * lifetime, then all but the max_contexts most recently used, are
     * deleted (with their marks) before anything is loaded. */
    uint64_t lifetime = srv->cfg.context_lifetime_ms;
    int64_t now = wall_now_ms();
    int64_t used_before = lifetime < (uint64_t)now ? now - (int64_t)lifetime : 0;
    uint64_t expired = 0, evicted = 0;
    int rc = 0, crc = 0;
    if (srv->cfg.workers <= 1) {
        state_write_begin(srv);
        rc = edhoc_state_prune(srv->cfg.db, used_before, srv->cfg.max_contexts, &expired,
                               &evicted);
        crc = state_write_end(srv);
    }
    if (rc || crc)
        return rc ? rc : crc;
    srv->st.contexts_expired += expired;
    srv->st.contexts_evicted += evicted;
    if (expired || evicted)
        logf_(srv, EDHOC_LOG_NOTICE,
              "state: %llu stored context%s idle for longer than the context lifetime and %llu "
              "beyond max contexts %zu deleted",
              (unsigned long long)expired, expired == 1 ? "" : "s", (unsigned long long)evicted,
              srv->cfg.max_contexts);
    size_t before = srv->n_contexts;
    srv->n_stale_b2 = 0;
    rc = edhoc_state_for_each_owned_peer(srv->cfg.db, srv->cfg.workers, srv->cfg.worker_index,
                                         load_one, srv);
    if (!rc && srv->n_stale_b2) {
        /* After the walk: a walk calls nothing else on the handle. */
        state_write_begin(srv);
        for (size_t i = 0; i < srv->n_stale_b2 && !rc; i++) {
            const struct ctx_key *k = &srv->stale_b2[i];
            rc = edhoc_state_delete_peer(srv->cfg.db, key_idc(k), k->idc_len, k->rid,
                                         k->rid_len);
            if (rc == EDHOC_STATE_ERR_NOT_FOUND)
                rc = 0;
        }
        int crc = state_write_end(srv);
        rc = rc ? rc : crc;
        if (!rc)
            logf_(srv, EDHOC_LOG_INFO,
                  "state: %zu context%s of RFC 8613 Appendix B.2 runs before the restart "
                  "deleted (replay windows gone: B.2 runs again)",
                  srv->n_stale_b2, srv->n_stale_b2 == 1 ? "" : "s");
    }
    free(srv->stale_b2);
    srv->stale_b2 = NULL;
    srv->n_stale_b2 = srv->cap_stale_b2 = 0;
    /* A table scan in key order and a sort here cost a fifth of reading
     * the rows in order of use through the index. */
    edhoc_ilru_sort(&srv->ctx_lru, ctx_used_before);
    if (rc)
        return rc;
    return (long)(srv->n_contexts - before);
}

int edhoc_server_save_state(struct edhoc_server *srv)
{
    if (!srv->cfg.db)
        return 0;
    /* Oldest first, each stored use after the one before: uses within one
     * tenth of a second keep their order too, which the next start's
     * choice of the most recently used relies on. Contexts not used during
     * the run keep the rows they were loaded from. */
    int64_t floor = 0;
    for (uint32_t i = edhoc_ilru_oldest(&srv->ctx_lru); i != EDHOC_NONE;
         i = edhoc_ilru_newer(&srv->ctx_lru, i)) {
        struct peer_ctx *p = ctx_at(srv, i);
        if (p->used_ds < srv->start_ds)
            continue;
        int64_t stamp = wall_ms_of(srv, used_ms(p));
        floor = stamp > floor ? stamp : floor + 1;
        state_write_begin(srv);
        int rc = edhoc_state_touch_peer(srv->cfg.db, key_idc(&p->key), p->key.idc_len,
                                        p->key.rid, p->key.rid_len, floor);
        if (rc && rc != EDHOC_STATE_ERR_NOT_FOUND) {
            logf_(srv, EDHOC_LOG_ERR, "state: cannot store when a context was used: %s",
                  edhoc_state_strerror(rc));
            break;
        }
        p->use = 0;
    }
    return state_write_end(srv);
}

/* Every value a static context has fits a state row, so none is ever
 * served without its mark being stored. */
_Static_assert(OSCORE_MAX_ID <= EDHOC_STATE_MAX_ID, "recipient / sender IDs fit the state");
_Static_assert(OSCORE_MAX_ID_CONTEXT <= EDHOC_STATE_MAX_ID_CONTEXT, "ID Contexts fit the state");
_Static_assert(OSCORE_MAX_MASTER_SECRET <= EDHOC_STATE_MAX_SECRET, "master secrets fit the state");
_Static_assert(OSCORE_MAX_MASTER_SALT <= EDHOC_STATE_MAX_SALT, "master salts fit the state");

/* The keying material the state's put compares to decide whether a row
 * is the same context (and keeps its mark) or a new one. */
static bool same_keying_material(const struct edhoc_state_peer *a,
                                 const struct edhoc_state_peer *b)
{
    return a->sender_id_len == b->sender_id_len &&
           !memcmp(a->sender_id, b->sender_id, a->sender_id_len) &&
           a->master_secret_len == b->master_secret_len &&
           edhoc_ct_equal(a->master_secret, b->master_secret, a->master_secret_len) &&
           a->master_salt_len == b->master_salt_len &&
           edhoc_ct_equal(a->master_salt, b->master_salt, a->master_salt_len) &&
           a->aead_alg == b->aead_alg && a->hkdf_alg == b->hkdf_alg;
}

/* The state row of a configured context (under key, which may carry
 * another ID Context than cfg's: Appendix B.2), its mark 0. */
static void static_row(struct edhoc_state_peer *sp, const struct ctx_key *key,
                       const struct oscore_config *cfg, const char *peer)
{
    memset(sp, 0, sizeof *sp);
    memcpy(sp->recipient_id, key->rid, key->rid_len);
    sp->recipient_id_len = key->rid_len;
    sp->has_id_context = key->has_idc;
    memcpy(sp->id_context, key->idc, key->idc_len);
    sp->id_context_len = key->idc_len;
    memcpy(sp->sender_id, cfg->sender_id, cfg->sender_id_len);
    sp->sender_id_len = cfg->sender_id_len;
    memcpy(sp->master_secret, cfg->master_secret, cfg->master_secret_len);
    sp->master_secret_len = cfg->master_secret_len;
    if (cfg->has_master_salt) {
        memcpy(sp->master_salt, cfg->master_salt, cfg->master_salt_len);
        sp->master_salt_len = cfg->master_salt_len;
    }
    sp->aead_alg = cfg->aead_alg;
    sp->hkdf_alg = cfg->hkdf_alg;
    sp->method = sp->suite = -1;
    snprintf(sp->peer, sizeof sp->peer, "%s", peer);
    sp->created = (int64_t)time(NULL);
}

int edhoc_server_add_static_context(struct edhoc_server *srv, const struct oscore_config *cfg,
                                    const char *origin)
{
    /* RFC 8613 Section 7.2.1 and Appendix B.1: a context used across
     * restarts must not reuse a sender sequence number. A static context
     * comes back with the same keys after every restart, so without a
     * durable mark it would start again at 0 and reuse nonces. */
    if (!srv->cfg.db)
        return EDHOC_SERVER_ERR_NO_STATE;
    if (cfg->recipient_id_len > OSCORE_MAX_ID || cfg->sender_id_len > OSCORE_MAX_ID ||
        (cfg->has_id_context && cfg->id_context_len > OSCORE_MAX_ID_CONTEXT) ||
        cfg->master_secret_len > OSCORE_MAX_MASTER_SECRET ||
        (cfg->has_master_salt && cfg->master_salt_len > OSCORE_MAX_MASTER_SALT))
        return OSCORE_ERR_INVALID;
    struct ctx_key key;
    key_set(&key, cfg->has_id_context ? cfg->id_context : NULL, cfg->id_context_len,
            cfg->recipient_id, cfg->recipient_id_len);
    /* Section 3.3: the ID Context together with the Recipient ID tells
     * contexts apart, so the same pair twice is one context configured
     * twice. */
    if (ctx_find(srv, &key))
        return OSCORE_ERR_INVALID;
    if (edhoc_state_owner(cfg->recipient_id, cfg->recipient_id_len, srv->cfg.workers) !=
        srv->cfg.worker_index)
        return EDHOC_SERVER_NOT_OWNED;
    struct b2_entry *b2 = NULL;
    if (cfg->rfc8613_b2) {
        /* Appendix B.2 step 2 derives ID2 = R2 || ID1, which must fit an
         * ID Context; and a request #1 names its inputs by kid alone, so
         * one set of inputs per Recipient ID. */
        if (cfg->id_context_len + OSCORE_B2_NONCE_LEN > OSCORE_MAX_ID_CONTEXT)
            return OSCORE_ERR_ID_CONTEXT_TOO_LONG;
        if (b2_find(srv, cfg->recipient_id, cfg->recipient_id_len))
            return OSCORE_ERR_INVALID;
        struct b2_entry *grown = realloc(srv->b2, (srv->n_b2 + 1) * sizeof *grown);
        if (!grown)
            return OSCORE_ERR_NOMEM;
        srv->b2 = grown;
        b2 = &srv->b2[srv->n_b2];
        memset(b2, 0, sizeof *b2);
        b2->cfg = *cfg;
        b2->configured = b2->current = key;
        if (oscore_b2_server_init(&b2->run, 0)) {
            edhoc_wipe(b2, sizeof *b2);
            return OSCORE_ERR_INVALID;
        }
    }
    struct peer_ctx *p = ctx_insert(srv, &key, true);
    int rc = p ? oscore_context_init_config(&p->osc, srv->cfg.ops, cfg) : OSCORE_ERR_INVALID;
    if (rc) {
        ctx_remove(srv, &key);
        if (b2)
            edhoc_wipe(b2, sizeof *b2);
        return rc;
    }

    struct edhoc_state_peer sp, stored;
    static_row(&sp, &key, cfg, "static");

    rc = edhoc_state_get_peer(srv->cfg.db, key_idc(&key), key.idc_len, key.rid, key.rid_len,
                              &stored);
    if (rc == 0 && same_keying_material(&stored, &sp)) {
        /* Seen before: continue above its mark, Echo for the window. A
         * mark past the sequence-number limit leaves the context unusable:
         * refuse it rather than serve a dead context. */
        rc = oscore_context_resume(&p->osc, stored.ssn_mark);
        if (!rc)
            logf_(srv, EDHOC_LOG_INFO, "static context %s: resumes above stored mark %llu",
                  origin ? origin : "", (unsigned long long)stored.ssn_mark);
    } else if (rc == 0 || rc == EDHOC_STATE_ERR_NOT_FOUND) {
        /* New, or new keying material under this key: its sequence
         * numbers start at 0 (put replaces the old row and its mark). */
        sp.ssn_mark = 0;
        rc = edhoc_state_put_peer(srv->cfg.db, &sp);
    }
    edhoc_wipe(&sp, sizeof sp);
    edhoc_wipe(&stored, sizeof stored);
    if (rc) {
        ctx_remove(srv, &key);
        if (b2)
            edhoc_wipe(b2, sizeof *b2);
        return rc;
    }
    ctx_persist(p);
    if (b2) {
        srv->n_b2++;
        logf_(srv, EDHOC_LOG_INFO,
              "static context %s: RFC 8613 Appendix B.2 (rfc8613_b_2): a request without a valid "
              "context gets response #1 instead of an Echo challenge",
              origin ? origin : "");
    }
    return 0;
}

/* ---- CoAP message helpers ---- */

static long build(const struct coap_msg *req, uint8_t code, int cf, const uint8_t *payload,
                  size_t payload_len, uint8_t *out, size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = req->type == COAP_TYPE_CON ? COAP_TYPE_ACK : COAP_TYPE_NON;
    m.code = code;
    m.mid = req->mid;
    m.token_len = req->token_len;
    memcpy(m.token, req->token, req->token_len);
    uint8_t cfv[4];
    if (cf >= 0)
        edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cfv, edhoc_coap_uint_encode((uint32_t)cf, cfv));
    m.payload = payload_len ? payload : NULL;
    m.payload_len = payload_len;
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

/* 5.03 Service Unavailable with Max-Age: "after how many seconds to
 * retry" (RFC 7252 Section 5.9.3.4). */
static long service_unavailable(const struct coap_msg *req, unsigned max_age_s, uint8_t *out,
                                size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = req->type == COAP_TYPE_CON ? COAP_TYPE_ACK : COAP_TYPE_NON;
    m.code = COAP_CODE(5, 3);
    m.mid = req->mid;
    m.token_len = req->token_len;
    memcpy(m.token, req->token, req->token_len);
    uint8_t v[4];
    edhoc_coap_msg_add_option(&m, COAP_OPT_MAX_AGE, v, edhoc_coap_uint_encode(max_age_s, v));
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

/* An EDHOC error message in a 4.00 (the peer's fault) or 5.00 response. */
static long edhoc_error_response(const struct coap_msg *req, const uint8_t *err, size_t err_len,
                                 bool ours, uint8_t *out, size_t cap)
{
    return build(req, ours ? COAP_CODE(5, 0) : COAP_CODE_BAD_REQUEST, EDHOC_COAP_CF_EDHOC, err,
                 err_len, out, cap);
}

/* An error code 1 with text; r (may be NULL) records it. */
static long edhoc_error_text_rec(const struct coap_msg *req, const char *text,
                                 struct edhoc_server_handshake *r, uint8_t *out, size_t cap)
{
    uint8_t err[EDHOC_MAX_ERROR_MESSAGE];
    int n = edhoc_error_message_write(err, sizeof err, EDHOC_ERR_CODE_UNSPECIFIED, text, NULL, 0);
    if (n < 0)
        return -1;
    if (r)
        hs_sent_error(r, err, (size_t)n);
    return edhoc_error_response(req, err, (size_t)n, false, out, cap);
}

static long edhoc_error_text(const struct coap_msg *req, const char *text, uint8_t *out, size_t cap)
{
    return edhoc_error_text_rec(req, text, NULL, out, cap);
}

static bool our_fault(int err)
{
    return err == EDHOC_ERR_CRYPTO || err == EDHOC_ERR_BUFFER || err == EDHOC_ERR_CREDENTIAL;
}

/* The session failed: answer with its error message (or a generic one). */
static long session_error_response(struct edhoc_server *srv, const struct coap_msg *req,
                                   const struct edhoc_session *s, int err, bool own_step,
                                   struct edhoc_server_handshake *r, uint8_t *out, size_t cap)
{
    uint8_t msg[EDHOC_MAX_ERROR_MESSAGE];
    int n = edhoc_session_write_error(s, msg, sizeof msg);
    (void)srv;
    if (n <= 0)
        n = edhoc_error_message_write(msg, sizeof msg, EDHOC_ERR_CODE_UNSPECIFIED,
                                      edhoc_strerror(err), NULL, 0);
    if (n < 0)
        return -1;
    if (r)
        hs_sent_error(r, msg, (size_t)n);
    /* 5.00 only when our own step (writing a message) failed on our side. */
    return edhoc_error_response(req, msg, (size_t)n, own_step && our_fault(err), out, cap);
}

static void cid_hex(const uint8_t *c, size_t len, char *out, size_t cap)
{
    hex(c, len, out, cap);
}

/* ---- EDHOC ---- */

static long on_message_1(struct edhoc_server *srv, const struct coap_msg *req, const char *peer,
                         const uint8_t *m1, size_t m1_len, int framing, uint8_t *out, size_t cap)
{
    struct edhoc_message_1_fields f;
    uint64_t hs_id = ++srv->hs_next;
    srv->hs_current = hs_id;
    struct edhoc_server_handshake rec;
    hs_init(srv, &rec, hs_id, peer, framing);
    rec.bytes[1] = m1_len;
    rec.step = "message_1";
    rec.outcome = EDHOC_SERVER_REFUSED;
    char text[200];
    int rc = edhoc_message_1_parse(m1, m1_len, &f);
    if (rc) {
        srv->st.handshakes_failed++;
        logf_(srv, EDHOC_LOG_NOTICE, "handshake peer=%s outcome=failed: message_1: %s", peer,
              edhoc_strerror(rc));
        long n = edhoc_error_text_rec(req, "message_1 malformed", &rec, out, cap);
        snprintf(text, sizeof text, "message_1: %s", edhoc_strerror(rc));
        rec.error = rc;
        rec.error_text = text;
        rec.duration_ms = mono_ms() - srv->req_t0_ms;
        hs_emit(srv, &rec);
        return n;
    }
    int suite = f.suites[f.n_suites - 1];
    rec.method = f.method;
    for (size_t i = 0; i < f.n_suites && i < EDHOC_MAX_SUITES; i++)
        rec.suites_i[i] = f.suites[i];
    rec.n_suites_i = f.n_suites;
    rec.suite = suite;
    memcpy(rec.c_i, f.c_i, f.c_i_len);
    rec.c_i_len = f.c_i_len;
    edhoc_cred_resolver resolve = NULL;
    void *resolve_ctx = NULL;
    const struct edhoc_config *cfg =
        srv->cfg.select(srv->cfg.select_user, f.method, suite, &resolve, &resolve_ctx);
    if (!cfg) {
        srv->st.handshakes_failed++;
        logf_(srv, EDHOC_LOG_NOTICE,
              "handshake peer=%s method=%d suite=%d outcome=failed: no credential for this method",
              peer, f.method, suite);
        long n = edhoc_error_text_rec(req, "method not supported", &rec, out, cap);
        snprintf(text, sizeof text, "message_1: method %d not supported", f.method);
        rec.error = EDHOC_ERR_METHOD;
        rec.error_text = text;
        rec.duration_ms = mono_ms() - srv->req_t0_ms;
        hs_emit(srv, &rec);
        return n;
    }
    struct pending *h = pending_alloc(srv, edhoc_amp_trust(srv->cfg.amp, peer));
    if (!h) {
        /* RFC 7252 Section 5.9.3.4: 5.03 with Max-Age, when to retry. */
        srv->st.handshakes_failed++;
        logf_(srv, EDHOC_LOG_INFO,
              "handshake peer=%s refused: max pending %zu reached, every handshake in progress "
              "is of a peer ranked above this endpoint",
              peer, srv->cfg.max_pending);
        rec.error_text = "message_1: refused, the handshakes in progress fill --max-pending and "
                         "are all of peers ranked above this endpoint";
        rec.duration_ms = mono_ms() - srv->req_t0_ms;
        hs_emit(srv, &rec);
        return service_unavailable(req, 1, out, cap);
    }
    h->framing = (uint8_t)framing;
    snprintf(h->peer, sizeof h->peer, "%s", peer);
    h->started_ms = srv->now_ms;
    h->cfg = cfg;
    h->resolve = resolve;
    h->resolve_ctx = resolve_ctx;
    h->hs_id = hs_id;
    h->t0_ms = srv->req_t0_ms;
    for (size_t i = 0; i < f.n_suites && i < EDHOC_MAX_SUITES; i++)
        h->suites_i[i] = (int8_t)f.suites[i];
    h->n_suites_i = (uint8_t)f.n_suites;
    h->m1_bytes = (uint16_t)(m1_len > UINT16_MAX ? UINT16_MAX : m1_len);
    if (framing == EDHOC_FRAMING_BARE) {
        /* A bare peer is known by its address: a new message_1 from it
         * replaces its earlier handshake. */
        for (struct pending *o; (o = pending_find_bare(srv, peer));) {
            hs_end_pending(srv, o, EDHOC_SERVER_EVICTED, "message_3",
                           "replaced before message_3 by a new message_1 from the same "
                           "address (bare framing)");
            pending_free(srv, o);
        }
    }
    edhoc_session_init(&h->s, EDHOC_RESPONDER, cfg);
    size_t c_r_len = 0;
    if (choose_c_r(srv, f.c_i, f.c_i_len, h->c_r, &c_r_len)) {
        pending_free(srv, h);
        long n = edhoc_error_text_rec(req, "no free connection identifier", &rec, out, cap);
        rec.outcome = EDHOC_SERVER_FAILED;
        rec.error_text = "message_2: no free connection identifier C_R";
        rec.duration_ms = mono_ms() - srv->req_t0_ms;
        hs_emit(srv, &rec);
        return n;
    }
    h->c_r_len = (uint8_t)c_r_len;
    pending_index(srv, h);
    edhoc_session_set_conn_id(&h->s, h->c_r, c_r_len);
    rc = edhoc_responder_process_message_1(&h->s, m1, m1_len, NULL);
    if (rc) {
        struct edhoc_server_handshake r;
        hs_from_pending(srv, h, &r);
        long n = session_error_response(srv, req, &h->s, rc, rc == EDHOC_ERR_CRYPTO, &r, out, cap);
        char cis[20];
        cid_hex(f.c_i, f.c_i_len, cis, sizeof cis);
        srv->st.handshakes_failed++;
        logf_(srv, EDHOC_LOG_NOTICE,
              "handshake peer=%s method=%d suite=%d C_I=%s bytes=%zu outcome=failed: %s", peer,
              f.method, suite, cis, m1_len, edhoc_strerror(rc));
        edhoc_session_error_text(&h->s, text, sizeof text);
        r.outcome = rc == EDHOC_ERR_CRYPTO ? EDHOC_SERVER_FAILED : EDHOC_SERVER_REFUSED;
        r.method = f.method; /* the session stops before it takes them over */
        memcpy(r.c_i, f.c_i, f.c_i_len);
        r.c_i_len = f.c_i_len;
        r.step = "message_1";
        r.error = rc;
        r.error_text = text;
        r.c_r_len = 0; /* never sent */
        hs_emit(srv, &r);
        pending_free(srv, h);
        return n;
    }
    int n = edhoc_responder_prepare_message_2(&h->s, srv->buf, sizeof srv->buf);
    if (n < 0) {
        struct edhoc_server_handshake r;
        hs_from_pending(srv, h, &r);
        long resp = session_error_response(srv, req, &h->s, n, true, &r, out, cap);
        srv->st.handshakes_failed++;
        logf_(srv, EDHOC_LOG_NOTICE, "handshake peer=%s method=%d suite=%d outcome=failed: %s",
              peer, f.method, suite, edhoc_strerror(n));
        edhoc_session_error_text(&h->s, text, sizeof text);
        r.outcome = our_fault(n) ? EDHOC_SERVER_FAILED : EDHOC_SERVER_REFUSED;
        r.step = "message_2";
        r.error = n;
        r.error_text = text;
        hs_emit(srv, &r);
        pending_free(srv, h);
        return resp;
    }
    h->bytes = m1_len + (size_t)n;
    h->m2_bytes = (uint16_t)n;
    return build(req, COAP_CODE_CHANGED, framing == EDHOC_FRAMING_A2 ? EDHOC_COAP_CF_EDHOC : -1,
                 srv->buf, (size_t)n, out, cap);
}

/* NULL, or which deviations of the initiator --tolerate accepted on this
 * handshake (said on every handshake it affected). */
static const char *tolerated_text(const struct pending *h)
{
    static char text[200];
    unsigned t = edhoc_session_tolerated(&h->s);
    if (!t)
        return NULL;
    char names[120];
    edhoc_deviations_format(t, names, sizeof names);
    snprintf(text, sizeof text, "tolerated %s (the initiator deviates from RFC 9528)", names);
    return text;
}

static void log_done(struct edhoc_server *srv, const struct pending *h, size_t m3_len,
                     const char *outcome, const char *why)
{
    int level = strcmp(outcome, "ok") ? EDHOC_LOG_NOTICE : EDHOC_LOG_INFO;
    if (!log_wanted(srv, level))
        return;
    char cis[20], crs[20];
    size_t c_i_len = 0;
    const uint8_t *c_i = edhoc_session_peer_conn_id(&h->s, &c_i_len);
    cid_hex(c_i, c_i ? c_i_len : 0, cis, sizeof cis);
    cid_hex(h->c_r, h->c_r_len, crs, sizeof crs);
    logf_(srv, level,
          "handshake peer=%s method=%d suite=%d C_I=%s C_R=%s framing=%s bytes=%zu outcome=%s%s%s",
          h->peer, edhoc_session_method(&h->s), edhoc_session_suite(&h->s), cis, crs,
          h->framing == EDHOC_FRAMING_BARE ? "bare" : "A.2", h->bytes + m3_len, outcome,
          why ? ": " : "", why ? why : "");
}

/* Whether OSCORE can follow this handshake: RFC 8613 Section 3.2.1 has
 * the HKDF of HMAC with SHA-256 (and the SHA-2 family the COSE registry
 * pairs with it); suite 25's SHAKE256 has no HMAC. */
static bool oscore_follows(const struct pending *h)
{
    /* Decided from the selected suite alone: deriving the OSCORE
     * parameters here and again in establish() cost four HKDF-Expand
     * calls per handshake. */
    const struct edhoc_suite *su = edhoc_suite_find(edhoc_session_suite(&h->s));
    if (!su)
        return true; /* establish() reports the failure */
    return su->app_hash == -16 || su->app_hash == -43 || su->app_hash == -44;
}

/* message_3 accepted: the OSCORE context for this peer. */
static struct peer_ctx *establish(struct edhoc_server *srv, struct pending *h)
{
    struct edhoc_oscore_params op;
    if (edhoc_session_oscore(&h->s, &op))
        return NULL;
    if (op.recipient_id_len > OSCORE_MAX_ID || op.sender_id_len > OSCORE_MAX_ID) {
        edhoc_wipe(&op, sizeof op);
        return NULL;
    }
    /* RFC 9528 Appendix A.1 derives the context without an ID Context. */
    struct ctx_key key;
    key_set(&key, NULL, 0, op.recipient_id, op.recipient_id_len);
    /* The least recently used contexts make room, their rows deleted in
     * the transaction that stores the new one. */
    state_write_begin(srv);
    if (!ctx_find(srv, &key))
        ctx_make_room(srv);
    struct peer_ctx *p = ctx_insert(srv, &key, false);
    if (!p) {
        state_write_end(srv);
        edhoc_wipe(&op, sizeof op);
        return NULL;
    }
    int rc = oscore_context_init_edhoc(&p->osc, srv->cfg.ops, op.master_secret,
                                       op.master_secret_len, op.master_salt, op.master_salt_len,
                                       op.sender_id, op.sender_id_len, op.recipient_id,
                                       op.recipient_id_len, op.aead_alg, op.hash_alg);
    if (!rc && srv->cfg.db) {
        struct edhoc_state_peer sp;
        memset(&sp, 0, sizeof sp);
        memcpy(sp.recipient_id, op.recipient_id, op.recipient_id_len);
        sp.recipient_id_len = op.recipient_id_len;
        memcpy(sp.sender_id, op.sender_id, op.sender_id_len);
        sp.sender_id_len = op.sender_id_len;
        /* A context whose keying material cannot be stored is not served:
         * its marks would be lost with it. */
        rc = EDHOC_STATE_ERR_ARG;
        if (op.master_secret_len <= sizeof sp.master_secret &&
            op.master_salt_len <= sizeof sp.master_salt) {
            memcpy(sp.master_secret, op.master_secret, op.master_secret_len);
            sp.master_secret_len = op.master_secret_len;
            memcpy(sp.master_salt, op.master_salt, op.master_salt_len);
            sp.master_salt_len = op.master_salt_len;
            sp.aead_alg = op.aead_alg;
            sp.hkdf_alg = op.hash_alg;
            /* With group commit the row goes with its first block of
             * sequence numbers and nothing waits for it: until it is
             * durable the keys are nowhere but in memory, so a crash
             * loses the context whole (RFC 8613 Section 8.2: 4.01, the
             * device runs EDHOC again, new keys) and no restart can use
             * a number of this block again. From the row's commit on,
             * its mark covers the block. */
            bool grouped = edhoc_state_is_grouped(srv->cfg.db);
            sp.ssn_mark = grouped ? srv->cfg.ssn_freq : 0;
            struct ctx_mark *m =
                edhoc_state_event_fd(srv->cfg.db) >= 0 ? ctx_mark_of(srv, p) : NULL;
            if (m)
                *m = (struct ctx_mark){srv->cfg.ssn_freq, 0};
            snprintf(sp.peer, sizeof sp.peer, "%s", h->peer);
            sp.created = (int64_t)time(NULL);
            sp.last_used = wall_ms_of(srv, used_ms(p));
            sp.method = edhoc_session_method(&h->s);
            sp.suite = edhoc_session_suite(&h->s);
            rc = edhoc_state_put_peer(srv->cfg.db, &sp);
        }
        edhoc_wipe(&sp, sizeof sp);
        /* Durable here, or not served. */
        int crc = state_write_end(srv);
        if (!rc)
            rc = crc;
        if (rc)
            logf_(srv, EDHOC_LOG_ERR, "cannot store the new context: %s",
                  edhoc_state_strerror(rc));
        else
            ctx_persist(p);
    }
    edhoc_wipe(&op, sizeof op);
    /* The evictions stand whatever became of the new context. */
    state_write_end(srv);
    if (rc) {
        ctx_remove(srv, &key);
        return NULL;
    }
    return p;
}

/* Run message_3 of handshake h. Returns 0 (context established, *ctx set),
 * or a response already written (> 0) / -1. */
/* The trust lookup of message_3, seen by the interop record: what the
 * initiator named (full map form and as it stood in PLAINTEXT_3) and the
 * credential it resolved to. */
static int record_resolve(void *ctx, const uint8_t *id_cred, size_t len,
                          const struct edhoc_cred **cred)
{
    struct edhoc_server *srv = ctx;
    struct pending *h = srv->m3_h;
    if (len <= sizeof srv->m3_id_cred) {
        memcpy(srv->m3_id_cred, id_cred, len);
        srv->m3_id_cred_len = len;
    }
    const struct edhoc_received *rx = &srv->rx;
    if (rx->plaintext_len <= sizeof rx->plaintext && rx->id_cred_off <= rx->plaintext_len &&
        rx->id_cred_enc_len <= rx->plaintext_len - rx->id_cred_off &&
        rx->id_cred_enc_len <= sizeof srv->m3_id_cred_sent) {
        memcpy(srv->m3_id_cred_sent, rx->plaintext + rx->id_cred_off, rx->id_cred_enc_len);
        srv->m3_id_cred_sent_len = rx->id_cred_enc_len;
    }
    int rc = h->resolve(h->resolve_ctx, id_cred, len, cred);
    srv->m3_cred = rc == 0 ? *cred : NULL;
    return rc;
}

static void amp_handshake_completed(struct edhoc_server *srv, const struct pending *h,
                                    bool from_own_peer);

/* Whether the request being handled comes from the address handshake h's
 * message_1 came from (and its message_2 went to). */
static bool from_own_peer(const struct edhoc_server *srv, const struct pending *h)
{
    return !srv->hs_peer || !strcmp(srv->hs_peer, h->peer);
}

/* RFC 9528 Section 9.7: "An attacker can also send faked message_2,
 * message_3, message_4, or error in an attempt to trick the receiving
 * party to send an error message and abort the EDHOC session. EDHOC
 * implementations MAY evaluate if a received message is likely to have
 * been forged by an attacker and ignore it without sending an error
 * message or aborting the EDHOC session." C_R is sent in clear and a
 * one-byte one has 48 values, so a message naming it from an address that
 * is not the handshake's own, and that proves nothing (an error message,
 * or a message_3 that does not verify), is taken as forged: the handshake
 * goes on for its own peer, and the sender gets a CoAP error without an
 * EDHOC error message in it (Section 6: after sending an error message
 * "the sender MUST abort the EDHOC session"). */
static long ignored_from_elsewhere(struct edhoc_server *srv, const struct coap_msg *req,
                                   const struct pending *h, const char *what,
                                   const char *diagnostic, uint8_t *out, size_t cap)
{
    char crs[20];
    cid_hex(h->c_r, h->c_r_len, crs, sizeof crs);
    logf_(srv, EDHOC_LOG_INFO,
          "EDHOC request from %s for C_R %s ignored: %s, and not from the address of its "
          "message_1 (%s); the handshake goes on (RFC 9528 Section 9.7)",
          srv->hs_peer ? srv->hs_peer : "?", crs, what, h->peer);
    return build(req, COAP_CODE(4, 3), -1, (const uint8_t *)diagnostic, strlen(diagnostic), out,
                 cap);
}

/* message_3 verified but no OSCORE context follows: the handshake ends
 * as failed (or refused), logged and recorded, and its slot is freed. */
static void no_context(struct edhoc_server *srv, struct pending *h, size_t m3_len, bool combined,
                       enum edhoc_server_outcome outcome, const char *why,
                       const char *record_text)
{
    srv->st.handshakes_failed++;
    log_done(srv, h, m3_len, "failed", why);
    if (srv->cfg.record) {
        struct edhoc_server_handshake r;
        hs_from_pending(srv, h, &r);
        hs_add_message_3(srv, h, &r);
        r.combined = combined;
        r.bytes[3] = m3_len;
        r.outcome = outcome;
        r.step = "OSCORE context";
        r.error_text = record_text;
        hs_emit(srv, &r);
    }
    srv->m3_h = NULL;
    pending_free(srv, h);
}

static long run_message_3(struct edhoc_server *srv, const struct coap_msg *req, struct pending *h,
                          const uint8_t *m3, size_t m3_len, bool combined, struct peer_ctx **ctx,
                          uint8_t *out, size_t cap)
{
    srv->m3_h = h;
    srv->m3_cred = NULL;
    srv->m3_id_cred_len = srv->m3_id_cred_sent_len = 0;
    /* A message_3 from another address is tried on the session's state
     * and, when it does not verify, the state is put back as it was: only
     * the handshake's own peer ends it with a failed message_3 (RFC 9528
     * Section 5.4.3: "If any processing step fails, then the Responder
     * MUST send an EDHOC error message back ..., and the EDHOC session
     * MUST be aborted"; from elsewhere, Section 9.7 lets us ignore a
     * message likely forged). One that verifies completes the handshake
     * wherever it comes from: it is no forgery, since only the holder of
     * the initiator's ephemeral key can make CIPHERTEXT_3 decrypt under
     * K_3, and Signature_or_MAC_3 needs its authentication key; and
     * Appendix A.2 correlates the messages of a session by C_R, not by
     * address, so an initiator behind a NAT whose mapping changed between
     * message_2 and message_3 (rebinding) still completes. Whoever replays
     * a captured message_3 from elsewhere completes the same handshake
     * with keys only the initiator has, and gets no trust for its address
     * from it (amp_handshake_completed). */
    bool own_peer = from_own_peer(srv, h);
    struct edhoc_session kept;
    if (!own_peer)
        kept = h->s;
    int rc = edhoc_responder_handle_message_3(&h->s, m3, m3_len, &srv->rx,
                                              srv->cfg.record ? record_resolve : h->resolve,
                                              srv->cfg.record ? (void *)srv : h->resolve_ctx);
    if (!own_peer) {
        if (rc) {
            edhoc_session_wipe(&h->s);
            h->s = kept;
        }
        edhoc_wipe(&kept, sizeof kept);
        if (rc) {
            srv->m3_h = NULL;
            char what[120];
            snprintf(what, sizeof what, "message_3 does not verify (%s)", edhoc_strerror(rc));
            return ignored_from_elsewhere(srv, req, h, what,
                                          "message_3 not verified, not from the handshake's "
                                          "address",
                                          out, cap);
        }
        char crs[20];
        cid_hex(h->c_r, h->c_r_len, crs, sizeof crs);
        logf_(srv, EDHOC_LOG_INFO,
              "handshake C_R=%s: message_3 verified from %s, not the address of message_1 (%s): "
              "the initiator's address changed (NAT rebinding?); completing with %s",
              crs, srv->hs_peer, h->peer, srv->hs_peer);
        /* Its A.2 handshake is found by C_R alone (a bare one by address,
         * which never gets here), so the new address can replace the old
         * one: the log, the record and the context's row name where the
         * peer is now. */
        if (h->framing == EDHOC_FRAMING_A2)
            snprintf(h->peer, sizeof h->peer, "%s", srv->hs_peer);
    }
    if (rc) {
        struct edhoc_server_handshake r;
        if (srv->cfg.record) {
            hs_from_pending(srv, h, &r);
            hs_add_message_3(srv, h, &r);
            r.combined = combined;
            r.bytes[3] = m3_len;
        }
        long n = session_error_response(srv, req, &h->s, rc, rc == EDHOC_ERR_CRYPTO,
                                        srv->cfg.record ? &r : NULL, out, cap);
        srv->st.handshakes_failed++;
        /* The step, and the deviation that explains a failed MAC_3 or
         * signature when one does (RFC 9528 Section 5.4.3). */
        char text[400];
        edhoc_session_error_text(&h->s, text, sizeof text);
        struct edhoc_diagnosis diag;
        bool diagnosed = edhoc_session_diagnosis(&h->s, &diag) == 0 && diag.matched;
        log_done(srv, h, m3_len, "failed", diagnosed ? text : edhoc_strerror(rc));
        if (srv->cfg.record) {
            r.diagnosis = diagnosed ? diag.text : "";
            r.outcome = rc == EDHOC_ERR_MAC || rc == EDHOC_ERR_SIGNATURE || rc == EDHOC_ERR_DECRYPT
                            ? EDHOC_SERVER_VERIFY
                        : our_fault(rc) && rc != EDHOC_ERR_CREDENTIAL ? EDHOC_SERVER_FAILED
                                                                       : EDHOC_SERVER_REFUSED;
            r.step = "message_3";
            r.error = rc;
            r.error_text = text;
            hs_emit(srv, &r);
        }
        srv->m3_h = NULL;
        pending_free(srv, h);
        return n;
    }
    if (!oscore_follows(h)) {
        /* EDHOC only: RFC 8613 Section 3.2.1 derives OSCORE keys with an
         * HKDF over HMAC, which this suite's hash (SHAKE256) has not, so
         * no context is made (RFC 9528 Section 3.6 leaves the application
         * to the suite's users). message_3 is answered as usual. */
        amp_handshake_completed(srv, h, own_peer);
        *ctx = NULL;
        if (!combined)
            return 0;
        no_context(srv, h, m3_len, true, EDHOC_SERVER_REFUSED,
                   "combined request (RFC 9668) with a suite that has no OSCORE (RFC 8613 "
                   "Section 3.2.1)",
                   "suite without OSCORE in a combined request");
        static const char why[] = "no OSCORE for this suite (RFC 8613 Section 3.2.1)";
        return build(req, COAP_CODE(5, 1), -1, (const uint8_t *)why, sizeof why - 1, out, cap);
    }
    *ctx = establish(srv, h);
    if (*ctx)
        amp_handshake_completed(srv, h, own_peer);
    if (!*ctx) {
        no_context(srv, h, m3_len, combined, EDHOC_SERVER_FAILED,
                   "cannot set up the OSCORE context", "cannot set up the OSCORE context");
        return build(req, COAP_CODE(5, 0), -1, NULL, 0, out, cap);
    }
    return 0;
}

/* The handshake ended well: its record, and its context awaits the first
 * OSCORE request. */
static void hs_ok(struct edhoc_server *srv, const struct pending *h, const struct peer_ctx *ctx,
                  size_t m3_len, size_t m4_len, bool combined)
{
    if (srv->cfg.record) {
        struct edhoc_server_handshake r;
        hs_from_pending(srv, h, &r);
        hs_add_message_3(srv, h, &r);
        r.outcome = EDHOC_SERVER_OK;
        r.tolerated = edhoc_session_tolerated(&h->s);
        r.combined = combined;
        r.bytes[3] = m3_len;
        r.bytes[4] = m4_len;
        r.message_4_sent = m4_len > 0;
        hs_emit(srv, &r);
    }
    srv->m3_h = NULL;
    if (ctx)
        first_request_add(srv, h->hs_id, &ctx->key, h->peer);
}

static long on_message_3(struct edhoc_server *srv, const struct coap_msg *req, struct pending *h,
                         const uint8_t *m3, size_t m3_len, uint8_t *out, size_t cap)
{
    struct peer_ctx *ctx = NULL;
    long r = run_message_3(srv, req, h, m3, m3_len, false, &ctx, out, cap);
    if (r)
        return r;
    srv->st.handshakes_ok++;
    int framing = h->framing;
    long resp;
    size_t m4_len = 0;
    if (srv->cfg.message_4) {
        int n = edhoc_responder_prepare_message_4(&h->s, srv->buf, sizeof srv->buf);
        if (n < 0) {
            log_done(srv, h, m3_len, "failed", edhoc_strerror(n));
            if (srv->cfg.record) {
                struct edhoc_server_handshake rec;
                hs_from_pending(srv, h, &rec);
                hs_add_message_3(srv, h, &rec);
                rec.bytes[3] = m3_len;
                rec.outcome = EDHOC_SERVER_FAILED;
                rec.step = "message_4";
                rec.error = n;
                rec.error_text = edhoc_strerror(n);
                hs_emit(srv, &rec);
            }
            srv->m3_h = NULL;
            pending_free(srv, h);
            return build(req, COAP_CODE(5, 0), -1, NULL, 0, out, cap);
        }
        m4_len = (size_t)n;
        resp = build(req, COAP_CODE_CHANGED, framing == EDHOC_FRAMING_A2 ? EDHOC_COAP_CF_EDHOC : -1,
                     srv->buf, m4_len, out, cap);
    } else {
        resp = build(req, COAP_CODE_CHANGED, -1, NULL, 0, out, cap);
    }
    log_done(srv, h, m3_len + m4_len, "ok",
             ctx ? tolerated_text(h)
                 : "EDHOC only: no OSCORE context for this suite (RFC 8613 Section 3.2.1 has "
                   "no HKDF for its hash)");
    hs_ok(srv, h, ctx, m3_len, m4_len, false);
    pending_free(srv, h);
    return resp;
}

/* An error message from the initiator aborts its handshake. */
static long on_peer_error(struct edhoc_server *srv, const struct coap_msg *req, struct pending *h,
                          const uint8_t *msg, size_t len, uint8_t *out, size_t cap)
{
    struct edhoc_error_info info;
    int rc = edhoc_session_process_error(&h->s, msg, len, &info);
    char why[160];
    if (rc == EDHOC_ERR_PEER_ERROR)
        snprintf(why, sizeof why, "error message from the initiator: ERR_CODE %lld%s%.*s",
                 (long long)info.code, info.text_len ? " " : "",
                 (int)(info.text_len < 100 ? info.text_len : 100), info.text ? info.text : "");
    else
        snprintf(why, sizeof why, "malformed error message from the initiator");
    srv->st.handshakes_failed++;
    log_done(srv, h, len, "failed", why);
    if (srv->cfg.record) {
        struct edhoc_server_handshake r;
        hs_from_pending(srv, h, &r);
        char diag[120];
        snprintf(diag, sizeof diag, "%.*s",
                 rc == EDHOC_ERR_PEER_ERROR ? (int)(info.text_len < 100 ? info.text_len : 100) : 0,
                 rc == EDHOC_ERR_PEER_ERROR && info.text ? info.text : "");
        r.outcome = EDHOC_SERVER_PEER_ERROR;
        r.step = "message_2";
        r.error = rc;
        r.error_text = why;
        r.err_code = rc == EDHOC_ERR_PEER_ERROR && info.code >= INT32_MIN && info.code <= INT32_MAX
                         ? (int)info.code
                         : -1;
        r.peer_diagnostic = diag;
        r.error_bytes = len;
        hs_emit(srv, &r);
    }
    pending_free(srv, h);
    return build(req, COAP_CODE_CHANGED, -1, NULL, 0, out, cap);
}

static bool first_is_error(const uint8_t *p, size_t len)
{
    return len >= 1 && ((p[0] & 0xe0) == 0x00 || (p[0] & 0xe0) == 0x20) &&
           edhoc_message_is_error(p, len);
}

/* A stateless Echo value for a peer address: H(secret, peer, 30 s slot). */
static void echo_value(const struct edhoc_server *srv, const char *peer, uint64_t slot,
                       uint8_t out[OSCORE_ECHO_LEN])
{
    uint8_t in[32 + MAX_PEER_NAME + 8], h[64];
    size_t pl = strlen(peer) < MAX_PEER_NAME ? strlen(peer) : MAX_PEER_NAME;
    memcpy(in, srv->echo_secret, 32);
    memcpy(in + 32, peer, pl);
    for (int i = 0; i < 8; i++)
        in[32 + pl + i] = (uint8_t)(slot >> (8 * i));
    if (srv->cfg.ops->hash(EDHOC_COSE_SHA256, in, 32 + pl + 8, h))
        memset(h, 0, sizeof h);
    memcpy(out, h, OSCORE_ECHO_LEN);
}

/* Whether req carries an Echo value we gave peer in this 30 s slot or
 * the one before (they are stateless: keyed by echo_secret). */
static bool echo_valid(const struct edhoc_server *srv, const struct coap_msg *req,
                       const char *peer)
{
    uint64_t slot = (uint64_t)time(NULL) / 30;
    uint8_t v[OSCORE_ECHO_LEN];
    const struct coap_option *e = edhoc_coap_msg_find_option(req, COAP_OPT_ECHO);
    for (uint64_t s = slot; e && e->len == OSCORE_ECHO_LEN && s + 1 >= slot; s--) {
        echo_value(srv, peer, s, v);
        if (edhoc_ct_equal(v, e->value, OSCORE_ECHO_LEN))
            return true;
        if (s == 0)
            break;
    }
    return false;
}

/* A 4.01 with a fresh Echo value for peer, piggybacked on the ACK of a
 * confirmable request, else Non-confirmable: RFC 9175 Section 2.4 item 3,
 * "it MUST be sent as a piggybacked or Non-confirmable response, never as
 * a separate one". Returns its length or -1. */
static long echo_challenge(const struct edhoc_server *srv, const struct coap_msg *req,
                           const char *peer, uint8_t *out, size_t cap)
{
    uint8_t v[OSCORE_ECHO_LEN];
    echo_value(srv, peer, (uint64_t)time(NULL) / 30, v);
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = req->type == COAP_TYPE_CON ? COAP_TYPE_ACK : COAP_TYPE_NON;
    m.code = COAP_CODE_UNAUTHORIZED;
    m.mid = req->mid;
    m.token_len = req->token_len;
    memcpy(m.token, req->token, req->token_len);
    edhoc_coap_msg_add_option(&m, COAP_OPT_ECHO, v, sizeof v);
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

/* True when message_1 may proceed; else out holds the 4.01 Echo challenge. */
static bool echo_ok(struct edhoc_server *srv, const struct coap_msg *req, const char *peer,
                    uint8_t *out, size_t cap, long *resp_len)
{
    if (echo_valid(srv, req, peer))
        return true;
    *resp_len = echo_challenge(srv, req, peer, out, cap);
    if (*resp_len > 0) {
        srv->st.echo_challenges++;
        logf_(srv, EDHOC_LOG_DEBUG, "Echo challenge peer=%s: message_1 without a valid Echo "
                                    "(--echo)", peer);
    }
    return false;
}

/* ---- The amplification limit (edhoc/amplification.h) ----
 * RFC 9528 Section 9.7: "by sending a number of new or replayed
 * message_1 an attacker may cause the Responder to [...] amplify
 * messages"; RFC 9175 Section 2.4 item 3: until the peer's address is
 * confirmed, no more than three times the bytes received, confirmed by a
 * 4.01 with Echo. The transport counts the bytes; here an address becomes
 * verified, and a message_1 whose message_2 would not fit is answered with
 * the 4.01 before any crypto is spent on it. */

/* Header, token, Content-Format (2) and payload marker of a response. */
#define AMP_RESPONSE_HEAD(req) (4u + (req)->token_len + 2u + 1u)
/* What each block adds when a body goes block-wise (RFC 7959): Block2,
 * ETag and the first block's Size2 at most. */
#define AMP_BLOCK_OPTIONS 16u

/* The bytes the answer carrying a message_2 of m2_len bytes takes, every
 * block of it when it goes block-wise: so that the client's follow-up
 * requests, which only add to the budget, never meet the limit. */
static size_t amp_message_2_answer(const struct edhoc_server *srv, const struct coap_msg *req,
                                   size_t m2_len)
{
    size_t bs = srv->cfg.block_size ? srv->cfg.block_size : 1024;
    if (m2_len <= bs)
        return AMP_RESPONSE_HEAD(req) + m2_len;
    size_t blocks = (m2_len + bs - 1) / bs;
    return blocks * (AMP_RESPONSE_HEAD(req) + AMP_BLOCK_OPTIONS) + m2_len;
}

/* An Echo value of ours came back from peer: its address is verified
 * ("the client's retry with the Echo value", RFC 9175 Section 2.4 item
 * 3: "This needs to be done only once per endpoint"). */
static void amp_take_echo(struct edhoc_server *srv, const struct coap_msg *req, const char *peer)
{
    if (!srv->cfg.amp || !edhoc_coap_msg_find_option(req, COAP_OPT_ECHO) ||
        edhoc_amp_is_verified(srv->cfg.amp, peer) || !echo_valid(srv, req, peer))
        return;
    edhoc_amp_verify(srv->cfg.amp, peer);
    logf_(srv, EDHOC_LOG_DEBUG, "amplification limit: peer=%s verified (Echo)", peer);
}

/* A request from peer verified under an OSCORE context: only a peer that
 * receives at its address could have established it. */
static void amp_oscore_verified(struct edhoc_server *srv, const char *peer)
{
    if (!srv->cfg.amp || edhoc_amp_trust(srv->cfg.amp, peer) == EDHOC_AMP_AUTHENTICATED)
        return;
    bool was_verified = edhoc_amp_is_verified(srv->cfg.amp, peer);
    edhoc_amp_authenticate(srv->cfg.amp, peer);
    if (!was_verified)
        logf_(srv, EDHOC_LOG_DEBUG, "amplification limit: peer=%s verified (OSCORE)", peer);
}

/* A message_3 completed handshake h: its sender received message_2 and
 * holds a credential we accept, which a flood that only answers Echo does
 * not (pending_alloc ranks it above those). Only when it came from the
 * address message_2 went to (from_own_peer): from anywhere else it proves
 * nothing about that address (whoever received message_2 elsewhere could
 * put it in the source of message_3). */
static void amp_handshake_completed(struct edhoc_server *srv, const struct pending *h,
                                    bool from_own_peer)
{
    const char *peer = srv->hs_peer;
    if (!srv->cfg.amp || !peer || !from_own_peer || strcmp(peer, h->peer) ||
        edhoc_amp_trust(srv->cfg.amp, peer) == EDHOC_AMP_AUTHENTICATED)
        return;
    bool was_verified = edhoc_amp_is_verified(srv->cfg.amp, peer);
    edhoc_amp_authenticate(srv->cfg.amp, peer);
    logf_(srv, EDHOC_LOG_DEBUG, "amplification limit: peer=%s %s (handshake completed)", peer,
          was_verified ? "authenticated" : "verified");
}

/* RFC 9528 Section 9.7: "by sending a number of new or replayed message_1
 * an attacker may cause the Responder to allocate state, perform
 * cryptographic operations, and amplify messages. [...] the CoAP server
 * can use the Echo option defined in [RFC9175] which forces the CoAP
 * client to demonstrate reachability at its apparent network address";
 * Appendix A.2: "the CoAP server MAY respond to the first POST request
 * with a 4.01 (Unauthorized) containing an Echo option". Under pressure
 * (edhoc_amp_message_1_pressure: message_1s from unverified endpoints
 * above --pressure-rate a second, or the pending table full) every
 * message_1 of an unverified endpoint gets the stateless 4.01 + Echo
 * before any crypto or slot, whatever the credential type; verified
 * endpoints go on as normal, except that those verified by Echo alone
 * start at most --pressure-rate handshakes a second between them
 * (edhoc_amp_admit_reachable: 5.03 beyond). True when *resp holds that
 * answer (or 0: even the 4.01 exceeds the amplification budget). */
static bool pressure_holds_back_message_1(struct edhoc_server *srv, const struct coap_msg *req,
                                          const char *peer, uint8_t *out, size_t cap, long *resp)
{
    struct edhoc_amp *a = srv->cfg.amp;
    enum edhoc_amp_trust trust = edhoc_amp_trust(a, peer);
    if (trust == EDHOC_AMP_REACHABLE &&
        !edhoc_amp_admit_reachable(a, clock_ms(srv), srv->n_pending, srv->cfg.max_pending)) {
        logf_(srv, EDHOC_LOG_DEBUG,
              "under pressure (%zu of %zu handshakes pending): message_1 from peer=%s (verified "
              "by Echo only) refused with 5.03: --pressure-rate handshakes a second already "
              "started for such peers",
              srv->n_pending, srv->cfg.max_pending, peer);
        *resp = service_unavailable(req, 1, out, cap);
        return true;
    }
    if (trust != EDHOC_AMP_UNVERIFIED ||
        !edhoc_amp_message_1_pressure(a, clock_ms(srv), srv->n_pending, srv->cfg.max_pending))
        return false;
    long n = echo_challenge(srv, req, peer, out, cap);
    bool fits = n > 0 && (size_t)n <= edhoc_amp_budget(a, peer);
    if (fits)
        srv->st.echo_challenges++;
    logf_(srv, EDHOC_LOG_DEBUG,
          "under pressure (%zu of %zu handshakes pending): message_1 from unverified peer=%s "
          "answered with %s",
          srv->n_pending, srv->cfg.max_pending, peer,
          fits ? "4.01 with Echo" : "nothing (even the 4.01 would exceed the amplification limit)");
    *resp = fits ? n : 0;
    return true;
}

/* True when the limit holds back the message_2 answering m1 (the EDHOC
 * message of req): *resp is then the 4.01 with Echo, or 0 (nothing) when
 * even that exceeds the budget. The size comes from the configuration
 * that would answer (edhoc_responder_message_2_len) with the longest C_R
 * choose_c_r may take, so no key is generated and no handshake is kept
 * for an address that may be a victim's. Anything else (a malformed
 * message_1, a method or suite not served) is answered by a short error
 * message, which the transport's own check covers. */
static bool amp_holds_back_message_1(struct edhoc_server *srv, const struct coap_msg *req,
                                     const char *peer, const uint8_t *m1, size_t m1_len,
                                     uint8_t *out, size_t cap, long *resp)
{
    struct edhoc_amp *a = srv->cfg.amp;
    size_t budget = edhoc_amp_budget(a, peer);
    if (budget == SIZE_MAX)
        return false; /* verified */
    struct edhoc_message_1_fields f;
    if (edhoc_message_1_parse(m1, m1_len, &f))
        return false;
    int suite = f.suites[f.n_suites - 1];
    edhoc_cred_resolver resolve = NULL;
    void *resolve_ctx = NULL;
    const struct edhoc_config *cfg =
        srv->cfg.select(srv->cfg.select_user, f.method, suite, &resolve, &resolve_ctx);
    if (!cfg || (cfg->accept_methods && !(cfg->accept_methods & (1u << f.method))))
        return false;
    bool served = false;
    for (size_t i = 0; i < cfg->n_suites; i++)
        served |= cfg->suites[i] == suite;
    if (!served)
        return false;
    static const uint8_t longest_c_r[EDHOC_MAX_CONN_ID] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    long m2 = srv->cfg.c_r_len
                  ? edhoc_responder_message_2_len(cfg, f.method, suite, srv->cfg.c_r,
                                                  srv->cfg.c_r_len)
                  : edhoc_responder_message_2_len(cfg, f.method, suite, longest_c_r,
                                                  sizeof longest_c_r);
    if (m2 < 0)
        return false;
    size_t answer = amp_message_2_answer(srv, req, (size_t)m2);
    if (answer <= budget)
        return false;
    long n = echo_challenge(srv, req, peer, out, cap);
    bool fits = n > 0 && (size_t)n <= budget;
    edhoc_amp_note_limited(a, !fits);
    if (fits)
        srv->st.echo_challenges++;
    logf_(srv, EDHOC_LOG_DEBUG,
          "amplification limit: peer=%s unverified, message_2 (method %d, %zu bytes to send) "
          "exceeds what is left of %u x the bytes received (%zu): %s",
          peer, f.method, answer, edhoc_amp_factor(a), budget,
          fits ? "4.01 with Echo instead" : "nothing sent, even the 4.01 would exceed it");
    *resp = fits ? n : 0;
    return true;
}

long edhoc_server_echo_challenge(void *user, const char *peer, const uint8_t *req, size_t len,
                                 size_t held_back, size_t budget, uint8_t *out, size_t cap)
{
    struct edhoc_server *srv = user;
    struct coap_msg m;
    if (edhoc_coap_msg_parse(req, len, &m))
        return 0;
    /* A request the engine does not see (a Block2 follow-up answered from
     * a kept body) may carry the Echo value of an earlier challenge: that
     * verifies the endpoint, and what was held back can go. */
    amp_take_echo(srv, &m, peer);
    if (edhoc_amp_is_verified(srv->cfg.amp, peer))
        return 0;
    long n = echo_challenge(srv, &m, peer, out, cap);
    bool fits = n > 0 && (size_t)n <= budget;
    if (fits)
        srv->st.echo_challenges++;
    logf_(srv, EDHOC_LOG_DEBUG,
          "amplification limit: peer=%s unverified, an answer of %zu bytes exceeds what is left "
          "of %u x the bytes received (%zu): %s",
          peer, held_back, edhoc_amp_factor(srv->cfg.amp), budget,
          fits ? "4.01 with Echo instead" : "nothing sent, even the 4.01 would exceed it");
    return fits ? n : 0;
}

/* A message_3 (or error) whose C_R names no handshake: recorded as a
 * handshake of its own, since a device that encodes C_R differently ends
 * exactly here. */
static long unknown_c_r(struct edhoc_server *srv, const struct coap_msg *req, const char *peer,
                        const uint8_t *c_r, size_t c_r_len, bool combined, size_t m3_len,
                        uint8_t *out, size_t cap)
{
    struct edhoc_server_handshake r;
    hs_init(srv, &r, ++srv->hs_next, peer, EDHOC_FRAMING_A2);
    srv->hs_current = r.id;
    /* The kid of a combined request may be longer than any C_R. */
    size_t shown = c_r_len < EDHOC_MAX_CONN_ID ? c_r_len : EDHOC_MAX_CONN_ID;
    memcpy(r.c_r, c_r, shown);
    r.c_r_len = shown;
    r.combined = combined;
    r.bytes[3] = m3_len;
    r.outcome = EDHOC_SERVER_REFUSED;
    r.step = "message_3";
    char text[80], crs[20];
    cid_hex(c_r, shown, crs, sizeof crs);
    snprintf(text, sizeof text, "message_3: unknown C_R %s%s", crs,
             shown < c_r_len ? "... (longer than any C_R we give)" : "");
    r.error_text = text;
    long n = edhoc_error_text_rec(req, "unknown C_R", &r, out, cap);
    r.duration_ms = mono_ms() - srv->req_t0_ms;
    hs_emit(srv, &r);
    return n;
}

static long on_edhoc_post(struct edhoc_server *srv, const struct coap_msg *req, const char *peer,
                          uint8_t *out, size_t cap)
{
    const uint8_t *p = req->payload;
    size_t len = req->payload_len;
    if (!p || len == 0)
        return edhoc_error_text(req, "empty EDHOC request", out, cap);
    long echo_resp = 0;
    bool bare_m1 = p[0] <= 3 && len >= 2 && (p[1] & 0xe0) != 0x40 && (p[1] & 0xe0) != 0x60 &&
                   p[1] != 0xf5;
    if (srv->cfg.echo_message_1 && (p[0] == 0xf5 || bare_m1) &&
        !echo_ok(srv, req, peer, out, cap, &echo_resp))
        return echo_resp;
    if (srv->cfg.amp && (p[0] == 0xf5 || bare_m1) &&
        pressure_holds_back_message_1(srv, req, peer, out, cap, &echo_resp))
        return echo_resp;
    if (srv->cfg.amp && (p[0] == 0xf5 || bare_m1) &&
        amp_holds_back_message_1(srv, req, peer, p[0] == 0xf5 ? p + 1 : p,
                                 p[0] == 0xf5 ? len - 1 : len, out, cap, &echo_resp))
        return echo_resp;
    unsigned framings = srv->cfg.framings ? srv->cfg.framings
                                          : (1u << EDHOC_FRAMING_A2) | (1u << EDHOC_FRAMING_BARE);
    bool a2_ok = framings & (1u << EDHOC_FRAMING_A2);
    bool bare_ok = framings & (1u << EDHOC_FRAMING_BARE);
    if (p[0] == 0xf5)
        return a2_ok ? on_message_1(srv, req, peer, p + 1, len - 1, EDHOC_FRAMING_A2, out, cap)
                     : on_message_1(srv, req, peer, p, len, EDHOC_FRAMING_BARE, out, cap);
    /* Bare message_1 starts with METHOD (0..3) followed by SUITES_I (an int
     * or an array); a bare error message has a text string, SUITES or true
     * second. C_R never takes the values 0..3 here (choose_c_r). */
    if (bare_m1 && bare_ok)
        return on_message_1(srv, req, peer, p, len, EDHOC_FRAMING_BARE, out, cap);
    /* A bare message_3 (one byte string, nothing else) or bare error from
     * a peer with a bare handshake in progress. */
    struct pending *bare = bare_ok ? pending_find_bare(srv, peer) : NULL;
    if (bare) {
        srv->hs_current = bare->hs_id;
        long item = edhoc_coap_bstr_item_len(p, len);
        if (item > 0 && (size_t)item == len)
            return on_message_3(srv, req, bare, p, len, out, cap);
        if (first_is_error(p, len))
            return on_peer_error(srv, req, bare, p, len, out, cap);
    }
    uint8_t c_r[EDHOC_MAX_CONN_ID];
    size_t c_r_len = 0;
    long pre = edhoc_coap_cid_decode(p, len, c_r, &c_r_len);
    if (pre < 0)
        return edhoc_error_text(req, "cannot read the connection identifier", out, cap);
    struct pending *h = pending_find(srv, c_r, c_r_len);
    if (!h) {
        char crs[20];
        cid_hex(c_r, c_r_len, crs, sizeof crs);
        logf_(srv, EDHOC_LOG_INFO, "EDHOC request from %s for unknown C_R %s", peer, crs);
        return unknown_c_r(srv, req, peer, c_r, c_r_len, false, len - (size_t)pre, out, cap);
    }
    srv->hs_current = h->hs_id;
    if (first_is_error(p + pre, len - (size_t)pre)) {
        /* An error message proves nothing about its sender: only the
         * handshake's own peer ends it with one (RFC 9528 Section 6: "since
         * error messages might be forged, the receiver MAY try to continue
         * the EDHOC session"). */
        if (!from_own_peer(srv, h))
            return ignored_from_elsewhere(srv, req, h, "an error message",
                                          "error ignored: not from the handshake's address", out,
                                          cap);
        return on_peer_error(srv, req, h, p + pre, len - (size_t)pre, out, cap);
    }
    return on_message_3(srv, req, h, p + pre, len - (size_t)pre, out, cap);
}

/* ---- OSCORE resources ---- */

static bool path_is(const struct coap_msg *m, const char *path)
{
    /* path "/a/b": compare with the Uri-Path options in order. */
    const char *s = path;
    size_t seen = 0;
    for (size_t i = 0; i < m->option_count; i++) {
        const struct coap_option *o = &m->options[i];
        if (o->number != COAP_OPT_URI_PATH)
            continue;
        if (*s != '/')
            return false;
        s++;
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n != o->len || memcmp(s, o->value, n))
            return false;
        s += n;
        seen++;
    }
    return *s == '\0' || (seen == 0 && !strcmp(path, "/"));
}

static bool protected_path(const struct coap_msg *m)
{
    return path_is(m, "/.well-known/core") || path_is(m, "/echo") || path_is(m, "/time") ||
           path_is(m, "/counter") || path_is(m, "/bytes");
}

static const char link_format[] =
    "</.well-known/edhoc>;rt=\"core.edhoc\";ed-comb-req,</echo>;title=\"echo\","
    "</time>;title=\"time\",</counter>;obs;title=\"counter\","
    "</bytes>;title=\"n bytes: ?n=N\"";

/* The value of query parameter name=... of m (a Uri-Query option), or
 * NULL. */
static const struct coap_option *query_param(const struct coap_msg *m, const char *name, size_t *off)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < m->option_count; i++) {
        const struct coap_option *o = &m->options[i];
        if (o->number == COAP_OPT_URI_QUERY && o->len > nl && !memcmp(o->value, name, nl) &&
            o->value[nl] == '=') {
            *off = nl + 1;
            return o;
        }
    }
    return NULL;
}

/* GET /bytes?n=N: N bytes of a pattern anyone can check (byte i is
 * 'a' + i mod 26), so large responses can be tried against any client. */
struct plain_resp;
static void bytes_resource(struct edhoc_server *srv, const struct coap_msg *in,
                           struct plain_resp *r);

struct plain_resp {
    uint8_t code;
    int cf;
    const uint8_t *payload;
    size_t payload_len;
    bool observe; /* add Observe with seq */
    uint32_t seq;
    char text[64];
};

static void resource(struct edhoc_server *srv, const struct coap_msg *in, struct plain_resp *r)
{
    memset(r, 0, sizeof *r);
    r->cf = -1;
    if (path_is(in, "/.well-known/core")) {
        if (in->code != COAP_CODE_GET) {
            r->code = COAP_CODE(4, 5);
            return;
        }
        r->code = COAP_CODE_CONTENT;
        r->cf = CF_LINK_FORMAT;
        r->payload = (const uint8_t *)link_format;
        r->payload_len = strlen(link_format);
    } else if (path_is(in, "/echo")) {
        if (in->code != COAP_CODE_POST && in->code != COAP_CODE(0, 3)) {
            r->code = COAP_CODE(4, 5);
            return;
        }
        r->code = COAP_CODE_CHANGED;
        const struct coap_option *cf = edhoc_coap_msg_find_option(in, COAP_OPT_CONTENT_FORMAT);
        uint32_t v;
        if (cf && !edhoc_coap_option_uint(cf, &v))
            r->cf = (int)v;
        r->payload = in->payload;
        r->payload_len = in->payload_len;
    } else if (path_is(in, "/time")) {
        if (in->code != COAP_CODE_GET) {
            r->code = COAP_CODE(4, 5);
            return;
        }
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(r->text, sizeof r->text, "%Y-%m-%dT%H:%M:%SZ", &tm);
        r->code = COAP_CODE_CONTENT;
        r->cf = CF_TEXT;
        r->payload = (const uint8_t *)r->text;
        r->payload_len = strlen(r->text);
    } else if (path_is(in, "/bytes")) {
        bytes_resource(srv, in, r);
    } else if (path_is(in, "/counter")) {
        if (in->code != COAP_CODE_GET) {
            r->code = COAP_CODE(4, 5);
            return;
        }
        snprintf(r->text, sizeof r->text, "%u", srv->counter);
        r->code = COAP_CODE_CONTENT;
        r->cf = CF_TEXT;
        r->payload = (const uint8_t *)r->text;
        r->payload_len = strlen(r->text);
    } else {
        r->code = COAP_CODE(4, 4);
    }
}

static void bytes_resource(struct edhoc_server *srv, const struct coap_msg *in,
                           struct plain_resp *r)
{
    if (in->code != COAP_CODE_GET) {
        r->code = COAP_CODE(4, 5);
        return;
    }
    size_t off = 0;
    const struct coap_option *q = query_param(in, "n", &off);
    unsigned long n = 0;
    bool ok = q && q->len > off && q->len - off <= 9;
    for (size_t i = off; ok && q && i < q->len; i++) {
        ok = q->value[i] >= '0' && q->value[i] <= '9';
        n = n * 10 + (unsigned long)(q->value[i] - '0');
    }
    if (!ok) {
        r->code = COAP_CODE_BAD_REQUEST;
        snprintf(r->text, sizeof r->text, "expected ?n=N");
        r->payload = (const uint8_t *)r->text;
        r->payload_len = strlen(r->text);
        return;
    }
    if (n > srv->cfg.max_body) {
        /* Above what this server serves (its --max-body). */
        r->code = COAP_CODE(4, 13);
        snprintf(r->text, sizeof r->text, "at most %zu bytes", srv->cfg.max_body);
        r->payload = (const uint8_t *)r->text;
        r->payload_len = strlen(r->text);
        return;
    }
    if (!srv->bytes_body) {
        srv->bytes_body = malloc(srv->cfg.max_body ? srv->cfg.max_body : 1);
        if (!srv->bytes_body) {
            r->code = COAP_CODE(5, 0);
            return;
        }
        for (size_t i = 0; i < srv->cfg.max_body; i++)
            srv->bytes_body[i] = (uint8_t)('a' + i % 26);
    }
    r->code = COAP_CODE_CONTENT;
    r->cf = CF_TEXT;
    r->payload = n ? srv->bytes_body : NULL;
    r->payload_len = n;
}

/* The inner (plaintext) response to in. */
static long inner_response(const struct coap_msg *in, const struct plain_resp *r, uint8_t *out,
                           size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = in->type == COAP_TYPE_CON ? COAP_TYPE_ACK : COAP_TYPE_NON;
    m.mid = in->mid;
    m.token_len = in->token_len;
    memcpy(m.token, in->token, in->token_len);
    m.code = r->code;
    uint8_t ob[4], cfv[4];
    if (r->observe)
        edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, ob, edhoc_coap_uint_encode(r->seq, ob));
    if (r->cf >= 0)
        edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cfv, edhoc_coap_uint_encode((uint32_t)r->cf, cfv));
    m.payload = r->payload_len ? r->payload : NULL;
    m.payload_len = r->payload_len;
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

static struct observer *observer_find(struct edhoc_server *srv, const struct ctx_key *key,
                                      const uint8_t *tok, size_t tok_len)
{
    for (size_t i = 0; i < MAX_OBSERVERS; i++) {
        struct observer *o = &srv->observers[i];
        if (o->used && key_equal(&o->key, key) &&
            o->token_len == tok_len && !memcmp(o->token, tok, tok_len))
            return o;
    }
    return NULL;
}

static void observer_drop(struct observer *o)
{
    if (!o->used)
        return;
    edhoc_transport_peer_release(o->peer);
    memset(o, 0, sizeof *o);
}

void edhoc_server_peer_failed(void *user, struct edhoc_transport_peer *peer, const uint8_t *token,
                              size_t token_len)
{
    struct edhoc_server *srv = user;
    for (size_t i = 0; i < MAX_OBSERVERS; i++) {
        struct observer *o = &srv->observers[i];
        if (o->used && o->peer == peer && o->token_len == token_len &&
            !memcmp(o->token, token, token_len)) {
            logf_(srv, EDHOC_LOG_INFO, "observer gone: notifications stopped");
            observer_drop(o);
        }
    }
}

static long oscore_error(int err, const uint8_t *req, size_t len, uint8_t *out, size_t cap)
{
    long n = oscore_error_response(err, req, len, out, cap);
    if (n < 0) {
        struct coap_msg m;
        if (edhoc_coap_msg_parse(req, len, &m))
            return -1;
        /* A message above what this side processes is 4.13 (RFC 7252
         * 5.9.2.9); running out of memory is 5.03, worth a retry. */
        uint8_t code = err == OSCORE_ERR_TOO_LARGE ? COAP_CODE(4, 13)
                       : err == OSCORE_ERR_NOMEM   ? COAP_CODE(5, 3)
                                                   : COAP_CODE(5, 0);
        return build(&m, code, -1, NULL, 0, out, cap);
    }
    return n;
}

/* Unprotect a request with the context its OSCORE option names (RFC 8613
 * Section 8.2 step 2: the Recipient ID in 'kid', "additionally using the
 * 'kid context', if present"). With a 'kid context', only the context of
 * that ID Context and kid. Without one, every context with that kid:
 * Section 3.3 lets several Recipient Contexts share a Recipient ID, and
 * then "the endpoint may need to try multiple times". The first that
 * verifies is taken. A candidate moves on to the next only when it cannot
 * tell whether the request is its own: the AEAD failed, or its replay
 * window (checked before the AEAD) holds the Partial IV; any other answer
 * is about a request the candidate verified, or about the message itself.
 * Windows change only when a request is accepted, so the candidates
 * tried first are left as they were. *ctx: the context the answer belongs
 * to (NULL: none has that kid, or that kid context and kid); when none
 * verified, the first that saw a replay, else the first tried. */
static long unprotect_request(struct edhoc_server *srv, const struct oscore_option *oo,
                              const uint8_t *req, size_t len, struct peer_ctx **ctx,
                              struct oscore_binding *b)
{
    *ctx = NULL;
    if (oo->kid_len > OSCORE_MAX_ID)
        return OSCORE_ERR_CONTEXT_NOT_FOUND;
    if (oo->has_kid_context) {
        if (oo->kid_context_len > OSCORE_MAX_ID_CONTEXT)
            return OSCORE_ERR_CONTEXT_NOT_FOUND;
        struct ctx_key key;
        key_set(&key, oo->kid_context, oo->kid_context_len, oo->kid, oo->kid_len);
        *ctx = ctx_find(srv, &key);
        if (!*ctx)
            return OSCORE_ERR_CONTEXT_NOT_FOUND;
        long n = oscore_unprotect_request(&(*ctx)->osc, req, len, srv->inner, srv->inner_cap, b);
        ctx_verified(srv, *ctx, n);
        return n;
    }
    long verdict = OSCORE_ERR_CONTEXT_NOT_FOUND;
    uint64_t hash = rid_hash(srv, oo->kid, oo->kid_len);
    for (uint32_t i = edhoc_itab_first(&srv->contexts, hash); i != EDHOC_NONE;
         i = edhoc_itab_next(&srv->contexts, i)) {
        struct peer_ctx *p = ctx_at(srv, i);
        if (!key_rid_is(&p->key, oo->kid, oo->kid_len))
            continue;
        long n = oscore_unprotect_request(&p->osc, req, len, srv->inner, srv->inner_cap, b);
        if (n != OSCORE_ERR_DECRYPT && n != OSCORE_ERR_REPLAY) {
            *ctx = p;
            ctx_verified(srv, p, n);
            return n;
        }
        if (!*ctx || (n == OSCORE_ERR_REPLAY && verdict != OSCORE_ERR_REPLAY)) {
            *ctx = p;
            verdict = n;
        }
    }
    return verdict;
}

static long answer_inner(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                         const char *peer_name, struct peer_ctx *ctx, struct oscore_binding *b,
                         struct coap_msg *inp, const uint8_t *inner_req, size_t inner_req_len,
                         const char *bw_peer, const uint8_t *req, size_t len, uint8_t *out,
                         size_t cap);

/* How long a client waits before it asks again when a sequence-number
 * mark could not be stored: a full disk or a failing device seldom
 * recovers within a second, and each try costs a write. */
#define STORE_RETRY_S 5u

/* A response (what) that could not be protected with result err: the
 * unprotected error answer, and the cause in the log. When the mark its
 * Partial IV needed could not be stored (OSCORE_ERR_PERSIST), no protected
 * message may go (RFC 8613 Appendix B.1.1: a number is used only once a
 * mark above it is stored), but nothing was wrong with the request: 5.03
 * with Max-Age, "the number of seconds after which to retry" (RFC 7252
 * Section 5.9.3.4), instead of an error that blames the request. */
static long not_protected(struct edhoc_server *srv, const char *peer_name, const char *what,
                          long err, const uint8_t *req, size_t len, uint8_t *out, size_t cap)
{
    srv->st.oscore_errors++;
    struct coap_msg m;
    if (err == OSCORE_ERR_PERSIST && !edhoc_coap_msg_parse(req, len, &m)) {
        logf_(srv, EDHOC_LOG_ERR,
              "OSCORE peer=%s: %s not sent: the sequence-number mark its Partial IV needs "
              "cannot be stored (%s); answered 5.03 with Max-Age %u",
              peer_name, what,
              srv->store_err ? edhoc_state_strerror(srv->store_err) : oscore_strerror((int)err),
              STORE_RETRY_S);
        return service_unavailable(&m, STORE_RETRY_S, out, cap);
    }
    logf_(srv, EDHOC_LOG_ERR, "OSCORE peer=%s: cannot protect %s: %s", peer_name, what,
          oscore_strerror((int)err));
    if (edhoc_coap_msg_parse(req, len, &m))
        return -1;
    return build(&m, COAP_CODE(5, 0), -1, NULL, 0, out, cap);
}

/* The answer to an OSCORE request that ctx unprotected with result n
 * (the inner request in srv->inner when n > 0). */
static long on_unprotected(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                           const char *peer_name, struct peer_ctx *ctx, long n,
                           struct oscore_binding *b, const uint8_t *req, size_t len,
                           uint8_t *out, size_t cap)
{
    srv->st.oscore_requests++;
    /* An Echo challenge is no verdict yet: the retry is the first request. */
    struct first_request *first = n == OSCORE_ERR_ECHO_REQUIRED
                                      ? NULL
                                      : first_request_find(srv, &ctx->key, NULL);
    /* A kid is public: a request that does not verify says something
     * about the device only when it comes from the device's address;
     * from elsewhere it would take the place of the device's own first
     * request in the record. */
    if (first && n < 0 && strcmp(first->peer, peer_name))
        first = NULL;
    if (first) {
        char text[300] = "";
        if (n < 0)
            snprintf(text, sizeof text,
                     "request refused: %s: the OSCORE contexts differ - check the device's "
                     "EDHOC_Exporter (master secret / salt from PRK_out), Sender / Recipient IDs "
                     "(= C_R / C_I) and the suite's AEAD and hash",
                     oscore_strerror((int)n));
        first_request_report(srv, first, n < 0 ? (int)n : 0, text);
    }
    if (n == OSCORE_ERR_ECHO_REQUIRED) {
        srv->store_err = 0;
        long r = oscore_protect_echo_challenge(&ctx->osc, b, req, len, out, cap);
        if (r < 0)
            return not_protected(srv, peer_name, "the Echo challenge", r, req, len, out, cap);
        logf_(srv, EDHOC_LOG_INFO, "OSCORE peer=%s: replay window unknown, Echo challenge sent",
              peer_name);
        return r;
    }
    if (n < 0) {
        srv->st.oscore_errors++;
        logf_(srv, EDHOC_LOG_INFO, "OSCORE peer=%s: request refused: %s", peer_name,
              oscore_strerror((int)n));
        return oscore_error((int)n, req, len, out, cap);
    }
    amp_oscore_verified(srv, peer_name);
    struct coap_msg in;
    if (edhoc_coap_msg_parse(srv->inner, (size_t)n, &in)) {
        srv->st.oscore_errors++;
        return oscore_error(OSCORE_ERR_INNER, req, len, out, cap);
    }
    /* Inner block-wise (RFC 8613 Section 4.1.3.4.1): each block is an
     * OSCORE request of its own; the body is reassembled per peer and
     * context, and each answer (2.31 Continue, a refusal, a block of a
     * large response) is protected like any response. */
    char bw_peer[MAX_PEER_NAME + 2 * (OSCORE_MAX_ID + OSCORE_MAX_ID_CONTEXT) + 8];
    {
        char rid[2 * OSCORE_MAX_ID + 1], idc[2 * OSCORE_MAX_ID_CONTEXT + 1];
        hex(ctx->key.rid, ctx->key.rid_len, rid, sizeof rid);
        hex(ctx->key.idc, ctx->key.idc_len, idc, sizeof idc);
        snprintf(bw_peer, sizeof bw_peer, "%s|%s|%s%s", peer_name, rid,
                 ctx->key.has_idc ? "" : "-", idc);
    }
    uint8_t *whole = NULL;
    size_t whole_len = 0, reply_len = 0;
    int verdict = edhoc_bw_server_request(srv->bw, bw_peer, srv->inner, (size_t)n, srv->now_ms,
                                          &whole, &whole_len, srv->inner_cut, srv->inner_cap,
                                          &reply_len);
    if (verdict < 0)
        return build(&in, COAP_CODE(5, 0), -1, NULL, 0, out, cap);
    if (verdict == EDHOC_BW_REPLY) {
        long pr = oscore_protect_response(&ctx->osc, b, srv->inner_cut, reply_len, false, out, cap);
        return pr < 0 ? build(&in, COAP_CODE(5, 0), -1, NULL, 0, out, cap) : pr;
    }
    const uint8_t *inner_req = srv->inner;
    size_t inner_req_len = (size_t)n;
    if (verdict == EDHOC_BW_WHOLE) {
        inner_req = whole;
        inner_req_len = whole_len;
        if (edhoc_coap_msg_parse(whole, whole_len, &in)) {
            free(whole);
            return oscore_error(OSCORE_ERR_INNER, req, len, out, cap);
        }
    }
    long answer = answer_inner(srv, peer, peer_name, ctx, b, &in, inner_req, inner_req_len,
                               bw_peer, req, len, out, cap);
    free(whole);
    return answer;
}

/* The resource's answer to the (whole) inner request in, cut into a block
 * when large, protected. */
static long answer_inner(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                         const char *peer_name, struct peer_ctx *ctx, struct oscore_binding *b,
                         struct coap_msg *inp, const uint8_t *inner_req, size_t inner_req_len,
                         const char *bw_peer, const uint8_t *req, size_t len, uint8_t *out,
                         size_t cap)
{
    struct coap_msg in = *inp;
    /* Critical inner options we do not process (the EDHOC option of a
     * combined request among them, RFC 9668 step 8) mean 4.02. */
    struct plain_resp r;
    bool bad_option = false;
    for (size_t i = 0; i < in.option_count; i++) {
        uint16_t num = in.options[i].number;
        if ((num & 1) && num != COAP_OPT_URI_PATH && num != COAP_OPT_URI_QUERY &&
            num != COAP_OPT_URI_HOST && num != COAP_OPT_URI_PORT && num != COAP_OPT_ACCEPT &&
            num != COAP_OPT_IF_MATCH && num != COAP_OPT_IF_NONE_MATCH && num != COAP_OPT_BLOCK1 &&
            num != COAP_OPT_BLOCK2 && num != COAP_OPT_PROXY_URI && num != COAP_OPT_PROXY_SCHEME)
            bad_option = true;
    }
    if (bad_option) {
        memset(&r, 0, sizeof r);
        r.cf = -1;
        r.code = COAP_CODE_BAD_OPTION;
    } else {
        resource(srv, &in, &r);
    }
    const struct coap_option *obs = edhoc_coap_msg_find_option(&in, COAP_OPT_OBSERVE);
    if (obs && r.code == COAP_CODE_CONTENT && path_is(&in, "/counter")) {
        uint32_t v = 1;
        edhoc_coap_option_uint(obs, &v);
        struct observer *o = observer_find(srv, &ctx->key, in.token, in.token_len);
        if (v == 0) {
            if (!o) {
                for (size_t i = 0; i < MAX_OBSERVERS && !o; i++) {
                    if (!srv->observers[i].used)
                        o = &srv->observers[i];
                }
            }
            if (o && !o->used) {
                o->used = true;
                o->peer = edhoc_transport_peer_hold(peer);
                o->key = ctx->key;
                memcpy(o->token, in.token, in.token_len);
                o->token_len = in.token_len;
            }
            if (o) {
                o->b = *b;
                o->seq = srv->counter;
                r.observe = true;
                r.seq = o->seq;
            }
        } else if (o) {
            /* RFC 7641 Section 3.6: a GET with Observe 1 and the
             * registration's token ends it. */
            logf_(srv, EDHOC_LOG_INFO, "OSCORE peer=%s: observer deregistered", peer_name);
            observer_drop(o);
        }
    }
    long pn = inner_response(&in, &r, srv->inner_resp, srv->inner_cap);
    if (pn < 0)
        return oscore_error(OSCORE_ERR_DECRYPT, req, len, out, cap);
    long cut = edhoc_bw_server_response(srv->bw, bw_peer, inner_req, inner_req_len,
                                        srv->inner_resp, (size_t)pn, srv->cfg.block_size,
                                        srv->now_ms, srv->inner_cut, srv->inner_cap);
    if (cut < 0)
        return build(&in, COAP_CODE(5, 0), -1, NULL, 0, out, cap);
    struct oscore_binding *bp = b;
    struct observer *o = r.observe ? observer_find(srv, &ctx->key, in.token, in.token_len) : NULL;
    if (o)
        bp = &o->b;
    srv->store_err = 0;
    long pr = oscore_protect_response(&ctx->osc, bp, srv->inner_cut, (size_t)cut, false, out, cap);
    if (pr < 0) {
        if (o)
            observer_drop(o);
        return not_protected(srv, peer_name, "the response", pr, req, len, out, cap);
    }
    return pr;
}

/* An OSCORE request for a context known beforehand (the one a combined
 * request has just established). */
static long on_oscore(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                      const char *peer_name, struct peer_ctx *ctx, const uint8_t *req, size_t len,
                      uint8_t *out, size_t cap)
{
    struct oscore_binding b;
    long n = oscore_unprotect_request(&ctx->osc, req, len, srv->inner, srv->inner_cap, &b);
    return on_unprotected(srv, peer, peer_name, ctx, n, &b, req, len, out, cap);
}

/* ---- RFC 8613 Appendix B.2, the server initiating ---- */

/* Step 4 verified request #2 under next (ID Context ID3 = R2 || R3): "the
 * server marks the third security context to be used with this client
 * ... This security context replaces the previous security context with
 * the client, and the first and the second security contexts are
 * deleted." It is stored first (durable before it serves; its sequence
 * numbers start at 0 under keys never used, and get marks of their own),
 * then takes the previous one's place in the table. A previous ID3's row
 * goes with it; the configured context's row stays, its mark being what
 * the next start resumes above. Returns the new context, or NULL (not
 * stored: the previous one stays). */
static struct peer_ctx *b2_install(struct edhoc_server *srv, struct b2_entry *e,
                                   const struct oscore_context *next, const char *peer_name)
{
    size_t idl = 0;
    const uint8_t *idc = oscore_context_id_context(next, &idl);
    if (!idc || idl > OSCORE_MAX_ID_CONTEXT || !srv->cfg.db)
        return NULL;
    struct ctx_key key;
    key_set(&key, idc, idl, e->configured.rid, e->configured.rid_len);
    const struct oscore_config *cfg = &e->cfg;
    struct edhoc_state_peer sp;
    char tag[sizeof sp.peer];
    snprintf(tag, sizeof tag, B2_ROW_TAG "%s", peer_name);
    static_row(&sp, &key, cfg, tag);
    state_write_begin(srv);
    int rc = edhoc_state_put_peer(srv->cfg.db, &sp);
    edhoc_wipe(&sp, sizeof sp);
    if (!rc && !key_equal(&e->current, &e->configured)) {
        int drc = edhoc_state_delete_peer(srv->cfg.db, key_idc(&e->current), e->current.idc_len,
                                          e->current.rid, e->current.rid_len);
        if (drc && drc != EDHOC_STATE_ERR_NOT_FOUND)
            logf_(srv, EDHOC_LOG_ERR, "state: cannot delete the previous B.2 context: %s",
                  edhoc_state_strerror(drc));
    }
    int crc = state_write_end(srv);
    if (rc || crc) {
        logf_(srv, EDHOC_LOG_ERR, "cannot store the new context of RFC 8613 Appendix B.2: %s",
              edhoc_state_strerror(rc ? rc : crc));
        return NULL;
    }
    ctx_remove(srv, &e->current);
    struct peer_ctx *p = ctx_insert(srv, &key, true);
    if (!p)
        return NULL;
    p->osc = *next;
    ctx_persist(p);
    e->current = key;
    return p;
}

/* A request #1 or #2 that B.2 refused: the unprotected error response of
 * oscore_error_response (5.03 when every R2 slot is taken, Appendix
 * B.2.1). */
static long b2_refused(struct edhoc_server *srv, const char *peer_name, const char *what,
                       long err, const uint8_t *req, size_t len, uint8_t *out, size_t cap)
{
    srv->st.oscore_requests++;
    srv->st.oscore_errors++;
    srv->st.b2_refused++;
    logf_(srv, EDHOC_LOG_INFO, "OSCORE peer=%s: RFC 8613 Appendix B.2 %s refused: %s", peer_name,
          what, oscore_strerror((int)err));
    return oscore_error((int)err, req, len, out, cap);
}

/* An OSCORE request whose kid is the Recipient ID of a static context
 * with Appendix B.2 (e): request #2 of a run in progress first; then the
 * context in use when its replay state is valid and the request names it
 * (or names none); else step 2, where the Echo challenge of Appendix
 * B.1.2 would go: "The server receives an OSCORE request for which it
 * does not have a valid security context, either because the client has
 * generated a new security context ID1 = R1 or because the server has
 * lost part of its security context, e.g., ID Context, Sender Sequence
 * Number or Replay Window." */
static long on_b2_request(struct edhoc_server *srv, struct b2_entry *e,
                          struct edhoc_transport_peer *peer, const char *peer_name,
                          const struct oscore_option *oo, const uint8_t *req, size_t len,
                          uint8_t *out, size_t cap)
{
    uint64_t now = clock_ms(srv);
    struct oscore_binding b;
    char rid[2 * OSCORE_MAX_ID + 1];
    hex(e->configured.rid, e->configured.rid_len, rid, sizeof rid);
    if (oscore_b2_server_is_request2(&e->run, req, len, now)) {
        struct oscore_context next;
        long n = oscore_b2_server_request2(&e->run, srv->cfg.ops, &e->cfg, req, len, now, &next,
                                           srv->inner, srv->inner_cap, &b);
        if (n < 0)
            return b2_refused(srv, peer_name, "request #2", n, req, len, out, cap);
        struct peer_ctx *p = b2_install(srv, e, &next, peer_name);
        /* The table's copy keeps the keys (and the backend's state for
         * them); this one only goes. */
        if (p)
            edhoc_wipe(&next, sizeof next);
        else
            oscore_context_wipe(&next);
        if (!p) {
            edhoc_wipe(srv->inner, (size_t)n);
            return b2_refused(srv, peer_name, "request #2", OSCORE_ERR_NOMEM, req, len, out, cap);
        }
        srv->st.b2_completed++;
        char id3[2 * OSCORE_MAX_ID_CONTEXT + 1];
        hex(e->current.idc, e->current.idc_len, id3, sizeof id3);
        logf_(srv, EDHOC_LOG_INFO,
              "OSCORE peer=%s: RFC 8613 Appendix B.2 completed for kid=%s: request #2 verified "
              "under ID Context R2 || R3 = %s, the context from now on; the request is served",
              peer_name, rid, id3);
        return on_unprotected(srv, peer, peer_name, p, n, &b, req, len, out, cap);
    }
    struct peer_ctx *cur = ctx_find(srv, &e->current);
    bool valid = cur && !oscore_context_needs_echo(&cur->osc);
    struct peer_ctx *ctx = NULL;
    if (oo->has_kid_context) {
        struct ctx_key key;
        if (oo->kid_context_len <= OSCORE_MAX_ID_CONTEXT) {
            key_set(&key, oo->kid_context, oo->kid_context_len, oo->kid, oo->kid_len);
            ctx = ctx_find(srv, &key);
        }
        /* Another static context with this kid and that ID Context, or
         * the one in use with a valid replay state: as any request. */
        if (ctx && (ctx != cur || valid)) {
            long n = unprotect_request(srv, oo, req, len, &ctx, &b);
            return on_unprotected(srv, peer, peer_name, ctx, n, &b, req, len, out, cap);
        }
    } else if (valid) {
        long n = unprotect_request(srv, oo, req, len, &ctx, &b);
        /* Without 'kid context' (Section 5.1 lets a client omit it), a
         * request that fails under a run's ID3 may come from a client
         * that started again from the configured context: step 2 tells. */
        bool other_inputs = ctx == cur && n == OSCORE_ERR_DECRYPT &&
                            !key_equal(&e->current, &e->configured);
        if (!other_inputs)
            return on_unprotected(srv, peer, peer_name, ctx, n, &b, req, len, out, cap);
    }
    long r = oscore_b2_server_request1(&e->run, srv->cfg.ops, &e->cfg, req, len, now, out, cap);
    if (r < 0)
        return b2_refused(srv, peer_name, "request #1", r, req, len, out, cap);
    srv->st.oscore_requests++;
    srv->st.b2_started++;
    logf_(srv, EDHOC_LOG_INFO,
          "OSCORE peer=%s: no valid context for kid=%s (%s): RFC 8613 Appendix B.2 started, "
          "response #1 sent with a new R2 (the request is not performed)",
          peer_name, rid,
          !valid ? "replay window lost at the restart"
                 : oo->has_kid_context ? "'kid context' not known"
                                       : "not verified under the context in use");
    return r;
}

/* RFC 9668 Section 3.3.1: message_3 first, then OSCORE with the new context. */
static long on_combined(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                        const char *peer_name, const struct coap_msg *req, uint8_t *out,
                        size_t cap)
{
    struct oscore_option oo;
    const struct coap_option *opt = edhoc_coap_msg_find_option(req, COAP_OPT_OSCORE);
    if (!opt || oscore_option_parse(opt->value, opt->len, &oo) || !oo.has_kid ||
        !req->payload)
        return build(req, COAP_CODE_BAD_REQUEST, -1, NULL, 0, out, cap);
    long m3_len = edhoc_coap_bstr_item_len(req->payload, req->payload_len);
    if (m3_len <= 0 || (size_t)m3_len >= req->payload_len)
        return build(req, COAP_CODE_BAD_REQUEST, -1, NULL, 0, out, cap);
    struct pending *h = pending_find(srv, oo.kid, oo.kid_len);
    if (!h)
        return unknown_c_r(srv, req, peer_name, oo.kid, oo.kid_len, true, (size_t)m3_len, out,
                           cap);
    srv->hs_current = h->hs_id;
    if (srv->cfg.message_4) {
        /* Refused before message_3 is even decrypted: from another address
         * that would let anyone end the handshake of a C_R it names. */
        if (!from_own_peer(srv, h))
            return ignored_from_elsewhere(srv, req, h,
                                          "a combined request (RFC 9668) while message_4 is "
                                          "required",
                                          "combined request ignored: not from the handshake's "
                                          "address",
                                          out, cap);
        /* message_4 cannot travel in the combined flow (RFC 9668 step 4). */
        srv->st.handshakes_failed++;
        log_done(srv, h, (size_t)m3_len, "failed", "combined request but message_4 is required");
        struct edhoc_server_handshake rec;
        hs_from_pending(srv, h, &rec);
        rec.combined = true;
        rec.bytes[3] = (size_t)m3_len;
        long resp = edhoc_error_text_rec(req, "message_4 required", &rec, out, cap);
        rec.outcome = EDHOC_SERVER_REFUSED;
        rec.step = "message_3";
        rec.error_text = "combined request (RFC 9668), but message_4 required";
        hs_emit(srv, &rec);
        pending_free(srv, h);
        return resp;
    }
    struct peer_ctx *ctx = NULL;
    long r = run_message_3(srv, req, h, req->payload, (size_t)m3_len, true, &ctx, out, cap);
    if (r)
        return r;
    srv->st.handshakes_ok++;
    log_done(srv, h, (size_t)m3_len, "ok",
             edhoc_session_tolerated(&h->s) ? tolerated_text(h) : "combined request");
    hs_ok(srv, h, ctx, (size_t)m3_len, 0, true);
    pending_free(srv, h);

    /* The OSCORE request without the EDHOC option and message_3. */
    struct coap_msg m = *req;
    size_t w = 0;
    for (size_t i = 0; i < m.option_count; i++) {
        if (m.options[i].number != EDHOC_COAP_OPTION_EDHOC)
            m.options[w++] = m.options[i];
    }
    m.option_count = w;
    m.payload = req->payload + m3_len;
    m.payload_len = req->payload_len - (size_t)m3_len;
    uint8_t *plain = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    if (!plain)
        return -1;
    long n = edhoc_coap_msg_encode(&m, plain, EDHOC_TRANSPORT_MAX_MESSAGE);
    long resp = n < 0 ? build(req, COAP_CODE_BAD_REQUEST, -1, NULL, 0, out, cap)
                      : on_oscore(srv, peer, peer_name, ctx, plain, (size_t)n, out, cap);
    free(plain);
    return resp;
}

static long handle(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                   const char *peer_name, const uint8_t *req, size_t len, uint8_t *out, size_t cap);

long edhoc_server_handle(void *user, struct edhoc_transport_peer *peer, const char *peer_name,
                         const uint8_t *req, size_t len, uint8_t *out, size_t cap)
{
    struct edhoc_server *srv = user;
    srv->hs_current = 0;
    srv->hs_peer = peer_name;
    if (srv->cfg.record)
        srv->req_t0_ms = mono_ms();
    long n = handle(srv, peer, peer_name, req, len, out, cap);
    srv->hs_current = 0;
    srv->hs_peer = NULL;
    return n;
}

static long handle(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                   const char *peer_name, const uint8_t *req, size_t len, uint8_t *out, size_t cap)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(req, len, &m))
        return 0;
    if (!edhoc_coap_code_is_request(m.code))
        return 0;
    amp_take_echo(srv, &m, peer_name);
    const struct coap_option *osc = edhoc_coap_msg_find_option(&m, COAP_OPT_OSCORE);
    if (osc) {
        if (edhoc_coap_msg_find_option(&m, EDHOC_COAP_OPTION_EDHOC))
            return on_combined(srv, peer, peer_name, &m, out, cap);
        struct oscore_option oo;
        if (oscore_option_parse(osc->value, osc->len, &oo) || !oo.has_kid) {
            srv->st.oscore_errors++;
            struct first_request *f = first_request_find(srv, NULL, peer_name);
            if (f)
                first_request_report(srv, f, OSCORE_ERR_BAD_OPTION,
                                     "the OSCORE option is malformed or carries no kid (the "
                                     "device's Sender ID = our C_R must be sent as kid)");
            return oscore_error(OSCORE_ERR_BAD_OPTION, req, len, out, cap);
        }
        struct b2_entry *b2 = srv->n_b2 ? b2_find(srv, oo.kid, oo.kid_len) : NULL;
        if (b2)
            return on_b2_request(srv, b2, peer, peer_name, &oo, req, len, out, cap);
        struct peer_ctx *ctx;
        struct oscore_binding b;
        long n = unprotect_request(srv, &oo, req, len, &ctx, &b);
        if (!ctx) {
            srv->st.oscore_errors++;
            logf_(srv, EDHOC_LOG_INFO, "OSCORE peer=%s: no context for this %s", peer_name,
                  oo.has_kid_context ? "kid context and kid" : "kid");
            struct first_request *f = first_request_find(srv, NULL, peer_name);
            if (f) {
                char kid[20], ours[20], text[300];
                hex(oo.kid, oo.kid_len, kid, sizeof kid);
                hex(f->key.rid, f->key.rid_len, ours, sizeof ours);
                snprintf(text, sizeof text,
                         "no OSCORE context for kid %s: the handshake's is %s (our Recipient ID = "
                         "C_R); check the device's Sender ID (= C_R, RFC 9528 A.1) and how it "
                         "encodes C_R",
                         kid, ours);
                first_request_report(srv, f, OSCORE_ERR_CONTEXT_NOT_FOUND, text);
            }
            return oscore_error(OSCORE_ERR_CONTEXT_NOT_FOUND, req, len, out, cap);
        }
        return on_unprotected(srv, peer, peer_name, ctx, n, &b, req, len, out, cap);
    }
    srv->st.plain_requests++;
    if (edhoc_coap_msg_find_option(&m, EDHOC_COAP_OPTION_EDHOC))
        return build(&m, COAP_CODE_BAD_REQUEST, -1, NULL, 0, out, cap); /* RFC 9668 3.3.1 step 1 */
    if (path_is(&m, EDHOC_COAP_WELL_KNOWN)) {
        if (m.code != COAP_CODE_POST)
            return build(&m, COAP_CODE(4, 5), -1, NULL, 0, out, cap);
        return on_edhoc_post(srv, &m, peer_name, out, cap);
    }
    if (protected_path(&m)) {
        if (!srv->cfg.serve_unprotected)
            return build(&m, COAP_CODE_UNAUTHORIZED, -1, NULL, 0, out, cap);
        struct plain_resp r;
        resource(srv, &m, &r);
        return inner_response(&m, &r, out, cap);
    }
    return build(&m, COAP_CODE(4, 4), -1, NULL, 0, out, cap);
}

/* ---- Timers ---- */

static void notify_counter(struct edhoc_server *srv)
{
    for (size_t i = 0; i < MAX_OBSERVERS; i++) {
        struct observer *o = &srv->observers[i];
        if (!o->used)
            continue;
        struct peer_ctx *ctx = ctx_find(srv, &o->key);
        if (!ctx || !srv->cfg.send) {
            observer_drop(o);
            continue;
        }
        struct coap_msg in;
        memset(&in, 0, sizeof in);
        in.type = COAP_TYPE_NON;
        in.token_len = o->token_len;
        memcpy(in.token, o->token, o->token_len);
        struct plain_resp r;
        memset(&r, 0, sizeof r);
        snprintf(r.text, sizeof r.text, "%u", srv->counter);
        r.code = COAP_CODE_CONTENT;
        r.cf = CF_TEXT;
        r.payload = (const uint8_t *)r.text;
        r.payload_len = strlen(r.text);
        r.observe = true;
        r.seq = ++o->seq & 0xffffff;
        long pn = inner_response(&in, &r, srv->inner_resp, srv->inner_cap);
        long n = pn < 0 ? -1
                        : oscore_protect_response(&ctx->osc, &o->b, srv->inner_resp, (size_t)pn,
                                                  true, srv->inner, srv->inner_cap);
        if (n < 0 || srv->cfg.send(srv->cfg.send_user, o->peer, srv->inner, (size_t)n))
            observer_drop(o);
    }
}

void edhoc_server_tick(struct edhoc_server *srv, uint64_t now_ms)
{
    srv->now_ms = now_ms;
    edhoc_bw_server_expire(srv->bw, now_ms);
    uint64_t limit = (uint64_t)srv->cfg.pending_timeout_s * 1000;
    /* The scan is cheap but runs after every datagram under load. */
    bool scan = now_ms - srv->last_scan_ms >= 100;
    if (scan)
        srv->last_scan_ms = now_ms;
    /* Oldest first: the walk stops at the first that is young enough. */
    for (uint32_t i; scan && (i = edhoc_ilru_oldest(&srv->pending_age)) != EDHOC_NONE;) {
        struct pending *h = pending_at(srv, i);
        if (now_ms - h->started_ms <= limit)
            break;
        srv->st.expired++;
        log_done(srv, h, 0, "timeout", "no message_3");
        char why[96];
        snprintf(why, sizeof why, "expired: no message_3 within %u s", srv->cfg.pending_timeout_s);
        hs_end_pending(srv, h, EDHOC_SERVER_EXPIRED, "message_3", why);
        pending_free(srv, h);
    }
    if (scan)
        contexts_tick(srv, now_ms);
    if (!srv->next_counter_ms)
        srv->next_counter_ms = now_ms + srv->cfg.counter_period_ms;
    if (now_ms >= srv->next_counter_ms) {
        srv->counter++;
        srv->next_counter_ms = now_ms + srv->cfg.counter_period_ms;
        notify_counter(srv);
    }
}
