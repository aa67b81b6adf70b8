/*
 * edhoc-cli simulate: an initiator and a responder in one process, no
 * network. Reports every message (hex, size), the outcome, timing and, on
 * request, every intermediate value and the derived OSCORE context.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "commands.h"
#include "edhoc/coap_msg.h"
#include "edhoc/netacct.h"
#include "edhoc/transport.h"
#include "edhoc_args.h"
#include "exporter.h"
#include "json_out.h"
#include "net_report.h"
#include "progress.h"
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

/* What runs after the handshake, on the reported run only: EDHOC_KeyUpdate
 * (RFC 9528 Appendix H) and EDHOC_Exporter (Section 4.2.1), on both sides. */
struct post_handshake {
    bool key_update;
    uint8_t ku_context[CLI_EXPORT_MAX_CONTEXT];
    size_t ku_context_len;
    struct cli_exports exports; /* the requests; values stay NULL here */
};

struct key_update_result {
    bool done;
    bool sides_agree; /* PRK_out before and after, PRK_exporter and OSCORE after */
    uint8_t context[CLI_EXPORT_MAX_CONTEXT];
    size_t context_len;
    uint8_t prk_out_before[EDHOC_CRYPTO_MAX_HASH];
    uint8_t prk_out_after[EDHOC_CRYPTO_MAX_HASH];
    uint8_t prk_exporter_after[EDHOC_CRYPTO_MAX_HASH];
    size_t prk_len;
    struct edhoc_oscore_params oscore_i, oscore_r; /* from the new PRK_out */
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
    uint8_t c_r[EDHOC_MAX_CONN_ID]; /* for the A.2 framing of message_3 */
    size_t c_r_len;
    bool have_oscore;     /* false: the suite has no OSCORE context, why in no_oscore */
    char no_oscore[320];
    size_t rx_ead_count[5];
    struct key_update_result ku;
    struct cli_exports exports_i, exports_r;
    bool have_exports;
    bool exports_match;
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
    backend = edhoc_crypto_default();
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
    edhoc_wipe(&run->ku, sizeof run->ku);
    cli_exports_wipe(&run->exports_i);
    cli_exports_wipe(&run->exports_r);
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

/* The initiator's context a and the responder's b are two sides of one. */
static bool oscore_params_match(const struct edhoc_oscore_params *a,
                                const struct edhoc_oscore_params *b)
{
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

/* A value read from both sessions: the initiator's copy in out, whether the
 * responder's equals it in *agree. */
static int both_sides(int (*get)(const struct edhoc_session *, uint8_t *, size_t),
                      const struct edhoc_session *s_i, const struct edhoc_session *s_r,
                      uint8_t *out, size_t *len, bool *agree)
{
    uint8_t other[EDHOC_CRYPTO_MAX_HASH];
    int n = get(s_i, out, EDHOC_CRYPTO_MAX_HASH);
    int m = n < 0 ? n : get(s_r, other, sizeof other);
    if (m < 0) {
        edhoc_wipe(other, sizeof other);
        return m;
    }
    *len = (size_t)n;
    *agree &= m == n && edhoc_ct_equal(out, other, (size_t)n);
    edhoc_wipe(other, sizeof other);
    return 0;
}

/* EDHOC_KeyUpdate(context) on both sides (RFC 9528 Appendix H): PRK_out
 * before and after, PRK_exporter after and, when the suite has one, the
 * OSCORE context the new PRK_out gives (Appendix A.1 applied to it).
 * Trace lines carry RFC 9529's names for these values. */
static int key_update(const struct post_handshake *post, struct cli_side *si, struct cli_side *sr,
                      struct edhoc_session *s_i, struct edhoc_session *s_r, struct run *run)
{
    struct key_update_result *ku = &run->ku;
    ku->sides_agree = true;
    memcpy(ku->context, post->ku_context, post->ku_context_len);
    ku->context_len = post->ku_context_len;
    int rc = both_sides(edhoc_session_prk_out, s_i, s_r, ku->prk_out_before, &ku->prk_len,
                        &ku->sides_agree);
    if (rc)
        return rc;
    if (si->cfg.trace) {
        si->cfg.trace(si->cfg.trace_ctx, "context for KeyUpdate", ku->context, ku->context_len);
        sr->cfg.trace(sr->cfg.trace_ctx, "context for KeyUpdate", ku->context, ku->context_len);
    }
    rc = edhoc_session_key_update(s_i, ku->context, ku->context_len);
    if (!rc)
        rc = edhoc_session_key_update(s_r, ku->context, ku->context_len);
    if (!rc)
        rc = both_sides(edhoc_session_prk_out, s_i, s_r, ku->prk_out_after, &ku->prk_len,
                        &ku->sides_agree);
    if (!rc)
        rc = both_sides(edhoc_session_prk_exporter, s_i, s_r, ku->prk_exporter_after,
                        &ku->prk_len, &ku->sides_agree);
    if (rc)
        return rc;
    ku->done = true;
    if (!run->have_oscore)
        return 0;
    /* The library would trace these under the handshake's names; they are
     * traced here under the names RFC 9529 gives them after a KeyUpdate. */
    edhoc_trace_fn trace = si->cfg.trace;
    si->cfg.trace = sr->cfg.trace = NULL;
    rc = edhoc_session_oscore(s_i, &ku->oscore_i);
    if (!rc)
        rc = edhoc_session_oscore(s_r, &ku->oscore_r);
    si->cfg.trace = sr->cfg.trace = trace;
    if (rc)
        return rc;
    ku->sides_agree &= oscore_params_match(&ku->oscore_i, &ku->oscore_r);
    if (trace) {
        const struct edhoc_oscore_params *p[2] = {&ku->oscore_i, &ku->oscore_r};
        struct cli_side *side[2] = {si, sr};
        for (int k = 0; k < 2; k++) {
            trace(side[k]->cfg.trace_ctx, "OSCORE Master Secret after KeyUpdate",
                  p[k]->master_secret, p[k]->master_secret_len);
            trace(side[k]->cfg.trace_ctx, "OSCORE Master Salt after KeyUpdate", p[k]->master_salt,
                  p[k]->master_salt_len);
        }
    }
    return 0;
}

/* After a completed handshake: the KeyUpdate, then the exporter values from
 * the PRK_exporter then current, on both sides. */
static int after_handshake(const struct post_handshake *post, struct cli_side *si,
                           struct cli_side *sr, struct edhoc_session *s_i,
                           struct edhoc_session *s_r, struct run *run)
{
    if (post->key_update) {
        int rc = key_update(post, si, sr, s_i, s_r, run);
        if (rc)
            return rc;
    }
    if (post->exports.n) {
        run->exports_i = post->exports;
        run->exports_r = post->exports;
        run->have_exports = true;
        int rc = cli_exports_compute(s_i, &run->exports_i);
        if (!rc)
            rc = cli_exports_compute(s_r, &run->exports_r);
        if (rc)
            return rc;
        run->exports_match = cli_exports_equal(&run->exports_i, &run->exports_r);
    }
    return 0;
}

static int handshake(const struct cli_edhoc_opts *o, struct cli_side *si, struct cli_side *sr,
                     struct run *run, bool tracing, const struct post_handshake *post)
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
        const struct cli_side_opts *or_ = &o->side[CLI_SIDE_R];
        if (oi->n_c_id) {
            size_t k = (size_t)attempt < oi->n_c_id ? (size_t)attempt : oi->n_c_id - 1;
            edhoc_session_set_conn_id(&s_i, oi->c_id[k], oi->c_id_len[k]);
        } else if (or_->n_c_id) {
            /* --c-r fixed, C_I drawn: a real responder would pick a C_R
             * other than C_I (RFC 9528 Section 3.3.2), this one cannot, so
             * the drawn C_I keeps clear of it (one of the 48 one-byte
             * int-form values, as the library draws). */
            size_t k = (size_t)attempt < or_->n_c_id ? (size_t)attempt : or_->n_c_id - 1;
            uint8_t r = 0;
            if (getrandom(&r, 1, 0) != 1)
                r = (uint8_t)attempt;
            for (unsigned i = 0; i < 48; i++) {
                unsigned v = (r + i) % 48u;
                uint8_t b = (uint8_t)(v < 24 ? v : 0x20 + (v - 24));
                if (or_->c_id_len[k] == 1 && or_->c_id[k][0] == b)
                    continue;
                edhoc_session_set_conn_id(&s_i, &b, 1);
                break;
            }
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

    /* A suite without an OSCORE context still completes EDHOC: the
     * handshake, KeyUpdate and the exporter stand without it. */
    memcpy(run->c_r, s_i.peer_cid, s_i.peer_cid_len);
    run->c_r_len = s_i.peer_cid_len;
    run->have_oscore = !cli_oscore_unavailable(s_i.suite, run->no_oscore, sizeof run->no_oscore);
    rc = 0;
    if (run->have_oscore) {
        rc = edhoc_session_oscore(&s_i, &run->oscore_i);
        if (!rc)
            rc = edhoc_session_oscore(&s_r, &run->oscore_r);
    }
    if (!rc && post)
        rc = after_handshake(post, si, sr, &s_i, &s_r, run);
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
    return oscore_params_match(&run->oscore_i, &run->oscore_r);
}

/* Everything both sides derived after the handshake agrees. */
static bool post_values_match(const struct run *run)
{
    return (!run->ku.done || run->ku.sides_agree) && (!run->have_exports || run->exports_match);
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
    int runs;             /* handshakes timed */
    bool partial;         /* --repeat stopped by SIGINT/SIGTERM */
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
 * then the link chosen with --link / --link-mtu, with its time on air and
 * energy when it has a time model (docs/airtime.md). */

/* --link and the air-model options; static so that an option given after
 * --link (--radio-profile, --data-rate, ...) finds what the earlier ones
 * set. */
static struct cli_net_opts sim_net;

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

/* The link has a time and energy model (not NONE or a bare MTU). */
static bool sim_has_air(void)
{
    enum edhoc_netacct_link_type t = sim_net.link.type;
    return t == EDHOC_NETACCT_LINK_802154 || t == EDHOC_NETACCT_LINK_BLE ||
           t == EDHOC_NETACCT_LINK_LORAWAN;
}

/* The CoAP message carrying one EDHOC message (m NULL: the empty 2.04
 * answering message_3); its length or -1. */
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
    if (!m) {
        /* RFC 9528 Appendix A.2: the responder answers message_3 with a
         * 2.04 that carries no payload when there is no message_4. */
        c.type = COAP_TYPE_ACK;
        c.code = COAP_CODE_CHANGED;
        long n = edhoc_coap_msg_encode(&c, out, cap);
        return n < 0 ? -1 : n;
    }
    if (m->sender == 'I') {
        c.type = COAP_TYPE_CON;
        c.code = COAP_CODE_POST;
        edhoc_coap_msg_add_option(&c, COAP_OPT_URI_PATH, (const uint8_t *)".well-known", 11);
        edhoc_coap_msg_add_option(&c, COAP_OPT_URI_PATH, (const uint8_t *)"edhoc", 5);
        edhoc_coap_msg_add_option(&c, COAP_OPT_CONTENT_FORMAT, &cf_req, 1);
        if (!strcmp(m->name, "message_1")) {
            payload[pl++] = 0xf5;
        } else {
            long n = edhoc_coap_cid_encode(run->c_r, run->c_r_len, payload, sizeof payload);
            if (n < 0)
                return -1;
            pl = (size_t)n;
        }
    } else {
        c.type = COAP_TYPE_ACK;
        c.code = strcmp(m->name, "error") ? COAP_CODE_CHANGED : COAP_CODE_BAD_REQUEST;
        edhoc_coap_msg_add_option(&c, COAP_OPT_CONTENT_FORMAT, &cf_resp, 1);
    }
    if (pl + m->len > sizeof payload)
        return -1;
    memcpy(payload + pl, m->bytes, m->len);
    c.payload = payload;
    c.payload_len = pl + m->len;
    long n = edhoc_coap_msg_encode(&c, out, cap);
    return n < 0 ? -1 : n;
}

/* The layers of one framed message: the CoAP bytes themselves go to the
 * link model, so SCHC on LoRaWAN compresses this very header, and the
 * initiator is the client (uplink on LoRaWAN). */
static void frame_layers(const uint8_t *coap, size_t len, char from,
                         struct edhoc_netacct_layers *l)
{
    uint16_t client = 0, server = 5683; /* the client's port: unknown, not compressible */
    cli_net_layers_msg(&sim_net.link, coap, len, true, from == 'I' ? client : server,
                       from == 'I' ? server : client, from == 'I', l);
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
        frame_layers(buf, (size_t)cl, m->sender, &out[n].l);
        n++;
        bool last = i + 1 == run->n_msgs;
        if (!strcmp(m->name, "message_3") && (last || strcmp(run->msgs[i + 1].name, "message_4"))) {
            cl = frame_message(NULL, run, buf, sizeof buf); /* header 4 + token 1 */
            if (cl < 0)
                return 0;
            out[n] = (struct framed){"(2.04 Changed)", 'R', -1, {0}};
            frame_layers(buf, (size_t)cl, 'R', &out[n].l);
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

/* The exchange on the link's air: every framed message one after another
 * (edhoc_netacct_air_sequence), then the host time on top: the crypto time
 * of the reported run, measured in this process (both sides). */
static void framed_air(const struct framed *fr, size_t n, const struct edhoc_netacct_radio *radio,
                       double host_ms, struct cli_air_summary *s)
{
    memset(s, 0, sizeof *s);
    s->host_ms = host_ms;
    struct edhoc_netacct_step steps[FRAMED_MAX];
    for (size_t i = 0; i < n; i++) {
        cli_air_summary_add(s, radio, &fr[i].l.air, fr[i].l.frames, fr[i].from == 'I');
        s->link_us += fr[i].l.air.link_us;
        steps[i] = (struct edhoc_netacct_step){&fr[i].l.air, fr[i].from == 'I', 0};
    }
    uint64_t host_us = host_ms > 0 ? (uint64_t)(host_ms * 1000 + 0.5) : 0;
    s->e2e_us = edhoc_netacct_air_sequence(&sim_net.link, steps, n) + host_us;
}

static void print_framed_text(FILE *f, const struct run *run, const struct timing *t)
{
    struct framed fr[FRAMED_MAX];
    size_t n = frame_run(run, fr, FRAMED_MAX);
    if (!n)
        return;
    bool link = sim_net.link.type != EDHOC_NETACCT_LINK_NONE, air = sim_has_air();
    struct edhoc_netacct_radio radio = cli_net_radio(&sim_net.link, &sim_net.radio,
                                                     sim_net.radio_set);
    fprintf(f, "\nPer layer, %s:\n", FRAMING_ASSUMPTIONS);
    fprintf(f, "  %-16s %-4s %7s %7s %6s %6s%s", "message", "dir", "EDHOC", "CoAP", "UDP", "IPv6",
            link ? " frames    link" : "");
    if (air)
        fprintf(f, " %11s %11s %11s %9s", "on air", "link time", "duty wait", "mJ (S+R)");
    fputc('\n', f);
    struct edhoc_netacct_total tot;
    framed_totals(fr, n, &tot);
    for (size_t i = 0; i <= n; i++) {
        const struct edhoc_netacct_layers *l = i < n ? &fr[i].l : NULL;
        char eb[24];
        if (i == n)
            snprintf(eb, sizeof eb, "%zu", tot.edhoc);
        else if (fr[i].edhoc >= 0)
            snprintf(eb, sizeof eb, "%ld", fr[i].edhoc);
        else
            snprintf(eb, sizeof eb, "-");
        fprintf(f, "  %-16s %-4s %7s %7zu %6zu %6zu", i < n ? fr[i].name : "total",
                i == n ? "" : fr[i].from == 'I' ? "I->R" : "R->I", eb, l ? l->coap : tot.coap,
                l ? l->udp : tot.udp, l ? l->ip : tot.ip);
        if (link)
            fprintf(f, " %6u %7zu", l ? l->frames : tot.frames, l ? l->link : tot.link);
        if (air && l) {
            char t1[24], t2[24], t3[24];
            struct edhoc_netacct_energy es = edhoc_netacct_energy_of(&radio, &l->air, true);
            struct edhoc_netacct_energy er = edhoc_netacct_energy_of(&radio, &l->air, false);
            fprintf(f, " %11s %11s %11s %9.3f", cli_air_time(l->air.tx_us, t1, sizeof t1),
                    cli_air_time(l->air.link_us, t2, sizeof t2),
                    cli_air_time(l->air.wait_us, t3, sizeof t3),
                    (es.tx_j + es.rx_j + er.tx_j + er.rx_j) * 1e3);
            if (l->air.fragments)
                fprintf(f, "  %u SCHC fragments", l->air.fragments);
        }
        fputc('\n', f);
    }
    char desc[512];
    edhoc_netacct_link_describe(&sim_net.link, desc, sizeof desc);
    fprintf(f, "  Link: %s\n", desc);
    if (!air)
        return;
    struct cli_air_summary s;
    framed_air(fr, n, &radio, t->crypto_ms, &s);
    cli_air_summary_print(f, &s, &radio, "On the link", "the messages",
                          "the crypto time measured here, both sides");
}

/* The per-layer table as JSON, or null when there is none (a failed
 * handshake: C_R, and so the framing of message_3, is unknown). */
static json_t *framed_json(const struct run *run, const struct timing *t)
{
    struct framed fr[FRAMED_MAX];
    size_t n = frame_run(run, fr, FRAMED_MAX);
    if (!n)
        return json_null();
    bool link = sim_net.link.type != EDHOC_NETACCT_LINK_NONE, air = sim_has_air();
    struct edhoc_netacct_radio radio = cli_net_radio(&sim_net.link, &sim_net.radio,
                                                     sim_net.radio_set);
    json_t *o = json_object();
    cli_json_set(o, "measured", json_false());
    cli_json_set(o, "framing", json_string("rfc9528_appendix_a2"));
    cli_json_set(o, "link", cli_net_link_json(&sim_net.link));
    cli_json_set(o, "radio", air ? cli_net_radio_json(&radio) : json_null());
    json_t *msgs = json_array();
    for (size_t i = 0; i < n; i++) {
        const struct edhoc_netacct_layers *l = &fr[i].l;
        json_t *m = json_object();
        cli_json_set(m, "name", json_string(fr[i].edhoc >= 0 ? fr[i].name : "empty_2.04"));
        cli_json_set(m, "from", json_string(fr[i].from == 'I' ? "initiator" : "responder"));
        cli_json_set(m, "edhoc_bytes", cli_json_int_or_null(fr[i].edhoc >= 0, fr[i].edhoc));
        cli_json_set(m, "coap_bytes", json_integer((json_int_t)l->coap));
        cli_json_set(m, "udp_bytes", json_integer((json_int_t)l->udp));
        cli_json_set(m, "ip_bytes", json_integer((json_int_t)l->ip));
        cli_json_set(m, "frames", cli_json_int_or_null(link, l->frames));
        cli_json_set(m, "link_bytes", cli_json_int_or_null(link, (long long)l->link));
        cli_json_set(m, "air", air ? cli_net_air_json(&radio, &l->air) : json_null());
        json_array_append_new(msgs, m);
    }
    cli_json_set(o, "messages", msgs);
    struct edhoc_netacct_total tot;
    framed_totals(fr, n, &tot);
    cli_json_set(o, "total", cli_net_total_json(&tot, link));
    json_t *ja = json_null();
    if (air) {
        struct cli_air_summary s;
        framed_air(fr, n, &radio, t->crypto_ms, &s);
        ja = cli_air_summary_json(&s);
    }
    cli_json_set(o, "air", ja);
    return o;
}

/* The library's error codes as the words the schema lists. */
static const char *error_word(int err)
{
    switch (err) {
    case EDHOC_ERR_ARG: return "argument";
    case EDHOC_ERR_STATE: return "state";
    case EDHOC_ERR_CONN_ID_CONFLICT: return "conn_id_conflict";
    case EDHOC_ERR_BUFFER: return "buffer";
    case EDHOC_ERR_TOO_LARGE: return "too_large";
    case EDHOC_ERR_CRYPTO: return "crypto";
    case EDHOC_ERR_CREDENTIAL: return "credential";
    case EDHOC_ERR_NO_COMMON_SUITE: return "no_common_suite";
    case EDHOC_ERR_MALFORMED: return "malformed";
    case EDHOC_ERR_NOT_DETERMINISTIC: return "not_deterministic";
    case EDHOC_ERR_TRAILING: return "trailing";
    case EDHOC_ERR_CONN_ID_ENCODING: return "conn_id_encoding";
    case EDHOC_ERR_SUITES_ENCODING: return "suites_encoding";
    case EDHOC_ERR_ID_CRED_ENCODING: return "id_cred_encoding";
    case EDHOC_ERR_EPHEMERAL_LENGTH: return "ephemeral_length";
    case EDHOC_ERR_INVALID_POINT: return "invalid_point";
    case EDHOC_ERR_MAC_LENGTH: return "mac_length";
    case EDHOC_ERR_METHOD: return "method";
    case EDHOC_ERR_WRONG_SUITE: return "wrong_suite";
    case EDHOC_ERR_CONN_ID_EQUAL: return "conn_id_equal";
    case EDHOC_ERR_EAD_CRITICAL: return "ead_critical";
    case EDHOC_ERR_EAD_REJECTED: return "ead_rejected";
    case EDHOC_ERR_UNSUPPORTED: return "unsupported";
    case EDHOC_ERR_MAC: return "mac";
    case EDHOC_ERR_SIGNATURE: return "signature";
    case EDHOC_ERR_DECRYPT: return "decrypt";
    case EDHOC_ERR_UNKNOWN_CREDENTIAL: return "unknown_credential";
    case EDHOC_ERR_PEER_ERROR: return "peer_error";
    case EDHOC_CRED_ERR_FORMAT: return "credential_format";
    case EDHOC_CRED_ERR_UNKNOWN: return "credential_unknown";
    case EDHOC_CRED_ERR_UNTRUSTED: return "credential_untrusted";
    case EDHOC_CRED_ERR_EXPIRED: return "credential_expired";
    case EDHOC_CRED_ERR_KEY_TYPE: return "credential_key_type";
    case EDHOC_CRED_ERR_FILE: return "credential_file";
    case EDHOC_CRED_ERR_PERMISSIONS: return "credential_permissions";
    case EDHOC_CRED_ERR_TOO_LARGE: return "credential_too_large";
    case EDHOC_CRED_ERR_CHAIN_LOOP: return "credential_chain_loop";
    case EDHOC_CRED_ERR_CHAIN_DEPTH: return "credential_chain_depth";
    case EDHOC_CRED_ERR_AMBIGUOUS: return "credential_ambiguous";
    default: return "other";
    }
}

/* ID_CRED's type word, or null when it cannot be read. */
static json_t *id_cred_json(const struct cli_side *s)
{
    int type = cli_id_cred_type_of(s->id_cred, s->id_cred_len);
    return type ? json_string(cli_id_cred_type_name(type)) : json_null();
}

/* The derived OSCORE context in the terms libcoap's conf takes it, with
 * the members initiator --json has: the master secret and salt only with
 * --export-secrets (else null); libcoap says whether libcoap can take the
 * hkdf_alg. Neither side has sent anything with it yet: both next sequence
 * numbers are 0. */
static json_t *oscore_json(const struct edhoc_oscore_params *p, bool secrets)
{
    json_t *o = json_object();
    cli_json_set(o, "master_secret",
                 secrets ? cli_json_hex_value(p->master_secret, p->master_secret_len) : json_null());
    cli_json_set(o, "master_salt",
                 secrets ? cli_json_hex_value(p->master_salt, p->master_salt_len) : json_null());
    cli_json_set(o, "sender_id", cli_json_hex_value(p->sender_id, p->sender_id_len));
    cli_json_set(o, "recipient_id", cli_json_hex_value(p->recipient_id, p->recipient_id_len));
    bool libcoap;
    int hkdf = cli_oscore_conf_hkdf(p->hash_alg, &libcoap);
    cli_json_set(o, "aead_alg", json_integer(p->aead_alg));
    cli_json_set(o, "hkdf_alg", json_integer(hkdf));
    cli_json_set(o, "libcoap", json_boolean(libcoap));
    cli_json_set(o, "sender_next_seq", json_integer(0));
    cli_json_set(o, "recipient_next_seq", json_integer(0));
    return o;
}

/* Secret values only with --export-secrets (else null). */
static json_t *secret_hex(const uint8_t *p, size_t len, bool secrets)
{
    return secrets ? cli_json_hex_value(p, len) : json_null();
}

static json_t *key_update_json(const struct run *run, bool secrets)
{
    const struct key_update_result *ku = &run->ku;
    if (run->err || !ku->done)
        return json_null();
    json_t *o = json_object();
    cli_json_set(o, "context", cli_json_hex_value(ku->context, ku->context_len));
    cli_json_set(o, "sides_agree", json_boolean(ku->sides_agree));
    cli_json_set(o, "prk_out_before", secret_hex(ku->prk_out_before, ku->prk_len, secrets));
    cli_json_set(o, "prk_out_after", secret_hex(ku->prk_out_after, ku->prk_len, secrets));
    cli_json_set(o, "prk_exporter_after", secret_hex(ku->prk_exporter_after, ku->prk_len, secrets));
    cli_json_set(o, "oscore", run->have_oscore ? oscore_json(&ku->oscore_i, secrets) : json_null());
    return o;
}

static int print_json(FILE *f, const struct cli_edhoc_opts *o, const struct cli_side *si,
                      const struct cli_side *sr, const struct run *run, const struct timing *t,
                      int suite)
{
    json_t *root = json_object();
    cli_json_set(root, "outcome", json_string(run->err ? "failed" : "ok"));
    json_t *err = json_null();
    if (run->err) {
        err = json_object();
        cli_json_set(err, "side", json_string(run->failed_side == 'I' ? "initiator" : "responder"));
        cli_json_set(err, "code", json_integer(run->err));
        cli_json_set(err, "name", json_string(error_word(run->err)));
        cli_json_set(err, "peer_err_code",
                     cli_json_int_or_null(run->have_peer_error, (long long)run->peer_error.code));
        cli_json_set(err, "peer_diagnostic",
                     run->have_peer_error && run->peer_error_text[0]
                         ? json_string(run->peer_error_text)
                         : json_null());
    }
    cli_json_set(root, "error", err);
    cli_json_set(root, "method", json_integer(o->method));
    cli_json_set(root, "suite", cli_json_int_or_null(suite >= 0, suite));
    cli_json_set(root, "attempts", json_integer(run->attempts));
    cli_json_set(root, "id_cred_i", id_cred_json(si));
    cli_json_set(root, "id_cred_r", id_cred_json(sr));
    json_t *msgs = json_array();
    for (size_t i = 0; i < run->n_msgs; i++) {
        const struct recorded_message *m = &run->msgs[i];
        json_t *jm = json_object();
        cli_json_set(jm, "name", json_string(m->name));
        cli_json_set(jm, "from", json_string(m->sender == 'I' ? "initiator" : "responder"));
        cli_json_set(jm, "bytes", json_integer((json_int_t)m->len));
        cli_json_set(jm, "hex", cli_json_hex_value(m->bytes, m->len));
        json_array_append_new(msgs, jm);
    }
    cli_json_set(root, "messages", msgs);
    cli_json_set(root, "total_bytes", json_integer((json_int_t)total_bytes(run)));
    cli_json_set(root, "handshake_bytes", json_integer((json_int_t)handshake_bytes(run)));
    cli_json_set(root, "time_ms", cli_json_real_or_null(t->handshake_ms));
    cli_json_set(root, "min_time_ms", cli_json_real_or_null(t->min_ms));
    cli_json_set(root, "crypto_ms", cli_json_real_or_null(t->crypto_ms));
    cli_json_set(root, "crypto_calls", json_integer(t->crypto_calls));
    cli_json_set(root, "runs", json_integer(t->runs));
    cli_json_set(root, "partial", json_boolean(t->partial));
    cli_json_set(root, "framed", framed_json(run, t));
    bool osc = !run->err && run->have_oscore;
    cli_json_set(root, "oscore_contexts_match",
                 osc ? json_boolean(oscore_contexts_match(run)) : json_null());
    cli_json_set(root, "oscore",
                 osc ? oscore_json(&run->oscore_i, o->export_secrets) : json_null());
    cli_json_set(root, "oscore_unavailable",
                 !run->err && !run->have_oscore ? json_string(run->no_oscore) : json_null());
    cli_json_set(root, "key_update", key_update_json(run, o->export_secrets));
    cli_json_set(root, "exports",
                 !run->err && run->have_exports
                     ? cli_exports_json(&run->exports_i, run->ku.done)
                     : json_null());
    cli_json_set(root, "exports_match",
                 !run->err && run->have_exports ? json_boolean(run->exports_match) : json_null());
    json_t *trace = json_null();
    if (o->trace) {
        trace = json_array();
        for (size_t i = 0; i < run->n_trace; i++) {
            const struct trace_entry *e = &run->trace[i];
            json_t *je = json_object();
            cli_json_set(je, "side", json_string(e->side == 'I' ? "initiator" : "responder"));
            cli_json_set(je, "name", json_string(e->name));
            cli_json_set(je, "hex", cli_json_hex_value(e->value, e->len));
            json_array_append_new(trace, je);
        }
    }
    cli_json_set(root, "trace", trace);
    return cli_json_print(root, f);
}

static void print_oscore_text(FILE *f, const char *title, const struct edhoc_oscore_params *p,
                              bool secrets)
{
    fprintf(f, "%s: sender ID ", title);
    cli_hex_print(f, p->sender_id, p->sender_id_len);
    fprintf(f, " (C_R), recipient ID ");
    cli_hex_print(f, p->recipient_id, p->recipient_id_len);
    fprintf(f, " (C_I), AEAD %s, HKDF %s\n", edhoc_crypto_alg_name(p->aead_alg),
            edhoc_crypto_alg_name(p->hash_alg));
    if (secrets) {
        fprintf(f, "  master secret ");
        cli_hex_print(f, p->master_secret, p->master_secret_len);
        fprintf(f, "\n  master salt   ");
        cli_hex_print(f, p->master_salt, p->master_salt_len);
        fputc('\n', f);
    }
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
    print_framed_text(f, run, t);

    if (run->err) {
        fprintf(f, "\nOutcome: FAILED at the %s: %s\n",
                run->failed_side == 'I' ? "initiator" : "responder", run->why);
        if (run->have_peer_error)
            fprintf(f, "  error message ERR_CODE %lld%s%s\n", (long long)run->peer_error.code,
                    run->peer_error_text[0] ? ": " : "", run->peer_error_text);
        return;
    }
    if (run->have_oscore)
        fprintf(f, "\nOutcome: ok, suite %d, %d attempt%s; both sides derived %s OSCORE context\n",
                suite, run->attempts, run->attempts == 1 ? "" : "s",
                oscore_contexts_match(run) ? "the same" : "DIFFERENT");
    else
        fprintf(f, "\nOutcome: ok, suite %d, %d attempt%s; EDHOC only\n", suite, run->attempts,
                run->attempts == 1 ? "" : "s");
    fprintf(f, "Time: %.3f ms per handshake (median of %d; min %.3f ms), of which crypto %.3f ms "
               "(%.0f%%, %u calls)\n",
            t->handshake_ms, t->runs, t->min_ms, t->crypto_ms,
            t->handshake_ms > 0 ? 100.0 * t->crypto_ms / t->handshake_ms : 0.0, t->crypto_calls);
    if (t->partial)
        fprintf(f, "interrupted: partial results (%d handshakes timed)\n", t->runs);
    if (run->have_oscore)
        print_oscore_text(f, "OSCORE (initiator = client)", &run->oscore_i, o->export_secrets);
    else
        fprintf(f, "OSCORE: not available: %s\n", run->no_oscore);
    const struct key_update_result *ku = &run->ku;
    if (ku->done) {
        fprintf(f, "\nKeyUpdate (RFC 9528 Appendix H), context h'");
        cli_hex_print(f, ku->context, ku->context_len);
        fprintf(f, "': both sides derived %s PRK_out\n",
                ku->sides_agree ? "the same" : "DIFFERENT");
        if (o->export_secrets) {
            fprintf(f, "  PRK_out before      ");
            cli_hex_print(f, ku->prk_out_before, ku->prk_len);
            fprintf(f, "\n  PRK_out after       ");
            cli_hex_print(f, ku->prk_out_after, ku->prk_len);
            fprintf(f, "\n  PRK_exporter after  ");
            cli_hex_print(f, ku->prk_exporter_after, ku->prk_len);
            fputc('\n', f);
        }
        if (run->have_oscore)
            print_oscore_text(f, "OSCORE after KeyUpdate", &ku->oscore_i, o->export_secrets);
    }
    if (run->have_exports) {
        fputc('\n', f);
        cli_exports_print(f, &run->exports_i,
                          ku->done ? "PRK_exporter after the KeyUpdate" : "PRK_exporter");
        if (!run->exports_match)
            fprintf(f, "  the responder derived DIFFERENT values\n");
    }
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

enum { OPT_REPEAT = 1, OPT_KEY_UPDATE, OPT_EXPORT };

static const struct cli_opt run_opts[] = {
    {OPT_REPEAT, "repeat", "N",
     "run N handshakes (1..1000000) and report the median time (default 1); only\n"
     "the first is printed in full. Ctrl-C stops early and reports the runs done"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt app_key_opts[] = {
    {OPT_KEY_UPDATE, "key-update", "NONCE_HEX",
     "after the handshake, both sides run EDHOC_KeyUpdate with this context (RFC 9528 Appendix "
     "H; hex, empty for h''), as two applications that agreed on it would; reported: whether "
     "they agree and the OSCORE context from the new PRK_out (with --export-secrets also "
     "PRK_out before and after, PRK_exporter after, master secret and salt); --export values "
     "then come from the new PRK_exporter"},
    {OPT_EXPORT, "export", "LABEL,CONTEXT_HEX,LENGTH", CLI_EXPORT_HELP},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group simulate_groups[] = {
    {"EDHOC (-i: the initiator's, -r: the responder's)", cli_edhoc_opts_simulate},
    {"Keys for applications", app_key_opts},
    {"Runs", run_opts},
    {"Bytes, time and energy per layer (computed from the A.2 framing, not measured)",
     cli_net_opts_link_air},
    {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_simulate = {
    .name = "simulate",
    .synopsis = "[OPTIONS]",
    .description =
        "Runs an EDHOC initiator and responder in one process (no network) and reports\n"
        "each message, the outcome, the time per handshake and the OSCORE context (none\n"
        "for suite 25: RFC 8613 Section 3.2.1 has no HKDF for SHAKE256; the run is then\n"
        "EDHOC only and still succeeds).\n"
        "Without --trust each side trusts the other's credential. --json prints one\n"
        "object (docs/json/simulate.schema.json).",
    .groups = simulate_groups,
    .epilogue =
        "Exit codes: 0 ok; 1 handshake failed; 2 bad command line; 3 unusable input file;\n"
        "4 error message from the peer (e.g. no common cipher suite); 5 verification failed\n"
        "(MAC, signature, unknown or untrusted credential); 10 internal error; 130/143\n"
        "--repeat interrupted (SIGINT/SIGTERM), the runs done reported.\n"
        "\n" CLI_EDHOC_DEMO_NOTE,
};

int cmd_simulate(int argc, char **argv)
{
    /* Both sides' private keys and every secret of the handshake. */
    cli_no_core_dumps();
    struct cli_edhoc_opts o;
    cli_edhoc_opts_init(&o);
    long repeat = 1;
    static struct post_handshake post; /* large: not on the stack */
    memset(&post, 0, sizeof post);

    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_simulate, argc, argv);
    for (enum cli_opt_status st; (st = cli_opt_next(&p)) != CLI_OPT_DONE;) {
        if (st == CLI_OPT_EXIT)
            return p.exit_code;
        if (st == CLI_OPT_POSITIONAL)
            return cli_opt_error(&p, "unexpected argument '%s' (simulate takes options only)",
                                 p.value);
        int bad = 0;
        switch (p.opt->id) {
        case CLI_OPT_ID_EDHOC: bad = cli_edhoc_take(&o, -1, &p); break;
        case CLI_OPT_ID_NET: bad = cli_net_take(&sim_net, &p); break;
        case OPT_REPEAT: bad = cli_opt_long(&p, 1, 1000000, &repeat); break;
        case OPT_KEY_UPDATE: {
            long n = p.value[0] ? cli_hex_decode(p.value, post.ku_context, sizeof post.ku_context)
                                : 0;
            if (n < 0)
                bad = cli_opt_error(&p,
                                    "--key-update: expected hex of at most %d bytes, got '%.80s'",
                                    CLI_EXPORT_MAX_CONTEXT, p.value);
            post.ku_context_len = n < 0 ? 0 : (size_t)n;
            post.key_update = true;
            break;
        }
        case OPT_EXPORT: {
            char why[400];
            if (post.exports.n >= CLI_MAX_EXPORTS)
                bad = cli_opt_error(&p, "at most %d --export", CLI_MAX_EXPORTS);
            else if (cli_export_parse(p.value, &post.exports.item[post.exports.n], why, sizeof why))
                bad = cli_opt_error(&p, "--export: %s", why);
            else
                post.exports.n++;
            break;
        }
        }
        if (bad)
            return CLI_EXIT_USAGE;
    }
    if (post.exports.n && !o.export_secrets)
        return cli_opt_error(&p, CLI_EXPORT_NEEDS_SECRETS);

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
    /* A long --repeat shows where it is and, stopped by Ctrl-C, still
     * reports the runs it did. */
    struct cli_progress pr;
    cli_progress_begin(&pr, "simulate", p.verbose, p.quiet || repeat == 1);
    if (repeat > 1)
        cli_interrupt_catch();
    long done_runs = 0;
    int later_err = 0;
    char later_why[256] = "";
    for (long r = 0; r < repeat; r++) {
        if (r > 0 && cli_interrupted())
            break;
        struct run scratch;
        struct run *target = r == 0 ? &run : &scratch;
        if (r)
            memset(&scratch, 0, sizeof scratch);
        crypto_ns = 0;
        crypto_calls = 0;
        uint64_t t0 = cli_now_ns();
        int rc = handshake(&o, si, sr, target, r == 0 && o.trace, r == 0 ? &post : NULL);
        times[r] = cli_now_ns() - t0;
        ctimes[r] = crypto_ns;
        if (r == 0)
            calls = crypto_calls;
        if (r && rc) {
            /* The first run is the one reported; a later one failing is
             * said on its own. */
            later_err = rc;
            snprintf(later_why, sizeof later_why, "%s", scratch.why);
        }
        if (r)
            run_free(&scratch);
        if (rc)
            break;
        done_runs++;
        cli_progress_update(&pr, "%ld of %ld handshakes", done_runs, repeat);
    }
    cli_progress_end(&pr);
    /* Median by total time, with the crypto time of that same run. */
    long runs = run.err ? 1 : done_runs;
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
    t.partial = cli_interrupted() != 0 && !run.err && !later_err && done_runs < repeat;
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
    if (o.json) {
        if (print_json(stdout, &o, si, sr, &run, &t, suite))
            fprintf(stderr, "edhoc-cli simulate: standard output: write error\n");
    } else {
        print_text(stdout, &o, si, sr, &run, &t, suite);
    }
    if (t.partial) {
        exit_code = cli_interrupt_exit_code();
    } else if (later_err) {
        fprintf(stderr, "edhoc-cli simulate: handshake %ld of --repeat failed: %s\n",
                done_runs + 1, later_why);
        exit_code = cli_exit_for_edhoc_error(later_err);
    } else if (run.err) {
        fprintf(stderr, "edhoc-cli simulate: handshake failed at the %s: %s\n",
                run.failed_side == 'I' ? "initiator" : "responder", run.why);
        exit_code = cli_exit_for_edhoc_error(run.err);
    } else if (run.have_oscore && !oscore_contexts_match(&run)) {
        fprintf(stderr, "edhoc-cli simulate: initiator and responder derived different OSCORE contexts\n");
        exit_code = CLI_EXIT_INTERNAL;
    } else if (!post_values_match(&run)) {
        fprintf(stderr, "edhoc-cli simulate: initiator and responder derived different keys after "
                        "the handshake (KeyUpdate or EDHOC_Exporter)\n");
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
