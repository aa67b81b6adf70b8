/*
 * The established contexts across restarts: loading the state database
 * at start, saving use times at the stop, and the static OSCORE contexts
 * of --oscore-context.
 */
#include "server_internal.h"

static int load_one(void *user, const struct edhoc_state_peer *sp)
{
    struct edhoc_server *srv = user;
    struct oscore_params prm = {
        .aead_alg = sp->aead_alg,
        .hkdf_alg = sp->hkdf_alg,
        .master_secret = sp->master_secret,
        .master_secret_len = sp->master_secret_len,
        .master_salt = sp->master_salt,
        .master_salt_len = sp->master_salt_len,
        .id_context = sp->has_id_context ? sp->id_context : NULL,
        .id_context_len = sp->id_context_len,
        .sender_id = sp->sender_id,
        .sender_id_len = sp->sender_id_len,
        .recipient_id = sp->recipient_id,
        .recipient_id_len = sp->recipient_id_len,
    };
    if (sp->recipient_id_len > OSCORE_MAX_ID || sp->id_context_len > OSCORE_MAX_ID_CONTEXT)
        return 0;
    if (sp->method < 0) {
        /* Static contexts come back with their --oscore-context file. The
         * ID3 of an Appendix B.2 run does not: its replay window is gone,
         * which is what B.2 step 2 starts a new run for ("the server has
         * lost part of its security context, e.g., ... Replay Window"),
         * and that run draws a new R2, so no key of the old ID3 is ever
         * used again: its row goes. */
        if (strncmp(sp->peer, B2_ROW_TAG, strlen(B2_ROW_TAG)))
            return 0;
        if (srv->n_stale_b2 == srv->cap_stale_b2) {
            size_t cap = srv->cap_stale_b2 ? 2 * srv->cap_stale_b2 : 8;
            struct ctx_key *k = realloc(srv->stale_b2, cap * sizeof *k);
            if (!k)
                return OSCORE_ERR_NOMEM;
            srv->stale_b2 = k;
            srv->cap_stale_b2 = cap;
        }
        srv_key_set(&srv->stale_b2[srv->n_stale_b2++], sp->has_id_context ? sp->id_context : NULL,
                    sp->id_context_len, sp->recipient_id, sp->recipient_id_len);
        return 0;
    }
    struct ctx_key key;
    srv_key_set(&key, prm.id_context, sp->id_context_len, sp->recipient_id, sp->recipient_id_len);
    /* Loaded in key order; put in order of use once all are in. */
    struct peer_ctx *p = srv_ctx_insert(srv, &key, false);
    if (!p)
        return OSCORE_ERR_INVALID;
    p->used_ds = srv_to_ds(srv_server_ms_of(srv, sp->last_used));
    int rc = oscore_context_init(&p->osc, srv->cfg.ops, &prm);
    if (!rc)
        rc = oscore_context_resume(&p->osc, sp->ssn_mark);
    if (rc) {
        srv_ctx_remove(srv, &key);
        return 0;
    }
    srv_ctx_persist(p);
    return 0;
}

void srv_store_outcome(struct edhoc_server *srv, int rc, const char *what, bool answered)
{
    if (!edhoc_state_is_shared(srv->cfg.db))
        return;
    uint64_t now = srv_mono_ms();
    if (rc == EDHOC_STATE_ERR_IO) {
        srv->store_unavailable = true;
        srv->store_probe_ms = now + SRV_STORE_RETRY_S * 1000u;
        if (!srv->store_down) {
            srv->store_down = true;
            srv->store_down_ms = now;
            srv_log(srv, EDHOC_LOG_ERR,
                    "state: the %s store is out of reach (%s failed): contexts in memory go on "
                    "within their reserved sequence numbers; new handshakes and contexts not in "
                    "memory get 5.03 with Max-Age %u until it answers",
                    edhoc_state_backend_name(srv->cfg.db), what, SRV_STORE_RETRY_S);
        }
    } else if (srv->store_down && (answered || now >= srv->store_probe_ms)) {
        /* A round trip's success (answered: a lookup) is the store's
         * answer at once. Another success counts only once the retry
         * time has come: before it, a put is queued (its writer finds
         * out) and a mark may come from a block reserved earlier, neither
         * a round trip; the store is asked again (a put, a takeover
         * check) only from then on. */
        srv->store_down = false;
        srv_log(srv, EDHOC_LOG_NOTICE, "state: the %s store answers again, after %.1f s",
                edhoc_state_backend_name(srv->cfg.db), (double)(now - srv->store_down_ms) / 1000);
    }
}

void srv_ctx_fetched_verdict(struct edhoc_server *srv, struct peer_ctx *p, long n)
{
    if (n >= 0 || n == OSCORE_ERR_ECHO_REQUIRED) {
        srv->st.contexts_fetched++;
        srv_log(srv, EDHOC_LOG_INFO,
                "state: context of a request not in memory taken from the %s store; its sequence "
                "numbers continue above %llu, Echo first (RFC 8613 Appendix B.1.2)",
                edhoc_state_backend_name(srv->cfg.db), (unsigned long long)p->osc.ssn);
        srv->fetched_for_request = NULL; /* kept */
    } else {
        srv_log(srv, EDHOC_LOG_INFO,
                "state: a request named a context of the %s store and did not verify under it "
                "(%s): nothing taken, the copy not kept",
                edhoc_state_backend_name(srv->cfg.db), oscore_strerror((int)n));
    }
}

struct peer_ctx *srv_ctx_fetch(struct edhoc_server *srv, const struct ctx_key *key)
{
    struct edhoc_state_peer sp;
    int rc = edhoc_state_get_peer(srv->cfg.db, srv_key_idc(key), key->idc_len, key->rid,
                                  key->rid_len, &sp);
    srv_store_outcome(srv, rc, "a context not in memory looked up", true);
    struct peer_ctx *p = NULL;
    if (rc == 0) {
        /* A static context is served only by a responder configured with
         * it (its file is the authority), and a B.2 row never moves. */
        if (sp.method >= 0 && load_one(srv, &sp) == 0)
            p = srv_ctx_find(srv, key);
    } else if (rc != EDHOC_STATE_ERR_NOT_FOUND && rc != EDHOC_STATE_ERR_IO) {
        srv_log(srv, EDHOC_LOG_ERR, "state: cannot look up a context in the %s store: %s",
                edhoc_state_backend_name(srv->cfg.db), edhoc_state_strerror(rc));
    }
    edhoc_wipe(&sp, sizeof sp);
    return p;
}

static int ctx_used_before(const void *a, const void *b)
{
    uint32_t x = ((const struct peer_ctx *)a)->used_ds, y = ((const struct peer_ctx *)b)->used_ds;
    return x < y ? -1 : x > y;
}

long edhoc_server_load_state(struct edhoc_server *srv)
{
    if (!srv->cfg.db)
        return 0;
    /* The policy holds across restarts: rows idle for longer than the
     * lifetime, then all but the max_contexts most recently used, are
     * deleted (with their marks) before anything is loaded. */
    uint64_t lifetime = srv->cfg.context_lifetime_ms;
    int64_t now = srv_wall_now_ms();
    int64_t used_before = lifetime < (uint64_t)now ? now - (int64_t)lifetime : 0;
    uint64_t expired = 0, evicted = 0;
    int rc = 0, crc = 0;
    if (srv->cfg.workers <= 1) {
        srv_state_write_begin(srv);
        rc = edhoc_state_prune(srv->cfg.db, used_before, srv->cfg.max_contexts, &expired, &evicted);
        crc = srv_state_write_end(srv);
    }
    if (rc || crc)
        return rc ? rc : crc;
    srv->st.contexts_expired += expired;
    srv->st.contexts_evicted += evicted;
    if (expired || evicted)
        srv_log(srv, EDHOC_LOG_NOTICE,
                "state: %llu stored context%s idle for longer than the context lifetime and %llu "
                "beyond max contexts %zu deleted",
                (unsigned long long)expired, expired == 1 ? "" : "s", (unsigned long long)evicted,
                srv->cfg.max_contexts);
    size_t before = srv->n_contexts;
    srv->n_stale_b2 = 0;
    rc = edhoc_state_for_each_owned_peer(srv->cfg.db, srv->cfg.workers, srv->cfg.worker_index,
                                         load_one, srv);
    if (!rc && srv->n_stale_b2) {
        /* After the walk: a walk calls nothing else on the handle. */
        srv_state_write_begin(srv);
        for (size_t i = 0; i < srv->n_stale_b2 && !rc; i++) {
            const struct ctx_key *k = &srv->stale_b2[i];
            rc = edhoc_state_delete_peer(srv->cfg.db, srv_key_idc(k), k->idc_len, k->rid,
                                         k->rid_len);
            if (rc == EDHOC_STATE_ERR_NOT_FOUND)
                rc = 0;
        }
        int crc = srv_state_write_end(srv);
        rc = rc ? rc : crc;
        if (!rc)
            srv_log(srv, EDHOC_LOG_INFO,
                    "state: %zu context%s of RFC 8613 Appendix B.2 runs before the restart "
                    "deleted (replay windows gone: B.2 runs again)",
                    srv->n_stale_b2, srv->n_stale_b2 == 1 ? "" : "s");
    }
    free(srv->stale_b2);
    srv->stale_b2 = NULL;
    srv->n_stale_b2 = srv->cap_stale_b2 = 0;
    /* A table scan in key order and a sort here cost a fifth of reading
     * the rows in order of use through the index. */
    edhoc_ilru_sort(&srv->ctx_lru, ctx_used_before);
    if (rc)
        return rc;
    return (long)(srv->n_contexts - before);
}

int edhoc_server_save_state(struct edhoc_server *srv)
{
    if (!srv->cfg.db)
        return 0;
    /* Oldest first, each stored use after the one before: uses within one
     * tenth of a second keep their order too, which the next start's
     * choice of the most recently used relies on. Contexts not used during
     * the run keep the rows they were loaded from. */
    int64_t floor = 0;
    for (uint32_t i = edhoc_ilru_oldest(&srv->ctx_lru); i != EDHOC_NONE;
         i = edhoc_ilru_newer(&srv->ctx_lru, i)) {
        struct peer_ctx *p = srv_ctx_at(srv, i);
        if (p->used_ds < srv->start_ds)
            continue;
        int64_t stamp = srv_wall_ms_of(srv, srv_used_ms(p));
        floor = stamp > floor ? stamp : floor + 1;
        srv_state_write_begin(srv);
        int rc = edhoc_state_touch_peer(srv->cfg.db, srv_key_idc(&p->key), p->key.idc_len,
                                        p->key.rid, p->key.rid_len, floor);
        if (rc && rc != EDHOC_STATE_ERR_NOT_FOUND) {
            srv_log(srv, EDHOC_LOG_ERR, "state: cannot store when a context was used: %s",
                    edhoc_state_strerror(rc));
            break;
        }
        p->use = 0;
    }
    return srv_state_write_end(srv);
}

/* Every value a static context has fits a state row, so none is ever
 * served without its mark being stored. */
_Static_assert(OSCORE_MAX_ID <= EDHOC_STATE_MAX_ID, "recipient / sender IDs fit the state");
_Static_assert(OSCORE_MAX_ID_CONTEXT <= EDHOC_STATE_MAX_ID_CONTEXT, "ID Contexts fit the state");
_Static_assert(OSCORE_MAX_MASTER_SECRET <= EDHOC_STATE_MAX_SECRET, "master secrets fit the state");
_Static_assert(OSCORE_MAX_MASTER_SALT <= EDHOC_STATE_MAX_SALT, "master salts fit the state");

/* The keying material the state's put compares to decide whether a row
 * is the same context (and keeps its mark) or a new one. */
static bool same_keying_material(const struct edhoc_state_peer *a, const struct edhoc_state_peer *b)
{
    return a->sender_id_len == b->sender_id_len &&
           !memcmp(a->sender_id, b->sender_id, a->sender_id_len) &&
           a->master_secret_len == b->master_secret_len &&
           edhoc_ct_equal(a->master_secret, b->master_secret, a->master_secret_len) &&
           a->master_salt_len == b->master_salt_len &&
           edhoc_ct_equal(a->master_salt, b->master_salt, a->master_salt_len) &&
           a->aead_alg == b->aead_alg && a->hkdf_alg == b->hkdf_alg;
}

/* The state row of a configured context (under key, which may carry
 * another ID Context than cfg's: Appendix B.2), its mark 0. */
void srv_static_row(struct edhoc_state_peer *sp, const struct ctx_key *key,
                    const struct oscore_config *cfg, const char *peer)
{
    memset(sp, 0, sizeof *sp);
    memcpy(sp->recipient_id, key->rid, key->rid_len);
    sp->recipient_id_len = key->rid_len;
    sp->has_id_context = key->has_idc;
    memcpy(sp->id_context, key->idc, key->idc_len);
    sp->id_context_len = key->idc_len;
    memcpy(sp->sender_id, cfg->sender_id, cfg->sender_id_len);
    sp->sender_id_len = cfg->sender_id_len;
    memcpy(sp->master_secret, cfg->master_secret, cfg->master_secret_len);
    sp->master_secret_len = cfg->master_secret_len;
    if (cfg->has_master_salt) {
        memcpy(sp->master_salt, cfg->master_salt, cfg->master_salt_len);
        sp->master_salt_len = cfg->master_salt_len;
    }
    sp->aead_alg = cfg->aead_alg;
    sp->hkdf_alg = cfg->hkdf_alg;
    sp->method = sp->suite = -1;
    snprintf(sp->peer, sizeof sp->peer, "%s", peer);
    sp->created = (int64_t)time(NULL);
}

int edhoc_server_add_static_context(struct edhoc_server *srv, const struct oscore_config *cfg,
                                    const char *origin)
{
    /* RFC 8613 Section 7.2.1 and Appendix B.1: a context used across
     * restarts must not reuse a sender sequence number. A static context
     * comes back with the same keys after every restart, so without a
     * durable mark it would start again at 0 and reuse nonces. */
    if (!srv->cfg.db)
        return EDHOC_SERVER_ERR_NO_STATE;
    if (cfg->recipient_id_len > OSCORE_MAX_ID || cfg->sender_id_len > OSCORE_MAX_ID ||
        (cfg->has_id_context && cfg->id_context_len > OSCORE_MAX_ID_CONTEXT) ||
        cfg->master_secret_len > OSCORE_MAX_MASTER_SECRET ||
        (cfg->has_master_salt && cfg->master_salt_len > OSCORE_MAX_MASTER_SALT))
        return OSCORE_ERR_INVALID;
    struct ctx_key key;
    srv_key_set(&key, cfg->has_id_context ? cfg->id_context : NULL, cfg->id_context_len,
                cfg->recipient_id, cfg->recipient_id_len);
    /* Section 3.3: the ID Context together with the Recipient ID tells
     * contexts apart, so the same pair twice is one context configured
     * twice. */
    if (srv_ctx_find(srv, &key))
        return OSCORE_ERR_INVALID;
    if (edhoc_state_owner(cfg->recipient_id, cfg->recipient_id_len, srv->cfg.workers) !=
        srv->cfg.worker_index)
        return EDHOC_SERVER_NOT_OWNED;
    struct b2_entry *b2 = NULL;
    if (cfg->rfc8613_b2) {
        /* Appendix B.2 step 2 derives ID2 = R2 || ID1, which must fit an
         * ID Context; and a request #1 names its inputs by kid alone, so
         * one set of inputs per Recipient ID. */
        if (cfg->id_context_len + OSCORE_B2_NONCE_LEN > OSCORE_MAX_ID_CONTEXT)
            return OSCORE_ERR_ID_CONTEXT_TOO_LONG;
        if (srv_b2_find(srv, cfg->recipient_id, cfg->recipient_id_len))
            return OSCORE_ERR_INVALID;
        struct b2_entry *grown = realloc(srv->b2, (srv->n_b2 + 1) * sizeof *grown);
        if (!grown)
            return OSCORE_ERR_NOMEM;
        srv->b2 = grown;
        b2 = &srv->b2[srv->n_b2];
        memset(b2, 0, sizeof *b2);
        b2->cfg = *cfg;
        b2->configured = b2->current = key;
        if (oscore_b2_server_init(&b2->run, 0)) {
            edhoc_wipe(b2, sizeof *b2);
            return OSCORE_ERR_INVALID;
        }
    }
    struct peer_ctx *p = srv_ctx_insert(srv, &key, true);
    int rc = p ? oscore_context_init_config(&p->osc, srv->cfg.ops, cfg) : OSCORE_ERR_INVALID;
    if (rc) {
        srv_ctx_remove(srv, &key);
        if (b2)
            edhoc_wipe(b2, sizeof *b2);
        return rc;
    }

    struct edhoc_state_peer sp, stored;
    srv_static_row(&sp, &key, cfg, "static");

    rc = edhoc_state_get_peer(srv->cfg.db, srv_key_idc(&key), key.idc_len, key.rid, key.rid_len,
                              &stored);
    if (rc == 0 && same_keying_material(&stored, &sp)) {
        /* Seen before: continue above its mark, Echo for the window. A
         * mark past the sequence-number limit leaves the context unusable:
         * refuse it rather than serve a dead context. */
        rc = oscore_context_resume(&p->osc, stored.ssn_mark);
        if (!rc)
            srv_log(srv, EDHOC_LOG_INFO, "static context %s: resumes above stored mark %llu",
                    origin ? origin : "", (unsigned long long)stored.ssn_mark);
    } else if (rc == 0 || rc == EDHOC_STATE_ERR_NOT_FOUND) {
        /* New, or new keying material under this key: its sequence
         * numbers start at 0 (put replaces the old row and its mark). */
        sp.ssn_mark = 0;
        rc = edhoc_state_put_peer(srv->cfg.db, &sp);
    }
    edhoc_wipe(&sp, sizeof sp);
    edhoc_wipe(&stored, sizeof stored);
    if (rc) {
        srv_ctx_remove(srv, &key);
        if (b2)
            edhoc_wipe(b2, sizeof *b2);
        return rc;
    }
    srv_ctx_persist(p);
    if (b2) {
        srv->n_b2++;
        srv_log(srv, EDHOC_LOG_INFO,
                "static context %s: RFC 8613 Appendix B.2 (rfc8613_b_2): a request without a valid "
                "context gets response #1 instead of an Echo challenge",
                origin ? origin : "");
    }
    return 0;
}
