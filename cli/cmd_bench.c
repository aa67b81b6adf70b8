/*
 * edhoc-cli bench: crypto, handshake and OSCORE benchmarks on this host
 * (the engines of src/tools/bench), printed as Markdown tables (default),
 * JSON or CSV, optionally drawn as SVG charts. `edhoc-cli bench load` is
 * cmd_load (cmd_load.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/crypto.h"
#include "edhoc/edhoc.h"
#include "output/bench_output.h"
#include "bench_sides.h"
#include "commands.h"
#include "output/progress.h"
#include "util.h"

enum bench_format { FORMAT_MARKDOWN, FORMAT_JSON, FORMAT_CSV };

enum {
    OPT_JSON = 1,
    OPT_CSV,
    OPT_SVG,
    OPT_REPEAT,
    OPT_MIN_TIME,
    OPT_QUICK,
    OPT_SUITES,
    OPT_CONTEXTS,
};

static const struct cli_opt bench_output_opts[] = {
    {OPT_JSON, "json", NULL, "one JSON document on stdout (docs/json/bench.schema.json)"},
    {OPT_CSV, "csv", NULL, "CSV on stdout, one block per table"},
    {OPT_SVG, "svg", "FILE",
     "also draw the tables as charts into FILE (crypto, handshake, oscore, all; contexts has "
     "nothing to draw and refuses it)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt bench_effort_opts[] = {
    {OPT_REPEAT, "repeat", "N", "at least N samples per measurement (default 20)"},
    {OPT_MIN_TIME, "min-time", "SECONDS",
     "at least SECONDS per measurement (decimals allowed; default 0.1)"},
    {OPT_QUICK, "quick", NULL, "a few seconds in all; the numbers are indicative only"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt bench_which_opts[] = {
    {OPT_SUITES, "suites", "LIST", "handshake (and all): cipher suites to run (default 0,2)"},
    {OPT_CONTEXTS, "contexts", "N",
     "contexts: how many (1..10000000; default 1000000, with --quick 20000)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group bench_groups[] = {
    {"Output", bench_output_opts},
    {"Effort", bench_effort_opts},
    {"Benchmark", bench_which_opts},
    {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_bench = {
    .name = "bench",
    .synopsis = "[crypto|handshake|oscore|all|contexts] [OPTIONS]\n"
                "       edhoc-cli bench load URI [OPTIONS]   (the same as edhoc-cli load)",
    .description =
        "Measures on this host, with the same code paths the peers use:\n"
        "  crypto     sign/verify per algorithm and message size, key generation and\n"
        "             ECDH per curve, each AEAD by size, hash and HKDF\n"
        "  handshake  in-process EDHOC handshakes per method, credential type and cipher\n"
        "             suite, per role, beside the crypto floor (the same crypto\n"
        "             operations timed alone) and the ratio; bytes of state per\n"
        "             handshake and per OSCORE context\n"
        "  oscore     protect/unprotect of a request and a response per AEAD and\n"
        "             payload size, beside the raw AEAD time and the ratio\n"
        "  all        the three (default)\n"
        "  contexts   established OSCORE contexts written to a state database (in a\n"
        "             temporary directory under $TMPDIR, removed at the end) and loaded\n"
        "             by the responder engine: time and resident memory\n\n"
        "Output is Markdown tables; times are microseconds per operation: min / median\n"
        "over the samples, each sample a batch of calls long enough for the clock.\n"
        "--json: docs/json/bench.schema.json.",
    .groups = bench_groups,
    .renamed = NULL,
    .epilogue =
        "SIGINT or SIGTERM stops the run: the tables hold what completed, marked\n"
        "\"interrupted: partial results\" (JSON \"partial\": true), and the exit status is\n"
        "130 or 143.\n\n"
        "Exit codes: 0 ok; 2 bad command line; 3 the SVG file or the temporary directory\n"
        "cannot be written; 10 a benchmark failed; 130/143 interrupted (partial\n"
        "results).",
};

static const char *const bench_modes[] = {"crypto", "handshake", "oscore", "all", "contexts", NULL};

int cmd_bench(int argc, char **argv)
{
    const char *which = "all";
    enum bench_format format = FORMAT_MARKDOWN;
    const char *svg_path = NULL;
    long repeat = -1;
    long min_time_ms = -1;
    bool quick = false, format_given = false;
    struct bench_handshake_opts hs = {.n_suites = 0};
    long contexts = 0; /* bench contexts: 0 = the default for the effort */

    if (argc > 1 && !strcmp(argv[1], "load"))
        return cmd_load(argc - 1, argv + 1);
    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_bench, argc, argv);
    bool mode_given = false;
    for (enum cli_opt_status st; (st = cli_opt_next(&p)) != CLI_OPT_DONE;) {
        if (st == CLI_OPT_EXIT)
            return p.exit_code;
        if (st == CLI_OPT_POSITIONAL) {
            int k;
            if (mode_given)
                return cli_opt_error(&p, "unexpected argument '%s' (one benchmark per run)",
                                     p.value);
            for (k = 0; bench_modes[k] && strcmp(bench_modes[k], p.value); k++)
                ;
            if (!bench_modes[k])
                return cli_opt_error(&p,
                                     "unknown benchmark '%s' (crypto, handshake, oscore, "
                                     "all, contexts; or load URI)",
                                     p.value);
            which = bench_modes[k];
            mode_given = true;
            continue;
        }
        int bad = 0;
        switch (p.opt->id) {
        case OPT_JSON:
        case OPT_CSV:
            if (format_given)
                return cli_opt_error(&p, "give one of --json and --csv");
            format = p.opt->id == OPT_JSON ? FORMAT_JSON : FORMAT_CSV;
            format_given = true;
            break;
        case OPT_SVG: svg_path = p.value; break;
        case OPT_QUICK: quick = true; break;
        case OPT_REPEAT: bad = cli_opt_long(&p, 1, 1000000, &repeat); break;
        case OPT_MIN_TIME: bad = cli_opt_seconds(&p, 0, 60, &min_time_ms); break;
        case OPT_CONTEXTS: bad = cli_opt_long(&p, 1, 10000000, &contexts); break;
        case OPT_SUITES: {
            int n = cli_parse_int_list(p.value, hs.suites,
                                       (int)(sizeof hs.suites / sizeof hs.suites[0]));
            if (n <= 0)
                return cli_opt_error(&p, "--suites: expected a list like 0,2,3, got '%s'", p.value);
            hs.n_suites = (size_t)n;
            break;
        }
        }
        if (bad)
            return CLI_EXIT_USAGE;
    }
    bool all = !strcmp(which, "all");
    for (size_t i = 0; i < hs.n_suites; i++) {
        if (!edhoc_suite_find(hs.suites[i]))
            return cli_opt_error(&p, "--suites: cipher suite %d is not supported", hs.suites[i]);
    }
    /* An option the chosen benchmark would ignore is refused. */
    if (hs.n_suites && !all && strcmp(which, "handshake"))
        return cli_opt_error(&p,
                             "--suites chooses the handshakes of bench handshake (or all), "
                             "not of bench %s",
                             which);
    if (contexts && strcmp(which, "contexts"))
        return cli_opt_error(&p, "--contexts is for bench contexts, not bench %s", which);
    if (svg_path && !strcmp(which, "contexts"))
        return cli_opt_error(&p, "--svg: bench contexts has no chart to draw (its one row is "
                                 "in the table); draw crypto, handshake, oscore or all");

    struct bench_effort effort;
    if (quick)
        bench_effort_quick(&effort);
    else
        bench_effort_default(&effort);
    if (repeat > 0)
        effort.repeat = repeat;
    if (min_time_ms >= 0)
        effort.min_time = (double)min_time_ms / 1000.0;
    if (effort.max_samples < effort.repeat)
        effort.max_samples = effort.repeat;
    if (effort.max_time < 2 * effort.min_time)
        effort.max_time = 2 * effort.min_time;
    if (repeat > 0 && effort.max_time < 600)
        effort.max_time = 600; /* an explicit count is honoured */

    /* Open the SVG file first: a typo should not cost a whole run. */
    FILE *svg = NULL;
    if (svg_path) {
        svg = fopen(svg_path, "w");
        if (!svg) {
            fprintf(stderr, "edhoc-cli bench: cannot write %s: %s\n", svg_path, strerror(errno));
            return CLI_EXIT_INPUT;
        }
    }

    struct bench_report *report = malloc(sizeof *report);
    if (!report) {
        if (svg)
            fclose(svg);
        return CLI_EXIT_INTERNAL;
    }
    bench_report_init(report, edhoc_crypto_default()->name, &effort);
    report->command = "bench";
    report->mode = which;
    struct cli_progress progress;
    cli_progress_begin(&progress, "bench", p.verbose, p.quiet);
    cli_bench_hooks(report, &progress);
    /* SIGINT/SIGTERM end the run with what completed. */
    cli_interrupt_catch();
    int rc = 0;
    if (!rc && !cli_interrupted() && (all || !strcmp(which, "crypto")))
        rc = bench_crypto_run(report);
    if (!rc && !cli_interrupted() && (all || !strcmp(which, "handshake")))
        rc = bench_handshake_run(report, &hs, &cli_bench_sides);
    if (!rc && !cli_interrupted() && (all || !strcmp(which, "oscore")))
        rc = bench_oscore_run(report);
    /* Not part of "all": a million contexts take a minute. */
    if (!rc && !cli_interrupted() && !strcmp(which, "contexts"))
        rc = bench_contexts_run(report, contexts ? contexts : quick ? 20000 : 1000000);
    cli_progress_end(&progress);
    report->progress = NULL;
    report->partial = cli_interrupted() != 0;
    if (rc) {
        if (report->error[0])
            fprintf(stderr, "edhoc-cli %s\n", report->error);
        rc = cli_exit_for_tools(rc);
    }

    if (!rc) {
        if (format == FORMAT_JSON)
            bench_print_json(stdout, report);
        else if (format == FORMAT_CSV)
            bench_print_csv(stdout, report);
        else
            bench_print_markdown(stdout, report);
        fflush(stdout);
    }
    if (svg) {
        if (!rc && bench_write_svg(svg, report) == 0 && !report->partial) {
            /* Never an empty chart with exit 0. */
            fprintf(stderr, "edhoc-cli bench: --svg %s: nothing to draw\n", svg_path);
            rc = CLI_EXIT_INTERNAL;
        }
        if (fclose(svg) != 0 && !rc) {
            fprintf(stderr, "edhoc-cli bench: cannot write %s: %s\n", svg_path, strerror(errno));
            rc = CLI_EXIT_INPUT;
        }
    }
    if (report->partial) {
        fprintf(stderr, "edhoc-cli bench: interrupted: partial results\n");
        if (!rc)
            rc = cli_interrupt_exit_code();
    }
    bench_report_free(report);
    free(report);
    return rc;
}
