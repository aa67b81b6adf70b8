/*
 * message_2 (RFC 9528 Section 5.3): prepared by R, processed and
 * verified by I.
 */
#include <string.h>

#include "edhoc_internal.h"

/* out = in XOR KEYSTREAM_2, KEYSTREAM_2 = EDHOC_KDF(PRK_2e, 0, TH_2, len):
 * CIPHERTEXT_2 from PLAINTEXT_2 and back. The keystream is expanded straight
 * into out. */
static int apply_keystream_2(struct edhoc_session *s, const uint8_t *in, uint8_t *out, size_t len)
{
    int rc = edhoc_kdf_session(s, s->prk, 0, s->th, s->th_len, out, len);
    if (rc)
        return rc;
    edhoc_trace(s, "KEYSTREAM_2", out, len);
    for (size_t i = 0; i < len; i++)
        out[i] ^= in[i];
    return 0;
}

/* message_2 = bstr(G_Y || CIPHERTEXT_2) into out. */
static int write_message_2(struct edhoc_session *s, const uint8_t *pt, size_t pt_len, uint8_t *out,
                           size_t cap, size_t *total)
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
    edhoc_trace(s, "CIPHERTEXT_2", out + ct_off, pt_len);
    edhoc_trace(s, "message_2", out, len);
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
    int rc = edhoc_ensure_own_cid(s);
    if (!rc)
        rc = edhoc_build_own_plaintext(s, &edhoc_auth_msg_2, prk_3e2m, pt, sizeof pt, &pt_len);
    if (!rc && edhoc_beyond_one_expand(edhoc_suite_of(s), pt_len))
        rc = EDHOC_ERR_UNSUPPORTED;
    if (!rc)
        rc = write_message_2(s, pt, pt_len, out, cap, &total);
    if (!rc)
        rc = edhoc_advance_key_schedule(s, &edhoc_auth_msg_2, pt, pt_len, s->cfg->cred, prk_3e2m);
    edhoc_wipe(pt, sizeof pt);
    edhoc_wipe(prk_3e2m, sizeof prk_3e2m);
    if (rc)
        return edhoc_fail(s, rc, EDHOC_STEP_PREPARE_M2);
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
    int rc = edhoc_own_id_cred(cfg, id_buf, sizeof id_buf, &id_cred, &id_cred_len);
    if (!rc)
        rc = edhoc_own_ead(cfg, 2, ead, sizeof ead, &ead_len);
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
    const struct edhoc_suite *su = edhoc_suite_of(s);
    size_t g_y_len = edhoc_crypto_ecdh_pub_len(su->ecdh_curve);
    const uint8_t *g_y, *ct;
    size_t ct_len;
    int rc = edhoc_message_2_parse(msg, len, g_y_len, &g_y, &ct, &ct_len);
    if (rc)
        return edhoc_fail(s, rc, step);
    if (ct_len > EDHOC_MAX_PLAINTEXT)
        return edhoc_fail(s, EDHOC_ERR_TOO_LARGE, step);
    if (edhoc_beyond_one_expand(su, ct_len))
        return edhoc_fail(s, EDHOC_ERR_UNSUPPORTED, step);

    rc = edhoc_compute_th_2(s, g_y, g_y_len);
    if (!rc)
        rc = edhoc_compute_prk_2e(s, g_y, g_y_len);
    if (rc)
        return edhoc_fail(s, rc, step);
    memcpy(s->peer_eph, g_y, g_y_len);
    s->peer_eph_len = (uint8_t)g_y_len;

    rc = apply_keystream_2(s, ct, rx->plaintext, ct_len);
    if (rc) {
        edhoc_received_wipe(rx);
        return edhoc_fail(s, rc, step);
    }
    edhoc_trace(s, "PLAINTEXT_2", rx->plaintext, ct_len);

    uint8_t c_r[EDHOC_MAX_CONN_ID];
    size_t c_r_len = 0;
    rc = edhoc_plaintext_2_parse(rx->plaintext, ct_len, s->method, s->suite, rx, c_r, &c_r_len);
    if (!rc && c_r_len == s->own_cid_len && memcmp(c_r, s->own_cid, c_r_len) == 0)
        rc = EDHOC_ERR_CONN_ID_EQUAL;
    if (!rc) {
        memcpy(s->peer_cid, c_r, c_r_len);
        s->peer_cid_len = (uint8_t)c_r_len;
        s->flags |= EDHOC_SF_PEER_CID;
        rc = edhoc_deliver_ead(s, 2, rx->plaintext + rx->ead_off, rx->ead_len);
    }
    if (rc) {
        edhoc_received_wipe(rx);
        return edhoc_fail(s, rc, step);
    }
    s->state = EDHOC_STATE_VERIFY_M2;
    return 0;
}

int edhoc_initiator_verify_message_2(struct edhoc_session *s, const struct edhoc_received *rx,
                                     const struct edhoc_cred *cred_r)
{
    return edhoc_verify_step(s, rx, cred_r, EDHOC_INITIATOR, EDHOC_STATE_VERIFY_M2,
                             &edhoc_auth_msg_2, EDHOC_STEP_VERIFY_M2, EDHOC_STATE_SEND_M3);
}

int edhoc_initiator_handle_message_2(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                     struct edhoc_received *rx, edhoc_cred_resolver resolve,
                                     void *resolve_ctx)
{
    return edhoc_handle_message(s, msg, len, rx, resolve, resolve_ctx,
                                edhoc_initiator_process_message_2, edhoc_initiator_verify_message_2,
                                EDHOC_STEP_VERIFY_M2);
}
