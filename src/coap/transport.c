/*
 * CoAP over UDP with libcoap 4.3.1: with transport_server.c the only code
 * that includes libcoap. This file: set-up, the message view, addresses
 * and the client side.
 *
 * Messages cross this boundary as whole CoAP message bytes. libcoap owns
 * sockets, Message IDs and retransmission of single PDUs, nothing more:
 * its block mode stays off (Debian's 4.3.1 crashes in its block code on
 * two crafted datagrams, and it reserves what a Size1 claims). Outer
 * block-wise transfer (RFC 7959) is our engine's (edhoc/blockwise.h):
 * the server reassembles Block1 and cuts large responses into Block2 before
 * and after its handler, the client sends Block1 and follows Block2 inside
 * edhoc_transport_client_wait, so both sides hand up whole messages. Every
 * received datagram passed the strict check of datagram_guard.c first.
 *
 * libcoap here is built without OSCORE: the OSCORE (9) and EDHOC (21)
 * options are plain critical options, registered so that libcoap does not
 * reject them with 4.02, and reach the engine with the rest of the bytes.
 */
#include "transport_internal.h"

static void pending_clear(struct pending *p);

const char *edhoc_transport_libcoap_version(void)
{
    /* libcoap says "libcoap 4.3.1"; the name is the caller's to print. */
    const char *v = coap_package_version();
    static const char prefix[] = "libcoap ";
    if (v && !strncmp(v, prefix, sizeof prefix - 1))
        v += sizeof prefix - 1;
    return v && *v ? v : "unknown";
}

const char *edhoc_transport_strerror(int err)
{
    switch (err) {
    case EDHOC_TRANSPORT_ERR_ARG: return "bad address or argument";
    case EDHOC_TRANSPORT_ERR_RESOLVE: return "host name does not resolve";
    case EDHOC_TRANSPORT_ERR_SOCKET: return "cannot open or bind the UDP socket";
    case EDHOC_TRANSPORT_ERR_TIMEOUT: return "no response in time";
    case EDHOC_TRANSPORT_ERR_UNREACHABLE: return "peer unreachable or reset the exchange";
    case EDHOC_TRANSPORT_ERR_MALFORMED: return "malformed CoAP message";
    case EDHOC_TRANSPORT_ERR_BUFFER: return "message too large";
    case EDHOC_TRANSPORT_ERR_NOMEM: return "out of memory";
    case EDHOC_TRANSPORT_ERR_SEND: return "the CoAP stack refused the message";
    default: return "unknown transport error";
    }
}

static int read_ext(const uint8_t **p, const uint8_t *end, unsigned nib, uint32_t *out)
{
    if (nib < 13) {
        *out = nib;
        return 0;
    }
    if (nib == 13) {
        if (*p >= end)
            return -1;
        *out = 13u + *(*p)++;
        return 0;
    }
    if (nib == 14) {
        if (end - *p < 2)
            return -1;
        *out = 269u + ((uint32_t)(*p)[0] << 8 | (*p)[1]);
        *p += 2;
        return 0;
    }
    return -1;
}

int transport_view_parse(const uint8_t *b, size_t len, struct view *v)
{
    memset(v, 0, sizeof *v);
    if (len < 4 || (b[0] >> 6) != 1)
        return -1;
    v->type = (b[0] >> 4) & 3;
    v->token_len = b[0] & 15;
    v->code = b[1];
    v->mid = (uint16_t)(b[2] << 8 | b[3]);
    if (v->token_len > 8 || len < 4u + v->token_len)
        return -1;
    v->token = b + 4;
    const uint8_t *p = b + 4 + v->token_len, *end = b + len;
    uint32_t number = 0;
    while (p < end) {
        if (*p == 0xff) {
            p++;
            if (p == end)
                return -1;
            v->payload = p;
            v->payload_len = (size_t)(end - p);
            return 0;
        }
        unsigned dn = *p >> 4, ln = *p & 15;
        p++;
        uint32_t delta, olen;
        if (read_ext(&p, end, dn, &delta) || read_ext(&p, end, ln, &olen))
            return -1;
        number += delta;
        if (number > 0xffff || (size_t)(end - p) < olen || v->n_opts >= VIEW_MAX_OPTIONS)
            return -1;
        v->opts[v->n_opts].number = (uint16_t)number;
        v->opts[v->n_opts].len = (uint16_t)olen;
        v->opts[v->n_opts].value = p;
        v->n_opts++;
        p += olen;
    }
    return 0;
}

static size_t put_ext(uint8_t *p, uint32_t v, unsigned *nib)
{
    if (v < 13) {
        *nib = v;
        return 0;
    }
    if (v < 269) {
        *nib = 13;
        p[0] = (uint8_t)(v - 13);
        return 1;
    }
    *nib = 14;
    p[0] = (uint8_t)((v - 269) >> 8);
    p[1] = (uint8_t)(v - 269);
    return 2;
}

/* Serialize a received PDU, every option included (Block options are
 * the engine's business). Returns the length or -1 when it does not fit. */
long transport_pdu_to_bytes(const coap_pdu_t *pdu, uint8_t *out, size_t cap)
{
    coap_bin_const_t tok = coap_pdu_get_token(pdu);
    if (cap < 4 + tok.length || tok.length > 8)
        return -1;
    out[0] = (uint8_t)(0x40 | (coap_pdu_get_type(pdu) & 3) << 4 | tok.length);
    out[1] = (uint8_t)coap_pdu_get_code(pdu);
    coap_mid_t mid = coap_pdu_get_mid(pdu);
    out[2] = (uint8_t)(mid >> 8);
    out[3] = (uint8_t)mid;
    memcpy(out + 4, tok.s, tok.length);
    size_t off = 4 + tok.length;
    coap_opt_iterator_t it;
    coap_opt_t *opt;
    uint32_t last = 0;
    coap_option_iterator_init(pdu, &it, COAP_OPT_ALL);
    while ((opt = coap_option_next(&it))) {
        uint16_t n = it.number;
        uint32_t olen = coap_opt_length(opt);
        if (cap - off < 5 + olen)
            return -1;
        uint8_t hdr[5];
        unsigned dn, ln;
        size_t hl = 1;
        hl += put_ext(hdr + hl, n - last, &dn);
        hl += put_ext(hdr + hl, olen, &ln);
        hdr[0] = (uint8_t)(dn << 4 | ln);
        memcpy(out + off, hdr, hl);
        off += hl;
        memcpy(out + off, coap_opt_value(opt), olen);
        off += olen;
        last = n;
    }
    size_t dlen = 0;
    const uint8_t *data = NULL;
    if (coap_get_data(pdu, &dlen, &data) && dlen) {
        if (cap - off < 1 + dlen)
            return -1;
        out[off++] = 0xff;
        memcpy(out + off, data, dlen);
        off += dlen;
    }
    return (long)off;
}

/* Options of v except the Content-Format (when skip_cf) onto pdu. */
int transport_add_options(coap_pdu_t *pdu, const struct view *v, bool skip_cf)
{
    for (size_t i = 0; i < v->n_opts; i++) {
        const struct view_opt *o = &v->opts[i];
        if (skip_cf && o->number == COAP_OPTION_CONTENT_FORMAT)
            continue;
        if (!coap_add_option(pdu, o->number, o->len, o->value) && o->len)
            return -1;
    }
    return 0;
}

/* ---- Common set-up ---- */

static void (*log_sink)(void *user, int level, const char *line);
static void *log_sink_user;

static void libcoap_log_line(coap_log_t level, const char *message)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "libcoap: %s", message ? message : "");
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = '\0';
    int lvl = (int)level < LOG_EMERG ? LOG_EMERG : (int)level > LOG_DEBUG ? LOG_DEBUG : (int)level;
    if (log_sink) {
        log_sink(log_sink_user, lvl, line);
        return;
    }
    if (len + 1 < sizeof line)
        line[len++] = '\n';
    else
        line[len - 1] = '\n'; /* cut, but still a line */
    for (size_t off = 0; off < len;) {
        ssize_t w = write(STDERR_FILENO, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        off += (size_t)w;
    }
}

void edhoc_transport_set_log_sink(void (*sink)(void *user, int level, const char *line), void *user)
{
    log_sink = sink;
    log_sink_user = user;
}

static void set_log_level(int level)
{
    coap_set_log_handler(libcoap_log_line);
    /* Its message dumps too: by default they are fprintf'd to standard
     * output, buffered, in pieces. */
    coap_set_show_pdu_output(0);
    coap_set_log_level(level < 0 ? LOG_EMERG : level > LOG_DEBUG ? LOG_DEBUG : level);
}

static unsigned mtu_for(const struct edhoc_transport_config *cfg)
{
    (void)cfg;
    return 1152;
}

unsigned transport_block_size(const struct edhoc_transport *t)
{
    return t->cfg.block_size ? t->cfg.block_size : 1024;
}

void transport_session_tune(struct edhoc_transport *t, coap_session_t *s)
{
    coap_session_set_mtu(s, t->mtu);
    if (t->cfg.ack_timeout_ms) {
        coap_fixed_point_t v = {t->cfg.ack_timeout_ms / 1000, t->cfg.ack_timeout_ms % 1000};
        coap_session_set_ack_timeout(s, v);
    }
    if (t->cfg.max_retransmit > 0)
        coap_session_set_max_retransmit(s, (unsigned)t->cfg.max_retransmit);
    else if (t->cfg.max_retransmit < 0)
        coap_session_set_max_retransmit(s, 0);
}

struct edhoc_transport *transport_new(const struct edhoc_transport_config *cfg)
{
    static bool started;
    if (!started) {
        coap_startup();
        started = true;
    }
    set_log_level(cfg ? cfg->log_level : 0);
    struct edhoc_transport *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    if (cfg)
        t->cfg = *cfg;
    t->mtu = mtu_for(cfg);
    t->ctx = coap_new_context(NULL);
    if (!t->ctx) {
        free(t);
        return NULL;
    }
    coap_set_app_data(t->ctx, t);
    /* libcoap's block mode stays off (see the top of this file). */
    /* The guard lets well-formed Block options through, so that our
     * engine, not a silent drop, answers 4.13 to a body above the
     * configured one (RFC 7959 Section 2.9.3). */
    struct edhoc_datagram_policy policy = edhoc_datagram_guard_policy();
    /* NUM < 2^20 and blocks of at most 1 KiB: every offset a Block option
     * can name stays below 1 GiB, which the engine handles (4.13). */
    size_t every_offset = (size_t)1 << 30;
    if (policy.max_body < every_offset) {
        policy.max_body = every_offset;
        edhoc_datagram_guard_set_policy(&policy);
    }
    coap_register_option(t->ctx, OPT_OSCORE);
    coap_register_option(t->ctx, OPT_EDHOC);
    return t;
}

void edhoc_transport_free(struct edhoc_transport *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < MAX_PENDING; i++)
        pending_clear(&t->pending[i]);
    if (t->dedup) {
        for (size_t i = 0; i < DEDUP_SLOTS; i++)
            free(t->dedup[i].bytes);
        free(t->dedup);
    }
    if (t->session)
        coap_session_release(t->session);
    /* libcoap 4.3.1 reports every confirmable message still unacknowledged
     * (a notification to an observer that vanished) to the nack handler
     * while it frees the context. The failure callback's owner (the
     * responder engine, whose observers held those sessions) is gone by
     * now: called, it released a session reference a second time and
     * libcoap aborted ("coap_session_release: Assertion `session->ref > 0'
     * failed", after a use of the freed engine). */
    t->on_failure = NULL;
    t->failure_user = NULL;
    if (t->ctx)
        coap_free_context(t->ctx);
    free(t->scratch);
    free(t->resp);
    free(t->blk);
    edhoc_bw_server_free(t->bw);
    free(t);
}

int edhoc_transport_run(struct edhoc_transport *t, int timeout_ms)
{
    if (!t)
        return EDHOC_TRANSPORT_ERR_ARG;
    int rc = coap_io_process(t->ctx, timeout_ms <= 0 ? COAP_IO_NO_WAIT : (uint32_t)timeout_ms);
    if (t->bw)
        edhoc_bw_server_expire(t->bw, transport_now_ms());
    return rc < 0 ? EDHOC_TRANSPORT_ERR_SOCKET : 0;
}

int edhoc_transport_poll_fd(const struct edhoc_transport *t)
{
    /* libcoap built with epoll: one descriptor for its sockets and its
     * retransmission timer (a timerfd in the same epoll set). */
    return t ? coap_context_get_coap_fd(t->ctx) : -1;
}

/* ---- Addresses ---- */

/* "host:port", "[v6]:port", "v6" with port separate. */
static int resolve(const char *host, uint16_t port, coap_address_t *out)
{
    char name[256];
    size_t hl = strlen(host);
    if (hl >= sizeof name)
        return EDHOC_TRANSPORT_ERR_ARG;
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        memcpy(name, host + 1, hl - 2);
        name[hl - 2] = '\0';
    } else {
        memcpy(name, host, hl + 1);
    }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    if (getaddrinfo(name, ps, &hints, &res) != 0 || !res)
        return EDHOC_TRANSPORT_ERR_RESOLVE;
    coap_address_init(out);
    out->size = res->ai_addrlen;
    memcpy(&out->addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

void transport_addr_name(const coap_address_t *a, char *buf, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (a->addr.sa.sa_family == AF_INET) {
        inet_ntop(AF_INET, &a->addr.sin.sin_addr, host, sizeof host);
        port = ntohs(a->addr.sin.sin_port);
        snprintf(buf, cap, "%s:%u", host, port);
    } else if (a->addr.sa.sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &a->addr.sin6.sin6_addr, host, sizeof host);
        port = ntohs(a->addr.sin6.sin6_port);
        /* v4-mapped peers of a dual-stack socket print as IPv4. */
        if (!strncmp(host, "::ffff:", 7) && strchr(host + 7, '.'))
            snprintf(buf, cap, "%s:%u", host + 7, port);
        else
            snprintf(buf, cap, "[%s]:%u", host, port);
    } else {
        snprintf(buf, cap, "?");
    }
}

/* ---- Client ---- */

static struct pending *pending_find(struct edhoc_transport *t, const uint8_t *tok, size_t len)
{
    for (size_t i = 0; i < MAX_PENDING; i++) {
        struct pending *p = &t->pending[i];
        if (p->used && p->token_len == len && !memcmp(p->token, tok, len))
            return p;
    }
    return NULL;
}

static coap_response_t on_response(coap_session_t *session, const coap_pdu_t *sent,
                                   const coap_pdu_t *received, const coap_mid_t mid)
{
    (void)sent;
    (void)mid;
    struct edhoc_transport *t = coap_get_app_data(coap_session_get_context(session));
    coap_bin_const_t tok = coap_pdu_get_token(received);
    struct pending *p = pending_find(t, tok.s, tok.length);
    if (!p)
        return COAP_RESPONSE_FAIL;
    if (coap_pdu_get_type(received) == COAP_MESSAGE_ACK && coap_pdu_get_code(received) == 0)
        return COAP_RESPONSE_OK; /* empty ACK: the response follows separately */
    struct queued *q = malloc(sizeof *q + EDHOC_TRANSPORT_MAX_MESSAGE);
    if (!q)
        return COAP_RESPONSE_OK;
    long n = transport_pdu_to_bytes(received, q->bytes, EDHOC_TRANSPORT_MAX_MESSAGE);
    if (n < 0) {
        free(q);
        p->failed = true;
        return COAP_RESPONSE_OK;
    }
    q->len = (size_t)n;
    q->next = NULL;
    if (p->tail)
        p->tail->next = q;
    else
        p->head = q;
    p->tail = q;
    return COAP_RESPONSE_OK;
}

static void on_nack(coap_session_t *session, const coap_pdu_t *sent,
                    const coap_nack_reason_t reason, const coap_mid_t mid)
{
    (void)mid;
    (void)reason;
    struct edhoc_transport *t = coap_get_app_data(coap_session_get_context(session));
    if (!sent)
        return;
    coap_bin_const_t tok = coap_pdu_get_token(sent);
    struct pending *p = pending_find(t, tok.s, tok.length);
    if (p)
        p->failed = true;
}

int edhoc_transport_client_open(struct edhoc_transport **out, const char *host, uint16_t port,
                                const struct edhoc_transport_config *cfg)
{
    if (!out || !host)
        return EDHOC_TRANSPORT_ERR_ARG;
    *out = NULL;
    coap_address_t dst;
    int rc = resolve(host, port, &dst);
    if (rc)
        return rc;
    struct edhoc_transport *t = transport_new(cfg);
    if (!t)
        return EDHOC_TRANSPORT_ERR_NOMEM;
    t->session = coap_new_client_session(t->ctx, NULL, &dst, COAP_PROTO_UDP);
    if (!t->session) {
        edhoc_transport_free(t);
        return EDHOC_TRANSPORT_ERR_SOCKET;
    }
    transport_session_tune(t, t->session);
    transport_addr_name(&dst, t->peer_name, sizeof t->peer_name);
    coap_register_response_handler(t->ctx, on_response);
    coap_register_nack_handler(t->ctx, on_nack);
    *out = t;
    return 0;
}

const char *edhoc_transport_client_peer(const struct edhoc_transport *t)
{
    return t ? t->peer_name : "";
}

coap_pdu_t *transport_pdu_from_view(coap_session_t *s, const struct view *v, coap_pdu_type_t type,
                                    const uint8_t *token, size_t token_len)
{
    coap_pdu_t *pdu =
        coap_pdu_init(type, v->code, coap_new_message_id(s), coap_session_max_pdu_size(s));
    if (!pdu)
        return NULL;
    if (!coap_add_token(pdu, token_len, token) || transport_add_options(pdu, v, false)) {
        coap_delete_pdu(pdu);
        return NULL;
    }
    return pdu;
}

/* One PDU of ours (a single block at most) to the client session. */
static int send_one(struct edhoc_transport *t, const uint8_t *msg, size_t len, bool confirmable,
                    const uint8_t *tok, size_t tl)
{
    struct view v;
    if (transport_view_parse(msg, len, &v))
        return EDHOC_TRANSPORT_ERR_MALFORMED;
    coap_pdu_t *pdu = transport_pdu_from_view(
        t->session, &v, confirmable ? COAP_MESSAGE_CON : COAP_MESSAGE_NON, tok, tl);
    if (!pdu)
        return EDHOC_TRANSPORT_ERR_SEND;
    if (v.payload_len && !coap_add_data(pdu, v.payload_len, v.payload)) {
        coap_delete_pdu(pdu);
        return EDHOC_TRANSPORT_ERR_BUFFER;
    }
    return coap_send(t->session, pdu) == COAP_INVALID_MID ? EDHOC_TRANSPORT_ERR_SEND : 0;
}

static void pending_clear(struct pending *p)
{
    struct queued *q = p->head;
    while (q) {
        struct queued *n = q->next;
        free(q);
        q = n;
    }
    free(p->req);
    edhoc_bw_collect_free(&p->collect);
    memset(p, 0, sizeof *p);
}

/* given: a token pending already (send_on); chosen: a token the caller
 * picked, not pending; neither: a fresh one from libcoap. */
static int client_send(struct edhoc_transport *t, const uint8_t *msg, size_t len, bool confirmable,
                       const uint8_t *given, size_t given_len, const uint8_t *chosen,
                       size_t chosen_len, uint8_t token[8], size_t *token_len)
{
    if (!t || !t->session || !msg)
        return EDHOC_TRANSPORT_ERR_ARG;
    struct view v;
    if (transport_view_parse(msg, len, &v))
        return EDHOC_TRANSPORT_ERR_MALFORMED;
    struct pending *p = NULL;
    uint8_t tok[8];
    size_t tl = 0;
    if (given) {
        p = pending_find(t, given, given_len);
        if (!p)
            return EDHOC_TRANSPORT_ERR_ARG;
        memcpy(tok, given, given_len);
        tl = given_len;
    } else {
        for (size_t i = 0; i < MAX_PENDING && !p; i++) {
            if (!t->pending[i].used)
                p = &t->pending[i];
        }
        if (!p)
            return EDHOC_TRANSPORT_ERR_NOMEM;
        if (chosen) {
            /* Responses are matched by token (RFC 7252 Section 5.3.2):
             * one already waiting would take the other's. */
            if (chosen_len > 8 || pending_find(t, chosen, chosen_len))
                return EDHOC_TRANSPORT_ERR_ARG;
            memcpy(tok, chosen, chosen_len);
            tl = chosen_len;
        } else {
            coap_session_new_token(t->session, &tl, tok);
            if (tl == 0)
                return EDHOC_TRANSPORT_ERR_SEND;
        }
    }
    if (tl > 8)
        return EDHOC_TRANSPORT_ERR_SEND;
    /* The whole request stays with the token: further Block1 blocks and
     * Block2 follow-ups are cut from it. */
    uint8_t *copy = malloc(len);
    if (!copy)
        return EDHOC_TRANSPORT_ERR_NOMEM;
    memcpy(copy, msg, len);
    if (given) {
        free(p->req);
        edhoc_bw_collect_free(&p->collect);
        p->collecting = false;
    } else {
        memset(p, 0, sizeof *p);
        p->used = true;
        memcpy(p->token, tok, tl);
        p->token_len = tl;
    }
    p->req = copy;
    p->req_len = len;
    p->confirmable = confirmable;
    p->sending_blocks = false;
    int rc;
    /* An OSCORE message is cut inside OSCORE (inner Block1, RFC 8613
     * Section 4.1.3.4.1); outer blocks are for proxies (4.1.3.4.2) and
     * for what cannot fit one PDU. */
    bool oscore = false;
    for (size_t i = 0; i < v.n_opts; i++)
        oscore |= v.opts[i].number == OPT_OSCORE;
    bool cut = oscore ? len + 16 > coap_session_max_pdu_size(t->session)
                      : v.payload_len > transport_block_size(t);
    if (cut) {
        /* RFC 7959 Section 2.5: the body in Block1 blocks, one at a time. */
        uint8_t blk[1400];
        p->b1_szx = (unsigned)edhoc_block_szx(transport_block_size(t));
        p->b1_num = 0;
        long n = edhoc_bw_request_block(copy, len, p->b1_szx, 0, blk, sizeof blk);
        rc = n <= 0 ? EDHOC_TRANSPORT_ERR_MALFORMED
                    : send_one(t, blk, (size_t)n, confirmable, tok, tl);
        p->sending_blocks = rc == 0;
    } else {
        rc = send_one(t, msg, len, confirmable, tok, tl);
    }
    if (rc) {
        if (!given)
            pending_clear(p);
        return rc;
    }
    if (token)
        memcpy(token, tok, tl);
    if (token_len)
        *token_len = tl;
    return 0;
}

int edhoc_transport_client_send(struct edhoc_transport *t, const uint8_t *msg, size_t len,
                                bool confirmable, uint8_t token[8], size_t *token_len)
{
    return client_send(t, msg, len, confirmable, NULL, 0, NULL, 0, token, token_len);
}

int edhoc_transport_client_send_token(struct edhoc_transport *t, const uint8_t *msg, size_t len,
                                      bool confirmable, const uint8_t *token, size_t token_len)
{
    if ((!token && token_len) || token_len > 8)
        return EDHOC_TRANSPORT_ERR_ARG;
    static const uint8_t empty[1];
    return client_send(t, msg, len, confirmable, NULL, 0, token ? token : empty, token_len, NULL,
                       NULL);
}

int edhoc_transport_client_send_on(struct edhoc_transport *t, const uint8_t *msg, size_t len,
                                   bool confirmable, const uint8_t *token, size_t token_len)
{
    if (!token || token_len > 8)
        return EDHOC_TRANSPORT_ERR_ARG;
    return client_send(t, msg, len, confirmable, token, token_len, NULL, 0, NULL, NULL);
}

/* The Block option `number` of a response, if any. */
static bool response_block(const uint8_t *msg, size_t len, uint16_t number, struct edhoc_block *b)
{
    struct view v;
    if (transport_view_parse(msg, len, &v))
        return false;
    for (size_t i = 0; i < v.n_opts; i++) {
        if (v.opts[i].number == number)
            return edhoc_block_parse(v.opts[i].value, v.opts[i].len, b) == 0;
    }
    return false;
}

/* What a response means for the block-wise transfer of p: 1 when the
 * transfer goes on (the next request went out), 0 when msg/len (possibly
 * rebuilt into *whole) is the answer, negative on an error. */
static long client_blocks(struct edhoc_transport *t, struct pending *p, const uint8_t *resp,
                          size_t len, uint8_t **whole, size_t *whole_len)
{
    uint8_t next[1400];
    struct edhoc_block b;
    uint8_t code = len >= 2 ? resp[1] : 0;
    if (p->sending_blocks) {
        if (code == COAP_RESPONSE_CODE(231) && response_block(resp, len, COAP_OPTION_BLOCK1, &b)) {
            /* RFC 7959 Section 2.3: the server may ask for smaller blocks;
             * go on from the bytes it has. */
            size_t done = (size_t)(p->b1_num + 1) * edhoc_block_size(p->b1_szx);
            unsigned szx = b.szx < p->b1_szx ? b.szx : p->b1_szx;
            if (b.num != p->b1_num)
                return EDHOC_TRANSPORT_ERR_MALFORMED;
            p->b1_szx = szx;
            p->b1_num = (uint32_t)(done / edhoc_block_size(szx));
            long n = edhoc_bw_request_block(p->req, p->req_len, szx, p->b1_num, next, sizeof next);
            if (n <= 0)
                return EDHOC_TRANSPORT_ERR_MALFORMED;
            int rc = send_one(t, next, (size_t)n, p->confirmable, p->token, p->token_len);
            return rc ? rc : 1;
        }
        p->sending_blocks = false; /* the final answer (or a refusal) */
    }
    if (!p->collecting) {
        if (!response_block(resp, len, COAP_OPTION_BLOCK2, &b) || (!b.more && b.num == 0))
            return 0;
        edhoc_bw_collect_init(&p->collect,
                              t->cfg.max_body ? t->cfg.max_body : EDHOC_BW_DEFAULT_MAX_BODY);
        p->collecting = true;
    }
    int rc = edhoc_bw_collect_add(&p->collect, resp, len);
    if (rc < 0) {
        edhoc_bw_collect_free(&p->collect);
        p->collecting = false;
        return rc == EDHOC_BW_ERR_TOO_LARGE ? EDHOC_TRANSPORT_ERR_BUFFER
                                            : EDHOC_TRANSPORT_ERR_MALFORMED;
    }
    if (rc == 1) {
        long n = edhoc_bw_request_next(p->req, p->req_len, p->collect.szx, p->collect.next_num,
                                       next, sizeof next);
        if (n <= 0)
            return EDHOC_TRANSPORT_ERR_MALFORMED;
        int sr = send_one(t, next, (size_t)n, p->confirmable, p->token, p->token_len);
        return sr ? sr : 1;
    }
    size_t cap = p->collect.len + len + 64;
    *whole = malloc(cap);
    if (!*whole)
        return EDHOC_TRANSPORT_ERR_NOMEM;
    long n = edhoc_bw_collect_message(&p->collect, resp, len, *whole, cap);
    edhoc_bw_collect_free(&p->collect);
    p->collecting = false;
    if (n < 0) {
        free(*whole);
        *whole = NULL;
        return EDHOC_TRANSPORT_ERR_MALFORMED;
    }
    *whole_len = (size_t)n;
    return 0;
}

long edhoc_transport_client_wait(struct edhoc_transport *t, const uint8_t *token, size_t token_len,
                                 uint8_t *out, size_t cap, int timeout_ms)
{
    if (!t)
        return EDHOC_TRANSPORT_ERR_ARG;
    struct pending *p = pending_find(t, token, token_len);
    if (!p)
        return EDHOC_TRANSPORT_ERR_ARG;
    coap_tick_t start, now;
    coap_ticks(&start);
    for (;;) {
        if (p->head) {
            struct queued *q = p->head;
            p->head = q->next;
            if (!p->head)
                p->tail = NULL;
            uint8_t *whole = NULL;
            size_t whole_len = 0;
            long br = client_blocks(t, p, q->bytes, q->len, &whole, &whole_len);
            if (br == 1) {
                free(q);
                continue;
            }
            const uint8_t *msg = whole ? whole : q->bytes;
            size_t len = whole ? whole_len : q->len;
            long rc = br < 0 ? br : len <= cap ? (long)len : EDHOC_TRANSPORT_ERR_BUFFER;
            if (rc > 0)
                memcpy(out, msg, len);
            free(whole);
            free(q);
            return rc;
        }
        if (p->failed)
            return EDHOC_TRANSPORT_ERR_UNREACHABLE;
        coap_ticks(&now);
        long elapsed = (long)((now - start) * 1000 / COAP_TICKS_PER_SECOND);
        if (elapsed >= timeout_ms)
            return EDHOC_TRANSPORT_ERR_TIMEOUT;
        long left = timeout_ms - elapsed;
        if (coap_io_process(t->ctx, (uint32_t)(left > 1000 ? 1000 : left)) < 0)
            return EDHOC_TRANSPORT_ERR_SOCKET;
    }
}

void edhoc_transport_client_forget(struct edhoc_transport *t, const uint8_t *token,
                                   size_t token_len)
{
    struct pending *p = t ? pending_find(t, token, token_len) : NULL;
    if (p)
        pending_clear(p);
}

long edhoc_transport_client_request(struct edhoc_transport *t, const uint8_t *msg, size_t len,
                                    uint8_t *out, size_t cap, int timeout_ms)
{
    uint8_t tok[8];
    size_t tl = 0;
    int rc = edhoc_transport_client_send(t, msg, len, true, tok, &tl);
    if (rc)
        return rc;
    long n = edhoc_transport_client_wait(t, tok, tl, out, cap, timeout_ms);
    edhoc_transport_client_forget(t, tok, tl);
    return n;
}
