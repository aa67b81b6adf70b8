/*
 * The credential store: which peers are accepted. A kid, x5t or kccs is
 * only ever a pointer to something configured here; an x5chain may also be
 * a chain that verifies to one of the anchors.
 */
#include <string.h>

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

/* A configured credential is trusted as configured, except that an X.509
 * one must still be inside its validity window (the cached one: no
 * decoding). */
static int accept_configured(const struct edhoc_cred_store *store,
                             const struct edhoc_cred *cred, struct edhoc_cred *out)
{
    if (cred->type == EDHOC_CRED_X509) {
        int rc = cred_x509_check_time(cred, store->now);
        if (rc != 0)
            return rc;
    }
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
static int accept_configured_chain(const struct edhoc_cred_store *store,
                                   const struct edhoc_cred *c,
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

static int resolve_x5chain(const struct edhoc_cred_store *store,
                           const struct edhoc_id_cred *id, struct edhoc_cred *out)
{
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

int edhoc_cred_store_resolve(const struct edhoc_cred_store *store, const uint8_t *id_cred,
                             size_t len, struct edhoc_cred *out)
{
    struct edhoc_id_cred id;
    int rc = edhoc_id_cred_parse(id_cred, len, &id);
    if (rc != 0)
        return rc;
    switch (id.type) {
    case EDHOC_ID_CRED_KID:
        return resolve_kid(store, &id, out);
    case EDHOC_ID_CRED_X5T:
        return resolve_x5t(store, &id, out);
    case EDHOC_ID_CRED_KCCS:
        return resolve_kccs(store, &id, out);
    case EDHOC_ID_CRED_X5CHAIN:
        return resolve_x5chain(store, &id, out);
    }
    return EDHOC_CRED_ERR_FORMAT;
}
