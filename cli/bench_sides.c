/*
 * edhoc-cli bench and load: what the engines of src/tools/bench ask of
 * the program - both sides of a handshake built from the command line's
 * credential set-up (cli/edhoc_args.c), progress and interruption, and
 * the exit code of an engine's status.
 */
#include <stdlib.h>
#include <string.h>

#include "output/bench_output.h"
#include "bench_sides.h"
#include "edhoc_args.h"
#include "output/progress.h"
#include "util.h"

struct cli_bench_pair {
    struct cli_edhoc_opts opts; /* the sides' configs point into it */
    struct cli_side si, sr;
};

static int tools_status_of_exit(int exit_code)
{
    switch (exit_code) {
    case CLI_EXIT_OK: return TOOLS_OK;
    case CLI_EXIT_FAILURE: return TOOLS_ERR_FAILURE;
    case CLI_EXIT_USAGE: return TOOLS_ERR_USAGE;
    case CLI_EXIT_INPUT: return TOOLS_ERR_INPUT;
    default: return TOOLS_ERR_INTERNAL;
    }
}

int cli_exit_for_tools(int status)
{
    switch (status) {
    case TOOLS_OK: return CLI_EXIT_OK;
    case TOOLS_ERR_FAILURE: return CLI_EXIT_FAILURE;
    case TOOLS_ERR_USAGE: return CLI_EXIT_USAGE;
    case TOOLS_ERR_INPUT: return CLI_EXIT_INPUT;
    default: return CLI_EXIT_INTERNAL;
    }
}

static void pair_close(void *ctx, struct bench_sides *sides)
{
    (void)ctx;
    struct cli_bench_pair *pair = sides->handle;
    if (!pair)
        return;
    cli_edhoc_side_free(&pair->si);
    cli_edhoc_side_free(&pair->sr);
    edhoc_wipe(pair, sizeof *pair);
    free(pair);
    memset(sides, 0, sizeof *sides);
}

/* Both sides with built-in demo credentials, each with exactly the
 * peer's credential configured (no chain building). The set-up prints
 * its own reason when it fails. */
static int pair_open(void *ctx, int method, int suite, int id_cred_type, struct bench_sides *out,
                     char *error, size_t cap)
{
    (void)ctx;
    (void)error;
    (void)cap;
    memset(out, 0, sizeof *out);
    struct cli_bench_pair *pair = calloc(1, sizeof *pair);
    if (!pair)
        return TOOLS_ERR_INTERNAL;
    struct cli_edhoc_opts *o = &pair->opts;
    cli_edhoc_opts_init(o);
    o->method = method;
    o->suites[0] = suite;
    o->n_suites = 1;
    o->suites_r[0] = suite;
    o->n_suites_r = 1;
    o->side[CLI_SIDE_I].id_cred_type = id_cred_type;
    o->side[CLI_SIDE_R].id_cred_type = id_cred_type;
    out->handle = pair;
    int rc = cli_edhoc_side_setup(o, CLI_SIDE_I, &pair->si);
    if (!rc)
        rc = cli_edhoc_side_setup(o, CLI_SIDE_R, &pair->sr);
    if (!rc) {
        edhoc_cred_store_init(pair->si.store);
        edhoc_cred_store_init(pair->sr.store);
        rc = cli_edhoc_side_trust_peer(&pair->si, &pair->sr.cred);
    }
    if (!rc)
        rc = cli_edhoc_side_trust_peer(&pair->sr, &pair->si.cred);
    if (rc) {
        pair_close(NULL, out);
        return rc < 0 ? TOOLS_ERR_INTERNAL : tools_status_of_exit(rc);
    }
    out->cfg_i = &pair->si.cfg;
    out->cfg_r = &pair->sr.cfg;
    out->resolve = cli_edhoc_resolve;
    out->resolve_ctx_i = &pair->si;
    out->resolve_ctx_r = &pair->sr;
    return 0;
}

const struct bench_side_maker cli_bench_sides = {
    .open = pair_open,
    .close = pair_close,
    .id_cred_name = cli_id_cred_type_name,
    .ctx = NULL,
};

static void progress_line(void *ctx, const char *text)
{
    cli_progress_update(ctx, "%s", text);
}

void cli_bench_hooks(struct bench_report *r, struct cli_progress *progress)
{
    r->progress = progress ? progress_line : NULL;
    r->progress_ctx = progress;
    r->effort.interrupted = cli_interrupted;
}
