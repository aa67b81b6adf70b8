/*
 * The credential store: which peers are accepted. A kid, x5t or kccs is
 * only ever a pointer to something configured here; an x5chain may also be
 * a chain that verifies to one of the anchors.
 */
#include <string.h>
#include <time.h>

#include "edhoc/cred.h"
#include "cred_internal.h"

void edhoc_cred_store_init(struct edhoc_cred_store *store)
{
    store->n_creds = 0;
    store->n_anchors = 0;
    store->now = 0;
    memset(store->facts, 0, sizeof store->facts);
}

void edhoc_cred_store_set_time(struct edhoc_cred_store *store, int64_t unix_seconds)
{
    store->now = unix_seconds;
}

/* Whatever a lookup would otherwise redo every time: the leaf hash that
 * x5t names, the validity window (for a credential laid out by hand; a
 * parsed one carries it already), the check that a CCS key is a point of
 * its curve. */
static void learn_facts(struct edhoc_cred *c, struct edhoc_cred_store_facts *f)
{
    memset(f, 0, sizeof *f);
    if (c->type == EDHOC_CRED_X509 && c->n_certs != 0) {
        f->has_leaf_sha256 = cred_sha256(c->certs[0], c->cert_lens[0], f->leaf_sha256) == 0;
        int64_t nb, na;
        if (!c->has_validity && edhoc_cred_x509_validity(c, &nb, &na) == 0) {
            c->not_before = nb;
            c->not_after = na;
            c->has_validity = true;
        }
    }
    f->pub_checked = cred_pub_is_valid(c->curve, c->pub, c->pub_len);
}

int edhoc_cred_store_add_cred(struct edhoc_cred_store *store, const struct edhoc_cred *cred)
{
    if (store->n_creds >= EDHOC_CRED_STORE_MAX_CREDS)
        return EDHOC_CRED_ERR_TOO_LARGE;
    struct edhoc_cred *c = &store->creds[store->n_creds];
    edhoc_cred_copy(c, cred);
    learn_facts(c, &store->facts[store->n_creds]);
    store->n_creds++;
    return 0;
}

int edhoc_cred_store_add_anchor(struct edhoc_cred_store *store, const struct edhoc_cred *ca)
{
    if (ca->type != EDHOC_CRED_X509 || ca->n_certs == 0)
        return EDHOC_CRED_ERR_FORMAT;
    if (store->n_anchors >= EDHOC_CRED_STORE_MAX_ANCHORS)
        return EDHOC_CRED_ERR_TOO_LARGE;
    edhoc_cred_copy(&store->anchors[store->n_anchors++], ca);
    return 0;
}

/* The validity window: a certificate's notBefore/notAfter, a CWT's
 * nbf/exp (RFC 8392 Sections 3.1.4 and 3.1.5); a CCS has none. */
static int cred_check_time(const struct edhoc_cred *c, int64_t now)
{
    if (c->type == EDHOC_CRED_X509)
        return cred_x509_check_time(c, now);
    if (c->type == EDHOC_CRED_CWT) {
        if (now == 0)
            now = (int64_t)time(NULL);
        return now < c->not_before || now > c->not_after ? EDHOC_CRED_ERR_EXPIRED : 0;
    }
    return 0;
}

/* A configured credential is trusted as configured, except that an X.509
 * one must still be inside its validity window (the cached one: no
 * decoding). */
static int accept_configured(const struct edhoc_cred_store *store, const struct edhoc_cred *cred,
                             struct edhoc_cred *out)
{
    int rc = cred_check_time(cred, store->now);
    if (rc != 0)
        return rc;
    edhoc_cred_copy(out, cred);
    return 0;
}

static int resolve_kid(const struct edhoc_cred_store *store, const struct edhoc_id_cred *id,
                       struct edhoc_cred *out)
{
    for (size_t i = 0; i < store->n_creds; i++) {
        const struct edhoc_cred *c = &store->creds[i];
        if (c->kid_len != 0 && c->kid_len == id->kid_len &&
            memcmp(c->kid, id->kid, id->kid_len) == 0)
            return accept_configured(store, c, out);
    }
    return EDHOC_CRED_ERR_UNKNOWN;
}

static int resolve_x5t(const struct edhoc_cred_store *store, const struct edhoc_id_cred *id,
                       struct edhoc_cred *out)
{
    if (id->x5t_alg != EDHOC_COSE_SHA256_64 && id->x5t_alg != EDHOC_COSE_SHA256)
        return EDHOC_CRED_ERR_UNKNOWN; /* a hash we cannot compute matches nothing */
    /* -15 is SHA-256 truncated to 64 bits, so both compare against the
     * one stored digest. */
    size_t hl = id->x5t_alg == EDHOC_COSE_SHA256_64 ? 8 : 32;
    if (id->x5t_hash_len != hl)
        return EDHOC_CRED_ERR_UNKNOWN;
    for (size_t i = 0; i < store->n_creds; i++) {
        const struct edhoc_cred *c = &store->creds[i];
        if (c->type != EDHOC_CRED_X509 || c->n_certs == 0)
            continue;
        const uint8_t *h = store->facts[i].leaf_sha256;
        uint8_t computed[32];
        if (!store->facts[i].has_leaf_sha256) {
            if (cred_sha256(c->certs[0], c->cert_lens[0], computed) != 0)
                continue;
            h = computed;
        }
        if (memcmp(h, id->x5t_hash, hl) == 0)
            return accept_configured(store, c, out);
    }
    return EDHOC_CRED_ERR_UNKNOWN;
}

static int resolve_kccs(const struct edhoc_cred_store *store, const struct edhoc_id_cred *id,
                        struct edhoc_cred *out)
{
    /* The configured CCS itself: its key was checked when it was added,
     * only the CBOR needs reading again (for the CCS's own kid). */
    for (size_t i = 0; i < store->n_creds; i++) {
        const struct edhoc_cred *c = &store->creds[i];
        if (c->type == EDHOC_CRED_CCS && store->facts[i].pub_checked &&
            c->cred_len == id->ccs_len && memcmp(c->cred, id->ccs, id->ccs_len) == 0) {
            int rc = cred_ccs_parse(out, id->ccs, id->ccs_len, false);
            if (rc == 0)
                return 0;
            break; /* cannot happen for bytes that parsed before; decide below */
        }
    }
    int rc = edhoc_cred_from_ccs(out, id->ccs, id->ccs_len);
    if (rc != 0)
        return rc == EDHOC_CRED_ERR_TOO_LARGE ? EDHOC_CRED_ERR_FORMAT : rc;
    for (size_t i = 0; i < store->n_creds; i++) {
        const struct edhoc_cred *c = &store->creds[i];
        if (edhoc_cred_equal(c, out))
            return 0;
        /* The same key configured in another CCS (or in a certificate) is
         * the same peer; CRED_x stays the CCS as received, since that is
         * what the peer puts in its transcript. */
        if (c->curve == out->curve && c->pub_len == out->pub_len &&
            memcmp(c->pub, out->pub, c->pub_len) == 0)
            return 0;
    }
    memset(out, 0, sizeof *out);
    return EDHOC_CRED_ERR_UNKNOWN;
}

static bool der_equal(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
    return a_len == b_len && memcmp(a, b, a_len) == 0;
}

/* The received chain's leaf is configured credential c: lay the chain out
 * without decoding the leaf (its key and validity are c's, from the same
 * bytes). Certificates the peer sends beyond c's own are still read, so
 * that a chain with a malformed one stays a format error. */
static int accept_configured_chain(const struct edhoc_cred_store *store, const struct edhoc_cred *c,
                                   const struct edhoc_id_cred *id, struct edhoc_cred *out)
{
    int rc = cred_x509_assemble(out, id->certs, id->cert_lens, id->n_certs);
    if (rc != 0)
        return EDHOC_CRED_ERR_FORMAT;
    for (size_t i = 1; i < id->n_certs; i++) {
        bool known = false;
        for (size_t k = 1; k < c->n_certs && !known; k++)
            known = der_equal(id->certs[i], id->cert_lens[i], c->certs[k], c->cert_lens[k]);
        struct cred_x509_info info;
        size_t used;
        if (!known && (cred_x509_inspect(id->certs[i], id->cert_lens[i], &used, &info) != 0 ||
                       used != id->cert_lens[i]))
            return EDHOC_CRED_ERR_FORMAT;
    }
    out->curve = c->curve;
    memcpy(out->pub, c->pub, c->pub_len);
    out->pub_len = c->pub_len;
    out->has_validity = c->has_validity;
    out->not_before = c->not_before;
    out->not_after = c->not_after;
    rc = cred_x509_check_time(out, store->now);
    if (rc == 0)
        edhoc_cred_set_kid(out, c->kid, c->kid_len); /* the configured name */
    return rc;
}

/* An x5t beside a certificate list names one of its certificates. */
static bool x5t_names(const struct edhoc_id_cred *id, const uint8_t *der, size_t der_len)
{
    uint8_t h[32];
    size_t hl;
    return edhoc_cred_cert_hash(id->x5t_alg, der, der_len, h, &hl) == 0 && hl == id->x5t_hash_len &&
           memcmp(h, id->x5t_hash, hl) == 0;
}

static int resolve_x5chain(const struct edhoc_cred_store *store, const struct edhoc_id_cred *id,
                           struct edhoc_cred *out)
{
    /* An x5t beside the chain must name its end-entity certificate, else
     * the map names two different credentials. */
    if ((id->labels & EDHOC_ID_CRED_LABEL_BIT(EDHOC_ID_CRED_X5T)) &&
        !x5t_names(id, id->certs[0], id->cert_lens[0]))
        return EDHOC_CRED_ERR_FORMAT;
    for (size_t i = 0; i < store->n_creds; i++) {
        const struct edhoc_cred *c = &store->creds[i];
        if (c->type == EDHOC_CRED_X509 && c->n_certs != 0 &&
            der_equal(c->certs[0], c->cert_lens[0], id->certs[0], id->cert_lens[0])) {
            int rc = accept_configured_chain(store, c, id, out);
            if (rc != 0)
                memset(out, 0, sizeof *out);
            return rc;
        }
    }
    /* Not configured: the real work of validating a chain. */
    return cred_x509_resolve_chain(store, id->certs, id->cert_lens, id->n_certs, out);
}

/* Error of a candidate that failed, by how much it says: a loop or a too
 * long chain over an expired certificate over "no anchor" over the rest. */
static int bag_error_rank(int rc)
{
    switch (rc) {
    case EDHOC_CRED_ERR_CHAIN_LOOP: return 5;
    case EDHOC_CRED_ERR_CHAIN_DEPTH: return 4;
    case EDHOC_CRED_ERR_EXPIRED: return 3;
    case EDHOC_CRED_ERR_UNTRUSTED: return 2;
    case EDHOC_CRED_ERR_UNKNOWN: return 1;
    default: return 0;
    }
}

/* RFC 9528 Section 3.5.2: with a bag, CRED_x is the end-entity
 * certificate, which the receiver has to find among certificates in no
 * particular order. Every candidate is tried; exactly one may verify. */
static int resolve_x5bag(const struct edhoc_cred_store *store, const struct edhoc_id_cred *id,
                         struct edhoc_cred *out)
{
    bool by_x5t = (id->labels & EDHOC_ID_CRED_LABEL_BIT(EDHOC_ID_CRED_X5T)) != 0;
    struct cred_x509_bag bag;
    int rc = cred_x509_bag_open(&bag, id->certs, id->cert_lens, id->n_certs);
    if (rc != 0)
        return rc;
    int found = -1, best_err = EDHOC_CRED_ERR_UNKNOWN;
    struct edhoc_cred *tmp = &bag.scratch;
    for (size_t i = 0; i < bag.n; i++) {
        if (by_x5t ? !x5t_names(id, bag.der[i], bag.len[i]) : bag.is_ca[i])
            continue;
        /* A configured credential with this leaf is trusted as configured,
         * as for an x5chain. */
        int c_rc = EDHOC_CRED_ERR_UNKNOWN;
        for (size_t c = 0; c < store->n_creds; c++) {
            const struct edhoc_cred *cc = &store->creds[c];
            if (cc->type == EDHOC_CRED_X509 && cc->n_certs != 0 &&
                der_equal(cc->certs[0], cc->cert_lens[0], bag.der[i], bag.len[i])) {
                c_rc = accept_configured(store, cc, tmp);
                break;
            }
        }
        if (c_rc == EDHOC_CRED_ERR_UNKNOWN)
            c_rc = cred_x509_bag_chain(&bag, store, i, tmp);
        if (c_rc == 0) {
            if (found >= 0) {
                rc = EDHOC_CRED_ERR_AMBIGUOUS;
                goto done;
            }
            found = (int)i;
            edhoc_cred_copy(out, tmp);
        } else if (bag_error_rank(c_rc) > bag_error_rank(best_err)) {
            best_err = c_rc;
        }
    }
    rc = found >= 0 ? 0 : best_err;
done:
    cred_x509_bag_close(&bag);
    if (rc != 0)
        memset(out, 0, sizeof *out);
    return rc;
}

/* A CWT is the issuer's word on a key: its signature must verify with a
 * key configured here (a CCS, a certificate, or an anchor's), found by
 * the CWT's issuer kid. */
static int resolve_kcwt(const struct edhoc_cred_store *store, const struct edhoc_id_cred *id,
                        struct edhoc_cred *out)
{
    int rc = edhoc_cred_from_cwt(out, id->cwt, id->cwt_len);
    if (rc != 0)
        return EDHOC_CRED_ERR_FORMAT;
    for (size_t i = 0; i < store->n_creds; i++) {
        if (edhoc_cred_equal(&store->creds[i], out)) {
            rc = cred_check_time(out, store->now);
            goto done;
        }
    }
    int alg;
    const uint8_t *ikid;
    size_t ikid_len;
    rc = edhoc_cwt_issuer(out, &alg, &ikid, &ikid_len);
    if (rc != 0)
        goto done;
    rc = EDHOC_CRED_ERR_UNKNOWN; /* no issuer key of ours fits */
    for (size_t i = 0; i < store->n_creds + store->n_anchors && rc != 0; i++) {
        const struct edhoc_cred *k =
            i < store->n_creds ? &store->creds[i] : &store->anchors[i - store->n_creds];
        if (ikid_len != 0 && (k->kid_len != ikid_len || memcmp(k->kid, ikid, ikid_len) != 0))
            continue;
        if (cred_cwt_alg_curve(alg, k->curve) != 0)
            continue;
        int v = edhoc_cwt_verify(out, k->curve, k->pub, k->pub_len);
        if (v == 0)
            rc = 0;
        else if (rc == EDHOC_CRED_ERR_UNKNOWN)
            rc = v; /* an issuer whose signature does not verify says more */
    }
    if (rc == 0)
        rc = cred_check_time(out, store->now);
    if (rc == EDHOC_CRED_ERR_UNKNOWN)
        rc = EDHOC_CRED_ERR_UNTRUSTED; /* a CWT from an issuer nobody here knows */
done:
    if (rc != 0)
        memset(out, 0, sizeof *out);
    return rc;
}

int edhoc_cred_store_resolve(const struct edhoc_cred_store *store, const uint8_t *id_cred,
                             size_t len, struct edhoc_cred *out)
{
    struct edhoc_id_cred id;
    int rc = edhoc_id_cred_parse(id_cred, len, &id);
    if (rc != 0)
        return rc;
    switch (id.type) {
    case EDHOC_ID_CRED_KID: return resolve_kid(store, &id, out);
    case EDHOC_ID_CRED_X5T: return resolve_x5t(store, &id, out);
    case EDHOC_ID_CRED_KCCS: return resolve_kccs(store, &id, out);
    case EDHOC_ID_CRED_X5CHAIN: return resolve_x5chain(store, &id, out);
    case EDHOC_ID_CRED_X5BAG: return resolve_x5bag(store, &id, out);
    case EDHOC_ID_CRED_KCWT: return resolve_kcwt(store, &id, out);
    }
    return EDHOC_CRED_ERR_FORMAT;
}
