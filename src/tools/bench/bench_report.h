/*
 * The benchmarks' results: how much effort a measurement takes, the
 * statistics of its samples, and result tables (rows of typed cells)
 * with the targets the measured values are checked against.
 *
 * Every benchmark fills bench_table rows; the program's renderers
 * (cli/output/bench_output.c: Markdown, JSON, CSV, SVG) know nothing about what
 * was measured, so every output shows the same numbers.
 */
#ifndef EDHOC_TOOLS_BENCH_REPORT_H
#define EDHOC_TOOLS_BENCH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/edhoc.h"
#include "tools.h"

/* ---- Effort ---- */

struct bench_effort {
    long repeat;      /* at least this many samples per measurement */
    double min_time;  /* and at least this many seconds per measurement */
    bool quick;       /* smaller batches, fewer configurations */
    long max_samples; /* hard cap per measurement (bounds memory and time) */
    double max_time;  /* hard cap in seconds per measurement */
    /* Non-zero once the run is to stop (SIGINT/SIGTERM in the program):
     * no more samples, the report holds what completed. NULL: never. */
    int (*interrupted)(void);
};

/* Defaults (full run) and --quick. */
void bench_effort_default(struct bench_effort *e);
void bench_effort_quick(struct bench_effort *e);

/* Whether another sample is needed after n samples taken in elapsed_s
 * (none after SIGINT/SIGTERM: the run stops and reports what completed). */
bool bench_effort_more(const struct bench_effort *e, long n, double elapsed_s);

/* min / median of a set of per-call times, in microseconds. */
struct bench_stat {
    double min_us;
    double median_us;
    long samples;
    long batch; /* calls per sample */
};

/* Sort v (n > 0 values, microseconds) in place and fill st. */
void bench_stat_from(double *v, long n, long batch, struct bench_stat *st);

/* The operation being timed: returns 0 or a negative error, which stops
 * the measurement. */
typedef int (*bench_fn)(void *ctx);

/* Time fn: calibrate a batch size so one sample is long enough for the
 * clock, then take samples per the effort. Returns 0 or fn's error. */
int bench_measure(const struct bench_effort *e, bench_fn fn, void *ctx, struct bench_stat *st);

/* ---- Tables ---- */

enum bench_col_kind {
    BENCH_COL_TEXT,  /* a label */
    BENCH_COL_INT,   /* an integer (sizes, counts) */
    BENCH_COL_NUM,   /* a number (microseconds, bytes) */
    BENCH_COL_RATIO, /* a dimensionless ratio */
    BENCH_COL_STAT,  /* min and median: "min / median" in Markdown, two fields elsewhere */
    BENCH_COL_LABEL, /* text for the charts only (a row's name built from other columns) */
};

struct bench_column {
    const char *key;   /* JSON / CSV name (CSV adds _min_us / _median_us for STAT) */
    const char *title; /* Markdown header */
    enum bench_col_kind kind;
    bool hidden; /* JSON and CSV only (chart series, details) */
};

struct bench_cell {
    char *text; /* TEXT (owned) */
    double num; /* INT, NUM, RATIO */
    struct bench_stat stat;
};

enum bench_chart_kind {
    BENCH_CHART_NONE = 0,
    BENCH_CHART_BARS,  /* one group of bars per row, one bar per y column */
    BENCH_CHART_LINES, /* x column on the x axis, one line per (group value, y column) */
};

#define BENCH_CHART_MAX_Y 4

struct bench_chart {
    enum bench_chart_kind kind;
    int label_cols[3]; /* BARS: text columns joined into the row label; -1 = unused */
    int x_col;         /* LINES */
    int group_col;     /* LINES: one colour per distinct value */
    /* LINES: a second column that also splits the lines (the crypto
     * implementation: one line per algorithm and library, not one line
     * through both libraries' points); index + 1, 0 for none. */
    int group_col2_plus1;
    int y_cols[BENCH_CHART_MAX_Y];
    size_t n_y;
    const char *y_title;
};

struct bench_table {
    char name[32];   /* JSON / CSV identifier */
    char title[128]; /* Markdown heading */
    char note[1024]; /* a line under the heading (units, method) */
    /* With no rows, the Markdown's line instead of the note and an empty
     * table ("": the note alone); JSON and CSV keep their shapes. */
    char empty[160];
    const struct bench_column *cols;
    size_t n_cols;
    struct bench_cell *cells; /* n_rows * n_cols */
    size_t n_rows, cap_rows;
    struct bench_chart chart;
};

/* A target the issue sets, checked by reading the measured value. */
struct bench_target {
    char id[64];    /* a word for scripts: "handshake_over_floor.m3.kid.s0" */
    char name[160]; /* what it is, in words (JSON "title") */
    double value;
    double limit; /* met when value <= limit (at_least: value >= limit) */
    bool at_least;
    char unit[16];
};

/* Whether the measured value meets the target. */
bool bench_target_met(const struct bench_target *g);

#define BENCH_MAX_TABLES  12
#define BENCH_MAX_TARGETS 24

struct bench_report {
    const char *command; /* "bench" or "load" */
    const char *mode;    /* crypto, handshake, oscore, all, contexts; load */
    bool partial;        /* stopped by SIGINT/SIGTERM: what completed */
    /* Where the benchmarks say how far they are (one line of text); may
     * be NULL. */
    void (*progress)(void *ctx, const char *text);
    void *progress_ctx;
    const char *implementation; /* crypto backend */
    char cpu[128];
    char kernel[128];
    struct bench_effort effort;
    struct bench_table *tables[BENCH_MAX_TABLES];
    size_t n_tables;
    struct bench_target targets[BENCH_MAX_TARGETS];
    size_t n_targets;
    char error[256]; /* why a benchmark failed (no program name) */
};

/* New empty table (NULL when out of memory); cols must outlive it. */
struct bench_table *bench_table_new(const char *name, const char *title,
                                    const struct bench_column *cols, size_t n_cols);
void bench_table_free(struct bench_table *t);
/* Append a zeroed row; returns its cells (NULL when out of memory). */
struct bench_cell *bench_table_add_row(struct bench_table *t);
/* The cell of column key in row (NULL for an unknown key). */
struct bench_cell *bench_row_cell(const struct bench_table *t, struct bench_cell *row,
                                  const char *key);
/* Setters by column key; silently ignore unknown keys (a programming
 * error the tests catch as a missing value). */
void bench_row_text(const struct bench_table *t, struct bench_cell *row, const char *key,
                    const char *text);
void bench_row_num(const struct bench_table *t, struct bench_cell *row, const char *key, double v);
void bench_row_stat(const struct bench_table *t, struct bench_cell *row, const char *key,
                    const struct bench_stat *st);

void bench_report_init(struct bench_report *r, const char *implementation,
                       const struct bench_effort *e);
/* Takes ownership of t (freed by bench_report_free); false when full. */
bool bench_report_add(struct bench_report *r, struct bench_table *t);
/* A target met when value <= limit; id: letters, digits, '_', '.', '-';
 * unit: "" when none. */
void bench_report_target(struct bench_report *r, const char *id, const char *name, double value,
                         double limit, const char *unit);
/* A target met when value >= limit. */
void bench_report_target_at_least(struct bench_report *r, const char *id, const char *name,
                                  double value, double limit, const char *unit);
/* Progress line of the running benchmark; nothing when r->progress is
 * NULL. */
void bench_progress(struct bench_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void bench_report_free(struct bench_report *r);
/* Why the run failed, in r->error. */
void bench_report_error(struct bench_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- The benchmarks ---- */

/* Whether the run is to stop (see bench_effort.interrupted). */
static inline bool bench_interrupted(const struct bench_effort *e)
{
    return e->interrupted && e->interrupted() != 0;
}

struct bench_handshake_opts {
    int suites[16];
    size_t n_suites; /* 0: suites 0 and 2 */
};

/* The two sides of an in-process handshake, as the caller built them:
 * the configs (the engine sets their ops member) and the credential
 * resolver with each side's context. */
struct bench_sides {
    struct edhoc_config *cfg_i, *cfg_r;
    edhoc_cred_resolver resolve;
    void *resolve_ctx_i, *resolve_ctx_r;
    void *handle; /* the caller's */
};

/* How the engines get credentials: the program's set-up of both sides
 * (credentials and trust are its business, not the benchmark's). */
struct bench_side_maker {
    /* Both sides with the built-in demo credentials for method / suite /
     * ID_CRED type, each with exactly the peer's credential configured.
     * 0, or a TOOLS_ERR_* status with why in error. */
    int (*open)(void *ctx, int method, int suite, int id_cred_type, struct bench_sides *out,
                char *error, size_t cap);
    void (*close)(void *ctx, struct bench_sides *sides);
    /* "kid", "x5t", ... for an ID_CRED type (labels of the rows). */
    const char *(*id_cred_name)(int type);
    void *ctx;
};

/* Each adds its tables (and targets) to r. Return 0 or a TOOLS_ERR_*
 * status with why in r->error (empty when the side maker said it). */
int bench_crypto_run(struct bench_report *r);
int bench_handshake_run(struct bench_report *r, const struct bench_handshake_opts *o,
                        const struct bench_side_maker *maker);
int bench_oscore_run(struct bench_report *r);
/* N established OSCORE contexts written to a state database and loaded by
 * the responder engine: time and resident memory. */
int bench_contexts_run(struct bench_report *r, long count);

/* The crypto floor of one in-process handshake (median microseconds of the
 * initiator's and the responder's crypto calls replayed alone), with the
 * sides maker gives. Returns 0 or a TOOLS_ERR_* status (why in error
 * when the handshake itself failed). */
int bench_handshake_floor(const struct bench_effort *e, const struct bench_side_maker *maker,
                          int method, int suite, int id_cred_type, double *initiator_us,
                          double *responder_us, char *error, size_t error_cap);

/* Microseconds between two tools_now_ns() readings. */
static inline double bench_us(uint64_t t0, uint64_t t1)
{
    return (double)(t1 - t0) / 1000.0;
}

#endif
