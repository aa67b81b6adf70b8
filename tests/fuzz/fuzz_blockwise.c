/*
 * The block-wise engine on arbitrary datagrams. The input is a sequence of
 * records, each an operation byte, a 2-byte length and that many bytes:
 *   op & 3 == 0  a request to the server from one of four peers; a request
 *                it passes or completes gets a made-up response of a size
 *                picked by the input, cut by edhoc_bw_server_response;
 *   op & 3 == 1  the record split in two: a request and its response,
 *                both raw, to edhoc_bw_server_response;
 *   op & 3 == 2  a response to a small collector; when it asks for the
 *                next block, edhoc_bw_request_next builds the request;
 *   op & 3 == 3  the client helpers on the record as a request.
 * The clock advances by (op >> 4) * 300 ms per record. The first input
 * byte picks small or default limits. Every reply must parse, the limits
 * must hold after every call, and once everything has expired nothing may
 * be held. Must never crash, hang or leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/blockwise.h"
#include "edhoc/coap_msg.h"

#define OUT_CAP 2048

static const char *const peers[4] = {"192.0.2.1:5683", "192.0.2.2:5683", "[2001:db8::1]:5683",
                                     "192.0.2.1:5683/ctx"};

static uint8_t out[OUT_CAP];
static uint8_t response[6000];
static uint8_t body[5000];

static void must_parse(const uint8_t *msg, size_t len)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, len, &m) != 0)
        __builtin_trap();
}

static void check_limits(const struct edhoc_bw_server *s, const struct edhoc_bw_limits *lim)
{
    struct edhoc_bw_stats st;
    edhoc_bw_server_stats(s, &st);
    if (st.bytes_held > lim->max_bytes || st.transfers + st.kept_bodies > lim->max_transfers)
        __builtin_trap();
}

/* A 2.05 for request req with n bytes of body: what a handler would send. */
static void respond(struct edhoc_bw_server *s, const char *peer, const uint8_t *req, size_t req_len,
                    size_t n, size_t block_size, uint64_t now, const struct edhoc_bw_limits *lim)
{
    struct coap_msg q;
    if (edhoc_coap_msg_parse(req, req_len, &q) != 0)
        return;
    struct coap_msg r = {
        .type = COAP_TYPE_ACK, .code = COAP_CODE_CONTENT, .mid = q.mid, .token_len = q.token_len};
    memcpy(r.token, q.token, q.token_len);
    uint8_t cf = 60;
    edhoc_coap_msg_add_option(&r, COAP_OPT_CONTENT_FORMAT, &cf, 1);
    r.payload = n ? body : NULL;
    r.payload_len = n;
    long rl = edhoc_coap_msg_encode(&r, response, sizeof response);
    if (rl < 0)
        return;
    long o = edhoc_bw_server_response(s, peer, req, req_len, response, (size_t)rl, block_size, now,
                                      out, sizeof out);
    if (o > 0)
        must_parse(out, (size_t)o);
    else if (o == 0)
        __builtin_trap();
    check_limits(s, lim);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct edhoc_bw_limits lim = {0};
    if (data[0] & 1) {
        lim.max_body = 3000;
        lim.max_transfers = 6;
        lim.max_per_peer = 2;
        lim.max_bytes = 8000;
        lim.lifetime_ms = 2000;
    }
    struct edhoc_bw_server *s = edhoc_bw_server_new(&lim);
    if (!s)
        return 0;
    /* The limits as the engine applies them (0 means the default). */
    struct edhoc_bw_limits eff = lim;
    if (!eff.max_transfers)
        eff.max_transfers = 256;
    if (!eff.max_bytes)
        eff.max_bytes = 4u << 20;
    uint32_t lifetime = lim.lifetime_ms ? lim.lifetime_ms : EDHOC_BW_DEFAULT_LIFETIME_MS;
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (uint8_t)(i * 7u + (i >> 8));

    struct edhoc_bw_collect c;
    edhoc_bw_collect_init(&c, 3000);
    static const uint8_t get[] = {0x42, 0x01, 0x12, 0x34, 'g', 'k', 0xb3, 'b', 'i', 'g'};
    uint64_t now = 1000;
    size_t pos = 1;
    while (pos + 3 <= size) {
        uint8_t op = data[pos];
        size_t len = (size_t)data[pos + 1] << 8 | data[pos + 2];
        pos += 3;
        if (len > size - pos)
            len = size - pos;
        const uint8_t *rec = data + pos;
        pos += len;
        now += (uint64_t)(op >> 4) * 300u;
        const char *peer = peers[(op >> 2) & 3];

        switch (op & 3) {
        case 0: {
            uint8_t *whole = NULL;
            size_t whole_len = 0, out_len = 0;
            int v = edhoc_bw_server_request(s, peer, rec, len, now, &whole, &whole_len, out,
                                            sizeof out, &out_len);
            if (v == EDHOC_BW_REPLY) {
                must_parse(out, out_len);
            } else if (out_len != 0) {
                __builtin_trap();
            }
            if (v != EDHOC_BW_WHOLE && whole)
                __builtin_trap();
            check_limits(s, &eff);
            /* The response size and block size come from the record. */
            size_t n = len ? (size_t)rec[len - 1] * 23u % sizeof body : 0;
            size_t bsz = (size_t)16 << (len ? rec[0] % 7 : 0);
            if (v == EDHOC_BW_WHOLE) {
                must_parse(whole, whole_len);
                respond(s, peer, whole, whole_len, n, bsz, now, &eff);
                free(whole);
            } else if (v == EDHOC_BW_PASS) {
                respond(s, peer, rec, len, n, bsz, now, &eff);
            }
            break;
        }
        case 1: {
            size_t half = len / 2;
            size_t bsz = 16u + (size_t)(op >> 4) * 70u;
            long o = edhoc_bw_server_response(s, peer, rec, half, rec + half, len - half, bsz, now,
                                              out, sizeof out);
            if (o > 0)
                must_parse(out, (size_t)o);
            check_limits(s, &eff);
            break;
        }
        case 2: {
            int rc = edhoc_bw_collect_add(&c, rec, len);
            if (c.len > c.max_body || (c.len && !c.body))
                __builtin_trap();
            if (rc == 1) {
                if (c.szx > 6)
                    __builtin_trap();
                long n = edhoc_bw_request_next(get, sizeof get, c.szx, c.next_num, out, sizeof out);
                if (n <= 0)
                    __builtin_trap();
                must_parse(out, (size_t)n);
            } else if (rc == 0) {
                if (!c.done)
                    __builtin_trap();
                long n = edhoc_bw_collect_message(&c, rec, len, response, sizeof response);
                if (n > 0)
                    must_parse(response, (size_t)n);
                edhoc_bw_collect_free(&c);
                edhoc_bw_collect_init(&c, 3000);
            } else if (rc == EDHOC_BW_ERR_ARG) {
                edhoc_bw_collect_free(&c);
                edhoc_bw_collect_init(&c, 3000);
            }
            break;
        }
        default: {
            unsigned szx = (op >> 2) & 7;
            uint32_t num = (uint32_t)(op >> 5);
            long n = edhoc_bw_request_block(rec, len, szx, num, out, sizeof out);
            if (n > 0)
                must_parse(out, (size_t)n);
            n = edhoc_bw_request_next(rec, len, szx, num, out, sizeof out);
            if (n > 0)
                must_parse(out, (size_t)n);
            break;
        }
        }
    }
    /* Once everything has had time to expire, nothing is held. */
    edhoc_bw_server_expire(s, now + lifetime);
    struct edhoc_bw_stats st;
    edhoc_bw_server_stats(s, &st);
    if (st.bytes_held != 0 || st.transfers != 0 || st.kept_bodies != 0)
        __builtin_trap();
    edhoc_bw_collect_free(&c);
    edhoc_bw_server_free(s);
    return 0;
}
