/*
 * edhoc/server.h - the responder engine: EDHOC over CoAP (RFC 9528
 * Appendix A.2, RFC 9668) and the OSCORE resources behind `edhoc-cli
 * responder`, on message bytes only.
 *
 * It sits below the transport: it names the transport's peers only as an
 * opaque struct, and keeps one beyond a request (an observer) through the
 * calls its user gives edhoc_server_set_sender(), so that it runs under
 * any transport and includes none of src/coap.
 */
#ifndef EDHOC_SERVER_H
#define EDHOC_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/edhoc.h"
#include "edhoc/oscore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A peer of whichever transport carries the engine (edhoc/transport.h
 * defines it: a CoAP session, valid while held). */
struct edhoc_transport_peer;

/* The largest CoAP message the engine builds or takes (edhoc/transport.h
 * checks that its own limit is the same). */
#define EDHOC_SERVER_MAX_MESSAGE 16384
/* Workers of one port at most (edhoc/reuseport.h checks the same). */
#define EDHOC_SERVER_MAX_WORKERS 64

/* ======================================================================
 * EDHOC over CoAP (RFC 9528 Appendix A.2, RFC 9668) and the OSCORE
 * resources of a responder: the engine behind `edhoc-cli responder`. It
 * works on message bytes only (edhoc/coap_msg.h, edhoc/oscore.h), so it
 * runs under any transport; edhoc_server_handle() fits
 * edhoc_transport_request_fn.
 * ====================================================================== */

struct edhoc_state_db;

/* Errors of the server functions below that are not another module's. */
#define EDHOC_SERVER_ERR_NO_STATE                                                                  \
    (-6101) /* a static OSCORE context needs a state
                                           * database (edhoc_server_config.db) */

/* CoAP Content-Formats of RFC 9528 Section 10.9. */
#define EDHOC_COAP_CF_EDHOC     64 /* application/edhoc+cbor-seq */
#define EDHOC_COAP_CF_CID_EDHOC 65 /* application/cid-edhoc+cbor-seq */
#define EDHOC_COAP_OPTION_EDHOC 21 /* RFC 9668 */
#define EDHOC_COAP_WELL_KNOWN   "/.well-known/edhoc"

/* How EDHOC messages sit in CoAP payloads. */
enum edhoc_coap_framing {
    EDHOC_FRAMING_A2 = 0,   /* RFC 9528 A.2: true / C_R prefix, Content-Formats */
    EDHOC_FRAMING_BARE = 1, /* no prefix, no Content-Format, no reply to message_3 */
};

/* The CBOR encoding of a connection identifier as a prefix (RFC 9528
 * 3.3.2: a one-byte identifier that encodes an int in -24..23 is sent as
 * that int, anything else as a byte string). Returns the length or -1
 * (cap too small, cid longer than EDHOC_MAX_CONN_ID). */
long edhoc_coap_cid_encode(const uint8_t *cid, size_t len, uint8_t *out, size_t cap);
/* Decode a prefixed connection identifier at the start of p. Returns the
 * number of bytes it took, or -1. */
long edhoc_coap_cid_decode(const uint8_t *p, size_t len, uint8_t *cid, size_t *cid_len);
/* Length of the first CBOR byte string at p (head + content), or -1. */
long edhoc_coap_bstr_item_len(const uint8_t *p, size_t len);

/* Pick the responder's configuration for a message_1 with this method and
 * selected suite: the configuration (which must outlive the handshake;
 * see edhoc_server_config.generation) and the resolver for the peer's
 * credential. NULL: no credential fits; the server then answers with the
 * error message of a configuration that fits the method, if any. */
typedef const struct edhoc_config *(*edhoc_server_select_fn)(void *user, int method, int suite,
                                                             edhoc_cred_resolver *resolve,
                                                             void **resolve_ctx);

enum edhoc_server_log_level {
    EDHOC_LOG_ERR = 3,
    EDHOC_LOG_WARNING = 4,
    EDHOC_LOG_NOTICE = 5,
    EDHOC_LOG_INFO = 6,
    EDHOC_LOG_DEBUG = 7
};

/* How an incoming handshake ended (struct edhoc_server_handshake). */
enum edhoc_server_outcome {
    EDHOC_SERVER_OK = 0,     /* message_3 verified, OSCORE context established */
    EDHOC_SERVER_REFUSED,    /* we answered with an EDHOC error message (err_code) */
    EDHOC_SERVER_PEER_ERROR, /* the initiator sent an EDHOC error message */
    EDHOC_SERVER_VERIFY,     /* message_3 did not decrypt or its MAC / signature failed */
    EDHOC_SERVER_EXPIRED,    /* no message_3 within pending_timeout_s */
    EDHOC_SERVER_EVICTED,    /* dropped for a newer handshake (max_pending, or the same
                                * bare peer started again) before message_3 */
    EDHOC_SERVER_FAILED,     /* our side failed (5.00), or dropped on reload */
    EDHOC_SERVER_SHUTDOWN,   /* still waiting for message_3 when the server stopped
                                * (edhoc_server_record_shutdown) */
};

/* One incoming handshake, as it ended. Pointers are valid during the
 * callback only. Unknown values: method / suite -1, empty lists. */
struct edhoc_server_handshake {
    uint64_t id;      /* 1, 2, ... per server, in the order message_1 arrived */
    const char *peer; /* "addr:port" of the initiator */
    enum edhoc_server_outcome outcome;
    int method;
    int suites_i[EDHOC_MAX_SUITES]; /* SUITES_I as offered, the selected one last */
    size_t n_suites_i;
    int suite;                                              /* the selected suite */
    uint8_t c_i[EDHOC_MAX_CONN_ID], c_r[EDHOC_MAX_CONN_ID]; /* byte-string values */
    size_t c_i_len, c_r_len;                                /* 0: not known (c_r: not chosen) */
    enum edhoc_coap_framing framing;
    bool combined;  /* message_3 came in an RFC 9668 combined request */
    bool message_4; /* the server sends message_4 (config) */
    bool message_4_sent;
    /* ID_CRED_I as received: full map form (a compact kid expanded) and
     * the bytes as they stood in PLAINTEXT_3; NULL when message_3 was not
     * decrypted. Type: "kid", "kccs", "x5t", "x5chain", "other". */
    const uint8_t *id_cred_i, *id_cred_i_sent;
    size_t id_cred_i_len, id_cred_i_sent_len;
    const char *id_cred_i_type;
    const char *id_cred_r_type; /* how our ID_CRED_R names our credential; NULL: none chosen */
    /* CRED_I as we resolved it: the bytes hashed into context_3 / TH_4. */
    const uint8_t *cred_i;
    size_t cred_i_len;
    const char *step;       /* "message_1", "message_2", "message_3", "message_4",
                               * "OSCORE context", "" when ok */
    int error;              /* EDHOC_ERR_* (0: none or not an EDHOC error) */
    const char *error_text; /* the step and value that failed, "" when ok */
    int err_code;           /* ERR_CODE sent (REFUSED, VERIFY) or received (PEER_ERROR); -1 */
    int suites_r[EDHOC_MAX_SUITES]; /* the SUITES_R of an error code 2 we sent */
    size_t n_suites_r;
    const char *peer_diagnostic; /* the text of an error code 1 received, "" */
    const char *causes;          /* the most likely causes of the failure, "" when ok */
    size_t bytes[5];             /* EDHOC bytes of message_1..4 (index 1..4), 0: none */
    size_t error_bytes;          /* an error message sent or received */
    uint64_t duration_ms;        /* from message_1 to the end */
    unsigned tolerated;          /* EDHOC_DEV_* of the initiator accepted with --tolerate */
    const char *diagnosis;       /* which deviation explains a failed MAC_3/signature, "" */
};

/* The first OSCORE request on the context of handshake `handshake`. */
struct edhoc_server_oscore_first {
    uint64_t handshake;
    const char *peer;
    int error;        /* 0: verified; else an OSCORE_ERR_* */
    const char *text; /* "" or what went wrong, with the likely causes */
};

#define EDHOC_C_R_FORM_INT  0
#define EDHOC_C_R_FORM_BSTR 1
#define EDHOC_C_R_FORM_ANY  2

struct edhoc_server_config {
    const struct edhoc_crypto_ops *ops;
    edhoc_server_select_fn select;
    void *select_user;
    size_t max_pending;         /* in-progress handshakes (0: 256); the oldest is evicted */
    unsigned pending_timeout_s; /* 0: 60 */
    bool message_4;             /* send message_4 after message_3 */
    /* Answer a message_1 without a valid Echo option with 4.01 + Echo
     * (RFC 9528 Appendix A.2, RFC 9175): the initiator proves it receives
     * at its address before the responder spends any crypto on it. */
    bool echo_message_1;
    struct edhoc_state_db *db; /* durable contexts and SSN marks; NULL: memory only */
    /* Bounded contexts (RFC 8613 Section 8.2 step 2: a request for a
     * context the server no longer has gets 4.01 "Security context not
     * found", and the peer runs EDHOC again). EDHOC-derived contexts only:
     * static ones (edhoc_server_add_static_context) are configured, never
     * evicted or expired, and not counted. max_contexts (0:
     * EDHOC_SERVER_DEFAULT_MAX_CONTEXTS): the least recently used one
     * (by the last request it verified) gives way to a new one.
     * context_lifetime_ms (0: EDHOC_SERVER_DEFAULT_CONTEXT_LIFETIME_MS):
     * one without a verified request for that long is dropped. Both apply
     * to db's rows as well, deleted with their marks. */
    size_t max_contexts;
    uint64_t context_lifetime_ms;
    uint32_t ssn_freq;          /* SSN persistence interval K (0: 32) */
    unsigned counter_period_ms; /* /counter notification period (0: 1000) */
    /* Inner (OSCORE) block-wise, RFC 8613 Section 4.1.3.4.1: the largest
     * body a resource takes or returns (0: EDHOC_BW_DEFAULT_MAX_BODY) and
     * the block size of large responses (0: 1024). */
    size_t max_body;
    unsigned block_size;
    uint32_t transfer_lifetime_ms; /* as edhoc_transport_config's */
    /* C_R choice (RFC 9528 Section 3.3 leaves it to the responder):
     * EDHOC_C_R_FORM_INT (default) picks one-byte identifiers with an int
     * form (0x00-0x17, 0x20-0x37) first, _BSTR one-byte identifiers
     * without one (0x18-0x1f, 0x38-0xff, which devices that mis-encode
     * int-form C_R in context_2 handle), _ANY any byte; c_r_len > 0 fixes
     * C_R for a single-peer test. */
    int c_r_form;
    uint8_t c_r[EDHOC_MAX_CONN_ID];
    size_t c_r_len;
    /* Deviations of peers accepted (edhoc_config.tolerate) and committed
     * as a test aid (edhoc_config.emulate) are set per configuration by
     * the select callback. */
    /* Log lines (no newline). */
    void (*log)(void *user, int level, const char *line);
    void *log_user;
    /* Lines of a level above this one (a syslog level, enum
     * edhoc_server_log_level) are not even formatted: the per-handshake
     * line costs a few microseconds. 0: every line goes to log. */
    int log_max_level;
    /* Send a separate message (Observe notifications) to a peer, and keep
     * one beyond its request (edhoc_server_set_sender sets these). */
    int (*send)(void *user, struct edhoc_transport_peer *peer, const uint8_t *msg, size_t len);
    void *send_user;
    struct edhoc_transport_peer *(*hold_peer)(struct edhoc_transport_peer *peer);
    void (*release_peer)(struct edhoc_transport_peer *peer);
    /* Interop records (optional): record is called once when each
     * incoming handshake ends, however it ends; oscore once for the first
     * OSCORE request on a context a handshake established (matched by its
     * handshake id). Both are called from inside edhoc_server_handle /
     * edhoc_server_tick / edhoc_server_drop_pending, before the response
     * to the request being handled is sent; they may not call server
     * functions other than the accessors. Handshakes still in progress
     * when the server stops are reported by edhoc_server_record_shutdown,
     * and by nothing if it is not called. */
    void (*record)(void *user, const struct edhoc_server_handshake *hs);
    void (*oscore)(void *user, const struct edhoc_server_oscore_first *first);
    void *record_user;
    /* Also serve /.well-known/core, /echo, /time and /counter (its value,
     * without Observe) to requests without OSCORE, instead of 4.01: for
     * CoAP-only tests of a device and for like-for-like baselines. */
    bool serve_unprotected;
    /* Framings accepted (bit 1 << EDHOC_FRAMING_A2, 1 << EDHOC_FRAMING_BARE;
     * 0: both). With one only, the server behaves as a device that knows
     * only that one: an A.2 message_1 read as bare is malformed, a bare
     * one read as A.2 names an unknown C_R. For interop tests. */
    unsigned framings;
    /* The amplification limit: the account the transport counts bytes in
     * (edhoc_transport_config.amp, with `limited` =
     * edhoc_server_echo_challenge); NULL: none. Until an endpoint's
     * address is verified -- an
     * Echo value of ours came back from it, or a request from it verified
     * under an OSCORE context -- a message_1 whose message_2 (all its
     * blocks) would exceed the endpoint's budget is answered with a 4.01
     * and an Echo option instead, before any crypto (RFC 9528 Section 9.7,
     * RFC 9175 Sections 2.4 item 3 and 2.6), whatever the credential. */
    struct edhoc_amp *amp;
    /* One of `workers` processes sharing the listen ports (0 or 1: alone;
     * edhoc/reuseport.h). This one owns the contexts whose Recipient ID
     * edhoc_state_owner() gives to worker_index: it picks only such C_Rs,
     * loads only such rows from db, and serves only such static contexts
     * (edhoc_server_add_static_context returns EDHOC_SERVER_NOT_OWNED for
     * the others); the steering program brings their requests here. db is
     * then a handle on the writer process (edhoc_state_connect), and the
     * stored rows are pruned there once, not by each worker. */
    unsigned workers;
    unsigned worker_index;
    /* The key log (optional, edhoc-cli responder --keylog): edhoc_keys is
     * called once per handshake whose message_3 verified, with the
     * complete log of its secrets (edhoc_key_log_row); oscore_keys once
     * per OSCORE context derived from a handshake, with this side's
     * parameters (Sender ID C_I, Recipient ID C_R). Both are called from
     * inside edhoc_server_handle, before the response is sent; the values
     * are secrets the server wipes when they return. */
    void (*edhoc_keys)(void *user, const struct edhoc_key_log *log);
    void (*oscore_keys)(void *user, const struct edhoc_oscore_params *p);
    void *keys_user;
};

/* Sized for a million peers: about 280 bytes of memory each (`edhoc-cli
 * bench contexts` measures it: 270 MiB at a million), and a week covers
 * devices that report daily or weekly. */
#define EDHOC_SERVER_DEFAULT_MAX_CONTEXTS        ((size_t)1000000)
#define EDHOC_SERVER_DEFAULT_CONTEXT_LIFETIME_MS ((uint64_t)7 * 24 * 3600 * 1000)

struct edhoc_server;

/* Counters of a server since it started. evicted / expired: handshakes
 * in progress dropped for max_pending / pending_timeout_s;
 * contexts_evicted / contexts_expired: OSCORE contexts dropped for
 * max_contexts / context_lifetime_ms (those pruned from the state
 * database at start included). contexts: every context held, static ones
 * included. */
struct edhoc_server_stats {
    uint64_t handshakes_ok, handshakes_failed, evicted, expired;
    uint64_t oscore_requests, oscore_errors, plain_requests;
    uint64_t contexts_evicted, contexts_expired;
    uint64_t echo_challenges; /* 4.01 with Echo sent: echo_message_1, the limit */
    /* RFC 8613 Appendix B.2 for static contexts with rfc8613_b_2: response
     * #1 sent (a run started), request #2 accepted (the context replaced),
     * request #1 or #2 refused (not verified, unknown or used R2, every R2
     * slot taken, ID Context too long). */
    uint64_t b2_started, b2_completed, b2_refused;
    /* A shared store (the fleet's): contexts taken from it on a request
     * that named none in memory, and copies dropped because another
     * responder took them over. */
    uint64_t contexts_fetched, contexts_taken_over;
    size_t pending, contexts, observers;
    size_t max_contexts;
    size_t bytes_per_context, bytes_per_pending; /* memory of one entry */
};

/* Returns the server or NULL (out of memory, bad config). cfg is copied. */
struct edhoc_server *edhoc_server_new(const struct edhoc_server_config *cfg);
void edhoc_server_free(struct edhoc_server *srv);

/* Load the contexts stored in cfg->db (each resumes above its stored SSN
 * mark and needs an Echo exchange before its first request is accepted).
 * Stored contexts idle longer than context_lifetime_ms, then all but the
 * max_contexts most recently used, are deleted first (one transaction).
 * Rows of contexts an RFC 8613 Appendix B.2 run made (ID3) are deleted,
 * not loaded: B.2 runs again (edhoc_server_add_static_context).
 * Returns the number loaded or a negative EDHOC_STATE_ERR_* / OSCORE_ERR_*. */
long edhoc_server_load_state(struct edhoc_server *srv);

/* Store when each context was last used, for the next start's choice of
 * the most recently used (one transaction). The server also stores them
 * as it runs, each at most once a minute; call this before stopping.
 * Returns 0 or a negative EDHOC_STATE_ERR_*. */
int edhoc_server_save_state(struct edhoc_server *srv);

/* A statically provisioned OSCORE context (libcoap format, parsed). It
 * comes back with the same keys after every restart, so its sender
 * sequence number must survive restarts (RFC 8613 Section 7.2.1,
 * Appendix B.1): it is refused without a state database, and its SSN mark
 * is kept there under (ID Context, Recipient ID). The mark stored under
 * that key with the same keying material (sender ID, master secret and
 * salt, algorithms) is resumed above (the first request then gets an Echo
 * challenge); otherwise the context starts at 0 and replaces that row.
 * Contexts are keyed by (ID Context, Recipient ID) (Section 3.3): two
 * static contexts with the same recipient ID and different ID Contexts
 * (none and empty being different) are served side by side; a request
 * with 'kid context' is verified by the context of that ID Context and
 * kid only, one without by each context with that kid in turn until one
 * verifies. Returns 0, EDHOC_SERVER_ERR_NO_STATE (cfg.db is NULL),
 * OSCORE_ERR_* (derivation), EDHOC_STATE_ERR_* (the mark cannot be read
 * or stored; the context is not served), or OSCORE_ERR_INVALID when a
 * context with its ID Context and recipient ID is already served (an
 * EDHOC-derived context has no ID Context) or a length is out of range.
 * With cfg->rfc8613_b2 (rfc8613_b_2,bool,true) the context runs RFC 8613
 * Appendix B.2 instead of the Echo challenge: a request it has no valid
 * context for (replay window unknown after a restart, or a 'kid context'
 * it does not know for its Recipient ID) is answered with response #1;
 * a verified request #2 replaces the context with the one of ID Context
 * R2 || R3 (stored with its own marks), which serves until the process
 * ends; the next start resumes the configured context above its mark and
 * runs B.2 again (docs/oscore-b2.md). Such a context's ID Context is at
 * most 8 bytes (R2 || ID1 within OSCORE_MAX_ID_CONTEXT, else
 * OSCORE_ERR_ID_CONTEXT_TOO_LONG), and one per Recipient ID
 * (OSCORE_ERR_INVALID). */
int edhoc_server_add_static_context(struct edhoc_server *srv, const struct oscore_config *cfg,
                                    const char *origin);
/* edhoc_server_add_static_context's answer for a context another worker
 * serves (edhoc_server_config.workers): nothing was done. */
#define EDHOC_SERVER_NOT_OWNED 1

/* Handle one request (an edhoc_transport_request_fn; user = the server). */
long edhoc_server_handle(void *srv, struct edhoc_transport_peer *peer, const char *peer_name,
                         const uint8_t *req, size_t len, uint8_t *resp, size_t cap);

/* Timers: expire old handshakes, send due /counter notifications. Call
 * often (every few hundred ms). now_ms: a monotonic clock. */
void edhoc_server_tick(struct edhoc_server *srv, uint64_t now_ms);

/* Release every configuration pointer from an older select() generation:
 * pending handshakes that still use one are dropped (SIGHUP reload keeps
 * established OSCORE contexts, which hold no configuration). */
void edhoc_server_drop_pending(struct edhoc_server *srv);

/* The server stops: record every handshake still in progress (oldest
 * first) with EDHOC_SERVER_SHUTDOWN and `why`, so that the record
 * callback sees each incoming handshake end however it ends. The
 * handshakes stay (the counts of the stop still show them) and go with
 * edhoc_server_free; call it once, after the last edhoc_server_handle.
 * Returns how many were recorded. */
size_t edhoc_server_record_shutdown(struct edhoc_server *srv, const char *why);

void edhoc_server_get_stats(const struct edhoc_server *srv, struct edhoc_server_stats *st);

/* A notification to this peer and token failed (an edhoc_transport_failure_fn
 * with user = the server): the observer is removed. */
void edhoc_server_peer_failed(void *srv, struct edhoc_transport_peer *peer, const uint8_t *token,
                              size_t token_len);

/* The handshake the server is processing right now (inside
 * edhoc_server_handle), so that an EDHOC trace callback, which belongs to
 * a configuration rather than a session, can tell handshakes apart: its
 * id (0 when none) and, when peer is not NULL, the initiator's
 * "addr:port". No errors. */
uint64_t edhoc_server_current_handshake(const struct edhoc_server *srv, const char **peer);

/* Set (or replace) the config's send callback, e.g. once the transport
 * exists. */
/* The answer to a request the amplification limit holds back (an
 * edhoc_transport_config.limited; user = the server): a 4.01 with a
 * fresh Echo value for peer when it fits budget, counted and logged.
 * Returns its length, 0 for nothing (it does not fit, req does not
 * parse, or req carries an Echo value of ours: peer is verified now and
 * the answer may go), -1 when out is too small. */
long edhoc_server_echo_challenge(void *srv, const char *peer, const uint8_t *req, size_t len,
                                 size_t held_back, size_t budget, uint8_t *out, size_t cap);

/* How the engine reaches its transport: send a notification to peer, and
 * hold / release a peer it keeps beyond the request that named it (an
 * observer). Without hold, a registration is answered without Observe
 * (RFC 7641 Section 3.1: not registered). */
struct edhoc_server_peer_calls {
    int (*send)(void *user, struct edhoc_transport_peer *peer, const uint8_t *msg, size_t len);
    struct edhoc_transport_peer *(*hold)(struct edhoc_transport_peer *peer);
    void (*release)(struct edhoc_transport_peer *peer);
};
void edhoc_server_set_sender(struct edhoc_server *srv, const struct edhoc_server_peer_calls *calls,
                             void *user);

#ifdef __cplusplus
}
#endif
#endif
