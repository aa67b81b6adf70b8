/*
 * edhoc-cli bench: crypto, handshake and OSCORE benchmarks on this host,
 * printed as Markdown tables (default), JSON or CSV, optionally drawn as
 * SVG charts; and the load generator (`edhoc-cli bench load`, also
 * cmd_load) that drives a responder over CoAP from many sockets.
 */
#include <errno.h>
#include <math.h> /* NAN */
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/edhoc.h"
#include "edhoc/oscore.h"
#include "edhoc/transport.h"
#include "bench_output.h"
#include "bench_sides.h"
#include "commands.h"
#include "edhoc_args.h"
#include "net_report.h"
#include "progress.h"
#include "util.h"
#include "state_stats.h"

#include <jansson.h>
#include <sys/wait.h>

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
                return cli_opt_error(&p, "unknown benchmark '%s' (crypto, handshake, oscore, "
                                         "all, contexts; or load URI)", p.value);
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
                return cli_opt_error(&p, "--suites: expected a list like 0,2,3, got '%s'",
                                     p.value);
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
        return cli_opt_error(&p, "--suites chooses the handshakes of bench handshake (or all), "
                                 "not of bench %s", which);
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

/* ======================================================================
 * edhoc-cli load URI: many initiators in one process, each with its own
 * socket and C_I, running EDHOC over CoAP (RFC 9528 Appendix A.2) against
 * a responder and then OSCORE requests with the new context, in a loop.
 * One thread drives every peer's state machine without blocking.
 * ====================================================================== */

#define LOAD_MAX_PEERS 1000
#define LOAD_MAX_CAUSES 16
#define LOAD_PAYLOAD 32
#define LOAD_MAX_SAMPLES 2000000

enum load_state { PEER_IDLE, PEER_WAIT_M2, PEER_WAIT_M3, PEER_WAIT_RESPONSE, PEER_DONE };

struct load_peer {
    struct edhoc_transport *t;
    enum load_state state;
    struct edhoc_session s;
    struct oscore_context osc;
    struct oscore_binding b;
    uint8_t token[8];
    size_t token_len;
    uint64_t started_ns; /* the current handshake */
    uint64_t sent_ns;    /* the outstanding request */
    unsigned requests_left;
    unsigned generation; /* handshakes started by this peer (part of C_I) */
    bool have_ctx;       /* an OSCORE context from this peer's last handshake */
    bool sent_plain;     /* the outstanding request is unprotected */
    /* The current handshake's message_1 request, kept to be sent again
     * with the Echo value of a 4.01 (RFC 9175 Section 2.3). */
    uint8_t m1[512];
    size_t m1_len;
    bool echo_sent; /* this handshake's message_1 already carried an Echo */
};

/* --flood-sources: message_1s from many source addresses that never send
 * message_3, while the peers run their handshakes beside them. One
 * socket bound to the wildcard address chooses each datagram's source
 * among 127.1.0.1 and up with IP_PKTINFO, so the number of sources is
 * not limited by open files (127.0.0.0/8 is all loopback on Linux). */
#define FLOOD_TEMPLATES 8
#define FLOOD_BATCH 512 /* at most this many sends per turn of the loop */

struct load_flood {
    size_t sources;
    double rate;        /* message_1s per second over all sources */
    bool answer_echo;   /* prove each source's address, then still abandon */
    int fd;
    struct sockaddr_in dst;
    uint8_t tmpl[FLOOD_TEMPLATES][256];
    size_t tmpl_len[FLOOD_TEMPLATES];
    uint16_t mid;
    bool active;
    uint64_t started_ns;
    uint64_t sent, send_errors, echo_resent;
    /* What the responder answered the flood, by kind. */
    uint64_t answered_echo, answered_message_2, answered_other;
};

struct load_series {
    double *v;
    size_t n, cap;
};

struct load_run {
    struct cli_edhoc_opts o;
    struct cli_side side;
    struct edhoc_received rx;
    struct load_peer *peers;
    size_t n_peers;
    char uri[256];
    char host[128];
    uint16_t port;
    unsigned requests_per_peer;
    double duration_s;
    long max_handshakes; /* 0: no limit (duration only) */
    int timeout_ms;
    bool plain;
    bool vs_plain;     /* alternate OSCORE and unprotected windows to compare them */
    /* --vs-plain: totals per kind of window, [0] OSCORE, [1] unprotected. */
    double mode_seconds[2], mode_cpu[2], mode_generator_cpu[2];
    long mode_echo[2];
    long mode_requests[2], mode_handshakes[2], mode_failures[2];
    struct load_series plain_lat;
    bool stopping;
    long responder_pid; /* 0: not known */
    unsigned responder_processes; /* it and its workers, at the last CPU sample */
    bool pid_given;
    uint8_t plain_code; /* response code of the unprotected requests */
    long hs_started, hs_ok, req_ok, failures;
    long echo_challenges; /* 4.01 + Echo answers to the peers' message_1s */
    struct load_flood flood;
    long no_oscore; /* OSCORE requests answered without OSCORE (among failures) */
    /* Answers by the kind of request [OSCORE, unprotected], whether the
     * answer was protected [no, yes] and its code (the inner code of a
     * verified OSCORE response): what the responder said, counted. */
    long answers[2][2][256];
    struct {
        char cause[32];   /* a word: timeout, transport, edhoc_error, ... */
        char detail[64];  /* the code or library error, "" when none */
        long count;
    } causes[LOAD_MAX_CAUSES];
    size_t n_causes;
    struct load_series hs_lat, req_lat;
    uint8_t msg[EDHOC_MAX_MESSAGE + 16];
    uint8_t coap[EDHOC_TRANSPORT_MAX_MESSAGE];
    uint8_t resp[EDHOC_TRANSPORT_MAX_MESSAGE];
    uint8_t inner[EDHOC_TRANSPORT_MAX_MESSAGE];
};

static void series_add(struct load_series *s, double v)
{
    if (s->n == s->cap) {
        if (s->cap >= LOAD_MAX_SAMPLES)
            return; /* the percentiles of the first samples are enough */
        size_t cap = s->cap ? s->cap * 2 : 1024;
        double *bigger = realloc(s->v, cap * sizeof *bigger);
        if (!bigger)
            return;
        s->v = bigger;
        s->cap = cap;
    }
    s->v[s->n++] = v;
}

/* A failure: cause is a word (the JSON enum), detail the code or library
 * error that goes with it (NULL: none). */
static void load_cause(struct load_run *r, const char *cause, const char *detail)
{
    r->failures++;
    if (!detail)
        detail = "";
    for (size_t i = 0; i < r->n_causes; i++) {
        if (!strcmp(r->causes[i].cause, cause) && !strcmp(r->causes[i].detail, detail)) {
            r->causes[i].count++;
            return;
        }
    }
    /* The last slot collects every cause beyond the table. */
    if (r->n_causes == LOAD_MAX_CAUSES - 1) {
        cause = "other";
        detail = "";
    }
    size_t i = r->n_causes < LOAD_MAX_CAUSES ? r->n_causes++ : LOAD_MAX_CAUSES - 1;
    snprintf(r->causes[i].cause, sizeof r->causes[i].cause, "%s", cause);
    snprintf(r->causes[i].detail, sizeof r->causes[i].detail, "%s", detail);
    r->causes[i].count++;
}

static void load_answer(struct load_run *r, bool plain_request, bool protected_answer,
                        uint8_t code)
{
    r->answers[plain_request][protected_answer][code]++;
}

/* A CoAP request to path with an optional Content-Format and payload;
 * Message ID and token are the transport's. */
static long load_request(uint8_t code, const char *path, int cf, const uint8_t *payload,
                         size_t len, uint8_t *out, size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = code;
    m.token_len = 1;
    const char *seg = path + (path[0] == '/');
    while (*seg) {
        size_t n = strcspn(seg, "/");
        if (edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)seg, n))
            return -1;
        seg += n + (seg[n] == '/');
    }
    uint8_t cfv[4];
    if (cf >= 0 &&
        edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cfv, edhoc_coap_uint_encode((uint32_t)cf, cfv)))
        return -1;
    m.payload = len ? payload : NULL;
    m.payload_len = len;
    return edhoc_coap_msg_encode(&m, out, cap);
}

static void peer_reset(struct load_run *r, struct load_peer *p)
{
    if (p->token_len)
        edhoc_transport_client_forget(p->t, p->token, p->token_len);
    p->token_len = 0;
    edhoc_session_wipe(&p->s);
    oscore_context_wipe(&p->osc);
    p->have_ctx = false;
    p->state = PEER_IDLE;
    (void)r;
}

static void peer_fail(struct load_run *r, struct load_peer *p, const char *cause,
                      const char *detail)
{
    load_cause(r, cause, detail);
    peer_reset(r, p);
}

static int peer_send(struct load_run *r, struct load_peer *p, const uint8_t *msg, size_t len,
                     enum load_state next)
{
    if (p->token_len)
        edhoc_transport_client_forget(p->t, p->token, p->token_len);
    p->token_len = 0;
    int rc = edhoc_transport_client_send(p->t, msg, len, true, p->token, &p->token_len);
    if (rc) {
        peer_fail(r, p, "transport", edhoc_transport_strerror(rc));
        return rc;
    }
    p->sent_ns = cli_now_ns();
    p->state = next;
    return 0;
}

static bool load_budget_left(const struct load_run *r)
{
    return !r->stopping && (r->max_handshakes == 0 || r->hs_started < r->max_handshakes);
}

static void peer_send_request(struct load_run *r, struct load_peer *p)
{
    uint8_t payload[LOAD_PAYLOAD];
    memset(payload, 'x', sizeof payload);
    long n = load_request(COAP_CODE_POST, "/echo", 0, payload, sizeof payload, r->msg,
                          sizeof r->msg);
    if (n < 0) {
        peer_fail(r, p, "internal", "cannot build the request");
        return;
    }
    p->sent_plain = r->plain;
    if (r->plain) {
        peer_send(r, p, r->msg, (size_t)n, PEER_WAIT_RESPONSE);
        return;
    }
    long pn = oscore_protect_request(&p->osc, r->msg, (size_t)n, r->coap, sizeof r->coap, &p->b);
    if (pn < 0) {
        peer_fail(r, p, "oscore_protect", oscore_strerror((int)pn));
        return;
    }
    peer_send(r, p, r->coap, (size_t)pn, PEER_WAIT_RESPONSE);
}

static void peer_on_response(struct load_run *r, size_t index, const uint8_t *resp, size_t len);

/* ---- The responder's CPU time, when it runs on this host ----
 * A load generator and a responder sharing one host share its cores, so
 * the wall-clock rate may measure the generator. The handshakes per
 * CPU-second the responder itself used say what it sustains on one core. */

struct load_cpu {
    bool ok;
    double seconds;     /* user + system, of the process and its children */
    unsigned processes; /* the process and its children (responder --workers) */
};

/* Nanoseconds on a CPU of every thread of pid, from
 * /proc/PID/task/TID/schedstat (finer than the 10 ms ticks of
 * /proc/PID/stat, which matters for the short windows of --vs-plain). */
static bool schedstat_seconds(long pid, double *seconds)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/task", pid);
    DIR *d = opendir(dir);
    if (!d)
        return false;
    unsigned long long total = 0;
    bool any = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[400];
        snprintf(path, sizeof path, "%s/%.256s/schedstat", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        unsigned long long ns = 0;
        if (fscanf(f, "%llu", &ns) == 1) {
            total += ns;
            any = true;
        }
        fclose(f);
    }
    closedir(d);
    *seconds = (double)total / 1e9;
    return any;
}

/* The responder's workers are its child processes (responder
 * --workers): their CPU counts as the responder's. Children are found by
 * their parent in /proc/PID/stat (the "children" file needs a kernel
 * option). */
/* The parent of pid from /proc/PID/stat (0: unknown). */
static long parent_of(long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    long ppid = 0;
    return p && sscanf(p + 1, " %*c %ld", &ppid) == 1 ? ppid : 0;
}

static double children_schedstat_seconds(long pid, unsigned *count)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    double total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long child = strtol(e->d_name, &end, 10);
        if (*end || child <= 0 || child == pid)
            continue;
        double s = 0;
        if (parent_of(child) == pid && schedstat_seconds(child, &s)) {
            total += s;
            (*count)++;
        }
    }
    closedir(d);
    return total;
}

static void load_cpu_sample(struct load_cpu *c, long pid)
{
    c->ok = false;
    c->processes = 1;
    if (pid <= 0)
        return;
    if (schedstat_seconds(pid, &c->seconds)) {
        c->seconds += children_schedstat_seconds(pid, &c->processes);
        c->ok = true;
        return;
    }
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return;
    long hz = sysconf(_SC_CLK_TCK);
    c->seconds = (double)(ut + st) / (double)(hz > 0 ? hz : 100);
    c->ok = true;
}

/* The inode of a UDP socket bound to port on this host, or 0. */
static unsigned long udp_port_inode(uint16_t port)
{
    static const char *const tables[] = {"/proc/net/udp", "/proc/net/udp6"};
    for (size_t t = 0; t < 2; t++) {
        FILE *f = fopen(tables[t], "r");
        if (!f)
            continue;
        char line[512];
        unsigned long found = 0;
        while (!found && fgets(line, sizeof line, f)) {
            char local[80];
            unsigned lport = 0;
            unsigned long inode = 0;
            if (sscanf(line, " %*u: %79[0-9A-Fa-f]:%x %*s %*x %*s %*s %*s %*u %*u %lu", local,
                       &lport, &inode) == 3 &&
                lport == port && inode)
                found = inode;
        }
        fclose(f);
        if (found)
            return found;
    }
    return 0;
}

/* The process (not this one) holding the socket with this inode, or 0. */
static long socket_owner(unsigned long inode)
{
    char want[48];
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    DIR *proc = opendir("/proc");
    if (!proc)
        return 0;
    long owner = 0;
    struct dirent *d;
    while (!owner && (d = readdir(proc))) {
        char *end;
        long pid = strtol(d->d_name, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid())
            continue;
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
        DIR *fds = opendir(dir);
        if (!fds)
            continue;
        struct dirent *e;
        while (!owner && (e = readdir(fds))) {
            char path[320], link[64];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            ssize_t n = readlink(path, link, sizeof link - 1);
            if (n > 0) {
                link[n] = '\0';
                if (!strcmp(link, want))
                    owner = pid;
            }
        }
        closedir(fds);
    }
    closedir(proc);
    return owner;
}

/* A worker of `responder --workers N` owns a socket of the port; the
 * responder is its parent, which runs the same program (its CPU then
 * counts all the workers'). Any other owner is the responder itself. */
static long responder_of_worker(long pid)
{
    long ppid = parent_of(pid);
    if (ppid <= 1)
        return pid;
    char path[64], buf[512];
    char exe[2][PATH_MAX];
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "/proc/%ld/exe", k ? ppid : pid);
        ssize_t l = readlink(path, exe[k], sizeof exe[k] - 1);
        if (l <= 0)
            return pid;
        exe[k][l] = '\0';
    }
    if (strcmp(exe[0], exe[1]))
        return pid;
    /* The same program: a worker only if the parent is a responder too. */
    snprintf(path, sizeof path, "/proc/%ld/cmdline", ppid);
    FILE *f = fopen(path, "r");
    if (!f)
        return pid;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    size_t first = strlen(buf);
    return first + 1 < n && !strcmp(buf + first + 1, "responder") ? ppid : pid;
}

/* The local process serving the load's port, or 0. Only a host name
 * that is one of this host's loopback addresses is looked up: a remote
 * responder on the same port number is not ours to measure. */
static long socket_owner_of_port(const struct load_run *r)
{
    if (strcmp(r->host, "localhost") && strncmp(r->host, "127.", 4) && strcmp(r->host, "::1"))
        return 0;
    unsigned long inode = udp_port_inode(r->port);
    long pid = inode ? socket_owner(inode) : 0;
    return pid > 0 ? responder_of_worker(pid) : 0;
}

/* Run peer index's transport and handle its response, if any. Returns
 * true when a response was handled. */
static bool peer_service(struct load_run *r, size_t index)
{
    struct load_peer *p = &r->peers[index];
    if (p->state == PEER_DONE || p->state == PEER_IDLE)
        return false;
    edhoc_transport_run(p->t, 0);
    long n = edhoc_transport_client_wait(p->t, p->token, p->token_len, r->resp, sizeof r->resp,
                                         0);
    if (n > 0) {
        peer_on_response(r, index, r->resp, (size_t)n);
        return true;
    }
    if (n == EDHOC_TRANSPORT_ERR_TIMEOUT) {
        if ((cli_now_ns() - p->sent_ns) / 1000000 >= (uint64_t)r->timeout_ms)
            peer_fail(r, p, "timeout", NULL);
    } else {
        peer_fail(r, p, "transport", edhoc_transport_strerror((int)n));
    }
    return false;
}

static void peer_start(struct load_run *r, size_t index)
{
    struct load_peer *p = &r->peers[index];
    if (!load_budget_left(r)) {
        p->state = PEER_DONE;
        return;
    }
    if (r->plain) {
        /* Unprotected requests only: the baseline OSCORE is compared with. */
        r->hs_started++;
        p->requests_left = r->requests_per_peer ? r->requests_per_peer : 1;
        peer_send_request(r, p);
        return;
    }
    r->hs_started++;
    p->generation++;
    /* Distinct C_I per peer and handshake (3 bytes: peer, generation). */
    uint8_t c_i[3] = {(uint8_t)(0x80 | (index >> 8)), (uint8_t)index, (uint8_t)p->generation};
    int rc = edhoc_session_init(&p->s, EDHOC_INITIATOR, &r->side.cfg);
    if (!rc)
        rc = edhoc_session_set_conn_id(&p->s, c_i, sizeof c_i);
    int n = rc ? rc : edhoc_initiator_prepare_message_1(&p->s, r->msg + 1, sizeof r->msg - 1);
    if (n < 0) {
        peer_fail(r, p, "edhoc_message_1", edhoc_strerror(n));
        return;
    }
    r->msg[0] = 0xf5; /* CBOR true: message_1 follows (RFC 9528 A.2) */
    long cn = load_request(COAP_CODE_POST, EDHOC_COAP_WELL_KNOWN, EDHOC_COAP_CF_CID_EDHOC, r->msg,
                           (size_t)n + 1, r->coap, sizeof r->coap);
    if (cn < 0) {
        peer_fail(r, p, "internal", "cannot build the message_1 request");
        return;
    }
    p->echo_sent = false;
    p->m1_len = (size_t)cn <= sizeof p->m1 ? (size_t)cn : 0;
    if (p->m1_len)
        memcpy(p->m1, r->coap, p->m1_len);
    p->started_ns = cli_now_ns();
    peer_send(r, p, r->coap, (size_t)cn, PEER_WAIT_M2);
}

/* ---- The message_1 flood (--flood-sources) ---- */

static struct in_addr flood_source(size_t i)
{
    struct in_addr a;
    a.s_addr = htonl((127u << 24 | 1u << 16) + 1u + (uint32_t)i); /* 127.1.0.1 + i */
    return a;
}

/* The socket and FLOOD_TEMPLATES message_1 requests (each its own C_I
 * and ephemeral key) sent over and over with a new Message ID: the
 * responder's cost per message_1 does not depend on its being new, and
 * the generator's is a sendmsg. Returns 0 or a message on stderr and -1. */
static int flood_open(struct load_run *r)
{
    struct load_flood *f = &r->flood;
    f->fd = -1;
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *ai = NULL;
    const char *host = strcmp(r->host, "localhost") ? r->host : "127.0.0.1";
    if (getaddrinfo(host, NULL, &hints, &ai) || !ai) {
        fprintf(stderr, "edhoc-cli load: --flood-sources: '%s' is not an IPv4 address of this "
                        "host (the flood's sources are 127.1.0.1 and up)\n", r->host);
        return -1;
    }
    memcpy(&f->dst, ai->ai_addr, sizeof f->dst);
    freeaddrinfo(ai);
    f->dst.sin_port = htons(r->port);
    if ((ntohl(f->dst.sin_addr.s_addr) >> 24) != 127) {
        fprintf(stderr, "edhoc-cli load: --flood-sources floods a loopback responder only "
                        "(127.0.0.0/8 or localhost), not %s\n", r->host);
        return -1;
    }
    f->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int on = 1;
    struct sockaddr_in any = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (f->fd < 0 || setsockopt(f->fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof on) ||
        bind(f->fd, (struct sockaddr *)&any, sizeof any)) {
        fprintf(stderr, "edhoc-cli load: --flood-sources: cannot open the flood socket: %s\n",
                strerror(errno));
        return -1;
    }
    int buf = 4 << 20;
    setsockopt(f->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    setsockopt(f->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    for (size_t k = 0; k < FLOOD_TEMPLATES; k++) {
        struct edhoc_session s;
        uint8_t c_i[3] = {0x7f, 0xf1, (uint8_t)k}; /* apart from the peers' 0x80.. */
        int rc = edhoc_session_init(&s, EDHOC_INITIATOR, &r->side.cfg);
        if (!rc)
            rc = edhoc_session_set_conn_id(&s, c_i, sizeof c_i);
        int n = rc ? rc : edhoc_initiator_prepare_message_1(&s, r->msg + 1, sizeof r->msg - 1);
        edhoc_session_wipe(&s);
        if (n < 0) {
            fprintf(stderr, "edhoc-cli load: --flood-sources: message_1: %s\n", edhoc_strerror(n));
            return -1;
        }
        r->msg[0] = 0xf5; /* CBOR true: message_1 follows (RFC 9528 A.2) */
        long cn = load_request(COAP_CODE_POST, EDHOC_COAP_WELL_KNOWN, EDHOC_COAP_CF_CID_EDHOC,
                               r->msg, (size_t)n + 1, f->tmpl[k], sizeof f->tmpl[k]);
        if (cn < 5) {
            fprintf(stderr, "edhoc-cli load: --flood-sources: cannot build message_1\n");
            return -1;
        }
        f->tmpl_len[k] = (size_t)cn;
    }
    return 0;
}

static void flood_sendto(struct load_flood *f, const uint8_t *msg, size_t len, struct in_addr src)
{
    struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
    union {
        char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
        struct cmsghdr align;
    } c;
    memset(&c, 0, sizeof c);
    struct msghdr mh = {.msg_name = &f->dst, .msg_namelen = sizeof f->dst, .msg_iov = &iov,
                        .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = IPPROTO_IP;
    cm->cmsg_type = IP_PKTINFO;
    cm->cmsg_len = CMSG_LEN(sizeof(struct in_pktinfo));
    struct in_pktinfo pi;
    memset(&pi, 0, sizeof pi);
    pi.ipi_spec_dst = src; /* the datagram's source address */
    memcpy(CMSG_DATA(cm), &pi, sizeof pi);
    if (sendmsg(f->fd, &mh, 0) < 0)
        f->send_errors++;
}

/* The message_1s due by now at --flood-rate, each from the next source
 * in turn, with a fresh Message ID (a repeated one would be a
 * retransmission to the responder's CoAP layer). */
static void flood_send_due(struct load_flood *f, uint64_t now)
{
    if (!f->active)
        return;
    uint64_t due = (uint64_t)((double)(now - f->started_ns) / 1e9 * f->rate);
    for (unsigned k = 0; f->sent < due && k < FLOOD_BATCH; k++) {
        size_t t = (size_t)(f->sent % FLOOD_TEMPLATES);
        uint8_t *m = f->tmpl[t];
        f->mid++;
        m[2] = (uint8_t)(f->mid >> 8);
        m[3] = (uint8_t)f->mid;
        flood_sendto(f, m, f->tmpl_len[t], flood_source((size_t)(f->sent % f->sources)));
        f->sent++;
    }
}

/* Count what the responder answered the flood; with --flood-answer-echo,
 * resend a challenged message_1 with its Echo (the source proves its
 * address, then abandons the handshake after message_2). */
static void flood_receive(struct load_run *r)
{
    struct load_flood *f = &r->flood;
    for (int k = 0; k < FLOOD_BATCH; k++) {
        struct iovec iov = {.iov_base = r->resp, .iov_len = sizeof r->resp};
        union {
            char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
            struct cmsghdr align;
        } c;
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                            .msg_controllen = sizeof c.buf};
        ssize_t n = recvmsg(f->fd, &mh, 0);
        if (n < 0)
            return;
        struct coap_msg m;
        if (edhoc_coap_msg_parse(r->resp, (size_t)n, &m)) {
            f->answered_other++;
            continue;
        }
        const struct coap_option *echo =
            m.code == COAP_CODE_UNAUTHORIZED ? edhoc_coap_msg_find_option(&m, COAP_OPT_ECHO) : NULL;
        if (m.code == COAP_CODE_CHANGED) {
            f->answered_message_2++;
        } else if (echo) {
            f->answered_echo++;
            struct in_addr src = {0};
            for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
                    struct in_pktinfo pi;
                    memcpy(&pi, CMSG_DATA(cm), sizeof pi);
                    src = pi.ipi_addr; /* the source this answer went to */
                }
            }
            if (f->answer_echo && src.s_addr && f->active) {
                size_t t = (size_t)(f->echo_resent % FLOOD_TEMPLATES);
                long en = cli_coap_with_echo(f->tmpl[t], f->tmpl_len[t], echo->value, echo->len,
                                             r->coap, sizeof r->coap);
                if (en > 4) {
                    f->mid++;
                    r->coap[2] = (uint8_t)(f->mid >> 8);
                    r->coap[3] = (uint8_t)f->mid;
                    flood_sendto(f, r->coap, (size_t)en, src);
                    f->echo_resent++;
                }
            }
        } else {
            f->answered_other++;
        }
    }
}

static const char *coap_code_text(uint8_t code, char buf[8])
{
    snprintf(buf, 8, "%u.%02u", (unsigned)(code >> 5), (unsigned)(code & 0x1f));
    return buf;
}

/* A non-2.04 answer to an EDHOC request: the responder's error message
 * or a CoAP error. */
static void peer_edhoc_refused(struct load_run *r, struct load_peer *p, const struct coap_msg *m)
{
    char code[8];
    if (m->payload_len && edhoc_message_is_error(m->payload, m->payload_len)) {
        struct edhoc_error_info info;
        char detail[32];
        if (edhoc_error_message_parse(m->payload, m->payload_len, &info) == 0)
            snprintf(detail, sizeof detail, "ERR_CODE %lld", (long long)info.code);
        else
            snprintf(detail, sizeof detail, "unreadable");
        peer_fail(r, p, "edhoc_error", detail);
        return;
    }
    peer_fail(r, p, "coap_error", coap_code_text(m->code, code));
}

static void peer_on_response(struct load_run *r, size_t index, const uint8_t *resp, size_t len)
{
    struct load_peer *p = &r->peers[index];
    uint64_t now = cli_now_ns();
    struct coap_msg m;
    if (edhoc_coap_msg_parse(resp, len, &m)) {
        peer_fail(r, p, "malformed_response", NULL);
        return;
    }
    char code[8];
    switch (p->state) {
    case PEER_WAIT_M2: {
        const struct coap_option *echo =
            m.code == COAP_CODE_UNAUTHORIZED ? edhoc_coap_msg_find_option(&m, COAP_OPT_ECHO) : NULL;
        if (echo && echo->len > 0 && !p->echo_sent && p->m1_len) {
            /* The responder verifies our address before it answers with
             * more than it may send to an unverified one (RFC 9175
             * Section 2.4 item 3, RFC 9528 Section 9.7): "the client
             * ... sends the request again ... including the Echo option
             * with the value it received" (RFC 9175 Section 2.3). Once
             * only: a second challenge is the responder's refusal. The
             * handshake's clock keeps running: the round trip is part of
             * its latency. */
            long en = cli_coap_with_echo(p->m1, p->m1_len, echo->value, echo->len, r->coap,
                                         sizeof r->coap);
            if (en < 0) {
                peer_fail(r, p, "internal", "cannot add the Echo option");
                return;
            }
            r->echo_challenges++;
            p->echo_sent = true;
            peer_send(r, p, r->coap, (size_t)en, PEER_WAIT_M2);
            return;
        }
        if (m.code != COAP_CODE_CHANGED) {
            peer_edhoc_refused(r, p, &m);
            return;
        }
        int rc = edhoc_initiator_handle_message_2(&p->s, m.payload, m.payload_len, &r->rx,
                                                  cli_edhoc_resolve, &r->side);
        size_t cr_len = 0;
        const uint8_t *c_r = rc ? NULL : edhoc_session_peer_conn_id(&p->s, &cr_len);
        long pre = c_r ? edhoc_coap_cid_encode(c_r, cr_len, r->msg, sizeof r->msg) : -1;
        int n = rc ? rc : pre < 0 ? EDHOC_ERR_ARG
                                  : edhoc_initiator_prepare_message_3(&p->s, r->msg + pre,
                                                                      sizeof r->msg - (size_t)pre);
        if (n < 0) {
            peer_fail(r, p, "edhoc_message_2", edhoc_strerror(n));
            return;
        }
        long cn = load_request(COAP_CODE_POST, EDHOC_COAP_WELL_KNOWN, EDHOC_COAP_CF_CID_EDHOC,
                               r->msg, (size_t)pre + (size_t)n, r->coap, sizeof r->coap);
        if (cn < 0) {
            peer_fail(r, p, "internal", "cannot build the message_3 request");
            return;
        }
        peer_send(r, p, r->coap, (size_t)cn, PEER_WAIT_M3);
        return;
    }
    case PEER_WAIT_M3: {
        if (m.code != COAP_CODE_CHANGED) {
            peer_edhoc_refused(r, p, &m);
            return;
        }
        if (r->o.message_4) {
            int rc = edhoc_initiator_process_message_4(&p->s, m.payload, m.payload_len, &r->rx);
            if (rc) {
                peer_fail(r, p, "edhoc_message_4", edhoc_strerror(rc));
                return;
            }
        }
        struct edhoc_oscore_params op;
        int rc = edhoc_session_oscore(&p->s, &op);
        if (!rc)
            rc = oscore_context_init_edhoc(&p->osc, r->side.cfg.ops, op.master_secret,
                                           op.master_secret_len, op.master_salt,
                                           op.master_salt_len, op.sender_id, op.sender_id_len,
                                           op.recipient_id, op.recipient_id_len, op.aead_alg,
                                           op.hash_alg);
        edhoc_wipe(&op, sizeof op);
        edhoc_session_wipe(&p->s);
        if (rc) {
            peer_fail(r, p, "oscore_context", rc < -3500 ? edhoc_strerror(rc)
                                                          : oscore_strerror(rc));
            return;
        }
        r->hs_ok++;
        p->have_ctx = true;
        series_add(&r->hs_lat, (double)(now - p->started_ns) / 1e6);
        p->requests_left = r->requests_per_peer;
        if (p->requests_left && !r->stopping)
            peer_send_request(r, p);
        else
            peer_reset(r, p);
        return;
    }
    case PEER_WAIT_RESPONSE: {
        if (p->sent_plain) {
            /* Any answer completes an unprotected request; its code is
             * reported, since a responder that serves /echo only under
             * OSCORE answers 4.01 and does less work than for OSCORE. */
            r->plain_code = m.code;
            load_answer(r, true, false, m.code);
        } else if (!edhoc_coap_msg_find_option(&m, COAP_OPT_OSCORE)) {
            /* Not the answer, whatever its code (RFC 8613 Section 2): an
             * OSCORE error of Section 8.2, or something on the path. Kept
             * apart from the failures of verification. */
            char detail[48];
            size_t pl = m.payload_len < 24 ? m.payload_len : 24;
            bool text = pl > 0;
            for (size_t i = 0; i < pl; i++)
                text = text && m.payload[i] >= 0x20 && m.payload[i] < 0x7f;
            snprintf(detail, sizeof detail, "%s%s%.*s", coap_code_text(m.code, code),
                     text ? " " : "", text ? (int)pl : 0, text ? (const char *)m.payload : "");
            r->no_oscore++;
            load_answer(r, false, false, m.code);
            peer_fail(r, p, "no_oscore", detail);
            return;
        } else {
            long n = oscore_unprotect_response(&p->osc, &p->b, resp, len, r->inner,
                                               sizeof r->inner);
            struct coap_msg in;
            if (n < 0) {
                peer_fail(r, p, "oscore_unprotect", oscore_strerror((int)n));
                return;
            }
            if (n > 1)
                load_answer(r, false, true, r->inner[1]);
            if (edhoc_coap_msg_parse(r->inner, (size_t)n, &in) || in.code != COAP_CODE_CHANGED) {
                peer_fail(r, p, "oscore_response_code",
                          coap_code_text(n > 0 ? r->inner[1] : 0, code));
                return;
            }
        }
        r->req_ok++;
        series_add(p->sent_plain && r->vs_plain ? &r->plain_lat : &r->req_lat,
                   (double)(now - p->sent_ns) / 1e6);
        /* With --vs-plain, unprotected requests do not use up the OSCORE
         * requests of a handshake: a context outlives the unprotected
         * windows, so handshakes stay rare in both kinds. */
        if (p->requests_left > 0 && !(r->vs_plain && p->sent_plain))
            p->requests_left--;
        /* An OSCORE window reached by a peer without a context (it began
         * in an unprotected one): a handshake first. */
        if (p->requests_left && !r->stopping && (r->plain || p->have_ctx))
            peer_send_request(r, p);
        else
            peer_reset(r, p);
        return;
    }
    default:
        return;
    }
}

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

/* What one phase of a load run measured. */
struct load_phase_result {
    bool plain;
    double seconds, cpu_s; /* cpu_s: NAN when the responder is not local */
    double generator_cpu_s;
    long handshakes, requests, failures, echo_challenges;
    size_t flood_sources; /* 0: no flood in this phase */
    uint8_t plain_code;
};

static const struct bench_column latency_cols[] = {
    {"what", "Latency", BENCH_COL_TEXT, false},
    {"samples", "Samples", BENCH_COL_INT, false},
    {"p50_ms", "p50 (ms)", BENCH_COL_NUM, false},
    {"p90_ms", "p90 (ms)", BENCH_COL_NUM, false},
    {"p99_ms", "p99 (ms)", BENCH_COL_NUM, false},
    {"max_ms", "max (ms)", BENCH_COL_NUM, false},
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

static int parse_uri(struct load_run *r, const char *uri)
{
    if (strncmp(uri, "coap://", 7) != 0)
        return -1;
    snprintf(r->uri, sizeof r->uri, "%s", uri);
    const char *h = uri + 7, *end;
    if (*h == '[') {
        end = strchr(h, ']');
        if (!end)
            return -1;
        snprintf(r->host, sizeof r->host, "%.*s", (int)(end - h - 1), h + 1);
        end++;
    } else {
        end = h + strcspn(h, ":/");
        snprintf(r->host, sizeof r->host, "%.*s", (int)(end - h), h);
    }
    if (!r->host[0])
        return -1;
    r->port = 5683;
    if (*end == ':') {
        char *e;
        long port = strtol(end + 1, &e, 10);
        if (e == end + 1 || port < 1 || port > 65535 || (*e && *e != '/'))
            return -1;
        r->port = (uint16_t)port;
    } else if (*end && *end != '/') {
        return -1;
    }
    return 0;
}

/* Each client has a socket and an event descriptor: make room for them. */
static size_t raise_fd_limit(size_t want_peers)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return want_peers;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    size_t room = rl.rlim_cur > 64 ? (size_t)(rl.rlim_cur - 64) / 4 : 1;
    return want_peers < room ? want_peers : room;
}

static void load_progress(const struct load_run *r, struct cli_progress *pr, double elapsed)
{
    cli_progress_update(pr, "%5.1f s  %ld handshakes (%.1f/s)  %ld requests (%.1f/s)  %ld failures",
                        elapsed, r->hs_ok, elapsed > 0 ? r->hs_ok / elapsed : 0.0, r->req_ok,
                        elapsed > 0 ? r->req_ok / elapsed : 0.0, r->failures);
}

/* This process's CPU seconds (user + system): the generator's cost. */
#define RESPONDER_CPU_OF_FLOOR_TARGET 0.85

static double generator_cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        return NAN;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* --vs-plain: what the window that ends now measured, added to its kind. */
struct load_window {
    uint64_t started;
    struct load_cpu cpu;
    double generator_cpu;
    long echo_challenges;
    long requests, handshakes, failures; /* counters when it started */
};

static void load_window_close(struct load_run *r, struct load_window *w, uint64_t now)
{
    int kind = r->plain ? 1 : 0;
    struct load_cpu cpu;
    load_cpu_sample(&cpu, r->responder_pid);
    r->mode_seconds[kind] += (double)(now - w->started) / 1e9;
    if (cpu.ok && w->cpu.ok)
        r->mode_cpu[kind] += cpu.seconds - w->cpu.seconds;
    else
        r->mode_cpu[kind] = NAN;
    double gen = generator_cpu_seconds();
    r->mode_generator_cpu[kind] += gen - w->generator_cpu;
    r->mode_echo[kind] += r->echo_challenges - w->echo_challenges;
    w->generator_cpu = gen;
    w->echo_challenges = r->echo_challenges;
    r->mode_requests[kind] += r->req_ok - w->requests;
    r->mode_handshakes[kind] += r->hs_ok - w->handshakes;
    r->mode_failures[kind] += r->failures - w->failures;
    w->started = now;
    w->cpu = cpu;
    w->requests = r->req_ok;
    w->handshakes = r->hs_ok;
    w->failures = r->failures;
}

/* One phase of the load: every peer loops until the duration or the
 * handshake budget is used up. Returns the seconds it took; the
 * responder's CPU seconds in that time (NAN when unknown). */
#define FLOOD_EVENT UINT64_MAX /* the epoll tag of the flood's socket */

static double load_phase(struct load_run *r, struct cli_progress *pr, double *responder_cpu_s,
                         double *generator_cpu_s)
{
    double gen_before = generator_cpu_seconds();
    /* One epoll set over every peer's transport: a peer is only run when
     * its socket or retransmission timer has work, so the generator spends
     * its CPU on the handshakes rather than on polling idle peers (that
     * polling once cost more than the responder under test). */
    int ep = epoll_create1(EPOLL_CLOEXEC);
    for (size_t i = 0; ep >= 0 && i < r->n_peers; i++) {
        int fd = edhoc_transport_poll_fd(r->peers[i].t);
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};
        if (fd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
            close(ep);
            ep = -1; /* fall back to running every peer in turn */
        }
    }
    if (ep >= 0 && r->flood.active) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = FLOOD_EVENT};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, r->flood.fd, &ev)) {
            close(ep);
            ep = -1;
        }
    }
    struct load_cpu cpu_before;
    load_cpu_sample(&cpu_before, r->responder_pid);
    uint64_t start = cli_now_ns(), last_sweep = start;
    /* --vs-plain: the duration of each kind, in alternating windows, so
     * that a change in what else runs on the host affects both alike. */
    uint64_t deadline = start + (uint64_t)(r->duration_s * (r->vs_plain ? 2 : 1) * 1e9);
    uint64_t window_ns = (uint64_t)(r->duration_s / 8 * 1e9);
    if (window_ns < 250000000u)
        window_ns = 250000000u;
    struct load_window w = {.started = start, .cpu = cpu_before, .generator_cpu = gen_before,
                            .echo_challenges = r->echo_challenges};
    uint64_t next_switch = start + window_ns;
    r->flood.started_ns = start;
    for (size_t i = 0; i < r->n_peers; i++)
        peer_start(r, i);
    for (;;) {
        /* SIGINT/SIGTERM: stop at once; the report covers what completed
         * (requests still in flight are neither). */
        if (cli_interrupted())
            break;
        uint64_t now = cli_now_ns();
        if (r->vs_plain && !r->stopping && now >= next_switch && now < deadline) {
            load_window_close(r, &w, now);
            r->plain = !r->plain;
            next_switch = now + window_ns;
        }
        if (!r->stopping && now >= deadline)
            r->stopping = true;
        if (!r->stopping)
            flood_send_due(&r->flood, now);
        bool busy = false, progress = false;
        for (size_t i = 0; i < r->n_peers; i++) {
            struct load_peer *p = &r->peers[i];
            if (p->state == PEER_IDLE)
                peer_start(r, i);
            busy |= p->state != PEER_DONE && p->state != PEER_IDLE;
        }
        if (!busy)
            break;
        if (ep >= 0) {
            struct epoll_event evs[64];
            int n = epoll_wait(ep, evs, 64, 2);
            for (int k = 0; k < n; k++) {
                if (evs[k].data.u64 == FLOOD_EVENT)
                    flood_receive(r);
                else
                    progress |= peer_service(r, (size_t)evs[k].data.u64);
            }
            /* Timeouts and anything the events missed. */
            if (n <= 0 || now - last_sweep >= 50000000u) {
                for (size_t i = 0; i < r->n_peers; i++)
                    progress |= peer_service(r, i);
                last_sweep = now;
            }
        } else {
            for (size_t i = 0; i < r->n_peers; i++)
                progress |= peer_service(r, i);
            if (r->flood.active)
                flood_receive(r);
            if (!progress)
                usleep(50);
        }
        load_progress(r, pr, (double)(cli_now_ns() - start) / 1e9);
    }
    uint64_t end = cli_now_ns();
    double elapsed = (double)(end - start) / 1e9;
    if (r->vs_plain)
        load_window_close(r, &w, end);
    struct load_cpu cpu_after;
    load_cpu_sample(&cpu_after, r->responder_pid);
    r->responder_processes = cpu_after.ok ? cpu_after.processes : 0;
    *responder_cpu_s = cpu_before.ok && cpu_after.ok ? cpu_after.seconds - cpu_before.seconds
                                                     : NAN;
    *generator_cpu_s = generator_cpu_seconds() - gen_before;
    if (ep >= 0)
        close(ep);
    cli_progress_end(pr);
    return elapsed;
}

enum {
    LOPT_PEERS = 1,
    LOPT_DURATION,
    LOPT_HANDSHAKES,
    LOPT_REQUESTS,
    LOPT_PLAIN,
    LOPT_VS_PLAIN,
    LOPT_RESPONDER_PID,
    LOPT_VS_STATE_NONE,
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
    {LOPT_VS_STATE_NONE, "vs-state-none", "URI2",
     "run the same load against URI (a default responder) and then URI2 (one with --state-dir "
     "none) and print both rows and their ratios"},
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
    .synopsis = "coap://HOST[:PORT] [OPTIONS]",
    .description =
        "Load-tests an EDHOC/OSCORE responder from one process: --peers initiators, each\n"
        "with its own UDP socket and C_I, run EDHOC over CoAP (RFC 9528 Appendix A.2)\n"
        "and then --requests-per-peer OSCORE-protected POSTs to /echo with the new\n"
        "context, in a loop, until --duration or --handshakes is reached. Only point it\n"
        "at loopback or at test hosts of your own.\n\n"
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
        "succeeded; 2 bad command line; 3 unusable credential; 6 the host name does not\n"
        "resolve; 10 internal error; 130/143 interrupted (partial results).",
};

static const char *load_latency_note =
    "Milliseconds. handshake: message_1 sent to the answer to message_3 received; "
    "oscore_request / unprotected_request: a request sent to its response received. "
    "A 4.01 Echo round trip before message_2 is part of the handshake. With --flood-sources: "
    "handshake_unloaded and handshake_flood, the two phases.";

/* ---- The responder's state writer (cli/state_stats.h) ----
 * A local responder with a state directory holds its database open: the
 * figures file sits next to it. */
static bool state_stats_path_of(long pid, char *out, size_t cap)
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
        }
    }
    closedir(d);
    return found;
}

/* The file is replaced every second: the next one after `before`, or
 * what is there after 1.5 s. */
static bool state_stats_fresh(const char *path, const struct cli_state_stats *before,
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

struct state_writer_delta {
    bool known;
    uint64_t commits, rows, failed;
};

static struct state_writer_delta state_writer_delta(const struct cli_state_stats *a,
                                                    const struct cli_state_stats *b)
{
    struct state_writer_delta d = {0};
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
    struct state_writer_delta w;
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
    json_array_foreach(tables, i, tab) {
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
            json_array_foreach(rows, j, lr) {
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

static int load_vs_state_none(int argc, char **argv, int uri_index, int vs_index, int vs_args,
                              const char *uri2)
{
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (!args)
        return CLI_EXIT_INTERNAL;
    struct vs_row rows[2];
    memset(rows, 0, sizeof rows);
    const char *uris[2] = {argv[uri_index], uri2};
    for (int k = 0; k < 2; k++) {
        int n = 0;
        args[n++] = "edhoc-cli";
        for (int i = 0; i < argc; i++) {
            if (i >= vs_index && i < vs_index + vs_args)
                continue;
            args[n++] = i == uri_index ? (char *)uris[k] : argv[i];
        }
        args[n++] = "--json";
        args[n++] = "-q";
        args[n] = NULL;
        /* The writer's figures around the run, when it is local. */
        struct load_run probe;
        memset(&probe, 0, sizeof probe);
        long pid = parse_uri(&probe, uris[k]) == 0 ? socket_owner_of_port(&probe) : 0;
        char path[PATH_MAX];
        struct cli_state_stats before, after;
        bool stats = pid > 0 && state_stats_path_of(pid, path, sizeof path) &&
                     cli_state_stats_read(path, &before);
        fprintf(stderr, "edhoc-cli load: run %d of 2: %s (responder pid %ld, %s)\n", k + 1,
                uris[k], pid, stats ? path : "no state writer figures");
        int code = vs_child(args, &rows[k]);
        if (code) {
            fprintf(stderr, "edhoc-cli load: the run against %s failed (exit %d)\n", uris[k],
                    code);
            free(args);
            return code;
        }
        if (stats && state_stats_fresh(path, &before, &after))
            rows[k].w = state_writer_delta(&before, &after);
    }
    free(args);
    printf("## edhoc-cli load --vs-state-none\n\n"
           "The same load, one run after the other: against a responder with its state "
           "directory (default), then one with --state-dir none. Commits: the state writer's "
           "(DIR/" EDHOC_STATE_STATS_FILE "), each one transaction and one WAL fsync.\n\n"
           "| Responder | State | Handshakes | Handshakes/s | Handshakes per responder "
           "CPU-second | p99 (ms) | Commits | Rows per commit | Commits/s | Commits per "
           "handshake |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < 2; k++) {
        const struct vs_row *r = &rows[k];
        char c[5][32];
        double secs = r->per_s > 0 ? r->handshakes / r->per_s : NAN;
        vs_num(c[0], sizeof c[0], r->w.known ? (double)r->w.commits : NAN, "%.0f");
        vs_num(c[1], sizeof c[1],
               r->w.known && r->w.commits ? (double)r->w.rows / (double)r->w.commits : NAN,
               "%.1f");
        vs_num(c[2], sizeof c[2], r->w.known ? (double)r->w.commits / secs : NAN, "%.1f");
        vs_num(c[3], sizeof c[3],
               r->w.known && r->handshakes > 0 ? (double)r->w.commits / r->handshakes : NAN,
               "%.4f");
        vs_num(c[4], sizeof c[4], r->per_cpu_s, "%.0f");
        printf("| %s | %s | %.0f | %.0f | %s | %.2f | %s | %s | %s | %s |\n", uris[k],
               k ? "none" : "default", r->handshakes, r->per_s, c[4], r->p99_ms, c[0], c[1], c[2],
               c[3]);
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
    printf("| default / none | | | %s | %s | %s | | | | |\n\n", cw, cc, cp);
    printf("Targets (issue 24): per responder CPU-second %s (at least 0.95): %s; wall clock %s "
           "(at least 0.95): %s; p99 %s (at most 1.2): %s; commits per handshake %s (at most "
           "0.05): %s.\n",
           cc, isnan(cpu) ? "unknown" : cpu >= 0.95 ? "met" : "not met", cw,
           isnan(wall) ? "unknown" : wall >= 0.95 ? "met" : "not met", cp,
           isnan(p99) ? "unknown" : p99 <= 1.2 ? "met" : "not met", cs,
           isnan(syncs) ? "unknown" : syncs <= 0.05 ? "met" : "not met");
    return CLI_EXIT_OK;
}

int cmd_load(int argc, char **argv)
{
    /* Private keys and the OSCORE contexts of every peer it runs. */
    cli_no_core_dumps();
    struct load_run *r = calloc(1, sizeof *r);
    if (!r)
        return CLI_EXIT_INTERNAL;
    cli_edhoc_opts_init(&r->o);
    r->flood.fd = -1;
    r->n_peers = 10;
    r->duration_s = 10;
    r->requests_per_peer = 10;
    r->timeout_ms = 5000;
    enum bench_format format = FORMAT_MARKDOWN;
    bool format_given = false;
    const char *uri = NULL, *vs_state_none = NULL;
    int uri_index = -1, vs_index = -1, vs_args = 0;
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
        case CLI_OPT_ID_EDHOC: bad = cli_edhoc_take(&r->o, CLI_SIDE_I, &p); break;
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
    if (parse_uri(r, uri)) {
        fprintf(stderr, "edhoc-cli load: '%s': expected a responder as coap://HOST[:PORT]\n",
                uri);
        goto out;
    }
    if (vs_state_none) {
        struct load_run probe;
        memset(&probe, 0, sizeof probe);
        if (parse_uri(&probe, vs_state_none)) {
            fprintf(stderr, "edhoc-cli load: --vs-state-none '%s': expected a responder as "
                            "coap://HOST[:PORT]\n", vs_state_none);
            goto out;
        }
        if (format_given || r->vs_plain || r->flood.sources || uri_index < 0 || vs_index < 0) {
            fprintf(stderr, "edhoc-cli load: --vs-state-none prints its own table; it does not "
                            "combine with --json, --csv, --vs-plain or --flood-sources\n");
            goto out;
        }
        exit_code = load_vs_state_none(argc, argv, uri_index, vs_index, vs_args, vs_state_none);
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
    size_t fit = raise_fd_limit(r->n_peers);
    if (fit < r->n_peers) {
        if (!p.quiet)
            fprintf(stderr, "edhoc-cli load: only %zu peers fit the open-file limit\n", fit);
        r->n_peers = fit;
    }

    exit_code = cli_edhoc_side_setup(&r->o, CLI_SIDE_I, &r->side);
    if (exit_code)
        goto out;
    if (r->flood.sources && flood_open(r)) {
        exit_code = CLI_EXIT_USAGE;
        goto out;
    }
    exit_code = CLI_EXIT_INTERNAL;
    r->peers = calloc(r->n_peers, sizeof *r->peers);
    if (!r->peers)
        goto out;
    struct edhoc_transport_config tcfg = {.max_retransmit = 2, .log_level = 0};
    for (size_t i = 0; i < r->n_peers; i++) {
        int rc = edhoc_transport_client_open(&r->peers[i].t, r->host, r->port, &tcfg);
        if (rc) {
            fprintf(stderr, "edhoc-cli load: cannot open client %zu towards %s: %s\n", i, r->uri,
                    edhoc_transport_strerror(rc));
            exit_code = cli_exit_for_client_open(rc);
            goto out;
        }
    }

    if (!r->pid_given)
        r->responder_pid = socket_owner_of_port(r);
    struct load_phase_result phases[2];
    memset(phases, 0, sizeof phases);
    size_t n_phases = 1;
    double total_cpu = NAN;
    struct cli_progress progress;
    cli_progress_begin(&progress, "load", p.verbose, p.quiet);
    /* SIGINT/SIGTERM end the run with what completed. */
    cli_interrupt_catch();
    double total_gen = NAN;
    /* The responder's state writer, when it is local and publishes. */
    char ws_path[PATH_MAX];
    struct cli_state_stats ws_before, ws_after;
    bool ws = r->responder_pid > 0 &&
              state_stats_path_of(r->responder_pid, ws_path, sizeof ws_path) &&
              cli_state_stats_read(ws_path, &ws_before);
    double total_s = load_phase(r, &progress, &total_cpu, &total_gen);
    struct state_writer_delta wd = {0};
    if (ws && state_stats_fresh(ws_path, &ws_before, &ws_after))
        wd = state_writer_delta(&ws_before, &ws_after);
    bool partial = cli_interrupted() != 0;
    /* --flood-sources: the peers' handshakes alone first, the same budget
     * again beside the flood: what the flood costs them, in one run. */
    struct load_series unloaded_lat = {0};
    if (!r->vs_plain) {
        phases[0].plain = r->plain;
        phases[0].seconds = total_s;
        phases[0].cpu_s = total_cpu;
        phases[0].generator_cpu_s = total_gen;
        phases[0].handshakes = r->hs_ok;
        phases[0].requests = r->req_ok;
        phases[0].failures = r->failures;
        phases[0].echo_challenges = r->echo_challenges;
        phases[0].plain_code = r->plain_code;
    }
    if (r->flood.sources && !partial) {
        unloaded_lat = r->hs_lat;
        memset(&r->hs_lat, 0, sizeof r->hs_lat);
        r->stopping = false;
        r->hs_started = 0;
        for (size_t i = 0; i < r->n_peers; i++)
            r->peers[i].state = PEER_IDLE;
        r->flood.active = true;
        cli_progress_begin(&progress, "load", p.verbose, p.quiet);
        double s1 = load_phase(r, &progress, &total_cpu, &total_gen);
        r->flood.active = false;
        /* Answers still on their way are counted, not left unread. */
        usleep(100000);
        flood_receive(r);
        partial = cli_interrupted() != 0;
        n_phases = 2;
        phases[1].seconds = s1;
        phases[1].cpu_s = total_cpu;
        phases[1].generator_cpu_s = total_gen;
        phases[1].handshakes = r->hs_ok - phases[0].handshakes;
        phases[1].requests = r->req_ok - phases[0].requests;
        phases[1].failures = r->failures - phases[0].failures;
        phases[1].echo_challenges = r->echo_challenges - phases[0].echo_challenges;
        phases[1].flood_sources = r->flood.sources;
    }
    if (r->vs_plain) {
        /* The OSCORE windows and the unprotected windows, each summed. */
        n_phases = 2;
        for (int k = 0; k < 2; k++) {
            phases[k].plain = k == 1;
            phases[k].seconds = r->mode_seconds[k];
            phases[k].cpu_s = r->mode_cpu[k];
            phases[k].handshakes = r->mode_handshakes[k];
            phases[k].requests = r->mode_requests[k];
            phases[k].failures = r->mode_failures[k];
            phases[k].generator_cpu_s = r->mode_generator_cpu[k];
            phases[k].echo_challenges = r->mode_echo[k];
            phases[k].plain_code = r->plain_code;
        }
    }

    struct bench_effort effort;
    bench_effort_default(&effort);
    effort.repeat = 0; /* not a sampled benchmark */
    struct bench_report *report = calloc(1, sizeof *report);
    if (!report)
        goto out;
    bench_report_init(report, r->side.cfg.ops->name, &effort);
    report->command = "load";
    report->mode = "load";
    report->partial = partial;
    struct bench_table *t = bench_table_new("load", "Load", load_cols,
                                            sizeof load_cols / sizeof load_cols[0]);
    struct bench_table *lt = bench_table_new("load_latency", "Latency", latency_cols,
                                             sizeof latency_cols / sizeof latency_cols[0]);
    struct bench_table *at = bench_table_new("load_answers", "Answers", answer_cols,
                                             sizeof answer_cols / sizeof answer_cols[0]);
    struct bench_table *ft = bench_table_new("load_failures", "Failures by cause", failure_cols,
                                             sizeof failure_cols / sizeof failure_cols[0]);
    struct bench_table *flt = r->flood.sources ? bench_table_new("load_flood", "Flood",
                                                                 flood_cols,
                                                                 sizeof flood_cols /
                                                                     sizeof flood_cols[0])
                                               : NULL;
    if (!t || !lt || !at || !ft || !bench_report_add(report, t) || !bench_report_add(report, lt) ||
        !bench_report_add(report, at) || !bench_report_add(report, ft) ||
        (r->flood.sources && (!flt || !bench_report_add(report, flt)))) {
        free(unloaded_lat.v);
        free(report);
        goto out;
    }
    snprintf(lt->note, sizeof lt->note, "%s", load_latency_note);
    int nl = snprintf(t->note, sizeof t->note,
             "%s, method %d, suite %d, %u request%s of %d bytes per handshake, one process, "
             "one socket per peer.",
             phases[0].plain ? "Unprotected requests, no EDHOC" : "EDHOC over CoAP (RFC 9528 A.2)",
             r->o.method, r->o.suites[0], r->requests_per_peer,
             r->requests_per_peer == 1 ? "" : "s", LOAD_PAYLOAD);
    if (nl > 0 && (size_t)nl < sizeof t->note)
        snprintf(t->note + nl, sizeof t->note - (size_t)nl, "%s",
                 r->responder_pid > 0
                     ? " The responder runs on this host: its CPU time (with its workers', "
                       "responder --workers) comes from /proc, and per CPU-second figures are "
                       "what it sustains per core whatever the generator beside it costs."
                     : " The responder is not a process of this host (or not visible): no CPU "
                       "figures (see --responder-pid).");
    if (wd.known) {
        size_t used = strlen(t->note);
        snprintf(t->note + used, sizeof t->note - used,
                 " State writer (%s): %" PRIu64 " commits of %" PRIu64 " rows (%.1f rows per "
                 "commit, %.1f commits/s, %.4f commits per handshake: one WAL fsync each), %"
                 PRIu64 " failed.",
                 ws_path, wd.commits, wd.rows,
                 wd.commits ? (double)wd.rows / (double)wd.commits : 0.0,
                 total_s > 0 ? (double)wd.commits / total_s : 0.0,
                 r->hs_ok ? (double)wd.commits / (double)r->hs_ok : 0.0, wd.failed);
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
        fe.interrupted = cli_interrupted;
        double fi = 0, fr = 0;
        /* Timed on the CPUs the responder may run on (it is idle now): a
         * responder pinned with taskset is compared with its own core's
         * crypto, not with that of the core the generator ran on. */
        cpu_set_t own, theirs;
        bool moved = r->responder_pid > 0 &&
                     sched_getaffinity((pid_t)r->responder_pid, sizeof theirs, &theirs) == 0 &&
                     sched_getaffinity(0, sizeof own, &own) == 0 &&
                     sched_setaffinity(0, sizeof theirs, &theirs) == 0;
        char why[256] = "";
        int frc = bench_handshake_floor(&fe, &cli_bench_sides, r->o.method, r->o.suites[0],
                                        r->o.side[CLI_SIDE_I].id_cred_type, &fi, &fr, why,
                                        sizeof why);
        if (why[0])
            fprintf(stderr, "edhoc-cli: %s\n", why);
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
        bench_row_text(t, row, "saturated",
                       load_saturated(ph->seconds, ph->cpu_s, ph->generator_cpu_s,
                                      r->responder_processes));
        bool cpu = !isnan(ph->cpu_s) && ph->cpu_s > 0;
        /* An unknown process (a remote responder, --responder-pid 0): NaN,
         * which JSON prints as null and the tables as a dash (issue 14). */
        bench_row_num(t, row, "responder_pid", r->responder_pid > 0 ? (double)r->responder_pid : NAN);
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
                     "suite %d)", cpu ? "per responder CPU-second" : "per second",
                     r->o.method, r->o.suites[0]);
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
        double wall = (phases[0].requests / phases[0].seconds) /
                      (phases[1].requests / phases[1].seconds);
        bool cpu = !isnan(phases[0].cpu_s) && !isnan(phases[1].cpu_s) && phases[0].cpu_s > 0 &&
                   phases[1].cpu_s > 0;
        double per_cpu = cpu ? (phases[0].requests / phases[0].cpu_s) /
                                   (phases[1].requests / phases[1].cpu_s)
                             : NAN;
        char name[200];
        snprintf(name, sizeof name, "OSCORE requests %s / unprotected requests %s",
                 cpu ? "per responder CPU-second" : "per second",
                 cpu ? "per responder CPU-second" : "per second");
        bench_report_target_at_least(report,
                                     cpu ? "oscore_over_unprotected.cpu"
                                         : "oscore_over_unprotected.wall",
                                     name, cpu ? per_cpu : wall, 0.9, "");
        if (cpu) {
            snprintf(name, sizeof name, "OSCORE requests per second / unprotected requests per "
                                        "second (wall clock, generator included)");
            bench_report_target_at_least(report, "oscore_over_unprotected.wall", name, wall,
                                         0.9, "");
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
                                     "Peers' handshake success rate under the flood", ok1, 1.0,
                                     "");
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
                bench_row_text(at, ar, "code", coap_code_text((uint8_t)code, cs));
                bench_row_num(at, ar, "count", (double)n);
                answered += n;
            }
        }
    }
    if (answered)
        snprintf(at->note, sizeof at->note,
                 "%ld answers by the kind of request, the protection of the answer and its code "
                 "(the inner code of a verified OSCORE response).", answered);
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
    if (format == FORMAT_JSON)
        bench_print_json(stdout, report);
    else if (format == FORMAT_CSV)
        bench_print_csv(stdout, report);
    else
        bench_print_markdown(stdout, report);
    fflush(stdout);
    bench_report_free(report);
    free(report);
    free(unloaded_lat.v);
    if (partial) {
        fprintf(stderr, "edhoc-cli load: interrupted: partial results\n");
        exit_code = cli_interrupt_exit_code();
    } else {
        exit_code = phases[0].handshakes || phases[0].requests ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
    }

out:
    if (r->peers) {
        for (size_t i = 0; i < r->n_peers; i++) {
            edhoc_session_wipe(&r->peers[i].s);
            oscore_context_wipe(&r->peers[i].osc);
            if (r->peers[i].t)
                edhoc_transport_free(r->peers[i].t);
        }
        free(r->peers);
    }
    if (r->side.store)
        cli_edhoc_side_free(&r->side);
    if (r->flood.fd >= 0)
        close(r->flood.fd);
    free(r->hs_lat.v);
    free(r->req_lat.v);
    free(r->plain_lat.v);
    edhoc_wipe(r, sizeof *r);
    free(r);
    return exit_code;
}
