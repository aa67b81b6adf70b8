/*
 * End-to-end tests of the `edhoc-cli responder` daemon: state across a
 * graceful restart and a kill -9 (Echo recovery, replay refused, the
 * server's sequence numbers never repeat), a corrupt state file refused,
 * SIGHUP keeping contexts, --daemon/--pidfile, pending-handshake eviction,
 * static contexts (shared Recipient IDs, RFC 8613 Appendix B.2 started by
 * the responder after a restart, with one worker and with two)
 * (tshark's independent decryption check is in tests/test_cli_tshark.c;
 * the command line, safe defaults and files in test_cli_responder_config.c).
 */
#include "cli_responder_test_common.h"

static void test_restart_echo_replay_ssn(void **state)
{
    (void)state;
    char sdir[300], conf[300], args[600];
    net_path(sdir, sizeof sdir, "state1");
    net_path(conf, sizeof conf, "peer1.conf");
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state-dir %s", sdir);
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "state1", args), 0);
    struct ctx_hex c;
    establish(r.port, conf, &c, NULL); /* uses the client's sequence number 0 */

    char *out;
    /* A raw request with sequence number 2, kept for a replay later. */
    uint8_t old_req[512], resp[2048];
    size_t old_len = protected_get(conf, 2, old_req, sizeof old_req);
    long n = net_udp_exchange(r.port, old_req, old_len, resp, sizeof resp, 3000);
    assert_true(n > 4);
    assert_int_equal(resp[1], 0x44); /* 2.04: the outer code of an OSCORE response */
    /* Notifications carry the server's own sequence numbers. */
    int rc = CLI_RUN(&out, 30,
                     "coap GET coap://127.0.0.1:%u/counter --observe 2 --oscore-context %s --seq 3 "
                     "--json --timeout 10",
                     r.port, conf);
    if (rc != 0)
        fail_msg("observe before restart: %d\n%s", rc, out);
    long piv_before = max_piv(out);
    assert_true(piv_before >= 0);
    free(out);

    /* Graceful restart. */
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    assert_int_equal(net_responder_start(&r, "state1b", args), 0);
    char *log = net_read_file(r.log);
    assert_non_null(strstr(log, "1 stored context loaded"));
    free(log);
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s --seq 10 --json",
                 r.port, conf);
    if (rc != 0)
        fail_msg("request after restart: %d\n%s", rc, out);
    assert_non_null(strstr(
        out, "\"code\": \"2.05\",\n      \"code_name\": \"Content\",\n      \"oscore\": true"));
    assert_non_null(strstr(out, "\"echo\": true"));
    long echo_piv = first_long(out, "echo_challenge_piv");
    if (echo_piv <= piv_before)
        fail_msg("server sequence number %ld after restart, %ld before", echo_piv, piv_before);
    free(out);
    /* The pre-restart request replayed: refused. */
    n = net_udp_exchange(r.port, old_req, old_len, resp, sizeof resp, 3000);
    assert_true(n > 4);
    assert_int_equal(resp[1], 0x81); /* 4.01 Unauthorized (replay) */
    /* A second run asking for the post-restart sequence number again is
     * refused by the client itself, before anything is sent: its state
     * directory knows 10 was used (RFC 8613 Section 7.2). */
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s --seq 10", r.port,
                 conf);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "may already have been used"));
    free(out);

    /* kill -9 in the middle of notifications. */
    char bg[1200], obs_out[300];
    net_path(obs_out, sizeof obs_out, "observe.out");
    snprintf(bg, sizeof bg,
             "%s coap GET coap://127.0.0.1:%u/counter --observe 100 --oscore-context %s --seq 20 "
             "--json --timeout 6 > %s 2>&1 &",
             cli, r.port, conf, obs_out);
    rc = system(bg);
    (void)rc;
    net_sleep_ms(2500);
    assert_int_equal(net_proc_stop(&r, SIGKILL, 5000), 128 + SIGKILL);
    net_sleep_ms(4500); /* the observer gives up */
    char *obs = net_read_file(obs_out);
    assert_non_null(obs);
    long piv_killed = max_piv(obs);
    if (piv_killed <= echo_piv)
        fail_msg("no notification before the kill:\n%s", obs);
    free(obs);
    assert_int_equal(net_responder_start(&r, "state1c", args), 0);
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s --seq 200 --json",
                 r.port, conf);
    if (rc != 0)
        fail_msg("request after kill -9: %d\n%s", rc, out);
    assert_non_null(strstr(out, "\"echo\": true"));
    long echo2 = first_long(out, "echo_challenge_piv");
    if (echo2 <= piv_killed)
        fail_msg("server sequence number %ld after kill -9, %ld used before", echo2, piv_killed);
    free(out);
    n = net_udp_exchange(r.port, old_req, old_len, resp, sizeof resp, 3000);
    assert_true(n > 4);
    assert_int_equal(resp[1], 0x81);
    /* New handshakes still work next to the restored context. */
    struct ctx_hex c2;
    char conf2[300];
    net_path(conf2, sizeof conf2, "peer2.conf");
    establish(r.port, conf2, &c2, "--method 0 --suites 0");
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

static void test_corrupt_state_refused(void **state)
{
    (void)state;
    char sdir[300], file[400], args[600];
    net_path(sdir, sizeof sdir, "corrupt");
    mkdir(sdir, 0700);
    snprintf(file, sizeof file, "%s/edhoc-cli-state.sqlite", sdir);
    const char junk[] = "this is not a database, and it must survive untouched\n";
    net_write_file(file, junk, 0600);
    char *out;
    int rc = CLI_RUN(&out, 30, "responder --demo --listen 127.0.0.1:0 --state-dir %s", sdir);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "state"));
    free(out);
    char *after = net_read_file(file);
    assert_string_equal(after, junk);
    free(after);
    (void)args;
}

static void test_sighup_keeps_contexts(void **state)
{
    (void)state;
    static struct net_proc r;
    char conf[300];
    net_path(conf, sizeof conf, "hup.conf");
    assert_int_equal(net_responder_start(&r, "hup", "--listen 127.0.0.1:0"), 0);
    struct ctx_hex c;
    establish(r.port, conf, &c, NULL);
    kill(r.pid, SIGHUP);
    net_sleep_ms(400);
    char *out;
    int rc =
        CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s --seq 1 --json",
                r.port, conf);
    if (rc != 0)
        fail_msg("after SIGHUP: %d\n%s", rc, out);
    /* No Echo: the context and its replay window were kept. */
    assert_non_null(strstr(out, "\"echo\": false"));
    free(out);
    char *log = net_read_file(r.log);
    assert_non_null(strstr(log, "reloaded"));
    free(log);
    /* Handshakes work after the reload. */
    establish(r.port, conf, &c, "--method 1 --suites 2");
    assert_int_equal(net_proc_stop(&r, SIGINT, 5000), 0);
}

static void test_daemon_pidfile(void **state)
{
    (void)state;
    char pidfile[300], ready[300], log[300];
    net_path(pidfile, sizeof pidfile, "d.pid");
    net_path(ready, sizeof ready, "d.ready");
    net_path(log, sizeof log, "d.log");
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "responder --demo --listen 127.0.0.1:0 --daemon --pidfile %s --ready-file %s "
                     "--state-dir %s/d.state",
                     pidfile, ready, net_dir);
    assert_int_equal(rc, 0); /* the parent returns at once */
    /* Said before the terminal goes away, with the fix (issue #14,
     * defect 9: log lines went to /dev/null without a word). */
    assert_non_null(strstr(out, "--daemon without --syslog: once detached, log lines go nowhere "
                                "(add --syslog to keep them)"));
    free(out);
    pid_t pid;
    unsigned port;
    net_wait_daemon(pidfile, ready, 30000, &pid, &port);
    assert_int_equal(kill(pid, 0), 0);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u", port);
    assert_int_equal(rc, 0);
    free(out);
    net_stop_daemon(pid, 30000);
    assert_int_equal(access(pidfile, F_OK), -1);
    (void)log;
}

static void test_pending_eviction_and_timeout(void **state)
{
    (void)state;
    static struct net_proc r;
    /* --pressure-rate 0: a full table would otherwise put the second
     * source's message_1 under load-triggered address verification (4.01
     * + Echo, RFC 9528 Section 9.7), which tests/test_cli_amplification.c
     * covers; here the eviction itself is tested. */
    assert_int_equal(net_responder_start(&r, "pending",
                                         "--listen 127.0.0.1:0 --suites 2 --max-pending 1 "
                                         "--handshake-timeout 1 --pressure-rate 0"),
                     0);
    uint8_t msg[256], resp[1024], again[1024];
    size_t len = raw_message_1(msg, 0x1001);
    /* A retransmission (same peer, same Message ID) gets the same answer
     * and does not start a second handshake. */
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    long n = net_udp_exchange_fd(fd, r.port, msg, len, resp, sizeof resp, 3000);
    assert_true(n > 4);
    assert_int_equal(resp[1], 0x44); /* 2.04 with message_2 */
    long n2 = net_udp_exchange_fd(fd, r.port, msg, len, again, sizeof again, 3000);
    close(fd);
    assert_int_equal(n2, n);
    assert_memory_equal(again, resp, (size_t)n);
    len = raw_message_1(msg, 0x1002);
    n = net_udp_exchange(r.port, msg, len, resp, sizeof resp, 3000);
    assert_true(n > 4);
    assert_int_equal(resp[1], 0x44);
    char *log = net_read_file(r.log);
    assert_int_equal(net_count(log, "evicted (max pending 1 reached)"), 1);
    free(log);
    net_sleep_ms(2500);
    log = net_read_file(r.log);
    assert_int_equal(net_count(log, "outcome=timeout"), 1);
    free(log);
    /* message_3 for the expired handshake: an EDHOC error, 4.00. */
    const uint8_t m3[] = {0x42, 0x02, 0x10, 0x03, 0x7a, 0x03, 0xbb, '.',  'w',  'e',
                          'l',  'l',  '-',  'k',  'n',  'o',  'w',  'n',  0x05, 'e',
                          'd',  'h',  'o',  'c',  0x11, 65,   0xff, 0x27, 0x41, 0x00};
    n = net_udp_exchange(r.port, m3, sizeof m3, resp, sizeof resp, 3000);
    assert_true(n > 4);
    assert_int_equal(resp[1], 0x80);
    /* The EDHOC option (21) without an OSCORE option: 4.00 (RFC 9668). */
    const uint8_t comb[] = {0x42, 0x02, 0x10, 0x04, 0x7a, 0x04, 0xd0, 0x08, 0xff, 0x41, 0x00};
    n = net_udp_exchange(r.port, comb, sizeof comb, resp, sizeof resp, 3000);
    assert_true(n >= 4);
    assert_int_equal(resp[1], 0x80);
    /* An unprotected GET of a protected resource: 4.01. */
    const uint8_t get[] = {0x42, 0x01, 0x10, 0x05, 0x7a, 0x05, 0xb4, 't', 'i', 'm', 'e'};
    n = net_udp_exchange(r.port, get, sizeof get, resp, sizeof resp, 3000);
    assert_true(n >= 4);
    assert_int_equal(resp[1], 0x81);
    net_proc_stop(&r, SIGTERM, 5000);
}

/* ---- An observer that vanished, then SIGTERM ---- */

/* `oscore protect` of a client request given as hex (CoAP message
 * bytes) under the client context ctx_path, with sequence number seq. */
static size_t protect_hex(const char *ctx_path, unsigned seq, const char *coap_hex, uint8_t *msg,
                          size_t cap)
{
    char *out;
    int rc = CLI_RUN(&out, 30, "oscore protect --context %s --role client --seq %u %s", ctx_path,
                     seq, coap_hex);
    if (rc != 0)
        fail_msg("oscore protect: %d %s", rc, out);
    char hex[4096];
    size_t n = 0;
    for (const char *p = out; *p && *p != '\n' && n + 1 < sizeof hex; p++) {
        if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))
            hex[n++] = *p;
    }
    hex[n] = '\0';
    free(out);
    long len = hex_decode(hex, msg, cap);
    assert_true(len > 4);
    return (size_t)len;
}

/* An observer of /counter (RFC 7641) whose client is killed with SIGKILL
 * once its first confirmable notification, which it never acknowledges,
 * came again; then SIGTERM to the responder. The responder aborted (exit 134:
 * "coap_session_release: Assertion `session->ref > 0' failed"): libcoap
 * reports each unacknowledged confirmable message to the nack handler
 * while it frees its context (a notification waiting behind an
 * unacknowledged one), and the handler reached the engine freed just
 * before, which released the observer's session a second time.
 * edhoc-cli(1): SIGTERM stops the responder with status 0. With
 * --workers 2 the worker owning the context (kid 01) aborted and the
 * supervisor still exited 0; a worker that does not end cleanly is a
 * failure of the responder (docs/DESIGN.md, "Failure"). */
static void observer_killed_then_sigterm(const char *name, const char *workers)
{
    char sconf[300], cconf[300], sdir[300], marker[300], args[1200], text[400];
    snprintf(sconf, sizeof sconf, "%s/%s-server.conf", net_dir, name);
    snprintf(cconf, sizeof cconf, "%s/%s-client.conf", net_dir, name);
    snprintf(sdir, sizeof sdir, "%s/%s.state", net_dir, name);
    snprintf(marker, sizeof marker, "%s/%s.notified", net_dir, name);
    /* Recipient ID 01 at the server: worker 1 of 2 owns it and the
     * client's kid 01 is steered there. */
    static const char keys[] = "master_secret,hex,\"f0e1d2c3b4a5968778695a4b3c2d1e0f\"\n"
                               "master_salt,hex,\"9e7ca92223786340\"\n";
    snprintf(text, sizeof text, "%ssender_id,hex,\"02\"\nrecipient_id,hex,\"01\"\n", keys);
    net_write_file(sconf, text, 0600);
    snprintf(text, sizeof text, "%ssender_id,hex,\"01\"\nrecipient_id,hex,\"02\"\n", keys);
    net_write_file(cconf, text, 0600);
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --oscore-context %s --state-dir %s %s", sconf,
             sdir, workers);
    /* The engine's memory as free() leaves it, not filled with meson's
     * MALLOC_PERTURB_ pattern, which made the use after free miss the
     * observer (ASan reports it whatever the pattern). */
    char *perturb = getenv("MALLOC_PERTURB_") ? strdup(getenv("MALLOC_PERTURB_")) : NULL;
    unsetenv("MALLOC_PERTURB_");
    static struct net_proc r;
    int started = net_responder_start(&r, name, args);
    if (perturb) {
        setenv("MALLOC_PERTURB_", perturb, 1);
        free(perturb);
    }
    assert_int_equal(started, 0);
    /* CON GET, MID 0x1234, token a1b2c3, Observe 0, Uri-Path "counter". */
    uint8_t reg[512];
    size_t len = protect_hex(cconf, 1,
                             "43011234a1b2c3"
                             "60"
                             "57636f756e746572",
                             reg, sizeof reg);
    pid_t client = fork();
    assert_true(client >= 0);
    if (client == 0) {
        int fd = socket(AF_INET, SOCK_DGRAM, 0);
        uint8_t buf[2048];
        long n = net_udp_exchange_fd(fd, r.port, reg, len, buf, sizeof buf, 10000);
        if (n < 4 || buf[1] != 0x45) /* 2.05 outer: the registration's answer */
            _exit(2);
        n = recv(fd, buf, sizeof buf, 0);
        if (n < 4 || (buf[0] & 0x30) != 0x00) /* a confirmable notification */
            _exit(3);
        /* Left unacknowledged, it is sent again after ACK_TIMEOUT (2 s at
         * least, RFC 7252 Section 4.8), and meanwhile the next one (a
         * second later) waits behind it (NSTART 1, Section 4.7): that
         * waiting one is what libcoap reports to the nack handler when it
         * frees its context. */
        uint8_t mid[2] = {buf[2], buf[3]};
        do
            n = recv(fd, buf, sizeof buf, 0);
        while (n >= 4 && memcmp(buf + 2, mid, 2) != 0);
        if (n < 4)
            _exit(4);
        int m = open(marker, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (m < 0)
            _exit(5);
        close(m);
        for (;;)
            pause();
    }
    uint64_t end = net_now_ms() + 20000;
    int st = 0;
    while (access(marker, F_OK) != 0) {
        if (waitpid(client, &st, WNOHANG) == client)
            fail_msg("observer client ended with %d before a notification", WEXITSTATUS(st));
        if (net_now_ms() > end) {
            kill(client, SIGKILL);
            waitpid(client, NULL, 0);
            fail_msg("no confirmable notification within 20 s");
        }
        net_sleep_ms(20);
    }
    kill(client, SIGKILL);
    assert_int_equal(waitpid(client, &st, 0), client);
    int rc = net_proc_stop(&r, SIGTERM, 15000);
    char *log = net_read_file(r.log);
    assert_non_null(log);
    if (rc != 0 || strstr(log, "ended with") || strstr(log, "Assertion")) {
        fprintf(stderr, "%s\n", log);
        fail_msg("responder %s after SIGTERM with a vanished observer: status %d (log above)",
                 workers, rc);
    }
    free(log);
}

static void test_vanished_observer_then_sigterm(void **state)
{
    (void)state;
    observer_killed_then_sigterm("obs-gone", "--workers 1");
}

static void test_vanished_observer_then_sigterm_two_workers(void **state)
{
    (void)state;
    observer_killed_then_sigterm("obs-gone2", "--workers 2");
}

/* ---- Static contexts keyed by (ID Context, Recipient ID) ---- */

/* An OSCORE context file: the keying material of RFC 8613 Appendix C.1
 * (client Sender ID '', server Sender ID 01) with the given ID Context
 * line ("" for none). server: the server's view, else the client's. */
static void write_static_ctx(const char *name, char *path, size_t cap, const char *id_context,
                             bool server, const char *secret)
{
    net_path(path, cap, name);
    char conf[600];
    snprintf(conf, sizeof conf,
             "master_secret,hex,\"%s\"\nmaster_salt,hex,\"9e7ca92223786340\"\n%s"
             "sender_id,hex,\"%s\"\nrecipient_id,hex,\"%s\"\n",
             secret, id_context, server ? "01" : "", server ? "" : "01");
    net_write_file(path, conf, 0600);
}

#define C1_SECRET "0102030405060708090a0b0c0d0e0f10"
#define IDC_B     "id_context,hex,\"37cbf3210017a2d3\"\n"
#define IDC_D     "id_context,hex,\"44616c656b\"\n"
#define IDC_EMPTY "id_context,hex,\"\"\n"

/* `edhoc-cli coap GET /time` with a client context, its sequence numbers
 * kept in the test's client state directory; extra: more options or "".
 * Returns the exit code. */
static int static_get(uint16_t port, const char *ctx, const char *extra, char **out)
{
    char cstate[300], line[1400];
    net_path(cstate, sizeof cstate, "client-state");
    snprintf(
        line, sizeof line,
        "STATE_DIRECTORY=%s %s coap GET coap://127.0.0.1:%u/time --oscore-context %s --json %s",
        cstate, cli, port, ctx, extra);
    return net_sh(line, out, 30);
}

static void expect_content(uint16_t port, const char *ctx, bool echo)
{
    char *out;
    int rc = static_get(port, ctx, "", &out);
    if (rc != 0 ||
        !strstr(out,
                "\"code\": \"2.05\",\n      \"code_name\": \"Content\",\n      \"oscore\": true"))
        fail_msg("GET /time with %s: %d\n%s", ctx, rc, out);
    if (echo && !strstr(out, "\"echo\": true"))
        fail_msg("GET /time with %s: no Echo challenge after the restart\n%s", ctx, out);
    free(out);
}

/* RFC 8613 Section 3.3: "If an endpoint has the same Recipient ID with
 * different Recipient Contexts ... the endpoint may need to try multiple
 * times"; Section 5.1 / 8.2: "If 'kid context' is present in the request,
 * then the server SHALL use a security context with that ID Context".
 * Contexts B and D of the interop plugtest share a Recipient ID and
 * differ only in their ID Context: both are served, each request verified
 * by its own, and each keeps its own sequence-number mark across a
 * restart (Section 7.2.1). */
static void test_static_contexts_share_recipient_id(void **state)
{
    (void)state;
    char srv_b[300], srv_d[300], cl_b[300], cl_d[300], cl_other[300], sdir[300], args[1200];
    write_static_ctx("srv_b.conf", srv_b, sizeof srv_b, IDC_B, true, C1_SECRET);
    write_static_ctx("srv_d.conf", srv_d, sizeof srv_d, IDC_D, true, C1_SECRET);
    write_static_ctx("cl_b.conf", cl_b, sizeof cl_b, IDC_B, false, C1_SECRET);
    write_static_ctx("cl_d.conf", cl_d, sizeof cl_d, IDC_D, false, C1_SECRET);
    write_static_ctx("cl_other.conf", cl_other, sizeof cl_other, "id_context,hex,\"ffff\"\n", false,
                     C1_SECRET);
    net_path(sdir, sizeof sdir, "static-state");
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:0 --state-dir %s --oscore-context %s --oscore-context %s", sdir,
             srv_b, srv_d);
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "static-bd", args), 0);
    expect_content(r.port, cl_b, false);
    expect_content(r.port, cl_d, false);
    expect_content(r.port, cl_b, false);

    /* A 'kid context' no context has: Section 8.2 step 2, "Security
     * context not found" (4.01), even though the kid is known. */
    char *out;
    int rc = static_get(r.port, cl_other, "", &out);
    if (rc != 7 || !strstr(out, "4.01"))
        fail_msg("unknown kid context: %d\n%s", rc, out);
    free(out);
    char *log = net_read_file(r.log);
    assert_non_null(strstr(log, "no context for this kid context and kid"));
    free(log);

    /* After a restart each resumes from the mark stored under its own
     * (ID Context, Recipient ID): Appendix B.1.2, an Echo challenge first. */
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    assert_int_equal(net_responder_start(&r, "static-bd2", args), 0);
    expect_content(r.port, cl_d, true);
    expect_content(r.port, cl_b, true);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);

    /* The same (ID Context, Recipient ID) twice is one context configured
     * twice: refused, even with other keying material. */
    char srv_b2[300];
    write_static_ctx("srv_b2.conf", srv_b2, sizeof srv_b2, IDC_B, true,
                     "ff02030405060708090a0b0c0d0e0f10");
    rc = CLI_RUN(&out, 30,
                 "responder --demo --listen 127.0.0.1:0 --state-dir %s --oscore-context %s "
                 "--oscore-context %s",
                 sdir, srv_b, srv_b2);
    if (rc != 3 || !strstr(out, "already in use"))
        fail_msg("the same ID Context and Recipient ID twice: %d\n%s", rc, out);
    free(out);
}

/* RFC 8613 Section 3.2.1: id_context is "the ID Context, or nil if ID
 * Context is not provided", so no ID Context and an empty one are two
 * contexts. A request without 'kid context' may belong to any context
 * with its kid (Section 3.3, "may need to try multiple times"): the
 * responder tries the one added last first, so the request of the context
 * without ID Context is first refused by the other two, and still answered
 * 2.05. */
static void test_static_contexts_tried_in_turn(void **state)
{
    (void)state;
    char srv_none[300], srv_empty[300], srv_b[300], cl_none[300], cl_empty[300], cl_b[300],
        cl_bad[300], sdir[300], args[1400];
    write_static_ctx("srv_none.conf", srv_none, sizeof srv_none, "", true, C1_SECRET);
    write_static_ctx("srv_empty.conf", srv_empty, sizeof srv_empty, IDC_EMPTY, true, C1_SECRET);
    write_static_ctx("srv_b3.conf", srv_b, sizeof srv_b, IDC_B, true, C1_SECRET);
    write_static_ctx("cl_none.conf", cl_none, sizeof cl_none, "", false, C1_SECRET);
    write_static_ctx("cl_empty.conf", cl_empty, sizeof cl_empty, IDC_EMPTY, false, C1_SECRET);
    write_static_ctx("cl_b3.conf", cl_b, sizeof cl_b, IDC_B, false, C1_SECRET);
    write_static_ctx("cl_bad.conf", cl_bad, sizeof cl_bad, "", false,
                     "ff02030405060708090a0b0c0d0e0f10");
    net_path(sdir, sizeof sdir, "turn-state");
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:0 --state-dir %s --oscore-context %s --oscore-context %s "
             "--oscore-context %s",
             sdir, srv_none, srv_empty, srv_b);
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "static-turn", args), 0);
    /* Each client starts at sequence number 0. The two with an ID Context
     * go first, so Partial IV 0 is in the replay windows of both contexts
     * tried before the one without ID Context: their window check (before
     * the AEAD) must not end the search. */
    expect_content(r.port, cl_b, false);
    expect_content(r.port, cl_empty, false);
    expect_content(r.port, cl_none, false);
    expect_content(r.port, cl_none, false);
    /* A key no context has, with a Partial IV the context without ID
     * Context has accepted: that context refuses before decrypting
     * (Section 8.2 step 3 comes before step 6) and no other verifies it,
     * so "Replay detected", the answer that context alone would give. */
    char *out;
    int rc = static_get(r.port, cl_bad, "--seq 0", &out);
    if (rc != 7 || !strstr(out, "Replay detected"))
        fail_msg("a Partial IV seen by one candidate: %d\n%s", rc, out);
    free(out);
    /* With a fresh Partial IV it is verified by none of them: Section 8.2
     * step 6, "Decryption failed". */
    rc = static_get(r.port, cl_bad, "--seq 40", &out);
    if (rc != 7 || !strstr(out, "4.00") || !strstr(out, "Decryption failed"))
        fail_msg("a key no context has: %d\n%s", rc, out);
    free(out);
    /* The failed trial changed no context: the next requests still pass. */
    expect_content(r.port, cl_none, false);
    expect_content(r.port, cl_empty, false);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* EAD with the built-in credentials: the responder's EAD items and its
 * EAD callback context must outlive the set-up of each demo identity (they
 * once pointed into a dead stack frame: a crash, or EAD_2 read from
 * garbage). RFC 9528 Section 5.3.2: context_2 ends with EAD_2, here label 5
 * with the value h'a1b2c3d4' (05 44 a1b2c3d4). */
/* ---- RFC 8613 Appendix B.2, the responder initiating ---- */

/* A context file with RFC 8613 Appendix C.1's keying material: the
 * server's view (Sender ID sid, Recipient ID rid) or, with server false,
 * the client's (the two swapped); idc: an id_context line or "". */
static void b2_conf(const char *name, char *path, size_t cap, const char *sid, const char *rid,
                    const char *idc, bool server, bool b2)
{
    net_path(path, cap, name);
    char conf[600];
    snprintf(conf, sizeof conf,
             "master_secret,hex,\"" C1_SECRET "\"\nmaster_salt,hex,\"9e7ca92223786340\"\n%s"
             "sender_id,hex,\"%s\"\nrecipient_id,hex,\"%s\"\n%s",
             idc, server ? sid : rid, server ? rid : sid, b2 ? "rfc8613_b_2,bool,true\n" : "");
    net_write_file(path, conf, 0600);
}

#define IDC_B2 "id_context,hex,\"0017a2d3\"\n"
#define ID1_B2 "\"0017a2d3\""

/* Wait (at most 10 s) for text in a responder's log. */
static void expect_log(const struct net_proc *r, const char *text)
{
    uint64_t end = net_now_ms() + 10000;
    for (;;) {
        char *log = net_read_file(r->log);
        bool found = log && strstr(log, text);
        if (found || net_now_ms() > end) {
            if (!found)
                fail_msg("'%s' not in the log:\n%s", text, log ? log : "");
            free(log);
            return;
        }
        free(log);
        net_sleep_ms(50);
    }
}

/* The stats line on SIGUSR1 (each worker logs its own; the B.2 context
 * lives in one). */
static void expect_b2_stats(const struct net_proc *r, const char *counts)
{
    kill(r->pid, SIGUSR1);
    char text[200];
    snprintf(text, sizeof text, "SIGUSR1: contexts=");
    expect_log(r, text);
    expect_log(r, counts);
}

/* A GET /time under a context file that must pass through B.2: 2.05,
 * and oscore_b2 tells the run (ID1 the file's ID Context, ID3 = R2 || R3,
 * step 5 done). */
static void expect_b2_run(uint16_t port, const char *ctx, const char *extra, const char *id1)
{
    char *out;
    int rc = static_get(port, ctx, extra, &out);
    if (rc != 0 ||
        !strstr(out,
                "\"code\": \"2.05\",\n      \"code_name\": \"Content\",\n      \"oscore\": true"))
        fail_msg("GET /time with %s: %d\n%s", ctx, rc, out);
    if (net_json_valid(out, "coap", false))
        fail_msg("not valid against docs/json/coap.schema.json:\n%s", out);
    char want[80];
    snprintf(want, sizeof want, "\"previous_id_context_hex\": %s", id1);
    if (!strstr(out, want) || !strstr(out, "\"completed\": true"))
        fail_msg("no completed Appendix B.2 run from ID1 = %s:\n%s", id1, out);
    char r2[64], id3[64];
    net_json_str(out, "r2_hex", r2, sizeof r2);
    net_json_str(out, "id_context_hex", id3, sizeof id3);
    /* "R2 ... typically, at least 8 bytes long"; ID3 = R2 || R3. */
    assert_int_equal(strlen(r2), 16);
    assert_int_equal(strlen(id3), 32);
    assert_memory_equal(id3, r2, 16);
    free(out);
}

/* Appendix B.2 step 2: "The server receives an OSCORE request for which
 * it does not have a valid security context, ... because the server has
 * lost part of its security context, e.g., ID Context, Sender Sequence
 * Number or Replay Window." A static context with rfc8613_b_2 answers the
 * first request after a restart with response #1 (instead of Appendix
 * B.1.2's Echo), and step 4's request #2 is served: "Request #2 can be an
 * ordinary request. The server performs the action of the request".
 * Requests after it go under ID3 without another run; a client that
 * starts again from its file (ID1, which "the first and the second
 * security contexts are deleted" left the server without) runs B.2
 * again, and so does every restart. A context without rfc8613_b_2 keeps
 * the Echo challenge. workers: "" or a --workers option. */
static void b2_scenario(const char *tag, const char *workers)
{
    char srv_b2[300], cl_b2[300], srv_echo[300], cl_echo[300], cl_forged[300], sdir[300];
    char args[1400], name[64];
    b2_conf("srv_b2.conf", srv_b2, sizeof srv_b2, "01", "", IDC_B2, true, true);
    b2_conf("cl_b2.conf", cl_b2, sizeof cl_b2, "01", "", IDC_B2, false, false);
    /* Recipient ID 03: with two workers, owned by the other one. */
    b2_conf("srv_echo.conf", srv_echo, sizeof srv_echo, "04", "03", "", true, false);
    b2_conf("cl_echo.conf", cl_echo, sizeof cl_echo, "04", "03", "", false, false);
    snprintf(name, sizeof name, "b2-state-%s", tag);
    net_path(sdir, sizeof sdir, name);
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:0 --state-dir %s --oscore-context %s --oscore-context %s %s", sdir,
             srv_b2, srv_echo, workers);
    static struct net_proc r;
    snprintf(name, sizeof name, "b2-%s-1", tag);
    assert_int_equal(net_responder_start(&r, name, args), 0);
    /* First start: both contexts are new, their replay windows valid. */
    expect_content(r.port, cl_b2, false);
    expect_content(r.port, cl_echo, false);
    expect_b2_stats(&r, "b2_started=0 b2_completed=0 b2_refused=0");
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);

    snprintf(name, sizeof name, "b2-%s-2", tag);
    assert_int_equal(net_responder_start(&r, name, args), 0);
    /* The client's first request gets response #1, its own request #1
     * (a GET without body) another, then request #2 under R2 || R3 is
     * served; --repeat sends two more under ID3, which need no run. */
    expect_b2_run(r.port, cl_b2, "--repeat 3", ID1_B2);
    expect_log(&r, "RFC 8613 Appendix B.2 completed for kid=''");
    expect_b2_stats(&r, "b2_started=2 b2_completed=1 b2_refused=0");
    /* Not B.2: Appendix B.1.2's Echo, as before. */
    expect_content(r.port, cl_echo, true);
    /* The next run starts from the file (ID1), which the server no longer
     * has: B.2 again, replacing the first run's ID3. */
    expect_b2_run(r.port, cl_b2, "", ID1_B2);
    expect_b2_stats(&r, "b2_started=4 b2_completed=2 b2_refused=0");

    /* A forged request #2: a 'kid context' R2 || R3 whose R2 the server
     * never sent ("the first part of ID3 is identical to an R2 sent in a
     * previous response #1" fails). It is no request #2, and as request
     * #1 its R2 || ID1 would exceed an ID Context: unprotected 4.01
     * "Security context not found" (Section 8.2 step 2), Max-Age 0. */
    b2_conf("cl_forged.conf", cl_forged, sizeof cl_forged, "01", "",
            "id_context,hex,\"a0a1a2a3a4a5a6a7b0b1b2b3b4b5b6b7\"\n", false, false);
    uint8_t msg[512], resp[512];
    size_t len = protected_get(cl_forged, 1, msg, sizeof msg);
    long n = net_udp_exchange(r.port, msg, len, resp, sizeof resp, 3000);
    static const uint8_t not_found[] = "Security context not found";
    assert_true(n > 4 + (long)sizeof not_found - 1);
    assert_int_equal(resp[0] & 0x30, 0x20); /* ACK */
    assert_int_equal(resp[1], 0x81);        /* 4.01 */
    assert_memory_equal(resp + n - (sizeof not_found - 1), not_found, sizeof not_found - 1);
    assert_int_equal(resp[n - sizeof not_found], 0xff);
    /* Its options: Max-Age 0 (14) only, no OSCORE option (9): Section
     * 8.2, "the server ... MAY respond with a 4.01 ... error message
     * ... unprotected". */
    size_t at = 4 + (resp[0] & 0x0f);
    unsigned number = 0, options[4], n_options = 0;
    while (at < (size_t)n && resp[at] != 0xff && n_options < 4) {
        unsigned delta = resp[at] >> 4, olen = resp[at] & 0x0f;
        at++;
        assert_true(delta < 14 && olen < 13);
        if (delta == 13)
            delta = 13u + resp[at++];
        number += delta;
        options[n_options++] = number;
        at += olen;
    }
    assert_int_equal(n_options, 1);
    assert_int_equal(options[0], 14);
    assert_int_equal(resp[4 + (resp[0] & 0x0f)], 0xd0); /* Max-Age, empty: 0 */
    expect_log(&r, "Appendix B.2 request #1 refused: ");
    expect_b2_stats(&r, "b2_started=4 b2_completed=2 b2_refused=1");
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    expect_log(&r, "stopping: contexts=");
    expect_log(&r, "b2_started=4 b2_completed=2 b2_refused=1");

    /* After a restart the last ID3 is not resumed (its replay window is
     * gone: step 2's case again) and its row goes; the configured context
     * resumes above its mark and runs B.2 instead of Echo. */
    snprintf(name, sizeof name, "b2-%s-3", tag);
    assert_int_equal(net_responder_start(&r, name, args), 0);
    expect_log(&r, "1 context of RFC 8613 Appendix B.2 runs before the restart deleted");
    expect_b2_run(r.port, cl_b2, "", ID1_B2);
    expect_content(r.port, cl_echo, true);
    expect_b2_stats(&r, "b2_started=2 b2_completed=1 b2_refused=0");
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

static void test_static_context_b2(void **state)
{
    (void)state;
    b2_scenario("w1", "");
}

/* Without an ID Context, requests carry no 'kid context' (Section 5.1),
 * so ID1 is empty and ID2 = R2. A client that starts again from its
 * file after a run sends a request the run's ID3 cannot verify: step 2
 * answers it ("it does not have a valid security context"), B.2 again. */
static void test_static_context_b2_no_id_context(void **state)
{
    (void)state;
    char srv[300], cl[300], sdir[300], args[900];
    b2_conf("srv_b2n.conf", srv, sizeof srv, "01", "", "", true, true);
    b2_conf("cl_b2n.conf", cl, sizeof cl, "01", "", "", false, false);
    net_path(sdir, sizeof sdir, "b2n-state");
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state-dir %s --oscore-context %s", sdir,
             srv);
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "b2n-1", args), 0);
    expect_content(r.port, cl, false);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    assert_int_equal(net_responder_start(&r, "b2n-2", args), 0);
    expect_b2_run(r.port, cl, "", "null");
    expect_log(&r, "(replay window lost at the restart): RFC 8613 Appendix B.2 started");
    expect_b2_run(r.port, cl, "", "null");
    expect_log(&r, "(not verified under the context in use): RFC 8613 Appendix B.2 started");
    expect_b2_stats(&r, "b2_started=4 b2_completed=2 b2_refused=0");
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);

    /* Step 2's ID2 = R2 || ID1 must fit an ID Context (16 bytes, Section
     * 3.3 via OSCORE_MAX_ID_CONTEXT) with 8-byte R2s ("typically, at
     * least 8 bytes long"): a 9-byte ID Context is refused at the start,
     * and so is a second B.2 context with the same Recipient ID. */
    char long_idc[300], twin[300], *out;
    b2_conf("srv_b2long.conf", long_idc, sizeof long_idc, "01", "",
            "id_context,hex,\"000102030405060708\"\n", true, true);
    int rc = CLI_RUN(&out, 30,
                     "responder --demo --listen 127.0.0.1:0 --state-dir %s "
                     "--oscore-context %s",
                     sdir, long_idc);
    if (rc != 3 || !strstr(out, "Appendix B.2 would exceed 16 bytes"))
        fail_msg("a 9-byte ID Context with rfc8613_b_2: %d\n%s", rc, out);
    free(out);
    b2_conf("srv_b2twin.conf", twin, sizeof twin, "01", "", IDC_B2, true, true);
    rc = CLI_RUN(&out, 30,
                 "responder --demo --listen 127.0.0.1:0 --state-dir %s "
                 "--oscore-context %s --oscore-context %s",
                 sdir, srv, twin);
    if (rc != 3 || !strstr(out, "already in use"))
        fail_msg("two B.2 contexts with one Recipient ID: %d\n%s", rc, out);
    free(out);
}

/* Contexts live in the worker owning their Recipient ID, and requests
 * are steered there by kid: B.2's state stays with its context. */
static void test_static_context_b2_two_workers(void **state)
{
    (void)state;
    b2_scenario("w2", "--workers 2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_restart_echo_replay_ssn, net_test_teardown),
        cmocka_unit_test_teardown(test_corrupt_state_refused, net_test_teardown),
        cmocka_unit_test_teardown(test_sighup_keeps_contexts, net_test_teardown),
        cmocka_unit_test_teardown(test_daemon_pidfile, net_test_teardown),
        cmocka_unit_test_teardown(test_pending_eviction_and_timeout, net_test_teardown),
        cmocka_unit_test_teardown(test_vanished_observer_then_sigterm, net_test_teardown),
        cmocka_unit_test_teardown(test_vanished_observer_then_sigterm_two_workers,
                                  net_test_teardown),
        cmocka_unit_test_teardown(test_static_contexts_share_recipient_id, net_test_teardown),
        cmocka_unit_test_teardown(test_static_contexts_tried_in_turn, net_test_teardown),
        cmocka_unit_test_teardown(test_static_context_b2, net_test_teardown),
        cmocka_unit_test_teardown(test_static_context_b2_two_workers, net_test_teardown),
        cmocka_unit_test_teardown(test_static_context_b2_no_id_context, net_test_teardown),
    };
    /* One test by name (a glob): CMOCKA_TEST_FILTER=test_sigterm_* */
    if (getenv("CMOCKA_TEST_FILTER"))
        cmocka_set_test_filter(getenv("CMOCKA_TEST_FILTER"));
    return cmocka_run_group_tests_name("cli_responder", tests, setup, net_group_teardown);
}
