/*
 * crypto_openssl_aead.c - AES-CCM, AES-GCM and ChaCha20-Poly1305 in the
 * OpenSSL backend, with keyed contexts kept per thread between calls.
 */
#include "edhoc/crypto.h"
#include "crypto_openssl_internal.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

/* ------------------------------------------------------------------------
 * AEAD
 */

struct aead_params {
    const EVP_CIPHER *cipher;
    size_t nonce_len;
    size_t tag_len;
    bool ccm;
};

static int aead_lookup(int aead_alg, struct aead_params *p)
{
    const struct backend_algs *a = edhoc_openssl_algs();

    switch (aead_alg) {
    case EDHOC_COSE_AES_CCM_16_64_128:
    case EDHOC_COSE_AES_CCM_16_128_128:
        p->cipher = a->aes128ccm;
        p->ccm = true;
        break;
    case EDHOC_COSE_A128GCM:
        p->cipher = a->aes128gcm;
        p->ccm = false;
        break;
    case EDHOC_COSE_A256GCM:
        p->cipher = a->aes256gcm;
        p->ccm = false;
        break;
    case EDHOC_COSE_CHACHA20_POLY1305:
        p->cipher = a->chacha20poly1305;
        p->ccm = false;
        break;
    default: return EDHOC_CRYPTO_ERR_UNSUPPORTED;
    }
    p->nonce_len = edhoc_crypto_aead_nonce_len(aead_alg);
    p->tag_len = edhoc_crypto_aead_tag_len(aead_alg);
    return p->cipher == NULL ? EDHOC_CRYPTO_ERR_BACKEND : 0;
}

/* A non-NULL pointer for zero-length inputs and outputs (as in
 * crypto_openssl_kdf.c): OpenSSL's AEAD updates refuse NULL buffers. */
static const uint8_t empty_input[1];

/* EVP lengths are int; keep room for the tag. */
#define AEAD_LEN_MAX ((size_t)INT_MAX - 64)

/* ---- Keyed AEAD contexts, kept between calls ----
 * Setting up an EVP_CIPHER_CTX (allocation, provider parameter plumbing,
 * key schedule) costs more than sealing a 100-byte CoAP message, and
 * OSCORE seals every message of a context with the same two keys. So
 * keyed contexts are kept per thread, found by algorithm, direction and
 * key; a call with a known key only sets the nonce. A responder serves
 * many peers in turn (two keys each), so the cache is a set-associative
 * table: a seeded hash of the key picks a set of AEAD_CACHE_WAYS entries
 * (the seed is random, so the set says nothing about the key), and the
 * least recently used entry of the set is freed (OpenSSL wipes its key
 * schedule) when room is needed. Callers drop a key they are done with
 * through aead_forget. The copy of the key used to find a context is
 * wiped with it. */

#define AEAD_CACHE_WAYS  4
#define AEAD_CACHE_SETS  32
#define AEAD_CACHE_SLOTS (AEAD_CACHE_WAYS * AEAD_CACHE_SETS)

struct aead_slot {
    EVP_CIPHER_CTX *ctx; /* NULL: free slot */
    int alg;
    int enc;
    size_t key_len;
    uint64_t last_use;
    uint8_t key[EDHOC_CRYPTO_MAX_KEY];
};

static _Thread_local struct aead_slot aead_cache[AEAD_CACHE_SLOTS];
static _Thread_local uint64_t aead_clock;

static uint64_t aead_cache_seed;
static pthread_once_t aead_seed_once = PTHREAD_ONCE_INIT;

static void aead_seed_init(void)
{
    uint64_t seed = 0;
    if (RAND_bytes((unsigned char *)&seed, sizeof seed) != 1)
        seed = (uint64_t)(uintptr_t)&seed ^ 0x9e3779b97f4a7c15u;
    aead_cache_seed = seed;
}

/* The first slot of the set for this key (and algorithm and direction). */
static size_t aead_set_of(int alg, int enc, const uint8_t *key, size_t key_len)
{
    pthread_once(&aead_seed_once, aead_seed_init);
    uint64_t h = aead_cache_seed ^ ((uint64_t)(uint32_t)alg << 1) ^ (uint64_t)enc;
    for (size_t i = 0; i < key_len; i++)
        h = (h ^ key[i]) * 0x100000001b3u;
    h ^= h >> 29;
    return (size_t)(h % AEAD_CACHE_SETS) * AEAD_CACHE_WAYS;
}

static void aead_slot_drop(struct aead_slot *slot)
{
    EVP_CIPHER_CTX_free(slot->ctx);
    OPENSSL_cleanse(slot, sizeof *slot);
}

/* A thread's contexts are freed when it ends (the process's main thread
 * keeps its own until exit). */
static pthread_key_t aead_cache_key;
static pthread_once_t aead_cache_once = PTHREAD_ONCE_INIT;

static void aead_cache_thread_exit(void *unused)
{
    (void)unused;
    for (size_t i = 0; i < AEAD_CACHE_SLOTS; i++)
        if (aead_cache[i].ctx != NULL)
            aead_slot_drop(&aead_cache[i]);
}

static void aead_cache_key_create(void)
{
    if (pthread_key_create(&aead_cache_key, aead_cache_thread_exit) != 0)
        aead_cache_key = (pthread_key_t)-1;
}

/* Arrange for aead_cache_thread_exit in this thread. */
static void aead_cache_register_thread(void)
{
    static _Thread_local bool registered;
    if (registered)
        return;
    registered = true;
    pthread_once(&aead_cache_once, aead_cache_key_create);
    if (aead_cache_key != (pthread_key_t)-1)
        pthread_setspecific(aead_cache_key, &registered);
}

void edhoc_openssl_aead_forget(const uint8_t *key, size_t key_len)
{
    if (key == NULL || key_len == 0 || key_len > EDHOC_CRYPTO_MAX_KEY)
        return;
    /* Whatever the algorithm and direction it was used with. */
    for (size_t i = 0; i < AEAD_CACHE_SLOTS; i++) {
        struct aead_slot *slot = &aead_cache[i];
        if (slot->ctx != NULL && slot->key_len == key_len &&
            CRYPTO_memcmp(slot->key, key, key_len) == 0)
            aead_slot_drop(slot);
    }
}

/* A context for one operation with key and nonce set (and for CCM the tag
 * length, and when decrypting the expected tag). NULL on failure. The
 * caller drops *slot_out when the operation fails midway. */
static EVP_CIPHER_CTX *aead_ctx_get(int aead_alg, const struct aead_params *p, int enc,
                                    const uint8_t *key, const uint8_t *nonce, const uint8_t *tag,
                                    struct aead_slot **slot_out)
{
    size_t key_len = edhoc_crypto_aead_key_len(aead_alg);
    if (key_len == 0 || key_len > EDHOC_CRYPTO_MAX_KEY)
        return NULL;
    size_t first = aead_set_of(aead_alg, enc, key, key_len);
    struct aead_slot *victim = &aead_cache[first];
    for (size_t i = first; i < first + AEAD_CACHE_WAYS; i++) {
        struct aead_slot *slot = &aead_cache[i];
        if (slot->ctx != NULL && slot->alg == aead_alg && slot->enc == enc &&
            slot->key_len == key_len && CRYPTO_memcmp(slot->key, key, key_len) == 0) {
            *slot_out = slot;
            if (EVP_CipherInit_ex2(slot->ctx, NULL, NULL, nonce, enc, NULL) != 1 ||
                (p->ccm && !enc &&
                 EVP_CIPHER_CTX_ctrl(slot->ctx, EVP_CTRL_AEAD_SET_TAG, (int)p->tag_len,
                                     (void *)tag) != 1)) {
                aead_slot_drop(slot);
                return NULL;
            }
            slot->last_use = ++aead_clock;
            return slot->ctx;
        }
        if (victim->ctx != NULL && (slot->ctx == NULL || slot->last_use < victim->last_use))
            victim = slot;
    }
    if (victim->ctx != NULL)
        aead_slot_drop(victim);
    aead_cache_register_thread();
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL)
        return NULL;
    /* CCM wants the nonce and tag lengths (and when decrypting the tag)
     * before the key. */
    if (EVP_CipherInit_ex2(ctx, p->cipher, NULL, NULL, enc, NULL) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, (int)p->nonce_len, NULL) != 1 ||
        (p->ccm && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, (int)p->tag_len,
                                       enc ? NULL : (void *)tag) != 1) ||
        EVP_CipherInit_ex2(ctx, NULL, key, nonce, enc, NULL) != 1) {
        EVP_CIPHER_CTX_free(ctx);
        return NULL;
    }
    victim->ctx = ctx;
    victim->alg = aead_alg;
    victim->enc = enc;
    victim->key_len = key_len;
    memcpy(victim->key, key, key_len);
    victim->last_use = ++aead_clock;
    *slot_out = victim;
    return ctx;
}

/* The rest of the setup: for CCM the total length first, then the AAD. */
static bool aead_feed_aad(EVP_CIPHER_CTX *ctx, const struct aead_params *p, const uint8_t *aad,
                          size_t aad_len, size_t msg_len)
{
    int outl;
    if (p->ccm && EVP_CipherUpdate(ctx, NULL, &outl, NULL, (int)msg_len) != 1)
        return false;
    if (aad_len > 0 && EVP_CipherUpdate(ctx, NULL, &outl, aad, (int)aad_len) != 1)
        return false;
    return true;
}

/*
 * ct and pt may be the same buffer (in-place); no other overlap.
 * Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (unknown aead_alg),
 * EDHOC_CRYPTO_ERR_INVALID (length beyond INT_MAX), EDHOC_CRYPTO_ERR_BACKEND.
 */
int edhoc_openssl_aead_encrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                               const uint8_t *aad, size_t aad_len, const uint8_t *pt, size_t pt_len,
                               uint8_t *ct)
{
    struct aead_params p;
    struct aead_slot *slot = NULL;
    int outl = 0, finl = 0;
    int ret = aead_lookup(aead_alg, &p);
    bool ok;

    if (ret != 0)
        return ret;
    if (pt_len > AEAD_LEN_MAX || aad_len > AEAD_LEN_MAX)
        return EDHOC_CRYPTO_ERR_INVALID;
    EVP_CIPHER_CTX *ctx = aead_ctx_get(aead_alg, &p, 1, key, nonce, NULL, &slot);
    if (ctx == NULL)
        return EDHOC_CRYPTO_ERR_BACKEND;
    ok = aead_feed_aad(ctx, &p, aad, aad_len, pt_len);
    /* CCM must see the (possibly empty) payload update to produce its tag,
     * and OpenSSL reads a NULL input as "finalise" there: pass real
     * pointers even for an empty plaintext. */
    if (ok && (pt_len > 0 || p.ccm))
        ok = EVP_CipherUpdate(ctx, pt_len > 0 ? ct : (uint8_t *)empty_input, &outl,
                              pt_len > 0 ? pt : empty_input, (int)pt_len) == 1 &&
             (size_t)outl == pt_len;
    if (ok && !p.ccm) {
        uint8_t none[EDHOC_CRYPTO_MAX_TAG]; /* GCM/ChaCha20 finalise writes nothing */
        ok = EVP_CipherFinal_ex(ctx, none, &finl) == 1 && finl == 0;
    }
    if (ok)
        ok = EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, (int)p.tag_len, ct + pt_len) == 1;
    if (!ok) {
        aead_slot_drop(slot); /* its state is unknown */
        edhoc_wipe(ct, pt_len + p.tag_len);
        return EDHOC_CRYPTO_ERR_BACKEND;
    }
    return 0;
}

/*
 * Returns 0, EDHOC_CRYPTO_ERR_UNSUPPORTED (unknown aead_alg),
 * EDHOC_CRYPTO_ERR_INVALID (ct_len shorter than the tag, or beyond INT_MAX),
 * EDHOC_CRYPTO_ERR_AUTH (tag mismatch; pt wiped), EDHOC_CRYPTO_ERR_BACKEND.
 */
int edhoc_openssl_aead_decrypt(int aead_alg, const uint8_t *key, const uint8_t *nonce,
                               const uint8_t *aad, size_t aad_len, const uint8_t *ct, size_t ct_len,
                               uint8_t *pt)
{
    struct aead_params p;
    struct aead_slot *slot = NULL;
    uint8_t tag[EDHOC_CRYPTO_MAX_TAG];
    size_t pt_len;
    int outl = 0, finl = 0;
    int ret = aead_lookup(aead_alg, &p);

    if (ret != 0)
        return ret;
    if (ct_len < p.tag_len || ct_len > AEAD_LEN_MAX || aad_len > AEAD_LEN_MAX)
        return EDHOC_CRYPTO_ERR_INVALID;
    pt_len = ct_len - p.tag_len;
    /* The ctrl interface wants a writable tag buffer. */
    memcpy(tag, ct + pt_len, p.tag_len);
    EVP_CIPHER_CTX *ctx = aead_ctx_get(aead_alg, &p, 0, key, nonce, tag, &slot);
    if (ctx == NULL) {
        ret = EDHOC_CRYPTO_ERR_BACKEND;
    } else if (!aead_feed_aad(ctx, &p, aad, aad_len, pt_len)) {
        ret = EDHOC_CRYPTO_ERR_BACKEND;
    } else if (p.ccm) {
        /* CCM verifies inside the (single) payload update. */
        if (EVP_CipherUpdate(ctx, pt_len > 0 ? pt : (uint8_t *)empty_input, &outl,
                             pt_len > 0 ? ct : empty_input, (int)pt_len) != 1)
            ret = EDHOC_CRYPTO_ERR_AUTH;
    } else {
        if (pt_len > 0 && EVP_CipherUpdate(ctx, pt, &outl, ct, (int)pt_len) != 1)
            ret = EDHOC_CRYPTO_ERR_BACKEND;
        else if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, (int)p.tag_len, tag) != 1)
            ret = EDHOC_CRYPTO_ERR_BACKEND;
        else if (EVP_CipherFinal_ex(ctx, tag, &finl) != 1) /* writes nothing */
            ret = EDHOC_CRYPTO_ERR_AUTH;
    }
    /* A context that failed midway (or saw a forgery) is not kept for the
     * next message: a fresh one costs little next to a rare failure. */
    if (ret != 0 && slot != NULL && slot->ctx == ctx)
        aead_slot_drop(slot);
    if (ret != 0)
        edhoc_wipe(pt, pt_len);
    return ret;
}
