/*
 * edhoc-cli bench and load: the renderers of a bench_report (Markdown,
 * JSON, CSV, SVG charts). The report itself is the engines'
 * (src/tools/bench/bench_report.h).
 */
#ifndef CLI_BENCH_OUTPUT_H
#define CLI_BENCH_OUTPUT_H

#include <stdio.h>

#include "bench_report.h"

/* Markdown; a partial report says "interrupted: partial results" first. */
void bench_print_markdown(FILE *f, const struct bench_report *r);
/* One JSON document (docs/json/bench.schema.json, or load.schema.json
 * for command "load"); NaN and infinity are null. */
void bench_print_json(FILE *f, const struct bench_report *r);
/* One block per table: a header line, then the rows; blocks separated by
 * an empty line. The first column is always the table name. */
void bench_print_csv(FILE *f, const struct bench_report *r);
/* Every table with a chart, stacked in one SVG document. Returns the
 * number of charts drawn (the caller refuses a run without any). */
int bench_write_svg(FILE *f, const struct bench_report *r);

/* The exit code of an engine's status (tools.h), 0 for TOOLS_OK. */
int cli_exit_for_tools(int status);

#endif
