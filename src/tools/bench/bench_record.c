/*
 * bench handshake: recording every call one handshake makes through the
 * crypto ops table (with its inputs), and replaying exactly those calls
 * against the backend alone (the handshake's crypto floor).
 */
#include <stdlib.h>
#include <string.h>

#include "bench_record.h"

struct recording bench_rec;

const char *const bench_op_names[OP_KINDS] = {
    "random", "hash",       "hkdf_extract", "hkdf_expand", "aead_encrypt", "aead_decrypt",
    "keygen", "public_key", "ecdh",         "sign",        "verify",
};
static const struct edhoc_crypto_ops *backend;

void bench_recording_clear(struct recording *r)
{
    for (size_t i = 0; i < r->n; i++)
        for (int k = 0; k < OP_MAX_INPUTS; k++) {
            edhoc_wipe(r->ops[i].in[k], r->ops[i].in_len[k]);
            free(r->ops[i].in[k]);
        }
    free(r->ops);
    memset(r, 0, sizeof *r);
}

static struct recorded_op *record_op(enum op_kind kind, int alg, size_t out_len)
{
    if (bench_rec.n == bench_rec.cap) {
        size_t cap = bench_rec.cap ? bench_rec.cap * 2 : 64;
        struct recorded_op *bigger = realloc(bench_rec.ops, cap * sizeof *bigger);
        if (!bigger) {
            bench_rec.failed = true;
            return NULL;
        }
        bench_rec.ops = bigger;
        bench_rec.cap = cap;
    }
    struct recorded_op *op = &bench_rec.ops[bench_rec.n++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->side = bench_rec.side;
    op->alg = alg;
    op->out_len = out_len;
    if (out_len > bench_rec.max_out)
        bench_rec.max_out = out_len;
    return op;
}

static void record_input(struct recorded_op *op, int k, const uint8_t *p, size_t len)
{
    if (!op)
        return;
    op->in[k] = malloc(len ? len : 1);
    if (!op->in[k]) {
        bench_rec.failed = true;
        return;
    }
    if (len)
        memcpy(op->in[k], p, len);
    op->in_len[k] = len;
}

static int rec_random(void *ctx, uint8_t *out, size_t len)
{
    struct recorded_op *op = record_op(OP_RANDOM, 0, len);
    int rc = backend->random(ctx, out, len);
    if (op)
        op->rc = rc;
    return rc;
}

static int rec_hash(int alg, const uint8_t *m, size_t l, uint8_t *o)
{
    struct recorded_op *op = record_op(OP_HASH, alg, edhoc_crypto_hash_len(alg));
    record_input(op, 0, m, l);
    int rc = backend->hash(alg, m, l, o);
    if (op)
        op->rc = rc;
    return rc;
}

static int rec_extract(int alg, const uint8_t *s, size_t sl, const uint8_t *i, size_t il,
                       uint8_t *p)
{
    struct recorded_op *op = record_op(OP_EXTRACT, alg, edhoc_crypto_hash_len(alg));
    record_input(op, 0, s, sl);
    record_input(op, 1, i, il);
    int rc = backend->hkdf_extract(alg, s, sl, i, il, p);
    if (op)
        op->rc = rc;
    return rc;
}

static int rec_expand(int alg, const uint8_t *p, size_t pl, const uint8_t *i, size_t il, uint8_t *o,
                      size_t ol)
{
    struct recorded_op *op = record_op(OP_EXPAND, alg, ol);
    record_input(op, 0, p, pl);
    record_input(op, 1, i, il);
    int rc = backend->hkdf_expand(alg, p, pl, i, il, o, ol);
    if (op)
        op->rc = rc;
    return rc;
}

static int rec_encrypt(int alg, const uint8_t *k, const uint8_t *n, const uint8_t *a, size_t al,
                       const uint8_t *p, size_t pl, uint8_t *c)
{
    struct recorded_op *op = record_op(OP_ENCRYPT, alg, pl + edhoc_crypto_aead_tag_len(alg));
    record_input(op, 0, k, edhoc_crypto_aead_key_len(alg));
    record_input(op, 1, n, edhoc_crypto_aead_nonce_len(alg));
    record_input(op, 2, a, al);
    record_input(op, 3, p, pl);
    int rc = backend->aead_encrypt(alg, k, n, a, al, p, pl, c);
    if (op)
        op->rc = rc;
    return rc;
}

static int rec_decrypt(int alg, const uint8_t *k, const uint8_t *n, const uint8_t *a, size_t al,
                       const uint8_t *c, size_t cl, uint8_t *p)
{
    struct recorded_op *op = record_op(OP_DECRYPT, alg, cl);
    record_input(op, 0, k, edhoc_crypto_aead_key_len(alg));
    record_input(op, 1, n, edhoc_crypto_aead_nonce_len(alg));
    record_input(op, 2, a, al);
    record_input(op, 3, c, cl);
    int rc = backend->aead_decrypt(alg, k, n, a, al, c, cl, p);
    if (op)
        op->rc = rc;
    return rc;
}

static int rec_keygen(int crv, bool dh, uint8_t *priv, uint8_t *pub, size_t *pl)
{
    struct recorded_op *op = record_op(OP_KEYGEN, crv, EDHOC_CRYPTO_MAX_PUB);
    if (op)
        op->flag = dh;
    int rc = backend->keygen(crv, dh, priv, pub, pl);
    if (op)
        op->rc = rc;
    return rc;
}

static int rec_public(int crv, bool dh, const uint8_t *priv, uint8_t *pub, size_t *pl)
{
    struct recorded_op *op = record_op(OP_PUBLIC, crv, EDHOC_CRYPTO_MAX_PUB);
    if (op)
        op->flag = dh;
    record_input(op, 0, priv, edhoc_crypto_priv_len(crv));
    int rc = backend->public_key(crv, dh, priv, pub, pl);
    if (op)
        op->rc = rc;
    return rc;
}

static int rec_ecdh(int crv, const uint8_t *priv, const uint8_t *peer, size_t pl, uint8_t *sh)
{
    struct recorded_op *op = record_op(OP_ECDH, crv, edhoc_crypto_ecdh_secret_len(crv));
    record_input(op, 0, priv, edhoc_crypto_priv_len(crv));
    record_input(op, 1, peer, pl);
    int rc = backend->ecdh(crv, priv, peer, pl, sh);
    if (op)
        op->rc = rc;
    return rc;
}

static int rec_sign(int crv, const uint8_t *priv, const uint8_t *m, size_t ml, uint8_t *sig)
{
    struct recorded_op *op = record_op(OP_SIGN, crv, edhoc_crypto_sig_len(crv));
    record_input(op, 0, priv, edhoc_crypto_priv_len(crv));
    record_input(op, 1, m, ml);
    int rc = backend->sign(crv, priv, m, ml, sig);
    if (op)
        op->rc = rc;
    return rc;
}

static int rec_verify(int crv, const uint8_t *pub, size_t pl, const uint8_t *m, size_t ml,
                      const uint8_t *sig, size_t sl)
{
    struct recorded_op *op = record_op(OP_VERIFY, crv, 0);
    record_input(op, 0, pub, pl);
    record_input(op, 1, m, ml);
    record_input(op, 2, sig, sl);
    int rc = backend->verify(crv, pub, pl, m, ml, sig, sl);
    if (op)
        op->rc = rc;
    return rc;
}

static struct edhoc_crypto_ops recording_ops;

/* A table recording the calls that it passes on to `under`. */
const struct edhoc_crypto_ops *bench_recording_ops(const struct edhoc_crypto_ops *under)
{
    backend = under;
    recording_ops = *backend;
    recording_ops.random = rec_random;
    recording_ops.hash = rec_hash;
    recording_ops.hkdf_extract = rec_extract;
    recording_ops.hkdf_expand = rec_expand;
    recording_ops.aead_encrypt = rec_encrypt;
    recording_ops.aead_decrypt = rec_decrypt;
    recording_ops.keygen = rec_keygen;
    recording_ops.public_key = rec_public;
    recording_ops.ecdh = rec_ecdh;
    recording_ops.sign = rec_sign;
    recording_ops.verify = rec_verify;
    return &recording_ops;
}

/* The same calls, against the backend alone. Returns 0, or -1 when a
 * call's result differs from the recorded one (the floor would then not
 * be the handshake's work). */
int bench_replay(const struct recording *r, int side, uint8_t *out)
{
    const struct edhoc_crypto_ops *b = backend;
    size_t len;
    for (size_t i = 0; i < r->n; i++) {
        const struct recorded_op *op = &r->ops[i];
        if (op->side != side)
            continue;
        int rc;
        uint8_t *const *in = op->in;
        const size_t *il = op->in_len;
        switch (op->kind) {
        case OP_RANDOM: rc = b->random(b->rng_ctx, out, op->out_len); break;
        case OP_HASH: rc = b->hash(op->alg, in[0], il[0], out); break;
        case OP_EXTRACT: rc = b->hkdf_extract(op->alg, in[0], il[0], in[1], il[1], out); break;
        case OP_EXPAND:
            rc = b->hkdf_expand(op->alg, in[0], il[0], in[1], il[1], out, op->out_len);
            break;
        case OP_ENCRYPT:
            rc = b->aead_encrypt(op->alg, in[0], in[1], in[2], il[2], in[3], il[3], out);
            break;
        case OP_DECRYPT:
            rc = b->aead_decrypt(op->alg, in[0], in[1], in[2], il[2], in[3], il[3], out);
            break;
        case OP_KEYGEN:
            rc = b->keygen(op->alg, op->flag, out, out + EDHOC_CRYPTO_MAX_PRIV, &len);
            break;
        case OP_PUBLIC: rc = b->public_key(op->alg, op->flag, in[0], out, &len); break;
        case OP_ECDH: rc = b->ecdh(op->alg, in[0], in[1], il[1], out); break;
        case OP_SIGN: rc = b->sign(op->alg, in[0], in[1], il[1], out); break;
        case OP_VERIFY: rc = b->verify(op->alg, in[0], il[0], in[1], il[1], in[2], il[2]); break;
        default: rc = -1;
        }
        if (rc != op->rc)
            return -1;
    }
    return 0;
}
