/*
 * Credentials without a crypto library: CCS parsing and building, the
 * layout of struct edhoc_cred, ID_CRED maps, and the key-type rules of the
 * cipher suites. X.509 and PEM live in the *_openssl.c files.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "edhoc/cbor.h"
#include "edhoc/cred.h"
#include "cred_internal.h"

/* Claims and COSE_Key labels this module reads. */
#define CWT_CLAIM_SUB 2
#define CWT_CLAIM_CNF 8
#define CNF_COSE_KEY  1
#define COSE_KEY_KTY  1
#define COSE_KEY_KID  2
#define COSE_KEY_CRV  (-1)
#define COSE_KEY_X    (-2)
#define COSE_KEY_Y    (-3)
#define COSE_KEY_D    (-4)
#define COSE_KTY_OKP  1
#define COSE_KTY_EC2  2

/* Maps with more pairs than this are not credentials we accept; the bound
 * keeps the duplicate-key check quadratic in a small number. */
#define CCS_MAX_PAIRS 32

void cred_why(char *why, size_t cap, const char *fmt, ...)
{
    if (!why || cap == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

const char *edhoc_cred_strerror(int err)
{
    switch (err) {
    case 0: return "success";
    case EDHOC_CRED_ERR_FORMAT:
        return "credential, certificate or key in an unsupported or malformed format";
    case EDHOC_CRED_ERR_UNKNOWN: return "ID_CRED matches no configured credential";
    case EDHOC_CRED_ERR_UNTRUSTED:
        return "certificate chain or CWT does not verify to a trust anchor or issuer";
    case EDHOC_CRED_ERR_EXPIRED: return "certificate or CWT outside its validity period";
    case EDHOC_CRED_ERR_KEY_TYPE: return "key type does not fit the method or cipher suite";
    case EDHOC_CRED_ERR_FILE: return "cannot read or write a file";
    case EDHOC_CRED_ERR_PERMISSIONS: return "private key file is accessible by group or others";
    case EDHOC_CRED_ERR_TOO_LARGE: return "credential or store capacity exceeded";
    case EDHOC_CRED_ERR_CHAIN_LOOP: return "certificate bag: the issuers form a loop";
    case EDHOC_CRED_ERR_CHAIN_DEPTH:
        return "certificate bag: no trust anchor within 4 certificates";
    case EDHOC_CRED_ERR_AMBIGUOUS:
        return "certificate bag: several end-entity certificates verify (name one with x5t)";
    default: return "unknown error";
    }
}

/* ---- struct edhoc_cred helpers ---- */

static size_t curve_pub_len(int curve)
{
    switch (curve) {
    case EDHOC_COSE_CRV_P256: return 65;
    case EDHOC_COSE_CRV_P384: return 97;
    case EDHOC_COSE_CRV_X25519: return 32;
    case EDHOC_COSE_CRV_X448: return 56;
    case EDHOC_COSE_CRV_ED25519: return 32;
    case EDHOC_COSE_CRV_ED448: return 57;
    default: return 0;
    }
}

static bool curve_is_ec2(int curve)
{
    return curve == EDHOC_COSE_CRV_P256 || curve == EDHOC_COSE_CRV_P384;
}

int edhoc_cred_set_kid(struct edhoc_cred *cred, const uint8_t *kid, size_t kid_len)
{
    if (kid_len > EDHOC_CRED_MAX_KID)
        return EDHOC_CRED_ERR_TOO_LARGE;
    if (kid_len)
        memcpy(cred->kid, kid, kid_len);
    cred->kid_len = kid_len;
    return 0;
}

void edhoc_cred_copy(struct edhoc_cred *dst, const struct edhoc_cred *src)
{
    if (dst == src)
        return;
    memcpy(dst, src, sizeof *dst);
    if (src->cred)
        dst->cred = dst->data + (src->cred - src->data);
    for (size_t i = 0; i < src->n_certs && i < EDHOC_CRED_MAX_CHAIN; i++)
        dst->certs[i] = dst->data + (src->certs[i] - src->data);
}

bool edhoc_cred_equal(const struct edhoc_cred *a, const struct edhoc_cred *b)
{
    return a->type == b->type && a->cred_len == b->cred_len && a->cred_len != 0 &&
           memcmp(a->cred, b->cred, a->cred_len) == 0;
}

int cred_x509_assemble(struct edhoc_cred *cred, const uint8_t *const *certs, const size_t *lens,
                       size_t n)
{
    memset(cred, 0, sizeof *cred);
    if (n == 0)
        return EDHOC_CRED_ERR_FORMAT;
    if (n > EDHOC_CRED_MAX_CHAIN)
        return EDHOC_CRED_ERR_TOO_LARGE;
    size_t head = edhoc_cbor_head_len(lens[0]);
    size_t total = head;
    for (size_t i = 0; i < n; i++) {
        if (lens[i] == 0 || lens[i] > EDHOC_CRED_MAX_DATA)
            return EDHOC_CRED_ERR_FORMAT;
        total += lens[i];
    }
    if (total > EDHOC_CRED_MAX_DATA)
        return EDHOC_CRED_ERR_TOO_LARGE;

    /* CRED_x of a certificate is the leaf DER as a CBOR byte string; it is
     * stored right before the leaf so that cred and certs[0] share bytes. */
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, cred->data, sizeof cred->data);
    edhoc_cbor_put_bstr_head(&w, lens[0]);
    if (edhoc_cbor_writer_finish(&w) != (long)head)
        return EDHOC_CRED_ERR_FORMAT;
    size_t pos = head;
    for (size_t i = 0; i < n; i++) {
        memcpy(cred->data + pos, certs[i], lens[i]);
        cred->certs[i] = cred->data + pos;
        cred->cert_lens[i] = lens[i];
        pos += lens[i];
    }
    cred->n_certs = n;
    cred->data_len = pos;
    cred->cred = cred->data;
    cred->cred_len = head + lens[0];
    cred->type = EDHOC_CRED_X509;
    return 0;
}

void cred_x509_set_leaf_info(struct edhoc_cred *cred, const struct cred_x509_info *info)
{
    cred->curve = info->curve;
    memcpy(cred->pub, info->pub, info->pub_len);
    cred->pub_len = info->pub_len;
    cred->has_validity = info->has_validity;
    cred->not_before = info->has_validity ? info->not_before : 0;
    cred->not_after = info->has_validity ? info->not_after : 0;
}

int edhoc_cred_dh_pub(const struct edhoc_cred *cred, const uint8_t **pub, size_t *len)
{
    switch (cred->curve) {
    case EDHOC_COSE_CRV_P256:
    case EDHOC_COSE_CRV_P384:
        if (cred->pub_len < 1 || cred->pub[0] != 0x04)
            return EDHOC_CRED_ERR_KEY_TYPE;
        *pub = cred->pub + 1;
        *len = (cred->pub_len - 1) / 2;
        return 0;
    case EDHOC_COSE_CRV_X25519:
    case EDHOC_COSE_CRV_X448:
        *pub = cred->pub;
        *len = cred->pub_len;
        return 0;
    default: return EDHOC_CRED_ERR_KEY_TYPE;
    }
}

/* ---- CCS ---- */

/* Read a map key that is an integer or a text string; *is_int tells which.
 * Returns 0 or EDHOC_CRED_ERR_FORMAT. */
static int read_label(struct edhoc_cbor_reader *r, bool *is_int, int64_t *label,
                      const uint8_t **start, size_t *enc_len)
{
    struct edhoc_cbor_item it;
    size_t before = r->pos;
    if (edhoc_cbor_get(r, &it) != 0)
        return EDHOC_CRED_ERR_FORMAT;
    *start = r->buf + before;
    *enc_len = r->pos - before;
    if (it.type == EDHOC_CBOR_UINT || it.type == EDHOC_CBOR_NINT) {
        if (it.u > (uint64_t)INT64_MAX) /* no label we know is that large */
            return EDHOC_CRED_ERR_FORMAT;
        *is_int = true;
        *label = it.i;
        return 0;
    }
    if (it.type == EDHOC_CBOR_TSTR) {
        *is_int = false;
        *label = 0;
        return 0;
    }
    return EDHOC_CRED_ERR_FORMAT;
}

/* True when the encoded key (start, len) already occurs among seen[]. */
static bool seen_before(const uint8_t *const *seen, const size_t *seen_len, size_t n,
                        const uint8_t *start, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (seen_len[i] == len && memcmp(seen[i], start, len) == 0)
            return true;
    return false;
}

static int parse_cose_key(struct edhoc_cbor_reader *r, struct edhoc_cred *cred, bool check_point)
{
    size_t pairs;
    if (edhoc_cbor_get_map(r, &pairs) != 0 || pairs > CCS_MAX_PAIRS)
        return EDHOC_CRED_ERR_FORMAT;
    const uint8_t *seen[CCS_MAX_PAIRS];
    size_t seen_len[CCS_MAX_PAIRS];
    int64_t kty = 0, crv = 0;
    const uint8_t *x = NULL, *y = NULL, *kid = NULL;
    size_t x_len = 0, y_len = 0, kid_len = 0;
    bool have_kid = false;

    for (size_t i = 0; i < pairs; i++) {
        bool is_int;
        int64_t label;
        if (read_label(r, &is_int, &label, &seen[i], &seen_len[i]) != 0 ||
            seen_before(seen, seen_len, i, seen[i], seen_len[i]))
            return EDHOC_CRED_ERR_FORMAT;
        if (!is_int) {
            if (edhoc_cbor_skip(r) != 0)
                return EDHOC_CRED_ERR_FORMAT;
            continue;
        }
        int rc = 0;
        switch (label) {
        case COSE_KEY_KTY: rc = edhoc_cbor_get_int(r, &kty); break;
        case COSE_KEY_KID:
            rc = edhoc_cbor_get_bstr(r, &kid, &kid_len);
            have_kid = true;
            break;
        case COSE_KEY_CRV: rc = edhoc_cbor_get_int(r, &crv); break;
        case COSE_KEY_X: rc = edhoc_cbor_get_bstr(r, &x, &x_len); break;
        case COSE_KEY_Y:
            /* A boolean y (point compression) is not supported. */
            rc = edhoc_cbor_get_bstr(r, &y, &y_len);
            break;
        case COSE_KEY_D:
            /* A credential is public: a private key in it is a mistake we
             * refuse rather than carry around. */
            return EDHOC_CRED_ERR_FORMAT;
        default: rc = edhoc_cbor_skip(r); break;
        }
        if (rc != 0)
            return EDHOC_CRED_ERR_FORMAT;
    }

    if (!x || (have_kid && kid_len > EDHOC_CRED_MAX_KID))
        return EDHOC_CRED_ERR_FORMAT;
    size_t want = curve_pub_len((int)crv);
    if (crv < 1 || crv > 7 || want == 0)
        return EDHOC_CRED_ERR_FORMAT;
    if (kty == COSE_KTY_EC2) {
        if (!curve_is_ec2((int)crv) || !y || x_len != (want - 1) / 2 || y_len != x_len)
            return EDHOC_CRED_ERR_FORMAT;
        cred->pub[0] = 0x04;
        memcpy(cred->pub + 1, x, x_len);
        memcpy(cred->pub + 1 + x_len, y, y_len);
        cred->pub_len = want;
    } else if (kty == COSE_KTY_OKP) {
        if (curve_is_ec2((int)crv) || y || x_len != want)
            return EDHOC_CRED_ERR_FORMAT;
        memcpy(cred->pub, x, x_len);
        cred->pub_len = x_len;
    } else {
        return EDHOC_CRED_ERR_FORMAT;
    }
    cred->curve = (int)crv;
    if (check_point && !cred_pub_is_valid(cred->curve, cred->pub, cred->pub_len))
        return EDHOC_CRED_ERR_FORMAT;
    if (have_kid)
        edhoc_cred_set_kid(cred, kid, kid_len);
    return 0;
}

static int parse_cnf(struct edhoc_cbor_reader *r, struct edhoc_cred *cred, bool check_point)
{
    size_t pairs;
    if (edhoc_cbor_get_map(r, &pairs) != 0 || pairs != 1)
        return EDHOC_CRED_ERR_FORMAT;
    int64_t method;
    if (edhoc_cbor_get_int(r, &method) != 0 || method != CNF_COSE_KEY)
        return EDHOC_CRED_ERR_FORMAT; /* Encrypted_COSE_Key, kid-only cnf: unsupported */
    return parse_cose_key(r, cred, check_point);
}

int edhoc_cred_from_ccs(struct edhoc_cred *cred, const uint8_t *ccs, size_t len)
{
    return cred_ccs_parse(cred, ccs, len, true);
}

int cred_ccs_parse(struct edhoc_cred *cred, const uint8_t *ccs, size_t len, bool check_point)
{
    memset(cred, 0, sizeof *cred);
    if (len > EDHOC_CRED_MAX_DATA)
        return EDHOC_CRED_ERR_TOO_LARGE;
    if (!ccs || len == 0 || edhoc_cbor_check_item(ccs, len) != 0)
        return EDHOC_CRED_ERR_FORMAT;
    memcpy(cred->data, ccs, len);
    cred->data_len = len;
    cred->cred = cred->data;
    cred->cred_len = len;
    cred->type = EDHOC_CRED_CCS;

    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, cred->data, len);
    size_t pairs;
    if (edhoc_cbor_get_map(&r, &pairs) != 0 || pairs > CCS_MAX_PAIRS)
        goto bad;
    const uint8_t *seen[CCS_MAX_PAIRS];
    size_t seen_len[CCS_MAX_PAIRS];
    bool have_cnf = false;
    for (size_t i = 0; i < pairs; i++) {
        bool is_int;
        int64_t label;
        if (read_label(&r, &is_int, &label, &seen[i], &seen_len[i]) != 0 ||
            seen_before(seen, seen_len, i, seen[i], seen_len[i]))
            goto bad;
        if (is_int && label == CWT_CLAIM_CNF) {
            if (parse_cnf(&r, cred, check_point) != 0)
                goto bad;
            have_cnf = true;
        } else if (edhoc_cbor_skip(&r) != 0) {
            goto bad;
        }
    }
    if (!have_cnf || !edhoc_cbor_at_end(&r))
        goto bad;
    return 0;
bad:
    memset(cred, 0, sizeof *cred);
    return EDHOC_CRED_ERR_FORMAT;
}

int cred_put_cnf(struct edhoc_cbor_writer *w, int curve, const uint8_t *pub, size_t pub_len,
                 const uint8_t *kid, size_t kid_len)
{
    size_t want = curve_pub_len(curve);
    if (want == 0 || pub_len != want || (curve_is_ec2(curve) && pub[0] != 0x04) ||
        kid_len > EDHOC_CRED_MAX_KID)
        return EDHOC_CRED_ERR_FORMAT;
    edhoc_cbor_put_map(w, 1);
    edhoc_cbor_put_uint(w, CNF_COSE_KEY);
    /* Labels in deterministic order: 1, 2, -1, -2, -3 (encoded 01 02 20 21 22). */
    bool ec2 = curve_is_ec2(curve);
    edhoc_cbor_put_map(w, (ec2 ? 4 : 3) + (kid_len ? 1 : 0));
    edhoc_cbor_put_uint(w, COSE_KEY_KTY);
    edhoc_cbor_put_uint(w, ec2 ? COSE_KTY_EC2 : COSE_KTY_OKP);
    if (kid_len) {
        edhoc_cbor_put_uint(w, COSE_KEY_KID);
        edhoc_cbor_put_bstr(w, kid, kid_len);
    }
    edhoc_cbor_put_int(w, COSE_KEY_CRV);
    edhoc_cbor_put_uint(w, (uint64_t)curve);
    edhoc_cbor_put_int(w, COSE_KEY_X);
    if (ec2) {
        size_t c = (pub_len - 1) / 2;
        edhoc_cbor_put_bstr(w, pub + 1, c);
        edhoc_cbor_put_int(w, COSE_KEY_Y);
        edhoc_cbor_put_bstr(w, pub + 1 + c, c);
    } else {
        edhoc_cbor_put_bstr(w, pub, pub_len);
    }
    return 0;
}

int edhoc_cred_build_ccs(struct edhoc_cred *cred, int curve, const uint8_t *pub, size_t pub_len,
                         const uint8_t *kid, size_t kid_len, const char *subject)
{
    uint8_t buf[512];
    size_t want = curve_pub_len(curve);
    if (want == 0 || pub_len != want || (curve_is_ec2(curve) && pub[0] != 0x04))
        return EDHOC_CRED_ERR_FORMAT;
    if (kid_len > EDHOC_CRED_MAX_KID)
        return EDHOC_CRED_ERR_TOO_LARGE;
    size_t sub_len = subject ? strlen(subject) : 0;
    if (sub_len > 256)
        return EDHOC_CRED_ERR_TOO_LARGE;

    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, buf, sizeof buf);
    edhoc_cbor_put_map(&w, subject ? 2 : 1);
    if (subject) {
        edhoc_cbor_put_uint(&w, CWT_CLAIM_SUB);
        edhoc_cbor_put_tstr(&w, subject, sub_len);
    }
    edhoc_cbor_put_uint(&w, CWT_CLAIM_CNF);
    cred_put_cnf(&w, curve, pub, pub_len, kid, kid_len);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_CRED_ERR_TOO_LARGE;
    return edhoc_cred_from_ccs(cred, buf, (size_t)n);
}

/* ---- Method and suite rules (RFC 9528 Sections 3.2 and 3.6) ---- */

struct suite_curves {
    int suite;
    int sign_curve; /* the curve of the suite's signature algorithm */
    int ecdh_curve;
};

static const struct suite_curves suite_table[] = {
    {0, EDHOC_COSE_CRV_ED25519, EDHOC_COSE_CRV_X25519},
    {1, EDHOC_COSE_CRV_ED25519, EDHOC_COSE_CRV_X25519},
    {2, EDHOC_COSE_CRV_P256, EDHOC_COSE_CRV_P256},
    {3, EDHOC_COSE_CRV_P256, EDHOC_COSE_CRV_P256},
    {4, EDHOC_COSE_CRV_ED25519, EDHOC_COSE_CRV_X25519},
    {5, EDHOC_COSE_CRV_P256, EDHOC_COSE_CRV_P256},
    {6, EDHOC_COSE_CRV_P256, EDHOC_COSE_CRV_X25519},
    {24, EDHOC_COSE_CRV_P384, EDHOC_COSE_CRV_P384},
    {25, EDHOC_COSE_CRV_ED448, EDHOC_COSE_CRV_X448},
};

int edhoc_cred_auth_curve(int method, bool initiator, int suite, bool *for_dh)
{
    if (method < 0 || method > 3)
        return EDHOC_CRED_ERR_KEY_TYPE;
    /* Method bit 1 set: the initiator uses static DH; bit 0: the responder. */
    bool dh = initiator ? (method & 2) != 0 : (method & 1) != 0;
    for (size_t i = 0; i < sizeof suite_table / sizeof suite_table[0]; i++) {
        if (suite_table[i].suite == suite) {
            if (for_dh)
                *for_dh = dh;
            return dh ? suite_table[i].ecdh_curve : suite_table[i].sign_curve;
        }
    }
    return EDHOC_CRED_ERR_KEY_TYPE;
}

int edhoc_cred_check_key_type(const struct edhoc_cred *cred, int method, bool initiator, int suite)
{
    int want = edhoc_cred_auth_curve(method, initiator, suite, NULL);
    if (want < 0)
        return want;
    return cred->curve == want ? 0 : EDHOC_CRED_ERR_KEY_TYPE;
}

/* ---- ID_CRED ---- */

int edhoc_cred_cert_hash(int alg, const uint8_t *der, size_t der_len, uint8_t *out, size_t *out_len)
{
    uint8_t h[32];
    if (alg != EDHOC_COSE_SHA256_64 && alg != EDHOC_COSE_SHA256)
        return EDHOC_CRED_ERR_FORMAT;
    if (cred_sha256(der, der_len, h) != 0)
        return EDHOC_CRED_ERR_FORMAT;
    *out_len = alg == EDHOC_COSE_SHA256_64 ? 8 : 32;
    memcpy(out, h, *out_len);
    return 0;
}

int edhoc_id_cred_encode(const struct edhoc_cred *cred, enum edhoc_id_cred_type type, int x5t_alg,
                         uint8_t *out, size_t cap, size_t *out_len)
{
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, out, cap);
    edhoc_cbor_put_map(&w, 1);
    switch (type) {
    case EDHOC_ID_CRED_KID:
        if (cred->kid_len == 0)
            return EDHOC_CRED_ERR_FORMAT;
        edhoc_cbor_put_uint(&w, EDHOC_ID_CRED_KID);
        edhoc_cbor_put_bstr(&w, cred->kid, cred->kid_len);
        break;
    case EDHOC_ID_CRED_KCCS:
        if (cred->type != EDHOC_CRED_CCS)
            return EDHOC_CRED_ERR_FORMAT;
        edhoc_cbor_put_uint(&w, EDHOC_ID_CRED_KCCS);
        edhoc_cbor_put_raw(&w, cred->cred, cred->cred_len);
        break;
    case EDHOC_ID_CRED_X5T: {
        if (cred->type != EDHOC_CRED_X509 || cred->n_certs == 0)
            return EDHOC_CRED_ERR_FORMAT;
        if (x5t_alg == 0)
            x5t_alg = EDHOC_COSE_SHA256_64;
        uint8_t h[32];
        size_t hl;
        int rc = edhoc_cred_cert_hash(x5t_alg, cred->certs[0], cred->cert_lens[0], h, &hl);
        if (rc != 0)
            return rc;
        edhoc_cbor_put_uint(&w, EDHOC_ID_CRED_X5T);
        edhoc_cbor_put_array(&w, 2);
        edhoc_cbor_put_int(&w, x5t_alg);
        edhoc_cbor_put_bstr(&w, h, hl);
        break;
    }
    case EDHOC_ID_CRED_KCWT:
        if (cred->type != EDHOC_CRED_CWT)
            return EDHOC_CRED_ERR_FORMAT;
        edhoc_cbor_put_uint(&w, EDHOC_ID_CRED_KCWT);
        edhoc_cbor_put_raw(&w, cred->cred, cred->cred_len);
        break;
    case EDHOC_ID_CRED_X5BAG:
    case EDHOC_ID_CRED_X5CHAIN:
        if (cred->type != EDHOC_CRED_X509 || cred->n_certs == 0)
            return EDHOC_CRED_ERR_FORMAT;
        /* A bag holds the same certificates as the chain would, leaf
         * first although the receiver may not rely on any order. */
        edhoc_cbor_put_uint(&w, (uint64_t)type);
        if (cred->n_certs > 1)
            edhoc_cbor_put_array(&w, cred->n_certs);
        for (size_t i = 0; i < cred->n_certs; i++)
            edhoc_cbor_put_bstr(&w, cred->certs[i], cred->cert_lens[i]);
        break;
    default: return EDHOC_CRED_ERR_FORMAT;
    }
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_CRED_ERR_TOO_LARGE;
    *out_len = (size_t)n;
    return 0;
}

/* x5chain / x5bag value: one bstr, or an array of at most max bstr. */
static int parse_cert_list(struct edhoc_cbor_reader *r, size_t max, struct edhoc_id_cred *out)
{
    struct edhoc_cbor_item it;
    if (edhoc_cbor_peek(r, &it) != 0)
        return EDHOC_CRED_ERR_FORMAT;
    if (it.type == EDHOC_CBOR_BSTR) {
        if (edhoc_cbor_get_bstr(r, &out->certs[0], &out->cert_lens[0]) != 0)
            return EDHOC_CRED_ERR_FORMAT;
        out->n_certs = 1;
    } else {
        size_t n;
        if (edhoc_cbor_get_array(r, &n) != 0 || n == 0 || n > max)
            return EDHOC_CRED_ERR_FORMAT;
        for (size_t i = 0; i < n; i++)
            if (edhoc_cbor_get_bstr(r, &out->certs[i], &out->cert_lens[i]) != 0)
                return EDHOC_CRED_ERR_FORMAT;
        out->n_certs = n;
    }
    for (size_t i = 0; i < out->n_certs; i++)
        if (out->cert_lens[i] == 0)
            return EDHOC_CRED_ERR_FORMAT;
    return 0;
}

/* One entry's value into out; *known false for a label we skip. */
static int parse_id_cred_entry(struct edhoc_cbor_reader *r, const uint8_t *map, int64_t label,
                               struct edhoc_id_cred *out, bool *known)
{
    struct edhoc_cbor_item it;
    *known = true;
    switch (label) {
    case EDHOC_ID_CRED_KID:
        return edhoc_cbor_get_bstr(r, &out->kid, &out->kid_len) != 0 ? EDHOC_CRED_ERR_FORMAT : 0;
    case EDHOC_ID_CRED_KCCS:
    case EDHOC_ID_CRED_KCWT: {
        /* A CCS is a map, a CWT (untagged COSE_Sign1) an array; their
         * insides are the credential parser's business. */
        size_t start = r->pos;
        enum edhoc_cbor_type want = label == EDHOC_ID_CRED_KCCS ? EDHOC_CBOR_MAP : EDHOC_CBOR_ARRAY;
        if (edhoc_cbor_peek(r, &it) != 0 || it.type != want || edhoc_cbor_skip(r) != 0)
            return EDHOC_CRED_ERR_FORMAT;
        if (label == EDHOC_ID_CRED_KCCS) {
            out->ccs = map + start;
            out->ccs_len = r->pos - start;
        } else {
            out->cwt = map + start;
            out->cwt_len = r->pos - start;
        }
        return 0;
    }
    case EDHOC_ID_CRED_X5T: {
        size_t n;
        int64_t alg;
        if (edhoc_cbor_get_array(r, &n) != 0 || n != 2 || edhoc_cbor_get_int(r, &alg) != 0 ||
            edhoc_cbor_get_bstr(r, &out->x5t_hash, &out->x5t_hash_len) != 0)
            return EDHOC_CRED_ERR_FORMAT;
        if ((alg == EDHOC_COSE_SHA256_64 && out->x5t_hash_len != 8) ||
            (alg == EDHOC_COSE_SHA256 && out->x5t_hash_len != 32) || alg < -65536 || alg > 65535 ||
            out->x5t_hash_len == 0 || out->x5t_hash_len > 64)
            return EDHOC_CRED_ERR_FORMAT;
        out->x5t_alg = (int)alg;
        return 0;
    }
    case EDHOC_ID_CRED_X5CHAIN: return parse_cert_list(r, EDHOC_CRED_MAX_CHAIN, out);
    case EDHOC_ID_CRED_X5BAG: return parse_cert_list(r, EDHOC_CRED_MAX_BAG, out);
    default: *known = false; return edhoc_cbor_skip(r) != 0 ? EDHOC_CRED_ERR_FORMAT : 0;
    }
}

/* Entries per ID_CRED map we read at all (duplicate check is quadratic). */
#define ID_CRED_MAX_PAIRS 8

int edhoc_id_cred_parse(const uint8_t *map, size_t len, struct edhoc_id_cred *out)
{
    memset(out, 0, sizeof *out);
    if (!map || len == 0 || edhoc_cbor_check_item(map, len) != 0)
        return EDHOC_CRED_ERR_FORMAT;
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, map, len);
    size_t pairs;
    if (edhoc_cbor_get_map(&r, &pairs) != 0 || pairs == 0 || pairs > ID_CRED_MAX_PAIRS)
        return EDHOC_CRED_ERR_FORMAT;
    const uint8_t *seen[ID_CRED_MAX_PAIRS];
    size_t seen_len[ID_CRED_MAX_PAIRS];
    int by_value = 0; /* the entry that carries the credential, if any */
    for (size_t i = 0; i < pairs; i++) {
        bool is_int, known;
        int64_t label;
        if (read_label(&r, &is_int, &label, &seen[i], &seen_len[i]) != 0 ||
            seen_before(seen, seen_len, i, seen[i], seen_len[i]))
            goto bad;
        if (!is_int) {
            if (edhoc_cbor_skip(&r) != 0)
                goto bad;
            continue;
        }
        if (parse_id_cred_entry(&r, map, label, out, &known) != 0)
            goto bad;
        if (!known)
            continue;
        out->labels |= EDHOC_ID_CRED_LABEL_BIT(label);
        if (label == EDHOC_ID_CRED_KCWT || label == EDHOC_ID_CRED_KCCS ||
            label == EDHOC_ID_CRED_X5BAG || label == EDHOC_ID_CRED_X5CHAIN) {
            if (by_value)
                goto bad; /* two credentials: which one is the sender's? */
            by_value = (int)label;
        }
    }
    if (!edhoc_cbor_at_end(&r) || out->labels == 0)
        goto bad;
    if (by_value)
        out->type = (enum edhoc_id_cred_type)by_value;
    else if (out->labels & EDHOC_ID_CRED_LABEL_BIT(EDHOC_ID_CRED_X5T))
        out->type = EDHOC_ID_CRED_X5T;
    else
        out->type = EDHOC_ID_CRED_KID;
    return 0;
bad:
    memset(out, 0, sizeof *out);
    return EDHOC_CRED_ERR_FORMAT;
}

static int hex_value(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long cred_hex_decode(const uint8_t *text, size_t len, uint8_t *out, size_t cap)
{
    size_t i = 0, n = 0;
    int high = -1;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    if (i + 1 < len && text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X'))
        i += 2;
    for (; i < len; i++) {
        uint8_t c = text[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':')
            continue;
        int v = hex_value(c);
        if (v < 0)
            return -1;
        if (high < 0) {
            high = v;
            continue;
        }
        if (n >= cap)
            return -1;
        out[n++] = (uint8_t)(high << 4 | v);
        high = -1;
    }
    return high >= 0 ? -1 : (long)n;
}
