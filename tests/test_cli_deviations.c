/*
 * Devices that deviate from RFC 9528, against real processes that send the
 * deviant bytes (--emulate, a test aid), in both roles: the other side
 * fails without --tolerate and names the deviation (which step, which
 * value, which RFC sentence), completes with it and says so, and the
 * responder can avoid the int-form C_R that such devices mis-encode.
 *
 * The deviations are those of deployed uoscore-uedhoc devices:
 *   c-bstr   RFC 9528 Section 3.3.2: a one-byte connection identifier
 *            whose value is a one-byte CBOR int is encoded as that int;
 *            the device puts such a C_R into context_2 as a byte string.
 *   kid-int  Section 3.5.3.2: a compact ID_CRED (a lone kid) stands for
 *            {4: bstr}; the device rebuilds it as {4: int}.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "net_test_util.h"

#define CLI_RUN(out, timeout_s, ...) net_cli_run(out, timeout_s, false, __VA_ARGS__)

/* Credentials: k2b (kid 0x2b, int form -12), k18 (kid 0x18, no int form),
 * k32 (kid 0x32, int form -19), all P-256 static DH for method 3 suite 2. */
static char k2b[300], k18[300], k32[300];

static void keygen(char *base, size_t cap, const char *kid)
{
    snprintf(base, cap, "%s/k%s", net_dir, kid);
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "keygen --type ccs --curve P-256 --kid %s --out-cred %s.ccs "
                     "--out-key %s.key",
                     kid, base, base);
    if (rc != 0)
        fail_msg("keygen %s: %d\n%s", kid, rc, out);
    free(out);
}

static int setup(void **state)
{
    (void)state;
    if (net_make_dir("dev"))
        return -1;
    keygen(k2b, sizeof k2b, "2b");
    keygen(k18, sizeof k18, "18");
    keygen(k32, sizeof k32, "32");
    return 0;
}

static void start(struct net_proc *r, const char *name, const char *extra)
{
    char args[1500];
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state-dir none -v %s", extra);
    assert_int_equal(net_responder_start(r, name, args), 0);
}

/* The responder's log, once it has stopped. */
static char *stop_and_log(struct net_proc *r)
{
    assert_int_equal(net_proc_stop(r, SIGTERM, 5000), 0);
    char *log = net_read_file(r->log);
    assert_non_null(log);
    return log;
}

/* The device as responder with c-bstr: its MAC_2 covers C_R 0x27 as the
 * byte string h'27' instead of the int -8. */
static void test_c_bstr_responder(void **state)
{
    (void)state;
    static struct net_proc r;
    /* C_R is fixed, so C_I is too: a random C_I equal to C_R would be
     * refused ("own connection identifier equals the peer's"), as RFC 9528
     * Section 3.3.3 says: "the Initiator and the Responder MUST NOT select
     * connection identifiers such that it results in the same OSCORE
     * Recipient ID". */
    start(&r, "cbstr-r", "--emulate c-bstr --c-r 27");
    char *out;
    int rc =
        CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request none --c-i 0e --json", r.port);
    /* RFC 9528 Section 5.3.2: MAC_2 over context_2 = << C_R, ... >>; the
     * verification fails (exit 5) and the diagnosis names the value. */
    assert_int_equal(rc, 5);
    assert_non_null(strstr(out, "\"diagnosis\": \"MAC_2 matches when C_R is the byte string "
                                "h'27' instead of the int -8 (0x27) in context_2 (RFC 9528 "
                                "Section 3.3.2)"));
    assert_non_null(strstr(out, "--tolerate c-bstr accepts it"));
    assert_non_null(strstr(out, "\"tolerated\": []"));
    free(out);
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --request none --c-i 0e --json --tolerate c-bstr",
                 r.port);
    if (rc != 0)
        fail_msg("with --tolerate c-bstr: %d\n%s", rc, out);
    assert_non_null(strstr(out, "\"outcome\": \"ok\""));
    char *compact = net_json_compact(out);
    assert_non_null(strstr(compact, "\"tolerated\":[\"c-bstr\"]"));
    free(compact);
    free(out);
    /* Text output says so on the handshake it affected. */
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --request none --c-i 0e --tolerate c-bstr", r.port);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "Tolerated (--tolerate): c-bstr"));
    free(out);
    /* Tolerating something else does not help: only the named deviation
     * is accepted. */
    rc =
        CLI_RUN(&out, 30,
                "initiator coap://127.0.0.1:%u --request none --c-i 0e --tolerate kid-int", r.port);
    assert_int_equal(rc, 5);
    free(out);
    free(stop_and_log(&r));
}

/* The device as initiator with c-bstr: it rejects an RFC-correct message_2
 * whose C_R has an int form; a responder choosing C_R without one
 * (--c-r-form bstr, allowed by RFC 9528 Section 3.3) completes with it. */
static void test_c_bstr_initiator_avoided(void **state)
{
    (void)state;
    static struct net_proc r;
    start(&r, "cbstr-i", "--c-r 27");
    char *out;
    int rc = CLI_RUN(
        &out, 30, "initiator coap://127.0.0.1:%u --request none --c-i 0e --emulate c-bstr", r.port);
    assert_int_equal(rc, 5);
    assert_non_null(strstr(out, "this side emulates c-bstr"));
    free(out);
    char *log = stop_and_log(&r);
    /* The initiator's error message reached the responder. */
    assert_non_null(strstr(log, "error message from the initiator"));
    free(log);
    start(&r, "cbstr-i2", "--c-r-form bstr");
    for (int k = 0; k < 3; k++) {
        rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --request none --c-i 0e --emulate c-bstr",
                     r.port);
        if (rc != 0)
            fail_msg("--c-r-form bstr, run %d: %d\n%s", k, rc, out);
        free(out);
    }
    free(stop_and_log(&r));
}

/* The device as initiator with kid-int: its MAC_3 covers ID_CRED_I as
 * {4: -12} for kid h'2b'. Our responder's kid h'18' has no int form, so the
 * device's own rebuild of it changes nothing. */
static void test_kid_int_initiator(void **state)
{
    (void)state;
    char creds[1400], init[1400];
    snprintf(creds, sizeof creds, "--cred %s.ccs --key %s.key --trust %s.ccs", k18, k18, k2b);
    snprintf(init, sizeof init, "--cred %s.ccs --key %s.key --trust %s.ccs", k2b, k2b, k18);
    static struct net_proc r;
    start(&r, "kid-i", creds);
    char *out;
    int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request none %s --emulate kid-int",
                     r.port, init);
    /* The responder answers with an EDHOC error (exit 4). */
    assert_int_equal(rc, 4);
    free(out);
    char *log = stop_and_log(&r);
    /* RFC 9528 Section 5.4.3: MAC_3 over context_3 = << ID_CRED_I, ... >>. */
    assert_non_null(strstr(log, "MAC_3 matches when ID_CRED_I is {4: -12} instead of {4: h'2b'} "
                                "in context_3 (RFC 9528 Section 3.5.3.2): the peer deviates; "
                                "--tolerate kid-int accepts it"));
    free(log);
    char tol[1500];
    snprintf(tol, sizeof tol, "%s --tolerate kid-int", creds);
    start(&r, "kid-i2", tol);
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --request \"GET /time\" %s --emulate kid-int",
                 r.port, init);
    if (rc != 0)
        fail_msg("with the responder's --tolerate kid-int: %d\n%s", rc, out);
    free(out);
    log = stop_and_log(&r);
    assert_non_null(
        strstr(log, "outcome=ok: tolerated kid-int (the initiator deviates from RFC 9528)"));
    free(log);
}

/* The device as responder with kid-int: MAC_2 over ID_CRED_R {4: -19} for
 * kid h'32'; it also rebuilds our compact kid, so our initiator completes
 * with --tolerate kid-int when its own kid has no int form (h'18'). */
static void test_kid_int_responder(void **state)
{
    (void)state;
    char creds[1500], init[1400];
    snprintf(creds, sizeof creds, "--cred %s.ccs --key %s.key --trust %s.ccs --emulate kid-int",
             k32, k32, k18);
    snprintf(init, sizeof init, "--cred %s.ccs --key %s.key --trust %s.ccs", k18, k18, k32);
    static struct net_proc r;
    start(&r, "kid-r", creds);
    char *out;
    int rc =
        CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request none --json %s", r.port, init);
    assert_int_equal(rc, 5);
    assert_non_null(strstr(out, "MAC_2 matches when ID_CRED_R is {4: -19} instead of {4: h'32'}"));
    free(out);
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --request \"GET /time\" --json "
                 "--tolerate kid-int %s",
                 r.port, init);
    if (rc != 0)
        fail_msg("with --tolerate kid-int: %d\n%s", rc, out);
    char *compact = net_json_compact(out);
    assert_non_null(strstr(compact, "\"tolerated\":[\"kid-int\"]"));
    free(compact);
    assert_non_null(strstr(out, "\"code_name\": \"Content\""));
    free(out);
    free(stop_and_log(&r));
}

/* A relay that drops the responder's empty 2.04, its answer to a bare
 * message_3: in front of it the responder is a device of the bare
 * framing, which answers nothing to message_3. */
static size_t drop_empty_changed(void *user, uint8_t *d, size_t len, size_t cap)
{
    (void)user;
    (void)cap;
    if (len >= 4 && d[1] == 0x44 && len == 4u + (d[0] & 0x0fu))
        return 0;
    return len;
}

/* The responder's log once it holds n lines with needle (the handshake
 * line is written when the responder is done with message_3, which the
 * initiator of the bare framing cannot see). */
static char *log_with(const struct net_proc *r, const char *needle, int n)
{
    for (int i = 0; i < 3000; i++) {
        char *log = net_read_file(r->log);
        if (log && net_count(log, needle) >= n)
            return log;
        free(log);
        net_sleep_ms(10);
    }
    fail_msg("no %d lines with '%s' in the responder's log", n, needle);
    return NULL;
}

/* A stock uoscore-uedhoc device as responder: c-bstr and kid-int, in
 * MAC_2 and when it checks MAC_3 (it builds every context_x its own way).
 * C_R 27 and its kid h'32' have int forms, and so has our kid h'2b', so
 * an RFC 9528 context_3 (ID_CRED_I = {4: h'2b'}, Section 5.4.2) does not
 * verify there: it expects {4: -12}. The advice of the diagnosis, given
 * verbatim, completes the handshake: --tolerate accepts MAC_2 and makes
 * message_3 follow the deviation (it used to accept MAC_2 only, and the
 * device refused message_3: exit 4). With the bare framing the device
 * answers nothing to message_3, so exit 0 says only that it was sent
 * (RFC 9528 Section 5.4.2: message_4 or an OSCORE response would tell). */
static void test_device_advice_verbatim(void **state)
{
    (void)state;
    char creds[1500], init[1400];
    snprintf(creds, sizeof creds,
             "--cred %s.ccs --key %s.key --trust %s.ccs --emulate c-bstr,kid-int --c-r 27", k32,
             k32, k2b);
    snprintf(init, sizeof init, "--cred %s.ccs --key %s.key --trust %s.ccs --c-i 0e", k2b, k2b,
             k32);
    static struct net_proc r, relay;
    start(&r, "uoscore", creds);
    char *out;
    int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request none %s", r.port, init);
    assert_int_equal(rc, 5);
    /* The advice: "...: the peer deviates; --tolerate LIST accepts it". */
    const char *a = strstr(out, "the peer deviates; --tolerate ");
    assert_non_null(a);
    a += strlen("the peer deviates; ");
    const char *e = strstr(a, " accepts it");
    assert_non_null(e);
    char advice[100];
    snprintf(advice, sizeof advice, "%.*s", (int)(e - a), a);
    assert_string_equal(advice, "--tolerate c-bstr,kid-int");
    free(out);

    /* A.2: the device answers message_3, with 2.04 once it verified MAC_3
     * (RFC 9528 Appendix A.2), with an EDHOC error otherwise. */
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request none --json %s %s", r.port,
                 init, advice);
    if (rc != 0)
        fail_msg("%s given verbatim: exit %d\n%s", advice, rc, out);
    char *compact = net_json_compact(out);
    assert_non_null(strstr(compact, "\"tolerated\":[\"c-bstr\",\"kid-int\"]"));
    /* c-bstr concerns C_R in context_2 only (Section 5.4.2: no C_R in
     * context_3); kid-int concerns our ID_CRED_I. */
    assert_non_null(strstr(compact, "\"followed\":[\"kid-int\"]"));
    assert_non_null(strstr(compact, "\"message_3_acceptance\":\"2.04\""));
    free(compact);
    free(out);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request \"GET /time\" %s %s", r.port,
                 init, advice);
    if (rc != 0)
        fail_msg("%s given verbatim, with a request: exit %d\n%s", advice, rc, out);
    assert_non_null(strstr(out, "Followed in message_3 (--tolerate): kid-int: context_3 built as "
                                "the responder built context_2"));
    free(out);

    /* The bare framing, as the device speaks it: no answer to message_3. */
    struct net_relay_hooks h = {.to_client = drop_empty_changed};
    assert_int_equal(net_relay_start(&relay, r.port, &h), 0);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --framing bare --request none %s %s",
                 relay.port, init, advice);
    if (rc != 0)
        fail_msg("bare, %s: exit %d\n%s", advice, rc, out);
    assert_non_null(strstr(out, "\nOutcome: message_3 sent, its acceptance unconfirmed, suite 2, "
                                "1 attempt, ID_CRED_R by kid\n"));
    assert_null(strstr(out, "Outcome: ok"));
    free(out);
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --framing bare --request none --json "
                 "%s %s",
                 relay.port, init, advice);
    assert_int_equal(rc, 0);
    compact = net_json_compact(out);
    assert_non_null(strstr(compact, "\"message_3_acceptance\":\"unconfirmed\""));
    free(compact);
    free(out);
    /* An OSCORE response under the new context confirms it. */
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --framing bare --request \"GET /time\" "
                 "--json %s %s",
                 relay.port, init, advice);
    if (rc != 0)
        fail_msg("bare with a request: exit %d\n%s", rc, out);
    compact = net_json_compact(out);
    assert_non_null(strstr(compact, "\"message_3_acceptance\":\"oscore_response\""));
    free(compact);
    free(out);
    /* The device did accept each message_3: the diagnosis run is the one
     * handshake that failed (on message_2, with our error message). */
    char *log = log_with(&r, "framing=bare", 3);
    assert_int_equal(net_count(log, "outcome=ok"), 5);
    assert_int_equal(net_count(log, "outcome=failed"), 1);
    free(log);
    free(stop_and_log(&r));
}

/* The three other deviations the core knows, each sent by a real
 * responder: the initiator names it, and with --tolerate accepts
 * message_2. Such a responder also checks message_3 its own way (as the
 * devices do), so message_3 follows the tolerated deviation where it
 * applies to context_3 (id-cred-compact to our ID_CRED_I, cred-wrap to
 * our CRED_I; ead-omitted not, as we send no EAD_3) and each handshake
 * completes; before, the two that apply ended at message_3 on the
 * responder's side (exit 4). */
static void test_other_deviations(void **state)
{
    (void)state;
    static const struct {
        const char *name, *extra, *diagnosis, *followed;
    } cases[] = {
        /* RFC 9528 Section 3.5.3.2: the compact form is for the wire only. */
        {"id-cred-compact", "",
         "MAC_2 matches when ID_CRED_R is its compact form (the int -19) "
         "instead of {4: h'32'} in context_2",
         "id-cred-compact"},
        /* Section 3.5.2: CRED_x goes into context_x as it is. */
        {"cred-wrap", "",
         "MAC_2 matches when CRED_R is wrapped in an extra byte string in "
         "context_2",
         "cred-wrap"},
        /* Section 5.3.2: context_2 = << C_R, ID_CRED_R, TH_2, CRED_R, ? EAD_2 >>. */
        {"ead-omitted", "--ead-2 5:a1b2",
         "MAC_2 matches when EAD_2 is left out of context_2 "
         "although message_2 carries it",
         NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        static struct net_proc r;
        char extra[200];
        snprintf(extra, sizeof extra, "--emulate %s %s", cases[k].name, cases[k].extra);
        start(&r, cases[k].name, extra);
        char *out;
        int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request none --ead-accept 5",
                         r.port);
        assert_int_equal(rc, 5);
        if (!strstr(out, cases[k].diagnosis))
            fail_msg("%s: no diagnosis in\n%s", cases[k].name, out);
        free(out);
        rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --request none --ead-accept 5 "
                     "--tolerate %s",
                     r.port, cases[k].name);
        if (rc != 0)
            fail_msg("%s tolerated: %d\n%s", cases[k].name, rc, out);
        char line[120];
        snprintf(line, sizeof line, "Followed in message_3 (--tolerate): %s:",
                 cases[k].followed ? cases[k].followed : "");
        if (cases[k].followed ? !strstr(out, line) : strstr(out, "Followed in message_3") != NULL)
            fail_msg("%s: what message_3 followed, in\n%s", cases[k].name, out);
        free(out);
        free(stop_and_log(&r));
    }
}

/* Both in one process, and the names checked. */
static void test_simulate_and_names(void **state)
{
    (void)state;
    char *out;
    int rc = CLI_RUN(&out, 30, "simulate --emulate-r c-bstr --c-i 0e --c-r 27");
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, "--tolerate c-bstr accepts it"));
    free(out);
    rc = CLI_RUN(&out, 30, "simulate --emulate-r c-bstr --c-i 0e --c-r 27 --tolerate-i c-bstr");
    if (rc != 0)
        fail_msg("simulate with --tolerate-i: %d\n%s", rc, out);
    free(out);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:9 --tolerate c-bstr,nonsense");
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "known: c-bstr, kid-int"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_c_bstr_responder, net_test_teardown),
        cmocka_unit_test_teardown(test_c_bstr_initiator_avoided, net_test_teardown),
        cmocka_unit_test_teardown(test_kid_int_initiator, net_test_teardown),
        cmocka_unit_test_teardown(test_kid_int_responder, net_test_teardown),
        cmocka_unit_test_teardown(test_device_advice_verbatim, net_test_teardown),
        cmocka_unit_test_teardown(test_other_deviations, net_test_teardown),
        cmocka_unit_test_teardown(test_simulate_and_names, net_test_teardown),
    };
    return cmocka_run_group_tests(tests, setup, net_group_teardown);
}
