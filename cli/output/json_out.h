/*
 * JSON output of every command, written through jansson so that what is
 * printed is always JSON: no NaN or infinity (they become null), strings
 * escaped by the library, absent values null rather than a sentinel such
 * as -1. Schemas: docs/json/<command>.schema.json, described in
 * docs/json.md.
 */
#ifndef CLI_JSON_OUT_H
#define CLI_JSON_OUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bytes as a lowercase hex string. */
json_t *cli_json_hex_value(const uint8_t *p, size_t len);
/* A finite number, else null. */
json_t *cli_json_real_or_null(double v);
/* An integer when present, else null. */
json_t *cli_json_int_or_null(bool present, long long v);
/* A string, or null for NULL. */
json_t *cli_json_string_or_null(const char *s);
/* obj.<prefix>_hex and obj.<prefix>_text: the text when the bytes are
 * printable UTF-8 without control characters (tab and newline allowed),
 * else null. prefix is usually "payload". */
void cli_json_set_bytes(json_t *obj, const char *prefix, const uint8_t *p, size_t len);
/* Set a member, taking the reference (a NULL value becomes null, so an
 * allocation failure cannot leave the key out silently). */
void cli_json_set(json_t *obj, const char *key, json_t *value);
/* Print with two-space indentation and a final newline, then release
 * root. Returns 0, or -1 when it could not be written. */
int cli_json_print(json_t *root, FILE *f);
/* Write root to the file at path (created or truncated) as cli_json_print
 * does, keeping the caller's reference. Returns 0, or -1 with errno set. */
int cli_json_write_file(json_t *root, const char *path);
/* One line, no indentation (logs of JSON lines); releases root. */
int cli_json_print_line(json_t *root, FILE *f);

#endif
