/*
 * edhoc-cli initiator URI: EDHOC (RFC 9528) against a CoAP peer, in the
 * Appendix A.2 framing, the bare framing of older devices or with the
 * RFC 9668 combined request; then OSCORE-protected requests with the
 * derived context. Reports every message as EDHOC bytes and, from the
 * datagrams that actually crossed the socket, per layer: CoAP message (UDP
 * payload), UDP datagram, IP packet and, with --link / --link-mtu, link
 * frames and bytes; --pcap writes those datagrams to a capture file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "edhoc/blockwise.h"
#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/oscore.h"
#include "edhoc/transport.h"
#include "edhoc_args.h"
#include "exporter.h"
#include "json_out.h"
#include "keylog.h"
#include "net_report.h"
#include "oscore_seq.h"
#include "progress.h"
#include "util.h"

#define MAX_REQUESTS 16
#define MAX_ROWS 64
#define MAX_TRACE 128

struct row {
    char name[48];
    char dir; /* 'I': I -> R, 'R': R -> I */
    long edhoc_bytes; /* -1: not an EDHOC message */
    /* A message_1 the responder answered with 4.01 + Echo before
     * verifying our address (RFC 9175 Section 2.4 item 3, RFC 9528
     * Section 9.7): sent again with the Echo value, so it is the same
     * EDHOC message twice; the EDHOC totals count it once, as they count a
     * retransmission once, and the CoAP/UDP totals count both. */
    bool echo_challenged;
    uint8_t *edhoc;   /* the EDHOC message (edhoc_bytes long), NULL when none */
    size_t coap_bytes;
    unsigned datagrams;
    struct edhoc_netacct_total lay; /* those datagrams per layer */
    bool ipv6;
};

struct answer {
    char request[160];
    uint8_t code;
    int cf;
    uint8_t *payload;
    size_t payload_len;
    size_t req_bytes, resp_bytes;
    int attempts;
};

struct trace_item {
    char name[40];
    uint8_t *v;
    size_t len;
};

struct run {
    bool got_message_2;     /* the peer answered message_1 with a message_2 */
    unsigned tolerated;     /* deviations of the peer accepted (--tolerate) */
    unsigned followed;      /* of them, those our message_3 commits too */
    /* What shows the responder accepted message_3 (RFC 9528 Section
     * 5.4.2): "message_4", "oscore_response", "2.04" (its unprotected
     * answer), "unconfirmed" (bare framing: it answers nothing), or NULL
     * (message_3 not sent, or refused). */
    const char *m3_acceptance;
    char diagnosis[320];    /* which deviation explains a failed MAC_2/signature */
    char auto_a2_failure[400]; /* --framing auto: why A.2 failed before bare was tried */
    struct row rows[MAX_ROWS];
    size_t n_rows;
    struct answer answers[MAX_REQUESTS];
    size_t n_answers;
    struct trace_item trace[MAX_TRACE];
    size_t n_trace;
    int attempts;
    int exit_code;
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
    char no_oscore[320];    /* why the suite has no OSCORE context ("": it has one) */
    struct cli_exports exports; /* --export values, computed after the handshake */
    bool have_exports;
    int suite;
    char id_cred_r[16];
    uint64_t t0, t_handshake, t_end;
    uint64_t t_start; /* before the first framing was tried: wall_ms counts from here */
    size_t exchanges;
    long repeat, repeat_ok, repeat_failed; /* --repeat */
    double repeat_s;
    uint64_t next_ssn;  /* our Sender Sequence Number after this run's requests */
    bool conf_written;  /* --export-oscore-conf done */
    bool partial;       /* --repeat stopped by SIGINT/SIGTERM */
};

/* Release the rows' copies of the EDHOC messages. */
static void run_clear_rows(struct run *run)
{
    for (size_t i = 0; i < run->n_rows; i++) {
        free(run->rows[i].edhoc);
        run->rows[i].edhoc = NULL;
    }
    run->n_rows = 0;
}

static void on_trace(void *ctx, const char *name, const uint8_t *v, size_t len)
{
    struct run *run = ctx;
    if (run->n_trace >= MAX_TRACE)
        return;
    struct trace_item *t = &run->trace[run->n_trace];
    t->v = malloc(len ? len : 1);
    if (!t->v)
        return;
    memcpy(t->v, v, len);
    t->len = len;
    snprintf(t->name, sizeof t->name, "%s", name);
    run->n_trace++;
}

/* edhoc: the message's bytes (edhoc_bytes long; NULL with -1), kept for
 * the JSON report. */
static void add_row(struct run *run, const char *name, char dir, const uint8_t *edhoc,
                    long edhoc_bytes, size_t coap_bytes, unsigned datagrams,
                    const struct cli_exchange *e)
{
    if (run->n_rows >= MAX_ROWS)
        return;
    struct row *r = &run->rows[run->n_rows++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->dir = dir;
    r->edhoc_bytes = edhoc && edhoc_bytes >= 0 ? edhoc_bytes : -1;
    if (r->edhoc_bytes >= 0) {
        r->edhoc = malloc(edhoc_bytes ? (size_t)edhoc_bytes : 1);
        if (r->edhoc)
            memcpy(r->edhoc, edhoc, (size_t)edhoc_bytes);
    }
    r->coap_bytes = coap_bytes;
    r->datagrams = datagrams;
    if (e) {
        r->lay = dir == 'I' ? e->sent_layers : e->received_layers;
        r->ipv6 = e->ipv6;
    }
    if (edhoc_bytes > 0)
        r->lay.edhoc = (size_t)edhoc_bytes;
}

/* Rows for the exchange just finished (request and response directions). */
static void add_exchange_rows(struct run *run, const struct cli_dgram_log *log, const char *req_name,
                              const uint8_t *req_msg, long req_edhoc, const char *resp_name,
                              const uint8_t *resp_msg, long resp_edhoc)
{
    if (log->n == 0)
        return;
    const struct cli_exchange *e = &log->ex[log->n - 1];
    add_row(run, req_name, 'I', req_msg, req_edhoc, e->bytes_sent, e->dgrams_sent, e);
    if (resp_name && e->dgrams_received)
        add_row(run, resp_name, 'R', resp_msg, resp_edhoc, e->bytes_received,
                e->dgrams_received, e);
    run->exchanges++;
}

static void fail(struct run *run, int exit_code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#include <stdarg.h>
static void fail(struct run *run, int exit_code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run->failure, sizeof run->failure, fmt, ap);
    va_end(ap);
    run->exit_code = exit_code;
}

static int left_ms(uint64_t deadline)
{
    uint64_t now = cli_now_ns();
    return now >= deadline ? 0 : (int)((deadline - now) / 1000000);
}

static int transport_exit(long rc)
{
    return rc == EDHOC_TRANSPORT_ERR_TIMEOUT || rc == EDHOC_TRANSPORT_ERR_UNREACHABLE
               ? CLI_EXIT_TIMEOUT
               : CLI_EXIT_FAILURE;
}

static void note_peer_error(struct run *run, const struct edhoc_error_info *info)
{
    run->have_peer_error = true;
    run->peer_err_code = (long long)info->code;
    size_t n = info->text_len < sizeof run->peer_diag - 1 ? info->text_len : sizeof run->peer_diag - 1;
    if (info->text && n)
        memcpy(run->peer_diag, info->text, n);
    run->peer_diag[n] = '\0';
}

/* A peer's EDHOC error message in a response. */
static void peer_error(struct run *run, const uint8_t *msg, size_t len, uint8_t code,
                       const char *when)
{
    struct edhoc_error_info info;
    if (edhoc_error_message_parse(msg, len, &info) == 0) {
        note_peer_error(run, &info);
        fail(run, CLI_EXIT_PEER_ERROR, "the responder answered %s with an EDHOC error (%d.%02d): "
             "ERR_CODE %lld%s%s", when, code >> 5, code & 31, run->peer_err_code,
             run->peer_diag[0] ? ": " : "", run->peer_diag);
    } else {
        char cn[48];
        fail(run, CLI_EXIT_FAILURE, "the responder answered %s with %s", when,
             cli_coap_code_name(code, cn, sizeof cn));
    }
}

struct ctx {
    struct cli_edhoc_opts o;
    struct cli_uri uri;
    const char *requests[MAX_REQUESTS];
    size_t n_requests;
    int framing;
    bool combined;
    long timeout_ms;
    int verbose;
    bool quiet;
    long block_size;
    bool framing_auto; /* --framing auto: A.2 first, then bare */
    /* --framing auto: when the A.2 message_1 stops waiting for an answer
     * (0: no such bound), so that bare has its share of --timeout. */
    uint64_t message_1_deadline;
    long repeat;
    uint8_t echo[40];
    size_t echo_len;
    struct cli_side side;
    struct edhoc_transport *t;
    struct cli_dgram_log log;
    struct cli_net_opts net;
    struct edhoc_capture *capture;
    uint8_t *msg, *req, *resp, *buf;
    const char *export_conf;      /* --export-oscore-conf FILE */
    const char *keylog_dir;       /* --keylog DIR */
    struct cli_keylog keylog;     /* its two files, open while keylog_dir */
    struct edhoc_key_log klog;    /* the secrets of the handshake running */
    const char *state_dir_arg;    /* --state-dir */
    char seq_file[PATH_MAX];      /* FILE.seq */
    char state_dir[PATH_MAX];     /* "" with --state-dir none */
    struct cli_exports exports;   /* --export requests (values stay NULL here) */
};

/* Room for a --request and its response: the largest body and headers. */
#define REQUEST_CAP (EDHOC_BW_DEFAULT_MAX_BODY + EDHOC_TRANSPORT_MAX_MESSAGE)

/* --payload-file: the payload of every --request given without one. */
static uint8_t *file_payload;
static size_t file_payload_len;

/* "METHOD PATH [PAYLOAD]" -> a plain request. */
static long build_user_request(const char *spec, uint8_t *out, size_t cap, char *err, size_t errcap)
{
    char m[16], path[512];
    const char *sp = strchr(spec, ' ');
    if (!sp || (size_t)(sp - spec) >= sizeof m) {
        snprintf(err, errcap, "--request '%s': expected 'METHOD PATH [PAYLOAD]'", spec);
        return -1;
    }
    memcpy(m, spec, (size_t)(sp - spec));
    m[sp - spec] = '\0';
    while (*sp == ' ')
        sp++;
    size_t pl = strcspn(sp, " ");
    if (pl == 0 || pl >= sizeof path) {
        snprintf(err, errcap, "--request '%s': no path", spec);
        return -1;
    }
    memcpy(path, sp, pl);
    path[pl] = '\0';
    const char *payload = sp + pl;
    if (*payload == ' ')
        payload++;
    int code = cli_coap_method(m);
    if (code < 0) {
        snprintf(err, errcap, "--request '%s': unknown method %s", spec, m);
        return -1;
    }
    char *q = strchr(path, '?');
    const char *query = "";
    if (q) {
        *q = '\0';
        query = q + 1;
    }
    const uint8_t *body = (const uint8_t *)payload;
    size_t body_len = strlen(payload);
    if (!body_len && file_payload) {
        body = file_payload;
        body_len = file_payload_len;
    }
    long n = cli_coap_build_request((uint8_t)code, path, query, body_len ? 0 : -1, body, body_len,
                                    -1, out, cap);
    if (n < 0)
        snprintf(err, errcap, "--request '%s': cannot encode", spec);
    return n;
}

/* POST an EDHOC message; returns the response length or a transport error. */
static long edhoc_post_as(struct ctx *c, const uint8_t *prefix, size_t prefix_len,
                          const uint8_t *m, size_t m_len, uint64_t deadline, int timeout_cap_ms,
                          bool confirmable);

/* --output FILE: where the body of the last --request's response goes. */
static const char *output_path;

static int read_payload_file(const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "edhoc-cli initiator: --payload-file %s: %s\n", path, strerror(errno));
        return -1;
    }
    free(file_payload);
    file_payload = malloc(EDHOC_BW_DEFAULT_MAX_BODY + 1);
    size_t n = file_payload ? fread(file_payload, 1, EDHOC_BW_DEFAULT_MAX_BODY + 1, f) : 0;
    bool bad = !file_payload || ferror(f) || n > EDHOC_BW_DEFAULT_MAX_BODY;
    if (f != stdin)
        fclose(f);
    if (bad) {
        fprintf(stderr, "edhoc-cli initiator: --payload-file %s: %s\n", path,
                file_payload ? "unreadable or above 65536 bytes" : "out of memory");
        free(file_payload);
        file_payload = NULL;
        return -1;
    }
    file_payload_len = n;
    return 0;
}

static long edhoc_post(struct ctx *c, const uint8_t *prefix, size_t prefix_len, const uint8_t *m,
                       size_t m_len, uint64_t deadline, int timeout_cap_ms)
{
    return edhoc_post_as(c, prefix, prefix_len, m, m_len, deadline, timeout_cap_ms, true);
}

static long edhoc_post_as(struct ctx *c, const uint8_t *prefix, size_t prefix_len,
                          const uint8_t *m, size_t m_len, uint64_t deadline, int timeout_cap_ms,
                          bool confirmable)
{
    if (prefix_len + m_len > EDHOC_TRANSPORT_MAX_MESSAGE - 600)
        return EDHOC_TRANSPORT_ERR_BUFFER;
    memcpy(c->buf, prefix, prefix_len);
    memcpy(c->buf + prefix_len, m, m_len);
    const char *path = c->uri.path[0] ? c->uri.path : EDHOC_COAP_WELL_KNOWN;
    long n = cli_coap_build_request(
        COAP_CODE_POST, path, c->uri.query,
        c->framing == EDHOC_FRAMING_A2 ? EDHOC_COAP_CF_CID_EDHOC : -1, c->buf, prefix_len + m_len,
        -1, c->req, EDHOC_TRANSPORT_MAX_MESSAGE);
    if (n < 0)
        return EDHOC_TRANSPORT_ERR_MALFORMED;
    if (c->echo_len) {
        /* The server asked for proof of reachability (RFC 9528 A.2, RFC 9175). */
        long en = cli_coap_with_echo(c->req, (size_t)n, c->echo, c->echo_len, c->buf,
                                     EDHOC_TRANSPORT_MAX_MESSAGE);
        if (en < 0)
            return EDHOC_TRANSPORT_ERR_MALFORMED;
        memcpy(c->req, c->buf, (size_t)en);
        n = en;
        c->echo_len = 0;
    }
    int left = left_ms(deadline);
    if (timeout_cap_ms > 0 && left > timeout_cap_ms)
        left = timeout_cap_ms;
    if (confirmable)
        return edhoc_transport_client_request(c->t, c->req, (size_t)n, c->resp,
                                              EDHOC_TRANSPORT_MAX_MESSAGE, left);
    uint8_t tok[8];
    size_t tl = 0;
    int rc = edhoc_transport_client_send(c->t, c->req, (size_t)n, false, tok, &tl);
    if (rc)
        return rc;
    long rn = edhoc_transport_client_wait(c->t, tok, tl, c->resp, EDHOC_TRANSPORT_MAX_MESSAGE, left);
    edhoc_transport_client_forget(c->t, tok, tl);
    return rn;
}

/* A 4.01 carrying an Echo option: keep its value for the repeated request. */
static bool take_echo(struct ctx *c, const uint8_t *resp, size_t len)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(resp, len, &m) || m.code != COAP_CODE_UNAUTHORIZED)
        return false;
    const struct coap_option *o = edhoc_coap_msg_find_option(&m, COAP_OPT_ECHO);
    if (!o || o->len == 0 || o->len > sizeof c->echo)
        return false;
    memcpy(c->echo, o->value, o->len);
    c->echo_len = o->len;
    return true;
}

/* After a local failure: tell the responder (best effort, not waited for long). */
static void send_error(struct ctx *c, const struct edhoc_session *s, uint64_t deadline,
                       struct run *run)
{
    uint8_t err[EDHOC_MAX_ERROR_MESSAGE];
    int n = edhoc_session_write_error(s, err, sizeof err);
    if (n <= 0)
        return;
    uint8_t pre[EDHOC_MAX_CONN_ID + 1];
    long pl = 0;
    if (c->framing == EDHOC_FRAMING_A2) {
        size_t c_r_len = 0;
        const uint8_t *c_r = edhoc_session_peer_conn_id(s, &c_r_len);
        if (!c_r || c_r_len == 0)
            return;
        pl = edhoc_coap_cid_encode(c_r, c_r_len, pre, sizeof pre);
        if (pl < 0)
            return;
    }
    cli_dgram_log_begin(&c->log, "error");
    long rn = edhoc_post(c, pre, (size_t)pl, err, (size_t)n, deadline, 1000);
    c->log.current = -1;
    add_exchange_rows(run, &c->log, "error", err, n, rn > 0 ? "(response)" : NULL, NULL, -1);
}

static int handshake(struct ctx *c, struct run *run, struct edhoc_session *s,
                     struct edhoc_received *rx, struct oscore_context *osc, uint64_t deadline,
                     bool *combined_done)
{
    const struct cli_side_opts *so = &c->o.side[CLI_SIDE_I];
    int rc = edhoc_session_init(s, EDHOC_INITIATOR, &c->side.cfg);
    if (rc) {
        fail(run, CLI_EXIT_INTERNAL, "cannot start the session: %s", edhoc_strerror(rc));
        return -1;
    }
    long m2_len = 0;
    for (int attempt = 0;; attempt++) {
        run->attempts = attempt + 1;
        if (attempt >= CLI_MAX_ATTEMPTS) {
            fail(run, CLI_EXIT_PEER_ERROR, "no common cipher suite after %d attempts", attempt);
            return -1;
        }
        if (so->n_c_id) {
            size_t k = (size_t)attempt < so->n_c_id ? (size_t)attempt : so->n_c_id - 1;
            edhoc_session_set_conn_id(s, so->c_id[k], so->c_id_len[k]);
        }
        if (c->side.n_ephemerals) {
            size_t k = (size_t)attempt < c->side.n_ephemerals ? (size_t)attempt
                                                               : c->side.n_ephemerals - 1;
            edhoc_session_set_ephemeral(s, c->side.ephemerals[k], c->side.ephemeral_len[k]);
        }
        int n = edhoc_initiator_prepare_message_1(s, c->msg, EDHOC_MAX_MESSAGE);
        if (n < 0) {
            fail(run, cli_exit_for_edhoc_error(n), "message_1: %s", edhoc_strerror(n));
            return -1;
        }
        static const uint8_t true_prefix = 0xf5;
        uint64_t m1_deadline = c->message_1_deadline && c->message_1_deadline < deadline
                                   ? c->message_1_deadline
                                   : deadline;
        cli_dgram_log_begin(&c->log, "message_1");
        long rn = edhoc_post(c, &true_prefix, c->framing == EDHOC_FRAMING_A2 ? 1 : 0, c->msg,
                             (size_t)n, m1_deadline, 0);
        c->log.current = -1;
        if (rn > 0 && take_echo(c, c->resp, (size_t)rn)) {
            size_t challenged = run->n_rows;
            add_exchange_rows(run, &c->log, "message_1", c->msg, n, "(4.01 Echo)", NULL, -1);
            if (challenged < run->n_rows)
                run->rows[challenged].echo_challenged = true;
            cli_dgram_log_begin(&c->log, "message_1 (Echo)");
            rn = edhoc_post(c, &true_prefix, c->framing == EDHOC_FRAMING_A2 ? 1 : 0, c->msg,
                            (size_t)n, m1_deadline, 0);
            c->log.current = -1;
        }
        if (rn < 0) {
            add_exchange_rows(run, &c->log, "message_1", c->msg, n, NULL, NULL, -1);
            fail(run, transport_exit(rn), "message_1 to %s: %s",
                 edhoc_transport_client_peer(c->t),
                 rn == EDHOC_TRANSPORT_ERR_TIMEOUT ? "timeout, no response"
                                                   : edhoc_transport_strerror((int)rn));
            return -1;
        }
        uint8_t code;
        int cf;
        const uint8_t *pl;
        size_t pll;
        if (cli_coap_response_view(c->resp, (size_t)rn, &code, &cf, &pl, &pll)) {
            fail(run, CLI_EXIT_FAILURE, "malformed CoAP response to message_1");
            return -1;
        }
        if (code == COAP_CODE_CHANGED && pll) {
            run->got_message_2 = true;
            add_exchange_rows(run, &c->log, "message_1", c->msg, n, "message_2", pl, (long)pll);
            memcpy(c->buf, pl, pll);
            m2_len = (long)pll;
            break;
        }
        if (pll && edhoc_message_is_error(pl, pll)) {
            add_exchange_rows(run, &c->log, "message_1", c->msg, n, "error", pl, (long)pll);
            struct edhoc_error_info info;
            if (edhoc_error_message_parse(pl, pll, &info) == 0 && info.code == 2) {
                memcpy(run->suites_r, info.suites, info.n_suites * sizeof info.suites[0]);
                run->n_suites_r = info.n_suites;
            }
            int prc = edhoc_session_process_error(s, pl, pll, &info);
            if (prc == 0)
                continue; /* SUITES_R names a suite we have: try again with it */
            if (prc == EDHOC_ERR_PEER_ERROR) {
                peer_error(run, pl, pll, code, "message_1");
            } else if (run->n_suites_r) {
                /* Error code 2 naming none of our suites. */
                run->have_peer_error = true;
                run->peer_err_code = 2;
                run->peer_diag[0] = '\0';
                fail(run, CLI_EXIT_PEER_ERROR,
                     "the responder rejected message_1 with ERR_CODE 2: %s (SUITES_R names "
                     "none of ours)", edhoc_strerror(prc));
            } else {
                fail(run, CLI_EXIT_PEER_ERROR, "the responder rejected message_1: %s",
                     edhoc_strerror(prc));
            }
            return -1;
        }
        add_exchange_rows(run, &c->log, "message_1", c->msg, n, "(response)", NULL, -1);
        char cn[48];
        fail(run, CLI_EXIT_FAILURE, "the responder answered message_1 with %s%s",
             cli_coap_code_name(code, cn, sizeof cn), pll ? "" : " and no payload");
        return -1;
    }
    run->suite = edhoc_session_suite(s);

    rc = edhoc_initiator_handle_message_2(s, c->buf, (size_t)m2_len, rx, cli_edhoc_resolve,
                                          &c->side);
    if (rc) {
        char why[400];
        edhoc_session_error_text(s, why, sizeof why);
        struct edhoc_diagnosis d;
        if (edhoc_session_diagnosis(s, &d) == 0)
            snprintf(run->diagnosis, sizeof run->diagnosis, "%s", d.text);
        fail(run, cli_exit_for_edhoc_error(rc), "message_2 verification failed: %s",
             why[0] ? why : edhoc_strerror(rc));
        send_error(c, s, deadline, run);
        return -1;
    }
    /* A deviation accepted with --tolerate is said on this handshake. */
    run->tolerated = edhoc_session_tolerated(s);
    snprintf(run->id_cred_r, sizeof run->id_cred_r, "%s",
             cli_id_cred_type_name(cli_id_cred_type_of(rx->id_cred, rx->id_cred_len)));

    int n3 = edhoc_initiator_prepare_message_3(s, c->msg, EDHOC_MAX_MESSAGE);
    if (n3 < 0) {
        fail(run, cli_exit_for_edhoc_error(n3), "message_3: %s", edhoc_strerror(n3));
        return -1;
    }
    run->followed = edhoc_session_followed(s);
    /* TH_4 and PRK_4e3m are known once message_3 is made (RFC 9528 5.4.3). */
    if (c->keylog_dir && cli_keylog_write_edhoc(&c->keylog, &c->klog) != 0)
        fprintf(stderr, "edhoc-cli initiator: warning: --keylog %s/" CLI_KEYLOG_EDHOC_FILE ": %s\n",
                c->keylog_dir, strerror(errno));
    edhoc_key_log_wipe(&c->klog);
    if (cli_oscore_unavailable(edhoc_session_suite(s), run->no_oscore, sizeof run->no_oscore)) {
        /* Refused before message_1 when OSCORE was to follow; this is an
         * EDHOC-only handshake (--request none) and goes on without it. */
        if (c->n_requests || c->combined) {
            fail(run, CLI_EXIT_OSCORE, "%s", run->no_oscore);
            return -1;
        }
        goto no_oscore;
    }
    rc = edhoc_session_oscore(s, &run->osc);
    if (!rc)
        rc = oscore_context_init_edhoc(osc, edhoc_crypto_default(), run->osc.master_secret,
                                       run->osc.master_secret_len, run->osc.master_salt,
                                       run->osc.master_salt_len, run->osc.sender_id,
                                       run->osc.sender_id_len, run->osc.recipient_id,
                                       run->osc.recipient_id_len, run->osc.aead_alg,
                                       run->osc.hash_alg);
    if (rc) {
        fail(run, CLI_EXIT_OSCORE, "cannot derive the OSCORE context: %s",
             rc < -3999 ? edhoc_strerror(rc) : oscore_strerror(rc));
        return -1;
    }
    run->have_osc = true;
    if (c->keylog_dir && cli_keylog_write_oscore(&c->keylog, &run->osc) != 0)
        fprintf(stderr, "edhoc-cli initiator: warning: --keylog %s/" CLI_KEYLOG_OSCORE_FILE ": %s\n",
                c->keylog_dir, strerror(errno));

no_oscore:
    if (c->combined) {
        /* RFC 9668: message_3 rides in front of the first OSCORE request. */
        char err[200];
        long qn = build_user_request(c->requests[0], c->req, EDHOC_TRANSPORT_MAX_MESSAGE, err,
                                     sizeof err);
        if (qn < 0) {
            fail(run, CLI_EXIT_USAGE, "%s", err);
            return -1;
        }
        uint8_t *prot = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
        uint8_t *comb = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
        uint8_t *plain = malloc(OSCORE_MAX_PLAINTEXT + 64);
        int ret = -1;
        struct oscore_binding b;
        long pn = prot && comb && plain ? oscore_protect_request(osc, c->req, (size_t)qn, prot,
                                                                 EDHOC_TRANSPORT_MAX_MESSAGE, &b)
                                        : OSCORE_ERR_BUFFER;
        struct coap_msg m;
        if (pn < 0 || edhoc_coap_msg_parse(prot, (size_t)pn, &m) ||
            m.payload_len + (size_t)n3 > EDHOC_TRANSPORT_MAX_MESSAGE - 200) {
            fail(run, CLI_EXIT_OSCORE, "cannot protect the combined request: %s",
                 oscore_strerror(pn < 0 ? (int)pn : OSCORE_ERR_TOO_LARGE));
            goto comb_out;
        }
        memcpy(c->buf, c->msg, (size_t)n3);
        memcpy(c->buf + n3, m.payload, m.payload_len);
        m.payload = c->buf;
        m.payload_len += (size_t)n3;
        edhoc_coap_msg_add_option(&m, EDHOC_COAP_OPTION_EDHOC, NULL, 0);
        long cn = edhoc_coap_msg_encode(&m, comb, EDHOC_TRANSPORT_MAX_MESSAGE);
        if (cn < 0) {
            fail(run, CLI_EXIT_INTERNAL, "cannot encode the combined request");
            goto comb_out;
        }
        cli_dgram_log_begin(&c->log, "message_3 + OSCORE request 1");
        long rn = edhoc_transport_client_request(c->t, comb, (size_t)cn, c->resp,
                                                 EDHOC_TRANSPORT_MAX_MESSAGE, left_ms(deadline));
        c->log.current = -1;
        if (rn < 0) {
            add_exchange_rows(run, &c->log, "message_3 + OSCORE request 1", c->msg, n3, NULL, NULL,
                              -1);
            fail(run, transport_exit(rn), "combined request: %s",
                 rn == EDHOC_TRANSPORT_ERR_TIMEOUT ? "timeout, no response"
                                                   : edhoc_transport_strerror((int)rn));
            goto comb_out;
        }
        struct coap_msg r;
        if (edhoc_coap_msg_parse(c->resp, (size_t)rn, &r)) {
            fail(run, CLI_EXIT_FAILURE, "malformed response to the combined request");
            goto comb_out;
        }
        if (!edhoc_coap_msg_find_option(&r, COAP_OPT_OSCORE)) {
            add_exchange_rows(run, &c->log, "message_3 + OSCORE request 1", c->msg, n3,
                              "error", r.payload, (long)r.payload_len);
            /* An EDHOC error refuses message_3 (RFC 9668 Section 3.3.1);
             * anything else unprotected answers nothing we asked, whatever
             * its code (RFC 8613 Section 2). */
            if (r.payload_len && edhoc_message_is_error(r.payload, r.payload_len))
                peer_error(run, r.payload, r.payload_len, r.code, "the combined request");
            else {
                char why[300];
                cli_unprotected_answer_text(c->resp, (size_t)rn, why, sizeof why);
                fail(run, CLI_EXIT_OSCORE, "the combined request: %s", why);
            }
            goto comb_out;
        }
        add_exchange_rows(run, &c->log, "message_3 + OSCORE request 1", c->msg, n3,
                          "OSCORE response 1", NULL, -1);
        long un = oscore_unprotect_response(osc, &b, c->resp, (size_t)rn, plain,
                                            OSCORE_MAX_PLAINTEXT + 64);
        if (un < 0) {
            fail(run, CLI_EXIT_OSCORE, "OSCORE response to the combined request rejected: %s",
                 oscore_strerror((int)un));
            goto comb_out;
        }
        struct answer *a = &run->answers[run->n_answers++];
        snprintf(a->request, sizeof a->request, "%s", c->requests[0]);
        const uint8_t *pl;
        if (cli_coap_response_view(plain, (size_t)un, &a->code, &a->cf, &pl, &a->payload_len) == 0) {
            a->payload = malloc(a->payload_len ? a->payload_len : 1);
            if (a->payload && a->payload_len)
                memcpy(a->payload, pl, a->payload_len);
        }
        a->req_bytes = (size_t)cn;
        a->resp_bytes = (size_t)rn;
        a->attempts = 1;
        *combined_done = true;
        run->m3_acceptance = "oscore_response";
        ret = 0;
    comb_out:
        free(prot);
        free(comb);
        if (plain)
            edhoc_wipe(plain, OSCORE_MAX_PLAINTEXT + 64);
        free(plain);
        return ret;
    }

    uint8_t pre[EDHOC_MAX_CONN_ID + 1];
    long pl = 0;
    if (c->framing == EDHOC_FRAMING_A2) {
        size_t c_r_len = 0;
        const uint8_t *c_r = edhoc_session_peer_conn_id(s, &c_r_len);
        pl = c_r ? edhoc_coap_cid_encode(c_r, c_r_len, pre, sizeof pre) : -1;
        if (pl < 0) {
            fail(run, CLI_EXIT_INTERNAL, "cannot encode C_R");
            return -1;
        }
    }
    /* Bare-framed devices never answer nor acknowledge message_3: sent
     * Confirmable it would be retransmitted (read by such a device as a new
     * message_1) and would hold the first OSCORE request back (NSTART 1,
     * RFC 7252 4.7). So it goes Non-confirmable, with a short wait for an
     * EDHOC error the device may still send. */
    bool bare_no_reply = c->framing == EDHOC_FRAMING_BARE && !c->o.message_4;
    cli_dgram_log_begin(&c->log, "message_3");
    long rn = edhoc_post_as(c, pre, (size_t)pl, c->msg, (size_t)n3, deadline,
                            bare_no_reply ? 300 : 0, !bare_no_reply);
    c->log.current = -1;
    if (rn < 0) {
        add_exchange_rows(run, &c->log, "message_3", c->msg, n3, NULL, NULL, -1);
        if (bare_no_reply && rn == EDHOC_TRANSPORT_ERR_TIMEOUT) {
            /* Such devices never answer message_3, so nothing tells
             * whether it was accepted until an OSCORE response comes. */
            run->m3_acceptance = "unconfirmed";
            return 0;
        }
        fail(run, transport_exit(rn), "message_3: %s",
             rn == EDHOC_TRANSPORT_ERR_TIMEOUT ? "timeout, no response"
                                               : edhoc_transport_strerror((int)rn));
        return -1;
    }
    uint8_t code;
    int cf;
    const uint8_t *p;
    size_t pll;
    if (cli_coap_response_view(c->resp, (size_t)rn, &code, &cf, &p, &pll)) {
        fail(run, CLI_EXIT_FAILURE, "malformed CoAP response to message_3");
        return -1;
    }
    if (code >> 5 != 2) {
        add_exchange_rows(run, &c->log, "message_3", c->msg, n3, "error", pll ? p : NULL,
                          pll ? (long)pll : -1);
        if (pll && edhoc_message_is_error(p, pll)) {
            peer_error(run, p, pll, code, "message_3");
        } else {
            char cn[48];
            fail(run, CLI_EXIT_FAILURE, "the responder answered message_3 with %s",
                 cli_coap_code_name(code, cn, sizeof cn));
        }
        return -1;
    }
    if (c->o.message_4) {
        add_exchange_rows(run, &c->log, "message_3", c->msg, n3, "message_4", p, (long)pll);
        if (!pll) {
            fail(run, CLI_EXIT_FAILURE, "message_4 expected, the responder sent an empty 2.04");
            return -1;
        }
        rc = edhoc_initiator_process_message_4(s, p, pll, rx);
        if (rc) {
            fail(run, cli_exit_for_edhoc_error(rc), "message_4: %s", edhoc_strerror(rc));
            return -1;
        }
        run->m3_acceptance = "message_4";
    } else {
        add_exchange_rows(run, &c->log, "message_3", c->msg, n3, "(2.04 Changed)", pll ? p : NULL,
                          pll ? (long)pll : -1);
        run->m3_acceptance = "2.04";
    }
    return 0;
}

/* ---- --export-oscore-conf: the context for other tools, and the sequence
 * numbers it has used ---- */

/* A path we may (re)place: absent, or a regular file. A symbolic link is
 * refused rather than followed: the secret must land where the name says,
 * not wherever a link points. Returns 0 or -1 with why. */
static int check_out_path(const char *path, char *why, size_t cap)
{
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            snprintf(why, cap, "%s is a symbolic link: refusing to write through it", path);
            return -1;
        }
        if (!S_ISREG(st.st_mode)) {
            snprintf(why, cap, "%s exists and is not a regular file", path);
            return -1;
        }
    } else if (errno != ENOENT) {
        snprintf(why, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Before anything is sent (a bad path must not cost a handshake): the
 * names, the state directory. Returns 0 or -1 with why. */
static int export_prepare(struct ctx *c, char *why, size_t cap)
{
    if (snprintf(c->seq_file, sizeof c->seq_file, "%s.seq", c->export_conf) >=
        (int)sizeof c->seq_file) {
        snprintf(why, cap, "file name too long");
        return -1;
    }
    if (check_out_path(c->export_conf, why, cap) || check_out_path(c->seq_file, why, cap))
        return -1;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", c->export_conf);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir ? 1 : 0] = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    if (access(dir, W_OK | X_OK)) {
        snprintf(why, cap, "directory %.300s: %s", dir, strerror(errno));
        return -1;
    }
    char sdwhy[300];
    if (cli_state_dir(c->state_dir_arg, c->state_dir, sizeof c->state_dir, sdwhy,
                      sizeof sdwhy) < 0) {
        snprintf(why, cap, "%s", sdwhy);
        return -1;
    }
    return 0;
}

/* Write text to path with mode 0600, whole or not at all: a new file
 * (O_EXCL, never an existing one or a link planted under the temporary
 * name), fsync, then rename over path (a rename replaces a link planted
 * at path meanwhile instead of following it). */
static int write_private(const char *path, const char *text, size_t len, char *why, size_t cap)
{
    if (check_out_path(path, why, cap))
        return -1;
    char tmp[PATH_MAX + 32];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        snprintf(why, cap, "%s: name too long", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, cap, "%.300s: %s", tmp, strerror(errno));
        return -1;
    }
    /* The umask may only have narrowed 0600; make it exact. */
    bool ok = fchmod(fd, 0600) == 0;
    for (size_t off = 0; ok && off < len;) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        off += ok ? (size_t)w : 0;
    }
    ok = ok && fsync(fd) == 0;
    int saved = errno;
    close(fd);
    if (!ok || rename(tmp, path)) {
        if (ok)
            saved = errno;
        unlink(tmp);
        snprintf(why, cap, "%s: %s", path, strerror(saved));
        return -1;
    }
    return 0;
}

/* The initiator's side of the context as a libcoap OSCORE conf in FILE,
 * and the sequence numbers this run used in FILE.seq and the state
 * directory, so that `coap-client -E FILE,FILE.seq` and `edhoc-cli coap
 * --oscore-context FILE` continue above them (RFC 8613 Section 7.2.1: a
 * nonce is never used twice with one key). The record comes first: a conf
 * without it could let a later run reuse nonces, a record without a conf
 * costs nothing. Returns 0 or -1 with why. */
static int export_conf(const struct ctx *c, struct run *run, bool write_file, char *why, size_t cap)
{
    char text[1024];
    struct oscore_config *cfg = calloc(1, sizeof *cfg);
    FILE *m = cfg ? fmemopen(text, sizeof text, "w") : NULL;
    if (!m) {
        free(cfg);
        snprintf(why, cap, "out of memory");
        return -1;
    }
    /* Unbuffered: no copy of the secret in a stdio buffer. */
    setvbuf(m, NULL, _IONBF, 0);
    cli_write_oscore_conf(m, &run->osc, "");
    long len = ftell(m);
    fclose(m);
    int rc = -1;
    struct oscore_config_error err;
    /* Parsed back by our own reader: the file is what a later run will
     * read, and the record is keyed by what that run will derive. */
    if (len <= 0 || (size_t)len >= sizeof text - 1 ||
        oscore_config_parse(text, (size_t)len, cfg, &err)) {
        snprintf(why, cap, "cannot express the context as a conf file");
        goto out;
    }
    char swhy[300];
    char dir[4096];
    const char *state_dir = c->state_dir;
    if (!write_file) {
        /* --export-secrets alone: the default state directory. */
        int sd = cli_state_dir(NULL, dir, sizeof dir, swhy, sizeof swhy);
        if (sd < 0) {
            snprintf(why, cap, "cannot record the sequence numbers used: %s", swhy);
            goto out;
        }
        state_dir = dir;
    }
    /* With a conf file: FILE.seq beside it, which both printed hints read
     * (coap-client's -E FILE,FILE.seq, and coap --oscore-context FILE
     * whatever state directory it then uses). */
    if (cli_seq_note_used(state_dir, write_file ? c->export_conf : NULL, NULL, cfg, run->next_ssn,
                          swhy, sizeof swhy)) {
        snprintf(why, cap, "cannot record the sequence numbers used: %s", swhy);
        goto out;
    }
    if (!write_file) {
        rc = 0;
        goto out;
    }
    rc = write_private(c->export_conf, text, (size_t)len, why, cap);
    run->conf_written = rc == 0;
out:
    edhoc_wipe(text, sizeof text);
    edhoc_wipe(cfg, sizeof *cfg);
    free(cfg);
    return rc;
}

/* A word of a command line printed to be pasted into a shell: as is when
 * the shell would take it so, else in single quotes. */
static void print_shell_word(FILE *f, const char *w)
{
    if (w[0] && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                          "_-./,:@%+=") == strlen(w)) {
        fputs(w, f);
        return;
    }
    fputc('\'', f);
    for (const char *p = w; *p; p++) {
        if (*p == '\'')
            fputs("'\\''", f);
        else
            fputc(*p, f);
    }
    fputc('\'', f);
}

/* The hints name every record this run wrote to that the follower would
 * not find by itself: an explicit --state-dir (resolved, so that another
 * working directory finds it too). The default state directory is found
 * again in the same environment, and FILE.seq is read whatever the
 * follower's state directory is. */
static void print_conf_text(FILE *f, const struct ctx *c, const struct run *run)
{
    bool libcoap;
    cli_oscore_conf_hkdf(run->osc.hash_alg, &libcoap);
    const char *h = c->uri.host;
    bool v6 = strchr(h, ':') != NULL;
    fprintf(f, "OSCORE conf (the initiator's side, mode 0600): %s\n"
               "  next sender sequence number %llu recorded in %s%s%s\n",
            c->export_conf, (unsigned long long)run->next_ssn, c->seq_file,
            c->state_dir[0] ? " and under " : "", c->state_dir);
    fprintf(f, "  continue with: edhoc-cli coap GET coap://%s%s%s:%u/PATH --oscore-context ",
            v6 ? "[" : "", h, v6 ? "]" : "", c->uri.port);
    print_shell_word(f, c->export_conf);
    if (c->state_dir_arg) {
        fputs(" --state-dir ", f);
        print_shell_word(f, c->state_dir[0] ? c->state_dir : "none");
    }
    fputc('\n', f);
    if (libcoap) {
        /* libcoap has OSCORE (and coap-client -E) from 4.3.2 on (its
         * ChangeLog: "Support for RFC8613 (OSCORE)"), when built with it. */
        char both[2 * PATH_MAX + 2];
        snprintf(both, sizeof both, "%s,%s", c->export_conf, c->seq_file);
        fputs("  or, with libcoap 4.3.2 or later built with OSCORE (Debian 12's 4.3.1 has no "
              "-E): coap-client -E ",
              f);
        print_shell_word(f, both);
        fprintf(f, " coap://%s%s%s:%u/PATH\n", v6 ? "[" : "", h, v6 ? "]" : "", c->uri.port);
    } else {
        fprintf(f, "  (libcoap cannot use it: no hkdf_alg value for %s)\n",
                edhoc_crypto_alg_name(run->osc.hash_alg));
    }
}

static void print_trace_text(FILE *f, const struct run *run)
{
    fprintf(f, "\nTrace (RFC 9529 names, initiator side):\n");
    for (size_t i = 0; i < run->n_trace; i++) {
        fprintf(f, "  %s (%zu bytes) ", run->trace[i].name, run->trace[i].len);
        cli_hex_print(f, run->trace[i].v, run->trace[i].len);
        fputc('\n', f);
    }
}

static void totals(const struct run *run, size_t *edhoc, size_t *coap, size_t *dgrams,
                   size_t *hs_coap)
{
    *edhoc = *coap = *dgrams = *hs_coap = 0;
    for (size_t i = 0; i < run->n_rows; i++) {
        const struct row *r = &run->rows[i];
        if (r->edhoc_bytes > 0 && !r->echo_challenged)
            *edhoc += (size_t)r->edhoc_bytes;
        *coap += r->coap_bytes;
        *dgrams += r->datagrams;
        if (strncmp(r->name, "OSCORE", 6) != 0)
            *hs_coap += r->coap_bytes;
    }
}

/* OSCORE request/response rows; the others belong to the handshake. */
static bool is_oscore_row(const struct row *r)
{
    return strncmp(r->name, "OSCORE", 6) == 0;
}

/* Per-layer totals: handshake rows (message_1..4, errors, the combined
 * request), OSCORE rows, everything. */
static void layer_totals(const struct run *run, struct edhoc_netacct_summary *sum)
{
    edhoc_netacct_summary_clear(sum);
    for (size_t i = 0; i < run->n_rows; i++) {
        const struct row *r = &run->rows[i];
        struct edhoc_netacct_total *k = is_oscore_row(r) ? &sum->oscore : &sum->handshake;
        edhoc_netacct_total_merge(k, &r->lay);
        edhoc_netacct_total_merge(&sum->all, &r->lay);
    }
}

static bool have_link(const struct ctx *c)
{
    return c->net.link.type != EDHOC_NETACCT_LINK_NONE;
}

/* The link has a time and energy model (not NONE or a bare MTU). */
static bool have_air(const struct ctx *c)
{
    enum edhoc_netacct_link_type t = c->net.link.type;
    return t == EDHOC_NETACCT_LINK_802154 || t == EDHOC_NETACCT_LINK_BLE ||
           t == EDHOC_NETACCT_LINK_LORAWAN;
}

/* A row's datagrams on the air: one direction each (the initiator is the
 * client, its datagrams uplinks), summed in case a row held both. */
static struct edhoc_netacct_air row_air(const struct row *r)
{
    struct edhoc_netacct_air a = r->lay.up;
    edhoc_netacct_air_add(&a, &r->lay.down);
    return a;
}

/* The handshake rows on the link's air, one after another, then the host
 * time on top: the handshake time measured here (both sides' processing
 * and the loopback or network between them). */
static void handshake_air(const struct ctx *c, const struct run *run,
                          const struct edhoc_netacct_radio *radio, struct cli_air_summary *s)
{
    memset(s, 0, sizeof *s);
    s->host_ms = run->t_handshake ? (double)(run->t_handshake - run->t0) / 1e6 : -1;
    struct edhoc_netacct_air airs[MAX_ROWS];
    struct edhoc_netacct_step steps[MAX_ROWS];
    size_t n = 0;
    for (size_t i = 0; i < run->n_rows; i++) {
        const struct row *r = &run->rows[i];
        if (is_oscore_row(r))
            continue;
        airs[n] = row_air(r);
        cli_air_summary_add(s, radio, &airs[n], r->lay.frames, r->dir == 'I');
        s->link_us += airs[n].link_us;
        steps[n] = (struct edhoc_netacct_step){&airs[n], r->dir == 'I', 0};
        n++;
    }
    uint64_t host_us = s->host_ms > 0 ? (uint64_t)(s->host_ms * 1000 + 0.5) : 0;
    s->e2e_us = edhoc_netacct_air_sequence(&c->net.link, steps, n) + host_us;
}

static void print_layer_row(FILE *f, const char *name, const char *dir, const char *edhoc,
                            const struct edhoc_netacct_total *t, bool link,
                            const struct edhoc_netacct_radio *radio)
{
    fprintf(f, "  %-32s %-4s %7s %7zu %6zu %6zu", name, dir, edhoc, t->coap, t->udp, t->ip);
    if (link)
        fprintf(f, " %6u %7zu", t->frames, t->link);
    if (radio) {
        struct edhoc_netacct_air a = t->up;
        edhoc_netacct_air_add(&a, &t->down);
        char t1[24], t2[24], t3[24];
        struct edhoc_netacct_energy es = edhoc_netacct_energy_of(radio, &a, true);
        struct edhoc_netacct_energy er = edhoc_netacct_energy_of(radio, &a, false);
        fprintf(f, " %11s %11s %11s %9.3f", cli_air_time(a.tx_us, t1, sizeof t1),
                cli_air_time(a.link_us, t2, sizeof t2), cli_air_time(a.wait_us, t3, sizeof t3),
                (es.tx_j + es.rx_j + er.tx_j + er.rx_j) * 1e3);
        if (a.fragments)
            fprintf(f, "  %u SCHC fragments", a.fragments);
    }
    fputc('\n', f);
}

static void print_layers_text(FILE *f, const struct ctx *c, const struct run *run)
{
    bool link = have_link(c), air = have_air(c);
    struct edhoc_netacct_radio radio = cli_net_radio(&c->net.link, &c->net.radio,
                                                     c->net.radio_set);
    const struct edhoc_netacct_radio *rp = air ? &radio : NULL;
    bool v6 = false, v4 = false;
    for (size_t i = 0; i < run->n_rows; i++) {
        if (run->rows[i].datagrams) {
            v6 |= run->rows[i].ipv6;
            v4 |= !run->rows[i].ipv6;
        }
    }
    fprintf(f, "\nPer layer (datagrams as sent/received; IP = %s)\n", v6 && v4 ? "IPv6/IPv4"
                                                                           : v6 ? "IPv6" : "IPv4");
    fprintf(f, "  %-32s %-4s %7s %7s %6s %6s%s", "message", "dir", "EDHOC", "CoAP", "UDP", "IP",
            link ? " frames    link" : "");
    if (air)
        fprintf(f, " %11s %11s %11s %9s", "on air", "link time", "duty wait", "mJ (S+R)");
    fputc('\n', f);
    for (size_t i = 0; i < run->n_rows; i++) {
        const struct row *r = &run->rows[i];
        char eb[24];
        if (r->edhoc_bytes >= 0)
            snprintf(eb, sizeof eb, "%ld", r->edhoc_bytes);
        else
            snprintf(eb, sizeof eb, "-");
        print_layer_row(f, r->name, r->dir == 'I' ? "I->R" : "R->I", eb, &r->lay, link, rp);
    }
    struct edhoc_netacct_summary sum;
    layer_totals(run, &sum);
    char eb[24];
    snprintf(eb, sizeof eb, "%zu", sum.handshake.edhoc);
    print_layer_row(f, "total handshake", "", eb, &sum.handshake, link, rp);
    print_layer_row(f, "total OSCORE", "", "-", &sum.oscore, link, rp);
    snprintf(eb, sizeof eb, "%zu", sum.all.edhoc);
    print_layer_row(f, "total exchange", "", eb, &sum.all, link, rp);
    char desc[512];
    edhoc_netacct_link_describe(&c->net.link, desc, sizeof desc);
    fprintf(f, "  Link: %s\n", desc);
    if (air) {
        struct cli_air_summary s;
        handshake_air(c, run, &radio, &s);
        cli_air_summary_print(f, &s, &radio, "Handshake on the link", "its messages",
                              "the handshake time measured here");
    }
    if (c->log.link_errors)
        fprintf(f, "  (%u datagram%s too large for the link: counted without frames)\n",
                c->log.link_errors, c->log.link_errors == 1 ? "" : "s");
    if (c->net.pcap)
        fprintf(f, "  Capture: %s%s\n", c->net.pcap,
                c->log.capture_errors ? " (some datagrams could not be written)" : "");
}

static void print_text(const struct ctx *c, const struct run *run)
{
    FILE *f = stdout;
    fprintf(f, "EDHOC with coap://%s%s%s:%u%s: method %d (%s), framing %s%s\n",
            strchr(c->uri.host, ':') ? "[" : "", c->uri.host, strchr(c->uri.host, ':') ? "]" : "",
            c->uri.port, c->uri.path[0] ? c->uri.path : EDHOC_COAP_WELL_KNOWN, c->o.method,
            cli_method_name(c->o.method),
            c->framing == EDHOC_FRAMING_A2 ? "RFC 9528 A.2" : "bare (no prefix, no Content-Format)",
            c->combined ? ", EDHOC + OSCORE combined request (RFC 9668)" : "");
    if (c->framing_auto && run->auto_a2_failure[0])
        fprintf(f, "  --framing auto: A.2 got no message_2 (%s); bare tried next\n",
                run->auto_a2_failure);
    else if (c->framing_auto)
        fprintf(f, "  --framing auto: the device speaks A.2\n");
    fprintf(f, "  initiator: %s, ID_CRED_I by %s\n", c->side.cred_origin,
            cli_id_cred_type_name(cli_id_cred_type_of(c->side.id_cred, c->side.id_cred_len)));
    if (c->o.trace)
        print_trace_text(f, run);
    fprintf(f, "\nMessages                          dir     EDHOC  CoAP/UDP  datagrams\n");
    for (size_t i = 0; i < run->n_rows; i++) {
        const struct row *r = &run->rows[i];
        char eb[24];
        if (r->edhoc_bytes >= 0)
            snprintf(eb, sizeof eb, "%ld", r->edhoc_bytes);
        else
            snprintf(eb, sizeof eb, "-");
        fprintf(f, "  %-32s %s %7s %9zu %10u\n", r->name, r->dir == 'I' ? "I->R" : "R->I", eb,
                r->coap_bytes, r->datagrams);
    }
    size_t edhoc, coap, dgrams, hs;
    totals(run, &edhoc, &coap, &dgrams, &hs);
    fprintf(f, "  %-32s      %7zu %9zu %10zu\n", "total", edhoc, coap, dgrams);
    fprintf(f, "  EDHOC messages %zu bytes in %zu CoAP/UDP bytes (handshake exchanges)\n", edhoc, hs);
    fprintf(f, "  (CoAP/UDP: every datagram of the exchange in that direction, as sent or received:\n"
               "   retransmissions, block-wise follow-ups and empty ACKs included)\n");
    print_layers_text(f, c, run);
    double hs_ms = run->t_handshake ? (double)(run->t_handshake - run->t0) / 1e6 : 0;
    double all_ms = (double)(run->t_end - run->t_start) / 1e6;
    if (run->n_suites_r) {
        fprintf(f, "\nThe responder's SUITES_R (error code 2):");
        for (size_t i = 0; i < run->n_suites_r; i++)
            fprintf(f, " %d", run->suites_r[i]);
        fputc('\n', f);
    }
    if (run->exit_code) {
        fprintf(f, "\nOutcome: FAILED: %s\n", run->failure);
        fprintf(f, "Round trips: %zu; wall time %.3f ms\n", run->exchanges, all_ms);
        return;
    }
    bool unconfirmed = run->m3_acceptance && !strcmp(run->m3_acceptance, "unconfirmed");
    fprintf(f, "\nOutcome: %s, suite %d, %d attempt%s, ID_CRED_R by %s\n",
            unconfirmed ? "message_3 sent, its acceptance unconfirmed" : "ok", run->suite,
            run->attempts, run->attempts == 1 ? "" : "s", run->id_cred_r);
    if (unconfirmed)
        fprintf(f, "  (the bare framing answers nothing to message_3, and neither message_4 nor "
                   "an OSCORE response came: nothing shows the responder accepted it, RFC 9528 "
                   "Section 5.4.2; --request or --message-4 would)\n");
    if (run->tolerated) {
        char names[120];
        edhoc_deviations_format(run->tolerated, names, sizeof names);
        fprintf(f, "Tolerated (--tolerate): %s: the responder deviates from RFC 9528 there\n",
                names);
    }
    if (run->followed) {
        char names[120];
        edhoc_deviations_format(run->followed, names, sizeof names);
        fprintf(f, "Followed in message_3 (--tolerate): %s: context_3 built as the responder "
                   "built context_2, so that it verifies MAC_3 its own way\n",
                names);
    }
    fprintf(f, "Round trips: %zu; handshake %.3f ms, wall time %.3f ms\n", run->exchanges, hs_ms,
            all_ms);
    if (run->have_exports)
        cli_exports_print(f, &run->exports, "PRK_exporter");
    if (!run->have_osc) {
        if (run->no_oscore[0])
            fprintf(f, "OSCORE: not available: %s\n", run->no_oscore);
        fprintf(f, "\nResponses: none asked (--request none)\n");
        return;
    }
    const struct edhoc_oscore_params *p = &run->osc;
    fprintf(f, "OSCORE: sender ID ");
    cli_hex_print(f, p->sender_id, p->sender_id_len);
    fprintf(f, " (C_R), recipient ID ");
    cli_hex_print(f, p->recipient_id, p->recipient_id_len);
    fprintf(f, " (C_I), AEAD %s, HKDF %s\n", edhoc_crypto_alg_name(p->aead_alg),
            edhoc_crypto_alg_name(p->hash_alg));
    if (c->o.export_secrets) {
        fprintf(f, "  master secret ");
        cli_hex_print(f, p->master_secret, p->master_secret_len);
        fprintf(f, "\n  master salt   ");
        cli_hex_print(f, p->master_salt, p->master_salt_len);
        fprintf(f, "\n  next sender sequence number: initiator %llu; responder: its own state, "
                   "not known to this run\n",
                (unsigned long long)run->next_ssn);
        fprintf(f, "  as a libcoap OSCORE conf (the initiator's side):\n");
        cli_write_oscore_conf(f, p, "    ");
    }
    if (run->conf_written)
        print_conf_text(f, c, run);
    fprintf(f, "\nResponses:%s\n", c->n_requests ? "" : " none asked (--request none)");
    for (size_t i = 0; i < run->n_answers; i++) {
        const struct answer *a = &run->answers[i];
        char cn[48];
        fprintf(f, "  %s -> %s (request %zu bytes, response %zu bytes%s)", a->request,
                cli_coap_code_name(a->code, cn, sizeof cn), a->req_bytes, a->resp_bytes,
                a->attempts > 1 ? ", after Echo" : "");
        if (a->payload_len) {
            fprintf(f, "\n    ");
            cli_print_payload(f, a->payload, a->payload_len);
        }
        fputc('\n', f);
    }
}

/* ---- JSON report (docs/json/initiator.schema.json) ---- */

static json_t *int_array(const int *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

/* The link the per-layer figures are counted on: null when none. */
static json_t *link_json(const struct ctx *c)
{
    if (!have_link(c))
        return json_null();
    return cli_net_link_json(&c->net.link);
}

/* The OSCORE context in the terms another tool takes it; master secret and
 * salt only with --export-secrets (else null). The responder's next
 * sequence number is its own state, not known here: null. */
static json_t *oscore_json(const struct ctx *c, const struct run *run)
{
    const struct edhoc_oscore_params *p = &run->osc;
    bool libcoap;
    int hkdf = cli_oscore_conf_hkdf(p->hash_alg, &libcoap);
    json_t *o = json_object();
    bool secrets = c->o.export_secrets;
    cli_json_set(o, "master_secret",
                 secrets ? cli_json_hex_value(p->master_secret, p->master_secret_len) : json_null());
    cli_json_set(o, "master_salt",
                 secrets ? cli_json_hex_value(p->master_salt, p->master_salt_len) : json_null());
    cli_json_set(o, "sender_id", cli_json_hex_value(p->sender_id, p->sender_id_len));
    cli_json_set(o, "recipient_id", cli_json_hex_value(p->recipient_id, p->recipient_id_len));
    cli_json_set(o, "aead_alg", json_integer(p->aead_alg));
    cli_json_set(o, "hkdf_alg", json_integer(hkdf));
    cli_json_set(o, "libcoap", json_boolean(libcoap));
    cli_json_set(o, "sender_next_seq", json_integer((json_int_t)run->next_ssn));
    cli_json_set(o, "recipient_next_seq", json_null());
    return o;
}

static json_t *message_json(const struct ctx *c, const struct row *r)
{
    json_t *m = json_object();
    bool link = have_link(c);
    cli_json_set(m, "name", json_string(r->name));
    cli_json_set(m, "from", json_string(r->dir == 'I' ? "initiator" : "responder"));
    cli_json_set(m, "edhoc_bytes", cli_json_int_or_null(r->edhoc_bytes >= 0, r->edhoc_bytes));
    cli_json_set(m, "hex", r->edhoc ? cli_json_hex_value(r->edhoc, (size_t)r->edhoc_bytes)
                                    : json_null());
    cli_json_set(m, "echo_challenged", json_boolean(r->echo_challenged));
    cli_json_set(m, "coap_bytes", json_integer((json_int_t)r->coap_bytes));
    cli_json_set(m, "datagrams", json_integer(r->datagrams));
    cli_json_set(m, "ip_version", cli_json_int_or_null(r->datagrams > 0, r->ipv6 ? 6 : 4));
    cli_json_set(m, "udp_bytes", json_integer((json_int_t)r->lay.udp));
    cli_json_set(m, "ip_bytes", json_integer((json_int_t)r->lay.ip));
    cli_json_set(m, "frames", cli_json_int_or_null(link, r->lay.frames));
    cli_json_set(m, "link_bytes", cli_json_int_or_null(link, (long long)r->lay.link));
    json_t *air = json_null();
    if (have_air(c)) {
        struct edhoc_netacct_radio radio = cli_net_radio(&c->net.link, &c->net.radio,
                                                         c->net.radio_set);
        struct edhoc_netacct_air a = row_air(r);
        air = cli_net_air_json(&radio, &a);
    }
    cli_json_set(m, "air", air);
    return m;
}

static void print_json(const struct ctx *c, const struct run *run)
{
    json_t *root = json_object();
    cli_json_set(root, "outcome", json_string(run->exit_code ? "failed" : "ok"));
    json_t *err = json_null();
    if (run->exit_code) {
        err = json_object();
        cli_json_set(err, "exit_code", json_integer(run->exit_code));
        cli_json_set(err, "text", json_string(run->failure[0] ? run->failure
                                                              : "some repeated handshakes failed"));
        cli_json_set(err, "err_code", cli_json_int_or_null(run->have_peer_error,
                                                           run->peer_err_code));
        cli_json_set(err, "diagnostic",
                     run->have_peer_error ? json_string(run->peer_diag) : json_null());
    }
    cli_json_set(root, "error", err);
    cli_json_set(root, "partial", json_boolean(run->partial));
    cli_json_set(root, "peer", cli_json_string_or_null(c->t ? edhoc_transport_client_peer(c->t)
                                                            : NULL));
    cli_json_set(root, "framing", json_string(c->framing == EDHOC_FRAMING_A2 ? "A.2" : "bare"));
    cli_json_set(root, "framing_auto", json_boolean(c->framing_auto));
    cli_json_set(root, "framing_a2_failure", run->auto_a2_failure[0]
                                                 ? json_string(run->auto_a2_failure)
                                                 : json_null());
    cli_json_set(root, "combined", json_boolean(c->combined));
    cli_json_set(root, "method", json_integer(c->o.method));
    cli_json_set(root, "suite", cli_json_int_or_null(run->suite >= 0, run->suite));
    cli_json_set(root, "attempts", json_integer(run->attempts));
    /* SUITES_R of the last error code 2 the responder sent. */
    cli_json_set(root, "suites_r",
                 run->n_suites_r ? int_array(run->suites_r, run->n_suites_r) : json_null());
    /* Deviations accepted on this handshake, and the diagnosis of a
     * failed MAC_2 / signature (RFC 9528 Section 5.3.2). */
    json_t *tol = json_array();
    for (unsigned bit = 1; bit <= EDHOC_DEV_ALL; bit <<= 1) {
        if (run->tolerated & bit)
            json_array_append_new(tol, json_string(edhoc_deviation_name(bit)));
    }
    cli_json_set(root, "tolerated", tol);
    json_t *fol = json_array();
    for (unsigned bit = 1; bit <= EDHOC_DEV_ALL; bit <<= 1) {
        if (run->followed & bit)
            json_array_append_new(fol, json_string(edhoc_deviation_name(bit)));
    }
    cli_json_set(root, "followed", fol);
    cli_json_set(root, "message_3_acceptance",
                 run->m3_acceptance ? json_string(run->m3_acceptance) : json_null());
    cli_json_set(root, "diagnosis", run->diagnosis[0] ? json_string(run->diagnosis) : json_null());
    cli_json_set(root, "id_cred_i", json_string(cli_id_cred_type_name(
                                        cli_id_cred_type_of(c->side.id_cred, c->side.id_cred_len))));
    cli_json_set(root, "id_cred_r", run->id_cred_r[0] ? json_string(run->id_cred_r) : json_null());
    json_t *msgs = json_array();
    for (size_t i = 0; i < run->n_rows; i++)
        json_array_append_new(msgs, message_json(c, &run->rows[i]));
    cli_json_set(root, "messages", msgs);
    size_t edhoc, coap, dgrams, hs;
    totals(run, &edhoc, &coap, &dgrams, &hs);
    cli_json_set(root, "total_edhoc_bytes", json_integer((json_int_t)edhoc));
    cli_json_set(root, "total_coap_bytes", json_integer((json_int_t)coap));
    cli_json_set(root, "handshake_coap_bytes", json_integer((json_int_t)hs));
    cli_json_set(root, "datagrams", json_integer((json_int_t)dgrams));
    cli_json_set(root, "round_trips", json_integer((json_int_t)run->exchanges));
    cli_json_set(root, "link", link_json(c));
    struct edhoc_netacct_summary sum;
    layer_totals(run, &sum);
    json_t *layers = json_object();
    cli_json_set(layers, "handshake", cli_net_total_json(&sum.handshake, have_link(c)));
    cli_json_set(layers, "oscore", cli_net_total_json(&sum.oscore, have_link(c)));
    cli_json_set(layers, "all", cli_net_total_json(&sum.all, have_link(c)));
    cli_json_set(root, "layers", layers);
    json_t *radio_j = json_null(), *air_j = json_null();
    if (have_air(c)) {
        struct edhoc_netacct_radio radio = cli_net_radio(&c->net.link, &c->net.radio,
                                                         c->net.radio_set);
        struct cli_air_summary s;
        handshake_air(c, run, &radio, &s);
        radio_j = cli_net_radio_json(&radio);
        air_j = cli_air_summary_json(&s);
    }
    cli_json_set(root, "radio", radio_j);
    cli_json_set(root, "air", air_j);
    json_t *pcap = json_null();
    if (c->net.pcap) {
        pcap = json_object();
        cli_json_set(pcap, "file", json_string(c->net.pcap));
        cli_json_set(pcap, "write_errors", json_integer(c->log.capture_errors));
    }
    cli_json_set(root, "pcap", pcap);
    cli_json_set(root, "handshake_ms",
                 run->t_handshake ? json_real((double)(run->t_handshake - run->t0) / 1e6)
                                  : json_null());
    cli_json_set(root, "wall_ms", json_real((double)(run->t_end - run->t_start) / 1e6));
    cli_json_set(root, "oscore", run->have_osc ? oscore_json(c, run) : json_null());
    cli_json_set(root, "oscore_unavailable",
                 run->no_oscore[0] ? json_string(run->no_oscore) : json_null());
    cli_json_set(root, "exports",
                 run->have_exports ? cli_exports_json(&run->exports, false) : json_null());
    json_t *conf = json_null();
    if (run->conf_written) {
        bool libcoap;
        cli_oscore_conf_hkdf(run->osc.hash_alg, &libcoap);
        conf = json_object();
        cli_json_set(conf, "file", json_string(c->export_conf));
        cli_json_set(conf, "seq_file", json_string(c->seq_file));
        cli_json_set(conf, "state_dir", c->state_dir[0] ? json_string(c->state_dir) : json_null());
        cli_json_set(conf, "next_seq", json_integer((json_int_t)run->next_ssn));
        cli_json_set(conf, "libcoap", json_boolean(libcoap));
    }
    cli_json_set(root, "oscore_conf", conf);
    json_t *resps = json_array();
    for (size_t i = 0; i < run->n_answers; i++) {
        const struct answer *a = &run->answers[i];
        char cn[48];
        json_t *o = json_object();
        cli_json_set(o, "request", json_string(a->request));
        /* "2.05 Content": the code, then the registry's name apart (as
         * coap --json has them). */
        cli_coap_code_name(a->code, cn, sizeof cn);
        char *space = strchr(cn, ' ');
        if (space)
            *space = '\0';
        cli_json_set(o, "code", json_string(cn));
        cli_json_set(o, "code_name", cli_json_string_or_null(space ? space + 1 : NULL));
        cli_json_set(o, "content_format", cli_json_int_or_null(a->cf >= 0, a->cf));
        cli_json_set(o, "request_bytes", json_integer((json_int_t)a->req_bytes));
        cli_json_set(o, "response_bytes", json_integer((json_int_t)a->resp_bytes));
        cli_json_set(o, "echo", json_boolean(a->attempts > 1));
        cli_json_set_bytes(o, "payload", a->payload ? a->payload : (const uint8_t *)"",
                           a->payload ? a->payload_len : 0);
        json_array_append_new(resps, o);
    }
    cli_json_set(root, "responses", resps);
    json_t *rep = json_null();
    if (run->repeat > 1) {
        rep = json_object();
        cli_json_set(rep, "handshakes", json_integer(run->repeat));
        cli_json_set(rep, "ok", json_integer(run->repeat_ok));
        cli_json_set(rep, "failed", json_integer(run->repeat_failed));
        cli_json_set(rep, "seconds", json_real(run->repeat_s));
        cli_json_set(rep, "handshakes_per_second",
                     cli_json_real_or_null(run->repeat_s > 0
                                               ? (double)(run->repeat_ok - 1) / run->repeat_s
                                               : NAN));
    }
    cli_json_set(root, "repeat", rep);
    json_t *trace = json_null();
    if (c->o.trace) {
        trace = json_array();
        for (size_t i = 0; i < run->n_trace; i++) {
            json_t *t = json_object();
            cli_json_set(t, "name", json_string(run->trace[i].name));
            cli_json_set(t, "hex", cli_json_hex_value(run->trace[i].v, run->trace[i].len));
            json_array_append_new(trace, t);
        }
    }
    cli_json_set(root, "trace", trace);
    cli_json_print(root, stdout);
}

enum {
    OPT_REQUEST = 1,
    OPT_PAYLOAD_FILE,
    OPT_OUTPUT,
    OPT_COMBINED,
    OPT_FRAMING,
    OPT_TIMEOUT,
    OPT_BLOCK_SIZE,
    OPT_REPEAT,
    OPT_PAD_MESSAGE_1,
    OPT_EXPORT_CONF,
    OPT_STATE_DIR,
    OPT_KEYLOG,
    OPT_EXPORT,
};

static const struct cli_opt request_opts[] = {
    {OPT_REQUEST, "request", "'METHOD PATH [PAYLOAD]'|none",
     "an OSCORE-protected request after the handshake (repeatable, at most 16; default "
     "'GET /.well-known/core'); none: the handshake only, for devices without OSCORE "
     "resources (exit 0 once EDHOC completed)"},
    {OPT_PAYLOAD_FILE, "payload-file", "FILE",
     "the payload of every --request given without one (- for standard input; at most 65536 "
     "bytes, block-wise above --block-size, inside OSCORE)"},
    {OPT_OUTPUT, "output", "FILE", "write the body of the last response to FILE"},
    {OPT_COMBINED, "combined", NULL,
     "send message_3 inside the first OSCORE request (RFC 9668)"},
    {OPT_FRAMING, "framing", "a2|bare|auto",
     "a2: RFC 9528 Appendix A.2 (true / C_R prefixes, Content-Formats 65/64; default); bare: "
     "the messages as they are, no Content-Format, message_3 Non-confirmable and no reply to "
     "it expected; auto: A.2 (at most half of --timeout for message_1's answer), then bare "
     "when A.2 got no message_2, and say which the device speaks"},
    {OPT_TIMEOUT, "timeout", "SECONDS",
     "bound on the whole run (decimals allowed; default 10); each --repeat handshake has as "
     "long"},
    {OPT_BLOCK_SIZE, "block-size", "N",
     "block-wise transfer above N bytes (a power of two, 16..1024, default 1024): EDHOC "
     "messages in outer blocks, request bodies in inner ones"},
    {OPT_REPEAT, "repeat", "N",
     "then run N-1 more handshakes (no requests) and print the handshakes per second"},
    {OPT_PAD_MESSAGE_1, "pad-message-1", "N",
     "pad message_1 to at least N bytes (0..1024) with EAD padding (RFC 9528 3.8.1), so that "
     "a responder that sends an unverified address at most 3 times what it received (RFC 9175 "
     "2.4) answers with message_2 at once instead of a 4.01 Echo round trip; for an edhoc-cli "
     "responder N = (message_2's CoAP bytes + 8) / 3 - 27, rounded up"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt export_opts[] = {
    {OPT_EXPORT_CONF, "export-oscore-conf", "FILE",
     "after the handshake and the requests, write the initiator's side of the OSCORE context "
     "to FILE (mode 0600; a symbolic link is refused) in libcoap's conf format (hkdf_alg -10 "
     "for SHA-256; -43 for SHA-384, which edhoc-cli reads and libcoap does not), and the next "
     "sender sequence number to FILE.seq and the state directory, so that `edhoc-cli coap ... "
     "--oscore-context FILE` and `coap-client -E FILE,FILE.seq URI` (libcoap 4.3.2 or later "
     "with OSCORE) continue above the numbers this run used"},
    {OPT_KEYLOG, "keylog", "DIR",
     "append each handshake's secrets to DIR/edhoc_secrets and its OSCORE context to "
     "DIR/oscore_contexts (mode 0600, no symbolic links; DIR 0700), rows of Wireshark's EDHOC "
     "and OSCORE tables, so that captures open decrypted (tshark, Wireshark)"},
    {OPT_STATE_DIR, "state-dir", "DIR|none",
     "where --export-oscore-conf records the sequence numbers (default $STATE_DIRECTORY, else "
     "$XDG_STATE_HOME/edhoc-cli, else ~/.local/state/edhoc-cli; none: FILE.seq only)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt app_key_opts[] = {
    {OPT_EXPORT, "export", "LABEL,CONTEXT_HEX,LENGTH", CLI_EXPORT_HELP},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group initiator_groups[] = {
    {"Requests and transport", request_opts},
    {"EDHOC", cli_edhoc_opts_initiator},
    {"OSCORE context for other tools", export_opts},
    {"Keys for applications", app_key_opts},
    {"Link and capture", cli_net_opts_link},
    {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_initiator = {
    .name = "initiator",
    .synopsis = "URI [OPTIONS]",
    .description =
        "Runs EDHOC as CoAP client against URI (coap://HOST[:PORT][/PATH], path\n"
        "default /.well-known/edhoc), derives the OSCORE context (RFC 9528 Appendix\n"
        "A.1) and sends OSCORE-protected requests, printing each decrypted response\n"
        "and every message's size per layer. --json prints one document\n"
        "(docs/json/initiator.schema.json).",
    .groups = initiator_groups,
    .renamed = NULL,
    .epilogue =
        CLI_EDHOC_DEMO_NOTE "\n\n"
        "Exit codes:\n"
        "  0 ok (--request none, bare framing, no message_4: message_3 sent, its\n"
        "    acceptance unconfirmed, as the report says)\n"
        "  1 other failure (e.g. an unexpected CoAP response)\n"
        "  2 bad command line\n"
        "  3 unusable input file, or the --export-oscore-conf file, FILE.seq or the\n"
        "    state directory cannot be written\n"
        "  4 the responder sent an EDHOC error message (ERR_CODE and diagnostic are\n"
        "    printed; includes no common cipher suite)\n"
        "  5 verification failed (MAC, signature, unknown or untrusted credential)\n"
        "  6 timeout, host unreachable or its name does not resolve\n"
        "  7 OSCORE protection or verification failed, or an OSCORE request answered\n"
        "    without OSCORE, whatever its code (\"the peer answered without OSCORE:\n"
        "    CODE[: DIAGNOSTIC]\": an unprotected answer proves nothing)\n"
        " 10 internal error\n"
        "130/143 --repeat interrupted by SIGINT/SIGTERM (the report covers what\n"
        "    completed)",
};

int cmd_initiator(int argc, char **argv)
{
    /* Private keys, PRKs, OSCORE master secrets, --export-secrets. */
    cli_no_core_dumps();
    struct ctx *c = calloc(1, sizeof *c);
    struct run *run = calloc(1, sizeof *run);
    if (!c || !run) {
        free(c);
        free(run);
        return CLI_EXIT_INTERNAL;
    }
    c->keylog.edhoc_fd = c->keylog.oscore_fd = -1;
    cli_edhoc_opts_init(&c->o);
    c->timeout_ms = 10000;
    long pad_message_1 = 0;
    const char *uri = NULL;
    int exit_code = CLI_EXIT_USAGE;

    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_initiator, argc, argv);
    for (enum cli_opt_status st; (st = cli_opt_next(&p)) != CLI_OPT_DONE;) {
        if (st == CLI_OPT_EXIT) {
            exit_code = p.exit_code;
            goto out;
        }
        if (st == CLI_OPT_POSITIONAL) {
            if (uri) {
                cli_opt_error(&p, "unexpected argument '%s'", p.value);
                goto out;
            }
            uri = p.value;
            continue;
        }
        int bad = 0;
        switch (p.opt->id) {
        case CLI_OPT_ID_EDHOC: bad = cli_edhoc_take(&c->o, CLI_SIDE_I, &p); break;
        case CLI_OPT_ID_NET: bad = cli_net_take(&c->net, &p); break;
        case OPT_REQUEST:
            if (c->n_requests >= MAX_REQUESTS)
                bad = cli_opt_error(&p, "at most %d --request", MAX_REQUESTS);
            else
                c->requests[c->n_requests++] = p.value;
            break;
        case OPT_PAYLOAD_FILE:
            if (read_payload_file(p.value)) {
                exit_code = CLI_EXIT_INPUT; /* a file that cannot be used, as documented */
                goto out;
            }
            break;
        case OPT_OUTPUT: output_path = p.value; break;
        case OPT_COMBINED: c->combined = true; break;
        case OPT_FRAMING:
            /* "a.2" and any case, as the report spells it. */
            if (!strcasecmp(p.value, "a2") || !strcasecmp(p.value, "a.2")) {
                c->framing = EDHOC_FRAMING_A2;
            } else if (!strcasecmp(p.value, "bare")) {
                c->framing = EDHOC_FRAMING_BARE;
            } else if (!strcasecmp(p.value, "auto")) {
                c->framing = EDHOC_FRAMING_A2;
                c->framing_auto = true;
            } else {
                bad = cli_opt_error(&p, "--framing: expected a2, bare or auto, got '%s'",
                                    p.value);
            }
            break;
        case OPT_TIMEOUT: bad = cli_opt_seconds(&p, 0.001, 3600, &c->timeout_ms); break;
        case OPT_BLOCK_SIZE:
            bad = cli_opt_long(&p, 16, 1024, &c->block_size);
            if (!bad && (c->block_size & (c->block_size - 1)))
                bad = cli_opt_error(&p, "--block-size: a power of two from 16 to 1024, got %ld",
                                    c->block_size);
            break;
        case OPT_REPEAT: bad = cli_opt_long(&p, 1, 1000000, &c->repeat); break;
        case OPT_PAD_MESSAGE_1: bad = cli_opt_long(&p, 0, 1024, &pad_message_1); break;
        case OPT_EXPORT_CONF: c->export_conf = p.value; break;
        case OPT_KEYLOG: c->keylog_dir = p.value; break;
        case OPT_STATE_DIR: c->state_dir_arg = p.value; break;
        case OPT_EXPORT: {
            char why[400];
            if (c->exports.n >= CLI_MAX_EXPORTS)
                bad = cli_opt_error(&p, "at most %d --export", CLI_MAX_EXPORTS);
            else if (cli_export_parse(p.value, &c->exports.item[c->exports.n], why, sizeof why))
                bad = cli_opt_error(&p, "--export: %s", why);
            else
                c->exports.n++;
            break;
        }
        }
        if (bad)
            goto out;
    }
    c->verbose = p.verbose;
    c->quiet = p.quiet;
    if (!uri) {
        cli_opt_usage_error(&cli_spec_initiator, "which responder? give its URI");
        goto out;
    }
    if (c->combined && c->o.message_4) {
        fprintf(stderr, "edhoc-cli initiator: --combined cannot carry message_4 (RFC 9668)\n");
        goto out;
    }
    if (c->combined && c->framing == EDHOC_FRAMING_BARE) {
        fprintf(stderr, "edhoc-cli initiator: --combined needs the A.2 framing\n");
        goto out;
    }
    if (c->exports.n && !c->o.export_secrets) {
        cli_opt_error(&p, CLI_EXPORT_NEEDS_SECRETS);
        goto out;
    }
    if (c->state_dir_arg && !c->export_conf) {
        fprintf(stderr, "edhoc-cli initiator: --state-dir goes with --export-oscore-conf\n");
        goto out;
    }
    if (cli_uri_parse(uri, &c->uri))
        goto out;
    if (c->keylog_dir) {
        char why[8500];
        if (cli_keylog_open(&c->keylog, c->keylog_dir, why, sizeof why)) {
            fprintf(stderr, "edhoc-cli initiator: %s\n", why);
            exit_code = CLI_EXIT_INPUT;
            goto out;
        }
    }
    if (c->export_conf) {
        char why[400];
        if (export_prepare(c, why, sizeof why)) {
            fprintf(stderr, "edhoc-cli initiator: --export-oscore-conf %s: %s\n", c->export_conf,
                    why);
            exit_code = CLI_EXIT_INPUT;
            goto out;
        }
    }
    /* --request none: a handshake only, for devices without OSCORE
     * resources (exit 0 once EDHOC completed). */
    bool handshake_only = false;
    for (size_t i = 0; i < c->n_requests; i++)
        handshake_only |= !strcmp(c->requests[i], "none");
    if (handshake_only && c->n_requests > 1) {
        fprintf(stderr, "edhoc-cli initiator: --request none cannot go with other requests\n");
        goto out;
    }
    if (handshake_only && c->combined) {
        fprintf(stderr, "edhoc-cli initiator: --combined needs a request to carry message_3\n");
        goto out;
    }
    if (handshake_only)
        c->n_requests = 0;
    else if (c->n_requests == 0)
        c->requests[c->n_requests++] = "GET /.well-known/core";
    /* A suite the responder may settle on (any of SUITES_I, after its
     * error code 2) must give the OSCORE context that is to follow: found
     * out after message_3, the responder would already hold its side. */
    if (!handshake_only || c->export_conf) {
        for (size_t i = 0; i < c->o.n_suites; i++) {
            char why[320];
            if (cli_oscore_unavailable(c->o.suites[i], why, sizeof why)) {
                fprintf(stderr,
                        "edhoc-cli initiator: suite %d may be selected and %s is to follow, but "
                        "%s; for an EDHOC-only handshake give --request none%s, or leave suite "
                        "%d out of --suites\n",
                        c->o.suites[i],
                        handshake_only ? "an OSCORE context (--export-oscore-conf)"
                                       : "OSCORE (--request)",
                        why, c->export_conf ? " without --export-oscore-conf" : "",
                        c->o.suites[i]);
                goto out;
            }
        }
    }
    /* Requests are checked before anything is sent. */
    {
        uint8_t *scratch = malloc(REQUEST_CAP);
        for (size_t i = 0; scratch && i < c->n_requests; i++) {
            char err[200];
            if (build_user_request(c->requests[i], scratch, REQUEST_CAP, err, sizeof err) < 0) {
                fprintf(stderr, "edhoc-cli initiator: %.160s\n", err);
                free(scratch);
                goto out;
            }
        }
        free(scratch);
    }

    exit_code = cli_edhoc_side_setup(&c->o, CLI_SIDE_I, &c->side);
    if (exit_code) {
        cli_edhoc_side_free(&c->side);
        goto out;
    }
    if (c->o.trace) {
        c->side.cfg.trace = on_trace;
        c->side.cfg.trace_ctx = run;
    }
    if (c->keylog_dir) {
        /* The key log sees every value first and hands each on to --trace. */
        c->klog.next = c->side.cfg.trace;
        c->klog.next_ctx = c->side.cfg.trace_ctx;
        c->side.cfg.trace = edhoc_key_log_trace;
        c->side.cfg.trace_ctx = &c->klog;
    }
    c->side.cfg.pad_message_1 = (size_t)pad_message_1;
    c->msg = malloc(EDHOC_MAX_MESSAGE);
    /* Requests and responses of --request may be large (inner block-wise). */
    c->req = malloc(REQUEST_CAP);
    c->resp = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    c->buf = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    struct edhoc_session *s = calloc(1, sizeof *s);
    struct edhoc_received *rx = calloc(1, sizeof *rx);
    struct oscore_context *osc = calloc(1, sizeof *osc);
    uint8_t *plain = malloc(REQUEST_CAP);
    if (!c->msg || !c->req || !c->resp || !c->buf || !s || !rx || !osc || !plain) {
        exit_code = CLI_EXIT_INTERNAL;
        goto free_all;
    }
    struct edhoc_transport_config tcfg = {.block_size = (unsigned)c->block_size};
    int rc = edhoc_transport_client_open(&c->t, c->uri.host, c->uri.port, &tcfg);
    if (rc) {
        fprintf(stderr, "edhoc-cli initiator: %s: %s\n", c->uri.host, edhoc_transport_strerror(rc));
        /* A name that does not resolve is an unreachable peer, not a bad
         * command line: the URI is well formed (issue 14). */
        exit_code = cli_exit_for_client_open(rc);
        /* --json answers on every failure: a script reads the step that
         * failed from the report, not from standard error. */
        if (c->o.json) {
            run->suite = -1;
            fail(run, exit_code, "%s: %s", c->uri.host, edhoc_transport_strerror(rc));
            print_json(c, run);
        }
        goto free_all;
    }
    if (cli_net_capture_open(&c->net, "initiator", &c->capture)) {
        exit_code = CLI_EXIT_INPUT;
        goto free_all;
    }
    cli_dgram_log_start(&c->log);
    c->log.link = c->net.link;
    c->log.capture = c->capture;
    run->t0 = cli_now_ns();
    run->t_start = run->t0;
    /* --timeout bounds the whole run, both framings of auto included. */
    uint64_t deadline = run->t0 + (uint64_t)c->timeout_ms * 1000000ull;
    if (c->framing_auto)
        c->message_1_deadline = run->t0 + (uint64_t)c->timeout_ms * 500000ull;
    run->suite = -1;
    bool combined_done = false;
    bool hs_ok = handshake(c, run, s, rx, osc, deadline, &combined_done) == 0;
    c->message_1_deadline = 0;
    if (!hs_ok && c->framing_auto && !run->got_message_2) {
        /* --framing auto: A.2 got no message_2; try the bare framing of
         * older devices, and report which one the device speaks. */
        char why[400];
        snprintf(why, sizeof why, "%s", run->failure);
        uint64_t t_start = run->t_start;
        run_clear_rows(run);
        memset(run, 0, sizeof *run);
        run->t_start = t_start;
        snprintf(run->auto_a2_failure, sizeof run->auto_a2_failure, "%s", why);
        c->log.n = 0;
        edhoc_session_wipe(s);
        c->framing = EDHOC_FRAMING_BARE;
        /* The A.2 POST may still be unacknowledged, and libcoap holds a
         * new confirmable request back until it is (NSTART 1, RFC 7252
         * Section 4.7), retransmitting it meanwhile: the bare message_1
         * would never leave. libcoap 4.3.1 exports no call that cancels
         * one exchange, so the session goes, and with it the A.2 one. */
        edhoc_transport_free(c->t);
        c->t = NULL;
        rc = edhoc_transport_client_open(&c->t, c->uri.host, c->uri.port, &tcfg);
        run->t0 = cli_now_ns();
        run->suite = -1;
        if (rc)
            fail(run, cli_exit_for_client_open(rc), "%s: %s", c->uri.host,
                 edhoc_transport_strerror(rc));
        else
            hs_ok = handshake(c, run, s, rx, osc, deadline, &combined_done) == 0;
    }
    if (hs_ok && c->exports.n) {
        /* EDHOC_Exporter from this session's PRK_exporter, before any
         * request: the values do not depend on them. */
        run->exports = c->exports;
        run->have_exports = true;
        int erc = cli_exports_compute(s, &run->exports);
        if (erc)
            fail(run, cli_exit_for_edhoc_error(erc), "--export: %s", edhoc_strerror(erc));
    }
    /* A failed --export leaves the handshake's context standing (it is
     * still recorded below) but sends no request. */
    if (hs_ok && !run->exit_code) {
        run->t_handshake = cli_now_ns();
        for (size_t i = combined_done ? 1 : 0; i < c->n_requests; i++) {
            char err[200], name[40];
            long qn = build_user_request(c->requests[i], c->req, REQUEST_CAP, err, sizeof err);
            snprintf(name, sizeof name, "OSCORE request %zu", i + 1);
            struct cli_oscore_result res;
            /* Bodies above the block size go in inner Block1/Block2 blocks
             * (RFC 8613 Section 4.1.3.4.1). */
            struct cli_oscore_xfer x = {.block_size = c->block_size ? (unsigned)c->block_size : 1024,
                                        .max_body = EDHOC_BW_DEFAULT_MAX_BODY};
            int orc = cli_oscore_exchange_bw(c->t, osc, c->req, (size_t)qn, plain, REQUEST_CAP,
                                             left_ms(deadline), &c->log, name, &x, &res);
            /* One row pair per attempt (an Echo challenge makes two). */
            size_t first = c->log.n >= (size_t)res.attempts ? c->log.n - (size_t)res.attempts : 0;
            for (size_t k = first; k < c->log.n; k++) {
                const struct cli_exchange *e = &c->log.ex[k];
                char rname[48];
                snprintf(rname, sizeof rname, "OSCORE response %zu%s", i + 1,
                         k + 1 < c->log.n ? " (Echo)" : "");
                add_row(run, e->name, 'I', NULL, -1, e->bytes_sent, e->dgrams_sent, e);
                if (e->dgrams_received)
                    add_row(run, rname, 'R', NULL, -1, e->bytes_received, e->dgrams_received, e);
                run->exchanges++;
            }
            if (orc) {
                if (res.transport_err)
                    fail(run, transport_exit(res.transport_err), "%s: %s", c->requests[i],
                         res.transport_err == EDHOC_TRANSPORT_ERR_TIMEOUT
                             ? "timeout, no response"
                             : edhoc_transport_strerror(res.transport_err));
                else if (res.unprotected_error) {
                    /* Not the answer, whatever its code: an OSCORE error
                     * of RFC 8613 Section 8.2 or a forgery. */
                    char why[300];
                    cli_unprotected_answer_text(res.response_len > 0 ? plain : NULL,
                                                res.response_len > 0 ? (size_t)res.response_len
                                                                     : 0,
                                                why, sizeof why);
                    fail(run, CLI_EXIT_OSCORE, "%s: %s", c->requests[i], why);
                } else
                    fail(run, CLI_EXIT_OSCORE, "%s: OSCORE: %s", c->requests[i],
                         oscore_strerror(res.oscore_err));
                break;
            }
            struct answer *a = &run->answers[run->n_answers++];
            snprintf(a->request, sizeof a->request, "%s", c->requests[i]);
            const uint8_t *pl;
            if (cli_coap_response_view(plain, (size_t)res.response_len, &a->code, &a->cf, &pl,
                                       &a->payload_len) == 0) {
                a->payload = malloc(a->payload_len ? a->payload_len : 1);
                if (a->payload && a->payload_len)
                    memcpy(a->payload, pl, a->payload_len);
            }
            a->req_bytes = res.request_bytes;
            a->resp_bytes = res.response_bytes;
            a->attempts = res.attempts;
            /* Protected under the new context: the responder derived it,
             * so it accepted message_3 (RFC 9528 Section 5.4.2). */
            run->m3_acceptance = "oscore_response";
        }
    }
    /* One exit-code contract with `coap`: a final 4.xx or 5.xx response
     * is the request failing (RFC 7252 Section 5.9.2 and 5.9.3: client
     * and server errors), exit 1, though OSCORE itself worked (the answer
     * was protected; `interop` counts it so). */
    for (size_t i = 0; !run->exit_code && i < run->n_answers; i++) {
        const struct answer *a = &run->answers[i];
        if ((a->code >> 5) >= 4) {
            char cn[48];
            fail(run, CLI_EXIT_FAILURE, "%s: the server answered %s", a->request,
                 cli_coap_code_name(a->code, cn, sizeof cn));
        }
    }
    if (run->have_osc)
        run->next_ssn = oscore_context_ssn(osc);
    if (c->export_conf && hs_ok) {
        /* Even after a failed request: the context stands, and the
         * numbers sent with it must be recorded. */
        char why[400];
        if (export_conf(c, run, true, why, sizeof why)) {
            if (!run->exit_code)
                fail(run, CLI_EXIT_INPUT, "--export-oscore-conf %s: %s", c->export_conf, why);
            else /* the run's own failure is the one reported at the end */
                fprintf(stderr, "edhoc-cli initiator: --export-oscore-conf %s: %s\n",
                        c->export_conf, why);
        }
    }
    if (c->o.export_secrets && !c->export_conf && hs_ok && run->have_osc) {
        /* The printed context may be pasted into a conf file and used
         * again: the numbers this run sent are recorded as for
         * --export-oscore-conf, so edhoc-cli coap continues above them. */
        char why[400];
        if (export_conf(c, run, false, why, sizeof why))
            fprintf(stderr, "edhoc-cli initiator: --export-secrets: %s; a tool continuing this "
                            "context must start at sequence number %llu\n",
                    why, (unsigned long long)run->next_ssn);
    }
    run->t_end = cli_now_ns();
    /* --repeat: more handshakes on the same socket, for throughput. */
    long done = 1, failed = 0;
    uint64_t rep_t0 = cli_now_ns();
    struct run *more = c->repeat > 1 && !run->exit_code ? calloc(1, sizeof *more) : NULL;
    struct cli_progress progress;
    if (more) {
        /* Stopped by SIGINT/SIGTERM, the report covers the handshakes done. */
        cli_interrupt_catch();
        cli_progress_begin(&progress, "initiator", c->verbose, c->quiet);
    }
    for (long k = 1; more && k < c->repeat; k++) {
        if (cli_interrupted()) {
            run->partial = true;
            break;
        }
        cli_progress_update(&progress, "handshake %ld of %ld, %ld failed", k + 1, c->repeat,
                            failed);
        run_clear_rows(more);
        memset(more, 0, sizeof *more);
        c->log.n = 0;
        c->side.cfg.trace = c->keylog_dir ? edhoc_key_log_trace : NULL;
        c->klog.next = NULL;
        edhoc_session_wipe(s);
        oscore_context_wipe(osc);
        bool comb = false;
        uint64_t dl = cli_now_ns() + (uint64_t)c->timeout_ms * 1000000ull;
        bool saved = c->combined;
        c->combined = false;
        int hr = handshake(c, more, s, rx, osc, dl, &comb);
        c->combined = saved;
        if (hr == 0) {
            done++;
        } else if (!cli_interrupted()) {
            failed++;
            fprintf(stderr, "edhoc-cli initiator: repeat %ld: %s\n", k + 1, more->failure);
        }
        edhoc_wipe(&more->osc, sizeof more->osc);
        for (size_t q = 0; q < more->n_answers; q++)
            free(more->answers[q].payload);
    }
    double rep_s = (double)(cli_now_ns() - rep_t0) / 1e9;
    if (more) {
        cli_progress_end(&progress);
        run_clear_rows(more);
        /* A handshake cut short by the signal is neither done nor failed. */
        if (cli_interrupted())
            run->partial = true;
    }
    free(more);
    cli_dgram_log_stop(&c->log);
    if (c->repeat > 1 && !run->exit_code) {
        run->repeat = done + failed;
        run->repeat_ok = done;
        run->repeat_failed = failed;
        run->repeat_s = rep_s;
        if (failed)
            fail(run, CLI_EXIT_FAILURE, "%ld of %ld repeated handshakes failed", failed,
                 done + failed);
    }
    if (output_path && run->n_answers && !run->exit_code) {
        /* The body of the last response, exactly (--output). */
        const struct answer *a = &run->answers[run->n_answers - 1];
        if (cli_write_output("initiator", output_path, a->payload, a->payload_len) != 0)
            run->exit_code = CLI_EXIT_INPUT;
    }
    if (c->o.json)
        print_json(c, run);
    else
        print_text(c, run);
    if (run->repeat > 1 && !c->o.json)
        printf("Repeat: %ld handshakes, %ld ok, %ld failed, %.3f s after the first: "
               "%.1f handshakes/s\n",
               run->repeat, done, failed, rep_s, rep_s > 0 ? (double)(done - 1) / rep_s : 0.0);
    if (run->partial && !c->o.json)
        printf("interrupted: partial results (%ld of %ld handshakes run)\n", done + failed,
               c->repeat);
    fflush(stdout);
    if (run->exit_code)
        fprintf(stderr, "edhoc-cli initiator: %s\n", run->failure);
    exit_code = run->partial ? cli_interrupt_exit_code() : run->exit_code;

free_all:
    edhoc_transport_free(c->t);
    edhoc_capture_close(c->capture);
    if (s) {
        edhoc_session_wipe(s);
        free(s);
    }
    if (rx)
        edhoc_wipe(rx, sizeof *rx);
    free(rx);
    if (osc) {
        oscore_context_wipe(osc);
        free(osc);
    }
    if (plain)
        edhoc_wipe(plain, REQUEST_CAP);
    free(plain);
    free(c->msg);
    free(c->req);
    free(c->resp);
    free(c->buf);
    cli_edhoc_side_free(&c->side);
out:
    run_clear_rows(run);
    edhoc_wipe(&run->osc, sizeof run->osc);
    cli_exports_wipe(&run->exports);
    for (size_t i = 0; i < run->n_answers; i++)
        free(run->answers[i].payload);
    for (size_t i = 0; i < run->n_trace; i++) {
        edhoc_wipe(run->trace[i].v, run->trace[i].len);
        free(run->trace[i].v);
    }
    free(run);
    cli_keylog_close(&c->keylog);
    edhoc_key_log_wipe(&c->klog);
    free(c);
    free(file_payload);
    file_payload = NULL;
    return exit_code;
}
