/*
 * OSCORE (RFC 8613): context derivation, protect/unprotect of whole CoAP
 * messages, replay window, sequence-number persistence, Echo recovery.
 *
 * Hot path design: keys and the Common IV are derived once in
 * oscore_context_init(); a protect or unprotect is one CoAP parse, one
 * small CBOR AAD, one nonce XOR, one AEAD call and one copy of the
 * plaintext into (or out of) a stack buffer of OSCORE_MAX_PLAINTEXT bytes.
 * A larger plaintext (a body reassembled from blocks, up to
 * OSCORE_MAX_MESSAGE) takes the same path through a heap buffer of its own
 * size instead.
 *
 * Why a separate plaintext buffer at all, rather than sealing in place in
 * the caller's out buffer: the ops table (edhoc/crypto.h) does not promise
 * that aead_encrypt/aead_decrypt accept overlapping input and output, and
 * the timing wrappers and test tables stand in for the backend, so nothing
 * here may rely on one backend's in-place support. The copy costs little
 * next to the AEAD, and the allocation happens only above the fast path.
 */
#include "edhoc/oscore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/cbor.h"
#include "edhoc/coap_msg.h"
#include "oscore_internal.h"

/* The whole point of a fixed-size context is that a daemon can count its
 * memory per peer; keep it honest. */
_Static_assert(sizeof(struct oscore_context) <= 256, "OSCORE context grew past 256 bytes");

/* struct oscore_context.flags */
#define CTX_HAS_ID_CONTEXT 0x01u
#define CTX_WINDOW_STARTED 0x02u /* at least one request accepted */
#define CTX_NEED_ECHO 0x04u      /* replay window unknown (after resume) */
#define CTX_ECHO_ISSUED 0x08u    /* c->echo holds the value we sent */

/* struct oscore_binding.flags */
#define BIND_VALID 0x01u
#define BIND_OBSERVE 0x02u      /* the request registered an observation */
#define BIND_NONCE_USED 0x04u   /* server: a response reused the request nonce */
#define BIND_ANSWERED 0x08u     /* client: the (final) response was accepted */
#define BIND_HAVE_NOTIF 0x10u   /* client: notification_number is set */
#define BIND_NOPIV_NOTIF 0x20u  /* client: the one notification without Partial IV came */

#define MAX_OUTER_OPTS (COAP_MSG_MAX_OPTIONS + 2)
#define MAX_INNER_OPTS COAP_MSG_MAX_OPTIONS
#define MAX_OPTION_VALUE (1 + OSCORE_MAX_PIV + 1 + OSCORE_MAX_ID_CONTEXT + OSCORE_MAX_ID)
#define MAX_AAD 64

struct aead_info {
    int alg;
    uint8_t key_len, nonce_len, tag_len;
};

static const struct aead_info aeads[] = {
    {EDHOC_COSE_AES_CCM_16_64_128, 16, 13, 8},
    {EDHOC_COSE_AES_CCM_16_128_128, 16, 13, 16},
    {EDHOC_COSE_A128GCM, 16, 12, 16},
    {EDHOC_COSE_A256GCM, 32, 12, 16},
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
    case OSCORE_ERR_CONTEXT_NOT_FOUND: return "security context not found (kid / kid context mismatch)";
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
static int derive(const struct oscore_context *c, int hash_alg, const uint8_t *prk,
                  size_t prk_len, const uint8_t *id, size_t id_len, const char *type,
                  size_t out_len, uint8_t *out)
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
    if (!crypto || !p || !crypto->hkdf_extract || !crypto->hkdf_expand ||
        !crypto->aead_encrypt || !crypto->aead_decrypt)
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
                             p->master_salt_len, p->master_secret, p->master_secret_len,
                             prk) != 0)
        goto out;
    rc = derive(c, hash_alg, prk, prk_len, c->sender_id, c->sender_id_len, "Key",
                c->key_len, c->sender_key);
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
                              const uint8_t *recipient_id, size_t recipient_id_len,
                              int aead_alg, int hash_alg)
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

int oscore_context_set_persistence(struct oscore_context *c, oscore_store_ssn_fn fn,
                                   void *user, uint32_t ssn_freq)
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
    c->flags &= (uint8_t)~(CTX_WINDOW_STARTED | CTX_ECHO_ISSUED);
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
    if (c->aead_alg == EDHOC_COSE_AES_CCM_16_64_128 ||
        c->aead_alg == EDHOC_COSE_AES_CCM_16_128_128)
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

/* ---- Building blocks ---- */

int oscore_nonce(const struct oscore_context *c, const uint8_t *id, size_t id_len,
                 const uint8_t *piv, size_t piv_len, uint8_t *nonce)
{
    size_t n = c->nonce_len;
    if (id_len > n - 6 || piv_len > OSCORE_MAX_PIV || (id_len && !id) || (piv_len && !piv))
        return OSCORE_ERR_INVALID;
    memset(nonce, 0, n);
    nonce[0] = (uint8_t)id_len;
    if (id_len)
        memcpy(nonce + (n - 5 - id_len), id, id_len);
    if (piv_len)
        memcpy(nonce + (n - piv_len), piv, piv_len);
    for (size_t i = 0; i < n; i++)
        nonce[i] ^= c->common_iv[i];
    return 0;
}

long oscore_aad(int aead_alg, const uint8_t *request_kid, size_t kid_len,
                const uint8_t *request_piv, size_t piv_len, uint8_t *out, size_t cap)
{
    if (kid_len > OSCORE_MAX_ID || piv_len > OSCORE_MAX_PIV)
        return OSCORE_ERR_INVALID;
    /* aad_array = [1, [alg], request_kid, request_piv, options = h''] */
    uint8_t arr[32];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, arr, sizeof arr);
    edhoc_cbor_put_array(&w, 5);
    edhoc_cbor_put_uint(&w, 1);
    edhoc_cbor_put_array(&w, 1);
    edhoc_cbor_put_int(&w, aead_alg);
    edhoc_cbor_put_bstr(&w, request_kid, kid_len);
    edhoc_cbor_put_bstr(&w, request_piv, piv_len);
    edhoc_cbor_put_bstr(&w, NULL, 0);
    long arr_len = edhoc_cbor_writer_finish(&w);
    if (arr_len < 0)
        return OSCORE_ERR_INVALID;
    /* Enc_structure = ["Encrypt0", h'', external_aad = bstr .cbor aad_array] */
    edhoc_cbor_writer_init(&w, out, cap);
    edhoc_cbor_put_array(&w, 3);
    edhoc_cbor_put_tstr(&w, "Encrypt0", 8);
    edhoc_cbor_put_bstr(&w, NULL, 0);
    edhoc_cbor_put_bstr(&w, arr, (size_t)arr_len);
    long n = edhoc_cbor_writer_finish(&w);
    return n < 0 ? OSCORE_ERR_BUFFER : n;
}

size_t oscore_piv_encode(uint64_t ssn, uint8_t piv[OSCORE_MAX_PIV])
{
    if (ssn > OSCORE_SSN_MAX)
        return 0;
    size_t n = 1;
    while (n < OSCORE_MAX_PIV && (ssn >> (8 * n)) != 0)
        n++;
    for (size_t i = 0; i < n; i++)
        piv[i] = (uint8_t)(ssn >> (8 * (n - 1 - i)));
    return n;
}

static uint64_t piv_value(const uint8_t *piv, size_t len)
{
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++)
        v = v << 8 | piv[i];
    return v;
}

/* ---- OSCORE option ---- */

int oscore_option_parse(const uint8_t *v, size_t len, struct oscore_option *o)
{
    memset(o, 0, sizeof *o);
    if (len == 0)
        return 0;
    if (!v)
        return OSCORE_ERR_BAD_OPTION;
    uint8_t flags = v[0];
    /* Reserved bits, n = 6/7, and a lone all-zero flag byte (which must be
     * sent as an empty value) are malformed. */
    if ((flags & 0xe0) || (flags & 0x07) > 5 || flags == 0)
        return OSCORE_ERR_BAD_OPTION;
    size_t pos = 1;
    size_t n = flags & 0x07;
    if (n) {
        if (len - pos < n)
            return OSCORE_ERR_BAD_OPTION;
        o->piv = v + pos;
        o->piv_len = n;
        pos += n;
    }
    if (flags & 0x10) {
        if (len - pos < 1)
            return OSCORE_ERR_BAD_OPTION;
        size_t s = v[pos++];
        if (len - pos < s)
            return OSCORE_ERR_BAD_OPTION;
        o->has_kid_context = true;
        o->kid_context = v + pos;
        o->kid_context_len = s;
        pos += s;
    }
    if (flags & 0x08) {
        o->has_kid = true;
        o->kid = v + pos;
        o->kid_len = len - pos;
        pos = len;
    }
    if (pos != len)
        return OSCORE_ERR_BAD_OPTION;
    return 0;
}

long oscore_option_encode(const struct oscore_option *o, uint8_t *out, size_t cap)
{
    if (o->piv_len > OSCORE_MAX_PIV || (o->has_kid_context && o->kid_context_len > 255))
        return OSCORE_ERR_INVALID;
    uint8_t flags = (uint8_t)(o->piv_len | (o->has_kid ? 0x08 : 0) |
                              (o->has_kid_context ? 0x10 : 0));
    if (flags == 0)
        return 0;
    size_t need = 1 + o->piv_len + (o->has_kid_context ? 1 + o->kid_context_len : 0) +
                  (o->has_kid ? o->kid_len : 0);
    if (need > cap)
        return OSCORE_ERR_BUFFER;
    size_t pos = 0;
    out[pos++] = flags;
    if (o->piv_len) {
        memcpy(out + pos, o->piv, o->piv_len);
        pos += o->piv_len;
    }
    if (o->has_kid_context) {
        out[pos++] = (uint8_t)o->kid_context_len;
        if (o->kid_context_len)
            memcpy(out + pos, o->kid_context, o->kid_context_len);
        pos += o->kid_context_len;
    }
    if (o->has_kid && o->kid_len) {
        memcpy(out + pos, o->kid, o->kid_len);
        pos += o->kid_len;
    }
    return (long)pos;
}

/* The single OSCORE option of a parsed message. */
static int find_oscore_option(const struct coap_msg *m, struct oscore_option *o)
{
    const struct coap_option *found = NULL;
    for (size_t i = 0; i < m->option_count; i++) {
        if (m->options[i].number == COAP_OPT_OSCORE) {
            if (found)
                return OSCORE_ERR_BAD_OPTION; /* not repeatable */
            found = &m->options[i];
        }
    }
    if (!found)
        return OSCORE_ERR_NOT_OSCORE;
    return oscore_option_parse(found->value, found->len, o);
}

int oscore_message_option(const uint8_t *msg, size_t len, struct oscore_option *o)
{
    struct coap_msg m;
    if (!msg || !o || edhoc_coap_msg_parse(msg, len, &m) != 0)
        return OSCORE_ERR_MALFORMED;
    return find_oscore_option(&m, o);
}

/* ---- Option classes (Section 4.1) ---- */

unsigned oscore_option_class(uint16_t number)
{
    switch (number) {
    /* Figure 5: U only. */
    case COAP_OPT_URI_HOST:
    case COAP_OPT_URI_PORT:
    case COAP_OPT_OSCORE:
    case COAP_OPT_PROXY_URI:
    case COAP_OPT_PROXY_SCHEME:
        return OSCORE_CLASS_U;
    /* Figure 5: E and U. */
    case COAP_OPT_OBSERVE:
    case COAP_OPT_MAX_AGE:
    case COAP_OPT_BLOCK2:
    case COAP_OPT_BLOCK1:
    case COAP_OPT_SIZE2:
    case COAP_OPT_SIZE1:
    case COAP_OPT_NO_RESPONSE:
    /* RFC 9175 Section 2.2.1: Echo "MAY be an Inner or Outer option";
     * Section 3.2.1: Request-Tag "is both a class E and a class U option". */
    case COAP_OPT_ECHO:
    case COAP_OPT_REQUEST_TAG:
        return OSCORE_CLASS_E | OSCORE_CLASS_U;
    /* Figure 5's E-only rows, and Section 4.1: "Options that are unknown
     * or for which OSCORE processing is not defined SHALL be processed as
     * Class E". */
    default:
        return OSCORE_CLASS_E;
    }
}

/* Class U only: kept outside, never encrypted. Everything else is sent
 * Inner (Observe is also outer, handled separately), and an outer
 * instance of an option that has an E column is discarded on receipt
 * (Sections 8.2 and 8.4 step 1). */
static bool is_outer_only(uint16_t number)
{
    return oscore_option_class(number) == OSCORE_CLASS_U;
}

/* Stable insertion sort by option number (lists are short and nearly sorted). */
static void sort_options(struct coap_option *opts, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct coap_option t = opts[i];
        size_t j = i;
        while (j > 0 && opts[j - 1].number > t.number) {
            opts[j] = opts[j - 1];
            j--;
        }
        opts[j] = t;
    }
}

static int hexval(uint8_t ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

struct split {
    struct coap_option outer[MAX_OUTER_OPTS];
    size_t n_outer;
    struct coap_option inner[MAX_INNER_OPTS];
    size_t n_inner;
    uint8_t scratch[1034]; /* percent-decoded Proxy-Uri path and query */
    size_t scratch_len;
    uint8_t proxy_uri[1034]; /* the outer Proxy-Uri: scheme://host[:port] */
};

static int add_opt(struct coap_option *list, size_t *n, size_t cap, uint16_t number,
                   const uint8_t *value, size_t len)
{
    if (*n == cap)
        return OSCORE_ERR_TOO_LARGE;
    list[*n].number = number;
    list[*n].len = (uint16_t)len;
    list[*n].value = value;
    (*n)++;
    return 0;
}

/* Append the percent-decoded [p, end) as an inner option. */
static int add_decoded(struct split *s, uint16_t number, const uint8_t *p, const uint8_t *end)
{
    uint8_t *dst = s->scratch + s->scratch_len;
    size_t room = sizeof s->scratch - s->scratch_len;
    size_t n = 0;
    while (p < end) {
        /* Uri-Path / Uri-Query are at most 255 bytes; checking before each
         * write also keeps every segment inside scratch. */
        if (n == 255 || n == room)
            return OSCORE_ERR_INVALID;
        if (*p == '%') {
            if (end - p < 3 || hexval(p[1]) < 0 || hexval(p[2]) < 0)
                return OSCORE_ERR_INVALID;
            dst[n++] = (uint8_t)(hexval(p[1]) << 4 | hexval(p[2]));
            p += 3;
        } else {
            dst[n++] = *p++;
        }
    }
    s->scratch_len += n;
    return add_opt(s->inner, &s->n_inner, MAX_INNER_OPTS, number, dst, n);
}

/* One option per part of [p, end) between separators (empty parts too). */
static int add_each_part(struct split *s, uint16_t number, const uint8_t *p, const uint8_t *end,
                         uint8_t sep)
{
    for (const uint8_t *q = p;; q++) {
        if (q == end || *q == sep) {
            int rc = add_decoded(s, number, p, q);
            if (rc || q == end)
                return rc;
            p = q + 1;
        }
    }
}

/* The default port of a URI scheme (RFC 7252 Sections 6.1 and 6.2, RFC
 * 8323 Sections 8.1-8.4, RFC 7230 Sections 2.7.1-2.7.2), 0 if unknown. */
static unsigned default_port(const uint8_t *scheme, size_t len)
{
    static const struct {
        const char *name;
        unsigned port;
    } ports[] = {{"coap", 5683},   {"coaps", 5684},   {"coap+tcp", 5683}, {"coaps+tcp", 5684},
                 {"coap+ws", 80},  {"coaps+ws", 443}, {"http", 80},       {"https", 443}};
    for (size_t i = 0; i < sizeof ports / sizeof ports[0]; i++) {
        if (strlen(ports[i].name) == len && memcmp(ports[i].name, scheme, len) == 0)
            return ports[i].port;
    }
    return 0;
}

static uint8_t ascii_lower(uint8_t ch)
{
    return ch >= 'A' && ch <= 'Z' ? (uint8_t)(ch - 'A' + 'a') : ch;
}

/* Section 4.1.3.3: "the client SHALL first decompose the Proxy-Uri value
 * ... into the Proxy-Scheme, Uri-Host, Uri-Port, Uri-Path, and Uri-Query
 * options according to Section 6.4 of [RFC7252]"; Uri-Path and Uri-Query
 * become Inner, and "The Proxy-Uri option of the OSCORE message SHALL be
 * set to the composition of Proxy-Scheme, Uri-Host, and Uri-Port options
 * as specified in Section 6.5 of [RFC7252]". Decomposing lowercases the
 * scheme and host (RFC 7252 Section 6.4 steps 3 and 5, RFC 3986 Section
 * 3.1) and reads the port; composing writes scheme "://" host, then ":"
 * and the port in decimal only when it is not the scheme's default
 * (Section 6.5 step 5). A userinfo has no option to go into, so a URI
 * with one is refused. */
static int split_proxy_uri(struct split *s, const struct coap_option *o)
{
    const uint8_t *v = o->value, *end = o->value + o->len;
    if (o->len > sizeof s->scratch)
        return OSCORE_ERR_INVALID;
    const uint8_t *p = v;
    while (p < end && *p != ':')
        p++;
    if (p == v || end - p < 3 || p[1] != '/' || p[2] != '/')
        return OSCORE_ERR_INVALID; /* not an absolute URI with an authority */
    size_t scheme_len = (size_t)(p - v);
    const uint8_t *host = p + 3;
    p = host;
    while (p < end && *p != '/' && *p != '?' && *p != '#')
        p++;
    const uint8_t *auth_end = p;
    /* The port follows the last ':' outside an IP-literal's brackets. */
    const uint8_t *host_end = auth_end, *port = NULL;
    bool in_brackets = false;
    for (const uint8_t *q = host; q < auth_end; q++) {
        if (*q == '@')
            return OSCORE_ERR_INVALID; /* userinfo */
        if (*q == '[')
            in_brackets = true;
        else if (*q == ']')
            in_brackets = false;
        else if (*q == ':' && !in_brackets) {
            host_end = q;
            port = q + 1;
        }
    }
    if (host_end == host || in_brackets)
        return OSCORE_ERR_INVALID; /* no host, or an unclosed IP-literal */
    unsigned long port_value = 0;
    bool has_port = port && port < auth_end; /* "host:" is no port (RFC 3986 3.2.3) */
    if (port) {
        for (const uint8_t *q = port; q < auth_end; q++) {
            if (*q < '0' || *q > '9')
                return OSCORE_ERR_INVALID;
            port_value = port_value * 10 + (unsigned long)(*q - '0');
            if (port_value > 65535)
                return OSCORE_ERR_INVALID;
        }
    }
    uint8_t *w = s->proxy_uri;
    for (size_t i = 0; i < scheme_len; i++)
        *w++ = ascii_lower(v[i]);
    memcpy(w, "://", 3);
    w += 3;
    for (const uint8_t *q = host; q < host_end; q++)
        *w++ = ascii_lower(*q);
    if (has_port && port_value != default_port(s->proxy_uri, scheme_len)) {
        char digits[8];
        int dn = snprintf(digits, sizeof digits, ":%lu", port_value);
        /* Never longer than the ":port" it replaces, leading zeros aside. */
        memcpy(w, digits, (size_t)dn);
        w += dn;
    }
    int rc = add_opt(s->outer, &s->n_outer, MAX_OUTER_OPTS, COAP_OPT_PROXY_URI, s->proxy_uri,
                     (size_t)(w - s->proxy_uri));
    if (rc)
        return rc;
    p = auth_end;
    for (const uint8_t *q = p; q < end; q++) {
        if (*q == '#')
            return OSCORE_ERR_INVALID; /* fragments are not allowed in CoAP URIs */
    }
    const uint8_t *path_end = p;
    while (path_end < end && *path_end != '?')
        path_end++;
    /* An empty path or "/" gives no Uri-Path (RFC 7252 Section 6.4). */
    if (path_end - p > 1) {
        rc = add_each_part(s, COAP_OPT_URI_PATH, p + 1, path_end, '/');
        if (rc)
            return rc;
    }
    if (path_end < end)
        return add_each_part(s, COAP_OPT_URI_QUERY, path_end + 1, end, '&');
    return 0;
}

static const uint8_t empty_value[1] = {0};

/* Sort the options of the original message into inner and outer lists. */
static int split_options(const struct coap_msg *m, bool is_request, struct split *s)
{
    s->n_outer = s->n_inner = s->scratch_len = 0;
    bool has_proxy_uri = false, has_uri_path_or_query = false;
    for (size_t i = 0; i < m->option_count; i++) {
        const struct coap_option *o = &m->options[i];
        int rc;
        if (o->number == COAP_OPT_OSCORE)
            return OSCORE_ERR_NOT_OSCORE; /* nested OSCORE is not supported */
        if (o->number == COAP_OPT_URI_PATH || o->number == COAP_OPT_URI_QUERY)
            has_uri_path_or_query = true;
        if (o->number == COAP_OPT_PROXY_URI && is_request) {
            /* Not repeatable (RFC 7252 Section 5.10); a second one would
             * also be decoded after the first in the shared scratch. */
            if (has_proxy_uri)
                return OSCORE_ERR_INVALID;
            has_proxy_uri = true;
            rc = split_proxy_uri(s, o);
        } else if (is_outer_only(o->number)) {
            rc = add_opt(s->outer, &s->n_outer, MAX_OUTER_OPTS, o->number, o->value, o->len);
        } else if (o->number == COAP_OPT_OBSERVE) {
            /* RFC 7641 Section 2 allows 0-3 bytes. A request copies the
             * value into both parts, so a longer one would also break the
             * growth OSCORE_MAX_OVERHEAD promises; a response keeps it
             * outside only, so its value is left to the sender. */
            if (is_request && o->len > 3)
                return OSCORE_ERR_INVALID;
            /* Requests: both carry the value. Notifications: the inner one
             * is empty, the outer one carries the value (4.1.3.5.2). */
            rc = add_opt(s->inner, &s->n_inner, MAX_INNER_OPTS, o->number,
                         is_request ? o->value : empty_value, is_request ? o->len : 0);
            if (rc == 0)
                rc = add_opt(s->outer, &s->n_outer, MAX_OUTER_OPTS, o->number, o->value,
                             o->len);
        } else {
            rc = add_opt(s->inner, &s->n_inner, MAX_INNER_OPTS, o->number, o->value, o->len);
        }
        if (rc)
            return rc;
    }
    /* RFC 7252 Section 5.10.2: Proxy-Uri excludes the Uri-* options. */
    if (has_proxy_uri && has_uri_path_or_query)
        return OSCORE_ERR_INVALID;
    sort_options(s->inner, s->n_inner);
    return 0;
}

/* ---- Sequence numbers ---- */

/* Make sure c->ssn may be used: below the limit, and covered by a stored
 * high-water mark when persistence is on (Appendix B.1.1, stored before
 * use, so a crash at any point never lets a restart go below it). */
static int reserve_ssn(struct oscore_context *c)
{
    if (c->ssn > OSCORE_SSN_MAX)
        return OSCORE_ERR_SSN_EXHAUSTED;
    if (c->reserve_ssn && c->ssn >= c->ssn_stored) {
        /* Another user of the context may have reserved the numbers after
         * ours: continue wherever the reservation starts. */
        uint64_t first = 0;
        if (c->reserve_ssn(c->store_user, c->ssn, c->ssn_freq, &first) != 0 || first < c->ssn)
            return OSCORE_ERR_PERSIST;
        if (first > OSCORE_SSN_MAX)
            return OSCORE_ERR_SSN_EXHAUSTED;
        c->ssn = first;
        c->ssn_stored = first + c->ssn_freq;
        if (c->ssn_stored > OSCORE_SSN_MAX + 1)
            c->ssn_stored = OSCORE_SSN_MAX + 1;
    }
    if (c->store_ssn && c->ssn >= c->ssn_stored) {
        uint64_t mark = c->ssn + c->ssn_freq;
        if (mark > OSCORE_SSN_MAX + 1)
            mark = OSCORE_SSN_MAX + 1;
        if (c->store_ssn(c->store_user, mark) != 0)
            return OSCORE_ERR_PERSIST;
        c->ssn_stored = mark;
    }
    return 0;
}

/* ---- Protect ---- */

struct seal {
    const uint8_t *oscore_value;
    size_t oscore_len;
    const uint8_t *nonce;
    const uint8_t *aad;
    size_t aad_len;
    uint8_t outer_code;
};

/* Write the OSCORE message: outer header of m, outer options with the
 * OSCORE option, payload = AEAD(plaintext). The plaintext is built in a
 * stack buffer when it fits (the per-message fast path: no allocation),
 * else in a heap buffer of exactly its size; both are wiped on every exit,
 * since the plaintext may be secret. */
static long seal_message(const struct oscore_context *c, const struct coap_msg *m,
                         struct split *s, const struct seal *z, uint8_t *out, size_t cap)
{
    uint8_t small[OSCORE_MAX_PLAINTEXT];
    uint8_t *heap = NULL;
    size_t heap_len = 0;
    uint8_t *pt = small;
    size_t small_used = 0; /* bytes of small that may hold plaintext */
    size_t pt_len = 0;
    long rc;
    long body = COAP_MSG_ERR_BUFFER;
    /* A payload that cannot fit skips the attempt instead of being copied
     * twice. */
    if (m->payload_len <= sizeof small - 2) {
        small[0] = m->code;
        small_used = sizeof small; /* the encoder may stop anywhere */
        body = edhoc_coap_msg_encode_body(s->inner, s->n_inner, m->payload, m->payload_len,
                                    small + 1, sizeof small - 1);
        if (body >= 0)
            small_used = 1 + (size_t)body;
    }
    if (body == COAP_MSG_ERR_BUFFER) {
        long need = edhoc_coap_msg_encode_body(s->inner, s->n_inner, m->payload, m->payload_len,
                                         NULL, 0);
        if (need < 0) {
            rc = OSCORE_ERR_INVALID;
            goto out;
        }
        /* Every bound is checked before allocating, so a message that
         * cannot be sent costs no allocation. */
        if ((size_t)need >= oscore_context_max_plaintext(c)) {
            rc = OSCORE_ERR_TOO_LARGE;
            goto out;
        }
        pt_len = 1 + (size_t)need;
        if (cap < 4u + m->token_len + 1 + pt_len + c->tag_len) {
            rc = OSCORE_ERR_BUFFER;
            goto out;
        }
        heap = malloc(pt_len);
        if (!heap) {
            rc = OSCORE_ERR_NOMEM;
            goto out;
        }
        heap_len = pt_len;
        pt = heap;
        pt[0] = m->code;
        body = edhoc_coap_msg_encode_body(s->inner, s->n_inner, m->payload, m->payload_len, pt + 1,
                                    pt_len - 1);
    }
    if (body < 0) {
        rc = OSCORE_ERR_INVALID;
        goto out;
    }
    pt_len = 1 + (size_t)body;

    /* The receiver parses at most COAP_MSG_MAX_OPTIONS options; refuse to
     * send what it could not read. */
    if (s->n_outer >= COAP_MSG_MAX_OPTIONS ||
        add_opt(s->outer, &s->n_outer, MAX_OUTER_OPTS, COAP_OPT_OSCORE, z->oscore_value,
                z->oscore_len) != 0) {
        rc = OSCORE_ERR_TOO_LARGE;
        goto out;
    }
    sort_options(s->outer, s->n_outer);

    size_t head = 4u + m->token_len;
    if (cap < head) {
        rc = OSCORE_ERR_BUFFER;
        goto out;
    }
    out[0] = (uint8_t)(0x40 | m->type << 4 | m->token_len);
    out[1] = z->outer_code;
    out[2] = (uint8_t)(m->mid >> 8);
    out[3] = (uint8_t)m->mid;
    memcpy(out + 4, m->token, m->token_len);
    long opts = edhoc_coap_msg_encode_body(s->outer, s->n_outer, NULL, 0, out + head, cap - head);
    if (opts < 0) {
        rc = opts == COAP_MSG_ERR_BUFFER ? OSCORE_ERR_BUFFER : OSCORE_ERR_INVALID;
        goto out;
    }
    size_t pos = head + (size_t)opts;
    if (cap - pos < 1 + pt_len + c->tag_len) {
        rc = OSCORE_ERR_BUFFER;
        goto out;
    }
    out[pos++] = 0xff;
    if (c->crypto->aead_encrypt(c->aead_alg, c->sender_key, z->nonce, z->aad, z->aad_len, pt,
                                pt_len, out + pos) != 0) {
        rc = OSCORE_ERR_CRYPTO;
        goto out;
    }
    rc = (long)(pos + pt_len + c->tag_len);
out:
    edhoc_wipe(small, small_used);
    if (heap) {
        edhoc_wipe(heap, heap_len);
        free(heap);
    }
    return rc;
}

long oscore_protect_request(struct oscore_context *c, const uint8_t *msg, size_t len,
                            uint8_t *out, size_t cap, struct oscore_binding *b)
{
    if (!c || !c->crypto || !msg || !out || !b)
        return OSCORE_ERR_INVALID;
    struct coap_msg m;
    int rc = edhoc_coap_msg_parse(msg, len, &m);
    if (rc)
        return rc == COAP_MSG_ERR_TOO_MANY ? OSCORE_ERR_TOO_LARGE : OSCORE_ERR_MALFORMED;
    if (!edhoc_coap_code_is_request(m.code))
        return OSCORE_ERR_INVALID;
    struct split s;
    rc = split_options(&m, true, &s);
    if (rc)
        return rc;
    rc = reserve_ssn(c);
    if (rc)
        return rc;

    uint8_t piv[OSCORE_MAX_PIV];
    size_t piv_len = oscore_piv_encode(c->ssn, piv);
    struct oscore_option opt = {
        .piv = piv,
        .piv_len = piv_len,
        .has_kid = true,
        .kid = c->sender_id,
        .kid_len = c->sender_id_len,
        .has_kid_context = (c->flags & CTX_HAS_ID_CONTEXT) != 0,
        .kid_context = c->id_context,
        .kid_context_len = c->id_context_len,
    };
    uint8_t optval[MAX_OPTION_VALUE];
    long optlen = oscore_option_encode(&opt, optval, sizeof optval);
    uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE];
    uint8_t aad[MAX_AAD];
    long aad_len = oscore_aad(c->aead_alg, c->sender_id, c->sender_id_len, piv, piv_len, aad,
                              sizeof aad);
    if (optlen < 0 || aad_len < 0 ||
        oscore_nonce(c, c->sender_id, c->sender_id_len, piv, piv_len, nonce) != 0)
        return OSCORE_ERR_INVALID;

    const struct coap_option *obs = edhoc_coap_msg_find_option(&m, COAP_OPT_OBSERVE);
    struct seal z = {
        .oscore_value = optval,
        .oscore_len = (size_t)optlen,
        .nonce = nonce,
        .aad = aad,
        .aad_len = (size_t)aad_len,
        .outer_code = obs ? COAP_CODE_FETCH : COAP_CODE_POST,
    };
    long n = seal_message(c, &m, &s, &z, out, cap);
    if (n < 0)
        return n;

    c->ssn++;
    memset(b, 0, sizeof *b);
    b->flags = BIND_VALID;
    uint32_t obs_value = 1;
    if (obs && edhoc_coap_option_uint(obs, &obs_value) == 0 && obs_value == 0)
        b->flags |= BIND_OBSERVE;
    b->kid_len = c->sender_id_len;
    memcpy(b->kid, c->sender_id, c->sender_id_len);
    b->piv_len = (uint8_t)piv_len;
    memcpy(b->piv, piv, piv_len);
    return n;
}

static int open_outer(const uint8_t *msg, size_t len, struct coap_msg *m,
                      struct oscore_option *opt);

int oscore_binding_from_request(struct oscore_binding *b, const uint8_t *protected_request,
                                size_t len)
{
    if (!b)
        return OSCORE_ERR_INVALID;
    struct coap_msg m;
    struct oscore_option opt;
    int rc = open_outer(protected_request, len, &m, &opt);
    if (rc)
        return rc;
    if (!edhoc_coap_code_is_request(m.code))
        return OSCORE_ERR_MALFORMED;
    if (opt.piv_len == 0 || !opt.has_kid || opt.kid_len > OSCORE_MAX_ID)
        return OSCORE_ERR_BAD_OPTION;
    memset(b, 0, sizeof *b);
    b->flags = BIND_VALID;
    b->kid_len = (uint8_t)opt.kid_len;
    memcpy(b->kid, opt.kid, opt.kid_len);
    b->piv_len = (uint8_t)opt.piv_len;
    memcpy(b->piv, opt.piv, opt.piv_len);
    /* The outer Observe carries the request's value (4.1.3.5.1). */
    const struct coap_option *obs = edhoc_coap_msg_find_option(&m, COAP_OPT_OBSERVE);
    uint32_t obs_value = 1;
    if (obs && edhoc_coap_option_uint(obs, &obs_value) == 0 && obs_value == 0)
        b->flags |= BIND_OBSERVE;
    return 0;
}

long oscore_protect_response(struct oscore_context *c, struct oscore_binding *b,
                             const uint8_t *msg, size_t len, bool with_piv, uint8_t *out,
                             size_t cap)
{
    return oscore_protect_response_kid_context(c, b, msg, len, with_piv, NULL, 0, out, cap);
}

long oscore_protect_response_kid_context(struct oscore_context *c, struct oscore_binding *b,
                                         const uint8_t *msg, size_t len, bool with_piv,
                                         const uint8_t *kid_context, size_t kid_context_len,
                                         uint8_t *out, size_t cap)
{
    if (kid_context_len > OSCORE_MAX_ID_CONTEXT || (kid_context_len && !kid_context))
        return OSCORE_ERR_INVALID;
    if (!c || !c->crypto || !b || !msg || !out || !(b->flags & BIND_VALID) ||
        b->kid_len > OSCORE_MAX_ID || b->piv_len == 0 || b->piv_len > OSCORE_MAX_PIV)
        return OSCORE_ERR_INVALID;
    struct coap_msg m;
    int rc = edhoc_coap_msg_parse(msg, len, &m);
    if (rc)
        return rc == COAP_MSG_ERR_TOO_MANY ? OSCORE_ERR_TOO_LARGE : OSCORE_ERR_MALFORMED;
    /* Response classes 2-5 only: the receiver rejects anything else. */
    if ((m.code >> 5) < 2 || (m.code >> 5) > 5)
        return OSCORE_ERR_INVALID;
    struct split s;
    rc = split_options(&m, false, &s);
    if (rc)
        return rc;

    /* The request's nonce may protect one response only: reusing it again
     * under the same key would repeat a nonce. */
    bool own_piv = with_piv || (b->flags & BIND_NONCE_USED);
    uint8_t piv[OSCORE_MAX_PIV];
    size_t piv_len = 0;
    uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE];
    if (own_piv) {
        rc = reserve_ssn(c);
        if (rc)
            return rc;
        piv_len = oscore_piv_encode(c->ssn, piv);
        rc = oscore_nonce(c, c->sender_id, c->sender_id_len, piv, piv_len, nonce);
    } else {
        rc = oscore_nonce(c, b->kid, b->kid_len, b->piv, b->piv_len, nonce);
    }
    if (rc)
        return rc;
    struct oscore_option opt = {
        .piv = piv,
        .piv_len = piv_len,
        .has_kid_context = kid_context != NULL,
        .kid_context = kid_context,
        .kid_context_len = kid_context_len,
    };
    uint8_t optval[MAX_OPTION_VALUE];
    long optlen = oscore_option_encode(&opt, optval, sizeof optval);
    uint8_t aad[MAX_AAD];
    long aad_len = oscore_aad(c->aead_alg, b->kid, b->kid_len, b->piv, b->piv_len, aad,
                              sizeof aad);
    if (optlen < 0 || aad_len < 0)
        return OSCORE_ERR_INVALID;
    struct seal z = {
        .oscore_value = optval,
        .oscore_len = (size_t)optlen,
        .nonce = nonce,
        .aad = aad,
        .aad_len = (size_t)aad_len,
        .outer_code = edhoc_coap_msg_find_option(&m, COAP_OPT_OBSERVE) ? COAP_CODE_CONTENT
                                                                  : COAP_CODE_CHANGED,
    };
    long n = seal_message(c, &m, &s, &z, out, cap);
    if (n < 0)
        return n;
    if (own_piv)
        c->ssn++;
    else
        b->flags |= BIND_NONCE_USED;
    return n;
}

/* ---- Unprotect ---- */

/* A decrypted plaintext: in small for the common sizes (no allocation per
 * message), else in a heap block of pt_len bytes. Every successful
 * open_payload is paired with opened_release, which wipes it. */
struct opened {
    uint8_t *pt;
    size_t pt_len;
    struct coap_msg inner; /* code, options and payload point into pt */
    uint8_t small[OSCORE_MAX_PLAINTEXT];
};

static void opened_release(struct opened *o)
{
    if (!o->pt)
        return;
    edhoc_wipe(o->pt, o->pt_len);
    if (o->pt != o->small)
        free(o->pt);
    o->pt = NULL;
    o->pt_len = 0;
}

/* Decrypt the payload of outer and parse the plaintext. */
static int open_payload(const struct oscore_context *c, const uint8_t *key,
                        const struct coap_msg *outer, const uint8_t *nonce,
                        const uint8_t *aad, size_t aad_len, bool is_request,
                        struct opened *o)
{
    /* A payload must hold at least the tag and the code byte. */
    if (!outer->payload || outer->payload_len < (size_t)c->tag_len + 1)
        return OSCORE_ERR_BAD_OPTION;
    size_t pt_len = outer->payload_len - c->tag_len;
    o->pt = NULL;
    o->pt_len = 0;
    if (pt_len <= sizeof o->small) {
        o->pt = o->small;
    } else {
        /* No sender could have sealed more (and for CCM the AEAD cannot):
         * refuse before allocating or decrypting. */
        if (pt_len > oscore_context_max_plaintext(c))
            return OSCORE_ERR_TOO_LARGE;
        o->pt = malloc(pt_len);
        if (!o->pt)
            return OSCORE_ERR_NOMEM;
    }
    o->pt_len = pt_len;
    int rc = c->crypto->aead_decrypt(c->aead_alg, key, nonce, aad, aad_len, outer->payload,
                                     outer->payload_len, o->pt);
    if (rc != 0) {
        /* The backend wipes on failure; the release wipes again in case a
         * backend does not. */
        opened_release(o);
        return rc == EDHOC_CRYPTO_ERR_AUTH ? OSCORE_ERR_DECRYPT : OSCORE_ERR_CRYPTO;
    }
    uint8_t code = o->pt[0];
    bool code_ok = is_request ? edhoc_coap_code_is_request(code)
                              : ((code >> 5) >= 2 && (code >> 5) <= 5);
    if (!code_ok || edhoc_coap_msg_parse_body(o->pt + 1, pt_len - 1, &o->inner) != 0 ||
        edhoc_coap_msg_find_option(&o->inner, COAP_OPT_OSCORE)) {
        opened_release(o);
        return OSCORE_ERR_INNER;
    }
    o->inner.code = code;
    return 0;
}

/* The decrypted message: outer header and token, inner code, the outer
 * Class U options merged with the inner options, inner payload. Outer
 * Class E options (and the OSCORE option) are discarded (8.2/8.4 step 1). */
static long assemble(const struct coap_msg *outer, const struct opened *o, uint8_t *out,
                     size_t cap)
{
    struct coap_option opts[2 * COAP_MSG_MAX_OPTIONS];
    size_t n = 0;
    for (size_t i = 0; i < outer->option_count; i++) {
        /* The OSCORE option itself is consumed here (Section 8.2 step 1). */
        if (is_outer_only(outer->options[i].number) &&
            outer->options[i].number != COAP_OPT_OSCORE)
            opts[n++] = outer->options[i];
    }
    for (size_t i = 0; i < o->inner.option_count; i++)
        opts[n++] = o->inner.options[i];
    sort_options(opts, n);
    size_t head = 4u + outer->token_len;
    if (cap < head)
        return OSCORE_ERR_BUFFER;
    out[0] = (uint8_t)(0x40 | outer->type << 4 | outer->token_len);
    out[1] = o->inner.code;
    out[2] = (uint8_t)(outer->mid >> 8);
    out[3] = (uint8_t)outer->mid;
    memcpy(out + 4, outer->token, outer->token_len);
    long body = edhoc_coap_msg_encode_body(opts, n, o->inner.payload, o->inner.payload_len,
                                     out + head, cap - head);
    if (body < 0)
        return body == COAP_MSG_ERR_BUFFER ? OSCORE_ERR_BUFFER : OSCORE_ERR_INNER;
    return (long)head + body;
}

static int window_check(const struct oscore_context *c, uint64_t p)
{
    if (!(c->flags & CTX_WINDOW_STARTED) || p > c->window_top)
        return 0;
    uint64_t diff = c->window_top - p;
    if (diff >= c->window_size || (c->window_bits >> diff) & 1)
        return OSCORE_ERR_REPLAY;
    return 0;
}

static void window_update(struct oscore_context *c, uint64_t p)
{
    if (!(c->flags & CTX_WINDOW_STARTED)) {
        c->window_top = p;
        c->window_bits = 1;
        c->flags |= CTX_WINDOW_STARTED;
    } else if (p > c->window_top) {
        uint64_t shift = p - c->window_top;
        c->window_bits = shift >= 64 ? 0 : c->window_bits << shift;
        c->window_bits |= 1;
        c->window_top = p;
    } else {
        c->window_bits |= UINT64_C(1) << (c->window_top - p);
    }
}

/* Parse the message and its OSCORE option; common to both directions. */
static int open_outer(const uint8_t *msg, size_t len, struct coap_msg *m,
                      struct oscore_option *opt)
{
    int rc = edhoc_coap_msg_parse(msg, len, m);
    if (rc)
        return rc == COAP_MSG_ERR_TOO_MANY ? OSCORE_ERR_TOO_LARGE : OSCORE_ERR_MALFORMED;
    rc = find_oscore_option(m, opt);
    if (rc)
        return rc;
    /* An OSCORE message without payload is malformed (Section 2). */
    if (!m->payload)
        return OSCORE_ERR_BAD_OPTION;
    return 0;
}

long oscore_unprotect_request(struct oscore_context *c, const uint8_t *msg, size_t len,
                              uint8_t *out, size_t cap, struct oscore_binding *b)
{
    if (!c || !c->crypto || !msg || !out || !b)
        return OSCORE_ERR_INVALID;
    struct coap_msg m;
    struct oscore_option opt;
    int rc = open_outer(msg, len, &m, &opt);
    if (rc)
        return rc;
    if (!edhoc_coap_code_is_request(m.code))
        return OSCORE_ERR_MALFORMED;
    if (opt.piv_len == 0 || !opt.has_kid)
        return OSCORE_ERR_BAD_OPTION;
    if (opt.kid_len != c->recipient_id_len ||
        (opt.kid_len && memcmp(opt.kid, c->recipient_id, opt.kid_len) != 0))
        return OSCORE_ERR_CONTEXT_NOT_FOUND;
    if (opt.has_kid_context &&
        (!(c->flags & CTX_HAS_ID_CONTEXT) || opt.kid_context_len != c->id_context_len ||
         (opt.kid_context_len &&
          memcmp(opt.kid_context, c->id_context, opt.kid_context_len) != 0)))
        return OSCORE_ERR_CONTEXT_NOT_FOUND;
    uint64_t p = piv_value(opt.piv, opt.piv_len);
    bool need_echo = (c->flags & CTX_NEED_ECHO) != 0;
    if (!need_echo) {
        rc = window_check(c, p);
        if (rc)
            return rc;
    }

    uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE];
    uint8_t aad[MAX_AAD];
    long aad_len = oscore_aad(c->aead_alg, opt.kid, opt.kid_len, opt.piv, opt.piv_len, aad,
                              sizeof aad);
    if (aad_len < 0 || oscore_nonce(c, opt.kid, opt.kid_len, opt.piv, opt.piv_len, nonce))
        return OSCORE_ERR_BAD_OPTION;
    struct opened o;
    rc = open_payload(c, c->recipient_key, &m, nonce, aad, (size_t)aad_len, true, &o);
    if (rc)
        return rc;

    memset(b, 0, sizeof *b);
    b->flags = BIND_VALID;
    b->kid_len = (uint8_t)opt.kid_len;
    memcpy(b->kid, opt.kid, opt.kid_len);
    b->piv_len = (uint8_t)opt.piv_len;
    memcpy(b->piv, opt.piv, opt.piv_len);
    const struct coap_option *obs = edhoc_coap_msg_find_option(&o.inner, COAP_OPT_OBSERVE);
    uint32_t obs_value = 1;
    if (obs && edhoc_coap_option_uint(obs, &obs_value) == 0 && obs_value == 0)
        b->flags |= BIND_OBSERVE;

    if (need_echo) {
        /* Appendix B.1.2: only a request echoing our challenge proves to be
         * fresh; its Partial IV becomes the lower edge of the window. */
        const struct coap_option *echo = edhoc_coap_msg_find_option(&o.inner, COAP_OPT_ECHO);
        if (!(c->flags & CTX_ECHO_ISSUED) || !echo || echo->len != OSCORE_ECHO_LEN ||
            !edhoc_ct_equal(echo->value, c->echo, OSCORE_ECHO_LEN)) {
            opened_release(&o);
            return OSCORE_ERR_ECHO_REQUIRED;
        }
    }
    long n = assemble(&m, &o, out, cap);
    opened_release(&o);
    if (n < 0)
        return n;
    if (need_echo) {
        c->window_top = p;
        c->window_bits = c->window_size >= 64 ? ~UINT64_C(0)
                                              : (UINT64_C(1) << c->window_size) - 1;
        c->flags |= CTX_WINDOW_STARTED;
        c->flags &= (uint8_t)~(CTX_NEED_ECHO | CTX_ECHO_ISSUED);
        edhoc_wipe(c->echo, sizeof c->echo);
    } else {
        window_update(c, p);
    }
    return n;
}

long oscore_unprotect_response(struct oscore_context *c, struct oscore_binding *b,
                               const uint8_t *msg, size_t len, uint8_t *out, size_t cap)
{
    return oscore_unprotect_response_b2(c, b, msg, len, out, cap, false);
}

long oscore_unprotect_response_b2(struct oscore_context *c, struct oscore_binding *b,
                                  const uint8_t *msg, size_t len, uint8_t *out, size_t cap,
                                  bool response1)
{
    if (!c || !c->crypto || !b || !msg || !out || !(b->flags & BIND_VALID) ||
        b->kid_len > OSCORE_MAX_ID || b->piv_len == 0 || b->piv_len > OSCORE_MAX_PIV)
        return OSCORE_ERR_INVALID;
    struct coap_msg m;
    struct oscore_option opt;
    int rc = open_outer(msg, len, &m, &opt);
    if (rc)
        return rc;
    if (m.code == COAP_CODE_EMPTY || edhoc_coap_code_is_request(m.code))
        return OSCORE_ERR_MALFORMED;
    if ((b->flags & BIND_ANSWERED) && !(b->flags & BIND_OBSERVE))
        return OSCORE_ERR_REPLAY;
    /* Only response #1 of Appendix B.2 carries a 'kid context', and it is
     * protected with a context derived from it, never with the request's:
     * say so instead of failing to decrypt. */
    if (opt.has_kid_context && !response1)
        return OSCORE_ERR_KID_CONTEXT;

    uint8_t nonce[EDHOC_CRYPTO_MAX_NONCE];
    if (opt.piv_len)
        rc = oscore_nonce(c, c->recipient_id, c->recipient_id_len, opt.piv, opt.piv_len,
                          nonce);
    else
        rc = oscore_nonce(c, b->kid, b->kid_len, b->piv, b->piv_len, nonce);
    if (rc)
        return OSCORE_ERR_INVALID;
    uint8_t aad[MAX_AAD];
    long aad_len = oscore_aad(c->aead_alg, b->kid, b->kid_len, b->piv, b->piv_len, aad,
                              sizeof aad);
    if (aad_len < 0)
        return OSCORE_ERR_INVALID;
    struct opened o;
    rc = open_payload(c, c->recipient_key, &m, nonce, aad, (size_t)aad_len, false, &o);
    if (rc)
        return rc;

    /* Section 7.4.1 / 8.4.2: notifications are ordered by Partial IV; at
     * most one comes without one, and it counts as the oldest. */
    bool notification = edhoc_coap_msg_find_option(&o.inner, COAP_OPT_OBSERVE) != NULL;
    uint64_t p = piv_value(opt.piv, opt.piv_len);
    if (notification) {
        if (!(b->flags & BIND_OBSERVE))
            rc = OSCORE_ERR_UNEXPECTED;
        else if (opt.piv_len == 0 &&
                 (b->flags & (BIND_NOPIV_NOTIF | BIND_HAVE_NOTIF | BIND_ANSWERED)))
            rc = OSCORE_ERR_REPLAY;
        else if (opt.piv_len && (b->flags & BIND_HAVE_NOTIF) && p <= b->notification_number)
            rc = OSCORE_ERR_REPLAY;
    } else if (b->flags & BIND_ANSWERED) {
        rc = OSCORE_ERR_REPLAY;
    }
    if (rc) {
        opened_release(&o);
        return rc;
    }
    long n = assemble(&m, &o, out, cap);
    opened_release(&o);
    if (n < 0)
        return n;
    if (notification) {
        if (opt.piv_len) {
            b->notification_number = p;
            b->flags |= BIND_HAVE_NOTIF;
        } else {
            b->flags |= BIND_NOPIV_NOTIF;
        }
    } else {
        /* A final (non-notification) response ends the exchange. */
        b->flags |= BIND_ANSWERED;
        b->flags &= (uint8_t)~BIND_OBSERVE;
    }
    return n;
}

/* Header fields of the answer to a request: CON is answered by a
 * piggybacked ACK, NON by a NON. */
static int answer_header(const uint8_t *request, size_t request_len, struct coap_msg *r)
{
    if (!request || edhoc_coap_msg_parse(request, request_len, r) != 0 ||
        !edhoc_coap_code_is_request(r->code))
        return OSCORE_ERR_MALFORMED;
    if (r->type == COAP_TYPE_CON)
        r->type = COAP_TYPE_ACK;
    else if (r->type != COAP_TYPE_NON)
        return OSCORE_ERR_MALFORMED;
    r->option_count = 0;
    r->payload = NULL;
    r->payload_len = 0;
    return 0;
}

long oscore_protect_echo_challenge(struct oscore_context *c, struct oscore_binding *b,
                                   const uint8_t *request, size_t request_len, uint8_t *out,
                                   size_t cap)
{
    if (!c || !c->crypto || !b || !out || !(b->flags & BIND_VALID) || !c->crypto->random)
        return OSCORE_ERR_INVALID;
    struct coap_msg r;
    int rc = answer_header(request, request_len, &r);
    if (rc)
        return rc;
    /* Keep the value already sent if the first answer got lost, so a
     * retry with it still works; otherwise draw a fresh one. */
    if (!(c->flags & CTX_ECHO_ISSUED)) {
        if (c->crypto->random(c->crypto->rng_ctx, c->echo, sizeof c->echo) != 0)
            return OSCORE_ERR_CRYPTO;
        c->flags |= CTX_ECHO_ISSUED;
    }
    r.code = COAP_CODE_UNAUTHORIZED;
    edhoc_coap_msg_add_option(&r, COAP_OPT_ECHO, c->echo, sizeof c->echo);
    uint8_t inner[4 + COAP_MSG_MAX_TOKEN + 4 + OSCORE_ECHO_LEN];
    long ilen = edhoc_coap_msg_encode(&r, inner, sizeof inner);
    if (ilen < 0)
        return OSCORE_ERR_INVALID;
    /* The server's own Partial IV is mandatory here (B.1.2). */
    return oscore_protect_response(c, b, inner, (size_t)ilen, true, out, cap);
}

long oscore_error_response(int err, const uint8_t *request, size_t request_len, uint8_t *out,
                           size_t cap)
{
    const char *diag;
    uint8_t code;
    switch (err) {
    case OSCORE_ERR_BAD_OPTION:
        code = COAP_CODE_BAD_OPTION;
        diag = "Failed to decode COSE";
        break;
    case OSCORE_ERR_CONTEXT_NOT_FOUND:
        code = COAP_CODE_UNAUTHORIZED;
        diag = "Security context not found";
        break;
    case OSCORE_ERR_DECRYPT:
    case OSCORE_ERR_INNER:
        code = COAP_CODE_BAD_REQUEST;
        diag = "Decryption failed";
        break;
    case OSCORE_ERR_REPLAY:
        code = COAP_CODE_UNAUTHORIZED;
        diag = "Replay detected";
        break;
    case OSCORE_ERR_KID_CONTEXT:
    case OSCORE_ERR_ID_CONTEXT_TOO_LONG:
        /* Section 8.2 step 2: no context for this kid and kid context. */
        code = COAP_CODE_UNAUTHORIZED;
        diag = "Security context not found";
        break;
    case OSCORE_ERR_BUSY:
        /* Appendix B.2.1: "If the server receives a request #1 and is not
         * capable of executing it then it may respond with an unprotected
         * 5.03 (Service Unavailable) error message." */
        code = COAP_CODE(5, 3);
        diag = "Service Unavailable";
        break;
    default:
        return OSCORE_ERR_INVALID;
    }
    if (!out)
        return OSCORE_ERR_INVALID;
    struct coap_msg r;
    int rc = answer_header(request, request_len, &r);
    if (rc)
        return rc;
    r.code = code;
    /* Outer Max-Age 0 (an empty uint): the error must not be cached by
     * intermediaries (Section 7.4, 8.2). */
    edhoc_coap_msg_add_option(&r, COAP_OPT_MAX_AGE, NULL, 0);
    r.payload = (const uint8_t *)diag;
    r.payload_len = strlen(diag);
    long n = edhoc_coap_msg_encode(&r, out, cap);
    return n < 0 ? OSCORE_ERR_BUFFER : n;
}
