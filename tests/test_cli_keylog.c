/*
 * edhoc-cli initiator --keylog DIR: the rows that open a capture
 * decrypted. DIR/oscore_contexts is checked by Wireshark's own OSCORE
 * dissector (tshark, skipped when absent): given only that row, it must
 * decrypt the inner request of a capture made by --pcap. DIR/edhoc_secrets
 * is checked here for its shape; its values are checked against RFC 9529
 * in test_edhoc (the library's edhoc_key_log).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "net_test_util.h"

static struct net_proc responder;

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
    int rc = net_cli_run(&out, 30, false,
                         "initiator coap://127.0.0.1:%u --request none --keylog %s",
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files_and_rows),
        cmocka_unit_test(test_symlink_refused),
    };
    return cmocka_run_group_tests(tests, group_setup, net_group_teardown);
}
