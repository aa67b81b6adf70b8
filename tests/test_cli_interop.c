/*
 * End-to-end tests of `edhoc-cli interop URI` (we are the initiator): the
 * matrix against our own responder (table and JSON agree), and against
 * responders limited on purpose (one suite, one method, a trust that lacks
 * our credential, a silent port): the right cells fail with the right
 * reasons, in bounded time.
 */
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
    long err_code;
    char result[256];
    char reason[512];
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

static long field_long(const char *obj, const char *key)
{
    const char *p = field(obj, key);
    return p ? strtol(p, NULL, 10) : -999;
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
        c->err_code = field_long(obj, "err_code");
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
        char cols[12][512];
        assert_int_equal(table_split(line, cols, 12), 11);
        size_t idx = (size_t)atoi(cols[0]);
        assert_int_equal(idx, rows + 1);
        assert_true(rows < n);
        const struct cell *c = &cells[rows++];
        assert_int_equal(atoi(cols[1]), c->method);
        assert_int_equal(atoi(cols[2]), c->suite);
        assert_string_equal(cols[3], c->id_cred);
        assert_string_equal(cols[4], c->m4 ? "yes" : "no");
        assert_string_equal(cols[5], !strcmp(c->framing, "bare") ? "bare"
                                     : c->combined             ? "A.2 combined"
                                                               : "A.2");
        assert_string_equal(cols[6], c->result);
        assert_string_equal(cols[7], c->reason[0] ? c->reason : "-");
        assert_int_equal(atol(cols[8]), c->edhoc);
        assert_int_equal(atol(cols[9]), c->coap);
        assert_int_equal(atol(cols[10]), c->ms);
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
 * bare), every message_4 cell names the one thing missing, the table and
 * the JSON written in the same run agree, traces are kept per cell. */
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
    assert_int_equal(rc, 1); /* the message_4 cells fail: this responder sends none */
    char *json = net_read_file(json_path);
    assert_non_null(json);
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(json, cells, MAX_CELLS);
    assert_int_equal(n, 2 * 2 * 2 * 2 + 2);
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        if (cells[i].m4) {
            assert_string_equal(cells[i].outcome, "failed");
            assert_non_null(strstr(cells[i].reason, "does not send message_4"));
        } else {
            assert_string_equal(cells[i].outcome, "ok");
            assert_string_equal(cells[i].result, "ok");
            assert_true(cells[i].edhoc > 0 && cells[i].coap > cells[i].edhoc);
            ok++;
        }
    }
    assert_int_equal(ok, 10);
    assert_true(cells[n - 2].combined);
    assert_string_equal(cells[n - 1].framing, "bare");
    assert_table_matches_json(out, cells, n);
    assert_non_null(strstr(out, "Summary: 10 ok, 8 failed, 0 skipped of 18 cells"));
    assert_non_null(strstr(out, "  methods: 0 3\n"));
    assert_non_null(strstr(out, "  suites: 0 2\n"));
    assert_non_null(strstr(out, "  ID_CRED types: kid x5t\n"));
    assert_non_null(strstr(out, "  message_4: no\n"));
    assert_non_null(strstr(out, "  combined request (RFC 9668): yes\n"));
    assert_non_null(strstr(out, "  framings: A.2 bare\n"));
    assert_non_null(strstr(json, "\"methods\": [0, 3], \"suites\": [0, 2], \"id_creds\": [\"kid\", "
                                 "\"x5t\"], \"message_4\": \"no\", \"combined\": \"yes\", "
                                 "\"framings\": [\"A.2\", \"bare\"]"));
    /* One trace per cell, with the intermediate values of the handshake. */
    char path[400];
    snprintf(path, sizeof path, "%s/m3-s2-kid.txt", trace_dir);
    char *tr = net_read_file(path);
    assert_non_null(tr);
    assert_non_null(strstr(tr, "outcome: ok"));
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
    assert_non_null(strstr(tr, "reason: the peer does not send message_4"));
    free(tr);
    free(json);
    free(out);
}

/* A responder that sends message_4: those cells are ok; the combined
 * request cannot carry message_4 and the reason says so. */
static void test_message_4_responder(void **state)
{
    (void)state;
    struct net_proc r;
    start_responder(&r, "m4", "--message-4");
    char *out = NULL;
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid --json",
                     r.port);
    assert_int_equal(rc, 1);
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 4);
    assert_string_equal(cells[0].outcome, "ok");
    assert_true(cells[1].m4);
    assert_string_equal(cells[1].outcome, "ok");
    assert_true(cells[2].combined);
    assert_string_equal(cells[2].outcome, "peer-error");
    assert_int_equal(cells[2].err_code, 1);
    assert_non_null(strstr(cells[2].reason, "requires message_4"));
    assert_string_equal(cells[3].outcome, "ok");
    assert_non_null(strstr(out, "\"message_4\": \"yes\", \"combined\": \"no\""));
    free(out);
}

/* Only suite 2: suite 0 cells end with EDHOC error 2 and name SUITES_R. */
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
    assert_int_equal(rc, 1);
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < 4; i++) {
        if (cells[i].suite == 0) {
            assert_string_equal(cells[i].outcome, "peer-error");
            assert_int_equal(cells[i].err_code, 2);
            assert_non_null(strstr(cells[i].result, "EDHOC error 2 from the peer"));
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
    free(out);
}

/* Only method 3: the other methods fail with the peer's error 1. */
static void test_method_3_only(void **state)
{
    (void)state;
    struct net_proc r;
    start_responder(&r, "m3", "--method 3");
    char *out = NULL;
    int rc = CLI_RUN(&out, 60, "interop coap://127.0.0.1:%u --methods 0,1,3 --suites 2 "
                               "--id-creds kid",
                     r.port);
    assert_int_equal(rc, 1);
    assert_int_equal(net_count(out, "| EDHOC error 1 from the peer: method not supported | "
                                    "method 0 not supported by the peer |"),
                     2);
    assert_int_equal(net_count(out, "| EDHOC error 1 from the peer: method not supported | "
                                    "method 1 not supported by the peer |"),
                     2);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | A.2 | ok | - |"), 1);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | A.2 combined | ok | - |"), 1);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | bare | ok | - |"), 1);
    assert_non_null(strstr(out, "  methods: 3\n"));
    free(out);
}

/* Credentials the other side does not know, in both directions. */
static void test_unknown_credentials(void **state)
{
    (void)state;
    char cred[300], key[300], *out = NULL;
    net_path(cred, sizeof cred, "other.cbor");
    net_path(key, sizeof key, "other.pem");
    assert_int_equal(CLI_RUN(&out, 30, "keygen --type ccs --suite 2 --use dh --out-cred %s "
                                       "--out-key %s",
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
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(cells[i].outcome, "peer-error");
        assert_int_equal(cells[i].err_code, 3);
        assert_non_null(strstr(cells[i].result, "EDHOC error 3 from the peer"));
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
    n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(cells[i].outcome, "verify");
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
    snprintf(extra, sizeof extra, "--cred %s --key %s --cred %s --key %s", cred[0], key[0],
             cred[2], key[2]);
    start_responder(&r, "wrongkey", extra);
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 0,3 --suites 2 --id-creds kid "
                     "--trust %s --trust %s --json",
                     r.port, cred[1], cred[3]);
    assert_int_equal(rc, 1);
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(cells[i].outcome, "verify");
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
    struct cell cells[MAX_CELLS];
    size_t n = json_cells(out, cells, MAX_CELLS);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(cells[i].outcome, "timeout");
        assert_string_equal(cells[i].result, "timeout");
        assert_non_null(strstr(cells[i].reason, "message_1"));
        assert_true(cells[i].ms >= 900 && cells[i].ms <= 3000);
    }
    assert_true(took < 4 * 3000 + 2000);
    assert_non_null(strstr(out, "\"methods\": [], \"suites\": []"));
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_usage, net_test_teardown),
        cmocka_unit_test_teardown(test_own_responder_matrix, net_test_teardown),
        cmocka_unit_test_teardown(test_message_4_responder, net_test_teardown),
        cmocka_unit_test_teardown(test_suite_2_only, net_test_teardown),
        cmocka_unit_test_teardown(test_method_3_only, net_test_teardown),
        cmocka_unit_test_teardown(test_unknown_credentials, net_test_teardown),
        cmocka_unit_test_teardown(test_wrong_peer_key, net_test_teardown),
        cmocka_unit_test_teardown(test_silent_device, net_test_teardown),
    };
    return cmocka_run_group_tests(tests, setup, net_group_teardown);
}
