/*
 * bench handshake: complete in-process EDHOC handshakes per
 * method, ID_CRED type and cipher suite, timed per role, beside their
 * crypto floor.
 *
 * The floor is found by recording every call one handshake makes through
 * the crypto ops table (with its inputs), then replaying exactly those
 * calls against the backend alone. Handshake samples and floor samples
 * alternate, so both see the same machine state; the ratio of their
 * medians is what the protocol code, CBOR, credential lookup and
 * bookkeeping add on top of the cryptography.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/edhoc.h"
#include "edhoc/oscore.h"
#include "bench_record.h"
#include "bench_report.h"

#define SIDE_I BENCH_SIDE_I
#define SIDE_R BENCH_SIDE_R

/* The backends every configuration is measured under, OpenSSL first. */
static const struct edhoc_crypto_ops *(*const backends[])(void) = {
    edhoc_crypto_openssl, edhoc_crypto_sodium, edhoc_crypto_auto};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

/* ---- One configuration ---- */

struct hs_config {
    int method;
    int id_cred_type;
    int suite;
    const struct bench_side_maker *maker;
    struct bench_sides sides; /* the caller's: configs and resolver */
    struct edhoc_received rx_i, rx_r;
    uint8_t m1[EDHOC_MAX_MESSAGE], m2[EDHOC_MAX_MESSAGE], m3[EDHOC_MAX_MESSAGE];
    size_t bytes; /* message_1 + message_2 + message_3 */
    char error[256];
};

struct hs_times {
    uint64_t i_ns, r_ns, total_ns;
    uint64_t lookup_ns; /* inside the credential resolver, both sides */
};

/* The resolver the CLI peers use, timed: credential lookup is application
 * work outside the crypto table, and is reported apart. */
static uint64_t lookup_ns;

static int timed_resolve(void *ctx, const uint8_t *id_cred, size_t id_cred_len,
                         const struct edhoc_cred **cred)
{
    const struct bench_sides *sides = ((const void *const *)ctx)[0];
    uint64_t t0 = tools_now_ns();
    int rc = sides->resolve(((void *const *)ctx)[1], id_cred, id_cred_len, cred);
    lookup_ns += tools_now_ns() - t0;
    return rc;
}

static int hs_fail(struct hs_config *c, const struct edhoc_session *s, const char *side, int rc)
{
    char why[200] = "";
    if (s && edhoc_session_error(s))
        edhoc_session_error_text(s, why, sizeof why);
    snprintf(c->error, sizeof c->error, "%s: %s%s%s", side, edhoc_strerror(rc), why[0] ? ": " : "",
             why);
    return rc ? rc : -1;
}

/* One complete handshake up to both OSCORE parameter sets, each step's
 * time charged to the side that runs it. */
static int hs_run(struct hs_config *c, const struct edhoc_crypto_ops *ops, struct hs_times *t)
{
    static const uint8_t c_i = 0x0e, c_r = 0x18; /* distinct one-byte identifiers */
    struct edhoc_session s_i = {0}, s_r = {0};
    struct edhoc_oscore_params p_i, p_r;
    int rc = 0;
    c->sides.cfg_i->ops = ops;
    c->sides.cfg_r->ops = ops;
    /* The timed resolver's context: the sides and the side's own context. */
    const void *ctx_i[2] = {&c->sides, c->sides.resolve_ctx_i};
    const void *ctx_r[2] = {&c->sides, c->sides.resolve_ctx_r};

    lookup_ns = 0;
    uint64_t t0 = tools_now_ns();
    bench_rec.side = SIDE_I;
    rc = edhoc_session_init(&s_i, EDHOC_INITIATOR, c->sides.cfg_i);
    if (!rc)
        rc = edhoc_session_set_conn_id(&s_i, &c_i, 1);
    int n1 = rc ? rc : edhoc_initiator_prepare_message_1(&s_i, c->m1, sizeof c->m1);
    uint64_t t1 = tools_now_ns();
    if (n1 < 0)
        return hs_fail(c, &s_i, "initiator, message_1", n1);

    bench_rec.side = SIDE_R;
    rc = edhoc_session_init(&s_r, EDHOC_RESPONDER, c->sides.cfg_r);
    if (!rc)
        rc = edhoc_session_set_conn_id(&s_r, &c_r, 1);
    if (!rc)
        rc = edhoc_responder_process_message_1(&s_r, c->m1, (size_t)n1, &c->rx_r);
    int n2 = rc ? rc : edhoc_responder_prepare_message_2(&s_r, c->m2, sizeof c->m2);
    uint64_t t2 = tools_now_ns();
    if (n2 < 0) {
        edhoc_session_wipe(&s_i);
        return hs_fail(c, &s_r, "responder, message_2", n2);
    }

    bench_rec.side = SIDE_I;
    rc = edhoc_initiator_handle_message_2(&s_i, c->m2, (size_t)n2, &c->rx_i, timed_resolve,
                                          (void *)ctx_i);
    int n3 = rc ? rc : edhoc_initiator_prepare_message_3(&s_i, c->m3, sizeof c->m3);
    if (n3 >= 0) {
        rc = edhoc_session_oscore(&s_i, &p_i);
        if (rc)
            n3 = rc;
    }
    uint64_t t3 = tools_now_ns();
    if (n3 < 0) {
        edhoc_session_wipe(&s_r);
        return hs_fail(c, &s_i, "initiator, message_3", n3);
    }

    bench_rec.side = SIDE_R;
    rc = edhoc_responder_handle_message_3(&s_r, c->m3, (size_t)n3, &c->rx_r, timed_resolve,
                                          (void *)ctx_r);
    if (!rc)
        rc = edhoc_session_oscore(&s_r, &p_r);
    uint64_t t4 = tools_now_ns();
    if (rc) {
        edhoc_session_wipe(&s_i);
        return hs_fail(c, &s_r, "responder, message_3", rc);
    }

    t->i_ns = (t1 - t0) + (t3 - t2);
    t->r_ns = (t2 - t1) + (t4 - t3);
    t->total_ns = t4 - t0;
    t->lookup_ns = lookup_ns;
    c->bytes = (size_t)n1 + (size_t)n2 + (size_t)n3;
    bool same = p_i.master_secret_len == p_r.master_secret_len &&
                edhoc_ct_equal(p_i.master_secret, p_r.master_secret, p_i.master_secret_len);
    edhoc_session_wipe(&s_i);
    edhoc_session_wipe(&s_r);
    edhoc_wipe(&p_i, sizeof p_i);
    edhoc_wipe(&p_r, sizeof p_r);
    if (!same) {
        snprintf(c->error, sizeof c->error, "the two sides derived different OSCORE secrets");
        return -1;
    }
    return 0;
}

/* Both sides from the caller (built-in demo credentials for the method /
 * suite / ID_CRED type, each with exactly the peer's credential
 * configured: the usual provisioned deployment). */
static int hs_setup(struct hs_config *c, char *error, size_t cap)
{
    return c->maker->open(c->maker->ctx, c->method, c->suite, c->id_cred_type, &c->sides, error,
                          cap);
}

static void hs_close(struct hs_config *c)
{
    if (c->sides.cfg_i)
        c->maker->close(c->maker->ctx, &c->sides);
    memset(&c->sides, 0, sizeof c->sides);
}

static const struct bench_column hs_cols[] = {
    {"method", "Method", BENCH_COL_INT, false},
    {"id_cred", "ID_CRED", BENCH_COL_TEXT, false},
    {"suite", "Suite", BENCH_COL_INT, false},
    {"implementation", "Implementation", BENCH_COL_TEXT, false},
    {"vs_openssl", "Total / OpenSSL's", BENCH_COL_RATIO, false},
    {"initiator_us", "Initiator", BENCH_COL_NUM, false},
    {"initiator_floor_us", "Initiator floor", BENCH_COL_NUM, false},
    {"responder_us", "Responder", BENCH_COL_NUM, false},
    {"responder_floor_us", "Responder floor", BENCH_COL_NUM, false},
    {"total_us", "Total", BENCH_COL_NUM, false},
    {"floor_us", "Crypto floor", BENCH_COL_NUM, false},
    {"ratio", "Handshake / floor", BENCH_COL_RATIO, false},
    {"lookup_us", "Credential lookup", BENCH_COL_NUM, false},
    {"ratio_without_lookup", "Without lookup / floor", BENCH_COL_RATIO, false},
    {"crypto_calls", "Crypto calls", BENCH_COL_INT, false},
    {"bytes", "Bytes (m1+m2+m3)", BENCH_COL_INT, false},
    {"total", "Total (min / median)", BENCH_COL_STAT, true},
    {"floor", "Floor (min / median)", BENCH_COL_STAT, true},
    {"ratio_min", "Ratio of minima", BENCH_COL_RATIO, true},
    {"label", "Configuration", BENCH_COL_LABEL, true},
    /* The crypto calls of one handshake by kind (op_names). */
    {"calls_random", "Random", BENCH_COL_INT, true},
    {"calls_hash", "Hash", BENCH_COL_INT, true},
    {"calls_hkdf_extract", "HKDF-Extract", BENCH_COL_INT, true},
    {"calls_hkdf_expand", "HKDF-Expand", BENCH_COL_INT, true},
    {"calls_aead_encrypt", "AEAD encrypt", BENCH_COL_INT, true},
    {"calls_aead_decrypt", "AEAD decrypt", BENCH_COL_INT, true},
    {"calls_keygen", "Key generation", BENCH_COL_INT, true},
    {"calls_public_key", "Public key", BENCH_COL_INT, true},
    {"calls_ecdh", "ECDH", BENCH_COL_INT, true},
    {"calls_sign", "Sign", BENCH_COL_INT, true},
    {"calls_verify", "Verify", BENCH_COL_INT, true},
    {"samples", "Samples", BENCH_COL_INT, true},
};

#define N_HS_COLS (sizeof hs_cols / sizeof hs_cols[0])

static int col(const char *key)
{
    for (size_t i = 0; i < N_HS_COLS; i++)
        if (!strcmp(hs_cols[i].key, key))
            return (int)i;
    return -1;
}

static double median_of(double *v, long n)
{
    struct bench_stat st;
    bench_stat_from(v, n, 1, &st);
    return st.median_us;
}

/* Per-sample series: initiator, responder, total, initiator floor,
 * responder floor, floor, lookup, total without lookup. */
#define NV 8

/* Samples of one configuration: a handshake, then its floor, repeated. */
/* plain: the backend measured; openssl_total_us: the median total of the
 * same configuration with OpenSSL alone (measured first), 0 when this is
 * that row. */
static int hs_measure(struct bench_report *r, struct hs_config *c, struct bench_table *t,
                      const struct edhoc_crypto_ops *plain, double *openssl_total_us)
{
    const struct bench_effort *e = &r->effort;
    const struct edhoc_crypto_ops *recording = bench_recording_ops(plain);
    struct hs_times ht;
    char label[160];
    snprintf(label, sizeof label, "method %d, %s, suite %d, %s", c->method,
             c->maker->id_cred_name(c->id_cred_type), c->suite, plain->name);

    /* Warm-up, then the recorded handshake. */
    int rc = hs_run(c, plain, &ht);
    bench_recording_clear(&bench_rec);
    if (!rc)
        rc = hs_run(c, recording, &ht);
    if (!rc && bench_rec.failed)
        rc = -1;
    if (rc) {
        bench_report_error(r, "bench handshake: %s: %s", label,
                           c->error[0] ? c->error : "out of memory");
        bench_recording_clear(&bench_rec);
        return TOOLS_ERR_INTERNAL;
    }
    uint8_t *out = malloc(bench_rec.max_out + EDHOC_CRYPTO_MAX_PRIV + EDHOC_CRYPTO_MAX_PUB + 64);
    size_t cap = 256;
    double *v[NV];
    for (int k = 0; k < NV; k++)
        v[k] = malloc(cap * sizeof(double));
    bool oom = !out;
    for (int k = 0; k < NV; k++)
        oom = oom || !v[k];
    if (oom || bench_replay(&bench_rec, SIDE_I, out) || bench_replay(&bench_rec, SIDE_R, out)) {
        bench_report_error(r, "bench handshake: %s: %s", label,
                           oom ? "out of memory" : "replaying the crypto calls gave other results");
        rc = TOOLS_ERR_INTERNAL;
        goto out;
    }

    long n = 0;
    uint64_t start = tools_now_ns();
    while (bench_effort_more(e, n, (double)(tools_now_ns() - start) / 1e9)) {
        if ((size_t)n == cap) {
            cap *= 2;
            for (int k = 0; k < NV; k++) {
                double *bigger = realloc(v[k], cap * sizeof(double));
                if (!bigger) {
                    rc = TOOLS_ERR_INTERNAL;
                    goto out;
                }
                v[k] = bigger;
            }
        }
        if (hs_run(c, plain, &ht)) {
            bench_report_error(r, "bench handshake: %s: %s", label, c->error);
            rc = TOOLS_ERR_INTERNAL;
            goto out;
        }
        uint64_t a = tools_now_ns();
        int r1 = bench_replay(&bench_rec, SIDE_I, out);
        uint64_t b = tools_now_ns();
        int r2 = bench_replay(&bench_rec, SIDE_R, out);
        uint64_t d = tools_now_ns();
        if (r1 || r2) {
            bench_report_error(r, "bench handshake: %s: replay failed", label);
            rc = TOOLS_ERR_INTERNAL;
            goto out;
        }
        v[0][n] = (double)ht.i_ns / 1000.0;
        v[1][n] = (double)ht.r_ns / 1000.0;
        v[2][n] = (double)ht.total_ns / 1000.0;
        v[3][n] = bench_us(a, b);
        v[4][n] = bench_us(b, d);
        v[5][n] = bench_us(a, d);
        v[6][n] = (double)ht.lookup_ns / 1000.0;
        v[7][n] = (double)(ht.total_ns - ht.lookup_ns) / 1000.0;
        n++;
    }

    /* Each column is its own median: on a shared host one slow step would
     * otherwise decide a whole row's split between the roles. */
    double i_us = median_of(v[0], n), r_us = median_of(v[1], n);
    double fi_us = median_of(v[3], n), fr_us = median_of(v[4], n);
    struct bench_stat total, floor;
    bench_stat_from(v[2], n, 1, &total);
    bench_stat_from(v[5], n, 1, &floor);
    if (e->interrupted && e->interrupted()) {
        rc = 0; /* a configuration measured in part is left out */
        goto out;
    }
    struct bench_cell *row = bench_table_add_row(t);
    if (!row) {
        rc = TOOLS_ERR_INTERNAL;
        goto out;
    }
    unsigned counts[OP_KINDS] = {0};
    for (size_t i = 0; i < bench_rec.n; i++)
        counts[bench_rec.ops[i].kind]++;

    bench_row_num(t, row, "method", c->method);
    bench_row_text(t, row, "id_cred", c->maker->id_cred_name(c->id_cred_type));
    bench_row_num(t, row, "suite", c->suite);
    bench_row_text(t, row, "implementation", plain->name);
    if (*openssl_total_us <= 0)
        *openssl_total_us = total.median_us;
    bench_row_num(t, row, "vs_openssl", total.median_us / *openssl_total_us);
    bench_row_num(t, row, "initiator_us", i_us);
    bench_row_num(t, row, "responder_us", r_us);
    bench_row_num(t, row, "total_us", total.median_us);
    bench_row_num(t, row, "initiator_floor_us", fi_us);
    bench_row_num(t, row, "responder_floor_us", fr_us);
    bench_row_num(t, row, "floor_us", floor.median_us);
    bench_row_num(t, row, "ratio", total.median_us / floor.median_us);
    bench_row_num(t, row, "ratio_min", total.min_us / floor.min_us);
    bench_row_num(t, row, "lookup_us", median_of(v[6], n));
    bench_row_num(t, row, "ratio_without_lookup", median_of(v[7], n) / floor.median_us);
    bench_row_num(t, row, "crypto_calls", (double)bench_rec.n);
    bench_row_num(t, row, "bytes", (double)c->bytes);
    bench_row_stat(t, row, "total", &total);
    bench_row_stat(t, row, "floor", &floor);
    bench_row_text(t, row, "label", label);
    for (int k = 0; k < OP_KINDS; k++) {
        char key[40];
        snprintf(key, sizeof key, "calls_%s", bench_op_names[k]);
        bench_row_num(t, row, key, counts[k]);
    }
    bench_row_num(t, row, "samples", (double)n);
    rc = 0;
out:
    for (int k = 0; k < NV; k++)
        free(v[k]);
    free(out);
    bench_recording_clear(&bench_rec);
    return rc;
}

int bench_handshake_floor(const struct bench_effort *e, const struct bench_side_maker *maker,
                          int method, int suite, int id_cred_type, double *initiator_us,
                          double *responder_us, char *error, size_t error_cap)
{
    struct hs_config *c = calloc(1, sizeof *c);
    if (!c)
        return TOOLS_ERR_INTERNAL;
    c->method = method;
    c->id_cred_type = id_cred_type;
    c->suite = suite;
    c->maker = maker;
    struct hs_times ht;
    int rc = hs_setup(c, error, error_cap);
    if (!rc) {
        bench_recording_clear(&bench_rec);
        rc = hs_run(c, bench_recording_ops(edhoc_crypto_default()), &ht);
        if (!rc && bench_rec.failed)
            rc = -1;
        if (rc)
            snprintf(error, error_cap, "crypto floor of method %d suite %d: %s", method, suite,
                     c->error[0] ? c->error : "out of memory");
    }
    uint8_t *out =
        rc ? NULL : malloc(bench_rec.max_out + EDHOC_CRYPTO_MAX_PRIV + EDHOC_CRYPTO_MAX_PUB + 64);
    size_t cap = 256;
    long n = 0;
    double *vi = malloc(cap * sizeof *vi), *vr = malloc(cap * sizeof *vr);
    if (!rc && (!out || !vi || !vr))
        rc = TOOLS_ERR_INTERNAL;
    if (!rc && (bench_replay(&bench_rec, SIDE_I, out) || bench_replay(&bench_rec, SIDE_R, out)))
        rc = TOOLS_ERR_INTERNAL; /* warm-up, and a check that the replay matches */
    uint64_t start = tools_now_ns();
    while (!rc && bench_effort_more(e, n, (double)(tools_now_ns() - start) / 1e9)) {
        if ((size_t)n == cap) {
            cap *= 2;
            double *bi = realloc(vi, cap * sizeof *vi);
            if (bi)
                vi = bi;
            double *br = bi ? realloc(vr, cap * sizeof *vr) : NULL;
            if (br)
                vr = br;
            if (!bi || !br) {
                rc = TOOLS_ERR_INTERNAL;
                break;
            }
        }
        uint64_t a = tools_now_ns();
        int r1 = bench_replay(&bench_rec, SIDE_I, out);
        uint64_t b = tools_now_ns();
        int r2 = bench_replay(&bench_rec, SIDE_R, out);
        uint64_t d = tools_now_ns();
        if (r1 || r2)
            rc = TOOLS_ERR_INTERNAL;
        vi[n] = bench_us(a, b);
        vr[n] = bench_us(b, d);
        n++;
    }
    if (!rc && n > 0) {
        *initiator_us = median_of(vi, n);
        *responder_us = median_of(vr, n);
    }
    free(vi);
    free(vr);
    free(out);
    bench_recording_clear(&bench_rec);
    hs_close(c);
    edhoc_wipe(c, sizeof *c);
    free(c);
    return rc ? TOOLS_ERR_INTERNAL : 0;
}

static const struct bench_column mem_cols[] = {
    {"object", "State", BENCH_COL_TEXT, false},
    {"bytes", "Bytes", BENCH_COL_INT, false},
    {"heap", "Heap it owns", BENCH_COL_INT, false},
    {"per", "One per", BENCH_COL_TEXT, false},
};

static int add_memory_table(struct bench_report *r)
{
    struct bench_table *t = bench_table_new("memory", "Memory per handshake and per context",
                                            mem_cols, sizeof mem_cols / sizeof mem_cols[0]);
    if (!t || !bench_report_add(r, t))
        return TOOLS_ERR_INTERNAL;
    snprintf(t->note, sizeof t->note,
             "sizeof of the caller-allocated structures (this build); none of them owns heap "
             "memory. One per: pending_handshake, received_message (a message being processed), "
             "oscore_context (established), pending_request (a request awaiting its response), "
             "endpoint, credential. A session points to its endpoint's shared struct "
             "edhoc_config and credentials; struct edhoc_received only lives while a message is "
             "processed and can be shared by all sessions of a thread.");
    static const struct {
        const char *name;
        size_t size;
        const char *per;
    } objs[] = {
        {"struct edhoc_session", sizeof(struct edhoc_session), "pending_handshake"},
        {"struct edhoc_received", sizeof(struct edhoc_received), "received_message"},
        {"struct oscore_context", sizeof(struct oscore_context), "oscore_context"},
        {"struct oscore_binding", sizeof(struct oscore_binding), "pending_request"},
        {"struct edhoc_config", sizeof(struct edhoc_config), "endpoint"},
        {"struct edhoc_cred", sizeof(struct edhoc_cred), "credential"},
    };
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
        struct bench_cell *row = bench_table_add_row(t);
        if (!row)
            return TOOLS_ERR_INTERNAL;
        bench_row_text(t, row, "object", objs[i].name);
        bench_row_num(t, row, "bytes", (double)objs[i].size);
        bench_row_num(t, row, "heap", 0);
        bench_row_text(t, row, "per", objs[i].per);
    }
    bench_report_target(r, "session_bytes", "State per pending handshake (struct edhoc_session)",
                        (double)sizeof(struct edhoc_session), 1024, "bytes");
    bench_report_target(r, "oscore_context_bytes",
                        "State per established OSCORE context (struct oscore_context)",
                        (double)sizeof(struct oscore_context), 256, "bytes");
    return 0;
}

int bench_handshake_run(struct bench_report *r, const struct bench_handshake_opts *o,
                        const struct bench_side_maker *maker)
{
    static const int default_suites[] = {0, 2};
    const int *suites = o->n_suites ? o->suites : default_suites;
    size_t n_suites = o->n_suites ? o->n_suites : 2;
    static const struct {
        int method;
        int id_cred_type;
    } modes[] = {
        {0, EDHOC_ID_CRED_X5CHAIN},
        {0, EDHOC_ID_CRED_X5T},
        {3, EDHOC_ID_CRED_KID},
    };
    for (size_t i = 0; i < n_suites; i++) {
        if (!edhoc_suite_find(suites[i])) {
            bench_report_error(r, "bench handshake: cipher suite %d is not supported", suites[i]);
            return TOOLS_ERR_USAGE;
        }
    }

    struct bench_table *t =
        bench_table_new("handshake", "EDHOC handshake (in process)", hs_cols, N_HS_COLS);
    if (!t || !bench_report_add(r, t))
        return TOOLS_ERR_INTERNAL;
    snprintf(t->note, sizeof t->note,
             "Median microseconds per handshake: message_1 to message_3 and the OSCORE "
             "parameters on both sides, with built-in demo credentials, each side having the "
             "peer's credential configured. Crypto floor: the same crypto calls (same inputs) "
             "replayed alone on the backend, alternating with the handshakes. Each column "
             "is its own median, so initiator + responder is close to, not exactly, the total. "
             "One row per crypto backend; Total / OpenSSL's compares with the OpenSSL row.");
    t->chart.kind = BENCH_CHART_BARS;
    t->chart.label_cols[0] = col("label");
    t->chart.label_cols[1] = -1;
    t->chart.label_cols[2] = -1;
    t->chart.y_cols[0] = col("total_us");
    t->chart.y_cols[1] = col("floor_us");
    t->chart.n_y = 2;
    t->chart.y_title = "microseconds per handshake (median)";

    int rc = 0;
    for (size_t m = 0; m < sizeof modes / sizeof modes[0] && !rc; m++) {
        for (size_t s = 0; s < n_suites && !rc && !bench_interrupted(&r->effort); s++) {
            bench_progress(r, "handshake: method %d, %s, suite %d", modes[m].method,
                           maker->id_cred_name(modes[m].id_cred_type), suites[s]);
            struct hs_config *c = calloc(1, sizeof *c);
            if (!c)
                return TOOLS_ERR_INTERNAL;
            c->method = modes[m].method;
            c->id_cred_type = modes[m].id_cred_type;
            c->suite = suites[s];
            c->maker = maker;
            rc = hs_setup(c, r->error, sizeof r->error);
            /* Every backend on the same configuration, OpenSSL first: the
             * others' totals are compared with its. */
            double openssl_total_us = 0;
            for (size_t b = 0; b < N_BACKENDS && !rc && !bench_interrupted(&r->effort); b++)
                rc = hs_measure(r, c, t, backends[b](), &openssl_total_us);
            hs_close(c);
            edhoc_wipe(c, sizeof *c);
            free(c);
        }
    }
    if (rc)
        return rc;

    /* The targets: with OpenSSL, handshake over floor for method 3 suite 0
     * and method 0 suite 2; the composite against OpenSSL alone for suite 0
     * (issue #18: method 0 at most 0.75, method 3 at most 0.95). */
    const char *openssl_name = edhoc_crypto_openssl()->name;
    const char *auto_name = edhoc_crypto_auto()->name;
    for (size_t i = 0; i < t->n_rows; i++) {
        const struct bench_cell *row = &t->cells[i * t->n_cols];
        int method = (int)row[col("method")].num, suite = (int)row[col("suite")].num;
        const char *impl = row[col("implementation")].text;
        const char *id_cred = row[col("id_cred")].text;
        char name[200], id[80];
        if (!strcmp(impl, openssl_name) &&
            ((method == 3 && suite == 0) || (method == 0 && suite == 2))) {
            snprintf(name, sizeof name, "Handshake / crypto floor, method %d, %s, suite %d", method,
                     id_cred, suite);
            snprintf(id, sizeof id, "handshake_over_floor.m%d.%s.s%d", method, id_cred, suite);
            bench_report_target(r, id, name, row[col("ratio")].num, 1.15, "");
        }
        if (!strcmp(impl, auto_name) && suite == 0 && (method == 0 || method == 3)) {
            snprintf(name, sizeof name,
                     "Handshake with auto / with OpenSSL alone, method %d, %s, "
                     "suite 0",
                     method, id_cred);
            snprintf(id, sizeof id, "auto_over_openssl.m%d.%s.s0", method, id_cred);
            bench_report_target(r, id, name, row[col("vs_openssl")].num, method == 0 ? 0.75 : 0.95,
                                "");
        }
    }
    return add_memory_table(r);
}
