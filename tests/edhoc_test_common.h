/* What the tests of the EDHOC core (src/edhoc) share: the vectors of
 * RFC 9529, the crypto backend under test, pinned randomness, the endpoint
 * material of a trace side and generated credential pairs for every
 * method x suite (RFC 9528 Sections 3.2 and 3.6). */
#ifndef EDHOC_TEST_COMMON_H
#define EDHOC_TEST_COMMON_H

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
static inline struct vec_scope load_vectors(const char *name)
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

static inline size_t hexbytes(struct vec_scope v, const char *key, uint8_t *out, size_t cap)
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

static inline void name_to_key(const char *name, char *key, size_t cap)
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

static inline void trace_check(void *ctx, const char *name, const uint8_t *v, size_t len)
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
        print_error("%s: trace value %s differs (got %zu bytes, want %zu)\n", t->role, name, len,
                    n);
    }
}

static inline void set_cred(struct edhoc_cred *c, enum edhoc_cred_type type, const uint8_t *cred,
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

static inline void load_side(struct vec_scope v, bool initiator, int trace_no, struct side *s)
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
    s->id_cred_len =
        hexbytes(v, initiator ? "id_cred_i" : "id_cred_r", s->id_cred, sizeof s->id_cred);
    set_cred(&s->cred, trace_no == 1 ? EDHOC_CRED_X509 : EDHOC_CRED_CCS, cred, cred_len, curve, pub,
             pub_len, NULL, 0);
    memset(&s->key, 0, sizeof s->key);
    s->key.curve = curve;
    s->key.priv_len = hexbytes(v, initiator ? "sk_i" : "sk_r", s->key.priv, sizeof s->key.priv);
    s->cid_len = hexbytes(v, initiator ? "c_i" : "c_r", s->cid, sizeof s->cid);
    s->eph_len = hexbytes(v, initiator ? "x" : "y", s->eph, sizeof s->eph);
}

static inline void config_side(struct edhoc_config *c, const struct edhoc_crypto_ops *ops,
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

static inline void assert_vec(struct vec_scope v, const char *key, const uint8_t *got, size_t len)
{
    static uint8_t want[8192];
    size_t n = vec_hex(v, key, want, sizeof want);
    if (n != len || memcmp(want, got, len) != 0)
        print_error("%s differs (got %zu bytes, want %zu)\n", key, len, n);
    assert_int_equal(n, len);
    assert_memory_equal(want, got, len);
}

/* Resolver for the trace: the one credential whose ID_CRED is expected. */
struct expect_cred {
    const uint8_t *id_cred;
    size_t id_cred_len;
    const struct edhoc_cred *cred;
};

static inline int resolve_expected(void *ctx, const uint8_t *id_cred, size_t len,
                                   const struct edhoc_cred **cred)
{
    struct expect_cred *e = ctx;
    if (len == e->id_cred_len && memcmp(id_cred, e->id_cred, len) == 0) {
        *cred = e->cred;
        return 0;
    }
    return EDHOC_ERR_UNKNOWN_CREDENTIAL;
}

/* ---- generated credentials, every method x suite ---- */

struct peer {
    struct edhoc_cred cred;
    struct edhoc_key key;
    uint8_t id_cred[256];
    size_t id_cred_len;
};

static inline bool is_okp(int curve)
{
    return curve == EDHOC_COSE_CRV_X25519 || curve == EDHOC_COSE_CRV_X448 ||
           curve == EDHOC_COSE_CRV_ED25519 || curve == EDHOC_COSE_CRV_ED448;
}

/* A CCS {2: "test", 8: {1: COSE_Key}} for a fresh key on curve. */
static inline void make_peer(struct peer *p, int curve, uint8_t kid, bool kccs)
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

static inline int auth_curve(int method, bool initiator, const struct edhoc_suite *su)
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

static inline int ead_cb(void *ctx, int message, const struct edhoc_ead_item *item)
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

static inline struct pair *pair_new(int method, int suite, bool kccs)
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

static inline void pair_start(struct pair *p)
{
    static const uint8_t cid_i = 0x2d, cid_r = 0x18;
    assert_int_equal(edhoc_session_init(&p->i, EDHOC_INITIATOR, &p->ci), 0);
    assert_int_equal(edhoc_session_init(&p->r, EDHOC_RESPONDER, &p->cr), 0);
    assert_int_equal(edhoc_session_set_conn_id(&p->i, &cid_i, 1), 0);
    assert_int_equal(edhoc_session_set_conn_id(&p->r, &cid_r, 1), 0);
}

/* message_1 and message_2, the initiator left in VERIFY_M2 */
static inline void pair_to_verify_m2(struct pair *p)
{
    pair_start(p);
    p->n1 = edhoc_initiator_prepare_message_1(&p->i, p->m1, sizeof p->m1);
    assert_true(p->n1 > 0);
    assert_int_equal(edhoc_responder_process_message_1(&p->r, p->m1, (size_t)p->n1, NULL), 0);
    p->n2 = edhoc_responder_prepare_message_2(&p->r, p->m2, sizeof p->m2);
    assert_true(p->n2 > 0);
}

static inline void pair_complete(struct pair *p)
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

/* The error message a failed session sends: ERR_CODE 1 with this text. */
static inline void assert_error_text(const struct edhoc_session *s, const char *text)
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

#endif /* EDHOC_TEST_COMMON_H */
