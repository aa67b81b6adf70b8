/*
 * The responder engine's lookup structures (edhoc/server_tables.h): what
 * made a message_1 cost 48% more CPU at --max-pending 65536 than at 256
 * was linear scans of the pending handshakes, repeated for each C_R
 * candidate. Here every lookup walks one hash chain and the C_R choice
 * reads counters instead of trying values; links are 32-bit indices into
 * a pool, so that a context with its chain and recency links stays within
 * 256 bytes.
 */
#include "edhoc/server_tables.h"

#include <stdlib.h>
#include <string.h>

/* ---- SipHash-1-3 (Aumasson and Bernstein), little-endian words ---- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = ROTL(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = ROTL(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = ROTL(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = ROTL(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = ROTL(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = ROTL(v2, 32);                                                                         \
    } while (0)

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

uint64_t edhoc_tab_hash(const struct edhoc_tab_seed *seed, const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t v0 = 0x736f6d6570736575ull ^ seed->k0;
    uint64_t v1 = 0x646f72616e646f6dull ^ seed->k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ seed->k0;
    uint64_t v3 = 0x7465646279746573ull ^ seed->k1;
    size_t whole = len & ~(size_t)7;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = le64(p + i);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < (len & 7); i++)
        b |= (uint64_t)p[whole + i] << (8 * i);
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- Pool ---- */

int edhoc_pool_init(struct edhoc_pool *p, size_t entry_size, uint32_t max)
{
    memset(p, 0, sizeof *p);
    if (entry_size < sizeof(uint32_t) || max == 0 || max == UINT32_MAX)
        return -1;
    p->entry_size = entry_size;
    p->max = max;
    p->next_fresh = 1;
    /* Chunks no larger than the pool needs, at most 4096 entries. */
    p->shift = 0;
    while (p->shift < EDHOC_POOL_CHUNK_SHIFT && ((uint64_t)1 << p->shift) <= max)
        p->shift++;
    return 0;
}

void edhoc_pool_free(struct edhoc_pool *p)
{
    for (size_t i = 0; i < p->n_chunks; i++)
        free(p->chunks[i]);
    free(p->chunks);
    p->chunks = NULL;
    p->n_chunks = p->cap_chunks = 0;
    p->next_fresh = 1;
    p->free_head = EDHOC_NONE;
    p->in_use = 0;
}

/* Make sure the chunk holding index i exists. */
static int chunk_for(struct edhoc_pool *p, uint32_t i)
{
    size_t chunk = i >> p->shift;
    if (chunk < p->n_chunks)
        return 0;
    if (chunk >= p->cap_chunks) {
        size_t cap = p->cap_chunks ? p->cap_chunks * 2 : 16;
        while (cap <= chunk)
            cap *= 2;
        uint8_t **nc = realloc(p->chunks, cap * sizeof *nc);
        if (!nc)
            return -1;
        p->chunks = nc;
        p->cap_chunks = cap;
    }
    while (p->n_chunks <= chunk) {
        /* calloc: a chunk's pages are touched only as its entries are. */
        p->chunks[p->n_chunks] = calloc((size_t)1 << p->shift, p->entry_size);
        if (!p->chunks[p->n_chunks])
            return -1;
        p->n_chunks++;
    }
    return 0;
}

int edhoc_pool_prealloc(struct edhoc_pool *p)
{
    return chunk_for(p, p->max);
}

uint32_t edhoc_pool_alloc(struct edhoc_pool *p)
{
    uint32_t i = p->free_head;
    if (i != EDHOC_NONE) {
        uint8_t *e = edhoc_pool_at(p, i);
        memcpy(&p->free_head, e, sizeof p->free_head);
        memset(e, 0, sizeof(uint32_t));
        p->in_use++;
        return i;
    }
    if (p->next_fresh > p->max)
        return EDHOC_NONE;
    i = p->next_fresh;
    if (chunk_for(p, i))
        return EDHOC_NONE;
    p->next_fresh++;
    p->in_use++;
    return i;
}

void edhoc_pool_release(struct edhoc_pool *p, uint32_t i)
{
    if (i == EDHOC_NONE || i >= p->next_fresh)
        return;
    uint8_t *e = edhoc_pool_at(p, i);
    memset(e, 0, p->entry_size);
    memcpy(e, &p->free_head, sizeof p->free_head);
    p->free_head = i;
    p->in_use--;
}

/* ---- Hash table of pool entries ---- */

static uint32_t *chain_link(const struct edhoc_itab *t, uint32_t i)
{
    return (uint32_t *)(void *)((uint8_t *)edhoc_pool_at(t->pool, i) + t->link);
}

int edhoc_itab_init(struct edhoc_itab *t, const struct edhoc_pool *pool, size_t link,
                    uint64_t (*hash_of)(const void *entry, void *user), void *user, size_t expected)
{
    size_t n = 16;
    while (n < expected && n < ((size_t)1 << 40))
        n <<= 1;
    t->buckets = calloc(n, sizeof *t->buckets);
    t->mask = n - 1;
    t->count = 0;
    t->pool = pool;
    t->link = link;
    t->hash_of = hash_of;
    t->user = user;
    return t->buckets ? 0 : -1;
}

void edhoc_itab_free(struct edhoc_itab *t)
{
    free(t->buckets);
    t->buckets = NULL;
    t->mask = 0;
    t->count = 0;
}

/* Double the buckets. Old bucket b splits into new buckets b and b + old
 * size; appending at each one's tail keeps the order within a chain. */
static void grow(struct edhoc_itab *t)
{
    size_t old = t->mask + 1;
    if (!t->hash_of || old > SIZE_MAX / 2 / sizeof *t->buckets)
        return;
    uint32_t *nb = calloc(old * 2, sizeof *nb);
    if (!nb)
        return;
    for (size_t b = 0; b < old; b++) {
        uint32_t *tail_lo = &nb[b], *tail_hi = &nb[b + old];
        for (uint32_t i = t->buckets[b], next; i != EDHOC_NONE; i = next) {
            uint32_t *link = chain_link(t, i);
            next = *link;
            *link = EDHOC_NONE;
            uint64_t h = t->hash_of(edhoc_pool_at(t->pool, i), t->user);
            uint32_t **tail = (h & old) ? &tail_hi : &tail_lo;
            **tail = i;
            *tail = link;
        }
    }
    free(t->buckets);
    t->buckets = nb;
    t->mask = old * 2 - 1;
}

void edhoc_itab_insert(struct edhoc_itab *t, uint32_t i, uint64_t hash)
{
    if (t->count >= t->mask + 1)
        grow(t);
    uint32_t *b = &t->buckets[hash & t->mask];
    *chain_link(t, i) = *b;
    *b = i;
    t->count++;
}

void edhoc_itab_remove(struct edhoc_itab *t, uint32_t i, uint64_t hash)
{
    for (uint32_t *pp = &t->buckets[hash & t->mask]; *pp != EDHOC_NONE; pp = chain_link(t, *pp)) {
        if (*pp == i) {
            uint32_t *link = chain_link(t, i);
            *pp = *link;
            *link = EDHOC_NONE;
            t->count--;
            return;
        }
    }
}

uint32_t edhoc_itab_first(const struct edhoc_itab *t, uint64_t hash)
{
    return t->buckets[hash & t->mask];
}

uint32_t edhoc_itab_next(const struct edhoc_itab *t, uint32_t i)
{
    return *chain_link(t, i);
}

/* ---- Recency list of pool entries ---- */

static struct edhoc_ilink *ilink(const struct edhoc_ilru *l, uint32_t i)
{
    return (struct edhoc_ilink *)(void *)((uint8_t *)edhoc_pool_at(l->pool, i) + l->link);
}

void edhoc_ilru_init(struct edhoc_ilru *l, const struct edhoc_pool *pool, size_t link)
{
    l->newest = l->oldest = EDHOC_NONE;
    l->count = 0;
    l->pool = pool;
    l->link = link;
}

void edhoc_ilru_push(struct edhoc_ilru *l, uint32_t i)
{
    struct edhoc_ilink *n = ilink(l, i);
    n->newer = EDHOC_NONE;
    n->older = l->newest;
    if (l->newest != EDHOC_NONE)
        ilink(l, l->newest)->newer = i;
    else
        l->oldest = i;
    l->newest = i;
    l->count++;
}

bool edhoc_ilru_linked(const struct edhoc_ilru *l, uint32_t i)
{
    const struct edhoc_ilink *n = ilink(l, i);
    return n->newer != EDHOC_NONE || n->older != EDHOC_NONE || l->newest == i;
}

void edhoc_ilru_remove(struct edhoc_ilru *l, uint32_t i)
{
    if (!edhoc_ilru_linked(l, i))
        return;
    struct edhoc_ilink *n = ilink(l, i);
    if (n->newer != EDHOC_NONE)
        ilink(l, n->newer)->older = n->older;
    else
        l->newest = n->older;
    if (n->older != EDHOC_NONE)
        ilink(l, n->older)->newer = n->newer;
    else
        l->oldest = n->newer;
    n->newer = n->older = EDHOC_NONE;
    l->count--;
}

void edhoc_ilru_touch(struct edhoc_ilru *l, uint32_t i)
{
    if (l->newest == i)
        return;
    edhoc_ilru_remove(l, i);
    edhoc_ilru_push(l, i);
}

uint32_t edhoc_ilru_older(const struct edhoc_ilru *l, uint32_t i)
{
    return ilink(l, i)->older;
}

uint32_t edhoc_ilru_newer(const struct edhoc_ilru *l, uint32_t i)
{
    return ilink(l, i)->newer;
}

/* Cut a chain (linked by `newer`) after k entries; the rest, or NONE. */
static uint32_t chain_split(const struct edhoc_ilru *l, uint32_t i, size_t k)
{
    for (size_t n = 1; i != EDHOC_NONE && n < k; n++)
        i = ilink(l, i)->newer;
    if (i == EDHOC_NONE)
        return EDHOC_NONE;
    uint32_t rest = ilink(l, i)->newer;
    ilink(l, i)->newer = EDHOC_NONE;
    return rest;
}

void edhoc_ilru_sort(struct edhoc_ilru *l, int (*cmp)(const void *a, const void *b))
{
    if (l->count < 2)
        return;
    /* Bottom-up merge sort of the chain oldest -> newest: runs of width
     * 1, 2, 4, ... merged pairwise, the older of equals first (stable). */
    uint32_t head = l->oldest;
    for (size_t width = 1; width < l->count; width *= 2) {
        uint32_t rest = head, *tail = &head;
        while (rest != EDHOC_NONE) {
            uint32_t a = rest, b = chain_split(l, a, width);
            rest = chain_split(l, b, width);
            while (a != EDHOC_NONE && b != EDHOC_NONE) {
                uint32_t *take =
                    cmp(edhoc_pool_at(l->pool, b), edhoc_pool_at(l->pool, a)) < 0 ? &b : &a;
                *tail = *take;
                tail = &ilink(l, *take)->newer;
                *take = *tail;
            }
            *tail = a != EDHOC_NONE ? a : b;
            while (*tail != EDHOC_NONE)
                tail = &ilink(l, *tail)->newer;
        }
    }
    /* The back links and the ends. */
    uint32_t prev = EDHOC_NONE;
    for (uint32_t i = head; i != EDHOC_NONE; i = ilink(l, i)->newer) {
        ilink(l, i)->older = prev;
        prev = i;
    }
    l->oldest = head;
    l->newest = prev;
}

/* ---- Connection identifiers in use ---- */

void edhoc_cid_space_init(struct edhoc_cid_space *s)
{
    memset(s, 0, sizeof *s);
}

void edhoc_cid_space_add(struct edhoc_cid_space *s, const uint8_t *c, size_t len)
{
    if (len == 0 || len > EDHOC_CID_SPACE_MAX_LEN)
        return;
    s->by_len[len]++;
    if (len == 1 && s->one[c[0]]++ == 0)
        s->used[c[0] / 64] |= (uint64_t)1 << (c[0] % 64);
}

void edhoc_cid_space_remove(struct edhoc_cid_space *s, const uint8_t *c, size_t len,
                            uint64_t hold_until_ms)
{
    if (len == 0 || len > EDHOC_CID_SPACE_MAX_LEN || s->by_len[len] == 0)
        return;
    s->by_len[len]--;
    if (len != 1 || s->one[c[0]] == 0)
        return;
    uint64_t bit = (uint64_t)1 << (c[0] % 64);
    if (--s->one[c[0]] == 0)
        s->used[c[0] / 64] &= ~bit;
    if (hold_until_ms > s->one_held_until[c[0]]) {
        s->one_held_until[c[0]] = hold_until_ms;
        s->held[c[0] / 64] |= bit;
    }
}

bool edhoc_cid_space_one_used(const struct edhoc_cid_space *s, uint8_t b)
{
    return s->one[b] != 0;
}

static unsigned popcount64(uint64_t v)
{
    return (unsigned)__builtin_popcountll(v);
}

int edhoc_cid_space_pick_one(struct edhoc_cid_space *s, const uint64_t allowed[4], int avoid,
                             uint64_t now_ms, uint32_t r)
{
    uint64_t cand[4];
    unsigned total = 0;
    for (int w = 0; w < 4; w++) {
        /* Holds that ended are forgotten here, once each. */
        for (uint64_t h = s->held[w]; h; h &= h - 1) {
            int b = w * 64 + __builtin_ctzll(h);
            if (s->one_held_until[b] <= now_ms) {
                s->held[w] &= ~((uint64_t)1 << (b % 64));
                s->one_held_until[b] = 0;
            }
        }
        cand[w] = allowed[w] & ~s->used[w] & ~s->held[w];
        if (avoid >= 0 && avoid / 64 == w)
            cand[w] &= ~((uint64_t)1 << (avoid % 64));
        total += popcount64(cand[w]);
    }
    if (!total)
        return -1;
    unsigned k = r % total;
    for (int w = 0; w < 4; w++) {
        unsigned pc = popcount64(cand[w]);
        if (k >= pc) {
            k -= pc;
            continue;
        }
        uint64_t v = cand[w];
        while (k--)
            v &= v - 1;
        return w * 64 + __builtin_ctzll(v);
    }
    return -1;
}

size_t edhoc_cid_space_len(const struct edhoc_cid_space *s, size_t max_len)
{
    if (max_len > EDHOC_CID_SPACE_MAX_LEN)
        max_len = EDHOC_CID_SPACE_MAX_LEN;
    for (size_t len = 2; len <= max_len; len++) {
        uint64_t space = (uint64_t)1 << (8 * len);
        if (s->by_len[len] < space / 2)
            return len;
    }
    return max_len;
}
