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
#include "json_out.h"
#include "progress.h"
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
     "new request (RFC 7641 Section 3.6); Ctrl-C deregisters too"},
    {OPT_REPEAT, "repeat", "N",
     "send the request N times in a row and print requests/s; Ctrl-C stops\n"
     "early and reports what was done"},
    {OPT_TIMEOUT, "timeout", "SECONDS", "give up after SECONDS (decimals allowed; default 10; bounds everything)"},
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
        "3 unusable context file or state directory; 6 no response in time, peer\n"
        "unreachable or host name not resolved; 7 OSCORE protection or verification\n"
        "failed, or the peer answered without OSCORE; 130/143 --observe or --repeat\n"
        "interrupted (SIGINT/SIGTERM), what was received reported.",
};

/* wait_response's answer when SIGINT/SIGTERM came first. */
#define WAIT_INTERRUPTED (-1)

/* The next message for the token, until deadline; with interruptible, in
 * short slices so that Ctrl-C is seen while waiting for a notification.
 * Returns its length, an EDHOC_TRANSPORT_ERR_*, or WAIT_INTERRUPTED. */
static long wait_response(struct edhoc_transport *t, const uint8_t *tok, size_t tl, uint8_t *out,
                          size_t cap, uint64_t deadline, bool interruptible)
{
    for (;;) {
        uint64_t now = cli_now_ns();
        int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000);
        int slice = interruptible && left > 200 ? 200 : left;
        long rn = edhoc_transport_client_wait(t, tok, tl, out, cap, slice);
        if (rn != EDHOC_TRANSPORT_ERR_TIMEOUT || slice == left)
            return rn;
        if (cli_interrupted())
            return WAIT_INTERRUPTED;
    }
}

/* End an observation with a new request (RFC 7641 Section 3.6): the
 * registration's token and Uri, Observe = 1, under OSCORE a fresh Partial
 * IV (RFC 8613 Section 4.1.3.5), then wait for its answer, skipping
 * notifications still in flight. Returns 0 when the server confirmed it,
 * -1 otherwise (later notifications then get a Reset, which ends the
 * observation too). */
static int deregister(struct edhoc_transport *t, struct oscore_context *ctx, struct seq_log *seqs,
                      int code, const struct cli_uri *u, int cf, const uint8_t *tok, size_t tl,
                      uint64_t deadline, uint8_t *req, uint8_t *prot, uint8_t *resp, uint8_t *plain,
                      bool quiet)
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
        if (edhoc_coap_msg_parse(shown, shown_len, &m))
            continue;
        if (edhoc_coap_msg_find_option(&m, COAP_OPT_OBSERVE))
            continue; /* still a notification */
        return (m.code >> 5) == 2 ? 0 : -1;
    }
    if (!quiet)
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

/* What --json prints, built as the run goes: every response, then the
 * members of the run as a whole (docs/json/coap.schema.json). NULL root:
 * text output. */
struct report {
    json_t *root;
    json_t *responses;
    const char *error; /* the schema's word for why the run failed, or NULL */
};

/* One response as it was received. */
struct response_info {
    uint8_t code;
    bool oscore;          /* the request went under OSCORE */
    bool protected_resp;  /* the response came protected */
    int content_format;   /* -1: none */
    long bytes;           /* the CoAP message as received */
    long piv;             /* its own Partial IV, -1: none */
    bool echo;            /* answered after an Echo challenge (RFC 8613 Appendix B.1.2) */
    long echo_piv;        /* that challenge's Partial IV, -1: none */
    long block1_blocks, block2_blocks; /* inner blocks under OSCORE, -1: not counted */
};

/* One response: a member of "responses" or a text line; with --output the
 * body goes to that file and the line says how many bytes. Returns 0 or
 * -1 (the file could not be written). */
static int print_response(struct report *rep, const struct response_info *ri, const uint8_t *pl,
                          size_t pll, const char *output_path)
{
    char cn[48];
    int rc = 0;
    if (output_path)
        rc = write_output(output_path, pl, pll);
    cli_coap_code_name(ri->code, cn, sizeof cn);
    if (rep->root) {
        json_t *r = json_object();
        /* "2.05 Content": the code, then the registry's name apart. */
        char *space = strchr(cn, ' ');
        if (space)
            *space = '\0';
        cli_json_set(r, "code", json_string(cn));
        cli_json_set(r, "code_name", cli_json_string_or_null(space ? space + 1 : NULL));
        cli_json_set(r, "oscore", json_boolean(ri->protected_resp));
        cli_json_set(r, "content_format",
                     cli_json_int_or_null(ri->content_format >= 0, ri->content_format));
        cli_json_set(r, "bytes", json_integer(ri->bytes));
        cli_json_set(r, "piv", cli_json_int_or_null(ri->piv >= 0, ri->piv));
        cli_json_set(r, "echo", json_boolean(ri->echo));
        cli_json_set(r, "echo_challenge_piv", cli_json_int_or_null(ri->echo_piv >= 0, ri->echo_piv));
        cli_json_set(r, "block1_blocks",
                     cli_json_int_or_null(ri->block1_blocks >= 0, ri->block1_blocks));
        cli_json_set(r, "block2_blocks",
                     cli_json_int_or_null(ri->block2_blocks >= 0, ri->block2_blocks));
        cli_json_set(r, "payload_bytes", json_integer((json_int_t)pll));
        /* No payload (or one written to --output): null, not "". */
        if (output_path || pll == 0) {
            cli_json_set(r, "payload_hex", json_null());
            cli_json_set(r, "payload_text", json_null());
        } else {
            cli_json_set_bytes(r, "payload", pl, pll);
        }
        cli_json_set(r, "output", cli_json_string_or_null(output_path));
        json_array_append_new(rep->responses, r);
        if (rc)
            rep->error = "output_write";
        return rc;
    }
    printf("%s%s%s", cn,
           ri->oscore ? (ri->protected_resp ? " (OSCORE)" : " (unprotected)") : "",
           ri->echo ? " after an Echo challenge" : "");
    if (output_path)
        printf(": %zu bytes written to %s", pll, output_path);
    else if (pll) {
        printf(": ");
        cli_print_payload(stdout, pl, pll);
    }
    printf("\n");
    fflush(stdout);
    return rc;
}

/* The word for a transport failure, and its exit code. */
static int transport_failure(struct report *rep, long err)
{
    bool timeout = err == EDHOC_TRANSPORT_ERR_TIMEOUT;
    bool unreachable = err == EDHOC_TRANSPORT_ERR_UNREACHABLE;
    fprintf(stderr, "edhoc-cli coap: %s (%s)\n", timeout ? "timeout: no response" : "no response",
            edhoc_transport_strerror((int)err));
    rep->error = timeout ? "timeout" : unreachable ? "unreachable" : "no_response";
    return timeout || unreachable ? CLI_EXIT_TIMEOUT : CLI_EXIT_FAILURE;
}

static void log_sent(void *user, const struct oscore_binding *b);

/* RFC 8613 Appendix B.2 as the client, when the server starts it: the
 * server has no valid context (it lost its replay window or sequence
 * number, or does not know our ID Context), answers request #1 with a
 * protected 4.01 carrying R2 as 'kid context', and request #2 goes under
 * the ID Context R2 || R3. The configured context stays what the state
 * directory continues; the new one (fresh keys, sequence numbers from 0)
 * lives for this run only, so the next run starts from the file again. */
struct b2_follow {
    const struct oscore_config *cfg; /* the context file's inputs */
    const struct cli_uri *uri;
    struct oscore_context *active;   /* the context requests go under now */
    struct oscore_context *next;     /* room for the new one */
    struct oscore_b2_client st;
    bool started, completed;
    uint8_t id1[OSCORE_MAX_ID_CONTEXT];
    size_t id1_len;
    bool has_id1;
    bool verbose;
};

static void hex_to(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
    out[2 * n] = '\0';
}

/* Step 3 on response #1 (resp) to the request bound in b. Returns 0 (f->active
 * is then the new context) or an OSCORE_ERR_* (printed). */
static int b2_step3(struct b2_follow *f, struct oscore_binding *b, const uint8_t *resp, size_t rn,
                    uint8_t *plain, size_t cap)
{
    size_t id1_len = 0;
    const uint8_t *id1 = oscore_context_id_context(f->active, &id1_len);
    long n = oscore_b2_client_response1(&f->st, edhoc_crypto_default(), f->cfg, f->active, b, resp,
                                        rn, plain, cap, f->next);
    if (n < 0) {
        fprintf(stderr, "edhoc-cli coap: OSCORE: the server's RFC 8613 Appendix B.2 response #1 "
                        "was refused: %s\n",
                oscore_strerror((int)n));
        return (int)n;
    }
    edhoc_wipe(plain, (size_t)n);
    f->has_id1 = id1 != NULL;
    f->id1_len = id1_len;
    if (id1_len)
        memcpy(f->id1, id1, id1_len);
    f->started = true;
    f->active = f->next;
    if (f->verbose) {
        char r2[2 * OSCORE_MAX_ID_CONTEXT + 1], i1[2 * OSCORE_MAX_ID_CONTEXT + 1],
            i3[2 * OSCORE_MAX_ID_CONTEXT + 1];
        hex_to(f->st.r2, f->st.r2_len, r2);
        hex_to(f->id1, f->id1_len, i1);
        hex_to(f->st.id_context, f->st.id_context_len, i3);
        fprintf(stderr,
                "edhoc-cli coap: the server has no valid context and starts RFC 8613 Appendix "
                "B.2: its 4.01 carries R2 = %s and verified under ID Context R2 || ID1 = %s%s; "
                "the request goes again under ID Context R2 || R3 = %s (new keys, for this run "
                "only)\n",
                r2, r2, f->has_id1 ? i1 : "", i3);
    }
    return 0;
}

/* After the server answered with a response #1 that the exchange could
 * not keep: a GET of the same URI (no body, so nothing happens if the
 * server does perform it) as request #1 of a new run, and step 3 on its
 * answer. Returns 0 (f->active is the new context), 1 (the answer was no
 * response #1: the server has a valid context after all) or an exit
 * code (printed). */
static int b2_probe(struct edhoc_transport *t, struct b2_follow *f, struct seq_log *seqs,
                    uint64_t deadline, struct report *rep)
{
    size_t cap = EDHOC_TRANSPORT_MAX_MESSAGE;
    uint8_t *req = malloc(cap), *prot = malloc(cap), *resp = malloc(cap), *plain = malloc(cap);
    int rc = CLI_EXIT_INTERNAL;
    if (!req || !prot || !resp || !plain)
        goto out;
    long n = cli_coap_build_request(COAP_CODE_GET, f->uri->path, f->uri->query, -1, NULL, 0, -1,
                                    req, cap);
    struct oscore_binding b;
    long pn = n < 0 ? OSCORE_ERR_MALFORMED
                    : protect_logged(f->active, seqs, req, (size_t)n, prot, cap, &b);
    if (pn < 0) {
        fprintf(stderr, "edhoc-cli coap: OSCORE: cannot protect request #1 of RFC 8613 Appendix "
                        "B.2: %s\n",
                oscore_strerror((int)pn));
        rep->error = "oscore";
        rc = CLI_EXIT_OSCORE;
        goto out;
    }
    uint64_t now = cli_now_ns();
    int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000);
    long rn = edhoc_transport_client_request(t, prot, (size_t)pn, resp, cap, left);
    if (rn < 0) {
        rc = transport_failure(rep, rn);
        goto out;
    }
    if (!oscore_b2_is_response1(resp, (size_t)rn)) {
        rc = 1;
        goto out;
    }
    if (b2_step3(f, &b, resp, (size_t)rn, plain, cap)) {
        rep->error = "oscore";
        rc = CLI_EXIT_OSCORE;
        goto out;
    }
    rc = 0;
out:
    free(req);
    free(prot);
    free(resp);
    if (plain)
        edhoc_wipe(plain, cap);
    free(plain);
    return rc;
}

/* A request under OSCORE with a body of any size (inner block-wise) and
 * its response, printed. Returns the exit code. */
static int oscore_request(struct edhoc_transport *t, struct b2_follow *f, struct seq_log *seqs,
                          const uint8_t *req, size_t req_len, uint8_t *out, size_t cap,
                          unsigned block_size, size_t max_body, long timeout_ms,
                          struct report *rep, const char *output_path)
{
    struct cli_oscore_xfer x = {
        .block_size = block_size ? block_size : 1024,
        .max_body = max_body,
        .sent = log_sent,
        .user = seqs,
    };
    struct cli_oscore_result r;
    uint64_t deadline = cli_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    int xr = cli_oscore_exchange_bw(t, f->active, req, req_len, out, cap, (int)timeout_ms, NULL,
                                    NULL, &x, &r);
    if (xr && r.oscore_err == OSCORE_ERR_KID_CONTEXT && !f->started) {
        /* The answer was response #1 of Appendix B.2 (oscore.h): start a
         * run of our own, then the request again as request #2. */
        int pr = b2_probe(t, f, seqs, deadline, rep);
        if (pr > 1)
            return pr;
        uint64_t now = cli_now_ns();
        int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000);
        xr = cli_oscore_exchange_bw(t, f->active, req, req_len, out, cap, left, NULL, NULL, &x,
                                    &r);
        if (xr == 0 && f->started)
            f->completed = true;
    }
    if (xr && r.oscore_err == OSCORE_ERR_KID_CONTEXT && f->started) {
        /* Appendix B.2.1: runs that do not converge are not followed. */
        fprintf(stderr, "edhoc-cli coap: the server started RFC 8613 Appendix B.2 again after "
                        "request #2; not following it twice\n");
        rep->error = "oscore";
        return CLI_EXIT_OSCORE;
    }
    struct response_info ri = {
        .oscore = true,
        .bytes = (long)r.response_bytes,
        .piv = -1,
        .echo = r.echo_piv >= 0,
        .echo_piv = r.echo_piv,
        .block1_blocks = r.block1_blocks,
        .block2_blocks = r.block2_blocks,
    };
    const uint8_t *pl;
    size_t pll;
    if (xr && r.unprotected_error && r.response_len > 0) {
        if (!cli_coap_response_view(out, (size_t)r.response_len, &ri.code, &ri.content_format,
                                    &pl, &pll))
            print_response(rep, &ri, pl, pll, NULL);
        report_unprotected(out, (size_t)r.response_len, r.unprotected_code);
        rep->error = "unprotected_response";
        return CLI_EXIT_OSCORE;
    }
    if (xr) {
        if (r.transport_err)
            return transport_failure(rep, r.transport_err);
        if (r.bw_err) {
            /* Never a part of the body as if it were the answer. */
            fprintf(stderr, "edhoc-cli coap: block-wise transfer failed after %u+%u blocks: %s\n",
                    r.block1_blocks, r.block2_blocks, edhoc_bw_strerror(r.bw_err));
            rep->error = "blockwise";
            return CLI_EXIT_FAILURE;
        }
        fprintf(stderr, "edhoc-cli coap: OSCORE: %s\n", oscore_strerror(r.oscore_err));
        rep->error = "oscore";
        return CLI_EXIT_OSCORE;
    }
    if (cli_coap_response_view(out, (size_t)r.response_len, &ri.code, &ri.content_format, &pl,
                               &pll)) {
        fprintf(stderr, "edhoc-cli coap: malformed response\n");
        rep->error = "malformed_response";
        return CLI_EXIT_FAILURE;
    }
    ri.protected_resp = true;
    ri.piv = r.response_piv;
    if (print_response(rep, &ri, pl, pll, output_path))
        return CLI_EXIT_INPUT;
    if (ri.code == COAP_CODE(2, 31)) {
        fprintf(stderr, "edhoc-cli coap: the server asked for more blocks than the body has\n");
        rep->error = "blockwise";
        return CLI_EXIT_FAILURE;
    }
    return (ri.code >> 5) >= 4 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
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
    /* --oscore-context: the master secret. */
    cli_no_core_dumps();
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
    /* What this request would not use is refused, not ignored. */
    if (!ctx_path && (state_opt || seq_given))
        return cli_opt_error(&p, "%s goes with --oscore-context (a plain request has no "
                                 "sequence numbers)", state_opt ? "--state-dir" : "--seq");
    if (observe && repeat > 1)
        return cli_opt_error(&p, "--observe and --repeat do not go together");
    if (json && output_path && !strcmp(output_path, "-"))
        return cli_opt_error(&p, "--json and --output -: both would go to standard output");
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
    struct b2_follow follow;
    memset(&follow, 0, sizeof follow);
    oscore_b2_client_init(&follow.st, 0);
    follow.uri = &u;
    follow.verbose = p.verbose > 0;
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
        rc = ctx ? oscore_context_init_config(ctx, edhoc_crypto_default(), &cfg) : OSCORE_ERR_INVALID;
        int exit_rc = CLI_EXIT_INPUT;
        if (rc) {
            snprintf(why, sizeof why, "%s", oscore_strerror(rc));
        } else if (cli_seq_open(&seq_store, sd == 0 ? state_dir : NULL, conf_path, seq_path,
                                &cfg, why, sizeof why)) {
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
            follow.next = calloc(1, sizeof *follow.next);
            if (!kept_cfg || !follow.next) {
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
            free(follow.next);
            cli_seq_close(seq_store);
            free(body);
            return exit_rc;
        }
    }

    follow.cfg = kept_cfg;
    follow.active = ctx;
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
        free(follow.next);
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
        exit_code = cli_exit_for_client_open(rc);
        goto out;
    }
    uint64_t deadline = cli_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    /* From here on the request goes out: --json prints what happened,
     * whatever it was. */
    struct report rep = {NULL, NULL, NULL};
    if (json) {
        rep.root = json_object();
        rep.responses = json_array();
        json_object_set(rep.root, "responses", rep.responses);
    }
    /* Runs that take a while (--observe, --repeat) show where they are
     * and, stopped by Ctrl-C, end cleanly: the observation deregistered,
     * what was received reported, marked partial. */
    struct cli_progress pr;
    bool long_run = observe > 0 || repeat > 1;
    cli_progress_begin(&pr, "coap", p.verbose, p.quiet || !long_run);
    if (long_run)
        cli_interrupt_catch();
    uint8_t tok[8];
    size_t tl = 0;
    long dereg = 1; /* 1: no observation; 0 confirmed; -1 not confirmed */
    if (bw_path) {
        exit_code = oscore_request(t, &follow, &seqs, req, (size_t)n_req, plain, msg_cap,
                                   (unsigned)block_size, (size_t)max_body, timeout_ms, &rep,
                                   output_path);
        goto after_responses;
    }
    rc = edhoc_transport_client_send(t, send_msg, (size_t)n, true, tok, &tl);
    if (rc) {
        fprintf(stderr, "edhoc-cli coap: cannot send: %s\n", edhoc_transport_strerror(rc));
        rep.error = "send";
        exit_code = CLI_EXIT_FAILURE;
        goto after_responses;
    }
    long want = observe ? observe : 1;
    bool peer_lost = false; /* no point in deregistering */
    bool echo_done = false;
    long echo_piv = -1;
    long n_plain = n_req;
    for (long k = 0; k < want; k++) {
        long rn = wait_response(t, tok, tl, resp, msg_cap, deadline, long_run);
        if (rn == WAIT_INTERRUPTED)
            break;
        if (rn < 0) {
            exit_code = transport_failure(&rep, rn);
            peer_lost = true;
            break;
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
            if (!edhoc_coap_msg_parse(resp, (size_t)rn, &outer) &&
                edhoc_coap_msg_find_option(&outer, COAP_OPT_OSCORE)) {
                long un = oscore_unprotect_response(follow.active, &b, resp, (size_t)rn, plain,
                                                    msg_cap);
                if (un == OSCORE_ERR_KID_CONTEXT && k == 0 && !follow.started) {
                    /* Response #1 of RFC 8613 Appendix B.2: the request
                     * again, as request #2 under the new ID Context. */
                    if (b2_step3(&follow, &b, resp, (size_t)rn, plain, msg_cap)) {
                        rep.error = "oscore";
                        exit_code = CLI_EXIT_OSCORE;
                        peer_lost = true;
                        break;
                    }
                    edhoc_transport_client_forget(t, tok, tl);
                    long pn = protect_logged(follow.active, &seqs, req, (size_t)n_plain, prot,
                                             msg_cap, &b);
                    rc = pn < 0 ? EDHOC_TRANSPORT_ERR_MALFORMED
                                : edhoc_transport_client_send(t, prot, (size_t)pn, true, tok, &tl);
                    if (rc) {
                        fprintf(stderr, "edhoc-cli coap: cannot send request #2 of RFC 8613 "
                                        "Appendix B.2: %s\n",
                                pn < 0 ? oscore_strerror((int)pn) : edhoc_transport_strerror(rc));
                        rep.error = pn < 0 ? "oscore" : "send";
                        exit_code = pn < 0 ? CLI_EXIT_OSCORE : CLI_EXIT_FAILURE;
                        peer_lost = true;
                        break;
                    }
                    k--;
                    continue;
                }
                if (un < 0) {
                    fprintf(stderr, "edhoc-cli coap: OSCORE: response rejected: %s\n",
                            oscore_strerror((int)un));
                    rep.error = "oscore";
                    exit_code = CLI_EXIT_OSCORE;
                    peer_lost = true;
                    break;
                }
                shown = plain;
                shown_len = (size_t)un;
                protected_resp = true;
                if (follow.started)
                    follow.completed = true;
            }
        }
        struct coap_msg inner;
        const struct coap_option *echo = NULL;
        if (protected_resp && k == 0 && !echo_done && !edhoc_coap_msg_parse(shown, shown_len, &inner) &&
            inner.code == COAP_CODE_UNAUTHORIZED &&
            (echo = edhoc_coap_msg_find_option(&inner, COAP_OPT_ECHO)) && echo->len <= 40) {
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
                             : protect_logged(follow.active, &seqs, plain, (size_t)an, prot,
                                              msg_cap, &b);
            if (pn < 0) {
                fprintf(stderr, "edhoc-cli coap: OSCORE: cannot protect the retry: %s\n",
                        oscore_strerror((int)pn));
                rep.error = "oscore";
                exit_code = CLI_EXIT_OSCORE;
                peer_lost = true;
                break;
            }
            rc = edhoc_transport_client_send(t, prot, (size_t)pn, true, tok, &tl);
            if (rc) {
                fprintf(stderr, "edhoc-cli coap: cannot send: %s\n", edhoc_transport_strerror(rc));
                rep.error = "send";
                exit_code = CLI_EXIT_FAILURE;
                peer_lost = true;
                break;
            }
            k--;
            continue;
        }
        if (!ctx && k == 0 && !echo_done && !edhoc_coap_msg_parse(shown, shown_len, &inner) &&
            inner.code == COAP_CODE_UNAUTHORIZED &&
            (echo = edhoc_coap_msg_find_option(&inner, COAP_OPT_ECHO)) && echo->len <= 40) {
            /* The server checks that we receive at our address before it
             * answers with more than a few times what it got (RFC 9175
             * Section 2.4 item 3); "the client SHOULD resend the original
             * request with the addition of an Echo option" (Section 2.3). */
            uint8_t ev[40];
            size_t el = echo->len;
            memcpy(ev, echo->value, el);
            echo_done = true;
            edhoc_transport_client_forget(t, tok, tl);
            long an = cli_coap_with_echo(send_msg, (size_t)n, ev, el, prot, msg_cap);
            rc = an < 0 ? EDHOC_TRANSPORT_ERR_MALFORMED
                        : edhoc_transport_client_send(t, prot, (size_t)an, true, tok, &tl);
            if (rc) {
                fprintf(stderr, "edhoc-cli coap: cannot send: %s\n", edhoc_transport_strerror(rc));
                rep.error = "send";
                exit_code = CLI_EXIT_FAILURE;
                peer_lost = true;
                break;
            }
            k--;
            continue;
        }
        struct response_info ri = {
            .oscore = ctx != NULL,
            .protected_resp = protected_resp,
            .bytes = rn,
            .piv = piv,
            .echo = echo_done,
            .echo_piv = echo_done ? echo_piv : -1,
            .block1_blocks = -1,
            .block2_blocks = -1,
        };
        const uint8_t *pl;
        size_t pll;
        if (cli_coap_response_view(shown, shown_len, &ri.code, &ri.content_format, &pl, &pll)) {
            fprintf(stderr, "edhoc-cli coap: malformed response\n");
            rep.error = "malformed_response";
            exit_code = CLI_EXIT_FAILURE;
            peer_lost = true;
            break;
        }
        if (print_response(&rep, &ri, pl, pll, output_path)) {
            exit_code = CLI_EXIT_INPUT;
            break;
        }
        if (ctx && !protected_resp) {
            /* Not the answer, whatever its code: a response to an OSCORE
             * request is protected (RFC 8613 Section 8.4); only the OSCORE
             * layer's own errors come unprotected (Sections 7.4, 8.2). */
            report_unprotected(resp, (size_t)rn, ri.code);
            rep.error = "unprotected_response";
            exit_code = CLI_EXIT_OSCORE;
            break;
        }
        if ((ri.code >> 5) >= 4) {
            exit_code = CLI_EXIT_FAILURE;
            break;
        }
        if (observe)
            cli_progress_update(&pr, "%ld of %ld notifications", k + 1, want);
    }
    /* An observation ends with a deregistration (RFC 7641 Section 3.6),
     * Ctrl-C included, unless the server is gone or cannot be talked to. */
    if (observe && !peer_lost)
        dereg = deregister(t, follow.active, &seqs, code, &u, (int)cf, tok, tl, deadline, req,
                           prot, resp, plain, p.quiet);
    edhoc_transport_client_forget(t, tok, tl);
after_responses:
    /* Any answer counts (an unprotected request may well get 4.01). */
    if (repeat > 1 && !observe && !cli_interrupted() &&
        (exit_code == CLI_EXIT_OK || (!ctx && exit_code == CLI_EXIT_FAILURE && !rep.error))) {
        /* Throughput: the same request again, one at a time. */
        uint64_t t0 = cli_now_ns();
        long ok = 0, sent = 0;
        for (long k = 1; k < repeat && !cli_interrupted(); k++) {
            uint64_t now = cli_now_ns();
            int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000);
            sent++;
            if (ctx) {
                struct cli_oscore_xfer x = {.block_size = block_size ? (unsigned)block_size : 1024,
                                            .max_body = (size_t)max_body,
                                            .sent = log_sent,
                                            .user = &seqs};
                struct cli_oscore_result rr;
                if (cli_oscore_exchange_bw(t, follow.active, req, (size_t)n_req, plain, msg_cap,
                                           left, NULL, NULL, &x, &rr))
                    break;
            } else if (edhoc_transport_client_request(t, req, (size_t)n_req, resp, msg_cap,
                                                      left) < 0) {
                break;
            }
            ok++;
            cli_progress_update(&pr, "%ld of %ld requests", ok + 1, repeat);
        }
        double secs = (double)(cli_now_ns() - t0) / 1e9;
        if (rep.root) {
            json_t *jr = json_object();
            cli_json_set(jr, "requests", json_integer(sent));
            cli_json_set(jr, "ok", json_integer(ok));
            cli_json_set(jr, "seconds", cli_json_real_or_null(secs));
            cli_json_set(jr, "requests_per_second",
                         secs > 0 ? cli_json_real_or_null((double)ok / secs) : json_null());
            cli_json_set(rep.root, "repeat", jr);
        } else {
            printf("Repeat: %ld requests after the first, %ld ok in %.3f s: %.1f requests/s\n",
                   sent, ok, secs, secs > 0 ? (double)ok / secs : 0.0);
        }
        if (ok != sent && !cli_interrupted())
            exit_code = CLI_EXIT_FAILURE;
    }
    cli_progress_end(&pr);
    bool partial = cli_interrupted() != 0;
    if (partial) {
        if (!rep.root)
            printf("interrupted: partial results\n");
        exit_code = cli_interrupt_exit_code();
    }
    if (rep.root) {
        json_decref(rep.responses);
        if (!json_object_get(rep.root, "repeat"))
            cli_json_set(rep.root, "repeat", json_null());
        cli_json_set(rep.root, "deregistered", dereg == 1 ? json_null() : json_boolean(dereg == 0));
        /* What this run used, so that a script can tell runs apart. */
        json_t *used = json_null();
        if (ctx) {
            used = json_array();
            for (size_t i = 0; i < seqs.n; i++)
                json_array_append_new(used, json_integer((json_int_t)seqs.first[i]));
        }
        cli_json_set(rep.root, "oscore_sequence_numbers", used);
        cli_json_set(rep.root, "oscore_requests_protected",
                     cli_json_int_or_null(ctx != NULL, (long long)seqs.total));
        cli_json_set(rep.root, "next_sequence_number",
                     cli_json_int_or_null(ctx != NULL,
                                          ctx ? (long long)oscore_context_ssn(ctx) : 0));
        json_t *b2 = json_null();
        if (follow.started) {
            b2 = json_object();
            cli_json_set(b2, "r2_hex", cli_json_hex_value(follow.st.r2, follow.st.r2_len));
            cli_json_set(b2, "previous_id_context_hex",
                         follow.has_id1 ? cli_json_hex_value(follow.id1, follow.id1_len)
                                        : json_null());
            cli_json_set(b2, "id_context_hex",
                         cli_json_hex_value(follow.st.id_context, follow.st.id_context_len));
            cli_json_set(b2, "completed", json_boolean(follow.completed));
        }
        cli_json_set(rep.root, "oscore_b2", b2);
        cli_json_set(rep.root, "error", cli_json_string_or_null(rep.error));
        cli_json_set(rep.root, "partial", json_boolean(partial));
        if (cli_json_print(rep.root, stdout))
            fprintf(stderr, "edhoc-cli coap: standard output: write error\n");
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
    if (follow.next) {
        oscore_context_wipe(follow.next);
        free(follow.next);
    }
    if (kept_cfg) {
        edhoc_wipe(kept_cfg, sizeof *kept_cfg);
        free(kept_cfg);
    }
    edhoc_wipe(&follow.st, sizeof follow.st);
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
