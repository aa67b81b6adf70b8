/*
 * EDHOC core tests, deviations of deployed peers (edhoc_config.tolerate /
 * emulate): their names, each one detected, diagnosed and tolerated on
 * RFC 9529 trace 2 material or a method 0 pair (C_R as a byte string,
 * integer kid, signature form, compact ID_CRED, wrapped CRED_x, omitted
 * EAD), and what no deviation explains reported as such.
 */
#include "edhoc_test_common.h"

/* ---- deviations of deployed peers (edhoc_config.tolerate / emulate) ---- */

static void test_deviation_names(void **state)
{
    (void)state;
    unsigned m = 99;
    char why[160], out[96];
    assert_string_equal(edhoc_deviation_name(EDHOC_DEV_C_BSTR), "c-bstr");
    assert_string_equal(edhoc_deviation_name(EDHOC_DEV_KID_INT), "kid-int");
    assert_string_equal(edhoc_deviation_name(EDHOC_DEV_ID_CRED_COMPACT), "id-cred-compact");
    assert_string_equal(edhoc_deviation_name(EDHOC_DEV_CRED_WRAP), "cred-wrap");
    assert_string_equal(edhoc_deviation_name(EDHOC_DEV_EAD_OMITTED), "ead-omitted");
    assert_null(edhoc_deviation_name(EDHOC_DEV_C_BSTR | EDHOC_DEV_KID_INT));
    assert_null(edhoc_deviation_name(1u << 5));
    assert_null(edhoc_deviation_name(0));

    assert_int_equal(edhoc_deviations_parse("c-bstr,kid-int", &m, why, sizeof why), 0);
    assert_int_equal(m, EDHOC_DEV_C_BSTR | EDHOC_DEV_KID_INT);
    assert_int_equal(edhoc_deviations_parse(" ead-omitted , cred-wrap ", &m, NULL, 0), 0);
    assert_int_equal(m, EDHOC_DEV_EAD_OMITTED | EDHOC_DEV_CRED_WRAP);
    assert_int_equal(edhoc_deviations_parse("none", &m, why, sizeof why), 0);
    assert_int_equal(m, 0);
    m = 99;
    assert_int_equal(edhoc_deviations_parse("", &m, why, sizeof why), 0);
    assert_int_equal(m, 0);
    m = 99;
    assert_int_equal(edhoc_deviations_parse("c-bstr,kid", &m, why, sizeof why), EDHOC_ERR_ARG);
    assert_int_equal(m, 99); /* untouched on error */
    assert_non_null(strstr(why, "unknown deviation \"kid\""));
    assert_int_equal(edhoc_deviations_parse("c-bstr,,kid-int", &m, why, sizeof why), EDHOC_ERR_ARG);
    assert_string_equal(why, "empty name in the deviation list");
    assert_int_equal(edhoc_deviations_parse("none,c-bstr", &m, why, sizeof why), EDHOC_ERR_ARG);
    assert_int_equal(edhoc_deviations_parse("C-BSTR", &m, why, sizeof why), EDHOC_ERR_ARG);
    assert_int_equal(edhoc_deviations_parse(NULL, &m, why, sizeof why), EDHOC_ERR_ARG);

    assert_int_equal(edhoc_deviations_format(0, out, sizeof out), 4);
    assert_string_equal(out, "none");
    size_t n = edhoc_deviations_format(EDHOC_DEV_ALL, out, sizeof out);
    assert_string_equal(out, "c-bstr,kid-int,id-cred-compact,cred-wrap,ead-omitted");
    assert_int_equal(n, strlen(out));
    assert_int_equal(edhoc_deviations_parse(out, &m, why, sizeof why), 0);
    assert_int_equal(m, EDHOC_DEV_ALL);
    edhoc_deviations_format(EDHOC_DEV_KID_INT | (1u << 8), out, sizeof out);
    assert_string_equal(out, "kid-int,0x100");
    /* truncated, still terminated, untruncated length returned */
    assert_int_equal(edhoc_deviations_format(EDHOC_DEV_C_BSTR, out, 3), 6);
    assert_string_equal(out, "c-");

    /* a mask with bits this library does not know is a configuration error */
    struct pair *p = pair_new(3, 2, false);
    struct edhoc_session x;
    p->ci.tolerate = 1u << 6;
    assert_int_equal(edhoc_session_init(&x, EDHOC_INITIATOR, &p->ci), EDHOC_ERR_ARG);
    p->ci.tolerate = 0;
    p->ci.emulate = 1u << 7;
    assert_int_equal(edhoc_session_init(&x, EDHOC_INITIATOR, &p->ci), EDHOC_ERR_ARG);
    free(p);
}

/* One handshake as far as it goes: I verifies message_2 with cred_r
 * (rc2); when that succeeds, R verifies message_3 with cred_i (rc3). */
struct dev_setup {
    const struct edhoc_config *ci, *cr;
    uint8_t c_i, c_r;
    const uint8_t *x, *y; /* pinned ephemeral keys, or NULL */
    size_t x_len, y_len;
    const int *peer_suites; /* I: SUITES_R learned earlier, or NULL */
    size_t n_peer_suites;
    const struct edhoc_cred *cred_r, *cred_i;
};

struct dev_run {
    struct edhoc_session i, r;
    struct edhoc_received rx;
    uint8_t m1[EDHOC_MAX_MESSAGE], m2[EDHOC_MAX_MESSAGE], m3[EDHOC_MAX_MESSAGE];
    int n1, n2, n3;
    int rc2, rc3; /* rc3 = 1: not reached */
};

static struct dev_run *dev_handshake(const struct dev_setup *u)
{
    struct dev_run *d = calloc(1, sizeof *d);
    assert_non_null(d);
    d->rc3 = 1;
    assert_int_equal(edhoc_session_init(&d->i, EDHOC_INITIATOR, u->ci), 0);
    assert_int_equal(edhoc_session_init(&d->r, EDHOC_RESPONDER, u->cr), 0);
    assert_int_equal(edhoc_session_set_conn_id(&d->i, &u->c_i, 1), 0);
    assert_int_equal(edhoc_session_set_conn_id(&d->r, &u->c_r, 1), 0);
    if (u->x)
        assert_int_equal(edhoc_session_set_ephemeral(&d->i, u->x, u->x_len), 0);
    if (u->y)
        assert_int_equal(edhoc_session_set_ephemeral(&d->r, u->y, u->y_len), 0);
    if (u->peer_suites)
        assert_int_equal(edhoc_session_set_peer_suites(&d->i, u->peer_suites, u->n_peer_suites), 0);
    d->n1 = edhoc_initiator_prepare_message_1(&d->i, d->m1, sizeof d->m1);
    assert_true(d->n1 > 0);
    assert_int_equal(edhoc_responder_process_message_1(&d->r, d->m1, (size_t)d->n1, NULL), 0);
    d->n2 = edhoc_responder_prepare_message_2(&d->r, d->m2, sizeof d->m2);
    assert_true(d->n2 > 0);
    assert_int_equal(edhoc_initiator_process_message_2(&d->i, d->m2, (size_t)d->n2, &d->rx), 0);
    d->rc2 = edhoc_initiator_verify_message_2(&d->i, &d->rx, u->cred_r);
    if (d->rc2)
        return d;
    d->n3 = edhoc_initiator_prepare_message_3(&d->i, d->m3, sizeof d->m3);
    assert_true(d->n3 > 0);
    assert_int_equal(edhoc_responder_process_message_3(&d->r, d->m3, (size_t)d->n3, &d->rx), 0);
    d->rc3 = edhoc_responder_verify_message_3(&d->r, &d->rx, u->cred_i);
    return d;
}

/* Both ends completed with the same PRK_out. */
static void assert_dev_completed(const struct dev_run *d)
{
    assert_int_equal(d->rc2, 0);
    assert_int_equal(d->rc3, 0);
    uint8_t a[64], b[64];
    int na = edhoc_session_prk_out(&d->i, a, sizeof a);
    int nb = edhoc_session_prk_out(&d->r, b, sizeof b);
    assert_true(na > 0);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, (size_t)na);
}

/* The diagnosis of a session, with the exact text expected. */
static void assert_diagnosis(const struct edhoc_session *s, unsigned matched, int message,
                             const char *text)
{
    struct edhoc_diagnosis d;
    assert_int_equal(edhoc_session_diagnosis(s, &d), 0);
    if (strcmp(d.text, text) != 0)
        print_error("diagnosis is \"%s\"\n      want \"%s\"\n", d.text, text);
    assert_int_equal(d.matched, matched);
    assert_int_equal(d.message, message);
    assert_string_equal(d.text, text);
}

/* edhoc_session_error_text: the failed step, then the diagnosis. */
static void assert_full_error_text(const struct edhoc_session *s, const char *text)
{
    char got[512];
    size_t n = edhoc_session_error_text(s, got, sizeof got);
    if (strcmp(got, text) != 0)
        print_error("error text is \"%s\"\n       want \"%s\"\n", got, text);
    assert_string_equal(got, text);
    assert_int_equal(n, strlen(text));
}

/* RFC 9529 trace 2 material: method 3, suite 2, C_I = 0x37, C_R = 0x27
 * (both int form), ID_CRED_I = {4: h'2b'}, ID_CRED_R = {4: h'32'}. */
struct trace2_pair {
    struct vec_scope v;
    struct side si, sr;
    struct edhoc_crypto_ops ops;
    int suites_i[2], suites_r[1], peer_suites[1];
    struct edhoc_config ci, cr;
    struct dev_setup u;
};

static struct trace2_pair *trace2_pair_new(void)
{
    struct trace2_pair *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->v = load_vectors("rfc9529-trace2.json");
    load_side(t->v, true, 2, &t->si);
    load_side(t->v, false, 2, &t->sr);
    t->ops = *test_backend();
    t->suites_i[0] = 6;
    t->suites_i[1] = 2;
    t->suites_r[0] = 2;
    t->peer_suites[0] = 2;
    config_side(&t->ci, &t->ops, &t->si, 3, t->suites_i, 2, NULL);
    config_side(&t->cr, &t->ops, &t->sr, 0, t->suites_r, 1, NULL);
    t->ci.trace = t->cr.trace = NULL;
    t->u = (struct dev_setup){
        .ci = &t->ci,
        .cr = &t->cr,
        .c_i = t->si.cid[0],
        .c_r = t->sr.cid[0],
        .x = t->si.eph,
        .x_len = t->si.eph_len,
        .y = t->sr.eph,
        .y_len = t->sr.eph_len,
        .peer_suites = t->peer_suites,
        .n_peer_suites = 1,
        .cred_r = &t->sr.cred,
        .cred_i = &t->si.cred,
    };
    return t;
}

static const char text_c_bstr_2[] =
    "MAC_2 matches when C_R is the byte string h'27' instead of the int -8 (0x27) in context_2 "
    "(RFC 9528 Section 3.3.2): the peer deviates; --tolerate c-bstr accepts it";

static void test_deviation_c_bstr(void **state)
{
    (void)state;
    struct trace2_pair *t = trace2_pair_new();
    assert_int_equal(t->sr.cid_len, 1);
    assert_int_equal(t->sr.cid[0], 0x27);

    /* Tolerating changes nothing that is sent, and a peer that follows RFC
     * 9528 needs nothing tolerated: the run is RFC 9529 trace 2 byte for
     * byte (RFC 9529 Section 3). */
    t->ci.tolerate = t->cr.tolerate = EDHOC_DEV_ALL;
    struct dev_run *d = dev_handshake(&t->u);
    assert_vec(t->v, "message_1", d->m1, (size_t)d->n1);
    assert_vec(t->v, "message_2", d->m2, (size_t)d->n2);
    assert_vec(t->v, "message_3", d->m3, (size_t)d->n3);
    assert_dev_completed(d);
    assert_int_equal(edhoc_session_tolerated(&d->i), 0);
    assert_int_equal(edhoc_session_tolerated(&d->r), 0);
    struct edhoc_diagnosis diag;
    assert_int_equal(edhoc_session_diagnosis(&d->i, &diag), EDHOC_ERR_STATE);
    assert_int_equal(diag.matched, 0);
    assert_string_equal(diag.text, "");
    free(d);
    t->ci.tolerate = t->cr.tolerate = 0;

    /* A responder emulating c-bstr. RFC 9528 Section 3.3.2: "The byte
     * strings which coincide with a one-byte CBOR encoding of an integer
     * MUST be represented by the CBOR encoding of that integer", and
     * Section 5.3.2 puts C_R into context_2 = << C_R, ID_CRED_R, TH_2,
     * CRED_R, ? EAD_2 >>: with C_R as 41 27 MAC_2 differs, nothing else
     * sent does (same length, same C_R on the wire). */
    t->cr.emulate = EDHOC_DEV_C_BSTR;
    d = dev_handshake(&t->u);
    uint8_t want2[256];
    size_t want2_len = hexbytes(t->v, "message_2", want2, sizeof want2);
    assert_int_equal((size_t)d->n2, want2_len);
    assert_memory_not_equal(d->m2, want2, want2_len);
    /* Section 5.3.3: "Verify Signature_or_MAC_2 ..."; Section 5.3.3: "If
     * any processing step fails, then the Initiator MUST send an EDHOC
     * error message back ... and the EDHOC session MUST be aborted." */
    assert_int_equal(d->rc2, EDHOC_ERR_MAC);
    assert_int_equal(edhoc_session_state(&d->i), EDHOC_STATE_ERROR);
    assert_diagnosis(&d->i, EDHOC_DEV_C_BSTR, 2, text_c_bstr_2);
    char full[512];
    snprintf(full, sizeof full, "MAC_2 verification failed; %s", text_c_bstr_2);
    assert_full_error_text(&d->i, full);
    /* the error message to the peer keeps the short text (Section 6.2:
     * "ERR_INFO MUST be a text string containing a human-readable
     * diagnostic message"): the diagnosis is for this side's log */
    assert_error_text(&d->i, "MAC_2 verification failed");
    assert_int_equal(edhoc_session_tolerated(&d->i), 0);
    free(d);

    /* Tolerating another deviation accepts nothing: kid-int does not
     * explain this MAC_2, and it is not what the diagnosis matched. */
    t->ci.tolerate =
        EDHOC_DEV_KID_INT | EDHOC_DEV_ID_CRED_COMPACT | EDHOC_DEV_CRED_WRAP | EDHOC_DEV_EAD_OMITTED;
    d = dev_handshake(&t->u);
    assert_int_equal(d->rc2, EDHOC_ERR_MAC);
    assert_diagnosis(&d->i, EDHOC_DEV_C_BSTR, 2, text_c_bstr_2);
    assert_int_equal(edhoc_session_tolerated(&d->i), 0);
    free(d);

    /* --tolerate c-bstr: accepted, and said so. C_R is not in context_3
     * (Section 5.4.2: context_3 = << ID_CRED_I, TH_3, CRED_I, ? EAD_3 >>),
     * so the emulating responder verifies a normal message_3. */
    t->ci.tolerate = EDHOC_DEV_C_BSTR;
    d = dev_handshake(&t->u);
    assert_dev_completed(d);
    assert_int_equal(edhoc_session_tolerated(&d->i), EDHOC_DEV_C_BSTR);
    assert_int_equal(edhoc_session_tolerated(&d->r), 0);
    assert_diagnosis(&d->i, EDHOC_DEV_C_BSTR, 2,
                     "MAC_2 matches when C_R is the byte string h'27' instead of the int -8 "
                     "(0x27) in context_2 (RFC 9528 Section 3.3.2): the peer deviates; "
                     "tolerated (--tolerate c-bstr)");
    char none[8];
    assert_int_equal(edhoc_session_error_text(&d->i, none, sizeof none), 0);
    free(d);

    /* An initiator emulating c-bstr verifies MAC_2 with C_R as a byte
     * string: it completes with the emulating responder without tolerating
     * anything, and rejects a responder that follows the RFC. */
    t->ci.tolerate = 0;
    t->ci.emulate = EDHOC_DEV_C_BSTR;
    d = dev_handshake(&t->u);
    assert_dev_completed(d);
    assert_int_equal(edhoc_session_tolerated(&d->i), 0);
    free(d);
    t->cr.emulate = 0;
    d = dev_handshake(&t->u);
    assert_int_equal(d->rc2, EDHOC_ERR_MAC);
    assert_diagnosis(&d->i, 0, 2,
                     "MAC_2 matches under RFC 9528 as written: the peer does not deviate, this "
                     "side emulates c-bstr (a test aid)");
    free(d);
    free(t);
}

static void test_deviation_kid_int(void **state)
{
    (void)state;
    struct trace2_pair *t = trace2_pair_new();

    /* A responder emulating kid-int: RFC 9528 Section 3.5.3.2, "The CBOR
     * map { 4 : kid_x } is replaced by the byte string kid_x" in
     * PLAINTEXT_2 only: "these optimizations are not applied to instances
     * of ID_CRED_x which have no impact on message size, e.g., context_y".
     * context_2 must hold {4: h'32'} (a1 04 41 32), not {4: -19}. */
    t->cr.emulate = EDHOC_DEV_KID_INT;
    struct dev_run *d = dev_handshake(&t->u);
    assert_int_equal(d->rc2, EDHOC_ERR_MAC);
    static const char text_2[] =
        "MAC_2 matches when ID_CRED_R is {4: -19} instead of {4: h'32'} in context_2 (RFC 9528 "
        "Section 3.5.3.2): the peer deviates; --tolerate kid-int accepts it";
    assert_diagnosis(&d->i, EDHOC_DEV_KID_INT, 2, text_2);
    free(d);

    /* Tolerated by the initiator; the emulating responder then rebuilds
     * the initiator's compact kid 2b as {4: -12} for context_3, as the
     * device does, so message_3 follows it (edhoc_session_followed): a
     * message_3 after RFC 9528 as written failed there, and --tolerate
     * completed nothing. */
    t->ci.tolerate = EDHOC_DEV_KID_INT;
    d = dev_handshake(&t->u);
    assert_int_equal(d->rc2, 0);
    assert_int_equal(edhoc_session_tolerated(&d->i), EDHOC_DEV_KID_INT);
    assert_int_equal(edhoc_session_followed(&d->i), EDHOC_DEV_KID_INT);
    assert_dev_completed(d);
    assert_int_equal(edhoc_session_followed(&d->r), 0);
    free(d);

    /* Two devices that deviate alike complete without tolerating. */
    t->ci.tolerate = 0;
    t->ci.emulate = EDHOC_DEV_KID_INT;
    d = dev_handshake(&t->u);
    assert_dev_completed(d);
    assert_int_equal(edhoc_session_tolerated(&d->i) | edhoc_session_tolerated(&d->r), 0);
    free(d);

    /* message_3: an initiator emulating kid-int against a responder that
     * follows the RFC. ID_CRED_R = {4: h'18'} (0x18 has no int form,
     * Section 3.3.2: "0x18 is represented by 0x4118") keeps message_2
     * out of it; ID_CRED_I = {4: h'2b'} goes into context_3 as {4: -12}. */
    static const uint8_t id_cred_r_18[] = {0xa1, 0x04, 0x41, 0x18};
    t->cr.emulate = 0;
    t->cr.id_cred = id_cred_r_18;
    t->cr.id_cred_len = sizeof id_cred_r_18;
    d = dev_handshake(&t->u);
    assert_int_equal(d->rc2, 0);
    assert_int_equal(d->rc3, EDHOC_ERR_MAC);
    static const char text_3[] =
        "MAC_3 matches when ID_CRED_I is {4: -12} instead of {4: h'2b'} in context_3 (RFC 9528 "
        "Section 3.5.3.2): the peer deviates; --tolerate kid-int accepts it";
    assert_diagnosis(&d->r, EDHOC_DEV_KID_INT, 3, text_3);
    char full[512];
    snprintf(full, sizeof full, "MAC_3 verification failed; %s", text_3);
    assert_full_error_text(&d->r, full);
    free(d);

    /* c-bstr is not what this initiator does: tolerating it accepts
     * nothing; kid-int is accepted. */
    t->cr.tolerate = EDHOC_DEV_C_BSTR;
    d = dev_handshake(&t->u);
    assert_int_equal(d->rc3, EDHOC_ERR_MAC);
    assert_int_equal(edhoc_session_tolerated(&d->r), 0);
    free(d);
    t->cr.tolerate = EDHOC_DEV_KID_INT;
    d = dev_handshake(&t->u);
    assert_dev_completed(d);
    assert_int_equal(edhoc_session_tolerated(&d->r), EDHOC_DEV_KID_INT);
    assert_int_equal(edhoc_session_tolerated(&d->i), 0);
    free(d);
    free(t);
}

/* A method 0 pair (signatures both ways, suite 2) with C_R = 0x27,
 * ID_CRED_I = {4: h'2b'}, ID_CRED_R = {4: h'32'}. */
static struct dev_setup pair_setup(struct pair *p)
{
    return (struct dev_setup){
        .ci = &p->ci,
        .cr = &p->cr,
        .c_i = 0x37,
        .c_r = 0x27,
        .cred_r = &p->pr.cred,
        .cred_i = &p->pi.cred,
    };
}

static void test_deviation_signature(void **state)
{
    (void)state;
    struct pair *p = pair_new(0, 2, false);
    struct dev_setup u = pair_setup(p);

    /* The signature is over MAC_2 (RFC 9528 Section 5.3.2: "payload =
     * MAC_2", "protected = << ID_CRED_R >>"): MAC_2 recomputed under
     * c-bstr makes it verify. */
    p->cr.emulate = EDHOC_DEV_C_BSTR;
    struct dev_run *d = dev_handshake(&u);
    assert_int_equal(d->rc2, EDHOC_ERR_SIGNATURE);
    assert_diagnosis(&d->i, EDHOC_DEV_C_BSTR, 2,
                     "Signature_or_MAC_2 verifies when C_R is the byte string h'27' instead of "
                     "the int -8 (0x27) in context_2 (RFC 9528 Section 3.3.2): the peer "
                     "deviates; --tolerate c-bstr accepts it");
    free(d);
    p->ci.tolerate = EDHOC_DEV_C_BSTR;
    d = dev_handshake(&u);
    assert_dev_completed(d);
    assert_int_equal(edhoc_session_tolerated(&d->i), EDHOC_DEV_C_BSTR);
    free(d);

    /* Both at once, as uoscore-uedhoc does: kid-int applies to the COSE
     * protected header too (Section 3.5.3.2: the compact form is "not
     * applied to ... context_y, or the COSE protected header"). Only the
     * pair explains it, and tolerating half of it accepts nothing. */
    p->cr.emulate = EDHOC_DEV_C_BSTR | EDHOC_DEV_KID_INT;
    d = dev_handshake(&u);
    assert_int_equal(d->rc2, EDHOC_ERR_SIGNATURE);
    static const char text_pair[] =
        "Signature_or_MAC_2 verifies when C_R is the byte string h'27' instead of the int -8 "
        "(0x27) in context_2 (RFC 9528 Section 3.3.2) and ID_CRED_R is {4: -19} instead of {4: "
        "h'32'} in context_2 and the protected header (RFC 9528 Section 3.5.3.2): the peer "
        "deviates; --tolerate c-bstr,kid-int accepts it";
    assert_true(strlen(text_pair) < sizeof((struct edhoc_diagnosis *)0)->text);
    assert_diagnosis(&d->i, EDHOC_DEV_C_BSTR | EDHOC_DEV_KID_INT, 2, text_pair);
    assert_int_equal(edhoc_session_tolerated(&d->i), 0);
    free(d);
    p->ci.tolerate = EDHOC_DEV_C_BSTR | EDHOC_DEV_KID_INT;
    d = dev_handshake(&u);
    /* the responder emulating kid-int rebuilds ID_CRED_I {4: h'2b'} as
     * {4: -12}, in context_3 and the protected header: message_3 follows
     * kid-int (c-bstr has no place in context_3) and completes */
    assert_int_equal(d->rc2, 0);
    assert_int_equal(edhoc_session_tolerated(&d->i), EDHOC_DEV_C_BSTR | EDHOC_DEV_KID_INT);
    assert_int_equal(edhoc_session_followed(&d->i), EDHOC_DEV_KID_INT);
    assert_dev_completed(d);
    free(d);
    /* An initiator emulating kid-int itself: the pair still explains
     * MAC_2, but what it has to tolerate is the difference, c-bstr. */
    p->ci.emulate = EDHOC_DEV_KID_INT;
    p->ci.tolerate = 0;
    d = dev_handshake(&u);
    assert_int_equal(d->rc2, EDHOC_ERR_SIGNATURE);
    assert_diagnosis(&d->i, EDHOC_DEV_C_BSTR | EDHOC_DEV_KID_INT, 2,
                     "Signature_or_MAC_2 verifies when C_R is the byte string h'27' instead of "
                     "the int -8 (0x27) in context_2 (RFC 9528 Section 3.3.2) and ID_CRED_R is "
                     "{4: -19} instead of {4: h'32'} in context_2 and the protected header (RFC "
                     "9528 Section 3.5.3.2): the peer deviates; --tolerate c-bstr accepts it");
    free(d);
    p->ci.tolerate = EDHOC_DEV_C_BSTR;
    d = dev_handshake(&u);
    assert_dev_completed(d);
    assert_int_equal(edhoc_session_tolerated(&d->i), EDHOC_DEV_C_BSTR);
    free(d);

    /* message_3 signed by an initiator emulating kid-int, the responder
     * ({4: h'18'}, no int form) following the RFC. */
    static const uint8_t id_cred_r_18[] = {0xa1, 0x04, 0x41, 0x18};
    p->cr.id_cred = id_cred_r_18;
    p->cr.id_cred_len = sizeof id_cred_r_18;
    p->cr.emulate = 0;
    p->ci.tolerate = 0;
    d = dev_handshake(&u);
    assert_int_equal(d->rc2, 0);
    assert_int_equal(d->rc3, EDHOC_ERR_SIGNATURE);
    assert_diagnosis(&d->r, EDHOC_DEV_KID_INT, 3,
                     "Signature_or_MAC_3 verifies when ID_CRED_I is {4: -12} instead of {4: "
                     "h'2b'} in context_3 and the protected header (RFC 9528 Section 3.5.3.2): "
                     "the peer deviates; --tolerate kid-int accepts it");
    free(d);
    p->cr.tolerate = EDHOC_DEV_KID_INT;
    d = dev_handshake(&u);
    assert_dev_completed(d);
    assert_int_equal(edhoc_session_tolerated(&d->r), EDHOC_DEV_KID_INT);
    free(d);
    free(p);
}

/* id-cred-compact, cred-wrap, ead-omitted: detected in message_2 (and
 * message_3 where the emulation can be kept out of message_2), for a MAC
 * and for a signature, and accepted when tolerated. */
static void test_deviation_detect_others(void **state)
{
    (void)state;
    static const uint8_t val[] = {0xab, 0xcd};
    struct edhoc_ead_item ead[] = {{.label = 7, .value = val, .value_len = 2, .has_value = true}};
    static const unsigned bits[] = {EDHOC_DEV_ID_CRED_COMPACT, EDHOC_DEV_CRED_WRAP,
                                    EDHOC_DEV_EAD_OMITTED};
    static const char *const texts_2[] = {
        /* Section 3.5.3.2: the compact form is "not applied to ...
         * context_y" */
        "%s_2 %s when ID_CRED_R is its compact form (the int -19) instead of {4: h'32'} in "
        "context_2%s (RFC 9528 Section 3.5.3.2): the peer deviates; --tolerate "
        "id-cred-compact accepts it",
        /* Section 3.5.2: "When the authentication credential includes a
         * COSE_Key but is not in a CWT, CRED_x SHALL be an untagged CWT
         * Claims Set (CCS)." -- not a byte string around it */
        "%s_2 %s when CRED_R is wrapped in an extra byte string in context_2 (RFC 9528 Section "
        "3.5.2): the peer deviates; --tolerate cred-wrap accepts it",
        /* Section 5.3.2: context_2 = << C_R, ID_CRED_R, TH_2, CRED_R, ?
         * EAD_2 >> -- EAD_2 is in it when message_2 carries it */
        "%s_2 %s when EAD_2 is left out of context_2 although message_2 carries it (RFC 9528 "
        "Section 5.3.2): the peer deviates; --tolerate ead-omitted accepts it",
    };
    for (int method = 0; method <= 3; method += 3) {
        bool sig = method == 0;
        for (size_t k = 0; k < 3; k++) {
            struct pair *p = pair_new(method, 2, false);
            struct dev_setup u = pair_setup(p);
            p->cr.ead[2] = ead;
            p->cr.n_ead[2] = 1;
            p->cr.emulate = bits[k];
            struct dev_run *d = dev_handshake(&u);
            assert_int_equal(d->rc2, sig ? EDHOC_ERR_SIGNATURE : EDHOC_ERR_MAC);
            char want[320];
            if (k == 0)
                snprintf(want, sizeof want, texts_2[k], sig ? "Signature_or_MAC" : "MAC",
                         sig ? "verifies" : "matches", sig ? " and the protected header" : "");
            else
                snprintf(want, sizeof want, texts_2[k], sig ? "Signature_or_MAC" : "MAC",
                         sig ? "verifies" : "matches");
            assert_diagnosis(&d->i, bits[k], 2, want);
            free(d);
            p->ci.tolerate = bits[k];
            d = dev_handshake(&u);
            /* the responder emulates it on message_3 as well, and the
             * initiator's message_3 follows it (ead-omitted has nothing
             * to leave out: there is no EAD_3) */
            assert_int_equal(d->rc2, 0);
            assert_int_equal(edhoc_session_tolerated(&d->i), bits[k]);
            assert_int_equal(edhoc_session_followed(&d->i),
                             bits[k] == EDHOC_DEV_EAD_OMITTED ? 0 : bits[k]);
            assert_dev_completed(d);
            free(d);
            free(p);
        }

        /* message_3: ID_CRED_R as kccs (no kid: id-cred-compact does not
         * apply to message_2), EAD only in message_3. */
        struct pair *p = pair_new(method, 2, true);
        struct dev_setup u = pair_setup(p);
        static const uint8_t id_cred_i_kid[] = {0xa1, 0x04, 0x41, 0x2b};
        p->ci.id_cred = id_cred_i_kid;
        p->ci.id_cred_len = sizeof id_cred_i_kid;
        p->ci.ead[3] = ead;
        p->ci.n_ead[3] = 1;
        p->ci.emulate = EDHOC_DEV_ID_CRED_COMPACT;
        struct dev_run *d = dev_handshake(&u);
        assert_int_equal(d->rc2, 0);
        assert_int_equal(d->rc3, sig ? EDHOC_ERR_SIGNATURE : EDHOC_ERR_MAC);
        struct edhoc_diagnosis diag;
        assert_int_equal(edhoc_session_diagnosis(&d->r, &diag), 0);
        assert_int_equal(diag.matched, EDHOC_DEV_ID_CRED_COMPACT);
        assert_int_equal(diag.message, 3);
        assert_non_null(strstr(diag.text, "ID_CRED_I is its compact form (the int -12) instead "
                                          "of {4: h'2b'} in context_3"));
        free(d);
        p->ci.emulate = EDHOC_DEV_EAD_OMITTED;
        d = dev_handshake(&u);
        assert_int_equal(d->rc3, sig ? EDHOC_ERR_SIGNATURE : EDHOC_ERR_MAC);
        assert_int_equal(edhoc_session_diagnosis(&d->r, &diag), 0);
        assert_int_equal(diag.matched, EDHOC_DEV_EAD_OMITTED);
        assert_int_equal(diag.message, 3);
        assert_non_null(strstr(diag.text, "EAD_3 is left out of context_3 although message_3 "
                                          "carries it (RFC 9528 Section 5.4.2)"));
        free(d);
        p->cr.tolerate = EDHOC_DEV_EAD_OMITTED;
        d = dev_handshake(&u);
        assert_dev_completed(d);
        assert_int_equal(edhoc_session_tolerated(&d->r), EDHOC_DEV_EAD_OMITTED);
        free(d);
        free(p);
    }
}

/* cred-wrap the other way: an X.509 CRED_x is a byte string (RFC 9528
 * Section 3.5.2: "CRED_x SHALL be the DER encoded certificate, encoded as
 * a bstr"); a responder using the bare DER is diagnosed. RFC 9529 trace 1
 * material (method 0, suite 0, x5t). */
static void test_deviation_cred_unwrapped(void **state)
{
    (void)state;
    struct vec_scope v = load_vectors("rfc9529-trace1.json");
    static struct side si, sr;
    load_side(v, true, 1, &si);
    load_side(v, false, 1, &sr);
    static struct edhoc_crypto_ops ops;
    ops = *test_backend();
    int suites[] = {0};
    struct edhoc_config ci, cr;
    config_side(&ci, &ops, &si, 0, suites, 1, NULL);
    config_side(&cr, &ops, &sr, 0, suites, 1, NULL);
    ci.trace = cr.trace = NULL;
    cr.emulate = EDHOC_DEV_CRED_WRAP;
    struct dev_setup u = {
        .ci = &ci,
        .cr = &cr,
        .c_i = si.cid[0],
        .c_r = sr.cid[0],
        .x = si.eph,
        .x_len = si.eph_len,
        .y = sr.eph,
        .y_len = sr.eph_len,
        .cred_r = &sr.cred,
        .cred_i = &si.cred,
    };
    struct dev_run *d = dev_handshake(&u);
    assert_int_equal(d->rc2, EDHOC_ERR_SIGNATURE);
    assert_diagnosis(&d->i, EDHOC_DEV_CRED_WRAP, 2,
                     "Signature_or_MAC_2 verifies when CRED_R is used without its byte string "
                     "head in context_2 (RFC 9528 Section 3.5.2): the peer deviates; --tolerate "
                     "cred-wrap accepts it");
    free(d);
}

/* What no deviation explains is reported as such, and never tolerated. */
static void test_deviation_not_explained(void **state)
{
    (void)state;
    for (int method = 0; method <= 3; method += 3) {
        bool sig = method == 0;
        const char *what = sig ? "Signature_or_MAC_2" : "MAC_2";
        int bad = sig ? EDHOC_ERR_SIGNATURE : EDHOC_ERR_MAC;
        char want[128];
        snprintf(want, sizeof want, "%s verification failed: no known deviation explains it", what);

        /* A credential with another key entirely: RFC 9528 Section 5.3.3,
         * "Verify Signature_or_MAC_2 ...", fails under every variant. */
        struct pair *p = pair_new(method, 2, false);
        struct dev_setup u = pair_setup(p);
        struct peer other;
        make_peer(&other, p->pr.key.curve, 0x32, false);
        u.cred_r = &other.cred;
        p->ci.tolerate = EDHOC_DEV_ALL;
        struct dev_run *d = dev_handshake(&u);
        assert_int_equal(d->rc2, bad);
        assert_diagnosis(&d->i, 0, 2, want);
        /* the error text names the failure alone when nothing explains it */
        char base[64];
        snprintf(base, sizeof base, "%s verification failed", what);
        assert_full_error_text(&d->i, base);
        assert_int_equal(edhoc_session_tolerated(&d->i), 0);
        free(d);

        /* A genuinely wrong MAC (RFC 9528 Section 9.1: "the EDHOC session
         * is aborted when verification fails"), even from a peer that
         * deviates and with every deviation tolerated. */
        u.cred_r = &p->pr.cred;
        for (int emulating = 0; emulating < 2; emulating++) {
            p->cr.emulate = emulating ? EDHOC_DEV_C_BSTR : 0;
            struct edhoc_session i, r;
            static struct edhoc_received rx;
            static uint8_t m1[EDHOC_MAX_MESSAGE], m2[EDHOC_MAX_MESSAGE];
            static const uint8_t c_i = 0x37, c_r = 0x27;
            assert_int_equal(edhoc_session_init(&i, EDHOC_INITIATOR, &p->ci), 0);
            assert_int_equal(edhoc_session_init(&r, EDHOC_RESPONDER, &p->cr), 0);
            assert_int_equal(edhoc_session_set_conn_id(&i, &c_i, 1), 0);
            assert_int_equal(edhoc_session_set_conn_id(&r, &c_r, 1), 0);
            int n1 = edhoc_initiator_prepare_message_1(&i, m1, sizeof m1);
            assert_int_equal(edhoc_responder_process_message_1(&r, m1, (size_t)n1, NULL), 0);
            int n2 = edhoc_responder_prepare_message_2(&r, m2, sizeof m2);
            assert_true(n2 > 0);
            m2[n2 - 1] ^= sig ? 0x80 : 0x01; /* last byte of Signature_or_MAC_2 */
            assert_int_equal(edhoc_initiator_process_message_2(&i, m2, (size_t)n2, &rx), 0);
            assert_int_equal(edhoc_initiator_verify_message_2(&i, &rx, &p->pr.cred), bad);
            assert_diagnosis(&i, 0, 2, want);
            assert_int_equal(edhoc_session_tolerated(&i), 0);
            assert_int_equal(edhoc_session_state(&i), EDHOC_STATE_ERROR);
        }
        free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deviation_names),
        cmocka_unit_test(test_deviation_c_bstr),
        cmocka_unit_test(test_deviation_kid_int),
        cmocka_unit_test(test_deviation_signature),
        cmocka_unit_test(test_deviation_detect_others),
        cmocka_unit_test(test_deviation_cred_unwrapped),
        cmocka_unit_test(test_deviation_not_explained),
    };
    return cmocka_run_group_tests_name("openssl", tests, NULL, NULL);
}
