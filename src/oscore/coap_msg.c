/* CoAP-over-UDP message codec on plain buffers (RFC 7252 Section 3). */
#include "edhoc/coap_msg.h"

#include <string.h>

/* Reads an option delta/length nibble with its extension bytes. */
static int read_ext(unsigned nibble, const uint8_t *buf, size_t len, size_t *pos, uint32_t *out)
{
    if (nibble < 13) {
        *out = nibble;
        return 0;
    }
    if (nibble == 13) {
        if (*pos + 1 > len)
            return COAP_MSG_ERR_MALFORMED;
        *out = 13u + buf[*pos];
        *pos += 1;
        return 0;
    }
    if (nibble == 14) {
        if (*pos + 2 > len)
            return COAP_MSG_ERR_MALFORMED;
        *out = 269u + ((uint32_t)buf[*pos] << 8 | buf[*pos + 1]);
        *pos += 2;
        return 0;
    }
    return COAP_MSG_ERR_MALFORMED; /* 15 is reserved except as payload marker */
}

int edhoc_coap_msg_parse_body(const uint8_t *buf, size_t len, struct coap_msg *m)
{
    size_t pos = 0;
    uint32_t number = 0;

    m->option_count = 0;
    m->payload = NULL;
    m->payload_len = 0;
    while (pos < len) {
        uint8_t b = buf[pos++];
        if (b == 0xff) {
            /* A marker followed by an empty payload is a format error. */
            if (pos == len)
                return COAP_MSG_ERR_MALFORMED;
            m->payload = buf + pos;
            m->payload_len = len - pos;
            return 0;
        }
        uint32_t delta, olen;
        int rc = read_ext(b >> 4, buf, len, &pos, &delta);
        if (rc)
            return rc;
        rc = read_ext(b & 0x0f, buf, len, &pos, &olen);
        if (rc)
            return rc;
        number += delta;
        if (number > 0xffff)
            return COAP_MSG_ERR_MALFORMED;
        /* Lengths above 65535 are encodable but not representable here
         * (nor sendable over UDP). */
        if (olen > 0xffff || olen > len - pos)
            return COAP_MSG_ERR_MALFORMED;
        if (m->option_count == COAP_MSG_MAX_OPTIONS)
            return COAP_MSG_ERR_TOO_MANY;
        struct coap_option *o = &m->options[m->option_count++];
        o->number = (uint16_t)number;
        o->len = (uint16_t)olen;
        o->value = buf + pos;
        pos += olen;
    }
    return 0;
}

int edhoc_coap_msg_parse(const uint8_t *buf, size_t len, struct coap_msg *m)
{
    if (!buf || len < 4)
        return COAP_MSG_ERR_MALFORMED;
    if ((buf[0] >> 6) != 1)
        return COAP_MSG_ERR_MALFORMED;
    m->type = (buf[0] >> 4) & 3;
    m->token_len = buf[0] & 0x0f;
    m->code = buf[1];
    m->mid = (uint16_t)(buf[2] << 8 | buf[3]);
    if (m->token_len > COAP_MSG_MAX_TOKEN || len < 4u + m->token_len)
        return COAP_MSG_ERR_MALFORMED;
    memcpy(m->token, buf + 4, m->token_len);
    /* An Empty message is exactly the 4-byte header (RFC 7252 Section 4.1). */
    if (m->code == COAP_CODE_EMPTY && (len != 4 || m->token_len != 0))
        return COAP_MSG_ERR_MALFORMED;
    return edhoc_coap_msg_parse_body(buf + 4 + m->token_len, len - 4 - m->token_len, m);
}

/* Size of a delta/length field's extension bytes and its nibble. */
static unsigned ext_nibble(uint32_t v, size_t *ext_len)
{
    if (v < 13) {
        *ext_len = 0;
        return v;
    }
    if (v < 269) {
        *ext_len = 1;
        return 13;
    }
    *ext_len = 2;
    return 14;
}

static void put_ext(uint8_t *p, uint32_t v, size_t ext_len)
{
    if (ext_len == 1) {
        p[0] = (uint8_t)(v - 13);
    } else if (ext_len == 2) {
        p[0] = (uint8_t)((v - 269) >> 8);
        p[1] = (uint8_t)(v - 269);
    }
}

long edhoc_coap_msg_encode_body(const struct coap_option *opts, size_t count,
                                const uint8_t *payload, size_t payload_len, uint8_t *out,
                                size_t cap)
{
    size_t pos = 0;
    uint32_t prev = 0;

    for (size_t i = 0; i < count; i++) {
        if (opts[i].number < prev)
            return COAP_MSG_ERR_INVALID;
        uint32_t delta = opts[i].number - prev;
        size_t dext, lext;
        unsigned dn = ext_nibble(delta, &dext);
        unsigned ln = ext_nibble(opts[i].len, &lext);
        size_t need = 1 + dext + lext + opts[i].len;
        if (out) {
            if (need > cap - pos)
                return COAP_MSG_ERR_BUFFER;
            out[pos] = (uint8_t)(dn << 4 | ln);
            put_ext(out + pos + 1, delta, dext);
            put_ext(out + pos + 1 + dext, opts[i].len, lext);
            if (opts[i].len)
                memcpy(out + pos + 1 + dext + lext, opts[i].value, opts[i].len);
        }
        pos += need;
        prev = opts[i].number;
    }
    if (payload_len > 0) {
        if (out) {
            if (1 + payload_len > cap - pos)
                return COAP_MSG_ERR_BUFFER;
            out[pos] = 0xff;
            memcpy(out + pos + 1, payload, payload_len);
        }
        pos += 1 + payload_len;
    }
    return (long)pos;
}

long edhoc_coap_msg_encode(const struct coap_msg *m, uint8_t *out, size_t cap)
{
    if (m->token_len > COAP_MSG_MAX_TOKEN || m->type > 3)
        return COAP_MSG_ERR_INVALID;
    size_t head = 4u + m->token_len;
    if (cap < head)
        return COAP_MSG_ERR_BUFFER;
    out[0] = (uint8_t)(0x40 | m->type << 4 | m->token_len);
    out[1] = m->code;
    out[2] = (uint8_t)(m->mid >> 8);
    out[3] = (uint8_t)m->mid;
    memcpy(out + 4, m->token, m->token_len);
    long body = edhoc_coap_msg_encode_body(m->options, m->option_count, m->payload, m->payload_len,
                                           out + head, cap - head);
    if (body < 0)
        return body;
    return (long)head + body;
}

int edhoc_coap_msg_add_option(struct coap_msg *m, uint16_t number, const uint8_t *value, size_t len)
{
    if (m->option_count == COAP_MSG_MAX_OPTIONS)
        return COAP_MSG_ERR_TOO_MANY;
    if (len > 0xffff)
        return COAP_MSG_ERR_INVALID;
    size_t i = m->option_count;
    while (i > 0 && m->options[i - 1].number > number) {
        m->options[i] = m->options[i - 1];
        i--;
    }
    m->options[i].number = number;
    m->options[i].len = (uint16_t)len;
    m->options[i].value = value;
    m->option_count++;
    return 0;
}

const struct coap_option *edhoc_coap_msg_find_option(const struct coap_msg *m, uint16_t number)
{
    for (size_t i = 0; i < m->option_count; i++) {
        if (m->options[i].number == number)
            return &m->options[i];
    }
    return NULL;
}

int edhoc_coap_option_uint(const struct coap_option *o, uint32_t *value)
{
    if (o->len > 4)
        return COAP_MSG_ERR_MALFORMED;
    uint32_t v = 0;
    for (size_t i = 0; i < o->len; i++)
        v = v << 8 | o->value[i];
    *value = v;
    return 0;
}

size_t edhoc_coap_uint_encode(uint32_t v, uint8_t out[4])
{
    size_t n = 0;
    for (uint32_t t = v; t; t >>= 8)
        n++;
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    return n;
}

const char *edhoc_coap_option_name(uint16_t number)
{
    switch (number) {
    case COAP_OPT_IF_MATCH: return "If-Match";
    case COAP_OPT_URI_HOST: return "Uri-Host";
    case COAP_OPT_ETAG: return "ETag";
    case COAP_OPT_IF_NONE_MATCH: return "If-None-Match";
    case COAP_OPT_OBSERVE: return "Observe";
    case COAP_OPT_URI_PORT: return "Uri-Port";
    case COAP_OPT_LOCATION_PATH: return "Location-Path";
    case COAP_OPT_OSCORE: return "OSCORE";
    case COAP_OPT_URI_PATH: return "Uri-Path";
    case COAP_OPT_CONTENT_FORMAT: return "Content-Format";
    case COAP_OPT_MAX_AGE: return "Max-Age";
    case COAP_OPT_URI_QUERY: return "Uri-Query";
    case COAP_OPT_ACCEPT: return "Accept";
    case COAP_OPT_LOCATION_QUERY: return "Location-Query";
    case COAP_OPT_BLOCK2: return "Block2";
    case COAP_OPT_BLOCK1: return "Block1";
    case COAP_OPT_SIZE2: return "Size2";
    case COAP_OPT_PROXY_URI: return "Proxy-Uri";
    case COAP_OPT_PROXY_SCHEME: return "Proxy-Scheme";
    case COAP_OPT_SIZE1: return "Size1";
    case COAP_OPT_ECHO: return "Echo";
    case COAP_OPT_NO_RESPONSE: return "No-Response";
    case COAP_OPT_REQUEST_TAG: return "Request-Tag";
    default: return NULL;
    }
}

enum edhoc_coap_option_format edhoc_coap_option_format(uint16_t number)
{
    switch (number) {
    case COAP_OPT_IF_NONE_MATCH: return EDHOC_COAP_FORMAT_EMPTY;
    case COAP_OPT_URI_HOST:
    case COAP_OPT_LOCATION_PATH:
    case COAP_OPT_URI_PATH:
    case COAP_OPT_URI_QUERY:
    case COAP_OPT_LOCATION_QUERY:
    case COAP_OPT_PROXY_URI:
    case COAP_OPT_PROXY_SCHEME: return EDHOC_COAP_FORMAT_STRING;
    case COAP_OPT_OBSERVE:
    case COAP_OPT_URI_PORT:
    case COAP_OPT_CONTENT_FORMAT:
    case COAP_OPT_MAX_AGE:
    case COAP_OPT_ACCEPT:
    case COAP_OPT_BLOCK2:
    case COAP_OPT_BLOCK1:
    case COAP_OPT_SIZE2:
    case COAP_OPT_SIZE1:
    case COAP_OPT_NO_RESPONSE: return EDHOC_COAP_FORMAT_UINT;
    default: return EDHOC_COAP_FORMAT_OPAQUE;
    }
}
