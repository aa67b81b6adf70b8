/* What the files of the responder's interop log share (interop_log_writer.h). */
#ifndef EDHOC_TOOLS_INTEROP_LOG_INTERNAL_H
#define EDHOC_TOOLS_INTEROP_LOG_INTERNAL_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "interop_log_writer.h"

#define SLOTS               32
#define SLOT_DATAGRAMS      64
#define SLOT_DATAGRAM_BYTES (256u * 1024u)
#define SLOT_TRACE_BYTES    (256u * 1024u)
#define ENDED_WAIT_MS       500   /* for the response to the last message */
#define OSCORE_WAIT_MS      1500  /* for the first OSCORE request after an ok handshake */
#define ANONYMOUS_WAIT_MS   10000 /* an EDHOC request that never became a handshake */

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
    interop_log_sink *sink;
    void *sink_user;
    struct slot slots[SLOTS];
    uint64_t now_ms;
};

uint64_t mono_ms(void);
/* Warnings of the log, formatted, to its sink. */
void log_line(struct interop_log *log, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A peer's "addr:port" as a normalized address; false when not one. */
bool name_to_addr(const char *name, struct sockaddr_storage *out);
/* "addr" of "addr:port" / "[v6]:port". */
void host_of(const char *peer, char *out, size_t cap);

struct slot *slot_by_id(struct interop_log *log, uint64_t id);
/* The newest slot of a peer, optionally only one still open without id. */
struct slot *slot_by_peer(struct interop_log *log, const struct sockaddr_storage *peer,
                          bool open_anonymous);
struct slot *slot_new(struct interop_log *log, const struct sockaddr_storage *peer);
/* One line, one write(): appended whole or (on a crash) partly. */
void jsonl_write(struct interop_log *log, const char *line, size_t len);

/* Set a member, taking the reference (a NULL value becomes null, so an
 * allocation failure cannot leave the key out silently). */
static inline void json_set(json_t *obj, const char *key, json_t *value)
{
    json_object_set_new(obj, key, value ? value : json_null());
}

static inline json_t *json_int_or_null(bool present, long long v)
{
    return present ? json_integer(v) : json_null();
}

#endif
