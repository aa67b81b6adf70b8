/*
 * edhoc-cli coap's coap-client options (-N, -T, -A, --content-format, -O)
 * against a demo responder, checked on the wire: every request and
 * response is read back from the client's --pcap file; and what -v / -vv
 * show of them on standard error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "net_test_util.h"

#define MAX_OPTS 16

struct wire_msg {
    unsigned type, code, mid;
    uint8_t token[8];
    size_t token_len;
    size_t n_opts;
    struct {
        unsigned number;
        uint8_t value[64];
        size_t len;
    } opts[MAX_OPTS];
};

/* The CoAP messages of a pcap file written by --pcap (raw IP, IPv4 or
 * IPv6, UDP). Returns how many were read into msgs. */
static size_t read_pcap(const char *path, struct wire_msg *msgs, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: cannot open", path);
    uint8_t buf[70000];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t at = 24, n = 0;
    while (at + 16 <= len && n < max) {
        uint32_t incl;
        memcpy(&incl, buf + at + 8, 4); /* written in host order */
        const uint8_t *ip = buf + at + 16;
        at += 16 + incl;
        if (at > len)
            break;
        size_t ip_len = (ip[0] >> 4) == 4 ? (size_t)(ip[0] & 15) * 4 : 40;
        const uint8_t *d = ip + ip_len + 8;
        size_t dl = incl - ip_len - 8;
        struct wire_msg *m = &msgs[n];
        memset(m, 0, sizeof *m);
        if (dl < 4)
            continue;
        m->type = (d[0] >> 4) & 3;
        m->token_len = d[0] & 15;
        m->code = d[1];
        m->mid = (unsigned)d[2] << 8 | d[3];
        size_t i = 4;
        if (m->token_len > 8 || i + m->token_len > dl)
            continue;
        memcpy(m->token, d + i, m->token_len);
        i += m->token_len;
        unsigned number = 0;
        while (i < dl && d[i] != 0xFF && m->n_opts < MAX_OPTS) {
            unsigned delta = d[i] >> 4, olen = d[i] & 15;
            i++;
            if (delta == 13)
                delta = 13u + d[i++];
            else if (delta == 14)
                delta = 269u + ((unsigned)d[i] << 8 | d[i + 1]), i += 2;
            if (olen == 13)
                olen = 13u + d[i++];
            else if (olen == 14)
                olen = 269u + ((unsigned)d[i] << 8 | d[i + 1]), i += 2;
            number += delta;
            m->opts[m->n_opts].number = number;
            m->opts[m->n_opts].len = olen < 64 ? olen : 64;
            memcpy(m->opts[m->n_opts].value, d + i, m->opts[m->n_opts].len);
            m->n_opts++;
            i += olen;
        }
        n++;
    }
    return n;
}

/* The option's value as an unsigned integer (RFC 7252 Section 3.2), -1
 * when the message lacks it. */
static long option_uint(const struct wire_msg *m, unsigned number)
{
    for (size_t i = 0; i < m->n_opts; i++) {
        if (m->opts[i].number == number) {
            long v = 0;
            for (size_t k = 0; k < m->opts[i].len; k++)
                v = v << 8 | m->opts[i].value[k];
            return v;
        }
    }
    return -1;
}

static const uint8_t *option_value(const struct wire_msg *m, unsigned number, size_t *len)
{
    for (size_t i = 0; i < m->n_opts; i++) {
        if (m->opts[i].number == number) {
            *len = m->opts[i].len;
            return m->opts[i].value;
        }
    }
    return NULL;
}

static struct net_proc plain;
static char pcap[300];

static void start_plain(void)
{
    if (plain.pid)
        return;
    assert_int_equal(net_make_dir("cli-coap"), 0);
    net_path(pcap, sizeof pcap, "c.pcap");
    assert_int_equal(
        net_responder_start(&plain, "plain", "--listen 127.0.0.1:0 --allow-unprotected"), 0);
}

/* `edhoc-cli coap ARGS --pcap FILE` against the plain responder; its
 * messages in msgs (request first). Returns the exit code. */
static int coap_wire(struct wire_msg *msgs, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int coap_wire(struct wire_msg *msgs, size_t *n, const char *fmt, ...)
{
    start_plain();
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    unlink(pcap);
    char *out;
    int rc = net_cli_run(&out, 30, false, "coap %s --timeout 5 --pcap %s", args, pcap);
    if (rc != 0 && rc != 1)
        fprintf(stderr, "coap %s: exit %d\n%s\n", args, rc, out);
    free(out);
    *n = read_pcap(pcap, msgs, 8);
    return rc;
}

/* Exit 2 with one line on stderr that contains want. */
static void refused(const char *want, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refused(const char *want, const char *fmt, ...)
{
    start_plain();
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char *out;
    int rc = net_cli_run(&out, 30, false, "coap GET coap://127.0.0.1:%u/time %s", plain.port, args);
    if (rc != 2 || net_count(out, "\n") != 1 || !strstr(out, want))
        fail_msg("coap ... %s: exit %d, wanted 2 and one line with '%s':\n%s", args, rc, want, out);
    free(out);
}

/* RFC 7252 Section 4.3: "A message that does not require reliable
 * transmission ... can be sent as a message of type 'Non-confirmable'
 * (Type NON = 1)"; Section 5.2.3: "If the request message is
 * Non-confirmable, then the response SHOULD be returned in a
 * Non-confirmable message"; the client matches it by token (Section 5.3.2). */
static void test_non(void **state)
{
    (void)state;
    struct wire_msg m[8];
    size_t n;
    assert_int_equal(coap_wire(m, &n, "GET coap://127.0.0.1:%u/time -N", plain.port), 0);
    assert_true(n >= 2);
    assert_int_equal(m[0].type, 1);
    assert_int_equal(m[0].code, 1);
    assert_int_equal(m[1].type, 1);
    assert_int_equal(m[1].code, 0x45);
    assert_int_equal(m[1].token_len, m[0].token_len);
    assert_memory_equal(m[1].token, m[0].token, m[0].token_len);
    /* --non spelled out, and a block-wise response (RFC 7959) followed. */
    assert_int_equal(coap_wire(m, &n, "GET \"coap://127.0.0.1:%u/bytes?n=2000\" --non", plain.port),
                     0);
    assert_true(n >= 4);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(m[i].type, 1);
    /* Without -N: CON, and the piggybacked response is an ACK (Section 5.2.1). */
    assert_int_equal(coap_wire(m, &n, "GET coap://127.0.0.1:%u/time", plain.port), 0);
    assert_int_equal(m[0].type, 0);
    assert_int_equal(m[1].type, 2);
}

/* RFC 7252 Section 5.3.1: "The Token is used to match a response with a
 * request. The token value is a sequence of 0 to 8 bytes." Section 5.3.2:
 * "The exact rules for matching a response to a request are as follows:
 * ... the response's token MUST match the request's". */
static void test_token(void **state)
{
    (void)state;
    struct wire_msg m[8];
    size_t n;
    static const uint8_t eight[8] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
    assert_int_equal(
        coap_wire(m, &n, "GET coap://127.0.0.1:%u/time -T 0102030405060708", plain.port), 0);
    assert_true(n >= 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(m[i].token_len, 8);
        assert_memory_equal(m[i].token, eight, 8);
    }
    /* 0x prefix, NON, one byte. */
    assert_int_equal(coap_wire(m, &n, "GET coap://127.0.0.1:%u/time -N --token 0xA1", plain.port),
                     0);
    assert_int_equal(m[0].token_len, 1);
    assert_int_equal(m[0].token[0], 0xa1);
    assert_int_equal(m[1].token_len, 1);
    assert_int_equal(m[1].token[0], 0xa1);
    /* The empty token ("0 to 8 bytes"). */
    assert_int_equal(coap_wire(m, &n, "GET coap://127.0.0.1:%u/time -T \"\"", plain.port), 0);
    assert_int_equal(m[0].token_len, 0);
    assert_int_equal(m[1].token_len, 0);
    /* Every request of --repeat carries it. */
    assert_int_equal(
        coap_wire(m, &n, "GET coap://127.0.0.1:%u/time -T beef --repeat 3", plain.port), 0);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(m[i].token_len, 2);
        assert_int_equal(m[i].token[0], 0xbe);
    }
    /* Section 3: "Lengths 9-15 are reserved, MUST NOT be sent". */
    refused("a token has 0 to 8", "-T 010203040506070809");
    refused("expected hex", "-T abc");
    refused("expected hex", "--token xyz1");
}

/* The token under OSCORE is the outer message's (RFC 8613 Section 4.2:
 * the Token is not protected, it stays in the outer message). */
static void test_token_oscore(void **state)
{
    (void)state;
    start_plain();
    char srv[300], cl[300], sdir[300], cdir[300], args[1200];
    net_path(srv, sizeof srv, "srv.conf");
    net_path(cl, sizeof cl, "client.conf");
    net_path(sdir, sizeof sdir, "srv.state");
    net_path(cdir, sizeof cdir, "client.state");
    net_write_file(srv,
                   "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                   "master_salt,hex,\"9e7ca92223786340\"\n"
                   "sender_id,hex,\"01\"\nrecipient_id,hex,\"\"\n",
                   0600);
    net_write_file(cl,
                   "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                   "master_salt,hex,\"9e7ca92223786340\"\n"
                   "sender_id,hex,\"\"\nrecipient_id,hex,\"01\"\n",
                   0600);
    static struct net_proc r;
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --oscore-context %s --state-dir %s", srv,
             sdir);
    assert_int_equal(net_responder_start(&r, "oscore", args), 0);
    mkdir(cdir, 0700);
    struct wire_msg m[8];
    size_t n;
    assert_int_equal(coap_wire(m, &n,
                               "GET coap://127.0.0.1:%u/time --oscore-context %s --state-dir %s "
                               "-T c0ffee",
                               r.port, cl, cdir),
                     0);
    assert_true(n >= 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(m[i].token_len, 3);
        assert_int_equal(m[i].token[2], 0xee);
        assert_true(option_value(&m[i], 9, &(size_t){0}) != NULL); /* OSCORE */
    }
    /* --non stays refused under OSCORE. */
    char *out;
    assert_int_equal(net_cli_run(&out, 30, false,
                                 "coap GET coap://127.0.0.1:%u/time -N --oscore-context %s", r.port,
                                 cl),
                     2);
    free(out);
}

/* RFC 7252 Section 5.10.3: "The Content-Format Option indicates the
 * representation format of the message payload" (number 12); Section
 * 5.10.4: "The Accept Option can be used to indicate which Content-Format
 * is acceptable to the client" (number 17); Section 12.3 registers the
 * names and numbers. */
static void test_content_formats(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        long number;
    } cf[] = {{"text/plain;charset=utf-8", 0}, {"application/link-format", 40},
              {"application/xml", 41},         {"application/octet-stream", 42},
              {"application/exi", 47},         {"application/json", 50},
              {"application/cbor", 60},        {"application/senml+json", 110},
              {"application/senml+cbor", 112}, {"application/oscore", 10001}};
    struct wire_msg m[8];
    size_t n;
    for (size_t i = 0; i < sizeof cf / sizeof cf[0]; i++) {
        int rc = coap_wire(
            m, &n, "POST coap://127.0.0.1:%u/echo --payload x --content-format \"%s\" -A \"%s\"",
            plain.port, cf[i].name, cf[i].name);
        assert_true(rc == 0 || rc == 1);
        assert_true(n >= 1);
        assert_int_equal(option_uint(&m[0], 12), cf[i].number);
        assert_int_equal(option_uint(&m[0], 17), cf[i].number);
    }
    /* A number, and the long spelling. */
    assert_int_equal(coap_wire(m, &n, "GET coap://127.0.0.1:%u/time --accept 65535", plain.port),
                     0);
    assert_int_equal(option_uint(&m[0], 17), 65535);
    refused("registered name", "-A application/nothing");
    refused("registered name", "--content-format 65536 --payload x");
}

/* RFC 7252 Section 5.4: options are identified by number; Section 3.1:
 * "the Option Number is ... the sum of the Option Delta values of this
 * and all previous options". */
static void test_user_option(void **state)
{
    (void)state;
    struct wire_msg m[8];
    size_t n;
    assert_int_equal(
        coap_wire(m, &n, "GET coap://127.0.0.1:%u/time -O 2048,hello -O 3000,0x00ff01", plain.port),
        0);
    size_t len = 0;
    const uint8_t *v = option_value(&m[0], 2048, &len);
    assert_non_null(v);
    assert_int_equal(len, 5);
    assert_memory_equal(v, "hello", 5);
    v = option_value(&m[0], 3000, &len);
    assert_non_null(v);
    assert_int_equal(len, 3);
    assert_memory_equal(v, "\x00\xff\x01", 3);
    /* The options edhoc-cli sets itself are refused by name. */
    refused("Observe", "-O 6,0x00");
    refused("OSCORE", "-O 9,0x00");
    refused("Uri-Path", "-O 11,x");
    refused("Content-Format", "-O 12,0x00");
    refused("Uri-Query", "-O 15,a");
    refused("Accept", "-O 17,0x00");
    refused("Block2", "-O 23,0x00");
    refused("Block1", "-O 27,0x00");
    refused("Echo", "-O 252,0x00");
    refused("expected NUM,VALUE", "-O 2048");
    refused("expected NUM,VALUE", "-O 0,x");
    refused("not hex", "-O 2048,0xzz");
}

static struct net_proc demo_none;

/* A line of text that contains every one of the needles (NULL-ended), or
 * NULL. */
static const char *line_with(const char *text, ...)
{
    for (const char *l = text; l && *l;) {
        const char *eol = strchr(l, '\n');
        size_t n = eol ? (size_t)(eol - l) : strlen(l);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)n, l);
        va_list ap;
        va_start(ap, text);
        bool all = true;
        for (const char *needle; (needle = va_arg(ap, const char *));)
            all = all && strstr(line, needle);
        va_end(ap);
        if (all)
            return l;
        l = eol ? eol + 1 : NULL;
    }
    return NULL;
}

/* `edhoc-cli coap ARGS` with standard output in *out and standard error
 * in *err. Returns the exit code. */
static int coap_split(char **out, char **err, const char *args)
{
    char epath[300];
    net_path(epath, sizeof epath, "verbose.err");
    unlink(epath);
    int rc = net_cli_run(out, 30, false, "coap %s --timeout 5 2>%s", args, epath);
    *err = net_read_file(epath);
    assert_non_null(*err);
    return rc;
}

/* -v: one line per CoAP message on standard error (issue 26), standard
 * output as without it; -vv adds each datagram in hex. */
static void test_verbose(void **state)
{
    (void)state;
    if (!demo_none.pid)
        assert_int_equal(net_responder_start(&demo_none, "verbose",
                                             "--state-dir none --listen 127.0.0.1:0 "
                                             "--allow-unprotected"),
                         0);
    char args[400], peer[64];
    snprintf(peer, sizeof peer, "-> 127.0.0.1:%u CON 0.02 POST MID 0x", demo_none.port);
    char *out, *err, *quiet_out, *quiet_err;
    /* Without -v standard error stays empty. */
    snprintf(args, sizeof args, "POST coap://127.0.0.1:%u/echo --payload hello", demo_none.port);
    assert_int_equal(coap_split(&quiet_out, &quiet_err, args), 0);
    assert_non_null(strstr(quiet_out, "hello"));
    assert_string_equal(quiet_err, "");
    snprintf(args, sizeof args, "POST coap://127.0.0.1:%u/echo --payload hello -v", demo_none.port);
    assert_int_equal(coap_split(&out, &err, args), 0);
    assert_string_equal(out, quiet_out);
    if (!line_with(err, "edhoc-cli coap: ", peer, " Uri-Path:\"echo\"", " payload 5 bytes", NULL))
        fail_msg("no request line in:\n%s", err);
    snprintf(peer, sizeof peer, "<- 127.0.0.1:%u ACK 2.04 Changed MID 0x", demo_none.port);
    if (!line_with(err, "edhoc-cli coap: ", peer, " payload 5 bytes", NULL))
        fail_msg("no 2.04 response line in:\n%s", err);
    assert_null(strstr(err, "     0000 "));
    free(out);
    free(err);
    /* -vv: the datagrams in hex, a POST's header first (CON, 0.02). */
    snprintf(args, sizeof args, "POST coap://127.0.0.1:%u/echo --payload hello -vv",
             demo_none.port);
    assert_int_equal(coap_split(&out, &err, args), 0);
    assert_string_equal(out, quiet_out);
    if (!line_with(err, "edhoc-cli coap:     0000  4", " 02 ", NULL))
        fail_msg("no hex dump in:\n%s", err);
    free(out);
    free(err);
    free(quiet_out);
    free(quiet_err);
    /* --json's document is still one document alone (scripts parse it). */
    char *json_plain, *json_verbose;
    snprintf(args, sizeof args, "POST coap://127.0.0.1:%u/echo --payload hello --json",
             demo_none.port);
    assert_int_equal(coap_split(&json_plain, &err, args), 0);
    assert_string_equal(err, "");
    free(err);
    snprintf(args, sizeof args, "POST coap://127.0.0.1:%u/echo --payload hello --json -vv",
             demo_none.port);
    assert_int_equal(coap_split(&json_verbose, &err, args), 0);
    assert_non_null(strstr(err, "<- 127.0.0.1:"));
    assert_null(strstr(json_verbose, "edhoc-cli coap:"));
    assert_int_equal(net_json_valid(json_verbose, "coap", false), 0);
    free(json_plain);
    free(json_verbose);
    free(err);
}

/* Under OSCORE -v shows the outer message and, once verified, the inner
 * one: the request's real code and Uri-Path are only inside (RFC 8613
 * Section 4.1: Uri-Path is Class E). */
static void test_verbose_oscore(void **state)
{
    (void)state;
    start_plain();
    char srv[300], cl[300], sdir[300], cdir[300], args[1200];
    net_path(srv, sizeof srv, "vsrv.conf");
    net_path(cl, sizeof cl, "vclient.conf");
    net_path(sdir, sizeof sdir, "vsrv.state");
    net_path(cdir, sizeof cdir, "vclient.state");
    net_write_file(srv,
                   "master_secret,hex,\"0102030405060708090a0b0c0d0e0f11\"\n"
                   "master_salt,hex,\"9e7ca92223786340\"\n"
                   "sender_id,hex,\"01\"\nrecipient_id,hex,\"\"\n",
                   0600);
    net_write_file(cl,
                   "master_secret,hex,\"0102030405060708090a0b0c0d0e0f11\"\n"
                   "master_salt,hex,\"9e7ca92223786340\"\n"
                   "sender_id,hex,\"\"\nrecipient_id,hex,\"01\"\n",
                   0600);
    static struct net_proc r;
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --oscore-context %s --state-dir %s", srv,
             sdir);
    assert_int_equal(net_responder_start(&r, "voscore", args), 0);
    mkdir(cdir, 0700);
    snprintf(args, sizeof args,
             "GET coap://127.0.0.1:%u/time --oscore-context %s --state-dir %s -v", r.port, cl,
             cdir);
    char *out, *err;
    assert_int_equal(coap_split(&out, &err, args), 0);
    if (!line_with(err, "-> 127.0.0.1:", " CON 0.02 POST (OSCORE outer) MID ", " OSCORE:0x", NULL))
        fail_msg("no outer request line in:\n%s", err);
    assert_null(line_with(err, "-> 127.0.0.1:", "Uri-Path", NULL));
    if (!line_with(err, "OSCORE inner request, before protection: 0.01 GET Uri-Path:\"time\"",
                   NULL))
        fail_msg("no inner request line in:\n%s", err);
    if (!line_with(err, "<- 127.0.0.1:", " ACK 2.04 Changed (OSCORE outer) ", NULL))
        fail_msg("no outer response line in:\n%s", err);
    if (!line_with(err, "OSCORE inner response, verified: 2.05 Content", NULL))
        fail_msg("no inner response line in:\n%s", err);
    free(out);
    free(err);
    net_proc_stop(&r, SIGTERM, 5000);
}

static int setup_all(void **state)
{
    (void)state;
    start_plain();
    return 0;
}

static int teardown_all(void **state)
{
    (void)state;
    net_stop_all();
    net_remove_dir();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_non),
        cmocka_unit_test(test_token),
        cmocka_unit_test(test_token_oscore),
        cmocka_unit_test(test_content_formats),
        cmocka_unit_test(test_user_option),
        cmocka_unit_test(test_verbose),
        cmocka_unit_test(test_verbose_oscore),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
