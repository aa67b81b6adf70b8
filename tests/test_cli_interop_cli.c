/*
 * The command-line contract of `edhoc-cli interop` and `bytes` (issue 14):
 * usage, private trace directories, every --json document valid against
 * its schema (docs/json/), null rather than -1, members read from their own
 * object (a key in a nested object is not the record's), an interrupted run
 * that still reports, options a mode would ignore refused.
 */
#include "cli_interop_test_common.h"

static void test_usage(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(CLI_RUN(&out, 10, "interop"), 2);
    free(out);
    assert_int_equal(CLI_RUN(&out, 10, "interop coap://127.0.0.1:5683 --methods 0,7"), 2);
    free(out);
    assert_int_equal(CLI_RUN(&out, 10, "interop coap://127.0.0.1:5683 --id-creds kid,x9"), 2);
    free(out);
    assert_int_equal(CLI_RUN(&out, 10, "interop coap://127.0.0.1:5683 --timeout 0"), 2);
    free(out);
    /* A URI the initiator refuses stops the matrix at the first cell. */
    uint64_t t0 = net_now_ms();
    assert_int_equal(CLI_RUN(&out, 10, "interop coap://127.0.0.1:notaport --methods 3"), 2);
    assert_true(net_now_ms() - t0 < 3000);
    free(out);
    assert_int_equal(CLI_RUN(&out, 10, "interop --help"), 0);
    assert_non_null(strstr(out, "--trace-dir DIR"));
    free(out);
}

/* Mode of path (lstat), or -1. */
static int path_mode(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/* Secrets readable by others: each --trace-dir trace holds the ephemeral
 * private key, PRK_out and the OSCORE master secret. Under umask 022 the
 * directory is created 0700 and every file in it (traces and captures)
 * 0600; a file left 0644 by an earlier run is tightened; an existing
 * directory group or others can access, and a symbolic link, are refused. */
static void test_trace_dir_private(void **state)
{
    (void)state;
    struct net_proc r;
    start_responder(&r, "tracemode", "");
    char dir[300], path[700], *out = NULL;
    net_path(dir, sizeof dir, "private-traces");
    mode_t old_umask = umask(022);
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 2 "
                     "--id-creds kid --trace-dir %s",
                     r.port, dir);
    free(out);
    assert_int_equal(rc, 0);
    assert_int_equal(path_mode(dir), 0700);
    size_t txt = 0, pcap = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (path_mode(path) != 0600)
            fail_msg("%s: mode %04o, expected 0600", path, path_mode(path));
        txt += strstr(e->d_name, ".txt") != NULL;
        pcap += strstr(e->d_name, ".pcap") != NULL;
    }
    closedir(d);
    assert_int_equal(txt, 4); /* A.2, message_4, combined, bare */
    assert_true(pcap >= 3);
    snprintf(path, sizeof path, "%s/m3-s2-kid.txt", dir);
    char *tr = net_read_file(path);
    assert_non_null(tr);
    assert_non_null(strstr(tr, "PRK_out"));
    free(tr);

    /* Again into the same (private) directory: a file an earlier run left
     * readable by others is made 0600 before it is rewritten. */
    assert_int_equal(chmod(path, 0644), 0);
    snprintf(path, sizeof path, "%s/m3-s2-kid.pcap", dir);
    assert_int_equal(chmod(path, 0644), 0);
    rc = CLI_RUN(&out, 60,
                 "interop coap://127.0.0.1:%u --methods 3 --suites 2 "
                 "--id-creds kid --trace-dir %s",
                 r.port, dir);
    free(out);
    assert_int_equal(rc, 0);
    assert_int_equal(path_mode(path), 0600);
    snprintf(path, sizeof path, "%s/m3-s2-kid.txt", dir);
    assert_int_equal(path_mode(path), 0600);

    /* An existing directory group and others can read: refused, nothing
     * run, nothing written in it, and the message gives the fix. */
    char open_dir[300], expect[1200];
    net_path(open_dir, sizeof open_dir, "open-traces");
    assert_int_equal(mkdir(open_dir, 0755), 0);
    assert_int_equal(chmod(open_dir, 0755), 0);
    rc = net_cli_run(&out, 60, false,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 2 "
                     "--id-creds kid --trace-dir %s",
                     r.port, open_dir);
    assert_int_equal(rc, 3);
    snprintf(expect, sizeof expect,
             "edhoc-cli interop: --trace-dir %s: group or others can access it (mode 0755) "
             "and the traces hold session secrets: chmod 700 %s, or give a new directory\n",
             open_dir, open_dir);
    assert_string_equal(out, expect);
    free(out);
    assert_int_equal(path_mode(open_dir), 0755);
    d = opendir(open_dir);
    assert_non_null(d);
    size_t entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        entries += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(entries, 0);

    /* A symbolic link (even to a private directory) is refused. */
    char link_path[300];
    net_path(link_path, sizeof link_path, "link-traces");
    assert_int_equal(symlink(dir, link_path), 0);
    rc = net_cli_run(&out, 60, false,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 2 "
                     "--id-creds kid --trace-dir %s",
                     r.port, link_path);
    assert_int_equal(rc, 3);
    snprintf(expect, sizeof expect,
             "edhoc-cli interop: --trace-dir %s: is a symbolic link; the traces hold session "
             "secrets: give the directory itself, not a link to it\n",
             link_path);
    assert_string_equal(out, expect);
    free(out);
    umask(old_umask);
}

/* ---- Issue 14: the command-line contract of interop and bytes ---- */

/* `edhoc-cli ARGS` (a shell fragment) in the background, stdout and
 * stderr into files; registered so that teardown stops it whatever
 * happens. */
static void cli_start(struct net_proc *p, const char *out_path, const char *err_path,
                      const char *env, const char *args)
{
    memset(p, 0, sizeof *p);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec %s%s %s >%s 2>%s", env, cli, args, out_path, err_path);
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

/* How the process ended (exit code, or 128 + signal), waiting at most
 * timeout_ms; the test fails if it is still running then. */
static int cli_wait(struct net_proc *p, unsigned timeout_ms)
{
    uint64_t end = net_now_ms() + timeout_ms;
    int st = 0;
    pid_t r;
    while ((r = waitpid(p->pid, &st, WNOHANG)) == 0 && net_now_ms() < end)
        net_sleep_ms(10);
    if (r == 0)
        fail_msg("edhoc-cli still running after %u ms", timeout_ms);
    p->pid = 0;
    for (size_t i = 0; i < NET_MAX_PROCS; i++) {
        if (net_procs[i] == p)
            net_procs[i] = NULL;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Files in dir whose name ends with suffix (prefix: also starts so). */
static size_t count_files(const char *dir, const char *prefix, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name), ls = strlen(suffix);
        if (e->d_name[0] != '.' && !strncmp(e->d_name, prefix, strlen(prefix)) && l >= ls &&
            !strcmp(e->d_name + l - ls, suffix))
            n++;
    }
    closedir(d);
    return n;
}

/* Processes whose command line holds needle (their arguments joined by
 * spaces). */
static size_t processes_with(const char *needle)
{
    DIR *d = opendir("/proc");
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
            continue;
        char path[300], buf[4096];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < len; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        buf[len] = '\0';
        if (strstr(buf, needle) && !strstr(buf, "sh -c"))
            n++;
    }
    closedir(d);
    return n;
}

/* Wait until dir holds a file ending with suffix (at most timeout_ms). */
static bool wait_for_file(const char *dir, const char *prefix, const char *suffix,
                          unsigned timeout_ms)
{
    uint64_t end = net_now_ms() + timeout_ms;
    while (net_now_ms() < end) {
        if (count_files(dir, prefix, suffix) > 0)
            return true;
        net_sleep_ms(5);
    }
    return false;
}

/* Issue 14 item 9: Ctrl-C during interop printed nothing and exited 130.
 * Now SIGINT after some cells completed (seen by their traces, not by
 * waiting a fixed time) stops the running cell's initiator, leaves that
 * cell out (its capture removed), prints the matrix of the completed cells
 * marked partial ("partial": true) and exits 128 + SIGINT; SIGTERM the same
 * with 143, and the table says "interrupted: partial results". */
static void test_interrupted_matrix(void **state)
{
    (void)state;
    uint16_t port = 0;
    int fd = net_silent_socket(&port);
    assert_true(fd >= 0);
    for (int round = 0; round < 2; round++) {
        char dir[300], outp[300], errp[300], args[1200], name[64];
        snprintf(name, sizeof name, "interrupt-%d", round);
        net_path(dir, sizeof dir, name);
        snprintf(name, sizeof name, "interrupt-%d.out", round);
        net_path(outp, sizeof outp, name);
        snprintf(name, sizeof name, "interrupt-%d.err", round);
        net_path(errp, sizeof errp, name);
        /* A silent device: each cell lasts its --timeout (decimals, issue
         * 14), ten cells in all. */
        snprintf(args, sizeof args,
                 "interop coap://127.0.0.1:%u --methods 0,1,2,3 --suites 2 --id-creds kid "
                 "--timeout 0.3 --trace-dir %s%s",
                 port, dir, round == 0 ? " --json" : "");
        struct net_proc p;
        cli_start(&p, outp, errp, "", args);
        /* The first cell's trace: it completed, the next one runs. */
        assert_true(wait_for_file(dir, "", ".txt", 20000));
        kill(p.pid, round == 0 ? SIGINT : SIGTERM);
        int rc = cli_wait(&p, 15000);
        char *out = net_read_file(outp), *err = net_read_file(errp);
        assert_non_null(out);
        assert_non_null(err);
        /* The initiator of the cell that was running is gone too. */
        char needle[64];
        snprintf(needle, sizeof needle, "initiator coap://127.0.0.1:%u", port);
        assert_int_equal(processes_with(needle), 0);
        size_t traces = count_files(dir, "", ".txt");
        if (round == 0) {
            assert_int_equal(rc, 128 + SIGINT);
            json_checked(&out, "interop");
            assert_non_null(strstr(out, "\"partial\": true, \"cells_planned\": 10,"));
            struct cell cells[MAX_CELLS];
            size_t n = json_cells(out, cells, MAX_CELLS);
            assert_true(n >= 1 && n < 10);
            /* Exactly the completed cells, each with its trace. */
            assert_int_equal(traces, n);
            for (size_t i = 0; i < n; i++)
                assert_string_equal(cells[i].failure, "timeout");
        } else {
            assert_int_equal(rc, 128 + SIGTERM);
            assert_non_null(strstr(out, "interrupted: partial results ("));
            assert_non_null(strstr(out, " of 10 cells completed)"));
            assert_int_equal((size_t)net_count(out, "| timeout |"), traces);
        }
        assert_non_null(strstr(err, "interrupted: partial results"));
        /* No capture of a cell that is not in the matrix. */
        assert_true(count_files(dir, "", ".pcap") <= traces);
        free(out);
        free(err);
    }
    close(fd);
}

/* Issue 14, "JSON as a contract": the report reader found members by
 * searching the line's text, so a key of a nested object that comes
 * first (here "type", "id", "method" and "outcome" of "context") was read
 * as the record's: the handshake below was taken for an OSCORE record and
 * the report said "No handshake recorded yet" with exit 0. Read with a
 * JSON parser, the record's own members make the row. */
static void test_report_nested_keys(void **state)
{
    (void)state;
    char dir[300], path[400], *out = NULL;
    net_path(dir, sizeof dir, "nested");
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(path, sizeof path, "%s/handshakes.jsonl", dir);
    net_write_file(
        path,
        "{\"context\": {\"type\": \"oscore\", \"id\": 99, \"ok\": true, \"method\": 0, "
        "\"suite\": 6, \"outcome\": \"ok\", \"host\": \"203.0.113.9\"}, "
        "\"type\": \"handshake\", \"id\": 4, \"host\": \"192.0.2.7\", \"method\": 3, "
        "\"suites_i\": [2], \"suite\": 2, \"framing\": \"A.2\", \"combined\": false, "
        "\"message_4\": false, \"id_cred_i_type\": \"kid\", \"id_cred_i\": \"a1044107\", "
        "\"outcome\": \"verify\", \"err_code\": 1, \"suites_r\": [], "
        "\"edhoc_bytes\": 101, \"ms\": 3, \"trace\": \"4.txt\", \"pcap\": null, "
        "\"result\": \"our verification failed: MAC_3 verification failed\", "
        "\"reason\": \"the \\\"outcome\\\": \\\"ok\\\" of another record\"}\n",
        0600);
    int rc = CLI_RUN(&out, 20, "interop --report %s --json", dir);
    assert_int_equal(rc, 1);
    json_checked(&out, "interop-report");
    assert_non_null(strstr(out, "\"handshakes\": 1, \"skipped_lines\": 0,"));
    assert_non_null(strstr(out, "\"host\": \"192.0.2.7\""));
    assert_null(strstr(out, "203.0.113.9"));
    struct report_row rows[4];
    assert_int_equal(report_rows(out, rows, 4), 1);
    assert_row(&rows[0], 3, "[2]", 2, "kid", "A.2", false, "verify", 1, 1, 0);
    assert_string_equal(rows[0].trace, "4.txt");
    assert_string_equal(rows[0].pcap, "");
    assert_non_null(strstr(out, "\"last_id\": 4,"));
    /* A string that holds a key name is text, nothing more. */
    assert_string_equal(rows[0].reason, "the \"outcome\": \"ok\" of another record");
    free(out);
}

/* Issue 14: one table per command; options of the other mode refused
 * with the mode they belong to; old spellings name the new one; --timeout
 * takes decimals; no per-cell lines on a standard error that is not a
 * terminal (progress is for terminals, or -v). */
static void test_interop_options(void **state)
{
    (void)state;
    char *out = NULL;
    static const struct {
        const char *args, *message;
    } bad[] = {
        {"interop coap://127.0.0.1:5683 --timeout-ms 500",
         "edhoc-cli interop: --timeout-ms is no longer an option: use --timeout SECONDS "
         "(decimals allowed, e.g. --timeout 0.5)\n"},
        {"interop coap://127.0.0.1:5683 --handshake-timeout 2",
         "edhoc-cli interop: --handshake-timeout is no longer an option: use --timeout SECONDS "
         "(each cell's bound; decimals allowed)\n"},
        {"interop --report /nonexistent --methods 3",
         "edhoc-cli interop: --methods applies to the matrix against a device (edhoc-cli "
         "interop URI), not to --report\n"},
        {"interop --report /nonexistent --trace-dir /tmp/x",
         "edhoc-cli interop: --trace-dir applies to the matrix against a device (edhoc-cli "
         "interop URI), not to --report\n"},
        {"interop --report /nonexistent coap://127.0.0.1:5683",
         "edhoc-cli interop: --report reads the log of a responder and tests no device (got "
         "'coap://127.0.0.1:5683'; run them separately)\n"},
        {"interop coap://127.0.0.1:5683 --timeout 0.01",
         "edhoc-cli interop: --timeout: expected seconds from 0.1 to 600 (decimals allowed, e.g. "
         "0.5), got '0.01'\n"},
        {"interop coap://127.0.0.1:5683 --full=yes",
         "edhoc-cli interop: --full takes no value (got 'yes')\n"},
        {"interop coap://127.0.0.1:5683 --framing=coap",
         "edhoc-cli interop: --framing: expected one of a2, A.2, bare, auto, got 'coap'\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(net_cli_run(&out, 10, false, "%s", bad[i].args), 2);
        assert_string_equal(out, bad[i].message);
        free(out);
    }
    /* --help comes from the table; `help interop` prints the same. */
    char *help = NULL;
    assert_int_equal(CLI_RUN(&out, 10, "interop --help"), 0);
    assert_int_equal(CLI_RUN(&help, 10, "help interop"), 0);
    assert_string_equal(out, help);
    assert_non_null(strstr(out, "--timeout SECONDS"));
    assert_non_null(strstr(out, "--report DIR"));
    assert_non_null(strstr(out, "docs/json/interop.schema.json"));
    free(help);
    free(out);

    /* A run with --opt=value spellings and a decimal --timeout, standard
     * error a file: nothing on it (it had one line per cell). */
    struct net_proc r;
    start_responder(&r, "options", "");
    char errp[300];
    net_path(errp, sizeof errp, "options.err");
    int rc = net_cli_run(&out, 60, false,
                         "interop coap://127.0.0.1:%u --methods=3 --suites=2 --id-creds=kid "
                         "--timeout=2.5 2>%s",
                         r.port, errp);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "(each cell bounded by 2.5 s)"));
    assert_non_null(strstr(out, "Summary: 3 ok, 0 failed, 1 not supported, 0 skipped of 4 cells"));
    char *err = net_read_file(errp);
    assert_string_equal(err, "");
    free(err);
    free(out);
    rc = net_cli_run(&out, 60, false,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid -q --json "
                     "2>%s",
                     r.port, errp);
    assert_int_equal(rc, 0);
    err = net_read_file(errp);
    assert_string_equal(err, "");
    free(err);
    json_checked(&out, "interop");
    assert_non_null(strstr(out, "\"timeout_s\": 5.0,"));

    /* The schema check can fail: the same document without a member it
     * requires, or with -1 where the schema allows null, is refused. */
    char *broken = json_python(out, "d.pop(chr(112) + chr(97) + chr(114) + chr(116) + chr(105) + "
                                    "chr(97) + chr(108)); print(json.dumps(d))");
    assert_int_not_equal(net_json_valid(broken, "interop", false), 0);
    free(broken);
    broken = json_python(out, "d[chr(99) + chr(101) + chr(108) + chr(108) + chr(115)][0]"
                              "[chr(101) + chr(114) + chr(114) + chr(95) + chr(99) + chr(111) + "
                              "chr(100) + chr(101)] = -1; print(json.dumps(d))");
    assert_int_not_equal(net_json_valid(broken, "interop", false), 0);
    free(broken);
    free(out);
}

/* `bytes`: one table for a capture and for --compare; an option of the
 * other mode is refused with the mode it belongs to (it was ignored, or
 * refused by a parser of its own), and so are 802.15.4 assumptions
 * without --link 802.15.4. */
static void test_bytes_options(void **state)
{
    (void)state;
    char *out = NULL;
    static const struct {
        const char *args, *message;
    } bad[] = {
        {"bytes --timeout 5 x.pcap",
         "edhoc-cli bytes: --timeout bounds --compare; reading a capture is not bounded (add "
         "--compare, or leave --timeout out)\n"},
        {"bytes --compare x.pcap",
         "edhoc-cli bytes: --compare measures on loopback and reads no capture (got 'x.pcap')\n"},
        {"bytes --compare --addr auto",
         "edhoc-cli bytes: --addr describes the addresses of a capture; --compare runs on IPv4 "
         "loopback, counted as link-local addresses\n"},
        {"bytes x.pcap --mac-header 9",
         "edhoc-cli bytes: --mac-header describes 802.15.4 frames: add --link 802.15.4\n"},
        {"bytes x.pcap --frame-overhead 4",
         "edhoc-cli bytes: --frame-overhead describes the frames of a --link-mtu link: add "
         "--link-mtu N\n"},
        {"bytes --compare --timeout-ms 500",
         "edhoc-cli bytes: --timeout-ms is no longer an option: use --timeout SECONDS with "
         "--compare (decimals allowed, e.g. --timeout 0.5)\n"},
        {"bytes --compare --timeout 0.05",
         "edhoc-cli bytes: --timeout: expected seconds from 0.1 to 600 (decimals allowed, e.g. "
         "0.5), got '0.05'\n"},
        {"bytes a.pcap b.pcap",
         "edhoc-cli bytes: one capture file at a time (got 'a.pcap' and 'b.pcap')\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(net_cli_run(&out, 10, false, "%s", bad[i].args), 2);
        assert_string_equal(out, bad[i].message);
        free(out);
    }
    assert_int_equal(CLI_RUN(&out, 10, "bytes --help"), 0);
    assert_non_null(strstr(out, "docs/json/bytes.schema.json"));
    assert_non_null(strstr(out, "docs/json/bytes-compare.schema.json"));
    free(out);
    /* A decimal bound, and the document valid against its schema; one
     * without a required member is not. */
    assert_int_equal(CLI_RUN(&out, 60, "bytes --compare --timeout 30.5 --json"), 0);
    assert_int_equal(net_json_valid(out, "bytes-compare", false), 0);
    assert_non_null(strstr(out, "\"partial\": false"));
    char *broken = json_python(out, "d.pop(chr(114) + chr(117) + chr(110) + chr(115)); "
                                    "print(json.dumps(d))");
    assert_int_not_equal(net_json_valid(broken, "bytes-compare", false), 0);
    free(broken);
    free(out);
}

/* bytes --compare interrupted (issue 14 item 9): its responder and
 * initiator are stopped and its temporary directory removed, and what
 * completed is printed marked partial. The run is short: the signal is
 * sent as soon as its first responder is up; when the run finished first,
 * the same holds of a complete run. */
static void test_bytes_compare_interrupted(void **state)
{
    (void)state;
    char tmp[300], outp[300], errp[300], env[400];
    net_path(tmp, sizeof tmp, "cmp");
    assert_int_equal(mkdir(tmp, 0700), 0);
    net_path(outp, sizeof outp, "cmp.out");
    net_path(errp, sizeof errp, "cmp.err");
    snprintf(env, sizeof env, "env TMPDIR=%s ", tmp);
    struct net_proc p;
    cli_start(&p, outp, errp, env, "bytes --compare --json");
    /* Its temporary directory, then the ready file of its first responder. */
    char sub[400] = "";
    uint64_t end = net_now_ms() + 20000;
    while (!sub[0] && net_now_ms() < end) {
        DIR *d = opendir(tmp);
        for (struct dirent *e; d && (e = readdir(d));)
            if (!strncmp(e->d_name, "edhoc-compare-", 14))
                snprintf(sub, sizeof sub, "%s/%s", tmp, e->d_name);
        if (d)
            closedir(d);
        if (!sub[0])
            net_sleep_ms(1);
    }
    if (sub[0])
        wait_for_file(sub, "ready-", "", 10000);
    kill(p.pid, SIGINT);
    int rc = cli_wait(&p, 30000);
    assert_true(rc == 0 || rc == 128 + SIGINT);
    /* Nothing left behind: no temporary directory, no child running. */
    assert_int_equal(count_files(tmp, "edhoc-compare-", ""), 0);
    assert_int_equal(processes_with(tmp), 0);
    char *out = net_read_file(outp);
    assert_non_null(out);
    assert_int_equal(net_json_valid(out, "bytes-compare", false), 0);
    assert_non_null(strstr(out, rc ? "\"partial\": true" : "\"partial\": false"));
    free(out);
}
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_usage, net_test_teardown),
        cmocka_unit_test_teardown(test_trace_dir_private, net_test_teardown),
        cmocka_unit_test_teardown(test_interrupted_matrix, net_test_teardown),
        cmocka_unit_test_teardown(test_report_nested_keys, net_test_teardown),
        cmocka_unit_test_teardown(test_interop_options, net_test_teardown),
        cmocka_unit_test_teardown(test_bytes_options, net_test_teardown),
        cmocka_unit_test_teardown(test_bytes_compare_interrupted, net_test_teardown),
    };
    return cmocka_run_group_tests(tests, setup, net_group_teardown);
}
