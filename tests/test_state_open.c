/*
 * Opening the state store: refusal of files that are not ours (left
 * byte-identical), of unsafe modes and owners, of a second process, and the
 * migration of version 1 and 2 files.
 */
#include "state_test_util.h"

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
             "sequence numbers: chmod 700 %s, or give a new directory",
             f->sdir, f->sdir);
    expect_unsafe(f->sdir, want);
    assert_int_equal(stat(f->sdir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0777);
    assert_int_equal(chmod(f->sdir, 0700), 0);

    assert_int_equal(chmod(f->file, 0644), 0);
    snprintf(want, sizeof want,
             "%s: group or others can access it (mode 0644) and it holds OSCORE secrets and "
             "sequence numbers: chmod 600 %s",
             f->file, f->file);
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
             "sequence numbers: chmod 600 %s",
             wal, wal);
    expect_unsafe(f->sdir, want);
    assert_int_equal(unlink(wal), 0);

    /* Someone else's: only root can make one (tests run as root). */
    if (geteuid() == 0) {
        assert_int_equal(chown(f->file, 65534, 65534), 0);
        snprintf(want, sizeof want,
                 "%s: owned by uid 65534, not by the user running (uid 0), and it holds OSCORE "
                 "secrets and sequence numbers: chown 0 %s",
                 f->file, f->file);
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
             "directory itself, not a link to it",
             link);
    expect_unsafe(link, want);

    /* Whoever may write the directory above can swap the state directory;
     * a sticky one (/tmp) only lets them swap their own entries. */
    assert_int_equal(chmod(f->dir, 0777), 0);
    snprintf(want, sizeof want,
             "%s: in a directory others can write (%s, mode 0777): they could put another "
             "directory in its place; fix it with: chmod go-w %s",
             f->sdir, f->dir, f->dir);
    expect_unsafe(f->sdir, want);
    assert_int_equal(chmod(f->dir, 01777), 0);
    edhoc_state_close(open_ok(f->sdir));
    assert_int_equal(chmod(f->dir, 0700), 0);
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
    assert_int_equal(access(wal, F_OK), -1); /* a clean close leaves one file */
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
    assert_int_equal(edhoc_state_get_peer(db, NULL, 0, rid_b, 1, &got), EDHOC_STATE_ERR_NOT_FOUND);

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

/* What version 2 and 3 files begin with as edhoc-cli wrote them (ids and
 * meta; user_version and schema_version follow), and the columns of
 * peer that both versions have. */
#define V2_FILE_HEAD_SQL                                                                           \
    "PRAGMA journal_mode = WAL;"                                                                   \
    "BEGIN;"                                                                                       \
    "PRAGMA application_id = 1162102851;"                                                          \
    "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value ANY) STRICT;"                         \
    "INSERT INTO meta (key, value) VALUES ('magic', 'edhoc-cli state');"
#define V2_PEER_COLUMNS_SQL                                                                        \
    "  recipient_id BLOB NOT NULL,"                                                                \
    "  has_id_context INTEGER NOT NULL CHECK (has_id_context IN (0, 1)),"                          \
    "  id_context BLOB NOT NULL CHECK (has_id_context = 1 OR length(id_context) = 0),"             \
    "  sender_id BLOB NOT NULL, master_secret BLOB NOT NULL, master_salt BLOB NOT NULL,"           \
    "  aead_alg INTEGER NOT NULL, hkdf_alg INTEGER NOT NULL,"                                      \
    "  ssn_mark INTEGER NOT NULL CHECK (ssn_mark >= 0), peer TEXT NOT NULL,"                       \
    "  created INTEGER NOT NULL, method INTEGER NOT NULL, suite INTEGER NOT NULL,"

static const char v2_schema_sql[] = V2_FILE_HEAD_SQL
    "PRAGMA user_version = 2;"
    "INSERT INTO meta (key, value) VALUES ('schema_version', 2);"
    "CREATE TABLE peer (" V2_PEER_COLUMNS_SQL
    "  PRIMARY KEY (recipient_id, has_id_context, id_context)"
    ") STRICT, WITHOUT ROWID;"
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

/* ---- version 3 (WITHOUT ROWID) ---- */

static const char v3_schema_sql[] = V2_FILE_HEAD_SQL
    "PRAGMA user_version = 3;"
    "INSERT INTO meta (key, value) VALUES ('schema_version', 3);"
    "CREATE TABLE peer (" V2_PEER_COLUMNS_SQL "  last_used INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (recipient_id, has_id_context, id_context)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE INDEX peer_last_used ON peer (last_used) WHERE method >= 0;"
    "INSERT INTO peer VALUES (x'0a', 0, x'', x'0b', x'00112233445566778899aabbccddeeff',"
    "  x'a1a2', 10, -16, 4242, '192.0.2.7:5683', 1700000001, 3, 2, 1700000005123);"
    "INSERT INTO peer VALUES (x'01', 1, x'37cb', x'', x'0102030405060708090a0b0c0d0e0f10',"
    "  x'', 10, -16, 777, 'static', 1700000002, -1, -1, 1700000002000);"
    "INSERT INTO peer VALUES (x'01', 1, x'', x'02', x'0102030405060708090a0b0c0d0e0f11',"
    "  x'', 10, -16, 12, 'static', 1700000003, -1, -1, 1700000003000);"
    "COMMIT;";

/* A version 3 file moves into version 4's rowid table on open: every
 * row, mark and use time kept (RFC 8613 Appendix B.1.1: a mark must never
 * go down), the use-time index rebuilt, the old table gone. */
static void test_migrates_version_3(void **state)
{
    struct fixture *f = *state;
    make_state_dir(f);
    sql_exec(f->file, v3_schema_sql);
    struct edhoc_state_db *db = open_ok(f->sdir);
    static const uint8_t rid[] = {0x0a}, rid_static[] = {0x01}, idc[] = {0x37, 0xcb};
    struct edhoc_state_peer got;
    assert_int_equal(edhoc_state_get_peer(db, NULL, 0, rid, 1, &got), 0);
    assert_true(got.ssn_mark == 4242);
    assert_true(got.last_used == 1700000005123);
    assert_int_equal(got.master_salt_len, 2);
    assert_string_equal(got.peer, "192.0.2.7:5683");
    assert_int_equal(edhoc_state_get_peer(db, idc, sizeof idc, rid_static, 1, &got), 0);
    assert_true(got.ssn_mark == 777);
    /* The empty ID Context stays apart from the 2-byte one. */
    assert_int_equal(edhoc_state_get_peer(db, idc, 0, rid_static, 1, &got), 0);
    assert_true(got.ssn_mark == 12);
    assert_int_equal(edhoc_state_count(db), 3);
    /* The key is still unique: a put of an existing key updates it. */
    assert_int_equal(edhoc_state_store_ssn(db, NULL, 0, rid, 1, 5000), 0);
    edhoc_state_close(db);
    assert_int_equal(sql_int(f->file, "PRAGMA user_version"), EDHOC_STATE_SCHEMA_VERSION);
    assert_int_equal(sql_int(f->file, "SELECT value FROM meta WHERE key = 'schema_version'"),
                     EDHOC_STATE_SCHEMA_VERSION);
    assert_int_equal(sql_int(f->file, "SELECT count(*) FROM sqlite_schema WHERE name = 'peer_v3'"),
                     0);
    assert_int_equal(
        sql_int(f->file, "SELECT count(*) FROM sqlite_schema WHERE name = 'peer_last_used'"), 1);
    assert_int_equal(sql_int(f->file, "SELECT count(*) FROM sqlite_schema WHERE name = 'peer' "
                                      "AND sql LIKE '%WITHOUT ROWID%'"),
                     0);
    assert_int_equal(sql_int(f->file, "SELECT ssn_mark FROM peer WHERE recipient_id = x'0a'"),
                     5000);
    assert_int_equal(sql_int(f->file, "SELECT count(*) FROM peer"), 3);
}

/* A version 3 migration that cannot finish changes nothing, and the file
 * migrates once the obstacle is gone. */
static void test_failed_migration_leaves_version_3(void **state)
{
    struct fixture *f = *state;
    make_state_dir(f);
    sql_exec(f->file, v3_schema_sql);
    sql_exec(f->file, "CREATE TABLE peer_v3 (x INTEGER);");
    struct edhoc_state_db *db = NULL;
    char why[512] = "";
    assert_int_equal(edhoc_state_open(f->sdir, &db, why, sizeof why), EDHOC_STATE_ERR_CORRUPT);
    assert_null(db);
    assert_non_null(strstr(why, "cannot migrate from schema version 3"));
    assert_int_equal(sql_int(f->file, "PRAGMA user_version"), 3);
    assert_int_equal(sql_int(f->file, "SELECT count(*) FROM peer"), 3);
    sql_exec(f->file, "DROP TABLE peer_v3;");
    db = open_ok(f->sdir);
    assert_int_equal(edhoc_state_count(db), 3);
    edhoc_state_close(db);
    assert_int_equal(sql_int(f->file, "PRAGMA user_version"), EDHOC_STATE_SCHEMA_VERSION);
}

/* The layout the writer's cost depends on (src/state/state.c, the peer
 * table): contexts whose recipient IDs come in no order (the responder
 * draws C_R at random) are stored in the order they came, so a batch of
 * new contexts appends instead of rewriting one random page each. Before
 * version 4 the table was ordered by the key and had no rowid at all. */
static void test_new_contexts_append(void **state)
{
    struct fixture *f = *state;
    make_state_dir(f);
    struct edhoc_state_db *db = open_ok(f->sdir);
    static const uint32_t order[] = {0x7f3a01u, 0x0102u, 0xfe99u, 0x33u, 0x8000u};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        struct edhoc_state_peer p;
        make_peer(&p, order[i]);
        assert_int_equal(edhoc_state_put_peer(db, &p), 0);
    }
    edhoc_state_close(db);
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        char q[200];
        snprintf(q, sizeof q,
                 "SELECT count(*) FROM peer WHERE rowid = %zu AND recipient_id = x'%08x'", i + 1,
                 (unsigned)order[i]);
        assert_int_equal(sql_int(f->file, q), 1);
    }
}

/* ---- bounds: least recently used, idle expiry ---- */

int main(void)
{
    /* Files the tests write stand for ones the tool made (0600); the
     * tests of modes set their own. */
    umask(077);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_modes_of_new_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_unsafe_directory_and_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_open_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrates_version_1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migration_durable_on_return, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_migration_leaves_version_1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrates_version_2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrates_version_3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_migration_leaves_version_3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_contexts_append, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_text_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_empty_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_foreign_sqlite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_symlink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_garbage_overwritten, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_newer_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_damaged_metadata, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_damage, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
