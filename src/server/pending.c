/*
 * Handshakes in progress: the pool, the lookups by C_R and (bare framing)
 * by peer address, age and trust order for eviction, and the choice of
 * C_R.
 */
#include "server_internal.h"

struct pending *srv_pending_at(const struct edhoc_server *srv, uint32_t i)
{
    return edhoc_pool_at(&srv->pending_pool, i);
}

uint64_t srv_c_r_hash_of(const void *entry, void *user)
{
    const struct pending *h = entry;
    return edhoc_tab_hash(&((const struct edhoc_server *)user)->seed, h->c_r, h->c_r_len);
}

static uint64_t peer_hash(const struct edhoc_server *srv, const char *peer)
{
    return edhoc_tab_hash(&srv->seed, peer, strlen(peer));
}

uint64_t srv_peer_hash_of(const void *entry, void *user)
{
    return peer_hash(user, ((const struct pending *)entry)->peer);
}

/* The A.2 handshake whose C_R this is (a bare one is found by address). */
struct pending *srv_pending_find(struct edhoc_server *srv, const uint8_t *c_r, size_t len)
{
    uint64_t hash = edhoc_tab_hash(&srv->seed, c_r, len);
    for (uint32_t i = edhoc_itab_first(&srv->pending_by_c_r, hash); i != EDHOC_NONE;
         i = edhoc_itab_next(&srv->pending_by_c_r, i)) {
        struct pending *h = srv_pending_at(srv, i);
        if (h->framing == EDHOC_FRAMING_A2 && h->c_r_len == len && !memcmp(h->c_r, c_r, len))
            return h;
    }
    return NULL;
}

/* Whether a handshake in progress, of either framing, has this C_R. */
static bool pending_c_r_in_use(struct edhoc_server *srv, const uint8_t *c_r, size_t len)
{
    uint64_t hash = edhoc_tab_hash(&srv->seed, c_r, len);
    for (uint32_t i = edhoc_itab_first(&srv->pending_by_c_r, hash); i != EDHOC_NONE;
         i = edhoc_itab_next(&srv->pending_by_c_r, i)) {
        struct pending *h = srv_pending_at(srv, i);
        if (h->c_r_len == len && !memcmp(h->c_r, c_r, len))
            return true;
    }
    return false;
}

/* The bare handshake of a peer address (the newest if there were two). */
struct pending *srv_pending_find_bare(struct edhoc_server *srv, const char *peer)
{
    struct pending *best = NULL;
    uint64_t hash = peer_hash(srv, peer);
    for (uint32_t i = edhoc_itab_first(&srv->pending_by_peer, hash); i != EDHOC_NONE;
         i = edhoc_itab_next(&srv->pending_by_peer, i)) {
        struct pending *h = srv_pending_at(srv, i);
        if (!strcmp(h->peer, peer) && (!best || h->seq > best->seq))
            best = h;
    }
    return best;
}

/* Index a handshake once its C_R, framing and peer are set: by C_R, and a
 * bare one by its peer's address too. */
void srv_pending_index(struct edhoc_server *srv, struct pending *h)
{
    if (h->indexed)
        return;
    edhoc_itab_insert(&srv->pending_by_c_r, h->self, srv_c_r_hash_of(h, srv));
    if (h->framing == EDHOC_FRAMING_BARE)
        edhoc_itab_insert(&srv->pending_by_peer, h->self, peer_hash(srv, h->peer));
    edhoc_cid_space_add(&srv->cids, h->c_r, h->c_r_len);
    h->indexed = true;
}

void srv_pending_free(struct edhoc_server *srv, struct pending *h)
{
    if (!h->used)
        return;
    if (h->indexed) {
        edhoc_itab_remove(&srv->pending_by_c_r, h->self, srv_c_r_hash_of(h, srv));
        if (h->framing == EDHOC_FRAMING_BARE)
            edhoc_itab_remove(&srv->pending_by_peer, h->self, peer_hash(srv, h->peer));
        edhoc_cid_space_remove(&srv->cids, h->c_r, h->c_r_len, 0);
    }
    edhoc_ilru_remove(&srv->pending_age, h->self);
    edhoc_ilru_remove(&srv->pending_by_trust[h->trust], h->self);
    edhoc_session_wipe(&h->s);
    srv_key_log_free(h);
    edhoc_pool_release(&srv->pending_pool, h->self);
    srv->n_pending--;
}

/* A slot for a handshake of an endpoint of this trust, or NULL: the table
 * is full and every handshake in it is of an endpoint ranked above. Full:
 * the oldest handshake of the lowest trust present makes room (its
 * initiator may retry), so that addresses that only answered an Echo --
 * which a distributed flood of real hosts can (RFC 9528 Section 9.7) --
 * push out each other and unverified ones, never a peer that completed
 * EDHOC or OSCORE; a new endpoint is refused rather than evict one ranked
 * above it. O(1): one recency list per trust level. */
struct pending *srv_pending_alloc(struct edhoc_server *srv, enum edhoc_amp_trust trust)
{
    uint32_t i = edhoc_pool_alloc(&srv->pending_pool);
    if (i == EDHOC_NONE) {
        uint32_t victim = EDHOC_NONE;
        for (int t = 0; victim == EDHOC_NONE && t <= (int)trust; t++)
            victim = edhoc_ilru_oldest(&srv->pending_by_trust[t]);
        if (victim == EDHOC_NONE) {
            edhoc_amp_note_pending_refused(srv->cfg.amp);
            return NULL;
        }
        struct pending *oldest = srv_pending_at(srv, victim);
        srv_log(srv, EDHOC_LOG_INFO, "handshake peer=%s evicted (max pending %zu reached)",
                oldest->peer, srv->cfg.max_pending);
        srv->st.evicted++;
        edhoc_amp_note_pending_evicted(srv->cfg.amp, (enum edhoc_amp_trust)oldest->trust);
        char why[96];
        snprintf(why, sizeof why, "evicted before message_3: max pending %zu reached",
                 srv->cfg.max_pending);
        srv_hs_end_pending(srv, oldest, EDHOC_SERVER_EVICTED, "message_3", why);
        srv_pending_free(srv, oldest);
        i = edhoc_pool_alloc(&srv->pending_pool);
        if (i == EDHOC_NONE)
            return NULL;
    }
    struct pending *h = srv_pending_at(srv, i);
    h->self = i;
    h->used = true;
    h->seq = ++srv->pending_seq;
    h->trust = (uint8_t)trust;
    h->klog = NULL;
    edhoc_ilru_push(&srv->pending_age, i);
    edhoc_ilru_push(&srv->pending_by_trust[trust], i);
    srv->n_pending++;
    return h;
}

/* A longer C_R candidate: not C_I, no handshake's, no context's. */
static bool c_r_in_use(struct edhoc_server *srv, const uint8_t *c, size_t len, const uint8_t *c_i,
                       size_t c_i_len)
{
    if (len == c_i_len && !memcmp(c, c_i, len))
        return true;
    /* C_R becomes our Recipient ID: one shared with a static context of
     * any ID Context would make requests without 'kid context' try both. */
    return pending_c_r_in_use(srv, c, len) || srv_rid_in_use(srv, c, len);
}

/* Random bytes for C_R candidates, drawn from the RNG in batches: C_R is
 * public (sent in clear in message_2), and one RNG call per candidate was
 * a sixth of a loaded responder's CPU (OpenSSL's DRBG makes a getpid()
 * system call on every call). */
static int c_r_random(struct edhoc_server *srv, uint8_t *out, size_t len)
{
    if (srv->c_r_pool_left < len) {
        if (srv->cfg.ops->random(srv->cfg.ops->rng_ctx, srv->c_r_pool, sizeof srv->c_r_pool))
            return -1;
        srv->c_r_pool_left = sizeof srv->c_r_pool;
    }
    memcpy(out, srv->c_r_pool + sizeof srv->c_r_pool - srv->c_r_pool_left, len);
    srv->c_r_pool_left -= len;
    return 0;
}

/* The one-byte C_Rs a form allows. RFC 9528 Section 3.3.2: 0x00-0x17 and
 * 0x20-0x37 have an int form (sent as that CBOR int). Never 0..3: a bare
 * message_1 starts with METHOD 0..3, so such a C_R would make a
 * C_R-prefixed message_3 ambiguous. */
void srv_c_r_one_byte_allowed(int form, uint64_t out[4])
{
    memset(out, 0, 4 * sizeof *out);
    for (unsigned b = 4; b < 256; b++) {
        bool int_form = b <= 0x17 || (b >= 0x20 && b <= 0x37);
        if (form == EDHOC_C_R_FORM_ANY || (form == EDHOC_C_R_FORM_BSTR) != int_form)
            out[b / 64] |= (uint64_t)1 << (b % 64);
    }
}

/* C_R distinct from C_I and unique among live handshakes and contexts
 * (RFC 9528 Section 3.3, RFC 9668 Section 4.2): one byte while there is
 * room, uniformly among the free values of the configured form; longer
 * when the one-byte space is full. The counters of srv->cids make this
 * constant work however many C_Rs are taken: the one-byte choice reads
 * four bitmap words, and a longer C_R is drawn at the shortest length
 * that is less than half full, so each try succeeds with probability
 * above 1/2 (8 tries per length; all failing at every length: below
 * 2^-8 per length). */
int srv_choose_c_r(struct edhoc_server *srv, const uint8_t *c_i, size_t c_i_len, uint8_t *out,
                   size_t *out_len)
{
    if (srv->cfg.c_r_len) {
        /* A fixed C_R, for a test with one peer. */
        memcpy(out, srv->cfg.c_r, srv->cfg.c_r_len);
        *out_len = srv->cfg.c_r_len;
        return 0;
    }
    unsigned workers = srv->cfg.workers > 1 ? srv->cfg.workers : 1;
    uint8_t r[4];
    if (c_r_random(srv, r, sizeof r))
        return -1;
    uint32_t rv = (uint32_t)r[0] << 24 | (uint32_t)r[1] << 16 | (uint32_t)r[2] << 8 | r[3];
    /* A fleet's responders choose C_Rs without asking each other, and a
     * C_R is the Recipient ID that names a context in the shared store:
     * four random bytes there, not the first free one-byte value every
     * responder would pick alike (docs/DESIGN.md, "The state backend
     * interface and the fleet responder"). */
    bool shared = edhoc_state_is_shared(srv->cfg.db);
    int one = shared ? -1
                     : edhoc_cid_space_pick_one(&srv->cids, srv->c_r_one_allowed,
                                                c_i_len == 1 ? c_i[0] : -1, srv_clock_ms(srv), rv);
    if (one >= 0) {
        out[0] = (uint8_t)one;
        *out_len = 1;
        return 0;
    }
    for (size_t len = shared ? 4 : edhoc_cid_space_len(&srv->cids, 4); len <= 4; len++) {
        for (int attempt = 0; attempt < 8; attempt++) {
            uint8_t c[4];
            if (c_r_random(srv, c, len))
                return -1;
            /* Among several workers, one whose last byte names this one
             * (edhoc_state_owner): its OSCORE requests are steered here. */
            if (workers > 1) {
                unsigned b = c[len - 1] - c[len - 1] % workers + srv->cfg.worker_index;
                c[len - 1] = (uint8_t)(b > 255 ? b - workers : b);
            }
            if (!c_r_in_use(srv, c, len, c_i, c_i_len)) {
                memcpy(out, c, len);
                *out_len = len;
                return 0;
            }
        }
    }
    return -1;
}
