/*
 * Tests of the fleet's PostgreSQL store (src/state/state_pg.h) against a
 * real server (tests/pg_cluster.h starts a private cluster): the schema
 * created, re-opened and refused when newer or foreign; contexts put in
 * batches and read back; two hosts racing for one context's lease, with
 * never two owners at once and every sequence number handed out once; the
 * server restarted under a handle; secrets wiped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg_cluster.h"
#include "state_pg.h"

static struct pg_cluster cluster;

#define LEASE_MS 60000

static int group_setup(void **state)
{
    (void)state;
    if (pg_cluster_init(&cluster) != 0 || pg_cluster_start(&cluster) != 0) {
        fprintf(stderr, "test_state_pg: %s\n", cluster.why);
        pg_cluster_destroy(&cluster);
        return -1;
    }
    return 0;
}

/* Before each test: a test that failed while the server was stopped left
 * it so, and the next ones would fail for that alone. */
static int server_running(void **state)
{
    (void)state;
    if (cluster.pid <= 0 && pg_cluster_start(&cluster) != 0) {
        fprintf(stderr, "test_state_pg: %s\n", cluster.why);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    pg_cluster_destroy(&cluster);
    return 0;
}

/* A fresh database of that name and its connection string. */
static void fresh_db(const char *name, char *conninfo, size_t cap)
{
    if (pg_cluster_create_db(&cluster, name) != 0)
        fail_msg("%s", cluster.why);
    pg_cluster_conninfo(&cluster, name, conninfo, cap);
}

static struct edhoc_state_pg *open_ok(const char *conninfo, const char *owner)
{
    struct edhoc_state_pg *db = NULL;
    char why[600];
    int rc = edhoc_state_pg_open(conninfo, owner, LEASE_MS, &db, why, sizeof why);
    if (rc != 0)
        fail_msg("open %s: %d %s", conninfo, rc, why);
    return db;
}

/* A statement of the test's own, outside the store. */
static void sql_ok(const char *conninfo, const char *sql)
{
    PGconn *conn = PQconnectdb(conninfo);
    PGresult *res = PQexec(conn, sql);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(conn));
    PQclear(res);
    PQfinish(conn);
}

static long sql_number(const char *conninfo, const char *sql)
{
    PGconn *conn = PQconnectdb(conninfo);
    PGresult *res = PQexec(conn, sql);
    long n = PQresultStatus(res) == PGRES_TUPLES_OK ? atol(PQgetvalue(res, 0, 0)) : -1;
    PQclear(res);
    PQfinish(conn);
    return n;
}

/* A context whose every field depends on i (as in test_state.c). */
static void make_peer(struct edhoc_state_peer *p, uint32_t i)
{
    memset(p, 0, sizeof *p);
    p->recipient_id_len = 4;
    p->recipient_id[0] = (uint8_t)(i >> 24);
    p->recipient_id[1] = (uint8_t)(i >> 16);
    p->recipient_id[2] = (uint8_t)(i >> 8);
    p->recipient_id[3] = (uint8_t)i;
    p->sender_id_len = 1 + i % EDHOC_STATE_MAX_ID;
    for (size_t k = 0; k < p->sender_id_len; k++)
        p->sender_id[k] = (uint8_t)(0xa0 + k + i);
    p->has_id_context = i % 3 != 0;
    p->id_context_len = p->has_id_context ? i % (EDHOC_STATE_MAX_ID_CONTEXT + 1) : 0;
    for (size_t k = 0; k < p->id_context_len; k++)
        p->id_context[k] = (uint8_t)(0x30 + k * 3 + i);
    p->master_secret_len = 16 + i % 17;
    for (size_t k = 0; k < p->master_secret_len; k++)
        p->master_secret[k] = (uint8_t)(k * 7 + i * 13); /* 0x00 bytes included */
    p->master_salt_len = i % (EDHOC_STATE_MAX_SALT + 1);
    for (size_t k = 0; k < p->master_salt_len; k++)
        p->master_salt[k] = (uint8_t)(k * 11 + i * 5);
    p->aead_alg = (i & 1) ? 10 : 1;
    p->hkdf_alg = (i & 2) ? -43 : -16;
    p->ssn_mark = (uint64_t)i * 1000003u;
    snprintf(p->peer, sizeof p->peer, "[2001:db8::%x]:%u", i, 5683 + i % 1000);
    p->created = 1700000000 + (int64_t)i;
    p->method = (int)(i % 4);
    p->suite = (int)(i % 7) - 1;
    p->last_used = p->created * 1000 + i;
}

#define KEY(p)                                                                                     \
    (p)->has_id_context ? (p)->id_context : NULL, (p)->id_context_len, (p)->recipient_id,          \
        (p)->recipient_id_len

static void assert_peer_equal(const struct edhoc_state_peer *a, const struct edhoc_state_peer *b)
{
    assert_int_equal(a->recipient_id_len, b->recipient_id_len);
    assert_memory_equal(a->recipient_id, b->recipient_id, a->recipient_id_len);
    assert_int_equal(a->sender_id_len, b->sender_id_len);
    assert_memory_equal(a->sender_id, b->sender_id, a->sender_id_len);
    assert_int_equal(a->has_id_context, b->has_id_context);
    assert_int_equal(a->id_context_len, b->id_context_len);
    if (a->id_context_len)
        assert_memory_equal(a->id_context, b->id_context, a->id_context_len);
    assert_int_equal(a->master_secret_len, b->master_secret_len);
    assert_memory_equal(a->master_secret, b->master_secret, a->master_secret_len);
    assert_int_equal(a->master_salt_len, b->master_salt_len);
    if (a->master_salt_len)
        assert_memory_equal(a->master_salt, b->master_salt, a->master_salt_len);
    assert_int_equal(a->aead_alg, b->aead_alg);
    assert_int_equal(a->hkdf_alg, b->hkdf_alg);
    assert_int_equal(a->ssn_mark, b->ssn_mark);
    assert_string_equal(a->peer, b->peer);
    assert_int_equal(a->created, b->created);
    assert_int_equal(a->method, b->method);
    assert_int_equal(a->suite, b->suite);
    assert_int_equal(a->last_used, b->last_used);
}

static bool all_zero(const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* ---- schema ---- */

static void test_schema_created_and_reopened(void **state)
{
    (void)state;
    char ci[800];
    fresh_db("t_schema", ci, sizeof ci);
    for (int round = 0; round < 3; round++) {
        struct edhoc_state_pg *db = open_ok(ci, "host-a");
        assert_int_equal(edhoc_state_pg_schema_version(db), EDHOC_STATE_PG_SCHEMA_VERSION);
        assert_null(edhoc_state_pg_warning(db));
        edhoc_state_pg_close(db);
    }
    /* Opening again applied nothing twice. */
    assert_int_equal(sql_number(ci, "SELECT count(*) FROM edhoc_schema_version"), 1);

    /* Two hosts starting at once: one creates, the other finds it made. */
    char ci2[800];
    fresh_db("t_schema_race", ci2, sizeof ci2);
    struct edhoc_state_pg *a = open_ok(ci2, "host-a"), *b = open_ok(ci2, "host-b");
    assert_int_equal(edhoc_state_pg_schema_version(b), EDHOC_STATE_PG_SCHEMA_VERSION);
    edhoc_state_pg_close(a);
    edhoc_state_pg_close(b);

    /* A newer schema is refused, and left alone. */
    sql_ok(ci, "INSERT INTO edhoc_schema_version VALUES (99, 0)");
    struct edhoc_state_pg *db = NULL;
    char why[600];
    assert_int_equal(edhoc_state_pg_open(ci, "host-a", LEASE_MS, &db, why, sizeof why),
                     EDHOC_STATE_ERR_VERSION);
    assert_null(db);
    assert_non_null(strstr(why, "schema version 99"));
    assert_int_equal(sql_number(ci, "SELECT count(*) FROM edhoc_schema_version"), 2);

    /* A table of our name that we did not make. */
    char ci3[800];
    fresh_db("t_foreign", ci3, sizeof ci3);
    sql_ok(ci3, "CREATE TABLE edhoc_contexts (x integer)");
    assert_int_equal(edhoc_state_pg_open(ci3, "host-a", LEASE_MS, &db, why, sizeof why),
                     EDHOC_STATE_ERR_FOREIGN);
    assert_non_null(strstr(why, "did not create"));
    /* Rolled back whole: not even the version table stayed. */
    assert_int_equal(sql_number(ci3, "SELECT count(*) FROM pg_tables"
                                     " WHERE tablename = 'edhoc_schema_version'"),
                     0);
}

static void test_connection_strings(void **state)
{
    (void)state;
    char msg[400];
    assert_int_equal(edhoc_state_pg_check_conninfo("host=/run/x dbname=edhoc", msg, sizeof msg), 0);
    assert_int_equal(edhoc_state_pg_check_conninfo("host=/run/x password=hunter2", msg, sizeof msg),
                     1);
    assert_non_null(strstr(msg, "PGPASSFILE"));
    assert_null(strstr(msg, "hunter2"));
    assert_int_equal(edhoc_state_pg_check_conninfo("postgresql://fleet:hunter2@db.example/edhoc",
                                                   msg, sizeof msg),
                     1);
    assert_int_equal(edhoc_state_pg_check_conninfo("host='unterminated", msg, sizeof msg),
                     EDHOC_STATE_ERR_ARG);
    assert_non_null(strstr(msg, "connection string"));

    /* A password in the string works (trust here) and is warned about. */
    char ci[800], with_pw[900];
    fresh_db("t_conninfo", ci, sizeof ci);
    snprintf(with_pw, sizeof with_pw, "%s password=hunter2", ci);
    struct edhoc_state_pg *db = open_ok(with_pw, NULL);
    assert_non_null(edhoc_state_pg_warning(db));
    assert_non_null(strchr(edhoc_state_pg_owner(db), ':')); /* HOSTNAME:PID */
    edhoc_state_pg_close(db);

    /* No server there. */
    char why[600], nowhere[900];
    snprintf(nowhere, sizeof nowhere, "host=%s/absent port=1 dbname=x connect_timeout=2",
             cluster.dir);
    db = NULL;
    assert_int_equal(edhoc_state_pg_open(nowhere, "host-a", LEASE_MS, &db, why, sizeof why),
                     EDHOC_STATE_ERR_IO);
    assert_null(db);
    assert_non_null(strstr(why, "cannot connect to PostgreSQL"));
    assert_int_equal(edhoc_state_pg_open(ci, "", LEASE_MS, &db, why, sizeof why),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_pg_open(ci, "host-a", 0, &db, why, sizeof why),
                     EDHOC_STATE_ERR_ARG);
}

/* ---- contexts ---- */

struct walk {
    uint32_t next;
    const struct edhoc_state_peer *seen; /* the handle's struct */
    const struct edhoc_state_peer *want;
    size_t n;
};

static int walk_fn(void *ctx, const struct edhoc_state_peer *p)
{
    struct walk *w = ctx;
    w->seen = p;
    w->next++;
    return 0;
}

static void test_put_get_batches(void **state)
{
    (void)state;
    char ci[800];
    fresh_db("t_put", ci, sizeof ci);
    struct edhoc_state_pg *db = open_ok(ci, "host-a");

    enum { N = 300 };
    static struct edhoc_state_peer peers[N];
    for (uint32_t i = 0; i < N; i++)
        make_peer(&peers[i], i);
    struct edhoc_state_pg_stats before, after;
    edhoc_state_pg_get_stats(db, &before);
    static struct edhoc_state_pg_lease leases[N];
    assert_int_equal(edhoc_state_pg_put_peers(db, peers, N, leases), 0);
    edhoc_state_pg_get_stats(db, &after);
    /* 300 contexts in 128-row statements: three round trips. */
    assert_int_equal(after.round_trips - before.round_trips, 3);
    assert_int_equal(after.rows_put - before.rows_put, N);
    assert_int_equal(leases[7].end, peers[7].ssn_mark);
    assert_true(leases[7].token > 0);
    assert_int_equal(edhoc_state_pg_count(db), N);

    for (uint32_t i = 0; i < N; i += 13) {
        struct edhoc_state_peer got;
        assert_int_equal(edhoc_state_pg_get_peer(db, KEY(&peers[i]), &got), 0);
        assert_peer_equal(&got, &peers[i]);
    }

    /* The struct handed to the callback is wiped once it returns. */
    struct walk w = {0};
    assert_int_equal(edhoc_state_pg_for_each_peer(db, walk_fn, &w), 0);
    assert_int_equal(w.next, N);
    assert_non_null(w.seen);
    assert_true(all_zero(w.seen, sizeof *w.seen));

    /* Never lower a mark of the same keying material; new material
     * starts from its own. */
    struct edhoc_state_peer p = peers[5], got;
    uint64_t mark = p.ssn_mark;
    p.ssn_mark = 1;
    assert_int_equal(edhoc_state_pg_put_peer(db, &p), 0);
    assert_int_equal(edhoc_state_pg_get_peer(db, KEY(&p), &got), 0);
    assert_int_equal(got.ssn_mark, mark);
    assert_int_equal(edhoc_state_pg_store_ssn(db, KEY(&p), 3), 0);
    assert_int_equal(edhoc_state_pg_get_peer(db, KEY(&p), &got), 0);
    assert_int_equal(got.ssn_mark, mark);
    assert_int_equal(edhoc_state_pg_store_ssn(db, KEY(&p), mark + 10), 0);
    /* Other keying material under a key in use is another device's
     * context (on a fleet: a C_R two responders drew): never overwritten,
     * the row and its mark stay. */
    p.master_secret[0] ^= 1;
    assert_int_equal(edhoc_state_pg_put_peer(db, &p), EDHOC_STATE_ERR_KEY_IN_USE);
    assert_int_equal(edhoc_state_pg_get_peer(db, KEY(&p), &got), 0);
    assert_int_equal(got.ssn_mark, mark + 10);
    assert_memory_equal(got.master_secret, peers[5].master_secret, peers[5].master_secret_len);
    struct edhoc_state_pg_stats st;
    edhoc_state_pg_get_stats(db, &st);
    assert_int_equal(st.rows_refused, 1);
    /* In a batch, only that row is left out. */
    struct edhoc_state_pg_lease two_leases[2];
    struct edhoc_state_peer two[2] = {p, peers[6]};
    assert_int_equal(edhoc_state_pg_put_peers(db, two, 2, two_leases), 0);
    assert_int_equal(two_leases[0].token, 0);
    assert_true(two_leases[1].token != 0);
    p = peers[5];

    /* A key twice in one batch: written in order, the later one stays. */
    struct edhoc_state_peer twice[2] = {peers[9], peers[9]};
    twice[1].last_used += 5;
    assert_int_equal(edhoc_state_pg_put_peers(db, twice, 2, NULL), 0);
    assert_int_equal(edhoc_state_pg_get_peer(db, KEY(&peers[9]), &got), 0);
    assert_int_equal(got.last_used, twice[1].last_used);

    assert_int_equal(edhoc_state_pg_touch_peer(db, KEY(&peers[10]), 42), 0);
    assert_int_equal(edhoc_state_pg_get_peer(db, KEY(&peers[10]), &got), 0);
    assert_int_equal(got.last_used, 42);
    assert_int_equal(edhoc_state_pg_delete_peer(db, KEY(&peers[10])), 0);
    assert_int_equal(edhoc_state_pg_delete_peer(db, KEY(&peers[10])), EDHOC_STATE_ERR_NOT_FOUND);

    /* A miss wipes what the caller gave. */
    memset(&got, 0xaa, sizeof got);
    assert_int_equal(edhoc_state_pg_get_peer(db, KEY(&peers[10]), &got), EDHOC_STATE_ERR_NOT_FOUND);
    assert_true(all_zero(&got, sizeof got));
    assert_non_null(strstr(edhoc_state_pg_last_error(db), "no such context"));

    /* Bad input is refused before the server sees it. */
    p = peers[1];
    p.master_secret_len = EDHOC_STATE_MAX_SECRET + 1;
    assert_int_equal(edhoc_state_pg_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    p = peers[1];
    p.has_id_context = false;
    p.id_context_len = 2;
    assert_int_equal(edhoc_state_pg_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_pg_store_ssn(db, KEY(&peers[1]), UINT64_MAX), EDHOC_STATE_ERR_ARG);

    uint64_t expired = 0, evicted = 0;
    assert_int_equal(edhoc_state_pg_prune(db, 0, 100, &expired, &evicted), 0);
    assert_int_equal(expired, 0);
    assert_int_equal(evicted, N - 1 - 100);
    assert_int_equal(edhoc_state_pg_count(db), 100);
    /* The least recently used went. */
    assert_int_equal(edhoc_state_pg_get_peer(db, KEY(&peers[0]), &got), EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_pg_get_peer(db, KEY(&peers[N - 1]), &got), 0);
    edhoc_state_pg_close(db);
}

/* ---- the lease race ---- */

struct block {
    uint64_t first, end;
};

struct racer {
    struct edhoc_state_pg *db;
    const struct edhoc_state_peer *ctx;
    bool takeover;
    int rounds;
    struct block *blocks;
    size_t nblocks;
    int wins, refused, lost, errors;
    char last_error[200];
};

static atomic_int holders;
static atomic_int overlaps;

static void record(struct racer *r, const struct edhoc_state_pg_lease *l)
{
    r->blocks[r->nblocks++] = (struct block){l->first, l->end};
}

static void note_error(struct racer *r, int rc)
{
    r->errors++;
    snprintf(r->last_error, sizeof r->last_error, "%d: %s", rc, edhoc_state_pg_last_error(r->db));
}

static void *race(void *arg)
{
    struct racer *r = arg;
    for (int i = 0; i < r->rounds; i++) {
        struct edhoc_state_pg_lease lease;
        int rc =
            edhoc_state_pg_acquire(r->db, KEY(r->ctx), 16, LEASE_MS, r->takeover, &lease, NULL);
        if (rc == EDHOC_STATE_ERR_LEASED) {
            r->refused++;
            continue;
        }
        if (rc != 0) {
            note_error(r, rc);
            continue;
        }
        r->wins++;
        record(r, &lease);
        if (!r->takeover) {
            /* The other host must be refused for as long as we hold it. */
            if (atomic_fetch_add(&holders, 1) != 0)
                atomic_fetch_add(&overlaps, 1);
            rc = edhoc_state_pg_reserve(r->db, KEY(r->ctx), 8, LEASE_MS, &lease);
            if (rc == 0)
                record(r, &lease);
            else
                note_error(r, rc);
            atomic_fetch_sub(&holders, 1);
            rc = edhoc_state_pg_release(r->db, KEY(r->ctx), &lease);
            if (rc != 0)
                note_error(r, rc);
            continue;
        }
        /* Taken over at any moment: a reservation either gets a block of
         * its own or learns that the lease is gone. */
        for (int k = 0; k < 2; k++) {
            rc = edhoc_state_pg_reserve(r->db, KEY(r->ctx), 4, LEASE_MS, &lease);
            if (rc == EDHOC_STATE_ERR_LEASE_LOST) {
                r->lost++;
                break;
            }
            if (rc != 0) {
                note_error(r, rc);
                break;
            }
            record(r, &lease);
        }
    }
    return NULL;
}

static int by_first(const void *a, const void *b)
{
    const struct block *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

static void test_two_hosts_race_for_a_lease(void **state)
{
    (void)state;
    char ci[800];
    fresh_db("t_race", ci, sizeof ci);
    struct edhoc_state_pg *a = open_ok(ci, "host-a"), *b = open_ok(ci, "host-b");
    struct edhoc_state_peer ctx;
    make_peer(&ctx, 77);
    ctx.ssn_mark = 0;
    assert_int_equal(edhoc_state_pg_put_peer(a, &ctx), 0);
    struct edhoc_state_pg_lease lease_a, lease_b;
    assert_int_equal(edhoc_state_pg_acquire(a, KEY(&ctx), 0, LEASE_MS, false, &lease_a, NULL), 0);
    assert_int_equal(edhoc_state_pg_release(a, KEY(&ctx), &lease_a), 0);

    /* Deterministic first: b takes a's lease over; a finds out at its next
     * reservation and at its release. */
    struct edhoc_state_peer loaded;
    assert_int_equal(edhoc_state_pg_acquire(a, KEY(&ctx), 0, LEASE_MS, false, &lease_a, NULL), 0);
    assert_int_equal(edhoc_state_pg_acquire(b, KEY(&ctx), 0, LEASE_MS, false, &lease_b, &loaded),
                     EDHOC_STATE_ERR_LEASED);
    assert_true(all_zero(&loaded, sizeof loaded));
    assert_non_null(strstr(edhoc_state_pg_last_error(b), "host-a"));
    assert_int_equal(edhoc_state_pg_acquire(b, KEY(&ctx), 0, LEASE_MS, true, &lease_b, &loaded), 0);
    loaded.ssn_mark = ctx.ssn_mark;
    loaded.last_used = ctx.last_used;
    assert_peer_equal(&loaded, &ctx);
    assert_int_equal(edhoc_state_pg_reserve(a, KEY(&ctx), 4, LEASE_MS, &lease_a),
                     EDHOC_STATE_ERR_LEASE_LOST);
    assert_non_null(strstr(edhoc_state_pg_last_error(a), "host-b"));
    assert_int_equal(edhoc_state_pg_release(a, KEY(&ctx), &lease_a), EDHOC_STATE_ERR_LEASE_LOST);
    assert_int_equal(edhoc_state_pg_release(b, KEY(&ctx), &lease_b), 0);
    struct edhoc_state_peer absent;
    make_peer(&absent, 78);
    assert_int_equal(edhoc_state_pg_acquire(a, KEY(&absent), 1, LEASE_MS, false, &lease_a, NULL),
                     EDHOC_STATE_ERR_NOT_FOUND);

    /* 1,000 rounds each, taking turns politely, then 1,000 each taking the
     * context from one another. */
    enum { ROUNDS = 1000, MAX_BLOCKS = 4 * ROUNDS * 3 };
    struct block *blocks = calloc(MAX_BLOCKS, sizeof *blocks);
    size_t nblocks = 0;
    for (int phase = 0; phase < 2; phase++) {
        struct racer ra = {.db = a,
                           .ctx = &ctx,
                           .takeover = phase == 1,
                           .rounds = ROUNDS,
                           .blocks = blocks + nblocks};
        struct racer rb = ra;
        rb.db = b;
        rb.blocks = blocks + nblocks + ROUNDS * 3;
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, race, &ra), 0);
        assert_int_equal(pthread_create(&tb, NULL, race, &rb), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        if (ra.errors || rb.errors)
            fail_msg("phase %d: errors a %d (%s), b %d (%s)", phase, ra.errors, ra.last_error,
                     rb.errors, rb.last_error);
        assert_int_equal(atomic_load(&overlaps), 0);
        assert_true(ra.wins + rb.wins > 0);
        if (phase == 0)
            assert_int_equal(ra.wins + ra.refused + rb.wins + rb.refused, 2 * ROUNDS);
        else
            assert_int_equal(ra.wins + rb.wins, 2 * ROUNDS);
        printf("# phase %d: a won %d (refused %d, lost %d), b won %d (refused %d, lost %d)\n",
               phase, ra.wins, ra.refused, ra.lost, rb.wins, rb.refused, rb.lost);
        /* Pack the second racer's blocks after the first's. */
        memmove(blocks + nblocks + ra.nblocks, rb.blocks, rb.nblocks * sizeof *blocks);
        nblocks += ra.nblocks + rb.nblocks;
    }

    /* Every number from 0 to the row's mark went to exactly one block. */
    qsort(blocks, nblocks, sizeof *blocks, by_first);
    uint64_t next = 0;
    for (size_t i = 0; i < nblocks; i++) {
        if (blocks[i].first != next)
            fail_msg("block %zu is [%" PRIu64 ", %" PRIu64 "), expected it to start at %" PRIu64, i,
                     blocks[i].first, blocks[i].end, next);
        assert_true(blocks[i].end > blocks[i].first);
        next = blocks[i].end;
    }
    struct edhoc_state_peer got;
    assert_int_equal(edhoc_state_pg_get_peer(a, KEY(&ctx), &got), 0);
    assert_int_equal(got.ssn_mark, next);
    free(blocks);
    edhoc_state_pg_close(a);
    edhoc_state_pg_close(b);
}

/* ---- the server restarted ---- */

static void test_server_restart(void **state)
{
    (void)state;
    char ci[800];
    fresh_db("t_restart", ci, sizeof ci);
    struct edhoc_state_pg *db = open_ok(ci, "host-a");
    enum { N = 50 };
    struct edhoc_state_peer peers[N];
    for (uint32_t i = 0; i < N; i++)
        make_peer(&peers[i], 1000 + i);
    assert_int_equal(edhoc_state_pg_put_peers(db, peers, N, NULL), 0);
    struct edhoc_state_pg_lease lease;
    assert_int_equal(edhoc_state_pg_acquire(db, KEY(&peers[3]), 100, LEASE_MS, false, &lease, NULL),
                     0);
    uint64_t end = lease.end;

    /* Restarted between two calls: the next one reconnects by itself. */
    if (pg_cluster_restart(&cluster) != 0)
        fail_msg("restart: %s", cluster.why);
    assert_int_equal(edhoc_state_pg_reserve(db, KEY(&peers[3]), 100, LEASE_MS, &lease), 0);
    assert_int_equal(lease.first, end);
    struct edhoc_state_pg_stats st;
    edhoc_state_pg_get_stats(db, &st);
    assert_int_equal(st.reconnects, 1);

    /* Down: a clear error, and the handle stays usable. */
    assert_int_equal(pg_cluster_stop(&cluster), 0);
    assert_int_equal(edhoc_state_pg_reserve(db, KEY(&peers[3]), 100, LEASE_MS, &lease),
                     EDHOC_STATE_ERR_IO);
    assert_non_null(strstr(edhoc_state_pg_last_error(db), "PostgreSQL unreachable"));
    assert_int_equal(edhoc_state_pg_count(db), EDHOC_STATE_ERR_IO);
    if (pg_cluster_start(&cluster) != 0)
        fail_msg("start: %s", cluster.why);
    assert_int_equal(edhoc_state_pg_reserve(db, KEY(&peers[3]), 100, LEASE_MS, &lease), 0);
    assert_int_equal(lease.first, end + 100);

    /* Failed at once, as when the server's host dies: libpq reports
     * "server closed the connection unexpectedly" and may still call the
     * connection OK. The next call opens a new one all the same (before,
     * every call failed on the dead socket). */
    if (pg_cluster_crash(&cluster) != 0 || pg_cluster_start(&cluster) != 0)
        fail_msg("crash and start: %s", cluster.why);
    assert_int_equal(edhoc_state_pg_reserve(db, KEY(&peers[3]), 100, LEASE_MS, &lease), 0);
    assert_int_equal(lease.first, end + 200);

    /* Nothing lost. */
    assert_int_equal(edhoc_state_pg_count(db), N);
    for (uint32_t i = 0; i < N; i++) {
        struct edhoc_state_peer got;
        assert_int_equal(edhoc_state_pg_get_peer(db, KEY(&peers[i]), &got), 0);
        if (i == 3)
            got.ssn_mark = peers[3].ssn_mark;
        assert_peer_equal(&got, &peers[i]);
    }
    edhoc_state_pg_close(db);
}

/* ---- the store behind an edhoc_state_db handle (state_pg_backend.c) ---- */

static struct edhoc_state_db *open_handle(const char *conninfo, const char *owner)
{
    struct edhoc_state_db *db = NULL;
    char why[600];
    int rc = edhoc_state_pg_open_db(conninfo, owner, LEASE_MS, &db, NULL, why, sizeof why);
    if (rc != 0)
        fail_msg("open %s: %d %s", conninfo, rc, why);
    return db;
}

/* Two responders on one store, through the calls the engine makes: A
 * creates a context (put with its first block), B gets a request for it
 * and takes it over (get, then its first reservation), A's next reservation finds the context taken
 * (RFC 8613 Section 7.2.1: a number is used once per key, so A must not
 * send under it any more), and the blocks A and B were given never
 * overlap. Then A takes it back, and B finds out in turn. */
static void test_handles_take_over(void **state)
{
    (void)state;
    char ci[700];
    fresh_db("handles", ci, sizeof ci);
    struct edhoc_state_db *a = open_handle(ci, "host-a:1");
    struct edhoc_state_db *b = open_handle(ci, "host-b:2");
    assert_true(edhoc_state_is_shared(a));
    assert_string_equal(edhoc_state_backend_name(a), "postgresql");

    struct edhoc_state_peer p, got;
    make_peer(&p, 7);
    p.method = 3;
    p.ssn_mark = 32; /* the first block of a new context: 0..31 */
    assert_int_equal(edhoc_state_put_peer(a, &p), 0);
    assert_int_equal(edhoc_state_flush(a), 0);
    /* A uses 0..31, then reserves 32..63 before sending 32. */
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p), 64), 0);

    /* B has it in no memory: the engine looks it up and gets the row
     * with its mark, above everything A was given. */
    assert_int_equal(edhoc_state_get_peer(b, KEY(&p), &got), 0);
    assert_int_equal(got.ssn_mark, 64);
    assert_memory_equal(got.master_secret, p.master_secret, p.master_secret_len);
    assert_int_equal(edhoc_state_store_ssn(b, KEY(&p), 96), 0);

    /* A goes on past its block: refused, the context is B's. */
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p), 96), EDHOC_STATE_ERR_TAKEN_OVER);
    assert_int_equal(sql_number(ci, "SELECT max(ssn_mark) FROM edhoc_contexts"), 96);

    /* The device's next request reaches A: A takes it back above B's. */
    assert_int_equal(edhoc_state_get_peer(a, KEY(&p), &got), 0);
    assert_int_equal(got.ssn_mark, 96);
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p), 128), 0);
    assert_int_equal(edhoc_state_store_ssn(b, KEY(&p), 128), EDHOC_STATE_ERR_TAKEN_OVER);

    /* Unknown context: NOT_FOUND, as the SQLite store says it. */
    struct edhoc_state_peer q;
    make_peer(&q, 8);
    assert_int_equal(edhoc_state_get_peer(b, KEY(&q), &got), EDHOC_STATE_ERR_NOT_FOUND);
    /* An eviction at A gives the lease up (the row stays: the fleet's
     * context, not A's memory); B's next request finds it. */
    assert_int_equal(edhoc_state_delete_peer(a, KEY(&p)), 0);
    assert_int_equal(sql_number(ci, "SELECT count(*) FROM edhoc_contexts WHERE owner IS NULL"), 1);
    assert_int_equal(edhoc_state_get_peer(b, KEY(&p), &got), 0);
    assert_int_equal(got.ssn_mark, 128);
    assert_int_equal(edhoc_state_store_ssn(b, KEY(&p), 160), 0);
    /* Transactions are each call's own; a use time costs nothing. */
    assert_int_equal(edhoc_state_begin(b), 0);
    assert_int_equal(edhoc_state_touch_peer(b, KEY(&p), 1), 0);
    assert_int_equal(edhoc_state_commit(b), 0);
    edhoc_state_close(a);
    edhoc_state_close(b);
}

/* The row of a context with that Recipient ID (no ID Context): its mark,
 * and whether owner is its owner. */
static long row_mark(const char *conninfo, uint32_t i)
{
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT ssn_mark FROM edhoc_contexts WHERE recipient_id = '\\x%08x'::bytea", i);
    return sql_number(conninfo, sql);
}

static long row_owned_by(const char *conninfo, uint32_t i, const char *owner)
{
    char sql[240];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM edhoc_contexts WHERE recipient_id = '\\x%08x'::bytea"
             " AND owner = '%s'",
             i, owner);
    return sql_number(conninfo, sql);
}

/* Contexts created as the store goes away: their puts fail in the writer
 * (nothing waits for a new context's row), the engine serves them within
 * their first block, and the store comes back. A context's next
 * reservation then stores its row again with the new mark and goes on: the
 * device keeps its context, and the store answering is not reported as a
 * second outage (before, the reservation answered EDHOC_STATE_ERR_IO with
 * the store up: the responder logged the store out of reach again and
 * answered 5.03). RFC 8613 Section 7.2.1 still holds: when the failed put
 * committed after all and another responder has reserved numbers of the
 * context since, or the row under the key is another device's, nothing is
 * written and the context is dropped (EDHOC_STATE_ERR_TAKEN_OVER). */
static void test_failed_put_stored_again(void **state)
{
    (void)state;
    char ci[700];
    fresh_db("put_again", ci, sizeof ci);
    struct edhoc_state_db *a = open_handle(ci, "host-a:1");
    struct edhoc_state_db *b = open_handle(ci, "host-b:2");
    /* i % 3 == 0: no ID Context, so row_mark finds them by Recipient ID. */
    enum { KEPT = 21, COMMITTED = 24, MOVED = 27, OTHER = 30, DOWN = 33 };
    const uint32_t ids[] = {KEPT, COMMITTED, MOVED, OTHER, DOWN};
    struct edhoc_state_peer p[5], got;
    for (int i = 0; i < 5; i++) {
        make_peer(&p[i], ids[i]);
        p[i].ssn_mark = 32; /* a new context's first block */
    }
    /* The table locked by another session, so that every put queues
     * behind the writer's first statement; then the server fails under
     * them, at once (a clean stop would end the locker's session first,
     * and the writer's statement could commit). Stopped before the puts,
     * the writer's first failure would make the next put the synchronous
     * probe that refuses a new handshake. */
    PGconn *locker = PQconnectdb(ci);
    PGresult *res = PQexec(locker, "BEGIN; LOCK TABLE edhoc_contexts IN ACCESS EXCLUSIVE MODE");
    assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
    PQclear(res);
    for (int i = 0; i < 5; i++)
        assert_int_equal(edhoc_state_put_peer(a, &p[i]), 0); /* queued */
    assert_int_equal(pg_cluster_crash(&cluster), 0);
    PQfinish(locker);
    assert_int_equal(edhoc_state_flush(a), EDHOC_STATE_ERR_IO);
    /* Still down: a reservation fails as an outage, and the row is kept
     * to be put again (DOWN is tried here, then again below). */
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p[4]), 64), EDHOC_STATE_ERR_IO);
    if (pg_cluster_start(&cluster) != 0)
        fail_msg("start: %s", cluster.why);

    /* COMMITTED: the failed put had committed (as host-a, mark 32), and
     * nobody reserved since. MOVED: committed, then another responder
     * took the context over and reserved 32..63. OTHER: the key holds
     * another device's context. */
    struct edhoc_state_pg *raw = open_ok(ci, "host-a:1");
    assert_int_equal(edhoc_state_pg_put_peers(raw, &p[1], 2, NULL), 0);
    struct edhoc_state_peer other = p[3];
    other.master_secret[0] ^= 0x01;
    assert_int_equal(edhoc_state_pg_put_peers(raw, &other, 1, NULL), 0);
    edhoc_state_pg_close(raw);
    assert_int_equal(edhoc_state_get_peer(b, KEY(&p[2]), &got), 0);
    assert_int_equal(edhoc_state_store_ssn(b, KEY(&p[2]), 64), 0);

    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p[0]), 64), 0);
    assert_int_equal(row_mark(ci, KEPT), 64);
    assert_int_equal(row_owned_by(ci, KEPT, "host-a:1"), 1);
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p[0]), 96), 0); /* an ordinary lease now */
    assert_int_equal(row_mark(ci, KEPT), 96);
    assert_int_equal(edhoc_state_get_peer(b, KEY(&p[0]), &got), 0);
    assert_memory_equal(got.master_secret, p[0].master_secret, p[0].master_secret_len);

    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p[1]), 64), 0);
    assert_int_equal(row_mark(ci, COMMITTED), 64);

    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p[2]), 64), EDHOC_STATE_ERR_TAKEN_OVER);
    assert_int_equal(row_mark(ci, MOVED), 64);
    assert_int_equal(row_owned_by(ci, MOVED, "host-b:2"), 1);

    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p[3]), 64), EDHOC_STATE_ERR_TAKEN_OVER);
    assert_int_equal(row_mark(ci, OTHER), 32);
    assert_int_equal(edhoc_state_get_peer(b, KEY(&p[3]), &got), 0);
    assert_memory_equal(got.master_secret, other.master_secret, other.master_secret_len);

    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p[4]), 64), 0);
    assert_int_equal(row_mark(ci, DOWN), 64);
    edhoc_state_close(a);
    edhoc_state_close(b);
}

struct taken_log {
    int n;
    uint8_t rid[8][EDHOC_STATE_MAX_ID];
    size_t rid_len[8];
    bool had_idc[8];
};

static void note_taken(void *user, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                       size_t rid_len)
{
    (void)idc_len;
    struct taken_log *t = user;
    if (t->n < 8) {
        memcpy(t->rid[t->n], rid, rid_len);
        t->rid_len[t->n] = rid_len;
        t->had_idc[t->n] = idc != NULL;
    }
    t->n++;
}

/* Polls db until want takeovers were reported: a notice travels after
 * the takeover's commit, so it is waited for (10 s at most), not assumed. */
static void takeovers_until(struct edhoc_state_db *db, struct taken_log *t, int want)
{
    for (int i = 0; i < 1000 && t->n < want; i++) {
        int rc = edhoc_state_takeovers(db, note_taken, t);
        if (rc < 0)
            fail_msg("edhoc_state_takeovers: %d", rc);
        if (t->n < want) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    assert_int_equal(t->n, want);
}

static void assert_taken_is(const struct taken_log *t, int i, const struct edhoc_state_peer *p)
{
    assert_int_equal(t->rid_len[i], p->recipient_id_len);
    assert_memory_equal(t->rid[i], p->recipient_id, p->recipient_id_len);
    assert_int_equal(t->had_idc[i], p->has_id_context);
}

/* The old owner of a context hears of its takeover from the store
 * (LISTEN/NOTIFY), not only at its next reservation: it drops its copy
 * before it accepts another request, so that a request the new owner
 * accepted cannot be replayed to it and processed twice (RFC 8613 Section
 * 7.4). A connection lost meanwhile (the server restarted) may have
 * missed notices: the handle then asks which leases are still its own. */
static void test_takeover_announced(void **state)
{
    (void)state;
    char ci[700];
    fresh_db("announced", ci, sizeof ci);
    struct edhoc_state_db *a = open_handle(ci, "host-a:1");
    struct edhoc_state_db *b = open_handle(ci, "host-b:2");
    struct edhoc_state_peer p, q, got;
    make_peer(&p, 40);
    make_peer(&q, 41);
    p.ssn_mark = q.ssn_mark = 32;
    assert_int_equal(edhoc_state_put_peer(a, &p), 0);
    assert_int_equal(edhoc_state_put_peer(a, &q), 0);
    assert_int_equal(edhoc_state_flush(a), 0);
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p), 64), 0);
    struct taken_log ta = {0}, tb = {0};
    assert_int_equal(edhoc_state_takeovers(a, note_taken, &ta), 0);

    /* B takes p over: A hears of it, B does not hear of its own. */
    assert_int_equal(edhoc_state_get_peer(b, KEY(&p), &got), 0);
    assert_int_equal(edhoc_state_store_ssn(b, KEY(&p), 96), 0);
    takeovers_until(a, &ta, 1);
    assert_taken_is(&ta, 0, &p);
    assert_int_equal(edhoc_state_takeovers(b, note_taken, &tb), 0);
    assert_int_equal(tb.n, 0);
    /* A's lease is forgotten: its next reservation cannot go on. */
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p), 96), EDHOC_STATE_ERR_TAKEN_OVER);

    /* The server restarts; B's connection comes back at its next call,
     * A's is still the dead one when B takes q over, so A hears nothing
     * and finds out by asking, at its next look. q only is reported. */
    if (pg_cluster_restart(&cluster) != 0)
        fail_msg("restart: %s", cluster.why);
    assert_int_equal(edhoc_state_get_peer(b, KEY(&q), &got), 0);
    assert_int_equal(edhoc_state_store_ssn(b, KEY(&q), 64), 0);
    takeovers_until(a, &ta, 2);
    assert_taken_is(&ta, 1, &q);
    /* Nothing more, and nothing twice. */
    assert_int_equal(edhoc_state_takeovers(a, note_taken, &ta), 0);
    assert_int_equal(ta.n, 2);

    /* A takes p back: B hears of it. */
    assert_int_equal(edhoc_state_get_peer(a, KEY(&p), &got), 0);
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p), 128), 0);
    takeovers_until(b, &tb, 1);
    assert_taken_is(&tb, 0, &p);
    edhoc_state_close(a);
    edhoc_state_close(b);
}

/* A datagram that names a context not in memory makes the engine read it
 * (get); only a request that verified under it makes it reserve numbers.
 * So the read takes nothing (before, it took the lease: anybody who knew a
 * kid, and kids travel in clear in every OSCORE request, could take a
 * device's context from the responder serving it); the takeover is at the
 * first reservation, and only while the mark read is still the row's:
 * numbers reserved by the owner after the read are never ours (RFC 8613
 * Section 7.2.1). */
static void test_read_is_not_a_takeover(void **state)
{
    (void)state;
    char ci[700];
    fresh_db("read_only", ci, sizeof ci);
    struct edhoc_state_db *a = open_handle(ci, "host-a:1");
    struct edhoc_state_db *b = open_handle(ci, "host-b:2");
    struct edhoc_state_peer p, got;
    make_peer(&p, 9);
    p.method = 3;
    p.ssn_mark = 32;
    assert_int_equal(edhoc_state_put_peer(a, &p), 0);
    assert_int_equal(edhoc_state_flush(a), 0);

    /* B reads (a forged request, say) and drops it again: A still owns. */
    assert_int_equal(edhoc_state_get_peer(b, KEY(&p), &got), 0);
    assert_int_equal(got.ssn_mark, 32);
    assert_int_equal(edhoc_state_delete_peer(b, KEY(&p)), 0);
    assert_int_equal(sql_number(ci, "SELECT count(*) FROM edhoc_contexts WHERE owner = 'host-a:1'"),
                     1);
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p), 64), 0);

    /* B reads at 64; A reserves on before B's first reservation: B's
     * takeover is refused (its copy would count from 64, inside A's
     * block) and A keeps serving. */
    assert_int_equal(edhoc_state_get_peer(b, KEY(&p), &got), 0);
    assert_int_equal(got.ssn_mark, 64);
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p), 96), 0);
    assert_int_equal(edhoc_state_store_ssn(b, KEY(&p), 96), EDHOC_STATE_ERR_TAKEN_OVER);
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p), 128), 0);

    /* Read again, and nobody in between: B takes it, A finds out. */
    assert_int_equal(edhoc_state_get_peer(b, KEY(&p), &got), 0);
    assert_int_equal(got.ssn_mark, 128);
    assert_int_equal(edhoc_state_store_ssn(b, KEY(&p), 160), 0);
    assert_int_equal(sql_number(ci, "SELECT count(*) FROM edhoc_contexts WHERE owner = 'host-b:2'"),
                     1);
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&p), 160), EDHOC_STATE_ERR_TAKEN_OVER);
    assert_int_equal(sql_number(ci, "SELECT max(ssn_mark) FROM edhoc_contexts"), 160);
    edhoc_state_close(a);
    edhoc_state_close(b);
}

/* Two responders draw the same random C_R for two devices: the second put
 * finds the first device's context under the key and leaves it (before,
 * it overwrote it: the first device lost its context). The second
 * context has no row, so none of its numbers may go out: its first
 * reservation answers TAKEN_OVER and the engine drops it (its device
 * handshakes again). */
static void test_c_r_drawn_twice(void **state)
{
    (void)state;
    char ci[700];
    fresh_db("collision", ci, sizeof ci);
    struct edhoc_state_db *a = open_handle(ci, "host-a:1"), *b = NULL;
    struct edhoc_state_pg_backend *fleet_b = NULL;
    char why[600];
    assert_int_equal(
        edhoc_state_pg_open_db(ci, "host-b:2", LEASE_MS, &b, &fleet_b, why, sizeof why), 0);
    struct edhoc_state_peer first, second, got;
    make_peer(&first, 12);
    first.method = 3;
    first.ssn_mark = 32;
    second = first;
    second.master_secret[0] ^= 0x55;
    second.master_salt[0] ^= 0x55;
    assert_int_equal(edhoc_state_put_peer(a, &first), 0);
    assert_int_equal(edhoc_state_flush(a), 0);
    assert_int_equal(edhoc_state_put_peer(b, &second), 0); /* queued: message_2 goes now */
    /* The numbers of the block put with it are used at once, without a
     * round trip and without waiting for the put (fresh keys). */
    struct edhoc_state_pg_stats st;
    edhoc_state_pg_backend_stats(fleet_b, &st);
    uint64_t serving = st.serving_round_trips;
    assert_int_equal(edhoc_state_store_ssn(b, KEY(&second), 32), 0);
    edhoc_state_pg_backend_stats(fleet_b, &st);
    assert_int_equal(st.serving_round_trips, serving);
    assert_int_equal(edhoc_state_flush(b), 0);
    assert_int_equal(edhoc_state_store_ssn(b, KEY(&second), 64), EDHOC_STATE_ERR_TAKEN_OVER);
    /* The first device's context is untouched, and still A's. */
    assert_int_equal(edhoc_state_store_ssn(a, KEY(&first), 64), 0);
    assert_int_equal(edhoc_state_get_peer(a, KEY(&first), &got), 0);
    assert_memory_equal(got.master_secret, first.master_secret, first.master_secret_len);
    assert_int_equal(got.ssn_mark, 64);
    edhoc_state_pg_backend_stats(fleet_b, &st);
    assert_int_equal(st.rows_refused, 1);
    edhoc_state_close(a);
    edhoc_state_close(b);
}

/* Two responders race for one context through the engine's calls, 1,000
 * rounds each, in two threads with a connection each: every round takes
 * the context over (a request reached this responder) and reserves the
 * block it would use next, as the engine does before it sends under a
 * number. A reservation either succeeds, and its block [mark at the
 * takeover, new mark) is this responder's alone, or answers
 * EDHOC_STATE_ERR_TAKEN_OVER (the engine then drops its copy). The
 * blocks both sides were given must never overlap (RFC 8613 Section
 * 7.2.1: a number is used once per key). */
struct handle_racer {
    struct edhoc_state_db *db;
    const struct edhoc_state_peer *ctx;
    struct block *blocks;
    size_t nblocks;
    int taken_over, errors;
};

static void *handle_race(void *arg)
{
    struct handle_racer *r = arg;
    for (int i = 0; i < 1000; i++) {
        struct edhoc_state_peer got;
        int rc = edhoc_state_get_peer(r->db, KEY(r->ctx), &got);
        if (rc != 0) {
            r->errors++;
            continue;
        }
        uint64_t from = got.ssn_mark;
        rc = edhoc_state_store_ssn(r->db, KEY(r->ctx), from + 32);
        if (rc == EDHOC_STATE_ERR_TAKEN_OVER)
            r->taken_over++;
        else if (rc != 0)
            r->errors++;
        else
            r->blocks[r->nblocks++] = (struct block){from, from + 32};
    }
    return NULL;
}

static void test_handles_race_1000(void **state)
{
    (void)state;
    char ci[700];
    fresh_db("handle_race", ci, sizeof ci);
    struct edhoc_state_peer p;
    make_peer(&p, 11);
    p.method = 0;
    p.ssn_mark = 32;
    struct handle_racer r[2];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 2; i++) {
        r[i].db = open_handle(ci, i ? "racer-b:2" : "racer-a:1");
        r[i].ctx = &p;
        r[i].blocks = calloc(1000, sizeof *r[i].blocks);
    }
    assert_int_equal(edhoc_state_put_peer(r[0].db, &p), 0);
    /* The put is the writer thread's: the row is there once flushed. */
    assert_int_equal(edhoc_state_flush(r[0].db), 0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, handle_race, &r[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    size_t n = r[0].nblocks + r[1].nblocks;
    struct block *all = calloc(n + 1, sizeof *all);
    all[0] = (struct block){0, 32}; /* the creator's first block, from the put */
    memcpy(all + 1, r[0].blocks, r[0].nblocks * sizeof *all);
    memcpy(all + 1 + r[0].nblocks, r[1].blocks, r[1].nblocks * sizeof *all);
    qsort(all, n + 1, sizeof *all, by_first);
    for (size_t i = 1; i <= n; i++) {
        if (all[i].first < all[i - 1].end)
            fail_msg("blocks [%llu, %llu) and [%llu, %llu) overlap",
                     (unsigned long long)all[i - 1].first, (unsigned long long)all[i - 1].end,
                     (unsigned long long)all[i].first, (unsigned long long)all[i].end);
    }
    fprintf(stderr, "# 2 x 1000 takeovers: %zu blocks reserved, %d + %d found taken over\n", n,
            r[0].taken_over, r[1].taken_over);
    assert_int_equal(r[0].errors + r[1].errors, 0);
    /* Both won some and lost some: the race happened. */
    assert_true(r[0].nblocks > 0 && r[1].nblocks > 0);
    assert_int_equal(n + (size_t)r[0].taken_over + (size_t)r[1].taken_over, 2000);
    free(all);
    for (int i = 0; i < 2; i++) {
        free(r[i].blocks);
        edhoc_state_close(r[i].db);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_schema_created_and_reopened, server_running),
        cmocka_unit_test_setup(test_connection_strings, server_running),
        cmocka_unit_test_setup(test_put_get_batches, server_running),
        cmocka_unit_test_setup(test_two_hosts_race_for_a_lease, server_running),
        cmocka_unit_test_setup(test_server_restart, server_running),
        cmocka_unit_test_setup(test_handles_take_over, server_running),
        cmocka_unit_test_setup(test_failed_put_stored_again, server_running),
        cmocka_unit_test_setup(test_takeover_announced, server_running),
        cmocka_unit_test_setup(test_read_is_not_a_takeover, server_running),
        cmocka_unit_test_setup(test_c_r_drawn_twice, server_running),
        cmocka_unit_test_setup(test_handles_race_1000, server_running),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
