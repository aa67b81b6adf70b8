/* edhoc-cli load: the state writer's figures and --vs-state-none
 * (bench_vs_state.c). */
#ifndef CLI_BENCH_VS_STATE_H
#define CLI_BENCH_VS_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "load.h"
#include "state_stats.h"

/* The figures file of the state writer of local process pid (next to the
 * database it holds open): its path in out, or false. */
bool state_stats_path_of(long pid, char *out, size_t cap);
/* The figures after `before` (the file is replaced every second), or
 * what is there after 1.5 s; false when unreadable. */
bool state_stats_fresh(const char *path, const struct cli_state_stats *before,
                       struct cli_state_stats *after);
/* What the writer did between two readings (known: the same writer). */
struct load_writer_delta state_writer_delta(const struct cli_state_stats *a,
                                            const struct cli_state_stats *b);
/* --vs-state-none URI2: argv without the words skip[] marks (that option
 * and --rounds), run against argv[uri_index] and against uri2, `rounds`
 * times each in alternating order; prints the table. Returns the exit
 * code. */
int load_vs_state_none(int argc, char **argv, int uri_index, const bool *skip, const char *uri2,
                       int rounds);

#endif
