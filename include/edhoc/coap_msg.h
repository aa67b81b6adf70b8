/*
 * edhoc/coap_msg.h - a sans-I/O codec for CoAP-over-UDP messages
 * (RFC 7252 Section 3) on plain byte buffers.
 *
 * OSCORE rewrites whole CoAP messages (header, options, payload), and the
 * daemon, the tests, the fuzzers and the CLI all need the same view of a
 * message without pulling in a CoAP stack. A parsed message refers into the
 * buffer it was parsed from (no copies, no allocation); options are kept in
 * wire order, which RFC 7252 makes ascending by option number.
 */
#ifndef EDHOC_COAP_MSG_H
#define EDHOC_COAP_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Compile-time bounds: a message with more options is refused rather than
 * truncated, so every parsed message is complete. */
#define COAP_MSG_MAX_OPTIONS 32
#define COAP_MSG_MAX_TOKEN   8

/* Error codes (negative) */
#define COAP_MSG_ERR_MALFORMED (-3101) /* not a valid CoAP message */
#define COAP_MSG_ERR_TOO_MANY  (-3102) /* more than COAP_MSG_MAX_OPTIONS options */
#define COAP_MSG_ERR_BUFFER    (-3103) /* output buffer too small */
#define COAP_MSG_ERR_INVALID   (-3104) /* bad argument (token length, option order) */

/* Message types */
#define COAP_TYPE_CON 0
#define COAP_TYPE_NON 1
#define COAP_TYPE_ACK 2
#define COAP_TYPE_RST 3

/* Codes as class << 5 | detail */
#define COAP_CODE(c, d)        ((uint8_t)(((c) << 5) | (d)))
#define COAP_CODE_EMPTY        COAP_CODE(0, 0)
#define COAP_CODE_GET          COAP_CODE(0, 1)
#define COAP_CODE_POST         COAP_CODE(0, 2)
#define COAP_CODE_FETCH        COAP_CODE(0, 5)
#define COAP_CODE_CHANGED      COAP_CODE(2, 4)
#define COAP_CODE_CONTENT      COAP_CODE(2, 5)
#define COAP_CODE_BAD_REQUEST  COAP_CODE(4, 0)
#define COAP_CODE_UNAUTHORIZED COAP_CODE(4, 1)
#define COAP_CODE_BAD_OPTION   COAP_CODE(4, 2)

/* Option numbers used by OSCORE processing */
#define COAP_OPT_IF_MATCH       1
#define COAP_OPT_URI_HOST       3
#define COAP_OPT_ETAG           4
#define COAP_OPT_IF_NONE_MATCH  5
#define COAP_OPT_OBSERVE        6
#define COAP_OPT_URI_PORT       7
#define COAP_OPT_LOCATION_PATH  8
#define COAP_OPT_OSCORE         9
#define COAP_OPT_URI_PATH       11
#define COAP_OPT_CONTENT_FORMAT 12
#define COAP_OPT_MAX_AGE        14
#define COAP_OPT_URI_QUERY      15
#define COAP_OPT_ACCEPT         17
#define COAP_OPT_LOCATION_QUERY 20
#define COAP_OPT_BLOCK2         23
#define COAP_OPT_BLOCK1         27
#define COAP_OPT_SIZE2          28
#define COAP_OPT_PROXY_URI      35
#define COAP_OPT_PROXY_SCHEME   39
#define COAP_OPT_SIZE1          60
#define COAP_OPT_ECHO           252
#define COAP_OPT_NO_RESPONSE    258
#define COAP_OPT_REQUEST_TAG    292

struct coap_option {
    uint16_t number;
    uint16_t len;
    const uint8_t *value; /* len bytes; may be NULL when len == 0 */
};

struct coap_msg {
    uint8_t type; /* COAP_TYPE_* */
    uint8_t code;
    uint16_t mid;
    uint8_t token_len; /* 0..8 */
    uint8_t token[COAP_MSG_MAX_TOKEN];
    size_t option_count;
    struct coap_option options[COAP_MSG_MAX_OPTIONS]; /* ascending number */
    const uint8_t *payload;                           /* NULL when there is no payload */
    size_t payload_len;
};

/* Parse a whole CoAP-over-UDP message. Options and payload point into buf.
 * Returns 0, COAP_MSG_ERR_MALFORMED (version != 1, token length > 8,
 * reserved option nibble 15, truncation, option number overflow, payload
 * marker followed by nothing) or COAP_MSG_ERR_TOO_MANY. */
int edhoc_coap_msg_parse(const uint8_t *buf, size_t len, struct coap_msg *m);

/* Parse only the options-and-payload part (what follows the token; also the
 * layout of an OSCORE plaintext after its code byte) into m->options /
 * m->payload. Same errors as edhoc_coap_msg_parse(). */
int edhoc_coap_msg_parse_body(const uint8_t *buf, size_t len, struct coap_msg *m);

/* Encode m into out. Returns the length, COAP_MSG_ERR_BUFFER, or
 * COAP_MSG_ERR_INVALID (token longer than 8, options not ascending). */
long edhoc_coap_msg_encode(const struct coap_msg *m, uint8_t *out, size_t cap);

/* Encode options (ascending) and the payload (with its 0xff marker when
 * payload_len > 0) as they follow the token. Returns the length,
 * COAP_MSG_ERR_BUFFER or COAP_MSG_ERR_INVALID. out may be NULL with cap 0
 * to measure. */
long edhoc_coap_msg_encode_body(const struct coap_option *opts, size_t count,
                                const uint8_t *payload, size_t payload_len, uint8_t *out,
                                size_t cap);

/* Insert an option after any existing options with a number <= number, so
 * repeated options keep their order. Returns 0 or COAP_MSG_ERR_TOO_MANY. */
int edhoc_coap_msg_add_option(struct coap_msg *m, uint16_t number, const uint8_t *value,
                              size_t len);

/* The first option with this number, or NULL. */
const struct coap_option *edhoc_coap_msg_find_option(const struct coap_msg *m, uint16_t number);

/* The value of a uint option (RFC 7252 Section 3.2; at most 4 bytes).
 * Returns 0 or COAP_MSG_ERR_MALFORMED for a longer value. */
int edhoc_coap_option_uint(const struct coap_option *o, uint32_t *value);

/* Encode v as a minimal uint option value into out[4]; returns its length
 * (0 for the value 0). */
size_t edhoc_coap_uint_encode(uint32_t v, uint8_t out[4]);

/* True for request codes (0.01-0.31). */
static inline bool edhoc_coap_code_is_request(uint8_t code)
{
    return code != 0 && (code >> 5) == 0;
}

/* The name of a known option number ("Uri-Path"), or NULL. */
const char *edhoc_coap_option_name(uint16_t number);

/* An option's value format (RFC 7252 Section 3.2 and the table of Section
 * 5.10; Observe, Block1/2, Size2, Echo, No-Response and Request-Tag from
 * their own RFCs). Unknown numbers are opaque. */
enum edhoc_coap_option_format {
    EDHOC_COAP_FORMAT_OPAQUE,
    EDHOC_COAP_FORMAT_EMPTY,
    EDHOC_COAP_FORMAT_UINT,
    EDHOC_COAP_FORMAT_STRING,
};
enum edhoc_coap_option_format edhoc_coap_option_format(uint16_t number);

#ifdef __cplusplus
}
#endif
#endif
