/*
 * X.509 with OpenSSL: reading certificates (DER, PEM, chains), their
 * public keys, hashing for x5t, chain validation against trust anchors,
 * and creating certificates for keygen.
 */
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "edhoc/cbor.h"
#include "edhoc/cred.h"
#include "cred_internal.h"
#include "cred_openssl.h"

static int64_t asn1_time_to_unix(const ASN1_TIME *t, bool *ok)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!t || ASN1_TIME_to_tm(t, &tm) != 1) {
        *ok = false;
        return 0;
    }
    return (int64_t)timegm(&tm);
}

/* The facts of a decoded certificate that credentials keep. */
static int read_cert(X509 *x, struct cred_x509_info *info)
{
    EVP_PKEY *pkey = X509_get0_pubkey(x);
    if (!pkey || cred_pkey_public(pkey, &info->curve, info->pub, &info->pub_len) != 0)
        return EDHOC_CRED_ERR_FORMAT;
    info->is_ca = (X509_get_extension_flags(x) & EXFLAG_CA) != 0;
    bool ok = true;
    info->not_before = asn1_time_to_unix(X509_get0_notBefore(x), &ok);
    info->not_after = asn1_time_to_unix(X509_get0_notAfter(x), &ok);
    info->has_validity = ok;
    return 0;
}

int cred_x509_inspect(const uint8_t *der, size_t len, size_t *len_used, struct cred_x509_info *info)
{
    if (len == 0)
        return EDHOC_CRED_ERR_FORMAT;
    if (len > EDHOC_CRED_MAX_DATA)
        len = EDHOC_CRED_MAX_DATA; /* a longer certificate then fails to decode */
    const unsigned char *p = der;
    X509 *x = d2i_X509(NULL, &p, (long)len);
    if (!x)
        return EDHOC_CRED_ERR_FORMAT;
    *len_used = (size_t)(p - der);
    int rc = read_cert(x, info);
    X509_free(x);
    ERR_clear_error();
    return rc;
}

int cred_pem_to_der(const uint8_t *pem, size_t len, uint8_t *buf, size_t cap, size_t *lens,
                    size_t max_certs)
{
    if (len > INT32_MAX)
        return EDHOC_CRED_ERR_TOO_LARGE;
    ERR_clear_error(); /* the end-of-input test below reads the queue */
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio)
        return EDHOC_CRED_ERR_FORMAT;
    size_t n = 0, used = 0;
    int rc = 0;
    for (;;) {
        X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        if (!x)
            break;
        int dl = i2d_X509(x, NULL);
        if (dl <= 0) {
            rc = EDHOC_CRED_ERR_FORMAT;
        } else if (n >= max_certs || used + (size_t)dl > cap) {
            rc = EDHOC_CRED_ERR_TOO_LARGE;
        } else {
            unsigned char *out = buf + used;
            i2d_X509(x, &out);
            lens[n++] = (size_t)dl;
            used += (size_t)dl;
        }
        X509_free(x);
        if (rc != 0)
            break;
    }
    /* The loop ends on the first failed read: at the end of the text, or
     * on a damaged block, which must not pass for "no more certificates". */
    unsigned long e = ERR_peek_last_error();
    if (rc == 0 && e != 0 &&
        !(ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE))
        rc = EDHOC_CRED_ERR_FORMAT;
    ERR_clear_error();
    BIO_free(bio);
    if (rc == 0 && n == 0)
        rc = EDHOC_CRED_ERR_FORMAT;
    return rc != 0 ? rc : (int)n;
}

int edhoc_cred_from_der_chain(struct edhoc_cred *cred, const uint8_t *const *certs,
                              const size_t *lens, size_t n)
{
    int rc = cred_x509_assemble(cred, certs, lens, n);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        struct cred_x509_info info;
        size_t used;
        if (cred_x509_inspect(cred->certs[i], cred->cert_lens[i], &used, &info) != 0 ||
            used != cred->cert_lens[i]) {
            memset(cred, 0, sizeof *cred);
            return EDHOC_CRED_ERR_FORMAT;
        }
        if (i == 0)
            cred_x509_set_leaf_info(cred, &info);
    }
    return 0;
}

static bool looks_like_pem(const uint8_t *data, size_t len)
{
    static const char marker[] = "-----BEGIN";
    for (size_t i = 0; i + sizeof marker - 1 <= len; i++)
        if (memcmp(data + i, marker, sizeof marker - 1) == 0)
            return true;
    return false;
}

int edhoc_cred_from_x509(struct edhoc_cred *cred, const uint8_t *data, size_t len)
{
    const uint8_t *certs[EDHOC_CRED_MAX_CHAIN] = {NULL};
    size_t lens[EDHOC_CRED_MAX_CHAIN] = {0};
    size_t n = 0;
    uint8_t *buf = NULL;

    memset(cred, 0, sizeof *cred);
    if (!data || len == 0)
        return EDHOC_CRED_ERR_FORMAT;
    if (looks_like_pem(data, len)) {
        buf = OPENSSL_malloc(EDHOC_CRED_MAX_DATA);
        if (!buf)
            return EDHOC_CRED_ERR_TOO_LARGE;
        int rc = cred_pem_to_der(data, len, buf, EDHOC_CRED_MAX_DATA, lens, EDHOC_CRED_MAX_CHAIN);
        if (rc < 0) {
            OPENSSL_free(buf);
            return rc;
        }
        n = (size_t)rc;
        size_t off = 0;
        for (size_t i = 0; i < n; i++) {
            certs[i] = buf + off;
            off += lens[i];
        }
    } else {
        /* DER: one certificate or several back to back. */
        size_t off = 0;
        while (off < len) {
            struct cred_x509_info info;
            size_t used;
            if (cred_x509_inspect(data + off, len - off, &used, &info) != 0 || used == 0)
                return EDHOC_CRED_ERR_FORMAT;
            if (n >= EDHOC_CRED_MAX_CHAIN)
                return EDHOC_CRED_ERR_TOO_LARGE;
            certs[n] = data + off;
            lens[n++] = used;
            off += used;
        }
    }
    int rc = edhoc_cred_from_der_chain(cred, certs, lens, n);
    OPENSSL_free(buf);
    return rc;
}

static X509 *leaf_x509(const struct edhoc_cred *cred, size_t i)
{
    if (cred->type != EDHOC_CRED_X509 || i >= cred->n_certs)
        return NULL;
    const unsigned char *p = cred->certs[i];
    return d2i_X509(NULL, &p, (long)cred->cert_lens[i]);
}

int edhoc_cred_x509_validity(const struct edhoc_cred *cred, int64_t *not_before, int64_t *not_after)
{
    if (cred->type != EDHOC_CRED_X509 || cred->n_certs == 0)
        return EDHOC_CRED_ERR_FORMAT;
    if (cred->has_validity) {
        *not_before = cred->not_before;
        *not_after = cred->not_after;
        return 0;
    }
    /* Not read at parse time (a credential laid out by hand, or times
     * OpenSSL could not convert): decode the leaf now. */
    X509 *x = leaf_x509(cred, 0);
    if (!x)
        return EDHOC_CRED_ERR_FORMAT;
    bool ok = true;
    *not_before = asn1_time_to_unix(X509_get0_notBefore(x), &ok);
    *not_after = asn1_time_to_unix(X509_get0_notAfter(x), &ok);
    X509_free(x);
    ERR_clear_error();
    return ok ? 0 : EDHOC_CRED_ERR_FORMAT;
}

int cred_x509_check_time(const struct edhoc_cred *cred, int64_t now)
{
    int64_t nb, na;
    int rc = edhoc_cred_x509_validity(cred, &nb, &na);
    if (rc != 0)
        return rc;
    if (now == 0)
        now = (int64_t)time(NULL);
    return now < nb || now > na ? EDHOC_CRED_ERR_EXPIRED : 0;
}

/* Verify leaf (+ untrusted intermediates) against the store's anchors. */
static int verify_decoded(const struct edhoc_cred_store *store, X509 *leaf,
                          STACK_OF(X509) * untrusted, int64_t now)
{
    int rc = EDHOC_CRED_ERR_UNTRUSTED;
    X509_STORE *xs = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    if (!xs || !ctx)
        goto out;
    for (size_t i = 0; i < store->n_anchors; i++) {
        X509 *a = leaf_x509(&store->anchors[i], 0);
        if (!a)
            continue;
        X509_STORE_add_cert(xs, a);
        X509_free(a);
    }
    if (X509_STORE_CTX_init(ctx, xs, leaf, untrusted) != 1)
        goto out;
    /* An anchor may be an intermediate CA the operator chose to trust. */
    X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_PARTIAL_CHAIN);
    if (now != 0)
        X509_STORE_CTX_set_time(ctx, 0, (time_t)now);
    if (X509_verify_cert(ctx) == 1) {
        rc = 0;
    } else {
        switch (X509_STORE_CTX_get_error(ctx)) {
        case X509_V_ERR_CERT_HAS_EXPIRED:
        case X509_V_ERR_CERT_NOT_YET_VALID: rc = EDHOC_CRED_ERR_EXPIRED; break;
        default: rc = EDHOC_CRED_ERR_UNTRUSTED; break;
        }
    }
out:
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(xs);
    return rc;
}

int cred_x509_resolve_chain(const struct edhoc_cred_store *store, const uint8_t *const *certs,
                            const size_t *lens, size_t n, struct edhoc_cred *out)
{
    int rc = cred_x509_assemble(out, certs, lens, n);
    if (rc != 0) {
        memset(out, 0, sizeof *out);
        return EDHOC_CRED_ERR_FORMAT;
    }
    /* Each certificate is decoded once, for its key and times and for the
     * verification alike. */
    X509 *x[EDHOC_CRED_MAX_CHAIN] = {NULL};
    STACK_OF(X509) *untrusted = NULL;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const unsigned char *p = out->certs[i];
        struct cred_x509_info info;
        x[i] = d2i_X509(NULL, &p, (long)out->cert_lens[i]);
        if (!x[i] || (size_t)(p - out->certs[i]) != out->cert_lens[i] ||
            read_cert(x[i], &info) != 0)
            rc = EDHOC_CRED_ERR_FORMAT;
        else if (i == 0)
            cred_x509_set_leaf_info(out, &info);
    }
    if (rc != 0)
        goto out;
    if (store->n_anchors == 0) {
        rc = EDHOC_CRED_ERR_UNTRUSTED;
        goto out;
    }
    untrusted = sk_X509_new_null();
    if (!untrusted) {
        rc = EDHOC_CRED_ERR_UNTRUSTED;
        goto out;
    }
    for (size_t i = 1; i < n; i++) {
        if (!sk_X509_push(untrusted, x[i])) {
            rc = EDHOC_CRED_ERR_UNTRUSTED;
            goto out;
        }
    }
    rc = verify_decoded(store, x[0], untrusted, store->now);
out:
    ERR_clear_error();
    sk_X509_free(untrusted); /* the certificates are freed below */
    for (size_t i = 0; i < n; i++)
        X509_free(x[i]);
    if (rc != 0)
        memset(out, 0, sizeof *out);
    return rc;
}

/* ---- x5bag ---- */

void cred_x509_bag_close(struct cred_x509_bag *bag)
{
    for (size_t i = 0; i < bag->n; i++)
        X509_free(bag->x509[i]);
    bag->n = 0;
    memset(&bag->scratch, 0, sizeof bag->scratch);
}

int cred_x509_bag_open(struct cred_x509_bag *bag, const uint8_t *const *certs, const size_t *lens,
                       size_t n)
{
    bag->n = 0;
    if (n == 0 || n > EDHOC_CRED_MAX_BAG)
        return EDHOC_CRED_ERR_FORMAT;
    for (size_t i = 0; i < n; i++) {
        bool dup = false;
        for (size_t k = 0; k < bag->n && !dup; k++)
            dup = bag->len[k] == lens[i] && memcmp(bag->der[k], certs[i], lens[i]) == 0;
        if (dup)
            continue; /* RFC 9360 lets a bag repeat itself; one copy is enough */
        const unsigned char *p = certs[i];
        X509 *x = d2i_X509(NULL, &p, (long)lens[i]);
        struct cred_x509_info info;
        if (!x || (size_t)(p - certs[i]) != lens[i] || read_cert(x, &info) != 0) {
            X509_free(x);
            ERR_clear_error();
            cred_x509_bag_close(bag);
            return EDHOC_CRED_ERR_FORMAT;
        }
        bag->der[bag->n] = certs[i];
        bag->len[bag->n] = lens[i];
        bag->is_ca[bag->n] = info.is_ca;
        bag->x509[bag->n++] = x;
    }
    return 0;
}

/* Did one of the anchors issue x (names and key identifiers match, the
 * anchor may sign certificates), or is x an anchor itself? */
static bool anchored(const struct edhoc_cred_store *store, X509 *x, const uint8_t *der,
                     size_t der_len)
{
    for (size_t i = 0; i < store->n_anchors; i++) {
        const struct edhoc_cred *a = &store->anchors[i];
        if (a->n_certs && a->cert_lens[0] == der_len && memcmp(a->certs[0], der, der_len) == 0)
            return true;
        X509 *ax = leaf_x509(a, 0);
        bool issued = ax && X509_check_issued(ax, x) == X509_V_OK;
        X509_free(ax);
        if (issued)
            return true;
    }
    ERR_clear_error();
    return false;
}

int cred_x509_bag_chain(const struct cred_x509_bag *bag, const struct edhoc_cred_store *store,
                        size_t leaf, struct edhoc_cred *out)
{
    /* Walk up from the leaf: at each step the bag certificate that issued
     * the last one. Certificates that issue nothing on the way are simply
     * never picked. The path is what the peer would have sent as an
     * x5chain, and is then verified as one. */
    size_t path[EDHOC_CRED_MAX_CHAIN];
    size_t n = 0;
    path[n++] = leaf;
    for (;;) {
        size_t last = path[n - 1];
        X509 *x = bag->x509[last];
        if (anchored(store, x, bag->der[last], bag->len[last]))
            break;
        int next = -1;
        bool loops = false;
        for (size_t k = 0; k < bag->n && next < 0; k++) {
            if (k == last || X509_check_issued(bag->x509[k], x) != X509_V_OK)
                continue;
            bool on_path = false;
            for (size_t j = 0; j < n && !on_path; j++)
                on_path = path[j] == k;
            if (on_path)
                loops = true;
            else
                next = (int)k;
        }
        ERR_clear_error();
        if (next < 0) {
            if (loops)
                return EDHOC_CRED_ERR_CHAIN_LOOP;
            break; /* no issuer in the bag: verification says why */
        }
        if (n == EDHOC_CRED_MAX_CHAIN)
            return EDHOC_CRED_ERR_CHAIN_DEPTH;
        path[n++] = (size_t)next;
    }
    const uint8_t *certs[EDHOC_CRED_MAX_CHAIN];
    size_t lens[EDHOC_CRED_MAX_CHAIN];
    for (size_t i = 0; i < n; i++) {
        certs[i] = bag->der[path[i]];
        lens[i] = bag->len[path[i]];
    }
    return cred_x509_resolve_chain(store, certs, lens, n, out);
}

/* ---- Certificate creation ---- */

static const EVP_MD *sign_digest(EVP_PKEY *key, int *err)
{
    *err = 0;
    switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_ED25519:
    case EVP_PKEY_ED448: return NULL; /* EdDSA hashes internally */
    case EVP_PKEY_EC: return EVP_PKEY_get_bits(key) > 256 ? EVP_sha384() : EVP_sha256();
    default:
        *err = EDHOC_CRED_ERR_KEY_TYPE; /* X25519 / X448 cannot sign */
        return NULL;
    }
}

static bool add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX v3;
    X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    if (!ext)
        return false;
    bool ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

int edhoc_x509_create(struct edhoc_cred *cred, const struct edhoc_key *subject_key,
                      const struct edhoc_x509_params *params)
{
    int rc = EDHOC_CRED_ERR_FORMAT;
    EVP_PKEY *subject = cred_pkey_from_key(subject_key);
    EVP_PKEY *signer = NULL;
    X509 *cert = X509_new(), *issuer = NULL;
    uint8_t *der_buf = NULL;
    if (!subject || !cert || !params->subject_cn)
        goto out;

    if (params->issuer) {
        if (!params->issuer_key) {
            rc = EDHOC_CRED_ERR_KEY_TYPE;
            goto out;
        }
        issuer = leaf_x509(params->issuer, 0);
        signer = cred_pkey_from_key(params->issuer_key);
        if (!issuer || !signer)
            goto out;
        if (X509_check_private_key(issuer, signer) != 1) {
            rc = EDHOC_CRED_ERR_KEY_TYPE;
            goto out;
        }
    } else {
        signer = subject;
        EVP_PKEY_up_ref(signer);
    }
    int derr;
    const EVP_MD *md = sign_digest(signer, &derr);
    if (derr) {
        rc = derr;
        goto out;
    }

    uint64_t serial = params->serial;
    if (serial == 0) {
        if (RAND_bytes((unsigned char *)&serial, sizeof serial) != 1)
            goto out;
        serial = (serial >> 2) | 1; /* positive, non-zero, fits in 8 bytes */
    }
    X509_NAME *name = X509_NAME_new();
    if (!name)
        goto out;
    int ok =
        X509_set_version(cert, X509_VERSION_3) == 1 &&
        ASN1_INTEGER_set_uint64(X509_get_serialNumber(cert), serial) == 1 &&
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                   (const unsigned char *)params->subject_cn, -1, -1, 0) == 1 &&
        X509_set_subject_name(cert, name) == 1 &&
        X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : name) == 1 &&
        ASN1_TIME_set(X509_getm_notBefore(cert), (time_t)params->not_before) != NULL &&
        ASN1_TIME_set(X509_getm_notAfter(cert), (time_t)params->not_after) != NULL &&
        X509_set_pubkey(cert, subject) == 1;
    X509_NAME_free(name);
    if (!ok)
        goto out;
    X509 *ext_issuer = issuer ? issuer : cert;
    if (params->no_extensions && !params->is_ca) {
        ok = 1;
    } else if (params->is_ca) {
        ok = add_ext(cert, ext_issuer, NID_basic_constraints, "critical,CA:TRUE") &&
             add_ext(cert, ext_issuer, NID_key_usage, "critical,keyCertSign,cRLSign") &&
             add_ext(cert, ext_issuer, NID_subject_key_identifier, "hash");
    } else {
        /* Leaves stay small (EDHOC sends them over constrained links):
         * only what a verifier needs to know it is not a CA. */
        ok = add_ext(cert, ext_issuer, NID_basic_constraints, "critical,CA:FALSE");
    }
    /* The authority key identifier points at the issuer's subject key
     * identifier; an issuer without one (a leaf used as issuer) gets none. */
    if (ok && issuer && X509_get0_subject_key_id(issuer) &&
        !(params->no_extensions && !params->is_ca))
        ok = add_ext(cert, ext_issuer, NID_authority_key_identifier, "keyid");
    if (!ok || X509_sign(cert, signer, md) <= 0)
        goto out;

    /* The new leaf followed by the issuer's chain without its root: a
     * peer must hold the root as an anchor anyway, sending it is waste. */
    int dl = i2d_X509(cert, NULL);
    if (dl <= 0)
        goto out;
    const uint8_t *certs[EDHOC_CRED_MAX_CHAIN];
    size_t lens[EDHOC_CRED_MAX_CHAIN];
    size_t n = 1;
    for (size_t i = 0; params->issuer && i < params->issuer->n_certs; i++) {
        X509 *c = leaf_x509(params->issuer, i);
        bool root = !c || X509_check_issued(c, c) == X509_V_OK;
        X509_free(c);
        if (root)
            continue;
        if (n >= EDHOC_CRED_MAX_CHAIN) {
            rc = EDHOC_CRED_ERR_TOO_LARGE;
            goto out;
        }
        certs[n] = params->issuer->certs[i];
        lens[n++] = params->issuer->cert_lens[i];
    }
    der_buf = OPENSSL_malloc((size_t)dl);
    if (!der_buf)
        goto out;
    unsigned char *p = der_buf;
    i2d_X509(cert, &p);
    certs[0] = der_buf;
    lens[0] = (size_t)dl;
    rc = edhoc_cred_from_der_chain(cred, certs, lens, n);
out:
    ERR_clear_error();
    OPENSSL_free(der_buf);
    X509_free(cert);
    X509_free(issuer);
    EVP_PKEY_free(signer);
    EVP_PKEY_free(subject);
    return rc;
}

int edhoc_x509_to_pem(const struct edhoc_cred *cred, char *out, size_t cap, size_t *out_len)
{
    if (cred->type != EDHOC_CRED_X509 || cred->n_certs == 0)
        return EDHOC_CRED_ERR_FORMAT;
    BIO *bio = BIO_new(BIO_s_mem());
    if (!bio)
        return EDHOC_CRED_ERR_FORMAT;
    int rc = 0;
    for (size_t i = 0; i < cred->n_certs && rc == 0; i++) {
        X509 *x = leaf_x509(cred, i);
        if (!x || PEM_write_bio_X509(bio, x) != 1)
            rc = EDHOC_CRED_ERR_FORMAT;
        X509_free(x);
    }
    char *mem = NULL;
    long n = BIO_get_mem_data(bio, &mem);
    if (rc == 0) {
        if (n < 0 || (size_t)n + 1 > cap) {
            rc = EDHOC_CRED_ERR_TOO_LARGE;
        } else {
            memcpy(out, mem, (size_t)n);
            out[n] = '\0';
            *out_len = (size_t)n;
        }
    }
    BIO_free(bio);
    return rc;
}
