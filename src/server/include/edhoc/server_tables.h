/*
 * edhoc/server_tables.h - the lookup structures of the responder engine
 * (src/server/), sans-I/O and without knowledge of what they index, so
 * that each is tested on its own:
 *
 *   - a pool of fixed-size entries named by 32-bit indices (the OSCORE
 *     contexts, the pending handshakes): links between entries are 4
 *     bytes instead of 8, which keeps a context within 256 bytes;
 *   - a chained hash table of pool entries under a secret-keyed hash
 *     (pending handshakes by C_R and by bare-framing peer address, OSCORE
 *     contexts by Recipient ID);
 *   - a recency list of pool entries (the contexts' least-recently-used
 *     order, the age order of pending handshakes);
 *   - the connection identifiers in use, by length, for a C_R choice that
 *     costs the same however many identifiers are taken.
 *
 * Every operation is O(1) expected. A lookup walks one chain; the key of
 * the hash is drawn from the RNG when the engine starts, so a peer cannot
 * choose addresses that share a chain, and a table sized for its entries
 * keeps chains at one entry on average (the longest is O(log n / log log
 * n) with overwhelming probability).
 */
#ifndef EDHOC_SERVER_TABLES_H
#define EDHOC_SERVER_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* No entry: index 0 is never handed out. */
#define EDHOC_NONE 0u

/* ---- Keyed hash ---- */

/* SipHash-1-3 key: random per process, so chains cannot be aimed at. */
struct edhoc_tab_seed {
    uint64_t k0, k1;
};

uint64_t edhoc_tab_hash(const struct edhoc_tab_seed *seed, const void *data, size_t len);

/* ---- Pool of entries named by index ---- */

#define EDHOC_POOL_CHUNK_SHIFT 12 /* at most 4096 entries per chunk */

/* Chunks are allocated as entries are first needed and never move, so a
 * pointer to an entry stays valid while it is in use. Released entries
 * are zeroed and reused first. */
struct edhoc_pool {
    uint8_t **chunks;
    size_t n_chunks, cap_chunks;
    size_t entry_size;
    unsigned shift;      /* entries per chunk = 1 << shift */
    uint32_t max;        /* highest index handed out */
    uint32_t next_fresh; /* indices below were handed out before */
    uint32_t free_head;  /* released entries, through their first 4 bytes */
    size_t in_use;
};

/* A pool of entries of entry_size bytes (at least 4), indices 1..max.
 * Returns 0 or -1 (bad size). Nothing is allocated yet. */
int edhoc_pool_init(struct edhoc_pool *p, size_t entry_size, uint32_t max);
/* Allocate every chunk now, so that alloc fails only when all max entries
 * are in use. Returns 0 or -1 (memory). */
int edhoc_pool_prealloc(struct edhoc_pool *p);
/* Release the chunks (the caller wipes what entries hold first). */
void edhoc_pool_free(struct edhoc_pool *p);
/* A zeroed entry's index, or EDHOC_NONE (max reached, or no memory). */
uint32_t edhoc_pool_alloc(struct edhoc_pool *p);
/* Zero entry i and keep it for reuse. */
void edhoc_pool_release(struct edhoc_pool *p, uint32_t i);

/* The entry of index i (1..max, handed out before). */
static inline void *edhoc_pool_at(const struct edhoc_pool *p, uint32_t i)
{
    return p->chunks[i >> p->shift] + (size_t)(i & ((1u << p->shift) - 1)) * p->entry_size;
}

/* ---- Hash table of pool entries ---- */

/* Each entry holds its chain link, a uint32_t at offset `link`. The hash
 * is not stored: hash_of recomputes it from the entry when the table
 * grows. */
struct edhoc_itab {
    uint32_t *buckets;
    size_t mask; /* buckets - 1 */
    size_t count;
    const struct edhoc_pool *pool;
    size_t link;
    uint64_t (*hash_of)(const void *entry, void *user);
    void *user;
};

/* A table with buckets for `expected` entries (a power of two at least
 * that, at least 16). The bucket array is calloc'ed, so pages of it that
 * no entry reached cost address space only. Returns 0 or -1 (memory). */
int edhoc_itab_init(struct edhoc_itab *t, const struct edhoc_pool *pool, size_t link,
                    uint64_t (*hash_of)(const void *entry, void *user), void *user,
                    size_t expected);
void edhoc_itab_free(struct edhoc_itab *t);

/* Insert entry i under hash. When the entries outnumber the buckets the
 * table doubles (rehashing every entry once, amortised O(1)); if that
 * allocation fails it keeps its size, with longer chains. Within a chain
 * the newest entry comes first, across growth too. */
void edhoc_itab_insert(struct edhoc_itab *t, uint32_t i, uint64_t hash);
/* Remove entry i, inserted under hash. Walks its chain only. */
void edhoc_itab_remove(struct edhoc_itab *t, uint32_t i, uint64_t hash);

/* The entries of hash's chain: edhoc_itab_first, then edhoc_itab_next
 * until EDHOC_NONE. A chain holds other keys too: the caller compares. */
uint32_t edhoc_itab_first(const struct edhoc_itab *t, uint64_t hash);
uint32_t edhoc_itab_next(const struct edhoc_itab *t, uint32_t i);

/* ---- Recency list of pool entries ---- */

struct edhoc_ilink {
    uint32_t newer, older;
};

/* Each entry holds its struct edhoc_ilink at offset `link`. */
struct edhoc_ilru {
    uint32_t newest, oldest;
    size_t count;
    const struct edhoc_pool *pool;
    size_t link;
};

void edhoc_ilru_init(struct edhoc_ilru *l, const struct edhoc_pool *pool, size_t link);
/* i becomes the newest (i must not be in the list). */
void edhoc_ilru_push(struct edhoc_ilru *l, uint32_t i);
/* i (in the list) becomes the newest. */
void edhoc_ilru_touch(struct edhoc_ilru *l, uint32_t i);
/* Unlink i if it is in the list; harmless otherwise. */
void edhoc_ilru_remove(struct edhoc_ilru *l, uint32_t i);
bool edhoc_ilru_linked(const struct edhoc_ilru *l, uint32_t i);
/* EDHOC_NONE at the ends. */
static inline uint32_t edhoc_ilru_oldest(const struct edhoc_ilru *l)
{
    return l->oldest;
}
static inline uint32_t edhoc_ilru_newest(const struct edhoc_ilru *l)
{
    return l->newest;
}
uint32_t edhoc_ilru_older(const struct edhoc_ilru *l, uint32_t i);
uint32_t edhoc_ilru_newer(const struct edhoc_ilru *l, uint32_t i);
/* Reorder the list, oldest first, by cmp (< 0: entry a is older than
 * entry b); entries that compare equal keep their order. O(n log n), no
 * memory: for a list built in another order (contexts loaded from a
 * database in key order, sorted by their last use). */
void edhoc_ilru_sort(struct edhoc_ilru *l, int (*cmp)(const void *a, const void *b));

/* ---- Connection identifiers in use ---- */

#define EDHOC_CID_SPACE_MAX_LEN 4

/* How many identifiers of each length are in use (an identifier used
 * twice counts twice), and for one-byte identifiers which ones, with the
 * time until which a released one is held back. */
struct edhoc_cid_space {
    uint32_t one[256];            /* users of each one-byte identifier */
    uint64_t one_held_until[256]; /* not chosen again before this time (ms) */
    uint64_t used[4], held[4];    /* bit b: one[b] > 0 / a hold may be running */
    size_t by_len[EDHOC_CID_SPACE_MAX_LEN + 1];
};

void edhoc_cid_space_init(struct edhoc_cid_space *s);
/* An identifier starts / stops being used (lengths above
 * EDHOC_CID_SPACE_MAX_LEN are not tracked). hold_until_ms: a one-byte
 * identifier released by remove is not picked before then (0: at once). */
void edhoc_cid_space_add(struct edhoc_cid_space *s, const uint8_t *c, size_t len);
void edhoc_cid_space_remove(struct edhoc_cid_space *s, const uint8_t *c, size_t len,
                            uint64_t hold_until_ms);
bool edhoc_cid_space_one_used(const struct edhoc_cid_space *s, uint8_t b);

/* A one-byte identifier that `allowed` permits (bit b of allowed[b / 64]),
 * unused, not held back at now_ms, and not `avoid` (-1: none): the
 * (r mod k)-th of the k such values, so a uniform r picks uniformly.
 * Returns it (0..255) or -1 when there is none. Bounded work: four 64-bit
 * words, and one check per value whose hold may have ended. */
int edhoc_cid_space_pick_one(struct edhoc_cid_space *s, const uint64_t allowed[4], int avoid,
                             uint64_t now_ms, uint32_t r);

/* The shortest length from 2 to max_len at which fewer than half of the
 * values are in use (max_len when none is): a random identifier of that
 * length is free with probability above 1/2. */
size_t edhoc_cid_space_len(const struct edhoc_cid_space *s, size_t max_len);

#ifdef __cplusplus
}
#endif
#endif
