/*
 * The simulate engine (simulate.h): both sides of a handshake in one
 * process, the messages and traced values recorded, the crypto calls
 * timed through a wrapping ops table, EDHOC_KeyUpdate on request.
 */
#include "simulate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "tools.h"

static const char *suite_list(const int *s, size_t n, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && off < cap; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s%d", i ? "," : "", s[i]);
    return buf;
}

/* ---- Timing of the crypto operations: a wrapping ops table ---- */

static const struct edhoc_crypto_ops *backend;
static uint64_t crypto_ns;
static unsigned crypto_calls;

#define TIMED(call)                                                                                \
    do {                                                                                           \
        uint64_t t0 = tools_now_ns();                                                              \
        int rc_ = (call);                                                                          \
        crypto_ns += tools_now_ns() - t0;                                                          \
        crypto_calls++;                                                                            \
        return rc_;                                                                                \
    } while (0)

static int timed_random(void *ctx, uint8_t *out, size_t len)
{
    TIMED(backend->random(ctx, out, len));
}
static int timed_hash(int alg, const uint8_t *m, size_t l, uint8_t *o)
{
    TIMED(backend->hash(alg, m, l, o));
}
static int timed_extract(int alg, const uint8_t *s, size_t sl, const uint8_t *i, size_t il,
                         uint8_t *p)
{
    TIMED(backend->hkdf_extract(alg, s, sl, i, il, p));
}
static int timed_expand(int alg, const uint8_t *p, size_t pl, const uint8_t *i, size_t il,
                        uint8_t *o, size_t ol)
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

static void record(struct simulate_run *run, const char *name, char sender, const uint8_t *p,
                   size_t len)
{
    if (!run || run->n_msgs >= SIMULATE_MAX_RECORDED)
        return;
    struct simulate_recorded *m = &run->msgs[run->n_msgs++];
    m->name = name;
    m->sender = sender;
    m->bytes = malloc(len ? len : 1);
    if (m->bytes && len)
        memcpy(m->bytes, p, len);
    m->len = m->bytes ? len : 0;
}

struct trace_ctx {
    struct simulate_run *run;
    char side;
};

static void on_trace(void *ctx, const char *name, const uint8_t *v, size_t len)
{
    struct trace_ctx *t = ctx;
    struct simulate_run *run = t->run;
    if (run->n_trace == run->cap_trace) {
        size_t cap = run->cap_trace ? run->cap_trace * 2 : 64;
        struct simulate_trace_entry *bigger = realloc(run->trace, cap * sizeof *bigger);
        if (!bigger)
            return;
        run->trace = bigger;
        run->cap_trace = cap;
    }
    struct simulate_trace_entry *e = &run->trace[run->n_trace];
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

void simulate_run_free(struct simulate_run *run)
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
}

/* ---- One handshake ---- */

static void fail(struct simulate_run *run, const struct edhoc_session *s, char side, int err)
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
static void fail_verify(struct simulate_run *run, const struct edhoc_session *s, char side, int err,
                        const struct simulate_side *who)
{
    fail(run, s, side, err);
    if (*who->resolve_error) {
        size_t n = strlen(run->why);
        snprintf(run->why + n, sizeof run->why - n, " (ID_CRED_%c: %s)", side == 'I' ? 'R' : 'I',
                 edhoc_cred_strerror(*who->resolve_error));
        run->err = *who->resolve_error;
    }
}

/* The side that failed sends its error message (if the RFC wants one) and
 * the other side takes it in. */
static void deliver_error(struct simulate_run *run, struct edhoc_session *from, char from_side,
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

static void note_peer_error(struct simulate_run *run, const struct edhoc_error_info *info)
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

bool simulate_oscore_params_match(const struct edhoc_oscore_params *a,
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

struct trace_ctx_pair {
    struct trace_ctx *i, *r;
};

/* EDHOC_KeyUpdate(context) on both sides (RFC 9528 Appendix H): PRK_out
 * before and after, PRK_exporter after and, when the suite has one, the
 * OSCORE context the new PRK_out gives (Appendix A.1 applied to it).
 * Trace lines carry RFC 9529's names for these values. */
static int key_update(const struct simulate_settings *set, struct edhoc_session *s_i,
                      struct edhoc_session *s_r, struct simulate_run *run,
                      const struct trace_ctx_pair *tc)
{
    struct simulate_key_update *ku = &run->ku;
    ku->sides_agree = true;
    memcpy(ku->context, set->ku_context, set->ku_context_len);
    ku->context_len = set->ku_context_len;
    int rc = both_sides(edhoc_session_prk_out, s_i, s_r, ku->prk_out_before, &ku->prk_len,
                        &ku->sides_agree);
    if (rc)
        return rc;
    if (tc) {
        on_trace(tc->i, "context for KeyUpdate", ku->context, ku->context_len);
        on_trace(tc->r, "context for KeyUpdate", ku->context, ku->context_len);
    }
    rc = edhoc_session_key_update(s_i, ku->context, ku->context_len);
    if (!rc)
        rc = edhoc_session_key_update(s_r, ku->context, ku->context_len);
    if (!rc)
        rc = both_sides(edhoc_session_prk_out, s_i, s_r, ku->prk_out_after, &ku->prk_len,
                        &ku->sides_agree);
    if (!rc)
        rc = both_sides(edhoc_session_prk_exporter, s_i, s_r, ku->prk_exporter_after, &ku->prk_len,
                        &ku->sides_agree);
    if (rc)
        return rc;
    ku->done = true;
    if (!run->have_oscore)
        return 0;
    /* The library would trace these under the handshake's names; they are
     * traced here under the names RFC 9529 gives them after a KeyUpdate. */
    struct edhoc_config *ci = set->i.cfg, *cr = set->r.cfg;
    edhoc_trace_fn trace_i = ci->trace, trace_r = cr->trace;
    ci->trace = cr->trace = NULL;
    rc = edhoc_session_oscore(s_i, &ku->oscore_i);
    if (!rc)
        rc = edhoc_session_oscore(s_r, &ku->oscore_r);
    ci->trace = trace_i;
    cr->trace = trace_r;
    if (rc)
        return rc;
    ku->sides_agree &= simulate_oscore_params_match(&ku->oscore_i, &ku->oscore_r);
    if (tc) {
        const struct edhoc_oscore_params *p[2] = {&ku->oscore_i, &ku->oscore_r};
        struct trace_ctx *side[2] = {tc->i, tc->r};
        for (int k = 0; k < 2; k++) {
            on_trace(side[k], "OSCORE Master Secret after KeyUpdate", p[k]->master_secret,
                     p[k]->master_secret_len);
            on_trace(side[k], "OSCORE Master Salt after KeyUpdate", p[k]->master_salt,
                     p[k]->master_salt_len);
        }
    }
    return 0;
}

/* After a completed handshake: the KeyUpdate, then the program's
 * derivations (the exporter values from the PRK_exporter then current). */
static int after_handshake(const struct simulate_settings *set, struct edhoc_session *s_i,
                           struct edhoc_session *s_r, struct simulate_run *run,
                           const struct trace_ctx_pair *tc)
{
    if (set->key_update) {
        int rc = key_update(set, s_i, s_r, run, tc);
        if (rc)
            return rc;
    }
    return set->after_handshake ? set->after_handshake(set->after_ctx, s_i, s_r) : 0;
}

static int handshake(const struct simulate_settings *set, struct simulate_run *run, bool tracing,
                     bool reported)
{
    const struct simulate_side *si = &set->i, *sr = &set->r;
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
    struct trace_ctx_pair tc = {&tc_i, &tc_r};
    si->cfg->trace = tracing ? on_trace : NULL;
    si->cfg->trace_ctx = &tc_i;
    sr->cfg->trace = tracing ? on_trace : NULL;
    sr->cfg->trace_ctx = &tc_r;
    if (set->key_log) {
        /* The key log sees every value first and hands it on to the
         * trace, if there is one. */
        edhoc_key_log_wipe(set->key_log);
        set->key_log->next = si->cfg->trace;
        set->key_log->next_ctx = &tc_i;
        si->cfg->trace = edhoc_key_log_trace;
        si->cfg->trace_ctx = set->key_log;
    }

    rc = edhoc_session_init(&s_i, EDHOC_INITIATOR, si->cfg);
    if (rc) {
        fail(run, NULL, 'I', rc);
        goto out;
    }

    for (int attempt = 0;; attempt++) {
        run->attempts = attempt + 1;
        if (attempt >= SIMULATE_MAX_ATTEMPTS) {
            fail(run, NULL, 'I', EDHOC_ERR_NO_COMMON_SUITE);
            goto out;
        }
        /* Per-attempt inputs: the n-th identifier / ephemeral key, the last
         * one repeating. */
        const struct simulate_side *oi = si, *or_ = sr;
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

        rc = edhoc_session_init(&s_r, EDHOC_RESPONDER, sr->cfg);
        if (rc) {
            fail(run, NULL, 'R', rc);
            goto out;
        }
        const struct simulate_side *orr = sr;
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
            snprintf(
                run->why, sizeof run->why,
                "no common cipher suite: the responder supports %s (SUITES_R), the initiator %s",
                suite_list(info.suites, info.n_suites, allowed, sizeof allowed),
                suite_list(set->suites, set->n_suites, offered, sizeof offered));
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

    *si->resolve_error = 0;
    rc = edhoc_initiator_handle_message_2(&s_i, buf, (size_t)n, rx, set->resolve, si->resolve_ctx);
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

    *sr->resolve_error = 0;
    rc = edhoc_responder_handle_message_3(&s_r, buf, (size_t)n, rx, set->resolve, sr->resolve_ctx);
    if (rc) {
        fail_verify(run, &s_r, 'R', rc, sr);
        deliver_error(run, &s_r, 'R', &s_i);
        goto out;
    }
    run->rx_ead_count[3] = rx->n_ead;

    if (set->message_4) {
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
    size_t c_r_len = 0;
    const uint8_t *c_r = edhoc_session_peer_conn_id(&s_i, &c_r_len);
    if (c_r)
        memcpy(run->c_r, c_r, c_r_len);
    run->c_r_len = c_r ? c_r_len : 0;
    run->have_oscore =
        !set->oscore_unavailable(edhoc_session_suite(&s_i), run->no_oscore, sizeof run->no_oscore);
    rc = 0;
    if (run->have_oscore) {
        rc = edhoc_session_oscore(&s_i, &run->oscore_i);
        if (!rc)
            rc = edhoc_session_oscore(&s_r, &run->oscore_r);
    }
    if (!rc && reported)
        rc = after_handshake(set, &s_i, &s_r, run, tracing ? &tc : NULL);
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

bool simulate_oscore_contexts_match(const struct simulate_run *run)
{
    return simulate_oscore_params_match(&run->oscore_i, &run->oscore_r);
}

size_t simulate_total_bytes(const struct simulate_run *run)
{
    size_t t = 0;
    for (size_t i = 0; i < run->n_msgs; i++)
        t += run->msgs[i].len;
    return t;
}

size_t simulate_handshake_bytes(const struct simulate_run *run)
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

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool stop_asked(const struct simulate_settings *s)
{
    return s->interrupted && s->interrupted() != 0;
}

/* The suite of the last message_1 sent, -1 when there is none. */
static int offered_suite(const struct simulate_run *run)
{
    for (size_t i = run->n_msgs; i-- > 0;) {
        if (!strcmp(run->msgs[i].name, "message_1")) {
            struct edhoc_message_1_fields m1;
            if (edhoc_message_1_parse(run->msgs[i].bytes, run->msgs[i].len, &m1) == 0)
                return m1.suites[m1.n_suites - 1];
            break;
        }
    }
    return -1;
}

int simulate_run(const struct simulate_settings *s, struct simulate_result *out)
{
    memset(out, 0, sizeof *out);
    out->suite = -1;
    const struct edhoc_crypto_ops *ops = make_timed_ops();
    s->i.cfg->ops = ops;
    s->r.cfg->ops = ops;

    /* The first run is the reported one (trace, messages); further runs only
     * time the handshake. */
    long repeat = s->repeat > 0 ? s->repeat : 1;
    uint64_t *times = calloc((size_t)repeat, sizeof *times);
    uint64_t *ctimes = calloc((size_t)repeat, sizeof *ctimes);
    if (!times || !ctimes) {
        free(times);
        free(ctimes);
        return TOOLS_ERR_INTERNAL;
    }
    struct simulate_run *run = &out->run;
    unsigned calls = 0;
    long done_runs = 0;
    for (long r = 0; r < repeat; r++) {
        if (r > 0 && stop_asked(s))
            break;
        struct simulate_run scratch;
        struct simulate_run *target = run;
        if (r) {
            memset(&scratch, 0, sizeof scratch);
            target = &scratch;
        }
        crypto_ns = 0;
        crypto_calls = 0;
        uint64_t t0 = tools_now_ns();
        int rc = handshake(s, target, r == 0 && s->trace, r == 0);
        times[r] = tools_now_ns() - t0;
        ctimes[r] = crypto_ns;
        if (r == 0)
            calls = crypto_calls;
        if (!rc && s->key_log && s->on_established)
            s->on_established(s->established_ctx, s->key_log, target);
        if (r && rc) {
            /* The first run is the one reported; a later one failing is
             * said on its own. */
            out->later_err = rc;
            out->later_index = done_runs + 1;
            snprintf(out->later_why, sizeof out->later_why, "%s", scratch.why);
        }
        if (r)
            simulate_run_free(&scratch);
        if (rc)
            break;
        done_runs++;
        if (s->progress)
            s->progress(s->progress_ctx, done_runs, repeat);
    }
    if (s->key_log)
        edhoc_key_log_wipe(s->key_log);
    /* Median by total time, with the crypto time of that same run. */
    long runs = run->err ? 1 : done_runs;
    uint64_t *pairs = calloc((size_t)runs * 2, sizeof *pairs);
    struct simulate_timing *t = &out->timing;
    if (pairs) {
        for (long r = 0; r < runs; r++) {
            pairs[2 * r] = times[r];
            pairs[2 * r + 1] = ctimes[r];
        }
        qsort(pairs, (size_t)runs, 2 * sizeof *pairs, compare_u64);
        t->handshake_ms = (double)pairs[2 * (runs / 2)] / 1e6;
        t->crypto_ms = (double)pairs[2 * (runs / 2) + 1] / 1e6;
        t->min_ms = (double)pairs[0] / 1e6;
        free(pairs);
    }
    t->partial = stop_asked(s) && !run->err && !out->later_err && done_runs < repeat;
    t->crypto_calls = calls;
    t->runs = (int)runs;
    free(times);
    free(ctimes);
    out->suite = offered_suite(run);
    return TOOLS_OK;
}
