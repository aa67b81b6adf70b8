/*
 * The workers' steering program (src/coap/reuseport.c) run by libpcap's
 * classic BPF interpreter -- the instruction set and the "a load past
 * the end returns 0" rule are the kernel's -- against its statement in C
 * and against answers worked out by hand from RFC 8613 Section 6.1 and
 * RFC 7252 Section 3.1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <linux/filter.h>
#include <pcap/bpf.h>

#include "edhoc/reuseport.h"
#include "edhoc/state.h"

static struct sock_filter prog[EDHOC_REUSEPORT_MAX_INSNS];
static int prog_len;
static unsigned prog_count;

static uint32_t run(const uint8_t *msg, size_t len)
{
    /* struct sock_filter and struct bpf_insn have one layout. */
    _Static_assert(sizeof(struct sock_filter) == sizeof(struct bpf_insn), "one layout");
    return bpf_filter((const struct bpf_insn *)prog, msg, (u_int)len, (u_int)len);
}

static void use(unsigned count)
{
    prog_count = count;
    prog_len = edhoc_reuseport_program(count, prog, EDHOC_REUSEPORT_MAX_INSNS);
    assert_true(prog_len > 0);
}

/* Both agree, and give `want`. */
static void expect(const uint8_t *msg, size_t len, uint32_t want)
{
    uint32_t c = edhoc_reuseport_steer(msg, len, prog_count);
    uint32_t b = run(msg, len);
    if (c != want || b != want)
        fail_msg("len %zu: C %#x, BPF %#x, expected %#x", len, c, b, want);
}

/* RFC 8613 Appendix C.4 request: CON GET, token 4a, Uri-Host "localhost"
 * (option 3), OSCORE option 09 14 (flags 09: n = 1, k; partial IV 14,
 * kid empty: the client's Sender ID is the empty string there). Here with
 * a one-byte kid 01 instead (C.5-like: flags 09, piv 14, kid 00). */
static const uint8_t c4_like[] = {
    0x44, 0x02, 0x5d, 0x1f, 0x00, 0x00, 0x39, 0x74,           /* hdr, MID, token 4 bytes */
    0x39, 'l',  'o',  'c',  'a',  'l',  'h',  'o',  's', 't', /* Uri-Host (3), len 9 */
    0x63, 0x09, 0x14, 0x01,                                   /* OSCORE (delta 6), 3 bytes */
    0xff, 0xaa, 0xbb};

static void test_known_answers(void **state)
{
    (void)state;
    use(2);
    /* kid 01: the last byte 1, worker 1 of 2 (edhoc_state_owner). */
    expect(c4_like, sizeof c4_like, 1);
    assert_int_equal(edhoc_state_owner((const uint8_t *)"\x01", 1, 2), 1);
    uint8_t m[sizeof c4_like];
    memcpy(m, c4_like, sizeof m);
    m[21] = 0x02; /* kid 02: worker 0 */
    expect(m, sizeof m, 0);
    /* Flags 0x01: no k bit, no kid: a response's option, by hash. */
    memcpy(m, c4_like, sizeof m);
    m[19] = 0x01;
    expect(m, sizeof m, EDHOC_REUSEPORT_BY_HASH);
    /* Kid empty (flags 09, piv 14, nothing more): worker 0. */
    static const uint8_t empty_kid[] = {0x44, 0x02, 0, 1, 0, 0, 0, 0, 0x92, 0x09, 0x14};
    expect(empty_kid, sizeof empty_kid, 0);
    /* Kid context: flags 0x19 (h, k, n = 1), piv 05, s = 2, context
     * aabb, kid 0703: the kid's last byte 03, worker 1. */
    static const uint8_t with_ctx[] = {0x40, 0x02, 0,    1,    0x97, 0x19,
                                       0x05, 0x02, 0xaa, 0xbb, 0x07, 0x03};
    expect(with_ctx, sizeof with_ctx, 1);
    /* No OSCORE option: a bare message_1 (POST, Uri-Path .well-known,
     * edhoc, payload): by hash. */
    static const uint8_t m1[] = {0x40, 0x02, 0,   2,   0xbb, '.',  'w', 'e',  'l',
                                 'l',  '-',  'k', 'n', 'o',  'w',  'n', 0x05, 'e',
                                 'd',  'h',  'o', 'c', 0xff, 0xf5, 0x03};
    expect(m1, sizeof m1, EDHOC_REUSEPORT_BY_HASH);
    /* An empty ACK or Reset (Code 0.00, RFC 7252 Sections 4.2, 4.3)
     * answers a notification by its Message ID, which the notifying
     * worker picked among its own: 0x1234 is even, worker 0; 0x1235
     * worker 1. Shorter than a header: by hash. */
    static const uint8_t ack[] = {0x60, 0x00, 0x12, 0x34};
    expect(ack, sizeof ack, 0);
    static const uint8_t ack_odd[] = {0x60, 0x00, 0x12, 0x35};
    expect(ack_odd, sizeof ack_odd, 1);
    static const uint8_t rst[] = {0x70, 0x00, 0xff, 0xff};
    expect(rst, sizeof rst, 1);
    expect(ack, 3, EDHOC_REUSEPORT_BY_HASH);
    /* An empty CON (a ping, answered by any worker with a Reset) and an
     * empty NON: by hash. A piggybacked ACK (Code 2.05) is no empty
     * message: walked like any other, no OSCORE option, by hash. */
    static const uint8_t ping[] = {0x40, 0x00, 0x12, 0x35};
    expect(ping, sizeof ping, EDHOC_REUSEPORT_BY_HASH);
    static const uint8_t non_empty[] = {0x50, 0x00, 0x12, 0x35};
    expect(non_empty, sizeof non_empty, EDHOC_REUSEPORT_BY_HASH);
    static const uint8_t piggy[] = {0x60, 0x45, 0x12, 0x35, 0xff, 0x01};
    expect(piggy, sizeof piggy, EDHOC_REUSEPORT_BY_HASH);
    /* TKL 9..15 is a format error (RFC 7252 Section 3): by hash. */
    static const uint8_t bad_tkl[] = {0x49, 0x01, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0x91, 0x09};
    expect(bad_tkl, sizeof bad_tkl, EDHOC_REUSEPORT_BY_HASH);
    /* Uri-Path (11) before OSCORE is out of order: OSCORE is not there
     * any more once the number passed 9. */
    static const uint8_t past[] = {0x40, 0x01, 0, 0, 0xb1, 'a', 0xe2, 0xff, 0xf6, 0x09, 0x14};
    expect(past, sizeof past, EDHOC_REUSEPORT_BY_HASH);
    /* Three workers: kid 05 -> 2; a Reset with Message ID 0xffff
     * (65535 = 3 * 21845) -> 0, 0x0007 -> 1. */
    use(3);
    memcpy(m, c4_like, sizeof m);
    m[21] = 0x05;
    expect(m, sizeof m, 2);
    expect(rst, sizeof rst, 0);
    static const uint8_t rst7[] = {0x70, 0x00, 0x00, 0x07};
    expect(rst7, sizeof rst7, 1);
    for (unsigned mid = 0; mid < 65536; mid += 97)
        assert_int_equal(edhoc_reuseport_mid_owner((uint16_t)mid, 3), mid % 3);
}

/* A truncated option: the interpreter stops with 0, and so does C. */
static void test_truncated(void **state)
{
    (void)state;
    use(2);
    for (size_t len = 0; len <= sizeof c4_like; len++) {
        uint32_t c = edhoc_reuseport_steer(c4_like, len, 2);
        assert_int_equal(c, run(c4_like, len));
    }
}

/* Extended deltas and lengths (13 and 14 nibbles, RFC 7252 Section 3.1)
 * in front of the OSCORE option, and an extended OSCORE length. */
static void test_extended_forms(void **state)
{
    (void)state;
    use(4);
    uint8_t m[400];
    size_t n = 0;
    m[n++] = 0x41;
    m[n++] = 0x01;
    m[n++] = 0;
    m[n++] = 0;
    m[n++] = 0x77;
    /* Uri-Host (3) with an extended length of 13 + 7 = 20. */
    m[n++] = 0x3d;
    m[n++] = 7;
    memset(m + n, 'h', 20);
    n += 20;
    /* Observe (6) with a 14-nibble length: 269 + 0 = 269 bytes. */
    m[n++] = 0x3e;
    m[n++] = 0;
    m[n++] = 0;
    memset(m + n, 0, 269);
    n += 269;
    /* OSCORE (9), length 13 + 1 = 14: flags 0x0d (k, n = 5), piv 5 bytes,
     * kid 8 bytes ending in 0x27 -> 0x27 % 4 = 3. */
    m[n++] = 0x3d;
    m[n++] = 1;
    m[n++] = 0x0d;
    memset(m + n, 0x11, 5);
    n += 5;
    memcpy(m + n, "\x01\x02\x03\x04\x05\x06\x07\x27", 8);
    n += 8;
    expect(m, n, 3);
}

/* Random messages around a valid shape: the program and C agree on every
 * one (both are in this file's list of behaviours: a disagreement means
 * the program is not the decision the workers rely on). */
static void test_random_agreement(void **state)
{
    (void)state;
    srand(1234);
    for (unsigned count = 2; count <= 5; count++) {
        use(count);
        for (int i = 0; i < 20000; i++) {
            uint8_t m[64];
            size_t len = (size_t)(rand() % (int)sizeof m);
            for (size_t k = 0; k < len; k++)
                m[k] = (uint8_t)rand();
            if (len >= 4 && rand() % 8 == 0) {
                m[1] = 0; /* Code 0.00: an empty message of a random type */
            } else if (len > 4 && rand() % 2) {
                m[0] = (uint8_t)(0x40 | (rand() % 9));
                size_t at = 4 + (m[0] & 0x0f);
                if (at < len)
                    m[at] = (uint8_t)(0x90 | (rand() % 8));
                if (at + 1 < len)
                    m[at + 1] = (uint8_t)(rand() % 2 ? 0x09 : 0x19);
            }
            uint32_t c = edhoc_reuseport_steer(m, len, count);
            uint32_t b = run(m, len);
            if (c != b)
                fail_msg("count %u, message %d (len %zu): C %#x, BPF %#x", count, i, len, c, b);
        }
    }
}

static void test_bad_arguments(void **state)
{
    (void)state;
    assert_int_equal(edhoc_reuseport_program(1, prog, EDHOC_REUSEPORT_MAX_INSNS), -1);
    assert_int_equal(
        edhoc_reuseport_program(EDHOC_REUSEPORT_MAX_WORKERS + 1, prog, EDHOC_REUSEPORT_MAX_INSNS),
        -1);
    assert_int_equal(edhoc_reuseport_program(2, prog, 10), -1);
    assert_int_equal(edhoc_reuseport_steer(c4_like, sizeof c4_like, 1), EDHOC_REUSEPORT_BY_HASH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),  cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_extended_forms), cmocka_unit_test(test_random_agreement),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests_name("reuseport", tests, NULL, NULL);
}
