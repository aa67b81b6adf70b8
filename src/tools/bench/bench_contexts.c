/*
 * bench contexts: what a responder with many established OSCORE
 * contexts costs. N contexts are written to a fresh state database (the
 * format `responder --state-dir` keeps), then loaded into a responder
 * engine in this process, the way the daemon loads them at start; the
 * process's resident memory before and after the load gives the cost per
 * context, and the 1,000,000-context target is read off it.
 *
 * The database lives in a fresh directory under $TMPDIR (else /tmp) and is
 * removed however the run ends, SIGINT and SIGTERM included: an
 * interrupted run reports the contexts written so far.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "edhoc/crypto.h"
#include "edhoc/state.h"
#include "edhoc/transport.h"
#include "bench_report.h"

#define TARGET_CONTEXTS 1000000L
#define TARGET_RSS_MIB  512.0
#define INSERT_BATCH    20000

/* Resident set size of this process in KiB (VmRSS), or -1. */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Context i: recipient ID = i in 4 bytes (unique), keying material that
 * differs per context so nothing can be shared between them. */
static void make_peer(long i, struct edhoc_state_peer *p)
{
    memset(p, 0, sizeof *p);
    for (int k = 0; k < 4; k++)
        p->recipient_id[k] = (uint8_t)(i >> (24 - 8 * k));
    p->recipient_id_len = 4;
    p->sender_id[0] = (uint8_t)(i % 24);
    p->sender_id_len = 1;
    for (size_t k = 0; k < 16; k++)
        p->master_secret[k] = (uint8_t)(i * 31 + (long)k * 7);
    p->master_secret_len = 16;
    for (size_t k = 0; k < 8; k++)
        p->master_salt[k] = (uint8_t)(i + (long)k);
    p->master_salt_len = 8;
    p->aead_alg = EDHOC_COSE_AES_CCM_16_64_128;
    p->hkdf_alg = EDHOC_COSE_SHA256;
    p->ssn_mark = 32;
    snprintf(p->peer, sizeof p->peer, "bench-%ld", i);
    p->created = (int64_t)time(NULL);
    p->method = 3;
    p->suite = 0;
}

static const struct edhoc_config *no_config(void *user, int method, int suite,
                                            edhoc_cred_resolver *resolve, void **resolve_ctx)
{
    (void)user, (void)method, (void)suite, (void)resolve, (void)resolve_ctx;
    return NULL;
}

static const struct bench_column context_cols[] = {
    {"contexts", "Contexts", BENCH_COL_INT, false},
    {"write_s", "Written to the state database (s)", BENCH_COL_NUM, false},
    {"load_s", "Loaded by the responder engine (s)", BENCH_COL_NUM, false},
    {"rss_before_mib", "RSS before the load (MiB)", BENCH_COL_NUM, false},
    {"rss_after_mib", "RSS after the load (MiB)", BENCH_COL_NUM, false},
    {"rss_per_context", "RSS per context (bytes)", BENCH_COL_NUM, false},
    {"engine_per_context", "Engine bytes per context", BENCH_COL_INT, false},
    {"rss_at_1m_mib", "RSS at 1,000,000 contexts (MiB)", BENCH_COL_NUM, false},
};

/* The table's one row: what completed (NaN: not reached). */
static void contexts_row(struct bench_report *r, long contexts, double write_s, double load_s,
                         long before, long after, double engine, double per, double at_1m)
{
    struct bench_table *t =
        bench_table_new("contexts", "Established OSCORE contexts in memory", context_cols,
                        sizeof context_cols / sizeof context_cols[0]);
    if (!t || !bench_report_add(r, t))
        return;
    snprintf(t->note, sizeof t->note,
             "Contexts written to a fresh state database, then loaded by the responder engine in "
             "this process as `responder --state-dir` does at start. RSS is this process's VmRSS; "
             "the 1,000,000 figure is measured when --contexts is 1000000, else extrapolated "
             "from the cost per context.");
    struct bench_cell *row = bench_table_add_row(t);
    if (!row)
        return;
    bench_row_num(t, row, "contexts", (double)contexts);
    bench_row_num(t, row, "write_s", write_s);
    bench_row_num(t, row, "load_s", load_s);
    bench_row_num(t, row, "rss_before_mib", before > 0 ? before / 1024.0 : NAN);
    bench_row_num(t, row, "rss_after_mib", after > 0 ? after / 1024.0 : NAN);
    bench_row_num(t, row, "rss_per_context", per);
    bench_row_num(t, row, "engine_per_context", engine);
    bench_row_num(t, row, "rss_at_1m_mib", at_1m);
}

int bench_contexts_run(struct bench_report *r, long count)
{
    /* $TMPDIR as every program that makes temporary files honours it. */
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s/edhoc-bench-contexts-XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
        (int)sizeof dir) {
        bench_report_error(r, "bench: TMPDIR is too long");
        return TOOLS_ERR_USAGE;
    }
    if (!mkdtemp(dir)) {
        bench_report_error(r, "bench: cannot make a temporary directory in %s: %s",
                           tmp && *tmp ? tmp : "/tmp", strerror(errno));
        return TOOLS_ERR_INPUT;
    }
    int rc = TOOLS_ERR_INTERNAL;
    struct edhoc_state_db *db = NULL;
    struct edhoc_server *srv = NULL;
    char why[256] = "";
    int src = edhoc_state_open(dir, &db, why, sizeof why);
    if (src) {
        bench_report_error(r, "bench: state database: %s",
                           why[0] ? why : edhoc_state_strerror(src));
        goto out;
    }
    uint64_t t0 = tools_now_ns();
    struct edhoc_state_peer p;
    long written = 0;
    for (long i = 0; i < count && !src && !bench_interrupted(&r->effort); i += INSERT_BATCH) {
        bench_progress(r, "contexts: %ld of %ld written", i, count);
        /* One transaction per batch: one sync per batch, not per context. */
        src = edhoc_state_begin(db);
        long k = i;
        for (; k < count && k < i + INSERT_BATCH && !src; k++) {
            make_peer(k, &p);
            src = edhoc_state_put_peer(db, &p);
        }
        if (!src)
            src = edhoc_state_commit(db);
        else
            edhoc_state_rollback(db);
        if (!src)
            written = k;
    }
    edhoc_wipe(&p, sizeof p);
    if (src) {
        bench_report_error(r, "bench: state database: %s", edhoc_state_strerror(src));
        goto out;
    }
    double write_s = (double)(tools_now_ns() - t0) / 1e9;
    edhoc_state_close(db);
    db = NULL;
    if (bench_interrupted(&r->effort)) {
        /* What completed: the contexts written, nothing loaded. */
        contexts_row(r, written, write_s, NAN, -1, -1, NAN, NAN, NAN);
        rc = 0;
        goto out;
    }

    /* The daemon's start: open the database, load every context. */
    long before = rss_kib();
    t0 = tools_now_ns();
    src = edhoc_state_open(dir, &db, why, sizeof why);
    if (src) {
        bench_report_error(r, "bench: state database: %s",
                           why[0] ? why : edhoc_state_strerror(src));
        goto out;
    }
    struct edhoc_server_config cfg = {
        .ops = edhoc_crypto_default(),
        .select = no_config,
        .db = db,
        /* All of them, however many: the cap is what is measured for. */
        .max_contexts = (size_t)count,
    };
    srv = edhoc_server_new(&cfg);
    if (!srv)
        goto out;
    bench_progress(r, "contexts: loading %ld", count);
    long loaded = edhoc_server_load_state(srv);
    double load_s = (double)(tools_now_ns() - t0) / 1e9;
    long after = rss_kib();
    if (loaded != count) {
        bench_report_error(r, "bench: loaded %ld of %ld contexts", loaded, count);
        rc = TOOLS_ERR_FAILURE;
        goto out;
    }
    struct edhoc_server_stats st;
    edhoc_server_get_stats(srv, &st);
    double per = before > 0 && after > 0 ? (double)(after - before) * 1024.0 / (double)count : NAN;
    double at_1m = count == TARGET_CONTEXTS && after > 0 ? after / 1024.0
                   : before > 0 ? before / 1024.0 + per * TARGET_CONTEXTS / 1048576.0
                                : NAN;
    contexts_row(r, count, write_s, load_s, before, after, (double)st.bytes_per_context, per,
                 at_1m);
    char name[160];
    snprintf(name, sizeof name, "RSS with 1,000,000 established contexts loaded (%s)",
             count == TARGET_CONTEXTS ? "measured" : "extrapolated");
    bench_report_target(r, "rss_1m_contexts", name, at_1m, TARGET_RSS_MIB, "MiB");
    rc = 0;
out:
    if (srv)
        edhoc_server_free(srv);
    if (db)
        edhoc_state_close(db);
    remove_dir(dir);
    return rc;
}
