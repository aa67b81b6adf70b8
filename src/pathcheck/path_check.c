/*
 * The rules for files and directories holding secrets (path_check.h).
 */
#include "path_check.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t cap, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return -1;
}

#define LABEL(l) (l) ? (l) : "", (l) && (l)[0] ? " " : ""

int edhoc_secret_mkdirs(const char *dir, bool *created_last)
{
    char buf[PATH_MAX];
    size_t n = strlen(dir);
    if (created_last)
        *created_last = false;
    if (n == 0 || n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0700) == 0) {
            /* The umask may have taken bits away; 0700 is what we mean. */
            if (chmod(buf, 0700) != 0)
                return -1;
            if (created_last)
                *created_last = saved == '\0';
        } else if (errno != EEXIST) {
            return -1;
        }
        buf[i] = saved;
    }
    return 0;
}

int edhoc_path_parent(const char *path, char *dir, size_t cap)
{
    if (snprintf(dir, cap, "%s", path) >= (int)cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, cap, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    return 0;
}

int edhoc_path_parent_check(const char *label, const char *path, const char *what, char *why,
                            size_t cap)
{
    char dir[PATH_MAX];
    if (edhoc_path_parent(path, dir, sizeof dir) != 0)
        return fail(why, cap, "%s%s%s: path too long", LABEL(label), path);
    struct stat st;
    if (stat(dir, &st) != 0)
        return fail(why, cap, "%s%s%s: directory %s: %s", LABEL(label), path, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return fail(why, cap, "%s%s%s: %s is not a directory", LABEL(label), path, dir);
    uid_t me = geteuid();
    if (st.st_uid != me && st.st_uid != 0)
        return fail(why, cap,
                    "%s%s%s: the directory %s is owned by uid %u, not by the user running (uid "
                    "%u) or root, who could replace the %s; give a directory of your own",
                    LABEL(label), path, dir, (unsigned)st.st_uid, (unsigned)me, what);
    if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
        return fail(why, cap,
                    "%s%s%s: the directory %s (mode %03o) can be written by others, who could "
                    "put another %s in its place; fix it with: chmod go-w %s",
                    LABEL(label), path, dir, (unsigned)(st.st_mode & 0777), what, dir);
    return 0;
}

int edhoc_secret_parents_check(const char *label, const char *path, const char *what, char *why,
                               size_t cap)
{
    char parent[PATH_MAX], real[PATH_MAX];
    if (edhoc_path_parent(path, parent, sizeof parent) != 0)
        return fail(why, cap, "%s%s%s: path too long", LABEL(label), path);
    /* The directories that decide are the real ones: /var/run may be a
     * link to /run. */
    if (!realpath(parent, real))
        return fail(why, cap, "%s%s%s: cannot resolve its directory %s: %s", LABEL(label), path,
                    parent, strerror(errno));
    for (;;) {
        struct stat st;
        if (stat(real, &st) != 0)
            return fail(why, cap, "%s%s%s: %s: %s", LABEL(label), path, real, strerror(errno));
        if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
            return fail(why, cap,
                        "%s%s%s: in a directory others can write (%s, mode %04o): they could "
                        "put another %s in its place; fix it with: chmod go-w %s",
                        LABEL(label), path, real, (unsigned)(st.st_mode & 07777), what, real);
        char *s = strrchr(real, '/');
        if (!s || s == real) {
            if (real[1] == '\0')
                break;
            real[1] = '\0';
            continue;
        }
        *s = '\0';
    }
    return 0;
}

int edhoc_secret_dir_check(const char *label, const char *dir, const char *holds, bool created,
                           char *why, size_t cap)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return fail(why, cap, "%s%s%s: %s", LABEL(label), dir, strerror(errno));
    if (S_ISLNK(st.st_mode))
        return fail(why, cap,
                    "%s%s%s: is a symbolic link; %s: give the directory itself, not a link "
                    "to it",
                    LABEL(label), dir, holds);
    if (!S_ISDIR(st.st_mode))
        return fail(why, cap, "%s%s%s: not a directory", LABEL(label), dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return fail(why, cap, "%s%s%s: %s", LABEL(label), dir,
                    e == ELOOP ? "is a symbolic link" : strerror(e));
    }
    if (created && fchmod(fd, 0700) == 0)
        st.st_mode = (st.st_mode & ~(mode_t)07777) | 0700;
    close(fd);
    uid_t me = geteuid();
    if (st.st_uid != me)
        return fail(why, cap,
                    "%s%s%s: owned by uid %u, not by the user running (uid %u), and %s: "
                    "chown %u %s, or give a directory of your own",
                    LABEL(label), dir, (unsigned)st.st_uid, (unsigned)me, holds, (unsigned)me, dir);
    if (st.st_mode & 077)
        return fail(why, cap,
                    "%s%s%s: group or others can access it (mode %04o) and %s: chmod 700 %s, "
                    "or give a new directory",
                    LABEL(label), dir, (unsigned)(st.st_mode & 07777), holds, dir);
    return edhoc_secret_parents_check(label, dir, "directory", why, cap);
}

int edhoc_secret_file_check(const char *label, const char *path, int fd, const char *holds,
                            bool root_ok, char *why, size_t cap)
{
    struct stat st;
    if (fd >= 0 ? fstat(fd, &st) != 0 : lstat(path, &st) != 0) {
        if (fd < 0 && errno == ENOENT)
            return 0;
        return fail(why, cap, "%s%s%s: %s", LABEL(label), path, strerror(errno));
    }
    if (S_ISLNK(st.st_mode))
        return fail(why, cap, "%s%s%s: is a symbolic link; %s: refusing to follow it", LABEL(label),
                    path, holds);
    if (!S_ISREG(st.st_mode))
        return fail(why, cap, "%s%s%s: not a regular file", LABEL(label), path);
    uid_t me = geteuid();
    if (st.st_uid != me && !(root_ok && st.st_uid == 0))
        return fail(why, cap,
                    "%s%s%s: owned by uid %u, not by the user running (uid %u), and %s: "
                    "chown %u %s",
                    LABEL(label), path, (unsigned)st.st_uid, (unsigned)me, holds, (unsigned)me,
                    path);
    if (st.st_mode & 077)
        return fail(why, cap,
                    "%s%s%s: group or others can access it (mode %04o) and %s: chmod 600 %s",
                    LABEL(label), path, (unsigned)(st.st_mode & 07777), holds, path);
    return 0;
}
