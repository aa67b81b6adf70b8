/*
 * bench oscore: protect and unprotect of a request and of its
 * response per AEAD and payload size, beside the raw AEAD time for the
 * same payload size.
 *
 * A sample is a batch of requests going the whole way: the client
 * protects them, the server unprotects them (each with a fresh sequence
 * number, so the replay window accepts every one), protects a response to
 * each, and the client unprotects those. Each phase is timed on its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/oscore.h"
#include "bench_report.h"

#define BATCH       16
#define MAX_PAYLOAD 1000
#define MSG_CAP     (MAX_PAYLOAD + 128)

struct oscore_job {
    struct oscore_context client, server;
    uint8_t request[MSG_CAP], response[MSG_CAP];
    size_t request_len, response_len;
    uint8_t prot_req[BATCH][MSG_CAP], prot_resp[BATCH][MSG_CAP];
    size_t prot_req_len[BATCH], prot_resp_len[BATCH];
    uint8_t inner[MSG_CAP];
    struct oscore_binding b_client[BATCH], b_server[BATCH];
    /* raw AEAD */
    const struct edhoc_crypto_ops *ops;
    int alg;
    size_t len;
    uint8_t key[EDHOC_CRYPTO_MAX_KEY], nonce[EDHOC_CRYPTO_MAX_NONCE], aad[16];
    uint8_t pt[MSG_CAP], ct[MSG_CAP], out[MSG_CAP];
};

/* The messages an OSCORE client and server typically exchange: a
 * confirmable POST to /bench with a Content-Format and the payload, and a
 * piggybacked 2.04 with a payload of the same size. */
static int build_messages(struct oscore_job *j, size_t payload_len)
{
    static const uint8_t token[4] = {0xa1, 0xb2, 0xc3, 0xd4};
    static const uint8_t path[] = "bench";
    uint8_t payload[MAX_PAYLOAD];
    for (size_t i = 0; i < payload_len; i++)
        payload[i] = (uint8_t)('a' + i % 26);
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_POST;
    m.mid = 0x1234;
    m.token_len = sizeof token;
    memcpy(m.token, token, sizeof token);
    uint8_t cf = 0; /* text/plain */
    if (edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, path, sizeof path - 1) ||
        edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, &cf, 0))
        return -1;
    m.payload = payload;
    m.payload_len = payload_len;
    long n = edhoc_coap_msg_encode(&m, j->request, sizeof j->request);
    if (n < 0)
        return (int)n;
    j->request_len = (size_t)n;

    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_ACK;
    m.code = COAP_CODE_CHANGED;
    m.mid = 0x1234;
    m.token_len = sizeof token;
    memcpy(m.token, token, sizeof token);
    if (edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, &cf, 0))
        return -1;
    m.payload = payload;
    m.payload_len = payload_len;
    n = edhoc_coap_msg_encode(&m, j->response, sizeof j->response);
    if (n < 0)
        return (int)n;
    j->response_len = (size_t)n;
    return 0;
}

/* Client and server contexts as EDHOC leaves them (one-byte IDs, 16-byte
 * master secret, 8-byte salt). */
static int make_contexts(struct oscore_job *j, int aead)
{
    static const uint8_t secret[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    static const uint8_t salt[8] = {0x9e, 0x7c, 0xa9, 0x22, 0x23, 0x78, 0x63, 0x40};
    static const uint8_t id_client = 0x0e, id_server = 0x18;
    int rc = oscore_context_init_edhoc(&j->client, j->ops, secret, sizeof secret, salt, sizeof salt,
                                       &id_server, 1, &id_client, 1, aead, EDHOC_COSE_SHA256);
    if (!rc)
        rc = oscore_context_init_edhoc(&j->server, j->ops, secret, sizeof secret, salt, sizeof salt,
                                       &id_client, 1, &id_server, 1, aead, EDHOC_COSE_SHA256);
    return rc;
}

/* One batch; times in nanoseconds per phase: protect request, unprotect
 * request, protect response, unprotect response, raw encrypt, raw
 * decrypt. */
#define PHASES 6
static long run_batch(struct oscore_job *j, uint64_t ns[PHASES])
{
    long rc;
    uint64_t t0 = tools_now_ns();
    for (int k = 0; k < BATCH; k++) {
        rc = oscore_protect_request(&j->client, j->request, j->request_len, j->prot_req[k], MSG_CAP,
                                    &j->b_client[k]);
        if (rc < 0)
            return rc;
        j->prot_req_len[k] = (size_t)rc;
    }
    uint64_t t1 = tools_now_ns();
    for (int k = 0; k < BATCH; k++) {
        rc = oscore_unprotect_request(&j->server, j->prot_req[k], j->prot_req_len[k], j->inner,
                                      MSG_CAP, &j->b_server[k]);
        if (rc < 0)
            return rc;
    }
    uint64_t t2 = tools_now_ns();
    for (int k = 0; k < BATCH; k++) {
        rc = oscore_protect_response(&j->server, &j->b_server[k], j->response, j->response_len,
                                     false, j->prot_resp[k], MSG_CAP);
        if (rc < 0)
            return rc;
        j->prot_resp_len[k] = (size_t)rc;
    }
    uint64_t t3 = tools_now_ns();
    for (int k = 0; k < BATCH; k++) {
        rc = oscore_unprotect_response(&j->client, &j->b_client[k], j->prot_resp[k],
                                       j->prot_resp_len[k], j->inner, MSG_CAP);
        if (rc < 0)
            return rc;
    }
    uint64_t t4 = tools_now_ns();
    /* The raw AEAD on the payload alone, in the same time window. */
    for (int k = 0; k < BATCH; k++) {
        rc = j->ops->aead_encrypt(j->alg, j->key, j->nonce, j->aad, sizeof j->aad, j->pt, j->len,
                                  j->out);
        if (rc)
            return OSCORE_ERR_CRYPTO;
    }
    uint64_t t5 = tools_now_ns();
    for (int k = 0; k < BATCH; k++) {
        rc = j->ops->aead_decrypt(j->alg, j->key, j->nonce, j->aad, sizeof j->aad, j->ct,
                                  j->len + edhoc_crypto_aead_tag_len(j->alg), j->out);
        if (rc)
            return OSCORE_ERR_CRYPTO;
    }
    uint64_t t6 = tools_now_ns();
    ns[4] = t5 - t4;
    ns[5] = t6 - t5;
    ns[0] = t1 - t0;
    ns[1] = t2 - t1;
    ns[2] = t3 - t2;
    ns[3] = t4 - t3;
    return 0;
}

static const struct bench_column os_cols[] = {
    {"aead", "AEAD", BENCH_COL_TEXT, false},
    {"payload", "Payload", BENCH_COL_INT, false},
    {"protect_request_us", "Protect request", BENCH_COL_NUM, false},
    {"unprotect_request_us", "Unprotect request", BENCH_COL_NUM, false},
    {"protect_response_us", "Protect response", BENCH_COL_NUM, false},
    {"unprotect_response_us", "Unprotect response", BENCH_COL_NUM, false},
    {"aead_encrypt_us", "AEAD encrypt", BENCH_COL_NUM, false},
    {"aead_decrypt_us", "AEAD decrypt", BENCH_COL_NUM, false},
    {"request_ratio", "Request / AEAD", BENCH_COL_RATIO, false},
    {"response_ratio", "Response / AEAD", BENCH_COL_RATIO, false},
    {"request_us", "Protect + unprotect request", BENCH_COL_NUM, true},
    {"response_us", "Protect + unprotect response", BENCH_COL_NUM, true},
    {"aead_us", "AEAD encrypt + decrypt", BENCH_COL_NUM, true},
    {"request_bytes", "Protected request bytes", BENCH_COL_INT, true},
    {"response_bytes", "Protected response bytes", BENCH_COL_INT, true},
    {"protect_request", "Protect request", BENCH_COL_STAT, true},
    {"unprotect_request", "Unprotect request", BENCH_COL_STAT, true},
    {"protect_response", "Protect response", BENCH_COL_STAT, true},
    {"unprotect_response", "Unprotect response", BENCH_COL_STAT, true},
    {"aead_encrypt", "AEAD encrypt", BENCH_COL_STAT, true},
    {"aead_decrypt", "AEAD decrypt", BENCH_COL_STAT, true},
};

#define N_OS_COLS (sizeof os_cols / sizeof os_cols[0])

static int col(const char *key)
{
    for (size_t i = 0; i < N_OS_COLS; i++)
        if (!strcmp(os_cols[i].key, key))
            return (int)i;
    return -1;
}

static int measure_one(const struct bench_effort *e, struct oscore_job *j, int aead, size_t payload,
                       struct bench_table *t, struct bench_report *r)
{
    static const char *const phase_keys[4] = {"protect_request", "unprotect_request",
                                              "protect_response", "unprotect_response"};
    const char *name = edhoc_crypto_alg_name(aead);
    if (make_contexts(j, aead) || build_messages(j, payload)) {
        bench_report_error(r, "bench oscore: %s: cannot set up the contexts", name);
        return TOOLS_ERR_INTERNAL;
    }
    /* Raw AEAD inputs: the payload alone, with an AAD the size OSCORE uses. */
    j->alg = aead;
    j->len = payload;
    if (j->ops->aead_encrypt(aead, j->key, j->nonce, j->aad, sizeof j->aad, j->pt, payload,
                             j->ct)) {
        bench_report_error(r, "bench oscore: raw %s failed", name);
        return TOOLS_ERR_INTERNAL;
    }
    uint64_t ns[PHASES];
    long rc = run_batch(j, ns); /* warm-up */
    size_t cap = 256;
    long n = 0;
    double *v[PHASES] = {NULL};
    for (int k = 0; k < PHASES && !rc; k++) {
        v[k] = malloc(cap * sizeof(double));
        if (!v[k])
            rc = -1;
    }
    uint64_t start = tools_now_ns();
    while (!rc && bench_effort_more(e, n, (double)(tools_now_ns() - start) / 1e9)) {
        if ((size_t)n == cap) {
            cap *= 2;
            for (int k = 0; k < PHASES && !rc; k++) {
                double *bigger = realloc(v[k], cap * sizeof(double));
                if (!bigger)
                    rc = -1;
                else
                    v[k] = bigger;
            }
            if (rc)
                break;
        }
        rc = run_batch(j, ns);
        if (rc)
            break;
        for (int k = 0; k < PHASES; k++)
            v[k][n] = (double)ns[k] / 1000.0 / BATCH;
        n++;
    }
    if (rc) {
        bench_report_error(r, "bench oscore: %s, %zu bytes: %s", name, payload,
                           oscore_strerror((int)rc));
        for (int k = 0; k < PHASES; k++)
            free(v[k]);
        return TOOLS_ERR_INTERNAL;
    }
    struct bench_stat st[PHASES];
    for (int k = 0; k < PHASES; k++) {
        bench_stat_from(v[k], n, BATCH, &st[k]);
        free(v[k]);
    }
    if (bench_interrupted(e))
        return 0; /* a row measured in part is left out */
    const struct bench_stat enc = st[4], dec = st[5];

    struct bench_cell *row = bench_table_add_row(t);
    if (!row)
        return TOOLS_ERR_INTERNAL;
    double req = st[0].median_us + st[1].median_us, resp = st[2].median_us + st[3].median_us;
    double raw = enc.median_us + dec.median_us;
    bench_row_text(t, row, "aead", name);
    bench_row_num(t, row, "payload", (double)payload);
    bench_row_num(t, row, "protect_request_us", st[0].median_us);
    bench_row_num(t, row, "unprotect_request_us", st[1].median_us);
    bench_row_num(t, row, "protect_response_us", st[2].median_us);
    bench_row_num(t, row, "unprotect_response_us", st[3].median_us);
    bench_row_num(t, row, "aead_encrypt_us", enc.median_us);
    bench_row_num(t, row, "aead_decrypt_us", dec.median_us);
    bench_row_num(t, row, "request_ratio", req / raw);
    bench_row_num(t, row, "response_ratio", resp / raw);
    bench_row_num(t, row, "request_us", req);
    bench_row_num(t, row, "response_us", resp);
    bench_row_num(t, row, "aead_us", raw);
    bench_row_num(t, row, "request_bytes", (double)j->prot_req_len[0]);
    bench_row_num(t, row, "response_bytes", (double)j->prot_resp_len[0]);
    for (int k = 0; k < 4; k++)
        bench_row_stat(t, row, phase_keys[k], &st[k]);
    bench_row_stat(t, row, "aead_encrypt", &enc);
    bench_row_stat(t, row, "aead_decrypt", &dec);

    if (payload == 100) {
        char target[160], id[64];
        snprintf(target, sizeof target,
                 "OSCORE protect + unprotect / raw AEAD, 100 bytes, %s, request", name);
        snprintf(id, sizeof id, "oscore_over_aead.alg%d.request", aead);
        bench_report_target(r, id, target, req / raw, 2.0, "");
        snprintf(target, sizeof target,
                 "OSCORE protect + unprotect / raw AEAD, 100 bytes, %s, response", name);
        snprintf(id, sizeof id, "oscore_over_aead.alg%d.response", aead);
        bench_report_target(r, id, target, resp / raw, 2.0, "");
    }
    return 0;
}

int bench_oscore_run(struct bench_report *r)
{
    static const int aeads[] = {EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_AES_CCM_16_128_128,
                                EDHOC_COSE_A128GCM, EDHOC_COSE_A256GCM,
                                EDHOC_COSE_CHACHA20_POLY1305};
    static const size_t payloads[] = {10, 20, 50, 100, 200, 500, 1000};
    struct bench_table *t =
        bench_table_new("oscore", "OSCORE protect and unprotect", os_cols, N_OS_COLS);
    if (!t || !bench_report_add(r, t))
        return TOOLS_ERR_INTERNAL;
    snprintf(t->note, sizeof t->note,
             "Median microseconds per message: a CON POST to /bench with Content-Format and the "
             "payload, answered by a piggybacked 2.04 with a payload of the same size (reusing "
             "the request's nonce); one-byte Sender/Recipient IDs, batches of %d. AEAD: the raw "
             "encrypt / decrypt of the payload alone (16 bytes of AAD), timed in the same batches. "
             "Ratio: (protect + "
             "unprotect) / (encrypt + decrypt).",
             BATCH);
    t->chart.kind = BENCH_CHART_LINES;
    t->chart.x_col = col("payload");
    t->chart.group_col = col("aead");
    t->chart.y_cols[0] = col("request_us");
    t->chart.y_cols[1] = col("aead_us");
    t->chart.n_y = 2;
    t->chart.y_title = "microseconds (median)";

    struct oscore_job *j = calloc(1, sizeof *j);
    if (!j)
        return TOOLS_ERR_INTERNAL;
    j->ops = edhoc_crypto_default();
    for (size_t i = 0; i < sizeof j->key; i++)
        j->key[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < sizeof j->pt; i++)
        j->pt[i] = (uint8_t)i;
    int rc = 0;
    for (size_t a = 0; a < sizeof aeads / sizeof aeads[0] && !rc; a++) {
        for (size_t p = 0;
             p < sizeof payloads / sizeof payloads[0] && !rc && !bench_interrupted(&r->effort);
             p++) {
            bench_progress(r, "oscore: %s, %zu bytes", edhoc_crypto_alg_name(aeads[a]),
                           payloads[p]);
            rc = measure_one(&r->effort, j, aeads[a], payloads[p], t, r);
        }
    }
    oscore_context_wipe(&j->client);
    oscore_context_wipe(&j->server);
    free(j);
    return rc;
}
