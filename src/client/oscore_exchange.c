#include "oscore_exchange.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_coap.h"
#include "client_time.h"
#include "client_trace.h"
#include "dgram_log.h"
#include "edhoc/blockwise.h"
#include "edhoc/coap_msg.h"
#include "edhoc/oscore.h"
#include "edhoc/transport.h"

static long piv_value(const uint8_t *msg, size_t len)
{
    struct oscore_option oo;
    if (oscore_message_option(msg, len, &oo) || !oo.piv)
        return -1;
    long v = 0;
    for (size_t i = 0; i < oo.piv_len; i++)
        v = v << 8 | oo.piv[i];
    return v;
}

long cli_client_request(struct edhoc_transport *t, const uint8_t *msg, size_t len,
                        const uint8_t *token, size_t token_len, uint8_t *out, size_t cap,
                        int timeout_ms)
{
    if (!token)
        return edhoc_transport_client_request(t, msg, len, out, cap, timeout_ms);
    int rc = edhoc_transport_client_send_token(t, msg, len, true, token, token_len);
    if (rc)
        return rc;
    long n = edhoc_transport_client_wait(t, token, token_len, out, cap, timeout_ms);
    edhoc_transport_client_forget(t, token, token_len);
    return n;
}

/* One OSCORE request (with its Echo retry) and its response. */
static int exchange_one(struct edhoc_transport *t, struct oscore_context *ctx, const uint8_t *req,
                        size_t req_len, uint8_t *out, size_t cap, uint64_t deadline,
                        struct cli_dgram_log *log, const char *log_name,
                        const struct cli_oscore_xfer *x, struct cli_oscore_result *r)
{
    uint8_t *prot = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    uint8_t *resp = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    uint8_t *again = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    int rc = -1;
    if (!prot || !resp || !again) {
        r->oscore_err = OSCORE_ERR_BUFFER;
        goto out;
    }
    const uint8_t *cur = req;
    size_t cur_len = req_len;
    for (int attempt = 1; attempt <= 2; attempt++) {
        r->attempts = attempt;
        struct oscore_binding b;
        long pn = oscore_protect_request(ctx, cur, cur_len, prot, EDHOC_TRANSPORT_MAX_MESSAGE, &b);
        if (pn < 0) {
            r->oscore_err = (int)pn;
            goto out;
        }
        client_trace_inner(true, cur, cur_len);
        r->request_bytes = (size_t)pn;
        r->requests++;
        if (x && x->sent)
            x->sent(x->user, &b);
        if (log && log_name) {
            char name[40];
            snprintf(name, sizeof name, "%s%s", log_name, attempt > 1 ? " (Echo)" : "");
            cli_dgram_log_begin(log, name);
        }
        uint64_t now = client_now_ns();
        int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000);
        long rn = cli_client_request(t, prot, (size_t)pn, x && x->has_token ? x->token : NULL,
                                     x ? x->token_len : 0, resp, EDHOC_TRANSPORT_MAX_MESSAGE, left);
        if (rn < 0) {
            r->transport_err = (int)rn;
            goto out;
        }
        r->response_bytes = (size_t)rn;
        struct coap_msg outer;
        if (edhoc_coap_msg_parse(resp, (size_t)rn, &outer)) {
            r->oscore_err = OSCORE_ERR_MALFORMED;
            goto out;
        }
        if (!edhoc_coap_msg_find_option(&outer, COAP_OPT_OSCORE)) {
            r->unprotected_error = true;
            r->unprotected_code = outer.code;
            long n = (size_t)rn <= cap ? rn : -1;
            if (n > 0)
                memcpy(out, resp, (size_t)rn);
            r->response_len = n;
            goto out;
        }
        long un = oscore_unprotect_response(ctx, &b, resp, (size_t)rn, out, cap);
        if (un < 0) {
            r->oscore_err = (int)un;
            goto out;
        }
        client_trace_inner(false, out, (size_t)un);
        r->response_len = un;
        r->response_piv = piv_value(resp, (size_t)rn);
        struct coap_msg inner;
        if (attempt == 1 && !edhoc_coap_msg_parse(out, (size_t)un, &inner) &&
            inner.code == COAP_CODE_UNAUTHORIZED) {
            const struct coap_option *echo = edhoc_coap_msg_find_option(&inner, COAP_OPT_ECHO);
            if (echo && echo->len <= 40) {
                r->echo_piv = r->response_piv;
                uint8_t ev[40];
                memcpy(ev, echo->value, echo->len);
                long an = cli_coap_with_echo(req, req_len, ev, echo->len, again,
                                             EDHOC_TRANSPORT_MAX_MESSAGE);
                if (an < 0) {
                    r->oscore_err = OSCORE_ERR_TOO_LARGE;
                    goto out;
                }
                cur = again;
                cur_len = (size_t)an;
                continue;
            }
        }
        rc = 0;
        break;
    }
out:
    free(prot);
    free(resp);
    free(again);
    return rc;
}

/* The Block option `number` of a message, if any. */
static bool inner_block(const uint8_t *msg, size_t len, uint16_t number, struct edhoc_block *b)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, len, &m))
        return false;
    const struct coap_option *o = edhoc_coap_msg_find_option(&m, number);
    return o && edhoc_block_parse(o->value, o->len, b) == 0;
}

int cli_oscore_exchange_bw(struct edhoc_transport *t, struct oscore_context *ctx,
                           const uint8_t *req, size_t req_len, uint8_t *out, size_t cap,
                           int timeout_ms, struct cli_dgram_log *log, const char *log_name,
                           const struct cli_oscore_xfer *x, struct cli_oscore_result *r)
{
    memset(r, 0, sizeof *r);
    r->echo_piv = r->response_piv = -1;
    uint64_t deadline = client_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    unsigned bs = x && x->block_size ? x->block_size : 1024;
    int szx = edhoc_block_szx(bs);
    struct coap_msg m;
    if (szx < 0 || edhoc_coap_msg_parse(req, req_len, &m)) {
        r->oscore_err = OSCORE_ERR_MALFORMED;
        return -1;
    }
    uint8_t *blk = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    uint8_t *part = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    struct edhoc_bw_collect c;
    edhoc_bw_collect_init(&c, x && x->max_body ? x->max_body : cap > 1024 ? cap - 1024 : cap);
    int rc = -1;
    if (!blk || !part) {
        r->oscore_err = OSCORE_ERR_BUFFER;
        goto out;
    }
    if (m.payload_len > bs) {
        /* RFC 7959 Section 2.5, inside OSCORE: one block per request, the
         * next one after the server's 2.31 Continue. */
        uint32_t num = 0;
        unsigned cur_szx = (unsigned)szx;
        for (;;) {
            long bl = edhoc_bw_request_block(req, req_len, cur_szx, num, blk,
                                             EDHOC_TRANSPORT_MAX_MESSAGE);
            if (bl <= 0) {
                r->bw_err = bl < 0 ? (int)bl : EDHOC_BW_ERR_ORDER;
                goto out;
            }
            if (exchange_one(t, ctx, blk, (size_t)bl, out, cap, deadline, log, log_name, x, r))
                goto out;
            r->block1_blocks++;
            struct edhoc_block b;
            if (r->response_len > 1 && out[1] == COAP_CODE(2, 31) &&
                inner_block(out, (size_t)r->response_len, COAP_OPT_BLOCK1, &b)) {
                size_t done = (size_t)(num + 1) * edhoc_block_size(cur_szx);
                if (b.szx < cur_szx)
                    cur_szx = b.szx; /* the server asks for smaller blocks */
                num = (uint32_t)(done / edhoc_block_size(cur_szx));
                if (done >= m.payload_len) {
                    r->bw_err = EDHOC_BW_ERR_ORDER; /* Continue after the last block */
                    goto out;
                }
                continue;
            }
            break;
        }
    } else if (exchange_one(t, ctx, req, req_len, out, cap, deadline, log, log_name, x, r)) {
        goto out;
    }
    struct edhoc_block b2;
    if (!inner_block(out, (size_t)r->response_len, COAP_OPT_BLOCK2, &b2) ||
        (!b2.more && b2.num == 0)) {
        rc = 0;
        goto out;
    }
    /* RFC 7959 Section 2.4: ask for the next block until M = 0. */
    int cr = edhoc_bw_collect_add(&c, out, (size_t)r->response_len);
    r->block2_blocks = 1;
    while (cr == 1) {
        long nl = edhoc_bw_request_next(req, req_len, c.szx, c.next_num, blk,
                                        EDHOC_TRANSPORT_MAX_MESSAGE);
        if (nl <= 0) {
            cr = nl < 0 ? (int)nl : EDHOC_BW_ERR_MALFORMED;
            break;
        }
        if (exchange_one(t, ctx, blk, (size_t)nl, part, EDHOC_TRANSPORT_MAX_MESSAGE, deadline, log,
                         log_name, x, r))
            goto out;
        r->block2_blocks++;
        cr = edhoc_bw_collect_add(&c, part, (size_t)r->response_len);
    }
    if (cr < 0) {
        r->bw_err = cr;
        goto out;
    }
    /* The last block's header and options around the whole body. */
    long wl = edhoc_bw_collect_message(&c, part, (size_t)r->response_len, out, cap);
    if (wl < 0) {
        r->bw_err = (int)wl;
        goto out;
    }
    r->response_len = wl;
    rc = 0;
out:
    if (log)
        log->current = -1;
    edhoc_bw_collect_free(&c);
    free(blk);
    free(part);
    return rc;
}

int cli_oscore_exchange(struct edhoc_transport *t, struct oscore_context *ctx, const uint8_t *req,
                        size_t req_len, uint8_t *out, size_t cap, int timeout_ms,
                        struct cli_dgram_log *log, const char *log_name,
                        struct cli_oscore_result *r)
{
    return cli_oscore_exchange_bw(t, ctx, req, req_len, out, cap, timeout_ms, log, log_name, NULL,
                                  r);
}
