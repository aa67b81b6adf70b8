/*
 * CWT credentials (RFC 8392, RFC 9528 Section 3.5.3.1 'kcwt'): a claims
 * set with a COSE_Key in 'cnf' (RFC 8747), signed by an issuer as an
 * untagged COSE_Sign1 (RFC 9052 Section 4.2). Parsing is strict: a CWT
 * comes from the peer and is read before its signature is checked.
 */
#include <string.h>

#include "edhoc/cbor.h"
#include "edhoc/cred.h"
#include "edhoc/crypto.h"
#include "cred_internal.h"

#define COSE_HDR_ALG   1
#define COSE_HDR_KID   4
#define COSE_ALG_EDDSA (-8)
#define COSE_ALG_ES256 (-7)
#define COSE_ALG_ES384 (-35)

#define CWT_CLAIM_ISS 1
#define CWT_CLAIM_SUB 2
#define CWT_CLAIM_EXP 4
#define CWT_CLAIM_NBF 5
#define CWT_CLAIM_IAT 6
#define CWT_CLAIM_CNF 8

/* Headers and claims we accept are few; more pairs are not a CWT of ours. */
#define CWT_MAX_PAIRS 32

/* The parts of a COSE_Sign1, pointing into the CWT. */
struct cwt_parts {
    const uint8_t *protected_hdr; /* the bstr's content (the encoded map) */
    size_t protected_len;
    int alg;
    const uint8_t *issuer_kid;
    size_t issuer_kid_len;
    const uint8_t *payload;
    size_t payload_len;
    const uint8_t *sig;
    size_t sig_len;
};

int cred_cwt_alg_curve(int alg, int curve)
{
    switch (alg) {
    case COSE_ALG_EDDSA:
        return curve == EDHOC_COSE_CRV_ED25519 || curve == EDHOC_COSE_CRV_ED448
                   ? 0
                   : EDHOC_CRED_ERR_KEY_TYPE;
    case COSE_ALG_ES256: return curve == EDHOC_COSE_CRV_P256 ? 0 : EDHOC_CRED_ERR_KEY_TYPE;
    case COSE_ALG_ES384: return curve == EDHOC_COSE_CRV_P384 ? 0 : EDHOC_CRED_ERR_KEY_TYPE;
    default: return EDHOC_CRED_ERR_KEY_TYPE;
    }
}

static int alg_of_curve(int curve)
{
    switch (curve) {
    case EDHOC_COSE_CRV_ED25519:
    case EDHOC_COSE_CRV_ED448: return COSE_ALG_EDDSA;
    case EDHOC_COSE_CRV_P256: return COSE_ALG_ES256;
    case EDHOC_COSE_CRV_P384: return COSE_ALG_ES384;
    default: return 0;
    }
}

/* A header map: only alg (protected only) and kid; a label in both maps
 * is refused (RFC 9052 Section 3: "MUST NOT occur in both"). */
static int parse_header(const uint8_t *map, size_t len, bool is_protected, struct cwt_parts *p)
{
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, map, len);
    size_t pairs;
    if (edhoc_cbor_get_map(&r, &pairs) != 0 || pairs > 2)
        return EDHOC_CRED_ERR_FORMAT;
    int64_t last = 0;
    for (size_t i = 0; i < pairs; i++) {
        int64_t label;
        /* Ascending labels 1 < 4: deterministic order, no duplicate. */
        if (edhoc_cbor_get_int(&r, &label) != 0 || (i > 0 && label <= last))
            return EDHOC_CRED_ERR_FORMAT;
        last = label;
        if (label == COSE_HDR_ALG && is_protected) {
            int64_t alg;
            if (edhoc_cbor_get_int(&r, &alg) != 0 || alg < -65536 || alg > 65535)
                return EDHOC_CRED_ERR_FORMAT;
            p->alg = (int)alg;
        } else if (label == COSE_HDR_KID) {
            if (p->issuer_kid)
                return EDHOC_CRED_ERR_FORMAT;
            if (edhoc_cbor_get_bstr(&r, &p->issuer_kid, &p->issuer_kid_len) != 0 ||
                p->issuer_kid_len == 0 || p->issuer_kid_len > EDHOC_CRED_MAX_KID)
                return EDHOC_CRED_ERR_FORMAT;
        } else {
            /* crit, content type, counter signatures, ...: not for a CWT
             * credential, and a 'crit' we ignored would be a mistake. */
            return EDHOC_CRED_ERR_FORMAT;
        }
    }
    return edhoc_cbor_at_end(&r) ? 0 : EDHOC_CRED_ERR_FORMAT;
}

static size_t sig_len_of(int alg, size_t got)
{
    switch (alg) {
    case COSE_ALG_EDDSA: return got == 64 || got == 114 ? got : 0; /* Ed25519 / Ed448 */
    case COSE_ALG_ES256: return 64;
    case COSE_ALG_ES384: return 96;
    default: return 0;
    }
}

static int cwt_split(const uint8_t *cwt, size_t len, struct cwt_parts *p)
{
    memset(p, 0, sizeof *p);
    if (!cwt || len == 0 || edhoc_cbor_check_item(cwt, len) != 0)
        return EDHOC_CRED_ERR_FORMAT;
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, cwt, len);
    size_t n;
    /* Untagged: RFC 9528 Section 3.5.2 makes CRED_x the untagged CWT, and
     * a tag (61 or 18) would be a head the array check refuses here. */
    if (edhoc_cbor_get_array(&r, &n) != 0 || n != 4 ||
        edhoc_cbor_get_bstr(&r, &p->protected_hdr, &p->protected_len) != 0 ||
        p->protected_len == 0 || edhoc_cbor_check_item(p->protected_hdr, p->protected_len) != 0 ||
        parse_header(p->protected_hdr, p->protected_len, true, p) != 0)
        return EDHOC_CRED_ERR_FORMAT;
    size_t start = r.pos;
    if (edhoc_cbor_skip(&r) != 0 || parse_header(cwt + start, r.pos - start, false, p) != 0)
        return EDHOC_CRED_ERR_FORMAT;
    /* A detached payload (nil) would leave the claims elsewhere. */
    if (edhoc_cbor_get_bstr(&r, &p->payload, &p->payload_len) != 0 || p->payload_len == 0 ||
        edhoc_cbor_get_bstr(&r, &p->sig, &p->sig_len) != 0 || !edhoc_cbor_at_end(&r))
        return EDHOC_CRED_ERR_FORMAT;
    if (p->alg == 0 || sig_len_of(p->alg, p->sig_len) != p->sig_len)
        return EDHOC_CRED_ERR_FORMAT;
    return 0;
}

/* The registered claims we read, with the types RFC 8392 Section 3.1
 * gives them; NumericDate only as an integer. */
static int read_times(const uint8_t *claims, size_t len, struct edhoc_cred *cred)
{
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, claims, len);
    size_t pairs;
    if (edhoc_cbor_get_map(&r, &pairs) != 0 || pairs > CWT_MAX_PAIRS)
        return EDHOC_CRED_ERR_FORMAT;
    cred->has_validity = true;
    cred->not_before = INT64_MIN;
    cred->not_after = INT64_MAX;
    for (size_t i = 0; i < pairs; i++) {
        struct edhoc_cbor_item it;
        if (edhoc_cbor_get(&r, &it) != 0)
            return EDHOC_CRED_ERR_FORMAT;
        if (it.type != EDHOC_CBOR_UINT) {
            if (edhoc_cbor_skip(&r) != 0) /* negative / text labels: not ours */
                return EDHOC_CRED_ERR_FORMAT;
            continue;
        }
        const uint8_t *t;
        size_t tl;
        int64_t v;
        int rc = 0;
        switch (it.u) {
        case CWT_CLAIM_ISS:
        case CWT_CLAIM_SUB: rc = edhoc_cbor_get_tstr(&r, &t, &tl); break;
        case CWT_CLAIM_EXP:
            rc = edhoc_cbor_get_int(&r, &v);
            cred->not_after = v;
            break;
        case CWT_CLAIM_NBF:
            rc = edhoc_cbor_get_int(&r, &v);
            cred->not_before = v;
            break;
        case CWT_CLAIM_IAT: rc = edhoc_cbor_get_int(&r, &v); break;
        default: rc = edhoc_cbor_skip(&r); break;
        }
        if (rc != 0)
            return EDHOC_CRED_ERR_FORMAT;
    }
    return edhoc_cbor_at_end(&r) ? 0 : EDHOC_CRED_ERR_FORMAT;
}

int edhoc_cred_from_cwt(struct edhoc_cred *cred, const uint8_t *cwt, size_t len)
{
    memset(cred, 0, sizeof *cred);
    if (len > EDHOC_CRED_MAX_DATA)
        return EDHOC_CRED_ERR_TOO_LARGE;
    struct cwt_parts p;
    int rc = cwt_split(cwt, len, &p);
    if (rc != 0)
        return rc;
    /* The claims are a CCS: the same parser finds the COSE_Key (and
     * refuses duplicate claims and a private key). */
    rc = cred_ccs_parse(cred, p.payload, p.payload_len, true);
    if (rc != 0)
        return EDHOC_CRED_ERR_FORMAT;
    int curve = cred->curve;
    uint8_t pub[EDHOC_CRYPTO_MAX_PUB], kid[EDHOC_CRED_MAX_KID];
    size_t pub_len = cred->pub_len, kid_len = cred->kid_len;
    memcpy(pub, cred->pub, pub_len);
    memcpy(kid, cred->kid, kid_len);
    memset(cred, 0, sizeof *cred);
    rc = read_times(p.payload, p.payload_len, cred);
    if (rc != 0 || cred->not_before > cred->not_after) {
        memset(cred, 0, sizeof *cred);
        return EDHOC_CRED_ERR_FORMAT;
    }
    memcpy(cred->data, cwt, len);
    cred->data_len = len;
    cred->cred = cred->data;
    cred->cred_len = len;
    cred->type = EDHOC_CRED_CWT;
    cred->curve = curve;
    memcpy(cred->pub, pub, pub_len);
    cred->pub_len = pub_len;
    edhoc_cred_set_kid(cred, kid, kid_len);
    return 0;
}

int edhoc_cwt_issuer(const struct edhoc_cred *cwt, int *alg, const uint8_t **issuer_kid,
                     size_t *issuer_kid_len)
{
    struct cwt_parts p;
    if (cwt->type != EDHOC_CRED_CWT || cwt_split(cwt->cred, cwt->cred_len, &p) != 0)
        return EDHOC_CRED_ERR_FORMAT;
    *alg = p.alg;
    *issuer_kid = p.issuer_kid;
    *issuer_kid_len = p.issuer_kid_len;
    return 0;
}

/* Sig_structure = ["Signature1", body_protected, external_aad, payload]
 * (RFC 9052 Section 4.4), with an empty external_aad. */
static long sig_structure(const struct cwt_parts *p, uint8_t *out, size_t cap)
{
    static const char context[] = "Signature1";
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, out, cap);
    edhoc_cbor_put_array(&w, 4);
    edhoc_cbor_put_tstr(&w, context, sizeof context - 1);
    edhoc_cbor_put_bstr(&w, p->protected_hdr, p->protected_len);
    edhoc_cbor_put_bstr(&w, NULL, 0);
    edhoc_cbor_put_bstr(&w, p->payload, p->payload_len);
    return edhoc_cbor_writer_finish(&w);
}

int edhoc_cwt_verify(const struct edhoc_cred *cwt, int issuer_curve, const uint8_t *issuer_pub,
                     size_t issuer_pub_len)
{
    struct cwt_parts p;
    if (cwt->type != EDHOC_CRED_CWT || cwt_split(cwt->cred, cwt->cred_len, &p) != 0)
        return EDHOC_CRED_ERR_FORMAT;
    if (cred_cwt_alg_curve(p.alg, issuer_curve) != 0 ||
        p.sig_len != edhoc_crypto_sig_len(issuer_curve))
        return EDHOC_CRED_ERR_UNTRUSTED;
    uint8_t tbs[EDHOC_CRED_MAX_DATA + 64];
    long n = sig_structure(&p, tbs, sizeof tbs);
    if (n < 0)
        return EDHOC_CRED_ERR_FORMAT;
    const struct edhoc_crypto_ops *ops = edhoc_crypto_default();
    int rc =
        ops->verify(issuer_curve, issuer_pub, issuer_pub_len, tbs, (size_t)n, p.sig, p.sig_len);
    return rc == 0 ? 0 : EDHOC_CRED_ERR_UNTRUSTED;
}

int edhoc_cwt_create(struct edhoc_cred *cred, const struct edhoc_cwt_params *prm)
{
    memset(cred, 0, sizeof *cred);
    const struct edhoc_key *ik = prm->issuer_key;
    int alg = ik ? alg_of_curve(ik->curve) : 0;
    if (alg == 0)
        return EDHOC_CRED_ERR_KEY_TYPE;
    if (prm->issuer_kid_len > EDHOC_CRED_MAX_KID || prm->not_after < prm->not_before)
        return EDHOC_CRED_ERR_FORMAT;
    size_t iss_len = prm->issuer_name ? strlen(prm->issuer_name) : 0;
    size_t sub_len = prm->subject ? strlen(prm->subject) : 0;
    if (iss_len > 256 || sub_len > 256)
        return EDHOC_CRED_ERR_TOO_LARGE;

    uint8_t prot[8 + EDHOC_CRED_MAX_KID];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, prot, sizeof prot);
    edhoc_cbor_put_map(&w, prm->issuer_kid_len ? 2 : 1);
    edhoc_cbor_put_uint(&w, COSE_HDR_ALG);
    edhoc_cbor_put_int(&w, alg);
    if (prm->issuer_kid_len) {
        edhoc_cbor_put_uint(&w, COSE_HDR_KID);
        edhoc_cbor_put_bstr(&w, prm->issuer_kid, prm->issuer_kid_len);
    }
    long prot_len = edhoc_cbor_writer_finish(&w);

    /* Claims in deterministic order: 1, 2, 4, 5, 6, 8. */
    uint8_t claims[1024];
    edhoc_cbor_writer_init(&w, claims, sizeof claims);
    edhoc_cbor_put_map(&w,
                       3 + (iss_len ? 1 : 0) + (prm->subject ? 1 : 0) + (prm->issued_at ? 1 : 0));
    if (prm->issuer_name) {
        edhoc_cbor_put_uint(&w, CWT_CLAIM_ISS);
        edhoc_cbor_put_tstr(&w, prm->issuer_name, iss_len);
    }
    if (prm->subject) {
        edhoc_cbor_put_uint(&w, CWT_CLAIM_SUB);
        edhoc_cbor_put_tstr(&w, prm->subject, sub_len);
    }
    edhoc_cbor_put_uint(&w, CWT_CLAIM_EXP);
    edhoc_cbor_put_int(&w, prm->not_after);
    edhoc_cbor_put_uint(&w, CWT_CLAIM_NBF);
    edhoc_cbor_put_int(&w, prm->not_before);
    if (prm->issued_at) {
        edhoc_cbor_put_uint(&w, CWT_CLAIM_IAT);
        edhoc_cbor_put_int(&w, prm->issued_at);
    }
    edhoc_cbor_put_uint(&w, CWT_CLAIM_CNF);
    int rc = cred_put_cnf(&w, prm->curve, prm->pub, prm->pub_len, prm->kid, prm->kid_len);
    if (rc != 0)
        return rc;
    long claims_len = edhoc_cbor_writer_finish(&w);
    if (prot_len < 0 || claims_len < 0)
        return EDHOC_CRED_ERR_TOO_LARGE;

    struct cwt_parts p = {
        .protected_hdr = prot,
        .protected_len = (size_t)prot_len,
        .payload = claims,
        .payload_len = (size_t)claims_len,
    };
    uint8_t tbs[1200], sig[EDHOC_CRYPTO_MAX_SIG];
    long tbs_len = sig_structure(&p, tbs, sizeof tbs);
    if (tbs_len < 0)
        return EDHOC_CRED_ERR_TOO_LARGE;
    const struct edhoc_crypto_ops *ops = edhoc_crypto_default();
    if (ops->sign(ik->curve, ik->priv, tbs, (size_t)tbs_len, sig) != 0)
        return EDHOC_CRED_ERR_KEY_TYPE;

    uint8_t out[1400];
    edhoc_cbor_writer_init(&w, out, sizeof out);
    edhoc_cbor_put_array(&w, 4);
    edhoc_cbor_put_bstr(&w, prot, (size_t)prot_len);
    edhoc_cbor_put_map(&w, 0);
    edhoc_cbor_put_bstr(&w, claims, (size_t)claims_len);
    edhoc_cbor_put_bstr(&w, sig, edhoc_crypto_sig_len(ik->curve));
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_CRED_ERR_TOO_LARGE;
    return edhoc_cred_from_cwt(cred, out, (size_t)n);
}
