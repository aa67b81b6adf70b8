/*
 * The fleet's PostgreSQL store behind an edhoc_state_db handle
 * (edhoc_state_open_backend): what the responder engine calls, mapped on
 * leases and reservations (docs/DESIGN.md, "Fleet store").
 *
 * The handle remembers the lease of every context this process serves
 * (created here by put, or taken by get on a request that named a
 * context not in memory). A mark the engine stores becomes a reservation
 * under that lease: the row's ssn_mark moves up to the mark, and only if
 * the lease is still ours, so that two responders never send under the
 * same (key, nonce) whatever the timing. A reservation that finds the
 * lease taken answers EDHOC_STATE_ERR_TAKEN_OVER: the engine drops its
 * copy.
 */
#include "state_pg.h"

#include <stdlib.h>
#include <string.h>

#include "edhoc/crypto.h"

struct lease_entry {
    struct lease_entry *next;
    bool has_idc;
    uint8_t idc_len, rid_len;
    uint8_t idc[EDHOC_STATE_MAX_ID_CONTEXT];
    uint8_t rid[EDHOC_STATE_MAX_ID];
    struct edhoc_state_pg_lease lease;
};

struct pg_backend {
    struct edhoc_state_pg *pg;
    int64_t lease_ms;
    struct lease_entry **buckets;
    size_t n_buckets, n;
};

static uint64_t key_hash(const uint8_t *idc, size_t idc_len, const uint8_t *rid, size_t rid_len)
{
    /* FNV-1a over a tag, the ID Context and the Recipient ID: the keys are
     * public identifiers, and a bucket's chain is short in any case. */
    uint64_t h = 0xcbf29ce484222325u;
    h = (h ^ (idc ? 1u : 0u)) * 0x100000001b3u;
    for (size_t i = 0; i < idc_len; i++)
        h = (h ^ idc[i]) * 0x100000001b3u;
    h = (h ^ 0xffu) * 0x100000001b3u;
    for (size_t i = 0; i < rid_len; i++)
        h = (h ^ rid[i]) * 0x100000001b3u;
    return h;
}

static struct lease_entry **lease_slot(struct pg_backend *b, const uint8_t *idc, size_t idc_len,
                                       const uint8_t *rid, size_t rid_len)
{
    struct lease_entry **e = &b->buckets[key_hash(idc, idc_len, rid, rid_len) % b->n_buckets];
    for (; *e; e = &(*e)->next) {
        const struct lease_entry *x = *e;
        if (x->has_idc == (idc != NULL) && x->idc_len == idc_len && x->rid_len == rid_len &&
            !memcmp(x->idc, idc ? idc : (const uint8_t *)"", idc_len) &&
            !memcmp(x->rid, rid, rid_len))
            break;
    }
    return e;
}

static int lease_grow(struct pg_backend *b)
{
    size_t cap = b->n_buckets * 2;
    struct lease_entry **nb = calloc(cap, sizeof *nb);
    if (!nb)
        return EDHOC_STATE_ERR_IO;
    for (size_t i = 0; i < b->n_buckets; i++) {
        for (struct lease_entry *e = b->buckets[i], *next; e; e = next) {
            next = e->next;
            size_t j = key_hash(e->has_idc ? e->idc : NULL, e->idc_len, e->rid, e->rid_len) % cap;
            e->next = nb[j];
            nb[j] = e;
        }
    }
    free(b->buckets);
    b->buckets = nb;
    b->n_buckets = cap;
    return 0;
}

static int lease_keep(struct pg_backend *b, const uint8_t *idc, size_t idc_len,
                      const uint8_t *rid, size_t rid_len, const struct edhoc_state_pg_lease *l)
{
    if (idc_len > EDHOC_STATE_MAX_ID_CONTEXT || rid_len > EDHOC_STATE_MAX_ID)
        return EDHOC_STATE_ERR_ARG;
    struct lease_entry **slot = lease_slot(b, idc, idc_len, rid, rid_len);
    if (*slot) {
        (*slot)->lease = *l;
        return 0;
    }
    if (b->n >= b->n_buckets && lease_grow(b) == 0)
        slot = lease_slot(b, idc, idc_len, rid, rid_len);
    struct lease_entry *e = calloc(1, sizeof *e);
    if (!e)
        return EDHOC_STATE_ERR_IO;
    e->has_idc = idc != NULL;
    e->idc_len = (uint8_t)idc_len;
    if (idc_len)
        memcpy(e->idc, idc, idc_len);
    e->rid_len = (uint8_t)rid_len;
    memcpy(e->rid, rid, rid_len);
    e->lease = *l;
    *slot = e;
    b->n++;
    return 0;
}

static void lease_forget(struct pg_backend *b, const uint8_t *idc, size_t idc_len,
                         const uint8_t *rid, size_t rid_len)
{
    struct lease_entry **slot = lease_slot(b, idc, idc_len, rid, rid_len);
    if (*slot) {
        struct lease_entry *e = *slot;
        *slot = e->next;
        free(e);
        b->n--;
    }
}

static int be_put(void *impl, const struct edhoc_state_peer *p)
{
    struct pg_backend *b = impl;
    struct edhoc_state_pg_lease l;
    int rc = edhoc_state_pg_put_peers(b->pg, p, 1, &l);
    if (rc == 0)
        rc = lease_keep(b, p->has_id_context ? p->id_context : NULL, p->id_context_len,
                        p->recipient_id, p->recipient_id_len, &l);
    return rc;
}

static int be_get(void *impl, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                  size_t rid_len, struct edhoc_state_peer *out)
{
    struct pg_backend *b = impl;
    struct edhoc_state_pg_lease l;
    /* A request for this context reached us: it is ours from now on
     * (takeover). Nothing is reserved here: the engine's first mark is
     * the first reservation, above every number the previous owner was
     * given, since the row's ssn_mark only grows. */
    int rc = edhoc_state_pg_acquire(b->pg, idc, idc_len, rid, rid_len, 0, b->lease_ms, true, &l,
                                    out);
    if (rc == 0)
        rc = lease_keep(b, idc, idc_len, rid, rid_len, &l);
    return rc;
}

static int be_store_ssn(void *impl, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                        size_t rid_len, uint64_t mark)
{
    struct pg_backend *b = impl;
    struct lease_entry **slot = lease_slot(b, idc, idc_len, rid, rid_len);
    if (!*slot) {
        /* A context we serve without a lease we know of (a static one, or
         * one whose lease we forgot): take it, without taking it from
         * another responder that holds it. */
        struct edhoc_state_pg_lease l;
        int rc = edhoc_state_pg_acquire(b->pg, idc, idc_len, rid, rid_len, 0, b->lease_ms, false,
                                        &l, NULL);
        if (rc == EDHOC_STATE_ERR_LEASED)
            return EDHOC_STATE_ERR_TAKEN_OVER;
        if (rc == 0)
            rc = lease_keep(b, idc, idc_len, rid, rid_len, &l);
        if (rc)
            return rc;
        slot = lease_slot(b, idc, idc_len, rid, rid_len);
        if (!*slot)
            return EDHOC_STATE_ERR_IO;
    }
    struct edhoc_state_pg_lease *l = &(*slot)->lease;
    uint64_t count = mark > l->end ? mark - l->end : 0;
    int rc = edhoc_state_pg_reserve(b->pg, idc, idc_len, rid, rid_len, count, b->lease_ms, l);
    if (rc == EDHOC_STATE_ERR_LEASE_LOST) {
        lease_forget(b, idc, idc_len, rid, rid_len);
        return EDHOC_STATE_ERR_TAKEN_OVER;
    }
    return rc;
}

static int be_delete(void *impl, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                     size_t rid_len)
{
    struct pg_backend *b = impl;
    struct lease_entry **slot = lease_slot(b, idc, idc_len, rid, rid_len);
    int rc;
    if (*slot) {
        /* Only our own: a context another responder took over is its to
         * keep (an eviction here is about our memory, not the fleet's). */
        rc = edhoc_state_pg_release(b->pg, idc, idc_len, rid, rid_len, &(*slot)->lease);
        if (rc == EDHOC_STATE_ERR_LEASE_LOST)
            rc = 0;
        lease_forget(b, idc, idc_len, rid, rid_len);
    } else {
        rc = 0;
    }
    return rc;
}

static int be_touch(void *impl, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                    size_t rid_len, int64_t last_used)
{
    (void)impl, (void)idc, (void)idc_len, (void)rid, (void)rid_len, (void)last_used;
    /* A use time is a statistic: never a round trip on the request path
     * (the row's lease expiry says who used it last). */
    return 0;
}

static int be_for_each(void *impl, int (*fn)(void *ctx, const struct edhoc_state_peer *p),
                       void *ctx)
{
    (void)impl, (void)fn, (void)ctx;
    /* Nothing to load at start: a context is taken from the store when a
     * request names it (be_get), by whichever responder it reaches. */
    return 0;
}

static int be_prune(void *impl, int64_t used_before, uint64_t keep, uint64_t *expired,
                    uint64_t *evicted)
{
    struct pg_backend *b = impl;
    (void)keep; /* one responder's memory bound is not the fleet's */
    if (evicted)
        *evicted = 0;
    return edhoc_state_pg_prune(b->pg, used_before, UINT64_MAX, expired, NULL);
}

static void be_close(void *impl)
{
    struct pg_backend *b = impl;
    for (size_t i = 0; i < b->n_buckets; i++) {
        for (struct lease_entry *e = b->buckets[i], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    }
    free(b->buckets);
    edhoc_state_pg_close(b->pg);
    free(b);
}

static const struct edhoc_state_backend pg_backend_ops = {
    .name = "postgresql",
    .shared = true,
    .put_peer = be_put,
    .get_peer = be_get,
    .store_ssn = be_store_ssn,
    .delete_peer = be_delete,
    .touch_peer = be_touch,
    .for_each_peer = be_for_each,
    .prune = be_prune,
    .close = be_close,
};

int edhoc_state_pg_open_db(const char *conninfo, const char *owner, int64_t lease_ms,
                           struct edhoc_state_db **db, struct edhoc_state_pg **pg_out, char *why,
                           size_t why_cap)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    *db = NULL;
    if (pg_out)
        *pg_out = NULL;
    struct pg_backend *b = calloc(1, sizeof *b);
    if (!b)
        return EDHOC_STATE_ERR_IO;
    b->n_buckets = 64;
    b->buckets = calloc(b->n_buckets, sizeof *b->buckets);
    b->lease_ms = lease_ms;
    int rc = b->buckets ? edhoc_state_pg_open(conninfo, owner, lease_ms, &b->pg, why, why_cap)
                        : EDHOC_STATE_ERR_IO;
    if (rc == 0)
        rc = edhoc_state_open_backend(&pg_backend_ops, b, db);
    if (rc) {
        if (b->pg)
            edhoc_state_pg_close(b->pg);
        free(b->buckets);
        free(b);
        return rc;
    }
    if (pg_out)
        *pg_out = b->pg;
    return 0;
}
