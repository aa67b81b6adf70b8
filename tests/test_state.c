/*
 * Tests of the responder's durable state (edhoc/state.h): round trips,
 * the never-lower rule for sequence-number marks, refusal of files that
 * are not ours (left byte-identical), crash safety under kill -9, keys of
 * (ID Context, Recipient ID), the migration of version 1 and 2 files, and
 * the bounds the responder keeps (issue #15: least recently used first,
 * idle ones expire, rows deleted with their marks, static ones kept).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "edhoc/state.h"

/* ---- fixtures ---- */

struct fixture {
    char dir[1024];   /* a fresh temporary directory */
    char sdir[1100];  /* dir/state: the state directory under test */
    char file[1200];  /* sdir/EDHOC_STATE_FILE */
};

static int rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                    continue;
                char sub[PATH_MAX];
                snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
                rm_rf(sub);
            }
            closedir(d);
        }
        return rmdir(path);
    }
    return unlink(path);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/edhoc-state-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    snprintf(f->sdir, sizeof f->sdir, "%s/state", f->dir);
    snprintf(f->file, sizeof f->file, "%s/%s", f->sdir, EDHOC_STATE_FILE);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    rm_rf(f->dir);
    free(f);
    return 0;
}

/* A context whose every field depends on i, so a mix-up between rows or
 * columns shows. */
static void make_peer(struct edhoc_state_peer *p, uint32_t i)
{
    memset(p, 0, sizeof *p);
    p->recipient_id_len = 4;
    p->recipient_id[0] = (uint8_t)(i >> 24);
    p->recipient_id[1] = (uint8_t)(i >> 16);
    p->recipient_id[2] = (uint8_t)(i >> 8);
    p->recipient_id[3] = (uint8_t)i;
    p->sender_id_len = 1 + i % EDHOC_STATE_MAX_ID;
    for (size_t k = 0; k < p->sender_id_len; k++)
        p->sender_id[k] = (uint8_t)(0xa0 + k + i);
    /* Every third context has no ID Context; the others have one of
     * 0..EDHOC_STATE_MAX_ID_CONTEXT bytes, the empty one included. */
    p->has_id_context = i % 3 != 0;
    p->id_context_len = p->has_id_context ? i % (EDHOC_STATE_MAX_ID_CONTEXT + 1) : 0;
    for (size_t k = 0; k < p->id_context_len; k++)
        p->id_context[k] = (uint8_t)(0x30 + k * 3 + i);
    p->master_secret_len = 16 + i % 17;
    for (size_t k = 0; k < p->master_secret_len; k++)
        p->master_secret[k] = (uint8_t)(k * 7 + i * 13);
    p->master_salt_len = i % (EDHOC_STATE_MAX_SALT + 1);
    for (size_t k = 0; k < p->master_salt_len; k++)
        p->master_salt[k] = (uint8_t)(k * 11 + i * 5);
    p->aead_alg = (i & 1) ? 10 : 1;
    p->hkdf_alg = (i & 2) ? -43 : -16;
    p->ssn_mark = (uint64_t)i * 1000003u;
    snprintf(p->peer, sizeof p->peer, "[2001:db8::%x]:%u", i, 5683 + i % 1000);
    p->created = 1700000000 + (int64_t)i;
    p->method = (int)(i % 4);
    p->suite = (int)(i % 7) - 1;
}

static void assert_peer_equal(const struct edhoc_state_peer *a, const struct edhoc_state_peer *b)
{
    assert_int_equal(a->recipient_id_len, b->recipient_id_len);
    assert_memory_equal(a->recipient_id, b->recipient_id, a->recipient_id_len);
    assert_int_equal(a->sender_id_len, b->sender_id_len);
    assert_memory_equal(a->sender_id, b->sender_id, a->sender_id_len);
    assert_int_equal(a->has_id_context, b->has_id_context);
    assert_int_equal(a->id_context_len, b->id_context_len);
    if (a->id_context_len)
        assert_memory_equal(a->id_context, b->id_context, a->id_context_len);
    assert_int_equal(a->master_secret_len, b->master_secret_len);
    if (a->master_secret_len)
        assert_memory_equal(a->master_secret, b->master_secret, a->master_secret_len);
    assert_int_equal(a->master_salt_len, b->master_salt_len);
    if (a->master_salt_len)
        assert_memory_equal(a->master_salt, b->master_salt, a->master_salt_len);
    assert_int_equal(a->aead_alg, b->aead_alg);
    assert_int_equal(a->hkdf_alg, b->hkdf_alg);
    assert_true(a->ssn_mark == b->ssn_mark);
    assert_string_equal(a->peer, b->peer);
    assert_true(a->created == b->created);
    assert_int_equal(a->method, b->method);
    assert_int_equal(a->suite, b->suite);
}

static struct edhoc_state_db *open_ok(const char *dir)
{
    struct edhoc_state_db *db = NULL;
    char why[512] = "";
    int rc = edhoc_state_open(dir, &db, why, sizeof why);
    if (rc != 0)
        print_error("open %s: %d %s\n", dir, rc, why);
    assert_int_equal(rc, 0);
    assert_non_null(db);
    return db;
}

/* The ID Context argument of a context's key: NULL when it has none. */
static const uint8_t *idc_of(const struct edhoc_state_peer *p)
{
    return p->has_id_context ? p->id_context : NULL;
}

/* The four key arguments (id_context, its length, recipient_id, its
 * length) naming the context p. */
#define KEY(p) idc_of(&(p)), (p).id_context_len, (p).recipient_id, (p).recipient_id_len

static uint64_t get_mark(struct edhoc_state_db *db, const struct edhoc_state_peer *key)
{
    struct edhoc_state_peer p;
    assert_int_equal(edhoc_state_get_peer(db, KEY(*key), &p), 0);
    return p.ssn_mark;
}

/* ---- round trips ---- */

struct collect {
    struct edhoc_state_peer got[8];
    int n;
    int stop_at;  /* return 7 from the call with this index */
};

static int collect_fn(void *ctx, const struct edhoc_state_peer *p)
{
    struct collect *c = ctx;
    if (c->n < 8)
        c->got[c->n] = *p;
    c->n++;
    return c->n - 1 == c->stop_at ? 7 : 0;
}

static void test_round_trip_every_field(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);

    /* Largest value of every field, and the smallest (all empty). */
    struct edhoc_state_peer big, small, got;
    memset(&big, 0, sizeof big);
    big.recipient_id_len = EDHOC_STATE_MAX_ID;
    memset(big.recipient_id, 0xff, EDHOC_STATE_MAX_ID);
    big.sender_id_len = EDHOC_STATE_MAX_ID;
    memset(big.sender_id, 0xee, EDHOC_STATE_MAX_ID);
    big.has_id_context = true;
    big.id_context_len = EDHOC_STATE_MAX_ID_CONTEXT;
    memset(big.id_context, 0xdd, EDHOC_STATE_MAX_ID_CONTEXT);
    big.master_secret_len = EDHOC_STATE_MAX_SECRET;
    for (int k = 0; k < EDHOC_STATE_MAX_SECRET; k++)
        big.master_secret[k] = (uint8_t)k;  /* includes a 0x00 byte */
    big.master_salt_len = EDHOC_STATE_MAX_SALT;
    memset(big.master_salt, 0x00, EDHOC_STATE_MAX_SALT);
    big.aead_alg = 24;
    big.hkdf_alg = -43;
    big.ssn_mark = (uint64_t)INT64_MAX;
    memset(big.peer, 'x', sizeof big.peer - 1);
    big.created = INT64_MIN;
    big.method = INT32_MAX;
    big.suite = INT32_MIN;

    memset(&small, 0, sizeof small);
    small.method = -1;
    small.suite = -1;
    small.created = 0;

    assert_int_equal(edhoc_state_put_peer(db, &big), 0);
    assert_int_equal(edhoc_state_put_peer(db, &small), 0);
    assert_int_equal(edhoc_state_count(db), 2);

    memset(&got, 0x55, sizeof got);
    assert_int_equal(edhoc_state_get_peer(db, KEY(big), &got), 0);
    assert_peer_equal(&got, &big);
    memset(&got, 0x55, sizeof got);
    assert_int_equal(edhoc_state_get_peer(db, KEY(small), &got), 0);
    assert_peer_equal(&got, &small);
    edhoc_state_close(db);

    /* And again from disk, through for_each (ordered by recipient ID, so
     * the empty ID comes first). */
    db = open_ok(f->sdir);
    struct collect c = {.stop_at = -1};
    assert_int_equal(edhoc_state_for_each_peer(db, collect_fn, &c), 0);
    assert_int_equal(c.n, 2);
    assert_peer_equal(&c.got[0], &small);
    assert_peer_equal(&c.got[1], &big);

    for (uint32_t i = 1; i < 6; i++) {
        struct edhoc_state_peer p;
        make_peer(&p, i);
        assert_int_equal(edhoc_state_put_peer(db, &p), 0);
        assert_int_equal(edhoc_state_get_peer(db, KEY(p), &got), 0);
        assert_peer_equal(&got, &p);
    }
    edhoc_state_close(db);
}

static void test_modes_of_new_files(void **state)
{
    struct fixture *f = *state;
    /* A permissive umask must not leak into the secret-bearing files. */
    mode_t old = umask(0);
    char deep[1200];
    snprintf(deep, sizeof deep, "%s/a/b", f->sdir);
    struct edhoc_state_db *db = open_ok(deep);
    struct edhoc_state_peer p;
    make_peer(&p, 1);
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);

    struct stat st;
    assert_int_equal(stat(deep, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_int_equal(stat(f->sdir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    char path[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/%s", deep, EDHOC_STATE_FILE);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    snprintf(path, sizeof path, "%s/%s-wal", deep, EDHOC_STATE_FILE);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    edhoc_state_close(db);
    umask(old);

    /* No temporary file is left behind. */
    snprintf(path, sizeof path, "%s/%s.new", deep, EDHOC_STATE_FILE);
    assert_int_equal(access(path, F_OK), -1);

    /* A restrictive umask neither: "files the tool creates get 0600/0700
     * whatever the umask" (docs/DESIGN.md, state directory rules); 0277
     * used to leave a 0500 directory and a 0400 database. */
    old = umask(0277);
    snprintf(deep, sizeof deep, "%s/c/d", f->sdir);
    db = open_ok(deep);
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    assert_int_equal(stat(deep, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    snprintf(path, sizeof path, "%s/c", f->sdir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    snprintf(path, sizeof path, "%s/%s", deep, EDHOC_STATE_FILE);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    snprintf(path, sizeof path, "%s/%s-wal", deep, EDHOC_STATE_FILE);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    edhoc_state_close(db);
    umask(old);
}

/* The state directory rules (docs/DESIGN.md "State directory and database
 * rules", as for --key): the directory is not a link, is the effective
 * uid's, 0700, under no directory others may write without the sticky
 * bit; the database and its -wal/-shm are the effective uid's and 0600.
 * Each refusal names the path, what was found and the fix, and leaves the
 * files as they were (no silent chmod). Before these rules, each of these
 * opened (a 0644 database stayed 0644). */
static void write_all(const char *path, const void *p, size_t len);

static void expect_unsafe(const char *dir, const char *want)
{
    struct edhoc_state_db *db = NULL;
    char why[8192] = "";
    int rc = edhoc_state_open(dir, &db, why, sizeof why);
    if (rc != EDHOC_STATE_ERR_UNSAFE || strcmp(why, want))
        fail_msg("open %s: %d \"%s\"\n want: \"%s\"", dir, rc, why, want);
    assert_null(db);
}

static void test_refuses_unsafe_directory_and_files(void **state)
{
    struct fixture *f = *state;
    if (f == NULL) /* what the sanitizer build's -Wformat-truncation cannot tell */
        abort();
    char want[8192];
    struct stat st;
    edhoc_state_close(open_ok(f->sdir));

    assert_int_equal(chmod(f->sdir, 0777), 0);
    snprintf(want, sizeof want,
             "%s: group or others can access it (mode 0777) and it holds OSCORE secrets and "
             "sequence numbers: chmod 700 %s, or give a new directory", f->sdir, f->sdir);
    expect_unsafe(f->sdir, want);
    assert_int_equal(stat(f->sdir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0777);
    assert_int_equal(chmod(f->sdir, 0700), 0);

    assert_int_equal(chmod(f->file, 0644), 0);
    snprintf(want, sizeof want,
             "%s: group or others can access it (mode 0644) and it holds OSCORE secrets and "
             "sequence numbers: chmod 600 %s", f->file, f->file);
    expect_unsafe(f->sdir, want);
    assert_int_equal(stat(f->file, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    assert_int_equal(chmod(f->file, 0600), 0);

    /* A -wal left by a crash is read as part of the database. */
    char wal[1300];
    snprintf(wal, sizeof wal, "%s-wal", f->file);
    write_all(wal, "", 0);
    assert_int_equal(chmod(wal, 0666), 0);
    snprintf(want, sizeof want,
             "%s: group or others can access it (mode 0666) and it holds OSCORE secrets and "
             "sequence numbers: chmod 600 %s", wal, wal);
    expect_unsafe(f->sdir, want);
    assert_int_equal(unlink(wal), 0);

    /* Someone else's: only root can make one (tests run as root). */
    if (geteuid() == 0) {
        assert_int_equal(chown(f->file, 65534, 65534), 0);
        snprintf(want, sizeof want,
                 "%s: owned by uid 65534, not by the user running (uid 0), and it holds OSCORE "
                 "secrets and sequence numbers: chown 0 %s", f->file, f->file);
        expect_unsafe(f->sdir, want);
        assert_int_equal(chown(f->file, 0, 0), 0);
        assert_int_equal(chown(f->sdir, 65534, 65534), 0);
        snprintf(want, sizeof want,
                 "%s: owned by uid 65534, not by the user running (uid 0), and it holds OSCORE "
                 "secrets and sequence numbers: chown 0 %s, or give a directory of your own",
                 f->sdir, f->sdir);
        expect_unsafe(f->sdir, want);
        assert_int_equal(chown(f->sdir, 0, 0), 0);
    } else {
        print_message("# not root: files of another user are not tried\n");
    }

    /* A link to a good state directory: the name must be the directory. */
    char link[1200];
    snprintf(link, sizeof link, "%s/link", f->dir);
    assert_int_equal(symlink(f->sdir, link), 0);
    snprintf(want, sizeof want,
             "%s: is a symbolic link; it holds OSCORE secrets and sequence numbers: give the "
             "directory itself, not a link to it", link);
    expect_unsafe(link, want);

    /* Whoever may write the directory above can swap the state directory;
     * a sticky one (/tmp) only lets them swap their own entries. */
    assert_int_equal(chmod(f->dir, 0777), 0);
    snprintf(want, sizeof want,
             "%s: in a directory others can write (%s, mode 0777): they could put another "
             "directory in its place; fix it with: chmod go-w %s", f->sdir, f->dir, f->dir);
    expect_unsafe(f->sdir, want);
    assert_int_equal(chmod(f->dir, 01777), 0);
    edhoc_state_close(open_ok(f->sdir));
    assert_int_equal(chmod(f->dir, 0700), 0);
}

static void test_put_replaces(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer a, b, got;
    make_peer(&a, 3);
    a.ssn_mark = 500;
    assert_int_equal(edhoc_state_put_peer(db, &a), 0);

    /* Same key (ID Context and recipient ID), new keying material and
     * every other field new: the row is replaced, mark included. */
    make_peer(&b, 4);
    memcpy(b.recipient_id, a.recipient_id, a.recipient_id_len);
    b.recipient_id_len = a.recipient_id_len;
    b.has_id_context = a.has_id_context;
    memcpy(b.id_context, a.id_context, a.id_context_len);
    b.id_context_len = a.id_context_len;
    b.ssn_mark = 20;
    assert_int_equal(edhoc_state_put_peer(db, &b), 0);
    assert_int_equal(edhoc_state_count(db), 1);
    assert_int_equal(edhoc_state_get_peer(db, KEY(a), &got), 0);
    assert_peer_equal(&got, &b);

    /* Same keying material with a lower mark: the other fields change,
     * the mark does not go down. */
    struct edhoc_state_peer c = b;
    c.ssn_mark = 7;
    snprintf(c.peer, sizeof c.peer, "192.0.2.1:1234");
    c.created = 42;
    assert_int_equal(edhoc_state_put_peer(db, &c), 0);
    assert_int_equal(edhoc_state_get_peer(db, KEY(c), &got), 0);
    assert_string_equal(got.peer, "192.0.2.1:1234");
    assert_true(got.created == 42);
    assert_true(got.ssn_mark == 20);
    /* ... and a higher one is taken. */
    c.ssn_mark = 900;
    assert_int_equal(edhoc_state_put_peer(db, &c), 0);
    assert_true(get_mark(db, &c) == 900);
    edhoc_state_close(db);
}

static void test_store_ssn_never_lowers(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p;
    make_peer(&p, 8); /* an ID Context of 8 bytes */
    assert_true(p.has_id_context && p.id_context_len == 8);
    p.ssn_mark = 0;
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);

    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 100), 0);
    assert_true(get_mark(db, &p) == 100);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 50), 0);
    assert_true(get_mark(db, &p) == 100);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 100), 0);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 0), 0);
    assert_true(get_mark(db, &p) == 100);
    /* Through the OSCORE-callback glue. */
    struct edhoc_state_ssn_binding b = {.db = db,
                                        .has_id_context = true,
                                        .id_context_len = p.id_context_len,
                                        .recipient_id_len = p.recipient_id_len};
    memcpy(b.id_context, p.id_context, p.id_context_len);
    memcpy(b.recipient_id, p.recipient_id, p.recipient_id_len);
    assert_int_equal(edhoc_state_store_ssn_cb(&b, 150), 0);
    assert_true(get_mark(db, &p) == 150);
    assert_int_equal(edhoc_state_store_ssn_cb(&b, 140), 0);
    assert_true(get_mark(db, &p) == 150);
    /* The same recipient ID without the ID Context names no context. */
    b.has_id_context = false;
    b.id_context_len = 0;
    assert_int_equal(edhoc_state_store_ssn_cb(&b, 160), EDHOC_STATE_ERR_NOT_FOUND);
    b.id_context_len = 3; /* a length without an ID Context is no key */
    assert_int_equal(edhoc_state_store_ssn_cb(&b, 160), EDHOC_STATE_ERR_ARG);
    b.has_id_context = true;
    b.id_context_len = p.id_context_len;
    b.recipient_id[0] ^= 1;
    assert_int_equal(edhoc_state_store_ssn_cb(&b, 160), EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_store_ssn_cb(NULL, 160), EDHOC_STATE_ERR_ARG);
    assert_true(get_mark(db, &p) == 150);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), (1ull << 40)), 0);
    assert_true(get_mark(db, &p) == (1ull << 40));
    edhoc_state_close(db);

    db = open_ok(f->sdir);
    assert_true(get_mark(db, &p) == (1ull << 40));
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 3), 0);
    assert_true(get_mark(db, &p) == (1ull << 40));
    /* Other fields are untouched by store_ssn. */
    struct edhoc_state_peer got;
    assert_int_equal(edhoc_state_get_peer(db, KEY(p), &got), 0);
    p.ssn_mark = 1ull << 40;
    assert_peer_equal(&got, &p);
    edhoc_state_close(db);
}

static void test_unknown_id_not_found(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p, got;
    make_peer(&p, 3); /* no ID Context */
    assert_false(p.has_id_context);
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);

    const uint8_t other[] = {0x00, 0x00, 0x00, 0x02};
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 0, other, sizeof other, 5),
                     EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_get_peer(db, NULL, 0, other, sizeof other, &got),
                     EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_delete_peer(db, NULL, 0, other, sizeof other),
                     EDHOC_STATE_ERR_NOT_FOUND);
    /* A prefix of a stored ID is a different ID. */
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 0, p.recipient_id, 3, 5),
                     EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 0, NULL, 0, 5), EDHOC_STATE_ERR_NOT_FOUND);

    assert_int_equal(edhoc_state_delete_peer(db, KEY(p)), 0);
    assert_int_equal(edhoc_state_count(db), 0);
    assert_int_equal(edhoc_state_get_peer(db, KEY(p), &got), EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 5), EDHOC_STATE_ERR_NOT_FOUND);
    edhoc_state_close(db);
}

static void test_bad_arguments(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = NULL;
    char why[256];
    assert_int_equal(edhoc_state_open(NULL, &db, why, sizeof why), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_open(f->sdir, NULL, why, sizeof why), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_open("", &db, why, sizeof why), EDHOC_STATE_ERR_ARG);

    db = open_ok(f->sdir);
    struct edhoc_state_peer p;
    uint8_t long_id[EDHOC_STATE_MAX_ID + 1] = {0};
    make_peer(&p, 1);
    p.recipient_id_len = EDHOC_STATE_MAX_ID + 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    make_peer(&p, 1);
    p.master_secret_len = EDHOC_STATE_MAX_SECRET + 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    make_peer(&p, 1);
    p.master_salt_len = EDHOC_STATE_MAX_SALT + 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    make_peer(&p, 1);
    p.id_context_len = EDHOC_STATE_MAX_ID_CONTEXT + 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    /* An ID Context length without an ID Context would make two rows of
     * one key. */
    make_peer(&p, 3);
    assert_false(p.has_id_context);
    p.id_context_len = 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    make_peer(&p, 1);
    p.sender_id_len = EDHOC_STATE_MAX_ID + 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    make_peer(&p, 1);
    p.ssn_mark = (uint64_t)INT64_MAX + 1;
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    make_peer(&p, 1);
    memset(p.peer, 'a', sizeof p.peer);  /* no NUL */
    assert_int_equal(edhoc_state_put_peer(db, &p), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_put_peer(db, NULL), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_count(db), 0);

    make_peer(&p, 1);
    assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    uint8_t long_idc[EDHOC_STATE_MAX_ID_CONTEXT + 1] = {0};
    struct edhoc_state_peer got;
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 0, long_id, sizeof long_id, 1),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_store_ssn(db, long_idc, sizeof long_idc, p.recipient_id,
                                           p.recipient_id_len, 1), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 1, p.recipient_id, p.recipient_id_len, 1),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_get_peer(db, NULL, 1, p.recipient_id, p.recipient_id_len, &got),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), (uint64_t)INT64_MAX + 1),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_store_ssn(NULL, NULL, 0, p.recipient_id, 1, 1),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_delete_peer(db, NULL, 0, long_id, sizeof long_id),
                     EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_delete_peer(db, long_idc, sizeof long_idc, p.recipient_id,
                                             p.recipient_id_len), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_for_each_peer(db, NULL, NULL), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_count(NULL), EDHOC_STATE_ERR_ARG);
    assert_true(get_mark(db, &p) == p.ssn_mark);
    edhoc_state_close(db);
    edhoc_state_close(NULL);

    assert_string_equal(edhoc_state_strerror(EDHOC_STATE_ERR_FOREIGN),
                        "not an edhoc-cli state database");
}

static int nested_fn(void *ctx, const struct edhoc_state_peer *p)
{
    (void)p;
    struct edhoc_state_db *db = ctx;
    struct collect c = {.stop_at = -1};
    return edhoc_state_for_each_peer(db, collect_fn, &c) == EDHOC_STATE_ERR_ARG ? 11 : 12;
}

static void test_for_each_early_stop_and_count(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 0);
    struct collect c = {.stop_at = -1};
    assert_int_equal(edhoc_state_for_each_peer(db, collect_fn, &c), 0);
    assert_int_equal(c.n, 0);

    /* Put in reverse order; iteration is by recipient ID. */
    struct edhoc_state_peer p[5];
    for (int i = 4; i >= 0; i--) {
        make_peer(&p[i], (uint32_t)i + 10);
        assert_int_equal(edhoc_state_put_peer(db, &p[i]), 0);
        assert_int_equal(edhoc_state_count(db), 5 - i);
    }

    c = (struct collect){.stop_at = 2};
    assert_int_equal(edhoc_state_for_each_peer(db, collect_fn, &c), 7);
    assert_int_equal(c.n, 3);
    for (int i = 0; i < 3; i++)
        assert_peer_equal(&c.got[i], &p[i]);

    /* The iteration after an early stop starts from the beginning. */
    c = (struct collect){.stop_at = -1};
    assert_int_equal(edhoc_state_for_each_peer(db, collect_fn, &c), 0);
    assert_int_equal(c.n, 5);
    for (int i = 0; i < 5; i++)
        assert_peer_equal(&c.got[i], &p[i]);

    assert_int_equal(edhoc_state_for_each_peer(db, nested_fn, db), 11);

    assert_int_equal(edhoc_state_delete_peer(db, KEY(p[1])), 0);
    assert_int_equal(edhoc_state_count(db), 4);
    edhoc_state_close(db);
    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 4);
    edhoc_state_close(db);
}

static void test_second_open_refused(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir), *db2 = NULL;
    char why[512] = "";
    assert_int_equal(edhoc_state_open(f->sdir, &db2, why, sizeof why), EDHOC_STATE_ERR_IO);
    assert_null(db2);
    assert_non_null(strstr(why, "in use by another process"));
    edhoc_state_close(db);
    db = open_ok(f->sdir);
    edhoc_state_close(db);
}

static void test_transactions(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p;
    assert_int_equal(edhoc_state_commit(db), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_rollback(db), EDHOC_STATE_ERR_ARG);

    assert_int_equal(edhoc_state_begin(db), 0);
    assert_int_equal(edhoc_state_begin(db), EDHOC_STATE_ERR_ARG);
    for (uint32_t i = 0; i < 3; i++) {
        make_peer(&p, i);
        assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    }
    assert_int_equal(edhoc_state_count(db), 3);
    assert_int_equal(edhoc_state_rollback(db), 0);
    assert_int_equal(edhoc_state_count(db), 0);

    assert_int_equal(edhoc_state_begin(db), 0);
    for (uint32_t i = 0; i < 3; i++) {
        make_peer(&p, i);
        assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    }
    make_peer(&p, 1);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), p.ssn_mark + 5), 0);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(p), 0), 0);
    assert_int_equal(edhoc_state_commit(db), 0);
    edhoc_state_close(db);

    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 3);
    assert_true(get_mark(db, &p) == p.ssn_mark + 5);
    /* Closing with a transaction open discards it. */
    assert_int_equal(edhoc_state_begin(db), 0);
    assert_int_equal(edhoc_state_delete_peer(db, KEY(p)), 0);
    edhoc_state_close(db);
    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 3);
    edhoc_state_close(db);
}

/* ---- refusal of files that are not ours ---- */

static unsigned char *read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    *len = (size_t)n;
    return buf;
}

static void write_all(const char *path, const void *p, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(p, 1, len, fp), len);
    fclose(fp);
}

/* Names in a directory, sorted and joined, to see that nothing was added
 * or removed. */
static void list_dir(const char *dir, char *out, size_t cap)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    assert_true(n >= 0);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        strncat(out, names[i]->d_name, cap - strlen(out) - 2);
        strncat(out, "|", cap - strlen(out) - 1);
        free(names[i]);
    }
    free(names);
}

/* Open must fail with `want`, say why naming the file, and leave the file
 * and its directory exactly as they were. */
static void expect_refused(struct fixture *f, int want, const char *why_part)
{
    size_t before_len, after_len;
    unsigned char *before = read_all(f->file, &before_len);
    char list_before[1024], list_after[1024];
    list_dir(f->sdir, list_before, sizeof list_before);

    struct edhoc_state_db *db = NULL;
    char why[512] = "";
    int rc = edhoc_state_open(f->sdir, &db, why, sizeof why);
    print_message("# refused (%d): %s\n", rc, why);
    assert_int_equal(rc, want);
    assert_null(db);
    assert_non_null(strstr(why, f->file));
    if (why_part)
        assert_non_null(strstr(why, why_part));

    unsigned char *after = read_all(f->file, &after_len);
    assert_int_equal(before_len, after_len);
    assert_memory_equal(before, after, before_len);
    list_dir(f->sdir, list_after, sizeof list_after);
    assert_string_equal(list_before, list_after);
    free(before);
    free(after);

    /* Refusing twice gives the same answer (nothing was "repaired"). */
    db = NULL;
    assert_int_equal(edhoc_state_open(f->sdir, &db, why, sizeof why), want);
}

static void make_state_dir(struct fixture *f)
{
    assert_int_equal(mkdir(f->sdir, 0700), 0);
}

static void test_refuses_text_file(void **state)
{
    struct fixture *f = *state;
    make_state_dir(f);
    const char text[] = "# my notes\nthis is not a database at all, and it is long enough "
                        "to cover a whole SQLite header of one hundred bytes........\n";
    write_all(f->file, text, sizeof text - 1);
    expect_refused(f, EDHOC_STATE_ERR_FOREIGN, "not an SQLite database");
}

static void test_refuses_empty_file(void **state)
{
    struct fixture *f = *state;
    make_state_dir(f);
    write_all(f->file, "", 0);
    expect_refused(f, EDHOC_STATE_ERR_FOREIGN, "empty file");
}

static void sql_exec(const char *path, const char *text)
{
    sqlite3 *s = NULL;
    assert_int_equal(sqlite3_open(path, &s), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(s, text, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        print_error("sql: %s\n", msg);
    assert_int_equal(rc, SQLITE_OK);
    assert_int_equal(sqlite3_close(s), SQLITE_OK);
}

static void test_refuses_foreign_sqlite(void **state)
{
    struct fixture *f = *state;
    make_state_dir(f);
    sql_exec(f->file, "CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES ('mine');");
    expect_refused(f, EDHOC_STATE_ERR_FOREIGN, "another application");

    /* Also in WAL mode, where a careless open would create -wal/-shm. */
    unlink(f->file);
    sql_exec(f->file, "PRAGMA journal_mode=WAL; PRAGMA application_id=1234;"
                      "CREATE TABLE peer(recipient_id BLOB);");
    expect_refused(f, EDHOC_STATE_ERR_FOREIGN, "application_id 0x000004d2");
}

static void test_refuses_symlink(void **state)
{
    struct fixture *f = *state;
    /* A real state database behind a symlink is still refused: the name
     * must be the file itself. */
    char real[PATH_MAX];
    snprintf(real, sizeof real, "%s/real", f->dir);
    edhoc_state_close(open_ok(real));
    make_state_dir(f);
    char target[PATH_MAX + 32];
    snprintf(target, sizeof target, "%s/%s", real, EDHOC_STATE_FILE);
    assert_int_equal(symlink(target, f->file), 0);
    struct edhoc_state_db *db = NULL;
    char why[512] = "";
    assert_int_equal(edhoc_state_open(f->sdir, &db, why, sizeof why), EDHOC_STATE_ERR_FOREIGN);
    assert_non_null(strstr(why, "not a regular file"));
}

/* A real state database with n contexts, closed. */
static void make_real_db(struct fixture *f, uint32_t n)
{
    struct edhoc_state_db *db = open_ok(f->sdir);
    for (uint32_t i = 0; i < n; i++) {
        struct edhoc_state_peer p;
        make_peer(&p, i);
        assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    }
    edhoc_state_close(db);
    char wal[PATH_MAX + 8];
    snprintf(wal, sizeof wal, "%s-wal", f->file);
    assert_int_equal(access(wal, F_OK), -1);  /* a clean close leaves one file */
}

static void test_refuses_truncated(void **state)
{
    struct fixture *f = *state;
    make_real_db(f, 200);
    size_t len;
    unsigned char *all = read_all(f->file, &len);
    assert_true(len >= 8 * 4096);

    /* Cut at a page boundary in the middle (pages referenced from the
     * b-tree are gone). */
    write_all(f->file, all, len / 2 / 4096 * 4096);
    expect_refused(f, EDHOC_STATE_ERR_CORRUPT, NULL);
    /* Cut inside the 100-byte header. */
    write_all(f->file, all, 60);
    expect_refused(f, EDHOC_STATE_ERR_CORRUPT, "truncated");
    /* Only the first page. */
    write_all(f->file, all, 4096);
    expect_refused(f, EDHOC_STATE_ERR_CORRUPT, NULL);
    free(all);
}

static void test_refuses_garbage_overwritten(void **state)
{
    struct fixture *f = *state;
    make_real_db(f, 200);
    size_t len;
    unsigned char *all = read_all(f->file, &len);
    /* Garbage over everything after the first page: the schema is intact,
     * the tables are not. */
    srand(12345);
    unsigned char *bad = malloc(len);
    memcpy(bad, all, len);
    for (size_t i = 4096; i < len; i++)
        bad[i] = (unsigned char)rand();
    write_all(f->file, bad, len);
    expect_refused(f, EDHOC_STATE_ERR_CORRUPT, NULL);

    /* Garbage over one leaf page in the middle only. */
    memcpy(bad, all, len);
    for (size_t i = 4 * 4096; i < 5 * 4096; i++)
        bad[i] = (unsigned char)rand();
    write_all(f->file, bad, len);
    expect_refused(f, EDHOC_STATE_ERR_CORRUPT, NULL);

    /* Garbage over the header: no longer recognisable as SQLite. */
    memcpy(bad, all, len);
    for (size_t i = 0; i < 100; i++)
        bad[i] = (unsigned char)rand();
    write_all(f->file, bad, len);
    expect_refused(f, EDHOC_STATE_ERR_FOREIGN, NULL);
    free(bad);
    free(all);
}

static void test_refuses_newer_version(void **state)
{
    struct fixture *f = *state;
    make_real_db(f, 3);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d;", EDHOC_STATE_SCHEMA_VERSION + 1);
    sql_exec(f->file, sql);
    expect_refused(f, EDHOC_STATE_ERR_VERSION, "newer");
}

static void test_refuses_damaged_metadata(void **state)
{
    struct fixture *f = *state;
    make_real_db(f, 3);
    /* Our application id and version, but not our tables. */
    sql_exec(f->file, "DROP TABLE meta;");
    expect_refused(f, EDHOC_STATE_ERR_CORRUPT, "metadata");
}

static int count_fn(void *ctx, const struct edhoc_state_peer *p)
{
    (void)p;
    (*(long *)ctx)++;
    return 0;
}

/* Random damage anywhere in a real database: opening either refuses it
 * (file untouched) or succeeds, and then reading it either works or says
 * CORRUPT -- never a crash, never another answer. */
static void test_random_damage(void **state)
{
    struct fixture *f = *state;
    make_real_db(f, 100);
    size_t len;
    unsigned char *all = read_all(f->file, &len);
    unsigned char *bad = malloc(len);
    srand(4242);
    int refused = 0, opened = 0;
    for (int round = 0; round < 300; round++) {
        memcpy(bad, all, len);
        int flips = 1 + rand() % 8;
        for (int k = 0; k < flips; k++)
            bad[(size_t)rand() % len] ^= (unsigned char)(1 + rand() % 255);
        write_all(f->file, bad, len);

        struct edhoc_state_db *db = NULL;
        char why[512];
        int rc = edhoc_state_open(f->sdir, &db, why, sizeof why);
        if (rc != 0) {
            if (rc != EDHOC_STATE_ERR_CORRUPT && rc != EDHOC_STATE_ERR_FOREIGN &&
                rc != EDHOC_STATE_ERR_VERSION)
                print_error("round %d: %d %s\n", round, rc, why);
            assert_true(rc == EDHOC_STATE_ERR_CORRUPT || rc == EDHOC_STATE_ERR_FOREIGN ||
                        rc == EDHOC_STATE_ERR_VERSION);
            size_t after_len;
            unsigned char *after = read_all(f->file, &after_len);
            assert_int_equal(after_len, len);
            assert_memory_equal(after, bad, len);
            free(after);
            refused++;
            continue;
        }
        opened++;
        long n = 0;
        rc = edhoc_state_for_each_peer(db, count_fn, &n);
        assert_true(rc == 0 || rc == EDHOC_STATE_ERR_CORRUPT);
        long c = edhoc_state_count(db);
        assert_true(c >= 0 || c == EDHOC_STATE_ERR_CORRUPT);
        edhoc_state_close(db);
    }
    print_message("# random damage: %d refused, %d opened\n", refused, opened);
    assert_true(refused > 0);
    free(bad);
    free(all);
}

/* ---- (ID Context, Recipient ID) keys ---- */

/* A context with recipient ID 0x01 and the given ID Context (NULL: none),
 * its keying material and mark depending on n. */
static void make_keyed(struct edhoc_state_peer *p, const uint8_t *idc, size_t idc_len, uint32_t n)
{
    make_peer(p, n);
    p->recipient_id[0] = 0x01;
    p->recipient_id_len = 1;
    p->has_id_context = idc != NULL;
    p->id_context_len = idc_len;
    if (idc_len)
        memcpy(p->id_context, idc, idc_len);
    p->ssn_mark = 1000u * n;
}

/* RFC 8613 Section 3.3: "The ID Context is used to distinguish between
 * security contexts", so contexts sharing a Recipient ID are separate
 * rows: put, get, store_ssn and delete on one leave the others alone. */
static void test_same_recipient_id_different_id_contexts(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    static const uint8_t idc_b[] = {0x37, 0xcb, 0xf3, 0x21, 0x00, 0x17, 0xa2, 0xd3};
    static const uint8_t idc_d[] = {0x44, 0x61, 0x6c, 0x65, 0x6b};
    struct edhoc_state_peer none, empty, b, d, got;
    make_keyed(&b, idc_b, sizeof idc_b, 2);
    make_keyed(&none, NULL, 0, 1);
    make_keyed(&d, idc_d, sizeof idc_d, 4);
    make_keyed(&empty, idc_b, 0, 3);
    assert_int_equal(edhoc_state_put_peer(db, &b), 0);
    assert_int_equal(edhoc_state_put_peer(db, &none), 0);
    assert_int_equal(edhoc_state_put_peer(db, &d), 0);
    assert_int_equal(edhoc_state_put_peer(db, &empty), 0);
    assert_int_equal(edhoc_state_count(db), 4);
    const struct edhoc_state_peer *all[] = {&none, &empty, &b, &d};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(edhoc_state_get_peer(db, KEY(*all[i]), &got), 0);
        assert_peer_equal(&got, all[i]);
    }
    /* Iteration: by recipient ID, no ID Context first, then by ID Context. */
    struct collect c = {.stop_at = -1};
    assert_int_equal(edhoc_state_for_each_peer(db, collect_fn, &c), 0);
    assert_int_equal(c.n, 4);
    for (size_t i = 0; i < 4; i++)
        assert_peer_equal(&c.got[i], all[i]);

    /* store_ssn raises the mark of the named context only. */
    assert_int_equal(edhoc_state_store_ssn(db, KEY(b), 5555), 0);
    assert_true(get_mark(db, &b) == 5555);
    assert_true(get_mark(db, &none) == 1000);
    assert_true(get_mark(db, &empty) == 3000);
    assert_true(get_mark(db, &d) == 4000);

    /* A put with new keying material under d's key restarts d only. */
    struct edhoc_state_peer d2;
    make_keyed(&d2, idc_d, sizeof idc_d, 9);
    d2.ssn_mark = 7;
    assert_int_equal(edhoc_state_put_peer(db, &d2), 0);
    assert_int_equal(edhoc_state_count(db), 4);
    assert_true(get_mark(db, &d) == 7);
    assert_true(get_mark(db, &b) == 5555);
    assert_int_equal(edhoc_state_get_peer(db, KEY(b), &got), 0);
    b.ssn_mark = 5555;
    assert_peer_equal(&got, &b);

    /* Deleting one leaves the others, across a reopen too. */
    assert_int_equal(edhoc_state_delete_peer(db, KEY(b)), 0);
    assert_int_equal(edhoc_state_get_peer(db, KEY(b), &got), EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_store_ssn(db, KEY(b), 6000), EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_delete_peer(db, KEY(b)), EDHOC_STATE_ERR_NOT_FOUND);
    edhoc_state_close(db);
    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 3);
    assert_true(get_mark(db, &none) == 1000);
    assert_true(get_mark(db, &empty) == 3000);
    assert_true(get_mark(db, &d) == 7);
    edhoc_state_close(db);
}

/* RFC 8613 Section 3.2.1: id_context "is the ID Context, or nil if ID
 * Context is not provided" -- nil and an empty byte string derive
 * different keys, so they are different contexts, not one. */
static void test_absent_and_empty_id_context_distinct(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    static const uint8_t empty_idc[1] = {0};
    struct edhoc_state_peer none, got;
    make_keyed(&none, NULL, 0, 1);
    assert_int_equal(edhoc_state_put_peer(db, &none), 0);
    /* An empty ID Context is not "none". */
    assert_int_equal(edhoc_state_get_peer(db, empty_idc, 0, none.recipient_id, 1, &got),
                     EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_store_ssn(db, empty_idc, 0, none.recipient_id, 1, 5000),
                     EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_delete_peer(db, empty_idc, 0, none.recipient_id, 1),
                     EDHOC_STATE_ERR_NOT_FOUND);
    assert_true(get_mark(db, &none) == 1000);

    /* Adding the empty one adds a row; each keeps its own mark. */
    struct edhoc_state_peer empty;
    make_keyed(&empty, empty_idc, 0, 2);
    assert_int_equal(edhoc_state_put_peer(db, &empty), 0);
    assert_int_equal(edhoc_state_count(db), 2);
    assert_int_equal(edhoc_state_store_ssn(db, empty_idc, 0, none.recipient_id, 1, 5000), 0);
    assert_true(get_mark(db, &empty) == 5000);
    assert_true(get_mark(db, &none) == 1000);
    assert_int_equal(edhoc_state_get_peer(db, NULL, 0, none.recipient_id, 1, &got), 0);
    assert_false(got.has_id_context);
    assert_int_equal(edhoc_state_get_peer(db, empty_idc, 0, none.recipient_id, 1, &got), 0);
    assert_true(got.has_id_context);
    assert_int_equal(got.id_context_len, 0);
    assert_int_equal(edhoc_state_delete_peer(db, NULL, 0, none.recipient_id, 1), 0);
    assert_int_equal(edhoc_state_count(db), 1);
    assert_true(get_mark(db, &empty) == 5000);
    edhoc_state_close(db);
}

/* ---- migration from schema version 1 ---- */

/* The version 1 layout, as edhoc-cli wrote it: peer keyed by recipient_id
 * alone, an empty id_context for "none". */
static const char v1_schema_sql[] =
    "PRAGMA journal_mode = WAL;"
    "BEGIN;"
    "PRAGMA application_id = 1162102851;" /* 0x45444843, "EDHC" */
    "PRAGMA user_version = 1;"
    "CREATE TABLE meta ("
    "  key TEXT PRIMARY KEY NOT NULL,"
    "  value ANY"
    ") STRICT;"
    "CREATE TABLE peer ("
    "  recipient_id BLOB PRIMARY KEY NOT NULL,"
    "  sender_id BLOB NOT NULL,"
    "  id_context BLOB NOT NULL,"
    "  master_secret BLOB NOT NULL,"
    "  master_salt BLOB NOT NULL,"
    "  aead_alg INTEGER NOT NULL,"
    "  hkdf_alg INTEGER NOT NULL,"
    "  ssn_mark INTEGER NOT NULL CHECK (ssn_mark >= 0),"
    "  peer TEXT NOT NULL,"
    "  created INTEGER NOT NULL,"
    "  method INTEGER NOT NULL,"
    "  suite INTEGER NOT NULL"
    ") STRICT, WITHOUT ROWID;"
    "INSERT INTO meta (key, value) VALUES ('magic', 'edhoc-cli state');"
    "INSERT INTO meta (key, value) VALUES ('schema_version', 1);"
    "INSERT INTO meta (key, value) VALUES ('created', 1700000000);"
    /* An EDHOC-derived context (method 3, suite 2): no ID Context. */
    "INSERT INTO peer VALUES (x'0a', x'0b', x'', x'00112233445566778899aabbccddeeff',"
    "  x'a1a2a3a4a5a6a7a8', 10, -16, 4242, '192.0.2.7:5683', 1700000001, 3, 2);"
    /* A static context with an 8-byte ID Context. */
    "INSERT INTO peer VALUES (x'01', x'', x'37cbf3210017a2d3',"
    "  x'0102030405060708090a0b0c0d0e0f10', x'9e7ca92223786340', 10, -16, 777, 'static',"
    "  1700000002, -1, -1);"
    /* A static context with an empty id_context: absent or empty, v1 did
     * not say. */
    "INSERT INTO peer VALUES (x'', x'01', x'', x'0102030405060708090a0b0c0d0e0f10',"
    "  x'', 10, -16, 99, 'static', 1700000003, -1, -1);"
    "COMMIT;";

static int64_t sql_int(const char *path, const char *query)
{
    sqlite3 *s = NULL;
    assert_int_equal(sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(s, query, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_close(s), SQLITE_OK);
    return v;
}

static void make_v1_db(struct fixture *f)
{
    make_state_dir(f);
    sql_exec(f->file, v1_schema_sql);
    assert_int_equal(sql_int(f->file, "PRAGMA user_version"), 1);
}

/* What each v1 row must become (the rule in edhoc/state.h). */
static void check_migrated(struct edhoc_state_db *db)
{
    static const uint8_t rid_edhoc[] = {0x0a}, rid_b[] = {0x01}, empty[1] = {0};
    static const uint8_t idc_b[] = {0x37, 0xcb, 0xf3, 0x21, 0x00, 0x17, 0xa2, 0xd3};
    static const uint8_t secret[] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                     0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
    static const uint8_t salt[] = {0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8};
    struct edhoc_state_peer got;
    assert_int_equal(edhoc_state_count(db), 4);

    /* RFC 9528 Appendix A.1 derives OSCORE contexts without an ID Context:
     * the EDHOC row keeps every value, under "no ID Context" only. */
    assert_int_equal(edhoc_state_get_peer(db, NULL, 0, rid_edhoc, 1, &got), 0);
    assert_false(got.has_id_context);
    assert_int_equal(got.id_context_len, 0);
    assert_true(got.ssn_mark == 4242);
    assert_int_equal(got.sender_id_len, 1);
    assert_int_equal(got.sender_id[0], 0x0b);
    assert_int_equal(got.master_secret_len, sizeof secret);
    assert_memory_equal(got.master_secret, secret, sizeof secret);
    assert_int_equal(got.master_salt_len, sizeof salt);
    assert_memory_equal(got.master_salt, salt, sizeof salt);
    assert_int_equal(got.aead_alg, 10);
    assert_int_equal(got.hkdf_alg, -16);
    assert_string_equal(got.peer, "192.0.2.7:5683");
    assert_true(got.created == 1700000001);
    assert_int_equal(got.method, 3);
    assert_int_equal(got.suite, 2);
    assert_int_equal(edhoc_state_get_peer(db, empty, 0, rid_edhoc, 1, &got),
                     EDHOC_STATE_ERR_NOT_FOUND);

    /* A non-empty v1 id_context is that ID Context. */
    assert_int_equal(edhoc_state_get_peer(db, idc_b, sizeof idc_b, rid_b, 1, &got), 0);
    assert_true(got.has_id_context);
    assert_true(got.ssn_mark == 777);
    assert_int_equal(got.method, -1);
    assert_int_equal(edhoc_state_get_peer(db, NULL, 0, rid_b, 1, &got),
                     EDHOC_STATE_ERR_NOT_FOUND);

    /* The ambiguous static row: under both keys, each with its mark, so
     * the context resumes above 99 whichever its file says. */
    assert_int_equal(edhoc_state_get_peer(db, NULL, 0, empty, 0, &got), 0);
    assert_false(got.has_id_context);
    assert_true(got.ssn_mark == 99);
    assert_int_equal(edhoc_state_get_peer(db, empty, 0, empty, 0, &got), 0);
    assert_true(got.has_id_context);
    assert_int_equal(got.id_context_len, 0);
    assert_true(got.ssn_mark == 99);
    assert_int_equal(got.sender_id_len, 1);
    assert_int_equal(got.sender_id[0], 0x01);
    assert_int_equal(got.master_salt_len, 0);
    assert_string_equal(got.peer, "static");
}

/* A version 1 file is migrated in place on open, keeping every row and
 * its mark (RFC 8613 Appendix B.1.1: a mark must never go down, or the
 * restarted endpoint reuses nonces). */
static void test_migrates_version_1(void **state)
{
    struct fixture *f = *state;
    make_v1_db(f);
    struct edhoc_state_db *db = open_ok(f->sdir);
    check_migrated(db);
    /* The migrated rows are ordinary version 2 rows. */
    static const uint8_t rid_edhoc[] = {0x0a};
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 0, rid_edhoc, 1, 5000), 0);
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 0, rid_edhoc, 1, 10), 0);
    edhoc_state_close(db);

    assert_int_equal(sql_int(f->file, "PRAGMA user_version"), EDHOC_STATE_SCHEMA_VERSION);
    assert_int_equal(sql_int(f->file, "SELECT value FROM meta WHERE key = 'schema_version'"),
                     EDHOC_STATE_SCHEMA_VERSION);
    assert_int_equal(sql_int(f->file, "SELECT count(*) FROM sqlite_schema WHERE name = 'peer_v1'"),
                     0);
    assert_int_equal(sql_int(f->file, "SELECT ssn_mark FROM peer WHERE recipient_id = x'0a'"),
                     5000);

    /* A second open finds version 2 and changes nothing. */
    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 4);
    edhoc_state_close(db);
}

/* The migration is committed before open returns: a process killed right
 * after open leaves a version 2 file with every row. */
static void test_migration_durable_on_return(void **state)
{
    struct fixture *f = *state;
    make_v1_db(f);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        struct edhoc_state_db *db = NULL;
        char ok = edhoc_state_open(f->sdir, &db, NULL, 0) == 0 ? 'y' : 'n';
        if (write(fds[1], &ok, 1) != 1)
            _exit(2);
        for (;;)
            pause(); /* never closes: no checkpoint, no clean shutdown */
    }
    close(fds[1]);
    char ok = 0;
    assert_int_equal(read(fds[0], &ok, 1), 1);
    close(fds[0]);
    kill(pid, SIGKILL);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(ok, 'y');
    struct edhoc_state_db *db = open_ok(f->sdir);
    check_migrated(db);
    edhoc_state_close(db);
    assert_int_equal(sql_int(f->file, "PRAGMA user_version"), EDHOC_STATE_SCHEMA_VERSION);
}

/* A migration that cannot finish changes nothing: the file stays version
 * 1 with its rows, and migrates once the obstacle is gone. */
static void test_failed_migration_leaves_version_1(void **state)
{
    struct fixture *f = *state;
    make_v1_db(f);
    /* The name the migration moves the old table to is taken. */
    sql_exec(f->file, "CREATE TABLE peer_v1 (x INTEGER);");
    struct edhoc_state_db *db = NULL;
    char why[512] = "";
    assert_int_equal(edhoc_state_open(f->sdir, &db, why, sizeof why), EDHOC_STATE_ERR_CORRUPT);
    assert_null(db);
    assert_non_null(strstr(why, "cannot migrate from schema version 1"));
    assert_int_equal(sql_int(f->file, "PRAGMA user_version"), 1);
    assert_int_equal(sql_int(f->file, "SELECT count(*) FROM peer"), 3);
    assert_int_equal(sql_int(f->file, "SELECT value FROM meta WHERE key = 'schema_version'"), 1);

    sql_exec(f->file, "DROP TABLE peer_v1;");
    db = open_ok(f->sdir);
    check_migrated(db);
    edhoc_state_close(db);
}

/* ---- version 2 (no last_used) ---- */

static const char v2_schema_sql[] =
    "PRAGMA journal_mode = WAL;"
    "BEGIN;"
    "PRAGMA application_id = 1162102851;"
    "PRAGMA user_version = 2;"
    "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value ANY) STRICT;"
    "CREATE TABLE peer ("
    "  recipient_id BLOB NOT NULL,"
    "  has_id_context INTEGER NOT NULL CHECK (has_id_context IN (0, 1)),"
    "  id_context BLOB NOT NULL CHECK (has_id_context = 1 OR length(id_context) = 0),"
    "  sender_id BLOB NOT NULL, master_secret BLOB NOT NULL, master_salt BLOB NOT NULL,"
    "  aead_alg INTEGER NOT NULL, hkdf_alg INTEGER NOT NULL,"
    "  ssn_mark INTEGER NOT NULL CHECK (ssn_mark >= 0), peer TEXT NOT NULL,"
    "  created INTEGER NOT NULL, method INTEGER NOT NULL, suite INTEGER NOT NULL,"
    "  PRIMARY KEY (recipient_id, has_id_context, id_context)"
    ") STRICT, WITHOUT ROWID;"
    "INSERT INTO meta (key, value) VALUES ('magic', 'edhoc-cli state');"
    "INSERT INTO meta (key, value) VALUES ('schema_version', 2);"
    "INSERT INTO peer VALUES (x'0a', 0, x'', x'0b', x'00112233445566778899aabbccddeeff',"
    "  x'a1a2', 10, -16, 4242, '192.0.2.7:5683', 1700000001, 3, 2);"
    "INSERT INTO peer VALUES (x'01', 1, x'37cb', x'', x'0102030405060708090a0b0c0d0e0f10',"
    "  x'', 10, -16, 777, 'static', 1700000002, -1, -1);"
    "COMMIT;";

/* A version 2 file gains last_used in place (from each row's creation
 * time, the oldest its last use can be), every other value kept. */
static void test_migrates_version_2(void **state)
{
    struct fixture *f = *state;
    make_state_dir(f);
    sql_exec(f->file, v2_schema_sql);
    struct edhoc_state_db *db = open_ok(f->sdir);
    static const uint8_t rid[] = {0x0a};
    struct edhoc_state_peer got;
    assert_int_equal(edhoc_state_get_peer(db, NULL, 0, rid, 1, &got), 0);
    assert_true(got.ssn_mark == 4242);
    assert_true(got.last_used == 1700000001000);
    assert_int_equal(edhoc_state_count(db), 2);
    edhoc_state_close(db);
    assert_int_equal(sql_int(f->file, "PRAGMA user_version"), EDHOC_STATE_SCHEMA_VERSION);
    assert_int_equal(sql_int(f->file, "SELECT value FROM meta WHERE key = 'schema_version'"),
                     EDHOC_STATE_SCHEMA_VERSION);
    assert_int_equal(
        sql_int(f->file, "SELECT count(*) FROM sqlite_schema WHERE name = 'peer_last_used'"), 1);
}

/* ---- bounds: least recently used, idle expiry ---- */

static int64_t get_used(struct edhoc_state_db *db, const struct edhoc_state_peer *key)
{
    struct edhoc_state_peer p;
    assert_int_equal(edhoc_state_get_peer(db, KEY(*key), &p), 0);
    return p.last_used;
}

/* Contexts last used at the same millisecond: keeping N of them keeps the
 * highest keys (the lowest go first, as a restart loads ties oldest first
 * in key order); a bound at or above the count deletes nothing. */
static void test_prune_ties(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p[6];
    for (uint32_t i = 0; i < 6; i++) {
        make_peer(&p[i], 10 + i);
        p[i].method = 0;
        p[i].last_used = i < 4 ? 7000 : 8000 + i;
        assert_int_equal(edhoc_state_put_peer(db, &p[i]), 0);
    }
    uint64_t expired = 9, evicted = 9;
    assert_int_equal(edhoc_state_prune(db, 0, 6, &expired, &evicted), 0);
    assert_true(expired == 0 && evicted == 0);
    /* Keep 4: 8004, 8005, and two of the four at 7000 (keys 12, 13). */
    assert_int_equal(edhoc_state_prune(db, 0, 4, &expired, &evicted), 0);
    assert_true(evicted == 2);
    struct edhoc_state_peer g;
    for (uint32_t i = 0; i < 6; i++)
        assert_int_equal(edhoc_state_get_peer(db, KEY(p[i]), &g),
                         i < 2 ? EDHOC_STATE_ERR_NOT_FOUND : 0);
    /* Keep 1: the most recent only. */
    assert_int_equal(edhoc_state_prune(db, 0, 1, NULL, &evicted), 0);
    assert_true(evicted == 3);
    assert_int_equal(edhoc_state_get_peer(db, KEY(p[5]), &g), 0);
    assert_int_equal(edhoc_state_count(db), 1);
    edhoc_state_close(db);
}

static int prune_fn(void *ctx, const struct edhoc_state_peer *p)
{
    (void)p;
    return edhoc_state_prune(ctx, 0, 0, NULL, NULL);
}

/* Issue #15: "--max-contexts N with least-recently-used eviction,
 * --context-lifetime (idle expiry), both applied to the SQLite store as
 * well (rows deleted with their marks; a restart loads at most N)".
 * Contexts 1..6 (EDHOC runs) last used at 1000..6000 ms, context 1 used
 * again at 10000; two static contexts (method -1) older than all. */
static void test_prune_least_recently_used(void **state)
{
    struct fixture *f = *state;
    struct edhoc_state_db *db = open_ok(f->sdir);
    struct edhoc_state_peer p[9];
    for (uint32_t i = 1; i <= 8; i++) {
        make_peer(&p[i], i);
        p[i].method = i <= 6 ? 3 : -1;
        p[i].last_used = i <= 6 ? (int64_t)i * 1000 : 1;
        assert_int_equal(edhoc_state_put_peer(db, &p[i]), 0);
        assert_true(get_used(db, &p[i]) == p[i].last_used);
    }
    /* put with no use time: its creation. */
    struct edhoc_state_peer fresh;
    make_peer(&fresh, 99);
    assert_int_equal(edhoc_state_put_peer(db, &fresh), 0);
    assert_true(get_used(db, &fresh) == fresh.created * 1000);
    assert_int_equal(edhoc_state_delete_peer(db, KEY(fresh)), 0);

    assert_int_equal(edhoc_state_touch_peer(db, KEY(p[1]), 10000), 0);
    /* The caller's time is the one stored, earlier or later. */
    assert_int_equal(edhoc_state_touch_peer(db, KEY(p[2]), 500), 0);
    assert_true(get_used(db, &p[2]) == 500);
    assert_int_equal(edhoc_state_touch_peer(db, KEY(p[2]), 2000), 0);
    assert_true(get_used(db, &p[2]) == 2000);
    assert_int_equal(edhoc_state_touch_peer(db, KEY(fresh), 500), EDHOC_STATE_ERR_NOT_FOUND);
    assert_int_equal(edhoc_state_touch_peer(db, KEY(p[2]), -1), EDHOC_STATE_ERR_ARG);

    /* Pruning inside a transaction that is rolled back changes nothing:
     * deletes share the transaction of the writes around them. */
    assert_int_equal(edhoc_state_begin(db), 0);
    uint64_t expired = 9, evicted = 9;
    assert_int_equal(edhoc_state_prune(db, 2500, 3, &expired, &evicted), 0);
    assert_true(expired == 1 && evicted == 2);
    assert_int_equal(edhoc_state_rollback(db), 0);
    assert_int_equal(edhoc_state_count(db), 8);

    /* Idle before 2500 ms: context 2. Then the 3 most recently used stay
     * (1, 6, 5): 3 and 4 go. Static contexts are never pruned. */
    assert_int_equal(edhoc_state_prune(db, 2500, 3, &expired, &evicted), 0);
    assert_true(expired == 1);
    assert_true(evicted == 2);
    assert_int_equal(edhoc_state_count(db), 5);
    static const int kept[] = {1, 5, 6, 7, 8}, gone[] = {2, 3, 4};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        assert_true(get_mark(db, &p[kept[i]]) == p[kept[i]].ssn_mark);
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        struct edhoc_state_peer g;
        /* The row and its mark are gone together. */
        assert_int_equal(edhoc_state_get_peer(db, KEY(p[gone[i]]), &g), EDHOC_STATE_ERR_NOT_FOUND);
        assert_int_equal(edhoc_state_store_ssn(db, KEY(p[gone[i]]), 1u << 30),
                         EDHOC_STATE_ERR_NOT_FOUND);
    }
    /* No bound and no age: nothing goes; keep 0: every EDHOC one. */
    assert_int_equal(edhoc_state_prune(db, 0, UINT64_MAX, &expired, &evicted), 0);
    assert_true(expired == 0 && evicted == 0);
    assert_int_equal(edhoc_state_prune(db, 0, 0, NULL, &evicted), 0);
    assert_true(evicted == 3);
    assert_int_equal(edhoc_state_count(db), 2);

    /* Not while an iteration runs (it would delete rows under it). */
    assert_int_equal(edhoc_state_for_each_peer(db, prune_fn, db), EDHOC_STATE_ERR_ARG);
    assert_int_equal(edhoc_state_count(db), 2);
    edhoc_state_close(db);
}

/* ---- crash safety ---- */

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
        print_message("# round %d: last reported %" PRIu64 ", stored %" PRIu64 "\n", round,
                      last, stored);
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
        return true;  /* cannot tell: do not fail for that */
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
            edhoc_state_get_peer(db, KEY(p), &got) == 0 &&
            got.ssn_mark == 5000 && edhoc_state_count(db) == 1)
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
        p->ssn_mark != want.ssn_mark || strcmp(p->peer, want.peer) != 0 ||
        p->suite != want.suite)
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
    print_message("# %u contexts: put in one transaction %.3f s, file %lld bytes (%.0f bytes/context), "
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
                  "non-raising %.0f calls/s\n", calls, t8 - t7, calls / (t8 - t7),
                  (t8 - t7) / calls * 1e6, calls / (t9 - t8));
    assert_true(get_mark(db, &p) == p.ssn_mark + (uint64_t)calls * 20);
    edhoc_state_close(db);
}

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
            back.ssn_mark != p.ssn_mark + 77 || memcmp(back.master_secret, p.master_secret,
                                                       p.master_secret_len))
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
                 "B.1.1), so no nonce is used twice", f->file, found, to);
        if (!r || strcmp(r, want))
            fail_msg("recovery: \"%s\"\n want: \"%s\"", r ? r : "(none)", want);
    }
    assert_true(get_mark(db, key) == want_mark);
    edhoc_state_close(db);
}


/* ---- group commit (edhoc_state_group_commit) ---- */

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
        if (edhoc_state_open(f->sdir, &h, NULL, 0) ||
            edhoc_state_group_commit(h, 256, 600000))
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
        cmocka_unit_test_setup_teardown(test_round_trip_every_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modes_of_new_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_unsafe_directory_and_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_ssn_never_lowers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_id_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_for_each_early_stop_and_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_open_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transactions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_recipient_id_different_id_contexts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_absent_and_empty_id_context_distinct, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_migrates_version_1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migration_durable_on_return, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_migration_leaves_version_1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrates_version_2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_least_recently_used, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prune_ties, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_text_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_empty_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_foreign_sqlite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_symlink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_garbage_overwritten, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_newer_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_damaged_metadata, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_damage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_safety_kill9, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handle_survives_daemonizing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ten_thousand_contexts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_writer_for_workers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_group_commit_fails_the_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_that_went_backwards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_batches_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_closes_on_size_and_time, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_failed_batch_fails_every_item, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_mark_durable_before_use, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_writer_process_groups_across_passes, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
