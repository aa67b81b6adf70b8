/*
 * What the block-wise sources share, not exported from the library:
 *   blockwise_message.c  block options, error texts, writing messages
 *                        (struct out_msg), what a message says about blocks
 *   blockwise_table.c    the server's table: peers, entries, the two lists,
 *                        limits and the bytes held
 *   blockwise_block1.c   the server's requests: Block1 reassembly, the
 *                        replies (2.31, 4.08, 4.13, 5.03)
 *   blockwise_block2.c   the server's responses served block by block,
 *                        and the requests for their later blocks
 *   blockwise_client.c   the client: requests in blocks, collecting a body
 */
#ifndef EDHOC_BLOCKWISE_INTERNAL_H
#define EDHOC_BLOCKWISE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/blockwise.h"
#include "edhoc/coap_msg.h"

#define CODE_CONTINUE            COAP_CODE(2, 31)
#define CODE_REQUEST_INCOMPLETE  COAP_CODE(4, 8)
#define CODE_TOO_LARGE           COAP_CODE(4, 13)
#define CODE_SERVICE_UNAVAILABLE COAP_CODE(5, 3)

/* Max-Age of a 5.03: how long a client should wait before trying again
 * (RFC 9175 Section 3.3: "a Max-Age indicating how long it expects the
 * existing operation to go on"); a few seconds lets a running transfer
 * finish without making a retrying client idle for long. */
#define BUSY_MAX_AGE_S  5u
#define BLOCK_NUM_LIMIT (1u << 20)
#define ETAG_LEN        4u

/* ---- blockwise_message.c */

/* A message to write: header fields, options in ascending order and a
 * payload in up to two pieces (a reassembled body is written from the
 * stored part and the final block without joining them first). */
struct out_msg {
    uint8_t type, code;
    uint16_t mid;
    uint8_t token_len;
    const uint8_t *token;
    size_t nopts;
    struct coap_option opts[COAP_MSG_MAX_OPTIONS];
    const uint8_t *p1, *p2;
    size_t l1, l2;
};

struct block_view {
    const struct coap_option *block1, *block2, *size1_opt, *size2_opt, *etag;
    unsigned n_block1, n_block2;
    struct edhoc_block b1, b2;
    bool b1_ok, b2_ok; /* present once and parsed */
    bool bad_option;   /* repeated or longer than 3 bytes */
    bool reserved_szx; /* SZX 7 */
    bool has_size1, has_size2;
    uint32_t size1, size2;
};

/* A reply to request m: piggybacked (ACK) for a CON, NON for a NON (RFC
 * 7252 Sections 5.2.1 and 5.2.3), with its Message ID and token. */
void bw_out_reply(struct out_msg *o, const struct coap_msg *req, uint8_t code);
/* The header fields and token of m; no options, no payload. */
void bw_out_from(struct out_msg *o, const struct coap_msg *m);
/* Inserts after options with a number <= number, so that repeated options
 * keep their order. Refuses what the codec could not parse back. */
int bw_out_add(struct out_msg *o, uint16_t number, const uint8_t *value, size_t len);
/* m's options except the numbers in drop. */
void bw_out_copy_options(struct out_msg *o, const struct coap_msg *m, const uint16_t *drop,
                         size_t ndrop);
long bw_out_write(const struct out_msg *o, uint8_t *buf, size_t cap);
/* The same message in a new allocation of exactly its size. */
int bw_out_alloc(const struct out_msg *o, uint8_t **msg, size_t *len);
void bw_view_blocks(const struct coap_msg *m, struct block_view *v);

/* ---- blockwise_table.c */

enum entry_kind {
    ENTRY_TRANSFER, /* Block1 body being reassembled */
    ENTRY_KEPT,     /* response body served block by block */
    ENTRY_DONE,     /* a completed Block1 transfer whose response is due */
};

struct bw_peer;

struct bw_entry {
    enum entry_kind kind;
    struct bw_peer *peer;
    struct bw_entry *peer_prev, *peer_next; /* the peer's entries, oldest first */
    struct bw_entry *lru_prev, *lru_next;   /* all entries, least recent progress first */
    struct bw_entry *ev_prev, *ev_next;     /* droppable entries, oldest first */
    bool droppable;
    uint64_t last_ms;
    size_t held; /* bytes counted in bytes_held */
    /* TRANSFER: body so far; KEPT: the whole body */
    uint8_t *body;
    size_t body_len, body_cap;
    unsigned szx; /* TRANSFER: block size now in use; KEPT: of block 0; DONE: of the last block */
    /* TRANSFER: the last block accepted, to recognise a retransmission */
    size_t last_off, last_len;
    uint32_t last_num;
    /* KEPT: the response's code and encoded options (no Block1/2, Size2) */
    uint8_t code;
    uint8_t *opts;
    size_t opts_len;
    /* DONE: the final block's Message ID and token (those of *whole) */
    uint16_t mid;
    uint8_t token_len;
    uint8_t token[COAP_MSG_MAX_TOKEN];
    uint64_t key_hash;
    size_t key_len;
    uint8_t key[];
};

struct bw_peer {
    struct bw_peer *next; /* bucket chain */
    struct bw_entry *first, *last;
    size_t count;
    uint64_t hash;
    size_t name_len;
    char name[];
};

struct edhoc_bw_server {
    struct edhoc_bw_limits lim;
    struct bw_peer **buckets;
    size_t bucket_mask;
    struct bw_entry *lru_first, *lru_last;
    struct bw_entry *ev_first, *ev_last;
    size_t entries;
    uint64_t seed;
    uint32_t etag_counter;
    struct edhoc_bw_stats st;
};

static inline uint64_t bw_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static inline size_t bw_size_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

uint64_t bw_key_hash(const struct edhoc_bw_server *s, const struct coap_msg *m);
uint64_t bw_peer_hash(const struct edhoc_bw_server *s, const char *name, size_t len);
struct bw_peer *bw_peer_find(const struct edhoc_bw_server *s, const char *name, size_t len,
                             uint64_t h);
struct bw_entry *bw_entry_find(const struct bw_peer *p, enum entry_kind kind, uint64_t h,
                               const struct coap_msg *m);
/* Progress: the entry moves to the young end of the expiry order. */
void bw_touch(struct edhoc_bw_server *s, struct bw_entry *e, uint64_t now_ms);
void bw_set_droppable(struct edhoc_bw_server *s, struct bw_entry *e);
void bw_entry_free(struct edhoc_bw_server *s, struct bw_entry *e);
/* Makes room for new_entries (0 or 1) more entries of peer `name` and
 * `bytes` more bytes, dropping only what may be dropped, never `spare`.
 * False when the limits stay reached. */
bool bw_make_room(struct edhoc_bw_server *s, const char *name, size_t name_len, uint64_t ph,
                  size_t new_entries, size_t bytes, bool for_kept, const struct bw_entry *spare);
struct bw_entry *bw_entry_new(struct edhoc_bw_server *s, const char *name, size_t name_len,
                              uint64_t ph, enum entry_kind kind, const struct coap_msg *m,
                              uint64_t kh, uint64_t now_ms);
size_t bw_entry_bytes(const struct coap_msg *m);
int bw_transfer_reserve(struct edhoc_bw_server *s, struct bw_entry *e, size_t need);
void bw_make_done(struct edhoc_bw_server *s, struct bw_entry *e, const struct coap_msg *m,
                  const struct edhoc_block *b);
struct bw_entry *bw_find_done(const struct bw_peer *p, uint64_t kh, const struct coap_msg *req);

/* ---- blockwise_block1.c */

int bw_reply_code(const struct coap_msg *req, uint8_t code, uint8_t *out, size_t cap,
                  size_t *out_len);
/* o becomes a 5.03 with Max-Age BUSY_MAX_AGE_S (v holds the option value). */
void bw_busy_message(struct out_msg *o, uint8_t v[4]);
int bw_reply_incomplete(struct edhoc_bw_server *s, const struct coap_msg *req, uint8_t *out,
                        size_t cap, size_t *out_len);

/* ---- blockwise_block2.c */

/* The block size a kept body is served in: the one asked for, but never
 * larger than that of block 0 (RFC 7959 Section 2.4: "A server MUST use
 * the block size indicated or a smaller size"). */
static inline unsigned bw_serve_szx(unsigned asked, unsigned server)
{
    return asked < server ? asked : server;
}

long bw_write_kept_block(struct edhoc_bw_server *s, const struct bw_entry *k, struct out_msg *o,
                         size_t offset, unsigned szx, bool want_size2, const uint8_t *b1_value,
                         size_t b1_len, uint8_t *out, size_t cap, bool *more);
/* A request for block num > 0 of a kept body. */
int bw_block2_request(struct edhoc_bw_server *s, const char *peer, const struct coap_msg *m,
                      const struct block_view *v, uint64_t now_ms, uint8_t *out, size_t cap,
                      size_t *out_len);

#endif
