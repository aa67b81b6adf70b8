/*
 * Keys for applications on the command line: the --export
 * LABEL,CONTEXT_HEX,LENGTH values of simulate and initiator
 * (EDHOC_Exporter, RFC 9528 Section 4.2.1), checked against the EDHOC
 * Exporter Label registry (RFC 9528 Section 10.1), and why no OSCORE
 * context can follow a cipher suite whose application hash has no
 * HMAC-based HKDF.
 *
 * Header-only (static inline): both commands include it, and each uses only
 * part of it.
 */
#ifndef CLI_EXPORTER_H
#define CLI_EXPORTER_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/crypto.h"
#include "edhoc/edhoc.h"
#include "edhoc_client.h"
#include "output/json_out.h"
#include "util.h"

#define CLI_MAX_EXPORTS        8
#define CLI_EXPORT_MAX_CONTEXT 256
/* 255 x 32 bytes: the most one HKDF-SHA-256 expand can give (RFC 5869
 * Section 2.3), the smallest such bound among the suites, so every length
 * accepted here works whatever suite the handshake settles on. */
#define CLI_EXPORT_MAX_LENGTH 8160

/* The refusal of --export without --export-secrets, word for word. */
#define CLI_EXPORT_NEEDS_SECRETS                                                                   \
    "--export prints keying material derived from PRK_exporter, a secret: add --export-secrets "   \
    "to print it"

#define CLI_EXPORT_HELP                                                                            \
    "after the handshake, print EDHOC_Exporter(LABEL, CONTEXT, LENGTH) (RFC 9528 Section "         \
    "4.2.1): LABEL from the EDHOC Exporter Label registry (0 and 1 give the OSCORE Master "        \
    "Secret and Salt; 2..23, the unassigned and reserved part of the Standards Action range, "     \
    "and labels above 65535 are refused; 24..32767 Expert Review, 32768..65535 Private Use), "     \
    "CONTEXT in hex (empty: h''), LENGTH 1..8160 bytes; repeatable, at most 8; secret output: "    \
    "needs --export-secrets"

struct cli_export {
    uint64_t label;
    uint8_t context[CLI_EXPORT_MAX_CONTEXT];
    size_t context_len;
    size_t length;
    uint8_t *value; /* length bytes once computed, NULL before */
};

struct cli_exports {
    struct cli_export item[CLI_MAX_EXPORTS];
    size_t n;
};

/* What the EDHOC Exporter Label registry (RFC 9528 Section 10.1) says of
 * a label this command accepts. */
static inline const char *cli_export_label_use(uint64_t label)
{
    if (label == 0)
        return "Derived OSCORE Master Secret";
    if (label == 1)
        return "Derived OSCORE Master Salt";
    if (label >= 32768)
        return "Private Use";
    return "Unassigned (Expert Review range)";
}

/* Whether an application may use the label: 0 and 1 (registered, for
 * OSCORE: reproducing them is how a deployment checks its context),
 * 24..32767 (registrable by Expert Review) and 32768..65535 (Private Use).
 * 2..22 are unassigned in the Standards Action range: only a later RFC can
 * give them a meaning, and an application taking one now could collide
 * with it; 23 is Reserved; the registry ends at 65535. Returns 0, or -1
 * with why. */
static inline int cli_export_label_check(uint64_t label, char *why, size_t cap)
{
    if (label >= 2 && label <= 22) {
        snprintf(why, cap,
                 "label %" PRIu64 " is unassigned in the range 0..23 that the EDHOC Exporter "
                 "Label registry keeps for Standards Action (RFC 9528 Section 10.1): only a future "
                 "RFC may give it a use; take one of 24..32767 (Expert Review) or 32768..65535 "
                 "(Private Use)",
                 label);
        return -1;
    }
    if (label == 23) {
        snprintf(why, cap,
                 "label 23 is Reserved in the EDHOC Exporter Label registry (RFC 9528 Section "
                 "10.1); take one of 24..32767 (Expert Review) or 32768..65535 (Private Use)");
        return -1;
    }
    if (label > 65535) {
        snprintf(why, cap,
                 "label %" PRIu64 " is outside the EDHOC Exporter Label registry, which ends at "
                 "65535 (RFC 9528 Section 10.1)",
                 label);
        return -1;
    }
    return 0;
}

/* A decimal number, all of text, within [min, max]. */
static inline int cli_export_number(const char *text, size_t len, uint64_t min, uint64_t max,
                                    uint64_t *out)
{
    char buf[24];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    for (size_t i = 0; i < len; i++)
        if (buf[i] < '0' || buf[i] > '9')
            return -1;
    errno = 0;
    unsigned long long v = strtoull(buf, NULL, 10);
    if (errno || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* "LABEL,CONTEXT_HEX,LENGTH" into *e (value left NULL). Returns 0, or -1
 * with why. */
static inline int cli_export_parse(const char *spec, struct cli_export *e, char *why, size_t cap)
{
    memset(e, 0, sizeof *e);
    const char *c1 = strchr(spec, ',');
    const char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    if (!c1 || !c2 || strchr(c2 + 1, ',')) {
        snprintf(why, cap,
                 "expected LABEL,CONTEXT_HEX,LENGTH (e.g. 32768,0102,16; an empty "
                 "context: 32768,,16), got '%.80s'",
                 spec);
        return -1;
    }
    uint64_t label, length;
    /* Parsed up to 20 digits, then held against the registry below. */
    if (cli_export_number(spec, (size_t)(c1 - spec), 0, UINT64_MAX, &label)) {
        int shown = c1 - spec < 40 ? (int)(c1 - spec) : 40;
        snprintf(why, cap, "LABEL: expected a decimal number, got '%.*s'", shown, spec);
        return -1;
    }
    if (cli_export_label_check(label, why, cap))
        return -1;
    size_t hex_len = (size_t)(c2 - c1 - 1);
    if (hex_len > 2 * CLI_EXPORT_MAX_CONTEXT + 2) {
        snprintf(why, cap, "CONTEXT: at most %d bytes", CLI_EXPORT_MAX_CONTEXT);
        return -1;
    }
    char hex[2 * CLI_EXPORT_MAX_CONTEXT + 3];
    memcpy(hex, c1 + 1, hex_len);
    hex[hex_len] = '\0';
    long n = hex_len ? cli_hex_decode(hex, e->context, sizeof e->context) : 0;
    if (n < 0) {
        snprintf(why, cap, "CONTEXT: expected hex of at most %d bytes, got '%.80s'",
                 CLI_EXPORT_MAX_CONTEXT, hex);
        return -1;
    }
    if (cli_export_number(c2 + 1, strlen(c2 + 1), 1, CLI_EXPORT_MAX_LENGTH, &length)) {
        snprintf(why, cap, "LENGTH: expected 1..%d bytes, got '%.40s'", CLI_EXPORT_MAX_LENGTH,
                 c2 + 1);
        return -1;
    }
    e->label = label;
    e->context_len = (size_t)n;
    e->length = (size_t)length;
    return 0;
}

static inline void cli_exports_wipe(struct cli_exports *x)
{
    for (size_t i = 0; i < x->n; i++) {
        if (x->item[i].value) {
            edhoc_wipe(x->item[i].value, x->item[i].length);
            free(x->item[i].value);
            x->item[i].value = NULL;
        }
    }
}

/* Every requested value from the session's current PRK_exporter. Returns
 * 0, or the library's error (values computed so far are kept, the caller
 * wipes them). */
static inline int cli_exports_compute(const struct edhoc_session *s, struct cli_exports *x)
{
    for (size_t i = 0; i < x->n; i++) {
        struct cli_export *e = &x->item[i];
        e->value = malloc(e->length);
        if (!e->value)
            return EDHOC_ERR_CRYPTO;
        int rc = edhoc_session_export(s, e->label, e->context, e->context_len, e->value, e->length);
        if (rc) {
            free(e->value);
            e->value = NULL;
            return rc;
        }
    }
    return 0;
}

/* Both sides computed the same values (constant time: they are keys). */
static inline bool cli_exports_equal(const struct cli_exports *a, const struct cli_exports *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        const struct cli_export *x = &a->item[i], *y = &b->item[i];
        if (!x->value || !y->value || x->length != y->length ||
            !edhoc_ct_equal(x->value, y->value, x->length))
            return false;
    }
    return true;
}

/* "EDHOC_Exporter(32768, h'0102', 16) = ..." lines under a heading. */
static inline void cli_exports_print(FILE *f, const struct cli_exports *x, const char *source)
{
    fprintf(f, "EDHOC_Exporter (RFC 9528 Section 4.2.1), from %s:\n", source);
    for (size_t i = 0; i < x->n; i++) {
        const struct cli_export *e = &x->item[i];
        fprintf(f, "  EDHOC_Exporter(%" PRIu64 ", h'", e->label);
        cli_hex_print(f, e->context, e->context_len);
        fprintf(f, "', %zu) = ", e->length);
        if (e->value)
            cli_hex_print(f, e->value, e->length);
        else
            fprintf(f, "(not computed)");
        fprintf(f, "  [%s]\n", cli_export_label_use(e->label));
    }
}

/* The values as the schemas' "exports" array. */
static inline json_t *cli_exports_json(const struct cli_exports *x, bool after_key_update)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < x->n; i++) {
        const struct cli_export *e = &x->item[i];
        json_t *o = json_object();
        cli_json_set(o, "label", json_integer((json_int_t)e->label));
        cli_json_set(o, "label_use", json_string(cli_export_label_use(e->label)));
        cli_json_set(o, "context", cli_json_hex_value(e->context, e->context_len));
        cli_json_set(o, "length", json_integer((json_int_t)e->length));
        cli_json_set(o, "value", e->value ? cli_json_hex_value(e->value, e->length) : json_null());
        cli_json_set(o, "after_key_update", json_boolean(after_key_update));
        json_array_append_new(a, o);
    }
    return a;
}

/* Whether an OSCORE context can follow cipher suite `suite`: RFC 9528
 * Appendix A.1 takes the OSCORE HKDF from the suite's application hash,
 * and RFC 8613 Section 3.2.1 allows only the HMAC-based HKDFs (RFC 5869).
 * SHA-256 and SHA-384 have one; SHAKE256 (suite 25, RFC 9528 Section 3.6)
 * is no HMAC hash, so no OSCORE context is defined for it. Returns true
 * with why when none can follow. */
static inline bool cli_oscore_unavailable(int suite, char *why, size_t cap)
{
    return edhoc_client_oscore_unavailable(suite, why, cap);
}

#endif
