/*
 * EDHOC protocol steps (RFC 9528 Sections 4-6) and the key schedule.
 *
 * The session keeps only what the next step needs (ephemeral private key,
 * the current transcript hash, the current PRK, PRK_out, the connection
 * identifiers and the peer's ephemeral key). Transcript and context inputs
 * are assembled in stack buffers bounded by EDHOC_MAX_TRANSCRIPT, hashed or
 * expanded, and wiped when they held secrets.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "edhoc_internal.h"

/* ---- small helpers ---- */

static const struct edhoc_suite *suite_of(const struct edhoc_session *s)
{
    return edhoc_suite_find(s->suite);
}

static size_t hash_len_of(const struct edhoc_suite *su)
{
    return edhoc_crypto_hash_len(su->hash);
}

static void trace(const struct edhoc_session *s, const char *name, const uint8_t *v, size_t len)
{
    if (s->cfg && s->cfg->trace && !(s->flags & EDHOC_SF_QUIET))
        s->cfg->trace(s->cfg->trace_ctx, name, v, len);
}

static void wipe_secrets(struct edhoc_session *s)
{
    edhoc_wipe(s->eph_priv, sizeof s->eph_priv);
    edhoc_wipe(s->own_eph, sizeof s->own_eph);
    edhoc_wipe(s->peer_eph, sizeof s->peer_eph);
    edhoc_wipe(s->th, sizeof s->th);
    edhoc_wipe(s->prk, sizeof s->prk);
    edhoc_wipe(s->prk_out, sizeof s->prk_out);
    s->eph_priv_len = s->own_eph_len = s->peer_eph_len = s->th_len = 0;
}

/* A decrypted PLAINTEXT_x left in the caller's rx after a failure would
 * outlive the session it belonged to: clear it (and the pointers into it). */
static void received_wipe(struct edhoc_received *rx)
{
    if (rx)
        edhoc_wipe(rx, sizeof *rx);
}

/* Abort: every protocol/crypto failure ends here. */
static int fail(struct edhoc_session *s, int err, enum edhoc_step step)
{
    wipe_secrets(s);
    s->state = EDHOC_STATE_ERROR;
    s->error = (int16_t)err;
    s->failed_step = (uint8_t)step;
    return err;
}

static int crypto_err(int rc)
{
    return rc ? EDHOC_ERR_CRYPTO : 0;
}

int edhoc_kdf(const struct edhoc_crypto_ops *ops, int hash_alg, const uint8_t *prk,
              size_t prk_len, int64_t label, const uint8_t *context, size_t context_len,
              uint8_t *out, size_t len)
{
    if (!ops || !prk || !out || (!context && context_len) || len == 0)
        return EDHOC_ERR_ARG;
    if (context_len > EDHOC_MAX_TRANSCRIPT)
        return EDHOC_ERR_TOO_LARGE;
    uint8_t info[EDHOC_MAX_TRANSCRIPT + 32];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, info, sizeof info);
    edhoc_cbor_put_int(&w, label);
    edhoc_cbor_put_bstr(&w, context, context_len);
    edhoc_cbor_put_uint(&w, len);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_ERR_TOO_LARGE;
    int rc = ops->hkdf_expand(hash_alg, prk, prk_len, info, (size_t)n, out, len);
    /* info may hold secrets (context_2 does not, but callers may pass any) */
    edhoc_wipe(info, (size_t)n);
    return crypto_err(rc);
}

static int kdf(const struct edhoc_session *s, const uint8_t *prk, int64_t label,
               const uint8_t *ctx, size_t ctx_len, uint8_t *out, size_t len)
{
    const struct edhoc_suite *su = suite_of(s);
    return edhoc_kdf(s->cfg->ops, su->hash, prk, hash_len_of(su), label, ctx, ctx_len, out, len);
}

/* PRK_exporter = EDHOC_KDF(PRK_out, 10, h'', hash_length) */
static int prk_exporter(const struct edhoc_session *s, uint8_t *out)
{
    return kdf(s, s->prk_out, 10, NULL, 0, out, hash_len_of(suite_of(s)));
}

/* PRK_exporter is derived on demand, never kept: computed here only for
 * the trace. */
static void trace_prk_exporter(const struct edhoc_session *s, const char *name)
{
    if (!s->cfg->trace)
        return;
    uint8_t exp[EDHOC_CRYPTO_MAX_HASH];
    if (prk_exporter(s, exp) == 0)
        trace(s, name, exp, hash_len_of(suite_of(s)));
    edhoc_wipe(exp, sizeof exp);
}

static int hash(const struct edhoc_session *s, const uint8_t *in, size_t len, uint8_t *out)
{
    return crypto_err(s->cfg->ops->hash(suite_of(s)->hash, in, len, out));
}

static int extract(const struct edhoc_session *s, const uint8_t *salt, size_t salt_len,
                   const uint8_t *ikm, size_t ikm_len, uint8_t *prk)
{
    return crypto_err(
        s->cfg->ops->hkdf_extract(suite_of(s)->hash, salt, salt_len, ikm, ikm_len, prk));
}

static bool all_zero(const uint8_t *p, size_t n)
{
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i++)
        acc |= p[i];
    return acc == 0;
}

/* ECDH with validation of the peer key: a point the backend refuses, or a
 * shared secret of all zeros (low-order X25519/X448 point), is an invalid
 * point (RFC 9528 Section 9.2). */
static int ecdh(const struct edhoc_session *s, int curve, const uint8_t *priv,
                const uint8_t *peer, size_t peer_len, uint8_t *out, size_t *out_len)
{
    size_t n = edhoc_crypto_ecdh_secret_len(curve);
    if (n == 0 || n > EDHOC_CRYPTO_MAX_SECRET)
        return EDHOC_ERR_CREDENTIAL;
    int rc = s->cfg->ops->ecdh(curve, priv, peer, peer_len, out);
    if (rc == EDHOC_CRYPTO_ERR_RANDOM || rc == EDHOC_CRYPTO_ERR_UNSUPPORTED)
        return EDHOC_ERR_CRYPTO;
    if (rc || all_zero(out, n)) {
        edhoc_wipe(out, n);
        return EDHOC_ERR_INVALID_POINT;
    }
    *out_len = n;
    return 0;
}

/* New ephemeral key pair on curve: the explicit key if one was set, else
 * drawn from ops->random (so a pinned random reproduces a trace). A draw
 * that is not a valid scalar (P-256/P-384, probability ~2^-32) is redrawn. */
static int ephemeral(struct edhoc_session *s, int curve, uint8_t *pub, size_t *pub_len)
{
    const struct edhoc_crypto_ops *ops = s->cfg->ops;
    size_t priv_len = edhoc_crypto_priv_len(curve);
    if (priv_len == 0 || priv_len > sizeof s->eph_priv)
        return EDHOC_ERR_CRYPTO;
    if (s->flags & EDHOC_SF_EXPLICIT_EPH) {
        s->flags &= (uint8_t)~EDHOC_SF_EXPLICIT_EPH;
        if (s->eph_priv_len != priv_len)
            return EDHOC_ERR_CREDENTIAL;
        if (ops->public_key(curve, true, s->eph_priv, pub, pub_len))
            return EDHOC_ERR_CREDENTIAL;
        return 0;
    }
    for (int attempt = 0; attempt < 8; attempt++) {
        if (ops->random(ops->rng_ctx, s->eph_priv, priv_len))
            return EDHOC_ERR_CRYPTO;
        s->eph_priv_len = (uint8_t)priv_len;
        if (ops->public_key(curve, true, s->eph_priv, pub, pub_len) == 0)
            return 0;
    }
    return EDHOC_ERR_CRYPTO;
}

/* Own connection identifier: a random one-byte int form when the
 * application set none, never equal to the peer's. */
static int ensure_own_cid(struct edhoc_session *s)
{
    if (s->flags & EDHOC_SF_OWN_CID_SET)
        return 0;
    uint8_t r;
    if (s->cfg->ops->random(s->cfg->ops->rng_ctx, &r, 1))
        return EDHOC_ERR_CRYPTO;
    for (int i = 0; i < 48; i++) {
        unsigned v = (unsigned)(r + i) % 48u;
        uint8_t b = (uint8_t)(v < 24 ? v : 0x20 + (v - 24));
        if (s->peer_cid_len == 1 && s->peer_cid[0] == b)
            continue;
        s->own_cid[0] = b;
        s->own_cid_len = 1;
        s->flags |= EDHOC_SF_OWN_CID_SET;
        return 0;
    }
    return EDHOC_ERR_CRYPTO;
}

/* Own ID_CRED_x in full map form, into buf when built from the kid. */
static int own_id_cred(const struct edhoc_config *c, uint8_t *buf, size_t cap,
                       const uint8_t **map, size_t *len)
{
    if (c->id_cred && c->id_cred_len) {
        if (edhoc_cbor_check_item(c->id_cred, c->id_cred_len) || c->id_cred[0] < 0xa0 ||
            c->id_cred[0] > 0xbb)
            return EDHOC_ERR_CREDENTIAL;
        *map = c->id_cred;
        *len = c->id_cred_len;
        return 0;
    }
    if (c->cred->kid_len == 0 || c->cred->kid_len > EDHOC_CRED_MAX_KID)
        return EDHOC_ERR_CREDENTIAL;
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, buf, cap);
    edhoc_put_id_cred_kid(&w, c->cred->kid, c->cred->kid_len);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_ERR_TOO_LARGE;
    *map = buf;
    *len = (size_t)n;
    return 0;
}

/* Check that our own key fits what the method asks of it. */
static int check_own_key(const struct edhoc_session *s, bool static_dh)
{
    const struct edhoc_suite *su = suite_of(s);
    const struct edhoc_key *k = s->cfg->key;
    int want = static_dh ? su->ecdh_curve : su->sig_curve;
    if (k->curve != want || k->priv_len != edhoc_crypto_priv_len(want))
        return EDHOC_ERR_CREDENTIAL;
    return 0;
}

static int deliver_ead(const struct edhoc_session *s, int message, const uint8_t *p, size_t len)
{
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, p, len);
    while (!edhoc_cbor_at_end(&r)) {
        struct edhoc_ead_item item;
        if (edhoc_ead_next(&r, &item))
            return EDHOC_ERR_MALFORMED; /* validated before; defensive */
        if (item.label == 0)
            continue;
        int res = EDHOC_EAD_UNRECOGNIZED;
        if (s->cfg->ead_receive)
            res = s->cfg->ead_receive(s->cfg->ead_ctx, message, &item);
        if (res < 0)
            return EDHOC_ERR_EAD_REJECTED;
        if (res == EDHOC_EAD_UNRECOGNIZED && item.label < 0)
            return EDHOC_ERR_EAD_CRITICAL;
    }
    return 0;
}

/* Own EAD_x encoded into buf. */
static int own_ead(const struct edhoc_config *c, int message, uint8_t *buf, size_t cap,
                   size_t *len)
{
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, buf, cap);
    if (c->ead[message])
        edhoc_ead_write(&w, c->ead[message], c->n_ead[message]);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_ERR_TOO_LARGE;
    *len = (size_t)n;
    return 0;
}

/* ---- session management ---- */

static bool suite_in(const int *list, size_t n, int suite)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == suite)
            return true;
    return false;
}

int edhoc_session_init_sized(struct edhoc_session *s, enum edhoc_role role,
                             const struct edhoc_config *cfg, size_t cfg_size)
{
    if (!s || !cfg || (role != EDHOC_INITIATOR && role != EDHOC_RESPONDER))
        return EDHOC_ERR_ARG;
    /* An application built against a newer header: what it sets beyond
     * the layout we know would be ignored, so refuse it; zeros are what
     * an older application means anyway. */
    if (cfg_size < EDHOC_CONFIG_SIZE_V1 || cfg_size > UINT16_MAX)
        return EDHOC_ERR_ARG;
    for (size_t i = sizeof *cfg; i < cfg_size; i++)
        if (((const unsigned char *)cfg)[i] != 0)
            return EDHOC_ERR_ARG;
    if (!cfg->ops || !cfg->cred || !cfg->key || !cfg->suites || cfg->n_suites == 0 ||
        cfg->n_suites > EDHOC_MAX_SUITES)
        return EDHOC_ERR_ARG;
    if (role == EDHOC_INITIATOR && (cfg->method < 0 || cfg->method > 3))
        return EDHOC_ERR_ARG;
    for (size_t i = 0; i < cfg->n_suites; i++)
        if (!edhoc_suite_find(cfg->suites[i]))
            return EDHOC_ERR_ARG;
    for (int m = 1; m <= 4; m++)
        if (cfg->n_ead[m] && !cfg->ead[m])
            return EDHOC_ERR_ARG;
    if ((cfg->tolerate | cfg->emulate) & ~(unsigned)EDHOC_DEV_ALL)
        return EDHOC_ERR_ARG;
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->cfg_size = (uint16_t)(cfg_size < sizeof *cfg ? cfg_size : sizeof *cfg);
    s->role = (uint8_t)role;
    s->state = EDHOC_STATE_START;
    s->method = -1;
    s->suite = EDHOC_NO_SUITE;
    s->retry_suite = EDHOC_NO_SUITE;
    s->suites_r_hint = EDHOC_NO_SUITE;
    return 0;
}

int edhoc_session_set_conn_id(struct edhoc_session *s, const uint8_t *cid, size_t len)
{
    if (!s || !s->cfg || (!cid && len) || len > EDHOC_MAX_CONN_ID)
        return EDHOC_ERR_ARG;
    bool ok = (s->role == EDHOC_INITIATOR && s->state == EDHOC_STATE_START) ||
              (s->role == EDHOC_RESPONDER &&
               (s->state == EDHOC_STATE_START || s->state == EDHOC_STATE_SEND_M2));
    if (!ok)
        return EDHOC_ERR_STATE;
    if (len)
        memcpy(s->own_cid, cid, len);
    s->own_cid_len = (uint8_t)len;
    s->flags |= EDHOC_SF_OWN_CID_SET;
    return 0;
}

int edhoc_session_set_ephemeral(struct edhoc_session *s, const uint8_t *priv, size_t len)
{
    if (!s || !s->cfg || !priv || len == 0 || len > sizeof s->eph_priv)
        return EDHOC_ERR_ARG;
    if (s->state != EDHOC_STATE_START)
        return EDHOC_ERR_STATE;
    memcpy(s->eph_priv, priv, len);
    s->eph_priv_len = (uint8_t)len;
    s->flags |= EDHOC_SF_EXPLICIT_EPH;
    return 0;
}

/* Our most preferred suite that is also in list, or EDHOC_NO_SUITE. */
static int preferred_common(const struct edhoc_config *cfg, const int *list, size_t n)
{
    for (size_t i = 0; i < cfg->n_suites; i++)
        if (suite_in(list, n, cfg->suites[i]))
            return cfg->suites[i];
    return EDHOC_NO_SUITE;
}

int edhoc_session_set_peer_suites(struct edhoc_session *s, const int *list, size_t n)
{
    if (!s || !s->cfg || !list || n == 0)
        return EDHOC_ERR_ARG;
    if (s->role != EDHOC_INITIATOR || s->state != EDHOC_STATE_START)
        return EDHOC_ERR_STATE;
    int sel = preferred_common(s->cfg, list, n);
    if (sel == EDHOC_NO_SUITE)
        return EDHOC_ERR_NO_COMMON_SUITE;
    s->retry_suite = (int8_t)sel;
    return 0;
}

void edhoc_session_wipe(struct edhoc_session *s)
{
    if (!s)
        return;
    wipe_secrets(s);
    s->state = EDHOC_STATE_ERROR;
}

enum edhoc_state edhoc_session_state(const struct edhoc_session *s)
{
    return (enum edhoc_state)s->state;
}

int edhoc_session_method(const struct edhoc_session *s)
{
    return s->method;
}

int edhoc_session_suite(const struct edhoc_session *s)
{
    return s->suite == EDHOC_NO_SUITE ? -1 : s->suite;
}

const uint8_t *edhoc_session_own_conn_id(const struct edhoc_session *s, size_t *len)
{
    if (!(s->flags & EDHOC_SF_OWN_CID_SET))
        return NULL;
    if (len)
        *len = s->own_cid_len;
    return s->own_cid;
}

const uint8_t *edhoc_session_peer_conn_id(const struct edhoc_session *s, size_t *len)
{
    if (!(s->flags & EDHOC_SF_PEER_CID))
        return NULL;
    if (len)
        *len = s->peer_cid_len;
    return s->peer_cid;
}

int edhoc_session_error(const struct edhoc_session *s)
{
    return s->state == EDHOC_STATE_ERROR ? s->error : 0;
}

/* ---- message_1 ---- */

/* EAD padding of exactly k bytes (RFC 9528 Section 3.8.1): "an EAD item
 * with ead_label = 0 and a (pseudo-)randomly generated byte string of
 * appropriate length as ead_value, noting that the ead_label and the CBOR
 * encoding of ead_value also add bytes". The label takes one byte and the
 * value's head 1, 2 or 3; the lengths one item cannot reach (26 and 259,
 * where the head grows) take a lone label first, since "certain padding
 * lengths require the use of at least two such EAD items". */
static int put_padding(const struct edhoc_config *c, struct edhoc_cbor_writer *w, size_t k)
{
    while (k > 0) {
        size_t value_len = SIZE_MAX;
        for (size_t head = 1; head <= 3 && value_len == SIZE_MAX; head++) {
            if (k >= 1 + head && edhoc_cbor_head_len(k - 1 - head) == head)
                value_len = k - 1 - head;
        }
        edhoc_cbor_put_int(w, 0);
        if (value_len == SIZE_MAX) {
            k--; /* the one-byte item without a value (0x00) */
            continue;
        }
        uint8_t value[EDHOC_MAX_EAD_SIZE];
        if (value_len > sizeof value)
            return EDHOC_ERR_TOO_LARGE;
        if (value_len && c->ops->random(c->ops->rng_ctx, value, value_len))
            return EDHOC_ERR_CRYPTO;
        edhoc_cbor_put_bstr(w, value, value_len);
        k = 0;
    }
    return w->error ? EDHOC_ERR_BUFFER : 0;
}

/* H(message_1) waits in th for TH_2. */
static int hash_message_1(struct edhoc_session *s, const uint8_t *msg, size_t len)
{
    int rc = hash(s, msg, len, s->th);
    if (rc)
        return rc;
    s->th_len = (uint8_t)hash_len_of(suite_of(s));
    trace(s, "H(message_1)", s->th, s->th_len);
    return 0;
}

int edhoc_initiator_prepare_message_1(struct edhoc_session *s, uint8_t *out, size_t cap)
{
    if (!s || !s->cfg || !out)
        return EDHOC_ERR_ARG;
    if (s->role != EDHOC_INITIATOR || s->state != EDHOC_STATE_START)
        return EDHOC_ERR_STATE;
    const struct edhoc_config *c = s->cfg;
    const enum edhoc_step step = EDHOC_STEP_PREPARE_M1;

    /* Section 5.2.2: SUITES_I = our suites up to the selected one. */
    size_t sel = 0;
    if (s->retry_suite != EDHOC_NO_SUITE)
        for (size_t i = 0; i < c->n_suites; i++)
            if (c->suites[i] == s->retry_suite)
                sel = i;
    s->suite = (int8_t)c->suites[sel];
    s->method = (int8_t)c->method;
    const struct edhoc_suite *su = suite_of(s);

    uint8_t g_x[EDHOC_CRYPTO_MAX_PUB];
    size_t g_x_len = 0;
    int rc = ephemeral(s, su->ecdh_curve, g_x, &g_x_len);
    if (rc)
        return fail(s, rc, step);
    rc = ensure_own_cid(s);
    if (rc)
        return fail(s, rc, step);

    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, out, cap);
    edhoc_cbor_put_int(&w, c->method);
    if (sel > 0)
        edhoc_cbor_put_array(&w, sel + 1);
    for (size_t i = 0; i <= sel; i++)
        edhoc_cbor_put_int(&w, c->suites[i]);
    edhoc_cbor_put_bstr(&w, g_x, g_x_len);
    edhoc_put_bstr_id(&w, s->own_cid, s->own_cid_len);
    size_t ead_start = w.len;
    if (c->ead[1])
        edhoc_ead_write(&w, c->ead[1], c->n_ead[1]);
    if (!w.error && c->pad_message_1 > w.len) {
        rc = put_padding(c, &w, c->pad_message_1 - w.len);
        if (!rc && w.len - ead_start > EDHOC_MAX_EAD_SIZE)
            rc = EDHOC_ERR_TOO_LARGE; /* more EAD_1 than a responder takes */
        if (rc)
            return fail(s, rc, step);
    }
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return fail(s, EDHOC_ERR_BUFFER, step);

    trace(s, "X", s->eph_priv, s->eph_priv_len);
    trace(s, "G_X", g_x, g_x_len);
    trace(s, "message_1", out, (size_t)n);

    rc = hash_message_1(s, out, (size_t)n);
    if (rc)
        return fail(s, rc, step);
    s->flags |= EDHOC_SF_CID_SENT;
    s->state = EDHOC_STATE_WAIT_M2;
    return (int)n;
}

/* TH_2 = H(G_Y, H(message_1)); th holds H(message_1) on entry, TH_2 after. */
static int compute_th_2(struct edhoc_session *s, const uint8_t *g_y, size_t g_y_len)
{
    uint8_t in[2 * (EDHOC_CRYPTO_MAX_HASH + 4)];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, in, sizeof in);
    edhoc_cbor_put_bstr(&w, g_y, g_y_len);
    edhoc_cbor_put_bstr(&w, s->th, s->th_len);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_ERR_TOO_LARGE;
    trace(s, "input_TH_2", in, (size_t)n);
    int rc = hash(s, in, (size_t)n, s->th);
    if (rc)
        return rc;
    trace(s, "TH_2", s->th, s->th_len);
    return 0;
}

/* PRK_2e = EDHOC_Extract(TH_2, G_XY) */
static int compute_prk_2e(struct edhoc_session *s, const uint8_t *peer_eph, size_t peer_len)
{
    uint8_t g_xy[EDHOC_CRYPTO_MAX_SECRET];
    size_t g_xy_len = 0;
    int rc = ecdh(s, suite_of(s)->ecdh_curve, s->eph_priv, peer_eph, peer_len, g_xy, &g_xy_len);
    if (rc)
        return rc;
    trace(s, "G_XY", g_xy, g_xy_len);
    rc = extract(s, s->th, s->th_len, g_xy, g_xy_len, s->prk);
    edhoc_wipe(g_xy, sizeof g_xy);
    if (rc)
        return rc;
    trace(s, "PRK_2e", s->prk, s->th_len);
    return 0;
}

int edhoc_responder_process_message_1(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                      struct edhoc_received *rx)
{
    if (!s || !s->cfg || !msg)
        return EDHOC_ERR_ARG;
    if (s->role != EDHOC_RESPONDER || s->state != EDHOC_STATE_START)
        return EDHOC_ERR_STATE;
    const struct edhoc_config *c = s->cfg;
    const enum edhoc_step step = EDHOC_STEP_PROCESS_M1;
    struct edhoc_message_1_fields f;
    int rc = edhoc_message_1_parse(msg, len, &f);
    if (rc)
        return fail(s, rc, step);
    if (c->accept_methods && !(c->accept_methods & (1u << f.method)))
        return fail(s, EDHOC_ERR_METHOD, step);

    /* Section 5.2.3 / 6.3: accept only if the selected suite is the first
     * of SUITES_I that we support. */
    int first = EDHOC_NO_SUITE;
    size_t first_idx = 0;
    for (size_t i = 0; i < f.n_suites; i++)
        if (suite_in(c->suites, c->n_suites, f.suites[i])) {
            first = f.suites[i];
            first_idx = i;
            break;
        }
    if (first == EDHOC_NO_SUITE || first_idx != f.n_suites - 1) {
        s->suites_r_hint = (int8_t)first;
        return fail(s, EDHOC_ERR_WRONG_SUITE, step);
    }
    s->suite = (int8_t)first;
    s->method = (int8_t)f.method;
    memcpy(s->peer_cid, f.c_i, f.c_i_len);
    s->peer_cid_len = (uint8_t)f.c_i_len;
    s->flags |= EDHOC_SF_PEER_CID;
    const struct edhoc_suite *su = suite_of(s);

    /* Y now, so that G_X is validated by computing G_XY before anything is
     * accepted; TH_2 and PRK_2e follow directly. G_X is traced on this
     * side too: it names the handshake in a key log (edhoc_key_log). */
    trace(s, "G_X", f.g_x, f.g_x_len);
    size_t g_y_len = 0;
    rc = ephemeral(s, su->ecdh_curve, s->own_eph, &g_y_len);
    if (rc)
        return fail(s, rc, step);
    s->own_eph_len = (uint8_t)g_y_len;
    trace(s, "Y", s->eph_priv, s->eph_priv_len);
    trace(s, "G_Y", s->own_eph, s->own_eph_len);
    memcpy(s->peer_eph, f.g_x, f.g_x_len);
    s->peer_eph_len = (uint8_t)f.g_x_len;

    rc = hash_message_1(s, msg, len);
    if (!rc)
        rc = compute_th_2(s, s->own_eph, s->own_eph_len);
    if (!rc)
        rc = compute_prk_2e(s, f.g_x, f.g_x_len);
    if (rc)
        return fail(s, rc, step);

    if (rx) {
        rx->id_cred = NULL;
        rx->id_cred_len = 0;
        rx->plaintext_len = 0;
        (void)edhoc_ead_parse(f.ead, f.ead_len, rx);
    }
    rc = deliver_ead(s, 1, f.ead, f.ead_len);
    if (rc)
        return fail(s, rc, step);
    s->state = EDHOC_STATE_SEND_M2;
    return 0;
}

/* ---- authentication of message_2 (by R) and message_3 (by I) ---- */

/* What tells the authentication of message_2 from that of message_3
 * (RFC 9528 Sections 5.3.2 and 5.4.2): KDF labels and the names of the
 * intermediate values. The steps themselves are the same. */
struct auth_msg {
    int msg_no;         /* 2 or 3 */
    int64_t salt_label; /* SALT_3e2m / SALT_4e3m */
    int64_t mac_label;  /* MAC_2 / MAC_3 */
    const char *salt, *dh, *prk, *context, *mac, *to_be_signed, *sig_or_mac, *plaintext;
    const char *input_th, *th; /* the transcript hash that follows */
};

static const struct auth_msg auth_msg_2 = {
    .msg_no = 2,
    .salt_label = 1,
    .mac_label = 2,
    .salt = "SALT_3e2m",
    .dh = "G_RX",
    .prk = "PRK_3e2m",
    .context = "context_2",
    .mac = "MAC_2",
    .to_be_signed = "Message_to_be_signed_2",
    .sig_or_mac = "Signature_or_MAC_2",
    .plaintext = "PLAINTEXT_2",
    .input_th = "input_TH_3",
    .th = "TH_3",
};

static const struct auth_msg auth_msg_3 = {
    .msg_no = 3,
    .salt_label = 5,
    .mac_label = 6,
    .salt = "SALT_4e3m",
    .dh = "G_IY",
    .prk = "PRK_4e3m",
    .context = "context_3",
    .mac = "MAC_3",
    .to_be_signed = "Message_to_be_signed_3",
    .sig_or_mac = "Signature_or_MAC_3",
    .plaintext = "PLAINTEXT_3",
    .input_th = "input_TH_4",
    .th = "TH_4",
};

/* PRK_3e2m / PRK_4e3m into prk_out. A sender that authenticates with a
 * static DH key contributes it:
 *   PRK = EDHOC_Extract(EDHOC_KDF(PRK_cur, salt_label, TH, hash_length), G_xx)
 * with priv our half of that DH and pub the other side's; otherwise the
 * current PRK carries over. */
static int derive_auth_prk(struct edhoc_session *s, const struct auth_msg *m, bool static_dh,
                           const uint8_t *priv, const uint8_t *pub, size_t pub_len,
                           uint8_t *prk_out)
{
    const struct edhoc_suite *su = suite_of(s);
    size_t hl = hash_len_of(su);
    if (!static_dh) {
        memcpy(prk_out, s->prk, hl);
        trace(s, m->prk, prk_out, hl);
        return 0;
    }
    uint8_t salt[EDHOC_CRYPTO_MAX_HASH];
    uint8_t dh[EDHOC_CRYPTO_MAX_SECRET];
    size_t dh_len = 0;
    int rc = kdf(s, s->prk, m->salt_label, s->th, s->th_len, salt, hl);
    if (rc)
        goto out;
    trace(s, m->salt, salt, hl);
    rc = ecdh(s, su->ecdh_curve, priv, pub, pub_len, dh, &dh_len);
    if (rc)
        goto out;
    trace(s, m->dh, dh, dh_len);
    rc = extract(s, salt, hl, dh, dh_len, prk_out);
    if (rc)
        goto out;
    trace(s, m->prk, prk_out, hl);
out:
    edhoc_wipe(salt, sizeof salt);
    edhoc_wipe(dh, sizeof dh);
    return rc;
}

/* What goes into context_x = << ? C_R, ID_CRED_x, TH_x, CRED_x, ? EAD_x >>
 * (C_R for message_2 only) and, for a signature, into the COSE protected
 * header, and how: as RFC 9528 says, or with the deviations of deployed
 * implementations (context_deviate). */
struct context_in {
    const uint8_t *c_r; /* NULL for message_3 */
    size_t c_r_len;
    bool c_r_bstr;      /* c-bstr: C_R as a byte string even with an int form */
    const uint8_t *id_cred;
    size_t id_cred_len;
    const uint8_t *cred;
    size_t cred_len;
    bool cred_wrapped;  /* cred-wrap: CRED_x inside an extra byte string */
    const uint8_t *ead;
    size_t ead_len;
    /* kid-int / id-cred-compact forms of ID_CRED_x (id_cred points here) */
    uint8_t id_buf[EDHOC_CRED_MAX_KID + 10];
};

/* Whether CRED_x is one CBOR byte string (an X.509 certificate, RFC 9528
 * Section 3.5.2); *content is what it wraps. */
static bool cred_is_bstr(const uint8_t *cred, size_t len, const uint8_t **content,
                         size_t *content_len)
{
    struct edhoc_cbor_reader r;
    struct edhoc_cbor_item it;
    edhoc_cbor_reader_init(&r, cred, len);
    if (edhoc_cbor_get(&r, &it) || it.type != EDHOC_CBOR_BSTR || !edhoc_cbor_at_end(&r))
        return false;
    *content = it.ptr;
    *content_len = it.len;
    return true;
}

/* The deviations that change anything for this context (see edhoc.h):
 * the others would recompute the same bytes. */
static unsigned deviations_applicable(const struct context_in *rfc)
{
    unsigned m = EDHOC_DEV_CRED_WRAP;
    const uint8_t *kid;
    size_t kid_len;
    if (rfc->c_r && rfc->c_r_len == 1 && edhoc_is_one_byte_int(rfc->c_r[0]))
        m |= EDHOC_DEV_C_BSTR;
    if (edhoc_lone_kid(rfc->id_cred, rfc->id_cred_len, &kid, &kid_len)) {
        m |= EDHOC_DEV_ID_CRED_COMPACT;
        if (kid_len == 1 && edhoc_is_one_byte_int(kid[0]))
            m |= EDHOC_DEV_KID_INT;
    }
    if (rfc->ead_len)
        m |= EDHOC_DEV_EAD_OMITTED;
    return m;
}

/* out = rfc with the deviations of mask applied. mask must be within
 * deviations_applicable(rfc), without both kid-int and id-cred-compact. */
static void context_deviate(const struct context_in *rfc, unsigned mask, struct context_in *out)
{
    *out = *rfc;
    out->c_r_bstr = (mask & EDHOC_DEV_C_BSTR) != 0;
    const uint8_t *kid;
    size_t kid_len;
    if ((mask & (EDHOC_DEV_KID_INT | EDHOC_DEV_ID_CRED_COMPACT)) &&
        edhoc_lone_kid(rfc->id_cred, rfc->id_cred_len, &kid, &kid_len)) {
        struct edhoc_cbor_writer w;
        edhoc_cbor_writer_init(&w, out->id_buf, sizeof out->id_buf);
        if (mask & EDHOC_DEV_KID_INT) {
            /* {4: int}: the one-byte kid is its own int encoding */
            edhoc_cbor_put_map(&w, 1);
            edhoc_cbor_put_uint(&w, 4);
            edhoc_cbor_put_raw(&w, kid, 1);
        } else {
            edhoc_put_bstr_id(&w, kid, kid_len);
        }
        long n = edhoc_cbor_writer_finish(&w);
        if (n > 0) {
            out->id_cred = out->id_buf;
            out->id_cred_len = (size_t)n;
        }
    }
    if (mask & EDHOC_DEV_CRED_WRAP) {
        const uint8_t *inner;
        size_t inner_len;
        if (cred_is_bstr(rfc->cred, rfc->cred_len, &inner, &inner_len)) {
            out->cred = inner;
            out->cred_len = inner_len;
        } else {
            out->cred_wrapped = true;
        }
    }
    if (mask & EDHOC_DEV_EAD_OMITTED)
        out->ead_len = 0;
}

/* context_x into buf. *aad_off: where << TH_x, CRED_x, ? EAD_x >>, the
 * external_aad of the signature, begins. */
static int build_context(const struct edhoc_session *s, const struct auth_msg *m,
                         const struct context_in *in, uint8_t *buf, size_t cap, size_t *len,
                         size_t *aad_off)
{
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, buf, cap);
    if (in->c_r && in->c_r_bstr)
        edhoc_cbor_put_bstr(&w, in->c_r, in->c_r_len);
    else if (in->c_r)
        edhoc_put_bstr_id(&w, in->c_r, in->c_r_len);
    edhoc_cbor_put_raw(&w, in->id_cred, in->id_cred_len);
    long aad_start = edhoc_cbor_writer_finish(&w);
    edhoc_cbor_put_bstr(&w, s->th, s->th_len);
    if (in->cred_wrapped)
        edhoc_cbor_put_bstr(&w, in->cred, in->cred_len);
    else
        edhoc_cbor_put_raw(&w, in->cred, in->cred_len);
    edhoc_cbor_put_raw(&w, in->ead, in->ead_len);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_ERR_TOO_LARGE;
    *len = (size_t)n;
    *aad_off = (size_t)aad_start;
    trace(s, m->context, buf, *len);
    return 0;
}

/* MAC_x = EDHOC_KDF(PRK, mac_label, context_x, mac_length_x): the suite's
 * MAC length when MAC_x is itself Signature_or_MAC_x (static DH sender),
 * hash_length when it is signed. */
static int compute_mac(struct edhoc_session *s, const struct auth_msg *m, bool static_dh,
                       const uint8_t *prk, const uint8_t *context, size_t context_len,
                       uint8_t *mac, size_t *mac_len)
{
    const struct edhoc_suite *su = suite_of(s);
    *mac_len = static_dh ? (size_t)su->mac_len : hash_len_of(su);
    int rc = kdf(s, prk, m->mac_label, context, context_len, mac, *mac_len);
    if (rc)
        return rc;
    trace(s, m->mac, mac, *mac_len);
    return 0;
}

/* COSE Sig_structure ["Signature1", << ID_CRED >>, << TH, CRED, ? EAD >>,
 * MAC]: external_aad is context_x from aad_off on. */
static int build_to_be_signed(struct edhoc_session *s, const struct auth_msg *m,
                              const uint8_t *id_cred, size_t id_cred_len, const uint8_t *context,
                              size_t context_len, size_t aad_off, const uint8_t *mac,
                              size_t mac_len, uint8_t *buf, size_t cap, size_t *len)
{
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, buf, cap);
    edhoc_cbor_put_array(&w, 4);
    edhoc_cbor_put_tstr(&w, "Signature1", 10);
    edhoc_cbor_put_bstr(&w, id_cred, id_cred_len);
    edhoc_cbor_put_bstr(&w, context + aad_off, context_len - aad_off);
    edhoc_cbor_put_bstr(&w, mac, mac_len);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_ERR_TOO_LARGE;
    *len = (size_t)n;
    trace(s, m->to_be_signed, buf, *len);
    return 0;
}

/* Our Signature_or_MAC_x: MAC_x, signed unless we are a static DH sender. */
static int make_sig_or_mac(struct edhoc_session *s, const struct auth_msg *m, bool static_dh,
                           const uint8_t *prk, const uint8_t *context, size_t context_len,
                           size_t aad_off, const uint8_t *id_cred, size_t id_cred_len,
                           uint8_t *sig, size_t *sig_len)
{
    const struct edhoc_suite *su = suite_of(s);
    uint8_t mac[EDHOC_CRYPTO_MAX_HASH];
    size_t mac_len = 0;
    uint8_t tbs[EDHOC_MAX_TRANSCRIPT + 64];
    size_t tbs_len = 0;
    int rc = compute_mac(s, m, static_dh, prk, context, context_len, mac, &mac_len);
    if (rc)
        goto out;
    if (static_dh) {
        memcpy(sig, mac, mac_len);
        *sig_len = mac_len;
    } else {
        rc = build_to_be_signed(s, m, id_cred, id_cred_len, context, context_len, aad_off, mac,
                                mac_len, tbs, sizeof tbs, &tbs_len);
        if (rc)
            goto out;
        if (s->cfg->ops->sign(su->sig_curve, s->cfg->key->priv, tbs, tbs_len, sig)) {
            rc = EDHOC_ERR_CRYPTO;
            goto out;
        }
        *sig_len = edhoc_crypto_sig_len(su->sig_curve);
    }
    trace(s, m->sig_or_mac, sig, *sig_len);
out:
    edhoc_wipe(mac, sizeof mac);
    edhoc_wipe(tbs, tbs_len); /* holds MAC_x */
    return rc;
}

/* The peer's Signature_or_MAC_x, received in rx, against its credential. */
static int check_sig_or_mac(struct edhoc_session *s, const struct auth_msg *m, bool static_dh,
                            const uint8_t *prk, const uint8_t *context, size_t context_len,
                            size_t aad_off, const uint8_t *id_cred, size_t id_cred_len,
                            const struct edhoc_received *rx, const struct edhoc_cred *cred)
{
    const struct edhoc_suite *su = suite_of(s);
    uint8_t mac[EDHOC_CRYPTO_MAX_HASH];
    size_t mac_len = 0;
    int rc = compute_mac(s, m, static_dh, prk, context, context_len, mac, &mac_len);
    if (rc)
        return rc;
    const uint8_t *sig = rx->plaintext + rx->sig_off;
    trace(s, m->sig_or_mac, sig, rx->sig_len);
    if (static_dh) {
        bool ok = rx->sig_len == mac_len && edhoc_ct_equal(sig, mac, mac_len);
        edhoc_wipe(mac, sizeof mac);
        return ok ? 0 : EDHOC_ERR_MAC;
    }
    if (cred->curve != su->sig_curve) {
        edhoc_wipe(mac, sizeof mac);
        return EDHOC_ERR_CREDENTIAL;
    }
    uint8_t tbs[EDHOC_MAX_TRANSCRIPT + 64];
    size_t tbs_len = 0;
    rc = build_to_be_signed(s, m, id_cred, id_cred_len, context, context_len, aad_off, mac,
                            mac_len, tbs, sizeof tbs, &tbs_len);
    edhoc_wipe(mac, sizeof mac);
    if (rc)
        return rc;
    rc = s->cfg->ops->verify(su->sig_curve, cred->pub, cred->pub_len, tbs, tbs_len, sig,
                             rx->sig_len);
    edhoc_wipe(tbs, tbs_len); /* holds MAC_x */
    if (rc == EDHOC_CRYPTO_ERR_AUTH)
        return EDHOC_ERR_SIGNATURE;
    if (rc == EDHOC_CRYPTO_ERR_INVALID)
        return EDHOC_ERR_CREDENTIAL;
    return crypto_err(rc);
}

/* PRK_out = EDHOC_KDF(PRK_4e3m, 7, TH_4, hash_length) */
static int derive_prk_out(struct edhoc_session *s)
{
    size_t hl = hash_len_of(suite_of(s));
    int rc = kdf(s, s->prk, 7, s->th, s->th_len, s->prk_out, hl);
    if (rc)
        return rc;
    trace(s, "PRK_out", s->prk_out, hl);
    trace_prk_exporter(s, "PRK_exporter");
    return 0;
}

/* Once PLAINTEXT_x is sent or verified, the key schedule moves on:
 * TH_{x+1} = H(TH_x, PLAINTEXT_x, CRED_x), and prk_next (PRK_3e2m /
 * PRK_4e3m) replaces the current PRK. After message_3 this ends in PRK_out,
 * and the ephemeral keys have no further use. */
static int advance_key_schedule(struct edhoc_session *s, const struct auth_msg *m,
                                const uint8_t *pt, size_t pt_len, const struct edhoc_cred *cred,
                                const uint8_t *prk_next)
{
    uint8_t in[EDHOC_MAX_TRANSCRIPT];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, in, sizeof in);
    edhoc_cbor_put_bstr(&w, s->th, s->th_len);
    edhoc_cbor_put_raw(&w, pt, pt_len);
    edhoc_cbor_put_raw(&w, cred->cred, cred->cred_len);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_ERR_TOO_LARGE;
    trace(s, m->input_th, in, (size_t)n);
    int rc = hash(s, in, (size_t)n, s->th);
    if (rc)
        return rc;
    trace(s, m->th, s->th, s->th_len);
    memcpy(s->prk, prk_next, hash_len_of(suite_of(s)));
    if (m->msg_no == 3) {
        rc = derive_prk_out(s);
        if (rc)
            return rc;
        edhoc_wipe(s->eph_priv, sizeof s->eph_priv);
        edhoc_wipe(s->peer_eph, sizeof s->peer_eph);
        s->eph_priv_len = s->peer_eph_len = 0;
    }
    return 0;
}

/* Our message_2 / message_3 up to encryption: PRK_3e2m / PRK_4e3m into
 * prk_next and PLAINTEXT_x = ( ? C_R, ID_CRED_x, Signature_or_MAC_x,
 * ? EAD_x ) into pt. The caller wipes prk_next and pt on every path. */
static int build_own_plaintext(struct edhoc_session *s, const struct auth_msg *m,
                               uint8_t *prk_next, uint8_t *pt, size_t cap, size_t *pt_len)
{
    const struct edhoc_config *c = s->cfg;
    bool sdh = edhoc_static_dh_sender(s->method, m->msg_no);
    bool with_c_r = m->msg_no == 2;
    int rc = check_own_key(s, sdh);
    if (!rc)
        rc = derive_auth_prk(s, m, sdh, c->key->priv, s->peer_eph, s->peer_eph_len, prk_next);
    if (rc)
        return rc;

    uint8_t id_buf[4 + EDHOC_CRED_MAX_KID];
    const uint8_t *id_cred;
    size_t id_cred_len;
    uint8_t ead[EDHOC_MAX_EAD_SIZE];
    size_t ead_len = 0;
    uint8_t context[EDHOC_MAX_TRANSCRIPT];
    size_t context_len = 0, aad_off = 0;
    uint8_t sig[EDHOC_CRYPTO_MAX_SIG];
    size_t sig_len = 0;
    rc = own_id_cred(c, id_buf, sizeof id_buf, &id_cred, &id_cred_len);
    if (!rc)
        rc = own_ead(c, m->msg_no, ead, sizeof ead, &ead_len);
    if (rc)
        goto out;
    /* context_x as RFC 9528 says, or as the deployed device builds it when
     * this side emulates one (a test aid, edhoc_config.emulate). What is
     * sent below stays as the RFC says either way. A message_3 after a
     * message_2 accepted by tolerating deviations is built as the peer
     * built context_2 (dev_found): such a device verifies MAC_3 over its
     * own context_3, and tolerating it on receive alone left the
     * handshake to fail on its side. */
    struct context_in rfc = {
        .c_r = with_c_r ? s->own_cid : NULL,
        .c_r_len = s->own_cid_len,
        .id_cred = id_cred,
        .id_cred_len = id_cred_len,
        .cred = c->cred->cred,
        .cred_len = c->cred->cred_len,
        .ead = ead,
        .ead_len = ead_len,
    };
    unsigned deviate = c->emulate;
    if (m->msg_no == 3 && s->dev_tolerated)
        deviate = s->dev_found;
    deviate &= deviations_applicable(&rfc);
    if (m->msg_no == 3 && s->dev_tolerated)
        s->dev_followed = (uint8_t)deviate;
    struct context_in used;
    context_deviate(&rfc, deviate, &used);
    rc = build_context(s, m, &used, context, sizeof context, &context_len, &aad_off);
    if (!rc)
        rc = make_sig_or_mac(s, m, sdh, prk_next, context, context_len, aad_off, used.id_cred,
                             used.id_cred_len, sig, &sig_len);
    if (rc)
        goto out;

    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, pt, cap);
    if (with_c_r)
        edhoc_put_bstr_id(&w, s->own_cid, s->own_cid_len);
    edhoc_put_id_cred_compact(&w, id_cred, id_cred_len);
    edhoc_cbor_put_bstr(&w, sig, sig_len);
    edhoc_cbor_put_raw(&w, ead, ead_len);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0) {
        rc = EDHOC_ERR_TOO_LARGE;
        goto out;
    }
    *pt_len = (size_t)n;
    trace(s, m->plaintext, pt, *pt_len);
out:
    /* For a static DH sender sig is MAC_x; the EAD goes out encrypted. */
    edhoc_wipe(sig, sizeof sig);
    edhoc_wipe(ead, ead_len);
    return rc;
}

/* rx is caller memory between process and verify: its offsets must still
 * describe its own plaintext before anything is read through them. */
static bool received_consistent(const struct edhoc_received *rx)
{
    size_t n = rx->plaintext_len;
    return n <= sizeof rx->plaintext && rx->sig_off <= n && rx->sig_len <= n - rx->sig_off &&
           rx->ead_off <= n && rx->ead_len <= n - rx->ead_off && rx->id_cred != NULL &&
           rx->id_cred_len > 0;
}

/* context_x under in, then the peer's Signature_or_MAC_x against it. */
static int check_context(struct edhoc_session *s, const struct auth_msg *m, bool static_dh,
                         const uint8_t *prk, const struct context_in *in,
                         const struct edhoc_received *rx, const struct edhoc_cred *cred,
                         uint8_t *context, size_t cap)
{
    size_t context_len = 0, aad_off = 0;
    int rc = build_context(s, m, in, context, cap, &context_len, &aad_off);
    if (!rc)
        rc = check_sig_or_mac(s, m, static_dh, prk, context, context_len, aad_off, in->id_cred,
                              in->id_cred_len, rx, cred);
    return rc;
}

/* The deviations the diagnosis tries, in this order: each alone, then the
 * pair seen together on deployed devices, and last RFC 9528 as written
 * (which is a candidate only when this side emulates a deviation).
 * kid-int with id-cred-compact is no candidate: they are two readings of
 * the same ID_CRED_x. */
static const unsigned diagnosis_candidates[] = {
    EDHOC_DEV_C_BSTR,
    EDHOC_DEV_KID_INT,
    EDHOC_DEV_ID_CRED_COMPACT,
    EDHOC_DEV_CRED_WRAP,
    EDHOC_DEV_EAD_OMITTED,
    EDHOC_DEV_C_BSTR | EDHOC_DEV_KID_INT,
    0,
};

/* The peer's Signature_or_MAC_x did not verify under context_x as `own`
 * builds it (RFC 9528, or what this side emulates): recompute it under
 * each candidate deviation and record the one that makes it verify. The
 * secrets it needs (PRK, TH_x) are still there: the caller fails the
 * session only afterwards. Returns the candidate's mask, or -1 when none
 * verifies. */
static long diagnose(struct edhoc_session *s, const struct auth_msg *m, bool static_dh,
                     const uint8_t *prk, const struct context_in *rfc, unsigned own,
                     const struct edhoc_received *rx, const struct edhoc_cred *cred,
                     uint8_t *context, size_t cap)
{
    unsigned applicable = deviations_applicable(rfc);
    long found = -1;
    s->flags |= EDHOC_SF_QUIET;
    for (size_t i = 0; i < sizeof diagnosis_candidates / sizeof diagnosis_candidates[0]; i++) {
        unsigned c = diagnosis_candidates[i];
        if ((c & ~applicable) || c == own)
            continue;
        struct context_in alt;
        context_deviate(rfc, c, &alt);
        /* Any other failure (a context too large once wrapped, the
         * backend) just means this candidate explains nothing. */
        if (check_context(s, m, static_dh, prk, &alt, rx, cred, context, cap) == 0) {
            found = (long)c;
            break;
        }
    }
    s->flags &= (uint8_t)~EDHOC_SF_QUIET;

    uint8_t info = EDHOC_DI_DONE;
    if (m->msg_no == 3)
        info |= EDHOC_DI_M3;
    if (!static_dh)
        info |= EDHOC_DI_SIG;
    const uint8_t *kid, *inner;
    size_t kid_len, inner_len;
    if (edhoc_lone_kid(rfc->id_cred, rfc->id_cred_len, &kid, &kid_len) && kid_len == 1) {
        info |= EDHOC_DI_KID;
        s->dev_kid = kid[0];
    }
    if (cred_is_bstr(rfc->cred, rfc->cred_len, &inner, &inner_len))
        info |= EDHOC_DI_CRED_BSTR;
    if (found >= 0) {
        info |= EDHOC_DI_MATCH;
        s->dev_found = (uint8_t)found;
    }
    s->dev_own = (uint8_t)own;
    s->dev_info = info;
    return found;
}

/* The peer's message_2 / message_3, decrypted into rx, against its
 * credential; then the key schedule moves on as for our own message. A
 * Signature_or_MAC_x that does not verify is diagnosed, and accepted when
 * the deviations that explain it are all tolerated (edhoc_config.tolerate). */
static int verify_peer(struct edhoc_session *s, const struct auth_msg *m,
                       const struct edhoc_received *rx, const struct edhoc_cred *cred)
{
    if (!cred)
        return EDHOC_ERR_UNKNOWN_CREDENTIAL;
    if (!cred->cred || cred->cred_len == 0 || rx->plaintext_len > sizeof rx->plaintext)
        return EDHOC_ERR_CREDENTIAL;
    bool sdh = edhoc_static_dh_sender(s->method, m->msg_no);
    if (sdh && cred->curve != suite_of(s)->ecdh_curve)
        return EDHOC_ERR_CREDENTIAL;

    /* Only C_R is in a context: C_I is not in context_3 (Section 5.4.2),
     * and TH_2 = H(G_Y, H(message_1)) covers C_I in the bytes of message_1
     * as sent, so a peer's own encoding of C_I reaches no MAC. */
    struct context_in rfc = {
        .c_r = m->msg_no == 2 ? s->peer_cid : NULL,
        .c_r_len = s->peer_cid_len,
        .id_cred = rx->id_cred,
        .id_cred_len = rx->id_cred_len,
        .cred = cred->cred,
        .cred_len = cred->cred_len,
        .ead = rx->plaintext + rx->ead_off,
        .ead_len = rx->ead_len,
    };
    unsigned own = s->cfg->emulate & deviations_applicable(&rfc);
    struct context_in used;
    context_deviate(&rfc, own, &used);

    uint8_t prk_next[EDHOC_CRYPTO_MAX_HASH];
    uint8_t context[EDHOC_MAX_TRANSCRIPT];
    int rc = derive_auth_prk(s, m, sdh, s->eph_priv, cred->pub, cred->pub_len, prk_next);
    if (!rc)
        rc = check_context(s, m, sdh, prk_next, &used, rx, cred, context, sizeof context);
    if (rc == EDHOC_ERR_MAC || rc == EDHOC_ERR_SIGNATURE) {
        long found = diagnose(s, m, sdh, prk_next, &rfc, own, rx, cred, context, sizeof context);
        /* Accept only when the peer's context_x differs from ours in
         * nothing but what the application tolerates. Without emulation
         * that difference is exactly the peer's deviations. */
        unsigned differs = found >= 0 ? ((unsigned)found ^ own) : 0;
        if (differs && (differs & ~s->cfg->tolerate) == 0) {
            s->dev_tolerated = (uint8_t)differs;
            rc = 0;
        }
    }
    if (!rc)
        rc = advance_key_schedule(s, m, rx->plaintext, rx->plaintext_len, cred, prk_next);
    edhoc_wipe(prk_next, sizeof prk_next);
    return rc;
}

/* ---- message_2 ---- */

/* Whether len is beyond one HKDF-Expand output (255 hash lengths; SHAKE256
 * has no such bound). Appendix G, which would lift this for KEYSTREAM_2, is
 * not needed below EDHOC_MAX_PLAINTEXT with SHA-256 (8160 bytes). */
static bool beyond_one_expand(const struct edhoc_suite *su, size_t len)
{
    return su->hash != EDHOC_COSE_SHAKE256 && len > 255 * hash_len_of(su);
}

/* out = in XOR KEYSTREAM_2, KEYSTREAM_2 = EDHOC_KDF(PRK_2e, 0, TH_2, len):
 * CIPHERTEXT_2 from PLAINTEXT_2 and back. The keystream is expanded straight
 * into out. */
static int apply_keystream_2(struct edhoc_session *s, const uint8_t *in, uint8_t *out, size_t len)
{
    int rc = kdf(s, s->prk, 0, s->th, s->th_len, out, len);
    if (rc)
        return rc;
    trace(s, "KEYSTREAM_2", out, len);
    for (size_t i = 0; i < len; i++)
        out[i] ^= in[i];
    return 0;
}

/* message_2 = bstr(G_Y || CIPHERTEXT_2) into out. */
static int write_message_2(struct edhoc_session *s, const uint8_t *pt, size_t pt_len,
                           uint8_t *out, size_t cap, size_t *total)
{
    size_t body = s->own_eph_len + pt_len;
    size_t len = edhoc_cbor_head_len(body) + body;
    if (len > cap)
        return EDHOC_ERR_BUFFER;
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, out, cap);
    edhoc_cbor_put_bstr_head(&w, body);
    edhoc_cbor_put_raw(&w, s->own_eph, s->own_eph_len);
    size_t ct_off = (size_t)edhoc_cbor_writer_finish(&w);
    int rc = apply_keystream_2(s, pt, out + ct_off, pt_len);
    if (rc)
        return rc;
    trace(s, "CIPHERTEXT_2", out + ct_off, pt_len);
    trace(s, "message_2", out, len);
    *total = len;
    return 0;
}

int edhoc_responder_prepare_message_2(struct edhoc_session *s, uint8_t *out, size_t cap)
{
    if (!s || !s->cfg || !out)
        return EDHOC_ERR_ARG;
    if (s->role != EDHOC_RESPONDER || s->state != EDHOC_STATE_SEND_M2)
        return EDHOC_ERR_STATE;
    if ((s->flags & EDHOC_SF_OWN_CID_SET) && s->own_cid_len == s->peer_cid_len &&
        memcmp(s->own_cid, s->peer_cid, s->own_cid_len) == 0)
        return EDHOC_ERR_CONN_ID_CONFLICT;
    uint8_t prk_3e2m[EDHOC_CRYPTO_MAX_HASH];
    uint8_t pt[EDHOC_MAX_PLAINTEXT];
    size_t pt_len = 0, total = 0;
    int rc = ensure_own_cid(s);
    if (!rc)
        rc = build_own_plaintext(s, &auth_msg_2, prk_3e2m, pt, sizeof pt, &pt_len);
    if (!rc && beyond_one_expand(suite_of(s), pt_len))
        rc = EDHOC_ERR_UNSUPPORTED;
    if (!rc)
        rc = write_message_2(s, pt, pt_len, out, cap, &total);
    if (!rc)
        rc = advance_key_schedule(s, &auth_msg_2, pt, pt_len, s->cfg->cred, prk_3e2m);
    edhoc_wipe(pt, sizeof pt);
    edhoc_wipe(prk_3e2m, sizeof prk_3e2m);
    if (rc)
        return fail(s, rc, EDHOC_STEP_PREPARE_M2);
    edhoc_wipe(s->own_eph, sizeof s->own_eph);
    s->own_eph_len = 0;
    s->flags |= EDHOC_SF_CID_SENT;
    s->state = EDHOC_STATE_WAIT_M3;
    return (int)total;
}

long edhoc_responder_message_2_len(const struct edhoc_config *cfg, int method, int suite,
                                   const uint8_t *c_r, size_t c_r_len)
{
    const struct edhoc_suite *su = edhoc_suite_find(suite);
    if (!cfg || !cfg->cred || !su || method < 0 || method > 3 || c_r_len > EDHOC_MAX_CONN_ID ||
        (c_r_len && !c_r))
        return EDHOC_ERR_ARG;
    /* As build_own_plaintext and write_message_2 lay them out. */
    uint8_t id_buf[4 + EDHOC_CRED_MAX_KID];
    const uint8_t *id_cred;
    size_t id_cred_len, ead_len;
    uint8_t ead[EDHOC_MAX_EAD_SIZE];
    int rc = own_id_cred(cfg, id_buf, sizeof id_buf, &id_cred, &id_cred_len);
    if (!rc)
        rc = own_ead(cfg, 2, ead, sizeof ead, &ead_len);
    if (rc)
        return rc;
    size_t sig_len = edhoc_static_dh_sender(method, 2) ? (size_t)su->mac_len
                                                       : edhoc_crypto_sig_len(su->sig_curve);
    uint8_t head[EDHOC_MAX_CONN_ID + EDHOC_MAX_ID_CRED + 16];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, head, sizeof head);
    edhoc_put_bstr_id(&w, c_r, c_r_len);
    edhoc_put_id_cred_compact(&w, id_cred, id_cred_len);
    long fixed = edhoc_cbor_writer_finish(&w);
    if (fixed < 0)
        return EDHOC_ERR_TOO_LARGE;
    size_t pt_len = (size_t)fixed + edhoc_cbor_head_len(sig_len) + sig_len + ead_len;
    if (pt_len > EDHOC_MAX_PLAINTEXT)
        return EDHOC_ERR_TOO_LARGE;
    size_t body = edhoc_crypto_ecdh_pub_len(su->ecdh_curve) + pt_len;
    return (long)(edhoc_cbor_head_len(body) + body);
}

int edhoc_initiator_process_message_2(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                      struct edhoc_received *rx)
{
    if (!s || !s->cfg || !msg || !rx)
        return EDHOC_ERR_ARG;
    if (s->role != EDHOC_INITIATOR || s->state != EDHOC_STATE_WAIT_M2)
        return EDHOC_ERR_STATE;
    const enum edhoc_step step = EDHOC_STEP_PROCESS_M2;
    const struct edhoc_suite *su = suite_of(s);
    size_t g_y_len = edhoc_crypto_ecdh_pub_len(su->ecdh_curve);
    const uint8_t *g_y, *ct;
    size_t ct_len;
    int rc = edhoc_message_2_parse(msg, len, g_y_len, &g_y, &ct, &ct_len);
    if (rc)
        return fail(s, rc, step);
    if (ct_len > EDHOC_MAX_PLAINTEXT)
        return fail(s, EDHOC_ERR_TOO_LARGE, step);
    if (beyond_one_expand(su, ct_len))
        return fail(s, EDHOC_ERR_UNSUPPORTED, step);

    rc = compute_th_2(s, g_y, g_y_len);
    if (!rc)
        rc = compute_prk_2e(s, g_y, g_y_len);
    if (rc)
        return fail(s, rc, step);
    memcpy(s->peer_eph, g_y, g_y_len);
    s->peer_eph_len = (uint8_t)g_y_len;

    rc = apply_keystream_2(s, ct, rx->plaintext, ct_len);
    if (rc) {
        received_wipe(rx);
        return fail(s, rc, step);
    }
    trace(s, "PLAINTEXT_2", rx->plaintext, ct_len);

    uint8_t c_r[EDHOC_MAX_CONN_ID];
    size_t c_r_len = 0;
    rc = edhoc_plaintext_2_parse(rx->plaintext, ct_len, s->method, s->suite, rx, c_r, &c_r_len);
    if (!rc && c_r_len == s->own_cid_len && memcmp(c_r, s->own_cid, c_r_len) == 0)
        rc = EDHOC_ERR_CONN_ID_EQUAL;
    if (!rc) {
        memcpy(s->peer_cid, c_r, c_r_len);
        s->peer_cid_len = (uint8_t)c_r_len;
        s->flags |= EDHOC_SF_PEER_CID;
        rc = deliver_ead(s, 2, rx->plaintext + rx->ead_off, rx->ead_len);
    }
    if (rc) {
        received_wipe(rx);
        return fail(s, rc, step);
    }
    s->state = EDHOC_STATE_VERIFY_M2;
    return 0;
}

/* The public verify step of either role: the state check, verify_peer,
 * then the next state. */
static int verify_step(struct edhoc_session *s, const struct edhoc_received *rx,
                       const struct edhoc_cred *cred, enum edhoc_role role,
                       enum edhoc_state expected, const struct auth_msg *m,
                       enum edhoc_step step,
                       enum edhoc_state next)
{
    if (!s || !s->cfg || !rx)
        return EDHOC_ERR_ARG;
    if (s->role != role || s->state != expected)
        return EDHOC_ERR_STATE;
    if (!received_consistent(rx))
        return EDHOC_ERR_ARG;
    int rc = verify_peer(s, m, rx, cred);
    if (rc)
        return fail(s, rc, step);
    s->state = (uint8_t)next;
    return 0;
}

int edhoc_initiator_verify_message_2(struct edhoc_session *s, const struct edhoc_received *rx,
                                     const struct edhoc_cred *cred_r)
{
    return verify_step(s, rx, cred_r, EDHOC_INITIATOR, EDHOC_STATE_VERIFY_M2, &auth_msg_2,
                       EDHOC_STEP_VERIFY_M2, EDHOC_STATE_SEND_M3);
}

/* ---- message_3 / message_4 AEAD ---- */

/* K_x, IV_x and A_x = ["Encrypt0", h'', TH_x] for message 3 or 4. */
static int aead_params(struct edhoc_session *s, int msg_no, const uint8_t *prk, uint8_t *key,
                       uint8_t *iv, uint8_t *aad, size_t *aad_len)
{
    const struct edhoc_suite *su = suite_of(s);
    size_t kl = edhoc_crypto_aead_key_len(su->aead);
    size_t nl = edhoc_crypto_aead_nonce_len(su->aead);
    int rc = kdf(s, prk, msg_no == 3 ? 3 : 8, s->th, s->th_len, key, kl);
    if (!rc)
        rc = kdf(s, prk, msg_no == 3 ? 4 : 9, s->th, s->th_len, iv, nl);
    if (rc)
        return rc;
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, aad, EDHOC_CRYPTO_MAX_HASH + 16);
    edhoc_cbor_put_array(&w, 3);
    edhoc_cbor_put_tstr(&w, "Encrypt0", 8);
    edhoc_cbor_put_bstr(&w, NULL, 0);
    edhoc_cbor_put_bstr(&w, s->th, s->th_len);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_ERR_TOO_LARGE;
    *aad_len = (size_t)n;
    trace(s, msg_no == 3 ? "A_3" : "A_4", aad, *aad_len);
    trace(s, msg_no == 3 ? "K_3" : "K_4", key, kl);
    trace(s, msg_no == 3 ? "IV_3" : "IV_4", iv, nl);
    return 0;
}

/* message_3 / message_4 = bstr(CIPHERTEXT_x) into out, from PLAINTEXT_x
 * under the current PRK. */
static int seal(struct edhoc_session *s, int msg_no, const uint8_t *pt, size_t pt_len,
                uint8_t *out, size_t cap, size_t *out_len)
{
    const struct edhoc_suite *su = suite_of(s);
    uint8_t key[EDHOC_CRYPTO_MAX_KEY] = {0}, iv[EDHOC_CRYPTO_MAX_NONCE];
    uint8_t aad[EDHOC_CRYPTO_MAX_HASH + 16];
    size_t aad_len = 0;
    int rc = aead_params(s, msg_no, s->prk, key, iv, aad, &aad_len);
    if (rc)
        goto out;
    size_t ct_len = pt_len + edhoc_crypto_aead_tag_len(su->aead);
    size_t head = edhoc_cbor_head_len(ct_len);
    if (head + ct_len > cap) {
        rc = EDHOC_ERR_BUFFER;
        goto out;
    }
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, out, cap);
    edhoc_cbor_put_bstr_head(&w, ct_len);
    rc = crypto_err(s->cfg->ops->aead_encrypt(su->aead, key, iv, aad, aad_len, pt, pt_len,
                                              out + head));
    if (rc)
        goto out;
    trace(s, msg_no == 3 ? "CIPHERTEXT_3" : "CIPHERTEXT_4", out + head, ct_len);
    trace(s, msg_no == 3 ? "message_3" : "message_4", out, head + ct_len);
    *out_len = head + ct_len;
out:
    /* K_3 / K_4 seal one message: nothing for the backend to keep. */
    if (s->cfg->ops->aead_forget)
        s->cfg->ops->aead_forget(key, edhoc_crypto_aead_key_len(su->aead));
    edhoc_wipe(key, sizeof key);
    edhoc_wipe(iv, sizeof iv);
    return rc;
}

/* The other way: PLAINTEXT_x of message_3 / message_4 into rx->plaintext. */
static int open_message(struct edhoc_session *s, int msg_no, const uint8_t *msg, size_t len,
                        struct edhoc_received *rx, size_t *pt_len)
{
    const uint8_t *ct;
    size_t ct_len;
    int rc = msg_no == 3 ? edhoc_message_3_parse(msg, len, &ct, &ct_len)
                         : edhoc_message_4_parse(msg, len, &ct, &ct_len);
    if (rc)
        return rc;
    const struct edhoc_suite *su = suite_of(s);
    size_t tag = edhoc_crypto_aead_tag_len(su->aead);
    if (ct_len < tag)
        return EDHOC_ERR_DECRYPT;
    if (ct_len - tag > EDHOC_MAX_PLAINTEXT)
        return EDHOC_ERR_TOO_LARGE;
    uint8_t key[EDHOC_CRYPTO_MAX_KEY], iv[EDHOC_CRYPTO_MAX_NONCE];
    uint8_t aad[EDHOC_CRYPTO_MAX_HASH + 16];
    size_t aad_len = 0;
    rc = aead_params(s, msg_no, s->prk, key, iv, aad, &aad_len);
    if (!rc) {
        rc = s->cfg->ops->aead_decrypt(su->aead, key, iv, aad, aad_len, ct, ct_len,
                                       rx->plaintext);
        if (rc == EDHOC_CRYPTO_ERR_AUTH)
            rc = EDHOC_ERR_DECRYPT;
        else
            rc = crypto_err(rc);
        if (s->cfg->ops->aead_forget)
            s->cfg->ops->aead_forget(key, edhoc_crypto_aead_key_len(su->aead));
    }
    edhoc_wipe(key, sizeof key);
    edhoc_wipe(iv, sizeof iv);
    if (rc)
        return rc;
    *pt_len = ct_len - tag;
    trace(s, msg_no == 3 ? "PLAINTEXT_3" : "PLAINTEXT_4", rx->plaintext, *pt_len);
    return 0;
}

/* ---- message_3 ---- */

int edhoc_initiator_prepare_message_3(struct edhoc_session *s, uint8_t *out, size_t cap)
{
    if (!s || !s->cfg || !out)
        return EDHOC_ERR_ARG;
    if (s->role != EDHOC_INITIATOR || s->state != EDHOC_STATE_SEND_M3)
        return EDHOC_ERR_STATE;
    /* s->prk keeps PRK_3e2m (for K_3 / IV_3) until message_3 is sealed. */
    uint8_t prk_4e3m[EDHOC_CRYPTO_MAX_HASH];
    uint8_t pt[EDHOC_MAX_PLAINTEXT];
    size_t pt_len = 0, total = 0;
    int rc = build_own_plaintext(s, &auth_msg_3, prk_4e3m, pt, sizeof pt, &pt_len);
    if (!rc)
        rc = seal(s, 3, pt, pt_len, out, cap, &total);
    if (!rc)
        rc = advance_key_schedule(s, &auth_msg_3, pt, pt_len, s->cfg->cred, prk_4e3m);
    edhoc_wipe(pt, sizeof pt);
    edhoc_wipe(prk_4e3m, sizeof prk_4e3m);
    if (rc)
        return fail(s, rc, EDHOC_STEP_PREPARE_M3);
    s->state = EDHOC_STATE_COMPLETED;
    return (int)total;
}

int edhoc_responder_process_message_3(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                      struct edhoc_received *rx)
{
    if (!s || !s->cfg || !msg || !rx)
        return EDHOC_ERR_ARG;
    if (s->role != EDHOC_RESPONDER || s->state != EDHOC_STATE_WAIT_M3)
        return EDHOC_ERR_STATE;
    size_t pt_len = 0;
    int rc = open_message(s, 3, msg, len, rx, &pt_len);
    if (!rc)
        rc = edhoc_plaintext_3_parse(rx->plaintext, pt_len, s->method, s->suite, rx);
    if (!rc)
        rc = deliver_ead(s, 3, rx->plaintext + rx->ead_off, rx->ead_len);
    if (rc) {
        received_wipe(rx);
        return fail(s, rc, EDHOC_STEP_PROCESS_M3);
    }
    s->state = EDHOC_STATE_VERIFY_M3;
    return 0;
}

int edhoc_responder_verify_message_3(struct edhoc_session *s, const struct edhoc_received *rx,
                                     const struct edhoc_cred *cred_i)
{
    return verify_step(s, rx, cred_i, EDHOC_RESPONDER, EDHOC_STATE_VERIFY_M3, &auth_msg_3,
                       EDHOC_STEP_VERIFY_M3, EDHOC_STATE_COMPLETED);
}

/* ---- message_4 ---- */

int edhoc_responder_prepare_message_4(struct edhoc_session *s, uint8_t *out, size_t cap)
{
    if (!s || !s->cfg || !out)
        return EDHOC_ERR_ARG;
    if (s->role != EDHOC_RESPONDER || s->state != EDHOC_STATE_COMPLETED ||
        (s->flags & EDHOC_SF_M4_DONE))
        return EDHOC_ERR_STATE;
    uint8_t pt[EDHOC_MAX_EAD_SIZE];
    size_t pt_len = 0, total = 0;
    int rc = own_ead(s->cfg, 4, pt, sizeof pt, &pt_len);
    if (!rc) {
        trace(s, "PLAINTEXT_4", pt, pt_len);
        rc = seal(s, 4, pt, pt_len, out, cap, &total);
    }
    edhoc_wipe(pt, sizeof pt);
    if (rc)
        return fail(s, rc, EDHOC_STEP_PREPARE_M4);
    s->flags |= EDHOC_SF_M4_DONE;
    edhoc_wipe(s->prk, sizeof s->prk); /* PRK_4e3m has no further use */
    return (int)total;
}

int edhoc_initiator_process_message_4(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                      struct edhoc_received *rx)
{
    if (!s || !s->cfg || !msg || !rx)
        return EDHOC_ERR_ARG;
    if (s->role != EDHOC_INITIATOR || s->state != EDHOC_STATE_COMPLETED ||
        (s->flags & EDHOC_SF_M4_DONE))
        return EDHOC_ERR_STATE;
    const enum edhoc_step step = EDHOC_STEP_PROCESS_M4;
    size_t pt_len = 0;
    int rc = open_message(s, 4, msg, len, rx, &pt_len);
    if (rc) {
        received_wipe(rx);
        return fail(s, rc, step);
    }
    rx->plaintext_len = pt_len;
    rx->id_cred = NULL;
    rx->id_cred_len = 0;
    rx->sig_off = rx->sig_len = 0;
    rx->ead_off = 0;
    rx->ead_len = pt_len;
    rc = edhoc_ead_parse(rx->plaintext, pt_len, rx);
    if (rc == EDHOC_ERR_MALFORMED)
        rc = EDHOC_ERR_TRAILING;
    if (!rc)
        rc = deliver_ead(s, 4, rx->plaintext, pt_len);
    if (rc) {
        received_wipe(rx);
        return fail(s, rc, step);
    }
    s->flags |= EDHOC_SF_M4_DONE;
    edhoc_wipe(s->prk, sizeof s->prk);
    return 0;
}

/* ---- convenience wrappers ---- */

static int resolve_cred(edhoc_cred_resolver resolve, void *ctx, const struct edhoc_received *rx,
                        const struct edhoc_cred **cred)
{
    *cred = NULL;
    int rc = resolve(ctx, rx->id_cred, rx->id_cred_len, cred);
    if (rc == 0 && *cred)
        return 0;
    if (rc == 0 || rc == EDHOC_CRED_ERR_UNKNOWN || rc == EDHOC_ERR_UNKNOWN_CREDENTIAL)
        return EDHOC_ERR_UNKNOWN_CREDENTIAL;
    return EDHOC_ERR_CREDENTIAL;
}

typedef int (*process_fn)(struct edhoc_session *s, const uint8_t *msg, size_t len,
                          struct edhoc_received *rx);
typedef int (*verify_fn)(struct edhoc_session *s, const struct edhoc_received *rx,
                         const struct edhoc_cred *cred);

/* process, resolve the received ID_CRED to a credential, verify (which
 * reports an unknown credential itself). */
static int handle_message(struct edhoc_session *s, const uint8_t *msg, size_t len,
                          struct edhoc_received *rx, edhoc_cred_resolver resolve,
                          void *resolve_ctx, process_fn process, verify_fn verify,
                          enum edhoc_step verify_step)
{
    if (!resolve)
        return EDHOC_ERR_ARG;
    int rc = process(s, msg, len, rx);
    if (rc)
        return rc;
    const struct edhoc_cred *cred;
    rc = resolve_cred(resolve, resolve_ctx, rx, &cred);
    if (rc == EDHOC_ERR_CREDENTIAL) {
        received_wipe(rx);
        return fail(s, rc, verify_step);
    }
    rc = verify(s, rx, cred);
    if (rc)
        received_wipe(rx);
    return rc;
}

int edhoc_initiator_handle_message_2(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                     struct edhoc_received *rx, edhoc_cred_resolver resolve,
                                     void *resolve_ctx)
{
    return handle_message(s, msg, len, rx, resolve, resolve_ctx,
                          edhoc_initiator_process_message_2, edhoc_initiator_verify_message_2,
                          EDHOC_STEP_VERIFY_M2);
}

int edhoc_responder_handle_message_3(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                     struct edhoc_received *rx, edhoc_cred_resolver resolve,
                                     void *resolve_ctx)
{
    return handle_message(s, msg, len, rx, resolve, resolve_ctx,
                          edhoc_responder_process_message_3, edhoc_responder_verify_message_3,
                          EDHOC_STEP_VERIFY_M3);
}

/* ---- results ---- */

int edhoc_session_export(const struct edhoc_session *s, uint64_t label, const uint8_t *context,
                         size_t context_len, uint8_t *out, size_t len)
{
    if (!s || !s->cfg || !out || len == 0 || (!context && context_len) || label > INT64_MAX)
        return EDHOC_ERR_ARG;
    if (s->state != EDHOC_STATE_COMPLETED)
        return EDHOC_ERR_STATE;
    if (beyond_one_expand(suite_of(s), len))
        return EDHOC_ERR_ARG;
    uint8_t exp[EDHOC_CRYPTO_MAX_HASH];
    int rc = prk_exporter(s, exp);
    if (!rc)
        rc = kdf(s, exp, (int64_t)label, context, context_len, out, len);
    edhoc_wipe(exp, sizeof exp);
    return rc;
}

int edhoc_session_key_update(struct edhoc_session *s, const uint8_t *context, size_t context_len)
{
    if (!s || !s->cfg || (!context && context_len))
        return EDHOC_ERR_ARG;
    if (s->state != EDHOC_STATE_COMPLETED)
        return EDHOC_ERR_STATE;
    size_t hl = hash_len_of(suite_of(s));
    uint8_t next_prk[EDHOC_CRYPTO_MAX_HASH];
    int rc = kdf(s, s->prk_out, 11, context, context_len, next_prk, hl);
    if (rc)
        return rc;
    memcpy(s->prk_out, next_prk, hl);
    edhoc_wipe(next_prk, sizeof next_prk);
    trace(s, "PRK_out after KeyUpdate", s->prk_out, hl);
    trace_prk_exporter(s, "PRK_exporter after KeyUpdate");
    return 0;
}

int edhoc_session_prk_out(const struct edhoc_session *s, uint8_t *out, size_t cap)
{
    if (!s || !s->cfg || !out)
        return EDHOC_ERR_ARG;
    if (s->state != EDHOC_STATE_COMPLETED)
        return EDHOC_ERR_STATE;
    size_t hl = hash_len_of(suite_of(s));
    if (cap < hl)
        return EDHOC_ERR_BUFFER;
    memcpy(out, s->prk_out, hl);
    return (int)hl;
}

int edhoc_session_prk_exporter(const struct edhoc_session *s, uint8_t *out, size_t cap)
{
    if (!s || !s->cfg || !out)
        return EDHOC_ERR_ARG;
    if (s->state != EDHOC_STATE_COMPLETED)
        return EDHOC_ERR_STATE;
    size_t hl = hash_len_of(suite_of(s));
    if (cap < hl)
        return EDHOC_ERR_BUFFER;
    int rc = prk_exporter(s, out);
    return rc ? rc : (int)hl;
}

int edhoc_session_oscore(const struct edhoc_session *s, struct edhoc_oscore_params *o)
{
    if (!s || !s->cfg || !o)
        return EDHOC_ERR_ARG;
    if (s->state != EDHOC_STATE_COMPLETED)
        return EDHOC_ERR_STATE;
    const struct edhoc_suite *su = suite_of(s);
    memset(o, 0, sizeof *o);
    size_t kl = s->cfg->oscore_key_len ? s->cfg->oscore_key_len
                                       : edhoc_crypto_aead_key_len(su->app_aead);
    size_t sl = s->cfg->oscore_salt_len ? s->cfg->oscore_salt_len : 8;
    if (kl == 0 || kl > sizeof o->master_secret || sl > sizeof o->master_salt)
        return EDHOC_ERR_ARG;
    /* RFC 9528 Appendix A.1: both are EDHOC_Exporter outputs (labels 0
     * and 1) of one PRK_exporter, derived once for the two. */
    if (beyond_one_expand(su, kl) || beyond_one_expand(su, sl))
        return EDHOC_ERR_ARG;
    uint8_t exp[EDHOC_CRYPTO_MAX_HASH];
    int rc = prk_exporter(s, exp);
    if (!rc)
        rc = kdf(s, exp, 0, NULL, 0, o->master_secret, kl);
    if (!rc)
        rc = kdf(s, exp, 1, NULL, 0, o->master_salt, sl);
    edhoc_wipe(exp, sizeof exp);
    if (rc) {
        edhoc_wipe(o, sizeof *o);
        return rc;
    }
    o->master_secret_len = kl;
    o->master_salt_len = sl;
    /* Appendix A.1: I sends with C_R and receives with C_I, R the other
     * way round: each side's Sender ID is the peer's identifier. */
    memcpy(o->sender_id, s->peer_cid, s->peer_cid_len);
    o->sender_id_len = s->peer_cid_len;
    memcpy(o->recipient_id, s->own_cid, s->own_cid_len);
    o->recipient_id_len = s->own_cid_len;
    o->aead_alg = su->app_aead;
    o->hash_alg = su->app_hash;
    trace(s, "OSCORE Master Secret", o->master_secret, kl);
    trace(s, "OSCORE Master Salt", o->master_salt, sl);
    return 0;
}

/* ---- errors in a session ---- */

int edhoc_session_process_error(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                struct edhoc_error_info *info)
{
    struct edhoc_error_info local;
    if (!info)
        info = &local;
    if (!s || !s->cfg || !msg)
        return EDHOC_ERR_ARG;
    if (s->state == EDHOC_STATE_ERROR)
        return EDHOC_ERR_STATE;
    int rc = edhoc_error_message_parse(msg, len, info);
    if (rc)
        return fail(s, rc, EDHOC_STEP_PEER_ERROR);
    if (s->role == EDHOC_INITIATOR && s->state == EDHOC_STATE_WAIT_M2 &&
        info->code == EDHOC_ERR_CODE_WRONG_SUITE) {
        /* Section 5.2.2: select our most preferred suite among SUITES_R;
         * never the one just rejected, which would loop. */
        int sel = preferred_common(s->cfg, info->suites, info->n_suites);
        if (sel == EDHOC_NO_SUITE || sel == s->suite)
            return fail(s, EDHOC_ERR_NO_COMMON_SUITE, EDHOC_STEP_PEER_ERROR);
        wipe_secrets(s);
        s->retry_suite = (int8_t)sel;
        s->suite = EDHOC_NO_SUITE;
        s->flags &= (uint8_t)~(EDHOC_SF_CID_SENT | EDHOC_SF_EXPLICIT_EPH);
        s->state = EDHOC_STATE_START;
        return 0;
    }
    return fail(s, EDHOC_ERR_PEER_ERROR, EDHOC_STEP_PEER_ERROR);
}

static const char *step_name(int step)
{
    switch (step) {
    case EDHOC_STEP_PREPARE_M1:
        return "preparing message_1";
    case EDHOC_STEP_PROCESS_M1:
        return "message_1";
    case EDHOC_STEP_PREPARE_M2:
        return "preparing message_2";
    case EDHOC_STEP_PROCESS_M2:
        return "message_2";
    case EDHOC_STEP_VERIFY_M2:
        return "message_2 verification";
    case EDHOC_STEP_PREPARE_M3:
        return "preparing message_3";
    case EDHOC_STEP_PROCESS_M3:
        return "message_3";
    case EDHOC_STEP_VERIFY_M3:
        return "message_3 verification";
    case EDHOC_STEP_PREPARE_M4:
        return "preparing message_4";
    case EDHOC_STEP_PROCESS_M4:
        return "message_4";
    case EDHOC_STEP_PEER_ERROR:
        return "error message";
    default:
        return "EDHOC";
    }
}

/* The error text without the diagnosis: what the error message to the
 * peer carries. */
static size_t base_error_text(const struct edhoc_session *s, char *buf, size_t cap)
{
    char tmp[160];
    int n = 0;
    if (!s || s->state != EDHOC_STATE_ERROR) {
        tmp[0] = '\0';
    } else {
        bool m2 = s->failed_step == EDHOC_STEP_VERIFY_M2;
        bool m3 = s->failed_step == EDHOC_STEP_VERIFY_M3;
        switch (s->error) {
        case EDHOC_ERR_MAC:
            n = snprintf(tmp, sizeof tmp, "MAC_%c verification failed", m3 ? '3' : '2');
            break;
        case EDHOC_ERR_SIGNATURE:
            n = snprintf(tmp, sizeof tmp, "Signature_or_MAC_%c verification failed",
                         m3 ? '3' : '2');
            break;
        case EDHOC_ERR_UNKNOWN_CREDENTIAL:
            n = snprintf(tmp, sizeof tmp, "unknown credential ID_CRED_%c", m2 ? 'R' : 'I');
            break;
        case EDHOC_ERR_DECRYPT:
            n = snprintf(tmp, sizeof tmp, "%s: CIPHERTEXT_%c did not decrypt",
                         step_name(s->failed_step),
                         s->failed_step == EDHOC_STEP_PROCESS_M4 ? '4' : '3');
            break;
        case EDHOC_ERR_EPHEMERAL_LENGTH:
        case EDHOC_ERR_INVALID_POINT:
            n = snprintf(tmp, sizeof tmp, "%s: %s %s", step_name(s->failed_step),
                         s->failed_step == EDHOC_STEP_PROCESS_M1 ? "G_X" : "G_Y",
                         s->error == EDHOC_ERR_INVALID_POINT ? "is not a valid public key"
                                                             : "has the wrong length");
            break;
        default:
            n = snprintf(tmp, sizeof tmp, "%s: %s", step_name(s->failed_step),
                         edhoc_strerror(s->error));
            break;
        }
    }
    if (n < 0)
        n = 0;
    if (buf && cap) {
        /* snprintf returns the untruncated length: never copy past tmp. */
        size_t have = strnlen(tmp, sizeof tmp);
        size_t c = have < cap - 1 ? have : cap - 1;
        memcpy(buf, tmp, c);
        buf[c] = '\0';
    }
    return (size_t)n;
}

/* ---- diagnosis of a Signature_or_MAC_x that did not verify ---- */

/* Appends to a fixed buffer; what does not fit is dropped, the string
 * stays terminated. */
struct text_out {
    char *p;
    size_t cap, n;
};

static void text_add(struct text_out *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void text_add(struct text_out *t, const char *fmt, ...)
{
    if (t->n + 1 >= t->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->p + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        t->n += (size_t)k < t->cap - t->n ? (size_t)k : t->cap - t->n - 1;
}

/* One deviation as the text describes it: what the peer put into
 * context_x instead of what RFC 9528 says. Kept short: the pair c-bstr +
 * kid-int with a signature must fit struct edhoc_diagnosis.text. */
static void deviation_clause(const struct edhoc_session *s, unsigned bit, struct text_out *t)
{
    uint8_t info = s->dev_info;
    int msg = (info & EDHOC_DI_M3) ? 3 : 2;
    char x = msg == 3 ? 'I' : 'R';
    /* With a signature, ID_CRED_x is in its protected header as well. */
    const char *also = (info & EDHOC_DI_SIG) ? " and the protected header" : "";
    uint8_t kid = s->dev_kid;
    bool have_kid = (info & EDHOC_DI_KID) != 0;
    switch (bit) {
    case EDHOC_DEV_C_BSTR: {
        /* Only the initiator verifies MAC_2: C_R is its peer's identifier. */
        uint8_t c_r = s->role == EDHOC_INITIATOR ? s->peer_cid[0] : s->own_cid[0];
        text_add(t,
                 "C_R is the byte string h'%02x' instead of the int %d (0x%02x) in context_2 "
                 "(RFC 9528 Section 3.3.2)",
                 c_r, edhoc_one_byte_int_value(c_r), c_r);
        break;
    }
    case EDHOC_DEV_KID_INT:
        if (have_kid)
            text_add(t,
                     "ID_CRED_%c is {4: %d} instead of {4: h'%02x'} in context_%d%s (RFC 9528 "
                     "Section 3.5.3.2)",
                     x, edhoc_one_byte_int_value(kid), kid, msg, also);
        else
            text_add(t,
                     "ID_CRED_%c is {4: int} instead of {4: bstr} in context_%d%s (RFC 9528 "
                     "Section 3.5.3.2)",
                     x, msg, also);
        break;
    case EDHOC_DEV_ID_CRED_COMPACT:
        if (have_kid && edhoc_is_one_byte_int(kid))
            text_add(t,
                     "ID_CRED_%c is its compact form (the int %d) instead of {4: h'%02x'} in "
                     "context_%d%s (RFC 9528 Section 3.5.3.2)",
                     x, edhoc_one_byte_int_value(kid), kid, msg, also);
        else if (have_kid)
            text_add(t,
                     "ID_CRED_%c is its compact form (h'%02x') instead of {4: h'%02x'} in "
                     "context_%d%s (RFC 9528 Section 3.5.3.2)",
                     x, kid, kid, msg, also);
        else
            text_add(t,
                     "ID_CRED_%c is its compact form (the kid alone) instead of {4: kid} in "
                     "context_%d%s (RFC 9528 Section 3.5.3.2)",
                     x, msg, also);
        break;
    case EDHOC_DEV_CRED_WRAP:
        text_add(t, "CRED_%c is %s in context_%d (RFC 9528 Section 3.5.2)", x,
                 (info & EDHOC_DI_CRED_BSTR) ? "used without its byte string head"
                                             : "wrapped in an extra byte string",
                 msg);
        break;
    case EDHOC_DEV_EAD_OMITTED:
        text_add(t,
                 "EAD_%d is left out of context_%d although message_%d carries it (RFC 9528 "
                 "Section %s)",
                 msg, msg, msg, msg == 3 ? "5.4.2" : "5.3.2");
        break;
    default:
        break;
    }
}

/* The text of struct edhoc_diagnosis (the session has DI_DONE). */
static void diagnosis_text(const struct edhoc_session *s, char *buf, size_t cap)
{
    struct text_out t = {buf, cap, 0};
    if (cap)
        buf[0] = '\0';
    uint8_t info = s->dev_info;
    int msg = (info & EDHOC_DI_M3) ? 3 : 2;
    bool sig = (info & EDHOC_DI_SIG) != 0;
    const char *what = sig ? "Signature_or_MAC" : "MAC";
    const char *verb = sig ? "verifies" : "matches";
    char names[128];
    if (!(info & EDHOC_DI_MATCH)) {
        text_add(&t, "%s_%d verification failed: no known deviation explains it", what, msg);
        return;
    }
    if (s->dev_found == 0) {
        edhoc_deviations_format(s->dev_own, names, sizeof names);
        text_add(&t,
                 "%s_%d %s under RFC 9528 as written: the peer does not deviate, this side "
                 "emulates %s (a test aid)",
                 what, msg, verb, names);
        if (s->dev_tolerated)
            text_add(&t, "; tolerated (--tolerate %s)", names);
        return;
    }
    text_add(&t, "%s_%d %s when ", what, msg, verb);
    bool first = true;
    for (unsigned bit = 1; bit & EDHOC_DEV_ALL; bit <<= 1) {
        if (!(s->dev_found & bit))
            continue;
        if (!first)
            text_add(&t, " and ");
        deviation_clause(s, bit, &t);
        first = false;
    }
    /* What this side would have to tolerate: how the peer differs from
     * what it expected (the peer's deviations, unless it emulates some). */
    edhoc_deviations_format((unsigned)(s->dev_found ^ s->dev_own), names, sizeof names);
    if (s->dev_tolerated)
        text_add(&t, ": the peer deviates; tolerated (--tolerate %s)", names);
    else
        text_add(&t, ": the peer deviates; --tolerate %s accepts it", names);
}

int edhoc_session_diagnosis(const struct edhoc_session *s, struct edhoc_diagnosis *d)
{
    if (!s || !d)
        return EDHOC_ERR_ARG;
    memset(d, 0, sizeof *d);
    if (!(s->dev_info & EDHOC_DI_DONE))
        return EDHOC_ERR_STATE;
    d->matched = (s->dev_info & EDHOC_DI_MATCH) ? s->dev_found : 0;
    d->message = (s->dev_info & EDHOC_DI_M3) ? 3 : 2;
    diagnosis_text(s, d->text, sizeof d->text);
    return 0;
}

unsigned edhoc_session_tolerated(const struct edhoc_session *s)
{
    return s ? s->dev_tolerated : 0;
}

unsigned edhoc_session_followed(const struct edhoc_session *s)
{
    return s ? s->dev_followed : 0;
}

size_t edhoc_session_error_text(const struct edhoc_session *s, char *buf, size_t cap)
{
    char base[160];
    char diag[sizeof((struct edhoc_diagnosis *)0)->text];
    char tmp[sizeof base + sizeof diag + 2];
    size_t n = base_error_text(s, base, sizeof base);
    bool auth = s && s->state == EDHOC_STATE_ERROR &&
                (s->error == EDHOC_ERR_MAC || s->error == EDHOC_ERR_SIGNATURE);
    /* Only a diagnosis that found something is added: "no known deviation
     * explains it" tells the reader of a log nothing the failure does not
     * (edhoc_session_diagnosis still gives it). */
    if (auth && (s->dev_info & EDHOC_DI_DONE) && (s->dev_info & EDHOC_DI_MATCH)) {
        diagnosis_text(s, diag, sizeof diag);
        int k = snprintf(tmp, sizeof tmp, "%s; %s", base, diag);
        n = k > 0 ? (size_t)k : 0;
    } else {
        snprintf(tmp, sizeof tmp, "%s", base);
    }
    if (buf && cap) {
        size_t have = strnlen(tmp, sizeof tmp);
        size_t c = have < cap - 1 ? have : cap - 1;
        memcpy(buf, tmp, c);
        buf[c] = '\0';
    }
    return n;
}

int edhoc_session_write_error(const struct edhoc_session *s, uint8_t *out, size_t cap)
{
    if (!s || !s->cfg || !out)
        return EDHOC_ERR_ARG;
    if (s->state != EDHOC_STATE_ERROR || s->failed_step == EDHOC_STEP_PEER_ERROR)
        return 0;
    int code = edhoc_error_code_for(s->error);
    if (code == 0)
        return 0;
    if (code == EDHOC_ERR_CODE_WRONG_SUITE) {
        /* Section 6.3: the suite of SUITES_I most preferred by I that we
         * support, or all of ours when we support none of them. */
        int list[EDHOC_MAX_SUITES];
        size_t n = 0;
        if (s->suites_r_hint != EDHOC_NO_SUITE) {
            list[n++] = s->suites_r_hint;
        } else {
            for (size_t i = 0; i < s->cfg->n_suites; i++)
                list[n++] = s->cfg->suites[i];
        }
        return edhoc_error_message_write(out, cap, code, NULL, list, n);
    }
    char text[96];
    base_error_text(s, text, sizeof text);
    return edhoc_error_message_write(out, cap, code, text, NULL, 0);
}
