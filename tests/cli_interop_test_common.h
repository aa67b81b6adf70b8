/* What the end-to-end tests of `edhoc-cli interop` share
 * (test_cli_interop.c, test_cli_interop_report.c, test_cli_interop_devices.c,
 * test_cli_interop_cli.c): the group set-up, reading the JSON cells and
 * the table rows, a responder of the test's own. */
#ifndef CLI_INTEROP_TEST_COMMON_H
#define CLI_INTEROP_TEST_COMMON_H

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

static inline int setup(void **state)
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
    char tolerated[64]; /* the raw array */
    long edhoc, coap, ms;
};

static inline const char *field(const char *obj, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(obj, pat);
    return p ? p + strlen(pat) : NULL;
}

/* A JSON string value (only the escapes the tool writes: \" \\). */
static inline void field_str(const char *obj, const char *key, char *out, size_t cap)
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
static inline long field_long(const char *obj, const char *key)
{
    const char *p = field(obj, key);
    if (p && !strncmp(p, "null", 4))
        return -1;
    return p ? strtol(p, NULL, 10) : -999;
}

/* Run python3 on the JSON text: prog reads the document from the file
 * named by sys.argv[1] (no single quotes in prog). Returns its output. */
static inline char *json_python(const char *json, const char *prog)
{
    char path[400], cmd[1600], *out = NULL;
    net_path(path, sizeof path, "doc.json");
    net_write_file(path, json, 0600);
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import json,sys; d=json.load(open(sys.argv[1])); %s\" %s", prog, path);
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
static inline void json_checked(char **out, const char *schema)
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

static inline size_t json_cells(const char *json, struct cell *cells, size_t cap)
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
static inline int table_split(const char *line, char cols[][512], int cap)
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
static inline void assert_table_matches_json(const char *table, const struct cell *cells, size_t n)
{
    size_t rows = 0;
    for (const char *line = table; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
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

static inline void start_responder(struct net_proc *p, const char *name, const char *extra)
{
    char args[1024];
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 %s", extra);
    assert_int_equal(net_responder_start(p, name, args), 0);
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
static inline void field_array(const char *obj, const char *key, char *out, size_t cap)
{
    out[0] = '\0';
    const char *p = field(obj, key);
    if (!p || *p != '[')
        return;
    const char *e = strchr(p, ']');
    if (e)
        snprintf(out, cap, "%.*s", (int)(e - p + 1), p);
}

static inline size_t report_rows(const char *json, struct report_row *rows, size_t cap)
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

static inline void assert_row(const struct report_row *w, int method, const char *suites_i,
                              int suite, const char *id_cred, const char *framing, bool combined,
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
static inline long bytes_edhoc(const char *out, const char *message)
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
static inline long send_message_1_only(uint16_t port)
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

static inline void keygen(const char *name, const char *args, char *cred, char *key)
{
    char n[64], *out = NULL;
    snprintf(n, sizeof n, "%s.cred", name);
    net_path(cred, 300, n);
    snprintf(n, sizeof n, "%s.key", name);
    net_path(key, 300, n);
    assert_int_equal(
        CLI_RUN(&out, 30, "keygen %s --out-cred %s --out-key %s --force", args, cred, key), 0);
    free(out);
}

#endif
