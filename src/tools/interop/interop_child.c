/* One initiator run in a child process, bounded in time (interop_internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interop_internal.h"

#define MAX_OUTPUT (1u << 20) /* the child's --json report, bounded */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

bool interop_stopped(const struct interop_matrix_opts *o)
{
    return o->interrupted && o->interrupted();
}

void child_result_free(struct child_result *r)
{
    free(r->out);
    json_decref(r->report);
    r->out = NULL;
    r->report = NULL;
}

/* ---- One child process, bounded ---- */

static void append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 8192;
        while (*len + n + 1 > nc)
            nc *= 2;
        if (nc > MAX_OUTPUT + 1)
            return;
        char *b = realloc(*buf, nc);
        if (!b)
            return;
        *buf = b;
        *cap = nc;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    (*buf)[*len] = '\0';
}

static void run_child(const struct interop_matrix_opts *o, char *const argv[], long bound_ms,
                      struct child_result *r)
{
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
    int out_p[2], err_p[2];
    if (pipe2(out_p, O_CLOEXEC))
        return;
    if (pipe2(err_p, O_CLOEXEC)) {
        close(out_p[0]);
        close(out_p[1]);
        return;
    }
    uint64_t t0 = now_ms();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        /* A cell never outlives the matrix, even if we are killed. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(out_p[1], 1);
        dup2(err_p[1], 2);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(out_p[1]);
    close(err_p[1]);
    if (pid < 0) {
        close(out_p[0]);
        close(err_p[0]);
        snprintf(r->err_line, sizeof r->err_line, "cannot start the initiator: %s",
                 strerror(errno));
        return;
    }
    char *err = NULL;
    size_t out_len = 0, out_cap = 0, err_len = 0, err_cap = 0;
    struct pollfd pf[2] = {{out_p[0], POLLIN, 0}, {err_p[0], POLLIN, 0}};
    int open_fds = 2;
    uint64_t deadline = t0 + (uint64_t)bound_ms;
    while (open_fds > 0) {
        uint64_t now = now_ms();
        if (interop_stopped(o)) {
            r->interrupted = true;
            break;
        }
        if (now >= deadline) {
            r->killed = true;
            break;
        }
        int n = poll(pf, 2, (int)(deadline - now));
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2 && n > 0; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[4096];
            ssize_t got = read(pf[i].fd, buf, sizeof buf);
            if (got <= 0) {
                close(pf[i].fd);
                pf[i].fd = -1;
                open_fds--;
            } else if (i == 0) {
                append(&r->out, &out_len, &out_cap, buf, (size_t)got);
            } else {
                append(&err, &err_len, &err_cap, buf, (size_t)got);
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (pf[i].fd >= 0)
            close(pf[i].fd);
    int status = 0;
    if (r->interrupted) {
        /* Let the initiator end its exchange; it is killed if it does not
         * within the grace period. */
        kill(pid, SIGTERM);
        uint64_t end = now_ms() + INTEROP_KILL_GRACE_MS;
        pid_t w;
        while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now_ms() < end) {
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
        }
        if (w == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
    } else if (r->killed) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    } else {
        /* Both pipes closed: the child is exiting; wait for it, bounded. */
        pid_t w;
        while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now_ms() < deadline) {
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
        }
        if (w == 0) {
            r->killed = true;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
    }
    if (!r->killed && WIFEXITED(status))
        r->exit_code = WEXITSTATUS(status);
    r->ms = (long)(now_ms() - t0);
    if (r->out) {
        json_t *rep = json_loads(r->out, 0, NULL);
        if (json_is_object(rep))
            r->report = rep;
        else
            json_decref(rep);
    }
    if (err) {
        while (err_len && (err[err_len - 1] == '\n' || err[err_len - 1] == '\r'))
            err[--err_len] = '\0';
        const char *nl = strrchr(err, '\n');
        const char *line = nl ? nl + 1 : err;
        static const char *const prefixes[] = {
            "edhoc-cli initiator: ", "edhoc-cli: ", "initiator: "};
        for (size_t i = 0; i < 3; i++)
            if (!strncmp(line, prefixes[i], strlen(prefixes[i])))
                line += strlen(prefixes[i]);
        snprintf(r->err_line, sizeof r->err_line, "%s", line);
        free(err);
    }
}

void initiator_argv_start(const struct interop_matrix_opts *o, int method, const char *suites,
                          struct initiator_argv *a)
{
    snprintf(a->method, sizeof a->method, "%d", method);
    /* Whole seconds as such, others with their milliseconds. */
    if (o->timeout_ms % 1000 == 0)
        snprintf(a->timeout, sizeof a->timeout, "%ld", o->timeout_ms / 1000);
    else
        snprintf(a->timeout, sizeof a->timeout, "%ld.%03ld", o->timeout_ms / 1000,
                 o->timeout_ms % 1000);
    a->n = 0;
    a->v[a->n++] = "edhoc-cli";
    a->v[a->n++] = "initiator";
    a->v[a->n++] = (char *)o->uri;
    a->v[a->n++] = "--json";
    a->v[a->n++] = "--method";
    a->v[a->n++] = a->method;
    a->v[a->n++] = "--suites";
    a->v[a->n++] = (char *)suites;
    a->v[a->n++] = "--timeout";
    a->v[a->n++] = a->timeout;
}

void initiator_argv_run(const struct interop_matrix_opts *o, struct initiator_argv *a, bool twice,
                        struct child_result *r)
{
    for (int i = 0; i < o->n_pass; i++)
        a->v[a->n++] = (char *)o->pass[i];
    a->v[a->n] = NULL;
    run_child(o, a->v, o->timeout_ms * (twice ? 2 : 1) + INTEROP_KILL_GRACE_MS, r);
}
