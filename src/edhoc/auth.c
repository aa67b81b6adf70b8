/*
 * Authentication of message_2 (by R) and message_3 (by I), RFC 9528
 * Sections 5.3 and 5.4: ID_CRED_x, context_x, MAC_x, Signature_or_MAC_x,
 * PLAINTEXT_x, and the verification of the peer (with the diagnosis of
 * a failure).
 */
#include <string.h>

#include "edhoc_internal.h"

/* Own ID_CRED_x in full map form, into buf when built from the kid. */
int edhoc_own_id_cred(const struct edhoc_config *c, uint8_t *buf, size_t cap, const uint8_t **map,
                      size_t *len)
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
    const struct edhoc_suite *su = edhoc_suite_of(s);
    const struct edhoc_key *k = s->cfg->key;
    int want = static_dh ? su->ecdh_curve : su->sig_curve;
    if (k->curve != want || k->priv_len != edhoc_crypto_priv_len(want))
        return EDHOC_ERR_CREDENTIAL;
    return 0;
}

const struct edhoc_auth_msg edhoc_auth_msg_2 = {
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

const struct edhoc_auth_msg edhoc_auth_msg_3 = {
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

/* context_x into buf. *aad_off: where << TH_x, CRED_x, ? EAD_x >>, the
 * external_aad of the signature, begins. */
static int build_context(const struct edhoc_session *s, const struct edhoc_auth_msg *m,
                         const struct edhoc_context_in *in, uint8_t *buf, size_t cap, size_t *len,
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
    edhoc_trace(s, m->context, buf, *len);
    return 0;
}

/* MAC_x = EDHOC_KDF(PRK, mac_label, context_x, mac_length_x): the suite's
 * MAC length when MAC_x is itself Signature_or_MAC_x (static DH sender),
 * hash_length when it is signed. */
static int compute_mac(struct edhoc_session *s, const struct edhoc_auth_msg *m, bool static_dh,
                       const uint8_t *prk, const uint8_t *context, size_t context_len, uint8_t *mac,
                       size_t *mac_len)
{
    const struct edhoc_suite *su = edhoc_suite_of(s);
    *mac_len = static_dh ? (size_t)su->mac_len : edhoc_hash_len_of(su);
    int rc = edhoc_kdf_session(s, prk, m->mac_label, context, context_len, mac, *mac_len);
    if (rc)
        return rc;
    edhoc_trace(s, m->mac, mac, *mac_len);
    return 0;
}

/* COSE Sig_structure ["Signature1", << ID_CRED >>, << TH, CRED, ? EAD >>,
 * MAC]: external_aad is context_x from aad_off on. */
static int build_to_be_signed(struct edhoc_session *s, const struct edhoc_auth_msg *m,
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
    edhoc_trace(s, m->to_be_signed, buf, *len);
    return 0;
}

/* Our Signature_or_MAC_x: MAC_x, signed unless we are a static DH sender. */
static int make_sig_or_mac(struct edhoc_session *s, const struct edhoc_auth_msg *m, bool static_dh,
                           const uint8_t *prk, const uint8_t *context, size_t context_len,
                           size_t aad_off, const uint8_t *id_cred, size_t id_cred_len, uint8_t *sig,
                           size_t *sig_len)
{
    const struct edhoc_suite *su = edhoc_suite_of(s);
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
    edhoc_trace(s, m->sig_or_mac, sig, *sig_len);
out:
    edhoc_wipe(mac, sizeof mac);
    edhoc_wipe(tbs, tbs_len); /* holds MAC_x */
    return rc;
}

/* The peer's Signature_or_MAC_x, received in rx, against its credential. */
static int check_sig_or_mac(struct edhoc_session *s, const struct edhoc_auth_msg *m, bool static_dh,
                            const uint8_t *prk, const uint8_t *context, size_t context_len,
                            size_t aad_off, const uint8_t *id_cred, size_t id_cred_len,
                            const struct edhoc_received *rx, const struct edhoc_cred *cred)
{
    const struct edhoc_suite *su = edhoc_suite_of(s);
    uint8_t mac[EDHOC_CRYPTO_MAX_HASH];
    size_t mac_len = 0;
    int rc = compute_mac(s, m, static_dh, prk, context, context_len, mac, &mac_len);
    if (rc)
        return rc;
    const uint8_t *sig = rx->plaintext + rx->sig_off;
    edhoc_trace(s, m->sig_or_mac, sig, rx->sig_len);
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
    rc = build_to_be_signed(s, m, id_cred, id_cred_len, context, context_len, aad_off, mac, mac_len,
                            tbs, sizeof tbs, &tbs_len);
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
    return edhoc_crypto_err(rc);
}

/* Our message_2 / message_3 up to encryption: PRK_3e2m / PRK_4e3m into
 * prk_next and PLAINTEXT_x = ( ? C_R, ID_CRED_x, Signature_or_MAC_x,
 * ? EAD_x ) into pt. The caller wipes prk_next and pt on every path. */
int edhoc_build_own_plaintext(struct edhoc_session *s, const struct edhoc_auth_msg *m,
                              uint8_t *prk_next, uint8_t *pt, size_t cap, size_t *pt_len)
{
    const struct edhoc_config *c = s->cfg;
    bool sdh = edhoc_static_dh_sender(s->method, m->msg_no);
    bool with_c_r = m->msg_no == 2;
    int rc = check_own_key(s, sdh);
    if (!rc)
        rc = edhoc_derive_auth_prk(s, m, sdh, c->key->priv, s->peer_eph, s->peer_eph_len, prk_next);
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
    rc = edhoc_own_id_cred(c, id_buf, sizeof id_buf, &id_cred, &id_cred_len);
    if (!rc)
        rc = edhoc_own_ead(c, m->msg_no, ead, sizeof ead, &ead_len);
    if (rc)
        goto out;
    /* context_x as RFC 9528 says, or as the deployed device builds it when
     * this side emulates one (a test aid, edhoc_config.emulate). What is
     * sent below stays as the RFC says either way. A message_3 after a
     * message_2 accepted by tolerating deviations is built as the peer
     * built context_2 (dev_found): such a device verifies MAC_3 over its
     * own context_3, and tolerating it on receive alone left the
     * handshake to fail on its side. */
    struct edhoc_context_in rfc = {
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
    deviate &= edhoc_deviations_applicable(&rfc);
    if (m->msg_no == 3 && s->dev_tolerated)
        s->dev_followed = (uint8_t)deviate;
    struct edhoc_context_in used;
    edhoc_context_deviate(&rfc, deviate, &used);
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
    edhoc_trace(s, m->plaintext, pt, *pt_len);
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
static int check_context(struct edhoc_session *s, const struct edhoc_auth_msg *m, bool static_dh,
                         const uint8_t *prk, const struct edhoc_context_in *in,
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
static long diagnose(struct edhoc_session *s, const struct edhoc_auth_msg *m, bool static_dh,
                     const uint8_t *prk, const struct edhoc_context_in *rfc, unsigned own,
                     const struct edhoc_received *rx, const struct edhoc_cred *cred,
                     uint8_t *context, size_t cap)
{
    unsigned applicable = edhoc_deviations_applicable(rfc);
    long found = -1;
    s->flags |= EDHOC_SF_QUIET;
    for (size_t i = 0; i < sizeof diagnosis_candidates / sizeof diagnosis_candidates[0]; i++) {
        unsigned c = diagnosis_candidates[i];
        if ((c & ~applicable) || c == own)
            continue;
        struct edhoc_context_in alt;
        edhoc_context_deviate(rfc, c, &alt);
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
    if (edhoc_cred_is_bstr(rfc->cred, rfc->cred_len, &inner, &inner_len))
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
static int verify_peer(struct edhoc_session *s, const struct edhoc_auth_msg *m,
                       const struct edhoc_received *rx, const struct edhoc_cred *cred)
{
    if (!cred)
        return EDHOC_ERR_UNKNOWN_CREDENTIAL;
    if (!cred->cred || cred->cred_len == 0 || rx->plaintext_len > sizeof rx->plaintext)
        return EDHOC_ERR_CREDENTIAL;
    bool sdh = edhoc_static_dh_sender(s->method, m->msg_no);
    if (sdh && cred->curve != edhoc_suite_of(s)->ecdh_curve)
        return EDHOC_ERR_CREDENTIAL;

    /* Only C_R is in a context: C_I is not in context_3 (Section 5.4.2),
     * and TH_2 = H(G_Y, H(message_1)) covers C_I in the bytes of message_1
     * as sent, so a peer's own encoding of C_I reaches no MAC. */
    struct edhoc_context_in rfc = {
        .c_r = m->msg_no == 2 ? s->peer_cid : NULL,
        .c_r_len = s->peer_cid_len,
        .id_cred = rx->id_cred,
        .id_cred_len = rx->id_cred_len,
        .cred = cred->cred,
        .cred_len = cred->cred_len,
        .ead = rx->plaintext + rx->ead_off,
        .ead_len = rx->ead_len,
    };
    unsigned own = s->cfg->emulate & edhoc_deviations_applicable(&rfc);
    struct edhoc_context_in used;
    edhoc_context_deviate(&rfc, own, &used);

    uint8_t prk_next[EDHOC_CRYPTO_MAX_HASH];
    uint8_t context[EDHOC_MAX_TRANSCRIPT];
    int rc = edhoc_derive_auth_prk(s, m, sdh, s->eph_priv, cred->pub, cred->pub_len, prk_next);
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
        rc = edhoc_advance_key_schedule(s, m, rx->plaintext, rx->plaintext_len, cred, prk_next);
    edhoc_wipe(prk_next, sizeof prk_next);
    return rc;
}

/* The public verify step of either role: the state check, verify_peer,
 * then the next state. */
int edhoc_verify_step(struct edhoc_session *s, const struct edhoc_received *rx,
                      const struct edhoc_cred *cred, enum edhoc_role role,
                      enum edhoc_state expected, const struct edhoc_auth_msg *m,
                      enum edhoc_step step, enum edhoc_state next)
{
    if (!s || !s->cfg || !rx)
        return EDHOC_ERR_ARG;
    if (s->role != role || s->state != expected)
        return EDHOC_ERR_STATE;
    if (!received_consistent(rx))
        return EDHOC_ERR_ARG;
    int rc = verify_peer(s, m, rx, cred);
    if (rc)
        return edhoc_fail(s, rc, step);
    s->state = (uint8_t)next;
    return 0;
}

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

/* process, resolve the received ID_CRED to a credential, verify (which
 * reports an unknown credential itself). */
int edhoc_handle_message(struct edhoc_session *s, const uint8_t *msg, size_t len,
                         struct edhoc_received *rx, edhoc_cred_resolver resolve, void *resolve_ctx,
                         edhoc_process_fn process, edhoc_verify_fn verify,
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
        edhoc_received_wipe(rx);
        return edhoc_fail(s, rc, verify_step);
    }
    rc = verify(s, rx, cred);
    if (rc)
        edhoc_received_wipe(rx);
    return rc;
}
