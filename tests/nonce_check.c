/*
 * The capture-based (key, nonce) uniqueness checker (see nonce_check.h).
 *
 * Adding only collects: context keys (deduplicated, so both sides' files of
 * one association give two keys, not four) and copies of the OSCORE
 * datagrams. The analysis runs over all of it at once, requests first, so
 * that a response finds its request whatever order the captures came in.
 */
#include "nonce_check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"

/* Context files are a few hundred bytes; anything far larger is not one. */
#define MAX_CONF_FILE (64 * 1024)
/* Largest UDP payload, so one plaintext buffer fits every message. */
#define MAX_DATAGRAM 65536
/* Requests a response is tried against (same token, same endpoints). A
 * client reusing one token forever would otherwise make this quadratic. */
#define MAX_REQUEST_TRIES 64
#define MAX_AAD           64
#define DIGEST_LEN        32

struct context_entry {
    struct oscore_context ctx; /* gives the Common IV and the nonce length */
    int aead_alg;
    bool has_id_context;
    uint8_t id_context[OSCORE_MAX_ID_CONTEXT];
    size_t id_context_len;
};

/* One AEAD key of a context: the Sender Key of the endpoint whose Sender ID
 * is owner_id. Each context gives two, partner of each other. */
struct key_view {
    size_t context;
    bool recipient_key; /* the context's Recipient Key (else its Sender Key) */
    uint8_t owner_id[OSCORE_MAX_ID];
    size_t owner_id_len;
    size_t partner;
};

enum msg_kind { KIND_REQUEST, KIND_RESPONSE, KIND_OTHER };

/* A CoAP message with an OSCORE option, as captured. */
struct captured {
    unsigned file;
    unsigned packet;
    struct timespec ts;
    int ip_version;
    uint8_t src[16], dst[16];
    uint16_t src_port, dst_port;
    enum msg_kind kind;
    uint8_t *bytes;
    size_t len;
};

/* What a request leaves for its responses. */
struct request_rec {
    size_t msg;
    bool usable; /* kid and Partial IV parsed */
    uint8_t kid[OSCORE_MAX_ID];
    size_t kid_len;
    uint8_t piv[OSCORE_MAX_PIV];
    size_t piv_len;
    long view; /* the key that verified it, -1 none */
    long next; /* older request in the same bucket, -1 none */
};

struct pair_entry {
    bool used;
    int alg;
    uint8_t key_len, nonce_len;
    uint8_t key[EDHOC_CRYPTO_MAX_KEY];
    uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE];
    size_t view;
    uint8_t id_piv[OSCORE_MAX_ID];
    size_t id_piv_len;
    uint8_t piv[OSCORE_MAX_PIV];
    size_t piv_len;
    struct nonce_check_location first;
    /* Digests of the different ciphertexts seen; [0] is the first one's. */
    uint8_t (*digests)[DIGEST_LEN];
    size_t n_digests;
};

/* A request (its key, kid and Partial IV) that a success answered, and
 * the first such answer's ciphertext digest. */
struct accepted_entry {
    bool used;
    int alg;
    uint8_t key_len, kid_len, piv_len;
    uint8_t key[EDHOC_CRYPTO_MAX_KEY];
    uint8_t kid[OSCORE_MAX_ID];
    uint8_t piv[OSCORE_MAX_PIV];
    uint8_t digest[DIGEST_LEN];
    bool twice;            /* counted already */
    unsigned file, packet; /* the first success */
};

#define TWICE_LINES 8 /* requests processed twice described in the print */

struct nonce_check {
    const struct edhoc_crypto_ops *crypto;
    struct context_entry **contexts;
    size_t n_contexts;
    struct key_view *views;
    size_t n_views;
    char **files;
    size_t n_files;
    struct captured *msgs;
    size_t n_msgs, cap_msgs;
    /* Counts of the capture reading, kept across analyses. */
    unsigned frames, datagrams, coap, skipped, ignored;

    bool analysed;
    struct request_rec *requests;
    size_t n_requests;
    long *buckets; /* newest request per bucket, -1 empty */
    size_t n_buckets;
    struct pair_entry *pairs;
    size_t n_pair_slots, n_pairs;
    struct nonce_check_violation *violations;
    size_t n_violations, cap_violations;
    struct accepted_entry *accepted; /* open addressing, n_acc_slots a power of 2 */
    size_t n_acc_slots;
    char twice_lines[TWICE_LINES][512];
    long *candidates;
    size_t cap_candidates;
    struct nonce_check_report report;
    uint8_t plaintext[MAX_DATAGRAM];
};

__attribute__((format(printf, 3, 4))) static void set_why(char *why, size_t cap, const char *fmt,
                                                          ...)
{
    if (!why || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

/* ---- Setup ---- */

struct nonce_check *nonce_check_new(void)
{
    struct nonce_check *nc = calloc(1, sizeof *nc);
    if (nc)
        nc->crypto = edhoc_crypto_openssl();
    return nc;
}

static void clear_analysis(struct nonce_check *nc)
{
    for (size_t i = 0; i < nc->n_pair_slots; i++)
        free(nc->pairs[i].digests);
    free(nc->pairs);
    nc->pairs = NULL;
    nc->n_pair_slots = nc->n_pairs = 0;
    free(nc->requests);
    nc->requests = NULL;
    nc->n_requests = 0;
    free(nc->buckets);
    nc->buckets = NULL;
    nc->n_buckets = 0;
    free(nc->violations);
    nc->violations = NULL;
    nc->n_violations = nc->cap_violations = 0;
    free(nc->accepted);
    nc->accepted = NULL;
    nc->n_acc_slots = 0;
    nc->analysed = false;
}

void nonce_check_free(struct nonce_check *nc)
{
    if (!nc)
        return;
    clear_analysis(nc);
    for (size_t i = 0; i < nc->n_contexts; i++) {
        oscore_context_wipe(&nc->contexts[i]->ctx);
        free(nc->contexts[i]);
    }
    free(nc->contexts);
    free(nc->views);
    for (size_t i = 0; i < nc->n_files; i++)
        free(nc->files[i]);
    free(nc->files);
    for (size_t i = 0; i < nc->n_msgs; i++)
        free(nc->msgs[i].bytes);
    free(nc->msgs);
    free(nc->candidates);
    edhoc_wipe(nc->plaintext, sizeof nc->plaintext);
    free(nc);
}

static size_t view_key(const struct nonce_check *nc, const struct key_view *v, const uint8_t **key)
{
    const struct oscore_context *c = &nc->contexts[v->context]->ctx;
    return v->recipient_key ? oscore_context_recipient_key(c, key)
                            : oscore_context_sender_key(c, key);
}

/* An existing view with the same algorithm, key, Common IV and owner: the
 * same key met again (typically through the peer's context file). */
static bool view_known(const struct nonce_check *nc, int alg, const uint8_t *key, size_t key_len,
                       const uint8_t *iv, size_t iv_len, const uint8_t *owner, size_t owner_len)
{
    for (size_t i = 0; i < nc->n_views; i++) {
        const struct key_view *v = &nc->views[i];
        const struct context_entry *e = nc->contexts[v->context];
        const uint8_t *k, *civ;
        size_t kl = view_key(nc, v, &k);
        size_t ivl = oscore_context_common_iv(&e->ctx, &civ);
        if (e->aead_alg == alg && kl == key_len && memcmp(k, key, kl) == 0 && ivl == iv_len &&
            memcmp(civ, iv, ivl) == 0 && v->owner_id_len == owner_len &&
            memcmp(v->owner_id, owner, owner_len) == 0)
            return true;
    }
    return false;
}

int nonce_check_add_context(struct nonce_check *nc, const struct oscore_config *cfg)
{
    if (!nc || !cfg)
        return OSCORE_ERR_INVALID;
    struct context_entry *e = calloc(1, sizeof *e);
    if (!e)
        return -1;
    int rc = oscore_context_init_config(&e->ctx, nc->crypto, cfg);
    if (rc) {
        free(e);
        return rc;
    }
    e->aead_alg = cfg->aead_alg ? cfg->aead_alg : EDHOC_COSE_AES_CCM_16_64_128;
    e->has_id_context = cfg->has_id_context;
    e->id_context_len = cfg->id_context_len;
    memcpy(e->id_context, cfg->id_context, cfg->id_context_len);

    const uint8_t *skey, *rkey, *iv;
    size_t key_len = oscore_context_sender_key(&e->ctx, &skey);
    oscore_context_recipient_key(&e->ctx, &rkey);
    size_t iv_len = oscore_context_common_iv(&e->ctx, &iv);
    bool have_sender =
        view_known(nc, e->aead_alg, skey, key_len, iv, iv_len, cfg->sender_id, cfg->sender_id_len);
    bool have_recipient = view_known(nc, e->aead_alg, rkey, key_len, iv, iv_len, cfg->recipient_id,
                                     cfg->recipient_id_len);
    if (have_sender && have_recipient) {
        oscore_context_wipe(&e->ctx);
        free(e);
        return 0;
    }
    struct context_entry **contexts =
        realloc(nc->contexts, (nc->n_contexts + 1) * sizeof *contexts);
    if (contexts)
        nc->contexts = contexts;
    struct key_view *views = realloc(nc->views, (nc->n_views + 2) * sizeof *views);
    if (views)
        nc->views = views;
    if (!contexts || !views) {
        oscore_context_wipe(&e->ctx);
        free(e);
        return -1;
    }
    size_t ci = nc->n_contexts++;
    nc->contexts[ci] = e;
    size_t first = nc->n_views;
    if (!have_sender) {
        struct key_view *v = &nc->views[nc->n_views++];
        memset(v, 0, sizeof *v);
        v->context = ci;
        v->owner_id_len = cfg->sender_id_len;
        memcpy(v->owner_id, cfg->sender_id, cfg->sender_id_len);
    }
    if (!have_recipient) {
        struct key_view *v = &nc->views[nc->n_views++];
        memset(v, 0, sizeof *v);
        v->context = ci;
        v->recipient_key = true;
        v->owner_id_len = cfg->recipient_id_len;
        memcpy(v->owner_id, cfg->recipient_id, cfg->recipient_id_len);
    }
    /* A half-known context (one key already met elsewhere) is its own
     * partner: the order of tries only saves work, it decides nothing. */
    for (size_t i = first; i < nc->n_views; i++)
        nc->views[i].partner = nc->n_views - first == 2 ? first + (1 - (i - first)) : i;
    nc->analysed = false;
    return 0;
}

int nonce_check_add_context_file(struct nonce_check *nc, const char *conf_path, char *why,
                                 size_t cap)
{
    if (!nc || !conf_path) {
        set_why(why, cap, "no checker or no file name");
        return -1;
    }
    FILE *f = fopen(conf_path, "rb");
    if (!f) {
        set_why(why, cap, "cannot open %s: %s", conf_path, strerror(errno));
        return -1;
    }
    char *text = malloc(MAX_CONF_FILE + 1);
    if (!text) {
        fclose(f);
        set_why(why, cap, "out of memory");
        return -1;
    }
    size_t len = fread(text, 1, MAX_CONF_FILE + 1, f);
    bool read_error = ferror(f) != 0;
    fclose(f);
    int rc = -1;
    if (read_error) {
        set_why(why, cap, "cannot read %s", conf_path);
    } else if (len > MAX_CONF_FILE) {
        set_why(why, cap, "%s: too large for a context file", conf_path);
    } else {
        struct oscore_config cfg;
        struct oscore_config_error err;
        memset(&err, 0, sizeof err);
        if (oscore_config_parse(text, len, &cfg, &err) != 0) {
            if (err.line)
                set_why(why, cap, "%s:%u: %s", conf_path, err.line, err.message);
            else
                set_why(why, cap, "%s: %s", conf_path, err.message);
        } else {
            rc = nonce_check_add_context(nc, &cfg);
            if (rc)
                set_why(why, cap, "%s: %s", conf_path,
                        rc == -1 ? "out of memory" : oscore_strerror(rc));
            rc = rc ? -1 : 0;
        }
        edhoc_wipe(&cfg, sizeof cfg);
    }
    edhoc_wipe(text, len < MAX_CONF_FILE + 1 ? len : MAX_CONF_FILE + 1);
    free(text);
    return rc;
}

/* ---- Reading captures ---- */

static bool has_oscore_option(const struct coap_msg *m)
{
    for (size_t i = 0; i < m->option_count; i++) {
        if (m->options[i].number == COAP_OPT_OSCORE)
            return true;
    }
    return false;
}

static int keep_message(struct nonce_check *nc, unsigned file, unsigned packet,
                        const struct timespec *ts, const struct edhoc_capture_packet *p,
                        const struct coap_msg *m)
{
    if (nc->n_msgs == nc->cap_msgs) {
        size_t n = nc->cap_msgs ? 2 * nc->cap_msgs : 64;
        struct captured *msgs = realloc(nc->msgs, n * sizeof *msgs);
        if (!msgs)
            return -1;
        nc->msgs = msgs;
        nc->cap_msgs = n;
    }
    struct captured *c = &nc->msgs[nc->n_msgs];
    memset(c, 0, sizeof *c);
    c->bytes = malloc(p->payload_len ? p->payload_len : 1);
    if (!c->bytes)
        return -1;
    memcpy(c->bytes, p->payload, p->payload_len);
    c->len = p->payload_len;
    c->file = file;
    c->packet = packet;
    if (ts)
        c->ts = *ts;
    c->ip_version = p->ip_version;
    memcpy(c->src, p->src, sizeof c->src);
    memcpy(c->dst, p->dst, sizeof c->dst);
    c->src_port = p->src_port;
    c->dst_port = p->dst_port;
    unsigned cls = m->code >> 5;
    c->kind = edhoc_coap_code_is_request(m->code) ? KIND_REQUEST
              : (cls >= 2 && cls <= 5)            ? KIND_RESPONSE
                                                  : KIND_OTHER;
    nc->n_msgs++;
    return 0;
}

int nonce_check_add_pcap(struct nonce_check *nc, const char *path, char *why, size_t cap)
{
    if (!nc || !path) {
        set_why(why, cap, "no checker or no file name");
        return -1;
    }
    char err[256];
    struct edhoc_capture_reader *r = edhoc_capture_reader_open(path, err, sizeof err);
    if (!r) {
        set_why(why, cap, "%s: %s", path, err);
        return -1;
    }
    char **files = realloc(nc->files, (nc->n_files + 1) * sizeof *files);
    char *name = strdup(path);
    if (files)
        nc->files = files;
    if (!files || !name) {
        free(name);
        edhoc_capture_reader_close(r);
        set_why(why, cap, "%s: out of memory", path);
        return -1;
    }
    unsigned file = (unsigned)nc->n_files;
    nc->files[nc->n_files++] = name;
    nc->analysed = false;

    int dlt = edhoc_capture_reader_dlt(r);
    unsigned packet = 0;
    int rc = 0;
    for (;;) {
        const uint8_t *frame;
        size_t caplen, wire_len;
        struct timespec ts = {0, 0};
        int n = edhoc_capture_reader_next(r, &frame, &caplen, &wire_len, &ts);
        if (n == 0)
            break;
        if (n < 0) {
            set_why(why, cap, "%s: damaged after packet %u: %s", path, packet,
                    edhoc_capture_reader_error(r));
            rc = -1;
            break;
        }
        packet++;
        nc->frames++;
        struct edhoc_capture_packet p;
        int prc = edhoc_capture_packet_parse(dlt, frame, caplen, wire_len, &p);
        if (prc == EDHOC_CAPTURE_ERR_LINK) {
            /* Every frame would be skipped: a check that saw nothing must
             * not pass as clean. */
            set_why(why, cap, "%s: link type %d is not decoded", path, dlt);
            rc = -1;
            break;
        }
        if (prc == EDHOC_CAPTURE_ERR_NOT_IP || prc == EDHOC_CAPTURE_ERR_NOT_UDP) {
            nc->ignored++;
            continue;
        }
        if (prc != 0) {
            nc->skipped++;
            continue;
        }
        nc->datagrams++;
        struct coap_msg m;
        if (edhoc_coap_msg_parse(p.payload, p.payload_len, &m) != 0) {
            nc->skipped++;
            continue;
        }
        nc->coap++;
        if (!has_oscore_option(&m))
            continue;
        if (keep_message(nc, file, packet, &ts, &p, &m) != 0) {
            set_why(why, cap, "%s: out of memory", path);
            rc = -1;
            break;
        }
    }
    edhoc_capture_reader_close(r);
    return rc;
}

/* ---- Analysis: matching responses to requests ---- */

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)

/* Bucket of a request (client -> server) or of a response looking for it
 * (server -> client, so the pair is reversed), and its token. */
static size_t exchange_bucket(const struct nonce_check *nc, int ip_version, const uint8_t *client,
                              uint16_t client_port, const uint8_t *server, uint16_t server_port,
                              const struct coap_msg *m)
{
    uint8_t ports[5] = {(uint8_t)(client_port >> 8), (uint8_t)client_port,
                        (uint8_t)(server_port >> 8), (uint8_t)server_port, (uint8_t)ip_version};
    uint64_t h = fnv1a(FNV_OFFSET, client, 16);
    h = fnv1a(h, server, 16);
    h = fnv1a(h, ports, sizeof ports);
    h = fnv1a(h, m->token, m->token_len);
    return (size_t)(h & (nc->n_buckets - 1));
}

static bool same_exchange(const struct captured *req, const struct coap_msg *req_msg,
                          const struct captured *resp, const struct coap_msg *resp_msg)
{
    return req->ip_version == resp->ip_version && memcmp(req->src, resp->dst, 16) == 0 &&
           memcmp(req->dst, resp->src, 16) == 0 && req->src_port == resp->dst_port &&
           req->dst_port == resp->src_port && req_msg->token_len == resp_msg->token_len &&
           memcmp(req_msg->token, resp_msg->token, req_msg->token_len) == 0;
}

static int ts_cmp(const struct timespec *a, const struct timespec *b)
{
    if (a->tv_sec != b->tv_sec)
        return a->tv_sec < b->tv_sec ? -1 : 1;
    if (a->tv_nsec != b->tv_nsec)
        return a->tv_nsec < b->tv_nsec ? -1 : 1;
    return 0;
}

/* Preference of a candidate request for a response: the latest request
 * before it in the same capture, then requests of other captures no later
 * than it (latest first), then anything else. */
struct candidate_order {
    const struct nonce_check *nc;
    const struct captured *resp;
};

static int candidate_rank(const struct candidate_order *o, const struct captured *req)
{
    if (req->file == o->resp->file)
        return req->packet < o->resp->packet ? 0 : 2;
    return ts_cmp(&req->ts, &o->resp->ts) <= 0 ? 1 : 2;
}

/* Is request a preferred over request b? */
static bool candidate_before(const struct candidate_order *o, long a, long b)
{
    const struct captured *ra = &o->nc->msgs[o->nc->requests[a].msg];
    const struct captured *rb = &o->nc->msgs[o->nc->requests[b].msg];
    int ka = candidate_rank(o, ra), kb = candidate_rank(o, rb);
    if (ka != kb)
        return ka < kb;
    if (ra->file == rb->file)
        return ra->packet > rb->packet;
    int t = ts_cmp(&ra->ts, &rb->ts);
    return t != 0 ? t > 0 : a > b;
}

/* The candidate requests of a response, best first; returns how many. */
static size_t find_requests(struct nonce_check *nc, const struct captured *resp,
                            const struct coap_msg *resp_msg)
{
    if (!nc->n_buckets)
        return 0;
    size_t b = exchange_bucket(nc, resp->ip_version, resp->dst, resp->dst_port, resp->src,
                               resp->src_port, resp_msg);
    size_t n = 0;
    for (long i = nc->buckets[b]; i >= 0; i = nc->requests[i].next) {
        const struct request_rec *rq = &nc->requests[i];
        const struct captured *req = &nc->msgs[rq->msg];
        struct coap_msg req_msg;
        if (!rq->usable || edhoc_coap_msg_parse(req->bytes, req->len, &req_msg) != 0 ||
            !same_exchange(req, &req_msg, resp, resp_msg))
            continue;
        if (n == nc->cap_candidates) {
            size_t cap = nc->cap_candidates ? 2 * nc->cap_candidates : 16;
            long *c = realloc(nc->candidates, cap * sizeof *c);
            if (!c)
                break;
            nc->candidates = c;
            nc->cap_candidates = cap;
        }
        nc->candidates[n++] = i;
    }
    /* Insertion sort: candidate lists are short. */
    struct candidate_order o = {nc, resp};
    for (size_t i = 1; i < n; i++) {
        long t = nc->candidates[i];
        size_t j = i;
        while (j > 0 && candidate_before(&o, t, nc->candidates[j - 1])) {
            nc->candidates[j] = nc->candidates[j - 1];
            j--;
        }
        nc->candidates[j] = t;
    }
    return n < MAX_REQUEST_TRIES ? n : MAX_REQUEST_TRIES;
}

/* ---- Analysis: the (key, nonce) table ---- */

static int pairs_grow(struct nonce_check *nc)
{
    size_t n = nc->n_pair_slots ? 2 * nc->n_pair_slots : 256;
    struct pair_entry *t = calloc(n, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < nc->n_pair_slots; i++) {
        struct pair_entry *e = &nc->pairs[i];
        if (!e->used)
            continue;
        uint64_t h = fnv1a(
            fnv1a(fnv1a(FNV_OFFSET, (const uint8_t *)&e->alg, sizeof e->alg), e->key, e->key_len),
            e->nonce, e->nonce_len);
        size_t j = (size_t)h & (n - 1);
        while (t[j].used)
            j = (j + 1) & (n - 1);
        t[j] = *e;
    }
    free(nc->pairs);
    nc->pairs = t;
    nc->n_pair_slots = n;
    return 0;
}

static void hex(char *out, size_t cap, const uint8_t *v, size_t len)
{
    size_t pos = (size_t)snprintf(out, cap, "h'");
    for (size_t i = 0; i < len && pos + 3 < cap; i++)
        pos += (size_t)snprintf(out + pos, cap - pos, "%02x", v[i]);
    if (pos + 1 < cap)
        snprintf(out + pos, cap - pos, "'");
}

static void describe(struct nonce_check_violation *v)
{
    char sid[24], idc[40], nonce[32], idpiv[24], piv[16];
    hex(sid, sizeof sid, v->sender_id, v->sender_id_len);
    if (v->has_id_context)
        hex(idc, sizeof idc, v->id_context, v->id_context_len);
    else
        snprintf(idc, sizeof idc, "none");
    hex(nonce, sizeof nonce, v->nonce, v->nonce_len);
    hex(idpiv, sizeof idpiv, v->id_piv, v->id_piv_len);
    hex(piv, sizeof piv, v->piv, v->piv_len);
    snprintf(v->text, sizeof v->text,
             "nonce reused: two different ciphertexts under the key of Sender ID %s "
             "(ID context %s, %s), nonce %s (ID_PIV %s, Partial IV %s): %s %s#%u and %s %s#%u",
             sid, idc, edhoc_crypto_alg_name(v->aead_alg), nonce, idpiv, piv,
             v->first.response ? "response" : "request", v->first.file, v->first.packet,
             v->second.response ? "response" : "request", v->second.file, v->second.packet);
}

static int add_violation(struct nonce_check *nc, const struct pair_entry *e,
                         const struct nonce_check_location *second)
{
    if (nc->n_violations == nc->cap_violations) {
        size_t n = nc->cap_violations ? 2 * nc->cap_violations : 8;
        struct nonce_check_violation *v = realloc(nc->violations, n * sizeof *v);
        if (!v)
            return -1;
        nc->violations = v;
        nc->cap_violations = n;
    }
    struct nonce_check_violation *v = &nc->violations[nc->n_violations++];
    memset(v, 0, sizeof *v);
    const struct key_view *kv = &nc->views[e->view];
    const struct context_entry *ce = nc->contexts[kv->context];
    v->sender_id_len = kv->owner_id_len;
    memcpy(v->sender_id, kv->owner_id, kv->owner_id_len);
    v->has_id_context = ce->has_id_context;
    v->id_context_len = ce->id_context_len;
    memcpy(v->id_context, ce->id_context, ce->id_context_len);
    v->aead_alg = e->alg;
    v->nonce_len = e->nonce_len;
    memcpy(v->nonce, e->nonce, e->nonce_len);
    v->id_piv_len = e->id_piv_len;
    memcpy(v->id_piv, e->id_piv, e->id_piv_len);
    v->piv_len = e->piv_len;
    memcpy(v->piv, e->piv, e->piv_len);
    v->first = e->first;
    v->second = *second;
    describe(v);
    return 0;
}

/* Record that msg was sealed with view's key under nonce (built from
 * id_piv and piv). */
static int record_pair(struct nonce_check *nc, size_t view, const uint8_t *nonce, size_t nonce_len,
                       const uint8_t *id_piv, size_t id_piv_len, const uint8_t *piv, size_t piv_len,
                       const struct captured *msg, const uint8_t *ciphertext, size_t ct_len)
{
    if (2 * (nc->n_pairs + 1) > nc->n_pair_slots && pairs_grow(nc) != 0)
        return -1;
    const struct key_view *kv = &nc->views[view];
    int alg = nc->contexts[kv->context]->aead_alg;
    const uint8_t *key;
    size_t key_len = view_key(nc, kv, &key);
    uint8_t digest[DIGEST_LEN];
    if (nc->crypto->hash(EDHOC_COSE_SHA256, ciphertext, ct_len, digest) != 0)
        return -1;
    struct nonce_check_location here = {nc->files[msg->file], msg->packet,
                                        msg->kind == KIND_RESPONSE};

    uint64_t h = fnv1a(fnv1a(fnv1a(FNV_OFFSET, (const uint8_t *)&alg, sizeof alg), key, key_len),
                       nonce, nonce_len);
    size_t j = (size_t)h & (nc->n_pair_slots - 1);
    for (;; j = (j + 1) & (nc->n_pair_slots - 1)) {
        struct pair_entry *e = &nc->pairs[j];
        if (!e->used)
            break;
        if (e->alg != alg || e->key_len != key_len || memcmp(e->key, key, key_len) != 0 ||
            e->nonce_len != nonce_len || memcmp(e->nonce, nonce, nonce_len) != 0)
            continue;
        for (size_t d = 0; d < e->n_digests; d++) {
            if (memcmp(e->digests[d], digest, DIGEST_LEN) == 0) {
                nc->report.repeats++;
                return 0;
            }
        }
        uint8_t(*more)[DIGEST_LEN] = realloc(e->digests, (e->n_digests + 1) * sizeof *more);
        if (!more)
            return -1;
        e->digests = more;
        memcpy(e->digests[e->n_digests++], digest, DIGEST_LEN);
        return add_violation(nc, e, &here);
    }
    struct pair_entry *e = &nc->pairs[j];
    memset(e, 0, sizeof *e);
    e->digests = malloc(sizeof *e->digests);
    if (!e->digests)
        return -1;
    e->used = true;
    e->alg = alg;
    e->key_len = (uint8_t)key_len;
    memcpy(e->key, key, key_len);
    e->nonce_len = (uint8_t)nonce_len;
    memcpy(e->nonce, nonce, nonce_len);
    e->view = view;
    e->id_piv_len = id_piv_len;
    memcpy(e->id_piv, id_piv, id_piv_len);
    e->piv_len = piv_len;
    memcpy(e->piv, piv, piv_len);
    e->first = here;
    memcpy(e->digests[0], digest, DIGEST_LEN);
    e->n_digests = 1;
    nc->n_pairs++;
    return 0;
}

/* ---- Analysis: verifying ---- */

/* Does the payload verify under view's key with the nonce from (id_piv,
 * piv) and the AAD of the request (req_kid, req_piv)? On success the nonce
 * is left in nonce. */
static bool opens(struct nonce_check *nc, size_t view, const uint8_t *id_piv, size_t id_piv_len,
                  const uint8_t *piv, size_t piv_len, const uint8_t *req_kid, size_t req_kid_len,
                  const uint8_t *req_piv, size_t req_piv_len, const struct coap_msg *m,
                  uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE], size_t *nonce_len, uint8_t *inner_code)
{
    const struct key_view *kv = &nc->views[view];
    const struct context_entry *ce = nc->contexts[kv->context];
    size_t tag_len = edhoc_crypto_aead_tag_len(ce->aead_alg);
    if (m->payload_len <= tag_len || m->payload_len > sizeof nc->plaintext)
        return false;
    if (oscore_nonce(&ce->ctx, id_piv, id_piv_len, piv, piv_len, nonce) != 0)
        return false; /* the ID does not fit this algorithm's nonce */
    uint8_t aad[MAX_AAD];
    long aad_len =
        oscore_aad(ce->aead_alg, req_kid, req_kid_len, req_piv, req_piv_len, aad, sizeof aad);
    if (aad_len < 0)
        return false;
    const uint8_t *key;
    view_key(nc, kv, &key);
    if (nc->crypto->aead_decrypt(ce->aead_alg, key, nonce, aad, (size_t)aad_len, m->payload,
                                 m->payload_len, nc->plaintext) != 0)
        return false;
    /* The plaintext begins with the inner code (RFC 8613 Section 5.3). */
    *inner_code = nc->plaintext[0];
    edhoc_wipe(nc->plaintext, m->payload_len - tag_len);
    const uint8_t *iv;
    *nonce_len = oscore_context_common_iv(&ce->ctx, &iv);
    return true;
}

/* The OSCORE option of a message and whether it is usable at all. */
static int message_option(const struct coap_msg *m, struct oscore_option *o)
{
    const struct coap_option *found = NULL;
    for (size_t i = 0; i < m->option_count; i++) {
        if (m->options[i].number == COAP_OPT_OSCORE) {
            if (found)
                return -1; /* the option is not repeatable */
            found = &m->options[i];
        }
    }
    if (!found || oscore_option_parse(found->value, found->len, o) != 0)
        return -1;
    return 0;
}

static bool outer_block(const struct coap_msg *m)
{
    return edhoc_coap_msg_find_option(m, COAP_OPT_BLOCK1) ||
           edhoc_coap_msg_find_option(m, COAP_OPT_BLOCK2);
}

static bool id_equal(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
    return a_len == b_len && (a_len == 0 || memcmp(a, b, a_len) == 0);
}

/* Length of the CBOR byte string item at p (head and content), or -1. */
static long cbor_bstr_item_len(const uint8_t *p, size_t len)
{
    if (len < 1 || (p[0] & 0xe0) != 0x40)
        return -1;
    unsigned ai = p[0] & 0x1f;
    size_t head = 1, n = ai;
    if (ai == 24 && len >= 2) {
        head = 2;
        n = p[1];
    } else if (ai == 25 && len >= 3) {
        head = 3;
        n = (size_t)p[1] << 8 | p[2];
    } else if (ai >= 24) {
        return -1;
    }
    return len - head < n ? -1 : (long)(head + n);
}

static int examine_request(struct nonce_check *nc, size_t mi)
{
    const struct captured *c = &nc->msgs[mi];
    struct nonce_check_report *r = &nc->report;
    struct request_rec *rq = &nc->requests[nc->n_requests];
    memset(rq, 0, sizeof *rq);
    rq->msg = mi;
    rq->view = -1;
    rq->next = -1;
    r->requests++;

    struct coap_msg m;
    struct oscore_option o;
    if (edhoc_coap_msg_parse(c->bytes, c->len, &m) != 0 || message_option(&m, &o) != 0 ||
        !o.has_kid || o.piv_len == 0 || o.kid_len > OSCORE_MAX_ID) {
        r->malformed++;
        return 0;
    }
    /* Keep the request for its responses even when its own payload
     * cannot be checked: their AAD needs only its kid and Partial IV. */
    rq->usable = true;
    rq->kid_len = o.kid_len;
    if (o.kid_len)
        memcpy(rq->kid, o.kid, o.kid_len);
    rq->piv_len = o.piv_len;
    memcpy(rq->piv, o.piv, o.piv_len);
    size_t b = exchange_bucket(nc, c->ip_version, c->src, c->src_port, c->dst, c->dst_port, &m);
    rq->next = nc->buckets[b];
    nc->buckets[b] = (long)nc->n_requests;
    nc->n_requests++;

    if (outer_block(&m)) {
        r->fragments++;
        return 0;
    }
    if (!m.payload) {
        r->malformed++;
        return 0;
    }
    /* RFC 9668 Section 3.2.1: a combined request (EDHOC option 21) carries
     * EDHOC message_3, a CBOR byte string, ahead of the OSCORE ciphertext. */
    if (edhoc_coap_msg_find_option(&m, 21)) {
        long skip = cbor_bstr_item_len(m.payload, m.payload_len);
        if (skip <= 0 || (size_t)skip >= m.payload_len) {
            r->malformed++;
            return 0;
        }
        m.payload += skip;
        m.payload_len -= (size_t)skip;
    }
    /* Keys whose owner has this Sender ID first: only an optimisation,
     * since every key is tried and the AEAD alone decides. */
    for (int round = 0; round < 2; round++) {
        for (size_t v = 0; v < nc->n_views; v++) {
            const struct key_view *kv = &nc->views[v];
            if (id_equal(kv->owner_id, kv->owner_id_len, o.kid, o.kid_len) != (round == 0))
                continue;
            uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE], code;
            size_t nonce_len;
            if (!opens(nc, v, o.kid, o.kid_len, o.piv, o.piv_len, o.kid, o.kid_len, o.piv,
                       o.piv_len, &m, nonce, &nonce_len, &code))
                continue;
            rq->view = (long)v;
            r->attributed++;
            return record_pair(nc, v, nonce, nonce_len, o.kid, o.kid_len, o.piv, o.piv_len, c,
                               m.payload, m.payload_len);
        }
    }
    r->no_key++;
    return 0;
}

static bool has_observe(const struct coap_msg *m)
{
    for (size_t i = 0; i < m->option_count; i++)
        if (m->options[i].number == COAP_OPT_OBSERVE)
            return true;
    return false;
}

/* A success (2.xx inside) answered request rq with ciphertext ct: a
 * second success with another ciphertext means the request was processed
 * twice (a retransmitted answer, or another capture of it, is the same
 * bytes). RFC 8613 Section 7.4: a replayed request must not be. */
static int record_accepted(struct nonce_check *nc, const struct request_rec *rq,
                           const struct captured *c, const uint8_t *ct, size_t ct_len)
{
    if (rq->view < 0 || !nc->accepted)
        return 0;
    const struct key_view *kv = &nc->views[rq->view];
    int alg = nc->contexts[kv->context]->aead_alg;
    const uint8_t *key;
    size_t key_len = view_key(nc, kv, &key);
    uint8_t digest[DIGEST_LEN];
    if (nc->crypto->hash(EDHOC_COSE_SHA256, ct, ct_len, digest) != 0)
        return -1;
    uint64_t h =
        fnv1a(fnv1a(fnv1a(FNV_OFFSET, key, key_len), rq->kid, rq->kid_len), rq->piv, rq->piv_len);
    for (size_t j = (size_t)h & (nc->n_acc_slots - 1);; j = (j + 1) & (nc->n_acc_slots - 1)) {
        struct accepted_entry *e = &nc->accepted[j];
        if (!e->used) {
            e->used = true;
            e->alg = alg;
            e->key_len = (uint8_t)key_len;
            memcpy(e->key, key, key_len);
            e->kid_len = (uint8_t)rq->kid_len;
            memcpy(e->kid, rq->kid, rq->kid_len);
            e->piv_len = (uint8_t)rq->piv_len;
            memcpy(e->piv, rq->piv, rq->piv_len);
            memcpy(e->digest, digest, DIGEST_LEN);
            e->file = c->file;
            e->packet = c->packet;
            return 0;
        }
        if (e->alg != alg || e->key_len != key_len || memcmp(e->key, key, key_len) != 0 ||
            e->kid_len != rq->kid_len || memcmp(e->kid, rq->kid, rq->kid_len) != 0 ||
            e->piv_len != rq->piv_len || memcmp(e->piv, rq->piv, rq->piv_len) != 0)
            continue;
        if (!e->twice && memcmp(e->digest, digest, DIGEST_LEN) != 0) {
            e->twice = true;
            if (nc->report.accepted_twice < TWICE_LINES) {
                char kid[2 * OSCORE_MAX_ID + 1], piv[2 * OSCORE_MAX_PIV + 1];
                hex(kid, sizeof kid, rq->kid, rq->kid_len);
                hex(piv, sizeof piv, rq->piv, rq->piv_len);
                snprintf(nc->twice_lines[nc->report.accepted_twice], sizeof nc->twice_lines[0],
                         "request kid %s Partial IV %s processed twice: a success in %s "
                         "frame %u, another in %s frame %u",
                         kid, piv, nc->files[e->file], e->packet, nc->files[c->file], c->packet);
            }
            nc->report.accepted_twice++;
        }
        return 0;
    }
}

/* Try one candidate request: the partner of the key that verified the
 * request first, then every key. */
static int examine_response_with(struct nonce_check *nc, const struct captured *c,
                                 const struct coap_msg *m, const struct oscore_option *o,
                                 const struct request_rec *rq, bool *done)
{
    long first = rq->view >= 0 ? (long)nc->views[rq->view].partner : -1;
    for (long k = -1; k < (long)nc->n_views; k++) {
        long v = k < 0 ? first : k;
        if (v < 0 || (k >= 0 && k == first))
            continue;
        const struct key_view *kv = &nc->views[v];
        /* With its own Partial IV the responder builds the nonce from its
         * Sender ID; without, the request's nonce is reused. */
        const uint8_t *id_piv = o->piv_len ? kv->owner_id : rq->kid;
        size_t id_piv_len = o->piv_len ? kv->owner_id_len : rq->kid_len;
        const uint8_t *piv = o->piv_len ? o->piv : rq->piv;
        size_t piv_len = o->piv_len ? o->piv_len : rq->piv_len;
        uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE], code = 0;
        size_t nonce_len;
        if (!opens(nc, (size_t)v, id_piv, id_piv_len, piv, piv_len, rq->kid, rq->kid_len, rq->piv,
                   rq->piv_len, m, nonce, &nonce_len, &code))
            continue;
        *done = true;
        nc->report.attributed++;
        /* A notification is one more answer to its registration (RFC
         * 7641; the Observe option is also outer, RFC 8613 Section 4.1.3.5),
         * not the request processed again. */
        if (code >> 5 == 2 && !has_observe(m) &&
            record_accepted(nc, rq, c, m->payload, m->payload_len) != 0)
            return -1;
        return record_pair(nc, (size_t)v, nonce, nonce_len, id_piv, id_piv_len, piv, piv_len, c,
                           m->payload, m->payload_len);
    }
    return 0;
}

static int examine_response(struct nonce_check *nc, size_t mi)
{
    const struct captured *c = &nc->msgs[mi];
    struct nonce_check_report *r = &nc->report;
    r->responses++;
    struct coap_msg m;
    struct oscore_option o;
    if (edhoc_coap_msg_parse(c->bytes, c->len, &m) != 0 || message_option(&m, &o) != 0) {
        r->malformed++;
        return 0;
    }
    if (outer_block(&m)) {
        r->fragments++;
        return 0;
    }
    if (!m.payload) {
        r->malformed++;
        return 0;
    }
    size_t n = find_requests(nc, c, &m);
    if (n == 0) {
        r->no_request++;
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        bool done = false;
        int rc = examine_response_with(nc, c, &m, &o, &nc->requests[nc->candidates[i]], &done);
        if (rc || done)
            return rc;
    }
    r->no_key++;
    return 0;
}

static int analyse(struct nonce_check *nc)
{
    clear_analysis(nc);
    struct nonce_check_report *r = &nc->report;
    memset(r, 0, sizeof *r);
    r->files = (unsigned)nc->n_files;
    r->frames = nc->frames;
    r->datagrams = nc->datagrams;
    r->coap = nc->coap;
    r->skipped = nc->skipped;
    r->ignored = nc->ignored;
    r->oscore = (unsigned)nc->n_msgs;

    size_t n_requests = 0;
    for (size_t i = 0; i < nc->n_msgs; i++)
        n_requests += nc->msgs[i].kind == KIND_REQUEST;
    nc->n_buckets = 16;
    while (nc->n_buckets < 2 * n_requests)
        nc->n_buckets *= 2;
    nc->buckets = malloc(nc->n_buckets * sizeof *nc->buckets);
    nc->n_acc_slots = nc->n_buckets; /* at least twice the requests */
    nc->accepted = calloc(nc->n_acc_slots, sizeof *nc->accepted);
    nc->requests = malloc((n_requests ? n_requests : 1) * sizeof *nc->requests);
    if (!nc->buckets || !nc->requests || !nc->accepted || pairs_grow(nc) != 0)
        return -1;
    for (size_t i = 0; i < nc->n_buckets; i++)
        nc->buckets[i] = -1;

    /* Requests first, so that each response finds its request in any
     * capture, whatever order the captures were added in. */
    for (size_t i = 0; i < nc->n_msgs; i++) {
        if (nc->msgs[i].kind == KIND_REQUEST && examine_request(nc, i) != 0)
            return -1;
    }
    for (size_t i = 0; i < nc->n_msgs; i++) {
        if (nc->msgs[i].kind == KIND_RESPONSE && examine_response(nc, i) != 0)
            return -1;
        if (nc->msgs[i].kind == KIND_OTHER)
            r->malformed++; /* an OSCORE option on a code neither request nor response */
    }
    r->unattributed = r->no_key + r->no_request + r->fragments + r->malformed;
    r->distinct_pairs = nc->n_pairs;
    r->n_violations = nc->n_violations;
    r->violations = nc->violations;
    nc->analysed = true;
    return 0;
}

const struct nonce_check_report *nonce_check_report(struct nonce_check *nc)
{
    if (!nc)
        return NULL;
    if (!nc->analysed && analyse(nc) != 0) {
        clear_analysis(nc);
        return NULL;
    }
    return &nc->report;
}

void nonce_check_print(struct nonce_check *nc, FILE *out)
{
    const struct nonce_check_report *r = nonce_check_report(nc);
    if (!r) {
        fprintf(out, "nonce check: out of memory\n");
        return;
    }
    fprintf(out,
            "nonce check: %u captures, %u frames (%u skipped, %u not UDP), %u OSCORE messages "
            "(%u requests, %u responses): %u attributed, %u unattributed (%u no key, "
            "%u no request, %u fragments, %u malformed), %u repeats, %zu distinct (key, nonce), "
            "%zu violations, %u requests processed twice\n",
            r->files, r->frames, r->skipped, r->ignored, r->oscore, r->requests, r->responses,
            r->attributed, r->unattributed, r->no_key, r->no_request, r->fragments, r->malformed,
            r->repeats, r->distinct_pairs, r->n_violations, r->accepted_twice);
    for (size_t i = 0; i < r->n_violations; i++)
        fprintf(out, "  %s\n", r->violations[i].text);
    for (unsigned i = 0; i < r->accepted_twice && i < TWICE_LINES; i++)
        fprintf(out, "  %s\n", nc->twice_lines[i]);
}
