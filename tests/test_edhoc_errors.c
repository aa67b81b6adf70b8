/*
 * EDHOC core tests, the failure paths: bad MAC and signature in messages 2
 * and 3, bad ciphertexts 3 and 4, unknown and untrusted credentials, the
 * error message (RFC 9528 Section 6), hostile map counts, and the wiping
 * and consistency of what a failed step received.
 */
#include "edhoc_test_common.h"

static void test_bad_mac_2(void **state)
{
    (void)state;
    int suites[] = {0, 2};
    for (size_t k = 0; k < 2; k++) {
        struct pair *p = pair_new(3, suites[k], false);
        pair_to_verify_m2(p);
        p->m2[p->n2 - 1] ^= 0x01; /* last byte of MAC_2 */
        assert_int_equal(edhoc_initiator_process_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx), 0);
        assert_int_equal(edhoc_initiator_verify_message_2(&p->i, &p->rx, &p->pr.cred),
                         EDHOC_ERR_MAC);
        assert_int_equal(edhoc_session_state(&p->i), EDHOC_STATE_ERROR);
        assert_int_equal(edhoc_session_error(&p->i), EDHOC_ERR_MAC);
        assert_error_text(&p->i, "MAC_2 verification failed");
        /* a failed session is dead */
        assert_int_equal(edhoc_initiator_prepare_message_3(&p->i, p->m3, sizeof p->m3),
                         EDHOC_ERR_STATE);
        free(p);
    }
}

static void test_bad_signature_2(void **state)
{
    (void)state;
    int suites[] = {0, 2, 24, 25};
    for (size_t k = 0; k < 4; k++) {
        struct pair *p = pair_new(0, suites[k], false);
        pair_to_verify_m2(p);
        p->m2[p->n2 - 1] ^= 0x80;
        assert_int_equal(edhoc_initiator_process_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx), 0);
        assert_int_equal(edhoc_initiator_verify_message_2(&p->i, &p->rx, &p->pr.cred),
                         EDHOC_ERR_SIGNATURE);
        assert_error_text(&p->i, "Signature_or_MAC_2 verification failed");
        free(p);
    }
}

/* The responder resolves ID_CRED_I to a credential with another key. */
static void test_bad_mac_and_signature_3(void **state)
{
    (void)state;
    for (int method = 0; method <= 3; method++) {
        struct pair *p = pair_new(method, 2, false);
        pair_to_verify_m2(p);
        assert_int_equal(edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx,
                                                          resolve_expected, &p->er),
                         0);
        p->n3 = edhoc_initiator_prepare_message_3(&p->i, p->m3, sizeof p->m3);
        assert_true(p->n3 > 0);
        struct peer other;
        make_peer(&other, p->pi.key.curve, 0x2b, false);
        assert_int_equal(edhoc_responder_process_message_3(&p->r, p->m3, (size_t)p->n3, &p->rx), 0);
        bool sdh = method == 2 || method == 3;
        assert_int_equal(edhoc_responder_verify_message_3(&p->r, &p->rx, &other.cred),
                         sdh ? EDHOC_ERR_MAC : EDHOC_ERR_SIGNATURE);
        assert_error_text(&p->r, sdh ? "MAC_3 verification failed"
                                     : "Signature_or_MAC_3 verification failed");
        free(p);
    }
}

static void test_bad_ciphertext_3_and_4(void **state)
{
    (void)state;
    struct pair *p = pair_new(3, 0, false);
    pair_to_verify_m2(p);
    assert_int_equal(edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx,
                                                      resolve_expected, &p->er),
                     0);
    p->n3 = edhoc_initiator_prepare_message_3(&p->i, p->m3, sizeof p->m3);
    p->m3[3] ^= 0x04;
    assert_int_equal(edhoc_responder_process_message_3(&p->r, p->m3, (size_t)p->n3, &p->rx),
                     EDHOC_ERR_DECRYPT);
    assert_error_text(&p->r, "message_3: CIPHERTEXT_3 did not decrypt");
    free(p);

    p = pair_new(0, 2, false);
    pair_to_verify_m2(p);
    pair_complete(p);
    /* a fresh pair for message_4 tampering */
    free(p);
    p = pair_new(0, 2, false);
    pair_to_verify_m2(p);
    assert_int_equal(edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx,
                                                      resolve_expected, &p->er),
                     0);
    p->n3 = edhoc_initiator_prepare_message_3(&p->i, p->m3, sizeof p->m3);
    assert_int_equal(edhoc_responder_handle_message_3(&p->r, p->m3, (size_t)p->n3, &p->rx,
                                                      resolve_expected, &p->ei),
                     0);
    p->n4 = edhoc_responder_prepare_message_4(&p->r, p->m4, sizeof p->m4);
    p->m4[1] ^= 0x01;
    assert_int_equal(edhoc_initiator_process_message_4(&p->i, p->m4, (size_t)p->n4, &p->rx),
                     EDHOC_ERR_DECRYPT);
    free(p);
}

static int resolve_none(void *ctx, const uint8_t *id_cred, size_t len,
                        const struct edhoc_cred **cred)
{
    (void)ctx, (void)id_cred, (void)len, (void)cred;
    return EDHOC_CRED_ERR_UNKNOWN;
}

static int resolve_untrusted(void *ctx, const uint8_t *id_cred, size_t len,
                             const struct edhoc_cred **cred)
{
    (void)ctx, (void)id_cred, (void)len, (void)cred;
    return EDHOC_CRED_ERR_UNTRUSTED;
}

static void test_unknown_credential(void **state)
{
    (void)state;
    static const uint8_t code3[] = {0x03, 0xf5};
    uint8_t err[EDHOC_MAX_ERROR_MESSAGE];

    struct pair *p = pair_new(0, 0, false);
    pair_to_verify_m2(p);
    assert_int_equal(
        edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx, resolve_none, NULL),
        EDHOC_ERR_UNKNOWN_CREDENTIAL);
    assert_int_equal(edhoc_session_write_error(&p->i, err, sizeof err), 2);
    assert_memory_equal(err, code3, 2);
    free(p);

    p = pair_new(3, 2, false);
    pair_to_verify_m2(p);
    assert_int_equal(edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx,
                                                      resolve_expected, &p->er),
                     0);
    p->n3 = edhoc_initiator_prepare_message_3(&p->i, p->m3, sizeof p->m3);
    assert_int_equal(edhoc_responder_process_message_3(&p->r, p->m3, (size_t)p->n3, &p->rx), 0);
    assert_int_equal(edhoc_responder_verify_message_3(&p->r, &p->rx, NULL),
                     EDHOC_ERR_UNKNOWN_CREDENTIAL);
    assert_int_equal(edhoc_session_write_error(&p->r, err, sizeof err), 2);
    assert_memory_equal(err, code3, 2);
    /* and the initiator, receiving it, aborts without answering */
    struct edhoc_error_info info;
    assert_int_equal(edhoc_session_process_error(&p->i, err, 2, &info), EDHOC_ERR_PEER_ERROR);
    assert_int_equal(info.code, 3);
    assert_int_equal(edhoc_session_write_error(&p->i, err, sizeof err), 0);
    free(p);

    /* an untrusted credential is not "unknown": error code 1 */
    p = pair_new(0, 0, false);
    pair_to_verify_m2(p);
    assert_int_equal(edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx,
                                                      resolve_untrusted, NULL),
                     EDHOC_ERR_CREDENTIAL);
    int ne = edhoc_session_write_error(&p->i, err, sizeof err);
    assert_true(ne > 2);
    assert_int_equal(err[0], 0x01);
    free(p);
}

static void test_error_messages(void **state)
{
    (void)state;
    struct edhoc_error_info info;
    uint8_t buf[64];

    static const uint8_t e1[] = {0x01, 0x63, 'a', 'b', 'c'};
    assert_int_equal(edhoc_error_message_parse(e1, sizeof e1, &info), 0);
    assert_int_equal(info.code, 1);
    assert_int_equal(info.text_len, 3);
    assert_memory_equal(info.text, "abc", 3);
    assert_int_equal(edhoc_error_message_write(buf, sizeof buf, 1, "abc", NULL, 0), 5);
    assert_memory_equal(buf, e1, 5);

    static const uint8_t e2[] = {0x02, 0x82, 0x06, 0x02};
    assert_int_equal(edhoc_error_message_parse(e2, sizeof e2, &info), 0);
    assert_int_equal(info.n_suites, 2);
    assert_int_equal(info.suites[1], 2);
    int s2[] = {6, 2};
    assert_int_equal(edhoc_error_message_write(buf, sizeof buf, 2, NULL, s2, 2), 4);
    assert_memory_equal(buf, e2, 4);

    static const uint8_t e2_bad[] = {0x02, 0x81, 0x06};
    assert_int_equal(edhoc_error_message_parse(e2_bad, sizeof e2_bad, &info),
                     EDHOC_ERR_SUITES_ENCODING);
    static const uint8_t e3_bad[] = {0x03, 0xf4};
    assert_int_equal(edhoc_error_message_parse(e3_bad, sizeof e3_bad, &info), EDHOC_ERR_MALFORMED);
    static const uint8_t e1_bad[] = {0x01, 0x41, 0x00};
    assert_int_equal(edhoc_error_message_parse(e1_bad, sizeof e1_bad, &info), EDHOC_ERR_MALFORMED);
    static const uint8_t trailing[] = {0x03, 0xf5, 0x00};
    assert_int_equal(edhoc_error_message_parse(trailing, sizeof trailing, &info),
                     EDHOC_ERR_TRAILING);
    static const uint8_t no_info[] = {0x01};
    assert_int_equal(edhoc_error_message_parse(no_info, sizeof no_info, &info),
                     EDHOC_ERR_MALFORMED);
    static const uint8_t long_code[] = {0x18, 0x01, 0x63, 'a', 'b', 'c'};
    assert_int_equal(edhoc_error_message_parse(long_code, sizeof long_code, &info),
                     EDHOC_ERR_NOT_DETERMINISTIC);
    /* unknown codes are reported as such, their ERR_INFO skipped */
    static const uint8_t e_unknown[] = {0x38, 0x63, 0xa1, 0x01, 0x82, 0x01, 0x02};
    assert_int_equal(edhoc_error_message_parse(e_unknown, sizeof e_unknown, &info), 0);
    assert_int_equal(info.code, -100);
    static const uint8_t e0[] = {0x00, 0xf5};
    assert_int_equal(edhoc_error_message_parse(e0, sizeof e0, &info), 0);
    assert_int_equal(info.code, 0);
    assert_true(edhoc_message_is_error(e0, sizeof e0));
    static const uint8_t m3[] = {0x41, 0x00};
    assert_false(edhoc_message_is_error(m3, sizeof m3));

    /* codes that cannot be written */
    assert_int_equal(edhoc_error_message_write(buf, sizeof buf, 0, NULL, NULL, 0), EDHOC_ERR_ARG);
    assert_int_equal(edhoc_error_message_write(buf, sizeof buf, 2, NULL, NULL, 0), EDHOC_ERR_ARG);
    assert_int_equal(edhoc_error_message_write(buf, 3, 1, "abc", NULL, 0), EDHOC_ERR_BUFFER);

    /* mapping */
    assert_int_equal(edhoc_error_code_for(EDHOC_ERR_WRONG_SUITE), 2);
    assert_int_equal(edhoc_error_code_for(EDHOC_ERR_UNKNOWN_CREDENTIAL), 3);
    assert_int_equal(edhoc_error_code_for(EDHOC_ERR_MAC), 1);
    assert_int_equal(edhoc_error_code_for(EDHOC_ERR_STATE), 0);
    assert_string_equal(edhoc_strerror(EDHOC_ERR_MAC), "MAC verification failed");

    /* a session receiving ERR_CODE 0 or 1 aborts and does not answer */
    struct pair *p = pair_new(3, 2, false);
    pair_to_verify_m2(p);
    assert_int_equal(edhoc_session_process_error(&p->i, e0, sizeof e0, &info),
                     EDHOC_ERR_PEER_ERROR);
    assert_int_equal(edhoc_session_state(&p->i), EDHOC_STATE_ERROR);
    assert_int_equal(edhoc_session_write_error(&p->i, buf, sizeof buf), 0);
    assert_int_equal(edhoc_session_process_error(&p->r, e1, sizeof e1, &info),
                     EDHOC_ERR_PEER_ERROR);
    assert_int_equal(info.text_len, 3);
    free(p);
}

/* An ID_CRED map head claiming 2^63 pairs once passed the skip (the pair
 * count doubled to 0) and reached the application as a 9-byte "map". */
static void test_plaintext_2_wrapping_map_count(void **state)
{
    (void)state;
    uint8_t pt[1 + 9 + 2 + 64];
    size_t k = 0;
    pt[k++] = 0x00; /* C_R = h'00' as the int 0 */
    pt[k++] = 0xbb;
    pt[k++] = 0x80;
    memset(pt + k, 0, 7);
    k += 7;
    pt[k++] = 0x58;
    pt[k++] = 0x40;
    memset(pt + k, 0x11, 64);
    k += 64;
    struct edhoc_received *rx = calloc(1, sizeof *rx);
    assert_non_null(rx);
    uint8_t c_r[EDHOC_MAX_CONN_ID];
    size_t c_r_len = 0;
    assert_int_equal(edhoc_plaintext_2_parse(pt, k, 0, 0, rx, c_r, &c_r_len), EDHOC_ERR_MALFORMED);
    assert_int_equal(edhoc_plaintext_3_parse(pt + 1, k - 1, 0, 0, rx), EDHOC_ERR_MALFORMED);
    free(rx);
}

static void assert_received_wiped(const struct edhoc_received *rx)
{
    static const struct edhoc_received zero;
    assert_null(rx->id_cred);
    assert_int_equal(rx->n_ead, 0);
    assert_int_equal(rx->plaintext_len, 0);
    assert_memory_equal(rx, &zero, sizeof zero);
}

/* A decrypted PLAINTEXT_x must not stay in the caller's rx once the
 * session failed on it (ID_CRED, Signature_or_MAC and EAD travel
 * encrypted for a reason). */
static void test_failed_processing_wipes_received(void **state)
{
    (void)state;
    /* message_2 decrypted, then refused (C_R = C_I) */
    static const uint8_t same = 0x2d;
    struct pair *p = pair_new(3, 2, false);
    pair_start(p);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL), 0);
    assert_int_equal(edhoc_session_set_conn_id(&p->r, &same, 1), 0);
    p->r.peer_cid[0] = 0x00;
    p->n2 = edhoc_responder_prepare_message_2(&p->r, p->m2, sizeof p->m2);
    assert_true(p->n2 > 0);
    assert_int_equal(edhoc_initiator_process_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx),
                     EDHOC_ERR_CONN_ID_EQUAL);
    assert_received_wiped(&p->rx);
    free(p);

    /* message_2 decrypted, its credential unknown to the resolver */
    p = pair_new(0, 0, false);
    pair_to_verify_m2(p);
    assert_int_equal(
        edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx, resolve_none, NULL),
        EDHOC_ERR_UNKNOWN_CREDENTIAL);
    assert_received_wiped(&p->rx);
    free(p);

    /* message_3 decrypted, its MAC wrong (handle = process + verify) */
    p = pair_new(3, 0, false);
    pair_to_verify_m2(p);
    assert_int_equal(edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx,
                                                      resolve_expected, &p->er),
                     0);
    p->n3 = edhoc_initiator_prepare_message_3(&p->i, p->m3, sizeof p->m3);
    assert_true(p->n3 > 0);
    struct expect_cred wrong = {p->pi.id_cred, p->pi.id_cred_len, &p->pr.cred};
    memset(&p->rx, 0x5a, sizeof p->rx);
    int rc = edhoc_responder_handle_message_3(&p->r, p->m3, (size_t)p->n3, &p->rx, resolve_expected,
                                              &wrong);
    assert_true(rc == EDHOC_ERR_MAC || rc == EDHOC_ERR_CREDENTIAL);
    assert_received_wiped(&p->rx);
    free(p);

    /* message_4 decrypted, with a critical EAD_4 item I does not know */
    p = pair_new(0, 2, false);
    static const uint8_t v4[] = {0x01, 0x02};
    static const struct edhoc_ead_item crit4 = {-7, v4, sizeof v4, true};
    p->cr.ead[4] = &crit4;
    p->cr.n_ead[4] = 1;
    pair_to_verify_m2(p);
    assert_int_equal(edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx,
                                                      resolve_expected, &p->er),
                     0);
    p->n3 = edhoc_initiator_prepare_message_3(&p->i, p->m3, sizeof p->m3);
    assert_int_equal(edhoc_responder_handle_message_3(&p->r, p->m3, (size_t)p->n3, &p->rx,
                                                      resolve_expected, &p->ei),
                     0);
    p->n4 = edhoc_responder_prepare_message_4(&p->r, p->m4, sizeof p->m4);
    assert_true(p->n4 > 0);
    assert_int_equal(edhoc_initiator_process_message_4(&p->i, p->m4, (size_t)p->n4, &p->rx),
                     EDHOC_ERR_EAD_CRITICAL);
    assert_received_wiped(&p->rx);
    /* RFC 9528 Section 5.5.3: I answers a failed message_4 with an error */
    uint8_t err[EDHOC_MAX_ERROR_MESSAGE];
    int ne = edhoc_session_write_error(&p->i, err, sizeof err);
    assert_true(ne > 2);
    assert_int_equal(err[0], 0x01);
    free(p);
}

/* verify reads rx through offsets the caller could have disturbed: an rx
 * that does not describe its own plaintext is refused before any use, and
 * the session stays usable with the real one. */
static void test_verify_rejects_inconsistent_received(void **state)
{
    (void)state;
    struct pair *p = pair_new(0, 0, false);
    pair_to_verify_m2(p);
    assert_int_equal(edhoc_initiator_process_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx), 0);
    struct edhoc_received *bad = malloc(sizeof *bad);
    assert_non_null(bad);
    *bad = p->rx;
    bad->sig_off = bad->plaintext_len; /* signature would run past the plaintext */
    assert_int_equal(edhoc_initiator_verify_message_2(&p->i, bad, &p->pr.cred), EDHOC_ERR_ARG);
    *bad = p->rx;
    bad->ead_len = sizeof bad->plaintext;
    assert_int_equal(edhoc_initiator_verify_message_2(&p->i, bad, &p->pr.cred), EDHOC_ERR_ARG);
    *bad = p->rx;
    bad->plaintext_len = sizeof bad->plaintext + 1;
    assert_int_equal(edhoc_initiator_verify_message_2(&p->i, bad, &p->pr.cred), EDHOC_ERR_ARG);
    free(bad);
    assert_int_equal(edhoc_session_state(&p->i), EDHOC_STATE_VERIFY_M2);
    assert_int_equal(edhoc_initiator_verify_message_2(&p->i, &p->rx, &p->pr.cred), 0);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_mac_2),
        cmocka_unit_test(test_bad_signature_2),
        cmocka_unit_test(test_bad_mac_and_signature_3),
        cmocka_unit_test(test_bad_ciphertext_3_and_4),
        cmocka_unit_test(test_unknown_credential),
        cmocka_unit_test(test_error_messages),
        cmocka_unit_test(test_plaintext_2_wrapping_map_count),
        cmocka_unit_test(test_failed_processing_wipes_received),
        cmocka_unit_test(test_verify_rejects_inconsistent_received),
    };
    return cmocka_run_group_tests_name("openssl", tests, NULL, NULL);
}
