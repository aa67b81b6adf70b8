/*
 * edhoc-cli interop URI: a device test matrix with us as the initiator,
 * and interop --report DIR: what devices tried as initiators against our
 * responder. The matrix itself (its cells, each one initiator run in a
 * child process, and their diagnosis) is the engine of src/tools/interop
 * (interop_matrix.h); this file has the option table, the argument checks
 * and the calls; interop_output.c prints the matrix, interop_report.c the
 * report.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "commands.h"
#include "interop_matrix.h"
#include "output/interop_output.h"
#include "interop_report.h"
#include "keylog.h"
#include "path_check.h"
#include "output/progress.h"
#include "util.h"

/* The engine reads the initiator's exit codes by these names. */
#define SAME_EXIT(name) ((int)INTEROP_EXIT_##name == (int)CLI_EXIT_##name)
_Static_assert(SAME_EXIT(OK) && SAME_EXIT(FAILURE) && SAME_EXIT(USAGE) && SAME_EXIT(INPUT) &&
                   SAME_EXIT(PEER_ERROR) && SAME_EXIT(VERIFY) && SAME_EXIT(TIMEOUT) &&
                   SAME_EXIT(OSCORE),
               "the initiator's exit codes as the interop engine reads them");

/* ---- Command line ---- */

enum {
    OPT_METHODS = 1,
    OPT_SUITES,
    OPT_ID_CREDS,
    OPT_FRAMING,
    OPT_FULL,
    OPT_TIMEOUT,
    OPT_REQUEST,
    OPT_TOLERATE,
    OPT_CRED,
    OPT_KEY,
    OPT_TRUST,
    OPT_TRACE_DIR,
    OPT_KEYLOG,
    OPT_REPORT,
    OPT_JSON,
    OPT_JSON_OUT,
};

static const struct cli_opt matrix_opts[] = {
    {OPT_METHODS, "methods", "LIST", "methods to try (default 0,1,2,3)"},
    {OPT_SUITES, "suites", "LIST", "cipher suites to try (default 0,2)"},
    {OPT_ID_CREDS, "id-creds", "LIST",
     "ID_CRED types to try: kid, kccs, kcwt, x5t, x5chain, x5bag (default kid,x5t; with\n"
     "--cred: kid,kccs for a CCS, kcwt,kid for a CWT, x5t,x5chain,x5bag for a certificate)"},
    {OPT_FRAMING, "framing", "a2|bare|auto",
     "the framing of the cells: a2 (RFC 9528 Appendix A.2) or bare only; auto: each cell tries "
     "A.2, then bare, and once the device answered in one, the cells use it. Default: A.2 "
     "cells, plus the bare framing once"},
    {OPT_FULL, "full", NULL,
     "the combined request and the bare framing (with and without message_4) for every cell; "
     "by default they run once, for the first configuration that worked"},
    {OPT_TIMEOUT, "timeout", "SECONDS",
     "bound on each cell (decimals allowed; 0.1..600, default 5; a cell that does not finish 2 "
     "s after it is a timeout; twice SECONDS while --framing auto probes)"},
    {OPT_REQUEST, "request", "'METHOD PATH [PAYLOAD]'|none",
     "the OSCORE request of every cell (default 'GET /.well-known/core'; repeatable); none: "
     "EDHOC only, for devices without OSCORE resources"},
    {OPT_TOLERATE, "tolerate", "LIST",
     "deviations of the device the initiator accepts (passed to every cell as they are; see "
     "edhoc-cli initiator --help)"},
    {OPT_TRACE_DIR, "trace-dir", "DIR",
     "keep each cell's RFC 9529-style trace in DIR/<cell>.txt and every datagram of the cell "
     "in DIR/<cell>.pcap (session secrets: DIR is made 0700, its files 0600; an existing DIR "
     "that group or others can access is refused)"},
    {OPT_KEYLOG, "keylog", "DIR",
     "pass --keylog DIR to each cell's initiator: every completed cell appends its "
     "handshake's secrets to DIR/edhoc_secrets and its OSCORE context to DIR/oscore_contexts "
     "(mode 0600, no symbolic links; DIR 0700), so that a capture of the matrix opens "
     "decrypted"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt cred_opts[] = {
    {OPT_CRED, "cred", "FILE", "our credential (as for the initiator; default: the demo ones)"},
    {OPT_KEY, "key", "FILE", "the private key of --cred"},
    {OPT_TRUST, "trust", "FILE", "the devices' credentials or trust anchors we accept"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt report_opts[] = {
    {OPT_REPORT, "report", "DIR",
     "instead of testing a device: the matrix of what the devices that connected to "
     "edhoc-cli responder --interop-log DIR tried as initiators, read from "
     "DIR/" INTEROP_LOG_FILE " (takes only --json and --json-out)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt output_opts[] = {
    {OPT_JSON, "json", NULL,
     "machine-readable output (docs/json/interop.schema.json; with --report "
     "docs/json/interop-report.schema.json)"},
    {OPT_JSON_OUT, "json-out", "FILE", "also write that JSON to FILE (with the table on stdout)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group interop_groups[] = {
    {"Matrix (edhoc-cli interop URI)", matrix_opts},
    {"Our credentials (passed to every cell)", cred_opts},
    {"Report (the devices as initiators)", report_opts},
    {"Output", output_opts},
    {NULL, NULL},
};

static const struct cli_opt_renamed interop_renamed[] = {
    {"timeout-ms", "--timeout SECONDS (decimals allowed, e.g. --timeout 0.5)"},
    {"handshake-timeout", "--timeout SECONDS (each cell's bound; decimals allowed)"},
    {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_interop = {
    .name = "interop",
    .synopsis = "URI [OPTIONS]\n       edhoc-cli interop --report DIR [--json] [--json-out FILE]",
    .description =
        "Runs a test matrix against an EDHOC responder (the device) with us as the\n"
        "initiator: methods x cipher suites x ID_CRED types, each with and without\n"
        "message_4, plus the RFC 9668 combined request and the bare framing. Each cell\n"
        "is one `edhoc-cli initiator` run (handshake, then one OSCORE request). Prints a\n"
        "table with how EDHOC and the OSCORE request of every cell ended and the likely\n"
        "causes, then a summary of what the device supports for EDHOC (even when OSCORE\n"
        "fails) and what worked with OSCORE.\n\n"
        "Every cell has an EDHOC result (ok, EDHOC error N from the peer, our\n"
        "verification failed, timeout, ...) and, once the handshake completed, an OSCORE\n"
        "result (ok, no answer to the request, an answer without OSCORE, whatever its\n"
        "code, ...). Its outcome is one of:\n"
        "  ok             EDHOC completed and the request got a protected answer (or\n"
        "                 --request none)\n"
        "  failed         EDHOC or the OSCORE request failed\n"
        "  not supported  the device said it does not do it: a method it refuses (EDHOC\n"
        "                 error 1), a suite it refuses (error 2 with SUITES_R), no\n"
        "                 message_4 (an empty 2.04 to message_3), the combined request\n"
        "                 refused (4.02 or an error saying so), a framing it cannot read\n"
        "  skipped        not possible with our credentials (e.g. a key that does not\n"
        "                 fit the suite's curve), or the combined request with\n"
        "                 --request none\n\n"
        "--report DIR: the other direction, the devices as initiators. Reads\n"
        "DIR/" INTEROP_LOG_FILE ", written by `edhoc-cli responder --interop-log DIR`, and\n"
        "prints per device (peer host) the combinations it tried (method, SUITES_I\n"
        "offered -> selected, ID_CRED_I type, message_4, framing / combined request),\n"
        "with attempts, successes, how the last attempt ended and the likely causes, and\n"
        "the trace / pcap of its last failure; then what the device supports. Unusable\n"
        "lines (truncated, not a record) are named on stderr and skipped.\n\n"
        "Progress: one line rewritten on a terminal; nothing when standard error is not\n"
        "a terminal, unless -v. SIGINT or SIGTERM stops the matrix: the cell that was\n"
        "running is stopped and left out, and what completed is printed, marked partial.",
    .groups = interop_groups,
    .renamed = interop_renamed,
    .epilogue = "Exit codes: 0 no cell failed (not supported and skipped cells do not count);\n"
                "1 some cell failed; 2 bad command line (also when the initiator refuses the\n"
                "options every cell shares); 3 the trace directory, the --keylog directory or the\n"
                "--json-out file cannot be used, or no cell could be run with our credentials;\n"
                "10 internal error; 130/143 interrupted by SIGINT/SIGTERM (the completed cells\n"
                "are printed).\n"
                "With --report: 0 the last attempt of every combination ended well; 1 some did\n"
                "not; 3 DIR or its log cannot be read, or --json-out not written.",
};

static bool parse_list(const struct cli_opt_parser *p, int *out, int *n, int lo, int hi)
{
    int k = cli_parse_int_list(p->value, out, INTEROP_MAX_LIST);
    if (k <= 0) {
        cli_opt_error(p, "%s: expected a comma-separated list of integers, got '%s'", p->flag,
                      p->value);
        return false;
    }
    for (int i = 0; i < k; i++) {
        if (out[i] < lo || out[i] > hi) {
            cli_opt_error(p, "%s: %d is out of range %d..%d", p->flag, out[i], lo, hi);
            return false;
        }
    }
    *n = k;
    return true;
}

static bool parse_id_creds(const char *v, struct interop_matrix_opts *o)
{
    o->n_id_creds = 0;
    const char *p = v;
    while (*p) {
        size_t len = strcspn(p, ",");
        static const char *const types[] = {"kid", "kccs", "kcwt", "x5t", "x5chain", "x5bag"};
        bool known = false;
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (len == strlen(types[i]) && !strncmp(p, types[i], len))
                known = true;
        if (!known || o->n_id_creds >= INTEROP_MAX_LIST) {
            fprintf(stderr, "edhoc-cli interop: --id-creds: expected kid, kccs, kcwt, x5t, x5chain "
                            "or x5bag\n");
            return false;
        }
        snprintf(o->id_creds[o->n_id_creds++], sizeof o->id_creds[0], "%.*s", (int)len, p);
        p += len;
        if (*p == ',')
            p++;
    }
    return o->n_id_creds > 0;
}

/* With our own credential file, the ID_CRED types it can be named by. */
static void default_id_creds(struct interop_matrix_opts *o, const char *cred_path)
{
    bool cert = false, cwt = false;
    if (cred_path) {
        size_t len = 0;
        uint8_t *d = cli_read_file(cred_path, &len);
        /* PEM (perhaps after an "EDHOC-kid:" line) or DER: a certificate;
         * a CBOR array of four: a CWT. */
        cert = d && ((len > 10 && (!memcmp(d, "-----BEGIN", 10) || !memcmp(d, "EDHOC-kid:", 10))) ||
                     (len > 0 && d[0] == 0x30));
        cwt = d && len > 0 && d[0] == 0x84;
        free(d);
        parse_id_creds(cert ? "x5t,x5chain,x5bag" : cwt ? "kcwt,kid" : "kid,kccs", o);
    } else {
        parse_id_creds("kid,x5t", o);
    }
}

/* --trace-dir holds session secrets (each trace has the ephemeral private
 * key, PRK_out and the OSCORE master secret; each capture the datagrams):
 * secrets readable by others, unless the directory is ours alone and every
 * file in it is 0600. A missing directory is created 0700 whatever the
 * umask; an existing one is used only if it is a real directory (not a
 * symbolic link) owned by us that group and others cannot access, else it
 * is refused with the fix. Returns 0 or -1 after printing why. */
static int prepare_trace_dir(const char *dir)
{
    bool created = mkdir(dir, 0700) == 0;
    if (!created && errno != EEXIST) {
        fprintf(stderr, "edhoc-cli interop: --trace-dir %s: %s\n", dir, strerror(errno));
        return -1;
    }
    /* The rules of every directory of secrets (path_check.h). */
    char why[8500];
    if (edhoc_secret_dir_check("--trace-dir", dir, "the traces hold session secrets", created, why,
                               sizeof why)) {
        fprintf(stderr, "edhoc-cli interop: %s\n", why);
        return -1;
    }
    return 0;
}

static void on_progress(void *user, size_t number, size_t planned, const char *name, size_t failed)
{
    cli_progress_update(user, "cell %zu of %zu: %s (%zu failed so far)", number, planned, name,
                        failed);
}

static void on_warning(void *user, const char *text)
{
    (void)user;
    fprintf(stderr, "edhoc-cli interop: %s\n", text);
}

int cmd_interop(int argc, char **argv)
{
    /* Our private keys, and the secrets of each cell's handshake. */
    cli_no_core_dumps();
    struct interop_matrix_opts o;
    memset(&o, 0, sizeof o);
    o.timeout_ms = 5000;
    o.framing = INTEROP_FR_BOTH;
    struct interop_output_opts out = {false, NULL, false};
    const char *cred_path = NULL, *keylog_dir = NULL;
    static const int def_methods[] = {0, 1, 2, 3}, def_suites[] = {0, 2};
    static const char *const framings[] = {"a2", "A.2", "bare", "auto", NULL};
    static const enum interop_framing framing_of[] = {INTEROP_FR_A2, INTEROP_FR_A2, INTEROP_FR_BARE,
                                                      INTEROP_FR_AUTO};
    bool have_methods = false, have_suites = false;
    const char *report_dir = NULL;
    /* An option of the matrix given with --report, named in the refusal. */
    const char *matrix_only = NULL;
    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_interop, argc, argv);
    for (;;) {
        enum cli_opt_status st = cli_opt_next(&p);
        if (st == CLI_OPT_DONE)
            break;
        if (st == CLI_OPT_EXIT)
            return p.exit_code;
        if (st == CLI_OPT_POSITIONAL) {
            if (o.uri)
                return cli_opt_error(&p, "one device at a time (got '%s' and '%s')", o.uri,
                                     p.value);
            o.uri = p.value;
            continue;
        }
        int id = p.opt->id, idx = 0;
        if (id != OPT_REPORT && id != OPT_JSON && id != OPT_JSON_OUT && !matrix_only)
            matrix_only = p.opt->name;
        switch (id) {
        case OPT_METHODS:
            if (!parse_list(&p, o.methods, &o.n_methods, 0, 3))
                return CLI_EXIT_USAGE;
            have_methods = true;
            break;
        case OPT_SUITES:
            if (!parse_list(&p, o.suites, &o.n_suites, 0, 31))
                return CLI_EXIT_USAGE;
            have_suites = true;
            break;
        case OPT_ID_CREDS:
            if (!parse_id_creds(p.value, &o))
                return CLI_EXIT_USAGE;
            break;
        case OPT_FRAMING:
            if (cli_opt_choice(&p, framings, &idx))
                return CLI_EXIT_USAGE;
            o.framing = framing_of[idx];
            break;
        case OPT_FULL: o.full = true; break;
        case OPT_TIMEOUT:
            if (cli_opt_seconds(&p, 0.1, 600, &o.timeout_ms))
                return CLI_EXIT_USAGE;
            break;
        case OPT_TRACE_DIR: o.trace_dir = p.value; break;
        case OPT_KEYLOG:
            if (o.n_pass + 2 > INTEROP_MAX_PASS)
                return cli_opt_error(&p, "too many options");
            o.pass[o.n_pass++] = "--keylog";
            o.pass[o.n_pass++] = p.value;
            keylog_dir = p.value;
            break;
        case OPT_REPORT: report_dir = p.value; break;
        case OPT_JSON: out.json = true; break;
        case OPT_JSON_OUT: out.json_out = p.value; break;
        case OPT_REQUEST:
        case OPT_TOLERATE:
        case OPT_CRED:
        case OPT_KEY:
        case OPT_TRUST:
            /* The initiator's own options: passed to every cell as they
             * are, checked by the initiator. */
            if (o.n_pass + 2 > INTEROP_MAX_PASS)
                return cli_opt_error(&p, "too many options");
            o.pass[o.n_pass++] = id == OPT_REQUEST    ? "--request"
                                 : id == OPT_TOLERATE ? "--tolerate"
                                 : id == OPT_CRED     ? "--cred"
                                 : id == OPT_KEY      ? "--key"
                                                      : "--trust";
            o.pass[o.n_pass++] = p.value;
            if (id == OPT_CRED)
                cred_path = p.value;
            if (id == OPT_REQUEST) {
                if (!strcmp(p.value, "none"))
                    o.request_none = true;
                else if (!o.request)
                    o.request = p.value;
            }
            break;
        }
    }
    if (report_dir) {
        /* The other direction reads a log: nothing of the matrix applies. */
        if (o.uri)
            return cli_opt_error(&p,
                                 "--report reads the log of a responder and tests no device "
                                 "(got '%s'; run them separately)",
                                 o.uri);
        if (matrix_only)
            return cli_opt_error(&p,
                                 "--%s applies to the matrix against a device (edhoc-cli "
                                 "interop URI), not to --report",
                                 matrix_only);
        struct interop_report_opts ro = {report_dir, out.json, out.json_out};
        return interop_report_run(&ro);
    }
    if (!o.uri)
        return cli_opt_usage_error(&cli_spec_interop, "which device? (a coap:// URI, or --report "
                                                      "DIR)");
    if (strncmp(o.uri, "coap://", 7) != 0)
        return cli_opt_error(&p, "expected a coap:// URI, got '%s'", o.uri);
    if (o.request_none && o.request)
        return cli_opt_error(&p, "--request none cannot go with other requests");
    out.quiet = p.quiet;
    if (!have_methods) {
        memcpy(o.methods, def_methods, sizeof def_methods);
        o.n_methods = 4;
    }
    if (!have_suites) {
        memcpy(o.suites, def_suites, sizeof def_suites);
        o.n_suites = 2;
    }
    if (!o.n_id_creds)
        default_id_creds(&o, cred_path);
    if (o.trace_dir && prepare_trace_dir(o.trace_dir) != 0)
        return CLI_EXIT_INPUT;
    if (keylog_dir) {
        /* Refused once here, not by every cell. */
        struct cli_keylog k;
        char why[PATH_MAX + 200];
        if (cli_keylog_open(&k, keylog_dir, why, sizeof why)) {
            fprintf(stderr, "edhoc-cli interop: %s\n", why);
            return CLI_EXIT_INPUT;
        }
        cli_keylog_close(&k);
    }
    size_t planned = interop_matrix_planned(&o);
    if (planned > INTEROP_MAX_CELLS)
        return cli_opt_error(&p, "at most %d cells (this matrix has %zu); narrow it",
                             INTEROP_MAX_CELLS, planned);
    /* SIGINT/SIGTERM: the running cell is stopped and left out, and the
     * matrix of the cells that completed is printed (issue 14, item 9). */
    cli_interrupt_catch();
    struct cli_progress pr;
    cli_progress_begin(&pr, "interop", p.verbose, p.quiet);
    o.interrupted = cli_interrupted;
    o.progress = on_progress;
    o.warn = on_warning;
    o.user = &pr;
    struct interop_matrix m;
    if (interop_matrix_run(&o, &m) != 0) {
        cli_progress_end(&pr);
        return CLI_EXIT_INTERNAL;
    }
    cli_progress_end(&pr);
    int rc;
    if (m.fatal) {
        fprintf(stderr, "edhoc-cli interop: %s\n", m.fatal->setup_text);
        rc = m.fatal->setup_exit;
    } else {
        rc = interop_output_matrix(&o, &out, &m);
    }
    interop_matrix_free(&m);
    return rc;
}
