/* What the tests of the credentials (src/cred) share: the RFC 9529 trace
 * vectors loaded once per program, the times the certificates are checked
 * at, credentials and stores off the stack, a temporary directory. */
#ifndef CRED_TEST_COMMON_H
#define CRED_TEST_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "edhoc/cbor.h"
#include "edhoc/cred.h"
#include "vectors.h"
#include "demo_creds.h"

/* 2025-01-01T00:00:00Z: inside the trace 1 certificates' validity (2022 ..
 * 2029) and the demo ones (2024 .. 2099), after the expired one (2024-06-30). */
#define T_2025 1735689600
#define T_2023 1672531200 /* 2023-01-01, before the demo certificates */

static struct vec_scope t1, t2;

/* A struct edhoc_cred is 4 KB and a store ~180 KB: keep them off the stack. */
static inline struct edhoc_cred *new_cred(void)
{
    struct edhoc_cred *c = calloc(1, sizeof *c);
    assert_non_null(c);
    return c;
}

static inline struct edhoc_cred_store *new_store(void)
{
    struct edhoc_cred_store *s = malloc(sizeof *s);
    assert_non_null(s);
    edhoc_cred_store_init(s);
    edhoc_cred_store_set_time(s, T_2025);
    return s;
}

static inline int setup_vectors(void **state)
{
    (void)state;
    t1 = vec_load("rfc9529-trace1.json");
    t2 = vec_load("rfc9529-trace2.json");
    return 0;
}

static inline int encode_x5chain(const struct edhoc_cred *c, uint8_t *map, size_t *ml)
{
    return edhoc_id_cred_encode(c, EDHOC_ID_CRED_X5CHAIN, 0, map, EDHOC_CRED_MAX_ID_CRED, ml);
}

#endif /* CRED_TEST_COMMON_H */
