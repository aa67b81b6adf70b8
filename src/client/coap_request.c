/*
 * The coap command's exchange (coap_request.h): the request, Echo,
 * Appendix B.2, Observe and its deregistration, --repeat.
 */
#include "coap_request.h"
#include "client_trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_coap.h"
#include "client_time.h"
#include "edhoc_client.h"
#include "edhoc/blockwise.h"
#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/transport.h"
#include "oscore_exchange.h"

__attribute__((format(printf, 2, 3))) static void notice(const struct client_coap_run *r,
                                                         const char *fmt, ...)
{
    if (!r->h.notice)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->h.notice(r->h.user, line);
}

static int interrupted(const struct client_coap_run *r)
{
    return r->h.interrupted ? r->h.interrupted(r->h.user) : 0;
}

static int deliver(struct client_coap_run *r, const struct client_coap_response *ri,
                   const uint8_t *pl, size_t pll)
{
    int rc = r->h.response ? r->h.response(r->h.user, ri, pl, pll) : 0;
    if (rc)
        r->error = "output_write";
    return rc;
}

static void log_sent(void *user, const struct oscore_binding *b)
{
    struct client_seq_log *log = user;
    uint64_t piv = 0;
    for (size_t i = 0; i < b->piv_len; i++)
        piv = piv << 8 | b->piv[i];
    if (log->n < sizeof log->first / sizeof log->first[0])
        log->first[log->n++] = piv;
    log->total++;
}

static long protect_logged(struct oscore_context *ctx, struct client_seq_log *log,
                           const uint8_t *req, size_t len, uint8_t *out, size_t cap,
                           struct oscore_binding *b)
{
    long n = oscore_protect_request(ctx, req, len, out, cap, b);
    if (n >= 0) {
        log_sent(log, b);
        client_trace_inner(true, req, len);
    }
    return n;
}

/* The request with --token's token or a fresh one (copied to tok, *tl). */
static int send_request(const struct client_coap_run *r, struct edhoc_transport *t,
                        const uint8_t *msg, size_t len, uint8_t tok[8], size_t *tl)
{
    if (!r->p.has_token)
        return edhoc_transport_client_send(t, msg, len, !r->p.non, tok, tl);
    memcpy(tok, r->p.token, r->p.token_len);
    *tl = r->p.token_len;
    return edhoc_transport_client_send_token(t, msg, len, !r->p.non, r->p.token, r->p.token_len);
}

/* The inner block-wise settings and the token of the OSCORE requests. */
static struct cli_oscore_xfer request_xfer(struct client_coap_run *r)
{
    struct cli_oscore_xfer x = {.block_size = r->p.block_size ? r->p.block_size : 1024,
                                .max_body = r->p.max_body,
                                .sent = log_sent,
                                .user = &r->seqs,
                                .has_token = r->p.has_token,
                                .token_len = r->p.token_len};
    memcpy(x.token, r->p.token, sizeof x.token);
    return x;
}

/* The response carries an Observe option (outer: under OSCORE it is
 * also outer, RFC 8613 Section 4.1.3.5.2). */
static bool has_observe(const uint8_t *msg, size_t len)
{
    struct coap_msg m;
    return edhoc_coap_msg_parse(msg, len, &m) == 0 &&
           edhoc_coap_msg_find_option(&m, COAP_OPT_OBSERVE) != NULL;
}

/* "the peer answered without OSCORE" with what it said, and which RFC
 * sentence makes it no answer. */
static void report_unprotected(const struct client_coap_run *r, const uint8_t *msg, size_t len,
                               uint8_t code)
{
    char text[400];
    cli_unprotected_answer_text(msg, len, text, sizeof text);
    notice(r, "%s", text);
    if (code >= COAP_CODE(4, 0) && code <= COAP_CODE(4, 2))
        notice(r, "RFC 8613 Sections 7.4 and 8.2: the server's OSCORE layer "
                  "refused the request (its error responses are not protected); if the "
                  "context is used outside this state directory, continue above its "
                  "numbers with --seq N or --oscore-context CONF,SEQFILE");
    else
        notice(r, "a response to an OSCORE request is protected (RFC 8613 "
                  "Sections 2 and 8.4): this one proves nothing");
}

/* The word for a transport failure, and its exit code. */
static int transport_failure(struct client_coap_run *r, long err)
{
    bool timeout = err == EDHOC_TRANSPORT_ERR_TIMEOUT;
    bool unreachable = err == EDHOC_TRANSPORT_ERR_UNREACHABLE;
    notice(r, "%s (%s)", timeout ? "timeout: no response" : "no response",
           edhoc_transport_strerror((int)err));
    r->error = timeout ? "timeout" : unreachable ? "unreachable" : "no_response";
    return timeout || unreachable ? EDHOC_CLIENT_TIMEOUT : EDHOC_CLIENT_FAILURE;
}

/* wait_response's answer when SIGINT/SIGTERM came first. */
#define WAIT_INTERRUPTED (-1)

/* The next message for the token, until deadline; with interruptible, in
 * short slices so that Ctrl-C is seen while waiting for a notification.
 * Returns its length, an EDHOC_TRANSPORT_ERR_*, or WAIT_INTERRUPTED. */
static long wait_response(const struct client_coap_run *r, struct edhoc_transport *t,
                          const uint8_t *tok, size_t tl, uint8_t *out, size_t cap,
                          uint64_t deadline, bool interruptible)
{
    for (;;) {
        int left = client_left_ms(deadline);
        int slice = interruptible && left > 200 ? 200 : left;
        long rn = edhoc_transport_client_wait(t, tok, tl, out, cap, slice);
        if (rn != EDHOC_TRANSPORT_ERR_TIMEOUT || slice == left)
            return rn;
        if (interrupted(r))
            return WAIT_INTERRUPTED;
    }
}

/* End an observation with a new request (RFC 7641 Section 3.6): the
 * registration's token and Uri, Observe = 1, under OSCORE a fresh Partial
 * IV (RFC 8613 Section 4.1.3.5), then wait for its answer, skipping
 * notifications still in flight. Returns 0 when the server confirmed it,
 * -1 otherwise (later notifications then get a Reset, which ends the
 * observation too). */
static int deregister(struct client_coap_run *r, struct edhoc_transport *t, const uint8_t *tok,
                      size_t tl, uint64_t deadline)
{
    struct oscore_context *ctx = r->follow.active;
    long n = cli_coap_build_request(r->p.code, r->p.path, r->p.query, r->p.content_format, NULL, 0,
                                    1, r->req, EDHOC_TRANSPORT_MAX_MESSAGE);
    n = cli_coap_add_options(r->req, n, EDHOC_TRANSPORT_MAX_MESSAGE, r->p.accept, r->p.extra,
                             r->p.n_extra);
    if (n < 0)
        return -1;
    struct oscore_binding b;
    const uint8_t *msg = r->req;
    if (ctx) {
        n = protect_logged(ctx, &r->seqs, r->req, (size_t)n, r->prot, EDHOC_TRANSPORT_MAX_MESSAGE,
                           &b);
        if (n < 0) {
            notice(r, "cannot protect the deregistration: %s", oscore_strerror((int)n));
            return -1;
        }
        msg = r->prot;
    }
    /* Drop what is queued: notifications that came before it. */
    while (edhoc_transport_client_wait(t, tok, tl, r->resp, EDHOC_TRANSPORT_MAX_MESSAGE, 0) > 0)
        ;
    if (edhoc_transport_client_send_on(t, msg, (size_t)n, !r->p.non, tok, tl))
        return -1;
    uint64_t end = client_now_ns() + 5000000000ull;
    if (end > deadline + 2000000000ull)
        end = deadline + 2000000000ull;
    for (;;) {
        uint64_t now = client_now_ns();
        if (now >= end)
            break;
        long rn = edhoc_transport_client_wait(t, tok, tl, r->resp, EDHOC_TRANSPORT_MAX_MESSAGE,
                                              (int)((end - now) / 1000000));
        if (rn < 0)
            break;
        const uint8_t *shown = r->resp;
        size_t shown_len = (size_t)rn;
        if (ctx) {
            long un = oscore_unprotect_response(ctx, &b, r->resp, (size_t)rn, r->plain,
                                                EDHOC_TRANSPORT_MAX_MESSAGE);
            if (un < 0)
                continue; /* a notification of the registration, or not ours */
            client_trace_inner(false, r->plain, (size_t)un);
            shown = r->plain;
            shown_len = (size_t)un;
        }
        struct coap_msg m;
        if (edhoc_coap_msg_parse(shown, shown_len, &m))
            continue;
        if (edhoc_coap_msg_find_option(&m, COAP_OPT_OBSERVE))
            continue; /* still a notification */
        return (m.code >> 5) == 2 ? 0 : -1;
    }
    if (!r->p.quiet)
        notice(r, "the server did not confirm the deregistration; further "
                  "notifications are answered with Reset");
    return -1;
}

static void hex_to(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
    out[2 * n] = '\0';
}

/* Step 3 on response #1 (resp) to the request bound in b. Returns 0 (f->active
 * is then the new context) or an OSCORE_ERR_* (reported). */
static int b2_step3(struct client_coap_run *r, struct oscore_binding *b, const uint8_t *resp,
                    size_t rn, uint8_t *plain, size_t cap)
{
    struct client_b2_follow *f = &r->follow;
    size_t id1_len = 0;
    const uint8_t *id1 = oscore_context_id_context(f->active, &id1_len);
    long n = oscore_b2_client_response1(&f->st, edhoc_crypto_default(), f->cfg, f->active, b, resp,
                                        rn, plain, cap, f->next);
    if (n < 0) {
        notice(r, "OSCORE: the server's RFC 8613 Appendix B.2 response #1 was refused: %s",
               oscore_strerror((int)n));
        return (int)n;
    }
    edhoc_wipe(plain, (size_t)n);
    f->has_id1 = id1 != NULL;
    f->id1_len = id1_len;
    if (id1_len)
        memcpy(f->id1, id1, id1_len);
    f->started = true;
    f->active = f->next;
    if (r->p.verbose) {
        char r2[2 * OSCORE_MAX_ID_CONTEXT + 1], i1[2 * OSCORE_MAX_ID_CONTEXT + 1],
            i3[2 * OSCORE_MAX_ID_CONTEXT + 1];
        hex_to(f->st.r2, f->st.r2_len, r2);
        hex_to(f->id1, f->id1_len, i1);
        hex_to(f->st.id_context, f->st.id_context_len, i3);
        notice(r,
               "the server has no valid context and starts RFC 8613 Appendix "
               "B.2: its 4.01 carries R2 = %s and verified under ID Context R2 || ID1 = %s%s; "
               "the request goes again under ID Context R2 || R3 = %s (new keys, for this run "
               "only)",
               r2, r2, f->has_id1 ? i1 : "", i3);
    }
    return 0;
}

/* After the server answered with a response #1 that the exchange could
 * not keep: a GET of the same URI (no body, so nothing happens if the
 * server does perform it) as request #1 of a new run, and step 3 on its
 * answer. Returns 0 (f->active is the new context), 1 (the answer was no
 * response #1: the server has a valid context after all) or an exit
 * code (reported). */
static int b2_probe(struct client_coap_run *r, struct edhoc_transport *t, uint64_t deadline)
{
    size_t cap = EDHOC_TRANSPORT_MAX_MESSAGE;
    uint8_t *req = malloc(cap), *prot = malloc(cap), *resp = malloc(cap), *plain = malloc(cap);
    int rc = EDHOC_CLIENT_INTERNAL;
    if (!req || !prot || !resp || !plain)
        goto out;
    long n =
        cli_coap_build_request(COAP_CODE_GET, r->p.path, r->p.query, -1, NULL, 0, -1, req, cap);
    struct oscore_binding b;
    long pn = n < 0 ? OSCORE_ERR_MALFORMED
                    : protect_logged(r->follow.active, &r->seqs, req, (size_t)n, prot, cap, &b);
    if (pn < 0) {
        notice(r, "OSCORE: cannot protect request #1 of RFC 8613 Appendix B.2: %s",
               oscore_strerror((int)pn));
        r->error = "oscore";
        rc = EDHOC_CLIENT_OSCORE;
        goto out;
    }
    long rn = cli_client_request(t, prot, (size_t)pn, r->p.has_token ? r->p.token : NULL,
                                 r->p.token_len, resp, cap, client_left_ms(deadline));
    if (rn < 0) {
        rc = transport_failure(r, rn);
        goto out;
    }
    if (!oscore_b2_is_response1(resp, (size_t)rn)) {
        rc = 1;
        goto out;
    }
    if (b2_step3(r, &b, resp, (size_t)rn, plain, cap)) {
        r->error = "oscore";
        rc = EDHOC_CLIENT_OSCORE;
        goto out;
    }
    rc = 0;
out:
    free(req);
    free(prot);
    free(resp);
    if (plain)
        edhoc_wipe(plain, cap);
    free(plain);
    return rc;
}

/* A request under OSCORE with a body of any size (inner block-wise) and
 * its response, delivered. Returns the exit code. */
static int oscore_request(struct client_coap_run *r, struct edhoc_transport *t)
{
    struct client_b2_follow *f = &r->follow;
    uint8_t *out = r->plain;
    size_t cap = r->cap;
    struct cli_oscore_xfer x = request_xfer(r);
    struct cli_oscore_result res;
    uint64_t deadline = client_now_ns() + (uint64_t)r->p.timeout_ms * 1000000ull;
    int xr = cli_oscore_exchange_bw(t, f->active, r->req, (size_t)r->n_req, out, cap,
                                    (int)r->p.timeout_ms, NULL, NULL, &x, &res);
    if (xr && res.oscore_err == OSCORE_ERR_KID_CONTEXT && !f->started) {
        /* The answer was response #1 of Appendix B.2 (oscore.h): start a
         * run of our own, then the request again as request #2. */
        int pr = b2_probe(r, t, deadline);
        if (pr > 1)
            return pr;
        xr = cli_oscore_exchange_bw(t, f->active, r->req, (size_t)r->n_req, out, cap,
                                    client_left_ms(deadline), NULL, NULL, &x, &res);
        if (xr == 0 && f->started)
            f->completed = true;
    }
    if (xr && res.oscore_err == OSCORE_ERR_KID_CONTEXT && f->started) {
        /* Appendix B.2.1: runs that do not converge are not followed. */
        notice(r, "the server started RFC 8613 Appendix B.2 again after "
                  "request #2; not following it twice");
        r->error = "oscore";
        return EDHOC_CLIENT_OSCORE;
    }
    struct client_coap_response ri = {
        .oscore = true,
        .bytes = (long)res.response_bytes,
        .piv = -1,
        .echo = res.echo_piv >= 0,
        .echo_piv = res.echo_piv,
        .block1_blocks = res.block1_blocks,
        .block2_blocks = res.block2_blocks,
    };
    const uint8_t *pl;
    size_t pll;
    if (xr && res.unprotected_error && res.response_len > 0) {
        if (!cli_coap_response_view(out, (size_t)res.response_len, &ri.code, &ri.content_format,
                                    &pl, &pll))
            deliver(r, &ri, pl, pll);
        report_unprotected(r, out, (size_t)res.response_len, res.unprotected_code);
        r->error = "unprotected_response";
        return EDHOC_CLIENT_OSCORE;
    }
    if (xr) {
        if (res.transport_err)
            return transport_failure(r, res.transport_err);
        if (res.bw_err) {
            /* Never a part of the body as if it were the answer. */
            notice(r, "block-wise transfer failed after %u+%u blocks: %s", res.block1_blocks,
                   res.block2_blocks, edhoc_bw_strerror(res.bw_err));
            r->error = "blockwise";
            return EDHOC_CLIENT_FAILURE;
        }
        notice(r, "OSCORE: %s", oscore_strerror(res.oscore_err));
        r->error = "oscore";
        return EDHOC_CLIENT_OSCORE;
    }
    if (cli_coap_response_view(out, (size_t)res.response_len, &ri.code, &ri.content_format, &pl,
                               &pll)) {
        notice(r, "malformed response");
        r->error = "malformed_response";
        return EDHOC_CLIENT_FAILURE;
    }
    ri.protected_resp = true;
    ri.piv = res.response_piv;
    ri.output = r->p.output;
    if (deliver(r, &ri, pl, pll))
        return EDHOC_CLIENT_INPUT;
    if (ri.code == COAP_CODE(2, 31)) {
        notice(r, "the server asked for more blocks than the body has");
        r->error = "blockwise";
        return EDHOC_CLIENT_FAILURE;
    }
    return (ri.code >> 5) >= 4 ? EDHOC_CLIENT_FAILURE : EDHOC_CLIENT_OK;
}

int client_coap_prepare(struct client_coap_run *r)
{
    r->deregistered = 1;
    r->follow.active = r->ctx;
    /* A whole message: the body and room for header and options. */
    r->cap = r->p.max_body + EDHOC_TRANSPORT_MAX_MESSAGE;
    r->req = malloc(r->cap);
    r->prot = malloc(r->cap);
    r->resp = malloc(r->cap);
    r->plain = malloc(r->cap);
    if (!r->req || !r->prot || !r->resp || !r->plain)
        return EDHOC_CLIENT_INTERNAL;
    long n =
        cli_coap_build_request(r->p.code, r->p.path, r->p.query, r->p.content_format, r->p.body,
                               r->p.body_len, r->p.observe ? 0 : -1, r->req, r->cap);
    n = cli_coap_add_options(r->req, n, r->cap, r->p.accept, r->p.extra, r->p.n_extra);
    if (n < 0) {
        notice(r, "cannot build the request (too many options?)");
        return EDHOC_CLIENT_USAGE;
    }
    r->send_msg = r->req;
    r->n_req = n;
    r->n_send = n;
    /* Under OSCORE a single request goes through the block-wise exchange
     * (inner Block1/Block2, Echo retry); an observation is one message. */
    if (r->ctx && r->p.observe) {
        long pn = protect_logged(r->ctx, &r->seqs, r->req, (size_t)n, r->prot, r->cap, &r->b);
        if (pn < 0) {
            notice(r, "OSCORE: cannot protect the request: %s", oscore_strerror((int)pn));
            return EDHOC_CLIENT_OSCORE;
        }
        r->send_msg = r->prot;
        r->n_send = pn;
    }
    return 0;
}

/* The Partial IV of a message's OSCORE option, -1: none. */
static long message_piv(const uint8_t *msg, size_t len)
{
    struct oscore_option oo;
    long piv = -1;
    if (oscore_message_option(msg, len, &oo) == 0 && oo.piv) {
        piv = 0;
        for (size_t q = 0; q < oo.piv_len; q++)
            piv = piv << 8 | oo.piv[q];
    }
    return piv;
}

/* The Echo option of a 4.01 (at most 40 bytes, RFC 9175 Section 2.2.1)
 * copied into ev: its length, or -1 when the message is no such challenge. */
static long echo_challenge(const uint8_t *msg, size_t len, uint8_t ev[40])
{
    struct coap_msg inner;
    const struct coap_option *echo = NULL;
    if (edhoc_coap_msg_parse(msg, len, &inner) || inner.code != COAP_CODE_UNAUTHORIZED ||
        !(echo = edhoc_coap_msg_find_option(&inner, COAP_OPT_ECHO)) || echo->len > 40)
        return -1;
    memcpy(ev, echo->value, echo->len);
    return (long)echo->len;
}

/* The request and its responses (one, or the notifications of an
 * observation), then the deregistration. Returns the exit code. */
static int single_exchange(struct client_coap_run *r, struct edhoc_transport *t, uint64_t deadline,
                           bool long_run)
{
    uint8_t tok[8];
    size_t tl = 0;
    struct client_b2_follow *follow = &r->follow;
    size_t msg_cap = r->cap;
    int exit_code = EDHOC_CLIENT_OK;
    int rc = send_request(r, t, r->send_msg, (size_t)r->n_send, tok, &tl);
    if (rc) {
        notice(r, "cannot send: %s", edhoc_transport_strerror(rc));
        r->error = "send";
        return EDHOC_CLIENT_FAILURE;
    }
    long want = r->p.observe ? r->p.observe : 1;
    bool peer_lost = false; /* no point in deregistering */
    bool echo_done = false;
    long echo_piv = -1;
    for (long k = 0; k < want; k++) {
        long rn = wait_response(r, t, tok, tl, r->resp, msg_cap, deadline, long_run);
        if (rn == WAIT_INTERRUPTED)
            break;
        if (rn < 0) {
            exit_code = transport_failure(r, rn);
            peer_lost = true;
            break;
        }
        long piv = message_piv(r->resp, (size_t)rn); /* the response's own Partial IV */
        const uint8_t *shown = r->resp;
        size_t shown_len = (size_t)rn;
        bool protected_resp = false;
        if (r->ctx) {
            struct coap_msg outer;
            if (!edhoc_coap_msg_parse(r->resp, (size_t)rn, &outer) &&
                edhoc_coap_msg_find_option(&outer, COAP_OPT_OSCORE)) {
                long un = oscore_unprotect_response(follow->active, &r->b, r->resp, (size_t)rn,
                                                    r->plain, msg_cap);
                if (un == OSCORE_ERR_KID_CONTEXT && k == 0 && !follow->started) {
                    /* Response #1 of RFC 8613 Appendix B.2: the request
                     * again, as request #2 under the new ID Context. */
                    if (b2_step3(r, &r->b, r->resp, (size_t)rn, r->plain, msg_cap)) {
                        r->error = "oscore";
                        exit_code = EDHOC_CLIENT_OSCORE;
                        peer_lost = true;
                        break;
                    }
                    edhoc_transport_client_forget(t, tok, tl);
                    long pn = protect_logged(follow->active, &r->seqs, r->req, (size_t)r->n_req,
                                             r->prot, msg_cap, &r->b);
                    rc = pn < 0 ? EDHOC_TRANSPORT_ERR_MALFORMED
                                : send_request(r, t, r->prot, (size_t)pn, tok, &tl);
                    if (rc) {
                        notice(r, "cannot send request #2 of RFC 8613 Appendix B.2: %s",
                               pn < 0 ? oscore_strerror((int)pn) : edhoc_transport_strerror(rc));
                        r->error = pn < 0 ? "oscore" : "send";
                        exit_code = pn < 0 ? EDHOC_CLIENT_OSCORE : EDHOC_CLIENT_FAILURE;
                        peer_lost = true;
                        break;
                    }
                    k--;
                    continue;
                }
                if (un < 0) {
                    notice(r, "OSCORE: response rejected: %s", oscore_strerror((int)un));
                    r->error = "oscore";
                    exit_code = EDHOC_CLIENT_OSCORE;
                    peer_lost = true;
                    break;
                }
                client_trace_inner(false, r->plain, (size_t)un);
                shown = r->plain;
                shown_len = (size_t)un;
                protected_resp = true;
                if (follow->started)
                    follow->completed = true;
            }
        }
        uint8_t ev[40];
        long el = -1;
        if (protected_resp && k == 0 && !echo_done &&
            (el = echo_challenge(shown, shown_len, ev)) >= 0) {
            /* The server lost its replay window (restart): repeat the
             * request with its Echo value (RFC 8613 Appendix B.1.2). */
            echo_piv = piv;
            echo_done = true;
            edhoc_transport_client_forget(t, tok, tl);
            long an =
                cli_coap_with_echo(r->req, (size_t)r->n_req, ev, (size_t)el, r->plain, msg_cap);
            long pn = an < 0 ? OSCORE_ERR_TOO_LARGE
                             : protect_logged(follow->active, &r->seqs, r->plain, (size_t)an,
                                              r->prot, msg_cap, &r->b);
            if (pn < 0) {
                notice(r, "OSCORE: cannot protect the retry: %s", oscore_strerror((int)pn));
                r->error = "oscore";
                exit_code = EDHOC_CLIENT_OSCORE;
                peer_lost = true;
                break;
            }
            rc = send_request(r, t, r->prot, (size_t)pn, tok, &tl);
            if (rc) {
                notice(r, "cannot send: %s", edhoc_transport_strerror(rc));
                r->error = "send";
                exit_code = EDHOC_CLIENT_FAILURE;
                peer_lost = true;
                break;
            }
            k--;
            continue;
        }
        if (!r->ctx && k == 0 && !echo_done && (el = echo_challenge(shown, shown_len, ev)) >= 0) {
            /* The server checks that we receive at our address before it
             * answers with more than a few times what it got (RFC 9175
             * Section 2.4 item 3); "the client SHOULD resend the original
             * request with the addition of an Echo option" (Section 2.3). */
            echo_done = true;
            edhoc_transport_client_forget(t, tok, tl);
            long an = cli_coap_with_echo(r->send_msg, (size_t)r->n_send, ev, (size_t)el, r->prot,
                                         msg_cap);
            rc = an < 0 ? EDHOC_TRANSPORT_ERR_MALFORMED
                        : send_request(r, t, r->prot, (size_t)an, tok, &tl);
            if (rc) {
                notice(r, "cannot send: %s", edhoc_transport_strerror(rc));
                r->error = "send";
                exit_code = EDHOC_CLIENT_FAILURE;
                peer_lost = true;
                break;
            }
            k--;
            continue;
        }
        struct client_coap_response ri = {
            .oscore = r->ctx != NULL,
            .protected_resp = protected_resp,
            .bytes = rn,
            .piv = piv,
            .echo = echo_done,
            .echo_piv = echo_done ? echo_piv : -1,
            .block1_blocks = -1,
            .block2_blocks = -1,
            .output = r->p.output,
        };
        const uint8_t *pl;
        size_t pll;
        if (cli_coap_response_view(shown, shown_len, &ri.code, &ri.content_format, &pl, &pll)) {
            notice(r, "malformed response");
            r->error = "malformed_response";
            exit_code = EDHOC_CLIENT_FAILURE;
            peer_lost = true;
            break;
        }
        if (deliver(r, &ri, pl, pll)) {
            exit_code = EDHOC_CLIENT_INPUT;
            break;
        }
        if (r->ctx && !protected_resp) {
            /* Not the answer, whatever its code: a response to an OSCORE
             * request is protected (RFC 8613 Section 8.4); only the OSCORE
             * layer's own errors come unprotected (Sections 7.4, 8.2). */
            report_unprotected(r, r->resp, (size_t)rn, ri.code);
            r->error = "unprotected_response";
            exit_code = EDHOC_CLIENT_OSCORE;
            break;
        }
        if ((ri.code >> 5) >= 4) {
            exit_code = EDHOC_CLIENT_FAILURE;
            break;
        }
        if (r->p.observe && k == 0 && !has_observe(r->resp, (size_t)rn)) {
            /* RFC 7641 Section 3.1: "If the response does not include an
             * Observe Option, the server has not added the client to the
             * list of observers": the answer is the resource's state, and
             * there is nothing to wait for or to deregister. */
            if (!r->p.quiet)
                notice(r, "not registered as an observer: the response "
                          "has no Observe option (RFC 7641 Section 3.1)");
            peer_lost = true; /* no observation to end */
            break;
        }
        if (r->p.observe && r->h.progress)
            r->h.progress(r->h.user, "notifications", k + 1, want);
    }
    /* An observation ends with a deregistration (RFC 7641 Section 3.6),
     * Ctrl-C included, unless the server is gone or cannot be talked to. */
    if (r->p.observe && !peer_lost)
        r->deregistered = deregister(r, t, tok, tl, deadline);
    edhoc_transport_client_forget(t, tok, tl);
    return exit_code;
}

int client_coap_exchange(struct client_coap_run *r, struct edhoc_transport *t)
{
    uint64_t deadline = client_now_ns() + (uint64_t)r->p.timeout_ms * 1000000ull;
    bool long_run = r->p.observe > 0 || r->p.repeat > 1;
    int exit_code =
        r->ctx && !r->p.observe ? oscore_request(r, t) : single_exchange(r, t, deadline, long_run);
    /* Any answer counts (an unprotected request may well get 4.01). */
    if (r->p.repeat > 1 && !r->p.observe && !interrupted(r) &&
        (exit_code == EDHOC_CLIENT_OK ||
         (!r->ctx && exit_code == EDHOC_CLIENT_FAILURE && !r->error))) {
        /* Throughput: the same request again, one at a time. */
        uint64_t t0 = client_now_ns();
        long ok = 0, sent = 0;
        for (long k = 1; k < r->p.repeat && !interrupted(r); k++) {
            int left = client_left_ms(deadline);
            sent++;
            if (r->ctx) {
                struct cli_oscore_xfer x = request_xfer(r);
                struct cli_oscore_result rr;
                if (cli_oscore_exchange_bw(t, r->follow.active, r->req, (size_t)r->n_req, r->plain,
                                           r->cap, left, NULL, NULL, &x, &rr))
                    break;
            } else if (cli_client_request(t, r->req, (size_t)r->n_req,
                                          r->p.has_token ? r->p.token : NULL, r->p.token_len,
                                          r->resp, r->cap, left) < 0) {
                break;
            }
            ok++;
            if (r->h.progress)
                r->h.progress(r->h.user, "requests", ok + 1, r->p.repeat);
        }
        r->repeat_done = true;
        r->repeat_sent = sent;
        r->repeat_ok = ok;
        r->repeat_seconds = (double)(client_now_ns() - t0) / 1e9;
        if (ok != sent && !interrupted(r))
            exit_code = EDHOC_CLIENT_FAILURE;
    }
    return exit_code;
}

void client_coap_release(struct client_coap_run *r)
{
    free(r->req);
    free(r->prot);
    free(r->resp);
    if (r->plain)
        edhoc_wipe(r->plain, r->cap);
    free(r->plain);
    r->req = r->prot = r->resp = r->plain = NULL;
}
