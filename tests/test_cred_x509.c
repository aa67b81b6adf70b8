/* Credentials, X.509 (RFC 9360 in EDHOC): the trace 1 certificates,
 * malformed ones, certificates created here, and the resolution of an
 * x5bag of intermediates. */
#include "cred_test_common.h"

/* ---- X.509 ---- */

static void check_trace1_x509(const char *der_key, const char *cbor_key, const char *pk_key)
{
    uint8_t der[512], cbor[512], pk[32];
    size_t dl = vec_hex(t1, der_key, der, sizeof der);
    size_t cl = vec_hex(t1, cbor_key, cbor, sizeof cbor);
    vec_hex(t1, pk_key, pk, sizeof pk);
    struct edhoc_cred *c = new_cred(), *d = new_cred();
    assert_int_equal(edhoc_cred_from_x509(c, der, dl), 0);
    assert_int_equal(c->type, EDHOC_CRED_X509);
    assert_int_equal(c->cred_len, cl);
    assert_memory_equal(c->cred, cbor, cl);
    assert_int_equal(c->n_certs, 1);
    assert_int_equal(c->cert_lens[0], dl);
    assert_memory_equal(c->certs[0], der, dl);
    assert_int_equal(c->curve, EDHOC_COSE_CRV_ED25519);
    assert_int_equal(c->pub_len, 32);
    assert_memory_equal(c->pub, pk, 32);

    /* PEM round trip, and auto-detection of DER, PEM and hex text. */
    char pem[2048];
    size_t pl;
    assert_int_equal(edhoc_x509_to_pem(c, pem, sizeof pem, &pl), 0);
    assert_non_null(strstr(pem, "-----BEGIN CERTIFICATE-----"));
    assert_int_equal(edhoc_cred_from_x509(d, (const uint8_t *)pem, pl), 0);
    assert_true(edhoc_cred_equal(c, d));
    assert_int_equal(edhoc_cred_parse(d, (const uint8_t *)pem, pl), 0);
    assert_true(edhoc_cred_equal(c, d));
    assert_int_equal(edhoc_cred_parse(d, der, dl), 0);
    assert_true(edhoc_cred_equal(c, d));
    char hex[1100];
    hex_encode(der, dl, hex);
    assert_int_equal(edhoc_cred_parse(d, (const uint8_t *)hex, strlen(hex)), 0);
    assert_true(edhoc_cred_equal(c, d));

    int64_t nb, na;
    assert_int_equal(edhoc_cred_x509_validity(c, &nb, &na), 0);
    assert_true(nb > 1647388800 && nb < 1647475200); /* 2022-03-16 */
    assert_int_equal(na, 1893452400);                /* 2029-12-31T23:00:00Z */
    free(c);
    free(d);
}

static void test_x509_trace1(void **state)
{
    (void)state;
    check_trace1_x509("cred_r", "cred_r_cbor", "pk_r");
    check_trace1_x509("cred_i", "cred_i_cbor", "pk_i");
}

static void test_x509_malformed(void **state)
{
    (void)state;
    uint8_t der[512];
    size_t dl = vec_hex(t1, "cred_r", der, sizeof der);
    struct edhoc_cred *c = new_cred();
    assert_int_equal(edhoc_cred_from_x509(c, der, dl - 1), EDHOC_CRED_ERR_FORMAT);
    assert_int_equal(edhoc_cred_from_x509(c, der, 0), EDHOC_CRED_ERR_FORMAT);
    /* Trailing garbage after a DER certificate. */
    der[dl] = 0x00;
    assert_int_equal(edhoc_cred_from_x509(c, der, dl + 1), EDHOC_CRED_ERR_FORMAT);
    const char *junk_pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    assert_int_equal(edhoc_cred_from_x509(c, (const uint8_t *)junk_pem, strlen(junk_pem)),
                     EDHOC_CRED_ERR_FORMAT);
    assert_int_equal(edhoc_cred_parse(c, (const uint8_t *)"zz", 2), EDHOC_CRED_ERR_FORMAT);
    /* Too many certificates for one chain. */
    uint8_t five[5 * 300];
    for (int i = 0; i < 5; i++)
        memcpy(five + i * dl, der, dl);
    assert_int_equal(edhoc_cred_from_x509(c, five, 5 * dl), EDHOC_CRED_ERR_TOO_LARGE);
    free(c);
}

static void test_x509_create(void **state)
{
    (void)state;
    struct edhoc_key k;
    struct edhoc_cred *c = new_cred();
    struct edhoc_x509_params p = {
        .subject_cn = "self", .not_before = T_2023, .not_after = T_2025 + 86400};
    /* Self-signed for every signature curve, refused for DH-only curves. */
    const int sig[] = {1, 2, 6, 7};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(edhoc_key_generate(&k, sig[i]), 0);
        assert_int_equal(edhoc_x509_create(c, &k, &p), 0);
        assert_int_equal(c->curve, sig[i]);
        assert_int_equal(edhoc_key_check_cred(&k, c), 0);
        /* Trusted as its own anchor. */
        struct edhoc_cred_store *s = new_store();
        assert_int_equal(edhoc_cred_store_add_anchor(s, c), 0);
        uint8_t map[EDHOC_CRED_MAX_ID_CRED];
        size_t ml;
        assert_int_equal(encode_x5chain(c, map, &ml), 0);
        struct edhoc_cred *out = new_cred();
        assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
        free(out);
        free(s);
    }
    assert_int_equal(edhoc_key_generate(&k, EDHOC_COSE_CRV_X25519), 0);
    assert_int_equal(edhoc_x509_create(c, &k, &p), EDHOC_CRED_ERR_KEY_TYPE);
    assert_int_equal(edhoc_key_generate(&k, EDHOC_COSE_CRV_X448), 0);
    assert_int_equal(edhoc_x509_create(c, &k, &p), EDHOC_CRED_ERR_KEY_TYPE);
    /* Issuer key that does not belong to the issuer certificate. */
    struct edhoc_cred *ca = new_cred();
    struct edhoc_key wrong;
    assert_int_equal(edhoc_demo_ca(ca), 0);
    assert_int_equal(edhoc_key_generate(&wrong, EDHOC_COSE_CRV_P256), 0);
    p.issuer = ca;
    p.issuer_key = &wrong;
    assert_int_equal(edhoc_x509_create(c, &k, &p), EDHOC_CRED_ERR_KEY_TYPE);
    free(ca);
    free(c);
}

/* A fresh certificate: CA or leaf, signed by issuer (single certificate,
 * so that a deep chain does not grow the issuer's own list). */
static struct edhoc_cred *make_cert(const char *cn, bool ca, const struct edhoc_cred *issuer,
                                    const struct edhoc_key *issuer_key, struct edhoc_key *key,
                                    int64_t not_after)
{
    struct edhoc_cred *c = new_cred(), *single = NULL;
    if (key->priv_len == 0)
        assert_int_equal(edhoc_key_generate(key, EDHOC_COSE_CRV_P256), 0);
    if (issuer) {
        single = new_cred();
        assert_int_equal(
            edhoc_cred_from_der_chain(single, &issuer->certs[0], &issuer->cert_lens[0], 1), 0);
    }
    struct edhoc_x509_params p = {.subject_cn = cn,
                                  .not_before = T_2023,
                                  .not_after = not_after,
                                  .is_ca = ca,
                                  .issuer = single,
                                  .issuer_key = issuer_key};
    assert_int_equal(edhoc_x509_create(c, key, &p), 0);
    free(single);
    return c;
}

/* {32: [+ bstr]} of the leaf certificates of the given credentials, in
 * that order, optionally with an x5t of one of them beside it. */
static size_t bag_map(uint8_t *out, const struct edhoc_cred *const *certs, size_t n,
                      const struct edhoc_cred *x5t_of)
{
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, out, EDHOC_CRED_MAX_ID_CRED);
    edhoc_cbor_put_map(&w, x5t_of ? 2 : 1);
    edhoc_cbor_put_uint(&w, 32);
    edhoc_cbor_put_array(&w, n);
    for (size_t i = 0; i < n; i++)
        edhoc_cbor_put_bstr(&w, certs[i]->certs[0], certs[i]->cert_lens[0]);
    if (x5t_of) {
        uint8_t h[32];
        size_t hl;
        assert_int_equal(edhoc_cred_cert_hash(-16, x5t_of->certs[0], x5t_of->cert_lens[0], h, &hl),
                         0);
        edhoc_cbor_put_uint(&w, 34);
        edhoc_cbor_put_array(&w, 2);
        edhoc_cbor_put_int(&w, -16);
        edhoc_cbor_put_bstr(&w, h, hl);
    }
    long len = edhoc_cbor_writer_finish(&w);
    assert_true(len > 0);
    return (size_t)len;
}

static bool same_leaf(const struct edhoc_cred *a, const struct edhoc_cred *b)
{
    return a->n_certs && b->n_certs && a->cert_lens[0] == b->cert_lens[0] &&
           memcmp(a->certs[0], b->certs[0], a->cert_lens[0]) == 0;
}

/* x5bag (RFC 9360 Section 2): "unordered and may contain self-signed and
 * extraneous certificates" (RFC 9528 Section 3.5.2); CRED_x is the
 * end-entity certificate, found here by building its chain. */
static void test_resolve_x5bag(void **state)
{
    (void)state;
    const int64_t until = T_2025 + 86400;
    struct edhoc_key k_root = {0}, k_int = {0}, k_leaf = {0}, k_leaf2 = {0}, k_other = {0};
    struct edhoc_cred *root = make_cert("Bag Root", true, NULL, NULL, &k_root, until);
    struct edhoc_cred *inter = make_cert("Bag Int", true, root, &k_root, &k_int, until);
    struct edhoc_cred *leaf = make_cert("leaf", false, inter, &k_int, &k_leaf, until);
    struct edhoc_cred *leaf2 = make_cert("leaf 2", false, inter, &k_int, &k_leaf2, until);
    struct edhoc_cred *other = make_cert("Other Root", true, NULL, NULL, &k_other, until);
    struct edhoc_cred *out = new_cred();
    struct edhoc_cred_store *s = new_store();
    assert_int_equal(edhoc_cred_store_add_anchor(s, root), 0);
    uint8_t *map = malloc(EDHOC_CRED_MAX_ID_CRED);
    size_t ml;

    /* What we send: the leaf and its intermediates, leaf first. */
    assert_int_equal(
        edhoc_id_cred_encode(leaf, EDHOC_ID_CRED_X5BAG, 0, map, EDHOC_CRED_MAX_ID_CRED, &ml), 0);
    assert_int_equal(map[0], 0xa1);
    assert_int_equal(map[1], 0x18);
    assert_int_equal(map[2], 0x20);
    assert_int_equal(map[3], 0x82); /* leaf + intermediate */
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_true(same_leaf(out, leaf));
    assert_int_equal(out->n_certs, 2);

    /* Any order, duplicates, an unrelated self-signed CA: same result. */
    const struct edhoc_cred *orders[][5] = {
        {inter, leaf},
        {other, inter, leaf, inter},
        {leaf, leaf, root, inter, other},
    };
    const size_t counts[] = {2, 4, 5};
    for (size_t i = 0; i < 3; i++) {
        ml = bag_map(map, orders[i], counts[i], NULL);
        int rc = edhoc_cred_store_resolve(s, map, ml, out);
        if (rc != 0 || !same_leaf(out, leaf) || out->n_certs != 2 ||
            out->cert_lens[1] != inter->cert_lens[0])
            fail_msg("bag order #%zu: rc %d", i, rc);
        assert_int_equal(out->curve, EDHOC_COSE_CRV_P256);
    }
    /* The leaf alone does not reach the anchor. */
    const struct edhoc_cred *alone[] = {leaf};
    ml = bag_map(map, alone, 1, NULL);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_UNTRUSTED);
    /* ... unless configured: trusted by its bytes, as for x5chain. */
    struct edhoc_cred_store *s2 = new_store();
    assert_int_equal(edhoc_cred_store_add_cred(s2, leaf), 0);
    assert_int_equal(edhoc_cred_store_resolve(s2, map, ml, out), 0);
    assert_true(same_leaf(out, leaf));

    /* Two end-entity certificates that both verify: refused, unless an
     * x5t beside the bag says which is the sender's. */
    const struct edhoc_cred *two[] = {leaf, leaf2, inter};
    ml = bag_map(map, two, 3, NULL);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_AMBIGUOUS);
    ml = bag_map(map, two, 3, leaf2);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_true(same_leaf(out, leaf2));
    /* An x5t that names no certificate of the bag. */
    ml = bag_map(map, two, 3, other);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_UNKNOWN);

    /* Validity: the store's time after the leaf's notAfter. */
    const struct edhoc_cred *ok_bag[] = {inter, leaf};
    ml = bag_map(map, ok_bag, 2, NULL);
    edhoc_cred_store_set_time(s, until + 86400);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_EXPIRED);
    edhoc_cred_store_set_time(s, T_2025);

    /* A loop: X2 (subject "Bag Root", root's key) issued by Y, Y issued
     * by "Bag Root": walking up from the leaf comes back to X2. */
    struct edhoc_key k_y = {0};
    struct edhoc_cred *y = make_cert("Loop Y", true, root, &k_root, &k_y, until);
    struct edhoc_cred *x2 = make_cert("Bag Root", true, y, &k_y, &k_root, until);
    struct edhoc_key k_ll = {0};
    struct edhoc_cred *ll = make_cert("loop leaf", false, x2, &k_root, &k_ll, until);
    struct edhoc_cred_store *other_store = new_store();
    assert_int_equal(edhoc_cred_store_add_anchor(other_store, other), 0);
    const struct edhoc_cred *loop[] = {y, ll, x2};
    ml = bag_map(map, loop, 3, NULL);
    assert_int_equal(edhoc_cred_store_resolve(other_store, map, ml, out),
                     EDHOC_CRED_ERR_CHAIN_LOOP);

    /* Depth: root -> c1 -> c2 -> c3 -> c4 -> leaf is 5 certificates before
     * the anchor, one more than EDHOC_CRED_MAX_CHAIN. */
    struct edhoc_key kc[4] = {{0}}, k_deep = {0};
    struct edhoc_cred *c[4];
    c[0] = make_cert("C1", true, root, &k_root, &kc[0], until);
    for (int i = 1; i < 4; i++)
        c[i] = make_cert(i == 1   ? "C2"
                         : i == 2 ? "C3"
                                  : "C4",
                         true, c[i - 1], &kc[i - 1], &kc[i], until);
    struct edhoc_cred *deep = make_cert("deep leaf", false, c[3], &kc[3], &k_deep, until);
    const struct edhoc_cred *deep_bag[] = {c[0], c[2], deep, c[1], c[3]};
    ml = bag_map(map, deep_bag, 5, NULL);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_CHAIN_DEPTH);
    /* One level less fits: c2 trusted as an anchor (partial chain). */
    assert_int_equal(edhoc_cred_store_add_anchor(s, c[1]), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_int_equal(out->n_certs, 3);

    /* Garbage among the certificates is a format error, not ignored. */
    const uint8_t junk[] = {0xa1, 0x18, 0x20, 0x82, 0x41, 0x30, 0x43, 0x30, 0x01, 0x00};
    assert_int_equal(edhoc_cred_store_resolve(s, junk, sizeof junk, out), EDHOC_CRED_ERR_FORMAT);

    for (int i = 0; i < 4; i++)
        free(c[i]);
    free(deep);
    free(y);
    free(x2);
    free(ll);
    free(other_store);
    free(s2);
    free(s);
    free(map);
    free(out);
    free(root);
    free(inter);
    free(leaf);
    free(leaf2);
    free(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_x509_trace1),
        cmocka_unit_test(test_x509_malformed),
        cmocka_unit_test(test_x509_create),
        cmocka_unit_test(test_resolve_x5bag),
    };
    return cmocka_run_group_tests(tests, setup_vectors, NULL);
}
