/* --keylog DIR (see keylog.h). */
#include "keylog.h"

#include "edhoc/crypto.h"
#include "path_check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file of the key log: appended to (rows of earlier runs stay, for a
 * capture of many runs), 0600 whatever the umask or an earlier mode, and
 * never opened through a symbolic link (O_NOFOLLOW: someone could point
 * it at a file of theirs and read the secrets). */
static int open_keylog_file(const char *dir, const char *name, char *why, size_t cap)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        snprintf(why, cap, "--keylog %s: the path is too long", dir);
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == ELOOP)
            snprintf(why, cap,
                     "--keylog %s: is a symbolic link; the key log is never written through one "
                     "(remove it, or give another directory)",
                     path);
        else
            snprintf(why, cap, "--keylog %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || fchmod(fd, 0600) != 0) {
        snprintf(why, cap, "--keylog %s: not a regular file of ours", path);
        close(fd);
        return -1;
    }
    if (edhoc_secret_file_check("--keylog", path, fd, "it holds session secrets", false, why,
                                cap)) {
        close(fd);
        return -1;
    }
    return fd;
}

int cli_keylog_open(struct cli_keylog *k, const char *dir, char *why, size_t cap)
{
    k->edhoc_fd = k->oscore_fd = -1;
    bool created = false;
    if (edhoc_secret_mkdirs(dir, &created) != 0) {
        snprintf(why, cap, "--keylog %s: %s", dir, strerror(errno));
        return -1;
    }
    if (edhoc_secret_dir_check("--keylog", dir, "it holds session secrets", created, why, cap))
        return -1;
    k->edhoc_fd = open_keylog_file(dir, CLI_KEYLOG_EDHOC_FILE, why, cap);
    if (k->edhoc_fd >= 0)
        k->oscore_fd = open_keylog_file(dir, CLI_KEYLOG_OSCORE_FILE, why, cap);
    if (k->oscore_fd < 0) {
        cli_keylog_close(k);
        return -1;
    }
    return 0;
}

/* A row in one write(): with O_APPEND the kernel puts it at the end as a
 * whole, so rows of two processes never mix. */
static int write_row(int fd, const char *row, size_t len)
{
    ssize_t n = write(fd, row, len);
    if (n == (ssize_t)len)
        return 0;
    if (n >= 0)
        errno = EIO;
    return -1;
}

int cli_keylog_write_edhoc(const struct cli_keylog *k, const struct edhoc_key_log *log)
{
    char row[8 * 2 * EDHOC_CRYPTO_MAX_HASH + 16];
    long n = edhoc_key_log_row(log, row, sizeof row);
    if (n < 0) {
        errno = EINVAL;
        return -1;
    }
    int rc = write_row(k->edhoc_fd, row, (size_t)n);
    edhoc_wipe(row, sizeof row);
    return rc;
}

int cli_keylog_write_oscore(const struct cli_keylog *k, const struct edhoc_oscore_params *p)
{
    char row[2 * (2 * EDHOC_MAX_CONN_ID + EDHOC_CRYPTO_MAX_KEY + EDHOC_CRYPTO_MAX_HASH) + 64];
    /* EDHOC leaves the ID Context empty (RFC 9528 Appendix A.1). */
    long n = edhoc_key_log_oscore_row(p, NULL, 0, row, sizeof row);
    if (n < 0) {
        errno = ENOTSUP;
        return -1;
    }
    int rc = write_row(k->oscore_fd, row, (size_t)n);
    edhoc_wipe(row, sizeof row);
    return rc;
}

int cli_keylog_write_oscore_responder(const struct cli_keylog *k,
                                      const struct edhoc_oscore_params *p)
{
    struct edhoc_oscore_params client = *p;
    memcpy(client.sender_id, p->recipient_id, p->recipient_id_len);
    client.sender_id_len = p->recipient_id_len;
    memcpy(client.recipient_id, p->sender_id, p->sender_id_len);
    client.recipient_id_len = p->sender_id_len;
    int rc = cli_keylog_write_oscore(k, &client);
    int saved = errno;
    edhoc_wipe(&client, sizeof client);
    errno = saved;
    return rc;
}

void cli_keylog_close(struct cli_keylog *k)
{
    if (k->edhoc_fd >= 0)
        close(k->edhoc_fd);
    if (k->oscore_fd >= 0)
        close(k->oscore_fd);
    k->edhoc_fd = k->oscore_fd = -1;
}
