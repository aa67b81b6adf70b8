/*
 * OSCORE request/response exchanges of the client (RFC 8613) over the
 * transport's client calls: Echo recovery (Appendix B.1.2) and inner
 * block-wise (Section 4.1.3.4.1, RFC 7959), for the initiator's requests
 * and the coap command.
 */
#ifndef EDHOC_CLIENT_OSCORE_EXCHANGE_H
#define EDHOC_CLIENT_OSCORE_EXCHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct edhoc_transport;
struct oscore_context;

struct cli_oscore_result {
    long response_len;      /* inner (decrypted) response length in out */
    size_t request_bytes;   /* protected request, CoAP message bytes (last attempt) */
    size_t response_bytes;  /* protected response, CoAP message bytes */
    int attempts;           /* 2 after an Echo challenge */
    bool unprotected_error; /* the server answered without OSCORE (whatever the code;
                                 * the message is in out, response_len long) */
    uint8_t unprotected_code;
    int transport_err;                     /* EDHOC_TRANSPORT_ERR_* when no response */
    int oscore_err;                        /* OSCORE_ERR_* of protect/unprotect */
    int bw_err;                            /* EDHOC_BW_ERR_* of an inner block-wise transfer */
    long echo_piv;                         /* Partial IV of an Echo challenge, else -1 */
    long response_piv;                     /* Partial IV of the (last) response, else -1 */
    unsigned requests;                     /* OSCORE requests sent (blocks and Echo retries) */
    unsigned block1_blocks, block2_blocks; /* inner blocks sent / received */
};

struct oscore_binding;
/* Inner block-wise for cli_oscore_exchange_bw (RFC 8613 Section
 * 4.1.3.4.1: Block1/Block2 are Class E, every block is its own OSCORE
 * message). */
struct cli_oscore_xfer {
    unsigned block_size; /* request bodies above it go in Block1 blocks; 0: 1024 */
    size_t max_body;     /* largest response body gathered; 0: what fits out */
    /* Called after each request is protected (e.g. to log its Partial IV). */
    void (*sent)(void *user, const struct oscore_binding *b);
    void *user;
    /* The requests' token (RFC 7252 Section 5.3.1), when has_token;
     * otherwise a fresh one each. */
    bool has_token;
    uint8_t token[8];
    size_t token_len;
};

/* edhoc_transport_client_request (a confirmable request and its
 * response) with this token when token is not NULL (0..8 bytes). */
long cli_client_request(struct edhoc_transport *t, const uint8_t *msg, size_t len,
                        const uint8_t *token, size_t token_len, uint8_t *out, size_t cap,
                        int timeout_ms);

struct cli_dgram_log;
/* cli_oscore_exchange for bodies of any size: a request body above
 * x->block_size goes in inner Block1 blocks, a response in inner Block2
 * blocks is followed to its end, and out receives the whole inner
 * response. A partial body is never returned as the answer: a transfer
 * that fails returns -1 with bw_err, transport_err or oscore_err. */
int cli_oscore_exchange_bw(struct edhoc_transport *t, struct oscore_context *ctx,
                           const uint8_t *req, size_t req_len, uint8_t *out, size_t cap,
                           int timeout_ms, struct cli_dgram_log *log, const char *log_name,
                           const struct cli_oscore_xfer *x, struct cli_oscore_result *r);
/* Protect req (a plain request message), send it, verify and decrypt the
 * response into out; a protected 4.01 with an Echo option is answered once
 * by repeating the request with that Echo (RFC 8613 Appendix B.1.2).
 * log_name (may be NULL) names the exchange in log. Returns 0 (result
 * filled), or -1 with result->transport_err / oscore_err /
 * unprotected_error saying why. */
int cli_oscore_exchange(struct edhoc_transport *t, struct oscore_context *ctx, const uint8_t *req,
                        size_t req_len, uint8_t *out, size_t cap, int timeout_ms,
                        struct cli_dgram_log *log, const char *log_name,
                        struct cli_oscore_result *result);

#endif
