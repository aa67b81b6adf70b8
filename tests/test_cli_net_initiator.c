/*
 * End-to-end tests of `edhoc-cli initiator` against a real `edhoc-cli
 * responder` on loopback, its choices: suite negotiation (RFC 9528
 * Section 6.3), SUITES_R, suites across credentials, the demo's suite 25;
 * its options, the schema it refuses, and an interrupted --repeat.
 */
#include "cli_net_test_common.h"

static void test_suite_negotiation(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "suite2", "--listen 127.0.0.1:0 --suites 2"), 0);
    char *out;
    /* Suite 6 first: the responder answers error code 2 with SUITES_R 2. */
    int rc =
        CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method 0 --suites 6,2 --json", r.port);
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
        int rc = CLI_RUN(&out, 30,
                         "initiator coap://127.0.0.1:%u --method %d --suites 1 "
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
            rc = CLI_RUN(&out, 30,
                         "initiator coap://127.0.0.1:%u --method %d --suites %d "
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
                fail_msg("method %d suite %d is not in SUITES_R but got exit %d:%s", m, all[i], rc,
                         f);
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
    int rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --method 2 --suites 4,6,0 "
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
        int rc = CLI_RUN(&out, 30,
                         "initiator coap://127.0.0.1:%u --method %d --suites 25 "
                         "--request none --json",
                         main_responder.port, m);
        char *f = expect_ok_json(out, rc);
        assert_has(f, "suite=25");
        assert_has(f, "attempts=1");
        free(f);
        free(out);
    }
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
    static const char *const refused[] = {"--cred-r /nonexistent",
                                          "--suites-r 2",
                                          "--methods 3",
                                          "--key-r x",
                                          "--c-r 01",
                                          "--ead-2 5"};
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
    int rc =
        net_cli_run(&out, 30, true, "initiator coap://127.0.0.1:%u --json", main_responder.port);
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

/* --export-secrets prints a context another tool may continue, and
 * records the numbers this run sent with it: in --state-dir DIR when one
 * is given (it was refused: "--state-dir goes with --export-oscore-conf"),
 * so that `coap --oscore-context ... --state-dir DIR` continues above them
 * (RFC 8613 Section 7.2.1: a nonce is never used twice with one key). */
static void test_initiator_export_secrets_state_dir(void **state)
{
    (void)state;
    char dir[300], conf[300];
    net_path(dir, sizeof dir, "secrets.state");
    net_path(conf, sizeof conf, "secrets.conf");
    char *out;
    int rc =
        net_cli_run(&out, 30, true, "initiator coap://127.0.0.1:%u --export-secrets --state-dir %s",
                    main_responder.port, dir);
    if (rc != 0)
        fail_msg("--export-secrets --state-dir: exit %d\n%s", rc, out);
    /* The printed conf lines, as a file. */
    const char *at = strstr(out, "as a libcoap OSCORE conf (the initiator's side):\n");
    assert_non_null(at);
    at = strchr(at, '\n') + 1;
    char text[1024] = "";
    size_t n = 0;
    while (!strncmp(at, "    ", 4)) {
        const char *eol = strchr(at, '\n');
        n += (size_t)snprintf(text + n, sizeof text - n, "%.*s\n", (int)(eol - at - 4), at + 4);
        at = eol + 1;
    }
    assert_non_null(strstr(text, "master_secret,hex,"));
    net_write_file(conf, text, 0600);
    free(out);
    rc = net_cli_run(&out, 30, false,
                     "coap GET coap://127.0.0.1:%u/time --oscore-context %s --state-dir %s "
                     "--seq 0 2>&1 >/dev/null",
                     main_responder.port, conf, dir);
    if (rc != 2 || !strstr(out, "--seq 0: sequence numbers below 1 may already have been used"))
        fail_msg("coap --seq 0 after the run, same state directory: exit %d\n%s", rc, out);
    free(out);
    /* none would record them nowhere: refused before anything is sent. */
    rc = net_cli_run(&out, 30, false,
                     "initiator coap://127.0.0.1:%u --export-secrets --state-dir none "
                     "2>&1 >/dev/null",
                     main_responder.port);
    assert_int_equal(rc, 2);
    assert_string_equal(out, "edhoc-cli initiator: --state-dir none: --export-secrets records "
                             "the sequence numbers used in a state directory only; give a DIR, "
                             "or --export-oscore-conf FILE for FILE.seq\n");
    free(out);
    rc = net_cli_run(&out, 30, false, "initiator coap://127.0.0.1:1 --state-dir %s 2>&1 >/dev/null",
                     dir);
    assert_int_equal(rc, 2);
    assert_string_equal(out, "edhoc-cli initiator: --state-dir goes with --export-oscore-conf "
                             "or --export-secrets\n");
    free(out);
}

/* Messages name the options the initiator accepts (--cred, --key,
 * --kid, --id-cred), never simulate's --cred-i/--kid-i spelling. */
static void test_initiator_messages_name_its_options(void **state)
{
    (void)state;
    char *out;
    int rc =
        net_cli_run(&out, 10, false, "initiator coap://127.0.0.1:1 --id-cred kcwt 2>&1 >/dev/null");
    assert_int_equal(rc, 2);
    assert_string_equal(out, "edhoc-cli: --id-cred kcwt: there is no built-in CWT; make one with "
                             "keygen --type cwt and give it with --cred and --key\n");
    free(out);
    /* simulate sets both sides and spells them so. */
    rc = net_cli_run(&out, 10, false, "simulate --id-cred-r kcwt 2>&1 >/dev/null");
    assert_int_equal(rc, 2);
    assert_string_equal(out, "edhoc-cli: --id-cred-r kcwt: there is no built-in CWT; make one "
                             "with keygen --type cwt and give it with --cred-r and --key-r\n");
    free(out);
    /* A certificate without a kid, to be named by kid. */
    char cred[300], key[300];
    net_path(cred, sizeof cred, "nokid.pem");
    net_path(key, sizeof key, "nokid.key");
    rc = net_cli_run(&out, 30, false,
                     "keygen --type x509 --suite 2 --use sign --out-cred %s --out-key %s", cred,
                     key);
    assert_int_equal(rc, 0);
    free(out);
    rc = net_cli_run(&out, 10, false,
                     "initiator coap://127.0.0.1:1 --method 0 --suites 2 --cred %s --key %s "
                     "--id-cred kid 2>&1 >/dev/null",
                     cred, key);
    assert_int_equal(rc, 3);
    assert_string_equal(out, "edhoc-cli: initiator: cannot name this X.509 credential by kid: it "
                             "has no kid (give one with --kid)\n");
    free(out);
    rc = net_cli_run(&out, 10, false,
                     "simulate --method 0 --suites 2 --cred-i %s --key-i %s --id-cred-i kid "
                     "2>&1 >/dev/null",
                     cred, key);
    assert_int_equal(rc, 3);
    assert_string_equal(out, "edhoc-cli: initiator: cannot name this X.509 credential by kid: it "
                             "has no kid (give one with --kid-i)\n");
    free(out);
}

/* A line of text that contains both needles, or NULL. */
static const char *line_with2(const char *text, const char *a, const char *b)
{
    for (const char *l = text; l && *l;) {
        const char *eol = strchr(l, '\n');
        size_t n = eol ? (size_t)(eol - l) : strlen(l);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)n, l);
        if (strstr(line, a) && strstr(line, b))
            return l;
        l = eol ? eol + 1 : NULL;
    }
    return NULL;
}

/* `edhoc-cli initiator URI ARGS`: standard output in *out, standard error
 * in *err. Returns the exit code. */
static int initiator_split(char **out, char **err, uint16_t port, const char *args)
{
    char epath[300];
    net_path(epath, sizeof epath, "verbose.err");
    unlink(epath);
    int rc =
        net_cli_run(out, 30, false, "initiator coap://127.0.0.1:%u %s 2>%s", port, args, epath);
    *err = net_read_file(epath);
    assert_non_null(*err);
    return rc;
}

/* -v prints every CoAP message of the run on standard error, -vv also the
 * datagrams in hex and the EDHOC messages with their CBOR items (issue
 * 26); standard output stays what scripts parse. */
static void test_initiator_verbose(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "verbose", "--state-dir none --listen 127.0.0.1:0"),
                     0);
    char *out, *err, peer[64];
    assert_int_equal(initiator_split(&out, &err, r.port, ""), 0);
    assert_string_equal(err, "");
    free(out);
    free(err);
    assert_int_equal(initiator_split(&out, &err, r.port, "-v"), 0);
    snprintf(peer, sizeof peer, "edhoc-cli initiator: -> 127.0.0.1:%u CON 0.02 POST MID 0x",
             r.port);
    if (!line_with2(err, peer, " Uri-Path:\".well-known\" Uri-Path:\"edhoc\" Content-Format:65"))
        fail_msg("no message_1 request line in:\n%s", err);
    snprintf(peer, sizeof peer, "edhoc-cli initiator: <- 127.0.0.1:%u ACK 2.04 Changed MID 0x",
             r.port);
    if (!line_with2(err, peer, " Content-Format:64 payload "))
        fail_msg("no message_2 response line in:\n%s", err);
    if (!line_with2(err, "OSCORE inner request, before protection: 0.01 GET ",
                    "Uri-Path:\".well-known\" Uri-Path:\"core\""))
        fail_msg("no inner request line in:\n%s", err);
    if (!line_with2(err, "(OSCORE outer)", "-> 127.0.0.1:"))
        fail_msg("no outer OSCORE request line in:\n%s", err);
    if (!line_with2(err, "OSCORE inner response, verified: ", "2.05 Content"))
        fail_msg("no inner 2.05 line in:\n%s", err);
    assert_null(strstr(err, "EDHOC message_"));
    assert_null(strstr(err, "     0000  "));
    free(out);
    free(err);
    /* -vv: message_2 as many bytes as the report says it has. */
    assert_int_equal(initiator_split(&out, &err, r.port, "-vv"), 0);
    const char *row = strstr(out, "\n  message_2 ");
    assert_non_null(row);
    long reported = -1;
    assert_int_equal(sscanf(row, "\n  message_2 R->I %ld", &reported), 1);
    char want[80];
    snprintf(want, sizeof want, "edhoc-cli initiator: EDHOC message_2 received, %ld bytes\n",
             reported);
    if (!strstr(err, want))
        fail_msg("no '%s' in:\n%s", want, err);
    assert_non_null(strstr(err, "edhoc-cli initiator:     METHOD = 3\n"));
    assert_non_null(strstr(err, "edhoc-cli initiator:     G_Y_CIPHERTEXT_2 = h'"));
    assert_non_null(strstr(err, "edhoc-cli initiator:     0000  "));
    free(out);
    free(err);
    /* --json: one document on standard output, -vv or not. */
    assert_int_equal(initiator_split(&out, &err, r.port, "--json -vv"), 0);
    assert_non_null(strstr(err, "EDHOC message_3 sent, "));
    assert_valid(out, "initiator");
    free(out);
    free(err);
    net_proc_stop(&r, SIGTERM, 5000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_suite_negotiation, check_alive),
        cmocka_unit_test_setup(test_suites_r_is_what_completes, check_alive),
        cmocka_unit_test_setup(test_suite_negotiation_across_credentials, check_alive),
        cmocka_unit_test_setup(test_demo_serves_suite_25, check_alive),
        cmocka_unit_test_setup(test_initiator_options, check_alive),
        cmocka_unit_test_setup(test_initiator_schema_refuses, check_alive),
        cmocka_unit_test_setup(test_initiator_repeat_interrupted, check_alive),
        cmocka_unit_test_setup(test_initiator_verbose, check_alive),
        cmocka_unit_test_setup(test_initiator_export_secrets_state_dir, check_alive),
        cmocka_unit_test_setup(test_initiator_messages_name_its_options, check_alive),
    };
    /* One test by name (a glob): CMOCKA_TEST_FILTER=test_load_* */
    if (getenv("CMOCKA_TEST_FILTER"))
        cmocka_set_test_filter(getenv("CMOCKA_TEST_FILTER"));
    return cmocka_run_group_tests_name("cli_net_initiator", tests, setup, net_group_teardown);
}
