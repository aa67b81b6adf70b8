/*
 * edhoc/blockwise.h - block-wise transfer (RFC 7959, with the Request-Tag
 * of RFC 9175), sans-I/O, on whole CoAP-over-UDP messages as bytes.
 *
 * One engine serves both places block-wise happens:
 *   outer   Block1/Block2 on the CoAP message as it travels (unprotected
 *           EDHOC messages such as a large x5chain message_2/message_3, and
 *           OSCORE messages a proxy fragmented, RFC 8613 Section 4.1.3.4.2):
 *           reassembled before EDHOC or OSCORE sees them (Section 8.2
 *           step 1);
 *   inner   Block1/Block2 inside OSCORE (Section 4.1.3.4.1, Class E):
 *           every block is its own OSCORE message; the engine works on the
 *           decrypted messages.
 *
 * The engine never trusts a length it is told: a Size1 or a body above
 * max_body is answered 4.13 before anything is allocated, every transfer
 * and every cached response counts against per-peer and global limits,
 * and everything expires after lifetime_ms. Memory is returned when a
 * transfer completes, fails or expires.
 *
 * Block option values (RFC 7959 Section 2.2): NUM << 4 | M << 3 | SZX,
 * 0..3 bytes; block size 2^(SZX+4); SZX 7 (BERT) exists only over
 * reliable transports (RFC 8323) and is refused here.
 */
#ifndef EDHOC_BLOCKWISE_H
#define EDHOC_BLOCKWISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EDHOC_BW_DEFAULT_MAX_BODY    65536u
#define EDHOC_BW_MAX_BODY_LIMIT      (1u << 20) /* the largest --max-body accepted */
#define EDHOC_BW_DEFAULT_LIFETIME_MS 247000u    /* RFC 7252 EXCHANGE_LIFETIME */

#define EDHOC_BW_ERR_MALFORMED (-7001) /* a message or block option does not parse */
#define EDHOC_BW_ERR_TOO_LARGE (-7002) /* Size1/Size2 or the body above max_body */
#define EDHOC_BW_ERR_ORDER     (-7003) /* a block other than the one expected */
#define EDHOC_BW_ERR_ETAG      (-7004) /* the representation changed during a Block2 transfer */
#define EDHOC_BW_ERR_BUFFER    (-7005) /* output buffer too small */
#define EDHOC_BW_ERR_NOMEM     (-7006)
#define EDHOC_BW_ERR_ARG       (-7007)

const char *edhoc_bw_strerror(int err);

/* ---- Block options ---- */

struct edhoc_block {
    uint32_t num; /* < 2^20 */
    bool more;
    unsigned szx; /* 0..6 */
};

static inline size_t edhoc_block_size(unsigned szx)
{
    return (size_t)16 << szx;
}

/* SZX of a block size (16, 32, ..., 1024), or -1. */
int edhoc_block_szx(size_t block_size);

/* Parse a Block1/Block2 option value. Returns 0 or EDHOC_BW_ERR_MALFORMED
 * (longer than 3 bytes, SZX 7). */
int edhoc_block_parse(const uint8_t *value, size_t len, struct edhoc_block *b);

/* Encode (shortest form, 0 bytes for NUM 0, M 0, SZX 0). Returns the
 * length. */
size_t edhoc_block_encode(const struct edhoc_block *b, uint8_t out[3]);

/* ---- Limits ---- */

struct edhoc_bw_limits {
    size_t max_body;      /* largest body reassembled or served; 0: EDHOC_BW_DEFAULT_MAX_BODY */
    size_t max_transfers; /* incomplete transfers plus cached responses, all peers; 0: 256 */
    size_t max_per_peer;  /* the same per peer; 0: 4 */
    size_t max_bytes;     /* bytes held by all of them; 0: 4 MiB */
    uint32_t lifetime_ms; /* dropped after this without progress; 0: EDHOC_BW_DEFAULT_LIFETIME_MS */
};

/* ---- Server ---- */

struct edhoc_bw_server;

/* NULL limits: the defaults. Returns NULL when out of memory. */
struct edhoc_bw_server *edhoc_bw_server_new(const struct edhoc_bw_limits *limits);
void edhoc_bw_server_free(struct edhoc_bw_server *s);

enum edhoc_bw_verdict {
    EDHOC_BW_PASS = 0,  /* not block-wise: handle the request as it is */
    EDHOC_BW_REPLY = 1, /* answer with out[0 .. *out_len) and do nothing else */
    EDHOC_BW_WHOLE = 2, /* a Block1 transfer completed: handle *whole */
};

/* One received request (a whole CoAP message). `peer` names the other end
 * (e.g. "addr:port"; for inner block-wise add the OSCORE context) and
 * keys its transfers together with the request's method and its options
 * other than Block1, Block2, Size1, Size2, Echo and No-Response (so a
 * Request-Tag, RFC 9175 Section 3, keeps two bodies apart; the token
 * plays no part, RFC 7959 Section 2.4).
 *
 * Block1 (RFC 7959 Section 2.5): blocks must come in order; a repeated
 * last block is answered again; NUM 0 restarts the transfer. A block with
 * M=1 is answered 2.31 Continue echoing Block1; the block with M=0 gives
 * EDHOC_BW_WHOLE: *whole (malloc'd, the caller frees it) is the request
 * with this block's header and token, Block1 and Size1 removed, and the
 * whole body as payload.
 * Block2 with NUM > 0 for a body kept by edhoc_bw_server_response for
 * this peer and request key: that block (REPLY). Block2 NUM 0, or no
 * kept body: PASS (the handler runs and edhoc_bw_server_response cuts).
 *
 * REPLY also covers the refusals: 4.08 Request Entity Incomplete (a
 * block out of order, or a continuation without a transfer; Section
 * 2.9.2), 4.13 Request Entity Too Large with Size1 = max_body (Size1 or
 * the body above the limit; Sections 2.9.3 and 4), 4.02 Bad Option (a
 * malformed Block1/Block2, two of them), 5.03 Service Unavailable with
 * Max-Age (the transfer limits are reached), and 4.08 for a Block2 NUM
 * past the end of a kept body. Replies answer the request's type (CON:
 * ACK, NON: NON), Message ID and token. Returns the verdict or a negative
 * EDHOC_BW_ERR_* (out too small, out of memory). */
int edhoc_bw_server_request(struct edhoc_bw_server *s, const char *peer, const uint8_t *msg,
                            size_t len, uint64_t now_ms, uint8_t **whole, size_t *whole_len,
                            uint8_t *out, size_t cap, size_t *out_len);

/* The handler's response to `request` (the message given to
 * edhoc_bw_server_request, or its *whole). When the response's payload is
 * longer than block_size, or than the block size the request asked for
 * with Block2 (early negotiation, Section 2.4), the body is kept for this
 * peer and request key (replacing an older one) and block NUM (the
 * request's Block2 NUM, else 0) is written with Block2, Size2 (block 0)
 * and an ETag (added when the response has none, so that a client can
 * tell representations apart, Section 2.4); otherwise the response is
 * copied. A response to a completed Block1 transfer carries Block1 with
 * the last NUM and M=0 (Section 2.3). Returns the length written, or
 * EDHOC_BW_ERR_MALFORMED, _BUFFER, _NOMEM; when the limits leave no room
 * to keep a body, the 5.03 of edhoc_bw_server_request is written instead. */
long edhoc_bw_server_response(struct edhoc_bw_server *s, const char *peer, const uint8_t *request,
                              size_t req_len, const uint8_t *response, size_t resp_len,
                              size_t block_size, uint64_t now_ms, uint8_t *out, size_t cap);

/* Drop what has made no progress for lifetime_ms. Cheap; call it often. */
void edhoc_bw_server_expire(struct edhoc_bw_server *s, uint64_t now_ms);

struct edhoc_bw_stats {
    size_t transfers, kept_bodies, bytes_held;
    uint64_t completed, served_blocks, refused_too_large, refused_incomplete, refused_busy,
        refused_bad_option, expired;
};
void edhoc_bw_server_stats(const struct edhoc_bw_server *s, struct edhoc_bw_stats *st);

/* ---- Client ---- */

/* Block `num` (of size 2^(szx+4)) of request msg's payload: the same
 * header, token and options, plus Block1(num, M, szx) and, on block 0,
 * Size1 = the whole length (Section 4), payload = that slice. Returns the
 * length, 0 when num is past the end of the payload, or
 * EDHOC_BW_ERR_MALFORMED, _BUFFER, _ARG. */
long edhoc_bw_request_block(const uint8_t *msg, size_t len, unsigned szx, uint32_t num,
                            uint8_t *out, size_t cap);

/* The request for block `num` of a Block2 response to msg: msg's header,
 * token and options without payload, Block1 and Size1, plus
 * Block2(num, 0, szx). Returns the length or EDHOC_BW_ERR_*. */
long edhoc_bw_request_next(const uint8_t *msg, size_t len, unsigned szx, uint32_t num, uint8_t *out,
                           size_t cap);

/* Gathers the body of a Block2 response. */
struct edhoc_bw_collect {
    uint8_t *body;
    size_t len, cap, max_body;
    uint32_t next_num; /* the block to ask for next */
    unsigned szx;      /* of the blocks received so far */
    uint8_t etag[8];
    size_t etag_len;
    bool started, done;
};

void edhoc_bw_collect_init(struct edhoc_bw_collect *c, size_t max_body);

/* Add one response (whole message). Returns 0 when the body is complete
 * (c->done; a response without Block2 is complete at once), 1 when block
 * c->next_num (of size 2^(c->szx+4)) must be asked for, or
 * EDHOC_BW_ERR_TOO_LARGE (Size2 or the body above max_body, before
 * anything is kept), _ORDER (a NUM other than the one asked for), _ETAG
 * (a different ETag than block 0's), _MALFORMED, _NOMEM. */
int edhoc_bw_collect_add(struct edhoc_bw_collect *c, const uint8_t *resp, size_t len);

/* The whole response: last_resp's header, token and options without
 * Block2 and Size2, payload = the body. Returns the length or
 * EDHOC_BW_ERR_BUFFER. */
long edhoc_bw_collect_message(const struct edhoc_bw_collect *c, const uint8_t *last_resp,
                              size_t len, uint8_t *out, size_t cap);

void edhoc_bw_collect_free(struct edhoc_bw_collect *c);

#ifdef __cplusplus
}
#endif
#endif
