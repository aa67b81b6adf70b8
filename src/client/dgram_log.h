/*
 * Datagram accounting of the client: every UDP datagram the process sends
 * or receives (the transport's datagram hook) is charged to the exchange
 * running, per layer on the link given, and written to a capture when one
 * is open. The initiator's rows and the OSCORE exchanges are built on it.
 */
#ifndef EDHOC_CLIENT_DGRAM_LOG_H
#define EDHOC_CLIENT_DGRAM_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/netacct.h"

struct edhoc_capture;

#define CLI_MAX_EXCHANGES 64

struct cli_exchange {
    char name[48]; /* "message_1", "OSCORE request 1", ... */
    unsigned dgrams_sent, dgrams_received;
    size_t bytes_sent, bytes_received; /* UDP payload bytes */
    size_t first_sent, first_received; /* size of the first datagram each way */
    /* The same datagrams per layer (CoAP = UDP payload, UDP, IP, link
     * frames) on the log's link; edhoc is left 0 here. */
    struct edhoc_netacct_total sent_layers, received_layers;
    bool ipv6; /* the last datagram went over IPv6 */
};

struct cli_dgram_log {
    struct cli_exchange ex[CLI_MAX_EXCHANGES];
    size_t n;
    int current; /* -1: charged to nothing */
    /* Set after cli_dgram_log_start: the link every datagram is
     * accounted on, and a capture every datagram is written to (NULL:
     * none). */
    struct edhoc_netacct_link link;
    struct edhoc_capture *capture;
    unsigned capture_errors; /* datagrams the capture could not take */
    unsigned link_errors;    /* datagrams too large for the link */
};

/* The layers of one datagram on link: UDP payload len over IPv6 or IPv4.
 * Returns 0, or -1 when the link cannot carry it (frames 0). */
int cli_net_layers(const struct edhoc_netacct_link *link, size_t len, bool ipv6, uint16_t src_port,
                   uint16_t dst_port, struct edhoc_netacct_layers *out);
/* The same with the CoAP message's bytes (SCHC on LoRaWAN compresses its
 * header) and its direction (client -> server: uplink). */
int cli_net_layers_msg(const struct edhoc_netacct_link *link, const uint8_t *msg, size_t len,
                       bool ipv6, uint16_t src_port, uint16_t dst_port, bool from_client,
                       struct edhoc_netacct_layers *out);

/* Install the hook (process-wide) feeding log. */
void cli_dgram_log_start(struct cli_dgram_log *log);
/* Charge following datagrams to a new exchange; returns its index. */
int cli_dgram_log_begin(struct cli_dgram_log *log, const char *name);
void cli_dgram_log_stop(struct cli_dgram_log *log);

#endif
