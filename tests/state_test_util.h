/* What the tests of src/state share: a fresh state directory per test,
 * contexts to store, reading back. */
#ifndef STATE_TEST_UTIL_H
#define STATE_TEST_UTIL_H

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

struct fixture {
    char dir[1024];  /* a fresh temporary directory */
    char sdir[1100]; /* dir/state: the state directory under test */
    char file[1200]; /* sdir/EDHOC_STATE_FILE */
};

static inline int rm_rf(const char *path)
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
                int n = snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
                if (n > 0 && (size_t)n < sizeof sub)
                    rm_rf(sub);
            }
            closedir(d);
        }
        return rmdir(path);
    }
    return unlink(path);
}

static inline int setup(void **state)
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

static inline int teardown(void **state)
{
    struct fixture *f = *state;
    rm_rf(f->dir);
    free(f);
    return 0;
}

/* A context whose every field depends on i, so a mix-up between rows or
 * columns shows. */
static inline void make_peer(struct edhoc_state_peer *p, uint32_t i)
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

static inline struct edhoc_state_db *open_ok(const char *dir)
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

static inline uint64_t get_mark(struct edhoc_state_db *db, const struct edhoc_state_peer *key)
{
    struct edhoc_state_peer p;
    assert_int_equal(edhoc_state_get_peer(db, KEY(*key), &p), 0);
    return p.ssn_mark;
}

/* ---- round trips ---- */

static inline void write_all(const char *path, const void *p, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(p, 1, len, fp), len);
    fclose(fp);
}

static inline unsigned char *read_all(const char *path, size_t *len)
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

#endif
