/*
 * edhoc-cli simulate: an initiator and a responder in one process, no
 * network. Reports every message (hex, size), the outcome, timing and, on
 * request, every intermediate value and the derived OSCORE context.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "edhoc/coap_msg.h"
#include "edhoc/netacct.h"
#include "edhoc/transport.h"
#include "edhoc_args.h"
#include "net_report.h"
#include "util.h"

#define MAX_RECORDED 16

struct recorded_message {
    const char *name; /* message_1 .. message_4, error */
    char sender;      /* 'I' or 'R' */
    uint8_t *bytes;
    size_t len;
};

struct trace_entry {
    char side;
    char name[40];
    uint8_t *value;
    size_t len;
};

struct run {
    struct recorded_message msgs[MAX_RECORDED];
    size_t n_msgs;
    struct trace_entry *trace;
    size_t n_trace, cap_trace;
    int attempts;
    int err;              /* EDHOC_ERR_* that ended the run, 0 on success */
    char failed_side;     /* 'I' / 'R' */
    char why[256];        /* the failing side's error text */
    struct edhoc_error_info peer_error; /* when an error message was received */
    bool have_peer_error;
    char peer_error_text[128];
    struct edhoc_oscore_params oscore_i, oscore_r;
    size_t rx_ead_count[5];
};

/* ---- Timing of the crypto operations: a wrapping ops table ---- */

static const struct edhoc_crypto_ops *backend;
static uint64_t crypto_ns;
static unsigned crypto_calls;

#define TIMED(call)                                                                               \
    do {                                                                                          \
        uint64_t t0 = cli_now_ns();                                                               \
        int rc_ = (call);                                                                         \
        crypto_ns += cli_now_ns() - t0;                                                           \
        crypto_calls++;                                                                           \
        return rc_;                                                                               \
    } while (0)

static int timed_random(void *ctx, uint8_t *out, size_t len) { TIMED(backend->random(ctx, out, len)); }
static int timed_hash(int alg, const uint8_t *m, size_t l, uint8_t *o) { TIMED(backend->hash(alg, m, l, o)); }
static int timed_extract(int alg, const uint8_t *s, size_t sl, const uint8_t *i, size_t il, uint8_t *p)
{
    TIMED(backend->hkdf_extract(alg, s, sl, i, il, p));
}
static int timed_expand(int alg, const uint8_t *p, size_t pl, const uint8_t *i, size_t il, uint8_t *o,
                        size_t ol)
{
    TIMED(backend->hkdf_expand(alg, p, pl, i, il, o, ol));
}
static int timed_encrypt(int alg, const uint8_t *k, const uint8_t *n, const uint8_t *a, size_t al,
                         const uint8_t *p, size_t pl, uint8_t *c)
{
    TIMED(backend->aead_encrypt(alg, k, n, a, al, p, pl, c));
}
static int timed_decrypt(int alg, const uint8_t *k, const uint8_t *n, const uint8_t *a, size_t al,
                         const uint8_t *c, size_t cl, uint8_t *p)
{
    TIMED(backend->aead_decrypt(alg, k, n, a, al, c, cl, p));
}
static int timed_keygen(int crv, bool dh, uint8_t *priv, uint8_t *pub, size_t *pl)
{
    TIMED(backend->keygen(crv, dh, priv, pub, pl));
}
static int timed_public(int crv, bool dh, const uint8_t *priv, uint8_t *pub, size_t *pl)
{
    TIMED(backend->public_key(crv, dh, priv, pub, pl));
}
static int timed_ecdh(int crv, const uint8_t *priv, const uint8_t *peer, size_t pl, uint8_t *sh)
{
    TIMED(backend->ecdh(crv, priv, peer, pl, sh));
}
static int timed_sign(int crv, const uint8_t *priv, const uint8_t *m, size_t ml, uint8_t *sig)
{
    TIMED(backend->sign(crv, priv, m, ml, sig));
}
static int timed_verify(int crv, const uint8_t *pub, size_t pl, const uint8_t *m, size_t ml,
                        const uint8_t *sig, size_t sl)
{
    TIMED(backend->verify(crv, pub, pl, m, ml, sig, sl));
}

static struct edhoc_crypto_ops timed_ops;

static const struct edhoc_crypto_ops *make_timed_ops(void)
{
    backend = edhoc_crypto_openssl();
    timed_ops = *backend;
    timed_ops.random = timed_random;
    timed_ops.hash = timed_hash;
    timed_ops.hkdf_extract = timed_extract;
    timed_ops.hkdf_expand = timed_expand;
    timed_ops.aead_encrypt = timed_encrypt;
    timed_ops.aead_decrypt = timed_decrypt;
    timed_ops.keygen = timed_keygen;
    timed_ops.public_key = timed_public;
    timed_ops.ecdh = timed_ecdh;
    timed_ops.sign = timed_sign;
    timed_ops.verify = timed_verify;
    return &timed_ops;
}

/* ---- Recording ---- */

static void record(struct run *run, const char *name, char sender, const uint8_t *p, size_t len)
{
    if (!run || run->n_msgs >= MAX_RECORDED)
        return;
    struct recorded_message *m = &run->msgs[run->n_msgs++];
    m->name = name;
    m->sender = sender;
    m->bytes = malloc(len ? len : 1);
    if (m->bytes && len)
        memcpy(m->bytes, p, len);
    m->len = m->bytes ? len : 0;
}

struct trace_ctx {
    struct run *run;
    char side;
};

static void on_trace(void *ctx, const char *name, const uint8_t *v, size_t len)
{
    struct trace_ctx *t = ctx;
    struct run *run = t->run;
    if (run->n_trace == run->cap_trace) {
        size_t cap = run->cap_trace ? run->cap_trace * 2 : 64;
        struct trace_entry *bigger = realloc(run->trace, cap * sizeof *bigger);
        if (!bigger)
            return;
        run->trace = bigger;
        run->cap_trace = cap;
    }
    struct trace_entry *e = &run->trace[run->n_trace];
    e->side = t->side;
    snprintf(e->name, sizeof e->name, "%s", name);
    e->value = malloc(len ? len : 1);
    if (!e->value)
        return;
    if (len)
        memcpy(e->value, v, len);
    e->len = len;
    run->n_trace++;
}

static void run_free(struct run *run)
{
    for (size_t i = 0; i < run->n_msgs; i++)
        free(run->msgs[i].bytes);
    for (size_t i = 0; i < run->n_trace; i++) {
        edhoc_wipe(run->trace[i].value, run->trace[i].len);
        free(run->trace[i].value);
    }
    free(run->trace);
    edhoc_wipe(&run->oscore_i, sizeof run->oscore_i);
    edhoc_wipe(&run->oscore_r, sizeof run->oscore_r);
}

static const char *suite_list(const int *s, size_t n, char *buf, size_t cap);

/* ---- One handshake ---- */

static void fail(struct run *run, const struct edhoc_session *s, char side, int err)
{
    run->err = err ? err : edhoc_session_error(s);
    run->failed_side = side;
    if (s && edhoc_session_error(s))
        edhoc_session_error_text(s, run->why, sizeof run->why);
    else
        snprintf(run->why, sizeof run->why, "%s", edhoc_strerror(run->err));
}

/* A failed credential lookup says more than the session's generic
 * "credential does not fit": name the lookup's reason. */
static void fail_verify(struct run *run, const struct edhoc_session *s, char side, int err,
                        const struct cli_side *who)
{
    fail(run, s, side, err);
    if (who->resolve_error) {
        size_t n = strlen(run->why);
        snprintf(run->why + n, sizeof run->why - n, " (ID_CRED_%c: %s)", side == 'I' ? 'R' : 'I',
                 edhoc_cred_strerror(who->resolve_error));
        run->err = who->resolve_error;
    }
}

/* The side that failed sends its error message (if the RFC wants one) and
 * the other side takes it in. */
static void deliver_error(struct run *run, struct edhoc_session *from, char from_side,
                          struct edhoc_session *to)
{
    uint8_t err_msg[EDHOC_MAX_ERROR_MESSAGE];
    int n = edhoc_session_write_error(from, err_msg, sizeof err_msg);
    if (n <= 0)
        return;
    record(run, "error", from_side, err_msg, (size_t)n);
    /* The receiver aborts; what it makes of the message is not reported. */
    (void)edhoc_session_process_error(to, err_msg, (size_t)n, NULL);
}

static void note_peer_error(struct run *run, const struct edhoc_error_info *info)
{
    run->have_peer_error = true;
    run->peer_error = *info;
    size_t n = info->text_len < sizeof run->peer_error_text - 1 ? info->text_len
                                                                : sizeof run->peer_error_text - 1;
    if (info->text && n)
        memcpy(run->peer_error_text, info->text, n);
    run->peer_error_text[n] = '\0';
    run->peer_error.text = NULL;
}

static int handshake(const struct cli_edhoc_opts *o, struct cli_side *si, struct cli_side *sr,
                     struct run *run, bool tracing)
{
    struct edhoc_session s_i, s_r;
    struct edhoc_received *rx = malloc(sizeof *rx);
    uint8_t *buf = malloc(EDHOC_MAX_MESSAGE);
    struct trace_ctx tc_i = {run, 'I'}, tc_r = {run, 'R'};
    int rc = 0;

    if (!rx || !buf) {
        free(rx);
        free(buf);
        return EDHOC_ERR_CRYPTO;
    }
    si->cfg.trace = tracing ? on_trace : NULL;
    si->cfg.trace_ctx = &tc_i;
    sr->cfg.trace = tracing ? on_trace : NULL;
    sr->cfg.trace_ctx = &tc_r;

    rc = edhoc_session_init(&s_i, EDHOC_INITIATOR, &si->cfg);
    if (rc) {
        fail(run, NULL, 'I', rc);
        goto out;
    }

    for (int attempt = 0;; attempt++) {
        run->attempts = attempt + 1;
        if (attempt >= CLI_MAX_ATTEMPTS) {
            fail(run, NULL, 'I', EDHOC_ERR_NO_COMMON_SUITE);
            goto out;
        }
        /* Per-attempt inputs: the n-th identifier / ephemeral key, the last
         * one repeating. */
        const struct cli_side_opts *oi = &o->side[CLI_SIDE_I];
        if (oi->n_c_id) {
            size_t k = (size_t)attempt < oi->n_c_id ? (size_t)attempt : oi->n_c_id - 1;
            edhoc_session_set_conn_id(&s_i, oi->c_id[k], oi->c_id_len[k]);
        }
        if (si->n_ephemerals) {
            size_t k = (size_t)attempt < si->n_ephemerals ? (size_t)attempt : si->n_ephemerals - 1;
            edhoc_session_set_ephemeral(&s_i, si->ephemerals[k], si->ephemeral_len[k]);
        }
        int n = edhoc_initiator_prepare_message_1(&s_i, buf, EDHOC_MAX_MESSAGE);
        if (n < 0) {
            fail(run, &s_i, 'I', n);
            goto out;
        }
        record(run, "message_1", 'I', buf, (size_t)n);

        rc = edhoc_session_init(&s_r, EDHOC_RESPONDER, &sr->cfg);
        if (rc) {
            fail(run, NULL, 'R', rc);
            goto out;
        }
        const struct cli_side_opts *orr = &o->side[CLI_SIDE_R];
        if (orr->n_c_id) {
            size_t k = (size_t)attempt < orr->n_c_id ? (size_t)attempt : orr->n_c_id - 1;
            edhoc_session_set_conn_id(&s_r, orr->c_id[k], orr->c_id_len[k]);
        }
        if (sr->n_ephemerals) {
            /* The responder makes one ephemeral key per message_2; attempts
             * it rejected used none. */
            edhoc_session_set_ephemeral(&s_r, sr->ephemerals[0], sr->ephemeral_len[0]);
        }
        rc = edhoc_responder_process_message_1(&s_r, buf, (size_t)n, rx);
        if (rc == 0)
            break;

        /* Rejected: the responder answers with an error message. */
        uint8_t err_msg[EDHOC_MAX_ERROR_MESSAGE];
        int en = edhoc_session_write_error(&s_r, err_msg, sizeof err_msg);
        if (en <= 0) {
            fail(run, &s_r, 'R', rc);
            goto out;
        }
        record(run, "error", 'R', err_msg, (size_t)en);
        struct edhoc_error_info info;
        int prc = edhoc_session_process_error(&s_i, err_msg, (size_t)en, &info);
        if (prc == 0)
            continue; /* suite negotiation: retry with the suite SUITES_R allows */
        if (edhoc_error_message_parse(err_msg, (size_t)en, &info) == 0)
            note_peer_error(run, &info);
        if (prc == EDHOC_ERR_NO_COMMON_SUITE) {
            char offered[64], allowed[64];
            run->err = prc;
            run->failed_side = 'I';
            snprintf(run->why, sizeof run->why,
                     "no common cipher suite: the responder supports %s (SUITES_R), the initiator %s",
                     suite_list(info.suites, info.n_suites, allowed, sizeof allowed),
                     suite_list(o->suites, o->n_suites, offered, sizeof offered));
        } else {
            fail(run, &s_r, 'R', rc);
        }
        goto out;
    }
    run->rx_ead_count[1] = rx->n_ead;

    int n = edhoc_responder_prepare_message_2(&s_r, buf, EDHOC_MAX_MESSAGE);
    if (n < 0) {
        fail(run, &s_r, 'R', n);
        deliver_error(run, &s_r, 'R', &s_i);
        goto out;
    }
    record(run, "message_2", 'R', buf, (size_t)n);

    si->resolve_error = 0;
    rc = edhoc_initiator_handle_message_2(&s_i, buf, (size_t)n, rx, cli_edhoc_resolve, si);
    if (rc) {
        fail_verify(run, &s_i, 'I', rc, si);
        deliver_error(run, &s_i, 'I', &s_r);
        goto out;
    }
    run->rx_ead_count[2] = rx->n_ead;

    n = edhoc_initiator_prepare_message_3(&s_i, buf, EDHOC_MAX_MESSAGE);
    if (n < 0) {
        fail(run, &s_i, 'I', n);
        deliver_error(run, &s_i, 'I', &s_r);
        goto out;
    }
    record(run, "message_3", 'I', buf, (size_t)n);

    sr->resolve_error = 0;
    rc = edhoc_responder_handle_message_3(&s_r, buf, (size_t)n, rx, cli_edhoc_resolve, sr);
    if (rc) {
        fail_verify(run, &s_r, 'R', rc, sr);
        deliver_error(run, &s_r, 'R', &s_i);
        goto out;
    }
    run->rx_ead_count[3] = rx->n_ead;

    if (o->message_4) {
        n = edhoc_responder_prepare_message_4(&s_r, buf, EDHOC_MAX_MESSAGE);
        if (n < 0) {
            fail(run, &s_r, 'R', n);
            goto out;
        }
        record(run, "message_4", 'R', buf, (size_t)n);
        rc = edhoc_initiator_process_message_4(&s_i, buf, (size_t)n, rx);
        if (rc) {
            fail(run, &s_i, 'I', rc);
            goto out;
        }
        run->rx_ead_count[4] = rx->n_ead;
    }

    rc = edhoc_session_oscore(&s_i, &run->oscore_i);
    if (!rc)
        rc = edhoc_session_oscore(&s_r, &run->oscore_r);
    if (rc) {
        fail(run, NULL, 'I', rc);
        goto out;
    }
    run->err = 0;

out:
    edhoc_session_wipe(&s_i);
    edhoc_session_wipe(&s_r);
    edhoc_wipe(rx, sizeof *rx);
    free(rx);
    free(buf);
    return run->err;
}

static bool oscore_contexts_match(const struct run *run)
{
    const struct edhoc_oscore_params *a = &run->oscore_i, *b = &run->oscore_r;
    return a->master_secret_len == b->master_secret_len &&
           edhoc_ct_equal(a->master_secret, b->master_secret, a->master_secret_len) &&
           a->master_salt_len == b->master_salt_len &&
           !memcmp(a->master_salt, b->master_salt, a->master_salt_len) &&
           a->sender_id_len == b->recipient_id_len &&
           !memcmp(a->sender_id, b->recipient_id, a->sender_id_len) &&
           a->recipient_id_len == b->sender_id_len &&
           !memcmp(a->recipient_id, b->sender_id, a->recipient_id_len) &&
           a->aead_alg == b->aead_alg && a->hash_alg == b->hash_alg;
}

/* ---- Output ---- */

static void print_hex_block(FILE *f, const uint8_t *p, size_t len, const char *indent)
{
    for (size_t i = 0; i < len; i += 16) {
        fputs(indent, f);
        for (size_t j = i; j < len && j < i + 16; j++)
            fprintf(f, "%s%02x", j == i ? "" : " ", p[j]);
        fputc('\n', f);
    }
    if (len == 0)
        fprintf(f, "%s(empty)\n", indent);
}

static size_t total_bytes(const struct run *run)
{
    size_t t = 0;
    for (size_t i = 0; i < run->n_msgs; i++)
        t += run->msgs[i].len;
    return t;
}

/* message_1..3 of the final attempt: the handshake proper. */
static size_t handshake_bytes(const struct run *run)
{
    size_t t = 0;
    for (size_t i = run->n_msgs; i-- > 0;) {
        const char *nm = run->msgs[i].name;
        if (!strcmp(nm, "message_2") || !strcmp(nm, "message_3"))
            t += run->msgs[i].len;
        if (!strcmp(nm, "message_1")) {
            t += run->msgs[i].len;
            break;
        }
    }
    return t;
}

static const char *suite_list(const int *s, size_t n, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%d", i ? "," : "", s[i]);
    return buf;
}

struct timing {
    double handshake_ms; /* median */
    double min_ms;
    double crypto_ms;    /* median run's time inside crypto calls */
    unsigned crypto_calls;
    int runs;
};


/* ---- Bytes per layer as the A.2 framing would send them ----
 *
 * simulate has no datagrams, so each message is put into the CoAP message
 * RFC 9528 Appendix A.2 would send (encoded here, not estimated): requests
 * CON POST with a 1-byte token, Uri-Path .well-known/edhoc, Content-Format
 * 65 and the CBOR true (message_1) or C_R prefix; responses ACK 2.04
 * Changed (4.00 for an error message) with the 1-byte token and
 * Content-Format 64; the empty 2.04 answering message_3 when there is no
 * message_4. UDP and IPv6 headers on top (ports 5683 and an ephemeral one),
 * then the link chosen with --link / --link-mtu. */

static struct edhoc_netacct_link sim_link;

#define FRAMED_MAX (MAX_RECORDED + 4)
#define FRAMING_ASSUMPTIONS                                                                   \
    "as the A.2 framing would send (not measured): CON POST, 1-byte token, Uri-Path "        \
    ".well-known/edhoc, Content-Format 65, true / C_R prefix; responses ACK 2.04 (4.00 for " \
    "errors), 1-byte token, Content-Format 64; UDP over IPv6"

struct framed {
    const char *name;
    char from;
    long edhoc; /* -1: no EDHOC message */
    struct edhoc_netacct_layers l;
};

/* The CoAP message carrying one EDHOC message; its length or -1. */
static long frame_message(const struct recorded_message *m, const struct run *run, uint8_t *out,
                          size_t cap)
{
    static const uint8_t token = 0x01;
    static uint8_t cf_req = 65, cf_resp = 64;
    uint8_t payload[EDHOC_MAX_MESSAGE + EDHOC_MAX_CONN_ID + 2];
    size_t pl = 0;
    struct coap_msg c;
    memset(&c, 0, sizeof c);
    c.token_len = 1;
    c.token[0] = token;
    c.mid = 1;
    if (m->sender == 'I') {
        c.type = COAP_TYPE_CON;
        c.code = COAP_CODE_POST;
        coap_msg_add_option(&c, COAP_OPT_URI_PATH, (const uint8_t *)".well-known", 11);
        coap_msg_add_option(&c, COAP_OPT_URI_PATH, (const uint8_t *)"edhoc", 5);
        coap_msg_add_option(&c, COAP_OPT_CONTENT_FORMAT, &cf_req, 1);
        if (!strcmp(m->name, "message_1")) {
            payload[pl++] = 0xf5;
        } else {
            long n = edhoc_coap_cid_encode(run->oscore_i.sender_id, run->oscore_i.sender_id_len,
                                           payload, sizeof payload);
            if (n < 0)
                return -1;
            pl = (size_t)n;
        }
    } else {
        c.type = COAP_TYPE_ACK;
        c.code = strcmp(m->name, "error") ? COAP_CODE_CHANGED : COAP_CODE_BAD_REQUEST;
        coap_msg_add_option(&c, COAP_OPT_CONTENT_FORMAT, &cf_resp, 1);
    }
    if (pl + m->len > sizeof payload)
        return -1;
    memcpy(payload + pl, m->bytes, m->len);
    c.payload = payload;
    c.payload_len = pl + m->len;
    long n = coap_msg_encode(&c, out, cap);
    return n < 0 ? -1 : n;
}

static void frame_layers(size_t coap, char from, struct edhoc_netacct_layers *l)
{
    uint16_t client = 0, server = 5683; /* the client's port: unknown, not compressible */
    cli_net_layers(&sim_link, coap, true, from == 'I' ? client : server,
                   from == 'I' ? server : client, l);
}

/* Every recorded message framed; returns the count (0 when a message
 * cannot be framed or the handshake failed: C_R is then unknown). */
static size_t frame_run(const struct run *run, struct framed *out, size_t max)
{
    if (run->err)
        return 0;
    size_t n = 0;
    uint8_t buf[EDHOC_MAX_MESSAGE + 64];
    for (size_t i = 0; i < run->n_msgs && n + 2 <= max; i++) {
        const struct recorded_message *m = &run->msgs[i];
        long cl = frame_message(m, run, buf, sizeof buf);
        if (cl < 0)
            return 0;
        out[n] = (struct framed){m->name, m->sender, (long)m->len, {0}};
        frame_layers((size_t)cl, m->sender, &out[n].l);
        n++;
        bool last = i + 1 == run->n_msgs;
        if (!strcmp(m->name, "message_3") && (last || strcmp(run->msgs[i + 1].name, "message_4"))) {
            out[n] = (struct framed){"(2.04 Changed)", 'R', -1, {0}};
            frame_layers(5, 'R', &out[n].l); /* header 4 + token 1 */
            n++;
        }
    }
    return n;
}

static void framed_totals(const struct framed *fr, size_t n, struct edhoc_netacct_total *t)
{
    edhoc_netacct_total_clear(t);
    for (size_t i = 0; i < n; i++)
        edhoc_netacct_total_add(t, &fr[i].l, fr[i].edhoc > 0 ? (size_t)fr[i].edhoc : 0, true);
}

static void print_framed_text(FILE *f, const struct run *run)
{
    struct framed fr[FRAMED_MAX];
    size_t n = frame_run(run, fr, FRAMED_MAX);
    if (!n)
        return;
    bool link = sim_link.type != EDHOC_NETACCT_LINK_NONE;
    fprintf(f, "\nPer layer, %s:\n", FRAMING_ASSUMPTIONS);
    fprintf(f, "  %-16s %-4s %7s %7s %6s %6s%s\n", "message", "dir", "EDHOC", "CoAP", "UDP", "IPv6",
            link ? " frames    link" : "");
    struct edhoc_netacct_total t;
    framed_totals(fr, n, &t);
    for (size_t i = 0; i <= n; i++) {
        const struct edhoc_netacct_layers *l = i < n ? &fr[i].l : NULL;
        char eb[24];
        if (i == n)
            snprintf(eb, sizeof eb, "%zu", t.edhoc);
        else if (fr[i].edhoc >= 0)
            snprintf(eb, sizeof eb, "%ld", fr[i].edhoc);
        else
            snprintf(eb, sizeof eb, "-");
        fprintf(f, "  %-16s %-4s %7s %7zu %6zu %6zu", i < n ? fr[i].name : "total",
                i == n ? "" : fr[i].from == 'I' ? "I->R" : "R->I", eb, l ? l->coap : t.coap,
                l ? l->udp : t.udp, l ? l->ip : t.ip);
        if (link)
            fprintf(f, " %6u %7zu", l ? l->frames : t.frames, l ? l->link : t.link);
        fputc('\n', f);
    }
    char desc[512];
    edhoc_netacct_link_describe(&sim_link, desc, sizeof desc);
    fprintf(f, "  Link: %s\n", desc);
}

static void print_framed_json(FILE *f, const struct run *run)
{
    struct framed fr[FRAMED_MAX];
    size_t n = frame_run(run, fr, FRAMED_MAX);
    if (!n)
        return;
    bool link = sim_link.type != EDHOC_NETACCT_LINK_NONE;
    char desc[512];
    edhoc_netacct_link_describe(&sim_link, desc, sizeof desc);
    fprintf(f, ",\n  \"framed\": {\"measured\": false, \"assumptions\": ");
    cli_json_string(f, FRAMING_ASSUMPTIONS);
    fprintf(f, ", \"link\": ");
    cli_json_string(f, desc);
    fprintf(f, ",\n    \"messages\": [");
    for (size_t i = 0; i < n; i++) {
        const struct edhoc_netacct_layers *l = &fr[i].l;
        fprintf(f, "%s\n      {\"name\": \"%s\", \"from\": \"%s\", \"edhoc_bytes\": %ld, "
                   "\"coap_bytes\": %zu, \"udp_bytes\": %zu, \"ip_bytes\": %zu",
                i ? "," : "", fr[i].name, fr[i].from == 'I' ? "initiator" : "responder",
                fr[i].edhoc, l->coap, l->udp, l->ip);
        if (link)
            fprintf(f, ", \"frames\": %u, \"link_bytes\": %zu", l->frames, l->link);
        fputc('}', f);
    }
    struct edhoc_netacct_total t;
    framed_totals(fr, n, &t);
    fprintf(f, "],\n    \"total\": ");
    cli_net_json_total(f, &t, link);
    fputc('}', f);
}

static void print_json(FILE *f, const struct cli_edhoc_opts *o, const struct cli_side *si,
                       const struct cli_side *sr, const struct run *run, const struct timing *t,
                       int suite)
{
    fprintf(f, "{\n  \"outcome\": ");
    cli_json_string(f, run->err ? "failed" : "ok");
    if (run->err) {
        fprintf(f, ",\n  \"error\": {\"side\": \"%s\", \"code\": %d, \"text\": ",
                run->failed_side == 'I' ? "initiator" : "responder", run->err);
        cli_json_string(f, run->why);
        if (run->have_peer_error) {
            fprintf(f, ", \"err_code\": %lld, \"diagnostic\": ", (long long)run->peer_error.code);
            cli_json_string(f, run->peer_error_text);
        }
        fprintf(f, "}");
    }
    fprintf(f, ",\n  \"method\": %d,\n  \"suite\": %d,\n  \"attempts\": %d,\n", o->method, suite,
            run->attempts);
    fprintf(f, "  \"id_cred_i\": \"%s\",\n  \"id_cred_r\": \"%s\",\n",
            cli_id_cred_type_name(cli_id_cred_type_of(si->id_cred, si->id_cred_len)),
            cli_id_cred_type_name(cli_id_cred_type_of(sr->id_cred, sr->id_cred_len)));
    fprintf(f, "  \"messages\": [");
    for (size_t i = 0; i < run->n_msgs; i++) {
        const struct recorded_message *m = &run->msgs[i];
        fprintf(f, "%s\n    {\"name\": \"%s\", \"from\": \"%s\", \"bytes\": %zu, \"hex\": ",
                i ? "," : "", m->name, m->sender == 'I' ? "initiator" : "responder", m->len);
        cli_json_hex(f, m->bytes, m->len);
        fprintf(f, "}");
    }
    fprintf(f, "\n  ],\n  \"total_bytes\": %zu,\n  \"handshake_bytes\": %zu,\n", total_bytes(run),
            handshake_bytes(run));
    fprintf(f, "  \"time_ms\": %.4f,\n  \"min_time_ms\": %.4f,\n  \"crypto_ms\": %.4f,\n"
               "  \"crypto_calls\": %u,\n  \"runs\": %d",
            t->handshake_ms, t->min_ms, t->crypto_ms, t->crypto_calls, t->runs);
    print_framed_json(f, run);
    if (!run->err) {
        fprintf(f, ",\n  \"oscore_contexts_match\": %s,\n  \"oscore\": ",
                oscore_contexts_match(run) ? "true" : "false");
        cli_print_oscore_json(f, &run->oscore_i, o->export_secrets);
    }
    if (o->trace) {
        fprintf(f, ",\n  \"trace\": [");
        for (size_t i = 0; i < run->n_trace; i++) {
            const struct trace_entry *e = &run->trace[i];
            fprintf(f, "%s\n    {\"side\": \"%s\", \"name\": ", i ? "," : "",
                    e->side == 'I' ? "initiator" : "responder");
            cli_json_string(f, e->name);
            fprintf(f, ", \"hex\": ");
            cli_json_hex(f, e->value, e->len);
            fprintf(f, "}");
        }
        fprintf(f, "\n  ]");
    }
    fprintf(f, "\n}\n");
}

static void print_text(FILE *f, const struct cli_edhoc_opts *o, const struct cli_side *si,
                       const struct cli_side *sr, const struct run *run, const struct timing *t,
                       int suite)
{
    char b1[64], b2[64];
    const int *sr_list = o->n_suites_r ? o->suites_r : NULL;
    fprintf(f, "EDHOC in-process exchange: method %d (%s), initiator suites %s, responder suites %s\n",
            o->method, cli_method_name(o->method), suite_list(o->suites, o->n_suites, b1, sizeof b1),
            sr_list ? suite_list(o->suites_r, o->n_suites_r, b2, sizeof b2) : "all");
    fprintf(f, "  initiator: %s, ID_CRED_I by %s\n", si->cred_origin,
            cli_id_cred_type_name(cli_id_cred_type_of(si->id_cred, si->id_cred_len)));
    fprintf(f, "  responder: %s, ID_CRED_R by %s\n", sr->cred_origin,
            cli_id_cred_type_name(cli_id_cred_type_of(sr->id_cred, sr->id_cred_len)));

    if (o->trace && run->n_trace) {
        fprintf(f, "\nTrace (RFC 9529 names):\n");
        for (size_t i = 0; i < run->n_trace; i++) {
            const struct trace_entry *e = &run->trace[i];
            fprintf(f, "%s %s (%zu bytes)\n", e->side == 'I' ? "[I]" : "[R]", e->name, e->len);
            print_hex_block(f, e->value, e->len, "    ");
        }
    }

    fprintf(f, "\nMessages:\n");
    for (size_t i = 0; i < run->n_msgs; i++) {
        const struct recorded_message *m = &run->msgs[i];
        fprintf(f, "  %-10s %s -> %s %5zu bytes  ", m->name, m->sender == 'I' ? "I" : "R",
                m->sender == 'I' ? "R" : "I", m->len);
        cli_hex_print(f, m->bytes, m->len);
        fputc('\n', f);
    }
    fprintf(f, "  total      %zu bytes in %zu messages; message_1..3 of the handshake: %zu bytes\n",
            total_bytes(run), run->n_msgs, handshake_bytes(run));
    print_framed_text(f, run);

    if (run->err) {
        fprintf(f, "\nOutcome: FAILED at the %s: %s\n",
                run->failed_side == 'I' ? "initiator" : "responder", run->why);
        if (run->have_peer_error)
            fprintf(f, "  error message ERR_CODE %lld%s%s\n", (long long)run->peer_error.code,
                    run->peer_error_text[0] ? ": " : "", run->peer_error_text);
        return;
    }
    fprintf(f, "\nOutcome: ok, suite %d, %d attempt%s; both sides derived %s OSCORE context\n", suite,
            run->attempts, run->attempts == 1 ? "" : "s",
            oscore_contexts_match(run) ? "the same" : "DIFFERENT");
    fprintf(f, "Time: %.3f ms per handshake (median of %d; min %.3f ms), of which crypto %.3f ms "
               "(%.0f%%, %u calls)\n",
            t->handshake_ms, t->runs, t->min_ms, t->crypto_ms,
            t->handshake_ms > 0 ? 100.0 * t->crypto_ms / t->handshake_ms : 0.0, t->crypto_calls);
    const struct edhoc_oscore_params *p = &run->oscore_i;
    fprintf(f, "OSCORE (initiator = client): sender ID ");
    cli_hex_print(f, p->sender_id, p->sender_id_len);
    fprintf(f, " (C_R), recipient ID ");
    cli_hex_print(f, p->recipient_id, p->recipient_id_len);
    fprintf(f, " (C_I), AEAD %s, HKDF %s\n", edhoc_crypto_alg_name(p->aead_alg),
            edhoc_crypto_alg_name(p->hash_alg));
    if (o->export_secrets) {
        fprintf(f, "  master secret ");
        cli_hex_print(f, p->master_secret, p->master_secret_len);
        fprintf(f, "\n  master salt   ");
        cli_hex_print(f, p->master_salt, p->master_salt_len);
        fputc('\n', f);
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: edhoc-cli simulate [OPTIONS]\n\n"
               "Runs an EDHOC initiator and responder in one process (no network) and reports\n"
               "each message, the outcome, the time per handshake and the OSCORE context.\n\n");
    cli_edhoc_print_options(f, true);
    fprintf(f, "Other options:\n"
               "  --repeat N              run N handshakes and report the median time (default 1)\n"
               "  --link 802.15.4         also count 802.15.4 frames (6LoWPAN) of each message as the\n"
               "                          A.2 framing would send it over UDP/IPv6 (not measured)\n"
               "  --link-mtu N            the same for a link carrying N bytes of IP per frame\n"
               "  -h, --help              this text\n\n"
               "Exit codes: 0 ok; 1 handshake failed; 2 bad command line; 3 unusable input file;\n"
               "4 error message from the peer (e.g. no common cipher suite); 5 verification failed\n"
               "(MAC, signature, unknown or untrusted credential); 10 internal error.\n");
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int cmd_simulate(int argc, char **argv)
{
    struct cli_edhoc_opts o;
    cli_edhoc_opts_init(&o);
    long repeat = 1;

    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "edhoc-cli simulate: unexpected argument '%s'\n", arg);
            return CLI_EXIT_USAGE;
        }
        char name[64];
        const char *value = NULL;
        bool eq = cli_split_option(arg, i + 1 < argc ? argv[i + 1] : NULL, name, sizeof name,
                                   &value);
        if (!strcmp(name, "--repeat")) {
            char *end;
            repeat = value ? strtol(value, &end, 10) : 0;
            if (!value || *end || repeat < 1 || repeat > 1000000) {
                fprintf(stderr, "edhoc-cli simulate: --repeat: expected a count from 1 to 1000000\n");
                return CLI_EXIT_USAGE;
            }
            if (!eq)
                i++;
            continue;
        }
        if (!strcmp(name, "--link") || !strcmp(name, "--link-mtu")) {
            struct cli_net_opts net = {.link = sim_link};
            if (cli_net_take_option(&net, "simulate", name, value, eq, &i) < 0)
                return CLI_EXIT_USAGE;
            sim_link = net.link;
            continue;
        }
        if (cli_edhoc_take_option(&o, -1, "simulate", name, value, eq, &i))
            return CLI_EXIT_USAGE;
    }

    struct cli_side *si = calloc(1, sizeof *si), *sr = calloc(1, sizeof *sr);
    int exit_code = CLI_EXIT_INTERNAL;
    if (!si || !sr) {
        fprintf(stderr, "edhoc-cli simulate: out of memory\n");
        free(si);
        free(sr);
        return CLI_EXIT_INTERNAL;
    }
    exit_code = cli_edhoc_side_setup(&o, CLI_SIDE_I, si);
    if (!exit_code)
        exit_code = cli_edhoc_side_setup(&o, CLI_SIDE_R, sr);
    if (!exit_code && o.n_trust == 0) {
        exit_code = cli_edhoc_side_trust_peer(si, &sr->cred);
        if (!exit_code)
            exit_code = cli_edhoc_side_trust_peer(sr, &si->cred);
    }
    if (exit_code)
        goto done;

    const struct edhoc_crypto_ops *ops = make_timed_ops();
    si->cfg.ops = ops;
    sr->cfg.ops = ops;

    /* The first run is the reported one (trace, messages); further runs only
     * time the handshake. */
    uint64_t *times = calloc((size_t)repeat, sizeof *times);
    uint64_t *ctimes = calloc((size_t)repeat, sizeof *ctimes);
    if (!times || !ctimes) {
        free(times);
        free(ctimes);
        exit_code = CLI_EXIT_INTERNAL;
        goto done;
    }
    struct run run;
    memset(&run, 0, sizeof run);
    unsigned calls = 0;
    for (long r = 0; r < repeat; r++) {
        struct run scratch;
        struct run *target = r == 0 ? &run : &scratch;
        if (r)
            memset(&scratch, 0, sizeof scratch);
        crypto_ns = 0;
        crypto_calls = 0;
        uint64_t t0 = cli_now_ns();
        int rc = handshake(&o, si, sr, target, r == 0 && o.trace);
        times[r] = cli_now_ns() - t0;
        ctimes[r] = crypto_ns;
        if (r == 0)
            calls = crypto_calls;
        if (r)
            run_free(&scratch);
        if (rc)
            break;
    }
    /* Median by total time, with the crypto time of that same run. */
    long runs = run.err ? 1 : repeat;
    uint64_t *pairs = calloc((size_t)runs * 2, sizeof *pairs);
    struct timing t = {0};
    if (pairs) {
        for (long r = 0; r < runs; r++) {
            pairs[2 * r] = times[r];
            pairs[2 * r + 1] = ctimes[r];
        }
        qsort(pairs, (size_t)runs, 2 * sizeof *pairs, compare_u64);
        t.handshake_ms = (double)pairs[2 * (runs / 2)] / 1e6;
        t.crypto_ms = (double)pairs[2 * (runs / 2) + 1] / 1e6;
        t.min_ms = (double)pairs[0] / 1e6;
        free(pairs);
    }
    t.crypto_calls = calls;
    t.runs = (int)runs;
    free(times);
    free(ctimes);

    int suite = -1;
    for (size_t i = run.n_msgs; i-- > 0;) {
        if (!strcmp(run.msgs[i].name, "message_1")) {
            struct edhoc_message_1_fields m1;
            if (edhoc_message_1_parse(run.msgs[i].bytes, run.msgs[i].len, &m1) == 0)
                suite = m1.suites[m1.n_suites - 1];
            break;
        }
    }
    if (o.json)
        print_json(stdout, &o, si, sr, &run, &t, suite);
    else
        print_text(stdout, &o, si, sr, &run, &t, suite);
    if (run.err) {
        fprintf(stderr, "edhoc-cli simulate: handshake failed at the %s: %s\n",
                run.failed_side == 'I' ? "initiator" : "responder", run.why);
        exit_code = cli_exit_for_edhoc_error(run.err);
    } else if (!oscore_contexts_match(&run)) {
        fprintf(stderr, "edhoc-cli simulate: initiator and responder derived different OSCORE contexts\n");
        exit_code = CLI_EXIT_INTERNAL;
    } else {
        exit_code = CLI_EXIT_OK;
    }
    run_free(&run);
done:
    cli_edhoc_side_free(si);
    cli_edhoc_side_free(sr);
    free(si);
    free(sr);
    return exit_code;
}
