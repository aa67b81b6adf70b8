/*
 * The EDHOC key schedule (RFC 9528 Section 4): EDHOC_KDF, PRK_2e,
 * PRK_3e2m, PRK_4e3m, the transcript hashes, PRK_out, the exporter,
 * EDHOC-KeyUpdate and the OSCORE security context (Appendix A.1).
 */
#include <string.h>

#include "edhoc_internal.h"

int edhoc_kdf(const struct edhoc_crypto_ops *ops, int hash_alg, const uint8_t *prk, size_t prk_len,
              int64_t label, const uint8_t *context, size_t context_len, uint8_t *out, size_t len)
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
    return edhoc_crypto_err(rc);
}

int edhoc_kdf_session(const struct edhoc_session *s, const uint8_t *prk, int64_t label,
                      const uint8_t *ctx, size_t ctx_len, uint8_t *out, size_t len)
{
    const struct edhoc_suite *su = edhoc_suite_of(s);
    return edhoc_kdf(s->cfg->ops, su->hash, prk, edhoc_hash_len_of(su), label, ctx, ctx_len, out,
                     len);
}

/* PRK_exporter = EDHOC_KDF(PRK_out, 10, h'', hash_length) */
static int prk_exporter(const struct edhoc_session *s, uint8_t *out)
{
    return edhoc_kdf_session(s, s->prk_out, 10, NULL, 0, out, edhoc_hash_len_of(edhoc_suite_of(s)));
}

/* PRK_exporter is derived on demand, never kept: computed here only for
 * the trace. */
static void trace_prk_exporter(const struct edhoc_session *s, const char *name)
{
    if (!s->cfg->trace)
        return;
    uint8_t exp[EDHOC_CRYPTO_MAX_HASH];
    if (prk_exporter(s, exp) == 0)
        edhoc_trace(s, name, exp, edhoc_hash_len_of(edhoc_suite_of(s)));
    edhoc_wipe(exp, sizeof exp);
}

int edhoc_hash_session(const struct edhoc_session *s, const uint8_t *in, size_t len, uint8_t *out)
{
    return edhoc_crypto_err(s->cfg->ops->hash(edhoc_suite_of(s)->hash, in, len, out));
}

static int extract(const struct edhoc_session *s, const uint8_t *salt, size_t salt_len,
                   const uint8_t *ikm, size_t ikm_len, uint8_t *prk)
{
    return edhoc_crypto_err(
        s->cfg->ops->hkdf_extract(edhoc_suite_of(s)->hash, salt, salt_len, ikm, ikm_len, prk));
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
static int ecdh(const struct edhoc_session *s, int curve, const uint8_t *priv, const uint8_t *peer,
                size_t peer_len, uint8_t *out, size_t *out_len)
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

/* TH_2 = H(G_Y, H(message_1)); th holds H(message_1) on entry, TH_2 after. */
int edhoc_compute_th_2(struct edhoc_session *s, const uint8_t *g_y, size_t g_y_len)
{
    uint8_t in[2 * (EDHOC_CRYPTO_MAX_HASH + 4)];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, in, sizeof in);
    edhoc_cbor_put_bstr(&w, g_y, g_y_len);
    edhoc_cbor_put_bstr(&w, s->th, s->th_len);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_ERR_TOO_LARGE;
    edhoc_trace(s, "input_TH_2", in, (size_t)n);
    int rc = edhoc_hash_session(s, in, (size_t)n, s->th);
    if (rc)
        return rc;
    edhoc_trace(s, "TH_2", s->th, s->th_len);
    return 0;
}

/* PRK_2e = EDHOC_Extract(TH_2, G_XY) */
int edhoc_compute_prk_2e(struct edhoc_session *s, const uint8_t *peer_eph, size_t peer_len)
{
    uint8_t g_xy[EDHOC_CRYPTO_MAX_SECRET];
    size_t g_xy_len = 0;
    int rc =
        ecdh(s, edhoc_suite_of(s)->ecdh_curve, s->eph_priv, peer_eph, peer_len, g_xy, &g_xy_len);
    if (rc)
        return rc;
    edhoc_trace(s, "G_XY", g_xy, g_xy_len);
    rc = extract(s, s->th, s->th_len, g_xy, g_xy_len, s->prk);
    edhoc_wipe(g_xy, sizeof g_xy);
    if (rc)
        return rc;
    edhoc_trace(s, "PRK_2e", s->prk, s->th_len);
    return 0;
}

/* PRK_3e2m / PRK_4e3m into prk_out. A sender that authenticates with a
 * static DH key contributes it:
 *   PRK = EDHOC_Extract(EDHOC_KDF(PRK_cur, salt_label, TH, hash_length), G_xx)
 * with priv our half of that DH and pub the other side's; otherwise the
 * current PRK carries over. */
int edhoc_derive_auth_prk(struct edhoc_session *s, const struct edhoc_auth_msg *m, bool static_dh,
                          const uint8_t *priv, const uint8_t *pub, size_t pub_len, uint8_t *prk_out)
{
    const struct edhoc_suite *su = edhoc_suite_of(s);
    size_t hl = edhoc_hash_len_of(su);
    if (!static_dh) {
        memcpy(prk_out, s->prk, hl);
        edhoc_trace(s, m->prk, prk_out, hl);
        return 0;
    }
    uint8_t salt[EDHOC_CRYPTO_MAX_HASH];
    uint8_t dh[EDHOC_CRYPTO_MAX_SECRET];
    size_t dh_len = 0;
    int rc = edhoc_kdf_session(s, s->prk, m->salt_label, s->th, s->th_len, salt, hl);
    if (rc)
        goto out;
    edhoc_trace(s, m->salt, salt, hl);
    rc = ecdh(s, su->ecdh_curve, priv, pub, pub_len, dh, &dh_len);
    if (rc)
        goto out;
    edhoc_trace(s, m->dh, dh, dh_len);
    rc = extract(s, salt, hl, dh, dh_len, prk_out);
    if (rc)
        goto out;
    edhoc_trace(s, m->prk, prk_out, hl);
out:
    edhoc_wipe(salt, sizeof salt);
    edhoc_wipe(dh, sizeof dh);
    return rc;
}

/* PRK_out = EDHOC_KDF(PRK_4e3m, 7, TH_4, hash_length) */
static int derive_prk_out(struct edhoc_session *s)
{
    size_t hl = edhoc_hash_len_of(edhoc_suite_of(s));
    int rc = edhoc_kdf_session(s, s->prk, 7, s->th, s->th_len, s->prk_out, hl);
    if (rc)
        return rc;
    edhoc_trace(s, "PRK_out", s->prk_out, hl);
    trace_prk_exporter(s, "PRK_exporter");
    return 0;
}

/* Once PLAINTEXT_x is sent or verified, the key schedule moves on:
 * TH_{x+1} = H(TH_x, PLAINTEXT_x, CRED_x), and prk_next (PRK_3e2m /
 * PRK_4e3m) replaces the current PRK. After message_3 this ends in PRK_out,
 * and the ephemeral keys have no further use. */
int edhoc_advance_key_schedule(struct edhoc_session *s, const struct edhoc_auth_msg *m,
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
    edhoc_trace(s, m->input_th, in, (size_t)n);
    int rc = edhoc_hash_session(s, in, (size_t)n, s->th);
    if (rc)
        return rc;
    edhoc_trace(s, m->th, s->th, s->th_len);
    memcpy(s->prk, prk_next, edhoc_hash_len_of(edhoc_suite_of(s)));
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

/* Whether len is beyond one HKDF-Expand output (255 hash lengths; SHAKE256
 * has no such bound). Appendix G, which would lift this for KEYSTREAM_2, is
 * not needed below EDHOC_MAX_PLAINTEXT with SHA-256 (8160 bytes). */
bool edhoc_beyond_one_expand(const struct edhoc_suite *su, size_t len)
{
    return su->hash != EDHOC_COSE_SHAKE256 && len > 255 * edhoc_hash_len_of(su);
}

int edhoc_session_export(const struct edhoc_session *s, uint64_t label, const uint8_t *context,
                         size_t context_len, uint8_t *out, size_t len)
{
    if (!s || !s->cfg || !out || len == 0 || (!context && context_len) || label > INT64_MAX)
        return EDHOC_ERR_ARG;
    if (s->state != EDHOC_STATE_COMPLETED)
        return EDHOC_ERR_STATE;
    if (edhoc_beyond_one_expand(edhoc_suite_of(s), len))
        return EDHOC_ERR_ARG;
    uint8_t exp[EDHOC_CRYPTO_MAX_HASH];
    int rc = prk_exporter(s, exp);
    if (!rc)
        rc = edhoc_kdf_session(s, exp, (int64_t)label, context, context_len, out, len);
    edhoc_wipe(exp, sizeof exp);
    return rc;
}

int edhoc_session_key_update(struct edhoc_session *s, const uint8_t *context, size_t context_len)
{
    if (!s || !s->cfg || (!context && context_len))
        return EDHOC_ERR_ARG;
    if (s->state != EDHOC_STATE_COMPLETED)
        return EDHOC_ERR_STATE;
    size_t hl = edhoc_hash_len_of(edhoc_suite_of(s));
    uint8_t next_prk[EDHOC_CRYPTO_MAX_HASH];
    int rc = edhoc_kdf_session(s, s->prk_out, 11, context, context_len, next_prk, hl);
    if (rc)
        return rc;
    memcpy(s->prk_out, next_prk, hl);
    edhoc_wipe(next_prk, sizeof next_prk);
    edhoc_trace(s, "PRK_out after KeyUpdate", s->prk_out, hl);
    trace_prk_exporter(s, "PRK_exporter after KeyUpdate");
    return 0;
}

int edhoc_session_prk_out(const struct edhoc_session *s, uint8_t *out, size_t cap)
{
    if (!s || !s->cfg || !out)
        return EDHOC_ERR_ARG;
    if (s->state != EDHOC_STATE_COMPLETED)
        return EDHOC_ERR_STATE;
    size_t hl = edhoc_hash_len_of(edhoc_suite_of(s));
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
    size_t hl = edhoc_hash_len_of(edhoc_suite_of(s));
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
    const struct edhoc_suite *su = edhoc_suite_of(s);
    memset(o, 0, sizeof *o);
    size_t kl =
        s->cfg->oscore_key_len ? s->cfg->oscore_key_len : edhoc_crypto_aead_key_len(su->app_aead);
    size_t sl = s->cfg->oscore_salt_len ? s->cfg->oscore_salt_len : 8;
    if (kl == 0 || kl > sizeof o->master_secret || sl > sizeof o->master_salt)
        return EDHOC_ERR_ARG;
    /* RFC 9528 Appendix A.1: both are EDHOC_Exporter outputs (labels 0
     * and 1) of one PRK_exporter, derived once for the two. */
    if (edhoc_beyond_one_expand(su, kl) || edhoc_beyond_one_expand(su, sl))
        return EDHOC_ERR_ARG;
    uint8_t exp[EDHOC_CRYPTO_MAX_HASH];
    int rc = prk_exporter(s, exp);
    if (!rc)
        rc = edhoc_kdf_session(s, exp, 0, NULL, 0, o->master_secret, kl);
    if (!rc)
        rc = edhoc_kdf_session(s, exp, 1, NULL, 0, o->master_salt, sl);
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
    edhoc_trace(s, "OSCORE Master Secret", o->master_secret, kl);
    edhoc_trace(s, "OSCORE Master Salt", o->master_salt, sl);
    return 0;
}
