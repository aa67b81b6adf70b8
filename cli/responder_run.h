/* The responder's start-up once its command line is checked: paths made
 * absolute, the state, interop log and key log opened, credentials loaded,
 * the --workers supervisor started, the engine and the transport set up,
 * the pid and ready files written, then the serve loop until a signal
 * (cmd_responder.c parses and checks the options). */
#ifndef CLI_RESPONDER_RUN_H
#define CLI_RESPONDER_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <netdb.h>

#include "net_report.h"
#include "responder_creds.h"

#define MAX_LISTEN 8

/* The checked options; the arrays stay the caller's (the listen addresses
 * are rewritten in place for --workers). */
struct responder_run_config {
    struct responder *r;
    struct cli_net_opts *net;
    const char **listen_spec;
    char (*listen_addr)[NI_MAXHOST + 16];
    const char **listen;
    size_t n_listen;
    const char *const *static_paths;
    size_t n_static;
    const char *state_dir, *pidfile, *ready_file, *interop_dir, *keylog_dir;
    const char *fleet_store; /* --state postgresql://...: the fleet's store, or NULL */
    long interop_max;
    bool daemon, use_syslog, echo_m1, allow_unprotected, edhoc_only_suite;
    long amp_factor, pressure_rate;
    unsigned framings;
    int c_r_form;
    long max_contexts, context_lifetime_ms, max_pending, hs_timeout_ms, block_size, max_body,
        max_sessions, transfer_timeout_ms, workers;
    int verbosity;
};

/* Runs the responder to its end; returns the exit code (CLI_EXIT_*). */
int responder_run(const struct responder_run_config *cfg);

#endif
