/* A store that went backwards: the generation and the mark ceiling kept
 * where a stale copy of the database cannot match them. */
#include "state_internal.h"

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
 * the stale copy lacks (meta 'floor'). Without a state_usable file (deleted, or
 * older than the database) nothing bounds what was lost: marks jump
 * STATE_UNKNOWN_MARGIN above the highest stored one. A state directory
 * restored whole (database and mark file) cannot be told from the real
 * one: never restore one in service. */
#define STATE_CEILING_STEP      ((uint64_t)1 << 16)
#define STATE_UNKNOWN_MARGIN    ((uint64_t)1 << 32)
#define STATE_CHECKPOINT_FRAMES 1000 /* SQLite's own automatic checkpoint */
#define MARK_MAGIC              "edhoc-cli state marks v1"

int state_write_mark_file(struct edhoc_state_db *db, uint64_t generation, uint64_t ceiling)
{
    char tmp[PATH_MAX + 8], text[128];
    snprintf(tmp, sizeof tmp, "%s.new", db->mark_path);
    int n =
        snprintf(text, sizeof text, MARK_MAGIC "\ngeneration %" PRIu64 "\nceiling %" PRIu64 "\n",
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
               ceiling, &tail) != 3 ||
        tail != '\n')
        return -1;
    return 1;
}

/* A checkpoint made the main file complete: move the generation on before
 * the next commit can go to a WAL that may be lost. */
int state_after_commit(void *user, sqlite3 *sql, const char *name, int frames)
{
    struct edhoc_state_db *db = user;
    if (frames < STATE_CHECKPOINT_FRAMES)
        return SQLITE_OK;
    int log = 0, done = 0;
    if (sqlite3_wal_checkpoint_v2(sql, name, SQLITE_CHECKPOINT_PASSIVE, &log, &done) != SQLITE_OK ||
        done <= 0)
        return SQLITE_OK;
    if (state_write_mark_file(db, db->generation + 1, db->ceiling) == 0)
        db->generation_unwritten = true;
    else
        db->bump_failed = true;
    return SQLITE_OK;
}

int state_set_meta(struct edhoc_state_db *db, const char *key, uint64_t v)
{
    char text[160];
    snprintf(text, sizeof text,
             "INSERT INTO meta (key, value) VALUES ('%s', %" PRIu64 ") "
             "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
             key, v);
    int rc = sqlite3_exec(db->sql, text, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : state_map_sqlite_error(rc);
}

/* Before a write: what a checkpoint left to do, and a ceiling above the
 * mark about to be stored. Costs two comparisons when there is nothing. */
int state_before_write(struct edhoc_state_db *db, uint64_t mark)
{
    if (db->bump_failed) {
        if (state_write_mark_file(db, db->generation + 1, db->ceiling) != 0)
            return EDHOC_STATE_ERR_IO;
        db->bump_failed = false;
        db->generation_unwritten = true;
    }
    if (mark > db->ceiling) {
        uint64_t c =
            mark > UINT64_MAX - STATE_CEILING_STEP ? UINT64_MAX : mark + STATE_CEILING_STEP;
        if (state_write_mark_file(db, db->generation, c) != 0)
            return EDHOC_STATE_ERR_IO;
    }
    if (db->generation_unwritten) {
        int err = state_set_meta(db, "generation", db->generation);
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
    if (state_query_int(sql, text, &v, &rc) != 0)
        v = absent;
    return v;
}

/* At open: compare the mark file with the database, jump the marks on
 * doubt (recorded in db->recovery), and start a new generation. */
int state_check_generation(struct edhoc_state_db *db, bool created, char *why, size_t cap)
{
    uint64_t s_gen = 0, s_ceiling = 0;
    int have = read_mark_file(db->mark_path, &s_gen, &s_ceiling);
    int64_t d_gen = meta_int(db->sql, "generation", -1);
    int64_t max_mark = 0;
    int rc;
    if (state_query_int(db->sql, "SELECT coalesce(max(ssn_mark), 0) FROM peer", &max_mark, &rc) !=
        0) {
        state_set_why(why, cap, "%s: %s", db->path, state_sqlite_problem(rc));
        return state_map_sqlite_error(rc);
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
                 ")",
                 db->mark_path, s_gen, d_gen);
        to = (s_ceiling > top ? s_ceiling : top) + STATE_UNKNOWN_MARGIN;
    }
    uint64_t ceiling = have > 0 && s_ceiling > top ? s_ceiling : top;
    if (found[0]) {
        if (to > (uint64_t)INT64_MAX)
            to = (uint64_t)INT64_MAX;
        char text[256];
        snprintf(text, sizeof text,
                 "BEGIN IMMEDIATE; UPDATE peer SET ssn_mark = %" PRIu64 " WHERE ssn_mark < %" PRIu64
                 ";",
                 to, to);
        char *msg = NULL;
        rc = sqlite3_exec(db->sql, text, NULL, NULL, &msg);
        long moved = rc == SQLITE_OK ? (long)sqlite3_changes(db->sql) : 0;
        int err = rc == SQLITE_OK ? 0 : state_map_sqlite_error(rc);
        if (!err && to > db->floor)
            err = state_set_meta(db, "floor", to);
        if (!err)
            err = state_exec_sql(db->sql, "COMMIT;", db->path, why, cap);
        if (err) {
            if (msg)
                state_set_why(why, cap, "%s: cannot move the marks up: %s", db->path, msg);
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
                 "Appendix B.1.1), so no nonce is used twice",
                 db->path, found, to, moved);
        if (to > ceiling)
            ceiling = to;
    }
    uint64_t next = (have > 0 ? s_gen : 0) > (uint64_t)(d_gen > 0 ? d_gen : 0)
                        ? s_gen
                        : (uint64_t)(d_gen > 0 ? d_gen : 0);
    if (state_write_mark_file(db, next + 1, ceiling) != 0) {
        state_set_why(why, cap, "%s: cannot write: %s", db->mark_path, strerror(errno));
        return EDHOC_STATE_ERR_IO;
    }
    int err = state_set_meta(db, "generation", db->generation);
    if (err)
        state_set_why(why, cap, "%s: cannot record the generation: %s", db->path,
                      sqlite3_errmsg(db->sql));
    return err;
}

const char *edhoc_state_recovery(const struct edhoc_state_db *db)
{
    return db && db->recovery[0] ? db->recovery : NULL;
}
