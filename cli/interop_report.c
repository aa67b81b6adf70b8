/*
 * edhoc-cli interop --report DIR: the matrix of what the devices that
 * connected to `edhoc-cli responder --interop-log DIR` tried, read back
 * from DIR/handshakes.jsonl. One table per device (peer host): one row
 * per combination it tried (method, SUITES_I offered -> selected,
 * ID_CRED_I type, message_4, framing / combined request), with attempts,
 * successes, how the last attempt ended and why, and the trace and pcap
 * of the last failure; then what the device supports, in the words of the
 * initiator-side matrix (`edhoc-cli interop URI`).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/edhoc.h"
#include "interop_log.h"
#include "json_read.h"
#include "util.h"

#define MAX_LINE (1u << 20)   /* a longer line is not one we wrote */
#define MAX_ID_CREDS 8        /* distinct ID_CRED_I listed per device */
#define ID_CRED_HEX 64        /* hex digits of each shown */

struct row {
    int method;
    int suites_i[EDHOC_MAX_SUITES];
    int n_suites_i;
    int suite;
    char id_cred[12]; /* type, "-" when message_3 was not read */
    bool message_4;
    char framing[8];
    bool combined;
    long attempts, ok;
    /* The last attempt. */
    uint64_t last_id;
    char outcome[16];
    long err_code;
    int suites_r[EDHOC_MAX_SUITES];
    int n_suites_r;
    char result[400];
    char reason[700];
    long edhoc_bytes, ms;
    /* The files of the last failure. */
    char fail_trace[32], fail_pcap[32];
};

struct device {
    char host[80];
    char id_creds[MAX_ID_CREDS][16 + ID_CRED_HEX + 4];
    int n_id_creds;
    struct row *rows;
    size_t n_rows, cap_rows;
};

/* Where each handshake went, for its OSCORE line. */
struct attempt {
    uint64_t id;
    size_t device, row;
    bool ok;
};

struct report {
    const char *dir;
    struct device *devices;
    size_t n_devices, cap_devices;
    struct attempt *attempts;
    size_t n_attempts, cap_attempts;
    size_t skipped;
};

static bool grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 16;
    void *q = realloc(*p, nc * size);
    if (!q)
        return false;
    *p = q;
    *cap = nc;
    return true;
}

static struct device *device_get(struct report *r, const char *host)
{
    for (size_t i = 0; i < r->n_devices; i++) {
        if (!strcmp(r->devices[i].host, host))
            return &r->devices[i];
    }
    if (!grow((void **)&r->devices, &r->cap_devices, r->n_devices, sizeof *r->devices))
        return NULL;
    struct device *d = &r->devices[r->n_devices++];
    memset(d, 0, sizeof *d);
    snprintf(d->host, sizeof d->host, "%s", host);
    return d;
}

static bool same_combination(const struct row *a, const struct row *b)
{
    if (a->method != b->method || a->suite != b->suite || a->n_suites_i != b->n_suites_i ||
        strcmp(a->id_cred, b->id_cred) || a->message_4 != b->message_4 ||
        strcmp(a->framing, b->framing) || a->combined != b->combined)
        return false;
    for (int i = 0; i < a->n_suites_i; i++) {
        if (a->suites_i[i] != b->suites_i[i])
            return false;
    }
    return true;
}

static void device_note_id_cred(struct device *d, const char *type, const char *hex)
{
    char entry[sizeof d->id_creds[0]];
    size_t hl = strlen(hex);
    snprintf(entry, sizeof entry, "%s %.*s%s", type, ID_CRED_HEX, hex,
             hl > ID_CRED_HEX ? "..." : "");
    for (int i = 0; i < d->n_id_creds; i++) {
        if (!strcmp(d->id_creds[i], entry))
            return;
    }
    if (d->n_id_creds < MAX_ID_CREDS)
        snprintf(d->id_creds[d->n_id_creds++], sizeof entry, "%s", entry);
}

static bool bool_field(const char *line, const char *name, bool *out)
{
    const char *v = json_read_field(line, NULL, name);
    if (!v)
        return false;
    if (!strncmp(v, "true", 4))
        *out = true;
    else if (!strncmp(v, "false", 5))
        *out = false;
    else
        return false;
    return true;
}

/* The first two bytes of the CoAP payload of the first datagram in
 * DIR/name (the request that opened the exchange; the responder writes
 * the datagrams of a handshake in the order they crossed its socket).
 * Returns false when the file or the datagram cannot be read. */
static bool first_payload_bytes(const struct report *r, const char *name, uint8_t out[2])
{
    if (!name[0] || strchr(name, '/'))
        return false;
    char path[4200], err[256];
    snprintf(path, sizeof path, "%s/%s", r->dir, name);
    struct edhoc_capture_reader *rd = edhoc_capture_reader_open(path, err, sizeof err);
    if (!rd)
        return false;
    bool ok = false;
    const uint8_t *frame;
    size_t caplen, wire;
    struct timespec ts;
    struct edhoc_capture_packet pkt;
    struct coap_msg m;
    if (edhoc_capture_reader_next(rd, &frame, &caplen, &wire, &ts) == 1 &&
        edhoc_capture_packet_parse(edhoc_capture_reader_dlt(rd), frame, caplen, wire, &pkt) == 0 &&
        coap_msg_parse(pkt.payload, pkt.payload_len, &m) == 0 && m.payload_len >= 2) {
        memcpy(out, m.payload, 2);
        ok = true;
    }
    edhoc_capture_reader_close(rd);
    return ok;
}

/* A responder that takes the A.2 framing only reads the first byte of a
 * bare message_1 (METHOD, 0..3) as a C_R prefix and the rest as message_3:
 * its record says "unknown C_R 03" with the method unknown. We never give
 * a C_R of 0..3 (they would be ambiguous with a bare METHOD; only a fixed
 * --c-r can), so such a C_R names a bare message_1; the datagram, when
 * kept, settles it: after
 * a C_R comes message_3, a byte string, after METHOD comes SUITES_I, an
 * int or an array. Returns the METHOD, or -1. */
static int bare_message_1_read_as_c_r(const struct report *r, const char *line,
                                      const struct row *in, bool *seen)
{
    *seen = false;
    if (strcmp(in->outcome, "refused") || strcmp(in->framing, "A.2") || in->combined ||
        in->method != -1 || !strstr(in->result, "message_3: unknown C_R "))
        return -1;
    char c_r[8];
    if (!json_read_string(line, NULL, "c_r", c_r, sizeof c_r) || strlen(c_r) != 2 ||
        c_r[0] != '0' || c_r[1] < '0' || c_r[1] > '3')
        return -1;
    uint8_t b[2];
    char pcap[32];
    if (json_read_string(line, NULL, "pcap", pcap, sizeof pcap) &&
        first_payload_bytes(r, pcap, b)) {
        *seen = true;
        bool suites_i = (b[1] & 0xe0) != 0x40 && (b[1] & 0xe0) != 0x60 && b[1] != 0xf5;
        if (b[0] > 3 || !suites_i)
            return -1;
    }
    return c_r[1] - '0';
}

/* One "handshake" line into its device's row. Returns false when a field
 * the matrix needs is missing or of the wrong type. */
static bool add_handshake(struct report *r, const char *line)
{
    struct row in;
    memset(&in, 0, sizeof in);
    long id = 0, method = 0, suite = 0;
    char host[80], type[16];
    if (!json_read_long(line, NULL, "id", &id) || id <= 0 ||
        !json_read_string(line, NULL, "host", host, sizeof host) ||
        !json_read_long(line, NULL, "method", &method) ||
        !json_read_long(line, NULL, "suite", &suite) ||
        !json_read_string(line, NULL, "framing", in.framing, sizeof in.framing) ||
        !bool_field(line, "combined", &in.combined) ||
        !bool_field(line, "message_4", &in.message_4) ||
        !json_read_string(line, NULL, "outcome", in.outcome, sizeof in.outcome) ||
        !json_read_long(line, NULL, "err_code", &in.err_code) ||
        !json_read_string(line, NULL, "result", in.result, sizeof in.result))
        return false;
    in.n_suites_i = json_read_int_array(line, NULL, "suites_i", in.suites_i, EDHOC_MAX_SUITES);
    if (in.n_suites_i < 0)
        return false;
    in.n_suites_r = json_read_int_array(line, NULL, "suites_r", in.suites_r, EDHOC_MAX_SUITES);
    if (in.n_suites_r < 0)
        in.n_suites_r = 0;
    in.method = (int)method;
    in.suite = (int)suite;
    in.last_id = (uint64_t)id;
    if (!json_read_string(line, NULL, "id_cred_i_type", type, sizeof type))
        snprintf(type, sizeof type, "-");
    snprintf(in.id_cred, sizeof in.id_cred, "%.11s", type);
    json_read_string(line, NULL, "reason", in.reason, sizeof in.reason);
    json_read_long(line, NULL, "edhoc_bytes", &in.edhoc_bytes);
    json_read_long(line, NULL, "ms", &in.ms);
    bool seen;
    int bare_method = bare_message_1_read_as_c_r(r, line, &in, &seen);
    if (bare_method >= 0) {
        in.method = bare_method;
        snprintf(in.framing, sizeof in.framing, "bare");
        if (in.err_code >= 0)
            snprintf(in.result, sizeof in.result, "EDHOC error %ld sent: a bare-framed message_1",
                     in.err_code);
        else
            snprintf(in.result, sizeof in.result, "refused: a bare-framed message_1");
        snprintf(in.reason, sizeof in.reason,
                 "a bare-framed message_1 (RFC 9528 Appendix A.2 expects the true prefix): the "
                 "device speaks the bare framing; start the responder with --framing both or "
                 "bare%s",
                 seen ? "" : " (told by the C_R it was read as, a METHOD value no C_R of ours "
                             "takes; the datagram was not kept)");
    }
    bool ok = !strcmp(in.outcome, "ok");
    if (!ok) {
        json_read_string(line, NULL, "trace", in.fail_trace, sizeof in.fail_trace);
        json_read_string(line, NULL, "pcap", in.fail_pcap, sizeof in.fail_pcap);
    }

    struct device *d = device_get(r, host);
    if (!d)
        return false;
    if (strcmp(type, "-")) {
        char hex[ID_CRED_HEX + 2];
        json_read_string(line, NULL, "id_cred_i", hex, sizeof hex);
        device_note_id_cred(d, type, hex);
    }
    struct row *row = NULL;
    for (size_t i = 0; i < d->n_rows && !row; i++) {
        if (same_combination(&d->rows[i], &in))
            row = &d->rows[i];
    }
    if (!row) {
        if (!grow((void **)&d->rows, &d->cap_rows, d->n_rows, sizeof *d->rows))
            return false;
        row = &d->rows[d->n_rows++];
        *row = in;
        row->attempts = row->ok = 0;
    } else {
        char trace[32], pcap[32];
        memcpy(trace, row->fail_trace, sizeof trace);
        memcpy(pcap, row->fail_pcap, sizeof pcap);
        long attempts = row->attempts, oks = row->ok;
        *row = in;
        row->attempts = attempts;
        row->ok = oks;
        if (ok) {
            memcpy(row->fail_trace, trace, sizeof trace);
            memcpy(row->fail_pcap, pcap, sizeof pcap);
        }
    }
    row->attempts++;
    row->ok += ok;
    if (!grow((void **)&r->attempts, &r->cap_attempts, r->n_attempts, sizeof *r->attempts))
        return false;
    r->attempts[r->n_attempts++] = (struct attempt){(uint64_t)id, (size_t)(d - r->devices),
                                                    (size_t)(row - d->rows), ok};
    return true;
}

/* The first OSCORE request after a handshake: a failure turns that
 * attempt into an "oscore" outcome, as on the initiator side. */
static bool add_oscore(struct report *r, const char *line)
{
    long id = 0;
    bool ok = false;
    if (!json_read_long(line, NULL, "id", &id) || !bool_field(line, "ok", &ok))
        return false;
    if (ok)
        return true;
    char text[400];
    json_read_string(line, NULL, "text", text, sizeof text);
    for (size_t i = r->n_attempts; i-- > 0;) {
        struct attempt *a = &r->attempts[i];
        if (a->id != (uint64_t)id)
            continue;
        struct row *row = &r->devices[a->device].rows[a->row];
        if (a->ok) {
            a->ok = false;
            row->ok--;
        }
        if (row->last_id == a->id) {
            snprintf(row->outcome, sizeof row->outcome, "oscore");
            snprintf(row->result, sizeof row->result, "OSCORE failure: %.360s", text);
            snprintf(row->reason, sizeof row->reason,
                     "the handshake completed but the first OSCORE request failed: the OSCORE "
                     "contexts differ");
            snprintf(row->fail_trace, sizeof row->fail_trace, "%llu.txt",
                     (unsigned long long)a->id);
            snprintf(row->fail_pcap, sizeof row->fail_pcap, "%llu.pcap",
                     (unsigned long long)a->id);
        }
        break;
    }
    return true;
}

/* Reads the log; every unusable line is named on stderr and skipped.
 * Returns 0, or CLI_EXIT_INPUT (no such directory or file). */
static int read_log(struct report *r, size_t *handshakes)
{
    struct stat st;
    if (stat(r->dir, &st) || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "edhoc-cli interop: --report %s: %s\n", r->dir,
                errno == ENOENT || !errno ? "no such directory" : strerror(errno));
        return CLI_EXIT_INPUT;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", r->dir, INTEROP_LOG_FILE);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "edhoc-cli interop: --report %s: cannot read %s: %s (was the responder "
                        "run with --interop-log %s?)\n",
                r->dir, path, strerror(errno), r->dir);
        return CLI_EXIT_INPUT;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    unsigned long no = 0;
    *handshakes = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        no++;
        bool complete = line[len - 1] == '\n';
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
            line[--len] = '\0';
        if (len == 0)
            continue;
        const char *why = NULL;
        char type[16] = "";
        if ((size_t)len > MAX_LINE)
            why = "longer than any record";
        else if (line[0] != '{' || line[len - 1] != '}')
            why = complete ? "not a JSON object" : "truncated (the writer stopped mid-line)";
        else if (!json_read_string(line, NULL, "type", type, sizeof type))
            why = "no \"type\"";
        else if (!strcmp(type, "handshake")) {
            if (add_handshake(r, line))
                ++*handshakes;
            else
                why = "a handshake record without the fields of the matrix";
        } else if (!strcmp(type, "oscore")) {
            if (!add_oscore(r, line))
                why = "an OSCORE record without \"id\" or \"ok\"";
        } else {
            why = "an unknown record type";
        }
        if (why) {
            r->skipped++;
            fprintf(stderr, "edhoc-cli interop: %s line %lu: %s, skipped\n", path, no, why);
        }
    }
    free(line);
    fclose(f);
    return 0;
}

/* ---- Output ---- */

static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s == '|' ? '/' : *s == '\n' ? ' ' : *s, f);
}

static const char *variant_name(const struct row *w)
{
    return !strcmp(w->framing, "bare") ? "bare" : w->combined ? "A.2 combined" : "A.2";
}

struct summary {
    bool method[4];
    int suites[EDHOC_MAX_SUITES * 4];
    int n_suites;
    char id_creds[8][12];
    int n_id_creds;
    int m4_tried, m4_ok, comb_tried, comb_ok;
    bool a2_ok, bare_ok;
    size_t ok, failed;
};

static const char *support(int ok, int tried)
{
    return tried == 0 ? "not tested" : ok ? "yes" : "no";
}

static void summarize(const struct device *d, struct summary *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < d->n_rows; i++) {
        const struct row *w = &d->rows[i];
        if (!strcmp(w->outcome, "ok"))
            s->ok++;
        else
            s->failed++;
        if (w->message_4) {
            s->m4_tried++;
            s->m4_ok += w->ok > 0;
        }
        if (w->combined) {
            s->comb_tried++;
            s->comb_ok += w->ok > 0;
        }
        if (w->ok <= 0)
            continue;
        if (!strcmp(w->framing, "bare"))
            s->bare_ok = true;
        else
            s->a2_ok = true;
        if (w->method >= 0 && w->method < 4)
            s->method[w->method] = true;
        bool have = false;
        for (int k = 0; k < s->n_suites; k++)
            have |= s->suites[k] == w->suite;
        if (!have && s->n_suites < (int)(sizeof s->suites / sizeof s->suites[0]))
            s->suites[s->n_suites++] = w->suite;
        have = false;
        for (int k = 0; k < s->n_id_creds; k++)
            have |= !strcmp(s->id_creds[k], w->id_cred);
        if (!have && s->n_id_creds < 8 && strcmp(w->id_cred, "-"))
            snprintf(s->id_creds[s->n_id_creds++], sizeof s->id_creds[0], "%s", w->id_cred);
    }
}

static void suites_text(const struct row *w, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < w->n_suites_i && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%d", i ? "," : "", w->suites_i[i]);
    if (o < cap)
        snprintf(out + o, cap - o, "%s -> %d", w->n_suites_i ? "" : "?", w->suite);
}

static void print_table(const struct report *r, size_t handshakes)
{
    printf("EDHOC interop report from %s/%s: %zu handshake%s from %zu device%s (we were the "
           "responder)\n",
           r->dir, INTEROP_LOG_FILE, handshakes, handshakes == 1 ? "" : "s", r->n_devices,
           r->n_devices == 1 ? "" : "s");
    if (r->skipped)
        printf("%zu unusable line%s skipped (see stderr)\n", r->skipped,
               r->skipped == 1 ? "" : "s");
    for (size_t di = 0; di < r->n_devices; di++) {
        const struct device *d = &r->devices[di];
        printf("\n## Device %s\n\nID_CRED_I used:", d->host);
        for (int k = 0; k < d->n_id_creds; k++)
            printf("%s %s", k ? ";" : "", d->id_creds[k]);
        printf("%s\n\n", d->n_id_creds ? "" : " none (no message_3 was read)");
        printf("| # | method | suites (offered -> selected) | ID_CRED_I | message_4 | framing | "
               "attempts | ok | outcome | reason | EDHOC bytes | ms | last failure |\n");
        printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (size_t i = 0; i < d->n_rows; i++) {
            const struct row *w = &d->rows[i];
            char suites[80];
            suites_text(w, suites, sizeof suites);
            printf("| %zu | %d | %s | %s | %s | %s | %ld | %ld | ", i + 1, w->method, suites,
                   w->id_cred, w->message_4 ? "yes" : "no", variant_name(w), w->attempts, w->ok);
            md_cell(stdout, w->result);
            printf(" | ");
            md_cell(stdout, w->reason[0] ? w->reason : "-");
            printf(" | %ld | %ld | ", w->edhoc_bytes, w->ms);
            if (w->fail_trace[0] || w->fail_pcap[0])
                printf("%s%s%s |\n", w->fail_trace, w->fail_trace[0] && w->fail_pcap[0] ? ", " : "",
                       w->fail_pcap);
            else
                printf("- |\n");
        }
        struct summary s;
        summarize(d, &s);
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

static void json_ints(FILE *f, const int *v, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? ", " : "", v[i]);
    fputc(']', f);
}

static void json_name_or_null(FILE *f, const char *s)
{
    if (s[0])
        cli_json_string(f, s);
    else
        fputs("null", f);
}

static void print_json(FILE *f, const struct report *r, size_t handshakes)
{
    size_t ok = 0, failed = 0;
    fprintf(f, "{\n  \"dir\": ");
    cli_json_string(f, r->dir);
    fprintf(f, ",\n  \"handshakes\": %zu,\n  \"skipped_lines\": %zu,\n  \"devices\": [",
            handshakes, r->skipped);
    for (size_t di = 0; di < r->n_devices; di++) {
        const struct device *d = &r->devices[di];
        fprintf(f, "%s\n    {\"host\": ", di ? "," : "");
        cli_json_string(f, d->host);
        fprintf(f, ", \"id_creds_i\": [");
        for (int k = 0; k < d->n_id_creds; k++) {
            fprintf(f, "%s", k ? ", " : "");
            cli_json_string(f, d->id_creds[k]);
        }
        fprintf(f, "],\n     \"rows\": [");
        for (size_t i = 0; i < d->n_rows; i++) {
            const struct row *w = &d->rows[i];
            fprintf(f, "%s\n      {\"method\": %d, \"suites_i\": ", i ? "," : "", w->method);
            json_ints(f, w->suites_i, w->n_suites_i);
            fprintf(f, ", \"suite\": %d, \"id_cred\": ", w->suite);
            if (strcmp(w->id_cred, "-"))
                cli_json_string(f, w->id_cred);
            else
                fputs("null", f);
            fprintf(f, ", \"message_4\": %s, \"framing\": \"%s\", \"combined\": %s, "
                       "\"attempts\": %ld, \"ok\": %ld, \"outcome\": \"%s\", \"err_code\": %ld, "
                       "\"suites_r\": ",
                    w->message_4 ? "true" : "false", w->framing, w->combined ? "true" : "false",
                    w->attempts, w->ok, w->outcome, w->err_code);
            json_ints(f, w->suites_r, w->n_suites_r);
            fprintf(f, ", \"last_id\": %llu, \"edhoc_bytes\": %ld, \"ms\": %ld, "
                       "\"failure_trace\": ",
                    (unsigned long long)w->last_id, w->edhoc_bytes, w->ms);
            json_name_or_null(f, w->fail_trace);
            fputs(", \"failure_pcap\": ", f);
            json_name_or_null(f, w->fail_pcap);
            fputs(", \"result\": ", f);
            cli_json_string(f, w->result);
            fputs(", \"reason\": ", f);
            cli_json_string(f, w->reason);
            fputc('}', f);
        }
        struct summary s;
        summarize(d, &s);
        ok += s.ok;
        failed += s.failed;
        fprintf(f, "\n     ],\n     \"summary\": {\"ok\": %zu, \"failed\": %zu, \"methods\": [",
                s.ok, s.failed);
        int k2 = 0;
        for (int m = 0; m < 4; m++)
            if (s.method[m])
                fprintf(f, "%s%d", k2++ ? ", " : "", m);
        fprintf(f, "], \"suites\": ");
        json_ints(f, s.suites, s.n_suites);
        fprintf(f, ", \"id_creds\": [");
        for (int k = 0; k < s.n_id_creds; k++)
            fprintf(f, "%s\"%s\"", k ? ", " : "", s.id_creds[k]);
        fprintf(f, "], \"message_4\": \"%s\", \"combined\": \"%s\", \"framings\": [%s%s%s]}}",
                support(s.m4_ok, s.m4_tried), support(s.comb_ok, s.comb_tried),
                s.a2_ok ? "\"A.2\"" : "", s.a2_ok && s.bare_ok ? ", " : "",
                s.bare_ok ? "\"bare\"" : "");
    }
    fprintf(f, "%s],\n  \"summary\": {\"ok\": %zu, \"failed\": %zu}\n}\n",
            r->n_devices ? "\n  " : "", ok, failed);
}

static void report_usage(FILE *f)
{
    fprintf(f,
            "usage: edhoc-cli interop --report DIR [--json] [--json-out FILE]\n\n"
            "Reads DIR/%s, written by `edhoc-cli responder --interop-log DIR`, and prints\n"
            "per device (peer host) the combinations it tried as the initiator (method,\n"
            "SUITES_I offered -> selected, ID_CRED_I type, message_4, framing / combined\n"
            "request), with attempts, successes, how the last attempt ended and the likely\n"
            "causes, and the trace / pcap of its last failure; then what the device\n"
            "supports. Unusable lines (truncated, not a record) are named on stderr and\n"
            "skipped.\n\n"
            "  --json             machine-readable output\n"
            "  --json-out FILE    also write that JSON to FILE\n\n"
            "Exit codes: 0 the last attempt of every combination ended well; 1 some did not;\n"
            "2 bad command line; 3 DIR or its log cannot be read, or FILE not written.\n",
            INTEROP_LOG_FILE);
}

int interop_report_main(int argc, char **argv)
{
    struct report r;
    memset(&r, 0, sizeof r);
    bool json = false;
    const char *json_out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            report_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--report") || !strcmp(a, "--json-out")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "edhoc-cli interop: %s needs a value\n", a);
                return CLI_EXIT_USAGE;
            }
            if (!strcmp(a, "--report"))
                r.dir = argv[++i];
            else
                json_out = argv[++i];
        } else {
            fprintf(stderr, "edhoc-cli interop: --report takes only --json and --json-out, not "
                            "'%s'\n", a);
            return CLI_EXIT_USAGE;
        }
    }
    if (!r.dir) {
        fprintf(stderr, "edhoc-cli interop: --report needs a directory\n");
        return CLI_EXIT_USAGE;
    }
    size_t handshakes = 0;
    int rc = read_log(&r, &handshakes);
    if (rc == 0) {
        if (json)
            print_json(stdout, &r, handshakes);
        else
            print_table(&r, handshakes);
        bool failed = false;
        for (size_t d = 0; d < r.n_devices; d++)
            for (size_t i = 0; i < r.devices[d].n_rows; i++)
                failed |= strcmp(r.devices[d].rows[i].outcome, "ok") != 0;
        rc = failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
        if (json_out) {
            FILE *f = fopen(json_out, "w");
            if (f) {
                print_json(f, &r, handshakes);
                if (fclose(f))
                    f = NULL;
            }
            if (!f) {
                fprintf(stderr, "edhoc-cli interop: --json-out %s: %s\n", json_out,
                        strerror(errno));
                rc = CLI_EXIT_INPUT;
            }
        }
    }
    for (size_t d = 0; d < r.n_devices; d++)
        free(r.devices[d].rows);
    free(r.devices);
    free(r.attempts);
    return rc;
}
