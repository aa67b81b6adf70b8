#include "client_coap.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "edhoc/coap_msg.h"

int cli_coap_method(const char *name)
{
    static const struct {
        const char *n;
        int code;
    } m[] = {{"GET", 1},   {"POST", 2},  {"PUT", 3},   {"DELETE", 4},
             {"FETCH", 5}, {"PATCH", 6}, {"IPATCH", 7}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        if (!strcasecmp(name, m[i].n))
            return m[i].code;
    }
    return -1;
}

long cli_coap_build_request(uint8_t code, const char *path, const char *query, int cf,
                            const uint8_t *payload, size_t payload_len, long observe, uint8_t *out,
                            size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = code;
    uint8_t obs[4], cfv[4];
    if (observe >= 0 && edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, obs,
                                                  edhoc_coap_uint_encode((uint32_t)observe, obs)))
        return -1;
    /* Segments point into path / query themselves (kept alive by the caller). */
    const char *s = path ? path : "";
    while (*s) {
        if (*s == '/') {
            s++;
            continue;
        }
        size_t n = strcspn(s, "/");
        if (edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)s, n))
            return -1;
        s += n;
    }
    if (cf >= 0 && edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cfv,
                                             edhoc_coap_uint_encode((uint32_t)cf, cfv)))
        return -1;
    s = query ? query : "";
    while (*s) {
        size_t n = strcspn(s, "&");
        if (n && edhoc_coap_msg_add_option(&m, COAP_OPT_URI_QUERY, (const uint8_t *)s, n))
            return -1;
        s += n;
        if (*s == '&')
            s++;
    }
    m.payload = payload_len ? payload : NULL;
    m.payload_len = payload_len;
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

const char *cli_coap_code_name(uint8_t code, char *buf, size_t cap)
{
    static const struct {
        uint8_t code;
        const char *name;
    } names[] = {{0x41, "Created"},
                 {0x42, "Deleted"},
                 {0x43, "Valid"},
                 {0x44, "Changed"},
                 {0x45, "Content"},
                 {0x5f, "Continue"},
                 {0x80, "Bad Request"},
                 {0x81, "Unauthorized"},
                 {0x82, "Bad Option"},
                 {0x83, "Forbidden"},
                 {0x84, "Not Found"},
                 {0x85, "Method Not Allowed"},
                 {0x86, "Not Acceptable"},
                 {0x88, "Request Entity Incomplete"},
                 {0x8d, "Request Entity Too Large"},
                 {0x8f, "Unsupported Content-Format"},
                 {0xa0, "Internal Server Error"},
                 {0xa1, "Not Implemented"},
                 {0xa3, "Service Unavailable"}};
    const char *name = "";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (names[i].code == code)
            name = names[i].name;
    }
    snprintf(buf, cap, "%d.%02d%s%s", code >> 5, code & 31, name[0] ? " " : "", name);
    return buf;
}

int cli_coap_response_view(const uint8_t *msg, size_t len, uint8_t *code, int *cf,
                           const uint8_t **payload, size_t *payload_len)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, len, &m))
        return -1;
    *code = m.code;
    *cf = -1;
    const struct coap_option *o = edhoc_coap_msg_find_option(&m, COAP_OPT_CONTENT_FORMAT);
    uint32_t v;
    if (o && !edhoc_coap_option_uint(o, &v))
        *cf = (int)v;
    *payload = m.payload;
    *payload_len = m.payload_len;
    return 0;
}

bool cli_coap_payload_printable(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (!isprint(p[i]) && p[i] != '\n' && p[i] != '\t' && p[i] != '\r')
            return false;
    }
    return true;
}

long cli_coap_with_echo(const uint8_t *req, size_t len, const uint8_t *echo, size_t echo_len,
                        uint8_t *out, size_t cap)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(req, len, &m))
        return -1;
    for (size_t i = 0; i < m.option_count; i++) {
        if (m.options[i].number == COAP_OPT_ECHO) {
            m.options[i].value = echo;
            m.options[i].len = (uint16_t)echo_len;
            long n = edhoc_coap_msg_encode(&m, out, cap);
            return n < 0 ? -1 : n;
        }
    }
    if (edhoc_coap_msg_add_option(&m, COAP_OPT_ECHO, echo, echo_len))
        return -1;
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

void cli_unprotected_answer_text(const uint8_t *msg, size_t len, char *out, size_t cap)
{
    uint8_t code = 0;
    int cf;
    const uint8_t *pl = NULL;
    size_t pll = 0;
    char cn[48];
    if (!msg || cli_coap_response_view(msg, len, &code, &cf, &pl, &pll)) {
        snprintf(out, cap, "the peer answered without OSCORE (an unreadable CoAP message)");
        return;
    }
    int n = snprintf(out, cap, "the peer answered without OSCORE: %s",
                     cli_coap_code_name(code, cn, sizeof cn));
    if (n < 0 || (size_t)n >= cap || !pll)
        return;
    /* The diagnostic payload of the OSCORE errors (RFC 8613 Section 8.2)
     * is short text; anything else is shown in part, as hex. */
    size_t room = cap - (size_t)n;
    if (cli_coap_payload_printable(pl, pll))
        snprintf(out + n, room, ": %.*s%s", (int)(pll > 120 ? 120 : pll), (const char *)pl,
                 pll > 120 ? "..." : "");
    else {
        size_t k = pll > 24 ? 24 : pll;
        int w = snprintf(out + n, room, ": payload ");
        for (size_t i = 0; w > 0 && (size_t)(n + w) + 3 < cap && i < k; i++)
            w += snprintf(out + n + w, cap - (size_t)(n + w), "%02x", pl[i]);
        if (k < pll && w > 0 && (size_t)(n + w) + 4 < cap)
            snprintf(out + n + w, cap - (size_t)(n + w), "...");
    }
    if (pll == 15 && !memcmp(pl, "Replay detected", 15)) {
        size_t used = strlen(out);
        snprintf(out + used, cap - used,
                 " (the server has seen this sequence number: the context was used elsewhere, "
                 "by another tool or with another state directory)");
    }
}

long cli_coap_add_options(uint8_t *msg, long len, size_t cap, long accept,
                          const struct client_coap_option *extra, size_t n_extra)
{
    if (len < 0 || (accept < 0 && n_extra == 0))
        return len;
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, (size_t)len, &m))
        return -1;
    uint8_t acc[4];
    if (accept >= 0 && edhoc_coap_msg_add_option(&m, COAP_OPT_ACCEPT, acc,
                                                 edhoc_coap_uint_encode((uint32_t)accept, acc)))
        return -1;
    for (size_t i = 0; i < n_extra; i++)
        if (edhoc_coap_msg_add_option(&m, extra[i].number, extra[i].value, extra[i].len))
            return -1;
    /* m points into msg: encode elsewhere first. */
    uint8_t *tmp = malloc(cap);
    if (!tmp)
        return -1;
    long n = edhoc_coap_msg_encode(&m, tmp, cap);
    if (n > 0)
        memcpy(msg, tmp, (size_t)n);
    free(tmp);
    return n < 0 ? -1 : n;
}
