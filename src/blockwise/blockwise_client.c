/*
 * The block-wise client (RFC 7959): a request body sent block by block,
 * and a response body collected from its Block2 blocks.
 */
#include "edhoc/blockwise.h"

#include <stdlib.h>
#include <string.h>

#include "blockwise_internal.h"
#include "edhoc/coap_msg.h"

/* ---- Client ---- */

long edhoc_bw_request_block(const uint8_t *msg, size_t len, unsigned szx, uint32_t num,
                            uint8_t *out, size_t cap)
{
    if (!msg || !out || szx > 6 || num >= BLOCK_NUM_LIMIT)
        return EDHOC_BW_ERR_ARG;
    struct coap_msg m;
    /* Only a request has a body to send in Block1 blocks (an Empty message
     * with options would not even be CoAP). */
    if (edhoc_coap_msg_parse(msg, len, &m) != 0 || !edhoc_coap_code_is_request(m.code))
        return EDHOC_BW_ERR_MALFORMED;
    size_t bs = edhoc_block_size(szx);
    size_t offset = (size_t)num * bs;
    /* Block 0 exists even for an empty body: one final empty block. */
    if (num > 0 && offset >= m.payload_len)
        return 0;
    size_t n = bw_size_min(bs, m.payload_len - offset);
    struct edhoc_block b = {.num = num, .more = offset + n < m.payload_len, .szx = szx};
    static const uint16_t drop[] = {COAP_OPT_BLOCK1, COAP_OPT_SIZE1};
    struct out_msg o;
    bw_out_from(&o, &m);
    bw_out_copy_options(&o, &m, drop, 2);
    uint8_t bv[3], sv[4];
    int rc = bw_out_add(&o, COAP_OPT_BLOCK1, bv, edhoc_block_encode(&b, bv));
    /* Size1 on block 0 tells the server the whole size up front (RFC 7959
     * Section 4), so that it can refuse at once. */
    if (!rc && num == 0)
        rc =
            bw_out_add(&o, COAP_OPT_SIZE1, sv, edhoc_coap_uint_encode((uint32_t)m.payload_len, sv));
    if (rc)
        return rc;
    o.p1 = n ? m.payload + offset : NULL;
    o.l1 = n;
    return bw_out_write(&o, out, cap);
}

long edhoc_bw_request_next(const uint8_t *msg, size_t len, unsigned szx, uint32_t num, uint8_t *out,
                           size_t cap)
{
    if (!msg || !out || szx > 6 || num >= BLOCK_NUM_LIMIT)
        return EDHOC_BW_ERR_ARG;
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, len, &m) != 0 || !edhoc_coap_code_is_request(m.code))
        return EDHOC_BW_ERR_MALFORMED;
    static const uint16_t drop[] = {COAP_OPT_BLOCK1, COAP_OPT_SIZE1, COAP_OPT_BLOCK2};
    struct out_msg o;
    bw_out_from(&o, &m);
    bw_out_copy_options(&o, &m, drop, 3);
    /* In a request the M bit of Block2 is zero (RFC 7959 Section 2.4). */
    struct edhoc_block b = {.num = num, .more = false, .szx = szx};
    uint8_t bv[3];
    int rc = bw_out_add(&o, COAP_OPT_BLOCK2, bv, edhoc_block_encode(&b, bv));
    if (rc)
        return rc;
    return bw_out_write(&o, out, cap);
}

void edhoc_bw_collect_init(struct edhoc_bw_collect *c, size_t max_body)
{
    if (!c)
        return;
    memset(c, 0, sizeof *c);
    c->max_body = max_body ? max_body : EDHOC_BW_DEFAULT_MAX_BODY;
}

static int collect_reserve(struct edhoc_bw_collect *c, size_t need)
{
    if (need <= c->cap)
        return 0;
    size_t want = c->cap * 2;
    if (want < 256)
        want = 256;
    if (want > c->max_body)
        want = c->max_body;
    if (want < need)
        want = need;
    uint8_t *nb = realloc(c->body, want);
    if (!nb)
        return EDHOC_BW_ERR_NOMEM;
    c->body = nb;
    c->cap = want;
    return 0;
}

int edhoc_bw_collect_add(struct edhoc_bw_collect *c, const uint8_t *resp, size_t len)
{
    if (!c || !resp || c->done)
        return EDHOC_BW_ERR_ARG;
    struct coap_msg m;
    if (edhoc_coap_msg_parse(resp, len, &m) != 0 || (m.code >> 5) < 2)
        return EDHOC_BW_ERR_MALFORMED;
    struct block_view v;
    bw_view_blocks(&m, &v);
    if (v.n_block2 > 1 || (v.block2 && !v.b2_ok))
        return EDHOC_BW_ERR_MALFORMED;
    /* Size2 announces the whole body (RFC 7959 Section 4): refused before
     * anything is kept. */
    if (v.has_size2 && v.size2 > c->max_body)
        return EDHOC_BW_ERR_TOO_LARGE;

    if (!v.block2) {
        /* Not block-wise: the response is whole as it is, also in the
         * middle of a transfer (an error such as 4.08, or the server
         * answering with the whole representation). */
        if (m.payload_len > c->max_body)
            return EDHOC_BW_ERR_TOO_LARGE;
        c->len = 0;
        if (m.payload_len) {
            int rc = collect_reserve(c, m.payload_len);
            if (rc)
                return rc;
            memcpy(c->body, m.payload, m.payload_len);
        }
        c->len = m.payload_len;
        c->etag_len = 0;
        c->started = true;
        c->done = true;
        return 0;
    }

    const struct edhoc_block *b = &v.b2;
    size_t bs = edhoc_block_size(b->szx);
    size_t offset = (size_t)b->num * bs;
    /* Block 0 first; then the block that starts where the body so far
     * ends, in the size of block 0 or a smaller one (RFC 7959 Section 2.4:
     * the size of later blocks is that of the first response, and "A
     * server MUST use the block size indicated or a smaller size"). */
    if (!c->started ? b->num != 0 : (offset != c->len || b->szx > c->szx))
        return EDHOC_BW_ERR_ORDER;
    /* All blocks but the last have the full size (RFC 7959 Section 2.4:
     * "there may not be enough content to fill the last block (the one
     * returned with the M bit not set)"). */
    if ((b->more && m.payload_len != bs) || m.payload_len > bs)
        return EDHOC_BW_ERR_MALFORMED;
    /* ETag: each block must come from the representation of block 0 (RFC
     * 7959 Section 2.4: a client "MUST ... compare the ETag" of later
     * blocks with that of the first). An ETag is 1-8 bytes (RFC 7252
     * Section 5.10.6). */
    if (v.etag && (v.etag->len == 0 || v.etag->len > sizeof c->etag))
        return EDHOC_BW_ERR_MALFORMED;
    size_t etag_len = v.etag ? v.etag->len : 0;
    if (c->started &&
        (etag_len != c->etag_len || (etag_len && memcmp(v.etag->value, c->etag, etag_len) != 0)))
        return EDHOC_BW_ERR_ETAG;
    if (offset + m.payload_len > c->max_body)
        return EDHOC_BW_ERR_TOO_LARGE;
    if (m.payload_len) {
        int rc = collect_reserve(c, offset + m.payload_len);
        if (rc)
            return rc;
        memcpy(c->body + offset, m.payload, m.payload_len);
    }
    if (!c->started) {
        c->etag_len = etag_len;
        if (etag_len)
            memcpy(c->etag, v.etag->value, etag_len);
        c->started = true;
    }
    c->len = offset + m.payload_len;
    c->szx = b->szx;
    if (!b->more) {
        c->done = true;
        return 0;
    }
    c->next_num = (uint32_t)(c->len / bs);
    if (c->next_num >= BLOCK_NUM_LIMIT)
        return EDHOC_BW_ERR_TOO_LARGE;
    return 1;
}

long edhoc_bw_collect_message(const struct edhoc_bw_collect *c, const uint8_t *last_resp,
                              size_t len, uint8_t *out, size_t cap)
{
    if (!c || !last_resp || !out || !c->done)
        return EDHOC_BW_ERR_ARG;
    struct coap_msg m;
    if (edhoc_coap_msg_parse(last_resp, len, &m) != 0 || (m.code >> 5) < 2)
        return EDHOC_BW_ERR_MALFORMED;
    static const uint16_t drop[] = {COAP_OPT_BLOCK2, COAP_OPT_SIZE2};
    struct out_msg o;
    bw_out_from(&o, &m);
    bw_out_copy_options(&o, &m, drop, 2);
    o.p1 = c->body;
    o.l1 = c->len;
    return bw_out_write(&o, out, cap);
}

void edhoc_bw_collect_free(struct edhoc_bw_collect *c)
{
    if (!c)
        return;
    free(c->body);
    size_t max_body = c->max_body;
    memset(c, 0, sizeof *c);
    c->max_body = max_body;
}
