/*
 * EDHOC session set-up and state: init, the setters that come before
 * message_1, the accessors, and the abort every failing step ends in.
 *
 * The session keeps only what the next step needs (ephemeral private key,
 * the current transcript hash, the current PRK, PRK_out, the connection
 * identifiers and the peer's ephemeral key). Transcript and context inputs
 * are assembled in stack buffers bounded by EDHOC_MAX_TRANSCRIPT, hashed or
 * expanded, and wiped when they held secrets.
 */
#include <string.h>

#include "edhoc_internal.h"

void edhoc_wipe_secrets(struct edhoc_session *s)
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
void edhoc_received_wipe(struct edhoc_received *rx)
{
    if (rx)
        edhoc_wipe(rx, sizeof *rx);
}

/* Abort: every protocol/crypto failure ends here. */
int edhoc_fail(struct edhoc_session *s, int err, enum edhoc_step step)
{
    edhoc_wipe_secrets(s);
    s->state = EDHOC_STATE_ERROR;
    s->error = (int16_t)err;
    s->failed_step = (uint8_t)step;
    return err;
}

/* Own connection identifier: a random one-byte int form when the
 * application set none, never equal to the peer's. */
int edhoc_ensure_own_cid(struct edhoc_session *s)
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

bool edhoc_suite_in(const int *list, size_t n, int suite)
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
int edhoc_preferred_common(const struct edhoc_config *cfg, const int *list, size_t n)
{
    for (size_t i = 0; i < cfg->n_suites; i++)
        if (edhoc_suite_in(list, n, cfg->suites[i]))
            return cfg->suites[i];
    return EDHOC_NO_SUITE;
}

int edhoc_session_set_peer_suites(struct edhoc_session *s, const int *list, size_t n)
{
    if (!s || !s->cfg || !list || n == 0)
        return EDHOC_ERR_ARG;
    if (s->role != EDHOC_INITIATOR || s->state != EDHOC_STATE_START)
        return EDHOC_ERR_STATE;
    int sel = edhoc_preferred_common(s->cfg, list, n);
    if (sel == EDHOC_NO_SUITE)
        return EDHOC_ERR_NO_COMMON_SUITE;
    s->retry_suite = (int8_t)sel;
    return 0;
}

void edhoc_session_wipe(struct edhoc_session *s)
{
    if (!s)
        return;
    edhoc_wipe_secrets(s);
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
