/*
 * What the OSCORE test programs (tests/test_oscore*.c) share: the crypto
 * backend under test, the RFC vectors, contexts built from them or in pairs,
 * and sample messages.
 */
#ifndef EDHOC_TEST_OSCORE_TEST_COMMON_H
#define EDHOC_TEST_OSCORE_TEST_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/oscore.h"
#include "vectors.h"

/* The crypto backend of the tests. main runs everything with OpenSSL, then
 * the RFC vector tests again with libsodium and with the composite (issue
 * #18: every backend gives the same bytes). */
extern const struct edhoc_crypto_ops *(*test_backend)(void);

extern struct vec_scope appc, trace2;

#define BUF 2600

void ctx_from_vector(struct oscore_context *c, const char *name);

void assert_vec_bytes(struct vec_scope v, const char *key, const uint8_t *got, size_t got_len);

/* A simple pair of contexts: client (sender 01 / recipient 02) and server. */
void make_pair(struct oscore_context *cli, struct oscore_context *srv, int aead, int hash);

/* GET coap://[::1]/sensor/temp?unit=c with token 0xa1b2, MID 0x1234 */
size_t sample_request(uint8_t *out, size_t payload_len);

size_t sample_response(uint8_t *out, const uint8_t *payload, size_t payload_len, bool observe,
                       uint32_t obs_value);

int setup(void **state);

#endif
