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

#include "net_test_util.h"
#include "vectors.h"

static struct net_proc main_responder;
static const char *cli;

static int setup(void **state)
{
    (void)state;
    cli = getenv("EDHOC_CLI");
    if (!cli)
        cli = "edhoc-cli";
    if (net_make_dir("net"))
        return -1;
    return net_responder_start(&main_responder, "main",
                               "--listen 127.0.0.1:0 --listen [::1]:0 -v");
}

static int teardown(void **state)
{
    (void)state;
    net_stop_all();
    net_remove_dir();
    return 0;
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

/* edhoc-cli ARGS (a shell fragment without single quotes). */
static int cli_run(char **out, unsigned timeout_s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int cli_run(char **out, unsigned timeout_s, const char *fmt, ...)
{
    char args[8192], line[8400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "%s %s", cli, args);
    return net_sh(line, out, timeout_s);
}

static void expect_ok_json(const char *out, int rc)
{
    if (rc != 0 || !strstr(out, "\"outcome\": \"ok\""))
        fail_msg("initiator failed (exit %d):\n%s", rc, out);
}

/* The EDHOC size of a message in the JSON report (-2 when absent). */
static long json_edhoc_bytes(const char *out, const char *name)
{
    char pat[80];
    snprintf(pat, sizeof pat, "{\"name\": \"%s\", ", name);
    const char *p = strstr(out, pat);
    if (!p)
        return -2;
    p = strstr(p, "\"edhoc_bytes\": ");
    return p ? strtol(p + 15, NULL, 10) : -2;
}

static long json_field_after(const char *out, const char *name, const char *field)
{
    char pat[80];
    snprintf(pat, sizeof pat, "{\"name\": \"%s\", ", name);
    const char *p = strstr(out, pat);
    if (!p)
        return -2;
    const char *end = strchr(p, '}');
    char f[64];
    snprintf(f, sizeof f, "\"%s\": ", field);
    p = strstr(p, f);
    if (!p || p > end)
        return -2;
    return strtol(p + strlen(f), NULL, 10);
}

static void test_method3_suite2_kid(void **state)
{
    (void)state;
    char *out;
    int rc = cli_run(&out, 30,
                     "initiator coap://127.0.0.1:%u --method 3 --suites 2 --id-cred kid --json "
                     "--timeout 10",
                     main_responder.port);
    expect_ok_json(out, rc);
    assert_non_null(strstr(out, "\"suite\": 2"));
    assert_non_null(strstr(out, "\"id_cred_i\": \"kid\""));
    assert_non_null(strstr(out, "\"id_cred_r\": \"kid\""));
    /* RFC 9529 trace 2 sizes with one-byte connection identifiers. */
    assert_int_equal(json_edhoc_bytes(out, "message_1"), 37);
    assert_int_equal(json_edhoc_bytes(out, "message_2"), 45);
    assert_int_equal(json_edhoc_bytes(out, "message_3"), 19);
    /* CoAP adds header, token, Uri-Path, Content-Format and the prefix. */
    long m1_coap = json_field_after(out, "message_1", "coap_bytes");
    assert_true(m1_coap > 37 + 4 + 19);
    assert_int_equal(json_field_after(out, "message_1", "datagrams"), 1);
    /* The default request and its decrypted response. */
    assert_non_null(strstr(out, "\"request\": \"GET /.well-known/core\", \"code\": \"2.05 Content\""));
    assert_non_null(strstr(out, "core.edhoc"));
    assert_non_null(strstr(out, "\"round_trips\": 3"));
    free(out);
    /* --repeat: more handshakes on one socket, counted. */
    rc = cli_run(&out, 60, "initiator coap://127.0.0.1:%u --repeat 20 --json", main_responder.port);
    expect_ok_json(out, rc);
    assert_non_null(strstr(out, "\"repeat\": {\"handshakes\": 20, \"ok\": 20, \"failed\": 0"));
    free(out);
}

static void test_method0_suite2_x5t_requests(void **state)
{
    (void)state;
    char *out;
    int rc = cli_run(&out, 30,
                     "initiator coap://127.0.0.1:%u --method 0 --suites 2 --id-cred x5t --json "
                     "--request \"GET /time\" --request \"POST /echo hello-oscore\" "
                     "--request \"GET /nothing\"",
                     main_responder.port);
    expect_ok_json(out, rc);
    assert_non_null(strstr(out, "\"id_cred_i\": \"x5t\""));
    assert_non_null(strstr(out, "\"id_cred_r\": \"x5t\""));
    assert_non_null(strstr(out, "\"request\": \"GET /time\", \"code\": \"2.05 Content\""));
    assert_non_null(strstr(out, "\"request\": \"POST /echo hello-oscore\", \"code\": \"2.04 Changed\""));
    assert_non_null(strstr(out, "\"payload\": \"hello-oscore\""));
    assert_non_null(strstr(out, "\"request\": \"GET /nothing\", \"code\": \"4.04 Not Found\""));
    free(out);
    /* The text report names every message with both sizes. */
    rc = cli_run(&out, 30, "initiator coap://127.0.0.1:%u --method 0 --suites 2",
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
                int rc = cli_run(&out, 30,
                                 "initiator coap://127.0.0.1:%u --method %d --suites %d "
                                 "--id-cred %s --json --request \"POST /echo m%ds%d%s\"",
                                 main_responder.port, m, suite, types[t], m, suite, types[t]);
                if (rc != 0 || !strstr(out, "\"outcome\": \"ok\""))
                    fail_msg("method %d suite %d %s: exit %d\n%s", m, suite, types[t], rc, out);
                char want[96];
                snprintf(want, sizeof want, "\"id_cred_i\": \"%s\"", types[t]);
                assert_non_null(strstr(out, want));
                snprintf(want, sizeof want, "\"suite\": %d", suite);
                assert_non_null(strstr(out, want));
                snprintf(want, sizeof want, "\"payload\": \"m%ds%d%s\"", m, suite, types[t]);
                if (!strstr(out, want))
                    fail_msg("no echo %s in\n%s", want, out);
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
    int rc = cli_run(&out, 30, "initiator coap://127.0.0.1:%u --message-4 --json", r4.port);
    expect_ok_json(out, rc);
    assert_true(json_edhoc_bytes(out, "message_4") >= 1);
    free(out);
    /* Expecting message_4 from a responder that sends none fails clearly. */
    rc = cli_run(&out, 30, "initiator coap://127.0.0.1:%u --message-4", main_responder.port);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "message_4 expected"));
    free(out);
    net_proc_stop(&r4, SIGTERM, 5000);
}

static void test_combined_request(void **state)
{
    (void)state;
    char *out;
    int rc = cli_run(&out, 30,
                     "initiator coap://127.0.0.1:%u --combined --json --request \"POST /echo comb\" "
                     "--request \"GET /time\"",
                     main_responder.port);
    expect_ok_json(out, rc);
    assert_non_null(strstr(out, "\"combined\": true"));
    assert_non_null(strstr(out, "\"name\": \"message_3 + OSCORE request 1\""));
    assert_non_null(strstr(out, "\"payload\": \"comb\""));
    assert_non_null(strstr(out, "\"request\": \"GET /time\", \"code\": \"2.05 Content\""));
    /* Two round trips for EDHOC + the first request, one more for /time. */
    assert_non_null(strstr(out, "\"round_trips\": 3"));
    free(out);
    char *log = net_read_file(main_responder.log);
    assert_non_null(strstr(log, "outcome=ok: combined request"));
    free(log);
}

static void test_bare_framing(void **state)
{
    (void)state;
    char *out;
    int rc = cli_run(&out, 30,
                     "initiator coap://[::1]:%u --framing bare --json --request \"GET /time\"",
                     main_responder.port6);
    expect_ok_json(out, rc);
    assert_non_null(strstr(out, "\"framing\": \"bare\""));
    /* No true prefix and no Content-Format: 3 bytes less than A.2. */
    long bare = json_field_after(out, "message_1", "coap_bytes");
    free(out);
    rc = cli_run(&out, 30, "initiator coap://[::1]:%u --json", main_responder.port6);
    expect_ok_json(out, rc);
    long a2 = json_field_after(out, "message_1", "coap_bytes");
    assert_int_equal(a2 - bare, 3);
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
    rc = cli_run(&out, 30, "initiator coap://127.0.0.1:%u --framing bare --message-4 --json",
                 r4.port);
    expect_ok_json(out, rc);
    assert_true(json_edhoc_bytes(out, "message_4") >= 1);
    free(out);
    net_proc_stop(&r4, SIGTERM, 5000);
}

static void test_echo_before_message_1(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "echo", "--listen 127.0.0.1:0 --echo"), 0);
    char *out;
    int rc = cli_run(&out, 30, "initiator coap://127.0.0.1:%u --json", r.port);
    expect_ok_json(out, rc);
    /* message_1 twice (the CoAP layer repeats it with the Echo value of the
     * 4.01), then message_2: two datagrams each way in that exchange. */
    assert_int_equal(json_field_after(out, "message_1", "datagrams"), 2);
    assert_int_equal(json_field_after(out, "message_2", "datagrams"), 2);
    free(out);
    /* Without --echo: one datagram each way. */
    rc = cli_run(&out, 30, "initiator coap://127.0.0.1:%u --json", main_responder.port);
    expect_ok_json(out, rc);
    assert_int_equal(json_field_after(out, "message_1", "datagrams"), 1);
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
    int rc = cli_run(&out, 30, "initiator coap://127.0.0.1:%u --method 0 --suites 6,2 --json",
                     r.port);
    expect_ok_json(out, rc);
    assert_non_null(strstr(out, "\"attempts\": 2"));
    assert_non_null(strstr(out, "\"suite\": 2"));
    assert_non_null(strstr(out, "{\"name\": \"error\", \"from\": \"responder\""));
    free(out);
    /* No common suite at all: the peer's error, exit code 4. */
    rc = cli_run(&out, 30, "initiator coap://127.0.0.1:%u --method 0 --suites 0", r.port);
    assert_int_equal(rc, 4);
    assert_non_null(strstr(out, "edhoc-cli initiator:"));
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);
}

static void keygen(const char *args)
{
    char *out;
    int rc = cli_run(&out, 30, "keygen %s", args);
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
    int rc = cli_run(&out, 30,
                     "initiator coap://127.0.0.1:%u --method 0 --suites 2 --cred %s/i.pem --key %s/i.key "
                     "--trust %s/root.pem --id-cred x5chain --block-size 64 --json",
                     r.port, pki, pki, pki);
    expect_ok_json(out, rc);
    assert_non_null(strstr(out, "\"id_cred_r\": \"x5chain\""));
    /* Two certificates in each ID_CRED: far above one 64-byte block. */
    long m2 = json_edhoc_bytes(out, "message_2");
    long m3 = json_edhoc_bytes(out, "message_3");
    assert_true(m2 > 600 && m3 > 600);
    assert_true(json_field_after(out, "message_2", "datagrams") >= m2 / 64);
    assert_true(json_field_after(out, "message_1", "datagrams") >= m3 / 64 / 2);
    assert_true(json_field_after(out, "message_3", "datagrams") >= m3 / 64);
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
        int rc = cli_run(&out, 30,
                         "initiator coap://127.0.0.1:%u --method %d --suites 0 --cred %s/%s "
                         "--trust %s/root.pem --trust %s/rdh.ccs --json",
                         r.port, runs[i].method, pki, cred, pki, pki);
        if (rc != 0 || !strstr(out, "\"outcome\": \"ok\""))
            fail_msg("method %d: exit %d\n%s", runs[i].method, rc, out);
        /* The responder signs for methods 0 and 2 (its certificate chain)
         * and uses its static DH CCS (by kid: a CCS has no chain) for 1 and 3. */
        const char *want =
            runs[i].method % 2 ? "\"id_cred_r\": \"kid\"" : "\"id_cred_r\": \"x5chain\"";
        if (!strstr(out, want))
            fail_msg("method %d: expected %s\n%s", runs[i].method, want, out);
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
    int rc = cli_run(&out, 30, "initiator coap://127.0.0.1:%u --method 0 --suites 2 --trust %s/x.pem",
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
    rc = cli_run(&out, 30,
                 "initiator coap://127.0.0.1:%u --method 0 --suites 2 --cred %s/i.pem --key %s/i.key "
                 "--trust %s/root.pem --id-cred x5chain --json",
                 picky.port, pki, pki, pki);
    if (rc != 4)
        fail_msg("untrusted certificate: exit %d\n%s", rc, out);
    assert_non_null(strstr(out, "\"err_code\": "));
    assert_non_null(strstr(out, "EDHOC error"));
    free(out);
    net_proc_stop(&picky, SIGTERM, 5000);
    /* Dead peer: nothing listens (ICMP), then a socket that never answers. */
    uint64_t t0 = net_now_ms();
    rc = cli_run(&out, 30, "initiator coap://127.0.0.1:%u --timeout 3", net_closed_port());
    assert_int_equal(rc, 6);
    assert_non_null(strstr(out, "message_1"));
    free(out);
    uint16_t silent = 0;
    int fd = net_silent_socket(&silent);
    assert_true(fd >= 0);
    rc = cli_run(&out, 30, "initiator coap://127.0.0.1:%u --timeout 2", silent);
    close(fd);
    assert_int_equal(rc, 6);
    assert_non_null(strstr(out, "timeout"));
    free(out);
    assert_true(net_now_ms() - t0 < 10000);
    /* Bad command line. */
    rc = cli_run(&out, 30, "initiator");
    assert_int_equal(rc, 2);
    free(out);
    rc = cli_run(&out, 30, "initiator coap://127.0.0.1:1 --request \"BREW /pot\"");
    assert_int_equal(rc, 2);
    free(out);
    /* The responder kept serving through all of it. */
    rc = cli_run(&out, 30, "initiator coap://127.0.0.1:%u --json", main_responder.port);
    expect_ok_json(out, rc);
    free(out);
    /* --help documents the exit codes. */
    rc = cli_run(&out, 30, "initiator --help");
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
    assert_non_null(strstr(out, "\"payload\": \"p1\""));
    assert_non_null(strstr(out, "\"payload\": \"p50\""));
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
    int rc = cli_run(&out, 30, "coap GET coap://127.0.0.1:%u/time", r.port);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "4.01 Unauthorized"));
    free(out);
    rc = cli_run(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s", r.port, cl);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "2.05 Content (OSCORE)"));
    free(out);
    /* Same sequence number again: a replay, refused. */
    rc = cli_run(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s", r.port, cl);
    assert_int_equal(rc, 7);
    assert_non_null(strstr(out, "4.01"));
    free(out);
    rc = cli_run(&out, 30,
                 "coap POST coap://127.0.0.1:%u/echo --payload hi --oscore-context %s --seq 5 --json",
                 r.port, cl);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"code\": \"2.04 Changed\", \"oscore\": true"));
    assert_non_null(strstr(out, "\"payload\": \"hi\""));
    free(out);
    /* Observe: three notifications of /counter, each with its own Partial IV. */
    rc = cli_run(&out, 30,
                 "coap GET coap://127.0.0.1:%u/counter --observe 3 --oscore-context %s --seq 6 "
                 "--json --timeout 15",
                 r.port, cl);
    if (rc != 0)
        fail_msg("observe: %d\n%s", rc, out);
    assert_int_equal(net_count(out, "\"code\": \"2.05 Content\", \"oscore\": true"), 3);
    free(out);
    /* A wrong key: the server cannot decrypt, the client sees an OSCORE error. */
    char bad[300];
    net_path(bad, sizeof bad, "bad.conf");
    net_write_file(bad,
                   "master_secret,hex,\"ff02030405060708090a0b0c0d0e0f10\"\n"
                   "sender_id,hex,\"\"\nrecipient_id,hex,\"01\"\n",
                   0600);
    rc = cli_run(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s --seq 40",
                 r.port, bad);
    assert_int_equal(rc, 7);
    assert_non_null(strstr(out, "4.00"));
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);
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
        cmocka_unit_test_setup(test_echo_before_message_1, check_alive),
        cmocka_unit_test_setup(test_suite_negotiation, check_alive),
        cmocka_unit_test_setup(test_blockwise_x5chain, check_alive),
        cmocka_unit_test_setup(test_two_credentials, check_alive),
        cmocka_unit_test_setup(test_failures, check_alive),
        cmocka_unit_test_setup(test_parallel_50, check_alive),
        cmocka_unit_test_setup(test_coap_static_context, check_alive),
    };
    return cmocka_run_group_tests_name("cli_net", tests, setup, teardown);
}
