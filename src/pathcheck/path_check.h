/*
 * Where secrets may live: one set of rules for every file and directory
 * that holds a key, a master secret or a session trace (--key,
 * --oscore-context, --state-dir and its database, --interop-log,
 * --trace-dir, the lock directory). Private to the library and the CLI,
 * not installed.
 *
 *  - the thing itself: not a symbolic link, of the expected type, owned
 *    by the user running (the effective uid; key files may also be
 *    root's), no access for group or others (directories 0700, files
 *    0600);
 *  - every directory above it (of its real path): not writable by group
 *    or others unless sticky (/tmp), since whoever can write there can
 *    put another file or directory in its place (OpenSSH's rule for
 *    private keys).
 *
 * Each function returns 0, or -1 with a one-line message in why naming
 * the path, what was found and the command that fixes it:
 *   "LABEL PATH: group or others can access it (mode 0777) and HOLDS:
 *    chmod 700 PATH, or give a new directory".
 * LABEL ("--state-dir", may be "") and HOLDS ("it holds OSCORE master
 * secrets") are the caller's words.
 */
#ifndef EDHOC_PATH_CHECK_H
#define EDHOC_PATH_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* A directory of secrets (see above). created: this process just made it,
 * so its mode is set to 0700 whatever the umask left. */
int edhoc_secret_dir_check(const char *label, const char *dir, const char *holds, bool created,
                           char *why, size_t cap);

/* A file of secrets, open on fd (fstat'ed: no race with its name), or
 * looked up by path (lstat) when fd < 0; a missing file (fd < 0) passes.
 * root_ok: a file owned by root is accepted too (key files an
 * administrator installed). */
int edhoc_secret_file_check(const char *label, const char *path, int fd, const char *holds,
                            bool root_ok, char *why, size_t cap);

/* The directories above path (its parent and up, through its real path):
 * none writable by group or others without the sticky bit. what: the kind
 * of thing someone could swap ("key", "state directory"). */
int edhoc_secret_parents_check(const char *label, const char *path, const char *what, char *why,
                               size_t cap);

/* The directory part of path into dir ("." when it has none, "/" for a
 * file at the root; trailing slashes dropped). 0, or -1 (ENAMETOOLONG). */
int edhoc_path_parent(const char *path, char *dir, size_t cap);

/* The directory that will hold path, for a file that is not a secret but
 * must not be swapped (a pid file, a ready file): a directory, owned by
 * the user running or root, not writable by group or others unless
 * sticky. what: the kind of thing someone could put there ("file"). The
 * message: "LABEL PATH: the directory DIR (mode 777) can be written by
 * others, who could put another file in its place; fix it with: chmod
 * go-w DIR". */
int edhoc_path_parent_check(const char *label, const char *path, const char *what, char *why,
                            size_t cap);

/* mkdir -p: every directory it creates gets mode 0700 whatever the umask
 * (existing ones are left as they are, for the checks to judge).
 * *created_last: the last component was created now. 0, or -1 with errno. */
int edhoc_secret_mkdirs(const char *dir, bool *created_last);

#endif
