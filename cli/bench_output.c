/*
 * edhoc-cli bench: measurement statistics and the table renderers
 * (Markdown, JSON, CSV, SVG).
 */
#include <math.h> /* isfinite, INFINITY only: the CLI does not link libm */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench_output.h"
#include "util.h"

/* ---- Small numeric helpers (no libm) ---- */

static double abs_double(double v)
{
    return v < 0 ? -v : v;
}

/* Natural logarithm for x > 0: scale into [1, 2), then the atanh series. */
static double ln_double(double x)
{
    double k = 0;
    while (x >= 2) {
        x /= 2;
        k++;
    }
    while (x < 1) {
        x *= 2;
        k--;
    }
    double y = (x - 1) / (x + 1), y2 = y * y, term = y, sum = 0;
    for (int n = 1; n < 40; n += 2) {
        sum += term / n;
        term *= y2;
    }
    return 2 * sum + k * 0.69314718055994530942;
}

static double log10_double(double x)
{
    return ln_double(x) / 2.30258509299404568402;
}

/* ---- Effort and statistics ---- */

void bench_effort_default(struct bench_effort *e)
{
    e->repeat = 20;
    e->min_time = 0.1;
    e->quick = false;
    e->max_samples = 200000;
    e->max_time = 60.0;
}

void bench_effort_quick(struct bench_effort *e)
{
    e->repeat = 5;
    e->min_time = 0.0005;
    e->quick = true;
    e->max_samples = 1000;
    e->max_time = 1.0;
}

bool bench_effort_more(const struct bench_effort *e, long n, double elapsed_s)
{
    if (n < 1)
        return true;
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
#define SAMPLE_TARGET_NS 20000.0
#define QUICK_SAMPLE_TARGET_NS 5000.0

int bench_measure(const struct bench_effort *e, bench_fn fn, void *ctx, struct bench_stat *st)
{
    /* Warm-up call (caches, lazy initialisation in the backend), then a
     * timed one for the batch size. */
    int rc = fn(ctx);
    if (rc)
        return rc;
    uint64_t t0 = cli_now_ns();
    rc = fn(ctx);
    uint64_t one = cli_now_ns() - t0;
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
    uint64_t start = cli_now_ns();
    while (bench_effort_more(e, n, (double)(cli_now_ns() - start) / 1e9)) {
        uint64_t a = cli_now_ns();
        for (long i = 0; i < batch; i++) {
            rc = fn(ctx);
            if (rc) {
                free(v);
                return rc;
            }
        }
        uint64_t b = cli_now_ns();
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

void bench_row_num(const struct bench_table *t, struct bench_cell *row, const char *key,
                   double v)
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

void bench_report_target(struct bench_report *r, const char *name, double value, double limit,
                         const char *unit)
{
    if (r->n_targets >= BENCH_MAX_TARGETS)
        return;
    struct bench_target *g = &r->targets[r->n_targets++];
    snprintf(g->name, sizeof g->name, "%s", name);
    g->value = value;
    g->limit = limit;
    snprintf(g->unit, sizeof g->unit, "%s", unit ? unit : "");
}

void bench_report_target_at_least(struct bench_report *r, const char *name, double value,
                                  double limit, const char *unit)
{
    bench_report_target(r, name, value, limit, unit);
    if (r->n_targets && !strcmp(r->targets[r->n_targets - 1].name, name))
        r->targets[r->n_targets - 1].at_least = true;
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

static const char *fmt_num(double v, char *buf, size_t cap)
{
    if (!isfinite(v))
        snprintf(buf, cap, "-");
    else if (abs_double(v) >= 1000)
        snprintf(buf, cap, "%.0f", v);
    else if (abs_double(v) >= 10)
        snprintf(buf, cap, "%.1f", v);
    else if (abs_double(v) >= 0.1 || v == 0)
        snprintf(buf, cap, "%.2f", v);
    else
        snprintf(buf, cap, "%.2g", v); /* small values keep two digits */
    return buf;
}

static void md_cell(FILE *f, const struct bench_column *c, const struct bench_cell *v)
{
    char a[32], b[32];
    switch (c->kind) {
    case BENCH_COL_TEXT:
        for (const char *s = v->text ? v->text : ""; *s; s++) {
            if (*s == '|')
                fputs("\\|", f);
            else
                fputc(*s, f);
        }
        break;
    case BENCH_COL_INT:
        /* An unknown value (NaN) is a dash, never "nan". */
        if (isfinite(v->num))
            fprintf(f, "%.0f", v->num);
        else
            fputs("-", f);
        break;
    case BENCH_COL_NUM:
        fputs(fmt_num(v->num, a, sizeof a), f);
        break;
    case BENCH_COL_RATIO:
        if (isfinite(v->num))
            fprintf(f, "%.2f", v->num);
        else
            fputs("-", f);
        break;
    case BENCH_COL_STAT:
        fprintf(f, "%s / %s", fmt_num(v->stat.min_us, a, sizeof a),
                fmt_num(v->stat.median_us, b, sizeof b));
        break;
    }
}

static void md_table(FILE *f, const struct bench_table *t)
{
    fprintf(f, "### %s\n\n", t->title);
    if (t->note[0])
        fprintf(f, "%s\n\n", t->note);
    fputc('|', f);
    for (size_t i = 0; i < t->n_cols; i++)
        if (!t->cols[i].hidden)
            fprintf(f, " %s |", t->cols[i].title);
    fputs("\n|", f);
    for (size_t i = 0; i < t->n_cols; i++)
        if (!t->cols[i].hidden)
            fputs(t->cols[i].kind == BENCH_COL_TEXT ? "---|" : "---:|", f);
    fputc('\n', f);
    for (size_t r = 0; r < t->n_rows; r++) {
        const struct bench_cell *row = &t->cells[r * t->n_cols];
        fputc('|', f);
        for (size_t i = 0; i < t->n_cols; i++) {
            if (t->cols[i].hidden)
                continue;
            fputc(' ', f);
            md_cell(f, &t->cols[i], &row[i]);
            fputs(" |", f);
        }
        fputc('\n', f);
    }
    fputc('\n', f);
}

void bench_print_markdown(FILE *f, const struct bench_report *r)
{
    fprintf(f, "## edhoc-cli %s benchmarks\n\n", EDHOC_CLI_VERSION);
    fprintf(f, "Host: %s, %s. Crypto: %s.", r->cpu, r->kernel, r->implementation);
    if (r->effort.repeat > 0)
        fprintf(f, " Effort: at least %ld samples and %.3g s per measurement%s.", r->effort.repeat,
                r->effort.min_time, r->effort.quick ? " (--quick: indicative only)" : "");
    fprintf(f, "\n\n");
    for (size_t i = 0; i < r->n_tables; i++)
        md_table(f, r->tables[i]);
    if (r->n_targets) {
        fprintf(f, "### Targets\n\n| Target | Measured | Limit | Met |\n|---|---:|---:|---|\n");
        for (size_t i = 0; i < r->n_targets; i++) {
            const struct bench_target *g = &r->targets[i];
            char a[32], b[32];
            bool whole = !strcmp(g->unit, "bytes");
            if (whole) {
                snprintf(a, sizeof a, "%.0f", g->value);
                snprintf(b, sizeof b, "%.0f", g->limit);
            } else {
                fmt_num(g->value, a, sizeof a);
                snprintf(b, sizeof b, "%.2f", g->limit);
            }
            fprintf(f, "| %s | %s%s%s | %s %s%s%s | %s |\n", g->name, a,
                    g->unit[0] ? " " : "", g->unit, g->at_least ? "at least" : "at most", b,
                    g->unit[0] ? " " : "", g->unit,
                    bench_target_met(g) ? "yes" : "**no**");
        }
        fputc('\n', f);
    }
}

/* ---- JSON ---- */

static void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static const char *kind_name(enum bench_col_kind k)
{
    switch (k) {
    case BENCH_COL_TEXT: return "text";
    case BENCH_COL_INT: return "int";
    case BENCH_COL_NUM: return "number";
    case BENCH_COL_RATIO: return "ratio";
    case BENCH_COL_STAT: return "stat";
    }
    return "unknown";
}

static void json_table(FILE *f, const struct bench_table *t)
{
    fprintf(f, "    {\n      \"name\": ");
    cli_json_string(f, t->name);
    fprintf(f, ",\n      \"title\": ");
    cli_json_string(f, t->title);
    fprintf(f, ",\n      \"note\": ");
    cli_json_string(f, t->note);
    fprintf(f, ",\n      \"columns\": [");
    for (size_t i = 0; i < t->n_cols; i++) {
        fprintf(f, "%s{\"key\": ", i ? ", " : "");
        cli_json_string(f, t->cols[i].key);
        fprintf(f, ", \"title\": ");
        cli_json_string(f, t->cols[i].title);
        fprintf(f, ", \"kind\": \"%s\"}", kind_name(t->cols[i].kind));
    }
    fprintf(f, "],\n      \"rows\": [");
    for (size_t r = 0; r < t->n_rows; r++) {
        const struct bench_cell *row = &t->cells[r * t->n_cols];
        fprintf(f, "%s\n        {", r ? "," : "");
        for (size_t i = 0; i < t->n_cols; i++) {
            fprintf(f, "%s", i ? ", " : "");
            cli_json_string(f, t->cols[i].key);
            fputs(": ", f);
            switch (t->cols[i].kind) {
            case BENCH_COL_TEXT:
                cli_json_string(f, row[i].text ? row[i].text : "");
                break;
            case BENCH_COL_INT:
                if (isfinite(row[i].num))
                    fprintf(f, "%.0f", row[i].num);
                else
                    fputs("null", f); /* JSON has no NaN */
                break;
            case BENCH_COL_NUM:
            case BENCH_COL_RATIO:
                json_num(f, row[i].num);
                break;
            case BENCH_COL_STAT:
                fputs("{\"min_us\": ", f);
                json_num(f, row[i].stat.min_us);
                fputs(", \"median_us\": ", f);
                json_num(f, row[i].stat.median_us);
                fprintf(f, ", \"samples\": %ld, \"batch\": %ld}", row[i].stat.samples,
                        row[i].stat.batch);
                break;
            }
        }
        fputc('}', f);
    }
    fprintf(f, "\n      ]\n    }");
}

void bench_print_json(FILE *f, const struct bench_report *r)
{
    fprintf(f, "{\n  \"tool\": \"edhoc-cli bench\",\n  \"version\": \"%s\",\n", EDHOC_CLI_VERSION);
    fprintf(f, "  \"implementation\": ");
    cli_json_string(f, r->implementation);
    fprintf(f, ",\n  \"host\": {\"cpu\": ");
    cli_json_string(f, r->cpu);
    fprintf(f, ", \"kernel\": ");
    cli_json_string(f, r->kernel);
    fprintf(f, "},\n  \"effort\": {\"repeat\": %ld, \"min_time_s\": ", r->effort.repeat);
    json_num(f, r->effort.min_time);
    fprintf(f, ", \"quick\": %s},\n  \"tables\": [\n", r->effort.quick ? "true" : "false");
    for (size_t i = 0; i < r->n_tables; i++) {
        json_table(f, r->tables[i]);
        fputs(i + 1 < r->n_tables ? ",\n" : "\n", f);
    }
    fprintf(f, "  ],\n  \"targets\": [");
    for (size_t i = 0; i < r->n_targets; i++) {
        const struct bench_target *g = &r->targets[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        cli_json_string(f, g->name);
        fputs(", \"value\": ", f);
        json_num(f, g->value);
        fputs(", \"limit\": ", f);
        json_num(f, g->limit);
        fputs(", \"unit\": ", f);
        cli_json_string(f, g->unit);
        fprintf(f, ", \"kind\": \"%s\", \"met\": %s}", g->at_least ? "at_least" : "at_most",
                bench_target_met(g) ? "true" : "false");
    }
    fprintf(f, "%s]\n}\n", r->n_targets ? "\n  " : "");
}

/* ---- CSV ---- */

static void csv_text(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
}

void bench_print_csv(FILE *f, const struct bench_report *r)
{
    for (size_t ti = 0; ti < r->n_tables; ti++) {
        const struct bench_table *t = r->tables[ti];
        if (ti)
            fputc('\n', f);
        fputs("table", f);
        for (size_t i = 0; i < t->n_cols; i++) {
            if (t->cols[i].kind == BENCH_COL_STAT)
                fprintf(f, ",%s_min_us,%s_median_us", t->cols[i].key, t->cols[i].key);
            else
                fprintf(f, ",%s", t->cols[i].key);
        }
        fputc('\n', f);
        for (size_t rr = 0; rr < t->n_rows; rr++) {
            const struct bench_cell *row = &t->cells[rr * t->n_cols];
            csv_text(f, t->name);
            for (size_t i = 0; i < t->n_cols; i++) {
                fputc(',', f);
                switch (t->cols[i].kind) {
                case BENCH_COL_TEXT:
                    csv_text(f, row[i].text ? row[i].text : "");
                    break;
                case BENCH_COL_INT:
                    if (isfinite(row[i].num))
                        fprintf(f, "%.0f", row[i].num);
                    break;
                case BENCH_COL_NUM:
                case BENCH_COL_RATIO:
                    csv_num(f, row[i].num);
                    break;
                case BENCH_COL_STAT:
                    csv_num(f, row[i].stat.min_us);
                    fputc(',', f);
                    csv_num(f, row[i].stat.median_us);
                    break;
                }
            }
            fputc('\n', f);
        }
    }
}

/* ---- SVG ---- */

#define SVG_WIDTH 960
#define SVG_MARGIN 20
#define BAR_LABEL_W 250
#define BAR_H 13
#define LINE_PLOT_H 320
#define LINE_PLOT_LEFT 80
#define LINE_PLOT_RIGHT 250 /* room for the legend */

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define PALETTE_N (sizeof palette / sizeof palette[0])
static const char *const dashes[] = {"", "6,4", "2,3", "10,3,2,3"};

static void svg_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, f);
        }
    }
}

/* The value a chart plots for a cell: the median for STAT columns. */
static double plot_value(const struct bench_table *t, size_t row, int col)
{
    const struct bench_cell *c = &t->cells[row * t->n_cols + (size_t)col];
    double v = t->cols[col].kind == BENCH_COL_STAT ? c->stat.median_us : c->num;
    return isfinite(v) && v > 0 ? v : 0;
}

static const char *cell_text(const struct bench_table *t, size_t row, int col, char *buf,
                             size_t cap)
{
    const struct bench_cell *c = &t->cells[row * t->n_cols + (size_t)col];
    if (t->cols[col].kind == BENCH_COL_TEXT)
        return c->text ? c->text : "";
    snprintf(buf, cap, "%.0f", c->num);
    return buf;
}

/* A round upper bound for an axis. */
static double nice_max(double v)
{
    if (v <= 0)
        return 1;
    double p = 1;
    while (p * 10 <= v)
        p *= 10;
    while (p > v)
        p /= 10;
    for (int m = 1; m <= 10; m++) {
        if (m * p >= v)
            return m * p;
    }
    return 10 * p;
}

static int bars_height(const struct bench_table *t)
{
    return 50 + (int)t->n_rows * ((int)t->chart.n_y * BAR_H + 10) + 30;
}

static int lines_height(void)
{
    return 50 + LINE_PLOT_H + 50;
}

static int chart_height(const struct bench_table *t)
{
    return t->chart.kind == BENCH_CHART_BARS ? bars_height(t) : lines_height();
}

static void svg_bars(FILE *f, const struct bench_table *t, int y0)
{
    const struct bench_chart *ch = &t->chart;
    int plot_x = SVG_MARGIN + BAR_LABEL_W, plot_w = SVG_WIDTH - plot_x - 120;
    double max = 0;
    for (size_t r = 0; r < t->n_rows; r++)
        for (size_t k = 0; k < ch->n_y; k++)
            if (plot_value(t, r, ch->y_cols[k]) > max)
                max = plot_value(t, r, ch->y_cols[k]);
    max = nice_max(max);

    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"15\" font-weight=\"bold\">", SVG_MARGIN, y0 + 20);
    svg_text(f, t->title);
    fprintf(f, "</text>\n");
    /* legend */
    int lx = plot_x;
    for (size_t k = 0; k < ch->n_y; k++) {
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>", lx, y0 + 30,
                palette[k % PALETTE_N]);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">", lx + 16, y0 + 40);
        svg_text(f, t->cols[ch->y_cols[k]].title);
        fprintf(f, "</text>\n");
        lx += 200;
    }
    int y = y0 + 55;
    for (size_t r = 0; r < t->n_rows; r++) {
        char label[160] = "", buf[32];
        size_t off = 0;
        for (int k = 0; k < 3; k++) {
            if (ch->label_cols[k] < 0)
                continue;
            off += (size_t)snprintf(label + off, sizeof label - off, "%s%s", off ? ", " : "",
                                    cell_text(t, r, ch->label_cols[k], buf, sizeof buf));
            if (off >= sizeof label)
                break;
        }
        int gh = (int)ch->n_y * BAR_H;
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">", plot_x - 8,
                y + gh / 2 + 4);
        svg_text(f, label);
        fprintf(f, "</text>\n");
        for (size_t k = 0; k < ch->n_y; k++) {
            double v = plot_value(t, r, ch->y_cols[k]);
            double w = v / max * plot_w;
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>", plot_x,
                    y + (int)k * BAR_H, w, BAR_H - 2, palette[k % PALETTE_N]);
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\">%s</text>\n", plot_x + w + 4,
                    y + (int)k * BAR_H + 9, fmt_num(v, buf, sizeof buf));
        }
        y += gh + 10;
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", plot_x, y0 + 52,
            plot_x, y);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">", plot_x, y + 16);
    svg_text(f, ch->y_title ? ch->y_title : "");
    fprintf(f, " (axis 0 to %g)</text>\n", max);
}

static void svg_lines(FILE *f, const struct bench_table *t, int y0)
{
    const struct bench_chart *ch = &t->chart;
    int px = SVG_MARGIN + LINE_PLOT_LEFT, pw = SVG_WIDTH - px - LINE_PLOT_RIGHT;
    int py = y0 + 45, ph = LINE_PLOT_H;
    double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
    for (size_t r = 0; r < t->n_rows; r++) {
        double x = t->cells[r * t->n_cols + (size_t)ch->x_col].num;
        if (x < xmin)
            xmin = x;
        if (x > xmax)
            xmax = x;
        for (size_t k = 0; k < ch->n_y; k++)
            if (plot_value(t, r, ch->y_cols[k]) > ymax)
                ymax = plot_value(t, r, ch->y_cols[k]);
    }
    if (!t->n_rows || !(xmax > xmin)) {
        xmin = 0;
        xmax = 1;
    }
    ymax = nice_max(ymax);
    bool logx = xmin > 0 && xmax / xmin >= 20;
#define XPOS(x)                                                                                   \
    (logx ? px + (log10_double(x) - log10_double(xmin)) / (log10_double(xmax) - log10_double(xmin)) * pw                     \
          : px + ((x) - xmin) / (xmax - xmin) * pw)
#define YPOS(v) (py + ph - (v) / ymax * ph)

    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"15\" font-weight=\"bold\">", SVG_MARGIN, y0 + 20);
    svg_text(f, t->title);
    fprintf(f, "</text>\n");
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n",
            px, py, pw, ph);
    for (int i = 0; i <= 5; i++) {
        double v = ymax * i / 5;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>", px, YPOS(v),
                px + pw, YPOS(v));
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n",
                px - 6, YPOS(v) + 4, v);
    }
    /* x ticks at the distinct x values */
    double seen[64];
    size_t n_seen = 0;
    for (size_t r = 0; r < t->n_rows && n_seen < 64; r++) {
        double x = t->cells[r * t->n_cols + (size_t)ch->x_col].num;
        bool dup = false;
        for (size_t i = 0; i < n_seen; i++)
            dup = dup || seen[i] == x;
        if (dup)
            continue;
        seen[n_seen++] = x;
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n",
                XPOS(x), py + ph + 16, x);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">", px + pw / 2,
            py + ph + 34);
    svg_text(f, t->cols[ch->x_col].title);
    fprintf(f, "%s</text>\n", logx ? " (log scale)" : "");
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 %d %d)\" "
               "text-anchor=\"middle\">",
            SVG_MARGIN + 12, py + ph / 2, SVG_MARGIN + 12, py + ph / 2);
    svg_text(f, ch->y_title ? ch->y_title : "");
    fprintf(f, "</text>\n");

    /* one polyline per (group, series) */
    const char *groups[32];
    size_t n_groups = 0;
    for (size_t r = 0; r < t->n_rows && n_groups < 32; r++) {
        const char *g = t->cells[r * t->n_cols + (size_t)ch->group_col].text;
        g = g ? g : "";
        bool dup = false;
        for (size_t i = 0; i < n_groups; i++)
            dup = dup || !strcmp(groups[i], g);
        if (!dup)
            groups[n_groups++] = g;
    }
    int ly = py + 4;
    for (size_t gi = 0; gi < n_groups; gi++) {
        for (size_t k = 0; k < ch->n_y; k++) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s points=\"",
                    palette[gi % PALETTE_N], dashes[k % 4][0] ? " stroke-dasharray=\"" : "",
                    dashes[k % 4], dashes[k % 4][0] ? "\"" : "");
            for (size_t r = 0; r < t->n_rows; r++) {
                const char *g = t->cells[r * t->n_cols + (size_t)ch->group_col].text;
                if (strcmp(g ? g : "", groups[gi]))
                    continue;
                double x = t->cells[r * t->n_cols + (size_t)ch->x_col].num;
                fprintf(f, "%.1f,%.1f ", XPOS(x), YPOS(plot_value(t, r, ch->y_cols[k])));
            }
            fprintf(f, "\"/>\n");
        }
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>", px + pw + 15,
                ly, palette[gi % PALETTE_N]);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">", px + pw + 32, ly + 10);
        svg_text(f, groups[gi]);
        fprintf(f, "</text>\n");
        ly += 18;
    }
    ly += 10;
    for (size_t k = 0; k < ch->n_y; k++) {
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\" stroke-width=\"2\"%s%s%s/>",
                px + pw + 15, ly + 6, px + pw + 45, ly + 6,
                dashes[k % 4][0] ? " stroke-dasharray=\"" : "", dashes[k % 4],
                dashes[k % 4][0] ? "\"" : "");
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">", px + pw + 50, ly + 10);
        svg_text(f, t->cols[ch->y_cols[k]].title);
        fprintf(f, "</text>\n");
        ly += 18;
    }
#undef XPOS
#undef YPOS
}

int bench_write_svg(FILE *f, const struct bench_report *r)
{
    int height = SVG_MARGIN, charts = 0;
    for (size_t i = 0; i < r->n_tables; i++) {
        if (r->tables[i]->chart.kind != BENCH_CHART_NONE) {
            height += chart_height(r->tables[i]) + SVG_MARGIN;
            charts++;
        }
    }
    height += 30;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
            SVG_WIDTH, height, SVG_WIDTH, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#555\">", SVG_MARGIN, SVG_MARGIN);
    fprintf(f, "edhoc-cli %s bench - ", EDHOC_CLI_VERSION);
    svg_text(f, r->cpu);
    fprintf(f, " - ");
    svg_text(f, r->implementation);
    fprintf(f, "</text>\n");
    int y = SVG_MARGIN + 10;
    for (size_t i = 0; i < r->n_tables; i++) {
        const struct bench_table *t = r->tables[i];
        if (t->chart.kind == BENCH_CHART_BARS)
            svg_bars(f, t, y);
        else if (t->chart.kind == BENCH_CHART_LINES)
            svg_lines(f, t, y);
        else
            continue;
        y += chart_height(t) + SVG_MARGIN;
    }
    if (!charts)
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\">no chart: run the handshake or oscore "
                   "benchmark</text>\n", SVG_MARGIN, y + 20);
    fprintf(f, "</svg>\n");
    return charts;
}
