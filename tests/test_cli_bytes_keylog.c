/*
 * edhoc-cli bytes CAPTURE --keylog FILE: a capture of a real handshake and
 * OSCORE exchange (responder + initiator --keylog DIR --pcap) opened with
 * the key log the initiator wrote: ID_CRED_R/I from PLAINTEXT_2/3 and the
 * decrypted OSCORE request and response, in text and JSON; a wrong row
 * says which row failed and why; a bad key-log line, a world-readable key
 * log and a symbolic link are refused with the line or the reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "net_test_util.h"

static struct net_proc responder;
static char keylog_dir[300], pcap[300];

static int group_setup(void **state)
{
    (void)state;
    if (net_make_dir("bytes-keylog"))
        return -1;
    if (net_responder_start(&responder, "bytes-keylog", "--listen 127.0.0.1:0 --state-dir none"))
        return -1;
    net_path(keylog_dir, sizeof keylog_dir, "kl");
    net_path(pcap, sizeof pcap, "run.pcap");
    char *out = NULL;
    int rc = net_cli_run(&out, 30, false,
                         "initiator coap://127.0.0.1:%u --request \"POST /echo hello-bytes\" "
                         "--keylog %s --pcap %s --timeout 20",
                         responder.port, keylog_dir, pcap);
    if (rc != 0)
        print_message("initiator exited %d:\n%s", rc, out);
    free(out);
    return rc == 0 ? 0 : -1;
}

static void want(const char *out, const char *text)
{
    if (!strstr(out, text))
        fail_msg("want '%s' in:\n%s", text, out);
}

/* The responder's demo credential for method 3 is RFC 9529 trace 2's
 * (ID_CRED_R kid h'32'), the initiator's too (ID_CRED_I kid h'2b'). */
static void test_decrypts_capture(void **state)
{
    (void)state;
    char *out = NULL;
    int rc = net_cli_run(&out, 30, false, "bytes %s --keylog %s", pcap, keylog_dir);
    assert_int_equal(rc, 0);
    char row[400];
    snprintf(row, sizeof row, "  key log: %s/edhoc_secrets line 1 (by G_X)", keylog_dir);
    want(out, row);
    want(out, "      ID_CRED_R: kid h'32' (4 bytes: h'a1044132')\n");
    want(out, "      ID_CRED_I: kid h'2b' (4 bytes: h'a104412b')\n");
    want(out, "      inner request: 0.02, Uri-Path: echo, Content-Format: 0, payload "
              "\"hello-bytes\"\n");
    want(out, "      inner response: 2.04, Content-Format: 0, payload \"hello-bytes\"\n");
    snprintf(row, sizeof row, "      (opened with %s/oscore_contexts line 1)", keylog_dir);
    want(out, row);
    assert_null(strstr(out, "not decrypted"));
    free(out);

    rc = net_cli_run(&out, 30, true, "bytes %s --keylog %s --json", pcap, keylog_dir);
    assert_int_equal(rc, 0);
    assert_int_equal(net_json_valid(out, "bytes", false), 0);
    char *c = net_json_compact(out);
    want(c, "\"id_cred\":{\"type\":\"kid\",\"value_hex\":\"32\",\"hex\":\"a1044132\"}");
    want(c, "\"id_cred\":{\"type\":\"kid\",\"value_hex\":\"2b\",\"hex\":\"a104412b\"}");
    want(c, "\"inner\":{\"code\":\"0.02\"");
    want(c, "\"payload_text\":\"hello-bytes\"");
    want(c, "\"edhoc_rows\":1,\"oscore_rows\":1");
    free(c);
    free(out);

    /* Without --keylog the members are null. */
    rc = net_cli_run(&out, 30, true, "bytes %s --json", pcap);
    assert_int_equal(rc, 0);
    assert_int_equal(net_json_valid(out, "bytes", false), 0);
    c = net_json_compact(out);
    want(c, "\"decrypted\":null");
    want(c, "\"keylog\":null");
    free(c);
    free(out);
}

/* Flips the last hex digit of field (0-based) of a comma-separated row. */
static void flip_field(char *row, int field)
{
    char *p = row;
    for (int i = 0; i < field; i++)
        p = strchr(p, ',') + 1;
    char *end = p + strcspn(p, ",\n");
    if (end[-1] == '"')
        end--;
    end[-1] = end[-1] == '0' ? '1' : '0';
}

/* One file with both rows, PRK_3e2m and the Master Secret changed:
 * message_2 still opens (PRK_2e is right), message_3 and the OSCORE
 * request fail on their tags, naming the row; the response is not tried. */
static void test_wrong_rows(void **state)
{
    (void)state;
    char e_path[340], o_path[340], bad[300];
    snprintf(e_path, sizeof e_path, "%s/edhoc_secrets", keylog_dir);
    snprintf(o_path, sizeof o_path, "%s/oscore_contexts", keylog_dir);
    net_path(bad, sizeof bad, "bad-rows");
    char *e = net_read_file(e_path), *o = net_read_file(o_path);
    assert_non_null(e);
    assert_non_null(o);
    flip_field(e, 3);
    flip_field(o, 2);
    char text[2000];
    snprintf(text, sizeof text, "# changed rows\n%s%s", e, o);
    free(e);
    free(o);
    net_write_file(bad, text, 0600);
    char *out = NULL;
    int rc = net_cli_run(&out, 30, false, "bytes %s --keylog %s", pcap, bad);
    assert_int_equal(rc, 0);
    char line[600];
    want(out, "      ID_CRED_R: kid h'32'");
    snprintf(line, sizeof line,
             "      not decrypted: %s line 2: the tag of message_3 does not verify under its "
             "PRK_3e2m and TH_3\n",
             bad);
    want(out, line);
    snprintf(line, sizeof line,
             "      not decrypted: %s line 3: the tag of the request does not verify under its "
             "Master Secret and Master Salt\n",
             bad);
    want(out, line);
    want(out, "      not decrypted: not tried: its request was not opened\n");
    free(out);

    rc = net_cli_run(&out, 30, true, "bytes %s --keylog %s --json", pcap, bad);
    assert_int_equal(rc, 0);
    assert_int_equal(net_json_valid(out, "bytes", false), 0);
    char *c = net_json_compact(out);
    want(c, "\"status\":\"failed\"");
    want(c, "\"error\":\"tag_mismatch\"");
    free(c);
    free(out);

    /* An OSCORE row alone: the EDHOC messages have no row. */
    snprintf(e_path, sizeof e_path, "%s/oscore_contexts", keylog_dir);
    rc = net_cli_run(&out, 30, false, "bytes %s --keylog %s", pcap, e_path);
    assert_int_equal(rc, 0);
    want(out, "      not decrypted: no edhoc_secrets row has this exchange's G_X h'");
    want(out, "      inner request: 0.02");
    free(out);
}

/* A line that is no row: exit 3, the file and line number. */
static void test_bad_line(void **state)
{
    (void)state;
    char path[300];
    net_path(path, sizeof path, "bad-line");
    net_write_file(path,
                   "# edhoc_secrets\n\n"
                   "00,11,2x,33,44,55,66\n",
                   0600);
    char *out = NULL;
    int rc = net_cli_run(&out, 30, false, "bytes %s --keylog %s 2>&1", pcap, path);
    char line[600];
    snprintf(line, sizeof line, "edhoc-cli bytes: --keylog %s line 3: field 3 (TH_2) is not hex\n",
             path);
    want(out, line);
    assert_int_equal(rc, 3);
    free(out);

    net_write_file(path, "\"01\",\"02\",\"aabb\"\n", 0600);
    rc = net_cli_run(&out, 30, false, "bytes %s --keylog %s 2>&1", pcap, path);
    snprintf(line, sizeof line, "edhoc-cli bytes: --keylog %s line 1: 3 fields: ", path);
    want(out, line);
    assert_int_equal(rc, 3);
    free(out);
}

/* It holds secrets: readable by others, or a symbolic link, is refused. */
static void test_file_rules(void **state)
{
    (void)state;
    char path[300], link[300];
    net_path(path, sizeof path, "open-keylog");
    net_write_file(path, "", 0644);
    assert_int_equal(chmod(path, 0644), 0);
    char *out = NULL;
    int rc = net_cli_run(&out, 30, false, "bytes %s --keylog %s 2>&1", pcap, path);
    char line[600];
    snprintf(line, sizeof line, "edhoc-cli bytes: --keylog %s: group or others can access it",
             path);
    want(out, line);
    assert_int_equal(rc, 3);
    free(out);

    net_path(link, sizeof link, "link-keylog");
    char target[340];
    snprintf(target, sizeof target, "%s/oscore_contexts", keylog_dir);
    assert_int_equal(symlink(target, link), 0);
    rc = net_cli_run(&out, 30, false, "bytes %s --keylog %s 2>&1", pcap, link);
    snprintf(line, sizeof line,
             "edhoc-cli bytes: --keylog %s: is a symbolic link; a key log is never read through "
             "one",
             link);
    want(out, line);
    assert_int_equal(rc, 3);
    free(out);

    /* --keylog belongs to a capture. */
    rc = net_cli_run(&out, 30, false, "bytes --compare --keylog %s 2>&1", keylog_dir);
    want(out, "--keylog opens the messages of a capture; --compare reads none");
    assert_int_equal(rc, 2);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decrypts_capture),
        cmocka_unit_test(test_wrong_rows),
        cmocka_unit_test(test_bad_line),
        cmocka_unit_test(test_file_rules),
    };
    return cmocka_run_group_tests(tests, group_setup, net_group_teardown);
}
