/*
 * `edhoc-cli coap --oscore-context FILE` following RFC 8613 Appendix B.2
 * when the server starts it. The server is this test: a UDP loop in a
 * child process built on the library's server side of B.2
 * (oscore_b2_server_*), in the order a responder uses it: request #2 of a
 * pending run first, then the context it has, else step 2.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/oscore.h"
#include "net_test_util.h"

static const char server_conf[] = "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                                  "master_salt,hex,\"9e7ca92223786340\"\n"
                                  "id_context,hex,\"0017a2d3\"\n"
                                  "sender_id,hex,\"01\"\nrecipient_id,hex,\"\"\n"
                                  "rfc8613_b_2,bool,true\n";
static const char client_conf[] = "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                                  "master_salt,hex,\"9e7ca92223786340\"\n"
                                  "id_context,hex,\"0017a2d3\"\n"
                                  "sender_id,hex,\"\"\nrecipient_id,hex,\"01\"\n";

/* How the test server misbehaves, if at all. */
enum server_mode {
    SERVER_GOOD,      /* B.2 as the appendix describes it */
    SERVER_ALWAYS_B2, /* answers request #2 with another response #1 */
    SERVER_BAD_R2,    /* alters R2 in its response #1 after protecting it */
};

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A protected 2.05 "b2 ok" to the request bound in b. */
static long answer(struct oscore_context *c, struct oscore_binding *b, const uint8_t *req,
                   size_t len, uint8_t *out, size_t cap)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(req, len, &m))
        return -1;
    /* A registration (Observe 0) is accepted, as a server that adds the
     * client to its observers does: its answer carries Observe (RFC 7641
     * Section 3.1), so the client deregisters at the end. */
    const struct coap_option *obs = edhoc_coap_msg_find_option(&m, COAP_OPT_OBSERVE);
    bool registers = obs && (obs->len == 0 || (obs->len == 1 && obs->value[0] == 0));
    m.type = m.type == COAP_TYPE_CON ? COAP_TYPE_ACK : COAP_TYPE_NON;
    m.code = COAP_CODE_CONTENT;
    m.option_count = 0;
    static const uint8_t first_notification = 1;
    if (registers && edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, &first_notification, 1))
        return -1;
    m.payload = (const uint8_t *)"b2 ok";
    m.payload_len = 5;
    uint8_t plain[256];
    long n = edhoc_coap_msg_encode(&m, plain, sizeof plain);
    return n < 0 ? n : oscore_protect_response(c, b, plain, (size_t)n, false, out, cap);
}

/* The server: its stored context lost (no valid one until a run
 * completes), so the first request of every client starts B.2. */
static void serve(int fd, enum server_mode mode)
{
    struct oscore_config cfg;
    struct oscore_config_error err;
    if (oscore_config_parse(server_conf, strlen(server_conf), &cfg, &err))
        _exit(2);
    const struct edhoc_crypto_ops *crypto = edhoc_crypto_default();
    struct oscore_b2_server b2;
    /* Short R2s leave room for a run started from ID3 (16 bytes with 8-byte
     * values, which no run can extend). */
    oscore_b2_server_init(&b2, mode == SERVER_ALWAYS_B2 ? 4 : 0);
    struct oscore_context cur;
    bool valid = false;
    for (;;) {
        uint8_t req[2048], out[2048], inner[2048];
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(fd, req, sizeof req, 0, (struct sockaddr *)&from, &fl);
        if (n <= 0)
            continue;
        uint64_t now = mono_ms();
        struct oscore_option o;
        if (oscore_message_option(req, (size_t)n, &o))
            continue;
        long r = -1;
        struct oscore_binding b;
        size_t idl = 0;
        const uint8_t *idc = valid ? oscore_context_id_context(&cur, &idl) : NULL;
        bool ours = valid && (!o.has_kid_context || (idc && o.kid_context_len == idl &&
                                                     !memcmp(o.kid_context, idc, idl)));
        if (mode != SERVER_ALWAYS_B2 && oscore_b2_server_is_request2(&b2, req, (size_t)n, now)) {
            struct oscore_context next;
            long k = oscore_b2_server_request2(&b2, crypto, &cfg, req, (size_t)n, now, &next, inner,
                                               sizeof inner, &b);
            if (k > 0) {
                if (valid)
                    oscore_context_wipe(&cur);
                cur = next;
                valid = true;
                r = answer(&cur, &b, req, (size_t)n, out, sizeof out);
            } else {
                r = oscore_error_response((int)k, req, (size_t)n, out, sizeof out);
            }
        } else if (ours) {
            long k = oscore_unprotect_request(&cur, req, (size_t)n, inner, sizeof inner, &b);
            r = k > 0 ? answer(&cur, &b, req, (size_t)n, out, sizeof out)
                      : oscore_error_response((int)k, req, (size_t)n, out, sizeof out);
        } else {
            r = oscore_b2_server_request1(&b2, crypto, &cfg, req, (size_t)n, now, out, sizeof out);
            if (r > 0 && mode == SERVER_BAD_R2) {
                struct oscore_option ro;
                if (oscore_message_option(out, (size_t)r, &ro) == 0 && ro.kid_context_len)
                    out[ro.kid_context - out] ^= 0x01;
            } else if (r < 0) {
                r = oscore_error_response((int)r, req, (size_t)n, out, sizeof out);
            }
        }
        if (r > 0)
            sendto(fd, out, (size_t)r, 0, (struct sockaddr *)&from, fl);
    }
}

static pid_t server_pid;

static uint16_t start_server(enum server_mode mode)
{
    uint16_t port = 0;
    int fd = net_silent_socket(&port);
    assert_true(fd >= 0);
    server_pid = fork();
    assert_true(server_pid >= 0);
    if (server_pid == 0) {
        /* Not holding the test runner's output pipes open. */
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(1);
        serve(fd, mode);
        _exit(0);
    }
    close(fd);
    return port;
}

static void stop_server(void)
{
    if (server_pid > 0) {
        kill(server_pid, SIGKILL);
        waitpid(server_pid, NULL, 0);
        server_pid = 0;
    }
}

static int stop_server_after(void **state)
{
    (void)state;
    stop_server();
    return 0;
}

static char conf[300], sdir[300], errp[300];

static int setup(void **state)
{
    (void)state;
    if (net_make_dir("oscore-b2"))
        return -1;
    net_path(conf, sizeof conf, "client.conf");
    net_path(sdir, sizeof sdir, "state");
    net_path(errp, sizeof errp, "stderr.txt");
    net_write_file(conf, client_conf, 0600);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    stop_server();
    net_remove_dir();
    return 0;
}

static void assert_json_has(const char *out, const char *text)
{
    if (!strstr(out, text))
        fail_msg("'%s' not in:\n%s", text, out);
}

/* The value of "key": "..." (first occurrence) into val. */
static void json_string_of(const char *out, const char *key, char *val, size_t cap)
{
    net_json_str(out, key, val, cap);
}

/* Appendix B.2 steps 3 and 5 through the binary: the answer comes under
 * ID Context R2 || R3, the R2 of the server's 4.01 (step 2), and -v says
 * what happened. A second run starts again from the file's context, which
 * the server no longer has: B.2 again. */
static void test_coap_follows_b2(void **state)
{
    (void)state;
    uint16_t port = start_server(SERVER_GOOD);
    for (int run = 0; run < 2; run++) {
        char *out;
        int rc = net_cli_run(&out, 60, false,
                             "coap GET coap://127.0.0.1:%u/time --oscore-context %s "
                             "--state-dir %s --json -v 2>%s",
                             port, conf, sdir, errp);
        if (rc != 0)
            fail_msg("coap: exit %d:\n%s", rc, out);
        if (net_json_valid(out, "coap", false))
            fail_msg("not valid against docs/json/coap.schema.json");
        assert_json_has(out, "\"payload_text\": \"b2 ok\"");
        assert_json_has(out, "\"completed\": true");
        /* ID1 is the file's ID Context (the request carried it). */
        assert_json_has(out, "\"previous_id_context_hex\": \"0017a2d3\"");
        char r2[64], id3[64];
        json_string_of(out, "r2_hex", r2, sizeof r2);
        json_string_of(out, "id_context_hex", id3, sizeof id3);
        /* "R2 ... typically, at least 8 bytes long"; ID3 = R2 || R3. */
        assert_int_equal(strlen(r2), 2 * OSCORE_B2_NONCE_LEN);
        assert_int_equal(strlen(id3), 4 * OSCORE_B2_NONCE_LEN);
        assert_memory_equal(id3, r2, strlen(r2));
        char *err = net_read_file(errp);
        assert_non_null(err);
        if (!strstr(err, "Appendix B.2") || !strstr(err, r2))
            fail_msg("-v does not tell:\n%s", err);
        if (run == 0)
            print_message("coap -v: %s", err);
        free(err);
        free(out);
    }
    /* --observe sends the request itself (no block-wise exchange): the
     * response #1 is followed in place, the registration is sent again as
     * request #2, and the deregistration goes under the new context. */
    char *obs;
    int orc = net_cli_run(&obs, 60, true,
                          "coap GET coap://127.0.0.1:%u/time --observe 1 --oscore-context %s "
                          "--state-dir %s --json",
                          port, conf, sdir);
    if (orc != 0)
        fail_msg("coap --observe: exit %d:\n%s", orc, obs);
    if (net_json_valid(obs, "coap", false))
        fail_msg("not valid against docs/json/coap.schema.json");
    assert_json_has(obs, "\"completed\": true");
    assert_json_has(obs, "\"payload_text\": \"b2 ok\"");
    assert_json_has(obs, "\"deregistered\": true");
    free(obs);
    /* Without -v, a run that succeeds says nothing on standard error. */
    char *out;
    int rc = net_cli_run(&out, 60, false,
                         "coap POST coap://127.0.0.1:%u/x --payload hi --oscore-context %s "
                         "--state-dir %s 2>%s",
                         port, conf, sdir, errp);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "b2 ok"));
    free(out);
    char *err = net_read_file(errp);
    assert_string_equal(err, "");
    free(err);
    stop_server();
}

/* A server that answers request #2 with another response #1: the run
 * stops rather than going round (Appendix B.2.1 on runs that do not
 * converge), exit 7. */
static void test_coap_b2_not_twice(void **state)
{
    (void)state;
    uint16_t port = start_server(SERVER_ALWAYS_B2);
    char *out;
    int rc = net_cli_run(&out, 60, false,
                         "coap GET coap://127.0.0.1:%u/time --oscore-context %s --state-dir %s "
                         "--json 2>%s",
                         port, conf, sdir, errp);
    assert_int_equal(rc, 7);
    if (net_json_valid(out, "coap", false))
        fail_msg("not valid against docs/json/coap.schema.json");
    assert_json_has(out, "\"completed\": false");
    assert_json_has(out, "\"error\": \"oscore\"");
    char *err = net_read_file(errp);
    assert_non_null(strstr(err, "not following it twice"));
    free(err);
    free(out);
    stop_server();
}

/* R2 altered after protection: "If verification fails in any step, the
 * endpoint stops processing that message" - the run fails, exit 7. */
static void test_coap_b2_bad_r2(void **state)
{
    (void)state;
    uint16_t port = start_server(SERVER_BAD_R2);
    char *out;
    int rc = net_cli_run(&out, 60, false,
                         "coap GET coap://127.0.0.1:%u/time --oscore-context %s --state-dir %s "
                         "--json 2>%s",
                         port, conf, sdir, errp);
    assert_int_equal(rc, 7);
    if (net_json_valid(out, "coap", false))
        fail_msg("not valid against docs/json/coap.schema.json");
    assert_json_has(out, "\"oscore_b2\": null");
    char *err = net_read_file(errp);
    if (!strstr(err, "response #1 was refused: decryption failed"))
        fail_msg("stderr:\n%s", err);
    free(err);
    free(out);
    stop_server();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_coap_follows_b2, stop_server_after),
        cmocka_unit_test_teardown(test_coap_b2_not_twice, stop_server_after),
        cmocka_unit_test_teardown(test_coap_b2_bad_r2, stop_server_after),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
