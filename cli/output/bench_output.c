/*
 * edhoc-cli bench: measurement statistics and the table renderers
 * (Markdown, JSON, CSV, SVG).
 */
#include <math.h> /* isfinite, INFINITY only: the CLI does not link libm */
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench_output.h"
#include "json_out.h"
#include "progress.h"
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
    case BENCH_COL_NUM: fputs(fmt_num(v->num, a, sizeof a), f); break;
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
    case BENCH_COL_LABEL: break;
    }
}

/* Shown in the Markdown table (LABEL columns never are). */
static bool md_shown(const struct bench_column *c)
{
    return !c->hidden && c->kind != BENCH_COL_LABEL;
}

static void md_table(FILE *f, const struct bench_table *t)
{
    fprintf(f, "### %s\n\n", t->title);
    if (!t->n_rows) {
        /* A header over no rows reads as a table that failed to print. */
        fprintf(f, "%s\n\n", t->empty[0] ? t->empty : t->note[0] ? t->note : "No rows.");
        return;
    }
    if (t->note[0])
        fprintf(f, "%s\n\n", t->note);
    fputc('|', f);
    for (size_t i = 0; i < t->n_cols; i++)
        if (md_shown(&t->cols[i]))
            fprintf(f, " %s |", t->cols[i].title);
    fputs("\n|", f);
    for (size_t i = 0; i < t->n_cols; i++)
        if (md_shown(&t->cols[i]))
            fputs(t->cols[i].kind == BENCH_COL_TEXT ? "---|" : "---:|", f);
    fputc('\n', f);
    for (size_t r = 0; r < t->n_rows; r++) {
        const struct bench_cell *row = &t->cells[r * t->n_cols];
        fputc('|', f);
        for (size_t i = 0; i < t->n_cols; i++) {
            if (!md_shown(&t->cols[i]))
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
    fprintf(f, "## edhoc-cli %s %s\n\n", EDHOC_CLI_VERSION,
            r->command && !strcmp(r->command, "load") ? "load" : "benchmarks");
    if (r->partial)
        fprintf(f,
                "**interrupted: partial results** (stopped by %s; the tables hold what "
                "completed)\n\n",
                cli_interrupted() == SIGTERM ? "SIGTERM" : "SIGINT");
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
            fprintf(f, "| %s | %s%s%s | %s %s%s%s | %s |\n", g->name, a, g->unit[0] ? " " : "",
                    g->unit, g->at_least ? "at least" : "at most", b, g->unit[0] ? " " : "",
                    g->unit, bench_target_met(g) ? "yes" : "**no**");
        }
        fputc('\n', f);
    }
}

/* ---- JSON ---- */

static const char *kind_name(enum bench_col_kind k)
{
    switch (k) {
    case BENCH_COL_TEXT: return "text";
    case BENCH_COL_INT: return "int";
    case BENCH_COL_NUM: return "number";
    case BENCH_COL_RATIO: return "ratio";
    case BENCH_COL_STAT: return "stat";
    case BENCH_COL_LABEL: return "label";
    }
    return "unknown";
}

/* An INT cell: a whole number, or null when not known (NaN). */
static json_t *json_int_cell(double v)
{
    return isfinite(v) ? json_integer((json_int_t)(v < 0 ? v - 0.5 : v + 0.5)) : json_null();
}

static json_t *json_table(const struct bench_table *t)
{
    json_t *o = json_object();
    cli_json_set(o, "name", json_string(t->name));
    cli_json_set(o, "title", json_string(t->title));
    cli_json_set(o, "note", t->note[0] ? json_string(t->note) : json_null());
    json_t *cols = json_array();
    for (size_t i = 0; i < t->n_cols; i++) {
        if (t->cols[i].kind == BENCH_COL_LABEL)
            continue;
        json_t *c = json_object();
        cli_json_set(c, "key", json_string(t->cols[i].key));
        cli_json_set(c, "title", json_string(t->cols[i].title));
        cli_json_set(c, "kind", json_string(kind_name(t->cols[i].kind)));
        json_array_append_new(cols, c);
    }
    cli_json_set(o, "columns", cols);
    json_t *rows = json_array();
    for (size_t r = 0; r < t->n_rows; r++) {
        const struct bench_cell *row = &t->cells[r * t->n_cols];
        json_t *jr = json_object();
        for (size_t i = 0; i < t->n_cols; i++) {
            json_t *v = NULL;
            switch (t->cols[i].kind) {
            case BENCH_COL_TEXT: v = cli_json_string_or_null(row[i].text); break;
            case BENCH_COL_INT: v = json_int_cell(row[i].num); break;
            case BENCH_COL_NUM:
            case BENCH_COL_RATIO: v = cli_json_real_or_null(row[i].num); break;
            case BENCH_COL_STAT:
                v = json_object();
                cli_json_set(v, "min_us", cli_json_real_or_null(row[i].stat.min_us));
                cli_json_set(v, "median_us", cli_json_real_or_null(row[i].stat.median_us));
                cli_json_set(v, "samples", json_integer(row[i].stat.samples));
                cli_json_set(v, "batch", json_integer(row[i].stat.batch));
                break;
            case BENCH_COL_LABEL: continue;
            }
            cli_json_set(jr, t->cols[i].key, v);
        }
        json_array_append_new(rows, jr);
    }
    cli_json_set(o, "rows", rows);
    return o;
}

void bench_print_json(FILE *f, const struct bench_report *r)
{
    json_t *root = json_object();
    bool load = r->command && !strcmp(r->command, "load");
    cli_json_set(root, "command", json_string(load ? "load" : "bench"));
    cli_json_set(root, "mode", json_string(r->mode ? r->mode : "all"));
    cli_json_set(root, "version", json_string(EDHOC_CLI_VERSION));
    cli_json_set(root, "partial", json_boolean(r->partial));
    cli_json_set(root, "implementation", cli_json_string_or_null(r->implementation));
    json_t *host = json_object();
    cli_json_set(host, "cpu", json_string(r->cpu));
    cli_json_set(host, "kernel", json_string(r->kernel));
    cli_json_set(root, "host", host);
    json_t *effort = json_null();
    if (!load) {
        effort = json_object();
        cli_json_set(effort, "repeat", json_integer(r->effort.repeat));
        cli_json_set(effort, "min_time_s", cli_json_real_or_null(r->effort.min_time));
        cli_json_set(effort, "quick", json_boolean(r->effort.quick));
    }
    cli_json_set(root, "effort", effort);
    json_t *tables = json_array();
    for (size_t i = 0; i < r->n_tables; i++)
        json_array_append_new(tables, json_table(r->tables[i]));
    cli_json_set(root, "tables", tables);
    json_t *targets = json_array();
    for (size_t i = 0; i < r->n_targets; i++) {
        const struct bench_target *g = &r->targets[i];
        json_t *o = json_object();
        cli_json_set(o, "id", json_string(g->id));
        cli_json_set(o, "title", json_string(g->name));
        cli_json_set(o, "value", cli_json_real_or_null(g->value));
        cli_json_set(o, "limit", cli_json_real_or_null(g->limit));
        cli_json_set(o, "unit", g->unit[0] ? json_string(g->unit) : json_null());
        cli_json_set(o, "kind", json_string(g->at_least ? "at_least" : "at_most"));
        cli_json_set(o, "met", json_boolean(bench_target_met(g)));
        json_array_append_new(targets, o);
    }
    cli_json_set(root, "targets", targets);
    cli_json_print(root, f);
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
            if (t->cols[i].kind == BENCH_COL_LABEL)
                continue;
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
                if (t->cols[i].kind == BENCH_COL_LABEL)
                    continue;
                fputc(',', f);
                switch (t->cols[i].kind) {
                case BENCH_COL_TEXT: csv_text(f, row[i].text ? row[i].text : ""); break;
                case BENCH_COL_INT:
                    if (isfinite(row[i].num))
                        fprintf(f, "%.0f", row[i].num);
                    break;
                case BENCH_COL_NUM:
                case BENCH_COL_RATIO: csv_num(f, row[i].num); break;
                case BENCH_COL_STAT:
                    csv_num(f, row[i].stat.min_us);
                    fputc(',', f);
                    csv_num(f, row[i].stat.median_us);
                    break;
                case BENCH_COL_LABEL: break;
                }
            }
            fputc('\n', f);
        }
    }
}

/* ---- SVG ---- */

#define SVG_WIDTH       960
#define SVG_MARGIN      20
#define BAR_LABEL_W     250
#define BAR_H           13
#define LINE_PLOT_H     320
#define LINE_PLOT_LEFT  80
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
    if (t->cols[col].kind == BENCH_COL_TEXT || t->cols[col].kind == BENCH_COL_LABEL)
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

    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"15\" font-weight=\"bold\">", SVG_MARGIN,
            y0 + 20);
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

/* The line a row belongs to: its group value, and its second group value
 * when the chart has one ("Ed25519 libsodium"). */
static void line_group(const struct bench_table *t, const struct bench_chart *ch, size_t r,
                       char *out, size_t cap)
{
    const char *g = t->cells[r * t->n_cols + (size_t)ch->group_col].text;
    const char *g2 = ch->group_col2_plus1 > 0
                         ? t->cells[r * t->n_cols + (size_t)(ch->group_col2_plus1 - 1)].text
                         : NULL;
    snprintf(out, cap, "%s%s%s", g ? g : "", g2 ? " " : "", g2 ? g2 : "");
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
#define XPOS(x)                                                                                    \
    (logx ? px + (log10_double(x) - log10_double(xmin)) /                                          \
                     (log10_double(xmax) - log10_double(xmin)) * pw                                \
          : px + ((x)-xmin) / (xmax - xmin) * pw)
#define YPOS(v) (py + ph - (v) / ymax * ph)

    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"15\" font-weight=\"bold\">", SVG_MARGIN,
            y0 + 20);
    svg_text(f, t->title);
    fprintf(f, "</text>\n");
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n",
            px, py, pw, ph);
    for (int i = 0; i <= 5; i++) {
        double v = ymax * i / 5;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>", px,
                YPOS(v), px + pw, YPOS(v));
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
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" font-size=\"12\" transform=\"rotate(-90 %d %d)\" "
            "text-anchor=\"middle\">",
            SVG_MARGIN + 12, py + ph / 2, SVG_MARGIN + 12, py + ph / 2);
    svg_text(f, ch->y_title ? ch->y_title : "");
    fprintf(f, "</text>\n");

    /* one polyline per (group, series) */
    char groups[32][96];
    size_t n_groups = 0;
    for (size_t r = 0; r < t->n_rows && n_groups < 32; r++) {
        char g[96];
        line_group(t, ch, r, g, sizeof g);
        bool dup = false;
        for (size_t i = 0; i < n_groups; i++)
            dup = dup || !strcmp(groups[i], g);
        if (!dup)
            snprintf(groups[n_groups++], sizeof groups[0], "%s", g);
    }
    int ly = py + 4;
    for (size_t gi = 0; gi < n_groups; gi++) {
        for (size_t k = 0; k < ch->n_y; k++) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s points=\"",
                    palette[gi % PALETTE_N], dashes[k % 4][0] ? " stroke-dasharray=\"" : "",
                    dashes[k % 4], dashes[k % 4][0] ? "\"" : "");
            for (size_t r = 0; r < t->n_rows; r++) {
                char g[96];
                line_group(t, ch, r, g, sizeof g);
                if (strcmp(g, groups[gi]))
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
        fprintf(f,
                "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\" "
                "stroke-width=\"2\"%s%s%s/>",
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
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
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
    fprintf(f, "</svg>\n");
    return charts;
}
