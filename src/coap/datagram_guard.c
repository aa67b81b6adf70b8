/*
 * The strict check of a received datagram (see edhoc/datagram_guard.h),
 * and the process-wide policy and counters the receive functions use.
 *
 * The check walks the message once, front to back, and stops at the first
 * fault; it never reads past len and keeps no state between calls.
 */
#include "edhoc/datagram_guard.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* RFC 7252 Section 3: "the fixed-size 4-byte header". */
#define HEADER_LEN        4
#define PAYLOAD_MARKER    0xFF
#define MAX_TOKEN_LEN     8
#define MAX_OPTION_NUMBER 65535u

/* RFC 7252 Section 3.1: a 4-bit Option Delta or Length of 13 is followed
 * by one byte holding the value minus 13, 14 by two bytes (network byte
 * order) holding the value minus 269, and 15 is reserved for the payload
 * marker. */
#define NIBBLE_ONE_BYTE  13
#define NIBBLE_TWO_BYTES 14
#define NIBBLE_RESERVED  15
#define ONE_BYTE_BASE    13u
#define TWO_BYTES_BASE   269u

/* Code classes (RFC 7252 Section 3: "a 3-bit class ... and a 5-bit
 * detail"). */
#define CODE_EMPTY         0x00
#define CLASS_REQUEST      0
#define CLASS_SUCCESS      2
#define CLASS_SERVER_ERROR 5

/* Message types (RFC 7252 Section 3, "T"). */
#define TYPE_CON 0
#define TYPE_NON 1
#define TYPE_ACK 2
#define TYPE_RST 3

/* Methods we know: GET, POST, PUT, DELETE (RFC 7252 12.1.1), FETCH, PATCH,
 * iPATCH (RFC 8132). */
#define LAST_KNOWN_METHOD 7

/* Option numbers: RFC 7252 Section 5.10 and 12.2, RFC 7641 (Observe),
 * RFC 7959 (Block, Size), RFC 8613 (OSCORE), RFC 9528 Section 3.2.2 /
 * RFC 9668 (EDHOC), RFC 9175 (Echo, Request-Tag), RFC 7967 (No-Response),
 * RFC 9177 (Q-Block). */
enum {
    OPT_IF_MATCH = 1,
    OPT_URI_HOST = 3,
    OPT_ETAG = 4,
    OPT_IF_NONE_MATCH = 5,
    OPT_OBSERVE = 6,
    OPT_URI_PORT = 7,
    OPT_LOCATION_PATH = 8,
    OPT_OSCORE = 9,
    OPT_URI_PATH = 11,
    OPT_CONTENT_FORMAT = 12,
    OPT_MAX_AGE = 14,
    OPT_URI_QUERY = 15,
    OPT_ACCEPT = 17,
    OPT_Q_BLOCK1 = 19,
    OPT_LOCATION_QUERY = 20,
    OPT_EDHOC = 21,
    OPT_BLOCK2 = 23,
    OPT_BLOCK1 = 27,
    OPT_SIZE2 = 28,
    OPT_Q_BLOCK2 = 31,
    OPT_PROXY_URI = 35,
    OPT_PROXY_SCHEME = 39,
    OPT_SIZE1 = 60,
    OPT_ECHO = 252,
    OPT_NO_RESPONSE = 258,
    OPT_REQUEST_TAG = 292,
};

/* Options that may appear once. RFC 7252 Section 5.4.5 would have a
 * second occurrence treated like an unrecognized option; we refuse the
 * datagram instead, because the library below would act on one of the
 * two and we cannot say which. Only the options whose second occurrence
 * could change how a message is processed are tracked. */
enum once_slot {
    ONCE_OBSERVE,
    ONCE_CONTENT_FORMAT,
    ONCE_OSCORE,
    ONCE_EDHOC,
    ONCE_BLOCK1,
    ONCE_BLOCK2,
    ONCE_SIZE1,
    ONCE_SIZE2,
    ONCE_Q_BLOCK1,
    ONCE_Q_BLOCK2,
    ONCE_NONE,
};

struct option_rule {
    uint16_t min_len, max_len;
    enum once_slot once;
    bool block; /* a Block1/Block2-style value: NUM, M, SZX */
};

/* The length range of a known option (RFC 7252 Table 4 and the RFCs named
 * above); false for an option we do not know, whose length is not
 * checked. RFC 7252 Section 5.4.3 would have a length outside the range
 * treated like an unrecognized option; we refuse, for the same reason as
 * for repetitions. */
static bool option_rule(unsigned number, struct option_rule *r)
{
    r->once = ONCE_NONE;
    r->block = false;
    switch (number) {
    case OPT_IF_MATCH:
        r->min_len = 0;
        r->max_len = 8;
        return true;
    case OPT_URI_HOST:
        r->min_len = 1;
        r->max_len = 255;
        return true;
    case OPT_ETAG:
        r->min_len = 1;
        r->max_len = 8;
        return true;
    case OPT_IF_NONE_MATCH:
        r->min_len = 0;
        r->max_len = 0;
        return true;
    case OPT_OBSERVE:
        r->min_len = 0;
        r->max_len = 3;
        r->once = ONCE_OBSERVE;
        return true;
    case OPT_URI_PORT:
        r->min_len = 0;
        r->max_len = 2;
        return true;
    case OPT_LOCATION_PATH:
        r->min_len = 0;
        r->max_len = 255;
        return true;
    case OPT_OSCORE:
        r->min_len = 0;
        r->max_len = 255;
        r->once = ONCE_OSCORE;
        return true;
    case OPT_URI_PATH:
        r->min_len = 0;
        r->max_len = 255;
        return true;
    case OPT_CONTENT_FORMAT:
        r->min_len = 0;
        r->max_len = 2;
        r->once = ONCE_CONTENT_FORMAT;
        return true;
    case OPT_MAX_AGE:
        r->min_len = 0;
        r->max_len = 4;
        return true;
    case OPT_URI_QUERY:
        r->min_len = 0;
        r->max_len = 255;
        return true;
    case OPT_ACCEPT:
        r->min_len = 0;
        r->max_len = 2;
        return true;
    case OPT_LOCATION_QUERY:
        r->min_len = 0;
        r->max_len = 255;
        return true;
    /* RFC 9668 Section 3.1: the EDHOC Option carries no value. */
    case OPT_EDHOC:
        r->min_len = 0;
        r->max_len = 0;
        r->once = ONCE_EDHOC;
        return true;
    case OPT_BLOCK1:
        r->min_len = 0;
        r->max_len = 3;
        r->once = ONCE_BLOCK1;
        r->block = true;
        return true;
    case OPT_BLOCK2:
        r->min_len = 0;
        r->max_len = 3;
        r->once = ONCE_BLOCK2;
        r->block = true;
        return true;
    case OPT_Q_BLOCK1:
        r->min_len = 0;
        r->max_len = 3;
        r->once = ONCE_Q_BLOCK1;
        r->block = true;
        return true;
    case OPT_Q_BLOCK2:
        r->min_len = 0;
        r->max_len = 3;
        r->once = ONCE_Q_BLOCK2;
        r->block = true;
        return true;
    case OPT_SIZE1:
        r->min_len = 0;
        r->max_len = 4;
        r->once = ONCE_SIZE1;
        return true;
    case OPT_SIZE2:
        r->min_len = 0;
        r->max_len = 4;
        r->once = ONCE_SIZE2;
        return true;
    case OPT_PROXY_URI:
        r->min_len = 1;
        r->max_len = 1034;
        return true;
    case OPT_PROXY_SCHEME:
        r->min_len = 1;
        r->max_len = 255;
        return true;
    case OPT_ECHO:
        r->min_len = 1;
        r->max_len = 40;
        return true;
    case OPT_NO_RESPONSE:
        r->min_len = 0;
        r->max_len = 1;
        return true;
    case OPT_REQUEST_TAG:
        r->min_len = 0;
        r->max_len = 8;
        return true;
    default: return false;
    }
}

static size_t effective_max_datagram(const struct edhoc_datagram_policy *p)
{
    if (!p->max_datagram)
        return EDHOC_DATAGRAM_DEFAULT_MAX_DATAGRAM;
    return p->max_datagram > EDHOC_DATAGRAM_LIMIT ? EDHOC_DATAGRAM_LIMIT : p->max_datagram;
}

static size_t effective_max_body(const struct edhoc_datagram_policy *p)
{
    return p->max_body ? p->max_body : EDHOC_DATAGRAM_DEFAULT_MAX_BODY;
}

/* A Block1/Block2 value (RFC 7959 Section 2.2): NUM in the high bits, then
 * M, then the 3-bit SZX; block size 2^(SZX + 4). */
static int check_block(const uint8_t *v, size_t len, const struct edhoc_datagram_policy *p,
                       bool request)
{
    if (!p->accept_block_options)
        return EDHOC_DATAGRAM_BLOCK_REFUSED;
    uint32_t value = 0;
    for (size_t i = 0; i < len; i++)
        value = value << 8 | v[i];
    unsigned szx = value & 7u;
    /* RFC 7959 Section 2.2: "The value 7 for SZX (which would indicate a
     * block size of 2048) is reserved, i.e., MUST NOT be sent and MUST
     * lead to a 4.00 Bad Request response code upon reception in a
     * request." Only RFC 8323 (CoAP over reliable transports) gives it a
     * meaning, BERT; over UDP it has none. */
    /* In a request the answer is the 4.00 the RFC asks for, which our
     * block-wise engine gives (libcoap's block code is off); a response
     * with it cannot be taken, and is refused here. */
    if (szx == 7 && !request)
        return EDHOC_DATAGRAM_BLOCK_SIZE;
    if (szx == 7)
        szx = 6;
    uint64_t num = value >> 4;
    uint64_t offset = num << (szx + 4);
    /* Block NUM holds the body's bytes from NUM * 2^(SZX + 4) on (RFC 7959
     * Section 2.2); no body we take or send reaches that offset. */
    if (offset >= effective_max_body(p))
        return EDHOC_DATAGRAM_BLOCK_NUMBER;
    return EDHOC_DATAGRAM_OK;
}

/* The extended Option Delta or Length after the option's first byte
 * (RFC 7252 Section 3.1). */
static int read_extended(unsigned nibble, const uint8_t *d, size_t len, size_t *pos,
                         unsigned *value)
{
    if (nibble == NIBBLE_ONE_BYTE) {
        if (len - *pos < 1)
            return EDHOC_DATAGRAM_TRUNCATED;
        *value = ONE_BYTE_BASE + d[*pos];
        *pos += 1;
    } else if (nibble == NIBBLE_TWO_BYTES) {
        if (len - *pos < 2)
            return EDHOC_DATAGRAM_TRUNCATED;
        *value = TWO_BYTES_BASE + ((unsigned)d[*pos] << 8 | d[*pos + 1]);
        *pos += 2;
    } else {
        *value = nibble;
    }
    return EDHOC_DATAGRAM_OK;
}

static int check_options(const uint8_t *d, size_t len, size_t pos,
                         const struct edhoc_datagram_policy *p, bool request)
{
    unsigned number = 0;
    unsigned seen_once = 0;
    while (pos < len) {
        uint8_t first = d[pos++];
        if (first == PAYLOAD_MARKER) {
            /* RFC 7252 Section 3: "The presence of a marker followed by a
             * zero-length payload MUST be processed as a message format
             * error." */
            return pos == len ? EDHOC_DATAGRAM_EMPTY_PAYLOAD : EDHOC_DATAGRAM_OK;
        }
        unsigned delta_nibble = first >> 4, length_nibble = first & 0x0F;
        /* RFC 7252 Section 3.1, Option Delta 15: "Reserved for the Payload
         * Marker. If the field is set to this value but the entire byte is
         * not the payload marker, this MUST be processed as a message
         * format error."; Option Length 15: "Reserved for future use. If
         * the field is set to this value, it MUST be processed as a
         * message format error." */
        if (delta_nibble == NIBBLE_RESERVED || length_nibble == NIBBLE_RESERVED)
            return EDHOC_DATAGRAM_OPTION_FORMAT;
        unsigned delta, value_len;
        int rc = read_extended(delta_nibble, d, len, &pos, &delta);
        if (rc == EDHOC_DATAGRAM_OK)
            rc = read_extended(length_nibble, d, len, &pos, &value_len);
        if (rc != EDHOC_DATAGRAM_OK)
            return rc;
        /* Option numbers are 16 bits (RFC 7252 Section 12.2: "0..65535");
         * the deltas of one message must not sum beyond. */
        if (delta > MAX_OPTION_NUMBER - number)
            return EDHOC_DATAGRAM_OPTION_NUMBER;
        number += delta;
        if (value_len > len - pos)
            return EDHOC_DATAGRAM_TRUNCATED;
        const uint8_t *value = d + pos;
        pos += value_len;

        struct option_rule rule;
        if (!option_rule(number, &rule))
            continue;
        if (value_len < rule.min_len || value_len > rule.max_len)
            return EDHOC_DATAGRAM_OPTION_LENGTH;
        if (rule.once != ONCE_NONE) {
            unsigned bit = 1u << rule.once;
            if (seen_once & bit)
                return EDHOC_DATAGRAM_OPTION_REPEATED;
            seen_once |= bit;
        }
        if (rule.block) {
            rc = check_block(value, value_len, p, request);
            if (rc != EDHOC_DATAGRAM_OK)
                return rc;
        }
    }
    return EDHOC_DATAGRAM_OK;
}

int edhoc_datagram_check(const uint8_t *d, size_t len, const struct edhoc_datagram_policy *p)
{
    struct edhoc_datagram_policy defaults = edhoc_datagram_policy_default();
    if (!p)
        p = &defaults;
    if (!d || len < HEADER_LEN)
        return EDHOC_DATAGRAM_TOO_SHORT;
    if (len > effective_max_datagram(p))
        return EDHOC_DATAGRAM_TOO_LONG;

    unsigned version = d[0] >> 6, type = (d[0] >> 4) & 3u, token_len = d[0] & 0x0Fu;
    /* RFC 7252 Section 3, Version: "Implementations of this specification
     * MUST set this field to 1 (01 binary). Other values are reserved for
     * future versions. Messages with unknown version numbers MUST be
     * silently ignored." */
    if (version != 1)
        return EDHOC_DATAGRAM_VERSION;
    /* RFC 7252 Section 3, Token Length: "Lengths 9-15 are reserved, MUST
     * NOT be sent, and MUST be processed as a message format error." */
    if (token_len > MAX_TOKEN_LEN)
        return EDHOC_DATAGRAM_TOKEN_LENGTH;

    uint8_t code = d[1];
    unsigned code_class = code >> 5, code_detail = code & 0x1Fu;
    if (code == CODE_EMPTY) {
        /* RFC 7252 Section 4.1: "An Empty message has the Code field set
         * to 0.00. The Token Length field MUST be set to 0 and bytes of
         * data MUST NOT be present after the Message ID field. If there
         * are any bytes, they MUST be processed as a message format
         * error." */
        if (token_len != 0 || len != HEADER_LEN)
            return EDHOC_DATAGRAM_EMPTY_WITH_DATA;
        /* RFC 7252 Section 4.3: "A Non-confirmable message always carries
         * either a request or response and MUST NOT be Empty." */
        if (type == TYPE_NON)
            return EDHOC_DATAGRAM_TYPE_CODE;
        return EDHOC_DATAGRAM_OK;
    }
    if (code_class == CLASS_REQUEST) {
        /* 0.01-0.31 are request codes (RFC 7252 Section 12.1.1); only the
         * methods we know may reach the stack. */
        if (code_detail > LAST_KNOWN_METHOD)
            return EDHOC_DATAGRAM_METHOD;
    } else if (code_class < CLASS_SUCCESS || code_class > CLASS_SERVER_ERROR) {
        /* RFC 7252 Section 12.1: classes 1, 6 and 7 are reserved. */
        return EDHOC_DATAGRAM_CODE_CLASS;
    }
    /* RFC 7252 Section 4.2: "Rejecting an Acknowledgement or Reset message
     * (including the case where the Acknowledgement carries a request or a
     * code with a reserved class, or the Reset message is not Empty) is
     * effected by silently ignoring it." */
    if ((type == TYPE_ACK && code_class == CLASS_REQUEST) || type == TYPE_RST)
        return EDHOC_DATAGRAM_TYPE_CODE;

    if (token_len > len - HEADER_LEN)
        return EDHOC_DATAGRAM_TRUNCATED;
    return check_options(d, len, HEADER_LEN + token_len, p, code_class == 0);
}

const char *edhoc_datagram_reason_name(int reason)
{
    switch (reason) {
    case EDHOC_DATAGRAM_OK: return "accepted";
    case EDHOC_DATAGRAM_TOO_SHORT: return "too short";
    case EDHOC_DATAGRAM_TOO_LONG: return "too long";
    case EDHOC_DATAGRAM_VERSION: return "version";
    case EDHOC_DATAGRAM_TOKEN_LENGTH: return "token length";
    case EDHOC_DATAGRAM_TRUNCATED: return "truncated";
    case EDHOC_DATAGRAM_CODE_CLASS: return "reserved code class";
    case EDHOC_DATAGRAM_METHOD: return "unknown method";
    case EDHOC_DATAGRAM_EMPTY_WITH_DATA: return "empty message with data";
    case EDHOC_DATAGRAM_TYPE_CODE: return "type and code";
    case EDHOC_DATAGRAM_OPTION_FORMAT: return "option format";
    case EDHOC_DATAGRAM_OPTION_NUMBER: return "option number";
    case EDHOC_DATAGRAM_EMPTY_PAYLOAD: return "empty payload";
    case EDHOC_DATAGRAM_OPTION_LENGTH: return "option length";
    case EDHOC_DATAGRAM_OPTION_REPEATED: return "option repeated";
    case EDHOC_DATAGRAM_BLOCK_SIZE: return "block size";
    case EDHOC_DATAGRAM_BLOCK_NUMBER: return "block number";
    case EDHOC_DATAGRAM_BLOCK_REFUSED: return "block refused";
    default: return "unknown";
    }
}

struct edhoc_datagram_policy edhoc_datagram_policy_default(void)
{
    struct edhoc_datagram_policy p = {
        .max_body = EDHOC_DATAGRAM_DEFAULT_MAX_BODY,
        .max_datagram = EDHOC_DATAGRAM_DEFAULT_MAX_DATAGRAM,
        .accept_block_options = true,
    };
    return p;
}

/* ---- Process-wide policy and counters ----
 * The CoAP stack runs on one thread per process, but commands may run
 * other threads that receive, so every field is atomic. The policy's
 * fields are read one by one: a setter racing a receive may mix old and
 * new limits for that one datagram, each of which was allowed. */

static atomic_size_t policy_max_body = EDHOC_DATAGRAM_DEFAULT_MAX_BODY;
static atomic_size_t policy_max_datagram = EDHOC_DATAGRAM_DEFAULT_MAX_DATAGRAM;
static atomic_bool policy_accept_blocks = true;
static atomic_bool guard_on = true;

static _Atomic uint64_t count_checked;
static _Atomic uint64_t count_refused_bytes;
static _Atomic uint64_t count_by_reason[EDHOC_DATAGRAM_REASON_COUNT];

void edhoc_datagram_guard_set_policy(const struct edhoc_datagram_policy *p)
{
    struct edhoc_datagram_policy v = p ? *p : edhoc_datagram_policy_default();
    atomic_store(&policy_max_body, effective_max_body(&v));
    atomic_store(&policy_max_datagram, effective_max_datagram(&v));
    atomic_store(&policy_accept_blocks, v.accept_block_options);
}

struct edhoc_datagram_policy edhoc_datagram_guard_policy(void)
{
    struct edhoc_datagram_policy p = {
        .max_body = atomic_load_explicit(&policy_max_body, memory_order_relaxed),
        .max_datagram = atomic_load_explicit(&policy_max_datagram, memory_order_relaxed),
        .accept_block_options = atomic_load_explicit(&policy_accept_blocks, memory_order_relaxed),
    };
    return p;
}

void edhoc_datagram_guard_set_enabled(bool on)
{
    atomic_store(&guard_on, on);
}

bool edhoc_datagram_guard_enabled(void)
{
    return atomic_load_explicit(&guard_on, memory_order_relaxed);
}

void edhoc_datagram_guard_count_refusal(int reason, size_t len)
{
    if (reason <= EDHOC_DATAGRAM_OK || reason >= EDHOC_DATAGRAM_REASON_COUNT)
        return;
    atomic_fetch_add_explicit(&count_checked, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&count_by_reason[reason], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&count_refused_bytes, len, memory_order_relaxed);
}

int edhoc_datagram_guard_admit(const uint8_t *d, size_t len)
{
    struct edhoc_datagram_policy p = edhoc_datagram_guard_policy();
    int reason = edhoc_datagram_check(d, len, &p);
    if (reason == EDHOC_DATAGRAM_OK)
        atomic_fetch_add_explicit(&count_checked, 1, memory_order_relaxed);
    else
        edhoc_datagram_guard_count_refusal(reason, len);
    return reason;
}

void edhoc_datagram_guard_stats(struct edhoc_datagram_guard_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    out->checked = atomic_load_explicit(&count_checked, memory_order_relaxed);
    out->refused_bytes = atomic_load_explicit(&count_refused_bytes, memory_order_relaxed);
    for (int r = EDHOC_DATAGRAM_OK + 1; r < EDHOC_DATAGRAM_REASON_COUNT; r++) {
        out->by_reason[r] = atomic_load_explicit(&count_by_reason[r], memory_order_relaxed);
        out->refused += out->by_reason[r];
    }
}

void edhoc_datagram_guard_reset_stats(void)
{
    atomic_store(&count_checked, 0);
    atomic_store(&count_refused_bytes, 0);
    for (int r = 0; r < EDHOC_DATAGRAM_REASON_COUNT; r++)
        atomic_store(&count_by_reason[r], 0);
}

/* Append text to buf as snprintf would: total grows by the full length
 * whatever fits, and buf stays terminated. */
static void append(char *buf, size_t cap, size_t *total, const char *text)
{
    size_t n = strlen(text);
    if (buf && *total + 1 < cap) {
        size_t room = cap - *total - 1;
        size_t copied = n < room ? n : room;
        memcpy(buf + *total, text, copied);
        buf[*total + copied] = '\0';
    }
    *total += n;
}

int edhoc_datagram_guard_stats_format(const struct edhoc_datagram_guard_stats *s, char *buf,
                                      size_t cap)
{
    size_t total = 0;
    if (buf && cap)
        buf[0] = '\0';
    append(buf, cap, &total, "datagrams refused before libcoap: ");
    bool any = false;
    for (int r = EDHOC_DATAGRAM_OK + 1; s && r < EDHOC_DATAGRAM_REASON_COUNT; r++) {
        if (!s->by_reason[r])
            continue;
        char piece[64];
        snprintf(piece, sizeof piece, "%s%llu %s", any ? ", " : "",
                 (unsigned long long)s->by_reason[r], edhoc_datagram_reason_name(r));
        append(buf, cap, &total, piece);
        any = true;
    }
    if (!any)
        append(buf, cap, &total, "none");
    return total > INT_MAX ? -1 : (int)total;
}
