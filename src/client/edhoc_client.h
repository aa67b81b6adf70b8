/*
 * The initiator's flow over CoAP (RFC 9528 Appendix A.2, the bare framing
 * of older devices, the RFC 9668 combined request), then its
 * OSCORE-protected requests under the derived context. The engine sends
 * and reads; what happened is in struct edhoc_client_run (every message's
 * bytes per layer, the answers, the failure and its status), which the
 * initiator command prints and `interop` reads back from its report.
 */
#ifndef EDHOC_CLIENT_EDHOC_CLIENT_H
#define EDHOC_CLIENT_EDHOC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dgram_log.h"
#include "edhoc/crypto.h"
#include "edhoc/edhoc.h"
#include "edhoc/netacct.h"
#include "edhoc/oscore.h"

#define EDHOC_CLIENT_MAX_ANSWERS  16
#define EDHOC_CLIENT_MAX_ROWS     64
#define EDHOC_CLIENT_MAX_TRACE    128
#define EDHOC_CLIENT_MAX_ATTEMPTS 4 /* message_1 attempts (suite negotiation) */

/* How a run ended: the numbers are the CLI's exit codes (cli/util.h), so
 * that a command returns them as they are. */
enum edhoc_client_status {
    EDHOC_CLIENT_OK = 0,
    EDHOC_CLIENT_FAILURE = 1,    /* e.g. an unexpected CoAP response */
    EDHOC_CLIENT_USAGE = 2,      /* a request that cannot be encoded */
    EDHOC_CLIENT_INPUT = 3,      /* a file that cannot be written */
    EDHOC_CLIENT_PEER_ERROR = 4, /* the peer sent an EDHOC error message */
    EDHOC_CLIENT_VERIFY = 5,     /* MAC, signature or credential */
    EDHOC_CLIENT_TIMEOUT = 6,    /* no answer, unreachable, name not resolved */
    EDHOC_CLIENT_OSCORE = 7,     /* OSCORE failed, or an answer without it */
    EDHOC_CLIENT_INTERNAL = 10,
};

/* The status of a library error of the EDHOC session or of credentials. */
int edhoc_client_status_for_error(int err);
/* The status of a failed edhoc_transport_client_open: a name that does
 * not resolve is an unreachable peer, not a bad command line. */
int edhoc_client_status_for_open(int rc);

/* One message as it crossed the socket (one direction of an exchange). */
struct edhoc_client_row {
    char name[48];
    char dir;         /* 'I': I -> R, 'R': R -> I */
    long edhoc_bytes; /* -1: not an EDHOC message */
    /* A message_1 the responder answered with 4.01 + Echo before
     * verifying our address (RFC 9175 Section 2.4 item 3, RFC 9528
     * Section 9.7): sent again with the Echo value, so it is the same
     * EDHOC message twice; the EDHOC totals count it once, as they count a
     * retransmission once, and the CoAP/UDP totals count both. */
    bool echo_challenged;
    uint8_t *edhoc; /* the EDHOC message (edhoc_bytes long), NULL when none */
    size_t coap_bytes;
    unsigned datagrams;
    struct edhoc_netacct_total lay; /* those datagrams per layer */
    bool ipv6;
};

/* The decrypted answer to one OSCORE request. */
struct edhoc_client_answer {
    char request[160];
    uint8_t code;
    int cf;
    uint8_t *payload;
    size_t payload_len;
    size_t req_bytes, resp_bytes;
    int attempts;
};

struct edhoc_client_trace_item {
    char name[40];
    uint8_t *v;
    size_t len;
};

struct edhoc_client_run {
    bool got_message_2; /* the peer answered message_1 with a message_2 */
    unsigned tolerated; /* deviations of the peer accepted (--tolerate) */
    unsigned followed;  /* of them, those our message_3 commits too */
    /* What shows the responder accepted message_3 (RFC 9528 Section
     * 5.4.2): "message_4", "oscore_response", "2.04" (its unprotected
     * answer), "unconfirmed" (bare framing: it answers nothing), or NULL
     * (message_3 not sent, or refused). */
    const char *m3_acceptance;
    char diagnosis[320];       /* which deviation explains a failed MAC_2/signature */
    char auto_a2_failure[400]; /* framing auto: why A.2 failed before bare was tried */
    struct edhoc_client_row rows[EDHOC_CLIENT_MAX_ROWS];
    size_t n_rows;
    struct edhoc_client_answer answers[EDHOC_CLIENT_MAX_ANSWERS];
    size_t n_answers;
    struct edhoc_client_trace_item trace[EDHOC_CLIENT_MAX_TRACE];
    size_t n_trace;
    int attempts;
    int exit_code; /* enum edhoc_client_status */
    char failure[400];
    bool have_peer_error;
    long long peer_err_code;
    char peer_diag[160];
    /* SUITES_R of the last error code 2 the responder sent (whether or not
     * a retry followed), so a caller can tell what the device offers. */
    int suites_r[EDHOC_MAX_SUITES];
    size_t n_suites_r;
    struct edhoc_oscore_params osc;
    bool have_osc;
    char no_oscore[320]; /* why the suite has no OSCORE context ("": it has one) */
    int suite;
    int id_cred_r_type; /* EDHOC_ID_CRED_* of the responder's; 0 before message_2 */
    bool have_id_cred_r;
    uint64_t t0, t_handshake, t_end;
    uint64_t t_start; /* before the first framing was tried: wall_ms counts from here */
    size_t exchanges;
    long repeat, repeat_ok, repeat_failed; /* more handshakes after the first */
    double repeat_s;
    uint64_t next_ssn; /* our Sender Sequence Number after this run's requests */
    bool conf_written; /* the context was written for other tools */
    bool partial;      /* the repetitions stopped by SIGINT/SIGTERM */
};

/* The client: what the caller sets before the first handshake, and the
 * engine's own state. */
struct edhoc_client {
    const char *path;  /* the URI's path ("": /.well-known/edhoc) */
    const char *query; /* the URI's query ("" when none) */
    int framing;       /* EDHOC_FRAMING_A2 or EDHOC_FRAMING_BARE */
    bool framing_auto; /* A.2 first, then bare when A.2 got no message_2 */
    bool combined;     /* message_3 in the first OSCORE request (RFC 9668) */
    bool message_4;    /* the responder sends message_4 */
    /* The first request and its name, plain, for the combined request. */
    const uint8_t *first_request;
    size_t first_request_len;
    const char *first_request_name;
    /* Whether OSCORE requests are to follow (then a suite without an
     * OSCORE context fails the handshake). */
    bool oscore_requests;
    struct edhoc_config *cfg;
    edhoc_cred_resolver resolve;
    void *resolve_ctx;
    /* Connection identifiers and ephemeral keys, one per attempt (the
     * last one again when there are fewer). */
    const uint8_t (*c_id)[EDHOC_MAX_CONN_ID];
    const size_t *c_id_len;
    size_t n_c_id;
    const uint8_t (*ephemeral)[EDHOC_CRYPTO_MAX_PRIV];
    const size_t *ephemeral_len;
    size_t n_ephemerals;
    /* Called once message_3 is made (TH_4 and PRK_4e3m known, RFC 9528
     * 5.4.3), and once the OSCORE context is derived; may be NULL. */
    void (*edhoc_keys)(void *user);
    void (*oscore_keys)(void *user, const struct edhoc_oscore_params *p);
    void *keys_user;
    /* The peer, and the transport's outer block size (0: 1024). */
    const char *host;
    uint16_t port;
    unsigned block_size;
    /* The engine's: when the A.2 message_1 stops waiting for an answer
     * under framing auto (0: no such bound), so that bare has its share. */
    uint64_t message_1_deadline;
    uint8_t echo[40];
    size_t echo_len;
    struct edhoc_transport *t;
    struct cli_dgram_log log;
    uint8_t *msg, *req, *resp, *buf;
};

/* Room for an OSCORE request and its response: the largest body and headers. */
size_t edhoc_client_request_cap(void);

/* Open the transport to host:port and the buffers. Returns 0, or the
 * transport's error (c->t NULL) or EDHOC_TRANSPORT_ERR_BUFFER. */
int edhoc_client_open(struct edhoc_client *c);
void edhoc_client_close(struct edhoc_client *c);

/* The trace callback of struct edhoc_config, collecting into a run. */
void edhoc_client_on_trace(void *run, const char *name, const uint8_t *v, size_t len);

/* One handshake (message_1 with suite negotiation and Echo, message_2,
 * message_3 or the combined request, message_4), the OSCORE context
 * derived into osc. Returns 0, or -1 with run->exit_code and
 * run->failure. *combined_done: the first request was answered. */
int edhoc_client_handshake(struct edhoc_client *c, struct edhoc_client_run *run,
                           struct edhoc_session *s, struct edhoc_received *rx,
                           struct oscore_context *osc, uint64_t deadline, bool *combined_done);

/* The first handshake of a run: with framing auto A.2 for at most half of
 * the time left, then bare (on a new transport) when A.2 got no
 * message_2. Returns 0 or -1 as edhoc_client_handshake. */
int edhoc_client_connect(struct edhoc_client *c, struct edhoc_client_run *run,
                         struct edhoc_session *s, struct edhoc_received *rx,
                         struct oscore_context *osc, long timeout_ms, bool *combined_done);

/* One OSCORE request (plain bytes req) under osc, inner block-wise and
 * Echo included; its rows and answer go to run, named after `request`
 * (number i from 0). Returns 0, or -1 with run->exit_code and failure. */
int edhoc_client_oscore_request(struct edhoc_client *c, struct edhoc_client_run *run,
                                struct oscore_context *osc, size_t i, const char *request,
                                const uint8_t *req, size_t req_len, uint8_t *plain, size_t cap,
                                uint64_t deadline);

/* One exit-code contract with `coap`: a final 4.xx or 5.xx response is
 * the request failing (RFC 7252 Section 5.9.2 and 5.9.3), though OSCORE
 * itself worked. Sets run's failure on the first such answer. */
void edhoc_client_check_answers(struct edhoc_client_run *run);

/* Whether an OSCORE context can follow cipher suite `suite`: RFC 9528
 * Appendix A.1 takes the OSCORE HKDF from the suite's application hash,
 * and RFC 8613 Section 3.2.1 allows only the HMAC-based HKDFs (RFC 5869).
 * SHA-256 and SHA-384 have one; SHAKE256 (suite 25, RFC 9528 Section 3.6)
 * is no HMAC hash, so no OSCORE context is defined for it. Returns true
 * with why when none can follow. */
bool edhoc_client_oscore_unavailable(int suite, char *why, size_t cap);

/* Record a failure in run (printf-style). */
void edhoc_client_fail(struct edhoc_client_run *run, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Release the rows' copies of the EDHOC messages. */
void edhoc_client_run_clear_rows(struct edhoc_client_run *run);
/* Everything the run holds: rows, answers, the trace (wiped), the
 * OSCORE parameters (wiped). */
void edhoc_client_run_free(struct edhoc_client_run *run);

#endif
