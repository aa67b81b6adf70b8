/*
 * The engine's life: creation and release, statistics, the periodic
 * tick, logging helpers and the connection identifier prefixes
 * (RFC 9528 Section 3.3.2).
 */
#include <stdarg.h>

#include "server_internal.h"

long edhoc_coap_cid_encode(const uint8_t *cid, size_t len, uint8_t *out, size_t cap)
{
    if (len > EDHOC_MAX_CONN_ID)
        return -1;
    if (len == 1 && (cid[0] <= 0x17 || (cid[0] >= 0x20 && cid[0] <= 0x37))) {
        if (cap < 1)
            return -1;
        out[0] = cid[0];
        return 1;
    }
    if (cap < len + 1)
        return -1;
    out[0] = (uint8_t)(0x40 | len);
    memcpy(out + 1, cid, len);
    return (long)len + 1;
}

long edhoc_coap_cid_decode(const uint8_t *p, size_t len, uint8_t *cid, size_t *cid_len)
{
    if (len < 1)
        return -1;
    if (p[0] <= 0x17 || (p[0] >= 0x20 && p[0] <= 0x37)) {
        cid[0] = p[0];
        *cid_len = 1;
        return 1;
    }
    if ((p[0] & 0xe0) == 0x40 && (p[0] & 0x1f) <= EDHOC_MAX_CONN_ID) {
        size_t n = p[0] & 0x1f;
        if (len < n + 1)
            return -1;
        /* A one-byte identifier with an int form must use it (3.3.2). */
        if (n == 1 && (p[1] <= 0x17 || (p[1] >= 0x20 && p[1] <= 0x37)))
            return -1;
        memcpy(cid, p + 1, n);
        *cid_len = n;
        return (long)n + 1;
    }
    return -1;
}

long edhoc_coap_bstr_item_len(const uint8_t *p, size_t len)
{
    if (len < 1 || (p[0] & 0xe0) != 0x40)
        return -1;
    unsigned ai = p[0] & 0x1f;
    size_t head, n;
    if (ai < 24) {
        head = 1;
        n = ai;
    } else if (ai == 24 && len >= 2) {
        head = 2;
        n = p[1];
    } else if (ai == 25 && len >= 3) {
        head = 3;
        n = (size_t)p[1] << 8 | p[2];
    } else if (ai == 26 && len >= 5) {
        head = 5;
        n = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
    } else {
        return -1;
    }
    if (len - head < n)
        return -1;
    return (long)(head + n);
}

bool srv_log_wanted(const struct edhoc_server *srv, int level)
{
    return srv->cfg.log && (!srv->cfg.log_max_level || level <= srv->cfg.log_max_level);
}

void srv_log(struct edhoc_server *srv, int level, const char *fmt, ...)
{
    if (!srv_log_wanted(srv, level))
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    srv->cfg.log(srv->cfg.log_user, level, line);
}

void srv_hex(const uint8_t *p, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    if (n == 0 && cap > 2) {
        strcpy(out, "''");
        return;
    }
    for (size_t i = 0; i < n && o + 3 <= cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%02x", p[i]);
    if (o < cap)
        out[o] = '\0';
}

uint64_t srv_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct edhoc_server *edhoc_server_new(const struct edhoc_server_config *cfg)
{
    if (!cfg || !cfg->ops || !cfg->select ||
        (cfg->workers > 1 &&
         (cfg->workers > EDHOC_SERVER_MAX_WORKERS || cfg->worker_index >= cfg->workers)))
        return NULL;
    struct edhoc_server *srv = calloc(1, sizeof *srv);
    if (!srv)
        return NULL;
    srv->cfg = *cfg;
    if (!srv->cfg.max_pending)
        srv->cfg.max_pending = 256;
    if (!srv->cfg.pending_timeout_s)
        srv->cfg.pending_timeout_s = 60;
    /* On a fleet's shared store every response takes a number of its own
     * (srv_response_own_piv) and each block is a round trip to the store
     * from the datagram thread: blocks of 256 make that one per 256
     * responses. A takeover leaves the rest of the old owner's block
     * unused; 256 keeps the Partial IV at 2 bytes through 255 of them. */
    if (!srv->cfg.ssn_freq)
        srv->cfg.ssn_freq = edhoc_state_is_shared(srv->cfg.db) ? 256 : 32;
    if (!srv->cfg.counter_period_ms)
        srv->cfg.counter_period_ms = 1000;
    if (!srv->cfg.max_body)
        srv->cfg.max_body = EDHOC_BW_DEFAULT_MAX_BODY;
    if (!srv->cfg.block_size)
        srv->cfg.block_size = 1024;
    if (!srv->cfg.max_contexts)
        srv->cfg.max_contexts = EDHOC_SERVER_DEFAULT_MAX_CONTEXTS;
    if (!srv->cfg.context_lifetime_ms)
        srv->cfg.context_lifetime_ms = EDHOC_SERVER_DEFAULT_CONTEXT_LIFETIME_MS;
    if (srv->cfg.max_contexts > UINT32_MAX - 2 * STATIC_ROOM)
        srv->cfg.max_contexts = UINT32_MAX - 2 * STATIC_ROOM;
    if (srv->cfg.max_pending > UINT32_MAX - 2)
        srv->cfg.max_pending = UINT32_MAX - 2;
    edhoc_cid_space_init(&srv->cids);
    srv_c_r_one_byte_allowed(srv->cfg.c_r_form, srv->c_r_one_allowed);
    if (srv->cfg.workers > 1) {
        for (unsigned b = 0; b < 256; b++) {
            if (b % srv->cfg.workers != srv->cfg.worker_index)
                srv->c_r_one_allowed[b / 64] &= ~((uint64_t)1 << (b % 64));
        }
    }
    srv->start_ds = srv_to_ds(srv_clock_ms(srv));
    /* Buckets for every context the cap allows (static ones on top): the
     * chains stay short at a million, and the pages no context reached
     * cost address space only. The handshakes' pool is all there from the
     * start, so that one evicted always makes room. */
    size_t n_ctx = srv->cfg.max_contexts + STATIC_ROOM;
    bool tables_ok =
        edhoc_pool_init(&srv->ctx_pool, sizeof(struct peer_ctx), (uint32_t)n_ctx) == 0 &&
        edhoc_pool_init(&srv->pending_pool, sizeof(struct pending),
                        (uint32_t)srv->cfg.max_pending) == 0 &&
        edhoc_pool_prealloc(&srv->pending_pool) == 0 &&
        edhoc_itab_init(&srv->contexts, &srv->ctx_pool, offsetof(struct peer_ctx, chain),
                        srv_ctx_hash_of, srv, n_ctx) == 0 &&
        edhoc_itab_init(&srv->pending_by_c_r, &srv->pending_pool,
                        offsetof(struct pending, c_r_chain), srv_c_r_hash_of, srv,
                        srv->cfg.max_pending) == 0 &&
        edhoc_itab_init(&srv->pending_by_peer, &srv->pending_pool,
                        offsetof(struct pending, peer_chain), srv_peer_hash_of, srv,
                        srv->cfg.max_pending) == 0;
    edhoc_ilru_init(&srv->ctx_lru, &srv->ctx_pool, offsetof(struct peer_ctx, lru));
    edhoc_ilru_init(&srv->pending_age, &srv->pending_pool, offsetof(struct pending, age));
    for (int t = 0; t < EDHOC_AMP_TRUST_LEVELS; t++)
        edhoc_ilru_init(&srv->pending_by_trust[t], &srv->pending_pool,
                        offsetof(struct pending, trust_age));
    srv->inner_cap = srv->cfg.max_body + EDHOC_SERVER_MAX_MESSAGE;
    struct edhoc_bw_limits limits = {.max_body = srv->cfg.max_body,
                                     .lifetime_ms = srv->cfg.transfer_lifetime_ms};
    srv->inner = malloc(srv->inner_cap);
    srv->inner_resp = malloc(srv->inner_cap);
    srv->inner_cut = malloc(srv->inner_cap);
    srv->bw = edhoc_bw_server_new(&limits);
    if (!srv->inner || !srv->inner_resp || !srv->inner_cut || !srv->bw || !tables_ok) {
        edhoc_server_free(srv);
        return NULL;
    }
    uint8_t seed[16];
    if (srv->cfg.ops->random(srv->cfg.ops->rng_ctx, srv->echo_secret, sizeof srv->echo_secret) ||
        srv->cfg.ops->random(srv->cfg.ops->rng_ctx, seed, sizeof seed)) {
        edhoc_server_free(srv);
        return NULL;
    }
    for (int i = 0; i < 8; i++) {
        srv->seed.k0 = srv->seed.k0 << 8 | seed[i];
        srv->seed.k1 = srv->seed.k1 << 8 | seed[8 + i];
    }
    edhoc_wipe(seed, sizeof seed);
    srv->st.bytes_per_context = sizeof(struct peer_ctx);
    srv->st.bytes_per_pending = sizeof(struct pending);
    return srv;
}

void edhoc_server_free(struct edhoc_server *srv)
{
    if (!srv)
        return;
    /* Every handshake in progress is in the age list, every context in
     * the table: wiped (released entries were zeroed when released). */
    for (uint32_t i = edhoc_ilru_oldest(&srv->pending_age); i != EDHOC_NONE;
         i = edhoc_ilru_newer(&srv->pending_age, i)) {
        edhoc_session_wipe(&srv_pending_at(srv, i)->s);
        srv_key_log_free(srv_pending_at(srv, i));
    }
    for (size_t b = 0; srv->contexts.buckets && b <= srv->contexts.mask; b++) {
        for (uint32_t i = srv->contexts.buckets[b]; i != EDHOC_NONE;
             i = edhoc_itab_next(&srv->contexts, i))
            oscore_context_wipe(&srv_ctx_at(srv, i)->osc);
    }
    if (srv->b2)
        edhoc_wipe(srv->b2, srv->n_b2 * sizeof *srv->b2);
    free(srv->b2);
    edhoc_itab_free(&srv->contexts);
    edhoc_itab_free(&srv->pending_by_c_r);
    edhoc_itab_free(&srv->pending_by_peer);
    edhoc_pool_free(&srv->ctx_pool);
    edhoc_pool_free(&srv->pending_pool);
    free(srv->marks);
    if (srv->state_txn)
        edhoc_state_rollback(srv->cfg.db);
    for (size_t i = 0; i < MAX_OBSERVERS; i++) {
        srv_observer_drop(&srv->observers[i]);
    }
    edhoc_wipe(&srv->rx, sizeof srv->rx);
    /* Decrypted requests and responses may be secret. */
    if (srv->inner)
        edhoc_wipe(srv->inner, srv->inner_cap);
    if (srv->inner_resp)
        edhoc_wipe(srv->inner_resp, srv->inner_cap);
    if (srv->inner_cut)
        edhoc_wipe(srv->inner_cut, srv->inner_cap);
    free(srv->inner);
    free(srv->inner_resp);
    free(srv->inner_cut);
    free(srv->bytes_body);
    edhoc_bw_server_free(srv->bw);
    free(srv);
}

void edhoc_server_get_stats(const struct edhoc_server *srv, struct edhoc_server_stats *st)
{
    *st = srv->st;
    st->pending = srv->n_pending;
    st->contexts = srv->n_contexts;
    st->max_contexts = srv->cfg.max_contexts;
    size_t obs = 0;
    for (size_t i = 0; i < MAX_OBSERVERS; i++)
        obs += srv->observers[i].used;
    st->observers = obs;
}

void edhoc_server_set_sender(struct edhoc_server *srv, const struct edhoc_server_peer_calls *calls,
                             void *user)
{
    srv->cfg.send = calls ? calls->send : NULL;
    srv->cfg.hold_peer = calls ? calls->hold : NULL;
    srv->cfg.release_peer = calls ? calls->release : NULL;
    srv->cfg.send_user = user;
}

void edhoc_server_drop_pending(struct edhoc_server *srv)
{
    for (uint32_t i; (i = edhoc_ilru_oldest(&srv->pending_age)) != EDHOC_NONE;) {
        struct pending *h = srv_pending_at(srv, i);
        srv_hs_end_pending(srv, h, EDHOC_SERVER_FAILED, "message_3",
                           "dropped before message_3: the server's credentials were reloaded");
        srv_pending_free(srv, h);
    }
}

size_t edhoc_server_record_shutdown(struct edhoc_server *srv, const char *why)
{
    size_t n = 0;
    for (uint32_t i = edhoc_ilru_oldest(&srv->pending_age); i != EDHOC_NONE;
         i = edhoc_ilru_newer(&srv->pending_age, i), n++)
        srv_hs_end_pending(srv, srv_pending_at(srv, i), EDHOC_SERVER_SHUTDOWN, "message_3", why);
    return n;
}

void edhoc_server_tick(struct edhoc_server *srv, uint64_t now_ms)
{
    srv->now_ms = now_ms;
    edhoc_bw_server_expire(srv->bw, now_ms);
    uint64_t limit = (uint64_t)srv->cfg.pending_timeout_s * 1000;
    /* The scan is cheap but runs after every datagram under load. */
    bool scan = now_ms - srv->last_scan_ms >= 100;
    if (scan)
        srv->last_scan_ms = now_ms;
    /* Oldest first: the walk stops at the first that is young enough. */
    for (uint32_t i; scan && (i = edhoc_ilru_oldest(&srv->pending_age)) != EDHOC_NONE;) {
        struct pending *h = srv_pending_at(srv, i);
        if (now_ms - h->started_ms <= limit)
            break;
        srv->st.expired++;
        srv_log_done(srv, h, 0, "timeout", "no message_3");
        char why[96];
        snprintf(why, sizeof why, "expired: no message_3 within %u s", srv->cfg.pending_timeout_s);
        srv_hs_end_pending(srv, h, EDHOC_SERVER_EXPIRED, "message_3", why);
        srv_pending_free(srv, h);
    }
    if (scan)
        srv_contexts_tick(srv, now_ms);
    /* Also without requests: the notices are read as they come (an idle
     * responder's would fill its socket and hold up the store's queue),
     * and copies another responder took are freed. */
    if (scan && edhoc_state_is_shared(srv->cfg.db))
        srv_apply_takeovers(srv);
    if (!srv->next_counter_ms)
        srv->next_counter_ms = now_ms + srv->cfg.counter_period_ms;
    if (now_ms >= srv->next_counter_ms) {
        srv->counter++;
        srv->next_counter_ms = now_ms + srv->cfg.counter_period_ms;
        srv_notify_counter(srv);
    }
}
