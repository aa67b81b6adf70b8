/*
 * The state writer: group commit (batches closed on size, time and
 * waiters; a failed batch fails every item; a mark durable before use) and
 * the writer process serving several workers.
 */
#include "state_test_util.h"
#include "../src/state/state_test_hooks.h"

#include <pthread.h>
#include <sched.h>

/* ---- One writer for several processes (edhoc_state_connect) ----
 * Two worker processes write through socketpairs to the test process,
 * which serves them: every row arrives with every field, a mark is
 * readable back as soon as the storing call returned (it waits for the
 * commit, RFC 8613 Appendix B.1.1), the writes of both join groups (fewer
 * commits than requests), each worker reads only the rows it owns, and
 * errors travel back (a mark for an unknown context: NOT_FOUND). */
static int remote_worker(int fd, unsigned index)
{
    struct edhoc_state_db *db = NULL;
    if (edhoc_state_connect(fd, &db))
        return 2;
    /* A batch: puts without waiting, then one commit for all. */
    if (edhoc_state_begin(db))
        return 3;
    for (uint32_t i = 0; i < 40; i++) {
        struct edhoc_state_peer p;
        make_peer(&p, index * 1000 + i);
        if (edhoc_state_put_peer(db, &p))
            return 4;
    }
    if (edhoc_state_commit(db))
        return 5;
    /* Marks one by one: each call returns after its commit. */
    for (uint32_t i = 0; i < 40; i++) {
        struct edhoc_state_peer p;
        make_peer(&p, index * 1000 + i);
        if (edhoc_state_store_ssn(db, p.has_id_context ? p.id_context : NULL, p.id_context_len,
                                  p.recipient_id, p.recipient_id_len, p.ssn_mark + 77))
            return 6;
        struct edhoc_state_peer back;
        if (edhoc_state_get_peer(db, p.has_id_context ? p.id_context : NULL, p.id_context_len,
                                 p.recipient_id, p.recipient_id_len, &back) ||
            back.ssn_mark != p.ssn_mark + 77 ||
            memcmp(back.master_secret, p.master_secret, p.master_secret_len))
            return 7;
    }
    uint8_t nobody[1] = {0xee};
    if (edhoc_state_store_ssn(db, NULL, 0, nobody, 1, 5) != EDHOC_STATE_ERR_NOT_FOUND)
        return 8;
    edhoc_state_close(db);
    return 0;
}

static int count_owned(void *ctx, const struct edhoc_state_peer *p)
{
    unsigned *n = ctx;
    n[0]++;
    n[1] += edhoc_state_owner(p->recipient_id, p->recipient_id_len, 2) == 1;
    return 0;
}

static void test_one_writer_for_workers(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = NULL;
    assert_int_equal(edhoc_state_open(f->sdir, &db, NULL, 0), 0);
    struct edhoc_state_server *srv = edhoc_state_server_new(db);
    assert_non_null(srv);
    pid_t pid[2];
    for (unsigned w = 0; w < 2; w++) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
        pid[w] = fork();
        assert_true(pid[w] >= 0);
        if (pid[w] == 0) {
            close(sv[0]);
            _exit(remote_worker(sv[1], w + 1));
        }
        close(sv[1]);
        assert_int_equal(edhoc_state_server_add(srv, sv[0]), 0);
    }
    while (edhoc_state_server_clients(srv) > 0)
        assert_true(edhoc_state_server_run(srv, 100) >= 0);
    for (unsigned w = 0; w < 2; w++) {
        int st = 0;
        assert_int_equal(waitpid(pid[w], &st, 0), pid[w]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
    }
    struct edhoc_state_server_stats st;
    edhoc_state_server_get_stats(srv, &st);
    /* 80 puts, 80 marks, 80 reads, 2 commits, 2 refused marks. */
    assert_int_equal(st.requests, 244);
    edhoc_state_server_free(srv);

    /* Group commit, deterministically: two handles queue batched writes
     * (which do not wait) before the writer runs once: one pass takes all
     * twenty in one transaction, one commit. */
    srv = edhoc_state_server_new(db);
    struct edhoc_state_db *h[2];
    for (unsigned w = 0; w < 2; w++) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
        assert_int_equal(edhoc_state_connect(sv[1], &h[w]), 0);
        assert_int_equal(edhoc_state_server_add(srv, sv[0]), 0);
        assert_int_equal(edhoc_state_begin(h[w]), 0);
        for (uint32_t i = 0; i < 10; i++) {
            struct edhoc_state_peer p;
            make_peer(&p, 5000 + w * 100 + i);
            assert_int_equal(edhoc_state_put_peer(h[w], &p), 0);
        }
    }
    assert_int_equal(edhoc_state_server_run(srv, 1000), 20);
    edhoc_state_server_get_stats(srv, &st);
    assert_int_equal(st.commits, 1);
    assert_int_equal(st.largest_group, 20);
    edhoc_state_close(h[0]);
    edhoc_state_close(h[1]);
    edhoc_state_server_free(srv);
    assert_int_equal(edhoc_state_count(db), 100);
    unsigned n[2] = {0, 0};
    assert_int_equal(edhoc_state_for_each_owned_peer(db, 2, 1, count_owned, n), 0);
    assert_true(n[0] > 0 && n[0] < 100);
    assert_int_equal(n[0], n[1]);
    edhoc_state_close(db);
}

/* A group commit that fails must fail every write of the batches it
 * carried, also for a worker whose own commit comes in a later pass
 * (docs/DESIGN.md: "a call that stores a sequence-number mark returns
 * only after the mark is on disk"; edhoc/state.h: commit "makes all of
 * them durable at once"). The disk filling is a file-size limit on the
 * writer (RLIMIT_FSIZE at the WAL's current size): the commit cannot
 * append its frames. The worker queues ten puts without waiting, the
 * writer runs one pass that takes only them and fails to commit, then the
 * worker commits (next pass, which commits fine): before the fix that
 * answer was success for rows that are not in the database. */
static void test_failed_group_commit_fails_the_batch(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p;
    make_peer(&p, 1);
    assert_int_equal(edhoc_state_put_peer(db, &p), 0); /* the WAL exists and has frames */
    struct edhoc_state_server *srv = edhoc_state_server_new(db);
    assert_non_null(srv);
    int sv[2], ready[2], go[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(sv[0]);
        struct edhoc_state_db *h = NULL;
        char c = 0;
        if (edhoc_state_connect(sv[1], &h) || edhoc_state_begin(h))
            _exit(2);
        for (uint32_t i = 0; i < 10; i++) {
            struct edhoc_state_peer q;
            make_peer(&q, 7000 + i);
            if (edhoc_state_put_peer(h, &q))
                _exit(3);
        }
        if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(4);
        int rc = edhoc_state_commit(h);
        /* The next batch after the failure starts clean. */
        int rc2 = edhoc_state_begin(h);
        struct edhoc_state_peer q;
        make_peer(&q, 7100);
        if (!rc2)
            rc2 = edhoc_state_put_peer(h, &q);
        if (!rc2)
            rc2 = edhoc_state_commit(h);
        edhoc_state_close(h);
        _exit(rc == EDHOC_STATE_ERR_IO && rc2 == 0 ? 0 : rc == 0 ? 10 : 11);
    }
    close(sv[1]);
    assert_int_equal(edhoc_state_server_add(srv, sv[0]), 0);
    char c = 0;
    assert_int_equal(read(ready[0], &c, 1), 1);

    char wal[1300];
    snprintf(wal, sizeof wal, "%s-wal", f->file);
    struct stat wst;
    assert_int_equal(stat(wal, &wst), 0);
    struct rlimit old, full = {(rlim_t)wst.st_size, (rlim_t)wst.st_size};
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    full.rlim_max = old.rlim_max;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &full), 0);
    int served = edhoc_state_server_run(srv, 1000);
    struct edhoc_state_server_stats st;
    edhoc_state_server_get_stats(srv, &st);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    assert_int_equal(served, 10);
    assert_int_equal(st.commits, 1);
    /* The group was rolled back: none of the ten is there. */
    assert_int_equal(edhoc_state_count(db), 1);

    assert_int_equal(write(go[1], "g", 1), 1);
    while (edhoc_state_server_clients(srv) > 0)
        assert_true(edhoc_state_server_run(srv, 100) >= 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    /* 0: the commit answered EDHOC_STATE_ERR_IO; 10: it answered success. */
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(edhoc_state_count(db), 2);
    edhoc_state_server_free(srv);
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    close(go[1]);
    edhoc_state_close(db);
}

static struct edhoc_state_writer_stats writer_stats(struct edhoc_state_db *db)
{
    struct edhoc_state_writer_stats st;
    assert_int_equal(edhoc_state_get_writer_stats(db, &st), 0);
    return st;
}

/* Poll the writer's figures until fn holds, for at most 20 s (a busy
 * host may be slow, never this slow). */
static struct edhoc_state_writer_stats wait_stats(struct edhoc_state_db *db, uint64_t commits)
{
    struct edhoc_state_writer_stats st = writer_stats(db);
    for (int i = 0; i < 20000 && st.commits + st.failed_commits < commits; i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
        st = writer_stats(db);
    }
    return st;
}

static void test_group_commit_batches_rows(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_writer_stats st;
    assert_int_equal(edhoc_state_get_writer_stats(db, &st), EDHOC_STATE_ERR_NOT_FOUND);
    assert_false(edhoc_state_is_grouped(db));
    /* A time limit no test reaches: only the flush closes the batch. */
    assert_int_equal(edhoc_state_group_commit(db, 256, 600000), 0);
    assert_true(edhoc_state_is_grouped(db));
    assert_int_equal(edhoc_state_group_commit(db, 256, 10), EDHOC_STATE_ERR_ARG);
    for (uint32_t i = 0; i < 100; i++) {
        struct edhoc_state_peer p;
        make_peer(&p, 5000 + i);
        assert_int_equal(edhoc_state_put_peer(db, &p), 0); /* queued, not waited for */
    }
    st = writer_stats(db);
    assert_int_equal(st.commits, 0);
    assert_int_equal(edhoc_state_flush(db), 0);
    st = writer_stats(db);
    /* 100 queued items, 1 transaction (one WAL sync). */
    assert_int_equal(st.commits, 1);
    assert_int_equal(st.rows, 100);
    assert_int_equal(st.closed_by_wait, 1);
    /* A read sees its own writes: it waits for what was queued before it. */
    struct edhoc_state_peer p;
    make_peer(&p, 5100);
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    assert_int_equal(edhoc_state_count(db), 101);
    edhoc_state_close(db);
    /* And the clean close lost nothing queued. */
    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_group_commit(db, 256, 600000), 0);
    make_peer(&p, 5200);
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    edhoc_state_close(db);
    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 102);
    edhoc_state_close(db);
}

static void test_group_commit_closes_on_size_and_time(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    /* On size: 10 rows a batch, no time limit in reach. */
    assert_int_equal(edhoc_state_group_commit(db, 10, 600000), 0);
    for (uint32_t i = 0; i < 25; i++) {
        struct edhoc_state_peer p;
        make_peer(&p, 6000 + i);
        assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    }
    struct edhoc_state_writer_stats st = wait_stats(db, 2);
    assert_int_equal(st.commits, 2);
    assert_int_equal(st.closed_by_size, 2);
    assert_int_equal(st.rows, 20);
    assert_int_equal(st.largest_batch, 10);
    assert_int_equal(edhoc_state_flush(db), 0);
    st = writer_stats(db);
    assert_int_equal(st.commits, 3);
    assert_int_equal(st.rows, 25);
    edhoc_state_close(db);

    /* On time: a batch of one closes 20 ms after it opened, nobody
     * waiting for it. */
    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_group_commit(db, 256, 20), 0);
    struct edhoc_state_peer p;
    make_peer(&p, 6100);
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    st = wait_stats(db, 1);
    assert_int_equal(st.commits, 1);
    assert_int_equal(st.closed_by_time, 1);
    assert_int_equal(st.closed_by_wait, 0);
    assert_int_equal(st.waits, 0);
    edhoc_state_close(db);
}

static void test_group_commit_failed_batch_fails_every_item(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p;
    make_peer(&p, 1);
    assert_int_equal(edhoc_state_put_peer(db, &p), 0); /* the WAL exists and has frames */
    assert_int_equal(edhoc_state_group_commit(db, 256, 600000), 0);
    for (uint32_t i = 0; i < 10; i++) {
        struct edhoc_state_peer q;
        make_peer(&q, 7000 + i);
        assert_int_equal(edhoc_state_put_peer(db, &q), 0);
    }
    uint64_t ticket = 0;
    assert_int_equal(edhoc_state_store_ssn_async(db, KEY(p), p.ssn_mark + 5000, &ticket), 0);
    assert_true(ticket > 0);
    assert_int_equal(edhoc_state_wait(db, ticket, false), EDHOC_STATE_PENDING);

    /* The WAL may not grow: the batch's commit fails. */
    char wal[1300];
    snprintf(wal, sizeof wal, "%s-wal", f->file);
    struct stat wst;
    assert_int_equal(stat(wal, &wst), 0);
    struct rlimit old, full = {(rlim_t)wst.st_size, (rlim_t)wst.st_size};
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    full.rlim_max = old.rlim_max;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &full), 0);
    int frc = edhoc_state_flush(db);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    assert_int_equal(frc, EDHOC_STATE_ERR_IO);
    /* Every item of the batch failed: the mark is not durable, and none
     * of the ten contexts is there. */
    assert_int_equal(edhoc_state_wait(db, ticket, true), EDHOC_STATE_ERR_IO);
    struct edhoc_state_writer_stats st = writer_stats(db);
    assert_int_equal(st.failed_commits, 1);
    assert_int_equal(st.failed_rows, 11);
    assert_int_equal(st.commits, 0);
    assert_int_equal(edhoc_state_count(db), 1);
    assert_int_equal(get_mark(db, &p), p.ssn_mark);

    /* The next batch starts clean. */
    struct edhoc_state_peer q;
    make_peer(&q, 7100);
    assert_int_equal(edhoc_state_put_peer(db, &q), 0);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), p.ssn_mark + 6000), 0);
    assert_int_equal(edhoc_state_flush(db), 0);
    assert_int_equal(edhoc_state_count(db), 2);
    assert_int_equal(get_mark(db, &p), p.ssn_mark + 6000);
    edhoc_state_close(db);
}

/* RFC 8613 Section 7.2.1 / Appendix B.1.1: a mark is stored before any
 * number at or above the previous one is used, so edhoc_state_store_ssn
 * returns only once it is durable, and edhoc_state_wait says 0 only then.
 * The writer is a thread of a process killed with SIGKILL right after the
 * claim: what it claimed is on disk. */
static void test_group_commit_mark_durable_before_use(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p;
    make_peer(&p, 77);
    p.ssn_mark = 0;
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    edhoc_state_close(db);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        struct edhoc_state_db *h = NULL;
        if (edhoc_state_open(f->sdir, &h, NULL, 0) || edhoc_state_group_commit(h, 256, 600000))
            _exit(2);
        uint64_t mark = 0, t = 0;
        for (;;) {
            /* One of each: the synchronous call, and the ticket. */
            mark += 32;
            if (edhoc_state_store_ssn(h, KEY(p), mark) != 0)
                _exit(3);
            if (write(fds[1], &mark, sizeof mark) != (ssize_t)sizeof mark)
                _exit(4);
            mark += 32;
            if (edhoc_state_store_ssn_async(h, KEY(p), mark, &t) ||
                edhoc_state_wait(h, t, true) != 0)
                _exit(5);
            if (write(fds[1], &mark, sizeof mark) != (ssize_t)sizeof mark)
                _exit(4);
        }
    }
    close(fds[1]);
    uint64_t m = 0, last = 0;
    for (int i = 0; i < 50; i++) {
        assert_int_equal(read(fds[0], &m, sizeof m), (ssize_t)sizeof m);
        last = m;
    }
    kill(pid, SIGKILL);
    while (read(fds[0], &m, sizeof m) == (ssize_t)sizeof m)
        last = m;
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    db = open_ok(f->sdir);
    uint64_t stored = get_mark(db, &p);
    print_message("# last reported %" PRIu64 ", stored %" PRIu64 "\n", last, stored);
    assert_true(stored >= last);
    assert_true(stored <= last + 32);
    edhoc_state_close(db);
}

/* ---- The writer thread's priority ----
 * The writer thread runs at nice 19: at nice 0 it took the core shared
 * with the datagram thread for a whole batch while packets waited (issue
 * 24's p99 against --state-dir none). A caller that must wait for a
 * batch, such as a sequence-number mark that has to be on disk before the
 * message using it leaves (RFC 8613 Section 7.2.1, Appendix B.1.1),
 * commits it itself at its own priority, so a writer that gets little of
 * a busy core (here, one held) delays only what nobody waits for. */
struct mark_call {
    struct edhoc_state_db *db;
    const struct edhoc_state_peer *p;
    uint64_t mark;
    int rc;
};

static void *store_mark(void *arg)
{
    struct mark_call *c = arg;
    c->rc = edhoc_state_store_ssn(c->db, KEY(*c->p), c->mark);
    return NULL;
}

/* Field (of /proc/PID/task/TID/stat, counted from 1) of this process's
 * thread named name, or -1 when there is no such thread. */
static int thread_stat(const char *name, int want)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int policy = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && policy < 0) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[64] = "", stat[1024] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *fp = fopen(path, "r");
        if (!fp)
            continue;
        bool ours = fgets(comm, sizeof comm, fp) && strncmp(comm, name, strlen(name)) == 0;
        fclose(fp);
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        if (!ours || (fp = fopen(path, "r")) == NULL)
            continue;
        size_t n = fread(stat, 1, sizeof stat - 1, fp);
        fclose(fp);
        stat[n] = '\0';
        /* Counted after the command's closing parenthesis, which ends
         * field 2. */
        char *q = strrchr(stat, ')');
        assert_non_null(q);
        int field = 2;
        for (q++; *q && field < want; q++)
            if (*q == ' ')
                field++;
        policy = atoi(q);
    }
    closedir(d);
    return policy;
}

static int64_t stored_mark_on_disk(const char *dir, const struct edhoc_state_peer *p)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, EDHOC_STATE_FILE);
    sqlite3 *s = NULL;
    assert_int_equal(sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(
        sqlite3_prepare_v2(s, "SELECT ssn_mark FROM peer WHERE recipient_id = ?1", -1, &st, NULL),
        SQLITE_OK);
    sqlite3_bind_blob(st, 1, p->recipient_id, (int)p->recipient_id_len, SQLITE_STATIC);
    int64_t mark = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(s);
    return mark;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void test_group_commit_waiter_commits_itself(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    /* Batches close on a waiter only (600 s, 256 rows). */
    assert_int_equal(edhoc_state_group_commit(db, 256, 600000), 0);
    state_gc_hold_writer(db, true);
    struct edhoc_state_peer p, q;
    make_peer(&p, 91);
    make_peer(&q, 92);
    p.ssn_mark = q.ssn_mark = 0;
    assert_int_equal(edhoc_state_put_peer(db, &p), 0); /* queued, nobody waits */
    assert_int_equal(edhoc_state_put_peer(db, &q), 0);
    /* The writer thread exists once something was queued: an ordinary
     * thread (field 41, policy) at nice 19 (field 19), set by the thread
     * itself as it starts. */
    uint64_t until_nice = mono_ms() + 60000;
    while (thread_stat("edhoc-state-wr", 19) != 19 && mono_ms() < until_nice)
        usleep(1000);
    assert_int_equal(thread_stat("edhoc-state-wr", 19), 19);
    assert_int_equal(thread_stat("edhoc-state-wr", 41), SCHED_OTHER);
    assert_int_equal(stored_mark_on_disk(f->sdir, &p), -1);

    /* A mark that must be durable before use: the call commits the queue
     * itself. Run in a thread so that a waiter left to the held writer
     * fails the test instead of hanging it. */
    struct mark_call c = {.db = db, .p = &p, .mark = 4096, .rc = -1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, store_mark, &c), 0);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 120;
    int joined = pthread_timedjoin_np(t, NULL, &until);
    if (joined != 0)
        fail_msg("edhoc_state_store_ssn still waits for a writer that cannot run");
    assert_int_equal(c.rc, 0);
    assert_int_equal(stored_mark_on_disk(f->sdir, &p), 4096);
    /* What was queued before it went in the same commit. */
    assert_int_equal(stored_mark_on_disk(f->sdir, &q), 0);
    struct edhoc_state_writer_stats ws;
    assert_int_equal(edhoc_state_get_writer_stats(db, &ws), 0);
    assert_int_equal(ws.commits, 1);
    assert_int_equal(ws.rows, 3);

    /* Released, the writer commits what nobody waits for at its closing
     * (edhoc_state_close flushes). */
    struct edhoc_state_peer r;
    make_peer(&r, 93);
    r.ssn_mark = 0;
    assert_int_equal(edhoc_state_put_peer(db, &r), 0);
    state_gc_hold_writer(db, false);
    edhoc_state_close(db);
    assert_int_equal(stored_mark_on_disk(f->sdir, &r), 0);
}

/* The writer process of --workers with group commit on its handle: two
 * workers' writes of several passes end in fewer commits than writes,
 * a worker's mark is answered once durable, and a failed batch fails the
 * commit of the worker whose writes were in it. */
static void test_writer_process_groups_across_passes(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer base;
    make_peer(&base, 1);
    assert_int_equal(edhoc_state_put_peer(db, &base), 0);
    assert_int_equal(edhoc_state_group_commit(db, 256, 20), 0);
    struct edhoc_state_server *srv = edhoc_state_server_new(db);
    assert_non_null(srv);
    pid_t pids[2];
    for (int w = 0; w < 2; w++) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) {
            close(sv[0]);
            struct edhoc_state_db *h = NULL;
            if (edhoc_state_connect(sv[1], &h) || edhoc_state_group_commit(h, 0, 0) ||
                !edhoc_state_is_grouped(h))
                _exit(2);
            for (uint32_t i = 0; i < 50; i++) {
                struct edhoc_state_peer q;
                make_peer(&q, 8000 + (uint32_t)w * 100 + i);
                if (edhoc_state_put_peer(h, &q))
                    _exit(3);
            }
            struct edhoc_state_peer q;
            make_peer(&q, 8000 + (uint32_t)w * 100);
            /* Answered after the batch holding it (and the puts) commits. */
            if (edhoc_state_store_ssn(h, KEY(q), q.ssn_mark + 64))
                _exit(4);
            int rc = edhoc_state_flush(h);
            edhoc_state_close(h);
            _exit(rc ? 5 : 0);
        }
        close(sv[1]);
        assert_int_equal(edhoc_state_server_add(srv, sv[0]), 0);
    }
    while (edhoc_state_server_clients(srv) > 0)
        assert_true(edhoc_state_server_run(srv, 100) >= 0);
    for (int w = 0; w < 2; w++) {
        int status = 0;
        assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    assert_int_equal(edhoc_state_flush(db), 0);
    struct edhoc_state_writer_stats st = writer_stats(db);
    print_message("# 102 writes in %" PRIu64 " commits\n", st.commits);
    assert_int_equal(st.rows, 102);
    assert_true(st.commits < 102 / 4);
    assert_int_equal(edhoc_state_count(db), 101);
    struct edhoc_state_peer q;
    make_peer(&q, 8100);
    assert_int_equal(get_mark(db, &q), q.ssn_mark + 64);
    edhoc_state_server_free(srv);
    edhoc_state_close(db);
}

int main(void)
{
    /* Files the tests write stand for ones the tool made (0600); the
     * tests of modes set their own. */
    umask(077);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_writer_for_workers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_group_commit_fails_the_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_batches_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_closes_on_size_and_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_failed_batch_fails_every_item, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_mark_durable_before_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writer_process_groups_across_passes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_waiter_commits_itself, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
