/*
 * edhoc-cli interop --report DIR: the matrix of what the devices that
 * connected to `edhoc-cli responder --interop-log DIR` tried, read back
 * from DIR/handshakes.jsonl. One table per device (peer host): one row
 * per combination it tried (method, SUITES_I offered -> selected,
 * ID_CRED_I type, message_4, framing / combined request), with attempts,
 * successes, how the last attempt ended and why, and the trace and pcap
 * of the last failure; then what the device supports, in the words of the
 * initiator-side matrix (`edhoc-cli interop URI`).
 *
 * Each line is parsed as JSON and its members are taken from the record
 * object itself: a member of a nested object, or a key name inside a
 * string, is never read as one of the record's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/edhoc.h"
#include "interop_report.h"
#include "json_out.h"
#include "util.h"

#define MAX_LINE (1u << 20)   /* a longer line is not one we wrote */
#define MAX_ID_CREDS 8        /* distinct ID_CRED_I listed per device */
#define ID_CRED_HEX 64        /* hex digits of each shown */

struct row {
    int method;       /* -1: not known (null in the log) */
    int suites_i[EDHOC_MAX_SUITES];
    int n_suites_i;
    int suite;        /* -1: not known */
    char id_cred[12]; /* type, "-" when message_3 was not read */
    bool message_4;
    char framing[8];
    bool combined;
    long attempts, ok;
    /* The last attempt. */
    uint64_t last_id;
    char outcome[16];
    long err_code;    /* -1: none */
    int suites_r[EDHOC_MAX_SUITES];
    int n_suites_r;
    char result[400];
    char reason[700];
    long edhoc_bytes, ms; /* -1: not in the record */
    /* The files of the last failure. */
    char fail_trace[32], fail_pcap[32];
};

/* An ID_CRED_I a device used: its type and the first ID_CRED_HEX hex
 * digits of its encoding. */
struct id_cred_seen {
    char type[16];
    char hex[ID_CRED_HEX + 1];
    bool truncated;
};

struct device {
    char host[80];
    struct id_cred_seen id_creds[MAX_ID_CREDS];
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
    struct id_cred_seen e;
    memset(&e, 0, sizeof e);
    snprintf(e.type, sizeof e.type, "%s", type);
    snprintf(e.hex, sizeof e.hex, "%.*s", ID_CRED_HEX, hex);
    e.truncated = strlen(hex) > ID_CRED_HEX;
    for (int i = 0; i < d->n_id_creds; i++) {
        if (!strcmp(d->id_creds[i].type, e.type) && !strcmp(d->id_creds[i].hex, e.hex) &&
            d->id_creds[i].truncated == e.truncated)
            return;
    }
    if (d->n_id_creds < MAX_ID_CREDS)
        d->id_creds[d->n_id_creds++] = e;
}

/* ---- Members of a record ---- */

/* A string member into out (truncated to cap - 1); false when absent,
 * null or not a string (out is then ""). */
static bool member_str(const json_t *obj, const char *key, char *out, size_t cap)
{
    const char *v = json_string_value(json_object_get(obj, key));
    snprintf(out, cap, "%s", v ? v : "");
    return v != NULL;
}

/* An integer member; null reads as -1 when null_ok. False when absent or
 * of another type. */
static bool member_long(const json_t *obj, const char *key, bool null_ok, long *out)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_integer(v)) {
        *out = (long)json_integer_value(v);
        return true;
    }
    if (null_ok && json_is_null(v)) {
        *out = -1;
        return true;
    }
    return false;
}

static bool member_bool(const json_t *obj, const char *key, bool *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_boolean(v))
        return false;
    *out = json_is_true(v);
    return true;
}

/* An array of integers into out. Returns the count, or -1 when absent,
 * not an array of integers, or longer than cap. */
static int member_ints(const json_t *obj, const char *key, int *out, size_t cap)
{
    const json_t *a = json_object_get(obj, key);
    if (!json_is_array(a) || json_array_size(a) > cap)
        return -1;
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v) {
        if (!json_is_integer(v))
            return -1;
        out[i] = (int)json_integer_value(v);
    }
    return (int)json_array_size(a);
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
        edhoc_coap_msg_parse(pkt.payload, pkt.payload_len, &m) == 0 && m.payload_len >= 2) {
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
static int bare_message_1_read_as_c_r(const struct report *r, const json_t *line,
                                      const struct row *in, bool *seen)
{
    *seen = false;
    if (strcmp(in->outcome, "refused") || strcmp(in->framing, "A.2") || in->combined ||
        in->method != -1 || !strstr(in->result, "message_3: unknown C_R "))
        return -1;
    char c_r[8];
    if (!member_str(line, "c_r", c_r, sizeof c_r) || strlen(c_r) != 2 ||
        c_r[0] != '0' || c_r[1] < '0' || c_r[1] > '3')
        return -1;
    uint8_t b[2];
    char pcap[32];
    if (member_str(line, "pcap", pcap, sizeof pcap) &&
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
static bool add_handshake(struct report *r, const json_t *line)
{
    struct row in;
    memset(&in, 0, sizeof in);
    long id = 0, method = 0, suite = 0;
    char host[80], type[16];
    /* Unknown values (a method not read, no error code) are null. */
    if (!member_long(line, "id", false, &id) || id <= 0 ||
        !member_str(line, "host", host, sizeof host) ||
        !member_long(line, "method", true, &method) ||
        !member_long(line, "suite", true, &suite) ||
        !member_str(line, "framing", in.framing, sizeof in.framing) ||
        !member_bool(line, "combined", &in.combined) ||
        !member_bool(line, "message_4", &in.message_4) ||
        !member_str(line, "outcome", in.outcome, sizeof in.outcome) ||
        !member_long(line, "err_code", true, &in.err_code) ||
        !json_object_get(line, "result"))
        return false;
    /* Cut short by the responder's own stop: nothing the device did,
     * and no attempt of a combination. */
    char ended[16] = "";
    member_str(line, "ended", ended, sizeof ended);
    if (!strcmp(ended, "shutdown"))
        return true;
    member_str(line, "result", in.result, sizeof in.result);
    in.n_suites_i = member_ints(line, "suites_i", in.suites_i, EDHOC_MAX_SUITES);
    if (in.n_suites_i < 0)
        return false;
    in.n_suites_r = member_ints(line, "suites_r", in.suites_r, EDHOC_MAX_SUITES);
    if (in.n_suites_r < 0)
        in.n_suites_r = 0;
    in.method = (int)method;
    in.suite = (int)suite;
    in.last_id = (uint64_t)id;
    if (!member_str(line, "id_cred_i_type", type, sizeof type) || !type[0])
        snprintf(type, sizeof type, "-");
    snprintf(in.id_cred, sizeof in.id_cred, "%.11s", type);
    member_str(line, "reason", in.reason, sizeof in.reason);
    if (!member_long(line, "edhoc_bytes", true, &in.edhoc_bytes))
        in.edhoc_bytes = -1;
    if (!member_long(line, "ms", true, &in.ms))
        in.ms = -1;
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
        member_str(line, "trace", in.fail_trace, sizeof in.fail_trace);
        member_str(line, "pcap", in.fail_pcap, sizeof in.fail_pcap);
    }

    struct device *d = device_get(r, host);
    if (!d)
        return false;
    if (strcmp(type, "-")) {
        char hex[ID_CRED_HEX + 2];
        member_str(line, "id_cred_i", hex, sizeof hex);
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
static bool add_oscore(struct report *r, const json_t *line)
{
    long id = 0;
    bool ok = false;
    if (!member_long(line, "id", false, &id) || !member_bool(line, "ok", &ok))
        return false;
    if (ok)
        return true;
    char text[400];
    member_str(line, "text", text, sizeof text);
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
        json_t *rec = (size_t)len > MAX_LINE ? NULL : json_loadb(line, (size_t)len, 0, NULL);
        if ((size_t)len > MAX_LINE)
            why = "longer than any record";
        else if (!json_is_object(rec))
            why = complete || rec ? "not a JSON object" : "truncated (the writer stopped mid-line)";
        else if (!member_str(rec, "type", type, sizeof type))
            why = "no \"type\"";
        else if (!strcmp(type, "handshake")) {
            if (add_handshake(r, rec))
                ++*handshakes;
            else
                why = "a handshake record without the fields of the matrix";
        } else if (!strcmp(type, "oscore")) {
            if (!add_oscore(r, rec))
                why = "an OSCORE record without \"id\" or \"ok\"";
        } else {
            why = "an unknown record type";
        }
        json_decref(rec);
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
            printf("%s %s %s%s", k ? ";" : "", d->id_creds[k].type, d->id_creds[k].hex,
                   d->id_creds[k].truncated ? "..." : "");
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

static json_t *json_row(const struct row *w)
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

static json_t *report_json(const struct report *r, size_t handshakes)
{
    size_t ok = 0, failed = 0;
    json_t *root = json_object();
    cli_json_set(root, "dir", json_string(r->dir));
    cli_json_set(root, "handshakes", json_integer((json_int_t)handshakes));
    cli_json_set(root, "skipped_lines", json_integer((json_int_t)r->skipped));
    json_t *devs = json_array();
    for (size_t di = 0; di < r->n_devices; di++) {
        const struct device *d = &r->devices[di];
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
        struct summary s;
        summarize(d, &s);
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

int interop_report_run(const struct interop_report_opts *o)
{
    struct report r;
    memset(&r, 0, sizeof r);
    r.dir = o->dir;
    size_t handshakes = 0;
    int rc = read_log(&r, &handshakes);
    if (rc == 0) {
        json_t *root = o->json || o->json_out ? report_json(&r, handshakes) : NULL;
        if (o->json) {
            json_incref(root);
            cli_json_print(root, stdout);
        } else {
            print_table(&r, handshakes);
        }
        bool failed = false;
        for (size_t d = 0; d < r.n_devices; d++)
            for (size_t i = 0; i < r.devices[d].n_rows; i++)
                failed |= strcmp(r.devices[d].rows[i].outcome, "ok") != 0;
        rc = failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
        if (o->json_out) {
            FILE *f = fopen(o->json_out, "w");
            json_incref(root);
            if (f) {
                if (cli_json_print(root, f) || fclose(f))
                    f = NULL;
            } else {
                json_decref(root);
            }
            if (!f) {
                fprintf(stderr, "edhoc-cli interop: --json-out %s: %s\n", o->json_out,
                        strerror(errno));
                rc = CLI_EXIT_INPUT;
            }
        }
        json_decref(root);
    }
    for (size_t d = 0; d < r.n_devices; d++)
        free(r.devices[d].rows);
    free(r.devices);
    free(r.attempts);
    return rc;
}
