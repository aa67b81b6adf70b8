/*
 * The responder's interop log (`edhoc-cli responder --interop-log DIR`),
 * written by interop_log_writer.c and interop_log_record.c:
 * one record per incoming handshake, so that what the devices that
 * connected tried, and how each attempt ended, can be read back with
 * `edhoc-cli interop --report DIR`.
 *
 *   DIR/handshakes.jsonl  append-only, one JSON object per line, each line
 *                         written with a single write() (a crash loses at
 *                         most a partial last line): {"type":"handshake",
 *                         ...} when a handshake ends, {"type":"oscore",
 *                         ...} for the first OSCORE request on its context;
 *                         written through jansson, members as
 *                         docs/json/interop-log.schema.json describes them
 *   DIR/<id>.txt          the record, then the RFC 9529-style trace of the
 *                         handshake (responder side; holds session secrets,
 *                         never a static private key)
 *   DIR/<id>.pcap         every datagram of that exchange, real addresses
 *
 * Files are created 0600 (the directory 0700). After max_files handshakes
 * with files, only the jsonl line is written (one warning says so).
 *
 * Routing: the trace callback belongs to a configuration, not a session,
 * so trace values go to the handshake edhoc_server_current_handshake()
 * names; datagrams go to the handshake of their peer address. The response
 * to a handshake's last message leaves after its record is made, so its
 * files are finished when that datagram has been seen (after the first
 * OSCORE request's response for a handshake that ended well), or after a
 * short delay (interop_log_tick).
 */
#ifndef EDHOC_TOOLS_INTEROP_LOG_WRITER_H
#define EDHOC_TOOLS_INTEROP_LOG_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/transport.h"

#define INTEROP_LOG_FILE      "handshakes.jsonl"
#define INTEROP_LOG_MAX_FILES 10000

struct interop_log;
struct sockaddr;

/* Where the log's warnings go (files it could not write): a syslog level
 * and one line without its newline. */
typedef void interop_log_sink(void *user, int level, const char *line);

/* Create DIR (0700) if missing and open DIR/handshakes.jsonl for
 * appending; warnings go to sink. Returns 0, or -1 with a message in why
 * (which step and path failed, with strerror). */
int interop_log_create(struct interop_log **log, const char *dir, long max_files,
                       interop_log_sink *sink, void *sink_user, char *why, size_t why_cap);

/* The server whose current handshake routes trace values. */
void interop_log_set_server(struct interop_log *log, const struct edhoc_server *srv);

/* edhoc_server_config.record / .oscore (user = the log). */
void interop_log_record(void *log, const struct edhoc_server_handshake *hs);
void interop_log_oscore(void *log, const struct edhoc_server_oscore_first *first);

/* edhoc_config.trace (ctx = the log). */
void interop_log_trace(void *log, const char *name, const uint8_t *v, size_t len);

/* Every datagram the process sends or receives (from the transport's
 * datagram hook 2). */
void interop_log_datagram(struct interop_log *log, bool sent, const struct sockaddr *local,
                          const struct sockaddr *peer, const uint8_t *payload, size_t len);

/* Finish the files of handshakes whose last response did not come in
 * time. now_ms: monotonic. */
void interop_log_tick(struct interop_log *log, uint64_t now_ms);

/* Finish every handshake's files and close. NULL is accepted. */
void interop_log_close(struct interop_log *log);

#endif
