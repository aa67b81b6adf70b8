/*
 * edhoc-cli load: the responder's state writer figures (the file
 * cli/state_stats.h describes, next to its database), and
 * --vs-state-none, the same load against two responders in two runs of
 * this program, then both rows and their ratios.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h> /* isnan, NAN */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "bench_vs_state.h"
#include "util.h"

/* ---- The responder's state writer (cli/state_stats.h) ----
 * A local responder with a state directory holds its database open: the
 * figures file sits next to it. */
bool state_stats_path_of(long pid, char *out, size_t cap)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
    DIR *d = pid > 0 ? opendir(dir) : NULL;
    if (!d)
        return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        char link[400], target[PATH_MAX];
        snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        size_t fl = strlen("/" EDHOC_STATE_FILE);
        if ((size_t)n > fl && !strcmp(target + n - fl, "/" EDHOC_STATE_FILE)) {
            target[n - fl] = '\0';
            found = (size_t)snprintf(out, cap, "%s/%s", target, EDHOC_STATE_STATS_FILE) < cap;
        } else if (target[0] == '/') {
            /* A fleet's responder holds its figures directory open. */
            struct stat sb;
            char path[PATH_MAX + 64];
            snprintf(path, sizeof path, "%s/%s", target, EDHOC_STATE_STATS_FILE);
            struct cli_state_stats s;
            if (stat(target, &sb) == 0 && S_ISDIR(sb.st_mode) && cli_state_stats_read(path, &s) &&
                s.fleet && s.pid == pid)
                found = (size_t)snprintf(out, cap, "%s", path) < cap;
        }
    }
    closedir(d);
    return found;
}

/* The file is replaced every second: the next one after `before`, or
 * what is there after 1.5 s. */
bool state_stats_fresh(const char *path, const struct cli_state_stats *before,
                       struct cli_state_stats *after)
{
    uint64_t until = cli_now_ns() + 1500000000ull;
    bool ok = false;
    do {
        ok = cli_state_stats_read(path, after);
        if (ok && after->uptime_s > before->uptime_s)
            return true;
        usleep(50000);
    } while (cli_now_ns() < until);
    return ok;
}

struct load_writer_delta state_writer_delta(const struct cli_state_stats *a,
                                            const struct cli_state_stats *b)
{
    struct load_writer_delta d = {0};
    d.fleet = a->fleet && b->fleet && b->pid == a->pid && b->round_trips >= a->round_trips;
    if (d.fleet) {
        d.round_trips = b->round_trips - a->round_trips;
        d.fleet_handshakes = b->handshakes - a->handshakes;
        d.serving_round_trips = b->serving_round_trips - a->serving_round_trips;
        d.fleet_requests = b->oscore_requests - a->oscore_requests;
        return d;
    }
    d.known = b->pid == a->pid && b->w.commits >= a->w.commits;
    if (d.known) {
        d.commits = b->w.commits - a->w.commits;
        d.rows = b->w.rows - a->w.rows;
        d.failed = b->w.failed_commits - a->w.failed_commits;
    }
    return d;
}

/* ---- --vs-state-none ----
 * The same load twice, one run after the other, each in a child of its
 * own (this program, --json): against URI, a responder with its state
 * directory, then URI2, one with --state-dir none; then both rows and
 * their ratios (issue 24's targets). */
struct vs_row {
    double handshakes, per_s, per_cpu_s, p99_ms;
    long pid;
    struct load_writer_delta w;
};

static double json_num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static int vs_child(char **args, struct vs_row *row)
{
    int fds[2];
    if (pipe(fds))
        return CLI_EXIT_INTERNAL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return CLI_EXIT_INTERNAL;
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv("/proc/self/exe", args);
        _exit(CLI_EXIT_INTERNAL);
    }
    close(fds[1]);
    size_t n = 0, cap = 1 << 16;
    char *text = malloc(cap);
    for (ssize_t k; text && (k = read(fds[0], text + n, cap - n - 1)) != 0;) {
        if (k < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        n += (size_t)k;
        if (n + 1 == cap) {
            char *t = realloc(text, cap *= 2);
            if (!t)
                break;
            text = t;
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!text)
        return CLI_EXIT_INTERNAL;
    text[n] = '\0';
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : CLI_EXIT_INTERNAL;
    json_t *root = json_loads(text, 0, NULL);
    free(text);
    json_t *tables = root ? json_object_get(root, "tables") : NULL;
    size_t i;
    json_t *tab;
    json_array_foreach(tables, i, tab)
    {
        const char *name = json_string_value(json_object_get(tab, "name"));
        json_t *rows = json_object_get(tab, "rows");
        json_t *r0 = json_array_get(rows, 0);
        if (!name || !r0)
            continue;
        if (!strcmp(name, "load")) {
            row->handshakes = json_num(r0, "handshakes");
            row->per_s = json_num(r0, "handshakes_per_s");
            row->per_cpu_s = json_num(r0, "handshakes_per_cpu_s");
            double pid_v = json_num(r0, "responder_pid");
            row->pid = isnan(pid_v) ? 0 : (long)pid_v;
        } else if (!strcmp(name, "load_latency")) {
            size_t j;
            json_t *lr;
            json_array_foreach(rows, j, lr)
            {
                const char *what = json_string_value(json_object_get(lr, "what"));
                if (what && !strcmp(what, "handshake"))
                    row->p99_ms = json_num(lr, "p99_ms");
            }
        }
    }
    bool parsed = root && !isnan(row->per_s);
    json_decref(root);
    return code ? code : parsed ? 0 : CLI_EXIT_INTERNAL;
}

static void vs_num(char *out, size_t cap, double v, const char *fmt)
{
    if (isnan(v) || isinf(v))
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, fmt, v);
}

/* Adds one run to the totals of its responder: sums of handshakes, wall
 * seconds and responder CPU-seconds (each rate is recomputed from them),
 * and each run's p99 for their median. */
struct vs_total {
    double handshakes, secs, cpu_s;
    double p99[20];
    int runs;
    struct load_writer_delta w;
};

static void vs_add(struct vs_total *t, const struct vs_row *r)
{
    t->handshakes += r->handshakes;
    if (r->per_s > 0)
        t->secs += r->handshakes / r->per_s;
    t->cpu_s += r->per_cpu_s > 0 ? r->handshakes / r->per_cpu_s : NAN;
    if (t->runs < 20)
        t->p99[t->runs] = r->p99_ms;
    t->runs++;
    t->w.known = (t->runs == 1 || t->w.known) && r->w.known;
    t->w.commits += r->w.commits;
    t->w.rows += r->w.rows;
    t->w.failed += r->w.failed;
    t->w.fleet = (t->runs == 1 || t->w.fleet) && r->w.fleet;
    t->w.round_trips += r->w.round_trips;
    t->w.fleet_handshakes += r->w.fleet_handshakes;
    t->w.serving_round_trips += r->w.serving_round_trips;
    t->w.fleet_requests += r->w.fleet_requests;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static struct vs_row vs_of_total(struct vs_total *t)
{
    struct vs_row r = {0};
    r.handshakes = t->handshakes;
    r.per_s = t->secs > 0 ? t->handshakes / t->secs : NAN;
    r.per_cpu_s = t->cpu_s > 0 ? t->handshakes / t->cpu_s : NAN;
    int n = t->runs < 20 ? t->runs : 20;
    qsort(t->p99, (size_t)n, sizeof t->p99[0], cmp_double);
    r.p99_ms = n ? (n % 2 ? t->p99[n / 2] : (t->p99[n / 2 - 1] + t->p99[n / 2]) / 2) : NAN;
    r.w = t->w;
    return r;
}

int load_vs_state_none(int argc, char **argv, int uri_index, const bool *skip, const char *uri2,
                       int rounds)
{
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (!args)
        return CLI_EXIT_INTERNAL;
    struct vs_total totals[2];
    memset(totals, 0, sizeof totals);
    const char *uris[2] = {argv[uri_index], uri2};
    /* Rounds in the order A B, B A, A B ...: a machine that gets busier
     * or quieter during the runs weighs on both rows alike. */
    for (int run = 0; run < 2 * rounds; run++) {
        int round = run / 2;
        int k = (run % 2) ^ (round % 2);
        int n = 0;
        args[n++] = "edhoc-cli";
        for (int i = 0; i < argc; i++) {
            if (skip[i])
                continue;
            args[n++] = i == uri_index ? (char *)uris[k] : argv[i];
        }
        args[n++] = "--json";
        args[n++] = "-q";
        args[n] = NULL;
        /* The writer's figures around the run, when it is local. */
        struct load_run probe;
        memset(&probe, 0, sizeof probe);
        long pid = load_parse_uri(&probe, uris[k]) == 0 ? load_responder_of_port(&probe) : 0;
        char path[PATH_MAX];
        struct cli_state_stats before, after;
        bool stats = pid > 0 && state_stats_path_of(pid, path, sizeof path) &&
                     cli_state_stats_read(path, &before);
        fprintf(stderr, "edhoc-cli load: run %d of %d: %s (responder pid %ld, %s)\n", run + 1,
                2 * rounds, uris[k], pid, stats ? path : "no state writer figures");
        struct vs_row row;
        memset(&row, 0, sizeof row);
        int code = vs_child(args, &row);
        if (code) {
            fprintf(stderr, "edhoc-cli load: the run against %s failed (exit %d)\n", uris[k], code);
            free(args);
            return code;
        }
        if (stats && state_stats_fresh(path, &before, &after))
            row.w = state_writer_delta(&before, &after);
        vs_add(&totals[k], &row);
    }
    struct vs_row rows[2] = {vs_of_total(&totals[0]), vs_of_total(&totals[1])};
    free(args);
    /* What each responder keeps its state in, from its figures. */
    const char *kind[2];
    for (int k = 0; k < 2; k++)
        kind[k] = rows[k].w.fleet ? "postgresql" : rows[k].w.known ? "default" : "none";
    printf("## edhoc-cli load --vs\n\n"
           "The same load against two responders, %d round%s of one run each, alternately in "
           "either order; rates from the sums of all runs, p99 the median of the runs'. State: "
           "what the responder's figures say it keeps contexts in (default: SQLite in its state "
           "directory; postgresql: a fleet's store, --state postgresql://...; none: no "
           "figures, --state-dir none). Commits: the SQLite writer's (DIR/" EDHOC_STATE_STATS_FILE
           "), each one transaction and one WAL fsync; round trips: the fleet store's, per "
           "handshake it completed, and those of serving requests (all but the puts) per OSCORE "
           "request it answered.\n\n"
           "| Responder | State | Handshakes | Handshakes/s | Handshakes per responder "
           "CPU-second | p99 (ms) | Commits | Rows per commit | Commits/s | Commits per "
           "handshake | Store round trips per handshake | Store round trips per OSCORE request "
           "|\n"
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
           rounds, rounds == 1 ? "" : "s");
    double rt_per_hs[2], rt_per_req[2];
    for (int k = 0; k < 2; k++) {
        const struct vs_row *r = &rows[k];
        char c[7][32];
        double secs = r->per_s > 0 ? r->handshakes / r->per_s : NAN;
        vs_num(c[0], sizeof c[0], r->w.known ? (double)r->w.commits : NAN, "%.0f");
        vs_num(c[1], sizeof c[1],
               r->w.known && r->w.commits ? (double)r->w.rows / (double)r->w.commits : NAN, "%.1f");
        vs_num(c[2], sizeof c[2], r->w.known ? (double)r->w.commits / secs : NAN, "%.1f");
        vs_num(c[3], sizeof c[3],
               r->w.known && r->handshakes > 0 ? (double)r->w.commits / r->handshakes : NAN,
               "%.4f");
        vs_num(c[4], sizeof c[4], r->per_cpu_s, "%.0f");
        rt_per_hs[k] = r->w.fleet && r->w.fleet_handshakes
                           ? (double)r->w.round_trips / (double)r->w.fleet_handshakes
                           : NAN;
        vs_num(c[5], sizeof c[5], rt_per_hs[k], "%.3f");
        rt_per_req[k] = r->w.fleet && r->w.fleet_requests
                            ? (double)r->w.serving_round_trips / (double)r->w.fleet_requests
                            : NAN;
        vs_num(c[6], sizeof c[6], rt_per_req[k], "%.4f");
        printf("| %s | %s | %.0f | %.0f | %s | %.2f | %s | %s | %s | %s | %s | %s |\n", uris[k],
               kind[k], r->handshakes, r->per_s, c[4], r->p99_ms, c[0], c[1], c[2], c[3], c[5],
               c[6]);
    }
    double wall = rows[0].per_s / rows[1].per_s;
    double cpu = rows[0].per_cpu_s / rows[1].per_cpu_s;
    double p99 = rows[0].p99_ms / rows[1].p99_ms;
    double syncs = rows[0].w.known && rows[0].handshakes > 0
                       ? (double)rows[0].w.commits / rows[0].handshakes
                       : NAN;
    char cw[32], cc[32], cp[32], cs[32];
    vs_num(cw, sizeof cw, wall, "%.3f");
    vs_num(cc, sizeof cc, cpu, "%.3f");
    vs_num(cp, sizeof cp, p99, "%.3f");
    vs_num(cs, sizeof cs, syncs, "%.4f");
    printf("| %s / %s | | | %s | %s | %s | | | | | | |\n\n", kind[0], kind[1], cw, cc, cp);
    if (!strcmp(kind[0], "default") && !strcmp(kind[1], "none"))
        printf("Targets (issue 24): per responder CPU-second %s (at least 0.95): %s; wall clock "
               "%s (at least 0.95): %s; p99 %s (at most 1.2): %s; commits per handshake %s (at "
               "most 0.05): %s.\n",
               cc,
               isnan(cpu)    ? "unknown"
               : cpu >= 0.95 ? "met"
                             : "not met",
               cw,
               isnan(wall)    ? "unknown"
               : wall >= 0.95 ? "met"
                              : "not met",
               cp,
               isnan(p99)   ? "unknown"
               : p99 <= 1.2 ? "met"
                            : "not met",
               cs,
               isnan(syncs)    ? "unknown"
               : syncs <= 0.05 ? "met"
                               : "not met");
    int fl = !strcmp(kind[0], "postgresql") ? 0 : !strcmp(kind[1], "postgresql") ? 1 : -1;
    if (fl >= 0 && !strcmp(kind[1 - fl], "default")) {
        double ratio = rows[fl].per_cpu_s / rows[1 - fl].per_cpu_s;
        char cr[32], ct[32], cq[32];
        vs_num(cr, sizeof cr, ratio, "%.3f");
        vs_num(ct, sizeof ct, rt_per_hs[fl], "%.3f");
        vs_num(cq, sizeof cq, rt_per_req[fl], "%.4f");
        /* A load's requests go to the responder that made the context:
         * every one a cache hit, so the figure is the cache hit's. */
        printf("Targets (issue 27): postgresql / default (SQLite) handshakes per responder "
               "CPU-second %s "
               "(at least 0.9): %s; store round trips per handshake %s (at most 1): %s; per "
               "OSCORE request on a cache hit %s (0 but a reservation per 256 responses): %s.\n",
               cr,
               isnan(ratio)   ? "unknown"
               : ratio >= 0.9 ? "met"
                              : "not met",
               ct,
               isnan(rt_per_hs[fl]) ? "unknown"
               : rt_per_hs[fl] <= 1 ? "met"
                                    : "not met",
               cq,
               isnan(rt_per_req[fl])         ? "unknown (no requests: --requests-per-peer)"
               : rt_per_req[fl] <= 1.0 / 256 ? "met"
                                             : "not met");
    }
    return CLI_EXIT_OK;
}
