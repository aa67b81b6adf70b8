/*
 * What the block-wise test programs (tests/test_blockwise*.c) share:
 * building CoAP messages option by option, running a message through the
 * server engine, and reading block options back.
 */
#ifndef EDHOC_TEST_BLOCKWISE_TEST_COMMON_H
#define EDHOC_TEST_BLOCKWISE_TEST_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "edhoc/blockwise.h"
#include "edhoc/coap_msg.h"

#define CODE_CONTINUE COAP_CODE(2, 31)

#define CODE_CHANGED COAP_CODE(2, 4)

#define CODE_INCOMPLETE COAP_CODE(4, 8)

#define CODE_UNAVAILABLE COAP_CODE(5, 3)

struct builder {
    struct coap_msg m;
    uint8_t store[24][4];
    size_t used;
};

void b_init(struct builder *b, uint8_t type, uint8_t code, uint16_t mid, const char *token);

void b_opt(struct builder *b, uint16_t number, const void *value, size_t len);

void b_str(struct builder *b, uint16_t number, const char *s);

void b_uint(struct builder *b, uint16_t number, uint32_t v);

void b_block(struct builder *b, uint16_t number, uint32_t num, bool more, unsigned szx);

size_t b_encode(struct builder *b, const uint8_t *payload, size_t plen, uint8_t *out, size_t cap);

void fill(uint8_t *p, size_t n, unsigned seed);

void set_mid(uint8_t *msg, uint16_t mid);

struct result {
    int verdict;
    uint8_t *whole;
    size_t whole_len;
    uint8_t out[2048];
    size_t out_len;
    struct coap_msg reply;
};

int srv(struct edhoc_bw_server *s, const char *peer, const uint8_t *msg, size_t len, uint64_t now,
        struct result *r);

bool has_block(const struct coap_msg *m, uint16_t number, struct edhoc_block *b);

void assert_block(const struct coap_msg *m, uint16_t number, uint32_t num, bool more, unsigned szx);

uint32_t uint_option(const struct coap_msg *m, uint16_t number);

struct edhoc_bw_stats stats(const struct edhoc_bw_server *s);

/* A POST of body to /upload, optionally with a Request-Tag. */
size_t upload(uint8_t *out, size_t cap, uint8_t type, uint16_t mid, const char *tag,
              const uint8_t *body, size_t n);

/* One Block1 request by hand (payload as given, for refusals). */
size_t block1_msg(uint8_t *out, size_t cap, uint32_t num, bool more, unsigned szx,
                  const uint8_t *payload, size_t plen, const char *tag);

#endif
