/*
 * edhoc-cli coap METHOD URI: one CoAP request, plain or protected with a
 * static OSCORE context (libcoap's coap-oscore-conf format), for devices
 * provisioned without EDHOC.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coap_args.h"
#include "coap_report.h"
#include "coap_request.h"
#include "commands.h"
#include "edhoc_args.h"
#include "output/progress.h"
#include "edhoc/blockwise.h"
#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/oscore.h"
#include "edhoc/transport.h"
#include "net_report.h"
#include "oscore_seq.h"
#include "util.h"
#include "verbose_dump.h"

enum {
    OPT_OSCORE_CONTEXT = 1,
    OPT_STATE_DIR,
    OPT_PAYLOAD,
    OPT_PAYLOAD_HEX,
    OPT_PAYLOAD_FILE,
    OPT_OUTPUT,
    OPT_MAX_BODY,
    OPT_CONTENT_FORMAT,
    OPT_OBSERVE,
    OPT_SEQ,
    OPT_TIMEOUT,
    OPT_REPEAT,
    OPT_BLOCK_SIZE,
    OPT_JSON,
    OPT_NON,
    OPT_ACCEPT,
    OPT_OPTION,
    OPT_TOKEN,
};

static const struct cli_opt request_opts[] = {
    {OPT_PAYLOAD, "payload", "TEXT", "request payload"},
    {OPT_PAYLOAD_HEX, "payload-hex", "HEX", "request payload given as hex"},
    {OPT_PAYLOAD_FILE, "payload-file", "FILE",
     "request payload read from FILE (- for standard input)"},
    {OPT_CONTENT_FORMAT, "content-format", "NAME|N",
     "Content-Format of the payload: a number (0..65535) or a registered name\n"
     "(text/plain;charset=utf-8, application/link-format, application/xml,\n"
     "application/octet-stream, application/exi, application/json,\n"
     "application/cbor, application/senml+json, application/senml+cbor,\n"
     "application/oscore)"},
    {OPT_ACCEPT, "accept", "NAME|N",
     "the Content-Format wanted in the response (Accept, RFC 7252 Section\n"
     "5.10.4), a number or a name as for --content-format"},
    {OPT_NON, "non", NULL,
     "send a Non-confirmable request (RFC 7252 Section 4.3), not retransmitted;\n"
     "a plain request only"},
    {OPT_OPTION, "option", "NUM,VALUE",
     "add option NUM with VALUE (text, or 0x followed by hex) to the request;\n"
     "repeatable; the options the request gets from the URI and the other\n"
     "options (Uri-Path, Uri-Query, Content-Format, Accept, Observe, Block1,\n"
     "Block2, OSCORE, Echo) are refused"},
    {OPT_TOKEN, "token", "HEX",
     "the request's token, 0 to 8 bytes in hex (RFC 7252 Section 5.3.1; \"\"\n"
     "for an empty one); default: a fresh one from the transport"},
    {OPT_OUTPUT, "output", "FILE", "write the response body to FILE instead of printing it"},
    {OPT_MAX_BODY, "max-body", "N",
     "largest request or response body (16..1048576, default 65536); bodies\n"
     "above --block-size go block-wise, inside OSCORE under --oscore-context\n"
     "(RFC 8613 4.1.3.4.1)"},
    {OPT_BLOCK_SIZE, "block-size", "N",
     "block-wise transfer above N bytes (16..1024, default 1024)"},
    {OPT_OBSERVE, "observe", "N",
     "register as an observer, print N notifications, then deregister with a\n"
     "new request (RFC 7641 Section 3.6); Ctrl-C deregisters too"},
    {OPT_REPEAT, "repeat", "N",
     "send the request N times in a row and print requests/s; Ctrl-C stops\n"
     "early and reports what was done"},
    {OPT_TIMEOUT, "timeout", "SECONDS",
     "give up after SECONDS (decimals allowed; default 10; bounds everything)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt oscore_opts[] = {
    {OPT_OSCORE_CONTEXT, "oscore-context", "FILE[,SEQFILE]",
     "protect with this static OSCORE context (libcoap format; it holds the\n"
     "master secret, so it is refused when group or others can read it, when\n"
     "another user owns it, or in a directory others can write); its sequence\n"
     "numbers are kept in FILE.seq (libcoap's -E FILE,FILE.seq), in the state\n"
     "directory and in SEQFILE, all in step"},
    {OPT_STATE_DIR, "state-dir", "DIR|none",
     "where the context's sequence numbers are also kept between runs\n"
     "(default $STATE_DIRECTORY, else $XDG_STATE_HOME/edhoc-cli, else\n"
     "~/.local/state/edhoc-cli); none: FILE.seq and SEQFILE only"},
    {OPT_SEQ, "seq", "N",
     "first sender sequence number (default: above every number used\n"
     "before; a lower N is refused)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt output_opts[] = {
    {OPT_JSON, "json", NULL,
     "one JSON object on standard output, whatever the outcome once the request\n"
     "is sent (docs/json/coap.schema.json)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group coap_groups[] = {
    {"Request", request_opts},
    {"OSCORE", oscore_opts},
    {"Output", output_opts},
    {"Capture", cli_net_opts_pcap},
    {NULL, NULL},
};

static const struct cli_opt_renamed coap_renamed[] = {
    {"timeout-ms", "--timeout SECONDS (decimals allowed, e.g. --timeout 0.5)"},
    {NULL, NULL},
};

/* coap-client's spellings. */
static const struct cli_opt_short coap_short_names[] = {
    {OPT_NON, 'N'}, {OPT_ACCEPT, 'A'}, {OPT_OPTION, 'O'}, {OPT_TOKEN, 'T'}, {0, 0},
};

const struct cli_cmd_spec cli_spec_coap = {
    .short_names = coap_short_names,
    .name = "coap",
    .synopsis = "METHOD URI [OPTIONS]",
    .description =
        "Sends one CoAP request (METHOD: GET, POST, PUT, DELETE, FETCH, PATCH, IPATCH) to\n"
        "coap://HOST[:PORT]/PATH[?QUERY] and prints the response.",
    .groups = coap_groups,
    .renamed = coap_renamed,
    .epilogue = "Exit codes: 0 a 2.xx response; 1 a 4.xx/5.xx response; 2 bad command line;\n"
                "3 unusable context file or state directory; 6 no response in time, peer\n"
                "unreachable or host name not resolved; 7 OSCORE protection or verification\n"
                "failed, or the peer answered without OSCORE; 130/143 --observe or --repeat\n"
                "interrupted (SIGINT/SIGTERM), what was received reported.",
};

/* The progress line of --observe and --repeat. */
static struct cli_progress coap_progress;

static void progress_hook(void *user, const char *what, long done, long total)
{
    (void)user;
    cli_progress_update(&coap_progress, "%ld of %ld %s", done, total, what);
}

static int interrupted_hook(void *user)
{
    (void)user;
    return cli_interrupted();
}

int cmd_coap(int argc, char **argv)
{
    /* --oscore-context: the master secret. */
    cli_no_core_dumps();
    const char *method = NULL, *uri = NULL, *ctx_path = NULL, *payload = NULL, *payload_hex = NULL;
    const char *payload_file = NULL, *output_path = NULL;
    long cf = -1, observe = 0, timeout_ms = 10000, block_size = 0, repeat = 0;
    long max_body = EDHOC_BW_DEFAULT_MAX_BODY;
    long accept = -1;
    bool non = false, has_token = false;
    uint8_t token[8];
    size_t token_len = 0;
    struct client_coap_option extra[CLIENT_COAP_MAX_EXTRA];
    static uint8_t extra_values[CLIENT_COAP_MAX_EXTRA][256];
    size_t n_extra = 0;
    long long seq = 0;
    bool json = false, seq_given = false;
    const char *state_opt = NULL;
    struct cli_seq_store *seq_store = NULL;
    struct cli_net_opts net;
    memset(&net, 0, sizeof net);

    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_coap, argc, argv);
    for (enum cli_opt_status st; (st = cli_opt_next(&p)) != CLI_OPT_DONE;) {
        if (st == CLI_OPT_EXIT)
            return p.exit_code;
        if (st == CLI_OPT_POSITIONAL) {
            if (!method)
                method = p.value;
            else if (!uri)
                uri = p.value;
            else
                return cli_opt_error(&p, "unexpected argument '%s'", p.value);
            continue;
        }
        int bad = 0;
        switch (p.opt->id) {
        case CLI_OPT_ID_NET: bad = cli_net_take(&net, &p); break;
        case OPT_OSCORE_CONTEXT: ctx_path = p.value; break;
        case OPT_STATE_DIR: state_opt = p.value; break;
        case OPT_PAYLOAD: payload = p.value; break;
        case OPT_PAYLOAD_HEX: payload_hex = p.value; break;
        case OPT_PAYLOAD_FILE: payload_file = p.value; break;
        case OPT_OUTPUT: output_path = p.value; break;
        case OPT_JSON: json = true; break;
        case OPT_MAX_BODY:
            bad = cli_opt_long(&p, 16, (long)EDHOC_BW_MAX_BODY_LIMIT, &max_body);
            break;
        case OPT_SEQ: {
            uint64_t v;
            bad = cli_opt_u64(&p, 0, OSCORE_SSN_MAX, &v);
            seq = (long long)v;
            seq_given = true;
            break;
        }
        case OPT_REPEAT: bad = cli_opt_long(&p, 1, 100000000, &repeat); break;
        case OPT_CONTENT_FORMAT: bad = cli_coap_content_format_arg(&p, &cf); break;
        case OPT_ACCEPT: bad = cli_coap_content_format_arg(&p, &accept); break;
        case OPT_NON: non = true; break;
        case OPT_TOKEN:
            bad = cli_coap_token_arg(&p, token, &token_len);
            has_token = !bad;
            break;
        case OPT_OPTION:
            if (n_extra == CLIENT_COAP_MAX_EXTRA) {
                fprintf(stderr, "edhoc-cli coap: %s: at most %d options\n", p.flag,
                        CLIENT_COAP_MAX_EXTRA);
                bad = 1;
            } else {
                bad = cli_coap_option_arg(&p, &extra[n_extra], extra_values[n_extra],
                                          sizeof extra_values[n_extra]);
                n_extra += !bad;
            }
            break;
        case OPT_OBSERVE: bad = cli_opt_long(&p, 0, 65535, &observe); break;
        case OPT_TIMEOUT: bad = cli_opt_seconds(&p, 0.001, 3600, &timeout_ms); break;
        case OPT_BLOCK_SIZE: bad = cli_opt_long(&p, 16, 1024, &block_size); break;
        }
        if (bad)
            return CLI_EXIT_USAGE;
    }
    if (!method || !uri)
        return cli_opt_usage_error(&cli_spec_coap, "needs a METHOD and a URI");
    int code = cli_coap_method(method);
    if (code < 0) {
        fprintf(stderr, "edhoc-cli coap: unknown method '%s'\n", method);
        return CLI_EXIT_USAGE;
    }
    struct cli_uri u;
    if (cli_uri_parse(uri, &u))
        return CLI_EXIT_USAGE;
    if (block_size && edhoc_block_szx((size_t)block_size) < 0) {
        fprintf(stderr, "edhoc-cli coap: --block-size: a power of two from 16 to 1024\n");
        return CLI_EXIT_USAGE;
    }
    /* What this request would not use is refused, not ignored. */
    if (!ctx_path && (state_opt || seq_given))
        return cli_opt_error(&p,
                             "%s goes with --oscore-context (a plain request has no "
                             "sequence numbers)",
                             state_opt ? "--state-dir" : "--seq");
    if (non && ctx_path)
        return cli_opt_error(&p, "--non goes with a plain request (the OSCORE exchange is "
                                 "confirmable)");
    if (observe && repeat > 1)
        return cli_opt_error(&p, "--observe and --repeat do not go together");
    if (json && output_path && !strcmp(output_path, "-"))
        return cli_opt_error(&p, "--json and --output -: both would go to standard output");
    if ((payload != NULL) + (payload_hex != NULL) + (payload_file != NULL) > 1) {
        fprintf(stderr, "edhoc-cli coap: give one of --payload, --payload-hex, --payload-file\n");
        return CLI_EXIT_USAGE;
    }
    size_t body_len = 0;
    uint8_t *body = NULL;
    int prc = cli_coap_read_payload(payload, payload_hex, payload_file, (size_t)max_body, &body,
                                    &body_len);
    if (prc)
        return prc;

    struct oscore_context *ctx = NULL;
    struct client_coap_run run;
    memset(&run, 0, sizeof run);
    struct client_b2_follow *follow = &run.follow;
    oscore_b2_client_init(&follow->st, 0);
    struct oscore_config *kept_cfg = NULL;
    if (ctx_path) {
        char conf_path[4096], seq_path[4096], why[512] = "";
        if (cli_oscore_context_arg(ctx_path, conf_path, sizeof conf_path, seq_path,
                                   sizeof seq_path)) {
            fprintf(stderr, "edhoc-cli coap: --oscore-context: path too long\n");
            free(body);
            return CLI_EXIT_USAGE;
        }
        char state_dir[4096];
        int sd = cli_state_dir(state_opt, state_dir, sizeof state_dir, why, sizeof why);
        if (sd < 0) {
            fprintf(stderr, "edhoc-cli coap: %s\n", why);
            free(body);
            return CLI_EXIT_INPUT;
        }
        struct oscore_config cfg;
        int rc = cli_oscore_context_load("coap", "--oscore-context", conf_path, &cfg);
        if (rc) {
            free(body);
            return rc;
        }
        ctx = calloc(1, sizeof *ctx);
        rc = ctx ? oscore_context_init_config(ctx, edhoc_crypto_default(), &cfg)
                 : OSCORE_ERR_INVALID;
        int exit_rc = CLI_EXIT_INPUT;
        if (rc) {
            snprintf(why, sizeof why, "%s", oscore_strerror(rc));
        } else if (cli_seq_open(&seq_store, sd == 0 ? state_dir : NULL, conf_path, seq_path, &cfg,
                                why, sizeof why)) {
            rc = -1;
        } else {
            /* Reserve what this run is likely to send in one go (the
             * request, an Echo retry, a deregistration, --repeat), so that
             * a short run costs one durable write. */
            uint64_t bs = block_size ? (uint64_t)block_size : 1024;
            /* The Block1 blocks and one more; a long Block2 response
             * reserves again as it goes. Small batches keep runs sharing a
             * context close together in the server's replay window. */
            uint64_t per_request = 1 + body_len / bs + 1;
            uint64_t planned = (repeat > 1 ? (uint64_t)repeat : 1) * per_request + 2;
            if (planned > 65536)
                planned = 65536;
            if (planned < cfg.ssn_freq)
                planned = cfg.ssn_freq;
            uint64_t mark = 0;
            if (seq_given && cli_seq_peek(seq_store, &mark, why, sizeof why) == 0 &&
                (uint64_t)seq < mark) {
                snprintf(why, sizeof why,
                         "--seq %lld: sequence numbers below %llu may already have been used "
                         "with this context; a nonce must never repeat (RFC 8613 Section 7.2)",
                         seq, (unsigned long long)mark);
                rc = -1;
                exit_rc = CLI_EXIT_USAGE;
            } else {
                int ar = cli_seq_attach(seq_store, ctx, (uint32_t)planned,
                                        seq_given ? (uint64_t)seq : 0, why, sizeof why);
                if (ar) {
                    rc = -1;
                    exit_rc = ar == -2 ? CLI_EXIT_USAGE : CLI_EXIT_INPUT;
                }
            }
        }
        /* The inputs stay for Appendix B.2, which derives new contexts from
         * them. */
        if (rc == 0) {
            kept_cfg = malloc(sizeof *kept_cfg);
            follow->next = calloc(1, sizeof *follow->next);
            if (!kept_cfg || !follow->next) {
                snprintf(why, sizeof why, "out of memory");
                rc = -1;
            } else {
                *kept_cfg = cfg;
            }
        }
        edhoc_wipe(&cfg, sizeof cfg);
        if (rc) {
            fprintf(stderr, "edhoc-cli coap: --oscore-context %s: %s\n", conf_path, why);
            if (ctx)
                oscore_context_wipe(ctx);
            free(ctx);
            free(kept_cfg);
            free(follow->next);
            cli_seq_close(seq_store);
            free(body);
            return exit_rc;
        }
    }

    follow->cfg = kept_cfg;
    follow->active = ctx;
    /* Every datagram of the run goes to --pcap FILE. */
    static struct cli_dgram_log log;
    struct edhoc_capture *capture = NULL;
    if (cli_net_capture_open(&net, "coap", &capture)) {
        if (ctx) {
            oscore_context_wipe(ctx);
            free(ctx);
        }
        if (kept_cfg)
            edhoc_wipe(kept_cfg, sizeof *kept_cfg);
        free(kept_cfg);
        free(follow->next);
        cli_seq_close(seq_store);
        free(body);
        return CLI_EXIT_INPUT;
    }
    if (capture) {
        cli_dgram_log_start(&log);
        log.capture = capture;
    }
    int exit_code = CLI_EXIT_OK;
    struct edhoc_transport *t = NULL;
    struct coap_report rep;
    coap_report_begin(&rep, false, output_path);
    run.ctx = ctx;
    run.p = (struct client_coap_params){
        .code = (uint8_t)code,
        .path = u.path,
        .query = u.query,
        .content_format = (int)cf,
        .body = body,
        .body_len = body_len,
        .observe = observe,
        .repeat = repeat,
        .block_size = (unsigned)block_size,
        .max_body = (size_t)max_body,
        .timeout_ms = timeout_ms,
        .output = output_path != NULL,
        .non = non,
        .accept = accept,
        .has_token = has_token,
        .token_len = token_len,
        .verbose = p.verbose > 0,
        .quiet = p.quiet,
    };
    memcpy(run.p.token, token, token_len);
    memcpy(run.p.extra, extra, n_extra * sizeof extra[0]);
    run.p.n_extra = n_extra;
    run.h = (struct client_coap_hooks){
        .response = coap_report_response,
        .notice = coap_report_notice,
        .progress = progress_hook,
        .interrupted = interrupted_hook,
        .user = &rep,
    };
    exit_code = client_coap_prepare(&run);
    if (exit_code)
        goto out;
    struct edhoc_transport_config tcfg = {.block_size = (unsigned)block_size,
                                          .max_body = (size_t)max_body};
    int rc = edhoc_transport_client_open(&t, u.host, u.port, &tcfg);
    if (rc) {
        fprintf(stderr, "edhoc-cli coap: %s: %s\n", u.host, edhoc_transport_strerror(rc));
        exit_code = cli_exit_for_client_open(rc);
        if (json)
            coap_report_unsent("unreachable", ctx);
        goto out;
    }
    /* From here on the request goes out: --json prints what happened,
     * whatever it was. */
    coap_report_begin(&rep, json, output_path);
    /* Runs that take a while (--observe, --repeat) show where they are
     * and, stopped by Ctrl-C, end cleanly: the observation deregistered,
     * what was received reported, marked partial. */
    bool long_run = observe > 0 || repeat > 1;
    cli_progress_begin(&coap_progress, "coap", p.verbose, p.quiet || !long_run);
    if (long_run)
        cli_interrupt_catch();
    cli_verbose_start("coap", p.verbose);
    exit_code = client_coap_exchange(&run, t);
    cli_verbose_stop();
    coap_report_repeat(&rep, &run);
    cli_progress_end(&coap_progress);
    bool partial = cli_interrupted() != 0;
    if (partial) {
        if (!rep.root)
            printf("interrupted: partial results\n");
        exit_code = cli_interrupt_exit_code();
    }
    coap_report_finish(&rep, &run, partial);
out:
    edhoc_transport_free(t);
    if (capture) {
        cli_dgram_log_stop(&log);
        edhoc_capture_close(capture);
    }
    if (ctx) {
        char why[256];
        if (seq_store && cli_seq_release(seq_store, oscore_context_ssn(ctx), why, sizeof why))
            fprintf(stderr, "edhoc-cli coap: %s\n", why);
        oscore_context_wipe(ctx);
        free(ctx);
    }
    if (follow->next) {
        oscore_context_wipe(follow->next);
        free(follow->next);
    }
    if (kept_cfg) {
        edhoc_wipe(kept_cfg, sizeof *kept_cfg);
        free(kept_cfg);
    }
    edhoc_wipe(&follow->st, sizeof follow->st);
    cli_seq_close(seq_store);
    free(body);
    client_coap_release(&run);
    return exit_code;
}
