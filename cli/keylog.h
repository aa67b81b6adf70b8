/* --keylog DIR: the secrets that open captures decrypted, appended to
 * DIR/edhoc_secrets and DIR/oscore_contexts, the two tables of
 * Wireshark's EDHOC and OSCORE dissectors (docs/edhoc-cli.1, DECRYPTING
 * CAPTURES). */
#ifndef CLI_KEYLOG_H
#define CLI_KEYLOG_H

#include "edhoc/edhoc.h"

#include <stddef.h>

#define CLI_KEYLOG_EDHOC_FILE  "edhoc_secrets"
#define CLI_KEYLOG_OSCORE_FILE "oscore_contexts"

struct cli_keylog {
    int edhoc_fd, oscore_fd; /* -1: closed */
};

/* DIR is made 0700 if missing and must pass the rules of a directory of
 * secrets (src/pathcheck); both files are opened for appending, created
 * 0600 whatever the umask, never through a symbolic link. 0, or -1 with
 * a one-line message in why ("--keylog DIR/edhoc_secrets: ..."). */
int cli_keylog_open(struct cli_keylog *k, const char *dir, char *why, size_t cap);

/* One row each, written by a single write() so that rows of processes
 * sharing the files (responder workers) never interleave. 0, or -1 with
 * errno. The EDHOC row needs a complete log (edhoc_key_log_complete). */
int cli_keylog_write_edhoc(const struct cli_keylog *k, const struct edhoc_key_log *log);
int cli_keylog_write_oscore(const struct cli_keylog *k, const struct edhoc_oscore_params *p);

/* The responder's context p, written as the initiator writes it: the
 * rows of Wireshark's OSCORE table are the CoAP client's view (Sender ID:
 * the kid of the requests), so that either side's row opens the same
 * capture. */
int cli_keylog_write_oscore_responder(const struct cli_keylog *k,
                                      const struct edhoc_oscore_params *p);

void cli_keylog_close(struct cli_keylog *k);

#endif
