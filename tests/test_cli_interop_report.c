/*
 * End-to-end tests of the other direction of interop: initiators (the
 * devices) against `edhoc-cli responder --interop-log DIR`, read back with
 * `edhoc-cli interop --report DIR`: the exact rows, the traces and pcaps of
 * the failures, a damaged log, the bound on files, long kids.
 */
#include "cli_interop_test_common.h"

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
                             uri, a, ak, trust),
                     0);
    free(out);
    /* 2: method 0, x5t: ok. */
    assert_int_equal(CLI_RUN(&out, 20,
                             "initiator %s --method 0 --suites 2 --cred %s --key %s "
                             "--id-cred x5t %s",
                             uri, x, xk, trust),
                     0);
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
                             uri, d, dk, trust),
                     4);
    free(out);
    /* 4: a credential the responder does not know: error code 3. */
    assert_int_equal(CLI_RUN(&out, 20,
                             "initiator %s --method 3 --suites 2 --cred %s --key %s "
                             "--id-cred kccs %s",
                             uri, c, ck, trust),
                     4);
    free(out);
    /* 5: A's kid with another key: MAC_3 does not verify. */
    assert_int_equal(CLI_RUN(&out, 20, "initiator %s --method 2 --suites 2 --cred %s --key %s %s",
                             uri, b, bk, trust),
                     4);
    free(out);
    /* 6: the RFC 9668 combined request; 7: the bare framing. */
    assert_int_equal(CLI_RUN(&out, 20,
                             "initiator %s --method 3 --suites 2 --cred %s --key %s "
                             "--combined %s",
                             uri, a, ak, trust),
                     0);
    free(out);
    assert_int_equal(CLI_RUN(&out, 20,
                             "initiator %s --method 3 --suites 2 --cred %s --key %s "
                             "--framing bare %s",
                             uri, a, ak, trust),
                     0);
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

    /* --json-out: the same JSON in the file; a file that cannot be
     * written is exit code 3, named with the system's reason. */
    char json_path[400];
    snprintf(json_path, sizeof json_path, "%s/report.json", dir);
    rc = net_cli_run(&out, 20, false, "interop --report %s --json-out %s 2>/dev/null", dir,
                     json_path);
    assert_int_equal(rc, 1);
    free(out);
    char *written = net_read_file(json_path);
    assert_non_null(written);
    assert_non_null(strstr(written, "\"skipped_lines\": 2,"));
    assert_non_null(strstr(written, "\"handshakes\": 1,"));
    free(written);
    rc = net_cli_run(&out, 20, false, "interop --report %s --json-out %s/no-dir/r.json", dir, dir);
    assert_int_equal(rc, 3);
    snprintf(want, sizeof want,
             "edhoc-cli interop: --json-out %s/no-dir/r.json: No such file or directory\n", dir);
    assert_non_null(strstr(out, want));
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
        assert_int_equal(
            CLI_RUN(&out, 20, "initiator coap://127.0.0.1:%u --method 3 --suites 2", r.port), 0);
        free(out);
    }
    assert_int_equal(net_proc_stop(&r, SIGTERM, 3000), 0);
    char *log = net_read_file(r.log);
    assert_int_equal(net_count(log, "interop log: 1 handshakes with trace and pcap files written "
                                    "(--interop-log-max)"),
                     1);
    free(log);
    char path[400];
    struct stat st;
    snprintf(path, sizeof path, "%s/1.txt", dir);
    assert_int_equal(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/2.txt", dir);
    assert_int_not_equal(stat(path, &st), 0);
    snprintf(extra, sizeof extra, "--interop-log %s --interop-log-max 2", dir);
    start_responder(&r, "bounded2", extra);
    assert_int_equal(
        CLI_RUN(&out, 20, "initiator coap://127.0.0.1:%u --method 3 --suites 2", r.port), 0);
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
    assert_int_equal(
        CLI_RUN(&out, 20, "initiator coap://127.0.0.1:%u --method 3 --suites 2", r.port), 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_report_of_initiators, net_test_teardown),
        cmocka_unit_test_teardown(test_report_damaged_log, net_test_teardown),
        cmocka_unit_test_teardown(test_interop_log_bound, net_test_teardown),
        cmocka_unit_test_teardown(test_interop_log_long_kid, net_test_teardown),
    };
    return cmocka_run_group_tests(tests, setup, net_group_teardown);
}
