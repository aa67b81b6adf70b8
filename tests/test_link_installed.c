/*
 * A program built the way a user of the installed library builds one: it
 * sees only the installed headers and is compiled and linked with
 * `pkg-config --cflags --libs edhoc` (tests/test_install.sh), so every call
 * below must resolve against the installed libedhoc (issue #14, item 8:
 * "a program linked with pkg-config --libs edhoc using every installed
 * header's functions").
 *
 * It includes every installed header and uses at least one function of
 * each, as an application would: an EDHOC handshake between two sessions
 * with credentials made through the library, the OSCORE contexts both sides derive from
 * it, a request protected by one and read by the other, the messages
 * written to and read back from a pcap capture, a state database, and the
 * codecs. tests/test_install.sh checks that the list of headers below is
 * the installed set.
 *
 * Usage: test_link_installed SCRATCH_DIR
 */
#include <edhoc/blockwise.h>
#include <edhoc/capture.h>
#include <edhoc/cbor.h>
#include <edhoc/coap_msg.h>
#include <edhoc/cred.h>
#include <edhoc/crypto.h>
#include <edhoc/edhoc.h>
#include <edhoc/netacct.h>
#include <edhoc/oscore.h>
#include <edhoc/state.h>
#include <edhoc/version.h>

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* edhoc/crypto.h */
static const struct edhoc_crypto_ops *check_crypto(void)
{
    const struct edhoc_crypto_ops *ops = edhoc_crypto_openssl();
    CHECK(ops != NULL);
    CHECK(edhoc_crypto_hash_len(EDHOC_COSE_SHA256) == 32);
    CHECK(strcmp(edhoc_crypto_curve_name(EDHOC_COSE_CRV_P256), "P-256") == 0);
    return ops;
}

/* edhoc/version.h: the library in use is the one the program was compiled
 * against (same installed tree), and the macros agree with each other. */
static void check_version(void)
{
    char parts[32];
    snprintf(parts, sizeof parts, "%d.%d.%d", EDHOC_VERSION_MAJOR, EDHOC_VERSION_MINOR,
             EDHOC_VERSION_PATCH);
    CHECK(strcmp(parts, EDHOC_VERSION_STRING) == 0);
    CHECK(strcmp(edhoc_version(), EDHOC_VERSION_STRING) == 0);
    CHECK(EDHOC_VERSION_NUMBER ==
          EDHOC_VERSION_MAJOR * 1000000L + EDHOC_VERSION_MINOR * 1000L + EDHOC_VERSION_PATCH);
}

/* edhoc/cbor.h: 1000 is 19 03 e8 (RFC 8949 Appendix A). */
static void check_cbor(void)
{
    uint8_t buf[8];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, buf, sizeof buf);
    edhoc_cbor_put_uint(&w, 1000);
    CHECK(edhoc_cbor_writer_finish(&w) == 3);
    CHECK(memcmp(buf, "\x19\x03\xe8", 3) == 0);
}

/* edhoc/blockwise.h: RFC 7959 Section 2.2, SZX 2 is 64 bytes. */
static void check_blockwise(void)
{
    CHECK(edhoc_block_szx(64) == 2);
    struct edhoc_block b = {.num = 5, .more = true, .szx = 2}, back;
    uint8_t v[3];
    size_t n = edhoc_block_encode(&b, v);
    CHECK(n == 1);
    CHECK(edhoc_block_parse(v, n, &back) == 0);
    CHECK(back.num == 5 && back.more && back.szx == 2);
}

/* edhoc/netacct.h */
static void check_netacct(void)
{
    struct edhoc_netacct_link link = edhoc_netacct_link_mtu(1280, 0);
    char text[256];
    CHECK(edhoc_netacct_link_describe(&link, text, sizeof text) > 0);
}

/* edhoc/cred.h, edhoc/edhoc.h: method 3, suite 2, fresh P-256 static DH
 * keys on both sides in CCS, each side resolving the other's ID_CRED
 * through a store holding both. */
static struct edhoc_cred_store trust;

static int resolve(void *ctx, const uint8_t *id_cred, size_t len, const struct edhoc_cred **cred)
{
    struct edhoc_cred *out = ctx;
    int rc = edhoc_cred_store_resolve(&trust, id_cred, len, out);
    *cred = out;
    return rc;
}

/* A fresh P-256 static DH key and its CCS with a one-byte kid. */
static void make_ccs(uint8_t kid, const char *subject, struct edhoc_cred *cred,
                     struct edhoc_key *key)
{
    uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
    size_t pub_len = sizeof pub;
    CHECK(edhoc_key_generate(key, EDHOC_COSE_CRV_P256) == 0);
    CHECK(edhoc_key_public(key, pub, &pub_len) == 0);
    CHECK(edhoc_cred_build_ccs(cred, EDHOC_COSE_CRV_P256, pub, pub_len, &kid, 1, subject) == 0);
}

struct handshake {
    uint8_t m1[EDHOC_MAX_MESSAGE], m2[EDHOC_MAX_MESSAGE], m3[EDHOC_MAX_MESSAGE];
    int n1, n2, n3;
    struct edhoc_oscore_params oscore_i, oscore_r;
};

static void check_handshake(const struct edhoc_crypto_ops *ops, struct handshake *h)
{
    static struct edhoc_cred cred_i, cred_r, peer_of_i, peer_of_r;
    static struct edhoc_key key_i, key_r;
    static struct edhoc_received rx;
    static const int suites[] = {2};

    /* The installed library holds no demo credential (their keys are
     * published): each side makes its own, as an application does. */
    make_ccs(0x0b, "initiator", &cred_i, &key_i);
    make_ccs(0x0c, "responder", &cred_r, &key_r);
    edhoc_cred_store_init(&trust);
    CHECK(edhoc_cred_store_add_cred(&trust, &cred_i) == 0);
    CHECK(edhoc_cred_store_add_cred(&trust, &cred_r) == 0);

    struct edhoc_config ci = {
        .ops = ops, .method = 3, .suites = suites, .n_suites = 1, .cred = &cred_i, .key = &key_i};
    struct edhoc_config cr = {
        .ops = ops, .suites = suites, .n_suites = 1, .cred = &cred_r, .key = &key_r};
    struct edhoc_session si, sr;
    CHECK(edhoc_session_init(&si, EDHOC_INITIATOR, &ci) == 0);
    CHECK(edhoc_session_init(&sr, EDHOC_RESPONDER, &cr) == 0);
    CHECK(edhoc_session_set_conn_id(&si, (const uint8_t *)"\x37", 1) == 0);
    CHECK(edhoc_session_set_conn_id(&sr, (const uint8_t *)"\x27", 1) == 0);

    h->n1 = edhoc_initiator_prepare_message_1(&si, h->m1, sizeof h->m1);
    CHECK(h->n1 > 0);
    CHECK(edhoc_responder_process_message_1(&sr, h->m1, (size_t)h->n1, &rx) == 0);
    h->n2 = edhoc_responder_prepare_message_2(&sr, h->m2, sizeof h->m2);
    CHECK(h->n2 > 0);
    int rc = edhoc_initiator_handle_message_2(&si, h->m2, (size_t)h->n2, &rx, resolve, &peer_of_i);
    if (rc)
        fprintf(stderr, "message_2: %s\n", edhoc_strerror(rc));
    CHECK(rc == 0);
    h->n3 = edhoc_initiator_prepare_message_3(&si, h->m3, sizeof h->m3);
    CHECK(h->n3 > 0);
    rc = edhoc_responder_handle_message_3(&sr, h->m3, (size_t)h->n3, &rx, resolve, &peer_of_r);
    if (rc)
        fprintf(stderr, "message_3: %s\n", edhoc_strerror(rc));
    CHECK(rc == 0);
    CHECK(edhoc_session_state(&si) == EDHOC_STATE_COMPLETED);
    CHECK(edhoc_session_state(&sr) == EDHOC_STATE_COMPLETED);
    CHECK(edhoc_cred_equal(&peer_of_i, &cred_r));
    CHECK(edhoc_cred_equal(&peer_of_r, &cred_i));

    /* RFC 9528 Appendix A.1: both sides derive the same master secret. */
    CHECK(edhoc_session_oscore(&si, &h->oscore_i) == 0);
    CHECK(edhoc_session_oscore(&sr, &h->oscore_r) == 0);
    CHECK(h->oscore_i.master_secret_len > 0 &&
          h->oscore_i.master_secret_len == h->oscore_r.master_secret_len &&
          memcmp(h->oscore_i.master_secret, h->oscore_r.master_secret,
                 h->oscore_i.master_secret_len) == 0);
    edhoc_session_wipe(&si);
    edhoc_session_wipe(&sr);
}

static void oscore_from(struct oscore_context *c, const struct edhoc_crypto_ops *ops,
                        const struct edhoc_oscore_params *p)
{
    CHECK(oscore_context_init_edhoc(c, ops, p->master_secret, p->master_secret_len, p->master_salt,
                                    p->master_salt_len, p->sender_id, p->sender_id_len,
                                    p->recipient_id, p->recipient_id_len, p->aead_alg,
                                    p->hash_alg) == 0);
}

/* edhoc/coap_msg.h, edhoc/oscore.h: GET /hello protected by the initiator,
 * read by the responder. */
static void check_oscore(const struct edhoc_crypto_ops *ops, const struct handshake *h)
{
    static struct oscore_context client, server;
    oscore_from(&client, ops, &h->oscore_i);
    oscore_from(&server, ops, &h->oscore_r);

    struct coap_msg req = {
        .type = COAP_TYPE_CON, .code = COAP_CODE_GET, .mid = 1, .token_len = 1, .token = {0x42}};
    CHECK(edhoc_coap_msg_add_option(&req, COAP_OPT_URI_PATH, (const uint8_t *)"hello", 5) == 0);
    uint8_t plain[64], prot[64 + OSCORE_MAX_OVERHEAD], inner[64 + OSCORE_MAX_OVERHEAD];
    long n = edhoc_coap_msg_encode(&req, plain, sizeof plain);
    CHECK(n > 0);

    struct oscore_binding bc, bs;
    long np = oscore_protect_request(&client, plain, (size_t)n, prot, sizeof prot, &bc);
    CHECK(np > 0);
    long ni = oscore_unprotect_request(&server, prot, (size_t)np, inner, sizeof inner, &bs);
    if (ni < 0)
        fprintf(stderr, "unprotect: %s\n", oscore_strerror((int)ni));
    CHECK(ni > 0);

    struct coap_msg got;
    CHECK(edhoc_coap_msg_parse(inner, (size_t)ni, &got) == 0);
    const struct coap_option *path = edhoc_coap_msg_find_option(&got, COAP_OPT_URI_PATH);
    CHECK(path && path->len == 5 && memcmp(path->value, "hello", 5) == 0);
    CHECK(strcmp(edhoc_coap_option_name(COAP_OPT_URI_PATH), "Uri-Path") == 0);
    oscore_context_wipe(&client);
    oscore_context_wipe(&server);
}

/* edhoc/capture.h: message_1 written to a pcap file through libpcap and
 * read back. */
static void check_capture(const char *dir, const struct handshake *h)
{
    char path[4096], err[256];
    snprintf(path, sizeof path, "%s/link.pcap", dir);
    struct sockaddr_in src = {
        .sin_family = AF_INET, .sin_port = htons(40000), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in dst = src;
    dst.sin_port = htons(5683);

    struct edhoc_capture *cap = edhoc_capture_open(path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    CHECK(cap != NULL);
    if (!cap) {
        fprintf(stderr, "capture: %s\n", err);
        return;
    }
    CHECK(edhoc_capture_datagram(cap, (const struct sockaddr *)&src, (const struct sockaddr *)&dst,
                                 h->m1, (size_t)h->n1, NULL) == 0);
    edhoc_capture_close(cap);

    struct edhoc_capture_reader *r = edhoc_capture_reader_open(path, err, sizeof err);
    CHECK(r != NULL);
    if (!r) {
        fprintf(stderr, "capture reader: %s\n", err);
        return;
    }
    const uint8_t *frame;
    size_t caplen, wire_len;
    struct timespec ts;
    CHECK(edhoc_capture_reader_next(r, &frame, &caplen, &wire_len, &ts) == 1);
    struct edhoc_capture_packet p;
    CHECK(edhoc_capture_packet_parse(edhoc_capture_reader_dlt(r), frame, caplen, wire_len, &p) ==
          0);
    CHECK(p.dst_port == 5683 && p.payload_len == (size_t)h->n1 &&
          memcmp(p.payload, h->m1, p.payload_len) == 0);
    edhoc_capture_reader_close(r);
}

/* edhoc/state.h: a new state database is empty. */
static void check_state(const char *dir)
{
    char path[4096], why[256];
    snprintf(path, sizeof path, "%s/state", dir);
    struct edhoc_state_db *db = NULL;
    int rc = edhoc_state_open(path, &db, why, sizeof why);
    if (rc)
        fprintf(stderr, "state: %s (%s)\n", edhoc_state_strerror(rc), why);
    CHECK(rc == 0);
    if (db) {
        CHECK(edhoc_state_count(db) == 0);
        edhoc_state_close(db);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    static struct handshake h;
    const struct edhoc_crypto_ops *ops = check_crypto();
    check_version();
    check_cbor();
    check_blockwise();
    check_netacct();
    check_handshake(ops, &h);
    check_oscore(ops, &h);
    check_capture(argv[1], &h);
    check_state(argv[1]);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("every installed header's functions work from the installed library\n");
    return 0;
}
