/*
 * EDHOC core tests: RFC 9529 traces 1 and 2 byte for byte in both roles
 * (messages and every traced intermediate value), the suite negotiation of
 * trace 2, the 15 invalid messages of RFC 9529 Section 4, every method x
 * suite, and the failure paths (bad MAC/signature, unknown credential,
 * EAD, connection identifiers, error messages).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* White-box: a few cases bend a session the way no caller can (C_R = C_I
 * on the wire), so this test sees the library's private session layout.
 * It comes first: it must define the layout before edhoc/edhoc.h. */
#include "../src/edhoc/edhoc_internal.h"

#include "edhoc/cbor.h"
#include "edhoc/cred.h"
#include "edhoc/crypto.h"
#include "edhoc/edhoc.h"
#include "vectors.h"

/* The crypto backend of the tests. main runs everything with OpenSSL, then
 * the RFC vector tests again with libsodium and with the composite (issue
 * #18: every backend gives the same bytes). */
static const struct edhoc_crypto_ops *(*test_backend)(void) = edhoc_crypto_openssl;

/* ---- helpers ---- */

/* vec_load keeps each text allocated; load every file once and keep it
 * reachable, so leak checkers see no loss. */
static struct vec_scope load_vectors(const char *name)
{
    static struct {
        const char *name;
        struct vec_scope v;
    } cache[4];
    for (size_t i = 0; i < 4; i++) {
        if (cache[i].name && strcmp(cache[i].name, name) == 0)
            return cache[i].v;
        if (!cache[i].name) {
            cache[i].name = name;
            cache[i].v = vec_load(name);
            return cache[i].v;
        }
    }
    return vec_load(name);
}

static size_t hexbytes(struct vec_scope v, const char *key, uint8_t *out, size_t cap)
{
    return vec_hex(v, key, out, cap);
}

/* Trace checker: every traced value that has a vector key must match. */
struct tracer {
    struct vec_scope v;
    const char *role;
    int compared;
    int mismatched;
    char seen[2048]; /* names compared, separated by ' ' */
};

static void name_to_key(const char *name, char *key, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; name[i] && j + 1 < cap; i++) {
        char c = name[i];
        if (c == ')')
            continue;
        if (c == '(' || c == ' ')
            c = '_';
        else if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        key[j++] = c;
    }
    key[j] = '\0';
}

static void trace_check(void *ctx, const char *name, const uint8_t *v, size_t len)
{
    struct tracer *t = ctx;
    char key[64];
    name_to_key(name, key, sizeof key);
    if (!vec_has(t->v, key))
        return;
    static uint8_t want[8192];
    size_t n = vec_hex(t->v, key, want, sizeof want);
    t->compared++;
    if (strlen(t->seen) + strlen(key) + 2 < sizeof t->seen) {
        strcat(t->seen, key);
        strcat(t->seen, " ");
    }
    if (n != len || memcmp(want, v, len) != 0) {
        t->mismatched++;
        print_error("%s: trace value %s differs (got %zu bytes, want %zu)\n", t->role, name,
                    len, n);
    }
}

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

static void set_cred(struct edhoc_cred *c, enum edhoc_cred_type type, const uint8_t *cred,
                     size_t cred_len, int curve, const uint8_t *pub, size_t pub_len,
                     const uint8_t *kid, size_t kid_len)
{
    memset(c, 0, sizeof *c);
    c->type = type;
    assert_true(cred_len <= sizeof c->data);
    memcpy(c->data, cred, cred_len);
    c->data_len = cred_len;
    c->cred = c->data;
    c->cred_len = cred_len;
    c->curve = curve;
    memcpy(c->pub, pub, pub_len);
    c->pub_len = pub_len;
    if (kid_len)
        memcpy(c->kid, kid, kid_len);
    c->kid_len = kid_len;
}

/* Endpoint material of one trace side. */
struct side {
    struct edhoc_cred cred;
    struct edhoc_key key;
    uint8_t id_cred[64];
    size_t id_cred_len;
    uint8_t cid[8];
    size_t cid_len;
    uint8_t eph[64];
    size_t eph_len;
};

static void load_side(struct vec_scope v, bool initiator, int trace_no, struct side *s)
{
    uint8_t cred[1024], pub[128], x[64], y[64];
    size_t cred_len, pub_len;
    const char *ck = initiator ? (trace_no == 1 ? "cred_i_cbor" : "cred_i")
                               : (trace_no == 1 ? "cred_r_cbor" : "cred_r");
    cred_len = hexbytes(v, ck, cred, sizeof cred);
    int curve;
    if (trace_no == 1) {
        pub_len = hexbytes(v, initiator ? "pk_i" : "pk_r", pub, sizeof pub);
        curve = EDHOC_COSE_CRV_ED25519;
    } else {
        pub[0] = 0x04;
        size_t xl = hexbytes(v, initiator ? "pk_i_x" : "pk_r_x", x, sizeof x);
        size_t yl = hexbytes(v, initiator ? "pk_i_y" : "pk_r_y", y, sizeof y);
        memcpy(pub + 1, x, xl);
        memcpy(pub + 1 + xl, y, yl);
        pub_len = 1 + xl + yl;
        curve = EDHOC_COSE_CRV_P256;
    }
    s->id_cred_len = hexbytes(v, initiator ? "id_cred_i" : "id_cred_r", s->id_cred,
                              sizeof s->id_cred);
    set_cred(&s->cred, trace_no == 1 ? EDHOC_CRED_X509 : EDHOC_CRED_CCS, cred, cred_len, curve,
             pub, pub_len, NULL, 0);
    memset(&s->key, 0, sizeof s->key);
    s->key.curve = curve;
    s->key.priv_len = hexbytes(v, initiator ? "sk_i" : "sk_r", s->key.priv, sizeof s->key.priv);
    s->cid_len = hexbytes(v, initiator ? "c_i" : "c_r", s->cid, sizeof s->cid);
    s->eph_len = hexbytes(v, initiator ? "x" : "y", s->eph, sizeof s->eph);
}

static void config_side(struct edhoc_config *c, const struct edhoc_crypto_ops *ops,
                        struct side *s, int method, const int *suites, size_t n_suites,
                        struct tracer *t)
{
    memset(c, 0, sizeof *c);
    c->ops = ops;
    c->method = method;
    c->suites = suites;
    c->n_suites = n_suites;
    c->cred = &s->cred;
    c->key = &s->key;
    c->id_cred = s->id_cred;
    c->id_cred_len = s->id_cred_len;
    c->trace = trace_check;
    c->trace_ctx = t;
}

static void assert_vec(struct vec_scope v, const char *key, const uint8_t *got, size_t len)
{
    static uint8_t want[8192];
    size_t n = vec_hex(v, key, want, sizeof want);
    if (n != len || memcmp(want, got, len) != 0)
        print_error("%s differs (got %zu bytes, want %zu)\n", key, len, n);
    assert_int_equal(n, len);
    assert_memory_equal(want, got, len);
}

/* ---- traces ---- */

static const char *const keys_i[] = {
    "x", "g_x", "message_1", "h_message_1", "input_th_2", "th_2", "g_xy", "prk_2e",
    "prk_3e2m", "keystream_2", "plaintext_2", "context_2", "mac_2", "signature_or_mac_2",
    "input_th_3", "th_3", "prk_4e3m", "context_3", "mac_3", "signature_or_mac_3", "plaintext_3",
    "a_3", "k_3", "iv_3", "ciphertext_3", "message_3", "input_th_4", "th_4", "prk_out",
    "prk_exporter", "plaintext_4", "a_4", "k_4", "iv_4", "oscore_master_secret",
    "oscore_master_salt", "prk_out_after_keyupdate", "prk_exporter_after_keyupdate", NULL};
static const char *const keys_r[] = {
    "y", "g_y", "h_message_1", "input_th_2", "th_2", "g_xy", "prk_2e", "prk_3e2m",
    "context_2", "mac_2", "signature_or_mac_2", "plaintext_2", "keystream_2", "ciphertext_2",
    "message_2", "input_th_3", "th_3", "a_3", "k_3", "iv_3", "plaintext_3", "prk_4e3m",
    "context_3", "mac_3", "signature_or_mac_3", "input_th_4", "th_4", "prk_out", "prk_exporter",
    "plaintext_4", "a_4", "k_4", "iv_4", "ciphertext_4", "message_4", "oscore_master_secret",
    "oscore_master_salt", "prk_out_after_keyupdate", "prk_exporter_after_keyupdate", NULL};
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
    static const char *const keys[7] = {"g_x", "prk_2e", "th_2", "prk_3e2m",
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

/* Resolver for the trace: the one credential whose ID_CRED is expected. */
struct expect_cred {
    const uint8_t *id_cred;
    size_t id_cred_len;
    const struct edhoc_cred *cred;
};

static int resolve_expected(void *ctx, const uint8_t *id_cred, size_t len,
                            const struct edhoc_cred **cred)
{
    struct expect_cred *e = ctx;
    if (len == e->id_cred_len && memcmp(id_cred, e->id_cred, len) == 0) {
        *cred = e->cred;
        return 0;
    }
    return EDHOC_ERR_UNKNOWN_CREDENTIAL;
}

/* Run a whole trace. trace_no 1 or 2. The initiator takes its X from the
 * pinned random, the responder its Y from set_ephemeral, so both paths are
 * exercised. For trace 2 the rejected first message_1 comes first. */
static void run_trace(int trace_no)
{
    struct vec_scope v = load_vectors(trace_no == 1 ? "rfc9529-trace1.json" : "rfc9529-trace2.json");
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
        assert_int_equal(test_backend()->public_key(EDHOC_COSE_CRV_X25519, true, x_first,
                                                            gx, &gxl),
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
    assert_int_equal(edhoc_initiator_process_message_4(&i, m4, (size_t)n4, &rx),
                     EDHOC_ERR_STATE);

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

/* ---- generated credentials, every method x suite ---- */

struct peer {
    struct edhoc_cred cred;
    struct edhoc_key key;
    uint8_t id_cred[256];
    size_t id_cred_len;
};

static bool is_okp(int curve)
{
    return curve == EDHOC_COSE_CRV_X25519 || curve == EDHOC_COSE_CRV_X448 ||
           curve == EDHOC_COSE_CRV_ED25519 || curve == EDHOC_COSE_CRV_ED448;
}

/* A CCS {2: "test", 8: {1: COSE_Key}} for a fresh key on curve. */
static void make_peer(struct peer *p, int curve, uint8_t kid, bool kccs)
{
    const struct edhoc_crypto_ops *ops = test_backend();
    uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
    size_t pub_len = 0;
    memset(p, 0, sizeof *p);
    bool okp = is_okp(curve);
    bool ecdh_form = curve == EDHOC_COSE_CRV_X25519 || curve == EDHOC_COSE_CRV_X448;
    assert_int_equal(ops->keygen(curve, ecdh_form, p->key.priv, pub, &pub_len), 0);
    p->key.curve = curve;
    p->key.priv_len = edhoc_crypto_priv_len(curve);

    uint8_t ccs[256];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, ccs, sizeof ccs);
    edhoc_cbor_put_map(&w, 2);
    edhoc_cbor_put_uint(&w, 2);
    edhoc_cbor_put_tstr(&w, "test", 4);
    edhoc_cbor_put_uint(&w, 8);
    edhoc_cbor_put_map(&w, 1);
    edhoc_cbor_put_uint(&w, 1);
    edhoc_cbor_put_map(&w, okp ? 4 : 5);
    edhoc_cbor_put_uint(&w, 1);
    edhoc_cbor_put_uint(&w, okp ? 1 : 2);
    edhoc_cbor_put_uint(&w, 2);
    edhoc_cbor_put_bstr(&w, &kid, 1);
    edhoc_cbor_put_int(&w, -1);
    edhoc_cbor_put_uint(&w, (uint64_t)curve);
    if (okp) {
        edhoc_cbor_put_int(&w, -2);
        edhoc_cbor_put_bstr(&w, pub, pub_len);
    } else {
        size_t cl = (pub_len - 1) / 2;
        edhoc_cbor_put_int(&w, -2);
        edhoc_cbor_put_bstr(&w, pub + 1, cl);
        edhoc_cbor_put_int(&w, -3);
        edhoc_cbor_put_bstr(&w, pub + 1 + cl, cl);
    }
    long n = edhoc_cbor_writer_finish(&w);
    assert_true(n > 0);
    set_cred(&p->cred, EDHOC_CRED_CCS, ccs, (size_t)n, curve, pub, pub_len, &kid, 1);

    edhoc_cbor_writer_init(&w, p->id_cred, sizeof p->id_cred);
    edhoc_cbor_put_map(&w, 1);
    if (kccs) {
        edhoc_cbor_put_uint(&w, 14);
        edhoc_cbor_put_raw(&w, ccs, (size_t)n);
    } else {
        edhoc_cbor_put_uint(&w, 4);
        edhoc_cbor_put_bstr(&w, &kid, 1);
    }
    n = edhoc_cbor_writer_finish(&w);
    assert_true(n > 0);
    p->id_cred_len = (size_t)n;
}

static int auth_curve(int method, bool initiator, const struct edhoc_suite *su)
{
    bool sdh = initiator ? (method == 2 || method == 3) : (method == 1 || method == 3);
    return sdh ? su->ecdh_curve : su->sig_curve;
}

/* EAD bookkeeping for the callback */
struct ead_log {
    int calls;
    int64_t labels[8];
    int messages[8];
    int64_t accept_critical; /* a critical label the application knows */
    int64_t refuse;          /* a label the application refuses */
};

static int ead_cb(void *ctx, int message, const struct edhoc_ead_item *item)
{
    struct ead_log *l = ctx;
    if (l->calls < 8) {
        l->labels[l->calls] = item->label;
        l->messages[l->calls] = message;
    }
    l->calls++;
    if (l->refuse && item->label == l->refuse)
        return -1;
    if (item->label == l->accept_critical || item->label > 0)
        return EDHOC_EAD_PROCESSED;
    return EDHOC_EAD_UNRECOGNIZED;
}

struct pair {
    struct peer pi, pr;
    int suites_i[EDHOC_MAX_SUITES], suites_r[EDHOC_MAX_SUITES];
    struct edhoc_config ci, cr;
    struct edhoc_session i, r;
    struct expect_cred ei, er;
    struct ead_log log_i, log_r;
    struct edhoc_received rx;
    uint8_t m1[EDHOC_MAX_MESSAGE], m2[EDHOC_MAX_MESSAGE], m3[EDHOC_MAX_MESSAGE], m4[512];
    int n1, n2, n3, n4;
};

static struct pair *pair_new(int method, int suite, bool kccs)
{
    struct pair *p = calloc(1, sizeof *p);
    assert_non_null(p);
    const struct edhoc_suite *su = edhoc_suite_find(suite);
    assert_non_null(su);
    make_peer(&p->pi, auth_curve(method, true, su), 0x2b, kccs);
    make_peer(&p->pr, auth_curve(method, false, su), 0x32, kccs);
    p->suites_i[0] = p->suites_r[0] = suite;
    struct edhoc_config *c = &p->ci;
    c->ops = test_backend();
    c->method = method;
    c->suites = p->suites_i;
    c->n_suites = 1;
    c->cred = &p->pi.cred;
    c->key = &p->pi.key;
    c->id_cred = p->pi.id_cred;
    c->id_cred_len = p->pi.id_cred_len;
    c->ead_receive = ead_cb;
    c->ead_ctx = &p->log_i;
    p->cr = p->ci;
    p->cr.suites = p->suites_r;
    p->cr.cred = &p->pr.cred;
    p->cr.key = &p->pr.key;
    p->cr.id_cred = p->pr.id_cred;
    p->cr.id_cred_len = p->pr.id_cred_len;
    p->cr.ead_ctx = &p->log_r;
    p->ei = (struct expect_cred){p->pi.id_cred, p->pi.id_cred_len, &p->pi.cred};
    p->er = (struct expect_cred){p->pr.id_cred, p->pr.id_cred_len, &p->pr.cred};
    return p;
}

static void pair_start(struct pair *p)
{
    static const uint8_t cid_i = 0x2d, cid_r = 0x18;
    assert_int_equal(edhoc_session_init(&p->i, EDHOC_INITIATOR, &p->ci), 0);
    assert_int_equal(edhoc_session_init(&p->r, EDHOC_RESPONDER, &p->cr), 0);
    assert_int_equal(edhoc_session_set_conn_id(&p->i, &cid_i, 1), 0);
    assert_int_equal(edhoc_session_set_conn_id(&p->r, &cid_r, 1), 0);
}

/* message_1 and message_2, the initiator left in VERIFY_M2 */
static void pair_to_verify_m2(struct pair *p)
{
    pair_start(p);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_true(p->n1 > 0);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL), 0);
    p->n2 = edhoc_responder_prepare_message_2(&p->r, p->m2, sizeof p->m2);
    assert_true(p->n2 > 0);
}

static void pair_complete(struct pair *p)
{
    assert_int_equal(edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx,
                                                      resolve_expected, &p->er),
                     0);
    p->n3 = edhoc_initiator_prepare_message_3(&p->i, p->m3, sizeof p->m3);
    assert_true(p->n3 > 0);
    assert_int_equal(edhoc_responder_handle_message_3(&p->r, p->m3, (size_t)p->n3, &p->rx,
                                                      resolve_expected, &p->ei),
                     0);
    p->n4 = edhoc_responder_prepare_message_4(&p->r, p->m4, sizeof p->m4);
    assert_true(p->n4 > 0);
    assert_int_equal(edhoc_initiator_process_message_4(&p->i, p->m4, (size_t)p->n4, &p->rx), 0);
}

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
    struct edhoc_ead_item ead2[] = {{.label = 5, .value = val, .value_len = sizeof val,
                                     .has_value = true}};
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

/* The error message a failed session sends: ERR_CODE 1 with this text. */
static void assert_error_text(const struct edhoc_session *s, const char *text)
{
    uint8_t got[EDHOC_MAX_ERROR_MESSAGE], want[EDHOC_MAX_ERROR_MESSAGE];
    int ng = edhoc_session_write_error(s, got, sizeof got);
    int nw = edhoc_error_message_write(want, sizeof want, 1, text, NULL, 0);
    assert_true(nw > 0);
    if (ng != nw || memcmp(got, want, (size_t)nw) != 0) {
        char t[128];
        edhoc_session_error_text(s, t, sizeof t);
        print_error("error text is \"%s\", want \"%s\"\n", t, text);
    }
    assert_int_equal(ng, nw);
    assert_memory_equal(got, want, (size_t)nw);
}

static void test_bad_mac_2(void **state)
{
    (void)state;
    int suites[] = {0, 2};
    for (size_t k = 0; k < 2; k++) {
        struct pair *p = pair_new(3, suites[k], false);
        pair_to_verify_m2(p);
        p->m2[p->n2 - 1] ^= 0x01; /* last byte of MAC_2 */
        assert_int_equal(edhoc_initiator_process_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx),
                         0);
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
        assert_int_equal(edhoc_initiator_process_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx),
                         0);
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
        assert_int_equal(edhoc_responder_process_message_3(&p->r, p->m3, (size_t)p->n3, &p->rx),
                         0);
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
    assert_int_equal(edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx,
                                                      resolve_none, NULL),
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
    assert_int_equal(edhoc_error_message_parse(e3_bad, sizeof e3_bad, &info),
                     EDHOC_ERR_MALFORMED);
    static const uint8_t e1_bad[] = {0x01, 0x41, 0x00};
    assert_int_equal(edhoc_error_message_parse(e1_bad, sizeof e1_bad, &info),
                     EDHOC_ERR_MALFORMED);
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
    assert_int_equal(edhoc_error_message_write(buf, sizeof buf, 0, NULL, NULL, 0),
                     EDHOC_ERR_ARG);
    assert_int_equal(edhoc_error_message_write(buf, sizeof buf, 2, NULL, NULL, 0),
                     EDHOC_ERR_ARG);
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
    assert_int_equal(edhoc_plaintext_2_parse(pt, k, 0, 0, rx, c_r, &c_r_len),
                     EDHOC_ERR_MALFORMED);
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
    assert_int_equal(edhoc_initiator_handle_message_2(&p->i, p->m2, (size_t)p->n2, &p->rx,
                                                      resolve_none, NULL),
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
    int rc = edhoc_responder_handle_message_3(&p->r, p->m3, (size_t)p->n3, &p->rx,
                                              resolve_expected, &wrong);
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
    assert_int_equal(edhoc_deviations_parse("c-bstr,,kid-int", &m, why, sizeof why),
                     EDHOC_ERR_ARG);
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
        assert_int_equal(edhoc_session_set_peer_suites(&d->i, u->peer_suites, u->n_peer_suites),
                         0);
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
    assert_diagnosis(&d->i, EDHOC_DEV_C_BSTR, 2,
                     text_c_bstr_2);
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
    t->ci.tolerate = EDHOC_DEV_KID_INT | EDHOC_DEV_ID_CRED_COMPACT | EDHOC_DEV_CRED_WRAP |
                     EDHOC_DEV_EAD_OMITTED;
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
        .ci = &ci, .cr = &cr, .c_i = si.cid[0], .c_r = sr.cid[0],
        .x = si.eph, .x_len = si.eph_len, .y = sr.eph, .y_len = sr.eph_len,
        .cred_r = &sr.cred, .cred_i = &si.cred,
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
        snprintf(want, sizeof want, "%s verification failed: no known deviation explains it",
                 what);

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
        cmocka_unit_test(test_trace_1),
        cmocka_unit_test(test_trace_2),
        cmocka_unit_test(test_invalid_messages),
        cmocka_unit_test(test_plaintext_2_valid),
        cmocka_unit_test(test_session_size),
        cmocka_unit_test(test_config_and_session_versioning),
        cmocka_unit_test(test_all_methods_suites),
        cmocka_unit_test(test_message_2_len),
        cmocka_unit_test(test_pad_message_1),
        cmocka_unit_test(test_bad_mac_2),
        cmocka_unit_test(test_bad_signature_2),
        cmocka_unit_test(test_bad_mac_and_signature_3),
        cmocka_unit_test(test_bad_ciphertext_3_and_4),
        cmocka_unit_test(test_unknown_credential),
        cmocka_unit_test(test_ead),
        cmocka_unit_test(test_conn_id),
        cmocka_unit_test(test_negotiation),
        cmocka_unit_test(test_error_messages),
        cmocka_unit_test(test_states),
        cmocka_unit_test(test_methods_accepted),
        cmocka_unit_test(test_large_id_cred),
        cmocka_unit_test(test_plaintext_2_wrapping_map_count),
        cmocka_unit_test(test_failed_processing_wipes_received),
        cmocka_unit_test(test_verify_rejects_inconsistent_received),
        cmocka_unit_test(test_deviation_names),
        cmocka_unit_test(test_deviation_c_bstr),
        cmocka_unit_test(test_deviation_kid_int),
        cmocka_unit_test(test_deviation_signature),
        cmocka_unit_test(test_deviation_detect_others),
        cmocka_unit_test(test_deviation_cred_unwrapped),
        cmocka_unit_test(test_deviation_not_explained),
    };
    int failed = cmocka_run_group_tests_name("openssl", tests, NULL, NULL);
    const struct CMUnitTest vector_tests[] = {
        cmocka_unit_test(test_trace_1),
        cmocka_unit_test(test_trace_2),
        cmocka_unit_test(test_invalid_messages),
        cmocka_unit_test(test_all_methods_suites),
    };
    test_backend = edhoc_crypto_sodium;
    failed += cmocka_run_group_tests_name("sodium", vector_tests, NULL, NULL);
    test_backend = edhoc_crypto_auto;
    failed += cmocka_run_group_tests_name("auto", vector_tests, NULL, NULL);
    return failed;
}
