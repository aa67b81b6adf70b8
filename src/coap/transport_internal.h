/*
 * transport_internal.h - what the files of the libcoap transport share:
 * the transport's layout, its pending client exchanges, and the minimal
 * view of message bytes (src/coap private; includes libcoap).
 */
#ifndef EDHOC_COAP_TRANSPORT_INTERNAL_H
#define EDHOC_COAP_TRANSPORT_INTERNAL_H
#include "edhoc/transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <coap3/coap.h>

#include "edhoc/amplification.h"
#include "edhoc/blockwise.h"
#include "edhoc/datagram_guard.h"
#include "edhoc/reuseport.h"
#include "transport_io.h"

#define OPT_OSCORE  9
#define OPT_EDHOC   21
#define MAX_PENDING 64
#define MAX_LISTEN  8
/* Answers to recent confirmable requests, by peer and Message ID, so that a
 * retransmitted request (its ACK was lost) gets the same answer instead of
 * being processed twice (RFC 7252 4.5): a second message_3 would find its
 * handshake gone, a second OSCORE request would be a replay. */
#define DEDUP_SLOTS     512
#define DEDUP_SECONDS   60
#define DEDUP_MAX_BYTES 1200

struct dedup {
    char peer[80];
    uint16_t mid;
    /* the request's bytes, hashed: a retransmission is the same message */
    uint64_t req_hash;
    size_t req_len;
    coap_tick_t when;
    size_t len; /* 0: empty slot */
    uint8_t *bytes;
};

struct queued {
    struct queued *next;
    size_t len;
    uint8_t bytes[];
};

struct pending {
    bool used;
    bool failed;
    uint8_t token[8];
    size_t token_len;
    struct queued *head, *tail;
    /* Block-wise: the whole request (for further Block1 blocks and for
     * Block2 follow-ups), where its Block1 transfer stands, and the
     * Block2 body gathered so far. */
    uint8_t *req;
    size_t req_len;
    bool confirmable;
    bool sending_blocks;
    uint32_t b1_num;
    unsigned b1_szx;
    bool collecting;
    struct edhoc_bw_collect collect;
};

struct edhoc_transport {
    coap_context_t *ctx;
    coap_session_t *session; /* client */
    struct edhoc_transport_config cfg;
    unsigned mtu;
    char peer_name[80];
    struct pending pending[MAX_PENDING];
    /* server */
    edhoc_transport_request_fn fn;
    void *user;
    uint16_t ports[MAX_LISTEN];
    size_t n_ports;
    struct dedup *dedup;
    edhoc_transport_failure_fn on_failure;
    void *failure_user;
    uint8_t *scratch; /* request bytes */
    uint8_t *resp;    /* response bytes (a whole body) */
    uint8_t *blk;     /* the block sent of it */
    size_t resp_cap;
    struct edhoc_bw_server *bw;
};

/* ---- A minimal view of message bytes (this file cannot share the
 * project's CoAP codec: its names collide with libcoap's) ---- */

#define VIEW_MAX_OPTIONS 40

struct view_opt {
    uint16_t number;
    uint16_t len;
    const uint8_t *value;
};

struct view {
    uint8_t type, code;
    uint16_t mid;
    uint8_t token_len;
    const uint8_t *token;
    size_t n_opts;
    struct view_opt opts[VIEW_MAX_OPTIONS];
    const uint8_t *payload;
    size_t payload_len;
};

int transport_view_parse(const uint8_t *b, size_t len, struct view *v);
long transport_pdu_to_bytes(const coap_pdu_t *pdu, uint8_t *out, size_t cap);
int transport_add_options(coap_pdu_t *pdu, const struct view *v, bool skip_cf);
unsigned transport_block_size(const struct edhoc_transport *t);
void transport_session_tune(struct edhoc_transport *t, coap_session_t *s);
struct edhoc_transport *transport_new(const struct edhoc_transport_config *cfg);
void transport_addr_name(const coap_address_t *a, char *buf, size_t cap);
coap_pdu_t *transport_pdu_from_view(coap_session_t *s, const struct view *v, coap_pdu_type_t type,
                                    const uint8_t *token, size_t token_len);
uint64_t transport_now_ms(void);

#endif
