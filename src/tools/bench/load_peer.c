/*
 * load: the peers' state machines - message_1, the Echo round trip,
 * message_2 / message_3 (message_4), the OSCORE context and its requests -
 * and what they count (causes of failure, answers by code, latencies).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/coap_msg.h"
#include "load_internal.h"

static void peer_on_response(struct load_run *r, size_t index, const uint8_t *resp, size_t len);

/* req with an Echo option of the given value (replaced when it has one):
 * the request sent again after a 4.01 Echo (RFC 9175 Section 2.3). */
long load_coap_with_echo(const uint8_t *req, size_t len, const uint8_t *echo, size_t echo_len,
                         uint8_t *out, size_t cap)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(req, len, &m))
        return -1;
    for (size_t i = 0; i < m.option_count; i++) {
        if (m.options[i].number == COAP_OPT_ECHO) {
            m.options[i].value = echo;
            m.options[i].len = (uint16_t)echo_len;
            long n = edhoc_coap_msg_encode(&m, out, cap);
            return n < 0 ? -1 : n;
        }
    }
    if (edhoc_coap_msg_add_option(&m, COAP_OPT_ECHO, echo, echo_len))
        return -1;
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

void load_series_add(struct load_series *s, double v)
{
    if (s->n == s->cap) {
        if (s->cap >= LOAD_MAX_SAMPLES)
            return; /* the percentiles of the first samples are enough */
        size_t cap = s->cap ? s->cap * 2 : 1024;
        double *bigger = realloc(s->v, cap * sizeof *bigger);
        if (!bigger)
            return;
        s->v = bigger;
        s->cap = cap;
    }
    s->v[s->n++] = v;
}

/* A failure: cause is a word (the JSON enum), detail the code or library
 * error that goes with it (NULL: none). */
static void load_cause(struct load_run *r, const char *cause, const char *detail)
{
    r->failures++;
    if (!detail)
        detail = "";
    for (size_t i = 0; i < r->n_causes; i++) {
        if (!strcmp(r->causes[i].cause, cause) && !strcmp(r->causes[i].detail, detail)) {
            r->causes[i].count++;
            return;
        }
    }
    /* The last slot collects every cause beyond the table. */
    if (r->n_causes == LOAD_MAX_CAUSES - 1) {
        cause = "other";
        detail = "";
    }
    size_t i = r->n_causes < LOAD_MAX_CAUSES ? r->n_causes++ : LOAD_MAX_CAUSES - 1;
    snprintf(r->causes[i].cause, sizeof r->causes[i].cause, "%s", cause);
    snprintf(r->causes[i].detail, sizeof r->causes[i].detail, "%s", detail);
    r->causes[i].count++;
}

static void load_answer(struct load_run *r, bool plain_request, bool protected_answer, uint8_t code)
{
    r->answers[plain_request][protected_answer][code]++;
}

/* A CoAP request to path with an optional Content-Format and payload;
 * Message ID and token are the transport's. */
long load_request(uint8_t code, const char *path, int cf, const uint8_t *payload, size_t len,
                  uint8_t *out, size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = code;
    m.token_len = 1;
    const char *seg = path + (path[0] == '/');
    while (*seg) {
        size_t n = strcspn(seg, "/");
        if (edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)seg, n))
            return -1;
        seg += n + (seg[n] == '/');
    }
    uint8_t cfv[4];
    if (cf >= 0 && edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cfv,
                                             edhoc_coap_uint_encode((uint32_t)cf, cfv)))
        return -1;
    m.payload = len ? payload : NULL;
    m.payload_len = len;
    return edhoc_coap_msg_encode(&m, out, cap);
}

static void peer_reset(struct load_run *r, struct load_peer *p)
{
    if (p->token_len)
        edhoc_transport_client_forget(p->t, p->token, p->token_len);
    p->token_len = 0;
    edhoc_session_wipe(&p->s);
    oscore_context_wipe(&p->osc);
    p->have_ctx = false;
    p->state = PEER_IDLE;
    (void)r;
}

/* A transport failure (unreachable, reset, no answer in time): the peer
 * waits before its next attempt, longer with each failure in a row, so
 * that a port nobody serves is not flooded (RFC 7252 Section 4.8). The
 * flood's peers keep going at once: the flood measures them as they are. */
static void peer_back_off(struct load_run *r, struct load_peer *p)
{
    if (r->flood.sources)
        return;
    p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : LOAD_BACKOFF_FIRST_MS;
    if (p->backoff_ms > LOAD_BACKOFF_MAX_MS)
        p->backoff_ms = LOAD_BACKOFF_MAX_MS;
    p->retry_ns = tools_now_ns() + (uint64_t)p->backoff_ms * 1000000u;
    p->state = PEER_BACKOFF;
}

static void peer_fail(struct load_run *r, struct load_peer *p, const char *cause,
                      const char *detail)
{
    /* Before the request went out (IDLE) or while awaiting message_2. */
    if (!r->plain && (p->state == PEER_WAIT_M2 || p->state == PEER_IDLE))
        r->message_1_failures++;
    load_cause(r, cause, detail);
    peer_reset(r, p);
    if (!strcmp(cause, "transport") || !strcmp(cause, "timeout"))
        peer_back_off(r, p);
}

static int peer_send(struct load_run *r, struct load_peer *p, const uint8_t *msg, size_t len,
                     enum load_state next)
{
    if (p->token_len)
        edhoc_transport_client_forget(p->t, p->token, p->token_len);
    p->token_len = 0;
    int rc = edhoc_transport_client_send(p->t, msg, len, true, p->token, &p->token_len);
    if (rc) {
        peer_fail(r, p, "transport", edhoc_transport_strerror(rc));
        return rc;
    }
    p->sent_ns = tools_now_ns();
    p->state = next;
    return 0;
}

static bool load_budget_left(const struct load_run *r)
{
    return !r->stopping && (r->max_handshakes == 0 || r->hs_started < r->max_handshakes);
}

static void peer_send_request(struct load_run *r, struct load_peer *p)
{
    uint8_t payload[LOAD_PAYLOAD];
    memset(payload, 'x', sizeof payload);
    long n =
        load_request(COAP_CODE_POST, "/echo", 0, payload, sizeof payload, r->msg, sizeof r->msg);
    if (n < 0) {
        peer_fail(r, p, "internal", "cannot build the request");
        return;
    }
    p->sent_plain = r->plain;
    if (r->plain) {
        peer_send(r, p, r->msg, (size_t)n, PEER_WAIT_RESPONSE);
        return;
    }
    long pn = oscore_protect_request(&p->osc, r->msg, (size_t)n, r->coap, sizeof r->coap, &p->b);
    if (pn < 0) {
        peer_fail(r, p, "oscore_protect", oscore_strerror((int)pn));
        return;
    }
    peer_send(r, p, r->coap, (size_t)pn, PEER_WAIT_RESPONSE);
}

/* Run peer index's transport and handle its response, if any. Returns
 * true when a response was handled. */
bool load_peer_service(struct load_run *r, size_t index)
{
    struct load_peer *p = &r->peers[index];
    if (p->state == PEER_DONE || p->state == PEER_IDLE || p->state == PEER_BACKOFF)
        return false;
    edhoc_transport_run(p->t, 0);
    long n = edhoc_transport_client_wait(p->t, p->token, p->token_len, r->resp, sizeof r->resp, 0);
    if (n > 0) {
        peer_on_response(r, index, r->resp, (size_t)n);
        return true;
    }
    if (n == EDHOC_TRANSPORT_ERR_TIMEOUT) {
        if ((tools_now_ns() - p->sent_ns) / 1000000 >= (uint64_t)r->timeout_ms)
            peer_fail(r, p, "timeout", NULL);
    } else {
        peer_fail(r, p, "transport", edhoc_transport_strerror((int)n));
    }
    return false;
}

void load_peer_start(struct load_run *r, size_t index)
{
    struct load_peer *p = &r->peers[index];
    if (!load_budget_left(r)) {
        p->state = PEER_DONE;
        return;
    }
    if (p->state == PEER_BACKOFF) {
        if (tools_now_ns() < p->retry_ns)
            return;
        p->state = PEER_IDLE;
    }
    if (r->plain) {
        /* Unprotected requests only: the baseline OSCORE is compared with. */
        r->hs_started++;
        p->requests_left = r->requests_per_peer ? r->requests_per_peer : 1;
        peer_send_request(r, p);
        return;
    }
    r->hs_started++;
    p->generation++;
    /* Distinct C_I per peer and handshake (3 bytes: peer, generation). */
    uint8_t c_i[3] = {(uint8_t)(0x80 | (index >> 8)), (uint8_t)index, (uint8_t)p->generation};
    int rc = edhoc_session_init(&p->s, EDHOC_INITIATOR, r->cfg);
    if (!rc)
        rc = edhoc_session_set_conn_id(&p->s, c_i, sizeof c_i);
    int n = rc ? rc : edhoc_initiator_prepare_message_1(&p->s, r->msg + 1, sizeof r->msg - 1);
    if (n < 0) {
        peer_fail(r, p, "edhoc_message_1", edhoc_strerror(n));
        return;
    }
    r->msg[0] = 0xf5; /* CBOR true: message_1 follows (RFC 9528 A.2) */
    long cn = load_request(COAP_CODE_POST, r->path, EDHOC_COAP_CF_CID_EDHOC, r->msg, (size_t)n + 1,
                           r->coap, sizeof r->coap);
    if (cn < 0) {
        peer_fail(r, p, "internal", "cannot build the message_1 request");
        return;
    }
    p->echo_sent = false;
    p->m1_len = (size_t)cn <= sizeof p->m1 ? (size_t)cn : 0;
    if (p->m1_len)
        memcpy(p->m1, r->coap, p->m1_len);
    p->started_ns = tools_now_ns();
    peer_send(r, p, r->coap, (size_t)cn, PEER_WAIT_M2);
}

const char *load_coap_code_text(uint8_t code, char buf[8])
{
    snprintf(buf, 8, "%u.%02u", (unsigned)(code >> 5), (unsigned)(code & 0x1f));
    return buf;
}

/* A non-2.04 answer to an EDHOC request: the responder's error message
 * or a CoAP error. */
static void peer_edhoc_refused(struct load_run *r, struct load_peer *p, const struct coap_msg *m)
{
    char code[8];
    if (m->payload_len && edhoc_message_is_error(m->payload, m->payload_len)) {
        struct edhoc_error_info info;
        char detail[32];
        if (edhoc_error_message_parse(m->payload, m->payload_len, &info) == 0)
            snprintf(detail, sizeof detail, "ERR_CODE %lld", (long long)info.code);
        else
            snprintf(detail, sizeof detail, "unreadable");
        peer_fail(r, p, "edhoc_error", detail);
        return;
    }
    peer_fail(r, p, "coap_error", load_coap_code_text(m->code, code));
}

static void peer_on_response(struct load_run *r, size_t index, const uint8_t *resp, size_t len)
{
    struct load_peer *p = &r->peers[index];
    uint64_t now = tools_now_ns();
    struct coap_msg m;
    if (edhoc_coap_msg_parse(resp, len, &m)) {
        peer_fail(r, p, "malformed_response", NULL);
        return;
    }
    char code[8];
    switch (p->state) {
    case PEER_WAIT_M2: {
        const struct coap_option *echo =
            m.code == COAP_CODE_UNAUTHORIZED ? edhoc_coap_msg_find_option(&m, COAP_OPT_ECHO) : NULL;
        if (echo && echo->len > 0 && !p->echo_sent && p->m1_len) {
            /* The responder verifies our address before it answers with
             * more than it may send to an unverified one (RFC 9175
             * Section 2.4 item 3, RFC 9528 Section 9.7): "the client
             * ... sends the request again ... including the Echo option
             * with the value it received" (RFC 9175 Section 2.3). Once
             * only: a second challenge is the responder's refusal. The
             * handshake's clock keeps running: the round trip is part of
             * its latency. */
            long en = load_coap_with_echo(p->m1, p->m1_len, echo->value, echo->len, r->coap,
                                          sizeof r->coap);
            if (en < 0) {
                peer_fail(r, p, "internal", "cannot add the Echo option");
                return;
            }
            r->echo_challenges++;
            p->echo_sent = true;
            peer_send(r, p, r->coap, (size_t)en, PEER_WAIT_M2);
            return;
        }
        if (m.code != COAP_CODE_CHANGED) {
            peer_edhoc_refused(r, p, &m);
            return;
        }
        int rc = edhoc_initiator_handle_message_2(&p->s, m.payload, m.payload_len, &r->rx,
                                                  r->resolve, r->resolve_ctx);
        size_t cr_len = 0;
        const uint8_t *c_r = rc ? NULL : edhoc_session_peer_conn_id(&p->s, &cr_len);
        long pre = c_r ? edhoc_coap_cid_encode(c_r, cr_len, r->msg, sizeof r->msg) : -1;
        int n = rc        ? rc
                : pre < 0 ? EDHOC_ERR_ARG
                          : edhoc_initiator_prepare_message_3(&p->s, r->msg + pre,
                                                              sizeof r->msg - (size_t)pre);
        if (n < 0) {
            peer_fail(r, p, "edhoc_message_2", edhoc_strerror(n));
            return;
        }
        long cn = load_request(COAP_CODE_POST, r->path, EDHOC_COAP_CF_CID_EDHOC, r->msg,
                               (size_t)pre + (size_t)n, r->coap, sizeof r->coap);
        if (cn < 0) {
            peer_fail(r, p, "internal", "cannot build the message_3 request");
            return;
        }
        peer_send(r, p, r->coap, (size_t)cn, PEER_WAIT_M3);
        return;
    }
    case PEER_WAIT_M3: {
        if (m.code != COAP_CODE_CHANGED) {
            peer_edhoc_refused(r, p, &m);
            return;
        }
        if (r->message_4) {
            int rc = edhoc_initiator_process_message_4(&p->s, m.payload, m.payload_len, &r->rx);
            if (rc) {
                peer_fail(r, p, "edhoc_message_4", edhoc_strerror(rc));
                return;
            }
        }
        struct edhoc_oscore_params op;
        int rc = edhoc_session_oscore(&p->s, &op);
        if (!rc)
            rc = oscore_context_init_edhoc(&p->osc, r->cfg->ops, op.master_secret,
                                           op.master_secret_len, op.master_salt, op.master_salt_len,
                                           op.sender_id, op.sender_id_len, op.recipient_id,
                                           op.recipient_id_len, op.aead_alg, op.hash_alg);
        edhoc_wipe(&op, sizeof op);
        edhoc_session_wipe(&p->s);
        if (rc) {
            peer_fail(r, p, "oscore_context",
                      rc < -3500 ? edhoc_strerror(rc) : oscore_strerror(rc));
            return;
        }
        r->hs_ok++;
        p->backoff_ms = 0;
        p->have_ctx = true;
        load_series_add(&r->hs_lat, (double)(now - p->started_ns) / 1e6);
        p->requests_left = r->requests_per_peer;
        if (p->requests_left && !r->stopping)
            peer_send_request(r, p);
        else
            peer_reset(r, p);
        return;
    }
    case PEER_WAIT_RESPONSE: {
        if (p->sent_plain) {
            /* Any answer completes an unprotected request; its code is
             * reported, since a responder that serves /echo only under
             * OSCORE answers 4.01 and does less work than for OSCORE. */
            r->plain_code = m.code;
            load_answer(r, true, false, m.code);
        } else if (!edhoc_coap_msg_find_option(&m, COAP_OPT_OSCORE)) {
            /* Not the answer, whatever its code (RFC 8613 Section 2): an
             * OSCORE error of Section 8.2, or something on the path. Kept
             * apart from the failures of verification. */
            char detail[48];
            size_t pl = m.payload_len < 24 ? m.payload_len : 24;
            bool text = pl > 0;
            for (size_t i = 0; i < pl; i++)
                text = text && m.payload[i] >= 0x20 && m.payload[i] < 0x7f;
            snprintf(detail, sizeof detail, "%s%s%.*s", load_coap_code_text(m.code, code),
                     text ? " " : "", text ? (int)pl : 0, text ? (const char *)m.payload : "");
            r->no_oscore++;
            load_answer(r, false, false, m.code);
            peer_fail(r, p, "no_oscore", detail);
            return;
        } else {
            long n =
                oscore_unprotect_response(&p->osc, &p->b, resp, len, r->inner, sizeof r->inner);
            struct coap_msg in;
            if (n < 0) {
                peer_fail(r, p, "oscore_unprotect", oscore_strerror((int)n));
                return;
            }
            if (n > 1)
                load_answer(r, false, true, r->inner[1]);
            if (edhoc_coap_msg_parse(r->inner, (size_t)n, &in) || in.code != COAP_CODE_CHANGED) {
                peer_fail(r, p, "oscore_response_code",
                          load_coap_code_text(n > 0 ? r->inner[1] : 0, code));
                return;
            }
        }
        r->req_ok++;
        p->backoff_ms = 0;
        load_series_add(p->sent_plain && r->vs_plain ? &r->plain_lat : &r->req_lat,
                        (double)(now - p->sent_ns) / 1e6);
        /* With --vs-plain, unprotected requests do not use up the OSCORE
         * requests of a handshake: a context outlives the unprotected
         * windows, so handshakes stay rare in both kinds. */
        if (p->requests_left > 0 && !(r->vs_plain && p->sent_plain))
            p->requests_left--;
        /* An OSCORE window reached by a peer without a context (it began
         * in an unprotected one): a handshake first. */
        if (p->requests_left && !r->stopping && (r->plain || p->have_ctx))
            peer_send_request(r, p);
        else
            peer_reset(r, p);
        return;
    }
    default: return;
    }
}
