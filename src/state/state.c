/*
 * Durable responder state in SQLite.
 *
 * Layout: DIR/edhoc-cli-state.sqlite, a WAL-mode database with
 *   PRAGMA application_id = EDHOC_STATE_APPLICATION_ID ("EDHC")
 *   PRAGMA user_version   = EDHOC_STATE_SCHEMA_VERSION
 *   meta(key, value)      magic string and schema version, for humans and
 *                         for a second opinion on the two pragmas
 *   peer(...)             one row per OSCORE context, keyed by
 *                         (recipient ID, has ID Context, ID Context), with
 *                         when it was last used (indexed: the responder
 *                         keeps the most recently used and expires idle
 *                         ones)
 *
 * Version 1 keyed peer by recipient ID alone; open_read_write() migrates
 * such a file to the current version in one transaction (see migrate_v1
 * for the rule, and edhoc/state.h). Version 2 had no last_used column;
 * migrate_v2 adds it, set from each row's creation time.
 *
 * Opening never writes to a file before it has been recognised: the header
 * is read by hand, then a read-only SQLite connection checks the ids and
 * runs quick_check, and only then is the read-write connection opened. A
 * new database is built under a temporary name and renamed into place, so
 * the state file either does not exist or is a complete, initialised
 * database -- an empty or half-written file is never ours.
 */
#include "edhoc/state.h"
#include "state_remote.h"
#include "path_check.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <sqlite3.h>

#define STATE_MAGIC "edhoc-cli state"
#define SQLITE_HEADER_MAGIC "SQLite format 3"  /* 16 bytes with its NUL */
#define SQLITE_HEADER_LEN 100

struct edhoc_state_db {
    sqlite3 *sql;
    sqlite3_stmt *st_put;
    sqlite3_stmt *st_store_ssn;
    sqlite3_stmt *st_exists;
    sqlite3_stmt *st_get;
    sqlite3_stmt *st_all;
    sqlite3_stmt *st_delete;
    sqlite3_stmt *st_count;
    sqlite3_stmt *st_begin;
    sqlite3_stmt *st_commit;
    sqlite3_stmt *st_rollback;
    sqlite3_stmt *st_touch;
    sqlite3_stmt *st_count_edhoc;
    sqlite3_stmt *st_nth_used;
    sqlite3_stmt *st_prune_expired;
    sqlite3_stmt *st_prune_ties;
    struct state_remote *remote; /* calls go to a writer process (edhoc_state_connect) */
    int dir_fd;  /* holds the flock that keeps a second process out */
    /* The database file's own flock: a hard link of the file in another
     * directory is the same inode, so the same lock. Closed only after
     * SQLite's connection: closing any descriptor of the file drops the
     * process's POSIX locks on it, SQLite's included. */
    int file_fd;
    pid_t pid;   /* process that opened sql */
    char path[PATH_MAX];
    /* The mark file (DIR/EDHOC_STATE_MARK_FILE, see "A store that went
     * backwards" below): the generation it holds, the ceiling above every
     * mark ever stored, and the lowest mark a new static row starts at. */
    char mark_path[PATH_MAX];
    uint64_t generation, ceiling, floor;
    bool generation_unwritten; /* the database does not hold `generation` yet */
    bool bump_failed;          /* a checkpoint's mark file update failed */
    char recovery[2 * PATH_MAX + 768]; /* what open detected and did, or "" */
    unsigned fork_gen;         /* state_fork_generation when sql was opened */
    struct group_commit *gc;   /* the writer thread, once edhoc_state_group_commit */
    unsigned gc_restart_rows, gc_restart_ms; /* group commit to resume after a fork */
};

/* ---- Group commit (the writer thread; defined at the end) ---- */
enum gc_op { GC_PUT = 1, GC_SSN, GC_DELETE, GC_TOUCH };
static int gc_put(struct edhoc_state_db *db, const struct edhoc_state_peer *p);
static uint64_t gc_key_item(struct edhoc_state_db *db, enum gc_op op, const uint8_t *idc,
                            size_t idc_len, const uint8_t *rid, size_t rid_len, uint64_t mark,
                            int64_t last_used, int *result);
static int gc_wait_result(struct edhoc_state_db *db, uint64_t ticket, int *result);
static void gc_read_begin(struct edhoc_state_db *db);
static int gc_begin(struct edhoc_state_db *db);
static int gc_end(struct edhoc_state_db *db);
static void gc_read_end(struct edhoc_state_db *db);
static void gc_stop(struct edhoc_state_db *db);
static void gc_forget_after_fork(struct edhoc_state_db *db);
static int apply_put(struct edhoc_state_db *db, const struct edhoc_state_peer *p);
static int apply_store_ssn(struct edhoc_state_db *db, const uint8_t *id_context,
                           size_t id_context_len, const uint8_t *recipient_id,
                           size_t recipient_id_len, uint64_t mark);
static int apply_delete(struct edhoc_state_db *db, const uint8_t *id_context,
                        size_t id_context_len, const uint8_t *recipient_id,
                        size_t recipient_id_len);
static int apply_touch(struct edhoc_state_db *db, const uint8_t *id_context,
                       size_t id_context_len, const uint8_t *recipient_id,
                       size_t recipient_id_len, int64_t last_used);

/* Bumped in every child of fork() (pthread_atfork): a handle compares it
 * with the generation it opened its connection in, instead of calling
 * getpid() on every call. */
static unsigned state_fork_generation;
static void state_count_fork(void)
{
    state_fork_generation++;
}
static pthread_once_t state_atfork_once = PTHREAD_ONCE_INIT;
static void state_register_atfork(void)
{
    pthread_atfork(NULL, NULL, state_count_fork);
}

/* ---- small helpers ---- */

static void set_why(char *why, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_why(char *why, size_t cap, const char *fmt, ...)
{
    if (why == NULL || cap == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

static void wipe(void *p, size_t n)
{
    /* The first growth of the queue wipes an empty one (NULL, 0). */
    if (p && n)
        explicit_bzero(p, n);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Map an SQLite result to our error space. The extended codes are masked:
 * only the primary class matters for the caller. */
static int map_sqlite_error(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_FORMAT:
        return EDHOC_STATE_ERR_CORRUPT;
    default:
        return EDHOC_STATE_ERR_IO;
    }
}

static const char *sqlite_problem(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return "database is locked by another process";
    default:
        return sqlite3_errstr(rc);
    }
}

/* Percent-encode a path for a file: URI (only what RFC 3986 lets through
 * unescaped in a path stays as is). Returns false when it does not fit. */
static bool uri_escape_path(const char *path, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || strchr("/-._~", *p) != NULL;
        if (plain) {
            if (o + 1 >= cap)
                return false;
            out[o++] = (char)*p;
        } else {
            if (o + 3 >= cap)
                return false;
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = '\0';
    return true;
}

/* What the state directory and database hold, in the refusals. */
#define STATE_HOLDS "it holds OSCORE secrets and sequence numbers"

/* mkdir -p with mode 0700 for every directory we create (systemd's
 * StateDirectory= may have made some already); then the rules of
 * path_check.h: not a link, ours, 0700, nobody else can swap it. */
static int make_dirs(const char *dir, char *why, size_t cap)
{
    if (dir[0] == '\0' || strlen(dir) >= PATH_MAX) {
        set_why(why, cap, "%s: state directory path is empty or too long", dir);
        return EDHOC_STATE_ERR_ARG;
    }
    bool created = false;
    if (edhoc_secret_mkdirs(dir, &created) != 0) {
        set_why(why, cap, "%s: cannot create directory: %s", dir, strerror(errno));
        return EDHOC_STATE_ERR_IO;
    }
    if (edhoc_secret_dir_check("", dir, STATE_HOLDS, created, why, cap) != 0)
        return EDHOC_STATE_ERR_UNSAFE;
    return 0;
}

/* The database and its -wal/-shm companions: ours and 0600 (another user
 * who can write the file can put a context of theirs in it and talk OSCORE
 * to us without EDHOC; one who can read it has every master secret). */
static int check_file_modes(const char *path, char *why, size_t cap)
{
    static const char *const sides[] = {"", "-wal", "-shm"};  /* and the mark file, at open */
    for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
        char name[PATH_MAX + 8];
        snprintf(name, sizeof name, "%s%s", path, sides[i]);
        if (edhoc_secret_file_check("", name, -1, STATE_HOLDS, false, why, cap) != 0)
            return EDHOC_STATE_ERR_UNSAFE;
    }
    return 0;
}

/* The process holding an flock on the file st describes, from /proc/locks
 * (lines "N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF"); 0 when it
 * cannot be told. */
static long flock_holder(const struct stat *st)
{
    FILE *f = fopen("/proc/locks", "re");
    if (!f)
        return 0;
    char line[256];
    long found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char kind[16];
        long pid = 0;
        unsigned maj = 0, min = 0;
        unsigned long long ino = 0;
        if (sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%llu", kind, &pid, &maj, &min, &ino) == 5 &&
            !strcmp(kind, "FLOCK") && ino == (unsigned long long)st->st_ino &&
            maj == major(st->st_dev) && min == minor(st->st_dev) && pid != (long)getpid())
            found = pid;
    }
    fclose(f);
    return found;
}

/* Take fd's exclusive flock, or say who has it. */
static int lock_exclusive(int fd, const char *path, const char *what, char *why, size_t cap)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
    if (errno != EWOULDBLOCK) {
        set_why(why, cap, "%s: cannot lock %s: %s", path, what, strerror(errno));
        return EDHOC_STATE_ERR_IO;
    }
    struct stat st;
    long pid = fstat(fd, &st) == 0 ? flock_holder(&st) : 0;
    char holder[48] = "";
    if (pid > 0)
        snprintf(holder, sizeof holder, " (pid %ld)", pid);
    set_why(why, cap, "%s: %s is in use by another process%s", path, what, holder);
    return EDHOC_STATE_ERR_IO;
}

static int exec_sql(sqlite3 *sql, const char *text, const char *path, char *why, size_t cap)
{
    char *msg = NULL;
    int rc = sqlite3_exec(sql, text, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        set_why(why, cap, "%s: %s", path, msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return map_sqlite_error(rc);
    }
    return 0;
}

/* Run a one-row, one-integer pragma or query. */
static int query_int(sqlite3 *sql, const char *text, int64_t *out, int *rc_out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(sql, text, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            rc = SQLITE_NOTFOUND;
        }
    }
    sqlite3_finalize(st);
    *rc_out = rc;
    return rc == SQLITE_OK ? 0 : -1;
}

static int fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* ---- schema ---- */

/* STRICT tables make SQLite itself reject a value of the wrong type, so a
 * row that reads back is a row we wrote. */
static const char schema_sql[] =
    "BEGIN;"
    "PRAGMA application_id = " /* value appended at run time */;

/* The context table of version 3. A primary key column cannot be NULL
 * in a WITHOUT ROWID table, so "no ID Context" is has_id_context = 0 with
 * an empty id_context, kept apart from an empty ID Context
 * (has_id_context = 1) by the key itself. The recipient ID leads the key:
 * the contexts a kid may name without 'kid context' are adjacent.
 * last_used (Unix milliseconds) is indexed for the contexts of EDHOC
 * runs (method >= 0), the ones that are evicted and expire: counting
 * them and finding the N-th most recently used read the index alone. */
#define PEER_INDEX_SQL "CREATE INDEX peer_last_used ON peer (last_used) WHERE method >= 0;"
#define PEER_TABLE_SQL                                                                 \
    "CREATE TABLE peer ("                                                              \
    "  recipient_id BLOB NOT NULL,"                                                    \
    "  has_id_context INTEGER NOT NULL CHECK (has_id_context IN (0, 1)),"              \
    "  id_context BLOB NOT NULL CHECK (has_id_context = 1 OR length(id_context) = 0)," \
    "  sender_id BLOB NOT NULL,"                                                       \
    "  master_secret BLOB NOT NULL,"                                                   \
    "  master_salt BLOB NOT NULL,"                                                     \
    "  aead_alg INTEGER NOT NULL,"                                                     \
    "  hkdf_alg INTEGER NOT NULL,"                                                     \
    "  ssn_mark INTEGER NOT NULL CHECK (ssn_mark >= 0),"                               \
    "  peer TEXT NOT NULL,"                                                            \
    "  created INTEGER NOT NULL,"                                                      \
    "  method INTEGER NOT NULL,"                                                       \
    "  suite INTEGER NOT NULL,"                                                        \
    "  last_used INTEGER NOT NULL DEFAULT 0,"                                          \
    "  PRIMARY KEY (recipient_id, has_id_context, id_context)"                        \
    ") STRICT, WITHOUT ROWID;"                                                         \
    PEER_INDEX_SQL

static const char schema_tables_sql[] =
    "CREATE TABLE meta ("
    "  key TEXT PRIMARY KEY NOT NULL,"
    "  value ANY"
    ") STRICT;" PEER_TABLE_SQL;

/* The columns of version 2 (the v1 migration fills these; last_used
 * follows from created). */
#define PEER_COLUMNS_V2                                                                \
    "recipient_id, has_id_context, id_context, sender_id, master_secret, master_salt, " \
    "aead_alg, hkdf_alg, ssn_mark, peer, created, method, suite"

#define PEER_COLUMNS PEER_COLUMNS_V2 ", last_used"

/* The columns of version 1's peer table (keyed by recipient_id alone). */
#define PEER_COLUMNS_V1                                                                \
    "recipient_id, sender_id, id_context, master_secret, master_salt, aead_alg, "      \
    "hkdf_alg, ssn_mark, peer, created, method, suite"

/* How a statement names one context: ?1 recipient ID, ?2 has ID Context,
 * ?3 ID Context. */
#define WHERE_KEY " WHERE recipient_id = ?1 AND has_id_context = ?2 AND id_context = ?3"

/* A put for an existing recipient ID with the same keying material keeps
 * the higher of the two marks: re-storing a context (e.g. from a copy
 * loaded at start-up) must not make the next process reuse nonces. New
 * keying material restarts the sequence numbers, as a new context should.
 * SET expressions see the old row, so the CASE compares old with new. */
static const char put_sql[] =
    "INSERT INTO peer (" PEER_COLUMNS ") "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
    "ON CONFLICT (recipient_id, has_id_context, id_context) DO UPDATE SET "
    "  ssn_mark = CASE WHEN sender_id = excluded.sender_id"
    "    AND master_secret = excluded.master_secret AND master_salt = excluded.master_salt"
    "    AND aead_alg = excluded.aead_alg AND hkdf_alg = excluded.hkdf_alg"
    "    THEN max(ssn_mark, excluded.ssn_mark) ELSE excluded.ssn_mark END,"
    "  sender_id = excluded.sender_id,"
    "  master_secret = excluded.master_secret, master_salt = excluded.master_salt,"
    "  aead_alg = excluded.aead_alg, hkdf_alg = excluded.hkdf_alg, peer = excluded.peer,"
    "  created = excluded.created, method = excluded.method, suite = excluded.suite,"
    "  last_used = excluded.last_used";

/* The responder's memory is what knows the order of use: it sets. */
static const char touch_sql[] = "UPDATE peer SET last_used = ?4" WHERE_KEY;

/* Contexts of EDHOC runs (method >= 0) only: a static one comes back
 * with its --oscore-context file at every start, and its row holds the
 * mark that keeps its nonces unique, so it is never evicted or expired.
 * Keeping the N most recently used is: find the N-th most recent use T
 * (index only), delete what is older, then as many of the rows used at T
 * as are still too many, lowest key first (the order a tie is loaded in,
 * oldest first). A NOT IN over the N kept keys took minutes for 10^5. */
static const char count_edhoc_sql[] = "SELECT count(*) FROM peer WHERE method >= 0";
static const char nth_used_sql[] =
    "SELECT last_used FROM peer WHERE method >= 0 ORDER BY last_used DESC LIMIT 1 OFFSET ?1";
static const char prune_expired_sql[] =
    "DELETE FROM peer WHERE method >= 0 AND last_used < ?1";
static const char prune_ties_sql[] =
    "DELETE FROM peer WHERE method >= 0 AND last_used = ?1 AND"
    " (recipient_id, has_id_context, id_context) IN"
    " (SELECT recipient_id, has_id_context, id_context FROM peer"
    "  WHERE method >= 0 AND last_used = ?1"
    "  ORDER BY recipient_id, has_id_context, id_context LIMIT ?2)";

/* The hot path: one indexed UPDATE, and the WHERE clause is what keeps a
 * mark from ever going down. */
static const char store_ssn_sql[] =
    "UPDATE peer SET ssn_mark = ?4" WHERE_KEY " AND ssn_mark < ?4";

/* Version 1 -> 2. Version 1 wrote an empty id_context both for "no ID
 * Context" and for an empty one. A row with an ID Context of 1 byte or
 * more keeps it. An empty one of an EDHOC run (method >= 0) has none:
 * RFC 9528 Appendix A.1 sets no ID Context, and version 1 loaded such rows
 * without one. An empty one of a static context (method < 0) cannot be
 * told apart, so it is kept under both keys with its mark: whichever its
 * context file says, the context finds its mark and never reuses a
 * sequence number; the other copy only holds a mark nobody asks for.
 * The old table is dropped with secure_delete on, so its pages are
 * zeroed. */
static const char migrate_v1_sql[] =
    "BEGIN IMMEDIATE;"
    "ALTER TABLE peer RENAME TO peer_v1;" PEER_TABLE_SQL
    "INSERT INTO peer (" PEER_COLUMNS_V2 ")"
    "  SELECT recipient_id, length(id_context) > 0, id_context, sender_id, master_secret,"
    "    master_salt, aead_alg, hkdf_alg, ssn_mark, peer, created, method, suite FROM peer_v1;"
    "INSERT INTO peer (" PEER_COLUMNS_V2 ")"
    "  SELECT recipient_id, 1, id_context, sender_id, master_secret,"
    "    master_salt, aead_alg, hkdf_alg, ssn_mark, peer, created, method, suite FROM peer_v1"
    "  WHERE method < 0 AND length(id_context) = 0;"
    "UPDATE peer SET last_used = created * 1000;"
    "DROP TABLE peer_v1;"
    "UPDATE meta SET value = 3 WHERE key = 'schema_version';"
    "PRAGMA user_version = 3;"
    "COMMIT;";

/* Version 2 -> 3: when each context was last used, unknown for the rows
 * already there, starts at its creation (the oldest a use can be). */
static const char migrate_v2_sql[] =
    "BEGIN IMMEDIATE;"
    "ALTER TABLE peer ADD COLUMN last_used INTEGER NOT NULL DEFAULT 0;"
    "UPDATE peer SET last_used = created * 1000;" PEER_INDEX_SQL
    "UPDATE meta SET value = 3 WHERE key = 'schema_version';"
    "PRAGMA user_version = 3;"
    "COMMIT;";
_Static_assert(EDHOC_STATE_SCHEMA_VERSION == 3, "the migrations end at the current version");

/* Build a fresh database next to the final name and rename it into place:
 * the final name never refers to a partly initialised file. */
static int create_database(const char *path, int dir_fd, char *why, size_t cap)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.new", path) >= sizeof tmp) {
        set_why(why, cap, "%s: path too long", path);
        return EDHOC_STATE_ERR_ARG;
    }
    /* A leftover of an interrupted creation is ours (we hold the directory
     * lock) and was never renamed into place: start over. */
    char side[PATH_MAX + 8];
    unlink(tmp);
    snprintf(side, sizeof side, "%s-wal", tmp);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", tmp);
    unlink(side);

    /* SQLite would create the file with 0644 & ~umask; we want 0600 no
     * matter the umask. Its -wal and -shm files copy this mode. */
    int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        set_why(why, cap, "%s: cannot create: %s", tmp, strerror(errno));
        return EDHOC_STATE_ERR_IO;
    }
    /* The umask may have taken bits away (0400 would not open for
     * writing); SQLite gives -wal and -shm the mode of this file. */
    if (fchmod(fd, 0600) != 0) {
        set_why(why, cap, "%s: cannot set mode 0600: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return EDHOC_STATE_ERR_IO;
    }
    close(fd);

    sqlite3 *sql = NULL;
    int err = 0;
    int rc = sqlite3_open_v2(tmp, &sql, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        set_why(why, cap, "%s: %s", tmp, sqlite_problem(rc));
        err = EDHOC_STATE_ERR_IO;
        goto out;
    }
    char text[2048];
    snprintf(text, sizeof text,
             "PRAGMA journal_mode = WAL;"
             "PRAGMA synchronous = FULL;"
             "%s%" PRId32 ";"
             "PRAGMA user_version = %d;"
             "%s"
             "INSERT INTO meta (key, value) VALUES ('magic', '" STATE_MAGIC "');"
             "INSERT INTO meta (key, value) VALUES ('schema_version', %d);"
             "INSERT INTO meta (key, value) VALUES ('created', unixepoch());"
             "COMMIT;",
             schema_sql, (int32_t)EDHOC_STATE_APPLICATION_ID, EDHOC_STATE_SCHEMA_VERSION,
             schema_tables_sql, EDHOC_STATE_SCHEMA_VERSION);
    err = exec_sql(sql, text, tmp, why, cap);
    if (err)
        goto out;
    /* Closing the last connection checkpoints and removes the WAL, so all
     * of the new database is in the one file we rename. */
    rc = sqlite3_close(sql);
    sql = NULL;
    if (rc != SQLITE_OK) {
        set_why(why, cap, "%s: %s", tmp, sqlite3_errstr(rc));
        err = EDHOC_STATE_ERR_IO;
        goto out;
    }
    if (fsync_path(tmp) != 0 || rename(tmp, path) != 0 || fsync(dir_fd) != 0) {
        set_why(why, cap, "%s: cannot install new database: %s", path, strerror(errno));
        err = EDHOC_STATE_ERR_IO;
        goto out;
    }
out:
    if (sql)
        sqlite3_close(sql);
    if (err)
        unlink(tmp);
    return err;
}

/* Everything that decides whether an existing file is ours, without
 * writing to it. */
static int check_existing(const char *path, char *why, size_t cap)
{
    uint8_t hdr[SQLITE_HEADER_LEN];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        set_why(why, cap, "%s: cannot open: %s", path, strerror(errno));
        return errno == ELOOP ? EDHOC_STATE_ERR_FOREIGN : EDHOC_STATE_ERR_IO;
    }
    ssize_t n = 0;
    while (n < (ssize_t)sizeof hdr) {
        ssize_t r = read(fd, hdr + n, sizeof hdr - (size_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            set_why(why, cap, "%s: cannot read: %s", path, strerror(errno));
            close(fd);
            return EDHOC_STATE_ERR_IO;
        }
        if (r == 0)
            break;
        n += r;
    }
    close(fd);

    if (n == 0) {
        set_why(why, cap, "%s: empty file, not an edhoc-cli state database (refusing to touch it)",
                path);
        return EDHOC_STATE_ERR_FOREIGN;
    }
    if (n < 16 || memcmp(hdr, SQLITE_HEADER_MAGIC, 16) != 0) {
        set_why(why, cap, "%s: not an SQLite database, so not an edhoc-cli state file "
                "(refusing to touch it)", path);
        return EDHOC_STATE_ERR_FOREIGN;
    }
    if (n < (ssize_t)sizeof hdr) {
        set_why(why, cap, "%s: truncated SQLite header (%zd bytes)", path, n);
        return EDHOC_STATE_ERR_CORRUPT;
    }
    /* The application id never changes after creation, so the header on
     * disk is authoritative and another program's database is recognised
     * without SQLite ever opening it (which could create -wal/-shm files). */
    uint32_t app = be32(hdr + 68);
    if (app != (uint32_t)EDHOC_STATE_APPLICATION_ID) {
        set_why(why, cap, "%s: another application's SQLite database (application_id 0x%08" PRIx32
                ", expected 0x%08" PRIx32 "); refusing to touch it",
                path, app, (uint32_t)EDHOC_STATE_APPLICATION_ID);
        return EDHOC_STATE_ERR_FOREIGN;
    }

    /* Without a -wal file the main file is the whole database, and
     * immutable=1 reads it without creating any side file. With one (after
     * a crash) SQLite must see the WAL, which needs a -shm. */
    char side[PATH_MAX + 8];
    snprintf(side, sizeof side, "%s-wal", path);
    bool has_wal = access(side, F_OK) == 0;
    snprintf(side, sizeof side, "%s-journal", path);
    bool has_journal = access(side, F_OK) == 0;
    bool immutable = !has_wal && !has_journal && hdr[18] == 2 && hdr[19] == 2;

    char esc[3 * PATH_MAX + 1], uri[3 * PATH_MAX + 64];
    if (!uri_escape_path(path, esc, sizeof esc)) {
        set_why(why, cap, "%s: path too long", path);
        return EDHOC_STATE_ERR_ARG;
    }
    snprintf(uri, sizeof uri, "file:%s?mode=ro%s", esc, immutable ? "&immutable=1" : "");

    sqlite3 *sql = NULL;
    int err = 0;
    int rc = sqlite3_open_v2(uri, &sql, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc != SQLITE_OK) {
        set_why(why, cap, "%s: %s", path, sqlite_problem(rc));
        err = map_sqlite_error(rc);
        goto out;
    }
    sqlite3_db_config(sql, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(sql, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);

    int64_t v = 0;
    if (query_int(sql, "PRAGMA application_id", &v, &rc) != 0) {
        set_why(why, cap, "%s: %s", path, sqlite_problem(rc));
        err = map_sqlite_error(rc);
        goto out;
    }
    if ((uint32_t)v != (uint32_t)EDHOC_STATE_APPLICATION_ID) {
        set_why(why, cap, "%s: another application's SQLite database (application_id 0x%08" PRIx32
                "); refusing to touch it", path, (uint32_t)v);
        err = EDHOC_STATE_ERR_FOREIGN;
        goto out;
    }
    int64_t version = 0;
    if (query_int(sql, "PRAGMA user_version", &version, &rc) != 0) {
        set_why(why, cap, "%s: %s", path, sqlite_problem(rc));
        err = map_sqlite_error(rc);
        goto out;
    }
    if (version > EDHOC_STATE_SCHEMA_VERSION) {
        set_why(why, cap, "%s: written by a newer edhoc-cli (schema version %" PRId64
                ", this build knows up to %d); refusing to touch it", path, version,
                EDHOC_STATE_SCHEMA_VERSION);
        err = EDHOC_STATE_ERR_VERSION;
        goto out;
    }
    if (version < 1) {
        set_why(why, cap, "%s: edhoc-cli application id but no schema version; damaged", path);
        err = EDHOC_STATE_ERR_CORRUPT;
        goto out;
    }

    /* quick_check walks every b-tree page (it skips only the index/table
     * cross-check), so torn or overwritten pages show up here. */
    sqlite3_stmt *st = NULL;
    rc = sqlite3_prepare_v2(sql, "PRAGMA quick_check(1)", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        set_why(why, cap, "%s: integrity check failed: %s", path, sqlite3_errmsg(sql));
        err = rc == SQLITE_DONE ? EDHOC_STATE_ERR_CORRUPT : map_sqlite_error(rc);
        sqlite3_finalize(st);
        goto out;
    }
    const char *verdict = (const char *)sqlite3_column_text(st, 0);
    if (verdict == NULL || strcmp(verdict, "ok") != 0) {
        set_why(why, cap, "%s: integrity check failed: %s", path, verdict ? verdict : "?");
        err = EDHOC_STATE_ERR_CORRUPT;
        sqlite3_finalize(st);
        goto out;
    }
    sqlite3_finalize(st);

    /* The meta table is a second witness: same application id and version
     * but no magic row means a damaged file, not a foreign one. */
    st = NULL;
    rc = sqlite3_prepare_v2(sql,
        "SELECT (SELECT value FROM meta WHERE key = 'magic'),"
        "       (SELECT value FROM meta WHERE key = 'schema_version')", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        set_why(why, cap, "%s: metadata unreadable: %s", path, sqlite3_errmsg(sql));
        err = (rc & 0xff) == SQLITE_ERROR ? EDHOC_STATE_ERR_CORRUPT : map_sqlite_error(rc);
        sqlite3_finalize(st);
        goto out;
    }
    const char *magic = (const char *)sqlite3_column_text(st, 0);
    int64_t meta_version = sqlite3_column_int64(st, 1);
    if (magic == NULL || strcmp(magic, STATE_MAGIC) != 0 || meta_version != version) {
        set_why(why, cap, "%s: metadata does not match (magic %s, version %" PRId64 "/%" PRId64
                "); damaged", path, magic ? magic : "missing", meta_version, version);
        err = EDHOC_STATE_ERR_CORRUPT;
    }
    sqlite3_finalize(st);
    if (err)
        goto out;

    st = NULL;
    rc = sqlite3_prepare_v2(sql,
                            version == 1   ? "SELECT " PEER_COLUMNS_V1 " FROM peer LIMIT 0"
                            : version == 2 ? "SELECT " PEER_COLUMNS_V2 " FROM peer LIMIT 0"
                                           : "SELECT " PEER_COLUMNS " FROM peer LIMIT 0",
                            -1, &st, NULL);
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) {
        set_why(why, cap, "%s: peer table unusable: %s", path, sqlite3_errmsg(sql));
        err = (rc & 0xff) == SQLITE_ERROR ? EDHOC_STATE_ERR_CORRUPT : map_sqlite_error(rc);
    }
out:
    sqlite3_close(sql);
    return err;
}

static int prepare(struct edhoc_state_db *db, const char *text, sqlite3_stmt **st,
                   const char *path, char *why, size_t cap)
{
    int rc = sqlite3_prepare_v3(db->sql, text, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
    if (rc != SQLITE_OK) {
        set_why(why, cap, "%s: %s", path, sqlite3_errmsg(db->sql));
        return (rc & 0xff) == SQLITE_ERROR ? EDHOC_STATE_ERR_CORRUPT : map_sqlite_error(rc);
    }
    return 0;
}

/* Bring an older database to the current version (migrate_v1_sql,
 * migrate_v2_sql). All or nothing: on failure the transaction is rolled
 * back and the file keeps its version. */
static int migrate(sqlite3 *sql, int from, const char *path, char *why, size_t cap)
{
    char *msg = NULL;
    int rc = sqlite3_exec(sql, from == 1 ? migrate_v1_sql : migrate_v2_sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        return 0;
    set_why(why, cap, "%s: cannot migrate from schema version %d: %s", path, from,
            msg ? msg : sqlite_problem(rc));
    sqlite3_free(msg);
    if (!sqlite3_get_autocommit(sql))
        sqlite3_exec(sql, "ROLLBACK", NULL, NULL, NULL);
    /* A plain SQL error here means the file holds something a version 1
     * database of ours does not (a table in the way, a row the new
     * constraints refuse), as when preparing statements fails. */
    return (rc & 0xff) == SQLITE_ERROR || (rc & 0xff) == SQLITE_CONSTRAINT
               ? EDHOC_STATE_ERR_CORRUPT
               : map_sqlite_error(rc);
}

/* ---- A store that went backwards ----
 * A -wal deleted after a crash, or a .sqlite restored from a copy, takes
 * marks back: the next process would reuse sequence numbers it already
 * used. What the database file holds cannot tell (a stale copy is a
 * consistent database), so a small file next to it, fsync'ed and replaced
 * by rename, holds what a stale copy cannot match:
 *   - a generation G. The database holds one too (meta 'generation').
 *     The file's G moves up first, the database follows in its next
 *     write: at every open, and after every checkpoint, since from then on
 *     the main file alone is a complete database again and losing the WAL
 *     would leave it consistent. A database whose G is below the file's
 *     lost commits (or missed one write: a false alarm that costs
 *     sequence numbers, never a nonce).
 *   - a ceiling C above every mark ever stored: a mark beyond it first
 *     moves C up by STATE_CEILING_STEP (a write per 65536 numbers of the
 *     busiest context, not per handshake).
 * On doubt every mark jumps to C, the bound RFC 8613 Appendix B.1.1 asks
 * for ("F MUST be set so that the last Sender Sequence Number used before
 * reboot is never larger than SSN2"), and so do static contexts whose row
 * the stale copy lacks (meta 'floor'). Without a usable file (deleted, or
 * older than the database) nothing bounds what was lost: marks jump
 * STATE_UNKNOWN_MARGIN above the highest stored one. A state directory
 * restored whole (database and mark file) cannot be told from the real
 * one: never restore one in service. */
#define STATE_CEILING_STEP ((uint64_t)1 << 16)
#define STATE_UNKNOWN_MARGIN ((uint64_t)1 << 32)
#define STATE_CHECKPOINT_FRAMES 1000 /* SQLite's own automatic checkpoint */
#define MARK_MAGIC "edhoc-cli state marks v1"

static int write_mark_file(struct edhoc_state_db *db, uint64_t generation, uint64_t ceiling)
{
    char tmp[PATH_MAX + 8], text[128];
    snprintf(tmp, sizeof tmp, "%s.new", db->mark_path);
    int n = snprintf(text, sizeof text, MARK_MAGIC "\ngeneration %" PRIu64 "\nceiling %" PRIu64 "\n",
                     generation, ceiling);
    unlink(tmp);
    int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    bool ok = fchmod(fd, 0600) == 0 && write(fd, text, (size_t)n) == n && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, db->mark_path) != 0 || fsync(db->dir_fd) != 0) {
        unlink(tmp);
        return -1;
    }
    db->generation = generation;
    db->ceiling = ceiling;
    return 0;
}

/* 1: read; 0: no file; -1: unreadable or not ours. */
static int read_mark_file(const char *path, uint64_t *generation, uint64_t *ceiling)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    char text[256];
    ssize_t r = read(fd, text, sizeof text - 1);
    close(fd);
    if (r <= 0)
        return -1;
    text[r] = '\0';
    char tail;
    if (sscanf(text, MARK_MAGIC "\ngeneration %" SCNu64 "\nceiling %" SCNu64 "%c", generation,
               ceiling, &tail) != 3 || tail != '\n')
        return -1;
    return 1;
}

/* A checkpoint made the main file complete: move the generation on before
 * the next commit can go to a WAL that may be lost. */
static int after_commit(void *user, sqlite3 *sql, const char *name, int frames)
{
    struct edhoc_state_db *db = user;
    if (frames < STATE_CHECKPOINT_FRAMES)
        return SQLITE_OK;
    int log = 0, done = 0;
    if (sqlite3_wal_checkpoint_v2(sql, name, SQLITE_CHECKPOINT_PASSIVE, &log, &done) !=
            SQLITE_OK || done <= 0)
        return SQLITE_OK;
    if (write_mark_file(db, db->generation + 1, db->ceiling) == 0)
        db->generation_unwritten = true;
    else
        db->bump_failed = true;
    return SQLITE_OK;
}

static int set_meta(struct edhoc_state_db *db, const char *key, uint64_t v)
{
    char text[160];
    snprintf(text, sizeof text,
             "INSERT INTO meta (key, value) VALUES ('%s', %" PRIu64 ") "
             "ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, v);
    int rc = sqlite3_exec(db->sql, text, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : map_sqlite_error(rc);
}

/* Before a write: what a checkpoint left to do, and a ceiling above the
 * mark about to be stored. Costs two comparisons when there is nothing. */
static int before_write(struct edhoc_state_db *db, uint64_t mark)
{
    if (db->bump_failed) {
        if (write_mark_file(db, db->generation + 1, db->ceiling) != 0)
            return EDHOC_STATE_ERR_IO;
        db->bump_failed = false;
        db->generation_unwritten = true;
    }
    if (mark > db->ceiling) {
        uint64_t c = mark > UINT64_MAX - STATE_CEILING_STEP ? UINT64_MAX : mark + STATE_CEILING_STEP;
        if (write_mark_file(db, db->generation, c) != 0)
            return EDHOC_STATE_ERR_IO;
    }
    if (db->generation_unwritten) {
        int err = set_meta(db, "generation", db->generation);
        if (err)
            return err;
        db->generation_unwritten = false;
    }
    return 0;
}

static int64_t meta_int(sqlite3 *sql, const char *key, int64_t absent)
{
    char text[96];
    snprintf(text, sizeof text, "SELECT value FROM meta WHERE key = '%s'", key);
    int64_t v = absent;
    int rc;
    if (query_int(sql, text, &v, &rc) != 0)
        v = absent;
    return v;
}

/* At open: compare the mark file with the database, jump the marks on
 * doubt (recorded in db->recovery), and start a new generation. */
static int check_generation(struct edhoc_state_db *db, bool created, char *why, size_t cap)
{
    uint64_t s_gen = 0, s_ceiling = 0;
    int have = read_mark_file(db->mark_path, &s_gen, &s_ceiling);
    int64_t d_gen = meta_int(db->sql, "generation", -1);
    int64_t max_mark = 0;
    int rc;
    if (query_int(db->sql, "SELECT coalesce(max(ssn_mark), 0) FROM peer", &max_mark, &rc) != 0) {
        set_why(why, cap, "%s: %s", db->path, sqlite_problem(rc));
        return map_sqlite_error(rc);
    }
    int64_t floor = meta_int(db->sql, "floor", 0);
    db->floor = floor > 0 ? (uint64_t)floor : 0;
    uint64_t top = (uint64_t)max_mark, to = 0;
    char found[PATH_MAX + 300] = "";
    if (have < 0) {
        snprintf(found, sizeof found, "the mark file %s is unreadable", db->mark_path);
        to = top + STATE_UNKNOWN_MARGIN;
    } else if (have == 0) {
        /* A new database, or one from before mark files: nothing lost. */
        if (d_gen >= 0 && !created) {
            snprintf(found, sizeof found,
                     "the mark file %s is missing (the database is a copy, or it was deleted)",
                     db->mark_path);
            to = top + STATE_UNKNOWN_MARGIN;
        }
    } else if (d_gen < 0 || (uint64_t)d_gen < s_gen) {
        snprintf(found, sizeof found,
                 "the database is older than its mark file (generation %" PRId64 ", the mark "
                 "file says %" PRIu64 "): its -wal was lost or the file was restored from a copy",
                 d_gen, s_gen);
        to = s_ceiling > top ? s_ceiling : top;
    } else if ((uint64_t)d_gen > s_gen) {
        snprintf(found, sizeof found,
                 "the mark file %s is older than the database (generation %" PRIu64 " < %" PRId64
                 ")", db->mark_path, s_gen, d_gen);
        to = (s_ceiling > top ? s_ceiling : top) + STATE_UNKNOWN_MARGIN;
    }
    uint64_t ceiling = have > 0 && s_ceiling > top ? s_ceiling : top;
    if (found[0]) {
        if (to > (uint64_t)INT64_MAX)
            to = (uint64_t)INT64_MAX;
        char text[256];
        snprintf(text, sizeof text,
                 "BEGIN IMMEDIATE; UPDATE peer SET ssn_mark = %" PRIu64 " WHERE ssn_mark < %" PRIu64
                 ";", to, to);
        char *msg = NULL;
        rc = sqlite3_exec(db->sql, text, NULL, NULL, &msg);
        long moved = rc == SQLITE_OK ? (long)sqlite3_changes(db->sql) : 0;
        int err = rc == SQLITE_OK ? 0 : map_sqlite_error(rc);
        if (!err && to > db->floor)
            err = set_meta(db, "floor", to);
        if (!err)
            err = exec_sql(db->sql, "COMMIT;", db->path, why, cap);
        if (err) {
            if (msg)
                set_why(why, cap, "%s: cannot move the marks up: %s", db->path, msg);
            sqlite3_free(msg);
            if (!sqlite3_get_autocommit(db->sql))
                sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
            return err;
        }
        if (to > db->floor)
            db->floor = to;
        snprintf(db->recovery, sizeof db->recovery,
                 "%s: %s; every sender sequence-number mark moved up to %" PRIu64
                 " (%ld contexts, and static contexts not in it start there: RFC 8613 "
                 "Appendix B.1.1), so no nonce is used twice", db->path, found, to, moved);
        if (to > ceiling)
            ceiling = to;
    }
    uint64_t next = (have > 0 ? s_gen : 0) > (uint64_t)(d_gen > 0 ? d_gen : 0)
                        ? s_gen : (uint64_t)(d_gen > 0 ? d_gen : 0);
    if (write_mark_file(db, next + 1, ceiling) != 0) {
        set_why(why, cap, "%s: cannot write: %s", db->mark_path, strerror(errno));
        return EDHOC_STATE_ERR_IO;
    }
    int err = set_meta(db, "generation", db->generation);
    if (err)
        set_why(why, cap, "%s: cannot record the generation: %s", db->path,
                sqlite3_errmsg(db->sql));
    return err;
}

const char *edhoc_state_recovery(const struct edhoc_state_db *db)
{
    return db && db->recovery[0] ? db->recovery : NULL;
}

static int open_read_write(struct edhoc_state_db *db, const char *path, char *why, size_t cap)
{
    int rc = sqlite3_open_v2(path, &db->sql, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        set_why(why, cap, "%s: %s", path, sqlite_problem(rc));
        return map_sqlite_error(rc);
    }
    sqlite3_extended_result_codes(db->sql, 0);
    sqlite3_db_config(db->sql, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(db->sql, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    sqlite3_busy_timeout(db->sql, 2000);

    /* synchronous=FULL in WAL mode fsyncs the WAL at every commit: a
     * statement that returned is on stable storage. secure_delete zeroes
     * the bytes of deleted or replaced rows, which hold master secrets. */
    /* SQLite's own fcntl locks stay (a round per transaction, so per
     * batch with group commit): locking_mode=EXCLUSIVE would save them
     * but lock out every reader, sqlite3(1) on a live responder included. */
    int err = exec_sql(db->sql,
                       "PRAGMA journal_mode = WAL;"
                       "PRAGMA synchronous = FULL;"
                       "PRAGMA secure_delete = ON;"
                       "PRAGMA journal_size_limit = 4194304;",
                       path, why, cap);
    if (err)
        return err;

    /* The read-only check and this connection are two opens; recheck the
     * identity cheaply in case the file was swapped in between. */
    int64_t app = 0, version = 0;
    if (query_int(db->sql, "PRAGMA application_id", &app, &rc) != 0 ||
        query_int(db->sql, "PRAGMA user_version", &version, &rc) != 0) {
        set_why(why, cap, "%s: %s", path, sqlite_problem(rc));
        return map_sqlite_error(rc);
    }
    if ((uint32_t)app == (uint32_t)EDHOC_STATE_APPLICATION_ID &&
        (version == 1 || version == 2)) {
        /* secure_delete is already on, so the old table's pages are zeroed
         * as they are freed. */
        err = migrate(db->sql, (int)version, path, why, cap);
        if (err)
            return err;
        if (query_int(db->sql, "PRAGMA user_version", &version, &rc) != 0) {
            set_why(why, cap, "%s: %s", path, sqlite_problem(rc));
            return map_sqlite_error(rc);
        }
    }
    if ((uint32_t)app != (uint32_t)EDHOC_STATE_APPLICATION_ID ||
        version != EDHOC_STATE_SCHEMA_VERSION) {
        set_why(why, cap, "%s: changed while being opened; refusing it", path);
        return EDHOC_STATE_ERR_FOREIGN;
    }

    if ((err = prepare(db, put_sql, &db->st_put, path, why, cap)) ||
        (err = prepare(db, store_ssn_sql, &db->st_store_ssn, path, why, cap)) ||
        (err = prepare(db, "SELECT 1 FROM peer" WHERE_KEY, &db->st_exists, path, why, cap)) ||
        (err = prepare(db, "SELECT " PEER_COLUMNS " FROM peer" WHERE_KEY, &db->st_get, path,
                       why, cap)) ||
        (err = prepare(db,
                       "SELECT " PEER_COLUMNS " FROM peer"
                       " ORDER BY recipient_id, has_id_context, id_context",
                       &db->st_all, path, why, cap)) ||
        (err = prepare(db, "DELETE FROM peer" WHERE_KEY, &db->st_delete, path, why, cap)) ||
        (err = prepare(db, "SELECT count(*) FROM peer", &db->st_count, path, why, cap)) ||
        (err = prepare(db, "BEGIN IMMEDIATE", &db->st_begin, path, why, cap)) ||
        (err = prepare(db, "COMMIT", &db->st_commit, path, why, cap)) ||
        (err = prepare(db, "ROLLBACK", &db->st_rollback, path, why, cap)) ||
        (err = prepare(db, touch_sql, &db->st_touch, path, why, cap)) ||
        (err = prepare(db, count_edhoc_sql, &db->st_count_edhoc, path, why, cap)) ||
        (err = prepare(db, nth_used_sql, &db->st_nth_used, path, why, cap)) ||
        (err = prepare(db, prune_expired_sql, &db->st_prune_expired, path, why, cap)) ||
        (err = prepare(db, prune_ties_sql, &db->st_prune_ties, path, why, cap)))
        return err;
    /* Replaces SQLite's automatic checkpoint with one that moves the
     * generation on (check_generation). */
    sqlite3_wal_hook(db->sql, after_commit, db);
    return 0;
}

/* ---- public API ---- */

int edhoc_state_open(const char *dir, struct edhoc_state_db **out, char *why, size_t why_cap)
{
    if (why && why_cap)
        why[0] = '\0';
    if (out == NULL || dir == NULL) {
        set_why(why, why_cap, "no state directory given");
        return EDHOC_STATE_ERR_ARG;
    }
    *out = NULL;

    int err = make_dirs(dir, why, why_cap);
    if (err)
        return err;
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, EDHOC_STATE_FILE) >= sizeof path - 8) {
        set_why(why, why_cap, "%s: state directory path too long", dir);
        return EDHOC_STATE_ERR_ARG;
    }

    struct edhoc_state_db *db = calloc(1, sizeof *db);
    if (db == NULL) {
        set_why(why, why_cap, "%s: out of memory", path);
        return EDHOC_STATE_ERR_IO;
    }
    /* Two processes serving the same contexts would each count sequence
     * numbers from the same mark and reuse nonces, so one holder at a
     * time. flock on the directory does not interfere with SQLite's own
     * fcntl locks on the database file. */
    db->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (db->dir_fd < 0) {
        set_why(why, why_cap, "%s: cannot open directory: %s", dir, strerror(errno));
        free(db);
        return EDHOC_STATE_ERR_IO;
    }
    db->file_fd = -1;
    err = lock_exclusive(db->dir_fd, dir, "state directory", why, why_cap);
    if (err) {
        close(db->dir_fd);
        free(db);
        return err;
    }

    if ((size_t)snprintf(db->mark_path, sizeof db->mark_path, "%s/%s", dir,
                         EDHOC_STATE_MARK_FILE) >= sizeof db->mark_path - 8) {
        set_why(why, why_cap, "%s: state directory path too long", dir);
        err = EDHOC_STATE_ERR_ARG;
        goto fail;
    }
    if (edhoc_secret_file_check("", db->mark_path, -1, STATE_HOLDS, false, why, why_cap)) {
        err = EDHOC_STATE_ERR_UNSAFE;
        goto fail;
    }
    bool created = false;
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT) {
            set_why(why, why_cap, "%s: %s", path, strerror(errno));
            err = EDHOC_STATE_ERR_IO;
            goto fail;
        }
        err = create_database(path, db->dir_fd, why, why_cap);
        if (err)
            goto fail;
        created = true;
    } else if (!S_ISREG(st.st_mode)) {
        set_why(why, why_cap, "%s: not a regular file; refusing to touch it", path);
        err = EDHOC_STATE_ERR_FOREIGN;
        goto fail;
    }
    err = check_file_modes(path, why, why_cap);
    if (err)
        goto fail;
    /* The directory lock keeps a second process out of this directory;
     * this one keeps it out of this database, whichever directory names
     * it (a hard link elsewhere is the same inode). */
    db->file_fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (db->file_fd < 0) {
        set_why(why, why_cap, "%s: cannot open: %s", path, strerror(errno));
        err = EDHOC_STATE_ERR_IO;
        goto fail;
    }
    err = lock_exclusive(db->file_fd, path,
                         "this database (maybe through a hard link in another directory)", why,
                         why_cap);
    if (err)
        goto fail;

    err = check_existing(path, why, why_cap);
    if (err)
        goto fail;
    err = open_read_write(db, path, why, why_cap);
    if (err)
        goto fail;
    memcpy(db->path, path, sizeof db->path);
    err = check_generation(db, created, why, why_cap);
    if (err)
        goto fail;
    db->pid = getpid();
    pthread_once(&state_atfork_once, state_register_atfork);
    db->fork_gen = state_fork_generation;
    memcpy(db->path, path, sizeof db->path);
    *out = db;
    return 0;
fail:
    edhoc_state_close(db);
    return err;
}

static void close_connection(struct edhoc_state_db *db)
{
    sqlite3_stmt **all[] = {&db->st_put,           &db->st_store_ssn, &db->st_exists,
                            &db->st_get,           &db->st_all,       &db->st_delete,
                            &db->st_count,         &db->st_begin,     &db->st_commit,
                            &db->st_rollback,      &db->st_touch,     &db->st_count_edhoc,
                            &db->st_nth_used,      &db->st_prune_expired,
                            &db->st_prune_ties};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        sqlite3_finalize(*all[i]);
        *all[i] = NULL;
    }
    /* Every statement is finalized, so close cannot be refused; an open
     * transaction is rolled back, and the last connection checkpoints the
     * WAL into the main file and removes it. */
    sqlite3_close(db->sql);
    db->sql = NULL;
}

/* An SQLite connection must not be used across fork(): POSIX locks are not
 * inherited, so the child would write without the locks SQLite believes it
 * holds. Daemonizing after opening is the usual way to get there, so the
 * first call in a new process swaps the inherited connection for a fresh
 * one (the directory flock is shared with the child and stays held). */
static int usable(struct edhoc_state_db *db)
{
    /* The fork generation, not getpid(): one load instead of a system call
     * on every call of the hot path. */
    if (db->fork_gen != state_fork_generation) {
        gc_forget_after_fork(db);
        close_connection(db);
        db->pid = getpid();
        db->fork_gen = state_fork_generation;
        int err = open_read_write(db, db->path, NULL, 0);
        if (err) {
            close_connection(db);
            return err;
        }
        /* Closing the inherited connection may have checkpointed: the main
         * file is complete again, so a new generation (as after_commit). */
        if (write_mark_file(db, db->generation + 1, db->ceiling) == 0)
            db->generation_unwritten = true;
        else
            db->bump_failed = true;
        if (db->gc_restart_rows) {
            unsigned rows = db->gc_restart_rows;
            db->gc_restart_rows = 0;
            edhoc_state_group_commit(db, rows, db->gc_restart_ms);
        }
    }
    return db->sql ? 0 : EDHOC_STATE_ERR_IO;
}

void edhoc_state_close(struct edhoc_state_db *db)
{
    if (db == NULL)
        return;
    if (db->remote) {
        state_remote_free(db->remote);
        free(db);
        return;
    }
    /* What is queued is committed first (a clean stop loses nothing). */
    gc_stop(db);
    /* The last close checkpoints: with the generation written, the main
     * file then matches the mark file, and the next open finds nothing
     * lost. */
    if (db->sql && db->generation_unwritten && db->fork_gen == state_fork_generation &&
        sqlite3_get_autocommit(db->sql))
        set_meta(db, "generation", db->generation);
    close_connection(db);
    if (db->file_fd >= 0)
        close(db->file_fd);
    if (db->dir_fd >= 0)
        close(db->dir_fd);  /* releases the flock */
    free(db);
}

static bool id_ok(const uint8_t *id, size_t len)
{
    return len <= EDHOC_STATE_MAX_ID && (id != NULL || len == 0);
}

/* NULL is "no ID Context" and has no length; non-NULL may be empty. */
static bool id_context_ok(const uint8_t *idc, size_t len)
{
    return idc != NULL ? len <= EDHOC_STATE_MAX_ID_CONTEXT : len == 0;
}

/* Blobs bound here must be non-NULL even when empty: a NULL pointer would
 * bind SQL NULL, which the NOT NULL columns refuse. */
static int bind_id(sqlite3_stmt *st, int col, const uint8_t *id, size_t len)
{
    static const uint8_t none[1];
    return sqlite3_bind_blob(st, col, len ? id : none, (int)len, SQLITE_STATIC);
}

/* Bind the key of one context to ?1..?3 (WHERE_KEY, and the first three
 * columns of put_sql). */
static int bind_key(sqlite3_stmt *st, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                    size_t rid_len)
{
    int rc;
    if ((rc = bind_id(st, 1, rid, rid_len)) || (rc = sqlite3_bind_int(st, 2, idc != NULL)) ||
        (rc = bind_id(st, 3, idc, idc_len)))
        sqlite3_clear_bindings(st);
    return rc;
}

/* Run a statement that returns no rows; returns the SQLite code. */
static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* A context never used yet was last used when it was created. */
static int64_t put_last_used(const struct edhoc_state_peer *p)
{
    if (p->last_used > 0)
        return p->last_used;
    if (p->created <= 0)
        return 0;
    return p->created > INT64_MAX / 1000 ? INT64_MAX : p->created * 1000;
}

int edhoc_state_put_peer(struct edhoc_state_db *db, const struct edhoc_state_peer *p)
{
    if (db == NULL || p == NULL || !id_ok(p->recipient_id, p->recipient_id_len) ||
        p->sender_id_len > EDHOC_STATE_MAX_ID || p->id_context_len > EDHOC_STATE_MAX_ID_CONTEXT ||
        (!p->has_id_context && p->id_context_len != 0) ||
        p->master_secret_len > EDHOC_STATE_MAX_SECRET ||
        p->master_salt_len > EDHOC_STATE_MAX_SALT || p->ssn_mark > (uint64_t)INT64_MAX ||
        strnlen(p->peer, sizeof p->peer) == sizeof p->peer || p->last_used < 0)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_put_peer(db->remote, p);
    int unusable = usable(db);
    if (unusable)
        return unusable;
    if (db->gc)
        return gc_put(db, p);
    return apply_put(db, p);
}

static int apply_put(struct edhoc_state_db *db, const struct edhoc_state_peer *p)
{
    /* A static context the database lacks after a jump (a stale copy)
     * starts at the jump's mark, not at what its file says. */
    uint64_t mark = p->method < 0 && p->ssn_mark < db->floor ? db->floor : p->ssn_mark;
    int pre = before_write(db, mark);
    if (pre)
        return pre;

    sqlite3_stmt *st = db->st_put;
    int rc;
    if ((rc = bind_key(st, p->has_id_context ? p->id_context : NULL, p->id_context_len,
                       p->recipient_id, p->recipient_id_len)) ||
        (rc = bind_id(st, 4, p->sender_id, p->sender_id_len)) ||
        (rc = bind_id(st, 5, p->master_secret, p->master_secret_len)) ||
        (rc = bind_id(st, 6, p->master_salt, p->master_salt_len)) ||
        (rc = sqlite3_bind_int(st, 7, p->aead_alg)) ||
        (rc = sqlite3_bind_int(st, 8, p->hkdf_alg)) ||
        (rc = sqlite3_bind_int64(st, 9, (sqlite3_int64)mark)) ||
        (rc = sqlite3_bind_text(st, 10, p->peer, -1, SQLITE_STATIC)) ||
        (rc = sqlite3_bind_int64(st, 11, p->created)) ||
        (rc = sqlite3_bind_int(st, 12, p->method)) ||
        (rc = sqlite3_bind_int(st, 13, p->suite)) ||
        (rc = sqlite3_bind_int64(st, 14, put_last_used(p)))) {
        sqlite3_clear_bindings(st);
        return EDHOC_STATE_ERR_IO;
    }
    rc = step_done(st);
    return rc == SQLITE_OK ? 0 : map_sqlite_error(rc);
}

static int peer_exists(struct edhoc_state_db *db, const uint8_t *idc, size_t idc_len,
                       const uint8_t *rid, size_t rid_len)
{
    sqlite3_stmt *st = db->st_exists;
    int rc = bind_key(st, idc, idc_len, rid, rid_len);
    if (rc != SQLITE_OK)
        return map_sqlite_error(rc);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc == SQLITE_ROW)
        return 0;
    if (rc == SQLITE_DONE)
        return EDHOC_STATE_ERR_NOT_FOUND;
    return map_sqlite_error(rc);
}

int edhoc_state_store_ssn(struct edhoc_state_db *db, const uint8_t *id_context,
                          size_t id_context_len, const uint8_t *recipient_id,
                          size_t recipient_id_len, uint64_t mark)
{
    if (db == NULL || !id_ok(recipient_id, recipient_id_len) ||
        !id_context_ok(id_context, id_context_len) || mark > (uint64_t)INT64_MAX)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_store_ssn(db->remote, id_context, id_context_len, recipient_id,
                                      recipient_id_len, mark);
    int unusable = usable(db);
    if (unusable)
        return unusable;
    if (db->gc) {
        int result = 0;
        uint64_t t = gc_key_item(db, GC_SSN, id_context, id_context_len, recipient_id,
                                 recipient_id_len, mark, 0, &result);
        return gc_wait_result(db, t, &result);
    }
    return apply_store_ssn(db, id_context, id_context_len, recipient_id, recipient_id_len, mark);
}

static int apply_store_ssn(struct edhoc_state_db *db, const uint8_t *id_context,
                           size_t id_context_len, const uint8_t *recipient_id,
                           size_t recipient_id_len, uint64_t mark)
{
    int pre = before_write(db, mark);
    if (pre)
        return pre;
    sqlite3_stmt *st = db->st_store_ssn;
    int rc = bind_key(st, id_context, id_context_len, recipient_id, recipient_id_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, (sqlite3_int64)mark);
    if (rc != SQLITE_OK) {
        sqlite3_clear_bindings(st);
        return map_sqlite_error(rc);
    }
    rc = step_done(st);
    if (rc != SQLITE_OK)
        return map_sqlite_error(rc);
    if (sqlite3_changes(db->sql) > 0)
        return 0;
    /* Nothing changed: either the stored mark is already at or above this
     * one (fine, it is durable) or there is no such context. */
    return peer_exists(db, id_context, id_context_len, recipient_id, recipient_id_len);
}

int edhoc_state_store_ssn_cb(void *binding, uint64_t mark)
{
    const struct edhoc_state_ssn_binding *b = binding;
    if (b == NULL || (!b->has_id_context && b->id_context_len != 0))
        return EDHOC_STATE_ERR_ARG;
    return edhoc_state_store_ssn(b->db, b->has_id_context ? b->id_context : NULL,
                                 b->id_context_len, b->recipient_id, b->recipient_id_len, mark);
}

int edhoc_state_delete_peer(struct edhoc_state_db *db, const uint8_t *id_context,
                            size_t id_context_len, const uint8_t *recipient_id,
                            size_t recipient_id_len)
{
    if (db == NULL || !id_ok(recipient_id, recipient_id_len) ||
        !id_context_ok(id_context, id_context_len))
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_delete_peer(db->remote, id_context, id_context_len, recipient_id,
                                        recipient_id_len);
    int unusable = usable(db);
    if (unusable)
        return unusable;
    if (db->gc) {
        gc_key_item(db, GC_DELETE, id_context, id_context_len, recipient_id, recipient_id_len, 0,
                    0, NULL);
        return 0;
    }
    return apply_delete(db, id_context, id_context_len, recipient_id, recipient_id_len);
}

static int apply_delete(struct edhoc_state_db *db, const uint8_t *id_context,
                        size_t id_context_len, const uint8_t *recipient_id,
                        size_t recipient_id_len)
{
    sqlite3_stmt *st = db->st_delete;
    int rc = bind_key(st, id_context, id_context_len, recipient_id, recipient_id_len);
    if (rc != SQLITE_OK)
        return map_sqlite_error(rc);
    rc = step_done(st);
    if (rc != SQLITE_OK)
        return map_sqlite_error(rc);
    return sqlite3_changes(db->sql) > 0 ? 0 : EDHOC_STATE_ERR_NOT_FOUND;
}

static bool copy_blob(sqlite3_stmt *st, int col, uint8_t *dst, size_t cap, size_t *len)
{
    if (sqlite3_column_type(st, col) != SQLITE_BLOB)
        return false;
    const void *src = sqlite3_column_blob(st, col);
    int n = sqlite3_column_bytes(st, col);
    if (n < 0 || (size_t)n > cap || (n > 0 && src == NULL))
        return false;
    if (n > 0)
        memcpy(dst, src, (size_t)n);
    *len = (size_t)n;
    return true;
}

static bool int_col(sqlite3_stmt *st, int col, int *out)
{
    sqlite3_int64 v = sqlite3_column_int64(st, col);
    if (v < INT_MIN || v > INT_MAX)
        return false;
    *out = (int)v;
    return true;
}

/* Decode one row (in PEER_COLUMNS order). A value out of range means the
 * file was edited or damaged behind our back. */
static int row_to_peer(sqlite3_stmt *st, struct edhoc_state_peer *p)
{
    memset(p, 0, sizeof *p);
    int has_idc = 0;
    if (!copy_blob(st, 0, p->recipient_id, sizeof p->recipient_id, &p->recipient_id_len) ||
        !int_col(st, 1, &has_idc) || (has_idc != 0 && has_idc != 1) ||
        !copy_blob(st, 2, p->id_context, sizeof p->id_context, &p->id_context_len) ||
        (!has_idc && p->id_context_len != 0) ||
        !copy_blob(st, 3, p->sender_id, sizeof p->sender_id, &p->sender_id_len) ||
        !copy_blob(st, 4, p->master_secret, sizeof p->master_secret, &p->master_secret_len) ||
        !copy_blob(st, 5, p->master_salt, sizeof p->master_salt, &p->master_salt_len) ||
        !int_col(st, 6, &p->aead_alg) || !int_col(st, 7, &p->hkdf_alg) ||
        !int_col(st, 11, &p->method) || !int_col(st, 12, &p->suite))
        return EDHOC_STATE_ERR_CORRUPT;
    p->has_id_context = has_idc == 1;
    sqlite3_int64 mark = sqlite3_column_int64(st, 8);
    if (mark < 0)
        return EDHOC_STATE_ERR_CORRUPT;
    p->ssn_mark = (uint64_t)mark;
    const unsigned char *text = sqlite3_column_text(st, 9);
    int n = sqlite3_column_bytes(st, 9);
    if (text == NULL || n < 0 || (size_t)n >= sizeof p->peer)
        return EDHOC_STATE_ERR_CORRUPT;
    memcpy(p->peer, text, (size_t)n);
    p->peer[n] = '\0';
    p->created = sqlite3_column_int64(st, 10);
    p->last_used = sqlite3_column_int64(st, 13);
    if (p->last_used < 0)
        return EDHOC_STATE_ERR_CORRUPT;
    return 0;
}

static int read_peer(struct edhoc_state_db *db, const uint8_t *id_context,
                     size_t id_context_len, const uint8_t *recipient_id,
                     size_t recipient_id_len, struct edhoc_state_peer *out);

int edhoc_state_get_peer(struct edhoc_state_db *db, const uint8_t *id_context,
                         size_t id_context_len, const uint8_t *recipient_id,
                         size_t recipient_id_len, struct edhoc_state_peer *out)
{
    if (db == NULL || out == NULL || !id_ok(recipient_id, recipient_id_len) ||
        !id_context_ok(id_context, id_context_len))
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_get_peer(db->remote, id_context, id_context_len, recipient_id,
                                     recipient_id_len, out);
    int unusable = usable(db);
    if (unusable)
        return unusable;
    gc_read_begin(db);
    int err = read_peer(db, id_context, id_context_len, recipient_id, recipient_id_len, out);
    gc_read_end(db);
    return err;
}

static int read_peer(struct edhoc_state_db *db, const uint8_t *id_context,
                     size_t id_context_len, const uint8_t *recipient_id,
                     size_t recipient_id_len, struct edhoc_state_peer *out)
{
    sqlite3_stmt *st = db->st_get;
    int rc = bind_key(st, id_context, id_context_len, recipient_id, recipient_id_len);
    if (rc != SQLITE_OK) {
        wipe(out, sizeof *out);
        return map_sqlite_error(rc);
    }
    rc = sqlite3_step(st);
    int err;
    if (rc == SQLITE_ROW)
        err = row_to_peer(st, out);
    else if (rc == SQLITE_DONE)
        err = EDHOC_STATE_ERR_NOT_FOUND;
    else
        err = map_sqlite_error(rc);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (err)
        wipe(out, sizeof *out);
    return err;
}

static int for_each(sqlite3_stmt *st, int (*fn)(void *ctx, const struct edhoc_state_peer *p),
                    void *ctx)
{
    /* The one iteration statement cannot be stepped by two loops at once. */
    if (sqlite3_stmt_busy(st))
        return EDHOC_STATE_ERR_ARG;
    struct edhoc_state_peer p;
    int result = 0;
    for (;;) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
            break;
        if (rc != SQLITE_ROW) {
            result = map_sqlite_error(rc);
            break;
        }
        result = row_to_peer(st, &p);
        if (result == 0)
            result = fn(ctx, &p);
        if (result != 0)
            break;
    }
    wipe(&p, sizeof p);
    sqlite3_reset(st);
    return result;
}

int edhoc_state_for_each_peer(struct edhoc_state_db *db,
                              int (*fn)(void *ctx, const struct edhoc_state_peer *p), void *ctx)
{
    if (db == NULL || fn == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_for_each_peer(db->remote, 0, 0, fn, ctx);
    int unusable = usable(db);
    if (unusable)
        return unusable;
    gc_read_begin(db);
    int err = for_each(db->st_all, fn, ctx);
    gc_read_end(db);
    return err;
}

int edhoc_state_touch_peer(struct edhoc_state_db *db, const uint8_t *id_context,
                           size_t id_context_len, const uint8_t *recipient_id,
                           size_t recipient_id_len, int64_t last_used)
{
    if (db == NULL || !id_ok(recipient_id, recipient_id_len) ||
        !id_context_ok(id_context, id_context_len) || last_used < 0)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_touch_peer(db->remote, id_context, id_context_len, recipient_id,
                                       recipient_id_len, last_used);
    int unusable = usable(db);
    if (unusable)
        return unusable;
    if (db->gc) {
        gc_key_item(db, GC_TOUCH, id_context, id_context_len, recipient_id, recipient_id_len, 0,
                    last_used, NULL);
        return 0;
    }
    return apply_touch(db, id_context, id_context_len, recipient_id, recipient_id_len, last_used);
}

static int apply_touch(struct edhoc_state_db *db, const uint8_t *id_context,
                       size_t id_context_len, const uint8_t *recipient_id,
                       size_t recipient_id_len, int64_t last_used)
{
    sqlite3_stmt *st = db->st_touch;
    int rc = bind_key(st, id_context, id_context_len, recipient_id, recipient_id_len);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, last_used);
    if (rc != SQLITE_OK) {
        sqlite3_clear_bindings(st);
        return map_sqlite_error(rc);
    }
    rc = step_done(st);
    if (rc != SQLITE_OK)
        return map_sqlite_error(rc);
    return sqlite3_changes(db->sql) > 0 ? 0 : EDHOC_STATE_ERR_NOT_FOUND;
}

/* Run one pruning DELETE with ?1 = v, ?2 = limit; *n: the rows it
 * deleted. */
static int prune_step(struct edhoc_state_db *db, sqlite3_stmt *st, int64_t v, int64_t limit,
                      uint64_t *n)
{
    int rc = sqlite3_bind_int64(st, 1, v);
    if (rc == SQLITE_OK && sqlite3_bind_parameter_count(st) >= 2)
        rc = sqlite3_bind_int64(st, 2, limit);
    if (rc == SQLITE_OK)
        rc = step_done(st);
    else
        sqlite3_clear_bindings(st);
    if (rc != SQLITE_OK)
        return map_sqlite_error(rc);
    *n = (uint64_t)sqlite3_changes64(db->sql);
    return 0;
}

/* One integer from a query with ?1 = v (no row: *found false). */
static int query_step(sqlite3_stmt *st, bool bind, int64_t v, int64_t *out, bool *found)
{
    int rc = bind ? sqlite3_bind_int64(st, 1, v) : SQLITE_OK;
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    if (*found)
        *out = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : map_sqlite_error(rc);
}

/* Keep the `keep` most recently used EDHOC contexts; *n: rows deleted. */
static int prune_excess(struct edhoc_state_db *db, uint64_t keep, uint64_t *n)
{
    *n = 0;
    int64_t count = 0, t = INT64_MAX;
    bool found = false;
    int err = query_step(db->st_count_edhoc, false, 0, &count, &found);
    if (err || !found || count < 0 || (uint64_t)count <= keep)
        return err;
    /* keep < count <= INT64_MAX: the keep-th most recent use exists. */
    if (keep > 0) {
        err = query_step(db->st_nth_used, true, (int64_t)keep - 1, &t, &found);
        if (err || !found)
            return err;
    }
    uint64_t older = 0, ties = 0;
    err = prune_step(db, db->st_prune_expired, t, 0, &older);
    if (!err && (uint64_t)count - older > keep)
        err = prune_step(db, db->st_prune_ties, t, (int64_t)((uint64_t)count - older - keep),
                         &ties);
    *n = older + ties;
    return err;
}

int edhoc_state_prune(struct edhoc_state_db *db, int64_t used_before, uint64_t keep,
                      uint64_t *expired, uint64_t *evicted)
{
    uint64_t n_expired = 0, n_evicted = 0;
    if (expired)
        *expired = 0;
    if (evicted)
        *evicted = 0;
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_prune(db->remote, used_before, keep, expired, evicted);
    int unusable = usable(db);
    if (unusable)
        return unusable;
    if (sqlite3_stmt_busy(db->st_all))
        return EDHOC_STATE_ERR_ARG;
    /* With group commit: after what is queued, in a transaction of its own
     * (a rare call: at start-up, and by the writer of several workers). */
    gc_read_begin(db);
    int err = 0;
    if (used_before > 0)
        err = prune_step(db, db->st_prune_expired, used_before, 0, &n_expired);
    if (!err && keep < (uint64_t)INT64_MAX)
        err = prune_excess(db, keep, &n_evicted);
    gc_read_end(db);
    if (expired)
        *expired = n_expired;
    if (evicted)
        *evicted = n_evicted;
    return err;
}

long edhoc_state_count(struct edhoc_state_db *db)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_count(db->remote);
    int unusable = usable(db);
    if (unusable)
        return unusable;
    gc_read_begin(db);
    sqlite3_stmt *st = db->st_count;
    int rc = sqlite3_step(st);
    long n = rc == SQLITE_ROW ? (long)sqlite3_column_int64(st, 0) : map_sqlite_error(rc);
    sqlite3_reset(st);
    gc_read_end(db);
    return n;
}

int edhoc_state_begin(struct edhoc_state_db *db)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_begin(db->remote);
    int unusable = usable(db);
    if (unusable)
        return unusable;
    if (db->gc)
        return gc_begin(db);
    if (!sqlite3_get_autocommit(db->sql))
        return EDHOC_STATE_ERR_ARG;
    int rc = step_done(db->st_begin);
    return rc == SQLITE_OK ? 0 : map_sqlite_error(rc);
}

int edhoc_state_commit(struct edhoc_state_db *db)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_commit(db->remote);
    int unusable = usable(db);
    if (unusable)
        return unusable;
    if (db->gc)
        return gc_end(db);
    if (sqlite3_get_autocommit(db->sql))
        return EDHOC_STATE_ERR_ARG;
    int rc = step_done(db->st_commit);
    if (rc == SQLITE_OK)
        return 0;
    /* A failed COMMIT may leave the transaction open; end it so the handle
     * is usable again and nothing half-done lingers. */
    if (!sqlite3_get_autocommit(db->sql))
        step_done(db->st_rollback);
    return map_sqlite_error(rc);
}

int edhoc_state_rollback(struct edhoc_state_db *db)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_commit(db->remote);
    int unusable = usable(db);
    if (unusable)
        return unusable;
    if (db->gc)
        return gc_end(db); /* queued writes are not taken back (marks only go up) */
    if (sqlite3_get_autocommit(db->sql))
        return EDHOC_STATE_ERR_ARG;
    int rc = step_done(db->st_rollback);
    return rc == SQLITE_OK ? 0 : map_sqlite_error(rc);
}

unsigned edhoc_state_owner(const uint8_t *recipient_id, size_t len, unsigned count)
{
    if (count <= 1 || len == 0 || recipient_id == NULL)
        return 0;
    return recipient_id[len - 1] % count;
}

struct state_remote *state_remote_new(int fd);

int edhoc_state_connect(int fd, struct edhoc_state_db **out)
{
    if (fd < 0 || out == NULL)
        return EDHOC_STATE_ERR_ARG;
    *out = NULL;
    struct edhoc_state_db *db = calloc(1, sizeof *db);
    if (db == NULL)
        return EDHOC_STATE_ERR_IO;
    db->dir_fd = -1;
    db->file_fd = -1;
    db->remote = state_remote_new(fd);
    if (db->remote == NULL) {
        free(db);
        return EDHOC_STATE_ERR_IO;
    }
    *out = db;
    return 0;
}

struct owned_filter {
    unsigned count, index;
    int (*fn)(void *ctx, const struct edhoc_state_peer *p);
    void *ctx;
};

static int owned_only(void *user, const struct edhoc_state_peer *p)
{
    const struct owned_filter *f = user;
    if (edhoc_state_owner(p->recipient_id, p->recipient_id_len, f->count) != f->index)
        return 0;
    return f->fn(f->ctx, p);
}

int edhoc_state_for_each_owned_peer(struct edhoc_state_db *db, unsigned count, unsigned index,
                                    int (*fn)(void *ctx, const struct edhoc_state_peer *p),
                                    void *ctx)
{
    if (db == NULL || fn == NULL || (count > 1 && index >= count))
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        /* Filtered by the writer: a worker reads only its own rows. */
        return state_remote_for_each_peer(db->remote, count, index, fn, ctx);
    if (count <= 1)
        return edhoc_state_for_each_peer(db, fn, ctx);
    struct owned_filter f = {count, index, fn, ctx};
    return edhoc_state_for_each_peer(db, owned_only, &f);
}

const char *edhoc_state_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
    case EDHOC_STATE_ERR_IO:
        return "cannot create, open or write the state database";
    case EDHOC_STATE_ERR_FOREIGN:
        return "not an edhoc-cli state database";
    case EDHOC_STATE_ERR_CORRUPT:
        return "state database is damaged";
    case EDHOC_STATE_ERR_VERSION:
        return "state database written by a newer schema version";
    case EDHOC_STATE_ERR_NOT_FOUND:
        return "no such context";
    case EDHOC_STATE_ERR_ARG:
        return "invalid argument";
    case EDHOC_STATE_ERR_UNSAFE:
        return "state directory or database open to other users";
    default:
        return "unknown state error";
    }
}

/* ---- Group commit ----
 * One writer thread per handle takes what the callers queue (new
 * contexts, deletions, marks, use times) and commits it in batches: one
 * transaction and one WAL fsync per batch. A batch closes when it holds
 * max_rows items, when max_ms have passed since its first item came, or
 * at once when a caller waits for it (a mark needed now, a flush, a read).
 * Items keep their order; a batch that fails (a statement or its commit)
 * is rolled back whole and every item in it fails.
 *
 * What is durable when (docs/DESIGN.md, "Group commit"):
 *   - a sequence-number mark: edhoc_state_store_ssn returns once the batch
 *     holding it committed; edhoc_state_store_ssn_async queues it and
 *     edhoc_state_wait says when that batch committed. The responder
 *     queues the next mark when it enters a block, so it seldom waits;
 *   - a new context (put), a deletion, a use time: committed with the
 *     next batch, no caller waits. Losing the newest contexts in a crash
 *     costs their devices a new handshake; their keys were never on disk,
 *     so no restart can use them again.
 * The connection is shared by the writer and the callers' reads under
 * sql_lock; a read first waits for what was queued before it, so a handle
 * reads its own writes. */
#define GC_QUEUE_MAX 65536 /* callers wait beyond this (a disk that stopped) */
#define GC_FAILS 64        /* failed batches remembered for edhoc_state_wait */

struct gc_item {
    uint8_t op; /* enum gc_op */
    bool has_idc;
    uint8_t idc_len, rid_len;
    uint8_t idc[EDHOC_STATE_MAX_ID_CONTEXT];
    uint8_t rid[EDHOC_STATE_MAX_ID];
    uint64_t ticket;
    uint64_t mark;
    int64_t last_used;
    int *result; /* a waiting caller's slot for the item's own answer, or NULL */
    struct edhoc_state_peer peer; /* GC_PUT only */
};

struct gc_failure {
    uint64_t lo, hi; /* tickets of the batch */
    int err;
};

struct group_commit {
    pthread_mutex_t q_lock;
    pthread_cond_t q_cond;    /* to the writer: items, a waiter, stop */
    pthread_cond_t done_cond; /* to waiters: a batch finished */
    pthread_mutex_t sql_lock; /* the connection; recursive (for_each's fn may read) */
    pthread_t thread;
    bool running, stop;
    unsigned max_rows, max_ms;
    struct gc_item *q;
    size_t n, cap;
    uint64_t next_ticket; /* the last one given */
    uint64_t done_ticket; /* every ticket up to this one is committed or failed */
    uint64_t flushed;     /* edhoc_state_flush answered up to here */
    uint64_t begin_ticket;
    bool in_begin;
    unsigned waiters;
    bool urgent; /* the writer process has an answer waiting for the open batch */
    unsigned read_depth;
    struct gc_failure fails[GC_FAILS];
    unsigned n_fails;          /* ever recorded; fails[n % GC_FAILS] is the next slot */
    uint64_t forgotten_fail_hi; /* newest failed ticket pushed out of fails[] */
    int efd;
    struct edhoc_state_writer_stats st;
};

static int gc_apply_batch(struct edhoc_state_db *db, struct gc_item *b, size_t n, int *rcs)
{
    int rc = sqlite3_step(db->st_begin);
    sqlite3_reset(db->st_begin);
    if (rc != SQLITE_DONE)
        return map_sqlite_error(rc);
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        struct gc_item *it = &b[i];
        const uint8_t *idc = it->has_idc ? it->idc : NULL;
        switch (it->op) {
        case GC_PUT:
            rcs[i] = apply_put(db, &it->peer);
            break;
        case GC_SSN:
            rcs[i] = apply_store_ssn(db, idc, it->idc_len, it->rid, it->rid_len, it->mark);
            break;
        case GC_DELETE:
            rcs[i] = apply_delete(db, idc, it->idc_len, it->rid, it->rid_len);
            break;
        case GC_TOUCH:
            rcs[i] = apply_touch(db, idc, it->idc_len, it->rid, it->rid_len, it->last_used);
            break;
        default:
            rcs[i] = EDHOC_STATE_ERR_ARG;
        }
        /* NOT_FOUND is the item's answer (a touch of a row deleted since),
         * not a failure of the batch. */
        if (rcs[i] && rcs[i] != EDHOC_STATE_ERR_NOT_FOUND)
            err = rcs[i];
    }
    if (!err) {
        rc = sqlite3_step(db->st_commit);
        sqlite3_reset(db->st_commit);
        if (rc != SQLITE_DONE)
            err = map_sqlite_error(rc);
    }
    /* A failed statement or COMMIT may leave the transaction open (or
     * SQLite rolled it back already, for SQLITE_FULL): nothing of the
     * batch stays. */
    if (err && !sqlite3_get_autocommit(db->sql)) {
        sqlite3_step(db->st_rollback);
        sqlite3_reset(db->st_rollback);
    }
    return err;
}

static void gc_deadline(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void *gc_main(void *arg)
{
    struct edhoc_state_db *db = arg;
    struct group_commit *g = db->gc;
    struct gc_item *batch = calloc(g->max_rows, sizeof *batch);
    int *rcs = calloc(g->max_rows, sizeof *rcs);
    pthread_mutex_lock(&g->q_lock);
    while (batch && rcs) {
        while (g->n == 0 && !g->stop)
            pthread_cond_wait(&g->q_cond, &g->q_lock);
        if (g->n == 0)
            break; /* stop, nothing left */
        /* The batch is open from its first item on. */
        struct timespec until;
        gc_deadline(&until, g->max_ms);
        bool timed_out = false;
        while (g->n < g->max_rows && !g->waiters && !g->urgent && !g->stop && !timed_out)
            timed_out = pthread_cond_timedwait(&g->q_cond, &g->q_lock, &until) == ETIMEDOUT;
        if (g->n >= g->max_rows)
            g->st.closed_by_size++;
        else if (timed_out)
            g->st.closed_by_time++;
        else
            g->st.closed_by_wait++;
        g->urgent = false;
        size_t take = g->n < g->max_rows ? g->n : g->max_rows;
        memcpy(batch, g->q, take * sizeof *batch);
        memmove(g->q, g->q + take, (g->n - take) * sizeof *g->q);
        wipe(g->q + g->n - take, take * sizeof *g->q);
        g->n -= take;
        /* Room in the queue for callers held back by GC_QUEUE_MAX. */
        pthread_cond_broadcast(&g->done_cond);
        pthread_mutex_unlock(&g->q_lock);

        pthread_mutex_lock(&g->sql_lock);
        int err = gc_apply_batch(db, batch, take, rcs);
        pthread_mutex_unlock(&g->sql_lock);

        pthread_mutex_lock(&g->q_lock);
        uint64_t lo = batch[0].ticket, hi = batch[take - 1].ticket;
        for (size_t i = 0; i < take; i++) {
            if (batch[i].result)
                *batch[i].result = err ? err : rcs[i];
        }
        if (err) {
            struct gc_failure *slot = &g->fails[g->n_fails % GC_FAILS];
            if (g->n_fails >= GC_FAILS && slot->hi > g->forgotten_fail_hi)
                g->forgotten_fail_hi = slot->hi;
            *slot = (struct gc_failure){lo, hi, err};
            g->n_fails++;
            g->st.failed_commits++;
            g->st.failed_rows += take;
        } else {
            g->st.commits++;
            g->st.rows += take;
            if (take > g->st.largest_batch)
                g->st.largest_batch = take;
        }
        g->done_ticket = hi;
        pthread_cond_broadcast(&g->done_cond);
        wipe(batch, take * sizeof *batch);
        uint64_t one = 1;
        if (write(g->efd, &one, sizeof one) < 0) {
            /* Full counter: whoever polls it has a wake-up pending anyway. */
        }
    }
    /* Out of memory at start: every waiter must still be released. */
    g->done_ticket = g->next_ticket;
    pthread_cond_broadcast(&g->done_cond);
    pthread_mutex_unlock(&g->q_lock);
    free(batch);
    free(rcs);
    return NULL;
}

int edhoc_state_group_commit(struct edhoc_state_db *db, unsigned max_rows, unsigned max_ms)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_group(db->remote); /* the writer process sets the batches */
    if (max_rows == 0)
        return EDHOC_STATE_ERR_ARG;
    if (db->gc)
        return EDHOC_STATE_ERR_ARG;
    int unusable = usable(db);
    if (unusable)
        return unusable;
    if (!sqlite3_get_autocommit(db->sql))
        return EDHOC_STATE_ERR_ARG; /* inside edhoc_state_begin/commit */
    struct group_commit *g = calloc(1, sizeof *g);
    if (g == NULL)
        return EDHOC_STATE_ERR_IO;
    g->max_rows = max_rows;
    g->max_ms = max_ms;
    g->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (g->efd < 0 || pthread_mutex_init(&g->sql_lock, &ma) ||
        pthread_mutex_init(&g->q_lock, NULL) || pthread_cond_init(&g->q_cond, &ca) ||
        pthread_cond_init(&g->done_cond, NULL)) {
        if (g->efd >= 0)
            close(g->efd);
        free(g);
        return EDHOC_STATE_ERR_IO;
    }
    pthread_mutexattr_destroy(&ma);
    pthread_condattr_destroy(&ca);
    db->gc = g;
    return 0;
}

/* Under q_lock: start the writer in this process if it is not running. */
static bool gc_ensure_thread(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (g->running)
        return true;
    sigset_t all, old;
    sigfillset(&all);
    /* Signals stay with the threads that handle them. */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    g->running = pthread_create(&g->thread, NULL, gc_main, db) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return g->running;
}

/* Queue *it (its ticket set here); returns the ticket, 0 when the writer
 * cannot run (then it was applied at once, under the lock). */
static uint64_t gc_enqueue(struct edhoc_state_db *db, struct gc_item *it)
{
    struct group_commit *g = db->gc;
    pthread_mutex_lock(&g->q_lock);
    while (g->n >= GC_QUEUE_MAX && g->running)
        pthread_cond_wait(&g->done_cond, &g->q_lock);
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        struct gc_item *q = malloc(cap * sizeof *q);
        if (q) {
            if (g->n)
                memcpy(q, g->q, g->n * sizeof *q);
            wipe(g->q, g->cap * sizeof *g->q);
            free(g->q);
            g->q = q;
            g->cap = cap;
        }
    }
    if (g->n == g->cap || !gc_ensure_thread(db)) {
        pthread_mutex_unlock(&g->q_lock);
        /* No memory or no thread: synchronous, as without group commit. */
        int rcs[1];
        pthread_mutex_lock(&g->sql_lock);
        int err = gc_apply_batch(db, it, 1, rcs);
        pthread_mutex_unlock(&g->sql_lock);
        if (it->result)
            *it->result = err ? err : rcs[0];
        wipe(it, sizeof *it);
        return 0;
    }
    it->ticket = ++g->next_ticket;
    g->q[g->n++] = *it;
    wipe(it, sizeof *it);
    if (g->n == 1 || g->n >= g->max_rows)
        pthread_cond_signal(&g->q_cond);
    g->st.queued = g->n;
    uint64_t t = g->next_ticket;
    pthread_mutex_unlock(&g->q_lock);
    return t;
}

static int gc_put(struct edhoc_state_db *db, const struct edhoc_state_peer *p)
{
    struct gc_item it = {.op = GC_PUT, .peer = *p};
    gc_enqueue(db, &it);
    return 0;
}

static uint64_t gc_key_item(struct edhoc_state_db *db, enum gc_op op, const uint8_t *idc,
                            size_t idc_len, const uint8_t *rid, size_t rid_len, uint64_t mark,
                            int64_t last_used, int *result)
{
    struct gc_item it = {.op = (uint8_t)op, .mark = mark, .last_used = last_used,
                         .result = result};
    it.has_idc = idc != NULL;
    it.idc_len = (uint8_t)idc_len;
    if (idc_len)
        memcpy(it.idc, idc, idc_len);
    it.rid_len = (uint8_t)rid_len;
    if (rid_len)
        memcpy(it.rid, rid, rid_len);
    return gc_enqueue(db, &it);
}

/* Under q_lock: the failure of a batch holding a ticket in [lo, hi]. */
static int gc_failed(const struct group_commit *g, uint64_t lo, uint64_t hi)
{
    unsigned kept = g->n_fails < GC_FAILS ? g->n_fails : GC_FAILS;
    for (unsigned i = 0; i < kept; i++) {
        const struct gc_failure *f = &g->fails[i];
        if (f->lo <= hi && f->hi >= lo)
            return f->err;
    }
    /* Older failures than fails[] remembers: cannot tell, so not durable. */
    return g->forgotten_fail_hi >= lo ? EDHOC_STATE_ERR_IO : 0;
}

/* Under q_lock: wait until every ticket up to t is finished. */
static void gc_wait_locked(struct group_commit *g, uint64_t t)
{
    if (g->done_ticket >= t)
        return;
    g->waiters++;
    g->st.waits++;
    pthread_cond_signal(&g->q_cond);
    while (g->done_ticket < t && g->running)
        pthread_cond_wait(&g->done_cond, &g->q_lock);
    g->waiters--;
}

static int gc_wait_result(struct edhoc_state_db *db, uint64_t ticket, int *result)
{
    if (ticket == 0)
        return result ? *result : 0;
    struct group_commit *g = db->gc;
    pthread_mutex_lock(&g->q_lock);
    gc_wait_locked(g, ticket);
    int err = g->done_ticket >= ticket ? gc_failed(g, ticket, ticket) : EDHOC_STATE_ERR_IO;
    if (!err && result)
        err = *result;
    pthread_mutex_unlock(&g->q_lock);
    return err;
}

static void gc_read_begin(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (g == NULL)
        return;
    if (g->read_depth++ == 0) {
        pthread_mutex_lock(&g->q_lock);
        gc_wait_locked(g, g->next_ticket);
        pthread_mutex_unlock(&g->q_lock);
    }
    pthread_mutex_lock(&g->sql_lock);
}

static void gc_read_end(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (g == NULL)
        return;
    pthread_mutex_unlock(&g->sql_lock);
    g->read_depth--;
}

static int gc_begin(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (g->in_begin)
        return EDHOC_STATE_ERR_ARG;
    pthread_mutex_lock(&g->q_lock);
    g->begin_ticket = g->next_ticket;
    g->in_begin = true;
    pthread_mutex_unlock(&g->q_lock);
    return 0;
}

static int gc_end(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (!g->in_begin)
        return EDHOC_STATE_ERR_ARG;
    g->in_begin = false;
    pthread_mutex_lock(&g->q_lock);
    uint64_t lo = g->begin_ticket + 1, hi = g->next_ticket;
    gc_wait_locked(g, hi);
    int err = lo > hi ? 0 : g->done_ticket >= hi ? gc_failed(g, lo, hi) : EDHOC_STATE_ERR_IO;
    pthread_mutex_unlock(&g->q_lock);
    return err;
}

int edhoc_state_flush(struct edhoc_state_db *db)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote)
        return state_remote_flush(db->remote);
    struct group_commit *g = db->gc;
    if (g == NULL)
        return 0; /* every write was durable on return */
    pthread_mutex_lock(&g->q_lock);
    uint64_t lo = g->flushed + 1, hi = g->next_ticket;
    gc_wait_locked(g, hi);
    int err = lo > hi ? 0 : g->done_ticket >= hi ? gc_failed(g, lo, hi) : EDHOC_STATE_ERR_IO;
    g->flushed = hi;
    pthread_mutex_unlock(&g->q_lock);
    return err;
}

int edhoc_state_store_ssn_async(struct edhoc_state_db *db, const uint8_t *id_context,
                                size_t id_context_len, const uint8_t *recipient_id,
                                size_t recipient_id_len, uint64_t mark, uint64_t *ticket)
{
    if (ticket)
        *ticket = 0;
    if (db == NULL || ticket == NULL || !id_ok(recipient_id, recipient_id_len) ||
        !id_context_ok(id_context, id_context_len) || mark > (uint64_t)INT64_MAX)
        return EDHOC_STATE_ERR_ARG;
    if (db->remote || db->gc == NULL)
        return edhoc_state_store_ssn(db, id_context, id_context_len, recipient_id,
                                     recipient_id_len, mark);
    int unusable = usable(db);
    if (unusable)
        return unusable;
    *ticket = gc_key_item(db, GC_SSN, id_context, id_context_len, recipient_id,
                          recipient_id_len, mark, 0, NULL);
    return 0;
}

int edhoc_state_wait(struct edhoc_state_db *db, uint64_t ticket, bool block)
{
    if (db == NULL)
        return EDHOC_STATE_ERR_ARG;
    struct group_commit *g = db->gc;
    if (ticket == 0 || db->remote || g == NULL)
        return 0;
    pthread_mutex_lock(&g->q_lock);
    if (block)
        gc_wait_locked(g, ticket);
    int err = g->done_ticket >= ticket ? gc_failed(g, ticket, ticket)
              : block                  ? EDHOC_STATE_ERR_IO
                                       : EDHOC_STATE_PENDING;
    pthread_mutex_unlock(&g->q_lock);
    return err;
}

bool edhoc_state_is_grouped(const struct edhoc_state_db *db)
{
    if (db == NULL)
        return false;
    return db->remote ? state_remote_is_grouped(db->remote) : db->gc != NULL;
}

int edhoc_state_event_fd(const struct edhoc_state_db *db)
{
    return db && db->gc ? db->gc->efd : -1;
}

int edhoc_state_get_writer_stats(struct edhoc_state_db *db, struct edhoc_state_writer_stats *out)
{
    if (db == NULL || out == NULL)
        return EDHOC_STATE_ERR_ARG;
    memset(out, 0, sizeof *out);
    struct group_commit *g = db->gc;
    if (g == NULL)
        return EDHOC_STATE_ERR_NOT_FOUND;
    pthread_mutex_lock(&g->q_lock);
    *out = g->st;
    out->queued = g->n;
    pthread_mutex_unlock(&g->q_lock);
    return 0;
}

static void gc_free(struct group_commit *g)
{
    if (g->q) {
        wipe(g->q, g->cap * sizeof *g->q);
        free(g->q);
    }
    if (g->efd >= 0)
        close(g->efd);
    free(g);
}

static void gc_stop(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (g == NULL)
        return;
    if (db->fork_gen == state_fork_generation && g->running) {
        pthread_mutex_lock(&g->q_lock);
        g->stop = true;
        pthread_cond_signal(&g->q_cond);
        pthread_mutex_unlock(&g->q_lock);
        pthread_join(g->thread, NULL); /* it commits what is queued first */
    }
    pthread_mutex_destroy(&g->q_lock);
    pthread_mutex_destroy(&g->sql_lock);
    pthread_cond_destroy(&g->q_cond);
    pthread_cond_destroy(&g->done_cond);
    db->gc = NULL;
    gc_free(g);
}

/* In a child of fork(): the writer thread stayed in the parent, with
 * whatever it had queued (flush before forking to keep it); the child
 * starts with an empty queue and its own thread once it writes. */
static void gc_forget_after_fork(struct edhoc_state_db *db)
{
    struct group_commit *g = db->gc;
    if (g == NULL)
        return;
    db->gc_restart_rows = g->max_rows;
    db->gc_restart_ms = g->max_ms;
    db->gc = NULL;
    if (g->q) {
        wipe(g->q, g->cap * sizeof *g->q);
        free(g->q);
    }
    if (g->efd >= 0)
        close(g->efd);
    /* g itself stays allocated: its mutexes may have been held by the
     * thread at the fork and cannot be destroyed. One small leak per fork
     * of a process that holds a handle with group commit. */
}

uint64_t state_gc_last_ticket(struct edhoc_state_db *db)
{
    struct group_commit *g = db ? db->gc : NULL;
    if (g == NULL)
        return 0;
    pthread_mutex_lock(&g->q_lock);
    uint64_t t = g->next_ticket;
    pthread_mutex_unlock(&g->q_lock);
    return t;
}

int state_gc_status(struct edhoc_state_db *db, uint64_t lo, uint64_t hi)
{
    struct group_commit *g = db ? db->gc : NULL;
    if (g == NULL || hi == 0 || lo > hi)
        return 0;
    pthread_mutex_lock(&g->q_lock);
    int err = g->done_ticket >= hi ? gc_failed(g, lo, hi) : EDHOC_STATE_PENDING;
    if (err == EDHOC_STATE_PENDING && !g->urgent) {
        /* Someone waits for these: close the batch now rather than at its
         * time limit (the writer process answers a mark only once it is
         * durable, and the worker is waiting). */
        g->urgent = true;
        g->st.waits++;
        pthread_cond_signal(&g->q_cond);
    }
    pthread_mutex_unlock(&g->q_lock);
    return err;
}
