/*
 * End-to-end tests of `edhoc-cli simulate`: the RFC 9529 traces reproduced
 * through the command line from files, the three credential modes, and the
 * exit code and message of each failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "vectors.h"

static char workdir[256];

static void write_file(const char *name, const void *data, size_t len, mode_t mode, char *path,
                       size_t cap)
{
    snprintf(path, cap, "%s/%s", workdir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

/* Write the hex value of vector key `key` as a text file. */
static void write_hex_file(struct vec_scope v, const char *key, const char *name, mode_t mode,
                           char *path, size_t cap)
{
    uint8_t buf[2048];
    char hex[4097];
    size_t n = vec_hex(v, key, buf, sizeof buf);
    hex_encode(buf, n, hex);
    strcat(hex, "\n");
    write_file(name, hex, strlen(hex), mode, path, cap);
}

static void write_der_file(struct vec_scope v, const char *key, const char *name, char *path,
                           size_t cap)
{
    uint8_t buf[2048];
    size_t n = vec_hex(v, key, buf, sizeof buf);
    write_file(name, buf, n, 0644, path, cap);
}

/* Assert that the JSON output lists message `name` (the occurrence-th one)
 * with exactly the bytes of vector key `key`. */
static void assert_message(const char *out, const char *name, int occurrence, struct vec_scope v,
                           const char *key)
{
    uint8_t buf[1024];
    char hex[2049], pattern[2200];
    size_t n = vec_hex(v, key, buf, sizeof buf);
    hex_encode(buf, n, hex);
    snprintf(pattern, sizeof pattern, "\"name\": \"%s\"", name);
    const char *p = out;
    for (int i = 0; i <= occurrence; i++) {
        p = strstr(p, pattern);
        if (!p)
            fail_msg("%s #%d missing in output:\n%s", name, occurrence, out);
        p += strlen(pattern);
    }
    const char *end = strchr(p, '}');
    assert_non_null(end);
    snprintf(pattern, sizeof pattern, "\"bytes\": %zu, \"hex\": \"%s\"", n, hex);
    const char *hit = strstr(p, pattern);
    if (!hit || hit > end)
        fail_msg("%s #%d differs from %s; expected %s\noutput:\n%s", name, occurrence, key, hex, out);
}

static void assert_json_hex(const char *out, const char *field, struct vec_scope v, const char *key)
{
    uint8_t buf[256];
    char hex[513], pattern[600];
    size_t n = vec_hex(v, key, buf, sizeof buf);
    hex_encode(buf, n, hex);
    snprintf(pattern, sizeof pattern, "\"%s\": \"%s\"", field, hex);
    if (!strstr(out, pattern))
        fail_msg("expected %s in output:\n%s", pattern, out);
}

static int setup(void **state)
{
    (void)state;
    snprintf(workdir, sizeof workdir, "/tmp/edhoc-cli-test-XXXXXX");
    assert_non_null(mkdtemp(workdir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", workdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Trace 2 files: credentials, keys, ephemeral keys (first and second
 * attempt for the initiator). */
struct trace2_files {
    char cred_i[300], key_i[300], cred_r[300], key_r[300], eph_i[300], eph_r[300];
};

static void make_trace2_files(struct vec_scope v, struct trace2_files *f)
{
    write_hex_file(v, "cred_i", "t2_cred_i.hex", 0644, f->cred_i, sizeof f->cred_i);
    write_hex_file(v, "cred_r", "t2_cred_r.hex", 0644, f->cred_r, sizeof f->cred_r);
    write_hex_file(v, "sk_i", "t2_key_i.hex", 0600, f->key_i, sizeof f->key_i);
    write_hex_file(v, "sk_r", "t2_key_r.hex", 0600, f->key_r, sizeof f->key_r);
    uint8_t x1[64], x2[64];
    char h1[129], h2[129], both[400];
    hex_encode(x1, vec_hex(v, "x_first", x1, sizeof x1), h1);
    hex_encode(x2, vec_hex(v, "x", x2, sizeof x2), h2);
    snprintf(both, sizeof both, "# first attempt (suite 6), then the retry\n%s\n%s\n", h1, h2);
    write_file("t2_eph_i.hex", both, strlen(both), 0600, f->eph_i, sizeof f->eph_i);
    write_hex_file(v, "y", "t2_eph_r.hex", 0600, f->eph_r, sizeof f->eph_r);
}

static void test_trace2_through_cli(void **state)
{
    (void)state;
    struct vec_scope v = vec_load("rfc9529-trace2.json");
    struct trace2_files f;
    make_trace2_files(v, &f);
    char args[4096];
    snprintf(args, sizeof args,
             "simulate --method 3 --suites 6,2 --suites-r 2 --cred-i %s --key-i %s --cred-r %s "
             "--key-r %s --c-i 0e,37 --c-r 27 --ephemeral-i %s --ephemeral-r %s --message-4 "
             "--json --export-secrets --trace",
             f.cred_i, f.key_i, f.cred_r, f.key_r, f.eph_i, f.eph_r);
    char *out;
    int rc = run_cli(args, false, &out);
    if (rc != 0)
        fail_msg("exit %d, output:\n%s", rc, out);
    /* RFC 9529 prints the rejected first message_1 with a P-256 G_X although
     * its suite 6 uses X25519, so only its framing can match: METHOD 3,
     * SUITES_I 6, a 32-byte G_X, C_I 0e. */
    const char *first = strstr(out, "\"name\": \"message_1\"");
    assert_non_null(first);
    assert_non_null(strstr(first, "\"bytes\": 37, \"hex\": \"03065820"));
    const char *hex_start = strstr(first, "\"hex\": \"") + 8;
    assert_memory_equal(hex_start + 72, "0e\"", 3);
    assert_message(out, "error", 0, v, "error");
    assert_message(out, "message_1", 1, v, "message_1");
    assert_message(out, "message_2", 0, v, "message_2");
    assert_message(out, "message_3", 0, v, "message_3");
    assert_message(out, "message_4", 0, v, "message_4");
    assert_json_hex(out, "master_secret", v, "oscore_master_secret");
    assert_json_hex(out, "master_salt", v, "oscore_master_salt");
    assert_json_hex(out, "sender_id", v, "oscore_client_sender_id");
    assert_non_null(strstr(out, "\"oscore_contexts_match\": true"));
    assert_non_null(strstr(out, "\"attempts\": 2"));
    /* 37 + 2 (first message_1, error) + 39 + 45 + 19 + 9 */
    assert_non_null(strstr(out, "\"total_bytes\": 151"));
    assert_non_null(strstr(out, "\"handshake_bytes\": 103"));
    /* --trace: intermediate values under their RFC names, both sides. */
    char pattern[256];
    uint8_t th2[32];
    char th2_hex[65];
    hex_encode(th2, vec_hex(v, "th_2", th2, sizeof th2), th2_hex);
    snprintf(pattern, sizeof pattern, "\"side\": \"initiator\", \"name\": \"TH_2\", \"hex\": \"%s\"",
             th2_hex);
    assert_non_null(strstr(out, pattern));
    snprintf(pattern, sizeof pattern, "\"side\": \"responder\", \"name\": \"TH_2\", \"hex\": \"%s\"",
             th2_hex);
    assert_non_null(strstr(out, pattern));
    free(out);

    /* Text output prints the same message bytes. */
    snprintf(args, sizeof args,
             "simulate --method 3 --suites 6,2 --suites-r 2 --cred-i %s --key-i %s --cred-r %s "
             "--key-r %s --c-i 0e,37 --c-r 27 --ephemeral-i %s --ephemeral-r %s",
             f.cred_i, f.key_i, f.cred_r, f.key_r, f.eph_i, f.eph_r);
    rc = run_cli(args, false, &out);
    assert_int_equal(rc, 0);
    uint8_t m3[64];
    char m3_hex[129];
    hex_encode(m3, vec_hex(v, "message_3", m3, sizeof m3), m3_hex);
    assert_non_null(strstr(out, m3_hex));
    assert_non_null(strstr(out, "Outcome: ok"));
    free(out);
}

static void test_trace1_through_cli(void **state)
{
    (void)state;
    struct vec_scope v = vec_load("rfc9529-trace1.json");
    char cred_i[300], cred_r[300], key_i[300], key_r[300], eph_i[300], eph_r[300];
    write_der_file(v, "cred_i", "t1_cred_i.der", cred_i, sizeof cred_i);
    write_der_file(v, "cred_r", "t1_cred_r.der", cred_r, sizeof cred_r);
    write_hex_file(v, "sk_i", "t1_key_i.hex", 0600, key_i, sizeof key_i);
    write_hex_file(v, "sk_r", "t1_key_r.hex", 0600, key_r, sizeof key_r);
    write_hex_file(v, "x", "t1_eph_i.hex", 0600, eph_i, sizeof eph_i);
    write_hex_file(v, "y", "t1_eph_r.hex", 0600, eph_r, sizeof eph_r);
    char args[4096];
    snprintf(args, sizeof args,
             "simulate --method 0 --suites 0 --cred-i %s --key-i %s --cred-r %s --key-r %s "
             "--id-cred-i x5t --id-cred-r x5t --c-i 2d --c-r 18 --ephemeral-i %s --ephemeral-r %s "
             "--message-4 --json --export-secrets",
             cred_i, key_i, cred_r, key_r, eph_i, eph_r);
    char *out;
    int rc = run_cli(args, false, &out);
    if (rc != 0)
        fail_msg("exit %d, output:\n%s", rc, out);
    assert_message(out, "message_1", 0, v, "message_1");
    assert_message(out, "message_2", 0, v, "message_2");
    assert_message(out, "message_3", 0, v, "message_3");
    assert_message(out, "message_4", 0, v, "message_4");
    assert_json_hex(out, "master_secret", v, "oscore_master_secret");
    assert_json_hex(out, "master_salt", v, "oscore_master_salt");
    assert_non_null(strstr(out, "\"handshake_bytes\": 243"));
    free(out);
}

/* The byte table of the three credential modes with the built-in
 * credentials and one-byte connection identifiers. */
static void test_three_credential_modes(void **state)
{
    (void)state;
    static const struct {
        const char *args;
        const char *bytes;
    } modes[] = {
        {"--method 3 --suites 2 --id-cred-i kid --id-cred-r kid", "\"handshake_bytes\": 101"},
        {"--method 0 --suites 2 --id-cred-i x5t --id-cred-r x5t", "\"handshake_bytes\": 242"},
        {"--method 0 --suites 2 --id-cred-i x5chain --id-cred-r x5chain", "\"handshake_bytes\": 814"},
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        char args[512], *out;
        snprintf(args, sizeof args, "simulate --json --c-i 37 --c-r 27 %s", modes[i].args);
        int rc = run_cli(args, false, &out);
        if (rc != 0 || !strstr(out, modes[i].bytes))
            fail_msg("%s: exit %d, expected %s in:\n%s", modes[i].args, rc, modes[i].bytes, out);
        assert_non_null(strstr(out, "\"outcome\": \"ok\""));
        free(out);
    }
}

/* Every method and suite with built-in credentials. */
static void test_all_methods_and_suites_default_credentials(void **state)
{
    (void)state;
    static const int suites[] = {0, 1, 2, 3, 4, 5, 6, 24, 25};
    for (int m = 0; m <= 3; m++) {
        for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
            char args[256], *out;
            snprintf(args, sizeof args, "simulate --json --method %d --suites %d", m, suites[s]);
            int rc = run_cli(args, true, &out);
            if (rc != 0 || !strstr(out, "\"oscore_contexts_match\": true"))
                fail_msg("method %d suite %d: exit %d:\n%s", m, suites[s], rc, out);
            free(out);
        }
    }
}

/* Every method x suite x ID_CRED type, with built-in credentials of the
 * kind each type needs. */
static void test_all_id_cred_types(void **state)
{
    (void)state;
    static const int suites[] = {0, 1, 2, 3, 4, 5, 6, 24, 25};
    static const char *types[] = {"kid", "kccs", "x5t", "x5chain"};
    /* Under the sanitizers each process start is slow; a rotating quarter of
     * the matrix (every method, suite and type still appears) keeps the
     * sanitized run short, the plain run covers every cell. */
    const size_t stride = getenv("EDHOC_TEST_SANITIZED") ? 4 : 1;
    for (int m = 0; m <= 3; m++) {
        for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
            for (size_t t = 0; t < 4; t++) {
                if ((t + s + (size_t)m) % stride != 0)
                    continue;
                char args[256], *out;
                snprintf(args, sizeof args,
                         "simulate --json --method %d --suites %d --id-cred-i %s --id-cred-r %s", m,
                         suites[s], types[t], types[(t + 1) % 4]);
                int rc = run_cli(args, true, &out);
                if (rc != 0 || !strstr(out, "\"oscore_contexts_match\": true"))
                    fail_msg("%s: exit %d:\n%s", args, rc, out);
                char want[64];
                snprintf(want, sizeof want, "\"id_cred_i\": \"%s\"", types[t]);
                assert_non_null(strstr(out, want));
                snprintf(want, sizeof want, "\"id_cred_r\": \"%s\"", types[(t + 1) % 4]);
                assert_non_null(strstr(out, want));
                free(out);
            }
        }
    }
}

static void keygen(const char *args)
{
    char *out, cmd[2200];
    snprintf(cmd, sizeof cmd, "keygen --force %s", args);
    int rc = run_cli(cmd, true, &out);
    if (rc != 0)
        fail_msg("keygen %s: exit %d:\n%s", args, rc, out);
    free(out);
}

/* Certificates made with keygen: a root, an intermediate, leaves sent as a
 * two-certificate x5chain; a wrong trust anchor and an expired certificate
 * fail with the initiator's error message on the wire and exit 5. */
static void test_x5chain_two_certificates_trust_and_expiry(void **state)
{
    (void)state;
    char a[2048];
    const char *w = workdir;
#define KG(...)                                                                                   \
    do {                                                                                          \
        snprintf(a, sizeof a, __VA_ARGS__);                                                       \
        keygen(a);                                                                                \
    } while (0)
    KG("--type x509 --curve P-256 --ca --subject root --out-cred %s/root.pem --out-key %s/root.key", w, w);
    KG("--type x509 --curve P-256 --ca --subject other --out-cred %s/other.pem --out-key %s/other.key", w, w);
    KG("--type x509 --curve P-256 --ca --subject inter --ca-cert %s/root.pem --ca-key %s/root.key "
       "--out-cred %s/inter.pem --out-key %s/inter.key", w, w, w, w);
    KG("--type x509 --curve P-256 --subject init --ca-cert %s/inter.pem --ca-key %s/inter.key "
       "--out-cred %s/i.pem --out-key %s/i.key", w, w, w, w);
    KG("--type x509 --curve P-256 --subject resp --ca-cert %s/inter.pem --ca-key %s/inter.key "
       "--out-cred %s/r.pem --out-key %s/r.key", w, w, w, w);
    KG("--type x509 --curve P-256 --subject old --ca-cert %s/root.pem --ca-key %s/root.key "
       "--not-before 2020-01-01 --not-after 2021-01-01 --out-cred %s/old.pem --out-key %s/old.key",
       w, w, w, w);
#undef KG
    char args[4096], *out;
    snprintf(args, sizeof args,
             "simulate --json --method 0 --suites 2 --cred-i %s/i.pem --key-i %s/i.key "
             "--cred-r %s/r.pem --key-r %s/r.key --id-cred-i x5chain --id-cred-r x5chain "
             "--trust %s/root.pem",
             w, w, w, w, w);
    int rc = run_cli(args, true, &out);
    if (rc != 0)
        fail_msg("chain: exit %d:\n%s", rc, out);
    /* Two DER certificates in each ID_CRED: message_2 well over 2 x 250. */
    const char *m2 = strstr(out, "\"name\": \"message_2\"");
    assert_non_null(m2);
    long m2_bytes = strtol(strstr(m2, "\"bytes\": ") + 9, NULL, 10);
    assert_true(m2_bytes > 600);
    free(out);

    /* Trusting another root: the initiator cannot validate the responder's
     * chain, sends error code 1 and exits 5. */
    snprintf(args, sizeof args,
             "simulate --json --method 0 --suites 2 --cred-i %s/i.pem --key-i %s/i.key "
             "--cred-r %s/r.pem --key-r %s/r.key --id-cred-i x5chain --id-cred-r x5chain "
             "--trust %s/other.pem",
             w, w, w, w, w);
    rc = run_cli(args, true, &out);
    assert_int_equal(rc, 5);
    assert_non_null(strstr(out, "\"name\": \"error\", \"from\": \"initiator\", \"bytes\""));
    assert_non_null(strstr(out, "\"hex\": \"01"));
    free(out);

    /* An expired responder certificate. */
    snprintf(args, sizeof args,
             "simulate --json --method 0 --suites 2 --cred-i %s/i.pem --key-i %s/i.key "
             "--cred-r %s/old.pem --key-r %s/old.key --id-cred-i x5chain --id-cred-r x5chain "
             "--trust %s/root.pem",
             w, w, w, w, w);
    rc = run_cli(args, true, &out);
    assert_int_equal(rc, 5);
    assert_non_null(strstr(out, "outside its validity period"));
    assert_non_null(strstr(out, "\"name\": \"error\", \"from\": \"initiator\""));
    free(out);
}

static void test_failures_exit_codes(void **state)
{
    (void)state;
    struct vec_scope v = vec_load("rfc9529-trace2.json");
    struct trace2_files f;
    make_trace2_files(v, &f);
    char args[4096], *out;

    /* No common suite: the responder's error message (code 2), exit 4. */
    int rc = run_cli("simulate --method 3 --suites 6 --suites-r 2", true, &out);
    assert_int_equal(rc, 4);
    assert_non_null(strstr(out, "ERR_CODE 2"));
    assert_non_null(strstr(out, "no common cipher suite: the responder supports 2 (SUITES_R), the initiator 6"));
    free(out);

    /* Unknown credential: the responder trusts only its own credential, so
     * the initiator's kid is unknown -> error code 3, exit 5. */
    snprintf(args, sizeof args,
             "simulate --method 3 --suites 2 --cred-i %s --key-i %s --cred-r %s --key-r %s "
             "--trust %s --json",
             f.cred_i, f.key_i, f.cred_r, f.key_r, f.cred_r);
    rc = run_cli(args, true, &out);
    assert_int_equal(rc, 5);
    assert_non_null(strstr(out, "\"outcome\": \"failed\""));
    /* error message 03 f5: ERR_CODE 3, ERR_INFO true */
    assert_non_null(strstr(out, "\"name\": \"error\", \"from\": \"responder\", \"bytes\": 2, \"hex\": \"03f5\""));
    free(out);

    /* A key readable by others is refused, naming the fix. */
    assert_int_equal(chmod(f.key_i, 0644), 0);
    snprintf(args, sizeof args,
             "simulate --method 3 --suites 2 --cred-i %s --key-i %s --cred-r %s --key-r %s",
             f.cred_i, f.key_i, f.cred_r, f.key_r);
    rc = run_cli(args, true, &out);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "chmod 600"));
    free(out);
    assert_int_equal(chmod(f.key_i, 0600), 0);

    /* A key that does not belong to the credential. */
    snprintf(args, sizeof args,
             "simulate --method 3 --suites 2 --cred-i %s --key-i %s --cred-r %s --key-r %s",
             f.cred_i, f.key_r, f.cred_r, f.key_r);
    rc = run_cli(args, true, &out);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "does not belong"));
    free(out);

    /* Bad command lines. */
    rc = run_cli("simulate --method 7", true, &out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--method"));
    free(out);
    rc = run_cli("simulate --suites 2,99", true, &out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "99"));
    free(out);
    rc = run_cli("simulate --no-such-flag", true, &out);
    assert_int_equal(rc, 2);
    free(out);
    rc = run_cli("simulate --cred-i /nonexistent/cred --key-i /nonexistent/key", true, &out);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "/nonexistent/cred"));
    free(out);
}

/* EAD items: a critical one nobody understands aborts with error code 1 from
 * the responder; understood (--ead-accept) or non-critical ones pass. */
static void test_ead_items(void **state)
{
    (void)state;
    char *out;
    int rc = run_cli("simulate --json --ead-1 -5:0102", true, &out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "unrecognized critical EAD item"));
    assert_non_null(strstr(out, "\"name\": \"error\", \"from\": \"responder\""));
    assert_non_null(strstr(out, "\"hex\": \"0178"));
    free(out);

    /* ... 37 24 42 0102: label -5 (0x24) and its bstr value after C_I. */
    rc = run_cli("simulate --json --c-i 37 --ead-1 -5:0102 --ead-accept -5 --ead-2 7:aa --ead-3 7",
                 true, &out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"name\": \"message_1\", \"from\": \"initiator\", \"bytes\": 41"));
    assert_non_null(strstr(out, "3724420102\""));
    assert_non_null(strstr(out, "\"name\": \"message_2\", \"from\": \"responder\", \"bytes\": 48"));
    assert_non_null(strstr(out, "\"name\": \"message_3\", \"from\": \"initiator\", \"bytes\": 20"));
    free(out);

    rc = run_cli("simulate --ead-1 x:01", true, &out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "LABEL"));
    free(out);
}

static void test_help_and_repeat(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run_cli("simulate --help", false, &out), 0);
    assert_non_null(strstr(out, "--ephemeral-i|-r"));
    assert_non_null(strstr(out, "Exit codes"));
    free(out);
    /* edhoc-cli help CMD is the command's own help, not the general one. */
    assert_int_equal(run_cli("help simulate", false, &out), 0);
    assert_non_null(strstr(out, "--ephemeral-i|-r"));
    free(out);
    assert_int_equal(run_cli("help nonexistent", true, &out), 2);
    assert_non_null(strstr(out, "unknown command 'nonexistent'"));
    free(out);
    assert_int_equal(run_cli("--version", false, &out), 0);
    assert_non_null(strstr(out, "edhoc-cli "));
    free(out);
    assert_int_equal(run_cli("simulate --repeat 5 --json", false, &out), 0);
    assert_non_null(strstr(out, "\"runs\": 5"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace2_through_cli),
        cmocka_unit_test(test_trace1_through_cli),
        cmocka_unit_test(test_three_credential_modes),
        cmocka_unit_test(test_all_methods_and_suites_default_credentials),
        cmocka_unit_test(test_all_id_cred_types),
        cmocka_unit_test(test_x5chain_two_certificates_trust_and_expiry),
        cmocka_unit_test(test_failures_exit_codes),
        cmocka_unit_test(test_ead_items),
        cmocka_unit_test(test_help_and_repeat),
    };
    return cmocka_run_group_tests_name("cli_simulate", tests, setup, teardown);
}
