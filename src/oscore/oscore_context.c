/*
 * OSCORE (RFC 8613) security contexts: derivation of the keys and the
 * Common IV (Section 3.2), directly or from EDHOC, the sequence-number
 * persistence and reservation hooks (Appendix B.1), resumption, the
 * accessors, and the texts of the error codes.
 *
 * Hot path design: keys and the Common IV are derived once in
 * oscore_context_init(); a protect or unprotect (oscore_protect.c,
 * oscore_unprotect.c) is then one CoAP parse, one small CBOR AAD, one
 * nonce XOR, one AEAD call and one copy of the plaintext into (or out of)
 * a stack buffer of OSCORE_MAX_PLAINTEXT bytes.
 */
#include "edhoc/oscore.h"

#include <string.h>

#include "edhoc/cbor.h"
#include "edhoc/coap_msg.h"
#include "oscore_internal.h"

/* The whole point of a fixed-size context is that a daemon can count its
 * memory per peer; keep it honest. */
_Static_assert(sizeof(struct oscore_context) <= 256, "OSCORE context grew past 256 bytes");

struct aead_info {
    int alg;
    uint8_t key_len, nonce_len, tag_len;
};

static const struct aead_info aeads[] = {
    {EDHOC_COSE_AES_CCM_16_64_128, 16, 13, 8},  {EDHOC_COSE_AES_CCM_16_128_128, 16, 13, 16},
    {EDHOC_COSE_A128GCM, 16, 12, 16},           {EDHOC_COSE_A256GCM, 32, 12, 16},
    {EDHOC_COSE_CHACHA20_POLY1305, 32, 12, 16},
};

static const struct aead_info *aead_lookup(int alg)
{
    for (size_t i = 0; i < sizeof aeads / sizeof aeads[0]; i++) {
        if (aeads[i].alg == alg)
            return &aeads[i];
    }
    return NULL;
}

const char *oscore_strerror(int err)
{
    switch (err) {
    case 0: return "success";
    case OSCORE_ERR_INVALID: return "invalid argument";
    case OSCORE_ERR_UNSUPPORTED: return "unsupported algorithm";
    case OSCORE_ERR_MALFORMED: return "malformed CoAP message";
    case OSCORE_ERR_NOT_OSCORE: return "OSCORE option missing (or already present)";
    case OSCORE_ERR_BAD_OPTION: return "malformed OSCORE option or COSE object";
    case OSCORE_ERR_CONTEXT_NOT_FOUND:
        return "security context not found (kid / kid context mismatch)";
    case OSCORE_ERR_REPLAY: return "replay detected";
    case OSCORE_ERR_DECRYPT: return "decryption failed";
    case OSCORE_ERR_ECHO_REQUIRED: return "replay window unknown: Echo exchange required";
    case OSCORE_ERR_SSN_EXHAUSTED: return "sender sequence number exhausted: rekey";
    case OSCORE_ERR_PERSIST: return "storing the sequence number failed";
    case OSCORE_ERR_BUFFER: return "output buffer too small";
    case OSCORE_ERR_CRYPTO: return "crypto backend failure";
    case OSCORE_ERR_TOO_LARGE: return "message too large";
    case OSCORE_ERR_UNEXPECTED: return "response not acceptable for this request";
    case OSCORE_ERR_INNER: return "decrypted content is not a valid CoAP message";
    case OSCORE_ERR_CONFIG: return "invalid OSCORE configuration";
    case OSCORE_ERR_NOMEM: return "out of memory for the message plaintext";
    case OSCORE_ERR_KID_CONTEXT:
        return "kid context unexpected, missing, or not the R value RFC 8613 Appendix B.2 "
               "expects (a response with one is B.2's response #1)";
    case OSCORE_ERR_ID_CONTEXT_TOO_LONG:
        return "the new ID Context of RFC 8613 Appendix B.2 would exceed 16 bytes";
    case OSCORE_ERR_BUSY: return "too many RFC 8613 Appendix B.2 runs pending";
    case COAP_MSG_ERR_MALFORMED: return "malformed CoAP message";
    case COAP_MSG_ERR_TOO_MANY: return "too many CoAP options";
    case COAP_MSG_ERR_BUFFER: return "output buffer too small";
    case COAP_MSG_ERR_INVALID: return "invalid CoAP message fields";
    default: return "unknown error";
    }
}

/* ---- Context ---- */

/* info = [id, id_context / nil, alg_aead, type, L] (Section 3.2.1) */
static int derive(const struct oscore_context *c, int hash_alg, const uint8_t *prk, size_t prk_len,
                  const uint8_t *id, size_t id_len, const char *type, size_t out_len, uint8_t *out)
{
    uint8_t info[64];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, info, sizeof info);
    edhoc_cbor_put_array(&w, 5);
    edhoc_cbor_put_bstr(&w, id, id_len);
    if (c->flags & CTX_HAS_ID_CONTEXT)
        edhoc_cbor_put_bstr(&w, c->id_context, c->id_context_len);
    else
        edhoc_cbor_put_null(&w);
    edhoc_cbor_put_int(&w, c->aead_alg);
    edhoc_cbor_put_tstr(&w, type, strlen(type));
    edhoc_cbor_put_uint(&w, out_len);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return OSCORE_ERR_INVALID;
    if (c->crypto->hkdf_expand(hash_alg, prk, prk_len, info, (size_t)n, out, out_len) != 0)
        return OSCORE_ERR_CRYPTO;
    return 0;
}

int oscore_context_init(struct oscore_context *c, const struct edhoc_crypto_ops *crypto,
                        const struct oscore_params *p)
{
    if (!c)
        return OSCORE_ERR_INVALID;
    memset(c, 0, sizeof *c);
    if (!crypto || !p || !crypto->hkdf_extract || !crypto->hkdf_expand || !crypto->aead_encrypt ||
        !crypto->aead_decrypt)
        return OSCORE_ERR_INVALID;
    int aead_alg = p->aead_alg ? p->aead_alg : EDHOC_COSE_AES_CCM_16_64_128;
    int hash_alg = p->hkdf_alg ? p->hkdf_alg : EDHOC_COSE_SHA256;
    const struct aead_info *ai = aead_lookup(aead_alg);
    if (!ai || (hash_alg != EDHOC_COSE_SHA256 && hash_alg != EDHOC_COSE_SHA384))
        return OSCORE_ERR_UNSUPPORTED;
    size_t max_id = (size_t)ai->nonce_len - 6;
    unsigned window = p->replay_window ? p->replay_window : OSCORE_DEFAULT_REPLAY_WINDOW;
    if (!p->master_secret || p->master_secret_len == 0 ||
        p->master_secret_len > OSCORE_MAX_MASTER_SECRET ||
        (p->master_salt_len && !p->master_salt) || p->master_salt_len > OSCORE_MAX_MASTER_SALT ||
        p->sender_id_len > max_id || p->recipient_id_len > max_id ||
        (p->sender_id_len && !p->sender_id) || (p->recipient_id_len && !p->recipient_id) ||
        (p->id_context && p->id_context_len > OSCORE_MAX_ID_CONTEXT) ||
        window > OSCORE_MAX_REPLAY_WINDOW)
        return OSCORE_ERR_INVALID;
    /* Both IDs equal would give both directions the same key and nonces. */
    if (p->sender_id_len == p->recipient_id_len &&
        (p->sender_id_len == 0 || memcmp(p->sender_id, p->recipient_id, p->sender_id_len) == 0))
        return OSCORE_ERR_INVALID;

    c->crypto = crypto;
    c->aead_alg = (int16_t)aead_alg;
    c->key_len = ai->key_len;
    c->nonce_len = ai->nonce_len;
    c->tag_len = ai->tag_len;
    c->window_size = (uint8_t)window;
    c->ssn_freq = 1;
    c->sender_id_len = (uint8_t)p->sender_id_len;
    if (p->sender_id_len)
        memcpy(c->sender_id, p->sender_id, p->sender_id_len);
    c->recipient_id_len = (uint8_t)p->recipient_id_len;
    if (p->recipient_id_len)
        memcpy(c->recipient_id, p->recipient_id, p->recipient_id_len);
    if (p->id_context) {
        c->flags |= CTX_HAS_ID_CONTEXT;
        c->id_context_len = (uint8_t)p->id_context_len;
        if (p->id_context_len)
            memcpy(c->id_context, p->id_context, p->id_context_len);
    }

    uint8_t prk[EDHOC_CRYPTO_MAX_HASH];
    size_t prk_len = hash_alg == EDHOC_COSE_SHA384 ? 48 : 32;
    static const uint8_t empty[1] = {0};
    int rc = OSCORE_ERR_CRYPTO;
    if (crypto->hkdf_extract(hash_alg, p->master_salt_len ? p->master_salt : empty,
                             p->master_salt_len, p->master_secret, p->master_secret_len, prk) != 0)
        goto out;
    rc = derive(c, hash_alg, prk, prk_len, c->sender_id, c->sender_id_len, "Key", c->key_len,
                c->sender_key);
    if (rc == 0)
        rc = derive(c, hash_alg, prk, prk_len, c->recipient_id, c->recipient_id_len, "Key",
                    c->key_len, c->recipient_key);
    if (rc == 0)
        rc = derive(c, hash_alg, prk, prk_len, NULL, 0, "IV", c->nonce_len, c->common_iv);
out:
    edhoc_wipe(prk, sizeof prk);
    if (rc != 0)
        oscore_context_wipe(c);
    return rc;
}

int oscore_context_init_edhoc(struct oscore_context *c, const struct edhoc_crypto_ops *crypto,
                              const uint8_t *master_secret, size_t master_secret_len,
                              const uint8_t *master_salt, size_t master_salt_len,
                              const uint8_t *sender_id, size_t sender_id_len,
                              const uint8_t *recipient_id, size_t recipient_id_len, int aead_alg,
                              int hash_alg)
{
    struct oscore_params p = {
        .aead_alg = aead_alg,
        .hkdf_alg = hash_alg,
        .master_secret = master_secret,
        .master_secret_len = master_secret_len,
        .master_salt = master_salt,
        .master_salt_len = master_salt_len,
        .sender_id = sender_id,
        .sender_id_len = sender_id_len,
        .recipient_id = recipient_id,
        .recipient_id_len = recipient_id_len,
    };
    /* The caller's suite fixes both algorithms; 0 would silently pick a default. */
    if (aead_alg == 0 || hash_alg == 0) {
        if (c)
            memset(c, 0, sizeof *c);
        return OSCORE_ERR_UNSUPPORTED;
    }
    return oscore_context_init(c, crypto, &p);
}

void oscore_context_wipe(struct oscore_context *c)
{
    if (!c)
        return;
    /* The backend may hold keyed state for both keys. */
    if (c->crypto && c->crypto->aead_forget && c->key_len) {
        c->crypto->aead_forget(c->sender_key, c->key_len);
        c->crypto->aead_forget(c->recipient_key, c->key_len);
    }
    edhoc_wipe(c, sizeof *c);
}

int oscore_context_set_persistence(struct oscore_context *c, oscore_store_ssn_fn fn, void *user,
                                   uint32_t ssn_freq)
{
    if (!c || (fn && ssn_freq == 0))
        return OSCORE_ERR_INVALID;
    c->store_ssn = fn;
    c->reserve_ssn = NULL;
    c->store_user = user;
    c->ssn_freq = ssn_freq ? ssn_freq : 1;
    /* Nothing is known to be stored yet: the next use stores first. */
    c->ssn_stored = c->ssn;
    return 0;
}

int oscore_context_set_reservation(struct oscore_context *c, oscore_reserve_ssn_fn fn, void *user,
                                   uint32_t count)
{
    if (!c || (fn && count == 0))
        return OSCORE_ERR_INVALID;
    c->reserve_ssn = fn;
    c->store_ssn = NULL;
    c->store_user = user;
    c->ssn_freq = count ? count : 1;
    /* Nothing is reserved yet: the next use reserves first. */
    c->ssn_stored = c->ssn;
    return 0;
}

int oscore_context_resume(struct oscore_context *c, uint64_t stored_mark)
{
    if (!c)
        return OSCORE_ERR_INVALID;
    int rc = 0;
    if (stored_mark > OSCORE_SSN_MAX + 1) {
        /* A mark past the limit (a damaged store) says every sequence
         * number may have been used: a caller that ignores the error must
         * still not start again from a lower one. */
        stored_mark = OSCORE_SSN_MAX + 1;
        rc = OSCORE_ERR_SSN_EXHAUSTED;
    }
    if (stored_mark > c->ssn)
        c->ssn = stored_mark;
    c->ssn_stored = c->ssn;
    c->window_top = 0;
    c->window_bits = 0;
    c->flags &= (uint8_t) ~(CTX_WINDOW_STARTED | CTX_ECHO_ISSUED);
    c->flags |= CTX_NEED_ECHO;
    return rc;
}

int oscore_context_set_ssn(struct oscore_context *c, uint64_t ssn)
{
    if (!c || ssn < c->ssn)
        return OSCORE_ERR_INVALID;
    if (ssn > OSCORE_SSN_MAX)
        return OSCORE_ERR_SSN_EXHAUSTED;
    c->ssn = ssn;
    return 0;
}

uint64_t oscore_context_ssn(const struct oscore_context *c)
{
    return c->ssn;
}

size_t oscore_context_max_plaintext(const struct oscore_context *c)
{
    /* CCM's counter block holds the nonce and the message length in 15
     * bytes: a 13-byte nonce leaves 2 for the length (RFC 3610 Section 2,
     * the L = 16 bits of COSE's AES-CCM-16-*). GCM and ChaCha20/Poly1305
     * allow far more than OSCORE_MAX_MESSAGE. */
    if (c->aead_alg == EDHOC_COSE_AES_CCM_16_64_128 || c->aead_alg == EDHOC_COSE_AES_CCM_16_128_128)
        return 65535;
    return OSCORE_MAX_MESSAGE;
}

const uint8_t *oscore_context_id_context(const struct oscore_context *c, size_t *len)
{
    bool has = c && (c->flags & CTX_HAS_ID_CONTEXT);
    if (len)
        *len = has ? c->id_context_len : 0;
    return has ? c->id_context : NULL;
}

bool oscore_context_needs_echo(const struct oscore_context *c)
{
    return (c->flags & CTX_NEED_ECHO) != 0;
}

size_t oscore_context_sender_key(const struct oscore_context *c, const uint8_t **key)
{
    *key = c->sender_key;
    return c->key_len;
}

size_t oscore_context_recipient_key(const struct oscore_context *c, const uint8_t **key)
{
    *key = c->recipient_key;
    return c->key_len;
}

size_t oscore_context_common_iv(const struct oscore_context *c, const uint8_t **iv)
{
    *iv = c->common_iv;
    return c->nonce_len;
}
