/* The helpers of blockwise_test_common.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "edhoc/blockwise.h"
#include "edhoc/coap_msg.h"

#include "blockwise_test_common.h"

void b_init(struct builder *b, uint8_t type, uint8_t code, uint16_t mid, const char *token)
{
    memset(b, 0, sizeof *b);
    b->m.type = type;
    b->m.code = code;
    b->m.mid = mid;
    b->m.token_len = (uint8_t)strlen(token);
    memcpy(b->m.token, token, b->m.token_len);
}

void b_opt(struct builder *b, uint16_t number, const void *value, size_t len)
{
    assert_int_equal(edhoc_coap_msg_add_option(&b->m, number, value, len), 0);
}

void b_str(struct builder *b, uint16_t number, const char *s)
{
    b_opt(b, number, s, strlen(s));
}

void b_uint(struct builder *b, uint16_t number, uint32_t v)
{
    uint8_t *st = b->store[b->used++];
    b_opt(b, number, st, edhoc_coap_uint_encode(v, st));
}

void b_block(struct builder *b, uint16_t number, uint32_t num, bool more, unsigned szx)
{
    struct edhoc_block blk = {.num = num, .more = more, .szx = szx};
    uint8_t *st = b->store[b->used++];
    b_opt(b, number, st, edhoc_block_encode(&blk, st));
}

size_t b_encode(struct builder *b, const uint8_t *payload, size_t plen, uint8_t *out, size_t cap)
{
    b->m.payload = plen ? payload : NULL;
    b->m.payload_len = plen;
    long n = edhoc_coap_msg_encode(&b->m, out, cap);
    assert_true(n > 0);
    return (size_t)n;
}

void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 31u + seed + (i >> 8) * 7u);
}

void set_mid(uint8_t *msg, uint16_t mid)
{
    msg[2] = (uint8_t)(mid >> 8);
    msg[3] = (uint8_t)mid;
}

int srv(struct edhoc_bw_server *s, const char *peer, const uint8_t *msg, size_t len, uint64_t now,
        struct result *r)
{
    r->whole = NULL;
    r->verdict = edhoc_bw_server_request(s, peer, msg, len, now, &r->whole, &r->whole_len, r->out,
                                         sizeof r->out, &r->out_len);
    if (r->verdict == EDHOC_BW_REPLY)
        assert_int_equal(edhoc_coap_msg_parse(r->out, r->out_len, &r->reply), 0);
    else
        assert_int_equal(r->out_len, 0);
    if (r->verdict != EDHOC_BW_WHOLE)
        assert_null(r->whole);
    return r->verdict;
}

bool has_block(const struct coap_msg *m, uint16_t number, struct edhoc_block *b)
{
    const struct coap_option *o = edhoc_coap_msg_find_option(m, number);
    if (!o)
        return false;
    assert_int_equal(edhoc_block_parse(o->value, o->len, b), 0);
    return true;
}

void assert_block(const struct coap_msg *m, uint16_t number, uint32_t num, bool more, unsigned szx)
{
    struct edhoc_block b;
    assert_true(has_block(m, number, &b));
    assert_int_equal(b.num, num);
    assert_int_equal(b.more, more);
    assert_int_equal(b.szx, szx);
}

uint32_t uint_option(const struct coap_msg *m, uint16_t number)
{
    const struct coap_option *o = edhoc_coap_msg_find_option(m, number);
    assert_non_null(o);
    uint32_t v;
    assert_int_equal(edhoc_coap_option_uint(o, &v), 0);
    return v;
}

struct edhoc_bw_stats stats(const struct edhoc_bw_server *s)
{
    struct edhoc_bw_stats st;
    edhoc_bw_server_stats(s, &st);
    return st;
}

size_t upload(uint8_t *out, size_t cap, uint8_t type, uint16_t mid, const char *tag,
              const uint8_t *body, size_t n)
{
    struct builder b;
    b_init(&b, type, COAP_CODE_POST, mid, "tk");
    b_str(&b, COAP_OPT_URI_PATH, "upload");
    b_uint(&b, COAP_OPT_CONTENT_FORMAT, 42);
    if (tag)
        b_str(&b, COAP_OPT_REQUEST_TAG, tag);
    return b_encode(&b, body, n, out, cap);
}

size_t block1_msg(uint8_t *out, size_t cap, uint32_t num, bool more, unsigned szx,
                  const uint8_t *payload, size_t plen, const char *tag)
{
    struct builder b;
    b_init(&b, COAP_TYPE_CON, COAP_CODE_POST, (uint16_t)(0x2000 + num), "tk");
    b_str(&b, COAP_OPT_URI_PATH, "upload");
    b_block(&b, COAP_OPT_BLOCK1, num, more, szx);
    if (tag)
        b_str(&b, COAP_OPT_REQUEST_TAG, tag);
    return b_encode(&b, payload, plen, out, cap);
}
