/* Credentials: CCS, X.509, ID_CRED, the store, key files, demo credentials. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "edhoc/cbor.h"
#include "edhoc/cred.h"
#include "vectors.h"
#include "demo_creds.h"

/* 2025-01-01T00:00:00Z: inside the trace 1 certificates' validity (2022 ..
 * 2029) and the demo ones (2024 .. 2099), after the expired one (2024-06-30). */
#define T_2025 1735689600
#define T_2023 1672531200 /* 2023-01-01, before the demo certificates */

static struct vec_scope t1, t2;

/* A struct edhoc_cred is 4 KB and a store ~180 KB: keep them off the stack. */
static struct edhoc_cred *new_cred(void)
{
    struct edhoc_cred *c = calloc(1, sizeof *c);
    assert_non_null(c);
    return c;
}

static struct edhoc_cred_store *new_store(void)
{
    struct edhoc_cred_store *s = malloc(sizeof *s);
    assert_non_null(s);
    edhoc_cred_store_init(s);
    edhoc_cred_store_set_time(s, T_2025);
    return s;
}

static int setup_vectors(void **state)
{
    (void)state;
    t1 = vec_load("rfc9529-trace1.json");
    t2 = vec_load("rfc9529-trace2.json");
    return 0;
}

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
    assert_int_equal(edhoc_cred_build_ccs(b, a->curve, a->pub, a->pub_len, a->kid, a->kid_len,
                                          "example.edu"),
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
        assert_int_equal(edhoc_cred_build_ccs(a, curves[i], pub, pl, kid, i % 3, i % 2 ? "s" : NULL), 0);
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
        "",                                       /* empty */
        "a0",                                     /* no cnf */
        "80",                                     /* not a map */
        "a108a101a301010220042158",               /* truncated */
        /* OKP X25519 key with 31-byte x */
        "a108a101a3010120042158" "1f" "0000000000000000000000000000000000000000000000000000000000000000",
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
        "bf08a101a301012004215820000000000000000000000000000000000000000000000000000000000000000000ff",
        /* duplicate cnf */
        "a208a101a301012004215820000000000000000000000000000000000000000000000000000000000000000008a0",
        /* private key d (-4) inside the COSE_Key */
        "a108a101a4010120042158200000000000000000000000000000000000000000000000000000000000000000234100",
        /* map key of a forbidden type (bstr) */
        "a241000008a101a3010120042158200000000000000000000000000000000000000000000000000000000000000000",
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
    const char *good = "a108a101a3010120042158200900000000000000000000000000000000000000000000000000000000000000";
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
    assert_int_equal(edhoc_id_cred_encode(chain, EDHOC_ID_CRED_X5CHAIN, 0, out, sizeof out, &ol), 0);
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
        "",             /* nothing */
        "a0",           /* no parameter */
        "04",           /* not a map */
        "a2044132044133", /* two parameters */
        "a1054132",     /* unknown label */
        "a10432",       /* kid as integer: compact form is not a map value */
        "a104413200",   /* trailing byte */
        "a1044232",     /* truncated kid */
        "a1182282",     /* truncated x5t */
        "a11822822e47000000000000000000", /* SHA-256/64 of 7 bytes */
        "a11822812e",   /* x5t with one element */
        "a118228241002e", /* alg and hash swapped */
        "a1182180",     /* empty x5chain array */
        "a1182140",     /* empty certificate */
        "a11821850141014101410141014101", /* five certificates (over the maximum) */
        "a10e80",       /* kccs that is not a map */
        "a1041804",     /* kid as non-bstr */
        "a1180441aa",   /* non-shortest label 4 */
        "bf044132ff",   /* indefinite-length map */
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
    assert_int_equal(edhoc_id_cred_encode(cr, EDHOC_ID_CRED_X5T, -16, map256, sizeof map256, &m256), 0);
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
    assert_int_equal(edhoc_cred_build_ccs(same_key, c->curve, c->pub, c->pub_len, NULL, 0, "other"), 0);
    assert_int_equal(edhoc_id_cred_encode(same_key, EDHOC_ID_CRED_KCCS, 0, map, sizeof map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), 0);
    assert_true(edhoc_cred_equal(out, same_key));
    /* ... and never a CCS with a key nobody configured. */
    struct edhoc_cred *stranger = new_cred();
    assert_int_equal(edhoc_demo_cred('R', EDHOC_COSE_CRV_P256, true, stranger, NULL), 0);
    assert_int_equal(edhoc_id_cred_encode(stranger, EDHOC_ID_CRED_KCCS, 0, map, sizeof map, &ml), 0);
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

static int encode_x5chain(const struct edhoc_cred *c, uint8_t *map, size_t *ml)
{
    return edhoc_id_cred_encode(c, EDHOC_ID_CRED_X5CHAIN, 0, map, EDHOC_CRED_MAX_ID_CRED, ml);
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
    const int sig_curves[] = {EDHOC_COSE_CRV_ED25519, EDHOC_COSE_CRV_P256,
                              EDHOC_COSE_CRV_P384, EDHOC_COSE_CRV_ED448};
    const int dh_curves[] = {EDHOC_COSE_CRV_X25519, EDHOC_COSE_CRV_P256,
                             EDHOC_COSE_CRV_P384, EDHOC_COSE_CRV_X448};
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < 8; i++) {
            int curve = i < 4 ? sig_curves[i] : dh_curves[i - 4];
            assert_int_equal(edhoc_demo_cred_typed(r ? 'R' : 'I', curve, i >= 4,
                                                   EDHOC_CRED_X509, c, NULL), 0);
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
                                  .not_before = T_2023, .not_after = T_2025 + 86400,
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
    struct edhoc_x509_params lp = {.subject_cn = "leaf", .not_before = T_2023,
                                   .not_after = T_2025 + 86400, .issuer = other_ca,
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
    struct edhoc_x509_params bp = {.subject_cn = "below a leaf", .not_before = T_2023,
                                   .not_after = T_2025 + 86400, .issuer = not_ca,
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
    struct edhoc_x509_params p = {.subject_cn = "window", .not_before = T_2023 + 17,
                                  .not_after = T_2025 + 86400 + 3};
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
    assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_KID, 0, map[2],
                                          EDHOC_CRED_MAX_ID_CRED, &ml[2]), 0);
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
    assert_int_equal(edhoc_id_cred_encode(c, EDHOC_ID_CRED_KID, 0, map, EDHOC_CRED_MAX_ID_CRED,
                                          &ml), 0);
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

/* ---- Key types ---- */

static void test_key_type_per_suite(void **state)
{
    (void)state;
    static const struct { int suite, sign, dh; } table[] = {
        {0, 6, 4}, {1, 6, 4}, {2, 1, 1}, {3, 1, 1}, {4, 6, 4},
        {5, 1, 1}, {6, 1, 4}, {24, 2, 2}, {25, 7, 5},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        bool dh;
        /* Method 0: both sign. 3: both DH. 1: I signs, R DH. 2: I DH, R signs. */
        assert_int_equal(edhoc_cred_auth_curve(0, true, table[i].suite, &dh), table[i].sign);
        assert_false(dh);
        assert_int_equal(edhoc_cred_auth_curve(3, false, table[i].suite, &dh), table[i].dh);
        assert_true(dh);
        assert_int_equal(edhoc_cred_auth_curve(1, true, table[i].suite, NULL), table[i].sign);
        assert_int_equal(edhoc_cred_auth_curve(1, false, table[i].suite, NULL), table[i].dh);
        assert_int_equal(edhoc_cred_auth_curve(2, true, table[i].suite, NULL), table[i].dh);
        assert_int_equal(edhoc_cred_auth_curve(2, false, table[i].suite, NULL), table[i].sign);
    }
    assert_int_equal(edhoc_cred_auth_curve(4, true, 0, NULL), EDHOC_CRED_ERR_KEY_TYPE);
    assert_int_equal(edhoc_cred_auth_curve(0, true, 7, NULL), EDHOC_CRED_ERR_KEY_TYPE);
    assert_int_equal(edhoc_cred_auth_curve(0, true, -1, NULL), EDHOC_CRED_ERR_KEY_TYPE);

    struct edhoc_cred *c = new_cred();
    /* Trace 1: Ed25519 certificates fit method 0 suite 0, not suite 2, not
     * as static DH. */
    assert_int_equal(edhoc_demo_trace_cred(1, 'R', c, NULL), 0);
    assert_int_equal(edhoc_cred_check_key_type(c, 0, false, 0), 0);
    assert_int_equal(edhoc_cred_check_key_type(c, 0, false, 2), EDHOC_CRED_ERR_KEY_TYPE);
    assert_int_equal(edhoc_cred_check_key_type(c, 3, false, 0), EDHOC_CRED_ERR_KEY_TYPE);
    assert_int_equal(edhoc_cred_check_key_type(c, 2, false, 0), 0); /* R signs in method 2 */
    assert_int_equal(edhoc_cred_check_key_type(c, 1, false, 0), EDHOC_CRED_ERR_KEY_TYPE);
    /* Trace 2: P-256 CCS fits method 3 suite 2 (and ES256 signing in
     * suites 2/3/5/6), not suite 0 or 24. */
    assert_int_equal(edhoc_demo_trace_cred(2, 'I', c, NULL), 0);
    assert_int_equal(edhoc_cred_check_key_type(c, 3, true, 2), 0);
    assert_int_equal(edhoc_cred_check_key_type(c, 0, true, 6), 0);
    assert_int_equal(edhoc_cred_check_key_type(c, 3, true, 6), EDHOC_CRED_ERR_KEY_TYPE);
    assert_int_equal(edhoc_cred_check_key_type(c, 3, true, 0), EDHOC_CRED_ERR_KEY_TYPE);
    assert_int_equal(edhoc_cred_check_key_type(c, 3, true, 24), EDHOC_CRED_ERR_KEY_TYPE);
    assert_int_equal(edhoc_cred_check_key_type(c, 9, true, 2), EDHOC_CRED_ERR_KEY_TYPE);
    /* Every demo credential fits the suites that name its curve. */
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        assert_int_equal(edhoc_demo_cred('I', table[i].sign, false, c, NULL), 0);
        assert_int_equal(edhoc_cred_check_key_type(c, 0, true, table[i].suite), 0);
        assert_int_equal(edhoc_demo_cred('R', table[i].dh, true, c, NULL), 0);
        assert_int_equal(edhoc_cred_check_key_type(c, 3, false, table[i].suite), 0);
        assert_int_equal(edhoc_cred_check_key_type(c, 0, false, table[i].suite),
                         table[i].sign == table[i].dh ? 0 : EDHOC_CRED_ERR_KEY_TYPE);
    }
    /* The DH public key of a signature-only curve does not exist. */
    const uint8_t *p;
    size_t pl;
    assert_int_equal(edhoc_demo_cred('I', EDHOC_COSE_CRV_ED448, false, c, NULL), 0);
    assert_int_equal(edhoc_cred_dh_pub(c, &p, &pl), EDHOC_CRED_ERR_KEY_TYPE);
    assert_int_equal(edhoc_demo_cred('I', EDHOC_COSE_CRV_X448, true, c, NULL), 0);
    assert_int_equal(edhoc_cred_dh_pub(c, &p, &pl), 0);
    assert_int_equal(pl, 56);
    free(c);
}

/* ---- Keys and files ---- */

static void test_key_vectors(void **state)
{
    (void)state;
    struct edhoc_key k;
    uint8_t sk[32], pk[32], pub[EDHOC_CRYPTO_MAX_PUB];
    size_t pl;
    char hex[80];

    /* Trace 1 Ed25519 keys: raw hex with the curve from the credential. */
    vec_hex(t1, "sk_r", sk, sizeof sk);
    vec_hex(t1, "pk_r", pk, sizeof pk);
    hex_encode(sk, 32, hex);
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)hex, strlen(hex), EDHOC_COSE_CRV_ED25519), 0);
    assert_int_equal(k.priv_len, 32);
    assert_memory_equal(k.priv, sk, 32);
    assert_int_equal(edhoc_key_public(&k, pub, &pl), 0);
    assert_int_equal(pl, 32);
    assert_memory_equal(pub, pk, 32);
    /* 32 bytes without a curve are ambiguous. */
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)hex, strlen(hex), 0), EDHOC_CRED_ERR_FORMAT);

    /* Trace 2 P-256 static DH keys. */
    uint8_t x[32], y[32];
    vec_hex(t2, "sk_i", sk, sizeof sk);
    vec_hex(t2, "pk_i_x", x, sizeof x);
    vec_hex(t2, "pk_i_y", y, sizeof y);
    hex_encode(sk, 32, hex);
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)hex, strlen(hex), EDHOC_COSE_CRV_P256), 0);
    assert_int_equal(edhoc_key_public(&k, pub, &pl), 0);
    assert_int_equal(pl, 65);
    assert_memory_equal(pub + 1, x, 32);
    assert_memory_equal(pub + 33, y, 32);

    /* Demo credentials all come with their private keys. */
    struct edhoc_cred *c = new_cred();
    for (int t = 1; t <= 2; t++) {
        assert_int_equal(edhoc_demo_trace_cred(t, 'I', c, &k), 0);
        assert_int_equal(edhoc_key_check_cred(&k, c), 0);
        assert_int_equal(edhoc_demo_trace_cred(t, 'R', c, &k), 0);
        assert_int_equal(edhoc_key_check_cred(&k, c), 0);
    }
    /* ... and a key of another credential does not fit. */
    struct edhoc_key other;
    assert_int_equal(edhoc_demo_trace_cred(2, 'I', c, &other), 0);
    assert_int_equal(edhoc_demo_trace_cred(2, 'R', c, NULL), 0);
    assert_int_equal(edhoc_key_check_cred(&other, c), EDHOC_CRED_ERR_KEY_TYPE);

    /* Out-of-range P-256 scalars. */
    memset(hex, 'f', 64);
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)hex, 64, EDHOC_COSE_CRV_P256), EDHOC_CRED_ERR_FORMAT);
    memset(hex, '0', 64);
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)hex, 64, EDHOC_COSE_CRV_P256), EDHOC_CRED_ERR_FORMAT);
    /* Length that does not fit the curve, not hex. */
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)hex, 62, EDHOC_COSE_CRV_P256), EDHOC_CRED_ERR_FORMAT);
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)"xyz", 3, 0), EDHOC_CRED_ERR_FORMAT);
    free(c);
}

static void test_key_pem_roundtrip(void **state)
{
    (void)state;
    const int curves[] = {1, 2, 4, 5, 6, 7};
    for (size_t i = 0; i < 6; i++) {
        struct edhoc_key k, back;
        char pem[1024];
        size_t pl;
        assert_int_equal(edhoc_key_generate(&k, curves[i]), 0);
        assert_int_equal(k.priv_len, edhoc_crypto_priv_len(curves[i]));
        assert_int_equal(edhoc_key_to_pem(&k, pem, sizeof pem, &pl), 0);
        assert_int_equal(strlen(pem), pl);
        assert_non_null(strstr(pem, "-----BEGIN PRIVATE KEY-----"));
        assert_int_equal(edhoc_key_parse(&back, (const uint8_t *)pem, pl, 0), 0);
        assert_int_equal(back.curve, curves[i]);
        assert_int_equal(back.priv_len, k.priv_len);
        assert_memory_equal(back.priv, k.priv, k.priv_len);
        /* With the right hint too; a wrong hint is refused. */
        assert_int_equal(edhoc_key_parse(&back, (const uint8_t *)pem, pl, curves[i]), 0);
        assert_int_equal(edhoc_key_parse(&back, (const uint8_t *)pem, pl, curves[(i + 1) % 6]),
                         EDHOC_CRED_ERR_FORMAT);
        /* Raw hex of the same key. */
        char hex[2 * EDHOC_CRYPTO_MAX_PRIV + 8] = "0x";
        hex_encode(k.priv, k.priv_len, hex + 2);
        strcat(hex, "\n");
        assert_int_equal(edhoc_key_parse(&back, (const uint8_t *)hex, strlen(hex), curves[i]), 0);
        assert_memory_equal(back.priv, k.priv, k.priv_len);
        /* Lengths that name one curve need no hint. */
        if (k.priv_len != 32) {
            assert_int_equal(edhoc_key_parse(&back, (const uint8_t *)hex, strlen(hex), 0), 0);
            assert_int_equal(back.curve, curves[i]);
        }
        /* Too small a buffer. */
        assert_int_equal(edhoc_key_to_pem(&k, pem, 20, &pl), EDHOC_CRED_ERR_TOO_LARGE);
    }
    /* OpenSSL's traditional "EC PRIVATE KEY" form is read too. */
    const char *sec1 =
        /* trace 2 sk_r, written by `openssl ec` from its SEC1 DER */
        "-----BEGIN EC PRIVATE KEY-----\n"
        "MHcCAQEEIHLMR2Hb1MePdYkxqlidNI0e+HSn4wPt4vFA3PPmqkqsoAoGCCqGSM49\n"
        "AwEHoUQDQgAEu8NJYFJupNMulAytKiNBSN3CF5GhKvvLrJNiIEbdRPBFGeJXI2sq\n"
        "DOICPwkx8fOGynr9pk/N4BCMIkxR6r9gcg==\n"
        "-----END EC PRIVATE KEY-----\n";
    struct edhoc_key k;
    uint8_t sk[32];
    vec_hex(t2, "sk_r", sk, sizeof sk);
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)sec1, strlen(sec1), 0), 0);
    assert_int_equal(k.curve, EDHOC_COSE_CRV_P256);
    assert_memory_equal(k.priv, sk, 32);
    /* A damaged PEM. */
    const char *bad = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI\n-----END PRIVATE KEY-----\n";
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)bad, strlen(bad), 0), EDHOC_CRED_ERR_FORMAT);
}

static char tmpdir[256];

static int setup_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_cred.XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown_tmpdir(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_text(const char *path, const void *data, size_t len, mode_t mode)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_key_files(void **state)
{
    (void)state;
    char path[400], why[512];
    struct edhoc_key k, back;
    struct stat st;
    snprintf(path, sizeof path, "%s/key.pem", tmpdir);

    assert_int_equal(edhoc_key_generate(&k, EDHOC_COSE_CRV_ED448), 0);
    assert_int_equal(edhoc_key_write_file(&k, path, false, why, sizeof why), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(edhoc_key_load_file(&back, path, 0, why, sizeof why), 0);
    assert_memory_equal(back.priv, k.priv, k.priv_len);
    /* The file exists: no silent overwrite; with overwrite a fresh 0600 file. */
    assert_int_equal(edhoc_key_write_file(&k, path, false, why, sizeof why), EDHOC_CRED_ERR_FILE);
    assert_non_null(strstr(why, path));
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(edhoc_key_write_file(&k, path, true, why, sizeof why), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    /* Any group/other bit is refused, with the fix in the message. */
    const mode_t modes[] = {0644, 0640, 0604, 0601, 0610};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        assert_int_equal(chmod(path, modes[i]), 0);
        why[0] = '\0';
        assert_int_equal(edhoc_key_load_file(&back, path, 0, why, sizeof why),
                         EDHOC_CRED_ERR_PERMISSIONS);
        assert_non_null(strstr(why, path));
        assert_non_null(strstr(why, "chmod 600"));
    }
    assert_int_equal(chmod(path, 0400), 0);
    assert_int_equal(edhoc_key_load_file(&back, path, EDHOC_COSE_CRV_ED448, why, sizeof why), 0);
    /* Owned by someone else (not root): refused, as OpenSSH refuses it. */
    if (geteuid() == 0) {
        assert_int_equal(chown(path, 65534, 65534), 0);
        why[0] = '\0';
        assert_int_equal(edhoc_key_load_file(&back, path, 0, why, sizeof why),
                         EDHOC_CRED_ERR_PERMISSIONS);
        assert_non_null(strstr(why, "owned by uid 65534"));
        assert_int_equal(chown(path, 0, 0), 0);
    }
    /* In a directory others can write (no sticky bit): refused. */
    assert_int_equal(chmod(tmpdir, 0777), 0);
    why[0] = '\0';
    assert_int_equal(edhoc_key_load_file(&back, path, 0, why, sizeof why),
                     EDHOC_CRED_ERR_PERMISSIONS);
    assert_non_null(strstr(why, "a directory others can write"));
    /* With the sticky bit (as /tmp) others cannot replace it. */
    assert_int_equal(chmod(tmpdir, 01777), 0);
    assert_int_equal(edhoc_key_load_file(&back, path, EDHOC_COSE_CRV_ED448, why, sizeof why), 0);
    assert_int_equal(chmod(tmpdir, 0700), 0);

    /* Hex key file with the curve from its credential. */
    uint8_t sk[32];
    char hex[80];
    vec_hex(t2, "sk_r", sk, sizeof sk);
    hex_encode(sk, 32, hex);
    snprintf(path, sizeof path, "%s/key.hex", tmpdir);
    write_text(path, hex, strlen(hex), 0600);
    assert_int_equal(edhoc_key_load_file(&back, path, EDHOC_COSE_CRV_P256, why, sizeof why), 0);
    assert_memory_equal(back.priv, sk, 32);
    /* Not a key. */
    write_text(path, "hello", 5, 0600);
    assert_int_equal(edhoc_key_load_file(&back, path, 0, why, sizeof why), EDHOC_CRED_ERR_FORMAT);
    assert_non_null(strstr(why, path));
    /* Missing file. */
    snprintf(path, sizeof path, "%s/missing", tmpdir);
    assert_int_equal(edhoc_key_load_file(&back, path, 0, why, sizeof why), EDHOC_CRED_ERR_FILE);
    assert_non_null(strstr(why, path));
    /* Permission check does not apply to credentials (they are public). */
}

static void test_cred_files(void **state)
{
    (void)state;
    char path[400], why[512];
    struct edhoc_cred *c = new_cred(), *d = new_cred();
    uint8_t ccs[256];
    size_t cl = vec_hex(t2, "cred_i", ccs, sizeof ccs);

    /* CCS as binary CBOR and as hex text. */
    snprintf(path, sizeof path, "%s/ccs.cbor", tmpdir);
    write_text(path, ccs, cl, 0644);
    assert_int_equal(edhoc_cred_load_file(c, path, why, sizeof why), 0);
    assert_int_equal(c->type, EDHOC_CRED_CCS);
    assert_memory_equal(c->cred, ccs, cl);
    char hex[600];
    hex_encode(ccs, cl, hex);
    strcat(hex, "\n");
    snprintf(path, sizeof path, "%s/ccs.hex", tmpdir);
    write_text(path, hex, strlen(hex), 0644);
    assert_int_equal(edhoc_cred_load_file(d, path, why, sizeof why), 0);
    assert_true(edhoc_cred_equal(c, d));
    assert_int_equal(d->kid[0], 0x2b);

    /* A chain as PEM (leaf first), and as concatenated DER. */
    char *pem = malloc(8192);
    size_t pl;
    assert_int_equal(edhoc_demo_chain_cred('R', c, NULL), 0);
    assert_int_equal(edhoc_x509_to_pem(c, pem, 8192, &pl), 0);
    snprintf(path, sizeof path, "%s/chain.pem", tmpdir);
    write_text(path, pem, pl, 0644);
    assert_int_equal(edhoc_cred_load_file(d, path, why, sizeof why), 0);
    assert_int_equal(d->n_certs, 2);
    assert_true(edhoc_cred_equal(c, d));
    assert_int_equal(d->cert_lens[1], c->cert_lens[1]);
    assert_memory_equal(d->certs[1], c->certs[1], c->cert_lens[1]);
    snprintf(path, sizeof path, "%s/chain.der", tmpdir);
    write_text(path, c->certs[0], c->data_len - (size_t)(c->certs[0] - c->data), 0644);
    assert_int_equal(edhoc_cred_load_file(d, path, why, sizeof why), 0);
    assert_int_equal(d->n_certs, 2);
    assert_true(edhoc_cred_equal(c, d));

    /* Not a credential. */
    snprintf(path, sizeof path, "%s/junk", tmpdir);
    write_text(path, "\x01\x02\x03", 3, 0644);
    assert_int_equal(edhoc_cred_load_file(d, path, why, sizeof why), EDHOC_CRED_ERR_FORMAT);
    assert_non_null(strstr(why, path));

    /* Trust file: the demo CA (anchor) and the trace 1 responder (peer). */
    struct edhoc_cred *ca = new_cred();
    assert_int_equal(edhoc_demo_ca(ca), 0);
    size_t n1, n2;
    assert_int_equal(edhoc_x509_to_pem(ca, pem, 8192, &n1), 0);
    assert_int_equal(edhoc_demo_trace_cred(1, 'R', c, NULL), 0);
    assert_int_equal(edhoc_x509_to_pem(c, pem + n1, 8192 - n1, &n2), 0);
    snprintf(path, sizeof path, "%s/trust.pem", tmpdir);
    write_text(path, pem, n1 + n2, 0644);
    struct edhoc_cred_store *s = new_store();
    assert_int_equal(edhoc_cred_store_add_file(s, path, why, sizeof why), 0);
    assert_int_equal(s->n_anchors, 1);
    assert_int_equal(s->n_creds, 1);
    /* A CCS trust file adds one peer. */
    snprintf(path, sizeof path, "%s/ccs.hex", tmpdir);
    assert_int_equal(edhoc_cred_store_add_file(s, path, why, sizeof why), 0);
    assert_int_equal(s->n_creds, 2);
    uint8_t id[16];
    size_t il = vec_hex(t2, "id_cred_i", id, sizeof id);
    assert_int_equal(edhoc_cred_store_resolve(s, id, il, d), 0);
    il = vec_hex(t1, "id_cred_r", id, sizeof id);
    assert_int_equal(edhoc_cred_store_resolve(s, id, il, d), 0);
    free(s);
    free(ca);
    free(pem);
    free(c);
    free(d);
}

/* ---- Demo credentials ---- */

static void test_demo_creds(void **state)
{
    (void)state;
    struct edhoc_cred *c = new_cred();
    struct edhoc_key k;
    uint8_t kids[80];
    size_t n_kids = 0;
    const int sig[] = {6, 1, 2, 7}, dh[] = {4, 1, 2, 5};
    for (int r = 0; r < 2; r++) {
        char role = r ? 'R' : 'I';
        for (int i = 0; i < 4; i++) {
            assert_int_equal(edhoc_demo_cred(role, sig[i], false, c, &k), 0);
            assert_int_equal(c->type, EDHOC_CRED_X509);
            assert_int_equal(c->curve, sig[i]);
            assert_int_equal(edhoc_key_check_cred(&k, c), 0);
            int64_t nb, na;
            assert_int_equal(edhoc_cred_x509_validity(c, &nb, &na), 0);
            assert_int_equal(nb, 1704067200);  /* 2024-01-01 */
            assert_int_equal(na, 4102358400);  /* 2099-12-31 */
            assert_int_equal(c->kid_len, 1);
            kids[n_kids++] = c->kid[0];
            assert_int_equal(edhoc_demo_cred(role, dh[i], true, c, &k), 0);
            assert_int_equal(c->type, EDHOC_CRED_CCS);
            assert_int_equal(c->curve, dh[i]);
            assert_int_equal(edhoc_key_check_cred(&k, c), 0);
            assert_int_equal(c->kid_len, 1);
            kids[n_kids++] = c->kid[0];
            /* The other type for the same key use. */
            assert_int_equal(edhoc_demo_cred_typed(role, sig[i], false, EDHOC_CRED_CCS, c, &k), 0);
            assert_int_equal(c->type, EDHOC_CRED_CCS);
            assert_int_equal(c->curve, sig[i]);
            assert_int_equal(edhoc_key_check_cred(&k, c), 0);
            kids[n_kids++] = c->kid[0];
            assert_int_equal(edhoc_demo_cred_typed(role, dh[i], true, EDHOC_CRED_X509, c, &k), 0);
            assert_int_equal(c->type, EDHOC_CRED_X509);
            assert_int_equal(c->curve, dh[i]);
            assert_int_equal(edhoc_key_check_cred(&k, c), 0);
            kids[n_kids++] = c->kid[0];
            /* Type 0 is the default type. */
            assert_int_equal(edhoc_demo_cred_typed(role, dh[i], true, 0, c, NULL), 0);
            assert_int_equal(c->type, EDHOC_CRED_CCS);
        }
        assert_int_equal(edhoc_demo_chain_cred(role, c, &k), 0);
        assert_int_equal(c->n_certs, 2);
        assert_int_equal(edhoc_key_check_cred(&k, c), 0);
        kids[n_kids++] = c->kid[0];
        assert_int_equal(edhoc_demo_cred_293(role, c, &k), 0);
        assert_int_equal(c->cert_lens[0], 293);
        assert_int_equal(c->curve, EDHOC_COSE_CRV_P256);
        assert_int_equal(edhoc_key_check_cred(&k, c), 0);
        kids[n_kids++] = c->kid[0];
        assert_int_equal(edhoc_demo_trace_cred(2, role, c, &k), 0);
        kids[n_kids++] = c->kid[0];
    }
    assert_int_equal(edhoc_demo_expired_cred(c, &k), 0);
    assert_int_equal(edhoc_key_check_cred(&k, c), 0);
    kids[n_kids++] = c->kid[0];
    /* Kids are unique, one byte, and encodable as one-byte CBOR integers. */
    for (size_t i = 0; i < n_kids; i++) {
        assert_true(kids[i] <= 0x17 || (kids[i] >= 0x20 && kids[i] <= 0x37));
        for (size_t j = i + 1; j < n_kids; j++)
            assert_int_not_equal(kids[i], kids[j]);
    }
    /* Unknown combinations. */
    assert_int_equal(edhoc_demo_cred('I', 4, false, c, NULL), EDHOC_CRED_ERR_UNKNOWN);
    assert_int_equal(edhoc_demo_cred('I', 6, true, c, NULL), EDHOC_CRED_ERR_UNKNOWN);
    assert_int_equal(edhoc_demo_cred('X', 6, false, c, NULL), EDHOC_CRED_ERR_UNKNOWN);
    assert_int_equal(edhoc_demo_trace_cred(3, 'I', c, NULL), EDHOC_CRED_ERR_UNKNOWN);

    /* The demo trust store resolves every demo credential by kid. */
    struct edhoc_cred_store *s = new_store();
    assert_int_equal(edhoc_demo_trust(s), 0);
    assert_int_equal(s->n_anchors, 1);
    for (size_t i = 0; i < n_kids - 1; i++) {
        uint8_t id[4] = {0xa1, 0x04, 0x41, kids[i]};
        assert_int_equal(edhoc_cred_store_resolve(s, id, 4, c), 0);
        assert_int_equal(c->kid[0], kids[i]);
    }
    /* ... but not the expired one. */
    uint8_t id[4] = {0xa1, 0x04, 0x41, 0x17};
    assert_int_equal(edhoc_cred_store_resolve(s, id, 4, c), EDHOC_CRED_ERR_UNKNOWN);
    free(s);
    free(c);
}

static void test_x509_create(void **state)
{
    (void)state;
    struct edhoc_key k;
    struct edhoc_cred *c = new_cred();
    struct edhoc_x509_params p = {.subject_cn = "self", .not_before = T_2023,
                                  .not_after = T_2025 + 86400};
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

/* What `edhoc-cli keygen` writes loads here and verifies through the
 * store: root CA -> intermediate -> leaf, sent as a two-certificate
 * x5chain. */
static void test_keygen_output_through_store(void **state)
{
    (void)state;
    char *out, args[1024], path[400], why[512];
    const char *steps[] = {
        "keygen --type x509 --curve Ed448 --ca --subject Root --out-cred %s/root.pem --out-key %s/root.key",
        "keygen --type x509 --curve P-256 --ca --subject Int --ca-cert %s/root.pem --ca-key %s/root.key --out-cred %s/int.pem --out-key %s/int.key",
        "keygen --type x509 --curve X25519 --subject Leaf --ca-cert %s/int.pem --ca-key %s/int.key --out-cred %s/leaf.pem --out-key %s/leaf.key",
        "keygen --type ccs --curve P-384 --kid 4142 --subject peer --out-cred %s/peer.cbor --out-key %s/peer.key",
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        snprintf(args, sizeof args, steps[i], tmpdir, tmpdir, tmpdir, tmpdir);
        int rc = run_cli(args, true, &out);
        if (rc != 0)
            fail_msg("%s: exit %d: %s", args, rc, out);
        free(out);
    }
    struct edhoc_cred *leaf = new_cred(), *res = new_cred();
    struct edhoc_key key;
    snprintf(path, sizeof path, "%s/leaf.pem", tmpdir);
    assert_int_equal(edhoc_cred_load_file(leaf, path, why, sizeof why), 0);
    assert_int_equal(leaf->n_certs, 2);
    assert_int_equal(leaf->curve, EDHOC_COSE_CRV_X25519);
    snprintf(path, sizeof path, "%s/leaf.key", tmpdir);
    assert_int_equal(edhoc_key_load_file(&key, path, leaf->curve, why, sizeof why), 0);
    assert_int_equal(edhoc_key_check_cred(&key, leaf), 0);

    struct edhoc_cred_store *s = new_store();
    edhoc_cred_store_set_time(s, 0); /* keygen certificates start now */
    snprintf(path, sizeof path, "%s/root.pem", tmpdir);
    assert_int_equal(edhoc_cred_store_add_file(s, path, why, sizeof why), 0);
    assert_int_equal(s->n_anchors, 1);
    uint8_t *map = malloc(EDHOC_CRED_MAX_ID_CRED);
    size_t ml;
    assert_int_equal(encode_x5chain(leaf, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, res), 0);
    assert_true(edhoc_cred_equal(res, leaf));
    assert_int_equal(edhoc_cred_check_key_type(res, 3, false, 0), 0);
    /* The leaf alone does not reach the root. */
    leaf->n_certs = 1;
    assert_int_equal(encode_x5chain(leaf, map, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, res), EDHOC_CRED_ERR_UNTRUSTED);

    /* The CCS, configured, resolves by kid and by value. */
    snprintf(path, sizeof path, "%s/peer.cbor", tmpdir);
    assert_int_equal(edhoc_cred_store_add_file(s, path, why, sizeof why), 0);
    const uint8_t kid_map[] = {0xa1, 0x04, 0x42, 0x41, 0x42};
    assert_int_equal(edhoc_cred_store_resolve(s, kid_map, sizeof kid_map, res), 0);
    assert_int_equal(res->curve, EDHOC_COSE_CRV_P384);
    snprintf(path, sizeof path, "%s/peer.key", tmpdir);
    assert_int_equal(edhoc_key_load_file(&key, path, res->curve, why, sizeof why), 0);
    assert_int_equal(edhoc_key_check_cred(&key, res), 0);
    assert_int_equal(edhoc_id_cred_encode(res, EDHOC_ID_CRED_KCCS, 0, map, EDHOC_CRED_MAX_ID_CRED, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, res), 0);
    free(map);
    free(s);
    free(leaf);
    free(res);
}

static void test_strerror(void **state)
{
    (void)state;
    const int codes[] = {EDHOC_CRED_ERR_FORMAT, EDHOC_CRED_ERR_UNKNOWN, EDHOC_CRED_ERR_UNTRUSTED,
                         EDHOC_CRED_ERR_EXPIRED, EDHOC_CRED_ERR_KEY_TYPE, EDHOC_CRED_ERR_FILE,
                         EDHOC_CRED_ERR_PERMISSIONS, EDHOC_CRED_ERR_TOO_LARGE};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        assert_string_not_equal(edhoc_cred_strerror(codes[i]), "unknown error");
    assert_string_equal(edhoc_cred_strerror(-1), "unknown error");
}

/* ---- kid for certificates, multi-entry ID_CRED, x5bag, CWT ---- */

/* A certificate with a kid in PEM: "EDHOC-kid: HEX" before its block.
 * RFC 9528 Section 3.5.3: a kid may name any credential, so a kid lookup
 * finds certificates too, and their validity still counts. */
static void test_pem_kid(void **state)
{
    (void)state;
    struct edhoc_cred *c = new_cred(), *d = new_cred(), *out = new_cred();
    char *pem = malloc(3 * EDHOC_CRED_MAX_DATA), *text = malloc(4 * EDHOC_CRED_MAX_DATA);
    size_t pl, tl;
    assert_int_equal(edhoc_demo_cred_293('I', c, NULL), 0);
    assert_int_equal(edhoc_x509_to_pem(c, pem, 3 * EDHOC_CRED_MAX_DATA, &pl), 0);

    tl = (size_t)snprintf(text, 4 * EDHOC_CRED_MAX_DATA, "EDHOC-kid: 2c\n%s", pem);
    assert_int_equal(edhoc_cred_parse(d, (const uint8_t *)text, tl), 0);
    assert_int_equal(d->type, EDHOC_CRED_X509);
    assert_int_equal(d->kid_len, 1);
    assert_int_equal(d->kid[0], 0x2c);
    assert_true(edhoc_cred_equal(c, d));
    /* Without the line: no kid (the demo credential's own is not in PEM). */
    assert_int_equal(edhoc_cred_parse(d, (const uint8_t *)pem, pl), 0);
    assert_int_equal(d->kid_len, 0);

    static const char *const bad_lines[] = {
        "EDHOC-kid: zz\n",                               /* not hex */
        "EDHOC-kid: \n",                                 /* empty */
        "EDHOC-kid: 00112233445566778899aabbccddeeff00\n", /* 17 bytes */
        "EDHOC-kid: 01\nEDHOC-kid: 02\n",                 /* two for one certificate */
    };
    for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
        tl = (size_t)snprintf(text, 4 * EDHOC_CRED_MAX_DATA, "%s%s", bad_lines[i], pem);
        if (edhoc_cred_parse(d, (const uint8_t *)text, tl) != EDHOC_CRED_ERR_FORMAT)
            fail_msg("kid line #%zu accepted", i);
    }
    /* A kid after the last certificate names nothing. */
    tl = (size_t)snprintf(text, 4 * EDHOC_CRED_MAX_DATA, "%sEDHOC-kid: 01\n", pem);
    assert_int_equal(edhoc_cred_parse(d, (const uint8_t *)text, tl), EDHOC_CRED_ERR_FORMAT);

    /* A trust file naming two certificates by kid: each lookup finds its
     * own, in the compact-encoding's full form {4: h'2c'} (Section 3.5.3.2). */
    struct edhoc_cred *e = new_cred();
    char *pem2 = malloc(3 * EDHOC_CRED_MAX_DATA);
    size_t pl2;
    assert_int_equal(edhoc_demo_cred_293('R', e, NULL), 0);
    assert_int_equal(edhoc_x509_to_pem(e, pem2, 3 * EDHOC_CRED_MAX_DATA, &pl2), 0);
    tl = (size_t)snprintf(text, 4 * EDHOC_CRED_MAX_DATA, "EDHOC-kid: 2c\n%sEDHOC-kid: 4711\n%s",
                          pem, pem2);
    char path[300];
    snprintf(path, sizeof path, "%s/trust.pem", tmpdir);
    write_text(path, text, tl, 0644);
    struct edhoc_cred_store *s = new_store();
    assert_int_equal(edhoc_cred_store_add_file(s, path, NULL, 0), 0);
    const uint8_t kid_2c[] = {0xa1, 0x04, 0x41, 0x2c};
    const uint8_t kid_4711[] = {0xa1, 0x04, 0x42, 0x47, 0x11};
    const uint8_t kid_99[] = {0xa1, 0x04, 0x41, 0x99};
    assert_int_equal(edhoc_cred_store_resolve(s, kid_2c, sizeof kid_2c, out), 0);
    assert_true(edhoc_cred_equal(out, c));
    assert_int_equal(edhoc_cred_store_resolve(s, kid_4711, sizeof kid_4711, out), 0);
    assert_true(edhoc_cred_equal(out, e));
    assert_int_equal(edhoc_cred_store_resolve(s, kid_99, sizeof kid_99, out),
                     EDHOC_CRED_ERR_UNKNOWN);
    /* The window of a certificate found by kid is checked (demo
     * certificates start in 2024). */
    edhoc_cred_store_set_time(s, T_2023);
    assert_int_equal(edhoc_cred_store_resolve(s, kid_2c, sizeof kid_2c, out),
                     EDHOC_CRED_ERR_EXPIRED);
    free(s);
    free(pem2);
    free(e);
    free(pem);
    free(text);
    free(out);
    free(d);
    free(c);
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
    n = hex_decode("a1182088" "4101410141014101" "4101410141014101", buf, sizeof buf);
    assert_int_equal(edhoc_id_cred_parse(buf, (size_t)n, &id), 0);
    assert_int_equal(id.n_certs, 8);

    static const char *const bad[] = {
        "a20ea018214101",          /* kccs and x5chain: two credentials */
        "a21820410118214101",      /* x5bag and x5chain */
        "a10da0",                  /* kcwt that is not an array */
        "a1182089" "4101410141014101" "4101410141014101" "4101", /* nine in a bag */
        "a2044132044133",          /* kid twice */
        "a2617801617902",          /* nothing we know */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = hex_decode(bad[i], buf, sizeof buf);
        assert_true(n > 0);
        if (edhoc_id_cred_parse(buf, (size_t)n, &id) != EDHOC_CRED_ERR_FORMAT)
            fail_msg("ID_CRED #%zu (%s) accepted", i, bad[i]);
    }
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
        assert_int_equal(edhoc_cred_from_der_chain(single, &issuer->certs[0],
                                                   &issuer->cert_lens[0], 1), 0);
    }
    struct edhoc_x509_params p = {.subject_cn = cn, .not_before = T_2023,
                                  .not_after = not_after, .is_ca = ca, .issuer = single,
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
        assert_int_equal(edhoc_cred_cert_hash(-16, x5t_of->certs[0], x5t_of->cert_lens[0], h,
                                              &hl), 0);
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
    assert_int_equal(edhoc_id_cred_encode(leaf, EDHOC_ID_CRED_X5BAG, 0, map,
                                          EDHOC_CRED_MAX_ID_CRED, &ml), 0);
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
        c[i] = make_cert(i == 1 ? "C2" : i == 2 ? "C3" : "C4", true, c[i - 1], &kc[i - 1],
                         &kc[i], until);
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

/* A CWT for the subject key, signed by issuer (kid 0a in the header). */
static void make_cwt(struct edhoc_cred *out, const struct edhoc_key *issuer, const uint8_t *ikid,
                     size_t ikid_len, const struct edhoc_key *subject, int64_t nbf, int64_t exp)
{
    uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
    size_t pub_len;
    assert_int_equal(edhoc_key_public(subject, pub, &pub_len), 0);
    const uint8_t kid[] = {0x2a};
    struct edhoc_cwt_params p = {.curve = subject->curve, .pub = pub, .pub_len = pub_len,
                                 .kid = kid, .kid_len = 1, .subject = "device",
                                 .not_before = nbf, .not_after = exp, .issuer_key = issuer,
                                 .issuer_kid = ikid, .issuer_kid_len = ikid_len};
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
    assert_int_equal(edhoc_cred_build_ccs(issuer, EDHOC_COSE_CRV_ED25519, ipub, ipl, ikid, 1,
                                          "issuer"), 0);
    struct edhoc_cred_store *s = new_store();
    assert_int_equal(edhoc_cred_store_add_cred(s, issuer), 0);
    uint8_t *map = malloc(EDHOC_CRED_MAX_ID_CRED);
    size_t ml;
    assert_int_equal(edhoc_id_cred_encode(cwt, EDHOC_ID_CRED_KCWT, 0, map,
                                          EDHOC_CRED_MAX_ID_CRED, &ml), 0);
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
    assert_int_equal(edhoc_id_cred_encode(forged, EDHOC_ID_CRED_KCWT, 0, map,
                                          EDHOC_CRED_MAX_ID_CRED, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, out), EDHOC_CRED_ERR_UNTRUSTED);
    /* No issuer kid: every trusted key of the curve is tried. */
    make_cwt(forged, &ik, NULL, 0, &sk, T_2023, T_2025 + 86400);
    assert_int_equal(edhoc_id_cred_encode(forged, EDHOC_ID_CRED_KCWT, 0, map,
                                          EDHOC_CRED_MAX_ID_CRED, &ml), 0);
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
#define C "582ca108a101a30101200421582009" "00000000000000000000000000000000" \
          "000000000000000000000000000000"
#define S "5840" "0000000000000000000000000000000000000000000000000000000000000000" \
          "0000000000000000000000000000000000000000000000000000000000000000"
    static const char *const bad[] = {
        "d284" P "a0" C S,          /* tagged (18): CRED_x is the untagged CWT */
        "83" P "a0" C,              /* three elements */
        "8446a20127028101a0" C S,   /* crit (2) in the protected header */
        "8440a10127" C S,           /* alg in the unprotected header */
        "84" P "a0f6" S,            /* detached payload */
        "8443a10126a0" C "583f" "00000000000000000000000000000000000000000000000000000000"
        "0000000000000000000000000000000000000000000000000000000000000000000000", /* ES256, 63 bytes */
        "8446a20127044101a1044101" C S, /* kid in both headers */
        "8446a204410a0127a0" C S,   /* header labels out of order */
        "84" P "a0582fa204617808a101a30101200421582009" "00000000000000000000000000000000"
        "000000000000000000000000000000" S, /* exp as text */
        "84" P "a047a1041a00010000" S, /* no cnf */
        "84" P "a1" C S,            /* unprotected header not a map */
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
        cmocka_unit_test(test_ccs_trace2),
        cmocka_unit_test(test_ccs_build_roundtrip),
        cmocka_unit_test(test_ccs_malformed),
        cmocka_unit_test(test_x509_trace1),
        cmocka_unit_test(test_x509_malformed),
        cmocka_unit_test(test_id_cred_trace1_x5t),
        cmocka_unit_test(test_id_cred_trace2_kid),
        cmocka_unit_test(test_id_cred_x5chain),
        cmocka_unit_test(test_id_cred_malformed),
        cmocka_unit_test(test_resolve_kid_x5t_kccs),
        cmocka_unit_test(test_resolve_x5chain),
        cmocka_unit_test(test_validity_cached_at_parse),
        cmocka_unit_test(test_resolve_cached_window),
        cmocka_unit_test(test_resolve_configured_without_decoding),
        cmocka_unit_test(test_resolve_kccs_configured),
        cmocka_unit_test(test_store_capacity),
        cmocka_unit_test(test_key_type_per_suite),
        cmocka_unit_test(test_key_vectors),
        cmocka_unit_test(test_key_pem_roundtrip),
        cmocka_unit_test_setup_teardown(test_key_files, setup_tmpdir, teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_cred_files, setup_tmpdir, teardown_tmpdir),
        cmocka_unit_test(test_demo_creds),
        cmocka_unit_test(test_x509_create),
        cmocka_unit_test_setup_teardown(test_keygen_output_through_store, setup_tmpdir,
                                        teardown_tmpdir),
        cmocka_unit_test(test_strerror),
        cmocka_unit_test_setup_teardown(test_pem_kid, setup_tmpdir, teardown_tmpdir),
        cmocka_unit_test(test_id_cred_multi),
        cmocka_unit_test(test_resolve_x5bag),
        cmocka_unit_test(test_cwt),
    };
    return cmocka_run_group_tests(tests, setup_vectors, NULL);
}
