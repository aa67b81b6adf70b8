#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool log_syslog;
static int log_threshold = LOG_INFO;
static const char *log_ident = "edhoc-cli";

void cli_log_open(const char *ident, bool use_syslog, int threshold)
{
    log_ident = ident;
    log_syslog = use_syslog;
    log_threshold = threshold;
    if (use_syslog)
        openlog(ident, LOG_PID, LOG_DAEMON);
}

int cli_log_threshold(void)
{
    return log_threshold;
}

void cli_log_line(void *user, int level, const char *line)
{
    (void)user;
    if (level > log_threshold)
        return;
    if (log_syslog) {
        syslog(level, "%s", line);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    static const char *names[] = {"emerg", "alert", "crit", "error", "warning", "notice", "info",
                                  "debug"};
    fprintf(stderr, "%s.%03ldZ %s[%d] %s: %s\n", when, ts.tv_nsec / 1000000, log_ident,
            (int)getpid(), names[level & 7], line);
}

void cli_log(int level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    cli_log_line(NULL, level, line);
}

int cli_daemonize(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0)
        _exit(0);
    if (setsid() < 0)
        return -1;
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0)
        _exit(0);
    umask(077);
    if (chdir("/") != 0)
        return -1;
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0)
        return -1;
    dup2(fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (fd > 2)
        close(fd);
    return 0;
}

int cli_pidfile_write(const char *path)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "%d\n", (int)getpid());
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}
