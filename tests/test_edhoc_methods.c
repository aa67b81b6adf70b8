/*
 * EDHOC core tests, the handshake as configured: every method x suite on
 * generated credentials (RFC 9528 Sections 3.2 and 3.6), message lengths
 * and EAD_1 padding (Section 3.8.1), session size and versioning, EAD
 * items, connection identifiers (Section 3.3), suite negotiation of trace 2
 * (Section 6.3.2), session states, accepted methods and large ID_CRED.
 */
#include "edhoc_test_common.h"

static void assert_same_keys(struct pair *p)
{
    uint8_t a[64], b[64];
    int na = edhoc_session_prk_out(&p->i, a, sizeof a);
    int nb = edhoc_session_prk_out(&p->r, b, sizeof b);
    assert_true(na >= 32);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, (size_t)na);
    struct edhoc_oscore_params oi, orr;
    assert_int_equal(edhoc_session_oscore(&p->i, &oi), 0);
    assert_int_equal(edhoc_session_oscore(&p->r, &orr), 0);
    assert_int_equal(oi.master_secret_len, orr.master_secret_len);
    assert_memory_equal(oi.master_secret, orr.master_secret, oi.master_secret_len);
    assert_int_equal(oi.master_salt_len, 8);
    assert_memory_equal(oi.master_salt, orr.master_salt, 8);
    assert_int_equal(oi.sender_id_len, orr.recipient_id_len);
    assert_memory_equal(oi.sender_id, orr.recipient_id, oi.sender_id_len);
    assert_int_equal(oi.recipient_id_len, orr.sender_id_len);
    assert_memory_equal(oi.recipient_id, orr.sender_id, oi.recipient_id_len);
    assert_int_equal(oi.sender_id[0], 0x18); /* I sends with C_R */
    assert_int_equal(oi.aead_alg, orr.aead_alg);
    uint8_t ea[40], eb[40];
    static const uint8_t ctx[] = {1, 2, 3};
    assert_int_equal(edhoc_session_export(&p->i, 42, ctx, 3, ea, sizeof ea), 0);
    assert_int_equal(edhoc_session_export(&p->r, 42, ctx, 3, eb, sizeof eb), 0);
    assert_memory_equal(ea, eb, sizeof ea);
}

static const int all_suites[] = {0, 1, 2, 3, 4, 5, 6, 24, 25};

static void test_all_methods_suites(void **state)
{
    (void)state;
    int runs = 0;
    for (int kccs = 0; kccs < 2; kccs++)
        for (int method = 0; method <= 3; method++)
            for (size_t k = 0; k < sizeof all_suites / sizeof all_suites[0]; k++) {
                struct pair *p = pair_new(method, all_suites[k], kccs);
                pair_to_verify_m2(p);
                pair_complete(p);
                assert_same_keys(p);
                runs++;
                free(p);
            }
    assert_int_equal(runs, 72);
}

/* edhoc_responder_message_2_len announces exactly what prepare_message_2
 * then writes, in every method (signature or MAC_2, RFC 9528 Section
 * 5.3.2), suite, credential type and with EAD_2, for one-byte C_R with and
 * without an int form and a longer one (Section 3.3.2). */
static void test_message_2_len(void **state)
{
    (void)state;
    static const uint8_t val[40] = {1};
    struct edhoc_ead_item ead2[] = {
        {.label = 5, .value = val, .value_len = sizeof val, .has_value = true}};
    static const uint8_t c_rs[][4] = {{0x18}, {0x05}, {0xa1, 0xb2, 0xc3, 0xd4}};
    static const size_t c_r_lens[] = {1, 1, 4};
    int runs = 0;
    for (int kccs = 0; kccs < 2; kccs++)
        for (int method = 0; method <= 3; method++)
            for (size_t k = 0; k < sizeof all_suites / sizeof all_suites[0]; k++)
                for (size_t c = 0; c < 3; c++) {
                    struct pair *p = pair_new(method, all_suites[k], kccs);
                    if (c == 2) {
                        p->cr.ead[2] = ead2;
                        p->cr.n_ead[2] = 1;
                    }
                    pair_start(p);
                    assert_int_equal(edhoc_session_set_conn_id(&p->r, c_rs[c], c_r_lens[c]), 0);
                    long want = edhoc_responder_message_2_len(&p->cr, method, all_suites[k],
                                                              c_rs[c], c_r_lens[c]);
                    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
                    assert_true(p->n1 > 0);
                    assert_int_equal(
                        edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL), 0);
                    p->n2 = edhoc_responder_prepare_message_2(&p->r, p->m2, sizeof p->m2);
                    assert_int_equal(want, p->n2);
                    runs++;
                    free(p);
                }
    assert_int_equal(runs, 216);
    struct pair *p = pair_new(0, 0, false);
    assert_int_equal(edhoc_responder_message_2_len(&p->cr, 0, 7, NULL, 0), EDHOC_ERR_ARG);
    assert_int_equal(edhoc_responder_message_2_len(&p->cr, 4, 0, NULL, 0), EDHOC_ERR_ARG);
    assert_int_equal(edhoc_responder_message_2_len(NULL, 0, 0, NULL, 0), EDHOC_ERR_ARG);
    free(p);
}

/* pad_message_1: EAD_1 padding (RFC 9528 Section 3.8.1, ead_label 0 and a
 * byte string) makes message_1 exactly the length asked for, including
 * the lengths that need two items ("Certain padding lengths require the
 * use of at least two such EAD items": 1 + 1 + 24 and 1 + 2 + 256 have no
 * deterministic head); "Padding MUST be ignored and discarded by the
 * receiving application": the responder's application sees no item and
 * the handshake completes. */
static void test_pad_message_1(void **state)
{
    (void)state;
    struct pair *p = pair_new(3, 2, false);
    pair_start(p);
    int plain = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_true(plain > 0);
    free(p);
    for (size_t want = 0; want <= (size_t)plain + 600; want++) {
        p = pair_new(3, 2, false);
        p->ci.pad_message_1 = want;
        pair_start(p);
        p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
        assert_int_equal(p->n1, want > (size_t)plain ? (int)want : plain);
        /* What follows C_I: padding items only, each label 0. */
        struct edhoc_message_1_fields f;
        assert_int_equal(edhoc_message_1_parse(p->m1, (size_t)p->n1, &f), 0);
        assert_int_equal(f.ead_len, (size_t)p->n1 - (size_t)plain);
        struct edhoc_cbor_reader r;
        edhoc_cbor_reader_init(&r, f.ead, f.ead_len);
        size_t items = 0;
        while (!edhoc_cbor_at_end(&r)) {
            int64_t label = -1;
            assert_int_equal(edhoc_cbor_get_int(&r, &label), 0);
            assert_int_equal(label, 0);
            const uint8_t *v;
            size_t vl;
            (void)edhoc_cbor_get_bstr(&r, &v, &vl);
            items++;
        }
        size_t extra = f.ead_len;
        assert_true(items == (extra == 0 ? 0u : extra == 26 || extra == 259 ? 2u : 1u));
        assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL), 0);
        if (want == (size_t)plain + 300) {
            p->n2 = edhoc_responder_prepare_message_2(&p->r, p->m2, sizeof p->m2);
            assert_true(p->n2 > 0);
            pair_complete(p);
            assert_same_keys(p);
        }
        assert_int_equal(p->log_r.calls, 0);
        free(p);
    }
    /* Beyond the EAD_1 a responder takes (EDHOC_MAX_EAD_SIZE): refused
     * here rather than by every responder. */
    p = pair_new(3, 2, false);
    p->ci.pad_message_1 = (size_t)plain + EDHOC_MAX_EAD_SIZE + 1;
    pair_start(p);
    assert_int_equal(edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1),
                     EDHOC_ERR_TOO_LARGE);
    free(p);
    p = pair_new(3, 2, false);
    p->ci.pad_message_1 = (size_t)plain + EDHOC_MAX_EAD_SIZE;
    pair_start(p);
    assert_int_equal(edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1),
                     plain + EDHOC_MAX_EAD_SIZE);
    free(p);
}

static void test_session_size(void **state)
{
    (void)state;
    print_message("sizeof(struct edhoc_session) = %zu\n", sizeof(struct edhoc_session));
    assert_true(sizeof(struct edhoc_session) <= EDHOC_SESSION_SIZE_GOAL);
}

/* The session is opaque to applications (EDHOC_SESSION_SIZE bytes, the
 * layout private), and struct edhoc_config is versioned by its size:
 * edhoc_session_init() passes sizeof *cfg. An application built against
 * an older header passes less (fields added since count as 0); one built
 * against a newer header passes more, and what it set there would be
 * ignored, so it is refused unless zero (the rule of Linux's openat2). */
static void test_config_and_session_versioning(void **state)
{
    (void)state;
    assert_true(sizeof(struct edhoc_session) <= EDHOC_SESSION_SIZE);
    struct pair *p = pair_new(3, 2, false);
    struct edhoc_session s;
    /* The macro and the sized call agree. */
    assert_int_equal(edhoc_session_init(&s, EDHOC_INITIATOR, &p->ci), 0);
    assert_int_equal(edhoc_session_init_sized(&s, EDHOC_INITIATOR, &p->ci, sizeof p->ci), 0);
    /* Smaller than the first published layout: refused. */
    assert_int_equal(edhoc_session_init_sized(&s, EDHOC_INITIATOR, &p->ci, sizeof p->ci - 1),
                     EDHOC_ERR_ARG);
    assert_int_equal(edhoc_session_init_sized(&s, EDHOC_INITIATOR, &p->ci, 8), EDHOC_ERR_ARG);
    /* A newer application's layout: a zero tail runs, a set tail is
     * refused. */
    struct {
        struct edhoc_config base;
        uint64_t newer_field;
    } newer;
    memset(&newer, 0, sizeof newer);
    newer.base = p->ci;
    assert_int_equal(edhoc_session_init_sized(&s, EDHOC_INITIATOR, &newer.base, sizeof newer), 0);
    assert_int_equal(edhoc_initiator_prepare_message_1(&s, p->m1, sizeof p->m1) > 0, 1);
    newer.newer_field = 1;
    assert_int_equal(edhoc_session_init_sized(&s, EDHOC_INITIATOR, &newer.base, sizeof newer),
                     EDHOC_ERR_ARG);
    edhoc_session_wipe(&s);
    free(p);
}

static void test_ead(void **state)
{
    (void)state;
    static const uint8_t val[] = {0xab, 0xcd};
    static const uint8_t pad[] = {0x00, 0x00, 0x00};
    struct edhoc_ead_item items[] = {
        {.label = 0, .value = pad, .value_len = sizeof pad, .has_value = true},
        {.label = 7, .value = val, .value_len = sizeof val, .has_value = true},
        {.label = 9, .has_value = false},
    };
    struct pair *p = pair_new(3, 2, false);
    for (int m = 1; m <= 4; m++) {
        struct edhoc_config *c = (m == 1 || m == 3) ? &p->ci : &p->cr;
        c->ead[m] = items;
        c->n_ead[m] = 3;
    }
    pair_to_verify_m2(p);
    pair_complete(p);
    assert_same_keys(p);
    /* padding never reaches the application; 7 and 9 do, in each message */
    assert_int_equal(p->log_r.calls, 4);
    assert_int_equal(p->log_i.calls, 4);
    assert_int_equal(p->log_r.labels[0], 7);
    assert_int_equal(p->log_r.messages[0], 1);
    assert_int_equal(p->log_r.labels[1], 9);
    assert_int_equal(p->log_r.messages[2], 3);
    assert_int_equal(p->log_i.messages[0], 2);
    assert_int_equal(p->log_i.messages[3], 4);
    assert_int_equal(p->rx.n_ead, 2); /* EAD_4 as listed */
    assert_int_equal(p->rx.ead[0].label, 7);
    assert_memory_equal(p->rx.ead[0].value, val, 2);
    free(p);

    /* unknown critical item in EAD_1 aborts with an error message */
    struct edhoc_ead_item crit[] = {{.label = -5, .value = val, .value_len = 2, .has_value = true}};
    p = pair_new(0, 0, false);
    p->ci.ead[1] = crit;
    p->ci.n_ead[1] = 1;
    pair_start(p);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_true(p->n1 > 0);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL),
                     EDHOC_ERR_EAD_CRITICAL);
    assert_error_text(&p->r, "message_1: unrecognized critical EAD item");
    /* ... unless the application knows it */
    p->log_r.accept_critical = -5;
    pair_start(p);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL), 0);
    free(p);

    /* critical in EAD_3, no callback at all */
    p = pair_new(2, 0, false);
    p->ci.ead[3] = crit;
    p->ci.n_ead[3] = 1;
    p->cr.ead_receive = NULL;
    pair_to_verify_m2(p);
    assert_int_equal(edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx,
                                                      resolve_expected, &p->er),
                     0);
    p->n3 = edhoc_initiator_prepare_message_3(&p->i, p->m3, sizeof p->m3);
    assert_int_equal(edhoc_responder_process_message_3(&p->r, p->m3, (size_t)p->n3, &p->rx),
                     EDHOC_ERR_EAD_CRITICAL);
    free(p);

    /* the application refuses a non-critical item */
    p = pair_new(1, 0, false);
    p->cr.ead[2] = items;
    p->cr.n_ead[2] = 3;
    p->log_i.refuse = 9;
    pair_to_verify_m2(p);
    assert_int_equal(edhoc_initiator_process_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx),
                     EDHOC_ERR_EAD_REJECTED);
    free(p);
}

static void test_conn_id(void **state)
{
    (void)state;
    struct pair *p = pair_new(3, 2, false);
    pair_start(p);
    /* C_R chosen equal to C_I: refused without harm, then corrected */
    static const uint8_t same = 0x2d, empty_ok = 0x00;
    assert_int_equal(edhoc_session_set_conn_id(&p->r, &same, 1), 0);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL), 0);
    size_t l = 0;
    const uint8_t *peer = edhoc_session_peer_conn_id(&p->r, &l);
    assert_non_null(peer);
    assert_int_equal(l, 1);
    assert_int_equal(peer[0], 0x2d);
    assert_int_equal(edhoc_responder_prepare_message_2(&p->r, p->m2, sizeof p->m2),
                     EDHOC_ERR_CONN_ID_CONFLICT);
    assert_int_equal(edhoc_session_state(&p->r), EDHOC_STATE_SEND_M2);
    assert_int_equal(edhoc_session_set_conn_id(&p->r, &empty_ok, 1), 0);
    p->n2 = edhoc_responder_prepare_message_2(&p->r, p->m2, sizeof p->m2);
    assert_true(p->n2 > 0);
    /* the identifier can no longer change */
    assert_int_equal(edhoc_session_set_conn_id(&p->r, &same, 1), EDHOC_ERR_STATE);
    p->er.cred = &p->pr.cred;
    pair_complete(p);
    free(p);

    /* an initiator receiving C_R = C_I rejects message_2 (the responder
     * would never send it; the test bends its session to do so) */
    p = pair_new(3, 2, false);
    pair_start(p);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL), 0);
    assert_int_equal(edhoc_session_set_conn_id(&p->r, &same, 1), 0);
    p->r.peer_cid[0] = 0x00;
    p->n2 = edhoc_responder_prepare_message_2(&p->r, p->m2, sizeof p->m2);
    assert_true(p->n2 > 0);
    assert_int_equal(edhoc_initiator_process_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx),
                     EDHOC_ERR_CONN_ID_EQUAL);
    assert_error_text(&p->i, "message_2: C_R equals C_I");
    free(p);

    /* multi-byte and empty identifiers travel as byte strings */
    p = pair_new(0, 0, false);
    assert_int_equal(edhoc_session_init(&p->i, EDHOC_INITIATOR, &p->ci), 0);
    assert_int_equal(edhoc_session_init(&p->r, EDHOC_RESPONDER, &p->cr), 0);
    static const uint8_t long_id[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
    assert_int_equal(edhoc_session_set_conn_id(&p->i, long_id, 8), 0);
    assert_int_equal(edhoc_session_set_conn_id(&p->r, NULL, 0), 0);
    assert_int_equal(edhoc_session_set_conn_id(&p->r, long_id, 9), EDHOC_ERR_ARG);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_int_equal(p->m1[p->n1 - 9], 0x48);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL), 0);
    p->n2 = edhoc_responder_prepare_message_2(&p->r, p->m2, sizeof p->m2);
    assert_true(p->n2 > 0);
    pair_complete(p);
    struct edhoc_oscore_params o;
    assert_int_equal(edhoc_session_oscore(&p->i, &o), 0);
    assert_int_equal(o.sender_id_len, 0);
    assert_int_equal(o.recipient_id_len, 8);
    free(p);
}

static void test_negotiation(void **state)
{
    (void)state;
    uint8_t err[EDHOC_MAX_ERROR_MESSAGE];
    struct edhoc_message_1_fields f;

    /* I prefers 2 then 0, R supports only 0: one error, then [2, 0] */
    struct pair *p = pair_new(0, 0, false);
    p->suites_i[0] = 2;
    p->suites_i[1] = 0;
    p->ci.n_suites = 2;
    /* method 0 with suite 2 would need ES256 keys; the retry uses suite 0 */
    pair_start(p);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_int_equal(edhoc_message_1_parse(p->m1, (size_t)p->n1, &f), 0);
    assert_int_equal(f.n_suites, 1);
    assert_int_equal(f.suites[0], 2);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL),
                     EDHOC_ERR_WRONG_SUITE);
    int ne = edhoc_session_write_error(&p->r, err, sizeof err);
    static const uint8_t e_0[] = {0x02, 0x00};
    assert_int_equal(ne, 2);
    assert_memory_equal(err, e_0, 2);
    assert_int_equal(edhoc_session_process_error(&p->i, err, (size_t)ne, NULL), 0);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_int_equal(edhoc_message_1_parse(p->m1, (size_t)p->n1, &f), 0);
    assert_int_equal(f.n_suites, 2);
    assert_int_equal(f.suites[0], 2);
    assert_int_equal(f.suites[1], 0);
    assert_int_equal(edhoc_session_init(&p->r, EDHOC_RESPONDER, &p->cr), 0);
    static const uint8_t cid_r = 0x18;
    assert_int_equal(edhoc_session_set_conn_id(&p->r, &cid_r, 1), 0);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL), 0);
    p->n2 = edhoc_responder_prepare_message_2(&p->r, p->m2, sizeof p->m2);
    assert_true(p->n2 > 0);
    pair_complete(p);
    assert_same_keys(p);
    assert_int_equal(edhoc_session_suite(&p->i), 0);

    /* R supports a suite I prefers over the selected one: SUITES_R names
     * it, and it is not accepted even though the selected one is fine. */
    p->suites_i[0] = 0;
    p->suites_i[1] = 2;
    p->suites_r[0] = 2;
    p->suites_r[1] = 0;
    p->cr.n_suites = 2;
    pair_start(p);
    int hint[] = {2};
    assert_int_equal(edhoc_session_set_peer_suites(&p->i, hint, 1), 0);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_int_equal(edhoc_message_1_parse(p->m1, (size_t)p->n1, &f), 0);
    assert_int_equal(f.n_suites, 2);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL),
                     EDHOC_ERR_WRONG_SUITE);
    ne = edhoc_session_write_error(&p->r, err, sizeof err);
    assert_int_equal(ne, 2);
    assert_memory_equal(err, e_0, 2);
    assert_int_equal(edhoc_session_process_error(&p->i, err, (size_t)ne, NULL), 0);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_int_equal(edhoc_message_1_parse(p->m1, (size_t)p->n1, &f), 0);
    assert_int_equal(f.n_suites, 1);
    assert_int_equal(f.suites[0], 0);

    /* no suite in common: R lists all of its suites, I gives up */
    p->suites_i[0] = 6;
    p->ci.n_suites = 1;
    p->suites_r[0] = 2;
    p->suites_r[1] = 24;
    pair_start(p);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL),
                     EDHOC_ERR_WRONG_SUITE);
    ne = edhoc_session_write_error(&p->r, err, sizeof err);
    static const uint8_t e_all[] = {0x02, 0x82, 0x02, 0x18, 0x18};
    assert_int_equal(ne, sizeof e_all);
    assert_memory_equal(err, e_all, sizeof e_all);
    assert_int_equal(edhoc_session_process_error(&p->i, err, (size_t)ne, NULL),
                     EDHOC_ERR_NO_COMMON_SUITE);
    free(p);
}

static void test_states(void **state)
{
    (void)state;
    struct pair *p = pair_new(3, 2, false);
    pair_start(p);
    assert_int_equal(edhoc_responder_prepare_message_2(&p->i, p->m2, sizeof p->m2),
                     EDHOC_ERR_STATE);
    assert_int_equal(edhoc_initiator_prepare_message_1(&p->r, p->m1, sizeof p->m1),
                     EDHOC_ERR_STATE);
    assert_int_equal(edhoc_initiator_prepare_message_3(&p->i, p->m3, sizeof p->m3),
                     EDHOC_ERR_STATE);
    assert_int_equal(edhoc_session_state(&p->i), EDHOC_STATE_START);
    uint8_t out[16];
    assert_int_equal(edhoc_session_export(&p->i, 0, NULL, 0, out, 16), EDHOC_ERR_STATE);
    /* too small an output buffer aborts the step */
    assert_int_equal(edhoc_initiator_prepare_message_1(&p->i, p->m1, 10), EDHOC_ERR_BUFFER);
    assert_int_equal(edhoc_session_state(&p->i), EDHOC_STATE_ERROR);
    /* a config with an unknown suite is refused */
    int bad[] = {7};
    struct edhoc_config c = p->ci;
    c.suites = bad;
    struct edhoc_session s;
    assert_int_equal(edhoc_session_init(&s, EDHOC_INITIATOR, &c), EDHOC_ERR_ARG);
    /* an own key that does not fit the method fails with a local error */
    struct pair *q = pair_new(3, 0, false);
    struct edhoc_key wrong = {.curve = EDHOC_COSE_CRV_ED25519, .priv_len = 32};
    q->cr.key = &wrong;
    pair_start(q);
    q->n1 = edhoc_initiator_prepare_message_1(&q->i, q->m1, sizeof q->m1);
    assert_int_equal(edhoc_responder_process_message_1(&q->r, q->m1, (size_t)q->n1, NULL), 0);
    assert_int_equal(edhoc_responder_prepare_message_2(&q->r, q->m2, sizeof q->m2),
                     EDHOC_ERR_CREDENTIAL);
    free(q);
    free(p);
}

/* the method a responder accepts */
static void test_methods_accepted(void **state)
{
    (void)state;
    struct pair *p = pair_new(1, 0, false);
    p->cr.accept_methods = 1u << 3;
    pair_start(p);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL),
                     EDHOC_ERR_METHOD);
    assert_error_text(&p->r, "message_1: method not supported");
    free(p);
    static const uint8_t m1_method4[] = {0x04, 0x00, 0x41, 0x00, 0x00};
    struct edhoc_message_1_fields f;
    assert_int_equal(edhoc_message_1_parse(m1_method4, sizeof m1_method4, &f), EDHOC_ERR_METHOD);
}

/* An x5chain-sized ID_CRED and credential (the core does not look inside:
 * {33: bstr} with a 1500-byte "certificate" whose bstr is CRED_x). */
static void test_large_id_cred(void **state)
{
    (void)state;
    int methods[] = {0, 3};
    for (size_t k = 0; k < 2; k++) {
        struct pair *p = pair_new(methods[k], k ? 2 : 0, false);
        static uint8_t big[1500];
        for (size_t j = 0; j < sizeof big; j++)
            big[j] = (uint8_t)(j * 7);
        struct peer *sides[] = {&p->pi, &p->pr};
        static uint8_t ids[2][1600];
        for (int side = 0; side < 2; side++) {
            struct peer *q = sides[side];
            struct edhoc_cbor_writer w;
            uint8_t cred[1600];
            edhoc_cbor_writer_init(&w, cred, sizeof cred);
            big[0] = (uint8_t)side;
            edhoc_cbor_put_bstr(&w, big, sizeof big);
            long n = edhoc_cbor_writer_finish(&w);
            assert_true(n > 0);
            memcpy(q->cred.data, cred, (size_t)n);
            q->cred.cred_len = (size_t)n;
            edhoc_cbor_writer_init(&w, ids[side], sizeof ids[side]);
            edhoc_cbor_put_map(&w, 1);
            edhoc_cbor_put_uint(&w, 33);
            edhoc_cbor_put_bstr(&w, big, sizeof big);
            n = edhoc_cbor_writer_finish(&w);
            assert_true(n > 0);
            (side ? &p->cr : &p->ci)->id_cred = ids[side];
            (side ? &p->cr : &p->ci)->id_cred_len = (size_t)n;
            (side ? &p->er : &p->ei)->id_cred = ids[side];
            (side ? &p->er : &p->ei)->id_cred_len = (size_t)n;
        }
        pair_to_verify_m2(p);
        assert_true(p->n2 > 1500);
        pair_complete(p);
        assert_true(p->n3 > 1500);
        assert_same_keys(p);
        free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_session_size),
        cmocka_unit_test(test_config_and_session_versioning),
        cmocka_unit_test(test_all_methods_suites),
        cmocka_unit_test(test_message_2_len),
        cmocka_unit_test(test_pad_message_1),
        cmocka_unit_test(test_ead),
        cmocka_unit_test(test_conn_id),
        cmocka_unit_test(test_negotiation),
        cmocka_unit_test(test_states),
        cmocka_unit_test(test_methods_accepted),
        cmocka_unit_test(test_large_id_cred),
    };
    int failed = cmocka_run_group_tests_name("openssl", tests, NULL, NULL);
    const struct CMUnitTest vector_tests[] = {
        cmocka_unit_test(test_all_methods_suites),
    };
    test_backend = edhoc_crypto_sodium;
    failed += cmocka_run_group_tests_name("sodium", vector_tests, NULL, NULL);
    test_backend = edhoc_crypto_auto;
    failed += cmocka_run_group_tests_name("auto", vector_tests, NULL, NULL);
    return failed;
}
