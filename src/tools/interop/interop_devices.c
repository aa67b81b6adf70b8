/*
 * The devices as initiators, from the responder's interop log
 * (interop_devices.h). Each line is parsed as JSON and its members are
 * taken from the record object itself: a member of a nested object, or a
 * key name inside a string, is never read as one of the record's.
 */
#include "interop_devices.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "interop_log_writer.h"

#define MAX_LINE (1u << 20) /* a longer line is not one we wrote */

/* Where each handshake went, for its OSCORE line. */
struct interop_device_attempt {
    uint64_t id;
    size_t device, row;
    bool ok;
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

static struct interop_device *device_get(struct interop_devices *r, const char *host)
{
    for (size_t i = 0; i < r->n_devices; i++) {
        if (!strcmp(r->devices[i].host, host))
            return &r->devices[i];
    }
    if (!grow((void **)&r->devices, &r->cap_devices, r->n_devices, sizeof *r->devices))
        return NULL;
    struct interop_device *d = &r->devices[r->n_devices++];
    memset(d, 0, sizeof *d);
    snprintf(d->host, sizeof d->host, "%s", host);
    return d;
}

static bool same_combination(const struct interop_device_row *a, const struct interop_device_row *b)
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

static void device_note_id_cred(struct interop_device *d, const char *type, const char *hex)
{
    struct interop_device_id_cred e;
    memset(&e, 0, sizeof e);
    snprintf(e.type, sizeof e.type, "%s", type);
    snprintf(e.hex, sizeof e.hex, "%.*s", INTEROP_DEVICE_ID_CRED_HEX, hex);
    e.truncated = strlen(hex) > INTEROP_DEVICE_ID_CRED_HEX;
    for (int i = 0; i < d->n_id_creds; i++) {
        if (!strcmp(d->id_creds[i].type, e.type) && !strcmp(d->id_creds[i].hex, e.hex) &&
            d->id_creds[i].truncated == e.truncated)
            return;
    }
    if (d->n_id_creds < INTEROP_DEVICE_MAX_ID_CREDS)
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
    json_array_foreach(a, i, v)
    {
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
static bool first_payload_bytes(const struct interop_devices *r, const char *name, uint8_t out[2])
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
static int bare_message_1_read_as_c_r(const struct interop_devices *r, const json_t *line,
                                      const struct interop_device_row *in, bool *seen)
{
    *seen = false;
    if (strcmp(in->outcome, "refused") || strcmp(in->framing, "A.2") || in->combined ||
        in->method != -1 || !strstr(in->result, "message_3: unknown C_R "))
        return -1;
    char c_r[8];
    if (!member_str(line, "c_r", c_r, sizeof c_r) || strlen(c_r) != 2 || c_r[0] != '0' ||
        c_r[1] < '0' || c_r[1] > '3')
        return -1;
    uint8_t b[2];
    char pcap[32];
    if (member_str(line, "pcap", pcap, sizeof pcap) && first_payload_bytes(r, pcap, b)) {
        *seen = true;
        bool suites_i = (b[1] & 0xe0) != 0x40 && (b[1] & 0xe0) != 0x60 && b[1] != 0xf5;
        if (b[0] > 3 || !suites_i)
            return -1;
    }
    return c_r[1] - '0';
}

/* One "handshake" line into its device's row. Returns false when a field
 * the matrix needs is missing or of the wrong type. */
static bool add_handshake(struct interop_devices *r, const json_t *line)
{
    struct interop_device_row in;
    memset(&in, 0, sizeof in);
    long id = 0, method = 0, suite = 0;
    char host[80], type[16];
    /* Unknown values (a method not read, no error code) are null. */
    if (!member_long(line, "id", false, &id) || id <= 0 ||
        !member_str(line, "host", host, sizeof host) ||
        !member_long(line, "method", true, &method) || !member_long(line, "suite", true, &suite) ||
        !member_str(line, "framing", in.framing, sizeof in.framing) ||
        !member_bool(line, "combined", &in.combined) ||
        !member_bool(line, "message_4", &in.message_4) ||
        !member_str(line, "outcome", in.outcome, sizeof in.outcome) ||
        !member_long(line, "err_code", true, &in.err_code) || !json_object_get(line, "result"))
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
                 seen ? ""
                      : " (told by the C_R it was read as, a METHOD value no C_R of ours "
                        "takes; the datagram was not kept)");
    }
    bool ok = !strcmp(in.outcome, "ok");
    if (!ok) {
        member_str(line, "trace", in.fail_trace, sizeof in.fail_trace);
        member_str(line, "pcap", in.fail_pcap, sizeof in.fail_pcap);
    }

    struct interop_device *d = device_get(r, host);
    if (!d)
        return false;
    if (strcmp(type, "-")) {
        char hex[INTEROP_DEVICE_ID_CRED_HEX + 2];
        member_str(line, "id_cred_i", hex, sizeof hex);
        device_note_id_cred(d, type, hex);
    }
    struct interop_device_row *row = NULL;
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
    r->attempts[r->n_attempts++] = (struct interop_device_attempt){
        (uint64_t)id, (size_t)(d - r->devices), (size_t)(row - d->rows), ok};
    return true;
}

/* The first OSCORE request after a handshake: a failure turns that
 * attempt into an "oscore" outcome, as on the initiator side. */
static bool add_oscore(struct interop_devices *r, const json_t *line)
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
        struct interop_device_attempt *a = &r->attempts[i];
        if (a->id != (uint64_t)id)
            continue;
        struct interop_device_row *row = &r->devices[a->device].rows[a->row];
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
            snprintf(row->fail_pcap, sizeof row->fail_pcap, "%llu.pcap", (unsigned long long)a->id);
        }
        break;
    }
    return true;
}

int interop_devices_read(struct interop_devices *r, char *why_out, size_t why_cap)
{
    struct stat st;
    if (stat(r->dir, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(why_out, why_cap, "%s",
                 errno == ENOENT || !errno ? "no such directory" : strerror(errno));
        return -1;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", r->dir, INTEROP_LOG_FILE);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why_out, why_cap,
                 "cannot read %s: %s (was the responder run with --interop-log %s?)", path,
                 strerror(errno), r->dir);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    unsigned long no = 0;
    r->handshakes = 0;
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
                r->handshakes++;
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
            if (r->warn) {
                char text[4400];
                snprintf(text, sizeof text, "%s line %lu: %s, skipped", path, no, why);
                r->warn(r->user, text);
            }
        }
    }
    free(line);
    fclose(f);
    return 0;
}

void interop_device_summarize(const struct interop_device *d, struct interop_device_summary *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < d->n_rows; i++) {
        const struct interop_device_row *w = &d->rows[i];
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

void interop_devices_free(struct interop_devices *r)
{
    for (size_t d = 0; d < r->n_devices; d++)
        free(r->devices[d].rows);
    free(r->devices);
    free(r->attempts);
    r->devices = NULL;
    r->attempts = NULL;
    r->n_devices = r->n_attempts = 0;
}
