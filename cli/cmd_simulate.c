/*
 * edhoc-cli simulate: an initiator and a responder in one process, no
 * network. Reports every message (hex, size), the outcome, timing and, on
 * request, every intermediate value and the derived OSCORE context. The
 * run is the engine's (src/tools/simulate); the report simulate_output.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "edhoc_args.h"
#include "exporter.h"
#include "path_check.h"
#include "output/progress.h"
#include "simulate.h"
#include "output/simulate_output.h"
#include "tools.h"
#include "util.h"

_Static_assert(SIMULATE_MAX_ATTEMPTS == CLI_MAX_ATTEMPTS, "the engine takes every attempt");
_Static_assert(SIMULATE_MAX_CONTEXT == CLI_EXPORT_MAX_CONTEXT, "a --key-update context fits");

/* --link and the air-model options; static so that an option given after
 * --link (--radio-profile, --data-rate, ...) finds what the earlier ones
 * set. */
static struct cli_net_opts sim_net;

/* What runs after the handshake besides the engine's KeyUpdate:
 * EDHOC_Exporter (RFC 9528 Section 4.2.1) on both sides. */
struct app_keys_ctx {
    const struct cli_exports *requests; /* values stay NULL there */
    struct cli_sim_keys keys;
};

static int derive_exports(void *ctx, const struct edhoc_session *s_i,
                          const struct edhoc_session *s_r)
{
    struct app_keys_ctx *a = ctx;
    if (!a->requests->n)
        return 0;
    a->keys.exports_i = *a->requests;
    a->keys.exports_r = *a->requests;
    a->keys.have_exports = true;
    int rc = cli_exports_compute(s_i, &a->keys.exports_i);
    if (!rc)
        rc = cli_exports_compute(s_r, &a->keys.exports_r);
    if (rc)
        return rc;
    a->keys.exports_match = cli_exports_equal(&a->keys.exports_i, &a->keys.exports_r);
    return 0;
}

/* ---- --keylog FILE ---- */

struct sim_keylog {
    const char *path;
    int fd;            /* -1: closed */
    bool write_failed; /* said once */
};

/* Appended to (rows of earlier runs stay), 0600 whatever the umask or an
 * earlier mode, never opened through a symbolic link (someone could point
 * it at a file of theirs and read the secrets). */
static int sim_keylog_open(struct sim_keylog *k, char *why, size_t cap)
{
    k->fd = open(k->path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (k->fd < 0) {
        if (errno == ELOOP)
            snprintf(why, cap,
                     "--keylog %s: is a symbolic link; the key log is never written through one "
                     "(remove it, or give another file)",
                     k->path);
        else
            snprintf(why, cap, "--keylog %s: %s", k->path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(k->fd, &st) != 0 || !S_ISREG(st.st_mode) || fchmod(k->fd, 0600) != 0) {
        snprintf(why, cap, "--keylog %s: not a regular file of ours", k->path);
    } else if (!edhoc_secret_file_check("--keylog", k->path, k->fd, "it holds session secrets",
                                        false, why, cap)) {
        return 0;
    }
    close(k->fd);
    k->fd = -1;
    return -1;
}

/* A row in one write(): with O_APPEND it lands at the end as a whole. */
static void sim_keylog_put(struct sim_keylog *k, char *row, long n)
{
    bool ok = n > 0 && write(k->fd, row, (size_t)n) == (ssize_t)n;
    edhoc_wipe(row, (size_t)(n > 0 ? n : 0));
    if (!ok && !k->write_failed) {
        k->write_failed = true;
        fprintf(stderr, "edhoc-cli simulate: warning: --keylog %s: %s\n", k->path,
                n > 0 ? strerror(errno)
                      : "a row the key log cannot hold (OSCORE rows name "
                        "AES-CCM-16-64-128 only)");
    }
}

static void sim_keylog_oscore(struct sim_keylog *k, const struct edhoc_oscore_params *p)
{
    char row[2 * (2 * EDHOC_MAX_CONN_ID + EDHOC_CRYPTO_MAX_KEY + EDHOC_CRYPTO_MAX_HASH) + 64];
    /* EDHOC leaves the ID Context empty (RFC 9528 Appendix A.1). */
    sim_keylog_put(k, row, edhoc_key_log_oscore_row(p, NULL, 0, row, sizeof row));
}

/* One handshake: its edhoc_secrets row (the initiator's values; the
 * responder's are the same), then each direction's OSCORE context. */
static void sim_keylog_write(void *ctx, const struct edhoc_key_log *log,
                             const struct simulate_run *run)
{
    struct sim_keylog *k = ctx;
    char row[8 * 2 * EDHOC_CRYPTO_MAX_HASH + 16];
    sim_keylog_put(k, row, edhoc_key_log_row(log, row, sizeof row));
    if (!run->have_oscore)
        return;
    sim_keylog_oscore(k, &run->oscore_i);
    sim_keylog_oscore(k, &run->oscore_r);
    if (run->ku.done) {
        sim_keylog_oscore(k, &run->ku.oscore_i);
        sim_keylog_oscore(k, &run->ku.oscore_r);
    }
}

static void progress_line(void *ctx, long done, long of)
{
    cli_progress_update(ctx, "%ld of %ld handshakes", done, of);
}

static bool oscore_unavailable(int suite, char *why, size_t cap)
{
    return cli_oscore_unavailable(suite, why, cap);
}

static void side_of(const struct cli_edhoc_opts *o, int role, struct cli_side *cs,
                    struct simulate_side *out)
{
    const struct cli_side_opts *so = &o->side[role];
    *out = (struct simulate_side){
        .cfg = &cs->cfg,
        .resolve_ctx = cs,
        .resolve_error = &cs->resolve_error,
        .c_id = so->c_id,
        .c_id_len = so->c_id_len,
        .n_c_id = so->n_c_id,
        .ephemerals = (const uint8_t(*)[EDHOC_CRYPTO_MAX_PRIV])cs->ephemerals,
        .ephemeral_len = cs->ephemeral_len,
        .n_ephemerals = cs->n_ephemerals,
    };
}

enum { OPT_REPEAT = 1, OPT_KEY_UPDATE, OPT_EXPORT, OPT_KEYLOG };

static const struct cli_opt run_opts[] = {
    {OPT_REPEAT, "repeat", "N",
     "run N handshakes (1..1000000) and report the median time (default 1); only\n"
     "the first is printed in full. Ctrl-C stops early and reports the runs done"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt app_key_opts[] = {
    {OPT_KEY_UPDATE, "key-update", "NONCE_HEX",
     "after the handshake, both sides run EDHOC_KeyUpdate with this context (RFC 9528 Appendix "
     "H; hex, empty for h''), as two applications that agreed on it would; reported: whether "
     "they agree and the OSCORE context from the new PRK_out (with --export-secrets also "
     "PRK_out before and after, PRK_exporter after, master secret and salt); --export values "
     "then come from the new PRK_exporter"},
    {OPT_EXPORT, "export", "LABEL,CONTEXT_HEX,LENGTH", CLI_EXPORT_HELP},
    {OPT_KEYLOG, "keylog", "FILE",
     "append to FILE the key log initiator --keylog writes: one edhoc_secrets row per "
     "handshake (both sides hold the same values) and the oscore_contexts rows of the "
     "contexts derived (both directions, and after --key-update), rows of Wireshark's EDHOC "
     "and OSCORE tables (mode 0600, a symbolic link is refused)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group simulate_groups[] = {
    {"EDHOC (-i: the initiator's, -r: the responder's)", cli_edhoc_opts_simulate},
    {"Keys for applications", app_key_opts},
    {"Runs", run_opts},
    {"Bytes, time and energy per layer (computed from the A.2 framing, not measured)",
     cli_net_opts_link_air},
    {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_simulate = {
    .name = "simulate",
    .synopsis = "[OPTIONS]",
    .description =
        "Runs an EDHOC initiator and responder in one process (no network) and reports\n"
        "each message, the outcome, the time per handshake and the OSCORE context (none\n"
        "for suite 25: RFC 8613 Section 3.2.1 has no HKDF for SHAKE256; the run is then\n"
        "EDHOC only and still succeeds).\n"
        "Without --trust each side trusts the other's credential. --json prints one\n"
        "object (docs/json/simulate.schema.json).",
    .groups = simulate_groups,
    .epilogue =
        "Exit codes: 0 ok; 1 handshake failed; 2 bad command line; 3 unusable input file;\n"
        "4 error message from the peer (e.g. no common cipher suite); 5 verification failed\n"
        "(MAC, signature, unknown or untrusted credential); 10 internal error; 130/143\n"
        "--repeat interrupted (SIGINT/SIGTERM), the runs done reported.\n"
        "\n" CLI_EDHOC_DEMO_NOTE,
};

int cmd_simulate(int argc, char **argv)
{
    /* Both sides' private keys and every secret of the handshake. */
    cli_no_core_dumps();
    struct cli_edhoc_opts o;
    cli_edhoc_opts_init(&o);
    long repeat = 1;
    /* large: not on the stack */
    static struct simulate_settings set;
    static struct cli_exports export_requests;
    static struct app_keys_ctx app;
    memset(&set, 0, sizeof set);
    memset(&export_requests, 0, sizeof export_requests);
    memset(&app, 0, sizeof app);
    struct sim_keylog keylog = {NULL, -1, false};

    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_simulate, argc, argv);
    for (enum cli_opt_status st; (st = cli_opt_next(&p)) != CLI_OPT_DONE;) {
        if (st == CLI_OPT_EXIT)
            return p.exit_code;
        if (st == CLI_OPT_POSITIONAL)
            return cli_opt_error(&p, "unexpected argument '%s' (simulate takes options only)",
                                 p.value);
        int bad = 0;
        switch (p.opt->id) {
        case CLI_OPT_ID_EDHOC: bad = cli_edhoc_take(&o, -1, &p); break;
        case CLI_OPT_ID_NET: bad = cli_net_take(&sim_net, &p); break;
        case OPT_REPEAT: bad = cli_opt_long(&p, 1, 1000000, &repeat); break;
        case OPT_KEY_UPDATE: {
            long n =
                p.value[0] ? cli_hex_decode(p.value, set.ku_context, sizeof set.ku_context) : 0;
            if (n < 0)
                bad =
                    cli_opt_error(&p, "--key-update: expected hex of at most %d bytes, got '%.80s'",
                                  CLI_EXPORT_MAX_CONTEXT, p.value);
            set.ku_context_len = n < 0 ? 0 : (size_t)n;
            set.key_update = true;
            break;
        }
        case OPT_EXPORT: {
            char why[400];
            if (export_requests.n >= CLI_MAX_EXPORTS)
                bad = cli_opt_error(&p, "at most %d --export", CLI_MAX_EXPORTS);
            else if (cli_export_parse(p.value, &export_requests.item[export_requests.n], why,
                                      sizeof why))
                bad = cli_opt_error(&p, "--export: %s", why);
            else
                export_requests.n++;
            break;
        }
        case OPT_KEYLOG: keylog.path = p.value; break;
        }
        if (bad)
            return CLI_EXIT_USAGE;
    }
    if (export_requests.n && !o.export_secrets)
        return cli_opt_error(&p, CLI_EXPORT_NEEDS_SECRETS);

    struct cli_side *si = calloc(1, sizeof *si), *sr = calloc(1, sizeof *sr);
    int exit_code = CLI_EXIT_INTERNAL;
    if (!si || !sr) {
        fprintf(stderr, "edhoc-cli simulate: out of memory\n");
        free(si);
        free(sr);
        return CLI_EXIT_INTERNAL;
    }
    exit_code = cli_edhoc_side_setup(&o, CLI_SIDE_I, si);
    if (!exit_code)
        exit_code = cli_edhoc_side_setup(&o, CLI_SIDE_R, sr);
    if (!exit_code && o.n_trust == 0) {
        exit_code = cli_edhoc_side_trust_peer(si, &sr->cred);
        if (!exit_code)
            exit_code = cli_edhoc_side_trust_peer(sr, &si->cred);
    }
    if (exit_code)
        goto done;
    static struct edhoc_key_log key_log;
    if (keylog.path) {
        char why[8500];
        if (sim_keylog_open(&keylog, why, sizeof why)) {
            fprintf(stderr, "edhoc-cli simulate: %s\n", why);
            exit_code = CLI_EXIT_INPUT;
            goto done;
        }
        set.key_log = &key_log;
        set.on_established = sim_keylog_write;
        set.established_ctx = &keylog;
    }

    side_of(&o, CLI_SIDE_I, si, &set.i);
    side_of(&o, CLI_SIDE_R, sr, &set.r);
    set.resolve = cli_edhoc_resolve;
    set.suites = o.suites;
    set.n_suites = o.n_suites;
    set.message_4 = o.message_4;
    set.trace = o.trace;
    set.repeat = repeat;
    set.oscore_unavailable = oscore_unavailable;
    app.requests = &export_requests;
    set.after_handshake = derive_exports;
    set.after_ctx = &app;
    set.interrupted = cli_interrupted;

    /* A long --repeat shows where it is and, stopped by Ctrl-C, still
     * reports the runs it did. */
    struct cli_progress pr;
    cli_progress_begin(&pr, "simulate", p.verbose, p.quiet || repeat == 1);
    if (repeat > 1)
        cli_interrupt_catch();
    set.progress = progress_line;
    set.progress_ctx = &pr;
    static struct simulate_result res;
    int rc = simulate_run(&set, &res);
    cli_progress_end(&pr);
    if (rc) {
        fprintf(stderr, "edhoc-cli simulate: out of memory\n");
        exit_code = CLI_EXIT_INTERNAL;
        goto done;
    }
    const struct simulate_run *run = &res.run;
    struct cli_sim_report rep = {&o, si, sr, &res, &app.keys, &sim_net};
    if (o.json) {
        if (cli_simulate_print_json(stdout, &rep))
            fprintf(stderr, "edhoc-cli simulate: standard output: write error\n");
    } else {
        cli_simulate_print_text(stdout, &rep);
    }
    bool post_values_match = (!run->ku.done || run->ku.sides_agree) &&
                             (!app.keys.have_exports || app.keys.exports_match);
    if (res.timing.partial) {
        exit_code = cli_interrupt_exit_code();
    } else if (res.later_err) {
        fprintf(stderr, "edhoc-cli simulate: handshake %ld of --repeat failed: %s\n",
                res.later_index, res.later_why);
        exit_code = cli_exit_for_edhoc_error(res.later_err);
    } else if (run->err) {
        fprintf(stderr, "edhoc-cli simulate: handshake failed at the %s: %s\n",
                run->failed_side == 'I' ? "initiator" : "responder", run->why);
        exit_code = cli_exit_for_edhoc_error(run->err);
    } else if (run->have_oscore && !simulate_oscore_contexts_match(run)) {
        fprintf(stderr,
                "edhoc-cli simulate: initiator and responder derived different OSCORE contexts\n");
        exit_code = CLI_EXIT_INTERNAL;
    } else if (!post_values_match) {
        fprintf(stderr, "edhoc-cli simulate: initiator and responder derived different keys after "
                        "the handshake (KeyUpdate or EDHOC_Exporter)\n");
        exit_code = CLI_EXIT_INTERNAL;
    } else {
        exit_code = CLI_EXIT_OK;
    }
done:
    simulate_run_free(&res.run);
    cli_exports_wipe(&app.keys.exports_i);
    cli_exports_wipe(&app.keys.exports_r);
    edhoc_wipe(&set, sizeof set);
    if (keylog.fd >= 0)
        close(keylog.fd);
    cli_edhoc_side_free(si);
    cli_edhoc_side_free(sr);
    free(si);
    free(sr);
    return exit_code;
}
