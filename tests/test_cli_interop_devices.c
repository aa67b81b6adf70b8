/*
 * End-to-end tests of `edhoc-cli interop URI` against devices that do part
 * of the job: EDHOC without OSCORE, one framing (--framing auto), cells
 * skipped, passed-through tolerated, a bare message_1 in the report.
 */
#include "cli_interop_test_common.h"

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
    rc = CLI_RUN(&out, 60,
                 "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid "
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
    assert_int_equal(CLI_RUN(&out, 10,
                             "interop coap://127.0.0.1:%u --request none "
                             "--request \"GET /x\"",
                             r.port),
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
    int rc = CLI_RUN(&out, 60,
                     "interop coap://127.0.0.1:%u --methods 0,3 --suites 2 "
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
    rc = CLI_RUN(&out, 60,
                 "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid "
                 "--framing auto",
                 r.port);
    assert_int_equal(rc, 0);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | A.2 | ok | ok | ok | - |"), 1);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | A.2 combined | ok | ok | ok | - |"), 1);
    assert_int_equal(net_count(out, "| 3 | 2 | kid | no | bare | not supported | "), 1);
    assert_non_null(strstr(out, "  framings: A.2 (not supported: bare)\n"));
    free(out);
    /* One framing only: no bare variant with a2, no combined with bare. */
    rc = CLI_RUN(&out, 60,
                 "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid "
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
    rc = CLI_RUN(&out, 60,
                 "interop coap://127.0.0.1:%u --methods 0,3 --suites 2 --id-creds kid "
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
    assert_int_equal(CLI_RUN(&out, 20,
                             "initiator coap://127.0.0.1:%u --method 3 --suites 2 "
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_edhoc_only_device, net_test_teardown),
        cmocka_unit_test_teardown(test_framing_auto, net_test_teardown),
        cmocka_unit_test_teardown(test_skipped_cells, net_test_teardown),
        cmocka_unit_test_teardown(test_tolerate_passed_through, net_test_teardown),
        cmocka_unit_test_teardown(test_report_bare_message_1, net_test_teardown),
    };
    return cmocka_run_group_tests(tests, setup, net_group_teardown);
}
