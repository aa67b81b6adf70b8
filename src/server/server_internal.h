/*
 * server_internal.h - what the files of the responder engine share: the
 * server's layout, its contexts, pending handshakes and observers, and the
 * functions one file offers the others. Private to src/server/; the API
 * is edhoc/transport.h's "EDHOC over CoAP" part.
 */
#ifndef EDHOC_SERVER_INTERNAL_H
#define EDHOC_SERVER_INTERNAL_H
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
#include "edhoc/server.h"
#include "edhoc/amplification.h"

#define MAX_OBSERVERS  64
#define MAX_PEER_NAME  64
#define CF_TEXT        0
#define CF_LINK_FORMAT 40
/* Established contexts whose first OSCORE request is still to be
 * reported (interop records); the oldest gives way. */
#define FIRST_REQUESTS 32

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
    uint32_t self;          /* its index */
    uint32_t chain;         /* next in its srv->contexts chain */
    struct edhoc_ilink lru; /* in srv->ctx_lru (EDHOC-derived only) */
    uint32_t used_ds;       /* last verified request, tenths of a second (to_ds) */
    struct ctx_key key;
    bool is_static;
    uint8_t use; /* USE_DIRTY */
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
    /* With cfg.edhoc_keys only (NULL otherwise): a copy of cfg whose
     * trace fills this handshake's key log (srv_key_log_start). */
    struct srv_key_log *klog;
    struct edhoc_session s;
};

/* The session's configuration, its trace through the key log first. */
struct srv_key_log {
    struct edhoc_config cfg;
    struct edhoc_key_log log;
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
    void (*release)(struct edhoc_transport_peer *peer); /* the server's, at registration */
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
    bool state_txn;             /* a transaction of cfg.db is open (srv_state_write_begin) */
    int store_err;              /* the last failed sequence-number mark write (store_ssn) */
    /* The context whose reservation found it taken over by another
     * responder of the fleet (store_err EDHOC_STATE_ERR_TAKEN_OVER). */
    struct ctx_key taken_over;
    /* The context srv_unprotect_request took from the shared store for
     * the request being answered (NULL: none): kept only if the request
     * verifies under it, so that datagrams naming kids cannot fill the
     * memory with copies nobody asked for. */
    struct peer_ctx *fetched_for_request;
    /* A shared store out of reach (srv_store_outcome): since when, when a
     * new handshake may probe it again, and whether the request being
     * answered found it so (its answer is then 5.03, not an error of the
     * request's). */
    bool store_down;
    uint64_t store_down_ms, store_probe_ms;
    bool store_unavailable;
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
    uint8_t echo_secret[32];  /* keys the stateless Echo values */
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
    uint8_t *bytes_body;        /* /bytes: the pattern, max_body long */
    struct edhoc_bw_server *bw; /* inner block-wise transfers */
    uint8_t c_r_pool[128];      /* random bytes for C_R candidates (srv_choose_c_r) */
    size_t c_r_pool_left;
};

/* An unprotected response before OSCORE protects it (resources.c). */
struct plain_resp {
    uint8_t code;
    int cf;
    const uint8_t *payload;
    size_t payload_len;
    bool observe; /* add Observe with seq */
    uint32_t seq;
    char text[64];
};

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
#define USE_DIRTY   1u
/* Room for static contexts in the context pool, besides max_contexts. */
#define STATIC_ROOM 1024u

/* ---- address_validation.c ---- */
bool srv_first_is_error(const uint8_t *p, size_t len);
bool srv_echo_ok(struct edhoc_server *srv, const struct coap_msg *req, const char *peer,
                 uint8_t *out, size_t cap, long *resp_len);
void srv_amp_take_echo(struct edhoc_server *srv, const struct coap_msg *req, const char *peer);
void srv_amp_oscore_verified(struct edhoc_server *srv, const char *peer);
void srv_amp_handshake_completed(struct edhoc_server *srv, const struct pending *h,
                                 bool from_own_peer);
bool srv_pressure_holds_back_message_1(struct edhoc_server *srv, const struct coap_msg *req,
                                       const char *peer, uint8_t *out, size_t cap, long *resp);
bool srv_amp_holds_back_message_1(struct edhoc_server *srv, const struct coap_msg *req,
                                  const char *peer, const uint8_t *m1, size_t m1_len, uint8_t *out,
                                  size_t cap, long *resp);

/* ---- b2.c ---- */
long srv_on_b2_request(struct edhoc_server *srv, struct b2_entry *e,
                       struct edhoc_transport_peer *peer, const char *peer_name,
                       const struct oscore_option *oo, const uint8_t *req, size_t len, uint8_t *out,
                       size_t cap);

/* ---- context_store.c ---- */
void srv_static_row(struct edhoc_state_peer *sp, const struct ctx_key *key,
                    const struct oscore_config *cfg, const char *peer);

/* ---- contexts.c ---- */
void srv_key_set(struct ctx_key *k, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                 size_t rid_len);
bool srv_key_rid_is(const struct ctx_key *k, const uint8_t *rid, size_t rid_len);
bool srv_key_equal(const struct ctx_key *a, const struct ctx_key *b);
const uint8_t *srv_key_idc(const struct ctx_key *k);
uint64_t srv_clock_ms(const struct edhoc_server *srv);
uint32_t srv_to_ds(uint64_t ms);
uint64_t srv_used_ms(const struct peer_ctx *p);
int64_t srv_wall_now_ms(void);
int64_t srv_wall_ms_of(const struct edhoc_server *srv, uint64_t t_ms);
uint64_t srv_server_ms_of(const struct edhoc_server *srv, int64_t wall_ms);
void srv_state_write_begin(struct edhoc_server *srv);
int srv_state_write_end(struct edhoc_server *srv);
struct peer_ctx *srv_ctx_at(const struct edhoc_server *srv, uint32_t i);
uint64_t srv_rid_hash(const struct edhoc_server *srv, const uint8_t *rid, size_t len);
uint64_t srv_ctx_hash_of(const void *entry, void *user);
struct peer_ctx *srv_ctx_find(struct edhoc_server *srv, const struct ctx_key *key);
struct b2_entry *srv_b2_find(struct edhoc_server *srv, const uint8_t *rid, size_t len);
bool srv_rid_in_use(struct edhoc_server *srv, const uint8_t *rid, size_t len);
void srv_ctx_remove(struct edhoc_server *srv, const struct ctx_key *key);
/* Whether a response gets the responder's own Partial IV rather than the
 * request's nonce (RFC 8613 Section 5.2: the server may use either; the
 * client must take both, Section 8.4). On a fleet's shared store, always:
 * a responder that another took a context from serves it until its next
 * reservation, and a request the new owner answered, replayed to it, would
 * be answered under the same (key, request nonce). Its own numbers come
 * from blocks reserved in the row, which no two responders share. */
static inline bool srv_response_own_piv(const struct edhoc_server *srv)
{
    return edhoc_state_is_shared(srv->cfg.db);
}

/* A shared store (edhoc_state_is_shared): the context of key read from
 * the store and put in memory, to be served above its mark after an Echo
 * round trip; NULL when the store has none (or fails, which is logged).
 * Reading takes nothing: the first sequence-number reservation, which
 * only a request that verified causes, takes the context over. */
struct peer_ctx *srv_ctx_fetch(struct edhoc_server *srv, const struct ctx_key *key);
/* The outcome n of the request a fetched context p was read for: counted
 * and logged when it verified (or needs the Echo round trip), else p is
 * left in srv->fetched_for_request, to be dropped once answered. */
void srv_ctx_fetched_verdict(struct edhoc_server *srv, struct peer_ctx *p, long n);
/* How long a client waits before it asks again when the state store
 * failed (5.03 Max-Age, RFC 7252 Section 5.9.3.4): a full disk or a store
 * out of reach seldom recovers within a second, and each try costs a
 * write or a connection attempt. */
#define SRV_STORE_RETRY_S 5u
/* The result rc of a call on a shared store (the fleet's): the first
 * failure to reach it and its first answer after that are logged once
 * each; while it is out of reach the request being answered gets 5.03
 * (store_unavailable). No-op for a store of this host. */
void srv_store_outcome(struct edhoc_server *srv, int rc, const char *what, bool answered);
struct ctx_mark *srv_ctx_mark_of(struct edhoc_server *srv, const struct peer_ctx *p);
struct peer_ctx *srv_ctx_insert(struct edhoc_server *srv, const struct ctx_key *key,
                                bool is_static);
void srv_ctx_persist(struct peer_ctx *p);
/* On a fleet's store: drop the contexts another responder took over, as
 * the store announced (before each OSCORE request, and from the tick). */
void srv_apply_takeovers(struct edhoc_server *srv);
void srv_ctx_make_room(struct edhoc_server *srv);
void srv_ctx_verified(struct edhoc_server *srv, struct peer_ctx *p, long n);
void srv_contexts_tick(struct edhoc_server *srv, uint64_t now);

/* ---- datagram.c ---- */
long srv_build(const struct coap_msg *req, uint8_t code, int cf, const uint8_t *payload,
               size_t payload_len, uint8_t *out, size_t cap);
long srv_service_unavailable(const struct coap_msg *req, unsigned max_age_s, uint8_t *out,
                             size_t cap);
long srv_edhoc_error_text_rec(const struct coap_msg *req, const char *text,
                              struct edhoc_server_handshake *r, uint8_t *out, size_t cap);
bool srv_our_fault(int err);
long srv_session_error_response(struct edhoc_server *srv, const struct coap_msg *req,
                                const struct edhoc_session *s, int err, bool own_step,
                                struct edhoc_server_handshake *r, uint8_t *out, size_t cap);
void srv_cid_hex(const uint8_t *c, size_t len, char *out, size_t cap);

/* ---- handshake.c ---- */
long srv_on_message_1(struct edhoc_server *srv, const struct coap_msg *req, const char *peer,
                      const uint8_t *m1, size_t m1_len, int framing, uint8_t *out, size_t cap);
const char *srv_tolerated_text(const struct pending *h);
void srv_log_done(struct edhoc_server *srv, const struct pending *h, size_t m3_len,
                  const char *outcome, const char *why);
bool srv_from_own_peer(const struct edhoc_server *srv, const struct pending *h);
long srv_ignored_from_elsewhere(struct edhoc_server *srv, const struct coap_msg *req,
                                const struct pending *h, const char *what, const char *diagnostic,
                                uint8_t *out, size_t cap);
long srv_run_message_3(struct edhoc_server *srv, const struct coap_msg *req, struct pending *h,
                       const uint8_t *m3, size_t m3_len, bool combined, struct peer_ctx **ctx,
                       uint8_t *out, size_t cap);
void srv_hs_ok(struct edhoc_server *srv, const struct pending *h, const struct peer_ctx *ctx,
               size_t m3_len, size_t m4_len, bool combined);
long srv_on_message_3(struct edhoc_server *srv, const struct coap_msg *req, struct pending *h,
                      const uint8_t *m3, size_t m3_len, uint8_t *out, size_t cap);
long srv_on_peer_error(struct edhoc_server *srv, const struct coap_msg *req, struct pending *h,
                       const uint8_t *msg, size_t len, uint8_t *out, size_t cap);

/* ---- oscore_requests.c ---- */
long srv_oscore_error(int err, const uint8_t *req, size_t len, uint8_t *out, size_t cap);
long srv_unprotect_request(struct edhoc_server *srv, const struct oscore_option *oo,
                           const uint8_t *req, size_t len, struct peer_ctx **ctx,
                           struct oscore_binding *b);
long srv_on_unprotected(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                        const char *peer_name, struct peer_ctx *ctx, long n,
                        struct oscore_binding *b, const uint8_t *req, size_t len, uint8_t *out,
                        size_t cap);
long srv_on_oscore(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                   const char *peer_name, struct peer_ctx *ctx, const uint8_t *req, size_t len,
                   uint8_t *out, size_t cap);

/* ---- pending.c ---- */
struct pending *srv_pending_at(const struct edhoc_server *srv, uint32_t i);
uint64_t srv_c_r_hash_of(const void *entry, void *user);
uint64_t srv_peer_hash_of(const void *entry, void *user);
struct pending *srv_pending_find(struct edhoc_server *srv, const uint8_t *c_r, size_t len);
struct pending *srv_pending_find_bare(struct edhoc_server *srv, const char *peer);
void srv_pending_index(struct edhoc_server *srv, struct pending *h);
void srv_pending_free(struct edhoc_server *srv, struct pending *h);
/* key_log.c: the configuration h's session starts with (a copy tracing
 * into h's key log when cfg.edhoc_keys is set); the log handed to
 * cfg.edhoc_keys once message_3 verified; this side's OSCORE parameters
 * to cfg.oscore_keys; the log freed with its handshake (the session's
 * configuration goes with it: free after edhoc_session_wipe). */
const struct edhoc_config *srv_key_log_start(struct edhoc_server *srv, struct pending *h,
                                             const struct edhoc_config *cfg);
void srv_key_log_completed(struct edhoc_server *srv, struct pending *h);
void srv_key_log_oscore(struct edhoc_server *srv, const struct edhoc_oscore_params *p);
void srv_key_log_free(struct pending *h);
struct pending *srv_pending_alloc(struct edhoc_server *srv, enum edhoc_amp_trust trust);
void srv_c_r_one_byte_allowed(int form, uint64_t out[4]);
int srv_choose_c_r(struct edhoc_server *srv, const uint8_t *c_i, size_t c_i_len, uint8_t *out,
                   size_t *out_len);

/* ---- records.c ---- */
void srv_hs_init(struct edhoc_server *srv, struct edhoc_server_handshake *r, uint64_t id,
                 const char *peer, int framing);
void srv_hs_from_pending(struct edhoc_server *srv, const struct pending *h,
                         struct edhoc_server_handshake *r);
void srv_hs_add_message_3(struct edhoc_server *srv, const struct pending *h,
                          struct edhoc_server_handshake *r);
void srv_hs_sent_error(struct edhoc_server_handshake *r, const uint8_t *msg, size_t len);
void srv_hs_emit(struct edhoc_server *srv, struct edhoc_server_handshake *r);
void srv_hs_end_pending(struct edhoc_server *srv, const struct pending *h,
                        enum edhoc_server_outcome outcome, const char *step, const char *text);
void srv_first_request_add(struct edhoc_server *srv, uint64_t hs_id, const struct ctx_key *key,
                           const char *peer);
struct first_request *srv_first_request_find(struct edhoc_server *srv, const struct ctx_key *key,
                                             const char *peer);
void srv_first_request_report(struct edhoc_server *srv, struct first_request *f, int err,
                              const char *text);

/* ---- resources.c ---- */
bool srv_path_is(const struct coap_msg *m, const char *path);
bool srv_protected_path(const struct coap_msg *m);
void srv_resource(struct edhoc_server *srv, const struct coap_msg *in, struct plain_resp *r);
long srv_inner_response(const struct coap_msg *in, const struct plain_resp *r, uint8_t *out,
                        size_t cap);
struct observer *srv_observer_find(struct edhoc_server *srv, const struct ctx_key *key,
                                   const uint8_t *tok, size_t tok_len);
void srv_observer_drop(struct observer *o);
void srv_notify_counter(struct edhoc_server *srv);

/* ---- server.c ---- */
bool srv_log_wanted(const struct edhoc_server *srv, int level);
void srv_log(struct edhoc_server *srv, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void srv_hex(const uint8_t *p, size_t n, char *out, size_t cap);
uint64_t srv_mono_ms(void);

#endif
