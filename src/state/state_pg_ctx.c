/*
 * state_pg_ctx.c - the contexts of the PostgreSQL store and their leases
 * (state_pg.h): batched puts, acquire, reserve, release, and the
 * namesakes of the SQLite store's calls.
 */
#include "state_pg_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static int64_t new_token(void)
{
    uint64_t t = 0;
    if (getrandom(&t, sizeof t, 0) != (ssize_t)sizeof t)
        t = (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&t;
    t &= (uint64_t)INT64_MAX;
    return t ? (int64_t)t : 1;
}

static bool peer_ok(const struct edhoc_state_peer *p)
{
    return p->recipient_id_len <= EDHOC_STATE_MAX_ID && p->sender_id_len <= EDHOC_STATE_MAX_ID &&
           p->id_context_len <= EDHOC_STATE_MAX_ID_CONTEXT &&
           (p->has_id_context || !p->id_context_len) &&
           p->master_secret_len <= EDHOC_STATE_MAX_SECRET &&
           p->master_salt_len <= EDHOC_STATE_MAX_SALT && p->ssn_mark <= (uint64_t)INT64_MAX &&
           p->last_used >= 0 && memchr(p->peer, '\0', sizeof p->peer) != NULL;
}

static const char put_head[] =
    "INSERT INTO edhoc_contexts AS t (" PEER_COLS ", owner, lease_token, lease_expiry) VALUES ";
/* A key already in the store is written again only with the same keying
 * material (the same context put again: its mark never lowered). A row
 * with other material under that key is another device's context whose
 * C_R a responder of the fleet drew again: it stays, and the new context
 * is not stored (RETURNING names the rows written). */
static const char put_tail[] =
    " ON CONFLICT (recipient_id, has_id_context, id_context) DO UPDATE SET"
    " ssn_mark = GREATEST(t.ssn_mark, EXCLUDED.ssn_mark),"
    " peer = EXCLUDED.peer, created = EXCLUDED.created,"
    " method = EXCLUDED.method, suite = EXCLUDED.suite, last_used = EXCLUDED.last_used,"
    " owner = EXCLUDED.owner, lease_token = EXCLUDED.lease_token,"
    " lease_expiry = EXCLUDED.lease_expiry"
    " WHERE t.sender_id = EXCLUDED.sender_id AND t.master_secret = EXCLUDED.master_secret"
    " AND t.master_salt = EXCLUDED.master_salt AND t.aead_alg = EXCLUDED.aead_alg"
    " AND t.hkdf_alg = EXCLUDED.hkdf_alg"
    " RETURNING recipient_id, has_id_context, id_context";

/* The same row put again after its first put failed (state_pg_backend.c):
 * stored if the key is free; if the row is there with this material (the
 * failed put committed after all) it is taken only while its mark is
 * still the one that put wrote ($seen, the last parameter): a mark that
 * moved means another responder reserved numbers of it, and a row with
 * other material is another device's context. Either way nothing is
 * written and RETURNING is empty. */
static const char put_again_tail[] =
    " ON CONFLICT (recipient_id, has_id_context, id_context) DO UPDATE SET"
    " ssn_mark = EXCLUDED.ssn_mark,"
    " peer = EXCLUDED.peer, last_used = EXCLUDED.last_used,"
    " owner = EXCLUDED.owner, lease_token = EXCLUDED.lease_token,"
    " lease_expiry = EXCLUDED.lease_expiry"
    " WHERE t.sender_id = EXCLUDED.sender_id AND t.master_secret = EXCLUDED.master_secret"
    " AND t.master_salt = EXCLUDED.master_salt AND t.aead_alg = EXCLUDED.aead_alg"
    " AND t.hkdf_alg = EXCLUDED.hkdf_alg AND t.ssn_mark = $%d::bigint"
    " RETURNING recipient_id, has_id_context, id_context";

/* Whether row r of a RETURNING recipient_id, has_id_context, id_context
 * (binary) names p's key. */
static bool result_names(const PGresult *res, int r, const struct edhoc_state_peer *p)
{
    return !PQgetisnull(res, r, 0) && (size_t)PQgetlength(res, r, 0) == p->recipient_id_len &&
           !memcmp(PQgetvalue(res, r, 0), p->recipient_id, p->recipient_id_len) &&
           PQgetlength(res, r, 1) == 1 && (PQgetvalue(res, r, 1)[0] != 0) == p->has_id_context &&
           (size_t)PQgetlength(res, r, 2) == p->id_context_len &&
           !memcmp(PQgetvalue(res, r, 2), p->id_context, p->id_context_len);
}

static bool same_key(const struct edhoc_state_peer *a, const struct edhoc_state_peer *b)
{
    return a->has_id_context == b->has_id_context && a->id_context_len == b->id_context_len &&
           a->recipient_id_len == b->recipient_id_len &&
           !memcmp(a->id_context, b->id_context, a->id_context_len) &&
           !memcmp(a->recipient_id, b->recipient_id, a->recipient_id_len);
}

static const char put_row[] =
    "%s($%d::bytea,$%d::bytea,$%d::boolean,$%d::bytea,$%d::bytea,$%d::bytea,$%d::integer,"
    "$%d::integer,$%d::bigint,$%d::text,$%d::bigint,$%d::integer,$%d::integer,$%d::bigint,"
    "$%d::text,$%d::bigint," NOW_MS " + $%d::bigint)";

/* One INSERT of rows [0, n), no key twice among them (ON CONFLICT cannot
 * touch a row twice in one statement). */
static int put_chunk(struct edhoc_state_pg *db, const struct edhoc_state_peer *rows, size_t n,
                     int64_t token, const uint64_t *seen_mark, bool *written)
{
    struct params ps;
    /* Each placeholder of the format grows by at most 5 digits. */
    size_t cap = sizeof put_head + sizeof put_again_tail + 5 + n * (sizeof put_row + 17 * 5) + 1;
    char *sql = malloc(cap);
    int err = state_pg_params_init(&ps, (int)n * 14 + 4);
    if (err || sql == NULL) {
        state_pg_params_free(&ps);
        free(sql);
        return EDHOC_STATE_ERR_IO;
    }
    int shared = (int)n * 14 + 1;
    size_t at = (size_t)snprintf(sql, cap, "%s", put_head);
    for (size_t i = 0; i < n; i++) {
        const struct edhoc_state_peer *p = &rows[i];
        int b = (int)i * 14 + 1;
        at += (size_t)snprintf(sql + at, cap - at, put_row, i ? "," : "", b, b + 1, b + 2, b + 3,
                               b + 4, b + 5, b + 6, b + 7, b + 8, b + 9, b + 10, b + 11, b + 12,
                               b + 13, shared, shared + 1, shared + 2);
        state_pg_add_bytes(&ps, p->recipient_id, p->recipient_id_len);
        state_pg_add_bytes(&ps, p->sender_id, p->sender_id_len);
        state_pg_add_text(&ps, p->has_id_context ? "t" : "f");
        state_pg_add_bytes(&ps, p->id_context, p->id_context_len);
        state_pg_add_bytes(&ps, p->master_secret, p->master_secret_len);
        state_pg_add_bytes(&ps, p->master_salt, p->master_salt_len);
        state_pg_add_int(&ps, p->aead_alg);
        state_pg_add_int(&ps, p->hkdf_alg);
        state_pg_add_int(&ps, (int64_t)p->ssn_mark);
        state_pg_add_text(&ps, p->peer);
        state_pg_add_int(&ps, p->created);
        state_pg_add_int(&ps, p->method);
        state_pg_add_int(&ps, p->suite);
        state_pg_add_int(&ps, p->last_used ? p->last_used : p->created * 1000);
    }
    if (seen_mark)
        snprintf(sql + at, cap - at, put_again_tail, shared + 3);
    else
        snprintf(sql + at, cap - at, "%s", put_tail);
    state_pg_add_text(&ps, db->owner);
    state_pg_add_int(&ps, token);
    state_pg_add_int(&ps, db->lease_ms);
    if (seen_mark)
        state_pg_add_int(&ps, (int64_t)*seen_mark);
    PGresult *res;
    err = state_pg_run(db, sql, &ps, true, &res);
    for (size_t i = 0; !err && i < n; i++) {
        written[i] = false;
        for (int r = 0; r < PQntuples(res) && !written[i]; r++)
            written[i] = result_names(res, r, &rows[i]);
        if (written[i])
            db->stats.rows_put++;
        else
            db->stats.rows_refused++;
    }
    PQclear(res);
    state_pg_params_free(&ps);
    free(sql);
    return err;
}

int edhoc_state_pg_put_peers(struct edhoc_state_pg *db, const struct edhoc_state_peer *peers,
                             size_t n, struct edhoc_state_pg_lease *leases)
{
    if (db == NULL || (n && peers == NULL))
        return EDHOC_STATE_ERR_ARG;
    for (size_t i = 0; i < n; i++)
        if (!peer_ok(&peers[i]))
            return EDHOC_STATE_ERR_ARG;
    int64_t token = new_token();
    bool written[PUT_BATCH];
    size_t start = 0;
    while (start < n) {
        size_t end = start + 1;
        while (end < n && end - start < PUT_BATCH) {
            bool repeated = false;
            for (size_t k = start; k < end && !repeated; k++)
                repeated = same_key(&peers[k], &peers[end]);
            if (repeated)
                break;
            end++;
        }
        int err = put_chunk(db, peers + start, end - start, token, NULL, written);
        if (err)
            return err;
        for (size_t i = start; leases && i < end; i++)
            leases[i] = written[i - start] ? (struct edhoc_state_pg_lease){.token = token,
                                                                           .first = 0,
                                                                           .end = peers[i].ssn_mark,
                                                                           .expiry_ms = 0}
                                           : (struct edhoc_state_pg_lease){0};
        start = end;
    }
    return 0;
}

int edhoc_state_pg_put_again(struct edhoc_state_pg *db, const struct edhoc_state_peer *p,
                             uint64_t seen_mark, struct edhoc_state_pg_lease *lease)
{
    if (db == NULL || p == NULL || lease == NULL || !peer_ok(p) ||
        seen_mark > (uint64_t)INT64_MAX || p->ssn_mark < seen_mark)
        return EDHOC_STATE_ERR_ARG;
    *lease = (struct edhoc_state_pg_lease){0};
    int64_t token = new_token();
    bool written = false;
    int err = put_chunk(db, p, 1, token, &seen_mark, &written);
    if (!err && written)
        *lease = (struct edhoc_state_pg_lease){
            .token = token, .first = seen_mark, .end = p->ssn_mark, .expiry_ms = 0};
    return err;
}

int edhoc_state_pg_put_peer(struct edhoc_state_pg *db, const struct edhoc_state_peer *p)
{
    struct edhoc_state_pg_lease l;
    int err = edhoc_state_pg_put_peers(db, p, p ? 1 : 0, p ? &l : NULL);
    return err ? err : p && l.token == 0 ? EDHOC_STATE_ERR_KEY_IN_USE : 0;
}

/* Why a lease statement matched no row: none there, or someone else's. */
static int explain_no_row(struct edhoc_state_pg *db, const struct params *key, int absent_err,
                          int held_err)
{
    PGresult *res;
    int err = state_pg_run(db,
                           "SELECT coalesce(owner, ''), lease_expiry - " NOW_MS
                           " FROM edhoc_contexts WHERE " KEY_WHERE,
                           key, true, &res);
    if (err)
        return err;
    if (PQntuples(res) == 0) {
        snprintf(db->error, sizeof db->error, "no such context in the store");
        err = absent_err;
    } else {
        int64_t left = 0;
        (void)state_pg_get_int(res, 0, 1, &left);
        snprintf(db->error, sizeof db->error,
                 "the context is leased to \"%.*s\" (%" PRId64 " ms left)", PQgetlength(res, 0, 0),
                 PQgetvalue(res, 0, 0), left > 0 ? left : 0);
        err = held_err;
    }
    PQclear(res);
    return err;
}

/* The parameters both lease statements begin with: the key ($1-$3), the
 * owner ($4), a new token ($5), the lease ($6) and the block ($7); room
 * for one more. */
static int lease_params(struct edhoc_state_pg *db, struct params *ps, const uint8_t *idc,
                        size_t idc_len, const uint8_t *rid, size_t rid_len, int64_t lease_ms,
                        uint64_t reserve, int64_t *token)
{
    if (state_pg_params_init(ps, 8)) {
        state_pg_params_free(ps);
        return EDHOC_STATE_ERR_IO;
    }
    *token = new_token();
    state_pg_add_key(ps, idc, idc_len, rid, rid_len);
    state_pg_add_text(ps, db->owner);
    state_pg_add_int(ps, *token);
    state_pg_add_int(ps, lease_ms);
    state_pg_add_int(ps, (int64_t)reserve);
    return 0;
}

int edhoc_state_pg_acquire(struct edhoc_state_pg *db, const uint8_t *id_context,
                           size_t id_context_len, const uint8_t *recipient_id,
                           size_t recipient_id_len, uint64_t reserve, int64_t lease_ms,
                           bool takeover, struct edhoc_state_pg_lease *lease,
                           struct edhoc_state_peer *out)
{
    if (out)
        state_pg_wipe(out, sizeof *out);
    if (db == NULL || lease == NULL || lease_ms <= 0 || reserve > EDHOC_STATE_PG_MAX_BLOCK ||
        !state_pg_key_ok(id_context, id_context_len, recipient_id, recipient_id_len))
        return EDHOC_STATE_ERR_ARG;
    struct params ps;
    int64_t token;
    if (lease_params(db, &ps, id_context, id_context_len, recipient_id, recipient_id_len, lease_ms,
                     reserve, &token))
        return EDHOC_STATE_ERR_IO;
    state_pg_add_text(&ps, takeover ? "t" : "f");
    PGresult *res;
    int err =
        state_pg_run(db,
                     "UPDATE edhoc_contexts SET owner = $4::text, lease_token = $5::bigint,"
                     " lease_expiry = " NOW_MS " + $6::bigint, ssn_mark = ssn_mark + $7::bigint"
                     " WHERE " KEY_WHERE " AND ($8::boolean OR owner IS NULL OR owner = $4::text"
                     " OR lease_expiry <= " NOW_MS ") RETURNING " PEER_COLS ", lease_expiry",
                     &ps, true, &res);
    if (!err && PQntuples(res) == 0) {
        ps.n = 3;
        err = explain_no_row(db, &ps, EDHOC_STATE_ERR_NOT_FOUND, EDHOC_STATE_ERR_LEASED);
    } else if (!err) {
        struct edhoc_state_peer *p = out ? out : &db->row;
        err = state_pg_row_to_peer(res, 0, 0, p);
        int64_t expiry = 0;
        if (!err && (!state_pg_get_int(res, 0, 14, &expiry) || p->ssn_mark < reserve))
            err = EDHOC_STATE_ERR_CORRUPT;
        if (!err)
            *lease = (struct edhoc_state_pg_lease){.token = token,
                                                   .first = p->ssn_mark - reserve,
                                                   .end = p->ssn_mark,
                                                   .expiry_ms = expiry};
        if (err || p == &db->row)
            state_pg_wipe(p, sizeof *p);
    }
    state_pg_clear_result(res);
    state_pg_params_free(&ps);
    return err;
}

int edhoc_state_pg_take_over(struct edhoc_state_pg *db, const uint8_t *id_context,
                             size_t id_context_len, const uint8_t *recipient_id,
                             size_t recipient_id_len, uint64_t seen_mark, uint64_t reserve,
                             int64_t lease_ms, struct edhoc_state_pg_lease *lease)
{
    if (db == NULL || lease == NULL || lease_ms <= 0 || reserve > EDHOC_STATE_PG_MAX_BLOCK ||
        seen_mark > (uint64_t)INT64_MAX ||
        !state_pg_key_ok(id_context, id_context_len, recipient_id, recipient_id_len))
        return EDHOC_STATE_ERR_ARG;
    struct params ps;
    int64_t token;
    if (lease_params(db, &ps, id_context, id_context_len, recipient_id, recipient_id_len, lease_ms,
                     reserve, &token))
        return EDHOC_STATE_ERR_IO;
    state_pg_add_int(&ps, (int64_t)seen_mark);
    PGresult *res;
    /* Announced to the fleet at commit (edhoc_state_pg_takeovers): the
     * old owner drops its copy before it accepts another request. */
    int err = state_pg_run(
        db,
        "WITH t AS (UPDATE edhoc_contexts SET owner = $4::text, lease_token = $5::bigint,"
        " lease_expiry = " NOW_MS " + $6::bigint,"
        " ssn_mark = ssn_mark + $7::bigint"
        " WHERE " KEY_WHERE " AND ssn_mark = $8::bigint"
        " RETURNING ssn_mark, lease_expiry, has_id_context, id_context, recipient_id)"
        " SELECT ssn_mark, lease_expiry, pg_notify('" TAKEOVER_CHANNEL "',"
        " CASE WHEN has_id_context THEN 'c' || encode(id_context, 'hex') ELSE '-' END"
        " || ' ' || encode(recipient_id, 'hex') || ' ' || $4::text) FROM t",
        &ps, true, &res);
    int64_t mark = 0, expiry = 0;
    if (!err && PQntuples(res) == 0) {
        ps.n = 3;
        err = explain_no_row(db, &ps, EDHOC_STATE_ERR_NOT_FOUND, EDHOC_STATE_ERR_LEASE_LOST);
        if (err == EDHOC_STATE_ERR_LEASE_LOST)
            snprintf(db->error, sizeof db->error,
                     "the context's mark moved since it was read: another owner reserved numbers");
    } else if (!err &&
               (!state_pg_get_int(res, 0, 0, &mark) || !state_pg_get_int(res, 0, 1, &expiry) ||
                (uint64_t)mark != seen_mark + reserve)) {
        err = EDHOC_STATE_ERR_CORRUPT;
    } else if (!err) {
        *lease = (struct edhoc_state_pg_lease){
            .token = token, .first = seen_mark, .end = (uint64_t)mark, .expiry_ms = expiry};
    }
    PQclear(res);
    state_pg_params_free(&ps);
    return err;
}

int edhoc_state_pg_owned(struct edhoc_state_pg *db,
                         int (*fn)(void *user, const struct edhoc_state_pg_takeover *key,
                                   int64_t token),
                         void *user)
{
    if (db == NULL || fn == NULL)
        return EDHOC_STATE_ERR_ARG;
    struct params ps;
    if (state_pg_params_init(&ps, 1)) {
        state_pg_params_free(&ps);
        return EDHOC_STATE_ERR_IO;
    }
    state_pg_add_text(&ps, db->owner);
    PGresult *res;
    int err = state_pg_run(db,
                           "SELECT has_id_context, id_context, recipient_id, lease_token"
                           " FROM edhoc_contexts WHERE owner = $1::text",
                           &ps, true, &res);
    state_pg_params_free(&ps);
    for (int r = 0; !err && r < PQntuples(res); r++) {
        struct edhoc_state_pg_takeover k;
        memset(&k, 0, sizeof k);
        int64_t token = 0;
        k.has_id_context = PQgetlength(res, r, 0) == 1 && PQgetvalue(res, r, 0)[0] != 0;
        size_t il = (size_t)PQgetlength(res, r, 1), rl = (size_t)PQgetlength(res, r, 2);
        if (il > sizeof k.id_context || rl > sizeof k.recipient_id ||
            !state_pg_get_int(res, r, 3, &token)) {
            err = EDHOC_STATE_ERR_CORRUPT;
            break;
        }
        memcpy(k.id_context, PQgetvalue(res, r, 1), il);
        memcpy(k.recipient_id, PQgetvalue(res, r, 2), rl);
        k.id_context_len = il;
        k.recipient_id_len = rl;
        snprintf(k.owner, sizeof k.owner, "%s", db->owner);
        err = fn(user, &k, token);
    }
    PQclear(res);
    return err;
}

int edhoc_state_pg_reserve(struct edhoc_state_pg *db, const uint8_t *id_context,
                           size_t id_context_len, const uint8_t *recipient_id,
                           size_t recipient_id_len, uint64_t count, int64_t lease_ms,
                           struct edhoc_state_pg_lease *lease)
{
    if (db == NULL || lease == NULL || lease_ms <= 0 || count > EDHOC_STATE_PG_MAX_BLOCK ||
        !state_pg_key_ok(id_context, id_context_len, recipient_id, recipient_id_len))
        return EDHOC_STATE_ERR_ARG;
    struct params ps;
    if (state_pg_params_init(&ps, 7)) {
        state_pg_params_free(&ps);
        return EDHOC_STATE_ERR_IO;
    }
    state_pg_add_key(&ps, id_context, id_context_len, recipient_id, recipient_id_len);
    state_pg_add_text(&ps, db->owner);
    state_pg_add_int(&ps, lease->token);
    state_pg_add_int(&ps, (int64_t)count);
    state_pg_add_int(&ps, lease_ms);
    PGresult *res;
    int err = state_pg_run(db,
                           "UPDATE edhoc_contexts SET ssn_mark = ssn_mark + $6::bigint,"
                           " lease_expiry = " NOW_MS " + $7::bigint"
                           " WHERE " KEY_WHERE " AND owner = $4::text AND lease_token = $5::bigint"
                           " RETURNING ssn_mark, lease_expiry",
                           &ps, true, &res);
    int64_t mark = 0, expiry = 0;
    if (!err && PQntuples(res) == 0) {
        ps.n = 3;
        err = explain_no_row(db, &ps, EDHOC_STATE_ERR_NOT_FOUND, EDHOC_STATE_ERR_LEASE_LOST);
    } else if (!err && (!state_pg_get_int(res, 0, 0, &mark) ||
                        !state_pg_get_int(res, 0, 1, &expiry) || (uint64_t)mark < count)) {
        err = EDHOC_STATE_ERR_CORRUPT;
    } else if (!err) {
        lease->first = (uint64_t)mark - count;
        lease->end = (uint64_t)mark;
        lease->expiry_ms = expiry;
    }
    PQclear(res);
    state_pg_params_free(&ps);
    return err;
}

/* A statement on one context that must change one row: the key is $1-$3,
 * then text (if any), then the numbers in extra. */
static int one_row(struct edhoc_state_pg *db, const char *sql, const uint8_t *idc, size_t idc_len,
                   const uint8_t *rid, size_t rid_len, int nextra, const int64_t *extra,
                   const char *text, int none_err)
{
    if (db == NULL || !state_pg_key_ok(idc, idc_len, rid, rid_len))
        return EDHOC_STATE_ERR_ARG;
    struct params ps;
    if (state_pg_params_init(&ps, 6)) {
        state_pg_params_free(&ps);
        return EDHOC_STATE_ERR_IO;
    }
    state_pg_add_key(&ps, idc, idc_len, rid, rid_len);
    if (text)
        state_pg_add_text(&ps, text);
    for (int i = 0; i < nextra; i++)
        state_pg_add_int(&ps, extra[i]);
    PGresult *res;
    int err = state_pg_run(db, sql, &ps, true, &res);
    if (!err && state_pg_affected(res) == 0) {
        err = none_err;
        if (none_err == EDHOC_STATE_ERR_NOT_FOUND)
            snprintf(db->error, sizeof db->error, "no such context in the store");
    }
    PQclear(res);
    state_pg_params_free(&ps);
    return err;
}

int edhoc_state_pg_release(struct edhoc_state_pg *db, const uint8_t *id_context,
                           size_t id_context_len, const uint8_t *recipient_id,
                           size_t recipient_id_len, const struct edhoc_state_pg_lease *lease)
{
    if (lease == NULL)
        return EDHOC_STATE_ERR_ARG;
    return one_row(db,
                   "UPDATE edhoc_contexts SET owner = NULL, lease_expiry = 0 WHERE " KEY_WHERE
                   " AND owner = $4::text AND lease_token = $5::bigint",
                   id_context, id_context_len, recipient_id, recipient_id_len, 1, &lease->token,
                   db ? db->owner : "", EDHOC_STATE_ERR_LEASE_LOST);
}

int edhoc_state_pg_store_ssn(struct edhoc_state_pg *db, const uint8_t *id_context,
                             size_t id_context_len, const uint8_t *recipient_id,
                             size_t recipient_id_len, uint64_t mark)
{
    if (mark > (uint64_t)INT64_MAX)
        return EDHOC_STATE_ERR_ARG;
    int64_t m = (int64_t)mark;
    return one_row(
        db, "UPDATE edhoc_contexts SET ssn_mark = GREATEST(ssn_mark, $4::bigint) WHERE " KEY_WHERE,
        id_context, id_context_len, recipient_id, recipient_id_len, 1, &m, NULL,
        EDHOC_STATE_ERR_NOT_FOUND);
}

int edhoc_state_pg_delete_peer(struct edhoc_state_pg *db, const uint8_t *id_context,
                               size_t id_context_len, const uint8_t *recipient_id,
                               size_t recipient_id_len)
{
    return one_row(db, "DELETE FROM edhoc_contexts WHERE " KEY_WHERE, id_context, id_context_len,
                   recipient_id, recipient_id_len, 0, NULL, NULL, EDHOC_STATE_ERR_NOT_FOUND);
}

int edhoc_state_pg_touch_peer(struct edhoc_state_pg *db, const uint8_t *id_context,
                              size_t id_context_len, const uint8_t *recipient_id,
                              size_t recipient_id_len, int64_t last_used)
{
    if (last_used < 0)
        return EDHOC_STATE_ERR_ARG;
    return one_row(db, "UPDATE edhoc_contexts SET last_used = $4::bigint WHERE " KEY_WHERE,
                   id_context, id_context_len, recipient_id, recipient_id_len, 1, &last_used, NULL,
                   EDHOC_STATE_ERR_NOT_FOUND);
}

int edhoc_state_pg_get_peer(struct edhoc_state_pg *db, const uint8_t *id_context,
                            size_t id_context_len, const uint8_t *recipient_id,
                            size_t recipient_id_len, struct edhoc_state_peer *out)
{
    if (out)
        state_pg_wipe(out, sizeof *out);
    if (db == NULL || out == NULL ||
        !state_pg_key_ok(id_context, id_context_len, recipient_id, recipient_id_len))
        return EDHOC_STATE_ERR_ARG;
    struct params ps;
    if (state_pg_params_init(&ps, 3)) {
        state_pg_params_free(&ps);
        return EDHOC_STATE_ERR_IO;
    }
    state_pg_add_key(&ps, id_context, id_context_len, recipient_id, recipient_id_len);
    PGresult *res;
    int err = state_pg_run(db, "SELECT " PEER_COLS " FROM edhoc_contexts WHERE " KEY_WHERE, &ps,
                           true, &res);
    if (!err && PQntuples(res) == 0) {
        snprintf(db->error, sizeof db->error, "no such context in the store");
        err = EDHOC_STATE_ERR_NOT_FOUND;
    } else if (!err) {
        err = state_pg_row_to_peer(res, 0, 0, out);
    }
    state_pg_clear_result(res);
    state_pg_params_free(&ps);
    return err;
}

int edhoc_state_pg_for_each_peer(struct edhoc_state_pg *db,
                                 int (*fn)(void *ctx, const struct edhoc_state_peer *p), void *ctx)
{
    if (db == NULL || fn == NULL || db->iterating)
        return EDHOC_STATE_ERR_ARG;
    PGresult *res;
    int err = state_pg_run(db,
                           "SELECT " PEER_COLS " FROM edhoc_contexts"
                           " ORDER BY recipient_id, has_id_context, id_context",
                           NULL, true, &res);
    db->iterating = true;
    for (int r = 0; !err && r < PQntuples(res); r++) {
        err = state_pg_row_to_peer(res, r, 0, &db->row);
        if (!err)
            err = fn(ctx, &db->row);
        state_pg_wipe(&db->row, sizeof db->row);
    }
    db->iterating = false;
    state_pg_clear_result(res);
    return err;
}

int edhoc_state_pg_prune(struct edhoc_state_pg *db, int64_t used_before, uint64_t keep,
                         uint64_t *expired, uint64_t *evicted)
{
    if (expired)
        *expired = 0;
    if (evicted)
        *evicted = 0;
    if (db == NULL || used_before < 0 || db->iterating)
        return EDHOC_STATE_ERR_ARG;
    struct params ps;
    if (state_pg_params_init(&ps, 1)) {
        state_pg_params_free(&ps);
        return EDHOC_STATE_ERR_IO;
    }
    PGresult *res = NULL;
    int err = 0;
    if (used_before > 0) {
        state_pg_add_int(&ps, used_before);
        err = state_pg_run(
            db, "DELETE FROM edhoc_contexts WHERE method >= 0 AND last_used < $1::bigint", &ps,
            true, &res);
        if (!err && expired)
            *expired = state_pg_affected(res);
        PQclear(res);
    }
    if (!err && keep != UINT64_MAX) {
        ps.n = 0;
        state_pg_add_int(&ps, keep > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)keep);
        /* Of equal times the lowest keys go first, as in the SQLite store. */
        err = state_pg_run(
            db,
            "DELETE FROM edhoc_contexts WHERE (recipient_id, has_id_context, id_context) IN"
            " (SELECT recipient_id, has_id_context, id_context FROM edhoc_contexts"
            " WHERE method >= 0 ORDER BY last_used DESC, recipient_id DESC,"
            " has_id_context DESC, id_context DESC OFFSET $1::bigint)",
            &ps, true, &res);
        if (!err && evicted)
            *evicted = state_pg_affected(res);
        PQclear(res);
    }
    state_pg_params_free(&ps);
    return err;
}

long edhoc_state_pg_count(struct edhoc_state_pg *db)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    PGresult *res;
    int err = state_pg_run(db, "SELECT count(*) FROM edhoc_contexts", NULL, true, &res);
    int64_t n = 0;
    if (!err && (PQntuples(res) != 1 || !state_pg_get_int(res, 0, 0, &n)))
        err = EDHOC_STATE_ERR_CORRUPT;
    PQclear(res);
    return err ? err : (long)n;
}
