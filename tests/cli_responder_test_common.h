/* What the end-to-end tests of the `edhoc-cli responder` daemon share
 * (test_cli_responder.c, test_cli_responder_config.c): the group set-up,
 * a context established by an initiator and written for the client side,
 * reading coap --json output, an OSCORE request protected by the CLI. */
#ifndef CLI_RESPONDER_TEST_COMMON_H
#define CLI_RESPONDER_TEST_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "net_test_util.h"
#include "vectors.h"

/* edhoc-cli ARGS, bounded in time. */
#define CLI_RUN(out, timeout_s, ...) net_cli_run(out, timeout_s, false, __VA_ARGS__)

static const char *cli;

static inline int setup(void **state)
{
    (void)state;
    cli = net_cli();
    return net_make_dir("resp");
}

struct ctx_hex {
    char secret[80], salt[80], sid[20], rid[20];
};

/* Run an initiator with --export-secrets, write its context (client view)
 * in libcoap format to path. */
static inline void establish(uint16_t port, const char *path, struct ctx_hex *c, const char *extra)
{
    char *out;
    int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --export-secrets --json %s", port,
                     extra ? extra : "");
    if (rc != 0 || !strstr(out, "\"outcome\": \"ok\""))
        fail_msg("initiator failed (%d):\n%s", rc, out);
    net_json_str(out, "master_secret", c->secret, sizeof c->secret);
    net_json_str(out, "master_salt", c->salt, sizeof c->salt);
    net_json_str(out, "sender_id", c->sid, sizeof c->sid);
    net_json_str(out, "recipient_id", c->rid, sizeof c->rid);
    free(out);
    char conf[600];
    snprintf(conf, sizeof conf,
             "master_secret,hex,\"%s\"\nmaster_salt,hex,\"%s\"\nsender_id,hex,\"%s\"\n"
             "recipient_id,hex,\"%s\"\n",
             c->secret, c->salt, c->sid, c->rid);
    net_write_file(path, conf, 0600);
}

/* Largest "piv" (>= 0) and "echo_challenge_piv" in coap --json output. */
static inline long max_piv(const char *out)
{
    long m = -1;
    for (const char *p = out; (p = strstr(p, "piv\": ")); p += 6) {
        long v = p[6] == 'n' ? -1 : strtol(p + 6, NULL, 10); /* null: none */
        if (v > m)
            m = v;
    }
    return m;
}

static inline long first_long(const char *out, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(out, pat);
    return p ? strtol(p + strlen(pat), NULL, 10) : -99;
}

/* A protected GET /time from the client's context with sequence number seq,
 * as the datagram bytes. */
static inline size_t protected_get(const char *ctx_path, unsigned seq, uint8_t *msg, size_t cap)
{
    /* CON GET, MID 0x1234, token 0xa1b2c3, Uri-Path "time". */
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "oscore protect --context %s --role client --seq %u 43011234a1b2c3b474696d65",
                     ctx_path, seq);
    if (rc != 0)
        fail_msg("oscore protect: %d %s", rc, out);
    char hex[4096];
    size_t n = 0;
    for (const char *p = out; *p && n + 1 < sizeof hex; p++) {
        if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))
            hex[n++] = *p;
        else if (*p == '\n')
            break;
    }
    hex[n] = '\0';
    free(out);
    long len = hex_decode(hex, msg, cap);
    assert_true(len > 4);
    return (size_t)len;
}

/* POST /.well-known/edhoc with f5 || message_1 of RFC 9529 trace 2. */
static inline size_t raw_message_1(uint8_t *out, uint16_t mid)
{
    struct vec_scope v = vec_load("rfc9529-trace2.json");
    uint8_t m1[128];
    size_t n = vec_hex(v, "message_1", m1, sizeof m1);
    size_t o = 0;
    out[o++] = 0x42; /* CON, token length 2 */
    out[o++] = 0x02; /* POST */
    out[o++] = (uint8_t)(mid >> 8);
    out[o++] = (uint8_t)mid;
    out[o++] = 0x7a;
    out[o++] = (uint8_t)mid;
    out[o++] = 0xbb; /* Uri-Path (11), 11 bytes */
    memcpy(out + o, ".well-known", 11);
    o += 11;
    out[o++] = 0x05;
    memcpy(out + o, "edhoc", 5);
    o += 5;
    out[o++] = 0x11; /* Content-Format (12) */
    out[o++] = 65;
    out[o++] = 0xff;
    out[o++] = 0xf5;
    memcpy(out + o, m1, n);
    return o + n;
}

#endif
