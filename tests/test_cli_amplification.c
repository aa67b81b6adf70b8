/*
 * The responder's amplification limit (issue 15), against real
 * `edhoc-cli responder` processes on loopback:
 *
 *  - raw message_1 (RFC 9529 traces 1 and 2: methods 0 and 3) from a UDP
 *    socket of this process, for each way the responder names its
 *    credential (--id-cred kid, x5t, x5chain): the bytes this socket
 *    receives are at most 3 times the bytes it sent; with x5chain the
 *    answer is a 4.01 with Echo and the retry carrying the Echo value gets
 *    message_2; --amplification-factor 0 gives the old behaviour;
 *  - `edhoc-cli initiator` completes against each, in one round trip more
 *    when the responder challenges, and --pad-message-1 spares that round
 *    trip with the length the man page gives;
 *  - block-wise Block2 follow-ups stay within the budget, also when a
 *    client asks for the same block again and again;
 *  - an endpoint verified by an OSCORE request is no longer limited.
 *
 * Bytes are UDP payload bytes, as the responder counts them. The factors
 * measured are printed (the figures before and after).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "net_test_util.h"
#include "vectors.h"

#define CLI_RUN(out, timeout_s, ...) net_cli_run(out, timeout_s, false, __VA_ARGS__)

/* RFC 9175 Section 2.4 item 3: "An amplification factor of 3 (i.e., don't
 * send more than three times the number of bytes received until the
 * peer's address is confirmed)". */
#define FACTOR 3

/* ---- CoAP by hand (RFC 7252 Section 3) ---- */

enum {
    O_URI_PATH = 11,
    O_CONTENT_FORMAT = 12,
    O_BLOCK2 = 23,
    O_ECHO = 252,
};
#define CODE_CHANGED      0x44 /* 2.04 */
#define CODE_UNAUTHORIZED 0x81 /* 4.01 */

struct opt {
    unsigned num;
    const uint8_t *val;
    size_t len;
};

static size_t put_opt_head(uint8_t *out, unsigned delta, size_t len)
{
    size_t o = 1;
    unsigned d = delta < 13 ? delta : delta < 269 ? 13 : 14;
    unsigned l = len < 13 ? (unsigned)len : 13;
    out[0] = (uint8_t)(d << 4 | l);
    if (d == 13)
        out[o++] = (uint8_t)(delta - 13);
    else if (d == 14) {
        out[o++] = (uint8_t)((delta - 269) >> 8);
        out[o++] = (uint8_t)(delta - 269);
    }
    if (l == 13)
        out[o++] = (uint8_t)(len - 13);
    return o;
}

/* POST /.well-known/edhoc, CON, token 2 bytes, Content-Format 65, an
 * Echo value and a Block2 option when given; payload (may be NULL). */
static size_t edhoc_post(uint8_t *out, uint16_t mid, const uint8_t *echo, size_t echo_len,
                         int block2, const uint8_t *payload, size_t payload_len)
{
    struct opt o[5];
    size_t n = 0;
    static const uint8_t cf = 65;
    uint8_t b2 = (uint8_t)block2;
    o[n++] = (struct opt){O_URI_PATH, (const uint8_t *)".well-known", 11};
    o[n++] = (struct opt){O_URI_PATH, (const uint8_t *)"edhoc", 5};
    o[n++] = (struct opt){O_CONTENT_FORMAT, &cf, 1};
    if (block2 >= 0)
        o[n++] = (struct opt){O_BLOCK2, &b2, 1};
    if (echo)
        o[n++] = (struct opt){O_ECHO, echo, echo_len};
    size_t p = 0;
    out[p++] = 0x42; /* version 1, CON, token length 2 */
    out[p++] = 0x02; /* POST */
    out[p++] = (uint8_t)(mid >> 8);
    out[p++] = (uint8_t)mid;
    out[p++] = 0xa5;
    out[p++] = (uint8_t)mid;
    unsigned last = 0;
    for (size_t i = 0; i < n; i++) {
        p += put_opt_head(out + p, o[i].num - last, o[i].len);
        memcpy(out + p, o[i].val, o[i].len);
        p += o[i].len;
        last = o[i].num;
    }
    if (payload_len) {
        out[p++] = 0xff;
        memcpy(out + p, payload, payload_len);
        p += payload_len;
    }
    return p;
}

struct resp {
    uint8_t code;
    const uint8_t *echo;
    size_t echo_len;
    bool has_block2;
    uint32_t block2; /* NUM << 4 | M << 3 | SZX */
    const uint8_t *payload;
    size_t payload_len;
};

static bool coap_parse(const uint8_t *d, size_t len, struct resp *r)
{
    memset(r, 0, sizeof *r);
    if (len < 4 || (d[0] >> 6) != 1)
        return false;
    size_t tkl = d[0] & 15, p = 4 + tkl;
    r->code = d[1];
    unsigned num = 0;
    while (p < len && d[p] != 0xff) {
        unsigned delta = d[p] >> 4, l = d[p] & 15;
        p++;
        if (delta == 13)
            delta = 13 + d[p++];
        else if (delta == 14) {
            delta = 269 + (d[p] << 8 | d[p + 1]);
            p += 2;
        }
        if (l == 13)
            l = 13 + d[p++];
        else if (l == 14) {
            l = 269 + (d[p] << 8 | d[p + 1]);
            p += 2;
        }
        num += delta;
        if (p + l > len)
            return false;
        if (num == O_ECHO) {
            r->echo = d + p;
            r->echo_len = l;
        } else if (num == O_BLOCK2) {
            r->has_block2 = true;
            r->block2 = 0;
            for (unsigned i = 0; i < l; i++)
                r->block2 = r->block2 << 8 | d[p + i];
        }
        p += l;
    }
    if (p < len) {
        r->payload = d + p + 1;
        r->payload_len = len - p - 1;
    }
    return true;
}

/* ---- A client endpoint that counts its UDP payload bytes ---- */

struct client {
    int fd;
    uint16_t local_port;
    size_t sent, received; /* this endpoint's, i.e. the responder's received / sent */
    uint16_t mid;
};

/* port 0: any free port. */
static void client_open(struct client *c, uint16_t port)
{
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(c->fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    assert_int_equal(bind(c->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(c->fd, (struct sockaddr *)&a, &l), 0);
    c->local_port = ntohs(a.sin_port);
    c->mid = (uint16_t)(0x4000 + (random() & 0xfff));
}

/* Send msg to the responder and wait (at most 3 s) for its answer. */
static long client_exchange(struct client *c, uint16_t port, const uint8_t *msg, size_t len,
                            uint8_t *resp, size_t cap)
{
    long n = net_udp_exchange_fd(c->fd, port, msg, len, resp, cap, 3000);
    c->sent += len;
    if (n > 0)
        c->received += (size_t)n;
    return n;
}

/* Anything more the responder sends (it should not): counted too. */
static void client_drain(struct client *c, unsigned ms)
{
    uint8_t buf[2048];
    for (;;) {
        struct pollfd pf = {.fd = c->fd, .events = POLLIN};
        if (poll(&pf, 1, (int)ms) <= 0)
            return;
        ssize_t n = recv(c->fd, buf, sizeof buf, 0);
        if (n > 0)
            c->received += (size_t)n;
    }
}

static double factor_of(const struct client *c)
{
    return c->sent ? (double)c->received / (double)c->sent : 0.0;
}

/* ---- message_1 of RFC 9529 ---- */

/* true || message_1 of trace 1 (method 0, suite 0) or 2 (method 3,
 * SUITES_I [6, 2]), with `pad` bytes of EAD_1 padding appended (RFC 9528
 * Section 3.8.1: ead_label 0 and a byte string; EAD_1 ends message_1). */
static size_t message_1(int method, size_t pad, uint8_t *out, size_t cap)
{
    struct vec_scope v = vec_load(method == 0 ? "rfc9529-trace1.json" : "rfc9529-trace2.json");
    out[0] = 0xf5;
    size_t n = 1 + vec_hex(v, "message_1", out + 1, cap - 1);
    if (pad) {
        /* One item: label, head (1 byte below 24, else 2) and value. */
        assert_true(pad >= 2 && n + pad <= cap);
        size_t value;
        out[n++] = 0x00;
        if (pad - 2 < 24) {
            value = pad - 2;
            out[n++] = (uint8_t)(0x40 | value);
        } else {
            value = pad - 3;
            assert_true(value >= 24 && value < 256);
            out[n++] = 0x58;
            out[n++] = (uint8_t)value;
        }
        memset(out + n, 0x5a, value);
        n += value;
    }
    return n;
}

static struct net_proc resp_proc;

static void start_responder(const char *name, const char *args)
{
    char all[1024];
    snprintf(all, sizeof all, "--listen 127.0.0.1:0 --suites 0,2 --state-dir none -v %s", args);
    assert_int_equal(net_responder_start(&resp_proc, name, all), 0);
}

static char *stop_responder(void)
{
    assert_int_equal(net_proc_stop(&resp_proc, SIGTERM, 5000), 0);
    return net_read_file(resp_proc.log);
}

/* ---- Raw message_1 per credential mode ---- */

static const char *const id_creds[] = {"kid", "x5t", "x5chain"};

/* One unverified endpoint sends message_1 of method m: what comes back,
 * within the limit; an Echo challenge is answered as a client should
 * (RFC 9175 Section 2.3: "the client SHOULD resend the original request
 * with the addition of an Echo option"). Returns the factor before any
 * Echo retry; *challenged says whether there was one. */
static double raw_handshake_start(uint16_t port, int m, bool limited, bool *challenged,
                                  size_t *m2_len)
{
    struct client c;
    client_open(&c, 0);
    uint8_t m1[256], msg[512], resp[2048];
    size_t m1_len = message_1(m, 0, m1, sizeof m1);
    size_t len = edhoc_post(msg, c.mid++, NULL, 0, -1, m1, m1_len);
    long n = client_exchange(&c, port, msg, len, resp, sizeof resp);
    assert_true(n > 0);
    client_drain(&c, 200);
    double before_echo = factor_of(&c);
    struct resp r;
    assert_true(coap_parse(resp, (size_t)n, &r));
    *challenged = r.code == CODE_UNAUTHORIZED;
    if (limited)
        /* Until the address is verified, at most 3 times what it sent. */
        assert_true(c.received <= FACTOR * c.sent);
    if (*challenged) {
        /* RFC 9175 Section 2.4 item 3: "the server responds to the alleged
         * source address of the request with an Echo option in short
         * response message (e.g. 4.01 Unauthorized)". */
        assert_true(limited);
        assert_non_null(r.echo);
        assert_int_equal(r.echo_len, 8);
        assert_int_equal(r.payload_len, 0);
        uint8_t echo[8];
        memcpy(echo, r.echo, 8);
        len = edhoc_post(msg, c.mid++, echo, 8, -1, m1, m1_len);
        n = client_exchange(&c, port, msg, len, resp, sizeof resp);
        assert_true(n > 0);
        assert_true(coap_parse(resp, (size_t)n, &r));
    }
    /* message_2: a 2.04 carrying one CBOR byte string (RFC 9528 A.2). */
    assert_int_equal(r.code, CODE_CHANGED);
    assert_true(r.payload_len > 32 && (r.payload[0] & 0xe0) == 0x40);
    *m2_len = r.payload_len;
    close(c.fd);
    return before_echo;
}

/* RFC 9528 Section 9.7 / RFC 9175 Section 2.4 item 3, in every credential
 * mode and for methods 0 and 3: an unverified endpoint never gets more than
 * 3 times its bytes; x5chain (a message_2 of 6-7 times message_1) is
 * answered with 4.01 + Echo, the retry with the Echo value gets message_2
 * (issue 15: "whatever the credential type"). --amplification-factor 0 is
 * the old behaviour: message_2 at once, x5chain far above 3x. */
static void test_raw_message_1_per_mode(void **state)
{
    (void)state;
    for (size_t k = 0; k < 3; k++) {
        for (int off = 0; off < 2; off++) {
            char args[200], name[40];
            snprintf(args, sizeof args, "--id-cred %s%s", id_creds[k],
                     off ? " --amplification-factor 0" : "");
            snprintf(name, sizeof name, "raw-%s-%d", id_creds[k], off);
            start_responder(name, args);
            bool x5chain = !strcmp(id_creds[k], "x5chain");
            for (int m = 0; m <= 3; m += 3) {
                bool challenged = false;
                size_t m2 = 0;
                double f = raw_handshake_start(resp_proc.port, m, !off, &challenged, &m2);
                print_message("--id-cred %-7s method %d factor %s: message_2 %zu bytes, "
                              "%s: %.2fx\n",
                              id_creds[k], m, off ? "0 (off)" : "3 (default)", m2,
                              challenged ? "4.01 Echo first" : "message_2 at once", f);
                assert_int_equal(challenged, x5chain && !off);
                if (off && x5chain)
                    assert_true(f > FACTOR); /* the 6.6-7.0x */
                else
                    assert_true(f <= FACTOR);
            }
            char *log = stop_responder();
            if (!off) {
                /* Counted in the stats (issue 15) and logged at -v. */
                assert_non_null(strstr(log, "stopping: amplification_factor=3 "));
                assert_non_null(
                    strstr(log, x5chain ? "answers_held_back=2 " : "answers_held_back=0 "));
                assert_non_null(strstr(log, x5chain ? "echo_challenges=2 " : "echo_challenges=0 "));
                if (x5chain) {
                    assert_int_equal(net_count(log, "4.01 with Echo instead"), 2);
                    assert_int_equal(net_count(log, "verified (Echo)"), 2);
                }
            } else {
                assert_non_null(strstr(log, "--amplification-factor 0: no amplification limit"));
                assert_non_null(strstr(log, "amplification_factor=0 "));
            }
            free(log);
        }
    }
}

/* ---- The initiator against each mode ---- */

/* A row of the initiator's "Messages" table: the nth one named name
 * (EDHOC bytes, -1 for "-", CoAP bytes, datagrams). */
static bool table_row(const char *out, const char *name, int nth, long *edhoc, long *coap,
                      long *dgrams)
{
    const char *t = strstr(out, "\nMessages");
    const char *end = t ? strstr(t, "\n  total") : NULL;
    if (!t || !end)
        return false;
    size_t nl = strlen(name);
    for (const char *line = strchr(t + 1, '\n'); line && line < end;
         line = strchr(line + 1, '\n')) {
        const char *p = line + 1;
        if (strncmp(p, "  ", 2) || strncmp(p + 2, name, nl) || p[2 + nl] != ' ')
            continue;
        if (nth-- > 0)
            continue;
        char dir[8], e[16];
        if (sscanf(p + 2 + nl, " %7s %15s %ld %ld", dir, e, coap, dgrams) != 4)
            return false;
        *edhoc = strcmp(e, "-") ? strtol(e, NULL, 10) : -1;
        return true;
    }
    return false;
}

static long round_trips(const char *out)
{
    const char *p = strstr(out, "Round trips: ");
    return p ? strtol(p + 13, NULL, 10) : -1;
}

/* `edhoc-cli initiator` completes against the responder in every mode,
 * methods 0 and 3, under the default limit. With x5chain the responder
 * answers the first message_1 with 4.01 + Echo and the initiator sends it
 * again with the Echo value (RFC 9175 Section 2.3: "the client SHOULD
 * resend the original request with the addition of an Echo option"): one
 * round trip more, two datagrams; the 4.01 is the header, the token and
 * the Echo option, and the repeated message_1 is the first plus that
 * option (1 + 1 + 8 bytes: number 252, an 8-byte value). */
static void test_initiator_each_mode(void **state)
{
    (void)state;
    for (size_t k = 0; k < 3; k++) {
        char name[40];
        snprintf(name, sizeof name, "init-%s", id_creds[k]);
        char args[100];
        snprintf(args, sizeof args, "--id-cred %s", id_creds[k]);
        start_responder(name, args);
        bool x5chain = !strcmp(id_creds[k], "x5chain");
        for (int m = 0; m <= 3; m += 3) {
            char *out;
            int rc = CLI_RUN(&out, 30,
                             "initiator coap://127.0.0.1:%u --request \"GET /time\" "
                             "--method %d",
                             resp_proc.port, m);
            if (rc != 0)
                fail_msg("--id-cred %s method %d: exit %d\n%s", id_creds[k], m, rc, out);
            long e1, c1, d1, e401, c401, d401, e1b, c1b, d1b, e2, c2, d2;
            assert_true(table_row(out, "message_1", 0, &e1, &c1, &d1));
            assert_true(table_row(out, "message_2", 0, &e2, &c2, &d2));
            assert_int_equal(e1, 37);
            if (x5chain) {
                assert_true(table_row(out, "(4.01 Echo)", 0, &e401, &c401, &d401));
                assert_true(table_row(out, "message_1", 1, &e1b, &c1b, &d1b));
                assert_int_equal(e401, -1);
                /* The request: header and token, Uri-Path .well-known
                 * and edhoc (12 + 6), Content-Format (2), payload marker,
                 * true and message_1 (37): 49 bytes more than the 4.01's
                 * header, token and Echo option (10). */
                assert_int_equal(c401, c1 - 63 + 14);
                assert_true(c401 <= FACTOR * c1);
                assert_int_equal(e1b, 37);
                assert_int_equal(c1b, c1 + 10);
                assert_true(c2 > FACTOR * c1); /* why the challenge came */
                assert_int_equal(round_trips(out), 4);
            } else {
                assert_false(table_row(out, "(4.01 Echo)", 0, &e401, &c401, &d401));
                assert_true(c2 <= FACTOR * c1);
                assert_int_equal(round_trips(out), 3);
            }
            print_message("initiator, --id-cred %-7s method %d: message_1 %ld, message_2 %ld "
                          "CoAP bytes, %ld round trips\n",
                          id_creds[k], m, c1, c2, round_trips(out));
            free(out);
        }
        char *log = stop_responder();
        assert_non_null(strstr(log, x5chain ? "answers_held_back=2 " : "answers_held_back=0 "));
        /* The OSCORE request of each run verified its endpoint too, or the
         * Echo had already (RFC 9175: "only once per endpoint"). */
        assert_non_null(strstr(log, "endpoints_verified=2 "));
        free(log);
    }
}

/* --pad-message-1 N (issue 15: "so a device that prefers one round trip
 * less can have it"; RFC 9528 Section 9.7: "To avoid an additional
 * roundtrip the Initiator can reduce the amplification factor by padding
 * message_1, i.e., using EAD_1"): with N as the man page gives it --
 * (message_2's CoAP bytes + 8) / 3 - 27, rounded up -- the x5chain
 * message_2 comes at once; one byte less and the responder challenges. */
static void test_pad_message_1(void **state)
{
    (void)state;
    start_responder("pad", "--id-cred x5chain");
    for (int m = 0; m <= 3; m += 3) {
        char *out;
        int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request none --method %d",
                         resp_proc.port, m);
        assert_int_equal(rc, 0);
        long e, c2, d, c1, e1;
        assert_true(table_row(out, "message_2", 0, &e, &c2, &d));
        assert_true(table_row(out, "(4.01 Echo)", 0, &e, &c1, &d));
        free(out);
        long n = (c2 + 8 + 2) / 3 - 27;
        rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --request none --method %d --pad-message-1 %ld",
                     resp_proc.port, m, n);
        if (rc != 0)
            fail_msg("--pad-message-1 %ld: exit %d\n%s", n, rc, out);
        assert_false(table_row(out, "(4.01 Echo)", 0, &e, &c1, &d));
        assert_true(table_row(out, "message_1", 0, &e1, &c1, &d));
        assert_int_equal(e1, n); /* exactly N: "at least N", and no more */
        assert_true(table_row(out, "message_2", 0, &e, &c2, &d));
        assert_true(c2 <= FACTOR * c1);
        assert_int_equal(round_trips(out), 2);
        print_message("--pad-message-1 %ld, method %d: message_1 %ld CoAP bytes, message_2 %ld "
                      "(%.2fx), one round trip\n",
                      n, m, c1, c2, (double)c2 / (double)c1);
        free(out);
        rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --request none --method %d --pad-message-1 %ld",
                     resp_proc.port, m, n - 1);
        assert_int_equal(rc, 0);
        assert_true(table_row(out, "(4.01 Echo)", 0, &e, &c1, &d));
        assert_true(table_row(out, "message_1", 1, &e1, &c1, &d));
        assert_int_equal(e1, n - 1);
        free(out);
    }
    char *log = stop_responder();
    assert_non_null(strstr(log, "answers_held_back=4 "));
    free(log);
    /* Out of range: refused on the command line. */
    char *out;
    assert_int_equal(CLI_RUN(&out, 30, "initiator coap://127.0.0.1:9 --pad-message-1 1025"), 2);
    free(out);
}

/* Block-wise (RFC 7959) message_2 of x5chain in 128-byte blocks: a padded
 * message_1 that covers every block gets the first block at once and each
 * follow-up stays within the budget (RFC 9175 Section 2.4 item 3: "the
 * ratio between the size of the request and the total size of the
 * response(s) to that request"). A client that asks
 * for the same block again and again (30 bytes for 150) is answered with
 * 4.01 + Echo once the budget runs out -- never more than 3x in total --
 * and its next request with the Echo value gets the block. */
static void test_blockwise_budget(void **state)
{
    (void)state;
    start_responder("blocks", "--id-cred x5chain --block-size 128");
    struct client c;
    client_open(&c, 0);
    uint8_t m1[512], msg[1024], resp[2048], body[1024];
    size_t m1_len = message_1(3, 120, m1, sizeof m1);
    size_t len = edhoc_post(msg, c.mid++, NULL, 0, -1, m1, m1_len);
    long n = client_exchange(&c, resp_proc.port, msg, len, resp, sizeof resp);
    struct resp r;
    assert_true(n > 0 && coap_parse(resp, (size_t)n, &r));
    assert_int_equal(r.code, CODE_CHANGED);
    assert_true(r.has_block2);
    assert_int_equal(r.block2, 0x0b); /* NUM 0, M 1, SZX 3: 128 bytes */
    size_t body_len = 0;
    memcpy(body, r.payload, r.payload_len);
    body_len += r.payload_len;
    assert_true(c.received <= FACTOR * c.sent);
    /* Block 1 asked for 12 times. */
    int challenges = 0;
    uint8_t echo[8];
    for (int i = 0; i < 12; i++) {
        len = edhoc_post(msg, c.mid++, NULL, 0, 0x13, NULL, 0);
        n = client_exchange(&c, resp_proc.port, msg, len, resp, sizeof resp);
        assert_true(n > 0 && coap_parse(resp, (size_t)n, &r));
        assert_true(c.received <= FACTOR * c.sent);
        if (r.code == CODE_UNAUTHORIZED) {
            assert_non_null(r.echo);
            memcpy(echo, r.echo, 8);
            challenges++;
        } else {
            assert_int_equal(r.code, CODE_CHANGED);
            assert_int_equal(r.block2, 0x1b);
        }
    }
    print_message("block 1 of a 4-block message_2 asked 12 times: %d challenged, %zu bytes "
                  "received for %zu sent (%.2fx)\n",
                  challenges, c.received, c.sent, factor_of(&c));
    assert_true(challenges > 0);
    /* The rest, with the Echo value: verified, no limit from here on. */
    for (uint8_t num = 1; num < 8; num++) {
        len = edhoc_post(msg, c.mid++, echo, 8, num << 4 | 3, NULL, 0);
        n = client_exchange(&c, resp_proc.port, msg, len, resp, sizeof resp);
        assert_true(n > 0 && coap_parse(resp, (size_t)n, &r));
        assert_int_equal(r.code, CODE_CHANGED);
        assert_int_equal(r.block2 >> 4, num);
        assert_true(body_len + r.payload_len <= sizeof body);
        memcpy(body + body_len, r.payload, r.payload_len);
        body_len += r.payload_len;
        if (!(r.block2 & 8))
            break;
    }
    /* The whole message_2: one CBOR byte string (RFC 9528 Section 5.3.1). */
    assert_int_equal(body[0], 0x59);
    assert_int_equal((size_t)(body[1] << 8 | body[2]) + 3, body_len);
    close(c.fd);
    /* Each challenge counted, as an answer held back and an Echo sent. */
    char *log = stop_responder();
    char want[80];
    snprintf(want, sizeof want, "answers_held_back=%d answers_withheld=0 echo_challenges=%d ",
             challenges, challenges);
    assert_non_null(strstr(log, want));
    free(log);
}

/* "an OSCORE request that verified under an established context from that
 * address" (issue 15) verifies it, and so, one step earlier, does a
 * message_3 that completes the handshake from the address message_2 went
 * to (its sender received message_2 there): an initiator whose padded
 * message_1 got message_2 at once (no Echo) and then completed is no
 * longer limited at that address and port -- a later unpadded message_1
 * from there gets the whole x5chain message_2, far above 3x. */
static void test_oscore_verifies(void **state)
{
    (void)state;
    start_responder("oscore", "--id-cred x5chain");
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --method 3 --pad-message-1 200 "
                     "--request \"GET /time\"",
                     resp_proc.port);
    if (rc != 0)
        fail_msg("exit %d\n%s", rc, out);
    long e, c, d;
    assert_false(table_row(out, "(4.01 Echo)", 0, &e, &c, &d));
    free(out);
    char *log = net_read_file(resp_proc.log);
    const char *v = strstr(log, "verified (handshake completed)");
    assert_non_null(v);
    /* Verified once per endpoint: the OSCORE request found it verified. */
    assert_null(strstr(log, "verified (OSCORE)"));
    assert_null(strstr(log, "verified (Echo)"));
    /* The initiator's endpoint, from the log line. */
    const char *pe = NULL;
    for (const char *q = log; (q = strstr(q, "peer=127.0.0.1:")) && q < v; q++)
        pe = q;
    assert_non_null(pe);
    unsigned port = (unsigned)strtoul(pe + 15, NULL, 10);
    free(log);
    struct client cl;
    client_open(&cl, (uint16_t)port);
    uint8_t m1[256], msg[512], resp[2048];
    size_t m1_len = message_1(3, 0, m1, sizeof m1);
    size_t len = edhoc_post(msg, cl.mid++, NULL, 0, -1, m1, m1_len);
    long n = client_exchange(&cl, resp_proc.port, msg, len, resp, sizeof resp);
    struct resp r;
    assert_true(n > 0 && coap_parse(resp, (size_t)n, &r));
    assert_int_equal(r.code, CODE_CHANGED);
    assert_true(factor_of(&cl) > FACTOR);
    close(cl.fd);
    /* Another port of the same address is another endpoint (RFC 9175:
     * "once per endpoint"): limited. */
    struct client other;
    client_open(&other, 0);
    len = edhoc_post(msg, other.mid++, NULL, 0, -1, m1, m1_len);
    n = client_exchange(&other, resp_proc.port, msg, len, resp, sizeof resp);
    assert_true(n > 0 && coap_parse(resp, (size_t)n, &r));
    assert_int_equal(r.code, CODE_UNAUTHORIZED);
    close(other.fd);
    log = stop_responder();
    assert_non_null(strstr(log, "endpoints_verified=1 "));
    assert_non_null(strstr(log, "answers_held_back=1 "));
    free(log);
}

/* --echo stays as it was (every message_1 without a valid Echo value is
 * challenged, within the budget or not), and its challenges are counted
 * with the limit's: "every Echo challenge [is] counted in the responder's
 * stats" (issue 15). SIGUSR1 logs the counts too. */
static void test_echo_option_counted(void **state)
{
    (void)state;
    start_responder("echo", "--id-cred kid --echo");
    /* A message_2 with kid fits the budget: the 4.01 is --echo's. */
    struct client c;
    client_open(&c, 0);
    uint8_t m1[256], msg[512], resp[2048];
    size_t m1_len = message_1(3, 0, m1, sizeof m1);
    size_t len = edhoc_post(msg, c.mid++, NULL, 0, -1, m1, m1_len);
    long n = client_exchange(&c, resp_proc.port, msg, len, resp, sizeof resp);
    struct resp r;
    assert_true(n > 0 && coap_parse(resp, (size_t)n, &r));
    assert_int_equal(r.code, CODE_UNAUTHORIZED);
    close(c.fd);
    kill(resp_proc.pid, SIGUSR1);
    char *log = NULL;
    for (int i = 0; i < 100; i++) {
        free(log);
        log = net_read_file(resp_proc.log);
        if (log && strstr(log, "SIGUSR1: amplification_factor=3 "))
            break;
        net_sleep_ms(20);
    }
    assert_non_null(strstr(log, "SIGUSR1: amplification_factor=3 answers_held_back=0 "
                                "answers_withheld=0 echo_challenges=1 "));
    free(log);
    log = stop_responder();
    assert_non_null(strstr(log, "Echo challenge peer=127.0.0.1:"));
    free(log);
}

/* ---- Load-triggered address verification (RFC 9528 Section 9.7) ---- */

#define CODE_UNAVAILABLE 0xa3 /* 5.03 */

/* A stat of the "stopping:" line ("name=value "), or -1. */
static long stop_stat(const char *log, const char *name)
{
    const char *line = strstr(log, "stopping: amplification_factor=");
    char pat[80];
    snprintf(pat, sizeof pat, " %s=", name);
    const char *p = line ? strstr(line, pat) : NULL;
    return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* One message_1 (method 3) from client c: the answer's code; with
 * answer_echo a 4.01 + Echo is answered as RFC 9175 Section 2.3 says
 * ("the client SHOULD resend the original request with the addition of
 * an Echo option") and *challenged set. */
static uint8_t send_message_1(struct client *c, uint16_t port, bool answer_echo, bool *challenged)
{
    uint8_t m1[256], msg[512], resp[2048];
    size_t m1_len = message_1(3, 0, m1, sizeof m1);
    size_t len = edhoc_post(msg, c->mid++, NULL, 0, -1, m1, m1_len);
    long n = client_exchange(c, port, msg, len, resp, sizeof resp);
    struct resp r;
    assert_true(n > 0 && coap_parse(resp, (size_t)n, &r));
    if (challenged)
        *challenged = r.code == CODE_UNAUTHORIZED;
    if (r.code != CODE_UNAUTHORIZED || !answer_echo)
        return r.code;
    assert_non_null(r.echo);
    assert_int_equal(r.echo_len, 8);
    uint8_t echo[8];
    memcpy(echo, r.echo, 8);
    len = edhoc_post(msg, c->mid++, echo, 8, -1, m1, m1_len);
    n = client_exchange(c, port, msg, len, resp, sizeof resp);
    assert_true(n > 0 && coap_parse(resp, (size_t)n, &r));
    return r.code;
}

/* RFC 9528 Section 9.7 ("the CoAP server can use the Echo option defined
 * in [RFC9175] which forces the CoAP client to demonstrate reachability
 * at its apparent network address") and Appendix A.2 ("the CoAP server
 * MAY respond to the first POST request with a 4.01 (Unauthorized)
 * containing an Echo option"), applied under load (issue 15: "every
 * message_1 from an unverified endpoint is answered with the stateless
 * 4.01 + Echo before any crypto or pending slot, whatever the credential
 * type"). With kid, message_2 fits 3 times message_1, so a new endpoint
 * gets it at once -- until the pending table is full: then the next new
 * endpoint gets 4.01 + Echo, and its retry with the Echo value proceeds
 * (a verified endpoint goes on as normal), evicting the oldest
 * unverified handshake. --pressure-rate 0 turns it off: the same
 * message_1 gets message_2 at once. */
static void test_pressure_challenges_kid(void **state)
{
    (void)state;
    for (int off = 0; off < 2; off++) {
        start_responder(off ? "pressure-off" : "pressure",
                        off ? "--id-cred kid --max-pending 4 --pressure-rate 0"
                            : "--id-cred kid --max-pending 4");
        struct client c[5];
        for (int k = 0; k < 4; k++) {
            client_open(&c[k], 0);
            bool challenged = true;
            /* No pressure yet: message_2 at once, no Echo round trip. */
            assert_int_equal(send_message_1(&c[k], resp_proc.port, false, &challenged),
                             CODE_CHANGED);
            assert_false(challenged);
        }
        /* The table is full: a new unverified endpoint would push out a
         * handshake in progress. */
        client_open(&c[4], 0);
        bool challenged = false;
        uint8_t code = send_message_1(&c[4], resp_proc.port, true, &challenged);
        assert_int_equal(challenged, !off);
        assert_int_equal(code, CODE_CHANGED);
        if (!off) {
            /* The 4.01 is all it got before it proved its address: within
             * 3 times what it sent. */
            assert_true(c[4].received <= FACTOR * c[4].sent);
        }
        for (int k = 0; k < 5; k++)
            close(c[k].fd);
        char *log = stop_responder();
        assert_int_equal(stop_stat(log, "pressure_challenges"), off ? 0 : 1);
        assert_int_equal(stop_stat(log, "pressure_periods"), off ? 0 : 1);
        assert_int_equal(stop_stat(log, "echo_challenges"), off ? 0 : 1);
        /* Either way the fifth handshake took the oldest unverified one's
         * slot: its own endpoint was verified (or nobody was). */
        assert_int_equal(stop_stat(log, "pending_evicted_unverified"), 1);
        assert_int_equal(stop_stat(log, "pending_evicted_reachable"), 0);
        if (!off) {
            /* Logged at -v. */
            assert_int_equal(net_count(log, "under pressure (4 of 4 handshakes pending): "
                                            "message_1 from unverified peer="),
                             1);
            assert_int_equal(net_count(log, "verified (Echo)"), 1);
        }
        free(log);
    }
}

static bool evicted_line_port(const char **cursor, unsigned *port)
{
    const char *p = strstr(*cursor, "handshake peer=127.0.0.1:");
    while (p) {
        const char *eol = strchr(p, '\n');
        const char *ev = strstr(p, " evicted (max pending");
        if (ev && (!eol || ev < eol)) {
            *port = (unsigned)strtoul(p + strlen("handshake peer=127.0.0.1:"), NULL, 10);
            *cursor = ev;
            return true;
        }
        p = strstr(p + 1, "handshake peer=127.0.0.1:");
    }
    return false;
}

/* Issue 15: "Pending eviction that protects verified peers". RFC 9528
 * Section 9.7: the Echo option "does not protect against a distributed
 * denial-of-service attack made by real, potentially compromised,
 * clients" -- so an address that only answered an Echo ranks below a peer
 * that completed EDHOC from its address. --max-pending 4: the
 * authenticated peer A starts a handshake, 3 unverified sources fill the
 * table, then 6 sources that answer the Echo take slots. Eviction takes
 * the oldest of the lowest rank: the 3 unverified first (sources 1, 2, 3
 * in that order), then the Echo-verified ones oldest first (4, 5, 6);
 * A's handshake is never evicted. Then A starts 3 more: the table holds
 * only A's, and a new Echo-verified source is refused with 5.03 (RFC
 * 7252 Section 5.9.3.4) rather than evict a peer ranked above it. */
static void test_pressure_protects_authenticated(void **state)
{
    (void)state;
    start_responder("protect", "--id-cred kid --max-pending 4");
    char *out;
    int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method 3 --request \"GET /time\"",
                     resp_proc.port);
    if (rc != 0)
        fail_msg("exit %d\n%s", rc, out);
    free(out);
    char *log = net_read_file(resp_proc.log);
    const char *v = strstr(log, " verified (handshake completed)");
    assert_non_null(v);
    const char *pe = NULL;
    for (const char *q = log; (q = strstr(q, "peer=127.0.0.1:")) && q < v; q++)
        pe = q;
    assert_non_null(pe);
    unsigned a_port = (unsigned)strtoul(pe + 15, NULL, 10);
    free(log);

    struct client a;
    client_open(&a, (uint16_t)a_port);
    bool challenged = true;
    assert_int_equal(send_message_1(&a, resp_proc.port, false, &challenged), CODE_CHANGED);
    assert_false(challenged);
    struct client src[9];
    for (int k = 0; k < 3; k++) {
        client_open(&src[k], 0);
        assert_int_equal(send_message_1(&src[k], resp_proc.port, false, &challenged), CODE_CHANGED);
        assert_false(challenged);
    }
    for (int k = 3; k < 9; k++) {
        client_open(&src[k], 0);
        assert_int_equal(send_message_1(&src[k], resp_proc.port, true, &challenged), CODE_CHANGED);
        assert_true(challenged); /* the table is full: pressure */
    }
    /* A is verified: no Echo, whatever the pressure. Its 3 new handshakes
     * push out the 3 newest Echo-verified ones (7, 8, 9), oldest first. */
    for (int k = 0; k < 3; k++) {
        assert_int_equal(send_message_1(&a, resp_proc.port, false, &challenged), CODE_CHANGED);
        assert_false(challenged);
    }
    struct client late;
    client_open(&late, 0);
    assert_int_equal(send_message_1(&late, resp_proc.port, true, &challenged), CODE_UNAVAILABLE);
    assert_true(challenged);

    log = stop_responder();
    /* The exact order: sources 1..9 by their ports, never A. */
    const char *cursor = log;
    unsigned port;
    for (int k = 0; k < 9; k++) {
        assert_true(evicted_line_port(&cursor, &port));
        if (port != src[k].local_port)
            fail_msg("eviction %d: port %u, expected source %d (port %u)", k + 1, port, k + 1,
                     src[k].local_port);
    }
    assert_false(evicted_line_port(&cursor, &port));
    assert_int_equal(stop_stat(log, "pending_evicted_unverified"), 3);
    assert_int_equal(stop_stat(log, "pending_evicted_reachable"), 6);
    assert_int_equal(stop_stat(log, "pending_evicted_authenticated"), 0);
    assert_int_equal(stop_stat(log, "pending_refused"), 1);
    assert_int_equal(stop_stat(log, "pressure_challenges"), 7);
    assert_int_equal(net_count(log, "refused: max pending 4 reached"), 1);
    free(log);
    close(a.fd);
    close(late.fd);
    for (int k = 0; k < 9; k++)
        close(src[k].fd);
}

/* A number of the first row of table `table` in compact JSON, or NAN. */
static double json_table_num(const char *compact, const char *table, const char *key)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"name\":\"%s\"", table);
    const char *t = strstr(compact, pat);
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = t ? strstr(t, pat) : NULL;
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

/* Datagrams the kernel dropped for a full receive buffer, host-wide
 * (/proc/net/snmp, Udp RcvbufErrors), or -1 when it cannot be read. */
static long udp_rcvbuf_errors(void)
{
    FILE *f = fopen("/proc/net/snmp", "r");
    if (!f)
        return -1;
    char head[1024], vals[1024];
    long found = -1;
    while (found < 0 && fgets(head, sizeof head, f)) {
        if (strncmp(head, "Udp: ", 5) || !fgets(vals, sizeof vals, f))
            continue;
        char *hs = NULL, *vs = NULL;
        char *h = strtok_r(head, " \n", &hs), *v = strtok_r(vals, " \n", &vs);
        while (h && v) {
            if (!strcmp(h, "RcvbufErrors"))
                found = strtol(v, NULL, 10);
            h = strtok_r(NULL, " \n", &hs);
            v = strtok_r(NULL, " \n", &vs);
        }
    }
    fclose(f);
    return found;
}

/* The failures of a load report by cause (load_failures rows, compact
 * JSON): their total, and in *other those whose cause is not a timeout. */
static long load_failures(const char *compact, long *other)
{
    *other = 0;
    const char *t = strstr(compact, "\"name\":\"load_failures\"");
    const char *rows = t ? strstr(t, "\"rows\":[") : NULL;
    const char *end = rows ? strchr(rows, ']') : NULL;
    long total = 0;
    for (const char *p = rows; p && end && (p = strstr(p, "\"cause\":\"")) && p < end;) {
        p += strlen("\"cause\":\"");
        bool timeout = !strncmp(p, "timeout\"", 8);
        const char *n = strstr(p, "\"count\":");
        long count = n && n < end ? strtol(n + strlen("\"count\":"), NULL, 10) : 1;
        total += count;
        if (!timeout)
            *other += count;
    }
    return total;
}

/* Issue 15 target: "Under a 20,000-source message_1 flood, legitimate
 * initiators' ... success rate 100%", here with 200 sources against
 * --max-pending 4 (counts from the JSON, not times): sources that ignore
 * the Echo never hold a slot once the table is full; sources that answer
 * it (--flood-answer-echo) push out each other, never the peers, which
 * completed handshakes from their addresses in the unloaded phase.
 * That is the responder's choice, and what is asserted: no peer refused,
 * evicted or answered with an error. The kernel's is not: on a machine
 * busy with other work (or with a sanitized responder) the flood fills the
 * responder's socket buffer and a peer's datagram can be dropped before
 * the responder sees it. CoAP repairs that by retransmission (RFC 7252
 * Section 4.2: ACK_TIMEOUT 2 s, doubling), so the peers wait 15 s, room for
 * two retransmissions; a handshake that still fails must be a timeout and
 * is counted against the datagrams the kernel reports dropped for a full
 * buffer in that run (each such failure lost at least three). With no drop,
 * success is 100%. */
static void test_load_flood_success(void **state)
{
    (void)state;
    for (int answer = 0; answer < 2; answer++) {
        start_responder(answer ? "flood-echo" : "flood", "--id-cred kid --max-pending 4");
        char *out;
        long drops0 = udp_rcvbuf_errors();
        int rc = net_cli_run(&out, 180, true,
                             "load coap://127.0.0.1:%u --peers 2 --handshakes 20 "
                             "--requests-per-peer 0 --method 3 --suites 2 --timeout 15 "
                             "--flood-sources 200 --flood-rate 5000%s --json",
                             resp_proc.port, answer ? " --flood-answer-echo" : "");
        long drops = drops0 >= 0 ? udp_rcvbuf_errors() - drops0 : -1;
        if (rc != 0)
            fail_msg("load: exit %d\n%s", rc, out);
        char *c = net_json_compact(out);
        double ok0 = json_table_num(c, "load_flood", "success_unloaded");
        double ok1 = json_table_num(c, "load_flood", "success_flood");
        double sent = json_table_num(c, "load_flood", "sent");
        long not_timeouts = 0, failed = load_failures(c, &not_timeouts);
        print_message("flood of 200 sources%s, --max-pending 4: peers' success %.2f unloaded, "
                      "%.2f flooded (%.0f flood message_1s; %ld failed handshakes, %ld datagrams "
                      "dropped by the kernel)\n",
                      answer ? " answering Echo" : "", ok0, ok1, sent, failed, drops);
        bool all_ok = ok0 == 1.0 && ok1 == 1.0;
        bool explained = not_timeouts == 0 && drops >= 3 * failed;
        if (!(sent > 0 && (all_ok || explained))) {
            /* The whole JSON is longer than cmocka prints: the flood row
             * and why the handshakes failed are what tell. */
            const char *row = strstr(c, "\"name\":\"load_flood\"");
            const char *why = strstr(c, "\"name\":\"load_failures\"");
            fail_msg("success %.3f / %.3f, %ld failures (%ld not timeouts), %ld drops: %.1500s\n"
                     "... %.1500s",
                     ok0, ok1, failed, not_timeouts, drops, row ? row : c,
                     why ? why : "(no failure causes)");
        }
        free(c);
        free(out);
        char *log = stop_responder();
        assert_true(stop_stat(log, "pressure_challenges") > 0);
        /* A peer that completed EDHOC is never pushed out by the flood.
         * When the kernel dropped its datagrams (the case explained above),
         * the peer starts a new handshake while its lost one still holds a
         * slot, and with --max-pending 4 its own stale handshakes make
         * room for each other (src/server/pending.c): allowed only then. */
        if (all_ok)
            assert_int_equal(stop_stat(log, "pending_evicted_authenticated"), 0);
        assert_int_equal(stop_stat(log, "pending_refused"), 0);
        if (answer)
            assert_true(stop_stat(log, "pending_evicted_reachable") > 0);
        free(log);
    }
}

static int group_setup(void **state)
{
    (void)state;
    return net_make_dir("amp");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_raw_message_1_per_mode, net_test_teardown),
        cmocka_unit_test_teardown(test_initiator_each_mode, net_test_teardown),
        cmocka_unit_test_teardown(test_pad_message_1, net_test_teardown),
        cmocka_unit_test_teardown(test_blockwise_budget, net_test_teardown),
        cmocka_unit_test_teardown(test_oscore_verifies, net_test_teardown),
        cmocka_unit_test_teardown(test_echo_option_counted, net_test_teardown),
        cmocka_unit_test_teardown(test_pressure_challenges_kid, net_test_teardown),
        cmocka_unit_test_teardown(test_pressure_protects_authenticated, net_test_teardown),
        cmocka_unit_test_teardown(test_load_flood_success, net_test_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, net_group_teardown);
}
