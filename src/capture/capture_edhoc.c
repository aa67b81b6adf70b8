/*
 * Finding EDHOC exchanges in captured CoAP traffic and counting their
 * bytes per layer.
 *
 * Recognition follows what peers actually send: RFC 9528 Appendix A.2
 * (message_1 after CBOR true, message_3 after C_R, Content-Formats 65/64,
 * POST to the EDHOC resource), the bare framing of devices predating it (a
 * message_1 recognized by its own structure, message_3 correlated by
 * address), and the RFC 9668 EDHOC option carrying message_3 inside an
 * OSCORE request. Responses belong to requests by token and reversed
 * addresses; retransmissions are recognized by Message ID and token.
 */
#include <stdio.h>
#include <string.h>

#include "edhoc/capture.h"
#include "edhoc/cbor.h"
#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/edhoc.h"

#ifndef COAP_OPT_EDHOC
#define COAP_OPT_EDHOC 21 /* RFC 9668 */
#endif
#define CF_EDHOC_CBOR_SEQ     64
#define CF_CID_EDHOC_CBOR_SEQ 65
#define CODE_CONTINUE         COAP_CODE(2, 31)
#define CBOR_TRUE             0xf5

/* What classification needs from a request or response's header. */
struct view {
    uint8_t type, code, token_len;
    uint8_t token[8];
    uint16_t mid;
    int content_format;
    bool edhoc_path, has_oscore, has_edhoc_option;
    uint8_t kid[EDHOC_CAPTURE_MAX_CID];
    size_t kid_len;
    bool block1, block1_more, block2, block2_more;
    uint32_t block1_num, block2_num;
    unsigned block1_szx, block2_szx;
};

/* One datagram with its per-layer numbers. */
struct dgram {
    const struct edhoc_capture_packet *p;
    unsigned packet;
    struct timespec ts;
    struct edhoc_netacct_layers l;
};

const char *edhoc_capture_msg_type_name(enum edhoc_capture_msg_type t)
{
    switch (t) {
    case EDHOC_CAPTURE_MSG_1: return "message_1";
    case EDHOC_CAPTURE_MSG_2: return "message_2";
    case EDHOC_CAPTURE_MSG_3: return "message_3";
    case EDHOC_CAPTURE_MSG_4: return "message_4";
    case EDHOC_CAPTURE_MSG_ERROR: return "error";
    case EDHOC_CAPTURE_MSG_3_ACK: return "2.04 to message_3";
    case EDHOC_CAPTURE_MSG_3_OSCORE: return "message_3 + OSCORE";
    case EDHOC_CAPTURE_MSG_OSCORE_REQUEST: return "OSCORE request";
    case EDHOC_CAPTURE_MSG_OSCORE_RESPONSE: return "OSCORE response";
    case EDHOC_CAPTURE_MSG_EMPTY: return "empty ACK/RST";
    }
    return "?";
}

static enum edhoc_netacct_kind kind_of(enum edhoc_capture_msg_type t)
{
    switch (t) {
    case EDHOC_CAPTURE_MSG_OSCORE_REQUEST:
    case EDHOC_CAPTURE_MSG_OSCORE_RESPONSE: return EDHOC_NETACCT_KIND_OSCORE;
    case EDHOC_CAPTURE_MSG_EMPTY: return EDHOC_NETACCT_KIND_OTHER;
    default: return EDHOC_NETACCT_KIND_HANDSHAKE;
    }
}

void edhoc_capture_analysis_init(struct edhoc_capture_analysis *a,
                                 const struct edhoc_netacct_link *link)
{
    if (!a)
        return;
    memset(a, 0, sizeof *a);
    if (link)
        a->link = *link;
    else
        a->link.type = EDHOC_NETACCT_LINK_NONE;
}

void edhoc_capture_analysis_issue(struct edhoc_capture_analysis *a, unsigned packet,
                                  const char *text)
{
    if (!a || !text)
        return;
    if (a->n_issues == EDHOC_CAPTURE_MAX_ISSUES) {
        a->issues_dropped++;
        return;
    }
    struct edhoc_capture_issue *i = &a->issues[a->n_issues++];
    i->packet = packet;
    snprintf(i->text, sizeof i->text, "%s", text);
}

static void issuef(struct edhoc_capture_analysis *a, unsigned packet, const char *fmt, int v)
{
    char buf[96];
    snprintf(buf, sizeof buf, fmt, v);
    edhoc_capture_analysis_issue(a, packet, buf);
}

/* ---- Views of CoAP messages ---- */

static void block_option(const struct coap_msg *m, uint16_t number, bool *present, uint32_t *num,
                         bool *more, unsigned *szx)
{
    const struct coap_option *o = edhoc_coap_msg_find_option(m, number);
    uint32_t v = 0;
    *present = o && edhoc_coap_option_uint(o, &v) == 0;
    if (!*present)
        return;
    *num = v >> 4;
    *more = (v >> 3) & 1;
    *szx = v & 7;
}

/* RFC 8613 Section 6.1: flags (n = Partial IV length, k = kid present,
 * h = kid context present), Partial IV, kid context, kid. */
static void oscore_kid(const struct coap_option *o, uint8_t *kid, size_t *kid_len)
{
    *kid_len = 0;
    if (!o || o->len == 0)
        return;
    const uint8_t *v = o->value;
    size_t pos = 1 + (v[0] & 0x07);
    if (v[0] & 0x10) {
        if (pos >= o->len)
            return;
        pos += 1 + (size_t)v[pos];
    }
    if (!(v[0] & 0x08) || pos > o->len || o->len - pos > EDHOC_CAPTURE_MAX_CID)
        return;
    *kid_len = o->len - pos;
    if (*kid_len)
        memcpy(kid, v + pos, *kid_len);
}

static void make_view(const struct coap_msg *m, struct view *v)
{
    memset(v, 0, sizeof *v);
    v->type = m->type;
    v->code = m->code;
    v->mid = m->mid;
    v->token_len = m->token_len;
    memcpy(v->token, m->token, m->token_len);
    v->content_format = -1;
    const struct coap_option *o = edhoc_coap_msg_find_option(m, COAP_OPT_CONTENT_FORMAT);
    uint32_t cf;
    if (o && edhoc_coap_option_uint(o, &cf) == 0)
        v->content_format = (int)cf;
    /* The EDHOC resource is /.well-known/edhoc by default, but a URI may
     * name another path: any path ending in "edhoc" counts. */
    const struct coap_option *last = NULL;
    for (size_t i = 0; i < m->option_count; i++)
        if (m->options[i].number == COAP_OPT_URI_PATH)
            last = &m->options[i];
    v->edhoc_path = last && last->len == 5 && memcmp(last->value, "edhoc", 5) == 0;
    o = edhoc_coap_msg_find_option(m, COAP_OPT_OSCORE);
    v->has_oscore = o != NULL;
    oscore_kid(o, v->kid, &v->kid_len);
    v->has_edhoc_option = edhoc_coap_msg_find_option(m, COAP_OPT_EDHOC) != NULL;
    block_option(m, COAP_OPT_BLOCK1, &v->block1, &v->block1_num, &v->block1_more, &v->block1_szx);
    block_option(m, COAP_OPT_BLOCK2, &v->block2, &v->block2_num, &v->block2_more, &v->block2_szx);
}

/* ---- Addresses ---- */

static size_t addr_len(int version)
{
    return version == 6 ? 16 : 4;
}

/* Does p travel client -> server (dir true) or server -> client? */
static bool on_path(const struct edhoc_capture_exchange *ex, const struct edhoc_capture_packet *p,
                    bool from_client)
{
    if (ex->ip_version != p->ip_version)
        return false;
    size_t n = addr_len(p->ip_version);
    const uint8_t *s = from_client ? ex->client : ex->server;
    const uint8_t *d = from_client ? ex->server : ex->client;
    uint16_t sp = from_client ? ex->client_port : ex->server_port;
    uint16_t dp = from_client ? ex->server_port : ex->client_port;
    return memcmp(p->src, s, n) == 0 && memcmp(p->dst, d, n) == 0 && p->src_port == sp &&
           p->dst_port == dp;
}

static bool asm_on_path(const struct edhoc_capture_assembly *as,
                        const struct edhoc_capture_packet *p, bool same_direction)
{
    if (!as->used || as->ip_version != p->ip_version)
        return false;
    size_t n = addr_len(p->ip_version);
    const uint8_t *s = same_direction ? as->from : as->to;
    const uint8_t *d = same_direction ? as->to : as->from;
    uint16_t sp = same_direction ? as->from_port : as->to_port;
    uint16_t dp = same_direction ? as->to_port : as->from_port;
    return memcmp(p->src, s, n) == 0 && memcmp(p->dst, d, n) == 0 && p->src_port == sp &&
           p->dst_port == dp;
}

/* ---- Suite parameters for the size inference ---- */

static size_t curve_len(int crv)
{
    switch (crv) {
    case EDHOC_COSE_CRV_P256:
    case EDHOC_COSE_CRV_X25519: return 32;
    case EDHOC_COSE_CRV_P384: return 48;
    case EDHOC_COSE_CRV_X448: return 56;
    }
    return 0;
}

static size_t signature_len(const struct edhoc_suite *su)
{
    switch (su->sig_alg) {
    case EDHOC_COSE_ES256: return 64;
    case EDHOC_COSE_ES384: return 96;
    case EDHOC_COSE_EDDSA: return su->sig_curve == EDHOC_COSE_CRV_ED448 ? 114 : 64;
    }
    return 0;
}

static size_t tag_len(const struct edhoc_suite *su)
{
    return su->aead == EDHOC_COSE_AES_CCM_16_64_128 ? 8 : 16;
}

/* Length of a CBOR bstr of n bytes. */
static size_t bstr_len(size_t n)
{
    return n + (n < 24 ? 1 : n < 256 ? 2 : 3);
}

/* A connection identifier's value -> its CBOR encoding length (RFC 9528
 * Section 3.3.2: one byte when it has the integer form, else a bstr). */
static size_t cid_encoded_len(const uint8_t *v, size_t len)
{
    if (len == 1 && (v[0] <= 0x17 || (v[0] >= 0x20 && v[0] <= 0x37)))
        return 1;
    return bstr_len(len);
}

static void describe_id_cred(char *out, size_t cap, long n, bool assumed_c_r)
{
    const char *note = assumed_c_r ? ", assuming a 1-byte C_R and no EAD" : ", assuming no EAD";
    if (n <= 0)
        snprintf(out, cap, "unknown (sizes do not add up%s)", note);
    else if (n <= 9)
        snprintf(out, cap, "kid (inferred: %ld byte%s%s)", n, n == 1 ? "" : "s", note);
    else if (n == 14 || n == 39 || n == 56)
        snprintf(out, cap, "x5t (inferred: %ld bytes%s)", n, note);
    else if (n >= 60)
        snprintf(out, cap, "x5chain or kccs (by value, inferred: %ld bytes%s)", n, note);
    else
        snprintf(out, cap, "unknown (%ld bytes%s)", n, note);
}

/* ID_CRED_R = CIPHERTEXT_2 - C_R - Signature_or_MAC_2; ID_CRED_I =
 * CIPHERTEXT_3 - tag - Signature_or_MAC_3 (EAD absent). Methods: the
 * responder authenticates with static DH in 1 and 3, the initiator in 2
 * and 3. */
static void infer_id_creds(struct edhoc_capture_exchange *ex)
{
    if (ex->n_suites == 0 || ex->method < 0)
        return;
    const struct edhoc_suite *su = edhoc_suite_find(ex->suites[ex->n_suites - 1]);
    if (!su)
        return;
    size_t mac = (size_t)su->mac_len, sig = signature_len(su);
    if (ex->ct2_len) {
        bool r_static = ex->method == 1 || ex->method == 3;
        size_t cr = ex->c_r_known ? cid_encoded_len(ex->c_r, ex->c_r_len) : 1;
        long n = (long)ex->ct2_len - (long)cr - (long)bstr_len(r_static ? mac : sig);
        describe_id_cred(ex->id_cred_r, sizeof ex->id_cred_r, n, !ex->c_r_known);
    }
    if (ex->ct3_len) {
        bool i_static = ex->method == 2 || ex->method == 3;
        long n = (long)ex->ct3_len - (long)tag_len(su) - (long)bstr_len(i_static ? mac : sig);
        describe_id_cred(ex->id_cred_i, sizeof ex->id_cred_i, n, false);
    }
}

/* ---- Recording ---- */

static void charge(struct edhoc_capture_analysis *a, struct edhoc_capture_exchange *ex,
                   enum edhoc_netacct_kind kind, const struct edhoc_netacct_total *t)
{
    struct edhoc_netacct_total *et = kind == EDHOC_NETACCT_KIND_HANDSHAKE ? &ex->totals.handshake
                                     : kind == EDHOC_NETACCT_KIND_OSCORE  ? &ex->totals.oscore
                                                                          : &ex->totals.other;
    struct edhoc_netacct_total *at = kind == EDHOC_NETACCT_KIND_HANDSHAKE ? &a->totals.handshake
                                     : kind == EDHOC_NETACCT_KIND_OSCORE  ? &a->totals.oscore
                                                                          : &a->totals.other;
    edhoc_netacct_total_merge(et, t);
    edhoc_netacct_total_merge(&ex->totals.all, t);
    edhoc_netacct_total_merge(at, t);
    edhoc_netacct_total_merge(&a->totals.all, t);
}

/* Record a message made of the datagrams in acc (frame bytes summed in
 * frame). Returns its index or -1 when the list is full. */
static int add_msg(struct edhoc_capture_analysis *a, struct edhoc_capture_exchange *ex,
                   enum edhoc_capture_msg_type type, bool from_initiator,
                   const struct edhoc_netacct_total *acc, size_t frame, size_t edhoc,
                   unsigned packet, const struct timespec *ts, const struct view *v)
{
    struct edhoc_netacct_total t = *acc;
    t.messages = 1;
    t.edhoc = edhoc;
    charge(a, ex, kind_of(type), &t);
    if (ex->n_msgs == EDHOC_CAPTURE_MAX_MESSAGES) {
        ex->msgs_dropped++;
        return -1;
    }
    struct edhoc_capture_msg *m = &ex->msgs[ex->n_msgs];
    memset(m, 0, sizeof *m);
    m->type = type;
    m->packet = packet;
    m->from_initiator = from_initiator;
    if (ts)
        m->ts = *ts;
    m->edhoc = edhoc;
    m->datagrams = acc->datagrams;
    m->frame = frame;
    m->coap = acc->coap;
    m->udp = acc->udp;
    m->ip = acc->ip;
    m->link_frames = acc->frames;
    m->link_bytes = acc->link;
    /* One message goes one way: whichever direction its datagrams were
     * counted in holds all of its air time. */
    m->air = acc->up;
    edhoc_netacct_air_add(&m->air, &acc->down);
    m->token_len = v->token_len;
    memcpy(m->token, v->token, v->token_len);
    m->mid = v->mid;
    m->complete = true;
    m->answers = -1;
    return (int)ex->n_msgs++;
}

/* A response: recorded like any message, linked to its request. */
static void add_reply(struct edhoc_capture_analysis *a, struct edhoc_capture_exchange *ex,
                      size_t req, enum edhoc_capture_msg_type type,
                      const struct edhoc_netacct_total *acc, size_t frame, size_t edhoc,
                      unsigned packet, const struct timespec *ts, const struct view *v)
{
    int i = add_msg(a, ex, type, false, acc, frame, edhoc, packet, ts, v);
    if (i >= 0)
        ex->msgs[i].answers = (int)req;
}

static void acc_from(const struct dgram *d, struct edhoc_netacct_total *acc)
{
    edhoc_netacct_total_clear(acc);
    edhoc_netacct_total_add(acc, &d->l, 0, false);
}

/* A datagram repeating (retransmission) or continuing a recorded message. */
static void add_to_msg(struct edhoc_capture_analysis *a, struct edhoc_capture_exchange *ex,
                       struct edhoc_capture_msg *m, const struct dgram *d, bool retransmission)
{
    struct edhoc_netacct_total t;
    acc_from(d, &t);
    charge(a, ex, kind_of(m->type), &t);
    m->datagrams++;
    if (retransmission)
        m->retransmissions++;
    m->frame += d->p->frame_len;
    m->coap += d->l.coap;
    m->udp += d->l.udp;
    m->ip += d->l.ip;
    m->link_frames += d->l.frames;
    m->link_bytes += d->l.link;
    edhoc_netacct_air_add(&m->air, &d->l.air);
}

bool edhoc_capture_exchange_failed(const struct edhoc_capture_exchange *ex)
{
    if (!ex)
        return false;
    if (ex->error_code != -1)
        return true;
    for (size_t i = 0; i < ex->n_msgs; i++)
        if (ex->msgs[i].type == EDHOC_CAPTURE_MSG_ERROR)
            return true;
    return false;
}

static void evict_oldest(struct edhoc_capture_analysis *a)
{
    const struct edhoc_capture_exchange *old = &a->ex[0];
    a->ex_evicted++;
    if (edhoc_capture_exchange_failed(old))
        a->ex_evicted_failed++;
    else if (old->completed)
        a->ex_evicted_completed++;
    memmove(&a->ex[0], &a->ex[1], (a->n_ex - 1) * sizeof a->ex[0]);
    a->n_ex--;
    /* Block-wise responses refer to their exchange by index. */
    for (size_t i = 0; i < EDHOC_CAPTURE_MAX_ASSEMBLIES; i++) {
        struct edhoc_capture_assembly *as = &a->asm_[i];
        if (!as->used || as->ex < 0)
            continue;
        if (as->ex == 0)
            as->used = false;
        else
            as->ex--;
    }
}

static struct edhoc_capture_exchange *new_exchange(struct edhoc_capture_analysis *a,
                                                   const struct edhoc_capture_packet *p,
                                                   unsigned packet)
{
    if (a->n_ex == EDHOC_CAPTURE_MAX_EXCHANGES) {
        evict_oldest(a);
        if (a->ex_evicted == 1)
            issuef(a, packet,
                   "more than %d EDHOC exchanges: the oldest leave the listing "
                   "(still counted in the totals)",
                   EDHOC_CAPTURE_MAX_EXCHANGES);
    }
    struct edhoc_capture_exchange *ex = &a->ex[a->n_ex++];
    memset(ex, 0, sizeof *ex);
    ex->ip_version = p->ip_version;
    memcpy(ex->client, p->src, 16);
    memcpy(ex->server, p->dst, 16);
    ex->client_port = p->src_port;
    ex->server_port = p->dst_port;
    ex->method = -1;
    ex->error_code = -1;
    ex->framing = "?";
    return ex;
}

static bool has_type(const struct edhoc_capture_exchange *ex, enum edhoc_capture_msg_type t)
{
    for (size_t i = 0; i < ex->n_msgs; i++)
        if (ex->msgs[i].type == t)
            return true;
    return false;
}

/* The latest exchange on this path, optionally one waiting for message_3
 * (message_2 seen, no message_3 yet). */
static struct edhoc_capture_exchange *find_exchange(struct edhoc_capture_analysis *a,
                                                    const struct edhoc_capture_packet *p,
                                                    bool from_client, bool awaiting_3,
                                                    bool *found_from_client)
{
    for (size_t i = a->n_ex; i-- > 0;) {
        struct edhoc_capture_exchange *ex = &a->ex[i];
        for (int dir = 0; dir < 2; dir++) {
            bool fc = dir == 0 ? from_client : !from_client;
            if (dir == 1 && !found_from_client)
                break;
            if (!on_path(ex, p, fc))
                continue;
            if (awaiting_3 && (ex->completed || !has_type(ex, EDHOC_CAPTURE_MSG_2)))
                continue;
            if (found_from_client)
                *found_from_client = fc;
            return ex;
        }
    }
    return NULL;
}

/* A repeated datagram: same Message ID, token and direction as a message
 * already recorded. */
static bool retransmission(struct edhoc_capture_analysis *a, const struct view *v,
                           const struct dgram *d)
{
    for (size_t i = a->n_ex; i-- > 0;) {
        struct edhoc_capture_exchange *ex = &a->ex[i];
        for (size_t k = ex->n_msgs; k-- > 0;) {
            struct edhoc_capture_msg *m = &ex->msgs[k];
            if (m->mid != v->mid || m->token_len != v->token_len ||
                memcmp(m->token, v->token, v->token_len) != 0 ||
                !on_path(ex, d->p, m->from_initiator))
                continue;
            add_to_msg(a, ex, m, d, true);
            return true;
        }
    }
    return false;
}

/* ---- Requests ---- */

/* The CBOR item at the start of buf as a connection identifier (an int
 * in -24..23 or a short bstr): its value and encoded length. */
static bool leading_cid(const uint8_t *buf, size_t len, uint8_t *v, size_t *v_len, size_t *enc)
{
    struct edhoc_cbor_reader r;
    struct edhoc_cbor_item it;
    edhoc_cbor_reader_init(&r, buf, len);
    if (edhoc_cbor_get(&r, &it) != 0)
        return false;
    if ((it.type == EDHOC_CBOR_UINT || it.type == EDHOC_CBOR_NINT) && it.head_len == 1) {
        v[0] = buf[0];
        *v_len = 1;
        *enc = 1;
        return true;
    }
    if (it.type == EDHOC_CBOR_BSTR && it.len <= EDHOC_CAPTURE_MAX_CID) {
        if (it.len)
            memcpy(v, it.ptr, it.len);
        *v_len = it.len;
        *enc = it.head_len + it.len;
        return true;
    }
    return false;
}

static void set_message_1(struct edhoc_capture_exchange *ex, const struct edhoc_message_1_fields *f,
                          const char *framing)
{
    ex->method = f->method;
    ex->n_suites = f->n_suites < EDHOC_CAPTURE_MAX_SUITES ? f->n_suites : EDHOC_CAPTURE_MAX_SUITES;
    for (size_t i = 0; i < ex->n_suites; i++)
        ex->suites[i] = f->suites[f->n_suites - ex->n_suites + i];
    ex->c_i_len = f->c_i_len < EDHOC_CAPTURE_MAX_CID ? f->c_i_len : EDHOC_CAPTURE_MAX_CID;
    memcpy(ex->c_i, f->c_i, ex->c_i_len);
    ex->framing = framing;
}

static void classify_request(struct edhoc_capture_analysis *a, const struct view *v,
                             const uint8_t *body, size_t len, const struct dgram *d,
                             const struct edhoc_netacct_total *acc, size_t frame)
{
    const struct edhoc_capture_packet *p = d->p;
    struct edhoc_message_1_fields f;

    if (v->has_oscore && v->has_edhoc_option) {
        /* RFC 9668: the payload starts with message_3 (one bstr) and the
         * OSCORE ciphertext follows; the kid is C_R. */
        struct edhoc_cbor_reader r;
        edhoc_cbor_reader_init(&r, body, len);
        size_t m3 = 0;
        if (len && edhoc_cbor_skip(&r) == 0)
            m3 = len - edhoc_cbor_remaining(&r);
        struct edhoc_capture_exchange *ex = find_exchange(a, p, true, true, NULL);
        if (!ex || m3 == 0) {
            edhoc_capture_analysis_issue(a, d->packet,
                                         ex ? "EDHOC + OSCORE request without "
                                              "message_3"
                                            : "EDHOC + OSCORE request outside a "
                                              "known EDHOC exchange");
            a->unmatched++;
            return;
        }
        const uint8_t *ct;
        size_t ct_len;
        if (edhoc_message_3_parse(body, m3, &ct, &ct_len) == 0)
            ex->ct3_len = ct_len;
        if (v->kid_len <= EDHOC_CAPTURE_MAX_CID) {
            memcpy(ex->c_r, v->kid, v->kid_len);
            ex->c_r_len = v->kid_len;
            ex->c_r_known = true;
        }
        ex->framing = "RFC 9668 combined";
        ex->completed = true;
        add_msg(a, ex, EDHOC_CAPTURE_MSG_3_OSCORE, true, acc, frame, m3, d->packet, &d->ts, v);
        infer_id_creds(ex);
        return;
    }

    if (v->has_oscore) {
        struct edhoc_capture_exchange *ex = NULL;
        /* The request's kid is the client's Sender ID, i.e. C_R. */
        for (size_t i = a->n_ex; i-- > 0 && !ex;) {
            struct edhoc_capture_exchange *e = &a->ex[i];
            if (on_path(e, p, true) && e->completed &&
                (!e->c_r_known ||
                 (e->c_r_len == v->kid_len && memcmp(e->c_r, v->kid, v->kid_len) == 0)))
                ex = e;
        }
        if (!ex) {
            a->unmatched++;
            return;
        }
        if (!ex->c_r_known && v->kid_len <= EDHOC_CAPTURE_MAX_CID) {
            memcpy(ex->c_r, v->kid, v->kid_len);
            ex->c_r_len = v->kid_len;
            ex->c_r_known = true;
            infer_id_creds(ex);
        }
        add_msg(a, ex, EDHOC_CAPTURE_MSG_OSCORE_REQUEST, true, acc, frame, 0, d->packet, &d->ts, v);
        return;
    }

    bool edhoc_hint = v->edhoc_path || v->content_format == CF_EDHOC_CBOR_SEQ ||
                      v->content_format == CF_CID_EDHOC_CBOR_SEQ;
    if (v->code != COAP_CODE_POST || len == 0) {
        if (edhoc_hint && v->code == COAP_CODE_POST)
            edhoc_capture_analysis_issue(a, d->packet, "EDHOC request without a payload");
        a->unmatched++;
        return;
    }

    /* message_1: after CBOR true (A.2), or bare (recognized by its own
     * structure: an int method 0..3 first, then SUITES_I, G_X, C_I). */
    if (body[0] == CBOR_TRUE && edhoc_message_1_parse(body + 1, len - 1, &f) == 0) {
        struct edhoc_capture_exchange *ex = new_exchange(a, p, d->packet);
        if (!ex)
            return;
        set_message_1(ex, &f, "RFC 9528 A.2");
        add_msg(a, ex, EDHOC_CAPTURE_MSG_1, true, acc, frame, len - 1, d->packet, &d->ts, v);
        return;
    }
    if (edhoc_message_1_parse(body, len, &f) == 0) {
        struct edhoc_capture_exchange *ex = new_exchange(a, p, d->packet);
        if (!ex)
            return;
        set_message_1(ex, &f, "bare");
        add_msg(a, ex, EDHOC_CAPTURE_MSG_1, true, acc, frame, len, d->packet, &d->ts, v);
        return;
    }

    struct edhoc_capture_exchange *ex = find_exchange(a, p, true, true, NULL);
    if (!ex) {
        if (edhoc_hint) {
            edhoc_capture_analysis_issue(a, d->packet,
                                         "EDHOC request outside a known exchange (capture "
                                         "started mid-handshake?)");
            a->skipped++;
        } else {
            a->unmatched++;
        }
        return;
    }
    const uint8_t *ct;
    size_t ct_len;
    /* Bare message_3: the payload is one bstr. */
    if (edhoc_message_3_parse(body, len, &ct, &ct_len) == 0) {
        ex->ct3_len = ct_len;
        ex->completed = true;
        add_msg(a, ex, EDHOC_CAPTURE_MSG_3, true, acc, frame, len, d->packet, &d->ts, v);
        infer_id_creds(ex);
        return;
    }
    uint8_t cid[EDHOC_CAPTURE_MAX_CID];
    size_t cid_len, enc;
    if (leading_cid(body, len, cid, &cid_len, &enc) && enc < len) {
        const uint8_t *rest = body + enc;
        size_t rest_len = len - enc;
        if (edhoc_message_3_parse(rest, rest_len, &ct, &ct_len) == 0) {
            memcpy(ex->c_r, cid, cid_len);
            ex->c_r_len = cid_len;
            ex->c_r_known = true;
            ex->ct3_len = ct_len;
            ex->completed = true;
            add_msg(a, ex, EDHOC_CAPTURE_MSG_3, true, acc, frame, rest_len, d->packet, &d->ts, v);
            infer_id_creds(ex);
            return;
        }
        struct edhoc_error_info e;
        if (edhoc_message_is_error(rest, rest_len)) {
            ex->error_code = edhoc_error_message_parse(rest, rest_len, &e) == 0 ? (int)e.code : -1;
            add_msg(a, ex, EDHOC_CAPTURE_MSG_ERROR, true, acc, frame, rest_len, d->packet, &d->ts,
                    v);
            return;
        }
    }
    edhoc_capture_analysis_issue(a, d->packet,
                                 "EDHOC request not understood (not message_1, "
                                 "message_3 or an error)");
    a->skipped++;
}

/* ---- Responses ---- */

static void classify_response(struct edhoc_capture_analysis *a, struct edhoc_capture_exchange *ex,
                              size_t req, const struct view *v, const uint8_t *body, size_t len,
                              const struct dgram *d, const struct edhoc_netacct_total *acc,
                              size_t frame)
{
    enum edhoc_capture_msg_type rt = ex->msgs[req].type;
    bool error_code = (v->code >> 5) >= 4;
    struct edhoc_error_info e;

    if (rt == EDHOC_CAPTURE_MSG_OSCORE_REQUEST || rt == EDHOC_CAPTURE_MSG_3_OSCORE ||
        (rt == EDHOC_CAPTURE_MSG_3 && v->has_oscore)) {
        add_reply(a, ex, req, EDHOC_CAPTURE_MSG_OSCORE_RESPONSE, acc, frame, 0, d->packet, &d->ts,
                  v);
        return;
    }
    if (rt != EDHOC_CAPTURE_MSG_1 && rt != EDHOC_CAPTURE_MSG_3) {
        a->unmatched++;
        return;
    }
    if (len && (error_code || edhoc_message_is_error(body, len))) {
        ex->error_code = edhoc_error_message_parse(body, len, &e) == 0 ? (int)e.code : -1;
        add_reply(a, ex, req, EDHOC_CAPTURE_MSG_ERROR, acc, frame, len, d->packet, &d->ts, v);
        return;
    }
    if (error_code) {
        ex->error_code = -1;
        add_reply(a, ex, req, EDHOC_CAPTURE_MSG_ERROR, acc, frame, 0, d->packet, &d->ts, v);
        return;
    }
    if (rt == EDHOC_CAPTURE_MSG_1) {
        const struct edhoc_suite *su =
            ex->n_suites ? edhoc_suite_find(ex->suites[ex->n_suites - 1]) : NULL;
        size_t g = su ? curve_len(su->ecdh_curve) : 32;
        const uint8_t *gy, *ct;
        size_t ct_len;
        if (edhoc_message_2_parse(body, len, g, &gy, &ct, &ct_len) != 0) {
            edhoc_capture_analysis_issue(a, d->packet,
                                         "the response to message_1 is not message_2");
            a->skipped++;
            return;
        }
        ex->ct2_len = ct_len;
        add_reply(a, ex, req, EDHOC_CAPTURE_MSG_2, acc, frame, len, d->packet, &d->ts, v);
        infer_id_creds(ex);
        return;
    }
    const uint8_t *ct;
    size_t ct_len;
    if (len == 0) {
        add_reply(a, ex, req, EDHOC_CAPTURE_MSG_3_ACK, acc, frame, 0, d->packet, &d->ts, v);
    } else if (edhoc_message_4_parse(body, len, &ct, &ct_len) == 0) {
        add_reply(a, ex, req, EDHOC_CAPTURE_MSG_4, acc, frame, len, d->packet, &d->ts, v);
    } else {
        edhoc_capture_analysis_issue(a, d->packet, "the response to message_3 is not message_4");
        a->skipped++;
    }
}

static bool is_request_type(enum edhoc_capture_msg_type t)
{
    return t == EDHOC_CAPTURE_MSG_1 || t == EDHOC_CAPTURE_MSG_3 ||
           t == EDHOC_CAPTURE_MSG_3_OSCORE || t == EDHOC_CAPTURE_MSG_OSCORE_REQUEST ||
           /* an error the initiator sent in a POST */
           t == EDHOC_CAPTURE_MSG_ERROR;
}

/* The request a response answers: same token, reversed path, latest. */
static bool find_request(struct edhoc_capture_analysis *a, const struct view *v,
                         const struct edhoc_capture_packet *p, size_t *exi, size_t *mi)
{
    for (size_t i = a->n_ex; i-- > 0;) {
        struct edhoc_capture_exchange *ex = &a->ex[i];
        if (!on_path(ex, p, false))
            continue;
        for (size_t k = ex->n_msgs; k-- > 0;) {
            const struct edhoc_capture_msg *m = &ex->msgs[k];
            if (m->from_initiator && is_request_type(m->type) && m->token_len == v->token_len &&
                memcmp(m->token, v->token, v->token_len) == 0) {
                *exi = i;
                *mi = k;
                return true;
            }
        }
    }
    return false;
}

/* ---- Block-wise transfer (RFC 7959) ---- */

static struct edhoc_capture_assembly *asm_start(struct edhoc_capture_analysis *a,
                                                const struct dgram *d, const struct view *v,
                                                bool request)
{
    struct edhoc_capture_assembly *as = NULL;
    for (size_t i = 0; i < EDHOC_CAPTURE_MAX_ASSEMBLIES; i++) {
        /* A new first block on the same path replaces an abandoned one. */
        if (asm_on_path(&a->asm_[i], d->p, true) && a->asm_[i].request == request) {
            as = &a->asm_[i];
            break;
        }
        if (!as && !a->asm_[i].used)
            as = &a->asm_[i];
    }
    if (!as) {
        edhoc_capture_analysis_issue(a, d->packet, "too many block-wise transfers at once");
        a->skipped++;
        return NULL;
    }
    memset(as, 0, sizeof *as);
    as->used = true;
    as->request = request;
    as->ip_version = d->p->ip_version;
    memcpy(as->from, d->p->src, 16);
    memcpy(as->to, d->p->dst, 16);
    as->from_port = d->p->src_port;
    as->to_port = d->p->dst_port;
    as->packet = d->packet;
    as->ts = d->ts;
    as->code = v->code;
    as->mid = v->mid;
    as->content_format = v->content_format;
    as->edhoc_path = v->edhoc_path;
    as->has_oscore = v->has_oscore;
    as->has_edhoc_option = v->has_edhoc_option;
    memcpy(as->kid, v->kid, v->kid_len);
    as->kid_len = v->kid_len;
    as->ex = -1;
    as->req_msg = -1;
    return as;
}

static struct edhoc_capture_assembly *asm_find(struct edhoc_capture_analysis *a,
                                               const struct edhoc_capture_packet *p,
                                               bool same_direction, bool request)
{
    for (size_t i = 0; i < EDHOC_CAPTURE_MAX_ASSEMBLIES; i++)
        if (a->asm_[i].request == request && asm_on_path(&a->asm_[i], p, same_direction))
            return &a->asm_[i];
    return NULL;
}

static void asm_count(struct edhoc_capture_assembly *as, const struct dgram *d)
{
    edhoc_netacct_total_add(&as->acc, &d->l, 0, false);
    as->frame += d->p->frame_len;
}

/* Append a block at its offset; false (and the transfer dropped) when it
 * does not continue the body or overflows it. */
static bool asm_append(struct edhoc_capture_analysis *a, struct edhoc_capture_assembly *as,
                       const struct dgram *d, uint32_t num, unsigned szx, const uint8_t *data,
                       size_t len)
{
    if (szx == 7) {
        edhoc_capture_analysis_issue(a, d->packet, "block with the reserved size exponent 7");
        as->used = false;
        a->skipped++;
        return false;
    }
    uint64_t off = (uint64_t)num << (szx + 4);
    if (off != as->body_len) {
        /* A retransmitted block: counted, not appended. */
        if (off < as->body_len) {
            asm_count(as, d);
            return false;
        }
        edhoc_capture_analysis_issue(a, d->packet, "block-wise transfer with a missing block");
        as->used = false;
        a->skipped++;
        return false;
    }
    if (len > EDHOC_CAPTURE_MAX_BODY - as->body_len) {
        edhoc_capture_analysis_issue(a, d->packet, "block-wise body larger than 4096 bytes");
        as->used = false;
        a->skipped++;
        return false;
    }
    if (len)
        memcpy(as->body + as->body_len, data, len);
    as->body_len += len;
    asm_count(as, d);
    return true;
}

static void view_from_asm(const struct edhoc_capture_assembly *as, const struct view *last,
                          struct view *v)
{
    *v = *last;
    v->code = as->code;
    v->content_format = as->content_format;
    v->edhoc_path = as->edhoc_path;
    v->has_oscore = as->has_oscore;
    v->has_edhoc_option = as->has_edhoc_option;
    memcpy(v->kid, as->kid, as->kid_len);
    v->kid_len = as->kid_len;
}

/* ---- Entry points ---- */

static void handle_request(struct edhoc_capture_analysis *a, const struct view *v,
                           const struct coap_msg *m, const struct dgram *d)
{
    if (retransmission(a, v, d))
        return;
    struct edhoc_netacct_total acc;
    if (v->block2 && v->block2_num > 0) {
        /* The client asking for the next block of a response. */
        struct edhoc_capture_assembly *as = asm_find(a, d->p, false, false);
        if (as)
            asm_count(as, d);
        else
            a->unmatched++;
        return;
    }
    if (v->block1 && (v->block1_more || v->block1_num > 0)) {
        struct edhoc_capture_assembly *as;
        if (v->block1_num == 0) {
            /* The first block again (same Message ID): a retransmission. */
            as = asm_find(a, d->p, true, true);
            if (as && as->mid == v->mid) {
                asm_count(as, d);
                return;
            }
            as = asm_start(a, d, v, true);
        } else {
            as = asm_find(a, d->p, true, true);
            if (!as) {
                a->unmatched++;
                return;
            }
        }
        if (!as || !asm_append(a, as, d, v->block1_num, v->block1_szx, m->payload, m->payload_len))
            return;
        if (v->block1_more)
            return;
        struct view full;
        view_from_asm(as, v, &full);
        as->used = false;
        classify_request(a, &full, as->body, as->body_len, d, &as->acc, as->frame);
        return;
    }
    acc_from(d, &acc);
    classify_request(a, v, m->payload, m->payload_len, d, &acc, d->p->frame_len);
}

static void handle_response(struct edhoc_capture_analysis *a, const struct view *v,
                            const struct coap_msg *m, const struct dgram *d)
{
    if (retransmission(a, v, d))
        return;
    if (v->code == CODE_CONTINUE) {
        struct edhoc_capture_assembly *as = asm_find(a, d->p, false, true);
        if (as)
            asm_count(as, d);
        else
            a->unmatched++;
        return;
    }
    if (v->block2 && v->block2_num > 0) {
        struct edhoc_capture_assembly *as = asm_find(a, d->p, true, false);
        if (!as) {
            a->unmatched++;
            return;
        }
        if (!asm_append(a, as, d, v->block2_num, v->block2_szx, m->payload, m->payload_len) ||
            v->block2_more)
            return;
        as->used = false;
        if (as->ex < 0 || (size_t)as->ex >= a->n_ex)
            return;
        struct view full;
        view_from_asm(as, v, &full);
        classify_response(a, &a->ex[as->ex], (size_t)as->req_msg, &full, as->body, as->body_len, d,
                          &as->acc, as->frame);
        return;
    }
    size_t exi, mi;
    if (!find_request(a, v, d->p, &exi, &mi)) {
        a->unmatched++;
        return;
    }
    if (v->block2 && v->block2_more) {
        struct edhoc_capture_assembly *as = asm_find(a, d->p, true, false);
        if (as && as->mid == v->mid && v->block2_num == 0) {
            asm_count(as, d);
            return;
        }
        as = asm_start(a, d, v, false);
        if (!as)
            return;
        as->ex = (int)exi;
        as->req_msg = (int)mi;
        asm_append(a, as, d, 0, v->block2_szx, m->payload, m->payload_len);
        return;
    }
    struct edhoc_netacct_total acc;
    acc_from(d, &acc);
    classify_response(a, &a->ex[exi], mi, v, m->payload, m->payload_len, d, &acc, d->p->frame_len);
}

static bool coap_port(uint16_t port)
{
    return port == 5683 || port == 5684;
}

void edhoc_capture_analysis_packet(struct edhoc_capture_analysis *a, unsigned packet,
                                   const struct edhoc_capture_packet *p, const struct timespec *ts)
{
    if (!a || !p)
        return;
    a->udp++;
    struct dgram d;
    memset(&d, 0, sizeof d);
    d.p = p;
    d.packet = packet;
    if (ts)
        d.ts = *ts;
    struct coap_msg m;
    if (edhoc_coap_msg_parse(p->payload, p->payload_len, &m) != 0) {
        if (coap_port(p->src_port) || coap_port(p->dst_port)) {
            issuef(a, packet, "UDP datagram on a CoAP port is not a valid CoAP message (%d bytes)",
                   (int)p->payload_len);
            a->skipped++;
        } else {
            a->ignored++;
        }
        return;
    }
    a->coap++;
    /* The direction from the CoAP roles, not from the ports: a request
     * goes from client to server (uplink on LoRaWAN, the client being the
     * end device), a response the other way, whatever port the server
     * listens on (RFC 7252 Section 2.1: client and server are roles). An
     * empty ACK or RST goes the other way from the message it answers:
     * the exchange it belongs to tells which side sent it. */
    enum edhoc_netacct_dir dir = EDHOC_NETACCT_DIR_AUTO;
    if (edhoc_coap_code_is_request(m.code)) {
        dir = EDHOC_NETACCT_DIR_UP;
    } else if ((m.code >> 5) >= 2) {
        dir = EDHOC_NETACCT_DIR_DOWN;
    } else if (m.code == COAP_CODE_EMPTY) {
        bool fc = false;
        if (find_exchange(a, p, true, false, &fc))
            dir = fc ? EDHOC_NETACCT_DIR_UP : EDHOC_NETACCT_DIR_DOWN;
    }
    /* The CoAP bytes themselves, so SCHC on LoRaWAN compresses the header
     * by its rules rather than carrying it whole. */
    struct edhoc_netacct_dgram nd = {.udp_payload = p->payload_len,
                                     .ipv6 = p->ip_version == 6,
                                     .ip_len = p->ip_len,
                                     .src_port = p->src_port,
                                     .dst_port = p->dst_port,
                                     .addrs_known = p->ip_version == 6,
                                     .payload = p->payload,
                                     .dir = dir};
    memcpy(nd.src_addr, p->src, 16);
    memcpy(nd.dst_addr, p->dst, 16);
    int rc = edhoc_netacct_datagram(&a->link, &nd, &d.l, NULL, 0);
    if (rc != 0) {
        /* The datagram cannot cross the modelled link: keep its IP-level
         * numbers, count no frames for it, and say so. */
        edhoc_capture_analysis_issue(a, packet,
                                     rc == EDHOC_NETACCT_ERR_TOO_LARGE
                                         ? "datagram too large for the modelled "
                                           "link (not counted in frames)"
                                         : "link parameters rejected");
        memset(&d.l, 0, sizeof d.l);
        d.l.coap = p->payload_len;
        d.l.udp = p->payload_len + 8;
        d.l.ip = p->ip_len;
    }
    struct view v;
    make_view(&m, &v);
    if (m.code == COAP_CODE_EMPTY) {
        bool from_client = false;
        struct edhoc_capture_exchange *ex = find_exchange(a, p, true, false, &from_client);
        if (!ex) {
            a->unmatched++;
            return;
        }
        struct edhoc_netacct_total acc;
        acc_from(&d, &acc);
        add_msg(a, ex, EDHOC_CAPTURE_MSG_EMPTY, from_client, &acc, p->frame_len, 0, packet, &d.ts,
                &v);
        return;
    }
    if (edhoc_coap_code_is_request(m.code))
        handle_request(a, &v, &m, &d);
    else if ((m.code >> 5) >= 2)
        handle_response(a, &v, &m, &d);
    else
        a->unmatched++;
}

void edhoc_capture_analysis_frame(struct edhoc_capture_analysis *a, unsigned packet, int dlt,
                                  const uint8_t *frame, size_t caplen, size_t wire_len,
                                  const struct timespec *ts)
{
    if (!a)
        return;
    a->packets++;
    struct edhoc_capture_packet p;
    int rc = edhoc_capture_packet_parse(dlt, frame, caplen, wire_len, &p);
    switch (rc) {
    case 0: edhoc_capture_analysis_packet(a, packet, &p, ts); return;
    case EDHOC_CAPTURE_ERR_NOT_IP:
    case EDHOC_CAPTURE_ERR_NOT_UDP: a->ignored++; return;
    default: {
        char buf[96];
        snprintf(buf, sizeof buf, "skipped: %s", edhoc_capture_strerror(rc));
        edhoc_capture_analysis_issue(a, packet, buf);
        a->skipped++;
        return;
    }
    }
}

const char *edhoc_capture_dlt_name(int dlt)
{
    switch (dlt) {
    case EDHOC_CAPTURE_DLT_NULL: return "BSD loopback";
    case EDHOC_CAPTURE_DLT_EN10MB: return "Ethernet";
    case EDHOC_CAPTURE_DLT_RAW:
    case EDHOC_CAPTURE_DLT_RAW_ALT: return "raw IP";
    case EDHOC_CAPTURE_DLT_LOOP: return "OpenBSD loopback";
    case EDHOC_CAPTURE_DLT_LINUX_SLL: return "Linux cooked v1";
    case EDHOC_CAPTURE_DLT_LINUX_SLL2: return "Linux cooked v2";
    case EDHOC_CAPTURE_DLT_IPV4: return "raw IPv4";
    case EDHOC_CAPTURE_DLT_IPV6: return "raw IPv6";
    }
    return NULL;
}

size_t edhoc_capture_cid_format(const uint8_t *v, size_t len, char *buf, size_t cap)
{
    int n;
    if (!buf || cap == 0)
        return 0;
    if (len == 1 && v[0] <= 0x17)
        n = snprintf(buf, cap, "%d (0x%02x)", v[0], v[0]);
    else if (len == 1 && v[0] >= 0x20 && v[0] <= 0x37)
        n = snprintf(buf, cap, "%d (0x%02x)", -1 - (v[0] - 0x20), v[0]);
    else {
        size_t w = 0;
        n = snprintf(buf, cap, "h'");
        w = n > 0 ? (size_t)n : 0;
        for (size_t i = 0; i < len && w + 3 < cap; i++)
            w += (size_t)snprintf(buf + w, cap - w, "%02x", v[i]);
        if (w + 2 < cap)
            w += (size_t)snprintf(buf + w, cap - w, "'");
        return w;
    }
    return n > 0 ? (size_t)n : 0;
}
