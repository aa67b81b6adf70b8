/* Credentials, the store: resolving ID_CRED by kid, x5t, kccs and x5chain
 * (RFC 9528 Section 3.5.3), validity windows cached at parse time,
 * configured credentials resolved without decoding, and its capacity. */
#include "cred_test_common.h"

/* ---- Store ---- */

static struct edhoc_cred_store *trace_store(void)
{
    struct edhoc_cred_store *s = new_store();
    struct edhoc_cred *c = new_cred();
    for (int t = 1; t <= 2; t++)
        for (int r = 0; r < 2; r++) {
            assert_int_equal(edhoc_demo_trace_cred(t, r ? 'R' : 'I', c, NULL), 0);
            assert_int_equal(edhoc_cred_store_add_cred(s, c), 0);
        }
    free(c);
    return s;
}

static void test_resolve_kid_x5t_kccs(void **state)
{
    (void)state;
    struct edhoc_cred_store *s = trace_store();
    struct edhoc_cred *out = new_cred();
    uint8_t id[64], want[512];

    /* Trace 1 x5t -> the certificate as CRED_x. */
    size_t il = vec_hex(t1, "id_cred_r", id, sizeof id);
    size_t wl = vec_hex(t1, "cred_r_cbor", want, sizeof want);
    assert_int_equal(edhoc_cred_store_resolve(s, id, il, out), 0);
    assert_int_equal(out->cred_len, wl);
    assert_memory_equal(out->cred, want, wl);
    il = vec_hex(t1, "id_cred_i", id, sizeof id);
    wl = vec_hex(t1, "cred_i_cbor", want, sizeof want);
    assert_int_equal(edhoc_cred_store_resolve(s, id, il, out), 0);
    assert_memory_equal(out->cred, want, wl);
    /* The full SHA-256 form names the same certificate. */
    struct edhoc_cred *cr = new_cred();
    uint8_t map256[64];
    size_t m256;
    assert_int_equal(edhoc_demo_trace_cred(1, 'I', cr, NULL), 0);
    assert_int_equal(edhoc_id_cred_encode(cr, EDHOC_ID_CRED_X5T, -16, map256, sizeof map256, &m256),
                     0);
    assert_int_equal(edhoc_cred_store_resolve(s, map256, m256, out), 0);
    assert_memory_equal(out->cred, want, wl);
    map256[m256 - 1] ^= 0x80;
    assert_int_equal(edhoc_cred_store_resolve(s, map256, m256, out), EDHOC_CRED_ERR_UNKNOWN);
    free(cr);
    /* One bit off in the hash: unknown. */
    id[il - 1] ^= 1;
    assert_int_equal(edhoc_cred_store_resolve(s, id, il, out), EDHOC_CRED_ERR_UNKNOWN);

    /* Trace 2 kid -> the CCS. */
    il = vec_hex(t2, "id_cred_r", id, sizeof id);
    wl = vec_hex(t2, "cred_r", want, sizeof want);
    assert_int_equal(edhoc_cred_store_resolve(s, id, il, out), 0);
    assert_int_equal(out->cred_len, wl);
    assert_memory_equal(out->cred, want, wl);
    il = vec_hex(t2, "id_cred_i", id, sizeof id);
    wl = vec_hex(t2, "cred_i", want, sizeof want);
    assert_int_equal(edhoc_cred_store_resolve(s, id, il, out), 0);
    assert_memory_equal(out->cred, want, wl);

    /* Unknown kids. */
    const uint8_t unknown_kid[] = {0xa1, 0x04, 0x41, 0x33};
    assert_int_equal(edhoc_cred_store_resolve(s, unknown_kid, sizeof unknown_kid, out),
                     EDHOC_CRED_ERR_UNKNOWN);
    const uint8_t long_kid[] = {0xa1, 0x04, 0x42, 0x32, 0x00};
    assert_int_equal(edhoc_cred_store_resolve(s, long_kid, sizeof long_kid, out),
                     EDHOC_CRED_ERR_UNKNOWN);
    /* x5t with a hash algorithm we do not compute matches nothing. */
    const uint8_t x5t_other[] = {0xa1, 0x18, 0x22, 0x82, 0x38, 0x2a, 0x41, 0x00};
    assert_int_equal(edhoc_cred_store_resolve(s, x5t_other, sizeof x5t_other, out),
                     EDHOC_CRED_ERR_UNKNOWN);
    /* Malformed map. */
    assert_int_equal(edhoc_cred_store_resolve(s, unknown_kid, 3, out), EDHOC_CRED_ERR_FORMAT);

    /* kccs: accepted when it is the configured CCS ... */
    struct edhoc_cred *c = new_cred();
    uint8_t map[EDHOC_CRED_MAX_ID_CRED];
    size_t ml;
    assert_int_equal(edhoc_demo_trace_cred(2, 'R', c, NULL), 0);
    assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_KCCS, 0, map, sizeof map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_true(edhoc_cred_equal(out, c));
    /* ... or another CCS with the same key (other sub, no kid); CRED_x is
     * then the CCS as received. */
    struct edhoc_cred *same_key = new_cred();
    assert_int_equal(edhoc_cred_build_ccs(same_key, c->curve, c->pub, c->pub_len, NULL, 0, "other"),
                     0);
    assert_int_equal(edhoc_id_cred_encode(same_key, EDHOC_ID_CRED_KCCS, 0, map, sizeof map, &ml),
                     0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_true(edhoc_cred_equal(out, same_key));
    /* ... and never a CCS with a key nobody configured. */
    struct edhoc_cred *stranger = new_cred();
    assert_int_equal(edhoc_demo_cred('R', EDHOC_COSE_CRV_P256, true, stranger, NULL), 0);
    assert_int_equal(edhoc_id_cred_encode(stranger, EDHOC_ID_CRED_KCCS, 0, map, sizeof map, &ml),
                     0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_UNKNOWN);
    /* A kccs whose CCS is broken is a format error. */
    map[ml - 1] ^= 1; /* y off the curve */
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_FORMAT);

    /* The trace 1 certificates are valid until 2029: at 2030 they are
     * refused even though configured. */
    edhoc_cred_store_set_time(s, 1893456000 + 86400 * 2);
    il = vec_hex(t1, "id_cred_r", id, sizeof id);
    assert_int_equal(edhoc_cred_store_resolve(s, id, il, out), EDHOC_CRED_ERR_EXPIRED);
    free(c);
    free(same_key);
    free(stranger);
    free(out);
    free(s);
}

static void test_resolve_x5chain(void **state)
{
    (void)state;
    struct edhoc_cred_store *s = new_store(); /* the demo CA only, no peers */
    struct edhoc_cred *c = new_cred(), *out = new_cred();
    uint8_t *map = malloc(EDHOC_CRED_MAX_ID_CRED);
    size_t ml;
    assert_int_equal(edhoc_demo_ca(c), 0);
    assert_int_equal(edhoc_cred_store_add_anchor(s, c), 0);

    /* Every demo certificate (signature and static DH) verifies to the CA. */
    const int sig_curves[] = {EDHOC_COSE_CRV_ED25519, EDHOC_COSE_CRV_P256, EDHOC_COSE_CRV_P384,
                              EDHOC_COSE_CRV_ED448};
    const int dh_curves[] = {EDHOC_COSE_CRV_X25519, EDHOC_COSE_CRV_P256, EDHOC_COSE_CRV_P384,
                             EDHOC_COSE_CRV_X448};
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < 8; i++) {
            int curve = i < 4 ? sig_curves[i] : dh_curves[i - 4];
            assert_int_equal(
                edhoc_demo_cred_typed(r ? 'R' : 'I', curve, i >= 4, EDHOC_CRED_X509, c, NULL), 0);
            assert_int_equal(encode_x5chain(c, map, &ml), 0);
            assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
            assert_true(edhoc_cred_equal(out, c));
            assert_int_equal(out->curve, curve);
        }
    /* The 293-byte certificates too. */
    assert_int_equal(edhoc_demo_cred_293('R', c, NULL), 0);
    assert_int_equal(encode_x5chain(c, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);

    /* Two-certificate chain: verifies with the intermediate ... */
    assert_int_equal(edhoc_demo_chain_cred('I', c, NULL), 0);
    assert_int_equal(encode_x5chain(c, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_int_equal(out->n_certs, 2);
    assert_true(edhoc_cred_equal(out, c));
    /* ... but not without it. */
    c->n_certs = 1;
    assert_int_equal(encode_x5chain(c, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_UNTRUSTED);

    /* Expired, and not yet valid. */
    assert_int_equal(edhoc_demo_expired_cred(c, NULL), 0);
    assert_int_equal(encode_x5chain(c, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_EXPIRED);
    assert_int_equal(edhoc_demo_cred('I', EDHOC_COSE_CRV_ED25519, false, c, NULL), 0);
    assert_int_equal(encode_x5chain(c, map, &ml), 0);
    edhoc_cred_store_set_time(s, T_2023);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_EXPIRED);
    /* At the current time (the demo certificates run to 2099). */
    edhoc_cred_store_set_time(s, 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);

    /* A store trusting another CA. */
    struct edhoc_cred_store *other = new_store();
    struct edhoc_key ca_key;
    struct edhoc_cred *other_ca = new_cred();
    assert_int_equal(edhoc_key_generate(&ca_key, EDHOC_COSE_CRV_P256), 0);
    struct edhoc_x509_params p = {.subject_cn = "EDHOC Demo CA", /* same name, other key */
                                  .not_before = T_2023,
                                  .not_after = T_2025 + 86400,
                                  .is_ca = true};
    assert_int_equal(edhoc_x509_create(other_ca, &ca_key, &p), 0);
    assert_int_equal(edhoc_cred_store_add_anchor(other, other_ca), 0);
    assert_int_equal(edhoc_cred_store_resolve(other, map, ml, out), EDHOC_CRED_ERR_UNTRUSTED);
    /* No anchors at all. */
    other->n_anchors = 0;
    assert_int_equal(edhoc_cred_store_resolve(other, map, ml, out), EDHOC_CRED_ERR_UNTRUSTED);
    /* A configured leaf is accepted by its bytes without any anchor. */
    assert_int_equal(edhoc_cred_store_add_cred(other, c), 0);
    assert_int_equal(edhoc_cred_store_resolve(other, map, ml, out), 0);
    assert_int_equal(out->kid_len, 1);
    assert_int_equal(out->kid[0], 0x06);

    /* A leaf signed by the other CA verifies in `other` only. */
    struct edhoc_key leaf_key;
    struct edhoc_cred *leaf = new_cred();
    assert_int_equal(edhoc_key_generate(&leaf_key, EDHOC_COSE_CRV_X25519), 0);
    struct edhoc_x509_params lp = {.subject_cn = "leaf",
                                   .not_before = T_2023,
                                   .not_after = T_2025 + 86400,
                                   .issuer = other_ca,
                                   .issuer_key = &ca_key};
    assert_int_equal(edhoc_x509_create(leaf, &leaf_key, &lp), 0);
    assert_int_equal(leaf->n_certs, 1); /* the self-signed root is not appended */
    assert_int_equal(leaf->curve, EDHOC_COSE_CRV_X25519);
    assert_int_equal(encode_x5chain(leaf, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(other, map, ml, out), EDHOC_CRED_ERR_UNTRUSTED);
    assert_int_equal(edhoc_cred_store_add_anchor(other, other_ca), 0);
    assert_int_equal(edhoc_cred_store_resolve(other, map, ml, out), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_UNTRUSTED);

    /* basicConstraints: a leaf (CA:FALSE) cannot issue certificates, so a
     * chain through it does not verify even though each signature does. */
    struct edhoc_cred *not_ca = new_cred(), *below = new_cred();
    struct edhoc_key not_ca_key, below_key;
    assert_int_equal(edhoc_demo_cred('I', EDHOC_COSE_CRV_P256, false, not_ca, &not_ca_key), 0);
    assert_int_equal(edhoc_key_generate(&below_key, EDHOC_COSE_CRV_ED25519), 0);
    struct edhoc_x509_params bp = {.subject_cn = "below a leaf",
                                   .not_before = T_2023,
                                   .not_after = T_2025 + 86400,
                                   .issuer = not_ca,
                                   .issuer_key = &not_ca_key};
    assert_int_equal(edhoc_x509_create(below, &below_key, &bp), 0);
    assert_int_equal(below->n_certs, 2);
    assert_int_equal(encode_x5chain(below, map, &ml), 0);
    edhoc_cred_store_set_time(s, T_2025);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_UNTRUSTED);
    free(not_ca);
    free(below);

    /* Garbage in an x5chain. */
    const uint8_t junk[] = {0xa1, 0x18, 0x21, 0x43, 0x30, 0x01, 0x00};
    assert_int_equal(edhoc_cred_store_resolve(s, junk, sizeof junk, out), EDHOC_CRED_ERR_FORMAT);
    free(leaf);
    free(other_ca);
    free(other);
    free(map);
    free(c);
    free(out);
    free(s);
}

/* ---- Lookups without decoding ---- */

/* The validity window is read once, at parse time, and equals the one in
 * the certificate (read again by decoding a copy that lacks it). */
static void test_validity_cached_at_parse(void **state)
{
    (void)state;
    struct edhoc_cred *c = new_cred(), *d = new_cred();
    int64_t nb, na;

    assert_int_equal(edhoc_demo_trace_cred(1, 'R', c, NULL), 0);
    assert_true(c->has_validity);
    assert_true(c->not_before > 1647388800 && c->not_before < 1647475200); /* 2022-03-16 */
    assert_int_equal(c->not_after, 1893452400); /* 2029-12-31T23:00:00Z */
    edhoc_cred_copy(d, c);
    assert_true(d->has_validity);
    assert_int_equal(d->not_before, c->not_before);
    assert_int_equal(d->not_after, c->not_after);
    assert_true(edhoc_cred_equal(c, d));
    d->has_validity = false; /* as if laid out by hand: decoded on demand */
    assert_int_equal(edhoc_cred_x509_validity(d, &nb, &na), 0);
    assert_int_equal(nb, c->not_before);
    assert_int_equal(na, c->not_after);

    /* A created certificate carries exactly the requested window, also
     * through PEM and the chain form. */
    struct edhoc_key k;
    struct edhoc_x509_params p = {
        .subject_cn = "window", .not_before = T_2023 + 17, .not_after = T_2025 + 86400 + 3};
    assert_int_equal(edhoc_key_generate(&k, EDHOC_COSE_CRV_P256), 0);
    assert_int_equal(edhoc_x509_create(c, &k, &p), 0);
    assert_true(c->has_validity);
    assert_int_equal(c->not_before, p.not_before);
    assert_int_equal(c->not_after, p.not_after);
    char pem[2048];
    size_t pl;
    assert_int_equal(edhoc_x509_to_pem(c, pem, sizeof pem, &pl), 0);
    assert_int_equal(edhoc_cred_parse(d, (const uint8_t *)pem, pl), 0);
    assert_int_equal(d->not_before, p.not_before);
    assert_int_equal(d->not_after, p.not_after);
    assert_int_equal(edhoc_cred_from_der_chain(d, c->certs, c->cert_lens, c->n_certs), 0);
    assert_int_equal(d->not_before, p.not_before);
    assert_int_equal(d->not_after, p.not_after);
    /* The expired demo certificate: the window ended mid-2024. */
    assert_int_equal(edhoc_demo_expired_cred(c, NULL), 0);
    assert_true(c->has_validity && c->not_after < T_2025 && c->not_after > T_2023);

    /* A CCS has no window. */
    assert_int_equal(edhoc_demo_trace_cred(2, 'R', c, NULL), 0);
    assert_false(c->has_validity);
    assert_int_equal(edhoc_cred_x509_validity(c, &nb, &na), EDHOC_CRED_ERR_FORMAT);
    free(c);
    free(d);
}

static size_t encode_x5t(const struct edhoc_cred *c, int alg, uint8_t *map, size_t cap)
{
    size_t ml;
    assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_X5T, alg, map, cap, &ml), 0);
    return ml;
}

/* Configured X.509 credentials are looked up by kid, x5t (both hash
 * forms) and x5chain leaf with the window cached in the store: a window
 * that has ended is refused as expired by every path, and the cached
 * window is what decides. */
static void test_resolve_cached_window(void **state)
{
    (void)state;
    struct edhoc_cred_store *s = new_store();
    struct edhoc_cred *c = new_cred(), *out = new_cred();
    uint8_t *map[4];
    size_t ml[4];
    const uint8_t kid = 0x42;
    for (int i = 0; i < 4; i++) {
        map[i] = malloc(EDHOC_CRED_MAX_ID_CRED);
        assert_non_null(map[i]);
    }
    assert_int_equal(edhoc_demo_trace_cred(1, 'R', c, NULL), 0);
    assert_int_equal(edhoc_cred_set_kid(c, &kid, 1), 0);
    ml[0] = encode_x5t(c, EDHOC_COSE_SHA256_64, map[0], EDHOC_CRED_MAX_ID_CRED);
    ml[1] = encode_x5t(c, EDHOC_COSE_SHA256, map[1], EDHOC_CRED_MAX_ID_CRED);
    assert_int_equal(
        edhoc_id_cred_encode(c, EDHOC_ID_CRED_KID, 0, map[2], EDHOC_CRED_MAX_ID_CRED, &ml[2]), 0);
    assert_int_equal(encode_x5chain(c, map[3], &ml[3]), 0);
    assert_int_equal(edhoc_cred_store_add_cred(s, c), 0);
    assert_true(s->facts[0].has_leaf_sha256);

    for (int i = 0; i < 4; i++) {
        edhoc_cred_store_set_time(s, T_2025);
        memset(out, 0xa5, sizeof *out);
        assert_int_equal(edhoc_cred_store_resolve(s, map[i], ml[i], out), 0);
        assert_true(edhoc_cred_equal(out, c));
        assert_int_equal(out->pub_len, c->pub_len);
        assert_memory_equal(out->pub, c->pub, c->pub_len);
        assert_int_equal(out->curve, c->curve);
        assert_int_equal(out->kid_len, 1);
        assert_int_equal(out->kid[0], kid);
        assert_true(out->has_validity);
        assert_int_equal(out->not_after, c->not_after);
        /* Edges of the window, then past it and before it. */
        edhoc_cred_store_set_time(s, c->not_after);
        assert_int_equal(edhoc_cred_store_resolve(s, map[i], ml[i], out), 0);
        edhoc_cred_store_set_time(s, c->not_after + 1);
        assert_int_equal(edhoc_cred_store_resolve(s, map[i], ml[i], out), EDHOC_CRED_ERR_EXPIRED);
        edhoc_cred_store_set_time(s, c->not_before - 1);
        assert_int_equal(edhoc_cred_store_resolve(s, map[i], ml[i], out), EDHOC_CRED_ERR_EXPIRED);
    }

    /* The cached window decides: the same certificate configured with a
     * window that ended yesterday is refused today by every path. */
    struct edhoc_cred_store *ended = new_store();
    edhoc_cred_copy(out, c);
    out->not_after = T_2025 - 86400;
    assert_int_equal(edhoc_cred_store_add_cred(ended, out), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(edhoc_cred_store_resolve(ended, map[i], ml[i], out),
                         EDHOC_CRED_ERR_EXPIRED);

    /* A credential laid out without a window gets one when it is added. */
    edhoc_cred_store_init(ended);
    edhoc_cred_store_set_time(ended, T_2025);
    edhoc_cred_copy(out, c);
    out->has_validity = false;
    out->not_before = out->not_after = 0;
    assert_int_equal(edhoc_cred_store_add_cred(ended, out), 0);
    assert_true(ended->creds[0].has_validity);
    assert_int_equal(ended->creds[0].not_before, c->not_before);
    assert_int_equal(ended->creds[0].not_after, c->not_after);

    /* An entry put into creds[] by hand (no facts) is still found, the
     * slow way, and still refused once expired. */
    edhoc_cred_store_init(ended);
    edhoc_cred_copy(&ended->creds[ended->n_creds++], c);
    for (int i = 0; i < 4; i++) {
        edhoc_cred_store_set_time(ended, T_2025);
        assert_int_equal(edhoc_cred_store_resolve(ended, map[i], ml[i], out), 0);
        assert_true(edhoc_cred_equal(out, c));
        edhoc_cred_store_set_time(ended, 1893456000 + 86400 * 2);
        assert_int_equal(edhoc_cred_store_resolve(ended, map[i], ml[i], out),
                         EDHOC_CRED_ERR_EXPIRED);
    }
    for (int i = 0; i < 4; i++)
        free(map[i]);
    free(ended);
    free(c);
    free(out);
    free(s);
}

/* A received x5chain (or x5t, kid) naming a configured credential is
 * answered from the configuration without decoding the certificate. Shown
 * with a configured credential whose DER OpenSSL cannot decode (its outer
 * SEQUENCE tag altered after parsing): any decoding at lookup time would
 * make the lookup fail with a format error. */
static void test_resolve_configured_without_decoding(void **state)
{
    (void)state;
    struct edhoc_cred_store *s = new_store(); /* no anchors */
    struct edhoc_cred *c = new_cred(), *out = new_cred(), *probe = new_cred();
    uint8_t *map = malloc(EDHOC_CRED_MAX_ID_CRED);
    size_t ml;
    assert_non_null(map);

    /* Leaf + intermediate, both made undecodable. */
    assert_int_equal(edhoc_demo_chain_cred('I', c, NULL), 0);
    assert_int_equal(c->n_certs, 2);
    for (size_t i = 0; i < c->n_certs; i++) {
        assert_int_equal(c->certs[i][0], 0x30);
        ((uint8_t *)c->certs[i])[0] = 0x31;
    }
    assert_int_equal(edhoc_cred_from_der_chain(probe, c->certs, c->cert_lens, 1),
                     EDHOC_CRED_ERR_FORMAT);
    assert_int_equal(edhoc_cred_from_der_chain(probe, c->certs + 1, c->cert_lens + 1, 1),
                     EDHOC_CRED_ERR_FORMAT);
    assert_int_equal(edhoc_cred_store_add_cred(s, c), 0);

    /* The whole chain as configured, and the leaf alone. */
    assert_int_equal(encode_x5chain(c, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_true(edhoc_cred_equal(out, c));
    assert_int_equal(out->n_certs, 2);
    assert_int_equal(out->cert_lens[1], c->cert_lens[1]);
    assert_memory_equal(out->certs[1], c->certs[1], c->cert_lens[1]);
    assert_int_equal(out->curve, EDHOC_COSE_CRV_P256);
    assert_memory_equal(out->pub, c->pub, c->pub_len);
    assert_int_equal(out->kid_len, c->kid_len);
    assert_memory_equal(out->kid, c->kid, c->kid_len);
    c->n_certs = 1;
    assert_int_equal(encode_x5chain(c, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_int_equal(out->n_certs, 1);
    assert_true(edhoc_cred_equal(out, c));
    /* x5t and kid too. */
    ml = encode_x5t(c, EDHOC_COSE_SHA256_64, map, EDHOC_CRED_MAX_ID_CRED);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_true(edhoc_cred_equal(out, c));
    assert_int_equal(
        edhoc_id_cred_encode(c, EDHOC_ID_CRED_KID, 0, map, EDHOC_CRED_MAX_ID_CRED, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_true(edhoc_cred_equal(out, c));
    /* Expiry still applies, from the cached window. */
    edhoc_cred_store_set_time(s, c->not_after + 1);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_EXPIRED);
    c->n_certs = 2;
    assert_int_equal(encode_x5chain(c, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_EXPIRED);
    edhoc_cred_store_set_time(s, T_2025);

    /* A certificate the peer adds beyond the configured chain is read, and
     * a malformed one is still a format error. */
    const uint8_t *certs[3] = {c->certs[0], c->certs[1], c->certs[1]};
    size_t lens[3] = {c->cert_lens[0], c->cert_lens[1], c->cert_lens[1] - 1};
    struct edhoc_cred *extra = new_cred();
    extra->type = EDHOC_CRED_X509;
    for (size_t i = 0; i < 3; i++) {
        extra->certs[i] = certs[i];
        extra->cert_lens[i] = lens[i];
    }
    extra->n_certs = 3;
    assert_int_equal(encode_x5chain(extra, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_FORMAT);
    /* ... while a real certificate there is accepted (and kept). */
    struct edhoc_cred *ca = new_cred();
    assert_int_equal(edhoc_demo_ca(ca), 0);
    extra->certs[2] = ca->certs[0];
    extra->cert_lens[2] = ca->cert_lens[0];
    assert_int_equal(encode_x5chain(extra, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_int_equal(out->n_certs, 3);
    assert_memory_equal(out->certs[2], ca->certs[0], ca->cert_lens[0]);

    /* A leaf that is not configured is decoded (and here refused). */
    ((uint8_t *)c->certs[0])[c->cert_lens[0] - 1] ^= 1;
    c->n_certs = 1;
    assert_int_equal(encode_x5chain(c, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_FORMAT);
    free(ca);
    free(extra);
    free(probe);
    free(map);
    free(c);
    free(out);
    free(s);
}

/* A kccs that is byte for byte a configured CCS resolves to the received
 * CCS (with its own kid, not a name attached at configuration). */
static void test_resolve_kccs_configured(void **state)
{
    (void)state;
    struct edhoc_cred_store *s = new_store();
    struct edhoc_cred *c = new_cred(), *out = new_cred();
    uint8_t map[EDHOC_CRED_MAX_ID_CRED];
    size_t ml;
    assert_int_equal(edhoc_demo_trace_cred(2, 'I', c, NULL), 0);
    assert_int_equal(c->kid_len, 1);
    uint8_t own_kid = c->kid[0];
    assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_KCCS, 0, map, sizeof map, &ml), 0);
    const uint8_t other_name[] = {0x77, 0x78};
    assert_int_equal(edhoc_cred_set_kid(c, other_name, sizeof other_name), 0);
    assert_int_equal(edhoc_cred_store_add_cred(s, c), 0);
    assert_true(s->facts[0].pub_checked);
    assert_false(s->facts[0].has_leaf_sha256);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_true(edhoc_cred_equal(out, c));
    assert_int_equal(out->curve, c->curve);
    assert_memory_equal(out->pub, c->pub, c->pub_len);
    assert_int_equal(out->kid_len, 1);
    assert_int_equal(out->kid[0], own_kid);
    assert_false(out->has_validity);
    /* One byte of y changed: another key, off the curve: format error. */
    map[ml - 1] ^= 1;
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_FORMAT);
    free(c);
    free(out);
    free(s);
}

static void test_store_capacity(void **state)
{
    (void)state;
    struct edhoc_cred_store *s = new_store();
    struct edhoc_cred *c = new_cred();
    assert_int_equal(edhoc_demo_trace_cred(2, 'I', c, NULL), 0);
    for (size_t i = 0; i < EDHOC_CRED_STORE_MAX_CREDS; i++)
        assert_int_equal(edhoc_cred_store_add_cred(s, c), 0);
    assert_int_equal(edhoc_cred_store_add_cred(s, c), EDHOC_CRED_ERR_TOO_LARGE);
    assert_int_equal(edhoc_cred_store_add_anchor(s, c), EDHOC_CRED_ERR_FORMAT); /* a CCS */
    free(c);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve_kid_x5t_kccs),
        cmocka_unit_test(test_resolve_x5chain),
        cmocka_unit_test(test_validity_cached_at_parse),
        cmocka_unit_test(test_resolve_cached_window),
        cmocka_unit_test(test_resolve_configured_without_decoding),
        cmocka_unit_test(test_resolve_kccs_configured),
        cmocka_unit_test(test_store_capacity),
    };
    return cmocka_run_group_tests(tests, setup_vectors, NULL);
}
