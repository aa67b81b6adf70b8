/*
 * `edhoc-cli responder --workers N`: N processes serve one set of ports
 * (SO_REUSEPORT), and the one that started them -- the supervisor --
 * holds the state database and is its only writer (group commit,
 * edhoc/state.h), forwards signals, and stops every worker when one dies.
 *
 * Why processes and not threads: libcoap 4.3.1 is not thread-safe, and
 * the datagram guard, the descriptor cache and the amplification account
 * below it are per process. Each worker is a whole single-threaded
 * responder owning a share of the contexts (edhoc_state_owner), and the
 * kernel steers each datagram to the worker that holds what it needs
 * (edhoc/reuseport.h).
 *
 * Why one dead worker stops them all: the steering program names sockets
 * by their index in the port's group, and a closed socket's slot is taken
 * by the last one (net/core/sock_reuseport.c), so a worker restarted alone
 * would shift the indexes and send requests to workers without their
 * contexts. The service manager restarts the whole responder instead;
 * every sequence-number mark is durable, so nothing is lost.
 *
 * Why no worker binds before every worker has loaded its contexts: a
 * port whose group lacks worker i hands worker i's OSCORE requests to
 * the others, which answer "4.01 Security context not found", and a
 * client then drops a context that is still on disk (RFC 8613 Section
 * 8.2). So the workers start together and load; then, once all have
 * said so, each binds in index order (worker i is socket i of the
 * group); then, once the last is in and the steering program attached,
 * all serve. What reached a socket before the group was whole and
 * belongs to another worker is dropped unanswered (transport_io.c), and
 * its sender's retransmission finds the right one.
 */
#include "responder_workers.h"
#include "state_stats.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "edhoc/state.h"

#define MAX_WORKERS 64
#define MAX_PORTS   8

unsigned cli_workers_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return (unsigned)n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

void cli_log_listening(const char *addr, uint16_t port, const char *spec, unsigned workers)
{
    const char *colon = strrchr(addr, ':');
    size_t host = colon ? (size_t)(colon - addr) : strlen(addr);
    size_t spec_host = spec[0] == '[' ? strcspn(spec, "]") + 1 : strcspn(spec, ":");
    bool named = spec[0] && (spec_host != host || strncmp(spec, addr, spec_host) != 0);
    char with[48] = "";
    if (workers > 1)
        snprintf(with, sizeof with, " with %u workers", workers);
    cli_log(LOG_NOTICE, "listening on %.*s:%u%s%.*s%s%s", (int)host, addr, port, named ? " (" : "",
            named ? (int)spec_host : 0, spec, named ? ")" : "", with);
}

/* A worker's reports (stage LOADED, then BOUND with its ports) and the
 * supervisor's answers (BIND with the ports to join, then SERVE), one
 * message each way per stage over a pipe each way. */
enum { STAGE_LOADED = 1, STAGE_BIND, STAGE_BOUND, STAGE_SERVE };

struct ready_msg {
    int32_t stage;
    int32_t exit_code;
    uint32_t n;
    uint16_t ports[MAX_PORTS];
    /* LOADED: the worker's stored and static contexts; BIND: the sums
     * over every worker, so that one of them can say them once. */
    uint64_t contexts, statics;
};

static int send_msg(int fd, const struct ready_msg *m)
{
    for (;;) {
        ssize_t w = write(fd, m, sizeof *m);
        if (w == (ssize_t)sizeof *m)
            return 0;
        if (w < 0 && errno == EINTR)
            continue;
        return -1;
    }
}

/* The supervisor's answer of this stage; -1 on a stop signal (EINTR:
 * the handlers do not restart calls) or when the supervisor is gone. */
static int await_stage(const struct cli_worker_role *role, int stage, struct ready_msg *m)
{
    ssize_t n = read(role->go_fd, m, sizeof *m);
    return n == (ssize_t)sizeof *m && m->stage == stage ? 0 : -1;
}

static void set_port(char *addr, size_t cap, uint16_t port)
{
    char *colon = strrchr(addr, ':');
    if (!colon)
        return;
    snprintf(colon + 1, cap - (size_t)(colon + 1 - addr), "%u", port);
}

void cli_worker_load_delay_for_tests(const struct cli_worker_role *role)
{
    /* Test only: EDHOC_TEST_WORKER_LOAD_DELAY=INDEX:MS holds worker INDEX
     * for MS milliseconds before it loads, so that a test can make the
     * restart window of a large store wide on any machine. */
    const char *v = getenv("EDHOC_TEST_WORKER_LOAD_DELAY");
    unsigned index = 0, ms = 0;
    if (!role || !v || sscanf(v, "%u:%u", &index, &ms) != 2 || index != role->index || ms > 60000)
        return;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int cli_worker_loaded(const struct cli_worker_role *role, char (*listen)[NI_MAXHOST + 16],
                      size_t n_listen, struct cli_worker_loads *loads)
{
    struct ready_msg m = {
        .stage = STAGE_LOADED, .contexts = loads->contexts, .statics = loads->statics};
    if (!role || send_msg(role->ready_fd, &m) || await_stage(role, STAGE_BIND, &m))
        return -1;
    loads->total_contexts = (size_t)m.contexts;
    loads->total_statics = (size_t)m.statics;
    /* Port 0: the others join the port worker 0 was given. */
    for (size_t k = 0; role->index > 0 && k < n_listen && k < m.n; k++)
        set_port(listen[k], sizeof listen[k], m.ports[k]);
    return 0;
}

int cli_worker_ready(const struct cli_worker_role *role, const uint16_t *ports, size_t n,
                     int exit_code)
{
    if (!role || role->ready_fd < 0)
        return -1;
    struct ready_msg m = {.stage = STAGE_BOUND,
                          .exit_code = exit_code,
                          .n = (uint32_t)(n > MAX_PORTS ? MAX_PORTS : n)};
    for (size_t i = 0; i < m.n; i++)
        m.ports[i] = ports[i];
    int rc = send_msg(role->ready_fd, &m);
    if (rc == 0 && exit_code == 0)
        rc = await_stage(role, STAGE_SERVE, &m);
    close(role->ready_fd);
    close(role->go_fd);
    return rc;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct supervisor {
    const struct cli_workers_config *cfg;
    uint64_t contexts, statics; /* every worker's, as they loaded */
    struct edhoc_state_server *writer;
    pid_t pid[MAX_WORKERS];
    int status[MAX_WORKERS];
    bool exited[MAX_WORKERS];
    int report_fd[MAX_WORKERS], go_fd[MAX_WORKERS]; /* -1 once closed */
    unsigned started;
};

static void serve_state(struct supervisor *s, int timeout_ms)
{
    if (s->writer && edhoc_state_server_clients(s->writer)) {
        int rc = edhoc_state_server_run(s->writer, timeout_ms);
        if (rc < 0)
            cli_log(LOG_ERR, "state writer: %s", edhoc_state_strerror(rc));
    } else {
        poll(NULL, 0, timeout_ms);
    }
}

/* Reap exited workers; returns the index of one that exited now, or -1. */
static int reap(struct supervisor *s)
{
    int found = -1;
    for (unsigned i = 0; i < s->started; i++) {
        if (s->exited[i])
            continue;
        int st;
        pid_t r = waitpid(s->pid[i], &st, WNOHANG);
        if (r == s->pid[i]) {
            s->exited[i] = true;
            s->status[i] = st;
            if (found < 0)
                found = (int)i;
        }
    }
    return found;
}

static unsigned running(const struct supervisor *s)
{
    unsigned n = 0;
    for (unsigned i = 0; i < s->started; i++)
        n += !s->exited[i];
    return n;
}

static void signal_all(struct supervisor *s, int sig)
{
    for (unsigned i = 0; i < s->started; i++) {
        if (!s->exited[i])
            kill(s->pid[i], sig);
    }
}

/* Stop every worker (SIGTERM: each stores its use times through the
 * writer, which keeps serving), SIGKILL after 10 s. */
static void stop_all(struct supervisor *s)
{
    signal_all(s, SIGTERM);
    uint64_t deadline = mono_ms() + 10000;
    while (running(s)) {
        serve_state(s, 20);
        reap(s);
        if (mono_ms() > deadline) {
            cli_log(LOG_ERR, "workers did not stop within 10 s: killing them");
            signal_all(s, SIGKILL);
            deadline = UINT64_MAX;
        }
    }
}

static int exit_code_of(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status) ? WEXITSTATUS(status) : CLI_WORKERS_EXIT_FAILURE;
    return CLI_WORKERS_EXIT_INTERNAL;
}

static void describe(int status, char *buf, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(buf, cap, "exit code %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, cap, "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, cap, "status %d", status);
}

static void close_pipes(struct supervisor *s, unsigned i)
{
    if (s->report_fd[i] >= 0)
        close(s->report_fd[i]);
    if (s->go_fd[i] >= 0)
        close(s->go_fd[i]);
    s->report_fd[i] = s->go_fd[i] = -1;
}

/* Fork worker i; in the child fill *role and return 1. */
static int fork_worker(struct supervisor *s, unsigned i, struct cli_worker_role *role)
{
    int sv[2] = {-1, -1}, rp[2], gp[2];
    if (s->cfg->db && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
        return -1;
    if (pipe2(rp, O_CLOEXEC)) {
        if (sv[0] >= 0) {
            close(sv[0]);
            close(sv[1]);
        }
        return -1;
    }
    if (pipe2(gp, O_CLOEXEC)) {
        close(rp[0]);
        close(rp[1]);
        if (sv[0] >= 0) {
            close(sv[0]);
            close(sv[1]);
        }
        return -1;
    }
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* A worker does not outlive its supervisor: without the writer
         * its marks could not be stored, and a new supervisor could not
         * take the port with it still in the group. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(CLI_WORKERS_EXIT_INTERNAL);
        close(rp[0]);
        close(gp[1]);
        if (sv[0] >= 0)
            close(sv[0]);
        /* The supervisor's ends of the workers started before. */
        for (unsigned k = 0; k < i; k++)
            close_pipes(s, k);
        *role = (struct cli_worker_role){.count = s->cfg->count,
                                         .index = i,
                                         .state_fd = sv[1],
                                         .ready_fd = rp[1],
                                         .go_fd = gp[0]};
        return 1;
    }
    close(rp[1]);
    close(gp[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    s->pid[i] = pid;
    s->started = i + 1;
    s->report_fd[i] = rp[0];
    s->go_fd[i] = gp[1];
    if (sv[0] >= 0 && edhoc_state_server_add(s->writer, sv[0])) {
        close(sv[0]);
        return -1;
    }
    return 0;
}

/* Wait for worker i's report of this stage, serving the state meanwhile
 * (it loads its contexts through the writer). Returns its exit code (0:
 * on it goes), or -1 on a stop signal. */
static int wait_report(struct supervisor *s, unsigned i, int stage, struct ready_msg *m)
{
    for (;;) {
        struct pollfd pf = {.fd = s->report_fd[i], .events = POLLIN};
        int r = poll(&pf, 1, 0);
        if (r > 0) {
            ssize_t n = read(s->report_fd[i], m, sizeof *m);
            if (n != (ssize_t)sizeof *m || m->stage != stage) {
                /* Exited before it could say: its status tells. */
                close_pipes(s, i);
                int st = 0;
                waitpid(s->pid[i], &st, 0);
                s->exited[i] = true;
                s->status[i] = st;
                return exit_code_of(st);
            }
            return m->exit_code;
        }
        if (*s->cfg->stop_signal)
            return -1;
        serve_state(s, 20);
    }
}

static int tell(struct supervisor *s, unsigned i, int stage, const uint16_t *ports, size_t n)
{
    struct ready_msg m = {
        .stage = stage, .n = (uint32_t)n, .contexts = s->contexts, .statics = s->statics};
    for (size_t k = 0; k < n && k < MAX_PORTS; k++)
        m.ports[k] = ports[k];
    return send_msg(s->go_fd[i], &m);
}

/* A worker's failure to start stops the responder with its code. */
static int start_failed(const struct cli_workers_config *cfg, unsigned i, int rc, int *exit_code)
{
    if (rc < 0) {
        *exit_code = CLI_WORKERS_EXIT_OK;
        return 1;
    }
    if (rc) {
        /* The worker logged why (a port in use, a bad file): one error
         * line; an internal failure may have gone unexplained. */
        cli_log(rc == CLI_WORKERS_EXIT_INTERNAL ? LOG_ERR : LOG_INFO,
                "worker %u of %u could not start (exit code %d): stopping", i, cfg->count, rc);
        *exit_code = rc;
        return 1;
    }
    return 0;
}

int cli_workers_start(const struct cli_workers_config *cfg, struct cli_worker_role *role,
                      int *exit_code)
{
    static struct supervisor s;
    memset(&s, 0, sizeof s);
    s.cfg = cfg;
    if (cfg->count < 2 || cfg->count > MAX_WORKERS || cfg->n_listen > MAX_PORTS) {
        *exit_code = CLI_WORKERS_EXIT_USAGE;
        return 1;
    }
    if (cfg->db && !(s.writer = edhoc_state_server_new(cfg->db))) {
        cli_log(LOG_ERR, "out of memory");
        *exit_code = CLI_WORKERS_EXIT_INTERNAL;
        return 1;
    }
    for (unsigned i = 0; i < MAX_WORKERS; i++)
        s.report_fd[i] = s.go_fd[i] = -1;
    uint16_t ports[MAX_PORTS] = {0};
    /* All load at once (through the writer), none bound yet. */
    for (unsigned i = 0; i < cfg->count; i++) {
        int f = fork_worker(&s, i, role);
        if (f == 1)
            return 0;
        if (f < 0) {
            cli_log(LOG_ERR, "cannot start worker %u: %s", i, strerror(errno));
            *exit_code = CLI_WORKERS_EXIT_INTERNAL;
            goto stop;
        }
    }
    struct ready_msg m;
    for (unsigned i = 0; i < cfg->count; i++) {
        if (start_failed(cfg, i, wait_report(&s, i, STAGE_LOADED, &m), exit_code))
            goto stop;
        s.contexts += m.contexts;
        s.statics += m.statics;
    }
    /* Then each binds in index order: worker i is socket i of the group. */
    for (unsigned i = 0; i < cfg->count; i++) {
        int rc = tell(&s, i, STAGE_BIND, ports, cfg->n_listen)
                     ? CLI_WORKERS_EXIT_INTERNAL
                     : wait_report(&s, i, STAGE_BOUND, &m);
        if (start_failed(cfg, i, rc, exit_code))
            goto stop;
        if (i == 0) {
            for (size_t k = 0; k < cfg->n_listen && k < m.n; k++) {
                ports[k] = m.ports[k];
                set_port(cfg->listen[k], sizeof cfg->listen[k], m.ports[k]);
            }
        }
    }
    /* The group is whole and steered: everyone serves. */
    for (unsigned i = 0; i < cfg->count; i++) {
        if (tell(&s, i, STAGE_SERVE, NULL, 0)) {
            start_failed(cfg, i, CLI_WORKERS_EXIT_INTERNAL, exit_code);
            goto stop;
        }
        close_pipes(&s, i);
    }
    for (size_t k = 0; k < cfg->n_listen; k++)
        cli_log_listening(cfg->listen[k], ports[k], cfg->listen_spec ? cfg->listen_spec[k] : "",
                          cfg->count);
    {
        char why[8400];
        if (cfg->pidfile && cli_pidfile_write(cfg->pidfile, why, sizeof why)) {
            cli_log(LOG_ERR, "%s", why);
            *exit_code = CLI_WORKERS_EXIT_INPUT;
            goto stop;
        }
        char text[MAX_PORTS * 8] = "";
        for (size_t k = 0, n = 0; k < cfg->n_listen; k++)
            n += (size_t)snprintf(text + n, sizeof text - n, "%u\n", ports[k]);
        if (cfg->ready_file &&
            cli_file_publish("--ready-file", cfg->ready_file, text, why, sizeof why)) {
            cli_log(LOG_ERR, "%s", why);
            *exit_code = CLI_WORKERS_EXIT_INPUT;
            goto stop;
        }
    }
    *exit_code = CLI_WORKERS_EXIT_OK;
    /* From here on the writer's handle commits in batches across poll
     * passes and workers (the workers have loaded: their reads are done). */
    uint64_t stats_due = 0, grouped_at = mono_ms();
    if (cfg->db && edhoc_state_group_commit(cfg->db, CLI_STATE_BATCH_ROWS, CLI_STATE_BATCH_MS))
        cli_log(LOG_WARNING, "state writer: no group commit, one commit per pass");
    while (!*cfg->stop_signal) {
        serve_state(&s, 100);
        if (cfg->db && cfg->state_dir && mono_ms() >= stats_due) {
            stats_due = mono_ms() + 1000;
            struct cli_state_stats ss = {.pid = (long)getpid(),
                                         .uptime_s = (double)(mono_ms() - grouped_at) / 1000};
            edhoc_state_get_writer_stats(cfg->db, &ss.w);
            cli_state_stats_publish(cfg->state_dir, &ss);
        }
        int dead = reap(&s);
        if (dead >= 0) {
            char how[96];
            describe(s.status[dead], how, sizeof how);
            cli_log(LOG_ERR,
                    "worker %d (pid %d) ended with %s: stopping the other workers "
                    "(the port's steering needs every worker in place; restart the "
                    "responder)",
                    dead, (int)s.pid[dead], how);
            *exit_code = exit_code_of(s.status[dead]);
            break;
        }
        if (*cfg->stats_signal) {
            *cfg->stats_signal = 0;
            signal_all(&s, SIGUSR1);
            struct edhoc_state_server_stats st = {0};
            edhoc_state_server_get_stats(s.writer, &st);
            struct edhoc_state_writer_stats ws = {0};
            edhoc_state_get_writer_stats(cfg->db, &ws);
            cli_log(LOG_NOTICE,
                    "SIGUSR1: %u workers running; state writer: %llu requests, "
                    "%llu commits of %llu rows, largest %llu",
                    running(&s), (unsigned long long)st.requests,
                    (unsigned long long)(st.commits + ws.commits), (unsigned long long)ws.rows,
                    (unsigned long long)(ws.largest_batch > st.largest_group ? ws.largest_batch
                                                                             : st.largest_group));
        }
        if (*cfg->reload_signal) {
            *cfg->reload_signal = 0;
            signal_all(&s, SIGHUP);
        }
    }
stop:
    for (unsigned i = 0; i < s.started; i++)
        close_pipes(&s, i);
    stop_all(&s);
    /* A worker that did not end cleanly while stopping (an abort in its
     * shutdown, or killed after the 10 s) is a failure of the responder,
     * as one that dies while serving: the service manager must see it.
     * Ended by our own SIGTERM is clean: a worker still starting has no
     * handler yet, and has served nothing. */
    for (unsigned i = 0; i < s.started && *exit_code == CLI_WORKERS_EXIT_OK; i++) {
        if ((WIFEXITED(s.status[i]) && WEXITSTATUS(s.status[i]) == 0) ||
            (WIFSIGNALED(s.status[i]) && WTERMSIG(s.status[i]) == SIGTERM))
            continue;
        char how[96];
        describe(s.status[i], how, sizeof how);
        cli_log(LOG_ERR, "worker %u (pid %d) ended with %s while stopping", i, (int)s.pid[i], how);
        *exit_code = exit_code_of(s.status[i]);
    }
    {
        struct edhoc_state_server_stats st = {0};
        edhoc_state_server_get_stats(s.writer, &st);
        /* What the workers sent before they stopped is committed now. */
        if (cfg->db && edhoc_state_flush(cfg->db))
            cli_log(LOG_ERR, "state writer: a batch failed to commit");
        struct edhoc_state_writer_stats ws = {0};
        edhoc_state_get_writer_stats(cfg->db, &ws);
        cli_log(LOG_NOTICE,
                "stopping %u workers%s%d: state writer served %llu requests in %llu "
                "commits of %llu rows (largest %llu)",
                s.started, *cfg->stop_signal ? " on signal " : ", exit code ",
                *cfg->stop_signal ? *cfg->stop_signal : *exit_code, (unsigned long long)st.requests,
                (unsigned long long)(st.commits + ws.commits), (unsigned long long)ws.rows,
                (unsigned long long)(ws.largest_batch > st.largest_group ? ws.largest_batch
                                                                         : st.largest_group));
    }
    edhoc_state_server_free(s.writer);
    return 1;
}
