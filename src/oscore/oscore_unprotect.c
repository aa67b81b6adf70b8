/*
 * OSCORE (RFC 8613) unprotect: requests and responses opened and checked
 * (Section 8.2, 8.4), the replay window (Section 7.4), the outer and inner
 * parts merged back into one CoAP message. As on the protect side, a
 * plaintext is decrypted into a stack buffer when it fits, else into a heap
 * block of its own size, and wiped on every exit.
 */
#include <stdlib.h>
#include <string.h>

#include "edhoc/coap_msg.h"
#include "edhoc/oscore.h"
#include "oscore_internal.h"

/* ---- Unprotect ---- */

/* A decrypted plaintext: in small for the common sizes (no allocation per
 * message), else in a heap block of pt_len bytes. Every successful
 * open_payload is paired with opened_release, which wipes it. */
struct opened {
    uint8_t *pt;
    size_t pt_len;
    struct coap_msg inner; /* code, options and payload point into pt */
    uint8_t small[OSCORE_MAX_PLAINTEXT];
};

static void opened_release(struct opened *o)
{
    if (!o->pt)
        return;
    edhoc_wipe(o->pt, o->pt_len);
    if (o->pt != o->small)
        free(o->pt);
    o->pt = NULL;
    o->pt_len = 0;
}

/* Decrypt the payload of outer and parse the plaintext. */
static int open_payload(const struct oscore_context *c, const uint8_t *key,
                        const struct coap_msg *outer, const uint8_t *nonce, const uint8_t *aad,
                        size_t aad_len, bool is_request, struct opened *o)
{
    /* A payload must hold at least the tag and the code byte. */
    if (!outer->payload || outer->payload_len < (size_t)c->tag_len + 1)
        return OSCORE_ERR_BAD_OPTION;
    size_t pt_len = outer->payload_len - c->tag_len;
    o->pt = NULL;
    o->pt_len = 0;
    if (pt_len <= sizeof o->small) {
        o->pt = o->small;
    } else {
        /* No sender could have sealed more (and for CCM the AEAD cannot):
         * refuse before allocating or decrypting. */
        if (pt_len > oscore_context_max_plaintext(c))
            return OSCORE_ERR_TOO_LARGE;
        o->pt = malloc(pt_len);
        if (!o->pt)
            return OSCORE_ERR_NOMEM;
    }
    o->pt_len = pt_len;
    int rc = c->crypto->aead_decrypt(c->aead_alg, key, nonce, aad, aad_len, outer->payload,
                                     outer->payload_len, o->pt);
    if (rc != 0) {
        /* The backend wipes on failure; the release wipes again in case a
         * backend does not. */
        opened_release(o);
        return rc == EDHOC_CRYPTO_ERR_AUTH ? OSCORE_ERR_DECRYPT : OSCORE_ERR_CRYPTO;
    }
    uint8_t code = o->pt[0];
    bool code_ok =
        is_request ? edhoc_coap_code_is_request(code) : ((code >> 5) >= 2 && (code >> 5) <= 5);
    if (!code_ok || edhoc_coap_msg_parse_body(o->pt + 1, pt_len - 1, &o->inner) != 0 ||
        edhoc_coap_msg_find_option(&o->inner, COAP_OPT_OSCORE)) {
        opened_release(o);
        return OSCORE_ERR_INNER;
    }
    o->inner.code = code;
    return 0;
}

/* The decrypted message: outer header and token, inner code, the outer
 * Class U options merged with the inner options, inner payload. Outer
 * Class E options (and the OSCORE option) are discarded (8.2/8.4 step 1). */
static long assemble(const struct coap_msg *outer, const struct opened *o, uint8_t *out, size_t cap)
{
    struct coap_option opts[2 * COAP_MSG_MAX_OPTIONS];
    size_t n = 0;
    for (size_t i = 0; i < outer->option_count; i++) {
        /* The OSCORE option itself is consumed here (Section 8.2 step 1). */
        if (oscore_is_outer_only(outer->options[i].number) &&
            outer->options[i].number != COAP_OPT_OSCORE)
            opts[n++] = outer->options[i];
    }
    for (size_t i = 0; i < o->inner.option_count; i++)
        opts[n++] = o->inner.options[i];
    oscore_sort_options(opts, n);
    size_t head = 4u + outer->token_len;
    if (cap < head)
        return OSCORE_ERR_BUFFER;
    out[0] = (uint8_t)(0x40 | outer->type << 4 | outer->token_len);
    out[1] = o->inner.code;
    out[2] = (uint8_t)(outer->mid >> 8);
    out[3] = (uint8_t)outer->mid;
    memcpy(out + 4, outer->token, outer->token_len);
    long body = edhoc_coap_msg_encode_body(opts, n, o->inner.payload, o->inner.payload_len,
                                           out + head, cap - head);
    if (body < 0)
        return body == COAP_MSG_ERR_BUFFER ? OSCORE_ERR_BUFFER : OSCORE_ERR_INNER;
    return (long)head + body;
}

static int window_check(const struct oscore_context *c, uint64_t p)
{
    if (!(c->flags & CTX_WINDOW_STARTED) || p > c->window_top)
        return 0;
    uint64_t diff = c->window_top - p;
    if (diff >= c->window_size || (c->window_bits >> diff) & 1)
        return OSCORE_ERR_REPLAY;
    return 0;
}

static void window_update(struct oscore_context *c, uint64_t p)
{
    if (!(c->flags & CTX_WINDOW_STARTED)) {
        c->window_top = p;
        c->window_bits = 1;
        c->flags |= CTX_WINDOW_STARTED;
    } else if (p > c->window_top) {
        uint64_t shift = p - c->window_top;
        c->window_bits = shift >= 64 ? 0 : c->window_bits << shift;
        c->window_bits |= 1;
        c->window_top = p;
    } else {
        c->window_bits |= UINT64_C(1) << (c->window_top - p);
    }
}

/* Parse the message and its OSCORE option; common to both directions. */
int oscore_open_outer(const uint8_t *msg, size_t len, struct coap_msg *m, struct oscore_option *opt)
{
    int rc = edhoc_coap_msg_parse(msg, len, m);
    if (rc)
        return rc == COAP_MSG_ERR_TOO_MANY ? OSCORE_ERR_TOO_LARGE : OSCORE_ERR_MALFORMED;
    rc = oscore_find_option(m, opt);
    if (rc)
        return rc;
    /* An OSCORE message without payload is malformed (Section 2). */
    if (!m->payload)
        return OSCORE_ERR_BAD_OPTION;
    return 0;
}

long oscore_unprotect_request(struct oscore_context *c, const uint8_t *msg, size_t len,
                              uint8_t *out, size_t cap, struct oscore_binding *b)
{
    if (!c || !c->crypto || !msg || !out || !b)
        return OSCORE_ERR_INVALID;
    struct coap_msg m;
    struct oscore_option opt;
    int rc = oscore_open_outer(msg, len, &m, &opt);
    if (rc)
        return rc;
    if (!edhoc_coap_code_is_request(m.code))
        return OSCORE_ERR_MALFORMED;
    if (opt.piv_len == 0 || !opt.has_kid)
        return OSCORE_ERR_BAD_OPTION;
    if (opt.kid_len != c->recipient_id_len ||
        (opt.kid_len && memcmp(opt.kid, c->recipient_id, opt.kid_len) != 0))
        return OSCORE_ERR_CONTEXT_NOT_FOUND;
    if (opt.has_kid_context &&
        (!(c->flags & CTX_HAS_ID_CONTEXT) || opt.kid_context_len != c->id_context_len ||
         (opt.kid_context_len && memcmp(opt.kid_context, c->id_context, opt.kid_context_len) != 0)))
        return OSCORE_ERR_CONTEXT_NOT_FOUND;
    uint64_t p = oscore_piv_value(opt.piv, opt.piv_len);
    bool need_echo = (c->flags & CTX_NEED_ECHO) != 0;
    if (!need_echo) {
        rc = window_check(c, p);
        if (rc)
            return rc;
    }

    uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE];
    uint8_t aad[MAX_AAD];
    long aad_len =
        oscore_aad(c->aead_alg, opt.kid, opt.kid_len, opt.piv, opt.piv_len, aad, sizeof aad);
    if (aad_len < 0 || oscore_nonce(c, opt.kid, opt.kid_len, opt.piv, opt.piv_len, nonce))
        return OSCORE_ERR_BAD_OPTION;
    struct opened o;
    rc = open_payload(c, c->recipient_key, &m, nonce, aad, (size_t)aad_len, true, &o);
    if (rc)
        return rc;

    memset(b, 0, sizeof *b);
    b->flags = BIND_VALID;
    b->kid_len = (uint8_t)opt.kid_len;
    memcpy(b->kid, opt.kid, opt.kid_len);
    b->piv_len = (uint8_t)opt.piv_len;
    memcpy(b->piv, opt.piv, opt.piv_len);
    const struct coap_option *obs = edhoc_coap_msg_find_option(&o.inner, COAP_OPT_OBSERVE);
    uint32_t obs_value = 1;
    if (obs && edhoc_coap_option_uint(obs, &obs_value) == 0 && obs_value == 0)
        b->flags |= BIND_OBSERVE;

    if (need_echo) {
        /* Appendix B.1.2: only a request echoing our challenge proves to be
         * fresh; its Partial IV becomes the lower edge of the window. */
        const struct coap_option *echo = edhoc_coap_msg_find_option(&o.inner, COAP_OPT_ECHO);
        if (!(c->flags & CTX_ECHO_ISSUED) || !echo || echo->len != OSCORE_ECHO_LEN ||
            !edhoc_ct_equal(echo->value, c->echo, OSCORE_ECHO_LEN)) {
            opened_release(&o);
            return OSCORE_ERR_ECHO_REQUIRED;
        }
    }
    long n = assemble(&m, &o, out, cap);
    opened_release(&o);
    if (n < 0)
        return n;
    if (need_echo) {
        c->window_top = p;
        c->window_bits = c->window_size >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << c->window_size) - 1;
        c->flags |= CTX_WINDOW_STARTED;
        c->flags &= (uint8_t) ~(CTX_NEED_ECHO | CTX_ECHO_ISSUED);
        edhoc_wipe(c->echo, sizeof c->echo);
    } else {
        window_update(c, p);
    }
    return n;
}

long oscore_unprotect_response(struct oscore_context *c, struct oscore_binding *b,
                               const uint8_t *msg, size_t len, uint8_t *out, size_t cap)
{
    return oscore_unprotect_response_b2(c, b, msg, len, out, cap, false);
}

long oscore_unprotect_response_b2(struct oscore_context *c, struct oscore_binding *b,
                                  const uint8_t *msg, size_t len, uint8_t *out, size_t cap,
                                  bool response1)
{
    if (!c || !c->crypto || !b || !msg || !out || !(b->flags & BIND_VALID) ||
        b->kid_len > OSCORE_MAX_ID || b->piv_len == 0 || b->piv_len > OSCORE_MAX_PIV)
        return OSCORE_ERR_INVALID;
    struct coap_msg m;
    struct oscore_option opt;
    int rc = oscore_open_outer(msg, len, &m, &opt);
    if (rc)
        return rc;
    if (m.code == COAP_CODE_EMPTY || edhoc_coap_code_is_request(m.code))
        return OSCORE_ERR_MALFORMED;
    if ((b->flags & BIND_ANSWERED) && !(b->flags & BIND_OBSERVE))
        return OSCORE_ERR_REPLAY;
    /* Only response #1 of Appendix B.2 carries a 'kid context', and it is
     * protected with a context derived from it, never with the request's:
     * say so instead of failing to decrypt. */
    if (opt.has_kid_context && !response1)
        return OSCORE_ERR_KID_CONTEXT;

    uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE];
    if (opt.piv_len)
        rc = oscore_nonce(c, c->recipient_id, c->recipient_id_len, opt.piv, opt.piv_len, nonce);
    else
        rc = oscore_nonce(c, b->kid, b->kid_len, b->piv, b->piv_len, nonce);
    if (rc)
        return OSCORE_ERR_INVALID;
    uint8_t aad[MAX_AAD];
    long aad_len = oscore_aad(c->aead_alg, b->kid, b->kid_len, b->piv, b->piv_len, aad, sizeof aad);
    if (aad_len < 0)
        return OSCORE_ERR_INVALID;
    struct opened o;
    rc = open_payload(c, c->recipient_key, &m, nonce, aad, (size_t)aad_len, false, &o);
    if (rc)
        return rc;

    /* Section 7.4.1 / 8.4.2: notifications are ordered by Partial IV; at
     * most one comes without one, and it counts as the oldest. */
    bool notification = edhoc_coap_msg_find_option(&o.inner, COAP_OPT_OBSERVE) != NULL;
    uint64_t p = oscore_piv_value(opt.piv, opt.piv_len);
    if (notification) {
        if (!(b->flags & BIND_OBSERVE))
            rc = OSCORE_ERR_UNEXPECTED;
        else if (opt.piv_len == 0 &&
                 (b->flags & (BIND_NOPIV_NOTIF | BIND_HAVE_NOTIF | BIND_ANSWERED)))
            rc = OSCORE_ERR_REPLAY;
        else if (opt.piv_len && (b->flags & BIND_HAVE_NOTIF) && p <= b->notification_number)
            rc = OSCORE_ERR_REPLAY;
    } else if (b->flags & BIND_ANSWERED) {
        rc = OSCORE_ERR_REPLAY;
    }
    if (rc) {
        opened_release(&o);
        return rc;
    }
    long n = assemble(&m, &o, out, cap);
    opened_release(&o);
    if (n < 0)
        return n;
    if (notification) {
        if (opt.piv_len) {
            b->notification_number = p;
            b->flags |= BIND_HAVE_NOTIF;
        } else {
            b->flags |= BIND_NOPIV_NOTIF;
        }
    } else {
        /* A final (non-notification) response ends the exchange. */
        b->flags |= BIND_ANSWERED;
        b->flags &= (uint8_t)~BIND_OBSERVE;
    }
    return n;
}
