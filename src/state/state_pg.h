/*
 * state_pg.h - the context store of a responder fleet on PostgreSQL
 * (libpq): the contexts of edhoc/state.h shared by several hosts, with a
 * lease per context and sender sequence numbers reserved in blocks.
 *
 * The functions mirror the SQLite store's (edhoc_state_put_peer, _get_peer,
 * ...: same struct edhoc_state_peer, same keys, same never-lower rule for
 * marks, same EDHOC_STATE_ERR_* codes), so that one backend interface can
 * choose between the two. What the fleet adds:
 *   - a lease per context in its row (owner, token, expiry on the
 *     server's clock), taken by edhoc_state_pg_acquire with one
 *     UPDATE ... RETURNING that also loads the context and reserves its
 *     first block;
 *   - edhoc_state_pg_reserve: UPDATE ... SET ssn_mark = ssn_mark + K ...
 *     RETURNING, only under the lease's token, so two owners never get
 *     overlapping sequence numbers whatever the timing; an owner whose
 *     lease was taken over finds out there (EDHOC_STATE_ERR_LEASE_LOST);
 *   - edhoc_state_pg_put_peers: many contexts in one statement (one round
 *     trip), each leased to the caller;
 *   - a count of round trips to the server (edhoc_state_pg_get_stats).
 * docs/DESIGN.md ("Fleet store") gives the protocol and its failure cases.
 *
 * Connection: a libpq connection string, "postgresql://..." or
 * "key=value ..." (PGPASSFILE, PGSERVICEFILE, sslmode and the PG*
 * environment variables apply as in psql). A password inside the string
 * is accepted with a warning (edhoc_state_pg_warning): it shows in the
 * process list and in shell histories. A lost connection (the server
 * restarted, a network cut) is re-established by the next call, which is
 * then retried once: a statement whose answer was lost with the
 * connection may have committed, so a retried reservation can skip a
 * block of sequence numbers, never hand one out twice.
 *
 * Secrets: the rows hold OSCORE master secrets and salts; give the
 * database's role and its backups the care of a private key, and use
 * sslmode=verify-full to a server on another host. Our copies (results,
 * the struct handed to for_each's callback, the connection string) are
 * wiped after use; libpq's socket buffers are outside our reach.
 *
 * A handle is not thread-safe: one thread per handle (libpq connections
 * are independent, so one handle per thread is fine). Every function
 * returns 0 or a negative EDHOC_STATE_ERR_* code;
 * edhoc_state_pg_last_error names what failed in one line.
 */
#ifndef EDHOC_STATE_PG_H
#define EDHOC_STATE_PG_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "edhoc/state.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The lease of the context is held by another owner and has not expired
 * (acquire without takeover). */
#define EDHOC_STATE_ERR_LEASED (-5020)
/* The lease named by the token is no longer the row's: another owner took
 * the context over (or the row was put again). Drop the cached copy. */
#define EDHOC_STATE_ERR_LEASE_LOST (-5021)
/* The key names another context already (other keying material): a put
 * never overwrites one; on the fleet this is a C_R drawn twice. */
#define EDHOC_STATE_ERR_KEY_IN_USE (-5022)

/* Version 1: the contexts with their lease, and the version table. */
#define EDHOC_STATE_PG_SCHEMA_VERSION 1

#define EDHOC_STATE_PG_MAX_OWNER 63
/* Sequence numbers per reservation at most (OSCORE's Partial IV is 40 bits). */
#define EDHOC_STATE_PG_MAX_BLOCK (UINT64_C(1) << 40)

struct edhoc_state_pg;

/* A lease as its owner knows it. Sequence numbers [first, end) are the
 * caller's, reserved by the call that filled it in. expiry_ms is on the
 * server's clock (Unix milliseconds): the owner counts its lease over
 * earlier, lease_ms after it sent the request, by its own monotonic clock
 * (another host may take the context once expiry_ms has passed). */
struct edhoc_state_pg_lease {
    int64_t token;     /* names this acquisition; reservations quote it */
    uint64_t first;    /* first sequence number of the block */
    uint64_t end;      /* one past its last; the row's ssn_mark */
    int64_t expiry_ms; /* 0 where the call did not read it (put) */
};

struct edhoc_state_pg_stats {
    uint64_t round_trips;  /* statements sent and answered (or failed) */
    uint64_t reconnects;   /* connections re-established after a loss */
    uint64_t failed;       /* statements that returned an error */
    uint64_t rows_put;     /* contexts written by put_peers */
    uint64_t rows_refused; /* put_peers rows whose key named another context */
    /* edhoc_state_pg_backend_stats only: the round trips of the datagram
     * thread's connection (gets, takeovers, reservations, releases), that
     * is, all but the writer's puts. */
    uint64_t serving_round_trips;
};

/* Connect, then create or migrate the schema (in one transaction, under
 * an advisory lock, so hosts starting together do not race): a database
 * written by a newer schema is refused (EDHOC_STATE_ERR_VERSION), one with
 * a table of our name we did not create is refused (_FOREIGN), a server
 * out of reach is EDHOC_STATE_ERR_IO, a string libpq cannot parse
 * EDHOC_STATE_ERR_ARG. owner names this process to the fleet (at most
 * EDHOC_STATE_PG_MAX_OWNER bytes; NULL: "HOSTNAME:PID"); lease_ms is the
 * lease taken by put_peers and renewed by reserve. why receives the
 * reason of a failure. */
int edhoc_state_pg_open(const char *conninfo, const char *owner, int64_t lease_ms,
                        struct edhoc_state_pg **db, char *why, size_t why_cap);
void edhoc_state_pg_close(struct edhoc_state_pg *db);

/* In a child of fork(): free the handle without a word to the server, whose
 * session is the parent's. */
void edhoc_state_pg_forget(struct edhoc_state_pg *db);

/* The warning about the connection string (a password in it), or NULL. */
const char *edhoc_state_pg_warning(const struct edhoc_state_pg *db);
/* The same check without connecting: 1 and the warning in msg, 0 when
 * there is nothing to say, EDHOC_STATE_ERR_ARG (libpq's reason in msg). */
int edhoc_state_pg_check_conninfo(const char *conninfo, char *msg, size_t msg_cap);
/* One line on the last failure of the handle ("" when none). */
const char *edhoc_state_pg_last_error(const struct edhoc_state_pg *db);
const char *edhoc_state_pg_owner(const struct edhoc_state_pg *db);
const char *edhoc_state_pg_strerror(int err);

/* Store n contexts in one statement per 128 (one round trip each), each
 * leased to this handle; a key given twice is written in order. The
 * never-lower rule of edhoc_state_put_peer applies per row. leases (may be
 * NULL) get each row's token; first = 0 and end = p->ssn_mark name the
 * block of a context the caller created (fresh keys: no host used them);
 * a context other hosts may also hold (a static one) gets its numbers
 * from acquire, never from a put. A row whose key names another context
 * (other keying material) is not written: its lease gets token 0 (put_peer:
 * EDHOC_STATE_ERR_KEY_IN_USE). Atomic per statement. Returns 0, _ARG (the
 * rules of edhoc_state_put_peer), _IO. */
int edhoc_state_pg_put_peers(struct edhoc_state_pg *db, const struct edhoc_state_peer *peers,
                             size_t n, struct edhoc_state_pg_lease *leases);
int edhoc_state_pg_put_peer(struct edhoc_state_pg *db, const struct edhoc_state_peer *p);

/* A context whose put failed (the store went away under it), put again
 * with p->ssn_mark above every number its owner used: written, with the
 * lease lease->[seen_mark, p->ssn_mark), when the key is free, or when the
 * row is there with this keying material and still the mark seen_mark
 * the failed put carried (it committed after all, and nobody reserved
 * since). Otherwise nothing is written and lease->token is 0: another
 * responder reserved numbers of it, or the row is another device's. One
 * round trip. Returns 0, _ARG, _IO. */
int edhoc_state_pg_put_again(struct edhoc_state_pg *db, const struct edhoc_state_peer *p,
                             uint64_t seen_mark, struct edhoc_state_pg_lease *lease);

/* Take the lease of a context and load it (one round trip): granted when
 * the row has no owner, is this owner's, its lease expired, or takeover is
 * set; the row's ssn_mark moves up by reserve (which may be 0) and
 * lease->[first, end) is that block; *out (may be NULL) gets the context
 * with ssn_mark = end. Returns 0, EDHOC_STATE_ERR_NOT_FOUND, _LEASED (the
 * holder and the time left in last_error), _ARG, _IO. */
int edhoc_state_pg_acquire(struct edhoc_state_pg *db, const uint8_t *id_context,
                           size_t id_context_len, const uint8_t *recipient_id,
                           size_t recipient_id_len, uint64_t reserve, int64_t lease_ms,
                           bool takeover, struct edhoc_state_pg_lease *lease,
                           struct edhoc_state_peer *out);

/* Take the lease of a context read earlier (edhoc_state_pg_get_peer) with
 * ssn_mark seen_mark, only if that mark is still the row's: nobody has
 * reserved numbers since, so [seen_mark, seen_mark + reserve) is this
 * owner's alone (lease->[first, end)), whoever held the lease. One round
 * trip. Returns 0, EDHOC_STATE_ERR_LEASE_LOST (the mark moved: read it
 * again), _NOT_FOUND, _ARG, _IO. */
int edhoc_state_pg_take_over(struct edhoc_state_pg *db, const uint8_t *id_context,
                             size_t id_context_len, const uint8_t *recipient_id,
                             size_t recipient_id_len, uint64_t seen_mark, uint64_t reserve,
                             int64_t lease_ms, struct edhoc_state_pg_lease *lease);

/* Reserve the next count sequence numbers under the lease (count 0 only
 * renews it) and extend it by lease_ms: lease->[first, end) becomes the
 * new block. Returns 0, _LEASE_LOST (drop the context: another owner has
 * it), _NOT_FOUND, _ARG, _IO. */
int edhoc_state_pg_reserve(struct edhoc_state_pg *db, const uint8_t *id_context,
                           size_t id_context_len, const uint8_t *recipient_id,
                           size_t recipient_id_len, uint64_t count, int64_t lease_ms,
                           struct edhoc_state_pg_lease *lease);

/* Give the lease up (another host may take the context at once). Returns
 * 0, _LEASE_LOST (it was no longer ours), _IO, _ARG. */
int edhoc_state_pg_release(struct edhoc_state_pg *db, const uint8_t *id_context,
                           size_t id_context_len, const uint8_t *recipient_id,
                           size_t recipient_id_len, const struct edhoc_state_pg_lease *lease);

/* Takeovers announced to the fleet. take_over notifies every handle that
 * listens (PostgreSQL LISTEN/NOTIFY, delivered when the takeover
 * commits), so that the responder that served the context drops its copy
 * before it accepts another request under it: without this it found out
 * only at its next reservation, and a request the new owner accepted,
 * replayed to the old one, was accepted a second time.
 *
 * edhoc_state_pg_listen: from now on, and on every new connection, before
 * any other statement. edhoc_state_pg_takeovers: calls fn for each
 * takeover by another owner notified since the last call, without a round
 * trip (unless the connection must be opened again); returns how many, or
 * _IO. edhoc_state_pg_listen_gen: the number of connections that listened
 * so far; when it changes, what was notified in between was lost (the
 * caller asks edhoc_state_pg_owned which leases are still its own). */
struct edhoc_state_pg_takeover {
    bool has_id_context;
    size_t id_context_len, recipient_id_len;
    uint8_t id_context[EDHOC_STATE_MAX_ID_CONTEXT];
    uint8_t recipient_id[EDHOC_STATE_MAX_ID];
    char owner[EDHOC_STATE_PG_MAX_OWNER + 1]; /* the new owner */
};
int edhoc_state_pg_listen(struct edhoc_state_pg *db);
int edhoc_state_pg_takeovers(struct edhoc_state_pg *db,
                             void (*fn)(void *user, const struct edhoc_state_pg_takeover *t),
                             void *user);
uint64_t edhoc_state_pg_listen_gen(const struct edhoc_state_pg *db);
/* fn for every context whose lease is this owner's, with its token (one
 * round trip). Returns 0, _IO, or fn's non-zero answer. */
int edhoc_state_pg_owned(struct edhoc_state_pg *db,
                         int (*fn)(void *user, const struct edhoc_state_pg_takeover *key,
                                   int64_t token),
                         void *user);

/* The store as an edhoc_state_db handle for the responder engine
 * (edhoc_state_open_backend; state_pg_backend.c): contexts created here are
 * put by a writer thread of the handle, in batches, each leased to this
 * owner; a request for a context not in memory takes it over
 * (edhoc_state_get_peer); every mark is a reservation under the lease; a
 * reservation that finds the lease taken answers
 * EDHOC_STATE_ERR_TAKEN_OVER. Arguments as edhoc_state_pg_open; *fleet
 * (may be NULL) names the backend for its figures, valid until
 * edhoc_state_close of *db. */
struct edhoc_state_pg_backend;
int edhoc_state_pg_open_db(const char *conninfo, const char *owner, int64_t lease_ms,
                           struct edhoc_state_db **db, struct edhoc_state_pg_backend **fleet,
                           char *why, size_t why_cap);
/* Round trips and the rest, over both of the backend's connections. */
void edhoc_state_pg_backend_stats(const struct edhoc_state_pg_backend *fleet,
                                  struct edhoc_state_pg_stats *out);
const char *edhoc_state_pg_backend_owner(const struct edhoc_state_pg_backend *fleet);

/* As their edhoc_state_* namesakes (edhoc/state.h). */
int edhoc_state_pg_get_peer(struct edhoc_state_pg *db, const uint8_t *id_context,
                            size_t id_context_len, const uint8_t *recipient_id,
                            size_t recipient_id_len, struct edhoc_state_peer *out);
int edhoc_state_pg_store_ssn(struct edhoc_state_pg *db, const uint8_t *id_context,
                             size_t id_context_len, const uint8_t *recipient_id,
                             size_t recipient_id_len, uint64_t mark);
int edhoc_state_pg_delete_peer(struct edhoc_state_pg *db, const uint8_t *id_context,
                               size_t id_context_len, const uint8_t *recipient_id,
                               size_t recipient_id_len);
int edhoc_state_pg_touch_peer(struct edhoc_state_pg *db, const uint8_t *id_context,
                              size_t id_context_len, const uint8_t *recipient_id,
                              size_t recipient_id_len, int64_t last_used);
/* Same order as edhoc_state_for_each_peer; the struct passed to fn is the
 * handle's and is wiped after fn returns. */
int edhoc_state_pg_for_each_peer(struct edhoc_state_pg *db,
                                 int (*fn)(void *ctx, const struct edhoc_state_peer *p), void *ctx);
int edhoc_state_pg_prune(struct edhoc_state_pg *db, int64_t used_before, uint64_t keep,
                         uint64_t *expired, uint64_t *evicted);
long edhoc_state_pg_count(struct edhoc_state_pg *db);

void edhoc_state_pg_get_stats(const struct edhoc_state_pg *db, struct edhoc_state_pg_stats *out);
/* The schema version the database holds (or a negative error). */
int edhoc_state_pg_schema_version(struct edhoc_state_pg *db);

#ifdef __cplusplus
}
#endif
#endif
