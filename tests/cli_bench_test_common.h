/* What the end-to-end tests of `edhoc-cli bench` and `edhoc-cli load`
 * share (test_cli_bench.c, test_cli_bench_load.c): the group's working
 * directory, reading the Markdown tables, commands run in the background
 * and stopped by a signal. */
#ifndef CLI_BENCH_TEST_COMMON_H
#define CLI_BENCH_TEST_COMMON_H

#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "edhoc/edhoc.h"
#include "edhoc/oscore.h"
#include "net_test_util.h"
#include "vectors.h"

static char workdir[256];

static inline bool have_python(void)
{
    return system("python3 -c pass >/dev/null 2>&1") == 0;
}

/* ---- Markdown tables ---- */

#define MAX_CELLS 24

/* Split one Markdown table row "| a | b |" into trimmed cells (in place
 * in buf). Returns the cell count, 0 when the line is not a row. */
static inline int md_cells(const char *line, char *buf, size_t cap, char **cells)
{
    size_t len = strcspn(line, "\n");
    if (len == 0 || line[0] != '|' || len >= cap)
        return 0;
    memcpy(buf, line, len);
    buf[len] = '\0';
    int n = 0;
    char *p = buf + 1;
    while (*p && n < MAX_CELLS) {
        char *bar = strchr(p, '|');
        if (!bar)
            break;
        *bar = '\0';
        while (*p == ' ')
            p++;
        char *end = bar;
        while (end > p && end[-1] == ' ')
            *--end = '\0';
        cells[n++] = p;
        p = bar + 1;
    }
    return n;
}

/* A numeric cell: "12.5", or "min / median" with min <= median. */
static inline void assert_positive_cell(const char *cell, const char *context)
{
    char *end;
    double a = strtod(cell, &end);
    if (end == cell || !isfinite(a) || !(a > 0))
        fail_msg("%s: cell '%s' is not a positive number", context, cell);
    if (*end == '\0')
        return;
    if (strncmp(end, " / ", 3) != 0)
        fail_msg("%s: cell '%s' has trailing text", context, cell);
    const char *rest = end + 3;
    double b = strtod(rest, &end);
    if (end == rest || *end || !isfinite(b) || !(b > 0))
        fail_msg("%s: cell '%s': median is not a positive number", context, cell);
    if (a > b)
        fail_msg("%s: cell '%s': min above median", context, cell);
}

/* The data row of the table under heading `### title` whose cells idx[k]
 * are key[k] (idx NULL: the first nkeys cells); splits it into cells
 * (returns their count), or 0. */
static inline int md_find_row_at(const char *text, const char *title, const int *idx,
                                 const char *const *key, int nkeys, char *buf, size_t cap,
                                 char **cells)
{
    char heading[160];
    snprintf(heading, sizeof heading, "\n### %s\n", title);
    const char *p = strstr(text, heading);
    if (!p)
        return 0;
    p += strlen(heading);
    const char *stop = strstr(p, "\n### ");
    for (const char *line = p; line && *line && (!stop || line < stop);) {
        int n = md_cells(line, buf, cap, cells);
        if (n > 0) {
            bool match = true;
            for (int k = 0; k < nkeys && match; k++) {
                int at = idx ? idx[k] : k;
                match = at < n && !strcmp(cells[at], key[k]);
            }
            if (match)
                return n;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return 0;
}

static inline int md_find_row(const char *text, const char *title, const char *const *key,
                              int nkeys, char *buf, size_t cap, char **cells)
{
    return md_find_row_at(text, title, NULL, key, nkeys, buf, cap, cells);
}

/* Rows of the table under `### title` (excluding header and separator). */
static inline int md_count_rows(const char *text, const char *title)
{
    char heading[160], buf[2048];
    char *cells[MAX_CELLS];
    snprintf(heading, sizeof heading, "\n### %s\n", title);
    const char *p = strstr(text, heading);
    if (!p)
        return -1;
    p += strlen(heading);
    const char *stop = strstr(p, "\n### ");
    int rows = 0;
    for (const char *line = p; line && *line && (!stop || line < stop);) {
        if (md_cells(line, buf, sizeof buf, cells) > 0)
            rows++;
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return rows - 2; /* header and |---| line */
}

/* Check row key has n_expect cells and cells first..last are positive. */
static inline void check_row(const char *out, const char *title, const char *const *key, int nkeys,
                             int n_expect, int first, int last)
{
    char buf[2048], ctx[200];
    char *cells[MAX_CELLS];
    int n = md_find_row(out, title, key, nkeys, buf, sizeof buf, cells);
    snprintf(ctx, sizeof ctx, "%s: row %s %s %s", title, key[0], nkeys > 1 ? key[1] : "",
             nkeys > 2 ? key[2] : "");
    if (n == 0)
        fail_msg("%s missing", ctx);
    assert_int_equal(n, n_expect);
    for (int i = first; i <= last; i++)
        assert_positive_cell(cells[i], ctx);
}

/* Not inlined: GCC 12 at -O2/-O3 otherwise takes the returned text for a
 * pointer to this function's local variable (-Wdangling-pointer). */
__attribute__((noinline)) static char *run_ok(const char *args)
{
    char *out;
    int rc = run_cli(args, false, &out);
    if (rc != 0)
        fail_msg("edhoc-cli %s: exit %d\n%s", args, rc, out);
    return out;
}

/* ---- Interrupted runs, and runs where nothing answered ---- */

struct bg {
    pid_t pid;
    char out[512], err[512];
};

/* `edhoc-cli ARGS` in the background (environment: env, e.g. "TMPDIR=x",
 * or ""), standard output and error into files of the work directory. */
static inline void bg_start(struct bg *b, const char *env, const char *args)
{
    static int n;
    n++;
    snprintf(b->out, sizeof b->out, "%s/bg%d.out", workdir, n);
    snprintf(b->err, sizeof b->err, "%s/bg%d.err", workdir, n);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec env %s \"${EDHOC_CLI:-edhoc-cli}\" %s >'%s' 2>'%s'", env, args,
             b->out, b->err);
    b->pid = fork();
    assert_true(b->pid >= 0);
    if (b->pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
}

/* Wait (at most timeout_ms) until path holds needle. */
static inline bool bg_wait_text(const char *path, const char *needle, unsigned timeout_ms)
{
    uint64_t end = net_now_ms() + timeout_ms;
    do {
        char *t = net_read_file(path);
        bool found = t && strstr(t, needle);
        free(t);
        if (found)
            return true;
        net_sleep_ms(50);
    } while (net_now_ms() < end);
    return false;
}

/* Send sig and wait for the exit status (128 + a signal that killed it);
 * SIGKILL after 30 s. */
static inline int bg_stop(struct bg *b, int sig)
{
    kill(b->pid, sig);
    int st = 0;
    uint64_t end = net_now_ms() + 30000;
    pid_t r;
    while ((r = waitpid(b->pid, &st, WNOHANG)) == 0 && net_now_ms() < end)
        net_sleep_ms(20);
    if (r == 0) {
        kill(b->pid, SIGKILL);
        waitpid(b->pid, &st, 0);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static inline int setup(void **state)
{
    (void)state;
    snprintf(workdir, sizeof workdir, "/tmp/edhoc-bench-test-XXXXXX");
    return mkdtemp(workdir) ? 0 : -1;
}

static inline int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", workdir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
