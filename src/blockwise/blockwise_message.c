/*
 * Block-wise transfer (RFC 7959) with the Request-Tag of RFC 9175
 * Section 3, sans-I/O, on whole CoAP-over-UDP messages: what the server
 * (blockwise_table.c, blockwise_block1.c, blockwise_block2.c) and the
 * client (blockwise_client.c) share. Here: error texts, the Block1/Block2
 * option values (RFC 7959 Section 2.2), writing a message from its parts,
 * and reading what a message says about blocks.
 */
#include "edhoc/blockwise.h"

#include <stdlib.h>
#include <string.h>

#include "blockwise_internal.h"
#include "edhoc/coap_msg.h"

const char *edhoc_bw_strerror(int err)
{
    switch (err) {
    case 0: return "ok";
    case EDHOC_BW_ERR_MALFORMED: return "malformed message or block option";
    case EDHOC_BW_ERR_TOO_LARGE: return "body larger than the limit";
    case EDHOC_BW_ERR_ORDER: return "block other than the one expected";
    case EDHOC_BW_ERR_ETAG: return "representation changed during the transfer (ETag)";
    case EDHOC_BW_ERR_BUFFER: return "output buffer too small";
    case EDHOC_BW_ERR_NOMEM: return "out of memory";
    case EDHOC_BW_ERR_ARG: return "invalid argument";
    default: return "unknown block-wise error";
    }
}

/* ---- Block options ---- */

int edhoc_block_szx(size_t block_size)
{
    for (unsigned szx = 0; szx <= 6; szx++) {
        if (edhoc_block_size(szx) == block_size)
            return (int)szx;
    }
    return -1;
}

int edhoc_block_parse(const uint8_t *value, size_t len, struct edhoc_block *b)
{
    if (!b || len > 3 || (len > 0 && !value))
        return EDHOC_BW_ERR_MALFORMED;
    uint32_t v = 0;
    /* A uint may carry leading zero bytes (RFC 7252 Section 3.2). */
    for (size_t i = 0; i < len; i++)
        v = v << 8 | value[i];
    if ((v & 7u) == 7u)
        return EDHOC_BW_ERR_MALFORMED;
    b->num = v >> 4;
    b->more = (v >> 3) & 1u;
    b->szx = v & 7u;
    return 0;
}

size_t edhoc_block_encode(const struct edhoc_block *b, uint8_t out[3])
{
    /* Out-of-range fields are masked to their widths (NUM 20 bits, SZX 3
     * bits) so that the value always fits three bytes. */
    uint32_t v = (b->num & (BLOCK_NUM_LIMIT - 1)) << 4 | (b->more ? 8u : 0u) | (b->szx & 7u);
    uint8_t tmp[4];
    size_t n = edhoc_coap_uint_encode(v, tmp);
    memcpy(out, tmp, n);
    return n;
}

/* ---- Building messages ---- */

void bw_out_from(struct out_msg *o, const struct coap_msg *m)
{
    o->type = m->type;
    o->code = m->code;
    o->mid = m->mid;
    o->token_len = m->token_len;
    o->token = m->token;
    o->nopts = 0;
    o->p1 = o->p2 = NULL;
    o->l1 = o->l2 = 0;
}

/* A reply to request m: piggybacked (ACK) for a CON, NON for a NON (RFC
 * 7252 Sections 5.2.1 and 5.2.3), with its Message ID and token. A NON
 * reply should carry a fresh Message ID; the engine has none to give and
 * the transport assigns the Message IDs of NON messages it sends. */
void bw_out_reply(struct out_msg *o, const struct coap_msg *req, uint8_t code)
{
    bw_out_from(o, req);
    o->type = req->type == COAP_TYPE_CON ? COAP_TYPE_ACK : COAP_TYPE_NON;
    o->code = code;
}

/* Inserts after options with a number <= number, so that repeated options
 * keep their order. Refuses what the codec could not parse back. */
int bw_out_add(struct out_msg *o, uint16_t number, const uint8_t *value, size_t len)
{
    if (o->nopts == COAP_MSG_MAX_OPTIONS)
        return EDHOC_BW_ERR_MALFORMED;
    size_t i = o->nopts;
    while (i > 0 && o->opts[i - 1].number > number) {
        o->opts[i] = o->opts[i - 1];
        i--;
    }
    o->opts[i].number = number;
    o->opts[i].len = (uint16_t)len;
    o->opts[i].value = value;
    o->nopts++;
    return 0;
}

static bool in_list(uint16_t number, const uint16_t *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (list[i] == number)
            return true;
    }
    return false;
}

/* m's options except the numbers in drop (m holds at most as many options
 * as o, so this cannot overflow). */
void bw_out_copy_options(struct out_msg *o, const struct coap_msg *m, const uint16_t *drop,
                         size_t ndrop)
{
    for (size_t i = 0; i < m->option_count; i++) {
        if (!in_list(m->options[i].number, drop, ndrop))
            o->opts[o->nopts++] = m->options[i];
    }
}

long bw_out_write(const struct out_msg *o, uint8_t *buf, size_t cap)
{
    long opts = edhoc_coap_msg_encode_body(o->opts, o->nopts, NULL, 0, NULL, 0);
    if (opts < 0)
        return EDHOC_BW_ERR_MALFORMED;
    size_t plen = o->l1 + o->l2;
    size_t total = 4u + o->token_len + (size_t)opts + (plen ? 1u + plen : 0u);
    if (!buf || total > cap)
        return EDHOC_BW_ERR_BUFFER;
    buf[0] = (uint8_t)(0x40 | o->type << 4 | o->token_len);
    buf[1] = o->code;
    buf[2] = (uint8_t)(o->mid >> 8);
    buf[3] = (uint8_t)o->mid;
    if (o->token_len)
        memcpy(buf + 4, o->token, o->token_len);
    size_t pos = 4u + o->token_len;
    if (edhoc_coap_msg_encode_body(o->opts, o->nopts, NULL, 0, buf + pos, cap - pos) != opts)
        return EDHOC_BW_ERR_MALFORMED;
    pos += (size_t)opts;
    if (plen) {
        buf[pos++] = 0xff;
        if (o->l1)
            memcpy(buf + pos, o->p1, o->l1);
        if (o->l2)
            memcpy(buf + pos + o->l1, o->p2, o->l2);
        pos += plen;
    }
    return (long)pos;
}

/* The same message in a new allocation of exactly its size. */
int bw_out_alloc(const struct out_msg *o, uint8_t **msg, size_t *len)
{
    long opts = edhoc_coap_msg_encode_body(o->opts, o->nopts, NULL, 0, NULL, 0);
    if (opts < 0)
        return EDHOC_BW_ERR_MALFORMED;
    size_t plen = o->l1 + o->l2;
    size_t total = 4u + o->token_len + (size_t)opts + (plen ? 1u + plen : 0u);
    uint8_t *buf = malloc(total);
    if (!buf)
        return EDHOC_BW_ERR_NOMEM;
    long n = bw_out_write(o, buf, total);
    if (n < 0) {
        free(buf);
        return (int)n;
    }
    *msg = buf;
    *len = (size_t)n;
    return 0;
}

/* ---- What a message says about blocks ---- */

void bw_view_blocks(const struct coap_msg *m, struct block_view *v)
{
    memset(v, 0, sizeof *v);
    for (size_t i = 0; i < m->option_count; i++) {
        const struct coap_option *o = &m->options[i];
        switch (o->number) {
        case COAP_OPT_BLOCK1:
            if (v->n_block1++ == 0)
                v->block1 = o;
            break;
        case COAP_OPT_BLOCK2:
            if (v->n_block2++ == 0)
                v->block2 = o;
            break;
        case COAP_OPT_SIZE1:
            if (!v->size1_opt)
                v->size1_opt = o;
            break;
        case COAP_OPT_SIZE2:
            if (!v->size2_opt)
                v->size2_opt = o;
            break;
        case COAP_OPT_ETAG:
            if (!v->etag)
                v->etag = o;
            break;
        default: break;
        }
    }
    /* Block1 and Block2 are critical and not repeatable: a repetition or
     * a length outside 0-3 makes them unrecognized (RFC 7252 Section
     * 5.4.5, 5.4.3). */
    if (v->n_block1 > 1 || v->n_block2 > 1 || (v->block1 && v->block1->len > 3) ||
        (v->block2 && v->block2->len > 3))
        v->bad_option = true;
    if (v->block1 && v->block1->len <= 3) {
        if (edhoc_block_parse(v->block1->value, v->block1->len, &v->b1) == 0)
            v->b1_ok = v->n_block1 == 1;
        else
            v->reserved_szx = true;
    }
    if (v->block2 && v->block2->len <= 3) {
        if (edhoc_block_parse(v->block2->value, v->block2->len, &v->b2) == 0)
            v->b2_ok = v->n_block2 == 1;
        else
            v->reserved_szx = true;
    }
    /* Size1/Size2 are elective: a malformed one is ignored (RFC 7252
     * Section 5.4.1). */
    if (v->size1_opt && edhoc_coap_option_uint(v->size1_opt, &v->size1) == 0)
        v->has_size1 = true;
    if (v->size2_opt && edhoc_coap_option_uint(v->size2_opt, &v->size2) == 0)
        v->has_size2 = true;
}
