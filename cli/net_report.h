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
/* The CoAP request helpers, the per-exchange datagram accounting and the
 * OSCORE exchanges are the client's (src/client/); the commands that use
 * them get them from here too. */
#include "client_coap.h"
#include "dgram_log.h"
#include "oscore_exchange.h"

struct cli_uri {
    char host[256];
    uint16_t port;
    char path[512];  /* "/a/b" ("" when none) */
    char query[512]; /* "a=1&b" ("" when none) */
};

/* coap://host[:port][/path][?query]; IPv6 hosts in brackets. Returns 0 or
 * -1 after printing why. */
int cli_uri_parse(const char *uri, struct cli_uri *u);

/* Print a payload as text when printable, else as hex (text output; JSON
 * has payload_hex and payload_text, cli_json_set_bytes). */
void cli_print_payload(FILE *f, const uint8_t *p, size_t len);

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
    double host_ms; /* < 0: not measured */
    unsigned frames, fragments;
    double initiator_mj, responder_mj;
};
void cli_air_summary_add(struct cli_air_summary *s, const struct edhoc_netacct_radio *r,
                         const struct edhoc_netacct_air *a, unsigned frames, bool from_initiator);
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

#endif
