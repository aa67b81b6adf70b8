/* edhoc-cli: EDHOC (RFC 9528) and OSCORE (RFC 8613) from the command line. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "util.h"
#include "version.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const struct cli_cmd_spec *spec;
};

static const struct command commands[] = {
    {"simulate", cmd_simulate, "run initiator and responder in one process and report the exchange",
     &cli_spec_simulate},
    {"keygen", cmd_keygen, "create a credential (CCS or X.509) and its private key",
     &cli_spec_keygen},
    {"oscore", cmd_oscore, "protect or unprotect one CoAP message with an OSCORE context",
     &cli_spec_oscore},
    {"initiator", cmd_initiator,
     "run EDHOC against a CoAP peer, then send OSCORE-protected requests", &cli_spec_initiator},
    {"responder", cmd_responder, "serve /.well-known/edhoc and OSCORE-protected resources (daemon)",
     &cli_spec_responder},
    {"coap", cmd_coap, "send one CoAP request, plain or with a static OSCORE context",
     &cli_spec_coap},
    {"bytes", cmd_bytes, "bytes over the air per layer, from a capture file", &cli_spec_bytes},
    {"bench", cmd_bench, "benchmark crypto, handshakes and OSCORE on this host", &cli_spec_bench},
    {"load", cmd_load, "load-test a responder: many initiators in one process", &cli_spec_load},
    {"interop", cmd_interop,
     "test matrix against a device: every method, suite, credential type, framing",
     &cli_spec_interop},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: edhoc-cli COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'edhoc-cli COMMAND --help' (or 'edhoc-cli help COMMAND') lists a command's "
                 "options;\n'edhoc-cli --version' prints the version.\n");
}

static int run(int argc, char **argv);

int main(int argc, char **argv)
{
    cli_opt_version_print = cli_print_version;
    const char *names[sizeof commands / sizeof commands[0] + 2];
    size_t n_names = 0;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        names[n_names++] = commands[i].name;
    names[n_names++] = "help";
    names[n_names] = NULL;
    /* Every command takes the common options, so those written before
     * the command mean the same after its name (cli_opt_leading). */
    int command = cli_opt_leading(argc, argv, names);
    if (command < 0)
        return CLI_EXIT_USAGE;
    if (command == 1)
        return run(argc, argv);
    if (command >= argc) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *word = argv[command];
    bool is_command = false;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        is_command = is_command || !strcmp(word, commands[i].name);
    if (!is_command) {
        /* help, --help, --version or an unknown word: -v, -q and --crypto
         * change nothing there. */
        return run(argc - (command - 1), argv + (command - 1));
    }
    /* `bench load` is `load`: its options go after both words. */
    int words =
        !strcmp(word, "bench") && command + 1 < argc && !strcmp(argv[command + 1], "load") ? 2 : 1;
    char **moved = calloc((size_t)argc + 1, sizeof *moved);
    if (!moved) {
        fprintf(stderr, "edhoc-cli: out of memory\n");
        return CLI_EXIT_USAGE;
    }
    cli_opt_move_leading(argc, argv, command, words, moved);
    int rc = run(argc, moved);
    free(moved);
    return rc;
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "help") && argc >= 3) {
        /* edhoc-cli help CMD: the command's own --help; help --options CMD:
         * one line per option, for the man page check. */
        bool list = !strcmp(argv[2], "--options");
        const char *name = list ? (argc >= 4 ? argv[3] : "") : argv[2];
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
            if (!strcmp(name, commands[i].name)) {
                if (list)
                    cli_opt_print_list(commands[i].spec, stdout);
                else
                    cli_opt_print_help(commands[i].spec, stdout);
                return 0;
            }
        }
        fprintf(stderr, "edhoc-cli help: unknown command '%s'\n", name);
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        cli_print_version(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "edhoc-cli: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
