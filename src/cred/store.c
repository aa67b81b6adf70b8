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
}

void edhoc_cred_store_set_time(struct edhoc_cred_store *store, int64_t unix_seconds)
{
    store->now = unix_seconds;
}

int edhoc_cred_store_add_cred(struct edhoc_cred_store *store, const struct edhoc_cred *cred)
{
    if (store->n_creds >= EDHOC_CRED_STORE_MAX_CREDS)
        return EDHOC_CRED_ERR_TOO_LARGE;
    edhoc_cred_copy(&store->creds[store->n_creds++], cred);
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
 * one must still be inside its validity window. */
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
    for (size_t i = 0; i < store->n_creds; i++) {
        const struct edhoc_cred *c = &store->creds[i];
        if (c->type != EDHOC_CRED_X509 || c->n_certs == 0)
            continue;
        uint8_t h[32];
        size_t hl;
        if (edhoc_cred_cert_hash(id->x5t_alg, c->certs[0], c->cert_lens[0], h, &hl) != 0)
            continue;
        if (hl == id->x5t_hash_len && memcmp(h, id->x5t_hash, hl) == 0)
            return accept_configured(store, c, out);
    }
    return EDHOC_CRED_ERR_UNKNOWN;
}

static int resolve_kccs(const struct edhoc_cred_store *store, const struct edhoc_id_cred *id,
                        struct edhoc_cred *out)
{
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

static int resolve_x5chain(const struct edhoc_cred_store *store,
                           const struct edhoc_id_cred *id, struct edhoc_cred *out)
{
    int rc = edhoc_cred_from_der_chain(out, id->certs, id->cert_lens, id->n_certs);
    if (rc != 0)
        return rc == EDHOC_CRED_ERR_TOO_LARGE ? EDHOC_CRED_ERR_FORMAT : rc;
    for (size_t i = 0; i < store->n_creds; i++) {
        const struct edhoc_cred *c = &store->creds[i];
        if (c->type == EDHOC_CRED_X509 && edhoc_cred_equal(c, out)) {
            rc = cred_x509_check_time(out, store->now);
            if (rc == 0)
                edhoc_cred_set_kid(out, c->kid, c->kid_len); /* the configured name */
            goto done;
        }
    }
    rc = cred_x509_verify_chain(store, out, store->now);
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
