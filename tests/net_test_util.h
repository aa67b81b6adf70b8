/*
 * Helpers of the network end-to-end tests (test_cli_net.c,
 * test_cli_responder.c): a scratch directory, responder processes on free
 * loopback ports (port 0, the real port read back from --ready-file),
 * bounded waits, and stopping every started process in teardown.
 */
#ifndef TESTS_NET_TEST_UTIL_H
#define TESTS_NET_TEST_UTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Paths are built from a short scratch directory; truncation cannot happen
 * in practice and would only make a test fail. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define NET_MAX_PROCS 32

struct net_proc {
    pid_t pid;
    uint16_t port;  /* first --listen (127.0.0.1) */
    uint16_t port6; /* second --listen ([::1]) if any */
    char log[300];
    char ready[300];
    char pidfile[300];
};

static char net_dir[256];
static struct net_proc *net_procs[NET_MAX_PROCS];

static inline uint64_t net_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void net_sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline int net_make_dir(const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(net_dir, sizeof net_dir, "%s/edhoc-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    if (!mkdtemp(net_dir))
        return -1;
    /* Client commands keep OSCORE sequence numbers in a state directory:
     * one of this run's own, so a run starts from nothing. */
    char state[300];
    snprintf(state, sizeof state, "%s/client-state", net_dir);
    /* Responders lock static contexts host-wide (EDHOC_LOCK_DIR): test
     * programs running side by side with the same context files must not
     * refuse each other's responders. */
    char locks[300];
    snprintf(locks, sizeof locks, "%s/locks", net_dir);
    if (setenv("EDHOC_LOCK_DIR", locks, 1))
        return -1;
    return setenv("STATE_DIRECTORY", state, 1);
}

static inline void net_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", net_dir, name);
}

static inline char *net_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap + 1);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            char *b = realloc(buf, cap * 2 + 1);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

static inline void net_write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

/* Start `edhoc-cli responder ARGS --ready-file ...` (ARGS must contain the
 * --listen options; use port 0), with --demo when ARGS give no --cred (a
 * responder serves the published demo keys only when told so). Waits
 * until it serves (at most 10 s). Returns 0, or -1 (it died; its log is
 * printed). */
static inline int net_responder_start(struct net_proc *p, const char *name, const char *args)
{
    const char *cli = getenv("EDHOC_CLI");
    memset(p, 0, sizeof *p);
    snprintf(p->log, sizeof p->log, "%s/%s.log", net_dir, name);
    snprintf(p->ready, sizeof p->ready, "%s/%s.ready", net_dir, name);
    unlink(p->ready);
    char cmd[4096];
    /* Without --state-dir the responder keeps its state in the default
     * directory: one of its own per name, so that responders of one test
     * run side by side and a restarted one finds its state again. */
    char env[400] = "";
    if (!strstr(args, "--state-dir"))
        snprintf(env, sizeof env, "env STATE_DIRECTORY=%s/%s.state ", net_dir, name);
    const char *demo = strstr(args, "--cred") || strstr(args, "--demo") ? "" : "--demo ";
    /* One process unless the test asks for workers: counts in the log
     * (contexts, evictions, handshakes) are then the whole responder's. */
    const char *workers = strstr(args, "--workers") ? "" : "--workers 1 ";
    snprintf(cmd, sizeof cmd, "exec %s%s responder %s%s%s --ready-file %s 2>>%s", env,
             cli ? cli : "edhoc-cli", demo, workers, args, p->ready, p->log);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    p->pid = pid;
    for (size_t i = 0; i < NET_MAX_PROCS; i++) {
        if (!net_procs[i]) {
            net_procs[i] = p;
            break;
        }
    }
    uint64_t end = net_now_ms() + 10000;
    while (net_now_ms() < end) {
        char *r = net_read_file(p->ready);
        if (r) {
            unsigned a = 0, b = 0;
            int n = sscanf(r, "%u %u", &a, &b);
            free(r);
            if (n >= 1 && a) {
                p->port = (uint16_t)a;
                p->port6 = (uint16_t)b;
                return 0;
            }
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            p->pid = 0;
            char *log = net_read_file(p->log);
            fprintf(stderr, "responder %s exited early:\n%s\n", name, log ? log : "");
            free(log);
            return -1;
        }
        net_sleep_ms(20);
    }
    return -1;
}

/* Signal the process and wait for it (at most timeout_ms, then SIGKILL).
 * Returns its exit status (0..255), 128+signal, or -1. */
static inline int net_proc_stop(struct net_proc *p, int sig, unsigned timeout_ms)
{
    if (!p->pid)
        return -1;
    kill(p->pid, sig);
    uint64_t end = net_now_ms() + timeout_ms;
    int st = 0;
    pid_t r;
    while ((r = waitpid(p->pid, &st, WNOHANG)) == 0 && net_now_ms() < end)
        net_sleep_ms(10);
    if (r == 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, &st, 0);
    }
    p->pid = 0;
    for (size_t i = 0; i < NET_MAX_PROCS; i++) {
        if (net_procs[i] == p)
            net_procs[i] = NULL;
    }
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return -1;
}

/* Teardown: nothing started by a test survives it, pass or fail. */
static inline void net_stop_all(void)
{
    for (size_t i = 0; i < NET_MAX_PROCS; i++) {
        if (net_procs[i] && net_procs[i]->pid)
            net_proc_stop(net_procs[i], SIGKILL, 2000);
        net_procs[i] = NULL;
    }
}

static inline void net_remove_dir(void)
{
    if (!net_dir[0])
        return;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", net_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", net_dir);
}

/* Run a shell command line (bounded by `timeout`), capture stdout+stderr. */
static inline int net_sh(const char *cmdline, char **out, unsigned timeout_s)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "timeout -k 2 %u sh -c '%s' 2>&1", timeout_s, cmdline);
    FILE *p = popen(cmd, "r");
    if (!p) {
        *out = strdup("");
        return -1;
    }
    size_t cap = 8192, len = 0, n;
    char *buf = malloc(cap + 1);
    while ((n = fread(buf + len, 1, cap - len, p)) > 0) {
        len += n;
        if (len == cap) {
            buf = realloc(buf, cap * 2 + 1);
            cap *= 2;
        }
    }
    buf[len] = '\0';
    *out = buf;
    int st = pclose(p);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

/* The edhoc-cli binary under test ($EDHOC_CLI). */
static inline const char *net_cli(void)
{
    const char *cli = getenv("EDHOC_CLI");
    return cli ? cli : "edhoc-cli";
}

/* Run `edhoc-cli ARGS` (ARGS: a shell fragment without single quotes),
 * bounded by timeout_s; stdout and stderr captured, or stdout only when
 * drop_stderr. Returns as net_sh. */
static inline int net_cli_run(char **out, unsigned timeout_s, bool drop_stderr, const char *fmt,
                              ...) __attribute__((format(printf, 4, 5)));
static inline int net_cli_run(char **out, unsigned timeout_s, bool drop_stderr, const char *fmt,
                              ...)
{
    char args[8192], line[8400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "%s %s%s", net_cli(), args, drop_stderr ? " 2>/dev/null" : "");
    return net_sh(line, out, timeout_s);
}

/* Validate JSON text against docs/json/<schema>.schema.json with
 * tests/json_check.py (lines: one document per line). Returns 0 when
 * valid; otherwise prints the validator's message and the text, returns 1. */
static inline int net_json_valid(const char *json_text, const char *schema, bool lines)
{
    const char *root = getenv("EDHOC_SOURCE_ROOT");
    if (!root)
        root = ".";
    char path[512], cmd[1600];
    snprintf(path, sizeof path, "%s/json-%d-%ld.txt", net_dir[0] ? net_dir : "/tmp", (int)getpid(),
             (long)random());
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    fputs(json_text, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "python3 %s/tests/json_check.py %s %s/docs/json/%s.schema.json %s",
             root, lines ? "--lines" : "", root, schema, path);
    char *out = NULL;
    int rc = net_sh(cmd, &out, 30);
    if (rc != 0)
        fprintf(stderr, "%s (schema %s)\n--- output checked ---\n%s\n---\n", out, schema,
                json_text);
    free(out);
    unlink(path);
    return rc != 0;
}

/* cmocka group teardown: stop every process, remove the test directory. */
static inline int net_group_teardown(void **state)
{
    (void)state;
    net_stop_all();
    net_remove_dir();
    return 0;
}

/* cmocka per-test teardown: nothing a test started survives it. */
static inline int net_test_teardown(void **state)
{
    (void)state;
    net_stop_all();
    return 0;
}

/* Count occurrences of needle. */
static inline int net_count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* A UDP port on 127.0.0.1 that is bound (and silent) while fd is open. */
static inline int net_silent_socket(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
        getsockname(fd, (struct sockaddr *)&a, &l)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* A port nobody listens on (bound then closed: ICMP unreachable). */
static inline uint16_t net_closed_port(void)
{
    uint16_t port = 0;
    int fd = net_silent_socket(&port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* Send one datagram from fd to 127.0.0.1:port and wait for one answer. */
static inline long net_udp_exchange_fd(int fd, uint16_t port, const uint8_t *msg, size_t len,
                                       uint8_t *resp, size_t cap, unsigned timeout_ms)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    struct timeval tv = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (sendto(fd, msg, len, 0, (struct sockaddr *)&a, sizeof a) != (ssize_t)len)
        return -1;
    return recv(fd, resp, cap, 0);
}

/* Send one datagram to 127.0.0.1:port and wait for one answer (bytes into
 * resp). Returns its length or -1. */
static inline long net_udp_exchange(uint16_t port, const uint8_t *msg, size_t len, uint8_t *resp,
                                    size_t cap, unsigned timeout_ms)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    struct timeval tv = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    long n = -1;
    if (sendto(fd, msg, len, 0, (struct sockaddr *)&a, sizeof a) == (ssize_t)len)
        n = recv(fd, resp, cap, 0);
    close(fd);
    return n;
}

/* A `responder --daemon` started: waits up to timeout_ms for its pid file
 * and its ready file (the port), both written once it serves; a test fails
 * when either is missing by then. */
static inline void net_wait_daemon(const char *pidfile, const char *ready, unsigned timeout_ms,
                                   pid_t *pid, unsigned *port)
{
    *pid = 0;
    *port = 0;
    uint64_t end = net_now_ms() + timeout_ms;
    while (net_now_ms() < end && (!*pid || !*port)) {
        char *p = net_read_file(pidfile), *r = net_read_file(ready);
        if (p)
            *pid = (pid_t)atoi(p);
        if (r)
            *port = (unsigned)atoi(r);
        free(p);
        free(r);
        if (!*pid || !*port)
            net_sleep_ms(20);
    }
    if (*pid <= 1 || *port == 0)
        fail_msg("the daemon wrote no pid (%s) or port (%s) in %u ms", pidfile, ready, timeout_ms);
}

/* SIGTERM to a detached daemon, then up to timeout_ms for it to exit (it
 * is not our child: kill(pid, 0) tells); a test fails, the daemon killed,
 * when it is still there. */
static inline void net_stop_daemon(pid_t pid, unsigned timeout_ms)
{
    kill(pid, SIGTERM);
    uint64_t end = net_now_ms() + timeout_ms;
    while (net_now_ms() < end && kill(pid, 0) == 0)
        net_sleep_ms(20);
    if (kill(pid, 0) == 0) {
        kill(pid, SIGKILL);
        fail_msg("the daemon (pid %ld) did not stop on SIGTERM in %u ms", (long)pid, timeout_ms);
    }
}

/* Remove from a tshark _ws.expert.message field the note Wireshark's UDP
 * dissector adds to any datagram to a port of traceroute's range (33434
 * and up): "Possible traceroute: hop #6, attempt #1" (a comma of its own),
 * with the separator after it. A responder's port is the kernel's choice,
 * so that note is about the port, never about OSCORE. */
static inline void net_tshark_drop_traceroute(char *expert)
{
    if (strncmp(expert, "Possible traceroute", 19))
        return;
    const char *rest = strstr(expert, "attempt #");
    rest = rest ? rest + 9 : expert + strlen(expert);
    while (*rest >= '0' && *rest <= '9')
        rest++;
    if (*rest == ',')
        rest++;
    memmove(expert, rest, strlen(rest) + 1);
}

/* The string value of the first "key": "..." in out, into val (a test
 * fails when it is missing or longer than cap). Every includer has
 * cmocka.h first. */
static inline void net_json_str(const char *out, const char *key, char *val, size_t cap)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(out, pat);
    if (!p)
        fail_msg("no \"%s\" in:\n%s", key, out);
    p += strlen(pat);
    size_t n = strcspn(p, "\"");
    if (n >= cap)
        fail_msg("%s too long", key);
    memcpy(val, p, n);
    val[n] = '\0';
}

/* The OSCORE context that `initiator --export-secrets --json` printed in
 * initiator_json, written to path (0600) in the libcoap conf keywords that
 * `coap --oscore-context` reads. */
static inline void net_write_exported_context(const char *initiator_json, const char *path)
{
    char ms[80], salt[80], sid[20], rid[20], text[600];
    net_json_str(initiator_json, "master_secret", ms, sizeof ms);
    net_json_str(initiator_json, "master_salt", salt, sizeof salt);
    net_json_str(initiator_json, "sender_id", sid, sizeof sid);
    net_json_str(initiator_json, "recipient_id", rid, sizeof rid);
    snprintf(text, sizeof text,
             "master_secret,hex,\"%s\"\nmaster_salt,hex,\"%s\"\nsender_id,hex,\"%s\"\n"
             "recipient_id,hex,\"%s\"\n",
             ms, salt, sid, rid);
    net_write_file(path, text, 0600);
}

/* out without the whitespace between JSON tokens (strings kept as they
 * are), so that a test can look for `"tolerated":["c-bstr"]` however the
 * document is indented. Returns a malloc'd copy. */
static inline char *net_json_compact(const char *out)
{
    char *c = malloc(strlen(out) + 1);
    if (!c)
        fail_msg("out of memory");
    size_t n = 0;
    bool in_string = false;
    for (const char *p = out; *p; p++) {
        if (in_string) {
            c[n++] = *p;
            if (*p == '\\' && p[1])
                c[n++] = *++p;
            else if (*p == '"')
                in_string = false;
        } else if (*p == '"') {
            in_string = true;
            c[n++] = *p;
        } else if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') {
            c[n++] = *p;
        }
    }
    c[n] = '\0';
    return c;
}

/* ---- A UDP relay in front of a real responder, in a child process ---- */

/* What the relay does with one datagram: to_server says whether a
 * client's datagram is passed on (NULL: all are); to_client may rewrite
 * the server's answer in place (up to cap bytes) and returns its new
 * length, 0 to drop it (NULL: unchanged). */
struct net_relay_hooks {
    bool (*to_server)(void *user, const uint8_t *d, size_t len);
    size_t (*to_client)(void *user, uint8_t *d, size_t len, size_t cap);
    void *user;
};

/* Each client address gets its own upstream socket, so the responder
 * sees as many peers as there are clients. Runs until killed. */
static inline void net_relay_loop(int lfd, uint16_t upstream, const struct net_relay_hooks *h)
{
    struct {
        struct sockaddr_in peer;
        int fd;
    } cl[64];
    size_t n = 0;
    uint8_t buf[4096];
    struct sockaddr_in up = {.sin_family = AF_INET, .sin_port = htons(upstream)};
    up.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (;;) {
        struct pollfd pf[65];
        pf[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
        for (size_t i = 0; i < n; i++)
            pf[i + 1] = (struct pollfd){.fd = cl[i].fd, .events = POLLIN};
        if (poll(pf, n + 1, -1) < 0)
            continue;
        if (pf[0].revents & POLLIN) {
            struct sockaddr_in from;
            socklen_t fl = sizeof from;
            ssize_t r = recvfrom(lfd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
            size_t i = 0;
            while (r > 0 && i < n &&
                   (cl[i].peer.sin_port != from.sin_port ||
                    cl[i].peer.sin_addr.s_addr != from.sin_addr.s_addr))
                i++;
            if (r > 0 && i == n && n < 64) {
                cl[n].peer = from;
                cl[n].fd = socket(AF_INET, SOCK_DGRAM, 0);
                if (cl[n].fd >= 0 && connect(cl[n].fd, (struct sockaddr *)&up, sizeof up) == 0)
                    n++;
            }
            if (r > 0 && i < n && (!h->to_server || h->to_server(h->user, buf, (size_t)r)) &&
                send(cl[i].fd, buf, (size_t)r, 0) < 0)
                continue;
        }
        for (size_t i = 0; i < n; i++) {
            if (!(pf[i + 1].revents & POLLIN))
                continue;
            ssize_t r = recv(cl[i].fd, buf, sizeof buf, 0);
            if (r <= 0)
                continue;
            size_t len =
                h->to_client ? h->to_client(h->user, buf, (size_t)r, sizeof buf) : (size_t)r;
            if (len)
                sendto(lfd, buf, len, 0, (struct sockaddr *)&cl[i].peer, sizeof cl[i].peer);
        }
    }
}

/* Start a relay towards 127.0.0.1:upstream; p->port is where clients
 * send. Stopped like any started process. Returns 0 or -1. */
static inline int net_relay_start(struct net_proc *p, uint16_t upstream,
                                  const struct net_relay_hooks *h)
{
    memset(p, 0, sizeof *p);
    int lfd = net_silent_socket(&p->port);
    if (lfd < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(lfd);
        return -1;
    }
    if (pid == 0) {
        net_relay_loop(lfd, upstream, h);
        _exit(0);
    }
    close(lfd);
    p->pid = pid;
    for (size_t i = 0; i < NET_MAX_PROCS; i++) {
        if (!net_procs[i]) {
            net_procs[i] = p;
            break;
        }
    }
    return 0;
}

#endif
