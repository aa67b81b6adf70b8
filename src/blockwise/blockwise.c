/*
 * Block-wise transfer (RFC 7959) with the Request-Tag of RFC 9175
 * Section 3, sans-I/O, on whole CoAP-over-UDP messages.
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

#include "edhoc/coap_msg.h"

#define CODE_CONTINUE COAP_CODE(2, 31)
#define CODE_REQUEST_INCOMPLETE COAP_CODE(4, 8)
#define CODE_TOO_LARGE COAP_CODE(4, 13)
#define CODE_SERVICE_UNAVAILABLE COAP_CODE(5, 3)

#define DEFAULT_MAX_TRANSFERS 256u
#define DEFAULT_MAX_PER_PEER 4u
#define DEFAULT_MAX_BYTES (4u << 20)
/* Max-Age of a 5.03: how long a client should wait before trying again
 * (RFC 9175 Section 3.3: "a Max-Age indicating how long it expects the
 * existing operation to go on"); a few seconds lets a running transfer
 * finish without making a retrying client idle for long. */
#define BUSY_MAX_AGE_S 5u
#define BLOCK_NUM_LIMIT (1u << 20)
#define ETAG_LEN 4u

const char *edhoc_bw_strerror(int err)
{
    switch (err) {
    case 0: return "ok";
    case EDHOC_BW_ERR_MALFORMED: return "malformed message or block option";
    case EDHOC_BW_ERR_TOO_LARGE: return "body larger than the limit";
    case EDHOC_BW_ERR_ORDER: return "block other than the one expected";
    case EDHOC_BW_ERR_ETAG: return "representation changed during the transfer (ETag)";
    case EDHOC_BW_ERR_BUFFER: return "output buffer too small";
    case EDHOC_BW_ERR_NOMEM: return "out of memory";
    case EDHOC_BW_ERR_ARG: return "invalid argument";
    default: return "unknown block-wise error";
    }
}

/* ---- Block options ---- */

int edhoc_block_szx(size_t block_size)
{
    for (unsigned szx = 0; szx <= 6; szx++) {
        if (edhoc_block_size(szx) == block_size)
            return (int)szx;
    }
    return -1;
}

int edhoc_block_parse(const uint8_t *value, size_t len, struct edhoc_block *b)
{
    if (!b || len > 3 || (len > 0 && !value))
        return EDHOC_BW_ERR_MALFORMED;
    uint32_t v = 0;
    /* A uint may carry leading zero bytes (RFC 7252 Section 3.2). */
    for (size_t i = 0; i < len; i++)
        v = v << 8 | value[i];
    if ((v & 7u) == 7u)
        return EDHOC_BW_ERR_MALFORMED;
    b->num = v >> 4;
    b->more = (v >> 3) & 1u;
    b->szx = v & 7u;
    return 0;
}

size_t edhoc_block_encode(const struct edhoc_block *b, uint8_t out[3])
{
    /* Out-of-range fields are masked to their widths (NUM 20 bits, SZX 3
     * bits) so that the value always fits three bytes. */
    uint32_t v = (b->num & (BLOCK_NUM_LIMIT - 1)) << 4 | (b->more ? 8u : 0u) | (b->szx & 7u);
    uint8_t tmp[4];
    size_t n = edhoc_coap_uint_encode(v, tmp);
    memcpy(out, tmp, n);
    return n;
}

/* ---- Building messages ---- */

/* A message to write: header fields, options in ascending order and a
 * payload in up to two pieces (a reassembled body is written from the
 * stored part and the final block without joining them first). */
struct out_msg {
    uint8_t type, code;
    uint16_t mid;
    uint8_t token_len;
    const uint8_t *token;
    size_t nopts;
    struct coap_option opts[COAP_MSG_MAX_OPTIONS];
    const uint8_t *p1, *p2;
    size_t l1, l2;
};

static void out_from(struct out_msg *o, const struct coap_msg *m)
{
    o->type = m->type;
    o->code = m->code;
    o->mid = m->mid;
    o->token_len = m->token_len;
    o->token = m->token;
    o->nopts = 0;
    o->p1 = o->p2 = NULL;
    o->l1 = o->l2 = 0;
}

/* A reply to request m: piggybacked (ACK) for a CON, NON for a NON (RFC
 * 7252 Sections 5.2.1 and 5.2.3), with its Message ID and token. A NON
 * reply should carry a fresh Message ID; the engine has none to give and
 * the transport assigns the Message IDs of NON messages it sends. */
static void out_reply(struct out_msg *o, const struct coap_msg *req, uint8_t code)
{
    out_from(o, req);
    o->type = req->type == COAP_TYPE_CON ? COAP_TYPE_ACK : COAP_TYPE_NON;
    o->code = code;
}

/* Inserts after options with a number <= number, so that repeated options
 * keep their order. Refuses what the codec could not parse back. */
static int out_add(struct out_msg *o, uint16_t number, const uint8_t *value, size_t len)
{
    if (o->nopts == COAP_MSG_MAX_OPTIONS)
        return EDHOC_BW_ERR_MALFORMED;
    size_t i = o->nopts;
    while (i > 0 && o->opts[i - 1].number > number) {
        o->opts[i] = o->opts[i - 1];
        i--;
    }
    o->opts[i].number = number;
    o->opts[i].len = (uint16_t)len;
    o->opts[i].value = value;
    o->nopts++;
    return 0;
}

static bool in_list(uint16_t number, const uint16_t *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (list[i] == number)
            return true;
    }
    return false;
}

/* m's options except the numbers in drop (m holds at most as many options
 * as o, so this cannot overflow). */
static void out_copy_options(struct out_msg *o, const struct coap_msg *m, const uint16_t *drop,
                             size_t ndrop)
{
    for (size_t i = 0; i < m->option_count; i++) {
        if (!in_list(m->options[i].number, drop, ndrop))
            o->opts[o->nopts++] = m->options[i];
    }
}

static long out_write(const struct out_msg *o, uint8_t *buf, size_t cap)
{
    long opts = edhoc_coap_msg_encode_body(o->opts, o->nopts, NULL, 0, NULL, 0);
    if (opts < 0)
        return EDHOC_BW_ERR_MALFORMED;
    size_t plen = o->l1 + o->l2;
    size_t total = 4u + o->token_len + (size_t)opts + (plen ? 1u + plen : 0u);
    if (!buf || total > cap)
        return EDHOC_BW_ERR_BUFFER;
    buf[0] = (uint8_t)(0x40 | o->type << 4 | o->token_len);
    buf[1] = o->code;
    buf[2] = (uint8_t)(o->mid >> 8);
    buf[3] = (uint8_t)o->mid;
    if (o->token_len)
        memcpy(buf + 4, o->token, o->token_len);
    size_t pos = 4u + o->token_len;
    if (edhoc_coap_msg_encode_body(o->opts, o->nopts, NULL, 0, buf + pos, cap - pos) != opts)
        return EDHOC_BW_ERR_MALFORMED;
    pos += (size_t)opts;
    if (plen) {
        buf[pos++] = 0xff;
        if (o->l1)
            memcpy(buf + pos, o->p1, o->l1);
        if (o->l2)
            memcpy(buf + pos + o->l1, o->p2, o->l2);
        pos += plen;
    }
    return (long)pos;
}

/* The same message in a new allocation of exactly its size. */
static int out_alloc(const struct out_msg *o, uint8_t **msg, size_t *len)
{
    long opts = edhoc_coap_msg_encode_body(o->opts, o->nopts, NULL, 0, NULL, 0);
    if (opts < 0)
        return EDHOC_BW_ERR_MALFORMED;
    size_t plen = o->l1 + o->l2;
    size_t total = 4u + o->token_len + (size_t)opts + (plen ? 1u + plen : 0u);
    uint8_t *buf = malloc(total);
    if (!buf)
        return EDHOC_BW_ERR_NOMEM;
    long n = out_write(o, buf, total);
    if (n < 0) {
        free(buf);
        return (int)n;
    }
    *msg = buf;
    *len = (size_t)n;
    return 0;
}

/* ---- What a message says about blocks ---- */

struct block_view {
    const struct coap_option *block1, *block2, *size1_opt, *size2_opt, *etag;
    unsigned n_block1, n_block2;
    struct edhoc_block b1, b2;
    bool b1_ok, b2_ok;       /* present once and parsed */
    bool bad_option;         /* repeated or longer than 3 bytes */
    bool reserved_szx;       /* SZX 7 */
    bool has_size1, has_size2;
    uint32_t size1, size2;
};

static void view_blocks(const struct coap_msg *m, struct block_view *v)
{
    memset(v, 0, sizeof *v);
    for (size_t i = 0; i < m->option_count; i++) {
        const struct coap_option *o = &m->options[i];
        switch (o->number) {
        case COAP_OPT_BLOCK1:
            if (v->n_block1++ == 0)
                v->block1 = o;
            break;
        case COAP_OPT_BLOCK2:
            if (v->n_block2++ == 0)
                v->block2 = o;
            break;
        case COAP_OPT_SIZE1:
            if (!v->size1_opt)
                v->size1_opt = o;
            break;
        case COAP_OPT_SIZE2:
            if (!v->size2_opt)
                v->size2_opt = o;
            break;
        case COAP_OPT_ETAG:
            if (!v->etag)
                v->etag = o;
            break;
        default:
            break;
        }
    }
    /* Block1 and Block2 are critical and not repeatable: a repetition or
     * a length outside 0-3 makes them unrecognized (RFC 7252 Section
     * 5.4.5, 5.4.3). */
    if (v->n_block1 > 1 || v->n_block2 > 1 || (v->block1 && v->block1->len > 3) ||
        (v->block2 && v->block2->len > 3))
        v->bad_option = true;
    if (v->block1 && v->block1->len <= 3) {
        if (edhoc_block_parse(v->block1->value, v->block1->len, &v->b1) == 0)
            v->b1_ok = v->n_block1 == 1;
        else
            v->reserved_szx = true;
    }
    if (v->block2 && v->block2->len <= 3) {
        if (edhoc_block_parse(v->block2->value, v->block2->len, &v->b2) == 0)
            v->b2_ok = v->n_block2 == 1;
        else
            v->reserved_szx = true;
    }
    /* Size1/Size2 are elective: a malformed one is ignored (RFC 7252
     * Section 5.4.1). */
    if (v->size1_opt && edhoc_coap_option_uint(v->size1_opt, &v->size1) == 0)
        v->has_size1 = true;
    if (v->size2_opt && edhoc_coap_option_uint(v->size2_opt, &v->size2) == 0)
        v->has_size2 = true;
}

/* ---- Server state ---- */

enum entry_kind {
    ENTRY_TRANSFER, /* Block1 body being reassembled */
    ENTRY_KEPT,     /* response body served block by block */
    ENTRY_DONE,     /* a completed Block1 transfer whose response is due */
};

struct bw_peer;

struct bw_entry {
    enum entry_kind kind;
    struct bw_peer *peer;
    struct bw_entry *peer_prev, *peer_next; /* the peer's entries, oldest first */
    struct bw_entry *lru_prev, *lru_next;   /* all entries, least recent progress first */
    struct bw_entry *ev_prev, *ev_next;     /* droppable entries, oldest first */
    bool droppable;
    uint64_t last_ms;
    size_t held; /* bytes counted in bytes_held */
    /* TRANSFER: body so far; KEPT: the whole body */
    uint8_t *body;
    size_t body_len, body_cap;
    unsigned szx; /* TRANSFER: block size now in use; KEPT: of block 0; DONE: of the last block */
    /* TRANSFER: the last block accepted, to recognise a retransmission */
    size_t last_off, last_len;
    uint32_t last_num;
    /* KEPT: the response's code and encoded options (no Block1/2, Size2) */
    uint8_t code;
    uint8_t *opts;
    size_t opts_len;
    /* DONE: the final block's Message ID and token (those of *whole) */
    uint16_t mid;
    uint8_t token_len;
    uint8_t token[COAP_MSG_MAX_TOKEN];
    uint64_t key_hash;
    size_t key_len;
    uint8_t key[];
};

struct bw_peer {
    struct bw_peer *next; /* bucket chain */
    struct bw_entry *first, *last;
    size_t count;
    uint64_t hash;
    size_t name_len;
    char name[];
};

struct edhoc_bw_server {
    struct edhoc_bw_limits lim;
    struct bw_peer **buckets;
    size_t bucket_mask;
    struct bw_entry *lru_first, *lru_last;
    struct bw_entry *ev_first, *ev_last;
    size_t entries;
    uint64_t seed;
    uint32_t etag_counter;
    struct edhoc_bw_stats st;
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

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

static uint64_t key_hash(const struct edhoc_bw_server *s, const struct coap_msg *m)
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
    return mix64(h);
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

static uint64_t peer_hash(const struct edhoc_bw_server *s, const char *name, size_t len)
{
    return mix64(hash_bytes(s->seed ^ 0x9e3779b97f4a7c15ULL, (const uint8_t *)name, len));
}

static struct bw_peer *peer_find(const struct edhoc_bw_server *s, const char *name, size_t len,
                                 uint64_t h)
{
    for (struct bw_peer *p = s->buckets[h & s->bucket_mask]; p; p = p->next) {
        if (p->hash == h && p->name_len == len && memcmp(p->name, name, len) == 0)
            return p;
    }
    return NULL;
}

static struct bw_peer *peer_get(struct edhoc_bw_server *s, const char *name, size_t len,
                                uint64_t h)
{
    struct bw_peer *p = peer_find(s, name, len, h);
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

static struct bw_entry *entry_find(const struct bw_peer *p, enum entry_kind kind, uint64_t h,
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
static void touch(struct edhoc_bw_server *s, struct bw_entry *e, uint64_t now_ms)
{
    e->last_ms = now_ms;
    if (s->lru_last != e) {
        lru_unlink(s, e);
        lru_append(s, e);
    }
}

static void set_droppable(struct edhoc_bw_server *s, struct bw_entry *e)
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

static void entry_free(struct edhoc_bw_server *s, struct bw_entry *e)
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
static bool make_room(struct edhoc_bw_server *s, const char *name, size_t name_len, uint64_t ph,
                      size_t new_entries, size_t bytes, bool for_kept, const struct bw_entry *spare)
{
    for (;;) {
        struct bw_entry *victim = NULL;
        struct bw_peer *p = peer_find(s, name, name_len, ph);
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
        entry_free(s, victim);
    }
}

/* A new entry (room already made); NULL when out of memory. */
static struct bw_entry *entry_new(struct edhoc_bw_server *s, const char *name, size_t name_len,
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

static size_t entry_bytes(const struct coap_msg *m)
{
    return sizeof(struct bw_entry) + key_length(m);
}

static size_t size_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Grows a transfer's buffer to hold `need` bytes (need <= max_body),
 * doubling so that small blocks do not cost a copy each. */
static int transfer_reserve(struct edhoc_bw_server *s, struct bw_entry *e, size_t need)
{
    if (need <= e->body_cap)
        return 0;
    size_t want = e->body_cap * 2;
    if (want < 256)
        want = 256;
    want = size_min(want, s->lim.max_body);
    if (want < need)
        want = need;
    struct bw_peer *p = e->peer;
    if (!make_room(s, p->name, p->name_len, p->hash, 0, want - e->body_cap, false, e)) {
        want = need;
        if (!make_room(s, p->name, p->name_len, p->hash, 0, want - e->body_cap, false, e))
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
static void make_done(struct edhoc_bw_server *s, struct bw_entry *e, const struct coap_msg *m,
                      const struct edhoc_block *b)
{
    /* An older marker of the same request is stale: its response is not
     * coming any more. */
    for (struct bw_entry *o = e->peer->first, *next; o; o = next) {
        next = o->peer_next;
        if (o != e && o->kind == ENTRY_DONE && o->key_hash == e->key_hash && key_equal(o, m))
            entry_free(s, o);
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
    set_droppable(s, e);
}

/* The marker of the completed transfer whose *whole is req. */
static struct bw_entry *find_done(const struct bw_peer *p, uint64_t kh, const struct coap_msg *req)
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
        s->seed = mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uintptr_t)s);
    }
#endif
    s->etag_counter = (uint32_t)mix64(s->seed);
    return s;
}

void edhoc_bw_server_free(struct edhoc_bw_server *s)
{
    if (!s)
        return;
    while (s->lru_first)
        entry_free(s, s->lru_first);
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
        entry_free(s, s->lru_first);
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

/* ---- Server: requests ---- */

static int finish_reply(const struct out_msg *o, uint8_t *out, size_t cap, size_t *out_len)
{
    long n = out_write(o, out, cap);
    if (n < 0)
        return (int)n;
    *out_len = (size_t)n;
    return EDHOC_BW_REPLY;
}

static int reply_code(const struct coap_msg *req, uint8_t code, uint8_t *out, size_t cap,
                      size_t *out_len)
{
    struct out_msg o;
    out_reply(&o, req, code);
    return finish_reply(&o, out, cap, out_len);
}

/* 4.13 with Size1 = the largest body accepted (RFC 7959 Section 2.9.3). */
static int reply_too_large(struct edhoc_bw_server *s, const struct coap_msg *req, uint8_t *out,
                           size_t cap, size_t *out_len)
{
    s->st.refused_too_large++;
    struct out_msg o;
    out_reply(&o, req, CODE_TOO_LARGE);
    uint8_t v[4];
    size_t max = s->lim.max_body > UINT32_MAX ? UINT32_MAX : s->lim.max_body;
    out_add(&o, COAP_OPT_SIZE1, v, edhoc_coap_uint_encode((uint32_t)max, v));
    return finish_reply(&o, out, cap, out_len);
}

static void busy_message(struct out_msg *o, uint8_t v[4])
{
    o->code = CODE_SERVICE_UNAVAILABLE;
    o->nopts = 0;
    o->p1 = o->p2 = NULL;
    o->l1 = o->l2 = 0;
    out_add(o, COAP_OPT_MAX_AGE, v, edhoc_coap_uint_encode(BUSY_MAX_AGE_S, v));
}

/* 5.03 with Max-Age (RFC 9175 Section 3.3). */
static int reply_busy(struct edhoc_bw_server *s, const struct coap_msg *req, uint8_t *out,
                      size_t cap, size_t *out_len)
{
    s->st.refused_busy++;
    struct out_msg o;
    out_reply(&o, req, CODE_SERVICE_UNAVAILABLE);
    uint8_t v[4];
    busy_message(&o, v);
    return finish_reply(&o, out, cap, out_len);
}

static int reply_incomplete(struct edhoc_bw_server *s, const struct coap_msg *req, uint8_t *out,
                            size_t cap, size_t *out_len)
{
    s->st.refused_incomplete++;
    return reply_code(req, CODE_REQUEST_INCOMPLETE, out, cap, out_len);
}

/* 2.31 Continue echoing the block (RFC 7959 Sections 2.3 and 2.9.1); the
 * client's SZX is kept, so the server asks for no other size. */
static int reply_continue(const struct coap_msg *req, const struct edhoc_block *b, uint8_t *out,
                          size_t cap, size_t *out_len)
{
    struct out_msg o;
    out_reply(&o, req, CODE_CONTINUE);
    struct edhoc_block echo = {.num = b->num, .more = true, .szx = b->szx};
    uint8_t v[3];
    out_add(&o, COAP_OPT_BLOCK1, v, edhoc_block_encode(&echo, v));
    return finish_reply(&o, out, cap, out_len);
}

/* The reassembled request: this block's header, token and options without
 * Block1 and Size1, the body in up to two pieces. */
static int make_whole(const struct coap_msg *m, const uint8_t *p1, size_t l1, const uint8_t *p2,
                      size_t l2, uint8_t **whole, size_t *whole_len)
{
    static const uint16_t drop[] = {COAP_OPT_BLOCK1, COAP_OPT_SIZE1};
    struct out_msg o;
    out_from(&o, m);
    out_copy_options(&o, m, drop, 2);
    o.p1 = p1;
    o.l1 = l1;
    o.p2 = p2;
    o.l2 = l2;
    return out_alloc(&o, whole, whole_len);
}

/* A done marker for a single-block "transfer" (Block1 NUM 0, M 0), best
 * effort: without room the response just goes without the Block1 echo. */
static void remember_done(struct edhoc_bw_server *s, const char *peer, size_t peer_len,
                          uint64_t ph, const struct coap_msg *m, uint64_t kh,
                          const struct edhoc_block *b, uint64_t now_ms)
{
    if (!make_room(s, peer, peer_len, ph, 1, entry_bytes(m), false, NULL))
        return;
    struct bw_entry *e = entry_new(s, peer, peer_len, ph, ENTRY_DONE, m, kh, now_ms);
    if (e)
        make_done(s, e, m, b);
}

static int block1_request(struct edhoc_bw_server *s, const char *peer, const struct coap_msg *m,
                          const struct block_view *v, uint64_t now_ms, uint8_t **whole,
                          size_t *whole_len, uint8_t *out, size_t cap, size_t *out_len)
{
    const struct edhoc_block *b = &v->b1;
    size_t peer_len = strlen(peer);
    uint64_t ph = peer_hash(s, peer, peer_len);
    uint64_t kh = key_hash(s, m);
    struct bw_peer *p = peer_find(s, peer, peer_len, ph);
    struct bw_entry *t = entry_find(p, ENTRY_TRANSFER, kh, m);
    size_t bs = edhoc_block_size(b->szx);
    size_t offset = (size_t)b->num * bs; /* < 2^30: NUM < 2^20, size <= 2^10 */
    size_t plen = m->payload_len;

    /* Size1 announces the whole body (RFC 7959 Section 4): a body the
     * server will not take is refused before anything is kept (Section
     * 2.9.3). */
    if (v->has_size1 && v->size1 > s->lim.max_body) {
        if (t)
            entry_free(s, t);
        return reply_too_large(s, m, out, cap, out_len);
    }
    /* Every block but the last has the block size (RFC 7959 Section 2.2:
     * the M bit "when set, indicates that there are one or more additional
     * blocks available"; Section 2.4: only "the last block (the one
     * returned with the M bit not set)" may not be filled), and no block
     * is larger: 4.00 Bad Request, as for other invalid requests (RFC 7252
     * Section 5.9.2.1). The transfer, if any, stays: the block was not
     * one of it. */
    if ((b->more && plen != bs) || plen > bs) {
        s->st.refused_bad_option++;
        return reply_code(m, COAP_CODE_BAD_REQUEST, out, cap, out_len);
    }
    if (offset + plen > s->lim.max_body) {
        if (t)
            entry_free(s, t);
        return reply_too_large(s, m, out, cap, out_len);
    }

    if (b->num == 0) {
        /* NUM 0 starts the body, and restarts it when a transfer exists
         * (RFC 9175 Section 3.3: a new initial Block1 request overwrites
         * the server's old state). */
        if (!b->more) {
            int rc = make_whole(m, m->payload, plen, NULL, 0, whole, whole_len);
            if (rc)
                return rc;
            if (t)
                make_done(s, t, m, b);
            else
                remember_done(s, peer, peer_len, ph, m, kh, b, now_ms);
            s->st.completed++;
            return EDHOC_BW_WHOLE;
        }
        bool fresh = !t;
        if (fresh) {
            if (!make_room(s, peer, peer_len, ph, 1, entry_bytes(m) + bs, false, NULL))
                return reply_busy(s, m, out, cap, out_len);
            t = entry_new(s, peer, peer_len, ph, ENTRY_TRANSFER, m, kh, now_ms);
            if (!t)
                return EDHOC_BW_ERR_NOMEM;
        }
        t->body_len = 0;
        int rc = transfer_reserve(s, t, plen);
        if (rc) {
            if (fresh)
                entry_free(s, t);
            return rc == EDHOC_BW_ERR_NOMEM ? rc : reply_busy(s, m, out, cap, out_len);
        }
        memcpy(t->body, m->payload, plen);
        t->body_len = plen;
        t->szx = b->szx;
        t->last_off = 0;
        t->last_len = plen;
        t->last_num = 0;
        touch(s, t, now_ms);
        return reply_continue(m, b, out, cap, out_len);
    }

    /* A continuation needs its transfer; without one the server answers
     * 4.08 (RFC 7959 Section 2.9.2: the client "has not sent all blocks,
     * not sent them in the order required by the server, or has sent them
     * long enough ago that the server has already discarded them"). A
     * repeated final block after completion finds no transfer either and
     * is answered the same way. */
    if (!t)
        return reply_incomplete(s, m, out, cap, out_len);

    /* The block size is that of block 0, or smaller once the client
     * heeded a preference (RFC 7959 Section 2.5: "use the block size
     * preferred by the server or a smaller one"; NUM then counts in the
     * new size). The block must start where the body so far ends. */
    if (b->szx <= t->szx && offset == t->body_len) {
        if (!b->more) {
            /* The final block: the request is whole. Built from the stored
             * part and this block (no need to grow the buffer), so a
             * failure leaves the transfer as it was. */
            int rc = make_whole(m, t->body, t->body_len, m->payload, plen, whole, whole_len);
            if (rc)
                return rc;
            make_done(s, t, m, b);
            touch(s, t, now_ms);
            s->st.completed++;
            return EDHOC_BW_WHOLE;
        }
        int rc = transfer_reserve(s, t, offset + plen);
        if (rc)
            return rc == EDHOC_BW_ERR_NOMEM ? rc : reply_busy(s, m, out, cap, out_len);
        memcpy(t->body + offset, m->payload, plen);
        t->body_len = offset + plen;
        t->szx = b->szx;
        t->last_off = offset;
        t->last_len = plen;
        t->last_num = b->num;
        touch(s, t, now_ms);
        return reply_continue(m, b, out, cap, out_len);
    }
    /* The block accepted last, again (its 2.31 was lost): answered again. */
    if (b->more && b->szx == t->szx && b->num == t->last_num && offset == t->last_off &&
        plen == t->last_len && memcmp(t->body + offset, m->payload, plen) == 0) {
        touch(s, t, now_ms);
        return reply_continue(m, b, out, cap, out_len);
    }
    /* Out of order (RFC 7959 Section 2.5: "A server MAY also return a 4.08
     * error code for any (final or non-final) Block1 transfer that is not
     * in sequence"). The transfer stays for the block it expects. */
    return reply_incomplete(s, m, out, cap, out_len);
}

/* Writes the block of a kept body that starts at byte offset, in blocks
 * of szx, into o (whose header is set). */
static long write_kept_block(struct edhoc_bw_server *s, const struct bw_entry *k,
                             struct out_msg *o, size_t offset, unsigned szx, bool want_size2,
                             const uint8_t *b1_value, size_t b1_len, uint8_t *out, size_t cap,
                             bool *more)
{
    struct coap_msg stored;
    if (edhoc_coap_msg_parse_body(k->opts, k->opts_len, &stored) != 0)
        return EDHOC_BW_ERR_MALFORMED;
    size_t bs = edhoc_block_size(szx);
    struct edhoc_block blk = {.num = (uint32_t)(offset / bs), .more = offset + bs < k->body_len,
                              .szx = szx};
    uint8_t bv[3], sv[4];
    o->code = k->code;
    o->nopts = 0;
    out_copy_options(o, &stored, NULL, 0);
    int rc = out_add(o, COAP_OPT_BLOCK2, bv, edhoc_block_encode(&blk, bv));
    /* Size2 with block 0, and whenever asked for with Size2 0 (RFC 7959
     * Section 4). */
    if (!rc && (blk.num == 0 || want_size2))
        rc = out_add(o, COAP_OPT_SIZE2, sv, edhoc_coap_uint_encode((uint32_t)k->body_len, sv));
    if (!rc && b1_value)
        rc = out_add(o, COAP_OPT_BLOCK1, b1_value, b1_len);
    if (rc)
        return rc;
    o->p1 = k->body + offset;
    o->l1 = size_min(bs, k->body_len - offset);
    o->p2 = NULL;
    o->l2 = 0;
    long n = out_write(o, out, cap);
    if (n >= 0) {
        s->st.served_blocks++;
        *more = blk.more;
    }
    return n;
}

/* The block size a kept body is served in: the one asked for, but never
 * larger than that of block 0 (RFC 7959 Section 2.4: "A server MUST use
 * the block size indicated or a smaller size"). */
static unsigned serve_szx(unsigned asked, unsigned server)
{
    return asked < server ? asked : server;
}

static int block2_request(struct edhoc_bw_server *s, const char *peer, const struct coap_msg *m,
                          const struct block_view *v, uint64_t now_ms, uint8_t *out, size_t cap,
                          size_t *out_len)
{
    size_t peer_len = strlen(peer);
    uint64_t ph = peer_hash(s, peer, peer_len);
    struct bw_peer *p = peer_find(s, peer, peer_len, ph);
    if (!p)
        return EDHOC_BW_PASS;
    struct bw_entry *k = entry_find(p, ENTRY_KEPT, key_hash(s, m), m);
    if (!k)
        return EDHOC_BW_PASS;
    size_t offset = (size_t)v->b2.num * edhoc_block_size(v->b2.szx);
    if (offset >= k->body_len)
        return reply_incomplete(s, m, out, cap, out_len);
    unsigned szx = serve_szx(v->b2.szx, k->szx);
    struct out_msg o;
    out_reply(&o, m, k->code);
    bool more = false;
    long n = write_kept_block(s, k, &o, offset, szx, v->has_size2 && v->size2 == 0, NULL, 0, out,
                              cap, &more);
    if (n < 0)
        return (int)n;
    touch(s, k, now_ms);
    /* Served to the end: dropped first when room is needed, kept
     * otherwise so that a repeated request for the last block is still
     * answered. */
    if (!more)
        set_droppable(s, k);
    *out_len = (size_t)n;
    return EDHOC_BW_REPLY;
}

int edhoc_bw_server_request(struct edhoc_bw_server *s, const char *peer, const uint8_t *msg,
                            size_t len, uint64_t now_ms, uint8_t **whole, size_t *whole_len,
                            uint8_t *out, size_t cap, size_t *out_len)
{
    if (!s || !peer || !msg || !whole || !whole_len || !out || !out_len)
        return EDHOC_BW_ERR_ARG;
    *whole = NULL;
    *whole_len = 0;
    *out_len = 0;
    edhoc_bw_server_expire(s, now_ms);
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, len, &m) != 0)
        return EDHOC_BW_ERR_MALFORMED;
    /* Only requests (CON or NON) take part in block-wise transfers. */
    if (!edhoc_coap_code_is_request(m.code) || m.type > COAP_TYPE_NON)
        return EDHOC_BW_PASS;
    struct block_view v;
    view_blocks(&m, &v);
    if (v.bad_option) {
        /* A critical option not understood: 4.02 (RFC 7252 Section 5.4.1). */
        s->st.refused_bad_option++;
        return reply_code(&m, COAP_CODE_BAD_OPTION, out, cap, out_len);
    }
    if (v.reserved_szx) {
        /* RFC 7959 Section 2.2: SZX 7 "MUST lead to a 4.00 Bad Request
         * response code upon reception in a request". */
        s->st.refused_bad_option++;
        return reply_code(&m, COAP_CODE_BAD_REQUEST, out, cap, out_len);
    }
    if (v.b1_ok)
        return block1_request(s, peer, &m, &v, now_ms, whole, whole_len, out, cap, out_len);
    if (v.b2_ok && v.b2.num > 0)
        return block2_request(s, peer, &m, &v, now_ms, out, cap, out_len);
    return EDHOC_BW_PASS;
}

/* ---- Server: responses ---- */

/* The largest SZX whose size is at most block_size, or -1 below 16. */
static int szx_at_most(size_t block_size)
{
    if (block_size < 16)
        return -1;
    int szx = 0;
    while (szx < 6 && edhoc_block_size((unsigned)szx + 1) <= block_size)
        szx++;
    return szx;
}

/* Stores the response's code and options for later blocks: without
 * Block1, Block2 and Size2 (added per block), with the ETag given. */
static int keep_body(struct edhoc_bw_server *s, const char *peer, size_t peer_len, uint64_t ph,
                     const struct coap_msg *req, uint64_t kh, const struct coap_msg *resp,
                     const uint8_t *etag, size_t etag_len, unsigned szx, uint64_t now_ms,
                     struct bw_entry **kept)
{
    static const uint16_t drop[] = {COAP_OPT_BLOCK1, COAP_OPT_BLOCK2, COAP_OPT_SIZE2};
    struct out_msg o;
    out_from(&o, resp);
    out_copy_options(&o, resp, drop, 3);
    /* Every block adds Block2 and maybe Size2 and the Block1 echo: refused
     * now rather than on each block when they would not fit the codec. */
    if (o.nopts + (etag ? 1u : 0u) + 3u > COAP_MSG_MAX_OPTIONS)
        return EDHOC_BW_ERR_MALFORMED;
    if (etag)
        out_add(&o, COAP_OPT_ETAG, etag, etag_len);
    long olen = edhoc_coap_msg_encode_body(o.opts, o.nopts, NULL, 0, NULL, 0);
    if (olen < 0)
        return EDHOC_BW_ERR_MALFORMED;

    struct bw_entry *old = entry_find(peer_find(s, peer, peer_len, ph), ENTRY_KEPT, kh, req);
    if (old)
        entry_free(s, old); /* replaced by the new representation */
    size_t need = entry_bytes(req) + (size_t)olen + resp->payload_len;
    if (!make_room(s, peer, peer_len, ph, 1, need, true, NULL))
        return EDHOC_BW_ERR_TOO_LARGE; /* answered 5.03 */
    struct bw_entry *k = entry_new(s, peer, peer_len, ph, ENTRY_KEPT, req, kh, now_ms);
    if (!k)
        return EDHOC_BW_ERR_NOMEM;
    k->opts = malloc(olen ? (size_t)olen : 1);
    k->body = malloc(resp->payload_len);
    if (!k->opts || !k->body) {
        entry_free(s, k);
        return EDHOC_BW_ERR_NOMEM;
    }
    edhoc_coap_msg_encode_body(o.opts, o.nopts, NULL, 0, k->opts, (size_t)olen);
    k->opts_len = (size_t)olen;
    memcpy(k->body, resp->payload, resp->payload_len);
    k->body_len = k->body_cap = resp->payload_len;
    k->held += (size_t)olen + resp->payload_len;
    s->st.bytes_held += (size_t)olen + resp->payload_len;
    k->code = resp->code;
    k->szx = szx;
    *kept = k;
    return 0;
}

static long write_busy(struct edhoc_bw_server *s, const struct coap_msg *resp, uint8_t *out,
                       size_t cap)
{
    s->st.refused_busy++;
    struct out_msg o;
    out_from(&o, resp);
    uint8_t v[4];
    busy_message(&o, v);
    return out_write(&o, out, cap);
}

long edhoc_bw_server_response(struct edhoc_bw_server *s, const char *peer, const uint8_t *request,
                              size_t req_len, const uint8_t *response, size_t resp_len,
                              size_t block_size, uint64_t now_ms, uint8_t *out, size_t cap)
{
    if (!s || !peer || !request || !response || !out)
        return EDHOC_BW_ERR_ARG;
    int srv_szx = szx_at_most(block_size);
    if (srv_szx < 0)
        return EDHOC_BW_ERR_ARG;
    edhoc_bw_server_expire(s, now_ms);
    struct coap_msg req, resp;
    if (edhoc_coap_msg_parse(request, req_len, &req) != 0 || !edhoc_coap_code_is_request(req.code) ||
        edhoc_coap_msg_parse(response, resp_len, &resp) != 0 || (resp.code >> 5) < 2)
        return EDHOC_BW_ERR_MALFORMED;
    struct block_view rv, pv;
    view_blocks(&req, &rv);
    view_blocks(&resp, &pv);
    size_t peer_len = strlen(peer);
    uint64_t ph = peer_hash(s, peer, peer_len);
    struct bw_peer *p = peer_find(s, peer, peer_len, ph);
    /* The common case, on every request: a peer with no transfer and a
     * response that fits one block goes out as it is. */
    if (!p && !rv.b2_ok && !pv.block2 && resp.payload_len <= edhoc_block_size((unsigned)srv_szx)) {
        if (resp_len > cap)
            return EDHOC_BW_ERR_BUFFER;
        memcpy(out, response, resp_len);
        return (long)resp_len;
    }
    uint64_t kh = key_hash(s, &req);

    /* The response to a completed Block1 transfer carries its last Block1
     * with M 0 (RFC 7959 Section 2.3). The marker belongs to exactly the
     * message *whole was (its Message ID and token). */
    struct bw_entry *done = find_done(p, kh, &req);
    uint8_t b1v[3];
    size_t b1_len = 0;
    bool echo_b1 = done && !pv.block1;
    if (echo_b1) {
        struct edhoc_block e = {.num = done->last_num, .more = false, .szx = done->szx};
        b1_len = edhoc_block_encode(&e, b1v);
    }

    /* A handler that did its own block-wise transfer is left alone. */
    bool asked = rv.b2_ok;
    unsigned szx = asked ? serve_szx(rv.b2.szx, (unsigned)srv_szx) : (unsigned)srv_szx;
    size_t bs = edhoc_block_size(szx);
    size_t offset = asked ? (size_t)rv.b2.num * edhoc_block_size(rv.b2.szx) : 0;
    size_t plen = resp.payload_len;
    long n;
    if (pv.block2 || (plen <= bs && offset == 0)) {
        /* Fits one message: any body kept for this request is stale. */
        struct bw_entry *stale = entry_find(p, ENTRY_KEPT, kh, &req);
        if (stale && !pv.block2)
            entry_free(s, stale);
        if (!echo_b1) {
            if (resp_len > cap)
                return EDHOC_BW_ERR_BUFFER;
            memcpy(out, response, resp_len);
            n = (long)resp_len;
        } else {
            struct out_msg o;
            out_from(&o, &resp);
            out_copy_options(&o, &resp, NULL, 0);
            o.p1 = resp.payload;
            o.l1 = plen;
            int rc = out_add(&o, COAP_OPT_BLOCK1, b1v, b1_len);
            if (rc)
                return rc;
            n = out_write(&o, out, cap);
        }
        if (n >= 0 && done)
            entry_free(s, done);
        return n;
    }
    if (plen > s->lim.max_body)
        return EDHOC_BW_ERR_TOO_LARGE;

    struct out_msg o;
    out_from(&o, &resp);
    if (offset >= plen) {
        /* A block past the end of the body (RFC 7959 Section 2.9.2). */
        s->st.refused_incomplete++;
        o.code = CODE_REQUEST_INCOMPLETE;
        return out_write(&o, out, cap);
    }

    /* An ETag tells representations apart (RFC 7959 Section 2.4); one is
     * made up when a success response has none (RFC 7252 Section 5.10.6
     * gives ETags to success responses only). It only has to differ
     * between the bodies a peer may see in turn: a counter from a seeded
     * start, offset by the peer. */
    uint8_t etag[ETAG_LEN];
    bool make_etag = !pv.etag && (resp.code >> 5) == 2;
    if (make_etag) {
        uint32_t t = (uint32_t)mix64(s->seed ^ ph) + s->etag_counter++;
        for (unsigned i = 0; i < ETAG_LEN; i++)
            etag[i] = (uint8_t)(t >> (8 * (ETAG_LEN - 1 - i)));
    }
    bool more = offset + bs < plen;
    if (more) {
        struct bw_entry *k = NULL;
        int rc = keep_body(s, peer, peer_len, ph, &req, kh, &resp, make_etag ? etag : NULL,
                           ETAG_LEN, szx, now_ms, &k);
        if (rc == EDHOC_BW_ERR_TOO_LARGE)
            return write_busy(s, &resp, out, cap);
        if (rc)
            return rc;
        n = write_kept_block(s, k, &o, offset, szx, rv.has_size2 && rv.size2 == 0,
                             echo_b1 ? b1v : NULL, b1_len, out, cap, &more);
    } else {
        /* The last block, served at once: nothing to keep. */
        struct bw_entry *stale = entry_find(p, ENTRY_KEPT, kh, &req);
        if (stale)
            entry_free(s, stale);
        static const uint16_t drop[] = {COAP_OPT_BLOCK2, COAP_OPT_SIZE2};
        out_copy_options(&o, &resp, drop, 2);
        struct edhoc_block blk = {.num = (uint32_t)(offset / bs), .more = false, .szx = szx};
        uint8_t bv[3], sv[4];
        int rc = out_add(&o, COAP_OPT_BLOCK2, bv, edhoc_block_encode(&blk, bv));
        if (!rc && make_etag)
            rc = out_add(&o, COAP_OPT_ETAG, etag, ETAG_LEN);
        if (!rc && (blk.num == 0 || (rv.has_size2 && rv.size2 == 0)))
            rc = out_add(&o, COAP_OPT_SIZE2, sv, edhoc_coap_uint_encode((uint32_t)plen, sv));
        if (!rc && echo_b1)
            rc = out_add(&o, COAP_OPT_BLOCK1, b1v, b1_len);
        if (rc)
            return rc;
        o.p1 = resp.payload + offset;
        o.l1 = plen - offset;
        n = out_write(&o, out, cap);
        if (n >= 0)
            s->st.served_blocks++;
    }
    /* Re-found: keep_body may have made room by dropping markers. */
    if (n >= 0 && echo_b1) {
        done = find_done(peer_find(s, peer, peer_len, ph), kh, &req);
        if (done)
            entry_free(s, done);
    }
    return n;
}

/* ---- Client ---- */

long edhoc_bw_request_block(const uint8_t *msg, size_t len, unsigned szx, uint32_t num,
                            uint8_t *out, size_t cap)
{
    if (!msg || !out || szx > 6 || num >= BLOCK_NUM_LIMIT)
        return EDHOC_BW_ERR_ARG;
    struct coap_msg m;
    /* Only a request has a body to send in Block1 blocks (an Empty message
     * with options would not even be CoAP). */
    if (edhoc_coap_msg_parse(msg, len, &m) != 0 || !edhoc_coap_code_is_request(m.code))
        return EDHOC_BW_ERR_MALFORMED;
    size_t bs = edhoc_block_size(szx);
    size_t offset = (size_t)num * bs;
    /* Block 0 exists even for an empty body: one final empty block. */
    if (num > 0 && offset >= m.payload_len)
        return 0;
    size_t n = size_min(bs, m.payload_len - offset);
    struct edhoc_block b = {.num = num, .more = offset + n < m.payload_len, .szx = szx};
    static const uint16_t drop[] = {COAP_OPT_BLOCK1, COAP_OPT_SIZE1};
    struct out_msg o;
    out_from(&o, &m);
    out_copy_options(&o, &m, drop, 2);
    uint8_t bv[3], sv[4];
    int rc = out_add(&o, COAP_OPT_BLOCK1, bv, edhoc_block_encode(&b, bv));
    /* Size1 on block 0 tells the server the whole size up front (RFC 7959
     * Section 4), so that it can refuse at once. */
    if (!rc && num == 0)
        rc = out_add(&o, COAP_OPT_SIZE1, sv, edhoc_coap_uint_encode((uint32_t)m.payload_len, sv));
    if (rc)
        return rc;
    o.p1 = n ? m.payload + offset : NULL;
    o.l1 = n;
    return out_write(&o, out, cap);
}

long edhoc_bw_request_next(const uint8_t *msg, size_t len, unsigned szx, uint32_t num,
                           uint8_t *out, size_t cap)
{
    if (!msg || !out || szx > 6 || num >= BLOCK_NUM_LIMIT)
        return EDHOC_BW_ERR_ARG;
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, len, &m) != 0 || !edhoc_coap_code_is_request(m.code))
        return EDHOC_BW_ERR_MALFORMED;
    static const uint16_t drop[] = {COAP_OPT_BLOCK1, COAP_OPT_SIZE1, COAP_OPT_BLOCK2};
    struct out_msg o;
    out_from(&o, &m);
    out_copy_options(&o, &m, drop, 3);
    /* In a request the M bit of Block2 is zero (RFC 7959 Section 2.4). */
    struct edhoc_block b = {.num = num, .more = false, .szx = szx};
    uint8_t bv[3];
    int rc = out_add(&o, COAP_OPT_BLOCK2, bv, edhoc_block_encode(&b, bv));
    if (rc)
        return rc;
    return out_write(&o, out, cap);
}

void edhoc_bw_collect_init(struct edhoc_bw_collect *c, size_t max_body)
{
    if (!c)
        return;
    memset(c, 0, sizeof *c);
    c->max_body = max_body ? max_body : EDHOC_BW_DEFAULT_MAX_BODY;
}

static int collect_reserve(struct edhoc_bw_collect *c, size_t need)
{
    if (need <= c->cap)
        return 0;
    size_t want = c->cap * 2;
    if (want < 256)
        want = 256;
    if (want > c->max_body)
        want = c->max_body;
    if (want < need)
        want = need;
    uint8_t *nb = realloc(c->body, want);
    if (!nb)
        return EDHOC_BW_ERR_NOMEM;
    c->body = nb;
    c->cap = want;
    return 0;
}

int edhoc_bw_collect_add(struct edhoc_bw_collect *c, const uint8_t *resp, size_t len)
{
    if (!c || !resp || c->done)
        return EDHOC_BW_ERR_ARG;
    struct coap_msg m;
    if (edhoc_coap_msg_parse(resp, len, &m) != 0 || (m.code >> 5) < 2)
        return EDHOC_BW_ERR_MALFORMED;
    struct block_view v;
    view_blocks(&m, &v);
    if (v.n_block2 > 1 || (v.block2 && !v.b2_ok))
        return EDHOC_BW_ERR_MALFORMED;
    /* Size2 announces the whole body (RFC 7959 Section 4): refused before
     * anything is kept. */
    if (v.has_size2 && v.size2 > c->max_body)
        return EDHOC_BW_ERR_TOO_LARGE;

    if (!v.block2) {
        /* Not block-wise: the response is whole as it is, also in the
         * middle of a transfer (an error such as 4.08, or the server
         * answering with the whole representation). */
        if (m.payload_len > c->max_body)
            return EDHOC_BW_ERR_TOO_LARGE;
        c->len = 0;
        if (m.payload_len) {
            int rc = collect_reserve(c, m.payload_len);
            if (rc)
                return rc;
            memcpy(c->body, m.payload, m.payload_len);
        }
        c->len = m.payload_len;
        c->etag_len = 0;
        c->started = true;
        c->done = true;
        return 0;
    }

    const struct edhoc_block *b = &v.b2;
    size_t bs = edhoc_block_size(b->szx);
    size_t offset = (size_t)b->num * bs;
    /* Block 0 first; then the block that starts where the body so far
     * ends, in the size of block 0 or a smaller one (RFC 7959 Section 2.4:
     * the size of later blocks is that of the first response, and "A
     * server MUST use the block size indicated or a smaller size"). */
    if (!c->started ? b->num != 0 : (offset != c->len || b->szx > c->szx))
        return EDHOC_BW_ERR_ORDER;
    /* All blocks but the last have the full size (RFC 7959 Section 2.4:
     * "there may not be enough content to fill the last block (the one
     * returned with the M bit not set)"). */
    if ((b->more && m.payload_len != bs) || m.payload_len > bs)
        return EDHOC_BW_ERR_MALFORMED;
    /* ETag: each block must come from the representation of block 0 (RFC
     * 7959 Section 2.4: a client "MUST ... compare the ETag" of later
     * blocks with that of the first). An ETag is 1-8 bytes (RFC 7252
     * Section 5.10.6). */
    if (v.etag && (v.etag->len == 0 || v.etag->len > sizeof c->etag))
        return EDHOC_BW_ERR_MALFORMED;
    size_t etag_len = v.etag ? v.etag->len : 0;
    if (c->started && (etag_len != c->etag_len ||
                       (etag_len && memcmp(v.etag->value, c->etag, etag_len) != 0)))
        return EDHOC_BW_ERR_ETAG;
    if (offset + m.payload_len > c->max_body)
        return EDHOC_BW_ERR_TOO_LARGE;
    if (m.payload_len) {
        int rc = collect_reserve(c, offset + m.payload_len);
        if (rc)
            return rc;
        memcpy(c->body + offset, m.payload, m.payload_len);
    }
    if (!c->started) {
        c->etag_len = etag_len;
        if (etag_len)
            memcpy(c->etag, v.etag->value, etag_len);
        c->started = true;
    }
    c->len = offset + m.payload_len;
    c->szx = b->szx;
    if (!b->more) {
        c->done = true;
        return 0;
    }
    c->next_num = (uint32_t)(c->len / bs);
    if (c->next_num >= BLOCK_NUM_LIMIT)
        return EDHOC_BW_ERR_TOO_LARGE;
    return 1;
}

long edhoc_bw_collect_message(const struct edhoc_bw_collect *c, const uint8_t *last_resp,
                              size_t len, uint8_t *out, size_t cap)
{
    if (!c || !last_resp || !out || !c->done)
        return EDHOC_BW_ERR_ARG;
    struct coap_msg m;
    if (edhoc_coap_msg_parse(last_resp, len, &m) != 0 || (m.code >> 5) < 2)
        return EDHOC_BW_ERR_MALFORMED;
    static const uint16_t drop[] = {COAP_OPT_BLOCK2, COAP_OPT_SIZE2};
    struct out_msg o;
    out_from(&o, &m);
    out_copy_options(&o, &m, drop, 2);
    o.p1 = c->body;
    o.l1 = c->len;
    return out_write(&o, out, cap);
}

void edhoc_bw_collect_free(struct edhoc_bw_collect *c)
{
    if (!c)
        return;
    free(c->body);
    size_t max_body = c->max_body;
    memset(c, 0, sizeof *c);
    c->max_body = max_body;
}
