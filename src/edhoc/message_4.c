/*
 * message_4 (RFC 9528 Section 5.5): prepared by R, processed by I.
 */
#include <string.h>

#include "edhoc_internal.h"

int edhoc_responder_prepare_message_4(struct edhoc_session *s, uint8_t *out, size_t cap)
{
    if (!s || !s->cfg || !out)
        return EDHOC_ERR_ARG;
    if (s->role != EDHOC_RESPONDER || s->state != EDHOC_STATE_COMPLETED ||
        (s->flags & EDHOC_SF_M4_DONE))
        return EDHOC_ERR_STATE;
    uint8_t pt[EDHOC_MAX_EAD_SIZE];
    size_t pt_len = 0, total = 0;
    int rc = edhoc_own_ead(s->cfg, 4, pt, sizeof pt, &pt_len);
    if (!rc) {
        edhoc_trace(s, "PLAINTEXT_4", pt, pt_len);
        rc = edhoc_seal(s, 4, pt, pt_len, out, cap, &total);
    }
    edhoc_wipe(pt, sizeof pt);
    if (rc)
        return edhoc_fail(s, rc, EDHOC_STEP_PREPARE_M4);
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
    int rc = edhoc_open_message(s, 4, msg, len, rx, &pt_len);
    if (rc) {
        edhoc_received_wipe(rx);
        return edhoc_fail(s, rc, step);
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
        rc = edhoc_deliver_ead(s, 4, rx->plaintext, pt_len);
    if (rc) {
        edhoc_received_wipe(rx);
        return edhoc_fail(s, rc, step);
    }
    s->flags |= EDHOC_SF_M4_DONE;
    edhoc_wipe(s->prk, sizeof s->prk);
    return 0;
}
