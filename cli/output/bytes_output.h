/* edhoc-cli bytes CAPTURE: printing the report (bytes_output.c). */
#ifndef CLI_BYTES_OUTPUT_H
#define CLI_BYTES_OUTPUT_H

#include <stdbool.h>

#include "bytes_capture.h"
#include "bytes_decrypt.h"
#include "edhoc/netacct.h"
#include "json_out.h"
#include "keylog_read.h"

/* --addr: the names and the IPHC address modes they stand for. */
extern const char *const bytes_addr_names[];
extern const enum edhoc_netacct_addr_mode bytes_addr_modes[];

/* The link model as JSON: its parameters as numbers and words, with the
 * library's description of it as a separate explanation (also for
 * --compare's report). */
json_t *bytes_link_json(const struct edhoc_netacct_link *l);

struct bytes_report {
    const char *path;
    const struct bytes_capture_run *run;
    struct edhoc_netacct_radio radio; /* --radio-profile */
    bool radio_set;                   /* else the link's built-in one */
    const struct keylog *keylog;      /* NULL: no --keylog */
    const struct bytes_decryption *dec;
};

void bytes_print_text(const struct bytes_report *r);
int bytes_print_json(const struct bytes_report *r);

#endif
