/*
 * edhoc-cli responder: the CoAP daemon. Serves /.well-known/edhoc to many
 * initiators at once and the OSCORE-protected resources to every peer
 * with a context (EDHOC-established or static), keeping contexts and
 * sequence-number marks in a state database.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "commands.h"
#include "daemon.h"
#include "edhoc/amplification.h"
#include "edhoc/blockwise.h"
#include "edhoc/state.h"
#include "edhoc/transport.h"
#include "edhoc_args.h"
#include "interop_log.h"
#include "keylog.h"
#include "context_lock.h"
#include "listen.h"
#include "oscore_seq.h"
#include "responder_acct.h"
#include "responder_creds.h"
#include "responder_static.h"
#include "responder_workers.h"
#include "serve.h"
#include "util.h"

_Static_assert((int)CLI_WORKERS_EXIT_OK == (int)CLI_EXIT_OK &&
                   (int)CLI_WORKERS_EXIT_FAILURE == (int)CLI_EXIT_FAILURE &&
                   (int)CLI_WORKERS_EXIT_USAGE == (int)CLI_EXIT_USAGE &&
                   (int)CLI_WORKERS_EXIT_INPUT == (int)CLI_EXIT_INPUT &&
                   (int)CLI_WORKERS_EXIT_INTERNAL == (int)CLI_EXIT_INTERNAL,
               "the supervisor's exit codes are the program's");

#define MAX_LISTEN 8


static volatile sig_atomic_t stop_signal, reload_signal, stats_signal;

static void on_signal(int sig)
{
    if (sig == SIGHUP)
        reload_signal = 1;
    else if (sig == SIGUSR1)
        stats_signal = 1;
    else
        stop_signal = sig;
}

/* SIGTERM/SIGINT stop, SIGHUP reloads, SIGUSR1 logs the counts (in the
 * supervisor of --workers, each is passed on to the workers). */
static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}


/* What the serve loop leaves to the command. */
struct serve_side {
    struct responder *r;
    struct responder_acct *acct;
};

static void serve_tick(void *user, uint64_t now_ms)
{
    struct serve_side *side = user;
    if (side->r->ilog)
        interop_log_tick(side->r->ilog, now_ms);
}

static void serve_flush(void *user)
{
    struct serve_side *side = user;
    responder_acct_flush(side->acct);
}

static int serve_reload(void *user)
{
    struct serve_side *side = user;
    return responder_creds_load(side->r);
}

/* ---- The command line ---- */

enum {
    OPT_LISTEN = 1,
    OPT_FRAMING,
    OPT_C_R_FORM,
    OPT_ECHO,
    OPT_AMPLIFICATION_FACTOR,
    OPT_PRESSURE_RATE,
    OPT_ALLOW_UNPROTECTED,
    OPT_DEMO,
    OPT_STATE_DIR,
    OPT_OSCORE_CONTEXT,
    OPT_MAX_PENDING,
    OPT_HANDSHAKE_TIMEOUT,
    OPT_MAX_CONTEXTS,
    OPT_CONTEXT_LIFETIME,
    OPT_BLOCK_SIZE,
    OPT_MAX_BODY,
    OPT_MAX_SESSIONS,
    OPT_WORKERS,
    OPT_TRANSFER_TIMEOUT,
    OPT_INTEROP_LOG,
    OPT_INTEROP_LOG_MAX,
    OPT_KEYLOG,
    OPT_READY_FILE,
    OPT_DAEMON,
    OPT_PIDFILE,
    OPT_SYSLOG,
};

static const struct cli_opt serve_opts[] = {
    {OPT_LISTEN, "listen", "HOST[:PORT]",
     "UDP address to serve (repeatable, at most 8): a host name, an IPv4\n"
     "address or an IPv6 address in brackets, as in a URI (localhost:5683,\n"
     "[::1]:0); a name is resolved once, to its first address; port 0 picks a\n"
     "free port, no port means 5683 (default [::]:5683)"},
    {OPT_FRAMING, "framing", "a2|bare|both",
     "the EDHOC framings accepted (default both); with one, behave as a\n"
     "device that knows only that one"},
    {OPT_C_R_FORM, "c-r-form", "int|bstr|any",
     "which one-byte C_R to choose (default int: 0x00-0x17, 0x20-0x37); bstr\n"
     "avoids the int form that some devices encode wrongly in context_2\n"
     "(RFC 9528 3.3.2)"},
    {OPT_ECHO, "echo", NULL,
     "answer a message_1 without a valid Echo option with 4.01 + Echo\n"
     "(RFC 9175): reachability first, crypto later"},
    {OPT_AMPLIFICATION_FACTOR, "amplification-factor", "N",
     "send an address not yet verified (by an Echo round trip or an OSCORE\n"
     "request) at most N times the UDP payload bytes received from it; an\n"
     "answer beyond that becomes a 4.01 with Echo (RFC 9175 2.4, RFC 9528\n"
     "9.7). 0: no limit, for lab use (default 3, 0..1000)"},
    {OPT_PRESSURE_RATE, "pressure-rate", "N",
     "under pressure -- more than N message_1 a second from unverified\n"
     "addresses, or --max-pending handshakes in progress -- answer every\n"
     "message_1 of an unverified address with 4.01 + Echo before any crypto\n"
     "(RFC 9528 9.7), whatever the credential type; addresses verified by\n"
     "Echo alone then start at most N handshakes a second between them (5.03\n"
     "beyond). 0: off (default 500, 0..10000000; needs the amplification\n"
     "limit)"},
    {OPT_ALLOW_UNPROTECTED, "allow-unprotected", NULL,
     "also serve the resources to requests without OSCORE (CoAP-only tests,\n"
     "baselines); default: 4.01"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt demo_opts[] = {
    {OPT_DEMO, "demo", NULL,
     "serve the built-in demo credentials, for a test: their private keys are\n"
     "published, so they authenticate nobody (refused with --cred; without\n"
     "--trust the demo initiators are accepted). Without --demo the responder\n"
     "needs --cred, --key and --trust"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt state_opts[] = {
    {OPT_STATE_DIR, "state-dir", "DIR|none",
     "keep contexts and sequence-number marks in DIR/" EDHOC_STATE_FILE " (default\n"
     "$STATE_DIRECTORY, else $XDG_STATE_HOME/edhoc-cli, else\n"
     "~/.local/state/edhoc-cli; created 0700, one responder at a time); none:\n"
     "nothing survives a restart, which only EDHOC-derived contexts can afford:\n"
     "--oscore-context is then refused"},
    {OPT_OSCORE_CONTEXT, "oscore-context", "FILE",
     "a static OSCORE context (libcoap format; repeatable, at most 16); with\n"
     "rfc8613_b_2,bool,true it runs RFC 8613 Appendix B.2 where Echo would go"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt limit_opts[] = {
    {OPT_MAX_PENDING, "max-pending", "N",
     "handshakes in progress at once (1..65536, default 256); a new one takes\n"
     "the place of the oldest of the lowest-ranked endpoint (unverified, then\n"
     "verified by Echo alone, then authenticated), never of one ranked above\n"
     "it (5.03 then)"},
    {OPT_HANDSHAKE_TIMEOUT, "handshake-timeout", "SECONDS",
     "drop a handshake without message_3 after SECONDS (1..86400, default 60;\n"
     "counted in whole seconds, a fraction rounds up)"},
    {OPT_MAX_CONTEXTS, "max-contexts", "N",
     "OSCORE contexts established by EDHOC kept at once (1..100000000,\n"
     "default 1000000): the least recently used (by its last verified request)\n"
     "gives way to a new one; its peer then gets 4.01 and runs EDHOC again.\n"
     "The state directory keeps the same ones. Static --oscore-context\n"
     "contexts are never evicted and not counted"},
    {OPT_CONTEXT_LIFETIME, "context-lifetime", "SECONDS",
     "drop an EDHOC-established context, and its stored row, after SECONDS\n"
     "without a verified request (decimals allowed, 0.1..315360000, default\n"
     "604800: a week)"},
    {OPT_BLOCK_SIZE, "block-size", "N",
     "block-wise transfer above N bytes (16..1024, a power of two, default\n"
     "1024): outer for EDHOC messages, inner (RFC 8613 4.1.3.4.1) for OSCORE\n"
     "ones"},
    {OPT_MAX_BODY, "max-body", "N",
     "largest body reassembled or served, e.g. by /echo and /bytes?n=N\n"
     "(16..1048576, default 65536); above it: 4.13"},
    {OPT_MAX_SESSIONS, "max-sessions", "N",
     "CoAP sessions (source address and port) kept idle at once (1..1000000,\n"
     "default 512; idle ones go after 30 s; libcoap walks every session on\n"
     "each datagram, so a flood from many sources costs O(N) per datagram)"},
    {OPT_WORKERS, "workers", "N",
     "serve with N processes sharing the listen ports (1..64; default: the\n"
     "CPUs this process may run on; 1 with --pcap, --interop-log or --c-r).\n"
     "Each OSCORE request is steered to the worker owning its context, the\n"
     "rest by address; one process writes the state for all"},
    {OPT_TRANSFER_TIMEOUT, "transfer-timeout", "SECONDS",
     "drop a block-wise transfer or a kept response after SECONDS without\n"
     "progress (decimals allowed, 0.1..86400, default 247, EXCHANGE_LIFETIME)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt interop_opts[] = {
    {OPT_INTEROP_LOG, "interop-log", "DIR",
     "record every incoming handshake for `edhoc-cli interop --report DIR`:\n"
     "DIR/handshakes.jsonl (one JSON line each, docs/json/interop-log.schema.json),\n"
     "DIR/<id>.txt (trace, holds session secrets) and DIR/<id>.pcap; DIR is\n"
     "created 0700, files 0600"},
    {OPT_INTEROP_LOG_MAX, "interop-log-max", "N",
     "handshakes with trace and pcap files (default 10000; later ones get the\n"
     "jsonl line only)"},
    {OPT_KEYLOG, "keylog", "DIR",
     "append each completed handshake's secrets to DIR/edhoc_secrets and its OSCORE\n"
     "context to DIR/oscore_contexts (mode 0600, no symbolic links; DIR 0700), rows of\n"
     "Wireshark's EDHOC and OSCORE tables; with --workers every row is one write"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt process_opts[] = {
    {OPT_READY_FILE, "ready-file", "FILE", "write the bound ports (one per line) once serving"},
    {OPT_DAEMON, "daemon", NULL, "detach from the terminal (not needed under systemd)"},
    {OPT_PIDFILE, "pidfile", "FILE", "write the process id (removed on a clean exit)"},
    {OPT_SYSLOG, "syslog", NULL, "log to syslog (facility daemon) instead of standard error"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group responder_groups[] = {
    {"Serving", serve_opts},
    {"EDHOC (credentials, trust, handshake)", cli_edhoc_opts_responder},
    {"Demo credentials", demo_opts},
    {"State and static OSCORE contexts", state_opts},
    {"Limits", limit_opts},
    {"Interop log", interop_opts},
    {"Process", process_opts},
    {"Bytes per layer (in the per-handshake log line)", cli_net_opts_link},
    {NULL, NULL},
};

static const struct cli_opt_renamed responder_renamed[] = {
    {"method", "--methods LIST (the methods accepted, e.g. --methods 0,3)"},
    {"cred-r", "--cred FILE (the responder's own options have no -r suffix)"},
    {"key-r", "--key FILE (the responder's own options have no -r suffix)"},
    {"id-cred-r", "--id-cred TYPE (the responder's own options have no -r suffix)"},
    {"suites-r", "--suites LIST (the responder's own options have no -r suffix)"},
    {"tolerate-r", "--tolerate LIST (the responder's own options have no -r suffix)"},
    {"emulate-r", "--emulate LIST (the responder's own options have no -r suffix)"},
    {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_responder = {
    .name = "responder",
    .synopsis = "[OPTIONS]",
    .description =
        "Serves EDHOC (RFC 9528, POST /.well-known/edhoc, Appendix A.2 framing, bare framing\n"
        "of older devices, the RFC 9668 combined request) and the OSCORE-protected resources\n"
        "/.well-known/core, /echo (POST), /time, /bytes?n=N and /counter (observable).\n"
        "It needs its credentials and the peers it accepts: --cred FILE --key FILE (one pair\n"
        "per identity) and --trust FILE; --demo serves the built-in demo credentials instead,\n"
        "for tests. Logging: one line per handshake, with its datagrams and bytes per layer;\n"
        "-q: warnings and errors only; -v, -vv: more.",
    .groups = responder_groups,
    .renamed = responder_renamed,
    .epilogue =
        "Signals: SIGTERM/SIGINT store state and exit 0; SIGHUP reloads credentials and trust\n"
        "(established OSCORE contexts stay, handshakes in progress are dropped); SIGUSR1\n"
        "logs the counts (contexts, evicted, expired, handshakes in progress, RFC 8613\n"
        "Appendix B.2 runs; the amplification limit's answers held back, Echo\n"
        "challenges, endpoints verified).\n"
        "Exit codes: 0 stopped by a signal; 2 bad command line (also: no credentials without\n"
        "--demo, --cred without --trust, a --listen host that does not resolve); 3 unusable\n"
        "credential, trust or state file (a corrupt or foreign state database is refused,\n"
        "never overwritten); 1 cannot listen; 10 internal error.",
};

/* The warnings and notes the options call for: once, whatever the number
 * of workers (they serve under the same options). */
/* --keylog DIR: the rows of each completed handshake (the engine calls
 * these). */
struct responder_keylog {
    const char *dir;
    struct cli_keylog files;
};

static void keylog_edhoc(void *user, const struct edhoc_key_log *log)
{
    const struct responder_keylog *k = user;
    if (cli_keylog_write_edhoc(&k->files, log) != 0)
        cli_log(LOG_WARNING, "--keylog %s/" CLI_KEYLOG_EDHOC_FILE ": %s", k->dir, strerror(errno));
}

static void keylog_oscore(void *user, const struct edhoc_oscore_params *p)
{
    const struct responder_keylog *k = user;
    if (cli_keylog_write_oscore_responder(&k->files, p) != 0)
        cli_log(LOG_WARNING, "--keylog %s/" CLI_KEYLOG_OSCORE_FILE ": %s", k->dir, strerror(errno));
}

static void log_start(const struct responder *r, const struct cli_worker_loads *loads,
                      const struct edhoc_server_stats *st, bool allow_unprotected,
                      bool edhoc_only_suite, long amp_factor, long pressure_rate, bool no_state)
{
    /* Every worker's stored and static contexts. */
    cli_log(LOG_NOTICE,
            "serving %s credentials, %zu stored context%s loaded, %zu static; %zu bytes per "
            "handshake in progress, %zu per OSCORE context",
            r->demo ? "built-in demo" : "configured", loads->total_contexts,
            loads->total_contexts == 1 ? "" : "s", loads->total_statics, st->bytes_per_pending,
            st->bytes_per_context);
    if (no_state)
        cli_log(LOG_NOTICE, "--state-dir none: EDHOC-derived contexts end with this process");
    if (r->demo)
        cli_log(LOG_WARNING, "--demo: the built-in demo credentials' private keys are published: "
                             "anyone can pose as this responder%s; for tests only",
                r->o.n_trust ? "" : " and as the demo initiators it accepts");
    if (allow_unprotected)
        cli_log(LOG_WARNING, "--allow-unprotected: the resources answer requests without OSCORE "
                             "too");
    if (edhoc_only_suite)
        cli_log(LOG_NOTICE, "suite 25: EDHOC only for suite 25, no OSCORE context follows "
                            "(RFC 8613 Section 3.2.1 derives keys with an HMAC-based HKDF, which "
                            "SHAKE256 has not; RFC 9528 Section 3.6)");
    if (amp_factor > 0)
        cli_log(LOG_INFO, "amplification limit: an address not yet verified is sent at most %ld "
                          "times the bytes received from it (--amplification-factor); under "
                          "pressure every message_1 of an unverified address gets 4.01 + Echo "
                          "first (%s)",
                amp_factor, pressure_rate ? "--pressure-rate" : "off: --pressure-rate 0");
    else
        cli_log(LOG_WARNING, "--amplification-factor 0: no amplification limit; anyone can make "
                             "this responder send large answers to a spoofed address");
}

int cmd_responder(int argc, char **argv)
{
    /* The daemon holds private keys and OSCORE master secrets. */
    cli_no_core_dumps();
    struct responder *r = calloc(1, sizeof *r);
    if (!r)
        return CLI_EXIT_INTERNAL;
    cli_edhoc_opts_init(&r->o);
    const char *listen_spec[MAX_LISTEN];
    char listen_addr[MAX_LISTEN][NI_MAXHOST + 16];
    const char *listen[MAX_LISTEN];
    size_t n_listen = 0;
    const char *static_paths[MAX_STATIC];
    size_t n_static = 0;
    const char *state_dir = NULL, *pidfile = NULL, *ready_file = NULL, *interop_dir = NULL;
    long interop_max = INTEROP_LOG_MAX_FILES;
    bool daemon = false, use_syslog = false, echo_m1 = false, allow_unprotected = false;
    long amp_factor = EDHOC_AMP_DEFAULT_FACTOR;
    long pressure_rate = EDHOC_AMP_DEFAULT_PRESSURE_RATE;
    struct edhoc_amp *amp = NULL;
    bool demo = false;
    unsigned framings = 0; /* both */
    int c_r_form = EDHOC_C_R_FORM_INT;
    long max_contexts = (long)EDHOC_SERVER_DEFAULT_MAX_CONTEXTS,
         context_lifetime_ms = (long)EDHOC_SERVER_DEFAULT_CONTEXT_LIFETIME_MS;
    long max_pending = 256, hs_timeout_ms = 60000, block_size = 0,
         max_body = EDHOC_BW_DEFAULT_MAX_BODY, max_sessions = 512,
         transfer_timeout_ms = EDHOC_BW_DEFAULT_LIFETIME_MS;
    long workers = 0; /* 0: the CPUs */
    struct responder_keylog keylog = {.files = {.edhoc_fd = -1, .oscore_fd = -1}};
    struct cli_worker_role role = {.count = 1, .state_fd = -1, .ready_fd = -1, .go_fd = -1};
    int exit_code = CLI_EXIT_USAGE;
    struct cli_net_opts net;
    memset(&net, 0, sizeof net);
    struct responder_acct *acct = NULL;

    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_responder, argc, argv);
    for (enum cli_opt_status st; (st = cli_opt_next(&p)) != CLI_OPT_DONE;) {
        if (st == CLI_OPT_EXIT) {
            exit_code = p.exit_code;
            goto out;
        }
        if (st == CLI_OPT_POSITIONAL) {
            cli_opt_error(&p, "unexpected argument '%s' (the responder takes options only)",
                          p.value);
            goto out;
        }
        int bad = 0;
        switch (p.opt->id) {
        case CLI_OPT_ID_EDHOC:
            /* --cred and --key come in pairs, one identity each: the
             * shared parser keeps one of each, so they are counted here. */
            if (!strcmp(p.opt->name, "cred") || !strcmp(p.opt->name, "key")) {
                bool cred = !strcmp(p.opt->name, "cred");
                size_t *count = cred ? &r->n_cred_paths : &r->n_key_paths;
                if (*count >= MAX_CREDS) {
                    cli_opt_error(&p, "at most %d %s", MAX_CREDS, p.flag);
                    goto out;
                }
                (cred ? r->cred_paths : r->key_paths)[(*count)++] = p.value;
            } else {
                bad = cli_edhoc_take(&r->o, CLI_SIDE_R, &p);
            }
            break;
        case CLI_OPT_ID_NET: bad = cli_net_take(&net, &p); break;
        case OPT_LISTEN:
            if (n_listen >= MAX_LISTEN) {
                cli_opt_error(&p, "at most %d --listen", MAX_LISTEN);
                goto out;
            }
            listen_spec[n_listen++] = p.value;
            break;
        case OPT_FRAMING:
            if (!strcmp(p.value, "a2") || !strcmp(p.value, "A.2"))
                framings = 1u << EDHOC_FRAMING_A2;
            else if (!strcmp(p.value, "bare"))
                framings = 1u << EDHOC_FRAMING_BARE;
            else if (!strcmp(p.value, "both"))
                framings = 0;
            else
                bad = cli_opt_error(&p, "--framing: a2, bare or both, got '%s'", p.value);
            break;
        case OPT_C_R_FORM: {
            static const char *const forms[] = {"int", "bstr", "any", NULL};
            static const int form_ids[] = {EDHOC_C_R_FORM_INT, EDHOC_C_R_FORM_BSTR,
                                           EDHOC_C_R_FORM_ANY};
            int k = 0;
            bad = cli_opt_choice(&p, forms, &k);
            if (!bad)
                c_r_form = form_ids[k];
            break;
        }
        case OPT_ECHO: echo_m1 = true; break;
        case OPT_AMPLIFICATION_FACTOR: bad = cli_opt_long(&p, 0, 1000, &amp_factor); break;
        case OPT_PRESSURE_RATE: bad = cli_opt_long(&p, 0, 10000000, &pressure_rate); break;
        case OPT_ALLOW_UNPROTECTED: allow_unprotected = true; break;
        case OPT_DEMO: demo = true; break;
        case OPT_STATE_DIR: state_dir = p.value; break;
        case OPT_OSCORE_CONTEXT:
            if (n_static >= MAX_STATIC) {
                cli_opt_error(&p, "at most %d --oscore-context", MAX_STATIC);
                goto out;
            }
            static_paths[n_static++] = p.value;
            break;
        case OPT_MAX_PENDING: bad = cli_opt_long(&p, 1, 65536, &max_pending); break;
        case OPT_HANDSHAKE_TIMEOUT: bad = cli_opt_seconds(&p, 1, 86400, &hs_timeout_ms); break;
        case OPT_MAX_CONTEXTS: bad = cli_opt_long(&p, 1, 100000000, &max_contexts); break;
        case OPT_CONTEXT_LIFETIME:
            bad = cli_opt_seconds(&p, 0.1, 315360000, &context_lifetime_ms);
            break;
        case OPT_BLOCK_SIZE:
            bad = cli_opt_long(&p, 16, 1024, &block_size);
            if (!bad && (block_size & (block_size - 1)))
                bad = cli_opt_error(&p, "--block-size: a power of two (16, 32, ..., 1024), "
                                        "got '%s'", p.value);
            break;
        case OPT_MAX_BODY:
            bad = cli_opt_long(&p, 16, (long)EDHOC_BW_MAX_BODY_LIMIT, &max_body);
            break;
        case OPT_MAX_SESSIONS: bad = cli_opt_long(&p, 1, 1000000, &max_sessions); break;
        case OPT_WORKERS: bad = cli_opt_long(&p, 1, 64, &workers); break;
        case OPT_TRANSFER_TIMEOUT:
            bad = cli_opt_seconds(&p, 0.1, 86400, &transfer_timeout_ms);
            break;
        case OPT_INTEROP_LOG: interop_dir = p.value; break;
        case OPT_INTEROP_LOG_MAX: bad = cli_opt_long(&p, 0, LONG_MAX, &interop_max); break;
        case OPT_KEYLOG: keylog.dir = p.value; break;
        case OPT_READY_FILE: ready_file = p.value; break;
        case OPT_DAEMON: daemon = true; break;
        case OPT_PIDFILE: pidfile = p.value; break;
        case OPT_SYSLOG: use_syslog = true; break;
        default: break;
        }
        if (bad)
            goto out;
    }
    if (r->o.side[CLI_SIDE_R].n_c_id > 1) {
        cli_opt_error(&p, "--c-r: one value (every handshake uses it)");
        goto out;
    }
    {
        /* One capture file, one interop log and one fixed C_R belong to
         * one process. */
        const char *single = net.pcap ? "--pcap" : interop_dir ? "--interop-log"
                             : r->o.side[CLI_SIDE_R].n_c_id ? "--c-r" : NULL;
        if (single && workers > 1) {
            cli_opt_error(&p, "--workers %ld with %s: one process writes it; use --workers 1",
                          workers, single);
            goto out;
        }
        if (workers == 0) {
            unsigned cpus = cli_workers_cpus();
            workers = single ? 1 : cpus > 64 ? 64 : (long)cpus;
        }
    }
    if (r->n_cred_paths != r->n_key_paths) {
        cli_opt_error(&p, "give --cred and --key in pairs (%zu --cred, %zu --key)",
                      r->n_cred_paths, r->n_key_paths);
        goto out;
    }
    if (state_dir && !strcmp(state_dir, "none") && n_static) {
        cli_opt_error(&p, "--oscore-context needs a state directory: a static OSCORE context "
                          "restarted without its stored sequence-number mark repeats nonces and "
                          "forgets its replay window (RFC 8613 Section 7.2 and Appendix B.1); "
                          "drop --state-dir none");
        goto out;
    }
    /* Safe defaults: the demo keys are published (RFC 9529 and this
     * program), so serving them is a test, said with --demo; a responder
     * with its own credentials accepts only the peers --trust names, and
     * without any it would accept nobody. */
    if (demo && r->n_cred_paths) {
        cli_opt_error(&p, "--demo serves the built-in demo credentials: drop it to serve "
                          "--cred/--key, or drop --cred/--key for a test on the demo keys");
        goto out;
    }
    if (!demo && r->n_cred_paths == 0) {
        cli_opt_error(&p, "no credentials: give --cred FILE --key FILE (one pair per identity; "
                          "edhoc-cli keygen makes them) and --trust FILE (the CA certificates or "
                          "peer credentials to accept); the built-in demo credentials' private "
                          "keys are published, so add --demo only to run a test on them");
        goto out;
    }
    if (r->o.side[CLI_SIDE_R].kid_len && r->n_cred_paths != 1) {
        cli_opt_error(&p, "--kid names one credential: give exactly one --cred with it (or put "
                          "an 'EDHOC-kid: HEX' line before each certificate)");
        goto out;
    }
    if (r->n_cred_paths && r->o.n_trust == 0) {
        cli_opt_error(&p, "--cred without --trust: this responder would accept no initiator; add "
                          "--trust FILE (repeatable) with the CA certificates or the peer "
                          "credentials to accept");
        goto out;
    }
    for (size_t i = 0; i < n_listen; i++) {
        char why[NI_MAXHOST + 300];
        if (cli_listen_resolve(listen_spec[i], listen_addr[i], sizeof listen_addr[i], why,
                           sizeof why)) {
            cli_opt_error(&p, "%s", why);
            goto out;
        }
        listen[i] = listen_addr[i];
    }
    if (n_listen == 0) {
        listen_spec[0] = listen[0] = "[::]:5683";
        n_listen = 1;
    }
    if (r->o.n_suites_r) {
        memcpy(r->supported, r->o.suites_r, r->o.n_suites_r * sizeof(int));
        r->n_supported = r->o.n_suites_r;
    } else {
        /* Every suite the library has, 25 included: an initiator selects
         * suite 25 only when it prefers it to all the others we serve
         * (RFC 9528 Section 5.2.3), and then gets EDHOC without OSCORE
         * (RFC 8613 Section 3.2.1 has no HKDF for SHAKE256), as the log
         * line of each such handshake says. */
        memcpy(r->supported, responder_known_suites, sizeof responder_known_suites);
        r->n_supported = N_SUITE_IDS;
    }
    bool edhoc_only_suite = false;
    for (size_t i = 0; i < r->n_supported; i++)
        edhoc_only_suite |= r->supported[i] == 25;

    /* Default: one line per handshake (info). -q: warnings and errors. */
    int threshold = p.quiet ? LOG_WARNING : LOG_INFO + p.verbose;
    if (threshold > LOG_DEBUG)
        threshold = LOG_DEBUG;
    int verbosity = p.quiet ? -1 : p.verbose;
    cli_log_open("edhoc-cli", use_syslog, threshold);
    /* libcoap's lines (-vv) go through our log too: whole, once, with our
     * time stamp and pid, to syslog with --syslog. */
    edhoc_transport_set_log_sink(cli_log_line, NULL);

    /* Paths stay valid after --daemon changes directory. */
    char state_abs[PATH_MAX], pid_abs[PATH_MAX], ready_abs[PATH_MAX], pcap_abs[PATH_MAX];
    if (net.pcap && net.pcap[0] != '/' && getcwd(pcap_abs, sizeof pcap_abs)) {
        size_t l = strlen(pcap_abs);
        snprintf(pcap_abs + l, sizeof pcap_abs - l, "/%s", net.pcap);
        net.pcap = pcap_abs;
    }
    {
        /* Durable by default: a static context's sequence numbers must
         * survive restarts (RFC 8613 Section 7.2, Appendix B.1), and
         * EDHOC-derived contexts then survive them too. */
        char why[PATH_MAX + 200] = "";
        int sd = cli_state_dir(state_dir, state_abs, sizeof state_abs, why, sizeof why);
        if (sd < 0) {
            cli_log(LOG_ERR, "state: %s", why);
            exit_code = CLI_EXIT_INPUT;
            goto out;
        }
        state_dir = sd == 0 ? state_abs : NULL;
    }
    if (pidfile && pidfile[0] != '/' && getcwd(pid_abs, sizeof pid_abs)) {
        size_t l = strlen(pid_abs);
        snprintf(pid_abs + l, sizeof pid_abs - l, "/%s", pidfile);
        pidfile = pid_abs;
    }
    if (ready_file && ready_file[0] != '/' && getcwd(ready_abs, sizeof ready_abs)) {
        size_t l = strlen(ready_abs);
        snprintf(ready_abs + l, sizeof ready_abs - l, "/%s", ready_file);
        ready_file = ready_abs;
    }

    if (interop_dir) {
        char why[PATH_MAX + 200];
        if (interop_log_open(&r->ilog, interop_dir, interop_max, why, sizeof why)) {
            cli_log(LOG_ERR, "%s", why);
            exit_code = CLI_EXIT_INPUT;
            goto out;
        }
    }
    if (keylog.dir) {
        /* Before the workers start: they share the descriptors, appended
         * to with one write(2) per row. */
        char why[PATH_MAX + 200];
        if (cli_keylog_open(&keylog.files, keylog.dir, why, sizeof why)) {
            cli_log(LOG_ERR, "%s", why);
            exit_code = CLI_EXIT_INPUT;
            goto out;
        }
    }
    exit_code = responder_creds_load(r);
    if (exit_code)
        goto out;
    exit_code = responder_acct_open(&net, r->ilog, &acct);
    if (exit_code)
        goto out;

    struct edhoc_state_db *db = NULL;
    if (state_dir && cli_serve_open_state(state_dir, &db)) {
        exit_code = CLI_EXIT_INPUT;
        goto out;
    }
    if (n_static) {
        exit_code = responder_static_lock(static_paths, n_static, state_dir);
        if (exit_code)
            goto close_db;
    }

    /* Before anything says the responder is up (the pid file, the ready
     * file, a worker's report): a supervisor may signal it the moment one
     * appears, and SIGTERM must then store state and exit 0, not kill. A
     * signal that comes while contexts load is acted on once they are. */
    catch_signals();
    if (workers > 1) {
        if (db && cli_serve_prune(db, state_dir, (uint64_t)context_lifetime_ms,
                                  (uint64_t)max_contexts)) {
            exit_code = CLI_EXIT_INPUT;
            goto close_db;
        }
        if (daemon && !use_syslog)
            cli_log(LOG_WARNING, "--daemon without --syslog: once detached, log lines go "
                                 "nowhere (add --syslog to keep them)");
        if (daemon && cli_daemonize()) {
            cli_log(LOG_ERR, "cannot detach: %s", strerror(errno));
            exit_code = CLI_EXIT_INTERNAL;
            goto close_db;
        }
        struct cli_workers_config wcfg = {
            .count = (unsigned)workers,
            .db = db,
            .listen = listen_addr,
            .listen_spec = listen_spec,
            .n_listen = n_listen,
            .ready_file = ready_file,
            .pidfile = pidfile,
            .state_dir = state_dir,
            .stop_signal = &stop_signal,
            .stats_signal = &stats_signal,
            .reload_signal = &reload_signal,
        };
        for (size_t i = 0; i < n_listen; i++) {
            if (listen[i] != listen_addr[i])
                snprintf(listen_addr[i], sizeof listen_addr[i], "%s", listen[i]);
            listen[i] = listen_addr[i];
        }
        int code = CLI_EXIT_INTERNAL;
        if (cli_workers_start(&wcfg, &role, &code)) {
            exit_code = code;
            goto close_db;
        }
        /* A worker from here on: the supervisor holds the database, the
         * pid file and the ready file. */
        db = NULL;
        if (role.state_fd >= 0 && edhoc_state_connect(role.state_fd, &db)) {
            exit_code = CLI_EXIT_INTERNAL;
            goto out;
        }
        daemon = false;
        pidfile = NULL;
        ready_file = NULL;
    }

    if (amp_factor > 0) {
        struct edhoc_amp_config acfg = {.factor = (unsigned)amp_factor,
                                        .pressure_rate = (unsigned)pressure_rate};
        const struct edhoc_crypto_ops *ops = edhoc_crypto_default();
        if (ops->random(ops->rng_ctx, (uint8_t *)acfg.seed, sizeof acfg.seed) ||
            !(amp = edhoc_amp_new(&acfg))) {
            cli_log(LOG_ERR, "out of memory");
            exit_code = CLI_EXIT_INTERNAL;
            goto close_db;
        }
    }
    struct edhoc_server_config scfg = {
        .amp = amp,
        .ops = edhoc_crypto_default(),
        .select = responder_creds_select,
        .select_user = r,
        .max_pending = (size_t)max_pending,
        /* Each worker holds its share of the bound. */
        .max_contexts = (size_t)((max_contexts + (long)role.count - 1) / (long)role.count),
        .workers = role.count,
        .worker_index = role.index,
        .context_lifetime_ms = (uint64_t)context_lifetime_ms,
        /* Whole seconds in the server: a fraction rounds up. */
        .pending_timeout_s = (unsigned)((hs_timeout_ms + 999) / 1000),
        .message_4 = r->o.message_4,
        .echo_message_1 = echo_m1,
        .serve_unprotected = allow_unprotected,
        .framings = framings,
        .db = db,
        .log = responder_acct_log,
        .log_user = acct,
        .log_max_level = cli_log_threshold(),
        .record = r->ilog ? interop_log_record : NULL,
        .oscore = r->ilog ? interop_log_oscore : NULL,
        .record_user = r->ilog,
        .max_body = (size_t)max_body,
        .block_size = (unsigned)block_size,
        .transfer_lifetime_ms = (uint32_t)transfer_timeout_ms,
        .c_r_form = c_r_form,
        .edhoc_keys = keylog.dir ? keylog_edhoc : NULL,
        .oscore_keys = keylog.dir ? keylog_oscore : NULL,
        .keys_user = &keylog,
    };
    if (r->o.side[CLI_SIDE_R].n_c_id == 1) {
        scfg.c_r_len = r->o.side[CLI_SIDE_R].c_id_len[0];
        memcpy(scfg.c_r, r->o.side[CLI_SIDE_R].c_id[0], scfg.c_r_len);
        cli_log(LOG_WARNING, "--c-r: every handshake gets the same C_R (a test with one peer)");
    }
    struct edhoc_server *srv = edhoc_server_new(&scfg);
    struct edhoc_transport *t = NULL;
    if (!srv) {
        cli_log(LOG_ERR, "out of memory");
        exit_code = CLI_EXIT_INTERNAL;
        goto close_db;
    }
    if (r->ilog)
        interop_log_set_server(r->ilog, srv);
    if (role.count > 1)
        cli_worker_load_delay_for_tests(&role);
    long loaded = edhoc_server_load_state(srv);
    if (loaded < 0) {
        cli_log(LOG_ERR, "state: cannot read %s/%s: %s", state_dir, EDHOC_STATE_FILE,
                edhoc_state_strerror((int)loaded));
        exit_code = CLI_EXIT_INPUT;
        goto free_srv;
    }
    size_t n_static_served = 0;
    for (size_t i = 0; i < n_static; i++) {
        exit_code = responder_static_load(srv, static_paths[i], &n_static_served);
        if (exit_code)
            goto free_srv;
    }
    /* No worker binds before every worker holds its contexts: the port's
     * group would hand the missing worker's requests to the others. */
    struct cli_worker_loads loads = {(size_t)loaded, n_static_served, (size_t)loaded,
                                     n_static_served};
    if (role.count > 1 && cli_worker_loaded(&role, listen_addr, n_listen, &loads)) {
        exit_code = stop_signal ? CLI_EXIT_OK : CLI_EXIT_INTERNAL;
        goto free_srv;
    }

    struct edhoc_transport_config tcfg = {
        .block_size = (unsigned)block_size,
        .max_body = (size_t)max_body,
        .max_sessions = (unsigned)max_sessions,
        .transfer_lifetime_ms = (uint32_t)transfer_timeout_ms,
        /* libcoap warns for every datagram the guard refused: only at -vv. */
        .log_level = verbosity >= 2 ? LOG_DEBUG : LOG_EMERG,
        .amp = amp,
        .limited = amp ? edhoc_server_echo_challenge : NULL,
        .workers = role.count,
        .worker_index = role.index,
    };
    char why[256] = "";
    int rc = edhoc_transport_server_open(&t, listen, n_listen, &tcfg, edhoc_server_handle, srv,
                                         why, sizeof why);
    if (rc) {
        cli_log(LOG_ERR, "%s", why[0] ? why : edhoc_transport_strerror(rc));
        exit_code = rc == EDHOC_TRANSPORT_ERR_ARG ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
        goto free_srv;
    }
    struct edhoc_server_stats st;
    edhoc_server_get_stats(srv, &st);
    /* The start notices once for the responder, worker 0 speaking for
     * all (before the ready file, which follows every worker's bind),
     * and only once it listens: a port in use gets its error alone. */
    if (role.count > 1 && role.index == 0)
        log_start(r, &loads, &st, allow_unprotected, edhoc_only_suite, amp_factor, pressure_rate,
                  !state_dir);
    if (role.count > 1) {
        uint16_t ports[MAX_LISTEN];
        for (size_t i = 0; i < n_listen; i++)
            ports[i] = edhoc_transport_server_port(t, i);
        if (cli_worker_ready(&role, ports, n_listen, 0)) {
            exit_code = stop_signal ? CLI_EXIT_OK : CLI_EXIT_INTERNAL;
            goto free_t;
        }
    }
    for (size_t i = 0; i < n_listen && role.count <= 1; i++)
        cli_log_listening(listen[i], edhoc_transport_server_port(t, i), listen_spec[i], 1);
    if (role.count <= 1)
        log_start(r, &loads, &st, allow_unprotected, edhoc_only_suite, amp_factor, pressure_rate,
                  !state_dir);

    if (daemon && !use_syslog)
        cli_log(LOG_WARNING, "--daemon without --syslog: once detached, log lines go nowhere "
                             "(add --syslog to keep them)");
    if (daemon && cli_daemonize()) {
        cli_log(LOG_ERR, "cannot detach: %s", strerror(errno));
        exit_code = CLI_EXIT_INTERNAL;
        goto free_t;
    }
    {
        char why[2 * PATH_MAX + 200];
        if (pidfile && cli_pidfile_write(pidfile, why, sizeof why)) {
            cli_log(LOG_ERR, "%s", why);
            exit_code = CLI_EXIT_INPUT;
            goto free_t;
        }
        char ports[MAX_LISTEN * 8] = "";
        for (size_t i = 0, n = 0; i < n_listen; i++)
            n += (size_t)snprintf(ports + n, sizeof ports - n, "%u\n",
                                  edhoc_transport_server_port(t, i));
        if (ready_file && cli_file_publish("--ready-file", ready_file, ports, why, sizeof why)) {
            cli_log(LOG_ERR, "%s", why);
            exit_code = CLI_EXIT_INPUT;
            goto free_t;
        }
    }

    struct serve_side side = {.r = r, .acct = acct};
    struct cli_serve_config serve = {
        .srv = srv,
        .t = t,
        .db = db,
        .amp = amp,
        .state_dir = state_dir,
        .stop_signal = &stop_signal,
        .stats_signal = &stats_signal,
        .reload_signal = &reload_signal,
        .record_shutdown = r->ilog != NULL,
        .tick = serve_tick,
        .flush = serve_flush,
        .reload = serve_reload,
        .user = &side,
    };
    exit_code = cli_serve(&serve);
free_t:
free_srv:
    /* The server first: its observers hold sessions of the transport. */
    edhoc_server_free(srv);
    edhoc_transport_free(t);
    responder_acct_flush(acct);
    if (r->ilog)
        interop_log_set_server(r->ilog, NULL);
close_db:
    if (db)
        edhoc_state_close(db);
    if (pidfile && exit_code == CLI_EXIT_OK)
        unlink(pidfile);
out:
    responder_acct_close(acct);
    edhoc_amp_free(amp);
    interop_log_close(r->ilog);
    cli_keylog_close(&keylog.files);
    responder_creds_free(r);
    free(r);
    return exit_code;
}
