/* edhoc-cli keygen end to end: every curve, both credential types, CA
 * signing, file modes, refusal of key files readable by others, the
 * option table's spellings and the --json report against its schema. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "net_test_util.h"
#include "vectors.h"

static char dir[256];

/* The value at PATH ("kid_hex"; "#" at the end: a length) of the JSON
 * text, read with Python's json module: a string as itself, anything else
 * as JSON ("true", "12", "null"). Fails the test when the text is not
 * JSON or PATH is not in it. Free the result. */
static char *json_at(const char *text, const char *path)
{
    static const char script[] =
        "import json, sys\n"
        "d = json.load(open(sys.argv[1]))\n"
        "for k in sys.argv[2].split('/'):\n"
        "    d = len(d) if k == '#' else d[int(k)] if isinstance(d, list) else d[k]\n"
        "sys.stdout.write(d if isinstance(d, str) else json.dumps(d))\n";
    char doc[400], py[400], cmd[1200];
    snprintf(doc, sizeof doc, "%s/json-at.json", dir);
    snprintf(py, sizeof py, "%s/json-at.py", dir);
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

/* Whitespace runs as one space: help text is wrapped by the table. */
static void squeeze_spaces(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r == ' ' || *r == '\n') {
            if (w > s && w[-1] == ' ')
                continue;
            *w++ = ' ';
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_cli_keygen.XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Run edhoc-cli with printf-style arguments; returns the exit status and
 * leaves stdout+stderr in *out (free it). */
static int cli(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cli(char **out, const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return run_cli(args, true, out);
}

/* The same with standard output only (JSON), stderr left to the log. */
static int run_cli_fmt(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int run_cli_fmt(char **out, const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return run_cli(args, false, out);
}

static int run_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_ok(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

static mode_t file_mode(const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 0777;
}

static size_t file_size(const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(stat(path, &st), 0);
    return (size_t)st.st_size;
}

static size_t count_certs(const char *name)
{
    char path[512], line[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "-----BEGIN CERTIFICATE-----", 27))
            n++;
    fclose(f);
    return n;
}

static const char *const curves[] = {"P-256", "P-384", "Ed25519", "Ed448", "X25519", "X448"};

static void test_ccs_every_curve(void **state)
{
    (void)state;
    for (size_t i = 0; i < 6; i++) {
        char *out;
        int rc = cli(&out,
                     "keygen --type ccs --curve %s --kid 2b --subject dev%zu "
                     "--out-cred %s/ccs%zu.cbor --out-key %s/ccs%zu.key",
                     curves[i], i, dir, i, dir, i);
        if (rc != 0)
            fail_msg("keygen ccs %s: exit %d: %s", curves[i], rc, out);
        assert_non_null(strstr(out, "kid:         2b"));
        assert_non_null(strstr(out, curves[i]));
        assert_non_null(strstr(out, "wrote "));
        assert_non_null(strstr(out, "mode 0600"));
        free(out);
        char name[32];
        snprintf(name, sizeof name, "ccs%zu.key", i);
        assert_int_equal(file_mode(name), 0600);
        snprintf(name, sizeof name, "ccs%zu.cbor", i);
        /* {2: "devN", 8: {1: {1, 2, -1, -2 (, -3)}}}: at least the key bytes. */
        assert_true(file_size(name) > 40);
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        int first = fgetc(f);
        fclose(f);
        assert_int_equal(first, 0xa2);
    }
    /* --hex writes the same map as text. */
    char *out;
    assert_int_equal(cli(&out,
                         "keygen --type ccs --curve X25519 --hex --kid 01 --subject s "
                         "--out-cred %s/hex.txt --out-key %s/hex.key",
                         dir, dir),
                     0);
    free(out);
    char path[512], text[256] = "";
    snprintf(path, sizeof path, "%s/hex.txt", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(text, sizeof text, f));
    fclose(f);
    assert_int_equal(strncmp(text, "a20261730", 9), 0); /* {2: "s", 8: ... */
}

static void test_x509_every_curve(void **state)
{
    (void)state;
    char *out;
    /* A P-256 CA first: it signs the X25519/X448 certificates. */
    int rc = cli(&out,
                 "keygen --type x509 --curve P-256 --ca --subject 'Test CA' "
                 "--out-cred %s/ca.pem --out-key %s/ca.key",
                 dir, dir);
    if (rc != 0)
        fail_msg("keygen CA: exit %d: %s", rc, out);
    assert_non_null(strstr(out, "(CA)"));
    free(out);
    assert_int_equal(file_mode("ca.key"), 0600);

    for (size_t i = 0; i < 6; i++) {
        bool dh_only = i >= 4;
        /* Self-signed: only keys that can sign. */
        rc = cli(&out,
                 "keygen --type x509 --curve %s --subject self%zu "
                 "--out-cred %s/self%zu.pem --out-key %s/self%zu.key",
                 curves[i], i, dir, i, dir, i);
        if (dh_only) {
            assert_int_equal(rc, 2);
            assert_non_null(strstr(out, "cannot sign"));
            assert_non_null(strstr(out, "--ca-cert"));
        } else {
            if (rc != 0)
                fail_msg("keygen self-signed %s: exit %d: %s", curves[i], rc, out);
            assert_non_null(strstr(out, "self-signed"));
            assert_int_equal(run_ok("openssl verify -CAfile %s/self%zu.pem %s/self%zu.pem "
                                    ">/dev/null 2>&1",
                                    dir, i, dir, i),
                             0);
        }
        free(out);

        /* CA-signed: every curve. */
        rc = cli(&out,
                 "keygen --type x509 --curve %s --subject leaf%zu --days 30 "
                 "--ca-cert %s/ca.pem --ca-key %s/ca.key "
                 "--out-cred %s/leaf%zu.pem --out-key %s/leaf%zu.key",
                 curves[i], i, dir, dir, dir, i, dir, i);
        if (rc != 0)
            fail_msg("keygen CA-signed %s: exit %d: %s", curves[i], rc, out);
        assert_non_null(strstr(out, "certificate: "));
        free(out);
        char name[32];
        snprintf(name, sizeof name, "leaf%zu.key", i);
        assert_int_equal(file_mode(name), 0600);
        snprintf(name, sizeof name, "leaf%zu.pem", i);
        assert_int_equal(count_certs(name), 1); /* the root is not appended */
        assert_int_equal(
            run_ok("openssl verify -CAfile %s/ca.pem %s/leaf%zu.pem >/dev/null 2>&1", dir, dir, i),
            0);
        /* The certificate holds the key type asked for. */
        const char *want = i == 0 || i == 1 ? "id-ecPublicKey" : curves[i];
        assert_int_equal(run_ok("openssl x509 -in %s/leaf%zu.pem -noout -text | grep -qi 'Public "
                                "Key Algorithm: %s'",
                                dir, i, want),
                         0);
    }
}

static void test_chain_and_validity(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(cli(&out,
                         "keygen --type x509 --curve Ed25519 --ca --subject Root "
                         "--not-before 2024-01-01 --not-after 2099-12-31 "
                         "--out-cred %s/root.pem --out-key %s/root.key",
                         dir, dir),
                     0);
    assert_non_null(strstr(out, "validity:    2024-01-01T00:00:00Z .. 2099-12-31T00:00:00Z"));
    free(out);
    assert_int_equal(cli(&out,
                         "keygen --type x509 --curve P-384 --ca --subject Intermediate "
                         "--ca-cert %s/root.pem --ca-key %s/root.key "
                         "--out-cred %s/int.pem --out-key %s/int.key",
                         dir, dir, dir, dir),
                     0);
    free(out);
    int rc = cli(&out,
                 "keygen --type x509 --curve P-256 --subject Leaf "
                 "--ca-cert %s/int.pem --ca-key %s/int.key "
                 "--out-cred %s/leaf.pem --out-key %s/leaf.key",
                 dir, dir, dir, dir);
    if (rc != 0)
        fail_msg("keygen leaf under intermediate: exit %d: %s", rc, out);
    assert_non_null(strstr(out, "+1 intermediate certificate"));
    free(out);
    /* leaf.pem = leaf, intermediate: a chain that verifies to the root. */
    assert_int_equal(count_certs("leaf.pem"), 2);
    assert_int_equal(run_ok("openssl verify -CAfile %s/root.pem -untrusted %s/leaf.pem "
                            "%s/leaf.pem >/dev/null 2>&1",
                            dir, dir, dir),
                     0);
    /* And without the root it does not. */
    assert_int_not_equal(
        run_ok("openssl verify -CAfile %s/int.pem %s/leaf.pem >/dev/null 2>&1", dir, dir), 0);
}

static void test_suite_and_use(void **state)
{
    (void)state;
    static const struct {
        int suite;
        const char *use, *curve;
    } cases[] = {
        {0, "sign", "Ed25519"}, {0, "dh", "X25519"}, {2, "sign", "P-256"},  {3, "dh", "P-256"},
        {6, "sign", "P-256"},   {6, "dh", "X25519"}, {24, "sign", "P-384"}, {24, "dh", "P-384"},
        {25, "sign", "Ed448"},  {25, "dh", "X448"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out, want[64];
        int rc = cli(&out,
                     "keygen --type ccs --suite %d --use %s "
                     "--out-cred %s/s%zu.cbor --out-key %s/s%zu.key",
                     cases[i].suite, cases[i].use, dir, i, dir, i);
        if (rc != 0)
            fail_msg("suite %d use %s: exit %d: %s", cases[i].suite, cases[i].use, rc, out);
        snprintf(want, sizeof want, "curve:       %s ", cases[i].curve);
        if (!strstr(out, want))
            fail_msg("suite %d use %s: expected %s in: %s", cases[i].suite, cases[i].use,
                     cases[i].curve, out);
        free(out);
    }
}

static void test_refusals(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(cli(&out,
                         "keygen --type x509 --curve P-256 --ca --subject CA "
                         "--out-cred %s/ca.pem --out-key %s/ca.key",
                         dir, dir),
                     0);
    free(out);

    /* A CA key readable by others: exit 3, the file named, the fix given. */
    char path[512];
    snprintf(path, sizeof path, "%s/ca.key", dir);
    assert_int_equal(chmod(path, 0644), 0);
    int rc = cli(&out,
                 "keygen --type x509 --curve Ed25519 --ca-cert %s/ca.pem --ca-key %s "
                 "--out-cred %s/l.pem --out-key %s/l.key",
                 dir, path, dir, dir);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, path));
    assert_non_null(strstr(out, "chmod 600"));
    free(out);
    /* Nothing was written. */
    snprintf(path, sizeof path, "%s/l.key", dir);
    assert_int_not_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/ca.key", dir);
    assert_int_equal(chmod(path, 0600), 0);
    rc = cli(&out,
             "keygen --type x509 --curve Ed25519 --ca-cert %s/ca.pem --ca-key %s "
             "--out-cred %s/l.pem --out-key %s/l.key",
             dir, path, dir, dir);
    assert_int_equal(rc, 0);
    free(out);

    /* No silent overwrite; --force replaces and keeps mode 0600. */
    rc = cli(&out, "keygen --type ccs --curve X25519 --out-cred %s/l.pem --out-key %s/l.key", dir,
             dir);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--force"));
    free(out);
    snprintf(path, sizeof path, "%s/l.key", dir);
    assert_int_equal(chmod(path, 0644), 0);
    rc = cli(&out,
             "keygen --type ccs --curve X25519 --force --out-cred %s/l.pem "
             "--out-key %s/l.key",
             dir, dir);
    assert_int_equal(rc, 0);
    free(out);
    assert_int_equal(file_mode("l.key"), 0600);

    /* A CA key that does not belong to the CA certificate. */
    rc = cli(&out,
             "keygen --type x509 --curve Ed25519 --ca-cert %s/ca.pem --ca-key %s/leaf.key "
             "--out-cred %s/m.pem --out-key %s/m.key",
             dir, dir, dir, dir);
    assert_int_equal(rc, 3);
    free(out);
    assert_int_equal(cli(&out,
                         "keygen --type x509 --curve P-256 --out-cred %s/x.pem "
                         "--out-key %s/leaf.key",
                         dir, dir),
                     0);
    free(out);
    rc = cli(&out,
             "keygen --type x509 --curve Ed25519 --ca-cert %s/ca.pem --ca-key %s/leaf.key "
             "--out-cred %s/m.pem --out-key %s/m.key",
             dir, dir, dir, dir);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "is not the private key of"));
    free(out);

    /* Usage errors: exit 2. */
    const char *bad[] = {
        "keygen --curve P-256 --out-cred /tmp/x --out-key /tmp/y", /* no type */
        "keygen --type ccs --curve P-521 --out-cred /tmp/x --out-key /tmp/y",
        "keygen --type pgp --curve P-256 --out-cred /tmp/x --out-key /tmp/y",
        "keygen --type ccs --curve P-256 --out-key /tmp/y", /* no cred file */
        "keygen --type ccs --suite 7 --use dh --out-cred /tmp/x --out-key /tmp/y",
        "keygen --type ccs --suite 2 --out-cred /tmp/x --out-key /tmp/y", /* no --use */
        "keygen --type ccs --curve P-256 --kid zz --out-cred /tmp/x --out-key /tmp/y",
        "keygen --type ccs --curve P-256 --ca --out-cred /tmp/x --out-key /tmp/y",
        "keygen --type x509 --curve X448 --ca --out-cred /tmp/x --out-key /tmp/y",
        "keygen --type x509 --curve P-256 --not-before 2030-01-01 --not-after 2029-01-01 "
        "--out-cred /tmp/x --out-key /tmp/y",
        "keygen --type x509 --curve P-256 --bogus",
        "keygen --type cwt --curve P-256 --out-cred /tmp/x --out-key /tmp/y", /* no issuer */
        "keygen --type ccs --curve P-256 --issuer-key /tmp/k --out-cred /tmp/x --out-key /tmp/y",
        "keygen --type ccs --curve P-256 --days 3 --out-cred /tmp/x --out-key /tmp/y",
        "keygen --type x509 --curve P-256 --ca --no-extensions --out-cred /tmp/x --out-key /tmp/y",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc = run_cli(bad[i], true, &out);
        if (rc != 2)
            fail_msg("'%s': exit %d, expected 2: %s", bad[i], rc, out);
        free(out);
    }
    rc = run_cli("keygen --help", false, &out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "--out-key"));
    free(out);
}

/* The keygen output is usable by the handshake: a CA-signed certificate
 * sent as x5chain verifies through the responder's store (--trust CA). */
static void test_simulate_with_keygen_output(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(cli(&out,
                         "keygen --type x509 --curve P-256 --ca --subject CA "
                         "--out-cred %s/ca.pem --out-key %s/ca.key",
                         dir, dir),
                     0);
    free(out);
    const char *roles[] = {"i", "r"};
    for (int r = 0; r < 2; r++) {
        assert_int_equal(cli(&out,
                             "keygen --type x509 --curve Ed25519 --subject %s "
                             "--ca-cert %s/ca.pem --ca-key %s/ca.key "
                             "--out-cred %s/%s.pem --out-key %s/%s.key",
                             roles[r], dir, dir, dir, roles[r], dir, roles[r]),
                         0);
        free(out);
    }
    int rc = cli(&out,
                 "simulate --method 0 --suites 0 --suites-r 0 "
                 "--cred-i %s/i.pem --key-i %s/i.key --cred-r %s/r.pem --key-r %s/r.key "
                 "--trust %s/ca.pem --id-cred-i x5chain --id-cred-r x5chain",
                 dir, dir, dir, dir, dir);
    if (rc != 0)
        fail_msg("simulate with keygen credentials: exit %d: %s", rc, out);
    free(out);
    /* A responder trusting another CA refuses the initiator. */
    assert_int_equal(cli(&out,
                         "keygen --type x509 --curve P-256 --ca --subject CA "
                         "--out-cred %s/other.pem --out-key %s/other.key",
                         dir, dir),
                     0);
    free(out);
    rc = cli(&out,
             "simulate --method 0 --suites 0 --suites-r 0 "
             "--cred-i %s/i.pem --key-i %s/i.key --cred-r %s/r.pem --key-r %s/r.key "
             "--trust %s/other.pem --id-cred-i x5chain --id-cred-r x5chain",
             dir, dir, dir, dir, dir);
    assert_int_not_equal(rc, 0);
    free(out);
    /* A key file readable by others is refused by simulate too. */
    char path[512];
    snprintf(path, sizeof path, "%s/i.key", dir);
    assert_int_equal(chmod(path, 0644), 0);
    rc = cli(&out,
             "simulate --method 0 --suites 0 --suites-r 0 "
             "--cred-i %s/i.pem --key-i %s --cred-r %s/r.pem --key-r %s/r.key "
             "--trust %s/ca.pem --id-cred-i x5chain --id-cred-r x5chain",
             dir, path, dir, dir, dir);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, path));
    assert_non_null(strstr(out, "chmod 600"));
    free(out);
}

/* Kid collisions: the default kid must be none of the built-in demo
 * credentials' kids (include/edhoc/cred.h, src/cred/demo_creds.c), since
 * simulate and the peers load the demo trust first and would then take
 * the demo credential for the new one ("MAC_3 verification failed"). */
static void test_default_kid_avoids_demo_kids(void **state)
{
    (void)state;
    static const unsigned demo_kids[] = {
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* X.509 / CCS signature, I */
        0x09, 0x0a, 0x0c, 0x0d, 0x0e, 0x0f, 0x13, 0x14, /* CCS / X.509 static DH, I */
        0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, /* the same, R */
        0x29, 0x2a, 0x2c, 0x2d, 0x2e, 0x2f, 0x33, 0x34,
        0x10, 0x30, 0x11, 0x31, 0x17, /* chain, 293 bytes, expired */
        0x2b, 0x32,                   /* RFC 9529 trace 2 */
    };
    for (int i = 0; i < 48; i++) {
        char *out;
        int rc = cli(&out,
                     "keygen --type ccs --suite 2 --use dh --force "
                     "--out-cred %s/k%d.ccs --out-key %s/k%d.key",
                     dir, i, dir, i);
        if (rc != 0)
            fail_msg("keygen: exit %d: %s", rc, out);
        const char *k = strstr(out, "kid:         ");
        assert_non_null(k);
        unsigned kid = 0x100;
        char after = 0;
        assert_int_equal(sscanf(k + 13, "%2x%c", &kid, &after), 2);
        assert_int_equal(after, '\n'); /* one byte */
        /* A one-byte CBOR integer: 0..23 or -1..-24. */
        assert_true(kid <= 0x17 || (kid >= 0x20 && kid <= 0x37));
        for (size_t j = 0; j < sizeof demo_kids / sizeof demo_kids[0]; j++)
            if (kid == demo_kids[j])
                fail_msg("default kid %02x is the kid of a demo credential", kid);
        free(out);
        if (i < 4) {
            rc = cli(&out,
                     "simulate --method 3 --suites 2 --cred-i %s/k%d.ccs "
                     "--key-i %s/k%d.key",
                     dir, i, dir, i);
            if (rc != 0 || !strstr(out, "Outcome: ok, suite 2, 1 attempt"))
                fail_msg("simulate with a fresh key of kid %02x: exit %d: %s", kid, rc, out);
            free(out);
        }
    }
    char *out;
    assert_int_equal(cli(&out, "keygen --help"), 0);
    squeeze_spaces(out);
    assert_non_null(strstr(out, "never the kid of a built-in demo credential"));
    free(out);
}

/* --out-cred - writes the credential to standard output (the report to
 * standard error) instead of a file named "-"; a private key never goes to
 * standard output. */
static void test_out_cred_stdout(void **state)
{
    (void)state;
    char *out;
    struct stat st;
    int had_dash = stat("-", &st) == 0;
    char args[600];
    snprintf(args, sizeof args,
             "keygen --type ccs --curve P-256 --hex --out-cred - --out-key %s/so.key", dir);
    int rc = run_cli(args, false, &out); /* standard output only */
    assert_int_equal(rc, 0);
    assert_true(strncmp(out, "a2", 2) == 0); /* a CCS map, in hex */
    assert_null(strstr(out, "wrote"));
    free(out);
    if (!had_dash)
        assert_int_not_equal(stat("-", &st), 0);
    rc = cli(&out, "keygen --type ccs --curve P-256 --out-cred %s/so2.ccs --out-key -", dir);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "never to standard output"));
    free(out);
}

/* --json: the report as one object, valid against docs/json/keygen.schema.json
 * (issue #14: "a test validates every command's --json output against
 * its schema"), with null for what a credential type does not have. */
static void test_json_report(void **state)
{
    (void)state;
    char *out;
    int rc = run_cli_fmt(&out,
                         "keygen --type ccs --curve X25519 --kid 2b --subject dev --json "
                         "--out-cred %s/j.ccs --out-key %s/j.key",
                         dir, dir);
    if (rc != 0)
        fail_msg("keygen --json: exit %d: %s", rc, out);
    assert_int_equal(net_json_valid(out, "keygen", false), 0);
    assert_json_eq(out, "type", "ccs");
    assert_json_eq(out, "kid_hex", "2b");
    assert_json_eq(out, "curve", "X25519");
    assert_json_eq(out, "key_use", "static_dh");
    assert_json_eq(out, "subject", "dev");
    assert_json_eq(out, "self_signed", "null");
    assert_json_eq(out, "not_after", "null");
    assert_json_eq(out, "credential_format", "ccs_cbor");
    char want[600];
    snprintf(want, sizeof want, "%s/j.key", dir);
    assert_json_eq(out, "key_file", want);
    /* The check can fail: a required member renamed is refused. */
    char *bad = strdup(out);
    char *k = strstr(bad, "\"key_file\"");
    assert_non_null(k);
    memcpy(k, "\"key_path\"", 10);
    assert_int_not_equal(net_json_valid(bad, "keygen", false), 0);
    free(bad);
    free(out);

    /* A CA and a certificate it signs. */
    rc = run_cli_fmt(&out,
                     "keygen --type x509 --curve P-256 --ca --subject CA --json "
                     "--out-cred %s/jca.pem --out-key %s/jca.key",
                     dir, dir);
    assert_int_equal(rc, 0);
    assert_int_equal(net_json_valid(out, "keygen", false), 0);
    assert_json_eq(out, "ca", "true");
    assert_json_eq(out, "self_signed", "true");
    assert_json_eq(out, "kid_hex", "null");
    free(out);
    rc = run_cli_fmt(&out,
                     "keygen --type x509 --curve Ed25519 --json --not-before 2024-01-01 "
                     "--not-after 2030-01-01 --ca-cert %s/jca.pem --ca-key %s/jca.key "
                     "--out-cred %s/jl.pem --out-key %s/jl.key",
                     dir, dir, dir, dir);
    assert_int_equal(rc, 0);
    assert_int_equal(net_json_valid(out, "keygen", false), 0);
    assert_json_eq(out, "self_signed", "false");
    snprintf(want, sizeof want, "%s/jca.pem", dir);
    assert_json_eq(out, "issuer_file", want);
    assert_json_eq(out, "not_before", "2024-01-01T00:00:00Z");
    assert_json_eq(out, "intermediate_certificates", "0");
    assert_json_eq(out, "credential_format", "pem");
    free(out);

    /* The credential and the report cannot both be standard output. */
    rc = cli(&out, "keygen --type ccs --curve P-256 --json --out-cred - --out-key %s/x.key", dir);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "both would go to standard output"));
    free(out);
}

/* The private key is a new file of mode 0600 whatever the umask, never
 * written through a symbolic link, and never put where others could swap
 * it (issue #14: "every file that holds a secret is created 0600"; "key
 * files are refused when ... in a group/world-writable directory"). */
static void test_private_key_file_safety(void **state)
{
    (void)state;
    char path[600], victim[600], link_path[600];
    /* umask 000: the key stays 0600 (the credential follows the umask). */
    assert_int_equal(run_ok("umask 000; %s keygen --type ccs --curve P-256 --out-cred %s/u.ccs "
                            "--out-key %s/u.key >/dev/null 2>&1",
                            net_cli(), dir, dir),
                     0);
    assert_int_equal(file_mode("u.key"), 0600);

    /* A dangling symbolic link where the key goes: not followed. */
    snprintf(victim, sizeof victim, "%s/ghost", dir);
    snprintf(link_path, sizeof link_path, "%s/dangling.key", dir);
    assert_int_equal(symlink(victim, link_path), 0);
    char *out;
    int rc = cli(&out, "keygen --type ccs --curve P-256 --out-cred %s/d.ccs --out-key %s", dir,
                 link_path);
    assert_int_not_equal(rc, 0);
    free(out);
    struct stat st;
    assert_int_not_equal(lstat(victim, &st), 0); /* nothing created through the link */

    /* A link to an existing file: refused without --force; with --force
     * the link itself is replaced by a new file and its target is left. */
    net_write_file(victim, "untouched\n", 0644);
    rc = cli(&out, "keygen --type ccs --curve P-256 --out-cred %s/e.ccs --out-key %s", dir,
             link_path);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--force"));
    free(out);
    rc = cli(&out, "keygen --type ccs --curve P-256 --force --out-cred %s/e.ccs --out-key %s", dir,
             link_path);
    assert_int_equal(rc, 0);
    free(out);
    assert_int_equal(lstat(link_path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    char *text = net_read_file(victim);
    assert_string_equal(text, "untouched\n");
    free(text);

    /* A directory others can write: refused before anything is written,
     * with the fix; the same directory with the sticky bit (as /tmp) is
     * fine. */
    snprintf(path, sizeof path, "%s/open", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(chmod(path, 0777), 0);
    rc = cli(&out, "keygen --type ccs --curve P-256 --out-cred %s/c.ccs --out-key %s/k.key", path,
             path);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "chmod go-w"));
    free(out);
    snprintf(victim, sizeof victim, "%s/c.ccs", path);
    assert_int_not_equal(access(victim, F_OK), 0);
    assert_int_equal(chmod(path, 01777), 0);
    rc = cli(&out, "keygen --type ccs --curve P-256 --out-cred %s/c.ccs --out-key %s/k.key", path,
             path);
    assert_int_equal(rc, 0);
    free(out);

    /* A directory others can write higher up (not sticky): whoever can
     * write there can swap the whole branch, and the key loader refuses
     * the key (src/cred/keyfile.c, OpenSSH's rule for every directory
     * above). keygen applies the loader's rule itself: it used to look at
     * the nearest directory only and make a key that no command would
     * load. */
    char deep[700];
    snprintf(path, sizeof path, "%s/open-above", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(deep, sizeof deep, "%s/own", path);
    assert_int_equal(mkdir(deep, 0700), 0);
    assert_int_equal(chmod(path, 0777), 0);
    rc = cli(&out, "keygen --type ccs --curve P-256 --out-cred %s/c.ccs --out-key %s/k.key", deep,
             deep);
    assert_int_equal(rc, 3);
    char fix[1600];
    snprintf(fix, sizeof fix,
             "edhoc-cli keygen: --out-key %s/k.key: in a directory others can "
             "write (%s, mode 0777): they could put another key in its place; "
             "fix it with: chmod go-w %s; the key would be refused when loaded",
             deep, path, path);
    if (!strstr(out, fix))
        fail_msg("expected\n%s\ngot\n%s", fix, out);
    free(out);
    char made[720];
    snprintf(made, sizeof made, "%s/k.key", deep);
    assert_int_not_equal(access(made, F_OK), 0);
    assert_int_equal(chmod(path, 0700), 0);
}

/* The option table (issue #14: "One declaration per command"): unknown
 * options named, --opt=value, the last of a value option given twice
 * wins, help from the same table, and options keygen would ignore
 * refused. */
static void test_option_table(void **state)
{
    (void)state;
    char *out;
    int rc = cli(&out, "keygen --type ccs --curve P-256 --bogus");
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "edhoc-cli keygen: unknown option '--bogus'"));
    free(out);
    rc = cli(&out, "keygen --type ccs --curv P-256");
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "did you mean --curve?"));
    free(out);
    rc = cli(&out, "keygen --type ccs --curve P-256 stray --out-cred %s/s.ccs --out-key %s/s.key",
             dir, dir);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "unexpected argument 'stray'"));
    free(out);

    /* --name=value, and the last value wins (documented in the man page,
     * COMMON OPTIONS). */
    rc = run_cli_fmt(&out,
                     "keygen --type=ccs --curve=P-256 --kid=01 --kid 0b --json "
                     "--out-cred=%s/eq.ccs --out-key=%s/eq.key",
                     dir, dir);
    if (rc != 0)
        fail_msg("keygen --opt=value: exit %d: %s", rc, out);
    assert_json_eq(out, "kid_hex", "0b");
    assert_json_eq(out, "curve", "P-256");
    free(out);

    /* edhoc-cli help keygen is keygen --help. */
    char *help;
    assert_int_equal(run_cli("keygen --help", false, &help), 0);
    assert_int_equal(run_cli("help keygen", false, &out), 0);
    assert_string_equal(out, help);
    assert_non_null(strstr(help, "Exit codes"));
    free(out);
    free(help);

    /* Options this credential type would not use are refused, not
     * ignored. */
    const char *ignored[][2] = {
        {"--type x509 --curve P-256 --hex", "certificates are written as PEM"},
        {"--type ccs --curve P-256 --days 10", "are for --type x509"},
        {"--type x509 --curve P-256 --days 10 --not-after 2030-01-01", "not both"},
        {"--type ccs --curve P-256 --no-extensions", "are for --type x509"},
    };
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
        rc = cli(&out, "keygen %s --out-cred %s/i.x --out-key %s/i.key", ignored[i][0], dir, dir);
        if (rc != 2 || !strstr(out, ignored[i][1]))
            fail_msg("keygen %s: exit %d, expected 2 and '%s': %s", ignored[i][0], rc,
                     ignored[i][1], out);
        free(out);
    }
}

/* keygen --kid for a certificate: the kid goes before the PEM block as an
 * "EDHOC-kid:" line, which --cred and --trust read back, so a peer can be
 * named by kid (RFC 9528 Section 3.5.3: a kid may identify any
 * credential; Section 3.5.3.2: a one-byte kid travels as a CBOR int). */
static void test_x509_kid(void **state)
{
    (void)state;
    char *out;
    int rc = run_cli_fmt(&out,
                         "keygen --type x509 --curve P-256 --kid 2c --json "
                         "--out-cred %s/k.pem --out-key %s/k.key",
                         dir, dir);
    if (rc != 0)
        fail_msg("keygen x509 --kid: exit %d: %s", rc, out);
    assert_int_equal(net_json_valid(out, "keygen", false), 0);
    assert_json_eq(out, "kid_hex", "2c");
    assert_json_eq(out, "type", "x509");
    free(out);
    char path[400];
    snprintf(path, sizeof path, "%s/k.pem", dir);
    char *pem = net_read_file(path);
    assert_non_null(pem);
    assert_true(strncmp(pem, "EDHOC-kid: 2c\n-----BEGIN CERTIFICATE-----\n", 42) == 0);
    free(pem);
    /* Without --kid a certificate has none, and naming it by kid says how
     * to give one. */
    assert_int_equal(cli(&out,
                         "keygen --type x509 --curve P-256 --out-cred %s/n.pem "
                         "--out-key %s/n.key",
                         dir, dir),
                     0);
    assert_null(strstr(out, "kid:"));
    free(out);
    rc = cli(&out,
             "simulate --method 0 --suites 2 --cred-i %s/n.pem --key-i %s/n.key "
             "--id-cred-i kid",
             dir, dir);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "cannot name this X.509 credential by kid: it has no kid "
                                "(give one with --kid-i)"));
    free(out);
    /* Named by kid end to end: the one-byte kid 2c is sent as the CBOR
     * int 0x2c alone (Section 3.5.3.2), and --kid-r names the other. */
    rc = cli(&out,
             "simulate --method 0 --suites 2 --cred-i %s/k.pem --key-i %s/k.key "
             "--cred-r %s/n.pem --key-r %s/n.key --kid-r 4711 --id-cred-i kid "
             "--id-cred-r kid --json",
             dir, dir, dir, dir);
    if (rc != 0)
        fail_msg("simulate with certificates named by kid: exit %d: %s", rc, out);
    assert_non_null(strstr(out, "\"id_cred_i\": \"kid\""));
    free(out);
}

/* keygen --type cwt: a CWT (RFC 8392) for the new key, signed by the
 * issuer key of an earlier keygen, that peers trusting the issuer accept
 * (RFC 9528 Section 3.5.3.1, kcwt). */
static void test_cwt(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(cli(&out,
                         "keygen --type ccs --curve Ed25519 --kid 0a --subject issuer "
                         "--out-cred %s/iss.ccs --out-key %s/iss.key",
                         dir, dir),
                     0);
    free(out);
    int rc = run_cli_fmt(&out,
                         "keygen --type cwt --curve Ed25519 --kid 2a --issuer-key "
                         "%s/iss.key --issuer-kid 0a --issuer me --days 2 --json "
                         "--out-cred %s/d.cwt --out-key %s/d.key",
                         dir, dir, dir);
    if (rc != 0)
        fail_msg("keygen --type cwt: exit %d: %s", rc, out);
    assert_int_equal(net_json_valid(out, "keygen", false), 0);
    assert_json_eq(out, "type", "cwt");
    assert_json_eq(out, "kid_hex", "2a");
    assert_json_eq(out, "issuer_kid_hex", "0a");
    assert_json_eq(out, "credential_format", "cwt_cbor");
    assert_json_eq(out, "certificate_bytes", "null");
    char *nb = json_at(out, "not_before"), *na = json_at(out, "not_after");
    assert_int_equal(strlen(nb), 20);
    assert_int_equal(strlen(na), 20);
    free(nb);
    free(na);
    free(out);
    /* The file is an untagged COSE_Sign1: 84, << {1: -8, 4: h'0a'} >>, {}. */
    char path[400];
    snprintf(path, sizeof path, "%s/d.cwt", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t head[9];
    assert_int_equal(fread(head, 1, sizeof head, f), sizeof head);
    fclose(f);
    static const uint8_t want[] = {0x84, 0x46, 0xa2, 0x01, 0x27, 0x04, 0x41, 0x0a, 0xa0};
    assert_memory_equal(head, want, sizeof want);

    /* An X25519 issuer key cannot sign: exit 3, said so. */
    assert_int_equal(cli(&out,
                         "keygen --type ccs --curve X25519 --out-cred %s/x.ccs "
                         "--out-key %s/x.key",
                         dir, dir),
                     0);
    free(out);
    rc = cli(&out,
             "keygen --type cwt --curve Ed25519 --issuer-key %s/x.key --out-cred "
             "%s/e.cwt --out-key %s/e.key",
             dir, dir, dir);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "an X25519 key cannot sign a CWT"));
    free(out);
    rc = cli(&out, "keygen --type cwt --curve Ed25519 --out-cred %s/e.cwt --out-key %s/e.key", dir,
             dir);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--type cwt needs --issuer-key FILE"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_ccs_every_curve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_x509_every_curve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chain_and_validity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_suite_and_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_simulate_with_keygen_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_kid_avoids_demo_kids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_cred_stdout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_report, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_key_file_safety, setup, teardown),
        cmocka_unit_test_setup_teardown(test_option_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_x509_kid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cwt, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
