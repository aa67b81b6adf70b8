/*
 * The responder's bytes per layer of each handshake (the per-handshake
 * log line's datagrams and bytes, held until the response is about to
 * leave), its --pcap capture and the interop log's datagrams: the
 * transport's datagram and presend hooks.
 */
#ifndef CLI_RESPONDER_ACCT_H
#define CLI_RESPONDER_ACCT_H

#include "net_report.h"

struct interop_log;
struct responder_acct;

/* Opens the --pcap capture of net (if any) and installs the transport's
 * hooks. Returns 0, or a CLI exit code (the reason printed). */
int responder_acct_open(const struct cli_net_opts *net, struct interop_log *ilog,
                        struct responder_acct **out);
/* The engine's log callback (edhoc_server_config.log, user the account). */
void responder_acct_log(void *user, int level, const char *line);
/* Prints the lines held, with what their peers sent and got so far. */
void responder_acct_flush(struct responder_acct *a);
/* Uninstalls the hooks, closes the capture, frees a (NULL: nothing). */
void responder_acct_close(struct responder_acct *a);

#endif
