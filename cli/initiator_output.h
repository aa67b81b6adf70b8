/*
 * The initiator command's state as its files share it: cmd_initiator.c
 * (options, checks, the run), initiator_report.c (text and JSON reports)
 * and initiator_conf.c (--export-oscore-conf). The flow itself is the
 * client engine's (src/client/edhoc_client.h).
 */
#ifndef CLI_INITIATOR_OUTPUT_H
#define CLI_INITIATOR_OUTPUT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "edhoc/capture.h"
#include "edhoc_args.h"
#include "edhoc_client.h"
#include "exporter.h"
#include "keylog.h"
#include "net_report.h"
#include "util.h"

#define CLI_INITIATOR_MAX_REQUESTS EDHOC_CLIENT_MAX_ANSWERS

struct initiator {
    struct cli_edhoc_opts o;
    struct cli_uri uri;
    const char *requests[CLI_INITIATOR_MAX_REQUESTS];
    size_t n_requests;
    long timeout_ms;
    int verbose;
    bool quiet;
    long repeat;
    struct edhoc_client cl; /* framing, transport, datagram log */
    struct cli_side side;
    struct cli_net_opts net;
    struct edhoc_capture *capture;
    const char *export_conf;    /* --export-oscore-conf FILE */
    const char *keylog_dir;     /* --keylog DIR */
    struct cli_keylog keylog;   /* its two files, open while keylog_dir */
    struct edhoc_key_log klog;  /* the secrets of the handshake running */
    const char *state_dir_arg;  /* --state-dir */
    char seq_file[PATH_MAX];    /* FILE.seq */
    char state_dir[PATH_MAX];   /* "" with --state-dir none */
    struct cli_exports exports; /* --export: the requests, then their values */
    bool have_exports;          /* the values were computed */
};

/* Before anything is sent (a bad path must not cost a handshake): the
 * names, the state directory. Returns 0 or -1 with why. */
int cli_initiator_export_prepare(struct initiator *c, char *why, size_t cap);
/* The initiator's side of the context as a libcoap OSCORE conf in FILE
 * (write_file), and the sequence numbers the run used in FILE.seq and the
 * state directory. Returns 0 or -1 with why. */
int cli_initiator_export_conf(const struct initiator *c, struct edhoc_client_run *run,
                              bool write_file, char *why, size_t cap);
/* After the requests: --export-oscore-conf, or the numbers a printed
 * --export-secrets context used, recorded (a failure goes to run or, when
 * run failed already, to standard error). */
void cli_initiator_record_conf(const struct initiator *c, struct edhoc_client_run *run, bool hs_ok);
/* What --export-oscore-conf wrote and how to continue with it. */
void cli_initiator_print_conf(FILE *f, const struct initiator *c,
                              const struct edhoc_client_run *run);
/* "METHOD PATH [PAYLOAD]" of --request as a plain request (the
 * --payload-file payload when it gives none). Returns its length, or -1
 * with err. */
long cli_initiator_build_request(const char *spec, uint8_t *out, size_t cap, char *err,
                                 size_t errcap);
/* --payload-file FILE (- for standard input), at most 65536 bytes.
 * Returns 0, or -1 after printing why. */
int cli_initiator_read_payload_file(const char *path);
void cli_initiator_payload_free(void);
/* --keylog: the handshake's secrets once message_3 is made, then its
 * OSCORE context (the client engine calls these with the initiator). */
void cli_initiator_keylog_edhoc(void *user);
void cli_initiator_keylog_oscore(void *user, const struct edhoc_oscore_params *p);
void cli_initiator_print_text(const struct initiator *c, const struct edhoc_client_run *run);
void cli_initiator_print_json(const struct initiator *c, const struct edhoc_client_run *run);

#endif
