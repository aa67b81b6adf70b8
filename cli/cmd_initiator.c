/*
 * edhoc-cli initiator URI: EDHOC (RFC 9528) against a CoAP peer, in the
 * Appendix A.2 framing, the bare framing of older devices or with the
 * RFC 9668 combined request; then OSCORE-protected requests with the
 * derived context. Reports every message as EDHOC bytes and, from the
 * datagrams that actually crossed the socket, per layer: CoAP message (UDP
 * payload), UDP datagram, IP packet and, with --link / --link-mtu, link
 * frames and bytes; --pcap writes those datagrams to a capture file.
 *
 * Here: the options, their checks and the run; the flow is the client
 * engine's (src/client/edhoc_client.c), the reports are in
 * initiator_report.c, --export-oscore-conf and --keylog in
 * initiator_conf.c, the --request messages in initiator_requests.c.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "commands.h"
#include "edhoc/blockwise.h"
#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/oscore.h"
#include "edhoc/transport.h"
#include "initiator_output.h"
#include "output/json_out.h"
#include "oscore_seq.h"
#include "output/progress.h"
#include "verbose_dump.h"

_Static_assert((int)EDHOC_CLIENT_OK == (int)CLI_EXIT_OK &&
                   (int)EDHOC_CLIENT_FAILURE == (int)CLI_EXIT_FAILURE &&
                   (int)EDHOC_CLIENT_USAGE == (int)CLI_EXIT_USAGE &&
                   (int)EDHOC_CLIENT_INPUT == (int)CLI_EXIT_INPUT &&
                   (int)EDHOC_CLIENT_PEER_ERROR == (int)CLI_EXIT_PEER_ERROR &&
                   (int)EDHOC_CLIENT_VERIFY == (int)CLI_EXIT_VERIFY &&
                   (int)EDHOC_CLIENT_TIMEOUT == (int)CLI_EXIT_TIMEOUT &&
                   (int)EDHOC_CLIENT_OSCORE == (int)CLI_EXIT_OSCORE &&
                   (int)EDHOC_CLIENT_INTERNAL == (int)CLI_EXIT_INTERNAL,
               "the client engine's statuses are the exit codes");
_Static_assert(EDHOC_CLIENT_MAX_ATTEMPTS == CLI_MAX_ATTEMPTS, "one attempt per --c-i value");

/* --output FILE: where the body of the last --request's response goes. */
static const char *output_path;

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
    {OPT_COMBINED, "combined", NULL, "send message_3 inside the first OSCORE request (RFC 9668)"},
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
     "where --export-oscore-conf, or --export-secrets without it, records the sequence numbers "
     "(default $STATE_DIRECTORY, else $XDG_STATE_HOME/edhoc-cli, else "
     "~/.local/state/edhoc-cli; none: FILE.seq only)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt app_key_opts[] = {
    {OPT_EXPORT, "export", "LABEL,CONTEXT_HEX,LENGTH", CLI_EXPORT_HELP},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group initiator_groups[] = {
    {"Requests and transport", request_opts},        {"EDHOC", cli_edhoc_opts_initiator},
    {"OSCORE context for other tools", export_opts}, {"Keys for applications", app_key_opts},
    {"Link and capture", cli_net_opts_link},         {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_initiator = {
    .name = "initiator",
    .synopsis = "URI [OPTIONS]",
    .description = "Runs EDHOC as CoAP client against URI (coap://HOST[:PORT][/PATH], path\n"
                   "default /.well-known/edhoc), derives the OSCORE context (RFC 9528 Appendix\n"
                   "A.1) and sends OSCORE-protected requests, printing each decrypted response\n"
                   "and every message's size per layer. --json prints one document\n"
                   "(docs/json/initiator.schema.json).",
    .groups = initiator_groups,
    .renamed = NULL,
    .epilogue = CLI_EDHOC_DEMO_NOTE
    "\n\n"
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
    struct initiator *c = calloc(1, sizeof *c);
    struct edhoc_client_run *run = calloc(1, sizeof *run);
    if (!c || !run) {
        free(c);
        free(run);
        return CLI_EXIT_INTERNAL;
    }
    c->keylog.edhoc_fd = c->keylog.oscore_fd = -1;
    cli_edhoc_opts_init(&c->o);
    c->timeout_ms = 10000;
    long pad_message_1 = 0, block_size = 0;
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
            if (c->n_requests >= CLI_INITIATOR_MAX_REQUESTS)
                bad = cli_opt_error(&p, "at most %d --request", CLI_INITIATOR_MAX_REQUESTS);
            else
                c->requests[c->n_requests++] = p.value;
            break;
        case OPT_PAYLOAD_FILE:
            if (cli_initiator_read_payload_file(p.value)) {
                exit_code = CLI_EXIT_INPUT; /* a file that cannot be used, as documented */
                goto out;
            }
            break;
        case OPT_OUTPUT: output_path = p.value; break;
        case OPT_COMBINED: c->cl.combined = true; break;
        case OPT_FRAMING:
            /* "a.2" and any case, as the report spells it. */
            if (!strcasecmp(p.value, "a2") || !strcasecmp(p.value, "a.2")) {
                c->cl.framing = EDHOC_FRAMING_A2;
            } else if (!strcasecmp(p.value, "bare")) {
                c->cl.framing = EDHOC_FRAMING_BARE;
            } else if (!strcasecmp(p.value, "auto")) {
                c->cl.framing = EDHOC_FRAMING_A2;
                c->cl.framing_auto = true;
            } else {
                bad = cli_opt_error(&p, "--framing: expected a2, bare or auto, got '%s'", p.value);
            }
            break;
        case OPT_TIMEOUT: bad = cli_opt_seconds(&p, 0.001, 3600, &c->timeout_ms); break;
        case OPT_BLOCK_SIZE:
            bad = cli_opt_long(&p, 16, 1024, &block_size);
            if (!bad && (block_size & (block_size - 1)))
                bad = cli_opt_error(&p, "--block-size: a power of two from 16 to 1024, got %ld",
                                    block_size);
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
    if (c->cl.combined && c->o.message_4) {
        fprintf(stderr, "edhoc-cli initiator: --combined cannot carry message_4 (RFC 9668)\n");
        goto out;
    }
    if (c->cl.combined && c->cl.framing == EDHOC_FRAMING_BARE) {
        fprintf(stderr, "edhoc-cli initiator: --combined needs the A.2 framing\n");
        goto out;
    }
    if (c->exports.n && !c->o.export_secrets) {
        cli_opt_error(&p, CLI_EXPORT_NEEDS_SECRETS);
        goto out;
    }
    /* Both record the sequence numbers the run used (initiator_conf.c). */
    if (c->state_dir_arg && !c->export_conf && !c->o.export_secrets) {
        fprintf(stderr, "edhoc-cli initiator: --state-dir goes with --export-oscore-conf or "
                        "--export-secrets\n");
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
        if (cli_initiator_export_prepare(c, why, sizeof why)) {
            fprintf(stderr, "edhoc-cli initiator: --export-oscore-conf %s: %s\n", c->export_conf,
                    why);
            exit_code = CLI_EXIT_INPUT;
            goto out;
        }
    }
    if (c->o.export_secrets && !c->export_conf && c->state_dir_arg) {
        /* The printed context's numbers go to DIR only: with none they
         * would be recorded nowhere, and a tool continuing the context
         * could reuse a nonce (RFC 8613 Section 7.2.1). */
        char why[400];
        int sd =
            cli_state_dir(c->state_dir_arg, c->state_dir, sizeof c->state_dir, why, sizeof why);
        if (sd > 0) {
            fprintf(stderr, "edhoc-cli initiator: --state-dir none: --export-secrets records the "
                            "sequence numbers used in a state directory only; give a DIR, or "
                            "--export-oscore-conf FILE for FILE.seq\n");
            goto out;
        }
        if (sd < 0) {
            fprintf(stderr, "edhoc-cli initiator: --state-dir: %s\n", why);
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
    if (handshake_only && c->cl.combined) {
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
                        why, c->export_conf ? " without --export-oscore-conf" : "", c->o.suites[i]);
                goto out;
            }
        }
    }
    /* Requests are checked before anything is sent. */
    {
        uint8_t *scratch = malloc(edhoc_client_request_cap());
        for (size_t i = 0; scratch && i < c->n_requests; i++) {
            char err[200];
            if (cli_initiator_build_request(c->requests[i], scratch, edhoc_client_request_cap(),
                                            err, sizeof err) < 0) {
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
        c->side.cfg.trace = edhoc_client_on_trace;
        c->side.cfg.trace_ctx = run;
    }
    if (c->keylog_dir) {
        /* The key log sees every value first and hands each on to --trace. */
        c->klog.next = c->side.cfg.trace;
        c->klog.next_ctx = c->side.cfg.trace_ctx;
        c->side.cfg.trace = edhoc_key_log_trace;
        c->side.cfg.trace_ctx = &c->klog;
        c->cl.edhoc_keys = cli_initiator_keylog_edhoc;
        c->cl.oscore_keys = cli_initiator_keylog_oscore;
        c->cl.keys_user = c;
    }
    c->side.cfg.pad_message_1 = (size_t)pad_message_1;
    struct edhoc_client *cl = &c->cl;
    const struct cli_side_opts *so = &c->o.side[CLI_SIDE_I];
    cl->path = c->uri.path;
    cl->query = c->uri.query;
    cl->host = c->uri.host;
    cl->port = c->uri.port;
    cl->block_size = (unsigned)block_size;
    cl->message_4 = c->o.message_4;
    cl->oscore_requests = c->n_requests > 0;
    cl->cfg = &c->side.cfg;
    cl->resolve = cli_edhoc_resolve;
    cl->resolve_ctx = &c->side;
    cl->c_id = so->c_id;
    cl->c_id_len = so->c_id_len;
    cl->n_c_id = so->n_c_id;
    cl->ephemeral = (const uint8_t(*)[EDHOC_CRYPTO_MAX_PRIV])c->side.ephemerals;
    cl->ephemeral_len = c->side.ephemeral_len;
    cl->n_ephemerals = c->side.n_ephemerals;
    size_t request_cap = edhoc_client_request_cap();
    struct edhoc_session *s = calloc(1, sizeof *s);
    struct edhoc_received *rx = calloc(1, sizeof *rx);
    struct oscore_context *osc = calloc(1, sizeof *osc);
    uint8_t *plain = malloc(request_cap);
    uint8_t *first = c->cl.combined ? malloc(request_cap) : NULL;
    if (!s || !rx || !osc || !plain || (c->cl.combined && !first)) {
        exit_code = CLI_EXIT_INTERNAL;
        goto free_all;
    }
    if (c->cl.combined) {
        char err[200];
        long fn = cli_initiator_build_request(c->requests[0], first, request_cap, err, sizeof err);
        cl->first_request = first;
        cl->first_request_len = fn > 0 ? (size_t)fn : 0;
        cl->first_request_name = c->requests[0];
    }
    int rc = edhoc_client_open(cl);
    if (rc == EDHOC_TRANSPORT_ERR_BUFFER && !cl->t) {
        exit_code = CLI_EXIT_INTERNAL;
        goto free_all;
    }
    if (rc) {
        fprintf(stderr, "edhoc-cli initiator: %s: %s\n", c->uri.host, edhoc_transport_strerror(rc));
        /* A name that does not resolve is an unreachable peer, not a bad
         * command line: the URI is well formed (issue 14). */
        exit_code = cli_exit_for_client_open(rc);
        /* --json answers on every failure: a script reads the step that
         * failed from the report, not from standard error. */
        if (c->o.json) {
            run->suite = -1;
            edhoc_client_fail(run, exit_code, "%s: %s", c->uri.host, edhoc_transport_strerror(rc));
            cli_initiator_print_json(c, run);
        }
        goto free_all;
    }
    if (cli_net_capture_open(&c->net, "initiator", &c->capture)) {
        exit_code = CLI_EXIT_INPUT;
        goto free_all;
    }
    cli_dgram_log_start(&cl->log);
    cl->log.link = c->net.link;
    cl->log.capture = c->capture;
    cli_verbose_start("initiator", c->verbose);
    bool combined_done = false;
    bool hs_ok = edhoc_client_connect(cl, run, s, rx, osc, c->timeout_ms, &combined_done) == 0;
    /* --timeout bounds the whole run, both framings of auto included. */
    uint64_t deadline = run->t_start + (uint64_t)c->timeout_ms * 1000000ull;
    if (hs_ok && c->exports.n) {
        /* EDHOC_Exporter from this session's PRK_exporter, before any
         * request: the values do not depend on them. */
        c->have_exports = true;
        int erc = cli_exports_compute(s, &c->exports);
        if (erc)
            edhoc_client_fail(run, cli_exit_for_edhoc_error(erc), "--export: %s",
                              edhoc_strerror(erc));
    }
    /* A failed --export leaves the handshake's context standing (it is
     * still recorded below) but sends no request. */
    if (hs_ok && !run->exit_code) {
        run->t_handshake = cli_now_ns();
        for (size_t i = combined_done ? 1 : 0; i < c->n_requests; i++) {
            char err[200];
            long qn =
                cli_initiator_build_request(c->requests[i], cl->req, request_cap, err, sizeof err);
            if (edhoc_client_oscore_request(cl, run, osc, i, c->requests[i], cl->req, (size_t)qn,
                                            plain, request_cap, deadline))
                break;
        }
    }
    edhoc_client_check_answers(run);
    if (run->have_osc)
        run->next_ssn = oscore_context_ssn(osc);
    cli_initiator_record_conf(c, run, hs_ok);
    run->t_end = cli_now_ns();
    /* -v shows the first handshake and its requests; thousands of
     * --repeat handshakes would only drown their progress line. */
    cli_verbose_stop();
    /* --repeat: more handshakes on the same socket, for throughput. */
    long done = 1, failed = 0;
    uint64_t rep_t0 = cli_now_ns();
    struct edhoc_client_run *more =
        c->repeat > 1 && !run->exit_code ? calloc(1, sizeof *more) : NULL;
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
        edhoc_client_run_clear_rows(more);
        memset(more, 0, sizeof *more);
        cl->log.n = 0;
        c->side.cfg.trace = c->keylog_dir ? edhoc_key_log_trace : NULL;
        c->klog.next = NULL;
        edhoc_session_wipe(s);
        oscore_context_wipe(osc);
        bool comb = false;
        uint64_t dl = cli_now_ns() + (uint64_t)c->timeout_ms * 1000000ull;
        bool saved = cl->combined;
        cl->combined = false;
        int hr = edhoc_client_handshake(cl, more, s, rx, osc, dl, &comb);
        cl->combined = saved;
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
        edhoc_client_run_clear_rows(more);
        /* A handshake cut short by the signal is neither done nor failed. */
        if (cli_interrupted())
            run->partial = true;
    }
    free(more);
    cli_dgram_log_stop(&cl->log);
    if (c->repeat > 1 && !run->exit_code) {
        run->repeat = done + failed;
        run->repeat_ok = done;
        run->repeat_failed = failed;
        run->repeat_s = rep_s;
        if (failed)
            edhoc_client_fail(run, CLI_EXIT_FAILURE, "%ld of %ld repeated handshakes failed",
                              failed, done + failed);
    }
    if (output_path && run->n_answers && !run->exit_code) {
        /* The body of the last response, exactly (--output). */
        const struct edhoc_client_answer *a = &run->answers[run->n_answers - 1];
        if (cli_write_output("initiator", output_path, a->payload, a->payload_len) != 0)
            run->exit_code = CLI_EXIT_INPUT;
    }
    if (c->o.json)
        cli_initiator_print_json(c, run);
    else
        cli_initiator_print_text(c, run);
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
    edhoc_client_close(&c->cl);
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
        edhoc_wipe(plain, request_cap);
    free(plain);
    free(first);
    cli_edhoc_side_free(&c->side);
out:
    edhoc_client_run_free(run);
    cli_exports_wipe(&c->exports);
    free(run);
    cli_keylog_close(&c->keylog);
    edhoc_key_log_wipe(&c->klog);
    free(c);
    cli_initiator_payload_free();
    return exit_code;
}
