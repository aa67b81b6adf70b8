/*
 * The responder's serve loop, once the transport is bound: the state's
 * group commit and the writer's published figures, the engine's tick,
 * the signals (stop, SIGUSR1's counts, SIGHUP's reload) and, at the stop,
 * the state saved and flushed and the counts logged.
 */
#ifndef CLI_SERVE_H
#define CLI_SERVE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct edhoc_amp;
struct edhoc_server;
struct edhoc_state_db;
struct edhoc_transport;

struct cli_serve_config {
    struct edhoc_server *srv;
    struct edhoc_transport *t;
    struct edhoc_state_db *db;   /* NULL: --state-dir none */
    const struct edhoc_amp *amp; /* NULL: no amplification limit */
    const char *state_dir;       /* where the writer's figures go, or NULL */
    /* A fleet's responder: where its store's figures go (the default
     * state directory), or NULL. */
    const char *figures_dir;
    volatile sig_atomic_t *stop_signal, *stats_signal, *reload_signal;
    /* The interop log wants a record of every handshake cut short by the
     * stop (edhoc_server_record_shutdown). */
    bool record_shutdown;
    /* What stays with the command: called on every turn of the loop
     * (the interop log's tick), around each run of the transport (held
     * log lines printed), and on SIGHUP (credentials reloaded: 0, or the
     * previous ones kept). Any may be NULL. */
    void (*tick)(void *user, uint64_t now_ms);
    void (*flush)(void *user);
    int (*reload)(void *user);
    void *user;
};

/* The state database of state_dir opened (a recovery said). Returns 0, or
 * -1 (logged: the fix when another responder holds it). */
int cli_serve_open_state(const char *state_dir, struct edhoc_state_db **db);
/* responder --state SPEC: "sqlite:DIR" sets *state_dir to DIR, a
 * PostgreSQL connection string ("postgresql://...", "postgres://...")
 * sets *fleet; given_dir is --state-dir, if any (both at once is an
 * error). Returns 0, or -1 with the reason in why. */
int cli_serve_parse_state(const char *spec, const char *given_dir, const char **state_dir,
                          const char **fleet, char *why, size_t why_cap);
/* The fleet's store (state_pg.h) as the engine's handle, its schema
 * created or checked; a password in the string is warned about. Logs and
 * returns -1 when the server cannot be reached or refuses. */
/* worker: 0 in a responder of one process and in the supervisor of
 * --workers (warnings and the start notice), else the worker's index + 1
 * (each worker opens the store itself, as a member of the fleet). */
int cli_serve_open_fleet(const char *conninfo, unsigned worker, struct edhoc_state_db **db);
/* The store opened by cli_serve_open_fleet, closed (its figures no
 * longer logged). */
void cli_serve_close_fleet(struct edhoc_state_db *db);
/* Before the workers start: the stored rows pruned once, to the whole
 * responder's bounds (each worker then loads the rows it owns). Returns
 * 0, or -1 (logged). */
int cli_serve_prune(struct edhoc_state_db *db, const char *state_dir, uint64_t lifetime_ms,
                    uint64_t max_contexts);
/* Serves until a stop signal or a socket error. Returns
 * CLI_WORKERS_EXIT_OK (stopped by a signal) or CLI_WORKERS_EXIT_FAILURE. */
int cli_serve(const struct cli_serve_config *cfg);

#endif
