/* edhoc-cli oscore: protect or unprotect one CoAP message by hand. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/oscore.h"
#include "commands.h"
#include "edhoc_args.h"
#include "oscore_seq.h"
#include "util.h"

#define MAX_MSG 4096

static void oscore_usage(FILE *out)
{
    fprintf(out,
        "usage: edhoc-cli oscore protect   --context FILE [--role client|server]\n"
        "                                  [--seq N | --state-dir DIR|none]\n"
        "                                  [--request HEX] [--json] [-v] MESSAGE_HEX\n"
        "       edhoc-cli oscore unprotect --context FILE [--role client|server]\n"
        "                                  [--request HEX] [--json] [-v] MESSAGE_HEX\n"
        "\n"
        "Protects or verifies one CoAP (UDP) message with the OSCORE (RFC 8613)\n"
        "context described by FILE, in libcoap's coap-oscore-conf(5) format\n"
        "(keyword,encoding,value lines: master_secret, master_salt, id_context,\n"
        "sender_id, recipient_id, aead_alg, hkdf_alg, replay_window, ...).\n"
        "\n"
        "  --context FILE      the security context (this endpoint's view)\n"
        "  --role client|server\n"
        "                      client protects requests and unprotects responses,\n"
        "                      server the reverse (default: from the message code)\n"
        "  --seq N             sender sequence number to use (protect), taken as given and\n"
        "                      recorded as used in the state directory.\n"
        "                      Without it a request gets the next number of the context's\n"
        "                      record in the state directory (as `coap` does). A response\n"
        "                      protected with --seq carries its own Partial IV;\n"
        "                      without it, it reuses the request's nonce\n"
        "  --state-dir DIR|none  where that record is kept (default $STATE_DIRECTORY, else\n"
        "                      $XDG_STATE_HOME/edhoc-cli, else ~/.local/state/edhoc-cli)\n"
        "  --request HEX       the protected request a response answers (needed\n"
        "                      to protect or unprotect a response)\n"
        "  --json              one JSON object on stdout\n"
        "  -v, --verbose       also decode the result (code, options, payload)\n"
        "\n"
        "Exit codes: 0 ok, 2 usage, 3 unusable context file or hex input,\n"
        "7 OSCORE processing failed (the reason is printed).\n");
}

static const char *code_text(uint8_t code, char buf[8])
{
    snprintf(buf, 8, "%u.%02u", code >> 5, code & 0x1f);
    return buf;
}

/* Options whose values read best as text / as numbers. */
static bool is_string_option(uint16_t n)
{
    return n == COAP_OPT_URI_HOST || n == COAP_OPT_LOCATION_PATH || n == COAP_OPT_URI_PATH ||
           n == COAP_OPT_URI_QUERY || n == COAP_OPT_LOCATION_QUERY ||
           n == COAP_OPT_PROXY_URI || n == COAP_OPT_PROXY_SCHEME;
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

/* Print a decoded CoAP message: one line per field. */
static void print_decoded(FILE *f, const uint8_t *msg, size_t len)
{
    struct coap_msg m;
    if (coap_msg_parse(msg, len, &m) != 0) {
        fprintf(f, "  (does not parse as CoAP)\n");
        return;
    }
    static const char *types[] = {"CON", "NON", "ACK", "RST"};
    char cb[8];
    fprintf(f, "  type %s, code %s, message id %u, token ", types[m.type], code_text(m.code, cb),
            m.mid);
    cli_hex_print(f, m.token, m.token_len);
    fprintf(f, m.token_len ? "\n" : "(empty)\n");
    for (size_t i = 0; i < m.option_count; i++) {
        const struct coap_option *o = &m.options[i];
        const char *name = coap_option_name(o->number);
        fprintf(f, "  option %u %s: ", o->number, name ? name : "(unknown)");
        uint32_t v;
        if (is_uint_option(o->number) && coap_option_uint(o, &v) == 0) {
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

static void json_decoded(FILE *f, const uint8_t *msg, size_t len)
{
    struct coap_msg m;
    if (coap_msg_parse(msg, len, &m) != 0)
        return;
    char cb[8];
    fprintf(f, ",\"code\":");
    cli_json_string(f, code_text(m.code, cb));
    fprintf(f, ",\"type\":%u,\"message_id\":%u,\"token\":", m.type, m.mid);
    cli_json_hex(f, m.token, m.token_len);
    fprintf(f, ",\"options\":[");
    for (size_t i = 0; i < m.option_count; i++) {
        const struct coap_option *o = &m.options[i];
        const char *name = coap_option_name(o->number);
        fprintf(f, "%s{\"number\":%u,\"name\":", i ? "," : "", o->number);
        cli_json_string(f, name ? name : "");
        fprintf(f, ",\"value\":");
        cli_json_hex(f, o->value, o->len);
        fprintf(f, "}");
    }
    fprintf(f, "],\"payload\":");
    cli_json_hex(f, m.payload, m.payload_len);
}

struct args {
    const char *op;
    const char *context_path;
    const char *role; /* NULL: from the message */
    const char *request_hex;
    const char *message_hex;
    bool have_seq;
    uint64_t seq;
    const char *state_dir;
    bool json;
    bool verbose;
};

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "edhoc-cli oscore: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see 'edhoc-cli oscore --help')\n");
    return CLI_EXIT_USAGE;
}

static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option longopts[] = {
        {"context", required_argument, NULL, 'c'},
        {"role", required_argument, NULL, 'r'},
        {"seq", required_argument, NULL, 's'},
        {"state-dir", required_argument, NULL, 'd'},
        {"request", required_argument, NULL, 'q'},
        {"json", no_argument, NULL, 'j'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    if (argc < 2) {
        oscore_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        oscore_usage(stdout);
        return -1;
    }
    a->op = argv[1];
    if (strcmp(a->op, "protect") && strcmp(a->op, "unprotect"))
        return usage_error("unknown operation '%s' (protect or unprotect)", a->op);
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc - 1, argv + 1, "vh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            a->context_path = optarg;
            break;
        case 'r':
            if (strcmp(optarg, "client") && strcmp(optarg, "server"))
                return usage_error("--role must be client or server, not '%s'", optarg);
            a->role = optarg;
            break;
        case 's': {
            char *end;
            errno = 0;
            if (optarg[0] == '-' || !optarg[0])
                return usage_error("--seq needs a number from 0 to 2^40-1, not '%s'", optarg);
            unsigned long long v = strtoull(optarg, &end, 0);
            if (errno || *end || v > OSCORE_SSN_MAX)
                return usage_error("--seq needs a number from 0 to 2^40-1, not '%s'", optarg);
            a->have_seq = true;
            a->seq = v;
            break;
        }
        case 'q':
            a->request_hex = optarg;
            break;
        case 'd':
            a->state_dir = optarg;
            break;
        case 'j':
            a->json = true;
            break;
        case 'v':
            a->verbose = true;
            break;
        case 'h':
            oscore_usage(stdout);
            return -1;
        default:
            return usage_error("unknown or incomplete option '%s'", (argv + 1)[optind - 1]);
        }
    }
    int rest = argc - 1 - optind;
    if (rest != 1)
        return usage_error("%s needs exactly one MESSAGE_HEX", a->op);
    a->message_hex = argv[1 + optind];
    if (!a->context_path)
        return usage_error("%s needs --context FILE", a->op);
    if (a->have_seq && !strcmp(a->op, "unprotect"))
        return usage_error("--seq only applies to %s", "protect");
    return 0;
}

/* Attach the context to its sequence-number record in the state
 * directory (the next free number, reserved before use). */
static int reserve_from_store(const struct args *a, struct oscore_context *ctx,
                              struct cli_seq_store **store)
{
    char dir[4096], why[512] = "";
    int sd = cli_state_dir(a->state_dir, dir, sizeof dir, why, sizeof why);
    if (sd < 0) {
        fprintf(stderr, "edhoc-cli oscore: %s\n", why);
        return CLI_EXIT_INPUT;
    }
    if (sd == 1) {
        fprintf(stderr, "edhoc-cli oscore: --state-dir none: give the sequence number with --seq N "
                        "(a number already used repeats a nonce, RFC 8613 Section 7.2)\n");
        return CLI_EXIT_USAGE;
    }
    struct oscore_config cfg;
    struct oscore_config_error err;
    if (cli_oscore_config_read(a->context_path, &cfg, &err))
        return CLI_EXIT_INPUT; /* load_context already read it once */
    int rc = cli_seq_open(store, dir, NULL, &cfg, why, sizeof why);
    edhoc_wipe(&cfg, sizeof cfg);
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
static void note_explicit_seq(const struct args *a, uint64_t seq)
{
    char dir[4096], why[512] = "";
    int sd = cli_state_dir(a->state_dir, dir, sizeof dir, why, sizeof why);
    if (sd == 1)
        return;
    struct oscore_config cfg;
    struct oscore_config_error err;
    if (sd == 0 && cli_oscore_config_read(a->context_path, &cfg, &err) == 0) {
        if (cli_seq_note_used(dir, NULL, &cfg, seq + 1, why, sizeof why) == 0)
            why[0] = '\0';
        edhoc_wipe(&cfg, sizeof cfg);
    }
    if (why[0])
        fprintf(stderr, "edhoc-cli oscore: sequence number %llu not recorded: %s\n",
                (unsigned long long)seq, why);
}

static int load_context(const char *path, struct oscore_context *c)
{
    struct oscore_config cfg;
    struct oscore_config_error err;
    int rc = cli_oscore_config_read(path, &cfg, &err);
    if (rc == -1) {
        fprintf(stderr, "edhoc-cli oscore: cannot read context file %s: %s\n", path,
                strerror(errno));
        return CLI_EXIT_INPUT;
    }
    if (rc) {
        if (err.line)
            fprintf(stderr, "edhoc-cli oscore: %s:%u: %s\n", path, err.line, err.message);
        else
            fprintf(stderr, "edhoc-cli oscore: %s: %s\n", path, err.message);
        return CLI_EXIT_INPUT;
    }
    rc = oscore_context_init_config(c, edhoc_crypto_openssl(), &cfg);
    size_t max_id = edhoc_crypto_aead_nonce_len(cfg.aead_alg) - 6;
    edhoc_wipe(&cfg, sizeof cfg);
    if (rc == OSCORE_ERR_INVALID) {
        fprintf(stderr, "edhoc-cli oscore: %s: sender_id and recipient_id must differ and be at "
                "most %zu bytes for this AEAD\n", path, max_id);
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

/* A failure of the OSCORE processing itself: one line, and in JSON the
 * reason plus the error response a server would send. */
static int report_failure(const struct args *a, const char *role, const char *step, int err,
                          const uint8_t *msg, size_t len)
{
    uint8_t resp[256];
    long rl = -1;
    if (!strcmp(role, "server") && !strcmp(a->op, "unprotect"))
        rl = oscore_error_response(err, msg, len, resp, sizeof resp);
    fprintf(stderr, "edhoc-cli oscore: %s failed: %s\n", step, oscore_strerror(err));
    if (a->verbose && rl > 0) {
        fprintf(stderr, "error response: ");
        cli_hex_print(stderr, resp, (size_t)rl);
        fprintf(stderr, "\n");
        print_decoded(stderr, resp, (size_t)rl);
    }
    if (a->json) {
        printf("{\"operation\":");
        cli_json_string(stdout, a->op);
        printf(",\"role\":");
        cli_json_string(stdout, role);
        printf(",\"ok\":false,\"error\":");
        cli_json_string(stdout, oscore_strerror(err));
        printf(",\"error_code\":%d", err);
        if (rl > 0) {
            printf(",\"error_response\":");
            cli_json_hex(stdout, resp, (size_t)rl);
        }
        printf("}\n");
    }
    return CLI_EXIT_OSCORE;
}

int cmd_oscore(int argc, char **argv)
{
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
    if (coap_msg_parse(msg, (size_t)msg_len, &m) != 0 || m.code == COAP_CODE_EMPTY) {
        fprintf(stderr, "edhoc-cli oscore: MESSAGE_HEX is not a CoAP request or response\n");
        return CLI_EXIT_INPUT;
    }
    bool is_request = coap_code_is_request(m.code);
    bool protect = !strcmp(a.op, "protect");
    /* Clients send requests and receive responses; servers the reverse. */
    const char *role = (protect == is_request) ? "client" : "server";
    if (a.role && strcmp(a.role, role)) {
        fprintf(stderr, "edhoc-cli oscore: a %s cannot %s a %s (use --role %s)\n", a.role, a.op,
                is_request ? "request" : "response", role);
        return CLI_EXIT_USAGE;
    }
    if (!is_request && !a.request_hex) {
        fprintf(stderr, "edhoc-cli oscore: to %s a response, give the protected request with --request HEX\n",
                a.op);
        return CLI_EXIT_USAGE;
    }
    if (is_request && a.request_hex) {
        fprintf(stderr, "edhoc-cli oscore: --request only applies to responses\n");
        return CLI_EXIT_USAGE;
    }

    struct oscore_context ctx;
    rc = load_context(a.context_path, &ctx);
    if (rc)
        return rc;

    struct oscore_binding b;
    long n;
    const char *step = a.op;
    if (protect && is_request) {
        if (a.have_seq && (rc = oscore_context_set_ssn(&ctx, a.seq)) != 0) {
            oscore_context_wipe(&ctx);
            return report_failure(&a, role, "setting the sequence number", rc, msg, (size_t)msg_len);
        }
        /* Without --seq the number comes from the context's durable record,
         * as for `coap`: bytes made here are made to be sent, and a second
         * run must not repeat the nonce (RFC 8613 Section 7.2). */
        struct cli_seq_store *store = NULL;
        if (!a.have_seq && (rc = reserve_from_store(&a, &ctx, &store)) != 0) {
            oscore_context_wipe(&ctx);
            return rc;
        }
        n = oscore_protect_request(&ctx, msg, (size_t)msg_len, out, sizeof out, &b);
        cli_seq_close(store);
        if (n >= 0 && a.have_seq)
            note_explicit_seq(&a, a.seq);
    } else if (protect) {
        /* The server first verifies the request it answers: that binds the
         * response to the request's kid and Partial IV. */
        n = oscore_unprotect_request(&ctx, req, (size_t)req_len, inner_req, sizeof inner_req, &b);
        /* Only the binding is needed: drop the decrypted request now. */
        edhoc_wipe(inner_req, sizeof inner_req);
        if (n < 0) {
            step = "verifying --request";
        } else {
            if (a.have_seq && (rc = oscore_context_set_ssn(&ctx, a.seq)) != 0) {
                oscore_context_wipe(&ctx);
                return report_failure(&a, role, "setting the sequence number", rc, msg,
                                      (size_t)msg_len);
            }
            n = oscore_protect_response(&ctx, &b, msg, (size_t)msg_len, a.have_seq, out,
                                        sizeof out);
        }
    } else if (is_request) {
        n = oscore_unprotect_request(&ctx, msg, (size_t)msg_len, out, sizeof out, &b);
    } else {
        n = oscore_binding_from_request(&b, req, (size_t)req_len);
        if (n < 0)
            step = "reading --request";
        else
            n = oscore_unprotect_response(&ctx, &b, msg, (size_t)msg_len, out, sizeof out);
    }
    oscore_context_wipe(&ctx);
    if (n < 0)
        return report_failure(&a, role, step, (int)n, msg, (size_t)msg_len);

    if (a.json) {
        printf("{\"operation\":");
        cli_json_string(stdout, a.op);
        printf(",\"role\":");
        cli_json_string(stdout, role);
        printf(",\"ok\":true,\"message\":");
        cli_json_hex(stdout, out, (size_t)n);
        json_decoded(stdout, out, (size_t)n);
        printf("}\n");
    } else {
        cli_hex_print(stdout, out, (size_t)n);
        printf("\n");
        if (a.verbose) {
            printf("%s %s (%ld bytes):\n", protect ? "protected" : "inner",
                   is_request ? "request" : "response", n);
            print_decoded(stdout, out, (size_t)n);
        }
    }
    return CLI_EXIT_OK;
}
