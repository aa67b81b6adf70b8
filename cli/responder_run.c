/*
 * The responder's start-up and serve loop (responder_run.h): what
 * `edhoc-cli responder` does once cmd_responder.c has checked its options.
 */
#include <errno.h>
#include <fcntl.h>
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
#include "responder_run.h"
#include "serve.h"
#include "util.h"

_Static_assert((int)CLI_WORKERS_EXIT_OK == (int)CLI_EXIT_OK &&
                   (int)CLI_WORKERS_EXIT_FAILURE == (int)CLI_EXIT_FAILURE &&
                   (int)CLI_WORKERS_EXIT_USAGE == (int)CLI_EXIT_USAGE &&
                   (int)CLI_WORKERS_EXIT_INPUT == (int)CLI_EXIT_INPUT &&
                   (int)CLI_WORKERS_EXIT_INTERNAL == (int)CLI_EXIT_INTERNAL,
               "the supervisor's exit codes are the program's");

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

/* The warnings and notes the options call for: once, whatever the number
 * of workers (they serve under the same options). */
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
        cli_log(LOG_WARNING,
                "--demo: the built-in demo credentials' private keys are published: "
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
        cli_log(LOG_INFO,
                "amplification limit: an address not yet verified is sent at most %ld "
                "times the bytes received from it (--amplification-factor); under "
                "pressure every message_1 of an unverified address gets 4.01 + Echo "
                "first (%s)",
                amp_factor, pressure_rate ? "--pressure-rate" : "off: --pressure-rate 0");
    else
        cli_log(LOG_WARNING, "--amplification-factor 0: no amplification limit; anyone can make "
                             "this responder send large answers to a spoofed address");
}

int responder_run(const struct responder_run_config *cfg)
{
    struct responder *r = cfg->r;
    struct cli_net_opts net = *cfg->net;
    const char **listen_spec = cfg->listen_spec;
    char(*listen_addr)[NI_MAXHOST + 16] = cfg->listen_addr;
    const char **listen = cfg->listen;
    size_t n_listen = cfg->n_listen;
    const char *const *static_paths = cfg->static_paths;
    size_t n_static = cfg->n_static;
    const char *state_dir = cfg->state_dir, *pidfile = cfg->pidfile, *ready_file = cfg->ready_file,
               *interop_dir = cfg->interop_dir;
    long interop_max = cfg->interop_max;
    bool daemon = cfg->daemon, use_syslog = cfg->use_syslog, echo_m1 = cfg->echo_m1,
         allow_unprotected = cfg->allow_unprotected, edhoc_only_suite = cfg->edhoc_only_suite;
    long amp_factor = cfg->amp_factor, pressure_rate = cfg->pressure_rate;
    unsigned framings = cfg->framings;
    int c_r_form = cfg->c_r_form;
    long max_contexts = cfg->max_contexts, context_lifetime_ms = cfg->context_lifetime_ms;
    long max_pending = cfg->max_pending, hs_timeout_ms = cfg->hs_timeout_ms,
         block_size = cfg->block_size, max_body = cfg->max_body, max_sessions = cfg->max_sessions,
         transfer_timeout_ms = cfg->transfer_timeout_ms;
    long workers = cfg->workers;
    int verbosity = cfg->verbosity;
    struct edhoc_amp *amp = NULL;
    struct responder_keylog keylog = {.dir = cfg->keylog_dir,
                                      .files = {.edhoc_fd = -1, .oscore_fd = -1}};
    struct cli_worker_role role = {.count = 1, .state_fd = -1, .ready_fd = -1, .go_fd = -1};
    int exit_code = CLI_EXIT_USAGE;
    struct responder_acct *acct = NULL;

    /* Paths stay valid after --daemon changes directory. */
    char state_abs[PATH_MAX], pid_abs[PATH_MAX], ready_abs[PATH_MAX], pcap_abs[PATH_MAX];
    if (net.pcap && net.pcap[0] != '/' && getcwd(pcap_abs, sizeof pcap_abs)) {
        size_t l = strlen(pcap_abs);
        snprintf(pcap_abs + l, sizeof pcap_abs - l, "/%s", net.pcap);
        net.pcap = pcap_abs;
    }
    const char *fleet_store = cfg->fleet_store;
    char figures_abs[PATH_MAX];
    const char *figures_dir = NULL;
    if (fleet_store) {
        /* The store's figures (round trips, for `load`) in the default
         * state directory, held open so that load finds it; the
         * descriptor stays open until the exit (close-on-exec). */
        char why[PATH_MAX + 200] = "";
        if (cli_state_dir(NULL, figures_abs, sizeof figures_abs, why, sizeof why) == 0 &&
            open(figures_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC) >= 0)
            figures_dir = figures_abs;
        else
            cli_log(LOG_INFO, "state: no figures for load (%s)", why[0] ? why : strerror(errno));
    }
    if (!fleet_store) {
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
    if (fleet_store && cli_serve_open_fleet(fleet_store, 0, &db)) {
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
        if (db && !fleet_store &&
            cli_serve_prune(db, state_dir, (uint64_t)context_lifetime_ms, (uint64_t)max_contexts)) {
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
        if (fleet_store) {
            /* The store answered and its schema is in place: from here on
             * each worker is a responder of the fleet with connections of
             * its own (the kid steers a context's requests to one worker,
             * and any other worker or host takes it over as any fleet
             * member does). No writer process: nothing to share. */
            cli_serve_close_fleet(db);
            db = NULL;
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
        if (fleet_store && cli_serve_open_fleet(fleet_store, role.index + 1, &db)) {
            exit_code = CLI_EXIT_INPUT;
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
    int rc = edhoc_transport_server_open(&t, listen, n_listen, &tcfg, edhoc_server_handle, srv, why,
                                         sizeof why);
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
    bool no_state = !state_dir && !fleet_store;
    if (role.count > 1 && role.index == 0)
        log_start(r, &loads, &st, allow_unprotected, edhoc_only_suite, amp_factor, pressure_rate,
                  no_state);
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
                  no_state);

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
        .figures_dir = figures_dir,
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
    return exit_code;
}
