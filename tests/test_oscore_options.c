/*
 * OSCORE (RFC 8613) options: option classes against Figure 5 (Section
 * 4.1), Class U outside and Class E inside, Proxy-Uri decomposition, the
 * OSCORE option parser, and the CoAP codec of src/oscore.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/oscore.h"
#include "vectors.h"

#include "oscore_test_common.h"

/* Proxy-Uri is not repeatable. A second one used to be percent-decoded
 * after the first in the same bounded scratch buffer, writing past its end
 * when the two together held more path than the buffer. */
static void test_second_proxy_uri_refused(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    static uint8_t uri1[8 + 4 * 251], uri2[9 + 1000];
    memcpy(uri1, "coap://h", 8);
    for (size_t k = 0; k < 4; k++) {
        uri1[8 + k * 251] = '/';
        memset(uri1 + 9 + k * 251, 'a', 250);
    }
    memcpy(uri2, "coap://h/", 9);
    memset(uri2 + 9, 'b', 1000);
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_GET;
    m.mid = 7;
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_URI, uri1, sizeof uri1), 0);
    static uint8_t req[4096], out[4096];
    struct oscore_binding b;
    long n = edhoc_coap_msg_encode(&m, req, sizeof req);
    assert_true(n > 0);
    /* one such Proxy-Uri is fine: four inner Uri-Path options */
    assert_true(oscore_protect_request(&cli, req, (size_t)n, out, sizeof out, &b) > 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_URI, uri2, sizeof uri2), 0);
    n = edhoc_coap_msg_encode(&m, req, sizeof req);
    assert_true(n > 0);
    uint64_t ssn = oscore_context_ssn(&cli);
    assert_int_equal(oscore_protect_request(&cli, req, (size_t)n, out, sizeof out, &b),
                     OSCORE_ERR_INVALID);
    assert_int_equal(oscore_context_ssn(&cli), ssn);
    /* a single path segment over 255 bytes cannot become a Uri-Path */
    struct coap_msg one;
    memset(&one, 0, sizeof one);
    one.type = COAP_TYPE_CON;
    one.code = COAP_CODE_GET;
    assert_int_equal(edhoc_coap_msg_add_option(&one, COAP_OPT_PROXY_URI, uri2, sizeof uri2), 0);
    n = edhoc_coap_msg_encode(&one, req, sizeof req);
    assert_true(n > 0);
    assert_int_equal(oscore_protect_request(&cli, req, (size_t)n, out, sizeof out, &b),
                     OSCORE_ERR_INVALID);
}

/* ---- option classes ---- */
static void test_proxy_uri_split(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_GET;
    m.mid = 7;
    const char *uri = "coap://example.com/res%2Fx/b?q=1&r";
    assert_int_equal(
        edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_URI, (const uint8_t *)uri, strlen(uri)), 0);
    uint8_t req[BUF], preq[BUF], out[BUF];
    long req_len = edhoc_coap_msg_encode(&m, req, sizeof req);
    struct oscore_binding cb, sb;
    long n = oscore_protect_request(&cli, req, (size_t)req_len, preq, sizeof preq, &cb);
    assert_true(n > 0);
    struct coap_msg pm;
    assert_int_equal(edhoc_coap_msg_parse(preq, (size_t)n, &pm), 0);
    const struct coap_option *pu = edhoc_coap_msg_find_option(&pm, COAP_OPT_PROXY_URI);
    assert_non_null(pu);
    assert_int_equal(pu->len, strlen("coap://example.com"));
    assert_memory_equal(pu->value, "coap://example.com", pu->len);
    assert_null(memmem(preq, (size_t)n, "res", 3));
    long k = oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb);
    assert_true(k > 0);
    struct coap_msg um;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)k, &um), 0);
    assert_int_equal(um.option_count, 5);
    assert_int_equal(um.options[0].number, COAP_OPT_URI_PATH);
    assert_int_equal(um.options[0].len, 5);
    assert_memory_equal(um.options[0].value, "res/x", 5);
    assert_int_equal(um.options[1].number, COAP_OPT_URI_PATH);
    assert_memory_equal(um.options[1].value, "b", 1);
    assert_int_equal(um.options[2].number, COAP_OPT_URI_QUERY);
    assert_memory_equal(um.options[2].value, "q=1", 3);
    assert_int_equal(um.options[3].number, COAP_OPT_URI_QUERY);
    assert_int_equal(um.options[4].number, COAP_OPT_PROXY_URI);

    /* outer Class E options on a received message are discarded, outer
     * Uri-Host is kept */
    uint8_t r2[BUF];
    size_t r2len = sample_request(r2, 0);
    n = oscore_protect_request(&cli, r2, r2len, preq, sizeof preq, &cb);
    assert_int_equal(edhoc_coap_msg_parse(preq, (size_t)n, &pm), 0);
    static const uint8_t etag[2] = {0xee, 0xee};
    assert_int_equal(edhoc_coap_msg_add_option(&pm, COAP_OPT_ETAG, etag, 2), 0);
    uint8_t p2[BUF];
    long n2 = edhoc_coap_msg_encode(&pm, p2, sizeof p2);
    k = oscore_unprotect_request(&srv, p2, (size_t)n2, out, sizeof out, &sb);
    assert_int_equal(k, (long)r2len);
    assert_memory_equal(out, r2, r2len);

    /* nested OSCORE and non-requests are refused */
    assert_int_equal(oscore_protect_request(&cli, preq, (size_t)n, out, sizeof out, &cb),
                     OSCORE_ERR_NOT_OSCORE);
    uint8_t resp[BUF];
    size_t rl = sample_response(resp, NULL, 0, false, 0);
    assert_int_equal(oscore_protect_request(&cli, resp, rl, out, sizeof out, &cb),
                     OSCORE_ERR_INVALID);
    /* a plain CoAP message is not an OSCORE one */
    assert_int_equal(oscore_unprotect_request(&srv, r2, r2len, out, sizeof out, &sb),
                     OSCORE_ERR_NOT_OSCORE);
    /* too small an output buffer */
    assert_int_equal(oscore_protect_request(&cli, r2, r2len, out, 20, &cb), OSCORE_ERR_BUFFER);
}

/* ---- Option classes (Section 4.1, Figure 5) ---- */
static void test_option_classes_figure5(void **state)
{
    (void)state;
    const unsigned E = OSCORE_CLASS_E, U = OSCORE_CLASS_U;
    /* RFC 8613 Figure 5 "Protection of CoAP Options", row by row. */
    static const struct {
        uint16_t number;
        const char *name;
        unsigned classes;
    } figure5[] = {
        {1, "If-Match", OSCORE_CLASS_E},
        {3, "Uri-Host", OSCORE_CLASS_U},
        {4, "ETag", OSCORE_CLASS_E},
        {5, "If-None-Match", OSCORE_CLASS_E},
        {6, "Observe", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {7, "Uri-Port", OSCORE_CLASS_U},
        {8, "Location-Path", OSCORE_CLASS_E},
        {9, "OSCORE", OSCORE_CLASS_U},
        {11, "Uri-Path", OSCORE_CLASS_E},
        {12, "Content-Format", OSCORE_CLASS_E},
        {14, "Max-Age", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {15, "Uri-Query", OSCORE_CLASS_E},
        {17, "Accept", OSCORE_CLASS_E},
        {20, "Location-Query", OSCORE_CLASS_E},
        {23, "Block2", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {27, "Block1", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {28, "Size2", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {35, "Proxy-Uri", OSCORE_CLASS_U},
        {39, "Proxy-Scheme", OSCORE_CLASS_U},
        {60, "Size1", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {258, "No-Response", OSCORE_CLASS_E | OSCORE_CLASS_U},
        /* RFC 9175 Section 2.2.1: Echo "MAY be an Inner or Outer option";
         * Section 3.2.1: "Request-Tag, like the block options, is both a
         * class E and a class U option". */
        {252, "Echo", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {292, "Request-Tag", OSCORE_CLASS_E | OSCORE_CLASS_U},
    };
    size_t known = 0;
    for (size_t i = 0; i < sizeof figure5 / sizeof figure5[0]; i++) {
        if (oscore_option_class(figure5[i].number) != figure5[i].classes)
            fail_msg("%s (%u): class %#x, Figure 5 says %#x", figure5[i].name, figure5[i].number,
                     oscore_option_class(figure5[i].number), figure5[i].classes);
        /* Every option the codec names is in the table. */
        assert_string_equal(edhoc_coap_option_name(figure5[i].number), figure5[i].name);
    }
    for (unsigned n = 0; n <= 0xffff; n++) {
        unsigned c = oscore_option_class((uint16_t)n);
        /* Section 4: "There are currently no Class I options defined." */
        assert_false(c & OSCORE_CLASS_I);
        if (edhoc_coap_option_name((uint16_t)n)) {
            known++;
            continue;
        }
        /* Section 4.1: "Options that are unknown or for which OSCORE
         * processing is not defined SHALL be processed as Class E". */
        if (c != E)
            fail_msg("unknown option %u: class %#x, not E", n, c);
    }
    assert_int_equal(known, sizeof figure5 / sizeof figure5[0]);
    (void)U;

    /* No Class I options, so the external_aad's options are h'': the
     * Section 5.4 example (alg 10, request_kid 0x00, request_piv 0x25). */
    static const uint8_t want_aad[] = {0x83, 0x68, 0x45, 0x6e, 0x63, 0x72, 0x79,
                                       0x70, 0x74, 0x30, 0x40, 0x49, 0x85, 0x01,
                                       0x81, 0x0a, 0x41, 0x00, 0x41, 0x25, 0x40};
    uint8_t aad[64];
    static const uint8_t kid[1] = {0x00}, piv[1] = {0x25};
    assert_int_equal(oscore_aad(10, kid, 1, piv, 1, aad, sizeof aad), (long)sizeof want_aad);
    assert_memory_equal(aad, want_aad, sizeof want_aad);
}

/* Outer options after protect: Class U ones stay, Class E ones move in. */
static void test_class_u_outer_class_e_inner(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_GET;
    static const uint8_t port[2] = {0x16, 0x34}; /* 5684 */
    assert_int_equal(
        edhoc_coap_msg_add_option(&m, COAP_OPT_URI_HOST, (const uint8_t *)"h.example", 9), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PORT, port, 2), 0);
    assert_int_equal(
        edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_SCHEME, (const uint8_t *)"coap", 4), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)"a", 1), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_MAX_AGE, port, 1), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_IF_MATCH, port, 1), 0);
    uint8_t req[BUF], preq[BUF], out[BUF];
    long req_len = edhoc_coap_msg_encode(&m, req, sizeof req);
    struct oscore_binding cb, sb;
    long n = oscore_protect_request(&cli, req, (size_t)req_len, preq, sizeof preq, &cb);
    assert_true(n > 0);
    struct coap_msg pm;
    assert_int_equal(edhoc_coap_msg_parse(preq, (size_t)n, &pm), 0);
    /* Section 4.1.3.2: "In order to support forward proxy operations,
     * Proxy-Scheme, Uri-Host, and Uri-Port need to be Class U"; the rest
     * (Class E, Section 4.1.1) is removed from the OSCORE message. */
    assert_int_equal(pm.option_count, 4);
    assert_int_equal(pm.options[0].number, COAP_OPT_URI_HOST);
    assert_int_equal(pm.options[1].number, COAP_OPT_URI_PORT);
    assert_int_equal(pm.options[2].number, COAP_OPT_OSCORE);
    assert_int_equal(pm.options[3].number, COAP_OPT_PROXY_SCHEME);

    /* Class U is not protected: a proxy may rewrite Uri-Host and the
     * request still verifies, which is why "Different servers SHALL have
     * different security contexts" (Section 4.1.3.2). */
    pm.options[0].value = (const uint8_t *)"other.example";
    pm.options[0].len = 13;
    uint8_t moved[BUF];
    long mn = edhoc_coap_msg_encode(&pm, moved, sizeof moved);
    long k = oscore_unprotect_request(&srv, moved, (size_t)mn, out, sizeof out, &sb);
    assert_true(k > 0);
    struct coap_msg um;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)k, &um), 0);
    const struct coap_option *host = edhoc_coap_msg_find_option(&um, COAP_OPT_URI_HOST);
    assert_non_null(host);
    assert_int_equal(host->len, 13);
    assert_memory_equal(host->value, "other.example", 13);
    assert_non_null(edhoc_coap_msg_find_option(&um, COAP_OPT_IF_MATCH));
    assert_non_null(edhoc_coap_msg_find_option(&um, COAP_OPT_MAX_AGE));
    assert_non_null(edhoc_coap_msg_find_option(&um, COAP_OPT_PROXY_SCHEME));
    /* The OSCORE option is consumed (Section 8.2 step 1). */
    assert_null(edhoc_coap_msg_find_option(&um, COAP_OPT_OSCORE));
}

/* The outer Proxy-Uri of a protected request, and its inner options. */
static long proxy_uri_outer(struct oscore_context *cli, const char *uri, char *outer, size_t cap,
                            struct coap_msg *inner, uint8_t *inner_buf, struct oscore_context *srv)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_GET;
    assert_int_equal(
        edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_URI, (const uint8_t *)uri, strlen(uri)), 0);
    uint8_t req[BUF], preq[BUF];
    long req_len = edhoc_coap_msg_encode(&m, req, sizeof req);
    struct oscore_binding cb, sb;
    long n = oscore_protect_request(cli, req, (size_t)req_len, preq, sizeof preq, &cb);
    if (n < 0)
        return n;
    struct coap_msg pm;
    assert_int_equal(edhoc_coap_msg_parse(preq, (size_t)n, &pm), 0);
    const struct coap_option *pu = edhoc_coap_msg_find_option(&pm, COAP_OPT_PROXY_URI);
    assert_non_null(pu);
    assert_true(pu->len < cap);
    memcpy(outer, pu->value, pu->len);
    outer[pu->len] = '\0';
    long k = oscore_unprotect_request(srv, preq, (size_t)n, inner_buf, BUF, &sb);
    assert_true(k > 0);
    assert_int_equal(edhoc_coap_msg_parse(inner_buf, (size_t)k, inner), 0);
    return 0;
}

static void test_proxy_uri_decomposition(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    char outer[1100];
    struct coap_msg in;
    uint8_t inner[BUF];
    /* Section 4.1.3.3's example: Proxy-Uri = "coap://example.com/resource?q=1"
     * is split into Proxy-Scheme "coap", Uri-Host "example.com", Uri-Port
     * 5683 (default), Uri-Path "resource", Uri-Query "q=1"; "The remaining
     * options are composed into the Proxy-Uri included in the options part
     * of the OSCORE message, which has value: Proxy-Uri = "coap://example.com"". */
    assert_int_equal(proxy_uri_outer(&cli, "coap://example.com/resource?q=1", outer, sizeof outer,
                                     &in, inner, &srv),
                     0);
    assert_string_equal(outer, "coap://example.com");
    const struct coap_option *path = edhoc_coap_msg_find_option(&in, COAP_OPT_URI_PATH);
    const struct coap_option *query = edhoc_coap_msg_find_option(&in, COAP_OPT_URI_QUERY);
    assert_non_null(path);
    assert_non_null(query);
    assert_int_equal(path->len, 8);
    assert_memory_equal(path->value, "resource", 8);
    assert_int_equal(query->len, 3);
    assert_memory_equal(query->value, "q=1", 3);

    /* Composition by RFC 7252 Section 6.5 steps 1-5: scheme and host
     * lowercased (Section 6.4 decomposes them so), ":" port only "If |port|
     * is not the default port for the scheme", in decimal. */
    static const struct {
        const char *in, *outer;
    } ok[] = {
        {"coap://EXAMPLE.com:5683/a", "coap://example.com"},
        {"COAPS://example.com:5684", "coaps://example.com"},
        {"coaps://example.com:5683/x", "coaps://example.com:5683"},
        {"coap://example.com:05684/x", "coap://example.com:5684"},
        {"coap://example.com:/x", "coap://example.com"},
        {"coap://[2001:DB8::1]:61616/x?y", "coap://[2001:db8::1]:61616"},
        {"coap://[2001:db8::1]/x", "coap://[2001:db8::1]"},
        {"coap+tcp://h:5683/", "coap+tcp://h"},
        {"http://example.com:80/x", "http://example.com"},
        {"https://example.com:8443", "https://example.com:8443"},
        {"coap://192.0.2.1:0/", "coap://192.0.2.1:0"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        assert_int_equal(proxy_uri_outer(&cli, ok[i].in, outer, sizeof outer, &in, inner, &srv), 0);
        if (strcmp(outer, ok[i].outer) != 0)
            fail_msg("%s: outer Proxy-Uri %s, expected %s", ok[i].in, outer, ok[i].outer);
    }
    /* What Section 6.4 cannot decompose into options is refused: a
     * userinfo, a port that is no 16-bit number, no host, an unclosed
     * IP-literal, a fragment. */
    static const char *bad[] = {
        "coap://user@example.com/x",
        "coap://example.com:70000/",
        "coap://example.com:8a/",
        "coap:///x",
        "coap://[::1/x",
        "coap://h/x#frag",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long rc = proxy_uri_outer(&cli, bad[i], outer, sizeof outer, &in, inner, &srv);
        if (rc != OSCORE_ERR_INVALID)
            fail_msg("%s: %ld, expected OSCORE_ERR_INVALID", bad[i], rc);
    }
}

/* ---- OSCORE option parser ---- */
static void test_option_parse(void **state)
{
    (void)state;
    struct oscore_option o;
    assert_int_equal(oscore_option_parse(NULL, 0, &o), 0);
    assert_int_equal(o.piv_len, 0);
    assert_false(o.has_kid);
    static const uint8_t c6[] = {0x19, 0x14, 0x08, 0x37, 0xcb, 0xf3, 0x21, 0x00, 0x17, 0xa2, 0xd3};
    assert_int_equal(oscore_option_parse(c6, sizeof c6, &o), 0);
    assert_int_equal(o.piv_len, 1);
    assert_int_equal(o.piv[0], 0x14);
    assert_true(o.has_kid_context);
    assert_int_equal(o.kid_context_len, 8);
    assert_true(o.has_kid);
    assert_int_equal(o.kid_len, 0);
    uint8_t enc[32];
    assert_int_equal(oscore_option_encode(&o, enc, sizeof enc), sizeof c6);
    assert_memory_equal(enc, c6, sizeof c6);
    assert_int_equal(oscore_option_encode(&o, enc, 5), OSCORE_ERR_BUFFER);

    static const struct {
        uint8_t v[8];
        size_t len;
    } bad[] = {
        {{0x00}, 1},                   /* all-zero flags must be an empty value */
        {{0x20}, 1},                   /* reserved bit */
        {{0x80, 0x01}, 2},             /* reserved bit */
        {{0x06, 1, 2, 3, 4, 5, 6}, 7}, /* n = 6 */
        {{0x07}, 1},                   /* n = 7 */
        {{0x02, 0x01}, 2},             /* truncated Partial IV */
        {{0x10}, 1},                   /* kid context length missing */
        {{0x11, 0x00, 0x05, 0x01}, 4}, /* kid context truncated */
        {{0x01, 0x00, 0x01}, 3},       /* trailing byte without kid flag */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (oscore_option_parse(bad[i].v, bad[i].len, &o) != OSCORE_ERR_BAD_OPTION)
            fail_msg("bad option %zu accepted", i);
    }

    /* and in a message: 4.02 Bad Option back */
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    static const uint8_t msg[] = {0x52, 0x02, 0x00, 0x05, 0xab, 0xcd, 0x91, 0x20, 0xff,
                                  1,    2,    3,    4,    5,    6,    7,    8,    9};
    uint8_t out[BUF];
    struct oscore_binding b;
    assert_int_equal(oscore_unprotect_request(&srv, msg, sizeof msg, out, sizeof out, &b),
                     OSCORE_ERR_BAD_OPTION);
    long e = oscore_error_response(OSCORE_ERR_BAD_OPTION, msg, sizeof msg, out, sizeof out);
    static const uint8_t want[] = {0x52, 0x82, 0x00, 0x05, 0xab, 0xcd, 0xd0, 0x01, 0xff, 'F',
                                   'a',  'i',  'l',  'e',  'd',  ' ',  't',  'o',  ' ',  'd',
                                   'e',  'c',  'o',  'd',  'e',  ' ',  'C',  'O',  'S',  'E'};
    assert_int_equal(e, sizeof want);
    assert_memory_equal(out, want, sizeof want);
    /* no payload: malformed */
    static const uint8_t nopayload[] = {0x40, 0x02, 0x00, 0x05, 0x93, 0x09, 0x14, 0x01};
    assert_int_equal(
        oscore_unprotect_request(&srv, nopayload, sizeof nopayload, out, sizeof out, &b),
        OSCORE_ERR_BAD_OPTION);
    /* request without kid / without Partial IV */
    static const uint8_t nokid[] = {0x40, 0x02, 0x00, 0x05, 0x92, 0x01, 0x14, 0xff, 1,
                                    2,    3,    4,    5,    6,    7,    8,    9};
    assert_int_equal(oscore_unprotect_request(&srv, nokid, sizeof nokid, out, sizeof out, &b),
                     OSCORE_ERR_BAD_OPTION);
    /* unknown kid: 4.01 "Security context not found" */
    static const uint8_t otherkid[] = {0x40, 0x02, 0x00, 0x05, 0x93, 0x09, 0x14, 0x07, 0xff,
                                       1,    2,    3,    4,    5,    6,    7,    8,    9};
    assert_int_equal(oscore_unprotect_request(&srv, otherkid, sizeof otherkid, out, sizeof out, &b),
                     OSCORE_ERR_CONTEXT_NOT_FOUND);
    e = oscore_error_response(OSCORE_ERR_CONTEXT_NOT_FOUND, otherkid, sizeof otherkid, out,
                              sizeof out);
    assert_int_equal(e, 7 + strlen("Security context not found"));
    assert_int_equal(out[0], 0x60);
    assert_int_equal(out[1], COAP_CODE_UNAUTHORIZED);
    assert_memory_equal(out + 7, "Security context not found", e - 7);
    /* right kid, wrong ciphertext: 4.00 "Decryption failed" */
    static const uint8_t f3[] = {0x40, 0x02, 0x00, 0x05, 0x93, 0x09, 0x14, 0x01, 0xff,
                                 1,    2,    3,    4,    5,    6,    7,    8,    9};
    assert_int_equal(oscore_unprotect_request(&srv, f3, sizeof f3, out, sizeof out, &b),
                     OSCORE_ERR_DECRYPT);
    e = oscore_error_response(OSCORE_ERR_DECRYPT, f3, sizeof f3, out, sizeof out);
    assert_int_equal(out[1], COAP_CODE_BAD_REQUEST);
    assert_int_equal(e, 7 + strlen("Decryption failed"));
    assert_memory_equal(out + 7, "Decryption failed", e - 7);
    assert_int_equal(
        oscore_error_response(OSCORE_ERR_SSN_EXHAUSTED, f3, sizeof f3, out, sizeof out),
        OSCORE_ERR_INVALID);
}

/* ---- CoAP codec ---- */
static void test_coap_msg_codec(void **state)
{
    (void)state;
    struct vec_scope v = vec_object(appc, "C.4");
    uint8_t msg[BUF], out[BUF];
    size_t len = vec_hex(v, "unprotected_request", msg, sizeof msg);
    struct coap_msg m;
    assert_int_equal(edhoc_coap_msg_parse(msg, len, &m), 0);
    assert_int_equal(m.code, COAP_CODE_GET);
    assert_int_equal(m.option_count, 2);
    assert_int_equal(m.options[0].number, COAP_OPT_URI_HOST);
    assert_int_equal(m.options[1].number, COAP_OPT_URI_PATH);
    assert_int_equal(edhoc_coap_msg_encode(&m, out, sizeof out), (long)len);
    assert_memory_equal(out, msg, len);
    assert_int_equal(edhoc_coap_msg_encode(&m, out, len - 1), COAP_MSG_ERR_BUFFER);
    /* long deltas and lengths round-trip */
    static uint8_t big[600];
    memset(big, 'x', sizeof big);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_NO_RESPONSE, big, 300), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, 2000, big, 20), 0);
    long n = edhoc_coap_msg_encode(&m, out, sizeof out);
    assert_true(n > 0);
    struct coap_msg m2;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)n, &m2), 0);
    assert_int_equal(m2.option_count, 4);
    assert_int_equal(m2.options[2].number, COAP_OPT_NO_RESPONSE);
    assert_int_equal(m2.options[2].len, 300);
    assert_int_equal(m2.options[3].number, 2000);
    static const uint8_t bads[][6] = {
        {0x80, 0x01, 0, 0},          /* version 2 */
        {0x49, 0x01, 0, 0},          /* token length 9 */
        {0x42, 0x01, 0, 0, 1},       /* token truncated */
        {0x40, 0x01, 0, 0, 0xf0},    /* reserved nibble */
        {0x40, 0x01, 0, 0, 0xff},    /* marker without payload */
        {0x40, 0x01, 0, 0, 0x13, 1}, /* option value truncated */
    };
    static const size_t badlen[] = {4, 4, 5, 5, 5, 6};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(edhoc_coap_msg_parse(bads[i], badlen[i], &m), COAP_MSG_ERR_MALFORMED);
    uint8_t many[4 + 40];
    many[0] = 0x40;
    many[1] = 1;
    many[2] = 0;
    many[3] = 0;
    for (int i = 0; i < 40; i++)
        many[4 + i] = 0x00; /* 40 options number 0 */
    assert_int_equal(edhoc_coap_msg_parse(many, sizeof many, &m), COAP_MSG_ERR_TOO_MANY);
    assert_string_equal(edhoc_coap_option_name(COAP_OPT_ECHO), "Echo");
}

/* The format column of RFC 7252 Section 5.10's table ("empty", "opaque",
 * "uint", "string"), with Observe (RFC 7641 Section 2), Block1/Block2
 * (RFC 7959 Section 2.1), Size2 (RFC 7959 Section 4), Echo and Request-Tag
 * (RFC 9175 Sections 2.2.1 and 3.2.1: opaque) and No-Response (RFC 7967
 * Section 2: uint). Dumps and --json print values by this format. */
static void test_option_formats(void **state)
{
    (void)state;
    static const struct {
        uint16_t number;
        enum edhoc_coap_option_format format;
    } table[] = {
        {1, EDHOC_COAP_FORMAT_OPAQUE},     {3, EDHOC_COAP_FORMAT_STRING},
        {4, EDHOC_COAP_FORMAT_OPAQUE},     {5, EDHOC_COAP_FORMAT_EMPTY},
        {6, EDHOC_COAP_FORMAT_UINT},       {7, EDHOC_COAP_FORMAT_UINT},
        {8, EDHOC_COAP_FORMAT_STRING},     {9, EDHOC_COAP_FORMAT_OPAQUE},
        {11, EDHOC_COAP_FORMAT_STRING},    {12, EDHOC_COAP_FORMAT_UINT},
        {14, EDHOC_COAP_FORMAT_UINT},      {15, EDHOC_COAP_FORMAT_STRING},
        {17, EDHOC_COAP_FORMAT_UINT},      {20, EDHOC_COAP_FORMAT_STRING},
        {23, EDHOC_COAP_FORMAT_UINT},      {27, EDHOC_COAP_FORMAT_UINT},
        {28, EDHOC_COAP_FORMAT_UINT},      {35, EDHOC_COAP_FORMAT_STRING},
        {39, EDHOC_COAP_FORMAT_STRING},    {60, EDHOC_COAP_FORMAT_UINT},
        {252, EDHOC_COAP_FORMAT_OPAQUE},   {258, EDHOC_COAP_FORMAT_UINT},
        {292, EDHOC_COAP_FORMAT_OPAQUE},   {2, EDHOC_COAP_FORMAT_OPAQUE},
        {65000, EDHOC_COAP_FORMAT_OPAQUE},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (edhoc_coap_option_format(table[i].number) != table[i].format)
            fail_msg("option %u: format %d, RFC says %d", table[i].number,
                     edhoc_coap_option_format(table[i].number), table[i].format);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proxy_uri_split),
        cmocka_unit_test(test_option_parse),
        cmocka_unit_test(test_coap_msg_codec),
        cmocka_unit_test(test_second_proxy_uri_refused),
        cmocka_unit_test(test_option_classes_figure5),
        cmocka_unit_test(test_option_formats),
        cmocka_unit_test(test_class_u_outer_class_e_inner),
        cmocka_unit_test(test_proxy_uri_decomposition),
    };
    int failed = cmocka_run_group_tests_name("openssl", tests, setup, NULL);
    test_backend = edhoc_crypto_sodium;
    test_backend = edhoc_crypto_auto;
    return failed;
}
