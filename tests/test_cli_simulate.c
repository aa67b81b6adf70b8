/*
 * End-to-end tests of `edhoc-cli simulate`: the RFC 9529 traces reproduced
 * through the command line from files, the three credential modes, the
 * exit code and message of each failure, the --json output against
 * docs/json/simulate.schema.json, the option table, --repeat's
 * progress and interruption, and --keylog's rows.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "net_test_util.h"
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

/* ---- Reading the JSON output: Python's json module, not string search ---- */

/* The values at PATHS (space-separated; "messages/0/hex", "#" at the end:
 * a length) of the JSON text, space-separated: a string as itself,
 * anything else as JSON ("true", "12", "null"). Fails the test when the
 * text is not JSON or a path is not in it. Free the result. */
static char *json_at(const char *text, const char *paths)
{
    static const char script[] =
        "import json, sys\n"
        "doc = json.load(open(sys.argv[1]))\n"
        "out = []\n"
        "for path in sys.argv[2].split():\n"
        "    d = doc\n"
        "    for k in path.split('/'):\n"
        "        d = len(d) if k == '#' else d[int(k)] if isinstance(d, list) else d[k]\n"
        "    out.append(d if isinstance(d, str) else json.dumps(d))\n"
        "sys.stdout.write(' '.join(out))\n";
    char doc[400], py[400], cmd[2400];
    snprintf(doc, sizeof doc, "%s/json-at.json", workdir);
    snprintf(py, sizeof py, "%s/json-at.py", workdir);
    net_write_file(doc, text, 0600);
    net_write_file(py, script, 0600);
    snprintf(cmd, sizeof cmd, "python3 %s %s '%s' 2>&1", py, doc, paths);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *got = malloc(1 << 20);
    size_t n = fread(got, 1, (1 << 20) - 1, p);
    got[n] = '\0';
    if (pclose(p) != 0)
        fail_msg("%s: not in the output (%s):\n%s", paths, got, text);
    return got;
}

static void assert_json_eq(const char *text, const char *paths, const char *want)
{
    char *got = json_at(text, paths);
    if (strcmp(got, want) != 0)
        fail_msg("%s is '%s', expected '%s', in:\n%s", paths, got, want, text);
    free(got);
}

static long json_long(const char *text, const char *path)
{
    char *got = json_at(text, path);
    long v = strtol(got, NULL, 10);
    free(got);
    return v;
}

/* `simulate ARGS` with --json among ARGS: the exit status; standard output
 * in *out, validated against docs/json/simulate.schema.json (issue #14:
 * "a test validates every command's --json output against its schema");
 * standard error in *err when err is not NULL. */
static int simulate_json(const char *args, char **out, char **err)
{
    char cmd[4600], errpath[300];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", workdir);
    snprintf(cmd, sizeof cmd, "simulate %s 2>%s", args, errpath);
    int rc = run_cli(cmd, false, out);
    char *e = net_read_file(errpath);
    if (net_json_valid(*out, "simulate", false))
        fail_msg("simulate %s: exit %d, output not valid against the schema; stderr:\n%s", args, rc,
                 e ? e : "");
    if (err)
        *err = e;
    else
        free(e);
    return rc;
}

/* Index of the occurrence-th message named `name` in "messages", or -1. */
static long message_index(const char *out, const char *name, int occurrence)
{
    long n = json_long(out, "messages/#");
    char paths[4096] = "";
    for (long i = 0; i < n; i++) {
        size_t used = strlen(paths);
        snprintf(paths + used, sizeof paths - used, "messages/%ld/name ", i);
    }
    char *names = json_at(out, paths);
    long found = -1;
    int seen = 0;
    long i = 0;
    for (char *tok = strtok(names, " "); tok; tok = strtok(NULL, " "), i++) {
        if (!strcmp(tok, name) && seen++ == occurrence) {
            found = i;
            break;
        }
    }
    free(names);
    return found;
}

/* Assert that the JSON output lists message `name` (the occurrence-th one)
 * with exactly the bytes of vector key `key`. */
static void assert_message(const char *out, const char *name, int occurrence, struct vec_scope v,
                           const char *key)
{
    uint8_t buf[1024];
    char hex[2049], want[2200], paths[200];
    size_t n = vec_hex(v, key, buf, sizeof buf);
    hex_encode(buf, n, hex);
    long i = message_index(out, name, occurrence);
    if (i < 0)
        fail_msg("%s #%d missing in output:\n%s", name, occurrence, out);
    snprintf(paths, sizeof paths, "messages/%ld/bytes messages/%ld/hex", i, i);
    snprintf(want, sizeof want, "%zu %s", n, hex);
    assert_json_eq(out, paths, want);
}

/* oscore.FIELD is the hex of vector key `key`. */
static void assert_oscore_hex(const char *out, const char *field, struct vec_scope v,
                              const char *key)
{
    uint8_t buf[256];
    char hex[513], path[100];
    size_t n = vec_hex(v, key, buf, sizeof buf);
    hex_encode(buf, n, hex);
    snprintf(path, sizeof path, "oscore/%s", field);
    assert_json_eq(out, path, hex);
}

/* The trace entry of `side` named `name` has the hex of vector key `key`. */
static void assert_trace(const char *out, const char *side, const char *name, struct vec_scope v,
                         const char *key)
{
    uint8_t buf[256];
    char hex[513];
    hex_encode(buf, vec_hex(v, key, buf, sizeof buf), hex);
    long n = json_long(out, "trace/#");
    for (long i = 0; i < n; i++) {
        char paths[100];
        snprintf(paths, sizeof paths, "trace/%ld/side trace/%ld/name", i, i);
        char *got = json_at(out, paths);
        char want[100];
        snprintf(want, sizeof want, "%s %s", side, name);
        bool match = !strcmp(got, want);
        free(got);
        if (match) {
            snprintf(paths, sizeof paths, "trace/%ld/hex", i);
            assert_json_eq(out, paths, hex);
            return;
        }
    }
    fail_msg("no %s %s in the trace:\n%s", side, name, out);
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
    int rc = simulate_json(args + strlen("simulate "), &out, NULL);
    if (rc != 0)
        fail_msg("exit %d, output:\n%s", rc, out);
    /* RFC 9529 prints the rejected first message_1 with a P-256 G_X although
     * its suite 6 uses X25519, so only its framing can match: METHOD 3,
     * SUITES_I 6, a 32-byte G_X, C_I 0e. */
    assert_json_eq(out, "messages/0/name messages/0/bytes", "message_1 37");
    char *first = json_at(out, "messages/0/hex");
    assert_memory_equal(first, "03065820", 8);
    assert_string_equal(first + 72, "0e");
    free(first);
    assert_message(out, "error", 0, v, "error");
    assert_message(out, "message_1", 1, v, "message_1");
    assert_message(out, "message_2", 0, v, "message_2");
    assert_message(out, "message_3", 0, v, "message_3");
    assert_message(out, "message_4", 0, v, "message_4");
    assert_oscore_hex(out, "master_secret", v, "oscore_master_secret");
    assert_oscore_hex(out, "master_salt", v, "oscore_master_salt");
    assert_oscore_hex(out, "sender_id", v, "oscore_client_sender_id");
    assert_json_eq(out, "oscore_contexts_match attempts suite", "true 2 2");
    /* 37 + 2 (first message_1, error) + 39 + 45 + 19 + 9 */
    assert_json_eq(out, "total_bytes handshake_bytes", "151 103");
    /* --trace: intermediate values under their RFC names, both sides. */
    assert_trace(out, "initiator", "TH_2", v, "th_2");
    assert_trace(out, "responder", "TH_2", v, "th_2");
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
    int rc = simulate_json(args + strlen("simulate "), &out, NULL);
    if (rc != 0)
        fail_msg("exit %d, output:\n%s", rc, out);
    assert_message(out, "message_1", 0, v, "message_1");
    assert_message(out, "message_2", 0, v, "message_2");
    assert_message(out, "message_3", 0, v, "message_3");
    assert_message(out, "message_4", 0, v, "message_4");
    assert_oscore_hex(out, "master_secret", v, "oscore_master_secret");
    assert_oscore_hex(out, "master_salt", v, "oscore_master_salt");
    assert_json_eq(out, "handshake_bytes id_cred_i id_cred_r", "243 x5t x5t");
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
        {"--method 3 --suites 2 --id-cred-i kid --id-cred-r kid", "ok 101"},
        {"--method 0 --suites 2 --id-cred-i x5t --id-cred-r x5t", "ok 242"},
        {"--method 0 --suites 2 --id-cred-i x5chain --id-cred-r x5chain", "ok 814"},
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        char args[512], *out;
        snprintf(args, sizeof args, "--json --c-i 37 --c-r 27 %s", modes[i].args);
        int rc = simulate_json(args, &out, NULL);
        if (rc != 0)
            fail_msg("%s: exit %d:\n%s", modes[i].args, rc, out);
        assert_json_eq(out, "outcome handshake_bytes", modes[i].bytes);
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
            char args[256], *out, want[40];
            snprintf(args, sizeof args, "--json --method %d --suites %d", m, suites[s]);
            int rc = simulate_json(args, &out, NULL);
            if (rc != 0)
                fail_msg("method %d suite %d: exit %d:\n%s", m, suites[s], rc, out);
            /* Suite 25 completes EDHOC without an OSCORE context: its
             * SHAKE256 has no HMAC-based HKDF (RFC 8613 Section 3.2.1). */
            snprintf(want, sizeof want, "%s %d %d", suites[s] == 25 ? "null" : "true", m,
                     suites[s]);
            assert_json_eq(out, "oscore_contexts_match method suite", want);
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
                /* Every method and suite once against the schema; the rest
                 * read only. */
                int rc = t == 0 ? simulate_json(args + 9, &out, NULL) : run_cli(args, false, &out);
                if (rc != 0)
                    fail_msg("%s: exit %d:\n%s", args, rc, out);
                char want[64];
                snprintf(want, sizeof want, "%s %s %s", suites[s] == 25 ? "null" : "true", types[t],
                         types[(t + 1) % 4]);
                assert_json_eq(out, "oscore_contexts_match id_cred_i id_cred_r", want);
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
#define KG(...)                                                                                    \
    do {                                                                                           \
        snprintf(a, sizeof a, __VA_ARGS__);                                                        \
        keygen(a);                                                                                 \
    } while (0)
    KG("--type x509 --curve P-256 --ca --subject root --out-cred %s/root.pem --out-key %s/root.key",
       w, w);
    KG("--type x509 --curve P-256 --ca --subject other --out-cred %s/other.pem --out-key "
       "%s/other.key",
       w, w);
    KG("--type x509 --curve P-256 --ca --subject inter --ca-cert %s/root.pem --ca-key %s/root.key "
       "--out-cred %s/inter.pem --out-key %s/inter.key",
       w, w, w, w);
    KG("--type x509 --curve P-256 --subject init --ca-cert %s/inter.pem --ca-key %s/inter.key "
       "--out-cred %s/i.pem --out-key %s/i.key",
       w, w, w, w);
    KG("--type x509 --curve P-256 --subject resp --ca-cert %s/inter.pem --ca-key %s/inter.key "
       "--out-cred %s/r.pem --out-key %s/r.key",
       w, w, w, w);
    KG("--type x509 --curve P-256 --subject old --ca-cert %s/root.pem --ca-key %s/root.key "
       "--not-before 2020-01-01 --not-after 2021-01-01 --out-cred %s/old.pem --out-key %s/old.key",
       w, w, w, w);
#undef KG
    char args[4096], *out, *err, path[64];
    snprintf(args, sizeof args,
             "--json --method 0 --suites 2 --cred-i %s/i.pem --key-i %s/i.key "
             "--cred-r %s/r.pem --key-r %s/r.key --id-cred-i x5chain --id-cred-r x5chain "
             "--trust %s/root.pem",
             w, w, w, w, w);
    int rc = simulate_json(args, &out, NULL);
    if (rc != 0)
        fail_msg("chain: exit %d:\n%s", rc, out);
    /* Two DER certificates in each ID_CRED: message_2 well over 2 x 250. */
    long m2 = message_index(out, "message_2", 0);
    assert_true(m2 >= 0);
    snprintf(path, sizeof path, "messages/%ld/bytes", m2);
    assert_true(json_long(out, path) > 600);
    free(out);

    /* Trusting another root: the initiator cannot validate the responder's
     * chain, sends error code 1 and exits 5. */
    snprintf(args, sizeof args,
             "--json --method 0 --suites 2 --cred-i %s/i.pem --key-i %s/i.key "
             "--cred-r %s/r.pem --key-r %s/r.key --id-cred-i x5chain --id-cred-r x5chain "
             "--trust %s/other.pem",
             w, w, w, w, w);
    rc = simulate_json(args, &out, NULL);
    assert_int_equal(rc, 5);
    long e = message_index(out, "error", 0);
    assert_true(e >= 0);
    snprintf(path, sizeof path, "messages/%ld/from", e);
    assert_json_eq(out, path, "initiator");
    snprintf(path, sizeof path, "messages/%ld/hex", e);
    char *hex = json_at(out, path);
    assert_memory_equal(hex, "01", 2); /* ERR_CODE 1 */
    free(hex);
    assert_json_eq(out, "outcome error/side error/name", "failed initiator credential_untrusted");
    free(out);

    /* An expired responder certificate. */
    snprintf(args, sizeof args,
             "--json --method 0 --suites 2 --cred-i %s/i.pem --key-i %s/i.key "
             "--cred-r %s/old.pem --key-r %s/old.key --id-cred-i x5chain --id-cred-r x5chain "
             "--trust %s/root.pem",
             w, w, w, w, w);
    rc = simulate_json(args, &out, &err);
    assert_int_equal(rc, 5);
    /* The sentence goes to standard error; JSON names the error. */
    assert_non_null(strstr(err, "outside its validity period"));
    e = message_index(out, "error", 0);
    assert_true(e >= 0);
    snprintf(path, sizeof path, "messages/%ld/from", e);
    assert_json_eq(out, path, "initiator");
    assert_json_eq(out, "error/name", "credential_expired");
    free(err);
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
    assert_non_null(strstr(
        out, "no common cipher suite: the responder supports 2 (SUITES_R), the initiator 6"));
    free(out);

    /* Unknown credential: the responder trusts only its own credential, so
     * the initiator's kid is unknown -> error code 3, exit 5. */
    snprintf(args, sizeof args,
             "--method 3 --suites 2 --cred-i %s --key-i %s --cred-r %s --key-r %s "
             "--trust %s --json",
             f.cred_i, f.key_i, f.cred_r, f.key_r, f.cred_r);
    rc = simulate_json(args, &out, NULL);
    assert_int_equal(rc, 5);
    assert_json_eq(out, "outcome error/side", "failed responder");
    /* Absent is null (issue #14): no OSCORE context, no framing. */
    assert_json_eq(out, "oscore framed oscore_contexts_match", "null null null");
    /* error message 03 f5: ERR_CODE 3, ERR_INFO true (RFC 9528 Section 6.4) */
    long e = message_index(out, "error", 0);
    assert_true(e >= 0);
    char paths[200];
    snprintf(paths, sizeof paths, "messages/%ld/from messages/%ld/bytes messages/%ld/hex", e, e, e);
    assert_json_eq(out, paths, "responder 2 03f5");
    /* The responder sent the error; the initiator took it in. */
    assert_json_eq(out, "error/name", "credential_unknown");
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
    char *out, *err;
    int rc = simulate_json("--json --ead-1 -5:0102", &out, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "unrecognized critical EAD item"));
    free(err);
    /* The responder's error message: ERR_CODE 1 with the text (RFC 9528
     * Section 3.8: an unrecognized critical item aborts). */
    assert_json_eq(out, "messages/1/name messages/1/from", "error responder");
    char *hex = json_at(out, "messages/1/hex");
    assert_memory_equal(hex, "0178", 4);
    free(hex);
    assert_json_eq(out, "error/name error/peer_err_code", "ead_critical 1");
    assert_json_eq(out, "error/peer_diagnostic", "message_1: unrecognized critical EAD item");
    free(out);

    /* ... 37 24 42 0102: label -5 (0x24) and its bstr value after C_I. */
    rc = simulate_json("--json --c-i 37 --ead-1 -5:0102 --ead-accept -5 --ead-2 7:aa --ead-3 7",
                       &out, NULL);
    assert_int_equal(rc, 0);
    assert_json_eq(out, "messages/0/from messages/0/bytes messages/1/bytes messages/2/bytes",
                   "initiator 41 48 20");
    hex = json_at(out, "messages/0/hex");
    assert_string_equal(hex + strlen(hex) - 10, "3724420102");
    free(hex);
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
    char *help;
    assert_int_equal(run_cli("simulate --help", false, &help), 0);
    assert_non_null(strstr(help, "--ephemeral-i FILE"));
    assert_non_null(strstr(help, "--ephemeral-r FILE"));
    assert_non_null(strstr(help, "Exit codes"));
    /* edhoc-cli help CMD is the command's own help, not the general one. */
    assert_int_equal(run_cli("help simulate", false, &out), 0);
    assert_string_equal(out, help);
    free(out);
    free(help);
    assert_int_equal(run_cli("help nonexistent", true, &out), 2);
    assert_non_null(strstr(out, "unknown command 'nonexistent'"));
    free(out);
    assert_int_equal(run_cli("--version", false, &out), 0);
    assert_non_null(strstr(out, "edhoc-cli "));
    free(out);
    assert_int_equal(simulate_json("--repeat 5 --json", &out, NULL), 0);
    assert_json_eq(out, "runs partial", "5 false");
    free(out);
}

/* The JSON contract (issue #14, "JSON as a contract"): the per-layer table
 * with and without a link, values null where absent, never NaN, and the
 * validation itself able to fail. */
static void test_json_contract(void **state)
{
    (void)state;
    char *out;
    /* Without a link: the layers up to IP, frames null. */
    assert_int_equal(simulate_json("--json --c-i 37 --c-r 27", &out, NULL), 0);
    assert_json_eq(out, "framed/link framed/total/frames framed/messages/#", "null null 4");
    /* The empty 2.04 answering message_3 has no EDHOC message. */
    assert_json_eq(out, "framed/messages/3/name framed/messages/3/edhoc_bytes", "empty_2.04 null");
    assert_json_eq(out, "error trace oscore/master_secret", "null null null");
    /* The check can fail: a NaN (not JSON, RFC 8259 Section 6) and a
     * missing member are refused. */
    char *bad = strdup(out);
    char *t = strstr(bad, "\"time_ms\": ");
    assert_non_null(t);
    t += strlen("\"time_ms\": ");
    size_t digits = strcspn(t, ",");
    memset(t, ' ', digits);
    memcpy(t, "NaN", 3);
    assert_int_not_equal(net_json_valid(bad, "simulate", false), 0);
    free(bad);
    bad = strdup(out);
    t = strstr(bad, "\"handshake_bytes\"");
    assert_non_null(t);
    memcpy(t, "\"handshake_byte\" ", 17);
    assert_int_not_equal(net_json_valid(bad, "simulate", false), 0);
    free(bad);
    free(out);

    /* 802.15.4 and a generic MTU: frames counted, the link described. */
    assert_int_equal(simulate_json("--json --link 802.15.4", &out, NULL), 0);
    assert_json_eq(out, "framed/link/type framed/link/mtu framed/measured", "802.15.4 null false");
    assert_true(json_long(out, "framed/total/frames") >= 4);
    free(out);
    assert_int_equal(simulate_json("--json --link-mtu 40", &out, NULL), 0);
    assert_json_eq(out, "framed/link/type framed/link/mtu", "mtu 40");
    assert_true(json_long(out, "framed/messages/0/frames") > 1);
    free(out);
    /* Secrets only when asked. */
    assert_int_equal(simulate_json("--json --export-secrets --trace", &out, NULL), 0);
    char *ms = json_at(out, "oscore/master_secret");
    assert_int_equal(strlen(ms), 32);
    free(ms);
    assert_true(json_long(out, "trace/#") > 10);
    free(out);
}

/* The option table (issue #14: "One declaration per command ... an option
 * a command does not use cannot be accepted"; "--opt=value and --opt value
 * everywhere"; "edhoc-cli help CMD"). */
static void test_option_table(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run_cli("simulate --bogus", true, &out), 2);
    assert_non_null(strstr(out, "edhoc-cli simulate: unknown option '--bogus'"));
    free(out);
    assert_int_equal(run_cli("simulate --repeet 2", true, &out), 2);
    assert_non_null(strstr(out, "did you mean --repeat?"));
    free(out);
    assert_int_equal(run_cli("simulate stray", true, &out), 2);
    assert_non_null(strstr(out, "unexpected argument 'stray'"));
    free(out);
    /* What simulate does not use is not accepted: it has no network
     * (--pcap, --timeout), and its per-side options carry -i / -r. */
    const char *refused[] = {"--pcap x.pcap", "--timeout 1", "--cred x", "--listen 127.0.0.1:0"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char args[100];
        snprintf(args, sizeof args, "simulate %s", refused[i]);
        assert_int_equal(run_cli(args, true, &out), 2);
        assert_non_null(strstr(out, "unknown option"));
        free(out);
    }
    /* --name=value, and a value option given twice takes the last
     * (documented in the man page, COMMON OPTIONS). */
    assert_int_equal(simulate_json("--json --method=0 --method 3 --suites=6 --suites 2 "
                                   "--repeat=4 --repeat 2",
                                   &out, NULL),
                     0);
    assert_json_eq(out, "method suite runs", "3 2 2");
    free(out);
    assert_int_equal(run_cli("simulate --repeat=0", true, &out), 2);
    assert_non_null(strstr(out, "--repeat: expected an integer from 1 to 1000000, got '0'"));
    free(out);
}

/* --repeat: no progress on standard error when it is not a terminal
 * (issue #14: "nothing on stderr when not a terminal unless -v"), and
 * SIGINT / SIGTERM end the run with the figures of the runs done, marked
 * partial, exit 128 + the signal (the contract of cli/output/progress.h). */
static void test_repeat_progress_and_interrupt(void **state)
{
    (void)state;
    char *out, *err;
    assert_int_equal(simulate_json("--json --repeat 300", &out, &err), 0);
    assert_string_equal(err, "");
    assert_json_eq(out, "runs partial", "300 false");
    free(out);
    free(err);
    assert_int_equal(simulate_json("--json --repeat 50 -q", &out, &err), 0);
    assert_string_equal(err, "");
    free(out);
    free(err);

    static const struct {
        int sig;
        bool json;
    } cases[] = {{SIGINT, true}, {SIGTERM, false}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char out_path[300], err_path[300];
        snprintf(out_path, sizeof out_path, "%s/long.out", workdir);
        snprintf(err_path, sizeof err_path, "%s/long.err", workdir);
        /* No line of the previous run may be taken for this one's. */
        unlink(out_path);
        unlink(err_path);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            if (!freopen(out_path, "w", stdout) || !freopen(err_path, "w", stderr))
                _exit(127);
            /* -v: progress lines even though standard error is a file; the
             * first one says the loop (and its signal handling) runs. */
            execl(net_cli(), net_cli(), "simulate", "--repeat", "1000000", "-v",
                  cases[c].json ? "--json" : "-v", (char *)NULL);
            _exit(127);
        }
        bool running = false;
        for (int i = 0; i < 1200 && !running; i++) {
            char *e = net_read_file(err_path);
            running = e && strstr(e, "simulate: ") != NULL;
            free(e);
            if (!running)
                net_sleep_ms(50);
        }
        kill(pid, cases[c].sig);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (!running)
            fail_msg("no progress line from simulate --repeat -v within a minute");
        if (!WIFEXITED(st))
            fail_msg("simulate ended by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
        assert_int_equal(WEXITSTATUS(st), 128 + cases[c].sig);
        out = net_read_file(out_path);
        assert_non_null(out);
        if (cases[c].json) {
            assert_int_equal(net_json_valid(out, "simulate", false), 0);
            assert_json_eq(out, "partial outcome", "true ok");
            long runs = json_long(out, "runs");
            assert_true(runs >= 1 && runs < 1000000);
        } else {
            assert_non_null(strstr(out, "interrupted: partial results"));
            assert_non_null(strstr(out, "Outcome: ok"));
        }
        free(out);
    }
}

/* `keygen ARGS` in the work directory (file names relative to it). */
static void keygen_in_workdir(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void keygen_in_workdir(const char *fmt, ...)
{
    char args[1500], cmd[2000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    /* Every FILE argument is a bare name: prefix the work directory.
     * --force: other tests of the group share the directory. */
    char *out;
    snprintf(cmd, sizeof cmd, "keygen --force %s", args);
    char *w = cmd, buf[4000];
    size_t used = 0;
    for (char *tok = strtok(w, " "); tok; tok = strtok(NULL, " "))
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s%s%s", used ? " " : "",
                                 strchr(tok, '.') && tok[0] != '-' ? workdir : "",
                                 strchr(tok, '.') && tok[0] != '-' ? "/" : "", tok);
    int rc = run_cli(buf, true, &out);
    if (rc != 0)
        fail_msg("%s: exit %d: %s", buf, rc, out);
    free(out);
}

/* Bytes of a CBOR byte string head for a length n. */
static size_t bstr_head(size_t n)
{
    return n < 24 ? 1 : n < 256 ? 2 : 3;
}

/* The credential forms RFC 9528 Section 3.5.3 allows besides kid, kccs,
 * x5t and x5chain: a kid naming a certificate, an x5bag, a CWT by value
 * (kcwt) and by kid. Sizes follow from the message layouts (Sections
 * 5.3.2 and 5.4.2): PLAINTEXT_3 = ( ID_CRED_I, Signature_or_MAC_3 ),
 * CIPHERTEXT_3 = PLAINTEXT_3 plus the 8-byte tag of AES-CCM-16-64-128,
 * message_3 = bstr CIPHERTEXT_3. */
static void test_new_credential_forms(void **state)
{
    (void)state;
    char *out, *err, args[3000];
    /* Certificates with kids, named by kid: 2c (I) and 2d (R), one byte,
     * so each ID_CRED is the CBOR int alone (Section 3.5.3.2). */
    keygen_in_workdir("--type x509 --curve P-256 --kid 2c --out-cred i.pem --out-key i.key");
    keygen_in_workdir("--type x509 --curve P-256 --kid 2d --out-cred r.pem --out-key r.key");
    snprintf(args, sizeof args,
             "--method 0 --suites 2 --cred-i %s/i.pem --key-i %s/i.key --cred-r %s/r.pem "
             "--key-r %s/r.key --id-cred-i kid --id-cred-r kid --c-r 37 --json",
             workdir, workdir, workdir, workdir);
    int rc = simulate_json(args, &out, &err);
    if (rc != 0)
        fail_msg("x5 by kid: exit %d: %s", rc, err);
    assert_json_eq(out, "outcome id_cred_i id_cred_r", "ok kid kid");
    /* PLAINTEXT_2 = C_R 37 (1) + kid 2d (1) + ES256 signature (2 + 64) =
     * 68; CIPHERTEXT_2 = G_Y (32) || 68 bytes, no tag: message_2 = 58 64
     * + 100 = 102. message_3: 1 + 66 + 8 = 75, plus 2 = 77. */
    assert_json_eq(out, "messages/1/bytes messages/2/bytes", "102 77");
    free(out);
    free(err);

    /* x5bag: leaf and intermediate in a bag, verified against the root
     * only (--trust); the same certificates as an x5chain give messages of
     * the same size (labels 32 and 33 both take two bytes). */
    keygen_in_workdir("--type x509 --curve Ed25519 --ca --subject Root --out-cred ca.pem "
                      "--out-key ca.key");
    keygen_in_workdir("--type x509 --curve Ed25519 --ca --subject Sub --ca-cert ca.pem "
                      "--ca-key ca.key --out-cred sub.pem --out-key sub.key");
    keygen_in_workdir("--type x509 --curve Ed25519 --ca-cert sub.pem --ca-key sub.key "
                      "--out-cred bi.pem --out-key bi.key");
    keygen_in_workdir("--type x509 --curve Ed25519 --ca-cert sub.pem --ca-key sub.key "
                      "--out-cred br.pem --out-key br.key");
    long sizes[2][2];
    for (int chain = 0; chain < 2; chain++) {
        const char *t = chain ? "x5chain" : "x5bag";
        snprintf(args, sizeof args,
                 "--method 0 --suites 0 --cred-i %s/bi.pem --key-i %s/bi.key --cred-r %s/br.pem "
                 "--key-r %s/br.key --id-cred-i %s --id-cred-r %s --trust %s/ca.pem --json",
                 workdir, workdir, workdir, workdir, t, t, workdir);
        rc = simulate_json(args, &out, &err);
        if (rc != 0)
            fail_msg("%s: exit %d: %s", t, rc, err);
        char want[64];
        snprintf(want, sizeof want, "ok %s %s", t, t);
        assert_json_eq(out, "outcome id_cred_i id_cred_r", want);
        sizes[chain][0] = json_long(out, "messages/1/bytes");
        sizes[chain][1] = json_long(out, "messages/2/bytes");
        free(out);
        free(err);
    }
    assert_int_equal(sizes[0][0], sizes[1][0]);
    assert_int_equal(sizes[0][1], sizes[1][1]);
    /* Without the root in --trust the bag leads nowhere. */
    snprintf(args, sizeof args,
             "--method 0 --suites 0 --cred-i %s/bi.pem --key-i %s/bi.key --cred-r %s/br.pem "
             "--key-r %s/br.key --id-cred-i x5bag --id-cred-r x5bag --trust %s/i.pem --json",
             workdir, workdir, workdir, workdir, workdir);
    rc = simulate_json(args, &out, &err);
    assert_int_equal(rc, 5);
    assert_non_null(strstr(err, "certificate chain or CWT does not verify to a trust anchor"));
    free(out);
    free(err);

    /* kcwt: CWTs signed by an issuer whose CCS (kid 0a) is the trust. */
    keygen_in_workdir("--type ccs --curve Ed25519 --kid 0a --out-cred iss.ccs --out-key iss.key");
    keygen_in_workdir("--type cwt --curve Ed25519 --kid 2a --issuer-key iss.key --issuer-kid 0a "
                      "--out-cred ci.cwt --out-key ci.key");
    keygen_in_workdir("--type cwt --curve Ed25519 --kid 2b --issuer-key iss.key --issuer-kid 0a "
                      "--out-cred cr.cwt --out-key cr.key");
    char path[400];
    snprintf(path, sizeof path, "%s/ci.cwt", workdir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    snprintf(args, sizeof args,
             "--method 0 --suites 0 --cred-i %s/ci.cwt --key-i %s/ci.key --cred-r %s/cr.cwt "
             "--key-r %s/cr.key --id-cred-i kcwt --id-cred-r kcwt --trust %s/iss.ccs --json",
             workdir, workdir, workdir, workdir, workdir);
    rc = simulate_json(args, &out, &err);
    if (rc != 0)
        fail_msg("kcwt: exit %d: %s", rc, err);
    assert_json_eq(out, "outcome id_cred_i id_cred_r", "ok kcwt kcwt");
    /* ID_CRED_I = {13: CWT}: a1 0d + the CWT; Ed25519 signature 2 + 64. */
    size_t ct3 = 2 + (size_t)st.st_size + 66 + 8;
    assert_int_equal(json_long(out, "messages/2/bytes"), (long)(bstr_head(ct3) + ct3));
    free(out);
    free(err);
    /* By kid: the CWTs themselves configured too (kid 2a, 2b). */
    snprintf(args, sizeof args,
             "--method 0 --suites 0 --cred-i %s/ci.cwt --key-i %s/ci.key --cred-r %s/cr.cwt "
             "--key-r %s/cr.key --id-cred-i kid --id-cred-r kid --trust %s/iss.ccs --trust "
             "%s/ci.cwt --trust %s/cr.cwt --json",
             workdir, workdir, workdir, workdir, workdir, workdir, workdir);
    rc = simulate_json(args, &out, &err);
    if (rc != 0)
        fail_msg("kcwt by kid: exit %d: %s", rc, err);
    assert_json_eq(out, "outcome id_cred_i id_cred_r", "ok kid kid");
    assert_json_eq(out, "messages/2/bytes", "77"); /* 1 + 66 + 8, plus 2 */
    free(out);
    free(err);
    /* A CWT past its exp (RFC 8392 Section 3.1.4) is refused. */
    keygen_in_workdir("--type cwt --curve Ed25519 --kid 2e --issuer-key iss.key --issuer-kid 0a "
                      "--not-before 2020-01-01 --not-after 2021-01-01 --out-cred old.cwt "
                      "--out-key old.key");
    snprintf(args, sizeof args,
             "--method 0 --suites 0 --cred-i %s/old.cwt --key-i %s/old.key --cred-r %s/cr.cwt "
             "--key-r %s/cr.key --id-cred-i kcwt --id-cred-r kcwt --trust %s/iss.ccs --json",
             workdir, workdir, workdir, workdir, workdir);
    rc = simulate_json(args, &out, &err);
    assert_int_equal(rc, 5);
    assert_json_eq(out, "outcome error/name error/side", "failed credential_expired responder");
    assert_non_null(strstr(err, "(ID_CRED_I: certificate or CWT outside its validity period)"));
    free(out);
    free(err);
    /* The key of the CWT must fit the suite: Ed25519 is no key of suite 2. */
    snprintf(args, sizeof args,
             "simulate --method 0 --suites 2 --cred-i %s/ci.cwt --key-i %s/ci.key "
             "--id-cred-i kcwt",
             workdir, workdir);
    rc = run_cli(args, true, &out);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "the initiator credential has a Ed25519 key, but method 0 suite 2 "
                                "needs a P-256 signature key"));
    free(out);
    /* No built-in CWT. */
    rc = run_cli("simulate --id-cred-i kcwt", true, &out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "there is no built-in CWT"));
    free(out);
}

/* --c-r fixed, C_I drawn: the drawn C_I keeps clear of the fixed C_R
 * (RFC 9528 Section 3.3.2: C_R differs from C_I; the responder here
 * cannot pick another). 96 runs: with C_I drawn among the 48 one-byte
 * values without regard to C_R, one in 48 failed with "own connection
 * identifier equals the peer's" (about 87 % of such series would show
 * it). */
static void test_fixed_c_r_random_c_i(void **state)
{
    (void)state;
    for (int i = 0; i < 96; i++) {
        char *out = NULL, *err = NULL;
        int rc = simulate_json("--c-r 37 --json", &out, &err);
        if (rc != 0)
            fail_msg("run %d with --c-r 37: exit %d: %s", i, rc, err);
        free(out);
        free(err);
    }
}

/* The hex of vector key `key`, appended to out. */
static void append_vec_hex(struct vec_scope v, const char *key, char *out)
{
    uint8_t buf[256];
    char hex[513];
    hex_encode(buf, vec_hex(v, key, buf, sizeof buf), hex);
    strcat(out, hex);
}

static void read_text_file(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    fclose(f);
}

/* --keylog FILE: the rows initiator --keylog writes. For the RFC 9529
 * trace 2 run, the edhoc_secrets row is G_X, PRK_2e, TH_2, PRK_3e2m,
 * TH_3, PRK_4e3m, TH_4 of the trace (one row: both sides hold the same
 * values), then the OSCORE contexts of both directions; a second run
 * appends; the file is 0600 under umask 0; a symbolic link is refused. */
static void test_keylog(void **state)
{
    (void)state;
    struct vec_scope v = vec_load("rfc9529-trace2.json");
    struct trace2_files f;
    make_trace2_files(v, &f);
    char log[300], args[4096];
    snprintf(log, sizeof log, "%s/sim.keylog", workdir);
    unlink(log);
    snprintf(args, sizeof args,
             "simulate --method 3 --suites 6,2 --suites-r 2 --cred-i %s --key-i %s --cred-r %s "
             "--key-r %s --c-i 0e,37 --c-r 27 --ephemeral-i %s --ephemeral-r %s --keylog %s",
             f.cred_i, f.key_i, f.cred_r, f.key_r, f.eph_i, f.eph_r, log);
    mode_t old_mask = umask(0);
    char *out;
    int rc = run_cli(args, false, &out);
    umask(old_mask);
    if (rc != 0)
        fail_msg("exit %d, output:\n%s", rc, out);
    free(out);
    struct stat st;
    assert_int_equal(lstat(log, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);

    static char want[4096], got[8192];
    want[0] = '\0';
    const char *fields[] = {"g_x", "prk_2e", "th_2", "prk_3e2m", "th_3", "prk_4e3m", "th_4"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        if (i)
            strcat(want, ",");
        append_vec_hex(v, fields[i], want);
    }
    strcat(want, "\n");
    /* The client's context (Sender ID C_R), then the server's. */
    const char *dirs[2][2] = {{"oscore_client_sender_id", "oscore_client_recipient_id"},
                              {"oscore_server_sender_id", "oscore_server_recipient_id"}};
    for (int d = 0; d < 2; d++) {
        const char *keys[4] = {dirs[d][0], dirs[d][1], "oscore_master_secret",
                               "oscore_master_salt"};
        for (int k = 0; k < 4; k++) {
            strcat(want, "\"");
            append_vec_hex(v, keys[k], want);
            strcat(want, "\",");
        }
        strcat(want, "\"\",\"AES-CCM-16-64-128 (CCM*)\"\n");
    }
    read_text_file(log, got, sizeof got);
    assert_string_equal(got, want);

    /* Appended, not replaced. */
    rc = run_cli(args, false, &out);
    assert_int_equal(rc, 0);
    free(out);
    read_text_file(log, got, sizeof got);
    size_t wl = strlen(want);
    assert_int_equal(strlen(got), 2 * wl);
    assert_memory_equal(got + wl, want, wl);

    /* Never through a symbolic link: refused, exit 3, the target untouched. */
    char target[300], link_path[300];
    snprintf(target, sizeof target, "%s/elsewhere", workdir);
    snprintf(link_path, sizeof link_path, "%s/link.keylog", workdir);
    write_file("elsewhere", "x", 1, 0600, target, sizeof target);
    unlink(link_path);
    assert_int_equal(symlink(target, link_path), 0);
    snprintf(args, sizeof args, "simulate --keylog %s", link_path);
    rc = run_cli(args, true, &out);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "symbolic link"));
    free(out);
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_size, 1);
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
        cmocka_unit_test(test_json_contract),
        cmocka_unit_test(test_option_table),
        cmocka_unit_test(test_repeat_progress_and_interrupt),
        cmocka_unit_test(test_new_credential_forms),
        cmocka_unit_test(test_fixed_c_r_random_c_i),
        cmocka_unit_test(test_keylog),
    };
    return cmocka_run_group_tests_name("cli_simulate", tests, setup, teardown);
}
