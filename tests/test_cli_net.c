/*
 * End-to-end tests of `edhoc-cli initiator` and `edhoc-cli coap` against
 * real `edhoc-cli responder` processes on loopback: every method with
 * suites 0 and 2 and each ID_CRED type, then OSCORE requests; message_4;
 * the RFC 9668 combined request; bare framing; suite negotiation;
 * block-wise x5chain; the exit code of each failure; 50 initiators at once;
 * static OSCORE contexts with Observe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <poll.h>

#include "net_test_util.h"
#include "vectors.h"

/* edhoc-cli ARGS, bounded in time. */
#define CLI_RUN(out, timeout_s, ...) net_cli_run(out, timeout_s, false, __VA_ARGS__)

static struct net_proc main_responder;
static const char *cli;

static int setup(void **state)
{
    (void)state;
    cli = net_cli();
    if (net_make_dir("net"))
        return -1;
    return net_responder_start(&main_responder, "main",
                               "--listen 127.0.0.1:0 --listen [::1]:0 -v");
}


/* Between tests: the main responder must still be up. */
static int check_alive(void **state)
{
    (void)state;
    if (main_responder.pid && kill(main_responder.pid, 0) == 0)
        return 0;
    fprintf(stderr, "the main responder died\n");
    return -1;
}


/* ---- Reading the JSON reports ----
 *
 * The output of a command run with --json (standard error may be mixed
 * in: lines before the document and after it) is read with Python's json
 * module and flattened into one line per value, "PATH=VALUE" with PATH the
 * keys and array indexes joined by '.' and VALUE the value as JSON
 * (objects and arrays too, on one line), e.g. "messages.0.edhoc_bytes=37",
 * "suites_r=[2]". An assertion then names a value by its path, whatever
 * the layout of the document. */

static const char flat_py[] =
    "import json, sys\n"
    "lines = open(sys.argv[1]).read().split('\\n')\n"
    "start = next(i for i, l in enumerate(lines) if l.startswith('{'))\n"
    "doc, _ = json.JSONDecoder().raw_decode('\\n'.join(lines[start:]))\n"
    "out = []\n"
    "def walk(path, v):\n"
    "    if path:\n"
    "        out.append(path + '=' + json.dumps(v))\n"
    "    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else []\n"
    "    for k, x in items:\n"
    "        walk(path + '.' + str(k) if path else str(k), x)\n"
    "walk('', doc)\n"
    "print('\\n' + '\\n'.join(out))\n";

/* The flattened document (starts and ends with a newline); the test fails
 * when the output holds no JSON document. */
static char *flat(const char *out)
{
    char py[300], in[300], cmd[800];
    net_path(py, sizeof py, "flat.py");
    net_path(in, sizeof in, "flat.in");
    net_write_file(py, flat_py, 0600);
    net_write_file(in, out, 0600);
    snprintf(cmd, sizeof cmd, "python3 %s %s", py, in);
    char *f;
    if (net_sh(cmd, &f, 30) != 0)
        fail_msg("no JSON document in:\n%s\n%s", out, f);
    return f;
}

/* Whether the flattened document has the line "PATH=VALUE". */
static bool has(const char *f, const char *line)
{
    char pat[1024];
    snprintf(pat, sizeof pat, "\n%s\n", line);
    return strstr(f, pat) != NULL;
}

#define assert_has(f, line)                                                                       \
    do {                                                                                          \
        if (!has(f, line))                                                                        \
            fail_msg("no line '%s' in:%s", line, f);                                              \
    } while (0)

/* The value at path (as JSON text) into val; false when absent. */
static bool get(const char *f, const char *path, char *val, size_t cap)
{
    char pat[300];
    snprintf(pat, sizeof pat, "\n%s=", path);
    const char *p = strstr(f, pat);
    if (!p)
        return false;
    p += strlen(pat);
    size_t n = strcspn(p, "\n");
    snprintf(val, cap, "%.*s", (int)n, p);
    return true;
}

/* The index of the nth element of array whose member key is value (JSON
 * text, e.g. "\"message_1\""), or -1. */
static int index_of(const char *f, const char *array, const char *key, const char *value, int nth)
{
    for (int i = 0; i < 1000; i++) {
        char path[200], v[600];
        snprintf(path, sizeof path, "%s.%d.%s", array, i, key);
        if (!get(f, path, v, sizeof v))
            return -1;
        if (!strcmp(v, value) && nth-- == 0)
            return i;
    }
    return -1;
}

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

/* The response to the --request given as request: its member field as
 * JSON text into val; false when there is none. */
static bool response_field(const char *f, const char *request, const char *field, char *val,
                           size_t cap)
{
    char q[300], path[200];
    snprintf(q, sizeof q, "\"%s\"", request);
    int i = index_of(f, "responses", "request", q, 0);
    snprintf(path, sizeof path, "responses.%d.%s", i, field);
    return i >= 0 && get(f, path, val, cap);
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

/* The JSON document of a command's output (standard error lines around
 * it dropped), for the schema check. */
static char *json_doc(const char *out)
{
    const char *start = out[0] == '{' ? out : strstr(out, "\n{");
    if (!start)
        fail_msg("no JSON document in:\n%s", out);
    if (start != out)
        start++;
    const char *end = strstr(start, "\n}\n");
    size_t n = end ? (size_t)(end - start) + 3 : strlen(start);
    char *doc = malloc(n + 1);
    memcpy(doc, start, n);
    doc[n] = '\0';
    return doc;
}

/* The output holds a document the schema of command accepts. */
static void assert_valid(const char *out, const char *command)
{
    char *doc = json_doc(out);
    if (net_json_valid(doc, command, false))
        fail_msg("%s --json does not match docs/json/%s.schema.json", command, command);
    free(doc);
}

/* A successful initiator run; its report, valid and flattened. */
static char *expect_ok_json(const char *out, int rc)
{
    if (rc != 0)
        fail_msg("initiator failed (exit %d):\n%s", rc, out);
    assert_valid(out, "initiator");
    char *f = flat(out);
    assert_has(f, "outcome=\"ok\"");
    return f;
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
    int rc = CLI_RUN(&out, 30,
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
    int rc = CLI_RUN(&out, 30,
                     "initiator coap://[::1]:%u --framing bare --json --request \"GET /time\"",
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
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
                            .msg_controllen = sizeof ctl};
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

static void test_suite_negotiation(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "suite2", "--listen 127.0.0.1:0 --suites 2"), 0);
    char *out;
    /* Suite 6 first: the responder answers error code 2 with SUITES_R 2. */
    int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method 0 --suites 6,2 --json",
                     r.port);
    char *f = expect_ok_json(out, rc);
    assert_has(f, "attempts=2");
    assert_has(f, "suite=2");
    assert_has(f, "suites_r=[2]");
    int e = index_of(f, "messages", "name", "\"error\"", 0);
    char path[64];
    snprintf(path, sizeof path, "messages.%d.from=\"responder\"", e);
    assert_has(f, path);
    free(f);
    free(out);
    /* No common suite at all: the peer's error, exit code 4. */
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method 0 --suites 0", r.port);
    assert_int_equal(rc, 4);
    assert_non_null(strstr(out, "edhoc-cli initiator:"));
    assert_non_null(strstr(out, "The responder's SUITES_R (error code 2): 2\n"));
    free(out);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method 0 --suites 0 --json", r.port);
    assert_int_equal(rc, 4);
    assert_valid(out, "initiator");
    f = flat(out);
    assert_has(f, "outcome=\"failed\"");
    assert_has(f, "suites_r=[2]");
    assert_has(f, "error.err_code=2");
    assert_has(f, "error.exit_code=4");
    /* No suite agreed: null, not -1 (issue 14 item 7). */
    assert_has(f, "suite=null");
    free(f);
    free(out);
    /* Agreement at the first attempt: no SUITES_R to report. */
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method 0 --suites 2 --json", r.port);
    f = expect_ok_json(out, rc);
    assert_has(f, "suites_r=null");
    free(f);
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);
}

/* SUITES_R names exactly the suites the responder completes for the
 * method, whichever credential serves each: RFC 9528 Section 6.3, "If the
 * Responder does not support any cipher suite in SUITES_I, then it SHOULD
 * include all its supported cipher suites in SUITES_R". A demo responder
 * serving suites 0, 6, 24 and 25 holds four credentials per method (an
 * Ed25519, a P-256, a P-384 and an Ed448 signature key for method 0; an
 * X25519, a P-384 and an X448 static DH key for method 3); SUITES_R used
 * to list those of one of them only ([0] for method 0, [0, 6] for 3).
 * Each suite listed then completes, and each other one gets error code 2. */
static void test_suites_r_is_what_completes(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "suites-r", "--listen 127.0.0.1:0 --suites 0,6,24,25"),
                     0);
    static const int all[] = {0, 1, 2, 3, 4, 5, 6, 24, 25};
    static const int methods[] = {0, 3};
    for (size_t k = 0; k < sizeof methods / sizeof methods[0]; k++) {
        int m = methods[k];
        char *out;
        int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method %d --suites 1 "
                                   "--request none --json",
                         r.port, m);
        if (rc != 4)
            fail_msg("method %d, suite 1: exit %d\n%s", m, rc, out);
        char *f = flat(out);
        assert_has(f, "error.err_code=2");
        if (!has(f, "suites_r=[0, 6, 24, 25]"))
            fail_msg("method %d: SUITES_R is not [0, 6, 24, 25]:%s", m, f);
        free(f);
        free(out);
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
            bool listed = all[i] == 0 || all[i] == 6 || all[i] == 24 || all[i] == 25;
            rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method %d --suites %d "
                                   "--request none --json",
                         r.port, m, all[i]);
            f = flat(out);
            char line[64];
            if (listed) {
                snprintf(line, sizeof line, "suite=%d", all[i]);
                if (rc != 0 || !has(f, line))
                    fail_msg("method %d suite %d is in SUITES_R but does not complete (exit %d):%s",
                             m, all[i], rc, f);
            } else if (rc != 4 || !has(f, "error.err_code=2")) {
                fail_msg("method %d suite %d is not in SUITES_R but got exit %d:%s", m, all[i],
                         rc, f);
            }
            free(f);
            free(out);
        }
    }
    net_proc_stop(&r, SIGTERM, 5000);
}

/* RFC 9528 Section 5.2.3: the Responder accepts message_1 only if the
 * selected suite is the first suite in SUITES_I it supports. Method 2,
 * demo responder with suites 0 (Ed25519 signature) and 6 (P-256
 * signature), initiator preferring 4, 6, 0 (its X25519 static DH key fits
 * all three): error code 2 lists 0 and 6, so the second message_1
 * selects 6 (SUITES_I [4, 6]). It used to list only 0, whose credential
 * answered, and then accepted SUITES_I [4, 6, 0] with suite 0 although it
 * serves 6, which the initiator prefers. */
static void test_suite_negotiation_across_credentials(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "suites-06", "--listen 127.0.0.1:0 --suites 0,6"), 0);
    char *out;
    int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method 2 --suites 4,6,0 "
                               "--request none --json",
                     r.port);
    char *f = expect_ok_json(out, rc);
    assert_has(f, "suites_r=[0, 6]");
    assert_has(f, "attempts=2");
    assert_has(f, "suite=6");
    free(f);
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);
}

/* The demo responder serves suite 25 by default (--suites: "default:
 * all"; the demo set has X448 and Ed448 credentials for both sides):
 * EDHOC only, since RFC 8613 Section 3.2.1 has no HKDF for its SHAKE256
 * (--request none). It used to leave 25 out and answer error code 2. */
static void test_demo_serves_suite_25(void **state)
{
    (void)state;
    for (int m = 0; m <= 3; m++) {
        char *out;
        int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method %d --suites 25 "
                                   "--request none --json",
                         main_responder.port, m);
        char *f = expect_ok_json(out, rc);
        assert_has(f, "suite=25");
        assert_has(f, "attempts=1");
        free(f);
        free(out);
    }
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
    snprintf(a, sizeof a, "--type x509 --curve P-256 --ca --subject root --out-cred %s/root.pem "
                          "--out-key %s/root.key", pki, pki);
    keygen(a);
    snprintf(a, sizeof a, "--type x509 --curve P-256 --ca --subject inter --ca-cert %s/root.pem "
                          "--ca-key %s/root.key --out-cred %s/inter.pem --out-key %s/inter.key",
             pki, pki, pki, pki);
    keygen(a);
    for (int i = 0; i < 2; i++) {
        const char *n = i ? "r" : "i";
        snprintf(a, sizeof a, "--type x509 --curve P-256 --subject leaf-%s --ca-cert %s/inter.pem "
                              "--ca-key %s/inter.key --out-cred %s/%s.pem --out-key %s/%s.key",
                 n, pki, pki, pki, n, pki, n);
        keygen(a);
    }
    /* An unrelated self-signed certificate. */
    snprintf(a, sizeof a, "--type x509 --curve P-256 --subject stranger --out-cred %s/x.pem "
                          "--out-key %s/x.key", pki, pki);
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
    int rc = CLI_RUN(&out, 30,
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
        snprintf(a, sizeof a, "--type x509 --curve Ed25519 --subject %s-ed --ca-cert %s/inter.pem "
                              "--ca-key %s/inter.key --out-cred %s/%s25.pem --out-key %s/%s25.key",
                 n, pki, pki, pki, n, pki, n);
        keygen(a);
        snprintf(a, sizeof a, "--type ccs --suite 0 --use dh --kid %s --subject %s-dh "
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
                {2, "idh.ccs --key %s/idh.key"}, {3, "idh.ccs --key %s/idh.key"}};
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
    int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method 0 --suites 2 --trust %s/x.pem",
                     main_responder.port, pki);
    assert_int_equal(rc, 5);
    assert_non_null(strstr(out, "edhoc-cli initiator: message_2 verification failed"));
    free(out);
    /* Untrusted certificate: the responder cannot verify our chain and
     * answers with an EDHOC error message. */
    static struct net_proc picky;
    char args[1024];
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:0 --cred %s/r.pem --key %s/r.key --trust %s/x.pem --id-cred x5chain",
             pki, pki, pki);
    assert_int_equal(net_responder_start(&picky, "picky", args), 0);
    rc = CLI_RUN(&out, 30,
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

static void test_coap_static_context(void **state)
{
    (void)state;
    char srv[300], cl[300];
    net_path(srv, sizeof srv, "srv.conf");
    net_path(cl, sizeof cl, "client.conf");
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
    char args[600];
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --oscore-context %s", srv);
    assert_int_equal(net_responder_start(&r, "static", args), 0);
    char *out;
    /* Unprotected: 4.01. */
    int rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time", r.port);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "4.01 Unauthorized"));
    free(out);
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s", r.port, cl);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "2.05 Content (OSCORE)"));
    free(out);
    /* A second run continues above the first one's sequence numbers (they
     * are kept in the state directory): answered, not a replay
     * (RFC 8613 Section 7.2). */
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s", r.port, cl);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "2.05 Content (OSCORE)"));
    free(out);
    rc = CLI_RUN(&out, 30,
                 "coap POST coap://127.0.0.1:%u/echo --payload hi --oscore-context %s --seq 50 --json",
                 r.port, cl);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"code\": \"2.04\",\n      \"code_name\": \"Changed\",\n      \"oscore\": true"));
    assert_non_null(strstr(out, "\"payload_text\": \"hi\""));
    free(out);
    /* Observe: three notifications of /counter, each with its own Partial IV. */
    rc = CLI_RUN(&out, 30,
                 "coap GET coap://127.0.0.1:%u/counter --observe 3 --oscore-context %s --seq 60 "
                 "--json --timeout 15",
                 r.port, cl);
    if (rc != 0)
        fail_msg("observe: %d\n%s", rc, out);
    assert_int_equal(net_count(out, "\"code\": \"2.05\",\n      \"code_name\": \"Content\",\n      \"oscore\": true"), 3);
    free(out);
    /* A wrong key: the server cannot decrypt, the client sees an OSCORE error. */
    char bad[300];
    net_path(bad, sizeof bad, "bad.conf");
    net_write_file(bad,
                   "master_secret,hex,\"ff02030405060708090a0b0c0d0e0f10\"\n"
                   "sender_id,hex,\"\"\nrecipient_id,hex,\"01\"\n",
                   0600);
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s --seq 40",
                 r.port, bad);
    assert_int_equal(rc, 7);
    assert_non_null(strstr(out, "4.00"));
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);
}


/* ---- Per-layer accounting and --pcap ---- */

#define LAYER_MSGS 6 /* message_1..3, the 2.04, OSCORE request and response */

/* The values of "field": N (or "field":N) in order, from the first
 * occurrence of start up to the closing bracket of that array. */
static size_t json_series(const char *out, const char *start, const char *field, long *v,
                          size_t max)
{
    const char *p = strstr(out, start);
    if (!p)
        return 0;
    const char *end = strchr(p, ']');
    char f1[64], f2[64];
    snprintf(f1, sizeof f1, "\"%s\": ", field);
    snprintf(f2, sizeof f2, "\"%s\":", field);
    size_t n = 0;
    while (n < max) {
        const char *a = strstr(p, f1), *b = strstr(p, f2);
        const char *q = a && (!b || a < b) ? a : b;
        if (!q || (end && q > end))
            break;
        size_t fl = q == a ? strlen(f1) : strlen(f2);
        v[n++] = strtol(q + fl, NULL, 10);
        p = q + fl;
    }
    return n;
}

struct tshark_pkt {
    long ip_len, ipv6_plen, udp_len, frame_len, sport, dport;
};

/* tshark's lengths of every packet of a capture (-1 for an empty field). */
static size_t tshark_lengths(const char *path, struct tshark_pkt *pk, size_t max)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "tshark -n -r %s -T fields -E separator=, -e ip.len -e ipv6.plen -e udp.length "
             "-e frame.len -e udp.srcport -e udp.dstport 2>/dev/null",
             path);
    char *out;
    if (net_sh(cmd, &out, 30) != 0) {
        free(out);
        return 0;
    }
    size_t n = 0;
    for (char *line = strtok(out, "\n"); line && n < max; line = strtok(NULL, "\n")) {
        long f[6];
        char *p = line;
        for (int k = 0; k < 6; k++) {
            char *e;
            long x = strtol(p, &e, 10);
            f[k] = e == p ? -1 : x;
            p = strchr(e, ',');
            p = p ? p + 1 : e;
        }
        pk[n++] = (struct tshark_pkt){f[0], f[1], f[2], f[3], f[4], f[5]};
    }
    free(out);
    return n;
}

static bool have_tshark(void)
{
    return system("tshark --version >/dev/null 2>&1") == 0;
}

/* One initiator run with --pcap: its JSON numbers per message against
 * tshark's for the same packets and against `edhoc-cli bytes`. */
static void check_capture_run(const struct net_proc *r, bool v6, const char *pcap)
{
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "initiator coap://%s:%u --json --pcap %s --link 802.15.4 --timeout 10",
                     v6 ? "[::1]" : "127.0.0.1", v6 ? r->port6 : r->port, pcap);
    char *f = expect_ok_json(out, rc);
    long coap[LAYER_MSGS + 1], udp[LAYER_MSGS + 1], ip[LAYER_MSGS + 1], frames[LAYER_MSGS + 1],
        link[LAYER_MSGS + 1], dg[LAYER_MSGS + 1], ver[LAYER_MSGS + 1];
    assert_int_equal(json_series(out, "\"messages\": [", "coap_bytes", coap, 7), LAYER_MSGS);
    assert_int_equal(json_series(out, "\"messages\": [", "udp_bytes", udp, 7), LAYER_MSGS);
    assert_int_equal(json_series(out, "\"messages\": [", "ip_bytes", ip, 7), LAYER_MSGS);
    assert_int_equal(json_series(out, "\"messages\": [", "frames", frames, 7), LAYER_MSGS);
    assert_int_equal(json_series(out, "\"messages\": [", "link_bytes", link, 7), LAYER_MSGS);
    assert_int_equal(json_series(out, "\"messages\": [", "datagrams", dg, 7), LAYER_MSGS);
    assert_int_equal(json_series(out, "\"messages\": [", "ip_version", ver, 7), LAYER_MSGS);
    long sum_ip = 0;
    for (int i = 0; i < LAYER_MSGS; i++) {
        assert_int_equal(dg[i], 1);
        assert_int_equal(ver[i], v6 ? 6 : 4);
        assert_int_equal(udp[i], coap[i] + 8);
        assert_int_equal(ip[i], udp[i] + (v6 ? 40 : 20));
        sum_ip += ip[i];
    }
    /* The totals add up; the link is described. */
    long all_ip[2];
    assert_int_equal(json_series(out, "\"all\": {", "ip_bytes", all_ip, 1), 1);
    assert_int_equal(all_ip[0], sum_ip);
    /* The link as numbers, its assumptions in a member of their own. */
    assert_has(f, "link.type=\"802.15.4\"");
    assert_has(f, "link.frame_max=127");
    assert_has(f, "link.mtu=null");
    char desc[600];
    assert_true(get(f, "link.description", desc, sizeof desc));
    assert_true(strncmp(desc, "\"IEEE 802.15.4: 127-byte frames", 31) == 0);
    free(f);
    /* 6LoWPAN by hand (defaults: 25 bytes of MAC header + FCS per frame,
     * 9 bytes IPHC + NHC UDP with CoAP's uncompressible ports, 102 bytes
     * for 6LoWPAN per frame): message_1 is 64 CoAP bytes -> one frame of
     * 25 + 9 + 64 = 98 bytes, whatever the IP version on the host. */
    assert_int_equal(coap[0], 64);
    assert_int_equal(frames[0], 1);
    assert_int_equal(link[0], 98);
    /* The 140-byte OSCORE response (the /.well-known/core listing) is
     * fragmented: FRAG1 25 + 4 + 9 + 88, FRAGN 25 + 5 + 52 = 126 + 82. */
    if (coap[5] == 140) {
        assert_int_equal(frames[5], 2);
        assert_int_equal(link[5], 208);
    }
    if (!have_tshark()) {
        print_message("tshark not installed: capture comparison skipped\n");
        free(out);
        return;
    }
    /* tshark sees the same packets with the same lengths. */
    struct tshark_pkt pk[16];
    size_t np = tshark_lengths(pcap, pk, 16);
    assert_int_equal(np, LAYER_MSGS);
    uint16_t server = v6 ? r->port6 : r->port;
    for (size_t i = 0; i < np; i++) {
        /* Even packets go to the responder, odd ones come back. */
        assert_int_equal(i % 2 ? pk[i].sport : pk[i].dport, server);
        assert_int_equal(pk[i].udp_len, udp[i]);
        assert_int_equal(pk[i].frame_len, ip[i]); /* raw IP link type */
        if (v6)
            assert_int_equal(pk[i].ipv6_plen + 40, ip[i]);
        else
            assert_int_equal(pk[i].ip_len, ip[i]);
    }
    /* Its CoAP dissector decodes all six and the OSCORE dissector two. */
    char *dec;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "tshark -n -r %s -d udp.port==%u,coap -Y coap 2>/dev/null | wc -l",
             pcap, server);
    assert_int_equal(net_sh(cmd, &dec, 30), 0);
    assert_int_equal(atoi(dec), LAYER_MSGS);
    free(dec);
    snprintf(cmd, sizeof cmd, "tshark -n -r %s -d udp.port==%u,coap -Y oscore 2>/dev/null | wc -l",
             pcap, server);
    assert_int_equal(net_sh(cmd, &dec, 30), 0);
    assert_int_equal(atoi(dec), 2);
    free(dec);
    /* `edhoc-cli bytes` on the capture: the same numbers per message. */
    char *b;
    rc = CLI_RUN(&b, 30, "bytes %s --json --link 802.15.4", pcap);
    assert_int_equal(rc, 0);
    long bc[8], bu[8], bi[8], bf[8], bl[8];
    assert_int_equal(net_json_valid(b, "bytes", false), 0);
    assert_int_equal(json_series(b, "\"messages\": [", "coap_bytes", bc, 8), LAYER_MSGS);
    assert_int_equal(json_series(b, "\"messages\": [", "udp_bytes", bu, 8), LAYER_MSGS);
    assert_int_equal(json_series(b, "\"messages\": [", "ip_bytes", bi, 8), LAYER_MSGS);
    assert_int_equal(json_series(b, "\"messages\": [", "frames", bf, 8), LAYER_MSGS);
    assert_int_equal(json_series(b, "\"messages\": [", "link_bytes", bl, 8), LAYER_MSGS);
    for (int i = 0; i < LAYER_MSGS; i++) {
        assert_int_equal(bc[i], coap[i]);
        assert_int_equal(bu[i], udp[i]);
        assert_int_equal(bi[i], ip[i]);
        assert_int_equal(bf[i], frames[i]);
        assert_int_equal(bl[i], link[i]);
    }
    free(b);
    free(out);
}

/* The lines tshark prints for the packets of one initiator port. */
static char *tshark_flow(const char *pcap, long port)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd,
             "tshark -n -r %s -Y \"udp.port==%ld\" -T fields -e ip.src -e ipv6.src -e udp.srcport "
             "-e ip.dst -e ipv6.dst -e udp.dstport -e udp.length -e udp.payload 2>/dev/null",
             pcap, port);
    char *out;
    if (net_sh(cmd, &out, 30) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

static void test_layers_and_pcap(void **state)
{
    (void)state;
    struct net_proc r;
    char rpcap[300], p4[300], p6[300];
    net_path(rpcap, sizeof rpcap, "responder.pcap");
    net_path(p4, sizeof p4, "initiator4.pcap");
    net_path(p6, sizeof p6, "initiator6.pcap");
    char args[600];
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:0 --listen [::1]:0 --pcap %s --link 802.15.4", rpcap);
    assert_int_equal(net_responder_start(&r, "layers", args), 0);
    check_capture_run(&r, false, p4);
    check_capture_run(&r, true, p6);
    /* SIGTERM: the responder flushes its capture and logs each handshake
     * with its bytes per layer. */
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    char *log = net_read_file(r.log);
    assert_non_null(log);
    assert_int_equal(net_count(log, "bytes=101 outcome=ok; datagrams=4 coap_bytes=168 "
                                    "udp_bytes=200 ip_bytes=280 ip=IPv4 frames=4 link_bytes=304"),
                     1);
    assert_int_equal(net_count(log, "bytes=101 outcome=ok; datagrams=4 coap_bytes=168 "
                                    "udp_bytes=200 ip_bytes=360 ip=IPv6 frames=4 link_bytes=304"),
                     1);
    free(log);
    if (!have_tshark())
        return;
    /* The responder's capture holds the same datagrams (addresses, ports,
     * payloads) as each initiator's, seen from the other end. */
    const char *caps[2] = {p4, p6};
    for (int k = 0; k < 2; k++) {
        struct tshark_pkt pk[16];
        assert_int_equal(tshark_lengths(caps[k], pk, 16), LAYER_MSGS);
        char *mine = tshark_flow(caps[k], pk[0].sport);
        char *theirs = tshark_flow(rpcap, pk[0].sport);
        assert_non_null(mine);
        assert_non_null(theirs);
        assert_int_equal(net_count(mine, "\n"), LAYER_MSGS);
        assert_string_equal(mine, theirs);
        free(mine);
        free(theirs);
    }
}

/* --allow-unprotected: the same resources without OSCORE (a CoAP-only
 * device test, a like-for-like baseline); unknown paths stay 4.04, EDHOC
 * and OSCORE keep working beside it. */
static void test_allow_unprotected(void **state)
{
    (void)state;
    struct net_proc r;
    assert_int_equal(net_responder_start(&r, "plain", "--listen 127.0.0.1:0 --allow-unprotected"),
                     0);
    char *out;
    int rc = CLI_RUN(&out, 30, "coap POST coap://127.0.0.1:%u/echo --payload hello --json",
                     r.port);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"code\": \"2.04\",\n      \"code_name\": \"Changed\",\n      \"oscore\": false"));
    assert_non_null(strstr(out, "\"payload_text\": \"hello\""));
    free(out);
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/.well-known/core", r.port);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "2.05 Content"));
    assert_non_null(strstr(out, "</.well-known/edhoc>"));
    free(out);
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/nothing", r.port);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "4.04"));
    free(out);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method 3 --suites 2 --timeout 10",
                 r.port);
    assert_int_equal(rc, 0);
    free(out);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    char *log = net_read_file(r.log);
    assert_non_null(strstr(log, "--allow-unprotected: the resources answer requests without"));
    free(log);
}

/* A responder bound to the wildcard addresses writes the address the
 * kernel used towards each peer (not 0.0.0.0 or ::), for every datagram of
 * several handshakes in a row, over both families. */
static void test_wildcard_pcap_addresses(void **state)
{
    (void)state;
    if (!have_tshark())
        skip();
    struct net_proc r;
    char rpcap[300];
    net_path(rpcap, sizeof rpcap, "wildcard.pcap");
    char args[600];
    snprintf(args, sizeof args, "--listen 0.0.0.0:0 --listen [::]:0 --pcap %s", rpcap);
    assert_int_equal(net_responder_start(&r, "wildcard", args), 0);
    for (int i = 0; i < 3; i++) {
        char *out;
        int rc = CLI_RUN(&out, 30, "initiator coap://%s:%u --method 3 --suites 2 --timeout 10",
                         i == 1 ? "[::1]" : "127.0.0.1", i == 1 ? r.port6 : r.port);
        assert_int_equal(rc, 0);
        free(out);
    }
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "tshark -n -r %s -T fields -e ip.src -e ip.dst -e ipv6.src -e ipv6.dst 2>/dev/null",
             rpcap);
    char *out;
    assert_int_equal(net_sh(cmd, &out, 30), 0);
    /* 3 handshakes x 4 datagrams + the OSCORE request and response each. */
    assert_int_equal(net_count(out, "\n"), 18);
    assert_int_equal(net_count(out, "127.0.0.1\t127.0.0.1\t\t\n"), 12);
    assert_int_equal(net_count(out, "\t\t::1\t::1\n"), 6);
    assert_null(strstr(out, "0.0.0.0"));
    free(out);
}

/* `coap --pcap`: the request and response as sent, on a bad path too. */
static void test_coap_pcap(void **state)
{
    (void)state;
    char pcap[300];
    net_path(pcap, sizeof pcap, "coap.pcap");
    char *out;
    int rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/.well-known/core --pcap %s",
                     main_responder.port, pcap);
    free(out);
    /* Without OSCORE the resource is refused; the datagrams are still written. */
    assert_true(rc == 0 || rc == 1);
    if (have_tshark()) {
        struct tshark_pkt pk[8];
        assert_int_equal(tshark_lengths(pcap, pk, 8), 2);
        assert_int_equal(pk[0].dport, main_responder.port);
        assert_int_equal(pk[1].sport, main_responder.port);
        assert_int_equal(pk[0].ip_len, pk[0].udp_len + 20);
    }
    rc = CLI_RUN(&out, 10, "coap GET coap://127.0.0.1:%u/x --pcap /nonexistent-dir/x.pcap",
                 main_responder.port);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "--pcap"));
    free(out);
    rc = CLI_RUN(&out, 10, "initiator coap://127.0.0.1:%u --link token-ring", main_responder.port);
    assert_int_equal(rc, 2);
    free(out);
}


/* simulate's per-layer numbers (each message encoded as the A.2 framing
 * would send it) equal the ones measured on the socket for the same
 * configuration, link frames included. */
static void test_simulate_framing_matches_live(void **state)
{
    (void)state;
    char *live, *sim;
    /* A fresh responder: one with many contexts hands out longer C_R. */
    struct net_proc r;
    assert_int_equal(net_responder_start(&r, "framing", "--listen 127.0.0.1:0 --listen [::1]:0"),
                     0);
    int rc = CLI_RUN(&live, 30,
                     "initiator coap://[::1]:%u --method 3 --suites 2 --id-cred kid --json "
                     "--link 802.15.4",
                     r.port6);
    net_proc_stop(&r, SIGTERM, 5000);
    char *lf = expect_ok_json(live, rc);
    rc = CLI_RUN(&sim, 30, "simulate --method 3 --suites 2 --id-cred-i kid --id-cred-r kid --json "
                           "--link 802.15.4");
    assert_int_equal(rc, 0);
    char *sf = flat(sim);
    assert_has(sf, "framed.measured=false");
    const char *fields[] = {"edhoc_bytes", "coap_bytes", "udp_bytes", "ip_bytes", "frames",
                            "link_bytes"};
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        /* message_1..3 and the 2.04: the first four rows of both. */
        for (int i = 0; i < 4; i++) {
            char pa[80], pb[80], a[40], b[40];
            snprintf(pa, sizeof pa, "messages.%d.%s", i, fields[k]);
            snprintf(pb, sizeof pb, "framed.messages.%d.%s", i, fields[k]);
            if (!get(lf, pa, a, sizeof a) || !get(sf, pb, b, sizeof b))
                fail_msg("%s / %s missing:%s\n%s", pa, pb, lf, sf);
            assert_string_equal(a, b);
        }
    }
    free(lf);
    free(sf);
    free(live);
    free(sim);
    rc = CLI_RUN(&sim, 10, "simulate --pcap x.pcap");
    assert_int_equal(rc, 2);
    free(sim);
}

/* ---- An on-path attacker: a UDP relay that tampers with OSCORE answers ----
 *
 * The relay stands between the clients and a real responder: every client
 * address gets its own upstream socket (the responder sees distinct peers),
 * every datagram is passed on, except the responder's answers that carry
 * an OSCORE option (the protected answers to OSCORE requests), which are
 * replaced as the mode says. Nothing of EDHOC is faked: the handshake is
 * real, so the client holds a real context when the forged answer comes. */

enum relay_mode {
    RELAY_UNPROTECTED, /* an unprotected answer: same type, Message ID, token */
    RELAY_SWAP,        /* the second protected answer replaced by the first */
};

struct relay_cfg {
    enum relay_mode mode;
    uint8_t code;        /* RELAY_UNPROTECTED: the forged answer's code */
    const char *payload; /* and its payload (NULL: none) */
};

/* Whether a CoAP message carries option 9 (OSCORE). */
static bool relay_has_oscore(const uint8_t *m, size_t len)
{
    if (len < 4 || (size_t)(4 + (m[0] & 0x0f)) > len)
        return false;
    size_t p = 4 + (m[0] & 0x0f);
    unsigned num = 0;
    while (p < len && m[p] != 0xff) {
        unsigned v[2] = {m[p] >> 4, m[p] & 0x0f};
        p++;
        for (int k = 0; k < 2; k++) {
            if (v[k] == 13) {
                if (p >= len)
                    return false;
                v[k] = 13u + m[p++];
            } else if (v[k] == 14) {
                if (p + 1 >= len)
                    return false;
                v[k] = 269u + (unsigned)(m[p] << 8 | m[p + 1]);
                p += 2;
            } else if (v[k] == 15) {
                return false;
            }
        }
        num += v[0];
        if (num == 9)
            return true;
        p += v[1];
    }
    return false;
}

/* The server's answers as the relay configuration changes them: every
 * OSCORE response replaced by an unprotected one, or the second by the
 * first one's protected bytes (an answer bound to another request). */
struct relay_state {
    const struct relay_cfg *cfg;
    uint8_t first[4096];
    size_t first_len;
    bool have_first;
};

static size_t relay_rewrite(void *user, uint8_t *buf, size_t len, size_t cap)
{
    struct relay_state *st = user;
    const struct relay_cfg *cfg = st->cfg;
    if (len < 4)
        return len;
    size_t head = 4 + (buf[0] & 0x0f); /* header and token */
    if (head > len || !relay_has_oscore(buf, len))
        return len;
    if (cfg->mode == RELAY_UNPROTECTED) {
        buf[1] = cfg->code;
        size_t n = head;
        size_t pl = cfg->payload ? strlen(cfg->payload) : 0;
        if (pl && n + 1 + pl <= cap) {
            buf[n++] = 0xff;
            memcpy(buf + n, cfg->payload, pl);
            n += pl;
        }
        return n;
    }
    if (!st->have_first) {
        st->first_len = len - head;
        memcpy(st->first, buf + head, st->first_len);
        st->have_first = true;
        return len;
    }
    if (head + st->first_len > cap)
        return len;
    memcpy(buf + head, st->first, st->first_len);
    return head + st->first_len;
}

/* Start a relay towards 127.0.0.1:upstream in a child process; p->port is
 * where clients send. Returns 0 or -1. */
static int relay_start(struct net_proc *p, uint16_t upstream, const struct relay_cfg *cfg)
{
    static struct relay_state st;
    memset(&st, 0, sizeof st);
    st.cfg = cfg;
    struct net_relay_hooks h = {.to_client = relay_rewrite, .user = &st};
    return net_relay_start(p, upstream, &h);
}

/* A fresh scratch state directory in $STATE_DIRECTORY for the CLI runs of
 * a test (they inherit it; responders get their own from
 * net_responder_start), so that nothing lands in the user's. */
static void use_state_dir(const char *name)
{
    char d[300];
    net_path(d, sizeof d, name);
    mkdir(d, 0700);
    setenv("STATE_DIRECTORY", d, 1);
}

/* A response to an OSCORE request that carries no OSCORE option is not
 * the answer. RFC 8613 Section 2: "A successful response to a request with
 * the OSCORE option SHALL contain the OSCORE option."; Section 8.4 has the
 * client verify the response before anything of it is used, and
 * Section 5.1 (on an unprotected error): "since the error is unprotected,
 * it may have been spoofed and the real response blocked by an on-path
 * attacker." So the relay's forged 2.05 must fail the run (exit 7), and a
 * forged OSCORE error is an error still, named with its diagnostic. Before,
 * the initiator did exit 7 but called the forged 2.05 "refused" and dropped
 * the payload; `load` counted it among "OSCORE unprotect" errors and
 * `interop` blamed a security context the peer did not find. */
static void test_unprotected_answer_refused(void **state)
{
    (void)state;
    use_state_dir("state-unprot");
    static struct net_proc r, relay;
    assert_int_equal(net_responder_start(&r, "unprot", "--listen 127.0.0.1:0"), 0);
    struct relay_cfg cfg = {RELAY_UNPROTECTED, 0x45, "fake"};
    assert_int_equal(relay_start(&relay, r.port, &cfg), 0);
    char *out;
    int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request \"GET /time\" --json",
                     relay.port);
    if (rc != 7 || !strstr(out, "the peer answered without OSCORE: 2.05 Content: fake"))
        fail_msg("forged 2.05 accepted or misreported (exit %d):\n%s", rc, out);
    assert_valid(out, "initiator");
    char *f = flat(out);
    assert_has(f, "outcome=\"failed\"");
    assert_has(f, "responses=[]");
    free(f);
    free(out);
    /* The RFC 9668 combined request: the same. */
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --combined --request \"GET /time\"",
                 relay.port);
    if (rc != 7 || !strstr(out, "the peer answered without OSCORE: 2.05 Content: fake"))
        fail_msg("combined: forged 2.05 accepted or misreported (exit %d):\n%s", rc, out);
    free(out);
    net_proc_stop(&relay, SIGKILL, 2000);
    /* A forged (or real) "Replay detected": an error, named, with a hint. */
    struct relay_cfg replay = {RELAY_UNPROTECTED, 0x81, "Replay detected"};
    assert_int_equal(relay_start(&relay, r.port, &replay), 0);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request \"GET /time\"", relay.port);
    if (rc != 7 ||
        !strstr(out, "the peer answered without OSCORE: 4.01 Unauthorized: Replay detected") ||
        !strstr(out, "another state directory"))
        fail_msg("replay: exit %d:\n%s", rc, out);
    free(out);
    net_proc_stop(&relay, SIGKILL, 2000);
    /* A protected answer bound to another request (the first answer, sent
     * again for the second request): its AAD names the first request's
     * Partial IV (RFC 8613 Section 5.4), so verification fails. */
    struct relay_cfg swap = {RELAY_SWAP, 0, NULL};
    assert_int_equal(relay_start(&relay, r.port, &swap), 0);
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --request \"POST /echo one\" "
                 "--request \"POST /echo two\" --json",
                 relay.port);
    if (rc != 7 || !strstr(out, "POST /echo two: OSCORE"))
        fail_msg("swapped answer: exit %d:\n%s", rc, out);
    assert_valid(out, "initiator");
    f = flat(out);
    char v[200];
    assert_false(response_field(f, "POST /echo two", "code", v, sizeof v));
    /* The first answer, where it belongs, was taken. */
    assert_true(response_field(f, "POST /echo one", "payload_text", v, sizeof v));
    assert_string_equal(v, "\"one\"");
    free(f);
    free(out);
    net_proc_stop(&relay, SIGKILL, 2000);
    net_proc_stop(&r, SIGTERM, 5000);
    use_state_dir("client-state"); /* back to the run's own (net_make_dir) */
}

/* The same forgery against `load` (counted apart as failures) and
 * `interop` (the cell fails, saying why). */
static void test_unprotected_answer_load_interop(void **state)
{
    (void)state;
    use_state_dir("state-unprot2");
    static struct net_proc r, relay;
    assert_int_equal(net_responder_start(&r, "unprot2", "--listen 127.0.0.1:0"), 0);
    struct relay_cfg cfg = {RELAY_UNPROTECTED, 0x44, NULL};
    assert_int_equal(relay_start(&relay, r.port, &cfg), 0);
    char *out;
    int rc = CLI_RUN(&out, 60,
                     "load coap://127.0.0.1:%u --peers 2 --handshakes 4 --requests-per-peer 2 "
                     "--json",
                     relay.port);
    assert_valid(out, "load");
    char *f = flat(out);
    /* Every request was answered without OSCORE: none succeeded; the
     * failures name the cause with a word, the answers table says what
     * came back (2.04, unprotected) rather than claiming OSCORE. */
    if (!strstr(f, ".cause=\"no_oscore\""))
        fail_msg("load (exit %d) did not report the unprotected answers:\n%s", rc, out);
    assert_has(f, "tables.0.rows.0.requests=0");
    assert_has(f, "tables.2.name=\"load_answers\"");
    assert_has(f, "tables.2.rows.0.requests=\"OSCORE\"");
    assert_has(f, "tables.2.rows.0.response=\"unprotected\"");
    assert_has(f, "tables.2.rows.0.code=\"2.04\"");
    free(f);
    free(out);
    rc = CLI_RUN(&out, 60,
                 "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid --json",
                 relay.port);
    if (rc != 1 || !strstr(out, "the peer answered without OSCORE: 2.04 Changed") ||
        !strstr(out, "\"failure\": \"oscore\"") ||
        !strstr(out, "the peer answered without OSCORE with a success code") ||
        net_json_valid(out, "interop", false))
        fail_msg("interop: exit %d:\n%s", rc, out);
    free(out);
    net_proc_stop(&relay, SIGKILL, 2000);
    net_proc_stop(&r, SIGTERM, 5000);
    use_state_dir("client-state"); /* back to the run's own (net_make_dir) */
}

/* ---- --export-oscore-conf: a context other tools continue ---- */

/* The numbers of "key": [a, b, ...] (at most max). */
static size_t json_numbers(const char *out, const char *key, long *v, size_t max)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": [", key);
    const char *p = strstr(out, pat);
    if (!p)
        return 0;
    p += strlen(pat);
    size_t n = 0;
    while (n < max && *p && *p != ']') {
        char *e;
        long x = strtol(p, &e, 10);
        if (e == p)
            break;
        v[n++] = x;
        p = e + strspn(e, ", ");
    }
    return n;
}

static unsigned long long read_seq_file(const char *path)
{
    char *t = net_read_file(path);
    if (!t)
        fail_msg("no %s", path);
    char *end;
    unsigned long long v = strtoull(t, &end, 10);
    if (end == t || strcmp(end, "\n"))
        fail_msg("%s is not one decimal number and a newline: '%s'", path, t);
    free(t);
    return v;
}

static void assert_mode_0600(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    if ((st.st_mode & 07777) != 0600)
        fail_msg("%s has mode %o, expected 600", path, (unsigned)(st.st_mode & 07777));
}

static void test_export_oscore_conf(void **state)
{
    (void)state;
    use_state_dir("state-export");
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "export", "--listen 127.0.0.1:0"), 0);
    char conf[300], seq[320];
    net_path(conf, sizeof conf, "exported.conf");
    snprintf(seq, sizeof seq, "%s.seq", conf);
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --request \"GET /time\" --request \"POST /echo x\" "
                     "--export-secrets --export-oscore-conf %s --json",
                     r.port, conf);
    char *f = expect_ok_json(out, rc);
    /* JSON in libcoap's terms, with our next sequence number and the
     * responder's stated as unknown. */
    assert_has(f, "oscore.aead_alg=10");
    assert_has(f, "oscore.hkdf_alg=-10");
    assert_has(f, "oscore.libcoap=true");
    assert_has(f, "oscore.sender_next_seq=2");
    assert_has(f, "oscore.recipient_next_seq=null");
    char ms[80], salt[40], sid[20], rid[20], v[100];
    assert_true(get(f, "oscore.master_secret", v, sizeof v));
    snprintf(ms, sizeof ms, "%.*s", (int)strlen(v) - 2, v + 1);
    assert_true(get(f, "oscore.master_salt", v, sizeof v));
    snprintf(salt, sizeof salt, "%.*s", (int)strlen(v) - 2, v + 1);
    assert_true(get(f, "oscore.sender_id", v, sizeof v));
    snprintf(sid, sizeof sid, "%.*s", (int)strlen(v) - 2, v + 1);
    assert_true(get(f, "oscore.recipient_id", v, sizeof v));
    snprintf(rid, sizeof rid, "%.*s", (int)strlen(v) - 2, v + 1);
    char want[600];
    snprintf(want, sizeof want, "oscore_conf.file=\"%s\"", conf);
    assert_has(f, want);
    snprintf(want, sizeof want, "oscore_conf.seq_file=\"%s\"", seq);
    assert_has(f, want);
    assert_has(f, "oscore_conf.next_seq=2");
    assert_has(f, "oscore_conf.libcoap=true");
    free(f);
    free(out);
    /* The file: 0600, exactly libcoap's keywords and values, no id_context
     * (RFC 9528 Appendix A.1 derives none). */
    assert_mode_0600(conf);
    char *text = net_read_file(conf);
    snprintf(want, sizeof want,
             "master_secret,hex,\"%s\"\nmaster_salt,hex,\"%s\"\nsender_id,hex,\"%s\"\n"
             "recipient_id,hex,\"%s\"\naead_alg,integer,10\nhkdf_alg,integer,-10\n"
             "replay_window,integer,32\n",
             ms, salt, sid, rid);
    assert_string_equal(text, want);
    free(text);
    /* libcoap's seq_file: the next sequence number after the two requests. */
    assert_mode_0600(seq);
    assert_int_equal(read_seq_file(seq), 2);
    /* Our own reader takes the file. */
    rc = CLI_RUN(&out, 30, "oscore protect --context %s --role client --seq 2 43011234a1b2c3b474696d65",
                 conf);
    if (rc != 0)
        fail_msg("oscore protect --context %s: exit %d\n%s", conf, rc, out);
    free(out);
    /* A later static-context run continues above the numbers the initiator
     * used: the responder, which saw 0 and 1, answers (a reuse would be
     * "Replay detected"). */
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s --json", r.port,
                 conf);
    if (rc != 0 || !strstr(out, "\"code\": \"2.05\",\n      \"code_name\": \"Content\",\n      \"oscore\": true"))
        fail_msg("coap --oscore-context %s: exit %d\n%s", conf, rc, out);
    long used[8];
    size_t n_used = json_numbers(out, "oscore_sequence_numbers", used, 8);
    if (n_used < 1 || used[0] < 2)
        fail_msg("coap used sequence numbers below 2:\n%s", out);
    free(out);
    /* libcoap's spelling, conf and seq_file: further up again. */
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s,%s --json",
                 r.port, conf, seq);
    if (rc != 0 || !strstr(out, "\"code\": \"2.05\",\n      \"code_name\": \"Content\",\n      \"oscore\": true"))
        fail_msg("coap --oscore-context %s,%s: exit %d\n%s", conf, seq, rc, out);
    long used2[8];
    assert_true(json_numbers(out, "oscore_sequence_numbers", used2, 8) >= 1);
    assert_true(used2[0] > used[0]);
    free(out);
    assert_true(read_seq_file(seq) > (unsigned long long)used2[0]);

    /* Text output; an existing file readable by others is replaced by one
     * with mode 0600. */
    char conf2[300];
    net_path(conf2, sizeof conf2, "exported2.conf");
    net_write_file(conf2, "old\n", 0644);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --export-secrets --export-oscore-conf %s",
                 r.port, conf2);
    if (rc != 0)
        fail_msg("initiator (text): exit %d\n%s", rc, out);
    assert_non_null(strstr(out, "next sender sequence number: initiator 1; responder: its own "
                                "state"));
    assert_non_null(strstr(out, "    hkdf_alg,integer,-10\n"));
    assert_non_null(strstr(out, "OSCORE conf (the initiator's side, mode 0600): "));
    assert_non_null(strstr(out, "coap-client -E "));
    free(out);
    assert_mode_0600(conf2);
    text = net_read_file(conf2);
    assert_non_null(strstr(text, "hkdf_alg,integer,-10\n"));
    assert_null(strstr(text, "old"));
    free(text);

    /* A symbolic link is refused before anything is sent; its target is
     * left alone. */
    char victim[300], link[300];
    net_path(victim, sizeof victim, "victim");
    net_path(link, sizeof link, "link.conf");
    net_write_file(victim, "untouched\n", 0644);
    assert_int_equal(symlink(victim, link), 0);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --export-oscore-conf %s", r.port, link);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "symbolic link"));
    assert_null(strstr(out, "message_1"));
    free(out);
    text = net_read_file(victim);
    assert_string_equal(text, "untouched\n");
    free(text);

    /* --state-dir none: FILE.seq alone. */
    char conf3[300], seq3[320];
    net_path(conf3, sizeof conf3, "nostate.conf");
    snprintf(seq3, sizeof seq3, "%s.seq", conf3);
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --export-oscore-conf %s --state-dir none --json "
                 "--request \"GET /time\" --request \"GET /time\" --request \"GET /time\"",
                 r.port, conf3);
    f = expect_ok_json(out, rc);
    assert_has(f, "oscore_conf.state_dir=null");
    assert_has(f, "oscore_conf.next_seq=3");
    /* Without --export-secrets the secrets stay out of the report. */
    assert_has(f, "oscore.master_secret=null");
    assert_has(f, "oscore.master_salt=null");
    free(f);
    free(out);
    assert_int_equal(read_seq_file(seq3), 3);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --state-dir none", r.port);
    assert_int_equal(rc, 2);
    free(out);

    /* A SHA-384 suite: no libcoap value; the id our reader takes, said so. */
    char conf4[300];
    net_path(conf4, sizeof conf4, "sha384.conf");
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --suites 24 --export-oscore-conf %s --json",
                 r.port, conf4);
    f = expect_ok_json(out, rc);
    assert_has(f, "oscore.hkdf_alg=-43");
    assert_has(f, "oscore.libcoap=false");
    assert_has(f, "oscore_conf.libcoap=false");
    free(f);
    free(out);
    text = net_read_file(conf4);
    assert_non_null(text);
    assert_true(text[0] == '#');
    assert_non_null(strstr(text, "libcoap has no value for it"));
    assert_non_null(strstr(text, "\nhkdf_alg,integer,-43\n"));
    free(text);
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s", r.port, conf4);
    if (rc != 0)
        fail_msg("coap with the SHA-384 context: exit %d\n%s", rc, out);
    free(out);

    /* --help documents the option and the exit codes. */
    rc = CLI_RUN(&out, 30, "initiator --help");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "--export-oscore-conf FILE"));
    assert_non_null(strstr(out, "the peer answered without"));
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);
    use_state_dir("client-state"); /* back to the run's own (net_make_dir) */
}

/* ---- The command-line contract of issue 14 ---- */

/* `edhoc-cli ARGS` in the background, standard output and error into
 * files; stopped by teardown if the test fails first. */
static void spawn_cli(struct net_proc *p, const char *args, const char *out_path,
                      const char *err_path)
{
    memset(p, 0, sizeof *p);
    /* Nothing of an earlier run may be mistaken for this one's output. */
    unlink(out_path);
    unlink(err_path);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec %s %s >%s 2>%s", cli, args, out_path, err_path);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    p->pid = pid;
    for (size_t i = 0; i < NET_MAX_PROCS; i++) {
        if (!net_procs[i]) {
            net_procs[i] = p;
            break;
        }
    }
}

/* Wait (at most timeout_ms) until path holds needle. */
static bool wait_for_text(const char *path, const char *needle, unsigned timeout_ms)
{
    uint64_t end = net_now_ms() + timeout_ms;
    do {
        char *t = net_read_file(path);
        bool found = t && strstr(t, needle);
        free(t);
        if (found)
            return true;
        net_sleep_ms(50);
    } while (net_now_ms() < end);
    return false;
}

/* Options the initiator does not use are refused, not ignored (issue 14
 * item 1: it took --cred-r /nonexistent, --suites-r and an undocumented
 * --methods); durations take decimals; an unresolvable host is the network
 * exit code, not "bad command line". */
static void test_initiator_options(void **state)
{
    (void)state;
    char *out;
    static const char *const refused[] = {"--cred-r /nonexistent", "--suites-r 2", "--methods 3",
                                          "--key-r x", "--c-r 01", "--ead-2 5"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        int rc = CLI_RUN(&out, 10, "initiator coap://127.0.0.1:1 %s", refused[i]);
        if (rc != 2 || !strstr(out, "unknown option"))
            fail_msg("initiator %s: exit %d\n%s", refused[i], rc, out);
        assert_null(strstr(out, "message_1"));
        free(out);
    }
    /* The table is the help: what is refused is not offered. */
    int rc = CLI_RUN(&out, 10, "initiator --help");
    assert_int_equal(rc, 0);
    assert_null(strstr(out, "--cred-r"));
    assert_null(strstr(out, "--suites-r"));
    assert_null(strstr(out, "--methods"));
    assert_non_null(strstr(out, "--timeout SECONDS"));
    assert_non_null(strstr(out, "docs/json/initiator.schema.json"));
    free(out);
    rc = CLI_RUN(&out, 10, "help initiator");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "usage: edhoc-cli initiator URI"));
    free(out);
    /* --timeout with decimals (it took whole seconds only: "0.5" was "expected a
     * number", exit 2), and --opt=value. */
    uint16_t silent = 0;
    int fd = net_silent_socket(&silent);
    assert_true(fd >= 0);
    uint64_t t0 = net_now_ms();
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --timeout 0.5 --json", silent);
    uint64_t took = net_now_ms() - t0;
    if (rc != 6)
        fail_msg("--timeout 0.5 against a silent peer: exit %d\n%s", rc, out);
    assert_true(took < 5000);
    assert_valid(out, "initiator");
    char *f = flat(out);
    assert_has(f, "outcome=\"failed\"");
    assert_has(f, "error.exit_code=6");
    /* Nothing agreed, nothing answered: null, not -1 or "?". */
    assert_has(f, "suite=null");
    assert_has(f, "id_cred_r=null");
    assert_has(f, "handshake_ms=null");
    assert_has(f, "oscore=null");
    free(f);
    free(out);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --timeout=0.3", silent);
    assert_int_equal(rc, 6);
    free(out);
    close(fd);
    rc = CLI_RUN(&out, 10, "initiator coap://127.0.0.1:1 --timeout 0");
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--timeout"));
    free(out);
    /* A credential without its key: the message names the options the
     * initiator takes (--cred, --key), not simulate's --cred-i/--key-i. */
    rc = CLI_RUN(&out, 10, "initiator coap://127.0.0.1:9 --cred /nonexistent");
    if (rc != 2 || !strstr(out, "the initiator needs both --cred and --key (--cred given alone)"))
        fail_msg("--cred without --key: exit %d\n%s", rc, out);
    free(out);
    /* A host name that does not resolve is a peer that cannot be reached:
     * exit 6 as documented ("timeout or peer unreachable"), it was 2. */
    rc = CLI_RUN(&out, 30, "initiator coap://no-such-host.invalid/ --timeout 5");
    if (rc != 6)
        fail_msg("unresolvable host: exit %d\n%s", rc, out);
    assert_non_null(strstr(out, "no-such-host.invalid"));
    free(out);
    /* With --json, the report of a failed run, valid against the schema,
     * with the failure's exit code and text (it printed nothing). */
    rc = CLI_RUN(&out, 30, "initiator coap://no-such-host.invalid/ --timeout 5 --json 2>/dev/null");
    if (rc != 6 || !strstr(out, "\"text\": \"no-such-host.invalid: host name does not resolve\"") ||
        !strstr(out, "\"exit_code\": 6"))
        fail_msg("unresolvable host, --json: exit %d\n%s", rc, out);
    assert_valid(out, "initiator");
    free(out);
}

/* The schema check can fail: a report without one of its required members,
 * or with -1 where null belongs, is refused. */
static void test_initiator_schema_refuses(void **state)
{
    (void)state;
    char *out;
    int rc = net_cli_run(&out, 30, true, "initiator coap://127.0.0.1:%u --json",
                         main_responder.port);
    char *f = expect_ok_json(out, rc);
    free(f);
    char *doc = json_doc(out);
    assert_int_equal(net_json_valid(doc, "initiator", false), 0);
    char *cut = strstr(doc, "  \"round_trips\": ");
    assert_non_null(cut);
    char *eol = strchr(cut, '\n');
    memmove(cut, eol + 1, strlen(eol + 1) + 1);
    assert_int_not_equal(net_json_valid(doc, "initiator", false), 0);
    free(doc);
    /* The old sentinel: an EDHOC size of -1 for an OSCORE message. */
    doc = json_doc(out);
    char *null_bytes = strstr(doc, "\"edhoc_bytes\": null");
    assert_non_null(null_bytes);
    memcpy(null_bytes + strlen("\"edhoc_bytes\": "), "-1  ", 4);
    assert_int_not_equal(net_json_valid(doc, "initiator", false), 0);
    free(doc);
    free(out);
}

/* SIGINT during --repeat: the report of what completed, marked partial,
 * exit 130 (issue 14: "interrupted runs still report"); the progress line
 * is on standard error with -v when it is not a terminal. */
static void test_initiator_repeat_interrupted(void **state)
{
    (void)state;
    char args[300], opath[300], epath[300];
    net_path(opath, sizeof opath, "repeat.out");
    net_path(epath, sizeof epath, "repeat.err");
    snprintf(args, sizeof args, "initiator coap://127.0.0.1:%u --repeat 1000000 --json -v",
             main_responder.port);
    static struct net_proc p;
    spawn_cli(&p, args, opath, epath);
    /* The first progress line comes after a few seconds of handshakes. */
    if (!wait_for_text(epath, "initiator: handshake ", 30000))
        fail_msg("no progress line on standard error");
    assert_int_equal(net_proc_stop(&p, SIGINT, 10000), 130);
    char *out = net_read_file(opath);
    assert_non_null(out);
    assert_valid(out, "initiator");
    char *f = flat(out);
    assert_has(f, "partial=true");
    assert_has(f, "outcome=\"ok\"");
    char v[40];
    assert_true(get(f, "repeat.ok", v, sizeof v));
    assert_true(atol(v) > 1);
    assert_has(f, "repeat.failed=0");
    free(f);
    free(out);
    /* Text: the summary and the line saying it is partial. */
    snprintf(args, sizeof args, "initiator coap://127.0.0.1:%u --repeat 1000000 -v",
             main_responder.port);
    spawn_cli(&p, args, opath, epath);
    if (!wait_for_text(epath, "initiator: handshake ", 30000))
        fail_msg("no progress line on standard error");
    assert_int_equal(net_proc_stop(&p, SIGTERM, 10000), 143);
    out = net_read_file(opath);
    assert_non_null(strstr(out, "Outcome: ok"));
    assert_non_null(strstr(out, "\nRepeat: "));
    assert_non_null(strstr(out, "interrupted: partial results"));
    free(out);
}

/* The air-model options: each bad value is refused with its own message
 * and exit status 2 (a bad command line), and an option for another link
 * than the one chosen names the link it needs. */
static void test_air_options_refused(void **state)
{
    (void)state;
    static const struct {
        const char *args, *message;
    } cases[] = {
        {"bytes --compare --link lorawan --data-rate 6",
         "edhoc-cli bytes: --data-rate: expected 0..5 for eu868, got '6'"},
        {"bytes --compare --link lorawan --region us915 --data-rate 5",
         "edhoc-cli bytes: --data-rate: expected 0..4 for us915, got '5'"},
        {"bytes --compare --link lorawan --region eu433",
         "edhoc-cli bytes: --region: expected eu868 or us915, got 'eu433'"},
        {"bytes --compare --link lorawan --duty-cycle 0",
         "edhoc-cli bytes: --duty-cycle: expected 0.001..100 percent, got '0'"},
        {"bytes --compare --link ble --phy 3m",
         "edhoc-cli bytes: --phy: expected 1m or 2m, got '3m'"},
        {"bytes --compare --link ble --ble-data-length 26",
         "edhoc-cli bytes: --ble-data-length: expected 27..251 bytes, got '26'"},
        {"bytes --compare --link ble --ble-interval 8",
         "edhoc-cli bytes: --ble-interval: expected 7.5..4000 ms in steps of 1.25, got '8'"},
        {"bytes --compare --link 802.15.4 --csma-be 9",
         "edhoc-cli bytes: --csma-be: expected 0..8, got '9'"},
        {"bytes --compare --link 802.15.4 --retries 8",
         "edhoc-cli bytes: --retries: expected 0..7 (macMaxFrameRetries), got '8'"},
        {"bytes --compare --link ble --data-rate 3",
         "edhoc-cli bytes: --data-rate describes a lorawan link: give --link lorawan before it"},
        {"bytes --compare --phy 2m",
         "edhoc-cli bytes: --phy describes a ble link: give --link ble before it"},
        {"bytes --compare --link wifi",
         "edhoc-cli bytes: --link: expected one of none, 802.15.4, 802154, ble, lorawan, got "
         "'wifi'"},
        {"bytes --compare --link lorawan --radio-profile /nonexistent/radio",
         "edhoc-cli bytes: --radio-profile: '/nonexistent/radio' is neither a built-in profile "
         "(cc2538, nrf52840, sx1276) nor a readable file"},
        {"initiator coap://127.0.0.1:9 --link ble --region eu868",
         "edhoc-cli initiator: --region describes a lorawan link: give --link lorawan before it"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        int rc = CLI_RUN(&out, 30, "%s", cases[i].args);
        if (rc != 2 || !strstr(out, cases[i].message))
            fail_msg("%s: exit %d, expected 2 and \"%s\":\n%s", cases[i].args, rc,
                     cases[i].message, out);
        free(out);
    }
}

/* bytes --compare on LoRaWAN EU868 DR0 (SF12, at most 51 bytes of
 * FRMPayload, RP002): the x5chain message_2 does not fit one frame and is
 * reported as SCHC fragments. The relay records sizes only, so the CoAP
 * message of u bytes travels whole: RFC 9011 tiles of 10 bytes, ceil(u /
 * 10) of them, the last (at most 10 bytes) in the All-1 beside the 4-byte
 * RCS (1 + 4 + 10 <= 51), the others 5 to a fragment ((51 - 1) / 10):
 * ceil((tiles - 1) / 5) + 1 fragments; a message of at most 51 bytes
 * is one frame. */
static void test_compare_lorawan(void **state)
{
    (void)state;
    char *out;
    int rc = CLI_RUN(&out, 120, "bytes --compare --link lorawan --data-rate 0 --json -q");
    assert_int_equal(rc, 0);
    assert_valid(out, "bytes-compare");
    char *f = flat(out);
    char v[400];
    assert_true(get(f, "link.model", v, sizeof v));
    assert_string_equal(v, "\"lorawan\"");
    assert_true(get(f, "radio.name", v, sizeof v));
    assert_string_equal(v, "\"sx1276\"");
    assert_true(get(f, "runs.0.mode", v, sizeof v));
    assert_string_equal(v, "\"x5chain\"");
    /* message_2 comes after message_1 and, when the responder's
     * amplification limit asks for it, its 4.01 Echo challenge. */
    int k = 0;
    char path[80];
    for (; k < 8; k++) {
        snprintf(path, sizeof path, "runs.0.messages.%d.name", k);
        if (get(f, path, v, sizeof v) && !strcmp(v, "\"message_2\""))
            break;
    }
    assert_true(k < 8);
    /* x5chain's message_2 does not fit 51 bytes even with its CoAP header
     * compressed: SCHC fragments, each a frame, and fewer link bytes than
     * the datagram plus the 13 of LoRaWAN's MAC (RFC 9011 profile). */
    snprintf(path, sizeof path, "runs.0.messages.%d.udp_bytes", k);
    assert_true(get(f, path, v, sizeof v));
    long u = atol(v);
    assert_true(u > 51);
    snprintf(path, sizeof path, "runs.0.messages.%d.air.fragments", k);
    assert_true(get(f, path, v, sizeof v));
    long frags = atol(v);
    assert_true(frags >= 2);
    snprintf(path, sizeof path, "runs.0.messages.%d.frames", k);
    assert_true(get(f, path, v, sizeof v));
    assert_int_equal(atol(v), frags);
    /* static DH (kid), message_1: SCHC on the bytes the relay forwarded
     * (RFC 8724; rule 1 of docs/airtime.md, an EDHOC request): a 16-bit
     * residue (TKL 4 bits, the 1-byte token, the Message ID's 4 low bits)
     * before the 38-byte payload (0xf5 and message_1, RFC 9528 A.2): a
     * 40-byte packet, one frame of 13 (MAC) + 40 = 53 bytes. Without the
     * bytes the whole 64-byte CoAP message would travel. */
    assert_true(get(f, "runs.2.mode", v, sizeof v));
    assert_string_equal(v, "\"static_dh_kid\"");
    assert_true(get(f, "runs.2.messages.0.name", v, sizeof v));
    assert_string_equal(v, "\"message_1\"");
    assert_true(get(f, "runs.2.messages.0.air.schc_residue_bits", v, sizeof v));
    assert_int_equal(atol(v), 16);
    assert_true(get(f, "runs.2.messages.0.link_bytes", v, sizeof v));
    assert_int_equal(atol(v), 53);
    assert_true(get(f, "runs.2.messages.0.frames", v, sizeof v));
    assert_int_equal(atol(v), 1);
    /* DTLS records are not CoAP: carried whole after IPv6 + UDP, one
     * frame when they fit 51 bytes, else the fragments of RFC 9011's
     * uplink profile (10-byte tiles, 5 a window). */
    assert_true(get(f, "runs.4.mode", v, sizeof v));
    assert_string_equal(v, "\"x509\"");
    int checked = 0;
    for (k = 0; k < 12; k++) {
        snprintf(path, sizeof path, "runs.4.messages.%d.datagrams", k);
        if (!get(f, path, v, sizeof v))
            break;
        if (strcmp(v, "1"))
            continue;
        snprintf(path, sizeof path, "runs.4.messages.%d.air.schc_residue_bits", k);
        assert_true(get(f, path, v, sizeof v));
        assert_string_equal(v, "null");
        snprintf(path, sizeof path, "runs.4.messages.%d.udp_bytes", k);
        assert_true(get(f, path, v, sizeof v));
        u = atol(v);
        long tiles = (u + 9) / 10;
        frags = u <= 51 ? 0 : (tiles - 1 + 4) / 5 + 1;
        snprintf(path, sizeof path, "runs.4.messages.%d.air.fragments", k);
        assert_true(get(f, path, v, sizeof v));
        assert_int_equal(atol(v), frags);
        snprintf(path, sizeof path, "runs.4.messages.%d.frames", k);
        assert_true(get(f, path, v, sizeof v));
        assert_int_equal(atol(v), frags ? frags : 1);
        checked++;
    }
    assert_true(checked >= 4);
    free(f);
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
        cmocka_unit_test_setup(test_suite_negotiation, check_alive),
        cmocka_unit_test_setup(test_suites_r_is_what_completes, check_alive),
        cmocka_unit_test_setup(test_suite_negotiation_across_credentials, check_alive),
        cmocka_unit_test_setup(test_demo_serves_suite_25, check_alive),
        cmocka_unit_test_setup(test_blockwise_x5chain, check_alive),
        cmocka_unit_test_setup(test_two_credentials, check_alive),
        cmocka_unit_test_setup(test_failures, check_alive),
        cmocka_unit_test_setup(test_air_options_refused, check_alive),
        cmocka_unit_test_setup(test_compare_lorawan, check_alive),
        cmocka_unit_test_setup(test_parallel_50, check_alive),
        cmocka_unit_test_setup(test_coap_static_context, check_alive),
        cmocka_unit_test_setup(test_layers_and_pcap, check_alive),
        cmocka_unit_test_setup(test_coap_pcap, check_alive),
        cmocka_unit_test(test_wildcard_pcap_addresses),
        cmocka_unit_test(test_allow_unprotected),
        cmocka_unit_test_setup(test_simulate_framing_matches_live, check_alive),
        cmocka_unit_test_setup(test_unprotected_answer_refused, check_alive),
        cmocka_unit_test_setup(test_unprotected_answer_load_interop, check_alive),
        cmocka_unit_test_setup(test_export_oscore_conf, check_alive),
        cmocka_unit_test_setup(test_initiator_options, check_alive),
        cmocka_unit_test_setup(test_initiator_schema_refuses, check_alive),
        cmocka_unit_test_setup(test_initiator_repeat_interrupted, check_alive),
    };
    /* One test by name (a glob): CMOCKA_TEST_FILTER=test_load_* */
    if (getenv("CMOCKA_TEST_FILTER"))
        cmocka_set_test_filter(getenv("CMOCKA_TEST_FILTER"));
    return cmocka_run_group_tests_name("cli_net", tests, setup, net_group_teardown);
}
