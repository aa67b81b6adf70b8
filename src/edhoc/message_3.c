/*
 * message_3 (RFC 9528 Section 5.4): prepared by I, processed and
 * verified by R.
 */
#include <string.h>

#include "edhoc_internal.h"

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
    int rc = edhoc_build_own_plaintext(s, &edhoc_auth_msg_3, prk_4e3m, pt, sizeof pt, &pt_len);
    if (!rc)
        rc = edhoc_seal(s, 3, pt, pt_len, out, cap, &total);
    if (!rc)
        rc = edhoc_advance_key_schedule(s, &edhoc_auth_msg_3, pt, pt_len, s->cfg->cred, prk_4e3m);
    edhoc_wipe(pt, sizeof pt);
    edhoc_wipe(prk_4e3m, sizeof prk_4e3m);
    if (rc)
        return edhoc_fail(s, rc, EDHOC_STEP_PREPARE_M3);
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
    int rc = edhoc_open_message(s, 3, msg, len, rx, &pt_len);
    if (!rc)
        rc = edhoc_plaintext_3_parse(rx->plaintext, pt_len, s->method, s->suite, rx);
    if (!rc)
        rc = edhoc_deliver_ead(s, 3, rx->plaintext + rx->ead_off, rx->ead_len);
    if (rc) {
        edhoc_received_wipe(rx);
        return edhoc_fail(s, rc, EDHOC_STEP_PROCESS_M3);
    }
    s->state = EDHOC_STATE_VERIFY_M3;
    return 0;
}

int edhoc_responder_verify_message_3(struct edhoc_session *s, const struct edhoc_received *rx,
                                     const struct edhoc_cred *cred_i)
{
    return edhoc_verify_step(s, rx, cred_i, EDHOC_RESPONDER, EDHOC_STATE_VERIFY_M3,
                             &edhoc_auth_msg_3, EDHOC_STEP_VERIFY_M3, EDHOC_STATE_COMPLETED);
}

int edhoc_responder_handle_message_3(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                     struct edhoc_received *rx, edhoc_cred_resolver resolve,
                                     void *resolve_ctx)
{
    return edhoc_handle_message(s, msg, len, rx, resolve, resolve_ctx,
                                edhoc_responder_process_message_3, edhoc_responder_verify_message_3,
                                EDHOC_STEP_VERIFY_M3);
}
