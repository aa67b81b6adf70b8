/*
 * The responder engine's lookup tables (src/server/server_tables.c) on their
 * own: the pool of indexed entries, the hash table under collision-heavy
 * keys, deletion, reuse and growth; the recency list and its sort; and the
 * C_R choice's counters when most one-byte C_Rs are taken. Issue #15, "Constant-time lookups":
 * pending handshakes by C_R and by bare peer address, contexts by
 * (ID Context, Recipient ID) and the free-C_R search all O(1) expected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "edhoc/server_tables.h"

struct item {
    uint32_t chain;
    struct edhoc_ilink lru;
    uint32_t key;
    int id;
};

static struct edhoc_tab_seed test_seed = {0x0123456789abcdefull, 0xfedcba9876543210ull};

static uint64_t item_hash(const void *entry, void *user)
{
    (void)user;
    const struct item *it = entry;
    return edhoc_tab_hash(&test_seed, &it->key, sizeof it->key);
}

/* Every hash equal: the worst a collision attack could reach. */
static uint64_t same_hash(const void *entry, void *user)
{
    (void)entry, (void)user;
    return 42;
}

static struct item *at(struct edhoc_pool *p, uint32_t i)
{
    return edhoc_pool_at(p, i);
}

static size_t chain_count(struct edhoc_itab *t, uint64_t h, uint32_t key, struct edhoc_pool *p)
{
    size_t n = 0;
    for (uint32_t i = edhoc_itab_first(t, h); i != EDHOC_NONE; i = edhoc_itab_next(t, i))
        n += at(p, i)->key == key;
    return n;
}

/* The hash is keyed: another seed, other chains (a peer cannot aim its
 * addresses at one chain without knowing the seed). */
static void test_hash_keyed(void **state)
{
    (void)state;
    struct edhoc_tab_seed a = {1, 2}, b = {1, 3};
    const char *peer = "192.0.2.1:5683";
    assert_true(edhoc_tab_hash(&a, peer, strlen(peer)) == edhoc_tab_hash(&a, peer, strlen(peer)));
    assert_true(edhoc_tab_hash(&a, peer, strlen(peer)) != edhoc_tab_hash(&b, peer, strlen(peer)));
    /* Lengths are part of the input: "" and "\0" differ. */
    uint8_t zero = 0;
    assert_true(edhoc_tab_hash(&a, &zero, 0) != edhoc_tab_hash(&a, &zero, 1));
    /* Consecutive keys spread over the low bits the buckets use. */
    unsigned hits[16] = {0};
    for (uint32_t i = 0; i < 16000; i++) {
        uint8_t k[4] = {(uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i};
        hits[edhoc_tab_hash(&a, k, sizeof k) & 15]++;
    }
    for (int i = 0; i < 16; i++)
        assert_true(hits[i] > 800 && hits[i] < 1200);
}

/* Entries named by index: 0 is never one, released entries come back
 * zeroed and first, and the pool stops at its maximum. */
static void test_pool(void **state)
{
    (void)state;
    struct edhoc_pool p;
    assert_int_equal(edhoc_pool_init(&p, 2, 10), -1); /* too small for the free list */
    assert_int_equal(edhoc_pool_init(&p, sizeof(struct item), 5000), 0);
    uint32_t got[5000];
    for (uint32_t k = 0; k < 5000; k++) {
        got[k] = edhoc_pool_alloc(&p);
        assert_int_equal(got[k], k + 1);
        at(&p, got[k])->id = (int)k;
    }
    assert_int_equal(edhoc_pool_alloc(&p), EDHOC_NONE);
    assert_int_equal(p.in_use, 5000);
    /* Entries across the first chunk boundary stay where they were. */
    assert_int_equal(at(&p, 4095)->id, 4094);
    assert_int_equal(at(&p, 4096)->id, 4095);
    assert_int_equal(at(&p, 5000)->id, 4999);
    edhoc_pool_release(&p, 17);
    edhoc_pool_release(&p, 4200);
    assert_int_equal(p.in_use, 4998);
    uint32_t r = edhoc_pool_alloc(&p);
    assert_int_equal(r, 4200);
    assert_int_equal(at(&p, r)->id, 0);
    assert_int_equal(at(&p, r)->key, 0);
    assert_int_equal(edhoc_pool_alloc(&p), 17);
    assert_int_equal(edhoc_pool_alloc(&p), EDHOC_NONE);
    edhoc_pool_free(&p);
    /* Preallocated: every chunk there before the first entry. */
    assert_int_equal(edhoc_pool_init(&p, sizeof(struct item), 9000), 0);
    assert_int_equal(edhoc_pool_prealloc(&p), 0);
    assert_int_equal(p.n_chunks, 3);
    assert_int_equal(edhoc_pool_alloc(&p), 1);
    edhoc_pool_free(&p);
}

/* Every entry under one hash (what a collision attack would aim for):
 * each is found, deletion from the head, middle and tail of the chain
 * keeps the others, and a released index is inserted again. */
static void test_tab_collisions_deletion_reuse(void **state)
{
    (void)state;
    struct edhoc_pool p;
    struct edhoc_itab t;
    assert_int_equal(edhoc_pool_init(&p, sizeof(struct item), 300), 0);
    assert_int_equal(edhoc_itab_init(&t, &p, offsetof(struct item, chain), same_hash, NULL, 64), 0);
    uint32_t idx[200];
    for (int k = 0; k < 200; k++) {
        idx[k] = edhoc_pool_alloc(&p);
        at(&p, idx[k])->id = k;
        edhoc_itab_insert(&t, idx[k], 42);
    }
    assert_int_equal(t.count, 200);
    assert_true(t.mask + 1 >= 200); /* it grew */
    size_t n = 0;
    for (uint32_t i = edhoc_itab_first(&t, 42); i != EDHOC_NONE; i = edhoc_itab_next(&t, i))
        n++;
    assert_int_equal(n, 200);
    /* Newest first, across growth. */
    assert_int_equal(at(&p, edhoc_itab_first(&t, 42))->id, 199);
    edhoc_itab_remove(&t, idx[199], 42); /* head */
    edhoc_itab_remove(&t, idx[100], 42); /* middle */
    edhoc_itab_remove(&t, idx[0], 42);   /* tail */
    bool seen[200] = {false};
    n = 0;
    for (uint32_t i = edhoc_itab_first(&t, 42); i != EDHOC_NONE; i = edhoc_itab_next(&t, i)) {
        seen[at(&p, i)->id] = true;
        n++;
    }
    assert_int_equal(n, 197);
    for (int k = 0; k < 200; k++)
        assert_int_equal(seen[k], k != 199 && k != 100 && k != 0);
    /* Reuse: a released index, given out again, goes back in. */
    edhoc_pool_release(&p, idx[100]);
    uint32_t again = edhoc_pool_alloc(&p);
    assert_int_equal(again, idx[100]);
    at(&p, again)->id = 1000;
    edhoc_itab_insert(&t, again, 42);
    assert_int_equal(at(&p, edhoc_itab_first(&t, 42))->id, 1000);
    assert_int_equal(t.count, 198);
    edhoc_itab_free(&t);
    edhoc_pool_free(&p);
}

/* From 16 buckets to 65536 entries: the table doubles, every entry stays
 * reachable under its hash, chains stay short (a keyed hash over a table
 * sized for its entries), and removal of all of them empties it. */
static void test_tab_growth(void **state)
{
    (void)state;
    struct edhoc_pool p;
    struct edhoc_itab t;
    size_t n = 65536;
    assert_int_equal(edhoc_pool_init(&p, sizeof(struct item), (uint32_t)n), 0);
    assert_int_equal(edhoc_itab_init(&t, &p, offsetof(struct item, chain), item_hash, NULL, 1), 0);
    assert_int_equal(t.mask + 1, 16);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = edhoc_pool_alloc(&p);
        at(&p, i)->key = k / 2; /* pairs share a key (two contexts, one kid) */
        at(&p, i)->id = (int)k;
        edhoc_itab_insert(&t, i, item_hash(at(&p, i), NULL));
    }
    assert_true(t.mask + 1 >= n);
    assert_int_equal(t.count, n);
    size_t longest = 0;
    for (uint32_t key = 0; key < n / 2; key++) {
        uint64_t h = edhoc_tab_hash(&test_seed, &key, sizeof key);
        assert_int_equal(chain_count(&t, h, key, &p), 2);
        /* Newest of the pair first, across growth. */
        uint32_t i = edhoc_itab_first(&t, h);
        while (at(&p, i)->key != key)
            i = edhoc_itab_next(&t, i);
        assert_int_equal(at(&p, i)->id, (int)(2 * key + 1));
        size_t chain = 0;
        for (uint32_t c = edhoc_itab_first(&t, h); c != EDHOC_NONE; c = edhoc_itab_next(&t, c))
            chain++;
        if (chain > longest)
            longest = chain;
    }
    assert_true(longest <= 16);
    for (uint32_t i = 1; i <= n; i++)
        edhoc_itab_remove(&t, i, item_hash(at(&p, i), NULL));
    assert_int_equal(t.count, 0);
    for (size_t b = 0; b <= t.mask; b++)
        assert_int_equal(t.buckets[b], EDHOC_NONE);
    edhoc_itab_free(&t);
    edhoc_pool_free(&p);
}

/* Least recently used order: push makes newest, touch moves to newest,
 * remove unlinks (twice is harmless), the walk goes both ways, and an
 * only entry counts as linked. */
static void test_lru_order(void **state)
{
    (void)state;
    struct edhoc_pool p;
    struct edhoc_ilru l;
    assert_int_equal(edhoc_pool_init(&p, sizeof(struct item), 10), 0);
    edhoc_ilru_init(&l, &p, offsetof(struct item, lru));
    assert_int_equal(edhoc_ilru_oldest(&l), EDHOC_NONE);
    assert_int_equal(edhoc_ilru_newest(&l), EDHOC_NONE);
    uint32_t it[4];
    for (int k = 0; k < 4; k++) {
        it[k] = edhoc_pool_alloc(&p);
        at(&p, it[k])->id = k;
        assert_false(edhoc_ilru_linked(&l, it[k]));
        edhoc_ilru_push(&l, it[k]);
        assert_true(edhoc_ilru_linked(&l, it[k]));
    }
    assert_int_equal(l.count, 4);
    assert_int_equal(at(&p, edhoc_ilru_oldest(&l))->id, 0);
    assert_int_equal(at(&p, edhoc_ilru_newest(&l))->id, 3);
    edhoc_ilru_touch(&l, it[0]);  /* 1 2 3 0 */
    edhoc_ilru_touch(&l, it[0]);  /* already newest */
    edhoc_ilru_remove(&l, it[2]); /* 1 3 0 */
    edhoc_ilru_remove(&l, it[2]);
    assert_int_equal(l.count, 3);
    int order[4], k = 0;
    for (uint32_t i = edhoc_ilru_oldest(&l); i != EDHOC_NONE; i = edhoc_ilru_newer(&l, i))
        order[k++] = at(&p, i)->id;
    assert_int_equal(k, 3);
    assert_int_equal(order[0], 1);
    assert_int_equal(order[1], 3);
    assert_int_equal(order[2], 0);
    k = 0;
    for (uint32_t i = edhoc_ilru_newest(&l); i != EDHOC_NONE; i = edhoc_ilru_older(&l, i))
        order[k++] = at(&p, i)->id;
    assert_int_equal(order[0], 0);
    assert_int_equal(order[2], 1);
    edhoc_ilru_push(&l, it[2]);
    assert_int_equal(at(&p, edhoc_ilru_newest(&l))->id, 2);
    /* Down to one entry, then none. */
    edhoc_ilru_remove(&l, it[1]);
    edhoc_ilru_remove(&l, it[3]);
    edhoc_ilru_remove(&l, it[0]);
    assert_true(edhoc_ilru_linked(&l, it[2]));
    assert_int_equal(edhoc_ilru_oldest(&l), it[2]);
    edhoc_ilru_remove(&l, it[2]);
    assert_false(edhoc_ilru_linked(&l, it[2]));
    assert_int_equal(l.count, 0);
    assert_int_equal(edhoc_ilru_oldest(&l), EDHOC_NONE);
    edhoc_pool_free(&p);
}

static int by_key(const void *a, const void *b)
{
    uint32_t x = ((const struct item *)a)->key, y = ((const struct item *)b)->key;
    return x < y ? -1 : x > y;
}

/* Contexts loaded in key order are put in order of use: the sort orders
 * by the key, keeps equal keys in list order, and leaves a list whose
 * links run both ways (sizes 0, 1, 2, odd and large). */
static void test_lru_sort(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 7, 1000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        struct edhoc_pool p;
        struct edhoc_ilru l;
        assert_int_equal(edhoc_pool_init(&p, sizeof(struct item), 1000), 0);
        edhoc_ilru_init(&l, &p, offsetof(struct item, lru));
        uint32_t x = 12345;
        for (size_t k = 0; k < n; k++) {
            uint32_t i = edhoc_pool_alloc(&p);
            x = x * 1103515245u + 12345u;
            at(&p, i)->key = (x >> 16) % 20; /* ties */
            at(&p, i)->id = (int)k;
            edhoc_ilru_push(&l, i);
        }
        edhoc_ilru_sort(&l, by_key);
        assert_int_equal(l.count, n);
        size_t seen = 0;
        long prev = -1;
        for (uint32_t i = edhoc_ilru_oldest(&l); i != EDHOC_NONE; i = edhoc_ilru_newer(&l, i)) {
            long v = (long)at(&p, i)->key * 100000 + at(&p, i)->id;
            assert_true(prev < v); /* by key, then by position: stable */
            prev = v;
            seen++;
        }
        assert_int_equal(seen, n);
        seen = 0;
        prev = 1L << 40;
        for (uint32_t i = edhoc_ilru_newest(&l); i != EDHOC_NONE; i = edhoc_ilru_older(&l, i)) {
            long v = (long)at(&p, i)->key * 100000 + at(&p, i)->id;
            assert_true(v < prev);
            prev = v;
            seen++;
        }
        assert_int_equal(seen, n);
        if (n) {
            edhoc_ilru_touch(&l, edhoc_ilru_oldest(&l));
            edhoc_ilru_remove(&l, edhoc_ilru_newest(&l));
            assert_int_equal(l.count, n - 1);
        }
        edhoc_pool_free(&p);
    }
}

/* The one-byte C_Rs of the default form (RFC 9528 Section 3.3.2: the int
 * form, 0x00-0x17 and 0x20-0x37), without 0..3 as the engine takes them. */
static void int_form_allowed(uint64_t allowed[4])
{
    memset(allowed, 0, 4 * sizeof *allowed);
    for (unsigned b = 4; b < 256; b++) {
        if (b <= 0x17 || (b >= 0x20 && b <= 0x37))
            allowed[b / 64] |= (uint64_t)1 << (b % 64);
    }
}

/* The free-C_R search when most one-byte C_Rs are taken (issue #15: it
 * used to try up to 64 candidates per message_1): the pick reads the
 * counters and finds the last free value at once, every free value for
 * one r each (uniform), none when all are taken; C_I and held values are
 * skipped until their hold ends. */
static void test_cid_space_pick(void **state)
{
    (void)state;
    struct edhoc_cid_space s;
    edhoc_cid_space_init(&s);
    uint64_t allowed[4];
    int_form_allowed(allowed);
    /* Every allowed value in use but 0x21 and 0x30. */
    for (unsigned b = 0; b < 256; b++) {
        uint8_t c = (uint8_t)b;
        if (b != 0x21 && b != 0x30)
            edhoc_cid_space_add(&s, &c, 1);
    }
    int seen21 = 0, seen30 = 0;
    for (uint32_t r = 0; r < 100; r++) {
        int v = edhoc_cid_space_pick_one(&s, allowed, -1, 0, r);
        assert_true(v == 0x21 || v == 0x30);
        seen21 += v == 0x21;
        seen30 += v == 0x30;
    }
    assert_int_equal(seen21, 50);
    assert_int_equal(seen30, 50);
    /* C_I 0x21: only 0x30 is left. */
    for (uint32_t r = 0; r < 10; r++)
        assert_int_equal(edhoc_cid_space_pick_one(&s, allowed, 0x21, 0, r), 0x30);
    /* 0x30 taken too: none. */
    uint8_t c30 = 0x30;
    edhoc_cid_space_add(&s, &c30, 1);
    assert_int_equal(edhoc_cid_space_pick_one(&s, allowed, 0x21, 0, 5), -1);
    /* Used twice, released once: still used. */
    edhoc_cid_space_add(&s, &c30, 1);
    edhoc_cid_space_remove(&s, &c30, 1, 0);
    assert_true(edhoc_cid_space_one_used(&s, 0x30));
    /* Released with a hold until t=1000: not picked before, picked after. */
    edhoc_cid_space_remove(&s, &c30, 1, 1000);
    assert_false(edhoc_cid_space_one_used(&s, 0x30));
    assert_int_equal(edhoc_cid_space_pick_one(&s, allowed, 0x21, 999, 0), -1);
    assert_int_equal(edhoc_cid_space_pick_one(&s, allowed, 0x21, 1000, 0), 0x30);
    /* Values outside the form never come, even when free. */
    uint8_t c18 = 0x18;
    edhoc_cid_space_remove(&s, &c18, 1, 0);
    assert_false(edhoc_cid_space_one_used(&s, 0x18));
    for (uint32_t r = 0; r < 10; r++)
        assert_int_equal(edhoc_cid_space_pick_one(&s, allowed, 0x30, 2000, r), 0x21);
}

/* Longer C_Rs: the shortest length at which fewer than half the values
 * are taken, so a random candidate is free with probability above 1/2. */
static void test_cid_space_length(void **state)
{
    (void)state;
    struct edhoc_cid_space s;
    edhoc_cid_space_init(&s);
    assert_int_equal(edhoc_cid_space_len(&s, 4), 2);
    uint8_t c[4] = {0};
    for (unsigned i = 0; i < 32767; i++) {
        c[0] = (uint8_t)(i >> 8);
        c[1] = (uint8_t)i;
        edhoc_cid_space_add(&s, c, 2);
    }
    assert_int_equal(edhoc_cid_space_len(&s, 4), 2);
    edhoc_cid_space_add(&s, c, 2);
    assert_int_equal(edhoc_cid_space_len(&s, 4), 3);
    edhoc_cid_space_remove(&s, c, 2, 0);
    assert_int_equal(edhoc_cid_space_len(&s, 4), 2);
    /* Never beyond the longest length asked for. */
    s.by_len[3] = (size_t)1 << 23;
    s.by_len[2] = 40000;
    assert_int_equal(edhoc_cid_space_len(&s, 3), 3);
    assert_int_equal(edhoc_cid_space_len(&s, 4), 4);
    /* Identifiers longer than tracked are ignored, not counted. */
    uint8_t big[8] = {0};
    edhoc_cid_space_add(&s, big, 8);
    edhoc_cid_space_remove(&s, big, 8, 0);
    assert_int_equal(s.by_len[4], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_keyed),
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_tab_collisions_deletion_reuse),
        cmocka_unit_test(test_tab_growth),
        cmocka_unit_test(test_lru_order),
        cmocka_unit_test(test_lru_sort),
        cmocka_unit_test(test_cid_space_pick),
        cmocka_unit_test(test_cid_space_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
