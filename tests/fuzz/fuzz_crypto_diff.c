/* Differential fuzzing of the two crypto backends (issue #18): the same
 * bytes go to OpenSSL and to libsodium, and every result must agree, both
 * whether an input is accepted and the bytes produced. The first byte
 * picks the operation, the rest are its inputs:
 *   0 X25519 ECDH with an arbitrary peer key (small-order and
 *     non-canonical u included, RFC 7748 Section 6.1),
 *   1 Ed25519 verification of an arbitrary key and signature (small-order
 *     and non-canonical keys, S >= L: the rule of include/edhoc/crypto.h),
 *   2 Ed25519 signing with an arbitrary seed, then verification by both,
 *   3 ChaCha20-Poly1305 decryption of arbitrary bytes and encryption,
 *   4 SHA-256, HKDF-Extract and HKDF-Expand with arbitrary lengths.
 * A difference aborts, which libFuzzer reports with the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/crypto.h"

#define SAME(a, b)                                                                                 \
    do {                                                                                           \
        if ((a) != (b))                                                                            \
            abort();                                                                               \
    } while (0)
#define SAME_BYTES(a, b, n)                                                                        \
    do {                                                                                           \
        if (memcmp((a), (b), (n)))                                                                 \
            abort();                                                                               \
    } while (0)

/* Take n bytes of input, zero-padded when the input runs out. */
static void take(const uint8_t **p, size_t *left, uint8_t *out, size_t n)
{
    size_t k = *left < n ? *left : n;
    memcpy(out, *p, k);
    memset(out + k, 0, n - k);
    *p += k;
    *left -= k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct edhoc_crypto_ops *o = edhoc_crypto_openssl();
    const struct edhoc_crypto_ops *s = edhoc_crypto_sodium();
    if (size < 1)
        return 0;
    int op = data[0] % 5;
    const uint8_t *p = data + 1;
    size_t left = size - 1;
    uint8_t a[64], b[64], c[64], x[64], y[64];
    uint8_t big_o[1100], big_s[1100];

    switch (op) {
    case 0: {
        take(&p, &left, a, 32);
        take(&p, &left, b, 32);
        int ro = o->ecdh(EDHOC_COSE_CRV_X25519, a, b, 32, x);
        int rs = s->ecdh(EDHOC_COSE_CRV_X25519, a, b, 32, y);
        SAME(ro, rs);
        if (ro == 0)
            SAME_BYTES(x, y, 32);
        break;
    }
    case 1: {
        take(&p, &left, a, 32);
        take(&p, &left, c, 64);
        size_t mlen = left;
        SAME(o->verify(EDHOC_COSE_CRV_ED25519, a, 32, p, mlen, c, 64),
             s->verify(EDHOC_COSE_CRV_ED25519, a, 32, p, mlen, c, 64));
        break;
    }
    case 2: {
        size_t pub_len_o = 0, pub_len_s = 0;
        take(&p, &left, a, 32);
        SAME(o->public_key(EDHOC_COSE_CRV_ED25519, false, a, x, &pub_len_o), 0);
        SAME(s->public_key(EDHOC_COSE_CRV_ED25519, false, a, y, &pub_len_s), 0);
        SAME(pub_len_o, pub_len_s);
        SAME_BYTES(x, y, 32);
        SAME(o->sign(EDHOC_COSE_CRV_ED25519, a, p, left, b), 0);
        SAME(s->sign(EDHOC_COSE_CRV_ED25519, a, p, left, c), 0);
        SAME_BYTES(b, c, 64);
        SAME(o->verify(EDHOC_COSE_CRV_ED25519, x, 32, p, left, b, 64), 0);
        SAME(s->verify(EDHOC_COSE_CRV_ED25519, x, 32, p, left, b, 64), 0);
        break;
    }
    case 3: {
        uint8_t aad_len;
        take(&p, &left, a, 32); /* key */
        take(&p, &left, b, 12); /* nonce */
        take(&p, &left, &aad_len, 1);
        size_t al = aad_len < left ? aad_len : left;
        const uint8_t *aad = p;
        p += al;
        left -= al;
        size_t n = left > 1024 ? 1024 : left;
        int ro = o->aead_decrypt(EDHOC_COSE_CHACHA20_POLY1305, a, b, aad, al, p, n, big_o);
        int rs = s->aead_decrypt(EDHOC_COSE_CHACHA20_POLY1305, a, b, aad, al, p, n, big_s);
        SAME(ro, rs);
        if (ro == 0 && n > 16)
            SAME_BYTES(big_o, big_s, n - 16);
        SAME(o->aead_encrypt(EDHOC_COSE_CHACHA20_POLY1305, a, b, aad, al, p, n, big_o), 0);
        SAME(s->aead_encrypt(EDHOC_COSE_CHACHA20_POLY1305, a, b, aad, al, p, n, big_s), 0);
        SAME_BYTES(big_o, big_s, n + 16);
        break;
    }
    case 4: {
        uint8_t lens[2];
        take(&p, &left, lens, 2);
        size_t salt_len = lens[0] < left ? lens[0] : left;
        const uint8_t *salt = p;
        SAME(o->hash(EDHOC_COSE_SHA256, p, left, x), 0);
        SAME(s->hash(EDHOC_COSE_SHA256, p, left, y), 0);
        SAME_BYTES(x, y, 32);
        SAME(o->hkdf_extract(EDHOC_COSE_SHA256, salt, salt_len, p + salt_len, left - salt_len, x),
             0);
        SAME(s->hkdf_extract(EDHOC_COSE_SHA256, salt, salt_len, p + salt_len, left - salt_len, y),
             0);
        SAME_BYTES(x, y, 32);
        /* Output lengths up to 4 KiB, beyond the 255 * 32 limit too. */
        size_t out_len = (size_t)lens[1] * 33;
        uint8_t *okm_o = malloc(out_len + 1), *okm_s = malloc(out_len + 1);
        if (okm_o && okm_s) {
            int ro = o->hkdf_expand(EDHOC_COSE_SHA256, x, 32, p, left, okm_o, out_len);
            int rs = s->hkdf_expand(EDHOC_COSE_SHA256, x, 32, p, left, okm_s, out_len);
            SAME(ro, rs);
            if (ro == 0)
                SAME_BYTES(okm_o, okm_s, out_len);
        }
        free(okm_o);
        free(okm_s);
        break;
    }
    }
    return 0;
}
