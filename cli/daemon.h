/* Process plumbing of the responder daemon: logging, detaching, pid file. */
#ifndef CLI_DAEMON_H
#define CLI_DAEMON_H

#include <stdbool.h>

/* Levels as syslog's (3 error .. 7 debug). Lines above the threshold are
 * dropped. */
void cli_log_open(const char *ident, bool use_syslog, int threshold);
/* The highest syslog level printed (LOG_INFO by default, -q / -v move it). */
int cli_log_threshold(void);
void cli_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_log_line(void *user, int level, const char *line);

/* Detach (double fork, setsid, stdio to /dev/null). Returns 0 in the
 * daemon, -1 on failure (errno set); the parent exits inside. */
int cli_daemonize(void);
/* Write the pid file (O_EXCL not used: a stale file is replaced).
 * Returns 0 or -1 with errno. */
int cli_pidfile_write(const char *path);

#endif
