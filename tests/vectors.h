/*
 * Test helpers: read the JSON test vectors in tests/vectors/ (flat objects of
 * "name": "hex" or number), hex conversion, and running the CLI.
 */
#ifndef TESTS_VECTORS_H
#define TESTS_VECTORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* A region of a JSON text; lookups only search inside it. */
struct vec_scope {
    const char *begin;
    const char *end;
};

/* Load tests/vectors/NAME (directory from $EDHOC_VECTORS). Aborts the test
 * program if the file cannot be read. The text stays allocated. */
struct vec_scope vec_load(const char *name);
/* The object value of "key" inside scope (e.g. "C.4"); fails the test if
 * absent. */
struct vec_scope vec_object(struct vec_scope s, const char *key);
/* The n-th object of the array value of "key"; .begin NULL past the end. */
struct vec_scope vec_array_item(struct vec_scope s, const char *key, size_t n);
/* True when "key" is present in scope. */
bool vec_has(struct vec_scope s, const char *key);
/* Decode the hex string value of "key" into out; returns its byte length.
 * Fails the test if absent or longer than cap. */
size_t vec_hex(struct vec_scope s, const char *key, uint8_t *out, size_t cap);
/* The numeric value of "key". */
long vec_int(struct vec_scope s, const char *key);
/* The string value of "key" copied into out (NUL-terminated). */
void vec_str(struct vec_scope s, const char *key, char *out, size_t cap);

/* Hex helpers. hex_decode returns the length or -1. */
long hex_decode(const char *hex, uint8_t *out, size_t cap);
void hex_encode(const uint8_t *in, size_t len, char *out /* 2*len+1 */);

/* Run `$EDHOC_CLI args...` through the shell, capture stdout (and stderr if
 * merge_stderr) into a malloc'd string; returns the exit status (0..255) or
 * -1. *out is always set (free it). */
int run_cli(const char *args, bool merge_stderr, char **out);

#endif
