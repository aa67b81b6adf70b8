/*
 * Block-wise transfer (RFC 7959): the Block option codec against values
 * worked out by hand, and freeing a server that still holds transfers.
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
    assert_int_equal(edhoc_block_parse((const uint8_t *)"\x01\x0f", 2, &b), EDHOC_BW_ERR_MALFORMED);
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
        cmocka_unit_test(test_free_with_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
