/*
 * The responder's interop log (`edhoc-cli responder --interop-log DIR`):
 * the writer of src/tools/interop (interop_log_writer.h says what it
 * keeps), opened with its warnings going to the daemon's log.
 */
#ifndef CLI_INTEROP_LOG_H
#define CLI_INTEROP_LOG_H

#include <stddef.h>

#include "interop_log_writer.h"

/* Create DIR (0700) if missing and open DIR/handshakes.jsonl for
 * appending. Returns 0, or -1 with a message in why (which step and path
 * failed, with strerror). */
int interop_log_open(struct interop_log **log, const char *dir, long max_files, char *why,
                     size_t why_cap);

#endif
