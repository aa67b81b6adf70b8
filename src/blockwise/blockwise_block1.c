/*
 * The block-wise server's requests: a request body sent in Block1 blocks
 * reassembled (RFC 7959 Section 2.5, with the Request-Tag of RFC 9175
 * Section 3), the 2.31 / 4.08 / 4.13 / 5.03 replies, and the entry point
 * that sends a request for a later Block2 block to blockwise_block2.c.
 */
#include "edhoc/blockwise.h"

#include <stdlib.h>
#include <string.h>

#include "blockwise_internal.h"
#include "edhoc/coap_msg.h"

/* ---- Server: requests ---- */

static int finish_reply(const struct out_msg *o, uint8_t *out, size_t cap, size_t *out_len)
{
    long n = bw_out_write(o, out, cap);
    if (n < 0)
        return (int)n;
    *out_len = (size_t)n;
    return EDHOC_BW_REPLY;
}

int bw_reply_code(const struct coap_msg *req, uint8_t code, uint8_t *out, size_t cap,
                  size_t *out_len)
{
    struct out_msg o;
    bw_out_reply(&o, req, code);
    return finish_reply(&o, out, cap, out_len);
}

/* 4.13 with Size1 = the largest body accepted (RFC 7959 Section 2.9.3). */
static int reply_too_large(struct edhoc_bw_server *s, const struct coap_msg *req, uint8_t *out,
                           size_t cap, size_t *out_len)
{
    s->st.refused_too_large++;
    struct out_msg o;
    bw_out_reply(&o, req, CODE_TOO_LARGE);
    uint8_t v[4];
    size_t max = s->lim.max_body > UINT32_MAX ? UINT32_MAX : s->lim.max_body;
    bw_out_add(&o, COAP_OPT_SIZE1, v, edhoc_coap_uint_encode((uint32_t)max, v));
    return finish_reply(&o, out, cap, out_len);
}

void bw_busy_message(struct out_msg *o, uint8_t v[4])
{
    o->code = CODE_SERVICE_UNAVAILABLE;
    o->nopts = 0;
    o->p1 = o->p2 = NULL;
    o->l1 = o->l2 = 0;
    bw_out_add(o, COAP_OPT_MAX_AGE, v, edhoc_coap_uint_encode(BUSY_MAX_AGE_S, v));
}

/* 5.03 with Max-Age (RFC 9175 Section 3.3). */
static int reply_busy(struct edhoc_bw_server *s, const struct coap_msg *req, uint8_t *out,
                      size_t cap, size_t *out_len)
{
    s->st.refused_busy++;
    struct out_msg o;
    bw_out_reply(&o, req, CODE_SERVICE_UNAVAILABLE);
    uint8_t v[4];
    bw_busy_message(&o, v);
    return finish_reply(&o, out, cap, out_len);
}

int bw_reply_incomplete(struct edhoc_bw_server *s, const struct coap_msg *req, uint8_t *out,
                        size_t cap, size_t *out_len)
{
    s->st.refused_incomplete++;
    return bw_reply_code(req, CODE_REQUEST_INCOMPLETE, out, cap, out_len);
}

/* 2.31 Continue echoing the block (RFC 7959 Sections 2.3 and 2.9.1); the
 * client's SZX is kept, so the server asks for no other size. */
static int reply_continue(const struct coap_msg *req, const struct edhoc_block *b, uint8_t *out,
                          size_t cap, size_t *out_len)
{
    struct out_msg o;
    bw_out_reply(&o, req, CODE_CONTINUE);
    struct edhoc_block echo = {.num = b->num, .more = true, .szx = b->szx};
    uint8_t v[3];
    bw_out_add(&o, COAP_OPT_BLOCK1, v, edhoc_block_encode(&echo, v));
    return finish_reply(&o, out, cap, out_len);
}

/* The reassembled request: this block's header, token and options without
 * Block1 and Size1, the body in up to two pieces. */
static int make_whole(const struct coap_msg *m, const uint8_t *p1, size_t l1, const uint8_t *p2,
                      size_t l2, uint8_t **whole, size_t *whole_len)
{
    static const uint16_t drop[] = {COAP_OPT_BLOCK1, COAP_OPT_SIZE1};
    struct out_msg o;
    bw_out_from(&o, m);
    bw_out_copy_options(&o, m, drop, 2);
    o.p1 = p1;
    o.l1 = l1;
    o.p2 = p2;
    o.l2 = l2;
    return bw_out_alloc(&o, whole, whole_len);
}

/* A done marker for a single-block "transfer" (Block1 NUM 0, M 0), best
 * effort: without room the response just goes without the Block1 echo. */
static void remember_done(struct edhoc_bw_server *s, const char *peer, size_t peer_len, uint64_t ph,
                          const struct coap_msg *m, uint64_t kh, const struct edhoc_block *b,
                          uint64_t now_ms)
{
    if (!bw_make_room(s, peer, peer_len, ph, 1, bw_entry_bytes(m), false, NULL))
        return;
    struct bw_entry *e = bw_entry_new(s, peer, peer_len, ph, ENTRY_DONE, m, kh, now_ms);
    if (e)
        bw_make_done(s, e, m, b);
}

static int block1_request(struct edhoc_bw_server *s, const char *peer, const struct coap_msg *m,
                          const struct block_view *v, uint64_t now_ms, uint8_t **whole,
                          size_t *whole_len, uint8_t *out, size_t cap, size_t *out_len)
{
    const struct edhoc_block *b = &v->b1;
    size_t peer_len = strlen(peer);
    uint64_t ph = bw_peer_hash(s, peer, peer_len);
    uint64_t kh = bw_key_hash(s, m);
    struct bw_peer *p = bw_peer_find(s, peer, peer_len, ph);
    struct bw_entry *t = bw_entry_find(p, ENTRY_TRANSFER, kh, m);
    size_t bs = edhoc_block_size(b->szx);
    size_t offset = (size_t)b->num * bs; /* < 2^30: NUM < 2^20, size <= 2^10 */
    size_t plen = m->payload_len;

    /* Size1 announces the whole body (RFC 7959 Section 4): a body the
     * server will not take is refused before anything is kept (Section
     * 2.9.3). */
    if (v->has_size1 && v->size1 > s->lim.max_body) {
        if (t)
            bw_entry_free(s, t);
        return reply_too_large(s, m, out, cap, out_len);
    }
    /* Every block but the last has the block size (RFC 7959 Section 2.2:
     * the M bit "when set, indicates that there are one or more additional
     * blocks available"; Section 2.4: only "the last block (the one
     * returned with the M bit not set)" may not be filled), and no block
     * is larger: 4.00 Bad Request, as for other invalid requests (RFC 7252
     * Section 5.9.2.1). The transfer, if any, stays: the block was not
     * one of it. */
    if ((b->more && plen != bs) || plen > bs) {
        s->st.refused_bad_option++;
        return bw_reply_code(m, COAP_CODE_BAD_REQUEST, out, cap, out_len);
    }
    if (offset + plen > s->lim.max_body) {
        if (t)
            bw_entry_free(s, t);
        return reply_too_large(s, m, out, cap, out_len);
    }

    if (b->num == 0) {
        /* NUM 0 starts the body, and restarts it when a transfer exists
         * (RFC 9175 Section 3.3: a new initial Block1 request overwrites
         * the server's old state). */
        if (!b->more) {
            int rc = make_whole(m, m->payload, plen, NULL, 0, whole, whole_len);
            if (rc)
                return rc;
            if (t)
                bw_make_done(s, t, m, b);
            else
                remember_done(s, peer, peer_len, ph, m, kh, b, now_ms);
            s->st.completed++;
            return EDHOC_BW_WHOLE;
        }
        bool fresh = !t;
        if (fresh) {
            if (!bw_make_room(s, peer, peer_len, ph, 1, bw_entry_bytes(m) + bs, false, NULL))
                return reply_busy(s, m, out, cap, out_len);
            t = bw_entry_new(s, peer, peer_len, ph, ENTRY_TRANSFER, m, kh, now_ms);
            if (!t)
                return EDHOC_BW_ERR_NOMEM;
        }
        t->body_len = 0;
        int rc = bw_transfer_reserve(s, t, plen);
        if (rc) {
            if (fresh)
                bw_entry_free(s, t);
            return rc == EDHOC_BW_ERR_NOMEM ? rc : reply_busy(s, m, out, cap, out_len);
        }
        memcpy(t->body, m->payload, plen);
        t->body_len = plen;
        t->szx = b->szx;
        t->last_off = 0;
        t->last_len = plen;
        t->last_num = 0;
        bw_touch(s, t, now_ms);
        return reply_continue(m, b, out, cap, out_len);
    }

    /* A continuation needs its transfer; without one the server answers
     * 4.08 (RFC 7959 Section 2.9.2: the client "has not sent all blocks,
     * not sent them in the order required by the server, or has sent them
     * long enough ago that the server has already discarded them"). A
     * repeated final block after completion finds no transfer either and
     * is answered the same way. */
    if (!t)
        return bw_reply_incomplete(s, m, out, cap, out_len);

    /* The block size is that of block 0, or smaller once the client
     * heeded a preference (RFC 7959 Section 2.5: "use the block size
     * preferred by the server or a smaller one"; NUM then counts in the
     * new size). The block must start where the body so far ends. */
    if (b->szx <= t->szx && offset == t->body_len) {
        if (!b->more) {
            /* The final block: the request is whole. Built from the stored
             * part and this block (no need to grow the buffer), so a
             * failure leaves the transfer as it was. */
            int rc = make_whole(m, t->body, t->body_len, m->payload, plen, whole, whole_len);
            if (rc)
                return rc;
            bw_make_done(s, t, m, b);
            bw_touch(s, t, now_ms);
            s->st.completed++;
            return EDHOC_BW_WHOLE;
        }
        int rc = bw_transfer_reserve(s, t, offset + plen);
        if (rc)
            return rc == EDHOC_BW_ERR_NOMEM ? rc : reply_busy(s, m, out, cap, out_len);
        memcpy(t->body + offset, m->payload, plen);
        t->body_len = offset + plen;
        t->szx = b->szx;
        t->last_off = offset;
        t->last_len = plen;
        t->last_num = b->num;
        bw_touch(s, t, now_ms);
        return reply_continue(m, b, out, cap, out_len);
    }
    /* The block accepted last, again (its 2.31 was lost): answered again. */
    if (b->more && b->szx == t->szx && b->num == t->last_num && offset == t->last_off &&
        plen == t->last_len && memcmp(t->body + offset, m->payload, plen) == 0) {
        bw_touch(s, t, now_ms);
        return reply_continue(m, b, out, cap, out_len);
    }
    /* Out of order (RFC 7959 Section 2.5: "A server MAY also return a 4.08
     * error code for any (final or non-final) Block1 transfer that is not
     * in sequence"). The transfer stays for the block it expects. */
    return bw_reply_incomplete(s, m, out, cap, out_len);
}

/* Writes the block of a kept body that starts at byte offset, in blocks
 * of szx, into o (whose header is set). */
int edhoc_bw_server_request(struct edhoc_bw_server *s, const char *peer, const uint8_t *msg,
                            size_t len, uint64_t now_ms, uint8_t **whole, size_t *whole_len,
                            uint8_t *out, size_t cap, size_t *out_len)
{
    if (!s || !peer || !msg || !whole || !whole_len || !out || !out_len)
        return EDHOC_BW_ERR_ARG;
    *whole = NULL;
    *whole_len = 0;
    *out_len = 0;
    edhoc_bw_server_expire(s, now_ms);
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, len, &m) != 0)
        return EDHOC_BW_ERR_MALFORMED;
    /* Only requests (CON or NON) take part in block-wise transfers. */
    if (!edhoc_coap_code_is_request(m.code) || m.type > COAP_TYPE_NON)
        return EDHOC_BW_PASS;
    struct block_view v;
    bw_view_blocks(&m, &v);
    if (v.bad_option) {
        /* A critical option not understood: 4.02 (RFC 7252 Section 5.4.1). */
        s->st.refused_bad_option++;
        return bw_reply_code(&m, COAP_CODE_BAD_OPTION, out, cap, out_len);
    }
    if (v.reserved_szx) {
        /* RFC 7959 Section 2.2: SZX 7 "MUST lead to a 4.00 Bad Request
         * response code upon reception in a request". */
        s->st.refused_bad_option++;
        return bw_reply_code(&m, COAP_CODE_BAD_REQUEST, out, cap, out_len);
    }
    if (v.b1_ok)
        return block1_request(s, peer, &m, &v, now_ms, whole, whole_len, out, cap, out_len);
    if (v.b2_ok && v.b2.num > 0)
        return bw_block2_request(s, peer, &m, &v, now_ms, out, cap, out_len);
    return EDHOC_BW_PASS;
}
