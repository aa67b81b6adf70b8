/*
 * The initiator's flow: one handshake (edhoc_client.c) and what goes
 * around it (edhoc_client_run.c: the transport, framing auto, the OSCORE
 * requests, the run's rows and failures).
 */
#include "edhoc_client.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_coap.h"
#include "client_time.h"
#include "edhoc/blockwise.h"
#include "edhoc/cred.h"
#include "edhoc/oscore.h"
#include "edhoc/transport.h"
#include "edhoc_client_internal.h"
#include "oscore_exchange.h"

int edhoc_client_status_for_error(int err)
{
    switch (err) {
    case EDHOC_ERR_MAC:
    case EDHOC_ERR_SIGNATURE:
    case EDHOC_ERR_DECRYPT:
    case EDHOC_ERR_UNKNOWN_CREDENTIAL:
    case EDHOC_ERR_CREDENTIAL:
    case EDHOC_CRED_ERR_UNKNOWN:
    case EDHOC_CRED_ERR_UNTRUSTED:
    case EDHOC_CRED_ERR_EXPIRED:
    case EDHOC_CRED_ERR_KEY_TYPE:
    case EDHOC_CRED_ERR_CHAIN_LOOP:
    case EDHOC_CRED_ERR_CHAIN_DEPTH:
    case EDHOC_CRED_ERR_AMBIGUOUS: return EDHOC_CLIENT_VERIFY;
    case EDHOC_ERR_PEER_ERROR:
    case EDHOC_ERR_NO_COMMON_SUITE:
    case EDHOC_ERR_WRONG_SUITE: return EDHOC_CLIENT_PEER_ERROR;
    default: return EDHOC_CLIENT_FAILURE;
    }
}

int edhoc_client_status_for_open(int rc)
{
    return rc == EDHOC_TRANSPORT_ERR_RESOLVE || rc == EDHOC_TRANSPORT_ERR_UNREACHABLE
               ? EDHOC_CLIENT_TIMEOUT
           : rc == EDHOC_TRANSPORT_ERR_ARG ? EDHOC_CLIENT_USAGE
                                           : EDHOC_CLIENT_FAILURE;
}

bool edhoc_client_oscore_unavailable(int suite, char *why, size_t cap)
{
    const struct edhoc_suite *su = edhoc_suite_find(suite);
    if (!su || su->app_hash == EDHOC_COSE_SHA256 || su->app_hash == EDHOC_COSE_SHA384)
        return false;
    snprintf(why, cap,
             "no OSCORE context for suite %d: its application hash %s (RFC 9528 Section 3.6) "
             "has no HMAC-based HKDF, the only kind RFC 8613 Section 3.2.1 derives OSCORE keys "
             "with (RFC 9528 Appendix A.1 takes the OSCORE HKDF from the application hash)",
             suite, edhoc_crypto_alg_name(su->app_hash));
    return true;
}

void edhoc_client_run_clear_rows(struct edhoc_client_run *run)
{
    for (size_t i = 0; i < run->n_rows; i++) {
        free(run->rows[i].edhoc);
        run->rows[i].edhoc = NULL;
    }
    run->n_rows = 0;
}

void edhoc_client_on_trace(void *ctx, const char *name, const uint8_t *v, size_t len)
{
    struct edhoc_client_run *run = ctx;
    if (run->n_trace >= EDHOC_CLIENT_MAX_TRACE)
        return;
    struct edhoc_client_trace_item *t = &run->trace[run->n_trace];
    t->v = malloc(len ? len : 1);
    if (!t->v)
        return;
    memcpy(t->v, v, len);
    t->len = len;
    snprintf(t->name, sizeof t->name, "%s", name);
    run->n_trace++;
}

/* edhoc: the message's bytes (edhoc_bytes long; NULL with -1), kept for
 * the JSON report. */
void edhoc_client_add_row(struct edhoc_client_run *run, const char *name, char dir,
                          const uint8_t *edhoc, long edhoc_bytes, size_t coap_bytes,
                          unsigned datagrams, const struct cli_exchange *e)
{
    if (run->n_rows >= EDHOC_CLIENT_MAX_ROWS)
        return;
    struct edhoc_client_row *r = &run->rows[run->n_rows++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->dir = dir;
    r->edhoc_bytes = edhoc && edhoc_bytes >= 0 ? edhoc_bytes : -1;
    if (r->edhoc_bytes >= 0) {
        r->edhoc = malloc(edhoc_bytes ? (size_t)edhoc_bytes : 1);
        if (r->edhoc)
            memcpy(r->edhoc, edhoc, (size_t)edhoc_bytes);
    }
    r->coap_bytes = coap_bytes;
    r->datagrams = datagrams;
    if (e) {
        r->lay = dir == 'I' ? e->sent_layers : e->received_layers;
        r->ipv6 = e->ipv6;
    }
    if (edhoc_bytes > 0)
        r->lay.edhoc = (size_t)edhoc_bytes;
}

void edhoc_client_fail(struct edhoc_client_run *run, int exit_code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run->failure, sizeof run->failure, fmt, ap);
    va_end(ap);
    run->exit_code = exit_code;
}

int edhoc_client_transport_status(long rc)
{
    return rc == EDHOC_TRANSPORT_ERR_TIMEOUT || rc == EDHOC_TRANSPORT_ERR_UNREACHABLE
               ? EDHOC_CLIENT_TIMEOUT
               : EDHOC_CLIENT_FAILURE;
}

size_t edhoc_client_request_cap(void)
{
    return EDHOC_BW_DEFAULT_MAX_BODY + EDHOC_TRANSPORT_MAX_MESSAGE;
}

int edhoc_client_open(struct edhoc_client *c)
{
    c->msg = malloc(EDHOC_MAX_MESSAGE);
    /* Requests and responses may be large (inner block-wise). */
    c->req = malloc(edhoc_client_request_cap());
    c->resp = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    c->buf = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    if (!c->msg || !c->req || !c->resp || !c->buf)
        return EDHOC_TRANSPORT_ERR_BUFFER;
    struct edhoc_transport_config tcfg = {.block_size = c->block_size};
    return edhoc_transport_client_open(&c->t, c->host, c->port, &tcfg);
}

void edhoc_client_close(struct edhoc_client *c)
{
    edhoc_transport_free(c->t);
    c->t = NULL;
    free(c->msg);
    free(c->req);
    free(c->resp);
    free(c->buf);
    c->msg = c->req = c->resp = c->buf = NULL;
}

int edhoc_client_connect(struct edhoc_client *c, struct edhoc_client_run *run,
                         struct edhoc_session *s, struct edhoc_received *rx,
                         struct oscore_context *osc, long timeout_ms, bool *combined_done)
{
    run->t0 = client_now_ns();
    run->t_start = run->t0;
    /* The timeout bounds the whole run, both framings of auto included. */
    uint64_t deadline = run->t0 + (uint64_t)timeout_ms * 1000000ull;
    if (c->framing_auto)
        c->message_1_deadline = run->t0 + (uint64_t)timeout_ms * 500000ull;
    run->suite = -1;
    int rc = edhoc_client_handshake(c, run, s, rx, osc, deadline, combined_done);
    c->message_1_deadline = 0;
    if (rc == 0 || !c->framing_auto || run->got_message_2)
        return rc;
    /* A.2 got no message_2; try the bare framing of older devices, and
     * report which one the device speaks. */
    char why[400];
    snprintf(why, sizeof why, "%s", run->failure);
    uint64_t t_start = run->t_start;
    edhoc_client_run_clear_rows(run);
    memset(run, 0, sizeof *run);
    run->t_start = t_start;
    snprintf(run->auto_a2_failure, sizeof run->auto_a2_failure, "%s", why);
    c->log.n = 0;
    edhoc_session_wipe(s);
    c->framing = EDHOC_FRAMING_BARE;
    /* The A.2 POST may still be unacknowledged, and libcoap holds a new
     * confirmable request back until it is (NSTART 1, RFC 7252 Section
     * 4.7), retransmitting it meanwhile: the bare message_1 would never
     * leave. libcoap 4.3.1 exports no call that cancels one exchange, so
     * the session goes, and with it the A.2 one. */
    edhoc_transport_free(c->t);
    c->t = NULL;
    struct edhoc_transport_config tcfg = {.block_size = c->block_size};
    int orc = edhoc_transport_client_open(&c->t, c->host, c->port, &tcfg);
    run->t0 = client_now_ns();
    run->suite = -1;
    if (orc) {
        edhoc_client_fail(run, edhoc_client_status_for_open(orc), "%s: %s", c->host,
                          edhoc_transport_strerror(orc));
        return -1;
    }
    return edhoc_client_handshake(c, run, s, rx, osc, deadline, combined_done);
}

int edhoc_client_oscore_request(struct edhoc_client *c, struct edhoc_client_run *run,
                                struct oscore_context *osc, size_t i, const char *request,
                                const uint8_t *req, size_t req_len, uint8_t *plain, size_t cap,
                                uint64_t deadline)
{
    char name[40];
    snprintf(name, sizeof name, "OSCORE request %zu", i + 1);
    struct cli_oscore_result res;
    /* Bodies above the block size go in inner Block1/Block2 blocks (RFC
     * 8613 Section 4.1.3.4.1). */
    struct cli_oscore_xfer x = {.block_size = c->block_size ? c->block_size : 1024,
                                .max_body = EDHOC_BW_DEFAULT_MAX_BODY};
    int orc = cli_oscore_exchange_bw(c->t, osc, req, req_len, plain, cap, client_left_ms(deadline),
                                     &c->log, name, &x, &res);
    /* One row pair per attempt (an Echo challenge makes two). */
    size_t first = c->log.n >= (size_t)res.attempts ? c->log.n - (size_t)res.attempts : 0;
    for (size_t k = first; k < c->log.n; k++) {
        const struct cli_exchange *e = &c->log.ex[k];
        char rname[48];
        snprintf(rname, sizeof rname, "OSCORE response %zu%s", i + 1,
                 k + 1 < c->log.n ? " (Echo)" : "");
        edhoc_client_add_row(run, e->name, 'I', NULL, -1, e->bytes_sent, e->dgrams_sent, e);
        if (e->dgrams_received)
            edhoc_client_add_row(run, rname, 'R', NULL, -1, e->bytes_received, e->dgrams_received,
                                 e);
        run->exchanges++;
    }
    if (orc) {
        if (res.transport_err)
            edhoc_client_fail(run, edhoc_client_transport_status(res.transport_err), "%s: %s",
                              request,
                              res.transport_err == EDHOC_TRANSPORT_ERR_TIMEOUT
                                  ? "timeout, no response"
                                  : edhoc_transport_strerror(res.transport_err));
        else if (res.unprotected_error) {
            /* Not the answer, whatever its code: an OSCORE error of RFC
             * 8613 Section 8.2 or a forgery. */
            char why[300];
            cli_unprotected_answer_text(res.response_len > 0 ? plain : NULL,
                                        res.response_len > 0 ? (size_t)res.response_len : 0, why,
                                        sizeof why);
            edhoc_client_fail(run, EDHOC_CLIENT_OSCORE, "%s: %s", request, why);
        } else
            edhoc_client_fail(run, EDHOC_CLIENT_OSCORE, "%s: OSCORE: %s", request,
                              oscore_strerror(res.oscore_err));
        return -1;
    }
    struct edhoc_client_answer *a = &run->answers[run->n_answers++];
    snprintf(a->request, sizeof a->request, "%s", request);
    const uint8_t *pl;
    if (cli_coap_response_view(plain, (size_t)res.response_len, &a->code, &a->cf, &pl,
                               &a->payload_len) == 0) {
        a->payload = malloc(a->payload_len ? a->payload_len : 1);
        if (a->payload && a->payload_len)
            memcpy(a->payload, pl, a->payload_len);
    }
    a->req_bytes = res.request_bytes;
    a->resp_bytes = res.response_bytes;
    a->attempts = res.attempts;
    /* Protected under the new context: the responder derived it, so it
     * accepted message_3 (RFC 9528 Section 5.4.2). */
    run->m3_acceptance = "oscore_response";
    return 0;
}

void edhoc_client_check_answers(struct edhoc_client_run *run)
{
    for (size_t i = 0; !run->exit_code && i < run->n_answers; i++) {
        const struct edhoc_client_answer *a = &run->answers[i];
        if ((a->code >> 5) >= 4) {
            char cn[48];
            edhoc_client_fail(run, EDHOC_CLIENT_FAILURE, "%s: the server answered %s", a->request,
                              cli_coap_code_name(a->code, cn, sizeof cn));
        }
    }
}

void edhoc_client_run_free(struct edhoc_client_run *run)
{
    edhoc_client_run_clear_rows(run);
    edhoc_wipe(&run->osc, sizeof run->osc);
    for (size_t i = 0; i < run->n_answers; i++)
        free(run->answers[i].payload);
    run->n_answers = 0;
    for (size_t i = 0; i < run->n_trace; i++) {
        edhoc_wipe(run->trace[i].v, run->trace[i].len);
        free(run->trace[i].v);
    }
    run->n_trace = 0;
}
