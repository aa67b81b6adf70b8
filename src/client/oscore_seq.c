/*
 * Durable sender sequence numbers of client-side OSCORE contexts (see
 * oscore_seq.h for why and the file format).
 *
 * Layout: STATE_DIR/oscore-seq/<id>.seq holds the next free sequence number
 * of one keying material, <id>.lock serialises the runs that use it; a
 * conf's companion CONF.seq and a user's seq file are locked through
 * CONF.seq.lock and SEQFILE.lock beside them. Every file is replaced by
 * rename after an fsync, so a crash leaves either the old or the new
 * number, never a torn one; the locks live on files of their own because
 * a rename would move a lock away with the old inode.
 */
#include "oscore_seq.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edhoc/crypto.h"
#include "path_check.h"

/* One file that records how far a keying material's sequence numbers
 * went, and the lock that serialises the runs updating it. */
struct seq_record {
    char path[PATH_MAX];
    int lock_fd;
};

/* Every record a run knows of for its keying material: the state
 * directory's (named by the material), the conf's companion CONF.seq
 * (libcoap's `-E CONF,CONF.seq` reads it, and the initiator's hint
 * names it), a seq file the user named. All are read and the highest
 * wins; all are written before any number is used. */
#define SEQ_MAX_RECORDS 3

struct cli_seq_store {
    struct seq_record rec[SEQ_MAX_RECORDS];
    size_t n;
    uint64_t reserved_end; /* the mark this run last stored (0: none) */
};

static int failf(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(char *why, size_t cap, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int cli_state_dir(const char *explicit_dir, char *out, size_t cap, char *why, size_t why_cap)
{
    if (!out || cap < 2)
        return failf(why, why_cap, "no room for the state directory's name");
    out[0] = '\0';
    int n;
    const char *from;
    if (explicit_dir) {
        if (!strcmp(explicit_dir, "none"))
            return 1;
        from = "--state-dir";
        if (explicit_dir[0] == '/' || !getcwd(out, cap))
            n = snprintf(out, cap, "%s", explicit_dir);
        else {
            size_t l = strlen(out);
            n = (int)l + snprintf(out + l, cap - l, "/%s", explicit_dir);
        }
    } else {
        const char *sd = getenv("STATE_DIRECTORY");
        const char *xdg = getenv("XDG_STATE_HOME");
        const char *home = getenv("HOME");
        if (sd && sd[0] == '/') {
            /* systemd may list several, separated by ':'. */
            size_t l = strcspn(sd, ":");
            n = snprintf(out, cap, "%.*s", (int)l, sd);
            from = "$STATE_DIRECTORY";
        } else if (xdg && xdg[0] == '/') {
            n = snprintf(out, cap, "%s/edhoc-cli", xdg);
            from = "$XDG_STATE_HOME";
        } else if (home && home[0] == '/') {
            n = snprintf(out, cap, "%s/.local/state/edhoc-cli", home);
            from = "$HOME";
        } else {
            return failf(why, why_cap,
                         "no state directory: none of $STATE_DIRECTORY, $XDG_STATE_HOME and $HOME "
                         "is set to an absolute path; give --state-dir DIR");
        }
    }
    if (n < 0 || (size_t)n >= cap)
        return failf(why, why_cap, "state directory name too long");
    while (n > 1 && out[n - 1] == '/')
        out[--n] = '\0';
    /* The rules of a responder's --state-dir (path_check.h): the client's
     * sequence-number records decide its nonces too. */
    bool created = false;
    if (edhoc_secret_mkdirs(out, &created))
        return failf(why, why_cap, "state directory %s (from %s): %s", out, from, strerror(errno));
    if (edhoc_secret_dir_check(explicit_dir ? "--state-dir" : "state directory", out,
                               "it holds OSCORE secrets and sequence numbers", created, why,
                               why_cap))
        return -1;
    return 0;
}

int cli_oscore_context_arg(const char *arg, char *conf, size_t conf_cap, char *seq, size_t seq_cap)
{
    struct stat st;
    const char *comma = strrchr(arg, ',');
    if (stat(arg, &st) == 0 || !comma) {
        if (snprintf(conf, conf_cap, "%s", arg) >= (int)conf_cap)
            return -1;
        if (seq_cap)
            seq[0] = '\0';
        return 0;
    }
    size_t cl = (size_t)(comma - arg);
    if (cl >= conf_cap || snprintf(seq, seq_cap, "%s", comma + 1) >= (int)seq_cap)
        return -1;
    memcpy(conf, arg, cl);
    conf[cl] = '\0';
    return 0;
}

/* The keying material that fixes the sender key and the nonces
 * (RFC 8613 Section 3.2.1 and 5.2: master secret and salt, sender ID, ID
 * Context, AEAD and HKDF); the recipient ID plays no part in them. */
static int material_id(const struct oscore_config *cfg, char hexid[33])
{
    uint8_t buf[512];
    size_t n = 0;
    static const char label[] = "edhoc-cli OSCORE sender sequence numbers v1";
    memcpy(buf, label, sizeof label);
    n += sizeof label;
    buf[n++] = (uint8_t)((cfg->aead_alg >> 8) & 0xff);
    buf[n++] = (uint8_t)(cfg->aead_alg & 0xff);
    buf[n++] = (uint8_t)((cfg->hkdf_alg >> 8) & 0xff);
    buf[n++] = (uint8_t)(cfg->hkdf_alg & 0xff);
    const struct {
        bool present;
        const uint8_t *p;
        size_t len;
    } parts[] = {
        {true, cfg->master_secret, cfg->master_secret_len},
        {true, cfg->master_salt, cfg->has_master_salt ? cfg->master_salt_len : 0},
        {cfg->has_id_context, cfg->id_context, cfg->id_context_len},
        {true, cfg->sender_id, cfg->sender_id_len},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (n + 2 + parts[i].len > sizeof buf)
            return -1;
        buf[n++] = parts[i].present;
        buf[n++] = (uint8_t)parts[i].len;
        memcpy(buf + n, parts[i].p, parts[i].len);
        n += parts[i].len;
    }
    uint8_t h[64];
    int rc = edhoc_crypto_openssl()->hash(EDHOC_COSE_SHA256, buf, n, h);
    edhoc_wipe(buf, sizeof buf);
    if (rc)
        return -1;
    for (size_t i = 0; i < 16; i++)
        snprintf(hexid + 2 * i, 3, "%02x", h[i]);
    return 0;
}

/* A sequence-number file: missing or empty is 0; anything but one decimal
 * number (and whitespace) is refused, since guessing could reuse nonces. */
static int read_number(const char *path, uint64_t *out, char *why, size_t cap)
{
    *out = 0;
    if (!path[0])
        return 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return failf(why, cap, "%s: %s", path, strerror(errno));
    }
    char text[64];
    ssize_t r = read(fd, text, sizeof text - 1);
    close(fd);
    if (r < 0)
        return failf(why, cap, "%s: %s", path, strerror(errno));
    text[r] = '\0';
    const char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (!*p)
        return 0;
    uint64_t v = 0;
    const char *digits = p;
    while (*p >= '0' && *p <= '9') {
        if (v > (UINT64_MAX - 9) / 10)
            return failf(why, cap, "%s: sequence number too large", path);
        v = v * 10 + (uint64_t)(*p - '0');
        p++;
    }
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (p == digits || *p || r == (ssize_t)sizeof text - 1)
        return failf(why, cap,
                     "%s: not a sequence-number file (one decimal number expected); refusing to "
                     "guess where the context stands",
                     path);
    *out = v;
    return 0;
}

/* Replace path's content with the number, durably: temporary file, fsync,
 * rename, fsync of the directory. */
static int write_number(const char *path, uint64_t v, char *why, size_t cap)
{
    if (!path[0])
        return 0;
    char tmp[PATH_MAX + 16];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return failf(why, cap, "%s: name too long", path);
    /* A new file of our own: whatever lies under the temporary name
     * (a leftover of a killed run, a planted link) is not written into. */
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return failf(why, cap, "%s: %s", tmp, strerror(errno));
    char text[32];
    int len = snprintf(text, sizeof text, "%llu\n", (unsigned long long)v);
    bool ok = write(fd, text, (size_t)len) == len && fsync(fd) == 0;
    int saved = errno;
    close(fd);
    if (!ok || rename(tmp, path)) {
        if (ok)
            saved = errno;
        unlink(tmp);
        return failf(why, cap, "%s: %s", path, strerror(saved));
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* Add the record at path, locked through lock_path (opened, created if
 * need be, never through a symbolic link). A record whose lock is the
 * same file as one already held is the same record under another
 * spelling (CONF,./CONF.seq): taking a second flock on it from this
 * process would wait for ourselves. optional: when the directory
 * refuses the lock file and the record does not exist, leave it out
 * (returns 1) rather than fail; a record that exists is never left out,
 * since a stale one would later be read as the truth. */
static int add_record(struct cli_seq_store *s, const char *path, const char *lock_path,
                      bool optional, char *why, size_t cap)
{
    int fd = open(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int saved = errno;
        struct stat st;
        if (optional && (saved == EACCES || saved == EROFS || saved == EPERM) && lstat(path, &st) &&
            errno == ENOENT)
            return 1;
        if (optional && (saved == EACCES || saved == EROFS || saved == EPERM))
            return failf(why, cap,
                         "%s exists but cannot be kept in step (%s: %s): a later run reading it "
                         "would reuse sequence numbers; make its directory writable or remove it",
                         path, lock_path, strerror(saved));
        return failf(why, cap, "%s: %s", lock_path, strerror(saved));
    }
    struct stat st;
    if (fstat(fd, &st)) {
        close(fd);
        return failf(why, cap, "%s: %s", lock_path, strerror(errno));
    }
    for (size_t i = 0; i < s->n; i++) {
        struct stat o;
        if (fstat(s->rec[i].lock_fd, &o) == 0 && o.st_dev == st.st_dev && o.st_ino == st.st_ino) {
            close(fd);
            return 0;
        }
    }
    if (s->n == SEQ_MAX_RECORDS) {
        close(fd);
        return failf(why, cap, "too many sequence-number files");
    }
    struct seq_record *r = &s->rec[s->n];
    if (snprintf(r->path, sizeof r->path, "%s", path) >= (int)sizeof r->path) {
        close(fd);
        return failf(why, cap, "sequence-number file name too long");
    }
    r->lock_fd = fd;
    s->n++;
    return 0;
}

/* A seq file and its lock FILE.lock beside it. */
static int add_file_record(struct cli_seq_store *s, const char *path, bool optional, char *why,
                           size_t cap)
{
    char lock_path[PATH_MAX];
    if (snprintf(lock_path, sizeof lock_path, "%s.lock", path) >= (int)sizeof lock_path)
        return failf(why, cap, "sequence-number file name too long");
    return add_record(s, path, lock_path, optional, why, cap);
}

int cli_seq_open(struct cli_seq_store **out, const char *state_dir, const char *conf_path,
                 const char *seq_file, const struct oscore_config *cfg, char *why, size_t cap)
{
    *out = NULL;
    struct cli_seq_store *s = calloc(1, sizeof *s);
    if (!s)
        return failf(why, cap, "out of memory");
    if (state_dir && state_dir[0]) {
        char id[33];
        char dir[PATH_MAX], path[PATH_MAX], lock_path[PATH_MAX];
        if (material_id(cfg, id)) {
            failf(why, cap, "cannot name the context's sequence-number file");
            goto fail;
        }
        if (snprintf(dir, sizeof dir, "%s/oscore-seq", state_dir) >= (int)sizeof dir ||
            snprintf(path, sizeof path, "%s/%s.seq", dir, id) >= (int)sizeof path ||
            snprintf(lock_path, sizeof lock_path, "%s/%s.lock", dir, id) >= (int)sizeof lock_path) {
            failf(why, cap, "sequence-number file name too long");
            goto fail;
        }
        if (mkdir(dir, 0700) && errno != EEXIST) {
            failf(why, cap, "%s: %s", dir, strerror(errno));
            goto fail;
        }
        if (add_record(s, path, lock_path, false, why, cap))
            goto fail;
    }
    if (seq_file && seq_file[0] && add_file_record(s, seq_file, false, why, cap))
        goto fail;
    if (conf_path && conf_path[0]) {
        char companion[PATH_MAX];
        if (snprintf(companion, sizeof companion, "%s.seq", conf_path) >= (int)sizeof companion) {
            failf(why, cap, "sequence-number file name too long");
            goto fail;
        }
        if (add_file_record(s, companion, true, why, cap) < 0)
            goto fail;
    }
    if (!s->n) {
        failf(why, cap,
              "no place to record the sequence numbers used (no state directory, no seq file, "
              "and %s.seq cannot be created): a later run would repeat nonces (RFC 8613 "
              "Section 7.2)",
              conf_path && conf_path[0] ? conf_path : "CONF");
        goto fail;
    }
    *out = s;
    return 0;
fail:
    cli_seq_close(s);
    return -1;
}

void cli_seq_close(struct cli_seq_store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        close(s->rec[i].lock_fd);
    free(s);
}

/* Which lock comes first: by file identity, so that two runs holding
 * overlapping sets of records (one with --state-dir A, one with B, both
 * with CONF.seq) take the shared ones in the same order and cannot
 * deadlock. */
static int lock_order(const void *a, const void *b)
{
    struct stat x, y;
    fstat(((const struct seq_record *)a)->lock_fd, &x);
    fstat(((const struct seq_record *)b)->lock_fd, &y);
    if (x.st_dev != y.st_dev)
        return x.st_dev < y.st_dev ? -1 : 1;
    return x.st_ino < y.st_ino ? -1 : x.st_ino > y.st_ino;
}

static void unlock(struct cli_seq_store *s)
{
    for (size_t i = s->n; i-- > 0;)
        flock(s->rec[i].lock_fd, LOCK_UN);
}

static int lock(struct cli_seq_store *s, char *why, size_t cap)
{
    qsort(s->rec, s->n, sizeof s->rec[0], lock_order);
    for (size_t i = 0; i < s->n; i++) {
        while (flock(s->rec[i].lock_fd, LOCK_EX)) {
            if (errno != EINTR) {
                int saved = errno;
                for (size_t k = i; k-- > 0;)
                    flock(s->rec[k].lock_fd, LOCK_UN);
                return failf(why, cap, "cannot lock %s: %s", s->rec[i].path, strerror(saved));
            }
        }
    }
    return 0;
}

/* Under the lock: the highest mark of all records. */
static int current_mark(struct cli_seq_store *s, uint64_t *mark, char *why, size_t cap)
{
    *mark = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t v;
        if (read_number(s->rec[i].path, &v, why, cap))
            return -1;
        if (v > *mark)
            *mark = v;
    }
    return 0;
}

static int store_mark(struct cli_seq_store *s, uint64_t mark, char *why, size_t cap)
{
    for (size_t i = 0; i < s->n; i++) {
        if (write_number(s->rec[i].path, mark, why, cap))
            return -1;
    }
    return 0;
}

int cli_seq_peek(struct cli_seq_store *s, uint64_t *next, char *why, size_t cap)
{
    if (lock(s, why, cap))
        return -1;
    int rc = current_mark(s, next, why, cap);
    unlock(s);
    return rc;
}

/* Reserve [first, first + count) with first >= max(next, stored mark). */
static int reserve(struct cli_seq_store *s, uint64_t next, uint64_t count, uint64_t *first,
                   char *why, size_t cap)
{
    if (lock(s, why, cap))
        return -1;
    uint64_t mark;
    int rc = current_mark(s, &mark, why, cap);
    if (!rc) {
        uint64_t start = mark > next ? mark : next;
        uint64_t end = start + count;
        if (start > OSCORE_SSN_MAX + 1 || end > OSCORE_SSN_MAX + 1)
            end = OSCORE_SSN_MAX + 1;
        rc = store_mark(s, end, why, cap);
        *first = start;
        if (!rc)
            s->reserved_end = end;
    }
    unlock(s);
    return rc;
}

static int reserve_cb(void *user, uint64_t next, uint64_t count, uint64_t *first)
{
    char why[256];
    struct cli_seq_store *s = user;
    if (reserve(s, next, count, first, why, sizeof why)) {
        fprintf(stderr, "edhoc-cli: cannot reserve OSCORE sequence numbers: %s\n", why);
        return -1;
    }
    return 0;
}

int cli_seq_attach(struct cli_seq_store *s, struct oscore_context *ctx, uint32_t batch,
                   uint64_t at_least, char *why, size_t cap)
{
    if (!batch)
        batch = 1;
    if (lock(s, why, cap))
        return -1;
    uint64_t mark;
    int rc = current_mark(s, &mark, why, cap);
    if (!rc && at_least && at_least < mark) {
        failf(why, cap,
              "sequence number %llu may already have been used with this context (every number "
              "below %llu is taken): nonces must never repeat (RFC 8613 Section 7.2)",
              (unsigned long long)at_least, (unsigned long long)mark);
        unlock(s);
        return -2;
    }
    if (!rc) {
        /* Nothing is reserved here: the first protect reserves, under the
         * lock, from wherever the stored mark then stands. */
        uint64_t first = mark > at_least ? mark : at_least;
        if (first > OSCORE_SSN_MAX) {
            failf(why, cap, "the context has used every sequence number (2^40): derive a new one");
            unlock(s);
            return -1;
        }
        rc = oscore_context_set_ssn(ctx, first);
        if (!rc)
            rc = oscore_context_set_reservation(ctx, reserve_cb, s, batch);
        if (rc)
            failf(why, cap, "%s", oscore_strerror(rc));
    }
    unlock(s);
    return rc ? -1 : 0;
}

int cli_seq_release(struct cli_seq_store *s, uint64_t next, char *why, size_t cap)
{
    if (!s || !s->reserved_end || next >= s->reserved_end)
        return 0;
    if (lock(s, why, cap))
        return -1;
    uint64_t mark;
    int rc = current_mark(s, &mark, why, cap);
    /* Only when nobody reserved after us: the numbers from next on were
     * then never handed to anyone. */
    if (!rc && mark == s->reserved_end) {
        rc = store_mark(s, next, why, cap);
        if (!rc)
            s->reserved_end = next;
    }
    unlock(s);
    return rc;
}

int cli_seq_note_used(const char *state_dir, const char *conf_path, const char *seq_file,
                      const struct oscore_config *cfg, uint64_t next, char *why, size_t cap)
{
    struct cli_seq_store *s;
    if (cli_seq_open(&s, state_dir, conf_path, seq_file, cfg, why, cap))
        return -1;
    int rc = lock(s, why, cap);
    if (!rc) {
        uint64_t mark;
        rc = current_mark(s, &mark, why, cap);
        if (!rc)
            rc = store_mark(s, mark > next ? mark : next, why, cap);
        unlock(s);
    }
    cli_seq_close(s);
    return rc;
}

int cli_oscore_material_id(const struct oscore_config *cfg, char hexid[33])
{
    return material_id(cfg, hexid);
}
