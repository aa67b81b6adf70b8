/* Known-answer and strictness tests of the CBOR helpers (edhoc/cbor.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "edhoc/cbor.h"
#include "vectors.h"

static void assert_hex(const uint8_t *got, long len, const char *hex)
{
    uint8_t want[256];
    long n = hex_decode(hex, want, sizeof want);
    assert_int_equal(len, n);
    assert_memory_equal(got, want, (size_t)n);
}

static void test_encode_integers(void **state)
{
    (void)state;
    static const struct {
        int64_t v;
        const char *hex;
    } cases[] = {
        {0, "00"},
        {23, "17"},
        {24, "1818"},
        {255, "18ff"},
        {256, "190100"},
        {65535, "19ffff"},
        {65536, "1a00010000"},
        {4294967296LL, "1b0000000100000000"},
        {-1, "20"},
        {-24, "37"},
        {-25, "3818"},
        {-256, "38ff"},
        {-257, "390100"},
        {INT64_MIN, "3b7fffffffffffffff"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t buf[16];
        struct edhoc_cbor_writer w;
        edhoc_cbor_writer_init(&w, buf, sizeof buf);
        edhoc_cbor_put_int(&w, cases[i].v);
        assert_hex(buf, edhoc_cbor_writer_finish(&w), cases[i].hex);

        struct edhoc_cbor_reader r;
        edhoc_cbor_reader_init(&r, buf, (size_t)edhoc_cbor_writer_finish(&w));
        int64_t back;
        assert_int_equal(edhoc_cbor_get_int(&r, &back), 0);
        assert_true(back == cases[i].v);
        assert_true(edhoc_cbor_at_end(&r));
    }
}

static void test_encode_structures(void **state)
{
    (void)state;
    uint8_t buf[64];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, buf, sizeof buf);
    /* ["Encrypt0", h'', h'0102'] as OSCORE/EDHOC AAD uses it */
    edhoc_cbor_put_array(&w, 3);
    edhoc_cbor_put_tstr(&w, "Encrypt0", 8);
    edhoc_cbor_put_bstr(&w, NULL, 0);
    edhoc_cbor_put_bstr(&w, (const uint8_t *)"\x01\x02", 2);
    edhoc_cbor_put_map(&w, 1);
    edhoc_cbor_put_int(&w, 4);
    edhoc_cbor_put_bool(&w, true);
    edhoc_cbor_put_null(&w);
    edhoc_cbor_put_tag(&w, 24);
    assert_hex(buf, edhoc_cbor_writer_finish(&w), "8368456e63727970743040420102a104f5f6d818");
}

static void test_writer_overflow_is_sticky(void **state)
{
    (void)state;
    uint8_t buf[4];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, buf, sizeof buf);
    edhoc_cbor_put_bstr(&w, (const uint8_t *)"abcd", 4); /* needs 5 */
    edhoc_cbor_put_uint(&w, 1);                          /* would fit, must not */
    assert_int_equal(edhoc_cbor_writer_finish(&w), EDHOC_CBOR_ERR_OVERFLOW);
    edhoc_cbor_writer_init(&w, buf, sizeof buf);
    edhoc_cbor_put_uint(&w, 65536); /* 5 bytes */
    assert_int_equal(edhoc_cbor_writer_finish(&w), EDHOC_CBOR_ERR_OVERFLOW);
}

static int decode_first(const char *hex, struct edhoc_cbor_item *it)
{
    static uint8_t buf[64];
    long n = hex_decode(hex, buf, sizeof buf);
    assert_true(n >= 0);
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, buf, (size_t)n);
    return edhoc_cbor_get(&r, it);
}

static void test_reject_non_shortest(void **state)
{
    (void)state;
    struct edhoc_cbor_item it;
    const char *bad[] = {"1805", "190017", "1a000000ff", "1b00000000000000ff",
                         "3817", "5800",   "58020102",   "7800",
                         "9800", "b800",   "d80101",     "1900ff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(decode_first(bad[i], &it), EDHOC_CBOR_ERR_NOT_SHORTEST);
    /* The shortest forms of the same values are accepted. */
    assert_int_equal(decode_first("05", &it), 0);
    assert_int_equal(decode_first("18ff", &it), 0);
    assert_int_equal(decode_first("40", &it), 0);
}

static void test_reject_indefinite_truncated_malformed(void **state)
{
    (void)state;
    struct edhoc_cbor_item it;
    assert_int_equal(decode_first("5f4101ff", &it), EDHOC_CBOR_ERR_INDEFINITE);
    assert_int_equal(decode_first("9f01ff", &it), EDHOC_CBOR_ERR_INDEFINITE);
    assert_int_equal(decode_first("bfff", &it), EDHOC_CBOR_ERR_INDEFINITE);
    assert_int_equal(decode_first("7f60ff", &it), EDHOC_CBOR_ERR_INDEFINITE);
    assert_int_equal(decode_first("ff", &it), EDHOC_CBOR_ERR_MALFORMED);
    assert_int_equal(decode_first("1c", &it), EDHOC_CBOR_ERR_MALFORMED);
    assert_int_equal(decode_first("f810", &it), EDHOC_CBOR_ERR_MALFORMED);
    assert_int_equal(decode_first("58", &it), EDHOC_CBOR_ERR_TRUNCATED);
    assert_int_equal(decode_first("4201", &it), EDHOC_CBOR_ERR_TRUNCATED);
    assert_int_equal(decode_first("19ff", &it), EDHOC_CBOR_ERR_TRUNCATED);
    assert_int_equal(decode_first("", &it), EDHOC_CBOR_ERR_TRUNCATED);
}

static void test_simple_and_special(void **state)
{
    (void)state;
    struct edhoc_cbor_item it;
    assert_int_equal(decode_first("f5", &it), 0);
    assert_int_equal(it.type, EDHOC_CBOR_TRUE);
    assert_int_equal(decode_first("f4", &it), 0);
    assert_int_equal(it.type, EDHOC_CBOR_FALSE);
    assert_int_equal(decode_first("f6", &it), 0);
    assert_int_equal(it.type, EDHOC_CBOR_NULL);
    assert_int_equal(decode_first("e5", &it), 0);
    assert_int_equal(it.type, EDHOC_CBOR_SIMPLE);
    assert_int_equal(it.u, 5);
    assert_int_equal(decode_first("f820", &it), 0);
    assert_int_equal(it.type, EDHOC_CBOR_SIMPLE);
    assert_int_equal(it.u, 32);
    assert_int_equal(decode_first("fb3ff0000000000000", &it), 0);
    assert_int_equal(it.type, EDHOC_CBOR_FLOAT);
    assert_int_equal(decode_first("3b7fffffffffffffff", &it), 0);
    assert_int_equal(it.type, EDHOC_CBOR_NINT);
    assert_true(it.i == INT64_MIN);
}

static void test_typed_getters_do_not_advance_on_mismatch(void **state)
{
    (void)state;
    uint8_t buf[8];
    long n = hex_decode("42abcd21", buf, sizeof buf);
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, buf, (size_t)n);
    int64_t v;
    assert_int_equal(edhoc_cbor_get_int(&r, &v), EDHOC_CBOR_ERR_TYPE);
    assert_int_equal(r.pos, 0);
    const uint8_t *p;
    size_t len;
    assert_int_equal(edhoc_cbor_get_bstr(&r, &p, &len), 0);
    assert_int_equal(len, 2);
    assert_int_equal(p[0], 0xab);
    assert_int_equal(edhoc_cbor_get_int(&r, &v), 0);
    assert_int_equal(v, -2);
    assert_true(edhoc_cbor_at_end(&r));

    uint8_t big[16];
    n = hex_decode("3bffffffffffffffff", big, sizeof big);
    edhoc_cbor_reader_init(&r, big, (size_t)n);
    assert_int_equal(edhoc_cbor_get_int(&r, &v), EDHOC_CBOR_ERR_OVERFLOW);
}

static void test_skip_nested_and_check_item(void **state)
{
    (void)state;
    uint8_t buf[64];
    /* {1: [2, {3: h'04'}], -1: "x"} then 07 */
    long n = hex_decode("a20182 02a1 03 4104 20 6178 07", buf, sizeof buf);
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, buf, (size_t)n);
    assert_int_equal(edhoc_cbor_skip(&r), 0);
    uint64_t u;
    assert_int_equal(edhoc_cbor_get_uint(&r, &u), 0);
    assert_int_equal(u, 7);
    assert_int_equal(edhoc_cbor_check_item(buf, (size_t)n - 1), 0);
    assert_int_equal(edhoc_cbor_check_item(buf, (size_t)n), EDHOC_CBOR_ERR_MALFORMED);
    assert_int_equal(edhoc_cbor_check_item(buf, (size_t)n - 2), EDHOC_CBOR_ERR_TRUNCATED);

    /* An array claiming 2^32 elements in a few bytes is a truncation found
     * without walking 2^32 items. */
    n = hex_decode("9b0000000100000000 01", buf, sizeof buf);
    edhoc_cbor_reader_init(&r, buf, (size_t)n);
    assert_int_equal(edhoc_cbor_skip(&r), EDHOC_CBOR_ERR_TRUNCATED);
    assert_int_equal(r.pos, 0);
    /* Deep nesting costs no stack: 60 nested arrays then an int. */
    uint8_t deep[61];
    memset(deep, 0x81, 60);
    deep[60] = 0x00;
    assert_int_equal(edhoc_cbor_check_item(deep, sizeof deep), 0);
    assert_int_equal(edhoc_cbor_check_item(deep, 60), EDHOC_CBOR_ERR_TRUNCATED);
}

/* A map head claiming 2^63 pairs doubles to 0 items in 64 bits: skipping
 * it must still report the truncation instead of accepting the head as a
 * complete (empty) map. */
static void test_skip_rejects_wrapping_map_count(void **state)
{
    (void)state;
    static const uint8_t huge_map[] = {0xbb, 0x80, 0, 0, 0, 0, 0, 0, 0};
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, huge_map, sizeof huge_map);
    assert_int_equal(edhoc_cbor_skip(&r), EDHOC_CBOR_ERR_TRUNCATED);
    assert_int_equal(r.pos, 0);
    assert_int_equal(edhoc_cbor_check_item(huge_map, sizeof huge_map), EDHOC_CBOR_ERR_TRUNCATED);
    /* The same inside an array, with bytes left after it. */
    static const uint8_t nested[] = {0x82, 0xbb, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x02};
    assert_int_equal(edhoc_cbor_check_item(nested, sizeof nested), EDHOC_CBOR_ERR_TRUNCATED);
    /* A map whose count (2^62 + 1 pairs) does not wrap is refused too. */
    static const uint8_t big_map[] = {0xbb, 0x40, 0, 0, 0, 0, 0, 0, 1, 0x01, 0x02};
    assert_int_equal(edhoc_cbor_check_item(big_map, sizeof big_map), EDHOC_CBOR_ERR_TRUNCATED);
}

/* A writer without a buffer has no room: the first item overflows rather
 * than "succeeding" with nothing written. */
static void test_writer_without_buffer_overflows(void **state)
{
    (void)state;
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, NULL, 100);
    edhoc_cbor_put_uint(&w, 1);
    assert_int_equal(edhoc_cbor_writer_finish(&w), EDHOC_CBOR_ERR_OVERFLOW);
    edhoc_cbor_writer_init(&w, NULL, 0);
    edhoc_cbor_put_map(&w, 1);
    edhoc_cbor_put_bstr(&w, (const uint8_t *)"x", 1);
    assert_int_equal(edhoc_cbor_writer_finish(&w), EDHOC_CBOR_ERR_OVERFLOW);
}

static void test_head_len_and_strerror(void **state)
{
    (void)state;
    assert_int_equal(edhoc_cbor_head_len(23), 1);
    assert_int_equal(edhoc_cbor_head_len(24), 2);
    assert_int_equal(edhoc_cbor_head_len(256), 3);
    assert_int_equal(edhoc_cbor_head_len(65536), 5);
    assert_int_equal(edhoc_cbor_head_len(1ull << 32), 9);
    assert_string_equal(edhoc_cbor_strerror(EDHOC_CBOR_ERR_NOT_SHORTEST),
                        "CBOR head not in shortest (deterministic) form");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_integers),
        cmocka_unit_test(test_encode_structures),
        cmocka_unit_test(test_writer_overflow_is_sticky),
        cmocka_unit_test(test_reject_non_shortest),
        cmocka_unit_test(test_reject_indefinite_truncated_malformed),
        cmocka_unit_test(test_simple_and_special),
        cmocka_unit_test(test_typed_getters_do_not_advance_on_mismatch),
        cmocka_unit_test(test_skip_nested_and_check_item),
        cmocka_unit_test(test_head_len_and_strerror),
        cmocka_unit_test(test_skip_rejects_wrapping_map_count),
        cmocka_unit_test(test_writer_without_buffer_overflows),
    };
    return cmocka_run_group_tests_name("cbor", tests, NULL, NULL);
}
