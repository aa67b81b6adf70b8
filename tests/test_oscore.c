/*
 * OSCORE (RFC 8613): RFC 8613 Appendix C byte-exact in both roles, RFC 9529
 * trace 2 context, round trips for every AEAD, messages of any size up to
 * OSCORE_MAX_MESSAGE (and CCM's 2^16 - 1), buffer sizing, tampering, replay window,
 * sequence-number limit and persistence, Echo recovery, Observe, option
 * classes against Figure 5, Proxy-Uri decomposition, error responses, the
 * option parser, the configuration parser, and Appendix B.2 in both roles
 * (keys checked against the C.3 vectors, round trips, every refusal).
 *
 * Memory (printed by test_context_size): sizeof(struct oscore_context) is
 * 192 bytes on x86-64 (limit 256), sizeof(struct oscore_binding) 24 bytes.
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

/* The crypto backend of the tests. main runs everything with OpenSSL, then
 * the RFC vector tests again with libsodium and with the composite (issue
 * #18: every backend gives the same bytes). */
static const struct edhoc_crypto_ops *(*test_backend)(void) = edhoc_crypto_openssl;

static struct vec_scope appc, trace2;

#define BUF 2600

/* ---- helpers ---- */

static void ctx_from_vector(struct oscore_context *c, const char *name)
{
    struct vec_scope v = vec_object(appc, name);
    uint8_t ms[64], salt[64], sid[8], rid[8], idc[16];
    size_t ms_len = vec_hex(v, "master_secret", ms, sizeof ms);
    size_t salt_len = vec_has(v, "master_salt") ? vec_hex(v, "master_salt", salt, sizeof salt) : 0;
    size_t sid_len = vec_hex(v, "sender_id", sid, sizeof sid);
    size_t rid_len = vec_hex(v, "recipient_id", rid, sizeof rid);
    bool has_idc = vec_has(v, "id_context");
    size_t idc_len = has_idc ? vec_hex(v, "id_context", idc, sizeof idc) : 0;
    struct oscore_params p = {
        .aead_alg = EDHOC_COSE_AES_CCM_16_64_128,
        .hkdf_alg = EDHOC_COSE_SHA256,
        .master_secret = ms,
        .master_secret_len = ms_len,
        .master_salt = salt_len ? salt : NULL,
        .master_salt_len = salt_len,
        .id_context = has_idc ? idc : NULL,
        .id_context_len = idc_len,
        .sender_id = sid,
        .sender_id_len = sid_len,
        .recipient_id = rid,
        .recipient_id_len = rid_len,
    };
    assert_int_equal(oscore_context_init(c, test_backend(), &p), 0);
}

static void assert_vec_bytes(struct vec_scope v, const char *key, const uint8_t *got,
                             size_t got_len)
{
    uint8_t want[BUF];
    size_t n = vec_hex(v, key, want, sizeof want);
    if (n != got_len || memcmp(want, got, n) != 0) {
        char hex[2 * BUF + 1];
        hex_encode(got, got_len, hex);
        fail_msg("%s differs: got %s", key, hex);
    }
}

/* A simple pair of contexts: client (sender 01 / recipient 02) and server. */
static void make_pair(struct oscore_context *cli, struct oscore_context *srv, int aead, int hash)
{
    static const uint8_t ms[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
    static const uint8_t salt[8] = {0x9e, 0x7c, 0xa9, 0x22, 0x23, 0x78, 0x63, 0x40};
    static const uint8_t a[1] = {0x01}, b[2] = {0x02, 0x03};
    struct oscore_params p = {
        .aead_alg = aead, .hkdf_alg = hash, .master_secret = ms, .master_secret_len = sizeof ms,
        .master_salt = salt, .master_salt_len = sizeof salt,
        .sender_id = a, .sender_id_len = 1, .recipient_id = b, .recipient_id_len = 2,
    };
    assert_int_equal(oscore_context_init(cli, test_backend(), &p), 0);
    p.sender_id = b;
    p.sender_id_len = 2;
    p.recipient_id = a;
    p.recipient_id_len = 1;
    assert_int_equal(oscore_context_init(srv, test_backend(), &p), 0);
}

/* GET coap://[::1]/sensor/temp?unit=c with token 0xa1b2, MID 0x1234 */
static size_t sample_request(uint8_t *out, size_t payload_len)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = payload_len ? COAP_CODE_POST : COAP_CODE_GET;
    m.mid = 0x1234;
    m.token_len = 2;
    m.token[0] = 0xa1;
    m.token[1] = 0xb2;
    static uint8_t payload[1200];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7 + 1);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)"sensor", 6), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)"temp", 4), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_HOST, (const uint8_t *)"example.com", 11), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_QUERY, (const uint8_t *)"unit=c", 6), 0);
    m.payload = payload_len ? payload : NULL;
    m.payload_len = payload_len;
    long n = edhoc_coap_msg_encode(&m, out, BUF);
    assert_true(n > 0);
    return (size_t)n;
}

static size_t sample_response(uint8_t *out, const uint8_t *payload, size_t payload_len,
                              bool observe, uint32_t obs_value)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_ACK;
    m.code = COAP_CODE_CONTENT;
    m.mid = 0x1234;
    m.token_len = 2;
    m.token[0] = 0xa1;
    m.token[1] = 0xb2;
    uint8_t cf[1] = {0};
    uint8_t ov[4];
    size_t ovl = edhoc_coap_uint_encode(obs_value, ov);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cf, 1), 0);
    if (observe)
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, ov, ovl), 0);
    m.payload = payload;
    m.payload_len = payload_len;
    long n = edhoc_coap_msg_encode(&m, out, BUF);
    assert_true(n > 0);
    return (size_t)n;
}

/* ---- size ---- */

static void test_context_size(void **state)
{
    (void)state;
    printf("# sizeof(struct oscore_context) = %zu, sizeof(struct oscore_binding) = %zu\n",
           sizeof(struct oscore_context), sizeof(struct oscore_binding));
    assert_true(sizeof(struct oscore_context) <= 256);
    assert_true(sizeof(struct oscore_binding) <= 32);
}

/* ---- C.1-C.3: key derivation ---- */

static void test_derivation_appendix_c(void **state)
{
    (void)state;
    static const char *names[] = {"C.1.1", "C.1.2", "C.2.1", "C.2.2", "C.3.1", "C.3.2"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct vec_scope v = vec_object(appc, names[i]);
        struct oscore_context c;
        ctx_from_vector(&c, names[i]);
        const uint8_t *p;
        size_t n = oscore_context_sender_key(&c, &p);
        assert_vec_bytes(v, "sender_key", p, n);
        n = oscore_context_recipient_key(&c, &p);
        assert_vec_bytes(v, "recipient_key", p, n);
        n = oscore_context_common_iv(&c, &p);
        assert_int_equal(n, 13);
        assert_vec_bytes(v, "common_iv", p, n);
        uint8_t id[8], nonce[13];
        const uint8_t piv0[1] = {0};
        size_t id_len = vec_hex(v, "sender_id", id, sizeof id);
        assert_int_equal(oscore_nonce(&c, id, id_len, piv0, 1, nonce), 0);
        assert_vec_bytes(v, "sender_nonce", nonce, 13);
        id_len = vec_hex(v, "recipient_id", id, sizeof id);
        assert_int_equal(oscore_nonce(&c, id, id_len, piv0, 1, nonce), 0);
        assert_vec_bytes(v, "recipient_nonce", nonce, 13);
        oscore_context_wipe(&c);
    }
}

/* ---- C.4-C.6: requests, client and server ---- */

static void check_request_vector(const char *msg_name, const char *client, const char *server)
{
    struct vec_scope v = vec_object(appc, msg_name);
    struct oscore_context cli, srv;
    ctx_from_vector(&cli, client);
    ctx_from_vector(&srv, server);
    uint8_t plain[BUF], prot[BUF], out[BUF];
    size_t plain_len = vec_hex(v, "unprotected_request", plain, sizeof plain);

    /* building blocks */
    uint8_t kid[8], piv[8], aad[64], nonce[13];
    size_t kid_len = vec_hex(v, "kid", kid, sizeof kid);
    size_t piv_len = vec_hex(v, "partial_iv", piv, sizeof piv);
    long aad_len = oscore_aad(10, kid, kid_len, piv, piv_len, aad, sizeof aad);
    assert_true(aad_len > 0);
    assert_vec_bytes(v, "aad", aad, (size_t)aad_len);
    assert_int_equal(oscore_nonce(&cli, kid, kid_len, piv, piv_len, nonce), 0);
    assert_vec_bytes(v, "nonce", nonce, 13);
    uint8_t pv[8];
    assert_int_equal(oscore_piv_encode((uint64_t)vec_int(v, "sender_sequence_number"), pv),
                     piv_len);
    assert_memory_equal(pv, piv, piv_len);

    /* client */
    assert_int_equal(oscore_context_set_ssn(&cli, (uint64_t)vec_int(v, "sender_sequence_number")), 0);
    struct oscore_binding b;
    long n = oscore_protect_request(&cli, plain, plain_len, prot, sizeof prot, &b);
    assert_true(n > 0);
    assert_vec_bytes(v, "protected_request", prot, (size_t)n);
    assert_int_equal(oscore_context_ssn(&cli), 21);

    /* the option value as sent */
    struct oscore_option opt;
    assert_int_equal(oscore_message_option(prot, (size_t)n, &opt), 0);
    uint8_t ov[32];
    long ovl = oscore_option_encode(&opt, ov, sizeof ov);
    assert_true(ovl > 0);
    assert_vec_bytes(v, "oscore_option_value", ov, (size_t)ovl);

    /* server */
    struct oscore_binding sb;
    long m = oscore_unprotect_request(&srv, prot, (size_t)n, out, sizeof out, &sb);
    assert_int_equal(m, (long)plain_len);
    assert_memory_equal(out, plain, plain_len);
    assert_int_equal(sb.piv_len, piv_len);
    assert_memory_equal(sb.piv, piv, piv_len);
    assert_int_equal(sb.kid_len, kid_len);
    oscore_context_wipe(&cli);
    oscore_context_wipe(&srv);
}

static void test_request_c4(void **state)
{
    (void)state;
    check_request_vector("C.4", "C.1.1", "C.1.2");
}

static void test_request_c5(void **state)
{
    (void)state;
    check_request_vector("C.5", "C.2.1", "C.2.2");
}

static void test_request_c6(void **state)
{
    (void)state;
    check_request_vector("C.6", "C.3.1", "C.3.2");
}

/* kid context names the context too (Section 5.1): a request with another
 * one, or one for a context without ID Context, is not for this context. */
static void test_kid_context_mismatch(void **state)
{
    (void)state;
    struct vec_scope v = vec_object(appc, "C.6");
    uint8_t prot[BUF], out[BUF];
    size_t n = vec_hex(v, "protected_request", prot, sizeof prot);
    struct oscore_context srv, srv_no_idc;
    ctx_from_vector(&srv, "C.3.2");
    ctx_from_vector(&srv_no_idc, "C.1.2");
    struct oscore_binding b;
    /* 19 14 08 <kid context 37cbf3210017a2d3>: flip one byte of it */
    uint8_t *kc = memmem(prot, n, "\x37\xcb\xf3\x21", 4);
    assert_non_null(kc);
    kc[0] ^= 1;
    assert_int_equal(oscore_unprotect_request(&srv, prot, n, out, sizeof out, &b),
                     OSCORE_ERR_CONTEXT_NOT_FOUND);
    kc[0] ^= 1;
    assert_int_equal(oscore_unprotect_request(&srv_no_idc, prot, n, out, sizeof out, &b),
                     OSCORE_ERR_CONTEXT_NOT_FOUND);
    assert_true(oscore_unprotect_request(&srv, prot, n, out, sizeof out, &b) > 0);

    /* the client rebuilds a binding from its own protected request */
    struct oscore_binding rb;
    assert_int_equal(oscore_binding_from_request(&rb, prot, n), 0);
    assert_int_equal(rb.piv_len, 1);
    assert_int_equal(rb.piv[0], 0x14);
    assert_int_equal(rb.kid_len, 0);
    uint8_t plain[BUF];
    size_t pl = vec_hex(v, "unprotected_request", plain, sizeof plain);
    assert_int_equal(oscore_binding_from_request(&rb, plain, pl), OSCORE_ERR_NOT_OSCORE);
    assert_int_equal(oscore_binding_from_request(&rb, prot, 3), OSCORE_ERR_MALFORMED);
}

/* ---- C.7 / C.8: responses, server and client ---- */

static void check_response_vector(const char *name, bool with_piv)
{
    struct vec_scope v4 = vec_object(appc, "C.4");
    struct vec_scope v = vec_object(appc, name);
    struct oscore_context cli, srv;
    ctx_from_vector(&cli, "C.1.1");
    ctx_from_vector(&srv, "C.1.2");
    uint8_t req[BUF], preq[BUF], out[BUF], resp[BUF], presp[BUF];
    size_t req_len = vec_hex(v4, "unprotected_request", req, sizeof req);
    size_t resp_len = vec_hex(v, "unprotected_response", resp, sizeof resp);

    struct oscore_binding cb, sb;
    assert_int_equal(oscore_context_set_ssn(&cli, 20), 0);
    long n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &cb);
    assert_true(n > 0);
    assert_int_equal(oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb),
                     (long)req_len);

    assert_int_equal(oscore_context_set_ssn(&srv, (uint64_t)vec_int(v, "sender_sequence_number")), 0);
    long m = oscore_protect_response(&srv, &sb, resp, resp_len, with_piv, presp, sizeof presp);
    assert_true(m > 0);
    assert_vec_bytes(v, "protected_response", presp, (size_t)m);
    assert_int_equal(oscore_context_ssn(&srv), with_piv ? 1 : 0);

    if (with_piv) {
        uint8_t nonce[13];
        const uint8_t piv0[1] = {0};
        const uint8_t *sid = (const uint8_t *)"\x01";
        assert_int_equal(oscore_nonce(&srv, sid, 1, piv0, 1, nonce), 0);
        assert_vec_bytes(v, "nonce", nonce, 13);
    }

    long k = oscore_unprotect_response(&cli, &cb, presp, (size_t)m, out, sizeof out);
    assert_int_equal(k, (long)resp_len);
    assert_memory_equal(out, resp, resp_len);
    /* a second copy of the same response is a replay */
    assert_int_equal(oscore_unprotect_response(&cli, &cb, presp, (size_t)m, out, sizeof out),
                     OSCORE_ERR_REPLAY);
    oscore_context_wipe(&cli);
    oscore_context_wipe(&srv);
}

static void test_response_c7(void **state)
{
    (void)state;
    check_response_vector("C.7", false);
}

static void test_response_c8(void **state)
{
    (void)state;
    check_response_vector("C.8", true);
}

/* ---- RFC 9529 trace 2 ---- */

static void test_trace2_context(void **state)
{
    (void)state;
    struct vec_scope t = trace2;
    uint8_t ms[16], salt[8], c_i[4], c_r[4];
    size_t ms_len = vec_hex(t, "oscore_master_secret", ms, sizeof ms);
    size_t salt_len = vec_hex(t, "oscore_master_salt", salt, sizeof salt);
    size_t ci_len = vec_hex(t, "c_i", c_i, sizeof c_i);
    size_t cr_len = vec_hex(t, "c_r", c_r, sizeof c_r);
    int aead = (int)vec_int(t, "oscore_aead_algorithm");
    int hash = (int)vec_int(t, "oscore_hkdf_hash_algorithm");
    struct oscore_context cli, srv;
    /* Initiator = client: sender ID C_R, recipient ID C_I (RFC 9528 A.1). */
    assert_int_equal(oscore_context_init_edhoc(&cli, test_backend(), ms, ms_len, salt,
                                               salt_len, c_r, cr_len, c_i, ci_len, aead, hash),
                     0);
    assert_int_equal(oscore_context_init_edhoc(&srv, test_backend(), ms, ms_len, salt,
                                               salt_len, c_i, ci_len, c_r, cr_len, aead, hash),
                     0);
    static const uint8_t cli_key[16] = {0x91, 0xe8, 0xf9, 0x19, 0x57, 0x2d, 0xf7, 0x6e,
                                        0xa2, 0x16, 0xed, 0x51, 0x2d, 0xc9, 0xb7, 0x20};
    static const uint8_t srv_key[16] = {0x3e, 0x4d, 0x76, 0x6c, 0x19, 0xf1, 0x3f, 0xa1,
                                        0x32, 0xc0, 0xff, 0x85, 0x6b, 0xea, 0x88, 0xad};
    static const uint8_t iv[13] = {0x99, 0x12, 0xe1, 0x94, 0x4b, 0xd3, 0x92,
                                   0xcf, 0xef, 0x91, 0x25, 0xc0, 0x8b};
    const uint8_t *p;
    assert_int_equal(oscore_context_sender_key(&cli, &p), 16);
    assert_memory_equal(p, cli_key, 16);
    assert_int_equal(oscore_context_recipient_key(&cli, &p), 16);
    assert_memory_equal(p, srv_key, 16);
    assert_int_equal(oscore_context_sender_key(&srv, &p), 16);
    assert_memory_equal(p, srv_key, 16);
    assert_int_equal(oscore_context_common_iv(&cli, &p), 13);
    assert_memory_equal(p, iv, 13);
    assert_int_equal(oscore_context_common_iv(&srv, &p), 13);
    assert_memory_equal(p, iv, 13);
    /* an algorithm left at 0 is refused, not defaulted */
    struct oscore_context bad;
    assert_int_equal(oscore_context_init_edhoc(&bad, test_backend(), ms, ms_len, salt,
                                               salt_len, c_i, ci_len, c_r, cr_len, 0, hash),
                     OSCORE_ERR_UNSUPPORTED);
}

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
    struct oscore_params prm = {.aead_alg = EDHOC_COSE_A128GCM, .master_secret = ms,
                                .master_secret_len = 16, .sender_id = id7,
                                .sender_id_len = 7, .recipient_id = id7, .recipient_id_len = 0};
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
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_HOST, (const uint8_t *)"example.com", 11), 0);
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)"big", 3), 0);
    }
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cf, 1), 0);
    if (obs_len >= 0)
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, ov + 4 - obs_len,
                                             (size_t)obs_len), 0);
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
        if (num != COAP_OPT_URI_HOST && num != COAP_OPT_URI_PORT &&
            num != COAP_OPT_PROXY_SCHEME && num != COAP_OPT_PROXY_URI)
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
    assert_int_equal(response_round_trip(&cli, &srv, &cb, &sb, resp, resp_len, false, resp,
                                         resp_len), 0);
    /* ... or carry its own Partial IV (C.8). */
    request_round_trip(&cli, &srv, req, req_len, &cb, &sb);
    assert_true(response_round_trip(&cli, &srv, &cb, &sb, resp, resp_len, true, resp,
                                    resp_len) > 0);

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
    assert_int_equal(response_round_trip(&cli, &srv, &cb, &sb, n1, n1_len, false, want,
                                         want_len), 0);
    assert_true(response_round_trip(&cli, &srv, &cb, &sb, n2, n2_len, false, want,
                                    want_len) > 0);
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
            assert_int_equal(oscore_protect_request(&cli, req, len, out,
                                                    len + OSCORE_MAX_OVERHEAD, &b),
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
            uint8_t *req = big_message(true, payload_for_plaintext(true, edges[e]), -1, 0,
                                       &req_len);
            uint8_t *resp = big_message(false, payload_for_plaintext(false, edges[e]), -1, 0,
                                        &resp_len);
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
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_URI, (const uint8_t *)uri,
                                         strlen(uri)), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_SCHEME, (const uint8_t *)"coap", 4), 0);
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

/* ---- replay ---- */

static void test_replay_rejected(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    uint8_t req[BUF], preq[8][BUF], out[BUF], err[BUF];
    long plen[8];
    size_t req_len = sample_request(req, 3);
    struct oscore_binding b;
    for (int i = 0; i < 8; i++) {
        plen[i] = oscore_protect_request(&cli, req, req_len, preq[i], BUF, &b);
        assert_true(plen[i] > 0);
    }
    for (int i = 0; i < 8; i++)
        assert_true(oscore_unprotect_request(&srv, preq[i], (size_t)plen[i], out, sizeof out, &b) > 0);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(oscore_unprotect_request(&srv, preq[i], (size_t)plen[i], out, sizeof out, &b),
                         OSCORE_ERR_REPLAY);
    }
    /* 4.01 "Replay detected", ACK to the CON, Max-Age 0 */
    long e = oscore_error_response(OSCORE_ERR_REPLAY, preq[0], (size_t)plen[0], err, sizeof err);
    static const uint8_t want[] = {0x62, 0x81, 0x12, 0x34, 0xa1, 0xb2, 0xd0, 0x01, 0xff,
                                   'R', 'e', 'p', 'l', 'a', 'y', ' ', 'd', 'e', 't', 'e',
                                   'c', 't', 'e', 'd'};
    assert_int_equal(e, sizeof want);
    assert_memory_equal(err, want, sizeof want);
}

/* Section 8.2 step 6: the window moves only after a request decrypted. A
 * forgery with a far-ahead Partial IV, or a tampered copy of a real
 * request, must leave it where it was. */
static void test_failed_unprotect_keeps_window(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    uint8_t req[BUF], preq[BUF], bad[BUF], out[BUF];
    size_t req_len = sample_request(req, 4);
    struct oscore_binding cb, sb;
    long n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &cb);
    assert_true(n > 0);

    /* CON POST, token a1b2, OSCORE {PIV 1000, kid 01}, 12 bytes of noise */
    static const uint8_t forged[] = {0x42, 0x02, 0x12, 0x34, 0xa1, 0xb2, 0x94, 0x0a,
                                     0x03, 0xe8, 0x01, 0xff, 1, 2, 3, 4, 5, 6, 7, 8,
                                     9, 10, 11, 12};
    assert_int_equal(oscore_unprotect_request(&srv, forged, sizeof forged, out, sizeof out, &sb),
                     OSCORE_ERR_DECRYPT);
    memcpy(bad, preq, (size_t)n);
    bad[n - 1] ^= 0x01; /* last tag byte */
    assert_int_equal(oscore_unprotect_request(&srv, bad, (size_t)n, out, sizeof out, &sb),
                     OSCORE_ERR_DECRYPT);
    /* Sequence number 0 is still fresh: neither failure touched the window. */
    assert_int_equal(oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb),
                     (long)req_len);
    assert_int_equal(oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb),
                     OSCORE_ERR_REPLAY);
}

/* Proxy-Uri is not repeatable. A second one used to be percent-decoded
 * after the first in the same bounded scratch buffer, writing past its end
 * when the two together held more path than the buffer. */
static void test_second_proxy_uri_refused(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    static uint8_t uri1[8 + 4 * 251], uri2[9 + 1000];
    memcpy(uri1, "coap://h", 8);
    for (size_t k = 0; k < 4; k++) {
        uri1[8 + k * 251] = '/';
        memset(uri1 + 9 + k * 251, 'a', 250);
    }
    memcpy(uri2, "coap://h/", 9);
    memset(uri2 + 9, 'b', 1000);
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_GET;
    m.mid = 7;
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_URI, uri1, sizeof uri1), 0);
    static uint8_t req[4096], out[4096];
    struct oscore_binding b;
    long n = edhoc_coap_msg_encode(&m, req, sizeof req);
    assert_true(n > 0);
    /* one such Proxy-Uri is fine: four inner Uri-Path options */
    assert_true(oscore_protect_request(&cli, req, (size_t)n, out, sizeof out, &b) > 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_URI, uri2, sizeof uri2), 0);
    n = edhoc_coap_msg_encode(&m, req, sizeof req);
    assert_true(n > 0);
    uint64_t ssn = oscore_context_ssn(&cli);
    assert_int_equal(oscore_protect_request(&cli, req, (size_t)n, out, sizeof out, &b),
                     OSCORE_ERR_INVALID);
    assert_int_equal(oscore_context_ssn(&cli), ssn);
    /* a single path segment over 255 bytes cannot become a Uri-Path */
    struct coap_msg one;
    memset(&one, 0, sizeof one);
    one.type = COAP_TYPE_CON;
    one.code = COAP_CODE_GET;
    assert_int_equal(edhoc_coap_msg_add_option(&one, COAP_OPT_PROXY_URI, uri2, sizeof uri2), 0);
    n = edhoc_coap_msg_encode(&one, req, sizeof req);
    assert_true(n > 0);
    assert_int_equal(oscore_protect_request(&cli, req, (size_t)n, out, sizeof out, &b),
                     OSCORE_ERR_INVALID);
}

/* A stored mark beyond 2^40 (a damaged store) is refused, and a caller
 * that ignores the refusal still cannot send from sequence number 0 again,
 * which would repeat nonces used before the restart. */
static void test_resume_past_limit_leaves_context_exhausted(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    assert_int_equal(oscore_context_resume(&cli, OSCORE_SSN_MAX + 2), OSCORE_ERR_SSN_EXHAUSTED);
    assert_true(oscore_context_ssn(&cli) > OSCORE_SSN_MAX);
    assert_true(oscore_context_needs_echo(&cli));
    uint8_t req[BUF], out[BUF];
    size_t req_len = sample_request(req, 0);
    struct oscore_binding b;
    assert_int_equal(oscore_protect_request(&cli, req, req_len, out, sizeof out, &b),
                     OSCORE_ERR_SSN_EXHAUSTED);
    /* the limit itself is still a valid mark */
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    assert_int_equal(oscore_context_resume(&cli, OSCORE_SSN_MAX), 0);
    assert_true(oscore_protect_request(&cli, req, req_len, out, sizeof out, &b) > 0);
    assert_int_equal(oscore_protect_request(&cli, req, req_len, out, sizeof out, &b),
                     OSCORE_ERR_SSN_EXHAUSTED);
}

/* Deliver requests with the given sequence numbers, compare to a model:
 * accepted iff never seen and within 32 of the highest seen so far. */
static void test_window_slides(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    enum { N = 120 };
    static uint8_t preq[N][96];
    long plen[N];
    uint8_t req[BUF], out[BUF];
    size_t req_len = sample_request(req, 0);
    struct oscore_binding b;
    for (int i = 0; i < N; i++) {
        plen[i] = oscore_protect_request(&cli, req, req_len, preq[i], sizeof preq[i], &b);
        assert_true(plen[i] > 0);
    }
    static const int order[] = {5,  3,  3,   10, 7,  40, 8,  9,  9,  39, 41, 41, 0,  72,
                                40, 41, 42,  71, 73, 70, 50, 45, 44, 100, 68, 69, 99, 101,
                                67, 1,  119, 88, 87, 86, 119, 90, 118, 0,  117};
    bool seen[N] = {false};
    int top = -1;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        int s = order[k];
        bool expect = !seen[s] && (top < 0 || s > top || top - s < 32);
        long m = oscore_unprotect_request(&srv, preq[s], (size_t)plen[s], out, sizeof out, &b);
        if (expect) {
            if (m <= 0)
                fail_msg("sequence number %d (step %zu) refused: %ld", s, k, m);
            seen[s] = true;
            if (s > top)
                top = s;
        } else if (m != OSCORE_ERR_REPLAY) {
            fail_msg("sequence number %d (step %zu) not refused as replay: %ld", s, k, m);
        }
    }

    /* a window of 4 */
    static const uint8_t ms[16] = {7};
    static const uint8_t a[1] = {0xa}, bb[1] = {0xb};
    struct oscore_params p = {.master_secret = ms, .master_secret_len = 16, .sender_id = a,
                              .sender_id_len = 1, .recipient_id = bb, .recipient_id_len = 1,
                              .replay_window = 4};
    assert_int_equal(oscore_context_init(&cli, test_backend(), &p), 0);
    p.sender_id = bb;
    p.recipient_id = a;
    assert_int_equal(oscore_context_init(&srv, test_backend(), &p), 0);
    for (int i = 0; i < 10; i++)
        plen[i] = oscore_protect_request(&cli, req, req_len, preq[i], sizeof preq[i], &b);
    assert_true(oscore_unprotect_request(&srv, preq[9], (size_t)plen[9], out, sizeof out, &b) > 0);
    assert_true(oscore_unprotect_request(&srv, preq[6], (size_t)plen[6], out, sizeof out, &b) > 0);
    assert_int_equal(oscore_unprotect_request(&srv, preq[5], (size_t)plen[5], out, sizeof out, &b),
                     OSCORE_ERR_REPLAY);
}

/* ---- sequence number limit ---- */

static void test_ssn_limit(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    uint8_t req[BUF], preq[BUF], out[BUF];
    size_t req_len = sample_request(req, 0);
    struct oscore_binding b, sb;
    assert_int_equal(oscore_context_set_ssn(&cli, OSCORE_SSN_MAX + 1), OSCORE_ERR_SSN_EXHAUSTED);
    assert_int_equal(oscore_context_set_ssn(&cli, OSCORE_SSN_MAX - 1), 0);
    assert_int_equal(oscore_context_set_ssn(&cli, 5), OSCORE_ERR_INVALID); /* never backwards */
    long n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b);
    assert_true(n > 0);
    n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b);
    assert_true(n > 0);
    struct oscore_option opt;
    assert_int_equal(oscore_message_option(preq, (size_t)n, &opt), 0);
    assert_int_equal(opt.piv_len, 5);
    assert_memory_equal(opt.piv, "\xff\xff\xff\xff\xff", 5);
    assert_true(oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb) > 0);
    assert_int_equal(oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b),
                     OSCORE_ERR_SSN_EXHAUSTED);
    assert_int_equal(oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b),
                     OSCORE_ERR_SSN_EXHAUSTED);
    /* the server's responses with Partial IV are bound by the same limit,
     * those reusing the request nonce are not */
    assert_int_equal(oscore_context_set_ssn(&srv, OSCORE_SSN_MAX), 0);
    uint8_t resp[BUF];
    size_t resp_len = sample_response(resp, (const uint8_t *)"x", 1, false, 0);
    struct oscore_binding sb2 = sb;
    assert_true(oscore_protect_response(&srv, &sb2, resp, resp_len, true, preq, sizeof preq) > 0);
    sb2 = sb;
    assert_int_equal(oscore_protect_response(&srv, &sb2, resp, resp_len, true, preq, sizeof preq),
                     OSCORE_ERR_SSN_EXHAUSTED);
    assert_true(oscore_protect_response(&srv, &sb2, resp, resp_len, false, preq, sizeof preq) > 0);
    uint8_t piv[OSCORE_MAX_PIV];
    assert_int_equal(oscore_piv_encode(OSCORE_SSN_MAX + 1, piv), 0);
}

/* ---- persistence ---- */

struct flash {
    uint64_t mark;
    unsigned writes;
    bool fail;
};

static int store_mark(void *user, uint64_t mark)
{
    struct flash *f = user;
    if (f->fail)
        return -1;
    f->mark = mark;
    f->writes++;
    return 0;
}

static void test_persistence_crash_anywhere(void **state)
{
    (void)state;
    enum { K = 5 };
    uint8_t req[BUF], preq[BUF];
    size_t req_len = sample_request(req, 0);
    struct oscore_binding b;
    /* Crash after every number of sent messages over three store periods,
     * then restart from what was stored. */
    for (unsigned crash_after = 0; crash_after <= 3 * K + 1; crash_after++) {
        struct oscore_context cli, srv;
        make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
        struct flash f = {0};
        assert_int_equal(oscore_context_set_persistence(&cli, store_mark, &f, K), 0);
        long max_used = -1;
        for (unsigned i = 0; i < crash_after; i++) {
            uint64_t ssn = oscore_context_ssn(&cli);
            assert_true(oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b) > 0);
            max_used = (long)ssn;
        }
        /* stores happen once per K messages */
        assert_int_equal(f.writes, (crash_after + K - 1) / K);
        oscore_context_wipe(&cli); /* the crash */

        struct oscore_context again, srv2;
        make_pair(&again, &srv2, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
        assert_int_equal(oscore_context_set_persistence(&again, store_mark, &f, K), 0);
        assert_int_equal(oscore_context_resume(&again, f.mark), 0);
        long n = oscore_protect_request(&again, req, req_len, preq, sizeof preq, &b);
        assert_true(n > 0);
        struct oscore_option opt;
        assert_int_equal(oscore_message_option(preq, (size_t)n, &opt), 0);
        uint64_t next = 0;
        for (size_t i = 0; i < opt.piv_len; i++)
            next = next << 8 | opt.piv[i];
        if ((long)next <= max_used)
            fail_msg("crash after %u: reused sequence number %llu (max used %ld)", crash_after,
                     (unsigned long long)next, max_used);
        /* the restart stored a new mark before using anything */
        assert_true(f.mark > next);
    }

    /* a failing store stops the message and consumes nothing */
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    struct flash f = {.fail = true};
    assert_int_equal(oscore_context_set_persistence(&cli, store_mark, &f, K), 0);
    assert_int_equal(oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b),
                     OSCORE_ERR_PERSIST);
    assert_int_equal(oscore_context_ssn(&cli), 0);
    f.fail = false;
    assert_true(oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b) > 0);
    assert_int_equal(f.mark, K);
    assert_int_equal(oscore_context_set_persistence(&cli, store_mark, &f, 0), OSCORE_ERR_INVALID);
}

/* Two users of one context (two runs of a client): a shared counter
 * that hands out disjoint ranges, the way the CLI's locked file does. */
struct shared_counter {
    uint64_t next_free;
    unsigned calls;
    bool fail, go_back;
};

static int reserve_range(void *user, uint64_t next, uint64_t count, uint64_t *first)
{
    struct shared_counter *sc = user;
    if (sc->fail)
        return -1;
    sc->calls++;
    uint64_t start = sc->next_free > next ? sc->next_free : next;
    *first = sc->go_back ? next - 1 : start;
    sc->next_free = start + count;
    return 0;
}

static uint64_t piv_of(const uint8_t *msg, size_t len)
{
    struct oscore_option opt;
    assert_int_equal(oscore_message_option(msg, len, &opt), 0);
    uint64_t v = 0;
    for (size_t i = 0; i < opt.piv_len; i++)
        v = v << 8 | opt.piv[i];
    return v;
}

/* RFC 8613 Section 7.2: a Sender Sequence Number is never used twice
 * for one Sender Context, also when two processes share it: the second
 * one's reservations start above the first one's, and the first one
 * jumps past the second's when its own range runs out. */
static void test_reservation_shared_context(void **state)
{
    (void)state;
    uint8_t req[BUF], p1[BUF], p2[BUF];
    size_t req_len = sample_request(req, 0);
    struct oscore_binding b;
    struct oscore_context a, a_srv, c, c_srv;
    make_pair(&a, &a_srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    make_pair(&c, &c_srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    struct shared_counter sc = {0};
    assert_int_equal(oscore_context_set_reservation(&a, reserve_range, &sc, 3), 0);
    assert_int_equal(oscore_context_set_reservation(&c, reserve_range, &sc, 3), 0);
    uint64_t used[12];
    size_t n_used = 0;
    for (int round = 0; round < 4; round++) {
        for (int k = 0; k < 2; k++) {
            long n = oscore_protect_request(&a, req, req_len, p1, sizeof p1, &b);
            assert_true(n > 0);
            used[n_used++] = piv_of(p1, (size_t)n);
        }
        long n = oscore_protect_request(&c, req, req_len, p2, sizeof p2, &b);
        assert_true(n > 0);
        used[n_used++] = piv_of(p2, (size_t)n);
    }
    for (size_t i = 0; i < n_used; i++)
        for (size_t j = i + 1; j < n_used; j++)
            if (used[i] == used[j])
                fail_msg("sequence number %llu used twice", (unsigned long long)used[i]);
    /* a: 0,1 then 2 is its own, then a new range above c's: 6,7 ... */
    assert_int_equal(used[0], 0);
    assert_int_equal(used[1], 1);
    assert_int_equal(used[2], 3); /* c's first range starts above a's */
    assert_int_equal(used[3], 2);
    assert_int_equal(used[4], 6); /* a's second range starts above c's */
    /* Reservation failures stop the message and consume nothing. */
    uint64_t before = oscore_context_ssn(&a);
    sc.fail = true;
    while (oscore_context_ssn(&a) == before && before < 100) {
        long n = oscore_protect_request(&a, req, req_len, p1, sizeof p1, &b);
        if (n == OSCORE_ERR_PERSIST)
            break;
        assert_true(n > 0);
        before = oscore_context_ssn(&a);
    }
    assert_int_equal(oscore_protect_request(&a, req, req_len, p1, sizeof p1, &b),
                     OSCORE_ERR_PERSIST);
    assert_int_equal(oscore_context_ssn(&a), before);
    /* A reservation that would go back is refused as a failure. */
    sc.fail = false;
    sc.go_back = true;
    assert_int_equal(oscore_protect_request(&a, req, req_len, p1, sizeof p1, &b),
                     OSCORE_ERR_PERSIST);
    assert_int_equal(oscore_context_set_reservation(&a, reserve_range, &sc, 0), OSCORE_ERR_INVALID);
    oscore_context_wipe(&a);
    oscore_context_wipe(&c);
    oscore_context_wipe(&a_srv);
    oscore_context_wipe(&c_srv);
}

/* ---- Echo recovery (Appendix B.1.2) ---- */

static size_t add_echo(const uint8_t *req, size_t req_len, const uint8_t *echo, size_t echo_len,
                       uint8_t *out)
{
    struct coap_msg m;
    assert_int_equal(edhoc_coap_msg_parse(req, req_len, &m), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_ECHO, echo, echo_len), 0);
    long n = edhoc_coap_msg_encode(&m, out, BUF);
    assert_true(n > 0);
    return (size_t)n;
}

static void test_echo_recovery(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    struct flash sf = {0};
    assert_int_equal(oscore_context_set_persistence(&srv, store_mark, &sf, 10), 0);
    uint8_t req[BUF], old[4][BUF], preq[BUF], out[BUF], presp[BUF], echoreq[BUF];
    long oldlen[4];
    size_t req_len = sample_request(req, 2);
    struct oscore_binding cb, sb;
    for (int i = 0; i < 4; i++) {
        oldlen[i] = oscore_protect_request(&cli, req, req_len, old[i], BUF, &cb);
        assert_true(oscore_unprotect_request(&srv, old[i], (size_t)oldlen[i], out, sizeof out, &sb) > 0);
        uint8_t resp[BUF];
        size_t resp_len = sample_response(resp, (const uint8_t *)"ok", 2, false, 0);
        assert_true(oscore_protect_response(&srv, &sb, resp, resp_len, true, presp, sizeof presp) > 0);
    }
    assert_int_equal(oscore_context_ssn(&srv), 4);
    assert_false(oscore_context_needs_echo(&srv));

    /* server restart */
    struct oscore_context srv2, unused;
    make_pair(&unused, &srv2, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    assert_int_equal(oscore_context_set_persistence(&srv2, store_mark, &sf, 10), 0);
    assert_int_equal(oscore_context_resume(&srv2, sf.mark), 0);
    assert_true(oscore_context_needs_echo(&srv2));

    /* an old request is not processed: Echo first */
    assert_int_equal(oscore_unprotect_request(&srv2, old[3], (size_t)oldlen[3], out, sizeof out, &sb),
                     OSCORE_ERR_ECHO_REQUIRED);
    /* a forged one is still a decryption failure, not a challenge */
    memcpy(preq, old[3], (size_t)oldlen[3]);
    preq[oldlen[3] - 1] ^= 1;
    assert_int_equal(oscore_unprotect_request(&srv2, preq, (size_t)oldlen[3], out, sizeof out, &sb),
                     OSCORE_ERR_DECRYPT);

    /* new request -> 4.01 with Echo, protected with the server's Partial IV */
    long n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &cb);
    assert_int_equal(oscore_unprotect_request(&srv2, preq, (size_t)n, out, sizeof out, &sb),
                     OSCORE_ERR_ECHO_REQUIRED);
    long k = oscore_protect_echo_challenge(&srv2, &sb, preq, (size_t)n, presp, sizeof presp);
    assert_true(k > 0);
    struct oscore_option opt;
    assert_int_equal(oscore_message_option(presp, (size_t)k, &opt), 0);
    assert_true(opt.piv_len > 0);
    assert_true(oscore_context_ssn(&srv2) > 4); /* resumed above every used one */
    long j = oscore_unprotect_response(&cli, &cb, presp, (size_t)k, out, sizeof out);
    assert_true(j > 0);
    struct coap_msg inner;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)j, &inner), 0);
    assert_int_equal(inner.code, COAP_CODE_UNAUTHORIZED);
    assert_int_equal(inner.option_count, 1);
    assert_int_equal(inner.options[0].number, COAP_OPT_ECHO);
    assert_null(inner.payload);
    uint8_t echo[OSCORE_ECHO_LEN];
    assert_int_equal(inner.options[0].len, OSCORE_ECHO_LEN);
    memcpy(echo, inner.options[0].value, OSCORE_ECHO_LEN);

    /* a retry with a wrong Echo value is challenged again */
    uint8_t wrong[OSCORE_ECHO_LEN];
    memcpy(wrong, echo, sizeof wrong);
    wrong[0] ^= 1;
    size_t elen = add_echo(req, req_len, wrong, sizeof wrong, echoreq);
    n = oscore_protect_request(&cli, echoreq, elen, preq, sizeof preq, &cb);
    assert_int_equal(oscore_unprotect_request(&srv2, preq, (size_t)n, out, sizeof out, &sb),
                     OSCORE_ERR_ECHO_REQUIRED);

    /* the retry carrying the Echo value is accepted */
    elen = add_echo(req, req_len, echo, sizeof echo, echoreq);
    n = oscore_protect_request(&cli, echoreq, elen, preq, sizeof preq, &cb);
    assert_int_equal(oscore_unprotect_request(&srv2, preq, (size_t)n, out, sizeof out, &sb), (long)elen);
    assert_memory_equal(out, echoreq, elen);
    assert_false(oscore_context_needs_echo(&srv2));

    /* replays from before the restart, and of the challenged ones, are refused */
    for (int i = 0; i < 4; i++)
        assert_int_equal(oscore_unprotect_request(&srv2, old[i], (size_t)oldlen[i], out, sizeof out, &sb),
                         OSCORE_ERR_REPLAY);
    assert_int_equal(oscore_unprotect_request(&srv2, preq, (size_t)n, out, sizeof out, &sb),
                     OSCORE_ERR_REPLAY);
    /* and normal traffic continues */
    n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &cb);
    assert_int_equal(oscore_unprotect_request(&srv2, preq, (size_t)n, out, sizeof out, &sb), (long)req_len);
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
    assert_int_equal(oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb), (long)req_len);
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
    assert_true(oscore_unprotect_response(&cli, &cb, note[0], (size_t)nlen[0], out, sizeof out) > 0);
    /* the inner Observe of a notification is empty */
    struct coap_msg im;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)oscore_unprotect_response(&cli, &cb, note[2], (size_t)nlen[2], out, sizeof out), &im), 0);
    assert_non_null(edhoc_coap_msg_find_option(&im, COAP_OPT_OBSERVE));
    assert_int_equal(edhoc_coap_msg_find_option(&im, COAP_OPT_OBSERVE)->len, 0);
    assert_int_equal(oscore_unprotect_response(&cli, &cb, note[1], (size_t)nlen[1], out, sizeof out),
                     OSCORE_ERR_REPLAY);
    assert_int_equal(oscore_unprotect_response(&cli, &cb, note[2], (size_t)nlen[2], out, sizeof out),
                     OSCORE_ERR_REPLAY);
    assert_int_equal(oscore_unprotect_response(&cli, &cb, note[0], (size_t)nlen[0], out, sizeof out),
                     OSCORE_ERR_REPLAY);
    assert_true(oscore_unprotect_response(&cli, &cb, note[4], (size_t)nlen[4], out, sizeof out) > 0);
    assert_true(oscore_unprotect_response(&cli, &cb, note[5], (size_t)nlen[5], out, sizeof out) > 0);
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

/* ---- option classes ---- */

static void test_proxy_uri_split(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_GET;
    m.mid = 7;
    const char *uri = "coap://example.com/res%2Fx/b?q=1&r";
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_URI, (const uint8_t *)uri, strlen(uri)), 0);
    uint8_t req[BUF], preq[BUF], out[BUF];
    long req_len = edhoc_coap_msg_encode(&m, req, sizeof req);
    struct oscore_binding cb, sb;
    long n = oscore_protect_request(&cli, req, (size_t)req_len, preq, sizeof preq, &cb);
    assert_true(n > 0);
    struct coap_msg pm;
    assert_int_equal(edhoc_coap_msg_parse(preq, (size_t)n, &pm), 0);
    const struct coap_option *pu = edhoc_coap_msg_find_option(&pm, COAP_OPT_PROXY_URI);
    assert_non_null(pu);
    assert_int_equal(pu->len, strlen("coap://example.com"));
    assert_memory_equal(pu->value, "coap://example.com", pu->len);
    assert_null(memmem(preq, (size_t)n, "res", 3));
    long k = oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb);
    assert_true(k > 0);
    struct coap_msg um;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)k, &um), 0);
    assert_int_equal(um.option_count, 5);
    assert_int_equal(um.options[0].number, COAP_OPT_URI_PATH);
    assert_int_equal(um.options[0].len, 5);
    assert_memory_equal(um.options[0].value, "res/x", 5);
    assert_int_equal(um.options[1].number, COAP_OPT_URI_PATH);
    assert_memory_equal(um.options[1].value, "b", 1);
    assert_int_equal(um.options[2].number, COAP_OPT_URI_QUERY);
    assert_memory_equal(um.options[2].value, "q=1", 3);
    assert_int_equal(um.options[3].number, COAP_OPT_URI_QUERY);
    assert_int_equal(um.options[4].number, COAP_OPT_PROXY_URI);

    /* outer Class E options on a received message are discarded, outer
     * Uri-Host is kept */
    uint8_t r2[BUF];
    size_t r2len = sample_request(r2, 0);
    n = oscore_protect_request(&cli, r2, r2len, preq, sizeof preq, &cb);
    assert_int_equal(edhoc_coap_msg_parse(preq, (size_t)n, &pm), 0);
    static const uint8_t etag[2] = {0xee, 0xee};
    assert_int_equal(edhoc_coap_msg_add_option(&pm, COAP_OPT_ETAG, etag, 2), 0);
    uint8_t p2[BUF];
    long n2 = edhoc_coap_msg_encode(&pm, p2, sizeof p2);
    k = oscore_unprotect_request(&srv, p2, (size_t)n2, out, sizeof out, &sb);
    assert_int_equal(k, (long)r2len);
    assert_memory_equal(out, r2, r2len);

    /* nested OSCORE and non-requests are refused */
    assert_int_equal(oscore_protect_request(&cli, preq, (size_t)n, out, sizeof out, &cb),
                     OSCORE_ERR_NOT_OSCORE);
    uint8_t resp[BUF];
    size_t rl = sample_response(resp, NULL, 0, false, 0);
    assert_int_equal(oscore_protect_request(&cli, resp, rl, out, sizeof out, &cb), OSCORE_ERR_INVALID);
    /* a plain CoAP message is not an OSCORE one */
    assert_int_equal(oscore_unprotect_request(&srv, r2, r2len, out, sizeof out, &sb),
                     OSCORE_ERR_NOT_OSCORE);
    /* too small an output buffer */
    assert_int_equal(oscore_protect_request(&cli, r2, r2len, out, 20, &cb), OSCORE_ERR_BUFFER);
}

/* ---- Option classes (Section 4.1, Figure 5) ---- */

static void test_option_classes_figure5(void **state)
{
    (void)state;
    const unsigned E = OSCORE_CLASS_E, U = OSCORE_CLASS_U;
    /* RFC 8613 Figure 5 "Protection of CoAP Options", row by row. */
    static const struct {
        uint16_t number;
        const char *name;
        unsigned classes;
    } figure5[] = {
        {1, "If-Match", OSCORE_CLASS_E},
        {3, "Uri-Host", OSCORE_CLASS_U},
        {4, "ETag", OSCORE_CLASS_E},
        {5, "If-None-Match", OSCORE_CLASS_E},
        {6, "Observe", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {7, "Uri-Port", OSCORE_CLASS_U},
        {8, "Location-Path", OSCORE_CLASS_E},
        {9, "OSCORE", OSCORE_CLASS_U},
        {11, "Uri-Path", OSCORE_CLASS_E},
        {12, "Content-Format", OSCORE_CLASS_E},
        {14, "Max-Age", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {15, "Uri-Query", OSCORE_CLASS_E},
        {17, "Accept", OSCORE_CLASS_E},
        {20, "Location-Query", OSCORE_CLASS_E},
        {23, "Block2", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {27, "Block1", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {28, "Size2", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {35, "Proxy-Uri", OSCORE_CLASS_U},
        {39, "Proxy-Scheme", OSCORE_CLASS_U},
        {60, "Size1", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {258, "No-Response", OSCORE_CLASS_E | OSCORE_CLASS_U},
        /* RFC 9175 Section 2.2.1: Echo "MAY be an Inner or Outer option";
         * Section 3.2.1: "Request-Tag, like the block options, is both a
         * class E and a class U option". */
        {252, "Echo", OSCORE_CLASS_E | OSCORE_CLASS_U},
        {292, "Request-Tag", OSCORE_CLASS_E | OSCORE_CLASS_U},
    };
    size_t known = 0;
    for (size_t i = 0; i < sizeof figure5 / sizeof figure5[0]; i++) {
        if (oscore_option_class(figure5[i].number) != figure5[i].classes)
            fail_msg("%s (%u): class %#x, Figure 5 says %#x", figure5[i].name, figure5[i].number,
                     oscore_option_class(figure5[i].number), figure5[i].classes);
        /* Every option the codec names is in the table. */
        assert_string_equal(edhoc_coap_option_name(figure5[i].number), figure5[i].name);
    }
    for (unsigned n = 0; n <= 0xffff; n++) {
        unsigned c = oscore_option_class((uint16_t)n);
        /* Section 4: "There are currently no Class I options defined." */
        assert_false(c & OSCORE_CLASS_I);
        if (edhoc_coap_option_name((uint16_t)n)) {
            known++;
            continue;
        }
        /* Section 4.1: "Options that are unknown or for which OSCORE
         * processing is not defined SHALL be processed as Class E". */
        if (c != E)
            fail_msg("unknown option %u: class %#x, not E", n, c);
    }
    assert_int_equal(known, sizeof figure5 / sizeof figure5[0]);
    (void)U;

    /* No Class I options, so the external_aad's options are h'': the
     * Section 5.4 example (alg 10, request_kid 0x00, request_piv 0x25). */
    static const uint8_t want_aad[] = {0x83, 0x68, 0x45, 0x6e, 0x63, 0x72, 0x79, 0x70, 0x74,
                                       0x30, 0x40, 0x49, 0x85, 0x01, 0x81, 0x0a, 0x41, 0x00,
                                       0x41, 0x25, 0x40};
    uint8_t aad[64];
    static const uint8_t kid[1] = {0x00}, piv[1] = {0x25};
    assert_int_equal(oscore_aad(10, kid, 1, piv, 1, aad, sizeof aad), (long)sizeof want_aad);
    assert_memory_equal(aad, want_aad, sizeof want_aad);
}

/* Outer options after protect: Class U ones stay, Class E ones move in. */
static void test_class_u_outer_class_e_inner(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_GET;
    static const uint8_t port[2] = {0x16, 0x34}; /* 5684 */
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_HOST, (const uint8_t *)"h.example", 9), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PORT, port, 2), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_SCHEME, (const uint8_t *)"coap", 4), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)"a", 1), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_MAX_AGE, port, 1), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_IF_MATCH, port, 1), 0);
    uint8_t req[BUF], preq[BUF], out[BUF];
    long req_len = edhoc_coap_msg_encode(&m, req, sizeof req);
    struct oscore_binding cb, sb;
    long n = oscore_protect_request(&cli, req, (size_t)req_len, preq, sizeof preq, &cb);
    assert_true(n > 0);
    struct coap_msg pm;
    assert_int_equal(edhoc_coap_msg_parse(preq, (size_t)n, &pm), 0);
    /* Section 4.1.3.2: "In order to support forward proxy operations,
     * Proxy-Scheme, Uri-Host, and Uri-Port need to be Class U"; the rest
     * (Class E, Section 4.1.1) is removed from the OSCORE message. */
    assert_int_equal(pm.option_count, 4);
    assert_int_equal(pm.options[0].number, COAP_OPT_URI_HOST);
    assert_int_equal(pm.options[1].number, COAP_OPT_URI_PORT);
    assert_int_equal(pm.options[2].number, COAP_OPT_OSCORE);
    assert_int_equal(pm.options[3].number, COAP_OPT_PROXY_SCHEME);

    /* Class U is not protected: a proxy may rewrite Uri-Host and the
     * request still verifies, which is why "Different servers SHALL have
     * different security contexts" (Section 4.1.3.2). */
    pm.options[0].value = (const uint8_t *)"other.example";
    pm.options[0].len = 13;
    uint8_t moved[BUF];
    long mn = edhoc_coap_msg_encode(&pm, moved, sizeof moved);
    long k = oscore_unprotect_request(&srv, moved, (size_t)mn, out, sizeof out, &sb);
    assert_true(k > 0);
    struct coap_msg um;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)k, &um), 0);
    const struct coap_option *host = edhoc_coap_msg_find_option(&um, COAP_OPT_URI_HOST);
    assert_non_null(host);
    assert_int_equal(host->len, 13);
    assert_memory_equal(host->value, "other.example", 13);
    assert_non_null(edhoc_coap_msg_find_option(&um, COAP_OPT_IF_MATCH));
    assert_non_null(edhoc_coap_msg_find_option(&um, COAP_OPT_MAX_AGE));
    assert_non_null(edhoc_coap_msg_find_option(&um, COAP_OPT_PROXY_SCHEME));
    /* The OSCORE option is consumed (Section 8.2 step 1). */
    assert_null(edhoc_coap_msg_find_option(&um, COAP_OPT_OSCORE));
}

/* The outer Proxy-Uri of a protected request, and its inner options. */
static long proxy_uri_outer(struct oscore_context *cli, const char *uri, char *outer, size_t cap,
                            struct coap_msg *inner, uint8_t *inner_buf, struct oscore_context *srv)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_GET;
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_PROXY_URI, (const uint8_t *)uri, strlen(uri)),
                     0);
    uint8_t req[BUF], preq[BUF];
    long req_len = edhoc_coap_msg_encode(&m, req, sizeof req);
    struct oscore_binding cb, sb;
    long n = oscore_protect_request(cli, req, (size_t)req_len, preq, sizeof preq, &cb);
    if (n < 0)
        return n;
    struct coap_msg pm;
    assert_int_equal(edhoc_coap_msg_parse(preq, (size_t)n, &pm), 0);
    const struct coap_option *pu = edhoc_coap_msg_find_option(&pm, COAP_OPT_PROXY_URI);
    assert_non_null(pu);
    assert_true(pu->len < cap);
    memcpy(outer, pu->value, pu->len);
    outer[pu->len] = '\0';
    long k = oscore_unprotect_request(srv, preq, (size_t)n, inner_buf, BUF, &sb);
    assert_true(k > 0);
    assert_int_equal(edhoc_coap_msg_parse(inner_buf, (size_t)k, inner), 0);
    return 0;
}

static void test_proxy_uri_decomposition(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    char outer[1100];
    struct coap_msg in;
    uint8_t inner[BUF];
    /* Section 4.1.3.3's example: Proxy-Uri = "coap://example.com/resource?q=1"
     * is split into Proxy-Scheme "coap", Uri-Host "example.com", Uri-Port
     * 5683 (default), Uri-Path "resource", Uri-Query "q=1"; "The remaining
     * options are composed into the Proxy-Uri included in the options part
     * of the OSCORE message, which has value: Proxy-Uri = "coap://example.com"". */
    assert_int_equal(proxy_uri_outer(&cli, "coap://example.com/resource?q=1", outer, sizeof outer,
                                     &in, inner, &srv),
                     0);
    assert_string_equal(outer, "coap://example.com");
    const struct coap_option *path = edhoc_coap_msg_find_option(&in, COAP_OPT_URI_PATH);
    const struct coap_option *query = edhoc_coap_msg_find_option(&in, COAP_OPT_URI_QUERY);
    assert_non_null(path);
    assert_non_null(query);
    assert_int_equal(path->len, 8);
    assert_memory_equal(path->value, "resource", 8);
    assert_int_equal(query->len, 3);
    assert_memory_equal(query->value, "q=1", 3);

    /* Composition by RFC 7252 Section 6.5 steps 1-5: scheme and host
     * lowercased (Section 6.4 decomposes them so), ":" port only "If |port|
     * is not the default port for the scheme", in decimal. */
    static const struct {
        const char *in, *outer;
    } ok[] = {
        {"coap://EXAMPLE.com:5683/a", "coap://example.com"},
        {"COAPS://example.com:5684", "coaps://example.com"},
        {"coaps://example.com:5683/x", "coaps://example.com:5683"},
        {"coap://example.com:05684/x", "coap://example.com:5684"},
        {"coap://example.com:/x", "coap://example.com"},
        {"coap://[2001:DB8::1]:61616/x?y", "coap://[2001:db8::1]:61616"},
        {"coap://[2001:db8::1]/x", "coap://[2001:db8::1]"},
        {"coap+tcp://h:5683/", "coap+tcp://h"},
        {"http://example.com:80/x", "http://example.com"},
        {"https://example.com:8443", "https://example.com:8443"},
        {"coap://192.0.2.1:0/", "coap://192.0.2.1:0"},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        assert_int_equal(proxy_uri_outer(&cli, ok[i].in, outer, sizeof outer, &in, inner, &srv), 0);
        if (strcmp(outer, ok[i].outer) != 0)
            fail_msg("%s: outer Proxy-Uri %s, expected %s", ok[i].in, outer, ok[i].outer);
    }
    /* What Section 6.4 cannot decompose into options is refused: a
     * userinfo, a port that is no 16-bit number, no host, an unclosed
     * IP-literal, a fragment. */
    static const char *bad[] = {
        "coap://user@example.com/x", "coap://example.com:70000/", "coap://example.com:8a/",
        "coap:///x",                 "coap://[::1/x",             "coap://h/x#frag",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long rc = proxy_uri_outer(&cli, bad[i], outer, sizeof outer, &in, inner, &srv);
        if (rc != OSCORE_ERR_INVALID)
            fail_msg("%s: %ld, expected OSCORE_ERR_INVALID", bad[i], rc);
    }
}

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
    long r1 = oscore_b2_server_request1(&srv, with_queue(c3_idc, 4), &scfg, preq1, (size_t)n1,
                                        1000, resp1, sizeof resp1);
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
    assert_int_equal(oscore_unprotect_request(&srv_next, preq2, (size_t)n2, plain, sizeof plain,
                                              &sb2),
                     OSCORE_ERR_REPLAY);

    /* Step 5: response #2 "using the same security context as in the
     * request". */
    uint8_t r[BUF];
    size_t rl = sample_response(r, (const uint8_t *)"ok", 2, false, 0);
    long p2 = oscore_protect_response(&srv_next, &sb, r, rl, false, resp2, sizeof resp2);
    assert_true(p2 > 0);
    assert_int_equal(oscore_b2_client_response2(&cl, &next, &b2, resp2, (size_t)p2, out, sizeof out),
                     (long)rl);
    assert_memory_equal(out, r, rl);
    assert_int_equal(cl.state, OSCORE_B2_CLIENT_DONE);
    assert_int_equal(oscore_b2_client_response2(&cl, &next, &b2, resp2, (size_t)p2, out, sizeof out),
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
        assert_int_equal(oscore_b2_client_response2(&cl, &next, &b2, r2, (size_t)pr, out, sizeof out),
                         (long)rl);
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
            .master_secret = ccfg.master_secret, .master_secret_len = 16,
            .master_salt = ccfg.master_salt, .master_salt_len = 8,
            .sender_id = scfg.sender_id, .sender_id_len = 1,
            .recipient_id = NULL, .recipient_id_len = 0,
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
    assert_int_equal(oscore_b2_server_request1(&srv, test_backend(), &other, p1, (size_t)n1, 0, r1,
                                               sizeof r1),
                     OSCORE_ERR_CONTEXT_NOT_FOUND);
    /* A request that does not verify leaves no R2 behind. */
    memcpy(tmp, p1, (size_t)n1);
    tmp[n1 - 1] ^= 1;
    assert_int_equal(oscore_b2_server_request1(&srv, test_backend(), &scfg, tmp, (size_t)n1, 0, r1,
                                               sizeof r1),
                     OSCORE_ERR_DECRYPT);
    assert_int_equal(srv.pending, 0);

    /* Wrong R2: the response's 'kid context' altered in transit gives
     * another ID2, and the response does not verify. */
    long k1 = oscore_b2_server_request1(&srv, test_backend(), &scfg, p1, (size_t)n1, 0, r1,
                                        sizeof r1);
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
    assert_int_equal(oscore_b2_client_response2(&fresh, &next, &b2, r1, (size_t)k1, out, sizeof out),
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
    assert_int_equal(oscore_b2_server_request1(&s2, test_backend(), &long_s, tmp, (size_t)ln, 0, r1,
                                               sizeof r1),
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
        assert_true(oscore_b2_server_request1(&full, test_backend(), &scfg, p1, (size_t)n1, 100,
                                              r1, sizeof r1) > 0);
    }
    n1 = oscore_protect_request(&cur, req, req_len, p1, sizeof p1, &b1);
    assert_int_equal(oscore_b2_server_request1(&full, test_backend(), &scfg, p1, (size_t)n1, 100,
                                               r1, sizeof r1),
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

/* ---- OSCORE option parser ---- */

static void test_option_parse(void **state)
{
    (void)state;
    struct oscore_option o;
    assert_int_equal(oscore_option_parse(NULL, 0, &o), 0);
    assert_int_equal(o.piv_len, 0);
    assert_false(o.has_kid);
    static const uint8_t c6[] = {0x19, 0x14, 0x08, 0x37, 0xcb, 0xf3, 0x21, 0x00, 0x17, 0xa2, 0xd3};
    assert_int_equal(oscore_option_parse(c6, sizeof c6, &o), 0);
    assert_int_equal(o.piv_len, 1);
    assert_int_equal(o.piv[0], 0x14);
    assert_true(o.has_kid_context);
    assert_int_equal(o.kid_context_len, 8);
    assert_true(o.has_kid);
    assert_int_equal(o.kid_len, 0);
    uint8_t enc[32];
    assert_int_equal(oscore_option_encode(&o, enc, sizeof enc), sizeof c6);
    assert_memory_equal(enc, c6, sizeof c6);
    assert_int_equal(oscore_option_encode(&o, enc, 5), OSCORE_ERR_BUFFER);

    static const struct {
        uint8_t v[8];
        size_t len;
    } bad[] = {
        {{0x00}, 1},             /* all-zero flags must be an empty value */
        {{0x20}, 1},             /* reserved bit */
        {{0x80, 0x01}, 2},       /* reserved bit */
        {{0x06, 1, 2, 3, 4, 5, 6}, 7}, /* n = 6 */
        {{0x07}, 1},             /* n = 7 */
        {{0x02, 0x01}, 2},       /* truncated Partial IV */
        {{0x10}, 1},             /* kid context length missing */
        {{0x11, 0x00, 0x05, 0x01}, 4}, /* kid context truncated */
        {{0x01, 0x00, 0x01}, 3}, /* trailing byte without kid flag */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (oscore_option_parse(bad[i].v, bad[i].len, &o) != OSCORE_ERR_BAD_OPTION)
            fail_msg("bad option %zu accepted", i);
    }

    /* and in a message: 4.02 Bad Option back */
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    static const uint8_t msg[] = {0x52, 0x02, 0x00, 0x05, 0xab, 0xcd, 0x91, 0x20, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    uint8_t out[BUF];
    struct oscore_binding b;
    assert_int_equal(oscore_unprotect_request(&srv, msg, sizeof msg, out, sizeof out, &b),
                     OSCORE_ERR_BAD_OPTION);
    long e = oscore_error_response(OSCORE_ERR_BAD_OPTION, msg, sizeof msg, out, sizeof out);
    static const uint8_t want[] = {0x52, 0x82, 0x00, 0x05, 0xab, 0xcd, 0xd0, 0x01, 0xff,
                                   'F', 'a', 'i', 'l', 'e', 'd', ' ', 't', 'o', ' ', 'd',
                                   'e', 'c', 'o', 'd', 'e', ' ', 'C', 'O', 'S', 'E'};
    assert_int_equal(e, sizeof want);
    assert_memory_equal(out, want, sizeof want);
    /* no payload: malformed */
    static const uint8_t nopayload[] = {0x40, 0x02, 0x00, 0x05, 0x93, 0x09, 0x14, 0x01};
    assert_int_equal(oscore_unprotect_request(&srv, nopayload, sizeof nopayload, out, sizeof out, &b),
                     OSCORE_ERR_BAD_OPTION);
    /* request without kid / without Partial IV */
    static const uint8_t nokid[] = {0x40, 0x02, 0x00, 0x05, 0x92, 0x01, 0x14, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(oscore_unprotect_request(&srv, nokid, sizeof nokid, out, sizeof out, &b),
                     OSCORE_ERR_BAD_OPTION);
    /* unknown kid: 4.01 "Security context not found" */
    static const uint8_t otherkid[] = {0x40, 0x02, 0x00, 0x05, 0x93, 0x09, 0x14, 0x07, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(oscore_unprotect_request(&srv, otherkid, sizeof otherkid, out, sizeof out, &b),
                     OSCORE_ERR_CONTEXT_NOT_FOUND);
    e = oscore_error_response(OSCORE_ERR_CONTEXT_NOT_FOUND, otherkid, sizeof otherkid, out, sizeof out);
    assert_int_equal(e, 7 + strlen("Security context not found"));
    assert_int_equal(out[0], 0x60);
    assert_int_equal(out[1], COAP_CODE_UNAUTHORIZED);
    assert_memory_equal(out + 7, "Security context not found", e - 7);
    /* right kid, wrong ciphertext: 4.00 "Decryption failed" */
    static const uint8_t f3[] = {0x40, 0x02, 0x00, 0x05, 0x93, 0x09, 0x14, 0x01, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(oscore_unprotect_request(&srv, f3, sizeof f3, out, sizeof out, &b),
                     OSCORE_ERR_DECRYPT);
    e = oscore_error_response(OSCORE_ERR_DECRYPT, f3, sizeof f3, out, sizeof out);
    assert_int_equal(out[1], COAP_CODE_BAD_REQUEST);
    assert_int_equal(e, 7 + strlen("Decryption failed"));
    assert_memory_equal(out + 7, "Decryption failed", e - 7);
    assert_int_equal(oscore_error_response(OSCORE_ERR_SSN_EXHAUSTED, f3, sizeof f3, out, sizeof out),
                     OSCORE_ERR_INVALID);
}

/* ---- CoAP codec ---- */

static void test_coap_msg_codec(void **state)
{
    (void)state;
    struct vec_scope v = vec_object(appc, "C.4");
    uint8_t msg[BUF], out[BUF];
    size_t len = vec_hex(v, "unprotected_request", msg, sizeof msg);
    struct coap_msg m;
    assert_int_equal(edhoc_coap_msg_parse(msg, len, &m), 0);
    assert_int_equal(m.code, COAP_CODE_GET);
    assert_int_equal(m.option_count, 2);
    assert_int_equal(m.options[0].number, COAP_OPT_URI_HOST);
    assert_int_equal(m.options[1].number, COAP_OPT_URI_PATH);
    assert_int_equal(edhoc_coap_msg_encode(&m, out, sizeof out), (long)len);
    assert_memory_equal(out, msg, len);
    assert_int_equal(edhoc_coap_msg_encode(&m, out, len - 1), COAP_MSG_ERR_BUFFER);
    /* long deltas and lengths round-trip */
    static uint8_t big[600];
    memset(big, 'x', sizeof big);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_NO_RESPONSE, big, 300), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, 2000, big, 20), 0);
    long n = edhoc_coap_msg_encode(&m, out, sizeof out);
    assert_true(n > 0);
    struct coap_msg m2;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)n, &m2), 0);
    assert_int_equal(m2.option_count, 4);
    assert_int_equal(m2.options[2].number, COAP_OPT_NO_RESPONSE);
    assert_int_equal(m2.options[2].len, 300);
    assert_int_equal(m2.options[3].number, 2000);
    static const uint8_t bads[][6] = {
        {0x80, 0x01, 0, 0},         /* version 2 */
        {0x49, 0x01, 0, 0},         /* token length 9 */
        {0x42, 0x01, 0, 0, 1},      /* token truncated */
        {0x40, 0x01, 0, 0, 0xf0},   /* reserved nibble */
        {0x40, 0x01, 0, 0, 0xff},   /* marker without payload */
        {0x40, 0x01, 0, 0, 0x13, 1}, /* option value truncated */
    };
    static const size_t badlen[] = {4, 4, 5, 5, 5, 6};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(edhoc_coap_msg_parse(bads[i], badlen[i], &m), COAP_MSG_ERR_MALFORMED);
    uint8_t many[4 + 40];
    many[0] = 0x40; many[1] = 1; many[2] = 0; many[3] = 0;
    for (int i = 0; i < 40; i++)
        many[4 + i] = 0x00; /* 40 options number 0 */
    assert_int_equal(edhoc_coap_msg_parse(many, sizeof many, &m), COAP_MSG_ERR_TOO_MANY);
    assert_string_equal(edhoc_coap_option_name(COAP_OPT_ECHO), "Echo");
}

/* ---- configuration ---- */

static void test_config_parse(void **state)
{
    (void)state;
    const char *text =
        "# C.1 client\n"
        "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
        "master_salt,hex,\"9e7ca92223786340\"\r\n"
        "\n"
        "sender_id,hex,\"\"\n"
        "recipient_id,hex,01\n"
        "replay_window,integer,30\n"
        "aead_alg,text,\"AES-CCM-16-64-128\"\n"
        "hkdf_alg,integer,-10\n"
        "ssn_freq,integer,8\n"
        "rfc8613_b_1_2,bool,true\n";
    struct oscore_config cfg;
    struct oscore_config_error err;
    assert_int_equal(oscore_config_parse(text, strlen(text), &cfg, &err), 0);
    assert_int_equal(cfg.master_secret_len, 16);
    assert_int_equal(cfg.sender_id_len, 0);
    assert_int_equal(cfg.recipient_id_len, 1);
    assert_int_equal(cfg.replay_window, 30);
    assert_int_equal(cfg.ssn_freq, 8);
    assert_int_equal(cfg.aead_alg, 10);
    assert_int_equal(cfg.hkdf_alg, EDHOC_COSE_SHA256);
    struct oscore_context c;
    assert_int_equal(oscore_context_init_config(&c, test_backend(), &cfg), 0);
    const uint8_t *p;
    oscore_context_sender_key(&c, &p);
    uint8_t want[16];
    vec_hex(vec_object(appc, "C.1.1"), "sender_key", want, sizeof want);
    assert_memory_equal(p, want, 16);

    /* libcoap's example files (ascii IDs, complex recipient) */
    const char *complex =
        "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
        "sender_id,ascii,\"client\"\n"
        "aead_alg,integer,30\n"
        "hkdf_alg,text,\"HKDF-SHA-384\"\n"
        "complex_recipient,config,'\n"
        "# Recipient ID\n"
        "recipient_id,ascii,\"server\"\n"
        "silent_server,bool,true\n"
        "'\n";
    assert_int_equal(oscore_config_parse(complex, strlen(complex), &cfg, &err), 0);
    assert_int_equal(cfg.recipient_id_len, 6);
    assert_memory_equal(cfg.recipient_id, "server", 6);
    assert_int_equal(cfg.aead_alg, 30);
    assert_int_equal(cfg.hkdf_alg, EDHOC_COSE_SHA384);

    static const struct {
        const char *text;
        unsigned line;
        const char *word; /* in the message */
    } bad[] = {
        {"master_secret,hex,0102\nsender_id,hex,01\nrecipient_id,hex,0\n", 3, "odd"},
        {"master_secret,hex,01zz\n", 1, "not hex"},
        {"# c\nmaster_secret,hex,01\nbogus,hex,01\n", 3, "unknown keyword"},
        {"master_secret,base64,01\n", 1, "unknown encoding"},
        {"master_secret\n", 1, "keyword,encoding,value"},
        {"master_secret,integer,5\n", 1, "hex or ascii"},
        {"master_secret,hex,01\nreplay_window,integer,100\n", 2, "out of range"},
        {"master_secret,hex,01\nreplay_window,integer,3x\n", 2, "not an integer"},
        {"master_secret,hex,01\naead_alg,text,\"AES-XYZ\"\n", 2, "unsupported"},
        {"master_secret,hex,01\naead_alg,integer,99\n", 2, "unsupported"},
        {"master_secret,hex,01\nhkdf_alg,integer,-11\n", 2, "unsupported"},
        {"master_secret,hex,01\nsender_id,hex,0102030405060708\n", 2, "longer"},
        {"master_secret,hex,01\nrecipient_id,hex,01\nrecipient_id,hex,02\n", 3, "second recipient_id"},
        {"master_secret,hex,01\nbreak_sender_key,bool,true\n", 2, "only false"},
        {"master_secret,hex,01\nrfc8613_b_2,bool,maybe\n", 2, "true or false"},
        {"master_secret,hex,01\nsilent_server,bool,maybe\n", 2, "true or false"},
        {"master_secret,hex,01\ncomplex_sender,config,'\nsender_id,hex,01\n", 2, "not closed"},
        {"master_secret,hex,01\n'\n", 2, "closing"},
        {"master_secret,hex,01\nsender_id,hex,01\n", 0, "recipient_id missing"},
        {"sender_id,hex,01\nrecipient_id,hex,02\n", 0, "master_secret missing"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = oscore_config_parse(bad[i].text, strlen(bad[i].text), &cfg, &err);
        if (rc != OSCORE_ERR_CONFIG || err.line != bad[i].line || !strstr(err.message, bad[i].word))
            fail_msg("config %zu: rc %d line %u '%s'", i, rc, err.line, err.message);
    }
}

/* A configuration refused on a late line must not leave the master secret
 * it already read in the caller's struct, and an error about a secret's
 * encoding must not quote the secret. */
static void test_config_failure_leaves_no_secret(void **state)
{
    (void)state;
    struct oscore_config cfg;
    struct oscore_config_error err;
    static const char late[] = "master_secret,hex,0102030405060708\n"
                               "sender_id,hex,01\nrecipient_id,hex,02\nbogus,hex,01\n";
    memset(&cfg, 0xee, sizeof cfg);
    assert_int_equal(oscore_config_parse(late, strlen(late), &cfg, &err), OSCORE_ERR_CONFIG);
    assert_int_equal(err.line, 4);
    static const uint8_t zero[sizeof cfg.master_secret] = {0};
    assert_memory_equal(cfg.master_secret, zero, sizeof cfg.master_secret);
    assert_int_equal(cfg.master_secret_len, 0);

    static const char bad_hex[] = "master_secret,hex,c0ffee0badc0de0fzz\n";
    assert_int_equal(oscore_config_parse(bad_hex, strlen(bad_hex), &cfg, &err),
                     OSCORE_ERR_CONFIG);
    assert_non_null(strstr(err.message, "not hex"));
    assert_null(strstr(err.message, "c0ffee"));
    assert_non_null(strstr(err.message, "digit 17"));
}

static int setup(void **state)
{
    (void)state;
    /* Once: main runs the group once per backend. */
    static bool loaded;
    if (!loaded) {
        appc = vec_load("rfc8613-appendix-c.json");
        trace2 = vec_load("rfc9529-trace2.json");
        loaded = true;
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_size),
        cmocka_unit_test(test_derivation_appendix_c),
        cmocka_unit_test(test_request_c4),
        cmocka_unit_test(test_request_c5),
        cmocka_unit_test(test_request_c6),
        cmocka_unit_test(test_kid_context_mismatch),
        cmocka_unit_test(test_response_c7),
        cmocka_unit_test(test_response_c8),
        cmocka_unit_test(test_trace2_context),
        cmocka_unit_test(test_round_trip_every_aead),
        cmocka_unit_test(test_any_size_round_trip),
        cmocka_unit_test(test_plaintext_size_edges),
        cmocka_unit_test(test_buffer_rules),
        cmocka_unit_test(test_key_lengths),
        cmocka_unit_test(test_every_flipped_byte_fails),
        cmocka_unit_test(test_replay_rejected),
        cmocka_unit_test(test_window_slides),
        cmocka_unit_test(test_ssn_limit),
        cmocka_unit_test(test_persistence_crash_anywhere),
        cmocka_unit_test(test_reservation_shared_context),
        cmocka_unit_test(test_echo_recovery),
        cmocka_unit_test(test_observe_notifications),
        cmocka_unit_test(test_proxy_uri_split),
        cmocka_unit_test(test_option_parse),
        cmocka_unit_test(test_coap_msg_codec),
        cmocka_unit_test(test_config_parse),
        cmocka_unit_test(test_failed_unprotect_keeps_window),
        cmocka_unit_test(test_second_proxy_uri_refused),
        cmocka_unit_test(test_resume_past_limit_leaves_context_exhausted),
        cmocka_unit_test(test_config_failure_leaves_no_secret),
        cmocka_unit_test(test_option_classes_figure5),
        cmocka_unit_test(test_class_u_outer_class_e_inner),
        cmocka_unit_test(test_proxy_uri_decomposition),
        cmocka_unit_test(test_b2_known_answer),
        cmocka_unit_test(test_b2_round_trips),
        cmocka_unit_test(test_b2_refusals),
    };
    int failed = cmocka_run_group_tests_name("openssl", tests, setup, NULL);
    const struct CMUnitTest vector_tests[] = {
        cmocka_unit_test(test_derivation_appendix_c),
        cmocka_unit_test(test_request_c4),
        cmocka_unit_test(test_request_c5),
        cmocka_unit_test(test_request_c6),
        cmocka_unit_test(test_trace2_context),
        cmocka_unit_test(test_b2_known_answer),
    };
    test_backend = edhoc_crypto_sodium;
    failed += cmocka_run_group_tests_name("sodium", vector_tests, setup, NULL);
    test_backend = edhoc_crypto_auto;
    failed += cmocka_run_group_tests_name("auto", vector_tests, setup, NULL);
    return failed;
}
