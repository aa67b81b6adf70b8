/* The responder's interop log (see interop_log.h). */
#include "interop_log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "daemon.h"
#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "json_out.h"
#include "util.h"
#include "path_check.h"

#define SLOTS 32
#define SLOT_DATAGRAMS 64
#define SLOT_DATAGRAM_BYTES (256u * 1024u)
#define SLOT_TRACE_BYTES (256u * 1024u)
#define ENDED_WAIT_MS 500       /* for the response to the last message */
#define OSCORE_WAIT_MS 1500     /* for the first OSCORE request after an ok handshake */
#define ANONYMOUS_WAIT_MS 10000 /* an EDHOC request that never became a handshake */

enum slot_state {
    SLOT_OPEN,        /* in progress */
    SLOT_ENDED,       /* record made; the response is next */
    SLOT_WAIT_OSCORE, /* ended well; the first OSCORE request may follow */
    SLOT_OSCORE_SEEN, /* that request was reported; its response is next */
};

struct datagram {
    struct timespec ts;
    bool sent;
    struct sockaddr_storage local, peer;
    size_t len;
    uint8_t *data;
};

struct slot {
    bool used;
    uint64_t id; /* 0: no handshake id known yet */
    struct sockaddr_storage peer;
    enum slot_state state;
    uint64_t created_ms, deadline_ms;
    bool files;
    char *header; /* the record, for the trace file */
    size_t header_len;
    char *trace;
    size_t trace_len, trace_cap;
    bool trace_truncated;
    struct datagram d[SLOT_DATAGRAMS];
    size_t n_d, d_bytes;
    bool d_truncated;
};

struct interop_log {
    char dir[PATH_MAX];
    int jsonl_fd;
    long max_files, n_files;
    uint64_t base; /* added to the server's handshake ids */
    bool warned_max;
    const struct edhoc_server *srv;
    struct slot slots[SLOTS];
    uint64_t now_ms;
};

static uint64_t mono_ms(void)
{
    return cli_now_ns() / 1000000u;
}

/* ---- Addresses ---- */

static bool name_to_addr(const char *name, struct sockaddr_storage *out)
{
    struct sockaddr_storage ss;
    if (!name || edhoc_capture_endpoint_parse(name, &ss))
        return false;
    cli_addr_normalize((const struct sockaddr *)&ss, out);
    return true;
}

/* "addr" of "addr:port" / "[v6]:port". */
static void host_of(const char *peer, char *out, size_t cap)
{
    const char *colon = strrchr(peer, ':');
    size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
    if (n >= 2 && peer[0] == '[' && peer[n - 1] == ']') {
        peer++;
        n -= 2;
    }
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), peer);
}

/* ---- Slots ---- */

static void slot_free(struct slot *s)
{
    for (size_t i = 0; i < s->n_d; i++)
        free(s->d[i].data);
    if (s->trace) {
        edhoc_wipe(s->trace, s->trace_cap); /* secrets of the session */
        free(s->trace);
    }
    free(s->header);
    memset(s, 0, sizeof *s);
}

static struct slot *slot_by_id(struct interop_log *log, uint64_t id)
{
    for (size_t i = 0; i < SLOTS; i++) {
        if (log->slots[i].used && log->slots[i].id == id)
            return &log->slots[i];
    }
    return NULL;
}

/* The newest slot of a peer, optionally only one still open without id. */
static struct slot *slot_by_peer(struct interop_log *log, const struct sockaddr_storage *peer,
                                 bool open_anonymous)
{
    struct slot *best = NULL;
    for (size_t i = 0; i < SLOTS; i++) {
        struct slot *s = &log->slots[i];
        if (!s->used || !cli_addr_equal(&s->peer, peer))
            continue;
        if (open_anonymous && (s->state != SLOT_OPEN || s->id))
            continue;
        if (!best || s->created_ms > best->created_ms ||
            (s->created_ms == best->created_ms && s->id > best->id))
            best = s;
    }
    return best;
}

static void slot_finish(struct interop_log *log, struct slot *s);

static struct slot *slot_new(struct interop_log *log, const struct sockaddr_storage *peer)
{
    struct slot *oldest = NULL;
    for (size_t i = 0; i < SLOTS; i++) {
        struct slot *s = &log->slots[i];
        if (!s->used) {
            oldest = s;
            break;
        }
        if (!oldest || s->created_ms < oldest->created_ms)
            oldest = s;
    }
    if (oldest->used)
        slot_finish(log, oldest); /* the table is full: the oldest exchange ends here */
    memset(oldest, 0, sizeof *oldest);
    oldest->used = true;
    oldest->peer = *peer;
    oldest->state = SLOT_OPEN;
    oldest->created_ms = mono_ms();
    oldest->deadline_ms = oldest->created_ms + ANONYMOUS_WAIT_MS;
    return oldest;
}

static void slot_add_datagram(struct slot *s, bool sent, const struct sockaddr *local,
                              const struct sockaddr *peer, const uint8_t *payload, size_t len)
{
    if (s->n_d >= SLOT_DATAGRAMS || s->d_bytes + len > SLOT_DATAGRAM_BYTES) {
        s->d_truncated = true;
        return;
    }
    struct datagram *d = &s->d[s->n_d];
    d->data = malloc(len ? len : 1);
    if (!d->data) {
        s->d_truncated = true;
        return;
    }
    memcpy(d->data, payload, len);
    d->len = len;
    d->sent = sent;
    clock_gettime(CLOCK_REALTIME, &d->ts);
    memset(&d->local, 0, sizeof d->local);
    memset(&d->peer, 0, sizeof d->peer);
    memcpy(&d->local, local,
           local->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
    memcpy(&d->peer, peer,
           peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
    s->n_d++;
    s->d_bytes += len;
}

static void trace_append(struct slot *s, const char *text, size_t n)
{
    if (s->trace_len + n + 1 > SLOT_TRACE_BYTES) {
        s->trace_truncated = true;
        return;
    }
    if (s->trace_len + n + 1 > s->trace_cap) {
        size_t nc = s->trace_cap ? s->trace_cap : 4096;
        while (nc < s->trace_len + n + 1)
            nc *= 2;
        char *t = malloc(nc);
        if (!t) {
            s->trace_truncated = true;
            return;
        }
        if (s->trace) {
            memcpy(t, s->trace, s->trace_len);
            edhoc_wipe(s->trace, s->trace_cap);
            free(s->trace);
        }
        s->trace = t;
        s->trace_cap = nc;
    }
    memcpy(s->trace + s->trace_len, text, n);
    s->trace_len += n;
    s->trace[s->trace_len] = '\0';
}

/* A file only the daemon's user can read (traces hold session secrets). */
static FILE *create_private(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return NULL;
    fchmod(fd, 0600);
    FILE *f = fdopen(fd, "w");
    if (!f)
        close(fd);
    return f;
}

static void write_pcap(struct interop_log *log, const struct slot *s)
{
    char path[PATH_MAX + 32], err[256] = "";
    snprintf(path, sizeof path, "%s/%llu.pcap", log->dir, (unsigned long long)s->id);
    /* 0600 and never through a link: edhoc_capture_open sees to both. */
    struct edhoc_capture *cap = edhoc_capture_open(path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    if (!cap) {
        cli_log(LOG_WARNING, "interop log: %s: %s", path, err[0] ? err : strerror(errno));
        return;
    }
    for (size_t i = 0; i < s->n_d; i++) {
        const struct datagram *d = &s->d[i];
        edhoc_capture_datagram_dir(cap, d->sent, (const struct sockaddr *)&d->local,
                                   (const struct sockaddr *)&d->peer, d->data, d->len, &d->ts);
    }
    edhoc_capture_close(cap);
}

static void write_trace(struct interop_log *log, const struct slot *s)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%llu.txt", log->dir, (unsigned long long)s->id);
    FILE *f = create_private(path);
    if (!f) {
        cli_log(LOG_WARNING, "interop log: %s: %s", path, strerror(errno));
        return;
    }
    if (s->header)
        fwrite(s->header, 1, s->header_len, f);
    fprintf(f, "\nTrace (RFC 9529 names, responder side):\n");
    if (s->trace)
        fwrite(s->trace, 1, s->trace_len, f);
    if (s->trace_truncated)
        fprintf(f, "  (trace cut at %u bytes)\n", SLOT_TRACE_BYTES);
    fprintf(f, "\nDatagrams: %llu.pcap (%zu datagram%s%s; tshark -r FILE -d udp.port==PORT,coap)\n",
            (unsigned long long)s->id, s->n_d, s->n_d == 1 ? "" : "s",
            s->d_truncated ? ", later ones not kept" : "");
    if (fclose(f))
        cli_log(LOG_WARNING, "interop log: %s: %s", path, strerror(errno));
}

static void slot_finish(struct interop_log *log, struct slot *s)
{
    if (s->files && s->id) {
        write_trace(log, s);
        write_pcap(log, s);
    }
    slot_free(s);
}

/* ---- Open / close ---- */

/* A restarted daemon counts its handshakes from 1 again: the log's ids
 * continue after the largest one already in the file (so DIR/<id>.* of an
 * earlier run stay), and files already written count towards the bound. */
static void scan_earlier_runs(struct interop_log *log, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        /* A line cut short by a crash, or not ours, counts for nothing. */
        json_t *o = json_loads(line, 0, NULL);
        const char *type = json_string_value(json_object_get(o, "type"));
        json_t *id = json_object_get(o, "id");
        if (type && !strcmp(type, "handshake") && json_is_integer(id) &&
            json_integer_value(id) > 0) {
            if ((uint64_t)json_integer_value(id) > log->base)
                log->base = (uint64_t)json_integer_value(id);
            if (json_is_string(json_object_get(o, "trace")))
                log->n_files++;
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
}

int interop_log_open(struct interop_log **out, const char *dir, long max_files, char *why,
                     size_t why_cap)
{
    *out = NULL;
    struct interop_log *log = calloc(1, sizeof *log);
    if (!log) {
        snprintf(why, why_cap, "--interop-log %s: out of memory", dir);
        return -1;
    }
    log->jsonl_fd = -1;
    log->max_files = max_files;
    /* Absolute, so that --daemon's change of directory does not move it. */
    if (dir[0] != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            snprintf(why, why_cap, "--interop-log %s: cannot tell the current directory: %s", dir,
                     strerror(errno));
            free(log);
            return -1;
        }
        if ((size_t)snprintf(log->dir, sizeof log->dir, "%.*s/%s", (int)(sizeof cwd - 2), cwd,
                             dir) >= sizeof log->dir) {
            snprintf(why, why_cap, "--interop-log %s: path too long", dir);
            free(log);
            return -1;
        }
    } else {
        snprintf(log->dir, sizeof log->dir, "%s", dir);
    }
    bool created = mkdir(log->dir, 0700) == 0;
    if (!created && errno != EEXIST) {
        snprintf(why, why_cap, "--interop-log %s: cannot create the directory: %s", dir,
                 strerror(errno));
        free(log);
        return -1;
    }
    /* The traces hold session secrets: the rules of every directory of
     * secrets (path_check.h), as interop --trace-dir. */
    if (edhoc_secret_dir_check("--interop-log", log->dir, "the traces hold session secrets",
                               created, why, why_cap)) {
        free(log);
        return -1;
    }
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", log->dir, INTEROP_LOG_FILE);
    log->jsonl_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (log->jsonl_fd < 0) {
        snprintf(why, why_cap, "--interop-log %s: cannot open %s: %s", dir, path, strerror(errno));
        free(log);
        return -1;
    }
    scan_earlier_runs(log, path);
    *out = log;
    return 0;
}

void interop_log_set_server(struct interop_log *log, const struct edhoc_server *srv)
{
    log->srv = srv;
}

void interop_log_close(struct interop_log *log)
{
    if (!log)
        return;
    for (size_t i = 0; i < SLOTS; i++) {
        if (log->slots[i].used)
            slot_finish(log, &log->slots[i]);
    }
    if (log->jsonl_fd >= 0)
        close(log->jsonl_fd);
    free(log);
}

/* One line, one write(): appended whole or (on a crash) partly. */
static void jsonl_write(struct interop_log *log, const char *line, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(log->jsonl_fd, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            cli_log(LOG_ERR, "interop log: %s/%s: %s", log->dir, INTEROP_LOG_FILE,
                    strerror(errno));
            return;
        }
        off += (size_t)w;
    }
}

/* ---- Records ---- */

static const char *outcome_name(enum edhoc_server_outcome o)
{
    switch (o) {
    case EDHOC_SERVER_OK:
        return "ok";
    case EDHOC_SERVER_REFUSED:
        return "refused";
    case EDHOC_SERVER_PEER_ERROR:
        return "peer-error";
    case EDHOC_SERVER_VERIFY:
        return "verify";
    case EDHOC_SERVER_EXPIRED:
    case EDHOC_SERVER_EVICTED:
        return "timeout";
    case EDHOC_SERVER_FAILED:
    case EDHOC_SERVER_SHUTDOWN:
        break;
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
    case EDHOC_SERVER_OK:
        snprintf(out, cap, "ok");
        return;
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
    case EDHOC_SERVER_EVICTED:
        snprintf(out, cap, "timeout: %s", hs->error_text);
        return;
    case EDHOC_SERVER_SHUTDOWN:
        snprintf(out, cap, "stopped: %s", hs->error_text);
        return;
    case EDHOC_SERVER_FAILED:
        break;
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
    return present ? cli_json_hex_value(p, n) : json_null();
}

static void hex_text(FILE *f, const uint8_t *p, size_t n)
{
    if (!n)
        fputs("''", f);
    else
        cli_hex_print(f, p, n);
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
static json_t *record_json(const struct edhoc_server_handshake *hs, uint64_t id,
                           const char *when, const char *host, const char *result, bool files)
{
    size_t edhoc = hs->error_bytes;
    for (int i = 1; i <= 4; i++)
        edhoc += hs->bytes[i];
    json_t *o = json_object();
    if (!o)
        return NULL;
    cli_json_set(o, "type", json_string("handshake"));
    cli_json_set(o, "id", json_integer((json_int_t)id));
    cli_json_set(o, "time", json_string(when));
    cli_json_set(o, "peer", json_text(hs->peer));
    cli_json_set(o, "host", json_text(host));
    cli_json_set(o, "method", cli_json_int_or_null(hs->method >= 0, hs->method));
    cli_json_set(o, "suites_i", json_ints(hs->suites_i, hs->n_suites_i));
    cli_json_set(o, "suite", cli_json_int_or_null(hs->suite >= 0, hs->suite));
    cli_json_set(o, "c_i", json_hex_or_null(hs->c_i, hs->c_i_len, hs->c_i_len > 0));
    cli_json_set(o, "c_r", json_hex_or_null(hs->c_r, hs->c_r_len, hs->c_r_len > 0));
    cli_json_set(o, "framing", json_string(hs->framing == EDHOC_FRAMING_BARE ? "bare" : "A.2"));
    cli_json_set(o, "combined", json_boolean(hs->combined));
    cli_json_set(o, "message_4", json_boolean(hs->message_4));
    cli_json_set(o, "message_4_sent", json_boolean(hs->message_4_sent));
    cli_json_set(o, "id_cred_i_type", json_text(hs->id_cred_i_type));
    cli_json_set(o, "id_cred_i", json_hex_or_null(hs->id_cred_i, hs->id_cred_i_len,
                                                  hs->id_cred_i != NULL));
    cli_json_set(o, "id_cred_i_sent", json_hex_or_null(hs->id_cred_i_sent,
                                                       hs->id_cred_i_sent_len,
                                                       hs->id_cred_i_sent != NULL));
    cli_json_set(o, "id_cred_r_type", json_text(hs->id_cred_r_type));
    cli_json_set(o, "outcome", json_string(outcome_name(hs->outcome)));
    cli_json_set(o, "ended", json_string(ended_name(hs->outcome)));
    cli_json_set(o, "err_code", cli_json_int_or_null(hs->err_code >= 0, hs->err_code));
    cli_json_set(o, "suites_r", json_ints(hs->suites_r, hs->n_suites_r));
    cli_json_set(o, "step", json_text(hs->step));
    json_t *bytes = json_object();
    if (bytes) {
        static const char *const names[] = {NULL, "message_1", "message_2", "message_3",
                                            "message_4"};
        for (int i = 1; i <= 4; i++)
            cli_json_set(bytes, names[i], json_integer((json_int_t)hs->bytes[i]));
        cli_json_set(bytes, "error", json_integer((json_int_t)hs->error_bytes));
    }
    cli_json_set(o, "bytes", bytes);
    cli_json_set(o, "edhoc_bytes", json_integer((json_int_t)edhoc));
    cli_json_set(o, "ms", json_integer((json_int_t)hs->duration_ms));
    char name[40];
    snprintf(name, sizeof name, "%llu.txt", (unsigned long long)id);
    cli_json_set(o, "trace", files ? json_string(name) : json_null());
    snprintf(name, sizeof name, "%llu.pcap", (unsigned long long)id);
    cli_json_set(o, "pcap", files ? json_string(name) : json_null());
    cli_json_set(o, "error", json_text(hs->error_text));
    cli_json_set(o, "peer_diagnostic", json_text(hs->peer_diagnostic));
    cli_json_set(o, "result", json_text(result));
    cli_json_set(o, "reason", json_text(hs->causes));
    /* Deviations of the device: the one that explains a failed MAC_3 or
     * signature, and those --tolerate accepted on this handshake. */
    cli_json_set(o, "diagnosis", json_text(hs->diagnosis));
    json_t *tolerated = json_array();
    for (unsigned bit = 1; tolerated && bit <= EDHOC_DEV_ALL; bit <<= 1) {
        if (hs->tolerated & bit)
            json_array_append_new(tolerated, json_string(edhoc_deviation_name(bit)));
    }
    cli_json_set(o, "tolerated", tolerated);
    return o;
}

/* The head of the trace file: the record in words, then the values of
 * the computation the device's log can be compared with. */
static void record_header(FILE *f, const struct edhoc_server_handshake *hs, uint64_t id,
                          const char *when, const char *result)
{
    fprintf(f, "EDHOC handshake %llu from %s (we are the responder), %s\n",
            (unsigned long long)id, hs->peer ? hs->peer : "?", when);
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
    fprintf(f, " (byte-string values)\nframing: %s, combined request (RFC 9668): %s, "
               "message_4: %s\n",
            hs->framing == EDHOC_FRAMING_BARE ? "bare" : "A.2", hs->combined ? "yes" : "no",
            hs->message_4_sent ? "sent" : hs->message_4 ? "configured, not sent" : "no");
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
        cli_hex_print(f, hs->cred_i, hs->cred_i_len);
        fputc('\n', f);
    }
    fprintf(f, "EDHOC bytes: message_1 %zu, message_2 %zu, message_3 %zu, message_4 %zu, "
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
            cli_log(LOG_WARNING,
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
    int printed = cli_json_print_line(record_json(hs, id, when, host, result, files), f);
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
        cli_json_set(o, "type", json_string("oscore"));
        cli_json_set(o, "id", json_integer((json_int_t)(log->base + first->handshake)));
        cli_json_set(o, "time", json_string(when));
        cli_json_set(o, "peer", json_text(first->peer));
        cli_json_set(o, "ok", json_boolean(first->error == 0));
        cli_json_set(o, "error", cli_json_int_or_null(first->error != 0, first->error));
        cli_json_set(o, "text", json_text(first->text));
    }
    int printed = cli_json_print_line(o, f);
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

void interop_log_trace(void *user, const char *name, const uint8_t *v, size_t len)
{
    struct interop_log *log = user;
    if (!log->srv)
        return;
    const char *peer_name = NULL;
    uint64_t id = edhoc_server_current_handshake(log->srv, &peer_name);
    if (!id)
        return;
    id += log->base;
    struct slot *s = slot_by_id(log, id);
    struct sockaddr_storage peer;
    if (!s && name_to_addr(peer_name, &peer)) {
        s = slot_by_peer(log, &peer, true);
        if (!s)
            s = slot_new(log, &peer);
        s->id = id;
    }
    if (!s)
        return;
    char head[96];
    int n = snprintf(head, sizeof head, "  %s (%zu bytes) ", name, len);
    if (n <= 0)
        return;
    trace_append(s, head, (size_t)n);
    static const char digits[] = "0123456789abcdef";
    char chunk[128];
    size_t c = 0;
    for (size_t i = 0; i < len; i++) {
        chunk[c++] = digits[v[i] >> 4];
        chunk[c++] = digits[v[i] & 15];
        if (c == sizeof chunk) {
            trace_append(s, chunk, c);
            c = 0;
        }
    }
    chunk[c++] = '\n';
    trace_append(s, chunk, c);
    edhoc_wipe(chunk, sizeof chunk);
}

/* A request that belongs to an EDHOC exchange: a POST to the EDHOC
 * resource, or an RFC 9668 combined request. */
static bool is_edhoc_request(const uint8_t *payload, size_t len)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(payload, len, &m) || m.code != COAP_CODE_POST)
        return false;
    if (edhoc_coap_msg_find_option(&m, EDHOC_COAP_OPTION_EDHOC))
        return true;
    static const char *const path[] = {".well-known", "edhoc"};
    size_t k = 0;
    for (size_t i = 0; i < m.option_count; i++) {
        const struct coap_option *o = &m.options[i];
        if (o->number != COAP_OPT_URI_PATH)
            continue;
        if (k >= 2 || o->len != strlen(path[k]) || memcmp(o->value, path[k], o->len))
            return false;
        k++;
    }
    return k == 2;
}

void interop_log_datagram(struct interop_log *log, bool sent, const struct sockaddr *local,
                          const struct sockaddr *peer, const uint8_t *payload, size_t len)
{
    struct sockaddr_storage k;
    cli_addr_normalize(peer, &k);
    if (k.ss_family != AF_INET && k.ss_family != AF_INET6)
        return;
    struct slot *s = slot_by_peer(log, &k, false);
    if (sent) {
        if (!s)
            return;
        slot_add_datagram(s, sent, local, peer, payload, len);
        /* The response to the last message of the exchange. */
        if (s->state == SLOT_ENDED || s->state == SLOT_OSCORE_SEEN)
            slot_finish(log, s);
        return;
    }
    if (is_edhoc_request(payload, len)) {
        if (s && s->state != SLOT_OPEN) {
            /* A new exchange from the same address: the earlier one ends. */
            slot_finish(log, s);
            s = NULL;
        }
        if (!s)
            s = slot_new(log, &k);
    }
    if (s)
        slot_add_datagram(s, sent, local, peer, payload, len);
}

void interop_log_tick(struct interop_log *log, uint64_t now_ms)
{
    uint64_t now = now_ms;
    for (size_t i = 0; i < SLOTS; i++) {
        struct slot *s = &log->slots[i];
        if (!s->used)
            continue;
        /* A handshake waiting for message_3 has no deadline here: its
         * record comes when the server expires it. */
        if (s->state == SLOT_OPEN && s->id)
            continue;
        if (now >= s->deadline_ms)
            slot_finish(log, s);
    }
}
