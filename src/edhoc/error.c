/*
 * EDHOC error messages (RFC 9528 Section 6) received and written, and
 * the text of the error that ended a session.
 */
#include <stdio.h>
#include <string.h>

#include "edhoc_internal.h"

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
        return edhoc_fail(s, rc, EDHOC_STEP_PEER_ERROR);
    if (s->role == EDHOC_INITIATOR && s->state == EDHOC_STATE_WAIT_M2 &&
        info->code == EDHOC_ERR_CODE_WRONG_SUITE) {
        /* Section 5.2.2: select our most preferred suite among SUITES_R;
         * never the one just rejected, which would loop. */
        int sel = edhoc_preferred_common(s->cfg, info->suites, info->n_suites);
        if (sel == EDHOC_NO_SUITE || sel == s->suite)
            return edhoc_fail(s, EDHOC_ERR_NO_COMMON_SUITE, EDHOC_STEP_PEER_ERROR);
        edhoc_wipe_secrets(s);
        s->retry_suite = (int8_t)sel;
        s->suite = EDHOC_NO_SUITE;
        s->flags &= (uint8_t) ~(EDHOC_SF_CID_SENT | EDHOC_SF_EXPLICIT_EPH);
        s->state = EDHOC_STATE_START;
        return 0;
    }
    return edhoc_fail(s, EDHOC_ERR_PEER_ERROR, EDHOC_STEP_PEER_ERROR);
}

static const char *step_name(int step)
{
    switch (step) {
    case EDHOC_STEP_PREPARE_M1: return "preparing message_1";
    case EDHOC_STEP_PROCESS_M1: return "message_1";
    case EDHOC_STEP_PREPARE_M2: return "preparing message_2";
    case EDHOC_STEP_PROCESS_M2: return "message_2";
    case EDHOC_STEP_VERIFY_M2: return "message_2 verification";
    case EDHOC_STEP_PREPARE_M3: return "preparing message_3";
    case EDHOC_STEP_PROCESS_M3: return "message_3";
    case EDHOC_STEP_VERIFY_M3: return "message_3 verification";
    case EDHOC_STEP_PREPARE_M4: return "preparing message_4";
    case EDHOC_STEP_PROCESS_M4: return "message_4";
    case EDHOC_STEP_PEER_ERROR: return "error message";
    default: return "EDHOC";
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
        edhoc_diagnosis_text(s, diag, sizeof diag);
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
