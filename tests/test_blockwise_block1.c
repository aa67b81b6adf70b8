/*
 * Block-wise transfer (RFC 7959) with the Request-Tag of RFC 9175: the
 * server engine's Block1 reassembly and refusals, the types of its replies,
 * its limits and expiry.
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

#include "blockwise_test_common.h"

#define CODE_TOO_LARGE COAP_CODE(4, 13)

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
    assert_int_equal(
        edhoc_bw_server_request(s, "p", msg, n, 0, &r.whole, &r.whole_len, r.out, 4, &small_len),
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

int main(void)
{
    const struct CMUnitTest tests[] = {
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
