/*
 * One handshake of the initiator over CoAP: message_1 (suite negotiation,
 * Echo), message_2, message_3 alone or in the RFC 9668 combined request,
 * message_4, the OSCORE context derived.
 */
#include "edhoc_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_coap.h"
#include "client_time.h"
#include "client_trace.h"
#include "edhoc_client_internal.h"
#include "oscore_exchange.h"
#include "edhoc/blockwise.h"
#include "edhoc/coap_msg.h"
#include "edhoc/cred.h"
#include "edhoc/oscore.h"
#include "edhoc/transport.h"

/* Rows for the exchange just finished (request and response directions). */
/* An EDHOC message of a row, to the trace hook under its own name
 * ("message_3" of the combined request); rows that name a CoAP answer
 * ("(2.04 Changed)") carry none. */
static void trace_edhoc(const char *row, bool sent, const uint8_t *msg, long len)
{
    if (!msg || len < 0)
        return;
    if (!strncmp(row, "message_", 8) && row[8] >= '1' && row[8] <= '4') {
        char name[10];
        memcpy(name, row, 9);
        name[9] = '\0';
        client_trace_edhoc(name, sent, msg, (size_t)len);
    } else if (!strcmp(row, "error")) {
        client_trace_edhoc(row, sent, msg, (size_t)len);
    }
}

static void add_exchange_rows(struct edhoc_client_run *run, const struct cli_dgram_log *log,
                              const char *req_name, const uint8_t *req_msg, long req_edhoc,
                              const char *resp_name, const uint8_t *resp_msg, long resp_edhoc)
{
    trace_edhoc(req_name, true, req_msg, req_edhoc);
    if (resp_name)
        trace_edhoc(resp_name, false, resp_msg, resp_edhoc);
    if (log->n == 0)
        return;
    const struct cli_exchange *e = &log->ex[log->n - 1];
    edhoc_client_add_row(run, req_name, 'I', req_msg, req_edhoc, e->bytes_sent, e->dgrams_sent, e);
    if (resp_name && e->dgrams_received)
        edhoc_client_add_row(run, resp_name, 'R', resp_msg, resp_edhoc, e->bytes_received,
                             e->dgrams_received, e);
    run->exchanges++;
}

static void note_peer_error(struct edhoc_client_run *run, const struct edhoc_error_info *info)
{
    run->have_peer_error = true;
    run->peer_err_code = (long long)info->code;
    size_t n =
        info->text_len < sizeof run->peer_diag - 1 ? info->text_len : sizeof run->peer_diag - 1;
    if (info->text && n)
        memcpy(run->peer_diag, info->text, n);
    run->peer_diag[n] = '\0';
}

/* A peer's EDHOC error message in a response. */
static void peer_error(struct edhoc_client_run *run, const uint8_t *msg, size_t len, uint8_t code,
                       const char *when)
{
    struct edhoc_error_info info;
    if (edhoc_error_message_parse(msg, len, &info) == 0) {
        note_peer_error(run, &info);
        edhoc_client_fail(run, EDHOC_CLIENT_PEER_ERROR,
                          "the responder answered %s with an EDHOC error (%d.%02d): "
                          "ERR_CODE %lld%s%s",
                          when, code >> 5, code & 31, run->peer_err_code,
                          run->peer_diag[0] ? ": " : "", run->peer_diag);
    } else {
        char cn[48];
        edhoc_client_fail(run, EDHOC_CLIENT_FAILURE, "the responder answered %s with %s", when,
                          cli_coap_code_name(code, cn, sizeof cn));
    }
}

static long edhoc_post_as(struct edhoc_client *c, const uint8_t *prefix, size_t prefix_len,
                          const uint8_t *m, size_t m_len, uint64_t deadline, int timeout_cap_ms,
                          bool confirmable);

/* POST an EDHOC message; returns the response length or a transport error. */
static long edhoc_post(struct edhoc_client *c, const uint8_t *prefix, size_t prefix_len,
                       const uint8_t *m, size_t m_len, uint64_t deadline, int timeout_cap_ms)
{
    return edhoc_post_as(c, prefix, prefix_len, m, m_len, deadline, timeout_cap_ms, true);
}

static long edhoc_post_as(struct edhoc_client *c, const uint8_t *prefix, size_t prefix_len,
                          const uint8_t *m, size_t m_len, uint64_t deadline, int timeout_cap_ms,
                          bool confirmable)
{
    if (prefix_len + m_len > EDHOC_TRANSPORT_MAX_MESSAGE - 600)
        return EDHOC_TRANSPORT_ERR_BUFFER;
    memcpy(c->buf, prefix, prefix_len);
    memcpy(c->buf + prefix_len, m, m_len);
    const char *path = c->path[0] ? c->path : EDHOC_COAP_WELL_KNOWN;
    long n =
        cli_coap_build_request(COAP_CODE_POST, path, c->query,
                               c->framing == EDHOC_FRAMING_A2 ? EDHOC_COAP_CF_CID_EDHOC : -1,
                               c->buf, prefix_len + m_len, -1, c->req, EDHOC_TRANSPORT_MAX_MESSAGE);
    if (n < 0)
        return EDHOC_TRANSPORT_ERR_MALFORMED;
    if (c->echo_len) {
        /* The server asked for proof of reachability (RFC 9528 A.2, RFC 9175). */
        long en = cli_coap_with_echo(c->req, (size_t)n, c->echo, c->echo_len, c->buf,
                                     EDHOC_TRANSPORT_MAX_MESSAGE);
        if (en < 0)
            return EDHOC_TRANSPORT_ERR_MALFORMED;
        memcpy(c->req, c->buf, (size_t)en);
        n = en;
        c->echo_len = 0;
    }
    int left = client_left_ms(deadline);
    if (timeout_cap_ms > 0 && left > timeout_cap_ms)
        left = timeout_cap_ms;
    if (confirmable)
        return edhoc_transport_client_request(c->t, c->req, (size_t)n, c->resp,
                                              EDHOC_TRANSPORT_MAX_MESSAGE, left);
    uint8_t tok[8];
    size_t tl = 0;
    int rc = edhoc_transport_client_send(c->t, c->req, (size_t)n, false, tok, &tl);
    if (rc)
        return rc;
    long rn =
        edhoc_transport_client_wait(c->t, tok, tl, c->resp, EDHOC_TRANSPORT_MAX_MESSAGE, left);
    edhoc_transport_client_forget(c->t, tok, tl);
    return rn;
}

/* A 4.01 carrying an Echo option: keep its value for the repeated request. */
static bool take_echo(struct edhoc_client *c, const uint8_t *resp, size_t len)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(resp, len, &m) || m.code != COAP_CODE_UNAUTHORIZED)
        return false;
    const struct coap_option *o = edhoc_coap_msg_find_option(&m, COAP_OPT_ECHO);
    if (!o || o->len == 0 || o->len > sizeof c->echo)
        return false;
    memcpy(c->echo, o->value, o->len);
    c->echo_len = o->len;
    return true;
}

/* After a local failure: tell the responder (best effort, not waited for long). */
static void send_error(struct edhoc_client *c, const struct edhoc_session *s, uint64_t deadline,
                       struct edhoc_client_run *run)
{
    uint8_t err[EDHOC_MAX_ERROR_MESSAGE];
    int n = edhoc_session_write_error(s, err, sizeof err);
    if (n <= 0)
        return;
    uint8_t pre[EDHOC_MAX_CONN_ID + 1];
    long pl = 0;
    if (c->framing == EDHOC_FRAMING_A2) {
        size_t c_r_len = 0;
        const uint8_t *c_r = edhoc_session_peer_conn_id(s, &c_r_len);
        if (!c_r || c_r_len == 0)
            return;
        pl = edhoc_coap_cid_encode(c_r, c_r_len, pre, sizeof pre);
        if (pl < 0)
            return;
    }
    cli_dgram_log_begin(&c->log, "error");
    long rn = edhoc_post(c, pre, (size_t)pl, err, (size_t)n, deadline, 1000);
    c->log.current = -1;
    add_exchange_rows(run, &c->log, "error", err, n, rn > 0 ? "(response)" : NULL, NULL, -1);
}

int edhoc_client_handshake(struct edhoc_client *c, struct edhoc_client_run *run,
                           struct edhoc_session *s, struct edhoc_received *rx,
                           struct oscore_context *osc, uint64_t deadline, bool *combined_done)
{
    int rc = edhoc_session_init(s, EDHOC_INITIATOR, c->cfg);
    if (rc) {
        edhoc_client_fail(run, EDHOC_CLIENT_INTERNAL, "cannot start the session: %s",
                          edhoc_strerror(rc));
        return -1;
    }
    long m2_len = 0;
    for (int attempt = 0;; attempt++) {
        run->attempts = attempt + 1;
        if (attempt >= EDHOC_CLIENT_MAX_ATTEMPTS) {
            edhoc_client_fail(run, EDHOC_CLIENT_PEER_ERROR,
                              "no common cipher suite after %d attempts", attempt);
            return -1;
        }
        if (c->n_c_id) {
            size_t k = (size_t)attempt < c->n_c_id ? (size_t)attempt : c->n_c_id - 1;
            edhoc_session_set_conn_id(s, c->c_id[k], c->c_id_len[k]);
        }
        if (c->n_ephemerals) {
            size_t k = (size_t)attempt < c->n_ephemerals ? (size_t)attempt : c->n_ephemerals - 1;
            edhoc_session_set_ephemeral(s, c->ephemeral[k], c->ephemeral_len[k]);
        }
        int n = edhoc_initiator_prepare_message_1(s, c->msg, EDHOC_MAX_MESSAGE);
        if (n < 0) {
            edhoc_client_fail(run, edhoc_client_status_for_error(n), "message_1: %s",
                              edhoc_strerror(n));
            return -1;
        }
        static const uint8_t true_prefix = 0xf5;
        uint64_t m1_deadline = c->message_1_deadline && c->message_1_deadline < deadline
                                   ? c->message_1_deadline
                                   : deadline;
        cli_dgram_log_begin(&c->log, "message_1");
        long rn = edhoc_post(c, &true_prefix, c->framing == EDHOC_FRAMING_A2 ? 1 : 0, c->msg,
                             (size_t)n, m1_deadline, 0);
        c->log.current = -1;
        if (rn > 0 && take_echo(c, c->resp, (size_t)rn)) {
            size_t challenged = run->n_rows;
            add_exchange_rows(run, &c->log, "message_1", c->msg, n, "(4.01 Echo)", NULL, -1);
            if (challenged < run->n_rows)
                run->rows[challenged].echo_challenged = true;
            cli_dgram_log_begin(&c->log, "message_1 (Echo)");
            rn = edhoc_post(c, &true_prefix, c->framing == EDHOC_FRAMING_A2 ? 1 : 0, c->msg,
                            (size_t)n, m1_deadline, 0);
            c->log.current = -1;
        }
        if (rn < 0) {
            add_exchange_rows(run, &c->log, "message_1", c->msg, n, NULL, NULL, -1);
            edhoc_client_fail(run, edhoc_client_transport_status(rn), "message_1 to %s: %s",
                              edhoc_transport_client_peer(c->t),
                              rn == EDHOC_TRANSPORT_ERR_TIMEOUT
                                  ? "timeout, no response"
                                  : edhoc_transport_strerror((int)rn));
            return -1;
        }
        uint8_t code;
        int cf;
        const uint8_t *pl;
        size_t pll;
        if (cli_coap_response_view(c->resp, (size_t)rn, &code, &cf, &pl, &pll)) {
            edhoc_client_fail(run, EDHOC_CLIENT_FAILURE, "malformed CoAP response to message_1");
            return -1;
        }
        if (code == COAP_CODE_CHANGED && pll) {
            run->got_message_2 = true;
            add_exchange_rows(run, &c->log, "message_1", c->msg, n, "message_2", pl, (long)pll);
            memcpy(c->buf, pl, pll);
            m2_len = (long)pll;
            break;
        }
        if (pll && edhoc_message_is_error(pl, pll)) {
            add_exchange_rows(run, &c->log, "message_1", c->msg, n, "error", pl, (long)pll);
            struct edhoc_error_info info;
            if (edhoc_error_message_parse(pl, pll, &info) == 0 && info.code == 2) {
                memcpy(run->suites_r, info.suites, info.n_suites * sizeof info.suites[0]);
                run->n_suites_r = info.n_suites;
            }
            int prc = edhoc_session_process_error(s, pl, pll, &info);
            if (prc == 0)
                continue; /* SUITES_R names a suite we have: try again with it */
            if (prc == EDHOC_ERR_PEER_ERROR) {
                peer_error(run, pl, pll, code, "message_1");
            } else if (run->n_suites_r) {
                /* Error code 2 naming none of our suites. */
                run->have_peer_error = true;
                run->peer_err_code = 2;
                run->peer_diag[0] = '\0';
                edhoc_client_fail(
                    run, EDHOC_CLIENT_PEER_ERROR,
                    "the responder rejected message_1 with ERR_CODE 2: %s (SUITES_R names "
                    "none of ours)",
                    edhoc_strerror(prc));
            } else {
                edhoc_client_fail(run, EDHOC_CLIENT_PEER_ERROR,
                                  "the responder rejected message_1: %s", edhoc_strerror(prc));
            }
            return -1;
        }
        add_exchange_rows(run, &c->log, "message_1", c->msg, n, "(response)", NULL, -1);
        char cn[48];
        edhoc_client_fail(run, EDHOC_CLIENT_FAILURE, "the responder answered message_1 with %s%s",
                          cli_coap_code_name(code, cn, sizeof cn), pll ? "" : " and no payload");
        return -1;
    }
    run->suite = edhoc_session_suite(s);

    rc =
        edhoc_initiator_handle_message_2(s, c->buf, (size_t)m2_len, rx, c->resolve, c->resolve_ctx);
    if (rc) {
        char why[400];
        edhoc_session_error_text(s, why, sizeof why);
        struct edhoc_diagnosis d;
        if (edhoc_session_diagnosis(s, &d) == 0)
            snprintf(run->diagnosis, sizeof run->diagnosis, "%s", d.text);
        edhoc_client_fail(run, edhoc_client_status_for_error(rc),
                          "message_2 verification failed: %s", why[0] ? why : edhoc_strerror(rc));
        send_error(c, s, deadline, run);
        return -1;
    }
    /* A deviation accepted with --tolerate is said on this handshake. */
    run->tolerated = edhoc_session_tolerated(s);
    struct edhoc_id_cred parsed;
    run->id_cred_r_type =
        edhoc_id_cred_parse(rx->id_cred, rx->id_cred_len, &parsed) == 0 ? (int)parsed.type : 0;
    run->have_id_cred_r = true;

    int n3 = edhoc_initiator_prepare_message_3(s, c->msg, EDHOC_MAX_MESSAGE);
    if (n3 < 0) {
        edhoc_client_fail(run, edhoc_client_status_for_error(n3), "message_3: %s",
                          edhoc_strerror(n3));
        return -1;
    }
    run->followed = edhoc_session_followed(s);
    /* TH_4 and PRK_4e3m are known once message_3 is made (RFC 9528 5.4.3). */
    if (c->edhoc_keys)
        c->edhoc_keys(c->keys_user);
    if (edhoc_client_oscore_unavailable(edhoc_session_suite(s), run->no_oscore,
                                        sizeof run->no_oscore)) {
        /* Refused before message_1 when OSCORE was to follow; this is an
         * EDHOC-only handshake (--request none) and goes on without it. */
        if (c->oscore_requests || c->combined) {
            edhoc_client_fail(run, EDHOC_CLIENT_OSCORE, "%s", run->no_oscore);
            return -1;
        }
        goto no_oscore;
    }
    rc = edhoc_session_oscore(s, &run->osc);
    if (!rc)
        rc = oscore_context_init_edhoc(
            osc, edhoc_crypto_default(), run->osc.master_secret, run->osc.master_secret_len,
            run->osc.master_salt, run->osc.master_salt_len, run->osc.sender_id,
            run->osc.sender_id_len, run->osc.recipient_id, run->osc.recipient_id_len,
            run->osc.aead_alg, run->osc.hash_alg);
    if (rc) {
        edhoc_client_fail(run, EDHOC_CLIENT_OSCORE, "cannot derive the OSCORE context: %s",
                          rc < -3999 ? edhoc_strerror(rc) : oscore_strerror(rc));
        return -1;
    }
    run->have_osc = true;
    if (c->oscore_keys)
        c->oscore_keys(c->keys_user, &run->osc);

no_oscore:
    if (c->combined) {
        /* RFC 9668: message_3 rides in front of the first OSCORE request. */
        if (c->first_request_len > EDHOC_TRANSPORT_MAX_MESSAGE) {
            edhoc_client_fail(run, EDHOC_CLIENT_USAGE, "--request '%s': cannot encode",
                              c->first_request_name);
            return -1;
        }
        memcpy(c->req, c->first_request, c->first_request_len);
        long qn = (long)c->first_request_len;
        uint8_t *prot = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
        uint8_t *comb = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
        uint8_t *plain = malloc(OSCORE_MAX_PLAINTEXT + 64);
        int ret = -1;
        struct oscore_binding b;
        long pn = prot && comb && plain ? oscore_protect_request(osc, c->req, (size_t)qn, prot,
                                                                 EDHOC_TRANSPORT_MAX_MESSAGE, &b)
                                        : OSCORE_ERR_BUFFER;
        if (pn >= 0)
            client_trace_inner(true, c->req, (size_t)qn);
        struct coap_msg m;
        if (pn < 0 || edhoc_coap_msg_parse(prot, (size_t)pn, &m) ||
            m.payload_len + (size_t)n3 > EDHOC_TRANSPORT_MAX_MESSAGE - 200) {
            edhoc_client_fail(run, EDHOC_CLIENT_OSCORE, "cannot protect the combined request: %s",
                              oscore_strerror(pn < 0 ? (int)pn : OSCORE_ERR_TOO_LARGE));
            goto comb_out;
        }
        memcpy(c->buf, c->msg, (size_t)n3);
        memcpy(c->buf + n3, m.payload, m.payload_len);
        m.payload = c->buf;
        m.payload_len += (size_t)n3;
        edhoc_coap_msg_add_option(&m, EDHOC_COAP_OPTION_EDHOC, NULL, 0);
        long cn = edhoc_coap_msg_encode(&m, comb, EDHOC_TRANSPORT_MAX_MESSAGE);
        if (cn < 0) {
            edhoc_client_fail(run, EDHOC_CLIENT_INTERNAL, "cannot encode the combined request");
            goto comb_out;
        }
        cli_dgram_log_begin(&c->log, "message_3 + OSCORE request 1");
        long rn = edhoc_transport_client_request(
            c->t, comb, (size_t)cn, c->resp, EDHOC_TRANSPORT_MAX_MESSAGE, client_left_ms(deadline));
        c->log.current = -1;
        if (rn < 0) {
            add_exchange_rows(run, &c->log, "message_3 + OSCORE request 1", c->msg, n3, NULL, NULL,
                              -1);
            edhoc_client_fail(run, edhoc_client_transport_status(rn), "combined request: %s",
                              rn == EDHOC_TRANSPORT_ERR_TIMEOUT
                                  ? "timeout, no response"
                                  : edhoc_transport_strerror((int)rn));
            goto comb_out;
        }
        struct coap_msg r;
        if (edhoc_coap_msg_parse(c->resp, (size_t)rn, &r)) {
            edhoc_client_fail(run, EDHOC_CLIENT_FAILURE,
                              "malformed response to the combined request");
            goto comb_out;
        }
        if (!edhoc_coap_msg_find_option(&r, COAP_OPT_OSCORE)) {
            add_exchange_rows(run, &c->log, "message_3 + OSCORE request 1", c->msg, n3, "error",
                              r.payload, (long)r.payload_len);
            /* An EDHOC error refuses message_3 (RFC 9668 Section 3.3.1);
             * anything else unprotected answers nothing we asked, whatever
             * its code (RFC 8613 Section 2). */
            if (r.payload_len && edhoc_message_is_error(r.payload, r.payload_len))
                peer_error(run, r.payload, r.payload_len, r.code, "the combined request");
            else {
                char why[300];
                cli_unprotected_answer_text(c->resp, (size_t)rn, why, sizeof why);
                edhoc_client_fail(run, EDHOC_CLIENT_OSCORE, "the combined request: %s", why);
            }
            goto comb_out;
        }
        add_exchange_rows(run, &c->log, "message_3 + OSCORE request 1", c->msg, n3,
                          "OSCORE response 1", NULL, -1);
        long un = oscore_unprotect_response(osc, &b, c->resp, (size_t)rn, plain,
                                            OSCORE_MAX_PLAINTEXT + 64);
        if (un < 0) {
            edhoc_client_fail(run, EDHOC_CLIENT_OSCORE,
                              "OSCORE response to the combined request rejected: %s",
                              oscore_strerror((int)un));
            goto comb_out;
        }
        client_trace_inner(false, plain, (size_t)un);
        struct edhoc_client_answer *a = &run->answers[run->n_answers++];
        snprintf(a->request, sizeof a->request, "%s", c->first_request_name);
        const uint8_t *pl;
        if (cli_coap_response_view(plain, (size_t)un, &a->code, &a->cf, &pl, &a->payload_len) ==
            0) {
            a->payload = malloc(a->payload_len ? a->payload_len : 1);
            if (a->payload && a->payload_len)
                memcpy(a->payload, pl, a->payload_len);
        }
        a->req_bytes = (size_t)cn;
        a->resp_bytes = (size_t)rn;
        a->attempts = 1;
        *combined_done = true;
        run->m3_acceptance = "oscore_response";
        ret = 0;
    comb_out:
        free(prot);
        free(comb);
        if (plain)
            edhoc_wipe(plain, OSCORE_MAX_PLAINTEXT + 64);
        free(plain);
        return ret;
    }

    uint8_t pre[EDHOC_MAX_CONN_ID + 1];
    long pl = 0;
    if (c->framing == EDHOC_FRAMING_A2) {
        size_t c_r_len = 0;
        const uint8_t *c_r = edhoc_session_peer_conn_id(s, &c_r_len);
        pl = c_r ? edhoc_coap_cid_encode(c_r, c_r_len, pre, sizeof pre) : -1;
        if (pl < 0) {
            edhoc_client_fail(run, EDHOC_CLIENT_INTERNAL, "cannot encode C_R");
            return -1;
        }
    }
    /* Bare-framed devices never answer nor acknowledge message_3: sent
     * Confirmable it would be retransmitted (read by such a device as a new
     * message_1) and would hold the first OSCORE request back (NSTART 1,
     * RFC 7252 4.7). So it goes Non-confirmable, with a short wait for an
     * EDHOC error the device may still send. */
    bool bare_no_reply = c->framing == EDHOC_FRAMING_BARE && !c->message_4;
    cli_dgram_log_begin(&c->log, "message_3");
    long rn = edhoc_post_as(c, pre, (size_t)pl, c->msg, (size_t)n3, deadline,
                            bare_no_reply ? 300 : 0, !bare_no_reply);
    c->log.current = -1;
    if (rn < 0) {
        add_exchange_rows(run, &c->log, "message_3", c->msg, n3, NULL, NULL, -1);
        if (bare_no_reply && rn == EDHOC_TRANSPORT_ERR_TIMEOUT) {
            /* Such devices never answer message_3, so nothing tells
             * whether it was accepted until an OSCORE response comes. */
            run->m3_acceptance = "unconfirmed";
            return 0;
        }
        edhoc_client_fail(run, edhoc_client_transport_status(rn), "message_3: %s",
                          rn == EDHOC_TRANSPORT_ERR_TIMEOUT ? "timeout, no response"
                                                            : edhoc_transport_strerror((int)rn));
        return -1;
    }
    uint8_t code;
    int cf;
    const uint8_t *p;
    size_t pll;
    if (cli_coap_response_view(c->resp, (size_t)rn, &code, &cf, &p, &pll)) {
        edhoc_client_fail(run, EDHOC_CLIENT_FAILURE, "malformed CoAP response to message_3");
        return -1;
    }
    if (code >> 5 != 2) {
        add_exchange_rows(run, &c->log, "message_3", c->msg, n3, "error", pll ? p : NULL,
                          pll ? (long)pll : -1);
        if (pll && edhoc_message_is_error(p, pll)) {
            peer_error(run, p, pll, code, "message_3");
        } else {
            char cn[48];
            edhoc_client_fail(run, EDHOC_CLIENT_FAILURE, "the responder answered message_3 with %s",
                              cli_coap_code_name(code, cn, sizeof cn));
        }
        return -1;
    }
    if (c->message_4) {
        add_exchange_rows(run, &c->log, "message_3", c->msg, n3, "message_4", p, (long)pll);
        if (!pll) {
            edhoc_client_fail(run, EDHOC_CLIENT_FAILURE,
                              "message_4 expected, the responder sent an empty 2.04");
            return -1;
        }
        rc = edhoc_initiator_process_message_4(s, p, pll, rx);
        if (rc) {
            edhoc_client_fail(run, edhoc_client_status_for_error(rc), "message_4: %s",
                              edhoc_strerror(rc));
            return -1;
        }
        run->m3_acceptance = "message_4";
    } else {
        add_exchange_rows(run, &c->log, "message_3", c->msg, n3, "(2.04 Changed)", pll ? p : NULL,
                          pll ? (long)pll : -1);
        run->m3_acceptance = "2.04";
    }
    return 0;
}
