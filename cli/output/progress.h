/*
 * Progress of long runs (load, interop, bench, simulate --repeat) in one
 * style, and interrupted runs that still report.
 *
 * Progress: on a terminal, one line on standard error rewritten in place
 * (at most ten times a second) and erased at the end; not on a terminal,
 * nothing unless -v, then one plain line every few seconds; never with -q.
 *
 * Interruption: after cli_interrupt_catch(), SIGINT and SIGTERM set a flag
 * instead of killing the process; a command's loops check
 * cli_interrupted(), stop starting work, and print the summary of what
 * completed marked partial ("partial": true in JSON), then exit 130
 * (SIGINT) or 143 (SIGTERM) as a shell expects.
 */
#ifndef CLI_PROGRESS_H
#define CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct cli_progress {
    const char *label; /* "load", "interop", ... */
    bool tty;          /* rewrite a line in place */
    bool lines;        /* plain lines (-v and not a terminal) */
    bool shown;        /* a line is on screen */
    uint64_t last_ns;
};

/* verbose/quiet: the command's -v count and -q. */
void cli_progress_begin(struct cli_progress *pr, const char *label, int verbose, bool quiet);
/* Show where the run is (printf-style text after "label: "). Cheap when
 * called often: prints only when due. */
void cli_progress_update(struct cli_progress *pr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Erase the line (terminal); call before printing the result. */
void cli_progress_end(struct cli_progress *pr);

/* Catch SIGINT/SIGTERM (see above). */
void cli_interrupt_catch(void);
/* The signal received (SIGINT, SIGTERM), or 0. */
int cli_interrupted(void);
/* Exit code for a run cut short: 128 + the signal. */
int cli_interrupt_exit_code(void);

#endif
