/*
 * edhoc-cli simulate: printing what the engine (src/tools/simulate)
 * returned, with the per-layer table of the A.2 framing on the link the
 * command line chose.
 */
#ifndef CLI_SIMULATE_OUTPUT_H
#define CLI_SIMULATE_OUTPUT_H

#include <stdio.h>

#include "edhoc_args.h"
#include "exporter.h"
#include "json_out.h"
#include "net_report.h"
#include "simulate.h"

/* The EDHOC_Exporter values both sides derived (the program's own
 * derivations after the handshake). */
struct cli_sim_keys {
    struct cli_exports exports_i, exports_r;
    bool have_exports;
    bool exports_match;
};

struct cli_sim_report {
    const struct cli_edhoc_opts *opts;
    const struct cli_side *si, *sr;
    const struct simulate_result *result;
    const struct cli_sim_keys *keys;
    const struct cli_net_opts *net;
};

void cli_simulate_print_text(FILE *f, const struct cli_sim_report *rep);
/* 0, or -1 on a write error. */
int cli_simulate_print_json(FILE *f, const struct cli_sim_report *rep);

/* "0,2" for a suite list, in buf. */
const char *cli_sim_suite_list(const int *s, size_t n, char *buf, size_t cap);

#endif
