/*
 * Tests of the responder's durable state (edhoc/state.h), its rows: round
 * trips, the never-lower rule for sequence-number marks, keys of (ID
 * Context, Recipient ID), transactions, and the bounds the responder keeps
 * (issue #15: least recently used first, idle ones expire, rows deleted
 * with their marks, static ones kept).
 */
#include "state_test_util.h"

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
    if (a->master_secret_len)
        assert_memory_equal(a->master_secret, b->master_secret, a->master_secret_len);
    assert_int_equal(a->master_salt_len, b->master_salt_len);
    if (a->master_salt_len)
        assert_memory_equal(a->master_salt, b->master_salt, a->master_salt_len);
    assert_int_equal(a->aead_alg, b->aead_alg);
    assert_int_equal(a->hkdf_alg, b->hkdf_alg);
    assert_true(a->ssn_mark == b->ssn_mark);
    assert_string_equal(a->peer, b->peer);
    assert_true(a->created == b->created);
    assert_int_equal(a->method, b->method);
    assert_int_equal(a->suite, b->suite);
}

struct collect {
    struct edhoc_state_peer got[8];
    int n;
    int stop_at; /* return 7 from the call with this index */
};

static int collect_fn(void *ctx, const struct edhoc_state_peer *p)
{
    struct collect *c = ctx;
    if (c->n < 8)
        c->got[c->n] = *p;
    c->n++;
    return c->n - 1 == c->stop_at ? 7 : 0;
}

static void test_round_trip_every_field(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);

    /* Largest value of every field, and the smallest (all empty). */
    struct edhoc_state_peer big, small, got;
    memset(&big, 0, sizeof big);
    big.recipient_id_len = EDHOC_STATE_MAX_ID;
    memset(big.recipient_id, 0xff, EDHOC_STATE_MAX_ID);
    big.sender_id_len = EDHOC_STATE_MAX_ID;
    memset(big.sender_id, 0xee, EDHOC_STATE_MAX_ID);
    big.has_id_context = true;
    big.id_context_len = EDHOC_STATE_MAX_ID_CONTEXT;
    memset(big.id_context, 0xdd, EDHOC_STATE_MAX_ID_CONTEXT);
    big.master_secret_len = EDHOC_STATE_MAX_SECRET;
    for (int k = 0; k < EDHOC_STATE_MAX_SECRET; k++)
        big.master_secret[k] = (uint8_t)k; /* includes a 0x00 byte */
    big.master_salt_len = EDHOC_STATE_MAX_SALT;
    memset(big.master_salt, 0x00, EDHOC_STATE_MAX_SALT);
    big.aead_alg = 24;
    big.hkdf_alg = -43;
    big.ssn_mark = (uint64_t)INT64_MAX;
    memset(big.peer, 'x', sizeof big.peer - 1);
    big.created = INT64_MIN;
    big.method = INT32_MAX;
    big.suite = INT32_MIN;

    memset(&small, 0, sizeof small);
    small.method = -1;
    small.suite = -1;
    small.created = 0;

    assert_int_equal(edhoc_state_put_peer(db, &big), 0);
    assert_int_equal(edhoc_state_put_peer(db, &small), 0);
    assert_int_equal(edhoc_state_count(db), 2);

    memset(&got, 0x55, sizeof got);
    assert_int_equal(edhoc_state_get_peer(db, KEY(big), &got), 0);
    assert_peer_equal(&got, &big);
    memset(&got, 0x55, sizeof got);
    assert_int_equal(edhoc_state_get_peer(db, KEY(small), &got), 0);
    assert_peer_equal(&got, &small);
    edhoc_state_close(db);

    /* And again from disk, through for_each (ordered by recipient ID, so
     * the empty ID comes first). */
    db = open_ok(f->sdir);
    struct collect c = {.stop_at = -1};
    assert_int_equal(edhoc_state_for_each_peer(db, collect_fn, &c), 0);
    assert_int_equal(c.n, 2);
    assert_peer_equal(&c.got[0], &small);
    assert_peer_equal(&c.got[1], &big);

    for (uint32_t i = 1; i < 6; i++) {
        struct edhoc_state_peer p;
        make_peer(&p, i);
        assert_int_equal(edhoc_state_put_peer(db, &p), 0);
        assert_int_equal(edhoc_state_get_peer(db, KEY(p), &got), 0);
        assert_peer_equal(&got, &p);
    }
    edhoc_state_close(db);
}

static void test_put_replaces(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer a, b, got;
    make_peer(&a, 3);
    a.ssn_mark = 500;
    assert_int_equal(edhoc_state_put_peer(db, &a), 0);

    /* Same key (ID Context and recipient ID), new keying material and
     * every other field new: the row is replaced, mark included. */
    make_peer(&b, 4);
    memcpy(b.recipient_id, a.recipient_id, a.recipient_id_len);
    b.recipient_id_len = a.recipient_id_len;
    b.has_id_context = a.has_id_context;
    memcpy(b.id_context, a.id_context, a.id_context_len);
    b.id_context_len = a.id_context_len;
    b.ssn_mark = 20;
    assert_int_equal(edhoc_state_put_peer(db, &b), 0);
    assert_int_equal(edhoc_state_count(db), 1);
    assert_int_equal(edhoc_state_get_peer(db, KEY(a), &got), 0);
    assert_peer_equal(&got, &b);

    /* Same keying material with a lower mark: the other fields change,
     * the mark does not go down. */
    struct edhoc_state_peer c = b;
    c.ssn_mark = 7;
    snprintf(c.peer, sizeof c.peer, "192.0.2.1:1234");
    c.created = 42;
    assert_int_equal(edhoc_state_put_peer(db, &c), 0);
    assert_int_equal(edhoc_state_get_peer(db, KEY(c), &got), 0);
    assert_string_equal(got.peer, "192.0.2.1:1234");
    assert_true(got.created == 42);
    assert_true(got.ssn_mark == 20);
    /* ... and a higher one is taken. */
    c.ssn_mark = 900;
    assert_int_equal(edhoc_state_put_peer(db, &c), 0);
    assert_true(get_mark(db, &c) == 900);
    edhoc_state_close(db);
}

static void test_store_ssn_never_lowers(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p;
    make_peer(&p, 8); /* an ID Context of 8 bytes */
    assert_true(p.has_id_context && p.id_context_len == 8);
    p.ssn_mark = 0;
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);

    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 100), 0);
    assert_true(get_mark(db, &p) == 100);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 50), 0);
    assert_true(get_mark(db, &p) == 100);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 100), 0);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 0), 0);
    assert_true(get_mark(db, &p) == 100);
    /* Through the OSCORE-callback glue. */
    struct edhoc_state_ssn_binding b = {.db = db,
                                        .has_id_context = true,
                                        .id_context_len = p.id_context_len,
                                        .recipient_id_len = p.recipient_id_len};
    memcpy(b.id_context, p.id_context, p.id_context_len);
    memcpy(b.recipient_id, p.recipient_id, p.recipient_id_len);
    assert_int_equal(edhoc_state_store_ssn_cb(&b, 150), 0);
    assert_true(get_mark(db, &p) == 150);
    assert_int_equal(edhoc_state_store_ssn_cb(&b, 140), 0);
    assert_true(get_mark(db, &p) == 150);
    /* The same recipient ID without the ID Context names no context. */
    b.has_id_context = false;
    b.id_context_len = 0;
    assert_int_equal(edhoc_state_store_ssn_cb(&b, 160), EDHOC_STATE_ERR_NOT_FOUND);
    b.id_context_len = 3; /* a length without an ID Context is no key */
    assert_int_equal(edhoc_state_store_ssn_cb(&b, 160), EDHOC_STATE_ERR_ARG);
    b.has_id_context = true;
    b.id_context_len = p.id_context_len;
    b.recipient_id[0] ^= 1;
    assert_int_equal(edhoc_state_store_ssn_cb(&b, 160), EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_store_ssn_cb(NULL, 160), EDHOC_STATE_ERR_ARG);
    assert_true(get_mark(db, &p) == 150);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), (1ull << 40)), 0);
    assert_true(get_mark(db, &p) == (1ull << 40));
    edhoc_state_close(db);

    db = open_ok(f->sdir);
    assert_true(get_mark(db, &p) == (1ull << 40));
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 3), 0);
    assert_true(get_mark(db, &p) == (1ull << 40));
    /* Other fields are untouched by store_ssn. */
    struct edhoc_state_peer got;
    assert_int_equal(edhoc_state_get_peer(db, KEY(p), &got), 0);
    p.ssn_mark = 1ull << 40;
    assert_peer_equal(&got, &p);
    edhoc_state_close(db);
}

static void test_unknown_id_not_found(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p, got;
    make_peer(&p, 3); /* no ID Context */
    assert_false(p.has_id_context);
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);

    const uint8_t other[] = {0x00, 0x00, 0x00, 0x02};
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 0, other, sizeof other, 5),
                     EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_get_peer(db, NULL, 0, other, sizeof other, &got),
                     EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_delete_peer(db, NULL, 0, other, sizeof other),
                     EDHOC_STATE_ERR_NOT_FOUND);
    /* A prefix of a stored ID is a different ID. */
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 0, p.recipient_id, 3, 5),
                     EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 0, NULL, 0, 5), EDHOC_STATE_ERR_NOT_FOUND);

    assert_int_equal(edhoc_state_delete_peer(db, KEY(p)), 0);
    assert_int_equal(edhoc_state_count(db), 0);
    assert_int_equal(edhoc_state_get_peer(db, KEY(p), &got), EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 5), EDHOC_STATE_ERR_NOT_FOUND);
    edhoc_state_close(db);
}

static void test_bad_arguments(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = NULL;
    char why[256];
    assert_int_equal(edhoc_state_open(NULL, &db, why, sizeof why), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_open(f->sdir, NULL, why, sizeof why), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_open("", &db, why, sizeof why), EDHOC_STATE_ERR_ARG);

    db = open_ok(f->sdir);
    struct edhoc_state_peer p;
    uint8_t long_id[EDHOC_STATE_MAX_ID + 1] = {0};
    make_peer(&p, 1);
    p.recipient_id_len = EDHOC_STATE_MAX_ID + 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    make_peer(&p, 1);
    p.master_secret_len = EDHOC_STATE_MAX_SECRET + 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    make_peer(&p, 1);
    p.master_salt_len = EDHOC_STATE_MAX_SALT + 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    make_peer(&p, 1);
    p.id_context_len = EDHOC_STATE_MAX_ID_CONTEXT + 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    /* An ID Context length without an ID Context would make two rows of
     * one key. */
    make_peer(&p, 3);
    assert_false(p.has_id_context);
    p.id_context_len = 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    make_peer(&p, 1);
    p.sender_id_len = EDHOC_STATE_MAX_ID + 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    make_peer(&p, 1);
    p.ssn_mark = (uint64_t)INT64_MAX + 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    make_peer(&p, 1);
    memset(p.peer, 'a', sizeof p.peer); /* no NUL */
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_put_peer(db, NULL), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_count(db), 0);

    make_peer(&p, 1);
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    uint8_t long_idc[EDHOC_STATE_MAX_ID_CONTEXT + 1] = {0};
    struct edhoc_state_peer got;
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 0, long_id, sizeof long_id, 1),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(
        edhoc_state_store_ssn(db, long_idc, sizeof long_idc, p.recipient_id, p.recipient_id_len, 1),
        EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 1, p.recipient_id, p.recipient_id_len, 1),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_get_peer(db, NULL, 1, p.recipient_id, p.recipient_id_len, &got),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), (uint64_t)INT64_MAX + 1),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_store_ssn(NULL, NULL, 0, p.recipient_id, 1, 1),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_delete_peer(db, NULL, 0, long_id, sizeof long_id),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(
        edhoc_state_delete_peer(db, long_idc, sizeof long_idc, p.recipient_id, p.recipient_id_len),
        EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_for_each_peer(db, NULL, NULL), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_count(NULL), EDHOC_STATE_ERR_ARG);
    assert_true(get_mark(db, &p) == p.ssn_mark);
    edhoc_state_close(db);
    edhoc_state_close(NULL);

    assert_string_equal(edhoc_state_strerror(EDHOC_STATE_ERR_FOREIGN),
                        "not an edhoc-cli state database");
}

static int nested_fn(void *ctx, const struct edhoc_state_peer *p)
{
    (void)p;
    struct edhoc_state_db *db = ctx;
    struct collect c = {.stop_at = -1};
    return edhoc_state_for_each_peer(db, collect_fn, &c) == EDHOC_STATE_ERR_ARG ? 11 : 12;
}

static void test_for_each_early_stop_and_count(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 0);
    struct collect c = {.stop_at = -1};
    assert_int_equal(edhoc_state_for_each_peer(db, collect_fn, &c), 0);
    assert_int_equal(c.n, 0);

    /* Put in reverse order; iteration is by recipient ID. */
    struct edhoc_state_peer p[5];
    for (int i = 4; i >= 0; i--) {
        make_peer(&p[i], (uint32_t)i + 10);
        assert_int_equal(edhoc_state_put_peer(db, &p[i]), 0);
        assert_int_equal(edhoc_state_count(db), 5 - i);
    }

    c = (struct collect){.stop_at = 2};
    assert_int_equal(edhoc_state_for_each_peer(db, collect_fn, &c), 7);
    assert_int_equal(c.n, 3);
    for (int i = 0; i < 3; i++)
        assert_peer_equal(&c.got[i], &p[i]);

    /* The iteration after an early stop starts from the beginning. */
    c = (struct collect){.stop_at = -1};
    assert_int_equal(edhoc_state_for_each_peer(db, collect_fn, &c), 0);
    assert_int_equal(c.n, 5);
    for (int i = 0; i < 5; i++)
        assert_peer_equal(&c.got[i], &p[i]);

    assert_int_equal(edhoc_state_for_each_peer(db, nested_fn, db), 11);

    assert_int_equal(edhoc_state_delete_peer(db, KEY(p[1])), 0);
    assert_int_equal(edhoc_state_count(db), 4);
    edhoc_state_close(db);
    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 4);
    edhoc_state_close(db);
}

static void test_transactions(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p;
    assert_int_equal(edhoc_state_commit(db), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_rollback(db), EDHOC_STATE_ERR_ARG);

    assert_int_equal(edhoc_state_begin(db), 0);
    assert_int_equal(edhoc_state_begin(db), EDHOC_STATE_ERR_ARG);
    for (uint32_t i = 0; i < 3; i++) {
        make_peer(&p, i);
        assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    }
    assert_int_equal(edhoc_state_count(db), 3);
    assert_int_equal(edhoc_state_rollback(db), 0);
    assert_int_equal(edhoc_state_count(db), 0);

    assert_int_equal(edhoc_state_begin(db), 0);
    for (uint32_t i = 0; i < 3; i++) {
        make_peer(&p, i);
        assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    }
    make_peer(&p, 1);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), p.ssn_mark + 5), 0);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 0), 0);
    assert_int_equal(edhoc_state_commit(db), 0);
    edhoc_state_close(db);

    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 3);
    assert_true(get_mark(db, &p) == p.ssn_mark + 5);
    /* Closing with a transaction open discards it. */
    assert_int_equal(edhoc_state_begin(db), 0);
    assert_int_equal(edhoc_state_delete_peer(db, KEY(p)), 0);
    edhoc_state_close(db);
    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 3);
    edhoc_state_close(db);
}

/* ---- refusal of files that are not ours ---- */

/* A context with recipient ID 0x01 and the given ID Context (NULL: none),
 * its keying material and mark depending on n. */
static void make_keyed(struct edhoc_state_peer *p, const uint8_t *idc, size_t idc_len, uint32_t n)
{
    make_peer(p, n);
    p->recipient_id[0] = 0x01;
    p->recipient_id_len = 1;
    p->has_id_context = idc != NULL;
    p->id_context_len = idc_len;
    if (idc_len)
        memcpy(p->id_context, idc, idc_len);
    p->ssn_mark = 1000u * n;
}

/* RFC 8613 Section 3.3: "The ID Context is used to distinguish between
 * security contexts", so contexts sharing a Recipient ID are separate
 * rows: put, get, store_ssn and delete on one leave the others alone. */
static void test_same_recipient_id_different_id_contexts(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    static const uint8_t idc_b[] = {0x37, 0xcb, 0xf3, 0x21, 0x00, 0x17, 0xa2, 0xd3};
    static const uint8_t idc_d[] = {0x44, 0x61, 0x6c, 0x65, 0x6b};
    struct edhoc_state_peer none, empty, b, d, got;
    make_keyed(&b, idc_b, sizeof idc_b, 2);
    make_keyed(&none, NULL, 0, 1);
    make_keyed(&d, idc_d, sizeof idc_d, 4);
    make_keyed(&empty, idc_b, 0, 3);
    assert_int_equal(edhoc_state_put_peer(db, &b), 0);
    assert_int_equal(edhoc_state_put_peer(db, &none), 0);
    assert_int_equal(edhoc_state_put_peer(db, &d), 0);
    assert_int_equal(edhoc_state_put_peer(db, &empty), 0);
    assert_int_equal(edhoc_state_count(db), 4);
    const struct edhoc_state_peer *all[] = {&none, &empty, &b, &d};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(edhoc_state_get_peer(db, KEY(*all[i]), &got), 0);
        assert_peer_equal(&got, all[i]);
    }
    /* Iteration: by recipient ID, no ID Context first, then by ID Context. */
    struct collect c = {.stop_at = -1};
    assert_int_equal(edhoc_state_for_each_peer(db, collect_fn, &c), 0);
    assert_int_equal(c.n, 4);
    for (size_t i = 0; i < 4; i++)
        assert_peer_equal(&c.got[i], all[i]);

    /* store_ssn raises the mark of the named context only. */
    assert_int_equal(edhoc_state_store_ssn(db, KEY(b), 5555), 0);
    assert_true(get_mark(db, &b) == 5555);
    assert_true(get_mark(db, &none) == 1000);
    assert_true(get_mark(db, &empty) == 3000);
    assert_true(get_mark(db, &d) == 4000);

    /* A put with new keying material under d's key restarts d only. */
    struct edhoc_state_peer d2;
    make_keyed(&d2, idc_d, sizeof idc_d, 9);
    d2.ssn_mark = 7;
    assert_int_equal(edhoc_state_put_peer(db, &d2), 0);
    assert_int_equal(edhoc_state_count(db), 4);
    assert_true(get_mark(db, &d) == 7);
    assert_true(get_mark(db, &b) == 5555);
    assert_int_equal(edhoc_state_get_peer(db, KEY(b), &got), 0);
    b.ssn_mark = 5555;
    assert_peer_equal(&got, &b);

    /* Deleting one leaves the others, across a reopen too. */
    assert_int_equal(edhoc_state_delete_peer(db, KEY(b)), 0);
    assert_int_equal(edhoc_state_get_peer(db, KEY(b), &got), EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(b), 6000), EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_delete_peer(db, KEY(b)), EDHOC_STATE_ERR_NOT_FOUND);
    edhoc_state_close(db);
    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 3);
    assert_true(get_mark(db, &none) == 1000);
    assert_true(get_mark(db, &empty) == 3000);
    assert_true(get_mark(db, &d) == 7);
    edhoc_state_close(db);
}

/* RFC 8613 Section 3.2.1: id_context "is the ID Context, or nil if ID
 * Context is not provided" -- nil and an empty byte string derive
 * different keys, so they are different contexts, not one. */
static void test_absent_and_empty_id_context_distinct(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    static const uint8_t empty_idc[1] = {0};
    struct edhoc_state_peer none, got;
    make_keyed(&none, NULL, 0, 1);
    assert_int_equal(edhoc_state_put_peer(db, &none), 0);
    /* An empty ID Context is not "none". */
    assert_int_equal(edhoc_state_get_peer(db, empty_idc, 0, none.recipient_id, 1, &got),
                     EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_store_ssn(db, empty_idc, 0, none.recipient_id, 1, 5000),
                     EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_delete_peer(db, empty_idc, 0, none.recipient_id, 1),
                     EDHOC_STATE_ERR_NOT_FOUND);
    assert_true(get_mark(db, &none) == 1000);

    /* Adding the empty one adds a row; each keeps its own mark. */
    struct edhoc_state_peer empty;
    make_keyed(&empty, empty_idc, 0, 2);
    assert_int_equal(edhoc_state_put_peer(db, &empty), 0);
    assert_int_equal(edhoc_state_count(db), 2);
    assert_int_equal(edhoc_state_store_ssn(db, empty_idc, 0, none.recipient_id, 1, 5000), 0);
    assert_true(get_mark(db, &empty) == 5000);
    assert_true(get_mark(db, &none) == 1000);
    assert_int_equal(edhoc_state_get_peer(db, NULL, 0, none.recipient_id, 1, &got), 0);
    assert_false(got.has_id_context);
    assert_int_equal(edhoc_state_get_peer(db, empty_idc, 0, none.recipient_id, 1, &got), 0);
    assert_true(got.has_id_context);
    assert_int_equal(got.id_context_len, 0);
    assert_int_equal(edhoc_state_delete_peer(db, NULL, 0, none.recipient_id, 1), 0);
    assert_int_equal(edhoc_state_count(db), 1);
    assert_true(get_mark(db, &empty) == 5000);
    edhoc_state_close(db);
}

/* ---- migration from schema version 1 ---- */

static int64_t get_used(struct edhoc_state_db *db, const struct edhoc_state_peer *key)
{
    struct edhoc_state_peer p;
    assert_int_equal(edhoc_state_get_peer(db, KEY(*key), &p), 0);
    return p.last_used;
}

/* Contexts last used at the same millisecond: keeping N of them keeps the
 * highest keys (the lowest go first, as a restart loads ties oldest first
 * in key order); a bound at or above the count deletes nothing. */
static void test_prune_ties(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p[6];
    for (uint32_t i = 0; i < 6; i++) {
        make_peer(&p[i], 10 + i);
        p[i].method = 0;
        p[i].last_used = i < 4 ? 7000 : 8000 + i;
        assert_int_equal(edhoc_state_put_peer(db, &p[i]), 0);
    }
    uint64_t expired = 9, evicted = 9;
    assert_int_equal(edhoc_state_prune(db, 0, 6, &expired, &evicted), 0);
    assert_true(expired == 0 && evicted == 0);
    /* Keep 4: 8004, 8005, and two of the four at 7000 (keys 12, 13). */
    assert_int_equal(edhoc_state_prune(db, 0, 4, &expired, &evicted), 0);
    assert_true(evicted == 2);
    struct edhoc_state_peer g;
    for (uint32_t i = 0; i < 6; i++)
        assert_int_equal(edhoc_state_get_peer(db, KEY(p[i]), &g),
                         i < 2 ? EDHOC_STATE_ERR_NOT_FOUND : 0);
    /* Keep 1: the most recent only. */
    assert_int_equal(edhoc_state_prune(db, 0, 1, NULL, &evicted), 0);
    assert_true(evicted == 3);
    assert_int_equal(edhoc_state_get_peer(db, KEY(p[5]), &g), 0);
    assert_int_equal(edhoc_state_count(db), 1);
    edhoc_state_close(db);
}

static int prune_fn(void *ctx, const struct edhoc_state_peer *p)
{
    (void)p;
    return edhoc_state_prune(ctx, 0, 0, NULL, NULL);
}

/* Issue #15: "--max-contexts N with least-recently-used eviction,
 * --context-lifetime (idle expiry), both applied to the SQLite store as
 * well (rows deleted with their marks; a restart loads at most N)".
 * Contexts 1..6 (EDHOC runs) last used at 1000..6000 ms, context 1 used
 * again at 10000; two static contexts (method -1) older than all. */
static void test_prune_least_recently_used(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p[9];
    for (uint32_t i = 1; i <= 8; i++) {
        make_peer(&p[i], i);
        p[i].method = i <= 6 ? 3 : -1;
        p[i].last_used = i <= 6 ? (int64_t)i * 1000 : 1;
        assert_int_equal(edhoc_state_put_peer(db, &p[i]), 0);
        assert_true(get_used(db, &p[i]) == p[i].last_used);
    }
    /* put with no use time: its creation. */
    struct edhoc_state_peer fresh;
    make_peer(&fresh, 99);
    assert_int_equal(edhoc_state_put_peer(db, &fresh), 0);
    assert_true(get_used(db, &fresh) == fresh.created * 1000);
    assert_int_equal(edhoc_state_delete_peer(db, KEY(fresh)), 0);

    assert_int_equal(edhoc_state_touch_peer(db, KEY(p[1]), 10000), 0);
    /* The caller's time is the one stored, earlier or later. */
    assert_int_equal(edhoc_state_touch_peer(db, KEY(p[2]), 500), 0);
    assert_true(get_used(db, &p[2]) == 500);
    assert_int_equal(edhoc_state_touch_peer(db, KEY(p[2]), 2000), 0);
    assert_true(get_used(db, &p[2]) == 2000);
    assert_int_equal(edhoc_state_touch_peer(db, KEY(fresh), 500), EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_touch_peer(db, KEY(p[2]), -1), EDHOC_STATE_ERR_ARG);

    /* Pruning inside a transaction that is rolled back changes nothing:
     * deletes share the transaction of the writes around them. */
    assert_int_equal(edhoc_state_begin(db), 0);
    uint64_t expired = 9, evicted = 9;
    assert_int_equal(edhoc_state_prune(db, 2500, 3, &expired, &evicted), 0);
    assert_true(expired == 1 && evicted == 2);
    assert_int_equal(edhoc_state_rollback(db), 0);
    assert_int_equal(edhoc_state_count(db), 8);

    /* Idle before 2500 ms: context 2. Then the 3 most recently used stay
     * (1, 6, 5): 3 and 4 go. Static contexts are never pruned. */
    assert_int_equal(edhoc_state_prune(db, 2500, 3, &expired, &evicted), 0);
    assert_true(expired == 1);
    assert_true(evicted == 2);
    assert_int_equal(edhoc_state_count(db), 5);
    static const int kept[] = {1, 5, 6, 7, 8}, gone[] = {2, 3, 4};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        assert_true(get_mark(db, &p[kept[i]]) == p[kept[i]].ssn_mark);
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        struct edhoc_state_peer g;
        /* The row and its mark are gone together. */
        assert_int_equal(edhoc_state_get_peer(db, KEY(p[gone[i]]), &g), EDHOC_STATE_ERR_NOT_FOUND);
        assert_int_equal(edhoc_state_store_ssn(db, KEY(p[gone[i]]), 1u << 30),
                         EDHOC_STATE_ERR_NOT_FOUND);
    }
    /* No bound and no age: nothing goes; keep 0: every EDHOC one. */
    assert_int_equal(edhoc_state_prune(db, 0, UINT64_MAX, &expired, &evicted), 0);
    assert_true(expired == 0 && evicted == 0);
    assert_int_equal(edhoc_state_prune(db, 0, 0, NULL, &evicted), 0);
    assert_true(evicted == 3);
    assert_int_equal(edhoc_state_count(db), 2);

    /* Not while an iteration runs (it would delete rows under it). */
    assert_int_equal(edhoc_state_for_each_peer(db, prune_fn, db), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_count(db), 2);
    edhoc_state_close(db);
}

/* ---- crash safety ---- */

int main(void)
{
    /* Files the tests write stand for ones the tool made (0600); the
     * tests of modes set their own. */
    umask(077);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_every_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_ssn_never_lowers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_id_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_for_each_early_stop_and_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transactions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_recipient_id_different_id_contexts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_absent_and_empty_id_context_distinct, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_least_recently_used, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_ties, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
