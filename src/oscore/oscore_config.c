/*
 * Static OSCORE contexts from libcoap's configuration text
 * (coap-oscore-conf(5)): `keyword,encoding,value` per line, so files
 * written for libcoap's coap-client / coap-server work here unchanged.
 */
#include "edhoc/oscore.h"
#include "oscore_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cursor {
    const char *p;
    const char *end;
};

static int fail(struct oscore_config_error *err, unsigned line, const char *fmt, ...)
{
    if (err) {
        err->line = line;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return OSCORE_ERR_CONFIG;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

static void trim(const char **b, const char **e)
{
    while (*b < *e && is_space(**b))
        (*b)++;
    while (*e > *b && is_space((*e)[-1]))
        (*e)--;
}

static bool token_is(const char *b, const char *e, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(e - b) == n && memcmp(b, word, n) == 0;
}

/* Remove one pair of surrounding double quotes. */
static void unquote(const char **b, const char **e)
{
    if (*e - *b >= 2 && (*b)[0] == '"' && (*e)[-1] == '"') {
        (*b)++;
        (*e)--;
    }
}

static int hexdigit(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

enum encoding { ENC_ASCII, ENC_HEX, ENC_INTEGER, ENC_TEXT, ENC_BOOL, ENC_UNSIGNED64, ENC_CONFIG };

struct value {
    enum encoding enc;
    const char *b, *e; /* unquoted text */
};

/* Bytes of an ascii or hex value into out. */
static int value_bytes(const struct value *v, uint8_t *out, size_t cap, size_t *len, unsigned line,
                       const char *kw, struct oscore_config_error *err)
{
    size_t n = 0;
    if (v->enc == ENC_ASCII) {
        n = (size_t)(v->e - v->b);
        if (n > cap)
            return fail(err, line, "%s: value longer than %zu bytes", kw, cap);
        memcpy(out, v->b, n);
    } else if (v->enc == ENC_HEX) {
        size_t digits = (size_t)(v->e - v->b);
        if (digits % 2)
            return fail(err, line, "%s: odd number of hex digits", kw);
        if (digits / 2 > cap)
            return fail(err, line, "%s: value longer than %zu bytes", kw, cap);
        for (size_t i = 0; i < digits; i += 2) {
            int hi = hexdigit(v->b[i]), lo = hexdigit(v->b[i + 1]);
            /* Name the position only: the value may be the master secret,
             * and error texts end up in logs. */
            if (hi < 0 || lo < 0)
                return fail(err, line, "%s: not hex at digit %zu", kw, i + (hi < 0 ? 1 : 2));
            out[n++] = (uint8_t)(hi << 4 | lo);
        }
    } else {
        return fail(err, line, "%s: needs the hex or ascii encoding", kw);
    }
    *len = n;
    return 0;
}

static int value_integer(const struct value *v, long long min, long long max, long long *out,
                         unsigned line, const char *kw, struct oscore_config_error *err)
{
    if (v->enc != ENC_INTEGER && v->enc != ENC_UNSIGNED64)
        return fail(err, line, "%s: needs the integer encoding", kw);
    char buf[32];
    size_t n = (size_t)(v->e - v->b);
    if (n == 0 || n >= sizeof buf)
        return fail(err, line, "%s: '%.*s' is not an integer", kw, (int)n, v->b);
    memcpy(buf, v->b, n);
    buf[n] = '\0';
    char *endp;
    errno = 0;
    long long x = strtoll(buf, &endp, 10);
    if (errno || *endp)
        return fail(err, line, "%s: '%s' is not an integer", kw, buf);
    if (x < min || x > max)
        return fail(err, line, "%s: %lld out of range %lld..%lld", kw, x, min, max);
    *out = x;
    return 0;
}

static int value_bool(const struct value *v, bool *out, unsigned line, const char *kw,
                      struct oscore_config_error *err)
{
    if (v->enc != ENC_BOOL)
        return fail(err, line, "%s: needs the bool encoding", kw);
    if (token_is(v->b, v->e, "true"))
        *out = true;
    else if (token_is(v->b, v->e, "false"))
        *out = false;
    else
        return fail(err, line, "%s: '%.*s' is not true or false", kw, (int)(v->e - v->b), v->b);
    return 0;
}

static const struct {
    const char *name;
    int id;
} aead_names[] = {
    {"AES-CCM-16-64-128", EDHOC_COSE_AES_CCM_16_64_128},
    {"AES-CCM-16-128-128", EDHOC_COSE_AES_CCM_16_128_128},
    {"A128GCM", EDHOC_COSE_A128GCM},
    {"A256GCM", EDHOC_COSE_A256GCM},
    {"ChaCha20/Poly1305", EDHOC_COSE_CHACHA20_POLY1305},
};

/* libcoap names the HKDF by its COSE "direct+HKDF" algorithm; EDHOC by the
 * hash. Both map to the hash COSE id used by the crypto table. */
static const struct {
    const char *name;
    int id;
    int hash;
} hkdf_names[] = {
    {"direct+HKDF-SHA-256", -10, EDHOC_COSE_SHA256},
    {"HKDF-SHA-256", -16, EDHOC_COSE_SHA256},
    {"SHA-256", -16, EDHOC_COSE_SHA256},
    {"HKDF-SHA-384", -43, EDHOC_COSE_SHA384},
    {"SHA-384", -43, EDHOC_COSE_SHA384},
};

static int value_aead(const struct value *v, int *out, unsigned line,
                      struct oscore_config_error *err)
{
    long long x;
    if (v->enc == ENC_TEXT) {
        for (size_t i = 0; i < sizeof aead_names / sizeof aead_names[0]; i++) {
            if (token_is(v->b, v->e, aead_names[i].name)) {
                *out = aead_names[i].id;
                return 0;
            }
        }
        return fail(err, line, "aead_alg: unsupported algorithm '%.*s'", (int)(v->e - v->b), v->b);
    }
    int rc = value_integer(v, -65536, 65535, &x, line, "aead_alg", err);
    if (rc)
        return rc;
    for (size_t i = 0; i < sizeof aead_names / sizeof aead_names[0]; i++) {
        if (aead_names[i].id == x) {
            *out = (int)x;
            return 0;
        }
    }
    return fail(err, line, "aead_alg: unsupported algorithm %lld", x);
}

static int value_hkdf(const struct value *v, int *out, unsigned line,
                      struct oscore_config_error *err)
{
    long long x;
    if (v->enc == ENC_TEXT) {
        for (size_t i = 0; i < sizeof hkdf_names / sizeof hkdf_names[0]; i++) {
            if (token_is(v->b, v->e, hkdf_names[i].name)) {
                *out = hkdf_names[i].hash;
                return 0;
            }
        }
        return fail(err, line, "hkdf_alg: unsupported algorithm '%.*s'", (int)(v->e - v->b), v->b);
    }
    int rc = value_integer(v, -65536, 65535, &x, line, "hkdf_alg", err);
    if (rc)
        return rc;
    for (size_t i = 0; i < sizeof hkdf_names / sizeof hkdf_names[0]; i++) {
        if (hkdf_names[i].id == x) {
            *out = hkdf_names[i].hash;
            return 0;
        }
    }
    return fail(err, line, "hkdf_alg: unsupported algorithm %lld", x);
}

static int parse_encoding(const char *b, const char *e, enum encoding *enc)
{
    static const struct {
        const char *name;
        enum encoding enc;
    } names[] = {
        {"ascii", ENC_ASCII},   {"hex", ENC_HEX},   {"integer", ENC_INTEGER},
        {"text", ENC_TEXT},     {"bool", ENC_BOOL}, {"unsigned64", ENC_UNSIGNED64},
        {"config", ENC_CONFIG},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (token_is(b, e, names[i].name)) {
            *enc = names[i].enc;
            return 0;
        }
    }
    return -1;
}

static int apply(struct oscore_config *cfg, const char *kb, const char *ke, const struct value *v,
                 unsigned line, struct oscore_config_error *err)
{
    char kw[32];
    size_t kn = (size_t)(ke - kb);
    if (kn >= sizeof kw)
        kn = sizeof kw - 1;
    memcpy(kw, kb, kn);
    kw[kn] = '\0';
    long long x;
    bool flag;
    int rc;

    if (!strcmp(kw, "master_secret")) {
        if (cfg->has_master_secret)
            return fail(err, line, "master_secret given twice");
        rc = value_bytes(v, cfg->master_secret, sizeof cfg->master_secret, &cfg->master_secret_len,
                         line, kw, err);
        if (rc == 0 && cfg->master_secret_len == 0)
            rc = fail(err, line, "master_secret is empty");
        cfg->has_master_secret = rc == 0;
        return rc;
    }
    if (!strcmp(kw, "master_salt")) {
        if (cfg->has_master_salt)
            return fail(err, line, "master_salt given twice");
        rc = value_bytes(v, cfg->master_salt, sizeof cfg->master_salt, &cfg->master_salt_len, line,
                         kw, err);
        cfg->has_master_salt = rc == 0;
        return rc;
    }
    if (!strcmp(kw, "id_context")) {
        if (cfg->has_id_context)
            return fail(err, line, "id_context given twice");
        rc = value_bytes(v, cfg->id_context, sizeof cfg->id_context, &cfg->id_context_len, line, kw,
                         err);
        cfg->has_id_context = rc == 0;
        return rc;
    }
    if (!strcmp(kw, "sender_id")) {
        if (cfg->has_sender_id)
            return fail(err, line, "sender_id given twice");
        rc = value_bytes(v, cfg->sender_id, sizeof cfg->sender_id, &cfg->sender_id_len, line, kw,
                         err);
        cfg->has_sender_id = rc == 0;
        return rc;
    }
    if (!strcmp(kw, "recipient_id")) {
        if (cfg->has_recipient_id)
            return fail(err, line, "a second recipient_id (one context per file)");
        rc = value_bytes(v, cfg->recipient_id, sizeof cfg->recipient_id, &cfg->recipient_id_len,
                         line, kw, err);
        cfg->has_recipient_id = rc == 0;
        return rc;
    }
    if (!strcmp(kw, "aead_alg"))
        return value_aead(v, &cfg->aead_alg, line, err);
    if (!strcmp(kw, "hkdf_alg"))
        return value_hkdf(v, &cfg->hkdf_alg, line, err);
    if (!strcmp(kw, "replay_window")) {
        rc = value_integer(v, 1, OSCORE_MAX_REPLAY_WINDOW, &x, line, kw, err);
        if (rc == 0)
            cfg->replay_window = (unsigned)x;
        return rc;
    }
    if (!strcmp(kw, "ssn_freq")) {
        rc = value_integer(v, 1, UINT32_MAX, &x, line, kw, err);
        if (rc == 0)
            cfg->ssn_freq = (uint32_t)x;
        return rc;
    }
    /* Accepted for compatibility; they change nothing here. */
    if (!strcmp(kw, "rfc8613_b_1_2") || !strcmp(kw, "silent_server"))
        return value_bool(v, &flag, line, kw, err);
    if (!strcmp(kw, "last_seq") || !strcmp(kw, "sliding_window"))
        return value_integer(v, 0, INT64_MAX, &x, line, kw, err);
    /* Appendix B.2: the server may answer a request it has no valid
     * context for by deriving a new ID Context with the client. */
    if (!strcmp(kw, "rfc8613_b_2")) {
        rc = value_bool(v, &flag, line, kw, err);
        if (rc == 0)
            cfg->rfc8613_b2 = flag;
        return rc;
    }
    if (!strcmp(kw, "break_sender_key") || !strcmp(kw, "break_recipient_key")) {
        rc = value_bool(v, &flag, line, kw, err);
        if (rc == 0 && flag)
            rc = fail(err, line, "%s: only false is supported", kw);
        return rc;
    }
    return fail(err, line, "unknown keyword '%s'", kw);
}

static int config_parse(const char *text, size_t len, struct oscore_config *cfg,
                        struct oscore_config_error *err);

int oscore_config_parse(const char *text, size_t len, struct oscore_config *cfg,
                        struct oscore_config_error *err)
{
    int rc = config_parse(text, len, cfg, err);
    /* A file rejected on a late line may already have filled in the master
     * secret: leave no key material behind in a config that is unusable. */
    if (rc && cfg)
        edhoc_wipe(cfg, sizeof *cfg);
    return rc;
}

static int config_parse(const char *text, size_t len, struct oscore_config *cfg,
                        struct oscore_config_error *err)
{
    if (err) {
        err->line = 0;
        err->message[0] = '\0';
    }
    if (!cfg || (!text && len))
        return fail(err, 0, "no configuration");
    memset(cfg, 0, sizeof *cfg);
    cfg->aead_alg = EDHOC_COSE_AES_CCM_16_64_128;
    cfg->hkdf_alg = EDHOC_COSE_SHA256;
    cfg->replay_window = OSCORE_DEFAULT_REPLAY_WINDOW;
    cfg->ssn_freq = 1;

    const char *p = text, *end = text + len;
    unsigned line = 0;
    unsigned block_line = 0; /* line of an open complex_* block, 0 if none */
    while (p < end) {
        line++;
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *b = p, *e = eol;
        p = eol < end ? eol + 1 : end;
        trim(&b, &e);
        if (b == e || *b == '#')
            continue;
        if (memchr(b, '\0', (size_t)(e - b)))
            return fail(err, line, "NUL byte in line");
        if (token_is(b, e, "'")) {
            if (!block_line)
                return fail(err, line, "closing ' without a complex_sender/complex_recipient");
            block_line = 0;
            continue;
        }
        const char *c1 = memchr(b, ',', (size_t)(e - b));
        const char *c2 = c1 ? memchr(c1 + 1, ',', (size_t)(e - c1 - 1)) : NULL;
        if (!c1 || !c2)
            return fail(err, line, "expected keyword,encoding,value");
        const char *kb = b, *ke = c1, *eb = c1 + 1, *ee = c2;
        struct value v = {.b = c2 + 1, .e = e};
        trim(&kb, &ke);
        trim(&eb, &ee);
        trim(&v.b, &v.e);
        if (parse_encoding(eb, ee, &v.enc) != 0)
            return fail(err, line, "unknown encoding '%.*s'", (int)(ee - eb), eb);
        if (v.enc == ENC_CONFIG) {
            /* complex_sender / complex_recipient: the lines up to the closing
             * quote are ordinary keyword lines for that side. */
            if (!token_is(kb, ke, "complex_sender") && !token_is(kb, ke, "complex_recipient"))
                return fail(err, line, "config encoding only for complex_sender/complex_recipient");
            if (block_line)
                return fail(err, line, "nested complex block");
            if (!token_is(v.b, v.e, "'"))
                return fail(err, line, "complex block must start with a lone '");
            block_line = line;
            continue;
        }
        if (v.enc == ENC_ASCII || v.enc == ENC_HEX || v.enc == ENC_TEXT)
            unquote(&v.b, &v.e);
        int rc = apply(cfg, kb, ke, &v, line, err);
        if (rc)
            return rc;
    }
    if (block_line)
        return fail(err, block_line, "complex block not closed with '");
    if (!cfg->has_master_secret)
        return fail(err, 0, "master_secret missing");
    if (!cfg->has_sender_id)
        return fail(err, 0, "sender_id missing");
    if (!cfg->has_recipient_id)
        return fail(err, 0, "recipient_id missing");
    return 0;
}

int oscore_context_init_config_id(struct oscore_context *c, const struct edhoc_crypto_ops *crypto,
                                  const struct oscore_config *cfg, const uint8_t *id_context,
                                  size_t id_context_len)
{
    if (!cfg)
        return OSCORE_ERR_INVALID;
    struct oscore_params p = {
        .aead_alg = cfg->aead_alg,
        .hkdf_alg = cfg->hkdf_alg,
        .master_secret = cfg->master_secret,
        .master_secret_len = cfg->master_secret_len,
        .master_salt = cfg->has_master_salt ? cfg->master_salt : NULL,
        .master_salt_len = cfg->has_master_salt ? cfg->master_salt_len : 0,
        .id_context = id_context,
        .id_context_len = id_context ? id_context_len : 0,
        .sender_id = cfg->sender_id,
        .sender_id_len = cfg->sender_id_len,
        .recipient_id = cfg->recipient_id,
        .recipient_id_len = cfg->recipient_id_len,
        .replay_window = cfg->replay_window,
    };
    int rc = oscore_context_init(c, crypto, &p);
    if (rc == 0)
        c->ssn_freq = cfg->ssn_freq ? cfg->ssn_freq : 1;
    return rc;
}

int oscore_context_init_config(struct oscore_context *c, const struct edhoc_crypto_ops *crypto,
                               const struct oscore_config *cfg)
{
    if (!cfg)
        return OSCORE_ERR_INVALID;
    return oscore_context_init_config_id(c, crypto, cfg,
                                         cfg->has_id_context ? cfg->id_context : NULL,
                                         cfg->has_id_context ? cfg->id_context_len : 0);
}
