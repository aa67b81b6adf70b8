/*
 * The (key, nonce) uniqueness checker: captures written with the project's
 * capture writer, holding messages protected with the OSCORE module from
 * contexts given as libcoap configuration text, and the checker's verdict
 * on each. The comments quote the RFC 8613 text each expectation rests on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <time.h>

#include <cmocka.h>

#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/oscore.h"
#include "nonce_check.h"

static char workdir[256];

/* One association, seen from both ends, and a stranger using the same IDs
 * and ID Context with another master secret. */
static const char CLIENT_CONF[] = "# the client of the tests\n"
                                  "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                                  "master_salt,hex,\"9e7ca92223786340\"\n"
                                  "id_context,hex,\"37cbf3210017a2d3\"\n"
                                  "sender_id,hex,\"01\"\n"
                                  "recipient_id,hex,\"02\"\n";
static const char SERVER_CONF[] = "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                                  "master_salt,hex,\"9e7ca92223786340\"\n"
                                  "id_context,hex,\"37cbf3210017a2d3\"\n"
                                  "sender_id,hex,\"02\"\n"
                                  "recipient_id,hex,\"01\"\n";
static const char STRANGER_CLIENT_CONF[] =
    "master_secret,hex,\"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff\"\n"
    "master_salt,hex,\"9e7ca92223786340\"\n"
    "id_context,hex,\"37cbf3210017a2d3\"\n"
    "sender_id,hex,\"01\"\n"
    "recipient_id,hex,\"02\"\n";
static const char STRANGER_SERVER_CONF[] =
    "master_secret,hex,\"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff\"\n"
    "master_salt,hex,\"9e7ca92223786340\"\n"
    "id_context,hex,\"37cbf3210017a2d3\"\n"
    "sender_id,hex,\"02\"\n"
    "recipient_id,hex,\"01\"\n";

/* ---- Building blocks ---- */

static void path_in_workdir(const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", workdir, name);
}

static void write_text(const char *name, const char *text, char *path, size_t cap)
{
    path_in_workdir(name, path, cap);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void context_from(const char *conf, struct oscore_context *c)
{
    struct oscore_config cfg;
    struct oscore_config_error err;
    if (oscore_config_parse(conf, strlen(conf), &cfg, &err) != 0)
        fail_msg("configuration line %u: %s", err.line, err.message);
    assert_int_equal(oscore_context_init_config(c, edhoc_crypto_openssl(), &cfg), 0);
}

static const uint8_t TOKEN_PREFIX = 0x7a;

/* A plain CoAP message: Observe when observe >= 0, Uri-Path when path. */
static size_t coap_plain(uint8_t type, uint8_t code, uint16_t mid, uint8_t token, const char *path,
                         long observe, const char *payload, uint8_t *out, size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.code = code;
    m.mid = mid;
    m.token_len = 2;
    m.token[0] = TOKEN_PREFIX;
    m.token[1] = token;
    uint8_t obs[4];
    if (observe >= 0)
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, obs,
                                                   edhoc_coap_uint_encode((uint32_t)observe, obs)),
                         0);
    if (path)
        assert_int_equal(
            edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)path, strlen(path)),
            0);
    if (payload) {
        m.payload = (const uint8_t *)payload;
        m.payload_len = strlen(payload);
    }
    long n = edhoc_coap_msg_encode(&m, out, cap);
    assert_true(n > 0);
    return (size_t)n;
}

struct wire {
    uint8_t bytes[512];
    size_t len;
};

/* Client: protect a request. */
static void protect_request(struct oscore_context *c, uint16_t mid, uint8_t token, const char *path,
                            long observe, const char *payload, struct oscore_binding *b,
                            struct wire *w)
{
    uint8_t plain[256];
    size_t n = coap_plain(COAP_TYPE_CON, COAP_CODE_GET, mid, token, path, observe, payload, plain,
                          sizeof plain);
    long len = oscore_protect_request(c, plain, n, w->bytes, sizeof w->bytes, b);
    assert_true(len > 0);
    w->len = (size_t)len;
}

/* Server: accept a protected request (so the binding is the server's). */
static void accept_request(struct oscore_context *s, const struct wire *req,
                           struct oscore_binding *b)
{
    uint8_t inner[512];
    long n = oscore_unprotect_request(s, req->bytes, req->len, inner, sizeof inner, b);
    if (n <= 0)
        fail_msg("unprotect request: %s", oscore_strerror((int)n));
}

/* Server: protect a response (a notification when observe >= 0). */
static void protect_response(struct oscore_context *s, struct oscore_binding *b, uint8_t type,
                             uint16_t mid, uint8_t token, long observe, const char *payload,
                             bool with_piv, struct wire *w)
{
    uint8_t plain[256];
    size_t n = coap_plain(type, COAP_CODE_CONTENT, mid, token, NULL, observe, payload, plain,
                          sizeof plain);
    long len = oscore_protect_response(s, b, plain, n, with_piv, w->bytes, sizeof w->bytes);
    if (len <= 0)
        fail_msg("protect response: %s", oscore_strerror((int)len));
    w->len = (size_t)len;
}

struct endpoint {
    struct sockaddr_storage ss;
};

static void ep4(struct endpoint *e, const char *addr, uint16_t port)
{
    struct sockaddr_in *s = (struct sockaddr_in *)&e->ss;
    memset(e, 0, sizeof *e);
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    assert_int_equal(inet_pton(AF_INET, addr, &s->sin_addr), 1);
}

#define SA(e) ((const struct sockaddr *)&(e).ss)

/* A capture being written, with a clock that moves 1 ms per packet. */
struct capture_out {
    struct edhoc_capture *cap;
    struct timespec ts;
    char path[300];
};

static void capture_begin(struct capture_out *o, const char *name, long start_ms)
{
    char err[256];
    path_in_workdir(name, o->path, sizeof o->path);
    o->cap = edhoc_capture_open(o->path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    if (!o->cap)
        fail_msg("open %s: %s", o->path, err);
    o->ts.tv_sec = 1700000000 + start_ms / 1000;
    o->ts.tv_nsec = (start_ms % 1000) * 1000000;
}

static void capture_put(struct capture_out *o, const struct endpoint *from,
                        const struct endpoint *to, const uint8_t *bytes, size_t len)
{
    assert_int_equal(edhoc_capture_datagram(o->cap, SA(*from), SA(*to), bytes, len, &o->ts), 0);
    o->ts.tv_nsec += 1000000;
    if (o->ts.tv_nsec >= 1000000000) {
        o->ts.tv_sec++;
        o->ts.tv_nsec -= 1000000000;
    }
}

static void capture_wire(struct capture_out *o, const struct endpoint *from,
                         const struct endpoint *to, const struct wire *w)
{
    capture_put(o, from, to, w->bytes, w->len);
}

static void capture_end(struct capture_out *o)
{
    edhoc_capture_close(o->cap);
    o->cap = NULL;
}

static struct endpoint client, server;

static struct nonce_check *checker_with(const char *const *confs, size_t n_confs,
                                        const char *const *pcaps, size_t n_pcaps)
{
    struct nonce_check *nc = nonce_check_new();
    assert_non_null(nc);
    char why[512];
    for (size_t i = 0; i < n_confs; i++) {
        char path[300];
        char name[32];
        snprintf(name, sizeof name, "ctx%zu.conf", i);
        write_text(name, confs[i], path, sizeof path);
        if (nonce_check_add_context_file(nc, path, why, sizeof why) != 0)
            fail_msg("%s", why);
    }
    for (size_t i = 0; i < n_pcaps; i++) {
        if (nonce_check_add_pcap(nc, pcaps[i], why, sizeof why) != 0)
            fail_msg("%s", why);
    }
    return nc;
}

static const struct nonce_check_report *report_of(struct nonce_check *nc)
{
    const struct nonce_check_report *r = nonce_check_report(nc);
    assert_non_null(r);
    if (getenv("EDHOC_TEST_VERBOSE"))
        nonce_check_print(nc, stderr);
    return r;
}

/* ---- (1) A clean exchange ---- */

/* Request + response without Partial IV, Observe registration + two
 * notifications with Partial IVs. */
static void write_clean_exchange(const char *name)
{
    struct oscore_context c, s;
    context_from(CLIENT_CONF, &c);
    context_from(SERVER_CONF, &s);
    struct oscore_binding cb, sb;
    struct wire w;
    struct capture_out o;
    capture_begin(&o, name, 0);

    protect_request(&c, 1, 0x11, "temp", -1, NULL, &cb, &w);
    capture_wire(&o, &client, &server, &w);
    accept_request(&s, &w, &sb);
    protect_response(&s, &sb, COAP_TYPE_ACK, 1, 0x11, -1, "21.5 C", false, &w);
    capture_wire(&o, &server, &client, &w);
    /* The client checks the response too, so the capture is what a real
     * exchange would be. */
    uint8_t inner[512];
    assert_true(oscore_unprotect_response(&c, &cb, w.bytes, w.len, inner, sizeof inner) > 0);

    protect_request(&c, 2, 0x22, "counter", 0, NULL, &cb, &w);
    capture_wire(&o, &client, &server, &w);
    accept_request(&s, &w, &sb);
    protect_response(&s, &sb, COAP_TYPE_NON, 100, 0x22, 1, "1", true, &w);
    capture_wire(&o, &server, &client, &w);
    assert_true(oscore_unprotect_response(&c, &cb, w.bytes, w.len, inner, sizeof inner) > 0);
    /* An empty ACK has no OSCORE option: not an OSCORE message. */
    uint8_t ack[4] = {0x60, 0x00, 0x00, 100};
    capture_put(&o, &client, &server, ack, sizeof ack);
    protect_response(&s, &sb, COAP_TYPE_NON, 101, 0x22, 2, "2", true, &w);
    capture_wire(&o, &server, &client, &w);
    assert_true(oscore_unprotect_response(&c, &cb, w.bytes, w.len, inner, sizeof inner) > 0);

    capture_end(&o);
    oscore_context_wipe(&c);
    oscore_context_wipe(&s);
}

static void test_clean_exchange(void **state)
{
    (void)state;
    char pcap[300];
    path_in_workdir("clean.pcap", pcap, sizeof pcap);
    write_clean_exchange("clean.pcap");
    const char *pcaps[] = {pcap};

    /* RFC 8613 Section 7.2: "An AEAD nonce MUST NOT be used more than once
     * per AEAD key." Section 5.2: "If the Partial IV is not present in a
     * response, the nonce from the request is used." - under the other
     * endpoint's key, so the request and its response are two pairs
     * (Appendix D.4: "messages encrypted by different endpoints use
     * different keys"). Section 4.1.3.5.2: "a Partial IV MUST be included
     * in all notifications (both successful and error), except for the
     * first one where the Partial IV MAY be omitted." Five messages, five
     * pairs, nothing reused. */
    const char *client_only[] = {CLIENT_CONF};
    struct nonce_check *nc = checker_with(client_only, 1, pcaps, 1);
    const struct nonce_check_report *r = report_of(nc);
    assert_int_equal(r->files, 1);
    assert_int_equal(r->frames, 6);
    assert_int_equal(r->datagrams, 6);
    assert_int_equal(r->coap, 6);
    assert_int_equal(r->skipped, 0);
    assert_int_equal(r->oscore, 5);
    assert_int_equal(r->requests, 2);
    assert_int_equal(r->responses, 3);
    /* One side's context gives the keys of both directions: Section 3.1,
     * "the Sender Context of one endpoint matches the Recipient Context of
     * the other endpoint, and vice versa", which is what lets the client's
     * file attribute the server's messages. */
    assert_int_equal(r->attributed, 5);
    assert_int_equal(r->unattributed, 0);
    assert_int_equal(r->repeats, 0);
    assert_int_equal(r->distinct_pairs, 5);
    assert_int_equal(r->n_violations, 0);
    nonce_check_free(nc);

    /* Both sides' files describe the same two keys: the same verdict. */
    const char *both[] = {CLIENT_CONF, SERVER_CONF};
    nc = checker_with(both, 2, pcaps, 1);
    r = report_of(nc);
    assert_int_equal(r->attributed, 5);
    assert_int_equal(r->distinct_pairs, 5);
    assert_int_equal(r->n_violations, 0);

    /* Captures first, contexts later: the analysis waits for the report. */
    nonce_check_free(nc);
    nc = checker_with(NULL, 0, pcaps, 1);
    r = report_of(nc);
    assert_int_equal(r->attributed, 0);
    assert_int_equal(r->no_key, 5);
    struct oscore_config cfg;
    struct oscore_config_error err;
    assert_int_equal(oscore_config_parse(SERVER_CONF, strlen(SERVER_CONF), &cfg, &err), 0);
    assert_int_equal(nonce_check_add_context(nc, &cfg), 0);
    r = report_of(nc);
    assert_int_equal(r->attributed, 5);
    assert_int_equal(r->n_violations, 0);
    nonce_check_free(nc);
}

/* ---- (2) Two requests under one sequence number ---- */

static void test_request_reuse(void **state)
{
    (void)state;
    /* oscore_context_set_ssn cannot go back, so the reuse comes from two
     * copies of one context, as after a restart that lost its state. */
    struct oscore_context c1, c2;
    context_from(CLIENT_CONF, &c1);
    context_from(CLIENT_CONF, &c2);
    struct oscore_binding b;
    struct wire w1, w2;
    protect_request(&c1, 1, 0x01, "temp", -1, NULL, &b, &w1);
    protect_request(&c2, 2, 0x02, "door", -1, "open", &b, &w2);
    struct capture_out o;
    capture_begin(&o, "reuse.pcap", 0);
    capture_wire(&o, &client, &server, &w1);
    capture_wire(&o, &client, &server, &w2);
    capture_end(&o);
    oscore_context_wipe(&c1);
    oscore_context_wipe(&c2);

    const char *confs[] = {SERVER_CONF};
    const char *pcaps[] = {o.path};
    struct nonce_check *nc = checker_with(confs, 1, pcaps, 1);
    const struct nonce_check_report *r = report_of(nc);
    /* RFC 8613 Section 7.2: "An AEAD nonce MUST NOT be used more than once
     * per AEAD key." Section 7.5: an endpoint using a partial security
     * context from non-volatile memory "MUST NOT reuse a previous Sender
     * Sequence Number". Both requests carry Partial IV 0 from Sender ID 01
     * under the client's Sender Key: one violation. */
    assert_int_equal(r->attributed, 2);
    assert_int_equal(r->distinct_pairs, 1);
    assert_int_equal(r->n_violations, 1);
    const struct nonce_check_violation *v = &r->violations[0];
    assert_int_equal(v->sender_id_len, 1);
    assert_int_equal(v->sender_id[0], 0x01);
    assert_true(v->has_id_context);
    assert_int_equal(v->id_context_len, 8);
    assert_int_equal(v->piv_len, 1);
    assert_int_equal(v->piv[0], 0x00);
    assert_int_equal(v->id_piv_len, 1);
    assert_int_equal(v->id_piv[0], 0x01);
    assert_int_equal(v->nonce_len, 13);
    assert_false(v->first.response);
    assert_false(v->second.response);
    assert_int_equal(v->first.packet, 1);
    assert_int_equal(v->second.packet, 2);
    assert_string_equal(v->first.file, o.path);
    assert_non_null(strstr(v->text, "Sender ID h'01'"));
    assert_non_null(strstr(v->text, "ID context h'37cbf3210017a2d3'"));
    assert_non_null(strstr(v->text, "Partial IV h'00'"));
    assert_non_null(strstr(v->text, "request"));
    assert_non_null(strstr(v->text, "reuse.pcap#1"));
    assert_non_null(strstr(v->text, "reuse.pcap#2"));
    nonce_check_free(nc);
}

/* ---- (3) One request seen twice ---- */

static void test_same_request_twice(void **state)
{
    (void)state;
    struct oscore_context c, s;
    context_from(CLIENT_CONF, &c);
    context_from(SERVER_CONF, &s);
    struct oscore_binding cb, sb;
    struct wire req, resp;
    protect_request(&c, 7, 0x33, "temp", -1, NULL, &cb, &req);
    accept_request(&s, &req, &sb);
    protect_response(&s, &sb, COAP_TYPE_ACK, 7, 0x33, -1, "20 C", false, &resp);
    oscore_context_wipe(&c);
    oscore_context_wipe(&s);

    /* The client's capture: the request, its retransmission (a CON sent
     * again unchanged), the response. */
    struct capture_out a, b;
    capture_begin(&a, "client-side.pcap", 0);
    capture_wire(&a, &client, &server, &req);
    capture_wire(&a, &client, &server, &req);
    capture_wire(&a, &server, &client, &resp);
    capture_end(&a);
    /* The server's capture of the same packets. */
    capture_begin(&b, "server-side.pcap", 0);
    capture_wire(&b, &client, &server, &req);
    capture_wire(&b, &server, &client, &resp);
    capture_end(&b);

    const char *confs[] = {CLIENT_CONF, SERVER_CONF};
    const char *pcaps[] = {a.path, b.path};
    struct nonce_check *nc = checker_with(confs, 2, pcaps, 2);
    const struct nonce_check_report *r = report_of(nc);
    /* RFC 8613 Section 7.2: "An AEAD nonce MUST NOT be used more than once
     * per AEAD key." A retransmission, or another capture of the same
     * packet, is the one encryption seen again: the same ciphertext, one
     * use of the nonce. */
    assert_int_equal(r->oscore, 5);
    assert_int_equal(r->attributed, 5);
    assert_int_equal(r->distinct_pairs, 2);
    assert_int_equal(r->repeats, 3);
    assert_int_equal(r->n_violations, 0);
    assert_int_equal(r->accepted_twice, 0); /* one answer, captured twice */
    nonce_check_free(nc);
}

/* ---- (4) Two notifications under one Partial IV ---- */

static void test_notification_reuse(void **state)
{
    (void)state;
    struct oscore_context c, s1, s2;
    context_from(CLIENT_CONF, &c);
    context_from(SERVER_CONF, &s1);
    context_from(SERVER_CONF, &s2);
    struct oscore_binding cb, b1, b2;
    struct wire reg, n1, n2;
    protect_request(&c, 3, 0x44, "counter", 0, NULL, &cb, &reg);
    /* Two copies of the server's context each accept the registration and
     * each send a notification with its first sequence number. */
    accept_request(&s1, &reg, &b1);
    accept_request(&s2, &reg, &b2);
    protect_response(&s1, &b1, COAP_TYPE_NON, 200, 0x44, 5, "5", true, &n1);
    protect_response(&s2, &b2, COAP_TYPE_NON, 201, 0x44, 6, "6", true, &n2);
    oscore_context_wipe(&c);
    oscore_context_wipe(&s1);
    oscore_context_wipe(&s2);

    struct capture_out o;
    capture_begin(&o, "notify.pcap", 0);
    capture_wire(&o, &client, &server, &reg);
    capture_wire(&o, &server, &client, &n1);
    capture_wire(&o, &server, &client, &n2);
    capture_end(&o);

    const char *confs[] = {CLIENT_CONF};
    const char *pcaps[] = {o.path};
    struct nonce_check *nc = checker_with(confs, 1, pcaps, 1);
    const struct nonce_check_report *r = report_of(nc);
    /* RFC 8613 Section 8.3.1: for a notification that is not the first,
     * "encode the Partial IV (Sender Sequence Number in network byte
     * order) and increment the Sender Sequence Number by one"; Appendix
     * D.4: "Since the encrypting endpoint steps the Partial IV for each
     * use, the nonces used in case A are all unique". Two notifications
     * with Partial IV 0 from Sender ID 02: one violation. */
    assert_int_equal(r->attributed, 3);
    assert_int_equal(r->distinct_pairs, 2);
    assert_int_equal(r->n_violations, 1);
    /* Notifications answer their registration again and again (RFC 7641):
     * not the request processed twice. */
    assert_int_equal(r->accepted_twice, 0);
    const struct nonce_check_violation *v = &r->violations[0];
    assert_int_equal(v->sender_id_len, 1);
    assert_int_equal(v->sender_id[0], 0x02);
    assert_int_equal(v->id_piv_len, 1);
    assert_int_equal(v->id_piv[0], 0x02);
    assert_int_equal(v->piv_len, 1);
    assert_int_equal(v->piv[0], 0x00);
    assert_true(v->first.response);
    assert_true(v->second.response);
    assert_int_equal(v->first.packet, 2);
    assert_int_equal(v->second.packet, 3);
    assert_non_null(strstr(v->text, "Sender ID h'02'"));
    assert_non_null(strstr(v->text, "response"));
    nonce_check_free(nc);
}

/* ---- Responses reusing the request's nonce ---- */

static void test_response_without_piv_twice(void **state)
{
    (void)state;
    struct oscore_context c, s1, s2;
    context_from(CLIENT_CONF, &c);
    context_from(SERVER_CONF, &s1);
    context_from(SERVER_CONF, &s2);
    struct oscore_binding cb, b1, b2;
    struct wire req, r1, r2;
    protect_request(&c, 9, 0x55, "temp", -1, NULL, &cb, &req);
    /* The module refuses a second response on the request's nonce from
     * one binding; two copies of the server's context do not know of
     * each other. */
    accept_request(&s1, &req, &b1);
    accept_request(&s2, &req, &b2);
    protect_response(&s1, &b1, COAP_TYPE_ACK, 9, 0x55, -1, "19 C", false, &r1);
    protect_response(&s2, &b2, COAP_TYPE_ACK, 9, 0x55, -1, "25 C", false, &r2);
    oscore_context_wipe(&c);
    oscore_context_wipe(&s1);
    oscore_context_wipe(&s2);

    struct capture_out o;
    capture_begin(&o, "nopiv.pcap", 0);
    capture_wire(&o, &client, &server, &req);
    capture_wire(&o, &server, &client, &r1);
    capture_wire(&o, &server, &client, &r2);
    capture_end(&o);

    const char *confs[] = {SERVER_CONF};
    const char *pcaps[] = {o.path};
    struct nonce_check *nc = checker_with(confs, 1, pcaps, 1);
    const struct nonce_check_report *r = report_of(nc);
    /* RFC 8613 Section 8.3 step 4: "If the AEAD nonce from the request was
     * used, the Partial IV MUST NOT be included in the message"; Appendix
     * D.4 case B makes that nonce unique only because "PIV is unique for
     * this ID_PIV" - one response per request. Two different responses
     * without Partial IV under the server's key: one violation, its nonce
     * built from the request's kid (01) and Partial IV. */
    assert_int_equal(r->attributed, 3);
    assert_int_equal(r->n_violations, 1);
    const struct nonce_check_violation *v = &r->violations[0];
    assert_int_equal(v->sender_id_len, 1);
    assert_int_equal(v->sender_id[0], 0x02);
    assert_int_equal(v->id_piv_len, 1);
    assert_int_equal(v->id_piv[0], 0x01);
    assert_int_equal(v->piv_len, 1);
    assert_int_equal(v->piv[0], 0x00);
    assert_true(v->first.response && v->second.response);
    nonce_check_free(nc);
}

/* ---- A request processed twice ---- */

/* One request accepted by two copies of the server's context (two
 * responders of a fleet, a replay reaching the second), each answering
 * with a Partial IV of its own: the nonces differ, so the nonce rule
 * holds, and still the request was processed twice (RFC 8613 Section
 * 7.4: "the recipient ... MUST ... verify that the message is not a
 * replay"). The checker counts it. */
static void test_request_processed_twice(void **state)
{
    (void)state;
    struct oscore_context c, s1, s2;
    context_from(CLIENT_CONF, &c);
    context_from(SERVER_CONF, &s1);
    context_from(SERVER_CONF, &s2);
    struct oscore_binding cb, b1, b2;
    struct wire req, r1, r2, unseen;
    protect_request(&c, 11, 0x66, "temp", -1, NULL, &cb, &req);
    accept_request(&s1, &req, &b1);
    accept_request(&s2, &req, &b2);
    protect_response(&s1, &b1, COAP_TYPE_ACK, 11, 0x66, -1, "19 C", true, &r1);
    /* s2's Partial IV 0 goes elsewhere (not captured): its answer has 1. */
    protect_response(&s2, &b2, COAP_TYPE_ACK, 11, 0x66, -1, "00 C", true, &unseen);
    protect_response(&s2, &b2, COAP_TYPE_ACK, 11, 0x66, -1, "25 C", true, &r2);
    oscore_context_wipe(&c);
    oscore_context_wipe(&s1);
    oscore_context_wipe(&s2);

    struct capture_out o;
    capture_begin(&o, "twice.pcap", 0);
    capture_wire(&o, &client, &server, &req);
    capture_wire(&o, &server, &client, &r1);
    capture_wire(&o, &server, &client, &r1); /* the same answer again: once */
    capture_wire(&o, &client, &server, &req);
    capture_wire(&o, &server, &client, &r2);
    capture_end(&o);

    const char *confs[] = {SERVER_CONF};
    const char *pcaps[] = {o.path};
    struct nonce_check *nc = checker_with(confs, 1, pcaps, 1);
    const struct nonce_check_report *r = report_of(nc);
    assert_int_equal(r->attributed, 5);
    assert_int_equal(r->n_violations, 0);
    assert_int_equal(r->accepted_twice, 1);
    nonce_check_free(nc);
}

/* ---- Finding a response's request ---- */

static void test_response_matching(void **state)
{
    (void)state;
    struct oscore_context c, s;
    context_from(CLIENT_CONF, &c);
    context_from(SERVER_CONF, &s);
    struct oscore_binding cb, sb;
    struct wire req1, resp1, req2, resp2;
    /* One token used by two requests in turn (RFC 7252 allows reuse once
     * the first exchange is over). */
    protect_request(&c, 1, 0x66, "temp", -1, NULL, &cb, &req1);
    accept_request(&s, &req1, &sb);
    protect_response(&s, &sb, COAP_TYPE_ACK, 1, 0x66, -1, "a", false, &resp1);
    protect_request(&c, 2, 0x66, "temp", -1, NULL, &cb, &req2);
    accept_request(&s, &req2, &sb);
    protect_response(&s, &sb, COAP_TYPE_ACK, 2, 0x66, -1, "b", false, &resp2);
    oscore_context_wipe(&c);
    oscore_context_wipe(&s);

    /* Each side captured only what it sent; the responses' capture is
     * added first. */
    struct capture_out sent_by_client, sent_by_server;
    capture_begin(&sent_by_client, "requests-only.pcap", 0);
    capture_wire(&sent_by_client, &client, &server, &req1);
    sent_by_client.ts.tv_sec += 1;
    capture_wire(&sent_by_client, &client, &server, &req2);
    capture_end(&sent_by_client);
    capture_begin(&sent_by_server, "responses-only.pcap", 5);
    capture_wire(&sent_by_server, &server, &client, &resp1);
    sent_by_server.ts.tv_sec += 1;
    capture_wire(&sent_by_server, &server, &client, &resp2);
    capture_end(&sent_by_server);

    const char *confs[] = {CLIENT_CONF};
    const char *pcaps[] = {sent_by_server.path, sent_by_client.path};
    struct nonce_check *nc = checker_with(confs, 1, pcaps, 2);
    const struct nonce_check_report *r = report_of(nc);
    /* RFC 8613 Section 8: "both endpoints MUST keep the association
     * (Token, {Security Context, Partial IV of the request})": a response
     * is read with the request its token and endpoints name, wherever that
     * request was captured. */
    assert_int_equal(r->oscore, 4);
    assert_int_equal(r->attributed, 4);
    assert_int_equal(r->no_request, 0);
    assert_int_equal(r->distinct_pairs, 4);
    assert_int_equal(r->n_violations, 0);
    nonce_check_free(nc);
}

/* ---- (5) A key the checker does not know ---- */

static void test_unknown_key(void **state)
{
    (void)state;
    struct oscore_context c, sc, ss;
    context_from(CLIENT_CONF, &c);
    context_from(STRANGER_CLIENT_CONF, &sc);
    context_from(STRANGER_SERVER_CONF, &ss);
    struct oscore_binding b, sb;
    struct wire known, stranger, stranger_resp, forged;
    protect_request(&c, 1, 0x01, "temp", -1, NULL, &b, &known);
    protect_request(&c, 2, 0x02, "temp", -1, "x", &b, &forged);
    /* The stranger's request carries the same kid (01), ID context and
     * Partial IV (0) as the known one: the same nonce inputs on the wire. */
    protect_request(&sc, 3, 0x03, "temp", -1, NULL, &b, &stranger);
    accept_request(&ss, &stranger, &sb);
    protect_response(&ss, &sb, COAP_TYPE_ACK, 3, 0x03, -1, "hi", false, &stranger_resp);
    oscore_context_wipe(&c);
    oscore_context_wipe(&sc);
    oscore_context_wipe(&ss);
    /* The second known request (Partial IV 1) rewritten on the way to
     * claim Partial IV 0 as well: flags 19 (Partial IV, kid context, kid),
     * Partial IV 01 -> 00. */
    struct coap_msg m;
    assert_int_equal(edhoc_coap_msg_parse(forged.bytes, forged.len, &m), 0);
    const struct coap_option *opt = edhoc_coap_msg_find_option(&m, COAP_OPT_OSCORE);
    assert_non_null(opt);
    assert_int_equal(opt->value[0], 0x19);
    assert_int_equal(opt->value[1], 0x01);
    forged.bytes[opt->value + 1 - forged.bytes] = 0x00;

    struct capture_out o;
    capture_begin(&o, "stranger.pcap", 0);
    capture_wire(&o, &client, &server, &known);
    capture_wire(&o, &client, &server, &stranger);
    capture_wire(&o, &server, &client, &stranger_resp);
    capture_wire(&o, &client, &server, &forged);
    capture_end(&o);

    const char *confs[] = {CLIENT_CONF, SERVER_CONF};
    const char *pcaps[] = {o.path};
    struct nonce_check *nc = checker_with(confs, 2, pcaps, 1);
    const struct nonce_check_report *r = report_of(nc);
    /* RFC 8613 Section 12.6: "The ID Context, Sender ID, and Partial IV are
     * always at least implicitly integrity protected, as manipulation
     * leads to the wrong nonce or key being used and therefore results in
     * decryption failure." So what names a key is the AEAD verifying
     * (Section 8.2 step 6: "The decrypt operation includes the
     * verification of the integrity."), not the kid: the stranger's
     * messages and the rewritten one verify under no known key and are
     * unattributed, not a second use of the known request's nonce. */
    assert_int_equal(r->oscore, 4);
    assert_int_equal(r->attributed, 1);
    assert_int_equal(r->unattributed, 3);
    assert_int_equal(r->no_key, 3);
    assert_int_equal(r->distinct_pairs, 1);
    assert_int_equal(r->n_violations, 0);
    nonce_check_free(nc);

    /* Given the stranger's keys too, its two messages are attributed to
     * them, still without a violation: a different key is a different
     * (key, nonce). */
    const char *all[] = {CLIENT_CONF, STRANGER_SERVER_CONF};
    nc = checker_with(all, 2, pcaps, 1);
    r = report_of(nc);
    assert_int_equal(r->attributed, 3);
    assert_int_equal(r->no_key, 1);
    assert_int_equal(r->distinct_pairs, 3);
    assert_int_equal(r->n_violations, 0);
    nonce_check_free(nc);
}

/* ---- (6) Garbage ---- */

/* A CoAP message with the given OSCORE option value and payload. */
static size_t coap_with_oscore(uint8_t type, uint8_t code, uint8_t token, const uint8_t *opt,
                               size_t opt_len, const uint8_t *payload, size_t payload_len,
                               uint8_t *out, size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.code = code;
    m.mid = 0x4242;
    m.token_len = 2;
    m.token[0] = TOKEN_PREFIX;
    m.token[1] = token;
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_OSCORE, opt, opt_len), 0);
    m.payload = payload;
    m.payload_len = payload_len;
    long n = edhoc_coap_msg_encode(&m, out, cap);
    assert_true(n > 0);
    return (size_t)n;
}

/* The protected message with an outer Block2 option added, as a proxy
 * fragmenting it would. */
static void add_outer_block2(struct wire *w)
{
    struct coap_msg m;
    assert_int_equal(edhoc_coap_msg_parse(w->bytes, w->len, &m), 0);
    uint8_t block = 0x08; /* NUM 0, M 1, SZX 0 */
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_BLOCK2, &block, 1), 0);
    uint8_t out[sizeof w->bytes];
    long n = edhoc_coap_msg_encode(&m, out, sizeof out);
    assert_true(n > 0);
    memcpy(w->bytes, out, (size_t)n);
    w->len = (size_t)n;
}

static void write_raw_frames(const char *path)
{
    pcap_t *dead = pcap_open_dead(DLT_RAW, 65535);
    assert_non_null(dead);
    pcap_dumper_t *d = pcap_dump_open(dead, path);
    assert_non_null(d);
    struct pcap_pkthdr h;
    memset(&h, 0, sizeof h);
    /* An IPv4 header claiming more bytes than the frame has. */
    uint8_t lying[28] = {0x45, 0, 0x01, 0x00, 0, 0, 0, 0, 64, 17};
    h.caplen = h.len = sizeof lying;
    pcap_dump((u_char *)d, &h, lying);
    /* A TCP segment: not UDP. */
    uint8_t tcp[40] = {0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6};
    h.caplen = h.len = sizeof tcp;
    pcap_dump((u_char *)d, &h, tcp);
    /* Not even IP. */
    uint8_t junk[3] = {0x12, 0x34, 0x56};
    h.caplen = h.len = sizeof junk;
    pcap_dump((u_char *)d, &h, junk);
    /* A UDP datagram cut by the snap length. */
    uint8_t frame[128];
    uint8_t payload[40];
    memset(payload, 0x5a, sizeof payload);
    long n = edhoc_capture_frame_build(EDHOC_CAPTURE_DLT_RAW, SA(client), SA(server), payload,
                                       sizeof payload, frame, sizeof frame);
    assert_true(n > 30);
    h.caplen = 30;
    h.len = (bpf_u_int32)n;
    pcap_dump((u_char *)d, &h, frame);
    pcap_dump_close(d);
    pcap_close(dead);
}

static void test_garbage(void **state)
{
    (void)state;
    struct oscore_context c, s;
    context_from(CLIENT_CONF, &c);
    context_from(SERVER_CONF, &s);
    struct oscore_binding cb, sb;
    struct wire req, resp, big_req, big_resp;
    protect_request(&c, 1, 0x01, "temp", -1, NULL, &cb, &req);
    accept_request(&s, &req, &sb);
    protect_response(&s, &sb, COAP_TYPE_ACK, 1, 0x01, -1, "ok", false, &resp);
    protect_request(&c, 2, 0x02, "big", -1, NULL, &cb, &big_req);
    accept_request(&s, &big_req, &sb);
    protect_response(&s, &sb, COAP_TYPE_ACK, 2, 0x02, -1, "first block", false, &big_resp);
    add_outer_block2(&big_resp);
    oscore_context_wipe(&c);
    oscore_context_wipe(&s);

    struct capture_out o;
    capture_begin(&o, "garbage.pcap", 0);
    capture_wire(&o, &client, &server, &req);
    uint8_t noise[37];
    for (size_t i = 0; i < sizeof noise; i++)
        noise[i] = (uint8_t)(0xc3 ^ (i * 29));
    capture_put(&o, &client, &server, noise, sizeof noise); /* not CoAP */
    capture_put(&o, &client, &server, noise, 0);            /* empty datagram */
    uint8_t msg[128];
    static const uint8_t ct[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    static const uint8_t reserved[] = {0xe9, 0x00, 0x01}; /* reserved flag bits */
    size_t n = coap_with_oscore(COAP_TYPE_CON, COAP_CODE_POST, 0x50, reserved, sizeof reserved, ct,
                                sizeof ct, msg, sizeof msg);
    capture_put(&o, &client, &server, msg, n);
    static const uint8_t piv_no_kid[] = {0x01, 0x07}; /* request without kid */
    n = coap_with_oscore(COAP_TYPE_CON, COAP_CODE_POST, 0x51, piv_no_kid, sizeof piv_no_kid, ct,
                         sizeof ct, msg, sizeof msg);
    capture_put(&o, &client, &server, msg, n);
    static const uint8_t good_opt[] = {0x09, 0x09, 0x01};
    n = coap_with_oscore(COAP_TYPE_CON, COAP_CODE_POST, 0x52, good_opt, sizeof good_opt, NULL, 0,
                         msg, sizeof msg); /* no payload */
    capture_put(&o, &client, &server, msg, n);
    n = coap_with_oscore(COAP_TYPE_CON, COAP_CODE(1, 0), 0x53, good_opt, sizeof good_opt, ct,
                         sizeof ct, msg, sizeof msg); /* reserved code class */
    capture_put(&o, &client, &server, msg, n);
    static const uint8_t piv_opt[] = {0x01, 0x03};
    n = coap_with_oscore(COAP_TYPE_ACK, COAP_CODE_CONTENT, 0x54, piv_opt, sizeof piv_opt, ct,
                         sizeof ct, msg, sizeof msg); /* answers no request */
    capture_put(&o, &server, &client, msg, n);
    capture_wire(&o, &server, &client, &resp);
    capture_wire(&o, &client, &server, &big_req);
    capture_wire(&o, &server, &client, &big_resp);
    capture_end(&o);

    char raw[300];
    path_in_workdir("raw.pcap", raw, sizeof raw);
    write_raw_frames(raw);

    const char *confs[] = {CLIENT_CONF};
    const char *pcaps[] = {o.path, raw};
    struct nonce_check *nc = checker_with(confs, 1, pcaps, 2);
    const struct nonce_check_report *r = report_of(nc);
    /* RFC 8613 Section 8.2 step 2: "If either the decompression or the
     * COSE message fails to decode ... the server SHALL stop processing
     * the request"; Section 6.1: with a reserved flag bit set "the message
     * is considered to be malformed". Section 4.1.3.4.2: "the receiving
     * endpoint needs to receive the last block ... to be able to compose
     * the OSCORE message and verify its integrity", so a fragment of an
     * outer block-wise transfer cannot be attributed. None of this is a
     * nonce reuse, and the valid messages around it still count. */
    assert_int_equal(r->files, 2);
    assert_int_equal(r->frames, 11 + 4);
    assert_int_equal(r->datagrams, 11);
    assert_int_equal(r->coap, 9);
    assert_int_equal(r->skipped, 2 + 2); /* noise, empty; the lying and the cut frame */
    assert_int_equal(r->ignored, 2);     /* TCP, not IP */
    assert_int_equal(r->oscore, 9);
    assert_int_equal(r->attributed, 3); /* the two requests and the first response */
    assert_int_equal(r->fragments, 1);
    assert_int_equal(r->malformed, 4);
    assert_int_equal(r->no_request, 1);
    assert_int_equal(r->no_key, 0);
    assert_int_equal(r->unattributed, 6);
    assert_int_equal(r->n_violations, 0);
    nonce_check_free(nc);
}

/* Files that cannot be used are reported, not crashed on. */
static void test_bad_files(void **state)
{
    (void)state;
    struct nonce_check *nc = nonce_check_new();
    assert_non_null(nc);
    char why[512], path[300];
    path_in_workdir("missing.pcap", path, sizeof path);
    assert_int_equal(nonce_check_add_pcap(nc, path, why, sizeof why), -1);
    assert_non_null(strstr(why, "missing.pcap"));
    write_text("not-a-capture.pcap", "hello\n", path, sizeof path);
    assert_int_equal(nonce_check_add_pcap(nc, path, why, sizeof why), -1);
    path_in_workdir("missing.conf", path, sizeof path);
    assert_int_equal(nonce_check_add_context_file(nc, path, why, sizeof why), -1);
    assert_non_null(strstr(why, "cannot open"));
    write_text("bad.conf", "master_secret,hex,01\nbogus,hex,01\n", path, sizeof path);
    assert_int_equal(nonce_check_add_context_file(nc, path, why, sizeof why), -1);
    assert_non_null(strstr(why, "bad.conf:2:"));

    /* A capture cut in its last record: what came before still counts. */
    char clean[300], cut[300];
    path_in_workdir("clean-for-cut.pcap", clean, sizeof clean);
    write_clean_exchange("clean-for-cut.pcap");
    path_in_workdir("cut.pcap", cut, sizeof cut);
    FILE *in = fopen(clean, "rb");
    assert_non_null(in);
    uint8_t buf[8192];
    size_t len = fread(buf, 1, sizeof buf, in);
    fclose(in);
    assert_true(len > 100 && len < sizeof buf);
    FILE *out = fopen(cut, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(buf, 1, len - 10, out), len - 10);
    fclose(out);
    write_text("client.conf", CLIENT_CONF, path, sizeof path);
    assert_int_equal(nonce_check_add_context_file(nc, path, why, sizeof why), 0);
    assert_int_equal(nonce_check_add_pcap(nc, cut, why, sizeof why), -1);
    assert_non_null(strstr(why, "cut.pcap"));
    const struct nonce_check_report *r = report_of(nc);
    assert_int_equal(r->oscore, 4);
    assert_int_equal(r->attributed, 4);
    assert_int_equal(r->n_violations, 0);
    nonce_check_free(nc);
    nonce_check_free(NULL);
}

static int setup(void **state)
{
    (void)state;
    snprintf(workdir, sizeof workdir, "/tmp/edhoc-test-nonce-check-XXXXXX");
    if (!mkdtemp(workdir))
        return -1;
    ep4(&client, "192.0.2.1", 40000);
    ep4(&server, "192.0.2.2", 5683);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (getenv("EDHOC_TEST_KEEP")) {
        fprintf(stderr, "test files kept in %s\n", workdir);
        return 0;
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", workdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_exchange),
        cmocka_unit_test(test_request_reuse),
        cmocka_unit_test(test_same_request_twice),
        cmocka_unit_test(test_notification_reuse),
        cmocka_unit_test(test_request_processed_twice),
        cmocka_unit_test(test_response_without_piv_twice),
        cmocka_unit_test(test_response_matching),
        cmocka_unit_test(test_unknown_key),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
