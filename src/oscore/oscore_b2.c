/*
 * RFC 8613 Appendix B.2: a new security context derived from the same
 * Master Secret, Master Salt and Sender/Recipient IDs with a fresh random
 * ID Context, after an endpoint lost its mutable state.
 *
 *    Client                                    Server
 *    request #1, ID Context ID1 ------------> 2. verify with ID1, draw R2
 *    3. verify with R2 || ID1 <-------------- 4.01, kid context R2
 *       draw R3                                  (protected with R2 || ID1)
 *    request #2, ID Context R2 || R3 -------> 4. R2 pending? verify with R2 || R3
 *    5. verify with R2 || R3 <--------------- response #2 (R2 || R3)
 *
 * Everything here is a function of message bytes, the immutable inputs
 * (struct oscore_config) and the small state structs; the caller owns
 * sockets, clocks (now_ms) and where contexts are kept. Intermediate
 * contexts (ID1 and ID2) live on the stack and are wiped before return.
 */
#include "edhoc/oscore.h"

#include <stdlib.h>
#include <string.h>

#include "edhoc/coap_msg.h"
#include "oscore_internal.h"

static bool valid_r_len(size_t r_len)
{
    return r_len < OSCORE_MAX_ID_CONTEXT;
}

/* The 'kid context' of a message's OSCORE option; false when it has none
 * (or the message is no OSCORE message). */
static bool kid_context_of(const uint8_t *msg, size_t len, struct oscore_option *o)
{
    return msg && oscore_message_option(msg, len, o) == 0 && o->has_kid_context;
}

/* ---- Client ---- */

int oscore_b2_client_init(struct oscore_b2_client *st, size_t r_len)
{
    if (!st || !valid_r_len(r_len))
        return OSCORE_ERR_INVALID;
    edhoc_wipe(st, sizeof *st);
    st->state = OSCORE_B2_CLIENT_IDLE;
    st->r_len = (uint8_t)(r_len ? r_len : OSCORE_B2_NONCE_LEN);
    return 0;
}

int oscore_b2_client_start(struct oscore_b2_client *st, const struct edhoc_crypto_ops *crypto,
                           const struct oscore_config *cfg, struct oscore_context *first)
{
    if (!st || !crypto || !crypto->random || !cfg || !first || st->r_len == 0 ||
        !valid_r_len(st->r_len))
        return OSCORE_ERR_INVALID;
    if (st->state != OSCORE_B2_CLIENT_IDLE)
        return OSCORE_ERR_UNEXPECTED;
    /* Step 1: "it generates a random string R1 and uses this as ID Context
     * together with the input parameters shared with the server". */
    uint8_t r1[OSCORE_MAX_ID_CONTEXT];
    if (crypto->random(crypto->rng_ctx, r1, st->r_len) != 0)
        return OSCORE_ERR_CRYPTO;
    int rc = oscore_context_init_config_id(first, crypto, cfg, r1, st->r_len);
    if (rc)
        return rc;
    memcpy(st->id_context, r1, st->r_len);
    st->id_context_len = st->r_len;
    st->state = OSCORE_B2_CLIENT_SENT_R1;
    return 0;
}

bool oscore_b2_is_response1(const uint8_t *response, size_t len)
{
    struct oscore_option o;
    struct coap_msg m;
    return kid_context_of(response, len, &o) && edhoc_coap_msg_parse(response, len, &m) == 0 &&
           !edhoc_coap_code_is_request(m.code) && m.code != COAP_CODE_EMPTY;
}

long oscore_b2_client_response1(struct oscore_b2_client *st, const struct edhoc_crypto_ops *crypto,
                                const struct oscore_config *cfg,
                                const struct oscore_context *current, struct oscore_binding *b,
                                const uint8_t *response, size_t len, uint8_t *out, size_t cap,
                                struct oscore_context *next)
{
    if (!st || !crypto || !crypto->random || !cfg || !current || !b || !response || !out || !next ||
        st->r_len == 0 || !valid_r_len(st->r_len))
        return OSCORE_ERR_INVALID;
    if (st->state == OSCORE_B2_CLIENT_SENT_R3)
        return OSCORE_ERR_REPLAY; /* step 3 already ran for this run */
    if (st->state == OSCORE_B2_CLIENT_DONE)
        return OSCORE_ERR_UNEXPECTED;
    struct oscore_option o;
    if (!kid_context_of(response, len, &o) || o.kid_context_len == 0)
        return OSCORE_ERR_KID_CONTEXT;
    size_t id1_len = 0;
    const uint8_t *id1 = oscore_context_id_context(current, &id1_len);
    /* Step 3: "The client derives a second security context using ID
     * Context = ID2 = R2 || ID1" and then a third "from ID Context = ID3 =
     * R2 || R3"; both must fit a context. */
    if (o.kid_context_len + id1_len > OSCORE_MAX_ID_CONTEXT ||
        o.kid_context_len + st->r_len > OSCORE_MAX_ID_CONTEXT)
        return OSCORE_ERR_ID_CONTEXT_TOO_LONG;
    uint8_t id2[OSCORE_MAX_ID_CONTEXT], id3[OSCORE_MAX_ID_CONTEXT];
    memcpy(id2, o.kid_context, o.kid_context_len);
    if (id1_len)
        memcpy(id2 + o.kid_context_len, id1, id1_len);
    struct oscore_context second;
    int rc = oscore_context_init_config_id(&second, crypto, cfg, id2, o.kid_context_len + id1_len);
    if (rc)
        return rc;
    /* "If the client can verify the response (see Section 8.4) using the
     * second security context": the binding is the request's, so a
     * response #1 to another request does not verify (Appendix B.2.2). */
    struct oscore_binding tried = *b;
    long n = oscore_unprotect_response_b2(&second, &tried, response, len, out, cap, true);
    oscore_context_wipe(&second);
    if (n < 0)
        return n;
    /* Step 2 answers with a 4.01: the server did not perform request #1.
     * Any other code is not this protocol's. */
    if (out[1] != COAP_CODE_UNAUTHORIZED) {
        edhoc_wipe(out, (size_t)n);
        return OSCORE_ERR_UNEXPECTED;
    }
    memcpy(id3, o.kid_context, o.kid_context_len);
    if (crypto->random(crypto->rng_ctx, id3 + o.kid_context_len, st->r_len) != 0) {
        edhoc_wipe(out, (size_t)n);
        return OSCORE_ERR_CRYPTO;
    }
    size_t id3_len = o.kid_context_len + st->r_len;
    rc = oscore_context_init_config_id(next, crypto, cfg, id3, id3_len);
    if (rc) {
        edhoc_wipe(out, (size_t)n);
        return rc;
    }
    *b = tried;
    st->r2_len = (uint8_t)o.kid_context_len;
    memcpy(st->r2, o.kid_context, o.kid_context_len);
    st->id_context_len = (uint8_t)id3_len;
    memcpy(st->id_context, id3, id3_len);
    st->state = OSCORE_B2_CLIENT_SENT_R3;
    return n;
}

long oscore_b2_client_response2(struct oscore_b2_client *st, struct oscore_context *next,
                                struct oscore_binding *b, const uint8_t *response, size_t len,
                                uint8_t *out, size_t cap)
{
    if (!st || !next || !b || !response || !out)
        return OSCORE_ERR_INVALID;
    if (st->state == OSCORE_B2_CLIENT_DONE)
        return OSCORE_ERR_REPLAY;
    if (st->state != OSCORE_B2_CLIENT_SENT_R3)
        return OSCORE_ERR_UNEXPECTED;
    /* A second response #1: the server refused request #2 and started
     * over. Following it again could go on forever (Appendix B.2.1 on runs
     * that do not converge); the caller decides. */
    struct oscore_option o;
    if (kid_context_of(response, len, &o))
        return OSCORE_ERR_KID_CONTEXT;
    long n = oscore_unprotect_response(next, b, response, len, out, cap);
    if (n < 0)
        return n;
    /* Step 5: "the client marks the third security context to be used
     * with this server". */
    st->state = OSCORE_B2_CLIENT_DONE;
    return n;
}

/* ---- Server ---- */

int oscore_b2_server_init(struct oscore_b2_server *st, size_t r_len)
{
    if (!st || !valid_r_len(r_len))
        return OSCORE_ERR_INVALID;
    edhoc_wipe(st, sizeof *st);
    st->r_len = (uint8_t)(r_len ? r_len : OSCORE_B2_NONCE_LEN);
    return 0;
}

static bool slot_live(const struct oscore_b2_server *st, unsigned i, uint64_t now_ms)
{
    return (st->pending >> i & 1u) && now_ms - st->issued_ms[i] < OSCORE_B2_PENDING_MS &&
           now_ms >= st->issued_ms[i];
}

/* The pending slot whose R2 starts kid_context, or -1. R2 is public (it
 * travels in clear), so an ordinary comparison is fine. */
static int pending_slot(const struct oscore_b2_server *st, const struct oscore_option *o,
                        uint64_t now_ms)
{
    if (!o->has_kid_context || o->kid_context_len <= st->r_len)
        return -1;
    for (unsigned i = 0; i < OSCORE_B2_MAX_PENDING; i++) {
        if (slot_live(st, i, now_ms) && memcmp(st->r2[i], o->kid_context, st->r_len) == 0)
            return (int)i;
    }
    return -1;
}

bool oscore_b2_server_is_request2(const struct oscore_b2_server *st, const uint8_t *request,
                                  size_t len, uint64_t now_ms)
{
    struct oscore_option o;
    return st && kid_context_of(request, len, &o) && pending_slot(st, &o, now_ms) >= 0;
}

static bool kid_is(const struct oscore_config *cfg, const struct oscore_option *o)
{
    return o->has_kid && o->kid_len == cfg->recipient_id_len &&
           (o->kid_len == 0 || memcmp(o->kid, cfg->recipient_id, o->kid_len) == 0);
}

long oscore_b2_server_request1(struct oscore_b2_server *st, const struct edhoc_crypto_ops *crypto,
                               const struct oscore_config *cfg, const uint8_t *request, size_t len,
                               uint64_t now_ms, uint8_t *out, size_t cap)
{
    if (!st || !crypto || !crypto->random || !cfg || !request || !out || st->r_len == 0 ||
        !valid_r_len(st->r_len))
        return OSCORE_ERR_INVALID;
    struct oscore_option o;
    int rc = oscore_message_option(request, len, &o);
    if (rc)
        return rc;
    if (!o.has_kid || o.piv_len == 0)
        return OSCORE_ERR_BAD_OPTION;
    if (!kid_is(cfg, &o))
        return OSCORE_ERR_CONTEXT_NOT_FOUND;
    /* Step 2: "using the received ID1 (transported in 'kid context') as ID
     * Context"; a request without one was made with the ID Context both
     * sides were given (Section 5.1 lets it be omitted). */
    const uint8_t *id1 = o.has_kid_context     ? o.kid_context
                         : cfg->has_id_context ? cfg->id_context
                                               : NULL;
    size_t id1_len = o.has_kid_context     ? o.kid_context_len
                     : cfg->has_id_context ? cfg->id_context_len
                                           : 0;
    if (id1_len > OSCORE_MAX_ID_CONTEXT)
        return OSCORE_ERR_CONTEXT_NOT_FOUND;
    if (st->r_len + id1_len > OSCORE_MAX_ID_CONTEXT)
        return OSCORE_ERR_ID_CONTEXT_TOO_LONG;
    int slot = -1;
    for (unsigned i = 0; i < OSCORE_B2_MAX_PENDING && slot < 0; i++) {
        if (!slot_live(st, i, now_ms))
            slot = (int)i;
    }
    if (slot < 0)
        return OSCORE_ERR_BUSY;

    /* "If the server is able to verify the request (see Section 8.2) with
     * the new derived first security context". The request is not
     * performed, so its plaintext only needs a scratch buffer. */
    struct oscore_context first, second;
    rc = oscore_context_init_config_id(&first, crypto, cfg, id1, id1_len);
    if (rc)
        return rc;
    uint8_t *scratch = malloc(len);
    if (!scratch) {
        oscore_context_wipe(&first);
        return OSCORE_ERR_NOMEM;
    }
    struct oscore_binding b;
    long n = oscore_unprotect_request(&first, request, len, scratch, len, &b);
    oscore_context_wipe(&first);
    edhoc_wipe(scratch, len);
    free(scratch);
    if (n < 0)
        return n;

    /* "the server generates a random string R2 and derives a second
     * security context with ID Context = ID2 = R2 || ID1. The server sends
     * a 4.01 (Unauthorized) response protected with the second security
     * context, containing R2 wrapped in a CBOR bstr as 'kid context', and
     * caches R2. R2 MUST NOT be reused": drawn fresh for every response,
     * it makes the second context's keys new, so the response may use the
     * request's nonce (Section 5 lets a response omit its Partial IV). */
    uint8_t r2[OSCORE_MAX_ID_CONTEXT], id2[OSCORE_MAX_ID_CONTEXT];
    if (crypto->random(crypto->rng_ctx, r2, st->r_len) != 0)
        return OSCORE_ERR_CRYPTO;
    memcpy(id2, r2, st->r_len);
    if (id1_len)
        memcpy(id2 + st->r_len, id1, id1_len);
    rc = oscore_context_init_config_id(&second, crypto, cfg, id2, st->r_len + id1_len);
    if (rc)
        return rc;
    struct coap_msg r;
    if (edhoc_coap_msg_parse(request, len, &r) != 0) {
        oscore_context_wipe(&second);
        return OSCORE_ERR_MALFORMED;
    }
    r.type = r.type == COAP_TYPE_CON ? COAP_TYPE_ACK : COAP_TYPE_NON;
    r.code = COAP_CODE_UNAUTHORIZED;
    r.option_count = 0;
    r.payload = NULL;
    r.payload_len = 0;
    uint8_t inner[4 + COAP_MSG_MAX_TOKEN];
    long ilen = edhoc_coap_msg_encode(&r, inner, sizeof inner);
    long out_len = ilen < 0 ? OSCORE_ERR_INVALID
                            : oscore_protect_response_kid_context(&second, &b, inner, (size_t)ilen,
                                                                  false, r2, st->r_len, out, cap);
    oscore_context_wipe(&second);
    if (out_len < 0)
        return out_len;
    memcpy(st->r2[slot], r2, st->r_len);
    st->issued_ms[slot] = now_ms;
    st->pending |= (uint8_t)(1u << slot);
    return out_len;
}

long oscore_b2_server_request2(struct oscore_b2_server *st, const struct edhoc_crypto_ops *crypto,
                               const struct oscore_config *cfg, const uint8_t *request, size_t len,
                               uint64_t now_ms, struct oscore_context *next, uint8_t *out,
                               size_t cap, struct oscore_binding *b)
{
    if (!st || !crypto || !cfg || !request || !next || !out || !b || st->r_len == 0 ||
        !valid_r_len(st->r_len))
        return OSCORE_ERR_INVALID;
    memset(next, 0, sizeof *next);
    struct oscore_option o;
    int rc = oscore_message_option(request, len, &o);
    if (rc)
        return rc;
    if (!o.has_kid_context)
        return OSCORE_ERR_KID_CONTEXT;
    if (!kid_is(cfg, &o))
        return OSCORE_ERR_CONTEXT_NOT_FOUND;
    /* Step 4: "where the first part of ID3 is identical to an R2 sent in a
     * previous response #1, which it has not received before ... The
     * server MUST NOT accept replayed request #2 messages." */
    int slot = pending_slot(st, &o, now_ms);
    if (slot < 0) {
        if (st->has_done && o.kid_context_len > st->r_len &&
            memcmp(st->done_r2, o.kid_context, st->r_len) == 0)
            return OSCORE_ERR_REPLAY;
        return OSCORE_ERR_KID_CONTEXT;
    }
    if (o.kid_context_len > OSCORE_MAX_ID_CONTEXT)
        return OSCORE_ERR_ID_CONTEXT_TOO_LONG;
    rc = oscore_context_init_config_id(next, crypto, cfg, o.kid_context, o.kid_context_len);
    if (rc)
        return rc;
    long n = oscore_unprotect_request(next, request, len, out, cap, b);
    if (n < 0) {
        oscore_context_wipe(next);
        return n;
    }
    /* "marks the third security context to be used with this client and
     * removes all instances of R2 associated to this security context
     * from the cache". */
    memcpy(st->done_r2, st->r2[slot], st->r_len);
    st->has_done = true;
    st->pending = 0;
    edhoc_wipe(st->r2, sizeof st->r2);
    memset(st->issued_ms, 0, sizeof st->issued_ms);
    return n;
}
