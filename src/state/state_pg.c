/*
 * state_pg.c - the fleet's context store on PostgreSQL (state_pg.h).
 *
 * Every statement goes through state_pg_run(): PQexecParams with binary results,
 * one round trip, counted. Byte strings are sent as binary parameters
 * (no escaping, no copy of a secret into SQL text); numbers as text.
 * Lease times are the server's clock, never a host's: the hosts of a
 * fleet disagree on the time, the one server does not.
 */
#include "state_pg_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <libpq-fe.h>

/* Each migration brings the schema from the version before it to its own. */
static const char *const migrations[EDHOC_STATE_PG_SCHEMA_VERSION] = {
    "CREATE TABLE edhoc_contexts ("
    " has_id_context boolean NOT NULL, id_context bytea NOT NULL, recipient_id bytea NOT NULL,"
    " sender_id bytea NOT NULL, master_secret bytea NOT NULL, master_salt bytea NOT NULL,"
    " aead_alg integer NOT NULL, hkdf_alg integer NOT NULL,"
    " ssn_mark bigint NOT NULL CHECK (ssn_mark >= 0), peer text NOT NULL,"
    " created bigint NOT NULL, method integer NOT NULL, suite integer NOT NULL,"
    " last_used bigint NOT NULL CHECK (last_used >= 0),"
    " owner text, lease_token bigint NOT NULL DEFAULT 0, lease_expiry bigint NOT NULL DEFAULT 0,"
    " CHECK (has_id_context OR id_context = ''::bytea),"
    " PRIMARY KEY (recipient_id, has_id_context, id_context));"
    "CREATE INDEX edhoc_contexts_last_used ON edhoc_contexts (last_used) WHERE method >= 0;"
    "INSERT INTO edhoc_schema_version VALUES (1, " NOW_MS ");",
};

void state_pg_wipe(void *p, size_t n)
{
    if (n)
        explicit_bzero(p, n);
}

/* ---- parameters ---- */

int state_pg_params_init(struct params *ps, int cap)
{
    ps->n = 0;
    ps->cap = cap;
    ps->v = calloc((size_t)cap, sizeof *ps->v);
    ps->len = calloc((size_t)cap, sizeof *ps->len);
    ps->fmt = calloc((size_t)cap, sizeof *ps->fmt);
    ps->num = calloc((size_t)cap, sizeof *ps->num);
    return ps->v && ps->len && ps->fmt && ps->num ? 0 : EDHOC_STATE_ERR_IO;
}

void state_pg_params_free(struct params *ps)
{
    free(ps->v);
    free(ps->len);
    free(ps->fmt);
    free(ps->num);
}

void state_pg_add_bytes(struct params *ps, const uint8_t *b, size_t n)
{
    /* A binary parameter of length 0 still needs a pointer. */
    ps->v[ps->n] = n ? (const char *)b : "";
    ps->len[ps->n] = (int)n;
    ps->fmt[ps->n++] = 1;
}

void state_pg_add_text(struct params *ps, const char *s)
{
    ps->v[ps->n] = s;
    ps->fmt[ps->n++] = 0;
}

void state_pg_add_int(struct params *ps, int64_t x)
{
    snprintf(ps->num[ps->n], sizeof ps->num[0], "%" PRId64, x);
    state_pg_add_text(ps, ps->num[ps->n]);
}

void state_pg_add_key(struct params *ps, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                      size_t rid_len)
{
    state_pg_add_text(ps, idc ? "t" : "f");
    state_pg_add_bytes(ps, idc, idc_len);
    state_pg_add_bytes(ps, rid, rid_len);
}

bool state_pg_key_ok(const uint8_t *idc, size_t idc_len, const uint8_t *rid, size_t rid_len)
{
    return rid_len <= EDHOC_STATE_MAX_ID && (rid || !rid_len) &&
           idc_len <= EDHOC_STATE_MAX_ID_CONTEXT && (idc || !idc_len);
}

/* ---- errors and round trips ---- */

static void set_error(struct edhoc_state_pg *db, const char *prefix, const char *msg)
{
    size_t n = strcspn(msg ? msg : "", "\n");
    snprintf(db->error, sizeof db->error, "%s%.*s", prefix, (int)n, msg ? msg : "");
}

/* SQLSTATE classes: a table of ours missing or of another shape is not
 * our database; bad data is the caller's; the rest is the server's. */
static int map_error(struct edhoc_state_pg *db, const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state == NULL) {
        set_error(db, "PostgreSQL unreachable: ", PQerrorMessage(db->conn));
        return EDHOC_STATE_ERR_IO;
    }
    const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    char prefix[48];
    snprintf(prefix, sizeof prefix, "PostgreSQL (SQLSTATE %.5s): ", state);
    set_error(db, prefix, primary ? primary : "error");
    if (!strcmp(state, "42P07") || !strcmp(state, "42P01") || !strcmp(state, "42703") ||
        !strcmp(state, "42804"))
        return EDHOC_STATE_ERR_FOREIGN;
    if (!strncmp(state, "22", 2) || !strncmp(state, "23", 2))
        return EDHOC_STATE_ERR_ARG;
    if (!strcmp(state, "XX001") || !strcmp(state, "XX002"))
        return EDHOC_STATE_ERR_CORRUPT;
    return EDHOC_STATE_ERR_IO;
}

static int ensure_connected(struct edhoc_state_pg *db)
{
    if (PQstatus(db->conn) != CONNECTION_OK || db->reset_needed) {
        db->reset_needed = false;
        PQreset(db->conn);
        if (PQstatus(db->conn) != CONNECTION_OK) {
            set_error(db, "PostgreSQL unreachable: ", PQerrorMessage(db->conn));
            db->stats.failed++;
            return EDHOC_STATE_ERR_IO;
        }
        db->stats.reconnects++;
        db->listen_missing = db->listening;
    }
    if (db->listen_missing) {
        /* A new session listens to nothing: before its first statement,
         * so that no takeover committed after it goes unheard. */
        PGresult *res = PQexec(db->conn, "LISTEN " TAKEOVER_CHANNEL);
        bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        PQclear(res);
        db->stats.round_trips++;
        if (!ok) {
            set_error(db, "PostgreSQL LISTEN failed: ", PQerrorMessage(db->conn));
            db->stats.failed++;
            return EDHOC_STATE_ERR_IO;
        }
        db->listen_missing = false;
        db->listen_gen++;
    }
    return 0;
}

/* libpq has no way to wipe a result it frees; its values are our
 * memory until PQclear, so the secrets among them are zeroed there. */
void state_pg_clear_result(PGresult *res)
{
    if (res == NULL)
        return;
    for (int r = 0; r < PQntuples(res); r++)
        for (int c = 0; c < PQnfields(res); c++)
            state_pg_wipe(PQgetvalue(res, r, c), (size_t)PQgetlength(res, r, c));
    PQclear(res);
}

/* One statement, one round trip. With retry, a connection found lost is
 * re-established and the statement sent once more (state_pg.h says why
 * that is safe for every statement that retries). */
static int run_as(struct edhoc_state_pg *db, const char *sql, const struct params *ps, bool retry,
                  bool several, PGresult **out)
{
    *out = NULL;
    for (int attempt = 0;; attempt++) {
        int err = ensure_connected(db);
        if (err)
            return err;
        /* Only the simple protocol takes several statements in one string. */
        PGresult *res = several
                            ? PQexec(db->conn, sql)
                            : PQexecParams(db->conn, sql, ps ? ps->n : 0, NULL, ps ? ps->v : NULL,
                                           ps ? ps->len : NULL, ps ? ps->fmt : NULL, 1);
        db->stats.round_trips++;
        ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
            db->error[0] = '\0';
            *out = res;
            return 0;
        }
        /* A failure without a SQLSTATE is the client's own (libpq:
         * "server closed the connection unexpectedly"), and after a
         * server that died at once the status may still say
         * CONNECTION_OK: every later statement failed the same way on
         * the dead socket. The connection is opened again either way. */
        bool lost = PQstatus(db->conn) != CONNECTION_OK || !res ||
                    PQresultErrorField(res, PG_DIAG_SQLSTATE) == NULL;
        if (lost)
            db->reset_needed = true;
        err = map_error(db, res);
        PQclear(res);
        if (!(lost && retry && attempt == 0)) {
            db->stats.failed++;
            return err;
        }
    }
}

int state_pg_run(struct edhoc_state_pg *db, const char *sql, const struct params *ps, bool retry,
                 PGresult **out)
{
    return run_as(db, sql, ps, retry, false, out);
}

/* Statements of a transaction: never retried on a new connection. */
static int run_simple(struct edhoc_state_pg *db, const char *sql)
{
    PGresult *res;
    int err = run_as(db, sql, NULL, false, true, &res);
    PQclear(res);
    return err;
}

uint64_t state_pg_affected(const PGresult *res)
{
    return strtoull(PQcmdTuples((PGresult *)res), NULL, 10);
}

/* ---- binary result values ---- */

bool state_pg_get_int(const PGresult *res, int r, int c, int64_t *out)
{
    const unsigned char *v = (const unsigned char *)PQgetvalue(res, r, c);
    int n = PQgetlength(res, r, c);
    if (PQgetisnull(res, r, c) || (n != 8 && n != 4))
        return false;
    uint64_t x = 0;
    for (int i = 0; i < n; i++)
        x = x << 8 | v[i];
    *out = n == 8 ? (int64_t)x : (int64_t)(int32_t)(uint32_t)x;
    return true;
}

static bool get_bytes(const PGresult *res, int r, int c, uint8_t *dst, size_t cap, size_t *len)
{
    int n = PQgetlength(res, r, c);
    if (PQgetisnull(res, r, c) || n < 0 || (size_t)n > cap)
        return false;
    memcpy(dst, PQgetvalue(res, r, c), (size_t)n);
    *len = (size_t)n;
    return true;
}

/* Columns col.. col+13 in the order of PEER_COLS. */
int state_pg_row_to_peer(const PGresult *res, int r, int col, struct edhoc_state_peer *p)
{
    memset(p, 0, sizeof *p);
    size_t peer_len;
    int64_t aead, hkdf, mark, method, suite;
    bool ok =
        get_bytes(res, r, col, p->recipient_id, sizeof p->recipient_id, &p->recipient_id_len) &&
        get_bytes(res, r, col + 1, p->sender_id, sizeof p->sender_id, &p->sender_id_len) &&
        PQgetlength(res, r, col + 2) == 1 &&
        get_bytes(res, r, col + 3, p->id_context, sizeof p->id_context, &p->id_context_len) &&
        get_bytes(res, r, col + 4, p->master_secret, sizeof p->master_secret,
                  &p->master_secret_len) &&
        get_bytes(res, r, col + 5, p->master_salt, sizeof p->master_salt, &p->master_salt_len) &&
        state_pg_get_int(res, r, col + 6, &aead) && state_pg_get_int(res, r, col + 7, &hkdf) &&
        state_pg_get_int(res, r, col + 8, &mark) && mark >= 0 &&
        get_bytes(res, r, col + 9, (uint8_t *)p->peer, sizeof p->peer - 1, &peer_len) &&
        state_pg_get_int(res, r, col + 10, &p->created) &&
        state_pg_get_int(res, r, col + 11, &method) && state_pg_get_int(res, r, col + 12, &suite) &&
        state_pg_get_int(res, r, col + 13, &p->last_used) && p->last_used >= 0;
    if (!ok) {
        state_pg_wipe(p, sizeof *p);
        return EDHOC_STATE_ERR_CORRUPT;
    }
    p->has_id_context = PQgetvalue(res, r, col + 2)[0] != 0;
    p->peer[peer_len] = '\0';
    p->aead_alg = (int)aead;
    p->hkdf_alg = (int)hkdf;
    p->ssn_mark = (uint64_t)mark;
    p->method = (int)method;
    p->suite = (int)suite;
    return 0;
}

/* ---- open, schema, close ---- */

static void quiet_notices(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* "relation already exists, skipping" and the like */
}

int edhoc_state_pg_check_conninfo(const char *conninfo, char *msg, size_t msg_cap)
{
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo ? conninfo : "", &perr);
    if (opts == NULL) {
        size_t n = perr ? strcspn(perr, "\n") : 0;
        if (msg && msg_cap)
            snprintf(msg, msg_cap, "bad PostgreSQL connection string: %.*s", (int)n,
                     perr ? perr : "out of memory");
        PQfreemem(perr);
        return EDHOC_STATE_ERR_ARG;
    }
    int warn = 0;
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (!strcmp(o->keyword, "password") && o->val && *o->val) {
            warn = 1;
            state_pg_wipe(o->val, strlen(o->val));
        }
    }
    PQconninfoFree(opts);
    if (warn && msg && msg_cap)
        snprintf(msg, msg_cap,
                 "the PostgreSQL connection string holds a password, which shows "
                 "in the process list and shell histories: keep it in a password "
                 "file (PGPASSFILE, ~/.pgpass) or a service file instead");
    else if (msg && msg_cap)
        msg[0] = '\0';
    return warn;
}

/* Hosts that start together take the advisory lock in turn: the first
 * creates the schema, the others find it made. */
static int migrate(struct edhoc_state_pg *db)
{
    int err = run_simple(db, "BEGIN; SELECT pg_advisory_xact_lock(1162102851);"
                             "CREATE TABLE IF NOT EXISTS edhoc_schema_version ("
                             " version integer PRIMARY KEY, applied_ms bigint NOT NULL)");
    if (err)
        goto fail;
    int version = edhoc_state_pg_schema_version(db);
    if (version < 0) {
        err = version;
        goto fail;
    }
    if (version > EDHOC_STATE_PG_SCHEMA_VERSION) {
        snprintf(db->error, sizeof db->error,
                 "the database holds schema version %d, newer than this program's %d: "
                 "use a newer edhoc-cli, or another database",
                 version, EDHOC_STATE_PG_SCHEMA_VERSION);
        err = EDHOC_STATE_ERR_VERSION;
        goto fail;
    }
    for (int v = version; v < EDHOC_STATE_PG_SCHEMA_VERSION && !err; v++)
        err = run_simple(db, migrations[v]);
    if (err == EDHOC_STATE_ERR_FOREIGN)
        snprintf(db->error, sizeof db->error,
                 "the database has a table edhoc_contexts that edhoc-cli did not create "
                 "(no schema version row): give a database of its own");
    if (!err)
        err = run_simple(db, "COMMIT");
    if (!err)
        return 0;
fail:;
    char keep[sizeof db->error];
    memcpy(keep, db->error, sizeof keep);
    if (PQstatus(db->conn) == CONNECTION_OK)
        (void)run_simple(db, "ROLLBACK");
    memcpy(db->error, keep, sizeof keep);
    return err;
}

int edhoc_state_pg_open(const char *conninfo, const char *owner, int64_t lease_ms,
                        struct edhoc_state_pg **out, char *why, size_t why_cap)
{
    if (why && why_cap)
        why[0] = '\0';
    if (out)
        *out = NULL;
    if (conninfo == NULL || out == NULL || lease_ms <= 0 ||
        (owner && (!*owner || strlen(owner) > EDHOC_STATE_PG_MAX_OWNER))) {
        if (why && why_cap)
            snprintf(why, why_cap, "bad argument (connection string, owner or lease time)");
        return EDHOC_STATE_ERR_ARG;
    }
    struct edhoc_state_pg *db = calloc(1, sizeof *db);
    if (db == NULL)
        return EDHOC_STATE_ERR_IO;
    int err = edhoc_state_pg_check_conninfo(conninfo, db->warning, sizeof db->warning);
    if (err < 0) {
        if (why && why_cap)
            snprintf(why, why_cap, "%s", db->warning);
        free(db);
        return err;
    }
    if (!err)
        db->warning[0] = '\0';
    if (owner) {
        snprintf(db->owner, sizeof db->owner, "%s", owner);
    } else {
        char host[40] = "host";
        (void)gethostname(host, sizeof host - 1);
        snprintf(db->owner, sizeof db->owner, "%.40s:%ld", host, (long)getpid());
    }
    db->lease_ms = lease_ms;
    /* connect_timeout and application_name first: the string's own
     * values, expanded at dbname, override them. */
    const char *const keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *const vals[] = {"10", "edhoc-cli", conninfo, NULL};
    db->conn = PQconnectdbParams(keys, vals, 1);
    if (db->conn == NULL || PQstatus(db->conn) != CONNECTION_OK) {
        set_error(db, "cannot connect to PostgreSQL: ",
                  db->conn ? PQerrorMessage(db->conn) : "out of memory");
        err = EDHOC_STATE_ERR_IO;
    } else {
        PQsetNoticeProcessor(db->conn, quiet_notices, NULL);
        err = migrate(db);
    }
    if (err) {
        if (why && why_cap)
            snprintf(why, why_cap, "%s", db->error);
        edhoc_state_pg_close(db);
        return err;
    }
    *out = db;
    return 0;
}

void edhoc_state_pg_close(struct edhoc_state_pg *db)
{
    if (db == NULL)
        return;
    PQfinish(db->conn);
    state_pg_wipe(db, sizeof *db);
    free(db);
}

void edhoc_state_pg_forget(struct edhoc_state_pg *db)
{
    if (db == NULL)
        return;
    /* The socket closed first, so PQfinish has nothing to send on:
     * the session is another process's. */
    int fd = PQsocket(db->conn);
    if (fd >= 0)
        close(fd);
    PQfinish(db->conn);
    state_pg_wipe(db, sizeof *db);
    free(db);
}

int edhoc_state_pg_schema_version(struct edhoc_state_pg *db)
{
    PGresult *res;
    int err = state_pg_run(db, "SELECT coalesce(max(version), 0) FROM edhoc_schema_version", NULL,
                           false, &res);
    int64_t v = 0;
    if (!err && (PQntuples(res) != 1 || !state_pg_get_int(res, 0, 0, &v)))
        err = EDHOC_STATE_ERR_CORRUPT;
    PQclear(res);
    return err ? err : (int)v;
}

const char *edhoc_state_pg_warning(const struct edhoc_state_pg *db)
{
    return db && db->warning[0] ? db->warning : NULL;
}

const char *edhoc_state_pg_last_error(const struct edhoc_state_pg *db)
{
    return db ? db->error : "";
}

const char *edhoc_state_pg_owner(const struct edhoc_state_pg *db)
{
    return db ? db->owner : "";
}

const char *edhoc_state_pg_strerror(int err)
{
    switch (err) {
    case EDHOC_STATE_ERR_LEASED: return "the context is leased to another owner";
    case EDHOC_STATE_ERR_LEASE_LOST: return "the lease was taken over by another owner";
    case EDHOC_STATE_ERR_KEY_IN_USE:
        return "another context is stored under that ID Context and Recipient ID";
    default: return edhoc_state_strerror(err);
    }
}

int edhoc_state_pg_listen(struct edhoc_state_pg *db)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->listening)
        return 0;
    db->listening = db->listen_missing = true;
    return ensure_connected(db);
}

uint64_t edhoc_state_pg_listen_gen(const struct edhoc_state_pg *db)
{
    return db ? db->listen_gen : 0;
}

static int hex_in(const char *s, size_t n, uint8_t *out, size_t cap, size_t *len)
{
    if (n % 2 || n / 2 > cap)
        return -1;
    for (size_t i = 0; i < n; i += 2) {
        int v = 0;
        for (size_t k = 0; k < 2; k++) {
            char c = s[i + k];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0)
                return -1;
            v = v * 16 + d;
        }
        out[i / 2] = (uint8_t)v;
    }
    *len = n / 2;
    return 0;
}

/* "c<ID Context hex>|- <Recipient ID hex> <owner>", as take_over's NOTIFY
 * writes it. */
static bool parse_takeover(const char *s, struct edhoc_state_pg_takeover *t)
{
    memset(t, 0, sizeof *t);
    const char *sp1 = strchr(s, ' ');
    const char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp2)
        return false;
    if (s[0] == 'c') {
        t->has_id_context = true;
        if (hex_in(s + 1, (size_t)(sp1 - s - 1), t->id_context, sizeof t->id_context,
                   &t->id_context_len))
            return false;
    } else if (s[0] != '-' || sp1 != s + 1) {
        return false;
    }
    if (hex_in(sp1 + 1, (size_t)(sp2 - sp1 - 1), t->recipient_id, sizeof t->recipient_id,
               &t->recipient_id_len) ||
        t->recipient_id_len == 0)
        return false;
    snprintf(t->owner, sizeof t->owner, "%s", sp2 + 1);
    return true;
}

int edhoc_state_pg_takeovers(struct edhoc_state_pg *db,
                             void (*fn)(void *user, const struct edhoc_state_pg_takeover *t),
                             void *user)
{
    if (db == NULL || fn == NULL || !db->listening)
        return EDHOC_STATE_ERR_ARG;
    /* No round trip: what the server sent is read without waiting
     * (PQconsumeInput); a connection found closed (the server restarted)
     * is opened again, listening, and listen_gen tells the caller that
     * takeovers may have gone unheard. */
    if (PQstatus(db->conn) == CONNECTION_OK && !db->reset_needed && !PQconsumeInput(db->conn))
        db->reset_needed = true; /* whatever the status says (run_as) */
    int n = 0;
    PGnotify *note;
    while ((note = PQnotifies(db->conn)) != NULL) {
        struct edhoc_state_pg_takeover t;
        if (!strcmp(note->relname, TAKEOVER_CHANNEL) && note->extra &&
            parse_takeover(note->extra, &t) && strcmp(t.owner, db->owner) != 0) {
            fn(user, &t);
            n++;
        }
        PQfreemem(note);
    }
    int err = ensure_connected(db);
    return err ? err : n;
}

void edhoc_state_pg_get_stats(const struct edhoc_state_pg *db, struct edhoc_state_pg_stats *out)
{
    if (out)
        *out = db ? db->stats : (struct edhoc_state_pg_stats){0};
}
