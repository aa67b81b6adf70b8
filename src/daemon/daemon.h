/* Process plumbing of the responder daemon: logging, detaching, pid file. */
#ifndef CLI_DAEMON_H
#define CLI_DAEMON_H

#include <stdbool.h>
#include <stddef.h>

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
/* Replace the file at path with text (0644), through a new temporary
 * file in its directory, renamed: never through a symbolic link or a file
 * planted there, and only in a directory of the user running or root that
 * nobody else may write (unless sticky). Returns 0, or -1 with the option,
 * the path and the fix in why. */
int cli_file_publish(const char *option, const char *path, const char *text, char *why,
                     size_t why_cap);
/* The pid file (cli_file_publish; a stale file is replaced). */
int cli_pidfile_write(const char *path, char *why, size_t why_cap);

#endif
