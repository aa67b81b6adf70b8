/*
 * Protection of message_3 and message_4 (RFC 9528 Sections 5.4.3 and
 * 5.5.2): K_x / IV_x from the key schedule and the COSE_Encrypt0 AEAD.
 */
#include <string.h>

#include "edhoc_internal.h"

/* K_x, IV_x and A_x = ["Encrypt0", h'', TH_x] for message 3 or 4. */
static int aead_params(struct edhoc_session *s, int msg_no, const uint8_t *prk, uint8_t *key,
                       uint8_t *iv, uint8_t *aad, size_t *aad_len)
{
    const struct edhoc_suite *su = edhoc_suite_of(s);
    size_t kl = edhoc_crypto_aead_key_len(su->aead);
    size_t nl = edhoc_crypto_aead_nonce_len(su->aead);
    int rc = edhoc_kdf_session(s, prk, msg_no == 3 ? 3 : 8, s->th, s->th_len, key, kl);
    if (!rc)
        rc = edhoc_kdf_session(s, prk, msg_no == 3 ? 4 : 9, s->th, s->th_len, iv, nl);
    if (rc)
        return rc;
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, aad, EDHOC_CRYPTO_MAX_HASH + 16);
    edhoc_cbor_put_array(&w, 3);
    edhoc_cbor_put_tstr(&w, "Encrypt0", 8);
    edhoc_cbor_put_bstr(&w, NULL, 0);
    edhoc_cbor_put_bstr(&w, s->th, s->th_len);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_ERR_TOO_LARGE;
    *aad_len = (size_t)n;
    edhoc_trace(s, msg_no == 3 ? "A_3" : "A_4", aad, *aad_len);
    edhoc_trace(s, msg_no == 3 ? "K_3" : "K_4", key, kl);
    edhoc_trace(s, msg_no == 3 ? "IV_3" : "IV_4", iv, nl);
    return 0;
}

/* message_3 / message_4 = bstr(CIPHERTEXT_x) into out, from PLAINTEXT_x
 * under the current PRK. */
int edhoc_seal(struct edhoc_session *s, int msg_no, const uint8_t *pt, size_t pt_len, uint8_t *out,
               size_t cap, size_t *out_len)
{
    const struct edhoc_suite *su = edhoc_suite_of(s);
    uint8_t key[EDHOC_CRYPTO_MAX_KEY] = {0}, iv[EDHOC_CRYPTO_MAX_NONCE];
    uint8_t aad[EDHOC_CRYPTO_MAX_HASH + 16];
    size_t aad_len = 0;
    int rc = aead_params(s, msg_no, s->prk, key, iv, aad, &aad_len);
    if (rc)
        goto out;
    size_t ct_len = pt_len + edhoc_crypto_aead_tag_len(su->aead);
    size_t head = edhoc_cbor_head_len(ct_len);
    if (head + ct_len > cap) {
        rc = EDHOC_ERR_BUFFER;
        goto out;
    }
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, out, cap);
    edhoc_cbor_put_bstr_head(&w, ct_len);
    rc = edhoc_crypto_err(
        s->cfg->ops->aead_encrypt(su->aead, key, iv, aad, aad_len, pt, pt_len, out + head));
    if (rc)
        goto out;
    edhoc_trace(s, msg_no == 3 ? "CIPHERTEXT_3" : "CIPHERTEXT_4", out + head, ct_len);
    edhoc_trace(s, msg_no == 3 ? "message_3" : "message_4", out, head + ct_len);
    *out_len = head + ct_len;
out:
    /* K_3 / K_4 seal one message: nothing for the backend to keep. */
    if (s->cfg->ops->aead_forget)
        s->cfg->ops->aead_forget(key, edhoc_crypto_aead_key_len(su->aead));
    edhoc_wipe(key, sizeof key);
    edhoc_wipe(iv, sizeof iv);
    return rc;
}

/* The other way: PLAINTEXT_x of message_3 / message_4 into rx->plaintext. */
int edhoc_open_message(struct edhoc_session *s, int msg_no, const uint8_t *msg, size_t len,
                       struct edhoc_received *rx, size_t *pt_len)
{
    const uint8_t *ct;
    size_t ct_len;
    int rc = msg_no == 3 ? edhoc_message_3_parse(msg, len, &ct, &ct_len)
                         : edhoc_message_4_parse(msg, len, &ct, &ct_len);
    if (rc)
        return rc;
    const struct edhoc_suite *su = edhoc_suite_of(s);
    size_t tag = edhoc_crypto_aead_tag_len(su->aead);
    if (ct_len < tag)
        return EDHOC_ERR_DECRYPT;
    if (ct_len - tag > EDHOC_MAX_PLAINTEXT)
        return EDHOC_ERR_TOO_LARGE;
    uint8_t key[EDHOC_CRYPTO_MAX_KEY], iv[EDHOC_CRYPTO_MAX_NONCE];
    uint8_t aad[EDHOC_CRYPTO_MAX_HASH + 16];
    size_t aad_len = 0;
    rc = aead_params(s, msg_no, s->prk, key, iv, aad, &aad_len);
    if (!rc) {
        rc = s->cfg->ops->aead_decrypt(su->aead, key, iv, aad, aad_len, ct, ct_len, rx->plaintext);
        if (rc == EDHOC_CRYPTO_ERR_AUTH)
            rc = EDHOC_ERR_DECRYPT;
        else
            rc = edhoc_crypto_err(rc);
        if (s->cfg->ops->aead_forget)
            s->cfg->ops->aead_forget(key, edhoc_crypto_aead_key_len(su->aead));
    }
    edhoc_wipe(key, sizeof key);
    edhoc_wipe(iv, sizeof iv);
    if (rc)
        return rc;
    *pt_len = ct_len - tag;
    edhoc_trace(s, msg_no == 3 ? "PLAINTEXT_3" : "PLAINTEXT_4", rx->plaintext, *pt_len);
    return 0;
}
