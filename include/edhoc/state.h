/*
 * edhoc/state.h - durable state of a responder (or any long-lived peer):
 * established OSCORE contexts and their sender-sequence-number high-water
 * marks, in one SQLite database under a state directory.
 *
 * The OSCORE module asks, through its persistence callback, that a mark be
 * stored *before* sequence numbers up to it are used (RFC 8613 Appendix
 * B.1.1); edhoc_state_store_ssn() returns only once the mark is durable,
 * so after any crash -- kill -9 included -- a restarted process resumes
 * above every sequence number it ever used.
 *
 * All functions return 0 or a negative EDHOC_STATE_ERR_* code; `why`
 * arguments (may be NULL) receive a one-line message naming the file and
 * the problem.
 *
 * The file holds SECRETS (OSCORE master secrets and salts, as plain blobs):
 * it is created with mode 0600 (its -wal/-shm companions inherit that mode)
 * in a directory created 0700, whatever the umask, and rows that are
 * replaced or deleted are zeroed on disk (PRAGMA secure_delete). Back it up
 * and delete it as you would a private key.
 *
 * Durability: WAL journal with synchronous=FULL, so every put/store/delete
 * is fsync'ed before it returns (kill -9 and power loss alike) -- or, with
 * group commit (edhoc_state_group_commit), with its batch: marks before
 * edhoc_state_store_ssn returns, the rest with the next batch.
 *
 * Concurrency: one process at a time holds a state directory and its
 * database (an flock on the directory and one on the database file, so a
 * hard link of the file in another directory is refused too; a second
 * edhoc_state_open fails with EDHOC_STATE_ERR_IO, "in use by another
 * process (pid N)"), because two processes serving the same contexts
 * would reuse nonces. Locks are per host: never let two hosts use one
 * copy (a network file system, a copied directory). A handle is NOT thread-safe: it owns
 * prepared statements that are reused on every call, so use it from one
 * thread, or serialise every call on it with a mutex. After fork() only
 * one of the two processes may go on using a handle (daemonizing: the
 * child); its first call there reconnects to the database, because SQLite
 * connections do not survive fork (POSIX locks are not inherited). The
 * directory lock is shared with the child and stays held.
 */
#ifndef EDHOC_STATE_H
#define EDHOC_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EDHOC_STATE_ERR_IO        (-5001) /* cannot create/open/write the database */
#define EDHOC_STATE_ERR_FOREIGN   (-5002) /* the file is not an edhoc-cli state database */
#define EDHOC_STATE_ERR_CORRUPT   (-5003) /* the database is damaged */
#define EDHOC_STATE_ERR_VERSION   (-5004) /* written by a newer schema version */
#define EDHOC_STATE_ERR_NOT_FOUND (-5005)
#define EDHOC_STATE_ERR_ARG       (-5006)
/* The directory or a database file is a symbolic link, not owned by the
 * effective uid, open to group or others (directory beyond 0700, files
 * beyond 0600), or in a directory others may write without the sticky
 * bit; the message names the path, what was found and the fix. */
#define EDHOC_STATE_ERR_UNSAFE (-5007)
/* edhoc_state_wait without blocking: the batch has not committed yet. */
#define EDHOC_STATE_PENDING 1

/* Version 2 keys contexts by (ID Context, Recipient ID); version 3 adds
 * when each was last used; version 4 keeps the same rows in a rowid table
 * (new contexts append; the key is a unique index). Older databases
 * (version 1 keyed by recipient ID alone, 2, 3) are migrated when opened,
 * see edhoc_state_open(). */
#define EDHOC_STATE_SCHEMA_VERSION 4
#define EDHOC_STATE_FILE           "edhoc-cli-state.sqlite"
/* Next to it: what tells a stale copy of the database (edhoc_state_recovery). */
#define EDHOC_STATE_MARK_FILE "edhoc-cli-state.marks"

#define EDHOC_STATE_MAX_ID         8
#define EDHOC_STATE_MAX_SECRET     64
#define EDHOC_STATE_MAX_SALT       64
#define EDHOC_STATE_MAX_ID_CONTEXT 16

/* PRAGMA application_id of the database: "EDHC". */
#define EDHOC_STATE_APPLICATION_ID 0x45444843

/* One established OSCORE context, as the responder stores it. The key is
 * the pair (ID Context, Recipient ID) (RFC 8613 Section 3.3: contexts with
 * one Recipient ID are told apart by their ID Context); the recipient ID
 * is the ID the peer uses as kid in its requests. "No ID Context" and an
 * empty one are different keys, as they derive different keys (nil vs an
 * empty byte string in the info of Section 3.2.1). */
struct edhoc_state_peer {
    uint8_t recipient_id[EDHOC_STATE_MAX_ID];
    size_t recipient_id_len;
    uint8_t sender_id[EDHOC_STATE_MAX_ID];
    size_t sender_id_len;
    bool has_id_context; /* false: no ID Context (id_context_len must be 0) */
    uint8_t id_context[EDHOC_STATE_MAX_ID_CONTEXT];
    size_t id_context_len;
    uint8_t master_secret[EDHOC_STATE_MAX_SECRET];
    size_t master_secret_len;
    uint8_t master_salt[EDHOC_STATE_MAX_SALT];
    size_t master_salt_len;
    int aead_alg;      /* COSE */
    int hkdf_alg;      /* COSE hash (-16 / -43) */
    uint64_t ssn_mark; /* no sender sequence number >= this was used */
    char peer[64];     /* "addr:port" of the peer when established (informational) */
    int64_t created;   /* Unix seconds */
    int method, suite; /* of the EDHOC run that produced it; -1 for static contexts */
    /* Unix milliseconds of its last use (a request it verified, as the
     * responder counts it); put with 0: created * 1000. */
    int64_t last_used;
};

struct edhoc_state_db;

/* Open or create DIR/EDHOC_STATE_FILE (DIR is created with mode 0700 if
 * missing; the file is created 0600). An existing file that is not an
 * edhoc-cli database, or is corrupt, or has a newer schema, is refused and
 * left untouched. Returns 0, EDHOC_STATE_ERR_IO, _FOREIGN, _CORRUPT,
 * _VERSION. */
/* A version 1 or 2 database is migrated in place, in one transaction that
 * is durable before open returns (a crash during it leaves the old
 * version, which the next open migrates again). Every row keeps all its
 * values, ssn_mark included; last_used, which they did not have, starts
 * at each row's created time. Version 1 stored an empty id_context both
 * for "no ID Context" and for an empty one, so:
 *   - id_context of 1 byte or more: that ID Context;
 *   - empty, EDHOC-derived row (method >= 0): no ID Context, which is what
 *     RFC 9528 Appendix A.1 establishes and what version 1 loaded it as;
 *   - empty, static row (method < 0): the context file may have said
 *     either, so the row is kept under both keys, each with the mark. A
 *     static context resumes from the mark stored under its own key; had
 *     the migration guessed "absent" for a context configured with an
 *     empty ID Context, that context would start again from sequence
 *     number 0 under keys it had already used. */
int edhoc_state_open(const char *dir, struct edhoc_state_db **db, char *why, size_t why_cap);
/* Also EDHOC_STATE_ERR_ARG (NULL dir or db, path too long), _IO when
 * another process holds the directory, and _UNSAFE when DIR or a database
 * file breaks the rules for secrets (DIR a symbolic link, not owned by the
 * effective uid, mode beyond 0700; a file beyond 0600 or someone else's; a
 * directory above DIR writable by others without the sticky bit). An empty file, a non-SQLite file, a
 * symlink or another program's SQLite database are _FOREIGN; a truncated
 * or damaged one (PRAGMA quick_check) is _CORRUPT. None of these is ever
 * written to. */
void edhoc_state_close(struct edhoc_state_db *db);

/* A store that went backwards: a -wal lost after a crash, or a database
 * file restored from an older copy, holds marks below sequence numbers
 * already used. edhoc_state_open compares the database with the mark file
 * next to it (EDHOC_STATE_MARK_FILE: a generation both hold, and a ceiling
 * above every mark ever stored, written before a mark passes it) and, when
 * they disagree, moves every mark up to that ceiling (or, without a usable
 * mark file, 2^32 above the highest stored mark) before returning, as RFC
 * 8613 Appendix B.1.1 allows. Returns a one-line account of what was
 * found and done (for the log), or NULL when nothing was. */
const char *edhoc_state_recovery(const struct edhoc_state_db *db);

/* Insert or replace the context keyed by (p->has_id_context ?
 * p->id_context : none, p->recipient_id) (durable on return). Returns 0,
 * EDHOC_STATE_ERR_IO, EDHOC_STATE_ERR_ARG. */
/* Replacing a context that has the same keying material (sender ID,
 * master secret and salt, algorithms) keeps the higher of the stored and
 * the given ssn_mark, so re-storing a context can never lower its mark;
 * different keying material starts from p->ssn_mark. _ARG: a length above
 * its EDHOC_STATE_MAX_*, id_context_len > 0 without has_id_context,
 * ssn_mark above INT64_MAX, or p->peer without a terminating NUL. Also
 * EDHOC_STATE_ERR_CORRUPT when SQLite finds the file damaged. */
int edhoc_state_put_peer(struct edhoc_state_db *db, const struct edhoc_state_peer *p);

/* In the functions below, a context is named by its ID Context and its
 * Recipient ID: id_context NULL means "no ID Context" (then
 * id_context_len must be 0); non-NULL is an ID Context of id_context_len
 * bytes, which may be 0 (present but empty). Same convention as
 * struct oscore_params. */

/* Durably record that sequence numbers below `mark` may be used by the
 * context (id_context, recipient_id) (never lowers a stored mark).
 * Suitable as the body of the OSCORE persistence callback. Returns 0,
 * EDHOC_STATE_ERR_IO, EDHOC_STATE_ERR_NOT_FOUND. */
/* A mark at or below the stored one returns 0 without writing (the stored
 * one is already durable). Also returns EDHOC_STATE_ERR_ARG (NULL db, id
 * longer than EDHOC_STATE_MAX_ID, ID Context longer than
 * EDHOC_STATE_MAX_ID_CONTEXT or NULL with a length, mark above INT64_MAX)
 * and EDHOC_STATE_ERR_CORRUPT (SQLite found the file damaged). Cost: one
 * prepared UPDATE and one fsync of the WAL. */
int edhoc_state_store_ssn(struct edhoc_state_db *db, const uint8_t *id_context,
                          size_t id_context_len, const uint8_t *recipient_id,
                          size_t recipient_id_len, uint64_t mark);

/* Remove the context (id_context, recipient_id); others with the same
 * recipient ID stay. Returns 0, EDHOC_STATE_ERR_IO,
 * EDHOC_STATE_ERR_NOT_FOUND, EDHOC_STATE_ERR_ARG. */
int edhoc_state_delete_peer(struct edhoc_state_db *db, const uint8_t *id_context,
                            size_t id_context_len, const uint8_t *recipient_id,
                            size_t recipient_id_len);

/* Call fn for every stored context (stops early and returns fn's value if
 * it is non-zero). Returns 0, EDHOC_STATE_ERR_IO, EDHOC_STATE_ERR_CORRUPT,
 * or fn's value. */
int edhoc_state_for_each_peer(struct edhoc_state_db *db,
                              int (*fn)(void *ctx, const struct edhoc_state_peer *p), void *ctx);

/* Contexts are visited in recipient-ID order (bytewise), and for one
 * recipient ID the one without ID Context first, then by ID Context
 * (bytewise). fn may call
 * put/store/delete/get on the same handle but not edhoc_state_for_each_peer
 * (nested iteration returns EDHOC_STATE_ERR_ARG). The struct passed to fn
 * is wiped after fn returns: copy what you keep. */

/* Record that the context was last used at last_used (Unix milliseconds;
 * it replaces the stored time, earlier or later: the caller knows the
 * order of use). Returns 0, EDHOC_STATE_ERR_NOT_FOUND,
 * EDHOC_STATE_ERR_ARG (negative time, bad key), EDHOC_STATE_ERR_IO. */
int edhoc_state_touch_peer(struct edhoc_state_db *db, const uint8_t *id_context,
                           size_t id_context_len, const uint8_t *recipient_id,
                           size_t recipient_id_len, int64_t last_used);

/* Bound the stored contexts of EDHOC runs (method >= 0): delete those last
 * used before used_before (Unix milliseconds; 0: none is too old), then
 * every one but the `keep` most recently used (UINT64_MAX: no bound; of
 * contexts last used at the same millisecond, the lowest keys go first).
 * Cost: an index walk of `keep` entries, and the deletions.
 * Static contexts (method < 0) are never deleted: their rows hold the
 * marks that keep a configured context's nonces unique. A row goes with
 * its mark (they are one row). *expired and *evicted (may be NULL) get
 * the counts of each kind. Inside edhoc_state_begin/commit, one
 * transaction with the other writes. Returns 0, EDHOC_STATE_ERR_IO,
 * EDHOC_STATE_ERR_ARG (during an iteration). */
int edhoc_state_prune(struct edhoc_state_db *db, int64_t used_before, uint64_t keep,
                      uint64_t *expired, uint64_t *evicted);

/* Number of stored contexts (or a negative error). */
long edhoc_state_count(struct edhoc_state_db *db);

/* Load the context (id_context, recipient_id) into *out (wiped on
 * failure). Returns 0, EDHOC_STATE_ERR_NOT_FOUND, EDHOC_STATE_ERR_ARG,
 * EDHOC_STATE_ERR_IO, EDHOC_STATE_ERR_CORRUPT (a stored value out of
 * range). */
int edhoc_state_get_peer(struct edhoc_state_db *db, const uint8_t *id_context,
                         size_t id_context_len, const uint8_t *recipient_id,
                         size_t recipient_id_len, struct edhoc_state_peer *out);

const char *edhoc_state_strerror(int err);

/* Glue for the OSCORE persistence callback (oscore_store_ssn_fn in
 * edhoc/oscore.h has this signature): register it with `user` pointing at
 * a binding that lives as long as the OSCORE context, e.g.
 *   oscore_context_set_persistence(&ctx, edhoc_state_store_ssn_cb, &binding, K);
 * Returns what edhoc_state_store_ssn returns (0 only once durable). */
struct edhoc_state_ssn_binding {
    struct edhoc_state_db *db;
    bool has_id_context; /* false: the context has no ID Context */
    uint8_t id_context[EDHOC_STATE_MAX_ID_CONTEXT];
    size_t id_context_len;
    uint8_t recipient_id[EDHOC_STATE_MAX_ID];
    size_t recipient_id_len;
};
int edhoc_state_store_ssn_cb(void *binding, uint64_t mark);

/* Group several writes into one transaction and one fsync (e.g. every
 * context established in one pass of the event loop, or a bulk import):
 * between begin and commit, put/store/delete are NOT durable on return;
 * commit makes all of them durable at once, rollback (or close) discards
 * them. The never-lower rule still applies inside. A commit that fails
 * rolls back. Returns 0, EDHOC_STATE_ERR_IO, EDHOC_STATE_ERR_CORRUPT, or
 * EDHOC_STATE_ERR_ARG (begin inside a transaction, commit/rollback outside
 * one). Do not hand a store_ssn inside an open transaction to OSCORE as
 * "stored": the OSCORE callback needs durability on return. */
int edhoc_state_begin(struct edhoc_state_db *db);
int edhoc_state_commit(struct edhoc_state_db *db);
int edhoc_state_rollback(struct edhoc_state_db *db);

/* ---- Group commit ----
 * Hand the writes of a local handle to a writer thread that commits them
 * in batches: one transaction and one fsync per batch, a batch closed when
 * it holds max_rows items (the responder: 256), max_ms milliseconds after
 * its first item (10), or at once when a caller waits for it. Then:
 *   - edhoc_state_put_peer, _delete_peer, _touch_peer queue and return 0
 *     (argument errors still come back at once): what they store is
 *     durable with the next batch, not on return. A failed batch is
 *     counted (edhoc_state_get_writer_stats) and reported by the next
 *     edhoc_state_flush;
 *   - edhoc_state_store_ssn waits for its batch and returns its answer:
 *     a mark is durable on return, as without group commit;
 *   - edhoc_state_store_ssn_async queues a mark and gives its ticket;
 *     edhoc_state_wait(ticket) says whether its batch committed;
 *   - reads (get, for_each, count) and prune wait for everything queued
 *     before them, so a handle reads its own writes;
 *   - edhoc_state_begin/commit mark a group: commit waits for every write
 *     queued since begin and fails if any batch holding one failed;
 *     rollback is commit (queued writes are not taken back; marks only go
 *     up);
 *   - edhoc_state_close commits what is queued, then closes.
 * A batch that fails (a statement or its commit) is rolled back whole:
 * every item in it fails. The handle stays single-threaded for its
 * caller; fork with nothing queued (edhoc_state_flush first): a child
 * starts with an empty queue and a writer of its own. On a handle from
 * edhoc_state_connect, group commit sends the worker's puts, deletions
 * and use times without waiting for an answer (the writer process
 * batches them with everything else). Returns 0, EDHOC_STATE_ERR_ARG
 * (max_rows 0, already on, inside begin/commit), EDHOC_STATE_ERR_IO. */
int edhoc_state_group_commit(struct edhoc_state_db *db, unsigned max_rows, unsigned max_ms);

/* Whether edhoc_state_group_commit is on (a local handle or one from
 * edhoc_state_connect). */
bool edhoc_state_is_grouped(const struct edhoc_state_db *db);

/* Wait for everything queued; 0 when all of it since the previous flush
 * committed, else the error of a batch that failed. Without group
 * commit: 0 (every write was durable on return). */
int edhoc_state_flush(struct edhoc_state_db *db);

/* Queue the mark as edhoc_state_store_ssn would store it; *ticket names
 * its batch for edhoc_state_wait. Without group commit (and on a handle
 * from edhoc_state_connect) the mark is stored at once and *ticket is 0.
 * Returns 0 or what edhoc_state_store_ssn returns for bad arguments. */
int edhoc_state_store_ssn_async(struct edhoc_state_db *db, const uint8_t *id_context,
                                size_t id_context_len, const uint8_t *recipient_id,
                                size_t recipient_id_len, uint64_t mark, uint64_t *ticket);

/* 0: the batch of ticket committed (ticket 0: at once); a negative error:
 * it failed; EDHOC_STATE_PENDING: not yet (block false). A mark whose
 * context has no row (its put failed) protects nothing and needs nothing:
 * no restart can load that context, so its wait answers 0. */
int edhoc_state_wait(struct edhoc_state_db *db, uint64_t ticket, bool block);

/* Readable (an eventfd, read it to reset) after every batch the writer
 * finished, for a poll loop with answers waiting for batches; -1 without
 * group commit. */
int edhoc_state_event_fd(const struct edhoc_state_db *db);

struct edhoc_state_writer_stats {
    uint64_t commits;        /* batches committed: one transaction, one WAL fsync each */
    uint64_t rows;           /* items in them */
    uint64_t failed_commits; /* batches rolled back */
    uint64_t failed_rows;
    uint64_t largest_batch;
    uint64_t closed_by_size, closed_by_time, closed_by_wait; /* why batches closed */
    uint64_t waits;                                          /* callers that waited for a batch */
    uint64_t queued;                                         /* items waiting now */
};
/* Returns 0, or EDHOC_STATE_ERR_NOT_FOUND without group commit (*out
 * zeroed). */
int edhoc_state_get_writer_stats(struct edhoc_state_db *db, struct edhoc_state_writer_stats *out);

/* ---- One writer for several processes ----
 * A responder with several workers keeps one database, written by the
 * process that opened it; each worker reaches it through a connected
 * SOCK_SEQPACKET socket (socketpair). The writer applies every request
 * waiting from every worker in one transaction and answers each after the
 * commit (group commit), so a call that stores a mark returns once the
 * mark is durable, as with a local database, and N workers storing marks
 * at once cost one sync. Between edhoc_state_begin and edhoc_state_commit
 * a worker's writes do not wait; the commit waits for all of them;
 * edhoc_state_rollback ends such a batch like a commit (what was sent is
 * kept: marks only ever move up). */

/* The worker (of count) owning a context by its Recipient ID: the last
 * byte modulo count; an empty ID belongs to worker 0. The responder's
 * steering program (src/coap reuseport) sends each OSCORE request by its
 * 'kid' to this worker. */
unsigned edhoc_state_owner(const uint8_t *recipient_id, size_t len, unsigned count);

/* A handle whose calls go to the writer at the other end of fd (taken
 * over: edhoc_state_close closes it). Returns 0 or EDHOC_STATE_ERR_ARG. */
int edhoc_state_connect(int fd, struct edhoc_state_db **db);

/* As edhoc_state_for_each_peer, only the rows owner count/index owns
 * (edhoc_state_owner); count <= 1: all. */
int edhoc_state_for_each_owned_peer(struct edhoc_state_db *db, unsigned count, unsigned index,
                                    int (*fn)(void *ctx, const struct edhoc_state_peer *p),
                                    void *ctx);

/* ---- Other stores behind the same handle ----
 * A backend is a store that is not this SQLite file: the fleet's
 * PostgreSQL store (src/state/state_pg.h, linked into the program only, so
 * that libedhoc does not depend on libpq). edhoc_state_open_backend wraps
 * it in a handle; every call above then goes to its functions, with the
 * same arguments, keys, rules and EDHOC_STATE_ERR_* answers as the SQLite
 * store's, except:
 *   - store_ssn is durable on return (no group commit: a reservation is
 *     one round trip, made a block ahead of need by the caller's marks);
 *   - get_peer of a shared store takes the context for this process (the
 *     fleet's lease): the caller may serve it from then on, above the
 *     returned ssn_mark, and must verify freshness (RFC 8613 Appendix
 *     B.1.2: Echo) as after a restart;
 *   - store_ssn answers EDHOC_STATE_ERR_TAKEN_OVER when another process
 *     took the context: the caller drops its copy (and finds it again
 *     with get_peer on the next request that names it).
 * A NULL function is a call the store does not offer (EDHOC_STATE_ERR_ARG;
 * begin/commit/rollback: 0, each call being atomic on its own). */
#define EDHOC_STATE_ERR_TAKEN_OVER (-5008) /* another process serves the context now */

typedef void (*edhoc_state_taken_fn)(void *user, const uint8_t *id_context, size_t id_context_len,
                                     const uint8_t *recipient_id, size_t recipient_id_len);

struct edhoc_state_backend {
    const char *name; /* for messages: "postgresql" */
    /* Contexts may be in the store that this process did not load or
     * create: look one up (get_peer) on a request that names no context
     * in memory. */
    bool shared;
    int (*put_peer)(void *impl, const struct edhoc_state_peer *p);
    int (*get_peer)(void *impl, const uint8_t *id_context, size_t id_context_len,
                    const uint8_t *recipient_id, size_t recipient_id_len,
                    struct edhoc_state_peer *out);
    int (*store_ssn)(void *impl, const uint8_t *id_context, size_t id_context_len,
                     const uint8_t *recipient_id, size_t recipient_id_len, uint64_t mark);
    int (*delete_peer)(void *impl, const uint8_t *id_context, size_t id_context_len,
                       const uint8_t *recipient_id, size_t recipient_id_len);
    int (*touch_peer)(void *impl, const uint8_t *id_context, size_t id_context_len,
                      const uint8_t *recipient_id, size_t recipient_id_len, int64_t last_used);
    /* The contexts to serve at start (a shared store: those this process
     * holds, none after a fresh start). */
    int (*for_each_peer)(void *impl, int (*fn)(void *ctx, const struct edhoc_state_peer *p),
                         void *ctx);
    int (*prune)(void *impl, int64_t used_before, uint64_t keep, uint64_t *expired,
                 uint64_t *evicted);
    int (*flush)(void *impl);
    void (*close)(void *impl); /* by edhoc_state_close */
    /* A shared store: fn for each context another process took over
     * since the last call (edhoc_state_takeovers). */
    int (*takeovers)(void *impl, edhoc_state_taken_fn fn, void *user);
};

/* A handle on impl through ops (both outlive the handle; close is called
 * by edhoc_state_close). Returns 0 or EDHOC_STATE_ERR_ARG / _IO. */
int edhoc_state_open_backend(const struct edhoc_state_backend *ops, void *impl,
                             struct edhoc_state_db **db);
/* True when a request for a context not in memory should look it up in
 * the store (a shared backend). */
bool edhoc_state_is_shared(const struct edhoc_state_db *db);
/* A shared store: fn (id_context NULL when the context has none) for
 * every context this process served that another took over since the
 * last call, as far as the store has told (no round trip, except one
 * after a lost connection, to ask which leases are still ours). The
 * caller drops its copy before it accepts a request under it: the new
 * owner may have accepted that request already (RFC 8613 Section 7.4: a
 * request is processed once). Returns how many were reported, 0 for a
 * store that is not shared, or EDHOC_STATE_ERR_IO. */
int edhoc_state_takeovers(struct edhoc_state_db *db, edhoc_state_taken_fn fn, void *user);
/* The backend's name, or "sqlite". */
const char *edhoc_state_backend_name(const struct edhoc_state_db *db);

struct edhoc_state_server;
struct edhoc_state_server_stats {
    uint64_t requests;      /* requests served */
    uint64_t groups;        /* transactions opened */
    uint64_t commits;       /* commits (one sync each) */
    uint64_t largest_group; /* most requests in one commit */
};
/* The writer's end, on an opened (local) database. */
struct edhoc_state_server *edhoc_state_server_new(struct edhoc_state_db *db);
void edhoc_state_server_free(struct edhoc_state_server *s);
/* Serve a worker's end of a socketpair (taken over). */
int edhoc_state_server_add(struct edhoc_state_server *s, int fd);
/* Wait up to timeout_ms for requests, then serve every request waiting as
 * one group. Returns the number served (0: none or a signal), or
 * EDHOC_STATE_ERR_IO. A worker whose socket closes is dropped. */
int edhoc_state_server_run(struct edhoc_state_server *s, int timeout_ms);
size_t edhoc_state_server_clients(const struct edhoc_state_server *s);
void edhoc_state_server_get_stats(const struct edhoc_state_server *s,
                                  struct edhoc_state_server_stats *out);

#ifdef __cplusplus
}
#endif
#endif
