/*
 * `edhoc-cli oscore protect|unprotect`: RFC 8613 Appendix C.4-C.8 byte-exact
 * in both roles through the binary, with context files in libcoap's format
 * written to a temporary directory; JSON (against docs/json/oscore.schema.json)
 * and verbose output; the exit code and the one-line reason of each kind of
 * failure; the context file kept as the secret it is; the option table; and
 * every kind of `coap --json` output against docs/json/coap.schema.json.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "net_test_util.h"
#include "vectors.h"

static struct vec_scope appc;
static char tmpdir[256];

/* The value at PATH ("decoded/options/1/value_hex"; "#" at the end: a
 * length) of the JSON text, read with Python's json module: a string as
 * itself, anything else as JSON ("true", "12", "null"). Fails the test
 * when the text is not JSON or PATH is not in it. Free the result. */
static char *json_at(const char *text, const char *path)
{
    static const char script[] =
        "import json, sys\n"
        "d = json.load(open(sys.argv[1]))\n"
        "for k in sys.argv[2].split('/'):\n"
        "    d = len(d) if k == '#' else d[int(k)] if isinstance(d, list) else d[k]\n"
        "sys.stdout.write(d if isinstance(d, str) else json.dumps(d))\n";
    char doc[400], py[400], cmd[1200];
    snprintf(doc, sizeof doc, "%s/json-at.json", tmpdir);
    snprintf(py, sizeof py, "%s/json-at.py", tmpdir);
    net_write_file(doc, text, 0600);
    net_write_file(py, script, 0600);
    snprintf(cmd, sizeof cmd, "python3 %s %s '%s' 2>&1", py, doc, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *got = malloc(65536);
    size_t n = fread(got, 1, 65535, p);
    got[n] = '\0';
    if (pclose(p) != 0)
        fail_msg("%s: not in the output (%s):\n%s", path, got, text);
    return got;
}

static void assert_json_eq(const char *text, const char *path, const char *want)
{
    char *got = json_at(text, path);
    if (strcmp(got, want) != 0)
        fail_msg("%s is %s, expected %s, in:\n%s", path, got, want, text);
    free(got);
}

static long json_long(const char *text, const char *path)
{
    char *got = json_at(text, path);
    long v = strtol(got, NULL, 10);
    free(got);
    return v;
}

/* The value (hex) of the first option numbered `number` of the decoded
 * message in oscore --json output. */
static char *decoded_option(const char *text, long number)
{
    long n = json_long(text, "decoded/options/#");
    for (long i = 0; i < n; i++) {
        char path[80];
        snprintf(path, sizeof path, "decoded/options/%ld/number", i);
        if (json_long(text, path) == number) {
            snprintf(path, sizeof path, "decoded/options/%ld/value_hex", i);
            return json_at(text, path);
        }
    }
    fail_msg("no option %ld in:\n%s", number, text);
    return NULL;
}

/* Write the context of key-derivation vector `name` as a libcoap file. */
static const char *context_file(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s.conf", tmpdir, name);
    /* Each test provisions the context anew: the numbers an earlier test
     * recorded beside it (FILE.seq) are not this test's. */
    char seq[530];
    snprintf(seq, sizeof seq, "%s.seq", path);
    unlink(seq);
    struct vec_scope v = vec_object(appc, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    char hex[256];
    static const char *keys[] = {"master_secret", "master_salt", "id_context", "sender_id",
                                 "recipient_id"};
    fprintf(f, "# RFC 8613 %s\n", name);
    for (size_t i = 0; i < 5; i++) {
        if (!vec_has(v, keys[i]))
            continue;
        vec_str(v, keys[i], hex, sizeof hex);
        fprintf(f, "%s,hex,\"%s\"\n", keys[i], hex);
    }
    fprintf(f, "aead_alg,integer,10\nhkdf_alg,integer,-10\nreplay_window,integer,32\n");
    fclose(f);
    /* It holds a master secret: only its owner may read it. */
    assert_int_equal(chmod(path, 0600), 0);
    return path;
}

/* Run the CLI; return its exit status, stdout (trailing newline cut) in out. */
static int cli(char **out, bool merge, const char *fmt, ...)
{
    char args[6000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    int rc = run_cli(args, merge, out);
    size_t n = strlen(*out);
    while (n && ((*out)[n - 1] == '\n' || (*out)[n - 1] == '\r'))
        (*out)[--n] = '\0';
    return rc;
}

static void expect_hex(struct vec_scope v, const char *key, const char *got)
{
    char want[1024];
    vec_str(v, key, want, sizeof want);
    if (strcmp(want, got) != 0)
        fail_msg("%s: want %s, got %s", key, want, got);
}

static void request_vector(const char *msg, const char *client, const char *server)
{
    struct vec_scope v = vec_object(appc, msg);
    char plain[512], prot[512];
    vec_str(v, "unprotected_request", plain, sizeof plain);
    vec_str(v, "protected_request", prot, sizeof prot);
    char *out;
    assert_int_equal(
        cli(&out, false, "oscore protect --context %s --seq 20 %s", context_file(client), plain),
        0);
    expect_hex(v, "protected_request", out);
    free(out);
    assert_int_equal(cli(&out, false, "oscore unprotect --context %s --role server %s",
                         context_file(server), prot),
                     0);
    expect_hex(v, "unprotected_request", out);
    free(out);
}

static void test_cli_requests(void **state)
{
    (void)state;
    request_vector("C.4", "C.1.1", "C.1.2");
    request_vector("C.5", "C.2.1", "C.2.2");
    request_vector("C.6", "C.3.1", "C.3.2");
}

static void test_cli_responses(void **state)
{
    (void)state;
    char req[512], resp[512];
    vec_str(vec_object(appc, "C.4"), "protected_request", req, sizeof req);
    char *out;
    struct vec_scope v7 = vec_object(appc, "C.7");
    struct vec_scope v8 = vec_object(appc, "C.8");
    vec_str(v7, "unprotected_response", resp, sizeof resp);
    /* C.7: no --seq, the request nonce is reused */
    assert_int_equal(cli(&out, false, "oscore protect --context %s --request %s %s",
                         context_file("C.1.2"), req, resp),
                     0);
    expect_hex(v7, "protected_response", out);
    free(out);
    /* C.8: --seq 0 gives the response its own Partial IV */
    assert_int_equal(cli(&out, false,
                         "oscore protect --context %s --role server --seq 0 --request %s %s",
                         context_file("C.1.2"), req, resp),
                     0);
    expect_hex(v8, "protected_response", out);
    free(out);
    /* the client side of both */
    char p7[512], p8[512];
    vec_str(v7, "protected_response", p7, sizeof p7);
    vec_str(v8, "protected_response", p8, sizeof p8);
    assert_int_equal(cli(&out, false, "oscore unprotect --context %s --request %s %s",
                         context_file("C.1.1"), req, p7),
                     0);
    expect_hex(v7, "unprotected_response", out);
    free(out);
    assert_int_equal(cli(&out, false, "oscore unprotect --context %s --role client --request %s %s",
                         context_file("C.1.1"), req, p8),
                     0);
    expect_hex(v8, "unprotected_response", out);
    free(out);
}

static void test_cli_json_and_verbose(void **state)
{
    (void)state;
    struct vec_scope v = vec_object(appc, "C.4");
    char plain[512], prot[512];
    vec_str(v, "unprotected_request", plain, sizeof plain);
    vec_str(v, "protected_request", prot, sizeof prot);
    char *out;
    assert_int_equal(cli(&out, false, "oscore protect --json --context %s --seq 20 %s",
                         context_file("C.1.1"), plain),
                     0);
    assert_int_equal(net_json_valid(out, "oscore", false), 0);
    assert_json_eq(out, "message_hex", prot);
    assert_json_eq(out, "ok", "true");
    assert_json_eq(out, "role", "client");
    assert_json_eq(out, "decoded/code", "0.02");
    assert_json_eq(out, "error", "null");
    free(out);
    /* -v decodes on standard error: standard output stays the hex alone. */
    assert_int_equal(
        cli(&out, false, "oscore unprotect -v --context %s %s", context_file("C.1.2"), prot), 0);
    assert_string_equal(out, plain);
    free(out);
    assert_int_equal(
        cli(&out, true, "oscore unprotect -v --context %s %s", context_file("C.1.2"), prot), 0);
    assert_non_null(strstr(out, plain));
    assert_non_null(strstr(out, "code 0.01"));
    assert_non_null(strstr(out, "Uri-Host: \"localhost\""));
    assert_non_null(strstr(out, "Uri-Path: \"tv1\""));
    free(out);
    assert_int_equal(
        cli(&out, false, "oscore unprotect --json --context %s %s", context_file("C.1.2"), prot),
        0);
    assert_int_equal(net_json_valid(out, "oscore", false), 0);
    assert_json_eq(out, "message_hex", plain);
    assert_json_eq(out, "decoded/code", "0.01");
    assert_json_eq(out, "decoded/type", "CON");
    /* No payload: null, not "" (issue #14: "null for absent values"). */
    assert_json_eq(out, "decoded/payload_hex", "null");
    char *path = decoded_option(out, 11);
    assert_string_equal(path, "747631"); /* Uri-Path "tv1" */
    free(path);
    assert_json_eq(out, "decoded/options/1/name", "Uri-Path");
    /* The check can fail: a member the schema does not list is refused. */
    assert_int_equal(out[0], '{');
    char *bad = malloc(strlen(out) + 40);
    sprintf(bad, "{\"note\": \"x\", %s", out + 1);
    assert_int_not_equal(net_json_valid(bad, "oscore", false), 0);
    free(bad);
    free(out);
    /* A response: protected with its own Partial IV (C.8), as JSON. */
    char resp[512];
    vec_str(vec_object(appc, "C.8"), "unprotected_response", resp, sizeof resp);
    assert_int_equal(cli(&out, false, "oscore protect --json --context %s --seq 0 --request %s %s",
                         context_file("C.1.2"), prot, resp),
                     0);
    assert_int_equal(net_json_valid(out, "oscore", false), 0);
    assert_json_eq(out, "role", "server");
    char p8[512];
    vec_str(vec_object(appc, "C.8"), "protected_response", p8, sizeof p8);
    assert_json_eq(out, "message_hex", p8);
    free(out);
}

static void test_cli_failures(void **state)
{
    (void)state;
    struct vec_scope v = vec_object(appc, "C.4");
    char plain[512], prot[512];
    vec_str(v, "unprotected_request", plain, sizeof plain);
    vec_str(v, "protected_request", prot, sizeof prot);
    char *out;
    /* tampered ciphertext: exit 7, the reason, and the 4.00 a server sends */
    char bad[512];
    strcpy(bad, prot);
    size_t n = strlen(bad);
    bad[n - 1] = bad[n - 1] == '0' ? '1' : '0';
    assert_int_equal(
        cli(&out, true, "oscore unprotect --context %s %s", context_file("C.1.2"), bad), 7);
    assert_non_null(strstr(out, "decryption failed"));
    free(out);
    assert_int_equal(
        cli(&out, false, "oscore unprotect --json --context %s %s", context_file("C.1.2"), bad), 7);
    assert_int_equal(net_json_valid(out, "oscore", false), 0);
    assert_json_eq(out, "ok", "false");
    assert_json_eq(out, "error", "decrypt");
    assert_json_eq(out, "failed_step", "unprotect");
    assert_json_eq(out, "message_hex", "null");
    /* 4.00, Max-Age 0, "Decryption failed" (RFC 8613 Section 8.2) */
    assert_json_eq(out, "error_response_hex",
                   "64805d1f00003974d001ff44656372797074696f6e206661696c6564");
    free(out);
    /* wrong context (the client's own): kid does not match */
    assert_int_equal(
        cli(&out, true, "oscore unprotect --context %s %s", context_file("C.1.1"), prot), 7);
    assert_non_null(strstr(out, "security context not found"));
    free(out);
    /* malformed OSCORE option (reserved bit) */
    char badopt[512];
    strcpy(badopt, prot);
    char *opt = strstr(badopt, "620914");
    assert_non_null(opt);
    opt[2] = 'e'; /* flags 0x09 -> 0xe9 */
    assert_int_equal(
        cli(&out, true, "oscore unprotect --context %s %s", context_file("C.1.2"), badopt), 7);
    assert_non_null(strstr(out, "malformed OSCORE option"));
    free(out);

    /* context file errors name the line */
    char path[512];
    snprintf(path, sizeof path, "%s/bad.conf", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "# comment\nmaster_secret,hex,\"0102\"\nsender_id,hex,0g\n");
    fclose(f);
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(cli(&out, true, "oscore protect --context %s %s", path, plain), 3);
    assert_non_null(strstr(out, "bad.conf:3:"));
    assert_non_null(strstr(out, "not hex"));
    assert_null(strchr(out, '\n')); /* one line */
    free(out);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "master_secret,hex,0102\nsender_id,hex,01020304050607\nrecipient_id,hex,01\naead_"
               "alg,text,A128GCM\n");
    fclose(f);
    assert_int_equal(cli(&out, true, "oscore protect --context %s %s", path, plain), 3);
    assert_non_null(strstr(out, "at most 6 bytes"));
    free(out);
    assert_int_equal(cli(&out, true, "oscore protect --context %s/none.conf %s", tmpdir, plain), 3);
    assert_non_null(strstr(out, "none.conf: cannot read"));
    free(out);
    /* bad hex */
    assert_int_equal(cli(&out, true, "oscore protect --context %s 44zz", context_file("C.1.1")), 3);
    free(out);
    /* usage */
    assert_int_equal(cli(&out, true, "oscore protect %s", plain), 2);
    assert_non_null(strstr(out, "--context"));
    free(out);
    assert_int_equal(cli(&out, true, "oscore protect --context %s --role server %s",
                         context_file("C.1.1"), plain),
                     2);
    free(out);
    assert_int_equal(
        cli(&out, true, "oscore protect --context %s --seq -1 %s", context_file("C.1.1"), plain),
        2);
    free(out);
    assert_int_equal(cli(&out, true, "oscore protect --context %s --seq 1099511627776 %s",
                         context_file("C.1.1"), plain),
                     2);
    free(out);
    char resp[512];
    vec_str(vec_object(appc, "C.7"), "unprotected_response", resp, sizeof resp);
    assert_int_equal(cli(&out, true, "oscore protect --context %s %s", context_file("C.1.2"), resp),
                     2);
    assert_non_null(strstr(out, "--request"));
    free(out);
    assert_int_equal(cli(&out, true, "oscore frobnicate"), 2);
    free(out);
    assert_int_equal(cli(&out, false, "oscore --help"), 0);
    assert_non_null(strstr(out, "usage: edhoc-cli oscore protect|unprotect"));
    free(out);
    /* the highest sequence number still works, with a 5-byte Partial IV */
    assert_int_equal(cli(&out, false, "oscore protect --context %s --seq 1099511627775 %s",
                         context_file("C.1.1"), plain),
                     0);
    assert_non_null(strstr(out, "0dffffffffff"));
    free(out);
}

static int setup(void **state)
{
    (void)state;
    appc = vec_load("rfc8613-appendix-c.json");
    snprintf(tmpdir, sizeof tmpdir, "%s/edhoc-oscore-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Without --seq a request gets the next number of the context's record in
 * the state directory, so two runs never seal two messages under one
 * nonce (RFC 8613 Section 7.2: "An AEAD nonce MUST NOT be used more than
 * once per AEAD key"); FILE.seq beside the context keeps them too. */
static void test_cli_durable_sequence_numbers(void **state)
{
    (void)state;
    char *out;
    char sdir[400];
    snprintf(sdir, sizeof sdir, "%s/state", tmpdir);
    const char *ctx = context_file("C.1.1");
    const char *req = "44015d1f00003974396c6f63616c686f737483747631";
    assert_int_equal(
        cli(&out, false, "oscore protect --json --context %s --state-dir %s %s", ctx, sdir, req),
        0);
    assert_int_equal(net_json_valid(out, "oscore", false), 0);
    char *osc = decoded_option(out, 9);
    assert_string_equal(osc, "0900"); /* Partial IV 0 */
    free(osc);
    free(out);
    assert_int_equal(
        cli(&out, false, "oscore protect --json --context %s --state-dir %s %s", ctx, sdir, req),
        0);
    osc = decoded_option(out, 9);
    assert_string_equal(osc, "0901"); /* Partial IV 1, not 0 again */
    free(osc);
    free(out);
    /* --state-dir none: the context's companion FILE.seq (libcoap's
     * -E FILE,FILE.seq) was written by both runs and still records them:
     * Partial IV 2 (issue 23: one record per keying material, whatever
     * files are named). */
    assert_int_equal(
        cli(&out, false, "oscore protect --json --context %s --state-dir none %s", ctx, req), 0);
    osc = decoded_option(out, 9);
    assert_string_equal(osc, "0902");
    free(osc);
    free(out);
    char seq_path[600];
    snprintf(seq_path, sizeof seq_path, "%s.seq", ctx);
    char *next = net_read_file(seq_path);
    assert_non_null(next);
    assert_string_equal(next, "3\n");
    free(next);
}

/* A context file holds the master secret: it gets the rules of a private
 * key file (issue #14: "key files are refused when owned by another user
 * than the one running (root excepted) or in a group/world-writable
 * directory, with the fix in the message"), in oscore --context and in
 * coap --oscore-context, before anything is used or sent. */
static void test_context_file_is_secret(void **state)
{
    (void)state;
    const char plain[] = "44015d1f00003974396c6f63616c686f737483747631";
    char conf[600];
    snprintf(conf, sizeof conf, "%s", context_file("C.1.1"));
    char *out;
    assert_int_equal(chmod(conf, 0640), 0);
    assert_int_equal(cli(&out, true, "oscore protect --context %s --seq 1 %s", conf, plain), 3);
    assert_non_null(strstr(out, "mode 0640"));
    assert_non_null(strstr(out, "chmod 600"));
    free(out);
    /* coap refuses it the same way, before it sends anything (port 9:
     * discard, nothing would answer). */
    assert_int_equal(
        cli(&out, true, "coap GET coap://127.0.0.1:9/x --oscore-context %s --json", conf), 3);
    assert_non_null(strstr(out, "edhoc-cli coap: --oscore-context"));
    assert_non_null(strstr(out, "chmod 600"));
    assert_null(strstr(out, "responses"));
    free(out);
    assert_int_equal(chmod(conf, 0600), 0);

    /* In a directory others can write (no sticky bit): refused. */
    char open_dir[400], moved[500];
    snprintf(open_dir, sizeof open_dir, "%s/shared", tmpdir);
    assert_int_equal(mkdir(open_dir, 0700), 0);
    snprintf(moved, sizeof moved, "%s/c.conf", open_dir);
    assert_int_equal(rename(conf, moved), 0);
    assert_int_equal(chmod(open_dir, 0770), 0);
    assert_int_equal(cli(&out, true, "oscore protect --context %s --seq 1 %s", moved, plain), 3);
    assert_non_null(strstr(out, "chmod go-w"));
    free(out);
    assert_int_equal(cli(&out, true, "coap GET coap://127.0.0.1:9/x --oscore-context %s", moved),
                     3);
    assert_non_null(strstr(out, "chmod go-w"));
    free(out);
    /* With the sticky bit (as /tmp) the owner's file is fine. */
    assert_int_equal(chmod(open_dir, 01777), 0);
    assert_int_equal(cli(&out, false, "oscore protect --context %s --seq 1 %s", moved, plain), 0);
    free(out);

    /* An open directory higher up (not sticky) is refused too, as it is
     * for private keys (src/cred/keyfile.c): whoever writes there can
     * replace the directory that holds the context. Only the nearest
     * directory used to be looked at. */
    char inner[600], deeper[700];
    snprintf(inner, sizeof inner, "%s/inner", open_dir);
    assert_int_equal(mkdir(inner, 0700), 0);
    snprintf(deeper, sizeof deeper, "%s/c.conf", inner);
    assert_int_equal(rename(moved, deeper), 0);
    assert_int_equal(chmod(open_dir, 0777), 0);
    assert_int_equal(cli(&out, true, "oscore protect --context %s --seq 1 %s", deeper, plain), 3);
    char fix[1600];
    snprintf(fix, sizeof fix,
             "edhoc-cli oscore: --context %s: in a directory others can write "
             "(%s, mode 0777): they could put another context in its place; "
             "fix it with: chmod go-w %s",
             deeper, open_dir, open_dir);
    if (!strstr(out, fix))
        fail_msg("expected\n%s\ngot\n%s", fix, out);
    free(out);
    assert_int_equal(chmod(open_dir, 01777), 0);
    assert_int_equal(rename(deeper, moved), 0);

    /* Owned by another user: refused, root's own files excepted. Only
     * root can give a file away; otherwise this part cannot run. */
    if (geteuid() == 0) {
        assert_int_equal(chown(moved, 65534, 65534), 0); /* nobody */
        assert_int_equal(cli(&out, true, "oscore protect --context %s --seq 1 %s", moved, plain),
                         3);
        assert_non_null(strstr(out, "owned by uid 65534"));
        assert_non_null(strstr(out, "chown"));
        free(out);
        assert_int_equal(chown(moved, 0, 0), 0);
    } else {
        print_message("not root: the file owned by another user is not tried\n");
    }
}

/* The option table (issue #14: "One declaration per command"). */
static void test_cli_option_table(void **state)
{
    (void)state;
    struct vec_scope v = vec_object(appc, "C.4");
    char plain[512], prot[512];
    vec_str(v, "unprotected_request", plain, sizeof plain);
    vec_str(v, "protected_request", prot, sizeof prot);
    char *out;
    assert_int_equal(
        cli(&out, true, "oscore protect --context %s --bogus %s", context_file("C.1.1"), plain), 2);
    assert_non_null(strstr(out, "edhoc-cli oscore: unknown option '--bogus'"));
    free(out);
    assert_int_equal(cli(&out, true, "oscore protect --contxt %s %s", context_file("C.1.1"), plain),
                     2);
    assert_non_null(strstr(out, "did you mean --context?"));
    free(out);
    /* --name=value, and the last of a value option given twice wins (the
     * vector's number is 20). */
    assert_int_equal(cli(&out, false, "oscore protect --context=%s --seq=5 --seq 20 %s",
                         context_file("C.1.1"), plain),
                     0);
    expect_hex(v, "protected_request", out);
    free(out);
    /* edhoc-cli help oscore is oscore --help. */
    char *help;
    assert_int_equal(cli(&help, false, "oscore --help"), 0);
    assert_int_equal(cli(&out, false, "help oscore"), 0);
    assert_string_equal(out, help);
    free(out);
    free(help);
    /* What unprotect would ignore is refused. */
    assert_int_equal(
        cli(&out, true, "oscore unprotect --context %s --seq 3 %s", context_file("C.1.2"), prot),
        2);
    assert_non_null(strstr(out, "--seq only applies to protect"));
    free(out);
    assert_int_equal(cli(&out, true, "oscore unprotect --context %s --state-dir %s/s %s",
                         context_file("C.1.2"), tmpdir, prot),
                     2);
    assert_non_null(strstr(out, "--state-dir only applies to protect"));
    free(out);
    char resp[512];
    vec_str(vec_object(appc, "C.7"), "unprotected_response", resp, sizeof resp);
    assert_int_equal(cli(&out, true, "oscore protect --context %s --state-dir %s/s --request %s %s",
                         context_file("C.1.2"), tmpdir, prot, resp),
                     2);
    assert_non_null(strstr(out, "reuses the request's nonce"));
    free(out);
    assert_int_equal(
        cli(&out, true, "oscore protect --context %s %s %s", context_file("C.1.1"), plain, plain),
        2);
    assert_non_null(strstr(out, "unexpected argument"));
    free(out);
    assert_int_equal(cli(&out, true, "oscore protect --context %s --role nobody %s",
                         context_file("C.1.1"), plain),
                     2);
    assert_non_null(strstr(out, "expected one of client, server"));
    free(out);
}

/* ---- coap --json: every kind of output against its schema ---- */

/* coap --json, standard output only; fails on an unexpected exit code. */
static char *coap_json(int want_rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *coap_json(int want_rc, const char *fmt, ...)
{
    char args[2000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char *out;
    int rc = net_cli_run(&out, 60, true, "coap %s --json", args);
    if (rc != want_rc)
        fail_msg("coap %s: exit %d, expected %d:\n%s", args, rc, want_rc, out);
    if (net_json_valid(out, "coap", false))
        fail_msg("coap %s: output not valid against docs/json/coap.schema.json", args);
    return out;
}

/* The responder flags for a static-context responder: --demo where the
 * responder asks for it to serve without credentials of its own. */
static const char *responder_demo_flag(void)
{
    char *out;
    net_cli_run(&out, 30, true, "help --options responder");
    bool demo = strstr(out, "--demo\n") != NULL;
    free(out);
    return demo ? "--demo " : "";
}

static void test_coap_json_outputs(void **state)
{
    (void)state;
    assert_int_equal(net_make_dir("oscore-coap"), 0);
    char srv[300], cl[300], sdir[300], big[300], outp[300], args[1200];
    net_path(srv, sizeof srv, "srv.conf");
    net_path(cl, sizeof cl, "client.conf");
    net_path(sdir, sizeof sdir, "srv.state");
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
    snprintf(args, sizeof args,
             "%s--listen 127.0.0.1:0 --oscore-context %s --state-dir %s --allow-unprotected",
             responder_demo_flag(), srv, sdir);
    assert_int_equal(net_responder_start(&r, "static", args), 0);

    /* One plain response; a text payload twice (hex and text). --name=value
     * works, and of a value option given twice the last counts. */
    char *out =
        coap_json(0, "POST coap://127.0.0.1:%u/echo --payload first --payload=hello", r.port);
    assert_json_eq(out, "responses/#", "1");
    assert_json_eq(out, "responses/0/code", "2.04");
    assert_json_eq(out, "responses/0/code_name", "Changed");
    assert_json_eq(out, "responses/0/oscore", "false");
    assert_json_eq(out, "responses/0/payload_text", "hello");
    assert_json_eq(out, "responses/0/payload_hex", "68656c6c6f");
    /* Absent is null (issue #14), never -1. */
    assert_json_eq(out, "responses/0/piv", "null");
    assert_json_eq(out, "oscore_sequence_numbers", "null");
    assert_json_eq(out, "error", "null");
    free(out);
    /* Bytes that are not text: payload_text null. */
    out = coap_json(0, "POST coap://127.0.0.1:%u/echo --payload-hex 00ff01", r.port);
    assert_json_eq(out, "responses/0/payload_hex", "00ff01");
    assert_json_eq(out, "responses/0/payload_text", "null");
    free(out);
    /* A 4.xx response: in responses, exit 1, no error word. */
    out = coap_json(1, "GET coap://127.0.0.1:%u/nowhere", r.port);
    assert_json_eq(out, "responses/0/code", "4.04");
    assert_json_eq(out, "error", "null");
    free(out);
    /* --repeat. */
    out = coap_json(0, "POST coap://127.0.0.1:%u/echo --payload x --repeat 4", r.port);
    assert_json_eq(out, "repeat/requests", "3");
    assert_json_eq(out, "repeat/ok", "3");
    free(out);

    /* Under OSCORE: sequence numbers, and --repeat. */
    out = coap_json(0, "GET coap://127.0.0.1:%u/time --oscore-context %s --repeat 3", r.port, cl);
    assert_json_eq(out, "responses/0/oscore", "true");
    assert_json_eq(out, "oscore_requests_protected", "3");
    assert_json_eq(out, "oscore_sequence_numbers/#", "3");
    assert_json_eq(out, "repeat/ok", "2");
    free(out);
    /* --observe: the notifications, their own Partial IVs, and the
     * deregistration (RFC 7641 Section 3.6). */
    out =
        coap_json(0, "GET coap://127.0.0.1:%u/counter --observe 2 --oscore-context %s", r.port, cl);
    assert_json_eq(out, "responses/#", "2");
    assert_json_eq(out, "deregistered", "true");
    assert_true(json_long(out, "responses/1/piv") >= 0);
    free(out);
    /* A resource that answers without Observe: RFC 7641 Section 3.1, "If
     * the response does not include an Observe Option, the server has not
     * added the client to the list of observers": one response, exit 0 at
     * once, nothing to deregister (it waited out the timeout and exited
     * 6). */
    out = coap_json(0, "GET coap://127.0.0.1:%u/time --observe 3 --timeout 20 --oscore-context %s",
                    r.port, cl);
    assert_json_eq(out, "responses/#", "1");
    assert_json_eq(out, "deregistered", "null");
    free(out);
    /* Standard error is not a terminal here: no progress on it without
     * -v (issue #14), and nothing else either on a run that succeeds. */
    char errp[300];
    net_path(errp, sizeof errp, "observe.err");
    char *plain_out;
    int rc = net_cli_run(&plain_out, 60, false,
                         "coap GET coap://127.0.0.1:%u/counter --observe 3 --oscore-context %s "
                         "2>%s",
                         r.port, cl, errp);
    assert_int_equal(rc, 0);
    free(plain_out);
    char *err_text = net_read_file(errp);
    assert_string_equal(err_text, "");
    free(err_text);
    /* SIGINT during --observe: the observation is deregistered and what
     * came is printed, marked partial, exit 130 (cli/progress.h). -v
     * shows progress lines although standard error is a file: the first
     * says the notifications (and the signal handling) are running. */
    char obs_out[300];
    net_path(obs_out, sizeof obs_out, "observe.out");
    unlink(errp);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char uri[100];
        snprintf(uri, sizeof uri, "coap://127.0.0.1:%u/counter", r.port);
        if (!freopen(obs_out, "w", stdout) || !freopen(errp, "w", stderr))
            _exit(127);
        execl(net_cli(), net_cli(), "coap", "GET", uri, "--observe", "1000", "--oscore-context", cl,
              "--timeout", "120", "--json", "-v", (char *)NULL);
        _exit(127);
    }
    bool running = false;
    for (int i = 0; i < 1200 && !running; i++) {
        char *e = net_read_file(errp);
        running = e && strstr(e, "notifications") != NULL;
        free(e);
        if (!running)
            net_sleep_ms(50);
    }
    kill(pid, SIGINT);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!running)
        fail_msg("no progress line from coap --observe -v within a minute");
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 130);
    out = net_read_file(obs_out);
    if (net_json_valid(out, "coap", false))
        fail_msg("interrupted --observe: not valid against the schema");
    assert_json_eq(out, "partial", "true");
    assert_json_eq(out, "deregistered", "true");
    assert_true(json_long(out, "responses/#") >= 1);
    free(out);

    /* Block-wise both ways inside OSCORE, the body to --output. */
    net_path(big, sizeof big, "big.txt");
    net_path(outp, sizeof outp, "big.out");
    char body[3001];
    for (size_t i = 0; i < 3000; i++)
        body[i] = (char)('a' + i % 26);
    body[3000] = '\0';
    net_write_file(big, body, 0600);
    out = coap_json(0,
                    "POST coap://127.0.0.1:%u/echo --payload-file %s --block-size 256 "
                    "--oscore-context %s --output %s",
                    r.port, big, cl, outp);
    assert_true(json_long(out, "responses/0/block1_blocks") > 1);
    assert_true(json_long(out, "responses/0/block2_blocks") > 1);
    assert_json_eq(out, "responses/0/payload_bytes", "3000");
    assert_json_eq(out, "responses/0/payload_hex", "null");
    assert_json_eq(out, "responses/0/output", outp);
    free(out);
    char *copy = net_read_file(outp);
    assert_string_equal(copy, body);
    free(copy);

    /* A restarted server has lost its replay window: the answer comes
     * after an Echo challenge (RFC 8613 Appendix B.1.2). */
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    assert_int_equal(net_responder_start(&r, "static2", args), 0);
    out = coap_json(0, "GET coap://127.0.0.1:%u/time --oscore-context %s", r.port, cl);
    assert_json_eq(out, "responses/0/echo", "true");
    assert_true(json_long(out, "responses/0/echo_challenge_piv") >= 0);
    free(out);

    /* The peer answers without OSCORE: no answer (RFC 8613 Section 8.4). */
    static struct net_proc plain_r;
    char sdir2[300];
    net_path(sdir2, sizeof sdir2, "plain.state");
    snprintf(args, sizeof args, "%s--listen 127.0.0.1:0 --state-dir %s", responder_demo_flag(),
             sdir2);
    assert_int_equal(net_responder_start(&plain_r, "plain", args), 0);
    out = coap_json(7, "GET coap://127.0.0.1:%u/time --oscore-context %s", plain_r.port, cl);
    assert_json_eq(out, "error", "unprotected_response");
    assert_json_eq(out, "responses/0/oscore", "false");
    free(out);

    /* Nothing answers: error word, no responses. */
    uint16_t silent = 0;
    int fd = net_silent_socket(&silent);
    assert_true(fd >= 0);
    out = coap_json(6, "GET coap://127.0.0.1:%u/time --timeout 0.5", silent);
    close(fd);
    assert_json_eq(out, "error", "timeout");
    assert_json_eq(out, "responses/#", "0");
    assert_json_eq(out, "partial", "false");
    free(out);

    /* The check can fail: a required member missing is refused. */
    out = coap_json(0, "POST coap://127.0.0.1:%u/echo --payload x", r.port);
    char *cut = strstr(out, "\"partial\"");
    assert_non_null(cut);
    strcpy(cut, "\"extra\": 1\n}\n");
    assert_int_not_equal(net_json_valid(out, "coap", false), 0);
    free(out);
    net_stop_all();
    net_remove_dir();
}

/* coap options: the renamed --timeout-ms names --timeout, a value option
 * takes --name=value, an unknown one is named (before, "--bogus needs a
 * value"), help coap is coap --help. */
static void test_coap_option_table(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(cli(&out, true, "coap GET coap://127.0.0.1:9/x --timeout-ms 500"), 2);
    assert_non_null(strstr(out, "--timeout-ms is no longer an option: use --timeout SECONDS"));
    free(out);
    assert_int_equal(cli(&out, true, "coap GET coap://127.0.0.1:9/x --bogus"), 2);
    assert_non_null(strstr(out, "edhoc-cli coap: unknown option '--bogus'"));
    free(out);
    assert_int_equal(cli(&out, true, "coap GET coap://127.0.0.1:9/x --timeout=abc"), 2);
    assert_non_null(strstr(out, "--timeout: expected seconds"));
    free(out);
    assert_int_equal(cli(&out, true, "coap GET coap://127.0.0.1:9/x --json --output -"), 2);
    assert_non_null(strstr(out, "both would go to standard output"));
    free(out);
    /* A host name that does not resolve: the network exit code (6), not
     * "bad command line" (issue #14), and with --json the report a script
     * reads on every failure (no responses, error "unreachable"); it
     * printed nothing. */
    assert_int_equal(cli(&out, false, "coap GET coap://nonexistent.invalid/x --json"), 6);
    assert_int_equal(net_json_valid(out, "coap", false), 0);
    assert_non_null(strstr(out, "\"error\": \"unreachable\""));
    assert_non_null(strstr(out, "\"responses\": []"));
    free(out);
    /* Options this request would not use are refused, not ignored. */
    assert_int_equal(cli(&out, true, "coap GET coap://127.0.0.1:9/x --seq 5"), 2);
    assert_non_null(strstr(out, "--seq goes with --oscore-context"));
    free(out);
    assert_int_equal(cli(&out, true, "coap GET coap://127.0.0.1:9/x --state-dir none"), 2);
    assert_non_null(strstr(out, "--state-dir goes with --oscore-context"));
    free(out);
    assert_int_equal(cli(&out, true, "coap GET coap://127.0.0.1:9/x --observe 2 --repeat 3"), 2);
    assert_non_null(strstr(out, "do not go together"));
    free(out);
    char *help;
    assert_int_equal(cli(&help, false, "coap --help"), 0);
    assert_int_equal(cli(&out, false, "help coap"), 0);
    assert_string_equal(out, help);
    assert_non_null(strstr(help, "docs/json/coap.schema.json"));
    free(out);
    free(help);
}

/* Checking from outside that a process is not dumpable: the kernel lets
 * a process open another's /proc/PID/environ only when ptrace could read
 * it, which for a non-dumpable target takes CAP_SYS_PTRACE; without it,
 * a process of the same user gets EACCES (and the file belongs to root).
 * A test run by root runs targets and checker as an unprivileged user,
 * since root may read any process. */
#define UNPRIVILEGED_UID 65534

static void become_unprivileged(void)
{
    if (geteuid() != 0)
        return;
    if (setgroups(0, NULL) || setresgid(UNPRIVILEGED_UID, UNPRIVILEGED_UID, UNPRIVILEGED_UID) ||
        setresuid(UNPRIVILEGED_UID, UNPRIVILEGED_UID, UNPRIVILEGED_UID))
        _exit(126);
}

/* 0: /proc/PID/environ opens (pid dumpable), 1: EACCES, 2: otherwise. */
static int environ_access(pid_t pid)
{
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0) {
        become_unprivileged();
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
        int fd = open(path, O_RDONLY);
        _exit(fd >= 0 ? 0 : errno == EACCES ? 1 : 2);
    }
    int st;
    assert_int_equal(waitpid(c, &st, 0), c);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* Run the shell command line in the background (as the unprivileged user
 * when root), registered for teardown, with the largest core size this
 * test may give, so that a command which leaves the limit alone shows
 * it. */
static void spawn(struct net_proc *p, const char *cmdline)
{
    memset(p, 0, sizeof *p);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl;
        getrlimit(RLIMIT_CORE, &rl);
        if (geteuid() == 0)
            rl.rlim_max = RLIM_INFINITY;
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_CORE, &rl);
        become_unprivileged();
        execl("/bin/sh", "sh", "-c", cmdline, (char *)NULL);
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

/* Soft and hard "Max core file size" of pid, from /proc/PID/limits
 * ("unlimited" as ULONG_MAX). */
static void core_limits(pid_t pid, unsigned long *soft, unsigned long *hard)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/limits", (int)pid);
    char *limits = net_read_file(path);
    assert_non_null(limits);
    const char *core = strstr(limits, "Max core file size");
    assert_non_null(core);
    char a[32], b[32];
    assert_int_equal(sscanf(core + strlen("Max core file size"), " %31s %31s", a, b), 2);
    *soft = strcmp(a, "unlimited") ? strtoul(a, NULL, 10) : ULONG_MAX;
    *hard = strcmp(b, "unlimited") ? strtoul(b, NULL, 10) : ULONG_MAX;
    free(limits);
}

/* Issue 23, item 9: client commands that hold secrets (coap
 * --oscore-context: the master secret; initiator: private keys and,
 * with --export-secrets, the OSCORE secrets it prints) could leave them
 * in a core file, and other processes of the user could read their
 * memory. Like the responder they now run with RLIMIT_CORE 0 and not
 * dumpable. Each command is caught while it waits for a silent peer,
 * after its first datagram left (the secrets are loaded by then). */
static void test_secret_holders_leave_no_core(void **state)
{
    (void)state;
    /* The check itself: a process started the same way, dumpable, is
     * readable, and had a core limit above 0. */
    static struct net_proc control;
    spawn(&control, "exec sleep 60");
    for (int i = 0; i < 500 && environ_access(control.pid) != 0; i++)
        net_sleep_ms(10); /* until sh has become sleep */
    assert_int_equal(environ_access(control.pid), 0);
    unsigned long soft, hard;
    core_limits(control.pid, &soft, &hard);
    assert_true(soft > 0);
    net_proc_stop(&control, SIGKILL, 2000);

    uint16_t port = 0;
    int fd = net_silent_socket(&port);
    assert_true(fd >= 0);
    /* The context and state of the user the commands run as, in a
     * directory of its own that it can reach. */
    char home[300], ctx[400], sdir[400];
    snprintf(home, sizeof home, "%s/edhoc-core-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(home));
    assert_int_equal(chmod(home, 0711), 0);
    char *text = net_read_file(context_file("C.1.1"));
    assert_non_null(text);
    snprintf(ctx, sizeof ctx, "%s/c.conf", home);
    net_write_file(ctx, text, 0600);
    free(text);
    snprintf(sdir, sizeof sdir, "%s/state", home);
    if (geteuid() == 0)
        assert_int_equal(chown(ctx, UNPRIVILEGED_UID, UNPRIVILEGED_UID) |
                             chown(home, UNPRIVILEGED_UID, UNPRIVILEGED_UID),
                         0);
    const char *cli_bin = getenv("EDHOC_CLI") ? getenv("EDHOC_CLI") : "edhoc-cli";
    char cmds[2][1200];
    snprintf(cmds[0], sizeof cmds[0],
             "exec %s coap GET coap://127.0.0.1:%u/x --oscore-context %s --state-dir %s "
             "--timeout 60 >/dev/null 2>&1",
             cli_bin, port, ctx, sdir);
    snprintf(cmds[1], sizeof cmds[1],
             "exec %s initiator coap://127.0.0.1:%u --export-secrets --request none --timeout 60 "
             ">/dev/null 2>&1",
             cli_bin, port);
    for (int i = 0; i < 2; i++) {
        static struct net_proc p;
        spawn(&p, cmds[i]);
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, 20000) != 1)
            fail_msg("%s: sent nothing", cmds[i]);
        uint8_t d[1500];
        while (recv(fd, d, sizeof d, MSG_DONTWAIT) > 0)
            ;
        core_limits(p.pid, &soft, &hard);
        if (soft != 0 || hard != 0)
            fail_msg("%s: core file size limit %lu %lu", cmds[i], soft, hard);
        if (environ_access(p.pid) != 1)
            fail_msg("%s: dumpable (another process of the user reads its memory)", cmds[i]);
        net_proc_stop(&p, SIGKILL, 2000);
    }
    close(fd);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_requests),
        cmocka_unit_test(test_cli_responses),
        cmocka_unit_test(test_cli_json_and_verbose),
        cmocka_unit_test(test_cli_failures),
        cmocka_unit_test(test_cli_durable_sequence_numbers),
        cmocka_unit_test(test_context_file_is_secret),
        cmocka_unit_test_teardown(test_secret_holders_leave_no_core, net_test_teardown),
        cmocka_unit_test(test_cli_option_table),
        cmocka_unit_test(test_coap_option_table),
        cmocka_unit_test_teardown(test_coap_json_outputs, net_test_teardown),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
