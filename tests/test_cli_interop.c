/*
 * End-to-end tests of `edhoc-cli interop URI` (we are the initiator): the
 * matrix against our own responder (table and JSON agree), and against
 * responders limited on purpose (one suite, one method, a trust that lacks
 * our credential, a silent port): the right cells fail with the right
 * reasons, in bounded time. And of the other direction: initiators (the
 * devices) against `edhoc-cli responder --interop-log DIR`, read back with
 * `edhoc-cli interop --report DIR`: the exact rows, the traces and pcaps of
 * the failures, a damaged log, the bound on files. And the command-line
 * contract of issue 14 for interop and bytes: every --json document valid
 * against its schema (docs/json/), null rather than -1, members read from
 * their own object (a key in a nested object is not the record's), an
 * interrupted run that still reports, options a mode would ignore refused.
 */
#include <dirent.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "net_test_util.h"
#include "vectors.h"

/* edhoc-cli ARGS, bounded in time. */
#define CLI_RUN(out, timeout_s, ...) net_cli_run(out, timeout_s, true, __VA_ARGS__)

static const char *cli;

static int setup(void **state)
{
    (void)state;
    cli = net_cli();
    return net_make_dir("interop");
}




/* ---- Reading the JSON cells and the table rows ---- */

#define MAX_CELLS 64

struct cell {
    int method, suite;
    char id_cred[16];
    bool m4, combined;
    char framing[8];
    char outcome[16];
    char failure[16];     /* "" for null */
    char unsupported[16]; /* "" for null */
    long err_code;
    char edhoc_text[256]; /* "" for null */
    char oscore_text[256];
    char result[512];
    char reason[768];
    char tolerated[64];   /* the raw array */
    long edhoc, coap, ms;
};

static const char *field(const char *obj, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(obj, pat);
    return p ? p + strlen(pat) : NULL;
}

/* A JSON string value (only the escapes the tool writes: \" \\). */
static void field_str(const char *obj, const char *key, char *out, size_t cap)
{
    out[0] = '\0';
    const char *p = field(obj, key);
    if (!p || *p != '"')
        return;
    p++;
    size_t n = 0;
    while (*p && *p != '"') {
        if (*p == '\\' && p[1])
            p++;
        if (n + 1 < cap)
            out[n++] = *p;
        p++;
    }
    out[n] = '\0';
}

/* An integer member; null (absent value) reads as -1, a missing member as
 * -999. The documents were checked against their schema first, where
 * these members are integers >= 0 or null. */
static long field_long(const char *obj, const char *key)
{
    const char *p = field(obj, key);
    if (p && !strncmp(p, "null", 4))
        return -1;
    return p ? strtol(p, NULL, 10) : -999;
}

/* Run python3 on the JSON text: prog reads the document from the file
 * named by sys.argv[1] (no single quotes in prog). Returns its output. */
static char *json_python(const char *json, const char *prog)
{
    char path[400], cmd[1600], *out = NULL;
    net_path(path, sizeof path, "doc.json");
    net_write_file(path, json, 0600);
    snprintf(cmd, sizeof cmd, "python3 -c \"import json,sys; d=json.load(open(sys.argv[1])); %s\" %s",
             prog, path);
    int rc = net_sh(cmd, &out, 30);
    if (rc != 0)
        fail_msg("python3 on the JSON output failed (%d): %s", rc, out);
    unlink(path);
    return out;
}

/* A --json document of interop: valid against docs/json/<schema>.schema.json
 * (issue 14: JSON as a contract), no member that stands for "absent" with
 * -1 (null instead), then rewritten on one line with ", " and ": " between
 * members (the member order is kept) for the readers above. */
static void json_checked(char **out, const char *schema)
{
    if (net_json_valid(*out, schema, false) != 0)
        fail_msg("interop output not valid against %s.schema.json", schema);
    char *flat = json_python(*out, "print(json.dumps(d, separators=(chr(44) + chr(32), chr(58) + "
                                    "chr(32))))");
    if (strstr(flat, ": -1,") || strstr(flat, ": -1}"))
        fail_msg("a member is -1 where null means absent:\n%s", flat);
    free(*out);
    *out = flat;
}

static size_t json_cells(const char *json, struct cell *cells, size_t cap)
{
    size_t n = 0;
    const char *p = json;
    while (n < cap && (p = strstr(p, "{\"cell\": "))) {
        const char *end = strchr(p, '}');
        assert_non_null(end);
        size_t len = (size_t)(end - p);
        char *obj = strndup(p, len);
        struct cell *c = &cells[n++];
        memset(c, 0, sizeof *c);
        c->method = (int)field_long(obj, "method");
        c->suite = (int)field_long(obj, "suite");
        field_str(obj, "id_cred", c->id_cred, sizeof c->id_cred);
        c->m4 = !strncmp(field(obj, "message_4"), "true", 4);
        c->combined = !strncmp(field(obj, "combined"), "true", 4);
        field_str(obj, "framing", c->framing, sizeof c->framing);
        field_str(obj, "outcome", c->outcome, sizeof c->outcome);
        field_str(obj, "failure", c->failure, sizeof c->failure);
        field_str(obj, "unsupported", c->unsupported, sizeof c->unsupported);
        c->err_code = field_long(obj, "err_code");
        field_str(obj, "edhoc", c->edhoc_text, sizeof c->edhoc_text);
        field_str(obj, "oscore", c->oscore_text, sizeof c->oscore_text);
        const char *t = field(obj, "tolerated");
        const char *te = t ? strchr(t, ']') : NULL;
        if (t && te)
            snprintf(c->tolerated, sizeof c->tolerated, "%.*s", (int)(te - t + 1), t);
        field_str(obj, "result", c->result, sizeof c->result);
        field_str(obj, "reason", c->reason, sizeof c->reason);
        c->edhoc = field_long(obj, "edhoc_bytes");
        c->coap = field_long(obj, "coap_bytes");
        c->ms = field_long(obj, "ms");
        free(obj);
        p = end;
    }
    return n;
}

/* Split one "| a | b | ... |" row into its trimmed cells. */
static int table_split(const char *line, char cols[][512], int cap)
{
    int n = 0;
    const char *p = strchr(line, '|');
    while (p && n < cap) {
        const char *q = strchr(p + 1, '|');
        const char *nl = strchr(p + 1, '\n');
        if (!q || (nl && nl < q))
            break;
        const char *a = p + 1, *b = q;
        while (a < b && *a == ' ')
            a++;
        while (b > a && b[-1] == ' ')
            b--;
        snprintf(cols[n++], 512, "%.*s", (int)(b - a), a);
        p = q;
    }
    return n;
}

/* Every table row equals the JSON cell of the same index, column by column. */
static void assert_table_matches_json(const char *table, const struct cell *cells, size_t n)
{
    size_t rows = 0;
    for (const char *line = table; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (line[0] != '|' || line[1] != ' ' || !(line[2] >= '0' && line[2] <= '9'))
            continue;
        /* The EDHOC and OSCORE results have columns of their own. */
        char cols[14][512];
        assert_int_equal(table_split(line, cols, 14), 13);
        size_t idx = (size_t)atoi(cols[0]);
        assert_int_equal(idx, rows + 1);
        assert_true(rows < n);
        const struct cell *c = &cells[rows++];
        assert_int_equal(atoi(cols[1]), c->method);
        assert_int_equal(atoi(cols[2]), c->suite);
        assert_string_equal(cols[3], c->id_cred);
        assert_string_equal(cols[4], c->m4 ? "yes" : "no");
        assert_string_equal(cols[5], c->combined ? "A.2 combined" : c->framing);
        assert_string_equal(cols[6], c->outcome);
        assert_string_equal(cols[7], c->edhoc_text[0] ? c->edhoc_text : "-");
        assert_string_equal(cols[8], c->oscore_text[0] ? c->oscore_text : "-");
        assert_string_equal(cols[9], c->reason[0] ? c->reason : "-");
        /* Bytes the initiator did not report: null in JSON, "-" here. */
        if (c->edhoc < 0)
            assert_string_equal(cols[10], "-");
        else
            assert_int_equal(atol(cols[10]), c->edhoc);
        if (c->coap < 0)
            assert_string_equal(cols[11], "-");
        else
            assert_int_equal(atol(cols[11]), c->coap);
        assert_int_equal(atol(cols[12]), c->ms);
    }
    assert_int_equal(rows, n);
}

static void start_responder(struct net_proc *p, const char *name, const char *extra)
{
    char args[1024];
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 %s", extra);
    assert_int_equal(net_responder_start(p, name, args), 0);
}

/* ---- Tests ---- */

/* Our own responder: every cell without message_4 is ok (A.2, combined,
 * bare), every message_4 cell is "not supported" and names the one thing
 * missing, the table and the JSON written in the same run agree, traces
 * are kept per cell. */
static void test_own_responder_matrix(void **state)
{
    (void)state;
    struct net_proc r;
    start_responder(&r, "own", "");
    char json_path[300], trace_dir[300];
    net_path(json_path, sizeof json_path, "own.json");
    net_path(trace_dir, sizeof trace_dir, "traces");
    char *out = NULL;
    uint64_t t0 = net_now_ms();
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 0,3 --suites 0,2 --id-creds kid,x5t "
                     "--json-out %s --trace-dir %s",
                     r.port, json_path, trace_dir);
    assert_true(net_now_ms() - t0 < 30000);
    /* This responder sends no message_4, which RFC 9528 Section 5.5 makes
     * optional: its cells are "not supported", which is no failure, so the
     * exit code is 0 (it was 1 when they counted as failed). */
    assert_int_equal(rc, 0);
    char *json = net_read_file(json_path);
    assert_non_null(json);
    json_checked(&json, "interop");
    assert_non_null(strstr(json, "\"partial\": false, \"cells_planned\": 18,"));
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(json, cells, MAX_CELLS);
    assert_int_equal(n, 2 * 2 * 2 * 2 + 2);
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        if (cells[i].m4) {
            assert_string_equal(cells[i].outcome, "not supported");
            assert_string_equal(cells[i].unsupported, "message_4");
            assert_string_equal(cells[i].failure, "");
            /* The responder answered message_3 with an empty 2.04. */
            assert_string_equal(cells[i].edhoc_text,
                                "no message_4: the peer answered message_3 with an empty 2.04");
            assert_string_equal(cells[i].oscore_text, "");
            assert_non_null(strstr(cells[i].reason, "does not send message_4"));
        } else {
            assert_string_equal(cells[i].outcome, "ok");
            assert_string_equal(cells[i].result, "ok");
            assert_string_equal(cells[i].edhoc_text, "ok");
            assert_string_equal(cells[i].oscore_text, "ok");
            assert_true(cells[i].edhoc > 0 && cells[i].coap > cells[i].edhoc);
            ok++;
        }
    }
    assert_int_equal(ok, 10);
    assert_true(cells[n - 2].combined);
    assert_string_equal(cells[n - 1].framing, "bare");
    assert_table_matches_json(out, cells, n);
    assert_non_null(strstr(out, "Summary: 10 ok, 0 failed, 8 not supported, 0 skipped of 18 "
                                "cells\n"));
    /* What the device supports for EDHOC, then what worked with OSCORE. */
    assert_non_null(strstr(out, "EDHOC: the handshake completed in 10 cells; the device "
                                "supports:\n  methods: 0 3\n  suites: 0 2\n  ID_CRED types: kid "
                                "x5t\n  message_4: not supported\n  combined request (RFC 9668): "
                                "yes\n  framings: A.2 bare\n"));
    assert_non_null(strstr(out, "OSCORE: a protected answer to GET /.well-known/core in 10 of "
                                "those; with:\n  methods: 0 3\n  suites: 0 2\n  ID_CRED types: "
                                "kid x5t\n  framings: A.2 bare\n"));
    assert_non_null(strstr(json, "\"edhoc\": {\"cells\": 10, \"methods\": [0, 3], \"suites\": "
                                 "[0, 2], \"id_creds\": [\"kid\", \"x5t\"], \"framings\": "
                                 "[\"A.2\", \"bare\"], \"message_4\": \"not supported\", "
                                 "\"combined\": \"yes\""));
    assert_non_null(strstr(json, "\"oscore\": {\"tested\": true, \"cells\": 10, \"methods\": "
                                 "[0, 3]"));
    /* One trace per cell, with the intermediate values of the handshake. */
    char path[400];
    snprintf(path, sizeof path, "%s/m3-s2-kid.txt", trace_dir);
    char *tr = net_read_file(path);
    assert_non_null(tr);
    assert_non_null(strstr(tr, "outcome: ok\nEDHOC: ok\nOSCORE: ok\n"));
    assert_non_null(strstr(tr, "  TH_2 (32 bytes) "));
    assert_non_null(strstr(tr, "  context_2 ("));
    assert_non_null(strstr(tr, "message_3"));
    assert_non_null(strstr(tr, "Datagrams: m3-s2-kid.pcap"));
    free(tr);
    /* ... and its datagrams: a pcap file holding at least the four of the
     * handshake (24-byte global header + 16-byte record header each). */
    snprintf(path, sizeof path, "%s/m3-s2-kid.pcap", trace_dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 24 + 4 * (16 + 28 + 40));
    snprintf(path, sizeof path, "%s/m0-s0-x5t-m4.txt", trace_dir);
    tr = net_read_file(path);
    assert_non_null(tr);
    assert_non_null(strstr(tr, "outcome: not supported\n"));
    assert_non_null(strstr(tr, "reason: the peer does not send message_4"));
    free(tr);
    free(json);
    free(out);
}

/* A responder that sends message_4: those cells are ok; the combined
 * request cannot carry message_4 (RFC 9668 Section 3.1), the device says
 * so with an EDHOC error: "not supported", no failure. */
static void test_message_4_responder(void **state)
{
    (void)state;
    struct net_proc r;
    start_responder(&r, "m4", "--message-4");
    char *out = NULL;
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid --json",
                     r.port);
    assert_int_equal(rc, 0); /* no cell failed (was 1 when the refusal counted) */
    json_checked(&out, "interop");
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 4);
    assert_string_equal(cells[0].outcome, "ok");
    assert_true(cells[1].m4);
    assert_string_equal(cells[1].outcome, "ok");
    assert_true(cells[2].combined);
    assert_string_equal(cells[2].outcome, "not supported");
    assert_string_equal(cells[2].unsupported, "combined");
    assert_int_equal(cells[2].err_code, 1);
    assert_non_null(strstr(cells[2].reason, "requires message_4"));
    assert_string_equal(cells[3].outcome, "ok");
    assert_non_null(strstr(out, "\"message_4\": \"yes\", \"combined\": \"not supported\""));
    free(out);
}

/* Only suite 2: suite 0 cells end with EDHOC error 2 and name SUITES_R;
 * RFC 9528 Section 6.3: error code 2 says which suites the responder
 * supports, so the refused one is "not supported", not a failure. */
static void test_suite_2_only(void **state)
{
    (void)state;
    struct net_proc r;
    start_responder(&r, "s2", "--suites 2");
    char *out = NULL;
    uint64_t t0 = net_now_ms();
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 0,2 --id-creds kid --json",
                     r.port);
    assert_true(net_now_ms() - t0 < 20000);
    assert_int_equal(rc, 0); /* refused suites and no message_4: nothing failed */
    json_checked(&out, "interop");
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < 4; i++) {
        if (cells[i].suite == 0) {
            assert_string_equal(cells[i].outcome, "not supported");
            assert_string_equal(cells[i].unsupported, "suite");
            assert_int_equal(cells[i].err_code, 2);
            assert_non_null(strstr(cells[i].edhoc_text, "EDHOC error 2 from the peer"));
            assert_non_null(strstr(cells[i].reason, "suite 0 not supported by the peer: "
                                                    "SUITES_R = 2"));
        } else if (!cells[i].m4) {
            assert_string_equal(cells[i].outcome, "ok");
        }
    }
    /* The extra cells use the configuration that worked (suite 2). */
    assert_int_equal(cells[4].suite, 2);
    assert_string_equal(cells[4].outcome, "ok");
    assert_string_equal(cells[5].outcome, "ok");
    assert_non_null(strstr(out, "\"suites\": [2]"));
    assert_non_null(strstr(out, "\"not_supported\": {\"methods\": [], \"suites\": [0], "
                                "\"framings\": []}"));
    free(out);
}

/* Only method 3: the other methods end with the peer's error 1 "method
 * not supported" (RFC 9528 has no error code for it: ERR_CODE 1 with a
 * diagnostic), which is "not supported", not a failure. */
static void test_method_3_only(void **state)
{
    (void)state;
    struct net_proc r;
    start_responder(&r, "m3", "--methods 3");
    char *out = NULL;
    int rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 0,1,3 --suites 2 "
                               "--id-creds kid",
                     r.port);
    assert_int_equal(rc, 0);
    assert_int_equal(net_count(out, "| not supported | EDHOC error 1 from the peer: method not "
                                    "supported | - | method 0 not supported by the peer |"),
                     2);
    assert_int_equal(net_count(out, "| not supported | EDHOC error 1 from the peer: method not "
                                    "supported | - | method 1 not supported by the peer |"),
                     2);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | A.2 | ok | ok | ok | - |"), 1);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | A.2 combined | ok | ok | ok | - |"), 1);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | bare | ok | ok | ok | - |"), 1);
    assert_non_null(strstr(out, "  methods: 3 (not supported: 0 1)\n"));
    free(out);
}

/* A device that knows one framing only: the cells of the other framing
 * end with the peer's error and a reason that names the framing; once the
 * other framing is seen to work they are "not supported"; the summary
 * lists the one that works and the one refused. */
static void test_one_framing_only(void **state)
{
    (void)state;
    struct net_proc r;
    start_responder(&r, "bare-only", "--framing bare");
    char *out = NULL;
    int rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 3 --suites 2 "
                               "--id-creds kid --json",
                     r.port);
    assert_int_equal(rc, 0);
    json_checked(&out, "interop");
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(cells[i].framing, "A.2");
        assert_string_equal(cells[i].outcome, "not supported");
        assert_string_equal(cells[i].unsupported, "framing");
        assert_int_equal(cells[i].err_code, 1);
        assert_non_null(strstr(cells[i].reason, "does not take the A.2 framing"));
    }
    assert_string_equal(cells[3].framing, "bare");
    assert_string_equal(cells[3].outcome, "ok");
    assert_non_null(strstr(out, "\"framings\": [\"bare\"]"));
    assert_non_null(strstr(out, "\"not_supported\": {\"methods\": [], \"suites\": [], "
                                "\"framings\": [\"A.2\"]}"));
    /* What failed for the framing says nothing of message_4 or combined. */
    assert_non_null(strstr(out, "\"message_4\": \"not tested\", \"combined\": \"not tested\""));
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);

    start_responder(&r, "a2-only", "--framing a2");
    rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid",
                 r.port);
    assert_int_equal(rc, 0);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | A.2 | ok | ok | ok | - |"), 1);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | bare | not supported | EDHOC error 1 "
                                    "from the peer: unknown C_R | - | the peer does not take the "
                                    "bare framing"),
                     1);
    assert_non_null(strstr(out, "  framings: A.2 (not supported: bare)\n"));
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);
    /* A wrong value is a usage error. */
    rc = net_cli_run(&out, 10, false, "responder --framing coap 2>&1");
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--framing: a2, bare or both"));
    free(out);
}

/* Credentials the other side does not know, in both directions. */
static void test_unknown_credentials(void **state)
{
    (void)state;
    char cred[300], key[300], *out = NULL;
    net_path(cred, sizeof cred, "other.cbor");
    net_path(key, sizeof key, "other.pem");
    /* A kid of its own: a random one could be the demo credentials' 2b or
     * 32 (one in 48), and the lookup would then find the wrong key. */
    assert_int_equal(CLI_RUN(&out, 30, "keygen --type ccs --suite 2 --use dh --kid 07 "
                                       "--out-cred %s --out-key %s",
                             cred, key),
                     0);
    free(out);
    /* The responder trusts only another credential: error code 3. */
    struct net_proc r;
    char extra[400];
    snprintf(extra, sizeof extra, "--trust %s", cred);
    start_responder(&r, "trust", extra);
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid --json",
                     r.port);
    assert_int_equal(rc, 1);
    json_checked(&out, "interop");
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++) {
        /* Error code 3 (RFC 9528 Section 6.4, unknown credential
         * referenced): a credential the device lacks is a setup problem of
         * the pair, not something it does not support: a failure. */
        assert_string_equal(cells[i].outcome, "failed");
        assert_string_equal(cells[i].failure, "peer-error");
        assert_int_equal(cells[i].err_code, 3);
        assert_non_null(strstr(cells[i].edhoc_text, "EDHOC error 3 from the peer"));
        assert_non_null(strstr(cells[i].reason, "the peer does not know our credential"));
    }
    free(out);
    net_proc_stop(&r, SIGTERM, 3000);

    /* We trust only another credential: our verification of message_2. */
    struct net_proc r2;
    start_responder(&r2, "plain", "");
    rc = CLI_RUN(&out, 60,
                 "interop coap://127.0.0.1:%u --methods 0,3 --suites 2 --id-creds kid --trust %s "
                 "--json",
                 r2.port, cred);
    assert_int_equal(rc, 1);
    json_checked(&out, "interop");
    n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(cells[i].outcome, "failed");
        assert_string_equal(cells[i].failure, "verify");
        assert_string_equal(cells[i].result,
                            "our verification failed: unknown credential ID_CRED_R");
        assert_non_null(strstr(cells[i].reason, "not in our trust"));
    }
    free(out);
}

/* The peer's credential has the kid of one we trust but another key: our
 * MAC_2 / signature check fails and the reason names the inputs to check. */
static void test_wrong_peer_key(void **state)
{
    (void)state;
    const char *names[4] = {"dh-a", "dh-b", "sig-a", "sig-b"};
    char cred[4][300], key[4][300], *out = NULL;
    for (int i = 0; i < 4; i++) {
        char n[64];
        snprintf(n, sizeof n, "%s.cbor", names[i]);
        net_path(cred[i], sizeof cred[i], n);
        snprintf(n, sizeof n, "%s.pem", names[i]);
        net_path(key[i], sizeof key[i], n);
        assert_int_equal(CLI_RUN(&out, 30, "keygen --type ccs --suite 2 --use %s --kid %s "
                                           "--out-cred %s --out-key %s",
                                 i < 2 ? "dh" : "sign", i < 2 ? "07" : "08", cred[i], key[i]),
                         0);
        free(out);
    }
    struct net_proc r;
    char extra[1400];
    /* --trust: a responder with credentials names whom it accepts (the
     * demo initiator of the cells is found in the demo set after it). */
    snprintf(extra, sizeof extra, "--cred %s --key %s --cred %s --key %s --trust %s", cred[0],
             key[0], cred[2], key[2], cred[1]);
    start_responder(&r, "wrongkey", extra);
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 0,3 --suites 2 --id-creds kid "
                     "--trust %s --trust %s --json",
                     r.port, cred[1], cred[3]);
    assert_int_equal(rc, 1);
    json_checked(&out, "interop");
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(cells[i].outcome, "failed");
        assert_string_equal(cells[i].failure, "verify");
        if (cells[i].method == 3) {
            assert_string_equal(cells[i].result,
                                "our verification failed: MAC_2 verification failed");
            assert_non_null(strstr(cells[i].reason, "MAC_2 mismatch"));
            assert_non_null(strstr(cells[i].reason, "C_R encoding"));
            assert_non_null(strstr(cells[i].reason, "ID_CRED_R / CRED_R bytes"));
            assert_non_null(strstr(cells[i].reason, "EAD_2"));
        } else {
            assert_string_equal(cells[i].result, "our verification failed: "
                                                 "Signature_or_MAC_2 verification failed");
            assert_non_null(strstr(cells[i].reason, "CRED_R bytes"));
        }
    }
    free(out);
}

/* A device that never answers, and a port with nothing: every cell is a
 * timeout, each within its bound. */
static void test_silent_device(void **state)
{
    (void)state;
    uint16_t port = 0;
    int fd = net_silent_socket(&port);
    assert_true(fd >= 0);
    char *out = NULL;
    uint64_t t0 = net_now_ms();
    int rc = CLI_RUN(&out, 40,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid "
                     "--timeout 1 --json",
                     port);
    uint64_t took = net_now_ms() - t0;
    close(fd);
    assert_int_equal(rc, 1);
    json_checked(&out, "interop");
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(cells[i].outcome, "failed");
        assert_string_equal(cells[i].failure, "timeout");
        assert_string_equal(cells[i].result, "timeout");
        assert_string_equal(cells[i].oscore_text, "");
        assert_non_null(strstr(cells[i].reason, "message_1"));
        assert_true(cells[i].ms >= 900 && cells[i].ms <= 3000);
    }
    assert_true(took < 4 * 3000 + 2000);
    assert_non_null(strstr(out, "\"edhoc\": {\"cells\": 0, \"methods\": [], \"suites\": []"));
    /* Nothing worked, so nothing is known about message_4 or combined. */
    assert_non_null(strstr(out, "\"message_4\": \"not tested\", \"combined\": \"not tested\""));
    assert_non_null(strstr(cells[0].reason, "the device is silent"));
    free(out);

    port = net_closed_port();
    t0 = net_now_ms();
    rc = CLI_RUN(&out, 40,
                 "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid --timeout 1",
                 port);
    took = net_now_ms() - t0;
    assert_int_equal(rc, 1);
    assert_int_equal(net_count(out, "| timeout |"), 4);
    assert_true(took < 4 * 3000 + 2000);
    free(out);
}

/* ---- The device as the initiator: responder --interop-log, interop --report ---- */

/* One row of `interop --report DIR --json`. */
struct report_row {
    int method, suite;
    char suites_i[32];
    char id_cred[16];
    bool m4, combined;
    char framing[8];
    long attempts, ok, err_code;
    char outcome[16];
    char suites_r[32];
    char result[400];
    char reason[800];
    char trace[32], pcap[32];
    long edhoc;
};

/* The raw text of a JSON array value ("[6, 2]"). */
static void field_array(const char *obj, const char *key, char *out, size_t cap)
{
    out[0] = '\0';
    const char *p = field(obj, key);
    if (!p || *p != '[')
        return;
    const char *e = strchr(p, ']');
    if (e)
        snprintf(out, cap, "%.*s", (int)(e - p + 1), p);
}

static size_t report_rows(const char *json, struct report_row *rows, size_t cap)
{
    size_t n = 0;
    const char *p = json;
    while (n < cap && (p = strstr(p, "{\"method\": "))) {
        /* "reason" is last: a string, or null. */
        const char *reason = strstr(p, "\"reason\": ");
        assert_non_null(reason);
        reason += 10;
        const char *end = !strncmp(reason, "null", 4) ? reason + 4 : strstr(reason, "\"}") + 1;
        assert_non_null(end);
        char *obj = strndup(p, (size_t)(end - p + 1));
        struct report_row *w = &rows[n++];
        memset(w, 0, sizeof *w);
        w->method = (int)field_long(obj, "method");
        w->suite = (int)field_long(obj, "suite");
        field_array(obj, "suites_i", w->suites_i, sizeof w->suites_i);
        field_str(obj, "id_cred", w->id_cred, sizeof w->id_cred);
        if (!w->id_cred[0] && field(obj, "id_cred") && !strncmp(field(obj, "id_cred"), "null", 4))
            snprintf(w->id_cred, sizeof w->id_cred, "null");
        w->m4 = !strncmp(field(obj, "message_4"), "true", 4);
        w->combined = !strncmp(field(obj, "combined"), "true", 4);
        field_str(obj, "framing", w->framing, sizeof w->framing);
        w->attempts = field_long(obj, "attempts");
        w->ok = field_long(obj, "ok");
        field_str(obj, "outcome", w->outcome, sizeof w->outcome);
        w->err_code = field_long(obj, "err_code");
        field_array(obj, "suites_r", w->suites_r, sizeof w->suites_r);
        field_str(obj, "result", w->result, sizeof w->result);
        field_str(obj, "reason", w->reason, sizeof w->reason);
        field_str(obj, "failure_trace", w->trace, sizeof w->trace);
        field_str(obj, "failure_pcap", w->pcap, sizeof w->pcap);
        w->edhoc = field_long(obj, "edhoc_bytes");
        free(obj);
        p = end;
    }
    return n;
}

static void assert_row(const struct report_row *w, int method, const char *suites_i, int suite,
                       const char *id_cred, const char *framing, bool combined,
                       const char *outcome, long err_code, long attempts, long ok)
{
    assert_int_equal(w->method, method);
    assert_string_equal(w->suites_i, suites_i);
    assert_int_equal(w->suite, suite);
    assert_string_equal(w->id_cred, id_cred);
    assert_false(w->m4);
    assert_string_equal(w->framing, framing);
    assert_int_equal(w->combined, combined);
    assert_string_equal(w->outcome, outcome);
    assert_int_equal(w->err_code, err_code);
    assert_int_equal(w->attempts, attempts);
    assert_int_equal(w->ok, ok);
}

/* The EDHOC column of a message's line in `edhoc-cli bytes` output. */
static long bytes_edhoc(const char *out, const char *message)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\n  %s ", message);
    const char *p = strstr(out, pat);
    if (!p)
        return -1;
    unsigned pkt, dgrams;
    long edhoc = -1;
    char dir[8];
    if (sscanf(p + strlen(pat), "%u %7s %u %ld", &pkt, dir, &dgrams, &edhoc) != 4)
        return -1;
    return edhoc;
}

/* A CoAP CON POST /.well-known/edhoc carrying true || message_1 of RFC 9529
 * trace 2 (method 3, SUITES_I [6, 2], C_I -24): an initiator that sends
 * message_1 and then goes away. */
static long send_message_1_only(uint16_t port)
{
    static const char m1_hex[] = "0382060258208af6f430ebe18d34184017a9a11bf511c8dff8f834730b96c1"
                                 "b7c8dbca2fc3b637";
    uint8_t msg[128];
    size_t n = 0;
    msg[n++] = 0x40; /* CON, no token */
    msg[n++] = 0x02; /* POST */
    msg[n++] = 0x12;
    msg[n++] = 0x34;
    msg[n++] = 0xbb; /* Uri-Path (11), 11 bytes */
    memcpy(msg + n, ".well-known", 11);
    n += 11;
    msg[n++] = 0x05; /* Uri-Path, 5 bytes */
    memcpy(msg + n, "edhoc", 5);
    n += 5;
    msg[n++] = 0x11; /* Content-Format (12): 65 */
    msg[n++] = 65;
    msg[n++] = 0xff;
    msg[n++] = 0xf5; /* true: no C_R yet */
    for (size_t i = 0; i + 1 < sizeof m1_hex; i += 2) {
        unsigned v;
        sscanf(m1_hex + i, "%2x", &v);
        msg[n++] = (uint8_t)v;
    }
    uint8_t resp[512];
    return net_udp_exchange(port, msg, n, resp, sizeof resp, 3000);
}

static void keygen(const char *name, const char *args, char *cred, char *key)
{
    char n[64], *out = NULL;
    snprintf(n, sizeof n, "%s.cred", name);
    net_path(cred, 300, n);
    snprintf(n, sizeof n, "%s.key", name);
    net_path(key, 300, n);
    assert_int_equal(CLI_RUN(&out, 30, "keygen %s --out-cred %s --out-key %s --force", args, cred,
                             key),
                     0);
    free(out);
}

/* Several initiators (real processes) against a responder with
 * --interop-log, limited on purpose (one suite, a trust that lacks some
 * credentials, a short handshake timeout); then the report names every
 * combination they tried and how it ended, with the trace and pcap of the
 * failures. */
static void test_report_of_initiators(void **state)
{
    (void)state;
    char a[300], ak[300], b[300], bk[300], c[300], ck[300], d[300], dk[300], x[300], xk[300];
    char r3[300], r3k[300], r0[300], r0k[300];
    keygen("dev-a", "--type ccs --suite 2 --use dh --kid 07", a, ak);
    keygen("dev-b", "--type ccs --suite 2 --use dh --kid 07", b, bk); /* A's kid, another key */
    keygen("dev-c", "--type ccs --suite 2 --use dh --kid 09", c, ck);
    keygen("dev-d", "--type ccs --suite 0 --use dh --kid 0b", d, dk);
    keygen("dev-x", "--type x509 --suite 2 --use sign", x, xk);
    keygen("srv-3", "--type ccs --suite 2 --use dh --kid 0a", r3, r3k);
    keygen("srv-0", "--type x509 --suite 2 --use sign", r0, r0k);
    char dir[300];
    net_path(dir, sizeof dir, "ilog");
    struct net_proc r;
    char extra[2400];
    snprintf(extra, sizeof extra,
             "--suites 2 --handshake-timeout 1 --cred %s --key %s --cred %s --key %s --trust %s "
             "--trust %s --interop-log %s",
             r3, r3k, r0, r0k, a, x, dir);
    start_responder(&r, "ilog", extra);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);

    char trust[700], uri[64], *out = NULL;
    snprintf(trust, sizeof trust, "--trust %s --trust %s", r3, r0);
    snprintf(uri, sizeof uri, "coap://127.0.0.1:%u", r.port);
    /* 1: method 3, kid: ok. */
    assert_int_equal(CLI_RUN(&out, 20, "initiator %s --method 3 --suites 2 --cred %s --key %s %s",
                             uri, a, ak, trust), 0);
    free(out);
    /* 2: method 0, x5t: ok. */
    assert_int_equal(CLI_RUN(&out, 20, "initiator %s --method 0 --suites 2 --cred %s --key %s "
                                       "--id-cred x5t %s", uri, x, xk, trust), 0);
    free(out);
    /* The log survives a reload. */
    kill(r.pid, SIGHUP);
    uint64_t end = net_now_ms() + 3000;
    char *log = NULL;
    while (net_now_ms() < end) {
        free(log);
        log = net_read_file(r.log);
        if (log && strstr(log, "SIGHUP: credentials and trust reloaded"))
            break;
        net_sleep_ms(20);
    }
    assert_non_null(strstr(log, "SIGHUP: credentials and trust reloaded"));
    free(log);
    /* 3: a suite the responder does not serve: error code 2. */
    assert_int_equal(CLI_RUN(&out, 20, "initiator %s --method 3 --suites 0 --cred %s --key %s %s",
                             uri, d, dk, trust), 4);
    free(out);
    /* 4: a credential the responder does not know: error code 3. */
    assert_int_equal(CLI_RUN(&out, 20, "initiator %s --method 3 --suites 2 --cred %s --key %s "
                                       "--id-cred kccs %s", uri, c, ck, trust), 4);
    free(out);
    /* 5: A's kid with another key: MAC_3 does not verify. */
    assert_int_equal(CLI_RUN(&out, 20, "initiator %s --method 2 --suites 2 --cred %s --key %s %s",
                             uri, b, bk, trust), 4);
    free(out);
    /* 6: the RFC 9668 combined request; 7: the bare framing. */
    assert_int_equal(CLI_RUN(&out, 20, "initiator %s --method 3 --suites 2 --cred %s --key %s "
                                       "--combined %s", uri, a, ak, trust), 0);
    free(out);
    assert_int_equal(CLI_RUN(&out, 20, "initiator %s --method 3 --suites 2 --cred %s --key %s "
                                       "--framing bare %s", uri, a, ak, trust), 0);
    free(out);
    /* 8: message_1, then nothing: expires after --handshake-timeout. */
    assert_true(send_message_1_only(r.port) > 0);
    end = net_now_ms() + 4000;
    char jsonl[400];
    snprintf(jsonl, sizeof jsonl, "%s/handshakes.jsonl", dir);
    char *lines = NULL;
    while (net_now_ms() < end) {
        free(lines);
        lines = net_read_file(jsonl);
        if (lines && strstr(lines, "\"ended\":\"expired\""))
            break;
        net_sleep_ms(50);
    }
    assert_non_null(strstr(lines, "\"ended\":\"expired\""));
    free(lines);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 3000), 0);

    int rc = CLI_RUN(&out, 20, "interop --report %s --json", dir);
    assert_int_equal(rc, 1);
    json_checked(&out, "interop-report");
    /* What the device did not get to is null, not -1 or "" (issue 14). */
    assert_non_null(strstr(out, "\"err_code\": null"));
    assert_non_null(strstr(out, "\"failure_trace\": null"));
    struct report_row rows[16];
    size_t n = report_rows(out, rows, 16);
    assert_int_equal(n, 8);
    assert_int_equal(net_count(out, "\"host\": "), 1);
    assert_row(&rows[0], 3, "[2]", 2, "kid", "A.2", false, "ok", -1, 1, 1);
    assert_int_equal(rows[0].edhoc, 37 + 45 + 19);
    assert_row(&rows[1], 0, "[2]", 2, "x5t", "A.2", false, "ok", -1, 1, 1);
    assert_row(&rows[2], 3, "[0]", 0, "null", "A.2", false, "refused", 2, 1, 0);
    assert_string_equal(rows[2].suites_r, "[2]");
    assert_non_null(strstr(rows[2].reason, "we answered SUITES_R = [2]"));
    assert_row(&rows[3], 3, "[2]", 2, "kccs", "A.2", false, "refused", 3, 1, 0);
    assert_string_equal(rows[3].result, "EDHOC error 3 sent: unknown credential ID_CRED_I");
    assert_non_null(strstr(rows[3].reason, "we could not resolve ID_CRED_I a10ea2"));
    assert_non_null(strstr(rows[3].reason, "(kccs): add the device's credential with --trust"));
    assert_row(&rows[4], 2, "[2]", 2, "kid", "A.2", false, "verify", 1, 1, 0);
    assert_string_equal(rows[4].result, "our verification failed: MAC_3 verification failed");
    assert_non_null(strstr(rows[4].reason, "check the initiator's TH_3 inputs: CRED_I encoding"));
    assert_non_null(strstr(rows[4].reason, "ID_CRED_I (kid as integer vs byte string), EAD_3"));
    assert_row(&rows[5], 3, "[2]", 2, "kid", "A.2", true, "ok", -1, 1, 1);
    assert_row(&rows[6], 3, "[2]", 2, "kid", "bare", false, "ok", -1, 1, 1);
    assert_row(&rows[7], 3, "[6, 2]", 2, "null", "A.2", false, "timeout", -1, 1, 0);
    assert_string_equal(rows[7].result, "timeout: expired: no message_3 within 1 s");
    assert_non_null(strstr(rows[7].reason, "the initiator sent no message_3"));
    assert_non_null(strstr(out, "\"methods\": [0, 3], \"suites\": [2], \"id_creds\": [\"kid\", "
                                "\"x5t\"], \"message_4\": \"not tested\", \"combined\": \"yes\", "
                                "\"framings\": [\"A.2\", \"bare\"]"));
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(rows[i].outcome, "ok")) {
            assert_string_equal(rows[i].trace, "");
        } else {
            char want[32];
            snprintf(want, sizeof want, "%zu.txt", i + 1);
            assert_string_equal(rows[i].trace, want);
            snprintf(want, sizeof want, "%zu.pcap", i + 1);
            assert_string_equal(rows[i].pcap, want);
        }
    }
    free(out);

    /* The table: the same rows. */
    rc = CLI_RUN(&out, 20, "interop --report %s", dir);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "## Device 127.0.0.1\n"));
    assert_non_null(strstr(out, "| 1 | 3 | 2 -> 2 | kid | no | A.2 | 1 | 1 | ok | - | 101 | "));
    assert_non_null(strstr(out, "| 2 | 0 | 2 -> 2 | x5t | no | A.2 | 1 | 1 | ok | - | "));
    assert_non_null(strstr(out, "| 3 | 3 | 0 -> 0 | - | no | A.2 | 1 | 0 | EDHOC error 2 sent: "));
    assert_non_null(strstr(out, "| 4 | 3 | 2 -> 2 | kccs | no | A.2 | 1 | 0 | EDHOC error 3 "
                                "sent: unknown credential ID_CRED_I | "));
    assert_non_null(strstr(out, "| 5 | 2 | 2 -> 2 | kid | no | A.2 | 1 | 0 | our verification "
                                "failed: MAC_3 verification failed | "));
    assert_non_null(strstr(out, " | 5.txt, 5.pcap |\n"));
    assert_non_null(strstr(out, "| 6 | 3 | 2 -> 2 | kid | no | A.2 combined | 1 | 1 | ok | - | "));
    assert_non_null(strstr(out, "| 7 | 3 | 2 -> 2 | kid | no | bare | 1 | 1 | ok | - | "));
    assert_non_null(strstr(out, "| 8 | 3 | 6,2 -> 2 | - | no | A.2 | 1 | 0 | timeout: expired: "));
    assert_non_null(strstr(out, "Summary: 4 ok, 4 failed of 8 combinations (8 attempts"));
    assert_non_null(strstr(out, "  methods: 0 3\n  suites: 2\n  ID_CRED types: kid x5t\n"
                                "  message_4: not tested\n  combined request (RFC 9668): yes\n"
                                "  framings: A.2 bare\n"));
    free(out);

    /* The trace of the MAC_3 failure: both sides of what we can know. */
    char path[400];
    snprintf(path, sizeof path, "%s/5.txt", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    char *tr = net_read_file(path);
    assert_non_null(tr);
    assert_non_null(strstr(tr, "outcome: our verification failed: MAC_3 verification failed\n"));
    assert_non_null(strstr(tr, "likely causes: check the initiator's TH_3 inputs"));
    assert_non_null(
        strstr(tr, "ID_CRED_I (kid), full map: a1044107; as sent in PLAINTEXT_3: 07\n"));
    assert_non_null(strstr(tr, "CRED_I as we hashed it into context_3 / TH_4 ("));
    assert_non_null(strstr(tr, "\n  TH_2 (32 bytes) "));
    assert_non_null(strstr(tr, "\n  TH_3 (32 bytes) "));
    assert_non_null(strstr(tr, "\n  context_3 ("));
    assert_non_null(strstr(tr, "\n  MAC_3 (8 bytes) "));
    assert_non_null(strstr(tr, "\n  Signature_or_MAC_3 (8 bytes) "));
    assert_null(strstr(tr, "PRK_out"));
    free(tr);
    /* The datagrams of the first handshake, with the sizes of its messages. */
    snprintf(path, sizeof path, "%s/1.pcap", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(CLI_RUN(&out, 20, "bytes %s", path), 0);
    assert_int_equal(bytes_edhoc(out, "message_1"), 37);
    assert_int_equal(bytes_edhoc(out, "message_2"), 45);
    assert_int_equal(bytes_edhoc(out, "message_3"), 19);
    assert_non_null(strstr(out, "OSCORE request"));
    free(out);
    /* The handshake that expired: its message_1 and message_2. */
    snprintf(path, sizeof path, "%s/8.pcap", dir);
    assert_int_equal(CLI_RUN(&out, 20, "bytes %s", path), 0);
    assert_int_equal(bytes_edhoc(out, "message_1"), 39);
    assert_true(bytes_edhoc(out, "message_2") > 0);
    free(out);
}

/* A log cut short (a crash mid-line) and a foreign line: each is named
 * with its line number and skipped; the rest still makes the matrix. A
 * missing directory or log is exit code 3. */
static void test_report_damaged_log(void **state)
{
    (void)state;
    char dir[300], path[400], err[400];
    net_path(dir, sizeof dir, "damaged");
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/handshakes.jsonl", dir);
    net_write_file(path,
                   "{\"type\": \"handshake\", \"id\": 1, \"time\": \"2026-01-01T00:00:00Z\", "
                   "\"peer\": \"192.0.2.7:5000\", \"host\": \"192.0.2.7\", \"method\": 3, "
                   "\"suites_i\": [2], \"suite\": 2, \"c_i\": \"37\", \"c_r\": \"08\", "
                   "\"framing\": \"A.2\", \"combined\": false, \"message_4\": false, "
                   "\"message_4_sent\": false, \"id_cred_i_type\": \"kid\", \"id_cred_i\": "
                   "\"a1044132\", \"id_cred_i_sent\": \"32\", \"id_cred_r_type\": \"kid\", "
                   "\"outcome\": \"ok\", \"ended\": \"ok\", \"err_code\": -1, \"suites_r\": [], "
                   "\"step\": \"\", \"bytes\": {\"message_1\": 37, \"message_2\": 45, "
                   "\"message_3\": 19, \"message_4\": 0, \"error\": 0}, \"edhoc_bytes\": 101, "
                   "\"ms\": 4, \"trace\": \"1.txt\", \"pcap\": \"1.pcap\", \"error\": \"\", "
                   "\"peer_diagnostic\": \"\", \"result\": \"ok\", \"reason\": \"\"}\n"
                   "{\"type\": \"oscore\", \"id\": 1, \"peer\": \"192.0.2.7:5000\", \"ok\": false, "
                   "\"error\": -3008, \"text\": \"request refused: decryption failed\"}\n"
                   "this is not a record\n"
                   "{\"type\": \"handshake\", \"id\": 2, \"time\": \"2026-01-01T00:00:01Z\", "
                   "\"peer\": \"192.0.2.7:5000\", \"host\": \"192.0.2.7\", \"method\": 3, "
                   "\"suites_i\": [2], \"suite\": 2, \"c_i\": \"37\", \"c_r\": \"09\", "
                   "\"framing\": \"A.2\", \"combined\": false, \"message_4\": false, "
                   "\"message_4_sent\": false, \"id_cred_i_type\": \"kid\", \"id_cr",
                   0600);
    snprintf(err, sizeof err, "%s/report.err", dir);
    char *out = NULL;
    int rc = net_cli_run(&out, 20, false, "interop --report %s --json 2>%s", dir, err);
    assert_int_equal(rc, 1);
    char *msgs = net_read_file(err);
    assert_non_null(msgs);
    char want[600];
    snprintf(want, sizeof want, "edhoc-cli interop: %s line 3: not a JSON object, skipped\n", path);
    assert_non_null(strstr(msgs, want));
    snprintf(want, sizeof want,
             "edhoc-cli interop: %s line 4: truncated (the writer stopped mid-line), skipped\n",
             path);
    assert_non_null(strstr(msgs, want));
    free(msgs);
    json_checked(&out, "interop-report");
    assert_non_null(strstr(out, "\"handshakes\": 1, \"skipped_lines\": 2,"));
    struct report_row rows[4];
    assert_int_equal(report_rows(out, rows, 4), 1);
    /* The handshake was ok but its first OSCORE request was not. */
    assert_row(&rows[0], 3, "[2]", 2, "kid", "A.2", false, "oscore", -1, 1, 0);
    assert_string_equal(rows[0].result, "OSCORE failure: request refused: decryption failed");
    assert_string_equal(rows[0].trace, "1.txt");
    free(out);

    rc = CLI_RUN(&out, 20, "interop --report %s/nothing-here", net_dir);
    assert_int_equal(rc, 3);
    free(out);
    assert_int_equal(net_cli_run(&out, 20, false, "interop --report %s/nothing-here", net_dir), 3);
    assert_non_null(strstr(out, "nothing-here: no such directory"));
    free(out);
    char empty[300];
    net_path(empty, sizeof empty, "empty-dir");
    mkdir(empty, 0700);
    assert_int_equal(net_cli_run(&out, 20, false, "interop --report %s", empty), 3);
    assert_non_null(strstr(out, "handshakes.jsonl: No such file or directory (was the responder "
                                "run with --interop-log"));
    free(out);
}

/* --interop-log-max: files for the first handshakes only, one warning;
 * a restarted responder continues the ids and the count. */
static void test_interop_log_bound(void **state)
{
    (void)state;
    char dir[300], extra[400];
    net_path(dir, sizeof dir, "bounded");
    snprintf(extra, sizeof extra, "--interop-log %s --interop-log-max 1", dir);
    struct net_proc r;
    start_responder(&r, "bounded", extra);
    char *out = NULL;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(CLI_RUN(&out, 20, "initiator coap://127.0.0.1:%u --method 3 --suites 2",
                                 r.port), 0);
        free(out);
    }
    assert_int_equal(net_proc_stop(&r, SIGTERM, 3000), 0);
    char *log = net_read_file(r.log);
    assert_int_equal(net_count(log, "interop log: 1 handshakes with trace and pcap files written "
                                    "(--interop-log-max)"), 1);
    free(log);
    char path[400];
    struct stat st;
    snprintf(path, sizeof path, "%s/1.txt", dir);
    assert_int_equal(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/2.txt", dir);
    assert_int_not_equal(stat(path, &st), 0);
    snprintf(extra, sizeof extra, "--interop-log %s --interop-log-max 2", dir);
    start_responder(&r, "bounded2", extra);
    assert_int_equal(CLI_RUN(&out, 20, "initiator coap://127.0.0.1:%u --method 3 --suites 2",
                             r.port), 0);
    free(out);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 3000), 0);
    snprintf(path, sizeof path, "%s/3.txt", dir);
    assert_int_equal(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/handshakes.jsonl", dir);
    char *lines = net_read_file(path);
    assert_int_equal(net_count(lines, "{\"type\":\"handshake\""), 3);
    assert_int_equal(net_count(lines, "\"trace\":null,\"pcap\":null"), 1);
    assert_non_null(strstr(lines, "\"id\":3,"));
    free(lines);
    assert_int_equal(CLI_RUN(&out, 20, "interop --report %s", dir), 0);
    assert_non_null(strstr(out, "| 1 | 3 | 2 -> 2 | kid | no | A.2 | 3 | 3 | ok | - | "));
    free(out);
}

/* A combined request whose OSCORE kid is longer than any C_R: refused
 * with "unknown C_R", recorded with the C_R shortened, and the responder
 * keeps serving. */
static void test_interop_log_long_kid(void **state)
{
    (void)state;
    char dir[300], extra[400];
    net_path(dir, sizeof dir, "longkid");
    snprintf(extra, sizeof extra, "--interop-log %s", dir);
    struct net_proc r;
    start_responder(&r, "longkid", extra);
    uint8_t msg[64];
    size_t n = 0;
    msg[n++] = 0x40; /* CON POST, no token */
    msg[n++] = 0x02;
    msg[n++] = 0x00;
    msg[n++] = 0x07;
    msg[n++] = 0x9d; /* OSCORE (9), 14 bytes: flags, Partial IV, 12-byte kid */
    msg[n++] = 14 - 13;
    msg[n++] = 0x09;
    msg[n++] = 0x01;
    for (int i = 0; i < 12; i++)
        msg[n++] = (uint8_t)(0xa0 + i);
    msg[n++] = 0xc0; /* EDHOC (21), empty */
    msg[n++] = 0xff;
    msg[n++] = 0x41; /* message_3 = h'00', then the OSCORE ciphertext */
    msg[n++] = 0x00;
    msg[n++] = 0x01;
    msg[n++] = 0x02;
    uint8_t resp[256];
    long got = net_udp_exchange(r.port, msg, n, resp, sizeof resp, 3000);
    assert_true(got > 4);
    assert_int_equal(resp[1], 0x80); /* 4.00 with the EDHOC error */
    char *out = NULL;
    assert_int_equal(CLI_RUN(&out, 20, "initiator coap://127.0.0.1:%u --method 3 --suites 2",
                             r.port), 0);
    free(out);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 3000), 0);
    char path[400];
    snprintf(path, sizeof path, "%s/handshakes.jsonl", dir);
    char *lines = net_read_file(path);
    assert_non_null(lines);
    assert_non_null(strstr(lines, "\"c_r\":\"a0a1a2a3a4a5a6a7\""));
    assert_non_null(strstr(lines, "\"error\":\"message_3: unknown C_R a0a1a2a3a4a5a6a7... (longer "
                                  "than any C_R we give)\""));
    assert_int_equal(net_count(lines, "\"outcome\":\"ok\""), 1);
    free(lines);
}

/* ---- Devices that do part of the job ---- */

/* The option numbers of a CoAP message: whether it carries OSCORE (9)
 * and the EDHOC option of RFC 9668 (21). */
static void coap_options(const uint8_t *m, size_t len, bool *oscore, bool *edhoc)
{
    *oscore = *edhoc = false;
    if (len < 4 || (size_t)(4 + (m[0] & 0x0f)) > len)
        return;
    size_t p = 4 + (m[0] & 0x0f);
    unsigned num = 0;
    while (p < len && m[p] != 0xff) {
        unsigned v[2] = {m[p] >> 4, m[p] & 0x0f};
        p++;
        for (int k = 0; k < 2; k++) {
            if (v[k] == 13) {
                if (p >= len)
                    return;
                v[k] = 13u + m[p++];
            } else if (v[k] == 14) {
                if (p + 1 >= len)
                    return;
                v[k] = 269u + (unsigned)(m[p] << 8 | m[p + 1]);
                p += 2;
            } else if (v[k] == 15) {
                return;
            }
        }
        num += v[0];
        *oscore |= num == 9;
        *edhoc |= num == 21;
        p += v[1];
    }
}

/* A UDP relay in front of a real responder that drops every OSCORE
 * request (but the RFC 9668 combined request, which carries message_3):
 * the responder as seen from the initiator is a device that does EDHOC
 * and has no OSCORE resources that answer. */
static bool pass_but_oscore(void *user, const uint8_t *d, size_t len)
{
    (void)user;
    bool oscore, edhoc;
    coap_options(d, len, &oscore, &edhoc);
    return !(oscore && !edhoc);
}

static int drop_oscore_start(struct net_proc *p, uint16_t upstream)
{
    struct net_relay_hooks h = {.to_server = pass_but_oscore};
    return net_relay_start(p, upstream, &h);
}

/* A device that completes EDHOC but answers no OSCORE request (the field
 * reports of EDHOC-only devices): every handshake that completed reads
 * "EDHOC ok, OSCORE: no answer to GET /.well-known/core", the summary
 * still lists what the device supports for EDHOC; with --request none
 * (EDHOC only) those cells are ok and the exit code is 0. */
static void test_edhoc_only_device(void **state)
{
    (void)state;
    static struct net_proc r, relay;
    start_responder(&r, "edhoc-only", "");
    assert_int_equal(drop_oscore_start(&relay, r.port), 0);
    /* One run gives the table (stdout) and the JSON (--json-out): each
     * cell whose request goes unanswered costs its --timeout. */
    char json_path[300], *out = NULL;
    net_path(json_path, sizeof json_path, "edhoc-only.json");
    uint64_t t0 = net_now_ms();
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid "
                     "--timeout 3 --json-out %s",
                     relay.port, json_path);
    /* (--timeout 3: with 1 s a sanitized run on a busy machine once timed
     * out in EDHOC itself, not only in the unanswered request.) */
    assert_true(net_now_ms() - t0 < 45000);
    /* An OSCORE request without an answer fails its cell. */
    assert_int_equal(rc, 1);
    char *json = net_read_file(json_path);
    assert_non_null(json);
    json_checked(&json, "interop");
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(json, cells, MAX_CELLS);
    assert_int_equal(n, 4);
    assert_table_matches_json(out, cells, n);
    const size_t plain[2] = {0, 3}; /* A.2, then the bare framing */
    for (size_t k = 0; k < 2; k++) {
        const struct cell *c = &cells[plain[k]];
        assert_false(c->m4 || c->combined);
        assert_string_equal(c->framing, k ? "bare" : "A.2");
        assert_string_equal(c->outcome, "failed");
        assert_string_equal(c->failure, "timeout");
        /* EDHOC and OSCORE are told apart: the handshake completed. */
        assert_string_equal(c->edhoc_text, "ok");
        assert_string_equal(c->oscore_text, "no answer to GET /.well-known/core");
        assert_string_equal(c->result, "EDHOC ok, OSCORE: no answer to GET /.well-known/core");
        assert_non_null(strstr(c->reason, "run interop with --request none"));
        assert_true(c->edhoc > 0);
    }
    /* RFC 9528 Section 5.5: message_4 is optional; this device sends none. */
    assert_string_equal(cells[1].outcome, "not supported");
    /* The combined request went through (the relay passes it): a
     * protected answer, so both layers are ok. */
    assert_true(cells[2].combined);
    assert_string_equal(cells[2].outcome, "ok");
    assert_non_null(strstr(json, "\"summary\": {\"ok\": 1, \"failed\": 2, \"not_supported\": 1, "
                                 "\"skipped\": 0,"));
    /* The summary still lists what the device does for EDHOC. */
    assert_non_null(strstr(json, "\"edhoc\": {\"cells\": 3, \"methods\": [3], \"suites\": [2], "
                                 "\"id_creds\": [\"kid\"], \"framings\": [\"A.2\", \"bare\"], "
                                 "\"message_4\": \"not supported\", \"combined\": \"yes\""));
    assert_non_null(strstr(json, "\"oscore\": {\"tested\": true, \"cells\": 1, \"methods\": [3]"));
    free(json);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | A.2 | failed | ok | no answer to GET "
                                    "/.well-known/core | "),
                     1);
    assert_non_null(strstr(out, "EDHOC: the handshake completed in 3 cells; the device supports:\n"
                                "  methods: 3\n  suites: 2\n  ID_CRED types: kid\n"));
    free(out);

    /* --request none: EDHOC only. Every cell the device supports is ok;
     * the combined request needs an OSCORE request: skipped. */
    rc = CLI_RUN(&out, 60,
                 "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid --timeout 3 "
                 "--request none --json",
                 relay.port);
    /* Exit 0: no cell failed (not supported and skipped do not count). */
    assert_int_equal(rc, 0);
    json_checked(&out, "interop");
    n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 4);
    assert_string_equal(cells[0].outcome, "ok");
    assert_string_equal(cells[0].edhoc_text, "ok");
    assert_string_equal(cells[0].oscore_text, "not asked (--request none)");
    assert_string_equal(cells[1].outcome, "not supported");
    assert_string_equal(cells[2].outcome, "skipped");
    assert_non_null(strstr(cells[2].reason, "--request none"));
    assert_string_equal(cells[3].outcome, "ok");
    assert_string_equal(cells[3].framing, "bare");
    assert_non_null(strstr(out, "\"request\": null"));
    assert_non_null(strstr(out, "\"combined\": \"not tested\""));
    assert_non_null(strstr(out, "\"oscore\": {\"tested\": false, \"cells\": 0"));
    free(out);
    rc = CLI_RUN(&out, 60,
                 "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid --timeout 3 "
                 "--request none",
                 relay.port);
    assert_int_equal(rc, 0);
    assert_non_null(
        strstr(out, "Summary: 2 ok, 0 failed, 1 not supported, 1 skipped of 4 cells\n"));
    assert_non_null(strstr(out, "OSCORE: not tested (--request none: EDHOC only)\n"));
    free(out);
    /* A request of the user's passes through: the protected answer is
     * OSCORE working, whatever the code of the resource (RFC 8613
     * Section 2: the 4.04 is inside the protected answer). */
    rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid "
                           "--framing bare --request \"GET /nonexistent\" --json",
                 r.port);
    assert_int_equal(rc, 0);
    json_checked(&out, "interop");
    n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 2); /* --framing bare: no combined request, no extra cell */
    assert_string_equal(cells[0].framing, "bare");
    assert_string_equal(cells[0].outcome, "ok");
    assert_string_equal(cells[0].oscore_text, "ok (a protected 4.04 Not Found)");
    assert_non_null(strstr(out, "\"request\": \"GET /nonexistent\""));
    free(out);
    assert_int_equal(CLI_RUN(&out, 10, "interop coap://127.0.0.1:%u --request none "
                                       "--request \"GET /x\"", r.port),
                     2);
    free(out);
    net_proc_stop(&relay, SIGKILL, 2000);
}

/* --framing auto against a device that speaks the bare framing only: the
 * first cell finds it (A.2 gets no message_2, bare does), the others use
 * it; every cell reads framing "bare"; the combined request, which goes
 * with A.2, is skipped. Against an A.2-only device the cells stay A.2 and
 * the extra bare cell is "not supported". */
static void test_framing_auto(void **state)
{
    (void)state;
    struct net_proc r;
    start_responder(&r, "auto-bare", "--framing bare");
    char *out = NULL;
    int rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 0,3 --suites 2 "
                               "--id-creds kid --framing auto --json",
                     r.port);
    assert_int_equal(rc, 0);
    json_checked(&out, "interop");
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 5);
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(cells[i].framing, "bare");
        assert_string_equal(cells[i].outcome, cells[i].m4 ? "not supported" : "ok");
    }
    assert_true(cells[4].combined);
    assert_string_equal(cells[4].outcome, "skipped");
    assert_non_null(strstr(cells[4].reason, "goes with the A.2 framing"));
    assert_non_null(strstr(out, "\"framing\": \"auto\""));
    assert_non_null(strstr(out, "\"framings\": [\"bare\"], \"message_4\": \"not supported\", "
                                "\"combined\": \"not tested\""));
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);

    start_responder(&r, "auto-a2", "--framing a2");
    rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid "
                           "--framing auto",
                 r.port);
    assert_int_equal(rc, 0);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | A.2 | ok | ok | ok | - |"), 1);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | A.2 combined | ok | ok | ok | - |"), 1);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | bare | not supported | "), 1);
    assert_non_null(strstr(out, "  framings: A.2 (not supported: bare)\n"));
    free(out);
    /* One framing only: no bare variant with a2, no combined with bare. */
    rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid "
                           "--framing a2 --json",
                 r.port);
    assert_int_equal(rc, 0);
    json_checked(&out, "interop");
    assert_int_equal(json_cells(out, cells, MAX_CELLS), 3);
    free(out);
    assert_int_equal(CLI_RUN(&out, 10, "interop coap://127.0.0.1:%u --framing coap", r.port), 2);
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);

    /* An A.2-only device that refuses method 0: the initiator's auto goes
     * on to bare after the A.2 error, whose answer ("unknown C_R") is the
     * framing's, not the method's; the device understood the A.2
     * message_1 well enough to refuse the method, so that is the answer. */
    start_responder(&r, "auto-a2-m3", "--framing a2 --methods 3");
    rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 0,3 --suites 2 --id-creds kid "
                           "--framing auto --json",
                 r.port);
    assert_int_equal(rc, 0);
    json_checked(&out, "interop");
    n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 6);
    assert_string_equal(cells[0].framing, "A.2");
    assert_string_equal(cells[0].outcome, "not supported");
    assert_string_equal(cells[0].unsupported, "method");
    assert_string_equal(cells[0].reason, "method 0 not supported by the peer");
    assert_string_equal(cells[2].framing, "A.2");
    assert_string_equal(cells[2].outcome, "ok");
    free(out);
}

/* A cell our credentials cannot make (a P-256 key for suite 0, whose
 * static DH curve is X25519) is skipped with the initiator's reason; the
 * rest of the matrix runs. When no cell can run, nothing was tested: exit
 * code 3. */
static void test_skipped_cells(void **state)
{
    (void)state;
    char cred[300], key[300], srv[300], srv_key[300], *out = NULL;
    keygen("p256-dh", "--type ccs --suite 2 --use dh --kid 0c", cred, key);
    keygen("p256-srv", "--type ccs --suite 2 --use dh --kid 0d", srv, srv_key);
    struct net_proc r;
    char extra[1000];
    snprintf(extra, sizeof extra, "--cred %s --key %s --trust %s", srv, srv_key, cred);
    start_responder(&r, "skip", extra);
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 0,2 --id-creds kid "
                     "--cred %s --key %s --trust %s --json",
                     r.port, cred, key, srv);
    /* Skipped cells do not count as failures. */
    assert_int_equal(rc, 0);
    json_checked(&out, "interop");
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(cells[i].suite, 0);
        assert_string_equal(cells[i].outcome, "skipped");
        assert_string_equal(cells[i].edhoc_text, "");
        assert_non_null(strstr(cells[i].reason, "not possible with our credentials"));
        assert_non_null(strstr(cells[i].reason, "suite 0"));
    }
    assert_string_equal(cells[2].outcome, "ok");
    assert_string_equal(cells[3].outcome, "not supported");
    assert_int_equal(cells[4].suite, 2);
    assert_string_equal(cells[4].outcome, "ok");
    assert_string_equal(cells[5].outcome, "ok");
    assert_non_null(strstr(out, "\"skipped\": 2,"));
    free(out);
    rc = CLI_RUN(&out, 60,
                 "interop coap://127.0.0.1:%u --methods 3 --suites 0 --id-creds kid "
                 "--cred %s --key %s --trust %s",
                 r.port, cred, key, srv);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "Summary: 0 ok, 0 failed, 0 not supported, 4 skipped of 4 cells"));
    free(out);
}

/* --tolerate LIST goes to every cell as it is (the initiator checks it);
 * with an initiator that takes it, the cells carry its "tolerated" list. */
static void test_tolerate_passed_through(void **state)
{
    (void)state;
    struct net_proc r;
    start_responder(&r, "tolerate", "");
    char dir[300], path[400], *out = NULL;
    net_path(dir, sizeof dir, "tolerate-traces");
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid "
                     "--tolerate c-bstr,kid-int --trace-dir %s --json",
                     r.port, dir);
    snprintf(path, sizeof path, "%s/m3-s2-kid.txt", dir);
    char *tr = net_read_file(path);
    assert_non_null(tr);
    assert_non_null(strstr(tr, " --tolerate c-bstr,kid-int"));
    free(tr);
    char *help = NULL;
    net_cli_run(&help, 10, false, "initiator --help");
    if (help && strstr(help, "--tolerate")) {
        /* Nothing to tolerate from our own responder. */
        assert_int_equal(rc, 0);
        json_checked(&out, "interop");
        struct cell cells[MAX_CELLS];
        assert_int_equal(json_cells(out, cells, MAX_CELLS), 4);
        assert_string_equal(cells[0].outcome, "ok");
        assert_string_equal(cells[0].tolerated, "[]");
    } else {
        /* An initiator without the option refuses it before sending: the
         * same for every cell, so the matrix stops (exit 2). */
        assert_int_equal(rc, 2);
    }
    free(help);
    free(out);
}

/* The device as the initiator, in the bare framing, against a responder
 * that takes A.2 only: the responder reads METHOD as a C_R and the rest as
 * message_3 ("unknown C_R 03"); the report names what happened. */
static void test_report_bare_message_1(void **state)
{
    (void)state;
    char dir[300], extra[400];
    net_path(dir, sizeof dir, "bare-m1");
    snprintf(extra, sizeof extra, "--framing a2 --interop-log %s", dir);
    struct net_proc r;
    start_responder(&r, "bare-m1", extra);
    char *out = NULL;
    /* The responder answers with an EDHOC error: exit code 4. */
    assert_int_equal(CLI_RUN(&out, 20, "initiator coap://127.0.0.1:%u --method 3 --suites 2 "
                                       "--framing bare",
                             r.port),
                     4);
    free(out);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 3000), 0);
    int rc = CLI_RUN(&out, 20, "interop --report %s --json", dir);
    assert_int_equal(rc, 1);
    json_checked(&out, "interop-report");
    struct report_row rows[4];
    assert_int_equal(report_rows(out, rows, 4), 1);
    /* RFC 9528 Appendix A.2: message_1 is prefixed with CBOR true; without
     * it the first byte is METHOD (3), read as C_R by an A.2 responder. */
    assert_int_equal(rows[0].method, 3);
    assert_string_equal(rows[0].framing, "bare");
    assert_string_equal(rows[0].outcome, "refused");
    assert_string_equal(rows[0].result, "EDHOC error 1 sent: a bare-framed message_1");
    assert_string_equal(rows[0].reason,
                        "a bare-framed message_1 (RFC 9528 Appendix A.2 expects the true prefix): "
                        "the device speaks the bare framing; start the responder with --framing "
                        "both or bare");
    free(out);
    /* Without the datagrams (a bounded log), the record alone tells it. */
    char pcap[400];
    snprintf(pcap, sizeof pcap, "%s/1.pcap", dir);
    assert_int_equal(unlink(pcap), 0);
    rc = CLI_RUN(&out, 20, "interop --report %s", dir);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "| 1 | 3 | ? -> -1 | - | no | bare | 1 | 0 | EDHOC error 1 sent: "
                                "a bare-framed message_1 | a bare-framed message_1 (RFC 9528 "
                                "Appendix A.2 expects the true prefix): the device speaks the "
                                "bare framing; start the responder with --framing both or bare "
                                "(told by the C_R"));
    free(out);
}

static void test_usage(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(CLI_RUN(&out, 10, "interop"), 2);
    free(out);
    assert_int_equal(CLI_RUN(&out, 10, "interop coap://127.0.0.1:5683 --methods 0,7"), 2);
    free(out);
    assert_int_equal(CLI_RUN(&out, 10, "interop coap://127.0.0.1:5683 --id-creds kid,x9"), 2);
    free(out);
    assert_int_equal(CLI_RUN(&out, 10, "interop coap://127.0.0.1:5683 --timeout 0"), 2);
    free(out);
    /* A URI the initiator refuses stops the matrix at the first cell. */
    uint64_t t0 = net_now_ms();
    assert_int_equal(CLI_RUN(&out, 10, "interop coap://127.0.0.1:notaport --methods 3"), 2);
    assert_true(net_now_ms() - t0 < 3000);
    free(out);
    assert_int_equal(CLI_RUN(&out, 10, "interop --help"), 0);
    assert_non_null(strstr(out, "--trace-dir DIR"));
    free(out);
}


/* Mode of path (lstat), or -1. */
static int path_mode(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

/* Secrets readable by others: each --trace-dir trace holds the ephemeral
 * private key, PRK_out and the OSCORE master secret. Under umask 022 the
 * directory is created 0700 and every file in it (traces and captures)
 * 0600; a file left 0644 by an earlier run is tightened; an existing
 * directory group or others can access, and a symbolic link, are refused. */
static void test_trace_dir_private(void **state)
{
    (void)state;
    struct net_proc r;
    start_responder(&r, "tracemode", "");
    char dir[300], path[700], *out = NULL;
    net_path(dir, sizeof dir, "private-traces");
    mode_t old_umask = umask(022);
    int rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 3 --suites 2 "
                               "--id-creds kid --trace-dir %s", r.port, dir);
    free(out);
    assert_int_equal(rc, 0);
    assert_int_equal(path_mode(dir), 0700);
    size_t txt = 0, pcap = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (path_mode(path) != 0600)
            fail_msg("%s: mode %04o, expected 0600", path, path_mode(path));
        txt += strstr(e->d_name, ".txt") != NULL;
        pcap += strstr(e->d_name, ".pcap") != NULL;
    }
    closedir(d);
    assert_int_equal(txt, 4); /* A.2, message_4, combined, bare */
    assert_true(pcap >= 3);
    snprintf(path, sizeof path, "%s/m3-s2-kid.txt", dir);
    char *tr = net_read_file(path);
    assert_non_null(tr);
    assert_non_null(strstr(tr, "PRK_out"));
    free(tr);

    /* Again into the same (private) directory: a file an earlier run left
     * readable by others is made 0600 before it is rewritten. */
    assert_int_equal(chmod(path, 0644), 0);
    snprintf(path, sizeof path, "%s/m3-s2-kid.pcap", dir);
    assert_int_equal(chmod(path, 0644), 0);
    rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 3 --suites 2 "
                           "--id-creds kid --trace-dir %s", r.port, dir);
    free(out);
    assert_int_equal(rc, 0);
    assert_int_equal(path_mode(path), 0600);
    snprintf(path, sizeof path, "%s/m3-s2-kid.txt", dir);
    assert_int_equal(path_mode(path), 0600);

    /* An existing directory group and others can read: refused, nothing
     * run, nothing written in it, and the message gives the fix. */
    char open_dir[300], expect[1200];
    net_path(open_dir, sizeof open_dir, "open-traces");
    assert_int_equal(mkdir(open_dir, 0755), 0);
    assert_int_equal(chmod(open_dir, 0755), 0);
    rc = net_cli_run(&out, 60, false, "interop coap://127.0.0.1:%u --methods 3 --suites 2 "
                                      "--id-creds kid --trace-dir %s", r.port, open_dir);
    assert_int_equal(rc, 3);
    snprintf(expect, sizeof expect,
             "edhoc-cli interop: --trace-dir %s: group or others can access it (mode 0755) "
             "and the traces hold session secrets: chmod 700 %s, or give a new directory\n",
             open_dir, open_dir);
    assert_string_equal(out, expect);
    free(out);
    assert_int_equal(path_mode(open_dir), 0755);
    d = opendir(open_dir);
    assert_non_null(d);
    size_t entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        entries += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(entries, 0);

    /* A symbolic link (even to a private directory) is refused. */
    char link_path[300];
    net_path(link_path, sizeof link_path, "link-traces");
    assert_int_equal(symlink(dir, link_path), 0);
    rc = net_cli_run(&out, 60, false, "interop coap://127.0.0.1:%u --methods 3 --suites 2 "
                                      "--id-creds kid --trace-dir %s", r.port, link_path);
    assert_int_equal(rc, 3);
    snprintf(expect, sizeof expect,
             "edhoc-cli interop: --trace-dir %s: is a symbolic link; the traces hold session "
             "secrets: give the directory itself, not a link to it\n",
             link_path);
    assert_string_equal(out, expect);
    free(out);
    umask(old_umask);
}

/* ---- Issue 14: the command-line contract of interop and bytes ---- */

/* `edhoc-cli ARGS` (a shell fragment) in the background, stdout and
 * stderr into files; registered so that teardown stops it whatever
 * happens. */
static void cli_start(struct net_proc *p, const char *out_path, const char *err_path,
                      const char *env, const char *args)
{
    memset(p, 0, sizeof *p);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec %s%s %s >%s 2>%s", env, cli, args, out_path, err_path);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
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

/* How the process ended (exit code, or 128 + signal), waiting at most
 * timeout_ms; the test fails if it is still running then. */
static int cli_wait(struct net_proc *p, unsigned timeout_ms)
{
    uint64_t end = net_now_ms() + timeout_ms;
    int st = 0;
    pid_t r;
    while ((r = waitpid(p->pid, &st, WNOHANG)) == 0 && net_now_ms() < end)
        net_sleep_ms(10);
    if (r == 0)
        fail_msg("edhoc-cli still running after %u ms", timeout_ms);
    p->pid = 0;
    for (size_t i = 0; i < NET_MAX_PROCS; i++) {
        if (net_procs[i] == p)
            net_procs[i] = NULL;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Files in dir whose name ends with suffix (prefix: also starts so). */
static size_t count_files(const char *dir, const char *prefix, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name), ls = strlen(suffix);
        if (e->d_name[0] != '.' && !strncmp(e->d_name, prefix, strlen(prefix)) && l >= ls &&
            !strcmp(e->d_name + l - ls, suffix))
            n++;
    }
    closedir(d);
    return n;
}

/* Processes whose command line holds needle (their arguments joined by
 * spaces). */
static size_t processes_with(const char *needle)
{
    DIR *d = opendir("/proc");
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
            continue;
        char path[300], buf[4096];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < len; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        buf[len] = '\0';
        if (strstr(buf, needle) && !strstr(buf, "sh -c"))
            n++;
    }
    closedir(d);
    return n;
}

/* Wait until dir holds a file ending with suffix (at most timeout_ms). */
static bool wait_for_file(const char *dir, const char *prefix, const char *suffix,
                          unsigned timeout_ms)
{
    uint64_t end = net_now_ms() + timeout_ms;
    while (net_now_ms() < end) {
        if (count_files(dir, prefix, suffix) > 0)
            return true;
        net_sleep_ms(5);
    }
    return false;
}

/* Issue 14 item 9: Ctrl-C during interop printed nothing and exited 130.
 * Now SIGINT after some cells completed (seen by their traces, not by
 * waiting a fixed time) stops the running cell's initiator, leaves that
 * cell out (its capture removed), prints the matrix of the completed cells
 * marked partial ("partial": true) and exits 128 + SIGINT; SIGTERM the same
 * with 143, and the table says "interrupted: partial results". */
static void test_interrupted_matrix(void **state)
{
    (void)state;
    uint16_t port = 0;
    int fd = net_silent_socket(&port);
    assert_true(fd >= 0);
    for (int round = 0; round < 2; round++) {
        char dir[300], outp[300], errp[300], args[1200], name[64];
        snprintf(name, sizeof name, "interrupt-%d", round);
        net_path(dir, sizeof dir, name);
        snprintf(name, sizeof name, "interrupt-%d.out", round);
        net_path(outp, sizeof outp, name);
        snprintf(name, sizeof name, "interrupt-%d.err", round);
        net_path(errp, sizeof errp, name);
        /* A silent device: each cell lasts its --timeout (decimals, issue
         * 14), ten cells in all. */
        snprintf(args, sizeof args,
                 "interop coap://127.0.0.1:%u --methods 0,1,2,3 --suites 2 --id-creds kid "
                 "--timeout 0.3 --trace-dir %s%s",
                 port, dir, round == 0 ? " --json" : "");
        struct net_proc p;
        cli_start(&p, outp, errp, "", args);
        /* The first cell's trace: it completed, the next one runs. */
        assert_true(wait_for_file(dir, "", ".txt", 20000));
        kill(p.pid, round == 0 ? SIGINT : SIGTERM);
        int rc = cli_wait(&p, 15000);
        char *out = net_read_file(outp), *err = net_read_file(errp);
        assert_non_null(out);
        assert_non_null(err);
        /* The initiator of the cell that was running is gone too. */
        char needle[64];
        snprintf(needle, sizeof needle, "initiator coap://127.0.0.1:%u", port);
        assert_int_equal(processes_with(needle), 0);
        size_t traces = count_files(dir, "", ".txt");
        if (round == 0) {
            assert_int_equal(rc, 128 + SIGINT);
            json_checked(&out, "interop");
            assert_non_null(strstr(out, "\"partial\": true, \"cells_planned\": 10,"));
            struct cell cells[MAX_CELLS];
            size_t n = json_cells(out, cells, MAX_CELLS);
            assert_true(n >= 1 && n < 10);
            /* Exactly the completed cells, each with its trace. */
            assert_int_equal(traces, n);
            for (size_t i = 0; i < n; i++)
                assert_string_equal(cells[i].failure, "timeout");
        } else {
            assert_int_equal(rc, 128 + SIGTERM);
            assert_non_null(strstr(out, "interrupted: partial results ("));
            assert_non_null(strstr(out, " of 10 cells completed)"));
            assert_int_equal((size_t)net_count(out, "| timeout |"), traces);
        }
        assert_non_null(strstr(err, "interrupted: partial results"));
        /* No capture of a cell that is not in the matrix. */
        assert_true(count_files(dir, "", ".pcap") <= traces);
        free(out);
        free(err);
    }
    close(fd);
}

/* Issue 14, "JSON as a contract": the report reader found members by
 * searching the line's text, so a key of a nested object that comes
 * first (here "type", "id", "method" and "outcome" of "context") was read
 * as the record's: the handshake below was taken for an OSCORE record and
 * the report said "No handshake recorded yet" with exit 0. Read with a
 * JSON parser, the record's own members make the row. */
static void test_report_nested_keys(void **state)
{
    (void)state;
    char dir[300], path[400], *out = NULL;
    net_path(dir, sizeof dir, "nested");
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(path, sizeof path, "%s/handshakes.jsonl", dir);
    net_write_file(path,
                   "{\"context\": {\"type\": \"oscore\", \"id\": 99, \"ok\": true, \"method\": 0, "
                   "\"suite\": 6, \"outcome\": \"ok\", \"host\": \"203.0.113.9\"}, "
                   "\"type\": \"handshake\", \"id\": 4, \"host\": \"192.0.2.7\", \"method\": 3, "
                   "\"suites_i\": [2], \"suite\": 2, \"framing\": \"A.2\", \"combined\": false, "
                   "\"message_4\": false, \"id_cred_i_type\": \"kid\", \"id_cred_i\": \"a1044107\", "
                   "\"outcome\": \"verify\", \"err_code\": 1, \"suites_r\": [], "
                   "\"edhoc_bytes\": 101, \"ms\": 3, \"trace\": \"4.txt\", \"pcap\": null, "
                   "\"result\": \"our verification failed: MAC_3 verification failed\", "
                   "\"reason\": \"the \\\"outcome\\\": \\\"ok\\\" of another record\"}\n",
                   0600);
    int rc = CLI_RUN(&out, 20, "interop --report %s --json", dir);
    assert_int_equal(rc, 1);
    json_checked(&out, "interop-report");
    assert_non_null(strstr(out, "\"handshakes\": 1, \"skipped_lines\": 0,"));
    assert_non_null(strstr(out, "\"host\": \"192.0.2.7\""));
    assert_null(strstr(out, "203.0.113.9"));
    struct report_row rows[4];
    assert_int_equal(report_rows(out, rows, 4), 1);
    assert_row(&rows[0], 3, "[2]", 2, "kid", "A.2", false, "verify", 1, 1, 0);
    assert_string_equal(rows[0].trace, "4.txt");
    assert_string_equal(rows[0].pcap, "");
    assert_non_null(strstr(out, "\"last_id\": 4,"));
    /* A string that holds a key name is text, nothing more. */
    assert_string_equal(rows[0].reason, "the \"outcome\": \"ok\" of another record");
    free(out);
}

/* Issue 14: one table per command; options of the other mode refused
 * with the mode they belong to; old spellings name the new one; --timeout
 * takes decimals; no per-cell lines on a standard error that is not a
 * terminal (progress is for terminals, or -v). */
static void test_interop_options(void **state)
{
    (void)state;
    char *out = NULL;
    static const struct {
        const char *args, *message;
    } bad[] = {
        {"interop coap://127.0.0.1:5683 --timeout-ms 500",
         "edhoc-cli interop: --timeout-ms is no longer an option: use --timeout SECONDS "
         "(decimals allowed, e.g. --timeout 0.5)\n"},
        {"interop coap://127.0.0.1:5683 --handshake-timeout 2",
         "edhoc-cli interop: --handshake-timeout is no longer an option: use --timeout SECONDS "
         "(each cell's bound; decimals allowed)\n"},
        {"interop --report /nonexistent --methods 3",
         "edhoc-cli interop: --methods applies to the matrix against a device (edhoc-cli "
         "interop URI), not to --report\n"},
        {"interop --report /nonexistent --trace-dir /tmp/x",
         "edhoc-cli interop: --trace-dir applies to the matrix against a device (edhoc-cli "
         "interop URI), not to --report\n"},
        {"interop --report /nonexistent coap://127.0.0.1:5683",
         "edhoc-cli interop: --report reads the log of a responder and tests no device (got "
         "'coap://127.0.0.1:5683'; run them separately)\n"},
        {"interop coap://127.0.0.1:5683 --timeout 0.01",
         "edhoc-cli interop: --timeout: expected seconds from 0.1 to 600 (decimals allowed, e.g. "
         "0.5), got '0.01'\n"},
        {"interop coap://127.0.0.1:5683 --full=yes",
         "edhoc-cli interop: --full takes no value (got 'yes')\n"},
        {"interop coap://127.0.0.1:5683 --framing=coap",
         "edhoc-cli interop: --framing: expected one of a2, A.2, bare, auto, got 'coap'\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(net_cli_run(&out, 10, false, "%s", bad[i].args), 2);
        assert_string_equal(out, bad[i].message);
        free(out);
    }
    /* --help comes from the table; `help interop` prints the same. */
    char *help = NULL;
    assert_int_equal(CLI_RUN(&out, 10, "interop --help"), 0);
    assert_int_equal(CLI_RUN(&help, 10, "help interop"), 0);
    assert_string_equal(out, help);
    assert_non_null(strstr(out, "--timeout SECONDS"));
    assert_non_null(strstr(out, "--report DIR"));
    assert_non_null(strstr(out, "docs/json/interop.schema.json"));
    free(help);
    free(out);

    /* A run with --opt=value spellings and a decimal --timeout, standard
     * error a file: nothing on it (it had one line per cell). */
    struct net_proc r;
    start_responder(&r, "options", "");
    char errp[300];
    net_path(errp, sizeof errp, "options.err");
    int rc = net_cli_run(&out, 60, false,
                         "interop coap://127.0.0.1:%u --methods=3 --suites=2 --id-creds=kid "
                         "--timeout=2.5 2>%s",
                         r.port, errp);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "(each cell bounded by 2.5 s)"));
    assert_non_null(strstr(out, "Summary: 3 ok, 0 failed, 1 not supported, 0 skipped of 4 cells"));
    char *err = net_read_file(errp);
    assert_string_equal(err, "");
    free(err);
    free(out);
    rc = net_cli_run(&out, 60, false,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid -q --json "
                     "2>%s",
                     r.port, errp);
    assert_int_equal(rc, 0);
    err = net_read_file(errp);
    assert_string_equal(err, "");
    free(err);
    json_checked(&out, "interop");
    assert_non_null(strstr(out, "\"timeout_s\": 5.0,"));

    /* The schema check can fail: the same document without a member it
     * requires, or with -1 where the schema allows null, is refused. */
    char *broken = json_python(out, "d.pop(chr(112) + chr(97) + chr(114) + chr(116) + chr(105) + "
                                    "chr(97) + chr(108)); print(json.dumps(d))");
    assert_int_not_equal(net_json_valid(broken, "interop", false), 0);
    free(broken);
    broken = json_python(out, "d[chr(99) + chr(101) + chr(108) + chr(108) + chr(115)][0]"
                              "[chr(101) + chr(114) + chr(114) + chr(95) + chr(99) + chr(111) + "
                              "chr(100) + chr(101)] = -1; print(json.dumps(d))");
    assert_int_not_equal(net_json_valid(broken, "interop", false), 0);
    free(broken);
    free(out);
}

/* `bytes`: one table for a capture and for --compare; an option of the
 * other mode is refused with the mode it belongs to (it was ignored, or
 * refused by a parser of its own), and so are 802.15.4 assumptions
 * without --link 802.15.4. */
static void test_bytes_options(void **state)
{
    (void)state;
    char *out = NULL;
    static const struct {
        const char *args, *message;
    } bad[] = {
        {"bytes --timeout 5 x.pcap",
         "edhoc-cli bytes: --timeout bounds --compare; reading a capture is not bounded (add "
         "--compare, or leave --timeout out)\n"},
        {"bytes --compare x.pcap",
         "edhoc-cli bytes: --compare measures on loopback and reads no capture (got 'x.pcap')\n"},
        {"bytes --compare --addr auto",
         "edhoc-cli bytes: --addr describes the addresses of a capture; --compare runs on IPv4 "
         "loopback, counted as link-local addresses\n"},
        {"bytes x.pcap --mac-header 9",
         "edhoc-cli bytes: --mac-header describes 802.15.4 frames: add --link 802.15.4\n"},
        {"bytes x.pcap --frame-overhead 4",
         "edhoc-cli bytes: --frame-overhead describes the frames of a --link-mtu link: add "
         "--link-mtu N\n"},
        {"bytes --compare --timeout-ms 500",
         "edhoc-cli bytes: --timeout-ms is no longer an option: use --timeout SECONDS with "
         "--compare (decimals allowed, e.g. --timeout 0.5)\n"},
        {"bytes --compare --timeout 0.05",
         "edhoc-cli bytes: --timeout: expected seconds from 0.1 to 600 (decimals allowed, e.g. "
         "0.5), got '0.05'\n"},
        {"bytes a.pcap b.pcap",
         "edhoc-cli bytes: one capture file at a time (got 'a.pcap' and 'b.pcap')\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(net_cli_run(&out, 10, false, "%s", bad[i].args), 2);
        assert_string_equal(out, bad[i].message);
        free(out);
    }
    assert_int_equal(CLI_RUN(&out, 10, "bytes --help"), 0);
    assert_non_null(strstr(out, "docs/json/bytes.schema.json"));
    assert_non_null(strstr(out, "docs/json/bytes-compare.schema.json"));
    free(out);
    /* A decimal bound, and the document valid against its schema; one
     * without a required member is not. */
    assert_int_equal(CLI_RUN(&out, 60, "bytes --compare --timeout 30.5 --json"), 0);
    assert_int_equal(net_json_valid(out, "bytes-compare", false), 0);
    assert_non_null(strstr(out, "\"partial\": false"));
    char *broken = json_python(out, "d.pop(chr(114) + chr(117) + chr(110) + chr(115)); "
                                    "print(json.dumps(d))");
    assert_int_not_equal(net_json_valid(broken, "bytes-compare", false), 0);
    free(broken);
    free(out);
}

/* bytes --compare interrupted (issue 14 item 9): its responder and
 * initiator are stopped and its temporary directory removed, and what
 * completed is printed marked partial. The run is short: the signal is
 * sent as soon as its first responder is up; when the run finished first,
 * the same holds of a complete run. */
static void test_bytes_compare_interrupted(void **state)
{
    (void)state;
    char tmp[300], outp[300], errp[300], env[400];
    net_path(tmp, sizeof tmp, "cmp");
    assert_int_equal(mkdir(tmp, 0700), 0);
    net_path(outp, sizeof outp, "cmp.out");
    net_path(errp, sizeof errp, "cmp.err");
    snprintf(env, sizeof env, "env TMPDIR=%s ", tmp);
    struct net_proc p;
    cli_start(&p, outp, errp, env, "bytes --compare --json");
    /* Its temporary directory, then the ready file of its first responder. */
    char sub[400] = "";
    uint64_t end = net_now_ms() + 20000;
    while (!sub[0] && net_now_ms() < end) {
        DIR *d = opendir(tmp);
        for (struct dirent *e; d && (e = readdir(d));)
            if (!strncmp(e->d_name, "edhoc-compare-", 14))
                snprintf(sub, sizeof sub, "%s/%s", tmp, e->d_name);
        if (d)
            closedir(d);
        if (!sub[0])
            net_sleep_ms(1);
    }
    if (sub[0])
        wait_for_file(sub, "ready-", "", 10000);
    kill(p.pid, SIGINT);
    int rc = cli_wait(&p, 30000);
    assert_true(rc == 0 || rc == 128 + SIGINT);
    /* Nothing left behind: no temporary directory, no child running. */
    assert_int_equal(count_files(tmp, "edhoc-compare-", ""), 0);
    assert_int_equal(processes_with(tmp), 0);
    char *out = net_read_file(outp);
    assert_non_null(out);
    assert_int_equal(net_json_valid(out, "bytes-compare", false), 0);
    assert_non_null(strstr(out, rc ? "\"partial\": true" : "\"partial\": false"));
    free(out);
}

/* `keygen ARGS` with every "@" in ARGS replaced by the test directory. */
static void keygen_at(const char *args)
{
    char path[300], cmd[2000];
    net_path(path, sizeof path, "");
    size_t used = 0;
    for (const char *p = args; *p && used + 300 < sizeof cmd; p++) {
        if (*p == '@')
            used += (size_t)snprintf(cmd + used, sizeof cmd - used, "%s", path);
        else
            cmd[used++] = *p;
    }
    cmd[used] = '\0';
    char *out = NULL;
    int rc = CLI_RUN(&out, 30, "keygen --force %s", cmd);
    if (rc != 0)
        fail_msg("keygen %s: exit %d: %s", cmd, rc, out ? out : "");
    free(out);
}

/* The credential forms of RFC 9528 Section 3.5.3 beyond kid/kccs/x5t/
 * x5chain between a real responder and initiator over CoAP: a certificate
 * named by kid, an x5bag, a CWT by value (kcwt, Section 3.5.3.1) and by
 * kid; then x5bag as a column of the interop matrix. */
static void test_new_credential_forms_over_coap(void **state)
{
    (void)state;
    keygen_at("--type x509 --curve Ed25519 --ca --subject Root --out-cred @ca.pem "
              "--out-key @ca.key");
    keygen_at("--type x509 --curve Ed25519 --ca --subject Sub --ca-cert @ca.pem --ca-key @ca.key "
              "--out-cred @sub.pem --out-key @sub.key");
    keygen_at("--type x509 --curve Ed25519 --kid 2c --ca-cert @sub.pem --ca-key @sub.key "
              "--out-cred @i.pem --out-key @i.key");
    keygen_at("--type x509 --curve Ed25519 --kid 2d --ca-cert @sub.pem --ca-key @sub.key "
              "--out-cred @r.pem --out-key @r.key");
    keygen_at("--type ccs --curve Ed25519 --kid 0a --out-cred @iss.ccs --out-key @iss.key");
    keygen_at("--type cwt --curve Ed25519 --kid 2a --issuer-key @iss.key --issuer-kid 0a "
              "--out-cred @ci.cwt --out-key @ci.key");
    keygen_at("--type cwt --curve Ed25519 --kid 2b --issuer-key @iss.key --issuer-kid 0a "
              "--out-cred @cr.cwt --out-key @cr.key");
    char d[300];
    net_path(d, sizeof d, "");
    /* Trust for certificates named by kid: the peers' own files (their
     * "EDHOC-kid:" lines name them) and the root for chains and bags. */
    static const struct {
        const char *form, *cred_i, *cred_r, *id_cred, *trust_r, *trust_i;
    } forms[] = {
        {"x5 by kid", "i.pem", "r.pem", "kid", "i.pem", "r.pem"},
        {"x5bag", "i.pem", "r.pem", "x5bag", "ca.pem", "ca.pem"},
        {"kcwt", "ci.cwt", "cr.cwt", "kcwt", "iss.ccs", "iss.ccs"},
        {"kcwt by kid", "ci.cwt", "cr.cwt", "kid", "ci.cwt", "cr.cwt"},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        struct net_proc r;
        char args[1500], name[32];
        snprintf(name, sizeof name, "forms%zu", i);
        /* --key: same base name as the credential. */
        snprintf(args, sizeof args,
                 "--listen 127.0.0.1:0 --state-dir none --methods 0 --suites 0 --cred %s%s "
                 "--key %s%.*s.key --trust %s%s --id-cred %s",
                 d, forms[i].cred_r, d, (int)(strchr(forms[i].cred_r, '.') - forms[i].cred_r),
                 forms[i].cred_r, d, forms[i].trust_r, forms[i].id_cred);
        assert_int_equal(net_responder_start(&r, name, args), 0);
        char *out = NULL;
        int rc = CLI_RUN(&out, 30,
                         "initiator coap://127.0.0.1:%u --request none --method 0 --suites 0 "
                         "--cred %s%s --key %s%.*s.key --trust %s%s --id-cred %s --json",
                         r.port, d, forms[i].cred_i, d,
                         (int)(strchr(forms[i].cred_i, '.') - forms[i].cred_i), forms[i].cred_i, d,
                         forms[i].trust_i, forms[i].id_cred);
        if (rc != 0)
            fail_msg("%s over CoAP: exit %d: %s", forms[i].form, rc, out ? out : "");
        char want[64];
        snprintf(want, sizeof want, "\"id_cred_i\": \"%s\"", forms[i].id_cred);
        if (!strstr(out, want))
            fail_msg("%s: %s not in:\n%s", forms[i].form, want, out);
        free(out);
        net_proc_stop(&r, SIGTERM, 5000);
    }

    /* The matrix: x5bag, x5chain and kid as ID_CRED columns against a
     * responder that trusts our root and knows our kid, and names itself
     * by x5bag. */
    struct net_proc r;
    char args[1500];
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:0 --state-dir none --cred %sr.pem --key %sr.key --trust %sca.pem "
             "--trust %si.pem --id-cred x5bag",
             d, d, d, d);
    assert_int_equal(net_responder_start(&r, "forms-matrix", args), 0);
    char json_path[300];
    net_path(json_path, sizeof json_path, "forms.json");
    char *out = NULL;
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 0 --suites 0 --cred %si.pem --key "
                     "%si.key --trust %sca.pem --id-creds x5bag,x5chain,kid --json-out %s",
                     r.port, d, d, d, json_path);
    if (rc != 0)
        fail_msg("interop with x5bag: exit %d: %s", rc, out ? out : "");
    free(out);
    char *json = net_read_file(json_path);
    assert_non_null(json);
    json_checked(&json, "interop");
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(json, cells, MAX_CELLS);
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        if (!cells[i].m4 && !strcmp(cells[i].outcome, "ok"))
            ok++;
    }
    assert_non_null(strstr(json, "m0-s0-x5bag"));
    assert_true(ok >= 3); /* x5bag, x5chain and kid without message_4 */
    free(json);
    net_proc_stop(&r, SIGTERM, 5000);
}

/* responder --kid HEX names its one certificate (RFC 9528 Section 3.5.3: a
 * kid may reference any credential the peer has): a certificate file
 * without an "EDHOC-kid:" line, served with --id-cred kid --kid 2e, is
 * found by an initiator whose trust file names it 2e. Without --kid the
 * responder cannot send a kid for it; --kid with two --cred is refused. */
static void test_responder_kid_for_certificate(void **state)
{
    (void)state;
    keygen_at("--type x509 --curve Ed25519 --subject Responder --out-cred @rk.pem "
              "--out-key @rk.key");
    keygen_at("--type x509 --curve Ed25519 --kid 2c --subject Initiator --out-cred @ik.pem "
              "--out-key @ik.key");
    char d[300], named[400];
    net_path(d, sizeof d, "");
    /* The initiator's trust: the responder's certificate under kid 2e. */
    char *pem = NULL;
    snprintf(named, sizeof named, "%srk.pem", d);
    pem = net_read_file(named);
    assert_non_null(pem);
    assert_null(strstr(pem, "EDHOC-kid:"));
    size_t cap = strlen(pem) + 32;
    char *text = malloc(cap);
    assert_non_null(text);
    snprintf(text, cap, "EDHOC-kid: 2e\n%s", pem);
    snprintf(named, sizeof named, "%srk-2e.pem", d);
    net_write_file(named, text, 0644);
    free(text);
    free(pem);
    struct net_proc r;
    char args[1500];
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:0 --state-dir none --methods 0 --suites 0 --cred %srk.pem "
             "--key %srk.key --kid 2e --trust %sik.pem --id-cred kid",
             d, d, d);
    assert_int_equal(net_responder_start(&r, "kid-cert", args), 0);
    char *out = NULL;
    int rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --request none --method 0 --suites 0 "
                     "--cred %sik.pem --key %sik.key --trust %srk-2e.pem --id-cred kid --json",
                     r.port, d, d, d);
    if (rc != 0)
        fail_msg("responder --kid over CoAP: exit %d: %s", rc, out ? out : "");
    /* ID_CRED_R travels as the compact kid 2e (one byte, not an int form:
     * 0x2e is the CBOR int -15, sent as that int, RFC 9528 Section 3.5.3.2). */
    assert_non_null(strstr(out, "\"id_cred_r\": \"kid\""));
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);

    rc = net_cli_run(&out, 30, false,
                     "responder --listen 127.0.0.1:0 --state-dir none --cred %srk.pem --key "
                     "%srk.key --cred %sik.pem --key %sik.key --kid 2e --trust %sik.pem",
                     d, d, d, d, d);
    if (rc != 2 || !strstr(out, "--kid names one credential: give exactly one --cred with it"))
        fail_msg("responder --kid with two --cred: exit %d: %s", rc, out);
    free(out);
}

/* Suite 25: no OSCORE context can follow it (RFC 8613 Section 3.2.1 has
 * no HKDF for SHAKE256), so its cells are skipped with that reason unless
 * --request none asks for EDHOC only; then the handshake cell is ok
 * against a responder that offers 25 (--suites 25,2). */
static void test_suite_25_cells(void **state)
{
    (void)state;
    struct net_proc r;
    start_responder(&r, "suite25", "--suites 25,2");
    char *out = NULL;
    int rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 3 --suites 25 "
                               "--id-creds kid --json",
                     r.port);
    assert_int_equal(rc, 3); /* no cell ran */
    json_checked(&out, "interop");
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(cells[i].outcome, "skipped");
        assert_non_null(strstr(cells[i].reason, "suite 25 has no OSCORE context (RFC 8613 "
                                                "Section 3.2.1"));
    }
    free(out);
    rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 3 --suites 25 --id-creds kid "
                           "--request none --json",
                 r.port);
    assert_int_equal(rc, 0);
    json_checked(&out, "interop");
    n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 4);
    assert_string_equal(cells[0].outcome, "ok");
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_usage, net_test_teardown),
        cmocka_unit_test_teardown(test_new_credential_forms_over_coap, net_test_teardown),
        cmocka_unit_test_teardown(test_responder_kid_for_certificate, net_test_teardown),
        cmocka_unit_test_teardown(test_suite_25_cells, net_test_teardown),
        cmocka_unit_test_teardown(test_own_responder_matrix, net_test_teardown),
        cmocka_unit_test_teardown(test_message_4_responder, net_test_teardown),
        cmocka_unit_test_teardown(test_suite_2_only, net_test_teardown),
        cmocka_unit_test_teardown(test_method_3_only, net_test_teardown),
        cmocka_unit_test_teardown(test_one_framing_only, net_test_teardown),
        cmocka_unit_test_teardown(test_unknown_credentials, net_test_teardown),
        cmocka_unit_test_teardown(test_wrong_peer_key, net_test_teardown),
        cmocka_unit_test_teardown(test_silent_device, net_test_teardown),
        cmocka_unit_test_teardown(test_report_of_initiators, net_test_teardown),
        cmocka_unit_test_teardown(test_report_damaged_log, net_test_teardown),
        cmocka_unit_test_teardown(test_interop_log_bound, net_test_teardown),
        cmocka_unit_test_teardown(test_interop_log_long_kid, net_test_teardown),
        cmocka_unit_test_teardown(test_edhoc_only_device, net_test_teardown),
        cmocka_unit_test_teardown(test_framing_auto, net_test_teardown),
        cmocka_unit_test_teardown(test_skipped_cells, net_test_teardown),
        cmocka_unit_test_teardown(test_tolerate_passed_through, net_test_teardown),
        cmocka_unit_test_teardown(test_report_bare_message_1, net_test_teardown),
        cmocka_unit_test_teardown(test_trace_dir_private, net_test_teardown),
        cmocka_unit_test_teardown(test_interrupted_matrix, net_test_teardown),
        cmocka_unit_test_teardown(test_report_nested_keys, net_test_teardown),
        cmocka_unit_test_teardown(test_interop_options, net_test_teardown),
        cmocka_unit_test_teardown(test_bytes_options, net_test_teardown),
        cmocka_unit_test_teardown(test_bytes_compare_interrupted, net_test_teardown),
    };
    return cmocka_run_group_tests(tests, setup, net_group_teardown);
}
