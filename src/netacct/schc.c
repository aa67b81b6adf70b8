/*
 * SCHC (RFC 8724) for EDHOC and OSCORE over CoAP on LoRaWAN: the residue
 * the compression of one rule set leaves of the IPv6 + UDP + CoAP headers,
 * and the fragment sizes of the RFC 9011 uplink fragmentation profile.
 *
 * The rule set (docs/airtime.md, "SCHC rules"):
 *   IPv6 and UDP, every rule: all fields not-sent or computed, as in a
 *   LoRaWAN device-gateway context (RFC 9011 Section 5.5: the IID is
 *   derived from DevEUI; prefix, ports, hop limit fixed by the rule;
 *   lengths and the UDP checksum computed, RFC 8724 Sections 7.4.5, 10.11,
 *   the LoRaWAN MIC protecting the frame).
 *   CoAP header, every rule (RFC 8824 Sections 4 and 5): version not-sent,
 *   type and code mapping-sent over the rule's list (0 bits for one entry),
 *   TKL value-sent (4 bits), token value-sent (TKL bytes), Message ID
 *   MSB(12) matched and LSB 4 bits sent, payload marker not sent.
 *   Options, by rule (fixed values not-sent, the others value-sent with the
 *   RFC 8724 Section 7.4.2 length prefix):
 *     1 EDHOC request:           CON, POST, Uri-Path .well-known/edhoc,
 *                                Content-Format 65
 *     2 EDHOC request with Echo: as 1 with an Echo option (value-sent)
 *     3 EDHOC response:          ACK|CON, 2.04|4.00, Content-Format 64
 *     4 Echo challenge:          ACK|CON, 4.01, Echo (value-sent)
 *     5 header only:             ACK|CON, 0.00|2.04|2.05|4.00 (empty ACK,
 *                                the 2.04 to message_3)
 *     6 OSCORE request:          CON|NON, POST|FETCH, OSCORE (value-sent)
 *     7 OSCORE request, host:    as 6 with Uri-Host (value-sent) first
 *     8 OSCORE response:         ACK|CON, 2.04|2.05, OSCORE (value-sent)
 *     9 EDHOC + OSCORE (RFC 9668): CON, POST|FETCH, OSCORE (value-sent),
 *                                EDHOC option (empty, not-sent)
 *   A message no rule matches goes with rule 0, no compression: the whole
 *   IPv6 + UDP + CoAP header as residue.
 * The RuleID is not counted in the residue: RFC 9011 Section 5.3 carries
 * it in FPort, which the LoRaWAN MAC overhead already counts.
 */
#include <string.h>

#include "edhoc/netacct.h"

#define OPT_URI_HOST       3
#define OPT_URI_PATH       11
#define OPT_CONTENT_FORMAT 12
#define OPT_OSCORE         9
#define OPT_EDHOC          21
#define OPT_ECHO           252

#define TYPE_CON 0
#define TYPE_NON 1
#define TYPE_ACK 2

#define CODE(c, d) ((uint8_t)((c) << 5 | (d)))

#define MAX_OPTS 16

struct coap_view {
    uint8_t type, tkl, code;
    size_t header_len; /* everything before the payload, marker included */
    size_t payload_len;
    size_t n_opts;
    struct {
        unsigned number;
        const uint8_t *value;
        size_t len;
    } opt[MAX_OPTS];
    bool too_many_options;
};

/* RFC 7252 Section 3: header, token, options, payload. Never reads past
 * len; returns false for anything that is not a well-formed message. */
static bool coap_view_parse(const uint8_t *m, size_t len, struct coap_view *v)
{
    memset(v, 0, sizeof *v);
    if (len < 4 || (m[0] >> 6) != 1)
        return false;
    v->type = (m[0] >> 4) & 3;
    v->tkl = m[0] & 15;
    v->code = m[1];
    if (v->tkl > 8 || 4u + v->tkl > len)
        return false;
    size_t i = 4u + v->tkl;
    unsigned number = 0;
    while (i < len) {
        if (m[i] == 0xff) {
            if (i + 1 == len)
                return false; /* a marker with no payload */
            v->header_len = i + 1;
            v->payload_len = len - i - 1;
            return true;
        }
        unsigned delta = m[i] >> 4, olen = m[i] & 15;
        i++;
        unsigned *field[2] = {&delta, &olen};
        for (int f = 0; f < 2; f++) {
            if (*field[f] == 13) {
                if (i >= len)
                    return false;
                *field[f] = 13u + m[i++];
            } else if (*field[f] == 14) {
                if (i + 1 >= len)
                    return false;
                *field[f] = 269u + ((unsigned)m[i] << 8 | m[i + 1]);
                i += 2;
            } else if (*field[f] == 15) {
                return false;
            }
        }
        if (olen > len - i)
            return false;
        number += delta;
        if (v->n_opts < MAX_OPTS) {
            v->opt[v->n_opts].number = number;
            v->opt[v->n_opts].value = m + i;
            v->opt[v->n_opts].len = olen;
            v->n_opts++;
        } else {
            v->too_many_options = true;
        }
        i += olen;
    }
    v->header_len = len;
    v->payload_len = 0;
    return true;
}

struct rule_opt {
    unsigned number;
    const char *value; /* NULL: value-sent; else equal / not-sent */
    size_t len;
};

struct rule {
    unsigned id;
    uint8_t types[4];
    size_t n_types;
    uint8_t codes[4];
    size_t n_codes;
    struct rule_opt opts[5];
    size_t n_opts;
};

static const struct rule rules[] = {
    {1,
     {TYPE_CON},
     1,
     {CODE(0, 2)},
     1,
     {{OPT_URI_PATH, ".well-known", 11},
      {OPT_URI_PATH, "edhoc", 5},
      {OPT_CONTENT_FORMAT, "\x41", 1}},
     3},
    {2,
     {TYPE_CON},
     1,
     {CODE(0, 2)},
     1,
     {{OPT_URI_PATH, ".well-known", 11},
      {OPT_URI_PATH, "edhoc", 5},
      {OPT_CONTENT_FORMAT, "\x41", 1},
      {OPT_ECHO, NULL, 0}},
     4},
    {3, {TYPE_ACK, TYPE_CON}, 2, {CODE(2, 4), CODE(4, 0)}, 2, {{OPT_CONTENT_FORMAT, "\x40", 1}}, 1},
    {4, {TYPE_ACK, TYPE_CON}, 2, {CODE(4, 1)}, 1, {{OPT_ECHO, NULL, 0}}, 1},
    {5, {TYPE_ACK, TYPE_CON}, 2, {CODE(0, 0), CODE(2, 4), CODE(2, 5), CODE(4, 0)}, 4, {{0}}, 0},
    {6, {TYPE_CON, TYPE_NON}, 2, {CODE(0, 2), CODE(0, 5)}, 2, {{OPT_OSCORE, NULL, 0}}, 1},
    {7,
     {TYPE_CON, TYPE_NON},
     2,
     {CODE(0, 2), CODE(0, 5)},
     2,
     {{OPT_URI_HOST, NULL, 0}, {OPT_OSCORE, NULL, 0}},
     2},
    {8, {TYPE_ACK, TYPE_CON}, 2, {CODE(2, 4), CODE(2, 5)}, 2, {{OPT_OSCORE, NULL, 0}}, 1},
    {9, {TYPE_CON}, 1, {CODE(0, 2), CODE(0, 5)}, 2, {{OPT_OSCORE, NULL, 0}, {OPT_EDHOC, "", 0}}, 2},
};

/* Bits of a mapping-sent index over n entries: ceil(log2(n)). */
static unsigned mapping_bits(size_t n)
{
    unsigned b = 0;
    while (((size_t)1 << b) < n)
        b++;
    return b;
}

/* RFC 8724 Section 7.4.2: a variable-length residue is preceded by its
 * length in bytes: 4 bits below 15, 0xF + 8 bits below 255, else
 * 0xF + 0xFF + 16 bits. */
static size_t variable_bits(size_t len)
{
    size_t prefix = len < 15 ? 4 : len < 255 ? 12 : 28;
    return prefix + 8 * len;
}

static bool in_list(const uint8_t *list, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == v)
            return true;
    return false;
}

/* The residue of v under r, or -1 when r does not match. */
static long rule_residue(const struct rule *r, const struct coap_view *v)
{
    if (!in_list(r->types, r->n_types, v->type) || !in_list(r->codes, r->n_codes, v->code) ||
        v->n_opts != r->n_opts || v->too_many_options)
        return -1;
    size_t bits = mapping_bits(r->n_types) + mapping_bits(r->n_codes);
    bits += 4 + 8u * v->tkl + 4; /* TKL, token, Message ID LSB */
    for (size_t i = 0; i < r->n_opts; i++) {
        const struct rule_opt *ro = &r->opts[i];
        if (v->opt[i].number != ro->number)
            return -1;
        if (ro->value) {
            if (v->opt[i].len != ro->len ||
                (ro->len && memcmp(v->opt[i].value, ro->value, ro->len)))
                return -1;
        } else {
            bits += variable_bits(v->opt[i].len);
        }
    }
    return (long)bits;
}

long edhoc_netacct_schc_residue(const uint8_t *coap, size_t len, unsigned *rule,
                                size_t *payload_len)
{
    struct coap_view v;
    if (!coap || !coap_view_parse(coap, len, &v))
        return EDHOC_NETACCT_ERR_ARG;
    if (payload_len)
        *payload_len = v.payload_len;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        long bits = rule_residue(&rules[i], &v);
        if (bits >= 0) {
            if (rule)
                *rule = rules[i].id;
            return bits;
        }
    }
    if (rule)
        *rule = 0;
    /* No compression: IPv6 40 + UDP 8 + the CoAP header as it is (the
     * payload marker included: without a rule nothing implies it). */
    return (long)(8 * (EDHOC_NETACCT_IPV6_HEADER + EDHOC_NETACCT_UDP_HEADER + v.header_len));
}

long edhoc_netacct_schc_packet(const uint8_t *coap, size_t len)
{
    if (!coap)
        return (long)len;
    size_t payload = 0;
    long bits = edhoc_netacct_schc_residue(coap, len, NULL, &payload);
    if (bits < 0)
        return (long)len; /* not CoAP: carried whole, as an unknown message would be */
    /* RFC 8724 Section 7.2: padded to the LoRaWAN layer-2 word, a byte. */
    return (long)((size_t)(bits + 7) / 8 + payload);
}

/* RFC 9011 Section 5.6.1 (uplink, ACK-on-Error): FPort carries the
 * fragmentation RuleID, then W (2 bits) and FCN (6 bits): a 1-byte
 * header; tiles of 10 bytes; the All-1 fragment adds the 32-bit RCS.
 * WINDOW_SIZE 63 and 4 windows bound a packet at 252 tiles. */
#define FRAG_HEADER    1
#define FRAG_TILE      10
#define FRAG_RCS       4
#define FRAG_MAX_TILES 252

unsigned edhoc_netacct_schc_fragments(size_t len, size_t max_payload, size_t *sizes, size_t cap)
{
    if (max_payload < FRAG_HEADER + FRAG_TILE || len == 0)
        return 0;
    size_t tiles = (len + FRAG_TILE - 1) / FRAG_TILE;
    if (tiles > FRAG_MAX_TILES)
        return 0;
    size_t last = len - FRAG_TILE * (tiles - 1);
    size_t per = (max_payload - FRAG_HEADER) / FRAG_TILE;
    /* The last tile rides in the All-1 when it fits beside the RCS. */
    bool last_in_all1 = FRAG_HEADER + FRAG_RCS + last <= max_payload;
    size_t regular_tiles = last_in_all1 ? tiles - 1 : tiles;
    size_t n = 0, left = regular_tiles, bytes_left = last_in_all1 ? len - last : len;
    while (left > 0) {
        size_t take = left < per ? left : per;
        size_t b = take * FRAG_TILE < bytes_left ? take * FRAG_TILE : bytes_left;
        if (sizes && n < cap)
            sizes[n] = FRAG_HEADER + b;
        n++;
        left -= take;
        bytes_left -= b;
    }
    if (sizes && n < cap)
        sizes[n] = FRAG_HEADER + FRAG_RCS + (last_in_all1 ? last : 0);
    return (unsigned)(n + 1);
}
