/* The responder's worker processes and the supervisor that starts them,
 * writes their state and forwards signals (docs/DESIGN.md, "Workers"). */
#ifndef CLI_RESPONDER_WORKERS_H
#define CLI_RESPONDER_WORKERS_H

#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct edhoc_state_db;

/* The exit codes the supervisor hands back: those of edhoc-cli(1)'s EXIT
 * STATUS (cli/util.h's CLI_EXIT_*, which cmd_responder.c checks they
 * equal), here since this library sees nothing of the CLI. */
enum {
    CLI_WORKERS_EXIT_OK = 0,
    CLI_WORKERS_EXIT_FAILURE = 1,
    CLI_WORKERS_EXIT_USAGE = 2,
    CLI_WORKERS_EXIT_INPUT = 3,
    CLI_WORKERS_EXIT_INTERNAL = 10,
};

/* What a worker process is told by the supervisor. */
struct cli_worker_role {
    unsigned count, index;
    int state_fd; /* its end of the state socket (-1: no database) */
    int ready_fd; /* where it reports that it loaded, then its ports */
    int go_fd;    /* where the supervisor says bind, then serve */
};

struct cli_workers_config {
    unsigned count;
    struct edhoc_state_db *db; /* NULL: --state-dir none */
    /* The listen addresses "ADDR:PORT"; the supervisor writes the ports
     * worker 0 bound in place of port 0 before starting the others. */
    char (*listen)[NI_MAXHOST + 16];
    const char *const *listen_spec; /* each as given to --listen (a host name, say) */
    size_t n_listen;
    const char *ready_file, *pidfile;
    const char *state_dir; /* where the writer publishes its figures (cli/state_stats.h) */
    volatile int *stop_signal, *stats_signal, *reload_signal;
};

/* The "listening on ADDR:PORT" notice: the address bound, the --listen
 * value it came from when that named a host ("(localhost)"), and the
 * workers sharing it when more than one. */
void cli_log_listening(const char *addr, uint16_t port, const char *spec, unsigned workers);

/* The CPUs this process may run on (at least 1). */
unsigned cli_workers_cpus(void);

/* Start config->count workers. They load their contexts together; once
 * all have, each opens its sockets in index order (so worker i is the
 * i-th socket of each port's reuseport group and no port is bound before
 * every worker is loaded); once all have, all serve. Returns 0 in a
 * worker, with *role filled: it goes on as a responder, calls
 * cli_worker_loaded() before it listens and cli_worker_ready() after. In
 * the supervisor it returns only when all is over, with 1 and *exit_code
 * set (0 after a stop signal, the failing worker's code otherwise). */
int cli_workers_start(const struct cli_workers_config *config, struct cli_worker_role *role,
                      int *exit_code);

/* What a worker loaded, and what all of them did (filled in by
 * cli_worker_loaded), for the one line that says it for the responder. */
struct cli_worker_loads {
    size_t contexts, statics;
    size_t total_contexts, total_statics;
};

/* A worker has loaded its contexts: say so with its counts, and wait for
 * its turn to bind; listen's ports become worker 0's (port 0), loads'
 * totals every worker's. Returns 0, or -1 on a stop signal or without a
 * supervisor. */
int cli_worker_loaded(const struct cli_worker_role *role, char (*listen)[NI_MAXHOST + 16],
                      size_t n_listen, struct cli_worker_loads *loads);

/* A worker listens: send its ports (n of them) and wait until every
 * worker does; or it failed with exit_code. Returns 0 (serve), or -1. */
int cli_worker_ready(const struct cli_worker_role *role, const uint16_t *ports, size_t n,
                     int exit_code);

/* Test only: EDHOC_TEST_WORKER_LOAD_DELAY=INDEX:MS delays worker INDEX's
 * load by MS milliseconds (a large store's load, on demand). */
void cli_worker_load_delay_for_tests(const struct cli_worker_role *role);

#endif
