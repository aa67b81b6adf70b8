/*
 * Block-wise transfer (RFC 7959): the client helpers, their refusals, and
 * the client in a loop against the server engine for many body and block
 * sizes.
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
    assert_int_equal(edhoc_bw_request_block(msg, 3, 1, 0, out, sizeof out), EDHOC_BW_ERR_MALFORMED);

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_helpers),
        cmocka_unit_test(test_collect_refusals),
        cmocka_unit_test(test_client_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
