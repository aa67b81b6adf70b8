/*
 * OSCORE (RFC 8613) protect and unprotect: round trips for every AEAD,
 * key lengths, messages of any size up to OSCORE_MAX_MESSAGE (and CCM's
 * 2^16 - 1), buffer sizing, tampering (every flipped byte), Observe
 * notifications.
 */
#include <setjmp.h>
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
#include "vectors.h"

#include "oscore_test_common.h"

/* ---- round trips ---- */
static void round_trip(int aead, int hash, size_t payload_len)
{
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, aead, hash);
    uint8_t req[BUF], preq[BUF], out[BUF], resp[BUF], presp[BUF];
    size_t req_len = sample_request(req, payload_len);
    struct oscore_binding cb, sb;
    long n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &cb);
    assert_true(n > 0);
    /* Uri-Host stays readable, Uri-Path does not */
    assert_non_null(memmem(preq, (size_t)n, "example.com", 11));
    assert_null(memmem(preq, (size_t)n, "sensor", 6));
    long m = oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb);
    assert_int_equal(m, (long)req_len);
    assert_memory_equal(out, req, req_len);

    for (int with_piv = 0; with_piv < 2; with_piv++) {
        struct oscore_binding cb2 = cb, sb2 = sb;
        size_t resp_len = sample_response(resp, req + 20, payload_len, false, 0);
        long k = oscore_protect_response(&srv, &sb2, resp, resp_len, with_piv, presp, sizeof presp);
        assert_true(k > 0);
        long j = oscore_unprotect_response(&cli, &cb2, presp, (size_t)k, out, sizeof out);
        assert_int_equal(j, (long)resp_len);
        assert_memory_equal(out, resp, resp_len);
    }
    oscore_context_wipe(&cli);
    oscore_context_wipe(&srv);
}

static void test_round_trip_every_aead(void **state)
{
    (void)state;
    static const int aeads[] = {EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_AES_CCM_16_128_128,
                                EDHOC_COSE_A128GCM, EDHOC_COSE_A256GCM,
                                EDHOC_COSE_CHACHA20_POLY1305};
    static const int hashes[] = {EDHOC_COSE_SHA256, EDHOC_COSE_SHA384};
    static const size_t sizes[] = {0, 1, 100, 1000};
    for (size_t a = 0; a < 5; a++)
        for (size_t h = 0; h < 2; h++)
            for (size_t s = 0; s < 4; s++)
                round_trip(aeads[a], hashes[h], sizes[s]);
}

static void test_key_lengths(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    const uint8_t *p;
    make_pair(&cli, &srv, EDHOC_COSE_A256GCM, EDHOC_COSE_SHA384);
    assert_int_equal(oscore_context_sender_key(&cli, &p), 32);
    assert_int_equal(oscore_context_common_iv(&cli, &p), 12);
    make_pair(&cli, &srv, EDHOC_COSE_A128GCM, EDHOC_COSE_SHA256);
    assert_int_equal(oscore_context_sender_key(&cli, &p), 16);
    assert_int_equal(oscore_context_common_iv(&cli, &p), 12);
    /* SHA-384 derives other keys than SHA-256 from the same inputs */
    struct oscore_context c384, s384;
    make_pair(&c384, &s384, EDHOC_COSE_A128GCM, EDHOC_COSE_SHA384);
    const uint8_t *q;
    oscore_context_sender_key(&c384, &q);
    oscore_context_sender_key(&cli, &p);
    assert_memory_not_equal(p, q, 16);

    /* IDs longer than nonce length - 6 are refused */
    static const uint8_t ms[16] = {1};
    static const uint8_t id7[7] = {1, 2, 3, 4, 5, 6, 7};
    struct oscore_params prm = {.aead_alg = EDHOC_COSE_A128GCM,
                                .master_secret = ms,
                                .master_secret_len = 16,
                                .sender_id = id7,
                                .sender_id_len = 7,
                                .recipient_id = id7,
                                .recipient_id_len = 0};
    assert_int_equal(oscore_context_init(&cli, test_backend(), &prm), OSCORE_ERR_INVALID);
    prm.aead_alg = EDHOC_COSE_AES_CCM_16_64_128;
    assert_int_equal(oscore_context_init(&cli, test_backend(), &prm), 0);
    prm.aead_alg = 12345;
    assert_int_equal(oscore_context_init(&cli, test_backend(), &prm), OSCORE_ERR_UNSUPPORTED);
    prm.aead_alg = 10;
    prm.hkdf_alg = -45;
    assert_int_equal(oscore_context_init(&cli, test_backend(), &prm), OSCORE_ERR_UNSUPPORTED);
    prm.hkdf_alg = 0;
    prm.recipient_id_len = 7; /* same as sender ID */
    assert_int_equal(oscore_context_init(&cli, test_backend(), &prm), OSCORE_ERR_INVALID);
    prm.recipient_id_len = 0;
    prm.replay_window = 65;
    assert_int_equal(oscore_context_init(&cli, test_backend(), &prm), OSCORE_ERR_INVALID);
}

/* ---- messages of any size up to OSCORE_MAX_MESSAGE ---- */
static const int every_aead[] = {EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_AES_CCM_16_128_128,
                                 EDHOC_COSE_A128GCM, EDHOC_COSE_A256GCM,
                                 EDHOC_COSE_CHACHA20_POLY1305};

#define N_AEADS (sizeof every_aead / sizeof every_aead[0])

static uint8_t *xmalloc(size_t n)
{
    uint8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    return p;
}

/* A whole CoAP message in a heap buffer of its own size. request: CON, inner
 * code (POST, or FETCH when it registers an observation), token a1b2,
 * Uri-Host (Class U, stays outer), Uri-Path "big", Content-Format.
 * Response: ACK 2.05 with Content-Format. obs_len < 0: no Observe, else an
 * Observe of obs_len bytes of obs_value. The payload is a pattern that no
 * shift or truncation maps onto itself. */
static uint8_t *big_message(bool request, size_t payload_len, int obs_len, uint32_t obs_value,
                            size_t *len)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = request ? COAP_TYPE_CON : COAP_TYPE_ACK;
    m.code = request ? (obs_len >= 0 ? COAP_CODE_FETCH : COAP_CODE_POST) : COAP_CODE_CONTENT;
    m.mid = 0x1234;
    m.token_len = 2;
    m.token[0] = 0xa1;
    m.token[1] = 0xb2;
    uint8_t cf[1] = {42};
    uint8_t ov[4];
    edhoc_coap_uint_encode(obs_value, ov);
    if (request) {
        assert_int_equal(
            edhoc_coap_msg_add_option(&m, COAP_OPT_URI_HOST, (const uint8_t *)"example.com", 11),
            0);
        assert_int_equal(
            edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)"big", 3), 0);
    }
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cf, 1), 0);
    if (obs_len >= 0)
        assert_int_equal(
            edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, ov + 4 - obs_len, (size_t)obs_len), 0);
    uint8_t *payload = xmalloc(payload_len);
    for (size_t i = 0; i < payload_len; i++)
        payload[i] = (uint8_t)(i * 31 + 7 + (i >> 8) * 13 + (i >> 16));
    m.payload = payload_len ? payload : NULL;
    m.payload_len = payload_len;
    size_t cap = payload_len + 64;
    uint8_t *out = xmalloc(cap);
    long n = edhoc_coap_msg_encode(&m, out, cap);
    assert_true(n > 0);
    free(payload);
    *len = (size_t)n;
    return out;
}

/* The plaintext OSCORE seals for a message without Proxy-Uri: the code,
 * every option but the Class U ones (Section 4.1), payload marker and
 * payload (Section 5.3). */
static size_t plaintext_len(const uint8_t *msg, size_t len)
{
    struct coap_msg m;
    assert_int_equal(edhoc_coap_msg_parse(msg, len, &m), 0);
    struct coap_option inner[COAP_MSG_MAX_OPTIONS];
    size_t n = 0;
    for (size_t i = 0; i < m.option_count; i++) {
        uint16_t num = m.options[i].number;
        if (num != COAP_OPT_URI_HOST && num != COAP_OPT_URI_PORT && num != COAP_OPT_PROXY_SCHEME &&
            num != COAP_OPT_PROXY_URI)
            inner[n++] = m.options[i];
    }
    long body = edhoc_coap_msg_encode_body(inner, n, m.payload, m.payload_len, NULL, 0);
    assert_true(body >= 0);
    return 1 + (size_t)body;
}

/* The payload length that makes the plaintext of big_message(request, ..)
 * exactly pt bytes long. */
static size_t payload_for_plaintext(bool request, size_t pt)
{
    size_t len;
    uint8_t *msg = big_message(request, 0, -1, 0, &len);
    size_t empty = plaintext_len(msg, len);
    free(msg);
    assert_true(pt > empty + 1);
    size_t payload = pt - empty - 1; /* the payload marker */
    msg = big_message(request, payload, -1, 0, &len);
    assert_int_equal(plaintext_len(msg, len), pt);
    free(msg);
    return payload;
}

static size_t piv_len_of(const uint8_t *msg, size_t len)
{
    struct oscore_option opt;
    assert_int_equal(oscore_message_option(msg, len, &opt), 0);
    return opt.piv_len;
}

/* Protect msg as a request (out sized by the OSCORE_MAX_OVERHEAD rule),
 * unprotect it with cap = its protected length (the header's "cap = len
 * always suffices") and require the original bytes back. */
static void request_round_trip(struct oscore_context *cli, struct oscore_context *srv,
                               const uint8_t *req, size_t req_len, struct oscore_binding *cb,
                               struct oscore_binding *sb)
{
    size_t cap = req_len + OSCORE_MAX_OVERHEAD;
    uint8_t *prot = xmalloc(cap), *back;
    long n = oscore_protect_request(cli, req, req_len, prot, cap, cb);
    assert_true(n > 0);
    /* oscore.h: protecting len bytes gives at most len + OSCORE_MAX_OVERHEAD. */
    assert_true((size_t)n <= req_len + OSCORE_MAX_OVERHEAD);
    /* Section 6.1: a request always carries its Partial IV. */
    assert_true(piv_len_of(prot, (size_t)n) > 0);
    back = xmalloc((size_t)n);
    long k = oscore_unprotect_request(srv, prot, (size_t)n, back, (size_t)n, sb);
    assert_int_equal(k, (long)req_len);
    assert_memory_equal(back, req, req_len);
    free(prot);
    free(back);
}

/* The response counterpart. want: what the client must get back (the
 * response itself, or for a notification the response with an empty
 * Observe). Returns the Partial IV length the response carried. */
static size_t response_round_trip(struct oscore_context *cli, struct oscore_context *srv,
                                  struct oscore_binding *cb, struct oscore_binding *sb,
                                  const uint8_t *resp, size_t resp_len, bool with_piv,
                                  const uint8_t *want, size_t want_len)
{
    size_t cap = resp_len + OSCORE_MAX_OVERHEAD;
    uint8_t *prot = xmalloc(cap), *back;
    long n = oscore_protect_response(srv, sb, resp, resp_len, with_piv, prot, cap);
    assert_true(n > 0);
    assert_true((size_t)n <= resp_len + OSCORE_MAX_OVERHEAD);
    size_t piv_len = piv_len_of(prot, (size_t)n);
    back = xmalloc((size_t)n);
    long k = oscore_unprotect_response(cli, cb, prot, (size_t)n, back, (size_t)n);
    assert_int_equal(k, (long)want_len);
    assert_memory_equal(back, want, want_len);
    free(prot);
    free(back);
    return piv_len;
}

/* Every exchange shape at one payload size: a request answered without and
 * with a Partial IV, an Observe registration and two notifications. */
static void exchanges_at_size(int aead, size_t payload_len)
{
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, aead, EDHOC_COSE_SHA256);
    struct oscore_binding cb, sb;
    size_t req_len, resp_len;
    uint8_t *req = big_message(true, payload_len, -1, 0, &req_len);
    uint8_t *resp = big_message(false, payload_len, -1, 0, &resp_len);

    /* Section 5.2 / C.7: a response may reuse the request's nonce (no
     * Partial IV) ... */
    request_round_trip(&cli, &srv, req, req_len, &cb, &sb);
    assert_int_equal(
        response_round_trip(&cli, &srv, &cb, &sb, resp, resp_len, false, resp, resp_len), 0);
    /* ... or carry its own Partial IV (C.8). */
    request_round_trip(&cli, &srv, req, req_len, &cb, &sb);
    assert_true(response_round_trip(&cli, &srv, &cb, &sb, resp, resp_len, true, resp, resp_len) >
                0);

    /* Observe (Section 4.1.3.5): the registration's Observe 0 is inner and
     * outer, so the request comes back whole. */
    size_t reg_len;
    uint8_t *reg = big_message(true, payload_len, 0, 0, &reg_len);
    request_round_trip(&cli, &srv, reg, reg_len, &cb, &sb);
    /* 4.1.3.5.2: a notification's inner Observe is empty, the value rides
     * outside only, so the client gets the notification with an empty
     * Observe. The first may reuse the request nonce; the next one cannot
     * (Section 7.4.1) and gets a Partial IV though asked for none. */
    size_t n1_len, n2_len, want_len;
    uint8_t *n1 = big_message(false, payload_len, 1, 2, &n1_len);
    uint8_t *n2 = big_message(false, payload_len, 2, 0x0301, &n2_len);
    uint8_t *want = big_message(false, payload_len, 0, 0, &want_len);
    assert_int_equal(response_round_trip(&cli, &srv, &cb, &sb, n1, n1_len, false, want, want_len),
                     0);
    assert_true(response_round_trip(&cli, &srv, &cb, &sb, n2, n2_len, false, want, want_len) > 0);
    free(reg);
    free(n1);
    free(n2);
    free(want);
    free(req);
    free(resp);
    oscore_context_wipe(&cli);
    oscore_context_wipe(&srv);
}

/* The old 2048-byte cap is gone: payloads around the stack fast path and
 * well above it round-trip for every AEAD. 65536 bytes exceed what
 * AES-CCM with a 13-byte nonce can seal (RFC 3610 Section 2: l(m) < 2^16),
 * so there CCM must refuse cleanly instead of failing in the backend. */
static void test_any_size_round_trip(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2040, 2047, 2048, 2049, 3000, 20000, 65536};
    for (size_t a = 0; a < N_AEADS; a++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            bool ccm = every_aead[a] == EDHOC_COSE_AES_CCM_16_64_128 ||
                       every_aead[a] == EDHOC_COSE_AES_CCM_16_128_128;
            if (!(ccm && sizes[s] == 65536)) {
                exchanges_at_size(every_aead[a], sizes[s]);
                continue;
            }
            struct oscore_context cli, srv;
            make_pair(&cli, &srv, every_aead[a], EDHOC_COSE_SHA256);
            /* oscore.h: above oscore_context_max_plaintext() (65535 for
             * CCM) protect returns OSCORE_ERR_TOO_LARGE and consumes no
             * sequence number. */
            assert_int_equal(oscore_context_max_plaintext(&cli), 65535);
            size_t len;
            uint8_t *req = big_message(true, sizes[s], -1, 0, &len);
            uint8_t *out = xmalloc(len + OSCORE_MAX_OVERHEAD);
            struct oscore_binding b;
            assert_int_equal(
                oscore_protect_request(&cli, req, len, out, len + OSCORE_MAX_OVERHEAD, &b),
                OSCORE_ERR_TOO_LARGE);
            assert_int_equal(oscore_context_ssn(&cli), 0);
            free(req);
            free(out);
        }
    }
}

/* Exact plaintext sizes at the edges: the stack fast path
 * (OSCORE_MAX_PLAINTEXT bytes, one byte more goes to the heap), CCM's
 * 2^16 - 1 (RFC 3610 Section 2), and OSCORE_MAX_MESSAGE for the others. */
static void test_plaintext_size_edges(void **state)
{
    (void)state;
    for (size_t a = 0; a < N_AEADS; a++) {
        struct oscore_context probe, unused;
        make_pair(&probe, &unused, every_aead[a], EDHOC_COSE_SHA256);
        size_t max = oscore_context_max_plaintext(&probe);
        const size_t edges[] = {OSCORE_MAX_PLAINTEXT - 1, OSCORE_MAX_PLAINTEXT,
                                OSCORE_MAX_PLAINTEXT + 1, max};
        for (size_t e = 0; e < 4; e++) {
            struct oscore_context cli, srv;
            struct oscore_binding cb, sb;
            make_pair(&cli, &srv, every_aead[a], EDHOC_COSE_SHA256);
            size_t req_len, resp_len;
            uint8_t *req =
                big_message(true, payload_for_plaintext(true, edges[e]), -1, 0, &req_len);
            uint8_t *resp =
                big_message(false, payload_for_plaintext(false, edges[e]), -1, 0, &resp_len);
            request_round_trip(&cli, &srv, req, req_len, &cb, &sb);
            response_round_trip(&cli, &srv, &cb, &sb, resp, resp_len, e & 1, resp, resp_len);
            free(req);
            free(resp);
        }

        /* One byte above the limit: refused on both sides before anything
         * is allocated or decrypted (oscore.h, OSCORE_MAX_MESSAGE and
         * oscore_context_max_plaintext()). */
        struct oscore_context cli, srv;
        struct oscore_binding cb, sb;
        make_pair(&cli, &srv, every_aead[a], EDHOC_COSE_SHA256);
        size_t req_len;
        uint8_t *req = big_message(true, payload_for_plaintext(true, max + 1), -1, 0, &req_len);
        size_t cap = req_len + OSCORE_MAX_OVERHEAD;
        uint8_t *prot = xmalloc(cap + 1), *out = xmalloc(cap + 1);
        assert_int_equal(oscore_protect_request(&cli, req, req_len, prot, cap, &cb),
                         OSCORE_ERR_TOO_LARGE);
        /* The SSN is consumed only on success (oscore_protect_request). */
        assert_int_equal(oscore_context_ssn(&cli), 0);
        free(req);
        /* A genuine request at the limit, and a copy with one byte more of
         * ciphertext: the copy's plaintext would be max + 1 bytes. */
        req = big_message(true, payload_for_plaintext(true, max), -1, 0, &req_len);
        long n = oscore_protect_request(&cli, req, req_len, prot, cap, &cb);
        assert_true(n > 0);
        uint8_t *longer = xmalloc((size_t)n + 1);
        memcpy(longer, prot, (size_t)n);
        longer[n] = 0;
        assert_int_equal(oscore_unprotect_request(&srv, longer, (size_t)n + 1, out, cap, &sb),
                         OSCORE_ERR_TOO_LARGE);
        /* Section 8.2: the replay window moves only for an accepted request,
         * so the genuine one is still fresh. */
        assert_int_equal(oscore_unprotect_request(&srv, prot, (size_t)n, out, cap, &sb),
                         (long)req_len);
        assert_memory_equal(out, req, req_len);
        /* The same ciphertext too long for the response side. */
        size_t resp_len;
        uint8_t *resp = big_message(false, payload_for_plaintext(false, max), -1, 0, &resp_len);
        long k = oscore_protect_response(&srv, &sb, resp, resp_len, true, prot, cap);
        assert_true(k > 0);
        memcpy(longer, prot, (size_t)k);
        longer[k] = 0;
        struct oscore_binding cb2 = cb;
        assert_int_equal(oscore_unprotect_response(&cli, &cb2, longer, (size_t)k + 1, out, cap),
                         OSCORE_ERR_TOO_LARGE);
        assert_int_equal(oscore_unprotect_response(&cli, &cb, prot, (size_t)k, out, cap),
                         (long)resp_len);
        assert_memory_equal(out, resp, resp_len);
        free(resp);
        free(req);
        free(longer);
        free(prot);
        free(out);
        oscore_context_wipe(&cli);
        oscore_context_wipe(&srv);
    }
    /* The documented bound covers the largest body block-wise reassembles. */
    assert_true(OSCORE_MAX_MESSAGE > OSCORE_MAX_BODY);
    assert_int_equal(OSCORE_MAX_BODY, 1u << 20);
}

/* Output buffers sized by the header's rules are enough, and the
 * cheap early checks answer OSCORE_ERR_BUFFER for a large message. */
static void test_buffer_rules(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    struct oscore_binding cb, sb;
    make_pair(&cli, &srv, EDHOC_COSE_A128GCM, EDHOC_COSE_SHA256);

    /* A request that grows as much as it can: Observe in both parts,
     * Proxy-Uri split into 27 inner options of 13 bytes each (every one
     * needing an extended length), options whose deltas grow when the
     * outer and inner ones are encoded apart. */
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_GET;
    m.mid = 1;
    m.token_len = 8;
    char uri[600] = "coap://example.com";
    for (int i = 0; i < 20; i++)
        snprintf(uri + strlen(uri), sizeof uri - strlen(uri), "/seg%010d", i);
    for (int i = 0; i < 7; i++)
        snprintf(uri + strlen(uri), sizeof uri - strlen(uri), "%cq%012d", i ? '&' : '?', i);
    static const uint8_t obs[3] = {1, 2, 3};
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_HOST, (const uint8_t *)"h", 1), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, obs, 3), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PORT, obs, 2), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_MAX_AGE, obs, 1), 0);
    assert_int_equal(
        edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_URI, (const uint8_t *)uri, strlen(uri)), 0);
    assert_int_equal(
        edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_SCHEME, (const uint8_t *)"coap", 4), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, 2000, obs, 1), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, 3000, obs, 1), 0);
    uint8_t req[BUF], prot[BUF], out[BUF];
    long len = edhoc_coap_msg_encode(&m, req, sizeof req);
    assert_true(len > 0);
    long n = oscore_protect_request(&cli, req, (size_t)len, prot, sizeof prot, &cb);
    assert_true(n > 0);
    printf("# protect grew a %ld-byte request by %ld bytes (OSCORE_MAX_OVERHEAD %d)\n", len,
           n - len, OSCORE_MAX_OVERHEAD);
    assert_true(n - len <= OSCORE_MAX_OVERHEAD);
    /* unprotect never needs more than the protected length */
    long k = oscore_unprotect_request(&srv, prot, (size_t)n, out, (size_t)n, &sb);
    assert_true(k > 0 && k <= n);

    /* A notification's Observe stays outside only (4.1.3.5.2), so even a
     * 4-byte value (a counter past 2^24 not wrapped) is still protected
     * within the bound. */
    size_t nl;
    uint8_t *note = big_message(false, 10, 4, 0x01020304, &nl);
    k = oscore_protect_response(&srv, &sb, note, nl, true, prot, sizeof prot);
    assert_true(k > 0 && (size_t)k <= nl + OSCORE_MAX_OVERHEAD);
    free(note);

    /* RFC 7641 Section 2: Observe is 0-3 bytes; a request's longer one is
     * refused rather than copied into both parts. */
    static const uint8_t obs4[4] = {1, 2, 3, 4};
    size_t rl;
    uint8_t *r = big_message(true, 0, -1, 0, &rl);
    assert_int_equal(edhoc_coap_msg_parse(r, rl, &m), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, obs4, 4), 0);
    len = edhoc_coap_msg_encode(&m, req, sizeof req);
    uint64_t ssn = oscore_context_ssn(&cli);
    assert_int_equal(oscore_protect_request(&cli, req, (size_t)len, prot, sizeof prot, &cb),
                     OSCORE_ERR_INVALID);
    assert_int_equal(oscore_context_ssn(&cli), ssn);
    free(r);

    /* A 20000-byte message and a too small out buffer: OSCORE_ERR_BUFFER
     * (the heap path checks the room before allocating). */
    uint8_t *big = big_message(true, 20000, -1, 0, &rl);
    assert_int_equal(oscore_protect_request(&cli, big, rl, prot, sizeof prot, &cb),
                     OSCORE_ERR_BUFFER);
    assert_int_equal(oscore_context_ssn(&cli), ssn);
    uint8_t *bp = xmalloc(rl + OSCORE_MAX_OVERHEAD);
    n = oscore_protect_request(&cli, big, rl, bp, rl + OSCORE_MAX_OVERHEAD, &cb);
    assert_true(n > 0);
    /* the server's buffer too small for the unprotected request */
    assert_int_equal(oscore_unprotect_request(&srv, bp, (size_t)n, out, sizeof out, &sb),
                     OSCORE_ERR_BUFFER);
    /* ... and the request is still fresh for a retry with room */
    uint8_t *bo = xmalloc((size_t)n);
    assert_int_equal(oscore_unprotect_request(&srv, bp, (size_t)n, bo, (size_t)n, &sb), (long)rl);
    assert_memory_equal(bo, big, rl);
    free(big);
    free(bp);
    free(bo);
    assert_string_equal(oscore_strerror(OSCORE_ERR_NOMEM),
                        "out of memory for the message plaintext");
}

/* ---- tampering ---- */
static void test_every_flipped_byte_fails(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    uint8_t req[BUF], preq[BUF], bad[BUF], out[BUF], resp[BUF], presp[BUF];
    size_t req_len = sample_request(req, 20);
    struct oscore_binding cb, sb;
    long n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &cb);
    assert_true(n > 0);
    /* Class U, not protected by design: header (but the version), token,
     * and the Uri-Host option (its header byte at 6, value at 7..17). */
    size_t uri_host_end = 7 + 11;
    for (size_t i = 0; i < (size_t)n; i++) {
        memcpy(bad, preq, (size_t)n);
        bad[i] ^= 0x5a;
        struct oscore_binding b2;
        long m = oscore_unprotect_request(&srv, bad, (size_t)n, out, sizeof out, &b2);
        if (m < 0)
            continue;
        if (i == 0 || i == 6 || i >= uri_host_end)
            fail_msg("request with byte %zu flipped was accepted", i);
        /* the protected parts (code, Uri-Path, Uri-Query, payload) are intact */
        struct coap_msg orig, got;
        assert_int_equal(edhoc_coap_msg_parse(req, req_len, &orig), 0);
        assert_int_equal(edhoc_coap_msg_parse(out, (size_t)m, &got), 0);
        assert_int_equal(got.code, orig.code);
        assert_int_equal(got.option_count, orig.option_count);
        for (size_t j = 0; j < orig.option_count; j++) {
            if (orig.options[j].number == COAP_OPT_URI_HOST)
                continue;
            assert_int_equal(got.options[j].len, orig.options[j].len);
            assert_memory_equal(got.options[j].value, orig.options[j].value, orig.options[j].len);
        }
        assert_int_equal(got.payload_len, orig.payload_len);
        assert_memory_equal(got.payload, orig.payload, orig.payload_len);
        /* accepted once: start over so the replay window does not interfere */
        make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    }
    /* the untouched request still verifies (no failure changed state) */
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &cb);
    assert_int_equal(oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb),
                     (long)req_len);

    /* responses */
    size_t resp_len = sample_response(resp, (const uint8_t *)"21.5 C", 6, false, 0);
    long k = oscore_protect_response(&srv, &sb, resp, resp_len, true, presp, sizeof presp);
    assert_true(k > 0);
    for (size_t i = 0; i < (size_t)k; i++) {
        memcpy(bad, presp, (size_t)k);
        bad[i] ^= 0x5a;
        struct oscore_binding b2 = cb;
        long m = oscore_unprotect_response(&cli, &b2, bad, (size_t)k, out, sizeof out);
        /* a response has no Class U options: only MID / outer code / token
         * (bytes 1..5) are unprotected */
        if (i == 0 || i >= 6)
            assert_true(m < 0);
    }
    struct oscore_binding b2 = cb;
    assert_int_equal(oscore_unprotect_response(&cli, &b2, presp, (size_t)k, out, sizeof out),
                     (long)resp_len);
    /* a response bound to another request does not verify */
    struct oscore_binding other;
    n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &other);
    assert_int_equal(oscore_unprotect_response(&cli, &other, presp, (size_t)k, out, sizeof out),
                     OSCORE_ERR_DECRYPT);
}

/* ---- Observe ---- */
static void test_observe_notifications(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    uint8_t req[BUF], preq[BUF], out[BUF], resp[BUF], note[6][BUF];
    long nlen[6];
    struct coap_msg m;
    size_t req_len = sample_request(req, 0);
    assert_int_equal(edhoc_coap_msg_parse(req, req_len, &m), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, NULL, 0), 0); /* register */
    uint8_t tmp[BUF];
    req_len = (size_t)edhoc_coap_msg_encode(&m, tmp, sizeof tmp); /* m points into req */
    memcpy(req, tmp, req_len);
    struct oscore_binding cb, sb;
    long n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &cb);
    assert_true(n > 0);
    assert_int_equal(preq[1], COAP_CODE_FETCH);
    assert_int_equal(oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb),
                     (long)req_len);
    assert_memory_equal(out, req, req_len);

    /* first notification without Partial IV, then five with */
    for (int i = 0; i < 6; i++) {
        size_t rl = sample_response(resp, (const uint8_t *)"20", 2, true, (uint32_t)(i + 2));
        nlen[i] = oscore_protect_response(&srv, &sb, resp, rl, false, note[i], BUF);
        assert_true(nlen[i] > 0);
        assert_int_equal(note[i][1], COAP_CODE_CONTENT);
        struct oscore_option opt;
        assert_int_equal(oscore_message_option(note[i], (size_t)nlen[i], &opt), 0);
        /* only the first may reuse the request nonce */
        assert_int_equal(opt.piv_len == 0, i == 0);
        /* outer Observe carries the value */
        struct coap_msg om;
        assert_int_equal(edhoc_coap_msg_parse(note[i], (size_t)nlen[i], &om), 0);
        const struct coap_option *obs = edhoc_coap_msg_find_option(&om, COAP_OPT_OBSERVE);
        assert_non_null(obs);
        uint32_t v;
        assert_int_equal(edhoc_coap_option_uint(obs, &v), 0);
        assert_int_equal(v, (uint32_t)(i + 2));
    }
    /* in order, with one out of order (older -> refused) */
    assert_true(oscore_unprotect_response(&cli, &cb, note[0], (size_t)nlen[0], out, sizeof out) >
                0);
    /* the inner Observe of a notification is empty */
    struct coap_msg im;
    assert_int_equal(edhoc_coap_msg_parse(out,
                                          (size_t)oscore_unprotect_response(
                                              &cli, &cb, note[2], (size_t)nlen[2], out, sizeof out),
                                          &im),
                     0);
    assert_non_null(edhoc_coap_msg_find_option(&im, COAP_OPT_OBSERVE));
    assert_int_equal(edhoc_coap_msg_find_option(&im, COAP_OPT_OBSERVE)->len, 0);
    assert_int_equal(
        oscore_unprotect_response(&cli, &cb, note[1], (size_t)nlen[1], out, sizeof out),
        OSCORE_ERR_REPLAY);
    assert_int_equal(
        oscore_unprotect_response(&cli, &cb, note[2], (size_t)nlen[2], out, sizeof out),
        OSCORE_ERR_REPLAY);
    assert_int_equal(
        oscore_unprotect_response(&cli, &cb, note[0], (size_t)nlen[0], out, sizeof out),
        OSCORE_ERR_REPLAY);
    assert_true(oscore_unprotect_response(&cli, &cb, note[4], (size_t)nlen[4], out, sizeof out) >
                0);
    assert_true(oscore_unprotect_response(&cli, &cb, note[5], (size_t)nlen[5], out, sizeof out) >
                0);
    assert_int_equal(cb.notification_number, 4);

    /* a notification for a request that did not observe is refused */
    struct oscore_binding plain_b, plain_sb;
    size_t pl = sample_request(req, 0);
    n = oscore_protect_request(&cli, req, pl, preq, sizeof preq, &plain_b);
    assert_true(oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &plain_sb) > 0);
    size_t rl = sample_response(resp, (const uint8_t *)"20", 2, true, 9);
    long k = oscore_protect_response(&srv, &plain_sb, resp, rl, true, note[0], BUF);
    assert_int_equal(oscore_unprotect_response(&cli, &plain_b, note[0], (size_t)k, out, sizeof out),
                     OSCORE_ERR_UNEXPECTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_aead),
        cmocka_unit_test(test_any_size_round_trip),
        cmocka_unit_test(test_plaintext_size_edges),
        cmocka_unit_test(test_buffer_rules),
        cmocka_unit_test(test_key_lengths),
        cmocka_unit_test(test_every_flipped_byte_fails),
        cmocka_unit_test(test_observe_notifications),
    };
    int failed = cmocka_run_group_tests_name("openssl", tests, setup, NULL);
    test_backend = edhoc_crypto_sodium;
    test_backend = edhoc_crypto_auto;
    return failed;
}
