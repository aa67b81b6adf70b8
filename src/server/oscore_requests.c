/*
 * OSCORE-protected requests: finding the context, unprotecting,
 * answering through the resources, protecting the response, and the
 * errors of RFC 8613 Section 8.2.
 */
#include "server_internal.h"

long srv_oscore_error(int err, const uint8_t *req, size_t len, uint8_t *out, size_t cap)
{
    long n = oscore_error_response(err, req, len, out, cap);
    if (n < 0) {
        struct coap_msg m;
        if (edhoc_coap_msg_parse(req, len, &m))
            return -1;
        /* A message above what this side processes is 4.13 (RFC 7252
         * 5.9.2.9); running out of memory is 5.03, worth a retry. */
        uint8_t code = err == OSCORE_ERR_TOO_LARGE ? COAP_CODE(4, 13)
                       : err == OSCORE_ERR_NOMEM   ? COAP_CODE(5, 3)
                                                   : COAP_CODE(5, 0);
        return srv_build(&m, code, -1, NULL, 0, out, cap);
    }
    return n;
}

/* Unprotect a request with the context its OSCORE option names (RFC 8613
 * Section 8.2 step 2: the Recipient ID in 'kid', "additionally using the
 * 'kid context', if present"). With a 'kid context', only the context of
 * that ID Context and kid. Without one, every context with that kid:
 * Section 3.3 lets several Recipient Contexts share a Recipient ID, and
 * then "the endpoint may need to try multiple times". The first that
 * verifies is taken. A candidate moves on to the next only when it cannot
 * tell whether the request is its own: the AEAD failed, or its replay
 * window (checked before the AEAD) holds the Partial IV; any other answer
 * is about a request the candidate verified, or about the message itself.
 * Windows change only when a request is accepted, so the candidates
 * tried first are left as they were. *ctx: the context the answer belongs
 * to (NULL: none has that kid, or that kid context and kid); when none
 * verified, the first that saw a replay, else the first tried. */
/* A context another responder of the fleet took over (the store's
 * notice): dropped before this responder accepts another request under
 * it. */
static void ctx_taken_elsewhere(void *user, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                                size_t rid_len)
{
    struct edhoc_server *srv = user;
    struct ctx_key key;
    srv_key_set(&key, idc, idc_len, rid, rid_len);
    struct peer_ctx *p = srv_ctx_find(srv, &key);
    if (!p || p->is_static)
        return;
    char kid[2 * OSCORE_MAX_ID + 1];
    srv_hex(rid, rid_len, kid, sizeof kid);
    srv_ctx_remove(srv, &key);
    srv->st.contexts_taken_over++;
    srv_log(srv, EDHOC_LOG_NOTICE,
            "OSCORE: context kid=%s taken over by another responder of the fleet (the store's "
            "notice): our copy dropped before it accepts another request",
            kid);
}

/* On a fleet's store: the takeovers the store announced since the last
 * request, applied before this one is looked at. Without them, a request
 * the new owner accepted, replayed here, met a replay window that never
 * saw it and was processed a second time (RFC 8613 Section 7.4). With the
 * store out of reach, contexts in memory go on (and nobody can take one
 * over); it is asked again once Max-Age has passed. */
void srv_apply_takeovers(struct edhoc_server *srv)
{
    if (srv->store_down && srv_mono_ms() < srv->store_probe_ms)
        return;
    int rc = edhoc_state_takeovers(srv->cfg.db, ctx_taken_elsewhere, srv);
    srv_store_outcome(srv, rc < 0 ? rc : 0, "listening for takeovers", false);
}

long srv_unprotect_request(struct edhoc_server *srv, const struct oscore_option *oo,
                           const uint8_t *req, size_t len, struct peer_ctx **ctx,
                           struct oscore_binding *b)
{
    *ctx = NULL;
    srv->fetched_for_request = NULL;
    if (oo->kid_len > OSCORE_MAX_ID)
        return OSCORE_ERR_CONTEXT_NOT_FOUND;
    bool shared = edhoc_state_is_shared(srv->cfg.db);
    if (shared)
        srv_apply_takeovers(srv);
    if (oo->has_kid_context) {
        if (oo->kid_context_len > OSCORE_MAX_ID_CONTEXT)
            return OSCORE_ERR_CONTEXT_NOT_FOUND;
        struct ctx_key key;
        srv_key_set(&key, oo->kid_context, oo->kid_context_len, oo->kid, oo->kid_len);
        *ctx = srv_ctx_find(srv, &key);
        if (!*ctx && shared)
            *ctx = srv->fetched_for_request = srv_ctx_fetch(srv, &key);
        if (!*ctx)
            return OSCORE_ERR_CONTEXT_NOT_FOUND;
        long n = oscore_unprotect_request(&(*ctx)->osc, req, len, srv->inner, srv->inner_cap, b);
        srv_ctx_verified(srv, *ctx, n);
        if (srv->fetched_for_request)
            srv_ctx_fetched_verdict(srv, *ctx, n);
        return n;
    }
    long verdict = OSCORE_ERR_CONTEXT_NOT_FOUND;
    uint64_t hash = srv_rid_hash(srv, oo->kid, oo->kid_len);
    for (uint32_t i = edhoc_itab_first(&srv->contexts, hash); i != EDHOC_NONE;
         i = edhoc_itab_next(&srv->contexts, i)) {
        struct peer_ctx *p = srv_ctx_at(srv, i);
        if (!srv_key_rid_is(&p->key, oo->kid, oo->kid_len))
            continue;
        long n = oscore_unprotect_request(&p->osc, req, len, srv->inner, srv->inner_cap, b);
        if (n != OSCORE_ERR_DECRYPT && n != OSCORE_ERR_REPLAY) {
            *ctx = p;
            srv_ctx_verified(srv, p, n);
            return n;
        }
        if (!*ctx || (n == OSCORE_ERR_REPLAY && verdict != OSCORE_ERR_REPLAY)) {
            *ctx = p;
            verdict = n;
        }
    }
    if (!*ctx && shared) {
        /* None in memory: the fleet's store may have it, established with
         * another responder (an EDHOC-derived context has no ID Context,
         * RFC 9528 Appendix A.1). */
        struct ctx_key key;
        srv_key_set(&key, NULL, 0, oo->kid, oo->kid_len);
        struct peer_ctx *p = srv->fetched_for_request = srv_ctx_fetch(srv, &key);
        if (p) {
            long n = oscore_unprotect_request(&p->osc, req, len, srv->inner, srv->inner_cap, b);
            *ctx = p;
            srv_ctx_verified(srv, p, n);
            srv_ctx_fetched_verdict(srv, p, n);
            return n;
        }
    }
    return verdict;
}

static long answer_inner(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                         const char *peer_name, struct peer_ctx *ctx, struct oscore_binding *b,
                         struct coap_msg *inp, const uint8_t *inner_req, size_t inner_req_len,
                         const char *bw_peer, const uint8_t *req, size_t len, uint8_t *out,
                         size_t cap);

/* A response (what) that could not be protected with result err: the
 * unprotected error answer, and the cause in the log. When the mark its
 * Partial IV needed could not be stored (OSCORE_ERR_PERSIST), no protected
 * message may go (RFC 8613 Appendix B.1.1: a number is used only once a
 * mark above it is stored), but nothing was wrong with the request: 5.03
 * with Max-Age, "the number of seconds after which to retry" (RFC 7252
 * Section 5.9.3.4), instead of an error that blames the request. */
static long not_protected(struct edhoc_server *srv, const char *peer_name, const char *what,
                          long err, const uint8_t *req, size_t len, uint8_t *out, size_t cap)
{
    srv->st.oscore_errors++;
    struct coap_msg m;
    if (err == OSCORE_ERR_PERSIST && srv->store_err == EDHOC_STATE_ERR_TAKEN_OVER &&
        !edhoc_coap_msg_parse(req, len, &m)) {
        /* Another responder of the fleet took the context over: its block
         * of sequence numbers starts above every one ours reserved, so
         * nothing of ours may be sent under it any more. Drop our copy;
         * Max-Age 0: retry at once, wherever the balancer sends it (here,
         * the store gives the context back by the same takeover). */
        srv_ctx_remove(srv, &srv->taken_over);
        srv->st.contexts_taken_over++;
        srv_log(srv, EDHOC_LOG_NOTICE,
                "OSCORE peer=%s: %s not sent: another responder of the fleet serves this context "
                "now; our copy dropped, answered 5.03 with Max-Age 0",
                peer_name, what);
        return srv_service_unavailable(&m, 0, out, cap);
    }
    if (err == OSCORE_ERR_PERSIST && !edhoc_coap_msg_parse(req, len, &m)) {
        srv_log(srv, EDHOC_LOG_ERR,
                "OSCORE peer=%s: %s not sent: the sequence-number mark its Partial IV needs "
                "cannot be stored (%s); answered 5.03 with Max-Age %u",
                peer_name, what,
                srv->store_err ? edhoc_state_strerror(srv->store_err) : oscore_strerror((int)err),
                SRV_STORE_RETRY_S);
        return srv_service_unavailable(&m, SRV_STORE_RETRY_S, out, cap);
    }
    srv_log(srv, EDHOC_LOG_ERR, "OSCORE peer=%s: cannot protect %s: %s", peer_name, what,
            oscore_strerror((int)err));
    if (edhoc_coap_msg_parse(req, len, &m))
        return -1;
    return srv_build(&m, COAP_CODE(5, 0), -1, NULL, 0, out, cap);
}

/* The answer to an OSCORE request that ctx unprotected with result n
 * (the inner request in srv->inner when n > 0). */
long srv_on_unprotected(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                        const char *peer_name, struct peer_ctx *ctx, long n,
                        struct oscore_binding *b, const uint8_t *req, size_t len, uint8_t *out,
                        size_t cap)
{
    srv->st.oscore_requests++;
    /* An Echo challenge is no verdict yet: the retry is the first request. */
    struct first_request *first =
        n == OSCORE_ERR_ECHO_REQUIRED ? NULL : srv_first_request_find(srv, &ctx->key, NULL);
    /* A kid is public: a request that does not verify says something
     * about the device only when it comes from the device's address;
     * from elsewhere it would take the place of the device's own first
     * request in the record. */
    if (first && n < 0 && strcmp(first->peer, peer_name))
        first = NULL;
    if (first) {
        char text[300] = "";
        if (n < 0)
            snprintf(text, sizeof text,
                     "request refused: %s: the OSCORE contexts differ - check the device's "
                     "EDHOC_Exporter (master secret / salt from PRK_out), Sender / Recipient IDs "
                     "(= C_R / C_I) and the suite's AEAD and hash",
                     oscore_strerror((int)n));
        srv_first_request_report(srv, first, n < 0 ? (int)n : 0, text);
    }
    if (n == OSCORE_ERR_ECHO_REQUIRED) {
        srv->store_err = 0;
        long r = oscore_protect_echo_challenge(&ctx->osc, b, req, len, out, cap);
        if (r < 0)
            return not_protected(srv, peer_name, "the Echo challenge", r, req, len, out, cap);
        srv_log(srv, EDHOC_LOG_INFO, "OSCORE peer=%s: replay window unknown, Echo challenge sent",
                peer_name);
        return r;
    }
    if (n < 0) {
        srv->st.oscore_errors++;
        srv_log(srv, EDHOC_LOG_INFO, "OSCORE peer=%s: request refused: %s", peer_name,
                oscore_strerror((int)n));
        long r = srv_oscore_error((int)n, req, len, out, cap);
        if (ctx == srv->fetched_for_request) {
            /* Read from the store for this request, which did not verify
             * under it (anyone may name a kid): not kept. */
            struct ctx_key key = ctx->key;
            srv_ctx_remove(srv, &key);
        }
        srv->fetched_for_request = NULL;
        return r;
    }
    srv->fetched_for_request = NULL;
    srv_amp_oscore_verified(srv, peer_name);
    struct coap_msg in;
    if (edhoc_coap_msg_parse(srv->inner, (size_t)n, &in)) {
        srv->st.oscore_errors++;
        return srv_oscore_error(OSCORE_ERR_INNER, req, len, out, cap);
    }
    /* Inner block-wise (RFC 8613 Section 4.1.3.4.1): each block is an
     * OSCORE request of its own; the body is reassembled per peer and
     * context, and each answer (2.31 Continue, a refusal, a block of a
     * large response) is protected like any response. */
    char bw_peer[MAX_PEER_NAME + 2 * (OSCORE_MAX_ID + OSCORE_MAX_ID_CONTEXT) + 8];
    {
        char rid[2 * OSCORE_MAX_ID + 1], idc[2 * OSCORE_MAX_ID_CONTEXT + 1];
        srv_hex(ctx->key.rid, ctx->key.rid_len, rid, sizeof rid);
        srv_hex(ctx->key.idc, ctx->key.idc_len, idc, sizeof idc);
        snprintf(bw_peer, sizeof bw_peer, "%s|%s|%s%s", peer_name, rid, ctx->key.has_idc ? "" : "-",
                 idc);
    }
    uint8_t *whole = NULL;
    size_t whole_len = 0, reply_len = 0;
    int verdict =
        edhoc_bw_server_request(srv->bw, bw_peer, srv->inner, (size_t)n, srv->now_ms, &whole,
                                &whole_len, srv->inner_cut, srv->inner_cap, &reply_len);
    if (verdict < 0)
        return srv_build(&in, COAP_CODE(5, 0), -1, NULL, 0, out, cap);
    if (verdict == EDHOC_BW_REPLY) {
        long pr = oscore_protect_response(&ctx->osc, b, srv->inner_cut, reply_len,
                                          srv_response_own_piv(srv), out, cap);
        return pr < 0 ? srv_build(&in, COAP_CODE(5, 0), -1, NULL, 0, out, cap) : pr;
    }
    const uint8_t *inner_req = srv->inner;
    size_t inner_req_len = (size_t)n;
    if (verdict == EDHOC_BW_WHOLE) {
        inner_req = whole;
        inner_req_len = whole_len;
        if (edhoc_coap_msg_parse(whole, whole_len, &in)) {
            free(whole);
            return srv_oscore_error(OSCORE_ERR_INNER, req, len, out, cap);
        }
    }
    long answer = answer_inner(srv, peer, peer_name, ctx, b, &in, inner_req, inner_req_len, bw_peer,
                               req, len, out, cap);
    free(whole);
    return answer;
}

/* The resource's answer to the (whole) inner request in, cut into a block
 * when large, protected. */
static long answer_inner(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                         const char *peer_name, struct peer_ctx *ctx, struct oscore_binding *b,
                         struct coap_msg *inp, const uint8_t *inner_req, size_t inner_req_len,
                         const char *bw_peer, const uint8_t *req, size_t len, uint8_t *out,
                         size_t cap)
{
    struct coap_msg in = *inp;
    /* Critical inner options we do not process (the EDHOC option of a
     * combined request among them, RFC 9668 step 8) mean 4.02. */
    struct plain_resp r;
    bool bad_option = false;
    for (size_t i = 0; i < in.option_count; i++) {
        uint16_t num = in.options[i].number;
        if ((num & 1) && num != COAP_OPT_URI_PATH && num != COAP_OPT_URI_QUERY &&
            num != COAP_OPT_URI_HOST && num != COAP_OPT_URI_PORT && num != COAP_OPT_ACCEPT &&
            num != COAP_OPT_IF_MATCH && num != COAP_OPT_IF_NONE_MATCH && num != COAP_OPT_BLOCK1 &&
            num != COAP_OPT_BLOCK2 && num != COAP_OPT_PROXY_URI && num != COAP_OPT_PROXY_SCHEME)
            bad_option = true;
    }
    if (bad_option) {
        memset(&r, 0, sizeof r);
        r.cf = -1;
        r.code = COAP_CODE_BAD_OPTION;
    } else {
        srv_resource(srv, &in, &r);
    }
    const struct coap_option *obs = edhoc_coap_msg_find_option(&in, COAP_OPT_OBSERVE);
    /* Without a way to hold the peer, no registration (RFC 7641 Section
     * 3.1: the answer without Observe says so). */
    if (obs && r.code == COAP_CODE_CONTENT && srv_path_is(&in, "/counter") && srv->cfg.hold_peer) {
        uint32_t v = 1;
        edhoc_coap_option_uint(obs, &v);
        struct observer *o = srv_observer_find(srv, &ctx->key, in.token, in.token_len);
        if (v == 0) {
            if (!o) {
                for (size_t i = 0; i < MAX_OBSERVERS && !o; i++) {
                    if (!srv->observers[i].used)
                        o = &srv->observers[i];
                }
            }
            if (o && !o->used) {
                o->used = true;
                o->peer = srv->cfg.hold_peer(peer);
                o->release = srv->cfg.release_peer;
                o->key = ctx->key;
                memcpy(o->token, in.token, in.token_len);
                o->token_len = in.token_len;
            }
            if (o) {
                o->b = *b;
                o->seq = srv->counter;
                r.observe = true;
                r.seq = o->seq;
            }
        } else if (o) {
            /* RFC 7641 Section 3.6: a GET with Observe 1 and the
             * registration's token ends it. */
            srv_log(srv, EDHOC_LOG_INFO, "OSCORE peer=%s: observer deregistered", peer_name);
            srv_observer_drop(o);
        }
    }
    long pn = srv_inner_response(&in, &r, srv->inner_resp, srv->inner_cap);
    if (pn < 0)
        return srv_oscore_error(OSCORE_ERR_DECRYPT, req, len, out, cap);
    long cut = edhoc_bw_server_response(srv->bw, bw_peer, inner_req, inner_req_len, srv->inner_resp,
                                        (size_t)pn, srv->cfg.block_size, srv->now_ms,
                                        srv->inner_cut, srv->inner_cap);
    if (cut < 0)
        return srv_build(&in, COAP_CODE(5, 0), -1, NULL, 0, out, cap);
    struct oscore_binding *bp = b;
    struct observer *o =
        r.observe ? srv_observer_find(srv, &ctx->key, in.token, in.token_len) : NULL;
    if (o)
        bp = &o->b;
    srv->store_err = 0;
    long pr = oscore_protect_response(&ctx->osc, bp, srv->inner_cut, (size_t)cut,
                                      srv_response_own_piv(srv), out, cap);
    if (pr < 0) {
        if (o)
            srv_observer_drop(o);
        return not_protected(srv, peer_name, "the response", pr, req, len, out, cap);
    }
    return pr;
}

/* An OSCORE request for a context known beforehand (the one a combined
 * request has just established). */
long srv_on_oscore(struct edhoc_server *srv, struct edhoc_transport_peer *peer,
                   const char *peer_name, struct peer_ctx *ctx, const uint8_t *req, size_t len,
                   uint8_t *out, size_t cap)
{
    struct oscore_binding b;
    long n = oscore_unprotect_request(&ctx->osc, req, len, srv->inner, srv->inner_cap, &b);
    return srv_on_unprotected(srv, peer, peer_name, ctx, n, &b, req, len, out, cap);
}
