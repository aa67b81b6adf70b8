/* The -v / -vv dump of the client commands (verbose_dump.h). Our own
 * codecs parse every message again: libcoap's coap_show_pdu would show
 * only what libcoap itself handles, and none of OSCORE's inner messages. */
#include "verbose_dump.h"

#include <stdio.h>
#include <string.h>

#include "client_coap.h"
#include "client_trace.h"
#include "edhoc/cbor.h"
#include "edhoc/coap_msg.h"
#include "edhoc/transport.h"

static const char *prog_name = "edhoc-cli";
static int level;

static const char *type_name(uint8_t t)
{
    static const char *const names[] = {"CON", "NON", "ACK", "RST"};
    return names[t & 3];
}

static void code_text(uint8_t code, char *buf, size_t cap)
{
    static const char *const methods[] = {"GET",   "POST",  "PUT",   "DELETE",
                                          "FETCH", "PATCH", "iPATCH"};
    if (code == COAP_CODE_EMPTY)
        snprintf(buf, cap, "0.00 Empty");
    else if (edhoc_coap_code_is_request(code) && code <= 7)
        snprintf(buf, cap, "0.%02d %s", code, methods[code - 1]);
    else
        cli_coap_code_name(code, buf, cap);
}

static void put_hex(FILE *f, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", p[i]);
}

/* Text options as "text" (unprintable bytes as \xNN: a peer chooses
 * them), integers as numbers, Block1/Block2 as NUM/M/SIZE (RFC 7959
 * Section 2.2), anything else as hex. */
static void put_option(FILE *f, const struct coap_option *o)
{
    const char *name = edhoc_coap_option_name(o->number);
    if (name)
        fprintf(f, " %s:", name);
    else
        fprintf(f, " Option-%u:", o->number);
    uint32_t v;
    enum edhoc_coap_option_format format = edhoc_coap_option_format(o->number);
    bool is_block = o->number == COAP_OPT_BLOCK1 || o->number == COAP_OPT_BLOCK2;
    if (format == EDHOC_COAP_FORMAT_STRING) {
        fputc('"', f);
        for (size_t i = 0; i < o->len; i++) {
            uint8_t c = o->value[i];
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
                fputc(c, f);
            else
                fprintf(f, "\\x%02x", c);
        }
        fputc('"', f);
    } else if (is_block && edhoc_coap_option_uint(o, &v) == 0 && (v & 7) != 7) {
        fprintf(f, "%lu/%u/%u", (unsigned long)(v >> 4), (unsigned)(v >> 3 & 1), 16u << (v & 7));
    } else if (!is_block && format == EDHOC_COAP_FORMAT_UINT &&
               edhoc_coap_option_uint(o, &v) == 0) {
        fprintf(f, "%lu", (unsigned long)v);
    } else if (o->len) {
        fputs("0x", f);
        put_hex(f, o->value, o->len);
    } else {
        fputs("(empty)", f);
    }
}

static void put_options_payload(FILE *f, const struct coap_msg *m)
{
    for (size_t i = 0; i < m->option_count; i++)
        put_option(f, &m->options[i]);
    fprintf(f, " payload %zu bytes\n", m->payload_len);
}

static void hex_dump(const uint8_t *p, size_t n)
{
    for (size_t at = 0; at < n; at += 16) {
        fprintf(stderr, "edhoc-cli %s:     %04zx ", prog_name, at);
        for (size_t i = at; i < at + 16 && i < n; i++)
            fprintf(stderr, " %02x", p[i]);
        fputc('\n', stderr);
    }
}

static void on_datagram(void *user, bool sent, const char *peer, const uint8_t *d, size_t len)
{
    (void)user;
    struct coap_msg m;
    if (edhoc_coap_msg_parse(d, len, &m)) {
        fprintf(stderr, "edhoc-cli %s: %s %s %zu bytes, not a CoAP message\n", prog_name,
                sent ? "->" : "<-", peer, len);
    } else {
        char code[48];
        code_text(m.code, code, sizeof code);
        bool oscore = edhoc_coap_msg_find_option(&m, COAP_OPT_OSCORE) != NULL;
        fprintf(stderr, "edhoc-cli %s: %s %s %s %s%s MID 0x%04x token ", prog_name,
                sent ? "->" : "<-", peer, type_name(m.type), code, oscore ? " (OSCORE outer)" : "",
                m.mid);
        if (m.token_len)
            put_hex(stderr, m.token, m.token_len);
        else
            fputs("(empty)", stderr);
        put_options_payload(stderr, &m);
    }
    if (level >= 2)
        hex_dump(d, len);
}

static void on_inner(void *user, bool sent, const uint8_t *msg, size_t len)
{
    (void)user;
    struct coap_msg m;
    const char *what = sent ? "request, before protection" : "response, verified";
    if (edhoc_coap_msg_parse(msg, len, &m)) {
        fprintf(stderr, "edhoc-cli %s:    OSCORE inner %s: %zu bytes, not a CoAP message\n",
                prog_name, what, len);
        return;
    }
    char code[48];
    code_text(m.code, code, sizeof code);
    fprintf(stderr, "edhoc-cli %s:    OSCORE inner %s: %s", prog_name, what, code);
    put_options_payload(stderr, &m);
}

/* One CBOR item in diagnostic notation (RFC 8949 Section 8). Nesting
 * deeper than a few levels is never EDHOC's and is elided rather than
 * followed: the item may be the peer's. Returns 0 or a CBOR error. */
static int put_item(FILE *f, struct edhoc_cbor_reader *r, int depth)
{
    if (depth > 8) {
        fputs("...", f);
        return edhoc_cbor_skip(r);
    }
    struct edhoc_cbor_item it;
    int rc = edhoc_cbor_get(r, &it);
    if (rc)
        return rc;
    switch (it.type) {
    case EDHOC_CBOR_UINT: fprintf(f, "%llu", (unsigned long long)it.u); break;
    case EDHOC_CBOR_NINT: fprintf(f, "-%llu", (unsigned long long)it.u + 1); break;
    case EDHOC_CBOR_BSTR:
        fputs("h'", f);
        put_hex(f, it.ptr, it.len);
        fprintf(f, "' (%zu bytes)", it.len);
        break;
    case EDHOC_CBOR_TSTR:
        fputc('"', f);
        for (size_t i = 0; i < it.len; i++) {
            uint8_t c = it.ptr[i];
            if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
                fputc(c, f);
            else
                fprintf(f, "\\x%02x", c);
        }
        fputc('"', f);
        break;
    case EDHOC_CBOR_ARRAY:
    case EDHOC_CBOR_MAP: {
        bool map = it.type == EDHOC_CBOR_MAP;
        fputc(map ? '{' : '[', f);
        for (size_t i = 0; i < it.len; i++) {
            if (i)
                fputs(", ", f);
            if ((rc = put_item(f, r, depth + 1)))
                return rc;
            if (map) {
                fputs(": ", f);
                if ((rc = put_item(f, r, depth + 1)))
                    return rc;
            }
        }
        fputc(map ? '}' : ']', f);
        break;
    }
    case EDHOC_CBOR_TAG:
        fprintf(f, "%llu(", (unsigned long long)it.u);
        if ((rc = put_item(f, r, depth + 1)))
            return rc;
        fputc(')', f);
        break;
    case EDHOC_CBOR_FALSE: fputs("false", f); break;
    case EDHOC_CBOR_TRUE: fputs("true", f); break;
    case EDHOC_CBOR_NULL: fputs("null", f); break;
    case EDHOC_CBOR_UNDEFINED: fputs("undefined", f); break;
    case EDHOC_CBOR_SIMPLE: fprintf(f, "simple(%llu)", (unsigned long long)it.u); break;
    case EDHOC_CBOR_FLOAT: fputs("(float)", f); break;
    }
    return 0;
}

/* The names RFC 9528 gives the items of each message (Sections 5.2.1,
 * 5.3.1, 5.4.1, 5.5.1, 6). */
static const char *item_name(const char *msg, size_t i)
{
    static const char *const m1[] = {"METHOD", "SUITES_I", "G_X", "C_I"};
    if (!strcmp(msg, "message_1"))
        return i < 4 ? m1[i] : "EAD_1";
    if (!strcmp(msg, "error"))
        return i == 0 ? "ERR_CODE" : i == 1 ? "ERR_INFO" : NULL;
    if (i)
        return NULL;
    if (!strcmp(msg, "message_2"))
        return "G_Y_CIPHERTEXT_2";
    if (!strcmp(msg, "message_3"))
        return "CIPHERTEXT_3";
    if (!strcmp(msg, "message_4"))
        return "CIPHERTEXT_4";
    return NULL;
}

static void on_edhoc(void *user, const char *name, bool sent, const uint8_t *msg, size_t len)
{
    (void)user;
    fprintf(stderr, "edhoc-cli %s: EDHOC %s %s, %zu bytes\n", prog_name, name,
            sent ? "sent" : "received", len);
    hex_dump(msg, len);
    /* An EDHOC message is a CBOR sequence (RFC 9528 Section 3.1). */
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, msg, len);
    for (size_t i = 0; !edhoc_cbor_at_end(&r); i++) {
        const char *in = item_name(name, i);
        if (in)
            fprintf(stderr, "edhoc-cli %s:     %s = ", prog_name, in);
        else
            fprintf(stderr, "edhoc-cli %s:     item %zu = ", prog_name, i + 1);
        int rc = put_item(stderr, &r, 0);
        if (rc) {
            fprintf(stderr, " (not CBOR from here on: %s)\n", edhoc_cbor_strerror(rc));
            return;
        }
        fputc('\n', stderr);
    }
}

void cli_verbose_start(const char *prog, int lvl)
{
    if (lvl <= 0)
        return;
    prog_name = prog;
    level = lvl;
    edhoc_transport_set_datagram_hook(on_datagram, NULL);
    struct client_trace_hooks h = {.inner = on_inner, .edhoc = lvl >= 2 ? on_edhoc : NULL};
    client_trace_set(&h);
}

void cli_verbose_stop(void)
{
    if (level <= 0)
        return;
    edhoc_transport_set_datagram_hook(NULL, NULL);
    client_trace_set(NULL);
    level = 0;
}
