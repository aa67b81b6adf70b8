/*
 * End-to-end tests of `edhoc-cli interop URI` (we are the initiator): the
 * matrix against our own responder (table and JSON agree), and against
 * responders limited on purpose (one suite, one method, a trust that lacks
 * our credential, a silent port): the right cells fail with the right
 * reasons, in bounded time; the newer credential forms over CoAP.
 * The other direction (responder --interop-log, interop --report) is in
 * test_cli_interop_report.c, devices that do part of the job in
 * test_cli_interop_devices.c, the command-line contract of issue 14 in
 * test_cli_interop_cli.c.
 */
#include "cli_interop_test_common.h"

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
    int rc =
        CLI_RUN(&out, 60,
                "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid --json", r.port);
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
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 0,1,3 --suites 2 "
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
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 2 "
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
    assert_int_equal(CLI_RUN(&out, 30,
                             "keygen --type ccs --suite 2 --use dh --kid 07 "
                             "--out-cred %s --out-key %s",
                             cred, key),
                     0);
    free(out);
    /* The responder trusts only another credential: error code 3. */
    struct net_proc r;
    char extra[400];
    snprintf(extra, sizeof extra, "--trust %s", cred);
    start_responder(&r, "trust", extra);
    int rc =
        CLI_RUN(&out, 60,
                "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid --json", r.port);
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
        assert_int_equal(CLI_RUN(&out, 30,
                                 "keygen --type ccs --suite 2 --use %s --kid %s "
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
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 3 --suites 25 "
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
    rc = CLI_RUN(&out, 60,
                 "interop coap://127.0.0.1:%u --methods 3 --suites 25 --id-creds kid "
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
    };
    return cmocka_run_group_tests(tests, setup, net_group_teardown);
}
