/*
 * edhoc-cli initiator --keylog DIR: the rows that open a capture
 * decrypted. DIR/oscore_contexts is checked by Wireshark's own OSCORE
 * dissector (tshark, skipped when absent): given only that row, it must
 * decrypt the inner request of a capture made by --pcap. DIR/edhoc_secrets
 * is checked here for its shape; its values are checked against RFC 9529
 * in test_edhoc (the library's edhoc_key_log). responder --keylog DIR
 * writes the same rows for the same handshake, and its workers' rows
 * never mix.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "net_test_util.h"

static struct net_proc responder;
/* Static: the teardown stops what a failed test left running. */
static struct net_proc resp_keylog, resp_workers, resp_interop;

static int group_setup(void **state)
{
    (void)state;
    if (net_make_dir("keylog"))
        return -1;
    return net_responder_start(&responder, "keylog", "--listen 127.0.0.1:0 --state-dir none");
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_mode & 07777;
}

static int count_char(const char *s, char c)
{
    int n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

/* With umask 0 the directory is 0700 and both files 0600 (they hold
 * session secrets); one EDHOC row of seven bare hex fields and one OSCORE
 * row of six quoted fields per handshake; a second run appends. */
static void test_files_and_rows(void **state)
{
    (void)state;
    char dir[300], edhoc[340], oscore[340], pcap[300];
    net_path(dir, sizeof dir, "kl");
    net_path(pcap, sizeof pcap, "run.pcap");
    snprintf(edhoc, sizeof edhoc, "%s/edhoc_secrets", dir);
    snprintf(oscore, sizeof oscore, "%s/oscore_contexts", dir);
    char *out = NULL;
    int rc = net_cli_run(&out, 30, false,
                         "initiator coap://127.0.0.1:%u --request \"POST /echo hello-keylog\" "
                         "--keylog %s --pcap %s --timeout 20",
                         responder.port, dir, pcap);
    if (rc != 0)
        fail_msg("initiator exited %d:\n%s", rc, out);
    free(out);
    /* A second run under umask 0 appends to the same files. */
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "umask 0; %s initiator coap://127.0.0.1:%u --request none --keylog %s --timeout 20",
             net_cli(), responder.port, dir);
    rc = net_sh(cmd, &out, 30);
    if (rc != 0)
        fail_msg("second initiator exited %d:\n%s", rc, out);
    free(out);
    assert_int_equal(mode_of(dir), 0700);
    assert_int_equal(mode_of(edhoc), 0600);
    assert_int_equal(mode_of(oscore), 0600);

    char *e = net_read_file(edhoc);
    assert_non_null(e);
    assert_int_equal(count_char(e, '\n'), 2);
    const char *second = strchr(e, '\n') + 1;
    /* G_X, PRK_2e, TH_2, PRK_3e2m, TH_3, PRK_4e3m, TH_4 of suite 2: 32
     * bytes each, so 7 * 64 hex digits and 6 commas. */
    assert_int_equal(second - e, 7 * 64 + 6 + 1);
    assert_int_equal(strspn(e, "0123456789abcdef,"), 7 * 64 + 6);
    free(e);

    /* One context per handshake, --request none included (the context is
     * derived once EDHOC completed, RFC 9528 Appendix A.1). */
    char *o = net_read_file(oscore);
    assert_non_null(o);
    assert_int_equal(count_char(o, '\n'), 2);
    assert_int_equal(count_char(o, '"'), 24);
    assert_non_null(strstr(o, ",\"\",\"AES-CCM-16-64-128 (CCM*)\"\n"));

    if (system("command -v tshark >/dev/null 2>&1") != 0) {
        free(o);
        print_message("tshark not installed: the row is not dissected\n");
        skip();
    }
    *strchr(o, '\n') = '\0';
    /* The command the man page shows (DECRYPTING CAPTURES). */
    snprintf(cmd, sizeof cmd,
             "tshark -n -r %s -d udp.port==%u,coap -o \"uat:oscore_contexts:$(cat %s)\" "
             "-Y oscore -T fields -e oscore.code -e oscore.tag -e text",
             pcap, responder.port, oscore);
    free(o);
    rc = net_sh(cmd, &out, 60);
    print_message("%s\n%s", cmd, out);
    assert_int_equal(rc, 0);
    /* Inner code 2 (POST) with its decrypted payload: RFC 8613 Section 5.3
     * puts the request's code and payload inside the ciphertext, so only a
     * matching context shows them; the tag field appears only once the
     * dissector's tag check passed. */
    bool post_seen = !strncmp(out, "2\t", 2) || strstr(out, "\n2\t");
    assert_true(post_seen);
    assert_non_null(strstr(out, "hello-keylog"));
    free(out);
}

/* A symbolic link in place of a file is refused before anything is sent:
 * exit code 3 and a message naming the link. */
static void test_symlink_refused(void **state)
{
    (void)state;
    char dir[300], link[340], target[300];
    net_path(dir, sizeof dir, "kl-link");
    net_path(target, sizeof target, "elsewhere");
    snprintf(link, sizeof link, "%s/edhoc_secrets", dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    net_write_file(target, "", 0600);
    assert_int_equal(symlink(target, link), 0);
    char *out = NULL;
    int rc =
        net_cli_run(&out, 30, false, "initiator coap://127.0.0.1:%u --request none --keylog %s",
                    responder.port, dir);
    char want[600];
    snprintf(want, sizeof want,
             "edhoc-cli initiator: --keylog %s: is a symbolic link; the key log is never "
             "written through one",
             link);
    if (!strstr(out, want))
        fail_msg("want '%s' in:\n%s", want, out);
    assert_int_equal(rc, 3);
    free(out);
    char *t = net_read_file(target);
    assert_string_equal(t, "");
    free(t);
}

/* The line of text that starts with prefix, copied to out ("" if none). */
static void line_starting(const char *text, const char *prefix, char *out, size_t cap)
{
    out[0] = '\0';
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, prefix, strlen(prefix)) != 0)
            continue;
        size_t n = strcspn(l, "\n");
        snprintf(out, cap, "%.*s", (int)n, l);
        return;
    }
}

/* Every line is an edhoc_secrets row of suite 2: seven fields of 64 hex
 * digits. Returns the number of rows, -1 at the first line that is not. */
static int whole_edhoc_rows(const char *text)
{
    int rows = 0;
    for (const char *l = text; *l; rows++) {
        const char *end = strchr(l, '\n');
        if (!end || end - l != 7 * 64 + 6)
            return -1;
        for (int f = 0; f < 7; f++) {
            const char *field = l + f * 65;
            if (strspn(field, "0123456789abcdef") != 64 || (f < 6 && field[64] != ','))
                return -1;
        }
        l = end + 1;
    }
    return rows;
}

/* responder --keylog DIR: under umask 0 DIR is 0700 and its files 0600;
 * the responder's edhoc_secrets row is the initiator's for the same G_X,
 * and its oscore_contexts row alone opens the captured request in
 * tshark, as the initiator's does. */
static void test_responder_rows(void **state)
{
    (void)state;
    char rdir[300], idir[300], pcap[300], path[340];
    net_path(rdir, sizeof rdir, "kl-resp");
    net_path(idir, sizeof idir, "kl-init");
    net_path(pcap, sizeof pcap, "resp.pcap");
    char args[600];
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state-dir none --keylog %s", rdir);
    struct net_proc *kr = &resp_keylog;
    mode_t old = umask(0);
    int started = net_responder_start(kr, "kl-resp", args);
    umask(old);
    assert_int_equal(started, 0);
    char *out = NULL;
    int rc = net_cli_run(&out, 30, false,
                         "initiator coap://127.0.0.1:%u --request \"POST /echo hello-responder\" "
                         "--keylog %s --pcap %s --timeout 20",
                         kr->port, idir, pcap);
    if (rc != 0)
        fail_msg("initiator exited %d:\n%s", rc, out);
    free(out);
    assert_int_equal(mode_of(rdir), 0700);
    snprintf(path, sizeof path, "%s/edhoc_secrets", rdir);
    assert_int_equal(mode_of(path), 0600);
    char *r_edhoc = net_read_file(path);
    snprintf(path, sizeof path, "%s/oscore_contexts", rdir);
    assert_int_equal(mode_of(path), 0600);
    char *r_oscore = net_read_file(path);
    snprintf(path, sizeof path, "%s/edhoc_secrets", idir);
    char *i_edhoc = net_read_file(path);
    snprintf(path, sizeof path, "%s/oscore_contexts", idir);
    char *i_oscore = net_read_file(path);
    assert_non_null(r_edhoc);
    assert_non_null(r_oscore);
    assert_non_null(i_edhoc);
    assert_non_null(i_oscore);
    assert_int_equal(whole_edhoc_rows(r_edhoc), 1);
    char g_x[65], r_row[600], i_row[600];
    snprintf(g_x, sizeof g_x, "%.64s", r_edhoc);
    line_starting(r_edhoc, g_x, r_row, sizeof r_row);
    line_starting(i_edhoc, g_x, i_row, sizeof i_row);
    assert_true(r_row[0] != '\0');
    assert_string_equal(r_row, i_row);
    /* One context, in the table's orientation whichever side wrote it. */
    assert_int_equal(count_char(r_oscore, '\n'), 1);
    assert_string_equal(r_oscore, i_oscore);
    free(r_edhoc);
    free(i_edhoc);
    free(i_oscore);
    assert_int_equal(net_proc_stop(kr, SIGTERM, 10000), 0);

    if (system("command -v tshark >/dev/null 2>&1") != 0) {
        free(r_oscore);
        print_message("tshark not installed: the row is not dissected\n");
        skip();
    }
    free(r_oscore);
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "tshark -n -r %s -d udp.port==%u,coap -o \"uat:oscore_contexts:$(head -n 1 %s)\" "
             "-Y oscore -T fields -e oscore.code -e oscore.tag -e text",
             pcap, kr->port, path);
    rc = net_sh(cmd, &out, 60);
    print_message("%s\n%s", cmd, out);
    assert_int_equal(rc, 0);
    bool post_seen = !strncmp(out, "2\t", 2) || strstr(out, "\n2\t");
    assert_true(post_seen);
    assert_non_null(strstr(out, "hello-responder"));
    free(out);
}

/* The responder refuses a symbolic link in DIR before it serves: exit
 * code 3, the link named, the file behind it untouched. */
static void test_responder_symlink_refused(void **state)
{
    (void)state;
    char dir[300], link[340], target[300];
    net_path(dir, sizeof dir, "kl-resp-link");
    net_path(target, sizeof target, "resp-elsewhere");
    snprintf(link, sizeof link, "%s/oscore_contexts", dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    net_write_file(target, "", 0600);
    assert_int_equal(symlink(target, link), 0);
    char *out = NULL;
    int rc = net_cli_run(&out, 30, false,
                         "responder --demo --workers 1 --listen 127.0.0.1:0 --state-dir none "
                         "--keylog %s",
                         dir);
    char want[600];
    snprintf(want, sizeof want,
             "--keylog %s: is a symbolic link; the key log is never written through one", link);
    if (!strstr(out, want))
        fail_msg("want '%s' in:\n%s", want, out);
    assert_int_equal(rc, 3);
    free(out);
    char *t = net_read_file(target);
    assert_string_equal(t, "");
    free(t);
}

/* --workers 2: the workers share the files, each row one write(2) on an
 * O_APPEND descriptor, so every line of many handshakes is a whole row
 * and each handshake has its one row and one context. */
static void test_responder_workers_rows(void **state)
{
    (void)state;
    char dir[300], path[340];
    net_path(dir, sizeof dir, "kl-workers");
    char args[600];
    snprintf(args, sizeof args, "--workers 2 --listen 127.0.0.1:0 --state-dir none --keylog %s",
             dir);
    struct net_proc *kw = &resp_workers;
    assert_int_equal(net_responder_start(kw, "kl-workers", args), 0);
    enum { RUNS = 4, REPEAT = 3 };
    /* Separate runs, from separate source ports: the port's group spreads
     * them over both workers. */
    for (int i = 0; i < RUNS; i++) {
        char *out = NULL;
        int rc = net_cli_run(&out, 60, false,
                             "initiator coap://127.0.0.1:%u --request none --repeat %d "
                             "--timeout 30",
                             kw->port, REPEAT);
        if (rc != 0)
            fail_msg("initiator exited %d:\n%s", rc, out);
        free(out);
    }
    assert_int_equal(net_proc_stop(kw, SIGTERM, 10000), 0);
    snprintf(path, sizeof path, "%s/edhoc_secrets", dir);
    char *e = net_read_file(path);
    assert_non_null(e);
    assert_int_equal(whole_edhoc_rows(e), RUNS * REPEAT);
    free(e);
    snprintf(path, sizeof path, "%s/oscore_contexts", dir);
    char *o = net_read_file(path);
    assert_non_null(o);
    assert_int_equal(count_char(o, '\n'), RUNS * REPEAT);
    assert_int_equal(count_char(o, '"'), 12 * RUNS * REPEAT);
    assert_int_equal(net_count(o, ",\"\",\"AES-CCM-16-64-128 (CCM*)\"\n"), RUNS * REPEAT);
    free(o);
}

/* interop --keylog DIR: each cell's initiator gets --keylog DIR, so
 * every completed cell appends its row and its context, and a cell the
 * device refused at message_1 (suite 0 against a responder of suite 2
 * only: EDHOC error 2) none. The combined cell, which a responder that
 * sends message_4 refuses (RFC 9668 Section 3.1), sent message_3 and its
 * OSCORE request, so it has its rows too: the initiator writes them once
 * message_3 is made, and they open what the capture holds of it. */
static void test_interop_rows(void **state)
{
    (void)state;
    struct net_proc *ri = &resp_interop;
    assert_int_equal(net_responder_start(ri, "kl-interop",
                                         "--listen 127.0.0.1:0 --state-dir none --message-4 "
                                         "--suites 2"),
                     0);
    char dir[300], path[340];
    net_path(dir, sizeof dir, "kl-interop");
    char *out = NULL;
    int rc = net_cli_run(&out, 120, true,
                         "interop coap://127.0.0.1:%u --methods 3 --suites 0,2 --id-creds kid "
                         "--framing a2 --keylog %s --json",
                         ri->port, dir);
    if (rc != 0)
        fail_msg("interop exited %d:\n%s", rc, out);
    int completed = net_count(out, "\"edhoc_completed\": true");
    int refused = net_count(out, "\"edhoc_completed\": false");
    int combined_refused = net_count(out, "\"unsupported\": \"combined\"");
    free(out);
    assert_int_equal(net_proc_stop(ri, SIGTERM, 10000), 0);
    assert_int_equal(completed, 2);
    assert_int_equal(refused, 3);
    assert_int_equal(combined_refused, 1);
    assert_int_equal(mode_of(dir), 0700);
    snprintf(path, sizeof path, "%s/edhoc_secrets", dir);
    assert_int_equal(mode_of(path), 0600);
    char *e = net_read_file(path);
    assert_non_null(e);
    assert_int_equal(whole_edhoc_rows(e), completed + combined_refused);
    free(e);
    snprintf(path, sizeof path, "%s/oscore_contexts", dir);
    char *o = net_read_file(path);
    assert_non_null(o);
    assert_int_equal(count_char(o, '\n'), completed + combined_refused);
    free(o);
}

/* A directory the key log may not use stops the matrix before any cell
 * runs: exit code 3, one line naming it. */
static void test_interop_symlink_refused(void **state)
{
    (void)state;
    char dir[300], link[340], target[300];
    net_path(dir, sizeof dir, "kl-interop-link");
    net_path(target, sizeof target, "interop-elsewhere");
    snprintf(link, sizeof link, "%s/edhoc_secrets", dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    net_write_file(target, "", 0600);
    assert_int_equal(symlink(target, link), 0);
    char *out = NULL;
    int rc = net_cli_run(&out, 30, false,
                         "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid "
                         "--keylog %s",
                         responder.port, dir);
    char want[600];
    snprintf(want, sizeof want,
             "edhoc-cli interop: --keylog %s: is a symbolic link; the key log is never "
             "written through one",
             link);
    if (!strstr(out, want))
        fail_msg("want '%s' in:\n%s", want, out);
    assert_int_equal(rc, 3);
    free(out);
    char *t = net_read_file(target);
    assert_string_equal(t, "");
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files_and_rows),
        cmocka_unit_test(test_symlink_refused),
        cmocka_unit_test(test_responder_rows),
        cmocka_unit_test(test_responder_symlink_refused),
        cmocka_unit_test(test_responder_workers_rows),
        cmocka_unit_test(test_interop_rows),
        cmocka_unit_test(test_interop_symlink_refused),
    };
    return cmocka_run_group_tests(tests, group_setup, net_group_teardown);
}
