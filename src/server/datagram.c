/*
 * The entry point of one request: edhoc_server_handle() routes it (POST
 * to /.well-known/edhoc, OSCORE, the RFC 9668 combined request, or
 * unprotected), and the CoAP responses every step builds.
 */
#include "server_internal.h"

long srv_build(const struct coap_msg *req, uint8_t code, int cf, const uint8_t *payload,
               size_t payload_len, uint8_t *out, size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = req->type == COAP_TYPE_CON ? COAP_TYPE_ACK : COAP_TYPE_NON;
    m.code = code;
    m.mid = req->mid;
    m.token_len = req->token_len;
    memcpy(m.token, req->token, req->token_len);
    uint8_t cfv[4];
    if (cf >= 0)
        edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cfv,
                                  edhoc_coap_uint_encode((uint32_t)cf, cfv));
    m.payload = payload_len ? payload : NULL;
    m.payload_len = payload_len;
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

/* 5.03 Service Unavailable with Max-Age: "after how many seconds to
 * retry" (RFC 7252 Section 5.9.3.4). */
long srv_service_unavailable(const struct coap_msg *req, unsigned max_age_s, uint8_t *out,
                             size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = req->type == COAP_TYPE_CON ? COAP_TYPE_ACK : COAP_TYPE_NON;
    m.code = COAP_CODE(5, 3);
    m.mid = req->mid;
    m.token_len = req->token_len;
    memcpy(m.token, req->token, req->token_len);
    uint8_t v[4];
    edhoc_coap_msg_add_option(&m, COAP_OPT_MAX_AGE, v, edhoc_coap_uint_encode(max_age_s, v));
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

/* An EDHOC error message in a 4.00 (the peer's fault) or 5.00 response. */
static long edhoc_error_response(const struct coap_msg *req, const uint8_t *err, size_t err_len,
                                 bool ours, uint8_t *out, size_t cap)
{
    return srv_build(req, ours ? COAP_CODE(5, 0) : COAP_CODE_BAD_REQUEST, EDHOC_COAP_CF_EDHOC, err,
                     err_len, out, cap);
}

/* An error code 1 with text; r (may be NULL) records it. */
long srv_edhoc_error_text_rec(const struct coap_msg *req, const char *text,
                              struct edhoc_server_handshake *r, uint8_t *out, size_t cap)
{
    uint8_t err[EDHOC_MAX_ERROR_MESSAGE];
    int n = edhoc_error_message_write(err, sizeof err, EDHOC_ERR_CODE_UNSPECIFIED, text, NULL, 0);
    if (n < 0)
        return -1;
    if (r)
        srv_hs_sent_error(r, err, (size_t)n);
    return edhoc_error_response(req, err, (size_t)n, false, out, cap);
}

static long edhoc_error_text(const struct coap_msg *req, const char *text, uint8_t *out, size_t cap)
{
    return srv_edhoc_error_text_rec(req, text, NULL, out, cap);
}

bool srv_our_fault(int err)
{
    return err == EDHOC_ERR_CRYPTO || err == EDHOC_ERR_BUFFER || err == EDHOC_ERR_CREDENTIAL;
}

/* The session failed: answer with its error message (or a generic one). */
long srv_session_error_response(struct edhoc_server *srv, const struct coap_msg *req,
                                const struct edhoc_session *s, int err, bool own_step,
                                struct edhoc_server_handshake *r, uint8_t *out, size_t cap)
{
    uint8_t msg[EDHOC_MAX_ERROR_MESSAGE];
    int n = edhoc_session_write_error(s, msg, sizeof msg);
    (void)srv;
    if (n <= 0)
        n = edhoc_error_message_write(msg, sizeof msg, EDHOC_ERR_CODE_UNSPECIFIED,
                                      edhoc_strerror(err), NULL, 0);
    if (n < 0)
        return -1;
    if (r)
        srv_hs_sent_error(r, msg, (size_t)n);
    /* 5.00 only when our own step (writing a message) failed on our side. */
    return edhoc_error_response(req, msg, (size_t)n, own_step && srv_our_fault(err), out, cap);
}

void srv_cid_hex(const uint8_t *c, size_t len, char *out, size_t cap)
{
    srv_hex(c, len, out, cap);
}

/* A message_3 (or error) whose C_R names no handshake: recorded as a
 * handshake of its own, since a device that encodes C_R differently ends
 * exactly here. */
static long unknown_c_r(struct edhoc_server *srv, const struct coap_msg *req, const char *peer,
                        const uint8_t *c_r, size_t c_r_len, bool combined, size_t m3_len,
                        uint8_t *out, size_t cap)
{
    struct edhoc_server_handshake r;
    srv_hs_init(srv, &r, ++srv->hs_next, peer, EDHOC_FRAMING_A2);
    srv->hs_current = r.id;
    /* The kid of a combined request may be longer than any C_R. */
    size_t shown = c_r_len < EDHOC_MAX_CONN_ID ? c_r_len : EDHOC_MAX_CONN_ID;
    memcpy(r.c_r, c_r, shown);
    r.c_r_len = shown;
    r.combined = combined;
    r.bytes[3] = m3_len;
    r.outcome = EDHOC_SERVER_REFUSED;
    r.step = "message_3";
    char text[80], crs[20];
    srv_cid_hex(c_r, shown, crs, sizeof crs);
    snprintf(text, sizeof text, "message_3: unknown C_R %s%s", crs,
             shown < c_r_len ? "... (longer than any C_R we give)" : "");
    r.error_text = text;
    long n = srv_edhoc_error_text_rec(req, "unknown C_R", &r, out, cap);
    r.duration_ms = srv_mono_ms() - srv->req_t0_ms;
    srv_hs_emit(srv, &r);
    return n;
}

static long on_edhoc_post(struct edhoc_server *srv, const struct coap_msg *req, const char *peer,
                          uint8_t *out, size_t cap)
{
    const uint8_t *p = req->payload;
    size_t len = req->payload_len;
    if (!p || len == 0)
        return edhoc_error_text(req, "empty EDHOC request", out, cap);
    long echo_resp = 0;
    bool bare_m1 =
        p[0] <= 3 && len >= 2 && (p[1] & 0xe0) != 0x40 && (p[1] & 0xe0) != 0x60 && p[1] != 0xf5;
    if (srv->cfg.echo_message_1 && (p[0] == 0xf5 || bare_m1) &&
        !srv_echo_ok(srv, req, peer, out, cap, &echo_resp))
        return echo_resp;
    if (srv->cfg.amp && (p[0] == 0xf5 || bare_m1) &&
        srv_pressure_holds_back_message_1(srv, req, peer, out, cap, &echo_resp))
        return echo_resp;
    if (srv->cfg.amp && (p[0] == 0xf5 || bare_m1) &&
        srv_amp_holds_back_message_1(srv, req, peer, p[0] == 0xf5 ? p + 1 : p,
                                     p[0] == 0xf5 ? len - 1 : len, out, cap, &echo_resp))
        return echo_resp;
    unsigned framings = srv->cfg.framings ? srv->cfg.framings
                                          : (1u << EDHOC_FRAMING_A2) | (1u << EDHOC_FRAMING_BARE);
    bool a2_ok = framings & (1u << EDHOC_FRAMING_A2);
    bool bare_ok = framings & (1u << EDHOC_FRAMING_BARE);
    if (p[0] == 0xf5)
        return a2_ok ? srv_on_message_1(srv, req, peer, p + 1, len - 1, EDHOC_FRAMING_A2, out, cap)
                     : srv_on_message_1(srv, req, peer, p, len, EDHOC_FRAMING_BARE, out, cap);
    /* Bare message_1 starts with METHOD (0..3) followed by SUITES_I (an int
     * or an array); a bare error message has a text string, SUITES or true
     * second. C_R never takes the values 0..3 here (srv_choose_c_r). */
    if (bare_m1 && bare_ok)
        return srv_on_message_1(srv, req, peer, p, len, EDHOC_FRAMING_BARE, out, cap);
    /* A bare message_3 (one byte string, nothing else) or bare error from
     * a peer with a bare handshake in progress. */
    struct pending *bare = bare_ok ? srv_pending_find_bare(srv, peer) : NULL;
    if (bare) {
        srv->hs_current = bare->hs_id;
        long item = edhoc_coap_bstr_item_len(p, len);
        if (item > 0 && (size_t)item == len)
            return srv_on_message_3(srv, req, bare, p, len, out, cap);
        if (srv_first_is_error(p, len))
            return srv_on_peer_error(srv, req, bare, p, len, out, cap);
    }
    uint8_t c_r[EDHOC_MAX_CONN_ID];
    size_t c_r_len = 0;
    long pre = edhoc_coap_cid_decode(p, len, c_r, &c_r_len);
    if (pre < 0)
        return edhoc_error_text(req, "cannot read the connection identifier", out, cap);
    struct pending *h = srv_pending_find(srv, c_r, c_r_len);
    if (!h) {
        char crs[20];
        srv_cid_hex(c_r, c_r_len, crs, sizeof crs);
        srv_log(srv, EDHOC_LOG_INFO, "EDHOC request from %s for unknown C_R %s", peer, crs);
        return unknown_c_r(srv, req, peer, c_r, c_r_len, false, len - (size_t)pre, out, cap);
    }
    srv->hs_current = h->hs_id;
    if (srv_first_is_error(p + pre, len - (size_t)pre)) {
        /* An error message proves nothing about its sender: only the
         * handshake's own peer ends it with one (RFC 9528 Section 6: "since
         * error messages might be forged, the receiver MAY try to continue
         * the EDHOC session"). */
        if (!srv_from_own_peer(srv, h))
            return srv_ignored_from_elsewhere(srv, req, h, "an error message",
                                              "error ignored: not from the handshake's address",
                                              out, cap);
        return srv_on_peer_error(srv, req, h, p + pre, len - (size_t)pre, out, cap);
    }
    return srv_on_message_3(srv, req, h, p + pre, len - (size_t)pre, out, cap);
}

/* RFC 9668 Section 3.3.1: message_3 first, then OSCORE with the new context. */
static long on_combined(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                        const char *peer_name, const struct coap_msg *req, uint8_t *out, size_t cap)
{
    struct oscore_option oo;
    const struct coap_option *opt = edhoc_coap_msg_find_option(req, COAP_OPT_OSCORE);
    if (!opt || oscore_option_parse(opt->value, opt->len, &oo) || !oo.has_kid || !req->payload)
        return srv_build(req, COAP_CODE_BAD_REQUEST, -1, NULL, 0, out, cap);
    long m3_len = edhoc_coap_bstr_item_len(req->payload, req->payload_len);
    if (m3_len <= 0 || (size_t)m3_len >= req->payload_len)
        return srv_build(req, COAP_CODE_BAD_REQUEST, -1, NULL, 0, out, cap);
    struct pending *h = srv_pending_find(srv, oo.kid, oo.kid_len);
    if (!h)
        return unknown_c_r(srv, req, peer_name, oo.kid, oo.kid_len, true, (size_t)m3_len, out, cap);
    srv->hs_current = h->hs_id;
    if (srv->cfg.message_4) {
        /* Refused before message_3 is even decrypted: from another address
         * that would let anyone end the handshake of a C_R it names. */
        if (!srv_from_own_peer(srv, h))
            return srv_ignored_from_elsewhere(srv, req, h,
                                              "a combined request (RFC 9668) while message_4 is "
                                              "required",
                                              "combined request ignored: not from the handshake's "
                                              "address",
                                              out, cap);
        /* message_4 cannot travel in the combined flow (RFC 9668 step 4). */
        srv->st.handshakes_failed++;
        srv_log_done(srv, h, (size_t)m3_len, "failed",
                     "combined request but message_4 is required");
        struct edhoc_server_handshake rec;
        srv_hs_from_pending(srv, h, &rec);
        rec.combined = true;
        rec.bytes[3] = (size_t)m3_len;
        long resp = srv_edhoc_error_text_rec(req, "message_4 required", &rec, out, cap);
        rec.outcome = EDHOC_SERVER_REFUSED;
        rec.step = "message_3";
        rec.error_text = "combined request (RFC 9668), but message_4 required";
        srv_hs_emit(srv, &rec);
        srv_pending_free(srv, h);
        return resp;
    }
    struct peer_ctx *ctx = NULL;
    long r = srv_run_message_3(srv, req, h, req->payload, (size_t)m3_len, true, &ctx, out, cap);
    if (r)
        return r;
    srv->st.handshakes_ok++;
    srv_log_done(srv, h, (size_t)m3_len, "ok",
                 edhoc_session_tolerated(&h->s) ? srv_tolerated_text(h) : "combined request");
    srv_hs_ok(srv, h, ctx, (size_t)m3_len, 0, true);
    srv_pending_free(srv, h);

    /* The OSCORE request without the EDHOC option and message_3. */
    struct coap_msg m = *req;
    size_t w = 0;
    for (size_t i = 0; i < m.option_count; i++) {
        if (m.options[i].number != EDHOC_COAP_OPTION_EDHOC)
            m.options[w++] = m.options[i];
    }
    m.option_count = w;
    m.payload = req->payload + m3_len;
    m.payload_len = req->payload_len - (size_t)m3_len;
    uint8_t *plain = malloc(EDHOC_SERVER_MAX_MESSAGE);
    if (!plain)
        return -1;
    long n = edhoc_coap_msg_encode(&m, plain, EDHOC_SERVER_MAX_MESSAGE);
    long resp = n < 0 ? srv_build(req, COAP_CODE_BAD_REQUEST, -1, NULL, 0, out, cap)
                      : srv_on_oscore(srv, peer, peer_name, ctx, plain, (size_t)n, out, cap);
    free(plain);
    return resp;
}

static long handle(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                   const char *peer_name, const uint8_t *req, size_t len, uint8_t *out, size_t cap);

long edhoc_server_handle(void *user, struct edhoc_transport_peer *peer, const char *peer_name,
                         const uint8_t *req, size_t len, uint8_t *out, size_t cap)
{
    struct edhoc_server *srv = user;
    srv->hs_current = 0;
    srv->hs_peer = peer_name;
    if (srv->cfg.record)
        srv->req_t0_ms = srv_mono_ms();
    long n = handle(srv, peer, peer_name, req, len, out, cap);
    srv->hs_current = 0;
    srv->hs_peer = NULL;
    return n;
}

static long handle(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                   const char *peer_name, const uint8_t *req, size_t len, uint8_t *out, size_t cap)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(req, len, &m))
        return 0;
    if (!edhoc_coap_code_is_request(m.code))
        return 0;
    srv_amp_take_echo(srv, &m, peer_name);
    const struct coap_option *osc = edhoc_coap_msg_find_option(&m, COAP_OPT_OSCORE);
    if (osc) {
        if (edhoc_coap_msg_find_option(&m, EDHOC_COAP_OPTION_EDHOC))
            return on_combined(srv, peer, peer_name, &m, out, cap);
        struct oscore_option oo;
        if (oscore_option_parse(osc->value, osc->len, &oo) || !oo.has_kid) {
            srv->st.oscore_errors++;
            struct first_request *f = srv_first_request_find(srv, NULL, peer_name);
            if (f)
                srv_first_request_report(srv, f, OSCORE_ERR_BAD_OPTION,
                                         "the OSCORE option is malformed or carries no kid (the "
                                         "device's Sender ID = our C_R must be sent as kid)");
            return srv_oscore_error(OSCORE_ERR_BAD_OPTION, req, len, out, cap);
        }
        struct b2_entry *b2 = srv->n_b2 ? srv_b2_find(srv, oo.kid, oo.kid_len) : NULL;
        if (b2)
            return srv_on_b2_request(srv, b2, peer, peer_name, &oo, req, len, out, cap);
        struct peer_ctx *ctx;
        struct oscore_binding b;
        srv->store_unavailable = false;
        long n = srv_unprotect_request(srv, &oo, req, len, &ctx, &b);
        if (!ctx && srv->store_unavailable) {
            /* Not "Security context not found": the store that may hold
             * it did not answer, and a new handshake would fail too. */
            srv->store_unavailable = false;
            struct coap_msg m;
            if (edhoc_coap_msg_parse(req, len, &m))
                return -1;
            srv_log(srv, EDHOC_LOG_INFO,
                    "OSCORE peer=%s: the context store is out of reach; 5.03 with Max-Age %u",
                    peer_name, SRV_STORE_RETRY_S);
            return srv_service_unavailable(&m, SRV_STORE_RETRY_S, out, cap);
        }
        if (!ctx) {
            srv->st.oscore_errors++;
            srv_log(srv, EDHOC_LOG_INFO, "OSCORE peer=%s: no context for this %s", peer_name,
                    oo.has_kid_context ? "kid context and kid" : "kid");
            struct first_request *f = srv_first_request_find(srv, NULL, peer_name);
            if (f) {
                char kid[20], ours[20], text[300];
                srv_hex(oo.kid, oo.kid_len, kid, sizeof kid);
                srv_hex(f->key.rid, f->key.rid_len, ours, sizeof ours);
                snprintf(text, sizeof text,
                         "no OSCORE context for kid %s: the handshake's is %s (our Recipient ID = "
                         "C_R); check the device's Sender ID (= C_R, RFC 9528 A.1) and how it "
                         "encodes C_R",
                         kid, ours);
                srv_first_request_report(srv, f, OSCORE_ERR_CONTEXT_NOT_FOUND, text);
            }
            return srv_oscore_error(OSCORE_ERR_CONTEXT_NOT_FOUND, req, len, out, cap);
        }
        return srv_on_unprotected(srv, peer, peer_name, ctx, n, &b, req, len, out, cap);
    }
    srv->st.plain_requests++;
    if (edhoc_coap_msg_find_option(&m, EDHOC_COAP_OPTION_EDHOC))
        return srv_build(&m, COAP_CODE_BAD_REQUEST, -1, NULL, 0, out,
                         cap); /* RFC 9668 3.3.1 step 1 */
    if (srv_path_is(&m, EDHOC_COAP_WELL_KNOWN)) {
        if (m.code != COAP_CODE_POST)
            return srv_build(&m, COAP_CODE(4, 5), -1, NULL, 0, out, cap);
        return on_edhoc_post(srv, &m, peer_name, out, cap);
    }
    if (srv_protected_path(&m)) {
        if (!srv->cfg.serve_unprotected)
            return srv_build(&m, COAP_CODE_UNAUTHORIZED, -1, NULL, 0, out, cap);
        struct plain_resp r;
        srv_resource(srv, &m, &r);
        return srv_inner_response(&m, &r, out, cap);
    }
    return srv_build(&m, COAP_CODE(4, 4), -1, NULL, 0, out, cap);
}
