/*
 * Built-in demo credentials (demo_creds.h): the RFC 9529 trace
 * credentials and a small demo PKI, so that `edhoc-cli simulate` and the
 * tests run without any provisioning. Linked into the CLI and the tests,
 * not into libedhoc.
 *
 * Provenance:
 *  - trace1_*: RFC 9529 Section 2 (cred_i / cred_r DER certificates, sk_i /
 *    sk_r Ed25519 keys, from tests/vectors/rfc9529-trace1.json);
 *  - trace2_*: RFC 9529 Section 3 (CCS maps, P-256 static DH keys, from
 *    tests/vectors/rfc9529-trace2.json);
 *  - everything else was generated once with this project's own keygen,
 *    validity 2024-01-01 .. 2099-12-31 (the expired certificate: 2023-01-01
 *    .. 2024-06-30), then kept in data/demo/ (certificates as PEM, leaf
 *    first; CCS as CBOR; private keys as the raw scalar or seed of
 *    edhoc/crypto.h, in hex), which scripts/embed_demo.py turns into the
 *    arrays of demo_data.inc at build time:
 *
 *      edhoc-cli keygen --type x509 --curve P-256 --ca --subject 'EDHOC Demo CA' --not-before 2024-01-01 --not-after 2099-12-31 --out-cred ca.pem --out-key ca.key
 *      edhoc-cli keygen --type x509 --curve Ed25519 --subject 'EDHOC Demo Initiator Ed25519' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred sig_I_Ed25519.pem --out-key sig_I_Ed25519.key
 *      edhoc-cli keygen --type x509 --curve P-256 --subject 'EDHOC Demo Initiator P-256' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred sig_I_P-256.pem --out-key sig_I_P-256.key
 *      edhoc-cli keygen --type x509 --curve P-384 --subject 'EDHOC Demo Initiator P-384' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred sig_I_P-384.pem --out-key sig_I_P-384.key
 *      edhoc-cli keygen --type x509 --curve Ed448 --subject 'EDHOC Demo Initiator Ed448' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred sig_I_Ed448.pem --out-key sig_I_Ed448.key
 *      edhoc-cli keygen --type ccs --curve X25519 --kid 0c --subject demo-initiator-x25519 --out-cred dh_I_X25519.cbor --out-key dh_I_X25519.key
 *      edhoc-cli keygen --type ccs --curve P-256 --kid 09 --subject demo-initiator-p-256 --out-cred dh_I_P-256.cbor --out-key dh_I_P-256.key
 *      edhoc-cli keygen --type ccs --curve P-384 --kid 0a --subject demo-initiator-p-384 --out-cred dh_I_P-384.cbor --out-key dh_I_P-384.key
 *      edhoc-cli keygen --type ccs --curve X448 --kid 0d --subject demo-initiator-x448 --out-cred dh_I_X448.cbor --out-key dh_I_X448.key
 *      edhoc-cli keygen --type x509 --curve Ed25519 --subject 'EDHOC Demo Responder Ed25519' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred sig_R_Ed25519.pem --out-key sig_R_Ed25519.key
 *      edhoc-cli keygen --type x509 --curve P-256 --subject 'EDHOC Demo Responder P-256' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred sig_R_P-256.pem --out-key sig_R_P-256.key
 *      edhoc-cli keygen --type x509 --curve P-384 --subject 'EDHOC Demo Responder P-384' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred sig_R_P-384.pem --out-key sig_R_P-384.key
 *      edhoc-cli keygen --type x509 --curve Ed448 --subject 'EDHOC Demo Responder Ed448' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred sig_R_Ed448.pem --out-key sig_R_Ed448.key
 *      edhoc-cli keygen --type ccs --curve X25519 --kid 2c --subject demo-responder-x25519 --out-cred dh_R_X25519.cbor --out-key dh_R_X25519.key
 *      edhoc-cli keygen --type ccs --curve P-256 --kid 29 --subject demo-responder-p-256 --out-cred dh_R_P-256.cbor --out-key dh_R_P-256.key
 *      edhoc-cli keygen --type ccs --curve P-384 --kid 2a --subject demo-responder-p-384 --out-cred dh_R_P-384.cbor --out-key dh_R_P-384.key
 *      edhoc-cli keygen --type ccs --curve X448 --kid 2d --subject demo-responder-x448 --out-cred dh_R_X448.cbor --out-key dh_R_X448.key
 *      edhoc-cli keygen --type x509 --curve P-256 --ca --subject 'EDHOC Demo Intermediate CA' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred int.pem --out-key int.key
 *      edhoc-cli keygen --type x509 --curve P-256 --subject 'EDHOC Demo Chain Initiator' --ca-cert int.pem --ca-key int.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred chain_I.pem --out-key chain_I.key
 *      edhoc-cli keygen --type x509 --curve P-256 --subject 'EDHOC Demo Chain Responder' --ca-cert int.pem --ca-key int.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred chain_R.pem --out-key chain_R.key
 *      edhoc-cli keygen --type x509 --curve P-256 --no-extensions --subject 'EDHOC In' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 (repeated until the DER is 293 bytes)
 *      edhoc-cli keygen --type x509 --curve P-256 --no-extensions --subject 'EDHOC Re' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 (repeated until the DER is 293 bytes)
 *      edhoc-cli keygen --type x509 --curve P-256 --subject 'EDHOC Demo Expired' --ca-cert ca.pem --ca-key ca.key --not-before 2023-01-01 --not-after 2024-06-30 --out-cred expired.pem --out-key expired.key
 *
 *    and a second batch with the same CA (CCS for signature keys, X.509 for
 *    static DH keys):
 *
 *      edhoc-cli keygen --type ccs --curve Ed25519 --kid 05 --subject demo-initiator-sign-ed25519 --out-cred ccssig_I_Ed25519.cbor --out-key ccssig_I_Ed25519.key
 *      edhoc-cli keygen --type ccs --curve P-256 --kid 03 --subject demo-initiator-sign-p-256 --out-cred ccssig_I_P-256.cbor --out-key ccssig_I_P-256.key
 *      edhoc-cli keygen --type ccs --curve P-384 --kid 04 --subject demo-initiator-sign-p-384 --out-cred ccssig_I_P-384.cbor --out-key ccssig_I_P-384.key
 *      edhoc-cli keygen --type ccs --curve Ed448 --kid 08 --subject demo-initiator-sign-ed448 --out-cred ccssig_I_Ed448.cbor --out-key ccssig_I_Ed448.key
 *      edhoc-cli keygen --type x509 --curve X25519 --subject 'EDHOC Demo Initiator DH X25519' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred x509dh_I_X25519.pem --out-key x509dh_I_X25519.key
 *      edhoc-cli keygen --type x509 --curve P-256 --subject 'EDHOC Demo Initiator DH P-256' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred x509dh_I_P-256.pem --out-key x509dh_I_P-256.key
 *      edhoc-cli keygen --type x509 --curve P-384 --subject 'EDHOC Demo Initiator DH P-384' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred x509dh_I_P-384.pem --out-key x509dh_I_P-384.key
 *      edhoc-cli keygen --type x509 --curve X448 --subject 'EDHOC Demo Initiator DH X448' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred x509dh_I_X448.pem --out-key x509dh_I_X448.key
 *      edhoc-cli keygen --type ccs --curve Ed25519 --kid 25 --subject demo-responder-sign-ed25519 --out-cred ccssig_R_Ed25519.cbor --out-key ccssig_R_Ed25519.key
 *      edhoc-cli keygen --type ccs --curve P-256 --kid 23 --subject demo-responder-sign-p-256 --out-cred ccssig_R_P-256.cbor --out-key ccssig_R_P-256.key
 *      edhoc-cli keygen --type ccs --curve P-384 --kid 24 --subject demo-responder-sign-p-384 --out-cred ccssig_R_P-384.cbor --out-key ccssig_R_P-384.key
 *      edhoc-cli keygen --type ccs --curve Ed448 --kid 28 --subject demo-responder-sign-ed448 --out-cred ccssig_R_Ed448.cbor --out-key ccssig_R_Ed448.key
 *      edhoc-cli keygen --type x509 --curve X25519 --subject 'EDHOC Demo Responder DH X25519' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred x509dh_R_X25519.pem --out-key x509dh_R_X25519.key
 *      edhoc-cli keygen --type x509 --curve P-256 --subject 'EDHOC Demo Responder DH P-256' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred x509dh_R_P-256.pem --out-key x509dh_R_P-256.key
 *      edhoc-cli keygen --type x509 --curve P-384 --subject 'EDHOC Demo Responder DH P-384' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred x509dh_R_P-384.pem --out-key x509dh_R_P-384.key
 *      edhoc-cli keygen --type x509 --curve X448 --subject 'EDHOC Demo Responder DH X448' --ca-cert ca.pem --ca-key ca.key --not-before 2024-01-01 --not-after 2099-12-31 --out-cred x509dh_R_X448.pem --out-key x509dh_R_X448.key
 *
 * The demo CA's private key is not kept: nothing in the library signs with
 * it. These keys are public knowledge; never use them outside tests and
 * demonstrations.
 */
#include "demo_creds.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* demo_NAME_cred[] and demo_NAME_key[], one pair per file of data/demo/. */
#include "demo_data.inc"

#define ARR(a) a, sizeof a

struct demo_entry {
    const uint8_t *cred;
    size_t cred_len;
    const uint8_t *key;
    size_t key_len;
    int curve;
    uint8_t kid; /* attached to every demo credential (see cred.h) */
    bool has_kid;
};

static int demo_load(const struct demo_entry *e, struct edhoc_cred *cred, struct edhoc_key *key)
{
    int rc = edhoc_cred_parse(cred, e->cred, e->cred_len);
    if (rc != 0)
        return rc;
    if (e->has_kid && cred->kid_len == 0)
        edhoc_cred_set_kid(cred, &e->kid, 1);
    if (key) {
        memset(key, 0, sizeof *key);
        key->curve = e->curve;
        key->priv_len = e->key_len;
        memcpy(key->priv, e->key, e->key_len);
    }
    return 0;
}

#define ENTRY(type, prefix, dh, role, crv, name, kidv)                                             \
    {                                                                                              \
#role[0], crv, dh, type,                                                                   \
        {                                                                                          \
            ARR(demo_##prefix##_##role##_##name##_cred),                                           \
                ARR(demo_##prefix##_##role##_##name##_key), crv, kidv, true                        \
        }                                                                                          \
    }
#define SIG(role, crv, name, kidv)     ENTRY(EDHOC_CRED_X509, sig, false, role, crv, name, kidv)
#define DH(role, crv, name, kidv)      ENTRY(EDHOC_CRED_CCS, dh, true, role, crv, name, kidv)
#define CCS_SIG(role, crv, name, kidv) ENTRY(EDHOC_CRED_CCS, ccssig, false, role, crv, name, kidv)
#define X509_DH(role, crv, name, kidv) ENTRY(EDHOC_CRED_X509, x509dh, true, role, crv, name, kidv)

/* The first entry of a (role, curve, use) is the default type. */
static const struct {
    char role;
    int curve;
    bool for_dh;
    enum edhoc_cred_type type;
    struct demo_entry e;
} demo_table[] = {
    SIG(I, EDHOC_COSE_CRV_ED25519, Ed25519, 0x06),
    SIG(I, EDHOC_COSE_CRV_P256, P256, 0x01),
    SIG(I, EDHOC_COSE_CRV_P384, P384, 0x02),
    SIG(I, EDHOC_COSE_CRV_ED448, Ed448, 0x07),
    SIG(R, EDHOC_COSE_CRV_ED25519, Ed25519, 0x26),
    SIG(R, EDHOC_COSE_CRV_P256, P256, 0x21),
    SIG(R, EDHOC_COSE_CRV_P384, P384, 0x22),
    SIG(R, EDHOC_COSE_CRV_ED448, Ed448, 0x27),
    DH(I, EDHOC_COSE_CRV_X25519, X25519, 0x0c),
    DH(I, EDHOC_COSE_CRV_P256, P256, 0x09),
    DH(I, EDHOC_COSE_CRV_P384, P384, 0x0a),
    DH(I, EDHOC_COSE_CRV_X448, X448, 0x0d),
    DH(R, EDHOC_COSE_CRV_X25519, X25519, 0x2c),
    DH(R, EDHOC_COSE_CRV_P256, P256, 0x29),
    DH(R, EDHOC_COSE_CRV_P384, P384, 0x2a),
    DH(R, EDHOC_COSE_CRV_X448, X448, 0x2d),
    CCS_SIG(I, EDHOC_COSE_CRV_P256, P256, 0x03),
    CCS_SIG(I, EDHOC_COSE_CRV_P384, P384, 0x04),
    CCS_SIG(I, EDHOC_COSE_CRV_ED25519, Ed25519, 0x05),
    CCS_SIG(I, EDHOC_COSE_CRV_ED448, Ed448, 0x08),
    CCS_SIG(R, EDHOC_COSE_CRV_P256, P256, 0x23),
    CCS_SIG(R, EDHOC_COSE_CRV_P384, P384, 0x24),
    CCS_SIG(R, EDHOC_COSE_CRV_ED25519, Ed25519, 0x25),
    CCS_SIG(R, EDHOC_COSE_CRV_ED448, Ed448, 0x28),
    X509_DH(I, EDHOC_COSE_CRV_P256, P256, 0x0e),
    X509_DH(I, EDHOC_COSE_CRV_P384, P384, 0x0f),
    X509_DH(I, EDHOC_COSE_CRV_X25519, X25519, 0x13),
    X509_DH(I, EDHOC_COSE_CRV_X448, X448, 0x14),
    X509_DH(R, EDHOC_COSE_CRV_P256, P256, 0x2e),
    X509_DH(R, EDHOC_COSE_CRV_P384, P384, 0x2f),
    X509_DH(R, EDHOC_COSE_CRV_X25519, X25519, 0x33),
    X509_DH(R, EDHOC_COSE_CRV_X448, X448, 0x34),
};

static const struct demo_entry trace_entries[2][2] = {
    {{ARR(demo_trace1_I_cred), ARR(demo_trace1_I_key), EDHOC_COSE_CRV_ED25519, 0, false},
     {ARR(demo_trace1_R_cred), ARR(demo_trace1_R_key), EDHOC_COSE_CRV_ED25519, 0, false}},
    {{ARR(demo_trace2_I_cred), ARR(demo_trace2_I_key), EDHOC_COSE_CRV_P256, 0, false},
     {ARR(demo_trace2_R_cred), ARR(demo_trace2_R_key), EDHOC_COSE_CRV_P256, 0, false}},
};

static const struct demo_entry chain_entries[2] = {
    {ARR(demo_chain_I_cred), ARR(demo_chain_I_key), EDHOC_COSE_CRV_P256, 0x10, true},
    {ARR(demo_chain_R_cred), ARR(demo_chain_R_key), EDHOC_COSE_CRV_P256, 0x30, true},
};

static const struct demo_entry c293_entries[2] = {
    {ARR(demo_c293_I_cred), ARR(demo_c293_I_key), EDHOC_COSE_CRV_P256, 0x11, true},
    {ARR(demo_c293_R_cred), ARR(demo_c293_R_key), EDHOC_COSE_CRV_P256, 0x31, true},
};

static const struct demo_entry expired_entry = {ARR(demo_expired_cred), ARR(demo_expired_key),
                                                EDHOC_COSE_CRV_P256, 0x17, true};

static int role_index(char role)
{
    return role == 'I' ? 0 : role == 'R' ? 1 : -1;
}

int edhoc_demo_cred_typed(char role, int curve, bool for_dh, enum edhoc_cred_type type,
                          struct edhoc_cred *cred, struct edhoc_key *key)
{
    for (size_t i = 0; i < sizeof demo_table / sizeof demo_table[0]; i++) {
        if (demo_table[i].role == role && demo_table[i].curve == curve &&
            demo_table[i].for_dh == for_dh && (type == 0 || demo_table[i].type == type))
            return demo_load(&demo_table[i].e, cred, key);
    }
    return EDHOC_CRED_ERR_UNKNOWN;
}

int edhoc_demo_cred(char role, int curve, bool for_dh, struct edhoc_cred *cred,
                    struct edhoc_key *key)
{
    return edhoc_demo_cred_typed(role, curve, for_dh, 0, cred, key);
}

int edhoc_demo_trace_cred(int trace, char role, struct edhoc_cred *cred, struct edhoc_key *key)
{
    int r = role_index(role);
    if ((trace != 1 && trace != 2) || r < 0)
        return EDHOC_CRED_ERR_UNKNOWN;
    return demo_load(&trace_entries[trace - 1][r], cred, key);
}

int edhoc_demo_chain_cred(char role, struct edhoc_cred *cred, struct edhoc_key *key)
{
    int r = role_index(role);
    return r < 0 ? EDHOC_CRED_ERR_UNKNOWN : demo_load(&chain_entries[r], cred, key);
}

int edhoc_demo_cred_293(char role, struct edhoc_cred *cred, struct edhoc_key *key)
{
    int r = role_index(role);
    return r < 0 ? EDHOC_CRED_ERR_UNKNOWN : demo_load(&c293_entries[r], cred, key);
}

int edhoc_demo_expired_cred(struct edhoc_cred *cred, struct edhoc_key *key)
{
    return demo_load(&expired_entry, cred, key);
}

int edhoc_demo_ca(struct edhoc_cred *cred)
{
    return edhoc_cred_from_x509(cred, demo_ca_cred, sizeof demo_ca_cred);
}

/* The trust store's credentials, parsed once per process: a responder
 * sets up a configuration per (method, suite) it serves, each with this
 * store, and parsing its X.509 chains every time cost a third of a second
 * at the first message_1 (about 45 credentials, 9 times). Read-only once
 * built. */
static struct demo_trust_cache {
    pthread_once_t once;
    int rc;
    size_t n; /* n[0] is the CA (an anchor), the rest credentials */
    struct edhoc_cred *creds;
} demo_trust_cache = {PTHREAD_ONCE_INIT, 0, 0, NULL};

static void demo_trust_build(void)
{
    struct demo_trust_cache *c = &demo_trust_cache;
    const struct demo_entry *more[] = {
        &trace_entries[0][0], &trace_entries[0][1], &trace_entries[1][0], &trace_entries[1][1],
        &chain_entries[0],    &chain_entries[1],    &c293_entries[0],     &c293_entries[1]};
    size_t n_table = sizeof demo_table / sizeof demo_table[0];
    size_t n_more = sizeof more / sizeof more[0];
    c->creds = calloc(1 + n_table + n_more, sizeof *c->creds);
    if (!c->creds) {
        c->rc = EDHOC_CRED_ERR_TOO_LARGE;
        return;
    }
    c->rc = edhoc_demo_ca(&c->creds[0]);
    c->n = 1;
    for (size_t i = 0; c->rc == 0 && i < n_table; i++)
        c->rc = demo_load(&demo_table[i].e, &c->creds[c->n++], NULL);
    for (size_t i = 0; c->rc == 0 && i < n_more; i++)
        c->rc = demo_load(more[i], &c->creds[c->n++], NULL);
}

int edhoc_demo_trust(struct edhoc_cred_store *store)
{
    struct demo_trust_cache *c = &demo_trust_cache;
    pthread_once(&c->once, demo_trust_build);
    if (c->rc)
        return c->rc;
    /* The store copies what it is given. */
    int rc = edhoc_cred_store_add_anchor(store, &c->creds[0]);
    for (size_t i = 1; rc == 0 && i < c->n; i++)
        rc = edhoc_cred_store_add_cred(store, &c->creds[i]);
    return rc;
}

size_t edhoc_demo_kids(uint8_t *out, size_t cap)
{
    /* Read from the credentials themselves, so the list cannot drift from
     * the tables above (trace 2's kids are in its CCS, not in a table). */
    struct edhoc_cred *scratch = malloc(sizeof *scratch);
    if (!scratch)
        return 0;
    const struct demo_entry *more[] = {
        &trace_entries[0][0], &trace_entries[0][1], &trace_entries[1][0],
        &trace_entries[1][1], &chain_entries[0],    &chain_entries[1],
        &c293_entries[0],     &c293_entries[1],     &expired_entry};
    size_t n_table = sizeof demo_table / sizeof demo_table[0];
    size_t n = 0;
    for (size_t i = 0; i < n_table + sizeof more / sizeof more[0]; i++) {
        const struct demo_entry *e = i < n_table ? &demo_table[i].e : more[i - n_table];
        if (demo_load(e, scratch, NULL) != 0 || scratch->kid_len != 1)
            continue;
        if (n < cap)
            out[n] = scratch->kid[0];
        n++;
    }
    free(scratch);
    return n;
}
