/*
 * load: the report of a run - the load, latency, answers, failures and
 * flood tables, the crypto floor the rates are compared with, and the
 * targets.
 */
#include <inttypes.h>
#include <math.h> /* isnan, NAN */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/coap_msg.h"
#include "load_internal.h"

static size_t load_percentile(size_t n, unsigned permille)
{
    size_t rank = (n * permille + 999) / 1000;
    return rank ? rank - 1 : 0;
}

static const struct bench_column load_cols[] = {
    {"uri", "Responder", BENCH_COL_TEXT, false},
    {"peers", "Peers", BENCH_COL_INT, false},
    {"seconds", "Seconds", BENCH_COL_NUM, false},
    {"handshakes", "Handshakes", BENCH_COL_INT, false},
    {"handshakes_per_s", "Handshakes/s", BENCH_COL_NUM, false},
    {"requests", "Requests", BENCH_COL_INT, false},
    {"requests_per_s", "Requests/s", BENCH_COL_NUM, false},
    {"failures", "Failures", BENCH_COL_INT, false},
    {"mode", "Requests are", BENCH_COL_TEXT, false},
    {"responder_floor_us", "Responder crypto floor (us)", BENCH_COL_NUM, false},
    {"floor_rate", "Floor rate (handshakes/s, one core)", BENCH_COL_NUM, false},
    {"of_floor", "Handshakes/s / floor rate", BENCH_COL_RATIO, false},
    {"responder_pid", "Responder PID", BENCH_COL_INT, false},
    {"responder_processes", "Processes", BENCH_COL_INT, false},
    {"responder_cpu_s", "Responder CPU (s)", BENCH_COL_NUM, false},
    {"handshakes_per_cpu_s", "Handshakes per responder CPU-second", BENCH_COL_NUM, false},
    {"requests_per_cpu_s", "Requests per responder CPU-second", BENCH_COL_NUM, false},
    {"cpu_of_floor", "Per CPU-second / floor rate", BENCH_COL_RATIO, false},
    {"generator_cpu_s", "Generator CPU (s)", BENCH_COL_NUM, false},
    {"saturated", "Saturated", BENCH_COL_TEXT, false},
    {"flood_sources", "Flood sources", BENCH_COL_INT, false},
    /* New columns go last: the earlier ones keep their places for scripts. */
    {"echo_challenges", "Echo challenges", BENCH_COL_INT, false},
};

/* --flood-sources: the flood and what it did to the peers' handshakes. */
static const struct bench_column flood_cols[] = {
    {"sources", "Sources", BENCH_COL_INT, false},
    {"rate", "Rate asked (message_1/s)", BENCH_COL_NUM, false},
    {"sent", "Sent", BENCH_COL_INT, false},
    {"sent_per_s", "Sent/s", BENCH_COL_NUM, false},
    {"send_errors", "Send errors", BENCH_COL_INT, false},
    {"answered_echo", "Answered 4.01 Echo", BENCH_COL_INT, false},
    {"answered_message_2", "Answered message_2", BENCH_COL_INT, false},
    {"answered_other", "Answered otherwise", BENCH_COL_INT, false},
    {"echo_resent", "Resent with Echo", BENCH_COL_INT, false},
    {"success_unloaded", "Peers' success, unloaded", BENCH_COL_RATIO, false},
    {"success_flood", "Peers' success, flood", BENCH_COL_RATIO, false},
    {"p50_unloaded_ms", "p50 unloaded (ms)", BENCH_COL_NUM, false},
    {"p99_unloaded_ms", "p99 unloaded (ms)", BENCH_COL_NUM, false},
    {"p50_flood_ms", "p50 flood (ms)", BENCH_COL_NUM, false},
    {"p99_flood_ms", "p99 flood (ms)", BENCH_COL_NUM, false},
    {"p99_ratio", "p99 flood / unloaded", BENCH_COL_RATIO, false},
};

/* Which side was the bottleneck: a process that was on a CPU for nearly
 * all of the wall-clock time had no more to give (each is one thread; a
 * responder with N workers has N such processes). */
static const char *load_saturated(double seconds, double responder_cpu_s, double generator_cpu_s,
                                  unsigned responder_processes)
{
    if (!(seconds > 0))
        return "unknown";
    double cores = responder_processes > 1 ? (double)(responder_processes - 1) : 1.0;
    bool resp = !isnan(responder_cpu_s) && responder_cpu_s / seconds >= 0.9 * cores;
    bool gen = !isnan(generator_cpu_s) && generator_cpu_s / seconds >= 0.9;
    if (resp && gen)
        return "both";
    if (resp)
        return "responder";
    if (gen)
        return "generator";
    return isnan(responder_cpu_s) ? "unknown" : "neither";
}

/* What the responder answered, counted (never claimed: a run where
 * nothing answered has no row). */
static const struct bench_column answer_cols[] = {
    {"requests", "Requests", BENCH_COL_TEXT, false},
    {"response", "Response", BENCH_COL_TEXT, false},
    {"code", "Code", BENCH_COL_TEXT, false},
    {"count", "Count", BENCH_COL_INT, false},
};

static const struct bench_column latency_cols[] = {
    {"what", "Latency", BENCH_COL_TEXT, false},   {"samples", "Samples", BENCH_COL_INT, false},
    {"p50_ms", "p50 (ms)", BENCH_COL_NUM, false}, {"p90_ms", "p90 (ms)", BENCH_COL_NUM, false},
    {"p99_ms", "p99 (ms)", BENCH_COL_NUM, false}, {"max_ms", "max (ms)", BENCH_COL_NUM, false},
};

static const struct bench_column failure_cols[] = {
    {"cause", "Failure", BENCH_COL_TEXT, false},
    {"detail", "Detail", BENCH_COL_TEXT, false},
    {"count", "Count", BENCH_COL_INT, false},
};

static int compare_ms(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void latency_row(struct bench_table *t, const char *what, struct load_series *s)
{
    if (!s->n)
        return;
    qsort(s->v, s->n, sizeof *s->v, compare_ms);
    struct bench_cell *row = bench_table_add_row(t);
    if (!row)
        return;
    bench_row_text(t, row, "what", what);
    bench_row_num(t, row, "samples", (double)s->n);
    bench_row_num(t, row, "p50_ms", s->v[load_percentile(s->n, 500)]);
    bench_row_num(t, row, "p90_ms", s->v[load_percentile(s->n, 900)]);
    bench_row_num(t, row, "p99_ms", s->v[load_percentile(s->n, 990)]);
    bench_row_num(t, row, "max_ms", s->v[s->n - 1]);
}

static const char *load_latency_note =
    "Milliseconds. handshake: message_1 sent to the answer to message_3 received; "
    "oscore_request / unprotected_request: a request sent to its response received. "
    "A 4.01 Echo round trip before message_2 is part of the handshake. With --flood-sources: "
    "handshake_unloaded and handshake_flood, the two phases.";

int load_report(struct load_run *r, struct load_result *res, const struct load_writer_delta *wd,
                struct bench_report *report)
{
    struct load_phase_result *phases = res->phases;
    size_t n_phases = res->n_phases;
    bool partial = res->partial;
    struct load_series unloaded_lat = res->unloaded_lat;
    struct bench_effort effort;
    bench_effort_default(&effort);
    effort.repeat = 0; /* not a sampled benchmark */
    bench_report_init(report, r->cfg->ops->name, &effort);
    report->command = "load";
    report->mode = "load";
    report->partial = partial;
    struct bench_table *t =
        bench_table_new("load", "Load", load_cols, sizeof load_cols / sizeof load_cols[0]);
    struct bench_table *lt = bench_table_new("load_latency", "Latency", latency_cols,
                                             sizeof latency_cols / sizeof latency_cols[0]);
    struct bench_table *at = bench_table_new("load_answers", "Answers", answer_cols,
                                             sizeof answer_cols / sizeof answer_cols[0]);
    struct bench_table *ft = bench_table_new("load_failures", "Failures by cause", failure_cols,
                                             sizeof failure_cols / sizeof failure_cols[0]);
    struct bench_table *flt = r->flood.sources
                                  ? bench_table_new("load_flood", "Flood", flood_cols,
                                                    sizeof flood_cols / sizeof flood_cols[0])
                                  : NULL;
    if (!t || !lt || !at || !ft || !bench_report_add(report, t) || !bench_report_add(report, lt) ||
        !bench_report_add(report, at) || !bench_report_add(report, ft) ||
        (r->flood.sources && (!flt || !bench_report_add(report, flt))))
        return TOOLS_ERR_INTERNAL;
    snprintf(lt->note, sizeof lt->note, "%s", load_latency_note);
    snprintf(lt->empty, sizeof lt->empty, "No latency samples: no %s completed.",
             phases[0].plain ? "request" : "handshake or request");
    snprintf(ft->empty, sizeof ft->empty, "No failures.");
    int nl = snprintf(
        t->note, sizeof t->note,
        "%s, method %d, suite %d, %u request%s of %d bytes per handshake, one process, "
        "one socket per peer.",
        phases[0].plain ? "Unprotected requests, no EDHOC" : "EDHOC over CoAP (RFC 9528 A.2)",
        r->method, r->suite, r->requests_per_peer, r->requests_per_peer == 1 ? "" : "s",
        LOAD_PAYLOAD);
    if (nl > 0 && (size_t)nl < sizeof t->note)
        snprintf(t->note + nl, sizeof t->note - (size_t)nl, "%s",
                 r->responder_pid > 0
                     ? " The responder runs on this host: its CPU time (with its workers', "
                       "responder --workers) comes from /proc, and per CPU-second figures are "
                       "what it sustains per core whatever the generator beside it costs."
                     : " The responder is not a process of this host (or not visible): no CPU "
                       "figures (see --responder-pid).");
    if (wd->known) {
        size_t used = strlen(t->note);
        snprintf(t->note + used, sizeof t->note - used,
                 " State writer (%s): %" PRIu64 " commits of %" PRIu64 " rows (%.1f rows per "
                 "commit, %.1f commits/s, %.4f commits per handshake: one WAL fsync each), %" PRIu64
                 " failed.",
                 wd->path, wd->commits, wd->rows,
                 wd->commits ? (double)wd->rows / (double)wd->commits : 0.0,
                 res->first_seconds > 0 ? (double)wd->commits / res->first_seconds : 0.0,
                 r->hs_ok ? (double)wd->commits / (double)r->hs_ok : 0.0, wd->failed);
    }
    if (n_phases == 2 && phases[1].plain_code == COAP_CODE_UNAUTHORIZED) {
        size_t used = strlen(t->note);
        snprintf(t->note + used, sizeof t->note - used, "%s",
                 " The unprotected requests were answered 4.01 (the responder serves /echo "
                 "only under OSCORE), less work than the OSCORE ones: start it with "
                 "--allow-unprotected for a like-for-like baseline.");
    }
    /* What one core could sustain if the responder did nothing but its
     * crypto: the target compares the measured rate with it. Per responder
     * CPU-second the target is issue #15's 0.85 (the kernel's loopback
     * path alone costs about 0.18 of the floor on our hosts: see
     * docs/DESIGN.md, "Workers"); per wall second, with no CPU figures,
     * 0.6. */
    double floor_us = NAN, floor_rate = NAN;
    if (!partial && !phases[0].plain && phases[0].handshakes > 0) {
        struct bench_effort fe;
        bench_effort_default(&fe);
        fe.min_time = 0.3;
        fe.interrupted = r->interrupted;
        double fi = 0, fr = 0;
        /* Timed on the CPUs the responder may run on (it is idle now): a
         * responder pinned with taskset is compared with its own core's
         * crypto, not with that of the core the generator ran on. */
        cpu_set_t own, theirs;
        bool moved = r->responder_pid > 0 &&
                     sched_getaffinity((pid_t)r->responder_pid, sizeof theirs, &theirs) == 0 &&
                     sched_getaffinity(0, sizeof own, &own) == 0 &&
                     sched_setaffinity(0, sizeof theirs, &theirs) == 0;
        int frc = bench_handshake_floor(&fe, r->floor_sides, r->method, r->suite, r->id_cred_type,
                                        &fi, &fr, report->error, sizeof report->error);
        if (frc == 0 && fr > 0) {
            floor_us = fr;
            floor_rate = 1e6 / fr;
        }
        if (moved)
            (void)sched_setaffinity(0, sizeof own, &own);
    }
    for (size_t k = 0; k < n_phases; k++) {
        const struct load_phase_result *ph = &phases[k];
        struct bench_cell *row = bench_table_add_row(t);
        if (!row)
            break;
        /* A rate over no time is unknown (null), never NaN or infinity. */
        bool timed = ph->seconds > 0;
        bench_row_text(t, row, "uri", r->uri);
        bench_row_num(t, row, "peers", (double)r->n_peers);
        bench_row_num(t, row, "seconds", ph->seconds);
        bench_row_num(t, row, "handshakes", (double)ph->handshakes);
        bench_row_num(t, row, "handshakes_per_s", timed ? ph->handshakes / ph->seconds : NAN);
        bench_row_num(t, row, "requests", (double)ph->requests);
        bench_row_num(t, row, "requests_per_s", timed ? ph->requests / ph->seconds : NAN);
        bench_row_num(t, row, "failures", (double)ph->failures);
        bench_row_num(t, row, "echo_challenges", (double)ph->echo_challenges);
        bench_row_text(t, row, "mode", ph->plain ? "unprotected" : "OSCORE");
        bench_row_num(t, row, "flood_sources", (double)ph->flood_sources);
        bench_row_num(t, row, "generator_cpu_s", ph->generator_cpu_s);
        bench_row_text(
            t, row, "saturated",
            load_saturated(ph->seconds, ph->cpu_s, ph->generator_cpu_s, r->responder_processes));
        bool cpu = !isnan(ph->cpu_s) && ph->cpu_s > 0;
        /* An unknown process (a remote responder, --responder-pid 0): NaN,
         * which JSON prints as null and the tables as a dash (issue 14). */
        bench_row_num(t, row, "responder_pid",
                      r->responder_pid > 0 ? (double)r->responder_pid : NAN);
        bench_row_num(t, row, "responder_processes",
                      cpu && r->responder_processes ? (double)r->responder_processes : NAN);
        bench_row_num(t, row, "responder_cpu_s", cpu ? ph->cpu_s : NAN);
        bench_row_num(t, row, "handshakes_per_cpu_s",
                      cpu && !ph->plain ? ph->handshakes / ph->cpu_s : NAN);
        bench_row_num(t, row, "requests_per_cpu_s", cpu ? ph->requests / ph->cpu_s : NAN);
        double of_floor = NAN, cpu_of_floor = NAN;
        /* The handshake target is about handshakes alone: requests would
         * share the core. */
        if (!ph->plain && floor_rate > 0 && r->requests_per_peer == 0 && timed && k == 0) {
            of_floor = (ph->handshakes / ph->seconds) / floor_rate;
            if (cpu)
                cpu_of_floor = (ph->handshakes / ph->cpu_s) / floor_rate;
            char name[200];
            snprintf(name, sizeof name,
                     "Responder handshakes %s / its crypto floor rate on one core (method %d, "
                     "suite %d)",
                     cpu ? "per responder CPU-second" : "per second", r->method, r->suite);
            bench_report_target_at_least(report,
                                         cpu ? "responder_handshakes_over_floor.cpu"
                                             : "responder_handshakes_over_floor.wall",
                                         name, cpu ? cpu_of_floor : of_floor,
                                         cpu ? RESPONDER_CPU_OF_FLOOR_TARGET : 0.6, "");
        }
        bench_row_num(t, row, "responder_floor_us", ph->plain ? NAN : floor_us);
        bench_row_num(t, row, "floor_rate", ph->plain ? NAN : floor_rate);
        bench_row_num(t, row, "of_floor", of_floor);
        bench_row_num(t, row, "cpu_of_floor", cpu_of_floor);
    }
    if (n_phases == 2 && phases[1].requests > 0 && phases[0].requests > 0 &&
        phases[0].seconds > 0 && phases[1].seconds > 0) {
        double wall =
            (phases[0].requests / phases[0].seconds) / (phases[1].requests / phases[1].seconds);
        bool cpu = !isnan(phases[0].cpu_s) && !isnan(phases[1].cpu_s) && phases[0].cpu_s > 0 &&
                   phases[1].cpu_s > 0;
        double per_cpu =
            cpu ? (phases[0].requests / phases[0].cpu_s) / (phases[1].requests / phases[1].cpu_s)
                : NAN;
        char name[200];
        snprintf(name, sizeof name, "OSCORE requests %s / unprotected requests %s",
                 cpu ? "per responder CPU-second" : "per second",
                 cpu ? "per responder CPU-second" : "per second");
        bench_report_target_at_least(
            report, cpu ? "oscore_over_unprotected.cpu" : "oscore_over_unprotected.wall", name,
            cpu ? per_cpu : wall, 0.9, "");
        if (cpu) {
            snprintf(name, sizeof name,
                     "OSCORE requests per second / unprotected requests per "
                     "second (wall clock, generator included)");
            bench_report_target_at_least(report, "oscore_over_unprotected.wall", name, wall, 0.9,
                                         "");
        }
    }
    double p50_unloaded = NAN, p99_unloaded = NAN;
    if (unloaded_lat.n) {
        latency_row(lt, "handshake_unloaded", &unloaded_lat); /* sorts it */
        p50_unloaded = unloaded_lat.v[load_percentile(unloaded_lat.n, 500)];
        p99_unloaded = unloaded_lat.v[load_percentile(unloaded_lat.n, 990)];
    }
    latency_row(lt, r->flood.sources ? "handshake_flood" : "handshake", &r->hs_lat);
    if (flt) {
        struct load_flood *f = &r->flood;
        struct bench_cell *fr = bench_table_add_row(flt);
        double p50_flood = NAN, p99_flood = NAN;
        if (r->hs_lat.n) {
            p50_flood = r->hs_lat.v[load_percentile(r->hs_lat.n, 500)];
            p99_flood = r->hs_lat.v[load_percentile(r->hs_lat.n, 990)];
        }
        double tries0 = (double)(phases[0].handshakes + phases[0].failures);
        double tries1 = (double)(phases[1].handshakes + phases[1].failures);
        double ok0 = tries0 > 0 ? phases[0].handshakes / tries0 : NAN;
        double ok1 = tries1 > 0 ? phases[1].handshakes / tries1 : NAN;
        double ratio = p99_unloaded > 0 ? p99_flood / p99_unloaded : NAN;
        if (fr) {
            bench_row_num(flt, fr, "sources", (double)f->sources);
            bench_row_num(flt, fr, "rate", f->rate);
            bench_row_num(flt, fr, "sent", (double)f->sent);
            bench_row_num(flt, fr, "sent_per_s",
                          phases[1].seconds > 0 ? (double)f->sent / phases[1].seconds : NAN);
            bench_row_num(flt, fr, "send_errors", (double)f->send_errors);
            bench_row_num(flt, fr, "answered_echo", (double)f->answered_echo);
            bench_row_num(flt, fr, "answered_message_2", (double)f->answered_message_2);
            bench_row_num(flt, fr, "answered_other", (double)f->answered_other);
            bench_row_num(flt, fr, "echo_resent", (double)f->echo_resent);
            bench_row_num(flt, fr, "success_unloaded", ok0);
            bench_row_num(flt, fr, "success_flood", ok1);
            bench_row_num(flt, fr, "p50_unloaded_ms", p50_unloaded);
            bench_row_num(flt, fr, "p99_unloaded_ms", p99_unloaded);
            bench_row_num(flt, fr, "p50_flood_ms", p50_flood);
            bench_row_num(flt, fr, "p99_flood_ms", p99_flood);
            bench_row_num(flt, fr, "p99_ratio", ratio);
        }
        snprintf(flt->note, sizeof flt->note,
                 "The peers' handshakes alone (unloaded), then the same budget beside %zu "
                 "message_1 sources (127.1.0.1 and up, one socket choosing each datagram's "
                 "source address) at %.0f message_1/s that never send message_3%s. Success: "
                 "handshakes / (handshakes + failures) of the peers.",
                 f->sources, f->rate,
                 f->answer_echo ? "; they answer a 4.01 Echo, so their addresses are verified"
                                : "; they ignore a 4.01 Echo, as a spoofed source must");
        bench_report_target(report, "flood_p99_over_unloaded",
                            "Peers' p99 handshake latency under the flood / unloaded p99", ratio,
                            5.0, "");
        bench_report_target_at_least(report, "flood_success",
                                     "Peers' handshake success rate under the flood", ok1, 1.0, "");
    }
    /* With --vs-plain, req_lat holds the OSCORE requests whatever the last
     * window was. */
    latency_row(lt, r->plain && !r->vs_plain ? "unprotected_request" : "oscore_request",
                &r->req_lat);
    if (r->vs_plain)
        latency_row(lt, "unprotected_request", &r->plain_lat);
    /* What the responder answered, by code: said, never assumed. */
    long answered = 0;
    for (int kind = 0; kind < 2; kind++) {
        for (int prot = 1; prot >= 0; prot--) {
            for (int code = 0; code < 256; code++) {
                long n = r->answers[kind][prot][code];
                if (!n)
                    continue;
                struct bench_cell *ar = bench_table_add_row(at);
                if (!ar)
                    break;
                char cs[8];
                bench_row_text(at, ar, "requests", kind ? "unprotected" : "OSCORE");
                bench_row_text(at, ar, "response", prot ? "OSCORE" : "unprotected");
                bench_row_text(at, ar, "code", load_coap_code_text((uint8_t)code, cs));
                bench_row_num(at, ar, "count", (double)n);
                answered += n;
            }
        }
    }
    if (answered)
        snprintf(at->note, sizeof at->note,
                 "%ld answers by the kind of request, the protection of the answer and its code "
                 "(the inner code of a verified OSCORE response).",
                 answered);
    else if (!r->plain && !r->vs_plain && r->requests_per_peer == 0)
        snprintf(at->note, sizeof at->note, "No requests (--requests-per-peer 0).");
    else
        snprintf(at->note, sizeof at->note, "No request was answered.");
    if (r->no_oscore)
        snprintf(ft->note, sizeof ft->note,
                 "%ld OSCORE request%s answered without OSCORE (no_oscore): failures, not "
                 "requests, whatever the code (an unprotected answer to an OSCORE request proves "
                 "nothing, RFC 8613 Section 2).",
                 r->no_oscore, r->no_oscore == 1 ? " was" : "s were");
    for (size_t i = 0; i < r->n_causes; i++) {
        struct bench_cell *fr = bench_table_add_row(ft);
        if (!fr)
            break;
        bench_row_text(ft, fr, "cause", r->causes[i].cause);
        if (r->causes[i].detail[0])
            bench_row_text(ft, fr, "detail", r->causes[i].detail);
        bench_row_num(ft, fr, "count", (double)r->causes[i].count);
    }
    res->unloaded_lat = unloaded_lat;
    return 0;
}
