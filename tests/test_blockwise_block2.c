/*
 * Block-wise transfer (RFC 7959): the server engine's Block2 cutting and
 * serving of a response body, and its limits.
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
    long n =
        edhoc_bw_server_response(s, "p", get, get_len, resp, resp_len, 1024, 0, out, sizeof out);
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
    long n =
        edhoc_bw_server_response(s, "p", get, get_len, resp, resp_len, 1024, 0, out, sizeof out);
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
    assert_int_equal(
        edhoc_bw_server_response(s, "p", get, get_len, resp, resp_len, 1024, 0, out, sizeof out),
        EDHOC_BW_ERR_TOO_LARGE);
    /* A block size below 16 bytes is no block size. */
    assert_int_equal(
        edhoc_bw_server_response(s, "p", get, get_len, resp, resp_len, 8, 0, out, sizeof out),
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
    n = edhoc_bw_server_response(s, "p", get2, get2_len, resp, resp_len, 1024, 0, out, sizeof out);
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
    assert_int_equal(
        edhoc_bw_server_response(s, "p", get, get_len, resp, resp_len, 1024, 0, out, sizeof out),
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block2_server),
        cmocka_unit_test(test_block2_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
