/*
 * The fleet's PostgreSQL store behind an edhoc_state_db handle
 * (edhoc_state_open_backend): what the responder engine calls, mapped on
 * leases and reservations (docs/DESIGN.md, "Fleet store").
 *
 * The handle remembers the lease of every context this process serves
 * (created here by put, or read by get for a request that named a
 * context not in memory and taken at its first reservation, which only a
 * request that verified causes). A mark the engine stores becomes a reservation
 * under that lease: the row's ssn_mark moves up to the mark, and only if
 * the lease is still ours, so that two responders never send under the
 * same (key, nonce) whatever the timing. A reservation that finds the
 * lease taken answers EDHOC_STATE_ERR_TAKEN_OVER: the engine drops its
 * copy.
 *
 * New contexts are put by a writer thread with a connection of its own,
 * in one statement for all that queued while the previous one was in
 * flight (group commit, as the SQLite writer's: one round trip for many
 * handshakes, and none in the datagram thread). Nothing waits for a put
 * before message_2/4 or the first response (docs/DESIGN.md: a context
 * lost before its row commits costs its device a new handshake, never a
 * nonce), except the context's own next reservation, which needs its row.
 */
#include "state_pg.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lease_entry {
    struct lease_entry *next;
    bool has_idc;
    uint8_t idc_len, rid_len;
    uint8_t idc[EDHOC_STATE_MAX_ID_CONTEXT];
    uint8_t rid[EDHOC_STATE_MAX_ID];
    struct edhoc_state_pg_lease lease;
    unsigned pending; /* puts queued or in flight; the lease is known at 0 */
    bool failed;      /* the last put did not commit: no row, no lease */
    bool refused;     /* the put found another context under the key: not ours */
    /* Read for a request (get), not taken yet: the takeover waits for the
     * first reservation, which only a request that verified causes, and
     * succeeds only while the row's mark is still seen_mark. */
    bool fetched;
    uint64_t seen_mark;
    bool unconfirmed; /* be_takeovers after a lost connection: not seen ours yet */
    /* A failed put's row (wiped when freed): put again at the context's
     * next reservation, once the store answers (be_store_ssn). */
    struct edhoc_state_peer *unstored;
};

#define PUT_BATCH     128   /* rows per statement (edhoc_state_pg_put_peers) */
#define PUT_QUEUE_MAX 65536 /* the datagram thread waits beyond this */

struct pg_backend {
    struct edhoc_state_pg *pg;   /* the datagram thread's: get, reservations, releases */
    struct edhoc_state_pg *pg_w; /* the writer thread's: puts */
    int64_t lease_ms;
    /* Under lock: the leases, the put queue, the writer's state. */
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    struct lease_entry **buckets;
    size_t n_buckets, n;
    struct edhoc_state_peer *queue;
    size_t queued, queue_cap, in_flight;
    bool stop, down, writer_running;
    pthread_t writer;
    /* To open both connections again in a child of fork() (--daemon
     * detaches after the store is open): the connection string (wiped on
     * close) and the fork count it was opened under. */
    char *conninfo;
    unsigned fork_gen;
    /* The datagram connection's listen_gen when its leases were last
     * known to be ours (be_takeovers). */
    uint64_t listen_gen;
};

/* Bumped in every child of fork(): the writer thread stayed in the
 * parent, and a connection must not be shared by two processes. */
static volatile unsigned pg_fork_generation;
static pthread_once_t pg_atfork_once = PTHREAD_ONCE_INIT;

static void pg_atfork_child(void)
{
    pg_fork_generation++;
}

static void pg_atfork_register(void)
{
    pthread_atfork(NULL, NULL, pg_atfork_child);
}

static void *writer_main(void *arg);
static int writer_start(struct pg_backend *b);

/* In a child of fork(): new locks, new connections under this process's
 * name, a writer of its own. What the parent had queued stays the
 * parent's. Returns 0 or the reason the store cannot be reached. */
static int after_fork(struct pg_backend *b)
{
    b->fork_gen = pg_fork_generation;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->work, NULL);
    pthread_cond_init(&b->done, NULL);
    if (b->queue)
        explicit_bzero(b->queue, b->queue_cap * sizeof *b->queue);
    b->queued = b->in_flight = 0;
    b->writer_running = b->stop = false;
    /* The inherited connections are the parent's sockets: closed here
     * without a word on them (PQfinish would tell the server that the
     * parent's session ends). */
    edhoc_state_pg_forget(b->pg);
    edhoc_state_pg_forget(b->pg_w);
    b->pg = b->pg_w = NULL;
    char why[300];
    int rc = edhoc_state_pg_open(b->conninfo, NULL, b->lease_ms, &b->pg, why, sizeof why);
    if (rc == 0)
        rc = edhoc_state_pg_open(b->conninfo, edhoc_state_pg_owner(b->pg), b->lease_ms, &b->pg_w,
                                 why, sizeof why);
    if (rc == 0)
        rc = edhoc_state_pg_listen(b->pg);
    if (rc == 0)
        rc = writer_start(b);
    b->listen_gen = edhoc_state_pg_listen_gen(b->pg);
    b->down = rc != 0;
    return rc;
}

#define FORK_CHECK(b)                                                                              \
    do {                                                                                           \
        if ((b)->fork_gen != pg_fork_generation) {                                                 \
            int fork_rc_ = after_fork(b);                                                          \
            if (fork_rc_)                                                                          \
                return fork_rc_;                                                                   \
        }                                                                                          \
    } while (0)

static uint64_t key_hash(const uint8_t *idc, size_t idc_len, const uint8_t *rid, size_t rid_len)
{
    /* FNV-1a over a tag, the ID Context and the Recipient ID: the keys are
     * public identifiers, and a bucket's chain is short in any case. */
    uint64_t h = 0xcbf29ce484222325u;
    h = (h ^ (idc ? 1u : 0u)) * 0x100000001b3u;
    for (size_t i = 0; i < idc_len; i++)
        h = (h ^ idc[i]) * 0x100000001b3u;
    h = (h ^ 0xffu) * 0x100000001b3u;
    for (size_t i = 0; i < rid_len; i++)
        h = (h ^ rid[i]) * 0x100000001b3u;
    return h;
}

static struct lease_entry **lease_slot(struct pg_backend *b, const uint8_t *idc, size_t idc_len,
                                       const uint8_t *rid, size_t rid_len)
{
    struct lease_entry **e = &b->buckets[key_hash(idc, idc_len, rid, rid_len) % b->n_buckets];
    for (; *e; e = &(*e)->next) {
        const struct lease_entry *x = *e;
        if (x->has_idc == (idc != NULL) && x->idc_len == idc_len && x->rid_len == rid_len &&
            !memcmp(x->idc, idc ? idc : (const uint8_t *)"", idc_len) &&
            !memcmp(x->rid, rid, rid_len))
            break;
    }
    return e;
}

static int lease_grow(struct pg_backend *b)
{
    size_t cap = b->n_buckets * 2;
    struct lease_entry **nb = calloc(cap, sizeof *nb);
    if (!nb)
        return EDHOC_STATE_ERR_IO;
    for (size_t i = 0; i < b->n_buckets; i++) {
        for (struct lease_entry *e = b->buckets[i], *next; e; e = next) {
            next = e->next;
            size_t j = key_hash(e->has_idc ? e->idc : NULL, e->idc_len, e->rid, e->rid_len) % cap;
            e->next = nb[j];
            nb[j] = e;
        }
    }
    free(b->buckets);
    b->buckets = nb;
    b->n_buckets = cap;
    return 0;
}

static int lease_keep(struct pg_backend *b, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                      size_t rid_len, const struct edhoc_state_pg_lease *l)
{
    if (idc_len > EDHOC_STATE_MAX_ID_CONTEXT || rid_len > EDHOC_STATE_MAX_ID)
        return EDHOC_STATE_ERR_ARG;
    struct lease_entry **slot = lease_slot(b, idc, idc_len, rid, rid_len);
    if (*slot) {
        (*slot)->lease = *l;
        return 0;
    }
    if (b->n >= b->n_buckets && lease_grow(b) == 0)
        slot = lease_slot(b, idc, idc_len, rid, rid_len);
    struct lease_entry *e = calloc(1, sizeof *e);
    if (!e)
        return EDHOC_STATE_ERR_IO;
    e->has_idc = idc != NULL;
    e->idc_len = (uint8_t)idc_len;
    if (idc_len)
        memcpy(e->idc, idc, idc_len);
    e->rid_len = (uint8_t)rid_len;
    memcpy(e->rid, rid, rid_len);
    e->lease = *l;
    *slot = e;
    b->n++;
    return 0;
}

static void unstored_free(struct lease_entry *e)
{
    if (e->unstored) {
        explicit_bzero(e->unstored, sizeof *e->unstored);
        free(e->unstored);
        e->unstored = NULL;
    }
}

static void lease_forget(struct pg_backend *b, const uint8_t *idc, size_t idc_len,
                         const uint8_t *rid, size_t rid_len)
{
    struct lease_entry **slot = lease_slot(b, idc, idc_len, rid, rid_len);
    if (*slot) {
        struct lease_entry *e = *slot;
        *slot = e->next;
        unstored_free(e);
        free(e);
        b->n--;
    }
}

static void lease_put_done(struct pg_backend *b, const struct edhoc_state_peer *p, int rc,
                           const struct edhoc_state_pg_lease *l)
{
    const uint8_t *idc = p->has_id_context ? p->id_context : NULL;
    struct lease_entry **slot =
        lease_slot(b, idc, p->id_context_len, p->recipient_id, p->recipient_id_len);
    struct lease_entry *e = *slot;
    if (!e)
        return; /* deleted meanwhile */
    if (e->pending)
        e->pending--;
    e->failed = rc != 0;
    e->refused = rc == 0 && l->token == 0;
    unstored_free(e);
    if (!rc) {
        e->lease = *l;
    } else {
        /* Kept to be put again (a copy of its secrets for as long as the
         * engine serves the context, which holds its keys anyway); without
         * memory for it, the next reservation drops the context. */
        e->unstored = malloc(sizeof *e->unstored);
        if (e->unstored)
            *e->unstored = *p;
    }
}

static void *writer_main(void *arg)
{
    struct pg_backend *b = arg;
    struct edhoc_state_peer *batch = calloc(PUT_BATCH, sizeof *batch);
    struct edhoc_state_pg_lease leases[PUT_BATCH];
    pthread_mutex_lock(&b->lock);
    while (batch) {
        while (b->queued == 0 && !b->stop)
            pthread_cond_wait(&b->work, &b->lock);
        if (b->queued == 0)
            break;
        size_t take = b->queued < PUT_BATCH ? b->queued : PUT_BATCH;
        memcpy(batch, b->queue, take * sizeof *batch);
        memmove(b->queue, b->queue + take, (b->queued - take) * sizeof *b->queue);
        explicit_bzero(b->queue + b->queued - take, take * sizeof *b->queue);
        b->queued -= take;
        b->in_flight = take;
        pthread_mutex_unlock(&b->lock);
        int rc = edhoc_state_pg_put_peers(b->pg_w, batch, take, leases);
        pthread_mutex_lock(&b->lock);
        for (size_t i = 0; i < take; i++)
            lease_put_done(b, &batch[i], rc, &leases[i]);
        explicit_bzero(batch, take * sizeof *batch);
        b->down = rc == EDHOC_STATE_ERR_IO;
        b->in_flight = 0;
        pthread_cond_broadcast(&b->done);
    }
    /* Out of memory at start: what is queued fails, and nobody waits. */
    for (size_t i = 0; i < b->queued; i++)
        lease_put_done(b, &b->queue[i], EDHOC_STATE_ERR_IO, NULL);
    if (b->queue)
        explicit_bzero(b->queue, b->queued * sizeof *b->queue);
    b->queued = 0;
    pthread_cond_broadcast(&b->done);
    pthread_mutex_unlock(&b->lock);
    free(batch);
    return NULL;
}

static int writer_start(struct pg_backend *b)
{
    sigset_t all, old;
    sigfillset(&all);
    /* Signals stay with the threads that handle them. */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    b->writer_running = pthread_create(&b->writer, NULL, writer_main, b) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return b->writer_running ? 0 : EDHOC_STATE_ERR_IO;
}

/* Under lock: until no put of e is queued or in flight. */
static void wait_put(struct pg_backend *b, struct lease_entry **slot, const uint8_t *idc,
                     size_t idc_len, const uint8_t *rid, size_t rid_len)
{
    while (*slot && (*slot)->pending) {
        pthread_cond_wait(&b->done, &b->lock);
        slot = lease_slot(b, idc, idc_len, rid, rid_len);
    }
}

static int be_put(void *impl, const struct edhoc_state_peer *p)
{
    struct pg_backend *b = impl;
    FORK_CHECK(b);
    const uint8_t *idc = p->has_id_context ? p->id_context : NULL;
    struct edhoc_state_pg_lease none = {0};
    pthread_mutex_lock(&b->lock);
    if (b->down || !b->writer_running) {
        /* The store did not answer the writer's last statement: this put
         * is the probe, at once and in this thread, so that new
         * handshakes get 5.03 until the store answers (and the first one
         * after that finds out). */
        pthread_mutex_unlock(&b->lock);
        struct edhoc_state_pg_lease l;
        int rc = edhoc_state_pg_put_peers(b->pg, p, 1, &l);
        pthread_mutex_lock(&b->lock);
        if (rc == 0) {
            b->down = false;
            rc = lease_keep(b, idc, p->id_context_len, p->recipient_id, p->recipient_id_len, &l);
        }
        if (rc == 0) {
            struct lease_entry *e =
                *lease_slot(b, idc, p->id_context_len, p->recipient_id, p->recipient_id_len);
            e->refused = l.token == 0;
            e->fetched = false;
        }
        pthread_mutex_unlock(&b->lock);
        return rc;
    }
    while (b->queued >= PUT_QUEUE_MAX)
        pthread_cond_wait(&b->done, &b->lock);
    int rc = lease_keep(b, idc, p->id_context_len, p->recipient_id, p->recipient_id_len, &none);
    if (rc == 0 && b->queued == b->queue_cap) {
        size_t cap = b->queue_cap ? 2 * b->queue_cap : 64;
        struct edhoc_state_peer *q = malloc(cap * sizeof *q);
        if (!q) {
            rc = EDHOC_STATE_ERR_IO;
        } else {
            if (b->queued)
                memcpy(q, b->queue, b->queued * sizeof *q);
            if (b->queue)
                explicit_bzero(b->queue, b->queue_cap * sizeof *b->queue);
            free(b->queue);
            b->queue = q;
            b->queue_cap = cap;
        }
    }
    if (rc == 0) {
        struct lease_entry *e =
            *lease_slot(b, idc, p->id_context_len, p->recipient_id, p->recipient_id_len);
        e->pending++;
        e->failed = e->refused = e->fetched = false;
        unstored_free(e);
        /* Its first block, [0, mark): fresh keys, nobody else's numbers;
         * used before the row commits, as the SQLite writer's are. */
        e->lease.end = p->ssn_mark;
        b->queue[b->queued++] = *p;
        pthread_cond_signal(&b->work);
    }
    pthread_mutex_unlock(&b->lock);
    return rc;
}

/* The datagram thread's connection found the store out of reach: so
 * does the writer (b->down), so that the next put is made at once, as the
 * probe (be_put), and a put merely queued is never taken for an answer
 * of the store. Returns rc. */
static int note_outage(struct pg_backend *b, int rc)
{
    if (rc == EDHOC_STATE_ERR_IO) {
        pthread_mutex_lock(&b->lock);
        b->down = true;
        pthread_mutex_unlock(&b->lock);
    }
    return rc;
}

static int get_inner(void *impl, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                     size_t rid_len, struct edhoc_state_peer *out)
{
    struct pg_backend *b = impl;
    FORK_CHECK(b);
    /* A read, not a takeover: whoever sends a datagram naming the kid
     * reaches this point, and only a request that verifies under the
     * context may take it from the responder serving it (the first
     * reservation, be_store_ssn). */
    int rc = edhoc_state_pg_get_peer(b->pg, idc, idc_len, rid, rid_len, out);
    if (rc == 0) {
        pthread_mutex_lock(&b->lock);
        struct lease_entry **slot = lease_slot(b, idc, idc_len, rid, rid_len);
        wait_put(b, slot, idc, idc_len, rid, rid_len);
        struct edhoc_state_pg_lease none = {0};
        rc = lease_keep(b, idc, idc_len, rid, rid_len, &none);
        if (rc == 0) {
            struct lease_entry *e = *lease_slot(b, idc, idc_len, rid, rid_len);
            e->fetched = true;
            e->seen_mark = out->ssn_mark;
            e->failed = e->refused = false;
            unstored_free(e);
        }
        pthread_mutex_unlock(&b->lock);
    }
    return rc;
}

static int be_get(void *impl, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                  size_t rid_len, struct edhoc_state_peer *out)
{
    return note_outage(impl, get_inner(impl, idc, idc_len, rid, rid_len, out));
}

static int store_ssn_inner(void *impl, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                           size_t rid_len, uint64_t mark)
{
    struct pg_backend *b = impl;
    FORK_CHECK(b);
    pthread_mutex_lock(&b->lock);
    struct lease_entry **slot = lease_slot(b, idc, idc_len, rid, rid_len);
    if (*slot && !(*slot)->fetched && !(*slot)->refused && mark <= (*slot)->lease.end) {
        /* Numbers reserved already (a new context's first block, put with
         * it): no round trip. Also when that put failed: the keys are in
         * no row, so nobody else can use any number of them, and the
         * context goes on within its first block as the others in memory
         * do while the store is out of reach. */
        pthread_mutex_unlock(&b->lock);
        return 0;
    }
    /* A reservation needs the row: a context put a moment ago waits for
     * its put (the only wait a new context ever causes). */
    wait_put(b, slot, idc, idc_len, rid, rid_len);
    slot = lease_slot(b, idc, idc_len, rid, rid_len);
    if (*slot && (*slot)->failed) {
        if (!(*slot)->unstored) {
            lease_forget(b, idc, idc_len, rid, rid_len);
            pthread_mutex_unlock(&b->lock);
            return EDHOC_STATE_ERR_TAKEN_OVER; /* no row, no copy to put: dropped */
        }
        /* Its put failed while the store was out of reach: nothing above
         * its first block may go out until a row with a mark above it is
         * stored, and the store answering again is no reason to drop a
         * context the device goes on using. Put it again with this mark
         * (be_put's reasons hold: fresh keys, nobody else's numbers),
         * unless the failed put committed after all and another responder
         * has reserved numbers of it since (the row's mark moved). */
        struct edhoc_state_peer row = *(*slot)->unstored;
        uint64_t seen = row.ssn_mark;
        if (mark > row.ssn_mark)
            row.ssn_mark = mark;
        pthread_mutex_unlock(&b->lock);
        struct edhoc_state_pg_lease l;
        int rc = edhoc_state_pg_put_again(b->pg, &row, seen, &l);
        explicit_bzero(&row, sizeof row);
        pthread_mutex_lock(&b->lock);
        if (rc == 0 && l.token != 0) {
            rc = lease_keep(b, idc, idc_len, rid, rid_len, &l);
            struct lease_entry *e = *lease_slot(b, idc, idc_len, rid, rid_len);
            if (rc == 0 && e) {
                e->failed = e->refused = e->fetched = false;
                unstored_free(e);
            }
        } else if (rc == 0 || rc != EDHOC_STATE_ERR_IO) {
            /* Another responder's numbers, or another device's row. */
            lease_forget(b, idc, idc_len, rid, rid_len);
            rc = EDHOC_STATE_ERR_TAKEN_OVER;
        }
        /* _IO: still out of reach; the copy stays for the next try. */
        pthread_mutex_unlock(&b->lock);
        return rc;
    }
    if (*slot && (*slot)->refused) {
        /* The row under this key is another device's context: ours has
         * no row, so none of its numbers may go out; the engine drops it
         * and the device, answered from the other context, handshakes
         * again (with a new C_R). */
        lease_forget(b, idc, idc_len, rid, rid_len);
        pthread_mutex_unlock(&b->lock);
        return EDHOC_STATE_ERR_TAKEN_OVER;
    }
    bool known = *slot != NULL, fetched = known && (*slot)->fetched;
    uint64_t seen = known ? (*slot)->seen_mark : 0;
    struct edhoc_state_pg_lease l = known ? (*slot)->lease : (struct edhoc_state_pg_lease){0};
    pthread_mutex_unlock(&b->lock);
    int rc;
    if (fetched) {
        /* The takeover: the numbers from the mark we read up to this one
         * are ours, if nobody reserved since we read it. If somebody did,
         * our copy's counter starts below their block: drop it, and the
         * device's retry reads the row again. */
        rc = edhoc_state_pg_take_over(b->pg, idc, idc_len, rid, rid_len, seen,
                                      mark > seen ? mark - seen : 0, b->lease_ms, &l);
        pthread_mutex_lock(&b->lock);
        if (rc == 0)
            rc = lease_keep(b, idc, idc_len, rid, rid_len, &l);
        struct lease_entry **e = lease_slot(b, idc, idc_len, rid, rid_len);
        if (rc == 0 && *e)
            (*e)->fetched = false;
        else if (rc == EDHOC_STATE_ERR_LEASE_LOST || rc == EDHOC_STATE_ERR_NOT_FOUND)
            lease_forget(b, idc, idc_len, rid, rid_len);
        pthread_mutex_unlock(&b->lock);
        return rc == EDHOC_STATE_ERR_LEASE_LOST || rc == EDHOC_STATE_ERR_NOT_FOUND
                   ? EDHOC_STATE_ERR_TAKEN_OVER
                   : rc;
    }
    if (!known) {
        /* A context we serve without a lease we know of (one whose lease
         * we forgot): take it, without taking it from another responder
         * that holds it. */
        rc = edhoc_state_pg_acquire(b->pg, idc, idc_len, rid, rid_len, 0, b->lease_ms, false, &l,
                                    NULL);
        if (rc == EDHOC_STATE_ERR_LEASED)
            return EDHOC_STATE_ERR_TAKEN_OVER;
        if (rc)
            return rc;
    }
    uint64_t count = mark > l.end ? mark - l.end : 0;
    rc = edhoc_state_pg_reserve(b->pg, idc, idc_len, rid, rid_len, count, b->lease_ms, &l);
    pthread_mutex_lock(&b->lock);
    if (rc == EDHOC_STATE_ERR_LEASE_LOST) {
        lease_forget(b, idc, idc_len, rid, rid_len);
        rc = EDHOC_STATE_ERR_TAKEN_OVER;
    } else if (rc == 0) {
        rc = lease_keep(b, idc, idc_len, rid, rid_len, &l);
    }
    pthread_mutex_unlock(&b->lock);
    return rc;
}

static int be_store_ssn(void *impl, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                        size_t rid_len, uint64_t mark)
{
    return note_outage(impl, store_ssn_inner(impl, idc, idc_len, rid, rid_len, mark));
}

static int be_delete(void *impl, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                     size_t rid_len)
{
    struct pg_backend *b = impl;
    FORK_CHECK(b);
    pthread_mutex_lock(&b->lock);
    struct lease_entry **slot = lease_slot(b, idc, idc_len, rid, rid_len);
    wait_put(b, slot, idc, idc_len, rid, rid_len);
    slot = lease_slot(b, idc, idc_len, rid, rid_len);
    bool ours = *slot && !(*slot)->failed && !(*slot)->refused && !(*slot)->fetched;
    struct edhoc_state_pg_lease l = ours ? (*slot)->lease : (struct edhoc_state_pg_lease){0};
    lease_forget(b, idc, idc_len, rid, rid_len);
    pthread_mutex_unlock(&b->lock);
    if (!ours)
        return 0;
    /* Only our own: a context another responder took over is its to keep
     * (an eviction here is about our memory, not the fleet's). */
    int rc = edhoc_state_pg_release(b->pg, idc, idc_len, rid, rid_len, &l);
    return rc == EDHOC_STATE_ERR_LEASE_LOST ? 0 : rc;
}

static int be_touch(void *impl, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                    size_t rid_len, int64_t last_used)
{
    (void)impl, (void)idc, (void)idc_len, (void)rid, (void)rid_len, (void)last_used;
    /* A use time is a statistic: never a round trip on the request path
     * (the row's lease expiry says who used it last). */
    return 0;
}

static int be_for_each(void *impl, int (*fn)(void *ctx, const struct edhoc_state_peer *p),
                       void *ctx)
{
    (void)impl, (void)fn, (void)ctx;
    /* Nothing to load at start: a context is taken from the store when a
     * request names it (be_get), by whichever responder it reaches. */
    return 0;
}

static int be_prune(void *impl, int64_t used_before, uint64_t keep, uint64_t *expired,
                    uint64_t *evicted)
{
    struct pg_backend *b = impl;
    FORK_CHECK(b);
    (void)keep; /* one responder's memory bound is not the fleet's */
    if (evicted)
        *evicted = 0;
    return edhoc_state_pg_prune(b->pg, used_before, UINT64_MAX, expired, NULL);
}

static int be_flush(void *impl)
{
    struct pg_backend *b = impl;
    FORK_CHECK(b);
    pthread_mutex_lock(&b->lock);
    while (b->queued || b->in_flight)
        pthread_cond_wait(&b->done, &b->lock);
    /* A failure is a context whose put did not commit and was not put
     * since; b->down alone is no failed write (the datagram connection
     * may have set it with nothing queued after). */
    int rc = 0;
    for (size_t i = 0; i < b->n_buckets && !rc; i++)
        for (const struct lease_entry *e = b->buckets[i]; e && !rc; e = e->next)
            if (e->failed)
                rc = EDHOC_STATE_ERR_IO;
    pthread_mutex_unlock(&b->lock);
    return rc;
}

static void be_close(void *impl)
{
    struct pg_backend *b = impl;
    if (b->fork_gen != pg_fork_generation) {
        /* Never used in this child: the thread and connections are the
         * parent's. */
        edhoc_state_pg_forget(b->pg);
        edhoc_state_pg_forget(b->pg_w);
        b->pg = b->pg_w = NULL;
        b->writer_running = false;
    }
    if (b->writer_running) {
        /* What is queued is put first (a clean stop loses nothing). */
        pthread_mutex_lock(&b->lock);
        b->stop = true;
        pthread_cond_signal(&b->work);
        pthread_mutex_unlock(&b->lock);
        pthread_join(b->writer, NULL);
    }
    if (b->queue)
        explicit_bzero(b->queue, b->queue_cap * sizeof *b->queue);
    free(b->queue);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->work);
    pthread_cond_destroy(&b->done);
    if (b->pg_w)
        edhoc_state_pg_close(b->pg_w);
    for (size_t i = 0; b->buckets && i < b->n_buckets; i++) {
        for (struct lease_entry *e = b->buckets[i], *next; e; e = next) {
            next = e->next;
            unstored_free(e);
            free(e);
        }
    }
    free(b->buckets);
    if (b->pg)
        edhoc_state_pg_close(b->pg);
    if (b->conninfo) {
        explicit_bzero(b->conninfo, strlen(b->conninfo));
        free(b->conninfo);
    }
    free(b);
}

struct taken_report {
    struct pg_backend *b;
    edhoc_state_taken_fn fn;
    void *user;
};

static void taken_one(struct taken_report *r, const uint8_t *idc, size_t idc_len,
                      const uint8_t *rid, size_t rid_len)
{
    pthread_mutex_lock(&r->b->lock);
    lease_forget(r->b, idc, idc_len, rid, rid_len);
    pthread_mutex_unlock(&r->b->lock);
    r->fn(r->user, idc, idc_len, rid, rid_len);
}

static void on_takeover(void *user, const struct edhoc_state_pg_takeover *t)
{
    taken_one(user, t->has_id_context ? t->id_context : NULL, t->id_context_len, t->recipient_id,
              t->recipient_id_len);
}

/* A lease the store still names as ours, with our token. */
static int still_ours(void *user, const struct edhoc_state_pg_takeover *k, int64_t token)
{
    struct pg_backend *b = user;
    pthread_mutex_lock(&b->lock);
    struct lease_entry *e = *lease_slot(b, k->has_id_context ? k->id_context : NULL,
                                        k->id_context_len, k->recipient_id, k->recipient_id_len);
    if (e && e->lease.token == token)
        e->unconfirmed = false;
    pthread_mutex_unlock(&b->lock);
    return 0;
}

static int takeovers_inner(void *impl, edhoc_state_taken_fn fn, void *user)
{
    struct pg_backend *b = impl;
    FORK_CHECK(b);
    struct taken_report r = {b, fn, user};
    int n = edhoc_state_pg_takeovers(b->pg, on_takeover, &r);
    if (n < 0)
        return n;
    if (edhoc_state_pg_listen_gen(b->pg) == b->listen_gen)
        return n;
    /* A new connection: takeovers committed while none listened were
     * not heard. Every lease we serve under is checked once (one round
     * trip; the new connection listens already, so none is missed
     * between). A context whose put is still in flight, or not taken
     * yet (read for a request), is left to its reservation. */
    pthread_mutex_lock(&b->lock);
    for (size_t i = 0; i < b->n_buckets; i++)
        for (struct lease_entry *e = b->buckets[i]; e; e = e->next)
            e->unconfirmed = !e->pending && !e->failed && !e->refused && !e->fetched;
    pthread_mutex_unlock(&b->lock);
    uint64_t gen = edhoc_state_pg_listen_gen(b->pg);
    int rc = edhoc_state_pg_owned(b->pg, still_ours, b);
    if (rc)
        return rc;
    if (edhoc_state_pg_listen_gen(b->pg) != gen)
        return n; /* lost again meanwhile: checked at the next call */
    for (;;) {
        struct lease_entry *lost = NULL;
        pthread_mutex_lock(&b->lock);
        for (size_t i = 0; i < b->n_buckets && !lost; i++)
            for (struct lease_entry *e = b->buckets[i]; e && !lost; e = e->next)
                if (e->unconfirmed)
                    lost = e;
        struct lease_entry copy;
        if (lost)
            copy = *lost;
        pthread_mutex_unlock(&b->lock);
        if (!lost)
            break;
        taken_one(&r, copy.has_idc ? copy.idc : NULL, copy.idc_len, copy.rid, copy.rid_len);
        n++;
    }
    b->listen_gen = gen;
    return n;
}

static int be_takeovers(void *impl, edhoc_state_taken_fn fn, void *user)
{
    return note_outage(impl, takeovers_inner(impl, fn, user));
}

static const struct edhoc_state_backend pg_backend_ops = {
    .name = "postgresql",
    .shared = true,
    .put_peer = be_put,
    .get_peer = be_get,
    .store_ssn = be_store_ssn,
    .delete_peer = be_delete,
    .touch_peer = be_touch,
    .for_each_peer = be_for_each,
    .prune = be_prune,
    .flush = be_flush,
    .close = be_close,
    .takeovers = be_takeovers,
};

void edhoc_state_pg_backend_stats(const struct edhoc_state_pg_backend *fleet,
                                  struct edhoc_state_pg_stats *out)
{
    const struct pg_backend *b = (const struct pg_backend *)fleet;
    struct edhoc_state_pg_stats a = {0}, w = {0};
    if (b) {
        edhoc_state_pg_get_stats(b->pg, &a);
        edhoc_state_pg_get_stats(b->pg_w, &w);
    }
    out->round_trips = a.round_trips + w.round_trips;
    out->reconnects = a.reconnects + w.reconnects;
    out->failed = a.failed + w.failed;
    out->rows_put = a.rows_put + w.rows_put;
    out->rows_refused = a.rows_refused + w.rows_refused;
    out->serving_round_trips = a.round_trips;
}

const char *edhoc_state_pg_backend_owner(const struct edhoc_state_pg_backend *fleet)
{
    const struct pg_backend *b = (const struct pg_backend *)fleet;
    return b ? edhoc_state_pg_owner(b->pg) : "";
}

int edhoc_state_pg_open_db(const char *conninfo, const char *owner, int64_t lease_ms,
                           struct edhoc_state_db **db, struct edhoc_state_pg_backend **fleet,
                           char *why, size_t why_cap)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    *db = NULL;
    if (fleet)
        *fleet = NULL;
    struct pg_backend *b = calloc(1, sizeof *b);
    if (!b)
        return EDHOC_STATE_ERR_IO;
    b->n_buckets = 64;
    b->buckets = calloc(b->n_buckets, sizeof *b->buckets);
    b->lease_ms = lease_ms;
    pthread_once(&pg_atfork_once, pg_atfork_register);
    b->fork_gen = pg_fork_generation;
    b->conninfo = conninfo ? strdup(conninfo) : NULL;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->work, NULL);
    pthread_cond_init(&b->done, NULL);
    int rc = b->buckets && b->conninfo
                 ? edhoc_state_pg_open(conninfo, owner, lease_ms, &b->pg, why, why_cap)
                 : EDHOC_STATE_ERR_IO;
    /* The writer's connection names the same owner: its puts lease the
     * rows to this process, whose reservations quote the tokens. */
    if (rc == 0)
        rc = edhoc_state_pg_open(conninfo, edhoc_state_pg_owner(b->pg), lease_ms, &b->pg_w, why,
                                 why_cap);
    /* The datagram thread's connection hears the fleet's takeovers. */
    if (rc == 0 && (rc = edhoc_state_pg_listen(b->pg)) != 0 && why && why_cap)
        snprintf(why, why_cap, "%s", edhoc_state_pg_last_error(b->pg));
    b->listen_gen = edhoc_state_pg_listen_gen(b->pg);
    if (rc == 0) {
        writer_start(b); /* without a writer, puts are made by the caller */
        rc = edhoc_state_open_backend(&pg_backend_ops, b, db);
    }
    if (rc) {
        be_close(b);
        return rc;
    }
    if (fleet)
        *fleet = (struct edhoc_state_pg_backend *)b;
    return 0;
}
