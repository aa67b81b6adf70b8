/*
 * RFC 8613 Appendix B.2 with the server initiating: new contexts derived
 * from a static one, step by step.
 */
#include "server_internal.h"

/* Step 4 verified request #2 under next (ID Context ID3 = R2 || R3): "the
 * server marks the third security context to be used with this client
 * ... This security context replaces the previous security context with
 * the client, and the first and the second security contexts are
 * deleted." It is stored first (durable before it serves; its sequence
 * numbers start at 0 under keys never used, and get marks of their own),
 * then takes the previous one's place in the table. A previous ID3's row
 * goes with it; the configured context's row stays, its mark being what
 * the next start resumes above. Returns the new context, or NULL (not
 * stored: the previous one stays). */
static struct peer_ctx *b2_install(struct edhoc_server *srv, struct b2_entry *e,
                                   const struct oscore_context *next, const char *peer_name)
{
    size_t idl = 0;
    const uint8_t *idc = oscore_context_id_context(next, &idl);
    if (!idc || idl > OSCORE_MAX_ID_CONTEXT || !srv->cfg.db)
        return NULL;
    struct ctx_key key;
    srv_key_set(&key, idc, idl, e->configured.rid, e->configured.rid_len);
    const struct oscore_config *cfg = &e->cfg;
    struct edhoc_state_peer sp;
    char tag[sizeof sp.peer];
    snprintf(tag, sizeof tag, B2_ROW_TAG "%s", peer_name);
    srv_static_row(&sp, &key, cfg, tag);
    srv_state_write_begin(srv);
    int rc = edhoc_state_put_peer(srv->cfg.db, &sp);
    edhoc_wipe(&sp, sizeof sp);
    if (!rc && !srv_key_equal(&e->current, &e->configured)) {
        int drc = edhoc_state_delete_peer(srv->cfg.db, srv_key_idc(&e->current), e->current.idc_len,
                                          e->current.rid, e->current.rid_len);
        if (drc && drc != EDHOC_STATE_ERR_NOT_FOUND)
            srv_log(srv, EDHOC_LOG_ERR, "state: cannot delete the previous B.2 context: %s",
                    edhoc_state_strerror(drc));
    }
    int crc = srv_state_write_end(srv);
    if (rc || crc) {
        srv_log(srv, EDHOC_LOG_ERR, "cannot store the new context of RFC 8613 Appendix B.2: %s",
                edhoc_state_strerror(rc ? rc : crc));
        return NULL;
    }
    srv_ctx_remove(srv, &e->current);
    struct peer_ctx *p = srv_ctx_insert(srv, &key, true);
    if (!p)
        return NULL;
    p->osc = *next;
    srv_ctx_persist(p);
    e->current = key;
    return p;
}

/* A request #1 or #2 that B.2 refused: the unprotected error response of
 * oscore_error_response (5.03 when every R2 slot is taken, Appendix
 * B.2.1). */
static long b2_refused(struct edhoc_server *srv, const char *peer_name, const char *what, long err,
                       const uint8_t *req, size_t len, uint8_t *out, size_t cap)
{
    srv->st.oscore_requests++;
    srv->st.oscore_errors++;
    srv->st.b2_refused++;
    srv_log(srv, EDHOC_LOG_INFO, "OSCORE peer=%s: RFC 8613 Appendix B.2 %s refused: %s", peer_name,
            what, oscore_strerror((int)err));
    return srv_oscore_error((int)err, req, len, out, cap);
}

/* An OSCORE request whose kid is the Recipient ID of a static context
 * with Appendix B.2 (e): request #2 of a run in progress first; then the
 * context in use when its replay state is valid and the request names it
 * (or names none); else step 2, where the Echo challenge of Appendix
 * B.1.2 would go: "The server receives an OSCORE request for which it
 * does not have a valid security context, either because the client has
 * generated a new security context ID1 = R1 or because the server has
 * lost part of its security context, e.g., ID Context, Sender Sequence
 * Number or Replay Window." */
long srv_on_b2_request(struct edhoc_server *srv, struct b2_entry *e,
                       struct edhoc_transport_peer *peer, const char *peer_name,
                       const struct oscore_option *oo, const uint8_t *req, size_t len, uint8_t *out,
                       size_t cap)
{
    uint64_t now = srv_clock_ms(srv);
    struct oscore_binding b;
    char rid[2 * OSCORE_MAX_ID + 1];
    srv_hex(e->configured.rid, e->configured.rid_len, rid, sizeof rid);
    if (oscore_b2_server_is_request2(&e->run, req, len, now)) {
        struct oscore_context next;
        long n = oscore_b2_server_request2(&e->run, srv->cfg.ops, &e->cfg, req, len, now, &next,
                                           srv->inner, srv->inner_cap, &b);
        if (n < 0)
            return b2_refused(srv, peer_name, "request #2", n, req, len, out, cap);
        struct peer_ctx *p = b2_install(srv, e, &next, peer_name);
        /* The table's copy keeps the keys (and the backend's state for
         * them); this one only goes. */
        if (p)
            edhoc_wipe(&next, sizeof next);
        else
            oscore_context_wipe(&next);
        if (!p) {
            edhoc_wipe(srv->inner, (size_t)n);
            return b2_refused(srv, peer_name, "request #2", OSCORE_ERR_NOMEM, req, len, out, cap);
        }
        srv->st.b2_completed++;
        char id3[2 * OSCORE_MAX_ID_CONTEXT + 1];
        srv_hex(e->current.idc, e->current.idc_len, id3, sizeof id3);
        srv_log(srv, EDHOC_LOG_INFO,
                "OSCORE peer=%s: RFC 8613 Appendix B.2 completed for kid=%s: request #2 verified "
                "under ID Context R2 || R3 = %s, the context from now on; the request is served",
                peer_name, rid, id3);
        return srv_on_unprotected(srv, peer, peer_name, p, n, &b, req, len, out, cap);
    }
    struct peer_ctx *cur = srv_ctx_find(srv, &e->current);
    bool valid = cur && !oscore_context_needs_echo(&cur->osc);
    struct peer_ctx *ctx = NULL;
    if (oo->has_kid_context) {
        struct ctx_key key;
        if (oo->kid_context_len <= OSCORE_MAX_ID_CONTEXT) {
            srv_key_set(&key, oo->kid_context, oo->kid_context_len, oo->kid, oo->kid_len);
            ctx = srv_ctx_find(srv, &key);
        }
        /* Another static context with this kid and that ID Context, or
         * the one in use with a valid replay state: as any request. */
        if (ctx && (ctx != cur || valid)) {
            long n = srv_unprotect_request(srv, oo, req, len, &ctx, &b);
            return srv_on_unprotected(srv, peer, peer_name, ctx, n, &b, req, len, out, cap);
        }
    } else if (valid) {
        long n = srv_unprotect_request(srv, oo, req, len, &ctx, &b);
        /* Without 'kid context' (Section 5.1 lets a client omit it), a
         * request that fails under a run's ID3 may come from a client
         * that started again from the configured context: step 2 tells. */
        bool other_inputs =
            ctx == cur && n == OSCORE_ERR_DECRYPT && !srv_key_equal(&e->current, &e->configured);
        if (!other_inputs)
            return srv_on_unprotected(srv, peer, peer_name, ctx, n, &b, req, len, out, cap);
    }
    long r = oscore_b2_server_request1(&e->run, srv->cfg.ops, &e->cfg, req, len, now, out, cap);
    if (r < 0)
        return b2_refused(srv, peer_name, "request #1", r, req, len, out, cap);
    srv->st.oscore_requests++;
    srv->st.b2_started++;
    srv_log(srv, EDHOC_LOG_INFO,
            "OSCORE peer=%s: no valid context for kid=%s (%s): RFC 8613 Appendix B.2 started, "
            "response #1 sent with a new R2 (the request is not performed)",
            peer_name, rid,
            !valid                ? "replay window lost at the restart"
            : oo->has_kid_context ? "'kid context' not known"
                                  : "not verified under the context in use");
    return r;
}
