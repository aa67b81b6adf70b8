/*
 * Client-side helpers of the network subcommands (initiator, coap): URIs,
 * building requests, printing responses, and the per-exchange byte
 * accounting fed by the transport's datagram hook.
 */
#ifndef CLI_NET_REPORT_H
#define CLI_NET_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "edhoc/netacct.h"
#include "options.h"

struct cli_uri {
    char host[256];
    uint16_t port;
    char path[512];  /* "/a/b" ("" when none) */
    char query[512]; /* "a=1&b" ("" when none) */
};

/* coap://host[:port][/path][?query]; IPv6 hosts in brackets. Returns 0 or
 * -1 after printing why. */
int cli_uri_parse(const char *uri, struct cli_uri *u);

/* CoAP method code for GET/POST/PUT/DELETE/FETCH/PATCH/IPATCH, or -1. */
int cli_coap_method(const char *name);

/* A request message (CON, Message ID and token left to the transport).
 * cf < 0: no Content-Format; observe < 0: no Observe. Returns the length
 * or -1. */
long cli_coap_build_request(uint8_t code, const char *path, const char *query, int cf,
                            const uint8_t *payload, size_t payload_len, long observe, uint8_t *out,
                            size_t cap);

/* "2.05 Content", "4.01 Unauthorized", ... */
const char *cli_coap_code_name(uint8_t code, char *buf, size_t cap);

/* Response code, Content-Format (-1 none), payload of a message. Returns 0
 * or -1 when it does not parse. */
int cli_coap_response_view(const uint8_t *msg, size_t len, uint8_t *code, int *cf,
                           const uint8_t **payload, size_t *payload_len);

/* Print a payload as text when printable, else as hex (text output; JSON
 * has payload_hex and payload_text, cli_json_set_bytes). */
void cli_print_payload(FILE *f, const uint8_t *p, size_t len);

/* ---- Datagram accounting: every UDP datagram the process sends or
 * receives is charged to the current exchange. ---- */

#define CLI_MAX_EXCHANGES 64

struct cli_exchange {
    char name[48];           /* "message_1", "OSCORE request 1", ... */
    unsigned dgrams_sent, dgrams_received;
    size_t bytes_sent, bytes_received;   /* UDP payload bytes */
    size_t first_sent, first_received;   /* size of the first datagram each way */
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

/* --link, --link-mtu, --pcap shared by initiator, coap and responder,
 * with the air-model options (--phy, --region, ...) that describe the
 * link chosen. */
struct cli_net_opts {
    struct edhoc_netacct_link link; /* type NONE unless --link/--link-mtu */
    const char *pcap;
    struct edhoc_netacct_radio radio; /* --radio-profile; else the link's built-in one */
    bool radio_set;
};
/* The air-model options alone (id CLI_OPT_ID_NET): --csma-be, --retries,
 * --phy, --ble-data-length, --ble-interval, --ble-unencrypted, --region,
 * --data-rate, --duty-cycle, --radio-profile. */
extern const struct cli_opt cli_net_opts_air[];
/* --link and --link-mtu, then the air-model options, without --pcap (for
 * a command that sends no datagrams, such as simulate). */
extern const struct cli_opt cli_net_opts_link_air[];
/* Apply one air-model option (flag "--phy" ...) to link (its type chosen
 * already) or radio. Returns 1 when it is one, 0 when flag is not an
 * air-model option, -1 after printing "edhoc-cli PROG: ..." (exit 2). */
int cli_net_air_option(const char *prog, const char *flag, const char *value,
                       struct edhoc_netacct_link *link, struct edhoc_netacct_radio *radio,
                       bool *radio_set);
/* The radio profile in force: *radio when set, else the link's built-in. */
struct edhoc_netacct_radio cli_net_radio(const struct edhoc_netacct_link *link,
                                         const struct edhoc_netacct_radio *radio, bool set);
/* "12.345 ms", "2.466 s", "4.1 min": a duration in microseconds. */
const char *cli_air_time(uint64_t us, char *buf, size_t cap);
/* The air-model parameters of link as JSON (null members where they do not
 * apply; docs/airtime.md): csma_be, retries, ble_phy, ble_data_length,
 * ble_encrypted, ble_interval_ms, region, data_rate, duty_cycle_percent,
 * rx1_delay_ms, rx2_delay_ms, preamble. */
json_t *cli_net_air_params_json(const struct edhoc_netacct_link *link);
/* The radio profile as JSON: name, volts, tx_ma, rx_ma, tx_startup_us,
 * rx_startup_us, source. */
json_t *cli_net_radio_json(const struct edhoc_netacct_radio *r);
/* One message's (or a total's) air figures as JSON: air_ms, link_ms,
 * wait_ms, fragments, schc_residue_bits (null unless known), and the
 * energy of its sender and receiver in millijoules. */
json_t *cli_net_air_json(const struct edhoc_netacct_radio *r, const struct edhoc_netacct_air *a);
/* An exchange's air figures (the messages in order, from_initiator each):
 * time on air, duty-cycle wait, end-to-end time on the link (plus host_ms
 * of measured processing when >= 0), and the energy per role. */
struct cli_air_summary {
    uint64_t air_us, wait_us, link_us, e2e_us;
    double host_ms;       /* < 0: not measured */
    unsigned frames, fragments;
    double initiator_mj, responder_mj;
};
void cli_air_summary_add(struct cli_air_summary *s, const struct edhoc_netacct_radio *r,
                         const struct edhoc_netacct_air *a, unsigned frames,
                         bool from_initiator);
json_t *cli_air_summary_json(const struct cli_air_summary *s);
/* The summary as three text lines: "  HEADING (docs/airtime.md): frames,
 * time on air, duty-cycle wait, link time; end-to-end = SUBJECT one after
 * another on the link + host (HOST_WHAT); energy per role, radio". */
void cli_air_summary_print(FILE *f, const struct cli_air_summary *s,
                           const struct edhoc_netacct_radio *radio, const char *heading,
                           const char *subject, const char *host_what);
/* The same as option tables (id CLI_OPT_ID_NET): all three, or --pcap only. */
struct cli_opt;
struct cli_opt_parser;
extern const struct cli_opt cli_net_opts_link[];
extern const struct cli_opt cli_net_opts_pcap[];
/* Take the parser's current option (id CLI_OPT_ID_NET). Returns 0 or -1
 * after printing why. */
int cli_net_take(struct cli_net_opts *o, const struct cli_opt_parser *p);
/* Open o->pcap (raw IP link type) when set. Returns 0 (*cap NULL when no
 * --pcap) or -1 after printing why. */
int cli_net_capture_open(const struct cli_net_opts *o, const char *prog,
                         struct edhoc_capture **cap);
/* The layers of one datagram on link: UDP payload len over IPv6 or IPv4.
 * Returns 0, or -1 when the link cannot carry it (frames 0). */
int cli_net_layers(const struct edhoc_netacct_link *link, size_t len, bool ipv6,
                   uint16_t src_port, uint16_t dst_port, struct edhoc_netacct_layers *out);
/* The same with the CoAP message's bytes (SCHC on LoRaWAN compresses its
 * header) and its direction (client -> server: uplink). */
int cli_net_layers_msg(const struct edhoc_netacct_link *link, const uint8_t *msg, size_t len,
                       bool ipv6, uint16_t src_port, uint16_t dst_port, bool from_client,
                       struct edhoc_netacct_layers *out);

/* JSON values (cli/json_out.h): a total per layer ({"messages",
 * "datagrams", "edhoc_bytes", "coap_bytes", "udp_bytes", "ip_bytes",
 * "frames" and "link_bytes", null without a link}), and the link it was
 * counted on (null for none; else {"type": "802.15.4"|"mtu", the
 * parameters that apply, the rest null, "description": the assumptions in
 * words}). */
json_t *cli_net_total_json(const struct edhoc_netacct_total *t, bool link);
json_t *cli_net_link_json(const struct edhoc_netacct_link *link);

/* Exit code when edhoc_transport_client_open fails with rc: a host name
 * that does not resolve is an unreachable peer (6, as a timeout), not a
 * bad command line; a local failure (socket, memory) is 1. */
int cli_exit_for_client_open(int rc);

/* Install the hook (process-wide) feeding log. */
void cli_dgram_log_start(struct cli_dgram_log *log);
/* Charge following datagrams to a new exchange; returns its index. */
int cli_dgram_log_begin(struct cli_dgram_log *log, const char *name);
void cli_dgram_log_stop(struct cli_dgram_log *log);



/* The plain request req with an Echo option of this value (replacing any).
 * Returns the length or -1. */
long cli_coap_with_echo(const uint8_t *req, size_t len, const uint8_t *echo, size_t echo_len,
                        uint8_t *out, size_t cap);

/* ---- OSCORE request/response with Echo recovery ---- */

struct edhoc_transport;
struct oscore_context;

struct cli_oscore_result {
    long response_len;          /* inner (decrypted) response length in out */
    size_t request_bytes;       /* protected request, CoAP message bytes (last attempt) */
    size_t response_bytes;      /* protected response, CoAP message bytes */
    int attempts;               /* 2 after an Echo challenge */
    bool unprotected_error;     /* the server answered without OSCORE (whatever the code;
                                 * the message is in out, response_len long) */
    uint8_t unprotected_code;
    int transport_err;          /* EDHOC_TRANSPORT_ERR_* when no response */
    int oscore_err;             /* OSCORE_ERR_* of protect/unprotect */
    int bw_err;                 /* EDHOC_BW_ERR_* of an inner block-wise transfer */
    long echo_piv;              /* Partial IV of an Echo challenge, else -1 */
    long response_piv;          /* Partial IV of the (last) response, else -1 */
    unsigned requests;          /* OSCORE requests sent (blocks and Echo retries) */
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
};

/* Why an answer to an OSCORE request that carries no OSCORE option (msg,
 * the whole CoAP message) is not the answer, as one line: "the peer
 * answered without OSCORE: CODE[: DIAGNOSTIC PAYLOAD]", with a hint for
 * "Replay detected". Whatever its code it proves nothing: a successful
 * response to an OSCORE request carries the OSCORE option (RFC 8613
 * Section 2), and an unprotected one may come from anyone on the path. */
void cli_unprotected_answer_text(const uint8_t *msg, size_t len, char *out, size_t cap);

/* Protect req (a plain request message), send it, verify and decrypt the
 * response into out; a protected 4.01 with an Echo option is answered once
 * by repeating the request with that Echo (RFC 8613 Appendix B.1.2).
 * log_name (may be NULL) names the exchange in log. Returns 0 (result
 * filled), or -1 with result->transport_err / oscore_err /
 * unprotected_error saying why. */
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
int cli_oscore_exchange(struct edhoc_transport *t, struct oscore_context *ctx, const uint8_t *req,
                        size_t req_len, uint8_t *out, size_t cap, int timeout_ms,
                        struct cli_dgram_log *log, const char *log_name,
                        struct cli_oscore_result *result);
#endif
