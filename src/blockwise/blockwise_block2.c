/*
 * The block-wise server's responses: a response body larger than a block
 * kept and served in Block2 blocks (RFC 7959 Section 2.4) with its ETag,
 * the requests for its later blocks, and the response to the last block of
 * a Block1 transfer (Section 2.5).
 */
#include "edhoc/blockwise.h"

#include <stdlib.h>
#include <string.h>

#include "blockwise_internal.h"
#include "edhoc/coap_msg.h"

long bw_write_kept_block(struct edhoc_bw_server *s, const struct bw_entry *k, struct out_msg *o,
                         size_t offset, unsigned szx, bool want_size2, const uint8_t *b1_value,
                         size_t b1_len, uint8_t *out, size_t cap, bool *more)
{
    struct coap_msg stored;
    if (edhoc_coap_msg_parse_body(k->opts, k->opts_len, &stored) != 0)
        return EDHOC_BW_ERR_MALFORMED;
    size_t bs = edhoc_block_size(szx);
    struct edhoc_block blk = {
        .num = (uint32_t)(offset / bs), .more = offset + bs < k->body_len, .szx = szx};
    uint8_t bv[3], sv[4];
    o->code = k->code;
    o->nopts = 0;
    bw_out_copy_options(o, &stored, NULL, 0);
    int rc = bw_out_add(o, COAP_OPT_BLOCK2, bv, edhoc_block_encode(&blk, bv));
    /* Size2 with block 0, and whenever asked for with Size2 0 (RFC 7959
     * Section 4). */
    if (!rc && (blk.num == 0 || want_size2))
        rc = bw_out_add(o, COAP_OPT_SIZE2, sv, edhoc_coap_uint_encode((uint32_t)k->body_len, sv));
    if (!rc && b1_value)
        rc = bw_out_add(o, COAP_OPT_BLOCK1, b1_value, b1_len);
    if (rc)
        return rc;
    o->p1 = k->body + offset;
    o->l1 = bw_size_min(bs, k->body_len - offset);
    o->p2 = NULL;
    o->l2 = 0;
    long n = bw_out_write(o, out, cap);
    if (n >= 0) {
        s->st.served_blocks++;
        *more = blk.more;
    }
    return n;
}

int bw_block2_request(struct edhoc_bw_server *s, const char *peer, const struct coap_msg *m,
                      const struct block_view *v, uint64_t now_ms, uint8_t *out, size_t cap,
                      size_t *out_len)
{
    size_t peer_len = strlen(peer);
    uint64_t ph = bw_peer_hash(s, peer, peer_len);
    struct bw_peer *p = bw_peer_find(s, peer, peer_len, ph);
    if (!p)
        return EDHOC_BW_PASS;
    struct bw_entry *k = bw_entry_find(p, ENTRY_KEPT, bw_key_hash(s, m), m);
    if (!k)
        return EDHOC_BW_PASS;
    size_t offset = (size_t)v->b2.num * edhoc_block_size(v->b2.szx);
    if (offset >= k->body_len)
        return bw_reply_incomplete(s, m, out, cap, out_len);
    unsigned szx = bw_serve_szx(v->b2.szx, k->szx);
    struct out_msg o;
    bw_out_reply(&o, m, k->code);
    bool more = false;
    long n = bw_write_kept_block(s, k, &o, offset, szx, v->has_size2 && v->size2 == 0, NULL, 0, out,
                                 cap, &more);
    if (n < 0)
        return (int)n;
    bw_touch(s, k, now_ms);
    /* Served to the end: dropped first when room is needed, kept
     * otherwise so that a repeated request for the last block is still
     * answered. */
    if (!more)
        bw_set_droppable(s, k);
    *out_len = (size_t)n;
    return EDHOC_BW_REPLY;
}

/* ---- Server: responses ---- */

/* The largest SZX whose size is at most block_size, or -1 below 16. */
static int szx_at_most(size_t block_size)
{
    if (block_size < 16)
        return -1;
    int szx = 0;
    while (szx < 6 && edhoc_block_size((unsigned)szx + 1) <= block_size)
        szx++;
    return szx;
}

/* Stores the response's code and options for later blocks: without
 * Block1, Block2 and Size2 (added per block), with the ETag given. */
static int keep_body(struct edhoc_bw_server *s, const char *peer, size_t peer_len, uint64_t ph,
                     const struct coap_msg *req, uint64_t kh, const struct coap_msg *resp,
                     const uint8_t *etag, size_t etag_len, unsigned szx, uint64_t now_ms,
                     struct bw_entry **kept)
{
    static const uint16_t drop[] = {COAP_OPT_BLOCK1, COAP_OPT_BLOCK2, COAP_OPT_SIZE2};
    struct out_msg o;
    bw_out_from(&o, resp);
    bw_out_copy_options(&o, resp, drop, 3);
    /* Every block adds Block2 and maybe Size2 and the Block1 echo: refused
     * now rather than on each block when they would not fit the codec. */
    if (o.nopts + (etag ? 1u : 0u) + 3u > COAP_MSG_MAX_OPTIONS)
        return EDHOC_BW_ERR_MALFORMED;
    if (etag)
        bw_out_add(&o, COAP_OPT_ETAG, etag, etag_len);
    long olen = edhoc_coap_msg_encode_body(o.opts, o.nopts, NULL, 0, NULL, 0);
    if (olen < 0)
        return EDHOC_BW_ERR_MALFORMED;

    struct bw_entry *old = bw_entry_find(bw_peer_find(s, peer, peer_len, ph), ENTRY_KEPT, kh, req);
    if (old)
        bw_entry_free(s, old); /* replaced by the new representation */
    size_t need = bw_entry_bytes(req) + (size_t)olen + resp->payload_len;
    if (!bw_make_room(s, peer, peer_len, ph, 1, need, true, NULL))
        return EDHOC_BW_ERR_TOO_LARGE; /* answered 5.03 */
    struct bw_entry *k = bw_entry_new(s, peer, peer_len, ph, ENTRY_KEPT, req, kh, now_ms);
    if (!k)
        return EDHOC_BW_ERR_NOMEM;
    k->opts = malloc(olen ? (size_t)olen : 1);
    k->body = malloc(resp->payload_len);
    if (!k->opts || !k->body) {
        bw_entry_free(s, k);
        return EDHOC_BW_ERR_NOMEM;
    }
    edhoc_coap_msg_encode_body(o.opts, o.nopts, NULL, 0, k->opts, (size_t)olen);
    k->opts_len = (size_t)olen;
    memcpy(k->body, resp->payload, resp->payload_len);
    k->body_len = k->body_cap = resp->payload_len;
    k->held += (size_t)olen + resp->payload_len;
    s->st.bytes_held += (size_t)olen + resp->payload_len;
    k->code = resp->code;
    k->szx = szx;
    *kept = k;
    return 0;
}

static long write_busy(struct edhoc_bw_server *s, const struct coap_msg *resp, uint8_t *out,
                       size_t cap)
{
    s->st.refused_busy++;
    struct out_msg o;
    bw_out_from(&o, resp);
    uint8_t v[4];
    bw_busy_message(&o, v);
    return bw_out_write(&o, out, cap);
}

long edhoc_bw_server_response(struct edhoc_bw_server *s, const char *peer, const uint8_t *request,
                              size_t req_len, const uint8_t *response, size_t resp_len,
                              size_t block_size, uint64_t now_ms, uint8_t *out, size_t cap)
{
    if (!s || !peer || !request || !response || !out)
        return EDHOC_BW_ERR_ARG;
    int srv_szx = szx_at_most(block_size);
    if (srv_szx < 0)
        return EDHOC_BW_ERR_ARG;
    edhoc_bw_server_expire(s, now_ms);
    struct coap_msg req, resp;
    if (edhoc_coap_msg_parse(request, req_len, &req) != 0 ||
        !edhoc_coap_code_is_request(req.code) ||
        edhoc_coap_msg_parse(response, resp_len, &resp) != 0 || (resp.code >> 5) < 2)
        return EDHOC_BW_ERR_MALFORMED;
    struct block_view rv, pv;
    bw_view_blocks(&req, &rv);
    bw_view_blocks(&resp, &pv);
    size_t peer_len = strlen(peer);
    uint64_t ph = bw_peer_hash(s, peer, peer_len);
    struct bw_peer *p = bw_peer_find(s, peer, peer_len, ph);
    /* The common case, on every request: a peer with no transfer and a
     * response that fits one block goes out as it is. */
    if (!p && !rv.b2_ok && !pv.block2 && resp.payload_len <= edhoc_block_size((unsigned)srv_szx)) {
        if (resp_len > cap)
            return EDHOC_BW_ERR_BUFFER;
        memcpy(out, response, resp_len);
        return (long)resp_len;
    }
    uint64_t kh = bw_key_hash(s, &req);

    /* The response to a completed Block1 transfer carries its last Block1
     * with M 0 (RFC 7959 Section 2.3). The marker belongs to exactly the
     * message *whole was (its Message ID and token). */
    struct bw_entry *done = bw_find_done(p, kh, &req);
    uint8_t b1v[3];
    size_t b1_len = 0;
    bool echo_b1 = done && !pv.block1;
    if (echo_b1) {
        struct edhoc_block e = {.num = done->last_num, .more = false, .szx = done->szx};
        b1_len = edhoc_block_encode(&e, b1v);
    }

    /* A handler that did its own block-wise transfer is left alone. */
    bool asked = rv.b2_ok;
    unsigned szx = asked ? bw_serve_szx(rv.b2.szx, (unsigned)srv_szx) : (unsigned)srv_szx;
    size_t bs = edhoc_block_size(szx);
    size_t offset = asked ? (size_t)rv.b2.num * edhoc_block_size(rv.b2.szx) : 0;
    size_t plen = resp.payload_len;
    long n;
    if (pv.block2 || (plen <= bs && offset == 0)) {
        /* Fits one message: any body kept for this request is stale. */
        struct bw_entry *stale = bw_entry_find(p, ENTRY_KEPT, kh, &req);
        if (stale && !pv.block2)
            bw_entry_free(s, stale);
        if (!echo_b1) {
            if (resp_len > cap)
                return EDHOC_BW_ERR_BUFFER;
            memcpy(out, response, resp_len);
            n = (long)resp_len;
        } else {
            struct out_msg o;
            bw_out_from(&o, &resp);
            bw_out_copy_options(&o, &resp, NULL, 0);
            o.p1 = resp.payload;
            o.l1 = plen;
            int rc = bw_out_add(&o, COAP_OPT_BLOCK1, b1v, b1_len);
            if (rc)
                return rc;
            n = bw_out_write(&o, out, cap);
        }
        if (n >= 0 && done)
            bw_entry_free(s, done);
        return n;
    }
    if (plen > s->lim.max_body)
        return EDHOC_BW_ERR_TOO_LARGE;

    struct out_msg o;
    bw_out_from(&o, &resp);
    if (offset >= plen) {
        /* A block past the end of the body (RFC 7959 Section 2.9.2). */
        s->st.refused_incomplete++;
        o.code = CODE_REQUEST_INCOMPLETE;
        return bw_out_write(&o, out, cap);
    }

    /* An ETag tells representations apart (RFC 7959 Section 2.4); one is
     * made up when a success response has none (RFC 7252 Section 5.10.6
     * gives ETags to success responses only). It only has to differ
     * between the bodies a peer may see in turn: a counter from a seeded
     * start, offset by the peer. */
    uint8_t etag[ETAG_LEN];
    bool make_etag = !pv.etag && (resp.code >> 5) == 2;
    if (make_etag) {
        uint32_t t = (uint32_t)bw_mix64(s->seed ^ ph) + s->etag_counter++;
        for (unsigned i = 0; i < ETAG_LEN; i++)
            etag[i] = (uint8_t)(t >> (8 * (ETAG_LEN - 1 - i)));
    }
    bool more = offset + bs < plen;
    if (more) {
        struct bw_entry *k = NULL;
        int rc = keep_body(s, peer, peer_len, ph, &req, kh, &resp, make_etag ? etag : NULL,
                           ETAG_LEN, szx, now_ms, &k);
        if (rc == EDHOC_BW_ERR_TOO_LARGE)
            return write_busy(s, &resp, out, cap);
        if (rc)
            return rc;
        n = bw_write_kept_block(s, k, &o, offset, szx, rv.has_size2 && rv.size2 == 0,
                                echo_b1 ? b1v : NULL, b1_len, out, cap, &more);
    } else {
        /* The last block, served at once: nothing to keep. */
        struct bw_entry *stale = bw_entry_find(p, ENTRY_KEPT, kh, &req);
        if (stale)
            bw_entry_free(s, stale);
        static const uint16_t drop[] = {COAP_OPT_BLOCK2, COAP_OPT_SIZE2};
        bw_out_copy_options(&o, &resp, drop, 2);
        struct edhoc_block blk = {.num = (uint32_t)(offset / bs), .more = false, .szx = szx};
        uint8_t bv[3], sv[4];
        int rc = bw_out_add(&o, COAP_OPT_BLOCK2, bv, edhoc_block_encode(&blk, bv));
        if (!rc && make_etag)
            rc = bw_out_add(&o, COAP_OPT_ETAG, etag, ETAG_LEN);
        if (!rc && (blk.num == 0 || (rv.has_size2 && rv.size2 == 0)))
            rc = bw_out_add(&o, COAP_OPT_SIZE2, sv, edhoc_coap_uint_encode((uint32_t)plen, sv));
        if (!rc && echo_b1)
            rc = bw_out_add(&o, COAP_OPT_BLOCK1, b1v, b1_len);
        if (rc)
            return rc;
        o.p1 = resp.payload + offset;
        o.l1 = plen - offset;
        n = bw_out_write(&o, out, cap);
        if (n >= 0)
            s->st.served_blocks++;
    }
    /* Re-found: keep_body may have made room by dropping markers. */
    if (n >= 0 && echo_b1) {
        done = bw_find_done(bw_peer_find(s, peer, peer_len, ph), kh, &req);
        if (done)
            bw_entry_free(s, done);
    }
    return n;
}
