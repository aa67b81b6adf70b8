/*
 * What the cells of the interop matrix say about the device together:
 * the framing it does not take, and what it supports for EDHOC and for
 * OSCORE (interop_matrix.h).
 */
#include <stdlib.h>
#include <string.h>

#include "interop_internal.h"

/* A.2 cells the device could not parse, when the bare framing worked
 * with it and A.2 never did: the device does not take the A.2 framing. */
void settle_framing(struct interop_cell *cells, size_t n)
{
    bool a2_ok = false, bare_ok = false;
    for (size_t i = 0; i < n; i++) {
        if (cells[i].edhoc_ok && is_bare(&cells[i]))
            bare_ok = true;
        else if (cells[i].edhoc_ok)
            a2_ok = true;
    }
    if (a2_ok || !bare_ok)
        return;
    for (size_t i = 0; i < n; i++) {
        struct interop_cell *c = &cells[i];
        if (c->outcome != INTEROP_FAILED || !c->a2_unparsed)
            continue;
        set_unsupported(c, INTEROP_NS_FRAMING);
        set_text(c->reason, sizeof c->reason,
                 "the peer does not take the A.2 framing (CBOR true before message_1, C_R before "
                 "message_3): it could not parse our message_1, and the bare framing works with "
                 "it");
        compose_result(c);
    }
}

static void add_int(int *v, int *n, int x)
{
    for (int k = 0; k < *n; k++)
        if (v[k] == x)
            return;
    if (*n < INTEROP_MAX_LIST)
        v[(*n)++] = x;
}

static void support_add(const struct interop_matrix_opts *o, struct interop_support *s,
                        const struct interop_cell *c)
{
    s->cells++;
    if (c->method >= 0 && c->method < 4)
        s->method[c->method] = true;
    for (int k = 0; k < o->n_id_creds; k++)
        if (!strcmp(o->id_creds[k], c->id_cred))
            s->id_cred[k] = true;
    add_int(s->suites, &s->n_suites, c->suite);
    if (is_bare(c))
        s->bare = true;
    else
        s->a2 = true;
}

void summarize(const struct interop_matrix_opts *o, const struct interop_cell *cells, size_t n,
               struct interop_summary *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < n; i++) {
        const struct interop_cell *c = &cells[i];
        switch (c->outcome) {
        case INTEROP_OK: s->ok++; break;
        case INTEROP_FAILED: s->failed++; break;
        case INTEROP_NOT_SUPPORTED: s->not_supported++; break;
        case INTEROP_SKIPPED: s->skipped++; break;
        }
        /* A variant counts as tried only where the device said something
         * about it or its plain twin completed the handshake: otherwise
         * the failure says nothing about the variant. */
        bool twin_ok = false;
        for (size_t j = 0; j < n; j++) {
            const struct interop_cell *t = &cells[j];
            if (t->method == c->method && t->suite == c->suite && !strcmp(t->id_cred, c->id_cred) &&
                !t->message_4 && !t->combined &&
                (c->combined ? !is_bare(t) : t->framing == c->framing) && t->edhoc_ok)
                twin_ok = true;
        }
        /* A cell that ended for another reason (skipped, a method, suite
         * or framing refused) says nothing about its variant either. */
        if (c->outcome == INTEROP_SKIPPED || c->unsupported != INTEROP_NS_NONE)
            twin_ok = false;
        if (c->message_4 && (c->edhoc_ok || twin_ok || c->unsupported == INTEROP_NS_M4)) {
            s->m4_tried++;
            s->m4_ok += c->edhoc_ok;
            s->m4_ns += c->unsupported == INTEROP_NS_M4;
        }
        if (c->combined && (c->edhoc_ok || twin_ok || c->unsupported == INTEROP_NS_COMBINED)) {
            s->comb_tried++;
            s->comb_ok += c->edhoc_ok;
            s->comb_ns += c->unsupported == INTEROP_NS_COMBINED;
        }
        if (c->unsupported == INTEROP_NS_METHOD && c->method >= 0 && c->method < 4)
            s->ns_method[c->method] = true;
        if (c->unsupported == INTEROP_NS_SUITE)
            add_int(s->ns_suites, &s->n_ns_suites, c->suite);
        if (c->unsupported == INTEROP_NS_FRAMING) {
            if (is_bare(c))
                s->ns_bare = true;
            else
                s->ns_a2 = true;
        }
        if (c->edhoc_ok)
            support_add(o, &s->edhoc, c);
        if (c->outcome == INTEROP_OK && !o->request_none)
            support_add(o, &s->oscore, c);
    }
    /* What worked in some cell is not "not supported" for the summary. */
    for (int m = 0; m < 4; m++)
        s->ns_method[m] &= !s->edhoc.method[m];
    int k = 0;
    for (int i = 0; i < s->n_ns_suites; i++) {
        bool worked = false;
        for (int j = 0; j < s->edhoc.n_suites; j++)
            worked |= s->edhoc.suites[j] == s->ns_suites[i];
        if (!worked)
            s->ns_suites[k++] = s->ns_suites[i];
    }
    s->n_ns_suites = k;
    s->ns_a2 &= !s->edhoc.a2;
    s->ns_bare &= !s->edhoc.bare;
}

const char *interop_support_text(int ok, int not_supported, int tried)
{
    return tried == 0 ? "not tested" : ok ? "yes" : not_supported ? "not supported" : "no";
}
