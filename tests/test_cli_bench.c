/*
 * End-to-end tests of `edhoc-cli bench`: --quick runs of the three
 * benchmarks, checking that every expected row is there with positive,
 * finite numbers, that the JSON matches its schema (docs/json/bench and
 * load.schema.json), the CSV is rectangular per table and the SVG is
 * well-formed XML; runs stopped by SIGINT/SIGTERM report what completed.
 * Times are never asserted. The load generator is test_cli_bench_load.c.
 */
#include "cli_bench_test_common.h"

/* ---- Tests ---- */

static void test_crypto_rows(void **state)
{
    (void)state;
    char *out = run_ok("bench crypto --quick");
    static const char *const algos[] = {"Ed25519", "Ed448", "ES256", "ES384"};
    static const char *const sizes[] = {"16", "32", "128", "1024"};
    for (int a = 0; a < 4; a++) {
        for (int s = 0; s < 4; s++) {
            /* | Algo | Implementation | Message size | Signing | Verifying | */
            char buf[2048];
            char *cells[MAX_CELLS];
            static const int idx[2] = {0, 2};
            const char *key[2] = {algos[a], sizes[s]};
            int n = md_find_row_at(out, "Signatures", idx, key, 2, buf, sizeof buf, cells);
            if (n == 0)
                fail_msg("signature row %s %s missing", algos[a], sizes[s]);
            assert_int_equal(n, 5);
            assert_true(strncmp(cells[1], "OpenSSL", 7) == 0);
            assert_positive_cell(cells[3], algos[a]);
            assert_positive_cell(cells[4], algos[a]);
        }
    }
    /* issue #18: one row per backend, OpenSSL's first; libsodium's only
     * where libsodium implements the operation (Ed25519: 4 sizes x 3,
     * Ed448, ES256, ES384: 4 sizes x 2). */
    assert_int_equal(md_count_rows(out, "Signatures"), 36);

    static const char *const curves[] = {"X25519", "X448", "P-256", "P-384"};
    for (int c = 0; c < 4; c++) {
        const char *key[1] = {curves[c]};
        check_row(out, "Key generation and ECDH", key, 1, 4, 2, 3);
    }
    assert_int_equal(md_count_rows(out, "Key generation and ECDH"), 3 + 3 * 2);
    assert_int_equal(md_count_rows(out, "AEAD"), 5 * 3 + 4 * 5 * 2);
    static const char *const aeads[] = {"AES-CCM-16-64-128", "AES-CCM-16-128-128", "A128GCM",
                                        "A256GCM", "ChaCha20/Poly1305"};
    for (int a = 0; a < 5; a++) {
        char buf[2048];
        char *cells[MAX_CELLS];
        const char *key[1] = {aeads[a]};
        int n = md_find_row(out, "AEAD", key, 1, buf, sizeof buf, cells);
        if (n == 0)
            fail_msg("AEAD row %s missing", aeads[a]);
        assert_int_equal(n, 5);
        assert_positive_cell(cells[3], aeads[a]);
        assert_positive_cell(cells[4], aeads[a]);
    }
    static const char *const hashes[] = {"SHA-256", "SHA-384", "SHAKE256"};
    for (int h = 0; h < 3; h++) {
        const char *key[1] = {hashes[h]};
        check_row(out, "Hash and HKDF", key, 1, 5, 2, 4);
    }
    free(out);
}

static void test_handshake_rows_and_memory(void **state)
{
    (void)state;
    char *out = run_ok("bench handshake --quick");
    static const char *const rows[][3] = {
        {"0", "x5chain", "0"}, {"0", "x5chain", "2"}, {"0", "x5t", "0"},
        {"0", "x5t", "2"},     {"3", "kid", "0"},     {"3", "kid", "2"},
    };
    /* | Method | ID_CRED | Suite | Implementation | Total / OpenSSL's | I | I floor | R |
     *   R floor | Total | Floor | Ratio | Lookup | Without lookup | Calls | Bytes |
     * (issue #18: each configuration under OpenSSL, libsodium and auto) */
    for (size_t i = 0; i < 6; i++)
        check_row(out, "EDHOC handshake (in process)", rows[i], 3, 16, 4, 15);
    assert_int_equal(md_count_rows(out, "EDHOC handshake (in process)"), 18);

    /* The state sizes are those of this build's structs. */
    char buf[2048];
    char *cells[MAX_CELLS];
    const char *key_s[1] = {"struct edhoc_session"};
    assert_int_equal(
        md_find_row(out, "Memory per handshake and per context", key_s, 1, buf, sizeof buf, cells),
        4);
    assert_int_equal(strtol(cells[1], NULL, 10), (long)sizeof(struct edhoc_session));
    const char *key_o[1] = {"struct oscore_context"};
    assert_int_equal(
        md_find_row(out, "Memory per handshake and per context", key_o, 1, buf, sizeof buf, cells),
        4);
    assert_int_equal(strtol(cells[1], NULL, 10), (long)sizeof(struct oscore_context));
    const char *key_r[1] = {"struct edhoc_received"};
    assert_int_equal(
        md_find_row(out, "Memory per handshake and per context", key_r, 1, buf, sizeof buf, cells),
        4);
    assert_int_equal(strtol(cells[1], NULL, 10), (long)sizeof(struct edhoc_received));

    /* The targets the issue names are reported with their measured ratio. */
    const char *t1[1] = {"Handshake / crypto floor, method 3, kid, suite 0"};
    check_row(out, "Targets", t1, 1, 4, 1, 1);
    const char *t2[1] = {"Handshake / crypto floor, method 0, x5t, suite 2"};
    check_row(out, "Targets", t2, 1, 4, 1, 1);
    const char *t3[1] = {"Handshake / crypto floor, method 0, x5chain, suite 2"};
    check_row(out, "Targets", t3, 1, 4, 1, 1);
    /* issue #18: the composite against OpenSSL alone, suite 0. */
    const char *t4[1] = {"Handshake with auto / with OpenSSL alone, method 0, x5t, suite 0"};
    check_row(out, "Targets", t4, 1, 4, 1, 1);
    const char *t5[1] = {"Handshake with auto / with OpenSSL alone, method 3, kid, suite 0"};
    check_row(out, "Targets", t5, 1, 4, 1, 1);
    free(out);
}

static void test_handshake_other_suites(void **state)
{
    (void)state;
    char *out = run_ok("bench handshake --quick --suites 3,6");
    static const char *const rows[][3] = {
        {"0", "x5chain", "3"}, {"0", "x5t", "3"}, {"3", "kid", "3"},
        {"0", "x5chain", "6"}, {"0", "x5t", "6"}, {"3", "kid", "6"},
    };
    for (size_t i = 0; i < 6; i++)
        check_row(out, "EDHOC handshake (in process)", rows[i], 3, 16, 4, 15);
    assert_int_equal(md_count_rows(out, "EDHOC handshake (in process)"), 18);
    free(out);
}

static void test_oscore_rows(void **state)
{
    (void)state;
    char *out = run_ok("bench oscore --quick");
    static const char *const aeads[] = {"AES-CCM-16-64-128", "AES-CCM-16-128-128", "A128GCM",
                                        "A256GCM", "ChaCha20/Poly1305"};
    static const char *const sizes[] = {"10", "20", "50", "100", "200", "500", "1000"};
    for (int a = 0; a < 5; a++)
        for (int s = 0; s < 7; s++) {
            const char *key[2] = {aeads[a], sizes[s]};
            check_row(out, "OSCORE protect and unprotect", key, 2, 10, 2, 9);
        }
    assert_int_equal(md_count_rows(out, "OSCORE protect and unprotect"), 35);
    const char *t[1] = {
        "OSCORE protect + unprotect / raw AEAD, 100 bytes, AES-CCM-16-64-128, request"};
    check_row(out, "Targets", t, 1, 4, 1, 1);
    free(out);
}

/* Contexts written to a state database and loaded by the responder
 * engine: the row, the engine's size per context, and the target. */
static void test_contexts(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run_cli("bench contexts --contexts 0", true, &out), 2);
    assert_non_null(strstr(out, "--contexts"));
    free(out);
    out = run_ok("bench contexts --contexts 3000");
    const char *key[1] = {"3000"};
    char buf[2048];
    char *cells[MAX_CELLS];
    assert_int_equal(
        md_find_row(out, "Established OSCORE contexts in memory", key, 1, buf, sizeof buf, cells),
        8);
    /* The engine's own bookkeeping stays within the 256-byte budget. */
    long engine = strtol(cells[6], NULL, 10);
    assert_true(engine > 0 && engine <= 256);
    assert_positive_cell(cells[1], "contexts");
    assert_positive_cell(cells[2], "contexts");
    assert_positive_cell(cells[4], "contexts");
    const char *t[1] = {"RSS with 1,000,000 established contexts loaded (extrapolated)"};
    assert_int_equal(md_find_row(out, "Targets", t, 1, buf, sizeof buf, cells), 4);
    char *unit;
    assert_true(strtod(cells[1], &unit) > 0);
    assert_string_equal(unit, " MiB");
    assert_string_equal(cells[2], "at most 512.00 MiB");
    free(out);
}

/* The SVG at path parses as XML; bars: the bars of the bar charts;
 * lines: "NxP ..." N polylines of P points each. Returns system()'s
 * status (0: as expected). */
static int svg_counts(const char *path, int bars, const char *lines)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "python3 - '%s' %d '%s' <<'EOF'\n"
             "import sys, collections, xml.etree.ElementTree as ET\n"
             "root = ET.parse(sys.argv[1]).getroot()\n"
             "ns = '{http://www.w3.org/2000/svg}'\n"
             "assert root.tag == ns + 'svg', root.tag\n"
             "bars = [r for r in root.iter(ns + 'rect') if r.get('height') == '11']\n"
             "assert len(bars) == int(sys.argv[2]), len(bars)\n"
             "got = collections.Counter(len(l.get('points').split())\n"
             "                          for l in root.iter(ns + 'polyline'))\n"
             "want = collections.Counter()\n"
             "for w in sys.argv[3].split():\n"
             "    n, p = w.split('x')\n"
             "    want[int(p)] += int(n)\n"
             "assert got == want, (got, want)\n"
             "EOF",
             path, bars, lines);
    return system(cmd);
}

static void test_json_and_svg(void **state)
{
    (void)state;
    if (!have_python())
        skip();
    char json_path[512], svg_path[512], args[1200];
    snprintf(json_path, sizeof json_path, "%s/bench.json", workdir);
    snprintf(svg_path, sizeof svg_path, "%s/bench.svg", workdir);
    snprintf(args, sizeof args, "bench all --quick --json --svg %s > %s", svg_path, json_path);
    char *out = run_ok(args);
    free(out);
    char *doc = net_read_file(json_path);
    assert_non_null(doc);
    assert_int_equal(net_json_valid(doc, "bench", false), 0);
    free(doc);

    /* Every table, every number finite (and positive where it is a time or
     * a ratio), the row counts of the three benchmarks. */
    char cmd[4096];
    snprintf(
        cmd, sizeof cmd,
        "python3 - '%s' <<'EOF'\n"
        "import json, math, sys\n"
        "d = json.load(open(sys.argv[1]))\n"
        "t = {x['name']: x for x in d['tables']}\n"
        "want = {'signatures': 36, 'ecdh': 9, 'aead': 55, 'hkdf': 7, 'handshake': 18,\n"
        "        'memory': 6, 'oscore': 35}\n"
        "assert set(t) == set(want), sorted(t)\n"
        "for name, n in want.items():\n"
        "    assert len(t[name]['rows']) == n, (name, len(t[name]['rows']))\n"
        "    kinds = {c['key']: c['kind'] for c in t[name]['columns']}\n"
        "    for row in t[name]['rows']:\n"
        "        assert set(row) == set(kinds), (name, row)\n"
        "        for k, kind in kinds.items():\n"
        "            v = row[k]\n"
        "            if kind == 'stat':\n"
        "                assert 0 < v['min_us'] <= v['median_us'] < 1e7, (name, k, v)\n"
        "                assert v['samples'] >= 1 and v['batch'] >= 1\n"
        "            elif kind in ('number', 'ratio'):\n"
        "                assert isinstance(v, (int, float)) and math.isfinite(v) and v > 0, (name, "
        "k, v)\n"
        "            elif kind == 'int':\n"
        "                assert isinstance(v, int) and v >= 0, (name, k, v)\n"
        "            else:\n"
        "                assert isinstance(v, str) and v, (name, k, v)\n"
        "assert len(d['targets']) >= 5\n"
        "for g in d['targets']:\n"
        "    assert math.isfinite(g['value']) and g['value'] > 0 and g['met'] in (True, False)\n"
        /* The backend the command ran on: EDHOC_CRYPTO's, auto by default. */
        "import os\n"
        "want_impl = {'openssl': 'OpenSSL', 'sodium': 'libsodium'}.get(\n"
        "    os.environ.get('EDHOC_CRYPTO', 'auto'), 'auto (')\n"
        "assert d['implementation'].startswith(want_impl), d['implementation']\n"
        "assert d['command'] == 'bench' and d['mode'] == 'all' and d['partial'] is False\n"
        "EOF",
        json_path);
    assert_int_equal(system(cmd), 0);

    /* The SVG parses as XML and holds every chart: bars for key generation
     * and ECDH (9 rows x 2), hash and HKDF (7 x 3) and the handshakes (18
     * x 2); lines for the signatures (4 algorithms x 2, over 4 sizes, one
     * point per backend: 3 for Ed25519, 2 for the others), the AEADs (5 x 2,
     * over 5 sizes; 3 backends for ChaCha20/Poly1305, 2 for the others) and
     * OSCORE (5 AEADs x 2, over 7 sizes). */
    assert_int_equal(svg_counts(svg_path, 18 + 21 + 36, "18x4 22x5 10x7"), 0);
}

/* issue 14: "bench crypto --svg writes an empty chart and exits 0". The
 * crypto tables are drawn; a benchmark with nothing to draw refuses --svg
 * before it runs (exit 2) rather than writing an empty chart. */
static void test_crypto_svg(void **state)
{
    (void)state;
    if (!have_python())
        skip();
    char svg_path[512], args[800];
    snprintf(svg_path, sizeof svg_path, "%s/crypto.svg", workdir);
    snprintf(args, sizeof args, "bench crypto --quick --svg %s", svg_path);
    char *out = run_ok(args);
    free(out);
    /* One line per algorithm and implementation (signing and verifying,
     * encrypting and decrypting): Ed25519 under OpenSSL, libsodium and
     * auto, the other three signatures under OpenSSL and auto, 4 message
     * sizes each; ChaCha20-Poly1305 under three, four AEADs under two, 5
     * sizes each. A line through both libraries' points zigzagged. */
    assert_int_equal(svg_counts(svg_path, 18 + 21, "18x4 22x5"), 0);
    char *svg = net_read_file(svg_path);
    assert_non_null(strstr(svg, ">Ed25519 libsodium"));
    assert_non_null(strstr(svg, "Signatures"));
    assert_non_null(strstr(svg, "Hash and HKDF"));
    free(svg);
    unlink(svg_path);
    snprintf(args, sizeof args, "bench contexts --contexts 10 --svg %s", svg_path);
    assert_int_equal(run_cli(args, true, &out), 2);
    assert_non_null(strstr(out, "--svg"));
    free(out);
    /* Refused before anything was written. */
    assert_int_equal(access(svg_path, F_OK), -1);
}

/* Fields of one CSV line (RFC 4180 quoting). */
static int csv_fields(const char *line, size_t len)
{
    int cols = 1;
    bool quoted = false;
    for (size_t i = 0; i < len; i++) {
        if (line[i] == '"')
            quoted = !quoted;
        else if (line[i] == ',' && !quoted)
            cols++;
    }
    return cols;
}

static void test_csv(void **state)
{
    (void)state;
    char *out = run_ok("bench oscore --quick --csv");
    /* One block: a header and 35 rows, all with the header's column count. */
    int header_cols = -1, rows = 0;
    bool saw_ratio = false;
    for (char *line = out; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (len > 0) {
            int cols = csv_fields(line, len);
            if (header_cols < 0) {
                header_cols = cols;
                assert_true(strncmp(line, "table,aead,payload,", 19) == 0);
                saw_ratio = strstr(line, ",request_ratio,") != NULL;
            } else {
                assert_int_equal(cols, header_cols);
                assert_true(strncmp(line, "oscore,", 7) == 0);
                rows++;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    assert_true(saw_ratio);
    assert_int_equal(rows, 35);
    /* the table name, 15 single-value columns, 6 min/median pairs */
    assert_int_equal(header_cols, 1 + 15 + 6 * 2);
    free(out);

    /* Several tables: blocks separated by an empty line, each rectangular. */
    out = run_ok("bench handshake --quick --csv");
    int blocks = 0;
    header_cols = -1;
    for (char *line = out; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (len == 0) {
            header_cols = -1;
        } else {
            int cols = csv_fields(line, len);
            if (header_cols < 0) {
                header_cols = cols;
                blocks++;
            } else {
                assert_int_equal(cols, header_cols);
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    assert_int_equal(blocks, 2);
    free(out);
}

static void test_usage_errors(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(run_cli("bench --help", false, &out), 0);
    assert_non_null(strstr(out, "--quick"));
    assert_non_null(strstr(out, "--min-time"));
    free(out);
    assert_int_equal(run_cli("bench nonsense", true, &out), 2);
    free(out);
    assert_int_equal(run_cli("bench crypto --bogus", true, &out), 2);
    free(out);
    assert_int_equal(run_cli("bench crypto --repeat 0", true, &out), 2);
    free(out);
    assert_int_equal(run_cli("bench crypto --min-time x", true, &out), 2);
    free(out);
    assert_int_equal(run_cli("bench handshake --quick --suites 77", true, &out), 2);
    assert_non_null(strstr(out, "77"));
    free(out);
    /* An option the chosen benchmark would ignore is refused. */
    assert_int_equal(run_cli("bench crypto --quick --suites 0", true, &out), 2);
    assert_non_null(strstr(out, "--suites"));
    free(out);
    assert_int_equal(run_cli("bench oscore --quick --contexts 10", true, &out), 2);
    assert_non_null(strstr(out, "--contexts"));
    free(out);
    assert_int_equal(run_cli("bench crypto --quick --json --csv", true, &out), 2);
    free(out);
    /* --opt=value and decimals, as every command takes them. */
    assert_int_equal(run_cli("bench crypto --min-time=-1", true, &out), 2);
    free(out);
    assert_int_equal(run_cli("help bench", false, &out), 0);
    assert_non_null(strstr(out, "usage: edhoc-cli bench"));
    assert_non_null(strstr(out, "interrupted: partial results"));
    free(out);
    assert_int_equal(run_cli("bench oscore --quick --svg /nonexistent-dir/x.svg", true, &out), 3);
    free(out);
}

/* issue 14 item 9: "Ctrl-C during load, interop or bench exits 130 with
 * nothing printed". Now: the summary of what completed, marked partial,
 * and 128 + the signal. Progress goes to standard error only with -v when
 * it is not a terminal: the test waits for that line, not a fixed time. */
static void test_bench_interrupted(void **state)
{
    (void)state;
    struct bg b;
    bg_start(&b, "", "bench crypto -v");
    if (!bg_wait_text(b.err, "bench: crypto: ", 60000))
        fail_msg("no progress line");
    assert_int_equal(bg_stop(&b, SIGTERM), 143);
    char *out = net_read_file(b.out);
    assert_non_null(out);
    assert_non_null(strstr(out, "interrupted: partial results"));
    /* The rows measured before the signal are there. */
    assert_true(md_count_rows(out, "Signatures") >= 1);
    free(out);
    char *err = net_read_file(b.err);
    assert_non_null(strstr(err, "interrupted: partial results"));
    free(err);
    /* JSON: "partial": true, and still the schema's document. */
    bg_start(&b, "", "bench all --json -v");
    if (!bg_wait_text(b.err, "bench: crypto: ", 60000))
        fail_msg("no progress line");
    assert_int_equal(bg_stop(&b, SIGINT), 130);
    out = net_read_file(b.out);
    assert_non_null(strstr(out, "\"partial\": true"));
    assert_int_equal(net_json_valid(out, "bench", false), 0);
    free(out);
    /* Without -v and not on a terminal: no progress on standard error. */
    assert_int_equal(run_cli("bench crypto --quick 2>&1 >/dev/null", false, &out), 0);
    assert_string_equal(out, "");
    free(out);
}

/* bench contexts makes its database under $TMPDIR (it used /tmp whatever
 * TMPDIR said) and removes it when interrupted (it left a growing
 * database behind). */
static void test_contexts_interrupted(void **state)
{
    (void)state;
    char tmp[600], env[700];
    snprintf(tmp, sizeof tmp, "%s/tmpdir", workdir);
    assert_int_equal(mkdir(tmp, 0700), 0);
    snprintf(env, sizeof env, "TMPDIR='%s'", tmp);
    struct bg b;
    bg_start(&b, env, "bench contexts --contexts 10000000 --json");
    /* Progress: the database under TMPDIR, with contexts in it. */
    char cmd[800];
    snprintf(cmd, sizeof cmd, "test \"$(du -sk '%s' | cut -f1)\" -gt 2048", tmp);
    uint64_t end = net_now_ms() + 60000;
    while (system(cmd) != 0 && net_now_ms() < end)
        net_sleep_ms(50);
    char *ls;
    snprintf(cmd, sizeof cmd, "ls '%s'", tmp);
    assert_int_equal(net_sh(cmd, &ls, 10), 0);
    assert_non_null(strstr(ls, "edhoc-bench-contexts-"));
    free(ls);
    assert_int_equal(bg_stop(&b, SIGINT), 130);
    char *out = net_read_file(b.out);
    assert_int_equal(net_json_valid(out, "bench", false), 0);
    assert_non_null(strstr(out, "\"partial\": true"));
    /* What completed: contexts written, nothing loaded. */
    assert_non_null(strstr(out, "\"load_s\": null"));
    assert_null(strstr(out, "\"contexts\": 0,"));
    free(out);
    /* Nothing left behind. */
    assert_int_equal(net_sh(cmd, &ls, 10), 0);
    assert_string_equal(ls, "");
    free(ls);
    rmdir(tmp);
}

/* The schema check can fail: a document without its "partial" member,
 * or with NaN, is refused. */
static void test_schema_refuses(void **state)
{
    (void)state;
    char *out = run_ok("bench contexts --contexts 100 --json");
    assert_int_equal(net_json_valid(out, "bench", false), 0);
    char *cut = strstr(out, "  \"partial\": false,\n");
    assert_non_null(cut);
    memmove(cut, cut + strlen("  \"partial\": false,\n"),
            strlen(cut + strlen("  \"partial\": false,\n")) + 1);
    assert_int_not_equal(net_json_valid(out, "bench", false), 0);
    free(out);
    out = run_ok("bench contexts --contexts 100 --json");
    char *v = strstr(out, "\"load_s\": ");
    assert_non_null(v);
    v += strlen("\"load_s\": ");
    memcpy(v, "NaN", 3); /* over the first digits: still one token */
    char *e = v + 3;
    while (*e && *e != ',' && *e != '\n')
        *e++ = ' ';
    assert_int_not_equal(net_json_valid(out, "bench", false), 0);
    free(out);
}
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_crypto_rows),
        cmocka_unit_test(test_handshake_rows_and_memory),
        cmocka_unit_test(test_handshake_other_suites),
        cmocka_unit_test(test_oscore_rows),
        cmocka_unit_test(test_contexts),
        cmocka_unit_test(test_json_and_svg),
        cmocka_unit_test(test_csv),
        cmocka_unit_test(test_crypto_svg),
        cmocka_unit_test(test_bench_interrupted),
        cmocka_unit_test(test_contexts_interrupted),
        cmocka_unit_test(test_schema_refuses),
    };
    /* One test by name (a glob): CMOCKA_TEST_FILTER=test_load_* */
    if (getenv("CMOCKA_TEST_FILTER"))
        cmocka_set_test_filter(getenv("CMOCKA_TEST_FILTER"));
    return cmocka_run_group_tests(tests, setup, teardown);
}
