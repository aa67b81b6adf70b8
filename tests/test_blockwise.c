/*
 * Block-wise transfer (RFC 7959) with the Request-Tag of RFC 9175: the
 * Block option codec against values worked out by hand, the server
 * engine's Block1 reassembly and refusals, its Block2 cutting and serving,
 * limits and expiry, and the client helpers in a loop against the server
 * engine for many body and block sizes.
 *
 * Each expectation names the sentence of RFC 7959 (or RFC 9175, RFC 7252)
 * it checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "edhoc/blockwise.h"
#include "edhoc/coap_msg.h"

#define CODE_CONTINUE COAP_CODE(2, 31)
#define CODE_CHANGED COAP_CODE(2, 4)
#define CODE_INCOMPLETE COAP_CODE(4, 8)
#define CODE_TOO_LARGE COAP_CODE(4, 13)
#define CODE_UNAVAILABLE COAP_CODE(5, 3)
#define PUT COAP_CODE(0, 3)

/* ---- helpers ---- */

struct builder {
    struct coap_msg m;
    uint8_t store[24][4];
    size_t used;
};

static void b_init(struct builder *b, uint8_t type, uint8_t code, uint16_t mid, const char *token)
{
    memset(b, 0, sizeof *b);
    b->m.type = type;
    b->m.code = code;
    b->m.mid = mid;
    b->m.token_len = (uint8_t)strlen(token);
    memcpy(b->m.token, token, b->m.token_len);
}

static void b_opt(struct builder *b, uint16_t number, const void *value, size_t len)
{
    assert_int_equal(edhoc_coap_msg_add_option(&b->m, number, value, len), 0);
}

static void b_str(struct builder *b, uint16_t number, const char *s)
{
    b_opt(b, number, s, strlen(s));
}

static void b_uint(struct builder *b, uint16_t number, uint32_t v)
{
    uint8_t *st = b->store[b->used++];
    b_opt(b, number, st, edhoc_coap_uint_encode(v, st));
}

static void b_block(struct builder *b, uint16_t number, uint32_t num, bool more, unsigned szx)
{
    struct edhoc_block blk = {.num = num, .more = more, .szx = szx};
    uint8_t *st = b->store[b->used++];
    b_opt(b, number, st, edhoc_block_encode(&blk, st));
}

static size_t b_encode(struct builder *b, const uint8_t *payload, size_t plen, uint8_t *out,
                       size_t cap)
{
    b->m.payload = plen ? payload : NULL;
    b->m.payload_len = plen;
    long n = edhoc_coap_msg_encode(&b->m, out, cap);
    assert_true(n > 0);
    return (size_t)n;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 31u + seed + (i >> 8) * 7u);
}

static void set_mid(uint8_t *msg, uint16_t mid)
{
    msg[2] = (uint8_t)(mid >> 8);
    msg[3] = (uint8_t)mid;
}

struct result {
    int verdict;
    uint8_t *whole;
    size_t whole_len;
    uint8_t out[2048];
    size_t out_len;
    struct coap_msg reply;
};

static int srv(struct edhoc_bw_server *s, const char *peer, const uint8_t *msg, size_t len,
               uint64_t now, struct result *r)
{
    r->whole = NULL;
    r->verdict = edhoc_bw_server_request(s, peer, msg, len, now, &r->whole, &r->whole_len, r->out,
                                         sizeof r->out, &r->out_len);
    if (r->verdict == EDHOC_BW_REPLY)
        assert_int_equal(edhoc_coap_msg_parse(r->out, r->out_len, &r->reply), 0);
    else
        assert_int_equal(r->out_len, 0);
    if (r->verdict != EDHOC_BW_WHOLE)
        assert_null(r->whole);
    return r->verdict;
}

static bool has_block(const struct coap_msg *m, uint16_t number, struct edhoc_block *b)
{
    const struct coap_option *o = edhoc_coap_msg_find_option(m, number);
    if (!o)
        return false;
    assert_int_equal(edhoc_block_parse(o->value, o->len, b), 0);
    return true;
}

static void assert_block(const struct coap_msg *m, uint16_t number, uint32_t num, bool more,
                         unsigned szx)
{
    struct edhoc_block b;
    assert_true(has_block(m, number, &b));
    assert_int_equal(b.num, num);
    assert_int_equal(b.more, more);
    assert_int_equal(b.szx, szx);
}

static uint32_t uint_option(const struct coap_msg *m, uint16_t number)
{
    const struct coap_option *o = edhoc_coap_msg_find_option(m, number);
    assert_non_null(o);
    uint32_t v;
    assert_int_equal(edhoc_coap_option_uint(o, &v), 0);
    return v;
}

static struct edhoc_bw_stats stats(const struct edhoc_bw_server *s)
{
    struct edhoc_bw_stats st;
    edhoc_bw_server_stats(s, &st);
    return st;
}

/* A POST of body to /upload, optionally with a Request-Tag. */
static size_t upload(uint8_t *out, size_t cap, uint8_t type, uint16_t mid, const char *tag,
                     const uint8_t *body, size_t n)
{
    struct builder b;
    b_init(&b, type, COAP_CODE_POST, mid, "tk");
    b_str(&b, COAP_OPT_URI_PATH, "upload");
    b_uint(&b, COAP_OPT_CONTENT_FORMAT, 42);
    if (tag)
        b_str(&b, COAP_OPT_REQUEST_TAG, tag);
    return b_encode(&b, body, n, out, cap);
}

/* One Block1 request by hand (payload as given, for refusals). */
static size_t block1_msg(uint8_t *out, size_t cap, uint32_t num, bool more, unsigned szx,
                         const uint8_t *payload, size_t plen, const char *tag)
{
    struct builder b;
    b_init(&b, COAP_TYPE_CON, COAP_CODE_POST, (uint16_t)(0x2000 + num), "tk");
    b_str(&b, COAP_OPT_URI_PATH, "upload");
    b_block(&b, COAP_OPT_BLOCK1, num, more, szx);
    if (tag)
        b_str(&b, COAP_OPT_REQUEST_TAG, tag);
    return b_encode(&b, payload, plen, out, cap);
}

/* ---- Block options ---- */

static void test_block_option_codec(void **state)
{
    (void)state;
    uint8_t v[3];
    struct edhoc_block b;

    /* RFC 7959 Section 2.2: the value is NUM << 4 | M << 3 | SZX as a
     * CoAP uint, whose value 0 is the empty string (RFC 7252 Section 3.2). */
    struct edhoc_block zero = {.num = 0, .more = false, .szx = 0};
    assert_int_equal(edhoc_block_encode(&zero, v), 0);
    /* NUM 1, M 1, SZX 6: 1 << 4 | 8 | 6 = 0x1e, one byte. */
    struct edhoc_block one = {.num = 1, .more = true, .szx = 6};
    assert_int_equal(edhoc_block_encode(&one, v), 1);
    assert_int_equal(v[0], 0x1e);
    /* NUM 15, M 1, SZX 6: 0xfe is the largest one-byte value. */
    struct edhoc_block b15 = {.num = 15, .more = true, .szx = 6};
    assert_int_equal(edhoc_block_encode(&b15, v), 1);
    assert_int_equal(v[0], 0xfe);
    /* NUM 16, M 0, SZX 2: 0x102, two bytes 01 02 ("NUM ... 4, 12, or 20
     * bits" for option lengths 1, 2, 3). */
    struct edhoc_block b16 = {.num = 16, .more = false, .szx = 2};
    assert_int_equal(edhoc_block_encode(&b16, v), 2);
    assert_int_equal(v[0], 0x01);
    assert_int_equal(v[1], 0x02);
    /* NUM 4096, M 0, SZX 0: 0x10000, three bytes. */
    struct edhoc_block b4096 = {.num = 4096, .more = false, .szx = 0};
    assert_int_equal(edhoc_block_encode(&b4096, v), 3);
    assert_memory_equal(v, "\x01\x00\x00", 3);
    /* The largest NUM, 2^20 - 1, fills 20 bits. */
    struct edhoc_block bmax = {.num = (1u << 20) - 1, .more = true, .szx = 6};
    assert_int_equal(edhoc_block_encode(&bmax, v), 3);
    assert_memory_equal(v, "\xff\xff\xfe", 3);

    /* Parsing the same values back. */
    assert_int_equal(edhoc_block_parse(NULL, 0, &b), 0);
    assert_int_equal(b.num, 0);
    assert_false(b.more);
    assert_int_equal(b.szx, 0);
    assert_int_equal(edhoc_block_parse((const uint8_t *)"\x1e", 1, &b), 0);
    assert_int_equal(b.num, 1);
    assert_true(b.more);
    assert_int_equal(b.szx, 6);
    assert_int_equal(edhoc_block_parse((const uint8_t *)"\x01\x02", 2, &b), 0);
    assert_int_equal(b.num, 16);
    assert_false(b.more);
    assert_int_equal(b.szx, 2);
    assert_int_equal(edhoc_block_parse((const uint8_t *)"\xff\xff\xfe", 3, &b), 0);
    assert_int_equal(b.num, (1u << 20) - 1);
    /* RFC 7252 Section 3.2: a uint with leading zero bytes is the same
     * value. */
    assert_int_equal(edhoc_block_parse((const uint8_t *)"\x00\x1e", 2, &b), 0);
    assert_int_equal(b.num, 1);
    assert_int_equal(b.szx, 6);
    /* RFC 7959 Section 2.2: "The value 7 for SZX ... is reserved". */
    assert_int_equal(edhoc_block_parse((const uint8_t *)"\x07", 1, &b), EDHOC_BW_ERR_MALFORMED);
    assert_int_equal(edhoc_block_parse((const uint8_t *)"\x01\x0f", 2, &b),
                     EDHOC_BW_ERR_MALFORMED);
    /* RFC 7959 Section 2.1: Block1/Block2 are 0-3 bytes long. */
    assert_int_equal(edhoc_block_parse((const uint8_t *)"\x00\x00\x00\x10", 4, &b),
                     EDHOC_BW_ERR_MALFORMED);

    /* Section 2.2: "block size = 2**(SZX + 4)", SZX 0..6. */
    assert_int_equal(edhoc_block_size(0), 16);
    assert_int_equal(edhoc_block_size(6), 1024);
    assert_int_equal(edhoc_block_szx(16), 0);
    assert_int_equal(edhoc_block_szx(256), 4);
    assert_int_equal(edhoc_block_szx(1024), 6);
    assert_int_equal(edhoc_block_szx(2048), -1);
    assert_int_equal(edhoc_block_szx(100), -1);
    assert_int_equal(edhoc_block_szx(0), -1);

    /* Every (NUM, M, SZX) comes back as it went (one encoding per value). */
    static const uint32_t nums[] = {0, 1, 15, 16, 4095, 4096, (1u << 20) - 1};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        for (unsigned szx = 0; szx <= 6; szx++) {
            for (int m = 0; m < 2; m++) {
                struct edhoc_block in = {.num = nums[i], .more = m, .szx = szx}, back;
                size_t n = edhoc_block_encode(&in, v);
                assert_true(n <= 3);
                assert_int_equal(edhoc_block_parse(v, n, &back), 0);
                assert_int_equal(back.num, in.num);
                assert_int_equal(back.more, in.more);
                assert_int_equal(back.szx, in.szx);
            }
        }
    }
    assert_string_equal(edhoc_bw_strerror(EDHOC_BW_ERR_ETAG),
                        "representation changed during the transfer (ETag)");
}

/* ---- Block1 on the server ---- */

/* The body in blocks of szx: 2.31 with Block1 echoed for each block but
 * the last, then the whole request. */
static void reassemble(unsigned szx)
{
    struct edhoc_bw_server *s = edhoc_bw_server_new(NULL);
    assert_non_null(s);
    uint8_t body[3000], req[3200], blk[1200];
    fill(body, sizeof body, szx);
    size_t req_len = upload(req, sizeof req, COAP_TYPE_CON, 0x100, NULL, body, sizeof body);
    size_t bs = edhoc_block_size(szx);
    uint32_t last = (uint32_t)((sizeof body - 1) / bs);
    struct result r;

    for (uint32_t num = 0; num <= last; num++) {
        long n = edhoc_bw_request_block(req, req_len, szx, num, blk, sizeof blk);
        assert_true(n > 0);
        set_mid(blk, (uint16_t)(0x100 + num));
        srv(s, "192.0.2.1:5683", blk, (size_t)n, 1000 + num, &r);
        if (num < last) {
            /* RFC 7959 Section 2.5: "all success responses to non-final
             * blocks carry the response code 2.31 (Continue)"; Section 2.3:
             * the Block1 option in the response echoes the block, M set
             * ("the M flag ... indicate[s] atomicity"). */
            assert_int_equal(r.verdict, EDHOC_BW_REPLY);
            assert_int_equal(r.reply.code, CODE_CONTINUE);
            assert_block(&r.reply, COAP_OPT_BLOCK1, num, true, szx);
            /* RFC 7252 Section 5.2.1: piggybacked in the ACK, with the
             * request's Message ID and token. */
            assert_int_equal(r.reply.type, COAP_TYPE_ACK);
            assert_int_equal(r.reply.mid, 0x100 + num);
            assert_int_equal(r.reply.token_len, 2);
            assert_memory_equal(r.reply.token, "tk", 2);
            assert_null(r.reply.payload);
            struct edhoc_bw_stats st = stats(s);
            assert_int_equal(st.transfers, 1);
            assert_true(st.bytes_held >= (num + 1) * bs);
        } else {
            /* The block with M=0 completes the body ("the actual
             * creation/replacement takes place at the time the final block
             * ... is received"). */
            assert_int_equal(r.verdict, EDHOC_BW_WHOLE);
        }
    }
    struct coap_msg w;
    assert_int_equal(edhoc_coap_msg_parse(r.whole, r.whole_len, &w), 0);
    assert_int_equal(w.payload_len, sizeof body);
    assert_memory_equal(w.payload, body, sizeof body);
    /* The whole request has the final block's header and token, the other
     * options, and no Block1 or Size1. */
    assert_int_equal(w.code, COAP_CODE_POST);
    assert_int_equal(w.mid, 0x100 + last);
    assert_null(edhoc_coap_msg_find_option(&w, COAP_OPT_BLOCK1));
    assert_null(edhoc_coap_msg_find_option(&w, COAP_OPT_SIZE1));
    const struct coap_option *path = edhoc_coap_msg_find_option(&w, COAP_OPT_URI_PATH);
    assert_non_null(path);
    assert_int_equal(path->len, 6);
    assert_memory_equal(path->value, "upload", 6);
    assert_int_equal(uint_option(&w, COAP_OPT_CONTENT_FORMAT), 42);
    struct edhoc_bw_stats st = stats(s);
    assert_int_equal(st.transfers, 0);
    assert_int_equal(st.completed, 1);

    /* RFC 7959 Section 2.3: the final response carries Block1 with the
     * last NUM and M unset (the examples of Section 3.2: "2.04 Changed
     * [Block1 2/0/128]"). */
    struct builder rb;
    b_init(&rb, COAP_TYPE_ACK, CODE_CHANGED, w.mid, "tk");
    uint8_t resp[64], out[128];
    size_t resp_len = b_encode(&rb, (const uint8_t *)"ok", 2, resp, sizeof resp);
    long n = edhoc_bw_server_response(s, "192.0.2.1:5683", r.whole, r.whole_len, resp, resp_len,
                                      1024, 5000, out, sizeof out);
    assert_true(n > 0);
    struct coap_msg rm;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)n, &rm), 0);
    assert_int_equal(rm.code, CODE_CHANGED);
    assert_block(&rm, COAP_OPT_BLOCK1, last, false, szx);
    assert_int_equal(rm.payload_len, 2);
    assert_memory_equal(rm.payload, "ok", 2);
    /* The marker went with its response: nothing is held. */
    assert_int_equal(stats(s).bytes_held, 0);
    free(r.whole);
    edhoc_bw_server_free(s);
}

static void test_block1_reassembly(void **state)
{
    (void)state;
    reassemble(6); /* 1024-byte blocks: 3 blocks, the last 952 bytes */
    reassemble(0); /* 16-byte blocks: 188 blocks, the last 8 bytes */
}

static void test_block1_single_block(void **state)
{
    (void)state;
    struct edhoc_bw_server *s = edhoc_bw_server_new(NULL);
    uint8_t msg[128];
    struct result r;
    /* Block1 0/0: the one and only block is the whole body. */
    size_t n = block1_msg(msg, sizeof msg, 0, false, 2, (const uint8_t *)"hello", 5, NULL);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_WHOLE);
    struct coap_msg w;
    assert_int_equal(edhoc_coap_msg_parse(r.whole, r.whole_len, &w), 0);
    assert_int_equal(w.payload_len, 5);
    assert_memory_equal(w.payload, "hello", 5);
    assert_null(edhoc_coap_msg_find_option(&w, COAP_OPT_BLOCK1));
    /* Section 2.3: the response echoes Block1 0/0/SZX. */
    struct builder rb;
    b_init(&rb, COAP_TYPE_ACK, CODE_CHANGED, w.mid, "tk");
    uint8_t resp[64], out[128];
    size_t resp_len = b_encode(&rb, NULL, 0, resp, sizeof resp);
    long o = edhoc_bw_server_response(s, "p", r.whole, r.whole_len, resp, resp_len, 1024, 0, out,
                                      sizeof out);
    assert_true(o > 0);
    struct coap_msg rm;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)o, &rm), 0);
    assert_block(&rm, COAP_OPT_BLOCK1, 0, false, 2);
    /* A second response to the same message has nothing to echo. */
    o = edhoc_bw_server_response(s, "p", r.whole, r.whole_len, resp, resp_len, 1024, 0, out,
                                 sizeof out);
    assert_int_equal(o, (long)resp_len);
    assert_memory_equal(out, resp, resp_len);
    free(r.whole);
    edhoc_bw_server_free(s);
}

static void test_block1_out_of_order(void **state)
{
    (void)state;
    struct edhoc_bw_server *s = edhoc_bw_server_new(NULL);
    uint8_t body[64], msg[128];
    fill(body, sizeof body, 3);
    struct result r;

    /* RFC 7959 Section 2.9.2: 4.08 when the client "has not sent all
     * blocks": a continuation without its block 0. */
    size_t n = block1_msg(msg, sizeof msg, 1, true, 0, body + 16, 16, NULL);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_INCOMPLETE);

    n = block1_msg(msg, sizeof msg, 0, true, 0, body, 16, NULL);
    assert_int_equal(srv(s, "p", msg, n, 1, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    /* Section 2.5: "A server MAY also return a 4.08 error code for any
     * (final or non-final) Block1 transfer that is not in sequence":
     * block 2 before block 1, and the final block 3 before it too. */
    n = block1_msg(msg, sizeof msg, 2, true, 0, body + 32, 16, NULL);
    assert_int_equal(srv(s, "p", msg, n, 2, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_INCOMPLETE);
    n = block1_msg(msg, sizeof msg, 3, false, 0, body + 48, 16, NULL);
    assert_int_equal(srv(s, "p", msg, n, 3, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_INCOMPLETE);
    /* The transfer waits for the block it needs. */
    n = block1_msg(msg, sizeof msg, 1, true, 0, body + 16, 16, NULL);
    assert_int_equal(srv(s, "p", msg, n, 4, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    assert_block(&r.reply, COAP_OPT_BLOCK1, 1, true, 0);
    /* Section 2.5: the client may switch only to a block size "preferred
     * by the server or a smaller one": a larger SZX whose block would
     * start at the right byte (NUM 1 of 32 = byte 32) is still refused. */
    n = block1_msg(msg, sizeof msg, 1, true, 1, body + 32, 32, NULL);
    assert_int_equal(srv(s, "p", msg, n, 5, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_INCOMPLETE);
    assert_int_equal(stats(s).refused_incomplete, 4);
    edhoc_bw_server_free(s);
}

static void test_block1_late_negotiation(void **state)
{
    (void)state;
    struct edhoc_bw_server *s = edhoc_bw_server_new(NULL);
    uint8_t body[1024 + 256 + 100], msg[1200];
    fill(body, sizeof body, 9);
    struct result r;
    size_t n = block1_msg(msg, sizeof msg, 0, true, 6, body, 1024, NULL);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    /* RFC 7959 Section 2.5: after a smaller size, "the second request
     * starts with a block number larger than one": 1024 bytes are NUM 4 in
     * 256-byte blocks. NUM 3 (byte 768) is not where the body ends. */
    n = block1_msg(msg, sizeof msg, 3, true, 4, body + 768, 256, NULL);
    assert_int_equal(srv(s, "p", msg, n, 1, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_INCOMPLETE);
    n = block1_msg(msg, sizeof msg, 4, true, 4, body + 1024, 256, NULL);
    assert_int_equal(srv(s, "p", msg, n, 2, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    assert_block(&r.reply, COAP_OPT_BLOCK1, 4, true, 4);
    n = block1_msg(msg, sizeof msg, 5, false, 4, body + 1280, 100, NULL);
    assert_int_equal(srv(s, "p", msg, n, 3, &r), EDHOC_BW_WHOLE);
    struct coap_msg w;
    assert_int_equal(edhoc_coap_msg_parse(r.whole, r.whole_len, &w), 0);
    assert_int_equal(w.payload_len, sizeof body);
    assert_memory_equal(w.payload, body, sizeof body);
    free(r.whole);
    edhoc_bw_server_free(s);
}

static void test_block1_duplicate(void **state)
{
    (void)state;
    struct edhoc_bw_server *s = edhoc_bw_server_new(NULL);
    uint8_t body[40], other[16], msg[128];
    fill(body, sizeof body, 5);
    memset(other, 0xee, sizeof other);
    struct result r;
    size_t n = block1_msg(msg, sizeof msg, 0, true, 0, body, 16, NULL);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_REPLY);
    n = block1_msg(msg, sizeof msg, 1, true, 0, body + 16, 16, NULL);
    assert_int_equal(srv(s, "p", msg, n, 1, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    /* The same block again (its 2.31 lost, RFC 7252 Section 4.2
     * retransmission or a new request): answered 2.31 again, echoing it. */
    assert_int_equal(srv(s, "p", msg, n, 2, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    assert_block(&r.reply, COAP_OPT_BLOCK1, 1, true, 0);
    /* Other bytes under the same NUM are not a repetition: 4.08 ("not in
     * sequence", Section 2.5). */
    n = block1_msg(msg, sizeof msg, 1, true, 0, other, 16, NULL);
    assert_int_equal(srv(s, "p", msg, n, 3, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_INCOMPLETE);
    n = block1_msg(msg, sizeof msg, 2, false, 0, body + 32, 8, NULL);
    assert_int_equal(srv(s, "p", msg, n, 4, &r), EDHOC_BW_WHOLE);
    struct coap_msg w;
    assert_int_equal(edhoc_coap_msg_parse(r.whole, r.whole_len, &w), 0);
    assert_memory_equal(w.payload, body, sizeof body);
    free(r.whole);
    /* The final block once more: the transfer is over, so there is no
     * body for it to complete (Section 2.9.2: 4.08). */
    assert_int_equal(srv(s, "p", msg, n, 5, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_INCOMPLETE);
    edhoc_bw_server_free(s);
}

static void test_block1_restart(void **state)
{
    (void)state;
    struct edhoc_bw_server *s = edhoc_bw_server_new(NULL);
    uint8_t a[48], b[20], msg[128];
    fill(a, sizeof a, 1);
    fill(b, sizeof b, 2);
    struct result r;
    size_t n = block1_msg(msg, sizeof msg, 0, true, 0, a, 16, NULL);
    srv(s, "p", msg, n, 0, &r);
    n = block1_msg(msg, sizeof msg, 1, true, 0, a + 16, 16, NULL);
    srv(s, "p", msg, n, 1, &r);
    /* RFC 9175 Section 3.3: a client "can overwrite the server's old state
     * with a new initial (num=0) Block1 request". */
    n = block1_msg(msg, sizeof msg, 0, true, 0, b, 16, NULL);
    assert_int_equal(srv(s, "p", msg, n, 2, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    n = block1_msg(msg, sizeof msg, 1, false, 0, b + 16, 4, NULL);
    assert_int_equal(srv(s, "p", msg, n, 3, &r), EDHOC_BW_WHOLE);
    struct coap_msg w;
    assert_int_equal(edhoc_coap_msg_parse(r.whole, r.whole_len, &w), 0);
    assert_int_equal(w.payload_len, sizeof b);
    assert_memory_equal(w.payload, b, sizeof b);
    free(r.whole);
    assert_int_equal(stats(s).transfers, 0);
    edhoc_bw_server_free(s);
}

static void test_block1_too_large(void **state)
{
    (void)state;
    struct edhoc_bw_limits lim = {.max_body = 2048};
    struct edhoc_bw_server *s = edhoc_bw_server_new(&lim);
    uint8_t body[1024], msg[1200];
    fill(body, sizeof body, 7);
    struct result r;

    /* RFC 7959 Section 4: Size1 in a Block1 request gives the client's
     * estimate of the whole size; Section 2.9.3: 4.13 "SHOULD include a
     * Size1 Option ... to indicate the maximum size of request entity the
     * server is able and willing to handle". Refused before anything is
     * kept: nothing held. */
    struct builder b;
    b_init(&b, COAP_TYPE_CON, COAP_CODE_POST, 1, "tk");
    b_str(&b, COAP_OPT_URI_PATH, "upload");
    b_block(&b, COAP_OPT_BLOCK1, 0, true, 6);
    b_uint(&b, COAP_OPT_SIZE1, UINT32_MAX);
    size_t n = b_encode(&b, body, 1024, msg, sizeof msg);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_TOO_LARGE);
    assert_int_equal(uint_option(&r.reply, COAP_OPT_SIZE1), 2048);
    struct edhoc_bw_stats st = stats(s);
    assert_int_equal(st.bytes_held, 0);
    assert_int_equal(st.transfers, 0);
    assert_int_equal(st.refused_too_large, 1);

    /* Without Size1, the block that would pass max_body is refused the
     * same way and the transfer is gone. */
    n = block1_msg(msg, sizeof msg, 0, true, 6, body, 1024, NULL);
    assert_int_equal(srv(s, "p", msg, n, 1, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    n = block1_msg(msg, sizeof msg, 1, true, 6, body, 1024, NULL);
    assert_int_equal(srv(s, "p", msg, n, 2, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    assert_true(stats(s).bytes_held >= 2048);
    n = block1_msg(msg, sizeof msg, 2, false, 6, body, 1, NULL);
    assert_int_equal(srv(s, "p", msg, n, 3, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_TOO_LARGE);
    assert_int_equal(uint_option(&r.reply, COAP_OPT_SIZE1), 2048);
    st = stats(s);
    assert_int_equal(st.transfers, 0);
    assert_int_equal(st.bytes_held, 0);
    assert_int_equal(st.refused_too_large, 2);
    /* A block far beyond the limit is refused before its transfer is even
     * looked for. */
    n = block1_msg(msg, sizeof msg, (1u << 20) - 1, true, 6, body, 1024, NULL);
    assert_int_equal(srv(s, "p", msg, n, 4, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_TOO_LARGE);
    edhoc_bw_server_free(s);
}

static void test_block1_malformed(void **state)
{
    (void)state;
    struct edhoc_bw_server *s = edhoc_bw_server_new(NULL);
    uint8_t body[64], msg[256];
    fill(body, sizeof body, 11);
    struct result r;

    /* RFC 7959 Section 2.2/2.4: only the last block (M unset) may be
     * shorter than the block size: a short block with M=1 is a bad request
     * (RFC 7252 Section 5.9.2.1, 4.00). */
    size_t n = block1_msg(msg, sizeof msg, 0, true, 1, body, 20, NULL);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, COAP_CODE_BAD_REQUEST);
    /* And no block is longer than the block size. */
    n = block1_msg(msg, sizeof msg, 0, false, 0, body, 17, NULL);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, COAP_CODE_BAD_REQUEST);
    assert_int_equal(stats(s).bytes_held, 0);

    /* Section 2.2: SZX 7 "MUST lead to a 4.00 Bad Request response code
     * upon reception in a request". */
    struct builder b;
    b_init(&b, COAP_TYPE_CON, COAP_CODE_POST, 1, "tk");
    uint8_t szx7 = 0x0f;
    b_opt(&b, COAP_OPT_BLOCK1, &szx7, 1);
    n = b_encode(&b, body, 16, msg, sizeof msg);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, COAP_CODE_BAD_REQUEST);

    /* RFC 7252 Section 5.4.3: a length outside 0-3 makes the critical
     * Block1 unrecognized, and Section 5.4.1: "Unrecognized options of
     * class "critical" that occur in a Confirmable request MUST cause the
     * return of a 4.02 (Bad Option)". */
    b_init(&b, COAP_TYPE_CON, COAP_CODE_POST, 2, "tk");
    b_opt(&b, COAP_OPT_BLOCK1, "\x00\x00\x00\x08", 4);
    n = b_encode(&b, body, 16, msg, sizeof msg);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, COAP_CODE_BAD_OPTION);
    /* Section 5.4.5: a non-repeatable option twice is treated the same. */
    b_init(&b, COAP_TYPE_CON, COAP_CODE_POST, 3, "tk");
    b_block(&b, COAP_OPT_BLOCK1, 0, true, 0);
    b_block(&b, COAP_OPT_BLOCK1, 1, true, 0);
    n = b_encode(&b, body, 16, msg, sizeof msg);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, COAP_CODE_BAD_OPTION);
    b_init(&b, COAP_TYPE_CON, COAP_CODE_GET, 4, "tk");
    b_block(&b, COAP_OPT_BLOCK2, 1, false, 0);
    b_block(&b, COAP_OPT_BLOCK2, 2, false, 0);
    n = b_encode(&b, NULL, 0, msg, sizeof msg);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, COAP_CODE_BAD_OPTION);
    assert_int_equal(stats(s).refused_bad_option, 6);

    /* Not CoAP at all: refused as such; a response and a request without
     * block options are none of the engine's business. */
    assert_int_equal(edhoc_bw_server_request(s, "p", (const uint8_t *)"\x80\x01", 2, 0, &r.whole,
                                             &r.whole_len, r.out, sizeof r.out, &r.out_len),
                     EDHOC_BW_ERR_MALFORMED);
    b_init(&b, COAP_TYPE_ACK, COAP_CODE_CONTENT, 5, "tk");
    b_block(&b, COAP_OPT_BLOCK1, 1, true, 0);
    n = b_encode(&b, body, 16, msg, sizeof msg);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_PASS);
    n = upload(msg, sizeof msg, COAP_TYPE_CON, 6, NULL, body, sizeof body);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_PASS);
    /* The output must hold the reply. */
    n = block1_msg(msg, sizeof msg, 0, true, 0, body, 16, NULL);
    size_t small_len = 99;
    assert_int_equal(edhoc_bw_server_request(s, "p", msg, n, 0, &r.whole, &r.whole_len, r.out, 4,
                                             &small_len),
                     EDHOC_BW_ERR_BUFFER);
    assert_int_equal(edhoc_bw_server_request(NULL, "p", msg, n, 0, &r.whole, &r.whole_len, r.out,
                                             sizeof r.out, &r.out_len),
                     EDHOC_BW_ERR_ARG);
    edhoc_bw_server_free(s);
}

static void test_reply_types(void **state)
{
    (void)state;
    struct edhoc_bw_server *s = edhoc_bw_server_new(NULL);
    uint8_t body[32], msg[128];
    fill(body, sizeof body, 13);
    struct result r;
    struct builder b;
    /* RFC 7252 Section 5.2.3: a NON request is answered with a NON
     * response, matched by its token. */
    b_init(&b, COAP_TYPE_NON, COAP_CODE_POST, 0x4242, "abcdefgh");
    b_block(&b, COAP_OPT_BLOCK1, 0, true, 0);
    size_t n = b_encode(&b, body, 16, msg, sizeof msg);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.type, COAP_TYPE_NON);
    assert_int_equal(r.reply.mid, 0x4242);
    assert_int_equal(r.reply.token_len, 8);
    assert_memory_equal(r.reply.token, "abcdefgh", 8);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    /* The token plays no part in matching blocks (RFC 7959 Section 2.4):
     * the next block under another token continues the transfer. */
    b_init(&b, COAP_TYPE_CON, COAP_CODE_POST, 0x4243, "");
    b_block(&b, COAP_OPT_BLOCK1, 1, false, 0);
    n = b_encode(&b, body + 16, 16, msg, sizeof msg);
    assert_int_equal(srv(s, "p", msg, n, 0, &r), EDHOC_BW_WHOLE);
    struct coap_msg w;
    assert_int_equal(edhoc_coap_msg_parse(r.whole, r.whole_len, &w), 0);
    assert_int_equal(w.type, COAP_TYPE_CON);
    assert_int_equal(w.token_len, 0);
    assert_memory_equal(w.payload, body, 32);
    free(r.whole);
    edhoc_bw_server_free(s);
}

static void test_request_tag(void **state)
{
    (void)state;
    struct edhoc_bw_server *s = edhoc_bw_server_new(NULL);
    uint8_t a[40], b[40], c[40], msg[128];
    fill(a, sizeof a, 21);
    fill(b, sizeof b, 22);
    fill(c, sizeof c, 23);
    struct result r;
    /* RFC 9175 Section 3.4: "The absence of a Request-Tag option is viewed
     * as a value distinct from all values with a single Request-Tag option
     * set"; Section 3.3: the server "cannot treat messages with a different
     * list of Request-Tag options as belonging to the same operation".
     * Three bodies to the same resource, interleaved block by block; and
     * the same options from another peer are a fourth. */
    const char *tags[3] = {NULL, "\x01", "\x02"};
    const uint8_t *bodies[3] = {a, b, c};
    for (uint32_t num = 0; num < 3; num++) {
        for (int t = 0; t < 4; t++) {
            const uint8_t *body = bodies[t % 3];
            const char *peer = t == 3 ? "other" : "p";
            bool last = num == 2;
            size_t n = block1_msg(msg, sizeof msg, num, !last, 0, body + 16 * num, last ? 8 : 16,
                                  tags[t % 3]);
            srv(s, peer, msg, n, num, &r);
            if (!last) {
                assert_int_equal(r.verdict, EDHOC_BW_REPLY);
                assert_int_equal(r.reply.code, CODE_CONTINUE);
                continue;
            }
            assert_int_equal(r.verdict, EDHOC_BW_WHOLE);
            struct coap_msg w;
            assert_int_equal(edhoc_coap_msg_parse(r.whole, r.whole_len, &w), 0);
            assert_int_equal(w.payload_len, 40);
            assert_memory_equal(w.payload, body, 40);
            /* The Request-Tag stays in the whole request (it is one of its
             * options; the application may ignore it, Section 3.4). */
            const struct coap_option *tag = edhoc_coap_msg_find_option(&w, COAP_OPT_REQUEST_TAG);
            if (tags[t % 3]) {
                assert_non_null(tag);
                assert_memory_equal(tag->value, tags[t % 3], 1);
            } else {
                assert_null(tag);
            }
            free(r.whole);
        }
    }
    assert_int_equal(stats(s).completed, 4);
    edhoc_bw_server_free(s);
}

static void test_limits(void **state)
{
    (void)state;
    struct edhoc_bw_limits lim = {.max_per_peer = 2, .max_transfers = 3};
    struct edhoc_bw_server *s = edhoc_bw_server_new(&lim);
    uint8_t body[16], msg[128];
    fill(body, sizeof body, 31);
    struct result r;
    /* RFC 9175 Section 3.3: "a server that can only serve a limited number
     * of block-wise operations at the same time can delay the start of the
     * operation by replying with 5.03 (Service unavailable) and a Max-Age". */
    size_t n = block1_msg(msg, sizeof msg, 0, true, 0, body, 16, "\x01");
    assert_int_equal(srv(s, "A", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    n = block1_msg(msg, sizeof msg, 0, true, 0, body, 16, "\x02");
    assert_int_equal(srv(s, "A", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    /* Per peer: A's third transfer waits. */
    n = block1_msg(msg, sizeof msg, 0, true, 0, body, 16, "\x03");
    assert_int_equal(srv(s, "A", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_UNAVAILABLE);
    assert_int_equal(uint_option(&r.reply, COAP_OPT_MAX_AGE), 5);
    /* Globally: B fills the third place, C waits. */
    n = block1_msg(msg, sizeof msg, 0, true, 0, body, 16, NULL);
    assert_int_equal(srv(s, "B", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    assert_int_equal(srv(s, "C", msg, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_UNAVAILABLE);
    struct edhoc_bw_stats st = stats(s);
    assert_int_equal(st.transfers, 3);
    assert_int_equal(st.refused_busy, 2);
    /* B completes: its place is free again (the marker left for the
     * response's Block1 yields to new transfers). */
    n = block1_msg(msg, sizeof msg, 1, false, 0, body, 3, NULL);
    assert_int_equal(srv(s, "B", msg, n, 1, &r), EDHOC_BW_WHOLE);
    free(r.whole);
    n = block1_msg(msg, sizeof msg, 0, true, 0, body, 16, NULL);
    assert_int_equal(srv(s, "C", msg, n, 2, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    edhoc_bw_server_free(s);

    /* The byte limit: a transfer that cannot grow waits too. */
    struct edhoc_bw_limits small = {.max_bytes = 1500};
    s = edhoc_bw_server_new(&small);
    uint8_t big[1024], m2[1200];
    fill(big, sizeof big, 1);
    n = block1_msg(m2, sizeof m2, 0, true, 6, big, 1024, NULL);
    assert_int_equal(srv(s, "A", m2, n, 0, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    assert_true(stats(s).bytes_held <= 1500);
    n = block1_msg(m2, sizeof m2, 1, true, 6, big, 1024, NULL);
    assert_int_equal(srv(s, "A", m2, n, 1, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_UNAVAILABLE);
    assert_true(stats(s).bytes_held <= 1500);
    edhoc_bw_server_free(s);
}

static void test_expiry(void **state)
{
    (void)state;
    struct edhoc_bw_limits lim = {.lifetime_ms = 1000};
    struct edhoc_bw_server *s = edhoc_bw_server_new(&lim);
    uint8_t body[3000], msg[1200];
    fill(body, sizeof body, 41);
    struct result r;
    size_t n = block1_msg(msg, sizeof msg, 0, true, 6, body, 1024, NULL);
    assert_int_equal(srv(s, "A", msg, n, 10000, &r), EDHOC_BW_REPLY);
    n = block1_msg(msg, sizeof msg, 0, true, 0, body, 16, NULL);
    assert_int_equal(srv(s, "B", msg, n, 10500, &r), EDHOC_BW_REPLY);
    assert_true(stats(s).bytes_held > 0);
    /* RFC 7959 Section 2.5: "A server is free to discard a partial request
     * body ... after EXCHANGE_LIFETIME" since the last block; here
     * lifetime_ms, counted from the last progress. */
    edhoc_bw_server_expire(s, 10999);
    assert_int_equal(stats(s).transfers, 2);
    edhoc_bw_server_expire(s, 11000);
    struct edhoc_bw_stats st = stats(s);
    assert_int_equal(st.transfers, 1);
    assert_int_equal(st.expired, 1);
    /* B's progress at 11400 keeps it alive past 11500. */
    n = block1_msg(msg, sizeof msg, 1, true, 0, body + 16, 16, NULL);
    assert_int_equal(srv(s, "B", msg, n, 11400, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_CONTINUE);
    edhoc_bw_server_expire(s, 12000);
    assert_int_equal(stats(s).transfers, 1);
    edhoc_bw_server_expire(s, 12400);
    st = stats(s);
    assert_int_equal(st.transfers, 0);
    assert_int_equal(st.bytes_held, 0);
    assert_int_equal(st.expired, 2);
    /* Section 2.9.2: blocks "sent ... long enough ago that the server has
     * already discarded them" get 4.08. */
    n = block1_msg(msg, sizeof msg, 2, true, 0, body + 32, 16, NULL);
    assert_int_equal(srv(s, "B", msg, n, 12500, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_INCOMPLETE);

    /* Kept Block2 bodies expire the same way. */
    struct builder b;
    b_init(&b, COAP_TYPE_CON, COAP_CODE_GET, 1, "g");
    b_str(&b, COAP_OPT_URI_PATH, "big");
    uint8_t get[64], resp[3100], out[1200];
    size_t get_len = b_encode(&b, NULL, 0, get, sizeof get);
    b_init(&b, COAP_TYPE_ACK, COAP_CODE_CONTENT, 1, "g");
    size_t resp_len = b_encode(&b, body, sizeof body, resp, sizeof resp);
    assert_true(edhoc_bw_server_response(s, "A", get, get_len, resp, resp_len, 1024, 20000, out,
                                         sizeof out) > 0);
    st = stats(s);
    assert_int_equal(st.kept_bodies, 1);
    assert_true(st.bytes_held >= sizeof body);
    edhoc_bw_server_expire(s, 21000);
    st = stats(s);
    assert_int_equal(st.kept_bodies, 0);
    assert_int_equal(st.bytes_held, 0);
    assert_int_equal(st.expired, 3);
    edhoc_bw_server_free(s);
}

/* ---- Block2 on the server ---- */

static void test_block2_server(void **state)
{
    (void)state;
    struct edhoc_bw_server *s = edhoc_bw_server_new(NULL);
    uint8_t body[3000], get[128], resp[3100], out[1200];
    fill(body, sizeof body, 51);
    struct builder b;
    b_init(&b, COAP_TYPE_CON, COAP_CODE_GET, 0x500, "g2");
    b_str(&b, COAP_OPT_URI_PATH, "big");
    size_t get_len = b_encode(&b, NULL, 0, get, sizeof get);
    b_init(&b, COAP_TYPE_ACK, COAP_CODE_CONTENT, 0x500, "g2");
    b_uint(&b, COAP_OPT_CONTENT_FORMAT, 60);
    size_t resp_len = b_encode(&b, body, sizeof body, resp, sizeof resp);
    struct result r;

    /* A request without Block2 runs the handler. */
    assert_int_equal(srv(s, "p", get, get_len, 0, &r), EDHOC_BW_PASS);
    long n = edhoc_bw_server_response(s, "p", get, get_len, resp, resp_len, 1024, 0, out,
                                      sizeof out);
    assert_true(n > 0);
    struct coap_msg m;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)n, &m), 0);
    /* RFC 7959 Section 2.2: block 0, M set, SZX of the server's size;
     * Section 4: "Size2 ... in a response ... to indicate the current
     * estimate the server has of the total size"; Section 2.4: an ETag lets
     * the client tell the representations apart. */
    assert_int_equal(m.code, COAP_CODE_CONTENT);
    assert_int_equal(m.mid, 0x500);
    assert_block(&m, COAP_OPT_BLOCK2, 0, true, 6);
    assert_int_equal(uint_option(&m, COAP_OPT_SIZE2), 3000);
    assert_int_equal(uint_option(&m, COAP_OPT_CONTENT_FORMAT), 60);
    const struct coap_option *et = edhoc_coap_msg_find_option(&m, COAP_OPT_ETAG);
    assert_non_null(et);
    assert_int_equal(et->len, 4);
    uint8_t etag[4];
    memcpy(etag, et->value, 4);
    assert_int_equal(m.payload_len, 1024);
    assert_memory_equal(m.payload, body, 1024);
    assert_int_equal(stats(s).kept_bodies, 1);

    /* Section 2.4: "the requester may retrieve additional blocks ... by
     * sending further requests with the same options as the initial request
     * and a Block2 Option giving the block number and block size desired". */
    uint8_t next[128];
    for (uint32_t num = 1; num <= 2; num++) {
        long nl = edhoc_bw_request_next(get, get_len, 6, num, next, sizeof next);
        assert_true(nl > 0);
        set_mid(next, (uint16_t)(0x500 + num));
        assert_int_equal(srv(s, "p", next, (size_t)nl, num, &r), EDHOC_BW_REPLY);
        assert_int_equal(r.reply.code, COAP_CODE_CONTENT);
        assert_int_equal(r.reply.type, COAP_TYPE_ACK);
        assert_int_equal(r.reply.mid, 0x500 + num);
        assert_block(&r.reply, COAP_OPT_BLOCK2, num, num < 2, 6);
        et = edhoc_coap_msg_find_option(&r.reply, COAP_OPT_ETAG);
        assert_non_null(et);
        assert_int_equal(et->len, 4);
        assert_memory_equal(et->value, etag, 4); /* the same representation */
        assert_null(edhoc_coap_msg_find_option(&r.reply, COAP_OPT_SIZE2));
        assert_int_equal(uint_option(&r.reply, COAP_OPT_CONTENT_FORMAT), 60);
        size_t want = num < 2 ? 1024 : 3000 - 2048;
        assert_int_equal(r.reply.payload_len, want);
        assert_memory_equal(r.reply.payload, body + 1024 * num, want);
    }
    /* NUM past the end of the body: 4.08 (Section 2.9.2). */
    long nl = edhoc_bw_request_next(get, get_len, 6, 3, next, sizeof next);
    assert_int_equal(srv(s, "p", next, (size_t)nl, 5, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.code, CODE_INCOMPLETE);
    /* Another peer has no body kept: its request goes to the handler. */
    nl = edhoc_bw_request_next(get, get_len, 6, 1, next, sizeof next);
    assert_int_equal(srv(s, "q", next, (size_t)nl, 5, &r), EDHOC_BW_PASS);

    /* Section 2.4: "To influence the block size used in a response, the
     * requester MAY also use the Block2 Option on the initial request ...
     * A server MUST use the block size indicated or a smaller size." */
    nl = edhoc_bw_request_next(get, get_len, 4, 0, next, sizeof next);
    assert_int_equal(srv(s, "p", next, (size_t)nl, 6, &r), EDHOC_BW_PASS);
    n = edhoc_bw_server_response(s, "p", next, (size_t)nl, resp, resp_len, 1024, 6, out,
                                 sizeof out);
    assert_true(n > 0);
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)n, &m), 0);
    assert_block(&m, COAP_OPT_BLOCK2, 0, true, 4);
    assert_int_equal(m.payload_len, 256);
    assert_int_equal(uint_option(&m, COAP_OPT_SIZE2), 3000);
    et = edhoc_coap_msg_find_option(&m, COAP_OPT_ETAG);
    uint8_t etag2[4];
    memcpy(etag2, et->value, 4);
    /* A new response is a new representation (a new ETag). */
    assert_memory_not_equal(etag2, etag, 4);
    assert_int_equal(stats(s).kept_bodies, 1);
    /* Later blocks in 256 bytes; with Size2 0 in the request, Size2 comes
     * back (Section 4: "Size2 in a request with value 0 asks the server to
     * provide a size estimate"). */
    b_init(&b, COAP_TYPE_NON, COAP_CODE_GET, 0x600, "g3");
    b_str(&b, COAP_OPT_URI_PATH, "big");
    b_block(&b, COAP_OPT_BLOCK2, 11, false, 4);
    b_uint(&b, COAP_OPT_SIZE2, 0);
    nl = (long)b_encode(&b, NULL, 0, next, sizeof next);
    assert_int_equal(srv(s, "p", next, (size_t)nl, 7, &r), EDHOC_BW_REPLY);
    assert_int_equal(r.reply.type, COAP_TYPE_NON);
    assert_block(&r.reply, COAP_OPT_BLOCK2, 11, false, 4);
    assert_int_equal(uint_option(&r.reply, COAP_OPT_SIZE2), 3000);
    assert_int_equal(r.reply.payload_len, 3000 - 11 * 256);
    assert_memory_equal(r.reply.payload, body + 11 * 256, 3000 - 11 * 256);
    et = edhoc_coap_msg_find_option(&r.reply, COAP_OPT_ETAG);
    assert_memory_equal(et->value, etag2, 4);
    /* A block in a larger size than the body was cut in is served in the
     * smaller one (the server "MUST use the block size indicated or a
     * smaller size"): NUM 1 of 1024 is byte 1024, NUM 4 of 256. */
    nl = edhoc_bw_request_next(get, get_len, 6, 1, next, sizeof next);
    assert_int_equal(srv(s, "p", next, (size_t)nl, 8, &r), EDHOC_BW_REPLY);
    assert_block(&r.reply, COAP_OPT_BLOCK2, 4, true, 4);
    assert_memory_equal(r.reply.payload, body + 1024, 256);
    assert_int_equal(stats(s).served_blocks, 6);

    /* A response that fits one block is copied as it is. */
    b_init(&b, COAP_TYPE_ACK, COAP_CODE_CONTENT, 0x500, "g2");
    size_t small_len = b_encode(&b, body, 1024, resp, sizeof resp);
    n = edhoc_bw_server_response(s, "p", get, get_len, resp, small_len, 1024, 9, out, sizeof out);
    assert_int_equal(n, (long)small_len);
    assert_memory_equal(out, resp, small_len);
    edhoc_bw_server_free(s);
}

static void test_block2_limits(void **state)
{
    (void)state;
    /* The body to keep does not fit max_bytes: the 5.03 of the request path
     * is written instead (RFC 9175 Section 3.3). */
    struct edhoc_bw_limits lim = {.max_bytes = 2000};
    struct edhoc_bw_server *s = edhoc_bw_server_new(&lim);
    uint8_t body[3000], get[64], resp[3100], out[1200];
    fill(body, sizeof body, 61);
    struct builder b;
    b_init(&b, COAP_TYPE_CON, COAP_CODE_GET, 7, "x");
    size_t get_len = b_encode(&b, NULL, 0, get, sizeof get);
    b_init(&b, COAP_TYPE_ACK, COAP_CODE_CONTENT, 7, "x");
    size_t resp_len = b_encode(&b, body, sizeof body, resp, sizeof resp);
    long n = edhoc_bw_server_response(s, "p", get, get_len, resp, resp_len, 1024, 0, out,
                                      sizeof out);
    assert_true(n > 0);
    struct coap_msg m;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)n, &m), 0);
    assert_int_equal(m.code, CODE_UNAVAILABLE);
    assert_int_equal(m.mid, 7);
    assert_int_equal(uint_option(&m, COAP_OPT_MAX_AGE), 5);
    assert_null(m.payload);
    struct edhoc_bw_stats st = stats(s);
    assert_int_equal(st.kept_bodies, 0);
    assert_int_equal(st.bytes_held, 0);
    assert_int_equal(st.refused_busy, 1);
    edhoc_bw_server_free(s);

    /* Above max_body a response is not served block-wise at all. */
    struct edhoc_bw_limits tiny = {.max_body = 2048};
    s = edhoc_bw_server_new(&tiny);
    assert_int_equal(edhoc_bw_server_response(s, "p", get, get_len, resp, resp_len, 1024, 0, out,
                                              sizeof out),
                     EDHOC_BW_ERR_TOO_LARGE);
    /* A block size below 16 bytes is no block size. */
    assert_int_equal(edhoc_bw_server_response(s, "p", get, get_len, resp, resp_len, 8, 0, out,
                                              sizeof out),
                     EDHOC_BW_ERR_ARG);
    /* A per-peer limit of 1: a new large response replaces the peer's
     * older kept body instead of being refused. */
    edhoc_bw_server_free(s);
    struct edhoc_bw_limits one = {.max_per_peer = 1};
    s = edhoc_bw_server_new(&one);
    assert_true(edhoc_bw_server_response(s, "p", get, get_len, resp, resp_len, 1024, 0, out,
                                         sizeof out) > 0);
    b_init(&b, COAP_TYPE_CON, COAP_CODE_GET, 8, "y");
    b_str(&b, COAP_OPT_URI_PATH, "other");
    uint8_t get2[64];
    size_t get2_len = b_encode(&b, NULL, 0, get2, sizeof get2);
    n = edhoc_bw_server_response(s, "p", get2, get2_len, resp, resp_len, 1024, 0, out,
                                 sizeof out);
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)n, &m), 0);
    assert_int_equal(m.code, COAP_CODE_CONTENT);
    assert_int_equal(stats(s).kept_bodies, 1);
    edhoc_bw_server_free(s);

    /* Blocks add an ETag, Block2, Size2 and maybe Block1 to the response's
     * options; beyond what a message may hold (COAP_MSG_MAX_OPTIONS) the
     * response is refused rather than cut into blocks nobody could parse. */
    s = edhoc_bw_server_new(NULL);
    b_init(&b, COAP_TYPE_ACK, COAP_CODE_CONTENT, 7, "x");
    for (int i = 0; i < 29; i++)
        b_str(&b, COAP_OPT_LOCATION_PATH, "l");
    resp_len = b_encode(&b, body, sizeof body, resp, sizeof resp);
    assert_int_equal(edhoc_bw_server_response(s, "p", get, get_len, resp, resp_len, 1024, 0, out,
                                              sizeof out),
                     EDHOC_BW_ERR_MALFORMED);
    assert_int_equal(stats(s).bytes_held, 0);
    /* One option fewer fits: 28 + ETag + Block2 + Size2 + Block1 = 32. */
    b_init(&b, COAP_TYPE_ACK, COAP_CODE_CONTENT, 7, "x");
    for (int i = 0; i < 28; i++)
        b_str(&b, COAP_OPT_LOCATION_PATH, "l");
    resp_len = b_encode(&b, body, sizeof body, resp, sizeof resp);
    n = edhoc_bw_server_response(s, "p", get, get_len, resp, resp_len, 1024, 0, out, sizeof out);
    assert_true(n > 0);
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)n, &m), 0);
    assert_int_equal(m.option_count, 31);
    edhoc_bw_server_free(s);
}

/* ---- Client helpers ---- */

static void test_request_helpers(void **state)
{
    (void)state;
    uint8_t body[100], msg[256], out[256];
    fill(body, sizeof body, 71);
    struct builder b;
    b_init(&b, COAP_TYPE_CON, COAP_CODE_POST, 0x77, "rq");
    b_str(&b, COAP_OPT_URI_HOST, "h");
    b_str(&b, COAP_OPT_URI_PATH, "a");
    b_str(&b, COAP_OPT_URI_PATH, "b");
    b_block(&b, COAP_OPT_BLOCK1, 9, true, 3); /* stale: replaced */
    b_uint(&b, COAP_OPT_SIZE1, 9999);         /* stale: replaced */
    b_str(&b, COAP_OPT_REQUEST_TAG, "t");
    size_t len = b_encode(&b, body, sizeof body, msg, sizeof msg);

    /* Block 1 of 32: bytes 32..63, M set, no Size1 (Section 4: Size1 is
     * the size indication of the first block). */
    long n = edhoc_bw_request_block(msg, len, 1, 1, out, sizeof out);
    assert_true(n > 0);
    struct coap_msg m;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)n, &m), 0);
    assert_int_equal(m.mid, 0x77);
    assert_int_equal(m.token_len, 2);
    assert_block(&m, COAP_OPT_BLOCK1, 1, true, 1);
    assert_null(edhoc_coap_msg_find_option(&m, COAP_OPT_SIZE1));
    assert_int_equal(m.payload_len, 32);
    assert_memory_equal(m.payload, body + 32, 32);
    /* The other options in their order: Uri-Host, Uri-Path a, Uri-Path b,
     * Block1, Request-Tag. */
    assert_int_equal(m.option_count, 5);
    assert_int_equal(m.options[0].number, COAP_OPT_URI_HOST);
    assert_int_equal(m.options[1].number, COAP_OPT_URI_PATH);
    assert_memory_equal(m.options[1].value, "a", 1);
    assert_int_equal(m.options[2].number, COAP_OPT_URI_PATH);
    assert_memory_equal(m.options[2].value, "b", 1);
    assert_int_equal(m.options[3].number, COAP_OPT_BLOCK1);
    assert_int_equal(m.options[4].number, COAP_OPT_REQUEST_TAG);
    /* Block 0 carries Size1 = the whole size. */
    n = edhoc_bw_request_block(msg, len, 1, 0, out, sizeof out);
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)n, &m), 0);
    assert_int_equal(uint_option(&m, COAP_OPT_SIZE1), 100);
    assert_block(&m, COAP_OPT_BLOCK1, 0, true, 1);
    /* The last block: 100 - 96 = 4 bytes, M unset. */
    n = edhoc_bw_request_block(msg, len, 1, 3, out, sizeof out);
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)n, &m), 0);
    assert_block(&m, COAP_OPT_BLOCK1, 3, false, 1);
    assert_int_equal(m.payload_len, 4);
    assert_memory_equal(m.payload, body + 96, 4);
    /* Past the end: nothing. */
    assert_int_equal(edhoc_bw_request_block(msg, len, 1, 4, out, sizeof out), 0);
    /* Arguments and room. */
    assert_int_equal(edhoc_bw_request_block(msg, len, 7, 0, out, sizeof out), EDHOC_BW_ERR_ARG);
    assert_int_equal(edhoc_bw_request_block(msg, len, 1, 1u << 20, out, sizeof out),
                     EDHOC_BW_ERR_ARG);
    assert_int_equal(edhoc_bw_request_block(msg, len, 1, 0, out, 20), EDHOC_BW_ERR_BUFFER);
    assert_int_equal(edhoc_bw_request_block(msg, 3, 1, 0, out, sizeof out),
                     EDHOC_BW_ERR_MALFORMED);

    /* request_next: no payload, Block1 and Size1 gone, Block2(num, 0, szx)
     * (Section 2.4: "In a request, the client MUST set the M bit of a Block2
     * Option to zero"). */
    n = edhoc_bw_request_next(msg, len, 5, 7, out, sizeof out);
    assert_true(n > 0);
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)n, &m), 0);
    assert_null(m.payload);
    assert_null(edhoc_coap_msg_find_option(&m, COAP_OPT_BLOCK1));
    assert_null(edhoc_coap_msg_find_option(&m, COAP_OPT_SIZE1));
    assert_block(&m, COAP_OPT_BLOCK2, 7, false, 5);
    assert_non_null(edhoc_coap_msg_find_option(&m, COAP_OPT_REQUEST_TAG));
    /* An existing Block2 is replaced, not repeated. */
    long n2 = edhoc_bw_request_next(out, (size_t)n, 5, 8, msg, sizeof msg);
    assert_int_equal(edhoc_coap_msg_parse(msg, (size_t)n2, &m), 0);
    assert_block(&m, COAP_OPT_BLOCK2, 8, false, 5);
    size_t count = 0;
    for (size_t i = 0; i < m.option_count; i++)
        count += m.options[i].number == COAP_OPT_BLOCK2;
    assert_int_equal(count, 1);
    assert_int_equal(edhoc_bw_request_next(msg, (size_t)n2, 7, 0, out, sizeof out),
                     EDHOC_BW_ERR_ARG);
    /* Only requests have blocks to send or ask for: an Empty message
     * carries no options at all (RFC 7252 Section 4.1), a response is no
     * request. */
    static const uint8_t empty[] = {0x70, 0x00, 0xa0, 0xad};
    assert_int_equal(edhoc_bw_request_next(empty, sizeof empty, 2, 1, out, sizeof out),
                     EDHOC_BW_ERR_MALFORMED);
    assert_int_equal(edhoc_bw_request_block(empty, sizeof empty, 2, 0, out, sizeof out),
                     EDHOC_BW_ERR_MALFORMED);
    b_init(&b, COAP_TYPE_ACK, COAP_CODE_CONTENT, 1, "r");
    len = b_encode(&b, body, 10, msg, sizeof msg);
    assert_int_equal(edhoc_bw_request_next(msg, len, 2, 1, out, sizeof out),
                     EDHOC_BW_ERR_MALFORMED);
}

/* A response block by hand. */
static size_t block2_resp(uint8_t *out, size_t cap, uint32_t num, bool more, unsigned szx,
                          const char *etag, const uint8_t *payload, size_t plen, long size2)
{
    struct builder b;
    b_init(&b, COAP_TYPE_ACK, COAP_CODE_CONTENT, 1, "c");
    if (etag)
        b_str(&b, COAP_OPT_ETAG, etag);
    b_block(&b, COAP_OPT_BLOCK2, num, more, szx);
    if (size2 >= 0)
        b_uint(&b, COAP_OPT_SIZE2, (uint32_t)size2);
    return b_encode(&b, payload, plen, out, cap);
}

static void test_collect_refusals(void **state)
{
    (void)state;
    uint8_t body[64], msg[128];
    fill(body, sizeof body, 81);
    struct edhoc_bw_collect c;

    /* Section 4: Size2 announces the whole size: above max_body it is
     * refused before anything is kept. */
    edhoc_bw_collect_init(&c, 1000);
    size_t n = block2_resp(msg, sizeof msg, 0, true, 0, "e1", body, 16, 1001);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), EDHOC_BW_ERR_TOO_LARGE);
    assert_null(c.body);
    assert_int_equal(c.len, 0);
    edhoc_bw_collect_free(&c);

    /* Section 2.4: a block of another representation (ETag) is refused. */
    edhoc_bw_collect_init(&c, 0);
    n = block2_resp(msg, sizeof msg, 0, true, 0, "e1", body, 16, 48);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), 1);
    assert_int_equal(c.next_num, 1);
    assert_int_equal(c.szx, 0);
    n = block2_resp(msg, sizeof msg, 1, true, 0, "e2", body + 16, 16, -1);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), EDHOC_BW_ERR_ETAG);
    n = block2_resp(msg, sizeof msg, 1, true, 0, NULL, body + 16, 16, -1);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), EDHOC_BW_ERR_ETAG);
    /* A NUM other than the one asked for. */
    n = block2_resp(msg, sizeof msg, 2, true, 0, "e1", body + 32, 16, -1);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), EDHOC_BW_ERR_ORDER);
    n = block2_resp(msg, sizeof msg, 0, true, 0, "e1", body, 16, -1);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), EDHOC_BW_ERR_ORDER);
    /* A short block with M set (only "the last block (the one returned
     * with the M bit not set)" may be short). */
    n = block2_resp(msg, sizeof msg, 1, true, 0, "e1", body + 16, 15, -1);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), EDHOC_BW_ERR_MALFORMED);
    /* The right block after all refusals still fits. */
    n = block2_resp(msg, sizeof msg, 1, true, 0, "e1", body + 16, 16, -1);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), 1);
    n = block2_resp(msg, sizeof msg, 2, false, 0, "e1", body + 32, 5, -1);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), 0);
    assert_true(c.done);
    assert_int_equal(c.len, 37);
    assert_memory_equal(c.body, body, 37);
    uint8_t whole[128];
    long w = edhoc_bw_collect_message(&c, msg, n, whole, sizeof whole);
    assert_true(w > 0);
    struct coap_msg m;
    assert_int_equal(edhoc_coap_msg_parse(whole, (size_t)w, &m), 0);
    assert_null(edhoc_coap_msg_find_option(&m, COAP_OPT_BLOCK2));
    assert_null(edhoc_coap_msg_find_option(&m, COAP_OPT_SIZE2));
    assert_non_null(edhoc_coap_msg_find_option(&m, COAP_OPT_ETAG));
    assert_int_equal(m.payload_len, 37);
    assert_memory_equal(m.payload, body, 37);
    assert_int_equal(edhoc_bw_collect_message(&c, msg, n, whole, 10), EDHOC_BW_ERR_BUFFER);
    /* Nothing more is expected. */
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), EDHOC_BW_ERR_ARG);
    edhoc_bw_collect_free(&c);
    assert_null(c.body);

    /* A body growing past max_body without Size2. */
    edhoc_bw_collect_init(&c, 40);
    n = block2_resp(msg, sizeof msg, 0, true, 0, NULL, body, 16, -1);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), 1);
    n = block2_resp(msg, sizeof msg, 1, true, 0, NULL, body + 16, 16, -1);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), 1);
    n = block2_resp(msg, sizeof msg, 2, true, 0, NULL, body + 32, 16, -1);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), EDHOC_BW_ERR_TOO_LARGE);
    assert_int_equal(c.len, 32);
    edhoc_bw_collect_free(&c);

    /* A response without Block2 is whole at once. */
    edhoc_bw_collect_init(&c, 0);
    struct builder b;
    b_init(&b, COAP_TYPE_ACK, COAP_CODE_CONTENT, 1, "c");
    n = b_encode(&b, body, 10, msg, sizeof msg);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), 0);
    assert_true(c.done);
    assert_int_equal(c.len, 10);
    assert_memory_equal(c.body, body, 10);
    edhoc_bw_collect_free(&c);
    /* A request or garbage is no response. */
    edhoc_bw_collect_init(&c, 0);
    b_init(&b, COAP_TYPE_CON, COAP_CODE_GET, 1, "c");
    n = b_encode(&b, NULL, 0, msg, sizeof msg);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), EDHOC_BW_ERR_MALFORMED);
    assert_int_equal(edhoc_bw_collect_add(&c, (const uint8_t *)"\x40", 1), EDHOC_BW_ERR_MALFORMED);
    /* SZX 7 in a response. */
    b_init(&b, COAP_TYPE_ACK, COAP_CODE_CONTENT, 1, "c");
    b_opt(&b, COAP_OPT_BLOCK2, "\x0f", 1);
    n = b_encode(&b, body, 16, msg, sizeof msg);
    assert_int_equal(edhoc_bw_collect_add(&c, msg, n), EDHOC_BW_ERR_MALFORMED);
    edhoc_bw_collect_free(&c);
}

/* The client sends n bytes in blocks of szx (request_block), the server
 * engine reassembles them, the handler answers with the body (different
 * bytes) cut in blocks of resp_szx, and the client gathers it
 * (request_next, collect). Both bodies must arrive byte for byte. */
static void roundtrip(size_t n, unsigned szx, unsigned resp_szx)
{
    struct edhoc_bw_server *s = edhoc_bw_server_new(NULL);
    assert_non_null(s);
    uint8_t *body = malloc(n + 1), *answer = malloc(n + 1);
    fill(body, n, (unsigned)n + szx);
    fill(answer, n, (unsigned)n * 3u + resp_szx + 1u);
    size_t cap = n + 256;
    uint8_t *req = malloc(cap), *resp = malloc(cap), *whole_resp = malloc(cap);
    size_t req_len = upload(req, cap, COAP_TYPE_CON, 0x100, "\x07", body, n);
    uint8_t blk[1200];
    struct result *r = malloc(sizeof *r);
    const char *peer = "[2001:db8::1]:5683";
    uint64_t now = 1;
    size_t bs = edhoc_block_size(szx);
    uint32_t last = n ? (uint32_t)((n - 1) / bs) : 0;

    for (uint32_t num = 0;; num++) {
        long bl = edhoc_bw_request_block(req, req_len, szx, num, blk, sizeof blk);
        assert_true(bl > 0);
        set_mid(blk, (uint16_t)(0x100 + num));
        srv(s, peer, blk, (size_t)bl, now++, r);
        if (num == last)
            break;
        assert_int_equal(r->verdict, EDHOC_BW_REPLY);
        assert_int_equal(r->reply.code, CODE_CONTINUE);
        assert_block(&r->reply, COAP_OPT_BLOCK1, num, true, szx);
    }
    assert_int_equal(r->verdict, EDHOC_BW_WHOLE);
    assert_int_equal(edhoc_bw_request_block(req, req_len, szx, last + 1, blk, sizeof blk), 0);
    struct coap_msg w;
    assert_int_equal(edhoc_coap_msg_parse(r->whole, r->whole_len, &w), 0);
    assert_int_equal(w.payload_len, n);
    if (n)
        assert_memory_equal(w.payload, body, n);

    struct builder b;
    b_init(&b, COAP_TYPE_ACK, CODE_CHANGED, w.mid, "tk");
    b_uint(&b, COAP_OPT_CONTENT_FORMAT, 42);
    size_t resp_len = b_encode(&b, answer, n, resp, cap);
    long o = edhoc_bw_server_response(s, peer, r->whole, r->whole_len, resp, resp_len,
                                      edhoc_block_size(resp_szx), now++, r->out, sizeof r->out);
    free(r->whole);
    assert_true(o > 0);
    struct coap_msg first;
    assert_int_equal(edhoc_coap_msg_parse(r->out, (size_t)o, &first), 0);
    /* The response to the final Block1 request echoes it (Section 2.3). */
    assert_block(&first, COAP_OPT_BLOCK1, last, false, szx);

    struct edhoc_bw_collect c;
    edhoc_bw_collect_init(&c, 0);
    int rc = edhoc_bw_collect_add(&c, r->out, (size_t)o);
    uint8_t last_resp[1200];
    size_t last_len = (size_t)o;
    memcpy(last_resp, r->out, last_len);
    uint32_t rounds = 0;
    while (rc == 1) {
        assert_int_equal(c.szx, resp_szx);
        long nl = edhoc_bw_request_next(req, req_len, c.szx, c.next_num, blk, sizeof blk);
        assert_true(nl > 0);
        assert_int_equal(srv(s, peer, blk, (size_t)nl, now++, r), EDHOC_BW_REPLY);
        rc = edhoc_bw_collect_add(&c, r->out, r->out_len);
        last_len = r->out_len;
        memcpy(last_resp, r->out, last_len);
        assert_true(++rounds < 70000);
    }
    assert_int_equal(rc, 0);
    assert_true(c.done);
    assert_int_equal(c.len, n);
    if (n)
        assert_memory_equal(c.body, answer, n);
    long wl = edhoc_bw_collect_message(&c, last_resp, last_len, whole_resp, cap);
    assert_true(wl > 0);
    struct coap_msg wr;
    assert_int_equal(edhoc_coap_msg_parse(whole_resp, (size_t)wl, &wr), 0);
    assert_int_equal(wr.code, CODE_CHANGED);
    assert_int_equal(uint_option(&wr, COAP_OPT_CONTENT_FORMAT), 42);
    assert_null(edhoc_coap_msg_find_option(&wr, COAP_OPT_BLOCK2));
    assert_int_equal(wr.payload_len, n);
    if (n)
        assert_memory_equal(wr.payload, answer, n);
    struct edhoc_bw_stats st = stats(s);
    assert_int_equal(st.transfers, 0);
    assert_int_equal(st.completed, 1);
    assert_int_equal(st.refused_incomplete + st.refused_busy + st.refused_too_large, 0);
    edhoc_bw_collect_free(&c);
    edhoc_bw_server_free(s);
    free(r);
    free(req);
    free(resp);
    free(whole_resp);
    free(body);
    free(answer);
}

static void test_client_roundtrip(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 1023, 1024, 1025, 3000, 20000, 65536};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (unsigned szx = 0; szx <= 6; szx++)
            roundtrip(sizes[i], szx, (szx + 3) % 7);
    }
}

static void test_free_with_state(void **state)
{
    (void)state;
    /* Transfers, kept bodies and markers left behind are all freed (the
     * sanitizer run checks for leaks). */
    struct edhoc_bw_server *s = edhoc_bw_server_new(NULL);
    uint8_t body[3000], msg[1200], resp[3100], out[1200];
    fill(body, sizeof body, 91);
    struct result r;
    size_t n = block1_msg(msg, sizeof msg, 0, true, 6, body, 1024, NULL);
    srv(s, "a", msg, n, 0, &r);
    n = block1_msg(msg, sizeof msg, 0, false, 0, body, 5, "\x09");
    assert_int_equal(srv(s, "a", msg, n, 0, &r), EDHOC_BW_WHOLE);
    free(r.whole);
    struct builder b;
    b_init(&b, COAP_TYPE_ACK, COAP_CODE_CONTENT, 1, "c");
    size_t resp_len = b_encode(&b, body, sizeof body, resp, sizeof resp);
    assert_true(edhoc_bw_server_response(s, "b", msg, n, resp, resp_len, 64, 0, out, sizeof out) >
                0);
    struct edhoc_bw_stats st = stats(s);
    assert_int_equal(st.transfers, 1);
    assert_int_equal(st.kept_bodies, 1);
    edhoc_bw_server_free(s);
    edhoc_bw_server_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_option_codec),
        cmocka_unit_test(test_block1_reassembly),
        cmocka_unit_test(test_block1_single_block),
        cmocka_unit_test(test_block1_out_of_order),
        cmocka_unit_test(test_block1_late_negotiation),
        cmocka_unit_test(test_block1_duplicate),
        cmocka_unit_test(test_block1_restart),
        cmocka_unit_test(test_block1_too_large),
        cmocka_unit_test(test_block1_malformed),
        cmocka_unit_test(test_reply_types),
        cmocka_unit_test(test_request_tag),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_block2_server),
        cmocka_unit_test(test_block2_limits),
        cmocka_unit_test(test_request_helpers),
        cmocka_unit_test(test_collect_refusals),
        cmocka_unit_test(test_client_roundtrip),
        cmocka_unit_test(test_free_with_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
