/*
 * load: many initiators in one process, each with its own socket and C_I,
 * running EDHOC over CoAP (RFC 9528 Appendix A.2) against a responder and
 * then OSCORE requests with the new context, in a loop. One thread drives
 * every peer's state machine without blocking; the results are a
 * bench_report (tables and targets) the program prints.
 *
 * The program fills a struct load_run (settings, EDHOC set-up, hooks),
 * then load_open(), load_measure(), load_report(), load_free().
 */
#ifndef EDHOC_TOOLS_LOAD_H
#define EDHOC_TOOLS_LOAD_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/edhoc.h"
#include "edhoc/oscore.h"
#include "edhoc/transport.h"
#include "bench_report.h"

#define LOAD_MAX_PEERS   1000
#define LOAD_MAX_CAUSES  16
#define LOAD_PAYLOAD     32
#define LOAD_MAX_SAMPLES 2000000

/* PEER_BACKOFF: after a transport failure, waiting for retry_ns before
 * the next attempt (RFC 7252 Section 4.8: no flooding of a peer that
 * does not answer). */
enum load_state {
    PEER_IDLE,
    PEER_WAIT_M2,
    PEER_WAIT_M3,
    PEER_WAIT_RESPONSE,
    PEER_BACKOFF,
    PEER_DONE
};

/* The backoff after a transport failure: from the first delay, doubled by
 * each failure in a row up to the last, and forgotten at a success. */
#define LOAD_BACKOFF_FIRST_MS 100
#define LOAD_BACKOFF_MAX_MS   2000

struct load_peer {
    struct edhoc_transport *t;
    enum load_state state;
    struct edhoc_session s;
    struct oscore_context osc;
    struct oscore_binding b;
    uint8_t token[8];
    size_t token_len;
    uint64_t started_ns; /* the current handshake */
    uint64_t sent_ns;    /* the outstanding request */
    unsigned requests_left;
    unsigned generation; /* handshakes started by this peer (part of C_I) */
    bool have_ctx;       /* an OSCORE context from this peer's last handshake */
    bool sent_plain;     /* the outstanding request is unprotected */
    /* The current handshake's message_1 request, kept to be sent again
     * with the Echo value of a 4.01 (RFC 9175 Section 2.3). */
    uint8_t m1[512];
    size_t m1_len;
    bool echo_sent;      /* this handshake's message_1 already carried an Echo */
    unsigned backoff_ms; /* the next backoff's length; 0: no failure in a row */
    uint64_t retry_ns;   /* PEER_BACKOFF: when the next attempt may start */
};

/* --flood-sources: message_1s from many source addresses that never send
 * message_3, while the peers run their handshakes beside them. One
 * socket bound to the wildcard address chooses each datagram's source
 * among 127.1.0.1 and up with IP_PKTINFO, so the number of sources is
 * not limited by open files (127.0.0.0/8 is all loopback on Linux). */
#define FLOOD_TEMPLATES 8
#define FLOOD_BATCH     512 /* at most this many sends per turn of the loop */

struct load_flood {
    size_t sources;
    double rate;      /* message_1s per second over all sources */
    bool answer_echo; /* prove each source's address, then still abandon */
    int fd;
    struct sockaddr_in dst;
    uint8_t tmpl[FLOOD_TEMPLATES][256];
    size_t tmpl_len[FLOOD_TEMPLATES];
    uint16_t mid;
    bool active;
    uint64_t started_ns;
    uint64_t sent, send_errors, echo_resent;
    /* What the responder answered the flood, by kind. */
    uint64_t answered_echo, answered_message_2, answered_other;
};

struct load_series {
    double *v;
    size_t n, cap;
};

struct load_run {
    /* The initiators' EDHOC set-up, the program's (its credential options):
     * the config every peer's session starts from, the resolver of the
     * responder's credential, and what the report says of them. */
    const struct edhoc_config *cfg;
    edhoc_cred_resolver resolve;
    void *resolve_ctx;
    int method, suite, id_cred_type;
    bool message_4;
    /* Both sides of an in-process handshake, for the crypto floor. */
    const struct bench_side_maker *floor_sides;
    /* Where the run says how far it is (may be NULL), that a phase
     * ended, and whether it is to stop (SIGINT/SIGTERM; may be NULL). */
    void (*progress)(void *ctx, const char *text);
    void (*progress_end)(void *ctx);
    void *progress_ctx;
    int (*interrupted)(void);
    struct edhoc_received rx;
    struct load_peer *peers;
    size_t n_peers;
    char uri[256];
    char host[128];
    uint16_t port;
    char path[128]; /* the EDHOC resource: the URI's path, /.well-known/edhoc when none */
    unsigned requests_per_peer;
    double duration_s;
    long max_handshakes; /* 0: no limit (duration only) */
    int timeout_ms;
    bool plain;
    bool vs_plain; /* alternate OSCORE and unprotected windows to compare them */
    /* --vs-plain: totals per kind of window, [0] OSCORE, [1] unprotected. */
    double mode_seconds[2], mode_cpu[2], mode_generator_cpu[2];
    long mode_echo[2];
    long mode_requests[2], mode_handshakes[2], mode_failures[2];
    struct load_series plain_lat;
    bool stopping;
    long responder_pid;           /* 0: not known */
    unsigned responder_processes; /* it and its workers, at the last CPU sample */
    bool pid_given;
    uint8_t plain_code; /* response code of the unprotected requests */
    long hs_started, hs_ok, req_ok, failures;
    long message_1_failures; /* failures while sending message_1 or awaiting message_2 */
    long echo_challenges;    /* 4.01 + Echo answers to the peers' message_1s */
    struct load_flood flood;
    long no_oscore; /* OSCORE requests answered without OSCORE (among failures) */
    /* Answers by the kind of request [OSCORE, unprotected], whether the
     * answer was protected [no, yes] and its code (the inner code of a
     * verified OSCORE response): what the responder said, counted. */
    long answers[2][2][256];
    struct {
        char cause[32];  /* a word: timeout, transport, edhoc_error, ... */
        char detail[64]; /* the code or library error, "" when none */
        long count;
    } causes[LOAD_MAX_CAUSES];
    size_t n_causes;
    struct load_series hs_lat, req_lat;
    uint8_t msg[EDHOC_MAX_MESSAGE + 16];
    uint8_t coap[EDHOC_TRANSPORT_MAX_MESSAGE];
    uint8_t resp[EDHOC_TRANSPORT_MAX_MESSAGE];
    uint8_t inner[EDHOC_TRANSPORT_MAX_MESSAGE];
};

/* What one phase of a load run measured. */
struct load_phase_result {
    bool plain;
    double seconds, cpu_s; /* cpu_s: NAN when the responder is not local */
    double generator_cpu_s;
    long handshakes, requests, failures, echo_challenges;
    size_t flood_sources; /* 0: no flood in this phase */
    uint8_t plain_code;
};

/* A run's phases: one, or two with --flood-sources (unloaded, flood) or
 * --vs-plain (OSCORE, unprotected windows summed). */
struct load_result {
    struct load_phase_result phases[2];
    size_t n_phases;
    bool partial;                    /* stopped by an interruption */
    double first_seconds;            /* the first phase's wall clock */
    struct load_series unloaded_lat; /* --flood-sources: the first phase's handshakes */
};

/* The responder's state writer over the first phase, when the program
 * could read its figures (cli/state_stats.h). */
struct load_writer_delta {
    bool known;
    uint64_t commits, rows, failed;
    /* A fleet's responder: its store's round trips over the run, and the
     * handshakes it counted meanwhile. */
    bool fleet;
    uint64_t round_trips, fleet_handshakes;
    /* Of those, the round trips of serving OSCORE requests (all but the
     * puts), and the OSCORE requests it answered. */
    uint64_t serving_round_trips, fleet_requests;
    const char *path;
};

/* The target of the responder's handshakes per CPU-second over its crypto
 * floor rate (issue #15). */
#define RESPONDER_CPU_OF_FLOOR_TARGET 0.85

/* r->uri, host, port and path from "coap://HOST[:PORT][/PATH]"; 0, or
 * -1 (not such a URI; a query, which load does not send, is refused). */
int load_parse_uri(struct load_run *r, const char *uri);
/* The local process serving r's port (a responder's supervisor for its
 * workers), or 0: only for a loopback host. */
long load_responder_of_port(const struct load_run *r);
/* Raise the open-file limit for want_peers clients; how many fit. */
size_t load_raise_fd_limit(size_t want_peers);

/* Open the flood socket and its message_1s (r->flood.sources > 0), then a
 * client per peer. 0; TOOLS_ERR_USAGE with why in error (the flood); or
 * the transport's error opening client *failed_peer. */
int load_open(struct load_run *r, char *error, size_t cap, size_t *failed_peer);
/* Run the load: the phases r asks for. after_first (may be NULL) is
 * called when the first phase has ended, before a second begins. */
void load_measure(struct load_run *r, struct load_result *res, void (*after_first)(void *ctx),
                  void *ctx);
/* The report of a measured run (tables load, load_latency, load_answers,
 * load_failures, load_flood), with the crypto floor measured now. 0 or
 * TOOLS_ERR_INTERNAL. */
int load_report(struct load_run *r, struct load_result *res, const struct load_writer_delta *wd,
                struct bench_report *report);
/* Close every client and wipe the peers' sessions and contexts (r itself
 * is the caller's). */
void load_free(struct load_run *r);

#endif
