/*
 * A small reader of the JSON reports that edhoc-cli itself writes (the
 * initiator's --json): the layout is known, so fields are found by their
 * key rather than by a full JSON parser. Every function is bounded by the
 * NUL-terminated input and never reads past it.
 */
#ifndef CLI_JSON_READ_H
#define CLI_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>

/* One entry of the initiator's "messages" array. */
struct json_msg {
    char name[48];
    bool from_initiator;
    long edhoc; /* -1: not an EDHOC message (or missing) */
    long coap;  /* -1: missing */
    unsigned dgrams;
};

/* The value that follows "name": within [obj, end) (end NULL: up to the
 * end of the string), leading spaces skipped; NULL when absent. */
const char *json_read_field(const char *obj, const char *end, const char *name);

/* The string value of "name" (escapes \" \\ \/ \n \t \r and \u00XX decoded,
 * other \u escapes written as '?') into out, truncated to cap - 1 bytes.
 * Returns false when absent or not a string (out is then ""). */
bool json_read_string(const char *obj, const char *end, const char *name, char *out, size_t cap);

/* Integer / number value of "name". Returns false when absent or not a
 * number (out untouched). */
bool json_read_long(const char *obj, const char *end, const char *name, long *out);
bool json_read_double(const char *obj, const char *end, const char *name, double *out);

/* The initiator's "messages" array, at most cap entries. Returns the count
 * (0 when absent). */
size_t json_read_initiator_messages(const char *json, struct json_msg *out, size_t cap);

/* Iterates the flat objects of the array "name": *cursor starts NULL; each
 * call sets [*obj, *obj_end) to the next object and returns true, false
 * after the last. The objects must not contain nested objects or arrays. */
bool json_read_next_object(const char *json, const char *name, const char **cursor,
                           const char **obj, const char **obj_end);

/* The integer array "name" (e.g. [] or [0, 2]) into out. Returns the
 * count, or -1 when absent, not an array of integers, longer than cap, or
 * not closed before end (out may then be partly written). */
int json_read_int_array(const char *obj, const char *end, const char *name, int *out, size_t cap);

#endif
