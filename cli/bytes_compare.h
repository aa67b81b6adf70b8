/* edhoc-cli bytes --compare: EDHOC (three credential modes) against a DTLS
 * 1.2 handshake of libcoap's OpenSSL backend, measured on loopback in one
 * run. The command line is read by cmd_bytes.c (one table for both modes
 * of `bytes`). */
#ifndef CLI_BYTES_COMPARE_H
#define CLI_BYTES_COMPARE_H

#include <stdbool.h>

#include "edhoc/netacct.h"
#include "output/json_out.h"

struct bytes_compare_opts {
    bool json;
    struct edhoc_netacct_link link;   /* type NONE: no link model */
    struct edhoc_netacct_radio radio; /* energy profile (--radio-profile) */
    bool radio_set;                   /* else the link's built-in one */
    long timeout_ms;                  /* bound on the whole run */
    int verbose;                      /* -v count: progress lines when not a terminal */
    bool quiet;                       /* -q: no progress */
};

/* Returns the process exit code: 0 every run that the libraries support
 * succeeded, 1 a run failed, 128 + signal when SIGINT/SIGTERM cut it short
 * (what completed is printed, marked partial). */
int bytes_compare_run(const struct bytes_compare_opts *o);

/* The parts of the initiator's --json report the comparison uses, read
 * with a JSON parser: the messages in order and the handshake time. */
#define BYTES_INITIATOR_MAX_MSGS 48
struct bytes_initiator_msg {
    char name[48];
    bool from_initiator;
    long edhoc_bytes;     /* -1: not an EDHOC message (null) */
    bool echo_challenged; /* sent again with an Echo value: its EDHOC bytes count once */
    long coap_bytes;
    unsigned datagrams;
};
struct bytes_initiator_report {
    bool ok; /* "outcome": "ok" */
    struct bytes_initiator_msg msgs[BYTES_INITIATOR_MAX_MSGS];
    size_t n_msgs;
    double handshake_ms; /* < 0: null */
};
/* Returns 0, or -1 when text is not a JSON object with a "messages"
 * array of objects (why says what is wrong). */
int bytes_initiator_report_parse(const char *text, struct bytes_initiator_report *r, char *why,
                                 size_t why_cap);

#endif
