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
 * migrate_v2 adds it, set from each row's creation time. Version 3 kept
 * the rows in a WITHOUT ROWID table ordered by their key; migrate_v3
 * moves them into version 4's rowid table.
 *
 * Opening never writes to a file before it has been recognised: the header
 * is read by hand, then a read-only SQLite connection checks the ids and
 * runs quick_check, and only then is the read-write connection opened. A
 * new database is built under a temporary name and renamed into place, so
 * the state file either does not exist or is a complete, initialised
 * database -- an empty or half-written file is never ours.
 */
#include "state_internal.h"

/* ---- small helpers ---- */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
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
        state_set_why(why, cap, "%s: state directory path is empty or too long", dir);
        return EDHOC_STATE_ERR_ARG;
    }
    bool created = false;
    if (edhoc_secret_mkdirs(dir, &created) != 0) {
        state_set_why(why, cap, "%s: cannot create directory: %s", dir, strerror(errno));
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
    static const char *const sides[] = {"", "-wal", "-shm"}; /* and the mark file, at open */
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
        state_set_why(why, cap, "%s: cannot lock %s: %s", path, what, strerror(errno));
        return EDHOC_STATE_ERR_IO;
    }
    struct stat st;
    long pid = fstat(fd, &st) == 0 ? flock_holder(&st) : 0;
    char holder[48] = "";
    if (pid > 0)
        snprintf(holder, sizeof holder, " (pid %ld)", pid);
    state_set_why(why, cap, "%s: %s is in use by another process%s", path, what, holder);
    return EDHOC_STATE_ERR_IO;
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
static const char schema_sql[] = "BEGIN;"
                                 "PRAGMA application_id = " /* value appended at run time */;

/* The context table of version 4. "No ID Context" is has_id_context = 0
 * with an empty id_context, kept apart from an empty ID Context
 * (has_id_context = 1) by the key itself. A rowid table, not WITHOUT
 * ROWID as in version 3: the recipient ID is the C_R the responder drew
 * at random, so a table ordered by it took every new context into a
 * random leaf page, and a batch of a few hundred new contexts rewrote
 * about as many 4 KiB pages (81 MB written for 21,000 handshakes; the
 * writer thread was 5% of the responder's CPU). In rowid order a new row
 * appends, and only the key's unique index (entries of a few bytes, many
 * to a page) takes random inserts: 26-31 MB for the same load, the
 * writer at 3% (docs/DESIGN.md, "Group commit"). The recipient ID leads the key:
 * the contexts a kid may name without 'kid context' are adjacent.
 * last_used (Unix milliseconds) is indexed for the contexts of EDHOC
 * runs (method >= 0), the ones that are evicted and expire: counting
 * them and finding the N-th most recently used read the index alone. */
#define PEER_INDEX_SQL "CREATE INDEX peer_last_used ON peer (last_used) WHERE method >= 0;"
#define PEER_TABLE_SQL                                                                             \
    "CREATE TABLE peer ("                                                                          \
    "  recipient_id BLOB NOT NULL,"                                                                \
    "  has_id_context INTEGER NOT NULL CHECK (has_id_context IN (0, 1)),"                          \
    "  id_context BLOB NOT NULL CHECK (has_id_context = 1 OR length(id_context) = 0),"             \
    "  sender_id BLOB NOT NULL,"                                                                   \
    "  master_secret BLOB NOT NULL,"                                                               \
    "  master_salt BLOB NOT NULL,"                                                                 \
    "  aead_alg INTEGER NOT NULL,"                                                                 \
    "  hkdf_alg INTEGER NOT NULL,"                                                                 \
    "  ssn_mark INTEGER NOT NULL CHECK (ssn_mark >= 0),"                                           \
    "  peer TEXT NOT NULL,"                                                                        \
    "  created INTEGER NOT NULL,"                                                                  \
    "  method INTEGER NOT NULL,"                                                                   \
    "  suite INTEGER NOT NULL,"                                                                    \
    "  last_used INTEGER NOT NULL DEFAULT 0,"                                                      \
    "  PRIMARY KEY (recipient_id, has_id_context, id_context)"                                     \
    ") STRICT;" PEER_INDEX_SQL

static const char schema_tables_sql[] = "CREATE TABLE meta ("
                                        "  key TEXT PRIMARY KEY NOT NULL,"
                                        "  value ANY"
                                        ") STRICT;" PEER_TABLE_SQL;

/* The columns of version 2 (the v1 migration fills these; last_used
 * follows from created). */
#define PEER_COLUMNS_V2                                                                            \
    "recipient_id, has_id_context, id_context, sender_id, master_secret, master_salt, "            \
    "aead_alg, hkdf_alg, ssn_mark, peer, created, method, suite"

#define PEER_COLUMNS PEER_COLUMNS_V2 ", last_used"

/* The columns of version 1's peer table (keyed by recipient_id alone). */
#define PEER_COLUMNS_V1                                                                            \
    "recipient_id, sender_id, id_context, master_secret, master_salt, aead_alg, "                  \
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
static const char prune_expired_sql[] = "DELETE FROM peer WHERE method >= 0 AND last_used < ?1";
static const char prune_ties_sql[] =
    "DELETE FROM peer WHERE method >= 0 AND last_used = ?1 AND"
    " (recipient_id, has_id_context, id_context) IN"
    " (SELECT recipient_id, has_id_context, id_context FROM peer"
    "  WHERE method >= 0 AND last_used = ?1"
    "  ORDER BY recipient_id, has_id_context, id_context LIMIT ?2)";

/* The hot path: one indexed UPDATE, and the WHERE clause is what keeps a
 * mark from ever going down. */
static const char store_ssn_sql[] = "UPDATE peer SET ssn_mark = ?4" WHERE_KEY " AND ssn_mark < ?4";

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
    "ALTER TABLE peer RENAME TO peer_v1;" PEER_TABLE_SQL "INSERT INTO peer (" PEER_COLUMNS_V2 ")"
    "  SELECT recipient_id, length(id_context) > 0, id_context, sender_id, master_secret,"
    "    master_salt, aead_alg, hkdf_alg, ssn_mark, peer, created, method, suite FROM peer_v1;"
    "INSERT INTO peer (" PEER_COLUMNS_V2 ")"
    "  SELECT recipient_id, 1, id_context, sender_id, master_secret,"
    "    master_salt, aead_alg, hkdf_alg, ssn_mark, peer, created, method, suite FROM peer_v1"
    "  WHERE method < 0 AND length(id_context) = 0;"
    "UPDATE peer SET last_used = created * 1000;"
    "DROP TABLE peer_v1;"
    "UPDATE meta SET value = 4 WHERE key = 'schema_version';"
    "PRAGMA user_version = 4;"
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

/* Version 3 -> 4: the same rows, columns and index, in a rowid table
 * (PEER_TABLE_SQL says why). The old table is dropped with secure_delete
 * on, so its pages, master secrets included, are zeroed as they are
 * freed. */
static const char migrate_v3_sql[] =
    "BEGIN IMMEDIATE;"
    "ALTER TABLE peer RENAME TO peer_v3;"
    "DROP INDEX peer_last_used;" PEER_TABLE_SQL "INSERT INTO peer (" PEER_COLUMNS ")"
    "  SELECT " PEER_COLUMNS " FROM peer_v3;"
    "DROP TABLE peer_v3;"
    "UPDATE meta SET value = 4 WHERE key = 'schema_version';"
    "PRAGMA user_version = 4;"
    "COMMIT;";
_Static_assert(EDHOC_STATE_SCHEMA_VERSION == 4, "the migrations end at the current version");

/* Build a fresh database next to the final name and rename it into place:
 * the final name never refers to a partly initialised file. */
static int create_database(const char *path, int dir_fd, char *why, size_t cap)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.new", path) >= sizeof tmp) {
        state_set_why(why, cap, "%s: path too long", path);
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
        state_set_why(why, cap, "%s: cannot create: %s", tmp, strerror(errno));
        return EDHOC_STATE_ERR_IO;
    }
    /* The umask may have taken bits away (0400 would not open for
     * writing); SQLite gives -wal and -shm the mode of this file. */
    if (fchmod(fd, 0600) != 0) {
        state_set_why(why, cap, "%s: cannot set mode 0600: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return EDHOC_STATE_ERR_IO;
    }
    close(fd);

    sqlite3 *sql = NULL;
    int err = 0;
    int rc = sqlite3_open_v2(tmp, &sql, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        state_set_why(why, cap, "%s: %s", tmp, state_sqlite_problem(rc));
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
    err = state_exec_sql(sql, text, tmp, why, cap);
    if (err)
        goto out;
    /* Closing the last connection checkpoints and removes the WAL, so all
     * of the new database is in the one file we rename. */
    rc = sqlite3_close(sql);
    sql = NULL;
    if (rc != SQLITE_OK) {
        state_set_why(why, cap, "%s: %s", tmp, sqlite3_errstr(rc));
        err = EDHOC_STATE_ERR_IO;
        goto out;
    }
    if (fsync_path(tmp) != 0 || rename(tmp, path) != 0 || fsync(dir_fd) != 0) {
        state_set_why(why, cap, "%s: cannot install new database: %s", path, strerror(errno));
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
        state_set_why(why, cap, "%s: cannot open: %s", path, strerror(errno));
        return errno == ELOOP ? EDHOC_STATE_ERR_FOREIGN : EDHOC_STATE_ERR_IO;
    }
    ssize_t n = 0;
    while (n < (ssize_t)sizeof hdr) {
        ssize_t r = read(fd, hdr + n, sizeof hdr - (size_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            state_set_why(why, cap, "%s: cannot read: %s", path, strerror(errno));
            close(fd);
            return EDHOC_STATE_ERR_IO;
        }
        if (r == 0)
            break;
        n += r;
    }
    close(fd);

    if (n == 0) {
        state_set_why(why, cap,
                      "%s: empty file, not an edhoc-cli state database (refusing to touch it)",
                      path);
        return EDHOC_STATE_ERR_FOREIGN;
    }
    if (n < 16 || memcmp(hdr, SQLITE_HEADER_MAGIC, 16) != 0) {
        state_set_why(why, cap,
                      "%s: not an SQLite database, so not an edhoc-cli state file "
                      "(refusing to touch it)",
                      path);
        return EDHOC_STATE_ERR_FOREIGN;
    }
    if (n < (ssize_t)sizeof hdr) {
        state_set_why(why, cap, "%s: truncated SQLite header (%zd bytes)", path, n);
        return EDHOC_STATE_ERR_CORRUPT;
    }
    /* The application id never changes after creation, so the header on
     * disk is authoritative and another program's database is recognised
     * without SQLite ever opening it (which could create -wal/-shm files). */
    uint32_t app = be32(hdr + 68);
    if (app != (uint32_t)EDHOC_STATE_APPLICATION_ID) {
        state_set_why(why, cap,
                      "%s: another application's SQLite database (application_id 0x%08" PRIx32
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
        state_set_why(why, cap, "%s: path too long", path);
        return EDHOC_STATE_ERR_ARG;
    }
    snprintf(uri, sizeof uri, "file:%s?mode=ro%s", esc, immutable ? "&immutable=1" : "");

    sqlite3 *sql = NULL;
    int err = 0;
    int rc = sqlite3_open_v2(uri, &sql,
                             SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        state_set_why(why, cap, "%s: %s", path, state_sqlite_problem(rc));
        err = state_map_sqlite_error(rc);
        goto out;
    }
    sqlite3_db_config(sql, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(sql, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);

    int64_t v = 0;
    if (state_query_int(sql, "PRAGMA application_id", &v, &rc) != 0) {
        state_set_why(why, cap, "%s: %s", path, state_sqlite_problem(rc));
        err = state_map_sqlite_error(rc);
        goto out;
    }
    if ((uint32_t)v != (uint32_t)EDHOC_STATE_APPLICATION_ID) {
        state_set_why(why, cap,
                      "%s: another application's SQLite database (application_id 0x%08" PRIx32
                      "); refusing to touch it",
                      path, (uint32_t)v);
        err = EDHOC_STATE_ERR_FOREIGN;
        goto out;
    }
    int64_t version = 0;
    if (state_query_int(sql, "PRAGMA user_version", &version, &rc) != 0) {
        state_set_why(why, cap, "%s: %s", path, state_sqlite_problem(rc));
        err = state_map_sqlite_error(rc);
        goto out;
    }
    if (version > EDHOC_STATE_SCHEMA_VERSION) {
        state_set_why(why, cap,
                      "%s: written by a newer edhoc-cli (schema version %" PRId64
                      ", this build knows up to %d); refusing to touch it",
                      path, version, EDHOC_STATE_SCHEMA_VERSION);
        err = EDHOC_STATE_ERR_VERSION;
        goto out;
    }
    if (version < 1) {
        state_set_why(why, cap, "%s: edhoc-cli application id but no schema version; damaged",
                      path);
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
        state_set_why(why, cap, "%s: integrity check failed: %s", path, sqlite3_errmsg(sql));
        err = rc == SQLITE_DONE ? EDHOC_STATE_ERR_CORRUPT : state_map_sqlite_error(rc);
        sqlite3_finalize(st);
        goto out;
    }
    const char *verdict = (const char *)sqlite3_column_text(st, 0);
    if (verdict == NULL || strcmp(verdict, "ok") != 0) {
        state_set_why(why, cap, "%s: integrity check failed: %s", path, verdict ? verdict : "?");
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
                            "       (SELECT value FROM meta WHERE key = 'schema_version')",
                            -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        state_set_why(why, cap, "%s: metadata unreadable: %s", path, sqlite3_errmsg(sql));
        err = (rc & 0xff) == SQLITE_ERROR ? EDHOC_STATE_ERR_CORRUPT : state_map_sqlite_error(rc);
        sqlite3_finalize(st);
        goto out;
    }
    const char *magic = (const char *)sqlite3_column_text(st, 0);
    int64_t meta_version = sqlite3_column_int64(st, 1);
    if (magic == NULL || strcmp(magic, STATE_MAGIC) != 0 || meta_version != version) {
        state_set_why(why, cap,
                      "%s: metadata does not match (magic %s, version %" PRId64 "/%" PRId64
                      "); damaged",
                      path, magic ? magic : "missing", meta_version, version);
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
        state_set_why(why, cap, "%s: peer table unusable: %s", path, sqlite3_errmsg(sql));
        err = (rc & 0xff) == SQLITE_ERROR ? EDHOC_STATE_ERR_CORRUPT : state_map_sqlite_error(rc);
    }
out:
    sqlite3_close(sql);
    return err;
}

static int prepare(struct edhoc_state_db *db, const char *text, sqlite3_stmt **st, const char *path,
                   char *why, size_t cap)
{
    int rc = sqlite3_prepare_v3(db->sql, text, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
    if (rc != SQLITE_OK) {
        state_set_why(why, cap, "%s: %s", path, sqlite3_errmsg(db->sql));
        return (rc & 0xff) == SQLITE_ERROR ? EDHOC_STATE_ERR_CORRUPT : state_map_sqlite_error(rc);
    }
    return 0;
}

/* Bring an older database to the current version (migrate_v1_sql,
 * migrate_v2_sql). All or nothing: on failure the transaction is rolled
 * back and the file keeps its version. */
static int migrate(sqlite3 *sql, int from, const char *path, char *why, size_t cap)
{
    char *msg = NULL;
    const char *steps = from == 1 ? migrate_v1_sql : from == 2 ? migrate_v2_sql : migrate_v3_sql;
    int rc = sqlite3_exec(sql, steps, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        return 0;
    state_set_why(why, cap, "%s: cannot migrate from schema version %d: %s", path, from,
                  msg ? msg : state_sqlite_problem(rc));
    sqlite3_free(msg);
    if (!sqlite3_get_autocommit(sql))
        sqlite3_exec(sql, "ROLLBACK", NULL, NULL, NULL);
    /* A plain SQL error here means the file holds something a version 1
     * database of ours does not (a table in the way, a row the new
     * constraints refuse), as when preparing statements fails. */
    return (rc & 0xff) == SQLITE_ERROR || (rc & 0xff) == SQLITE_CONSTRAINT
               ? EDHOC_STATE_ERR_CORRUPT
               : state_map_sqlite_error(rc);
}

static int open_read_write(struct edhoc_state_db *db, const char *path, char *why, size_t cap)
{
    int rc = sqlite3_open_v2(path, &db->sql, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        state_set_why(why, cap, "%s: %s", path, state_sqlite_problem(rc));
        return state_map_sqlite_error(rc);
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
    int err = state_exec_sql(db->sql,
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
    if (state_query_int(db->sql, "PRAGMA application_id", &app, &rc) != 0 ||
        state_query_int(db->sql, "PRAGMA user_version", &version, &rc) != 0) {
        state_set_why(why, cap, "%s: %s", path, state_sqlite_problem(rc));
        return state_map_sqlite_error(rc);
    }
    while ((uint32_t)app == (uint32_t)EDHOC_STATE_APPLICATION_ID && version >= 1 &&
           version < EDHOC_STATE_SCHEMA_VERSION) {
        /* One version at a time, each step its own transaction (1 goes
         * to 4 at once). secure_delete is already on, so the old table's
         * pages are zeroed as they are freed. */
        int64_t from = version;
        err = migrate(db->sql, (int)version, path, why, cap);
        if (err)
            return err;
        if (state_query_int(db->sql, "PRAGMA user_version", &version, &rc) != 0) {
            state_set_why(why, cap, "%s: %s", path, state_sqlite_problem(rc));
            return state_map_sqlite_error(rc);
        }
        if (version <= from)
            break; /* refused just below */
    }
    if ((uint32_t)app != (uint32_t)EDHOC_STATE_APPLICATION_ID ||
        version != EDHOC_STATE_SCHEMA_VERSION) {
        state_set_why(why, cap, "%s: changed while being opened; refusing it", path);
        return EDHOC_STATE_ERR_FOREIGN;
    }

    if ((err = prepare(db, put_sql, &db->st_put, path, why, cap)) ||
        (err = prepare(db, store_ssn_sql, &db->st_store_ssn, path, why, cap)) ||
        (err = prepare(db, "SELECT 1 FROM peer" WHERE_KEY, &db->st_exists, path, why, cap)) ||
        (err = prepare(db, "SELECT " PEER_COLUMNS " FROM peer" WHERE_KEY, &db->st_get, path, why,
                       cap)) ||
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
     * generation on (state_check_generation). */
    sqlite3_wal_hook(db->sql, state_after_commit, db);
    return 0;
}

/* ---- public API ---- */

int edhoc_state_open(const char *dir, struct edhoc_state_db **out, char *why, size_t why_cap)
{
    if (why && why_cap)
        why[0] = '\0';
    if (out == NULL || dir == NULL) {
        state_set_why(why, why_cap, "no state directory given");
        return EDHOC_STATE_ERR_ARG;
    }
    *out = NULL;

    int err = make_dirs(dir, why, why_cap);
    if (err)
        return err;
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, EDHOC_STATE_FILE) >= sizeof path - 8) {
        state_set_why(why, why_cap, "%s: state directory path too long", dir);
        return EDHOC_STATE_ERR_ARG;
    }

    struct edhoc_state_db *db = calloc(1, sizeof *db);
    if (db == NULL) {
        state_set_why(why, why_cap, "%s: out of memory", path);
        return EDHOC_STATE_ERR_IO;
    }
    /* Two processes serving the same contexts would each count sequence
     * numbers from the same mark and reuse nonces, so one holder at a
     * time. flock on the directory does not interfere with SQLite's own
     * fcntl locks on the database file. */
    db->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (db->dir_fd < 0) {
        state_set_why(why, why_cap, "%s: cannot open directory: %s", dir, strerror(errno));
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
        state_set_why(why, why_cap, "%s: state directory path too long", dir);
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
            state_set_why(why, why_cap, "%s: %s", path, strerror(errno));
            err = EDHOC_STATE_ERR_IO;
            goto fail;
        }
        err = create_database(path, db->dir_fd, why, why_cap);
        if (err)
            goto fail;
        created = true;
    } else if (!S_ISREG(st.st_mode)) {
        state_set_why(why, why_cap, "%s: not a regular file; refusing to touch it", path);
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
        state_set_why(why, why_cap, "%s: cannot open: %s", path, strerror(errno));
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
    err = state_check_generation(db, created, why, why_cap);
    if (err)
        goto fail;
    db->pid = getpid();
    state_watch_forks();
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
    sqlite3_stmt **all[] = {&db->st_put,      &db->st_store_ssn,     &db->st_exists,
                            &db->st_get,      &db->st_all,           &db->st_delete,
                            &db->st_count,    &db->st_begin,         &db->st_commit,
                            &db->st_rollback, &db->st_touch,         &db->st_count_edhoc,
                            &db->st_nth_used, &db->st_prune_expired, &db->st_prune_ties};
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
int state_usable(struct edhoc_state_db *db)
{
    /* The fork generation, not getpid(): one load instead of a system call
     * on every call of the hot path. */
    if (db->fork_gen != state_fork_generation) {
        state_gc_forget_after_fork(db);
        close_connection(db);
        db->pid = getpid();
        db->fork_gen = state_fork_generation;
        int err = open_read_write(db, db->path, NULL, 0);
        if (err) {
            close_connection(db);
            return err;
        }
        /* Closing the inherited connection may have checkpointed: the main
         * file is complete again, so a new generation (as state_after_commit). */
        if (state_write_mark_file(db, db->generation + 1, db->ceiling) == 0)
            db->generation_unwritten = true;
        else
            db->bump_failed = true;
        if (db->gc_restart_rows) {
            unsigned rows = db->gc_restart_rows;
            db->gc_restart_rows = 0;
            state_gc_start(db, rows, db->gc_restart_ms);
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
    if (db->be) {
        if (db->be->close)
            db->be->close(db->be_impl);
        free(db);
        return;
    }
    /* What is queued is committed first (a clean stop loses nothing). */
    state_gc_stop(db);
    /* The last close checkpoints: with the generation written, the main
     * file then matches the mark file, and the next open finds nothing
     * lost. */
    if (db->sql && db->generation_unwritten && db->fork_gen == state_fork_generation &&
        sqlite3_get_autocommit(db->sql))
        state_set_meta(db, "generation", db->generation);
    close_connection(db);
    if (db->file_fd >= 0)
        close(db->file_fd);
    if (db->dir_fd >= 0)
        close(db->dir_fd); /* releases the flock */
    free(db);
}
