#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "edhoc/amplification.h"
#include "edhoc/datagram_guard.h"
#include "edhoc/state.h"
#include "edhoc/transport.h"
#include "responder_workers.h"
#include "serve.h"
#include "state_pg.h"
#include "state_stats.h"

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The state the limits govern: contexts held against --max-contexts and
 * those that went, handshakes in progress (SIGUSR1, and at the stop). */
static void log_stats(const struct edhoc_server_stats *st, const char *when)
{
    cli_log(LOG_NOTICE,
            "%s: contexts=%zu (max %zu) contexts_evicted=%llu contexts_expired=%llu pending=%zu "
            "pending_evicted=%llu pending_expired=%llu handshakes_ok=%llu handshakes_failed=%llu "
            "oscore_requests=%llu oscore_errors=%llu b2_started=%llu b2_completed=%llu "
            "b2_refused=%llu",
            when, st->contexts, st->max_contexts, (unsigned long long)st->contexts_evicted,
            (unsigned long long)st->contexts_expired, st->pending, (unsigned long long)st->evicted,
            (unsigned long long)st->expired, (unsigned long long)st->handshakes_ok,
            (unsigned long long)st->handshakes_failed, (unsigned long long)st->oscore_requests,
            (unsigned long long)st->oscore_errors, (unsigned long long)st->b2_started,
            (unsigned long long)st->b2_completed, (unsigned long long)st->b2_refused);
}

/* The amplification limit's counts, and the factor endpoints not yet
 * verified got: UDP payload bytes sent to them over bytes received
 * (SIGUSR1, and at the stop). */
static void log_amplification(const struct edhoc_amp *amp, const struct edhoc_server_stats *st,
                              const char *when)
{
    struct edhoc_amp_stats as;
    edhoc_amp_get_stats(amp, &as);
    cli_log(
        LOG_NOTICE,
        "%s: amplification_factor=%u answers_held_back=%llu answers_withheld=%llu "
        "echo_challenges=%llu endpoints_verified=%llu endpoints=%zu (verified %zu) "
        "endpoints_evicted=%llu unverified_bytes_received=%llu unverified_bytes_sent=%llu "
        "unverified_factor=%.2f pressure_challenges=%llu pressure_periods=%llu "
        "endpoints_authenticated=%zu pending_evicted_unverified=%llu "
        "pending_evicted_reachable=%llu pending_evicted_authenticated=%llu "
        "pending_refused=%llu pressure_refused=%llu",
        when, edhoc_amp_factor(amp), (unsigned long long)as.limited,
        (unsigned long long)as.withheld, (unsigned long long)st->echo_challenges,
        (unsigned long long)as.verified, as.endpoints, as.endpoints_verified,
        (unsigned long long)as.evicted, (unsigned long long)as.unverified_received,
        (unsigned long long)as.unverified_sent,
        as.unverified_received ? (double)as.unverified_sent / (double)as.unverified_received : 0.0,
        (unsigned long long)as.pressure_challenges, (unsigned long long)as.pressure_periods,
        as.endpoints_authenticated, (unsigned long long)as.pending_evicted[EDHOC_AMP_UNVERIFIED],
        (unsigned long long)as.pending_evicted[EDHOC_AMP_REACHABLE],
        (unsigned long long)as.pending_evicted[EDHOC_AMP_AUTHENTICATED],
        (unsigned long long)as.pending_refused, (unsigned long long)as.pressure_refused);
}

/* Notifications are confirmable, so that an observer that went away is
 * noticed (RFC 7641 Section 4.5). Among several workers the observer's
 * empty ACK or Reset finds the notifying worker by its Message ID
 * (edhoc/reuseport.h). */
static int send_notification(void *user, struct edhoc_transport_peer *peer, const uint8_t *msg,
                             size_t len)
{
    return edhoc_transport_peer_send(user, peer, msg, len, true);
}

int cli_serve_open_state(const char *state_dir, struct edhoc_state_db **db)
{
    char why[512] = "";
    int rc = edhoc_state_open(state_dir, db, why, sizeof why);
    if (rc) {
        cli_log(LOG_ERR, "state: %s%s", why[0] ? why : edhoc_state_strerror(rc),
                strstr(why, "in use")
                    ? " (two responders serving the same contexts would repeat nonces: give "
                      "each its own --state-dir, or --state-dir none to one that serves no "
                      "static context)"
                    : "");
        return -1;
    }
    const char *recovery = edhoc_state_recovery(*db);
    if (recovery)
        cli_log(LOG_WARNING, "state: %s", recovery);
    return 0;
}

int cli_serve_parse_state(const char *spec, const char *given_dir, const char **state_dir,
                          const char **fleet, char *why, size_t why_cap)
{
    if (given_dir) {
        snprintf(why, why_cap, "--state and --state-dir name the store twice: give one");
        return -1;
    }
    if (!strncmp(spec, "sqlite:", 7) && spec[7]) {
        *state_dir = spec + 7;
        return 0;
    }
    /* libpq's two forms: a URI, or key=value pairs ("host=... dbname=..."). */
    if (!strncmp(spec, "postgresql://", 13) || !strncmp(spec, "postgres://", 11) ||
        strchr(spec, '=')) {
        char msg[300];
        if (edhoc_state_pg_check_conninfo(spec, msg, sizeof msg) < 0) {
            snprintf(why, why_cap, "--state: not a PostgreSQL connection string: %s", msg);
            return -1;
        }
        *fleet = spec;
        return 0;
    }
    snprintf(why, why_cap,
             "--state '%s': expected sqlite:DIR or a PostgreSQL connection string "
             "(postgresql://... or key=value ...)",
             spec);
    return -1;
}

/* The fleet store's connection, for its round trips in the log. */
static struct edhoc_state_pg_backend *fleet_pg;

static void log_fleet(const struct edhoc_server_stats *st, const char *when)
{
    if (!fleet_pg)
        return;
    struct edhoc_state_pg_stats ps;
    edhoc_state_pg_backend_stats(fleet_pg, &ps);
    uint64_t hs = st->handshakes_ok;
    cli_log(LOG_NOTICE,
            "%s: postgresql store: round_trips=%llu (%.2f per handshake) contexts_put=%llu "
            "contexts_fetched=%llu contexts_taken_over=%llu reconnects=%llu failed=%llu",
            when, (unsigned long long)ps.round_trips,
            hs ? (double)ps.round_trips / (double)hs : 0.0, (unsigned long long)ps.rows_put,
            (unsigned long long)st->contexts_fetched, (unsigned long long)st->contexts_taken_over,
            (unsigned long long)ps.reconnects, (unsigned long long)ps.failed);
}

static void fleet_figures(struct edhoc_server *srv, const char *dir)
{
    static uint64_t started_ms;
    if (!started_ms)
        started_ms = now_ms();
    struct edhoc_state_pg_stats ps;
    edhoc_state_pg_backend_stats(fleet_pg, &ps);
    struct edhoc_server_stats st;
    edhoc_server_get_stats(srv, &st);
    struct cli_state_stats ss = {.pid = (long)getpid(),
                                 .uptime_s = (double)(now_ms() - started_ms) / 1000 + 0.001,
                                 .fleet = true,
                                 .round_trips = ps.round_trips,
                                 .rows_put = ps.rows_put,
                                 .handshakes = st.handshakes_ok,
                                 .serving_round_trips = ps.serving_round_trips,
                                 .oscore_requests = st.oscore_requests};
    cli_state_stats_publish(dir, &ss);
}

int cli_serve_open_fleet(const char *conninfo, unsigned worker, struct edhoc_state_db **db)
{
    char msg[300];
    if (!worker && edhoc_state_pg_check_conninfo(conninfo, msg, sizeof msg) == 1)
        cli_log(LOG_WARNING, "state: %s", msg);
    char why[600] = "";
    struct edhoc_state_pg_backend *pg = NULL;
    int rc = edhoc_state_pg_open_db(conninfo, NULL, CLI_FLEET_LEASE_MS, db, &pg, why, sizeof why);
    if (rc) {
        cli_log(LOG_ERR, "state: the PostgreSQL store: %s",
                why[0] ? why : edhoc_state_pg_strerror(rc));
        return -1;
    }
    fleet_pg = pg;
    if (worker) {
        /* Each worker of --workers is a member of the fleet of its own
         * (its own connections and owner name); the start notice is the
         * supervisor's. */
        cli_log(LOG_INFO, "state: worker on the fleet's store as %s",
                edhoc_state_pg_backend_owner(pg));
        return 0;
    }
    cli_log(LOG_NOTICE,
            "state: the fleet's PostgreSQL store, as %s: contexts taken over when a request for "
            "one reaches this responder, sequence numbers reserved in the store before use",
            edhoc_state_pg_backend_owner(pg));
    return 0;
}

void cli_serve_close_fleet(struct edhoc_state_db *db)
{
    fleet_pg = NULL;
    edhoc_state_close(db);
}

int cli_serve_prune(struct edhoc_state_db *db, const char *state_dir, uint64_t lifetime_ms,
                    uint64_t max_contexts)
{
    uint64_t expired = 0, evicted = 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t wall_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    int64_t used_before = lifetime_ms < (uint64_t)wall_ms ? wall_ms - (int64_t)lifetime_ms : 0;
    int rc = edhoc_state_begin(db);
    if (!rc)
        rc = edhoc_state_prune(db, used_before, max_contexts, &expired, &evicted);
    int crc = rc ? edhoc_state_rollback(db) : edhoc_state_commit(db);
    if (rc || crc) {
        cli_log(LOG_ERR, "state: cannot prune %s/%s: %s", state_dir, EDHOC_STATE_FILE,
                edhoc_state_strerror(rc ? rc : crc));
        return -1;
    }
    if (expired || evicted)
        cli_log(LOG_NOTICE,
                "state: %llu stored contexts idle for longer than the "
                "context lifetime and %llu beyond max contexts %llu deleted",
                (unsigned long long)expired, (unsigned long long)evicted,
                (unsigned long long)max_contexts);
    return 0;
}

static void flush(const struct cli_serve_config *cfg)
{
    if (cfg->flush)
        cfg->flush(cfg->user);
}

int cli_serve(const struct cli_serve_config *cfg)
{
    struct edhoc_server *srv = cfg->srv;
    struct edhoc_transport *t = cfg->t;
    struct edhoc_state_db *db = cfg->db;
    const struct edhoc_amp *amp = cfg->amp;
    const char *state_dir = cfg->state_dir;
    volatile sig_atomic_t *stop_signal = cfg->stop_signal;
    struct edhoc_server_stats st;
    /* Loading and pruning were synchronous; from here on the state is
     * written in batches (group commit: docs/DESIGN.md says what must be
     * durable before which packet). A worker's handle sends its writes to
     * the writer process without waiting. */
    /* Test only: EDHOC_TEST_STATE_BATCH_MS=MS holds a batch open up to MS
     * milliseconds (unless someone waits for it), so that a test can kill
     * the responder while the newest contexts are not on disk yet. */
    unsigned batch_ms = CLI_STATE_BATCH_MS;
    const char *test_batch = getenv("EDHOC_TEST_STATE_BATCH_MS");
    if (test_batch && sscanf(test_batch, "%u", &batch_ms) != 1)
        batch_ms = CLI_STATE_BATCH_MS;
    if (db && edhoc_state_group_commit(db, CLI_STATE_BATCH_ROWS, batch_ms))
        cli_log(LOG_WARNING, "state: no group commit, one commit per handshake");
    bool publish_stats = state_dir && edhoc_state_event_fd(db) >= 0;
    /* A fleet's responder publishes its store's figures the same way, in
     * the directory it holds open (load finds it through /proc/PID/fd). */
    const char *fleet_dir = fleet_pg ? cfg->figures_dir : NULL;
    if (fleet_dir)
        fleet_figures(srv, fleet_dir);
    uint64_t stats_due_ms = 0, grouped_ms = now_ms();
    if (publish_stats) {
        /* At once: a load started the moment the responder is ready finds
         * the figures to compare with. */
        struct cli_state_stats ss = {.pid = (long)getpid()};
        edhoc_state_get_writer_stats(db, &ss.w);
        cli_state_stats_publish(state_dir, &ss);
    }

    /* Notifications go out through the transport. */
    static const struct edhoc_server_peer_calls peer_calls = {
        .send = send_notification,
        .hold = edhoc_transport_peer_hold,
        .release = edhoc_transport_peer_release,
    };
    edhoc_server_set_sender(srv, &peer_calls, t);
    edhoc_transport_server_on_failure(t, edhoc_server_peer_failed, srv);

    while (!*stop_signal) {
        edhoc_server_tick(srv, now_ms());
        if (cfg->tick)
            cfg->tick(cfg->user, now_ms());
        flush(cfg);
        if (edhoc_transport_run(t, 100)) {
            flush(cfg);
            cli_log(LOG_ERR, "socket error");
            break;
        }
        flush(cfg);
        if (publish_stats && now_ms() >= stats_due_ms) {
            uint64_t now = now_ms();
            stats_due_ms = now + 1000;
            struct cli_state_stats ss = {.pid = (long)getpid(),
                                         .uptime_s = (double)(now - grouped_ms) / 1000};
            edhoc_state_get_writer_stats(db, &ss.w);
            cli_state_stats_publish(state_dir, &ss);
        }
        if (fleet_dir && now_ms() >= stats_due_ms) {
            stats_due_ms = now_ms() + 1000;
            fleet_figures(srv, fleet_dir);
        }
        if (*cfg->stats_signal) {
            *cfg->stats_signal = 0;
            edhoc_server_get_stats(srv, &st);
            log_stats(&st, "SIGUSR1");
            log_fleet(&st, "SIGUSR1");
            log_amplification(amp, &st, "SIGUSR1");
        }
        if (*cfg->reload_signal) {
            *cfg->reload_signal = 0;
            if (!cfg->reload || cfg->reload(cfg->user) == 0) {
                edhoc_server_drop_pending(srv);
                cli_log(LOG_NOTICE, "SIGHUP: credentials and trust reloaded; contexts kept");
            } else {
                cli_log(LOG_ERR, "SIGHUP: reload failed, keeping the previous credentials");
            }
        }
    }
    /* The next start keeps the most recently used contexts. */
    edhoc_server_save_state(srv);
    if (db) {
        /* Everything queued reaches the disk before the exit. */
        int frc = edhoc_state_flush(db);
        if (frc)
            cli_log(LOG_ERR, "state: a batch of writes failed: %s", edhoc_state_strerror(frc));
        struct edhoc_state_writer_stats ws;
        if (edhoc_state_get_writer_stats(db, &ws) == 0) {
            cli_log(LOG_NOTICE,
                    "state writer: %llu commits of %llu rows (largest %llu; closed "
                    "by size %llu, time %llu, a waiter %llu), %llu failed",
                    (unsigned long long)ws.commits, (unsigned long long)ws.rows,
                    (unsigned long long)ws.largest_batch, (unsigned long long)ws.closed_by_size,
                    (unsigned long long)ws.closed_by_time, (unsigned long long)ws.closed_by_wait,
                    (unsigned long long)ws.failed_commits);
            if (publish_stats) {
                struct cli_state_stats ss = {.pid = (long)getpid(),
                                             .uptime_s = (double)(now_ms() - grouped_ms) / 1000,
                                             .w = ws};
                cli_state_stats_publish(state_dir, &ss);
            }
        }
    }
    if (fleet_dir) {
        edhoc_state_flush(db); /* the last puts counted */
        fleet_figures(srv, fleet_dir);
    }
    edhoc_server_get_stats(srv, &st);
    log_stats(&st, "stopping");
    log_fleet(&st, "stopping");
    if (cfg->record_shutdown) {
        /* The interop log has a record for every handshake however it
         * ends, those cut short by this stop included. */
        char why[120];
        if (*stop_signal)
            snprintf(why, sizeof why, "the responder stopped (signal %d) before message_3 came",
                     (int)*stop_signal);
        else
            snprintf(why, sizeof why,
                     "the responder stopped (socket error) before message_3 "
                     "came");
        edhoc_server_record_shutdown(srv, why);
    }
    {
        struct edhoc_datagram_guard_stats gs;
        edhoc_datagram_guard_stats(&gs);
        char line[600];
        edhoc_datagram_guard_stats_format(&gs, line, sizeof line);
        cli_log(LOG_INFO, "%s (of %llu checked)", line, (unsigned long long)gs.checked);
    }
    cli_log(LOG_NOTICE,
            "stopping on signal %d: %llu handshakes ok, %llu failed, %zu contexts, %llu OSCORE "
            "requests",
            (int)*stop_signal, (unsigned long long)st.handshakes_ok,
            (unsigned long long)st.handshakes_failed, st.contexts,
            (unsigned long long)st.oscore_requests);
    log_amplification(amp, &st, "stopping");
    return *stop_signal ? CLI_WORKERS_EXIT_OK : CLI_WORKERS_EXIT_FAILURE;
}
