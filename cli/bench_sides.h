/* edhoc-cli bench and load: the program's side of the engines'
 * interfaces (src/tools/bench/bench_report.h). */
#ifndef CLI_BENCH_SIDES_H
#define CLI_BENCH_SIDES_H

#include "bench_report.h"

struct cli_progress;

/* Both sides of a handshake from the command line's credential set-up
 * (cli/edhoc_args.c) with the built-in demo credentials. */
extern const struct bench_side_maker cli_bench_sides;

/* Progress lines to progress (NULL: none) and SIGINT/SIGTERM
 * (cli/output/progress.h) as the report's interruption. */
void cli_bench_hooks(struct bench_report *r, struct cli_progress *progress);

#endif
