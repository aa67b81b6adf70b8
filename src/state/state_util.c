/* What every file of the store uses: errors and their words, wiping,
 * one-statement SQL, and the count of forks that tells a handle its
 * connection was inherited. */
#include "state_internal.h"

/* Bumped in every child of fork() (pthread_atfork): a handle compares it
 * with the generation it opened its connection in, instead of calling
 * getpid() on every call. */
unsigned state_fork_generation;
static void state_count_fork(void)
{
    state_fork_generation++;
}
static pthread_once_t state_atfork_once = PTHREAD_ONCE_INIT;
static void state_register_atfork(void)
{
    pthread_atfork(NULL, NULL, state_count_fork);
}

void state_watch_forks(void)
{
    pthread_once(&state_atfork_once, state_register_atfork);
}

void state_set_why(char *why, size_t cap, const char *fmt, ...)
{
    if (why == NULL || cap == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

void state_wipe(void *p, size_t n)
{
    /* The first growth of the queue wipes an empty one (NULL, 0). */
    if (p && n)
        explicit_bzero(p, n);
}

/* Map an SQLite result to our error space. The extended codes are masked:
 * only the primary class matters for the caller. */
int state_map_sqlite_error(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_FORMAT: return EDHOC_STATE_ERR_CORRUPT;
    default: return EDHOC_STATE_ERR_IO;
    }
}

const char *state_sqlite_problem(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return "database is locked by another process";
    default: return sqlite3_errstr(rc);
    }
}

int state_exec_sql(sqlite3 *sql, const char *text, const char *path, char *why, size_t cap)
{
    char *msg = NULL;
    int rc = sqlite3_exec(sql, text, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        state_set_why(why, cap, "%s: %s", path, msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return state_map_sqlite_error(rc);
    }
    return 0;
}

/* Run a one-row, one-integer pragma or query. */
int state_query_int(sqlite3 *sql, const char *text, int64_t *out, int *rc_out)
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
