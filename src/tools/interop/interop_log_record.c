/* The records of the responder's interop log: the jsonl line of each
 * handshake and first OSCORE request, and the header of its trace file
 * (interop_log_writer.h, docs/json/interop-log.schema.json). */
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "interop_log_internal.h"

static json_t *json_hex(const uint8_t *p, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    char *s = malloc(2 * len + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        s[2 * i] = digits[p[i] >> 4];
        s[2 * i + 1] = digits[p[i] & 15];
    }
    s[2 * len] = '\0';
    json_t *v = json_stringn(s, 2 * len);
    free(s);
    return v;
}

/* One line, no indentation; releases root. Returns 0, or -1 when it
 * could not be written. */
static int json_print_line(json_t *root, FILE *f)
{
    int rc = root
                 ? json_dumpf(root, f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10))
                 : -1;
    if (rc == 0 && fputc('\n', f) == EOF)
        rc = -1;
    fflush(f);
    json_decref(root);
    return rc;
}

static void hex_print(FILE *f, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        fprintf(f, "%02x", p[i]);
}

static const char *outcome_name(enum edhoc_server_outcome o)
{
    switch (o) {
    case EDHOC_SERVER_OK: return "ok";
    case EDHOC_SERVER_REFUSED: return "refused";
    case EDHOC_SERVER_PEER_ERROR: return "peer-error";
    case EDHOC_SERVER_VERIFY: return "verify";
    case EDHOC_SERVER_EXPIRED:
    case EDHOC_SERVER_EVICTED: return "timeout";
    case EDHOC_SERVER_FAILED:
    case EDHOC_SERVER_SHUTDOWN: break;
    }
    return "failed";
}

static const char *ended_name(enum edhoc_server_outcome o)
{
    static const char *const names[] = {"ok",      "refused", "peer-error", "verify",
                                        "expired", "evicted", "failed",     "shutdown"};
    return (unsigned)o < sizeof names / sizeof names[0] ? names[o] : "failed";
}

/* The outcome in words, as the initiator's matrix words it. */
static void result_text(const struct edhoc_server_handshake *hs, char *out, size_t cap)
{
    switch (hs->outcome) {
    case EDHOC_SERVER_OK: snprintf(out, cap, "ok"); return;
    case EDHOC_SERVER_REFUSED:
        if (hs->err_code >= 0)
            snprintf(out, cap, "EDHOC error %d sent: %s", hs->err_code, hs->error_text);
        else
            snprintf(out, cap, "refused: %s", hs->error_text);
        return;
    case EDHOC_SERVER_PEER_ERROR:
        if (hs->err_code >= 0)
            snprintf(out, cap, "EDHOC error %d from the initiator%s%s", hs->err_code,
                     hs->peer_diagnostic[0] ? ": " : "", hs->peer_diagnostic);
        else
            snprintf(out, cap, "%s", hs->error_text);
        return;
    case EDHOC_SERVER_VERIFY:
        snprintf(out, cap, "our verification failed: %s", hs->error_text);
        return;
    case EDHOC_SERVER_EXPIRED:
    case EDHOC_SERVER_EVICTED: snprintf(out, cap, "timeout: %s", hs->error_text); return;
    case EDHOC_SERVER_SHUTDOWN: snprintf(out, cap, "stopped: %s", hs->error_text); return;
    case EDHOC_SERVER_FAILED: break;
    }
    snprintf(out, cap, "failed: %s", hs->error_text);
}

static json_t *json_ints(const int *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

/* A text of the record, null when empty (absent, as the schema says). A
 * text that is not UTF-8 (a peer's diagnostic can be anything) keeps its
 * ASCII, the other bytes as '?'. */
static json_t *json_text(const char *s)
{
    if (!s || !*s)
        return json_null();
    json_t *v = json_string(s);
    if (v)
        return v;
    char *copy = strdup(s);
    if (!copy)
        return json_null();
    for (char *c = copy; *c; c++) {
        if ((unsigned char)*c >= 0x80)
            *c = '?';
    }
    v = json_string(copy);
    free(copy);
    return v;
}

static json_t *json_hex_or_null(const uint8_t *p, size_t n, bool present)
{
    return present ? json_hex(p, n) : json_null();
}

static void hex_text(FILE *f, const uint8_t *p, size_t n)
{
    if (!n)
        fputs("''", f);
    else
        hex_print(f, p, n);
}

static void utc_now(char *out, size_t cap)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The jsonl line of a record (docs/json/interop-log.schema.json): every
 * member always there, null when it does not apply. */
static json_t *record_json(const struct edhoc_server_handshake *hs, uint64_t id, const char *when,
                           const char *host, const char *result, bool files)
{
    size_t edhoc = hs->error_bytes;
    for (int i = 1; i <= 4; i++)
        edhoc += hs->bytes[i];
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_set(o, "type", json_string("handshake"));
    json_set(o, "id", json_integer((json_int_t)id));
    json_set(o, "time", json_string(when));
    json_set(o, "peer", json_text(hs->peer));
    json_set(o, "host", json_text(host));
    json_set(o, "method", json_int_or_null(hs->method >= 0, hs->method));
    json_set(o, "suites_i", json_ints(hs->suites_i, hs->n_suites_i));
    json_set(o, "suite", json_int_or_null(hs->suite >= 0, hs->suite));
    json_set(o, "c_i", json_hex_or_null(hs->c_i, hs->c_i_len, hs->c_i_len > 0));
    json_set(o, "c_r", json_hex_or_null(hs->c_r, hs->c_r_len, hs->c_r_len > 0));
    json_set(o, "framing", json_string(hs->framing == EDHOC_FRAMING_BARE ? "bare" : "A.2"));
    json_set(o, "combined", json_boolean(hs->combined));
    json_set(o, "message_4", json_boolean(hs->message_4));
    json_set(o, "message_4_sent", json_boolean(hs->message_4_sent));
    json_set(o, "id_cred_i_type", json_text(hs->id_cred_i_type));
    json_set(o, "id_cred_i",
             json_hex_or_null(hs->id_cred_i, hs->id_cred_i_len, hs->id_cred_i != NULL));
    json_set(
        o, "id_cred_i_sent",
        json_hex_or_null(hs->id_cred_i_sent, hs->id_cred_i_sent_len, hs->id_cred_i_sent != NULL));
    json_set(o, "id_cred_r_type", json_text(hs->id_cred_r_type));
    json_set(o, "outcome", json_string(outcome_name(hs->outcome)));
    json_set(o, "ended", json_string(ended_name(hs->outcome)));
    json_set(o, "err_code", json_int_or_null(hs->err_code >= 0, hs->err_code));
    json_set(o, "suites_r", json_ints(hs->suites_r, hs->n_suites_r));
    json_set(o, "step", json_text(hs->step));
    json_t *bytes = json_object();
    if (bytes) {
        static const char *const names[] = {NULL, "message_1", "message_2", "message_3",
                                            "message_4"};
        for (int i = 1; i <= 4; i++)
            json_set(bytes, names[i], json_integer((json_int_t)hs->bytes[i]));
        json_set(bytes, "error", json_integer((json_int_t)hs->error_bytes));
    }
    json_set(o, "bytes", bytes);
    json_set(o, "edhoc_bytes", json_integer((json_int_t)edhoc));
    json_set(o, "ms", json_integer((json_int_t)hs->duration_ms));
    char name[40];
    snprintf(name, sizeof name, "%llu.txt", (unsigned long long)id);
    json_set(o, "trace", files ? json_string(name) : json_null());
    snprintf(name, sizeof name, "%llu.pcap", (unsigned long long)id);
    json_set(o, "pcap", files ? json_string(name) : json_null());
    json_set(o, "error", json_text(hs->error_text));
    json_set(o, "peer_diagnostic", json_text(hs->peer_diagnostic));
    json_set(o, "result", json_text(result));
    json_set(o, "reason", json_text(hs->causes));
    /* Deviations of the device: the one that explains a failed MAC_3 or
     * signature, and those --tolerate accepted on this handshake. */
    json_set(o, "diagnosis", json_text(hs->diagnosis));
    json_t *tolerated = json_array();
    for (unsigned bit = 1; tolerated && bit <= EDHOC_DEV_ALL; bit <<= 1) {
        if (hs->tolerated & bit)
            json_array_append_new(tolerated, json_string(edhoc_deviation_name(bit)));
    }
    json_set(o, "tolerated", tolerated);
    return o;
}

/* The head of the trace file: the record in words, then the values of
 * the computation the device's log can be compared with. */
static void record_header(FILE *f, const struct edhoc_server_handshake *hs, uint64_t id,
                          const char *when, const char *result)
{
    fprintf(f, "EDHOC handshake %llu from %s (we are the responder), %s\n", (unsigned long long)id,
            hs->peer ? hs->peer : "?", when);
    fprintf(f, "outcome: %s\n", result);
    if (hs->causes[0])
        fprintf(f, "likely causes: %s\n", hs->causes);
    if (hs->diagnosis && hs->diagnosis[0])
        fprintf(f, "diagnosis: %s\n", hs->diagnosis);
    if (hs->tolerated) {
        char names[120];
        edhoc_deviations_format(hs->tolerated, names, sizeof names);
        fprintf(f, "tolerated (--tolerate): %s\n", names);
    }
    if (hs->step[0])
        fprintf(f, "failed step: %s\n", hs->step);
    fprintf(f, "method: %d\nSUITES_I: ", hs->method);
    for (size_t i = 0; i < hs->n_suites_i; i++)
        fprintf(f, "%s%d", i ? ", " : "", hs->suites_i[i]);
    fprintf(f, "%s -> selected suite %d\n", hs->n_suites_i ? "" : "?", hs->suite);
    if (hs->n_suites_r) {
        fprintf(f, "SUITES_R we sent (error code 2): ");
        for (size_t i = 0; i < hs->n_suites_r; i++)
            fprintf(f, "%s%d", i ? ", " : "", hs->suites_r[i]);
        fputc('\n', f);
    }
    fputs("C_I: ", f);
    hex_text(f, hs->c_i, hs->c_i_len);
    fputs(", C_R: ", f);
    hex_text(f, hs->c_r, hs->c_r_len);
    fprintf(f,
            " (byte-string values)\nframing: %s, combined request (RFC 9668): %s, "
            "message_4: %s\n",
            hs->framing == EDHOC_FRAMING_BARE ? "bare" : "A.2", hs->combined ? "yes" : "no",
            hs->message_4_sent ? "sent"
            : hs->message_4    ? "configured, not sent"
                               : "no");
    if (hs->id_cred_i) {
        fprintf(f, "ID_CRED_I (%s), full map: ", hs->id_cred_i_type ? hs->id_cred_i_type : "?");
        hex_text(f, hs->id_cred_i, hs->id_cred_i_len);
        fputs("; as sent in PLAINTEXT_3: ", f);
        hex_text(f, hs->id_cred_i_sent, hs->id_cred_i_sent_len);
        fputc('\n', f);
    }
    if (hs->id_cred_r_type)
        fprintf(f, "ID_CRED_R (ours): %s\n", hs->id_cred_r_type);
    if (hs->cred_i) {
        fprintf(f, "CRED_I as we hashed it into context_3 / TH_4 (%zu bytes): ", hs->cred_i_len);
        hex_print(f, hs->cred_i, hs->cred_i_len);
        fputc('\n', f);
    }
    fprintf(f,
            "EDHOC bytes: message_1 %zu, message_2 %zu, message_3 %zu, message_4 %zu, "
            "error message %zu; %llu ms\n",
            hs->bytes[1], hs->bytes[2], hs->bytes[3], hs->bytes[4], hs->error_bytes,
            (unsigned long long)hs->duration_ms);
}

void interop_log_record(void *user, const struct edhoc_server_handshake *hs)
{
    struct interop_log *log = user;
    char when[32], host[80], result[400];
    utc_now(when, sizeof when);
    host_of(hs->peer ? hs->peer : "", host, sizeof host);
    result_text(hs, result, sizeof result);

    uint64_t id = log->base + hs->id;
    struct sockaddr_storage peer;
    bool known = name_to_addr(hs->peer, &peer);
    struct slot *s = slot_by_id(log, id);
    if (!s && known)
        s = slot_by_peer(log, &peer, true);
    if (!s && known)
        s = slot_new(log, &peer);
    if (s && !s->id)
        s->id = id;
    bool files = false;
    if (s) {
        if (log->n_files < log->max_files) {
            files = true;
            log->n_files++;
        } else if (!log->warned_max) {
            log->warned_max = true;
            log_line(log, LOG_WARNING,
                     "interop log: %ld handshakes with trace and pcap files written "
                     "(--interop-log-max): from now on only %s/%s",
                     log->max_files, log->dir, INTEROP_LOG_FILE);
        }
    }

    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (!f)
        return;
    int printed = json_print_line(record_json(hs, id, when, host, result, files), f);
    if (fclose(f) == 0 && printed == 0)
        jsonl_write(log, line, len);
    if (s && files) {
        char *head = NULL;
        size_t hlen = 0;
        FILE *h = open_memstream(&head, &hlen);
        if (h) {
            record_header(h, hs, id, when, result);
            fputs("record: ", h);
            fwrite(line, 1, len, h);
            if (fclose(h) == 0) {
                free(s->header);
                s->header = head;
                s->header_len = hlen;
            } else {
                free(head);
            }
        }
    }
    free(line);
    if (s) {
        s->files = files;
        s->state = hs->outcome == EDHOC_SERVER_OK ? SLOT_WAIT_OSCORE : SLOT_ENDED;
        s->deadline_ms =
            mono_ms() + (s->state == SLOT_WAIT_OSCORE ? OSCORE_WAIT_MS : ENDED_WAIT_MS);
    }
}

void interop_log_oscore(void *user, const struct edhoc_server_oscore_first *first)
{
    struct interop_log *log = user;
    char when[32];
    utc_now(when, sizeof when);
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (!f)
        return;
    json_t *o = json_object();
    if (o) {
        json_set(o, "type", json_string("oscore"));
        json_set(o, "id", json_integer((json_int_t)(log->base + first->handshake)));
        json_set(o, "time", json_string(when));
        json_set(o, "peer", json_text(first->peer));
        json_set(o, "ok", json_boolean(first->error == 0));
        json_set(o, "error", json_int_or_null(first->error != 0, first->error));
        json_set(o, "text", json_text(first->text));
    }
    int printed = json_print_line(o, f);
    if (fclose(f) == 0 && printed == 0)
        jsonl_write(log, line, len);
    free(line);
    struct slot *s = slot_by_id(log, log->base + first->handshake);
    if (s) {
        char text[600];
        int n = snprintf(text, sizeof text, "first OSCORE request: %s%s\n",
                         first->error ? "refused: " : "verified",
                         first->error && first->text ? first->text : "");
        if (n > 0 && s->header) {
            size_t add = (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
            char *h = realloc(s->header, s->header_len + add + 1);
            if (h) {
                memcpy(h + s->header_len, text, add);
                s->header_len += add;
                h[s->header_len] = '\0';
                s->header = h;
            }
        }
        s->state = SLOT_OSCORE_SEEN;
        s->deadline_ms = mono_ms() + ENDED_WAIT_MS;
    }
}
