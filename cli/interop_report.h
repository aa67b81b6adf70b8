/*
 * edhoc-cli interop --report DIR (interop_report.c): the matrix of what the
 * devices that connected to `edhoc-cli responder --interop-log DIR` tried
 * as initiators, read back from DIR/handshakes.jsonl (interop_log.h) with
 * a JSON parser.
 */
#ifndef CLI_INTEROP_REPORT_H
#define CLI_INTEROP_REPORT_H

#include <stdbool.h>

#include "interop_log.h"

struct interop_report_opts {
    const char *dir;
    bool json;            /* docs/json/interop-report.schema.json on stdout */
    const char *json_out; /* also that JSON into this file; NULL: none */
};

/* Returns the exit code: 0 the last attempt of every combination ended
 * well, 1 some did not, 3 DIR or its log unreadable, or --json-out not
 * written. */
int interop_report_run(const struct interop_report_opts *o);

#endif
