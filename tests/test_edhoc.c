/*
 * EDHOC core tests, RFC 9529 vectors: traces 1 and 2 byte for byte in both
 * roles (messages and every traced intermediate value), the key log and
 * key update of a trace, and the 15 invalid messages of RFC 9529 Section 4.
 * main runs them with OpenSSL, then again with libsodium and with the
 * composite backend (issue #18: every backend gives the same bytes).
 */
#include "edhoc_test_common.h"

static bool tracer_saw(const struct tracer *t, const char *key)
{
    char pat[72];
    snprintf(pat, sizeof pat, "%s ", key);
    const char *p = t->seen;
    size_t pl = strlen(pat);
    while ((p = strstr(p, pat)) != NULL) {
        if (p == t->seen || p[-1] == ' ')
            return true;
        p += pl;
    }
    return false;
}

static void assert_saw_all(const struct tracer *t, const char *const *keys)
{
    for (size_t i = 0; keys[i]; i++) {
        if (!tracer_saw(t, keys[i]))
            print_error("%s: %s never traced\n", t->role, keys[i]);
        assert_true(tracer_saw(t, keys[i]));
    }
}

/* Pinned random source: hands out queued byte strings, then fails. */
struct pinned {
    const uint8_t *chunks[4];
    size_t lens[4];
    size_t n, next;
};

static int pinned_random(void *ctx, uint8_t *out, size_t len)
{
    struct pinned *p = ctx;
    if (p->next >= p->n || p->lens[p->next] != len)
        return EDHOC_CRYPTO_ERR_RANDOM;
    memcpy(out, p->chunks[p->next], len);
    p->next++;
    return 0;
}

static struct edhoc_crypto_ops pinned_ops(struct pinned *p)
{
    struct edhoc_crypto_ops ops = *test_backend();
    ops.random = pinned_random;
    ops.rng_ctx = p;
    return ops;
}

/* ---- traces ---- */

static const char *const keys_i[] = {"x",
                                     "g_x",
                                     "message_1",
                                     "h_message_1",
                                     "input_th_2",
                                     "th_2",
                                     "g_xy",
                                     "prk_2e",
                                     "prk_3e2m",
                                     "keystream_2",
                                     "plaintext_2",
                                     "context_2",
                                     "mac_2",
                                     "signature_or_mac_2",
                                     "input_th_3",
                                     "th_3",
                                     "prk_4e3m",
                                     "context_3",
                                     "mac_3",
                                     "signature_or_mac_3",
                                     "plaintext_3",
                                     "a_3",
                                     "k_3",
                                     "iv_3",
                                     "ciphertext_3",
                                     "message_3",
                                     "input_th_4",
                                     "th_4",
                                     "prk_out",
                                     "prk_exporter",
                                     "plaintext_4",
                                     "a_4",
                                     "k_4",
                                     "iv_4",
                                     "oscore_master_secret",
                                     "oscore_master_salt",
                                     "prk_out_after_keyupdate",
                                     "prk_exporter_after_keyupdate",
                                     NULL};
static const char *const keys_r[] = {"y",
                                     "g_y",
                                     "h_message_1",
                                     "input_th_2",
                                     "th_2",
                                     "g_xy",
                                     "prk_2e",
                                     "prk_3e2m",
                                     "context_2",
                                     "mac_2",
                                     "signature_or_mac_2",
                                     "plaintext_2",
                                     "keystream_2",
                                     "ciphertext_2",
                                     "message_2",
                                     "input_th_3",
                                     "th_3",
                                     "a_3",
                                     "k_3",
                                     "iv_3",
                                     "plaintext_3",
                                     "prk_4e3m",
                                     "context_3",
                                     "mac_3",
                                     "signature_or_mac_3",
                                     "input_th_4",
                                     "th_4",
                                     "prk_out",
                                     "prk_exporter",
                                     "plaintext_4",
                                     "a_4",
                                     "k_4",
                                     "iv_4",
                                     "ciphertext_4",
                                     "message_4",
                                     "oscore_master_secret",
                                     "oscore_master_salt",
                                     "prk_out_after_keyupdate",
                                     "prk_exporter_after_keyupdate",
                                     NULL};
static const char *const keys_dh_i[] = {"salt_3e2m", "g_rx", "salt_4e3m", "g_iy", NULL};
static const char *const keys_sig[] = {"message_to_be_signed_2", "message_to_be_signed_3", NULL};

static void check_oscore(struct vec_scope v, struct edhoc_session *s, bool initiator)
{
    struct edhoc_oscore_params o;
    assert_int_equal(edhoc_session_oscore(s, &o), 0);
    assert_vec(v, "oscore_master_secret", o.master_secret, o.master_secret_len);
    assert_vec(v, "oscore_master_salt", o.master_salt, o.master_salt_len);
    assert_vec(v, initiator ? "oscore_client_sender_id" : "oscore_server_sender_id", o.sender_id,
               o.sender_id_len);
    assert_vec(v, initiator ? "oscore_client_recipient_id" : "oscore_server_recipient_id",
               o.recipient_id, o.recipient_id_len);
    assert_int_equal(o.aead_alg, vec_int(v, "oscore_aead_algorithm"));
    assert_int_equal(o.hash_alg, vec_int(v, "oscore_hkdf_hash_algorithm"));
}

static void check_prks(struct vec_scope v, struct edhoc_session *s)
{
    uint8_t b[64];
    int n = edhoc_session_prk_out(s, b, sizeof b);
    assert_true(n > 0);
    assert_vec(v, "prk_out", b, (size_t)n);
    n = edhoc_session_prk_exporter(s, b, sizeof b);
    assert_true(n > 0);
    assert_vec(v, "prk_exporter", b, (size_t)n);
}

static void check_key_update(struct vec_scope v, struct edhoc_session *s)
{
    uint8_t ctx[64], b[64];
    size_t cl = hexbytes(v, "keyupdate_context", ctx, sizeof ctx);
    assert_int_equal(edhoc_session_key_update(s, ctx, cl), 0);
    int n = edhoc_session_prk_out(s, b, sizeof b);
    assert_vec(v, "prk_out_after_keyupdate", b, (size_t)n);
    n = edhoc_session_prk_exporter(s, b, sizeof b);
    assert_vec(v, "prk_exporter_after_keyupdate", b, (size_t)n);
    uint8_t ms[16], salt[8];
    assert_int_equal(edhoc_session_export(s, 0, NULL, 0, ms, sizeof ms), 0);
    assert_vec(v, "oscore_master_secret_after_keyupdate", ms, sizeof ms);
    assert_int_equal(edhoc_session_export(s, 1, NULL, 0, salt, sizeof salt), 0);
    assert_vec(v, "oscore_master_salt_after_keyupdate", salt, sizeof salt);
}

/* The key log's edhoc_secrets row of a whole handshake is the trace's
 * G_X, PRK_2e, TH_2, PRK_3e2m, TH_3, PRK_4e3m, TH_4 (RFC 9529 Sections 2
 * and 3 print them), each as bare lower-case hex, comma-separated, one
 * line; the same on both sides (TH_4 and PRK_4e3m are known once
 * message_3 is made or handled, RFC 9528 5.4.3 and 5.4.4). */
static void check_key_log(struct vec_scope v, const struct edhoc_key_log *kl)
{
    static const char *const keys[7] = {"g_x",  "prk_2e",   "th_2", "prk_3e2m",
                                        "th_3", "prk_4e3m", "th_4"};
    char want[1024] = "";
    size_t at = 0;
    for (size_t k = 0; k < 7; k++) {
        uint8_t b[64];
        size_t n = hexbytes(v, keys[k], b, sizeof b);
        assert_true(n > 0);
        if (k)
            want[at++] = ',';
        for (size_t j = 0; j < n; j++)
            at += (size_t)snprintf(want + at, sizeof want - at, "%02x", b[j]);
    }
    want[at++] = '\n';
    want[at] = '\0';
    assert_true(edhoc_key_log_complete(kl));
    char row[1024];
    long n = edhoc_key_log_row(kl, row, sizeof row);
    assert_int_equal(n, (long)at);
    assert_string_equal(row, want);
    /* Too small a buffer is refused, never a cut row. */
    assert_int_equal(edhoc_key_log_row(kl, row, at), -1);
}

/* Run a whole trace. trace_no 1 or 2. The initiator takes its X from the
 * pinned random, the responder its Y from set_ephemeral, so both paths are
 * exercised. For trace 2 the rejected first message_1 comes first. */
static void run_trace(int trace_no)
{
    struct vec_scope v =
        load_vectors(trace_no == 1 ? "rfc9529-trace1.json" : "rfc9529-trace2.json");
    struct side si, sr;
    load_side(v, true, trace_no, &si);
    load_side(v, false, trace_no, &sr);
    int suite = (int)vec_int(v, "cipher_suite");
    uint8_t method_b;
    hexbytes(v, "method", &method_b, 1);

    uint8_t x_first[64], c_i_first[8];
    size_t x_first_len = 0, c_i_first_len = 0;
    struct pinned pin_i = {0};
    if (trace_no == 2) {
        x_first_len = hexbytes(v, "x_first", x_first, sizeof x_first);
        c_i_first_len = hexbytes(v, "c_i_first", c_i_first, sizeof c_i_first);
        pin_i.chunks[pin_i.n] = x_first;
        pin_i.lens[pin_i.n++] = x_first_len;
    }
    pin_i.chunks[pin_i.n] = si.eph;
    pin_i.lens[pin_i.n++] = si.eph_len;
    struct edhoc_crypto_ops ops_i = pinned_ops(&pin_i);
    struct pinned pin_r = {0}; /* the responder must never draw */
    struct edhoc_crypto_ops ops_r = pinned_ops(&pin_r);

    struct tracer ti = {.v = v, .role = "initiator"}, tr = {.v = v, .role = "responder"};
    int suites_i2[] = {6, 2};
    int suites_i1[] = {suite};
    int suites_r[] = {suite};
    struct edhoc_config ci, cr;
    config_side(&ci, &ops_i, &si, method_b, trace_no == 2 ? suites_i2 : suites_i1,
                trace_no == 2 ? 2 : 1, &ti);
    config_side(&cr, &ops_r, &sr, 0, suites_r, 1, &tr);

    struct edhoc_session i, r;
    assert_int_equal(edhoc_session_init(&i, EDHOC_INITIATOR, &ci), 0);
    uint8_t m1[256], m2[512], m3[512], m4[64], err[64];
    int n1, n2, n3, n4;

    if (trace_no == 2) {
        /* Section 3.1-3.2: SUITES_I = 6 is rejected with SUITES_R = 2. */
        assert_int_equal(edhoc_session_set_conn_id(&i, c_i_first, c_i_first_len), 0);
        ci.trace = NULL;
        n1 = edhoc_initiator_prepare_message_1(&i, m1, sizeof m1);
        assert_true(n1 > 0);
        /* RFC 9529 prints this message_1 with a P-256 G_X although suite 6
         * uses X25519; everything else must match, and G_X must be the
         * X25519 public key of x_first. */
        uint8_t want1[64], gx[32];
        size_t wl = hexbytes(v, "message_1_first", want1, sizeof want1);
        assert_int_equal((size_t)n1, wl);
        assert_memory_equal(m1, want1, 4);
        assert_memory_equal(m1 + 36, want1 + 36, 1);
        size_t gxl = 0;
        assert_int_equal(test_backend()->public_key(EDHOC_COSE_CRV_X25519, true, x_first, gx, &gxl),
                         0);
        assert_memory_equal(m1 + 4, gx, 32);
        /* the RFC's own bytes are rejected the same way */
        {
            struct edhoc_session r1;
            struct edhoc_config cr1 = cr;
            cr1.trace = NULL;
            assert_int_equal(edhoc_session_init(&r1, EDHOC_RESPONDER, &cr1), 0);
            assert_int_equal(edhoc_responder_process_message_1(&r1, want1, wl, NULL),
                             EDHOC_ERR_WRONG_SUITE);
            int ne1 = edhoc_session_write_error(&r1, err, sizeof err);
            assert_true(ne1 > 0);
            assert_vec(v, "error", err, (size_t)ne1);
        }
        struct edhoc_session r0;
        struct edhoc_config cr0 = cr;
        cr0.trace = NULL;
        assert_int_equal(edhoc_session_init(&r0, EDHOC_RESPONDER, &cr0), 0);
        assert_int_equal(edhoc_responder_process_message_1(&r0, m1, (size_t)n1, NULL),
                         EDHOC_ERR_WRONG_SUITE);
        assert_int_equal(edhoc_session_state(&r0), EDHOC_STATE_ERROR);
        int ne = edhoc_session_write_error(&r0, err, sizeof err);
        assert_true(ne > 0);
        assert_vec(v, "error", err, (size_t)ne);
        struct edhoc_error_info info;
        assert_int_equal(edhoc_session_process_error(&i, err, (size_t)ne, &info), 0);
        assert_int_equal(info.code, 2);
        assert_int_equal(info.n_suites, 1);
        assert_int_equal(info.suites[0], 2);
        assert_int_equal(edhoc_session_state(&i), EDHOC_STATE_START);
        ci.trace = trace_check;
    }

    /* The key log rides on the trace and hands every value on to the
     * trace check, so both see the same handshake. */
    struct edhoc_key_log kl_i = {.next = ci.trace, .next_ctx = ci.trace_ctx};
    struct edhoc_key_log kl_r = {.next = cr.trace, .next_ctx = cr.trace_ctx};
    ci.trace = edhoc_key_log_trace;
    ci.trace_ctx = &kl_i;
    cr.trace = edhoc_key_log_trace;
    cr.trace_ctx = &kl_r;
    assert_int_equal(edhoc_session_set_conn_id(&i, si.cid, si.cid_len), 0);
    n1 = edhoc_initiator_prepare_message_1(&i, m1, sizeof m1);
    assert_true(n1 > 0);
    assert_vec(v, "message_1", m1, (size_t)n1);
    assert_int_equal(pin_i.next, pin_i.n);

    assert_int_equal(edhoc_session_init(&r, EDHOC_RESPONDER, &cr), 0);
    assert_int_equal(edhoc_session_set_conn_id(&r, sr.cid, sr.cid_len), 0);
    assert_int_equal(edhoc_session_set_ephemeral(&r, sr.eph, sr.eph_len), 0);
    assert_int_equal(edhoc_responder_process_message_1(&r, m1, (size_t)n1, NULL), 0);
    assert_int_equal(edhoc_session_method(&r), method_b);
    assert_int_equal(edhoc_session_suite(&r), suite);
    n2 = edhoc_responder_prepare_message_2(&r, m2, sizeof m2);
    assert_true(n2 > 0);
    assert_vec(v, "message_2", m2, (size_t)n2);
    /* The length known before any crypto is the trace's. */
    assert_int_equal(edhoc_responder_message_2_len(&cr, method_b, suite, sr.cid, sr.cid_len), n2);

    static struct edhoc_received rx;
    assert_int_equal(edhoc_initiator_process_message_2(&i, m2, (size_t)n2, &rx), 0);
    assert_int_equal(edhoc_session_state(&i), EDHOC_STATE_VERIFY_M2);
    /* ID_CRED_R is handed over in full map form, even when compact */
    assert_memory_equal(rx.id_cred, sr.id_cred, sr.id_cred_len);
    assert_int_equal(rx.id_cred_len, sr.id_cred_len);
    assert_int_equal(rx.n_ead, 0);
    assert_int_equal(edhoc_initiator_verify_message_2(&i, &rx, &sr.cred), 0);
    n3 = edhoc_initiator_prepare_message_3(&i, m3, sizeof m3);
    assert_true(n3 > 0);
    assert_vec(v, "message_3", m3, (size_t)n3);
    assert_int_equal(edhoc_session_state(&i), EDHOC_STATE_COMPLETED);

    struct expect_cred e = {si.id_cred, si.id_cred_len, &si.cred};
    assert_int_equal(
        edhoc_responder_handle_message_3(&r, m3, (size_t)n3, &rx, resolve_expected, &e), 0);
    assert_int_equal(edhoc_session_state(&r), EDHOC_STATE_COMPLETED);
    n4 = edhoc_responder_prepare_message_4(&r, m4, sizeof m4);
    assert_true(n4 > 0);
    assert_vec(v, "message_4", m4, (size_t)n4);
    assert_int_equal(edhoc_initiator_process_message_4(&i, m4, (size_t)n4, &rx), 0);
    /* message_4 once only */
    assert_int_equal(edhoc_initiator_process_message_4(&i, m4, (size_t)n4, &rx), EDHOC_ERR_STATE);

    check_key_log(v, &kl_i);
    check_key_log(v, &kl_r);
    edhoc_key_log_wipe(&kl_i);
    assert_false(edhoc_key_log_complete(&kl_i));
    assert_ptr_equal(kl_i.next, trace_check); /* wiping keeps the chain */
    check_prks(v, &i);
    check_prks(v, &r);
    check_oscore(v, &i, true);
    check_oscore(v, &r, false);
    check_key_update(v, &i);
    check_key_update(v, &r);

    assert_int_equal(ti.mismatched, 0);
    assert_int_equal(tr.mismatched, 0);
    assert_saw_all(&ti, keys_i);
    assert_saw_all(&tr, keys_r);
    if (trace_no == 2) {
        assert_saw_all(&ti, keys_dh_i);
        assert_saw_all(&tr, keys_dh_i);
    } else {
        assert_saw_all(&ti, keys_sig);
        assert_saw_all(&tr, keys_sig);
    }
    print_message("trace %d: %d initiator and %d responder values compared\n", trace_no,
                  ti.compared, tr.compared);
}

static void test_trace_1(void **state)
{
    (void)state;
    run_trace(1);
}

static void test_trace_2(void **state)
{
    (void)state;
    run_trace(2);
}

/* ---- RFC 9529 Section 4: invalid messages ---- */

struct invalid_expect {
    const char *section;
    int code;
};

static const struct invalid_expect invalid_expected[] = {
    {"4.1.1", EDHOC_ERR_MALFORMED},         {"4.1.2", EDHOC_ERR_CONN_ID_ENCODING},
    {"4.1.3", EDHOC_ERR_SUITES_ENCODING},   {"4.1.4", EDHOC_ERR_MALFORMED},
    {"4.1.5", EDHOC_ERR_TRAILING},          {"4.1.6", EDHOC_ERR_ID_CRED_ENCODING},
    {"4.1.7", EDHOC_ERR_ID_CRED_ENCODING},  {"4.2.1", EDHOC_ERR_EPHEMERAL_LENGTH},
    {"4.2.2", EDHOC_ERR_INVALID_POINT},     {"4.2.3", EDHOC_ERR_INVALID_POINT},
    {"4.2.4", EDHOC_ERR_INVALID_POINT},     {"4.2.5", EDHOC_ERR_MAC_LENGTH},
    {"4.2.6", EDHOC_ERR_EPHEMERAL_LENGTH},  {"4.3.1", EDHOC_ERR_NOT_DETERMINISTIC},
    {"4.3.2", EDHOC_ERR_NOT_DETERMINISTIC},
};

/* A trace 2 initiator that has sent message_1 and waits for message_2. */
static void trace2_initiator(struct vec_scope v, struct side *si, struct edhoc_config *ci,
                             struct edhoc_crypto_ops *ops, struct edhoc_session *i)
{
    static int suites[] = {6, 2};
    load_side(v, true, 2, si);
    *ops = *test_backend();
    config_side(ci, ops, si, 3, suites, 2, NULL);
    ci->trace = NULL;
    assert_int_equal(edhoc_session_init(i, EDHOC_INITIATOR, ci), 0);
    int s2[] = {2};
    assert_int_equal(edhoc_session_set_peer_suites(i, s2, 1), 0);
    assert_int_equal(edhoc_session_set_conn_id(i, si->cid, si->cid_len), 0);
    assert_int_equal(edhoc_session_set_ephemeral(i, si->eph, si->eph_len), 0);
    uint8_t m1[128];
    int n = edhoc_initiator_prepare_message_1(i, m1, sizeof m1);
    assert_true(n > 0);
    assert_vec(v, "message_1", m1, (size_t)n);
}

static void test_invalid_messages(void **state)
{
    (void)state;
    struct vec_scope inv = load_vectors("rfc9529-invalid.json");
    struct vec_scope t2 = load_vectors("rfc9529-trace2.json");
    size_t count = 0;
    for (size_t k = 0;; k++) {
        struct vec_scope e = vec_array_item(inv, "vectors", k);
        if (!e.begin)
            break;
        char section[16], message[32];
        vec_str(e, "section", section, sizeof section);
        vec_str(e, "message", message, sizeof message);
        uint8_t msg[128];
        size_t len = vec_hex(e, "hex", msg, sizeof msg);
        assert_int_equal(len, (size_t)vec_int(e, "length"));
        int want = 0;
        for (size_t j = 0; j < sizeof invalid_expected / sizeof invalid_expected[0]; j++)
            if (strcmp(invalid_expected[j].section, section) == 0)
                want = invalid_expected[j].code;
        assert_int_not_equal(want, 0);

        int got;
        if (strcmp(message, "message_1") == 0) {
            /* a responder supporting the suites these messages select */
            static struct side sr;
            load_side(t2, false, 2, &sr);
            int suites_r[] = {2, 0};
            struct edhoc_config cr;
            config_side(&cr, test_backend(), &sr, 0, suites_r, 2, NULL);
            cr.trace = NULL;
            struct edhoc_session r;
            assert_int_equal(edhoc_session_init(&r, EDHOC_RESPONDER, &cr), 0);
            got = edhoc_responder_process_message_1(&r, msg, len, NULL);
            assert_int_equal(edhoc_session_state(&r), EDHOC_STATE_ERROR);
            /* the error message sent back is ERR_CODE 1 with a diagnostic */
            uint8_t err[EDHOC_MAX_ERROR_MESSAGE];
            int ne = edhoc_session_write_error(&r, err, sizeof err);
            assert_true(ne > 2);
            struct edhoc_error_info info;
            assert_int_equal(edhoc_error_message_parse(err, (size_t)ne, &info), 0);
            assert_int_equal(info.code, 1);
            assert_true(info.text_len > 0);
        } else if (strcmp(message, "message_2") == 0) {
            const uint8_t *gy, *ct;
            size_t ctl;
            assert_int_equal(edhoc_message_2_parse(msg, len, 32, &gy, &ct, &ctl), want);
            static struct side si;
            struct edhoc_config ci;
            struct edhoc_crypto_ops ops;
            struct edhoc_session i;
            trace2_initiator(t2, &si, &ci, &ops, &i);
            static struct edhoc_received rx;
            got = edhoc_initiator_process_message_2(&i, msg, len, &rx);
            assert_int_equal(edhoc_session_state(&i), EDHOC_STATE_ERROR);
        } else {
            assert_string_equal(message, "PLAINTEXT_2");
            static struct edhoc_received rx;
            uint8_t c_r[8];
            size_t c_r_len;
            got = edhoc_plaintext_2_parse(msg, len, 3, 2, &rx, c_r, &c_r_len);
        }
        if (got != want)
            print_error("RFC 9529 %s: got %d (%s), want %d (%s)\n", section, got,
                        edhoc_strerror(got), want, edhoc_strerror(want));
        assert_int_equal(got, want);
        count++;
    }
    assert_int_equal(count, 15);
}

/* A PLAINTEXT_2 that only differs from the valid trace 2 one by the
 * encodings fixed above is accepted: the parser is not just rejecting. */
static void test_plaintext_2_valid(void **state)
{
    (void)state;
    struct vec_scope t2 = load_vectors("rfc9529-trace2.json");
    uint8_t pt[64], c_r[8];
    size_t c_r_len = 0;
    size_t n = hexbytes(t2, "plaintext_2", pt, sizeof pt);
    static struct edhoc_received rx;
    assert_int_equal(edhoc_plaintext_2_parse(pt, n, 3, 2, &rx, c_r, &c_r_len), 0);
    assert_int_equal(c_r_len, 1);
    assert_int_equal(c_r[0], 0x27);
    static const uint8_t full[] = {0xa1, 0x04, 0x41, 0x32};
    assert_int_equal(rx.id_cred_len, sizeof full);
    assert_memory_equal(rx.id_cred, full, sizeof full);
    assert_int_equal(rx.sig_len, 8);
    /* method 0 expects a 64-byte signature here */
    assert_int_equal(edhoc_plaintext_2_parse(pt, n, 0, 2, &rx, c_r, &c_r_len),
                     EDHOC_ERR_MAC_LENGTH);
    /* a trailing non-EAD item */
    pt[n] = 0x40;
    assert_int_equal(edhoc_plaintext_2_parse(pt, n + 1, 3, 2, &rx, c_r, &c_r_len),
                     EDHOC_ERR_TRAILING);
    /* an EAD item is fine and listed */
    pt[n] = 0x05;
    pt[n + 1] = 0x41;
    pt[n + 2] = 0x99;
    assert_int_equal(edhoc_plaintext_2_parse(pt, n + 3, 3, 2, &rx, c_r, &c_r_len), 0);
    assert_int_equal(rx.n_ead, 1);
    assert_int_equal(rx.ead[0].label, 5);
    assert_int_equal(rx.ead[0].value_len, 1);
    assert_int_equal(rx.ead[0].value[0], 0x99);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_1),
        cmocka_unit_test(test_trace_2),
        cmocka_unit_test(test_invalid_messages),
        cmocka_unit_test(test_plaintext_2_valid),
    };
    int failed = cmocka_run_group_tests_name("openssl", tests, NULL, NULL);
    const struct CMUnitTest vector_tests[] = {
        cmocka_unit_test(test_trace_1),
        cmocka_unit_test(test_trace_2),
        cmocka_unit_test(test_invalid_messages),
    };
    test_backend = edhoc_crypto_sodium;
    failed += cmocka_run_group_tests_name("sodium", vector_tests, NULL, NULL);
    test_backend = edhoc_crypto_auto;
    failed += cmocka_run_group_tests_name("auto", vector_tests, NULL, NULL);
    return failed;
}
