#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "path_check.h"

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

/* The pid of the log lines, asked once per process: getpid() on every
 * line was a system call per handshake at the info level. A child of
 * fork() (workers, daemonizing) asks again. */
static pid_t log_pid;
static pthread_once_t log_pid_once = PTHREAD_ONCE_INIT;
static void log_pid_forget(void)
{
    log_pid = 0;
}
static void log_pid_register(void)
{
    pthread_atfork(NULL, NULL, log_pid_forget);
}

static pid_t log_pid_now(void)
{
    if (!log_pid) {
        pthread_once(&log_pid_once, log_pid_register);
        log_pid = getpid();
    }
    return log_pid;
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
    static const char *names[] = {"emerg",   "alert",  "crit", "error",
                                  "warning", "notice", "info", "debug"};
    /* One write(2) per line: the workers of --workers share standard
     * error, and a line written in pieces could be cut by another's. */
    char out[2048];
    int n = snprintf(out, sizeof out, "%s.%03ldZ %s[%d] %s: %s\n", when, ts.tv_nsec / 1000000,
                     log_ident, (int)log_pid_now(), names[level & 7], line);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof out ? (size_t)n : sizeof out - 1;
    if ((size_t)n >= sizeof out)
        out[len - 1] = '\n'; /* cut, but still a line */
    fflush(stderr);
    for (size_t off = 0; off < len;) {
        ssize_t w = write(STDERR_FILENO, out + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        off += (size_t)w;
    }
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

int cli_file_publish(const char *option, const char *path, const char *text, char *why,
                     size_t why_cap)
{
    /* Whoever may write the directory may put a file, or a symbolic link
     * to one of ours, where we write (path_check.h). */
    if (edhoc_path_parent_check(option, path, "file", why, why_cap) != 0)
        return -1;
    char dir[4096];
    edhoc_path_parent(path, dir, sizeof dir);
    /* A fixed temporary name (FILE.tmp) can be planted beforehand as a
     * symbolic link to a file of ours, which the write would then
     * overwrite; mkostemp's name is new and its O_CREAT|O_EXCL never
     * follows a link. rename() replaces a link at path itself, never
     * what it points to. */
    char tmp[4096 + 16];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp) {
        snprintf(why, why_cap, "%s %s: path too long", option, path);
        return -1;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_cap, "%s %s: cannot create a temporary file in %s: %s", option, path, dir,
                 strerror(errno));
        return -1;
    }
    /* Readable by all, as pid files are, whatever the umask (--daemon's
     * is 077). */
    int rc = fchmod(fd, 0644);
    size_t len = strlen(text), off = 0;
    while (rc == 0 && off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            rc = -1;
        else
            off += (size_t)w;
    }
    if (close(fd) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc) {
        snprintf(why, why_cap, "%s %s: %s", option, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int cli_pidfile_write(const char *path, char *why, size_t why_cap)
{
    char text[32];
    snprintf(text, sizeof text, "%d\n", (int)getpid());
    return cli_file_publish("--pidfile", path, text, why, why_cap);
}
