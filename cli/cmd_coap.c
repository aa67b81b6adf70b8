/*
 * edhoc-cli coap METHOD URI: one CoAP request, plain or protected with a
 * static OSCORE context (libcoap's coap-oscore-conf format), for devices
 * provisioned without EDHOC.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "edhoc_args.h"
#include "edhoc/blockwise.h"
#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/oscore.h"
#include "edhoc/transport.h"
#include "net_report.h"
#include "oscore_seq.h"
#include "util.h"

/* The sequence numbers this run sent with, for --json. */
struct seq_log {
    uint64_t first[64];
    size_t n, total;
};

static long protect_logged(struct oscore_context *ctx, struct seq_log *log, const uint8_t *req,
                           size_t len, uint8_t *out, size_t cap, struct oscore_binding *b)
{
    long n = oscore_protect_request(ctx, req, len, out, cap, b);
    if (n >= 0) {
        uint64_t piv = 0;
        for (size_t i = 0; i < b->piv_len; i++)
            piv = piv << 8 | b->piv[i];
        if (log->n < sizeof log->first / sizeof log->first[0])
            log->first[log->n++] = piv;
        log->total++;
    }
    return n;
}

/* "the peer answered without OSCORE" with what it said, and which RFC
 * sentence makes it no answer. */
static void report_unprotected(const uint8_t *msg, size_t len, uint8_t code)
{
    char text[400];
    cli_unprotected_answer_text(msg, len, text, sizeof text);
    fprintf(stderr, "edhoc-cli coap: %s\n", text);
    if (code >= COAP_CODE(4, 0) && code <= COAP_CODE(4, 2))
        fprintf(stderr, "edhoc-cli coap: RFC 8613 Sections 7.4 and 8.2: the server's OSCORE layer "
                        "refused the request (its error responses are not protected); if the "
                        "context is used outside this state directory, continue above its "
                        "numbers with --seq N or --oscore-context CONF,SEQFILE\n");
    else
        fprintf(stderr, "edhoc-cli coap: a response to an OSCORE request is protected (RFC 8613 "
                        "Sections 2 and 8.4): this one proves nothing\n");
}

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
};

static const struct cli_opt request_opts[] = {
    {OPT_PAYLOAD, "payload", "TEXT", "request payload"},
    {OPT_PAYLOAD_HEX, "payload-hex", "HEX", "request payload given as hex"},
    {OPT_PAYLOAD_FILE, "payload-file", "FILE", "request payload read from FILE (- for standard input)"},
    {OPT_CONTENT_FORMAT, "content-format", "N", "Content-Format of the payload (0..65535)"},
    {OPT_OUTPUT, "output", "FILE", "write the response body to FILE instead of printing it"},
    {OPT_MAX_BODY, "max-body", "N",
     "largest request or response body (16..1048576, default 65536); bodies\n"
     "above --block-size go block-wise, inside OSCORE under --oscore-context\n"
     "(RFC 8613 4.1.3.4.1)"},
    {OPT_BLOCK_SIZE, "block-size", "N", "block-wise transfer above N bytes (16..1024, default 1024)"},
    {OPT_OBSERVE, "observe", "N",
     "register as an observer, print N notifications, then deregister with a\n"
     "new request (RFC 7641 Section 3.6)"},
    {OPT_REPEAT, "repeat", "N", "send the request N times in a row and print requests/s"},
    {OPT_TIMEOUT, "timeout", "SECONDS", "give up after SECONDS (decimals allowed; default 10; bounds everything)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt oscore_opts[] = {
    {OPT_OSCORE_CONTEXT, "oscore-context", "FILE[,SEQFILE]",
     "protect with this static OSCORE context (libcoap format); SEQFILE:\n"
     "libcoap's sequence-number file, kept in step"},
    {OPT_STATE_DIR, "state-dir", "DIR|none",
     "where the context's sequence numbers are kept between runs (default\n"
     "$STATE_DIRECTORY, else $XDG_STATE_HOME/edhoc-cli, else\n"
     "~/.local/state/edhoc-cli); none needs a SEQFILE"},
    {OPT_SEQ, "seq", "N",
     "first sender sequence number (default: above every number used\n"
     "before; a lower N is refused)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt output_opts[] = {
    {OPT_JSON, "json", NULL, "machine-readable output (docs/json.md)"},
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

const struct cli_cmd_spec cli_spec_coap = {
    .name = "coap",
    .synopsis = "METHOD URI [OPTIONS]",
    .description =
        "Sends one CoAP request (METHOD: GET, POST, PUT, DELETE, FETCH, PATCH, IPATCH) to\n"
        "coap://HOST[:PORT]/PATH[?QUERY] and prints the response.",
    .groups = coap_groups,
    .renamed = coap_renamed,
    .epilogue =
        "Exit codes: 0 a 2.xx response; 1 a 4.xx/5.xx response; 2 bad command line;\n"
        "3 unusable context file or state directory; 6 no response in time or peer\n"
        "unreachable; 7 OSCORE protection or verification failed, or the peer answered\n"
        "without OSCORE.",
};

/* End an observation with a new request (RFC 7641 Section 3.6): the
 * registration's token and Uri, Observe = 1, under OSCORE a fresh Partial
 * IV (RFC 8613 Section 4.1.3.5), then wait for its answer, skipping
 * notifications still in flight. Returns 0 when the server confirmed it,
 * -1 otherwise (later notifications then get a Reset, which ends the
 * observation too). */
static int deregister(struct edhoc_transport *t, struct oscore_context *ctx, struct seq_log *seqs,
                      int code, const struct cli_uri *u, int cf, const uint8_t *tok, size_t tl,
                      uint64_t deadline, uint8_t *req, uint8_t *prot, uint8_t *resp, uint8_t *plain)
{
    long n = cli_coap_build_request((uint8_t)code, u->path, u->query, cf, NULL, 0, 1, req,
                                    EDHOC_TRANSPORT_MAX_MESSAGE);
    if (n < 0)
        return -1;
    struct oscore_binding b;
    const uint8_t *msg = req;
    if (ctx) {
        n = protect_logged(ctx, seqs, req, (size_t)n, prot, EDHOC_TRANSPORT_MAX_MESSAGE, &b);
        if (n < 0) {
            fprintf(stderr, "edhoc-cli coap: cannot protect the deregistration: %s\n",
                    oscore_strerror((int)n));
            return -1;
        }
        msg = prot;
    }
    /* Drop what is queued: notifications that came before it. */
    while (edhoc_transport_client_wait(t, tok, tl, resp, EDHOC_TRANSPORT_MAX_MESSAGE, 0) > 0)
        ;
    if (edhoc_transport_client_send_on(t, msg, (size_t)n, true, tok, tl))
        return -1;
    uint64_t end = cli_now_ns() + 5000000000ull;
    if (end > deadline + 2000000000ull)
        end = deadline + 2000000000ull;
    for (;;) {
        uint64_t now = cli_now_ns();
        if (now >= end)
            break;
        long rn = edhoc_transport_client_wait(t, tok, tl, resp, EDHOC_TRANSPORT_MAX_MESSAGE,
                                              (int)((end - now) / 1000000));
        if (rn < 0)
            break;
        const uint8_t *shown = resp;
        size_t shown_len = (size_t)rn;
        if (ctx) {
            long un = oscore_unprotect_response(ctx, &b, resp, (size_t)rn, plain,
                                                EDHOC_TRANSPORT_MAX_MESSAGE);
            if (un < 0)
                continue; /* a notification of the registration, or not ours */
            shown = plain;
            shown_len = (size_t)un;
        }
        struct coap_msg m;
        if (coap_msg_parse(shown, shown_len, &m))
            continue;
        if (coap_msg_find_option(&m, COAP_OPT_OBSERVE))
            continue; /* still a notification */
        return (m.code >> 5) == 2 ? 0 : -1;
    }
    fprintf(stderr, "edhoc-cli coap: the server did not confirm the deregistration; further "
                    "notifications are answered with Reset\n");
    return -1;
}

/* The request body from --payload, --payload-hex or --payload-file (a
 * file, or - for standard input), at most max_body bytes. Returns 0 or an
 * exit code (the message printed). */
static int read_payload(const char *text, const char *hex, const char *file, size_t max_body,
                        uint8_t **body, size_t *len)
{
    *body = NULL;
    *len = 0;
    if (!text && !hex && !file)
        return 0;
    uint8_t *b = malloc(max_body + 1);
    if (!b)
        return CLI_EXIT_INTERNAL;
    size_t n = 0;
    if (text) {
        n = strlen(text);
        if (n > max_body) {
            fprintf(stderr, "edhoc-cli coap: --payload: %zu bytes, above --max-body %zu\n", n,
                    max_body);
            free(b);
            return CLI_EXIT_USAGE;
        }
        memcpy(b, text, n);
    } else if (hex) {
        long h = cli_hex_decode(hex, b, max_body);
        if (h < 0) {
            fprintf(stderr, "edhoc-cli coap: --payload-hex: not hex (or above --max-body %zu "
                            "bytes)\n",
                    max_body);
            free(b);
            return CLI_EXIT_USAGE;
        }
        n = (size_t)h;
    } else {
        FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
        if (!f) {
            fprintf(stderr, "edhoc-cli coap: --payload-file %s: %s\n", file, strerror(errno));
            free(b);
            return CLI_EXIT_INPUT;
        }
        /* One byte more than allowed tells "too large" from "exactly". */
        n = fread(b, 1, max_body + 1, f);
        bool bad = ferror(f);
        if (f != stdin)
            fclose(f);
        if (bad || n > max_body) {
            fprintf(stderr, "edhoc-cli coap: --payload-file %s: %s\n", file,
                    bad ? "read error" : "larger than --max-body");
            free(b);
            return bad ? CLI_EXIT_INPUT : CLI_EXIT_USAGE;
        }
    }
    *body = b;
    *len = n;
    return 0;
}

/* --output FILE: the response body, exactly. */
static int write_output(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
    if (!f || (n && fwrite(p, 1, n, f) != n) || (f != stdout ? fclose(f) : fflush(f))) {
        fprintf(stderr, "edhoc-cli coap: --output %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* One response: a JSON array element or a text line; with --output the
 * body goes to that file and the line says how many bytes. Returns 0 or
 * -1 (the file could not be written). */
static int print_response(bool json, long k, uint8_t rcode, bool oscore, bool protected_resp,
                          int rcf, long bytes, long piv, bool echo, long echo_piv,
                          const uint8_t *pl, size_t pll, const char *output_path)
{
    char cn[48];
    int rc = 0;
    if (output_path)
        rc = write_output(output_path, pl, pll);
    if (json) {
        printf("%s\n  {\"code\": \"%s\", \"oscore\": %s, \"content_format\": %d, \"bytes\": %ld, "
               "\"piv\": %ld, \"echo\": %s, \"echo_challenge_piv\": %ld, \"payload_bytes\": %zu, ",
               k ? "," : "", cli_coap_code_name(rcode, cn, sizeof cn),
               protected_resp ? "true" : "false", rcf, bytes, piv, echo ? "true" : "false", echo_piv,
               pll);
        if (output_path) {
            printf("\"output\": ");
            cli_json_string(stdout, output_path);
        } else {
            printf("\"payload\": ");
            cli_json_payload(stdout, pl, pll);
        }
        printf("}");
    } else {
        printf("%s%s%s", cli_coap_code_name(rcode, cn, sizeof cn),
               oscore ? (protected_resp ? " (OSCORE)" : " (unprotected)") : "",
               echo ? " after an Echo challenge" : "");
        if (output_path)
            printf(": %zu bytes written to %s", pll, output_path);
        else if (pll) {
            printf(": ");
            cli_print_payload(stdout, pl, pll);
        }
        printf("\n");
    }
    fflush(stdout);
    return rc;
}

static void log_sent(void *user, const struct oscore_binding *b);

/* A request under OSCORE with a body of any size (inner block-wise) and
 * its response, printed. Returns the exit code. */
static int oscore_request(struct edhoc_transport *t, struct oscore_context *ctx,
                          struct seq_log *seqs, const uint8_t *req, size_t req_len, uint8_t *out,
                          size_t cap, unsigned block_size, size_t max_body, long timeout_ms,
                          bool json, const char *output_path)
{
    if (json)
        printf("{\"responses\": [");
    struct cli_oscore_xfer x = {
        .block_size = block_size ? block_size : 1024,
        .max_body = max_body,
        .sent = log_sent,
        .user = seqs,
    };
    struct cli_oscore_result r;
    int xr = cli_oscore_exchange_bw(t, ctx, req, req_len, out, cap, (int)timeout_ms, NULL,
                                    NULL, &x, &r);
    if (xr && r.unprotected_error && r.response_len > 0) {
        const uint8_t *pl;
        size_t pll;
        uint8_t rcode;
        int rcf;
        if (!cli_coap_response_view(out, (size_t)r.response_len, &rcode, &rcf, &pl, &pll))
            print_response(json, 0, rcode, true, false, rcf, (long)r.response_bytes, -1,
                           r.echo_piv >= 0, r.echo_piv, pl, pll, NULL);
        report_unprotected(out, (size_t)r.response_len, r.unprotected_code);
        return CLI_EXIT_OSCORE;
    }
    if (xr) {
        if (r.transport_err) {
            fprintf(stderr, "edhoc-cli coap: %s (%s)\n",
                    r.transport_err == EDHOC_TRANSPORT_ERR_TIMEOUT ? "timeout: no response"
                                                                   : "no response",
                    edhoc_transport_strerror(r.transport_err));
            return r.transport_err == EDHOC_TRANSPORT_ERR_TIMEOUT ||
                           r.transport_err == EDHOC_TRANSPORT_ERR_UNREACHABLE
                       ? CLI_EXIT_TIMEOUT
                       : CLI_EXIT_FAILURE;
        }
        if (r.bw_err) {
            /* Never a part of the body as if it were the answer. */
            fprintf(stderr, "edhoc-cli coap: block-wise transfer failed after %u+%u blocks: %s\n",
                    r.block1_blocks, r.block2_blocks, edhoc_bw_strerror(r.bw_err));
            return CLI_EXIT_FAILURE;
        }
        fprintf(stderr, "edhoc-cli coap: OSCORE: %s\n", oscore_strerror(r.oscore_err));
        return CLI_EXIT_OSCORE;
    }
    const uint8_t *pl;
    size_t pll;
    uint8_t rcode;
    int rcf;
    if (cli_coap_response_view(out, (size_t)r.response_len, &rcode, &rcf, &pl, &pll)) {
        fprintf(stderr, "edhoc-cli coap: malformed response\n");
        return CLI_EXIT_FAILURE;
    }
    if (print_response(json, 0, rcode, true, true, rcf, (long)r.response_bytes, r.response_piv,
                       r.echo_piv >= 0, r.echo_piv, pl, pll, output_path))
        return CLI_EXIT_INPUT;
    if (rcode == COAP_CODE(2, 31)) {
        fprintf(stderr, "edhoc-cli coap: the server asked for more blocks than the body has\n");
        return CLI_EXIT_FAILURE;
    }
    return (rcode >> 5) >= 4 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

static void log_sent(void *user, const struct oscore_binding *b)
{
    struct seq_log *log = user;
    uint64_t piv = 0;
    for (size_t i = 0; i < b->piv_len; i++)
        piv = piv << 8 | b->piv[i];
    if (log->n < sizeof log->first / sizeof log->first[0])
        log->first[log->n++] = piv;
    log->total++;
}

int cmd_coap(int argc, char **argv)
{
    const char *method = NULL, *uri = NULL, *ctx_path = NULL, *payload = NULL, *payload_hex = NULL;
    const char *payload_file = NULL, *output_path = NULL;
    long cf = -1, observe = 0, timeout_ms = 10000, block_size = 0, repeat = 0;
    long max_body = EDHOC_BW_DEFAULT_MAX_BODY;
    long long seq = 0;
    bool json = false, seq_given = false;
    const char *state_opt = NULL;
    struct cli_seq_store *seq_store = NULL;
    struct seq_log seqs = {.n = 0};
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
        long n = 0;
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
        case OPT_MAX_BODY: bad = cli_opt_long(&p, 16, (long)EDHOC_BW_MAX_BODY_LIMIT, &max_body); break;
        case OPT_SEQ: {
            uint64_t v;
            bad = cli_opt_u64(&p, 0, OSCORE_SSN_MAX, &v);
            seq = (long long)v;
            seq_given = true;
            break;
        }
        case OPT_REPEAT: bad = cli_opt_long(&p, 1, 100000000, &repeat); break;
        case OPT_CONTENT_FORMAT: bad = cli_opt_long(&p, 0, 65535, &n); cf = n; break;
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
    if ((payload != NULL) + (payload_hex != NULL) + (payload_file != NULL) > 1) {
        fprintf(stderr, "edhoc-cli coap: give one of --payload, --payload-hex, --payload-file\n");
        return CLI_EXIT_USAGE;
    }
    /* A whole message: the body and room for header and options. */
    size_t msg_cap = (size_t)max_body + EDHOC_TRANSPORT_MAX_MESSAGE;
    size_t body_len = 0;
    uint8_t *body = NULL;
    int prc = read_payload(payload, payload_hex, payload_file, (size_t)max_body, &body, &body_len);
    if (prc)
        return prc;

    struct oscore_context *ctx = NULL;
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
        if (sd == 1 && !seq_path[0]) {
            fprintf(stderr,
                    "edhoc-cli coap: --state-dir none: a static OSCORE context needs its sequence "
                    "numbers kept between runs, or a run repeats nonces (RFC 8613 Section 7.2); "
                    "give --oscore-context CONF,SEQFILE or a state directory\n");
            free(body);
            return CLI_EXIT_USAGE;
        }
        struct oscore_config cfg;
        struct oscore_config_error err;
        int rc = cli_oscore_config_read(conf_path, &cfg, &err);
        if (rc == -1) {
            fprintf(stderr, "edhoc-cli coap: --oscore-context %s: %s\n", conf_path, strerror(errno));
            free(body);
            return CLI_EXIT_INPUT;
        }
        if (rc) {
            fprintf(stderr, "edhoc-cli coap: --oscore-context %s line %u: %s\n", conf_path, err.line,
                    err.message);
            free(body);
            return CLI_EXIT_INPUT;
        }
        ctx = calloc(1, sizeof *ctx);
        rc = ctx ? oscore_context_init_config(ctx, edhoc_crypto_openssl(), &cfg) : OSCORE_ERR_INVALID;
        int exit_rc = CLI_EXIT_INPUT;
        if (rc) {
            snprintf(why, sizeof why, "%s", oscore_strerror(rc));
        } else if (cli_seq_open(&seq_store, sd == 0 ? state_dir : NULL, seq_path, &cfg, why,
                                sizeof why)) {
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
        edhoc_wipe(&cfg, sizeof cfg);
        if (rc) {
            fprintf(stderr, "edhoc-cli coap: --oscore-context %s: %s\n", conf_path, why);
            if (ctx)
                oscore_context_wipe(ctx);
            free(ctx);
            cli_seq_close(seq_store);
            free(body);
            return exit_rc;
        }
    }

    /* Every datagram of the run goes to --pcap FILE. */
    static struct cli_dgram_log log;
    struct edhoc_capture *capture = NULL;
    if (cli_net_capture_open(&net, "coap", &capture)) {
        if (ctx) {
            oscore_context_wipe(ctx);
            free(ctx);
        }
        cli_seq_close(seq_store);
        free(body);
        return CLI_EXIT_INPUT;
    }
    if (capture) {
        cli_dgram_log_start(&log);
        log.capture = capture;
    }
    int exit_code = CLI_EXIT_OK;
    uint8_t *req = malloc(msg_cap), *prot = malloc(msg_cap);
    uint8_t *resp = malloc(msg_cap), *plain = malloc(msg_cap);
    struct edhoc_transport *t = NULL;
    if (!req || !prot || !resp || !plain) {
        exit_code = CLI_EXIT_INTERNAL;
        goto out;
    }
    long n = cli_coap_build_request((uint8_t)code, u.path, u.query, (int)cf, body, body_len,
                                    observe ? 0 : -1, req, msg_cap);
    if (n < 0) {
        fprintf(stderr, "edhoc-cli coap: cannot build the request (too many options?)\n");
        exit_code = CLI_EXIT_USAGE;
        goto out;
    }
    struct oscore_binding b;
    const uint8_t *send_msg = req;
    long n_req = n;
    /* Under OSCORE a single request goes through the block-wise exchange
     * (inner Block1/Block2, Echo retry); an observation is one message. */
    bool bw_path = ctx && !observe;
    if (ctx && !bw_path) {
        long pn = protect_logged(ctx, &seqs, req, (size_t)n, prot, msg_cap, &b);
        if (pn < 0) {
            fprintf(stderr, "edhoc-cli coap: OSCORE: cannot protect the request: %s\n",
                    oscore_strerror((int)pn));
            exit_code = CLI_EXIT_OSCORE;
            goto out;
        }
        send_msg = prot;
        n = pn;
    }
    struct edhoc_transport_config tcfg = {.block_size = (unsigned)block_size,
                                          .max_body = (size_t)max_body};
    int rc = edhoc_transport_client_open(&t, u.host, u.port, &tcfg);
    if (rc) {
        fprintf(stderr, "edhoc-cli coap: %s: %s\n", u.host, edhoc_transport_strerror(rc));
        exit_code = rc == EDHOC_TRANSPORT_ERR_RESOLVE ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        goto out;
    }
    uint64_t deadline = cli_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    uint8_t tok[8];
    size_t tl = 0;
    if (bw_path) {
        exit_code = oscore_request(t, ctx, &seqs, req, (size_t)n_req, plain, msg_cap,
                                   (unsigned)block_size, (size_t)max_body, timeout_ms, json,
                                   output_path);
        if (json)
            printf("\n]");
        goto after_responses;
    }
    rc = edhoc_transport_client_send(t, send_msg, (size_t)n, true, tok, &tl);
    if (rc) {
        fprintf(stderr, "edhoc-cli coap: cannot send: %s\n", edhoc_transport_strerror(rc));
        exit_code = CLI_EXIT_FAILURE;
        goto out;
    }
    long want = observe ? observe : 1;
    bool echo_done = false;
    long echo_piv = -1;
    long n_plain = n_req;
    if (json)
        printf("{\"responses\": [");
    for (long k = 0; k < want; k++) {
        uint64_t now = cli_now_ns();
        int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000);
        long rn = edhoc_transport_client_wait(t, tok, tl, resp, msg_cap, left);
        if (rn < 0) {
            if (json)
                printf("]}\n");
            fprintf(stderr, "edhoc-cli coap: %s (%s)\n",
                    rn == EDHOC_TRANSPORT_ERR_TIMEOUT ? "timeout: no response" : "no response",
                    edhoc_transport_strerror((int)rn));
            exit_code = rn == EDHOC_TRANSPORT_ERR_TIMEOUT || rn == EDHOC_TRANSPORT_ERR_UNREACHABLE
                            ? CLI_EXIT_TIMEOUT
                            : CLI_EXIT_FAILURE;
            goto out;
        }
        long piv = -1; /* the response's own Partial IV, if it has one */
        {
            struct oscore_option oo;
            if (oscore_message_option(resp, (size_t)rn, &oo) == 0 && oo.piv) {
                piv = 0;
                for (size_t q = 0; q < oo.piv_len; q++)
                    piv = piv << 8 | oo.piv[q];
            }
        }
        const uint8_t *shown = resp;
        size_t shown_len = (size_t)rn;
        bool protected_resp = false;
        if (ctx) {
            struct coap_msg outer;
            if (!coap_msg_parse(resp, (size_t)rn, &outer) &&
                coap_msg_find_option(&outer, COAP_OPT_OSCORE)) {
                long un = oscore_unprotect_response(ctx, &b, resp, (size_t)rn, plain,
                                                    msg_cap);
                if (un < 0) {
                    if (json)
                        printf("]}\n");
                    fprintf(stderr, "edhoc-cli coap: OSCORE: response rejected: %s\n",
                            oscore_strerror((int)un));
                    exit_code = CLI_EXIT_OSCORE;
                    goto out;
                }
                shown = plain;
                shown_len = (size_t)un;
                protected_resp = true;
            }
        }
        uint8_t rcode;
        int rcf;
        const uint8_t *pl;
        size_t pll;
        struct coap_msg inner;
        const struct coap_option *echo = NULL;
        if (protected_resp && k == 0 && !echo_done && !coap_msg_parse(shown, shown_len, &inner) &&
            inner.code == COAP_CODE_UNAUTHORIZED &&
            (echo = coap_msg_find_option(&inner, COAP_OPT_ECHO)) && echo->len <= 40) {
            /* The server lost its replay window (restart): repeat the
             * request with its Echo value (RFC 8613 Appendix B.1.2). */
            uint8_t ev[40];
            size_t el = echo->len;
            memcpy(ev, echo->value, el);
            echo_piv = piv;
            echo_done = true;
            edhoc_transport_client_forget(t, tok, tl);
            long an = cli_coap_with_echo(req, (size_t)n_plain, ev, el, plain, msg_cap);
            long pn = an < 0 ? OSCORE_ERR_TOO_LARGE
                             : protect_logged(ctx, &seqs, plain, (size_t)an, prot,
                                              msg_cap, &b);
            if (pn < 0) {
                fprintf(stderr, "edhoc-cli coap: OSCORE: cannot protect the retry: %s\n",
                        oscore_strerror((int)pn));
                exit_code = CLI_EXIT_OSCORE;
                goto out;
            }
            rc = edhoc_transport_client_send(t, prot, (size_t)pn, true, tok, &tl);
            if (rc) {
                fprintf(stderr, "edhoc-cli coap: cannot send: %s\n", edhoc_transport_strerror(rc));
                exit_code = CLI_EXIT_FAILURE;
                goto out;
            }
            k--;
            continue;
        }
        if (cli_coap_response_view(shown, shown_len, &rcode, &rcf, &pl, &pll)) {
            fprintf(stderr, "edhoc-cli coap: malformed response\n");
            exit_code = CLI_EXIT_FAILURE;
            goto out;
        }
        if (print_response(json, k, rcode, ctx != NULL, protected_resp, rcf, rn, piv, echo_done,
                           echo_piv, pl, pll, output_path)) {
            exit_code = CLI_EXIT_INPUT;
            break;
        }
        fflush(stdout);
        if (ctx && !protected_resp) {
            /* Not the answer, whatever its code: a response to an OSCORE
             * request is protected (RFC 8613 Section 8.4); only the OSCORE
             * layer's own errors come unprotected (Sections 7.4, 8.2). */
            report_unprotected(resp, (size_t)rn, rcode);
            exit_code = CLI_EXIT_OSCORE;
            break;
        }
        if ((rcode >> 5) >= 4) {
            exit_code = CLI_EXIT_FAILURE;
            break;
        }
    }
    if (json)
        printf("\n]");
    int dereg = observe ? deregister(t, ctx, &seqs, code, &u, (int)cf, tok, tl, deadline, req,
                                     prot, resp, plain)
                        : 0;
    edhoc_transport_client_forget(t, tok, tl);
    if (json && observe)
        printf(", \"deregistered\": %s", dereg == 0 ? "true" : "false");
after_responses:
    /* Any answer counts (an unprotected request may well get 4.01). */
    if (repeat > 1 && !observe && (exit_code == CLI_EXIT_OK || (!ctx && exit_code == CLI_EXIT_FAILURE))) {
        /* Throughput: the same request again, one at a time. */
        uint64_t t0 = cli_now_ns();
        long ok = 0;
        for (long k = 1; k < repeat; k++) {
            uint64_t now = cli_now_ns();
            int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000);
            if (ctx) {
                struct cli_oscore_xfer x = {.block_size = block_size ? (unsigned)block_size : 1024,
                                            .max_body = (size_t)max_body,
                                            .sent = log_sent,
                                            .user = &seqs};
                struct cli_oscore_result rr;
                if (cli_oscore_exchange_bw(t, ctx, req, (size_t)n_req, plain, msg_cap, left, NULL,
                                           NULL, &x, &rr))
                    break;
            } else if (edhoc_transport_client_request(t, req, (size_t)n_req, resp, msg_cap,
                                                      left) < 0) {
                break;
            }
            ok++;
        }
        double secs = (double)(cli_now_ns() - t0) / 1e9;
        printf(json ? ", \"repeat\": {\"requests\": %ld, \"ok\": %ld, \"seconds\": %.3f, "
                      "\"requests_per_second\": %.1f}"
                    : "Repeat: %ld requests after the first, %ld ok in %.3f s: %.1f requests/s\n",
               repeat - 1, ok, secs, secs > 0 ? (double)ok / secs : 0.0);
        if (ok != repeat - 1)
            exit_code = CLI_EXIT_FAILURE;
    }
    if (json) {
        if (ctx) {
            /* What this run used, so that a script can tell runs apart. */
            printf(", \"oscore_sequence_numbers\": [");
            for (size_t i = 0; i < seqs.n; i++)
                printf("%s%llu", i ? ", " : "", (unsigned long long)seqs.first[i]);
            printf("], \"oscore_requests_protected\": %zu, \"next_sequence_number\": %llu",
                   seqs.total, (unsigned long long)oscore_context_ssn(ctx));
        }
        printf("}\n");
    }
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
    cli_seq_close(seq_store);
    free(body);
    free(req);
    free(prot);
    free(resp);
    if (plain)
        edhoc_wipe(plain, msg_cap);
    free(plain);
    return exit_code;
}
