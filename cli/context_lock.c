/*
 * Host-wide locks of static OSCORE contexts (context_lock.h).
 */
#include "context_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oscore_seq.h"
#include "path_check.h"

int cli_lock_dir(char *out, size_t cap, char *why, size_t why_cap)
{
    const char *env = getenv("EDHOC_LOCK_DIR");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (env && env[0] == '/')
        n = snprintf(out, cap, "%s", env);
    else if (geteuid() == 0)
        n = snprintf(out, cap, "/run/edhoc-cli");
    else if (xdg && xdg[0] == '/')
        n = snprintf(out, cap, "%s/edhoc-cli", xdg);
    else
        n = snprintf(out, cap, "/tmp/edhoc-cli-%u", (unsigned)geteuid());
    if (n < 0 || (size_t)n >= cap) {
        snprintf(why, why_cap, "lock directory: name too long");
        return -1;
    }
    bool created = false;
    if (edhoc_secret_mkdirs(out, &created)) {
        snprintf(why, why_cap, "lock directory %s: %s", out, strerror(errno));
        return -1;
    }
    return edhoc_secret_dir_check("lock directory", out,
                                  "it decides which process serves a static OSCORE context",
                                  created, why, why_cap);
}

int cli_context_lock(const char *lock_dir, const struct oscore_config *cfg, const char *conf_path,
                     const char *state_dir, int *fd, char *why, size_t why_cap)
{
    *fd = -1;
    char id[33], path[PATH_MAX];
    if (cli_oscore_material_id(cfg, id) ||
        (size_t)snprintf(path, sizeof path, "%s/%s.lock", lock_dir, id) >= sizeof path) {
        snprintf(why, why_cap, "--oscore-context %s: cannot name its lock", conf_path);
        return -1;
    }
    int f = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f < 0 ||
        edhoc_secret_file_check("", path, f, "it locks an OSCORE context", false, why, why_cap)) {
        if (f < 0)
            snprintf(why, why_cap, "%s: %s", path, strerror(errno));
        else
            close(f);
        return -1;
    }
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char holder[1024] = "";
        ssize_t r = e == EWOULDBLOCK ? pread(f, holder, sizeof holder - 1, 0) : -1;
        holder[r > 0 ? r : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        close(f);
        if (e != EWOULDBLOCK) {
            snprintf(why, why_cap, "%s: cannot lock: %s", path, strerror(e));
            return -1;
        }
        snprintf(why, why_cap,
                 "--oscore-context %s: its keying material is served by another process on this "
                 "host (%s; lock %s): two responders with one static context repeat its nonces "
                 "(RFC 8613 Section 7.5); stop the other, or give each a context of its own",
                 conf_path, holder[0] ? holder : "holder unknown", path);
        return -1;
    }
    char line[PATH_MAX * 2 + 64];
    int n = snprintf(line, sizeof line, "pid %ld, --oscore-context %s, --state-dir %s\n",
                     (long)getpid(), conf_path, state_dir ? state_dir : "none");
    if (n > 0 && (size_t)n < sizeof line) {
        if (ftruncate(f, 0) != 0 || pwrite(f, line, (size_t)n, 0) != n) {
            /* The lock holds all the same; only the name of the holder is
             * lost for a refusal. */
        }
    }
    *fd = f;
    return 0;
}
