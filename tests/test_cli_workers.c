/*
 * `edhoc-cli responder --workers N`: several processes on one port.
 *
 * What must hold whichever worker the kernel hands a datagram to:
 *   - an OSCORE request finds its context from any source address and
 *     port (RFC 8613 Section 8.2 step 2 looks the context up by 'kid' and
 *     'kid context', never by address; a NAT rebinding or a client's new
 *     socket must not turn into "Security context not found");
 *   - a handshake's messages reach the worker holding it (RFC 9528
 *     Section 3.4.1: message_3 is matched to the state of message_2 by
 *     C_R), and the C_R it picks names that worker, so the context's
 *     requests are steered to it later;
 *   - contexts and sequence-number marks survive a restart, each loaded
 *     by the worker that owns it (RFC 8613 Appendix B.1.1).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net_test_util.h"
#include "vectors.h"

#define CLI_RUN(out, timeout_s, ...) net_cli_run(out, timeout_s, false, __VA_ARGS__)

static const char *cli;

/* A static context in libcoap's format: the RFC 8613 Appendix C.1 keying
 * material with the server's Recipient ID rid (the client's Sender ID).
 * The server's Sender ID is 5a followed by rid: "the quartet (Master
 * Secret, Master Salt, ID Context, Sender ID) MUST be unique" (RFC 8613
 * Section 3.3), and a responder refuses two contexts with one sender key. */
static void write_ctx(const char *name, char *path, size_t cap, const char *rid, bool server)
{
    net_path(path, cap, name);
    char conf[600], srv_sid[20];
    snprintf(srv_sid, sizeof srv_sid, "5a%s", rid);
    snprintf(conf, sizeof conf,
             "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
             "master_salt,hex,\"9e7ca92223786340\"\n"
             "sender_id,hex,\"%s\"\nrecipient_id,hex,\"%s\"\n",
             server ? srv_sid : rid, server ? rid : srv_sid);
    net_write_file(path, conf, 0600);
}

/* A responder named name with two workers and the static contexts of
 * Recipient IDs 01 (owned by worker 1) and 02 (worker 0) in a state
 * directory of its own; c1, c2: the clients' context files (300 bytes). */
static void start_two_owners(struct net_proc *r, const char *name, char *c1, char *c2)
{
    char s1[300], s2[300], file[100], sdir[300], args[1400];
    snprintf(file, sizeof file, "%s-srv01.conf", name);
    write_ctx(file, s1, sizeof s1, "01", true);
    snprintf(file, sizeof file, "%s-srv02.conf", name);
    write_ctx(file, s2, sizeof s2, "02", true);
    snprintf(file, sizeof file, "%s-cl01.conf", name);
    write_ctx(file, c1, 300, "01", false);
    snprintf(file, sizeof file, "%s-cl02.conf", name);
    write_ctx(file, c2, 300, "02", false);
    snprintf(file, sizeof file, "%s-state", name);
    net_path(sdir, sizeof sdir, file);
    snprintf(args, sizeof args,
             "--workers 2 --listen 127.0.0.1:0 --state-dir %s --oscore-context %s "
             "--oscore-context %s",
             sdir, s1, s2);
    assert_int_equal(net_responder_start(r, name, args), 0);
}

/* GET /time under a client context, from a new socket (a new source
 * port) each time. Returns the exit code; *code the CoAP code seen. */
static int get_time(uint16_t port, const char *ctx, char **out)
{
    char cstate[300], line[1400];
    net_path(cstate, sizeof cstate, "client-state");
    snprintf(line, sizeof line,
             "STATE_DIRECTORY=%s %s coap GET coap://127.0.0.1:%u/time --oscore-context %s --json",
             cstate, cli, port, ctx);
    return net_sh(line, out, 30);
}

/* SIGTERM: every worker and the supervisor end with 0 (its log shown
 * otherwise). */
static void stop_ok(struct net_proc *r)
{
    int rc = net_proc_stop(r, SIGTERM, 10000);
    if (rc != 0) {
        char *log = net_read_file(r->log);
        fail_msg("responder exit %d:\n%s", rc, log ? log : "");
    }
}

static void expect_time(uint16_t port, const char *ctx, int tries)
{
    for (int i = 0; i < tries; i++) {
        char *out = NULL;
        int rc = get_time(port, ctx, &out);
        if (rc != 0 || !strstr(out, "\"code\": \"2.05\""))
            fail_msg("GET /time with %s, try %d (a new source port each): exit %d\n%s", ctx, i, rc,
                     out ? out : "");
        free(out);
    }
}

/* Static contexts owned by worker 0 (Recipient ID 02) and worker 1 (01):
 * every request, from a new port each time, verifies. With the kernel's
 * address hash alone about half of them would reach the other worker
 * and get 4.01. */
static void test_static_contexts_from_any_port(void **state)
{
    (void)state;
    char c1[300], c2[300];
    static struct net_proc r;
    start_two_owners(&r, "static", c1, c2);
    expect_time(r.port, c1, 8);
    expect_time(r.port, c2, 8);
    stop_ok(&r);
    char *log = net_read_file(r.log);
    assert_non_null(log);
    /* Each context served by one worker (by both, the sum would be 4),
     * said once for the responder (issue 26). */
    assert_int_equal(net_count(log, "serving "), 1);
    assert_int_equal(net_count(log, ", 2 static;"), 1);
    assert_int_equal(net_count(log, "with 2 workers"), 1);
    assert_non_null(strstr(log, "stopping 2 workers on signal 15"));
    free(log);
}

/* C_R of every handshake a worker ran, by process: each process's C_Rs
 * end in the same residue modulo 2, and the two processes' differ. */
static void check_c_r_partition(const char *log)
{
    int pid_of[2] = {0, 0}, parity_of[2] = {-1, -1}, seen = 0;
    for (const char *p = log; (p = strstr(p, "edhoc-cli[")); p++) {
        int pid = atoi(p + 10);
        const char *eol = strchr(p, '\n');
        const char *c = strstr(p, " C_R=");
        if (!c || (eol && c > eol) || !strstr(p, "outcome=ok"))
            continue;
        unsigned cr = 0;
        /* The last byte of C_R names the owner. */
        const char *end = c + 5;
        while ((end[0] >= '0' && end[0] <= '9') || (end[0] >= 'a' && end[0] <= 'f'))
            end++;
        assert_true(end - (c + 5) >= 2);
        sscanf(end - 2, "%2x", &cr);
        int k = pid == pid_of[0] ? 0 : pid == pid_of[1] ? 1 : seen < 2 ? seen : -1;
        assert_true(k >= 0);
        if (k == seen) {
            pid_of[k] = pid;
            seen++;
        }
        if (parity_of[k] < 0)
            parity_of[k] = (int)(cr % 2);
        if (parity_of[k] != (int)(cr % 2))
            fail_msg("worker pid %d chose C_R %.*s, not of its residue %d", pid,
                     (int)(end - (c + 5)), c + 5, parity_of[k]);
    }
    if (seen == 2)
        assert_int_not_equal(parity_of[0], parity_of[1]);
}

/* EDHOC through both workers, then the derived context from a new port
 * (a rebinding), then the same after a restart: each worker loads the
 * rows it owns and the context answers again (with an Echo round trip,
 * RFC 8613 Appendix B.1.2). */
static void test_handshakes_rebinding_and_restart(void **state)
{
    (void)state;
    char sdir[300], args[600], conf[300], cstate[300];
    net_path(sdir, sizeof sdir, "edhoc-state");
    net_path(conf, sizeof conf, "derived.conf");
    net_path(cstate, sizeof cstate, "client-state");
    snprintf(args, sizeof args, "--workers 2 --listen 127.0.0.1:0 --state-dir %s", sdir);
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "edhoc", args), 0);
    for (int i = 0; i < 10; i++) {
        char *out = NULL;
        char line[1400];
        snprintf(line, sizeof line,
                 "STATE_DIRECTORY=%s %s initiator coap://127.0.0.1:%u --request \"GET /time\" "
                 "--export-oscore-conf %s -q",
                 cstate, cli, r.port, conf);
        int rc = net_sh(line, &out, 30);
        if (rc != 0)
            fail_msg("handshake %d: exit %d\n%s", i, rc, out ? out : "");
        free(out);
    }
    /* The last context, used from other ports. */
    expect_time(r.port, conf, 6);
    stop_ok(&r);
    char *log = net_read_file(r.log);
    assert_non_null(log);
    check_c_r_partition(log);
    free(log);

    static struct net_proc r2;
    assert_int_equal(net_responder_start(&r2, "edhoc2", args), 0);
    expect_time(r2.port, conf, 4);
    stop_ok(&r2);
    log = net_read_file(r2.log);
    assert_non_null(log);
    /* 10 contexts stored, each loaded by exactly one of the two, said
     * once for both (issue 26). */
    assert_int_equal(net_count(log, "serving "), 1);
    assert_non_null(strstr(log, "serving built-in demo credentials, 10 stored contexts loaded"));
    free(log);
}

/* Issue 24: the writer process commits the workers' state in batches
 * across its poll passes (group commit): 40 handshakes through two
 * workers end in fewer commits than handshakes, and a clean stop loses
 * none of them (the restart loads all 40, each in the worker that owns
 * it). */
static void test_group_commit_across_workers(void **state)
{
    (void)state;
    char sdir[300], args[600];
    net_path(sdir, sizeof sdir, "grouped-state");
    snprintf(args, sizeof args, "--workers 2 --listen 127.0.0.1:0 --state-dir %s", sdir);
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "grouped", args), 0);
    char *out = NULL;
    int rc = CLI_RUN(&out, 60,
                     "load coap://127.0.0.1:%u --peers 8 --handshakes 40 --requests-per-peer 0 -q",
                     r.port);
    if (rc != 0)
        fail_msg("load: exit %d\n%s", rc, out ? out : "");
    free(out);
    stop_ok(&r);
    char *log = net_read_file(r.log);
    assert_non_null(log);
    const char *w = strstr(log, "state writer served ");
    if (!w)
        fail_msg("no writer line in:\n%s", log);
    unsigned long long requests = 0, commits = 0, rows = 0;
    if (sscanf(w, "state writer served %llu requests in %llu commits of %llu rows", &requests,
               &commits, &rows) != 3)
        fail_msg("writer line: %.200s", w);
    print_message("# 40 handshakes: %llu requests, %llu commits of %llu rows\n", requests, commits,
                  rows);
    assert_true(rows >= 40);
    assert_true(commits < 40);
    free(log);

    static struct net_proc r2;
    assert_int_equal(net_responder_start(&r2, "grouped2", args), 0);
    stop_ok(&r2);
    log = net_read_file(r2.log);
    assert_non_null(log);
    int loaded = 0;
    for (const char *p = log; (p = strstr(p, "serving built-in demo credentials, ")); p++)
        loaded += atoi(p + strlen("serving built-in demo credentials, "));
    assert_int_equal(loaded, 40);
    free(log);
}

/* A worker that dies takes the responder down (its socket's slot in the
 * group would be taken by another: docs/DESIGN.md), with the reason. */
static void test_dead_worker_stops_all(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "dies",
                                         "--workers 2 --listen 127.0.0.1:0 "
                                         "--state-dir none"),
                     0);
    char line[300], *out = NULL;
    /* The supervisor's children: kill one. */
    snprintf(line, sizeof line, "pkill -KILL -P %d -n", (int)r.pid);
    assert_int_equal(net_sh(line, &out, 10), 0);
    free(out);
    uint64_t end = net_now_ms() + 10000;
    int st = 0;
    pid_t got = 0;
    while (net_now_ms() < end && (got = waitpid(r.pid, &st, WNOHANG)) == 0)
        net_sleep_ms(20);
    assert_int_equal(got, r.pid);
    r.pid = 0;
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 10); /* killed: an internal failure */
    char *log = net_read_file(r.log);
    assert_non_null(strstr(log, "ended with signal 9"));
    assert_non_null(strstr(log, "stopping the other workers"));
    free(log);
}

/* The first pid in /proc/PID/task/PID/children, or 0. */
static pid_t first_child(pid_t pid)
{
    char path[80];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    char *text = net_read_file(path);
    pid_t child = text ? (pid_t)atoi(text) : 0;
    free(text);
    return child;
}

/* Whether the line "Key:\t..." of /proc/PID/status, read as hex, has bit. */
static bool status_bit(pid_t pid, const char *key, unsigned long long bit)
{
    char path[80];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *text = net_read_file(path);
    const char *p = text ? strstr(text, key) : NULL;
    bool set = p && (strtoull(p + strlen(key), NULL, 16) & bit);
    free(text);
    return set;
}

/* Process state letter (the field after "(comm)" in /proc/PID/stat). */
static char proc_state(pid_t pid)
{
    char path[80];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    char *text = net_read_file(path);
    const char *p = text ? strrchr(text, ')') : NULL;
    char st = p && p[1] == ' ' ? p[2] : '?';
    free(text);
    return st;
}

/* A worker that does not end cleanly while the responder stops is a
 * failure, as one that dies while serving (docs/DESIGN.md, "Failure"):
 * a worker aborted in its shutdown (an observer's session released twice,
 * exit 134) and the supervisor exited 0, which hid it from the service
 * manager. Here a worker is held stopped until the supervisor's SIGTERM
 * is pending in it, then gets SIGABRT first (the lower signal number is
 * delivered first): the supervisor reports it and exits 10, as for a
 * worker killed while serving (edhoc-cli(1): an internal failure). */
static void test_worker_abort_while_stopping_reported(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "aborts",
                                         "--workers 2 --listen 127.0.0.1:0 "
                                         "--state-dir none"),
                     0);
    pid_t worker = first_child(r.pid);
    assert_true(worker > 0);
    assert_int_equal(kill(worker, SIGSTOP), 0);
    uint64_t end = net_now_ms() + 10000;
    while (proc_state(worker) != 'T' && net_now_ms() < end)
        net_sleep_ms(10);
    assert_int_equal(proc_state(worker), 'T');
    assert_int_equal(kill(r.pid, SIGTERM), 0);
    const unsigned long long sigterm = 1ull << (SIGTERM - 1);
    while (!status_bit(worker, "ShdPnd:", sigterm) && !status_bit(worker, "SigPnd:", sigterm) &&
           net_now_ms() < end)
        net_sleep_ms(10);
    assert_true(status_bit(worker, "ShdPnd:", sigterm) || status_bit(worker, "SigPnd:", sigterm));
    assert_int_equal(kill(worker, SIGABRT), 0);
    assert_int_equal(kill(worker, SIGCONT), 0);
    int st = 0;
    pid_t got = 0;
    end = net_now_ms() + 20000;
    while (net_now_ms() < end && (got = waitpid(r.pid, &st, WNOHANG)) == 0)
        net_sleep_ms(20);
    assert_int_equal(got, r.pid);
    r.pid = 0;
    char *log = net_read_file(r.log);
    assert_non_null(log);
    char want[120];
    snprintf(want, sizeof want, "(pid %d) ended with signal 6 (Aborted) while stopping",
             (int)worker);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 10 || !strstr(log, want)) {
        fprintf(stderr, "%s\n", log);
        fail_msg("supervisor status %d, expected exit 10 and \"%s\" (log above)", st, want);
    }
    free(log);
}

/* load finds the responder by its port even though the sockets belong to
 * its workers: the supervisor is named, and the CPU time counted is the
 * supervisor's and both workers' (three processes). */
static void test_load_counts_every_worker(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "load",
                                         "--workers 2 --listen 127.0.0.1:0 "
                                         "--state-dir none"),
                     0);
    char *out = NULL;
    int rc = CLI_RUN(&out, 60,
                     "load coap://127.0.0.1:%u --peers 4 --handshakes 20 --requests-per-peer 1 "
                     "--json -q",
                     r.port);
    if (rc != 0)
        fail_msg("load: exit %d\n%s", rc, out ? out : "");
    assert_int_equal(net_json_valid(out, "load", false), 0);
    char want[64];
    snprintf(want, sizeof want, "\"responder_pid\": %d,", (int)r.pid);
    if (!strstr(out, want) || !strstr(out, "\"responder_processes\": 3,"))
        fail_msg("expected %s and 3 processes in:\n%s", want, out);
    free(out);
    stop_ok(&r);
}

/* A listen port belongs to one responder. libcoap marks its endpoints
 * SO_REUSEADDR, with which Linux lets a second UDP socket bind a port in
 * use; a second responder on the port then started and took the first
 * one's datagrams (and bind() to port 0 could hand out a port in use:
 * once in CI two of test_cli_blockwise's responders shared one, and
 * transfers came back in the other's block size). The workers' reuseport
 * group must not let another responder in either. The second start fails
 * with the reason and exit status 1 ("cannot listen", edhoc-cli(1)),
 * as for any port in use (bind(2): EADDRINUSE). */
static void expect_port_refused(uint16_t port, const char *workers)
{
    char *out = NULL;
    int rc = CLI_RUN(&out, 20, "responder --demo --state-dir none %s --listen 127.0.0.1:%u",
                     workers, port);
    char want[120];
    snprintf(want, sizeof want, "cannot listen on 127.0.0.1:%u: Address already in use", port);
    if (rc != 1 || !strstr(out, want))
        fail_msg("a second responder (%s) on the port of the first: exit %d, expected 1 and "
                 "\"%s\":\n%s",
                 workers, rc, want, out ? out : "");
    free(out);
}

static void test_listen_port_is_exclusive(void **state)
{
    (void)state;
    static struct net_proc one, two;
    assert_int_equal(net_responder_start(&one, "exclusive1",
                                         "--workers 1 --listen 127.0.0.1:0 "
                                         "--state-dir none"),
                     0);
    expect_port_refused(one.port, "--workers 1");
    expect_port_refused(one.port, "--workers 2");
    assert_int_equal(net_responder_start(&two, "exclusive2",
                                         "--workers 2 --listen 127.0.0.1:0 "
                                         "--state-dir none"),
                     0);
    assert_int_not_equal(two.port, one.port);
    expect_port_refused(two.port, "--workers 1");
    expect_port_refused(two.port, "--workers 2");
    /* Both still answer on their own ports, two with both workers. */
    char *out = NULL;
    int rc = CLI_RUN(&out, 60,
                     "load coap://127.0.0.1:%u --peers 4 --handshakes 8 --requests-per-peer 1 "
                     "--json -q",
                     two.port);
    if (rc != 0 || !strstr(out, "\"responder_processes\": 3,"))
        fail_msg("load on the two-worker responder: exit %d\n%s", rc, out ? out : "");
    free(out);
    stop_ok(&two);
    stop_ok(&one);
}

/* With workers the supervisor's notice names the host a --listen value
 * resolved from, as one process does (issue #14: "the log says which
 * address it bound"): "listening on ADDR:PORT (localhost) with 2
 * workers". It once printed only the address. */
static void test_listening_notice_names_host(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "named",
                                         "--workers 2 --listen localhost:0 "
                                         "--state-dir none"),
                     0);
    char *log = net_read_file(r.log);
    assert_non_null(log);
    char v4[80], v6[80];
    snprintf(v4, sizeof v4, "listening on 127.0.0.1:%u (localhost) with 2 workers", r.port);
    snprintf(v6, sizeof v6, "listening on [::1]:%u (localhost) with 2 workers", r.port);
    if (!strstr(log, v4) && !strstr(log, v6))
        fail_msg("expected \"%s\" (or its IPv6 form) in:\n%s", v4, log);
    free(log);
    stop_ok(&r);
}

static size_t occurrences(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* Issue 26: a --listen port already in use gets exactly one error line,
 * saying which address and that it is in use, with exit code 1 ("cannot
 * listen"), and no "listening on" notice; with --workers 2 the supervisor
 * once added an error of its own ("worker 0 of 2 could not start"). */
static void test_port_in_use_one_error(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
    unsigned port = ntohs(a.sin_port);
    static const char *const workers[] = {"--workers 1", "--workers 2"};
    for (size_t i = 0; i < 2; i++) {
        char *out = NULL;
        int rc = CLI_RUN(&out, 20, "responder --demo --state-dir none %s --listen 127.0.0.1:%u",
                         workers[i], port);
        char want[120];
        snprintf(want, sizeof want, "error: cannot listen on 127.0.0.1:%u: Address already in use",
                 port);
        /* The error first: no start notice ("--state-dir none: ...",
         * "serving ...") before a port the responder never got. */
        const char *first_nl = out ? strchr(out, '\n') : NULL;
        bool error_first = first_nl && strstr(out, want) && strstr(out, want) < first_nl;
        if (rc != 1 || !out || !strstr(out, want) || occurrences(out, "error:") != 1 ||
            strstr(out, "listening on") || !error_first || strstr(out, "serving "))
            fail_msg("%s on a port in use: exit %d, expected 1 and one error line \"%s\" first, "
                     "no \"listening on\", no \"serving\":\n%s",
                     workers[i], rc, want, out ? out : "");
        free(out);
    }
    close(fd);
}

/* Issue 26: with --workers 2 the start notices (the --demo warning, the
 * suite 25 note, the amplification limit, --state-dir none, "serving ...")
 * come once, not once per worker, and before the ready file: "serving"
 * says the responder's stored and static contexts, every worker's. */
static void test_start_notices_once(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "notices",
                                         "--workers 2 --listen 127.0.0.1:0 "
                                         "--state-dir none"),
                     0);
    char *log = net_read_file(r.log);
    assert_non_null(log);
    static const char *const once[] = {
        "--demo: the built-in demo credentials", "suite 25: EDHOC only",
        "amplification limit:", "--state-dir none: EDHOC-derived contexts end",
        "serving built-in demo credentials, 0 stored contexts "
        "loaded, 0 static;"};
    for (size_t i = 0; i < sizeof once / sizeof once[0]; i++) {
        if (occurrences(log, once[i]) != 1)
            fail_msg("\"%s\" %zu times by the ready file, expected once:\n%s", once[i],
                     occurrences(log, once[i]), log);
    }
    free(log);
    stop_ok(&r);
    log = net_read_file(r.log);
    assert_int_equal(occurrences(log, "serving "), 1);
    free(log);
}

/* An Observe registration under OSCORE made by hand (`oscore protect`,
 * nothing of our client): CON GET /counter, Observe 0, Message ID mid,
 * token 3 bytes t0 t1 t2, protected with the client context ctx at
 * sequence number seq. Returns the datagram's length. */
static size_t observe_request(const char *ctx, unsigned seq, unsigned mid, unsigned tok,
                              uint8_t *msg, size_t cap)
{
    char coap[80], *out = NULL;
    snprintf(coap, sizeof coap, "4301%04x%06x6057636f756e746572", mid & 0xffff, tok & 0xffffff);
    int rc =
        CLI_RUN(&out, 30, "oscore protect --context %s --role client --seq %u %s", ctx, seq, coap);
    if (rc != 0)
        fail_msg("oscore protect: %d %s", rc, out ? out : "");
    size_t len = 0;
    for (const char *p = out; p[0] && p[1] && p[0] != '\n' && len < cap; p += 2) {
        unsigned v;
        if (sscanf(p, "%2x", &v) != 1)
            break;
        msg[len++] = (uint8_t)v;
    }
    free(out);
    assert_true(len > 4);
    return len;
}

static void send_empty(int fd, uint16_t port, uint8_t type, const uint8_t *to)
{
    /* RFC 7252 Section 4.2 / 4.3: an empty ACK or Reset echoes the
     * Message ID of the message it answers. */
    uint8_t e[4] = {(uint8_t)(0x40 | type << 4), 0x00, to[2], to[3]};
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(sendto(fd, e, 4, 0, (struct sockaddr *)&a, sizeof a), 4);
}

static long recv_within(int fd, uint8_t *buf, size_t cap, unsigned ms)
{
    struct timeval tv = {ms / 1000, (long)(ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return recv(fd, buf, cap, 0);
}

/* Observe with two workers: observers of contexts owned by either worker
 * (Recipient IDs 01 and 02), each from a socket of its own whose address
 * the kernel may hash to the other worker. RFC 7641 Section 4.5: an
 * acknowledgement "signals to the server that the client is alive and
 * interested", and a missing one lets the server remove the observer;
 * Section 3.6: a client MAY reject a notification with a Reset. Both
 * answers are empty messages that name only a Message ID (RFC 7252
 * Section 4.2, 4.3), so they must reach the worker that sent the
 * notification. Before, notifications went non-confirmable among workers
 * and a Reset reached whichever worker the address hashed to: the
 * notifications went on. Here every notification is confirmable, an ACK
 * is taken (the next one is a new notification, not a retransmission)
 * and a Reset ends the observation. */
static void test_observe_across_workers(void **state)
{
    (void)state;
    char c1[300], c2[300];
    static struct net_proc r;
    start_two_owners(&r, "observe", c1, c2);
    enum { OBSERVERS = 8 };
    int fd[OBSERVERS];
    uint8_t msg[512], buf[2048], first[OBSERVERS][4];
    for (int i = 0; i < OBSERVERS; i++) {
        fd[i] = socket(AF_INET, SOCK_DGRAM, 0);
        assert_true(fd[i] >= 0);
        const char *ctx = i % 2 ? c1 : c2;
        size_t len = observe_request(ctx, 100 + (unsigned)i, 0x2000 + (unsigned)i,
                                     0xa1b200 + (unsigned)i, msg, sizeof msg);
        long n = net_udp_exchange_fd(fd[i], r.port, msg, len, buf, sizeof buf, 3000);
        if (n < 4 || buf[1] != 0x45)
            fail_msg("observer %d (context %s): registration answered %ld bytes, code %#x, "
                     "expected 2.05",
                     i, i % 2 ? "01" : "02", n, n >= 2 ? buf[1] : 0);
    }
    for (int i = 0; i < OBSERVERS; i++) {
        long n = recv_within(fd[i], buf, sizeof buf, 3000);
        if (n < 4 || (buf[0] & 0x30) != 0x00)
            fail_msg("observer %d (context %s): the next notification: %ld bytes, type %u, "
                     "expected a confirmable one (RFC 7641 Section 4.5)",
                     i, i % 2 ? "01" : "02", n, n >= 1 ? (buf[0] >> 4) & 3u : 9u);
        memcpy(first[i], buf, 4);
        send_empty(fd[i], r.port, i < OBSERVERS / 2 ? 2 : 3, buf); /* ACK, or Reset */
    }
    /* Acknowledged: the next message is a new notification (another
     * Message ID), then rejected with a Reset. */
    for (int i = 0; i < OBSERVERS / 2; i++) {
        long n = recv_within(fd[i], buf, sizeof buf, 3000);
        if (n < 4 || !memcmp(buf + 2, first[i] + 2, 2))
            fail_msg("observer %d (context %s): after its ACK, %s", i, i % 2 ? "01" : "02",
                     n < 4 ? "no further notification"
                           : "the same notification again (the ACK reached another worker)");
        send_empty(fd[i], r.port, 3, buf);
    }
    /* Rejected: nothing more within two and a half periods of /counter
     * (each Reset answered a notification just received, a period before
     * the next one is due). */
    net_sleep_ms(2500);
    for (int i = 0; i < OBSERVERS; i++) {
        long n = recv_within(fd[i], buf, sizeof buf, 10);
        if (n >= 4)
            fail_msg("observer %d (context %s): %ld bytes after its Reset (code %#x, type %u)", i,
                     i % 2 ? "01" : "02", n, buf[1], (buf[0] >> 4) & 3u);
        close(fd[i]);
    }
    stop_ok(&r);
}

/* Inner block-wise (RFC 8613 Section 4.1.3.4.1: every block is an OSCORE
 * message of its own, Block1/Block2 inner options) with two workers: a
 * 3,000-byte POST /echo in 64-byte blocks under a context of each owner,
 * from a new socket each run. Every block is steered by its kid to the
 * owner, which holds the transfer; one block at another worker would be
 * answered 4.01 "Security context not found" and the transfer would fail.
 * The echoed body comes back byte for byte. */
static void test_inner_blockwise_across_workers(void **state)
{
    (void)state;
    char c1[300], c2[300], body[300], got[300], cstate[300];
    static struct net_proc r;
    start_two_owners(&r, "blocks", c1, c2);
    net_path(body, sizeof body, "body.bin");
    net_path(got, sizeof got, "echoed.bin");
    net_path(cstate, sizeof cstate, "blocks-client-state");
    char text[3001];
    for (int i = 0; i < 3000; i++)
        text[i] = (char)('a' + (i * 7) % 26);
    text[3000] = '\0';
    net_write_file(body, text, 0600);
    const char *ctx[2] = {c1, c2};
    for (int k = 0; k < 4; k++) {
        char line[1600], *out = NULL;
        unlink(got);
        snprintf(line, sizeof line,
                 "STATE_DIRECTORY=%s %s coap POST coap://127.0.0.1:%u/echo --payload-file %s "
                 "--output %s --block-size 64 --oscore-context %s --json",
                 cstate, cli, r.port, body, got, ctx[k % 2]);
        int rc = net_sh(line, &out, 60);
        if (rc != 0 || !strstr(out, "\"code\": \"2.04\""))
            fail_msg("POST /echo of 3000 bytes in 64-byte blocks, context %s, run %d: exit %d\n%s",
                     k % 2 ? "02" : "01", k, rc, out ? out : "");
        free(out);
        char *echoed = net_read_file(got);
        if (!echoed || strcmp(echoed, text) != 0)
            fail_msg("run %d: the echoed body differs from the 3000 bytes sent", k);
        free(echoed);
    }
    stop_ok(&r);
}

/* Options that belong to one process refuse --workers above 1. */
static void test_single_process_options(void **state)
{
    (void)state;
    char *out = NULL;
    int rc = CLI_RUN(&out, 10, "responder --demo --listen 127.0.0.1:0 --workers 2 --pcap x.pcap");
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--workers 2 with --pcap: one process writes it; use --workers 1"));
    free(out);
    rc = CLI_RUN(&out, 10, "responder --demo --listen 127.0.0.1:0 --workers 65");
    assert_int_equal(rc, 2);
    free(out);
}

/* Issue 23, item 8: a restart with many stored contexts. Worker 0 used to
 * bind and serve while worker 1 was still loading, so the port's group
 * held worker 0 alone and it answered worker 1's OSCORE requests "4.01
 * Security context not found" (491 times to a probe in 1.8 s with 200,000
 * contexts), after which a client drops a context that is still on disk
 * (RFC 8613 Section 8.2 step 2: no context, 4.01). docs/DESIGN.md
 * "Workers": no worker takes the port before every worker holds its
 * contexts. The load of worker 1 is held 1.5 s (the test-only
 * EDHOC_TEST_WORKER_LOAD_DELAY), and a probe sends OSCORE requests under
 * a context of worker 1 (Recipient ID 01) from before the port is bound
 * until after the ready file: not one outer 4.01 may come back (an Echo
 * challenge after the restart, RFC 8613 Appendix B.1.2, is a protected
 * response, outer code 2.04, Section 4.2). --amplification-factor 0: the
 * probe's answers are not held back as those of an unverified address. */
static void test_restart_serves_only_when_every_worker_loaded(void **state)
{
    (void)state;
    char srv01[300], cl01[300], sdir[300], args[1400];
    write_ctx("late-srv01.conf", srv01, sizeof srv01, "01", true);
    write_ctx("late-cl01.conf", cl01, sizeof cl01, "01", false);
    net_path(sdir, sizeof sdir, "late-state");
    /* A port free now, so that the probe can aim at it before the
     * responder says which it bound. */
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    uint16_t port = ntohs(a.sin_port);
    close(fd);

    enum { PROBES = 24 };
    static uint8_t probe[PROBES][256];
    size_t probe_len[PROBES];
    for (int i = 0; i < PROBES; i++) {
        char *out = NULL;
        /* CON GET /time, Message ID 0x30i, token a1b2c3. */
        int rc = CLI_RUN(&out, 30,
                         "oscore protect --context %s --role client --seq %d "
                         "430130%02xa1b2c3b474696d65",
                         cl01, 100 + i, i);
        if (rc != 0)
            fail_msg("oscore protect: %d %s", rc, out);
        char hex[600];
        size_t n = 0;
        for (const char *p = out; *p && *p != '\n' && n + 1 < sizeof hex; p++) {
            if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))
                hex[n++] = *p;
        }
        hex[n] = '\0';
        free(out);
        long len = hex_decode(hex, probe[i], sizeof probe[i]);
        assert_true(len > 4);
        probe_len[i] = (size_t)len;
    }

    static struct net_proc r;
    memset(&r, 0, sizeof r);
    snprintf(r.log, sizeof r.log, "%s/late.log", net_dir);
    snprintf(r.ready, sizeof r.ready, "%s/late.ready", net_dir);
    snprintf(args, sizeof args,
             "exec env EDHOC_TEST_WORKER_LOAD_DELAY=1:1500 %s responder --demo --workers 2 "
             "--listen 127.0.0.1:%u --state-dir %s --oscore-context %s --amplification-factor 0 "
             "--ready-file %s 2>>%s",
             cli, port, sdir, srv01, r.ready, r.log);
    r.pid = fork();
    assert_true(r.pid >= 0);
    if (r.pid == 0) {
        execl("/bin/sh", "sh", "-c", args, (char *)NULL);
        _exit(127);
    }
    net_procs[0] = &r;

    int sock = socket(AF_INET, SOCK_DGRAM, 0);
    assert_int_equal(connect(sock, (struct sockaddr *)&a, sizeof a), 0);
    unsigned refused = 0, silent = 0, answered = 0, not_found = 0, after_ready = 0;
    uint64_t give_up = net_now_ms() + 60000; /* only if the responder never comes */
    for (unsigned i = 0; after_ready < 5 && net_now_ms() < give_up; i++) {
        bool ready = access(r.ready, F_OK) == 0;
        (void)send(sock, probe[i % PROBES], probe_len[i % PROBES], 0);
        struct pollfd pf = {.fd = sock, .events = POLLIN};
        if (poll(&pf, 1, 100) <= 0) {
            silent++;
            continue;
        }
        uint8_t resp[1500];
        ssize_t n = recv(sock, resp, sizeof resp, 0);
        if (n < 0 && errno == ECONNREFUSED) {
            refused++; /* nothing bound yet */
            net_sleep_ms(5);
            continue;
        }
        if (n < 4)
            continue;
        answered++;
        if (resp[1] == 0x81)
            not_found++;
        else if (ready && resp[1] == 0x44)
            after_ready++;
    }
    close(sock);
    int rc = net_proc_stop(&r, SIGTERM, 10000);
    char *log = net_read_file(r.log);
    if (not_found || after_ready < 5 || rc != 0)
        fail_msg("probe for worker 1's context across the start: %u outer 4.01 answers of %u "
                 "(expected none), %u protected answers after the ready file, %u refused "
                 "(nothing bound), %u unanswered; exit %d; log:\n%s",
                 not_found, answered, after_ready, refused, silent, rc, log ? log : "");
    free(log);
}

int main(void)
{
    cli = net_cli();
    if (net_make_dir("workers"))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_static_contexts_from_any_port, net_test_teardown),
        cmocka_unit_test_teardown(test_handshakes_rebinding_and_restart, net_test_teardown),
        cmocka_unit_test_teardown(test_dead_worker_stops_all, net_test_teardown),
        cmocka_unit_test_teardown(test_worker_abort_while_stopping_reported, net_test_teardown),
        cmocka_unit_test_teardown(test_group_commit_across_workers, net_test_teardown),
        cmocka_unit_test_teardown(test_load_counts_every_worker, net_test_teardown),
        cmocka_unit_test_teardown(test_single_process_options, net_test_teardown),
        cmocka_unit_test_teardown(test_listen_port_is_exclusive, net_test_teardown),
        cmocka_unit_test_teardown(test_listening_notice_names_host, net_test_teardown),
        cmocka_unit_test_teardown(test_port_in_use_one_error, net_test_teardown),
        cmocka_unit_test_teardown(test_start_notices_once, net_test_teardown),
        cmocka_unit_test_teardown(test_observe_across_workers, net_test_teardown),
        cmocka_unit_test_teardown(test_inner_blockwise_across_workers, net_test_teardown),
        cmocka_unit_test_teardown(test_restart_serves_only_when_every_worker_loaded,
                                  net_test_teardown),
    };
    /* One test by name (a glob): CMOCKA_TEST_FILTER=test_restart_* */
    if (getenv("CMOCKA_TEST_FILTER"))
        cmocka_set_test_filter(getenv("CMOCKA_TEST_FILTER"));
    int rc = cmocka_run_group_tests_name("cli_workers", tests, NULL, net_group_teardown);
    return rc;
}
