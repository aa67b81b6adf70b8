/*
 * load: the responder's CPU time and process, when it runs on this host,
 * from /proc. A load generator and a responder sharing one host share its
 * cores, so the wall-clock rate may measure the generator. The handshakes
 * per CPU-second the responder itself used say what it sustains on one
 * core.
 */
#include <dirent.h>
#include <limits.h>
#include <math.h> /* NAN */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "load_internal.h"

/* Nanoseconds on a CPU of every thread of pid, from
 * /proc/PID/task/TID/schedstat (finer than the 10 ms ticks of
 * /proc/PID/stat, which matters for the short windows of --vs-plain). */
static bool schedstat_seconds(long pid, double *seconds)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/task", pid);
    DIR *d = opendir(dir);
    if (!d)
        return false;
    unsigned long long total = 0;
    bool any = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[400];
        snprintf(path, sizeof path, "%s/%.256s/schedstat", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        unsigned long long ns = 0;
        if (fscanf(f, "%llu", &ns) == 1) {
            total += ns;
            any = true;
        }
        fclose(f);
    }
    closedir(d);
    *seconds = (double)total / 1e9;
    return any;
}

/* The responder's workers are its child processes (responder
 * --workers): their CPU counts as the responder's. Children are found by
 * their parent in /proc/PID/stat (the "children" file needs a kernel
 * option). */
/* The parent of pid from /proc/PID/stat (0: unknown). */
static long parent_of(long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    long ppid = 0;
    return p && sscanf(p + 1, " %*c %ld", &ppid) == 1 ? ppid : 0;
}

static double children_schedstat_seconds(long pid, unsigned *count)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    double total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long child = strtol(e->d_name, &end, 10);
        if (*end || child <= 0 || child == pid)
            continue;
        double s = 0;
        if (parent_of(child) == pid && schedstat_seconds(child, &s)) {
            total += s;
            (*count)++;
        }
    }
    closedir(d);
    return total;
}

void load_cpu_sample(struct load_cpu *c, long pid)
{
    c->ok = false;
    c->processes = 1;
    if (pid <= 0)
        return;
    if (schedstat_seconds(pid, &c->seconds)) {
        c->seconds += children_schedstat_seconds(pid, &c->processes);
        c->ok = true;
        return;
    }
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return;
    long hz = sysconf(_SC_CLK_TCK);
    c->seconds = (double)(ut + st) / (double)(hz > 0 ? hz : 100);
    c->ok = true;
}

/* The inode of a UDP socket bound to port on this host, or 0. */
static unsigned long udp_port_inode(uint16_t port)
{
    static const char *const tables[] = {"/proc/net/udp", "/proc/net/udp6"};
    for (size_t t = 0; t < 2; t++) {
        FILE *f = fopen(tables[t], "r");
        if (!f)
            continue;
        char line[512];
        unsigned long found = 0;
        while (!found && fgets(line, sizeof line, f)) {
            char local[80];
            unsigned lport = 0;
            unsigned long inode = 0;
            if (sscanf(line, " %*u: %79[0-9A-Fa-f]:%x %*s %*x %*s %*s %*s %*u %*u %lu", local,
                       &lport, &inode) == 3 &&
                lport == port && inode)
                found = inode;
        }
        fclose(f);
        if (found)
            return found;
    }
    return 0;
}

/* The process (not this one) holding the socket with this inode, or 0. */
static long socket_owner(unsigned long inode)
{
    char want[48];
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    DIR *proc = opendir("/proc");
    if (!proc)
        return 0;
    long owner = 0;
    struct dirent *d;
    while (!owner && (d = readdir(proc))) {
        char *end;
        long pid = strtol(d->d_name, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid())
            continue;
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
        DIR *fds = opendir(dir);
        if (!fds)
            continue;
        struct dirent *e;
        while (!owner && (e = readdir(fds))) {
            char path[320], link[64];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            ssize_t n = readlink(path, link, sizeof link - 1);
            if (n > 0) {
                link[n] = '\0';
                if (!strcmp(link, want))
                    owner = pid;
            }
        }
        closedir(fds);
    }
    closedir(proc);
    return owner;
}

/* A worker of `responder --workers N` owns a socket of the port; the
 * responder is its parent, which runs the same program (its CPU then
 * counts all the workers'). Any other owner is the responder itself. */
static long responder_of_worker(long pid)
{
    long ppid = parent_of(pid);
    if (ppid <= 1)
        return pid;
    char path[64], buf[512];
    char exe[2][PATH_MAX];
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "/proc/%ld/exe", k ? ppid : pid);
        ssize_t l = readlink(path, exe[k], sizeof exe[k] - 1);
        if (l <= 0)
            return pid;
        exe[k][l] = '\0';
    }
    if (strcmp(exe[0], exe[1]))
        return pid;
    /* The same program: a worker only if the parent is a responder too. */
    snprintf(path, sizeof path, "/proc/%ld/cmdline", ppid);
    FILE *f = fopen(path, "r");
    if (!f)
        return pid;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    size_t first = strlen(buf);
    return first + 1 < n && !strcmp(buf + first + 1, "responder") ? ppid : pid;
}

/* The local process serving the load's port, or 0. Only a host name
 * that is one of this host's loopback addresses is looked up: a remote
 * responder on the same port number is not ours to measure. */
long load_responder_of_port(const struct load_run *r)
{
    if (strcmp(r->host, "localhost") && strncmp(r->host, "127.", 4) && strcmp(r->host, "::1"))
        return 0;
    unsigned long inode = udp_port_inode(r->port);
    long pid = inode ? socket_owner(inode) : 0;
    return pid > 0 ? responder_of_worker(pid) : 0;
}

double load_generator_cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        return NAN;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}
