/*
 * End-to-end tests of the keys for applications on the command line:
 * `simulate --key-update` (EDHOC_KeyUpdate, RFC 9528 Appendix H) against
 * the RFC 9529 KeyUpdate values of traces 1 and 2; `--export` on simulate
 * and initiator (EDHOC_Exporter, RFC 9528 Section 4.2.1) against values
 * computed here with Python's hmac/hashlib from the traces' PRK_exporter,
 * nothing from our C code; the exact refusal of each bad --export and
 * --key-update; and suite 25, whose application hash SHAKE256 gives no
 * OSCORE context (RFC 8613 Section 3.2.1, RFC 9528 Section 3.6 and
 * Appendix A.1): EDHOC-only in simulate, refused by the initiator before
 * message_1 when OSCORE is to follow.
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

#include "net_test_util.h"
#include "vectors.h"

/* ---- Files and JSON ---- */

static void write_file(const char *name, const void *data, size_t len, mode_t mode, char *path,
                       size_t cap)
{
    snprintf(path, cap, "%s/%s", net_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void write_hex_file(struct vec_scope v, const char *key, const char *name, mode_t mode,
                           char *path, size_t cap)
{
    uint8_t buf[2048];
    char hex[4097];
    hex_encode(buf, vec_hex(v, key, buf, sizeof buf), hex);
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

/* The hex of vector key `key`. */
static void vec_hex_text(struct vec_scope v, const char *key, char *out, size_t cap)
{
    uint8_t buf[256];
    size_t room = (cap - 1) / 2 < sizeof buf ? (cap - 1) / 2 : sizeof buf;
    hex_encode(buf, vec_hex(v, key, buf, room), out);
}

/* Run a Python script with arguments (a shell fragment without single
 * quotes: net_sh quotes the line with them); its standard output, trailing
 * newline removed. Fails the test when Python fails. */
static char *python(const char *name, const char *script, const char *args)
{
    char py[400], cmd[4000];
    snprintf(py, sizeof py, "%s/%s", net_dir, name);
    net_write_file(py, script, 0600);
    snprintf(cmd, sizeof cmd, "python3 %s %s", py, args);
    char *out;
    int rc = net_sh(cmd, &out, 30);
    if (rc != 0)
        fail_msg("%s %s: exit %d: %s", name, args, rc, out);
    size_t n = strlen(out);
    while (n && out[n - 1] == '\n')
        out[--n] = '\0';
    return out;
}

/* The values at PATHS (space-separated, "a/0/b") of a JSON text,
 * space-separated: strings as themselves, others as JSON. */
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
    char doc[400], args[1200];
    snprintf(doc, sizeof doc, "%s/doc.json", net_dir);
    net_write_file(doc, text, 0600);
    snprintf(args, sizeof args, "%s \"%s\"", doc, paths);
    return python("json_at.py", script, args);
}

static void assert_json_eq(const char *text, const char *paths, const char *want)
{
    char *got = json_at(text, paths);
    if (strcmp(got, want) != 0)
        fail_msg("%s is '%s', expected '%s', in:\n%s", paths, got, want, text);
    free(got);
}

/* The value of the trace entry of `side` ("initiator"/"responder"; NULL:
 * the initiator command's trace, which has no side) named `name`. */
static char *trace_value(const char *text, const char *side, const char *name)
{
    static const char script[] =
        "import json, sys\n"
        "doc = json.load(open(sys.argv[1]))\n"
        "for e in doc['trace']:\n"
        "    if e['name'] == sys.argv[3] and sys.argv[2] in ('-', e.get('side')):\n"
        "        print(e['hex']); sys.exit(0)\n"
        "sys.exit('no such trace entry')\n";
    char doc[400], args[1200];
    snprintf(doc, sizeof doc, "%s/trace.json", net_dir);
    net_write_file(doc, text, 0600);
    snprintf(args, sizeof args, "%s \"%s\" \"%s\"", doc, side ? side : "-", name);
    return python("trace_value.py", script, args);
}

/* EDHOC_Exporter(label, context, length) = EDHOC_KDF(PRK_exporter, label,
 * context, length) (RFC 9528 Section 4.2.1), with EDHOC_KDF = HKDF-Expand
 * (RFC 5869) over info = (label: uint, context: bstr, length: uint) as a
 * CBOR sequence (Section 4.1.2), for the SHA-256 suites; computed by
 * Python's hmac, independent of the library. */
static char *exporter_py(const char *prk_hex, unsigned long label, const char *context_hex,
                         unsigned long length)
{
    static const char script[] =
        "import hashlib, hmac, sys\n"
        "def head(major, n):\n"
        "    if n < 24: return bytes([major << 5 | n])\n"
        "    if n < 256: return bytes([major << 5 | 24, n])\n"
        "    if n < 65536: return bytes([major << 5 | 25]) + n.to_bytes(2, 'big')\n"
        "    return bytes([major << 5 | 26]) + n.to_bytes(4, 'big')\n"
        "prk = bytes.fromhex(sys.argv[1]); label = int(sys.argv[2])\n"
        "ctx = bytes.fromhex(sys.argv[3]); length = int(sys.argv[4])\n"
        "info = head(0, label) + head(2, len(ctx)) + ctx + head(0, length)\n"
        "out, t, i = b'', b'', 1\n"
        "while len(out) < length:\n"
        "    t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()\n"
        "    out += t; i += 1\n"
        "print(out[:length].hex())\n";
    char args[400];
    snprintf(args, sizeof args, "%s %lu \"%s\" %lu", prk_hex, label, context_hex, length);
    return python("exporter.py", script, args);
}

/* `edhoc-cli CMD` with --json among the arguments: exit status, standard
 * output in *out (checked against docs/json/<schema>.schema.json),
 * standard error in *err. */
static int cli_json(const char *schema, const char *args, char **out, char **err)
{
    char cmd[6000], errpath[300];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", net_dir);
    snprintf(cmd, sizeof cmd, "%s 2>%s", args, errpath);
    int rc = run_cli(cmd, false, out);
    char *e = net_read_file(errpath);
    if (net_json_valid(*out, schema, false))
        fail_msg("%s: exit %d, output not valid against the schema; stderr:\n%s", args, rc,
                 e ? e : "");
    if (err)
        *err = e ? e : strdup("");
    else
        free(e);
    return rc;
}

/* `edhoc-cli ARGS`, expected to fail with exit status 2 and exactly the
 * one line `want` on standard error, nothing on standard output. */
static void assert_refused(const char *args, const char *want)
{
    char cmd[4000], errpath[300];
    snprintf(errpath, sizeof errpath, "%s/refused.txt", net_dir);
    snprintf(cmd, sizeof cmd, "%s 2>%s", args, errpath);
    char *out;
    int rc = run_cli(cmd, false, &out);
    char *err = net_read_file(errpath);
    char line[1200];
    snprintf(line, sizeof line, "%s\n", want);
    if (rc != 2 || strcmp(err ? err : "", line) != 0 || out[0])
        fail_msg("%s: exit %d, stderr:\n%s\nexpected exit 2 and:\n%s", args, rc, err ? err : "",
                 line);
    free(out);
    free(err);
}

static int setup(void **state)
{
    (void)state;
    snprintf(net_dir, sizeof net_dir, "/tmp/edhoc-cli-export-XXXXXX");
    assert_non_null(mkdtemp(net_dir));
    return 0;
}

/* ---- The RFC 9529 traces through simulate ---- */

/* Trace 1 (method 0, suite 0, x5t): the arguments that reproduce it. */
static void trace1_args(struct vec_scope v, char *args, size_t cap)
{
    char cred_i[300], cred_r[300], key_i[300], key_r[300], eph_i[300], eph_r[300];
    write_der_file(v, "cred_i", "t1_cred_i.der", cred_i, sizeof cred_i);
    write_der_file(v, "cred_r", "t1_cred_r.der", cred_r, sizeof cred_r);
    write_hex_file(v, "sk_i", "t1_key_i.hex", 0600, key_i, sizeof key_i);
    write_hex_file(v, "sk_r", "t1_key_r.hex", 0600, key_r, sizeof key_r);
    write_hex_file(v, "x", "t1_eph_i.hex", 0600, eph_i, sizeof eph_i);
    write_hex_file(v, "y", "t1_eph_r.hex", 0600, eph_r, sizeof eph_r);
    snprintf(args, cap,
             "simulate --method 0 --suites 0 --cred-i %s --key-i %s --cred-r %s --key-r %s "
             "--id-cred-i x5t --id-cred-r x5t --c-i 2d --c-r 18 --ephemeral-i %s --ephemeral-r %s "
             "--message-4",
             cred_i, key_i, cred_r, key_r, eph_i, eph_r);
}

/* Trace 2 (method 3, suites 6,2 then 2 after error code 2, kid). */
static void trace2_args(struct vec_scope v, char *args, size_t cap)
{
    char cred_i[300], cred_r[300], key_i[300], key_r[300], eph_i[300], eph_r[300];
    write_hex_file(v, "cred_i", "t2_cred_i.hex", 0644, cred_i, sizeof cred_i);
    write_hex_file(v, "cred_r", "t2_cred_r.hex", 0644, cred_r, sizeof cred_r);
    write_hex_file(v, "sk_i", "t2_key_i.hex", 0600, key_i, sizeof key_i);
    write_hex_file(v, "sk_r", "t2_key_r.hex", 0600, key_r, sizeof key_r);
    uint8_t x1[64], x2[64];
    char h1[129], h2[129], both[400];
    hex_encode(x1, vec_hex(v, "x_first", x1, sizeof x1), h1);
    hex_encode(x2, vec_hex(v, "x", x2, sizeof x2), h2);
    snprintf(both, sizeof both, "%s\n%s\n", h1, h2);
    write_file("t2_eph_i.hex", both, strlen(both), 0600, eph_i, sizeof eph_i);
    write_hex_file(v, "y", "t2_eph_r.hex", 0600, eph_r, sizeof eph_r);
    snprintf(args, cap,
             "simulate --method 3 --suites 6,2 --suites-r 2 --cred-i %s --key-i %s --cred-r %s "
             "--key-r %s --c-i 0e,37 --c-r 27 --ephemeral-i %s --ephemeral-r %s --message-4",
             cred_i, key_i, cred_r, key_r, eph_i, eph_r);
}

/* RFC 9528 Appendix H: new PRK_out = EDHOC_KDF(PRK_out, 11, context,
 * hash_length), new PRK_exporter = EDHOC_KDF(new PRK_out, 10, h'',
 * hash_length), and the OSCORE Master Secret / Salt of Appendix A.1 from
 * it. RFC 9529 prints these for trace 1 (Section 2.5: context
 * d6be1696..890c, PRK_out after da6eacd9..daad, PRK_exporter after
 * 0014d252..2c05, Master Secret ee0ff542..bbe5, Salt 80cede2a1e5aab48) and
 * trace 2 (Section 3.5); both sides of the run must reach them. */
static void check_key_update(const char *trace_file,
                             void (*make_args)(struct vec_scope, char *, size_t))
{
    struct vec_scope v = vec_load(trace_file);
    char base[3000], args[3400], ctx[80];
    make_args(v, base, sizeof base);
    vec_hex_text(v, "keyupdate_context", ctx, sizeof ctx);
    snprintf(args, sizeof args, "%s --key-update %s --json --export-secrets --trace", base, ctx);
    char *out;
    int rc = cli_json("simulate", args, &out, NULL);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    char want[1200], a[520], b[520], c[520], d[520], e[520], f[520], g[520];
    vec_hex_text(v, "prk_out", a, sizeof a);
    vec_hex_text(v, "prk_out_after_keyupdate", b, sizeof b);
    vec_hex_text(v, "prk_exporter_after_keyupdate", c, sizeof c);
    vec_hex_text(v, "oscore_master_secret_after_keyupdate", d, sizeof d);
    vec_hex_text(v, "oscore_master_salt_after_keyupdate", e, sizeof e);
    snprintf(want, sizeof want, "%s true %s %s %s %s %s", ctx, a, b, c, d, e);
    assert_json_eq(out,
                   "key_update/context key_update/sides_agree key_update/prk_out_before "
                   "key_update/prk_out_after key_update/prk_exporter_after "
                   "key_update/oscore/master_secret key_update/oscore/master_salt",
                   want);
    /* The handshake's own context is still reported as it was derived. */
    vec_hex_text(v, "oscore_master_secret", f, sizeof f);
    vec_hex_text(v, "oscore_client_sender_id", g, sizeof g);
    snprintf(want, sizeof want, "%s %s %s", f, g, g);
    assert_json_eq(out, "oscore/master_secret oscore/sender_id key_update/oscore/sender_id", want);
    /* --trace: RFC 9529's names for the values after the update, on both
     * sides. */
    static const char *const sides[] = {"initiator", "responder"};
    for (int k = 0; k < 2; k++) {
        char *t = trace_value(out, sides[k], "context for KeyUpdate");
        assert_string_equal(t, ctx);
        free(t);
        t = trace_value(out, sides[k], "PRK_out after KeyUpdate");
        assert_string_equal(t, b);
        free(t);
        t = trace_value(out, sides[k], "PRK_exporter after KeyUpdate");
        assert_string_equal(t, c);
        free(t);
        t = trace_value(out, sides[k], "OSCORE Master Secret after KeyUpdate");
        assert_string_equal(t, d);
        free(t);
        t = trace_value(out, sides[k], "OSCORE Master Salt after KeyUpdate");
        assert_string_equal(t, e);
        free(t);
    }
    free(out);

    /* Without --export-secrets the secrets are null, the rest stays. */
    snprintf(args, sizeof args, "%s --key-update %s --json", base, ctx);
    rc = cli_json("simulate", args, &out, NULL);
    assert_int_equal(rc, 0);
    snprintf(want, sizeof want, "true null null null null %s", g);
    assert_json_eq(out,
                   "key_update/sides_agree key_update/prk_out_before key_update/prk_out_after "
                   "key_update/prk_exporter_after key_update/oscore/master_secret "
                   "key_update/oscore/sender_id",
                   want);
    free(out);

    /* The text report prints the same values. */
    snprintf(args, sizeof args, "%s --key-update %s --export-secrets", base, ctx);
    rc = run_cli(args, false, &out);
    assert_int_equal(rc, 0);
    snprintf(want, sizeof want, "  PRK_out after       %s\n", b);
    assert_non_null(strstr(out, want));
    snprintf(want, sizeof want, "  PRK_exporter after  %s\n", c);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "both sides derived the same PRK_out"));
    snprintf(want, sizeof want, "  master secret %s\n", d);
    assert_non_null(strstr(out, want));
    free(out);
}

static void test_key_update_rfc9529_trace1(void **state)
{
    (void)state;
    check_key_update("rfc9529-trace1.json", trace1_args);
}

static void test_key_update_rfc9529_trace2(void **state)
{
    (void)state;
    check_key_update("rfc9529-trace2.json", trace2_args);
}

/* EDHOC_Exporter on the RFC 9529 traces: a Private Use label computed here
 * independently (trace 1: EDHOC_Exporter(32768, h'0102', 16) with
 * PRK_exporter 2aaec8fc..f51a, info 19 8000 42 0102 10, gives
 * c347ab40bb41c6dc9c9260c2e772b989), and labels 0 and 1 with h'', which
 * RFC 9528 Appendix A.1 makes the OSCORE Master Secret and Salt (RFC 9529
 * prints them). */
static void test_export_rfc9529_traces(void **state)
{
    (void)state;
    struct vec_scope v = vec_load("rfc9529-trace1.json");
    char base[3000], args[3400], prk[200], ms[100], salt[100], want[600];
    trace1_args(v, base, sizeof base);
    vec_hex_text(v, "prk_exporter", prk, sizeof prk);
    char *private_use = exporter_py(prk, 32768, "0102", 16);
    assert_string_equal(private_use, "c347ab40bb41c6dc9c9260c2e772b989");
    snprintf(args, sizeof args,
             "%s --export 32768,0102,16 --export 0,,16 --export 1,,8 --json --export-secrets",
             base);
    char *out;
    int rc = cli_json("simulate", args, &out, NULL);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    vec_hex_text(v, "oscore_master_secret", ms, sizeof ms);
    vec_hex_text(v, "oscore_master_salt", salt, sizeof salt);
    snprintf(want, sizeof want, "%s %s %s true false 32768 0102 16", private_use, ms, salt);
    assert_json_eq(out,
                   "exports/0/value exports/1/value exports/2/value exports_match "
                   "exports/0/after_key_update exports/0/label exports/0/context exports/0/length",
                   want);
    assert_json_eq(out, "exports/0/label_use", "Private Use");
    assert_json_eq(out, "exports/1/label_use", "Derived OSCORE Master Secret");
    assert_json_eq(out, "exports/2/label_use", "Derived OSCORE Master Salt");
    free(out);

    /* Text: one line per value. */
    snprintf(args, sizeof args, "%s --export 32768,0102,16 --export-secrets", base);
    rc = run_cli(args, false, &out);
    assert_int_equal(rc, 0);
    snprintf(want, sizeof want, "  EDHOC_Exporter(32768, h'0102', 16) = %s  [Private Use]\n",
             private_use);
    if (!strstr(out, want))
        fail_msg("no '%s' in:\n%s", want, out);
    free(out);

    /* After --key-update the values come from the new PRK_exporter
     * (RFC 9528 Appendix H: "enables the derivation of new application
     * keys"): 0014d252..2c05 gives 792d5053a9a4d2ee8f22f5f079edd3f9. */
    char ctx[80], prk_after[200];
    vec_hex_text(v, "keyupdate_context", ctx, sizeof ctx);
    vec_hex_text(v, "prk_exporter_after_keyupdate", prk_after, sizeof prk_after);
    char *after = exporter_py(prk_after, 32768, "0102", 16);
    assert_string_equal(after, "792d5053a9a4d2ee8f22f5f079edd3f9");
    snprintf(args, sizeof args,
             "%s --key-update %s --export 32768,0102,16 --export 0,,16 --json --export-secrets",
             base, ctx);
    rc = cli_json("simulate", args, &out, NULL);
    assert_int_equal(rc, 0);
    char ms_after[100];
    vec_hex_text(v, "oscore_master_secret_after_keyupdate", ms_after, sizeof ms_after);
    snprintf(want, sizeof want, "%s %s true", after, ms_after);
    assert_json_eq(out, "exports/0/value exports/1/value exports/0/after_key_update", want);
    free(out);
    free(after);
    free(private_use);

    /* Trace 2 (method 3): an Expert Review label, empty context, 32 bytes:
     * PRK_exporter e14d0669..46db, info 18 18 40 18 20, gives
     * 83702627c03a9a5c73085a61b44add90ad000f489b35e21bb52749fd21163144. */
    struct vec_scope v2 = vec_load("rfc9529-trace2.json");
    trace2_args(v2, base, sizeof base);
    vec_hex_text(v2, "prk_exporter", prk, sizeof prk);
    char *t2 = exporter_py(prk, 24, "", 32);
    assert_string_equal(t2, "83702627c03a9a5c73085a61b44add90ad000f489b35e21bb52749fd21163144");
    snprintf(args, sizeof args, "%s --export 24,,32 --json --export-secrets", base);
    rc = cli_json("simulate", args, &out, NULL);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    snprintf(want, sizeof want, "%s  Unassigned (Expert Review range)", t2);
    assert_json_eq(out, "exports/0/value exports/0/context exports/0/label_use", want);
    free(out);
    free(t2);
}

/* Each bad --export / --key-update: exit 2 and the reason, before any
 * handshake (nothing on standard output). The labels follow the EDHOC
 * Exporter Label registry (RFC 9528 Section 10.1): 0 and 1 OSCORE, 2-22
 * Unassigned and 23 Reserved in the Standards Action range 0 to 23,
 * 24-32767 Expert Review, 32768-65535 Private Use. */
static void test_export_refusals(void **state)
{
    (void)state;
    static const char needs_secrets[] =
        "--export prints keying material derived from PRK_exporter, a secret: add "
        "--export-secrets to print it";
    static const char *const cmds[] = {"simulate", "initiator coap://127.0.0.1:9"};
    static const char *const names[] = {"simulate", "initiator"};
    for (int k = 0; k < 2; k++) {
        char args[600], want[900];
        snprintf(args, sizeof args, "%s --export 32768,,16", cmds[k]);
        snprintf(want, sizeof want, "edhoc-cli %s: %s", names[k], needs_secrets);
        assert_refused(args, want);
        static const struct {
            const char *spec;
            const char *why;
        } bad[] = {
            {"2,,16",
             "label 2 is unassigned in the range 0..23 that the EDHOC Exporter Label registry "
             "keeps for Standards Action (RFC 9528 Section 10.1): only a future RFC may give it a "
             "use; take one of 24..32767 (Expert Review) or 32768..65535 (Private Use)"},
            {"22,,16",
             "label 22 is unassigned in the range 0..23 that the EDHOC Exporter Label registry "
             "keeps for Standards Action (RFC 9528 Section 10.1): only a future RFC may give it a "
             "use; take one of 24..32767 (Expert Review) or 32768..65535 (Private Use)"},
            {"23,,16",
             "label 23 is Reserved in the EDHOC Exporter Label registry (RFC 9528 Section 10.1); "
             "take one of 24..32767 (Expert Review) or 32768..65535 (Private Use)"},
            {"65536,,16",
             "label 65536 is outside the EDHOC Exporter Label registry, which ends at 65535 (RFC "
             "9528 Section 10.1)"},
            {"x,,16", "LABEL: expected a decimal number, got 'x'"},
            {"-1,,16", "LABEL: expected a decimal number, got '-1'"},
            {"32768,0g,16", "CONTEXT: expected hex of at most 256 bytes, got '0g'"},
            {"32768,,0", "LENGTH: expected 1..8160 bytes, got '0'"},
            {"32768,,8161", "LENGTH: expected 1..8160 bytes, got '8161'"},
            {"32768,16", "expected LABEL,CONTEXT_HEX,LENGTH (e.g. 32768,0102,16; an empty context: "
                         "32768,,16), got '32768,16'"},
            {"32768,,16,1",
             "expected LABEL,CONTEXT_HEX,LENGTH (e.g. 32768,0102,16; an empty context: "
             "32768,,16), got '32768,,16,1'"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            snprintf(args, sizeof args, "%s --export-secrets --export %s", cmds[k], bad[i].spec);
            snprintf(want, sizeof want, "edhoc-cli %s: --export: %s", names[k], bad[i].why);
            assert_refused(args, want);
        }
        snprintf(args, sizeof args, "%s --export-secrets", cmds[k]);
        for (int i = 0; i < 9; i++)
            strcat(args, " --export 32768,,16");
        snprintf(want, sizeof want, "edhoc-cli %s: at most 8 --export", names[k]);
        assert_refused(args, want);
    }
    assert_refused("simulate --key-update 0g",
                   "edhoc-cli simulate: --key-update: expected hex of at most 256 bytes, got '0g'");
    /* The edges that are accepted: labels 1, 24 and 65535, 8160 bytes. */
    char *out;
    int rc = cli_json("simulate",
                      "simulate --json --export-secrets --export 1,,8 --export 24,,16 "
                      "--export 65535,00,8160 --key-update ''",
                      &out, NULL);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    assert_json_eq(out, "exports/# exports/2/length key_update/context", "3 8160 ");
    free(out);
}

/* ---- Suite 25 ---- */

/* RFC 9528 Appendix A.1: "The HKDF Algorithm SHALL be the one based on
 * the application hash algorithm of the selected cipher suite"; suite 25's
 * is SHAKE256 (Section 3.6, registry value 25), and RFC 8613 Section
 * 3.2.1: "The HKDF MUST be one of the HMAC-based HKDF [RFC5869]
 * algorithms". So simulate completes EDHOC and says why there is no
 * OSCORE context, with exit 0; KeyUpdate and the exporter still work. */
static void test_suite25_simulate_edhoc_only(void **state)
{
    (void)state;
    char *out;
    int rc = cli_json("simulate",
                      "simulate --json --suites 25 --key-update 01 --export 32768,,32 "
                      "--export-secrets",
                      &out, NULL);
    if (rc != 0)
        fail_msg("exit %d:\n%s", rc, out);
    assert_json_eq(out, "outcome suite oscore oscore_contexts_match key_update/oscore",
                   "ok 25 null null null");
    /* SHAKE256's hash_length in EDHOC is 64 bytes: PRK_out is 128 hex digits. */
    static const char script[] =
        "import json, sys\n"
        "d = json.load(open(sys.argv[1]))\n"
        "k = d['key_update']\n"
        "print(len(k['prk_out_after']), len(d['exports'][0]['value']), k['sides_agree'],\n"
        "      d['exports_match'], k['prk_out_before'] != k['prk_out_after'],\n"
        "      'RFC 8613 Section 3.2.1' in d['oscore_unavailable'],\n"
        "      'RFC 9528 Section 3.6' in d['oscore_unavailable'])\n";
    char doc[300];
    snprintf(doc, sizeof doc, "%s/s25.json", net_dir);
    net_write_file(doc, out, 0600);
    char *facts = python("s25.py", script, doc);
    assert_string_equal(facts, "128 64 True True True True True");
    free(facts);
    free(out);

    rc = run_cli("simulate --suites 25", false, &out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "Outcome: ok, suite 25, 1 attempt; EDHOC only\n"));
    assert_non_null(strstr(out, "OSCORE: not available: no OSCORE context for suite 25: its "
                                "application hash SHAKE256 (RFC 9528 Section 3.6) has no "
                                "HMAC-based HKDF, the only kind RFC 8613 Section 3.2.1 derives "
                                "OSCORE keys with"));
    free(out);

    /* Suite 24 (SHA-384, an HMAC hash) keeps its OSCORE context. */
    rc = cli_json("simulate", "simulate --json --suites 24", &out, NULL);
    assert_int_equal(rc, 0);
    assert_json_eq(out, "oscore_contexts_match oscore_unavailable", "true null");
    free(out);
}

/* No datagram reached the socket. */
static void assert_nothing_sent(int fd)
{
    uint8_t buf[64];
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n >= 0)
        fail_msg("a datagram of %zd bytes was sent", n);
}

/* The initiator refuses at the start, before message_1, when suite 25 may
 * be selected (anywhere in SUITES_I: the responder's error code 2 may
 * settle on it, RFC 9528 Section 5.2.2) and OSCORE is to follow. */
static void test_suite25_initiator_refused_before_message_1(void **state)
{
    (void)state;
    uint16_t port = 0;
    int fd = net_silent_socket(&port);
    assert_true(fd >= 0);
    static const char reason[] =
        "no OSCORE context for suite 25: its application hash SHAKE256 (RFC 9528 Section 3.6) "
        "has no HMAC-based HKDF, the only kind RFC 8613 Section 3.2.1 derives OSCORE keys with "
        "(RFC 9528 Appendix A.1 takes the OSCORE HKDF from the application hash)";
    char args[600], want[1200], conf[300];
    snprintf(args, sizeof args, "initiator coap://127.0.0.1:%u --suites 25 --timeout 2", port);
    snprintf(want, sizeof want,
             "edhoc-cli initiator: suite 25 may be selected and OSCORE (--request) is to follow, "
             "but %s; for an EDHOC-only handshake give --request none, or leave suite 25 out of "
             "--suites",
             reason);
    assert_refused(args, want);
    snprintf(args, sizeof args,
             "initiator coap://127.0.0.1:%u --suites 2,25 --request 'GET /time' --timeout 2", port);
    assert_refused(args, want);
    snprintf(conf, sizeof conf, "%s/ctx.conf", net_dir);
    snprintf(args, sizeof args,
             "initiator coap://127.0.0.1:%u --suites 25 --request none --export-oscore-conf %s "
             "--state-dir none --timeout 2",
             port, conf);
    snprintf(want, sizeof want,
             "edhoc-cli initiator: suite 25 may be selected and an OSCORE context "
             "(--export-oscore-conf) is to follow, but %s; for an EDHOC-only handshake give "
             "--request none without --export-oscore-conf, or leave suite 25 out of --suites",
             reason);
    assert_refused(args, want);
    assert_nothing_sent(fd);
    close(fd);
}

/* initiator --export against a real responder: EDHOC_Exporter from the
 * PRK_exporter its --trace prints, computed here independently; label 0
 * with h'' is the OSCORE Master Secret (RFC 9528 Appendix A.1), which
 * the responder's answer to the OSCORE request proves shared. */
static void test_initiator_export(void **state)
{
    (void)state;
    struct net_proc r;
    assert_int_equal(net_responder_start(&r, "resp", "--listen 127.0.0.1:0 --workers 1"), 0);
    char args[600], *out, *err;
    snprintf(args, sizeof args,
             "initiator coap://127.0.0.1:%u --suites 2 --json --trace --export-secrets "
             "--export 32768,0102,16 --export 0,,16 --export 40000,,64",
             r.port);
    int rc = cli_json("initiator", args, &out, &err);
    if (rc != 0)
        fail_msg("exit %d: %s\n%s", rc, err, out);
    char *prk = trace_value(out, NULL, "PRK_exporter");
    char *a = exporter_py(prk, 32768, "0102", 16);
    char *b = exporter_py(prk, 40000, "", 64);
    char *ms = json_at(out, "oscore/master_secret");
    char want[800];
    snprintf(want, sizeof want, "%s %s %s false 2.05 null", a, ms, b);
    assert_json_eq(out,
                   "exports/0/value exports/1/value exports/2/value exports/0/after_key_update "
                   "responses/0/code oscore_unavailable",
                   want);
    free(prk);
    free(a);
    free(b);
    free(ms);
    free(out);
    free(err);
    net_proc_stop(&r, SIGTERM, 5000);
}

/* initiator --request none with suite 25 against a responder that offers
 * it (--suites 25,2): an EDHOC-only handshake on both sides, the exporter
 * still there, no OSCORE context and the reason said (RFC 8613 Section
 * 3.2.1 has no HKDF for SHAKE256). The responder answers message_3 with
 * 2.04 and logs the handshake as EDHOC only, storing no context. */
static void test_initiator_suite25_edhoc_only(void **state)
{
    (void)state;
    struct net_proc r;
    assert_int_equal(net_responder_start(&r, "resp25", "--listen 127.0.0.1:0 --suites 25,2"), 0);
    char args[600], *out, *err;
    snprintf(args, sizeof args,
             "initiator coap://127.0.0.1:%u --suites 25 --request none --json --export-secrets "
             "--export 32768,,16",
             r.port);
    int rc = cli_json("initiator", args, &out, &err);
    net_proc_stop(&r, SIGTERM, 5000);
    if (rc != 0)
        fail_msg("exit %d: %s\n%s", rc, err, out);
    assert_json_eq(out, "outcome suite oscore responses/# exports/0/length", "ok 25 null 0 16");
    char *why = json_at(out, "oscore_unavailable");
    assert_non_null(strstr(why, "RFC 8613 Section 3.2.1"));
    free(why);
    free(out);
    free(err);
    char *log = net_read_file(r.log);
    assert_non_null(log);
    assert_non_null(strstr(log, "suite 25: EDHOC only for suite 25"));
    assert_non_null(strstr(log, "suite=25"));
    assert_non_null(strstr(log, "outcome=ok: EDHOC only: no OSCORE context for this suite"));
    assert_non_null(strstr(log, "0 contexts"));
    free(log);
}

/* A responder with its default suites serves 25 too ("--suites LIST:
 * Cipher suites supported (default: all)", man page): an initiator that
 * offers only 25 gets an EDHOC-only handshake, no context stored. */
static void test_responder_default_suites_serve_25(void **state)
{
    (void)state;
    struct net_proc r;
    assert_int_equal(net_responder_start(&r, "resp-default", "--listen 127.0.0.1:0"), 0);
    char args[600], *out, *err;
    snprintf(args, sizeof args, "initiator coap://127.0.0.1:%u --suites 25 --request none --json",
             r.port);
    int rc = cli_json("initiator", args, &out, &err);
    net_proc_stop(&r, SIGTERM, 5000);
    if (rc != 0)
        fail_msg("exit %d: %s\n%s", rc, err, out);
    assert_json_eq(out, "outcome suite oscore", "ok 25 null");
    free(out);
    free(err);
    char *log = net_read_file(r.log);
    assert_non_null(log);
    assert_non_null(strstr(log, "outcome=ok: EDHOC only: no OSCORE context for this suite"));
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_update_rfc9529_trace1),
        cmocka_unit_test(test_key_update_rfc9529_trace2),
        cmocka_unit_test(test_export_rfc9529_traces),
        cmocka_unit_test(test_export_refusals),
        cmocka_unit_test(test_suite25_simulate_edhoc_only),
        cmocka_unit_test(test_suite25_initiator_refused_before_message_1),
        cmocka_unit_test_teardown(test_initiator_export, net_test_teardown),
        cmocka_unit_test_teardown(test_initiator_suite25_edhoc_only, net_test_teardown),
        cmocka_unit_test_teardown(test_responder_default_suites_serve_25, net_test_teardown),
    };
    return cmocka_run_group_tests_name("cli_export", tests, setup, net_group_teardown);
}
