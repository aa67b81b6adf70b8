/*
 * What the crypto test programs (tests/test_crypto*.c) share: the backends
 * every test runs against (OpenSSL, libsodium, the composite `auto`, as
 * issue #18 asks: the same answers and the same refusals from all three),
 * the vector files, hex and byte helpers, and a pinned random source.
 */
#ifndef EDHOC_TEST_CRYPTO_TEST_COMMON_H
#define EDHOC_TEST_CRYPTO_TEST_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include "edhoc/crypto.h"
#include "vectors.h"

extern const struct edhoc_crypto_ops *ops;

struct backend {
    const char *group;
    const struct edhoc_crypto_ops *(*get)(void);
    const char *name_prefix;
};

/* The backends every test runs against; setup() installs backends[current]. */
extern const struct backend backends[3];

extern size_t current;

/* vec_load keeps the text allocated: load each file once and keep it
 * reachable from here. */
struct vec_scope vectors(const char *name);

size_t hex(const char *h, uint8_t *out, size_t cap);

#define assert_bytes_equal(a, b, n) assert_memory_equal((a), (b), (n))

bool all_zero(const uint8_t *p, size_t n);

extern const uint8_t p256_n[32];

int setup(void **state);

#endif
