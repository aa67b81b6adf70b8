/* One write applied in the caller's transaction (the public calls and the
 * writer thread's batches both come here), and one row read back. */
#include "state_internal.h"

bool state_id_ok(const uint8_t *id, size_t len)
{
    return len <= EDHOC_STATE_MAX_ID && (id != NULL || len == 0);
}

/* NULL is "no ID Context" and has no length; non-NULL may be empty. */
bool state_id_context_ok(const uint8_t *idc, size_t len)
{
    return idc != NULL ? len <= EDHOC_STATE_MAX_ID_CONTEXT : len == 0;
}

/* Blobs bound here must be non-NULL even when empty: a NULL pointer would
 * bind SQL NULL, which the NOT NULL columns refuse. */
int state_bind_id(sqlite3_stmt *st, int col, const uint8_t *id, size_t len)
{
    static const uint8_t none[1];
    return sqlite3_bind_blob(st, col, len ? id : none, (int)len, SQLITE_STATIC);
}

/* Bind the key of one context to ?1..?3 (WHERE_KEY, and the first three
 * columns of put_sql). */
int state_bind_key(sqlite3_stmt *st, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                   size_t rid_len)
{
    int rc;
    if ((rc = state_bind_id(st, 1, rid, rid_len)) || (rc = sqlite3_bind_int(st, 2, idc != NULL)) ||
        (rc = state_bind_id(st, 3, idc, idc_len)))
        sqlite3_clear_bindings(st);
    return rc;
}

/* Run a statement that returns no rows; returns the SQLite code. */
int state_step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* A context never used yet was last used when it was created. */
static int64_t put_last_used(const struct edhoc_state_peer *p)
{
    if (p->last_used > 0)
        return p->last_used;
    if (p->created <= 0)
        return 0;
    return p->created > INT64_MAX / 1000 ? INT64_MAX : p->created * 1000;
}

int state_apply_put(struct edhoc_state_db *db, const struct edhoc_state_peer *p)
{
    /* A static context the database lacks after a jump (a stale copy)
     * starts at the jump's mark, not at what its file says. */
    uint64_t mark = p->method < 0 && p->ssn_mark < db->floor ? db->floor : p->ssn_mark;
    int pre = state_before_write(db, mark);
    if (pre)
        return pre;

    sqlite3_stmt *st = db->st_put;
    int rc;
    if ((rc = state_bind_key(st, p->has_id_context ? p->id_context : NULL, p->id_context_len,
                             p->recipient_id, p->recipient_id_len)) ||
        (rc = state_bind_id(st, 4, p->sender_id, p->sender_id_len)) ||
        (rc = state_bind_id(st, 5, p->master_secret, p->master_secret_len)) ||
        (rc = state_bind_id(st, 6, p->master_salt, p->master_salt_len)) ||
        (rc = sqlite3_bind_int(st, 7, p->aead_alg)) ||
        (rc = sqlite3_bind_int(st, 8, p->hkdf_alg)) ||
        (rc = sqlite3_bind_int64(st, 9, (sqlite3_int64)mark)) ||
        (rc = sqlite3_bind_text(st, 10, p->peer, -1, SQLITE_STATIC)) ||
        (rc = sqlite3_bind_int64(st, 11, p->created)) ||
        (rc = sqlite3_bind_int(st, 12, p->method)) || (rc = sqlite3_bind_int(st, 13, p->suite)) ||
        (rc = sqlite3_bind_int64(st, 14, put_last_used(p)))) {
        sqlite3_clear_bindings(st);
        return EDHOC_STATE_ERR_IO;
    }
    rc = state_step_done(st);
    return rc == SQLITE_OK ? 0 : state_map_sqlite_error(rc);
}

static int peer_exists(struct edhoc_state_db *db, const uint8_t *idc, size_t idc_len,
                       const uint8_t *rid, size_t rid_len)
{
    sqlite3_stmt *st = db->st_exists;
    int rc = state_bind_key(st, idc, idc_len, rid, rid_len);
    if (rc != SQLITE_OK)
        return state_map_sqlite_error(rc);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc == SQLITE_ROW)
        return 0;
    if (rc == SQLITE_DONE)
        return EDHOC_STATE_ERR_NOT_FOUND;
    return state_map_sqlite_error(rc);
}

int state_apply_store_ssn(struct edhoc_state_db *db, const uint8_t *id_context,
                          size_t id_context_len, const uint8_t *recipient_id,
                          size_t recipient_id_len, uint64_t mark)
{
    int pre = state_before_write(db, mark);
    if (pre)
        return pre;
    sqlite3_stmt *st = db->st_store_ssn;
    int rc = state_bind_key(st, id_context, id_context_len, recipient_id, recipient_id_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, (sqlite3_int64)mark);
    if (rc != SQLITE_OK) {
        sqlite3_clear_bindings(st);
        return state_map_sqlite_error(rc);
    }
    rc = state_step_done(st);
    if (rc != SQLITE_OK)
        return state_map_sqlite_error(rc);
    if (sqlite3_changes(db->sql) > 0)
        return 0;
    /* Nothing changed: either the stored mark is already at or above this
     * one (fine, it is durable) or there is no such context. */
    return peer_exists(db, id_context, id_context_len, recipient_id, recipient_id_len);
}

int state_apply_delete(struct edhoc_state_db *db, const uint8_t *id_context, size_t id_context_len,
                       const uint8_t *recipient_id, size_t recipient_id_len)
{
    sqlite3_stmt *st = db->st_delete;
    int rc = state_bind_key(st, id_context, id_context_len, recipient_id, recipient_id_len);
    if (rc != SQLITE_OK)
        return state_map_sqlite_error(rc);
    rc = state_step_done(st);
    if (rc != SQLITE_OK)
        return state_map_sqlite_error(rc);
    return sqlite3_changes(db->sql) > 0 ? 0 : EDHOC_STATE_ERR_NOT_FOUND;
}

static bool copy_blob(sqlite3_stmt *st, int col, uint8_t *dst, size_t cap, size_t *len)
{
    if (sqlite3_column_type(st, col) != SQLITE_BLOB)
        return false;
    const void *src = sqlite3_column_blob(st, col);
    int n = sqlite3_column_bytes(st, col);
    if (n < 0 || (size_t)n > cap || (n > 0 && src == NULL))
        return false;
    if (n > 0)
        memcpy(dst, src, (size_t)n);
    *len = (size_t)n;
    return true;
}

static bool int_col(sqlite3_stmt *st, int col, int *out)
{
    sqlite3_int64 v = sqlite3_column_int64(st, col);
    if (v < INT_MIN || v > INT_MAX)
        return false;
    *out = (int)v;
    return true;
}

/* Decode one row (in PEER_COLUMNS order). A value out of range means the
 * file was edited or damaged behind our back. */
int state_row_to_peer(sqlite3_stmt *st, struct edhoc_state_peer *p)
{
    memset(p, 0, sizeof *p);
    int has_idc = 0;
    if (!copy_blob(st, 0, p->recipient_id, sizeof p->recipient_id, &p->recipient_id_len) ||
        !int_col(st, 1, &has_idc) || (has_idc != 0 && has_idc != 1) ||
        !copy_blob(st, 2, p->id_context, sizeof p->id_context, &p->id_context_len) ||
        (!has_idc && p->id_context_len != 0) ||
        !copy_blob(st, 3, p->sender_id, sizeof p->sender_id, &p->sender_id_len) ||
        !copy_blob(st, 4, p->master_secret, sizeof p->master_secret, &p->master_secret_len) ||
        !copy_blob(st, 5, p->master_salt, sizeof p->master_salt, &p->master_salt_len) ||
        !int_col(st, 6, &p->aead_alg) || !int_col(st, 7, &p->hkdf_alg) ||
        !int_col(st, 11, &p->method) || !int_col(st, 12, &p->suite))
        return EDHOC_STATE_ERR_CORRUPT;
    p->has_id_context = has_idc == 1;
    sqlite3_int64 mark = sqlite3_column_int64(st, 8);
    if (mark < 0)
        return EDHOC_STATE_ERR_CORRUPT;
    p->ssn_mark = (uint64_t)mark;
    const unsigned char *text = sqlite3_column_text(st, 9);
    int n = sqlite3_column_bytes(st, 9);
    if (text == NULL || n < 0 || (size_t)n >= sizeof p->peer)
        return EDHOC_STATE_ERR_CORRUPT;
    memcpy(p->peer, text, (size_t)n);
    p->peer[n] = '\0';
    p->created = sqlite3_column_int64(st, 10);
    p->last_used = sqlite3_column_int64(st, 13);
    if (p->last_used < 0)
        return EDHOC_STATE_ERR_CORRUPT;
    return 0;
}

int state_apply_touch(struct edhoc_state_db *db, const uint8_t *id_context, size_t id_context_len,
                      const uint8_t *recipient_id, size_t recipient_id_len, int64_t last_used)
{
    sqlite3_stmt *st = db->st_touch;
    int rc = state_bind_key(st, id_context, id_context_len, recipient_id, recipient_id_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, last_used);
    if (rc != SQLITE_OK) {
        sqlite3_clear_bindings(st);
        return state_map_sqlite_error(rc);
    }
    rc = state_step_done(st);
    if (rc != SQLITE_OK)
        return state_map_sqlite_error(rc);
    return sqlite3_changes(db->sql) > 0 ? 0 : EDHOC_STATE_ERR_NOT_FOUND;
}
