/*
 * The established OSCORE contexts in memory: the table by Recipient ID
 * (and ID Context), least-recently-used eviction, expiry, their use times
 * and the sequence-number marks made durable before a number is used.
 */
#include "server_internal.h"

/* Fill a key; idc NULL: no ID Context. The lengths must fit (callers
 * check against OSCORE_MAX_ID / OSCORE_MAX_ID_CONTEXT). */
void srv_key_set(struct ctx_key *k, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                 size_t rid_len)
{
    memset(k, 0, sizeof *k);
    k->rid_len = (uint8_t)rid_len;
    if (rid_len)
        memcpy(k->rid, rid, rid_len);
    k->has_idc = idc != NULL;
    if (idc) {
        k->idc_len = (uint8_t)idc_len;
        if (idc_len)
            memcpy(k->idc, idc, idc_len);
    }
}

bool srv_key_rid_is(const struct ctx_key *k, const uint8_t *rid, size_t rid_len)
{
    return k->rid_len == rid_len && (rid_len == 0 || !memcmp(k->rid, rid, rid_len));
}

bool srv_key_equal(const struct ctx_key *a, const struct ctx_key *b)
{
    return srv_key_rid_is(a, b->rid, b->rid_len) && a->has_idc == b->has_idc &&
           a->idc_len == b->idc_len && (a->idc_len == 0 || !memcmp(a->idc, b->idc, a->idc_len));
}

/* The ID Context argument of the state API for a key: NULL for none. */
const uint8_t *srv_key_idc(const struct ctx_key *k)
{
    return k->has_idc ? k->idc : NULL;
}

/* The server's clock: the last tick, or the monotonic clock before the
 * first one (contexts loaded at start). */
uint64_t srv_clock_ms(const struct edhoc_server *srv)
{
    return srv->now_ms ? srv->now_ms : srv_mono_ms();
}

/* A context's last use in tenths of a second of the monotonic clock (time
 * since boot): 32 bits last 13 years of uptime, then the value stays at
 * its maximum (the recency order, which the list keeps, is unaffected). */
uint32_t srv_to_ds(uint64_t ms)
{
    uint64_t ds = ms / 100;
    return ds > UINT32_MAX ? UINT32_MAX : (uint32_t)ds;
}

uint64_t srv_used_ms(const struct peer_ctx *p)
{
    return (uint64_t)p->used_ds * 100;
}

int64_t srv_wall_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The state keeps Unix time, which survives a restart; the server runs on
 * the monotonic clock, which setting the date does not move. */
int64_t srv_wall_ms_of(const struct edhoc_server *srv, uint64_t t_ms)
{
    uint64_t now = srv_clock_ms(srv);
    int64_t age = now > t_ms ? (int64_t)(now - t_ms) : 0;
    int64_t wall = srv_wall_now_ms();
    return wall > age ? wall - age : 0;
}

uint64_t srv_server_ms_of(const struct edhoc_server *srv, int64_t wall_ms)
{
    int64_t age = srv_wall_now_ms() - wall_ms;
    uint64_t now = srv_clock_ms(srv);
    if (age <= 0)
        return now;
    return (uint64_t)age < now ? now - (uint64_t)age : 0;
}

/* The writes of one pass (a context established with the ones it evicts,
 * a tick's expiries and use times) go in one transaction: one sync. */
void srv_state_write_begin(struct edhoc_server *srv)
{
    /* With group commit the writer batches these with everything else,
     * and none of them must be durable before a packet leaves: a lost
     * deletion brings back a context with its durable mark, a lost use
     * time an earlier one, a lost new context costs a new handshake
     * (establish). What must be, marks, waits in store_ssn. */
    if (srv->cfg.db && !srv->state_txn && !edhoc_state_is_grouped(srv->cfg.db))
        srv->state_txn = edhoc_state_begin(srv->cfg.db) == 0;
}

int srv_state_write_end(struct edhoc_server *srv)
{
    if (!srv->state_txn)
        return 0;
    srv->state_txn = false;
    int rc = edhoc_state_commit(srv->cfg.db);
    if (rc)
        srv_log(srv, EDHOC_LOG_ERR, "state: cannot commit: %s", edhoc_state_strerror(rc));
    return rc;
}

struct peer_ctx *srv_ctx_at(const struct edhoc_server *srv, uint32_t i)
{
    return edhoc_pool_at(&srv->ctx_pool, i);
}

/* Chains hold every context with one Recipient ID, whatever its ID
 * Context, so a request without 'kid context' finds all it may name. */
uint64_t srv_rid_hash(const struct edhoc_server *srv, const uint8_t *rid, size_t len)
{
    return edhoc_tab_hash(&srv->seed, rid, len);
}

uint64_t srv_ctx_hash_of(const void *entry, void *user)
{
    const struct peer_ctx *p = entry;
    return srv_rid_hash(user, p->key.rid, p->key.rid_len);
}

struct peer_ctx *srv_ctx_find(struct edhoc_server *srv, const struct ctx_key *key)
{
    uint64_t h = srv_rid_hash(srv, key->rid, key->rid_len);
    for (uint32_t i = edhoc_itab_first(&srv->contexts, h); i != EDHOC_NONE;
         i = edhoc_itab_next(&srv->contexts, i)) {
        struct peer_ctx *p = srv_ctx_at(srv, i);
        if (srv_key_equal(&p->key, key))
            return p;
    }
    return NULL;
}

/* The static context with Appendix B.2 whose Recipient ID this is. */
struct b2_entry *srv_b2_find(struct edhoc_server *srv, const uint8_t *rid, size_t len)
{
    for (size_t i = 0; i < srv->n_b2; i++) {
        if (srv_key_rid_is(&srv->b2[i].configured, rid, len))
            return &srv->b2[i];
    }
    return NULL;
}

/* Whether any context, whatever its ID Context, has this Recipient ID. */
bool srv_rid_in_use(struct edhoc_server *srv, const uint8_t *rid, size_t len)
{
    uint64_t h = srv_rid_hash(srv, rid, len);
    for (uint32_t i = edhoc_itab_first(&srv->contexts, h); i != EDHOC_NONE;
         i = edhoc_itab_next(&srv->contexts, i)) {
        if (srv_key_rid_is(&srv_ctx_at(srv, i)->key, rid, len))
            return true;
    }
    return false;
}

/* Unlink p from every table and release it (its row is the caller's).
 * hold_until_ms: its Recipient ID is not a new C_R before then. */
static void ctx_free(struct edhoc_server *srv, struct peer_ctx *p, uint64_t hold_until_ms)
{
    uint32_t i = p->self;
    edhoc_itab_remove(&srv->contexts, i, srv_rid_hash(srv, p->key.rid, p->key.rid_len));
    edhoc_ilru_remove(&srv->ctx_lru, i);
    edhoc_cid_space_remove(&srv->cids, p->key.rid, p->key.rid_len, hold_until_ms);
    oscore_context_wipe(&p->osc);
    edhoc_pool_release(&srv->ctx_pool, i);
    srv->n_contexts--;
}

void srv_ctx_remove(struct edhoc_server *srv, const struct ctx_key *key)
{
    struct peer_ctx *p = srv_ctx_find(srv, key);
    if (p)
        ctx_free(srv, p, 0);
}

/* The OSCORE persistence callback: numbers below `mark` are about to be
 * used, so a mark at least that high must be durable first (RFC 8613
 * Section 7.2.1 and Appendix B.1.1). With group commit the next block's
 * mark goes to the writer as soon as a block is entered, so it is durable
 * long before the block is used up and the sender seldom waits; it waits
 * (edhoc_state_wait) only when it is not yet, and a mark that cannot be
 * stored fails the message (5.03, as before). */
struct ctx_mark *srv_ctx_mark_of(struct edhoc_server *srv, const struct peer_ctx *p)
{
    if (p->self >= srv->marks_cap) {
        uint32_t cap = srv->marks_cap ? srv->marks_cap : 64;
        while (cap <= p->self && cap < UINT32_MAX / 2)
            cap *= 2;
        if (cap <= p->self)
            return NULL;
        struct ctx_mark *m = realloc(srv->marks, (size_t)cap * sizeof *m);
        if (!m)
            return NULL;
        memset(m + srv->marks_cap, 0, (size_t)(cap - srv->marks_cap) * sizeof *m);
        srv->marks = m;
        srv->marks_cap = cap;
    }
    return &srv->marks[p->self];
}

static int store_ssn(void *user, uint64_t mark)
{
    struct peer_ctx *p = user;
    struct edhoc_server *srv = p->srv;
    struct edhoc_state_db *db = srv->cfg.db;
    /* Ahead of need with a local writer thread only: through the writer
     * process a mark is one round trip either way. */
    struct ctx_mark *m = edhoc_state_event_fd(db) >= 0 ? srv_ctx_mark_of(srv, p) : NULL;
    int rc = 0;
    if (m && m->queued >= mark) {
        rc = edhoc_state_wait(db, m->ticket, true); /* at once when durable already */
        if (!rc)
            m->ticket = 0;
    } else {
        uint64_t t = 0;
        rc = edhoc_state_store_ssn_async(db, srv_key_idc(&p->key), p->key.idc_len, p->key.rid,
                                         p->key.rid_len, mark, &t);
        if (!rc)
            rc = edhoc_state_wait(db, t, true);
        if (!rc && m)
            *m = (struct ctx_mark){mark, 0};
    }
    if (rc) {
        /* A success may be a number of a block reserved before, no word
         * from the store: only a failure says something of it. */
        srv_store_outcome(srv, rc, "a sequence-number reservation", false);
        srv->store_err = rc;
        if (rc == EDHOC_STATE_ERR_TAKEN_OVER)
            srv->taken_over = p->key;
        srv_log(srv, EDHOC_LOG_ERR, "cannot store the sequence number mark: %s",
                edhoc_state_strerror(rc));
        return rc;
    }
    /* The next block's mark, queued now: durable long before this block
     * is used up, so the next call finds it there. */
    uint64_t next = mark + srv->cfg.ssn_freq;
    if (m && next <= OSCORE_SSN_MAX + 1) {
        uint64_t t = 0;
        if (edhoc_state_store_ssn_async(db, srv_key_idc(&p->key), p->key.idc_len, p->key.rid,
                                        p->key.rid_len, next, &t) == 0)
            *m = (struct ctx_mark){next, t};
    }
    return 0;
}

/* A new context under key, replacing the one with exactly that key (and
 * no other: contexts with the same Recipient ID and another ID Context
 * stay). An EDHOC-derived one is the most recently used; a static one
 * is outside the recency order (never evicted or expired). */
struct peer_ctx *srv_ctx_insert(struct edhoc_server *srv, const struct ctx_key *key, bool is_static)
{
    srv_ctx_remove(srv, key);
    uint32_t i = edhoc_pool_alloc(&srv->ctx_pool);
    if (i == EDHOC_NONE)
        return NULL;
    struct peer_ctx *p = srv_ctx_at(srv, i);
    p->self = i;
    p->srv = srv;
    p->key = *key;
    p->is_static = is_static;
    p->used_ds = srv_to_ds(srv_clock_ms(srv));
    if (i < srv->marks_cap)
        srv->marks[i] = (struct ctx_mark){0, 0};
    edhoc_itab_insert(&srv->contexts, i, srv_rid_hash(srv, key->rid, key->rid_len));
    if (!is_static)
        edhoc_ilru_push(&srv->ctx_lru, i);
    edhoc_cid_space_add(&srv->cids, key->rid, key->rid_len);
    srv->n_contexts++;
    return p;
}

void srv_ctx_persist(struct peer_ctx *p)
{
    if (p->srv->cfg.db)
        oscore_context_set_persistence(&p->osc, store_ssn, p, p->srv->cfg.ssn_freq);
}

/* An EDHOC-derived context goes, with its row and mark (one row): the
 * least recently used one for a new one (max_contexts), or one idle for
 * longer than context_lifetime_ms. RFC 8613 Section 8.2 step 2: its
 * peer's next request gets 4.01 "Security context not found", and the
 * peer runs EDHOC again. */
static void ctx_drop(struct edhoc_server *srv, struct peer_ctx *p, bool expired)
{
    char rid[2 * OSCORE_MAX_ID + 1];
    srv_hex(p->key.rid, p->key.rid_len, rid, sizeof rid);
    uint64_t now = srv_clock_ms(srv);
    unsigned long long idle_s = now > srv_used_ms(p) ? (now - srv_used_ms(p)) / 1000 : 0;
    if (expired) {
        srv->st.contexts_expired++;
        srv_log(srv, EDHOC_LOG_INFO, "context kid=%s expired: no verified request for %llu s", rid,
                idle_s);
    } else {
        srv->st.contexts_evicted++;
        srv_log(srv, EDHOC_LOG_INFO,
                "context kid=%s evicted (max contexts %zu reached; idle %llu s, the longest)", rid,
                srv->cfg.max_contexts, idle_s);
    }
    for (size_t i = 0; i < MAX_OBSERVERS; i++) {
        if (srv->observers[i].used && srv_key_equal(&srv->observers[i].key, &p->key))
            srv_observer_drop(&srv->observers[i]);
    }
    if (srv->cfg.db) {
        srv_state_write_begin(srv);
        int rc = edhoc_state_delete_peer(srv->cfg.db, srv_key_idc(&p->key), p->key.idc_len,
                                         p->key.rid, p->key.rid_len);
        if (rc && rc != EDHOC_STATE_ERR_NOT_FOUND)
            srv_log(srv, EDHOC_LOG_ERR, "state: cannot delete context kid=%s: %s", rid,
                    edhoc_state_strerror(rc));
    }
    ctx_free(srv, p, now + RID_HOLD_MS);
}

/* Room for one more EDHOC-derived context: the least recently used go. */
void srv_ctx_make_room(struct edhoc_server *srv)
{
    uint32_t i;
    while (srv->ctx_lru.count >= srv->cfg.max_contexts &&
           (i = edhoc_ilru_oldest(&srv->ctx_lru)) != EDHOC_NONE)
        ctx_drop(srv, srv_ctx_at(srv, i), false);
}

/* A request that verified under p (n: what unprotecting it returned; an
 * Echo challenge follows a request that verified too) makes p the most
 * recently used. A request that did not verify proves nothing: the kid
 * is public, so anyone could keep a context alive with it otherwise. */
void srv_ctx_verified(struct edhoc_server *srv, struct peer_ctx *p, long n)
{
    if (!p || (n < 0 && n != OSCORE_ERR_ECHO_REQUIRED))
        return;
    uint32_t now = srv_to_ds(srv_clock_ms(srv));
    if (now / 600 != p->used_ds / 600)
        p->use |= USE_DIRTY;
    p->used_ds = now;
    if (!p->is_static)
        edhoc_ilru_touch(&srv->ctx_lru, p->self);
}

/* Store the last use of contexts used at or after since_ds (the recency
 * order is the order of use, so the walk stops at the first older one)
 * that are marked USE_DIRTY. */
static void uses_store(struct edhoc_server *srv, uint32_t since_ds)
{
    for (uint32_t i = edhoc_ilru_newest(&srv->ctx_lru); i != EDHOC_NONE;
         i = edhoc_ilru_older(&srv->ctx_lru, i)) {
        struct peer_ctx *p = srv_ctx_at(srv, i);
        if (p->used_ds < since_ds)
            break;
        if (!(p->use & USE_DIRTY))
            continue;
        srv_state_write_begin(srv);
        int rc =
            edhoc_state_touch_peer(srv->cfg.db, srv_key_idc(&p->key), p->key.idc_len, p->key.rid,
                                   p->key.rid_len, srv_wall_ms_of(srv, srv_used_ms(p)));
        if (rc && rc != EDHOC_STATE_ERR_NOT_FOUND) {
            srv_log(srv, EDHOC_LOG_ERR, "state: cannot store when a context was used: %s",
                    edhoc_state_strerror(rc));
            return;
        }
        p->use = 0;
    }
}

/* Idle contexts go (oldest first, so the walk stops at the first that is
 * not), and use times reach the state: one transaction. */
void srv_contexts_tick(struct edhoc_server *srv, uint64_t now)
{
    if (!srv->use_pass_ms)
        srv->use_pass_ms = now;
    uint32_t i;
    while ((i = edhoc_ilru_oldest(&srv->ctx_lru)) != EDHOC_NONE) {
        struct peer_ctx *p = srv_ctx_at(srv, i);
        if (now <= srv_used_ms(p) || now - srv_used_ms(p) <= srv->cfg.context_lifetime_ms)
            break;
        ctx_drop(srv, p, true);
    }
    if (srv->cfg.db && now - srv->use_pass_ms >= USE_PASS_MS) {
        uses_store(srv, srv_to_ds(srv->use_pass_ms));
        srv->use_pass_ms = now;
    }
    srv_state_write_end(srv);
}
