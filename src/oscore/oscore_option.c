/*
 * OSCORE (RFC 8613) building blocks: the AEAD nonce (Section 5.2), the AAD
 * (Section 5.4), Partial IVs, the OSCORE option (Section 6.1), option
 * classes and the split of a message's options into inner and outer ones
 * (Section 4.1), Proxy-Uri included.
 */
#include <stdio.h>
#include <string.h>

#include "edhoc/cbor.h"
#include "edhoc/coap_msg.h"
#include "edhoc/oscore.h"
#include "oscore_internal.h"

/* ---- Building blocks ---- */

int oscore_nonce(const struct oscore_context *c, const uint8_t *id, size_t id_len,
                 const uint8_t *piv, size_t piv_len, uint8_t *nonce)
{
    size_t n = c->nonce_len;
    if (id_len > n - 6 || piv_len > OSCORE_MAX_PIV || (id_len && !id) || (piv_len && !piv))
        return OSCORE_ERR_INVALID;
    memset(nonce, 0, n);
    nonce[0] = (uint8_t)id_len;
    if (id_len)
        memcpy(nonce + (n - 5 - id_len), id, id_len);
    if (piv_len)
        memcpy(nonce + (n - piv_len), piv, piv_len);
    for (size_t i = 0; i < n; i++)
        nonce[i] ^= c->common_iv[i];
    return 0;
}

long oscore_aad(int aead_alg, const uint8_t *request_kid, size_t kid_len,
                const uint8_t *request_piv, size_t piv_len, uint8_t *out, size_t cap)
{
    if (kid_len > OSCORE_MAX_ID || piv_len > OSCORE_MAX_PIV)
        return OSCORE_ERR_INVALID;
    /* aad_array = [1, [alg], request_kid, request_piv, options = h''] */
    uint8_t arr[32];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, arr, sizeof arr);
    edhoc_cbor_put_array(&w, 5);
    edhoc_cbor_put_uint(&w, 1);
    edhoc_cbor_put_array(&w, 1);
    edhoc_cbor_put_int(&w, aead_alg);
    edhoc_cbor_put_bstr(&w, request_kid, kid_len);
    edhoc_cbor_put_bstr(&w, request_piv, piv_len);
    edhoc_cbor_put_bstr(&w, NULL, 0);
    long arr_len = edhoc_cbor_writer_finish(&w);
    if (arr_len < 0)
        return OSCORE_ERR_INVALID;
    /* Enc_structure = ["Encrypt0", h'', external_aad = bstr .cbor aad_array] */
    edhoc_cbor_writer_init(&w, out, cap);
    edhoc_cbor_put_array(&w, 3);
    edhoc_cbor_put_tstr(&w, "Encrypt0", 8);
    edhoc_cbor_put_bstr(&w, NULL, 0);
    edhoc_cbor_put_bstr(&w, arr, (size_t)arr_len);
    long n = edhoc_cbor_writer_finish(&w);
    return n < 0 ? OSCORE_ERR_BUFFER : n;
}

size_t oscore_piv_encode(uint64_t ssn, uint8_t piv[OSCORE_MAX_PIV])
{
    if (ssn > OSCORE_SSN_MAX)
        return 0;
    size_t n = 1;
    while (n < OSCORE_MAX_PIV && (ssn >> (8 * n)) != 0)
        n++;
    for (size_t i = 0; i < n; i++)
        piv[i] = (uint8_t)(ssn >> (8 * (n - 1 - i)));
    return n;
}

/* ---- OSCORE option ---- */

int oscore_option_parse(const uint8_t *v, size_t len, struct oscore_option *o)
{
    memset(o, 0, sizeof *o);
    if (len == 0)
        return 0;
    if (!v)
        return OSCORE_ERR_BAD_OPTION;
    uint8_t flags = v[0];
    /* Reserved bits, n = 6/7, and a lone all-zero flag byte (which must be
     * sent as an empty value) are malformed. */
    if ((flags & 0xe0) || (flags & 0x07) > 5 || flags == 0)
        return OSCORE_ERR_BAD_OPTION;
    size_t pos = 1;
    size_t n = flags & 0x07;
    if (n) {
        if (len - pos < n)
            return OSCORE_ERR_BAD_OPTION;
        o->piv = v + pos;
        o->piv_len = n;
        pos += n;
    }
    if (flags & 0x10) {
        if (len - pos < 1)
            return OSCORE_ERR_BAD_OPTION;
        size_t s = v[pos++];
        if (len - pos < s)
            return OSCORE_ERR_BAD_OPTION;
        o->has_kid_context = true;
        o->kid_context = v + pos;
        o->kid_context_len = s;
        pos += s;
    }
    if (flags & 0x08) {
        o->has_kid = true;
        o->kid = v + pos;
        o->kid_len = len - pos;
        pos = len;
    }
    if (pos != len)
        return OSCORE_ERR_BAD_OPTION;
    return 0;
}

long oscore_option_encode(const struct oscore_option *o, uint8_t *out, size_t cap)
{
    if (o->piv_len > OSCORE_MAX_PIV || (o->has_kid_context && o->kid_context_len > 255))
        return OSCORE_ERR_INVALID;
    uint8_t flags =
        (uint8_t)(o->piv_len | (o->has_kid ? 0x08 : 0) | (o->has_kid_context ? 0x10 : 0));
    if (flags == 0)
        return 0;
    size_t need = 1 + o->piv_len + (o->has_kid_context ? 1 + o->kid_context_len : 0) +
                  (o->has_kid ? o->kid_len : 0);
    if (need > cap)
        return OSCORE_ERR_BUFFER;
    size_t pos = 0;
    out[pos++] = flags;
    if (o->piv_len) {
        memcpy(out + pos, o->piv, o->piv_len);
        pos += o->piv_len;
    }
    if (o->has_kid_context) {
        out[pos++] = (uint8_t)o->kid_context_len;
        if (o->kid_context_len)
            memcpy(out + pos, o->kid_context, o->kid_context_len);
        pos += o->kid_context_len;
    }
    if (o->has_kid && o->kid_len) {
        memcpy(out + pos, o->kid, o->kid_len);
        pos += o->kid_len;
    }
    return (long)pos;
}

/* The single OSCORE option of a parsed message. */
int oscore_find_option(const struct coap_msg *m, struct oscore_option *o)
{
    const struct coap_option *found = NULL;
    for (size_t i = 0; i < m->option_count; i++) {
        if (m->options[i].number == COAP_OPT_OSCORE) {
            if (found)
                return OSCORE_ERR_BAD_OPTION; /* not repeatable */
            found = &m->options[i];
        }
    }
    if (!found)
        return OSCORE_ERR_NOT_OSCORE;
    return oscore_option_parse(found->value, found->len, o);
}

int oscore_message_option(const uint8_t *msg, size_t len, struct oscore_option *o)
{
    struct coap_msg m;
    if (!msg || !o || edhoc_coap_msg_parse(msg, len, &m) != 0)
        return OSCORE_ERR_MALFORMED;
    return oscore_find_option(&m, o);
}

/* ---- Option classes (Section 4.1) ---- */

unsigned oscore_option_class(uint16_t number)
{
    switch (number) {
    /* Figure 5: U only. */
    case COAP_OPT_URI_HOST:
    case COAP_OPT_URI_PORT:
    case COAP_OPT_OSCORE:
    case COAP_OPT_PROXY_URI:
    case COAP_OPT_PROXY_SCHEME: return OSCORE_CLASS_U;
    /* Figure 5: E and U. */
    case COAP_OPT_OBSERVE:
    case COAP_OPT_MAX_AGE:
    case COAP_OPT_BLOCK2:
    case COAP_OPT_BLOCK1:
    case COAP_OPT_SIZE2:
    case COAP_OPT_SIZE1:
    case COAP_OPT_NO_RESPONSE:
    /* RFC 9175 Section 2.2.1: Echo "MAY be an Inner or Outer option";
     * Section 3.2.1: Request-Tag "is both a class E and a class U option". */
    case COAP_OPT_ECHO:
    case COAP_OPT_REQUEST_TAG: return OSCORE_CLASS_E | OSCORE_CLASS_U;
    /* Figure 5's E-only rows, and Section 4.1: "Options that are unknown
     * or for which OSCORE processing is not defined SHALL be processed as
     * Class E". */
    default: return OSCORE_CLASS_E;
    }
}

/* Class U only: kept outside, never encrypted. Everything else is sent
 * Inner (Observe is also outer, handled separately), and an outer
 * instance of an option that has an E column is discarded on receipt
 * (Sections 8.2 and 8.4 step 1). */
bool oscore_is_outer_only(uint16_t number)
{
    return oscore_option_class(number) == OSCORE_CLASS_U;
}

/* Stable insertion sort by option number (lists are short and nearly sorted). */
void oscore_sort_options(struct coap_option *opts, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct coap_option t = opts[i];
        size_t j = i;
        while (j > 0 && opts[j - 1].number > t.number) {
            opts[j] = opts[j - 1];
            j--;
        }
        opts[j] = t;
    }
}

static int hexval(uint8_t ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

int oscore_add_option(struct coap_option *list, size_t *n, size_t cap, uint16_t number,
                      const uint8_t *value, size_t len)
{
    if (*n == cap)
        return OSCORE_ERR_TOO_LARGE;
    list[*n].number = number;
    list[*n].len = (uint16_t)len;
    list[*n].value = value;
    (*n)++;
    return 0;
}

/* Append the percent-decoded [p, end) as an inner option. */
static int add_decoded(struct oscore_split *s, uint16_t number, const uint8_t *p,
                       const uint8_t *end)
{
    uint8_t *dst = s->scratch + s->scratch_len;
    size_t room = sizeof s->scratch - s->scratch_len;
    size_t n = 0;
    while (p < end) {
        /* Uri-Path / Uri-Query are at most 255 bytes; checking before each
         * write also keeps every segment inside scratch. */
        if (n == 255 || n == room)
            return OSCORE_ERR_INVALID;
        if (*p == '%') {
            if (end - p < 3 || hexval(p[1]) < 0 || hexval(p[2]) < 0)
                return OSCORE_ERR_INVALID;
            dst[n++] = (uint8_t)(hexval(p[1]) << 4 | hexval(p[2]));
            p += 3;
        } else {
            dst[n++] = *p++;
        }
    }
    s->scratch_len += n;
    return oscore_add_option(s->inner, &s->n_inner, MAX_INNER_OPTS, number, dst, n);
}

/* One option per part of [p, end) between separators (empty parts too). */
static int add_each_part(struct oscore_split *s, uint16_t number, const uint8_t *p,
                         const uint8_t *end, uint8_t sep)
{
    for (const uint8_t *q = p;; q++) {
        if (q == end || *q == sep) {
            int rc = add_decoded(s, number, p, q);
            if (rc || q == end)
                return rc;
            p = q + 1;
        }
    }
}

/* The default port of a URI scheme (RFC 7252 Sections 6.1 and 6.2, RFC
 * 8323 Sections 8.1-8.4, RFC 7230 Sections 2.7.1-2.7.2), 0 if unknown. */
static unsigned default_port(const uint8_t *scheme, size_t len)
{
    static const struct {
        const char *name;
        unsigned port;
    } ports[] = {{"coap", 5683},  {"coaps", 5684},   {"coap+tcp", 5683}, {"coaps+tcp", 5684},
                 {"coap+ws", 80}, {"coaps+ws", 443}, {"http", 80},       {"https", 443}};
    for (size_t i = 0; i < sizeof ports / sizeof ports[0]; i++) {
        if (strlen(ports[i].name) == len && memcmp(ports[i].name, scheme, len) == 0)
            return ports[i].port;
    }
    return 0;
}

static uint8_t ascii_lower(uint8_t ch)
{
    return ch >= 'A' && ch <= 'Z' ? (uint8_t)(ch - 'A' + 'a') : ch;
}

/* Section 4.1.3.3: "the client SHALL first decompose the Proxy-Uri value
 * ... into the Proxy-Scheme, Uri-Host, Uri-Port, Uri-Path, and Uri-Query
 * options according to Section 6.4 of [RFC7252]"; Uri-Path and Uri-Query
 * become Inner, and "The Proxy-Uri option of the OSCORE message SHALL be
 * set to the composition of Proxy-Scheme, Uri-Host, and Uri-Port options
 * as specified in Section 6.5 of [RFC7252]". Decomposing lowercases the
 * scheme and host (RFC 7252 Section 6.4 steps 3 and 5, RFC 3986 Section
 * 3.1) and reads the port; composing writes scheme "://" host, then ":"
 * and the port in decimal only when it is not the scheme's default
 * (Section 6.5 step 5). A userinfo has no option to go into, so a URI
 * with one is refused. */
static int split_proxy_uri(struct oscore_split *s, const struct coap_option *o)
{
    const uint8_t *v = o->value, *end = o->value + o->len;
    if (o->len > sizeof s->scratch)
        return OSCORE_ERR_INVALID;
    const uint8_t *p = v;
    while (p < end && *p != ':')
        p++;
    if (p == v || end - p < 3 || p[1] != '/' || p[2] != '/')
        return OSCORE_ERR_INVALID; /* not an absolute URI with an authority */
    size_t scheme_len = (size_t)(p - v);
    const uint8_t *host = p + 3;
    p = host;
    while (p < end && *p != '/' && *p != '?' && *p != '#')
        p++;
    const uint8_t *auth_end = p;
    /* The port follows the last ':' outside an IP-literal's brackets. */
    const uint8_t *host_end = auth_end, *port = NULL;
    bool in_brackets = false;
    for (const uint8_t *q = host; q < auth_end; q++) {
        if (*q == '@')
            return OSCORE_ERR_INVALID; /* userinfo */
        if (*q == '[')
            in_brackets = true;
        else if (*q == ']')
            in_brackets = false;
        else if (*q == ':' && !in_brackets) {
            host_end = q;
            port = q + 1;
        }
    }
    if (host_end == host || in_brackets)
        return OSCORE_ERR_INVALID; /* no host, or an unclosed IP-literal */
    unsigned long port_value = 0;
    bool has_port = port && port < auth_end; /* "host:" is no port (RFC 3986 3.2.3) */
    if (port) {
        for (const uint8_t *q = port; q < auth_end; q++) {
            if (*q < '0' || *q > '9')
                return OSCORE_ERR_INVALID;
            port_value = port_value * 10 + (unsigned long)(*q - '0');
            if (port_value > 65535)
                return OSCORE_ERR_INVALID;
        }
    }
    uint8_t *w = s->proxy_uri;
    for (size_t i = 0; i < scheme_len; i++)
        *w++ = ascii_lower(v[i]);
    memcpy(w, "://", 3);
    w += 3;
    for (const uint8_t *q = host; q < host_end; q++)
        *w++ = ascii_lower(*q);
    if (has_port && port_value != default_port(s->proxy_uri, scheme_len)) {
        char digits[8];
        int dn = snprintf(digits, sizeof digits, ":%lu", port_value);
        /* Never longer than the ":port" it replaces, leading zeros aside. */
        memcpy(w, digits, (size_t)dn);
        w += dn;
    }
    int rc = oscore_add_option(s->outer, &s->n_outer, MAX_OUTER_OPTS, COAP_OPT_PROXY_URI,
                               s->proxy_uri, (size_t)(w - s->proxy_uri));
    if (rc)
        return rc;
    p = auth_end;
    for (const uint8_t *q = p; q < end; q++) {
        if (*q == '#')
            return OSCORE_ERR_INVALID; /* fragments are not allowed in CoAP URIs */
    }
    const uint8_t *path_end = p;
    while (path_end < end && *path_end != '?')
        path_end++;
    /* An empty path or "/" gives no Uri-Path (RFC 7252 Section 6.4). */
    if (path_end - p > 1) {
        rc = add_each_part(s, COAP_OPT_URI_PATH, p + 1, path_end, '/');
        if (rc)
            return rc;
    }
    if (path_end < end)
        return add_each_part(s, COAP_OPT_URI_QUERY, path_end + 1, end, '&');
    return 0;
}

static const uint8_t empty_value[1] = {0};

/* Sort the options of the original message into inner and outer lists. */
int oscore_split_options(const struct coap_msg *m, bool is_request, struct oscore_split *s)
{
    s->n_outer = s->n_inner = s->scratch_len = 0;
    bool has_proxy_uri = false, has_uri_path_or_query = false;
    for (size_t i = 0; i < m->option_count; i++) {
        const struct coap_option *o = &m->options[i];
        int rc;
        if (o->number == COAP_OPT_OSCORE)
            return OSCORE_ERR_NOT_OSCORE; /* nested OSCORE is not supported */
        if (o->number == COAP_OPT_URI_PATH || o->number == COAP_OPT_URI_QUERY)
            has_uri_path_or_query = true;
        if (o->number == COAP_OPT_PROXY_URI && is_request) {
            /* Not repeatable (RFC 7252 Section 5.10); a second one would
             * also be decoded after the first in the shared scratch. */
            if (has_proxy_uri)
                return OSCORE_ERR_INVALID;
            has_proxy_uri = true;
            rc = split_proxy_uri(s, o);
        } else if (oscore_is_outer_only(o->number)) {
            rc = oscore_add_option(s->outer, &s->n_outer, MAX_OUTER_OPTS, o->number, o->value,
                                   o->len);
        } else if (o->number == COAP_OPT_OBSERVE) {
            /* RFC 7641 Section 2 allows 0-3 bytes. A request copies the
             * value into both parts, so a longer one would also break the
             * growth OSCORE_MAX_OVERHEAD promises; a response keeps it
             * outside only, so its value is left to the sender. */
            if (is_request && o->len > 3)
                return OSCORE_ERR_INVALID;
            /* Requests: both carry the value. Notifications: the inner one
             * is empty, the outer one carries the value (4.1.3.5.2). */
            rc = oscore_add_option(s->inner, &s->n_inner, MAX_INNER_OPTS, o->number,
                                   is_request ? o->value : empty_value, is_request ? o->len : 0);
            if (rc == 0)
                rc = oscore_add_option(s->outer, &s->n_outer, MAX_OUTER_OPTS, o->number, o->value,
                                       o->len);
        } else {
            rc = oscore_add_option(s->inner, &s->n_inner, MAX_INNER_OPTS, o->number, o->value,
                                   o->len);
        }
        if (rc)
            return rc;
    }
    /* RFC 7252 Section 5.10.2: Proxy-Uri excludes the Uri-* options. */
    if (has_proxy_uri && has_uri_path_or_query)
        return OSCORE_ERR_INVALID;
    oscore_sort_options(s->inner, s->n_inner);
    return 0;
}
