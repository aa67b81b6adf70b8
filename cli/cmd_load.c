/*
 * edhoc-cli load URI (also edhoc-cli bench load URI): its options, their
 * checks, the responder's state writer figures (cli/state_stats.h), the
 * --vs-state-none pair of runs, and the printing of the report. The load
 * itself is src/tools/bench/load.h's.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/bench_output.h"
#include "bench_sides.h"
#include "bench_vs_state.h"
#include "commands.h"
#include "edhoc_args.h"
#include "load.h"
#include "net_report.h"
#include "output/progress.h"
#include "state_stats.h"
#include "util.h"

enum load_format { FORMAT_MARKDOWN, FORMAT_JSON, FORMAT_CSV };

enum {
    LOPT_PEERS = 1,
    LOPT_DURATION,
    LOPT_HANDSHAKES,
    LOPT_REQUESTS,
    LOPT_PLAIN,
    LOPT_VS_PLAIN,
    LOPT_RESPONDER_PID,
    LOPT_VS_STATE_NONE,
    LOPT_VS,
    LOPT_ROUNDS,
    LOPT_TIMEOUT,
    LOPT_JSON,
    LOPT_CSV,
    LOPT_FLOOD_SOURCES,
    LOPT_FLOOD_RATE,
    LOPT_FLOOD_ANSWER_ECHO,
};

static const struct cli_opt load_run_opts[] = {
    {LOPT_PEERS, "peers", "N", "concurrent initiators (default 10, at most 1000)"},
    {LOPT_DURATION, "duration", "SECONDS",
     "run for SECONDS (decimals allowed; default 10, at most 3600)"},
    {LOPT_HANDSHAKES, "handshakes", "N",
     "stop after N handshakes in all (instead of --duration; with --plain: N rounds of K "
     "requests)"},
    {LOPT_REQUESTS, "requests-per-peer", "K", "OSCORE requests after each handshake (default 10)"},
    {LOPT_PLAIN, "plain", NULL, "unprotected requests only, no EDHOC (the baseline)"},
    {LOPT_VS_PLAIN, "vs-plain", NULL,
     "alternate windows of OSCORE and of the same requests unprotected, --duration of each "
     "in all, and report the ratio of the two rates"},
    {LOPT_RESPONDER_PID, "responder-pid", "PID",
     "the responder's process, for its CPU time (default: the local process holding the "
     "port when HOST is loopback; 0: none)"},
    {LOPT_VS, "vs", "URI2",
     "run the same load against URI and then URI2 and print both rows, what each responder "
     "keeps its state in (default: SQLite, postgresql or none, from its figures) and their ratios"},
    {LOPT_VS_STATE_NONE, "vs-state-none", "URI2",
     "--vs URI2, with URI a default responder and URI2 one with --state-dir none"},
    {LOPT_ROUNDS, "rounds", "N",
     "with --vs: N rounds of both runs, alternately in either order (default 3), "
     "so that a machine's drift weighs on both rows alike"},
    {LOPT_TIMEOUT, "timeout", "SECONDS",
     "give up on a response after SECONDS (decimals allowed; default 5)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt load_flood_opts[] = {
    {LOPT_FLOOD_SOURCES, "flood-sources", "N",
     "run twice: the peers alone, then beside message_1s from N source addresses (127.1.0.1 "
     "and up, loopback responders only) that never send message_3; report both (1..1000000)"},
    {LOPT_FLOOD_RATE, "flood-rate", "R",
     "the flood's message_1s per second over all its sources (default 1000)"},
    {LOPT_FLOOD_ANSWER_ECHO, "flood-answer-echo", NULL,
     "the flood's sources answer a 4.01 Echo (they prove their address) and abandon the "
     "handshake after message_2"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt load_output_opts[] = {
    {LOPT_JSON, "json", NULL, "one JSON document on stdout (docs/json/load.schema.json)"},
    {LOPT_CSV, "csv", NULL, "CSV on stdout, one block per table"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group load_groups[] = {
    {"Load", load_run_opts},
    {"Flood", load_flood_opts},
    {"EDHOC", cli_edhoc_opts_load},
    {"Output", load_output_opts},
    {NULL, NULL},
};

static const struct cli_opt_renamed load_renamed[] = {
    {"timeout-ms", "--timeout SECONDS (decimals allowed, e.g. --timeout 0.5)"},
    {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_load = {
    .name = "load",
    .synopsis = "coap://HOST[:PORT][/PATH] [OPTIONS]",
    .description =
        "Load-tests an EDHOC/OSCORE responder from one process: --peers initiators, each\n"
        "with its own UDP socket and C_I, run EDHOC over CoAP (RFC 9528 Appendix A.2)\n"
        "at PATH (default /.well-known/edhoc, as for initiator) and then\n"
        "--requests-per-peer OSCORE-protected POSTs to /echo with the new context, in a\n"
        "loop, until --duration or --handshakes is reached. After a transport failure\n"
        "(unreachable, reset, no answer in time) a peer waits 100 ms before its next\n"
        "attempt, twice as long after each further one up to 2 s, until a success (RFC\n"
        "7252 Section 4.8); the flood of --flood-sources and its peers do not wait. Only\n"
        "point it at loopback or at test hosts of your own.\n\n"
        "The responder's crypto floor (its crypto calls of one handshake, timed alone\n"
        "here, after the load, on the CPUs a local responder may run on) gives the rate\n"
        "one core could sustain; the report compares the measured\n"
        "rate with it. Compare OSCORE with --plain runs for the cost of protection.\n"
        "Every peer and handshake has its own C_I and ephemeral key. An OSCORE request\n"
        "answered without OSCORE is a failure whatever the code (no_oscore); the answers\n"
        "table counts what the responder answered, by code. --json:\n"
        "docs/json/load.schema.json.",
    .groups = load_groups,
    .renamed = load_renamed,
    .epilogue =
        "SIGINT or SIGTERM stops the run: the tables hold what completed, marked\n"
        "\"interrupted: partial results\" (JSON \"partial\": true), and the exit status is\n"
        "130 or 143.\n\n"
        "Exit codes: 0 ok (failures are counted, not fatal); 1 no handshake or request\n"
        "succeeded (one line on standard error says the most frequent failure and its\n"
        "count); 2 bad command line (also a URI with a query); 3 unusable credential; 6\n"
        "the host name does not resolve; 10 internal error; 130/143 interrupted (partial\n"
        "results).",
};

/* The state writer's figures around the first phase. */
struct load_writer_probe {
    bool stats;
    char path[PATH_MAX];
    struct cli_state_stats before, after;
    struct load_writer_delta wd;
};

static void load_writer_after(void *ctx)
{
    struct load_writer_probe *ws = ctx;
    if (ws->stats && state_stats_fresh(ws->path, &ws->before, &ws->after)) {
        ws->wd = state_writer_delta(&ws->before, &ws->after);
        ws->wd.path = ws->path;
    }
}

/* The engine's progress: one line per update; a phase's end erases it
 * and the next phase starts afresh. */
struct load_progress_ctx {
    struct cli_progress *progress;
    int verbose;
    bool quiet;
};

static void load_progress_line(void *ctx, const char *text)
{
    struct load_progress_ctx *pc = ctx;
    cli_progress_update(pc->progress, "%s", text);
}

static void load_progress_phase_end(void *ctx)
{
    struct load_progress_ctx *pc = ctx;
    cli_progress_end(pc->progress);
    cli_progress_begin(pc->progress, "load", pc->verbose, pc->quiet);
}

/* Exit 1 explained in one line: the most frequent cause of the failure
 * table, with its count, and where it happened. */
static void load_say_why_nothing_completed(const struct load_run *r)
{
    const char *what = r->plain ? "no request succeeded" : "no handshake completed";
    char where[160];
    snprintf(where, sizeof where, strchr(r->host, ':') ? "[%s]:%u" : "%s:%u", r->host,
             (unsigned)r->port);
    size_t top = 0;
    for (size_t i = 1; i < r->n_causes; i++) {
        if (r->causes[i].count > r->causes[top].count)
            top = i;
    }
    if (!r->n_causes) {
        fprintf(stderr, "edhoc-cli load: %s: nothing was attempted towards %s\n", what, where);
        return;
    }
    const char *cause = r->causes[top].cause, *detail = r->causes[top].detail;
    long count = r->causes[top].count;
    char why[160];
    snprintf(why, sizeof why, "%s%s%s, %ld time%s", cause, detail[0] ? ": " : "", detail, count,
             count == 1 ? "" : "s");
    bool unreached = !strcmp(cause, "transport") || !strcmp(cause, "timeout");
    if (unreached && count == r->failures && r->message_1_failures == r->failures)
        fprintf(stderr, "edhoc-cli load: %s: %s %s (%s)\n", what, where,
                strcmp(cause, "timeout") ? "refused every message_1" : "answered no message_1",
                why);
    else
        fprintf(stderr, "edhoc-cli load: %s: %ld failure%s towards %s, most often %s\n", what,
                r->failures, r->failures == 1 ? "" : "s", where, why);
}

/* The command's state: the engine's run and the EDHOC set-up it uses. */
struct load_cmd {
    struct load_run run;
    struct cli_edhoc_opts o; /* side's config points into it */
    struct cli_side side;
};

int cmd_load(int argc, char **argv)
{
    /* Private keys and the OSCORE contexts of every peer it runs. */
    cli_no_core_dumps();
    struct load_cmd *lc = calloc(1, sizeof *lc);
    if (!lc)
        return CLI_EXIT_INTERNAL;
    struct load_run *r = &lc->run;
    cli_edhoc_opts_init(&lc->o);
    r->flood.fd = -1;
    r->n_peers = 10;
    r->duration_s = 10;
    r->requests_per_peer = 10;
    r->timeout_ms = 5000;
    enum load_format format = FORMAT_MARKDOWN;
    bool format_given = false;
    const char *uri = NULL, *vs_state_none = NULL;
    int uri_index = -1, vs_index = -1, vs_args = 0, rounds_index = -1, rounds_args = 0;
    long rounds = 3;
    bool rounds_given = false;
    bool duration_given = false;
    int exit_code = CLI_EXIT_USAGE;

    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_load, argc, argv);
    for (enum cli_opt_status st; (st = cli_opt_next(&p)) != CLI_OPT_DONE;) {
        if (st == CLI_OPT_EXIT) {
            exit_code = p.exit_code;
            goto out;
        }
        if (st == CLI_OPT_POSITIONAL) {
            if (uri) {
                cli_opt_error(&p, "unexpected argument '%s'", p.value);
                goto out;
            }
            uri = p.value;
            for (int i = 0; i < argc; i++) {
                if (argv[i] == p.value)
                    uri_index = i;
            }
            continue;
        }
        long v = 0;
        int bad = 0;
        switch (p.opt->id) {
        case CLI_OPT_ID_EDHOC: bad = cli_edhoc_take(&lc->o, CLI_SIDE_I, &p); break;
        case LOPT_VS:
        case LOPT_VS_STATE_NONE:
            vs_state_none = p.value;
            /* Which arguments to leave out of the two runs: "--vs-state-none
             * URI2" (two) or "--vs-state-none=URI2" (one). */
            for (int i = 0; i < argc; i++) {
                if (argv[i] == p.value) {
                    vs_index = i - 1;
                    vs_args = 2;
                } else if (p.value > argv[i] && p.value <= argv[i] + strlen(argv[i])) {
                    vs_index = i;
                    vs_args = 1;
                }
            }
            break;
        case LOPT_PEERS:
            bad = cli_opt_long(&p, 1, LOAD_MAX_PEERS, &v);
            r->n_peers = (size_t)v;
            break;
        case LOPT_DURATION:
            bad = cli_opt_seconds(&p, 0.001, 3600, &v);
            r->duration_s = (double)v / 1000.0;
            duration_given = true;
            break;
        case LOPT_HANDSHAKES: bad = cli_opt_long(&p, 1, 100000000, &r->max_handshakes); break;
        case LOPT_REQUESTS:
            bad = cli_opt_long(&p, 0, 1000000, &v);
            r->requests_per_peer = (unsigned)v;
            break;
        case LOPT_PLAIN: r->plain = true; break;
        case LOPT_VS_PLAIN: r->vs_plain = true; break;
        case LOPT_FLOOD_SOURCES:
            bad = cli_opt_long(&p, 1, 1000000, &v);
            r->flood.sources = (size_t)v;
            break;
        case LOPT_FLOOD_RATE:
            bad = cli_opt_long(&p, 1, 1000000, &v);
            r->flood.rate = (double)v;
            break;
        case LOPT_FLOOD_ANSWER_ECHO: r->flood.answer_echo = true; break;
        case LOPT_RESPONDER_PID:
            bad = cli_opt_long(&p, 0, 4194304, &r->responder_pid);
            r->pid_given = true;
            break;
        case LOPT_ROUNDS:
            bad = cli_opt_long(&p, 1, 20, &rounds);
            rounds_given = true;
            /* Left out of the runs, as --vs-state-none. */
            for (int i = 0; i < argc; i++) {
                if (argv[i] == p.value) {
                    rounds_index = i - 1;
                    rounds_args = 2;
                } else if (p.value > argv[i] && p.value <= argv[i] + strlen(argv[i])) {
                    rounds_index = i;
                    rounds_args = 1;
                }
            }
            break;
        case LOPT_TIMEOUT:
            bad = cli_opt_seconds(&p, 0.001, 600, &v);
            r->timeout_ms = (int)v;
            break;
        case LOPT_JSON:
        case LOPT_CSV:
            if (format_given) {
                cli_opt_error(&p, "give one of --json and --csv");
                goto out;
            }
            format = p.opt->id == LOPT_JSON ? FORMAT_JSON : FORMAT_CSV;
            format_given = true;
            break;
        }
        if (bad)
            goto out;
    }
    if (!uri) {
        cli_opt_usage_error(&cli_spec_load, "which responder? give its URI");
        goto out;
    }
    if (strchr(uri, '?')) {
        fprintf(stderr,
                "edhoc-cli load: '%s': load sends no query; give "
                "coap://HOST[:PORT][/PATH]\n",
                uri);
        goto out;
    }
    if (load_parse_uri(r, uri)) {
        fprintf(stderr,
                "edhoc-cli load: '%s': expected a responder as "
                "coap://HOST[:PORT][/PATH]\n",
                uri);
        goto out;
    }
    if (vs_state_none) {
        struct load_run probe;
        memset(&probe, 0, sizeof probe);
        if (load_parse_uri(&probe, vs_state_none)) {
            fprintf(stderr,
                    "edhoc-cli load: --vs-state-none '%s': expected a responder as "
                    "coap://HOST[:PORT]\n",
                    vs_state_none);
            goto out;
        }
        if (format_given || r->vs_plain || r->flood.sources || uri_index < 0 || vs_index < 0) {
            fprintf(stderr, "edhoc-cli load: --vs-state-none prints its own table; it does not "
                            "combine with --json, --csv, --vs-plain or --flood-sources\n");
            goto out;
        }
        bool *skip = calloc((size_t)argc + 1, sizeof *skip);
        if (!skip) {
            exit_code = CLI_EXIT_INTERNAL;
            goto out;
        }
        for (int i = vs_index; i < vs_index + vs_args && i < argc; i++)
            skip[i] = true;
        for (int i = rounds_index; rounds_index >= 0 && i < rounds_index + rounds_args && i < argc;
             i++)
            skip[i] = true;
        exit_code = load_vs_state_none(argc, argv, uri_index, skip, vs_state_none, (int)rounds);
        free(skip);
        goto out;
    }
    if (rounds_given) {
        fprintf(stderr, "edhoc-cli load: --rounds goes with --vs-state-none\n");
        goto out;
    }
    if (r->max_handshakes && !duration_given)
        r->duration_s = 3600; /* the count ends the run */
    if (r->plain && r->vs_plain) {
        fprintf(stderr, "edhoc-cli load: --plain and --vs-plain exclude each other\n");
        goto out;
    }
    if (r->vs_plain && r->max_handshakes) {
        fprintf(stderr, "edhoc-cli load: --vs-plain alternates windows over --duration; it does "
                        "not combine with --handshakes\n");
        goto out;
    }
    if (r->vs_plain && r->requests_per_peer == 0) {
        fprintf(stderr, "edhoc-cli load: --vs-plain compares requests: give "
                        "--requests-per-peer K > 0\n");
        goto out;
    }
    if ((r->flood.rate > 0 || r->flood.answer_echo) && !r->flood.sources) {
        fprintf(stderr, "edhoc-cli load: --flood-rate and --flood-answer-echo shape a flood: "
                        "give --flood-sources N\n");
        goto out;
    }
    if (r->flood.sources && (r->plain || r->vs_plain)) {
        fprintf(stderr, "edhoc-cli load: --flood-sources measures handshakes; it does not "
                        "combine with --plain or --vs-plain\n");
        goto out;
    }
    if (r->flood.sources && r->flood.rate == 0)
        r->flood.rate = 1000;
    if (r->plain && r->requests_per_peer == 0)
        r->requests_per_peer = 1;
    size_t fit = load_raise_fd_limit(r->n_peers);
    if (fit < r->n_peers) {
        if (!p.quiet)
            fprintf(stderr, "edhoc-cli load: only %zu peers fit the open-file limit\n", fit);
        r->n_peers = fit;
    }

    exit_code = cli_edhoc_side_setup(&lc->o, CLI_SIDE_I, &lc->side);
    if (exit_code)
        goto out;
    r->cfg = &lc->side.cfg;
    r->resolve = cli_edhoc_resolve;
    r->resolve_ctx = &lc->side;
    r->method = lc->o.method;
    r->suite = lc->o.suites[0];
    r->id_cred_type = lc->o.side[CLI_SIDE_I].id_cred_type;
    r->message_4 = lc->o.message_4;
    r->floor_sides = &cli_bench_sides;
    char why[256] = "";
    size_t failed_peer = 0;
    int rc = load_open(r, why, sizeof why, &failed_peer);
    if (rc == TOOLS_ERR_USAGE) {
        fprintf(stderr, "edhoc-cli load: %s\n", why);
        exit_code = CLI_EXIT_USAGE;
        goto out;
    }
    exit_code = CLI_EXIT_INTERNAL;
    if (rc == TOOLS_ERR_INTERNAL)
        goto out;
    if (rc) {
        fprintf(stderr, "edhoc-cli load: cannot open client %zu towards %s: %s\n", failed_peer,
                r->uri, edhoc_transport_strerror(rc));
        exit_code = cli_exit_for_client_open(rc);
        goto out;
    }

    if (!r->pid_given)
        r->responder_pid = load_responder_of_port(r);
    struct cli_progress progress;
    cli_progress_begin(&progress, "load", p.verbose, p.quiet);
    struct load_progress_ctx pc = {&progress, p.verbose, p.quiet};
    r->progress = load_progress_line;
    r->progress_end = load_progress_phase_end;
    r->progress_ctx = &pc;
    r->interrupted = cli_interrupted;
    /* SIGINT/SIGTERM end the run with what completed. */
    cli_interrupt_catch();
    /* The responder's state writer, when it is local and publishes. */
    struct load_writer_probe ws = {.wd = {.known = false}};
    ws.wd.path = ws.path;
    ws.stats = r->responder_pid > 0 &&
               state_stats_path_of(r->responder_pid, ws.path, sizeof ws.path) &&
               cli_state_stats_read(ws.path, &ws.before);
    struct load_result res;
    load_measure(r, &res, load_writer_after, &ws);

    struct bench_report *report = calloc(1, sizeof *report);
    if (!report) {
        free(res.unloaded_lat.v);
        goto out;
    }
    rc = load_report(r, &res, &ws.wd, report);
    if (report->error[0])
        fprintf(stderr, "edhoc-cli: %s\n", report->error);
    if (rc) {
        bench_report_free(report);
        free(report);
        free(res.unloaded_lat.v);
        goto out;
    }
    if (format == FORMAT_JSON)
        bench_print_json(stdout, report);
    else if (format == FORMAT_CSV)
        bench_print_csv(stdout, report);
    else
        bench_print_markdown(stdout, report);
    fflush(stdout);
    bench_report_free(report);
    free(report);
    free(res.unloaded_lat.v);
    if (res.partial) {
        fprintf(stderr, "edhoc-cli load: interrupted: partial results\n");
        exit_code = cli_interrupt_exit_code();
    } else {
        exit_code =
            res.phases[0].handshakes || res.phases[0].requests ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
        if (exit_code == CLI_EXIT_FAILURE)
            load_say_why_nothing_completed(r);
    }

out:
    load_free(r);
    if (lc->side.store)
        cli_edhoc_side_free(&lc->side);
    edhoc_wipe(lc, sizeof *lc);
    free(lc);
    return exit_code;
}
