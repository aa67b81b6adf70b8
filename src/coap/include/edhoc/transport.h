/*
 * edhoc/transport.h - CoAP over UDP for the EDHOC and OSCORE engine.
 *
 * The transport moves whole CoAP messages, as bytes in the RFC 7252
 * Section 3 layout, between this process and its peers; confirmable
 * messages, retransmission, Message IDs, tokens and block-wise transfer
 * (RFC 7959) happen underneath (libcoap). The caller builds and reads
 * messages with edhoc/coap_msg.h, so OSCORE (edhoc/oscore.h) works on the
 * same bytes the peer sees. No libcoap type appears here.
 *
 * Byte accounting: every UDP datagram this process sends or receives on
 * an IP socket is counted (struct edhoc_transport_stats) and can be handed
 * to a hook (edhoc_transport_set_datagram_hook) as it crosses the socket,
 * retransmissions and individual blocks included.
 *
 * Errors are negative EDHOC_TRANSPORT_ERR_* codes.
 */
#ifndef EDHOC_TRANSPORT_H
#define EDHOC_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/edhoc.h"
#include "edhoc/oscore.h"
/* The responder engine (edhoc_server_*), which the transport serves. */
#include "edhoc/server.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EDHOC_TRANSPORT_ERR_ARG         (-6001) /* bad argument or address */
#define EDHOC_TRANSPORT_ERR_RESOLVE     (-6002) /* host name does not resolve */
#define EDHOC_TRANSPORT_ERR_SOCKET      (-6003) /* cannot create / bind a socket */
#define EDHOC_TRANSPORT_ERR_TIMEOUT     (-6004) /* no (complete) response in time */
#define EDHOC_TRANSPORT_ERR_UNREACHABLE (-6005) /* peer reset the exchange or is unreachable */
#define EDHOC_TRANSPORT_ERR_MALFORMED   (-6006) /* a message given to send does not parse */
#define EDHOC_TRANSPORT_ERR_BUFFER      (-6007) /* a response does not fit the buffer */
#define EDHOC_TRANSPORT_ERR_NOMEM       (-6008)
#define EDHOC_TRANSPORT_ERR_SEND        (-6009) /* the CoAP stack refused the message */

/* Largest CoAP message handled in one piece (block-wise bodies reassembled). */
#define EDHOC_TRANSPORT_MAX_MESSAGE EDHOC_SERVER_MAX_MESSAGE

const char *edhoc_transport_strerror(int err);

/* The version of the libcoap the process runs with ("4.3.1"). */
const char *edhoc_transport_libcoap_version(void);

/* Where libcoap's own log lines go, process-wide (libcoap's handler takes
 * no user pointer). libcoap 4.3.1's default handler writes a line in three
 * writes (time, level, text) and debug lines to standard output, so the
 * workers of one responder, sharing standard error, could cut each
 * other's lines. With a sink, each line reaches it whole, once, without
 * its newline and prefixed "libcoap: "; with NULL (the default) it is one
 * write(2) of the whole line to standard error. */
void edhoc_transport_set_log_sink(void (*sink)(void *user, int level, const char *line),
                                  void *user);

struct edhoc_transport;
struct edhoc_amp; /* edhoc/amplification.h */
/* A server-side peer (a CoAP session: address, port and local endpoint),
 * valid while held. */
struct edhoc_transport_peer;

struct edhoc_transport_stats {
    uint64_t datagrams_sent, datagrams_received;
    uint64_t bytes_sent, bytes_received; /* UDP payload bytes */
};

struct edhoc_transport_config {
    /* Block size (16..1024, a power of two) above which a body travels
     * block-wise; 0: 1024. */
    unsigned block_size;
    /* RFC 7252 ACK_TIMEOUT in ms (0: 2000) and MAX_RETRANSMIT (0: 4;
     * -1 for none). */
    unsigned ack_timeout_ms;
    int max_retransmit;
    /* libcoap log level (0 = emergencies only ... 7 = debug). */
    int log_level;
    /* Largest body a block-wise transfer may carry (reassembled or
     * served); 0: EDHOC_BW_DEFAULT_MAX_BODY (edhoc/blockwise.h). */
    size_t max_body;
    /* Server: libcoap sessions (one per source address and port) that may
     * sit idle at once (0: 4096), and how long an idle one lives in
     * seconds (0: 30). */
    unsigned max_sessions;
    unsigned session_idle_s;
    /* An incomplete block-wise transfer or a kept response is dropped
     * after this many ms without progress; 0: EDHOC_BW_DEFAULT_LIFETIME_MS
     * (RFC 7252 EXCHANGE_LIFETIME). */
    uint32_t transfer_lifetime_ms;
    /* Server: the amplification limit (edhoc/amplification.h); NULL:
     * none. Each request's UDP payload counts as received from its
     * endpoint, each answer's (a block, a repeated answer to a
     * retransmission, an empty ACK) as sent to it. An answer beyond the
     * endpoint's budget goes to `limited` (user: the request callback's),
     * which writes what goes instead -- a 4.01 with Echo, RFC 9175
     * Section 2.4 item 3 -- and returns its length, or 0 for nothing; what
     * it writes is sent only if it fits the budget too. When the request
     * carried a valid Echo value, `limited` verifies the endpoint and
     * returns 0: the answer held back then goes. */
    struct edhoc_amp *amp;
    long (*limited)(void *user, const char *peer, const uint8_t *req, size_t len, size_t held_back,
                    size_t budget, uint8_t *out, size_t cap);
    /* Server, one of `workers` processes sharing the listen ports
     * (SO_REUSEPORT; 0 or 1: alone). Workers open their endpoints in the
     * order of worker_index, so that index i is the i-th socket of each
     * port's group, which the steering program (edhoc/reuseport.h) names;
     * worker 0 attaches the program. */
    unsigned workers;
    unsigned worker_index;
};

/* Called for every UDP datagram (payload bytes) as it is sent or
 * received by this process; peer is "addr:port" ("[v6]:port"). A hook
 * may not call transport functions. NULL removes it. Process-wide. */
typedef void (*edhoc_transport_datagram_fn)(void *user, bool sent, const char *peer,
                                            const uint8_t *payload, size_t len);
void edhoc_transport_set_datagram_hook(edhoc_transport_datagram_fn fn, void *user);
/* The same with both endpoints as socket addresses (AF_INET or AF_INET6
 * with ports), for writing the datagram with real IP and UDP headers.
 * local is the socket's own address (getsockname). When the socket is
 * bound to the wildcard address (0.0.0.0 or ::) the kernel's choice of
 * source address towards peer is used instead: the address a UDP socket
 * connected to peer gets (no packet is sent for that); for a loopback
 * peer this is the loopback address of the peer's family. An IPv6 socket
 * talking to an IPv4 peer reports both as IPv4-mapped IPv6 addresses.
 * Both hooks may be set at once; each gets every datagram. NULL removes
 * it. Process-wide. */
struct sockaddr;
typedef void (*edhoc_transport_datagram2_fn)(void *user, bool sent, const struct sockaddr *local,
                                             const struct sockaddr *peer, const uint8_t *payload,
                                             size_t len);
void edhoc_transport_set_datagram_hook2(edhoc_transport_datagram2_fn fn, void *user);
/* Called just before a datagram is handed to the kernel (same arguments,
 * sent is true), so that a log line naming it can be written before the
 * peer can see it. The datagram may still fail to leave; the hooks above
 * report only what did. NULL removes it. Process-wide. */
void edhoc_transport_set_presend_hook(edhoc_transport_datagram2_fn fn, void *user);
/* Process-wide datagram counters since the start. */
void edhoc_transport_get_stats(struct edhoc_transport_stats *st);

/* ---- Client ---- */

/* Open a client towards host:port (a name, an IPv4 address or an IPv6
 * address with or without brackets). Returns 0, EDHOC_TRANSPORT_ERR_ARG,
 * _RESOLVE, _SOCKET, _NOMEM. */
int edhoc_transport_client_open(struct edhoc_transport **t, const char *host, uint16_t port,
                                const struct edhoc_transport_config *cfg);

/* Send a request (whole CoAP message; its type becomes CON, Message ID
 * and token are replaced by fresh ones, a non-empty token of token_len
 * 1..8 bytes, 0 meaning 8; a body above the block size goes block-wise).
 * The token used is written to token[8] / *token_len (may be NULL).
 * Returns 0, EDHOC_TRANSPORT_ERR_MALFORMED, _SEND, _NOMEM. */
int edhoc_transport_client_send(struct edhoc_transport *t, const uint8_t *msg, size_t len,
                                bool confirmable, uint8_t token[8], size_t *token_len);

/* edhoc_transport_client_send with the token given (0..8 bytes, RFC 7252
 * Section 5.3.1) instead of a fresh one. Returns 0,
 * EDHOC_TRANSPORT_ERR_ARG (longer than 8 bytes, or that token is waiting
 * for a response already), _MALFORMED, _SEND, _NOMEM. */
int edhoc_transport_client_send_token(struct edhoc_transport *t, const uint8_t *msg, size_t len,
                                      bool confirmable, const uint8_t *token, size_t token_len);

/* Wait up to timeout_ms for the next response with this token (block-wise
 * bodies reassembled) and copy it into out as a whole CoAP message
 * (payload = the whole body). Returns its length, or
 * EDHOC_TRANSPORT_ERR_TIMEOUT, _UNREACHABLE (RST, ICMP, retransmissions
 * exhausted), _BUFFER. */
long edhoc_transport_client_wait(struct edhoc_transport *t, const uint8_t *token, size_t token_len,
                                 uint8_t *out, size_t cap, int timeout_ms);

/* send + wait. Same returns. */
long edhoc_transport_client_request(struct edhoc_transport *t, const uint8_t *msg, size_t len,
                                    uint8_t *out, size_t cap, int timeout_ms);

/* Send a request with a token already in use by this client (an Observe
 * deregistration reuses the registration's token, RFC 7641 Section 3.6);
 * responses queue on that token as for edhoc_transport_client_send; an
 * empty token (token_len 0) too, if that is the one pending.
 * Returns 0, EDHOC_TRANSPORT_ERR_ARG (token not pending), _MALFORMED,
 * _SEND. */
int edhoc_transport_client_send_on(struct edhoc_transport *t, const uint8_t *msg, size_t len,
                                   bool confirmable, const uint8_t *token, size_t token_len);

/* Stop waiting for responses to a token (e.g. an Observe registration):
 * later responses are answered with RST. */
void edhoc_transport_client_forget(struct edhoc_transport *t, const uint8_t *token,
                                   size_t token_len);

/* "addr:port" of the peer. */
const char *edhoc_transport_client_peer(const struct edhoc_transport *t);

/* ---- Server ---- */

/* A request arrived (whole CoAP message, body reassembled). Write the
 * response (whole CoAP message; only code, options and payload are used)
 * into resp and return its length; 0 sends no response (for a
 * confirmable request an empty ACK); < 0 answers 5.00. */
typedef long (*edhoc_transport_request_fn)(void *user, struct edhoc_transport_peer *peer,
                                           const char *peer_name, const uint8_t *req, size_t len,
                                           uint8_t *resp, size_t cap);

/* Listen on each "ADDR:PORT" ("[::]:5683", "127.0.0.1:0", ...). Every
 * request, whatever its path, reaches fn. why receives a message on
 * failure. Returns 0, EDHOC_TRANSPORT_ERR_ARG, _SOCKET, _NOMEM. */
int edhoc_transport_server_open(struct edhoc_transport **t, const char *const *listen,
                                size_t n_listen, const struct edhoc_transport_config *cfg,
                                edhoc_transport_request_fn fn, void *user, char *why,
                                size_t why_cap);

/* The actual port of listening address i (after binding port 0). */
uint16_t edhoc_transport_server_port(const struct edhoc_transport *t, size_t i);

/* Keep a peer beyond the request callback (for notifications). */
struct edhoc_transport_peer *edhoc_transport_peer_hold(struct edhoc_transport_peer *p);
void edhoc_transport_peer_release(struct edhoc_transport_peer *p);

/* Called when a confirmable message sent with edhoc_transport_peer_send()
 * was reset by the peer or never acknowledged (e.g. an observer that went
 * away); token is that message's. */
typedef void (*edhoc_transport_failure_fn)(void *user, struct edhoc_transport_peer *peer,
                                           const uint8_t *token, size_t token_len);
void edhoc_transport_server_on_failure(struct edhoc_transport *t, edhoc_transport_failure_fn fn,
                                       void *user);

/* Send a separate message (e.g. an Observe notification) to a held peer:
 * code, token, options and payload from msg; a fresh Message ID.
 * Returns 0, EDHOC_TRANSPORT_ERR_MALFORMED, _SEND, _NOMEM. */
int edhoc_transport_peer_send(struct edhoc_transport *t, struct edhoc_transport_peer *p,
                              const uint8_t *msg, size_t len, bool confirmable);

/* ---- Both ---- */

/* Run the CoAP stack for at most timeout_ms (returns earlier after any
 * work or a signal). Returns 0 or EDHOC_TRANSPORT_ERR_SOCKET. */
int edhoc_transport_run(struct edhoc_transport *t, int timeout_ms);

void edhoc_transport_free(struct edhoc_transport *t);

/* A descriptor that becomes readable when the transport has work for
 * edhoc_transport_run() (a datagram or a due retransmission), so that a
 * process driving many transports can wait on all of them at once
 * (poll/epoll) instead of running each in turn. Do not read from it or
 * close it. Returns the descriptor, or -1 when the CoAP stack offers
 * none (then call edhoc_transport_run periodically). */
int edhoc_transport_poll_fd(const struct edhoc_transport *t);

#ifdef __cplusplus
}
#endif
#endif
