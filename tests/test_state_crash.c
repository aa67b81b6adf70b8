/*
 * The state store under crashes: kill -9 while storing marks, a handle
 * across daemonizing, ten thousand contexts, and a store that went
 * backwards (a lost -wal, a stale copy).
 */
#include "state_test_util.h"

static void child_store_loop(const char *dir, int fd)
{
    struct edhoc_state_db *db = NULL;
    if (edhoc_state_open(dir, &db, NULL, 0) != 0)
        _exit(2);
    struct edhoc_state_peer p;
    make_peer(&p, 77);
    struct edhoc_state_peer stored;
    uint64_t mark = 0;
    if (edhoc_state_get_peer(db, KEY(p), &stored) == 0) {
        mark = stored.ssn_mark;
    } else {
        p.ssn_mark = 0;
        if (edhoc_state_put_peer(db, &p) != 0)
            _exit(3);
    }
    for (;;) {
        mark += 1 + mark % 7;
        if (edhoc_state_store_ssn(db, KEY(p), mark) != 0)
            _exit(4);
        /* Reported only after store_ssn returned: the claim under test. */
        if (write(fd, &mark, sizeof mark) != (ssize_t)sizeof mark)
            _exit(5);
    }
}

static void test_crash_safety_kill9(void **state)
{
    struct fixture *f = *state;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    print_message("# crash test seed %u\n", seed);
    srand(seed);
    uint64_t previous = 0;
    for (int round = 0; round < 6; round++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            child_store_loop(f->sdir, fds[1]);
        }
        close(fds[1]);

        /* Wait for the first report, then let it run 0-150 ms more. */
        uint64_t m = 0, last = 0;
        assert_int_equal(read(fds[0], &m, sizeof m), (ssize_t)sizeof m);
        last = m;
        struct timespec ts = {0, (long)(rand() % 150) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        ssize_t r;
        while ((r = read(fds[0], &m, sizeof m)) == (ssize_t)sizeof m)
            last = m;
        close(fds[0]);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

        struct edhoc_state_db *db = open_ok(f->sdir);
        struct edhoc_state_peer p;
        make_peer(&p, 77);
        uint64_t stored = get_mark(db, &p);
        print_message("# round %d: last reported %" PRIu64 ", stored %" PRIu64 "\n", round, last,
                      stored);
        assert_true(stored >= last);
        assert_true(stored >= previous);
        /* At most one store can be durable but unreported when killed. */
        assert_true(stored <= last + 7);
        previous = stored;
        edhoc_state_close(db);
    }
}

static bool holds_posix_lock(pid_t pid)
{
    FILE *fp = fopen("/proc/locks", "r");
    if (fp == NULL)
        return true; /* cannot tell: do not fail for that */
    char line[256];
    bool found = false;
    while (fgets(line, sizeof line, fp)) {
        long lpid = 0;
        char kind[16];
        if (sscanf(line, "%*s %15s %*s %*s %ld", kind, &lpid) == 2 && !strcmp(kind, "POSIX") &&
            lpid == (long)pid)
            found = true;
    }
    fclose(fp);
    return found;
}

/* The daemon's path: open, fork, the parent exits at once and the child
 * goes on using the handle it inherited. */
static void test_handle_survives_daemonizing(void **state)
{
    struct fixture *f = *state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        struct edhoc_state_db *db = NULL;
        if (edhoc_state_open(f->sdir, &db, NULL, 0) != 0)
            _exit(2);
        struct edhoc_state_peer p;
        make_peer(&p, 5);
        p.ssn_mark = 10;
        if (edhoc_state_put_peer(db, &p) != 0)
            _exit(3);
        pid_t middle = getpid();
        pid_t grandchild = fork();
        if (grandchild != 0)
            _exit(grandchild > 0 ? 0 : 4);
        /* Let the parent be gone, as after daemon(). */
        while (getppid() == middle)
            usleep(1000);
        uint64_t result = 1;
        struct edhoc_state_peer got;
        if (edhoc_state_store_ssn(db, KEY(p), 5000) == 0 &&
            edhoc_state_get_peer(db, KEY(p), &got) == 0 && got.ssn_mark == 5000 &&
            edhoc_state_count(db) == 1)
            result = got.ssn_mark;
        /* POSIX locks are not inherited: this process holds SQLite's
         * locks only if the handle reconnected in it. */
        if (!holds_posix_lock(getpid()))
            result = 2;
        edhoc_state_close(db);
        if (write(fds[1], &result, sizeof result) != (ssize_t)sizeof result)
            _exit(5);
        _exit(0);
    }
    close(fds[1]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    uint64_t result = 0;
    assert_int_equal(read(fds[0], &result, sizeof result), (ssize_t)sizeof result);
    close(fds[0]);
    assert_true(result == 5000);

    /* The grandchild has closed: the directory is free and the file sound. */
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p;
    make_peer(&p, 5);
    assert_true(get_mark(db, &p) == 5000);
    edhoc_state_close(db);
}

/* ---- scale and cost ---- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct check_all {
    uint32_t next;
    int bad;
};

static int check_all_fn(void *ctx, const struct edhoc_state_peer *p)
{
    struct check_all *c = ctx;
    struct edhoc_state_peer want;
    make_peer(&want, c->next++);
    if (p->recipient_id_len != want.recipient_id_len ||
        memcmp(p->recipient_id, want.recipient_id, want.recipient_id_len) != 0 ||
        p->master_secret_len != want.master_secret_len ||
        memcmp(p->master_secret, want.master_secret, want.master_secret_len) != 0 ||
        p->master_salt_len != want.master_salt_len ||
        memcmp(p->master_salt, want.master_salt, want.master_salt_len) != 0 ||
        p->ssn_mark != want.ssn_mark || strcmp(p->peer, want.peer) != 0 || p->suite != want.suite)
        c->bad++;
    return 0;
}

static void test_ten_thousand_contexts(void **state)
{
    struct fixture *f = *state;
    const uint32_t n = 10000;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p;

    /* Bulk: one transaction, one fsync. */
    double t0 = now_s();
    assert_int_equal(edhoc_state_begin(db), 0);
    for (uint32_t i = 0; i < n; i++) {
        make_peer(&p, i);
        assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    }
    assert_int_equal(edhoc_state_commit(db), 0);
    double t1 = now_s();
    edhoc_state_close(db);
    struct stat st;
    assert_int_equal(stat(f->file, &st), 0);

    double t2 = now_s();
    db = open_ok(f->sdir);
    double t3 = now_s();
    assert_int_equal(edhoc_state_count(db), (long)n);
    struct check_all c = {0};
    assert_int_equal(edhoc_state_for_each_peer(db, check_all_fn, &c), 0);
    double t4 = now_s();
    assert_int_equal(c.next, n);
    assert_int_equal(c.bad, 0);
    print_message(
        "# %u contexts: put in one transaction %.3f s, file %lld bytes (%.0f bytes/context), "
        "open+check %.3f s, load all %.3f s\n",
        n, t1 - t0, (long long)st.st_size, (double)st.st_size / n, t3 - t2, t4 - t3);

    /* One durable put per new context, as each completed handshake does. */
    const uint32_t puts = 500;
    double t5 = now_s();
    for (uint32_t i = n; i < n + puts; i++) {
        make_peer(&p, i);
        assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    }
    double t6 = now_s();
    assert_int_equal(edhoc_state_count(db), (long)(n + puts));
    print_message("# put_peer (own transaction, fsync each): %u calls in %.3f s = %.0f calls/s\n",
                  puts, t6 - t5, puts / (t6 - t5));

    /* The hot path: store_ssn on the 10,500-context database. */
    const int calls = 2000;
    make_peer(&p, n / 2);
    double t7 = now_s();
    for (int i = 1; i <= calls; i++)
        assert_int_equal(edhoc_state_store_ssn(db, KEY(p), p.ssn_mark + (uint64_t)i * 20), 0);
    double t8 = now_s();
    /* A mark at or below the stored one costs no write. */
    for (int i = 1; i <= calls; i++)
        assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 1), 0);
    double t9 = now_s();
    print_message("# store_ssn: %d raising calls in %.3f s = %.0f calls/s (%.1f us each); "
                  "non-raising %.0f calls/s\n",
                  calls, t8 - t7, calls / (t8 - t7), (t8 - t7) / calls * 1e6, calls / (t9 - t8));
    assert_true(get_mark(db, &p) == p.ssn_mark + (uint64_t)calls * 20);
    edhoc_state_close(db);
}

/* Issue 23 item 3, a store that went backwards (edhoc/state.h
 * edhoc_state_recovery; RFC 8613 Appendix B.1.1: "F MUST be set so that
 * the last Sender Sequence Number used before reboot is never larger than
 * SSN2"). A process that stored marks and died (kill -9: its -wal holds
 * them) and then lost the -wal, or whose database was replaced by an
 * older copy, must not come back with the old marks: open says what it
 * found and moves every mark up to the ceiling the mark file keeps (the
 * first mark, 32, raised it to 32 + 65536). A clean restart, and a kill -9
 * that lost nothing, report nothing and keep the marks. Before, the mark
 * came back as 32 and no one said a word. */
static void store_and_die(const char *dir, const struct edhoc_state_peer *key, uint64_t mark,
                          int times)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct edhoc_state_db *db = NULL;
        if (edhoc_state_open(dir, &db, NULL, 0))
            _exit(2);
        for (int i = 0; i < times; i++)
            if (edhoc_state_store_ssn(db, KEY(*key), mark + (uint64_t)i))
                _exit(3);
        _exit(0); /* no close: the -wal stays as kill -9 leaves it */
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void remove_wal(const struct fixture *f)
{
    char side[1300];
    snprintf(side, sizeof side, "%s-wal", f->file);
    assert_int_equal(unlink(side), 0);
    snprintf(side, sizeof side, "%s-shm", f->file);
    unlink(side);
}

static void copy_file(const char *from, const char *to)
{
    size_t n = 0;
    unsigned char *data = read_all(from, &n);
    unlink(to);
    write_all(to, data, n);
    free(data);
}

static void expect_recovery(const struct fixture *f, const struct edhoc_state_peer *key,
                            const char *found, uint64_t to, uint64_t want_mark)
{
    struct edhoc_state_db *db = open_ok(f->sdir);
    const char *r = edhoc_state_recovery(db);
    if (!found) {
        if (r)
            fail_msg("unexpected recovery: %s", r);
    } else {
        char want[4096];
        snprintf(want, sizeof want,
                 "%s: %s; every sender sequence-number mark moved up to %" PRIu64
                 " (1 contexts, and static contexts not in it start there: RFC 8613 Appendix "
                 "B.1.1), so no nonce is used twice",
                 f->file, found, to);
        if (!r || strcmp(r, want))
            fail_msg("recovery: \"%s\"\n want: \"%s\"", r ? r : "(none)", want);
    }
    assert_true(get_mark(db, key) == want_mark);
    edhoc_state_close(db);
}

/* ---- group commit (edhoc_state_group_commit) ---- */

static void test_store_that_went_backwards(void **state)
{
    struct fixture *f = *state;
    char old[1300], marks[1300], found[2048];
    snprintf(old, sizeof old, "%s/old.sqlite", f->dir);
    snprintf(marks, sizeof marks, "%s/%s", f->sdir, EDHOC_STATE_MARK_FILE);
    const uint64_t ceiling = 32 + 65536;
    struct edhoc_state_peer p;
    make_peer(&p, 3);
    p.method = -1; /* a static context: its row is what keeps its nonces unique */
    p.ssn_mark = 32;
    struct edhoc_state_db *db = open_ok(f->sdir);
    assert_null(edhoc_state_recovery(db)); /* a new database */
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    edhoc_state_close(db);
    copy_file(f->file, old); /* complete: the close checkpointed */
    struct stat st;
    assert_int_equal(stat(marks, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);

    /* A clean restart, and a kill -9 that kept its -wal: nothing lost. */
    expect_recovery(f, &p, NULL, 0, 32);
    store_and_die(f->sdir, &p, 64, 1);
    expect_recovery(f, &p, NULL, 0, 64);

    /* The report's case: kill -9, then the -wal deleted. */
    store_and_die(f->sdir, &p, 96, 1);
    remove_wal(f);
    snprintf(found, sizeof found,
             "the database is older than its mark file (generation 4, the mark file says 5): "
             "its -wal was lost or the file was restored from a copy");
    expect_recovery(f, &p, found, ceiling, ceiling);
    expect_recovery(f, &p, NULL, 0, ceiling); /* once handled, quiet again */

    /* An older copy of the file put back. */
    copy_file(old, f->file);
    snprintf(found, sizeof found,
             "the database is older than its mark file (generation 1, the mark file says 7): "
             "its -wal was lost or the file was restored from a copy");
    expect_recovery(f, &p, found, ceiling, ceiling);

    /* A stale copy without the static context's row: the row comes back
     * at the jump's mark, not at what its file says (0). */
    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_delete_peer(db, KEY(p)), 0);
    edhoc_state_close(db);
    copy_file(old, f->file);
    db = open_ok(f->sdir);
    assert_non_null(edhoc_state_recovery(db));
    assert_int_equal(edhoc_state_delete_peer(db, KEY(p)), 0);
    struct edhoc_state_peer fresh = p;
    fresh.ssn_mark = 0;
    assert_int_equal(edhoc_state_put_peer(db, &fresh), 0);
    assert_true(get_mark(db, &p) == ceiling);
    edhoc_state_close(db);

    /* Without the mark file nothing bounds what was lost: 2^32 above the
     * highest mark. */
    assert_int_equal(unlink(marks), 0);
    snprintf(found, sizeof found,
             "the mark file %s is missing (the database is a copy, or it was deleted)", marks);
    expect_recovery(f, &p, found, ceiling + ((uint64_t)1 << 32), ceiling + ((uint64_t)1 << 32));

    /* More than a checkpoint's worth of commits (1000 frames): the main
     * file is complete after it, and losing the -wal after more marks
     * must still be seen. */
    uint64_t base = ceiling + ((uint64_t)1 << 32);
    store_and_die(f->sdir, &p, base + 1, 1100);
    remove_wal(f);
    db = open_ok(f->sdir);
    const char *r = edhoc_state_recovery(db);
    if (!r || !strstr(r, "its -wal was lost"))
        fail_msg("after a checkpoint: %s", r ? r : "(nothing found)");
    assert_true(get_mark(db, &p) >= base + 1100);
    edhoc_state_close(db);
}

int main(void)
{
    /* Files the tests write stand for ones the tool made (0600); the
     * tests of modes set their own. */
    umask(077);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_crash_safety_kill9, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handle_survives_daemonizing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ten_thousand_contexts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_that_went_backwards, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
