/*
 * OSCORE (RFC 8613) Appendix B.2 in both roles: keys checked against the
 * C.3 vectors (with every backend), round trips, every refusal.
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

/* ---- Appendix B.2 ---- */

/* Library-internal (src/oscore/oscore_internal.h), reached through the
 * static library. */
long oscore_unprotect_response_b2(struct oscore_context *c, struct oscore_binding *b,
                                  const uint8_t *msg, size_t len, uint8_t *out, size_t cap,
                                  bool response1);

/* A random source that hands out queued bytes, so R1/R2/R3 are known. */
struct queued_rng {
    uint8_t bytes[64];
    size_t len, used;
};

static int queued_random(void *ctx, uint8_t *out, size_t len)
{
    struct queued_rng *q = ctx;
    if (q->len - q->used < len)
        return -1;
    memcpy(out, q->bytes + q->used, len);
    q->used += len;
    return 0;
}

static struct edhoc_crypto_ops queued_ops;

static struct queued_rng queue;

static const struct edhoc_crypto_ops *with_queue(const uint8_t *bytes, size_t len)
{
    queued_ops = *test_backend();
    queued_ops.random = queued_random;
    queued_ops.rng_ctx = &queue;
    memcpy(queue.bytes, bytes, len);
    queue.len = len;
    queue.used = 0;
    return &queued_ops;
}

/* The RFC 8613 C.3 inputs (master secret, salt, IDs) with idc as the
 * configured ID Context (NULL: none); client: sender "", recipient 01. */
static void b2_config(struct oscore_config *cfg, bool client, const uint8_t *idc, size_t idc_len)
{
    static const char text_client[] = "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                                      "master_salt,hex,\"9e7ca92223786340\"\n"
                                      "sender_id,hex,\"\"\nrecipient_id,hex,\"01\"\n"
                                      "rfc8613_b_2,bool,true\n";
    static const char text_server[] = "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                                      "master_salt,hex,\"9e7ca92223786340\"\n"
                                      "sender_id,hex,\"01\"\nrecipient_id,hex,\"\"\n"
                                      "rfc8613_b_2,bool,true\n";
    const char *t = client ? text_client : text_server;
    struct oscore_config_error err;
    assert_int_equal(oscore_config_parse(t, strlen(t), cfg, &err), 0);
    assert_true(cfg->rfc8613_b2);
    cfg->has_id_context = idc != NULL;
    cfg->id_context_len = idc_len;
    if (idc_len)
        memcpy(cfg->id_context, idc, idc_len);
}

static const uint8_t c3_idc[8] = {0x37, 0xcb, 0xf3, 0x21, 0x00, 0x17, 0xa2, 0xd3};

/* Known answers: the appendix gives no vectors, but RFC 8613 C.3 derives
 * keys for ID Context 0x37cbf3210017a2d3. With ID1 = 0x0017a2d3 and the
 * server's R2 = 0x37cbf321, ID2 = R2 || ID1 is exactly that ID Context, so
 * response #1 must open with the C.3.1 client context; with R3 =
 * 0x0017a2d3, ID3 = R2 || R3 is it again, so the client's third context
 * must have the C.3.1 keys and Common IV. Either order swapped would not. */
static void test_b2_known_answer(void **state)
{
    (void)state;
    struct oscore_config ccfg, scfg;
    b2_config(&ccfg, true, c3_idc + 4, 4);
    b2_config(&scfg, false, c3_idc + 4, 4);
    struct oscore_context cur, next, srv_next, c31;
    assert_int_equal(oscore_context_init_config(&cur, test_backend(), &ccfg), 0);

    /* Step 1 omitted: the server initiates (Figure 14, "in the latter case
     * step 1 is omitted"); request #1 carries ID1 as 'kid context'. */
    uint8_t req[BUF], preq1[BUF], resp1[BUF], out[BUF], preq2[BUF], resp2[BUF], plain[BUF];
    size_t req_len = sample_request(req, 0);
    struct oscore_binding b1, b2, sb;
    long n1 = oscore_protect_request(&cur, req, req_len, preq1, sizeof preq1, &b1);
    assert_true(n1 > 0);
    struct oscore_option o;
    assert_int_equal(oscore_message_option(preq1, (size_t)n1, &o), 0);
    assert_true(o.has_kid_context);
    assert_int_equal(o.kid_context_len, 4);
    assert_memory_equal(o.kid_context, c3_idc + 4, 4);

    struct oscore_b2_server srv;
    assert_int_equal(oscore_b2_server_init(&srv, 4), 0);
    long r1 = oscore_b2_server_request1(&srv, with_queue(c3_idc, 4), &scfg, preq1, (size_t)n1, 1000,
                                        resp1, sizeof resp1);
    assert_true(r1 > 0);
    /* "containing R2 wrapped in a CBOR bstr as 'kid context'": the flag
     * byte has only h set (Section 6.1), then s = 4 and R2. */
    assert_int_equal(oscore_message_option(resp1, (size_t)r1, &o), 0);
    assert_true(o.has_kid_context);
    assert_false(o.has_kid);
    assert_int_equal(o.piv_len, 0);
    assert_int_equal(o.kid_context_len, 4);
    assert_memory_equal(o.kid_context, c3_idc, 4);
    assert_true(oscore_b2_is_response1(resp1, (size_t)r1));
    assert_false(oscore_b2_is_response1(preq1, (size_t)n1));
    /* Protected with ID2 = R2 || ID1: the C.3.1 context opens it. */
    ctx_from_vector(&c31, "C.3.1");
    struct oscore_binding bc = b1;
    /* An ordinary unprotect names what it is (oscore.h) ... */
    assert_int_equal(oscore_unprotect_response(&c31, &bc, resp1, (size_t)r1, out, sizeof out),
                     OSCORE_ERR_KID_CONTEXT);
    /* ... and with its second context it verifies. */
    long k = oscore_unprotect_response_b2(&c31, &bc, resp1, (size_t)r1, out, sizeof out, true);
    assert_true(k > 0);
    assert_int_equal(out[1], COAP_CODE_UNAUTHORIZED);
    oscore_context_wipe(&c31);

    /* Step 3 with R3 = 0x0017a2d3. */
    struct oscore_b2_client cl;
    assert_int_equal(oscore_b2_client_init(&cl, 4), 0);
    assert_int_equal(cl.state, OSCORE_B2_CLIENT_IDLE);
    k = oscore_b2_client_response1(&cl, with_queue(c3_idc + 4, 4), &ccfg, &cur, &b1, resp1,
                                   (size_t)r1, out, sizeof out, &next);
    assert_true(k > 0);
    assert_int_equal(out[1], COAP_CODE_UNAUTHORIZED);
    assert_int_equal(cl.state, OSCORE_B2_CLIENT_SENT_R3);
    struct vec_scope v = vec_object(appc, "C.3.1");
    const uint8_t *key;
    size_t kl = oscore_context_sender_key(&next, &key);
    assert_vec_bytes(v, "sender_key", key, kl);
    kl = oscore_context_recipient_key(&next, &key);
    assert_vec_bytes(v, "recipient_key", key, kl);
    kl = oscore_context_common_iv(&next, &key);
    assert_vec_bytes(v, "common_iv", key, kl);
    size_t idl;
    const uint8_t *idc = oscore_context_id_context(&next, &idl);
    assert_int_equal(idl, 8);
    assert_memory_equal(idc, c3_idc, 8);
    /* A second response #1 for this run: "a replayed step". */
    assert_int_equal(oscore_b2_client_response1(&cl, with_queue(c3_idc + 4, 4), &ccfg, &cur, &b1,
                                                resp1, (size_t)r1, out, sizeof out, &c31),
                     OSCORE_ERR_REPLAY);

    /* Request #2 carries ID3 = R2 || R3; step 4 at the server. */
    long n2 = oscore_protect_request(&next, req, req_len, preq2, sizeof preq2, &b2);
    assert_true(n2 > 0);
    assert_int_equal(oscore_message_option(preq2, (size_t)n2, &o), 0);
    assert_int_equal(o.kid_context_len, 8);
    assert_memory_equal(o.kid_context, c3_idc, 8);
    assert_true(oscore_b2_server_is_request2(&srv, preq2, (size_t)n2, 2000));
    assert_false(oscore_b2_server_is_request2(&srv, preq1, (size_t)n1, 2000));
    k = oscore_b2_server_request2(&srv, test_backend(), &scfg, preq2, (size_t)n2, 2000, &srv_next,
                                  plain, sizeof plain, &sb);
    assert_int_equal(k, (long)req_len);
    assert_memory_equal(plain, req, req_len);
    /* "removes all instances of R2 ... from the cache". */
    assert_int_equal(srv.pending, 0);
    /* "The server MUST NOT accept replayed request #2 messages." */
    struct oscore_context scratch;
    assert_int_equal(oscore_b2_server_request2(&srv, test_backend(), &scfg, preq2, (size_t)n2, 2000,
                                               &scratch, plain, sizeof plain, &sb),
                     OSCORE_ERR_REPLAY);
    /* Nor does the new context (Appendix B.2.2: "a replay of request #2
     * is handled by the normal replay protection mechanism"). */
    struct oscore_binding sb2;
    assert_int_equal(
        oscore_unprotect_request(&srv_next, preq2, (size_t)n2, plain, sizeof plain, &sb2),
        OSCORE_ERR_REPLAY);

    /* Step 5: response #2 "using the same security context as in the
     * request". */
    uint8_t r[BUF];
    size_t rl = sample_response(r, (const uint8_t *)"ok", 2, false, 0);
    long p2 = oscore_protect_response(&srv_next, &sb, r, rl, false, resp2, sizeof resp2);
    assert_true(p2 > 0);
    assert_int_equal(
        oscore_b2_client_response2(&cl, &next, &b2, resp2, (size_t)p2, out, sizeof out), (long)rl);
    assert_memory_equal(out, r, rl);
    assert_int_equal(cl.state, OSCORE_B2_CLIENT_DONE);
    assert_int_equal(
        oscore_b2_client_response2(&cl, &next, &b2, resp2, (size_t)p2, out, sizeof out),
        OSCORE_ERR_REPLAY);
    oscore_context_wipe(&cur);
    oscore_context_wipe(&next);
    oscore_context_wipe(&srv_next);
}

/* The whole protocol with 8-byte random values, the client initiating
 * (step 1) and the server initiating for a context without ID Context. */
static void test_b2_round_trips(void **state)
{
    (void)state;
    for (int client_starts = 0; client_starts < 2; client_starts++) {
        struct oscore_config ccfg, scfg;
        b2_config(&ccfg, true, NULL, 0);
        b2_config(&scfg, false, NULL, 0);
        struct oscore_context cur, next, srv_next;
        struct oscore_b2_client cl;
        struct oscore_b2_server srv;
        assert_int_equal(oscore_b2_client_init(&cl, 0), 0);
        assert_int_equal(oscore_b2_server_init(&srv, 0), 0);
        size_t id1_len = 0;
        if (client_starts) {
            /* Step 1: "generates a random string R1 and uses this as ID
             * Context". */
            assert_int_equal(oscore_b2_client_start(&cl, test_backend(), &ccfg, &cur), 0);
            assert_int_equal(cl.state, OSCORE_B2_CLIENT_SENT_R1);
            assert_non_null(oscore_context_id_context(&cur, &id1_len));
            assert_int_equal(id1_len, OSCORE_B2_NONCE_LEN);
            assert_int_equal(oscore_b2_client_start(&cl, test_backend(), &ccfg, &cur),
                             OSCORE_ERR_UNEXPECTED);
        } else {
            assert_int_equal(oscore_context_init_config(&cur, test_backend(), &ccfg), 0);
            assert_null(oscore_context_id_context(&cur, &id1_len));
        }
        uint8_t req[BUF], p1[BUF], r1[BUF], out[BUF], p2[BUF], r2[BUF];
        size_t req_len = sample_request(req, 40);
        struct oscore_binding b1, b2, sb;
        long n1 = oscore_protect_request(&cur, req, req_len, p1, sizeof p1, &b1);
        long k = oscore_b2_server_request1(&srv, test_backend(), &scfg, p1, (size_t)n1, 5, r1,
                                           sizeof r1);
        assert_true(k > 0);
        k = oscore_b2_client_response1(&cl, test_backend(), &ccfg, &cur, &b1, r1, (size_t)k, out,
                                       sizeof out, &next);
        assert_true(k > 0);
        size_t id3_len;
        const uint8_t *id3 = oscore_context_id_context(&next, &id3_len);
        assert_int_equal(id3_len, 2 * OSCORE_B2_NONCE_LEN);
        assert_memory_equal(id3, cl.r2, OSCORE_B2_NONCE_LEN);
        long n2 = oscore_protect_request(&next, req, req_len, p2, sizeof p2, &b2);
        k = oscore_b2_server_request2(&srv, test_backend(), &scfg, p2, (size_t)n2, 6, &srv_next,
                                      out, sizeof out, &sb);
        assert_int_equal(k, (long)req_len);
        assert_memory_equal(out, req, req_len);
        /* Both sides hold the same keys, crosswise. */
        const uint8_t *a, *bk;
        size_t al = oscore_context_sender_key(&next, &a);
        assert_int_equal(oscore_context_recipient_key(&srv_next, &bk), al);
        assert_memory_equal(a, bk, al);
        uint8_t resp[BUF];
        size_t rl = sample_response(resp, (const uint8_t *)"x", 1, false, 0);
        long pr = oscore_protect_response(&srv_next, &sb, resp, rl, true, r2, sizeof r2);
        assert_int_equal(
            oscore_b2_client_response2(&cl, &next, &b2, r2, (size_t)pr, out, sizeof out), (long)rl);
        /* The new context goes on like any other. */
        n2 = oscore_protect_request(&next, req, req_len, p2, sizeof p2, &b2);
        assert_int_equal(oscore_unprotect_request(&srv_next, p2, (size_t)n2, out, sizeof out, &sb),
                         (long)req_len);
        oscore_context_wipe(&cur);
        oscore_context_wipe(&next);
        oscore_context_wipe(&srv_next);
    }
}

long oscore_protect_response_kid_context(struct oscore_context *c, struct oscore_binding *b,
                                         const uint8_t *msg, size_t len, bool with_piv,
                                         const uint8_t *kid_context, size_t kid_context_len,
                                         uint8_t *out, size_t cap);

/* Each refusal, with its error. */
static void test_b2_refusals(void **state)
{
    (void)state;
    struct oscore_config ccfg, scfg;
    b2_config(&ccfg, true, c3_idc, 4);
    b2_config(&scfg, false, c3_idc, 4);
    struct oscore_context cur, next, plain_srv;
    assert_int_equal(oscore_context_init_config(&cur, test_backend(), &ccfg), 0);
    assert_int_equal(oscore_context_init_config(&plain_srv, test_backend(), &scfg), 0);
    struct oscore_b2_client cl;
    struct oscore_b2_server srv;
    assert_int_equal(oscore_b2_client_init(&cl, 0), 0);
    assert_int_equal(oscore_b2_server_init(&srv, 0), 0);
    assert_int_equal(oscore_b2_client_init(&cl, OSCORE_MAX_ID_CONTEXT), OSCORE_ERR_INVALID);
    assert_int_equal(oscore_b2_server_init(&srv, OSCORE_MAX_ID_CONTEXT), OSCORE_ERR_INVALID);
    assert_int_equal(oscore_b2_server_init(&srv, 0), 0);
    uint8_t req[BUF], p1[BUF], r1[BUF], out[BUF], p2[BUF], tmp[BUF];
    size_t req_len = sample_request(req, 0);
    struct oscore_binding b1, b2, sb;
    long n1 = oscore_protect_request(&cur, req, req_len, p1, sizeof p1, &b1);

    /* Missing R2: an ordinary response has no 'kid context'. */
    struct oscore_binding sbp;
    assert_true(oscore_unprotect_request(&plain_srv, p1, (size_t)n1, out, sizeof out, &sbp) > 0);
    uint8_t resp[BUF];
    size_t rl = sample_response(resp, NULL, 0, false, 0);
    long pr = oscore_protect_response(&plain_srv, &sbp, resp, rl, false, tmp, sizeof tmp);
    assert_int_equal(oscore_b2_client_response1(&cl, test_backend(), &ccfg, &cur, &b1, tmp,
                                                (size_t)pr, out, sizeof out, &next),
                     OSCORE_ERR_KID_CONTEXT);
    /* An empty 'kid context' is no R2 either. */
    static const uint8_t none[1] = {0};
    pr = oscore_protect_response_kid_context(&plain_srv, &sbp, resp, rl, true, none, 0, tmp,
                                             sizeof tmp);
    assert_true(pr > 0);
    assert_int_equal(oscore_b2_client_response1(&cl, test_backend(), &ccfg, &cur, &b1, tmp,
                                                (size_t)pr, out, sizeof out, &next),
                     OSCORE_ERR_KID_CONTEXT);
    assert_int_equal(cl.state, OSCORE_B2_CLIENT_IDLE);

    /* A response #1 that is not a 4.01: the server performed the request,
     * so it is not this protocol. Built with ID2 = R2 || ID1 by hand. */
    {
        static const uint8_t r2v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        struct oscore_params p = {
            .master_secret = ccfg.master_secret,
            .master_secret_len = 16,
            .master_salt = ccfg.master_salt,
            .master_salt_len = 8,
            .sender_id = scfg.sender_id,
            .sender_id_len = 1,
            .recipient_id = NULL,
            .recipient_id_len = 0,
        };
        uint8_t id2[12];
        memcpy(id2, r2v, 8);
        memcpy(id2 + 8, c3_idc, 4);
        p.id_context = id2;
        p.id_context_len = 12;
        struct oscore_context second;
        assert_int_equal(oscore_context_init(&second, test_backend(), &p), 0);
        pr = oscore_protect_response_kid_context(&second, &sbp, resp, rl, false, r2v, 8, tmp,
                                                 sizeof tmp);
        assert_true(pr > 0);
        assert_int_equal(oscore_b2_client_response1(&cl, test_backend(), &ccfg, &cur, &b1, tmp,
                                                    (size_t)pr, out, sizeof out, &next),
                         OSCORE_ERR_UNEXPECTED);
        oscore_context_wipe(&second);
    }

    /* Kid not the configured Recipient ID. */
    struct oscore_config other = scfg;
    other.recipient_id[0] = 0x55;
    other.recipient_id_len = 1;
    assert_int_equal(
        oscore_b2_server_request1(&srv, test_backend(), &other, p1, (size_t)n1, 0, r1, sizeof r1),
        OSCORE_ERR_CONTEXT_NOT_FOUND);
    /* A request that does not verify leaves no R2 behind. */
    memcpy(tmp, p1, (size_t)n1);
    tmp[n1 - 1] ^= 1;
    assert_int_equal(
        oscore_b2_server_request1(&srv, test_backend(), &scfg, tmp, (size_t)n1, 0, r1, sizeof r1),
        OSCORE_ERR_DECRYPT);
    assert_int_equal(srv.pending, 0);

    /* Wrong R2: the response's 'kid context' altered in transit gives
     * another ID2, and the response does not verify. */
    long k1 =
        oscore_b2_server_request1(&srv, test_backend(), &scfg, p1, (size_t)n1, 0, r1, sizeof r1);
    assert_true(k1 > 0);
    struct oscore_option o;
    assert_int_equal(oscore_message_option(r1, (size_t)k1, &o), 0);
    size_t at = (size_t)(o.kid_context - r1);
    memcpy(tmp, r1, (size_t)k1);
    tmp[at] ^= 0x80;
    assert_int_equal(oscore_b2_client_response1(&cl, test_backend(), &ccfg, &cur, &b1, tmp,
                                                (size_t)k1, out, sizeof out, &next),
                     OSCORE_ERR_DECRYPT);
    /* Appendix B.2.2: "Replaying response #1 in response to some request
     * other than request #1 will fail to verify". */
    struct oscore_binding other_b;
    long n3 = oscore_protect_request(&cur, req, req_len, tmp, sizeof tmp, &other_b);
    assert_true(n3 > 0);
    assert_int_equal(oscore_b2_client_response1(&cl, test_backend(), &ccfg, &cur, &other_b, r1,
                                                (size_t)k1, out, sizeof out, &next),
                     OSCORE_ERR_DECRYPT);
    assert_int_equal(cl.state, OSCORE_B2_CLIENT_IDLE);
    assert_true(oscore_b2_client_response1(&cl, test_backend(), &ccfg, &cur, &b1, r1, (size_t)k1,
                                           out, sizeof out, &next) > 0);

    /* Request #2 with an R2 the server never sent: not step 4. */
    long n2 = oscore_protect_request(&next, req, req_len, p2, sizeof p2, &b2);
    assert_int_equal(oscore_message_option(p2, (size_t)n2, &o), 0);
    at = (size_t)(o.kid_context - p2);
    memcpy(tmp, p2, (size_t)n2);
    tmp[at] ^= 0x01;
    assert_false(oscore_b2_server_is_request2(&srv, tmp, (size_t)n2, 10));
    struct oscore_context srv_next;
    assert_int_equal(oscore_b2_server_request2(&srv, test_backend(), &scfg, tmp, (size_t)n2, 10,
                                               &srv_next, out, sizeof out, &sb),
                     OSCORE_ERR_KID_CONTEXT);
    /* Missing R: no 'kid context' at all. */
    assert_int_equal(oscore_b2_server_request2(&srv, test_backend(), &scfg, req, req_len, 10,
                                               &srv_next, out, sizeof out, &sb),
                     OSCORE_ERR_NOT_OSCORE);
    struct oscore_binding pb;
    long plain_n = oscore_protect_request(&plain_srv, req, req_len, tmp, sizeof tmp, &pb);
    (void)plain_n;
    /* A forged request #2 with the right R2 fails to verify, and the R2
     * stays for the genuine one. */
    memcpy(tmp, p2, (size_t)n2);
    tmp[n2 - 1] ^= 1;
    assert_int_equal(oscore_b2_server_request2(&srv, test_backend(), &scfg, tmp, (size_t)n2, 10,
                                               &srv_next, out, sizeof out, &sb),
                     OSCORE_ERR_DECRYPT);
    assert_int_not_equal(srv.pending, 0);
    /* Past OSCORE_B2_PENDING_MS the R2 is forgotten. */
    assert_false(oscore_b2_server_is_request2(&srv, p2, (size_t)n2, OSCORE_B2_PENDING_MS));
    assert_int_equal(oscore_b2_server_request2(&srv, test_backend(), &scfg, p2, (size_t)n2,
                                               OSCORE_B2_PENDING_MS, &srv_next, out, sizeof out,
                                               &sb),
                     OSCORE_ERR_KID_CONTEXT);
    assert_int_equal(oscore_b2_server_request2(&srv, test_backend(), &scfg, p2, (size_t)n2, 10,
                                               &srv_next, out, sizeof out, &sb),
                     (long)req_len);
    /* Step 5 out of order / a new run in the response to request #2. */
    struct oscore_b2_client fresh;
    assert_int_equal(oscore_b2_client_init(&fresh, 0), 0);
    assert_int_equal(
        oscore_b2_client_response2(&fresh, &next, &b2, r1, (size_t)k1, out, sizeof out),
        OSCORE_ERR_UNEXPECTED);
    assert_int_equal(oscore_b2_client_response2(&cl, &next, &b2, r1, (size_t)k1, out, sizeof out),
                     OSCORE_ERR_KID_CONTEXT);
    oscore_context_wipe(&srv_next);

    /* Too long: R2 || ID1 above 16 bytes at the server (ID1 of 12 bytes
     * and an 8-byte R2) ... */
    struct oscore_config long_c, long_s;
    b2_config(&long_c, true, c3_idc, 4);
    b2_config(&long_s, false, c3_idc, 4);
    static const uint8_t id12[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    long_c.id_context_len = long_s.id_context_len = 12;
    memcpy(long_c.id_context, id12, 12);
    memcpy(long_s.id_context, id12, 12);
    struct oscore_context lcur;
    assert_int_equal(oscore_context_init_config(&lcur, test_backend(), &long_c), 0);
    struct oscore_binding lb;
    long ln = oscore_protect_request(&lcur, req, req_len, tmp, sizeof tmp, &lb);
    struct oscore_b2_server s2;
    assert_int_equal(oscore_b2_server_init(&s2, 0), 0);
    assert_int_equal(
        oscore_b2_server_request1(&s2, test_backend(), &long_s, tmp, (size_t)ln, 0, r1, sizeof r1),
        OSCORE_ERR_ID_CONTEXT_TOO_LONG);
    /* ... and R2 || R3 at the client (R2 of 12 bytes, R3 of 8). */
    struct oscore_b2_server s12;
    assert_int_equal(oscore_b2_server_init(&s12, 12), 0);
    n1 = oscore_protect_request(&cur, req, req_len, p1, sizeof p1, &b1);
    k1 = oscore_b2_server_request1(&s12, test_backend(), &scfg, p1, (size_t)n1, 0, r1, sizeof r1);
    assert_true(k1 > 0);
    struct oscore_b2_client c8;
    assert_int_equal(oscore_b2_client_init(&c8, 0), 0);
    assert_int_equal(oscore_b2_client_response1(&c8, test_backend(), &ccfg, &cur, &b1, r1,
                                                (size_t)k1, out, sizeof out, &next),
                     OSCORE_ERR_ID_CONTEXT_TOO_LONG);
    /* A 4-byte R3 fits. */
    assert_int_equal(oscore_b2_client_init(&c8, 4), 0);
    assert_true(oscore_b2_client_response1(&c8, test_backend(), &ccfg, &cur, &b1, r1, (size_t)k1,
                                           out, sizeof out, &next) > 0);

    /* Appendix B.2.1: with every slot pending the server answers 5.03. */
    struct oscore_b2_server full;
    assert_int_equal(oscore_b2_server_init(&full, 0), 0);
    for (int i = 0; i < OSCORE_B2_MAX_PENDING; i++) {
        n1 = oscore_protect_request(&cur, req, req_len, p1, sizeof p1, &b1);
        assert_true(oscore_b2_server_request1(&full, test_backend(), &scfg, p1, (size_t)n1, 100, r1,
                                              sizeof r1) > 0);
    }
    n1 = oscore_protect_request(&cur, req, req_len, p1, sizeof p1, &b1);
    assert_int_equal(
        oscore_b2_server_request1(&full, test_backend(), &scfg, p1, (size_t)n1, 100, r1, sizeof r1),
        OSCORE_ERR_BUSY);
    long e = oscore_error_response(OSCORE_ERR_BUSY, p1, (size_t)n1, r1, sizeof r1);
    assert_true(e > 0);
    assert_int_equal(r1[1], COAP_CODE(5, 3));
    e = oscore_error_response(OSCORE_ERR_KID_CONTEXT, p1, (size_t)n1, r1, sizeof r1);
    assert_true(e > 0);
    assert_int_equal(r1[1], COAP_CODE_UNAUTHORIZED);
    /* ... until the oldest expires. */
    assert_true(oscore_b2_server_request1(&full, test_backend(), &scfg, p1, (size_t)n1,
                                          100 + OSCORE_B2_PENDING_MS, r1, sizeof r1) > 0);
    oscore_context_wipe(&cur);
    oscore_context_wipe(&next);
    oscore_context_wipe(&lcur);
    oscore_context_wipe(&plain_srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_b2_known_answer),
        cmocka_unit_test(test_b2_round_trips),
        cmocka_unit_test(test_b2_refusals),
    };
    int failed = cmocka_run_group_tests_name("openssl", tests, setup, NULL);
    const struct CMUnitTest vector_tests[] = {
        cmocka_unit_test(test_b2_known_answer),
    };
    test_backend = edhoc_crypto_sodium;
    failed += cmocka_run_group_tests_name("sodium", vector_tests, setup, NULL);
    test_backend = edhoc_crypto_auto;
    failed += cmocka_run_group_tests_name("auto", vector_tests, setup, NULL);
    return failed;
}
