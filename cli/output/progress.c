/* Progress lines and interruption (see progress.h). */
#include "progress.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define TTY_INTERVAL_NS  100000000ull  /* 10 updates a second */
#define LINE_INTERVAL_NS 5000000000ull /* a plain line every 5 s */

void cli_progress_begin(struct cli_progress *pr, const char *label, int verbose, bool quiet)
{
    memset(pr, 0, sizeof *pr);
    pr->label = label;
    if (quiet)
        return;
    pr->tty = isatty(STDERR_FILENO) == 1;
    pr->lines = !pr->tty && verbose > 0;
    pr->last_ns = cli_now_ns();
}

void cli_progress_update(struct cli_progress *pr, const char *fmt, ...)
{
    if (!pr->tty && !pr->lines)
        return;
    uint64_t now = cli_now_ns();
    if (now - pr->last_ns < (pr->tty ? TTY_INTERVAL_NS : LINE_INTERVAL_NS))
        return;
    pr->last_ns = now;
    char text[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (pr->tty) {
        /* \033[K clears what a longer previous line left. */
        fprintf(stderr, "\r%s: %s\033[K", pr->label, text);
        pr->shown = true;
    } else {
        fprintf(stderr, "%s: %s\n", pr->label, text);
    }
    fflush(stderr);
}

void cli_progress_end(struct cli_progress *pr)
{
    if (pr->tty && pr->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    pr->shown = false;
}

static volatile sig_atomic_t caught_signal;

static void on_signal(int sig)
{
    caught_signal = sig;
}

void cli_interrupt_catch(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* No SA_RESTART: a blocking poll/recv returns EINTR and the loop sees
     * the flag at once. */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int cli_interrupted(void)
{
    return caught_signal;
}

int cli_interrupt_exit_code(void)
{
    return caught_signal ? 128 + caught_signal : 0;
}
