/*
 * `edhoc-cli oscore protect|unprotect`: RFC 8613 Appendix C.4-C.8 byte-exact
 * in both roles through the binary, with context files in libcoap's format
 * written to a temporary directory; JSON and verbose output; the exit code
 * and the one-line reason of each kind of failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "vectors.h"

static struct vec_scope appc;
static char tmpdir[256];

/* Write the context of key-derivation vector `name` as a libcoap file. */
static const char *context_file(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s.conf", tmpdir, name);
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
    assert_int_equal(cli(&out, false, "oscore protect --context %s --seq 20 %s",
                         context_file(client), plain), 0);
    expect_hex(v, "protected_request", out);
    free(out);
    assert_int_equal(cli(&out, false, "oscore unprotect --context %s --role server %s",
                         context_file(server), prot), 0);
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
                         context_file("C.1.2"), req, resp), 0);
    expect_hex(v7, "protected_response", out);
    free(out);
    /* C.8: --seq 0 gives the response its own Partial IV */
    assert_int_equal(cli(&out, false, "oscore protect --context %s --role server --seq 0 --request %s %s",
                         context_file("C.1.2"), req, resp), 0);
    expect_hex(v8, "protected_response", out);
    free(out);
    /* the client side of both */
    char p7[512], p8[512];
    vec_str(v7, "protected_response", p7, sizeof p7);
    vec_str(v8, "protected_response", p8, sizeof p8);
    assert_int_equal(cli(&out, false, "oscore unprotect --context %s --request %s %s",
                         context_file("C.1.1"), req, p7), 0);
    expect_hex(v7, "unprotected_response", out);
    free(out);
    assert_int_equal(cli(&out, false, "oscore unprotect --context %s --role client --request %s %s",
                         context_file("C.1.1"), req, p8), 0);
    expect_hex(v8, "unprotected_response", out);
    free(out);
}

static void test_cli_json_and_verbose(void **state)
{
    (void)state;
    struct vec_scope v = vec_object(appc, "C.4");
    char plain[512], prot[512], want[700];
    vec_str(v, "unprotected_request", plain, sizeof plain);
    vec_str(v, "protected_request", prot, sizeof prot);
    char *out;
    assert_int_equal(cli(&out, false, "oscore protect --json --context %s --seq 20 %s",
                         context_file("C.1.1"), plain), 0);
    snprintf(want, sizeof want, "\"message\":\"%s\"", prot);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "\"ok\":true"));
    assert_int_equal(out[0], '{');
    free(out);
    assert_int_equal(cli(&out, false, "oscore unprotect -v --context %s %s",
                         context_file("C.1.2"), prot), 0);
    assert_non_null(strstr(out, plain));
    assert_non_null(strstr(out, "code 0.01"));
    assert_non_null(strstr(out, "Uri-Host: \"localhost\""));
    assert_non_null(strstr(out, "Uri-Path: \"tv1\""));
    free(out);
    assert_int_equal(cli(&out, false, "oscore unprotect --json --context %s %s",
                         context_file("C.1.2"), prot), 0);
    assert_non_null(strstr(out, "\"code\":\"0.01\""));
    assert_non_null(strstr(out, "\"name\":\"Uri-Path\",\"value\":\"747631\""));
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
    assert_int_equal(cli(&out, true, "oscore unprotect --context %s %s", context_file("C.1.2"), bad), 7);
    assert_non_null(strstr(out, "decryption failed"));
    free(out);
    assert_int_equal(cli(&out, false, "oscore unprotect --json --context %s %s",
                         context_file("C.1.2"), bad), 7);
    assert_non_null(strstr(out, "\"ok\":false"));
    /* 4.00, Max-Age 0, "Decryption failed" */
    assert_non_null(strstr(out, "\"error_response\":\"64805d1f00003974d001ff44656372797074696f6e206661696c6564\""));
    free(out);
    /* wrong context (the client's own): kid does not match */
    assert_int_equal(cli(&out, true, "oscore unprotect --context %s %s", context_file("C.1.1"), prot), 7);
    assert_non_null(strstr(out, "security context not found"));
    free(out);
    /* malformed OSCORE option (reserved bit) */
    char badopt[512];
    strcpy(badopt, prot);
    char *opt = strstr(badopt, "620914");
    assert_non_null(opt);
    opt[2] = 'e'; /* flags 0x09 -> 0xe9 */
    assert_int_equal(cli(&out, true, "oscore unprotect --context %s %s", context_file("C.1.2"), badopt), 7);
    assert_non_null(strstr(out, "malformed OSCORE option"));
    free(out);

    /* context file errors name the line */
    char path[512];
    snprintf(path, sizeof path, "%s/bad.conf", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "# comment\nmaster_secret,hex,\"0102\"\nsender_id,hex,0g\n");
    fclose(f);
    assert_int_equal(cli(&out, true, "oscore protect --context %s %s", path, plain), 3);
    assert_non_null(strstr(out, "bad.conf:3:"));
    assert_non_null(strstr(out, "not hex"));
    assert_null(strchr(out, '\n')); /* one line */
    free(out);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "master_secret,hex,0102\nsender_id,hex,01020304050607\nrecipient_id,hex,01\naead_alg,text,A128GCM\n");
    fclose(f);
    assert_int_equal(cli(&out, true, "oscore protect --context %s %s", path, plain), 3);
    assert_non_null(strstr(out, "at most 6 bytes"));
    free(out);
    assert_int_equal(cli(&out, true, "oscore protect --context %s/none.conf %s", tmpdir, plain), 3);
    assert_non_null(strstr(out, "cannot read context file"));
    free(out);
    /* bad hex */
    assert_int_equal(cli(&out, true, "oscore protect --context %s 44zz", context_file("C.1.1")), 3);
    free(out);
    /* usage */
    assert_int_equal(cli(&out, true, "oscore protect %s", plain), 2);
    assert_non_null(strstr(out, "--context"));
    free(out);
    assert_int_equal(cli(&out, true, "oscore protect --context %s --role server %s",
                         context_file("C.1.1"), plain), 2);
    free(out);
    assert_int_equal(cli(&out, true, "oscore protect --context %s --seq -1 %s",
                         context_file("C.1.1"), plain), 2);
    free(out);
    assert_int_equal(cli(&out, true, "oscore protect --context %s --seq 1099511627776 %s",
                         context_file("C.1.1"), plain), 2);
    free(out);
    char resp[512];
    vec_str(vec_object(appc, "C.7"), "unprotected_response", resp, sizeof resp);
    assert_int_equal(cli(&out, true, "oscore protect --context %s %s", context_file("C.1.2"), resp), 2);
    assert_non_null(strstr(out, "--request"));
    free(out);
    assert_int_equal(cli(&out, true, "oscore frobnicate"), 2);
    free(out);
    assert_int_equal(cli(&out, false, "oscore --help"), 0);
    assert_non_null(strstr(out, "usage: edhoc-cli oscore protect"));
    free(out);
    /* the highest sequence number still works, with a 5-byte Partial IV */
    assert_int_equal(cli(&out, false, "oscore protect --context %s --seq 1099511627775 %s",
                         context_file("C.1.1"), plain), 0);
    assert_non_null(strstr(out, "0dffffffffff"));
    free(out);
}

static int setup(void **state)
{
    (void)state;
    appc = vec_load("rfc8613-appendix-c.json");
    snprintf(tmpdir, sizeof tmpdir, "%s/edhoc-oscore-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
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
 * once per AEAD key"); --state-dir none then needs --seq. */
static void test_cli_durable_sequence_numbers(void **state)
{
    (void)state;
    char *out;
    char sdir[400];
    snprintf(sdir, sizeof sdir, "%s/state", tmpdir);
    const char *ctx = context_file("C.1.1");
    const char *req = "44015d1f00003974396c6f63616c686f737483747631";
    assert_int_equal(cli(&out, false, "oscore protect --json --context %s --state-dir %s %s", ctx,
                         sdir, req), 0);
    assert_non_null(strstr(out, "\"value\":\"0900\"")); /* Partial IV 0 */
    free(out);
    assert_int_equal(cli(&out, false, "oscore protect --json --context %s --state-dir %s %s", ctx,
                         sdir, req), 0);
    assert_non_null(strstr(out, "\"value\":\"0901\"")); /* Partial IV 1, not 0 again */
    free(out);
    assert_int_equal(cli(&out, true, "oscore protect --context %s --state-dir none %s", ctx, req),
                     2);
    assert_non_null(strstr(out, "--seq N"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_requests),
        cmocka_unit_test(test_cli_responses),
        cmocka_unit_test(test_cli_json_and_verbose),
        cmocka_unit_test(test_cli_failures),
        cmocka_unit_test(test_cli_durable_sequence_numbers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
