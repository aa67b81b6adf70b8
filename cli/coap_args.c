/*
 * The values of coap's request options (--payload*, --content-format and
 * --accept, --token, --option), parsed and checked: each bad one gets one
 * line on standard error naming the option as typed.
 */
#include "coap_args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/coap_msg.h"
#include "util.h"

/* The request body from --payload, --payload-hex or --payload-file (a
 * file, or - for standard input), at most max_body bytes. Returns 0 or an
 * exit code (the message printed). */
int cli_coap_read_payload(const char *text, const char *hex, const char *file, size_t max_body,
                          uint8_t **body, size_t *len)
{
    *body = NULL;
    *len = 0;
    if (!text && !hex && !file)
        return 0;
    uint8_t *b = malloc(max_body + 1);
    if (!b)
        return CLI_EXIT_INTERNAL;
    size_t n = 0;
    if (text) {
        n = strlen(text);
        if (n > max_body) {
            fprintf(stderr, "edhoc-cli coap: --payload: %zu bytes, above --max-body %zu\n", n,
                    max_body);
            free(b);
            return CLI_EXIT_USAGE;
        }
        memcpy(b, text, n);
    } else if (hex) {
        long h = cli_hex_decode(hex, b, max_body);
        if (h < 0) {
            fprintf(stderr,
                    "edhoc-cli coap: --payload-hex: not hex (or above --max-body %zu "
                    "bytes)\n",
                    max_body);
            free(b);
            return CLI_EXIT_USAGE;
        }
        n = (size_t)h;
    } else {
        FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
        if (!f) {
            fprintf(stderr, "edhoc-cli coap: --payload-file %s: %s\n", file, strerror(errno));
            free(b);
            return CLI_EXIT_INPUT;
        }
        /* One byte more than allowed tells "too large" from "exactly". */
        n = fread(b, 1, max_body + 1, f);
        bool bad = ferror(f);
        if (f != stdin)
            fclose(f);
        if (bad || n > max_body) {
            fprintf(stderr, "edhoc-cli coap: --payload-file %s: %s\n", file,
                    bad ? "read error" : "larger than --max-body");
            free(b);
            return bad ? CLI_EXIT_INPUT : CLI_EXIT_USAGE;
        }
    }
    *body = b;
    *len = n;
    return 0;
}

/* The IANA CoAP Content-Formats registry's names for the numbers. */
static const struct {
    const char *name;
    long number;
} content_formats[] = {
    {"text/plain;charset=utf-8", 0}, {"application/link-format", 40},
    {"application/xml", 41},         {"application/octet-stream", 42},
    {"application/exi", 47},         {"application/json", 50},
    {"application/cbor", 60},        {"application/senml+json", 110},
    {"application/senml+cbor", 112}, {"application/oscore", 10001},
};

/* NAME|N of --content-format and --accept. Returns 0, or -1 after
 * printing why. */
int cli_coap_content_format_arg(const struct cli_opt_parser *p, long *out)
{
    for (size_t i = 0; i < sizeof content_formats / sizeof content_formats[0]; i++) {
        if (!strcmp(p->value, content_formats[i].name)) {
            *out = content_formats[i].number;
            return 0;
        }
    }
    char *end;
    errno = 0;
    long v = strtol(p->value, &end, 10);
    if (p->value[0] >= '0' && p->value[0] <= '9' && !*end && !errno && v <= 65535) {
        *out = v;
        return 0;
    }
    fprintf(stderr,
            "edhoc-cli coap: %s '%s': a number from 0 to 65535 or a registered name "
            "(application/json, application/cbor, ...; see edhoc-cli coap --help)\n",
            p->flag, p->value);
    return -1;
}

/* The options the request gets otherwise, refused with -O. */
static const char *option_set_elsewhere(long number)
{
    switch (number) {
    case COAP_OPT_OBSERVE: return "Observe (use --observe)";
    case COAP_OPT_OSCORE: return "OSCORE (use --oscore-context)";
    case COAP_OPT_URI_PATH: return "Uri-Path (from the URI)";
    case COAP_OPT_CONTENT_FORMAT: return "Content-Format (use --content-format)";
    case COAP_OPT_URI_QUERY: return "Uri-Query (from the URI)";
    case COAP_OPT_ACCEPT: return "Accept (use --accept)";
    case COAP_OPT_BLOCK2: return "Block2 (block-wise is done for you)";
    case COAP_OPT_BLOCK1: return "Block1 (block-wise is done for you)";
    case COAP_OPT_ECHO: return "Echo (answered for you, RFC 9175)";
    default: return NULL;
    }
}

/* RFC 7252 Section 5.3.1: "The Token is ... between 0 and 8 bytes". */
int cli_coap_token_arg(const struct cli_opt_parser *p, uint8_t token[8], size_t *len)
{
    const char *v = p->value;
    if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X'))
        v += 2;
    size_t digits = strspn(v, "0123456789abcdefABCDEF");
    if (v[digits] || digits % 2) {
        fprintf(stderr, "edhoc-cli coap: %s '%s': expected hex (an even number of digits)\n",
                p->flag, p->value);
        return -1;
    }
    if (digits > 16) {
        fprintf(stderr,
                "edhoc-cli coap: %s '%s': %zu bytes, a token has 0 to 8 (RFC 7252 Section 5.3.1)\n",
                p->flag, p->value, digits / 2);
        return -1;
    }
    *len = digits ? (size_t)cli_hex_decode(v, token, 8) : 0;
    return 0;
}

/* NUM,VALUE of --option into o (value bytes in buf). Returns 0, or -1
 * after printing why. */
int cli_coap_option_arg(const struct cli_opt_parser *p, struct client_coap_option *o, uint8_t *buf,
                        size_t cap)
{
    const char *comma = strchr(p->value, ',');
    char *end;
    errno = 0;
    long num = strtol(p->value, &end, 10);
    if (!comma || end != comma || p->value[0] < '0' || p->value[0] > '9' || errno || num < 1 ||
        num > 65535) {
        fprintf(stderr,
                "edhoc-cli coap: %s '%s': expected NUM,VALUE with NUM an option number "
                "from 1 to 65535\n",
                p->flag, p->value);
        return -1;
    }
    const char *why = option_set_elsewhere(num);
    if (why) {
        fprintf(stderr, "edhoc-cli coap: %s %ld: option %s is set by edhoc-cli itself\n", p->flag,
                num, why);
        return -1;
    }
    const char *v = comma + 1;
    long len;
    if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
        len = cli_hex_decode(v + 2, buf, cap);
        if (len < 0) {
            fprintf(stderr, "edhoc-cli coap: %s %ld: '%s' is not hex (at most %zu bytes)\n",
                    p->flag, num, v, cap);
            return -1;
        }
    } else {
        len = (long)strlen(v);
        if ((size_t)len > cap) {
            fprintf(stderr, "edhoc-cli coap: %s %ld: value longer than %zu bytes\n", p->flag, num,
                    cap);
            return -1;
        }
        memcpy(buf, v, (size_t)len);
    }
    o->number = (uint16_t)num;
    o->value = buf;
    o->len = (size_t)len;
    return 0;
}
