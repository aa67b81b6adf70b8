/*
 * The amplification account of a server (edhoc/amplification.h): per
 * endpoint, the bytes received and sent and whether its address is
 * verified, in a fixed pool of entries found through a keyed hash.
 */
#include "edhoc/amplification.h"
#include "edhoc/server_tables.h"

#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

struct entry {
    uint32_t chain;      /* next entry in the same bucket */
    uint32_t prev, next; /* neighbours in its list, least recently active first */
    uint64_t received, sent;
    bool used, verified, authenticated;
    uint8_t name_len;
    char name[EDHOC_AMP_MAX_NAME];
};

/* Entries of one trust level, least recently active at the head. */
struct list {
    uint32_t head, tail;
};

/* The sliding second of message_1s from unverified endpoints: the count
 * of the current whole second and of the one before. */
struct meter {
    uint64_t second;
    uint64_t now_count, before_count;
    bool pressed; /* the last message_1 found pressure (for pressure_periods) */
};

struct edhoc_amp {
    unsigned factor;
    uint32_t max;
    struct edhoc_tab_seed seed;
    struct entry *e;
    uint32_t *buckets;
    uint32_t mask;
    uint32_t fresh;     /* entries never used yet start here */
    uint32_t free_head; /* released entries, chained through .chain */
    struct list lists[EDHOC_AMP_TRUST_LEVELS];
    unsigned pressure_rate;
    struct meter meter;    /* message_1s of unverified endpoints */
    struct meter admitted; /* handshakes started under pressure for reachable ones */
    struct edhoc_amp_stats st;
};

/* Buckets by SipHash under a secret key (edhoc_tab_hash, shared with the
 * server's tables): the spread stays out of reach of whoever chooses
 * source addresses. */

/* ---- The table ---- */

static size_t name_len_of(const char *endpoint)
{
    size_t n = strlen(endpoint);
    return n < EDHOC_AMP_MAX_NAME ? n : EDHOC_AMP_MAX_NAME;
}

static uint32_t bucket_of(const struct edhoc_amp *a, const char *name, size_t len)
{
    return (uint32_t)edhoc_tab_hash(&a->seed, name, len) & a->mask;
}

static uint32_t find(const struct edhoc_amp *a, const char *endpoint)
{
    size_t len = name_len_of(endpoint);
    for (uint32_t i = a->buckets[bucket_of(a, endpoint, len)]; i != NIL; i = a->e[i].chain) {
        const struct entry *x = &a->e[i];
        if (x->name_len == len && !memcmp(x->name, endpoint, len))
            return i;
    }
    return NIL;
}

static enum edhoc_amp_trust trust_of(const struct entry *x)
{
    return x->authenticated ? EDHOC_AMP_AUTHENTICATED
           : x->verified    ? EDHOC_AMP_REACHABLE
                            : EDHOC_AMP_UNVERIFIED;
}

static void list_unlink(struct edhoc_amp *a, uint32_t i)
{
    struct entry *x = &a->e[i];
    struct list *l = &a->lists[trust_of(x)];
    if (x->prev != NIL)
        a->e[x->prev].next = x->next;
    else
        l->head = x->next;
    if (x->next != NIL)
        a->e[x->next].prev = x->prev;
    else
        l->tail = x->prev;
    x->prev = x->next = NIL;
}

static void list_append(struct edhoc_amp *a, uint32_t i)
{
    struct entry *x = &a->e[i];
    struct list *l = &a->lists[trust_of(x)];
    x->prev = l->tail;
    x->next = NIL;
    if (l->tail != NIL)
        a->e[l->tail].next = i;
    else
        l->head = i;
    l->tail = i;
}

/* Most recently active now. */
static void touch(struct edhoc_amp *a, uint32_t i)
{
    if (a->lists[trust_of(&a->e[i])].tail == i)
        return;
    list_unlink(a, i);
    list_append(a, i);
}

static void release(struct edhoc_amp *a, uint32_t i)
{
    struct entry *x = &a->e[i];
    uint32_t *pp = &a->buckets[bucket_of(a, x->name, x->name_len)];
    while (*pp != i)
        pp = &a->e[*pp].chain;
    *pp = x->chain;
    list_unlink(a, i);
    if (x->verified)
        a->st.endpoints_verified--;
    if (x->authenticated)
        a->st.endpoints_authenticated--;
    a->st.endpoints--;
    memset(x, 0, sizeof *x);
    x->chain = a->free_head;
    a->free_head = i;
}

/* The entry of endpoint, made (unverified, nothing counted) when new. */
static uint32_t find_or_add(struct edhoc_amp *a, const char *endpoint)
{
    uint32_t i = find(a, endpoint);
    if (i != NIL)
        return i;
    if (a->st.endpoints == a->max) {
        /* Full: the least recently active endpoint of the lowest trust
         * present goes (unverified, then reachable, then authenticated). */
        uint32_t victim = NIL;
        for (int t = 0; victim == NIL && t < EDHOC_AMP_TRUST_LEVELS; t++)
            victim = a->lists[t].head;
        release(a, victim);
        a->st.evicted++;
    }
    if (a->free_head != NIL) {
        i = a->free_head;
        a->free_head = a->e[i].chain;
    } else {
        i = a->fresh++;
    }
    struct entry *x = &a->e[i];
    memset(x, 0, sizeof *x);
    x->used = true;
    x->name_len = (uint8_t)name_len_of(endpoint);
    memcpy(x->name, endpoint, x->name_len);
    uint32_t b = bucket_of(a, x->name, x->name_len);
    x->chain = a->buckets[b];
    a->buckets[b] = i;
    list_append(a, i);
    a->st.endpoints++;
    return i;
}

struct edhoc_amp *edhoc_amp_new(const struct edhoc_amp_config *cfg)
{
    if (!cfg || cfg->factor == 0)
        return NULL;
    size_t max = cfg->max_endpoints ? cfg->max_endpoints : EDHOC_AMP_DEFAULT_MAX_ENDPOINTS;
    if (max >= NIL / 2)
        return NULL;
    struct edhoc_amp *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->factor = cfg->factor;
    a->max = (uint32_t)max;
    a->seed.k0 = cfg->seed[0];
    a->seed.k1 = cfg->seed[1];
    /* At least as many buckets as entries: chains stay short. */
    uint32_t n_buckets = 16;
    while (n_buckets < max)
        n_buckets *= 2;
    a->mask = n_buckets - 1;
    a->e = calloc(max, sizeof *a->e);
    a->buckets = malloc(n_buckets * sizeof *a->buckets);
    if (!a->e || !a->buckets) {
        edhoc_amp_free(a);
        return NULL;
    }
    memset(a->buckets, 0xff, n_buckets * sizeof *a->buckets); /* NIL */
    a->free_head = NIL;
    for (int t = 0; t < EDHOC_AMP_TRUST_LEVELS; t++)
        a->lists[t] = (struct list){NIL, NIL};
    a->pressure_rate = cfg->pressure_rate;
    a->st.bytes_per_endpoint = sizeof(struct entry) + sizeof(uint32_t);
    return a;
}

void edhoc_amp_free(struct edhoc_amp *a)
{
    if (!a)
        return;
    free(a->e);
    free(a->buckets);
    free(a);
}

unsigned edhoc_amp_factor(const struct edhoc_amp *a)
{
    return a ? a->factor : 0;
}

static uint64_t add_sat(uint64_t x, uint64_t y)
{
    return x > UINT64_MAX - y ? UINT64_MAX : x + y;
}

void edhoc_amp_received(struct edhoc_amp *a, const char *endpoint, size_t bytes)
{
    if (!a || !endpoint)
        return;
    uint32_t i = find_or_add(a, endpoint);
    struct entry *x = &a->e[i];
    x->received = add_sat(x->received, bytes);
    if (!x->verified)
        a->st.unverified_received = add_sat(a->st.unverified_received, bytes);
    touch(a, i);
}

size_t edhoc_amp_budget(const struct edhoc_amp *a, const char *endpoint)
{
    if (!a || !endpoint)
        return SIZE_MAX;
    uint32_t i = find(a, endpoint);
    if (i == NIL)
        return 0;
    const struct entry *x = &a->e[i];
    if (x->verified)
        return SIZE_MAX;
    uint64_t allowed = x->received > UINT64_MAX / a->factor ? UINT64_MAX : x->received * a->factor;
    uint64_t left = allowed > x->sent ? allowed - x->sent : 0;
    return left > SIZE_MAX - 1 ? SIZE_MAX - 1 : (size_t)left;
}

void edhoc_amp_sent(struct edhoc_amp *a, const char *endpoint, size_t bytes)
{
    if (!a || !endpoint)
        return;
    uint32_t i = find_or_add(a, endpoint);
    struct entry *x = &a->e[i];
    x->sent = add_sat(x->sent, bytes);
    if (!x->verified)
        a->st.unverified_sent = add_sat(a->st.unverified_sent, bytes);
    touch(a, i);
}

void edhoc_amp_verify(struct edhoc_amp *a, const char *endpoint)
{
    if (!a || !endpoint)
        return;
    uint32_t i = find_or_add(a, endpoint);
    struct entry *x = &a->e[i];
    if (x->verified) {
        touch(a, i);
        return;
    }
    list_unlink(a, i);
    x->verified = true;
    list_append(a, i);
    a->st.verified++;
    a->st.endpoints_verified++;
}

bool edhoc_amp_is_verified(const struct edhoc_amp *a, const char *endpoint)
{
    if (!a || !endpoint)
        return false;
    uint32_t i = find(a, endpoint);
    return i != NIL && a->e[i].verified;
}

void edhoc_amp_authenticate(struct edhoc_amp *a, const char *endpoint)
{
    if (!a || !endpoint)
        return;
    uint32_t i = find_or_add(a, endpoint);
    struct entry *x = &a->e[i];
    if (x->authenticated) {
        touch(a, i);
        return;
    }
    list_unlink(a, i);
    if (!x->verified) {
        x->verified = true;
        a->st.verified++;
        a->st.endpoints_verified++;
    }
    x->authenticated = true;
    list_append(a, i);
    a->st.authenticated++;
    a->st.endpoints_authenticated++;
}

enum edhoc_amp_trust edhoc_amp_trust(const struct edhoc_amp *a, const char *endpoint)
{
    if (!a || !endpoint)
        return EDHOC_AMP_UNVERIFIED;
    uint32_t i = find(a, endpoint);
    return i == NIL ? EDHOC_AMP_UNVERIFIED : trust_of(&a->e[i]);
}

static void meter_roll(struct meter *m, uint64_t now_ms)
{
    uint64_t second = now_ms / 1000;
    if (second != m->second) {
        m->before_count = second == m->second + 1 ? m->now_count : 0;
        m->now_count = 0;
        m->second = second;
    }
}

/* Events over the last 1000 ms, times 1000: this second so far, and the
 * part of the one before that the window still covers. */
static uint64_t meter_rate_x1000(struct meter *m, uint64_t now_ms)
{
    meter_roll(m, now_ms);
    return m->now_count * 1000 + m->before_count * (1000 - now_ms % 1000);
}

static bool pressed_now(struct edhoc_amp *a, uint64_t now_ms, size_t pending, size_t max_pending)
{
    return meter_rate_x1000(&a->meter, now_ms) > (uint64_t)a->pressure_rate * 1000 ||
           (max_pending && pending >= max_pending);
}

bool edhoc_amp_message_1_pressure(struct edhoc_amp *a, uint64_t now_ms, size_t pending,
                                  size_t max_pending)
{
    if (!a || !a->pressure_rate)
        return false;
    struct meter *m = &a->meter;
    meter_roll(m, now_ms);
    m->now_count++;
    bool pressed = pressed_now(a, now_ms, pending, max_pending);
    if (pressed && !m->pressed)
        a->st.pressure_periods++;
    m->pressed = pressed;
    if (pressed)
        a->st.pressure_challenges++;
    return pressed;
}

bool edhoc_amp_admit_reachable(struct edhoc_amp *a, uint64_t now_ms, size_t pending,
                               size_t max_pending)
{
    if (!a || !a->pressure_rate || !pressed_now(a, now_ms, pending, max_pending))
        return true;
    if (meter_rate_x1000(&a->admitted, now_ms) >= (uint64_t)a->pressure_rate * 1000) {
        a->st.pressure_refused++;
        return false;
    }
    a->admitted.now_count++;
    return true;
}

void edhoc_amp_note_pending_evicted(struct edhoc_amp *a, enum edhoc_amp_trust trust)
{
    if (a && (unsigned)trust < EDHOC_AMP_TRUST_LEVELS)
        a->st.pending_evicted[trust]++;
}

void edhoc_amp_note_pending_refused(struct edhoc_amp *a)
{
    if (a)
        a->st.pending_refused++;
}

void edhoc_amp_note_limited(struct edhoc_amp *a, bool withheld)
{
    if (!a)
        return;
    a->st.limited++;
    if (withheld)
        a->st.withheld++;
}

void edhoc_amp_get_stats(const struct edhoc_amp *a, struct edhoc_amp_stats *st)
{
    if (!a) {
        memset(st, 0, sizeof *st);
        return;
    }
    *st = a->st;
}
