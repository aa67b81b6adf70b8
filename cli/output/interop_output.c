/*
 * The output of `edhoc-cli interop URI`: the matrix the engine returned
 * (src/tools/interop) as a Markdown table with its summary, or as the JSON
 * of docs/json/interop.schema.json (interop_output.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "interop_output.h"
#include "json_out.h"
#include "progress.h"
#include "util.h"

static void md_cell(FILE *f, const char *s)
{
    /* '|' would split the Markdown cell. */
    for (; *s; s++)
        fputc(*s == '|' ? '/' : *s, f);
}

static const char *variant_name(const struct interop_cell *c)
{
    if (c->combined)
        return "A.2 combined";
    return c->framing_used[0] ? c->framing_used : interop_framing_name(c->framing);
}

/* What worked in some dimension. */
static const char *request_name(const struct interop_matrix_opts *o)
{
    return o->request ? o->request : INTEROP_DEFAULT_REQUEST;
}

/* "methods: 0 3", "suites: 2", ... of one support set. */
static void print_support(const struct interop_matrix_opts *o, const struct interop_support *s,
                          const struct interop_summary *ns)
{
    int any = 0;
    printf("  methods:");
    for (int m = 0; m < 4; m++)
        if (s->method[m])
            any = printf(" %d", m);
    printf("%s", any ? "" : " none");
    if (ns) {
        any = 0;
        for (int m = 0; m < 4; m++)
            if (ns->ns_method[m])
                any = printf("%s%d", any ? " " : " (not supported: ", m);
        printf("%s", any ? ")" : "");
    }
    printf("\n  suites:");
    for (int k = 0; k < s->n_suites; k++)
        printf(" %d", s->suites[k]);
    printf("%s", s->n_suites ? "" : " none");
    if (ns && ns->n_ns_suites) {
        for (int k = 0; k < ns->n_ns_suites; k++)
            printf("%s%d", k ? " " : " (not supported: ", ns->ns_suites[k]);
        printf(")");
    }
    printf("\n  ID_CRED types:");
    any = 0;
    for (int k = 0; k < o->n_id_creds; k++)
        if (s->id_cred[k])
            any = printf(" %s", o->id_creds[k]);
    printf("%s\n", any ? "" : " none");
}

static void print_framings(const struct interop_support *s, const struct interop_summary *ns)
{
    printf("  framings:%s%s%s", s->a2 ? " A.2" : "", s->bare ? " bare" : "",
           s->a2 || s->bare ? "" : " none");
    if (ns && (ns->ns_a2 || ns->ns_bare))
        printf(" (not supported: %s%s%s)", ns->ns_a2 ? "A.2" : "",
               ns->ns_a2 && ns->ns_bare ? " " : "", ns->ns_bare ? "bare" : "");
    printf("\n");
}

static void print_table(const struct interop_matrix_opts *o, const struct interop_cell *cells,
                        size_t n, const struct interop_summary *s, size_t planned)
{
    printf("EDHOC interop matrix against %s (each cell bounded by %g s)\n\n", o->uri,
           (double)o->timeout_ms / 1000.0);
    if (cli_interrupted())
        printf("interrupted: partial results (%zu of %zu cells completed)\n\n", n, planned);
    printf("| # | method | suite | ID_CRED | message_4 | framing | outcome | EDHOC | OSCORE | "
           "reason | EDHOC bytes | CoAP bytes | ms |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        const struct interop_cell *c = &cells[i];
        printf("| %zu | %d | %d | %s | %s | %s | %s | ", i + 1, c->method, c->suite, c->id_cred,
               c->message_4 ? "yes" : "no", variant_name(c), interop_outcome_names[c->outcome]);
        md_cell(stdout, c->edhoc[0] ? c->edhoc : "-");
        printf(" | ");
        md_cell(stdout, c->oscore[0] ? c->oscore : "-");
        printf(" | ");
        md_cell(stdout, c->reason[0] ? c->reason : "-");
        char eb[24] = "-", cb[24] = "-";
        if (c->edhoc_bytes >= 0)
            snprintf(eb, sizeof eb, "%ld", c->edhoc_bytes);
        if (c->coap_bytes >= 0)
            snprintf(cb, sizeof cb, "%ld", c->coap_bytes);
        printf(" | %s | %s | %ld |\n", eb, cb, c->ms);
    }
    printf("\nSummary: %zu ok, %zu failed, %zu not supported, %zu skipped of %zu cells\n", s->ok,
           s->failed, s->not_supported, s->skipped, n);
    printf("EDHOC: the handshake completed in %zu cell%s; the device supports:\n", s->edhoc.cells,
           s->edhoc.cells == 1 ? "" : "s");
    print_support(o, &s->edhoc, s);
    printf("  message_4: %s\n  combined request (RFC 9668): %s\n",
           interop_support_text(s->m4_ok, s->m4_ns, s->m4_tried),
           interop_support_text(s->comb_ok, s->comb_ns, s->comb_tried));
    print_framings(&s->edhoc, s);
    if (o->request_none) {
        printf("OSCORE: not tested (--request none: EDHOC only)\n");
    } else if (s->oscore.cells) {
        printf("OSCORE: a protected answer to %s in %zu of those; with:\n", request_name(o),
               s->oscore.cells);
        print_support(o, &s->oscore, NULL);
        print_framings(&s->oscore, NULL);
    } else if (s->edhoc.cells) {
        printf("OSCORE: no protected answer to %s after any completed handshake (a device that "
               "does EDHOC only: --request none)\n",
               request_name(o));
    } else {
        printf("OSCORE: not reached (no handshake completed)\n");
    }
    if (o->trace_dir)
        printf("Traces: %s/<cell>.txt, datagrams: %s/<cell>.pcap\n", o->trace_dir, o->trace_dir);
}

/* ---- JSON (docs/json/interop.schema.json) ---- */

static json_t *json_int_list(const int *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

static json_t *json_framings(bool a2, bool bare)
{
    json_t *a = json_array();
    if (a2)
        json_array_append_new(a, json_string("A.2"));
    if (bare)
        json_array_append_new(a, json_string("bare"));
    return a;
}

static void json_support(json_t *obj, const struct interop_matrix_opts *o,
                         const struct interop_support *s)
{
    cli_json_set(obj, "cells", json_integer((json_int_t)s->cells));
    json_t *methods = json_array();
    for (int m = 0; m < 4; m++)
        if (s->method[m])
            json_array_append_new(methods, json_integer(m));
    cli_json_set(obj, "methods", methods);
    cli_json_set(obj, "suites", json_int_list(s->suites, s->n_suites));
    json_t *ids = json_array();
    for (int k = 0; k < o->n_id_creds; k++)
        if (s->id_cred[k])
            json_array_append_new(ids, json_string(o->id_creds[k]));
    cli_json_set(obj, "id_creds", ids);
    cli_json_set(obj, "framings", json_framings(s->a2, s->bare));
}

static json_t *json_cell(const struct interop_cell *c)
{
    json_t *j = json_object();
    cli_json_set(j, "cell", json_string(c->name));
    cli_json_set(j, "method", json_integer(c->method));
    cli_json_set(j, "suite", json_integer(c->suite));
    cli_json_set(j, "id_cred", json_string(c->id_cred));
    cli_json_set(j, "message_4", json_boolean(c->message_4));
    cli_json_set(
        j, "framing",
        json_string(c->framing_used[0] ? c->framing_used : interop_framing_name(c->framing)));
    cli_json_set(j, "combined", json_boolean(c->combined));
    cli_json_set(j, "outcome", json_string(interop_outcome_names[c->outcome]));
    cli_json_set(j, "failure",
                 c->outcome == INTEROP_FAILED ? json_string(interop_failure_names[c->failure])
                                              : json_null());
    cli_json_set(j, "unsupported",
                 c->unsupported != INTEROP_NS_NONE
                     ? json_string(interop_unsupported_names[c->unsupported])
                     : json_null());
    cli_json_set(j, "edhoc_completed", json_boolean(c->edhoc_ok));
    cli_json_set(j, "err_code", cli_json_int_or_null(c->err_code >= 0, c->err_code));
    cli_json_set(j, "edhoc_bytes", cli_json_int_or_null(c->edhoc_bytes >= 0, c->edhoc_bytes));
    cli_json_set(j, "coap_bytes", cli_json_int_or_null(c->coap_bytes >= 0, c->coap_bytes));
    cli_json_set(j, "ms", json_integer(c->ms));
    /* "a, b" back into a list. */
    json_t *tol = json_array();
    for (const char *p = c->tolerated; *p;) {
        size_t len = strcspn(p, ",");
        json_array_append_new(tol, json_stringn(p, len));
        p += len;
        while (*p == ',' || *p == ' ')
            p++;
    }
    cli_json_set(j, "tolerated", tol);
    /* The explanations, for a person: how each stage ended and why. */
    cli_json_set(j, "edhoc", cli_json_string_or_null(c->edhoc[0] ? c->edhoc : NULL));
    cli_json_set(j, "oscore", cli_json_string_or_null(c->oscore[0] ? c->oscore : NULL));
    cli_json_set(j, "result", json_string(c->result));
    cli_json_set(j, "reason", cli_json_string_or_null(c->reason[0] ? c->reason : NULL));
    return j;
}

static json_t *matrix_json(const struct interop_matrix_opts *o, const struct interop_cell *cells,
                           size_t n, const struct interop_summary *s, size_t planned)
{
    json_t *root = json_object();
    cli_json_set(root, "uri", json_string(o->uri));
    cli_json_set(root, "timeout_s", json_real((double)o->timeout_ms / 1000.0));
    cli_json_set(root, "framing",
                 json_string(o->framing == INTEROP_FR_BOTH ? "both"
                             : o->framing == INTEROP_FR_A2 ? "a2"
                                                           : interop_framing_name(o->framing)));
    cli_json_set(root, "request", o->request_none ? json_null() : json_string(request_name(o)));
    cli_json_set(root, "partial", json_boolean(cli_interrupted() != 0));
    cli_json_set(root, "cells_planned", json_integer((json_int_t)planned));
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_cell(&cells[i]));
    cli_json_set(root, "cells", arr);
    json_t *sum = json_object();
    cli_json_set(sum, "ok", json_integer((json_int_t)s->ok));
    cli_json_set(sum, "failed", json_integer((json_int_t)s->failed));
    cli_json_set(sum, "not_supported", json_integer((json_int_t)s->not_supported));
    cli_json_set(sum, "skipped", json_integer((json_int_t)s->skipped));
    json_t *edhoc = json_object();
    json_support(edhoc, o, &s->edhoc);
    cli_json_set(edhoc, "message_4",
                 json_string(interop_support_text(s->m4_ok, s->m4_ns, s->m4_tried)));
    cli_json_set(edhoc, "combined",
                 json_string(interop_support_text(s->comb_ok, s->comb_ns, s->comb_tried)));
    json_t *ns = json_object();
    json_t *ns_methods = json_array();
    for (int m = 0; m < 4; m++)
        if (s->ns_method[m])
            json_array_append_new(ns_methods, json_integer(m));
    cli_json_set(ns, "methods", ns_methods);
    cli_json_set(ns, "suites", json_int_list(s->ns_suites, s->n_ns_suites));
    cli_json_set(ns, "framings", json_framings(s->ns_a2, s->ns_bare));
    cli_json_set(edhoc, "not_supported", ns);
    cli_json_set(sum, "edhoc", edhoc);
    json_t *oscore = json_object();
    cli_json_set(oscore, "tested", json_boolean(!o->request_none));
    json_support(oscore, o, &s->oscore);
    cli_json_set(sum, "oscore", oscore);
    cli_json_set(root, "summary", sum);
    return root;
}

int interop_output_matrix(const struct interop_matrix_opts *o,
                          const struct interop_output_opts *out, const struct interop_matrix *m)
{
    const struct interop_cell *cells = m->cells;
    size_t n = m->n, planned = m->planned;
    if (!m->any_ran && !cli_interrupted()) {
        /* Every cell was refused by the initiator before it sent anything:
         * nothing of the device was tested. */
        fprintf(stderr, "edhoc-cli interop: no cell could be run with these credentials and "
                        "options (see the reasons)\n");
    }
    const struct interop_summary *s = &m->summary;
    json_t *root = out->json || out->json_out ? matrix_json(o, cells, n, s, planned) : NULL;
    if (out->json) {
        json_incref(root);
        cli_json_print(root, stdout);
    } else {
        print_table(o, cells, n, s, planned);
    }
    int rc = s->failed ? CLI_EXIT_FAILURE : m->any_ran ? CLI_EXIT_OK : CLI_EXIT_INPUT;
    if (out->json_out) {
        if (cli_json_write_file(root, out->json_out)) {
            fprintf(stderr, "edhoc-cli interop: --json-out %s: %s\n", out->json_out,
                    strerror(errno));
            rc = CLI_EXIT_INPUT;
        }
    }
    json_decref(root);
    if (cli_interrupted()) {
        if (!out->quiet)
            fprintf(stderr, "edhoc-cli interop: interrupted: partial results (%zu of %zu cells)\n",
                    n, planned);
        return cli_interrupt_exit_code();
    }
    return rc;
}
