/* Subcommands of edhoc-cli. Each takes the arguments after its name
 * (argv[0] is the subcommand) and returns the process exit code. */
#ifndef CLI_COMMANDS_H
#define CLI_COMMANDS_H

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

#endif
