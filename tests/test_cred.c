/* Credentials, the COSE side: CCS (RFC 8392 claims sets with a COSE_Key,
 * RFC 9528 Section 3.5.2) and CWT, ID_CRED by kid, x5t and x5chain
 * (RFC 9528 Section 3.5.3), ID_CRED with several entries, malformed input,
 * the error texts. */
#include "cred_test_common.h"

/* ---- CCS ---- */

static void check_trace2_ccs(const char *cred_key, const char *x_key, const char *y_key,
                             uint8_t kid)
{
    uint8_t ccs[256], x[32], y[32];
    size_t n = vec_hex(t2, cred_key, ccs, sizeof ccs);
    vec_hex(t2, x_key, x, sizeof x);
    vec_hex(t2, y_key, y, sizeof y);
    struct edhoc_cred *c = new_cred();
    assert_int_equal(edhoc_cred_from_ccs(c, ccs, n), 0);
    assert_int_equal(c->type, EDHOC_CRED_CCS);
    assert_int_equal(c->cred_len, n);
    assert_memory_equal(c->cred, ccs, n);
    assert_int_equal(c->kid_len, 1);
    assert_int_equal(c->kid[0], kid);
    assert_int_equal(c->curve, EDHOC_COSE_CRV_P256);
    assert_int_equal(c->pub_len, 65);
    assert_int_equal(c->pub[0], 0x04);
    assert_memory_equal(c->pub + 1, x, 32);
    assert_memory_equal(c->pub + 33, y, 32);
    const uint8_t *dh;
    size_t dh_len;
    assert_int_equal(edhoc_cred_dh_pub(c, &dh, &dh_len), 0);
    assert_int_equal(dh_len, 32);
    assert_memory_equal(dh, x, 32);
    free(c);
}

static void test_ccs_trace2(void **state)
{
    (void)state;
    check_trace2_ccs("cred_r", "pk_r_x", "pk_r_y", 0x32);
    check_trace2_ccs("cred_i", "pk_i_x", "pk_i_y", 0x2b);
}

static void test_ccs_build_roundtrip(void **state)
{
    (void)state;
    /* Rebuilding trace 2's CRED_R from its parts gives the same bytes: the
     * builder writes the same deterministic layout. */
    uint8_t ccs[256];
    size_t n = vec_hex(t2, "cred_r", ccs, sizeof ccs);
    struct edhoc_cred *a = new_cred(), *b = new_cred();
    assert_int_equal(edhoc_cred_from_ccs(a, ccs, n), 0);
    assert_int_equal(
        edhoc_cred_build_ccs(b, a->curve, a->pub, a->pub_len, a->kid, a->kid_len, "example.edu"),
        0);
    assert_int_equal(b->cred_len, n);
    assert_memory_equal(b->cred, ccs, n);

    /* Every curve, with and without kid and subject. */
    const int curves[] = {1, 2, 4, 5, 6, 7};
    for (size_t i = 0; i < 6; i++) {
        struct edhoc_key k;
        uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
        size_t pl;
        assert_int_equal(edhoc_key_generate(&k, curves[i]), 0);
        assert_int_equal(edhoc_key_public(&k, pub, &pl), 0);
        const uint8_t kid[2] = {0xab, 0xcd};
        assert_int_equal(
            edhoc_cred_build_ccs(a, curves[i], pub, pl, kid, i % 3, i % 2 ? "s" : NULL), 0);
        assert_int_equal(edhoc_cred_from_ccs(b, a->cred, a->cred_len), 0);
        assert_int_equal(b->curve, curves[i]);
        assert_int_equal(b->pub_len, pl);
        assert_memory_equal(b->pub, pub, pl);
        assert_int_equal(b->kid_len, i % 3);
        assert_int_equal(edhoc_key_check_cred(&k, b), 0);
    }
    free(a);
    free(b);
}

/* Hex CCS that must be refused, each for one reason. */
static void test_ccs_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",                         /* empty */
        "a0",                       /* no cnf */
        "80",                       /* not a map */
        "a108a101a301010220042158", /* truncated */
        /* OKP X25519 key with 31-byte x */
        "a108a101a3010120042158"
        "1f"
        "0000000000000000000000000000000000000000000000000000000000000000",
        /* kty 3 (RSA) */
        "a108a101a3010320042158200000000000000000000000000000000000000000000000000000000000000000",
        /* OKP with an EC2 curve */
        "a108a101a3010120012158200000000000000000000000000000000000000000000000000000000000000000",
        /* EC2 without y */
        "a108a101a3010220012158200000000000000000000000000000000000000000000000000000000000000000",
        /* cnf with a kid (3) instead of a COSE_Key */
        "a108a10341aa",
        /* non-shortest label (0x18 0x08 for 8) */
        "a1180801",
        /* indefinite-length map */
        "bf08a101a301012004215820000000000000000000000000000000000000000000000000000000000000000000"
        "ff",
        /* duplicate cnf */
        "a208a101a301012004215820000000000000000000000000000000000000000000000000000000000000000008"
        "a0",
        /* private key d (-4) inside the COSE_Key */
        "a108a101a401012004215820000000000000000000000000000000000000000000000000000000000000000023"
        "4100",
        /* map key of a forbidden type (bstr) */
        "a241000008a101a301012004215820000000000000000000000000000000000000000000000000000000000000"
        "0000",
    };
    struct edhoc_cred *c = new_cred();
    uint8_t buf[256];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long n = hex_decode(bad[i], buf, sizeof buf);
        assert_true(n >= 0);
        int rc = edhoc_cred_from_ccs(c, buf, (size_t)n);
        if (rc != EDHOC_CRED_ERR_FORMAT)
            fail_msg("bad CCS #%zu accepted or wrong error %d", i, rc);
    }
    /* A valid X25519 CCS, then trailing bytes, then a P-256 point off the
     * curve: the first is accepted, the other two refused. */
    const char *good =
        "a108a101a3010120042158200900000000000000000000000000000000000000000000000000000000000000";
    long n = hex_decode(good, buf, sizeof buf);
    assert_int_equal(edhoc_cred_from_ccs(c, buf, (size_t)n), 0);
    assert_int_equal(c->curve, EDHOC_COSE_CRV_X25519);
    buf[n] = 0x00;
    assert_int_equal(edhoc_cred_from_ccs(c, buf, (size_t)n + 1), EDHOC_CRED_ERR_FORMAT);

    uint8_t ccs[256];
    size_t cl = vec_hex(t2, "cred_r", ccs, sizeof ccs);
    ccs[cl - 1] ^= 1; /* last byte of y: no longer on the curve */
    assert_int_equal(edhoc_cred_from_ccs(c, ccs, cl), EDHOC_CRED_ERR_FORMAT);
    /* Every truncation of a valid CCS is refused. */
    ccs[cl - 1] ^= 1;
    for (size_t i = 0; i < cl; i++)
        assert_int_equal(edhoc_cred_from_ccs(c, ccs, i), EDHOC_CRED_ERR_FORMAT);
    free(c);
}

/* ---- ID_CRED ---- */

static void test_id_cred_trace1_x5t(void **state)
{
    (void)state;
    const char *names[2][3] = {{"cred_r", "id_cred_r", "R"}, {"cred_i", "id_cred_i", "I"}};
    for (int i = 0; i < 2; i++) {
        uint8_t der[512], want[64], out[EDHOC_CRED_MAX_ID_CRED];
        size_t dl = vec_hex(t1, names[i][0], der, sizeof der);
        size_t wl = vec_hex(t1, names[i][1], want, sizeof want);
        struct edhoc_cred *c = new_cred();
        assert_int_equal(edhoc_cred_from_x509(c, der, dl), 0);
        size_t ol;
        assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_X5T, 0, out, sizeof out, &ol), 0);
        assert_int_equal(ol, wl);
        assert_memory_equal(out, want, wl);
        /* Explicit -15 is the same. */
        assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_X5T, -15, out, sizeof out, &ol), 0);
        assert_memory_equal(out, want, wl);
        struct edhoc_id_cred id;
        assert_int_equal(edhoc_id_cred_parse(want, wl, &id), 0);
        assert_int_equal(id.type, EDHOC_ID_CRED_X5T);
        assert_int_equal(id.x5t_alg, -15);
        assert_int_equal(id.x5t_hash_len, 8);
        assert_memory_equal(id.x5t_hash, want + 6, 8);
        /* SHA-256 (-16): {34: [-16, h'<32 bytes>']} */
        assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_X5T, -16, out, sizeof out, &ol), 0);
        assert_int_equal(ol, 4 + 1 + 2 + 32);
        assert_int_equal(out[4], 0x2f);
        assert_memory_equal(out + 7, want + 6, 8); /* same prefix as the truncated hash */
        assert_int_equal(edhoc_id_cred_parse(out, ol, &id), 0);
        assert_int_equal(id.x5t_alg, -16);
        /* Too small a buffer. */
        assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_X5T, 0, out, wl - 1, &ol),
                         EDHOC_CRED_ERR_TOO_LARGE);
        /* x5t of a CCS or kccs of a certificate make no sense. */
        assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_KCCS, 0, out, sizeof out, &ol),
                         EDHOC_CRED_ERR_FORMAT);
        assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_KID, 0, out, sizeof out, &ol),
                         EDHOC_CRED_ERR_FORMAT); /* no kid */
        assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_X5T, -43, out, sizeof out, &ol),
                         EDHOC_CRED_ERR_FORMAT);
        free(c);
    }
}

static void test_id_cred_trace2_kid(void **state)
{
    (void)state;
    const char *names[2][2] = {{"cred_r", "id_cred_r"}, {"cred_i", "id_cred_i"}};
    for (int i = 0; i < 2; i++) {
        uint8_t ccs[256], want[16], out[EDHOC_CRED_MAX_ID_CRED];
        size_t cl = vec_hex(t2, names[i][0], ccs, sizeof ccs);
        size_t wl = vec_hex(t2, names[i][1], want, sizeof want);
        struct edhoc_cred *c = new_cred();
        assert_int_equal(edhoc_cred_from_ccs(c, ccs, cl), 0);
        size_t ol;
        assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_KID, 0, out, sizeof out, &ol), 0);
        assert_int_equal(ol, wl);
        assert_memory_equal(out, want, wl);
        struct edhoc_id_cred id;
        assert_int_equal(edhoc_id_cred_parse(want, wl, &id), 0);
        assert_int_equal(id.type, EDHOC_ID_CRED_KID);
        assert_int_equal(id.kid_len, 1);
        assert_int_equal(id.kid[0], c->kid[0]);

        /* kccs: {14: CCS} carries the CCS unchanged. */
        assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_KCCS, 0, out, sizeof out, &ol), 0);
        assert_int_equal(ol, 2 + cl);
        assert_int_equal(out[0], 0xa1);
        assert_int_equal(out[1], 0x0e);
        assert_memory_equal(out + 2, ccs, cl);
        assert_int_equal(edhoc_id_cred_parse(out, ol, &id), 0);
        assert_int_equal(id.type, EDHOC_ID_CRED_KCCS);
        assert_int_equal(id.ccs_len, cl);
        assert_memory_equal(id.ccs, ccs, cl);
        assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_X5T, 0, out, sizeof out, &ol),
                         EDHOC_CRED_ERR_FORMAT);
        assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_X5CHAIN, 0, out, sizeof out, &ol),
                         EDHOC_CRED_ERR_FORMAT);
        free(c);
    }
}

static void test_id_cred_x5chain(void **state)
{
    (void)state;
    struct edhoc_cred *leaf = new_cred(), *chain = new_cred();
    uint8_t out[EDHOC_CRED_MAX_ID_CRED];
    size_t ol;
    struct edhoc_id_cred id;

    /* One certificate: {33: bstr}. */
    assert_int_equal(edhoc_demo_cred_293('I', leaf, NULL), 0);
    assert_int_equal(edhoc_id_cred_encode(leaf, EDHOC_ID_CRED_X5CHAIN, 0, out, sizeof out, &ol), 0);
    assert_int_equal(ol, 1 + 2 + 3 + 293);
    const uint8_t head[] = {0xa1, 0x18, 0x21, 0x59, 0x01, 0x25};
    assert_memory_equal(out, head, sizeof head);
    assert_memory_equal(out + 6, leaf->certs[0], 293);
    assert_int_equal(edhoc_id_cred_parse(out, ol, &id), 0);
    assert_int_equal(id.type, EDHOC_ID_CRED_X5CHAIN);
    assert_int_equal(id.n_certs, 1);
    assert_int_equal(id.cert_lens[0], 293);

    /* Two: {33: [bstr, bstr]}. */
    assert_int_equal(edhoc_demo_chain_cred('R', chain, NULL), 0);
    assert_int_equal(chain->n_certs, 2);
    assert_int_equal(edhoc_id_cred_encode(chain, EDHOC_ID_CRED_X5CHAIN, 0, out, sizeof out, &ol),
                     0);
    assert_int_equal(out[3], 0x82);
    assert_int_equal(ol, 4 + 3 + chain->cert_lens[0] + 3 + chain->cert_lens[1]);
    assert_int_equal(edhoc_id_cred_parse(out, ol, &id), 0);
    assert_int_equal(id.n_certs, 2);
    assert_int_equal(id.cert_lens[1], chain->cert_lens[1]);
    assert_memory_equal(id.certs[1], chain->certs[1], chain->cert_lens[1]);
    free(leaf);
    free(chain);
}

static void test_id_cred_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",                               /* nothing */
        "a0",                             /* no parameter */
        "04",                             /* not a map */
        "a2044132044133",                 /* two parameters */
        "a1054132",                       /* unknown label */
        "a10432",                         /* kid as integer: compact form is not a map value */
        "a104413200",                     /* trailing byte */
        "a1044232",                       /* truncated kid */
        "a1182282",                       /* truncated x5t */
        "a11822822e47000000000000000000", /* SHA-256/64 of 7 bytes */
        "a11822812e",                     /* x5t with one element */
        "a118228241002e",                 /* alg and hash swapped */
        "a1182180",                       /* empty x5chain array */
        "a1182140",                       /* empty certificate */
        "a11821850141014101410141014101", /* five certificates (over the maximum) */
        "a10e80",                         /* kccs that is not a map */
        "a1041804",                       /* kid as non-bstr */
        "a1180441aa",                     /* non-shortest label 4 */
        "bf044132ff",                     /* indefinite-length map */
    };
    struct edhoc_id_cred id;
    uint8_t buf[64];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long n = hex_decode(bad[i], buf, sizeof buf);
        assert_true(n >= 0);
        int rc = edhoc_id_cred_parse(buf, (size_t)n, &id);
        if (rc != EDHOC_CRED_ERR_FORMAT)
            fail_msg("bad ID_CRED #%zu (%s): got %d", i, bad[i], rc);
    }
}

static void test_strerror(void **state)
{
    (void)state;
    const int codes[] = {EDHOC_CRED_ERR_FORMAT,      EDHOC_CRED_ERR_UNKNOWN,
                         EDHOC_CRED_ERR_UNTRUSTED,   EDHOC_CRED_ERR_EXPIRED,
                         EDHOC_CRED_ERR_KEY_TYPE,    EDHOC_CRED_ERR_FILE,
                         EDHOC_CRED_ERR_PERMISSIONS, EDHOC_CRED_ERR_TOO_LARGE};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        assert_string_not_equal(edhoc_cred_strerror(codes[i]), "unknown error");
    assert_string_equal(edhoc_cred_strerror(-1), "unknown error");
}

/* RFC 9528 Section 3.5.3: ID_CRED_x "contains one or more COSE header
 * parameters", labels not necessarily sorted. */
static void test_id_cred_multi(void **state)
{
    (void)state;
    struct edhoc_id_cred id;
    uint8_t buf[64];
    long n;
    /* {4: h'32', 33: h'3001'}: the x5chain carries the credential. */
    n = hex_decode("a2044132182142300a", buf, sizeof buf);
    assert_int_equal(edhoc_id_cred_parse(buf, (size_t)n, &id), 0);
    assert_int_equal(id.type, EDHOC_ID_CRED_X5CHAIN);
    assert_int_equal(id.labels, EDHOC_ID_CRED_LABEL_BIT(4) | EDHOC_ID_CRED_LABEL_BIT(33));
    assert_int_equal(id.kid_len, 1);
    assert_int_equal(id.n_certs, 1);
    /* {34: [-15, h'..8..'], 4: h'32'} (unsorted): x5t before kid. */
    n = hex_decode("a21822822e480102030405060708044132", buf, sizeof buf);
    assert_int_equal(edhoc_id_cred_parse(buf, (size_t)n, &id), 0);
    assert_int_equal(id.type, EDHOC_ID_CRED_X5T);
    /* {4: h'32', "x": 1}: an unknown parameter is skipped. */
    n = hex_decode("a2044132617801", buf, sizeof buf);
    assert_int_equal(edhoc_id_cred_parse(buf, (size_t)n, &id), 0);
    assert_int_equal(id.type, EDHOC_ID_CRED_KID);
    /* {32: bstr}: an x5bag of one certificate. */
    n = hex_decode("a11820423001", buf, sizeof buf);
    assert_int_equal(edhoc_id_cred_parse(buf, (size_t)n, &id), 0);
    assert_int_equal(id.type, EDHOC_ID_CRED_X5BAG);
    assert_int_equal(id.n_certs, 1);
    /* {13: [...]}: a kcwt value is an array (checked further by the CWT
     * parser). */
    n = hex_decode("a10d8440a04040", buf, sizeof buf);
    assert_int_equal(edhoc_id_cred_parse(buf, (size_t)n, &id), 0);
    assert_int_equal(id.type, EDHOC_ID_CRED_KCWT);
    assert_int_equal(id.cwt_len, 5);
    /* x5bag of eight certificates; nine are too many. */
    n = hex_decode("a1182088"
                   "4101410141014101"
                   "4101410141014101",
                   buf, sizeof buf);
    assert_int_equal(edhoc_id_cred_parse(buf, (size_t)n, &id), 0);
    assert_int_equal(id.n_certs, 8);

    static const char *const bad[] = {
        "a20ea018214101",     /* kccs and x5chain: two credentials */
        "a21820410118214101", /* x5bag and x5chain */
        "a10da0",             /* kcwt that is not an array */
        "a1182089"
        "4101410141014101"
        "4101410141014101"
        "4101",           /* nine in a bag */
        "a2044132044133", /* kid twice */
        "a2617801617902", /* nothing we know */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = hex_decode(bad[i], buf, sizeof buf);
        assert_true(n > 0);
        if (edhoc_id_cred_parse(buf, (size_t)n, &id) != EDHOC_CRED_ERR_FORMAT)
            fail_msg("ID_CRED #%zu (%s) accepted", i, bad[i]);
    }
}

/* A CWT for the subject key, signed by issuer (kid 0a in the header). */
static void make_cwt(struct edhoc_cred *out, const struct edhoc_key *issuer, const uint8_t *ikid,
                     size_t ikid_len, const struct edhoc_key *subject, int64_t nbf, int64_t exp)
{
    uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
    size_t pub_len;
    assert_int_equal(edhoc_key_public(subject, pub, &pub_len), 0);
    const uint8_t kid[] = {0x2a};
    struct edhoc_cwt_params p = {.curve = subject->curve,
                                 .pub = pub,
                                 .pub_len = pub_len,
                                 .kid = kid,
                                 .kid_len = 1,
                                 .subject = "device",
                                 .not_before = nbf,
                                 .not_after = exp,
                                 .issuer_key = issuer,
                                 .issuer_kid = ikid,
                                 .issuer_kid_len = ikid_len};
    assert_int_equal(edhoc_cwt_create(out, &p), 0);
}

/* RFC 8392 CWT, RFC 9528 Section 3.5.3.1 kcwt, Section 3.5.2 CRED_x. */
static void test_cwt(void **state)
{
    (void)state;
    struct edhoc_key ik, sk, other_k;
    assert_int_equal(edhoc_key_generate(&ik, EDHOC_COSE_CRV_ED25519), 0);
    assert_int_equal(edhoc_key_generate(&sk, EDHOC_COSE_CRV_X25519), 0);
    assert_int_equal(edhoc_key_generate(&other_k, EDHOC_COSE_CRV_ED25519), 0);
    const uint8_t ikid[] = {0x0a};
    struct edhoc_cred *cwt = new_cred(), *out = new_cred(), *issuer = new_cred();
    make_cwt(cwt, &ik, ikid, 1, &sk, T_2023, T_2025 + 86400);

    /* Untagged COSE_Sign1: 84, protected << {1: -8, 4: h'0a'} >>, {}. */
    static const uint8_t head[] = {0x84, 0x46, 0xa2, 0x01, 0x27, 0x04, 0x41, 0x0a, 0xa0};
    assert_int_equal(cwt->type, EDHOC_CRED_CWT);
    assert_memory_equal(cwt->cred, head, sizeof head);
    /* CRED_x is the CWT itself ("CRED_x SHALL be the untagged CWT"). */
    assert_ptr_equal(cwt->cred, cwt->data);
    assert_int_equal(cwt->cred_len, cwt->data_len);
    assert_int_equal(cwt->curve, EDHOC_COSE_CRV_X25519);
    assert_int_equal(cwt->kid_len, 1);
    assert_int_equal(cwt->kid[0], 0x2a);
    assert_true(cwt->has_validity);
    assert_int_equal(cwt->not_before, T_2023);
    assert_int_equal(cwt->not_after, T_2025 + 86400);
    /* Round trip through the auto-detecting parser. */
    assert_int_equal(edhoc_cred_parse(out, cwt->cred, cwt->cred_len), 0);
    assert_true(edhoc_cred_equal(out, cwt));

    /* Signature: the issuer's key verifies, another does not, nor a
     * changed signature byte. */
    uint8_t ipub[EDHOC_CRYPTO_MAX_PUB], opub[EDHOC_CRYPTO_MAX_PUB];
    size_t ipl, opl;
    assert_int_equal(edhoc_key_public(&ik, ipub, &ipl), 0);
    assert_int_equal(edhoc_key_public(&other_k, opub, &opl), 0);
    assert_int_equal(edhoc_cwt_verify(cwt, EDHOC_COSE_CRV_ED25519, ipub, ipl), 0);
    assert_int_equal(edhoc_cwt_verify(cwt, EDHOC_COSE_CRV_ED25519, opub, opl),
                     EDHOC_CRED_ERR_UNTRUSTED);
    assert_int_equal(edhoc_cwt_verify(cwt, EDHOC_COSE_CRV_P256, ipub, ipl),
                     EDHOC_CRED_ERR_UNTRUSTED);
    edhoc_cred_copy(out, cwt);
    out->data[out->data_len - 1] ^= 1;
    assert_int_equal(edhoc_cwt_verify(out, EDHOC_COSE_CRV_ED25519, ipub, ipl),
                     EDHOC_CRED_ERR_UNTRUSTED);

    /* The store: the issuer's CCS (kid 0a) is trusted. */
    assert_int_equal(
        edhoc_cred_build_ccs(issuer, EDHOC_COSE_CRV_ED25519, ipub, ipl, ikid, 1, "issuer"), 0);
    struct edhoc_cred_store *s = new_store();
    assert_int_equal(edhoc_cred_store_add_cred(s, issuer), 0);
    uint8_t *map = malloc(EDHOC_CRED_MAX_ID_CRED);
    size_t ml;
    assert_int_equal(
        edhoc_id_cred_encode(cwt, EDHOC_ID_CRED_KCWT, 0, map, EDHOC_CRED_MAX_ID_CRED, &ml), 0);
    assert_int_equal(map[0], 0xa1);
    assert_int_equal(map[1], 0x0d);
    assert_memory_equal(map + 2, cwt->cred, cwt->cred_len);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_true(edhoc_cred_equal(out, cwt));
    /* exp / nbf (RFC 8392 Sections 3.1.4, 3.1.5) against the store's time. */
    edhoc_cred_store_set_time(s, T_2025 + 2 * 86400);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_EXPIRED);
    edhoc_cred_store_set_time(s, T_2023 - 1);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_EXPIRED);
    edhoc_cred_store_set_time(s, T_2025);
    /* Signed by a key nobody trusts. */
    struct edhoc_cred *forged = new_cred();
    make_cwt(forged, &other_k, ikid, 1, &sk, T_2023, T_2025 + 86400);
    assert_int_equal(
        edhoc_id_cred_encode(forged, EDHOC_ID_CRED_KCWT, 0, map, EDHOC_CRED_MAX_ID_CRED, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_UNTRUSTED);
    /* No issuer kid: every trusted key of the curve is tried. */
    make_cwt(forged, &ik, NULL, 0, &sk, T_2023, T_2025 + 86400);
    assert_int_equal(
        edhoc_id_cred_encode(forged, EDHOC_ID_CRED_KCWT, 0, map, EDHOC_CRED_MAX_ID_CRED, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    /* By kid: a configured CWT, its window still checked. */
    const uint8_t kid_2a[] = {0xa1, 0x04, 0x41, 0x2a};
    assert_int_equal(edhoc_cred_store_resolve(s, kid_2a, sizeof kid_2a, out),
                     EDHOC_CRED_ERR_UNKNOWN);
    assert_int_equal(edhoc_cred_store_add_cred(s, cwt), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, kid_2a, sizeof kid_2a, out), 0);
    assert_true(edhoc_cred_equal(out, cwt));
    edhoc_cred_store_set_time(s, T_2025 + 2 * 86400);
    assert_int_equal(edhoc_cred_store_resolve(s, kid_2a, sizeof kid_2a, out),
                     EDHOC_CRED_ERR_EXPIRED);

    /* An issuer that cannot sign. */
    struct edhoc_cwt_params bad_issuer = {.curve = sk.curve, .issuer_key = &sk};
    assert_int_equal(edhoc_cwt_create(out, &bad_issuer), EDHOC_CRED_ERR_KEY_TYPE);

    /* The strict parser: each of these is EDHOC_CRED_ERR_FORMAT. P is the
     * protected header << {1: -8} >>, C the claims
     * {8: {1: {1: 1, -1: 4, -2: h'09 00..00'}}} (an X25519 COSE_Key, the
     * base point), S a 64-byte signature of zeros. */
#define P "43a10127"
#define C                                                                                          \
    "582ca108a101a30101200421582009"                                                               \
    "00000000000000000000000000000000"                                                             \
    "000000000000000000000000000000"
#define S                                                                                          \
    "5840"                                                                                         \
    "0000000000000000000000000000000000000000000000000000000000000000"                             \
    "0000000000000000000000000000000000000000000000000000000000000000"
    static const char *const bad[] = {
        "d284" P "a0" C S,        /* tagged (18): CRED_x is the untagged CWT */
        "83" P "a0" C,            /* three elements */
        "8446a20127028101a0" C S, /* crit (2) in the protected header */
        "8440a10127" C S,         /* alg in the unprotected header */
        "84" P "a0f6" S,          /* detached payload */
        "8443a10126a0" C "583f"
        "00000000000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000000000000000000000", /* ES256, 63 bytes */
        "8446a20127044101a1044101" C S, /* kid in both headers */
        "8446a204410a0127a0" C S,       /* header labels out of order */
        "84" P "a0582fa204617808a101a30101200421582009"
        "00000000000000000000000000000000"
        "000000000000000000000000000000" S, /* exp as text */
        "84" P "a047a1041a00010000" S,      /* no cnf */
        "84" P "a1" C S,                    /* unprotected header not a map */
    };
    uint8_t bytes[300];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long n = hex_decode(bad[i], bytes, sizeof bytes);
        assert_true(n > 0);
        if (edhoc_cred_from_cwt(out, bytes, (size_t)n) != EDHOC_CRED_ERR_FORMAT)
            fail_msg("CWT #%zu accepted", i);
    }
    /* The same shape done right parses (only the signature is wrong), so
     * each case above fails for the reason it names. */
    long n = hex_decode("84" P "a0" C S, bytes, sizeof bytes);
    assert_int_equal(edhoc_cred_from_cwt(out, bytes, (size_t)n), 0);
    assert_int_equal(out->not_before, INT64_MIN); /* no nbf, no exp */
    assert_int_equal(out->not_after, INT64_MAX);
#undef P
#undef C
#undef S
    free(forged);
    free(map);
    free(s);
    free(issuer);
    free(out);
    free(cwt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ccs_trace2),         cmocka_unit_test(test_ccs_build_roundtrip),
        cmocka_unit_test(test_ccs_malformed),      cmocka_unit_test(test_id_cred_trace1_x5t),
        cmocka_unit_test(test_id_cred_trace2_kid), cmocka_unit_test(test_id_cred_x5chain),
        cmocka_unit_test(test_id_cred_malformed),  cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_id_cred_multi),      cmocka_unit_test(test_cwt),
    };
    return cmocka_run_group_tests(tests, setup_vectors, NULL);
}
