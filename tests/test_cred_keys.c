/* Credentials, keys and files: the key type of each suite (RFC 9528
 * Section 3.6), key vectors, PEM round trips, key and credential files and
 * their permissions, the demo credentials, what `edhoc-cli keygen` writes,
 * and kids derived from PEM keys. */
#include "cred_test_common.h"

/* ---- Key types ---- */

static void test_key_type_per_suite(void **state)
{
    (void)state;
    static const struct {
        int suite, sign, dh;
    } table[] = {
        {0, 6, 4}, {1, 6, 4}, {2, 1, 1},  {3, 1, 1},  {4, 6, 4},
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
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)hex, strlen(hex), EDHOC_COSE_CRV_ED25519),
                     0);
    assert_int_equal(k.priv_len, 32);
    assert_memory_equal(k.priv, sk, 32);
    assert_int_equal(edhoc_key_public(&k, pub, &pl), 0);
    assert_int_equal(pl, 32);
    assert_memory_equal(pub, pk, 32);
    /* 32 bytes without a curve are ambiguous. */
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)hex, strlen(hex), 0),
                     EDHOC_CRED_ERR_FORMAT);

    /* Trace 2 P-256 static DH keys. */
    uint8_t x[32], y[32];
    vec_hex(t2, "sk_i", sk, sizeof sk);
    vec_hex(t2, "pk_i_x", x, sizeof x);
    vec_hex(t2, "pk_i_y", y, sizeof y);
    hex_encode(sk, 32, hex);
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)hex, strlen(hex), EDHOC_COSE_CRV_P256),
                     0);
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
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)hex, 64, EDHOC_COSE_CRV_P256),
                     EDHOC_CRED_ERR_FORMAT);
    memset(hex, '0', 64);
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)hex, 64, EDHOC_COSE_CRV_P256),
                     EDHOC_CRED_ERR_FORMAT);
    /* Length that does not fit the curve, not hex. */
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)hex, 62, EDHOC_COSE_CRV_P256),
                     EDHOC_CRED_ERR_FORMAT);
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
    const char *bad =
        "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI\n-----END PRIVATE KEY-----\n";
    assert_int_equal(edhoc_key_parse(&k, (const uint8_t *)bad, strlen(bad), 0),
                     EDHOC_CRED_ERR_FORMAT);
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
            assert_int_equal(nb, 1704067200); /* 2024-01-01 */
            assert_int_equal(na, 4102358400); /* 2099-12-31 */
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

/* What `edhoc-cli keygen` writes loads here and verifies through the
 * store: root CA -> intermediate -> leaf, sent as a two-certificate
 * x5chain. */
static void test_keygen_output_through_store(void **state)
{
    (void)state;
    char *out, args[1024], path[400], why[512];
    const char *steps[] = {
        "keygen --type x509 --curve Ed448 --ca --subject Root --out-cred %s/root.pem --out-key "
        "%s/root.key",
        "keygen --type x509 --curve P-256 --ca --subject Int --ca-cert %s/root.pem --ca-key "
        "%s/root.key --out-cred %s/int.pem --out-key %s/int.key",
        "keygen --type x509 --curve X25519 --subject Leaf --ca-cert %s/int.pem --ca-key %s/int.key "
        "--out-cred %s/leaf.pem --out-key %s/leaf.key",
        "keygen --type ccs --curve P-384 --kid 4142 --subject peer --out-cred %s/peer.cbor "
        "--out-key %s/peer.key",
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
    assert_int_equal(
        edhoc_id_cred_encode(res, EDHOC_ID_CRED_KCCS, 0, map, EDHOC_CRED_MAX_ID_CRED, &ml), 0);
    assert_int_equal(edhoc_cred_store_resolve(s, map, ml, res), 0);
    free(map);
    free(s);
    free(leaf);
    free(res);
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
        "EDHOC-kid: zz\n",                                 /* not hex */
        "EDHOC-kid: \n",                                   /* empty */
        "EDHOC-kid: 00112233445566778899aabbccddeeff00\n", /* 17 bytes */
        "EDHOC-kid: 01\nEDHOC-kid: 02\n",                  /* two for one certificate */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_type_per_suite),
        cmocka_unit_test(test_key_vectors),
        cmocka_unit_test(test_key_pem_roundtrip),
        cmocka_unit_test_setup_teardown(test_key_files, setup_tmpdir, teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_cred_files, setup_tmpdir, teardown_tmpdir),
        cmocka_unit_test(test_demo_creds),
        cmocka_unit_test_setup_teardown(test_keygen_output_through_store, setup_tmpdir,
                                        teardown_tmpdir),
        cmocka_unit_test_setup_teardown(test_pem_kid, setup_tmpdir, teardown_tmpdir),
    };
    return cmocka_run_group_tests(tests, setup_vectors, NULL);
}
