/*
 * End-to-end tests of `edhoc-cli initiator` against a real `edhoc-cli
 * responder` on loopback: every method with suites 0 and 2 and each
 * ID_CRED type, then OSCORE requests; message_4; the RFC 9668 combined
 * request; bare framing and its detection (RFC 9528 Appendix A.2); the
 * Echo before message_1; block-wise x5chain; two credentials; the exit
 * code of each failure; 50 initiators at once.
 */
#include "cli_net_test_common.h"

/* A member of the first message named name: its number, -1 for null, -2
 * when there is no such message or member. */
static long msg_field(const char *f, const char *name, const char *field)
{
    char q[80], path[200], v[600];
    snprintf(q, sizeof q, "\"%s\"", name);
    int i = index_of(f, "messages", "name", q, 0);
    snprintf(path, sizeof path, "messages.%d.%s", i, field);
    if (i < 0 || !get(f, path, v, sizeof v))
        return -2;
    return strcmp(v, "null") ? strtol(v, NULL, 10) : -1;
}

static long json_edhoc_bytes(const char *f, const char *name)
{
    return msg_field(f, name, "edhoc_bytes");
}

/* code: "2.05 Content", the code and its name (members code and
 * code_name of the report). */
static void assert_response(const char *f, const char *request, const char *code)
{
    char v[200], want[200];
    if (!response_field(f, request, "code", v, sizeof v))
        fail_msg("no response to %s in:%s", request, f);
    snprintf(want, sizeof want, "\"%.4s\"", code);
    assert_string_equal(v, want);
    assert_true(response_field(f, request, "code_name", v, sizeof v));
    snprintf(want, sizeof want, "\"%s\"", code + 5);
    assert_string_equal(v, want);
}

static void test_method3_suite2_kid(void **state)
{
    (void)state;
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --method 3 --suites 2 --id-cred kid --json "
                     "--timeout 10",
                     main_responder.port);
    char *f = expect_ok_json(out, rc);
    assert_has(f, "suite=2");
    assert_has(f, "id_cred_i=\"kid\"");
    assert_has(f, "id_cred_r=\"kid\"");
    /* RFC 9529 trace 2 sizes with one-byte connection identifiers. */
    assert_int_equal(json_edhoc_bytes(f, "message_1"), 37);
    assert_int_equal(json_edhoc_bytes(f, "message_2"), 45);
    assert_int_equal(json_edhoc_bytes(f, "message_3"), 19);
    /* Each EDHOC message as hex (the man page promised it; issue 14 item
     * 7): message_1 of method 3 suite 2 starts with METHOD 3, SUITES_I 2
     * and the 32-byte G_X (RFC 9528 Section 5.2.1). */
    char hex[200];
    assert_true(get(f, "messages.0.hex", hex, sizeof hex));
    assert_int_equal(strlen(hex), 2 + 2 * 37);
    assert_true(strncmp(hex, "\"03025820", 9) == 0);
    /* A row that carries no EDHOC message says so with null, not -1. */
    assert_int_equal(json_edhoc_bytes(f, "OSCORE request 1"), -1);
    assert_true(has(f, "messages.4.hex=null"));
    /* CoAP adds header, token, Uri-Path, Content-Format and the prefix. */
    long m1_coap = msg_field(f, "message_1", "coap_bytes");
    assert_true(m1_coap > 37 + 4 + 19);
    assert_int_equal(msg_field(f, "message_1", "datagrams"), 1);
    /* The default request and its decrypted response: payload_hex always,
     * payload_text as the text is printable. */
    assert_response(f, "GET /.well-known/core", "2.05 Content");
    char text[600];
    assert_true(response_field(f, "GET /.well-known/core", "payload_text", text, sizeof text));
    assert_non_null(strstr(text, "core.edhoc"));
    assert_true(response_field(f, "GET /.well-known/core", "payload_hex", text, sizeof text));
    assert_has(f, "round_trips=3");
    assert_has(f, "repeat=null");
    assert_has(f, "partial=false");
    free(f);
    free(out);
    /* --repeat: more handshakes on one socket, counted. */
    rc = CLI_RUN(&out, 60, "initiator coap://127.0.0.1:%u --repeat 20 --json", main_responder.port);
    f = expect_ok_json(out, rc);
    assert_has(f, "repeat.handshakes=20");
    assert_has(f, "repeat.ok=20");
    assert_has(f, "repeat.failed=0");
    free(f);
    free(out);
}

static void test_method0_suite2_x5t_requests(void **state)
{
    (void)state;
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --method 0 --suites 2 --id-cred x5t --json "
                     "--request \"GET /time\" --request \"POST /echo hello-oscore\"",
                     main_responder.port);
    char *f = expect_ok_json(out, rc);
    assert_has(f, "id_cred_i=\"x5t\"");
    assert_has(f, "id_cred_r=\"x5t\"");
    assert_response(f, "GET /time", "2.05 Content");
    assert_response(f, "POST /echo hello-oscore", "2.04 Changed");
    char v[200];
    assert_true(response_field(f, "POST /echo hello-oscore", "payload_text", v, sizeof v));
    assert_string_equal(v, "\"hello-oscore\"");
    /* The same bytes as hex: "hello-oscore". */
    assert_true(response_field(f, "POST /echo hello-oscore", "payload_hex", v, sizeof v));
    assert_string_equal(v, "\"68656c6c6f2d6f73636f7265\"");
    free(f);
    free(out);
    /* A 4.xx answer is the request failing: exit 1, as `coap` (one
     * exit-code contract, EXIT STATUS of edhoc-cli(1); RFC 7252 Section
     * 5.9.2: "a client error"), though the answer came protected and is
     * reported with the others. */
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --method 0 --suites 2 --id-cred x5t --json "
                 "--request \"GET /time\" --request \"GET /nothing\"",
                 main_responder.port);
    if (rc != 1 || !strstr(out, "GET /nothing: the server answered 4.04 Not Found") ||
        !strstr(out, "\"outcome\": \"failed\""))
        fail_msg("initiator with a 4.04 answer: exit %d\n%s", rc, out);
    assert_valid(out, "initiator");
    f = flat(out);
    assert_response(f, "GET /time", "2.05 Content");
    assert_response(f, "GET /nothing", "4.04 Not Found");
    free(f);
    free(out);
    /* The text report names every message with both sizes. */
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method 0 --suites 2",
                 main_responder.port);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "message_2"));
    assert_non_null(strstr(out, "CoAP/UDP"));
    assert_non_null(strstr(out, "Outcome: ok, suite 2"));
    free(out);
}

static void test_matrix(void **state)
{
    (void)state;
    static const char *types[] = {"kid", "kccs", "x5t", "x5chain"};
    int runs = 0;
    for (int m = 0; m <= 3; m++) {
        bool i_signs = m == 0 || m == 1;
        for (int si = 0; si < 2; si++) {
            int suite = si ? 2 : 0;
            for (int t = 0; t < 4; t++) {
                /* The built-in signature credentials are certificates, the
                 * static DH ones CCSs: each is named by what it can be. */
                bool fits = i_signs ? t != 1 : t <= 1;
                if (!fits)
                    continue;
                char *out;
                int rc = CLI_RUN(&out, 30,
                                 "initiator coap://127.0.0.1:%u --method %d --suites %d "
                                 "--id-cred %s --json --request \"POST /echo m%ds%d%s\"",
                                 main_responder.port, m, suite, types[t], m, suite, types[t]);
                if (rc != 0)
                    fail_msg("method %d suite %d %s: exit %d\n%s", m, suite, types[t], rc, out);
                char *f = expect_ok_json(out, rc);
                char want[96];
                snprintf(want, sizeof want, "id_cred_i=\"%s\"", types[t]);
                assert_has(f, want);
                snprintf(want, sizeof want, "suite=%d", suite);
                assert_has(f, want);
                snprintf(want, sizeof want, "responses.0.payload_text=\"m%ds%d%s\"", m, suite,
                         types[t]);
                assert_has(f, want);
                free(f);
                free(out);
                runs++;
            }
        }
    }
    assert_int_equal(runs, 20);
}

static void test_message_4(void **state)
{
    (void)state;
    static struct net_proc r4;
    assert_int_equal(net_responder_start(&r4, "m4", "--listen 127.0.0.1:0 --message-4"), 0);
    char *out;
    int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --message-4 --json", r4.port);
    char *f = expect_ok_json(out, rc);
    assert_true(json_edhoc_bytes(f, "message_4") >= 1);
    free(f);
    free(out);
    /* Expecting message_4 from a responder that sends none fails clearly. */
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --message-4", main_responder.port);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "message_4 expected"));
    free(out);
    net_proc_stop(&r4, SIGTERM, 5000);
}

static void test_combined_request(void **state)
{
    (void)state;
    char *out;
    int rc =
        CLI_RUN(&out, 30,
                "initiator coap://127.0.0.1:%u --combined --json --request \"POST /echo comb\" "
                "--request \"GET /time\"",
                main_responder.port);
    char *f = expect_ok_json(out, rc);
    assert_has(f, "combined=true");
    assert_true(msg_field(f, "message_3 + OSCORE request 1", "edhoc_bytes") > 0);
    assert_has(f, "responses.0.payload_text=\"comb\"");
    assert_response(f, "GET /time", "2.05 Content");
    /* Two round trips for EDHOC + the first request, one more for /time. */
    assert_has(f, "round_trips=3");
    free(f);
    free(out);
    char *log = net_read_file(main_responder.log);
    assert_non_null(strstr(log, "outcome=ok: combined request"));
    free(log);
}

static void test_bare_framing(void **state)
{
    (void)state;
    char *out;
    int rc =
        CLI_RUN(&out, 30, "initiator coap://[::1]:%u --framing bare --json --request \"GET /time\"",
                main_responder.port6);
    char *f = expect_ok_json(out, rc);
    assert_has(f, "framing=\"bare\"");
    /* No true prefix and no Content-Format: 3 bytes less than A.2. */
    long bare = msg_field(f, "message_1", "coap_bytes");
    free(f);
    free(out);
    rc = CLI_RUN(&out, 30, "initiator coap://[::1]:%u --json", main_responder.port6);
    f = expect_ok_json(out, rc);
    long a2 = msg_field(f, "message_1", "coap_bytes");
    assert_int_equal(a2 - bare, 3);
    free(f);
    free(out);
    /* One log line for the bare handshake (C_R may have grown to two bytes
     * by now, so the byte count is not fixed). */
    char *log = net_read_file(main_responder.log);
    const char *line = strstr(log, "framing=bare bytes=");
    assert_non_null(line);
    const char *eol = strchr(line, '\n');
    const char *ok = strstr(line, "outcome=ok");
    assert_true(ok && (!eol || ok < eol));
    free(log);
    /* Bare with message_4 from a responder that sends it. */
    static struct net_proc r4;
    assert_int_equal(net_responder_start(&r4, "bare4", "--listen 127.0.0.1:0 --message-4"), 0);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --framing bare --message-4 --json",
                 r4.port);
    f = expect_ok_json(out, rc);
    assert_true(json_edhoc_bytes(f, "message_4") >= 1);
    free(f);
    free(out);
    net_proc_stop(&r4, SIGTERM, 5000);
}

/* What a datagram sent to the fake device below was: an RFC 9528
 * Appendix A.2 message_1 (Content-Format 65 and the CBOR true prefix), a
 * bare one (a POST with a payload and no Content-Format), or other. */
enum m1_kind { M1_OTHER, M1_A2, M1_BARE };

static enum m1_kind m1_kind_of(const uint8_t *d, size_t n)
{
    if (n < 4 || (d[0] >> 6) != 1 || d[1] != 0x02)
        return M1_OTHER;
    size_t i = 4 + (d[0] & 0x0f);
    unsigned number = 0;
    bool content_format = false;
    while (i < n && d[i] != 0xff) {
        unsigned delta = d[i] >> 4, len = d[i] & 0x0f;
        i++;
        if (delta == 13)
            delta = 13u + d[i++];
        else if (delta == 14) {
            delta = 269u + (unsigned)(d[i] << 8 | d[i + 1]);
            i += 2;
        }
        if (len == 13)
            len = 13u + d[i++];
        number += delta;
        content_format |= number == 12;
        i += len;
    }
    if (i + 1 >= n)
        return M1_OTHER;
    const uint8_t *payload = d + i + 1;
    if (content_format && payload[0] == 0xf5)
        return M1_A2;
    return content_format ? M1_OTHER : M1_BARE;
}

/* Issue 23, item 7: --framing auto against a device that ignores the A.2
 * POST (no answer, no ACK). libcoap holds a new confirmable request back
 * while one is unacknowledged (NSTART 1, RFC 7252 Section 4.7), so the
 * bare message_1 never left: only retransmissions of the A.2 POST did, at
 * 0, 3, 9 s, and with a new deadline for bare the run took twice
 * --timeout while wall_ms said --timeout. The A.2 exchange is now dropped
 * before the bare attempt (nothing of it is sent after the bare
 * message_1), A.2 has half of --timeout, and --timeout bounds the run.
 * The device is a socket of this test; the kernel stamps each datagram as
 * it arrives, so the span the device saw is compared with the run's own
 * wall_ms, which covers the whole run: it cannot be shorter. */
static void test_framing_auto_silent_a2(void **state)
{
    (void)state;
    uint16_t port = 0;
    int fd = net_silent_socket(&port);
    assert_true(fd >= 0);
    int on = 1;
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on), 0);
    const long timeout_ms = 6000;
    char *out;
    uint64_t t0 = net_now_ms();
    int rc = CLI_RUN(&out, 60,
                     "initiator coap://127.0.0.1:%u --framing auto --timeout %ld --request none "
                     "--json",
                     port, timeout_ms / 1000);
    uint64_t took = net_now_ms() - t0;
    /* Nobody answered: exit 6, "timeout, no response" (--help). */
    if (rc != 6)
        fail_msg("exit %d\n%s", rc, out);
    assert_valid(out, "initiator");
    char *f = flat(out);
    assert_has(f, "framing=\"bare\"");
    assert_has(f, "framing_auto=true");
    char v[600];
    assert_true(get(f, "framing_a2_failure", v, sizeof v));
    assert_non_null(strstr(v, "timeout, no response"));
    assert_true(get(f, "wall_ms", v, sizeof v));
    double wall_ms = atof(v);
    free(f);
    free(out);

    size_t n_a2 = 0, n_bare = 0, a2_after_bare = 0;
    double first_ns = 0, last_ns = 0;
    for (;;) {
        uint8_t d[1500];
        char ctl[256];
        struct iovec iov = {d, sizeof d};
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
        ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);
        if (n < 0)
            break;
        double at_ns = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                struct timespec ts;
                memcpy(&ts, CMSG_DATA(c), sizeof ts);
                at_ns = (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
            }
        }
        assert_true(at_ns > 0);
        if (!first_ns)
            first_ns = at_ns;
        last_ns = at_ns;
        switch (m1_kind_of(d, (size_t)n)) {
        case M1_A2:
            n_a2++;
            a2_after_bare += n_bare > 0;
            break;
        case M1_BARE: n_bare++; break;
        default: fail_msg("an unexpected datagram of %zd bytes", n);
        }
    }
    close(fd);
    /* A.2 first (--framing auto), then the bare message_1, and once it
     * left nothing of the A.2 exchange. */
    assert_true(n_a2 >= 1);
    if (n_bare < 1 || a2_after_bare)
        fail_msg("%zu A.2 datagrams, %zu bare, %zu A.2 after the first bare", n_a2, n_bare,
                 a2_after_bare);
    /* wall_ms is the whole run: at least what the device saw of it. */
    double span_ms = (last_ns - first_ns) / 1e6;
    if (span_ms > wall_ms)
        fail_msg("the device saw %.0f ms of datagrams, the report says wall_ms %.0f", span_ms,
                 wall_ms);
    /* --timeout is a "bound on the whole run" (--help): the run's own
     * figure, with a generous margin for a busy machine, and the
     * process's life as seen from here. */
    assert_true(wall_ms < (double)timeout_ms + 1000);
    assert_true(took < (uint64_t)timeout_ms + 5000);
}

static void test_echo_before_message_1(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "echo", "--listen 127.0.0.1:0 --echo"), 0);
    char *out;
    int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --json", r.port);
    char *f = expect_ok_json(out, rc);
    /* RFC 9175 Section 2.3 / RFC 9528 Appendix A.2: the 4.01 carries an
     * Echo option and the initiator repeats message_1 with it as a new
     * request; each row is one datagram, the 4.01 has a row of its own. */
    assert_true(index_of(f, "messages", "name", "\"message_1\"", 1) > 0);
    assert_int_equal(index_of(f, "messages", "name", "\"message_1\"", 2), -1);
    assert_true(index_of(f, "messages", "name", "\"(4.01 Echo)\"", 0) > 0);
    assert_int_equal(index_of(f, "messages", "name", "\"(4.01 Echo)\"", 1), -1);
    assert_int_equal(msg_field(f, "message_1", "datagrams"), 1);
    assert_int_equal(msg_field(f, "(4.01 Echo)", "datagrams"), 1);
    assert_int_equal(msg_field(f, "message_2", "datagrams"), 1);
    free(f);
    free(out);
    /* Without --echo: one datagram each way. */
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --json", main_responder.port);
    f = expect_ok_json(out, rc);
    assert_int_equal(msg_field(f, "message_1", "datagrams"), 1);
    free(f);
    free(out);
    /* A message_1 without Echo costs the responder no handshake state. */
    char *log = net_read_file(r.log);
    assert_int_equal(net_count(log, "outcome=ok"), 1);
    free(log);
    net_proc_stop(&r, SIGTERM, 5000);
}

static void keygen(const char *args)
{
    char *out;
    int rc = CLI_RUN(&out, 30, "keygen %s", args);
    if (rc)
        fail_msg("keygen %s: %s", args, out);
    free(out);
}

static char pki[256];

/* A root CA, an intermediate CA and two leaves (chains of two). */
static void make_pki(void)
{
    if (pki[0])
        return;
    net_path(pki, sizeof pki, "pki");
    mkdir(pki, 0700);
    char a[2048];
    snprintf(a, sizeof a,
             "--type x509 --curve P-256 --ca --subject root --out-cred %s/root.pem "
             "--out-key %s/root.key",
             pki, pki);
    keygen(a);
    snprintf(a, sizeof a,
             "--type x509 --curve P-256 --ca --subject inter --ca-cert %s/root.pem "
             "--ca-key %s/root.key --out-cred %s/inter.pem --out-key %s/inter.key",
             pki, pki, pki, pki);
    keygen(a);
    for (int i = 0; i < 2; i++) {
        const char *n = i ? "r" : "i";
        snprintf(a, sizeof a,
                 "--type x509 --curve P-256 --subject leaf-%s --ca-cert %s/inter.pem "
                 "--ca-key %s/inter.key --out-cred %s/%s.pem --out-key %s/%s.key",
                 n, pki, pki, pki, n, pki, n);
        keygen(a);
    }
    /* An unrelated self-signed certificate. */
    snprintf(a, sizeof a,
             "--type x509 --curve P-256 --subject stranger --out-cred %s/x.pem "
             "--out-key %s/x.key",
             pki, pki);
    keygen(a);
}

static void test_blockwise_x5chain(void **state)
{
    (void)state;
    make_pki();
    static struct net_proc r;
    char args[1024];
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:0 --cred %s/r.pem --key %s/r.key --trust %s/root.pem "
             "--id-cred x5chain --block-size 64",
             pki, pki, pki);
    assert_int_equal(net_responder_start(&r, "chain", args), 0);
    char *out;
    int rc = CLI_RUN(
        &out, 30,
        "initiator coap://127.0.0.1:%u --method 0 --suites 2 --cred %s/i.pem --key %s/i.key "
        "--trust %s/root.pem --id-cred x5chain --block-size 64 --json",
        r.port, pki, pki, pki);
    char *f = expect_ok_json(out, rc);
    assert_has(f, "id_cred_r=\"x5chain\"");
    /* Two certificates in each ID_CRED: far above one 64-byte block. */
    long m2 = json_edhoc_bytes(f, "message_2");
    long m3 = json_edhoc_bytes(f, "message_3");
    assert_true(m2 > 600 && m3 > 600);
    assert_true(msg_field(f, "message_2", "datagrams") >= m2 / 64);
    /* A message_2 of m2 > 600 bytes is far above 3 times message_1: the
     * responder first verifies the initiator's address with a 4.01 and an
     * Echo option (RFC 9175 Section 2.4 item 3, RFC 9528 Section 9.7;
     * issue 15), so message_1 goes twice and the second exchange carries
     * message_2 and its Block2 follow-ups. */
    assert_true(index_of(f, "messages", "name", "\"(4.01 Echo)\"", 0) >= 0);
    int again = index_of(f, "messages", "name", "\"message_1\"", 1);
    char path[80], v[32];
    snprintf(path, sizeof path, "messages.%d.datagrams", again);
    assert_true(again > 0 && get(f, path, v, sizeof v));
    assert_true(strtol(v, NULL, 10) >= m3 / 64 / 2);
    assert_true(msg_field(f, "message_3", "datagrams") >= m3 / 64);
    free(f);
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);
}

/* A responder with an Ed25519 signature certificate and an X25519 static
 * DH CCS (suite 0 keeps the two apart): each method gets the one it needs. */
static void test_two_credentials(void **state)
{
    (void)state;
    make_pki();
    char a[1024];
    for (int i = 0; i < 2; i++) {
        const char *n = i ? "r" : "i";
        snprintf(a, sizeof a,
                 "--type x509 --curve Ed25519 --subject %s-ed --ca-cert %s/inter.pem "
                 "--ca-key %s/inter.key --out-cred %s/%s25.pem --out-key %s/%s25.key",
                 n, pki, pki, pki, n, pki, n);
        keygen(a);
        snprintf(a, sizeof a,
                 "--type ccs --suite 0 --use dh --kid %s --subject %s-dh "
                 "--out-cred %s/%sdh.ccs --out-key %s/%sdh.key",
                 i ? "0c" : "0d", n, pki, n, pki, n);
        keygen(a);
    }
    static struct net_proc r;
    snprintf(a, sizeof a,
             "--listen 127.0.0.1:0 --cred %s/r25.pem --key %s/r25.key --cred %s/rdh.ccs "
             "--key %s/rdh.key --trust %s/root.pem --trust %s/idh.ccs --suites 0 --id-cred x5chain",
             pki, pki, pki, pki, pki, pki);
    assert_int_equal(net_responder_start(&r, "two", a), 0);
    static const struct {
        int method;
        const char *cred;
    } runs[] = {{0, "i25.pem --key %s/i25.key --id-cred x5chain"},
                {1, "i25.pem --key %s/i25.key --id-cred x5chain"},
                {2, "idh.ccs --key %s/idh.key"},
                {3, "idh.ccs --key %s/idh.key"}};
    for (size_t i = 0; i < 4; i++) {
        char cred[300], *out;
        snprintf(cred, sizeof cred, runs[i].cred, pki);
        int rc = CLI_RUN(&out, 30,
                         "initiator coap://127.0.0.1:%u --method %d --suites 0 --cred %s/%s "
                         "--trust %s/root.pem --trust %s/rdh.ccs --json",
                         r.port, runs[i].method, pki, cred, pki, pki);
        if (rc != 0)
            fail_msg("method %d: exit %d\n%s", runs[i].method, rc, out);
        char *f = expect_ok_json(out, rc);
        /* The responder signs for methods 0 and 2 (its certificate chain)
         * and uses its static DH CCS (by kid: a CCS has no chain) for 1 and 3. */
        const char *want = runs[i].method % 2 ? "id_cred_r=\"kid\"" : "id_cred_r=\"x5chain\"";
        if (!has(f, want))
            fail_msg("method %d: expected %s\n%s", runs[i].method, want, out);
        free(f);
        free(out);
    }
    net_proc_stop(&r, SIGTERM, 5000);
}

static void test_failures(void **state)
{
    (void)state;
    make_pki();
    char *out;
    /* Wrong credential: we trust only a stranger, the responder's x5t
     * names nothing we know. */
    int rc =
        CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method 0 --suites 2 --trust %s/x.pem",
                main_responder.port, pki);
    assert_int_equal(rc, 5);
    assert_non_null(strstr(out, "edhoc-cli initiator: message_2 verification failed"));
    free(out);
    /* Untrusted certificate: the responder cannot verify our chain and
     * answers with an EDHOC error message. */
    static struct net_proc picky;
    char args[1024];
    snprintf(
        args, sizeof args,
        "--listen 127.0.0.1:0 --cred %s/r.pem --key %s/r.key --trust %s/x.pem --id-cred x5chain",
        pki, pki, pki);
    assert_int_equal(net_responder_start(&picky, "picky", args), 0);
    rc = CLI_RUN(
        &out, 30,
        "initiator coap://127.0.0.1:%u --method 0 --suites 2 --cred %s/i.pem --key %s/i.key "
        "--trust %s/root.pem --id-cred x5chain --json",
        picky.port, pki, pki, pki);
    if (rc != 4)
        fail_msg("untrusted certificate: exit %d\n%s", rc, out);
    assert_valid(out, "initiator");
    char *f = flat(out);
    char v[400];
    assert_true(get(f, "error.err_code", v, sizeof v) && strcmp(v, "null"));
    assert_true(get(f, "error.text", v, sizeof v) && strstr(v, "EDHOC error"));
    free(f);
    free(out);
    net_proc_stop(&picky, SIGTERM, 5000);
    /* Dead peer: nothing listens (ICMP), then a socket that never answers. */
    uint64_t t0 = net_now_ms();
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --timeout 3", net_closed_port());
    assert_int_equal(rc, 6);
    assert_non_null(strstr(out, "message_1"));
    free(out);
    uint16_t silent = 0;
    int fd = net_silent_socket(&silent);
    assert_true(fd >= 0);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --timeout 2", silent);
    close(fd);
    assert_int_equal(rc, 6);
    assert_non_null(strstr(out, "timeout"));
    free(out);
    assert_true(net_now_ms() - t0 < 10000);
    /* Bad command line. */
    rc = CLI_RUN(&out, 30, "initiator");
    assert_int_equal(rc, 2);
    free(out);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:1 --request \"BREW /pot\"");
    assert_int_equal(rc, 2);
    free(out);
    /* The responder kept serving through all of it. */
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --json", main_responder.port);
    f = expect_ok_json(out, rc);
    free(f);
    free(out);
    /* --help documents the exit codes. */
    rc = CLI_RUN(&out, 30, "initiator --help");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "6 timeout"));
    assert_non_null(strstr(out, "4 the responder sent an EDHOC error"));
    free(out);
}

static void test_parallel_50(void **state)
{
    (void)state;
    char script[2048];
    snprintf(script, sizeof script,
             "for i in $(seq 50); do %s initiator coap://127.0.0.1:%u --json --timeout 30 "
             "--request \"POST /echo p$i\" > %s/par_$i.out 2>&1 & done; wait; "
             "cat %s/par_*.out",
             cli, main_responder.port, net_dir, net_dir);
    char *out;
    int rc = net_sh(script, &out, 90);
    assert_int_equal(rc, 0);
    int ok = net_count(out, "\"outcome\": \"ok\"");
    if (ok != 50)
        fail_msg("%d of 50 initiators succeeded:\n%s", ok, out);
    /* Each got its own answer back. */
    assert_non_null(strstr(out, "\"payload_text\": \"p1\""));
    assert_non_null(strstr(out, "\"payload_text\": \"p50\""));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_method3_suite2_kid, check_alive),
        cmocka_unit_test_setup(test_method0_suite2_x5t_requests, check_alive),
        cmocka_unit_test_setup(test_matrix, check_alive),
        cmocka_unit_test_setup(test_message_4, check_alive),
        cmocka_unit_test_setup(test_combined_request, check_alive),
        cmocka_unit_test_setup(test_bare_framing, check_alive),
        cmocka_unit_test(test_framing_auto_silent_a2),
        cmocka_unit_test_setup(test_echo_before_message_1, check_alive),
        cmocka_unit_test_setup(test_blockwise_x5chain, check_alive),
        cmocka_unit_test_setup(test_two_credentials, check_alive),
        cmocka_unit_test_setup(test_failures, check_alive),
        cmocka_unit_test_setup(test_parallel_50, check_alive),
    };
    /* One test by name (a glob): CMOCKA_TEST_FILTER=test_load_* */
    if (getenv("CMOCKA_TEST_FILTER"))
        cmocka_set_test_filter(getenv("CMOCKA_TEST_FILTER"));
    return cmocka_run_group_tests_name("cli_net", tests, setup, net_group_teardown);
}
