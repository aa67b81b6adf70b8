/*
 * The EDHOC steps on the pending handshake: message_1 to message_2,
 * message_3 (and message_4) to the new OSCORE context, and an error
 * message from the initiator.
 */
#include "server_internal.h"

long srv_on_message_1(struct edhoc_server *srv, const struct coap_msg *req, const char *peer,
                      const uint8_t *m1, size_t m1_len, int framing, uint8_t *out, size_t cap)
{
    struct edhoc_message_1_fields f;
    uint64_t hs_id = ++srv->hs_next;
    srv->hs_current = hs_id;
    struct edhoc_server_handshake rec;
    srv_hs_init(srv, &rec, hs_id, peer, framing);
    rec.bytes[1] = m1_len;
    rec.step = "message_1";
    rec.outcome = EDHOC_SERVER_REFUSED;
    char text[200];
    int rc = edhoc_message_1_parse(m1, m1_len, &f);
    if (rc) {
        srv->st.handshakes_failed++;
        srv_log(srv, EDHOC_LOG_NOTICE, "handshake peer=%s outcome=failed: message_1: %s", peer,
                edhoc_strerror(rc));
        long n = srv_edhoc_error_text_rec(req, "message_1 malformed", &rec, out, cap);
        snprintf(text, sizeof text, "message_1: %s", edhoc_strerror(rc));
        rec.error = rc;
        rec.error_text = text;
        rec.duration_ms = srv_mono_ms() - srv->req_t0_ms;
        srv_hs_emit(srv, &rec);
        return n;
    }
    if (srv->store_down && srv_mono_ms() < srv->store_probe_ms) {
        /* The store that would keep the context is out of reach: no
         * handshake's work for a context that cannot be kept. A message_1
         * after Max-Age goes through, and its context's put tries the
         * store again. */
        srv->st.handshakes_failed++;
        srv_log(srv, EDHOC_LOG_INFO,
                "handshake peer=%s outcome=refused: message_1: the context store is out of "
                "reach; 5.03 with Max-Age %u",
                peer, SRV_STORE_RETRY_S);
        rec.error_text = "the context store is out of reach (5.03)";
        rec.duration_ms = srv_mono_ms() - srv->req_t0_ms;
        srv_hs_emit(srv, &rec);
        return srv_service_unavailable(req, SRV_STORE_RETRY_S, out, cap);
    }
    int suite = f.suites[f.n_suites - 1];
    rec.method = f.method;
    for (size_t i = 0; i < f.n_suites && i < EDHOC_MAX_SUITES; i++)
        rec.suites_i[i] = f.suites[i];
    rec.n_suites_i = f.n_suites;
    rec.suite = suite;
    memcpy(rec.c_i, f.c_i, f.c_i_len);
    rec.c_i_len = f.c_i_len;
    edhoc_cred_resolver resolve = NULL;
    void *resolve_ctx = NULL;
    const struct edhoc_config *cfg =
        srv->cfg.select(srv->cfg.select_user, f.method, suite, &resolve, &resolve_ctx);
    if (!cfg) {
        srv->st.handshakes_failed++;
        srv_log(
            srv, EDHOC_LOG_NOTICE,
            "handshake peer=%s method=%d suite=%d outcome=failed: no credential for this method",
            peer, f.method, suite);
        long n = srv_edhoc_error_text_rec(req, "method not supported", &rec, out, cap);
        snprintf(text, sizeof text, "message_1: method %d not supported", f.method);
        rec.error = EDHOC_ERR_METHOD;
        rec.error_text = text;
        rec.duration_ms = srv_mono_ms() - srv->req_t0_ms;
        srv_hs_emit(srv, &rec);
        return n;
    }
    struct pending *h = srv_pending_alloc(srv, edhoc_amp_trust(srv->cfg.amp, peer));
    if (!h) {
        /* RFC 7252 Section 5.9.3.4: 5.03 with Max-Age, when to retry. */
        srv->st.handshakes_failed++;
        srv_log(srv, EDHOC_LOG_INFO,
                "handshake peer=%s refused: max pending %zu reached, every handshake in progress "
                "is of a peer ranked above this endpoint",
                peer, srv->cfg.max_pending);
        rec.error_text = "message_1: refused, the handshakes in progress fill --max-pending and "
                         "are all of peers ranked above this endpoint";
        rec.duration_ms = srv_mono_ms() - srv->req_t0_ms;
        srv_hs_emit(srv, &rec);
        return srv_service_unavailable(req, 1, out, cap);
    }
    h->framing = (uint8_t)framing;
    snprintf(h->peer, sizeof h->peer, "%s", peer);
    h->started_ms = srv->now_ms;
    h->cfg = cfg;
    h->resolve = resolve;
    h->resolve_ctx = resolve_ctx;
    h->hs_id = hs_id;
    h->t0_ms = srv->req_t0_ms;
    for (size_t i = 0; i < f.n_suites && i < EDHOC_MAX_SUITES; i++)
        h->suites_i[i] = (int8_t)f.suites[i];
    h->n_suites_i = (uint8_t)f.n_suites;
    h->m1_bytes = (uint16_t)(m1_len > UINT16_MAX ? UINT16_MAX : m1_len);
    if (framing == EDHOC_FRAMING_BARE) {
        /* A bare peer is known by its address: a new message_1 from it
         * replaces its earlier handshake. */
        for (struct pending *o; (o = srv_pending_find_bare(srv, peer));) {
            srv_hs_end_pending(srv, o, EDHOC_SERVER_EVICTED, "message_3",
                               "replaced before message_3 by a new message_1 from the same "
                               "address (bare framing)");
            srv_pending_free(srv, o);
        }
    }
    edhoc_session_init(&h->s, EDHOC_RESPONDER, srv_key_log_start(srv, h, cfg));
    size_t c_r_len = 0;
    if (srv_choose_c_r(srv, f.c_i, f.c_i_len, h->c_r, &c_r_len)) {
        srv_pending_free(srv, h);
        long n = srv_edhoc_error_text_rec(req, "no free connection identifier", &rec, out, cap);
        rec.outcome = EDHOC_SERVER_FAILED;
        rec.error_text = "message_2: no free connection identifier C_R";
        rec.duration_ms = srv_mono_ms() - srv->req_t0_ms;
        srv_hs_emit(srv, &rec);
        return n;
    }
    h->c_r_len = (uint8_t)c_r_len;
    srv_pending_index(srv, h);
    edhoc_session_set_conn_id(&h->s, h->c_r, c_r_len);
    rc = edhoc_responder_process_message_1(&h->s, m1, m1_len, NULL);
    if (rc) {
        struct edhoc_server_handshake r;
        srv_hs_from_pending(srv, h, &r);
        long n =
            srv_session_error_response(srv, req, &h->s, rc, rc == EDHOC_ERR_CRYPTO, &r, out, cap);
        char cis[20];
        srv_cid_hex(f.c_i, f.c_i_len, cis, sizeof cis);
        srv->st.handshakes_failed++;
        srv_log(srv, EDHOC_LOG_NOTICE,
                "handshake peer=%s method=%d suite=%d C_I=%s bytes=%zu outcome=failed: %s", peer,
                f.method, suite, cis, m1_len, edhoc_strerror(rc));
        edhoc_session_error_text(&h->s, text, sizeof text);
        r.outcome = rc == EDHOC_ERR_CRYPTO ? EDHOC_SERVER_FAILED : EDHOC_SERVER_REFUSED;
        r.method = f.method; /* the session stops before it takes them over */
        memcpy(r.c_i, f.c_i, f.c_i_len);
        r.c_i_len = f.c_i_len;
        r.step = "message_1";
        r.error = rc;
        r.error_text = text;
        r.c_r_len = 0; /* never sent */
        srv_hs_emit(srv, &r);
        srv_pending_free(srv, h);
        return n;
    }
    int n = edhoc_responder_prepare_message_2(&h->s, srv->buf, sizeof srv->buf);
    if (n < 0) {
        struct edhoc_server_handshake r;
        srv_hs_from_pending(srv, h, &r);
        long resp = srv_session_error_response(srv, req, &h->s, n, true, &r, out, cap);
        srv->st.handshakes_failed++;
        srv_log(srv, EDHOC_LOG_NOTICE, "handshake peer=%s method=%d suite=%d outcome=failed: %s",
                peer, f.method, suite, edhoc_strerror(n));
        edhoc_session_error_text(&h->s, text, sizeof text);
        r.outcome = srv_our_fault(n) ? EDHOC_SERVER_FAILED : EDHOC_SERVER_REFUSED;
        r.step = "message_2";
        r.error = n;
        r.error_text = text;
        srv_hs_emit(srv, &r);
        srv_pending_free(srv, h);
        return resp;
    }
    h->bytes = m1_len + (size_t)n;
    h->m2_bytes = (uint16_t)n;
    return srv_build(req, COAP_CODE_CHANGED, framing == EDHOC_FRAMING_A2 ? EDHOC_COAP_CF_EDHOC : -1,
                     srv->buf, (size_t)n, out, cap);
}

/* NULL, or which deviations of the initiator --tolerate accepted on this
 * handshake (said on every handshake it affected). */
const char *srv_tolerated_text(const struct pending *h)
{
    static char text[200];
    unsigned t = edhoc_session_tolerated(&h->s);
    if (!t)
        return NULL;
    char names[120];
    edhoc_deviations_format(t, names, sizeof names);
    snprintf(text, sizeof text, "tolerated %s (the initiator deviates from RFC 9528)", names);
    return text;
}

void srv_log_done(struct edhoc_server *srv, const struct pending *h, size_t m3_len,
                  const char *outcome, const char *why)
{
    int level = strcmp(outcome, "ok") ? EDHOC_LOG_NOTICE : EDHOC_LOG_INFO;
    if (!srv_log_wanted(srv, level))
        return;
    char cis[20], crs[20];
    size_t c_i_len = 0;
    const uint8_t *c_i = edhoc_session_peer_conn_id(&h->s, &c_i_len);
    srv_cid_hex(c_i, c_i ? c_i_len : 0, cis, sizeof cis);
    srv_cid_hex(h->c_r, h->c_r_len, crs, sizeof crs);
    srv_log(
        srv, level,
        "handshake peer=%s method=%d suite=%d C_I=%s C_R=%s framing=%s bytes=%zu outcome=%s%s%s",
        h->peer, edhoc_session_method(&h->s), edhoc_session_suite(&h->s), cis, crs,
        h->framing == EDHOC_FRAMING_BARE ? "bare" : "A.2", h->bytes + m3_len, outcome,
        why ? ": " : "", why ? why : "");
}

/* Whether OSCORE can follow this handshake: RFC 8613 Section 3.2.1 has
 * the HKDF of HMAC with SHA-256 (and the SHA-2 family the COSE registry
 * pairs with it); suite 25's SHAKE256 has no HMAC. */
static bool oscore_follows(const struct pending *h)
{
    /* Decided from the selected suite alone: deriving the OSCORE
     * parameters here and again in establish() cost four HKDF-Expand
     * calls per handshake. */
    const struct edhoc_suite *su = edhoc_suite_find(edhoc_session_suite(&h->s));
    if (!su)
        return true; /* establish() reports the failure */
    return su->app_hash == -16 || su->app_hash == -43 || su->app_hash == -44;
}

/* message_3 accepted: the OSCORE context for this peer. */
static struct peer_ctx *establish(struct edhoc_server *srv, struct pending *h)
{
    struct edhoc_oscore_params op;
    if (edhoc_session_oscore(&h->s, &op))
        return NULL;
    if (op.recipient_id_len > OSCORE_MAX_ID || op.sender_id_len > OSCORE_MAX_ID) {
        edhoc_wipe(&op, sizeof op);
        return NULL;
    }
    /* RFC 9528 Appendix A.1 derives the context without an ID Context. */
    struct ctx_key key;
    srv_key_set(&key, NULL, 0, op.recipient_id, op.recipient_id_len);
    /* The least recently used contexts make room, their rows deleted in
     * the transaction that stores the new one. */
    srv_state_write_begin(srv);
    if (!srv_ctx_find(srv, &key))
        srv_ctx_make_room(srv);
    struct peer_ctx *p = srv_ctx_insert(srv, &key, false);
    if (!p) {
        srv_state_write_end(srv);
        edhoc_wipe(&op, sizeof op);
        return NULL;
    }
    int rc = oscore_context_init_edhoc(&p->osc, srv->cfg.ops, op.master_secret,
                                       op.master_secret_len, op.master_salt, op.master_salt_len,
                                       op.sender_id, op.sender_id_len, op.recipient_id,
                                       op.recipient_id_len, op.aead_alg, op.hash_alg);
    if (!rc && srv->cfg.db) {
        struct edhoc_state_peer sp;
        memset(&sp, 0, sizeof sp);
        memcpy(sp.recipient_id, op.recipient_id, op.recipient_id_len);
        sp.recipient_id_len = op.recipient_id_len;
        memcpy(sp.sender_id, op.sender_id, op.sender_id_len);
        sp.sender_id_len = op.sender_id_len;
        /* A context whose keying material cannot be stored is not served:
         * its marks would be lost with it. */
        rc = EDHOC_STATE_ERR_ARG;
        if (op.master_secret_len <= sizeof sp.master_secret &&
            op.master_salt_len <= sizeof sp.master_salt) {
            memcpy(sp.master_secret, op.master_secret, op.master_secret_len);
            sp.master_secret_len = op.master_secret_len;
            memcpy(sp.master_salt, op.master_salt, op.master_salt_len);
            sp.master_salt_len = op.master_salt_len;
            sp.aead_alg = op.aead_alg;
            sp.hkdf_alg = op.hash_alg;
            /* With group commit the row goes with its first block of
             * sequence numbers and nothing waits for it: until it is
             * durable the keys are nowhere but in memory, so a crash
             * loses the context whole (RFC 8613 Section 8.2: 4.01, the
             * device runs EDHOC again, new keys) and no restart can use
             * a number of this block again. From the row's commit on,
             * its mark covers the block. */
            /* The same on a fleet's store: the put reserves the block
             * (fresh keys: no other responder can hold them). */
            bool grouped =
                edhoc_state_is_grouped(srv->cfg.db) || edhoc_state_is_shared(srv->cfg.db);
            sp.ssn_mark = grouped ? srv->cfg.ssn_freq : 0;
            struct ctx_mark *m =
                edhoc_state_event_fd(srv->cfg.db) >= 0 ? srv_ctx_mark_of(srv, p) : NULL;
            if (m)
                *m = (struct ctx_mark){srv->cfg.ssn_freq, 0};
            snprintf(sp.peer, sizeof sp.peer, "%s", h->peer);
            sp.created = (int64_t)time(NULL);
            sp.last_used = srv_wall_ms_of(srv, srv_used_ms(p));
            sp.method = edhoc_session_method(&h->s);
            sp.suite = edhoc_session_suite(&h->s);
            rc = edhoc_state_put_peer(srv->cfg.db, &sp);
            srv_store_outcome(srv, rc, "storing a new context", false);
        }
        edhoc_wipe(&sp, sizeof sp);
        /* Durable here, or not served. */
        int crc = srv_state_write_end(srv);
        if (!rc)
            rc = crc;
        if (rc)
            srv_log(srv, EDHOC_LOG_ERR, "cannot store the new context: %s",
                    edhoc_state_strerror(rc));
        else
            srv_ctx_persist(p);
    }
    /* Only a context that is served: one not stored is not. */
    if (!rc)
        srv_key_log_oscore(srv, &op);
    edhoc_wipe(&op, sizeof op);
    /* The evictions stand whatever became of the new context. */
    srv_state_write_end(srv);
    if (rc) {
        srv_ctx_remove(srv, &key);
        return NULL;
    }
    return p;
}

/* Run message_3 of handshake h. Returns 0 (context established, *ctx set),
 * or a response already written (> 0) / -1. */
/* The trust lookup of message_3, seen by the interop record: what the
 * initiator named (full map form and as it stood in PLAINTEXT_3) and the
 * credential it resolved to. */
static int record_resolve(void *ctx, const uint8_t *id_cred, size_t len,
                          const struct edhoc_cred **cred)
{
    struct edhoc_server *srv = ctx;
    struct pending *h = srv->m3_h;
    if (len <= sizeof srv->m3_id_cred) {
        memcpy(srv->m3_id_cred, id_cred, len);
        srv->m3_id_cred_len = len;
    }
    const struct edhoc_received *rx = &srv->rx;
    if (rx->plaintext_len <= sizeof rx->plaintext && rx->id_cred_off <= rx->plaintext_len &&
        rx->id_cred_enc_len <= rx->plaintext_len - rx->id_cred_off &&
        rx->id_cred_enc_len <= sizeof srv->m3_id_cred_sent) {
        memcpy(srv->m3_id_cred_sent, rx->plaintext + rx->id_cred_off, rx->id_cred_enc_len);
        srv->m3_id_cred_sent_len = rx->id_cred_enc_len;
    }
    int rc = h->resolve(h->resolve_ctx, id_cred, len, cred);
    srv->m3_cred = rc == 0 ? *cred : NULL;
    return rc;
}

/* Whether the request being handled comes from the address handshake h's
 * message_1 came from (and its message_2 went to). */
bool srv_from_own_peer(const struct edhoc_server *srv, const struct pending *h)
{
    return !srv->hs_peer || !strcmp(srv->hs_peer, h->peer);
}

/* RFC 9528 Section 9.7: "An attacker can also send faked message_2,
 * message_3, message_4, or error in an attempt to trick the receiving
 * party to send an error message and abort the EDHOC session. EDHOC
 * implementations MAY evaluate if a received message is likely to have
 * been forged by an attacker and ignore it without sending an error
 * message or aborting the EDHOC session." C_R is sent in clear and a
 * one-byte one has 48 values, so a message naming it from an address that
 * is not the handshake's own, and that proves nothing (an error message,
 * or a message_3 that does not verify), is taken as forged: the handshake
 * goes on for its own peer, and the sender gets a CoAP error without an
 * EDHOC error message in it (Section 6: after sending an error message
 * "the sender MUST abort the EDHOC session"). */
long srv_ignored_from_elsewhere(struct edhoc_server *srv, const struct coap_msg *req,
                                const struct pending *h, const char *what, const char *diagnostic,
                                uint8_t *out, size_t cap)
{
    char crs[20];
    srv_cid_hex(h->c_r, h->c_r_len, crs, sizeof crs);
    srv_log(srv, EDHOC_LOG_INFO,
            "EDHOC request from %s for C_R %s ignored: %s, and not from the address of its "
            "message_1 (%s); the handshake goes on (RFC 9528 Section 9.7)",
            srv->hs_peer ? srv->hs_peer : "?", crs, what, h->peer);
    return srv_build(req, COAP_CODE(4, 3), -1, (const uint8_t *)diagnostic, strlen(diagnostic), out,
                     cap);
}

/* message_3 verified but no OSCORE context follows: the handshake ends
 * as failed (or refused), logged and recorded, and its slot is freed. */
static void no_context(struct edhoc_server *srv, struct pending *h, size_t m3_len, bool combined,
                       enum edhoc_server_outcome outcome, const char *why, const char *record_text)
{
    srv->st.handshakes_failed++;
    srv_log_done(srv, h, m3_len, "failed", why);
    if (srv->cfg.record) {
        struct edhoc_server_handshake r;
        srv_hs_from_pending(srv, h, &r);
        srv_hs_add_message_3(srv, h, &r);
        r.combined = combined;
        r.bytes[3] = m3_len;
        r.outcome = outcome;
        r.step = "OSCORE context";
        r.error_text = record_text;
        srv_hs_emit(srv, &r);
    }
    srv->m3_h = NULL;
    srv_pending_free(srv, h);
}

long srv_run_message_3(struct edhoc_server *srv, const struct coap_msg *req, struct pending *h,
                       const uint8_t *m3, size_t m3_len, bool combined, struct peer_ctx **ctx,
                       uint8_t *out, size_t cap)
{
    srv->m3_h = h;
    srv->m3_cred = NULL;
    srv->m3_id_cred_len = srv->m3_id_cred_sent_len = 0;
    /* A message_3 from another address is tried on the session's state
     * and, when it does not verify, the state is put back as it was: only
     * the handshake's own peer ends it with a failed message_3 (RFC 9528
     * Section 5.4.3: "If any processing step fails, then the Responder
     * MUST send an EDHOC error message back ..., and the EDHOC session
     * MUST be aborted"; from elsewhere, Section 9.7 lets us ignore a
     * message likely forged). One that verifies completes the handshake
     * wherever it comes from: it is no forgery, since only the holder of
     * the initiator's ephemeral key can make CIPHERTEXT_3 decrypt under
     * K_3, and Signature_or_MAC_3 needs its authentication key; and
     * Appendix A.2 correlates the messages of a session by C_R, not by
     * address, so an initiator behind a NAT whose mapping changed between
     * message_2 and message_3 (rebinding) still completes. Whoever replays
     * a captured message_3 from elsewhere completes the same handshake
     * with keys only the initiator has, and gets no trust for its address
     * from it (srv_amp_handshake_completed). */
    bool own_peer = srv_from_own_peer(srv, h);
    struct edhoc_session kept;
    if (!own_peer)
        kept = h->s;
    int rc = edhoc_responder_handle_message_3(&h->s, m3, m3_len, &srv->rx,
                                              srv->cfg.record ? record_resolve : h->resolve,
                                              srv->cfg.record ? (void *)srv : h->resolve_ctx);
    if (!own_peer) {
        if (rc) {
            edhoc_session_wipe(&h->s);
            h->s = kept;
        }
        edhoc_wipe(&kept, sizeof kept);
        if (rc) {
            srv->m3_h = NULL;
            char what[120];
            snprintf(what, sizeof what, "message_3 does not verify (%s)", edhoc_strerror(rc));
            return srv_ignored_from_elsewhere(srv, req, h, what,
                                              "message_3 not verified, not from the handshake's "
                                              "address",
                                              out, cap);
        }
        char crs[20];
        srv_cid_hex(h->c_r, h->c_r_len, crs, sizeof crs);
        srv_log(srv, EDHOC_LOG_INFO,
                "handshake C_R=%s: message_3 verified from %s, not the address of message_1 (%s): "
                "the initiator's address changed (NAT rebinding?); completing with %s",
                crs, srv->hs_peer, h->peer, srv->hs_peer);
        /* Its A.2 handshake is found by C_R alone (a bare one by address,
         * which never gets here), so the new address can replace the old
         * one: the log, the record and the context's row name where the
         * peer is now. */
        if (h->framing == EDHOC_FRAMING_A2)
            snprintf(h->peer, sizeof h->peer, "%s", srv->hs_peer);
    }
    if (rc) {
        struct edhoc_server_handshake r;
        if (srv->cfg.record) {
            srv_hs_from_pending(srv, h, &r);
            srv_hs_add_message_3(srv, h, &r);
            r.combined = combined;
            r.bytes[3] = m3_len;
        }
        long n = srv_session_error_response(srv, req, &h->s, rc, rc == EDHOC_ERR_CRYPTO,
                                            srv->cfg.record ? &r : NULL, out, cap);
        srv->st.handshakes_failed++;
        /* The step, and the deviation that explains a failed MAC_3 or
         * signature when one does (RFC 9528 Section 5.4.3). */
        char text[400];
        edhoc_session_error_text(&h->s, text, sizeof text);
        struct edhoc_diagnosis diag;
        bool diagnosed = edhoc_session_diagnosis(&h->s, &diag) == 0 && diag.matched;
        srv_log_done(srv, h, m3_len, "failed", diagnosed ? text : edhoc_strerror(rc));
        if (srv->cfg.record) {
            r.diagnosis = diagnosed ? diag.text : "";
            r.outcome = rc == EDHOC_ERR_MAC || rc == EDHOC_ERR_SIGNATURE || rc == EDHOC_ERR_DECRYPT
                            ? EDHOC_SERVER_VERIFY
                        : srv_our_fault(rc) && rc != EDHOC_ERR_CREDENTIAL ? EDHOC_SERVER_FAILED
                                                                          : EDHOC_SERVER_REFUSED;
            r.step = "message_3";
            r.error = rc;
            r.error_text = text;
            srv_hs_emit(srv, &r);
        }
        srv->m3_h = NULL;
        srv_pending_free(srv, h);
        return n;
    }
    srv_key_log_completed(srv, h);
    if (!oscore_follows(h)) {
        /* EDHOC only: RFC 8613 Section 3.2.1 derives OSCORE keys with an
         * HKDF over HMAC, which this suite's hash (SHAKE256) has not, so
         * no context is made (RFC 9528 Section 3.6 leaves the application
         * to the suite's users). message_3 is answered as usual. */
        srv_amp_handshake_completed(srv, h, own_peer);
        *ctx = NULL;
        if (!combined)
            return 0;
        no_context(srv, h, m3_len, true, EDHOC_SERVER_REFUSED,
                   "combined request (RFC 9668) with a suite that has no OSCORE (RFC 8613 "
                   "Section 3.2.1)",
                   "suite without OSCORE in a combined request");
        static const char why[] = "no OSCORE for this suite (RFC 8613 Section 3.2.1)";
        return srv_build(req, COAP_CODE(5, 1), -1, (const uint8_t *)why, sizeof why - 1, out, cap);
    }
    srv->store_unavailable = false;
    *ctx = establish(srv, h);
    if (*ctx)
        srv_amp_handshake_completed(srv, h, own_peer);
    if (!*ctx && srv->store_unavailable) {
        srv->store_unavailable = false;
        no_context(srv, h, m3_len, combined, EDHOC_SERVER_FAILED,
                   "the context store is out of reach: 5.03", "the context store is out of reach");
        return srv_service_unavailable(req, SRV_STORE_RETRY_S, out, cap);
    }
    if (!*ctx) {
        no_context(srv, h, m3_len, combined, EDHOC_SERVER_FAILED,
                   "cannot set up the OSCORE context", "cannot set up the OSCORE context");
        return srv_build(req, COAP_CODE(5, 0), -1, NULL, 0, out, cap);
    }
    return 0;
}

/* The handshake ended well: its record, and its context awaits the first
 * OSCORE request. */
void srv_hs_ok(struct edhoc_server *srv, const struct pending *h, const struct peer_ctx *ctx,
               size_t m3_len, size_t m4_len, bool combined)
{
    if (srv->cfg.record) {
        struct edhoc_server_handshake r;
        srv_hs_from_pending(srv, h, &r);
        srv_hs_add_message_3(srv, h, &r);
        r.outcome = EDHOC_SERVER_OK;
        r.tolerated = edhoc_session_tolerated(&h->s);
        r.combined = combined;
        r.bytes[3] = m3_len;
        r.bytes[4] = m4_len;
        r.message_4_sent = m4_len > 0;
        srv_hs_emit(srv, &r);
    }
    srv->m3_h = NULL;
    if (ctx)
        srv_first_request_add(srv, h->hs_id, &ctx->key, h->peer);
}

long srv_on_message_3(struct edhoc_server *srv, const struct coap_msg *req, struct pending *h,
                      const uint8_t *m3, size_t m3_len, uint8_t *out, size_t cap)
{
    struct peer_ctx *ctx = NULL;
    long r = srv_run_message_3(srv, req, h, m3, m3_len, false, &ctx, out, cap);
    if (r)
        return r;
    srv->st.handshakes_ok++;
    int framing = h->framing;
    long resp;
    size_t m4_len = 0;
    if (srv->cfg.message_4) {
        int n = edhoc_responder_prepare_message_4(&h->s, srv->buf, sizeof srv->buf);
        if (n < 0) {
            srv_log_done(srv, h, m3_len, "failed", edhoc_strerror(n));
            if (srv->cfg.record) {
                struct edhoc_server_handshake rec;
                srv_hs_from_pending(srv, h, &rec);
                srv_hs_add_message_3(srv, h, &rec);
                rec.bytes[3] = m3_len;
                rec.outcome = EDHOC_SERVER_FAILED;
                rec.step = "message_4";
                rec.error = n;
                rec.error_text = edhoc_strerror(n);
                srv_hs_emit(srv, &rec);
            }
            srv->m3_h = NULL;
            srv_pending_free(srv, h);
            return srv_build(req, COAP_CODE(5, 0), -1, NULL, 0, out, cap);
        }
        m4_len = (size_t)n;
        resp = srv_build(req, COAP_CODE_CHANGED,
                         framing == EDHOC_FRAMING_A2 ? EDHOC_COAP_CF_EDHOC : -1, srv->buf, m4_len,
                         out, cap);
    } else {
        resp = srv_build(req, COAP_CODE_CHANGED, -1, NULL, 0, out, cap);
    }
    srv_log_done(srv, h, m3_len + m4_len, "ok",
                 ctx ? srv_tolerated_text(h)
                     : "EDHOC only: no OSCORE context for this suite (RFC 8613 Section 3.2.1 has "
                       "no HKDF for its hash)");
    srv_hs_ok(srv, h, ctx, m3_len, m4_len, false);
    srv_pending_free(srv, h);
    return resp;
}

/* An error message from the initiator aborts its handshake. */
long srv_on_peer_error(struct edhoc_server *srv, const struct coap_msg *req, struct pending *h,
                       const uint8_t *msg, size_t len, uint8_t *out, size_t cap)
{
    struct edhoc_error_info info;
    int rc = edhoc_session_process_error(&h->s, msg, len, &info);
    char why[160];
    if (rc == EDHOC_ERR_PEER_ERROR)
        snprintf(why, sizeof why, "error message from the initiator: ERR_CODE %lld%s%.*s",
                 (long long)info.code, info.text_len ? " " : "",
                 (int)(info.text_len < 100 ? info.text_len : 100), info.text ? info.text : "");
    else
        snprintf(why, sizeof why, "malformed error message from the initiator");
    srv->st.handshakes_failed++;
    srv_log_done(srv, h, len, "failed", why);
    if (srv->cfg.record) {
        struct edhoc_server_handshake r;
        srv_hs_from_pending(srv, h, &r);
        char diag[120];
        snprintf(diag, sizeof diag, "%.*s",
                 rc == EDHOC_ERR_PEER_ERROR ? (int)(info.text_len < 100 ? info.text_len : 100) : 0,
                 rc == EDHOC_ERR_PEER_ERROR && info.text ? info.text : "");
        r.outcome = EDHOC_SERVER_PEER_ERROR;
        r.step = "message_2";
        r.error = rc;
        r.error_text = why;
        r.err_code = rc == EDHOC_ERR_PEER_ERROR && info.code >= INT32_MIN && info.code <= INT32_MAX
                         ? (int)info.code
                         : -1;
        r.peer_diagnostic = diag;
        r.error_bytes = len;
        srv_hs_emit(srv, &r);
    }
    srv_pending_free(srv, h);
    return srv_build(req, COAP_CODE_CHANGED, -1, NULL, 0, out, cap);
}
