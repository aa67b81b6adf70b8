/*
 * Captures: the writer's frames (checked field by field and against
 * tshark), the packet parser's verdict on each kind of bad frame, and the
 * EDHOC analysis of a capture built from the RFC 9529 trace 2 messages
 * wrapped in CoAP the way RFC 9528 Appendix A.2 (and the bare framing)
 * carry them, read back from every supported link type.
 */
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

static char workdir[256];

/* ---- Building the traffic ---- */

static uint8_t m1[64], m1_single[64], m1_first[64], m2[64], m3[64], m4[64], err[8];
static size_t m1_len, m1_single_len, m1_first_len, m2_len, m3_len, m4_len, err_len;

static void load_trace2(void)
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

static void ep4(struct endpoint *e, const char *addr, uint16_t port)
{
    struct sockaddr_in *s = (struct sockaddr_in *)&e->ss;
    memset(e, 0, sizeof *e);
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    assert_int_equal(inet_pton(AF_INET, addr, &s->sin_addr), 1);
}

static void ep6(struct endpoint *e, const char *addr, uint16_t port)
{
    struct sockaddr_in6 *s = (struct sockaddr_in6 *)&e->ss;
    memset(e, 0, sizeof *e);
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    assert_int_equal(inet_pton(AF_INET6, addr, &s->sin6_addr), 1);
}

#define SA(e) ((const struct sockaddr *)&(e).ss)

/* A CoAP message: path (NULL: none) as /.well-known/edhoc, cf < 0 none,
 * oscore option value when oscore_len >= 0 (0 = empty option). */
static size_t coap(uint8_t type, uint8_t code, uint16_t mid, uint8_t token, bool edhoc_path,
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
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_OSCORE, oscore, (size_t)oscore_len), 0);
    if (edhoc_path) {
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)".well-known",
                                             11), 0);
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)"edhoc", 5),
                         0);
    }
    if (cf >= 0)
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cfv,
                                             edhoc_coap_uint_encode((uint32_t)cf, cfv)), 0);
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
static const uint8_t CIPHERTEXT[] = {0x61, 0x2f, 0x10, 0x92, 0xf1, 0x77, 0x6f, 0x1c,
                                     0x16, 0x68, 0xb3, 0x82, 0x5e};

/* The expected per-message layer numbers of the capture below. */
struct expect_msg {
    enum edhoc_capture_msg_type type;
    bool from_initiator;
    size_t edhoc, coap;
    unsigned datagrams;
};

struct expect_ex {
    int ip_version;
    const char *framing;
    int method, suite;
    size_t n_suites;
    uint8_t c_i;
    int c_r; /* -1 unknown */
    const char *outcome_completed; /* "yes"/"no" */
    int error_code;
    const char *id_cred_r, *id_cred_i; /* prefixes */
    size_t n;
    struct expect_msg m[8];
};

/* CoAP sizes, worked out:
 *   POST with token 2, Uri-Path .well-known (1 + 11), edhoc (1 + 5),
 *   Content-Format 65 (1 + 1), marker: 4 + 2 + 12 + 6 + 2 + 1 = 27 + payload.
 *   2.04 with token 2, Content-Format 64 (1 + 1), marker: 4 + 2 + 2 + 1 = 9
 *   + payload; without payload or CF: 6.
 *   OSCORE request: token 2, OSCORE option (1 + 3), marker: 4 + 2 + 4 + 1
 *   = 11 + 13 = 24; response with an empty OSCORE option (1) + marker:
 *   4 + 2 + 1 + 1 + 13 = 21.
 *   Empty ACK: 4. */
static const struct expect_ex expected[] = {
    /* IPv6, A.2: true + message_1 (39), message_2 (45), C_R + message_3
     * (19), message_4 (9), then one OSCORE request/response. */
    {6, "RFC 9528 A.2", 3, 2, 2, 0x37, 0x27, "yes", -1, "kid (inferred", "kid (inferred", 6,
     {{EDHOC_CAPTURE_MSG_1, true, 39, 27 + 40, 1},
      {EDHOC_CAPTURE_MSG_2, false, 45, 9 + 45, 1},
      {EDHOC_CAPTURE_MSG_3, true, 19, 27 + 20, 1},
      {EDHOC_CAPTURE_MSG_4, false, 9, 9 + 9, 1},
      {EDHOC_CAPTURE_MSG_OSCORE_REQUEST, true, 0, 24, 1},
      {EDHOC_CAPTURE_MSG_OSCORE_RESPONSE, false, 0, 21, 1}}},
    /* IPv4, A.2, one suite: 37 / 45 / 19, message_1 retransmitted once,
     * 2.04 without message_4. */
    {4, "RFC 9528 A.2", 3, 2, 1, 0x37, 0x27, "yes", -1, "kid (inferred", "kid (inferred", 4,
     {{EDHOC_CAPTURE_MSG_1, true, 37, 2 * (27 + 38), 2},
      {EDHOC_CAPTURE_MSG_2, false, 45, 9 + 45, 1},
      {EDHOC_CAPTURE_MSG_3, true, 19, 27 + 20, 1},
      {EDHOC_CAPTURE_MSG_3_ACK, false, 0, 6, 1}}},
    /* IPv4: the rejected first message_1 (SUITES_I 6) and the error
     * (ERR_CODE 2, SUITES_R 2) in a 4.00. */
    {4, "RFC 9528 A.2", 3, 6, 1, 0x0e, -1, "no", 2, "", "", 2,
     {{EDHOC_CAPTURE_MSG_1, true, 37, 27 + 38, 1},
      {EDHOC_CAPTURE_MSG_ERROR, false, 2, 9 + 2, 1}}},
    /* IPv4, bare framing (no true, no C_R, no Content-Format, other
     * client port), no reply to message_3; a separate empty ACK. */
    {4, "bare", 3, 2, 2, 0x37, -1, "yes", -1, "kid (inferred", "kid (inferred", 4,
     {{EDHOC_CAPTURE_MSG_1, true, 39, 4 + 2 + 12 + 6 + 1 + 39, 1},
      {EDHOC_CAPTURE_MSG_EMPTY, false, 0, 4, 1},
      {EDHOC_CAPTURE_MSG_2, false, 45, 4 + 2 + 1 + 45, 1},
      {EDHOC_CAPTURE_MSG_3, true, 19, 4 + 2 + 12 + 6 + 1 + 19, 1}}},
};

#define N_EXPECTED (sizeof expected / sizeof expected[0])

/* Number of UDP datagrams written: 6 + 5 + 2 + 4 + 1 DNS-like + 1 bad
 * CoAP + 1 block-wise exchange (below: 5). */
struct traffic {
    unsigned datagrams;
};

/* Write the whole traffic through cap; returns the datagram count. */
static unsigned write_traffic(struct edhoc_capture *cap)
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
#define SEND(from, to)                                                                            \
    do {                                                                                          \
        ts.tv_nsec += 1000000;                                                                    \
        assert_int_equal(edhoc_capture_datagram(cap, SA(from), SA(to), b, n, &ts), 0);            \
        count++;                                                                                  \
    } while (0)

    /* Exchange 1 (IPv6). */
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x1001, 1, true, 65, NULL, -1, CBOR_TRUE, 1, m1,
             m1_len, b);
    SEND(c6, s6);
    n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x1001, 1, false, 64, NULL, -1, NULL, 0, m2,
             m2_len, b);
    SEND(s6, c6);
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x1002, 2, true, 65, NULL, -1, C_R, 1, m3, m3_len,
             b);
    SEND(c6, s6);
    n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x1002, 2, false, 64, NULL, -1, NULL, 0, m4,
             m4_len, b);
    SEND(s6, c6);
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x1003, 3, false, -1, OSCORE_REQ_OPT, 3, NULL, 0,
             CIPHERTEXT, sizeof CIPHERTEXT, b);
    SEND(c6, s6);
    n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x1003, 3, false, -1, NULL, 0, NULL, 0,
             CIPHERTEXT, sizeof CIPHERTEXT, b);
    SEND(s6, c6);

    /* Exchange 2 (IPv4, one suite), message_1 sent twice. */
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x2001, 1, true, 65, NULL, -1, CBOR_TRUE, 1,
             m1_single, m1_single_len, b);
    SEND(c4, s4);
    SEND(c4, s4);
    n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x2001, 1, false, 64, NULL, -1, NULL, 0, m2,
             m2_len, b);
    SEND(s4, c4);
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x2002, 2, true, 65, NULL, -1, C_R, 1, m3, m3_len,
             b);
    SEND(c4, s4);
    n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x2002, 2, false, -1, NULL, -1, NULL, 0, NULL, 0,
             b);
    SEND(s4, c4);

    /* A DNS-looking datagram: not CoAP, ignored. */
    static const uint8_t dns[] = {0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0};
    memcpy(b, dns, sizeof dns);
    n = sizeof dns;
    SEND(dns_c, dns_s);

    /* Exchange 3: the rejected message_1 and the error. */
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x3001, 4, true, 65, NULL, -1, CBOR_TRUE, 1,
             m1_first, m1_first_len, b);
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
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x4001, 5, true, -1, NULL, -1, NULL, 0, m1, m1_len,
             b);
    SEND(c4b, s4);
    n = coap(COAP_TYPE_ACK, COAP_CODE_EMPTY, 0x4001, 0, false, -1, NULL, -1, NULL, 0, NULL, 0, b);
    n = 4; /* an empty message has no token */
    b[0] = 0x60;
    SEND(s4, c4b);
    n = coap(COAP_TYPE_CON, COAP_CODE_CHANGED, 0x9001, 5, false, -1, NULL, -1, NULL, 0, m2,
             m2_len, b);
    SEND(s4, c4b);
    n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x4002, 6, true, -1, NULL, -1, NULL, 0, m3, m3_len,
             b);
    SEND(c4b, s4);
#undef SEND
    return count;
}

/* ---- Helpers ---- */

static void path_in_workdir(const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", workdir, name);
}

static void write_capture(const char *name, int dlt, char *path, size_t cap, unsigned *count)
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
static int analyse(const char *path, const struct edhoc_netacct_link *link,
                   struct edhoc_capture_analysis **out, int *dlt_out)
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

static size_t link_header_len(int dlt)
{
    switch (dlt) {
    case EDHOC_CAPTURE_DLT_EN10MB: return 14;
    case EDHOC_CAPTURE_DLT_LINUX_SLL: return 16;
    case EDHOC_CAPTURE_DLT_LINUX_SLL2: return 20;
    case EDHOC_CAPTURE_DLT_NULL:
    case EDHOC_CAPTURE_DLT_LOOP: return 4;
    default: return 0;
    }
}

static void check_analysis(const struct edhoc_capture_analysis *a, int dlt)
{
    assert_int_equal(a->n_ex, N_EXPECTED);
    for (size_t i = 0; i < N_EXPECTED; i++) {
        const struct expect_ex *e = &expected[i];
        const struct edhoc_capture_exchange *ex = &a->ex[i];
        print_message("exchange %zu (link type %d)\n", i + 1, dlt);
        assert_int_equal(ex->ip_version, e->ip_version);
        assert_string_equal(ex->framing, e->framing);
        assert_int_equal(ex->method, e->method);
        assert_int_equal(ex->n_suites, e->n_suites);
        assert_int_equal(ex->suites[ex->n_suites - 1], e->suite);
        assert_int_equal(ex->c_i_len, 1);
        assert_int_equal(ex->c_i[0], e->c_i);
        if (e->c_r < 0) {
            assert_false(ex->c_r_known);
        } else {
            assert_true(ex->c_r_known);
            assert_int_equal(ex->c_r_len, 1);
            assert_int_equal(ex->c_r[0], e->c_r);
        }
        assert_int_equal(ex->completed, strcmp(e->outcome_completed, "yes") == 0);
        assert_int_equal(ex->error_code, e->error_code);
        assert_int_equal(strncmp(ex->id_cred_r, e->id_cred_r, strlen(e->id_cred_r)), 0);
        assert_int_equal(strncmp(ex->id_cred_i, e->id_cred_i, strlen(e->id_cred_i)), 0);
        assert_int_equal(ex->n_msgs, e->n);
        size_t hs_edhoc = 0;
        for (size_t k = 0; k < e->n; k++) {
            const struct edhoc_capture_msg *m = &ex->msgs[k];
            const struct expect_msg *x = &e->m[k];
            assert_int_equal(m->type, x->type);
            assert_int_equal(m->from_initiator, x->from_initiator);
            assert_int_equal(m->edhoc, x->edhoc);
            assert_int_equal(m->coap, x->coap);
            assert_int_equal(m->datagrams, x->datagrams);
            size_t iph = e->ip_version == 6 ? 40 : 20;
            assert_int_equal(m->udp, m->coap + 8 * x->datagrams);
            assert_int_equal(m->ip, m->udp + iph * x->datagrams);
            assert_int_equal(m->frame, m->ip + link_header_len(dlt) * x->datagrams);
            if (x->type <= EDHOC_CAPTURE_MSG_ERROR)
                hs_edhoc += x->edhoc;
        }
        assert_int_equal(ex->totals.handshake.edhoc, hs_edhoc);
    }
    /* The ID_CRED inference for the A.2 exchange: CIPHERTEXT_2 = 11 bytes =
     * C_R (1) + ID_CRED_R + MAC_2 (bstr of 8: 9) -> 1 byte: a compact kid;
     * CIPHERTEXT_3 = 18 = tag 8 + ID_CRED_I + MAC_3 (9) -> 1 byte. */
    assert_non_null(strstr(a->ex[0].id_cred_r, "1 byte,"));
    assert_non_null(strstr(a->ex[0].id_cred_i, "1 byte,"));
    /* The bare exchange states the C_R assumption. */
    assert_non_null(strstr(a->ex[3].id_cred_r, "assuming a 1-byte C_R"));
    assert_int_equal(a->ex[1].msgs[0].retransmissions, 1);
    /* The DNS datagram is ignored, the junk on the CoAP port reported. */
    assert_int_equal(a->ignored, 1);
    assert_int_equal(a->skipped, 1);
    assert_int_equal(a->n_issues, 1);
    assert_non_null(strstr(a->issues[0].text, "not a valid CoAP message"));
    /* Handshakes: EDHOC 39+45+19+9 + 37+45+19 + 37+2 + 39+45+19 = 355. */
    assert_int_equal(a->totals.handshake.edhoc, 355);
    assert_int_equal(a->totals.oscore.messages, 2);
    assert_int_equal(a->totals.oscore.coap, 24 + 21);
}

/* ---- Tests ---- */

static void test_frame_build_fields(void **state)
{
    (void)state;
    struct endpoint s, d;
    ep4(&s, "192.0.2.1", 40001);
    ep4(&d, "192.0.2.2", 5683);
    static const uint8_t payload[] = {0x40, 0x01, 0x12, 0x34, 0xff, 'h', 'i'};
    uint8_t f[128];
    long n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s), SA(d), payload,
                                       sizeof payload, f, sizeof f);
    /* 20 + 8 + 7 = 35. */
    assert_int_equal(n, 35);
    assert_int_equal(f[0], 0x45);
    assert_int_equal(f[2] << 8 | f[3], 35);
    assert_int_equal(f[9], 17);
    assert_int_equal(f[20] << 8 | f[21], 40001);
    assert_int_equal(f[22] << 8 | f[23], 5683);
    assert_int_equal(f[24] << 8 | f[25], 15);
    /* Both checksums verify: the one's-complement sum over the header
     * (with the checksum) is 0xffff. */
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2)
        sum += (uint32_t)(f[i] << 8 | f[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    assert_int_equal(sum, 0xffff);
    sum = 0;
    for (int i = 12; i < 20; i += 2) /* pseudo-header addresses */
        sum += (uint32_t)(f[i] << 8 | f[i + 1]);
    sum += 17 + 15;
    for (int i = 20; i < 35; i += 2)
        sum += (uint32_t)(f[i] << 8 | (i + 1 < 35 ? f[i + 1] : 0));
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    assert_int_equal(sum, 0xffff);

    struct edhoc_capture_packet p;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, f, (size_t)n, (size_t)n, &p),
                     0);
    assert_int_equal(p.ip_version, 4);
    assert_int_equal(p.ip_len, 35);
    assert_int_equal(p.udp_len, 15);
    assert_int_equal(p.payload_len, sizeof payload);
    assert_memory_equal(p.payload, payload, sizeof payload);
    assert_int_equal(p.src_port, 40001);

    /* An IPv4-mapped peer of a dual-stack socket is written as IPv4:
     * the same frame. */
    struct endpoint m6;
    ep6(&m6, "::ffff:192.0.2.2", 5683);
    uint8_t f2[128];
    assert_int_equal(edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s), SA(m6), payload,
                                               sizeof payload, f2, sizeof f2), 35);
    assert_memory_equal(f, f2, 35);

    /* Mixed families, oversize, unknown link type, a short buffer. */
    struct endpoint d6;
    ep6(&d6, "::1", 5683);
    assert_int_equal(edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s), SA(d6), payload, 7, f,
                                               sizeof f), EDHOC_CAPTURE_ERR_ARG);
    assert_int_equal(edhoc_capture_frame_build(999, SA(s), SA(d), payload, 7, f, sizeof f),
                     EDHOC_CAPTURE_ERR_LINK);
    assert_int_equal(edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s), SA(d), payload, 7, f,
                                               34), EDHOC_CAPTURE_ERR_TOO_LARGE);
    assert_int_equal(edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s), SA(d), payload,
                                               EDHOC_CAPTURE_MAX_PAYLOAD + 1, f, sizeof f),
                     EDHOC_CAPTURE_ERR_TOO_LARGE);
    char err[128];
    assert_null(edhoc_capture_open("/nonexistent-dir/x.pcap", EDHOC_CAPTURE_DLT_RAW, err,
                                   sizeof err));
    assert_true(strlen(err) > 0);
    assert_null(edhoc_capture_open("x.pcap", 999, err, sizeof err));
    assert_string_equal(err, "unsupported link type");
}

static void test_packet_parse_errors(void **state)
{
    (void)state;
    struct endpoint s, d, s6, d6;
    ep4(&s, "192.0.2.1", 1000);
    ep4(&d, "192.0.2.2", 5683);
    ep6(&s6, "2001:db8::1", 1000);
    ep6(&d6, "2001:db8::2", 5683);
    static const uint8_t payload[] = {0x50, 0x01, 0x00, 0x01};
    uint8_t f[256], g[256];
    struct edhoc_capture_packet p;
    long n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_EN10MB, SA(s), SA(d), payload, 4, f,
                                       sizeof f);
    assert_int_equal(n, 14 + 20 + 8 + 4);
    size_t len = (size_t)n;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, f, len, len, &p), 0);
    /* Ethernet padding to 60 bytes: the IP length decides. */
    memset(f + len, 0, 60 - len);
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, f, 60, 60, &p), 0);
    assert_int_equal(p.payload_len, 4);
    assert_int_equal(p.frame_len, 60);
    /* A VLAN tag in front of the ethertype. */
    memcpy(g, f, 12);
    g[12] = 0x81; g[13] = 0x00; g[14] = 0x00; g[15] = 0x05;
    memcpy(g + 16, f + 12, len - 12);
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len + 4, len + 4, &p),
                     0);
    assert_int_equal(p.payload_len, 4);
    /* ARP: not IP. */
    memcpy(g, f, len);
    g[12] = 0x08; g[13] = 0x06;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_NOT_IP);
    /* TCP: not UDP. */
    memcpy(g, f, len);
    g[14 + 9] = 6;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_NOT_UDP);
    /* More-fragments flag, and a non-zero offset. */
    memcpy(g, f, len);
    g[14 + 6] = 0x20;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_FRAGMENT);
    g[14 + 6] = 0x00; g[14 + 7] = 0x10;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_FRAGMENT);
    /* IHL 4, a Total Length beyond the frame, a UDP length beyond IP. */
    memcpy(g, f, len);
    g[14] = 0x44;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_MALFORMED);
    memcpy(g, f, len);
    g[14 + 3] = 200;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_MALFORMED);
    memcpy(g, f, len);
    g[14 + 20 + 5] = 13;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_MALFORMED);
    g[14 + 20 + 5] = 7;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, g, len, len, &p),
                     EDHOC_CAPTURE_ERR_MALFORMED);
    /* Cut by the snap length: truncated, at every length. */
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, f, cut, len, &p),
                         EDHOC_CAPTURE_ERR_TRUNCATED);
    /* The same bytes claiming to be whole: malformed, never a crash. */
    for (size_t cut = 14; cut < len; cut++)
        assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_EN10MB, f, cut, cut, &p),
                         EDHOC_CAPTURE_ERR_MALFORMED);
    assert_int_equal(edhoc_capture_packet_parse(999, f, len, len, &p), EDHOC_CAPTURE_ERR_LINK);
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, f, len, len - 1, &p),
                     EDHOC_CAPTURE_ERR_ARG);

    /* Raw IPv4 / IPv6 link types: the version must match. */
    n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s), SA(d), payload, 4, f, sizeof f);
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_IPV4, f, (size_t)n, (size_t)n,
                                                &p), 0);
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW_ALT, f, (size_t)n,
                                                (size_t)n, &p), 0);
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_IPV6, f, (size_t)n, (size_t)n,
                                                &p), EDHOC_CAPTURE_ERR_MALFORMED);
    n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s6), SA(d6), payload, 4, f, sizeof f);
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_IPV6, f, (size_t)n, (size_t)n,
                                                &p), 0);
    /* Raw IP with a version that is neither. */
    f[0] = 0x50;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, f, (size_t)n, (size_t)n,
                                                &p), EDHOC_CAPTURE_ERR_NOT_IP);

    /* IPv6 with a Hop-by-Hop header (8 bytes) before UDP, and with a
     * Fragment header. */
    n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(s6), SA(d6), payload, 4, f, sizeof f);
    assert_int_equal(n, 40 + 8 + 4);
    memcpy(g, f, 40);
    g[6] = 0;          /* Hop-by-Hop */
    g[5] = 8 + 8 + 4;  /* payload length */
    g[40] = 17;        /* next: UDP */
    g[41] = 0;         /* 8 bytes */
    memset(g + 42, 0, 6);
    g[42] = 1; /* PadN */
    g[43] = 4;
    memcpy(g + 48, f + 40, 12);
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, g, 60, 60, &p), 0);
    assert_int_equal(p.ip_version, 6);
    assert_int_equal(p.ip_len, 60);
    assert_int_equal(p.payload_len, 4);
    g[40] = 44;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, g, 60, 60, &p),
                     EDHOC_CAPTURE_ERR_FRAGMENT);
    g[40] = 6;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, g, 60, 60, &p),
                     EDHOC_CAPTURE_ERR_NOT_UDP);
    /* A payload length of 0 (jumbogram) and a version mismatch. */
    memcpy(g, f, 52);
    g[4] = g[5] = 0;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_RAW, g, 52, 52, &p),
                     EDHOC_CAPTURE_ERR_MALFORMED);
    n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_LINUX_SLL, SA(s6), SA(d6), payload, 4, f,
                                  sizeof f);
    f[16] = 0x45; /* SLL says IPv6, the packet says 4 */
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_LINUX_SLL, f, (size_t)n,
                                                (size_t)n, &p), EDHOC_CAPTURE_ERR_MALFORMED);
    /* Loopback in the other byte order (a capture from a big-endian host)
     * and with Linux's AF_INET6 (10). */
    n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_NULL, SA(s6), SA(d6), payload, 4, f, sizeof f);
    uint8_t t = f[0];
    f[0] = f[3]; f[3] = t; t = f[1]; f[1] = f[2]; f[2] = t;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_NULL, f, (size_t)n, (size_t)n,
                                                &p), 0);
    f[0] = 0; f[1] = 0; f[2] = 0; f[3] = 10;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_LOOP, f, (size_t)n, (size_t)n,
                                                &p), 0);
    f[3] = 99;
    assert_int_equal(edhoc_capture_packet_parse(EDHOC_CAPTURE_DLT_LOOP, f, (size_t)n, (size_t)n,
                                                &p), EDHOC_CAPTURE_ERR_NOT_IP);
}

static void test_endpoint_parse(void **state)
{
    (void)state;
    struct sockaddr_storage ss;
    assert_int_equal(edhoc_capture_endpoint_parse("192.0.2.1:5683", &ss), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
    assert_int_equal(ntohs(s4->sin_port), 5683);
    assert_int_equal(ntohl(s4->sin_addr.s_addr), 0xc0000201);
    assert_int_equal(edhoc_capture_endpoint_parse("[2001:db8::1]:0", &ss), 0);
    assert_int_equal(ss.ss_family, AF_INET6);
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
    assert_int_equal(ntohs(s6->sin6_port), 0);
    assert_int_equal(s6->sin6_addr.s6_addr[15], 1);
    static const char *bad[] = {"", "192.0.2.1", "192.0.2.1:", "192.0.2.1:65536",
                                "192.0.2.1:-1", "192.0.2.1:+1", "::1:5683", "[::1]5683",
                                "[192.0.2.1]:5683", "[::1:5683", "host:5683", "[::1]:x",
                                "1.2.3.4:5683x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        print_message("'%s'\n", bad[i]);
        assert_int_equal(edhoc_capture_endpoint_parse(bad[i], &ss), EDHOC_CAPTURE_ERR_ARG);
    }
    assert_int_equal(edhoc_capture_endpoint_parse(NULL, &ss), EDHOC_CAPTURE_ERR_ARG);
}

static const int all_dlts[] = {EDHOC_CAPTURE_DLT_RAW, EDHOC_CAPTURE_DLT_EN10MB,
                               EDHOC_CAPTURE_DLT_LINUX_SLL, EDHOC_CAPTURE_DLT_LINUX_SLL2,
                               EDHOC_CAPTURE_DLT_NULL, EDHOC_CAPTURE_DLT_LOOP};

static void test_trace2_all_link_types(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof all_dlts / sizeof all_dlts[0]; i++) {
        char path[512], name[64];
        snprintf(name, sizeof name, "trace2-%d.pcap", all_dlts[i]);
        unsigned count;
        write_capture(name, all_dlts[i], path, sizeof path, &count);
        struct edhoc_capture_analysis *a;
        int dlt;
        assert_int_equal(analyse(path, NULL, &a, &dlt), 0);
        assert_int_equal(dlt, all_dlts[i]);
        assert_int_equal(a->packets, count);
        assert_int_equal(a->udp, count);
        check_analysis(a, dlt);
        free(a);
    }
}

/* pcapng (what dumpcap and tshark write by default) through editcap. */
static void test_pcapng(void **state)
{
    (void)state;
    if (system("editcap -h >/dev/null 2>&1") != 0) {
        print_message("editcap not installed: pcapng check skipped\n");
        skip();
    }
    char path[512], ng[512], cmd[1200];
    write_capture("ng-src.pcap", EDHOC_CAPTURE_DLT_LINUX_SLL2, path, sizeof path, NULL);
    path_in_workdir("trace2.pcapng", ng, sizeof ng);
    snprintf(cmd, sizeof cmd, "editcap -F pcapng '%s' '%s'", path, ng);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(ng, "rb");
    assert_non_null(f);
    uint8_t magic[4];
    assert_int_equal(fread(magic, 1, 4, f), 4);
    fclose(f);
    /* Section Header Block type 0x0A0D0D0A. */
    assert_int_equal(magic[0], 0x0a);
    assert_int_equal(magic[1], 0x0d);
    struct edhoc_capture_analysis *a;
    int dlt;
    assert_int_equal(analyse(ng, NULL, &a, &dlt), 0);
    assert_int_equal(dlt, EDHOC_CAPTURE_DLT_LINUX_SLL2);
    check_analysis(a, dlt);
    free(a);
}

static void test_trace2_802154(void **state)
{
    (void)state;
    char path[512];
    write_capture("trace2-154.pcap", EDHOC_CAPTURE_DLT_RAW, path, sizeof path, NULL);
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    struct edhoc_capture_analysis *a;
    assert_int_equal(analyse(path, &link, &a, NULL), 0);
    /* Single-suite exchange (2): message_1 65-byte CoAP sent twice: 2 frames
     * of 25 + 9 + 65 = 99 (ports 40001/5683 do not compress); message_2
     * 54 -> 88; message_3 47 -> 81; the empty 2.04 (6) -> 40.
     * Handshake: 5 frames, 198 + 88 + 81 + 40 = 407 bytes. */
    const struct edhoc_capture_exchange *ex = &a->ex[1];
    assert_int_equal(ex->msgs[0].link_frames, 2);
    assert_int_equal(ex->msgs[0].link_bytes, 198);
    assert_int_equal(ex->msgs[1].link_bytes, 88);
    assert_int_equal(ex->msgs[2].link_bytes, 81);
    assert_int_equal(ex->msgs[3].link_bytes, 40);
    assert_int_equal(ex->totals.handshake.frames, 5);
    assert_int_equal(ex->totals.handshake.link, 407);
    /* IPv6 exchange (1): 67 -> 101, 54 -> 88, 47 -> 81, 18 -> 52. */
    ex = &a->ex[0];
    assert_int_equal(ex->msgs[0].link_bytes, 101);
    assert_int_equal(ex->msgs[1].link_bytes, 88);
    assert_int_equal(ex->msgs[2].link_bytes, 81);
    assert_int_equal(ex->msgs[3].link_bytes, 52);
    free(a);

    /* Addresses from the capture: 2001:db8::1 / ::2 are global with full
     * IIDs, 8 bytes each: header 9 + 16 = 25. message_1 67 -> 25 + 25 + 67
     * = 117; message_2 54 -> 104. The IPv4 exchanges keep the link-local
     * model (99 per message_1). */
    link.src_addr = link.dst_addr = EDHOC_NETACCT_ADDR_AUTO;
    assert_int_equal(analyse(path, &link, &a, NULL), 0);
    assert_int_equal(a->ex[0].msgs[0].link_bytes, 117);
    assert_int_equal(a->ex[0].msgs[1].link_bytes, 104);
    assert_int_equal(a->ex[1].msgs[0].link_bytes, 198);
    free(a);
}

/* Block-wise: message_2 (45 bytes) returned in 16-byte blocks (Block2
 * SZX 0): 16 + 16 + 13, the client asking for blocks 1 and 2. */
static void test_blockwise(void **state)
{
    (void)state;
    char path[512], err[256];
    path_in_workdir("block.pcap", path, sizeof path);
    struct edhoc_capture *c = edhoc_capture_open(path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    assert_non_null(c);
    struct endpoint cl, sv;
    ep4(&cl, "192.0.2.7", 40100);
    ep4(&sv, "192.0.2.8", 5683);
    uint8_t b[512];
    size_t n = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x5001, 1, true, 65, NULL, -1, CBOR_TRUE, 1,
                    m1, m1_len, b);
    assert_int_equal(edhoc_capture_datagram(c, SA(cl), SA(sv), b, n, NULL), 0);
    size_t coap_total = n, resp_total = 0;
    for (uint32_t blk = 0; blk < 3; blk++) {
        struct coap_msg m;
        memset(&m, 0, sizeof m);
        uint8_t v[4];
        if (blk > 0) {
            /* The client's request for the next block (new MID, token). */
            m.type = COAP_TYPE_CON;
            m.code = COAP_CODE_POST;
            m.mid = (uint16_t)(0x5001 + blk);
            m.token_len = 1;
            m.token[0] = (uint8_t)(0x10 + blk);
            assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_BLOCK2, v,
                                                 edhoc_coap_uint_encode(blk << 4, v)), 0);
            long k = edhoc_coap_msg_encode(&m, b, sizeof b);
            assert_int_equal(edhoc_capture_datagram(c, SA(cl), SA(sv), b, (size_t)k, NULL), 0);
            coap_total += (size_t)k;
        }
        memset(&m, 0, sizeof m);
        m.type = COAP_TYPE_ACK;
        m.code = COAP_CODE_CHANGED;
        m.mid = (uint16_t)(0x5001 + blk);
        m.token_len = blk ? 1 : 2;
        m.token[0] = blk ? (uint8_t)(0x10 + blk) : 0xa0;
        m.token[1] = 1;
        uint8_t cf[1] = {64};
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cf, 1), 0);
        uint32_t more = blk < 2;
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_BLOCK2, v,
                                             edhoc_coap_uint_encode(blk << 4 | more << 3, v)), 0);
        m.payload = m2 + 16 * blk;
        m.payload_len = blk < 2 ? 16 : m2_len - 32;
        long k = edhoc_coap_msg_encode(&m, b, sizeof b);
        assert_int_equal(edhoc_capture_datagram(c, SA(sv), SA(cl), b, (size_t)k, NULL), 0);
        resp_total += (size_t)k;
        if (blk == 0) {
            /* The first block again (a duplicate ACK): counted once more. */
            assert_int_equal(edhoc_capture_datagram(c, SA(sv), SA(cl), b, (size_t)k, NULL), 0);
            resp_total += (size_t)k;
        }
    }
    edhoc_capture_close(c);
    struct edhoc_capture_analysis *a;
    assert_int_equal(analyse(path, NULL, &a, NULL), 0);
    assert_int_equal(a->n_ex, 1);
    const struct edhoc_capture_exchange *ex = &a->ex[0];
    assert_int_equal(ex->n_msgs, 2);
    assert_int_equal(ex->msgs[1].type, EDHOC_CAPTURE_MSG_2);
    assert_int_equal(ex->msgs[1].edhoc, 45);
    /* 3 responses + 1 duplicate + 2 follow-up requests. */
    assert_int_equal(ex->msgs[1].datagrams, 6);
    assert_int_equal(ex->msgs[1].retransmissions, 0);
    assert_int_equal(ex->msgs[0].coap + ex->msgs[1].coap, coap_total + resp_total);
    assert_int_equal(a->n_issues, 0);
    free(a);
}

/* message_1 sent block-wise (Block1, 16-byte blocks, a new token per
 * block, 2.31 Continue between), then message_3 inside an OSCORE request
 * (RFC 9668 EDHOC option) and its OSCORE response. */
static void test_block1_and_combined(void **state)
{
    (void)state;
    char path[512], err[256];
    path_in_workdir("combined.pcap", path, sizeof path);
    struct edhoc_capture *c = edhoc_capture_open(path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    assert_non_null(c);
    struct endpoint cl, sv;
    ep6(&cl, "fe80::1", 40200);
    ep6(&sv, "fe80::2", 5683);
    uint8_t body[64], b[512], v[4];
    body[0] = 0xf5;
    memcpy(body + 1, m1, m1_len); /* 40 bytes: blocks of 16, 16, 8 */
    size_t req_coap = 0;
    for (uint32_t blk = 0; blk < 3; blk++) {
        struct coap_msg m;
        memset(&m, 0, sizeof m);
        m.type = COAP_TYPE_CON;
        m.code = COAP_CODE_POST;
        m.mid = (uint16_t)(0x6000 + blk);
        m.token_len = 1;
        m.token[0] = (uint8_t)(0x20 + blk);
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)"edhoc", 5),
                         0);
        uint8_t cf[1] = {65};
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cf, 1), 0);
        uint32_t more = blk < 2;
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_BLOCK1, v,
                                             edhoc_coap_uint_encode(blk << 4 | more << 3, v)), 0);
        m.payload = body + 16 * blk;
        m.payload_len = blk < 2 ? 16 : 40 - 32;
        long k = edhoc_coap_msg_encode(&m, b, sizeof b);
        assert_int_equal(edhoc_capture_datagram(c, SA(cl), SA(sv), b, (size_t)k, NULL), 0);
        req_coap += (size_t)k;
        if (blk == 0) {
            /* Block 0 retransmitted before its Continue. */
            assert_int_equal(edhoc_capture_datagram(c, SA(cl), SA(sv), b, (size_t)k, NULL), 0);
            req_coap += (size_t)k;
        }
        memset(&m, 0, sizeof m);
        m.type = COAP_TYPE_ACK;
        m.mid = (uint16_t)(0x6000 + blk);
        m.token_len = 1;
        m.token[0] = (uint8_t)(0x20 + blk);
        if (more) {
            m.code = COAP_CODE(2, 31);
            assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_BLOCK1, v,
                                                 edhoc_coap_uint_encode(blk << 4 | 1 << 3, v)), 0);
            k = edhoc_coap_msg_encode(&m, b, sizeof b);
            req_coap += (size_t)k;
        } else {
            m.code = COAP_CODE_CHANGED;
            m.payload = m2;
            m.payload_len = m2_len;
            k = edhoc_coap_msg_encode(&m, b, sizeof b);
        }
        assert_int_equal(edhoc_capture_datagram(c, SA(sv), SA(cl), b, (size_t)k, NULL), 0);
    }
    /* The combined request: OSCORE option (kid C_R), EDHOC option,
     * payload message_3 || OSCORE ciphertext. */
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_POST;
    m.mid = 0x6100;
    m.token_len = 1;
    m.token[0] = 0x30;
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_OSCORE, OSCORE_REQ_OPT, 3), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, 21, NULL, 0), 0);
    memcpy(body, m3, m3_len);
    memcpy(body + m3_len, CIPHERTEXT, sizeof CIPHERTEXT);
    m.payload = body;
    m.payload_len = m3_len + sizeof CIPHERTEXT;
    long k = edhoc_coap_msg_encode(&m, b, sizeof b);
    /* 4 + 1 + OSCORE (1 + 3) + EDHOC (delta 12: 1) + marker 1 + 32 = 43. */
    assert_int_equal(k, 43);
    assert_int_equal(edhoc_capture_datagram(c, SA(cl), SA(sv), b, (size_t)k, NULL), 0);
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_ACK;
    m.code = COAP_CODE_CHANGED;
    m.mid = 0x6100;
    m.token_len = 1;
    m.token[0] = 0x30;
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_OSCORE, NULL, 0), 0);
    m.payload = CIPHERTEXT;
    m.payload_len = sizeof CIPHERTEXT;
    k = edhoc_coap_msg_encode(&m, b, sizeof b);
    assert_int_equal(edhoc_capture_datagram(c, SA(sv), SA(cl), b, (size_t)k, NULL), 0);
    edhoc_capture_close(c);

    struct edhoc_capture_analysis *a;
    assert_int_equal(analyse(path, NULL, &a, NULL), 0);
    assert_int_equal(a->n_issues, 0);
    assert_int_equal(a->n_ex, 1);
    const struct edhoc_capture_exchange *ex = &a->ex[0];
    assert_string_equal(ex->framing, "RFC 9668 combined");
    assert_true(ex->completed);
    assert_true(ex->c_r_known);
    assert_int_equal(ex->c_r[0], 0x27);
    assert_int_equal(ex->n_msgs, 4);
    assert_int_equal(ex->msgs[0].type, EDHOC_CAPTURE_MSG_1);
    assert_int_equal(ex->msgs[0].edhoc, 39);
    assert_int_equal(ex->msgs[0].datagrams, 6); /* 3 blocks + 1 repeated + 2 Continue */
    assert_int_equal(ex->msgs[0].coap, req_coap);
    assert_int_equal(ex->msgs[1].type, EDHOC_CAPTURE_MSG_2);
    assert_int_equal(ex->msgs[1].edhoc, 45);
    assert_int_equal(ex->msgs[2].type, EDHOC_CAPTURE_MSG_3_OSCORE);
    assert_int_equal(ex->msgs[2].edhoc, 19);
    assert_int_equal(ex->msgs[2].coap, 43);
    assert_int_equal(ex->msgs[3].type, EDHOC_CAPTURE_MSG_OSCORE_RESPONSE);
    /* ID_CRED_I from the message_3 inside the combined request. */
    assert_non_null(strstr(ex->id_cred_i, "kid (inferred: 1 byte,"));
    assert_int_equal(ex->totals.handshake.edhoc, 39 + 45 + 19);
    free(a);
}

/* More exchanges than the table holds: the oldest leave the listing, the
 * totals keep everything. Fed frame by frame, without a file. */
static void test_many_exchanges(void **state)
{
    (void)state;
    struct edhoc_capture_analysis *a = malloc(sizeof *a);
    assert_non_null(a);
    edhoc_capture_analysis_init(a, NULL);
    const unsigned n_ex = EDHOC_CAPTURE_MAX_EXCHANGES + 6;
    unsigned pkt = 0;
    for (unsigned i = 0; i < n_ex; i++) {
        struct endpoint cl, sv;
        ep4(&cl, "192.0.2.1", (uint16_t)(30000 + i));
        ep4(&sv, "192.0.2.2", 5683);
        uint8_t b[512], f[600];
        size_t n = coap(COAP_TYPE_CON, COAP_CODE_POST, (uint16_t)i, 1, true, 65, NULL, -1,
                        CBOR_TRUE, 1, m1_single, m1_single_len, b);
        long k = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(cl), SA(sv), b, n, f,
                                           sizeof f);
        edhoc_capture_analysis_frame(a, ++pkt, EDHOC_CAPTURE_DLT_RAW, f, (size_t)k, (size_t)k,
                                     NULL);
        /* Every third one is refused with an error, the others answered. */
        if (i % 3 == 0)
            n = coap(COAP_TYPE_ACK, COAP_CODE_BAD_REQUEST, (uint16_t)i, 1, false, 64, NULL, -1,
                     NULL, 0, err, err_len, b);
        else
            n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, (uint16_t)i, 1, false, 64, NULL, -1, NULL,
                     0, m2, m2_len, b);
        k = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(sv), SA(cl), b, n, f, sizeof f);
        edhoc_capture_analysis_frame(a, ++pkt, EDHOC_CAPTURE_DLT_RAW, f, (size_t)k, (size_t)k,
                                     NULL);
    }
    assert_int_equal(a->n_ex, EDHOC_CAPTURE_MAX_EXCHANGES);
    assert_int_equal(a->ex_evicted, 6);
    /* Evicted: i = 0..5, of which 0 and 3 failed; none completed. */
    assert_int_equal(a->ex_evicted_failed, 2);
    assert_int_equal(a->ex_evicted_completed, 0);
    assert_int_equal(a->ex[0].client_port, 30006);
    assert_int_equal(a->totals.handshake.messages, 2 * n_ex);
    /* 24 errors (i = 0, 3, ..., 69) of 2 bytes, 46 message_2. */
    assert_int_equal(a->totals.handshake.edhoc, n_ex * 37 + 24 * 2 + (n_ex - 24) * 45);
    assert_int_equal(a->n_issues, 1);
    assert_non_null(strstr(a->issues[0].text, "oldest leave the listing"));
    free(a);
}

/* Run tshark on a capture; each UDP packet's frame/IP/UDP lengths must
 * equal the parser's, and the checksums verify. */
static void tshark_compare(const char *path, int dlt)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "tshark -n -r '%s' -o udp.check_checksum:TRUE -o ip.check_checksum:TRUE -T fields "
             "-E separator=, -e frame.len -e ip.len -e ipv6.plen -e udp.length "
             "-e udp.checksum.status -e coap.code 2>/dev/null",
             path);
    FILE *t = popen(cmd, "r");
    assert_non_null(t);
    char err[256];
    struct edhoc_capture_reader *r = edhoc_capture_reader_open(path, err, sizeof err);
    assert_non_null(r);
    char line[256];
    unsigned rows = 0, coap_rows = 0;
    while (fgets(line, sizeof line, t)) {
        const uint8_t *f;
        size_t caplen, wire;
        assert_int_equal(edhoc_capture_reader_next(r, &f, &caplen, &wire, NULL), 1);
        struct edhoc_capture_packet p;
        assert_int_equal(edhoc_capture_packet_parse(dlt, f, caplen, wire, &p), 0);
        char fl[6][32];
        memset(fl, 0, sizeof fl);
        int k = 0;
        size_t w = 0;
        for (char *c = line; *c && *c != '\n' && k < 6; c++) {
            if (*c == ',') {
                k++;
                w = 0;
            } else if (w + 1 < sizeof fl[0]) {
                fl[k][w++] = *c;
            }
        }
        assert_int_equal(strtoul(fl[0], NULL, 10), p.frame_len);
        if (p.ip_version == 4)
            assert_int_equal(strtoul(fl[1], NULL, 10), p.ip_len);
        else
            assert_int_equal(strtoul(fl[2], NULL, 10) + 40, p.ip_len);
        assert_int_equal(strtoul(fl[3], NULL, 10), p.udp_len);
        assert_int_equal(strtoul(fl[3], NULL, 10) - 8, p.payload_len);
        assert_string_equal(fl[4], "1"); /* checksum Good */
        if (fl[5][0])
            coap_rows++;
        rows++;
    }
    pclose(t);
    const uint8_t *f;
    size_t caplen, wire;
    assert_int_equal(edhoc_capture_reader_next(r, &f, &caplen, &wire, NULL), 0);
    edhoc_capture_reader_close(r);
    assert_true(rows > 0);
    /* Every CoAP datagram is dissected as CoAP: all but the DNS one and
     * the junk on port 5683 (which tshark 4.0 shows as a malformed CoAP
     * message with a code, other versions may not). */
    assert_true(coap_rows == rows - 1 || coap_rows == rows - 2);
}

static void test_tshark_agrees(void **state)
{
    (void)state;
    if (system("tshark --version >/dev/null 2>&1") != 0) {
        print_message("tshark not installed: per-layer comparison skipped\n");
        skip();
    }
    for (size_t i = 0; i < sizeof all_dlts / sizeof all_dlts[0]; i++) {
        char path[512], name[64];
        snprintf(name, sizeof name, "tshark-%d.pcap", all_dlts[i]);
        write_capture(name, all_dlts[i], path, sizeof path, NULL);
        print_message("tshark on link type %d\n", all_dlts[i]);
        tshark_compare(path, all_dlts[i]);
    }
}

static long file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long)st.st_size;
}

static void test_truncated_and_corrupt(void **state)
{
    (void)state;
    char path[512], bad[512];
    unsigned count;
    write_capture("whole.pcap", EDHOC_CAPTURE_DLT_EN10MB, path, sizeof path, &count);
    size_t len;
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t buf[65536];
    len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_int_equal((long)len, file_size(path));

    /* Cut in the middle of the last packet: everything before is read,
     * then the reader reports the damage. */
    path_in_workdir("truncated.pcap", bad, sizeof bad);
    f = fopen(bad, "wb");
    fwrite(buf, 1, len - 10, f);
    fclose(f);
    struct edhoc_capture_analysis *a;
    assert_int_equal(analyse(bad, NULL, &a, NULL), EDHOC_CAPTURE_ERR_READ);
    assert_int_equal(a->packets, count - 1);
    free(a);
    char err[256];
    struct edhoc_capture_reader *r = edhoc_capture_reader_open(bad, err, sizeof err);
    assert_non_null(r);
    const uint8_t *fr;
    size_t cl, wl;
    int rc;
    while ((rc = edhoc_capture_reader_next(r, &fr, &cl, &wl, NULL)) == 1)
        ;
    assert_int_equal(rc, EDHOC_CAPTURE_ERR_READ);
    assert_non_null(strstr(edhoc_capture_reader_error(r), "truncated"));
    edhoc_capture_reader_close(r);

    /* A file cut inside its header, a foreign magic number, and a record
     * whose captured length is absurd. */
    path_in_workdir("short.pcap", bad, sizeof bad);
    f = fopen(bad, "wb");
    fwrite(buf, 1, 10, f);
    fclose(f);
    assert_null(edhoc_capture_reader_open(bad, err, sizeof err));
    assert_true(strlen(err) > 0);
    path_in_workdir("magic.pcap", bad, sizeof bad);
    f = fopen(bad, "wb");
    buf[0] ^= 0x55;
    fwrite(buf, 1, len, f);
    buf[0] ^= 0x55;
    fclose(f);
    assert_null(edhoc_capture_reader_open(bad, err, sizeof err));
    assert_non_null(strstr(err, "format"));
    path_in_workdir("record.pcap", bad, sizeof bad);
    f = fopen(bad, "wb");
    uint8_t save[4];
    memcpy(save, buf + 24 + 8, 4);
    memset(buf + 24 + 8, 0x7f, 4); /* first record: incl_len */
    fwrite(buf, 1, len, f);
    memcpy(buf + 24 + 8, save, 4);
    fclose(f);
    assert_int_equal(analyse(bad, NULL, &a, NULL), EDHOC_CAPTURE_ERR_READ);
    assert_int_equal(a->packets, 0);
    free(a);
    assert_int_equal(analyse("/nonexistent.pcap", NULL, &a, NULL), EDHOC_CAPTURE_ERR_OPEN);
}

/* A frame cut by the snap length in the middle of a capture is reported
 * and skipped; the exchanges around it are still found. */
static void test_snaplen_cut_packet(void **state)
{
    (void)state;
    char path[512];
    path_in_workdir("snap.pcap", path, sizeof path);
    pcap_t *dead = pcap_open_dead(DLT_RAW, 65535);
    pcap_dumper_t *d = pcap_dump_open(dead, path);
    assert_non_null(d);
    struct endpoint cl, sv;
    ep4(&cl, "192.0.2.1", 40001);
    ep4(&sv, "192.0.2.2", 5683);
    uint8_t b[512], f[600];
    struct pcap_pkthdr h;
    memset(&h, 0, sizeof h);
    const uint8_t *payloads[3] = {NULL, NULL, NULL};
    (void)payloads;
    size_t n = coap(COAP_TYPE_CON, COAP_CODE_POST, 1, 1, true, 65, NULL, -1, CBOR_TRUE, 1,
                    m1_single, m1_single_len, b);
    long k = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(cl), SA(sv), b, n, f, sizeof f);
    h.caplen = h.len = (bpf_u_int32)k;
    pcap_dump((u_char *)d, &h, f);
    /* A copy cut to 40 bytes (snap length). */
    h.caplen = 40;
    pcap_dump((u_char *)d, &h, f);
    n = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 1, 1, false, 64, NULL, -1, NULL, 0, m2, m2_len, b);
    k = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(sv), SA(cl), b, n, f, sizeof f);
    h.caplen = h.len = (bpf_u_int32)k;
    pcap_dump((u_char *)d, &h, f);
    pcap_dump_close(d);
    pcap_close(dead);
    struct edhoc_capture_analysis *a;
    assert_int_equal(analyse(path, NULL, &a, NULL), 0);
    assert_int_equal(a->packets, 3);
    assert_int_equal(a->skipped, 1);
    assert_int_equal(a->n_issues, 1);
    assert_int_equal(a->issues[0].packet, 2);
    assert_non_null(strstr(a->issues[0].text, "truncated"));
    assert_int_equal(a->n_ex, 1);
    assert_int_equal(a->ex[0].n_msgs, 2);
    assert_int_equal(a->ex[0].msgs[0].edhoc, 37);
    assert_int_equal(a->ex[0].msgs[1].edhoc, 45);
    free(a);
}

/* `edhoc-cli bytes --json` output: checked against its schema
 * (docs/json/SCHEMA.schema.json, tests/json_check.py), then rewritten on
 * one line with the separators given (",", ":" or ", ", ": ") so that the
 * expectations below can name members in order. Fails the test when the
 * output is not valid. */
static void bytes_json_checked(char **out, const char *schema, bool spaced)
{
    const char *root = getenv("EDHOC_SOURCE_ROOT") ? getenv("EDHOC_SOURCE_ROOT") : ".";
    char path[512], cmd[2048];
    path_in_workdir("bytes-out.json", path, sizeof path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(*out, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "python3 %s/tests/json_check.py %s/docs/json/%s.schema.json %s >&2",
             root, root, schema, path);
    if (system(cmd) != 0)
        fail_msg("not valid against %s.schema.json:\n%s", schema, *out);
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), "
             "separators=(\"%s\", \"%s\")))' %s",
             spaced ? ", " : ",", spaced ? ": " : ":", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap + 1);
    while ((n = fread(buf + len, 1, cap - len, p)) > 0) {
        len += n;
        if (len == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    }
    buf[len] = '\0';
    assert_int_equal(pclose(p), 0);
    free(*out);
    *out = buf;
}

/* The CLI: the same numbers through `edhoc-cli bytes`, and the exit code
 * for damaged files. Skipped when $EDHOC_CLI is not set. */
static void test_cli(void **state)
{
    (void)state;
    if (!getenv("EDHOC_CLI")) {
        print_message("EDHOC_CLI not set: CLI checks skipped\n");
        skip();
    }
    char path[512], args[1200];
    write_capture("cli-sll.pcap", EDHOC_CAPTURE_DLT_LINUX_SLL, path, sizeof path, NULL);
    char *out = NULL;
    snprintf(args, sizeof args, "bytes --json '%s'", path);
    assert_int_equal(run_cli(args, false, &out), 0);
    bytes_json_checked(&out, "bytes", false);
    assert_non_null(strstr(out, "\"method\":3,\"suite\":2,\"suites_i\":[6,2]"));
    assert_non_null(strstr(out, "\"method\":3,\"suite\":2,\"suites_i\":[2]"));
    assert_non_null(strstr(out, "\"name\":\"message_1\",\"packet\":1,\"from\":\"initiator\","
                                "\"datagrams\":1,\"retransmissions\":0,\"edhoc_bytes\":39"));
    assert_non_null(strstr(out, "\"name\":\"message_2\",\"packet\":2,\"from\":\"responder\","
                                "\"datagrams\":1,\"retransmissions\":0,\"edhoc_bytes\":45"));
    assert_non_null(strstr(out, "\"name\":\"message_3\",\"packet\":3,\"from\":\"initiator\","
                                "\"datagrams\":1,\"retransmissions\":0,\"edhoc_bytes\":19"));
    assert_non_null(strstr(out, "\"edhoc_bytes\":37,"));
    /* C_R 0x27: the one-byte integer form of -8 (RFC 9528 Section 3.3.2). */
    assert_non_null(strstr(out, "\"c_r\":{\"hex\":\"27\",\"int\":-8}"));
    /* Issue 14 item 7: the inference as values, its assumption in a list
     * of its own, not "kid (inferred: 1 byte, assuming no EAD)". */
    assert_non_null(strstr(out, "\"id_cred_r\":{\"type\":\"kid\",\"bytes\":1,"
                                "\"assumptions\":[\"no_ead\"]}"));
    assert_null(strstr(out, "inferred"));
    assert_non_null(strstr(out, "\"error\":null"));
    /* The OSCORE request (message 4) and its response (5): CoAP 24 + 21,
     * UDP + 16, IPv6 + 80. */
    assert_non_null(strstr(out, "\"oscore_exchanges\":[{\"request\":4,\"response\":5,"
                                "\"totals\":{\"messages\":2,\"datagrams\":2,\"edhoc_bytes\":0,"
                                "\"coap_bytes\":45,\"udp_bytes\":61,\"ip_bytes\":141,"));
    free(out);

    snprintf(args, sizeof args, "bytes --link 802.15.4 '%s'", path);
    assert_int_equal(run_cli(args, false, &out), 0);
    assert_non_null(strstr(out, "method 3, suite 2 (SUITES_I 6, 2), C_I -24 (0x37), C_R -8 (0x27)"));
    assert_non_null(strstr(out, "MAC header 23"));
    free(out);

    /* Truncated: the report of what was read, a message, exit 3. */
    char bad[512];
    path_in_workdir("cli-trunc.pcap", bad, sizeof bad);
    snprintf(args, sizeof args, "head -c %ld '%s' > '%s'", file_size(path) - 7, path, bad);
    assert_int_equal(system(args), 0);
    snprintf(args, sizeof args, "bytes '%s'", bad);
    assert_int_equal(run_cli(args, true, &out), 3);
    assert_non_null(strstr(out, "truncated or corrupt"));
    assert_non_null(strstr(out, "Exchange 1"));
    free(out);
    /* Not a capture at all. */
    snprintf(args, sizeof args, "bytes '%s/vectors.h'", getenv("EDHOC_SOURCE_ROOT")
                                                              ? getenv("EDHOC_SOURCE_ROOT")
                                                              : ".");
    int rc = run_cli(args, true, &out);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "cannot read"));
    free(out);
    assert_int_equal(run_cli("bytes", true, &out), 2);
    free(out);
    assert_int_equal(run_cli("bytes --link token-ring x.pcap", true, &out), 2);
    free(out);
    assert_int_equal(run_cli("bytes --link-mtu 0 x.pcap", true, &out), 2);
    free(out);
    /* A generic 64-byte link: message_2's IPv6 packet (102 bytes) takes
     * ceil(102 / 64) = 2 frames. */
    snprintf(args, sizeof args, "bytes --json --link-mtu 64 '%s'", path);
    assert_int_equal(run_cli(args, false, &out), 0);
    bytes_json_checked(&out, "bytes", false);
    assert_non_null(strstr(out, "\"name\":\"message_2\",\"packet\":2,\"from\":\"responder\","
                                "\"datagrams\":1,\"retransmissions\":0,\"edhoc_bytes\":45,"
                                "\"coap_bytes\":54,\"udp_bytes\":62,\"ip_bytes\":102,"
                                "\"frame_bytes\":118,\"frames\":2,\"link_bytes\":102,"
                                "\"answers\":0,\"air\":null}"));
    free(out);
}

/* ---- LoRaWAN: directions from the CoAP roles, SCHC from the bytes ----
 *
 * A server on an ephemeral port (45000, neither 5683 nor 5684): RFC 7252
 * Section 2.1 makes client and server roles of the endpoints, not of the
 * ports, so the requests are uplinks (the LoRaWAN end device is the
 * client, RFC 9011 Section 5) and the responses downlinks, sent in the
 * device's RX1 window (LoRaWAN L2 1.0.4 Section 3.3.1: RECEIVE_DELAY1
 * after the uplink). Each message's figures must be those of the library
 * for the exact CoAP bytes in that direction, with the header compressed
 * by the SCHC rules (RFC 8724 Section 7, RFC 8824) rather than carried
 * whole. */

struct air_case {
    uint8_t coap[512];
    size_t len;
    bool up;
};

/* The library's figures for one message of the exchange below. */
static void expected_air(const struct edhoc_netacct_link *link, const struct air_case *c,
                         struct edhoc_netacct_layers *l)
{
    struct edhoc_netacct_dgram d = {.udp_payload = c->len, .ipv6 = true, .src_port = 40001,
                                    .dst_port = 45000, .addrs_known = true, .payload = c->coap,
                                    .dir = c->up ? EDHOC_NETACCT_DIR_UP : EDHOC_NETACCT_DIR_DOWN};
    if (!c->up) {
        d.src_port = 45000;
        d.dst_port = 40001;
    }
    assert_int_equal(inet_pton(AF_INET6, c->up ? "2001:db8::1" : "2001:db8::2", d.src_addr), 1);
    assert_int_equal(inet_pton(AF_INET6, c->up ? "2001:db8::2" : "2001:db8::1", d.dst_addr), 1);
    assert_int_equal(edhoc_netacct_datagram(link, &d, l, NULL, 0), 0);
}

/* message_1, message_2, message_3 and the empty 2.04 (RFC 9529 trace 2,
 * A.2 framing) with the server on port 45000; returns the capture's path. */
static void write_ephemeral_capture(char *path, size_t cap, struct air_case cases[4])
{
    char err[256];
    path_in_workdir("lorawan-ephemeral.pcap", path, cap);
    struct edhoc_capture *c = edhoc_capture_open(path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    if (!c)
        fail_msg("open %s: %s", path, err);
    struct endpoint cl, sv;
    ep6(&cl, "2001:db8::1", 40001);
    ep6(&sv, "2001:db8::2", 45000);
    cases[0].len = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x5001, 1, true, 65, NULL, -1, CBOR_TRUE,
                        1, m1, m1_len, cases[0].coap);
    cases[0].up = true;
    cases[1].len = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x5001, 1, false, 64, NULL, -1, NULL, 0,
                        m2, m2_len, cases[1].coap);
    cases[2].len = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x5002, 2, true, 65, NULL, -1, C_R, 1, m3,
                        m3_len, cases[2].coap);
    cases[2].up = true;
    cases[3].len = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x5002, 2, false, -1, NULL, -1, NULL, 0,
                        NULL, 0, cases[3].coap);
    struct timespec ts = {1700000000, 0};
    for (int i = 0; i < 4; i++) {
        ts.tv_sec++;
        assert_int_equal(edhoc_capture_datagram(c, cases[i].up ? SA(cl) : SA(sv),
                                                cases[i].up ? SA(sv) : SA(cl), cases[i].coap,
                                                cases[i].len, &ts),
                         0);
    }
    assert_int_equal(edhoc_capture_flush(c), 0);
    edhoc_capture_close(c);
}

static void assert_air_equal(const struct edhoc_netacct_air *a, const struct edhoc_netacct_air *b)
{
    assert_int_equal(a->tx_us, b->tx_us);
    assert_int_equal(a->rx_us, b->rx_us);
    assert_int_equal(a->peer_tx_us, b->peer_tx_us);
    assert_int_equal(a->peer_rx_us, b->peer_rx_us);
    assert_int_equal(a->link_us, b->link_us);
    assert_int_equal(a->wait_us, b->wait_us);
    assert_int_equal(a->fragments, b->fragments);
    assert_int_equal(a->schc_residue_bits, b->schc_residue_bits);
    assert_int_equal(a->schc_known, b->schc_known);
}

/* A number member in the JSON text after p (compact: "key":value). */
static double json_real_after(const char *p, const char *key)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *k = strstr(p, pat);
    if (!k)
        fail_msg("no %s in %s", key, p);
    return strtod(k + strlen(pat), NULL);
}

static void assert_close(double got, double want)
{
    double tol = 1e-9 * (want < 0 ? -want : want) + 1e-12;
    if (got - want > tol || want - got > tol)
        fail_msg("%.12g, expected %.12g", got, want);
}

static void test_lorawan_ephemeral_server(void **state)
{
    (void)state;
    char path[512];
    struct air_case cases[4];
    memset(cases, 0, sizeof cases);
    write_ephemeral_capture(path, sizeof path, cases);
    /* EU868 DR5 (SF7): every message of this exchange fits one frame of
     * N = 222 bytes (RP002-1.0.4 Table 6), so the per-message figures are
     * those of one unfragmented message each. */
    struct edhoc_netacct_link link = edhoc_netacct_link_lorawan_default();
    link.data_rate = 5;
    struct edhoc_capture_analysis *a;
    assert_int_equal(analyse(path, &link, &a, NULL), 0);
    assert_int_equal(a->n_ex, 1);
    const struct edhoc_capture_exchange *ex = &a->ex[0];
    assert_int_equal(ex->server_port, 45000);
    assert_int_equal(ex->n_msgs, 4);
    static const enum edhoc_capture_msg_type types[4] = {
        EDHOC_CAPTURE_MSG_1, EDHOC_CAPTURE_MSG_2, EDHOC_CAPTURE_MSG_3, EDHOC_CAPTURE_MSG_3_ACK};
    struct edhoc_netacct_air up, down;
    memset(&up, 0, sizeof up);
    memset(&down, 0, sizeof down);
    uint64_t ex_msg1_tx_us = ex->msgs[0].air.tx_us;
    for (int i = 0; i < 4; i++) {
        const struct edhoc_capture_msg *m = &ex->msgs[i];
        assert_int_equal(m->type, types[i]);
        assert_int_equal(m->from_initiator, cases[i].up);
        struct edhoc_netacct_layers l;
        expected_air(&link, &cases[i], &l);
        assert_int_equal(l.downlink, !cases[i].up);
        /* SCHC from the message's bytes: a residue known and the packet
         * smaller than the CoAP message (the header compressed). */
        assert_true(l.air.schc_known);
        assert_int_equal(l.link, EDHOC_NETACCT_LORAWAN_MAC_OVERHEAD +
                                     (size_t)edhoc_netacct_schc_packet(cases[i].coap,
                                                                       cases[i].len));
        assert_true(l.link - EDHOC_NETACCT_LORAWAN_MAC_OVERHEAD < cases[i].len);
        assert_int_equal(m->link_frames, 1);
        assert_int_equal(m->link_bytes, l.link);
        assert_air_equal(&m->air, &l.air);
        /* A downlink waits RECEIVE_DELAY1 (1 s) after the uplink before
         * it; an uplink does not. */
        if (cases[i].up)
            assert_true(m->air.link_us < 1000000);
        else
            assert_true(m->air.link_us >= 1000000);
        edhoc_netacct_air_add(cases[i].up ? &up : &down, &l.air);
    }
    /* The totals split the same way: uplink = the initiator's messages. */
    assert_air_equal(&ex->totals.handshake.up, &up);
    assert_air_equal(&ex->totals.handshake.down, &down);
    free(a);

    if (!getenv("EDHOC_CLI"))
        return;
    /* The CLI's per-role energy of the handshake from the same figures:
     * the initiator sends the uplinks and receives the downlinks. */
    char args[1200];
    char *out = NULL;
    snprintf(args, sizeof args, "bytes --json --link lorawan --data-rate 5 '%s'", path);
    assert_int_equal(run_cli(args, false, &out), 0);
    bytes_json_checked(&out, "bytes", false);
    struct edhoc_netacct_radio radio;
    assert_int_equal(edhoc_netacct_radio_builtin("sx1276", &radio), 0);
    struct edhoc_netacct_energy us = edhoc_netacct_energy_of(&radio, &up, true);
    struct edhoc_netacct_energy ur = edhoc_netacct_energy_of(&radio, &up, false);
    struct edhoc_netacct_energy ds = edhoc_netacct_energy_of(&radio, &down, true);
    struct edhoc_netacct_energy dr = edhoc_netacct_energy_of(&radio, &down, false);
    const char *air = strstr(out, "\"air\":{\"frames\":");
    assert_non_null(air);
    assert_close(json_real_after(air, "initiator_mj"), (us.tx_j + us.rx_j + dr.tx_j + dr.rx_j) * 1e3);
    assert_close(json_real_after(air, "responder_mj"), (ur.tx_j + ur.rx_j + ds.tx_j + ds.rx_j) * 1e3);
    assert_close(json_real_after(air, "link_ms"), (double)(up.link_us + down.link_us) / 1e3);
    assert_close(json_real_after(air, "air_ms"), (double)(up.tx_us + down.tx_us) / 1e3);
    /* Each message's own air figures in the JSON: message_1's on-air time
     * is its uplink frame's (the first message object's "air"). */
    const char *m1 = strstr(out, "\"name\":\"message_1\"");
    assert_non_null(m1);
    const char *m1_air = strstr(m1, "\"air\":{\"air_ms\":");
    assert_non_null(m1_air);
    assert_close(json_real_after(m1_air, "air_ms"), (double)ex_msg1_tx_us / 1e3);
    free(out);
}

/* ---- edhoc-cli bytes --compare ---- */

/* The JSON object of one run of the comparison: from its "mode" to the
 * next run (or the end). */
static const char *compare_run(const char *json, const char *mode, const char **end)
{
    char key[64];
    snprintf(key, sizeof key, "\"mode\": \"%s\"", mode);
    const char *p = strstr(json, key);
    assert_non_null(p);
    const char *e = strstr(p + 1, "{\"protocol\":");
    if (!e)
        e = p + strlen(p);
    *end = e;
    return p;
}

/* The number after "key": within [p, end); fails the test when absent. */
static long json_number_in(const char *p, const char *end, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *v = strstr(p, k);
    assert_non_null(v);
    assert_true(v < end);
    return strtol(v + strlen(k), NULL, 10);
}

/* One message object of a run, by name. */
static const char *compare_msg(const char *run, const char *end, const char *name,
                               const char **msg_end)
{
    char k[64];
    snprintf(k, sizeof k, "{\"name\": \"%s\"", name);
    const char *m = strstr(run, k);
    assert_non_null(m);
    assert_true(m < end);
    *msg_end = strchr(m, '}');
    assert_non_null(*msg_end);
    return m;
}

/* The EDHOC messages of one mode: their EDHOC sizes, each carried in a
 * bigger CoAP message, and the totals adding up. */
/* The link model's frames and bytes of one datagram of udp bytes. */
static void link_of(long udp, long *frames, long *bytes)
{
    struct edhoc_netacct_link l = edhoc_netacct_link_802154_default();
    struct edhoc_netacct_dgram d = {.udp_payload = (size_t)udp, .ipv6 = false};
    struct edhoc_netacct_layers lay;
    assert_int_equal(edhoc_netacct_datagram(&l, &d, &lay, NULL, 0), 0);
    *frames += lay.frames;
    *bytes += (long)lay.link;
}

/* echo: the responder verifies the client's address before sending a
 * message_2 over 3 times message_1 (RFC 9175 Section 2.4 item 3, RFC 9528
 * Section 9.7): message_1 is answered by 4.01 + Echo and sent again, the
 * same EDHOC message counted once in the EDHOC total and twice in UDP. */
static void check_edhoc_run(const char *json, const char *mode, long e1, long e2, long e3,
                            bool link, bool echo)
{
    const char *end, *me;
    const char *r = compare_run(json, mode, &end);
    assert_non_null(strstr(r, "\"status\": \"ok\""));
    assert_true(strstr(r, "\"status\": \"ok\"") < end);
    assert_true(strstr(r, "\"cross_checked\": true") < end);
    const char *names[3] = {"message_1", "message_2", "message_3"};
    long want[3] = {e1, e2, e3}, udp_sum = 0, frames_sum = 0, fbytes_sum = 0;
    const char *from = r;
    if (echo) {
        const char *m = compare_msg(r, end, "message_1", &me);
        assert_int_equal(json_number_in(m, me, "edhoc_bytes"), e1);
        const char *e = compare_msg(me, end, "(4.01 Echo)", &from);
        long udp1 = json_number_in(m, me, "udp_bytes"), udp_echo = json_number_in(e, from, "udp_bytes");
        /* At most 3 times what the unverified address sent. */
        assert_true(udp_echo <= 3 * udp1);
        udp_sum += udp1 + udp_echo;
        if (link) {
            link_of(udp1, &frames_sum, &fbytes_sum);
            link_of(udp_echo, &frames_sum, &fbytes_sum);
        }
    } else {
        assert_null(memmem(r, (size_t)(end - r), "(4.01 Echo)", 11));
    }
    for (int i = 0; i < 3; i++) {
        const char *m = compare_msg(i == 0 ? from : r, end, names[i], &me);
        assert_int_equal(json_number_in(m, me, "edhoc_bytes"), want[i]);
        long udp = json_number_in(m, me, "udp_bytes");
        /* A CoAP header (4) at least, and a POST to /.well-known/edhoc or
         * a response with a Content-Format around it. */
        assert_true(udp >= want[i] + 4);
        assert_int_equal(json_number_in(m, me, "datagrams"), 1);
        udp_sum += udp;
        if (link) {
            /* The link numbers are those of the netacct model for this
             * datagram (IPv4 loopback crossing 802.15.4 as IPv6). */
            struct edhoc_netacct_link l = edhoc_netacct_link_802154_default();
            struct edhoc_netacct_dgram d = {.udp_payload = (size_t)udp, .ipv6 = false};
            struct edhoc_netacct_layers lay;
            assert_int_equal(edhoc_netacct_datagram(&l, &d, &lay, NULL, 0), 0);
            assert_int_equal(json_number_in(m, me, "frames"), lay.frames);
            assert_int_equal(json_number_in(m, me, "link_bytes"), lay.link);
            frames_sum += lay.frames;
            fbytes_sum += (long)lay.link;
        } else {
            /* No link model: null, not a number (issue 14: null for absent). */
            assert_non_null(memmem(m, (size_t)(me - m), "\"frames\": null", 14));
        }
    }
    /* The 2.04 response to message_3 completes the handshake over CoAP. */
    const char *ack = compare_msg(r, end, "(2.04 Changed)", &me);
    long ack_udp = json_number_in(ack, me, "udp_bytes");
    assert_true(ack_udp >= 4);
    const char *hs = strstr(r, "\"handshake_total\": ");
    assert_non_null(hs);
    assert_true(hs < end);
    const char *hse = strchr(hs, '}');
    assert_int_equal(json_number_in(hs, hse, "edhoc_bytes"), e1 + e2 + e3);
    assert_int_equal(json_number_in(hs, hse, "udp_bytes"), udp_sum + ack_udp);
    assert_int_equal(json_number_in(hs, hse, "datagrams"), echo ? 6 : 4);
    if (link) {
        const char *m = compare_msg(r, end, "(2.04 Changed)", &me);
        assert_int_equal(json_number_in(hs, hse, "frames"),
                         frames_sum + json_number_in(m, me, "frames"));
        assert_int_equal(json_number_in(hs, hse, "link_bytes"),
                         fbytes_sum + json_number_in(m, me, "link_bytes"));
    }
    assert_int_equal(json_number_in(r, end, "round_trips"), echo ? 3 : 2);
    /* One OSCORE GET and its response. */
    const char *rq = strstr(r, "\"request\": ");
    assert_non_null(rq);
    assert_true(rq < end);
    assert_int_equal(json_number_in(rq, end, "datagrams"), 2);
    assert_true(json_number_in(rq, end, "udp_bytes") > 2 * 4);
}

static void check_dtls_run(const char *json, const char *mode, bool certs, bool link)
{
    const char *end;
    const char *r = compare_run(json, mode, &end);
    assert_true(strstr(r, "\"status\": \"ok\"") < end);
    const char *hs = strstr(r, "\"handshake_total\": ");
    assert_non_null(hs);
    assert_true(hs < end);
    const char *hse = strchr(hs, '}');
    long udp = json_number_in(hs, hse, "udp_bytes");
    long dgrams = json_number_in(hs, hse, "datagrams");
    /* At least ClientHello, the server's hello flight, the client's key
     * exchange + Finished and the server's Finished. */
    assert_true(dgrams >= 4);
    assert_true(udp > 0);
    if (certs)
        /* Both 293-byte certificates cross the wire. */
        assert_true(udp > 2 * 293);
    const char *f1 = strstr(r, "\"records\": \"ClientHello\"");
    assert_non_null(f1);
    assert_true(f1 < end);
    const char *cert = strstr(r, "Certificate(");
    assert_int_equal(cert && cert < end, certs);
    if (certs) {
        /* The leaf is the 293-byte demo certificate, first in the list. */
        const char *leaf = strstr(cert, ": 293");
        assert_non_null(leaf);
        assert_true(leaf < strchr(cert, ')'));
    }
    const char *fin = strstr(r, "Finished(encrypted)");
    assert_non_null(fin);
    assert_true(fin < end);
    assert_true(json_number_in(r, end, "round_trips") >= 2);
    assert_true(json_number_in(r, end, "cipher_suite") > 0);
    const char *rq = strstr(r, "\"request\": ");
    assert_non_null(rq);
    assert_true(rq < end);
    assert_int_equal(json_number_in(rq, end, "datagrams"), 2);
    if (link) {
        long frames = json_number_in(hs, hse, "frames");
        assert_true(frames >= dgrams);
        assert_true(json_number_in(hs, hse, "link_bytes") > udp);
    } else {
        assert_non_null(memmem(hs, (size_t)(hse - hs), "\"frames\": null", 14));
    }
}

static void test_compare(void **state)
{
    (void)state;
    if (!getenv("EDHOC_CLI")) {
        print_message("EDHOC_CLI not set: CLI checks skipped\n");
        skip();
    }
    char *out = NULL;
    /* What the library itself computes for the x5chain configuration with
     * one-byte connection identifiers. */
    assert_int_equal(run_cli("simulate --json --c-i 37 --c-r 27 --method 0 --suites 2 "
                             "--id-cred-i x5chain --id-cred-r x5chain", false, &out), 0);
    assert_non_null(strstr(out, "\"handshake_bytes\": 814"));
    free(out);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(run_cli("bytes --compare --json", false, &out), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    bytes_json_checked(&out, "bytes-compare", true);
    /* Bounded: the default global timeout is 60 s. */
    assert_true(t1.tv_sec - t0.tv_sec < 60);
    check_edhoc_run(out, "x5chain", 37, 401, 376, false, true);
    check_edhoc_run(out, "x5t", 37, 115, 90, false, false);
    check_edhoc_run(out, "static_dh_kid", 37, 45, 19, false, false);
    /* The certificates named by a one-byte kid (RFC 9528 Section 3.5.3):
     * message_2 is x5t's less the 13 bytes x5t's [alg, 8-byte hash] adds
     * over a one-byte kid in ID_CRED_R (and message_3 likewise). */
    check_edhoc_run(out, "x5_kid", 37, 102, 77, false, false);
    check_dtls_run(out, "x509", true, false);
    check_dtls_run(out, "psk", false, false);
    {
        /* libcoap 4.3.1's OpenSSL backend has no raw public keys. */
        const char *end;
        const char *r = compare_run(out, "rpk", &end);
        const char *ok = strstr(r, "\"status\": \"ok\"");
        if (!ok || ok > end) {
            const char *ns = strstr(r, "\"status\": \"not supported\"");
            assert_non_null(ns);
            assert_true(ns < end);
            assert_non_null(strstr(r, "not supported by libcoap 4.3.1 with OpenSSL"));
        }
    }
    assert_null(strstr(out, "\"link\": {"));
    assert_non_null(strstr(out, "\"link\": null"));
    assert_non_null(strstr(out, "\"edhoc_x5chain\": 808, \"edhoc_by_reference\": 242, "
                                "\"edhoc_static_dh\": 101, \"tls13\": 1371, \"dtls13\": 1500"));
    assert_non_null(strstr(out, "\"method3_suite2_kid_one_suite\": [37, 45, 19]"));
    assert_non_null(strstr(out, "\"rfc9529_trace1\": [37, 116, 90], \"rfc9529_trace1_total\": 243"));
    free(out);

    assert_int_equal(run_cli("bytes --compare --json --link 802.15.4", false, &out), 0);
    bytes_json_checked(&out, "bytes-compare", true);
    assert_non_null(strstr(out, "\"link\": {\"model\": \"802.15.4\""));
    check_edhoc_run(out, "x5chain", 37, 401, 376, true, true);
    check_edhoc_run(out, "x5t", 37, 115, 90, true, false);
    check_edhoc_run(out, "static_dh_kid", 37, 45, 19, true, false);
    check_edhoc_run(out, "x5_kid", 37, 102, 77, true, false);
    check_dtls_run(out, "x509", true, true);
    check_dtls_run(out, "psk", false, true);
    free(out);

    /* The table: frame columns only with a link, and the published
     * figures marked as such. */
    assert_int_equal(run_cli("bytes --compare", false, &out), 0);
    assert_non_null(strstr(out, "Summary (UDP payload bytes"));
    assert_non_null(strstr(out, "37+401+376 = 814"));
    assert_non_null(strstr(out, "37+115+90 = 242"));
    assert_non_null(strstr(out, "37+45+19 = 101"));
    assert_non_null(strstr(out, "pre-RFC EDHOC draft and a paper"));
    assert_null(strstr(out, "frame bytes"));
    free(out);
    assert_int_equal(run_cli("bytes --compare --link 802.15.4", false, &out), 0);
    assert_non_null(strstr(out, "frame bytes"));
    assert_non_null(strstr(out, "Link: IEEE 802.15.4"));
    free(out);

    /* The global bound holds: with one second every run either finishes
     * or is reported as stopped by it, and the command ends soon after.
     * "Soon" is measured against this machine as it is now: the same
     * program refusing a bad command line (start, parse, exit) under the
     * same load, so that a busy or sanitized run does not fail the bound
     * while a run that ignores --timeout (several seconds of handshakes
     * per exchange) still does. */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(run_cli("bytes --compare --timeout 0", true, &out), 2);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    free(out);
    double start_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = run_cli("bytes --compare --timeout 1", true, &out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double bounded_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (bounded_s > 4.0 + 4 * start_s)
        fail_msg("bytes --compare --timeout 1 took %.2f s (a bad command line took %.2f s)",
                 bounded_s, start_s);
    if (rc != 0) {
        assert_int_equal(rc, 1);
        assert_non_null(strstr(out, "--timeout bound"));
    }
    free(out);

    /* Bad command lines: exit 2 before anything runs. */
    static const char *bad[] = {
        "bytes --compare x.pcap",
        "bytes --compare --link token-ring",
        "bytes --compare --timeout 0",
        "bytes --compare --timeout 601",
        "bytes --compare --timeout x",
        "bytes --compare --no-such-flag",
        "bytes --compare --link 802.15.4 --link-mtu 64",
        "bytes --compare --link 802.15.4 --mac-header 110",
        "bytes --compare --link-mtu 0",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run_cli(bad[i], true, &out), 2);
        assert_non_null(strstr(out, "edhoc-cli bytes:"));
        free(out);
    }
    assert_int_equal(run_cli("bytes --compare --help", false, &out), 0);
    assert_non_null(strstr(out, "edhoc-cli bytes --compare [OPTIONS]"));
    free(out);
}

static int setup(void **state)
{
    (void)state;
    snprintf(workdir, sizeof workdir, "/tmp/edhoc-test-capture-XXXXXX");
    if (!mkdtemp(workdir))
        return -1;
    load_trace2();
    return 0;
}

static int teardown(void **state)
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

/* Issue 23, item 9: a capture holds every datagram's bytes and addresses,
 * so it is 0600 like the interop log's pcaps and the state database
 * ("files holding secrets 0600 ... never through a symlink"), whatever the
 * umask and whatever mode a file already there had; a symbolic link
 * planted at the path is refused and the file it points to untouched, and
 * a FIFO is refused without waiting for a reader. */
static void test_open_mode_and_links(void **state)
{
    (void)state;
    char path[400], victim[400], link_path[400], fifo[400], err[256];
    path_in_workdir("mode.pcap", path, sizeof path);
    mode_t old = umask(022);
    unlink(path);
    struct edhoc_capture *c = edhoc_capture_open(path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    if (!c)
        fail_msg("open %s: %s", path, err);
    edhoc_capture_close(c);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    /* An existing 0644 file is truncated and made 0600. */
    assert_int_equal(chmod(path, 0644), 0);
    c = edhoc_capture_open(path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    assert_non_null(c);
    edhoc_capture_close(c);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_size, 24); /* the pcap file header alone */

    path_in_workdir("victim.txt", victim, sizeof victim);
    path_in_workdir("planted.pcap", link_path, sizeof link_path);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("not a capture\n", f);
    fclose(f);
    unlink(link_path);
    assert_int_equal(symlink(victim, link_path), 0);
    assert_null(edhoc_capture_open(link_path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err));
    assert_string_equal(err, "a symbolic link: refused (give the path of a regular file)");
    assert_int_equal(stat(victim, &st), 0);
    assert_int_equal(st.st_size, 14);

    path_in_workdir("fifo.pcap", fifo, sizeof fifo);
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_null(edhoc_capture_open(fifo, EDHOC_CAPTURE_DLT_RAW, err, sizeof err));
    assert_string_equal(err, "not a regular file");
    umask(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_build_fields),
        cmocka_unit_test(test_packet_parse_errors),
        cmocka_unit_test(test_endpoint_parse),
        cmocka_unit_test(test_trace2_all_link_types),
        cmocka_unit_test(test_pcapng),
        cmocka_unit_test(test_trace2_802154),
        cmocka_unit_test(test_blockwise),
        cmocka_unit_test(test_block1_and_combined),
        cmocka_unit_test(test_many_exchanges),
        cmocka_unit_test(test_tshark_agrees),
        cmocka_unit_test(test_truncated_and_corrupt),
        cmocka_unit_test(test_snaplen_cut_packet),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_lorawan_ephemeral_server),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_open_mode_and_links),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
