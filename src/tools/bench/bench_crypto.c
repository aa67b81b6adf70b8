/*
 * bench crypto: the operations of the crypto ops table one by
 * one - signatures by message size, key generation and ECDH per curve,
 * AEADs by size, hashes and HKDF - each under every backend in turn
 * (OpenSSL, libsodium, the composite `auto`), one row per backend, so the
 * libraries compare side by side in one run on one host. The composite's
 * choices (src/crypto/crypto_select.c) come from these figures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/crypto.h"
#include "bench_report.h"

#define MAX_MSG 1024

/* The backends measured, in the order of their rows. */
static const struct edhoc_crypto_ops *(*const backends[])(void) = {
    edhoc_crypto_openssl, edhoc_crypto_sodium, edhoc_crypto_auto};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

/* Backend b for op on alg, or NULL when its row would repeat OpenSSL's:
 * the libsodium backend hands what libsodium lacks to OpenSSL. */
static const struct edhoc_crypto_ops *backend_for(size_t b, enum edhoc_crypto_op op, int alg)
{
    if (backends[b] == edhoc_crypto_sodium && !edhoc_crypto_sodium_implements(op, alg))
        return NULL;
    return backends[b]();
}

struct crypto_job {
    const struct edhoc_crypto_ops *ops;
    int alg; /* curve or COSE algorithm */
    size_t len;
    uint8_t msg[MAX_MSG];
    uint8_t out[MAX_MSG + EDHOC_CRYPTO_MAX_TAG];
    uint8_t ct[MAX_MSG + EDHOC_CRYPTO_MAX_TAG];
    uint8_t priv[EDHOC_CRYPTO_MAX_PRIV];
    uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
    size_t pub_len;
    uint8_t peer_pub[EDHOC_CRYPTO_MAX_PUB];
    size_t peer_pub_len;
    uint8_t sig[EDHOC_CRYPTO_MAX_SIG];
    uint8_t key[EDHOC_CRYPTO_MAX_KEY];
    uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE];
    uint8_t aad[16];
    uint8_t prk[EDHOC_CRYPTO_MAX_HASH];
};

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(seed + i * 131u);
}

static int do_sign(void *ctx)
{
    struct crypto_job *j = ctx;
    return j->ops->sign(j->alg, j->priv, j->msg, j->len, j->sig);
}

static int do_verify(void *ctx)
{
    struct crypto_job *j = ctx;
    return j->ops->verify(j->alg, j->pub, j->pub_len, j->msg, j->len, j->sig,
                          edhoc_crypto_sig_len(j->alg));
}

static int do_keygen(void *ctx)
{
    struct crypto_job *j = ctx;
    size_t len;
    uint8_t priv[EDHOC_CRYPTO_MAX_PRIV], pub[EDHOC_CRYPTO_MAX_PUB];
    int rc = edhoc_crypto_keygen(j->ops, j->alg, true, priv, pub, &len);
    edhoc_wipe(priv, sizeof priv);
    return rc;
}

static int do_ecdh(void *ctx)
{
    struct crypto_job *j = ctx;
    return j->ops->ecdh(j->alg, j->priv, j->peer_pub, j->peer_pub_len, j->out);
}

static int do_encrypt(void *ctx)
{
    struct crypto_job *j = ctx;
    return j->ops->aead_encrypt(j->alg, j->key, j->nonce, j->aad, sizeof j->aad, j->msg, j->len,
                                j->out);
}

static int do_decrypt(void *ctx)
{
    struct crypto_job *j = ctx;
    return j->ops->aead_decrypt(j->alg, j->key, j->nonce, j->aad, sizeof j->aad, j->ct,
                                j->len + edhoc_crypto_aead_tag_len(j->alg), j->out);
}

static int do_hash(void *ctx)
{
    struct crypto_job *j = ctx;
    return j->ops->hash(j->alg, j->msg, j->len, j->out);
}

static int do_extract(void *ctx)
{
    struct crypto_job *j = ctx;
    /* As EDHOC does: a hash-length salt (TH_2) and an ECDH secret. */
    return j->ops->hkdf_extract(
        j->alg, j->key, edhoc_crypto_hash_len(j->alg) > 32 ? 32 : edhoc_crypto_hash_len(j->alg),
        j->msg, 32, j->out);
}

static int do_expand(void *ctx)
{
    struct crypto_job *j = ctx;
    return j->ops->hkdf_expand(j->alg, j->prk, edhoc_crypto_hash_len(j->alg), j->msg, 40, j->out,
                               32);
}

static const struct bench_column sig_cols[] = {
    {"algo", "Algo", BENCH_COL_TEXT, false},
    {"implementation", "Implementation", BENCH_COL_TEXT, false},
    {"message_size", "Message size", BENCH_COL_INT, false},
    {"sign", "Signing", BENCH_COL_STAT, false},
    {"verify", "Verifying", BENCH_COL_STAT, false},
};

static const struct bench_column dh_cols[] = {
    {"curve", "Curve", BENCH_COL_TEXT, false},
    {"implementation", "Implementation", BENCH_COL_TEXT, false},
    {"keygen", "Key generation", BENCH_COL_STAT, false},
    {"ecdh", "ECDH", BENCH_COL_STAT, false},
};

static const struct bench_column aead_cols[] = {
    {"aead", "AEAD", BENCH_COL_TEXT, false},
    {"implementation", "Implementation", BENCH_COL_TEXT, false},
    {"message_size", "Message size", BENCH_COL_INT, false},
    {"encrypt", "Encrypt", BENCH_COL_STAT, false},
    {"decrypt", "Decrypt", BENCH_COL_STAT, false},
};

static const struct bench_column kdf_cols[] = {
    {"hash", "Hash", BENCH_COL_TEXT, false},
    {"implementation", "Implementation", BENCH_COL_TEXT, false},
    {"hash_128", "Hash of 128 bytes", BENCH_COL_STAT, false},
    {"extract", "HKDF-Extract", BENCH_COL_STAT, false},
    {"expand", "HKDF-Expand (32 bytes)", BENCH_COL_STAT, false},
};

#define N_COLS(a) (sizeof(a) / sizeof((a)[0]))

static int col_of(const struct bench_table *t, const char *key)
{
    for (size_t i = 0; i < t->n_cols; i++)
        if (!strcmp(t->cols[i].key, key))
            return (int)i;
    return -1;
}

/* Lines over the message size (log scale), one colour per algorithm, a
 * dash per operation (their medians). */
static void chart_lines(struct bench_table *t, const char *group, const char *y1, const char *y2)
{
    t->chart.kind = BENCH_CHART_LINES;
    t->chart.x_col = col_of(t, "message_size");
    t->chart.group_col = col_of(t, group);
    t->chart.group_col2_plus1 = col_of(t, "implementation") + 1;
    t->chart.y_cols[0] = col_of(t, y1);
    t->chart.y_cols[1] = col_of(t, y2);
    t->chart.n_y = 2;
    t->chart.y_title = "microseconds per call (median)";
}

/* One group of bars per row (labelled by its first column), one bar per
 * operation. */
static void chart_bars(struct bench_table *t, const char *const *ys, size_t n)
{
    t->chart.kind = BENCH_CHART_BARS;
    t->chart.label_cols[0] = 0;
    t->chart.label_cols[1] = -1;
    t->chart.label_cols[2] = -1;
    for (size_t i = 0; i < n && i < BENCH_CHART_MAX_Y; i++)
        t->chart.y_cols[i] = col_of(t, ys[i]);
    t->chart.n_y = n;
    t->chart.y_title = "microseconds per call (median)";
}

static int failed(struct bench_report *r, const char *what, int alg, int rc)
{
    bench_report_error(r, "bench crypto: %s (%s / %d) failed: %d", what,
                       edhoc_crypto_curve_name(alg), alg, rc);
    return TOOLS_ERR_INTERNAL;
}

static int bench_signatures(struct bench_report *r, struct crypto_job *j)
{
    static const int curves[] = {EDHOC_COSE_CRV_ED25519, EDHOC_COSE_CRV_ED448, EDHOC_COSE_CRV_P256,
                                 EDHOC_COSE_CRV_P384};
    static const char *const names[] = {"Ed25519", "Ed448", "ES256", "ES384"};
    static const size_t sizes[] = {16, 32, 128, 1024};
    struct bench_table *t = bench_table_new("signatures", "Signatures", sig_cols, N_COLS(sig_cols));
    if (!t || !bench_report_add(r, t))
        return TOOLS_ERR_INTERNAL;
    snprintf(t->note, sizeof t->note,
             "Microseconds per call, min / median. ES256/ES384 take COSE r||s signatures and "
             "hash the message inside the call; EdDSA is pure (no prehash).");
    chart_lines(t, "algo", "sign", "verify");
    for (size_t c = 0; c < N_COLS(curves) && !bench_interrupted(&r->effort); c++) {
        j->alg = curves[c];
        for (size_t s = 0; s < N_COLS(sizes); s++)
            for (size_t b = 0; b < N_BACKENDS; b++) {
                j->ops = backend_for(b, EDHOC_CRYPTO_OP_SIGN, curves[c]);
                if (!j->ops)
                    continue;
                int rc = j->ops->keygen(j->alg, false, j->priv, j->pub, &j->pub_len);
                if (rc)
                    return failed(r, "keygen", j->alg, rc);
                bench_progress(r, "crypto: %s, %zu bytes", names[c], sizes[s]);
                j->len = sizes[s];
                fill(j->msg, j->len, (uint8_t)s);
                struct bench_stat st_sign, st_verify;
                rc = bench_measure(&r->effort, do_sign, j, &st_sign);
                if (rc)
                    return failed(r, "sign", j->alg, rc);
                rc = bench_measure(&r->effort, do_verify, j, &st_verify);
                if (rc)
                    return failed(r, "verify", j->alg, rc);
                if (bench_interrupted(&r->effort))
                    return 0; /* a row measured in part is left out */
                struct bench_cell *row = bench_table_add_row(t);
                if (!row)
                    return TOOLS_ERR_INTERNAL;
                bench_row_text(t, row, "algo", names[c]);
                bench_row_text(t, row, "implementation", j->ops->name);
                bench_row_num(t, row, "message_size", (double)j->len);
                bench_row_stat(t, row, "sign", &st_sign);
                bench_row_stat(t, row, "verify", &st_verify);
            }
    }
    return 0;
}

static int bench_ecdh(struct bench_report *r, struct crypto_job *j)
{
    static const int curves[] = {EDHOC_COSE_CRV_X25519, EDHOC_COSE_CRV_X448, EDHOC_COSE_CRV_P256,
                                 EDHOC_COSE_CRV_P384};
    struct bench_table *t =
        bench_table_new("ecdh", "Key generation and ECDH", dh_cols, N_COLS(dh_cols));
    if (!t || !bench_report_add(r, t))
        return TOOLS_ERR_INTERNAL;
    snprintf(t->note, sizeof t->note,
             "Microseconds per call, min / median. Key generation as the EDHOC core makes "
             "ephemeral keys (random scalar, then the public key); P-256/P-384 public keys "
             "in EDHOC's x-coordinate form, so ECDH includes the point decompression and the "
             "on-curve check.");
    static const char *const ys[] = {"keygen", "ecdh"};
    chart_bars(t, ys, 2);
    for (size_t c = 0; c < N_COLS(curves) && !bench_interrupted(&r->effort); c++)
        for (size_t b = 0; b < N_BACKENDS; b++) {
            j->ops = backend_for(b, EDHOC_CRYPTO_OP_ECDH, curves[c]);
            if (!j->ops)
                continue;
            j->alg = curves[c];
            bench_progress(r, "crypto: %s", edhoc_crypto_curve_name(j->alg));
            int rc = edhoc_crypto_keygen(j->ops, j->alg, true, j->priv, j->pub, &j->pub_len);
            uint8_t other[EDHOC_CRYPTO_MAX_PRIV];
            if (!rc)
                rc =
                    edhoc_crypto_keygen(j->ops, j->alg, true, other, j->peer_pub, &j->peer_pub_len);
            edhoc_wipe(other, sizeof other);
            if (rc)
                return failed(r, "keygen", j->alg, rc);
            struct bench_stat st_gen, st_dh;
            rc = bench_measure(&r->effort, do_keygen, j, &st_gen);
            if (rc)
                return failed(r, "keygen", j->alg, rc);
            rc = bench_measure(&r->effort, do_ecdh, j, &st_dh);
            if (rc)
                return failed(r, "ecdh", j->alg, rc);
            if (bench_interrupted(&r->effort))
                return 0;
            struct bench_cell *row = bench_table_add_row(t);
            if (!row)
                return TOOLS_ERR_INTERNAL;
            bench_row_text(t, row, "curve", edhoc_crypto_curve_name(j->alg));
            bench_row_text(t, row, "implementation", j->ops->name);
            bench_row_stat(t, row, "keygen", &st_gen);
            bench_row_stat(t, row, "ecdh", &st_dh);
        }
    return 0;
}

static int bench_aeads(struct bench_report *r, struct crypto_job *j)
{
    static const int algs[] = {EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_AES_CCM_16_128_128,
                               EDHOC_COSE_A128GCM, EDHOC_COSE_A256GCM,
                               EDHOC_COSE_CHACHA20_POLY1305};
    static const size_t sizes[] = {16, 32, 128, 256, 1024};
    struct bench_table *t = bench_table_new("aead", "AEAD", aead_cols, N_COLS(aead_cols));
    if (!t || !bench_report_add(r, t))
        return TOOLS_ERR_INTERNAL;
    snprintf(t->note, sizeof t->note,
             "Microseconds per call, min / median, with 16 bytes of additional data; decrypt "
             "includes the tag check.");
    chart_lines(t, "aead", "encrypt", "decrypt");
    fill(j->key, sizeof j->key, 7);
    fill(j->nonce, sizeof j->nonce, 9);
    fill(j->aad, sizeof j->aad, 11);
    for (size_t a = 0; a < N_COLS(algs) && !bench_interrupted(&r->effort); a++) {
        j->alg = algs[a];
        for (size_t s = 0; s < N_COLS(sizes); s++)
            for (size_t b = 0; b < N_BACKENDS; b++) {
                j->ops = backend_for(b, EDHOC_CRYPTO_OP_AEAD, algs[a]);
                if (!j->ops)
                    continue;
                bench_progress(r, "crypto: %s, %zu bytes", edhoc_crypto_alg_name(j->alg), sizes[s]);
                j->len = sizes[s];
                fill(j->msg, j->len, (uint8_t)s);
                int rc = j->ops->aead_encrypt(j->alg, j->key, j->nonce, j->aad, sizeof j->aad,
                                              j->msg, j->len, j->ct);
                if (rc)
                    return failed(r, "aead_encrypt", j->alg, rc);
                struct bench_stat st_enc, st_dec;
                rc = bench_measure(&r->effort, do_encrypt, j, &st_enc);
                if (rc)
                    return failed(r, "aead_encrypt", j->alg, rc);
                rc = bench_measure(&r->effort, do_decrypt, j, &st_dec);
                if (rc)
                    return failed(r, "aead_decrypt", j->alg, rc);
                if (bench_interrupted(&r->effort))
                    return 0;
                struct bench_cell *row = bench_table_add_row(t);
                if (!row)
                    return TOOLS_ERR_INTERNAL;
                bench_row_text(t, row, "aead", edhoc_crypto_alg_name(j->alg));
                bench_row_text(t, row, "implementation", j->ops->name);
                bench_row_num(t, row, "message_size", (double)j->len);
                bench_row_stat(t, row, "encrypt", &st_enc);
                bench_row_stat(t, row, "decrypt", &st_dec);
            }
    }
    return 0;
}

static int bench_kdfs(struct bench_report *r, struct crypto_job *j)
{
    static const int algs[] = {EDHOC_COSE_SHA256, EDHOC_COSE_SHA384, EDHOC_COSE_SHAKE256};
    static const char *const names[] = {"SHA-256", "SHA-384", "SHAKE256"};
    struct bench_table *t = bench_table_new("hkdf", "Hash and HKDF", kdf_cols, N_COLS(kdf_cols));
    if (!t || !bench_report_add(r, t))
        return TOOLS_ERR_INTERNAL;
    snprintf(t->note, sizeof t->note,
             "Microseconds per call, min / median. Extract: a 32-byte salt and a 32-byte secret; "
             "Expand: a hash-length PRK and 40 bytes of info into 32 bytes. For SHAKE256, "
             "EDHOC_Extract/Expand are KMAC256 (RFC 9528 Section 4.1.1).");
    static const char *const ys[] = {"hash_128", "extract", "expand"};
    chart_bars(t, ys, 3);
    fill(j->key, sizeof j->key, 3);
    fill(j->msg, 128, 5);
    for (size_t a = 0; a < N_COLS(algs) && !bench_interrupted(&r->effort); a++)
        for (size_t b = 0; b < N_BACKENDS; b++) {
            j->ops = backend_for(b, EDHOC_CRYPTO_OP_HKDF, algs[a]);
            if (!j->ops)
                continue;
            j->alg = algs[a];
            j->len = 128;
            bench_progress(r, "crypto: %s", names[a]);
            int rc = j->ops->hkdf_extract(j->alg, j->key, 32, j->msg, 32, j->prk);
            if (rc)
                return failed(r, "hkdf_extract", j->alg, rc);
            struct bench_stat st_hash, st_ext, st_exp;
            rc = bench_measure(&r->effort, do_hash, j, &st_hash);
            if (rc)
                return failed(r, "hash", j->alg, rc);
            rc = bench_measure(&r->effort, do_extract, j, &st_ext);
            if (rc)
                return failed(r, "hkdf_extract", j->alg, rc);
            rc = bench_measure(&r->effort, do_expand, j, &st_exp);
            if (rc)
                return failed(r, "hkdf_expand", j->alg, rc);
            if (bench_interrupted(&r->effort))
                return 0;
            struct bench_cell *row = bench_table_add_row(t);
            if (!row)
                return TOOLS_ERR_INTERNAL;
            bench_row_text(t, row, "hash", names[a]);
            bench_row_text(t, row, "implementation", j->ops->name);
            bench_row_stat(t, row, "hash_128", &st_hash);
            bench_row_stat(t, row, "extract", &st_ext);
            bench_row_stat(t, row, "expand", &st_exp);
        }
    return 0;
}

int bench_crypto_run(struct bench_report *r)
{
    struct crypto_job *j = calloc(1, sizeof *j);
    if (!j)
        return TOOLS_ERR_INTERNAL;
    j->ops = backends[0]();
    int rc = bench_signatures(r, j);
    if (!rc && !bench_interrupted(&r->effort))
        rc = bench_ecdh(r, j);
    if (!rc && !bench_interrupted(&r->effort))
        rc = bench_aeads(r, j);
    if (!rc && !bench_interrupted(&r->effort))
        rc = bench_kdfs(r, j);
    edhoc_wipe(j, sizeof *j);
    free(j);
    return rc;
}
