/*
 * OSCORE (RFC 8613) contexts against the RFCs: RFC 8613 Appendix C
 * byte-exact in both roles (derivation C.1-C.3, requests C.4-C.6, responses
 * C.7-C.8), a kid context mismatch, and the RFC 9529 trace 2 context, with
 * OpenSSL, then the vectors again with libsodium and with the composite.
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

#include "oscore_test_common.h"

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
    assert_int_equal(oscore_context_set_ssn(&cli, (uint64_t)vec_int(v, "sender_sequence_number")),
                     0);
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

    assert_int_equal(oscore_context_set_ssn(&srv, (uint64_t)vec_int(v, "sender_sequence_number")),
                     0);
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
    assert_int_equal(oscore_context_init_edhoc(&cli, test_backend(), ms, ms_len, salt, salt_len,
                                               c_r, cr_len, c_i, ci_len, aead, hash),
                     0);
    assert_int_equal(oscore_context_init_edhoc(&srv, test_backend(), ms, ms_len, salt, salt_len,
                                               c_i, ci_len, c_r, cr_len, aead, hash),
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
    assert_int_equal(oscore_context_init_edhoc(&bad, test_backend(), ms, ms_len, salt, salt_len,
                                               c_i, ci_len, c_r, cr_len, 0, hash),
                     OSCORE_ERR_UNSUPPORTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_size),   cmocka_unit_test(test_derivation_appendix_c),
        cmocka_unit_test(test_request_c4),     cmocka_unit_test(test_request_c5),
        cmocka_unit_test(test_request_c6),     cmocka_unit_test(test_kid_context_mismatch),
        cmocka_unit_test(test_response_c7),    cmocka_unit_test(test_response_c8),
        cmocka_unit_test(test_trace2_context),
    };
    int failed = cmocka_run_group_tests_name("openssl", tests, setup, NULL);
    const struct CMUnitTest vector_tests[] = {
        cmocka_unit_test(test_derivation_appendix_c),
        cmocka_unit_test(test_request_c4),
        cmocka_unit_test(test_request_c5),
        cmocka_unit_test(test_request_c6),
        cmocka_unit_test(test_trace2_context),
    };
    test_backend = edhoc_crypto_sodium;
    failed += cmocka_run_group_tests_name("sodium", vector_tests, setup, NULL);
    test_backend = edhoc_crypto_auto;
    failed += cmocka_run_group_tests_name("auto", vector_tests, setup, NULL);
    return failed;
}
