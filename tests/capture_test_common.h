/* What the tests of captures (src/capture) share: a working directory per
 * program, the RFC 9529 trace 2 messages, CoAP framing of them as RFC 9528
 * Appendix A.2 carries them, the traffic a capture is built from and the
 * EDHOC analysis expected of it. */
#ifndef CAPTURE_TEST_COMMON_H
#define CAPTURE_TEST_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/netacct.h"
#include "vectors.h"

#define SA(e) ((const struct sockaddr *)&(e).ss)

#define N_EXPECTED (sizeof expected / sizeof expected[0])

static char workdir[256];

/* ---- Building the traffic ---- */

static uint8_t m1[64], m1_single[64], m1_first[64], m2[64], m3[64], m4[64], err[8];
static size_t m1_len, m1_single_len, m1_first_len, m2_len, m3_len, m4_len, err_len;

static inline void load_trace2(void)
{
    struct vec_scope v = vec_load("rfc9529-trace2.json");
    m1_len = vec_hex(v, "message_1", m1, sizeof m1);
    m2_len = vec_hex(v, "message_2", m2, sizeof m2);
    m3_len = vec_hex(v, "message_3", m3, sizeof m3);
    m4_len = vec_hex(v, "message_4", m4, sizeof m4);
    m1_first_len = vec_hex(v, "message_1_first", m1_first, sizeof m1_first);
    err_len = vec_hex(v, "error", err, sizeof err);
    /* message_1 = 03 82 06 02 ...: SUITES_I [6, 2] -> the single suite 2
     * (RFC 9528 5.2.2: one suite is sent as an int): 39 - 2 = 37 bytes. */
    assert_int_equal(m1[1], 0x82);
    m1_single[0] = m1[0];
    m1_single[1] = 0x02;
    memcpy(m1_single + 2, m1 + 4, m1_len - 4);
    m1_single_len = m1_len - 2;
}

struct endpoint {
    struct sockaddr_storage ss;
};

static inline void ep4(struct endpoint *e, const char *addr, uint16_t port)
{
    struct sockaddr_in *s = (struct sockaddr_in *)&e->ss;
    memset(e, 0, sizeof *e);
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    assert_int_equal(inet_pton(AF_INET, addr, &s->sin_addr), 1);
}

static inline void ep6(struct endpoint *e, const char *addr, uint16_t port)
{
    struct sockaddr_in6 *s = (struct sockaddr_in6 *)&e->ss;
    memset(e, 0, sizeof *e);
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    assert_int_equal(inet_pton(AF_INET6, addr, &s->sin6_addr), 1);
}

/* A CoAP message: path (NULL: none) as /.well-known/edhoc, cf < 0 none,
 * oscore option value when oscore_len >= 0 (0 = empty option). */
static inline size_t coap(uint8_t type, uint8_t code, uint16_t mid, uint8_t token, bool edhoc_path,
                          int cf, const uint8_t *oscore, int oscore_len, const uint8_t *prefix,
                          size_t prefix_len, const uint8_t *payload, size_t len, uint8_t *out)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.code = code;
    m.mid = mid;
    m.token_len = 2;
    m.token[0] = 0xa0;
    m.token[1] = token;
    uint8_t cfv[4];
    static uint8_t body[256];
    if (oscore_len >= 0)
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_OSCORE, oscore, (size_t)oscore_len),
                         0);
    if (edhoc_path) {
        assert_int_equal(
            edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)".well-known", 11),
            0);
        assert_int_equal(
            edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)"edhoc", 5), 0);
    }
    if (cf >= 0)
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cfv,
                                                   edhoc_coap_uint_encode((uint32_t)cf, cfv)),
                         0);
    if (prefix_len)
        memcpy(body, prefix, prefix_len);
    if (len)
        memcpy(body + prefix_len, payload, len);
    m.payload = prefix_len + len ? body : NULL;
    m.payload_len = prefix_len + len;
    long n = edhoc_coap_msg_encode(&m, out, 512);
    assert_true(n > 0);
    return (size_t)n;
}

static const uint8_t CBOR_TRUE[] = {0xf5};
static const uint8_t C_R[] = {0x27};
static const uint8_t OSCORE_REQ_OPT[] = {0x09, 0x00, 0x27}; /* n=1, k=1: PIV 0, kid 0x27 */
static const uint8_t CIPHERTEXT[] = {0x61, 0x2f, 0x10, 0x92, 0xf1, 0x77, 0x6f,
                                     0x1c, 0x16, 0x68, 0xb3, 0x82, 0x5e};

/* Number of UDP datagrams written: 6 + 5 + 2 + 4 + 1 DNS-like + 1 bad
 * CoAP + 1 block-wise exchange (below: 5). */
struct traffic {
    unsigned datagrams;
};

/* Write the whole traffic through cap; returns the datagram count. */
static inline unsigned write_traffic(struct edhoc_capture *cap)
{
    struct endpoint c6, s6, c4, s4, c4b, dns_c, dns_s;
    ep6(&c6, "2001:db8::1", 40001);
    ep6(&s6, "2001:db8::2", 5683);
    ep4(&c4, "192.0.2.1", 40001);
    ep4(&s4, "192.0.2.2", 5683);
    ep4(&c4b, "192.0.2.1", 40002);
    ep4(&dns_c, "192.0.2.1", 50000);
    ep4(&dns_s, "192.0.2.53", 53);
    uint8_t b[512];
    size_t n;
    unsigned count = 0;
    struct timespec ts = {1700000000, 0};
#define SEND(from, to)                                                                             \
    do {                                                                                           \
        ts.tv_nsec += 1000000;                                                                     \
        assert_int_equal(edhoc_capture_datagram(cap, SA(from), SA(to), b, n, &ts), 0);             \
        count++;                                                                                   \
    } while (0)

    /* Exchange 1 (IPv6). */
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x1001, 1, true, 65, NULL, -1, CBOR_TRUE, 1, m1, m1_len,
             b);
    SEND(c6, s6);
    n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x1001, 1, false, 64, NULL, -1, NULL, 0, m2, m2_len,
             b);
    SEND(s6, c6);
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x1002, 2, true, 65, NULL, -1, C_R, 1, m3, m3_len, b);
    SEND(c6, s6);
    n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x1002, 2, false, 64, NULL, -1, NULL, 0, m4, m4_len,
             b);
    SEND(s6, c6);
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x1003, 3, false, -1, OSCORE_REQ_OPT, 3, NULL, 0,
             CIPHERTEXT, sizeof CIPHERTEXT, b);
    SEND(c6, s6);
    n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x1003, 3, false, -1, NULL, 0, NULL, 0, CIPHERTEXT,
             sizeof CIPHERTEXT, b);
    SEND(s6, c6);

    /* Exchange 2 (IPv4, one suite), message_1 sent twice. */
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x2001, 1, true, 65, NULL, -1, CBOR_TRUE, 1, m1_single,
             m1_single_len, b);
    SEND(c4, s4);
    SEND(c4, s4);
    n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x2001, 1, false, 64, NULL, -1, NULL, 0, m2, m2_len,
             b);
    SEND(s4, c4);
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x2002, 2, true, 65, NULL, -1, C_R, 1, m3, m3_len, b);
    SEND(c4, s4);
    n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x2002, 2, false, -1, NULL, -1, NULL, 0, NULL, 0, b);
    SEND(s4, c4);

    /* A DNS-looking datagram: not CoAP, ignored. */
    static const uint8_t dns[] = {0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0};
    memcpy(b, dns, sizeof dns);
    n = sizeof dns;
    SEND(dns_c, dns_s);

    /* Exchange 3: the rejected message_1 and the error. */
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x3001, 4, true, 65, NULL, -1, CBOR_TRUE, 1, m1_first,
             m1_first_len, b);
    SEND(c4, s4);
    n = coap(COAP_TYPE_ACK, COAP_CODE_BAD_REQUEST, 0x3001, 4, false, 64, NULL, -1, NULL, 0, err,
             err_len, b);
    SEND(s4, c4);

    /* A datagram to the CoAP port that is not CoAP (version 0). */
    static const uint8_t junk[] = {0x00, 0x01, 0x02};
    memcpy(b, junk, sizeof junk);
    n = sizeof junk;
    SEND(c4, s4);

    /* Exchange 4: bare framing; the responder answers separately (empty
     * ACK, then a CON 2.04 with the same token). */
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x4001, 5, true, -1, NULL, -1, NULL, 0, m1, m1_len, b);
    SEND(c4b, s4);
    n = coap(COAP_TYPE_ACK, COAP_CODE_EMPTY, 0x4001, 0, false, -1, NULL, -1, NULL, 0, NULL, 0, b);
    n = 4; /* an empty message has no token */
    b[0] = 0x60;
    SEND(s4, c4b);
    n = coap(COAP_TYPE_CON, COAP_CODE_CHANGED, 0x9001, 5, false, -1, NULL, -1, NULL, 0, m2, m2_len,
             b);
    SEND(s4, c4b);
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x4002, 6, true, -1, NULL, -1, NULL, 0, m3, m3_len, b);
    SEND(c4b, s4);
#undef SEND
    return count;
}

/* ---- Helpers ---- */

static inline void path_in_workdir(const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", workdir, name);
}

static inline void write_capture(const char *name, int dlt, char *path, size_t cap, unsigned *count)
{
    char err[256];
    path_in_workdir(name, path, cap);
    struct edhoc_capture *c = edhoc_capture_open(path, dlt, err, sizeof err);
    if (!c)
        fail_msg("open %s: %s", path, err);
    unsigned n = write_traffic(c);
    if (count)
        *count = n;
    assert_int_equal(edhoc_capture_flush(c), 0);
    edhoc_capture_close(c);
}

/* Read a whole file into a heap analysis; returns the read status (0 or
 * the reader's error) and the link type. */
/* Not inline: its callers check the result with cmocka asserts, which the
 * compiler does not know end a failed test, and would warn that *out may
 * be left unset. */
__attribute__((noinline, unused)) static int analyse(const char *path,
                                                     const struct edhoc_netacct_link *link,
                                                     struct edhoc_capture_analysis **out,
                                                     int *dlt_out)
{
    char err[256];
    struct edhoc_capture_reader *r = edhoc_capture_reader_open(path, err, sizeof err);
    if (!r)
        return EDHOC_CAPTURE_ERR_OPEN;
    struct edhoc_capture_analysis *a = malloc(sizeof *a);
    assert_non_null(a);
    edhoc_capture_analysis_init(a, link);
    int dlt = edhoc_capture_reader_dlt(r), rc = 0;
    if (dlt_out)
        *dlt_out = dlt;
    for (unsigned n = 1;; n++) {
        const uint8_t *f;
        size_t caplen, wire;
        struct timespec ts;
        rc = edhoc_capture_reader_next(r, &f, &caplen, &wire, &ts);
        if (rc <= 0)
            break;
        edhoc_capture_analysis_frame(a, n, dlt, f, caplen, wire, &ts);
    }
    edhoc_capture_reader_close(r);
    *out = a;
    return rc;
}

static inline long file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long)st.st_size;
}

static inline int setup(void **state)
{
    (void)state;
    snprintf(workdir, sizeof workdir, "/tmp/edhoc-test-capture-XXXXXX");
    if (!mkdtemp(workdir))
        return -1;
    load_trace2();
    return 0;
}

static inline int teardown(void **state)
{
    (void)state;
    char cmd[300];
    if (getenv("EDHOC_TEST_KEEP")) {
        fprintf(stderr, "test files kept in %s\n", workdir);
        return 0;
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", workdir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif /* CAPTURE_TEST_COMMON_H */
