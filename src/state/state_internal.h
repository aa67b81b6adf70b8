/* Private to src/state: the handle of the SQLite store and what its files
 * share (state.c opens and closes it, state_generation.c guards against a
 * store that went backwards, state_peer.c reads and writes rows,
 * state_group_commit.c is the writer thread). */
#ifndef EDHOC_STATE_INTERNAL_H
#define EDHOC_STATE_INTERNAL_H

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

#define STATE_MAGIC         "edhoc-cli state"
#define SQLITE_HEADER_MAGIC "SQLite format 3" /* 16 bytes with its NUL */
#define SQLITE_HEADER_LEN   100

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
    struct state_remote *remote;          /* calls go to a writer process (edhoc_state_connect) */
    const struct edhoc_state_backend *be; /* calls go to another store (edhoc_state_open_backend) */
    void *be_impl;
    int dir_fd; /* holds the flock that keeps a second process out */
    /* The database file's own flock: a hard link of the file in another
     * directory is the same inode, so the same lock. Closed only after
     * SQLite's connection: closing any descriptor of the file drops the
     * process's POSIX locks on it, SQLite's included. */
    int file_fd;
    pid_t pid; /* process that opened sql */
    char path[PATH_MAX];
    /* The mark file (DIR/EDHOC_STATE_MARK_FILE, see "A store that went
     * backwards" below): the generation it holds, the ceiling above every
     * mark ever stored, and the lowest mark a new static row starts at. */
    char mark_path[PATH_MAX];
    uint64_t generation, ceiling, floor;
    bool generation_unwritten;               /* the database does not hold `generation` yet */
    bool bump_failed;                        /* a checkpoint's mark file update failed */
    char recovery[2 * PATH_MAX + 768];       /* what open detected and did, or "" */
    unsigned fork_gen;                       /* state_fork_generation when sql was opened */
    struct group_commit *gc;                 /* the writer thread, once edhoc_state_group_commit */
    unsigned gc_restart_rows, gc_restart_ms; /* group commit to resume after a fork */
};

/* ---- Group commit (the writer thread; defined at the end) ---- */
enum gc_op { GC_PUT = 1, GC_SSN, GC_DELETE, GC_TOUCH };
int state_gc_put(struct edhoc_state_db *db, const struct edhoc_state_peer *p);
uint64_t state_gc_key_item(struct edhoc_state_db *db, enum gc_op op, const uint8_t *idc,
                           size_t idc_len, const uint8_t *rid, size_t rid_len, uint64_t mark,
                           int64_t last_used, int *result);
int state_gc_wait_result(struct edhoc_state_db *db, uint64_t ticket, int *result);
void state_gc_read_begin(struct edhoc_state_db *db);
int state_gc_begin(struct edhoc_state_db *db);
int state_gc_end(struct edhoc_state_db *db);
void state_gc_read_end(struct edhoc_state_db *db);
void state_gc_stop(struct edhoc_state_db *db);
void state_gc_forget_after_fork(struct edhoc_state_db *db);

/* Shared by the files of the store (each defined where its comment is). */
void state_wipe(void *p, size_t n);
int state_usable(struct edhoc_state_db *db);
int state_map_sqlite_error(int rc);
int state_before_write(struct edhoc_state_db *db, uint64_t mark);
const char *state_sqlite_problem(int rc);
void state_set_why(char *why, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int state_query_int(sqlite3 *sql, const char *text, int64_t *out, int *rc_out);
int state_exec_sql(sqlite3 *sql, const char *text, const char *path, char *why, size_t cap);
int state_write_mark_file(struct edhoc_state_db *db, uint64_t generation, uint64_t ceiling);
int state_set_meta(struct edhoc_state_db *db, const char *key, uint64_t v);
int state_check_generation(struct edhoc_state_db *db, bool created, char *why, size_t cap);
int state_after_commit(void *user, sqlite3 *sql, const char *name, int frames);
int state_apply_put(struct edhoc_state_db *db, const struct edhoc_state_peer *p);
int state_apply_store_ssn(struct edhoc_state_db *db, const uint8_t *id_context,
                          size_t id_context_len, const uint8_t *recipient_id,
                          size_t recipient_id_len, uint64_t mark);
int state_apply_delete(struct edhoc_state_db *db, const uint8_t *id_context, size_t id_context_len,
                       const uint8_t *recipient_id, size_t recipient_id_len);
int state_apply_touch(struct edhoc_state_db *db, const uint8_t *id_context, size_t id_context_len,
                      const uint8_t *recipient_id, size_t recipient_id_len, int64_t last_used);
bool state_id_ok(const uint8_t *id, size_t len);
bool state_id_context_ok(const uint8_t *idc, size_t len);

/* Bumped in every child of fork() (state.c). */
extern unsigned state_fork_generation;
void state_watch_forks(void); /* once per process, before the first handle */
/* One row of a SELECT of the peer columns, into *p (state_rows.c). */
int state_row_to_peer(sqlite3_stmt *st, struct edhoc_state_peer *p);
/* Binding the key columns and running one statement (state_rows.c). */
int state_bind_id(sqlite3_stmt *st, int col, const uint8_t *id, size_t len);
int state_bind_key(sqlite3_stmt *st, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                   size_t rid_len);
int state_step_done(sqlite3_stmt *st);
int state_gc_start(struct edhoc_state_db *db, unsigned max_rows, unsigned max_ms);

#endif
