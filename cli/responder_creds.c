/*
 * The responder's credentials and the configuration for each message_1:
 * one per credential and method (explicit), or per method and suite
 * (--demo), built when a message_1 first needs it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "commands.h"
#include "daemon.h"
#include "demo_creds.h"
#include "interop_log.h"
#include "responder_creds.h"
#include "util.h"

const int responder_known_suites[N_SUITE_IDS] = {0, 1, 2, 3, 4, 5, 6, 24, 25};

static int suite_index(int suite)
{
    for (int i = 0; i < N_SUITE_IDS; i++) {
        if (responder_known_suites[i] == suite)
            return i;
    }
    return -1;
}

static bool supported(const struct responder *r, int suite)
{
    for (size_t i = 0; i < r->n_supported; i++) {
        if (r->supported[i] == suite)
            return true;
    }
    return false;
}

static void idents_free(struct responder *r)
{
    for (size_t i = 0; i < r->n_idents; i++) {
        if (r->idents[i].ready) {
            /* The shared trust store is not the identity's to free. */
            r->idents[i].side.store = NULL;
            cli_edhoc_side_free(&r->idents[i].side);
        }
    }
    free(r->idents);
    r->idents = NULL;
    r->n_idents = 0;
}

/* The suites a credential can serve for method m, among the supported. */
static size_t fitting_suites(const struct responder *r, const struct edhoc_cred *cred, int m,
                             int *out)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_supported && n < EDHOC_MAX_SUITES; i++) {
        if (edhoc_cred_check_key_type(cred, m, false, r->supported[i]) == 0)
            out[n++] = r->supported[i];
    }
    return n;
}

static void ident_finish(struct responder *r, struct ident *id, int m)
{
    struct edhoc_config *cfg = &id->side.cfg;
    size_t n = fitting_suites(r, &id->side.cred, m, id->suites);
    if (r->method_suites_known[m]) {
        cfg->suites = r->method_suites[m];
        cfg->n_suites = r->n_method_suites[m];
    } else {
        /* Until method_suites() has run: only it hands out configurations. */
        cfg->suites = id->suites;
        cfg->n_suites = n;
    }
    cfg->accept_methods = 1u << m;
    cfg->method = m;
    cfg->tolerate = r->o.side[CLI_SIDE_R].tolerate;
    cfg->emulate = r->o.side[CLI_SIDE_R].emulate;
    if (r->ilog) {
        cfg->trace = interop_log_trace;
        cfg->trace_ctx = r->ilog;
    }
    id->ready = n > 0;
}

/* Demo mode: the built-in credential cli_edhoc_side_setup picks for the
 * responder of this method and suite. */
static struct ident *demo_ident(struct responder *r, int m, int suite)
{
    int si = suite_index(suite);
    if (si < 0)
        return NULL;
    struct ident *id = &r->idents[(size_t)m * N_SUITE_IDS + (size_t)si];
    if (id->ready)
        return id;
    id->opts = r->o;
    struct cli_edhoc_opts *o = &id->opts;
    o->method = m;
    o->suites[0] = suite;
    o->n_suites = 1;
    o->n_suites_r = 0;
    /* Quiet: a suite without a built-in credential is simply not served. */
    int saved = dup(2), devnull = -1;
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        devnull = fileno(null);
        fflush(stderr);
        dup2(devnull, 2);
    }
    int rc = cli_edhoc_side_setup(o, CLI_SIDE_R, &id->side);
    if (rc && o->side[CLI_SIDE_R].id_cred_type) {
        /* --id-cred names a type this credential cannot have (kccs of a
         * certificate, x5t of a CCS): it keeps its default. */
        cli_edhoc_side_free(&id->side);
        o->side[CLI_SIDE_R].id_cred_type = 0;
        rc = cli_edhoc_side_setup(o, CLI_SIDE_R, &id->side);
    }
    if (null) {
        fflush(stderr);
        dup2(saved, 2);
        fclose(null);
    }
    if (saved >= 0)
        close(saved);
    if (rc) {
        cli_edhoc_side_free(&id->side);
        memset(&id->side, 0, sizeof id->side);
        return NULL;
    }
    /* responder_creds_load built r->trust as cli_edhoc_side_setup builds each
     * side's (the --trust files, else the demo set): every demo
     * configuration of every method is set up once a message_1 of the
     * method comes (method_suites), so one copy serves them all rather
     * than about 200 KB each. */
    free(id->side.store);
    id->side.store = r->trust;
    ident_finish(r, id, m);
    if (!id->ready) {
        id->side.store = NULL;
        cli_edhoc_side_free(&id->side);
        memset(&id->side, 0, sizeof id->side);
        return NULL;
    }
    return id;
}

static struct ident *explicit_ident(struct responder *r, size_t c, int m)
{
    struct ident *id = &r->idents[c * 4 + (size_t)m];
    if (id->ready)
        return id;
    struct cli_side *side = &id->side;
    memset(side, 0, sizeof *side);
    side->role = CLI_SIDE_R;
    edhoc_cred_copy(&side->cred, &r->creds[c]);
    side->key = r->keys[c];
    int idt = r->o.side[CLI_SIDE_R].id_cred_type;
    if (idt == 0)
        idt = side->cred.type == EDHOC_CRED_X509 ? EDHOC_ID_CRED_X5T : EDHOC_ID_CRED_KID;
    if (edhoc_id_cred_encode(&side->cred, (enum edhoc_id_cred_type)idt, 0, side->id_cred,
                             sizeof side->id_cred, &side->id_cred_len)) {
        idt = side->cred.type == EDHOC_CRED_X509 ? EDHOC_ID_CRED_X5T : EDHOC_ID_CRED_KID;
        if (edhoc_id_cred_encode(&side->cred, (enum edhoc_id_cred_type)idt, 0, side->id_cred,
                                 sizeof side->id_cred, &side->id_cred_len))
            return NULL;
    }
    side->store = r->trust;
    side->cred_origin = r->cred_paths[c];
    struct edhoc_config *cfg = &side->cfg;
    cfg->ops = edhoc_crypto_default();
    cfg->cred = &side->cred;
    cfg->key = &side->key;
    cfg->id_cred = side->id_cred;
    cfg->id_cred_len = side->id_cred_len;
    for (int x = 2; x <= 4; x += 2) {
        if (r->o.n_ead[x]) {
            cfg->ead[x] = r->o.ead[x];
            cfg->n_ead[x] = r->o.n_ead[x];
        }
    }
    cfg->ead_receive = cli_edhoc_ead_receive;
    cfg->ead_ctx = &r->o;
    ident_finish(r, id, m);
    return id->ready ? id : NULL;
}

/* Whether some credential serves suite for method m (building its
 * configuration). */
static bool suite_served(struct responder *r, int m, int suite)
{
    if (r->demo)
        return demo_ident(r, m, suite) != NULL;
    for (size_t c = 0; c < r->n_creds; c++) {
        if (edhoc_cred_check_key_type(&r->creds[c], m, false, suite) == 0 &&
            explicit_ident(r, c, m))
            return true;
    }
    return false;
}

/* Every configuration of method m accepts the suites of method_suites[m],
 * not only those of its own credential: the core accepts a message_1
 * only when its selected suite is the first of SUITES_I in that set
 * (RFC 9528 Section 5.2.3), and answers error code 2 with that set when
 * SUITES_I has none of it (Section 6.3: "it SHOULD include all its
 * supported cipher suites"). With one credential's suites, a message_1
 * preferring a suite another credential serves was accepted with a less
 * preferred one, and SUITES_R named one credential's suites. */
static void method_suites(struct responder *r, int m)
{
    if (r->method_suites_known[m])
        return;
    size_t n = 0;
    for (size_t i = 0; i < r->n_supported; i++) {
        if (suite_served(r, m, r->supported[i]))
            r->method_suites[m][n++] = r->supported[i];
    }
    r->n_method_suites[m] = n;
    r->method_suites_known[m] = true;
    for (size_t i = 0; i < r->n_idents; i++) {
        struct ident *id = &r->idents[i];
        if (id->ready && id->side.cfg.method == m) {
            id->side.cfg.suites = r->method_suites[m];
            id->side.cfg.n_suites = n;
        }
    }
}

const struct edhoc_config *responder_creds_select(void *user, int m, int suite,
                                                  edhoc_cred_resolver *resolve, void **resolve_ctx)
{
    struct responder *r = user;
    if (m < 0 || m > 3 || (r->o.accept_methods && !(r->o.accept_methods & (1u << m))))
        return NULL;
    method_suites(r, m);
    struct ident *id = NULL;
    if (r->demo) {
        if (supported(r, suite))
            id = demo_ident(r, m, suite);
        for (size_t i = 0; !id && i < r->n_supported; i++)
            id = demo_ident(r, m, r->supported[i]);
    } else {
        for (size_t c = 0; c < r->n_creds && !id; c++) {
            if (supported(r, suite) &&
                edhoc_cred_check_key_type(&r->creds[c], m, false, suite) == 0)
                id = explicit_ident(r, c, m);
        }
        /* No credential for that suite: one that fits the method answers,
         * so the initiator learns our suites (error code 2). */
        for (size_t c = 0; c < r->n_creds && !id; c++)
            id = explicit_ident(r, c, m);
    }
    if (!id)
        return NULL;
    *resolve = cli_edhoc_resolve;
    *resolve_ctx = &id->side;
    return &id->side.cfg;
}

int responder_creds_load(struct responder *r)
{
    char why[512] = "";
    struct edhoc_cred *creds = NULL;
    struct edhoc_key *keys = NULL;
    struct edhoc_cred_store *trust = calloc(1, sizeof *trust);
    if (!trust)
        return CLI_EXIT_INTERNAL;
    edhoc_cred_store_init(trust);
    size_t n = r->n_cred_paths;
    if (n) {
        creds = calloc(n, sizeof *creds);
        keys = calloc(n, sizeof *keys);
        if (!creds || !keys)
            goto oom;
    }
    for (size_t i = 0; i < n; i++) {
        int rc = edhoc_cred_load_file(&creds[i], r->cred_paths[i], why, sizeof why);
        if (!rc)
            rc = edhoc_key_load_file(&keys[i], r->key_paths[i], creds[i].curve, why, sizeof why);
        if (!rc && edhoc_key_check_cred(&keys[i], &creds[i])) {
            snprintf(why, sizeof why, "key %s does not belong to credential %s", r->key_paths[i],
                     r->cred_paths[i]);
            rc = -1;
        }
        /* --kid names the one credential (a certificate included): the
         * responder's ID_CRED_R can then be a kid (RFC 9528 Section 3.5.3). */
        if (!rc && r->o.side[CLI_SIDE_R].kid_len)
            rc = edhoc_cred_set_kid(&creds[i], r->o.side[CLI_SIDE_R].kid,
                                    r->o.side[CLI_SIDE_R].kid_len);
        if (rc) {
            cli_log(LOG_ERR, "credential: %s", why[0] ? why : edhoc_cred_strerror(rc));
            goto fail;
        }
    }
    for (size_t i = 0; i < r->o.n_trust; i++) {
        int rc = edhoc_cred_store_add_file(trust, r->o.trust_paths[i], why, sizeof why);
        if (rc) {
            cli_log(LOG_ERR, "--trust: %s", why[0] ? why : edhoc_cred_strerror(rc));
            goto fail;
        }
    }
    if (r->o.n_trust == 0 && n == 0)
        edhoc_demo_trust(trust);

    /* Swap in. */
    idents_free(r);
    if (r->keys)
        edhoc_wipe(r->keys, r->n_creds * sizeof *r->keys);
    free(r->creds);
    free(r->keys);
    free(r->trust);
    r->creds = creds;
    r->keys = keys;
    r->n_creds = n;
    r->trust = trust;
    r->demo = n == 0;
    r->n_idents = r->demo ? 4 * N_SUITE_IDS : 4 * n;
    memset(r->method_suites_known, 0, sizeof r->method_suites_known);
    r->idents = calloc(r->n_idents, sizeof *r->idents);
    if (!r->idents)
        return CLI_EXIT_INTERNAL;
    return 0;
oom:
    cli_log(LOG_ERR, "out of memory");
fail:
    if (keys)
        edhoc_wipe(keys, n * sizeof *keys);
    free(creds);
    free(keys);
    free(trust);
    return CLI_EXIT_INPUT;
}

void responder_creds_free(struct responder *r)
{
    idents_free(r);
    if (r->keys)
        edhoc_wipe(r->keys, r->n_creds * sizeof *r->keys);
    free(r->creds);
    free(r->keys);
    free(r->trust);
    r->creds = NULL;
    r->keys = NULL;
    r->trust = NULL;
    r->n_creds = 0;
}
