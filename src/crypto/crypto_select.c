/*
 * crypto_select.c - the composite backend (edhoc_crypto_auto) and the
 * choice of a process's backend (edhoc_crypto_default).
 *
 * The composite takes each operation on each algorithm from the backend
 * that is faster on it. The choice is a committed table, measured on an
 * x86-64 host with `edhoc-cli bench crypto` (which prints both libraries
 * side by side with the choice made here), not a run-time race: a run-time
 * measurement would make the backend of a process depend on the load of
 * the machine when it started, and two processes of one test run could
 * differ. Both backends give the same bytes for every deterministic
 * operation and accept the same inputs (tests/test_crypto*.c run every
 * known answer and every refusal through each), so the choice changes
 * only the time.
 */
#include "edhoc/crypto.h"
#include "crypto_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The operations libsodium does faster, with the medians that decided
 * (µs per call, libsodium 1.0.18 / OpenSSL 3.0.19, AMD EPYC, `edhoc-cli
 * bench crypto`); every other operation, and all that libsodium lacks, is
 * OpenSSL's. SHA-256 and HMAC-SHA-256 stay with OpenSSL, whose SHA
 * extensions code is faster (0.20 / 0.57 for a 128-byte hash, HKDF-Extract
 * 0.64 / 0.85). ChaCha20-Poly1305 is libsodium's for the sizes of EDHOC and
 * OSCORE messages (0.30 / 0.45 at 16 bytes, 0.47 / 0.49 at 256), though
 * OpenSSL's wins from about 1 KiB (0.64 / 0.88). */
static const struct {
    enum edhoc_crypto_op op;
    int alg;
} sodium_faster[] = {
    {EDHOC_CRYPTO_OP_SIGN, EDHOC_COSE_CRV_ED25519},   /* 30.8 / 77.3 */
    {EDHOC_CRYPTO_OP_VERIFY, EDHOC_COSE_CRV_ED25519}, /* 46.6 / 107 */
    {EDHOC_CRYPTO_OP_KEYGEN, EDHOC_COSE_CRV_ED25519}, /* as signing, one scalar multiplication */
    {EDHOC_CRYPTO_OP_KEYGEN, EDHOC_COSE_CRV_X25519},  /* 27.9 / 39.5 */
    {EDHOC_CRYPTO_OP_ECDH, EDHOC_COSE_CRV_X25519},    /* 29.7 / 39.0 */
    {EDHOC_CRYPTO_OP_AEAD, EDHOC_COSE_CHACHA20_POLY1305},
    {EDHOC_CRYPTO_OP_RANDOM, 0}, /* 32 bytes: 0.8 / 1.4-1.8 */
};

const struct edhoc_crypto_ops *edhoc_crypto_auto_source(enum edhoc_crypto_op op, int alg)
{
    if (op == EDHOC_CRYPTO_OP_RANDOM)
        alg = 0;
    for (size_t i = 0; i < sizeof sodium_faster / sizeof sodium_faster[0]; i++)
        if (sodium_faster[i].op == op && sodium_faster[i].alg == alg &&
            edhoc_crypto_sodium_implements(op, alg))
            return edhoc_crypto_sodium();
    return edhoc_crypto_openssl();
}

#define FROM(op, alg) edhoc_crypto_auto_source((op), (alg))

static int auto_hash(int hash_alg, const uint8_t *msg, size_t len, uint8_t *out)
{
    return FROM(EDHOC_CRYPTO_OP_HASH, hash_alg)->hash(hash_alg, msg, len, out);
}

static int auto_hkdf_extract(int hash_alg, const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
                             size_t ikm_len, uint8_t *prk)
{
    return FROM(EDHOC_CRYPTO_OP_HKDF, hash_alg)
        ->hkdf_extract(hash_alg, salt, salt_len, ikm, ikm_len, prk);
}

static int auto_hkdf_expand(int hash_alg, const uint8_t *prk, size_t prk_len, const uint8_t *info,
                            size_t info_len, uint8_t *out, size_t out_len)
{
    return FROM(EDHOC_CRYPTO_OP_HKDF, hash_alg)
        ->hkdf_expand(hash_alg, prk, prk_len, info, info_len, out, out_len);
}

static int auto_aead_encrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                             const uint8_t *aad, size_t aad_len, const uint8_t *pt, size_t pt_len,
                             uint8_t *ct)
{
    return FROM(EDHOC_CRYPTO_OP_AEAD, aead_alg)
        ->aead_encrypt(aead_alg, key, nonce, aad, aad_len, pt, pt_len, ct);
}

static int auto_aead_decrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                             const uint8_t *aad, size_t aad_len, const uint8_t *ct, size_t ct_len,
                             uint8_t *pt)
{
    return FROM(EDHOC_CRYPTO_OP_AEAD, aead_alg)
        ->aead_decrypt(aead_alg, key, nonce, aad, aad_len, ct, ct_len, pt);
}

static int auto_keygen(int curve, bool for_ecdh, uint8_t *priv, uint8_t *pub, size_t *pub_len)
{
    return edhoc_crypto_keygen(edhoc_crypto_auto(), curve, for_ecdh, priv, pub, pub_len);
}

static int auto_public_key(int curve, bool for_ecdh, const uint8_t *priv, uint8_t *pub,
                           size_t *pub_len)
{
    return FROM(EDHOC_CRYPTO_OP_KEYGEN, curve)->public_key(curve, for_ecdh, priv, pub, pub_len);
}

static int auto_ecdh(int curve, const uint8_t *priv, const uint8_t *peer_pub, size_t peer_pub_len,
                     uint8_t *shared)
{
    return FROM(EDHOC_CRYPTO_OP_ECDH, curve)->ecdh(curve, priv, peer_pub, peer_pub_len, shared);
}

static int auto_sign(int curve, const uint8_t *priv, const uint8_t *msg, size_t msg_len,
                     uint8_t *sig)
{
    return FROM(EDHOC_CRYPTO_OP_SIGN, curve)->sign(curve, priv, msg, msg_len, sig);
}

static int auto_verify(int curve, const uint8_t *pub, size_t pub_len, const uint8_t *msg,
                       size_t msg_len, const uint8_t *sig, size_t sig_len)
{
    return FROM(EDHOC_CRYPTO_OP_VERIFY, curve)
        ->verify(curve, pub, pub_len, msg, msg_len, sig, sig_len);
}

/* Both backends' keyed state for the key is dropped (only OpenSSL keeps
 * any; libsodium's entry forwards to it). */
static void auto_aead_forget(const uint8_t *key, size_t key_len)
{
    const struct edhoc_crypto_ops *o = edhoc_crypto_openssl();
    if (o->aead_forget != NULL)
        o->aead_forget(key, key_len);
}

static struct edhoc_crypto_ops auto_ops = {
    .name = "auto",
    .random = NULL, /* the chosen backend's, set once */
    .rng_ctx = NULL,
    .hash = auto_hash,
    .hkdf_extract = auto_hkdf_extract,
    .hkdf_expand = auto_hkdf_expand,
    .aead_encrypt = auto_aead_encrypt,
    .aead_decrypt = auto_aead_decrypt,
    .keygen = auto_keygen,
    .public_key = auto_public_key,
    .ecdh = auto_ecdh,
    .sign = auto_sign,
    .verify = auto_verify,
    .aead_forget = auto_aead_forget,
};

static pthread_once_t auto_once = PTHREAD_ONCE_INIT;
static char auto_name[160];

static void auto_setup(void)
{
    const struct edhoc_crypto_ops *rng = edhoc_crypto_auto_source(EDHOC_CRYPTO_OP_RANDOM, 0);

    auto_ops.random = rng->random;
    auto_ops.rng_ctx = rng->rng_ctx;
    snprintf(auto_name, sizeof auto_name, "auto (%s + %s)", edhoc_crypto_sodium()->name,
             edhoc_crypto_openssl()->name);
    auto_ops.name = auto_name;
}

const struct edhoc_crypto_ops *edhoc_crypto_auto(void)
{
    pthread_once(&auto_once, auto_setup);
    return &auto_ops;
}

const struct edhoc_crypto_ops *edhoc_crypto_by_name(const char *name)
{
    if (name == NULL)
        return NULL;
    if (strcmp(name, "openssl") == 0)
        return edhoc_crypto_openssl();
    if (strcmp(name, "sodium") == 0)
        return edhoc_crypto_sodium();
    if (strcmp(name, "auto") == 0)
        return edhoc_crypto_auto();
    return NULL;
}

const struct edhoc_crypto_ops *edhoc_crypto_default(void)
{
    const struct edhoc_crypto_ops *o = edhoc_crypto_by_name(getenv("EDHOC_CRYPTO"));
    return o != NULL ? o : edhoc_crypto_auto();
}
