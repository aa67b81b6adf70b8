/*
 * edhoc-cli interop --report DIR: the matrix of what the devices that
 * connected to `edhoc-cli responder --interop-log DIR` tried, as
 * src/tools/interop folds it from DIR/handshakes.jsonl (interop_devices.h),
 * printed as one table per device (peer host) with what the device
 * supports, or as the JSON of docs/json/interop-report.schema.json.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop_devices.h"
#include "interop_report.h"
#include "output/json_out.h"
#include "util.h"

static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s == '|' ? '/' : *s == '\n' ? ' ' : *s, f);
}

static const char *variant_name(const struct interop_device_row *w)
{
    return !strcmp(w->framing, "bare") ? "bare" : w->combined ? "A.2 combined" : "A.2";
}

static const char *support(int ok, int tried)
{
    return tried == 0 ? "not tested" : ok ? "yes" : "no";
}

static void suites_text(const struct interop_device_row *w, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < w->n_suites_i && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%d", i ? "," : "", w->suites_i[i]);
    if (o < cap)
        snprintf(out + o, cap - o, "%s -> %d", w->n_suites_i ? "" : "?", w->suite);
}

static void print_table(const struct interop_devices *r)
{
    printf("EDHOC interop report from %s/%s: %zu handshake%s from %zu device%s (we were the "
           "responder)\n",
           r->dir, INTEROP_LOG_FILE, r->handshakes, r->handshakes == 1 ? "" : "s", r->n_devices,
           r->n_devices == 1 ? "" : "s");
    if (r->skipped)
        printf("%zu unusable line%s skipped (see stderr)\n", r->skipped,
               r->skipped == 1 ? "" : "s");
    for (size_t di = 0; di < r->n_devices; di++) {
        const struct interop_device *d = &r->devices[di];
        printf("\n## Device %s\n\nID_CRED_I used:", d->host);
        for (int k = 0; k < d->n_id_creds; k++)
            printf("%s %s %s%s", k ? ";" : "", d->id_creds[k].type, d->id_creds[k].hex,
                   d->id_creds[k].truncated ? "..." : "");
        printf("%s\n\n", d->n_id_creds ? "" : " none (no message_3 was read)");
        printf("| # | method | suites (offered -> selected) | ID_CRED_I | message_4 | framing | "
               "attempts | ok | outcome | reason | EDHOC bytes | ms | last failure |\n");
        printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (size_t i = 0; i < d->n_rows; i++) {
            const struct interop_device_row *w = &d->rows[i];
            char suites[80];
            suites_text(w, suites, sizeof suites);
            printf("| %zu | %d | %s | %s | %s | %s | %ld | %ld | ", i + 1, w->method, suites,
                   w->id_cred, w->message_4 ? "yes" : "no", variant_name(w), w->attempts, w->ok);
            md_cell(stdout, w->result);
            printf(" | ");
            md_cell(stdout, w->reason[0] ? w->reason : "-");
            char eb[24] = "-", ms[24] = "-";
            if (w->edhoc_bytes >= 0)
                snprintf(eb, sizeof eb, "%ld", w->edhoc_bytes);
            if (w->ms >= 0)
                snprintf(ms, sizeof ms, "%ld", w->ms);
            printf(" | %s | %s | ", eb, ms);
            if (w->fail_trace[0] || w->fail_pcap[0])
                printf("%s%s%s |\n", w->fail_trace, w->fail_trace[0] && w->fail_pcap[0] ? ", " : "",
                       w->fail_pcap);
            else
                printf("- |\n");
        }
        struct interop_device_summary s;
        interop_device_summarize(d, &s);
        long attempts = 0;
        for (size_t i = 0; i < d->n_rows; i++)
            attempts += d->rows[i].attempts;
        printf("\nSummary: %zu ok, %zu failed of %zu combinations (%ld attempts; a combination "
               "is ok when its last attempt was)\n",
               s.ok, s.failed, d->n_rows, attempts);
        printf("The device supports:\n  methods:");
        int any = 0;
        for (int m = 0; m < 4; m++)
            if (s.method[m])
                any = printf(" %d", m);
        printf("%s\n  suites:", any ? "" : " none");
        for (int k = 0; k < s.n_suites; k++)
            printf(" %d", s.suites[k]);
        printf("%s\n  ID_CRED types:", s.n_suites ? "" : " none");
        for (int k = 0; k < s.n_id_creds; k++)
            printf(" %s", s.id_creds[k]);
        printf("%s\n  message_4: %s\n  combined request (RFC 9668): %s\n  framings:%s%s%s\n",
               s.n_id_creds ? "" : " none", support(s.m4_ok, s.m4_tried),
               support(s.comb_ok, s.comb_tried), s.a2_ok ? " A.2" : "", s.bare_ok ? " bare" : "",
               s.a2_ok || s.bare_ok ? "" : " none");
    }
    if (!r->n_devices)
        printf("\nNo handshake recorded yet.\n");
    else
        printf("\nTraces: %s/<id>.txt, datagrams: %s/<id>.pcap\n", r->dir, r->dir);
}

/* ---- JSON (docs/json/interop-report.schema.json) ---- */

static json_t *json_ints(const int *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

static json_t *json_name_or_null(const char *s)
{
    return s[0] ? json_string(s) : json_null();
}

static json_t *json_row(const struct interop_device_row *w)
{
    json_t *o = json_object();
    cli_json_set(o, "method", cli_json_int_or_null(w->method >= 0, w->method));
    cli_json_set(o, "suites_i", json_ints(w->suites_i, w->n_suites_i));
    cli_json_set(o, "suite", cli_json_int_or_null(w->suite >= 0, w->suite));
    cli_json_set(o, "id_cred", strcmp(w->id_cred, "-") ? json_string(w->id_cred) : json_null());
    cli_json_set(o, "message_4", json_boolean(w->message_4));
    cli_json_set(o, "framing", json_string(w->framing));
    cli_json_set(o, "combined", json_boolean(w->combined));
    cli_json_set(o, "attempts", json_integer(w->attempts));
    cli_json_set(o, "ok", json_integer(w->ok));
    cli_json_set(o, "outcome", json_string(w->outcome));
    cli_json_set(o, "err_code", cli_json_int_or_null(w->err_code >= 0, w->err_code));
    cli_json_set(o, "suites_r", json_ints(w->suites_r, w->n_suites_r));
    cli_json_set(o, "last_id", json_integer((json_int_t)w->last_id));
    cli_json_set(o, "edhoc_bytes", cli_json_int_or_null(w->edhoc_bytes >= 0, w->edhoc_bytes));
    cli_json_set(o, "ms", cli_json_int_or_null(w->ms >= 0, w->ms));
    cli_json_set(o, "failure_trace", json_name_or_null(w->fail_trace));
    cli_json_set(o, "failure_pcap", json_name_or_null(w->fail_pcap));
    /* For a person: how the last attempt ended and why. */
    cli_json_set(o, "result", json_string(w->result));
    cli_json_set(o, "reason", json_name_or_null(w->reason));
    return o;
}

static json_t *report_json(const struct interop_devices *r)
{
    size_t ok = 0, failed = 0;
    json_t *root = json_object();
    cli_json_set(root, "dir", json_string(r->dir));
    cli_json_set(root, "handshakes", json_integer((json_int_t)r->handshakes));
    cli_json_set(root, "skipped_lines", json_integer((json_int_t)r->skipped));
    json_t *devs = json_array();
    for (size_t di = 0; di < r->n_devices; di++) {
        const struct interop_device *d = &r->devices[di];
        json_t *dev = json_object();
        cli_json_set(dev, "host", json_string(d->host));
        json_t *ids = json_array();
        for (int k = 0; k < d->n_id_creds; k++) {
            json_t *id = json_object();
            cli_json_set(id, "type", json_string(d->id_creds[k].type));
            cli_json_set(id, "hex", json_string(d->id_creds[k].hex));
            cli_json_set(id, "truncated", json_boolean(d->id_creds[k].truncated));
            json_array_append_new(ids, id);
        }
        cli_json_set(dev, "id_creds_i", ids);
        json_t *rows = json_array();
        for (size_t i = 0; i < d->n_rows; i++)
            json_array_append_new(rows, json_row(&d->rows[i]));
        cli_json_set(dev, "rows", rows);
        struct interop_device_summary s;
        interop_device_summarize(d, &s);
        ok += s.ok;
        failed += s.failed;
        json_t *sum = json_object();
        cli_json_set(sum, "ok", json_integer((json_int_t)s.ok));
        cli_json_set(sum, "failed", json_integer((json_int_t)s.failed));
        json_t *methods = json_array();
        for (int m = 0; m < 4; m++)
            if (s.method[m])
                json_array_append_new(methods, json_integer(m));
        cli_json_set(sum, "methods", methods);
        cli_json_set(sum, "suites", json_ints(s.suites, s.n_suites));
        json_t *types = json_array();
        for (int k = 0; k < s.n_id_creds; k++)
            json_array_append_new(types, json_string(s.id_creds[k]));
        cli_json_set(sum, "id_creds", types);
        cli_json_set(sum, "message_4", json_string(support(s.m4_ok, s.m4_tried)));
        cli_json_set(sum, "combined", json_string(support(s.comb_ok, s.comb_tried)));
        json_t *fr = json_array();
        if (s.a2_ok)
            json_array_append_new(fr, json_string("A.2"));
        if (s.bare_ok)
            json_array_append_new(fr, json_string("bare"));
        cli_json_set(sum, "framings", fr);
        cli_json_set(dev, "summary", sum);
        json_array_append_new(devs, dev);
    }
    cli_json_set(root, "devices", devs);
    json_t *sum = json_object();
    cli_json_set(sum, "ok", json_integer((json_int_t)ok));
    cli_json_set(sum, "failed", json_integer((json_int_t)failed));
    cli_json_set(root, "summary", sum);
    return root;
}

static void on_skipped_line(void *user, const char *text)
{
    (void)user;
    fprintf(stderr, "edhoc-cli interop: %s\n", text);
}

int interop_report_run(const struct interop_report_opts *o)
{
    struct interop_devices r;
    memset(&r, 0, sizeof r);
    r.dir = o->dir;
    r.warn = on_skipped_line;
    char why[4400];
    int rc = CLI_EXIT_INPUT;
    if (interop_devices_read(&r, why, sizeof why) != 0) {
        fprintf(stderr, "edhoc-cli interop: --report %s: %s\n", o->dir, why);
    } else {
        json_t *root = o->json || o->json_out ? report_json(&r) : NULL;
        if (o->json) {
            json_incref(root);
            cli_json_print(root, stdout);
        } else {
            print_table(&r);
        }
        bool failed = false;
        for (size_t d = 0; d < r.n_devices; d++)
            for (size_t i = 0; i < r.devices[d].n_rows; i++)
                failed |= strcmp(r.devices[d].rows[i].outcome, "ok") != 0;
        rc = failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
        if (o->json_out) {
            if (cli_json_write_file(root, o->json_out)) {
                fprintf(stderr, "edhoc-cli interop: --json-out %s: %s\n", o->json_out,
                        strerror(errno));
                rc = CLI_EXIT_INPUT;
            }
        }
        json_decref(root);
    }
    interop_devices_free(&r);
    return rc;
}
