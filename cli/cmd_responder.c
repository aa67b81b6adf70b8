/*
 * edhoc-cli responder: the CoAP daemon. Serves /.well-known/edhoc to many
 * initiators at once and the OSCORE-protected resources to every peer
 * with a context (EDHOC-established or static), keeping contexts and
 * sequence-number marks in a state database. This file is the command
 * line and its checks; the start-up and the serve loop are responder_run.c.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <netdb.h>

#include "commands.h"
#include "daemon.h"
#include "edhoc/amplification.h"
#include "edhoc/blockwise.h"
#include "edhoc/state.h"
#include "edhoc/transport.h"
#include "edhoc_args.h"
#include "interop_log.h"
#include "listen.h"
#include "responder_creds.h"
#include "responder_run.h"
#include "responder_static.h"
#include "responder_workers.h"
#include "serve.h"
#include "util.h"

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
    OPT_STATE,
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
    {OPT_STATE, "state", "postgresql://...|sqlite:DIR",
     "where contexts live: sqlite:DIR is --state-dir DIR; a PostgreSQL\n"
     "connection string (libpq's: PGPASSFILE, a service file and sslmode\n"
     "apply) is the store of a responder fleet: every responder on it serves\n"
     "every context, taking a context over when a request for it reaches it\n"
     "(one worker; no --oscore-context)"},
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
     "CPUs this process may run on; 1 with --pcap, --interop-log, --c-r or\n"
     "a PostgreSQL --state). Each OSCORE request is steered to the worker\n"
     "owning its context, the rest by address; one process writes the state\n"
     "for all (on a fleet's store, each worker is a member of the fleet)"},
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
    const char *state_spec = NULL, *fleet_store = NULL;
    const char *state_dir = NULL, *pidfile = NULL, *ready_file = NULL, *interop_dir = NULL;
    long interop_max = INTEROP_LOG_MAX_FILES;
    bool daemon = false, use_syslog = false, echo_m1 = false, allow_unprotected = false;
    long amp_factor = EDHOC_AMP_DEFAULT_FACTOR;
    long pressure_rate = EDHOC_AMP_DEFAULT_PRESSURE_RATE;
    bool demo = false;
    unsigned framings = 0; /* both */
    int c_r_form = EDHOC_C_R_FORM_INT;
    long max_contexts = (long)EDHOC_SERVER_DEFAULT_MAX_CONTEXTS,
         context_lifetime_ms = (long)EDHOC_SERVER_DEFAULT_CONTEXT_LIFETIME_MS;
    long max_pending = 256, hs_timeout_ms = 60000, block_size = 0,
         max_body = EDHOC_BW_DEFAULT_MAX_BODY, max_sessions = 512,
         transfer_timeout_ms = EDHOC_BW_DEFAULT_LIFETIME_MS;
    long workers = 0; /* 0: the CPUs */
    const char *keylog_dir = NULL;
    int exit_code = CLI_EXIT_USAGE;
    struct cli_net_opts net;
    memset(&net, 0, sizeof net);

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
        case OPT_STATE: state_spec = p.value; break;
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
                bad = cli_opt_error(&p,
                                    "--block-size: a power of two (16, 32, ..., 1024), "
                                    "got '%s'",
                                    p.value);
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
        case OPT_KEYLOG: keylog_dir = p.value; break;
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
    if (state_spec) {
        char why[300];
        if (cli_serve_parse_state(state_spec, state_dir, &state_dir, &fleet_store, why,
                                  sizeof why)) {
            cli_opt_error(&p, "%s", why);
            goto out;
        }
        if (fleet_store && n_static) {
            cli_opt_error(&p, "--oscore-context with a PostgreSQL --state: a static context "
                              "belongs to the responder configured with it, not to the fleet; "
                              "serve it from a responder with --state-dir");
            goto out;
        }
        /* On a fleet's store each worker holds two connections to it: one
         * process unless asked. */
        if (fleet_store && workers == 0)
            workers = 1;
    }
    {
        /* One capture file, one interop log and one fixed C_R belong to
         * one process. */
        const char *single = net.pcap                       ? "--pcap"
                             : interop_dir                  ? "--interop-log"
                             : r->o.side[CLI_SIDE_R].n_c_id ? "--c-r"
                                                            : NULL;
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
        cli_opt_error(&p, "give --cred and --key in pairs (%zu --cred, %zu --key)", r->n_cred_paths,
                      r->n_key_paths);
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

    struct responder_run_config cfg = {
        .r = r,
        .net = &net,
        .listen_spec = listen_spec,
        .listen_addr = listen_addr,
        .listen = listen,
        .n_listen = n_listen,
        .static_paths = static_paths,
        .n_static = n_static,
        .state_dir = state_dir,
        .fleet_store = fleet_store,
        .pidfile = pidfile,
        .ready_file = ready_file,
        .interop_dir = interop_dir,
        .keylog_dir = keylog_dir,
        .interop_max = interop_max,
        .daemon = daemon,
        .use_syslog = use_syslog,
        .echo_m1 = echo_m1,
        .allow_unprotected = allow_unprotected,
        .edhoc_only_suite = edhoc_only_suite,
        .amp_factor = amp_factor,
        .pressure_rate = pressure_rate,
        .framings = framings,
        .c_r_form = c_r_form,
        .max_contexts = max_contexts,
        .context_lifetime_ms = context_lifetime_ms,
        .max_pending = max_pending,
        .hs_timeout_ms = hs_timeout_ms,
        .block_size = block_size,
        .max_body = max_body,
        .max_sessions = max_sessions,
        .transfer_timeout_ms = transfer_timeout_ms,
        .workers = workers,
        .verbosity = verbosity,
    };
    exit_code = responder_run(&cfg);
out:
    responder_creds_free(r);
    free(r);
    return exit_code;
}
