/*
 * Hostile datagrams against a real `edhoc-cli responder` process on
 * loopback, 2: block-wise bounds of our own engine (RFC 7959): Size1 =
 * 2^32-1, bodies past --max-body in order and by a far block number,
 * blocks out of order, duplicate blocks, an abandoned transfer. After each
 * attack the responder must be alive, still serve a handshake and an
 * OSCORE request, stop cleanly on SIGTERM, with no sanitizer report.
 */
#include "cli_abuse_test_common.h"

/* =====================================================================
 * 2. Block-wise bounds (RFC 7959)
 * =================================================================== */

/* Size1 = 2^32-1 on block 0: RFC 7959 Section 4, Size1 "in a request
 * carrying a Block1 Option, to indicate the current estimate the client
 * has of the total size of the resource representation"; and "in a 4.13
 * response, to indicate the maximum size that would have been
 * acceptable" (Section 2.9.3: 4.13 "accompanied by a Size1 Option").
 * Answered on block 0 itself, before any block is kept. */
static void check_size1_refused(uint16_t port, uint32_t max_body, const char *what)
{
    int fd = udp_open(NULL);
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    uint32_t huge = 0xFFFFFFFFu, s1 = 0;
    size_t n =
        block1_req(req, sizeof req, T_CON, 0x2001, 0x21, "echo", 0, true, 0, &huge, filler, 16);
    expect_code(fd, port, req, n, resp, sizeof resp, C_TOO_LARGE, &v, what);
    if (!view_uint(&v, O_SIZE1, &s1))
        fail_msg("%s: 4.13 without Size1", what);
    assert_int_equal(s1, max_body);
    close(fd);
}

static void test_size1_huge(void **state)
{
    (void)state;
    struct net_proc r, small;
    start(&r, "size1", "--allow-unprotected");
    /* The default --max-body is 65536. */
    check_size1_refused(r.port, 65536, "Size1 2^32-1, default --max-body");
    start(&small, "size1-small", "--allow-unprotected --max-body 4096");
    /* Size1 in the 4.13 is the configured limit, not a constant. */
    check_size1_refused(small.port, 4096, "Size1 2^32-1, --max-body 4096");
    /* Size1 one above the limit is refused too, Size1 = the limit is
     * not: the bound is exact. */
    {
        int fd = udp_open(NULL);
        uint8_t req[1500], resp[1500];
        struct coap_view v;
        uint32_t s1 = 4097;
        size_t n =
            block1_req(req, sizeof req, T_CON, 0x2101, 0x22, "echo", 0, true, 0, &s1, filler, 16);
        expect_code(fd, small.port, req, n, resp, sizeof resp, C_TOO_LARGE, &v,
                    "Size1 4097 with --max-body 4096");
        s1 = 4096;
        n = block1_req(req, sizeof req, T_CON, 0x2102, 0x23, "echo", 0, true, 0, &s1, filler, 16);
        expect_code(fd, small.port, req, n, resp, sizeof resp, C_CONTINUE, &v,
                    "Size1 4096 with --max-body 4096");
        close(fd);
    }
    finish(&small, "Size1 2^32-1");
    finish(&r, "Size1 2^32-1");
}

/* A body sent in order, in 1 KiB blocks, growing past max_body: every
 * block up to the limit is 2.31, the first block past it is 4.13 with
 * Size1 = max_body (RFC 7959 Section 2.9.3 "allows the server to return
 * this response code at any time during a Block1 transfer to indicate
 * that it does not currently have the resources to store blocks"), not
 * silence. */
static void send_body_past_limit(uint16_t port, uint32_t max_body, const char *what)
{
    int fd = udp_open(NULL);
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    uint32_t blocks = max_body / 1024;
    for (uint32_t num = 0; num < blocks; num++) {
        size_t n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x3000 + num), 0x31, "echo", num,
                              true, 6, NULL, filler, 1024);
        char w[160];
        snprintf(w, sizeof w, "%s: block %u", what, num);
        expect_code(fd, port, req, n, resp, sizeof resp, C_CONTINUE, &v, w);
        expect_block1(&v, num, true, w);
    }
    size_t n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x3000 + blocks), 0x31, "echo", blocks,
                          true, 6, NULL, filler, 1024);
    char w[160];
    snprintf(w, sizeof w, "%s: block %u, the first past max_body %u", what, blocks, max_body);
    expect_code(fd, port, req, n, resp, sizeof resp, C_TOO_LARGE, &v, w);
    uint32_t s1 = 0;
    if (!view_uint(&v, O_SIZE1, &s1) || s1 != max_body)
        fail_msg("%s: 4.13 without Size1 = %u", w, max_body);
    close(fd);
}

static void test_body_past_max_body(void **state)
{
    (void)state;
    struct net_proc small, deflt;
    start(&small, "past-small", "--allow-unprotected --max-body 4096");
    send_body_past_limit(small.port, 4096, "--max-body 4096");
    finish(&small, "a body past --max-body 4096");
    start(&deflt, "past-default", "--allow-unprotected");
    send_body_past_limit(deflt.port, 65536, "default --max-body 65536");
    finish(&deflt, "a body past the default --max-body");
}

/* --max-body above the default: a body of 80 KiB in order is taken whole
 * (the option promises bodies up to N: "largest body reassembled or
 * served"), /echo answers 2.04 with Size2 = 81920 (RFC 7959 Section 4:
 * Size2 in a Block2 response gives the whole size). */
static void test_max_body_above_default(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "big-body", "--allow-unprotected --max-body 131072");
    int fd = udp_open(NULL);
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    const uint32_t blocks = 80;
    for (uint32_t num = 0; num < blocks; num++) {
        bool more = num + 1 < blocks;
        size_t n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x4000 + num), 0x41, "echo", num,
                              more, 6, NULL, filler, 1024);
        char w[160];
        snprintf(w, sizeof w, "--max-body 131072: block %u of an 80 KiB body", num);
        long len = exchange(fd, r.port, req, n, resp, sizeof resp);
        if (len < 0)
            fail_msg("%s: no answer (the largest body --max-body allows is refused silently)", w);
        assert_true(coap_parse(resp, (size_t)len, &v));
        if (more) {
            if (v.code != C_CONTINUE)
                fail_msg("%s: answered %s, expected 2.31", w, code_str(v.code));
            expect_block1(&v, num, true, w);
        } else {
            uint32_t size2 = 0;
            if (v.code != CODE(2, 4) || !view_uint(&v, O_SIZE2, &size2) || size2 != blocks * 1024)
                fail_msg("%s: answered %s (Size2 %u), expected 2.04 with Size2 %u", w,
                         code_str(v.code), size2, blocks * 1024);
        }
    }
    close(fd);
    finish(&r, "an 80 KiB body with --max-body 131072");
}

/* A claimed 4 GiB body by block number, from a port with no transfer:
 * NUM 1000 of 1 KiB blocks (1000 KiB, past --max-body 65536 but below
 * the 1 MiB any --max-body may allow) and NUM 2^20-1 (1 GiB, the largest
 * offset Block1 can name; with Size1 2^32-1 the body claimed is 4 GiB).
 * No body above max_body is taken: 4.13 (RFC 7959 Section 2.9.3) at once,
 * with Size1 = max_body. */
static void far_block(uint16_t port, uint32_t num, bool with_size1, const char *what)
{
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    uint32_t huge = 0xFFFFFFFFu, s1 = 0;
    int fd = udp_open(NULL);
    size_t n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x5000 + (num & 0xFF)), 0x51, "echo",
                          num, true, 6, with_size1 ? &huge : NULL, filler, 1024);
    expect_code(fd, port, req, n, resp, sizeof resp, C_TOO_LARGE, &v, what);
    if (!view_uint(&v, O_SIZE1, &s1) || s1 != 65536)
        fail_msg("%s: 4.13 without Size1 65536", what);
    close(fd);
}

static void test_far_block_number(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "far-num", "--allow-unprotected");
    far_block(r.port, 1000, false, "Block1 NUM 1000 (1 KiB blocks)");
    far_block(r.port, 1000, true, "Block1 NUM 1000 (1 KiB blocks) with Size1 2^32-1");
    assert_alive(&r, "block 1000");
    far_block(r.port, 0xFFFFF, false, "Block1 NUM 2^20-1 (1 KiB blocks)");
    far_block(r.port, 0xFFFFF, true, "Block1 NUM 2^20-1 (1 KiB blocks) with Size1 2^32-1");
    finish(&r, "a far block number");
}

static void test_out_of_order(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "order", "--allow-unprotected");
    int fd = udp_open(NULL);
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    size_t n =
        block1_req(req, sizeof req, T_CON, 0x6001, 0x61, "echo", 0, true, 6, NULL, filler, 1024);
    expect_code(fd, r.port, req, n, resp, sizeof resp, C_CONTINUE, &v, "block 0");
    /* RFC 7959 Section 2.9.2: 4.08 "indicates that the server has not
     * received the blocks of the request body that it needs to proceed.
     * The client has not sent all blocks, not sent them in the order
     * required by the server, or has sent them long enough ago that the
     * server has already discarded them." Block 2 after block 0: */
    n = block1_req(req, sizeof req, T_CON, 0x6002, 0x61, "echo", 2, true, 6, NULL, filler, 1024);
    expect_code(fd, r.port, req, n, resp, sizeof resp, C_INCOMPLETE, &v, "block 2 after block 0");
    /* "... has not sent all blocks": a continuation from a port with no
     * transfer. */
    int fd2 = udp_open(NULL);
    n = block1_req(req, sizeof req, T_CON, 0x6003, 0x62, "echo", 1, false, 6, NULL, filler, 1024);
    expect_code(fd2, r.port, req, n, resp, sizeof resp, C_INCOMPLETE, &v,
                "block 1 without a transfer");
    /* A smaller block size in the middle changes the offsets: block 3 of
     * 256 bytes after block 0 of 1 KiB is offset 768, not 1024. */
    n = block1_req(req, sizeof req, T_CON, 0x6004, 0x63, "echo", 0, true, 6, NULL, filler, 1024);
    expect_code(fd2, r.port, req, n, resp, sizeof resp, C_CONTINUE, &v, "block 0 (1 KiB)");
    n = block1_req(req, sizeof req, T_CON, 0x6005, 0x63, "echo", 3, true, 4, NULL, filler, 256);
    expect_code(fd2, r.port, req, n, resp, sizeof resp, C_INCOMPLETE, &v,
                "block 3 of 256 bytes (offset 768) after block 0 of 1 KiB");
    /* NUM 0 starts again (edhoc/blockwise.h) and the body completes;
     * Size2 (RFC 7959 Section 4: "the current estimate the server has of
     * the total size") is 1024 + 10. */
    n = block1_req(req, sizeof req, T_CON, 0x6006, 0x61, "echo", 0, true, 6, NULL, filler, 1024);
    expect_code(fd, r.port, req, n, resp, sizeof resp, C_CONTINUE, &v, "block 0 again");
    n = block1_req(req, sizeof req, T_CON, 0x6007, 0x61, "echo", 1, false, 6, NULL, filler, 10);
    expect_code(fd, r.port, req, n, resp, sizeof resp, CODE(2, 4), &v, "block 1 (last)");
    uint32_t size2 = 0;
    assert_true(view_uint(&v, O_SIZE2, &size2));
    assert_int_equal(size2, 1034);
    close(fd);
    close(fd2);
    finish(&r, "blocks out of order");
}

static void test_duplicate_blocks(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "dup", "--allow-unprotected");
    int fd = udp_open(NULL);
    uint8_t req[1500], resp[1500], first[1500];
    struct coap_view v;
    size_t n =
        block1_req(req, sizeof req, T_CON, 0x7001, 0x71, "echo", 0, true, 6, NULL, filler, 1024);
    expect_code(fd, r.port, req, n, resp, sizeof resp, C_CONTINUE, &v, "block 0");
    n = block1_req(req, sizeof req, T_CON, 0x7002, 0x71, "echo", 1, true, 6, NULL, filler, 1024);
    long l1 = exchange(fd, r.port, req, n, first, sizeof first);
    assert_true(l1 > 0);
    assert_true(coap_parse(first, (size_t)l1, &v));
    assert_int_equal(v.code, C_CONTINUE);
    /* A retransmission (same Message ID) gets the same answer (RFC 7252
     * Section 4.5: "The recipient SHOULD acknowledge each duplicate copy
     * of a Confirmable message using the same Acknowledgement"). */
    long l2 = exchange(fd, r.port, req, n, resp, sizeof resp);
    assert_int_equal(l2, l1);
    assert_memory_equal(resp, first, (size_t)l1);
    /* The same block again in a new message (a client that lost the
     * 2.31 and sent the block anew): edhoc/blockwise.h "a repeated last
     * block is answered again": 2.31 for block 1 once more, without
     * taking the bytes twice. */
    for (int k = 0; k < 3; k++) {
        n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x7003 + k), 0x71, "echo", 1, true, 6,
                       NULL, filler, 1024);
        expect_code(fd, r.port, req, n, resp, sizeof resp, C_CONTINUE, &v, "block 1 again");
        expect_block1(&v, 1, true, "block 1 again");
    }
    n = block1_req(req, sizeof req, T_CON, 0x7010, 0x71, "echo", 2, false, 6, NULL, filler, 100);
    expect_code(fd, r.port, req, n, resp, sizeof resp, CODE(2, 4), &v, "block 2 (last)");
    /* The echoed body is 1024 + 1024 + 100 bytes: the duplicates were not
     * appended (Size2, RFC 7959 Section 4, is the whole body's size). */
    uint32_t size2 = 0;
    assert_true(view_uint(&v, O_SIZE2, &size2));
    assert_int_equal(size2, 2148);
    close(fd);
    finish(&r, "duplicate blocks");
}

/* A Message ID used again by the same endpoint for another message: a
 * new client process on a recycled source port starts its IDs afresh and
 * cannot know its predecessor's (RFC 7252 Section 4.4 forbids reuse
 * within EXCHANGE_LIFETIME, but the new process cannot comply). Section
 * 4.5's duplicate is "each duplicate copy of a Confirmable message": the
 * same message. A different request under the old ID is answered as
 * itself, with its own token; a true copy still gets the cached answer. */
static void test_reused_mid_other_message(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "midreuse", "--allow-unprotected");
    int fd = udp_open(NULL);
    uint8_t req[300], resp[1500], first[1500];
    struct coap_view v;
    const uint8_t tok1 = 0x91, tok2 = 0x92;
    struct opt o5[] = {{O_URI_PATH, (const uint8_t *)"bytes", 5},
                       {O_URI_QUERY, (const uint8_t *)"n=5", 3}};
    struct opt o3[] = {{O_URI_PATH, (const uint8_t *)"bytes", 5},
                       {O_URI_QUERY, (const uint8_t *)"n=3", 3}};
    size_t n = coap_build(req, sizeof req, T_CON, C_GET, 0x7100, &tok1, 1, o5, 2, NULL, 0);
    expect_code(fd, r.port, req, n, first, sizeof first, CODE(2, 5), &v, "GET /bytes?n=5");
    assert_int_equal(v.pl_len, 5);
    assert_memory_equal(v.payload, "abcde", 5);
    /* The same message again: the cached answer, byte for byte. */
    long l1 = exchange(fd, r.port, req, n, first, sizeof first);
    long l2 = exchange(fd, r.port, req, n, resp, sizeof resp);
    assert_true(l1 > 0);
    assert_int_equal(l2, l1);
    assert_memory_equal(resp, first, (size_t)l1);
    /* Another request under the same Message ID: its own answer. */
    n = coap_build(req, sizeof req, T_CON, C_GET, 0x7100, &tok2, 1, o3, 2, NULL, 0);
    expect_code(fd, r.port, req, n, resp, sizeof resp, CODE(2, 5), &v, "GET /bytes?n=3, same MID");
    assert_int_equal(v.tkl, 1);
    assert_int_equal(v.tok[0], tok2);
    if (v.pl_len != 3 || memcmp(v.payload, "abc", 3))
        fail_msg("GET /bytes?n=3 under a reused Message ID got %zu bytes (%.*s), the answer of "
                 "the earlier request: RFC 7252 Section 4.5 answers only a copy of the same "
                 "message from the cache",
                 v.pl_len, (int)v.pl_len, (const char *)v.payload);
    close(fd);
    finish(&r, "reused Message ID");
}

static void test_abandoned_transfer(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "abandon", "--allow-unprotected");
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    /* Half of an 8 KiB body (Size1 8192), then nothing more. */
    int fd = udp_open(NULL);
    uint32_t s1 = 8192;
    for (uint32_t num = 0; num < 4; num++) {
        size_t n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x8000 + num), 0x81, "echo", num,
                              true, 6, num ? NULL : &s1, filler, 1024);
        expect_code(fd, r.port, req, n, resp, sizeof resp, C_CONTINUE, &v, "half a body");
    }
    /* The same port can still ask for something else. */
    {
        uint8_t tok = 0x82;
        struct opt o[] = {{O_URI_PATH, (const uint8_t *)"time", 4}};
        size_t n = coap_build(req, sizeof req, T_CON, C_GET, 0x8100, &tok, 1, o, 1, NULL, 0);
        expect_code(fd, r.port, req, n, resp, sizeof resp, CODE(2, 5), &v,
                    "GET /time from the port that abandoned a body");
    }
    close(fd);
    /* Another peer completes a body of its own. */
    int fd2 = udp_open(NULL);
    for (uint32_t num = 0; num < 3; num++) {
        size_t n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x8200 + num), 0x83, "echo", num,
                              num < 2, 6, NULL, filler, num < 2 ? 1024 : 7);
        expect_code(fd2, r.port, req, n, resp, sizeof resp, num < 2 ? C_CONTINUE : CODE(2, 4), &v,
                    "another peer's body");
    }
    uint32_t size2 = 0;
    assert_true(view_uint(&v, O_SIZE2, &size2));
    assert_int_equal(size2, 2055);
    close(fd2);
    finish(&r, "an abandoned transfer");
}

int main(void)
{
    init_filler();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_size1_huge, net_test_teardown),
        cmocka_unit_test_teardown(test_body_past_max_body, net_test_teardown),
        cmocka_unit_test_teardown(test_max_body_above_default, net_test_teardown),
        cmocka_unit_test_teardown(test_far_block_number, net_test_teardown),
        cmocka_unit_test_teardown(test_out_of_order, net_test_teardown),
        cmocka_unit_test_teardown(test_duplicate_blocks, net_test_teardown),
        cmocka_unit_test_teardown(test_reused_mid_other_message, net_test_teardown),
        cmocka_unit_test_teardown(test_abandoned_transfer, net_test_teardown),
    };
    return cmocka_run_group_tests_name("cli_abuse_blockwise", tests, group_setup,
                                       net_group_teardown);
}
