/* Rows of the store: contexts put, read, deleted, touched, pruned, and
 * the transactions around them (the writer thread applies its batches
 * through the same apply_* functions). */
#include "state_internal.h"

int edhoc_state_put_peer(struct edhoc_state_db *db, const struct edhoc_state_peer *p)
{
    if (db == NULL || p == NULL || !state_id_ok(p->recipient_id, p->recipient_id_len) ||
        p->sender_id_len > EDHOC_STATE_MAX_ID || p->id_context_len > EDHOC_STATE_MAX_ID_CONTEXT ||
        (!p->has_id_context && p->id_context_len != 0) ||
        p->master_secret_len > EDHOC_STATE_MAX_SECRET ||
        p->master_salt_len > EDHOC_STATE_MAX_SALT || p->ssn_mark > (uint64_t)INT64_MAX ||
        strnlen(p->peer, sizeof p->peer) == sizeof p->peer || p->last_used < 0)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_put_peer(db->remote, p);
    if (db->be)
        return db->be->put_peer ? db->be->put_peer(db->be_impl, p) : EDHOC_STATE_ERR_ARG;
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    if (db->gc)
        return state_gc_put(db, p);
    return state_apply_put(db, p);
}

int edhoc_state_store_ssn(struct edhoc_state_db *db, const uint8_t *id_context,
                          size_t id_context_len, const uint8_t *recipient_id,
                          size_t recipient_id_len, uint64_t mark)
{
    if (db == NULL || !state_id_ok(recipient_id, recipient_id_len) ||
        !state_id_context_ok(id_context, id_context_len) || mark > (uint64_t)INT64_MAX)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_store_ssn(db->remote, id_context, id_context_len, recipient_id,
                                      recipient_id_len, mark);
    if (db->be)
        return db->be->store_ssn ? db->be->store_ssn(db->be_impl, id_context, id_context_len,
                                                     recipient_id, recipient_id_len, mark)
                                 : EDHOC_STATE_ERR_ARG;
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    if (db->gc) {
        int result = 0;
        uint64_t t = state_gc_key_item(db, GC_SSN, id_context, id_context_len, recipient_id,
                                       recipient_id_len, mark, 0, &result);
        return state_gc_wait_result(db, t, &result);
    }
    return state_apply_store_ssn(db, id_context, id_context_len, recipient_id, recipient_id_len,
                                 mark);
}

int edhoc_state_store_ssn_cb(void *binding, uint64_t mark)
{
    const struct edhoc_state_ssn_binding *b = binding;
    if (b == NULL || (!b->has_id_context && b->id_context_len != 0))
        return EDHOC_STATE_ERR_ARG;
    return edhoc_state_store_ssn(b->db, b->has_id_context ? b->id_context : NULL, b->id_context_len,
                                 b->recipient_id, b->recipient_id_len, mark);
}

int edhoc_state_delete_peer(struct edhoc_state_db *db, const uint8_t *id_context,
                            size_t id_context_len, const uint8_t *recipient_id,
                            size_t recipient_id_len)
{
    if (db == NULL || !state_id_ok(recipient_id, recipient_id_len) ||
        !state_id_context_ok(id_context, id_context_len))
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_delete_peer(db->remote, id_context, id_context_len, recipient_id,
                                        recipient_id_len);
    if (db->be)
        return db->be->delete_peer ? db->be->delete_peer(db->be_impl, id_context, id_context_len,
                                                         recipient_id, recipient_id_len)
                                   : EDHOC_STATE_ERR_ARG;
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    if (db->gc) {
        state_gc_key_item(db, GC_DELETE, id_context, id_context_len, recipient_id, recipient_id_len,
                          0, 0, NULL);
        return 0;
    }
    return state_apply_delete(db, id_context, id_context_len, recipient_id, recipient_id_len);
}

static int read_peer(struct edhoc_state_db *db, const uint8_t *id_context, size_t id_context_len,
                     const uint8_t *recipient_id, size_t recipient_id_len,
                     struct edhoc_state_peer *out);

int edhoc_state_get_peer(struct edhoc_state_db *db, const uint8_t *id_context,
                         size_t id_context_len, const uint8_t *recipient_id,
                         size_t recipient_id_len, struct edhoc_state_peer *out)
{
    if (db == NULL || out == NULL || !state_id_ok(recipient_id, recipient_id_len) ||
        !state_id_context_ok(id_context, id_context_len))
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_get_peer(db->remote, id_context, id_context_len, recipient_id,
                                     recipient_id_len, out);
    if (db->be)
        return db->be->get_peer ? db->be->get_peer(db->be_impl, id_context, id_context_len,
                                                   recipient_id, recipient_id_len, out)
                                : EDHOC_STATE_ERR_ARG;
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    state_gc_read_begin(db);
    int err = read_peer(db, id_context, id_context_len, recipient_id, recipient_id_len, out);
    state_gc_read_end(db);
    return err;
}

static int read_peer(struct edhoc_state_db *db, const uint8_t *id_context, size_t id_context_len,
                     const uint8_t *recipient_id, size_t recipient_id_len,
                     struct edhoc_state_peer *out)
{
    sqlite3_stmt *st = db->st_get;
    int rc = state_bind_key(st, id_context, id_context_len, recipient_id, recipient_id_len);
    if (rc != SQLITE_OK) {
        state_wipe(out, sizeof *out);
        return state_map_sqlite_error(rc);
    }
    rc = sqlite3_step(st);
    int err;
    if (rc == SQLITE_ROW)
        err = state_row_to_peer(st, out);
    else if (rc == SQLITE_DONE)
        err = EDHOC_STATE_ERR_NOT_FOUND;
    else
        err = state_map_sqlite_error(rc);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (err)
        state_wipe(out, sizeof *out);
    return err;
}

static int for_each(sqlite3_stmt *st, int (*fn)(void *ctx, const struct edhoc_state_peer *p),
                    void *ctx)
{
    /* The one iteration statement cannot be stepped by two loops at once. */
    if (sqlite3_stmt_busy(st))
        return EDHOC_STATE_ERR_ARG;
    struct edhoc_state_peer p;
    int result = 0;
    for (;;) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            result = state_map_sqlite_error(rc);
            break;
        }
        result = state_row_to_peer(st, &p);
        if (result == 0)
            result = fn(ctx, &p);
        if (result != 0)
            break;
    }
    state_wipe(&p, sizeof p);
    sqlite3_reset(st);
    return result;
}

int edhoc_state_for_each_peer(struct edhoc_state_db *db,
                              int (*fn)(void *ctx, const struct edhoc_state_peer *p), void *ctx)
{
    if (db == NULL || fn == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_for_each_peer(db->remote, 0, 0, fn, ctx);
    if (db->be)
        return db->be->for_each_peer ? db->be->for_each_peer(db->be_impl, fn, ctx)
                                     : EDHOC_STATE_ERR_ARG;
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    state_gc_read_begin(db);
    int err = for_each(db->st_all, fn, ctx);
    state_gc_read_end(db);
    return err;
}

int edhoc_state_touch_peer(struct edhoc_state_db *db, const uint8_t *id_context,
                           size_t id_context_len, const uint8_t *recipient_id,
                           size_t recipient_id_len, int64_t last_used)
{
    if (db == NULL || !state_id_ok(recipient_id, recipient_id_len) ||
        !state_id_context_ok(id_context, id_context_len) || last_used < 0)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_touch_peer(db->remote, id_context, id_context_len, recipient_id,
                                       recipient_id_len, last_used);
    if (db->be)
        return db->be->touch_peer ? db->be->touch_peer(db->be_impl, id_context, id_context_len,
                                                       recipient_id, recipient_id_len, last_used)
                                  : 0; /* use times are statistics */
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    if (db->gc) {
        state_gc_key_item(db, GC_TOUCH, id_context, id_context_len, recipient_id, recipient_id_len,
                          0, last_used, NULL);
        return 0;
    }
    return state_apply_touch(db, id_context, id_context_len, recipient_id, recipient_id_len,
                             last_used);
}

/* Run one pruning DELETE with ?1 = v, ?2 = limit; *n: the rows it
 * deleted. */
static int prune_step(struct edhoc_state_db *db, sqlite3_stmt *st, int64_t v, int64_t limit,
                      uint64_t *n)
{
    int rc = sqlite3_bind_int64(st, 1, v);
    if (rc == SQLITE_OK && sqlite3_bind_parameter_count(st) >= 2)
        rc = sqlite3_bind_int64(st, 2, limit);
    if (rc == SQLITE_OK)
        rc = state_step_done(st);
    else
        sqlite3_clear_bindings(st);
    if (rc != SQLITE_OK)
        return state_map_sqlite_error(rc);
    *n = (uint64_t)sqlite3_changes64(db->sql);
    return 0;
}

/* One integer from a query with ?1 = v (no row: *found false). */
static int query_step(sqlite3_stmt *st, bool bind, int64_t v, int64_t *out, bool *found)
{
    int rc = bind ? sqlite3_bind_int64(st, 1, v) : SQLITE_OK;
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    if (*found)
        *out = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : state_map_sqlite_error(rc);
}

/* Keep the `keep` most recently used EDHOC contexts; *n: rows deleted. */
static int prune_excess(struct edhoc_state_db *db, uint64_t keep, uint64_t *n)
{
    *n = 0;
    int64_t count = 0, t = INT64_MAX;
    bool found = false;
    int err = query_step(db->st_count_edhoc, false, 0, &count, &found);
    if (err || !found || count < 0 || (uint64_t)count <= keep)
        return err;
    /* keep < count <= INT64_MAX: the keep-th most recent use exists. */
    if (keep > 0) {
        err = query_step(db->st_nth_used, true, (int64_t)keep - 1, &t, &found);
        if (err || !found)
            return err;
    }
    uint64_t older = 0, ties = 0;
    err = prune_step(db, db->st_prune_expired, t, 0, &older);
    if (!err && (uint64_t)count - older > keep)
        err =
            prune_step(db, db->st_prune_ties, t, (int64_t)((uint64_t)count - older - keep), &ties);
    *n = older + ties;
    return err;
}

int edhoc_state_prune(struct edhoc_state_db *db, int64_t used_before, uint64_t keep,
                      uint64_t *expired, uint64_t *evicted)
{
    uint64_t n_expired = 0, n_evicted = 0;
    if (expired)
        *expired = 0;
    if (evicted)
        *evicted = 0;
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_prune(db->remote, used_before, keep, expired, evicted);
    if (db->be)
        return db->be->prune ? db->be->prune(db->be_impl, used_before, keep, expired, evicted) : 0;
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    if (sqlite3_stmt_busy(db->st_all))
        return EDHOC_STATE_ERR_ARG;
    /* With group commit: after what is queued, in a transaction of its own
     * (a rare call: at start-up, and by the writer of several workers). */
    state_gc_read_begin(db);
    int err = 0;
    if (used_before > 0)
        err = prune_step(db, db->st_prune_expired, used_before, 0, &n_expired);
    if (!err && keep < (uint64_t)INT64_MAX)
        err = prune_excess(db, keep, &n_evicted);
    state_gc_read_end(db);
    if (expired)
        *expired = n_expired;
    if (evicted)
        *evicted = n_evicted;
    return err;
}

long edhoc_state_count(struct edhoc_state_db *db)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_count(db->remote);
    if (db->be)
        return EDHOC_STATE_ERR_ARG;
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    state_gc_read_begin(db);
    sqlite3_stmt *st = db->st_count;
    int rc = sqlite3_step(st);
    long n = rc == SQLITE_ROW ? (long)sqlite3_column_int64(st, 0) : state_map_sqlite_error(rc);
    sqlite3_reset(st);
    state_gc_read_end(db);
    return n;
}

int edhoc_state_begin(struct edhoc_state_db *db)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_begin(db->remote);
    if (db->be)
        return 0; /* each call of a backend is atomic on its own */
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    if (db->gc)
        return state_gc_begin(db);
    if (!sqlite3_get_autocommit(db->sql))
        return EDHOC_STATE_ERR_ARG;
    int rc = state_step_done(db->st_begin);
    return rc == SQLITE_OK ? 0 : state_map_sqlite_error(rc);
}

int edhoc_state_commit(struct edhoc_state_db *db)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_commit(db->remote);
    if (db->be)
        return 0; /* each call of a backend is atomic on its own */
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    if (db->gc)
        return state_gc_end(db);
    if (sqlite3_get_autocommit(db->sql))
        return EDHOC_STATE_ERR_ARG;
    int rc = state_step_done(db->st_commit);
    if (rc == SQLITE_OK)
        return 0;
    /* A failed COMMIT may leave the transaction open; end it so the handle
     * is state_usable again and nothing half-done lingers. */
    if (!sqlite3_get_autocommit(db->sql))
        state_step_done(db->st_rollback);
    return state_map_sqlite_error(rc);
}

int edhoc_state_rollback(struct edhoc_state_db *db)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_commit(db->remote);
    if (db->be)
        return 0;
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    if (db->gc)
        return state_gc_end(db); /* queued writes are not taken back (marks only go up) */
    if (sqlite3_get_autocommit(db->sql))
        return EDHOC_STATE_ERR_ARG;
    int rc = state_step_done(db->st_rollback);
    return rc == SQLITE_OK ? 0 : state_map_sqlite_error(rc);
}

unsigned edhoc_state_owner(const uint8_t *recipient_id, size_t len, unsigned count)
{
    if (count <= 1 || len == 0 || recipient_id == NULL)
        return 0;
    return recipient_id[len - 1] % count;
}

struct state_remote *state_remote_new(int fd);

int edhoc_state_connect(int fd, struct edhoc_state_db **out)
{
    if (fd < 0 || out == NULL)
        return EDHOC_STATE_ERR_ARG;
    *out = NULL;
    struct edhoc_state_db *db = calloc(1, sizeof *db);
    if (db == NULL)
        return EDHOC_STATE_ERR_IO;
    db->dir_fd = -1;
    db->file_fd = -1;
    db->remote = state_remote_new(fd);
    if (db->remote == NULL) {
        free(db);
        return EDHOC_STATE_ERR_IO;
    }
    *out = db;
    return 0;
}

struct owned_filter {
    unsigned count, index;
    int (*fn)(void *ctx, const struct edhoc_state_peer *p);
    void *ctx;
};

static int owned_only(void *user, const struct edhoc_state_peer *p)
{
    const struct owned_filter *f = user;
    if (edhoc_state_owner(p->recipient_id, p->recipient_id_len, f->count) != f->index)
        return 0;
    return f->fn(f->ctx, p);
}

int edhoc_state_for_each_owned_peer(struct edhoc_state_db *db, unsigned count, unsigned index,
                                    int (*fn)(void *ctx, const struct edhoc_state_peer *p),
                                    void *ctx)
{
    if (db == NULL || fn == NULL || (count > 1 && index >= count))
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        /* Filtered by the writer: a worker reads only its own rows. */
        return state_remote_for_each_peer(db->remote, count, index, fn, ctx);
    if (count <= 1)
        return edhoc_state_for_each_peer(db, fn, ctx);
    struct owned_filter f = {count, index, fn, ctx};
    return edhoc_state_for_each_peer(db, owned_only, &f);
}

const char *edhoc_state_strerror(int err)
{
    switch (err) {
    case 0: return "success";
    case EDHOC_STATE_ERR_IO: return "cannot create, open or write the state database";
    case EDHOC_STATE_ERR_FOREIGN: return "not an edhoc-cli state database";
    case EDHOC_STATE_ERR_CORRUPT: return "state database is damaged";
    case EDHOC_STATE_ERR_VERSION: return "state database written by a newer schema version";
    case EDHOC_STATE_ERR_NOT_FOUND: return "no such context";
    case EDHOC_STATE_ERR_ARG: return "invalid argument";
    case EDHOC_STATE_ERR_UNSAFE: return "state directory or database open to other users";
    case EDHOC_STATE_ERR_TAKEN_OVER:
        return "another responder of the fleet serves this context now";
    default: return "unknown state error";
    }
}

int edhoc_state_store_ssn_async(struct edhoc_state_db *db, const uint8_t *id_context,
                                size_t id_context_len, const uint8_t *recipient_id,
                                size_t recipient_id_len, uint64_t mark, uint64_t *ticket)
{
    if (ticket)
        *ticket = 0;
    if (db == NULL || ticket == NULL || !state_id_ok(recipient_id, recipient_id_len) ||
        !state_id_context_ok(id_context, id_context_len) || mark > (uint64_t)INT64_MAX)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote || db->be || db->gc == NULL)
        return edhoc_state_store_ssn(db, id_context, id_context_len, recipient_id, recipient_id_len,
                                     mark);
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    *ticket = state_gc_key_item(db, GC_SSN, id_context, id_context_len, recipient_id,
                                recipient_id_len, mark, 0, NULL);
    return 0;
}

int edhoc_state_group_commit(struct edhoc_state_db *db, unsigned max_rows, unsigned max_ms)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_group(db->remote); /* the writer process sets the batches */
    if (db->be)
        return EDHOC_STATE_ERR_ARG; /* a backend batches (or not) on its own */
    if (max_rows == 0 || db->gc)
        return EDHOC_STATE_ERR_ARG;
    int unusable = state_usable(db);
    if (unusable)
        return unusable;
    return state_gc_start(db, max_rows, max_ms);
}

int edhoc_state_open_backend(const struct edhoc_state_backend *ops, void *impl,
                             struct edhoc_state_db **out)
{
    if (out)
        *out = NULL;
    if (ops == NULL || out == NULL)
        return EDHOC_STATE_ERR_ARG;
    struct edhoc_state_db *db = calloc(1, sizeof *db);
    if (db == NULL)
        return EDHOC_STATE_ERR_IO;
    db->dir_fd = -1;
    db->file_fd = -1;
    db->be = ops;
    db->be_impl = impl;
    *out = db;
    return 0;
}

bool edhoc_state_is_shared(const struct edhoc_state_db *db)
{
    return db && db->be && db->be->shared;
}

int edhoc_state_takeovers(struct edhoc_state_db *db, edhoc_state_taken_fn fn, void *user)
{
    if (!db || !fn)
        return EDHOC_STATE_ERR_ARG;
    if (!db->be || !db->be->takeovers)
        return 0;
    return db->be->takeovers(db->be_impl, fn, user);
}

const char *edhoc_state_backend_name(const struct edhoc_state_db *db)
{
    return db && db->be && db->be->name ? db->be->name : "sqlite";
}
