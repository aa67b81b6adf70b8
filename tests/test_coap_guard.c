/*
 * The strict datagram check (edhoc/datagram_guard.h): known answers for
 * every rule, each next to the RFC sentence it enforces; the policy's
 * limits; the process-wide counters and their log line; and properties
 * over every truncation and every single-byte change of valid datagrams
 * (the seed corpus of the datagram fuzzer, the RFC 8613 Appendix C
 * messages, and the datagrams built below).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "edhoc/datagram_guard.h"
#include "vectors.h"

#define MAX_DGRAM 2048

struct dgram {
    uint8_t b[MAX_DGRAM];
    size_t len;
};

/* Hex pieces, concatenated; spaces ignored. */
static struct dgram hex(const char *first, ...)
{
    struct dgram d = {.len = 0};
    char clean[2 * MAX_DGRAM + 1];
    size_t n = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *)) {
        for (; *s; s++) {
            if (*s != ' ') {
                assert_true(n < sizeof clean - 1);
                clean[n++] = *s;
            }
        }
    }
    va_end(ap);
    clean[n] = '\0';
    long got = hex_decode(clean, d.b, sizeof d.b);
    assert_true(got >= 0);
    d.len = (size_t)got;
    return d;
}

/* Append count copies of byte. */
static void fill(struct dgram *d, uint8_t byte, size_t count)
{
    assert_true(d->len + count <= sizeof d->b);
    memset(d->b + d->len, byte, count);
    d->len += count;
}

static void expect_reason(const struct dgram *d, const struct edhoc_datagram_policy *p, int want,
                          const char *what)
{
    int got = edhoc_datagram_check(d->b, d->len, p);
    if (got != want)
        fail_msg("%s: got \"%s\" (%d), want \"%s\" (%d)", what, edhoc_datagram_reason_name(got),
                 got, edhoc_datagram_reason_name(want), want);
}

#define ACCEPT(d, what)         expect_reason(&(d), NULL, EDHOC_DATAGRAM_OK, what)
#define REFUSE(d, reason, what) expect_reason(&(d), NULL, reason, what)

/* ---- The crash pair: well-formed, so accepted ---- */

/* Two datagrams from one source port that crash the CoAP library's
 * block-wise code when it is on: a CON POST with Block1 NUM=0 M=1 (16-byte
 * blocks) and no Size1, then Block1 NUM=0 M=0. Both are legitimate CoAP
 * (Size1 is optional, RFC 7959 Section 4), so the guard lets them
 * through; our block-wise engine handles them, the library's is off. */
static void test_crash_pair_is_well_formed(void **state)
{
    (void)state;
    struct dgram first = hex("41 02 0001 01 b1 78 d1 03 08 ff", NULL);
    fill(&first, 0x41, 16);
    struct dgram second = hex("41 02 0002 02 b1 78 d1 03 00 ff 42", NULL);
    ACCEPT(first, "Block1 NUM=0 M=1 without Size1");
    ACCEPT(second, "Block1 NUM=0 M=0");
}

/* ---- Header ---- */

static void test_header(void **state)
{
    (void)state;
    /* RFC 7252 Section 3: "CoAP messages are encoded in a simple binary
     * format. The message format starts with a fixed-size 4-byte header." */
    struct dgram nothing = {.len = 0};
    REFUSE(nothing, EDHOC_DATAGRAM_TOO_SHORT, "0 bytes");
    struct dgram three = hex("40 00 00", NULL);
    REFUSE(three, EDHOC_DATAGRAM_TOO_SHORT, "3 bytes");
    assert_int_equal(edhoc_datagram_check(NULL, 4, NULL), EDHOC_DATAGRAM_TOO_SHORT);

    /* Version: "Implementations of this specification MUST set this field
     * to 1 (01 binary). Other values are reserved for future versions.
     * Messages with unknown version numbers MUST be silently ignored." */
    struct dgram v0 = hex("00 01 0001", NULL), v2 = hex("81 01 0001", NULL),
                 v3 = hex("c1 01 0001", NULL);
    REFUSE(v0, EDHOC_DATAGRAM_VERSION, "version 0");
    REFUSE(v2, EDHOC_DATAGRAM_VERSION, "version 2");
    REFUSE(v3, EDHOC_DATAGRAM_VERSION, "version 3");
    /* A DTLS record (content type 22, version 0xfefd) is not CoAP. */
    struct dgram dtls = hex("16 fefd 0000 0000 0000 0000 0010", NULL);
    REFUSE(dtls, EDHOC_DATAGRAM_VERSION, "DTLS handshake record");

    /* Token Length: "Lengths 9-15 are reserved, MUST NOT be sent, and MUST
     * be processed as a message format error." */
    struct dgram tkl8 = hex("48 01 0001 0102030405060708", NULL);
    ACCEPT(tkl8, "token length 8");
    struct dgram tkl9 = hex("49 01 0001 010203040506070809", NULL);
    REFUSE(tkl9, EDHOC_DATAGRAM_TOKEN_LENGTH, "token length 9");
    struct dgram tkl15 = hex("4f 01 0001", NULL);
    fill(&tkl15, 0xaa, 15);
    REFUSE(tkl15, EDHOC_DATAGRAM_TOKEN_LENGTH, "token length 15");
    /* The token follows the header: "Token (if any, TKL bytes)". */
    struct dgram short_token = hex("48 01 0001 01020304", NULL);
    REFUSE(short_token, EDHOC_DATAGRAM_TRUNCATED, "8-byte token with 4 present");
}

static void test_codes(void **state)
{
    (void)state;
    /* RFC 7252 Section 12.1.1 and RFC 8132: GET, POST, PUT, DELETE, FETCH,
     * PATCH, iPATCH are 0.01-0.07. */
    for (unsigned method = 1; method <= 7; method++) {
        struct dgram d = hex("40 00 0001", NULL);
        d.b[1] = (uint8_t)method;
        ACCEPT(d, "a method we know");
    }
    /* 0.08-0.31 are request codes nobody here speaks. */
    struct dgram m8 = hex("40 08 0001", NULL), m31 = hex("40 1f 0001", NULL);
    REFUSE(m8, EDHOC_DATAGRAM_METHOD, "request code 0.08");
    REFUSE(m31, EDHOC_DATAGRAM_METHOD, "request code 0.31");

    /* RFC 7252 Section 12.1: responses are classes 2, 4 and 5; class 1, 6
     * and 7 are reserved. */
    struct dgram ok205 = hex("60 45 0001", NULL), ok231 = hex("60 5f 0001", NULL),
                 ok404 = hex("60 84 0001", NULL), ok505 = hex("60 a5 0001", NULL),
                 ok3xx = hex("60 60 0001", NULL);
    ACCEPT(ok205, "2.05");
    ACCEPT(ok231, "2.31");
    ACCEPT(ok404, "4.04");
    ACCEPT(ok505, "5.05");
    ACCEPT(ok3xx, "3.00 (RFC 7252 reserves only 1, 6, 7)");
    struct dgram c1 = hex("60 20 0001", NULL), c6 = hex("60 c0 0001", NULL),
                 c7 = hex("60 ff 0001", NULL);
    REFUSE(c1, EDHOC_DATAGRAM_CODE_CLASS, "1.00");
    REFUSE(c6, EDHOC_DATAGRAM_CODE_CLASS, "6.00");
    REFUSE(c7, EDHOC_DATAGRAM_CODE_CLASS, "7.31");
}

static void test_empty_messages_and_types(void **state)
{
    (void)state;
    /* RFC 7252 Section 4.1: "An Empty message has the Code field set to
     * 0.00. The Token Length field MUST be set to 0 and bytes of data MUST
     * NOT be present after the Message ID field. If there are any bytes,
     * they MUST be processed as a message format error." */
    struct dgram ping = hex("40 00 1234", NULL), ack = hex("60 00 1234", NULL),
                 rst = hex("70 00 1234", NULL);
    ACCEPT(ping, "CON Empty (CoAP ping)");
    ACCEPT(ack, "empty ACK");
    ACCEPT(rst, "RST");
    struct dgram with_token = hex("41 00 1234 aa", NULL);
    REFUSE(with_token, EDHOC_DATAGRAM_EMPTY_WITH_DATA, "Empty with a token");
    struct dgram with_tkl_only = hex("41 00 1234", NULL);
    REFUSE(with_tkl_only, EDHOC_DATAGRAM_EMPTY_WITH_DATA, "Empty with TKL 1, token cut off");
    struct dgram with_option = hex("60 00 1234 b1 61", NULL);
    REFUSE(with_option, EDHOC_DATAGRAM_EMPTY_WITH_DATA, "Empty with an option");
    struct dgram with_payload = hex("70 00 1234 ff 41", NULL);
    REFUSE(with_payload, EDHOC_DATAGRAM_EMPTY_WITH_DATA, "Empty with a payload");

    /* RFC 7252 Section 4.3: "A Non-confirmable message always carries
     * either a request or response and MUST NOT be Empty." */
    struct dgram non_empty = hex("50 00 1234", NULL);
    REFUSE(non_empty, EDHOC_DATAGRAM_TYPE_CODE, "NON Empty");
    /* RFC 7252 Section 4.2: "Rejecting an Acknowledgement or Reset message
     * (including the case where the Acknowledgement carries a request or a
     * code with a reserved class, or the Reset message is not Empty) is
     * effected by silently ignoring it." */
    struct dgram ack_request = hex("60 01 1234", NULL);
    REFUSE(ack_request, EDHOC_DATAGRAM_TYPE_CODE, "ACK carrying GET");
    struct dgram rst_response = hex("70 45 1234", NULL);
    REFUSE(rst_response, EDHOC_DATAGRAM_TYPE_CODE, "RST carrying 2.05");
    struct dgram rst_request = hex("70 02 1234", NULL);
    REFUSE(rst_request, EDHOC_DATAGRAM_TYPE_CODE, "RST carrying POST");
    struct dgram non_request = hex("50 02 1234", NULL), ack_response = hex("60 44 1234", NULL);
    ACCEPT(non_request, "NON POST");
    ACCEPT(ack_response, "ACK 2.04 (piggybacked)");
}

/* ---- Options ---- */

static void test_option_format(void **state)
{
    (void)state;
    /* RFC 7252 Section 3.1, Option Delta 15: "Reserved for the Payload
     * Marker. If the field is set to this value but the entire byte is not
     * the payload marker, this MUST be processed as a message format
     * error." */
    struct dgram delta15 = hex("40 01 0001 f0", NULL);
    REFUSE(delta15, EDHOC_DATAGRAM_OPTION_FORMAT, "delta nibble 15, length 0");
    struct dgram delta15b = hex("40 01 0001 b1 61 f1 00", NULL);
    REFUSE(delta15b, EDHOC_DATAGRAM_OPTION_FORMAT, "delta nibble 15 after an option");
    /* Option Length 15: "Reserved for future use. If the field is set to
     * this value, it MUST be processed as a message format error." */
    struct dgram length15 = hex("40 01 0001 bf", NULL);
    REFUSE(length15, EDHOC_DATAGRAM_OPTION_FORMAT, "length nibble 15");
    struct dgram length15_delta0 = hex("40 01 0001 0f", NULL);
    REFUSE(length15_delta0, EDHOC_DATAGRAM_OPTION_FORMAT, "delta 0, length nibble 15");

    /* The extended delta and length bytes must be there: 13 is followed by
     * one byte, 14 by two (RFC 7252 Section 3.1). */
    struct dgram no_ext_delta = hex("40 01 0001 d0", NULL);
    REFUSE(no_ext_delta, EDHOC_DATAGRAM_TRUNCATED, "delta 13 without its byte");
    struct dgram half_ext_delta = hex("40 01 0001 e0 00", NULL);
    REFUSE(half_ext_delta, EDHOC_DATAGRAM_TRUNCATED, "delta 14 with one of two bytes");
    struct dgram no_ext_length = hex("40 01 0001 bd", NULL);
    REFUSE(no_ext_length, EDHOC_DATAGRAM_TRUNCATED, "length 13 without its byte");
    struct dgram half_ext_length = hex("40 01 0001 de 0e 01", NULL);
    REFUSE(half_ext_length, EDHOC_DATAGRAM_TRUNCATED, "length 14 with one of two bytes");
    /* The value must fit in the datagram. */
    struct dgram short_value = hex("40 01 0001 b3 6162", NULL);
    REFUSE(short_value, EDHOC_DATAGRAM_TRUNCATED, "Uri-Path of 3 with 2 bytes left");
    struct dgram long_ext_value = hex("40 01 0001 bd 00 61", NULL);
    REFUSE(long_ext_value, EDHOC_DATAGRAM_TRUNCATED, "Uri-Path of 13 with 1 byte left");

    /* Option numbers are 0..65535 (RFC 7252 Section 12.2): 269 + 0xfef2 =
     * 65535 is the last one. */
    struct dgram last_number = hex("40 01 0001 e0 fef2", NULL);
    ACCEPT(last_number, "option 65535, unknown and empty");
    struct dgram past_last = hex("40 01 0001 e0 fef2 10", NULL);
    REFUSE(past_last, EDHOC_DATAGRAM_OPTION_NUMBER, "option 65536 by a later delta");
    struct dgram one_big_delta = hex("40 01 0001 e0 ffff", NULL);
    REFUSE(one_big_delta, EDHOC_DATAGRAM_OPTION_NUMBER, "one delta of 65804");

    /* RFC 7252 Section 3: "The presence of a marker followed by a
     * zero-length payload MUST be processed as a message format error." */
    struct dgram bare_marker = hex("40 01 0001 ff", NULL);
    REFUSE(bare_marker, EDHOC_DATAGRAM_EMPTY_PAYLOAD, "payload marker, no payload");
    struct dgram marker_after_option = hex("40 01 0001 b1 61 ff", NULL);
    REFUSE(marker_after_option, EDHOC_DATAGRAM_EMPTY_PAYLOAD, "option, marker, no payload");
    struct dgram one_byte = hex("40 01 0001 ff 00", NULL);
    ACCEPT(one_byte, "one payload byte");
    /* After the marker, every byte is payload, 0xff and nibble 15 too. */
    struct dgram ff_payload = hex("40 02 0001 ff ff ff f0 0f", NULL);
    ACCEPT(ff_payload, "payload of 0xff bytes");
    /* Unknown options are taken at any length that fits. */
    struct dgram unknown = hex("40 01 0001 e1 0010 00", NULL);
    ACCEPT(unknown, "unknown option 285, one byte");
}

struct length_case {
    const char *what;
    unsigned number;
    size_t ok_len, bad_len; /* bad_len == SIZE_MAX: no bad length above */
    size_t bad_below;       /* a length under the minimum, or SIZE_MAX */
};

/* Build a request with one option of this number and length. */
static struct dgram with_option(unsigned number, size_t len)
{
    struct dgram d = hex("40 02 0001", NULL);
    uint8_t *p = d.b + d.len;
    unsigned delta_nibble, length_nibble;
    uint8_t ext[4];
    size_t n_ext = 0;
    if (number < 13) {
        delta_nibble = number;
    } else if (number < 269) {
        delta_nibble = 13;
        ext[n_ext++] = (uint8_t)(number - 13);
    } else {
        delta_nibble = 14;
        ext[n_ext++] = (uint8_t)((number - 269) >> 8);
        ext[n_ext++] = (uint8_t)(number - 269);
    }
    if (len < 13) {
        length_nibble = (unsigned)len;
    } else if (len < 269) {
        length_nibble = 13;
        ext[n_ext++] = (uint8_t)(len - 13);
    } else {
        length_nibble = 14;
        ext[n_ext++] = (uint8_t)((len - 269) >> 8);
        ext[n_ext++] = (uint8_t)(len - 269);
    }
    *p++ = (uint8_t)(delta_nibble << 4 | length_nibble);
    memcpy(p, ext, n_ext);
    d.len += 1 + n_ext;
    /* Zero bytes: a Block value of zeros is NUM 0, SZX 0 whatever its
     * length, so only the length is under test. */
    fill(&d, 0x00, len);
    return d;
}

static void test_option_lengths(void **state)
{
    (void)state;
    /* RFC 7252 Section 5.4.3: "If the length of an option value in a
     * request is outside the defined range, that option MUST be treated
     * like an unrecognized option"; the library below would act on it
     * anyway, so the guard refuses the datagram. Ranges: RFC 7252 Table 4,
     * RFC 7641 (Observe), RFC 7959 (Block, Size), RFC 8613 (OSCORE),
     * RFC 9668 (EDHOC), RFC 9175 (Echo, Request-Tag), RFC 7967
     * (No-Response). */
    static const struct length_case cases[] = {
        {"If-Match", 1, 8, 9, SIZE_MAX},
        {"Uri-Host", 3, 255, 256, 0},
        {"ETag", 4, 8, 9, 0},
        {"If-None-Match", 5, 0, 1, SIZE_MAX},
        {"Observe", 6, 3, 4, SIZE_MAX},
        {"Uri-Port", 7, 2, 3, SIZE_MAX},
        {"Location-Path", 8, 255, 256, SIZE_MAX},
        {"OSCORE", 9, 255, 256, SIZE_MAX},
        {"Uri-Path", 11, 255, 256, SIZE_MAX},
        {"Content-Format", 12, 2, 3, SIZE_MAX},
        {"Max-Age", 14, 4, 5, SIZE_MAX},
        {"Uri-Query", 15, 255, 256, SIZE_MAX},
        {"Accept", 17, 2, 3, SIZE_MAX},
        {"Q-Block1", 19, 3, 4, SIZE_MAX},
        {"Location-Query", 20, 255, 256, SIZE_MAX},
        {"EDHOC", 21, 0, 1, SIZE_MAX},
        {"Block2", 23, 3, 4, SIZE_MAX},
        {"Block1", 27, 3, 4, SIZE_MAX},
        {"Size2", 28, 4, 5, SIZE_MAX},
        {"Q-Block2", 31, 3, 4, SIZE_MAX},
        {"Proxy-Uri", 35, 1034, 1035, 0},
        {"Proxy-Scheme", 39, 255, 256, 0},
        {"Size1", 60, 4, 5, SIZE_MAX},
        {"Echo", 252, 40, 41, 0},
        {"No-Response", 258, 1, 2, SIZE_MAX},
        {"Request-Tag", 292, 8, 9, SIZE_MAX},
    };
    char what[96];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct length_case *c = &cases[i];
        struct dgram ok = with_option(c->number, c->ok_len);
        snprintf(what, sizeof what, "%s of %zu bytes", c->what, c->ok_len);
        ACCEPT(ok, what);
        struct dgram bad = with_option(c->number, c->bad_len);
        snprintf(what, sizeof what, "%s of %zu bytes", c->what, c->bad_len);
        REFUSE(bad, EDHOC_DATAGRAM_OPTION_LENGTH, what);
        if (c->bad_below != SIZE_MAX) {
            struct dgram under = with_option(c->number, c->bad_below);
            snprintf(what, sizeof what, "%s of %zu bytes", c->what, c->bad_below);
            REFUSE(under, EDHOC_DATAGRAM_OPTION_LENGTH, what);
        }
    }
    /* Size1 announces the size of the body (RFC 7959 Section 4); one
     * larger than we take is well-formed, and the engine answers 4.13
     * (RFC 7959 Section 2.9.3). */
    struct dgram big_size1 = hex("40 02 0001 d4 2f ffffffff", NULL);
    ACCEPT(big_size1, "Size1 of 4 GiB - 1");
}

static void test_repetitions(void **state)
{
    (void)state;
    /* RFC 7252 Section 5.4.5: "If a message includes an option with more
     * occurrences than the option is defined for, each supernumerary option
     * occurrence that appears subsequently in the message MUST be treated
     * like an unrecognized option". The library below would act on one of
     * them; for the options that steer processing the guard refuses. */
    static const struct {
        const char *what;
        const char *twice;
    } once[] = {
        {"Observe", "40 01 0001 60 00"},     {"Content-Format", "40 02 0001 c0 00"},
        {"OSCORE", "40 02 0001 90 00"},      {"EDHOC", "40 02 0001 d0 08 00"},
        {"Block2", "40 01 0001 d0 0a 00"},   {"Block1", "40 02 0001 d1 0e 08 01 00"},
        {"Size2", "40 01 0001 d0 0f 00"},    {"Size1", "40 02 0001 d1 2f 10 01 20"},
        {"Q-Block1", "40 02 0001 d0 06 00"}, {"Q-Block2", "40 01 0001 d0 12 00"},
    };
    for (size_t i = 0; i < sizeof once / sizeof once[0]; i++) {
        struct dgram d = hex(once[i].twice, NULL);
        char what[64];
        snprintf(what, sizeof what, "%s twice", once[i].what);
        REFUSE(d, EDHOC_DATAGRAM_OPTION_REPEATED, what);
    }
    /* Repeatable options (RFC 7252 Table 4, "R"). */
    struct dgram paths = hex("40 01 0001 b1 61 01 62 01 63", NULL);
    ACCEPT(paths, "Uri-Path three times");
    struct dgram etags = hex("40 01 0001 41 01 01 02", NULL);
    ACCEPT(etags, "ETag twice");
    struct dgram block1_and_block2 = hex("40 02 0001 d1 0a 00 41 08", NULL);
    ACCEPT(block1_and_block2, "Block2 and Block1 once each");
}

/* A request carrying one Block option (number 23 or 27) with NUM, M, SZX. */
static struct dgram with_block(unsigned number, uint32_t num, unsigned m, unsigned szx)
{
    uint32_t v = num << 4 | m << 3 | szx;
    struct dgram d = hex("40 02 0001", NULL);
    size_t len = v == 0 ? 0 : v < 0x100 ? 1 : v < 0x10000 ? 2 : 3;
    d.b[d.len++] = (uint8_t)(0xd0 | len);
    d.b[d.len++] = (uint8_t)(number - 13);
    for (size_t i = len; i > 0; i--)
        d.b[d.len++] = (uint8_t)(v >> (8 * (i - 1)));
    return d;
}

static void test_blocks(void **state)
{
    (void)state;
    /* RFC 7959 Section 2.2: "The value 7 for SZX (which would indicate a
     * block size of 2048) is reserved, i.e., MUST NOT be sent and MUST lead
     * to a 4.00 Bad Request response code upon reception in a request."
     * RFC 8323 Section 6 gives it to BERT, over reliable transports only. */
    /* In a request it reaches the block-wise engine, which answers the
     * 4.00; in a response nothing can take it. */
    struct dgram bert1 = with_block(27, 0, 1, 7), bert2 = with_block(23, 2, 0, 7);
    ACCEPT(bert1, "Block1 SZX 7 (BERT) in a request: the engine answers 4.00");
    ACCEPT(bert2, "Block2 SZX 7 (BERT) in a request: the engine answers 4.00");
    struct dgram bert_resp = with_block(23, 0, 1, 7);
    bert_resp.b[1] = 0x45; /* 2.05 Content */
    REFUSE(bert_resp, EDHOC_DATAGRAM_BLOCK_SIZE, "Block2 SZX 7 in a response");
    struct dgram q_bert = with_block(19, 0, 1, 7);
    q_bert.b[1] = 0x45;
    REFUSE(q_bert, EDHOC_DATAGRAM_BLOCK_SIZE, "Q-Block1 SZX 7 in a response");

    /* RFC 7959 Section 2.2: block NUM covers bytes NUM * 2^(SZX+4) on; the
     * default body is at most 64 KiB, so 63 blocks of 1024 bytes follow
     * block 0 and no more. */
    struct dgram last_1024 = with_block(27, 63, 0, 6), past_1024 = with_block(27, 64, 0, 6);
    ACCEPT(last_1024, "Block1 NUM 63 of 1024 bytes (offset 64512)");
    REFUSE(past_1024, EDHOC_DATAGRAM_BLOCK_NUMBER, "Block1 NUM 64 of 1024 bytes (offset 65536)");
    struct dgram last_16 = with_block(23, 4095, 1, 0), past_16 = with_block(23, 4096, 1, 0);
    ACCEPT(last_16, "Block2 NUM 4095 of 16 bytes");
    REFUSE(past_16, EDHOC_DATAGRAM_BLOCK_NUMBER, "Block2 NUM 4096 of 16 bytes");
    struct dgram largest_num = with_block(27, 0xfffff, 1, 6);
    REFUSE(largest_num, EDHOC_DATAGRAM_BLOCK_NUMBER, "Block1 NUM 2^20 - 1");
    /* A Block value with leading zero bytes is the same number (RFC 7252
     * Section 3.2 asks senders, not receivers, for the shortest form). */
    struct dgram padded = hex("40 02 0001 d3 0e 00 00 08", NULL);
    ACCEPT(padded, "Block1 NUM 0 M 1 in three bytes");

    /* A smaller body: 1 KiB. */
    struct edhoc_datagram_policy small = edhoc_datagram_policy_default();
    small.max_body = 1024;
    struct dgram b0 = with_block(27, 0, 1, 6), b1 = with_block(27, 1, 0, 6);
    expect_reason(&b0, &small, EDHOC_DATAGRAM_OK, "1 KiB body: block 0 of 1024");
    expect_reason(&b1, &small, EDHOC_DATAGRAM_BLOCK_NUMBER, "1 KiB body: block 1 of 1024");
    struct dgram n63 = with_block(23, 63, 0, 0), n64 = with_block(23, 64, 0, 0);
    expect_reason(&n63, &small, EDHOC_DATAGRAM_OK, "1 KiB body: block 63 of 16");
    expect_reason(&n64, &small, EDHOC_DATAGRAM_BLOCK_NUMBER, "1 KiB body: block 64 of 16");

    /* No block options at all. */
    struct edhoc_datagram_policy none = edhoc_datagram_policy_default();
    none.accept_block_options = false;
    struct dgram plain = hex("40 01 0001 b4 74696d65", NULL);
    expect_reason(&plain, &none, EDHOC_DATAGRAM_OK, "no blocks: plain GET");
    struct dgram first_of_pair = hex("41 02 0001 01 b1 78 d1 03 08 ff 41", NULL);
    expect_reason(&first_of_pair, &none, EDHOC_DATAGRAM_BLOCK_REFUSED, "no blocks: Block1");
    struct dgram b2 = with_block(23, 0, 0, 2), qb1 = with_block(19, 0, 0, 2),
                 qb2 = with_block(31, 0, 0, 2);
    expect_reason(&b2, &none, EDHOC_DATAGRAM_BLOCK_REFUSED, "no blocks: Block2");
    expect_reason(&qb1, &none, EDHOC_DATAGRAM_BLOCK_REFUSED, "no blocks: Q-Block1");
    expect_reason(&qb2, &none, EDHOC_DATAGRAM_BLOCK_REFUSED, "no blocks: Q-Block2");
    /* Size options are not block options. */
    struct dgram size1 = hex("40 02 0001 d2 2f 0400 ff 41", NULL);
    expect_reason(&size1, &none, EDHOC_DATAGRAM_OK, "no blocks: Size1 alone");
}

static void test_datagram_size(void **state)
{
    (void)state;
    /* Default 1472: the largest UDP payload in a 1500-byte Ethernet frame
     * over IPv4, and the size of the receive buffer below. */
    struct dgram d = hex("40 02 0001 ff", NULL);
    fill(&d, 0x41, 1472 - d.len);
    ACCEPT(d, "1472 bytes");
    fill(&d, 0x41, 1);
    REFUSE(d, EDHOC_DATAGRAM_TOO_LONG, "1473 bytes");
    /* Too long wins over everything else: the bytes are not looked at. */
    struct dgram junk = {.len = 1500};
    memset(junk.b, 0xff, junk.len);
    REFUSE(junk, EDHOC_DATAGRAM_TOO_LONG, "1500 bytes of 0xff");

    struct edhoc_datagram_policy p = edhoc_datagram_policy_default();
    p.max_datagram = 100;
    struct dgram hundred = hex("40 02 0001 ff", NULL);
    fill(&hundred, 0x41, 100 - hundred.len);
    expect_reason(&hundred, &p, EDHOC_DATAGRAM_OK, "max 100: 100 bytes");
    fill(&hundred, 0x41, 1);
    expect_reason(&hundred, &p, EDHOC_DATAGRAM_TOO_LONG, "max 100: 101 bytes");
    p.max_datagram = 2000;
    struct dgram big = hex("40 02 0001 ff", NULL);
    fill(&big, 0x41, 2000 - big.len);
    expect_reason(&big, &p, EDHOC_DATAGRAM_OK, "max 2000: 2000 bytes");
    /* 0 means the default, for the size and the body alike. */
    p.max_datagram = 0;
    expect_reason(&big, &p, EDHOC_DATAGRAM_TOO_LONG, "max 0 (default): 2000 bytes");
    p.max_body = 0;
    struct dgram block = with_block(27, 63, 0, 6);
    expect_reason(&block, &p, EDHOC_DATAGRAM_OK, "max body 0 (default): block 63 of 1024");
}

/* ---- Known-good messages ---- */

static void test_rfc8613_messages(void **state)
{
    (void)state;
    /* Every CoAP message of RFC 8613 Appendix C, plain and protected. */
    struct vec_scope all = vec_load("rfc8613-appendix-c.json");
    static const struct {
        const char *vector, *field;
    } msgs[] = {
        {"C.4", "unprotected_request"},  {"C.4", "protected_request"},
        {"C.5", "unprotected_request"},  {"C.5", "protected_request"},
        {"C.6", "unprotected_request"},  {"C.6", "protected_request"},
        {"C.7", "unprotected_response"}, {"C.7", "protected_response"},
        {"C.8", "unprotected_response"}, {"C.8", "protected_response"},
    };
    for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++) {
        struct dgram d;
        d.len = vec_hex(vec_object(all, msgs[i].vector), msgs[i].field, d.b, sizeof d.b);
        char what[64];
        snprintf(what, sizeof what, "RFC 8613 %s %s", msgs[i].vector, msgs[i].field);
        ACCEPT(d, what);
    }
}

/* The seed corpus of the datagram fuzzer: valid datagrams, all of them. */
#define MAX_SEEDS 64
static struct dgram seeds[MAX_SEEDS];
static size_t n_seeds;

static void load_seeds(void)
{
    if (n_seeds)
        return;
    const char *root = getenv("EDHOC_SOURCE_ROOT");
    assert_non_null(root);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/datagram_guard", root);
    DIR *dh = opendir(dir);
    assert_non_null(dh);
    struct dirent *e;
    while ((e = readdir(dh)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        assert_true(n_seeds < MAX_SEEDS);
        struct dgram *d = &seeds[n_seeds++];
        d->len = fread(d->b, 1, sizeof d->b, f);
        fclose(f);
        int reason = edhoc_datagram_check(d->b, d->len, NULL);
        if (reason != EDHOC_DATAGRAM_OK)
            fail_msg("seed %s refused: %s", e->d_name, edhoc_datagram_reason_name(reason));
    }
    closedir(dh);
    assert_true(n_seeds >= 8);
}

static void test_seed_corpus_accepted(void **state)
{
    (void)state;
    load_seeds();
}

/* ---- Properties over damaged valid datagrams ---- */

static size_t n_valid;
static struct dgram valid[MAX_SEEDS + 16];

static void collect_valid(void)
{
    load_seeds();
    n_valid = 0;
    for (size_t i = 0; i < n_seeds; i++)
        valid[n_valid++] = seeds[i];
    valid[n_valid++] =
        hex("41 02 0001 01 b1 78 d1 03 08 ff", "41414141414141414141414141414141", NULL);
    /* 2.05 notification: Observe, Content-Format, Block2 NUM 63 SZX 6. */
    valid[n_valid++] = hex("48 45 beef 0102030405060708 61 05 61 3c b2 03 f6 ff 41", NULL);
    valid[n_valid++] = with_option(35, 1034);
    valid[n_valid++] = with_option(252, 40);
    valid[n_valid++] = hex("40 01 0001 e0 fef2 ff 00", NULL);
    valid[n_valid++] = hex("40 02 0001 50", NULL); /* ends in an empty If-None-Match */
    for (size_t i = 0; i < n_valid; i++)
        assert_int_equal(edhoc_datagram_check(valid[i].b, valid[i].len, NULL), EDHOC_DATAGRAM_OK);
}

static bool is_reason(int r)
{
    return r >= EDHOC_DATAGRAM_OK && r < EDHOC_DATAGRAM_REASON_COUNT;
}

/* A prefix of a valid message keeps its header and the start of its
 * options, so it can only be too short, cut inside the token or an option,
 * or cut right after the payload marker. The copy to a buffer of exactly
 * the prefix's size lets ASan see any read past it. */
static void test_every_truncation(void **state)
{
    (void)state;
    collect_valid();
    for (size_t i = 0; i < n_valid; i++) {
        for (size_t len = 0; len <= valid[i].len; len++) {
            uint8_t *copy = malloc(len ? len : 1);
            assert_non_null(copy);
            memcpy(copy, valid[i].b, len);
            int r = edhoc_datagram_check(copy, len, NULL);
            free(copy);
            if (len == valid[i].len) {
                assert_int_equal(r, EDHOC_DATAGRAM_OK);
            } else if (len < 4) {
                assert_int_equal(r, EDHOC_DATAGRAM_TOO_SHORT);
            } else if (r != EDHOC_DATAGRAM_OK && r != EDHOC_DATAGRAM_TRUNCATED &&
                       r != EDHOC_DATAGRAM_EMPTY_PAYLOAD) {
                fail_msg("valid datagram %zu cut to %zu bytes: \"%s\"", i, len,
                         edhoc_datagram_reason_name(r));
            }
        }
    }
}

/* Every byte of every valid datagram set to each of the 255 other values:
 * any answer must be a reason we know, the same answer twice, and the
 * answers the header fixes must be the ones RFC 7252 Section 3 gives. */
static void test_every_byte_change(void **state)
{
    (void)state;
    collect_valid();
    unsigned long checked = 0, accepted = 0;
    unsigned long by_reason[EDHOC_DATAGRAM_REASON_COUNT] = {0};
    for (size_t i = 0; i < n_valid; i++) {
        const struct dgram *v = &valid[i];
        uint8_t *copy = malloc(v->len);
        assert_non_null(copy);
        for (size_t at = 0; at < v->len; at++) {
            for (unsigned value = 0; value < 256; value++) {
                if (value == v->b[at])
                    continue;
                memcpy(copy, v->b, v->len);
                copy[at] = (uint8_t)value;
                int r = edhoc_datagram_check(copy, v->len, NULL);
                assert_true(is_reason(r));
                assert_int_equal(r, edhoc_datagram_check(copy, v->len, NULL));
                checked++;
                by_reason[r]++;
                accepted += r == EDHOC_DATAGRAM_OK;
                if (at == 0 && (value >> 6) != 1)
                    assert_int_equal(r, EDHOC_DATAGRAM_VERSION);
                else if (at == 0 && (value & 0x0f) > 8)
                    assert_int_equal(r, EDHOC_DATAGRAM_TOKEN_LENGTH);
                else if (at == 1 && (v->b[0] & 0x0f) <= 8 &&
                         ((value >> 5) == 1 || (value >> 5) >= 6))
                    assert_int_equal(r, EDHOC_DATAGRAM_CODE_CLASS);
                else if (at == 1 && (value >> 5) == 0 && (value & 0x1f) > 7)
                    assert_int_equal(r, EDHOC_DATAGRAM_METHOD);
                else if (at == 2 || at == 3)
                    assert_int_equal(r, EDHOC_DATAGRAM_OK); /* the Message ID */
            }
        }
        free(copy);
    }
    /* Several rules are reached, not just the header's. */
    assert_true(checked > 50000);
    assert_true(accepted > 0);
    for (int r = EDHOC_DATAGRAM_VERSION; r <= EDHOC_DATAGRAM_BLOCK_NUMBER; r++) {
        if (!by_reason[r])
            fail_msg("no single-byte change gave \"%s\"", edhoc_datagram_reason_name(r));
    }
}

/* Random bytes of random lengths: never a crash, always a reason. */
static void test_random_bytes(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15u;
    uint8_t buf[1600];
    for (int round = 0; round < 200000; round++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t len = (size_t)(x % sizeof buf);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = (uint8_t)x;
        }
        /* Mostly well-formed headers, so the option walk gets exercised. */
        if (len >= 2 && (round & 1)) {
            buf[0] = (uint8_t)(0x40 | (buf[0] & 0x37));
            buf[1] = (uint8_t)(buf[1] & 0x07);
        }
        uint8_t *copy = malloc(len ? len : 1);
        assert_non_null(copy);
        memcpy(copy, buf, len);
        assert_true(is_reason(edhoc_datagram_check(copy, len, NULL)));
        free(copy);
    }
}

/* ---- Names, process-wide policy, counters ---- */

static void test_reason_names(void **state)
{
    (void)state;
    assert_string_equal(edhoc_datagram_reason_name(EDHOC_DATAGRAM_OK), "accepted");
    assert_string_equal(edhoc_datagram_reason_name(EDHOC_DATAGRAM_TOKEN_LENGTH), "token length");
    assert_string_equal(edhoc_datagram_reason_name(EDHOC_DATAGRAM_OPTION_FORMAT), "option format");
    assert_string_equal(edhoc_datagram_reason_name(EDHOC_DATAGRAM_REASON_COUNT), "unknown");
    assert_string_equal(edhoc_datagram_reason_name(-1), "unknown");
    for (int a = 1; a < EDHOC_DATAGRAM_REASON_COUNT; a++) {
        assert_string_not_equal(edhoc_datagram_reason_name(a), "unknown");
        for (int b = a + 1; b < EDHOC_DATAGRAM_REASON_COUNT; b++)
            assert_string_not_equal(edhoc_datagram_reason_name(a), edhoc_datagram_reason_name(b));
    }
}

static void test_process_policy(void **state)
{
    (void)state;
    struct edhoc_datagram_policy p = edhoc_datagram_guard_policy();
    assert_int_equal(p.max_body, EDHOC_DATAGRAM_DEFAULT_MAX_BODY);
    assert_int_equal(p.max_datagram, EDHOC_DATAGRAM_DEFAULT_MAX_DATAGRAM);
    assert_true(p.accept_block_options);
    assert_true(edhoc_datagram_guard_enabled());

    struct edhoc_datagram_policy set = {
        .max_body = 4096, .max_datagram = 200000, .accept_block_options = false};
    edhoc_datagram_guard_set_policy(&set);
    p = edhoc_datagram_guard_policy();
    assert_int_equal(p.max_body, 4096);
    assert_int_equal(p.max_datagram, EDHOC_DATAGRAM_LIMIT); /* capped */
    assert_false(p.accept_block_options);
    edhoc_datagram_guard_reset_stats();
    struct dgram block = with_block(27, 0, 0, 0);
    assert_int_equal(edhoc_datagram_guard_admit(block.b, block.len), EDHOC_DATAGRAM_BLOCK_REFUSED);

    struct edhoc_datagram_policy zeros = {
        .max_body = 0, .max_datagram = 0, .accept_block_options = true};
    edhoc_datagram_guard_set_policy(&zeros);
    p = edhoc_datagram_guard_policy();
    assert_int_equal(p.max_body, EDHOC_DATAGRAM_DEFAULT_MAX_BODY);
    assert_int_equal(p.max_datagram, EDHOC_DATAGRAM_DEFAULT_MAX_DATAGRAM);
    assert_int_equal(edhoc_datagram_guard_admit(block.b, block.len), EDHOC_DATAGRAM_OK);

    edhoc_datagram_guard_set_enabled(false);
    assert_false(edhoc_datagram_guard_enabled());
    edhoc_datagram_guard_set_enabled(true);
    edhoc_datagram_guard_set_policy(NULL);
    p = edhoc_datagram_guard_policy();
    assert_int_equal(p.max_body, EDHOC_DATAGRAM_DEFAULT_MAX_BODY);
    assert_true(p.accept_block_options);
    edhoc_datagram_guard_reset_stats();
}

static void test_counters_and_line(void **state)
{
    (void)state;
    edhoc_datagram_guard_reset_stats();
    struct edhoc_datagram_guard_stats s;
    char line[256];
    edhoc_datagram_guard_stats(&s);
    assert_int_equal(s.checked, 0);
    assert_int_equal(s.refused, 0);
    edhoc_datagram_guard_stats_format(&s, line, sizeof line);
    assert_string_equal(line, "datagrams refused before libcoap: none");

    struct dgram tkl9 = hex("49 01 0001 010203040506070809", NULL);
    struct dgram tkl12 = hex("4c 01 0001", NULL);
    struct dgram bad_option = hex("40 01 0001 bf", NULL);
    struct dgram good = hex("40 01 0001 b4 74696d65", NULL);
    assert_int_equal(edhoc_datagram_guard_admit(tkl9.b, tkl9.len), EDHOC_DATAGRAM_TOKEN_LENGTH);
    assert_int_equal(edhoc_datagram_guard_admit(tkl12.b, tkl12.len), EDHOC_DATAGRAM_TOKEN_LENGTH);
    assert_int_equal(edhoc_datagram_guard_admit(tkl9.b, tkl9.len), EDHOC_DATAGRAM_TOKEN_LENGTH);
    assert_int_equal(edhoc_datagram_guard_admit(bad_option.b, bad_option.len),
                     EDHOC_DATAGRAM_OPTION_FORMAT);
    assert_int_equal(edhoc_datagram_guard_admit(good.b, good.len), EDHOC_DATAGRAM_OK);
    edhoc_datagram_guard_count_refusal(EDHOC_DATAGRAM_TOO_LONG, 2000);
    edhoc_datagram_guard_count_refusal(EDHOC_DATAGRAM_OK, 10); /* not a refusal */
    edhoc_datagram_guard_count_refusal(-3, 10);                /* not a reason */
    edhoc_datagram_guard_count_refusal(EDHOC_DATAGRAM_REASON_COUNT, 10);

    edhoc_datagram_guard_stats(&s);
    assert_int_equal(s.checked, 6);
    assert_int_equal(s.refused, 5);
    assert_int_equal(s.refused_bytes, 13 + 4 + 13 + 5 + 2000);
    assert_int_equal(s.by_reason[EDHOC_DATAGRAM_OK], 0);
    assert_int_equal(s.by_reason[EDHOC_DATAGRAM_TOKEN_LENGTH], 3);
    assert_int_equal(s.by_reason[EDHOC_DATAGRAM_OPTION_FORMAT], 1);
    assert_int_equal(s.by_reason[EDHOC_DATAGRAM_TOO_LONG], 1);

    const char *want = "datagrams refused before libcoap: 1 too long, 3 token length, "
                       "1 option format";
    int n = edhoc_datagram_guard_stats_format(&s, line, sizeof line);
    assert_string_equal(line, want);
    assert_int_equal(n, (int)strlen(want));
    /* snprintf's contract: the full length, the buffer cut and ended. */
    char small[20];
    n = edhoc_datagram_guard_stats_format(&s, small, sizeof small);
    assert_int_equal(n, (int)strlen(want));
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, want, sizeof small - 1);
    assert_int_equal(edhoc_datagram_guard_stats_format(&s, NULL, 0), (int)strlen(want));

    edhoc_datagram_guard_reset_stats();
    edhoc_datagram_guard_stats(&s);
    assert_int_equal(s.checked, 0);
    assert_int_equal(s.refused, 0);
    assert_int_equal(s.refused_bytes, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crash_pair_is_well_formed),
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_codes),
        cmocka_unit_test(test_empty_messages_and_types),
        cmocka_unit_test(test_option_format),
        cmocka_unit_test(test_option_lengths),
        cmocka_unit_test(test_repetitions),
        cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_datagram_size),
        cmocka_unit_test(test_rfc8613_messages),
        cmocka_unit_test(test_seed_corpus_accepted),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_every_byte_change),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_reason_names),
        cmocka_unit_test(test_process_policy),
        cmocka_unit_test(test_counters_and_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
