/* bench handshake: the crypto calls of one handshake, recorded and
 * replayed (bench_record.c). */
#ifndef EDHOC_TOOLS_BENCH_RECORD_H
#define EDHOC_TOOLS_BENCH_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/crypto.h"

#define BENCH_SIDE_I 0
#define BENCH_SIDE_R 1

enum op_kind {
    OP_RANDOM,
    OP_HASH,
    OP_EXTRACT,
    OP_EXPAND,
    OP_ENCRYPT,
    OP_DECRYPT,
    OP_KEYGEN,
    OP_PUBLIC,
    OP_ECDH,
    OP_SIGN,
    OP_VERIFY,
    OP_KINDS
};

/* The JSON names of the kinds (calls_NAME columns). */
extern const char *const bench_op_names[OP_KINDS];

#define OP_MAX_INPUTS 4

struct recorded_op {
    enum op_kind kind;
    int side; /* SIDE_I / SIDE_R */
    int alg;  /* algorithm or curve */
    bool flag;
    int rc;
    size_t out_len;
    uint8_t *in[OP_MAX_INPUTS];
    size_t in_len[OP_MAX_INPUTS];
};

struct recording {
    struct recorded_op *ops;
    size_t n, cap;
    int side;       /* whose step is running */
    bool failed;    /* out of memory while recording */
    size_t max_out; /* largest output, for the replay buffer */
};

/* The recording under way (one handshake at a time, one thread). */
extern struct recording bench_rec;

void bench_recording_clear(struct recording *r);
/* A table recording the calls that it passes on to under. */
const struct edhoc_crypto_ops *bench_recording_ops(const struct edhoc_crypto_ops *under);
/* The calls of side, against the backend alone. Returns 0, or -1 when a
 * call's result differs from the recorded one (the floor would then not
 * be the handshake's work). */
int bench_replay(const struct recording *r, int side, uint8_t *out);

#endif
