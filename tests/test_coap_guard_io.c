/*
 * The strict datagram check where it is applied: the process's recv,
 * recvmsg and recvfrom (src/coap/transport_io.c) on real loopback
 * sockets. A refused datagram must vanish as if it had never arrived (the
 * next one is read, or EAGAIN), be counted under its reason and not in
 * the byte accounting, and leave the caller's name and control buffers
 * as a plain read would; MSG_PEEK, zero-length reads, buffers shorter than
 * the datagram, blocking sockets and a flood each behave as documented.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "edhoc/datagram_guard.h"
#include "edhoc/transport.h"

struct pair {
    int rx, tx;
    struct sockaddr_in rx_addr, tx_addr;
};

static int bound_socket(bool nonblocking, struct sockaddr_in *addr)
{
    int fd = socket(AF_INET, SOCK_DGRAM | (nonblocking ? SOCK_NONBLOCK : 0), 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *addr = a;
    return fd;
}

static int setup(void **state)
{
    struct pair *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    p->rx = bound_socket(true, &p->rx_addr);
    p->tx = bound_socket(false, &p->tx_addr);
    int big = 1 << 20;
    setsockopt(p->rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    edhoc_datagram_guard_set_policy(NULL);
    edhoc_datagram_guard_set_enabled(true);
    edhoc_datagram_guard_reset_stats();
    *state = p;
    return 0;
}

static int teardown(void **state)
{
    struct pair *p = *state;
    close(p->rx);
    close(p->tx);
    free(p);
    edhoc_datagram_guard_set_policy(NULL);
    edhoc_datagram_guard_set_enabled(true);
    return 0;
}

/* sendto is not one of the counted functions: the sending side stays out
 * of the receive counts under test. */
static void put(const struct pair *p, const char *hex)
{
    uint8_t b[2048];
    size_t n = 0;
    for (const char *s = hex; s[0] && s[1];) {
        if (*s == ' ') {
            s++;
            continue;
        }
        unsigned v;
        assert_int_equal(sscanf(s, "%2x", &v), 1);
        b[n++] = (uint8_t)v;
        s += 2;
    }
    ssize_t sent = sendto(p->tx, b, n, 0, (const struct sockaddr *)&p->rx_addr, sizeof p->rx_addr);
    assert_int_equal(sent, (ssize_t)n);
}

static void put_bytes(const struct pair *p, const uint8_t *b, size_t n)
{
    ssize_t sent = sendto(p->tx, b, n, 0, (const struct sockaddr *)&p->rx_addr, sizeof p->rx_addr);
    assert_int_equal(sent, (ssize_t)n);
}

#define TOKEN_LENGTH_9 "49 01 0001 010203040506070809"
#define VERSION_0      "01 01 0001 aa"
#define GOOD_GET       "42 01 0001 7a01 b4 74696d65" /* CON GET /time, 11 bytes */

static const uint8_t good_get[] = {0x42, 0x01, 0x00, 0x01, 0x7a, 0x01,
                                   0xb4, 0x74, 0x69, 0x6d, 0x65};

static uint64_t refused(int reason)
{
    struct edhoc_datagram_guard_stats s;
    edhoc_datagram_guard_stats(&s);
    return reason ? s.by_reason[reason] : s.refused;
}

static uint64_t received_count(void)
{
    struct edhoc_transport_stats st;
    edhoc_transport_get_stats(&st);
    return st.datagrams_received;
}

static void expect_nothing_left(int fd)
{
    uint8_t buf[64];
    errno = 0;
    assert_int_equal(recv(fd, buf, sizeof buf, 0), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
}

static void test_recvmsg_skips_refused(void **state)
{
    struct pair *p = *state;
    uint64_t counted = received_count();
    put(p, TOKEN_LENGTH_9);
    put(p, VERSION_0);
    put(p, GOOD_GET);
    uint8_t buf[1472];
    struct iovec v = {buf, sizeof buf};
    struct sockaddr_in from;
    struct msghdr m = {
        .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &v, .msg_iovlen = 1};
    ssize_t n = recvmsg(p->rx, &m, 0);
    assert_int_equal(n, sizeof good_get);
    assert_memory_equal(buf, good_get, sizeof good_get);
    assert_int_equal(m.msg_namelen, sizeof from);
    assert_int_equal(from.sin_port, p->tx_addr.sin_port);
    assert_int_equal(m.msg_flags & MSG_TRUNC, 0);
    assert_int_equal(refused(EDHOC_DATAGRAM_TOKEN_LENGTH), 1);
    assert_int_equal(refused(EDHOC_DATAGRAM_VERSION), 1);
    assert_int_equal(refused(0), 2);
    /* The byte accounting saw the accepted datagram only. */
    assert_int_equal(received_count(), counted + 1);
    expect_nothing_left(p->rx);
}

static void test_recv_only_refused_is_eagain(void **state)
{
    struct pair *p = *state;
    put(p, TOKEN_LENGTH_9);
    put(p, "");                 /* zero-length datagram: too short */
    put(p, "40 00 0001 ff 00"); /* Empty message with a payload */
    uint8_t buf[1472];
    errno = 0;
    assert_int_equal(recv(p->rx, buf, sizeof buf, 0), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    assert_int_equal(refused(EDHOC_DATAGRAM_TOO_SHORT), 1);
    assert_int_equal(refused(EDHOC_DATAGRAM_EMPTY_WITH_DATA), 1);
    assert_int_equal(refused(0), 3);
    /* They are gone, and what comes next is read. */
    put(p, GOOD_GET);
    assert_int_equal(recv(p->rx, buf, sizeof buf, 0), sizeof good_get);
}

static void test_crash_pair_passes(void **state)
{
    struct pair *p = *state;
    /* Well-formed, so it reaches the stack (whose block-wise code is off). */
    put(p, "41 02 0001 01 b1 78 d1 03 08 ff 41414141414141414141414141414141");
    put(p, "41 02 0002 02 b1 78 d1 03 00 ff 42");
    uint8_t buf[1472];
    assert_int_equal(recv(p->rx, buf, sizeof buf, 0), 27);
    assert_int_equal(recv(p->rx, buf, sizeof buf, 0), 12);
    assert_int_equal(refused(0), 0);
    /* A response with a BERT Block2 is not (nothing takes it; in a
     * request the engine answers 4.00, RFC 7959 Section 2.2). */
    put(p, "61 45 0003 03 d1 0a 0f ff 41");
    expect_nothing_left(p->rx);
    assert_int_equal(refused(EDHOC_DATAGRAM_BLOCK_SIZE), 1);
}

static void test_peek(void **state)
{
    struct pair *p = *state;
    uint64_t counted = received_count();
    put(p, TOKEN_LENGTH_9);
    put(p, GOOD_GET);
    uint8_t buf[1472];
    /* A peek never sees the refused datagram, and drops it for good. */
    assert_int_equal(recv(p->rx, buf, sizeof buf, MSG_PEEK), sizeof good_get);
    assert_memory_equal(buf, good_get, sizeof good_get);
    assert_int_equal(refused(0), 1);
    assert_int_equal(recv(p->rx, buf, sizeof buf, MSG_PEEK), sizeof good_get);
    assert_int_equal(refused(0), 1);
    /* Peeks are not counted as received; the read is. */
    assert_int_equal(received_count(), counted);
    assert_int_equal(recv(p->rx, buf, sizeof buf, 0), sizeof good_get);
    assert_int_equal(received_count(), counted + 1);
    expect_nothing_left(p->rx);

    /* Only refused ones queued: the peek fails as on an empty queue, and
     * the queue is empty. */
    put(p, VERSION_0);
    errno = 0;
    assert_int_equal(recv(p->rx, buf, sizeof buf, MSG_PEEK), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    put(p, GOOD_GET);
    assert_int_equal(recv(p->rx, buf, sizeof buf, 0), sizeof good_get);

    /* A peek into a short buffer: the datagram was checked whole, the
     * caller gets its first bytes, as the real call gives. */
    put(p, GOOD_GET);
    assert_int_equal(recv(p->rx, buf, 4, MSG_PEEK), 4);
    assert_int_equal(recv(p->rx, buf, 4, MSG_PEEK | MSG_TRUNC), sizeof good_get);
    assert_int_equal(recv(p->rx, buf, sizeof buf, 0), sizeof good_get);
}

static void test_zero_length_reads(void **state)
{
    struct pair *p = *state;
    uint8_t buf[1472];
    /* Asking for no bytes (e.g. to learn a datagram's size): the refused
     * datagram in front is dropped first. */
    put(p, TOKEN_LENGTH_9);
    put(p, GOOD_GET);
    assert_int_equal(recv(p->rx, NULL, 0, MSG_PEEK | MSG_TRUNC), sizeof good_get);
    assert_int_equal(refused(0), 1);
    /* A zero-length read takes the accepted datagram off the queue, as the
     * real call does. */
    assert_int_equal(recv(p->rx, buf, 0, 0), 0);
    expect_nothing_left(p->rx);
    /* Only refused ones: EAGAIN. */
    put(p, VERSION_0);
    errno = 0;
    assert_int_equal(recv(p->rx, NULL, 0, 0), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    assert_int_equal(refused(0), 2);
}

static void test_longer_than_buffer_or_policy(void **state)
{
    struct pair *p = *state;
    uint8_t buf[2048];
    /* A buffer shorter than the datagram would hand over a cut message:
     * refused unseen. */
    put(p, GOOD_GET);
    put(p, GOOD_GET);
    errno = 0;
    assert_int_equal(recv(p->rx, buf, 8, 0), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    assert_int_equal(refused(EDHOC_DATAGRAM_TOO_LONG), 2);
    /* Longer than the policy allows, even into a big enough buffer. */
    uint8_t big[1500] = {0x40, 0x02, 0x00, 0x01, 0xff};
    memset(big + 5, 0x41, sizeof big - 5);
    put_bytes(p, big, sizeof big);
    put_bytes(p, big, 1472);
    assert_int_equal(recv(p->rx, buf, sizeof buf, 0), 1472);
    assert_int_equal(refused(EDHOC_DATAGRAM_TOO_LONG), 3);
    /* A policy that allows it. */
    struct edhoc_datagram_policy pol = edhoc_datagram_guard_policy();
    pol.max_datagram = 1500;
    edhoc_datagram_guard_set_policy(&pol);
    put_bytes(p, big, sizeof big);
    assert_int_equal(recv(p->rx, buf, sizeof buf, 0), 1500);
    /* With MSG_TRUNC the caller asks for the real length; an accepted
     * datagram fits, so that is what it read. */
    put(p, GOOD_GET);
    assert_int_equal(recv(p->rx, buf, sizeof buf, MSG_TRUNC), sizeof good_get);
}

static void test_recvfrom(void **state)
{
    struct pair *p = *state;
    put(p, VERSION_0);
    put(p, GOOD_GET);
    uint8_t buf[1472];
    struct sockaddr_in from;
    memset(&from, 0, sizeof from);
    socklen_t len = sizeof from;
    assert_int_equal(recvfrom(p->rx, buf, sizeof buf, 0, (struct sockaddr *)&from, &len),
                     sizeof good_get);
    assert_int_equal(len, sizeof from);
    assert_int_equal(from.sin_family, AF_INET);
    assert_int_equal(from.sin_port, p->tx_addr.sin_port);
    assert_int_equal(refused(EDHOC_DATAGRAM_VERSION), 1);
    /* Without an address. */
    put(p, VERSION_0);
    put(p, GOOD_GET);
    assert_int_equal(recvfrom(p->rx, buf, sizeof buf, 0, NULL, NULL), sizeof good_get);
    errno = 0;
    assert_int_equal(recvfrom(p->rx, buf, sizeof buf, 0, NULL, NULL), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
}

/* The kernel shrinks msg_controllen and msg_namelen to what one datagram
 * used; the next datagram must get the caller's full sizes again, or its
 * packet info (the CoAP library's local address) could be cut off. Here
 * the good datagram needs more control space than the refused one before
 * it: it carries IP options, which the receiver asked to see. */
static void test_control_data_after_a_drop(void **state)
{
    struct pair *p = *state;
    int on = 1;
    assert_int_equal(setsockopt(p->rx, IPPROTO_IP, IP_PKTINFO, &on, sizeof on), 0);
    assert_int_equal(setsockopt(p->rx, IPPROTO_IP, IP_RECVOPTS, &on, sizeof on), 0);
    put(p, TOKEN_LENGTH_9);
    static const uint8_t four_nops[] = {1, 1, 1, 1};
    assert_int_equal(setsockopt(p->tx, IPPROTO_IP, IP_OPTIONS, four_nops, sizeof four_nops), 0);
    put(p, GOOD_GET);
    assert_int_equal(setsockopt(p->tx, IPPROTO_IP, IP_OPTIONS, NULL, 0), 0);
    uint8_t buf[1472];
    union {
        struct cmsghdr align;
        uint8_t bytes[256];
    } control;
    struct iovec v = {buf, sizeof buf};
    struct sockaddr_in from;
    struct msghdr m = {.msg_name = &from,
                       .msg_namelen = sizeof from,
                       .msg_iov = &v,
                       .msg_iovlen = 1,
                       .msg_control = control.bytes,
                       .msg_controllen = sizeof control.bytes};
    assert_int_equal(recvmsg(p->rx, &m, 0), sizeof good_get);
    assert_int_equal(m.msg_flags & MSG_CTRUNC, 0);
    bool pktinfo = false, options = false;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
            struct in_pktinfo pi;
            memcpy(&pi, CMSG_DATA(c), sizeof pi);
            assert_int_equal(pi.ipi_addr.s_addr, htonl(INADDR_LOOPBACK));
            pktinfo = true;
        }
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVOPTS)
            options = true;
    }
    assert_true(pktinfo);
    assert_true(options);
    assert_int_equal(from.sin_port, p->tx_addr.sin_port);
}

static void test_scattered_buffer(void **state)
{
    struct pair *p = *state;
    put(p, VERSION_0);
    put(p, GOOD_GET);
    uint8_t a[3], b[100];
    struct iovec v[2] = {{a, sizeof a}, {b, sizeof b}};
    struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
    assert_int_equal(recvmsg(p->rx, &m, 0), sizeof good_get);
    assert_memory_equal(a, good_get, 3);
    assert_memory_equal(b, good_get + 3, sizeof good_get - 3);
    assert_int_equal(refused(0), 1);
}

static void test_flood_yields(void **state)
{
    struct pair *p = *state;
    for (int i = 0; i < 100; i++)
        put(p, TOKEN_LENGTH_9);
    put(p, GOOD_GET);
    uint8_t buf[1472];
    /* One call drops a bounded run, then lets the event loop run. */
    errno = 0;
    assert_int_equal(recv(p->rx, buf, sizeof buf, 0), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    assert_int_equal(refused(0), 64);
    assert_int_equal(recv(p->rx, buf, sizeof buf, 0), sizeof good_get);
    assert_int_equal(refused(0), 100);
}

static void test_blocking_socket(void **state)
{
    struct pair *p = *state;
    struct sockaddr_in addr;
    int fd = bound_socket(false, &addr);
    struct timeval tv = {.tv_sec = 0, .tv_usec = 150000};
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    uint8_t buf[1472];
    /* A refused datagram in front of a good one: the read returns the good
     * one without waiting for anything else. */
    for (int i = 0; i < 70; i++)
        assert_true(
            sendto(p->tx, "\x49\x01\x00\x01", 4, 0, (struct sockaddr *)&addr, sizeof addr) == 4);
    assert_true(sendto(p->tx, good_get, sizeof good_get, 0, (struct sockaddr *)&addr,
                       sizeof addr) == (ssize_t)sizeof good_get);
    assert_int_equal(recv(fd, buf, sizeof buf, 0), sizeof good_get);
    assert_int_equal(refused(EDHOC_DATAGRAM_TOKEN_LENGTH), 70);
    /* Only a refused one: the read waits as if nothing had come, until the
     * socket's own timeout. */
    assert_true(sendto(p->tx, "\x49\x01\x00\x01", 4, 0, (struct sockaddr *)&addr, sizeof addr) ==
                4);
    errno = 0;
    assert_int_equal(recv(fd, buf, sizeof buf, 0), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    assert_int_equal(refused(EDHOC_DATAGRAM_TOKEN_LENGTH), 71);
    close(fd);
}

static void test_policy_applies(void **state)
{
    struct pair *p = *state;
    struct edhoc_datagram_policy pol = edhoc_datagram_policy_default();
    pol.accept_block_options = false;
    edhoc_datagram_guard_set_policy(&pol);
    put(p, "41 02 0001 01 b1 78 d1 03 08 ff 41");
    expect_nothing_left(p->rx);
    assert_int_equal(refused(EDHOC_DATAGRAM_BLOCK_REFUSED), 1);
}

static void test_disabled_and_other_sockets(void **state)
{
    struct pair *p = *state;
    uint8_t buf[1472];
    edhoc_datagram_guard_set_enabled(false);
    put(p, VERSION_0);
    assert_int_equal(recv(p->rx, buf, sizeof buf, 0), 5);
    assert_int_equal(refused(0), 0);
    edhoc_datagram_guard_set_enabled(true);
    /* Not an IP socket: not CoAP's business. */
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
    assert_int_equal(send(sv[0], "\x01\x01", 2, 0), 2);
    assert_int_equal(recv(sv[1], buf, sizeof buf, 0), 2);
    close(sv[0]);
    close(sv[1]);
    assert_int_equal(refused(0), 0);
    struct edhoc_datagram_guard_stats s;
    edhoc_datagram_guard_stats(&s);
    assert_int_equal(s.checked, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_recvmsg_skips_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recv_only_refused_is_eagain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_pair_passes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peek, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_length_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_longer_than_buffer_or_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recvfrom, setup, teardown),
        cmocka_unit_test_setup_teardown(test_control_data_after_a_drop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scattered_buffer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flood_yields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_blocking_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_policy_applies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled_and_other_sockets, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
