/* The responder's interop log: its slots, files and routing
 * (interop_log_writer.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "interop_log_internal.h"
#include "path_check.h"

uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void log_line(struct interop_log *log, int level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (log->sink)
        log->sink(log->sink_user, level, line);
}

/* ---- Addresses ---- */

/* A peer's address as one key whatever socket it came in on: an
 * IPv4-mapped IPv6 address becomes IPv4 (port kept). */
static void addr_normalize(const struct sockaddr *in, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof *out);
    if (in->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)in;
        if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
            struct sockaddr_in *o = (struct sockaddr_in *)out;
            o->sin_family = AF_INET;
            o->sin_port = a->sin6_port;
            memcpy(&o->sin_addr, a->sin6_addr.s6_addr + 12, 4);
            return;
        }
        struct sockaddr_in6 *o = (struct sockaddr_in6 *)out;
        o->sin6_family = AF_INET6;
        o->sin6_port = a->sin6_port;
        o->sin6_addr = a->sin6_addr;
    } else if (in->sa_family == AF_INET) {
        memcpy(out, in, sizeof(struct sockaddr_in));
    }
}

static bool addr_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return false;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
    }
    return false;
}

bool name_to_addr(const char *name, struct sockaddr_storage *out)
{
    struct sockaddr_storage ss;
    if (!name || edhoc_capture_endpoint_parse(name, &ss))
        return false;
    addr_normalize((const struct sockaddr *)&ss, out);
    return true;
}

void host_of(const char *peer, char *out, size_t cap)
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

struct slot *slot_by_id(struct interop_log *log, uint64_t id)
{
    for (size_t i = 0; i < SLOTS; i++) {
        if (log->slots[i].used && log->slots[i].id == id)
            return &log->slots[i];
    }
    return NULL;
}

struct slot *slot_by_peer(struct interop_log *log, const struct sockaddr_storage *peer,
                          bool open_anonymous)
{
    struct slot *best = NULL;
    for (size_t i = 0; i < SLOTS; i++) {
        struct slot *s = &log->slots[i];
        if (!s->used || !addr_equal(&s->peer, peer))
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

struct slot *slot_new(struct interop_log *log, const struct sockaddr_storage *peer)
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
        log_line(log, LOG_WARNING, "interop log: %s: %s", path, err[0] ? err : strerror(errno));
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
        log_line(log, LOG_WARNING, "interop log: %s: %s", path, strerror(errno));
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
        log_line(log, LOG_WARNING, "interop log: %s: %s", path, strerror(errno));
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

int interop_log_create(struct interop_log **out, const char *dir, long max_files,
                       interop_log_sink *sink, void *sink_user, char *why, size_t why_cap)
{
    *out = NULL;
    struct interop_log *log = calloc(1, sizeof *log);
    if (!log) {
        snprintf(why, why_cap, "--interop-log %s: out of memory", dir);
        return -1;
    }
    log->jsonl_fd = -1;
    log->max_files = max_files;
    log->sink = sink;
    log->sink_user = sink_user;
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

void jsonl_write(struct interop_log *log, const char *line, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(log->jsonl_fd, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            log_line(log, LOG_ERR, "interop log: %s/%s: %s", log->dir, INTEROP_LOG_FILE,
                     strerror(errno));
            return;
        }
        off += (size_t)w;
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
    addr_normalize(peer, &k);
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
