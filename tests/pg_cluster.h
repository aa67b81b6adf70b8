/*
 * pg_cluster.h - a private PostgreSQL cluster for a test: initdb in a
 * temporary directory, the server on a Unix socket in that directory
 * only (no TCP port, so runs in parallel never collide), started, stopped
 * (fast shutdown), restarted, removed. Needs nothing but Debian's
 * postgresql package (scripts/install-deps) and no network.
 *
 * Tests run as root, and PostgreSQL refuses to: as root the cluster
 * belongs to and runs as "postgres" (or "nobody" without that user),
 * dropped to in the child before exec. The server gets the test's
 * death signal (PR_SET_PDEATHSIG), so an aborted test leaves none behind.
 * Readiness is the "ready" status line of postmaster.pid, polled with a
 * deadline; never a fixed sleep.
 */
#ifndef EDHOC_TESTS_PG_CLUSTER_H
#define EDHOC_TESTS_PG_CLUSTER_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define PG_CLUSTER_PORT      5432
#define PG_CLUSTER_SUPERUSER "edhoc"

struct pg_cluster {
    char dir[512];    /* the temporary directory: socket, log, data/ */
    char data[600];   /* dir/data */
    char log[600];    /* dir/server.log */
    char bindir[256]; /* initdb, postgres */
    uid_t uid;        /* whom the server runs as */
    gid_t gid;
    pid_t pid;      /* the postmaster, 0 when stopped */
    char why[1024]; /* what went wrong, with the log's last lines */
};

static inline void pg_cluster_fail(struct pg_cluster *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
    FILE *f = fopen(c->log, "r");
    if (f == NULL || n < 0 || (size_t)n >= sizeof c->why - 1) {
        if (f)
            fclose(f);
        return;
    }
    char tail[600] = "";
    if (fseek(f, -(long)(sizeof tail - 1), SEEK_END) != 0)
        rewind(f);
    size_t got = fread(tail, 1, sizeof tail - 1, f);
    tail[got] = '\0';
    fclose(f);
    /* A long path and log can overflow why: the start of the message, which names
     * the step, matters more than the end of the log, so truncation is accepted. */
    int more = snprintf(c->why + n, sizeof c->why - (size_t)n, "; %s ends: %s", c->log, tail);
    if (more < 0 || (size_t)more >= sizeof c->why - (size_t)n)
        c->why[sizeof c->why - 1] = '\0';
}

static inline bool pg_cluster_find_bindir(struct pg_cluster *c)
{
    const char *env = getenv("EDHOC_PG_BINDIR");
    if (env && *env) {
        snprintf(c->bindir, sizeof c->bindir, "%s", env);
        return true;
    }
    glob_t g;
    if (glob("/usr/lib/postgresql/*/bin/postgres", 0, NULL, &g) != 0)
        return false;
    /* The newest version installed: the last name in order of length, then bytes. */
    const char *best = g.gl_pathv[0];
    for (size_t i = 1; i < g.gl_pathc; i++)
        if (strlen(g.gl_pathv[i]) > strlen(best) ||
            (strlen(g.gl_pathv[i]) == strlen(best) && strcmp(g.gl_pathv[i], best) > 0))
            best = g.gl_pathv[i];
    snprintf(c->bindir, sizeof c->bindir, "%.*s", (int)(strlen(best) - strlen("/postgres")), best);
    globfree(&g);
    return true;
}

/* Run argv as the cluster's user with output appended to the log; returns
 * the child (wait for it) or -1. */
static inline pid_t pg_cluster_spawn(struct pg_cluster *c, char *const argv[])
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(c->gid) != 0 || setuid(c->uid) != 0))
        _exit(125);
    /* After setuid: a change of credentials clears the death signal. */
    if (prctl(PR_SET_PDEATHSIG, SIGQUIT) != 0 || getppid() != parent)
        _exit(125);
    int fd = open(c->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
        _exit(126);
    int in = open("/dev/null", O_RDONLY);
    if (in >= 0)
        dup2(in, 0);
    if (access(c->dir, W_OK | X_OK) != 0) {
        fprintf(stderr,
                "pg_cluster: user %ld cannot write %s (a directory above it is closed "
                "to it: set TMPDIR to a directory others may enter)\n",
                (long)getuid(), c->dir);
        _exit(126);
    }
    setenv("LC_ALL", "C", 1);
    unsetenv("PGDATA");
    execv(argv[0], argv);
    fprintf(stderr, "pg_cluster: exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Make the directory and the cluster (initdb). 0, or -1 with c->why. */
static inline int pg_cluster_init(struct pg_cluster *c)
{
    memset(c, 0, sizeof *c);
    if (!pg_cluster_find_bindir(c)) {
        snprintf(c->why, sizeof c->why,
                 "no PostgreSQL server in /usr/lib/postgresql/*/bin: run scripts/install-deps "
                 "(Debian's postgresql), or set EDHOC_PG_BINDIR");
        return -1;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(c->dir, sizeof c->dir, "%s/edhoc-pg-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(c->dir) == NULL) {
        snprintf(c->why, sizeof c->why, "mkdtemp %s: %s", c->dir, strerror(errno));
        return -1;
    }
    snprintf(c->data, sizeof c->data, "%s/data", c->dir);
    snprintf(c->log, sizeof c->log, "%s/server.log", c->dir);
    c->uid = geteuid();
    c->gid = getegid();
    if (c->uid == 0) {
        const struct passwd *pw = getpwnam("postgres");
        if (pw == NULL)
            pw = getpwnam("nobody");
        if (pw == NULL) {
            snprintf(c->why, sizeof c->why, "running as root, and no user postgres or nobody");
            return -1;
        }
        c->uid = pw->pw_uid;
        c->gid = pw->pw_gid;
        if (chown(c->dir, c->uid, c->gid) != 0) {
            snprintf(c->why, sizeof c->why, "chown %s: %s", c->dir, strerror(errno));
            return -1;
        }
    }
    char initdb[300];
    snprintf(initdb, sizeof initdb, "%s/initdb", c->bindir);
    char *const argv[] = {
        initdb, "-D",   c->data,      "-U",        PG_CLUSTER_SUPERUSER, "-A", "trust",
        "-E",   "UTF8", "--locale=C", "--no-sync", "--no-instructions",  NULL};
    pid_t pid = pg_cluster_spawn(c, argv);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        pg_cluster_fail(c, "initdb %s failed (status %d)", c->data, status);
        return -1;
    }
    return 0;
}

/* postmaster.pid names our child and says "ready" on its status line. */
static inline bool pg_cluster_is_ready(const struct pg_cluster *c)
{
    char path[700], buf[1024];
    snprintf(path, sizeof path, "%s/postmaster.pid", c->data);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (atol(buf) != (long)c->pid)
        return false;
    const char *line = buf;
    for (int i = 1; i < 8 && line; i++) {
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return line && strncmp(line, "ready", 5) == 0;
}

static inline int pg_cluster_start(struct pg_cluster *c)
{
    char postgres[300], port[16];
    snprintf(postgres, sizeof postgres, "%s/postgres", c->bindir);
    snprintf(port, sizeof port, "%d", PG_CLUSTER_PORT);
    /* Durability is not what these tests measure: no fsync (a test
     * server crash is a process crash, the kernel keeps the pages). */
    char *const argv[] = {postgres,
                          "-D",
                          c->data,
                          "-k",
                          c->dir,
                          "-p",
                          port,
                          "-c",
                          "listen_addresses=",
                          "-c",
                          "fsync=off",
                          "-c",
                          "full_page_writes=off",
                          "-c",
                          "shared_buffers=16MB",
                          "-c",
                          "max_connections=30",
                          NULL};
    c->pid = pg_cluster_spawn(c, argv);
    if (c->pid < 0) {
        c->pid = 0;
        pg_cluster_fail(c, "fork: %s", strerror(errno));
        return -1;
    }
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        if (pg_cluster_is_ready(c))
            return 0;
        int status;
        if (waitpid(c->pid, &status, WNOHANG) == c->pid) {
            c->pid = 0;
            pg_cluster_fail(c, "postgres exited while starting (status %d)", status);
            return -1;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 60) {
            pg_cluster_fail(c, "postgres not ready after 60 s");
            return -1;
        }
        struct timespec poll_gap = {0, 5 * 1000 * 1000};
        nanosleep(&poll_gap, NULL);
    }
}

/* Fast shutdown (SIGINT: sessions ended, a clean checkpoint); SIGKILL if
 * it has not ended within 60 s. */
static inline int pg_cluster_stop(struct pg_cluster *c)
{
    if (c->pid <= 0)
        return 0;
    kill(c->pid, SIGINT);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int status = 0;
    while (waitpid(c->pid, &status, WNOHANG) != c->pid) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 60) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &status, 0);
            c->pid = 0;
            return -1;
        }
        struct timespec poll_gap = {0, 5 * 1000 * 1000};
        nanosleep(&poll_gap, NULL);
    }
    c->pid = 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Immediate shutdown (SIGQUIT): every session ends where it stands,
 * nothing more commits (as when the server's host fails); the next start
 * recovers from the WAL. 0 once it has ended. */
static inline int pg_cluster_crash(struct pg_cluster *c)
{
    if (c->pid <= 0)
        return 0;
    kill(c->pid, SIGQUIT);
    int status = 0;
    pid_t r = waitpid(c->pid, &status, 0);
    c->pid = 0;
    return r > 0 ? 0 : -1;
}

static inline int pg_cluster_restart(struct pg_cluster *c)
{
    return pg_cluster_stop(c) == 0 ? pg_cluster_start(c) : -1;
}

/* The connection string of database name on the cluster. */
static inline void pg_cluster_conninfo(const struct pg_cluster *c, const char *name, char *out,
                                       size_t cap)
{
    snprintf(out, cap, "host=%s port=%d user=%s dbname=%s", c->dir, PG_CLUSTER_PORT,
             PG_CLUSTER_SUPERUSER, name);
}

static inline void pg_cluster_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* A fresh database (dropped first if a previous run left it). */
static inline int pg_cluster_create_db(struct pg_cluster *c, const char *name)
{
    char conninfo[800], sql[200];
    pg_cluster_conninfo(c, "postgres", conninfo, sizeof conninfo);
    PGconn *conn = PQconnectdb(conninfo);
    int rc = -1;
    if (PQstatus(conn) == CONNECTION_OK) {
        PQsetNoticeProcessor(conn, pg_cluster_quiet, NULL); /* "does not exist, skipping" */
        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", name);
        PQclear(PQexec(conn, sql));
        snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
        PGresult *res = PQexec(conn, sql);
        rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -1;
        if (rc)
            snprintf(c->why, sizeof c->why, "%s: %s", sql, PQerrorMessage(conn));
        PQclear(res);
    } else {
        snprintf(c->why, sizeof c->why, "connect %s: %s", conninfo, PQerrorMessage(conn));
    }
    PQfinish(conn);
    return rc;
}

static inline int pg_cluster_rm_entry(const char *path, const struct stat *st, int type,
                                      struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Stop the server and remove everything. */
static inline void pg_cluster_destroy(struct pg_cluster *c)
{
    pg_cluster_stop(c);
    if (c->dir[0])
        nftw(c->dir, pg_cluster_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    c->dir[0] = '\0';
}

#endif
