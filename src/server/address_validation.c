/*
 * Whether an answer may go to a peer address: the stateless Echo option
 * (RFC 9175) and the amplification limit (RFC 9528 Section 9.7) on top of
 * the account of edhoc/amplification.h.
 */
#include "server_internal.h"

bool srv_first_is_error(const uint8_t *p, size_t len)
{
    return len >= 1 && ((p[0] & 0xe0) == 0x00 || (p[0] & 0xe0) == 0x20) &&
           edhoc_message_is_error(p, len);
}

/* A stateless Echo value for a peer address: H(secret, peer, 30 s slot). */
static void echo_value(const struct edhoc_server *srv, const char *peer, uint64_t slot,
                       uint8_t out[OSCORE_ECHO_LEN])
{
    uint8_t in[32 + MAX_PEER_NAME + 8], h[64];
    size_t pl = strlen(peer) < MAX_PEER_NAME ? strlen(peer) : MAX_PEER_NAME;
    memcpy(in, srv->echo_secret, 32);
    memcpy(in + 32, peer, pl);
    for (int i = 0; i < 8; i++)
        in[32 + pl + i] = (uint8_t)(slot >> (8 * i));
    if (srv->cfg.ops->hash(EDHOC_COSE_SHA256, in, 32 + pl + 8, h))
        memset(h, 0, sizeof h);
    memcpy(out, h, OSCORE_ECHO_LEN);
}

/* Whether req carries an Echo value we gave peer in this 30 s slot or
 * the one before (they are stateless: keyed by echo_secret). */
static bool echo_valid(const struct edhoc_server *srv, const struct coap_msg *req, const char *peer)
{
    uint64_t slot = (uint64_t)time(NULL) / 30;
    uint8_t v[OSCORE_ECHO_LEN];
    const struct coap_option *e = edhoc_coap_msg_find_option(req, COAP_OPT_ECHO);
    for (uint64_t s = slot; e && e->len == OSCORE_ECHO_LEN && s + 1 >= slot; s--) {
        echo_value(srv, peer, s, v);
        if (edhoc_ct_equal(v, e->value, OSCORE_ECHO_LEN))
            return true;
        if (s == 0)
            break;
    }
    return false;
}

/* A 4.01 with a fresh Echo value for peer, piggybacked on the ACK of a
 * confirmable request, else Non-confirmable: RFC 9175 Section 2.4 item 3,
 * "it MUST be sent as a piggybacked or Non-confirmable response, never as
 * a separate one". Returns its length or -1. */
static long echo_challenge(const struct edhoc_server *srv, const struct coap_msg *req,
                           const char *peer, uint8_t *out, size_t cap)
{
    uint8_t v[OSCORE_ECHO_LEN];
    echo_value(srv, peer, (uint64_t)time(NULL) / 30, v);
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = req->type == COAP_TYPE_CON ? COAP_TYPE_ACK : COAP_TYPE_NON;
    m.code = COAP_CODE_UNAUTHORIZED;
    m.mid = req->mid;
    m.token_len = req->token_len;
    memcpy(m.token, req->token, req->token_len);
    edhoc_coap_msg_add_option(&m, COAP_OPT_ECHO, v, sizeof v);
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

/* True when message_1 may proceed; else out holds the 4.01 Echo challenge. */
bool srv_echo_ok(struct edhoc_server *srv, const struct coap_msg *req, const char *peer,
                 uint8_t *out, size_t cap, long *resp_len)
{
    if (echo_valid(srv, req, peer))
        return true;
    *resp_len = echo_challenge(srv, req, peer, out, cap);
    if (*resp_len > 0) {
        srv->st.echo_challenges++;
        srv_log(srv, EDHOC_LOG_DEBUG,
                "Echo challenge peer=%s: message_1 without a valid Echo "
                "(--echo)",
                peer);
    }
    return false;
}

/* ---- The amplification limit (edhoc/amplification.h) ----
 * RFC 9528 Section 9.7: "by sending a number of new or replayed
 * message_1 an attacker may cause the Responder to [...] amplify
 * messages"; RFC 9175 Section 2.4 item 3: until the peer's address is
 * confirmed, no more than three times the bytes received, confirmed by a
 * 4.01 with Echo. The transport counts the bytes; here an address becomes
 * verified, and a message_1 whose message_2 would not fit is answered with
 * the 4.01 before any crypto is spent on it. */

/* Header, token, Content-Format (2) and payload marker of a response. */
#define AMP_RESPONSE_HEAD(req) (4u + (req)->token_len + 2u + 1u)
/* What each block adds when a body goes block-wise (RFC 7959): Block2,
 * ETag and the first block's Size2 at most. */
#define AMP_BLOCK_OPTIONS 16u

/* The bytes the answer carrying a message_2 of m2_len bytes takes, every
 * block of it when it goes block-wise: so that the client's follow-up
 * requests, which only add to the budget, never meet the limit. */
static size_t amp_message_2_answer(const struct edhoc_server *srv, const struct coap_msg *req,
                                   size_t m2_len)
{
    size_t bs = srv->cfg.block_size ? srv->cfg.block_size : 1024;
    if (m2_len <= bs)
        return AMP_RESPONSE_HEAD(req) + m2_len;
    size_t blocks = (m2_len + bs - 1) / bs;
    return blocks * (AMP_RESPONSE_HEAD(req) + AMP_BLOCK_OPTIONS) + m2_len;
}

/* An Echo value of ours came back from peer: its address is verified
 * ("the client's retry with the Echo value", RFC 9175 Section 2.4 item
 * 3: "This needs to be done only once per endpoint"). */
void srv_amp_take_echo(struct edhoc_server *srv, const struct coap_msg *req, const char *peer)
{
    if (!srv->cfg.amp || !edhoc_coap_msg_find_option(req, COAP_OPT_ECHO) ||
        edhoc_amp_is_verified(srv->cfg.amp, peer) || !echo_valid(srv, req, peer))
        return;
    edhoc_amp_verify(srv->cfg.amp, peer);
    srv_log(srv, EDHOC_LOG_DEBUG, "amplification limit: peer=%s verified (Echo)", peer);
}

/* A request from peer verified under an OSCORE context: only a peer that
 * receives at its address could have established it. */
void srv_amp_oscore_verified(struct edhoc_server *srv, const char *peer)
{
    if (!srv->cfg.amp || edhoc_amp_trust(srv->cfg.amp, peer) == EDHOC_AMP_AUTHENTICATED)
        return;
    bool was_verified = edhoc_amp_is_verified(srv->cfg.amp, peer);
    edhoc_amp_authenticate(srv->cfg.amp, peer);
    if (!was_verified)
        srv_log(srv, EDHOC_LOG_DEBUG, "amplification limit: peer=%s verified (OSCORE)", peer);
}

/* A message_3 completed handshake h: its sender received message_2 and
 * holds a credential we accept, which a flood that only answers Echo does
 * not (srv_pending_alloc ranks it above those). Only when it came from the
 * address message_2 went to (srv_from_own_peer): from anywhere else it proves
 * nothing about that address (whoever received message_2 elsewhere could
 * put it in the source of message_3). */
void srv_amp_handshake_completed(struct edhoc_server *srv, const struct pending *h,
                                 bool from_own_peer)
{
    const char *peer = srv->hs_peer;
    if (!srv->cfg.amp || !peer || !from_own_peer || strcmp(peer, h->peer) ||
        edhoc_amp_trust(srv->cfg.amp, peer) == EDHOC_AMP_AUTHENTICATED)
        return;
    bool was_verified = edhoc_amp_is_verified(srv->cfg.amp, peer);
    edhoc_amp_authenticate(srv->cfg.amp, peer);
    srv_log(srv, EDHOC_LOG_DEBUG, "amplification limit: peer=%s %s (handshake completed)", peer,
            was_verified ? "authenticated" : "verified");
}

/* RFC 9528 Section 9.7: "by sending a number of new or replayed message_1
 * an attacker may cause the Responder to allocate state, perform
 * cryptographic operations, and amplify messages. [...] the CoAP server
 * can use the Echo option defined in [RFC9175] which forces the CoAP
 * client to demonstrate reachability at its apparent network address";
 * Appendix A.2: "the CoAP server MAY respond to the first POST request
 * with a 4.01 (Unauthorized) containing an Echo option". Under pressure
 * (edhoc_amp_message_1_pressure: message_1s from unverified endpoints
 * above --pressure-rate a second, or the pending table full) every
 * message_1 of an unverified endpoint gets the stateless 4.01 + Echo
 * before any crypto or slot, whatever the credential type; verified
 * endpoints go on as normal, except that those verified by Echo alone
 * start at most --pressure-rate handshakes a second between them
 * (edhoc_amp_admit_reachable: 5.03 beyond). True when *resp holds that
 * answer (or 0: even the 4.01 exceeds the amplification budget). */
bool srv_pressure_holds_back_message_1(struct edhoc_server *srv, const struct coap_msg *req,
                                       const char *peer, uint8_t *out, size_t cap, long *resp)
{
    struct edhoc_amp *a = srv->cfg.amp;
    enum edhoc_amp_trust trust = edhoc_amp_trust(a, peer);
    if (trust == EDHOC_AMP_REACHABLE &&
        !edhoc_amp_admit_reachable(a, srv_clock_ms(srv), srv->n_pending, srv->cfg.max_pending)) {
        srv_log(srv, EDHOC_LOG_DEBUG,
                "under pressure (%zu of %zu handshakes pending): message_1 from peer=%s (verified "
                "by Echo only) refused with 5.03: --pressure-rate handshakes a second already "
                "started for such peers",
                srv->n_pending, srv->cfg.max_pending, peer);
        *resp = srv_service_unavailable(req, 1, out, cap);
        return true;
    }
    if (trust != EDHOC_AMP_UNVERIFIED ||
        !edhoc_amp_message_1_pressure(a, srv_clock_ms(srv), srv->n_pending, srv->cfg.max_pending))
        return false;
    long n = echo_challenge(srv, req, peer, out, cap);
    bool fits = n > 0 && (size_t)n <= edhoc_amp_budget(a, peer);
    if (fits)
        srv->st.echo_challenges++;
    srv_log(srv, EDHOC_LOG_DEBUG,
            "under pressure (%zu of %zu handshakes pending): message_1 from unverified peer=%s "
            "answered with %s",
            srv->n_pending, srv->cfg.max_pending, peer,
            fits ? "4.01 with Echo"
                 : "nothing (even the 4.01 would exceed the amplification limit)");
    *resp = fits ? n : 0;
    return true;
}

/* True when the limit holds back the message_2 answering m1 (the EDHOC
 * message of req): *resp is then the 4.01 with Echo, or 0 (nothing) when
 * even that exceeds the budget. The size comes from the configuration
 * that would answer (edhoc_responder_message_2_len) with the longest C_R
 * srv_choose_c_r may take, so no key is generated and no handshake is kept
 * for an address that may be a victim's. Anything else (a malformed
 * message_1, a method or suite not served) is answered by a short error
 * message, which the transport's own check covers. */
bool srv_amp_holds_back_message_1(struct edhoc_server *srv, const struct coap_msg *req,
                                  const char *peer, const uint8_t *m1, size_t m1_len, uint8_t *out,
                                  size_t cap, long *resp)
{
    struct edhoc_amp *a = srv->cfg.amp;
    size_t budget = edhoc_amp_budget(a, peer);
    if (budget == SIZE_MAX)
        return false; /* verified */
    struct edhoc_message_1_fields f;
    if (edhoc_message_1_parse(m1, m1_len, &f))
        return false;
    int suite = f.suites[f.n_suites - 1];
    edhoc_cred_resolver resolve = NULL;
    void *resolve_ctx = NULL;
    const struct edhoc_config *cfg =
        srv->cfg.select(srv->cfg.select_user, f.method, suite, &resolve, &resolve_ctx);
    if (!cfg || (cfg->accept_methods && !(cfg->accept_methods & (1u << f.method))))
        return false;
    bool served = false;
    for (size_t i = 0; i < cfg->n_suites; i++)
        served |= cfg->suites[i] == suite;
    if (!served)
        return false;
    static const uint8_t longest_c_r[EDHOC_MAX_CONN_ID] = {0xff, 0xff, 0xff, 0xff,
                                                           0xff, 0xff, 0xff, 0xff};
    long m2 =
        srv->cfg.c_r_len
            ? edhoc_responder_message_2_len(cfg, f.method, suite, srv->cfg.c_r, srv->cfg.c_r_len)
            : edhoc_responder_message_2_len(cfg, f.method, suite, longest_c_r, sizeof longest_c_r);
    if (m2 < 0)
        return false;
    size_t answer = amp_message_2_answer(srv, req, (size_t)m2);
    if (answer <= budget)
        return false;
    long n = echo_challenge(srv, req, peer, out, cap);
    bool fits = n > 0 && (size_t)n <= budget;
    edhoc_amp_note_limited(a, !fits);
    if (fits)
        srv->st.echo_challenges++;
    srv_log(srv, EDHOC_LOG_DEBUG,
            "amplification limit: peer=%s unverified, message_2 (method %d, %zu bytes to send) "
            "exceeds what is left of %u x the bytes received (%zu): %s",
            peer, f.method, answer, edhoc_amp_factor(a), budget,
            fits ? "4.01 with Echo instead" : "nothing sent, even the 4.01 would exceed it");
    *resp = fits ? n : 0;
    return true;
}

long edhoc_server_echo_challenge(void *user, const char *peer, const uint8_t *req, size_t len,
                                 size_t held_back, size_t budget, uint8_t *out, size_t cap)
{
    struct edhoc_server *srv = user;
    struct coap_msg m;
    if (edhoc_coap_msg_parse(req, len, &m))
        return 0;
    /* A request the engine does not see (a Block2 follow-up answered from
     * a kept body) may carry the Echo value of an earlier challenge: that
     * verifies the endpoint, and what was held back can go. */
    srv_amp_take_echo(srv, &m, peer);
    if (edhoc_amp_is_verified(srv->cfg.amp, peer))
        return 0;
    long n = echo_challenge(srv, &m, peer, out, cap);
    bool fits = n > 0 && (size_t)n <= budget;
    if (fits)
        srv->st.echo_challenges++;
    srv_log(srv, EDHOC_LOG_DEBUG,
            "amplification limit: peer=%s unverified, an answer of %zu bytes exceeds what is left "
            "of %u x the bytes received (%zu): %s",
            peer, held_back, edhoc_amp_factor(srv->cfg.amp), budget,
            fits ? "4.01 with Echo instead" : "nothing sent, even the 4.01 would exceed it");
    return fits ? n : 0;
}
