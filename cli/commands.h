/* Subcommands of edhoc-cli. Each takes the arguments after its name
 * (argv[0] is the subcommand) and returns the process exit code; each
 * declares its options in a cli_cmd_spec (options.h). */
#ifndef CLI_COMMANDS_H
#define CLI_COMMANDS_H

#include "options.h"

int cmd_simulate(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_oscore(int argc, char **argv);
int cmd_initiator(int argc, char **argv);
int cmd_responder(int argc, char **argv);
int cmd_coap(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_interop(int argc, char **argv);
int cmd_bytes(int argc, char **argv);

/* The option tables: parser, --help, `help CMD` and `help --options CMD`
 * all read them. */
#define CLI_SPEC_DECL extern const struct cli_cmd_spec
CLI_SPEC_DECL cli_spec_simulate;
CLI_SPEC_DECL cli_spec_keygen;
CLI_SPEC_DECL cli_spec_oscore;
CLI_SPEC_DECL cli_spec_initiator;
CLI_SPEC_DECL cli_spec_responder;
CLI_SPEC_DECL cli_spec_coap;
CLI_SPEC_DECL cli_spec_bench;
CLI_SPEC_DECL cli_spec_load;
CLI_SPEC_DECL cli_spec_interop;
CLI_SPEC_DECL cli_spec_bytes;

#endif
