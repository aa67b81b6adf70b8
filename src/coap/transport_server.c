/*
 * The server side of the libcoap transport: the request handler that
 * hands whole messages to the engine (edhoc_server_handle), answers from
 * the deduplication cache, the amplification gate on every answer, the
 * listening endpoints and sending to a held peer.
 */
#include "transport_internal.h"

/* The answer as one PDU: our engine has cut bodies to blocks already, so
 * a payload that does not fit is a bug to report, never to drop. */
static void respond(coap_session_t *session, coap_pdu_t *response, const uint8_t *bytes, size_t len)
{
    struct view v;
    if (len > coap_session_max_pdu_size(session) || transport_view_parse(bytes, len, &v)) {
        coap_pdu_set_code(response, COAP_RESPONSE_CODE_INTERNAL_ERROR);
        return;
    }
    coap_pdu_set_code(response, (coap_pdu_code_t)v.code);
    if (transport_add_options(response, &v, false) ||
        (v.payload_len && !coap_add_data(response, v.payload_len, v.payload)))
        coap_pdu_set_code(response, COAP_RESPONSE_CODE_INTERNAL_ERROR);
}

/* ---- The amplification limit (edhoc/amplification.h) ----
 * Every answer the server sends to a request passes here, whoever wrote
 * it: the engine, the block-wise engine (a Block2 follow-up) or the
 * retransmission cache. Bytes are CoAP message bytes, the UDP payload. */

/* Room for the 4.01 with Echo that replaces an answer held back. */
#define AMP_ALT_CAP 128

/* The answer to send for `answer` (len bytes, to the request req): itself
 * when the endpoint's budget covers it, else what the `limited` callback
 * writes into alt when that fits (*len updated), else NULL: nothing. */
static const uint8_t *amp_gate(struct edhoc_transport *t, const char *name, const uint8_t *req,
                               size_t req_len, const uint8_t *answer, size_t *len, uint8_t *alt)
{
    struct edhoc_amp *a = t->cfg.amp;
    if (!a)
        return answer;
    size_t budget = edhoc_amp_budget(a, name);
    if (*len <= budget) {
        edhoc_amp_sent(a, name, *len);
        return answer;
    }
    long n = t->cfg.limited
                 ? t->cfg.limited(t->user, name, req, req_len, *len, budget, alt, AMP_ALT_CAP)
                 : 0;
    if (n <= 0 && *len <= edhoc_amp_budget(a, name)) {
        /* The request carried the Echo value of an earlier challenge: the
         * endpoint is verified now. */
        edhoc_amp_sent(a, name, *len);
        return answer;
    }
    /* RFC 9175 Section 2.4 item 3: "don't send more than three times the
     * number of bytes received until the peer's address is confirmed" --
     * the 4.01 too: when even it does not fit (a tiny request), nothing. */
    bool fits = n > 0 && (size_t)n <= budget;
    edhoc_amp_note_limited(a, !fits);
    if (!fits)
        return NULL;
    edhoc_amp_sent(a, name, (size_t)n);
    *len = (size_t)n;
    return alt;
}

/* An answer of a code alone (header and token), or the empty ACK a
 * confirmable request gets when nothing else is sent: never more than the
 * request itself, counted all the same. */
static void amp_count_bare(struct edhoc_transport *t, const char *name, const coap_pdu_t *request,
                           bool with_token)
{
    if (t->cfg.amp)
        edhoc_amp_sent(t->cfg.amp, name, 4 + (with_token ? coap_pdu_get_token(request).length : 0));
}

static void respond_code(struct edhoc_transport *t, const char *name, const coap_pdu_t *request,
                         coap_pdu_t *response, coap_pdu_code_t code)
{
    coap_pdu_set_code(response, code);
    amp_count_bare(t, name, request, true);
}

/* Send answer through the limit. */
static void respond_limited(struct edhoc_transport *t, coap_session_t *session,
                            const coap_pdu_t *request, coap_pdu_t *response, const char *name,
                            const uint8_t *req, size_t req_len, const uint8_t *answer, size_t len,
                            struct dedup *d)
{
    uint8_t alt[AMP_ALT_CAP];
    const uint8_t *out = amp_gate(t, name, req, req_len, answer, &len, alt);
    if (!out) {
        if (coap_pdu_get_type(request) == COAP_MESSAGE_CON)
            amp_count_bare(t, name, request, false);
        return;
    }
    if (d && !d->len && len <= DEDUP_MAX_BYTES && (d->bytes = malloc(len))) {
        memcpy(d->bytes, out, len);
        d->len = len;
    }
    respond(session, response, out, len);
}

static bool has_option(const uint8_t *msg, size_t len, uint16_t number)
{
    struct view v;
    if (transport_view_parse(msg, len, &v))
        return false;
    for (size_t i = 0; i < v.n_opts; i++) {
        if (v.opts[i].number == number)
            return true;
    }
    return false;
}

uint64_t transport_now_ms(void)
{
    coap_tick_t now;
    coap_ticks(&now);
    return (uint64_t)now * 1000 / COAP_TICKS_PER_SECOND;
}

/* FNV-1a of a request's bytes: told apart from another message, not
 * from an adversary (one that forges a colliding request from the peer's
 * address gets the answer the peer got already). */
static uint64_t request_hash(const uint8_t *b, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void on_request(coap_resource_t *resource, coap_session_t *session,
                       const coap_pdu_t *request, const coap_string_t *query, coap_pdu_t *response)
{
    (void)resource;
    (void)query;
    struct edhoc_transport *t = coap_get_app_data(coap_session_get_context(session));
    long n = transport_pdu_to_bytes(request, t->scratch, EDHOC_TRANSPORT_MAX_MESSAGE);
    if (n < 0) {
        coap_pdu_set_code(response, COAP_RESPONSE_CODE_REQUEST_TOO_LARGE);
        return;
    }
    char name[80];
    transport_addr_name(coap_session_get_addr_remote(session), name, sizeof name);
    /* Every request datagram adds to its endpoint's budget, a
     * retransmission too (it is answered, or repeated, below). */
    if (t->cfg.amp)
        edhoc_amp_received(t->cfg.amp, name, (size_t)n);
    struct dedup *d = NULL;
    bool con = coap_pdu_get_type(request) == COAP_MESSAGE_CON;
    if (con && t->dedup && coap_pdu_get_mid(request) >= 0) {
        uint16_t mid = (uint16_t)coap_pdu_get_mid(request);
        uint32_t h = mid * 2654435761u;
        for (const char *c = name; *c; c++)
            h = (h ^ (uint8_t)*c) * 16777619u;
        d = &t->dedup[h % DEDUP_SLOTS];
        coap_tick_t now;
        coap_ticks(&now);
        /* RFC 7252 Section 4.5: "each duplicate copy of a Confirmable
         * message" gets the same answer. A copy is the same message: the
         * same Message ID from the same endpoint with other bytes (another
         * token, another request) is a new message from a sender that
         * reused the ID -- a new client process on a recycled port does,
         * not knowing its predecessor's IDs (Section 4.4 forbids it within
         * EXCHANGE_LIFETIME) -- and answering it with the cached answer
         * would hand it another request's response. */
        uint64_t rh = request_hash(t->scratch, (size_t)n);
        if (d->len && d->mid == mid && !strcmp(d->peer, name) && d->req_len == (size_t)n &&
            d->req_hash == rh &&
            now - d->when < (coap_tick_t)DEDUP_SECONDS * COAP_TICKS_PER_SECOND) {
            respond_limited(t, session, request, response, name, t->scratch, (size_t)n, d->bytes,
                            d->len, NULL);
            return;
        }
        free(d->bytes);
        memset(d, 0, sizeof *d);
        snprintf(d->peer, sizeof d->peer, "%s", name);
        d->mid = mid;
        d->req_hash = rh;
        d->req_len = (size_t)n;
        d->when = now;
    }
    uint64_t ms = transport_now_ms();
    uint8_t *whole = NULL;
    size_t whole_len = 0, out_len = 0;
    const uint8_t *answer = t->blk;
    int verdict = edhoc_bw_server_request(t->bw, name, t->scratch, (size_t)n, ms, &whole,
                                          &whole_len, t->blk, t->resp_cap, &out_len);
    if (verdict < 0) {
        respond_code(t, name, request, response, COAP_RESPONSE_CODE_INTERNAL_ERROR);
        return;
    }
    if (verdict != EDHOC_BW_REPLY) {
        const uint8_t *req = verdict == EDHOC_BW_WHOLE ? whole : t->scratch;
        size_t req_len = verdict == EDHOC_BW_WHOLE ? whole_len : (size_t)n;
        long r = t->fn(t->user, (struct edhoc_transport_peer *)session, name, req, req_len, t->resp,
                       t->resp_cap);
        if (r <= 0) {
            free(whole);
            if (r < 0)
                respond_code(t, name, request, response, COAP_RESPONSE_CODE_INTERNAL_ERROR);
            else if (con)
                amp_count_bare(t, name, request, false);
            return;
        }
        /* An OSCORE response is cut inside OSCORE (inner Block2, RFC 8613
         * Section 4.1.3.4.1): outside, only what cannot fit one PDU is, or
         * when it answers a body a proxy sent in outer Block1 blocks. */
        bool osc_fits = has_option(t->resp, (size_t)r, OPT_OSCORE) &&
                        (size_t)r + 16 <= coap_session_max_pdu_size(session);
        long w;
        if (osc_fits && verdict != EDHOC_BW_WHOLE) {
            memcpy(t->blk, t->resp, (size_t)r);
            w = r;
        } else {
            w = edhoc_bw_server_response(t->bw, name, req, req_len, t->resp, (size_t)r,
                                         osc_fits ? 1024 : transport_block_size(t), ms, t->blk,
                                         t->resp_cap);
        }
        free(whole);
        if (w < 0) {
            respond_code(t, name, request, response, COAP_RESPONSE_CODE_INTERNAL_ERROR);
            return;
        }
        out_len = (size_t)w;
    }
    respond_limited(t, session, request, response, name, t->scratch, (size_t)n, answer, out_len, d);
}

static void on_server_nack(coap_session_t *session, const coap_pdu_t *sent,
                           const coap_nack_reason_t reason, const coap_mid_t mid)
{
    (void)mid;
    (void)reason;
    struct edhoc_transport *t = coap_get_app_data(coap_session_get_context(session));
    if (!sent || !t->on_failure)
        return;
    coap_bin_const_t tok = coap_pdu_get_token(sent);
    t->on_failure(t->failure_user, (struct edhoc_transport_peer *)session, tok.s, tok.length);
}

void edhoc_transport_server_on_failure(struct edhoc_transport *t, edhoc_transport_failure_fn fn,
                                       void *user)
{
    if (!t)
        return;
    t->on_failure = fn;
    t->failure_user = user;
}

static int on_event(coap_session_t *session, const coap_event_t event)
{
    if (event == COAP_EVENT_SERVER_SESSION_NEW) {
        struct edhoc_transport *t = coap_get_app_data(coap_session_get_context(session));
        transport_session_tune(t, session);
    }
    return 0;
}

static int parse_listen(const char *spec, coap_address_t *a)
{
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec)
        return EDHOC_TRANSPORT_ERR_ARG;
    char host[128];
    size_t hl = (size_t)(colon - spec);
    if (hl >= sizeof host)
        return EDHOC_TRANSPORT_ERR_ARG;
    memcpy(host, spec, hl);
    host[hl] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || port < 0 || port > 65535)
        return EDHOC_TRANSPORT_ERR_ARG;
    if (host[0] != '[' && strchr(host, ':'))
        return EDHOC_TRANSPORT_ERR_ARG; /* bare IPv6 needs brackets to carry a port */
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
    char name[128];
    if (host[0] == '[') {
        if (hl < 3 || host[hl - 1] != ']')
            return EDHOC_TRANSPORT_ERR_ARG;
        memcpy(name, host + 1, hl - 2);
        name[hl - 2] = '\0';
    } else {
        memcpy(name, host, hl + 1);
    }
    char ps[8];
    snprintf(ps, sizeof ps, "%ld", port);
    if (getaddrinfo(name, ps, &hints, &res) != 0 || !res)
        return EDHOC_TRANSPORT_ERR_ARG;
    coap_address_init(a);
    a->size = res->ai_addrlen;
    memcpy(&a->addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

int edhoc_transport_server_open(struct edhoc_transport **out, const char *const *listen,
                                size_t n_listen, const struct edhoc_transport_config *cfg,
                                edhoc_transport_request_fn fn, void *user, char *why,
                                size_t why_cap)
{
    if (!out || !fn || n_listen == 0 || n_listen > MAX_LISTEN)
        return EDHOC_TRANSPORT_ERR_ARG;
    *out = NULL;
    struct edhoc_transport *t = transport_new(cfg);
    if (!t)
        return EDHOC_TRANSPORT_ERR_NOMEM;
    t->fn = fn;
    t->user = user;
    /* A whole response holds a body up to max_body (the engine cuts it). */
    size_t max_body = t->cfg.max_body ? t->cfg.max_body : EDHOC_BW_DEFAULT_MAX_BODY;
    t->resp_cap = max_body + EDHOC_TRANSPORT_MAX_MESSAGE;
    struct edhoc_bw_limits limits = {.max_body = max_body,
                                     .lifetime_ms = t->cfg.transfer_lifetime_ms};
    t->scratch = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    t->resp = malloc(t->resp_cap);
    t->blk = malloc(t->resp_cap);
    t->bw = edhoc_bw_server_new(&limits);
    t->dedup = calloc(DEDUP_SLOTS, sizeof *t->dedup);
    if (!t->scratch || !t->resp || !t->blk || !t->bw || !t->dedup) {
        edhoc_transport_free(t);
        return EDHOC_TRANSPORT_ERR_NOMEM;
    }
    transport_io_reuseport(t->cfg.workers > 1 ? t->cfg.workers : 0, t->cfg.worker_index);
    for (size_t i = 0; i < n_listen; i++) {
        coap_address_t a;
        if (parse_listen(listen[i], &a)) {
            transport_io_reuseport(0, 0);
            if (why)
                snprintf(why, why_cap, "--listen %s: expected ADDR:PORT (IPv6 in brackets)",
                         listen[i]);
            edhoc_transport_free(t);
            return EDHOC_TRANSPORT_ERR_ARG;
        }
        int before = transport_io_mark_sockets();
        if (!coap_new_endpoint(t->ctx, &a, COAP_PROTO_UDP)) {
            transport_io_reuseport(0, 0);
            if (why)
                snprintf(why, why_cap, "cannot listen on %s: %s", listen[i],
                         errno ? strerror(errno) : "bind failed");
            edhoc_transport_free(t);
            return EDHOC_TRANSPORT_ERR_SOCKET;
        }
        t->ports[t->n_ports++] = transport_io_new_socket_port(before);
    }
    int rp_err = transport_io_reuseport_error();
    transport_io_reuseport(0, 0);
    if (rp_err) {
        /* Without the option the workers could not share the port; without
         * the program OSCORE requests would reach workers without their
         * context. */
        if (why)
            snprintf(why, why_cap,
                     "cannot share the listen port among %u workers "
                     "(SO_REUSEPORT / SO_ATTACH_REUSEPORT_CBPF): %s",
                     t->cfg.workers, strerror(rp_err));
        edhoc_transport_free(t);
        return EDHOC_TRANSPORT_ERR_SOCKET;
    }
    /* Every new source address and port costs libcoap a session: bound
     * how many may sit idle and for how long. */
    /* libcoap 4.3.1 walks every session of the context on each pass of its
     * loop (coap_io_prepare_io), so the idle sessions a flood of sources
     * leaves behind cost every datagram: 4096 made a legitimate peer's p99
     * 380 times its unloaded value under a 20,000-source flood, 512 about
     * 2.4 times (issue #15 figures). Our own state (handshakes, contexts,
     * transfers, the address account) does not live in libcoap sessions. */
    coap_context_set_max_idle_sessions(t->ctx, t->cfg.max_sessions ? t->cfg.max_sessions : 512);
    coap_context_set_session_timeout(t->ctx, t->cfg.session_idle_s ? t->cfg.session_idle_s : 30);
    coap_register_event_handler(t->ctx, on_event);
    coap_register_nack_handler(t->ctx, on_server_nack);
    static const coap_request_t methods[] = {
        COAP_REQUEST_GET,   COAP_REQUEST_POST,  COAP_REQUEST_PUT,   COAP_REQUEST_DELETE,
        COAP_REQUEST_FETCH, COAP_REQUEST_PATCH, COAP_REQUEST_IPATCH};
    /* libcoap answers GET /.well-known/core itself unless it is a resource. */
    coap_resource_t *wk = coap_resource_init(coap_make_str_const(".well-known/core"), 0);
    coap_resource_t *unknown = coap_resource_unknown_init2(on_request, 0);
    coap_resource_t *root = coap_resource_init(coap_make_str_const(""), 0);
    if (!wk || !unknown || !root) {
        edhoc_transport_free(t);
        return EDHOC_TRANSPORT_ERR_NOMEM;
    }
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        coap_register_handler(wk, methods[i], on_request);
        coap_register_handler(unknown, methods[i], on_request);
        coap_register_handler(root, methods[i], on_request);
    }
    coap_add_resource(t->ctx, wk);
    coap_add_resource(t->ctx, unknown);
    coap_add_resource(t->ctx, root);
    *out = t;
    return 0;
}

uint16_t edhoc_transport_server_port(const struct edhoc_transport *t, size_t i)
{
    return t && i < t->n_ports ? t->ports[i] : 0;
}

struct edhoc_transport_peer *edhoc_transport_peer_hold(struct edhoc_transport_peer *p)
{
    if (p)
        coap_session_reference((coap_session_t *)p);
    return p;
}

void edhoc_transport_peer_release(struct edhoc_transport_peer *p)
{
    if (p)
        coap_session_release((coap_session_t *)p);
}

int edhoc_transport_peer_send(struct edhoc_transport *t, struct edhoc_transport_peer *p,
                              const uint8_t *msg, size_t len, bool confirmable)
{
    if (!t || !p || !msg)
        return EDHOC_TRANSPORT_ERR_ARG;
    coap_session_t *s = (coap_session_t *)p;
    struct view v;
    if (transport_view_parse(msg, len, &v))
        return EDHOC_TRANSPORT_ERR_MALFORMED;
    coap_pdu_t *pdu = transport_pdu_from_view(
        s, &v, confirmable ? COAP_MESSAGE_CON : COAP_MESSAGE_NON, v.token, v.token_len);
    if (!pdu)
        return EDHOC_TRANSPORT_ERR_SEND;
    if (t->cfg.workers > 1) {
        /* The peer's empty ACK or Reset to this message is steered by its
         * Message ID (edhoc/reuseport.h): take the next of the session's
         * IDs that names this worker (within 2N draws, a wrap included). */
        uint16_t mid = (uint16_t)coap_pdu_get_mid(pdu);
        for (unsigned k = 0; k < 2 * t->cfg.workers &&
                             edhoc_reuseport_mid_owner(mid, t->cfg.workers) != t->cfg.worker_index;
             k++)
            mid = coap_new_message_id(s);
        coap_pdu_set_mid(pdu, mid);
    }
    if (v.payload_len && !coap_add_data(pdu, v.payload_len, v.payload)) {
        coap_delete_pdu(pdu);
        return EDHOC_TRANSPORT_ERR_SEND;
    }
    return coap_send(s, pdu) == COAP_INVALID_MID ? EDHOC_TRANSPORT_ERR_SEND : 0;
}
