#include "state_internal.h"
#include "state_test_hooks.h"
#include <sys/resource.h>

/* ---- Group commit ----
 * One writer thread per handle takes what the callers queue (new
 * contexts, deletions, marks, use times) and commits it in batches: one
 * transaction and one WAL fsync per batch. A batch closes when it holds
 * max_rows items, when max_ms have passed since its first item came, or
 * at once when a caller waits for it (a mark needed now, a flush, a read).
 * Items keep their order; a batch that fails (a statement or its commit)
 * is rolled back whole and every item in it fails. The writer thread runs
 * at nice GC_WRITER_NICE; a caller that waits for a batch commits it
 * itself (gc_run_batch, one batch at a time, so in ticket order).
 *
 * What is durable when (docs/DESIGN.md, "Group commit"):
 *   - a sequence-number mark: edhoc_state_store_ssn returns once the batch
 *     holding it committed; edhoc_state_store_ssn_async queues it and
 *     edhoc_state_wait says when that batch committed. The responder
 *     queues the next mark when it enters a block, so it seldom waits;
 *   - a new context (put), a deletion, a use time: committed with the
 *     next batch, no caller waits. Losing the newest contexts in a crash
 *     costs their devices a new handshake; their keys were never on disk,
 *     so no restart can use them again.
 * The connection is shared by the writer and the callers' reads under
 * sql_lock; a read first waits for what was queued before it, so a handle
 * reads its own writes. */
#define GC_QUEUE_MAX   65536            /* callers wait beyond this (a disk that stopped) */
#define GC_FAILS       64               /* failed batches remembered for edhoc_state_wait */
#define GC_THREAD_NAME "edhoc-state-wr" /* ps -L, top -H: the writer thread */
#define GC_WRITER_NICE 19

struct gc_item {
    uint8_t op; /* enum gc_op */
    bool has_idc;
    uint8_t idc_len, rid_len;
    uint8_t idc[EDHOC_STATE_MAX_ID_CONTEXT];
    uint8_t rid[EDHOC_STATE_MAX_ID];
    uint64_t ticket;
    uint64_t mark;
    int64_t last_used;
    int *result;                  /* a waiting caller's slot for the item's own answer, or NULL */
    struct edhoc_state_peer peer; /* GC_PUT only */
};

struct gc_failure {
    uint64_t lo, hi; /* tickets of the batch */
    int err;
};

struct group_commit {
    pthread_mutex_t q_lock;
    pthread_cond_t q_cond;    /* to the writer: items, a waiter, stop */
    pthread_cond_t done_cond; /* to waiters: a batch finished */
    pthread_mutex_t sql_lock; /* the connection; recursive (for_each's fn may read) */
    pthread_t thread;
    bool running, stop;
    unsigned max_rows, max_ms;
    struct gc_item *q;
    size_t n, cap;
    uint64_t next_ticket; /* the last one given */
    uint64_t done_ticket; /* every ticket up to this one is committed or failed */
    uint64_t flushed;     /* edhoc_state_flush answered up to here */
    uint64_t begin_ticket;
    bool in_begin;
    unsigned waiters;
    bool urgent; /* the writer process has an answer waiting for the open batch */
    /* A batch being applied (by the writer thread or by a caller that
     * waits for it): one at a time, so batches commit in ticket order.
     * batch and rcs are its buffers (max_rows each), used by whoever
     * holds applying. */
    bool applying;
    bool held; /* state_gc_hold_writer */
    struct gc_item *batch;
    int *rcs;
    unsigned read_depth;
    struct gc_failure fails[GC_FAILS];
    unsigned n_fails;           /* ever recorded; fails[n % GC_FAILS] is the next slot */
    uint64_t forgotten_fail_hi; /* newest failed ticket pushed out of fails[] */
    int efd;
    struct edhoc_state_writer_stats st;
};

static int gc_apply_batch(struct edhoc_state_db *db, struct gc_item *b, size_t n, int *rcs)
{
    int rc = sqlite3_step(db->st_begin);
    sqlite3_reset(db->st_begin);
    if (rc != SQLITE_DONE)
        return state_map_sqlite_error(rc);
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        struct gc_item *it = &b[i];
        const uint8_t *idc = it->has_idc ? it->idc : NULL;
        switch (it->op) {
        case GC_PUT: rcs[i] = state_apply_put(db, &it->peer); break;
        case GC_SSN:
            rcs[i] = state_apply_store_ssn(db, idc, it->idc_len, it->rid, it->rid_len, it->mark);
            break;
        case GC_DELETE:
            rcs[i] = state_apply_delete(db, idc, it->idc_len, it->rid, it->rid_len);
            break;
        case GC_TOUCH:
            rcs[i] = state_apply_touch(db, idc, it->idc_len, it->rid, it->rid_len, it->last_used);
            break;
        default: rcs[i] = EDHOC_STATE_ERR_ARG;
        }
        /* NOT_FOUND is the item's answer (a touch of a row deleted since),
         * not a failure of the batch. */
        if (rcs[i] && rcs[i] != EDHOC_STATE_ERR_NOT_FOUND)
            err = rcs[i];
    }
    if (!err) {
        rc = sqlite3_step(db->st_commit);
        sqlite3_reset(db->st_commit);
        if (rc != SQLITE_DONE)
            err = state_map_sqlite_error(rc);
    }
    /* A failed statement or COMMIT may leave the transaction open (or
     * SQLite rolled it back already, for SQLITE_FULL): nothing of the
     * batch stays. */
    if (err && !sqlite3_get_autocommit(db->sql)) {
        sqlite3_step(db->st_rollback);
        sqlite3_reset(db->st_rollback);
    }
    return err;
}

static void gc_deadline(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Under q_lock, with items queued and no batch being applied: take up
 * to max_rows of them as one batch, commit it (q_lock released meanwhile)
 * and record the outcome. Either the writer thread or a caller waiting
 * for the batch runs it. */
static void gc_run_batch(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    struct gc_item *batch = g->batch;
    int *rcs = g->rcs;
    g->applying = true;
    g->urgent = false;
    size_t take = g->n < g->max_rows ? g->n : g->max_rows;
    memcpy(batch, g->q, take * sizeof *batch);
    memmove(g->q, g->q + take, (g->n - take) * sizeof *g->q);
    state_wipe(g->q + g->n - take, take * sizeof *g->q);
    g->n -= take;
    /* Room in the queue for callers held back by GC_QUEUE_MAX. */
    pthread_cond_broadcast(&g->done_cond);
    pthread_mutex_unlock(&g->q_lock);

    pthread_mutex_lock(&g->sql_lock);
    int err = gc_apply_batch(db, batch, take, rcs);
    pthread_mutex_unlock(&g->sql_lock);

    pthread_mutex_lock(&g->q_lock);
    uint64_t lo = batch[0].ticket, hi = batch[take - 1].ticket;
    for (size_t i = 0; i < take; i++) {
        if (batch[i].result)
            *batch[i].result = err ? err : rcs[i];
    }
    if (err) {
        struct gc_failure *slot = &g->fails[g->n_fails % GC_FAILS];
        if (g->n_fails >= GC_FAILS && slot->hi > g->forgotten_fail_hi)
            g->forgotten_fail_hi = slot->hi;
        *slot = (struct gc_failure){lo, hi, err};
        g->n_fails++;
        g->st.failed_commits++;
        g->st.failed_rows += take;
    } else {
        g->st.commits++;
        g->st.rows += take;
        if (take > g->st.largest_batch)
            g->st.largest_batch = take;
    }
    g->done_ticket = hi;
    g->applying = false;
    pthread_cond_broadcast(&g->done_cond);
    pthread_cond_signal(&g->q_cond); /* the writer, if it waited for this one */
    state_wipe(batch, take * sizeof *batch);
    uint64_t one = 1;
    if (write(g->efd, &one, sizeof one) < 0) {
        /* Full counter: whoever polls it has a wake-up pending anyway. */
    }
}

/* The writer thread runs at nice 19. Its batches are what nobody waits
 * for (new contexts, deletions, use times, marks queued ahead of their
 * need), and at nice 0 on a core shared with the datagram thread it was
 * owed as much of the core as that thread and took it for the length of
 * a batch (a few ms of SQLite work for a few hundred rows) while packets
 * waited: the default responder's p99 against --state-dir none
 * (docs/DESIGN.md, "Group commit"). At nice 19 the datagram thread runs
 * first whenever it has work, yet the writer keeps a share of the core
 * (about 1.5% against one busy thread of nice 0) however busy the host:
 * SCHED_IDLE, tried first, could starve it indefinitely, and a context a
 * device had already used was lost to a kill -9 a second later. A
 * thread that lags makes larger batches, which cost less per row. What a
 * caller waits for, it commits itself at its own priority
 * (gc_wait_locked): no waiter depends on the writer's share. Raising
 * nice needs no privilege; Linux keeps it per thread (setpriority(2),
 * which the thread's id names). */
static void gc_writer_priority(void)
{
    (void)pthread_setname_np(pthread_self(), GC_THREAD_NAME);
    (void)setpriority(PRIO_PROCESS, (id_t)gettid(), GC_WRITER_NICE);
}

static void *gc_main(void *arg)
{
    struct edhoc_state_db *db = arg;
    struct group_commit *g = db->gc;
    gc_writer_priority();
    pthread_mutex_lock(&g->q_lock);
    for (;;) {
        while ((g->n == 0 || g->applying || g->held) && !g->stop)
            pthread_cond_wait(&g->q_cond, &g->q_lock);
        if (g->n == 0 && !g->applying)
            break; /* stop, nothing left */
        if (g->applying) {
            /* Stopping while a caller commits a batch: wait for it. */
            pthread_cond_wait(&g->done_cond, &g->q_lock);
            continue;
        }
        /* The batch is open from its first item on. */
        struct timespec until;
        gc_deadline(&until, g->max_ms);
        bool timed_out = false;
        while (g->n < g->max_rows && !g->waiters && !g->urgent && !g->stop && !timed_out)
            timed_out = pthread_cond_timedwait(&g->q_cond, &g->q_lock, &until) == ETIMEDOUT;
        if (g->n == 0 || g->applying || (g->held && !g->stop))
            continue; /* a caller that waited took it */
        if (g->n >= g->max_rows)
            g->st.closed_by_size++;
        else if (timed_out)
            g->st.closed_by_time++;
        else
            g->st.closed_by_wait++;
        gc_run_batch(db);
    }
    pthread_mutex_unlock(&g->q_lock);
    return NULL;
}

/* Under q_lock: start the writer in this process if it is not running. */
static bool gc_ensure_thread(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (g->running)
        return true;
    sigset_t all, old;
    sigfillset(&all);
    /* Signals stay with the threads that handle them. */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    g->running = pthread_create(&g->thread, NULL, gc_main, db) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return g->running;
}

/* Queue *it (its ticket set here); returns the ticket, 0 when the writer
 * cannot run (then it was applied at once, under the lock). */
static uint64_t gc_enqueue(struct edhoc_state_db *db, struct gc_item *it)
{
    struct group_commit *g = db->gc;
    pthread_mutex_lock(&g->q_lock);
    while (g->n >= GC_QUEUE_MAX && g->running) {
        /* A writer that cannot keep up (nice 19 on a busy host):
         * the caller commits a batch itself rather than wait for it. */
        if (!g->applying) {
            g->st.closed_by_size++;
            gc_run_batch(db);
        } else {
            pthread_cond_wait(&g->done_cond, &g->q_lock);
        }
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        struct gc_item *q = malloc(cap * sizeof *q);
        if (q) {
            if (g->n)
                memcpy(q, g->q, g->n * sizeof *q);
            state_wipe(g->q, g->cap * sizeof *g->q);
            free(g->q);
            g->q = q;
            g->cap = cap;
        }
    }
    if (g->n == g->cap || !gc_ensure_thread(db)) {
        pthread_mutex_unlock(&g->q_lock);
        /* No memory or no thread: synchronous, as without group commit. */
        int rcs[1];
        pthread_mutex_lock(&g->sql_lock);
        int err = gc_apply_batch(db, it, 1, rcs);
        pthread_mutex_unlock(&g->sql_lock);
        if (it->result)
            *it->result = err ? err : rcs[0];
        state_wipe(it, sizeof *it);
        return 0;
    }
    it->ticket = ++g->next_ticket;
    g->q[g->n++] = *it;
    state_wipe(it, sizeof *it);
    if (g->n == 1 || g->n >= g->max_rows)
        pthread_cond_signal(&g->q_cond);
    g->st.queued = g->n;
    uint64_t t = g->next_ticket;
    pthread_mutex_unlock(&g->q_lock);
    return t;
}

int state_gc_put(struct edhoc_state_db *db, const struct edhoc_state_peer *p)
{
    struct gc_item it = {.op = GC_PUT, .peer = *p};
    gc_enqueue(db, &it);
    return 0;
}

uint64_t state_gc_key_item(struct edhoc_state_db *db, enum gc_op op, const uint8_t *idc,
                           size_t idc_len, const uint8_t *rid, size_t rid_len, uint64_t mark,
                           int64_t last_used, int *result)
{
    struct gc_item it = {.op = (uint8_t)op, .mark = mark, .last_used = last_used, .result = result};
    it.has_idc = idc != NULL;
    it.idc_len = (uint8_t)idc_len;
    if (idc_len)
        memcpy(it.idc, idc, idc_len);
    it.rid_len = (uint8_t)rid_len;
    if (rid_len)
        memcpy(it.rid, rid, rid_len);
    return gc_enqueue(db, &it);
}

/* Under q_lock: the failure of a batch holding a ticket in [lo, hi]. */
static int gc_failed(const struct group_commit *g, uint64_t lo, uint64_t hi)
{
    unsigned kept = g->n_fails < GC_FAILS ? g->n_fails : GC_FAILS;
    for (unsigned i = 0; i < kept; i++) {
        const struct gc_failure *f = &g->fails[i];
        if (f->lo <= hi && f->hi >= lo)
            return f->err;
    }
    /* Older failures than fails[] remembers: cannot tell, so not durable. */
    return g->forgotten_fail_hi >= lo ? EDHOC_STATE_ERR_IO : 0;
}

/* Under q_lock: wait until every ticket up to t is finished. */
static void gc_wait_locked(struct edhoc_state_db *db, uint64_t t)
{
    struct group_commit *g = db->gc;
    if (g->done_ticket >= t)
        return;
    g->waiters++;
    g->st.waits++;
    pthread_cond_signal(&g->q_cond);
    while (g->done_ticket < t && g->running) {
        if (!g->applying && g->n) {
            /* Ours to commit, at our priority, not the writer's. */
            g->st.closed_by_wait++;
            gc_run_batch(db);
        } else {
            pthread_cond_wait(&g->done_cond, &g->q_lock);
        }
    }
    g->waiters--;
}

int state_gc_wait_result(struct edhoc_state_db *db, uint64_t ticket, int *result)
{
    if (ticket == 0)
        return result ? *result : 0;
    struct group_commit *g = db->gc;
    pthread_mutex_lock(&g->q_lock);
    gc_wait_locked(db, ticket);
    int err = g->done_ticket >= ticket ? gc_failed(g, ticket, ticket) : EDHOC_STATE_ERR_IO;
    if (!err && result)
        err = *result;
    pthread_mutex_unlock(&g->q_lock);
    return err;
}

void state_gc_read_begin(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (g == NULL)
        return;
    if (g->read_depth++ == 0) {
        pthread_mutex_lock(&g->q_lock);
        gc_wait_locked(db, g->next_ticket);
        pthread_mutex_unlock(&g->q_lock);
    }
    pthread_mutex_lock(&g->sql_lock);
}

void state_gc_read_end(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (g == NULL)
        return;
    pthread_mutex_unlock(&g->sql_lock);
    g->read_depth--;
}

int state_gc_begin(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (g->in_begin)
        return EDHOC_STATE_ERR_ARG;
    pthread_mutex_lock(&g->q_lock);
    g->begin_ticket = g->next_ticket;
    g->in_begin = true;
    pthread_mutex_unlock(&g->q_lock);
    return 0;
}

int state_gc_end(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (!g->in_begin)
        return EDHOC_STATE_ERR_ARG;
    g->in_begin = false;
    pthread_mutex_lock(&g->q_lock);
    uint64_t lo = g->begin_ticket + 1, hi = g->next_ticket;
    gc_wait_locked(db, hi);
    int err = lo > hi ? 0 : g->done_ticket >= hi ? gc_failed(g, lo, hi) : EDHOC_STATE_ERR_IO;
    pthread_mutex_unlock(&g->q_lock);
    return err;
}

int edhoc_state_flush(struct edhoc_state_db *db)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_flush(db->remote);
    if (db->be)
        return db->be->flush ? db->be->flush(db->be_impl) : 0;
    struct group_commit *g = db->gc;
    if (g == NULL)
        return 0; /* every write was durable on return */
    pthread_mutex_lock(&g->q_lock);
    uint64_t lo = g->flushed + 1, hi = g->next_ticket;
    gc_wait_locked(db, hi);
    int err = lo > hi ? 0 : g->done_ticket >= hi ? gc_failed(g, lo, hi) : EDHOC_STATE_ERR_IO;
    g->flushed = hi;
    pthread_mutex_unlock(&g->q_lock);
    return err;
}

int edhoc_state_wait(struct edhoc_state_db *db, uint64_t ticket, bool block)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    struct group_commit *g = db->gc;
    if (ticket == 0 || db->remote || g == NULL)
        return 0;
    pthread_mutex_lock(&g->q_lock);
    if (block)
        gc_wait_locked(db, ticket);
    int err = g->done_ticket >= ticket ? gc_failed(g, ticket, ticket)
              : block                  ? EDHOC_STATE_ERR_IO
                                       : EDHOC_STATE_PENDING;
    pthread_mutex_unlock(&g->q_lock);
    return err;
}

bool edhoc_state_is_grouped(const struct edhoc_state_db *db)
{
    if (db == NULL)
        return false;
    return db->remote ? state_remote_is_grouped(db->remote) : db->gc != NULL;
}

int edhoc_state_event_fd(const struct edhoc_state_db *db)
{
    return db && db->gc ? db->gc->efd : -1;
}

int edhoc_state_get_writer_stats(struct edhoc_state_db *db, struct edhoc_state_writer_stats *out)
{
    if (db == NULL || out == NULL)
        return EDHOC_STATE_ERR_ARG;
    memset(out, 0, sizeof *out);
    struct group_commit *g = db->gc;
    if (g == NULL)
        return EDHOC_STATE_ERR_NOT_FOUND;
    pthread_mutex_lock(&g->q_lock);
    *out = g->st;
    out->queued = g->n;
    pthread_mutex_unlock(&g->q_lock);
    return 0;
}

static void gc_free_batch(struct group_commit *g)
{
    if (g->batch) {
        state_wipe(g->batch, g->max_rows * sizeof *g->batch);
        free(g->batch);
        g->batch = NULL;
    }
    free(g->rcs);
    g->rcs = NULL;
}

static void gc_free(struct group_commit *g)
{
    gc_free_batch(g);
    if (g->q) {
        state_wipe(g->q, g->cap * sizeof *g->q);
        free(g->q);
    }
    if (g->efd >= 0)
        close(g->efd);
    free(g);
}

void state_gc_stop(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (g == NULL)
        return;
    if (db->fork_gen == state_fork_generation && g->running) {
        pthread_mutex_lock(&g->q_lock);
        g->stop = true;
        pthread_cond_signal(&g->q_cond);
        pthread_mutex_unlock(&g->q_lock);
        pthread_join(g->thread, NULL); /* it commits what is queued first */
    }
    pthread_mutex_destroy(&g->q_lock);
    pthread_mutex_destroy(&g->sql_lock);
    pthread_cond_destroy(&g->q_cond);
    pthread_cond_destroy(&g->done_cond);
    db->gc = NULL;
    gc_free(g);
}

/* In a child of fork(): the writer thread stayed in the parent, with
 * whatever it had queued (flush before forking to keep it); the child
 * starts with an empty queue and its own thread once it writes. */
void state_gc_forget_after_fork(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (g == NULL)
        return;
    db->gc_restart_rows = g->max_rows;
    db->gc_restart_ms = g->max_ms;
    db->gc = NULL;
    gc_free_batch(g);
    if (g->q) {
        state_wipe(g->q, g->cap * sizeof *g->q);
        free(g->q);
    }
    if (g->efd >= 0)
        close(g->efd);
    /* g itself stays allocated: its mutexes may have been held by the
     * thread at the fork and cannot be destroyed. One small leak per fork
     * of a process that holds a handle with group commit. */
}

void state_gc_hold_writer(struct edhoc_state_db *db, bool hold)
{
    struct group_commit *g = db ? db->gc : NULL;
    if (g == NULL)
        return;
    pthread_mutex_lock(&g->q_lock);
    g->held = hold;
    pthread_cond_signal(&g->q_cond);
    pthread_mutex_unlock(&g->q_lock);
}

uint64_t state_gc_last_ticket(struct edhoc_state_db *db)
{
    struct group_commit *g = db ? db->gc : NULL;
    if (g == NULL)
        return 0;
    pthread_mutex_lock(&g->q_lock);
    uint64_t t = g->next_ticket;
    pthread_mutex_unlock(&g->q_lock);
    return t;
}

int state_gc_status(struct edhoc_state_db *db, uint64_t lo, uint64_t hi)
{
    struct group_commit *g = db ? db->gc : NULL;
    if (g == NULL || hi == 0 || lo > hi)
        return 0;
    pthread_mutex_lock(&g->q_lock);
    int err = g->done_ticket >= hi ? gc_failed(g, lo, hi) : EDHOC_STATE_PENDING;
    while (err == EDHOC_STATE_PENDING && !g->applying && g->n) {
        /* A worker waits for these: committed here, at the caller's
         * priority, not left to the nice-19 writer thread. */
        g->st.waits++;
        g->st.closed_by_wait++;
        gc_run_batch(db);
        err = g->done_ticket >= hi ? gc_failed(g, lo, hi) : EDHOC_STATE_PENDING;
    }
    if (err == EDHOC_STATE_PENDING && !g->urgent) {
        /* Someone waits for these: close the batch now rather than at its
         * time limit (the writer process answers a mark only once it is
         * durable, and the worker is waiting). */
        g->urgent = true;
        g->st.waits++;
        pthread_cond_signal(&g->q_cond);
    }
    pthread_mutex_unlock(&g->q_lock);
    return err;
}

/* Group commit on a usable local handle (edhoc_state_group_commit checks
 * the rest; a handle reopened after a fork resumes through here). */
int state_gc_start(struct edhoc_state_db *db, unsigned max_rows, unsigned max_ms)
{
    if (max_rows == 0 || db->gc)
        return EDHOC_STATE_ERR_ARG;
    if (!sqlite3_get_autocommit(db->sql))
        return EDHOC_STATE_ERR_ARG; /* inside edhoc_state_begin/commit */
    struct group_commit *g = calloc(1, sizeof *g);
    if (g == NULL)
        return EDHOC_STATE_ERR_IO;
    g->max_rows = max_rows;
    g->max_ms = max_ms;
    g->batch = calloc(max_rows, sizeof *g->batch);
    g->rcs = calloc(max_rows, sizeof *g->rcs);
    if (g->batch == NULL || g->rcs == NULL) {
        gc_free_batch(g);
        free(g);
        return EDHOC_STATE_ERR_IO;
    }
    g->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (g->efd < 0 || pthread_mutex_init(&g->sql_lock, &ma) ||
        pthread_mutex_init(&g->q_lock, NULL) || pthread_cond_init(&g->q_cond, &ca) ||
        pthread_cond_init(&g->done_cond, NULL)) {
        if (g->efd >= 0)
            close(g->efd);
        gc_free_batch(g);
        free(g);
        return EDHOC_STATE_ERR_IO;
    }
    pthread_mutexattr_destroy(&ma);
    pthread_condattr_destroy(&ca);
    db->gc = g;
    return 0;
}
