/*
 * The benchmarks' shared pieces: effort, statistics of samples, timing
 * of a call, result tables and the report that holds them. Renderers are
 * the program's (they print); nothing here does.
 */
#include <math.h> /* isfinite */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_report.h"

/* ---- Effort and statistics ---- */

void bench_effort_default(struct bench_effort *e)
{
    e->repeat = 20;
    e->min_time = 0.1;
    e->quick = false;
    e->max_samples = 200000;
    e->max_time = 60.0;
    e->interrupted = NULL;
}

void bench_effort_quick(struct bench_effort *e)
{
    e->repeat = 5;
    e->min_time = 0.0005;
    e->quick = true;
    e->max_samples = 1000;
    e->max_time = 1.0;
    e->interrupted = NULL;
}

bool bench_effort_more(const struct bench_effort *e, long n, double elapsed_s)
{
    if (n < 1)
        return true;
    if (e->interrupted && e->interrupted())
        return false;
    if (n >= e->max_samples || elapsed_s >= e->max_time)
        return false;
    return n < e->repeat || elapsed_s < e->min_time;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void bench_stat_from(double *v, long n, long batch, struct bench_stat *st)
{
    qsort(v, (size_t)n, sizeof *v, compare_double);
    st->min_us = v[0];
    /* The lower median: a value that was actually measured. */
    st->median_us = v[(n - 1) / 2];
    st->samples = n;
    st->batch = batch;
}

/* A sample shorter than this is dominated by the clock reading itself. */
#define SAMPLE_TARGET_NS       20000.0
#define QUICK_SAMPLE_TARGET_NS 5000.0

int bench_measure(const struct bench_effort *e, bench_fn fn, void *ctx, struct bench_stat *st)
{
    /* Warm-up call (caches, lazy initialisation in the backend), then a
     * timed one for the batch size. */
    int rc = fn(ctx);
    if (rc)
        return rc;
    uint64_t t0 = tools_now_ns();
    rc = fn(ctx);
    uint64_t one = tools_now_ns() - t0;
    if (rc)
        return rc;
    double target = e->quick ? QUICK_SAMPLE_TARGET_NS : SAMPLE_TARGET_NS;
    long batch = one > 0 ? (long)(target / (double)one) + 1 : 1000;
    if (batch < 1)
        batch = 1;
    if (batch > 100000)
        batch = 100000;

    size_t cap = 256;
    long n = 0;
    double *v = malloc(cap * sizeof *v);
    if (!v)
        return -1;
    uint64_t start = tools_now_ns();
    while (bench_effort_more(e, n, (double)(tools_now_ns() - start) / 1e9)) {
        uint64_t a = tools_now_ns();
        for (long i = 0; i < batch; i++) {
            rc = fn(ctx);
            if (rc) {
                free(v);
                return rc;
            }
        }
        uint64_t b = tools_now_ns();
        if ((size_t)n == cap) {
            double *bigger = realloc(v, cap * 2 * sizeof *v);
            if (!bigger) {
                free(v);
                return -1;
            }
            v = bigger;
            cap *= 2;
        }
        v[n++] = bench_us(a, b) / (double)batch;
    }
    bench_stat_from(v, n, batch, st);
    free(v);
    return 0;
}

/* ---- Tables ---- */

struct bench_table *bench_table_new(const char *name, const char *title,
                                    const struct bench_column *cols, size_t n_cols)
{
    struct bench_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    snprintf(t->name, sizeof t->name, "%s", name);
    snprintf(t->title, sizeof t->title, "%s", title);
    t->cols = cols;
    t->n_cols = n_cols;
    return t;
}

void bench_table_free(struct bench_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
        free(t->cells[i].text);
    free(t->cells);
    free(t);
}

struct bench_cell *bench_table_add_row(struct bench_table *t)
{
    if (t->n_rows == t->cap_rows) {
        size_t cap = t->cap_rows ? t->cap_rows * 2 : 16;
        struct bench_cell *bigger = realloc(t->cells, cap * t->n_cols * sizeof *bigger);
        if (!bigger)
            return NULL;
        t->cells = bigger;
        t->cap_rows = cap;
    }
    struct bench_cell *row = &t->cells[t->n_rows * t->n_cols];
    memset(row, 0, t->n_cols * sizeof *row);
    t->n_rows++;
    return row;
}

static int column_index(const struct bench_table *t, const char *key)
{
    for (size_t i = 0; i < t->n_cols; i++)
        if (!strcmp(t->cols[i].key, key))
            return (int)i;
    return -1;
}

struct bench_cell *bench_row_cell(const struct bench_table *t, struct bench_cell *row,
                                  const char *key)
{
    int i = column_index(t, key);
    return i < 0 ? NULL : &row[i];
}

void bench_row_text(const struct bench_table *t, struct bench_cell *row, const char *key,
                    const char *text)
{
    struct bench_cell *c = bench_row_cell(t, row, key);
    if (c) {
        free(c->text);
        c->text = strdup(text);
    }
}

void bench_row_num(const struct bench_table *t, struct bench_cell *row, const char *key, double v)
{
    struct bench_cell *c = bench_row_cell(t, row, key);
    if (c)
        c->num = v;
}

void bench_row_stat(const struct bench_table *t, struct bench_cell *row, const char *key,
                    const struct bench_stat *st)
{
    struct bench_cell *c = bench_row_cell(t, row, key);
    if (c)
        c->stat = *st;
}

static void read_host(struct bench_report *r)
{
    snprintf(r->cpu, sizeof r->cpu, "unknown");
    snprintf(r->kernel, sizeof r->kernel, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "model name", 10)) {
                char *colon = strchr(line, ':');
                if (colon) {
                    colon++;
                    while (*colon == ' ' || *colon == '\t')
                        colon++;
                    colon[strcspn(colon, "\n")] = '\0';
                    snprintf(r->cpu, sizeof r->cpu, "%s", colon);
                }
                break;
            }
        }
        fclose(f);
    }
    f = fopen("/proc/sys/kernel/osrelease", "r");
    if (f) {
        char line[96];
        if (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(r->kernel, sizeof r->kernel, "Linux %s", line);
        }
        fclose(f);
    }
}

void bench_report_init(struct bench_report *r, const char *implementation,
                       const struct bench_effort *e)
{
    memset(r, 0, sizeof *r);
    r->implementation = implementation;
    r->effort = *e;
    read_host(r);
}

bool bench_report_add(struct bench_report *r, struct bench_table *t)
{
    if (r->n_tables >= BENCH_MAX_TABLES) {
        bench_table_free(t);
        return false;
    }
    r->tables[r->n_tables++] = t;
    return true;
}

void bench_report_target(struct bench_report *r, const char *id, const char *name, double value,
                         double limit, const char *unit)
{
    if (r->n_targets >= BENCH_MAX_TARGETS)
        return;
    struct bench_target *g = &r->targets[r->n_targets++];
    snprintf(g->id, sizeof g->id, "%s", id);
    snprintf(g->name, sizeof g->name, "%s", name);
    g->value = value;
    g->limit = limit;
    snprintf(g->unit, sizeof g->unit, "%s", unit ? unit : "");
}

void bench_report_target_at_least(struct bench_report *r, const char *id, const char *name,
                                  double value, double limit, const char *unit)
{
    bench_report_target(r, id, name, value, limit, unit);
    if (r->n_targets && !strcmp(r->targets[r->n_targets - 1].id, id))
        r->targets[r->n_targets - 1].at_least = true;
}

void bench_progress(struct bench_report *r, const char *fmt, ...)
{
    if (!r->progress)
        return;
    char text[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    r->progress(r->progress_ctx, text);
}

bool bench_target_met(const struct bench_target *g)
{
    if (!isfinite(g->value))
        return false;
    return g->at_least ? g->value >= g->limit : g->value <= g->limit;
}

void bench_report_free(struct bench_report *r)
{
    for (size_t i = 0; i < r->n_tables; i++)
        bench_table_free(r->tables[i]);
    r->n_tables = 0;
}

/* ---- Markdown ---- */
void bench_report_error(struct bench_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
}
