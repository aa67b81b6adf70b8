/* The helpers of crypto_test_common.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>
#include "edhoc/crypto.h"
#include "vectors.h"

#include "crypto_test_common.h"

const struct edhoc_crypto_ops *ops;

const struct backend backends[] = {
    {"openssl", edhoc_crypto_openssl, "OpenSSL 3"},
    {"sodium", edhoc_crypto_sodium, "libsodium 1."},
    {"auto", edhoc_crypto_auto, "auto (libsodium 1."},
};

size_t current;

struct vec_scope vectors(const char *name)
{
    static struct {
        const char *name;
        struct vec_scope scope;
    } cache[4];
    for (size_t i = 0; i < sizeof cache / sizeof cache[0]; i++) {
        if (cache[i].name == NULL) {
            cache[i].name = name;
            cache[i].scope = vec_load(name);
        }
        if (strcmp(cache[i].name, name) == 0)
            return cache[i].scope;
    }
    fail_msg("too many vector files");
    return cache[0].scope;
}

size_t hex(const char *h, uint8_t *out, size_t cap)
{
    long n = hex_decode(h, out, cap);
    assert_true(n >= 0);
    return (size_t)n;
}

bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return false;
    return true;
}

const uint8_t p256_n[32] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
};

int setup(void **state)
{
    (void)state;
    ops = backends[current].get();
    return ops == NULL;
}
