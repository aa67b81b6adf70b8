/*
 * The block-wise server's table (RFC 7959, RFC 9175 Section 3) and its
 * limits: the number of transfers, per peer and in all, and the bytes
 * held.
 *
 * Server state is a table of entries per peer: incomplete Block1
 * transfers, bodies kept for Block2, and "done" markers that remember the
 * last Block1 of a completed transfer until its response echoes it. An
 * entry is keyed by the peer string and by the request's code and options
 * other than Block1, Block2, Size1, Size2, Echo and No-Response, compared
 * byte for byte (a hash only picks candidates). Peers live in a hash
 * table; a peer's entries are few (max_per_peer), so they are scanned.
 * All entries also sit on one list in order of last progress, so expiry
 * looks only at what has expired, and the entries that may be dropped
 * whenever room is needed (done markers, bodies whose last block went
 * out) sit on a second list, oldest first.
 */
#include "edhoc/blockwise.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "blockwise_internal.h"
#include "edhoc/coap_msg.h"

#define DEFAULT_MAX_TRANSFERS 256u
#define DEFAULT_MAX_PER_PEER  4u
#define DEFAULT_MAX_BYTES     (4u << 20)

/* ---- Server state ---- */

static uint64_t hash_bytes(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Options that do not tell one operation from another: the block-wise
 * options themselves (RFC 7959 Section 2.4, RFC 9175 Section 3.3), Echo
 * (a server may ask for it in the middle of a transfer) and No-Response
 * (a NoCacheKey option). */
static bool outside_key(uint16_t number)
{
    return number == COAP_OPT_BLOCK1 || number == COAP_OPT_BLOCK2 || number == COAP_OPT_SIZE1 ||
           number == COAP_OPT_SIZE2 || number == COAP_OPT_ECHO || number == COAP_OPT_NO_RESPONSE;
}

/* The key's bytes: code, then number (2), length (2) and value of each
 * option in the key. */
static size_t key_length(const struct coap_msg *m)
{
    size_t n = 1;
    for (size_t i = 0; i < m->option_count; i++) {
        if (!outside_key(m->options[i].number))
            n += 4u + m->options[i].len;
    }
    return n;
}

static void key_write(const struct coap_msg *m, uint8_t *out)
{
    size_t pos = 0;
    out[pos++] = m->code;
    for (size_t i = 0; i < m->option_count; i++) {
        const struct coap_option *o = &m->options[i];
        if (outside_key(o->number))
            continue;
        out[pos++] = (uint8_t)(o->number >> 8);
        out[pos++] = (uint8_t)o->number;
        out[pos++] = (uint8_t)(o->len >> 8);
        out[pos++] = (uint8_t)o->len;
        if (o->len)
            memcpy(out + pos, o->value, o->len);
        pos += o->len;
    }
}

uint64_t bw_key_hash(const struct edhoc_bw_server *s, const struct coap_msg *m)
{
    uint64_t h = s->seed ^ 0xcbf29ce484222325ULL;
    h = hash_bytes(h, &m->code, 1);
    for (size_t i = 0; i < m->option_count; i++) {
        const struct coap_option *o = &m->options[i];
        if (outside_key(o->number))
            continue;
        uint8_t head[4] = {(uint8_t)(o->number >> 8), (uint8_t)o->number, (uint8_t)(o->len >> 8),
                           (uint8_t)o->len};
        h = hash_bytes(h, head, 4);
        h = hash_bytes(h, o->value, o->len);
    }
    return bw_mix64(h);
}

/* Compares without building the key bytes of m. */
static bool key_equal(const struct bw_entry *e, const struct coap_msg *m)
{
    const uint8_t *k = e->key, *end = e->key + e->key_len;
    if (k == end || *k++ != m->code)
        return false;
    for (size_t i = 0; i < m->option_count; i++) {
        const struct coap_option *o = &m->options[i];
        if (outside_key(o->number))
            continue;
        if ((size_t)(end - k) < 4u + o->len)
            return false;
        if (k[0] != (uint8_t)(o->number >> 8) || k[1] != (uint8_t)o->number ||
            k[2] != (uint8_t)(o->len >> 8) || k[3] != (uint8_t)o->len)
            return false;
        if (o->len && memcmp(k + 4, o->value, o->len) != 0)
            return false;
        k += 4u + o->len;
    }
    return k == end;
}

uint64_t bw_peer_hash(const struct edhoc_bw_server *s, const char *name, size_t len)
{
    return bw_mix64(hash_bytes(s->seed ^ 0x9e3779b97f4a7c15ULL, (const uint8_t *)name, len));
}

struct bw_peer *bw_peer_find(const struct edhoc_bw_server *s, const char *name, size_t len,
                             uint64_t h)
{
    for (struct bw_peer *p = s->buckets[h & s->bucket_mask]; p; p = p->next) {
        if (p->hash == h && p->name_len == len && memcmp(p->name, name, len) == 0)
            return p;
    }
    return NULL;
}

static struct bw_peer *peer_get(struct edhoc_bw_server *s, const char *name, size_t len, uint64_t h)
{
    struct bw_peer *p = bw_peer_find(s, name, len, h);
    if (p)
        return p;
    p = calloc(1, sizeof *p + len + 1);
    if (!p)
        return NULL;
    p->hash = h;
    p->name_len = len;
    memcpy(p->name, name, len);
    struct bw_peer **b = &s->buckets[h & s->bucket_mask];
    p->next = *b;
    *b = p;
    return p;
}

static void peer_drop_if_empty(struct edhoc_bw_server *s, struct bw_peer *p)
{
    if (p->count)
        return;
    for (struct bw_peer **b = &s->buckets[p->hash & s->bucket_mask]; *b; b = &(*b)->next) {
        if (*b == p) {
            *b = p->next;
            break;
        }
    }
    free(p);
}

struct bw_entry *bw_entry_find(const struct bw_peer *p, enum entry_kind kind, uint64_t h,
                               const struct coap_msg *m)
{
    if (!p)
        return NULL;
    for (struct bw_entry *e = p->first; e; e = e->peer_next) {
        if (e->kind == kind && e->key_hash == h && key_equal(e, m))
            return e;
    }
    return NULL;
}

static void lru_unlink(struct edhoc_bw_server *s, struct bw_entry *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        s->lru_first = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else
        s->lru_last = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static void lru_append(struct edhoc_bw_server *s, struct bw_entry *e)
{
    e->lru_prev = s->lru_last;
    e->lru_next = NULL;
    if (s->lru_last)
        s->lru_last->lru_next = e;
    else
        s->lru_first = e;
    s->lru_last = e;
}

/* Progress: the entry moves to the young end of the expiry order. */
void bw_touch(struct edhoc_bw_server *s, struct bw_entry *e, uint64_t now_ms)
{
    e->last_ms = now_ms;
    if (s->lru_last != e) {
        lru_unlink(s, e);
        lru_append(s, e);
    }
}

void bw_set_droppable(struct edhoc_bw_server *s, struct bw_entry *e)
{
    if (e->droppable)
        return;
    e->droppable = true;
    e->ev_prev = s->ev_last;
    e->ev_next = NULL;
    if (s->ev_last)
        s->ev_last->ev_next = e;
    else
        s->ev_first = e;
    s->ev_last = e;
}

void bw_entry_free(struct edhoc_bw_server *s, struct bw_entry *e)
{
    struct bw_peer *p = e->peer;
    lru_unlink(s, e);
    if (e->droppable) {
        if (e->ev_prev)
            e->ev_prev->ev_next = e->ev_next;
        else
            s->ev_first = e->ev_next;
        if (e->ev_next)
            e->ev_next->ev_prev = e->ev_prev;
        else
            s->ev_last = e->ev_prev;
    }
    if (e->peer_prev)
        e->peer_prev->peer_next = e->peer_next;
    else
        p->first = e->peer_next;
    if (e->peer_next)
        e->peer_next->peer_prev = e->peer_prev;
    else
        p->last = e->peer_prev;
    p->count--;
    s->entries--;
    if (e->kind == ENTRY_TRANSFER)
        s->st.transfers--;
    else if (e->kind == ENTRY_KEPT)
        s->st.kept_bodies--;
    s->st.bytes_held -= e->held;
    free(e->body);
    free(e->opts);
    free(e);
    peer_drop_if_empty(s, p);
}

/* The entry a peer's new entry may replace: a droppable one, else, for a
 * body to keep, the peer's oldest kept body (a client asking for a new
 * representation has most likely finished with an older one; if not, its
 * next Block2 request runs the handler again). */
static struct bw_entry *peer_victim(const struct bw_peer *p, bool for_kept,
                                    const struct bw_entry *spare)
{
    for (struct bw_entry *e = p->first; e; e = e->peer_next) {
        if (e->droppable && e != spare)
            return e;
    }
    if (for_kept) {
        for (struct bw_entry *e = p->first; e; e = e->peer_next) {
            if (e->kind == ENTRY_KEPT && e != spare)
                return e;
        }
    }
    return NULL;
}

/* Makes room for new_entries (0 or 1) more entries of peer `name` and
 * `bytes` more bytes, dropping only what may be dropped, never `spare`.
 * False when the limits stay reached. */
bool bw_make_room(struct edhoc_bw_server *s, const char *name, size_t name_len, uint64_t ph,
                  size_t new_entries, size_t bytes, bool for_kept, const struct bw_entry *spare)
{
    for (;;) {
        struct bw_entry *victim = NULL;
        struct bw_peer *p = bw_peer_find(s, name, name_len, ph);
        if (new_entries && p && p->count + new_entries > s->lim.max_per_peer) {
            victim = peer_victim(p, for_kept, spare);
            if (!victim)
                return false;
        } else if ((new_entries && s->entries + new_entries > s->lim.max_transfers) ||
                   s->st.bytes_held > s->lim.max_bytes ||
                   bytes > s->lim.max_bytes - s->st.bytes_held) {
            victim = s->ev_first;
            if (victim == spare)
                victim = victim ? victim->ev_next : NULL;
            if (!victim)
                return false;
        } else {
            return true;
        }
        bw_entry_free(s, victim);
    }
}

/* A new entry (room already made); NULL when out of memory. */
struct bw_entry *bw_entry_new(struct edhoc_bw_server *s, const char *name, size_t name_len,
                              uint64_t ph, enum entry_kind kind, const struct coap_msg *m,
                              uint64_t kh, uint64_t now_ms)
{
    size_t klen = key_length(m);
    struct bw_peer *p = peer_get(s, name, name_len, ph);
    if (!p)
        return NULL;
    struct bw_entry *e = calloc(1, sizeof *e + klen);
    if (!e) {
        peer_drop_if_empty(s, p);
        return NULL;
    }
    e->kind = kind;
    e->peer = p;
    e->key_hash = kh;
    e->key_len = klen;
    key_write(m, e->key);
    e->held = sizeof *e + klen;
    e->last_ms = now_ms;
    e->peer_prev = p->last;
    if (p->last)
        p->last->peer_next = e;
    else
        p->first = e;
    p->last = e;
    p->count++;
    lru_append(s, e);
    s->entries++;
    s->st.bytes_held += e->held;
    if (kind == ENTRY_TRANSFER)
        s->st.transfers++;
    else if (kind == ENTRY_KEPT)
        s->st.kept_bodies++;
    return e;
}

size_t bw_entry_bytes(const struct coap_msg *m)
{
    return sizeof(struct bw_entry) + key_length(m);
}

/* Grows a transfer's buffer to hold `need` bytes (need <= max_body),
 * doubling so that small blocks do not cost a copy each. */
int bw_transfer_reserve(struct edhoc_bw_server *s, struct bw_entry *e, size_t need)
{
    if (need <= e->body_cap)
        return 0;
    size_t want = e->body_cap * 2;
    if (want < 256)
        want = 256;
    want = bw_size_min(want, s->lim.max_body);
    if (want < need)
        want = need;
    struct bw_peer *p = e->peer;
    if (!bw_make_room(s, p->name, p->name_len, p->hash, 0, want - e->body_cap, false, e)) {
        want = need;
        if (!bw_make_room(s, p->name, p->name_len, p->hash, 0, want - e->body_cap, false, e))
            return EDHOC_BW_ERR_TOO_LARGE; /* the byte limit: answered 5.03 */
    }
    uint8_t *nb = realloc(e->body, want);
    if (!nb)
        return EDHOC_BW_ERR_NOMEM;
    s->st.bytes_held += want - e->body_cap;
    e->held += want - e->body_cap;
    e->body = nb;
    e->body_cap = want;
    return 0;
}

/* A transfer that completed becomes a marker: its body goes, the Block1
 * to echo in the response stays (RFC 7959 Section 2.3). */
void bw_make_done(struct edhoc_bw_server *s, struct bw_entry *e, const struct coap_msg *m,
                  const struct edhoc_block *b)
{
    /* An older marker of the same request is stale: its response is not
     * coming any more. */
    for (struct bw_entry *o = e->peer->first, *next; o; o = next) {
        next = o->peer_next;
        if (o != e && o->kind == ENTRY_DONE && o->key_hash == e->key_hash && key_equal(o, m))
            bw_entry_free(s, o);
    }
    if (e->kind == ENTRY_TRANSFER)
        s->st.transfers--;
    e->kind = ENTRY_DONE;
    s->st.bytes_held -= e->body_cap;
    e->held -= e->body_cap;
    free(e->body);
    e->body = NULL;
    e->body_len = e->body_cap = 0;
    e->last_num = b->num;
    e->szx = b->szx;
    e->mid = m->mid;
    e->token_len = m->token_len;
    memcpy(e->token, m->token, m->token_len);
    bw_set_droppable(s, e);
}

/* The marker of the completed transfer whose *whole is req. */
struct bw_entry *bw_find_done(const struct bw_peer *p, uint64_t kh, const struct coap_msg *req)
{
    if (!p)
        return NULL;
    for (struct bw_entry *e = p->first; e; e = e->peer_next) {
        if (e->kind == ENTRY_DONE && e->key_hash == kh && e->mid == req->mid &&
            e->token_len == req->token_len && memcmp(e->token, req->token, req->token_len) == 0 &&
            key_equal(e, req))
            return e;
    }
    return NULL;
}

struct edhoc_bw_server *edhoc_bw_server_new(const struct edhoc_bw_limits *limits)
{
    struct edhoc_bw_server *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (limits)
        s->lim = *limits;
    if (!s->lim.max_body)
        s->lim.max_body = EDHOC_BW_DEFAULT_MAX_BODY;
    if (s->lim.max_body > EDHOC_BW_MAX_BODY_LIMIT)
        s->lim.max_body = EDHOC_BW_MAX_BODY_LIMIT;
    if (!s->lim.max_transfers)
        s->lim.max_transfers = DEFAULT_MAX_TRANSFERS;
    if (!s->lim.max_per_peer)
        s->lim.max_per_peer = DEFAULT_MAX_PER_PEER;
    if (!s->lim.max_bytes)
        s->lim.max_bytes = DEFAULT_MAX_BYTES;
    if (!s->lim.lifetime_ms)
        s->lim.lifetime_ms = EDHOC_BW_DEFAULT_LIFETIME_MS;
    size_t nb = 16;
    while (nb < s->lim.max_transfers && nb < (1u << 16))
        nb <<= 1;
    s->buckets = calloc(nb, sizeof *s->buckets);
    if (!s->buckets) {
        free(s);
        return NULL;
    }
    s->bucket_mask = nb - 1;
#ifdef EDHOC_FUZZING
    /* Reproducible runs: the seed only spreads hash buckets and ETags. */
    s->seed = 0x5eed;
#else
    if (getrandom(&s->seed, sizeof s->seed, GRND_NONBLOCK) != (ssize_t)sizeof s->seed) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s->seed = bw_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uintptr_t)s);
    }
#endif
    s->etag_counter = (uint32_t)bw_mix64(s->seed);
    return s;
}

void edhoc_bw_server_free(struct edhoc_bw_server *s)
{
    if (!s)
        return;
    while (s->lru_first)
        bw_entry_free(s, s->lru_first);
    free(s->buckets);
    free(s);
}

void edhoc_bw_server_expire(struct edhoc_bw_server *s, uint64_t now_ms)
{
    if (!s)
        return;
    /* Oldest progress first: stop at the first entry still alive. */
    while (s->lru_first && now_ms >= s->lru_first->last_ms &&
           now_ms - s->lru_first->last_ms >= s->lim.lifetime_ms) {
        if (s->lru_first->kind != ENTRY_DONE)
            s->st.expired++;
        bw_entry_free(s, s->lru_first);
    }
}

void edhoc_bw_server_stats(const struct edhoc_bw_server *s, struct edhoc_bw_stats *st)
{
    if (!st)
        return;
    if (!s) {
        memset(st, 0, sizeof *st);
        return;
    }
    *st = s->st;
}
