/* edhoc-cli oscore: protect or unprotect one CoAP message by hand. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/oscore.h"
#include "commands.h"
#include "edhoc_args.h"
#include "output/json_out.h"
#include "oscore_seq.h"
#include "util.h"

#define MAX_MSG 4096
/* A context file is a few lines; anything larger is not one. */

enum {
    OPT_CONTEXT = 1,
    OPT_ROLE,
    OPT_SEQ,
    OPT_STATE_DIR,
    OPT_REQUEST,
    OPT_JSON,
};

static const struct cli_opt context_opts[] = {
    {OPT_CONTEXT, "context", "FILE",
     "the security context as this endpoint sees it, in libcoap's OSCORE conf\n"
     "format (required; it holds the master secret, so it is refused when group\n"
     "or others can read it, when another user owns it, or when it lies in a\n"
     "directory others can write)"},
    {OPT_ROLE, "role", "client|server",
     "client protects requests and unprotects responses, server the reverse\n"
     "(default: from the message's code; a role that does not fit is refused)"},
    {OPT_REQUEST, "request", "HEX",
     "the protected request a response answers (needed to protect or unprotect\n"
     "a response, refused with a request)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt seq_opts[] = {
    {OPT_SEQ, "seq", "N",
     "protect: the sender sequence number to use (0..2^40-1), taken as given and\n"
     "recorded as used in FILE.seq and the state directory. Without it a request\n"
     "gets the next number of the context's records there (as coap does); a\n"
     "response protected with --seq carries its own Partial IV, without it it\n"
     "reuses the request's nonce"},
    {OPT_STATE_DIR, "state-dir", "DIR|none",
     "protect: where that record is also kept (default $STATE_DIRECTORY, else\n"
     "$XDG_STATE_HOME/edhoc-cli, else ~/.local/state/edhoc-cli); none: FILE.seq only"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt output_opts[] = {
    {OPT_JSON, "json", NULL, "one JSON object on standard output (docs/json/oscore.schema.json)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group oscore_groups[] = {
    {"Context and message", context_opts},
    {"Sequence numbers", seq_opts},
    {"Output", output_opts},
    {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_oscore = {
    .name = "oscore",
    .synopsis = "protect|unprotect --context FILE [OPTIONS] MESSAGE_HEX",
    .description = "Protects, or verifies and decrypts, one CoAP (UDP) message given as hex with\n"
                   "the OSCORE (RFC 8613) context in FILE, libcoap's OSCORE conf format\n"
                   "(keyword,encoding,value lines: master_secret, master_salt, id_context,\n"
                   "sender_id, recipient_id, aead_alg, hkdf_alg, replay_window, ...).\n"
                   "protect prints the protected message as hex, unprotect the inner message;\n"
                   "-v also decodes it (code, options, payload) on standard error.",
    .groups = oscore_groups,
    .epilogue = "Exit codes: 0 ok; 2 bad command line; 3 unusable context file or hex input;\n"
                "7 OSCORE processing failed (the reason is printed).",
};

/* ---- The context file: a secret ---- */

/* ---- Decoding a message ---- */

static const char *code_text(uint8_t code, char buf[8])
{
    snprintf(buf, 8, "%u.%02u", (unsigned)(code >> 5), (unsigned)(code & 0x1f));
    return buf;
}

/* Options whose values read best as text / as numbers. */
static bool is_string_option(uint16_t n)
{
    return n == COAP_OPT_URI_HOST || n == COAP_OPT_LOCATION_PATH || n == COAP_OPT_URI_PATH ||
           n == COAP_OPT_URI_QUERY || n == COAP_OPT_LOCATION_QUERY || n == COAP_OPT_PROXY_URI ||
           n == COAP_OPT_PROXY_SCHEME;
}

static bool is_uint_option(uint16_t n)
{
    return n == COAP_OPT_OBSERVE || n == COAP_OPT_URI_PORT || n == COAP_OPT_CONTENT_FORMAT ||
           n == COAP_OPT_MAX_AGE || n == COAP_OPT_ACCEPT || n == COAP_OPT_BLOCK2 ||
           n == COAP_OPT_BLOCK1 || n == COAP_OPT_SIZE2 || n == COAP_OPT_SIZE1 ||
           n == COAP_OPT_NO_RESPONSE;
}

static bool printable(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] < 0x20 || p[i] > 0x7e)
            return false;
    }
    return true;
}

static const char *const message_types[] = {"CON", "NON", "ACK", "RST"};

/* A decoded CoAP message, one line per field (-v). */
static void print_decoded(FILE *f, const uint8_t *msg, size_t len)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, len, &m) != 0) {
        fprintf(f, "  (does not parse as CoAP)\n");
        return;
    }
    char cb[8];
    fprintf(f, "  type %s, code %s, message id %u, token ", message_types[m.type],
            code_text(m.code, cb), m.mid);
    cli_hex_print(f, m.token, m.token_len);
    fprintf(f, m.token_len ? "\n" : "(empty)\n");
    for (size_t i = 0; i < m.option_count; i++) {
        const struct coap_option *o = &m.options[i];
        const char *name = edhoc_coap_option_name(o->number);
        fprintf(f, "  option %u %s: ", o->number, name ? name : "(unknown)");
        uint32_t v;
        if (is_uint_option(o->number) && edhoc_coap_option_uint(o, &v) == 0) {
            fprintf(f, "%" PRIu32 "\n", v);
        } else if (is_string_option(o->number) && printable(o->value, o->len)) {
            fprintf(f, "\"%.*s\"\n", (int)o->len, (const char *)o->value);
        } else if (o->number == COAP_OPT_OSCORE) {
            struct oscore_option oo;
            if (oscore_option_parse(o->value, o->len, &oo) != 0) {
                fprintf(f, "(malformed) ");
                cli_hex_print(f, o->value, o->len);
                fprintf(f, "\n");
                continue;
            }
            cli_hex_print(f, o->value, o->len);
            fprintf(f, " (partial iv ");
            if (oo.piv_len)
                cli_hex_print(f, oo.piv, oo.piv_len);
            else
                fprintf(f, "none");
            if (oo.has_kid) {
                fprintf(f, ", kid ");
                cli_hex_print(f, oo.kid, oo.kid_len);
                if (!oo.kid_len)
                    fprintf(f, "(empty)");
            }
            if (oo.has_kid_context) {
                fprintf(f, ", kid context ");
                cli_hex_print(f, oo.kid_context, oo.kid_context_len);
            }
            fprintf(f, ")\n");
        } else {
            cli_hex_print(f, o->value, o->len);
            fprintf(f, o->len ? "\n" : "(empty)\n");
        }
    }
    if (m.payload) {
        fprintf(f, "  payload (%zu bytes): ", m.payload_len);
        if (printable(m.payload, m.payload_len))
            fprintf(f, "\"%.*s\"\n", (int)m.payload_len, (const char *)m.payload);
        else {
            cli_hex_print(f, m.payload, m.payload_len);
            fprintf(f, "\n");
        }
    } else {
        fprintf(f, "  no payload\n");
    }
}

/* The same as a JSON object, or null when it does not parse. */
static json_t *json_decoded(const uint8_t *msg, size_t len)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, len, &m) != 0)
        return json_null();
    char cb[8];
    json_t *d = json_object();
    cli_json_set(d, "type", json_string(message_types[m.type]));
    cli_json_set(d, "code", json_string(code_text(m.code, cb)));
    cli_json_set(d, "message_id", json_integer(m.mid));
    cli_json_set(d, "token_hex", cli_json_hex_value(m.token, m.token_len));
    json_t *opts = json_array();
    for (size_t i = 0; i < m.option_count; i++) {
        const struct coap_option *o = &m.options[i];
        json_t *jo = json_object();
        cli_json_set(jo, "number", json_integer(o->number));
        cli_json_set(jo, "name", cli_json_string_or_null(edhoc_coap_option_name(o->number)));
        cli_json_set(jo, "value_hex", cli_json_hex_value(o->value, o->len));
        json_array_append_new(opts, jo);
    }
    cli_json_set(d, "options", opts);
    /* No payload: null, not "". */
    if (m.payload && m.payload_len) {
        cli_json_set_bytes(d, "payload", m.payload, m.payload_len);
    } else {
        cli_json_set(d, "payload_hex", json_null());
        cli_json_set(d, "payload_text", json_null());
    }
    return d;
}

/* OSCORE_ERR_* as the word the schema lists. */
static const char *error_word(int err)
{
    switch (err) {
    case OSCORE_ERR_INVALID: return "invalid";
    case OSCORE_ERR_UNSUPPORTED: return "unsupported";
    case OSCORE_ERR_MALFORMED: return "malformed";
    case OSCORE_ERR_NOT_OSCORE: return "not_oscore";
    case OSCORE_ERR_BAD_OPTION: return "bad_option";
    case OSCORE_ERR_CONTEXT_NOT_FOUND: return "context_not_found";
    case OSCORE_ERR_REPLAY: return "replay";
    case OSCORE_ERR_DECRYPT: return "decrypt";
    case OSCORE_ERR_ECHO_REQUIRED: return "echo_required";
    case OSCORE_ERR_SSN_EXHAUSTED: return "ssn_exhausted";
    case OSCORE_ERR_PERSIST: return "persist";
    case OSCORE_ERR_BUFFER: return "buffer";
    case OSCORE_ERR_CRYPTO: return "crypto";
    case OSCORE_ERR_TOO_LARGE: return "too_large";
    case OSCORE_ERR_UNEXPECTED: return "unexpected";
    case OSCORE_ERR_INNER: return "inner";
    case OSCORE_ERR_CONFIG: return "config";
    case OSCORE_ERR_NOMEM: return "nomem";
    default: return "other";
    }
}

/* ---- The command ---- */

struct args {
    bool protect;
    const char *op; /* "protect" / "unprotect" */
    const char *context_path;
    int role; /* -1: from the message; 0 client, 1 server */
    const char *request_hex;
    const char *message_hex;
    bool have_seq;
    uint64_t seq;
    const char *state_dir;
    bool json;
    int verbose;
};

static const char *const roles[] = {"client", "server", NULL};

static int parse_args(int argc, char **argv, struct args *a)
{
    static const char *const ops[] = {"protect", "unprotect", NULL};
    memset(a, 0, sizeof *a);
    a->role = -1;
    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_oscore, argc, argv);
    for (enum cli_opt_status st; (st = cli_opt_next(&p)) != CLI_OPT_DONE;) {
        if (st == CLI_OPT_EXIT)
            return p.exit_code ? p.exit_code : -1;
        if (st == CLI_OPT_POSITIONAL) {
            if (!a->op) {
                int k = -1;
                for (int i = 0; ops[i]; i++) {
                    if (!strcmp(p.value, ops[i]))
                        k = i;
                }
                if (k < 0)
                    return cli_opt_error(&p, "unknown operation '%s' (protect or unprotect)",
                                         p.value);
                a->op = ops[k];
                a->protect = k == 0;
            } else if (!a->message_hex) {
                a->message_hex = p.value;
            } else {
                return cli_opt_error(&p, "unexpected argument '%s' (one MESSAGE_HEX)", p.value);
            }
            continue;
        }
        int bad = 0;
        switch (p.opt->id) {
        case OPT_CONTEXT: a->context_path = p.value; break;
        case OPT_ROLE: bad = cli_opt_choice(&p, roles, &a->role); break;
        case OPT_SEQ:
            bad = cli_opt_u64(&p, 0, OSCORE_SSN_MAX, &a->seq);
            a->have_seq = true;
            break;
        case OPT_STATE_DIR: a->state_dir = p.value; break;
        case OPT_REQUEST: a->request_hex = p.value; break;
        case OPT_JSON: a->json = true; break;
        }
        if (bad)
            return CLI_EXIT_USAGE;
    }
    a->verbose = p.verbose;
    if (!a->op)
        return cli_opt_usage_error(&cli_spec_oscore, "needs protect or unprotect");
    if (!a->message_hex)
        return cli_opt_usage_error(&cli_spec_oscore, "needs a MESSAGE_HEX");
    if (!a->context_path)
        return cli_opt_usage_error(&cli_spec_oscore, "needs --context FILE");
    /* What unprotect does not use is refused, not ignored. */
    if (!a->protect && a->have_seq)
        return cli_opt_error(&p, "--seq only applies to protect");
    if (!a->protect && a->state_dir)
        return cli_opt_error(&p, "--state-dir only applies to protect (unprotect records "
                                 "nothing)");
    return 0;
}

/* Attach the context to its sequence-number record in the state
 * directory (the next free number, reserved before use). */
static int reserve_from_store(const struct args *a, const struct oscore_config *cfg,
                              struct oscore_context *ctx, struct cli_seq_store **store)
{
    char dir[4096], why[512] = "";
    int sd = cli_state_dir(a->state_dir, dir, sizeof dir, why, sizeof why);
    if (sd < 0) {
        fprintf(stderr, "edhoc-cli oscore: %s\n", why);
        return CLI_EXIT_INPUT;
    }
    int rc = cli_seq_open(store, sd == 0 ? dir : NULL, a->context_path, NULL, cfg, why, sizeof why);
    if (!rc)
        rc = cli_seq_attach(*store, ctx, 1, 0, why, sizeof why);
    if (rc) {
        fprintf(stderr, "edhoc-cli oscore: sequence number of %s: %s\n", a->context_path, why);
        cli_seq_close(*store);
        *store = NULL;
        return CLI_EXIT_INPUT;
    }
    return 0;
}

/* --seq N by hand: the bytes made are made to be sent, so N counts as
 * used in the context's record (never lowered), and a later run without
 * --seq continues above it. Best effort: said, not fatal. */
static void note_explicit_seq(const struct args *a, const struct oscore_config *cfg, uint64_t seq)
{
    char dir[4096], why[512] = "";
    int sd = cli_state_dir(a->state_dir, dir, sizeof dir, why, sizeof why);
    if (sd >= 0 && cli_seq_note_used(sd == 0 ? dir : NULL, a->context_path, NULL, cfg, seq + 1, why,
                                     sizeof why) == 0)
        why[0] = '\0';
    if (why[0])
        fprintf(stderr, "edhoc-cli oscore: sequence number %llu not recorded: %s\n",
                (unsigned long long)seq, why);
}

static int init_context(const char *path, const struct oscore_config *cfg, struct oscore_context *c)
{
    int rc = oscore_context_init_config(c, edhoc_crypto_default(), cfg);
    if (rc == OSCORE_ERR_INVALID) {
        size_t max_id = edhoc_crypto_aead_nonce_len(cfg->aead_alg) - 6;
        fprintf(stderr,
                "edhoc-cli oscore: %s: sender_id and recipient_id must differ and be at "
                "most %zu bytes for this AEAD\n",
                path, max_id);
        return CLI_EXIT_INPUT;
    }
    if (rc) {
        fprintf(stderr, "edhoc-cli oscore: %s: cannot derive the context: %s\n", path,
                oscore_strerror(rc));
        return CLI_EXIT_INPUT;
    }
    return 0;
}

static long decode_hex_arg(const char *what, const char *hex, uint8_t *out)
{
    long n = cli_hex_decode(hex, out, MAX_MSG);
    if (n < 0)
        fprintf(stderr, "edhoc-cli oscore: %s is not valid hex (or longer than %d bytes)\n", what,
                MAX_MSG);
    return n;
}

/* The JSON document: the same members whatever happened. */
static json_t *json_result(const struct args *a, const char *role)
{
    json_t *root = json_object();
    cli_json_set(root, "operation", json_string(a->op));
    cli_json_set(root, "role", json_string(role));
    return root;
}

/* A failure of the OSCORE processing itself: one line, and in JSON the
 * error's name, the step, and the error response a server would send. */
static int report_failure(const struct args *a, const char *role, const char *step,
                          const char *step_word, int err, const uint8_t *msg, size_t len)
{
    uint8_t resp[256];
    long rl = -1;
    if (!strcmp(role, "server") && !a->protect)
        rl = oscore_error_response(err, msg, len, resp, sizeof resp);
    fprintf(stderr, "edhoc-cli oscore: %s failed: %s\n", step, oscore_strerror(err));
    if (a->verbose && rl > 0) {
        fprintf(stderr, "error response: ");
        cli_hex_print(stderr, resp, (size_t)rl);
        fprintf(stderr, "\n");
        print_decoded(stderr, resp, (size_t)rl);
    }
    if (a->json) {
        json_t *root = json_result(a, role);
        cli_json_set(root, "ok", json_false());
        cli_json_set(root, "message_hex", json_null());
        cli_json_set(root, "decoded", json_null());
        cli_json_set(root, "failed_step", json_string(step_word));
        cli_json_set(root, "error", json_string(error_word(err)));
        cli_json_set(root, "error_code", json_integer(err));
        cli_json_set(root, "error_response_hex",
                     rl > 0 ? cli_json_hex_value(resp, (size_t)rl) : json_null());
        cli_json_print(root, stdout);
    }
    return CLI_EXIT_OSCORE;
}

int cmd_oscore(int argc, char **argv)
{
    /* --context: the master secret. */
    cli_no_core_dumps();
    struct args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;

    static uint8_t msg[MAX_MSG], req[MAX_MSG], out[MAX_MSG + 64], inner_req[MAX_MSG + 64];
    long msg_len = decode_hex_arg("MESSAGE_HEX", a.message_hex, msg);
    if (msg_len < 0)
        return CLI_EXIT_INPUT;
    long req_len = 0;
    if (a.request_hex) {
        req_len = decode_hex_arg("--request", a.request_hex, req);
        if (req_len < 0)
            return CLI_EXIT_INPUT;
    }
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, (size_t)msg_len, &m) != 0 || m.code == COAP_CODE_EMPTY) {
        fprintf(stderr, "edhoc-cli oscore: MESSAGE_HEX is not a CoAP request or response\n");
        return CLI_EXIT_INPUT;
    }
    bool is_request = edhoc_coap_code_is_request(m.code);
    /* Clients send requests and receive responses; servers the reverse. */
    int role_index = a.protect == is_request ? 0 : 1;
    const char *role = roles[role_index];
    if (a.role >= 0 && a.role != role_index) {
        fprintf(stderr, "edhoc-cli oscore: a %s cannot %s a %s (use --role %s)\n", roles[a.role],
                a.op, is_request ? "request" : "response", role);
        return CLI_EXIT_USAGE;
    }
    if (!is_request && !a.request_hex) {
        fprintf(
            stderr,
            "edhoc-cli oscore: to %s a response, give the protected request with --request HEX\n",
            a.op);
        return CLI_EXIT_USAGE;
    }
    if (is_request && a.request_hex) {
        fprintf(stderr, "edhoc-cli oscore: --request only applies to responses\n");
        return CLI_EXIT_USAGE;
    }
    if (a.protect && !is_request && !a.have_seq && a.state_dir) {
        fprintf(stderr, "edhoc-cli oscore: --state-dir: a response protected without --seq "
                        "reuses the request's nonce and uses no sequence number to record\n");
        return CLI_EXIT_USAGE;
    }

    struct oscore_config cfg;
    rc = cli_oscore_context_load("oscore", "--context", a.context_path, &cfg);
    if (rc)
        return rc;
    struct oscore_context ctx;
    rc = init_context(a.context_path, &cfg, &ctx);
    if (rc) {
        edhoc_wipe(&cfg, sizeof cfg);
        return rc;
    }

    struct oscore_binding b;
    long n;
    const char *step = a.op, *step_word = a.op;
    if (a.protect && a.have_seq && (rc = oscore_context_set_ssn(&ctx, a.seq)) != 0) {
        oscore_context_wipe(&ctx);
        edhoc_wipe(&cfg, sizeof cfg);
        return report_failure(&a, role, "setting the sequence number", "set_sequence_number", rc,
                              msg, (size_t)msg_len);
    }
    if (a.protect && is_request) {
        /* Without --seq the number comes from the context's durable record,
         * as for `coap`: bytes made here are made to be sent, and a second
         * run must not repeat the nonce (RFC 8613 Section 7.2). */
        struct cli_seq_store *store = NULL;
        if (!a.have_seq && (rc = reserve_from_store(&a, &cfg, &ctx, &store)) != 0) {
            oscore_context_wipe(&ctx);
            edhoc_wipe(&cfg, sizeof cfg);
            return rc;
        }
        n = oscore_protect_request(&ctx, msg, (size_t)msg_len, out, sizeof out, &b);
        cli_seq_close(store);
    } else if (a.protect) {
        /* The server first verifies the request it answers: that binds the
         * response to the request's kid and Partial IV. */
        n = oscore_unprotect_request(&ctx, req, (size_t)req_len, inner_req, sizeof inner_req, &b);
        /* Only the binding is needed: drop the decrypted request now. */
        edhoc_wipe(inner_req, sizeof inner_req);
        if (n < 0) {
            step = "verifying --request";
            step_word = "verify_request";
        } else {
            n = oscore_protect_response(&ctx, &b, msg, (size_t)msg_len, a.have_seq, out,
                                        sizeof out);
        }
    } else if (is_request) {
        n = oscore_unprotect_request(&ctx, msg, (size_t)msg_len, out, sizeof out, &b);
    } else {
        n = oscore_binding_from_request(&b, req, (size_t)req_len);
        if (n < 0) {
            step = "reading --request";
            step_word = "read_request";
        } else {
            n = oscore_unprotect_response(&ctx, &b, msg, (size_t)msg_len, out, sizeof out);
        }
    }
    /* A number given by hand was used by whatever was protected with it,
     * request or response (its own Partial IV): recorded, so that a later
     * run without --seq continues above it. */
    if (n >= 0 && a.protect && a.have_seq)
        note_explicit_seq(&a, &cfg, a.seq);
    oscore_context_wipe(&ctx);
    edhoc_wipe(&cfg, sizeof cfg);
    if (n < 0)
        return report_failure(&a, role, step, step_word, (int)n, msg, (size_t)msg_len);

    if (a.json) {
        json_t *root = json_result(&a, role);
        cli_json_set(root, "ok", json_true());
        cli_json_set(root, "message_hex", cli_json_hex_value(out, (size_t)n));
        cli_json_set(root, "decoded", json_decoded(out, (size_t)n));
        cli_json_set(root, "failed_step", json_null());
        cli_json_set(root, "error", json_null());
        cli_json_set(root, "error_code", json_null());
        cli_json_set(root, "error_response_hex", json_null());
        if (cli_json_print(root, stdout)) {
            fprintf(stderr, "edhoc-cli oscore: standard output: write error\n");
            return CLI_EXIT_FAILURE;
        }
    } else {
        cli_hex_print(stdout, out, (size_t)n);
        printf("\n");
        fflush(stdout);
    }
    if (a.verbose) {
        fprintf(stderr, "%s %s (%ld bytes):\n", a.protect ? "protected" : "inner",
                is_request ? "request" : "response", n);
        print_decoded(stderr, out, (size_t)n);
    }
    return CLI_EXIT_OK;
}
