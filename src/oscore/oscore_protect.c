/*
 * OSCORE (RFC 8613) protect: requests and responses sealed in one pass
 * (Section 8.1, 8.3), the sender sequence number reserved before use
 * (Appendix B.1.1), the binding of a response to its request, the Echo
 * challenge (Appendix B.1.2, RFC 9175) and the unprotected error
 * responses (Section 8.2, 8.4).
 *
 * The plaintext is built in a stack buffer of OSCORE_MAX_PLAINTEXT bytes,
 * or in a heap buffer of its own size when larger (a body reassembled from
 * blocks, up to OSCORE_MAX_MESSAGE). It is a separate buffer rather than
 * the caller's out buffer sealed in place because the ops table
 * (edhoc/crypto.h) does not promise that aead_encrypt/aead_decrypt accept
 * overlapping input and output, and the timing wrappers and test tables
 * stand in for the backend, so nothing here may rely on one backend's
 * in-place support. The copy costs little next to the AEAD, and the
 * allocation happens only above the fast path.
 */
#include <stdlib.h>
#include <string.h>

#include "edhoc/coap_msg.h"
#include "edhoc/oscore.h"
#include "oscore_internal.h"

/* ---- Sequence numbers ---- */

/* Make sure c->ssn may be used: below the limit, and covered by a stored
 * high-water mark when persistence is on (Appendix B.1.1, stored before
 * use, so a crash at any point never lets a restart go below it). */
static int reserve_ssn(struct oscore_context *c)
{
    if (c->ssn > OSCORE_SSN_MAX)
        return OSCORE_ERR_SSN_EXHAUSTED;
    if (c->reserve_ssn && c->ssn >= c->ssn_stored) {
        /* Another user of the context may have reserved the numbers after
         * ours: continue wherever the reservation starts. */
        uint64_t first = 0;
        if (c->reserve_ssn(c->store_user, c->ssn, c->ssn_freq, &first) != 0 || first < c->ssn)
            return OSCORE_ERR_PERSIST;
        if (first > OSCORE_SSN_MAX)
            return OSCORE_ERR_SSN_EXHAUSTED;
        c->ssn = first;
        c->ssn_stored = first + c->ssn_freq;
        if (c->ssn_stored > OSCORE_SSN_MAX + 1)
            c->ssn_stored = OSCORE_SSN_MAX + 1;
    }
    if (c->store_ssn && c->ssn >= c->ssn_stored) {
        uint64_t mark = c->ssn + c->ssn_freq;
        if (mark > OSCORE_SSN_MAX + 1)
            mark = OSCORE_SSN_MAX + 1;
        if (c->store_ssn(c->store_user, mark) != 0)
            return OSCORE_ERR_PERSIST;
        c->ssn_stored = mark;
    }
    return 0;
}

/* ---- Protect ---- */

struct seal {
    const uint8_t *oscore_value;
    size_t oscore_len;
    const uint8_t *nonce;
    const uint8_t *aad;
    size_t aad_len;
    uint8_t outer_code;
};

/* Write the OSCORE message: outer header of m, outer options with the
 * OSCORE option, payload = AEAD(plaintext). The plaintext is built in a
 * stack buffer when it fits (the per-message fast path: no allocation),
 * else in a heap buffer of exactly its size; both are wiped on every exit,
 * since the plaintext may be secret. */
static long seal_message(const struct oscore_context *c, const struct coap_msg *m,
                         struct oscore_split *s, const struct seal *z, uint8_t *out, size_t cap)
{
    uint8_t small[OSCORE_MAX_PLAINTEXT];
    uint8_t *heap = NULL;
    size_t heap_len = 0;
    uint8_t *pt = small;
    size_t small_used = 0; /* bytes of small that may hold plaintext */
    size_t pt_len = 0;
    long rc;
    long body = COAP_MSG_ERR_BUFFER;
    /* A payload that cannot fit skips the attempt instead of being copied
     * twice. */
    if (m->payload_len <= sizeof small - 2) {
        small[0] = m->code;
        small_used = sizeof small; /* the encoder may stop anywhere */
        body = edhoc_coap_msg_encode_body(s->inner, s->n_inner, m->payload, m->payload_len,
                                          small + 1, sizeof small - 1);
        if (body >= 0)
            small_used = 1 + (size_t)body;
    }
    if (body == COAP_MSG_ERR_BUFFER) {
        long need =
            edhoc_coap_msg_encode_body(s->inner, s->n_inner, m->payload, m->payload_len, NULL, 0);
        if (need < 0) {
            rc = OSCORE_ERR_INVALID;
            goto out;
        }
        /* Every bound is checked before allocating, so a message that
         * cannot be sent costs no allocation. */
        if ((size_t)need >= oscore_context_max_plaintext(c)) {
            rc = OSCORE_ERR_TOO_LARGE;
            goto out;
        }
        pt_len = 1 + (size_t)need;
        if (cap < 4u + m->token_len + 1 + pt_len + c->tag_len) {
            rc = OSCORE_ERR_BUFFER;
            goto out;
        }
        heap = malloc(pt_len);
        if (!heap) {
            rc = OSCORE_ERR_NOMEM;
            goto out;
        }
        heap_len = pt_len;
        pt = heap;
        pt[0] = m->code;
        body = edhoc_coap_msg_encode_body(s->inner, s->n_inner, m->payload, m->payload_len, pt + 1,
                                          pt_len - 1);
    }
    if (body < 0) {
        rc = OSCORE_ERR_INVALID;
        goto out;
    }
    pt_len = 1 + (size_t)body;

    /* The receiver parses at most COAP_MSG_MAX_OPTIONS options; refuse to
     * send what it could not read. */
    if (s->n_outer >= COAP_MSG_MAX_OPTIONS ||
        oscore_add_option(s->outer, &s->n_outer, MAX_OUTER_OPTS, COAP_OPT_OSCORE, z->oscore_value,
                          z->oscore_len) != 0) {
        rc = OSCORE_ERR_TOO_LARGE;
        goto out;
    }
    oscore_sort_options(s->outer, s->n_outer);

    size_t head = 4u + m->token_len;
    if (cap < head) {
        rc = OSCORE_ERR_BUFFER;
        goto out;
    }
    out[0] = (uint8_t)(0x40 | m->type << 4 | m->token_len);
    out[1] = z->outer_code;
    out[2] = (uint8_t)(m->mid >> 8);
    out[3] = (uint8_t)m->mid;
    memcpy(out + 4, m->token, m->token_len);
    long opts = edhoc_coap_msg_encode_body(s->outer, s->n_outer, NULL, 0, out + head, cap - head);
    if (opts < 0) {
        rc = opts == COAP_MSG_ERR_BUFFER ? OSCORE_ERR_BUFFER : OSCORE_ERR_INVALID;
        goto out;
    }
    size_t pos = head + (size_t)opts;
    if (cap - pos < 1 + pt_len + c->tag_len) {
        rc = OSCORE_ERR_BUFFER;
        goto out;
    }
    out[pos++] = 0xff;
    if (c->crypto->aead_encrypt(c->aead_alg, c->sender_key, z->nonce, z->aad, z->aad_len, pt,
                                pt_len, out + pos) != 0) {
        rc = OSCORE_ERR_CRYPTO;
        goto out;
    }
    rc = (long)(pos + pt_len + c->tag_len);
out:
    edhoc_wipe(small, small_used);
    if (heap) {
        edhoc_wipe(heap, heap_len);
        free(heap);
    }
    return rc;
}

long oscore_protect_request(struct oscore_context *c, const uint8_t *msg, size_t len, uint8_t *out,
                            size_t cap, struct oscore_binding *b)
{
    if (!c || !c->crypto || !msg || !out || !b)
        return OSCORE_ERR_INVALID;
    struct coap_msg m;
    int rc = edhoc_coap_msg_parse(msg, len, &m);
    if (rc)
        return rc == COAP_MSG_ERR_TOO_MANY ? OSCORE_ERR_TOO_LARGE : OSCORE_ERR_MALFORMED;
    if (!edhoc_coap_code_is_request(m.code))
        return OSCORE_ERR_INVALID;
    struct oscore_split s;
    rc = oscore_split_options(&m, true, &s);
    if (rc)
        return rc;
    rc = reserve_ssn(c);
    if (rc)
        return rc;

    uint8_t piv[OSCORE_MAX_PIV];
    size_t piv_len = oscore_piv_encode(c->ssn, piv);
    struct oscore_option opt = {
        .piv = piv,
        .piv_len = piv_len,
        .has_kid = true,
        .kid = c->sender_id,
        .kid_len = c->sender_id_len,
        .has_kid_context = (c->flags & CTX_HAS_ID_CONTEXT) != 0,
        .kid_context = c->id_context,
        .kid_context_len = c->id_context_len,
    };
    uint8_t optval[MAX_OPTION_VALUE];
    long optlen = oscore_option_encode(&opt, optval, sizeof optval);
    uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE];
    uint8_t aad[MAX_AAD];
    long aad_len =
        oscore_aad(c->aead_alg, c->sender_id, c->sender_id_len, piv, piv_len, aad, sizeof aad);
    if (optlen < 0 || aad_len < 0 ||
        oscore_nonce(c, c->sender_id, c->sender_id_len, piv, piv_len, nonce) != 0)
        return OSCORE_ERR_INVALID;

    const struct coap_option *obs = edhoc_coap_msg_find_option(&m, COAP_OPT_OBSERVE);
    struct seal z = {
        .oscore_value = optval,
        .oscore_len = (size_t)optlen,
        .nonce = nonce,
        .aad = aad,
        .aad_len = (size_t)aad_len,
        .outer_code = obs ? COAP_CODE_FETCH : COAP_CODE_POST,
    };
    long n = seal_message(c, &m, &s, &z, out, cap);
    if (n < 0)
        return n;

    c->ssn++;
    memset(b, 0, sizeof *b);
    b->flags = BIND_VALID;
    uint32_t obs_value = 1;
    if (obs && edhoc_coap_option_uint(obs, &obs_value) == 0 && obs_value == 0)
        b->flags |= BIND_OBSERVE;
    b->kid_len = c->sender_id_len;
    memcpy(b->kid, c->sender_id, c->sender_id_len);
    b->piv_len = (uint8_t)piv_len;
    memcpy(b->piv, piv, piv_len);
    return n;
}

int oscore_binding_from_request(struct oscore_binding *b, const uint8_t *protected_request,
                                size_t len)
{
    if (!b)
        return OSCORE_ERR_INVALID;
    struct coap_msg m;
    struct oscore_option opt;
    int rc = oscore_open_outer(protected_request, len, &m, &opt);
    if (rc)
        return rc;
    if (!edhoc_coap_code_is_request(m.code))
        return OSCORE_ERR_MALFORMED;
    if (opt.piv_len == 0 || !opt.has_kid || opt.kid_len > OSCORE_MAX_ID)
        return OSCORE_ERR_BAD_OPTION;
    memset(b, 0, sizeof *b);
    b->flags = BIND_VALID;
    b->kid_len = (uint8_t)opt.kid_len;
    memcpy(b->kid, opt.kid, opt.kid_len);
    b->piv_len = (uint8_t)opt.piv_len;
    memcpy(b->piv, opt.piv, opt.piv_len);
    /* The outer Observe carries the request's value (4.1.3.5.1). */
    const struct coap_option *obs = edhoc_coap_msg_find_option(&m, COAP_OPT_OBSERVE);
    uint32_t obs_value = 1;
    if (obs && edhoc_coap_option_uint(obs, &obs_value) == 0 && obs_value == 0)
        b->flags |= BIND_OBSERVE;
    return 0;
}

long oscore_protect_response(struct oscore_context *c, struct oscore_binding *b, const uint8_t *msg,
                             size_t len, bool with_piv, uint8_t *out, size_t cap)
{
    return oscore_protect_response_kid_context(c, b, msg, len, with_piv, NULL, 0, out, cap);
}

long oscore_protect_response_kid_context(struct oscore_context *c, struct oscore_binding *b,
                                         const uint8_t *msg, size_t len, bool with_piv,
                                         const uint8_t *kid_context, size_t kid_context_len,
                                         uint8_t *out, size_t cap)
{
    if (kid_context_len > OSCORE_MAX_ID_CONTEXT || (kid_context_len && !kid_context))
        return OSCORE_ERR_INVALID;
    if (!c || !c->crypto || !b || !msg || !out || !(b->flags & BIND_VALID) ||
        b->kid_len > OSCORE_MAX_ID || b->piv_len == 0 || b->piv_len > OSCORE_MAX_PIV)
        return OSCORE_ERR_INVALID;
    struct coap_msg m;
    int rc = edhoc_coap_msg_parse(msg, len, &m);
    if (rc)
        return rc == COAP_MSG_ERR_TOO_MANY ? OSCORE_ERR_TOO_LARGE : OSCORE_ERR_MALFORMED;
    /* Response classes 2-5 only: the receiver rejects anything else. */
    if ((m.code >> 5) < 2 || (m.code >> 5) > 5)
        return OSCORE_ERR_INVALID;
    struct oscore_split s;
    rc = oscore_split_options(&m, false, &s);
    if (rc)
        return rc;

    /* The request's nonce may protect one response only: reusing it again
     * under the same key would repeat a nonce. */
    bool own_piv = with_piv || (b->flags & BIND_NONCE_USED);
    uint8_t piv[OSCORE_MAX_PIV];
    size_t piv_len = 0;
    uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE];
    if (own_piv) {
        rc = reserve_ssn(c);
        if (rc)
            return rc;
        piv_len = oscore_piv_encode(c->ssn, piv);
        rc = oscore_nonce(c, c->sender_id, c->sender_id_len, piv, piv_len, nonce);
    } else {
        rc = oscore_nonce(c, b->kid, b->kid_len, b->piv, b->piv_len, nonce);
    }
    if (rc)
        return rc;
    struct oscore_option opt = {
        .piv = piv,
        .piv_len = piv_len,
        .has_kid_context = kid_context != NULL,
        .kid_context = kid_context,
        .kid_context_len = kid_context_len,
    };
    uint8_t optval[MAX_OPTION_VALUE];
    long optlen = oscore_option_encode(&opt, optval, sizeof optval);
    uint8_t aad[MAX_AAD];
    long aad_len = oscore_aad(c->aead_alg, b->kid, b->kid_len, b->piv, b->piv_len, aad, sizeof aad);
    if (optlen < 0 || aad_len < 0)
        return OSCORE_ERR_INVALID;
    struct seal z = {
        .oscore_value = optval,
        .oscore_len = (size_t)optlen,
        .nonce = nonce,
        .aad = aad,
        .aad_len = (size_t)aad_len,
        .outer_code = edhoc_coap_msg_find_option(&m, COAP_OPT_OBSERVE) ? COAP_CODE_CONTENT
                                                                       : COAP_CODE_CHANGED,
    };
    long n = seal_message(c, &m, &s, &z, out, cap);
    if (n < 0)
        return n;
    if (own_piv)
        c->ssn++;
    else
        b->flags |= BIND_NONCE_USED;
    return n;
}

/* Header fields of the answer to a request: CON is answered by a
 * piggybacked ACK, NON by a NON. */
static int answer_header(const uint8_t *request, size_t request_len, struct coap_msg *r)
{
    if (!request || edhoc_coap_msg_parse(request, request_len, r) != 0 ||
        !edhoc_coap_code_is_request(r->code))
        return OSCORE_ERR_MALFORMED;
    if (r->type == COAP_TYPE_CON)
        r->type = COAP_TYPE_ACK;
    else if (r->type != COAP_TYPE_NON)
        return OSCORE_ERR_MALFORMED;
    r->option_count = 0;
    r->payload = NULL;
    r->payload_len = 0;
    return 0;
}

long oscore_protect_echo_challenge(struct oscore_context *c, struct oscore_binding *b,
                                   const uint8_t *request, size_t request_len, uint8_t *out,
                                   size_t cap)
{
    if (!c || !c->crypto || !b || !out || !(b->flags & BIND_VALID) || !c->crypto->random)
        return OSCORE_ERR_INVALID;
    struct coap_msg r;
    int rc = answer_header(request, request_len, &r);
    if (rc)
        return rc;
    /* Keep the value already sent if the first answer got lost, so a
     * retry with it still works; otherwise draw a fresh one. */
    if (!(c->flags & CTX_ECHO_ISSUED)) {
        if (c->crypto->random(c->crypto->rng_ctx, c->echo, sizeof c->echo) != 0)
            return OSCORE_ERR_CRYPTO;
        c->flags |= CTX_ECHO_ISSUED;
    }
    r.code = COAP_CODE_UNAUTHORIZED;
    edhoc_coap_msg_add_option(&r, COAP_OPT_ECHO, c->echo, sizeof c->echo);
    uint8_t inner[4 + COAP_MSG_MAX_TOKEN + 4 + OSCORE_ECHO_LEN];
    long ilen = edhoc_coap_msg_encode(&r, inner, sizeof inner);
    if (ilen < 0)
        return OSCORE_ERR_INVALID;
    /* The server's own Partial IV is mandatory here (B.1.2). */
    return oscore_protect_response(c, b, inner, (size_t)ilen, true, out, cap);
}

long oscore_error_response(int err, const uint8_t *request, size_t request_len, uint8_t *out,
                           size_t cap)
{
    const char *diag;
    uint8_t code;
    switch (err) {
    case OSCORE_ERR_BAD_OPTION:
        code = COAP_CODE_BAD_OPTION;
        diag = "Failed to decode COSE";
        break;
    case OSCORE_ERR_CONTEXT_NOT_FOUND:
        code = COAP_CODE_UNAUTHORIZED;
        diag = "Security context not found";
        break;
    case OSCORE_ERR_DECRYPT:
    case OSCORE_ERR_INNER:
        code = COAP_CODE_BAD_REQUEST;
        diag = "Decryption failed";
        break;
    case OSCORE_ERR_REPLAY:
        code = COAP_CODE_UNAUTHORIZED;
        diag = "Replay detected";
        break;
    case OSCORE_ERR_KID_CONTEXT:
    case OSCORE_ERR_ID_CONTEXT_TOO_LONG:
        /* Section 8.2 step 2: no context for this kid and kid context. */
        code = COAP_CODE_UNAUTHORIZED;
        diag = "Security context not found";
        break;
    case OSCORE_ERR_BUSY:
        /* Appendix B.2.1: "If the server receives a request #1 and is not
         * capable of executing it then it may respond with an unprotected
         * 5.03 (Service Unavailable) error message." */
        code = COAP_CODE(5, 3);
        diag = "Service Unavailable";
        break;
    default: return OSCORE_ERR_INVALID;
    }
    if (!out)
        return OSCORE_ERR_INVALID;
    struct coap_msg r;
    int rc = answer_header(request, request_len, &r);
    if (rc)
        return rc;
    r.code = code;
    /* Outer Max-Age 0 (an empty uint): the error must not be cached by
     * intermediaries (Section 7.4, 8.2). */
    edhoc_coap_msg_add_option(&r, COAP_OPT_MAX_AGE, NULL, 0);
    r.payload = (const uint8_t *)diag;
    r.payload_len = strlen(diag);
    long n = edhoc_coap_msg_encode(&r, out, cap);
    return n < 0 ? OSCORE_ERR_BUFFER : n;
}
