/* Opening the messages of a capture with a key log (bytes_decrypt.h).
 * The key schedule steps are RFC 9528's: KEYSTREAM_2 = EDHOC_KDF(PRK_2e,
 * 0, TH_2, plaintext_length) (Section 5.3.2), K_3/IV_3 = EDHOC_KDF(
 * PRK_3e2m, 3/4, TH_3, ...) and K_4/IV_4 = EDHOC_KDF(PRK_4e3m, 8/9,
 * TH_4, ...) with A = ["Encrypt0", h'', TH_x] (Sections 5.4.3, 5.5.2). */
#include "bytes_decrypt.h"

#include "edhoc/cbor.h"
#include "edhoc/oscore.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COAP_OPT_EDHOC_NUMBER 21 /* RFC 9668 */

const char *bytes_dec_error_name(enum bytes_dec_error e)
{
    static const char *const names[] = {
        [BYTES_DEC_ERR_NONE] = "none",
        [BYTES_DEC_ERR_NO_ROW] = "no_row",
        [BYTES_DEC_ERR_TAG] = "tag_mismatch",
        [BYTES_DEC_ERR_TH_MISMATCH] = "th_mismatch",
        [BYTES_DEC_ERR_PLAINTEXT] = "bad_plaintext",
        [BYTES_DEC_ERR_MALFORMED] = "malformed",
        [BYTES_DEC_ERR_UNAVAILABLE] = "block_wise",
        [BYTES_DEC_ERR_UNSUPPORTED] = "unsupported",
    };
    return (unsigned)e < sizeof names / sizeof names[0] ? names[e] : "none";
}

static void fail(struct bytes_dec_msg *m, enum bytes_dec_status st, enum bytes_dec_error e,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void fail(struct bytes_dec_msg *m, enum bytes_dec_status st, enum bytes_dec_error e,
                 const char *fmt, ...)
{
    m->status = st;
    m->error = e;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->error_text, sizeof m->error_text, fmt, ap);
    va_end(ap);
}

static void use_row(struct bytes_dec_msg *m, const struct keylog_origin *at)
{
    m->has_row = true;
    m->row = *at;
}

/* "h'0102..'" of the first bytes of v, for messages. */
static const char *short_hex(const uint8_t *v, size_t len, char *buf, size_t cap)
{
    size_t w = (size_t)snprintf(buf, cap, "h'");
    for (size_t i = 0; i < len && i < 8 && w + 3 < cap; i++)
        w += (size_t)snprintf(buf + w, cap - w, "%02x", v[i]);
    snprintf(buf + w, cap - w, "%s'", len > 8 ? "..." : "");
    return buf;
}

const char *bytes_id_cred_kind(const uint8_t *id_cred, size_t len, const uint8_t **value,
                               size_t *value_len)
{
    struct edhoc_cbor_reader r;
    size_t pairs;
    int64_t label;
    *value = NULL;
    *value_len = 0;
    edhoc_cbor_reader_init(&r, id_cred, len);
    if (edhoc_cbor_get_map(&r, &pairs) || pairs < 1 || edhoc_cbor_get_int(&r, &label))
        return "other";
    const uint8_t *start = id_cred + (len - edhoc_cbor_remaining(&r));
    struct edhoc_cbor_item it;
    if (edhoc_cbor_peek(&r, &it) == 0 && it.type == EDHOC_CBOR_BSTR && label == 4) {
        *value = it.ptr;
        *value_len = it.len;
    } else if (edhoc_cbor_skip(&r) == 0) {
        *value = start;
        *value_len = len - edhoc_cbor_remaining(&r) - (size_t)(start - id_cred);
    }
    switch (label) {
    case 4: return "kid";
    case 13: return "kcwt";
    case 14: return "kccs";
    case 32: return "x5bag";
    case 33: return "x5chain";
    case 34: return "x5t";
    case 35: return "x5u";
    default: return "other";
    }
}

/* EAD items (RFC 9528 Section 3.8: ead_label, ? ead_value) of bytes p,
 * padding (label 0) left out. -1 when they do not parse. */
static int parse_ead(const uint8_t *p, size_t len, struct edhoc_ead_item *items, size_t *n)
{
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, p, len);
    *n = 0;
    while (!edhoc_cbor_at_end(&r)) {
        struct edhoc_ead_item it = {0};
        if (edhoc_cbor_get_int(&r, &it.label))
            return -1;
        struct edhoc_cbor_item next;
        if (!edhoc_cbor_at_end(&r) && edhoc_cbor_peek(&r, &next) == 0 &&
            next.type == EDHOC_CBOR_BSTR) {
            if (edhoc_cbor_get_bstr(&r, &it.value, &it.value_len))
                return -1;
            it.has_value = true;
        }
        if (it.label != 0 && *n < EDHOC_MAX_EAD_ITEMS)
            items[(*n)++] = it;
    }
    return 0;
}

/* The EDHOC fields of rx into m: plaintext, ID_CRED, EAD (values moved
 * into m's own copy of the plaintext). */
static int take_received(struct bytes_dec_msg *m, const struct edhoc_received *rx)
{
    m->plain = malloc(rx->plaintext_len ? rx->plaintext_len : 1);
    m->id_cred = malloc(rx->id_cred_len ? rx->id_cred_len : 1);
    if (!m->plain || !m->id_cred)
        return -1;
    memcpy(m->plain, rx->plaintext, rx->plaintext_len);
    m->plain_len = rx->plaintext_len;
    if (rx->id_cred_len)
        memcpy(m->id_cred, rx->id_cred, rx->id_cred_len);
    m->id_cred_len = rx->id_cred_len;
    m->n_ead = rx->n_ead;
    for (size_t i = 0; i < rx->n_ead; i++) {
        m->ead[i] = rx->ead[i];
        const uint8_t *v = rx->ead[i].value;
        if (v && v >= rx->plaintext && v < rx->plaintext + rx->plaintext_len)
            m->ead[i].value = m->plain + (v - rx->plaintext);
        else
            m->ead[i].has_value = false, m->ead[i].value = NULL, m->ead[i].value_len = 0;
    }
    return 0;
}

static const struct edhoc_suite *suite_of(const struct edhoc_message_1_fields *f)
{
    return f->n_suites ? edhoc_suite_find(f->suites[f->n_suites - 1]) : NULL;
}

int bytes_decrypt_message_2(const struct keylog_edhoc_row *row, const uint8_t *message_1,
                            size_t m1_len, const uint8_t *message_2, size_t m2_len,
                            struct bytes_dec_msg *m)
{
    const struct edhoc_crypto_ops *ops = edhoc_crypto_default();
    struct edhoc_message_1_fields f;
    use_row(m, &row->at);
    if (edhoc_message_1_parse(message_1, m1_len, &f) != 0) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_MALFORMED, "message_1 does not parse");
        return -1;
    }
    const struct edhoc_suite *su = suite_of(&f);
    if (!su) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_UNSUPPORTED, "suite %d is not supported",
             f.n_suites ? f.suites[f.n_suites - 1] : -1);
        return -1;
    }
    const uint8_t *gy, *ct;
    size_t ct_len, hl = edhoc_crypto_hash_len(su->hash);
    if (edhoc_message_2_parse(message_2, m2_len, edhoc_crypto_ecdh_pub_len(su->ecdh_curve), &gy,
                              &ct, &ct_len) != 0) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_MALFORMED, "message_2 does not parse");
        return -1;
    }
    /* TH_2 = H(G_Y, H(message_1)) (Section 5.3.2): the row belongs to
     * this handshake only if its TH_2 is the one of these bytes. */
    uint8_t h1[EDHOC_CRYPTO_MAX_HASH], th2[EDHOC_CRYPTO_MAX_HASH];
    uint8_t in[2 * EDHOC_CRYPTO_MAX_HASH + 2 * EDHOC_CRYPTO_MAX_ECDH_PUB + 8];
    struct edhoc_cbor_writer w;
    size_t g_len = edhoc_crypto_ecdh_pub_len(su->ecdh_curve);
    if (ops->hash(su->hash, message_1, m1_len, h1)) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_UNSUPPORTED, "hash %d failed", su->hash);
        return -1;
    }
    edhoc_cbor_writer_init(&w, in, sizeof in);
    edhoc_cbor_put_bstr(&w, gy, g_len);
    edhoc_cbor_put_bstr(&w, h1, hl);
    long in_len = edhoc_cbor_writer_finish(&w);
    if (in_len < 0 || ops->hash(su->hash, in, (size_t)in_len, th2)) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_UNSUPPORTED, "hash %d failed", su->hash);
        return -1;
    }
    if (row->len[KEYLOG_TH_2] != hl || memcmp(row->v[KEYLOG_TH_2], th2, hl) != 0) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_TH_MISMATCH,
             "%s line %u: its TH_2 is not H(G_Y, H(message_1)) of this message_2 (a row of "
             "another handshake)",
             row->at.file, row->at.line);
        return -1;
    }
    uint8_t *pt = malloc(ct_len);
    struct edhoc_received *rx = malloc(sizeof *rx);
    int rc = -1;
    if (!pt || !rx) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_UNSUPPORTED, "out of memory");
        goto out;
    }
    if (edhoc_kdf(ops, su->hash, row->v[KEYLOG_PRK_2E], row->len[KEYLOG_PRK_2E], 0, th2, hl, pt,
                  ct_len) != 0) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_UNSUPPORTED,
             "KEYSTREAM_2 of %zu bytes cannot be derived", ct_len);
        goto out;
    }
    for (size_t i = 0; i < ct_len; i++)
        pt[i] ^= ct[i];
    int prc = edhoc_plaintext_2_parse(pt, ct_len, f.method, su->id, rx, m->c_r, &m->c_r_len);
    if (prc != 0) {
        /* No tag protects CIPHERTEXT_2: a wrong PRK_2e shows as bytes
         * that are not a PLAINTEXT_2. */
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_PLAINTEXT,
             "%s line %u: PRK_2e gives no valid PLAINTEXT_2 (%s)", row->at.file, row->at.line,
             edhoc_strerror(prc));
        goto out;
    }
    m->has_c_r = true;
    if (take_received(m, rx)) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_UNSUPPORTED, "out of memory");
        goto out;
    }
    m->status = BYTES_DEC_OK;
    rc = 0;
out:
    if (pt)
        edhoc_wipe(pt, ct_len);
    if (rx)
        edhoc_wipe(rx, sizeof *rx);
    free(pt);
    free(rx);
    return rc;
}

/* message_3 (n = 3) or message_4 (n = 4) under the row. */
static void decrypt_aead_message(const struct keylog_edhoc_row *row,
                                 const struct edhoc_message_1_fields *f, int n, const uint8_t *msg,
                                 size_t len, struct bytes_dec_msg *m)
{
    const struct edhoc_crypto_ops *ops = edhoc_crypto_default();
    const struct edhoc_suite *su = suite_of(f);
    use_row(m, &row->at);
    if (!su) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_UNSUPPORTED, "the suite is not supported");
        return;
    }
    const uint8_t *ct = NULL;
    size_t ct_len = 0;
    int parse_rc = n == 3 ? edhoc_message_3_parse(msg, len, &ct, &ct_len)
                          : edhoc_message_4_parse(msg, len, &ct, &ct_len);
    if (parse_rc != 0) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_MALFORMED, "message_%d does not parse", n);
        return;
    }
    int prk = n == 3 ? KEYLOG_PRK_3E2M : KEYLOG_PRK_4E3M, th = n == 3 ? KEYLOG_TH_3 : KEYLOG_TH_4;
    size_t kl = edhoc_crypto_aead_key_len(su->aead), nl = edhoc_crypto_aead_nonce_len(su->aead);
    size_t tl = edhoc_crypto_aead_tag_len(su->aead);
    uint8_t key[EDHOC_CRYPTO_MAX_KEY], iv[EDHOC_CRYPTO_MAX_NONCE];
    uint8_t aad[EDHOC_CRYPTO_MAX_HASH + 16];
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, aad, sizeof aad);
    edhoc_cbor_put_array(&w, 3);
    edhoc_cbor_put_tstr(&w, "Encrypt0", 8);
    edhoc_cbor_put_bstr(&w, NULL, 0);
    edhoc_cbor_put_bstr(&w, row->v[th], row->len[th]);
    long aad_len = edhoc_cbor_writer_finish(&w);
    if (ct_len < tl) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_MALFORMED, "CIPHERTEXT_%d is shorter than a tag",
             n);
        return;
    }
    uint8_t *pt = malloc(ct_len - tl + 1);
    struct edhoc_received *rx = malloc(sizeof *rx);
    if (!pt || !rx || aad_len < 0 ||
        edhoc_kdf(ops, su->hash, row->v[prk], row->len[prk], n == 3 ? 3 : 8, row->v[th],
                  row->len[th], key, kl) ||
        edhoc_kdf(ops, su->hash, row->v[prk], row->len[prk], n == 3 ? 4 : 9, row->v[th],
                  row->len[th], iv, nl)) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_UNSUPPORTED, "K_%d / IV_%d cannot be derived", n,
             n);
        goto out;
    }
    int rc = ops->aead_decrypt(su->aead, key, iv, aad, (size_t)aad_len, ct, ct_len, pt);
    if (rc == EDHOC_CRYPTO_ERR_AUTH) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_TAG,
             "%s line %u: the tag of message_%d does not verify under its %s and %s", row->at.file,
             row->at.line, n, n == 3 ? "PRK_3e2m" : "PRK_4e3m", n == 3 ? "TH_3" : "TH_4");
        goto out;
    }
    if (rc) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_UNSUPPORTED, "AEAD %d failed", su->aead);
        goto out;
    }
    size_t pl = ct_len - tl;
    if (n == 3) {
        int prc = edhoc_plaintext_3_parse(pt, pl, f->method, su->id, rx);
        if (prc || take_received(m, rx)) {
            fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_PLAINTEXT, "PLAINTEXT_3 does not parse (%s)",
                 prc ? edhoc_strerror(prc) : "out of memory");
            goto out;
        }
    } else {
        m->plain = malloc(pl ? pl : 1);
        if (!m->plain || parse_ead(pt, pl, m->ead, &m->n_ead)) {
            fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_PLAINTEXT,
                 "PLAINTEXT_4 is not a sequence of EAD items");
            goto out;
        }
        memcpy(m->plain, pt, pl);
        m->plain_len = pl;
        for (size_t i = 0; i < m->n_ead; i++)
            if (m->ead[i].value)
                m->ead[i].value = m->plain + (m->ead[i].value - pt);
    }
    m->status = BYTES_DEC_OK;
out:
    edhoc_wipe(key, sizeof key);
    edhoc_wipe(iv, sizeof iv);
    if (pt)
        edhoc_wipe(pt, ct_len - tl + 1);
    if (rx)
        edhoc_wipe(rx, sizeof *rx);
    free(pt);
    free(rx);
}

/* ---- OSCORE ---- */

/* The context of row for one side: the server's (Recipient ID = the
 * request's kid) or the client's. An initiator's row names its own
 * Sender ID first; swap turns it around. */
static void oscore_params_of(const struct keylog_oscore_row *r, bool swap, struct oscore_params *p)
{
    memset(p, 0, sizeof *p);
    p->aead_alg = r->aead_alg;
    p->master_secret = r->master_secret;
    p->master_secret_len = r->master_secret_len;
    p->master_salt = r->master_salt_len ? r->master_salt : NULL;
    p->master_salt_len = r->master_salt_len;
    /* An empty ID Context in the table is none (RFC 9528 Appendix A.1). */
    p->id_context = r->id_context_len ? r->id_context : NULL;
    p->id_context_len = r->id_context_len;
    p->sender_id = swap ? r->recipient_id : r->sender_id;
    p->sender_id_len = swap ? r->recipient_id_len : r->sender_id_len;
    p->recipient_id = swap ? r->sender_id : r->recipient_id;
    p->recipient_id_len = swap ? r->sender_id_len : r->recipient_id_len;
}

/* The decrypted message buf (heap, taken over) into m. */
static int take_inner(struct bytes_dec_msg *m, uint8_t *buf, size_t len)
{
    struct coap_msg cm;
    if (edhoc_coap_msg_parse(buf, len, &cm) != 0)
        return -1;
    m->inner = buf;
    m->inner_len = len;
    m->oscore = true;
    m->code = cm.code;
    m->n_options = cm.option_count;
    for (size_t i = 0; i < cm.option_count; i++) {
        m->options[i].number = cm.options[i].number;
        m->options[i].value = cm.options[i].value;
        m->options[i].len = cm.options[i].len;
    }
    m->payload = cm.payload;
    m->payload_len = cm.payload_len;
    return 0;
}

static void oscore_failure(struct bytes_dec_msg *m, const struct keylog_oscore_row *r, long err,
                           const char *what)
{
    use_row(m, &r->at);
    if (err == OSCORE_ERR_DECRYPT)
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_TAG,
             "%s line %u: the tag of the %s does not verify under its Master Secret and Master "
             "Salt",
             r->at.file, r->at.line, what);
    else
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_PLAINTEXT, "%s line %u: the %s does not open (%s)",
             r->at.file, r->at.line, what, oscore_strerror((int)err));
}

static void open_request(const struct keylog *k, const uint8_t *msg, size_t len,
                         struct bytes_dec_msg *m)
{
    const struct edhoc_crypto_ops *ops = edhoc_crypto_default();
    struct oscore_option o;
    int rc = oscore_message_option(msg, len, &o);
    if (rc || !o.has_kid) {
        fail(m, BYTES_DEC_FAILED, BYTES_DEC_ERR_MALFORMED, "its OSCORE option %s",
             rc ? oscore_strerror(rc) : "has no kid");
        return;
    }
    const struct keylog_oscore_row *tried = NULL;
    long last = 0;
    for (size_t i = 0; i < k->n_oscore; i++) {
        const struct keylog_oscore_row *r = &k->oscore[i];
        if (o.has_kid_context && (r->id_context_len != o.kid_context_len ||
                                  memcmp(r->id_context, o.kid_context, o.kid_context_len)))
            continue;
        bool client = r->sender_id_len == o.kid_len && !memcmp(r->sender_id, o.kid, o.kid_len);
        bool server =
            r->recipient_id_len == o.kid_len && !memcmp(r->recipient_id, o.kid, o.kid_len);
        if (!client && !server)
            continue;
        tried = r;
        struct oscore_params p;
        struct oscore_context c;
        oscore_params_of(r, client, &p);
        if ((last = oscore_context_init(&c, ops, &p)) != 0)
            continue;
        uint8_t *out = malloc(len);
        struct oscore_binding b;
        long n = out ? oscore_unprotect_request(&c, msg, len, out, len, &b) : OSCORE_ERR_NOMEM;
        oscore_context_wipe(&c);
        if (n >= 0 && take_inner(m, out, (size_t)n) == 0) {
            m->request = malloc(len);
            if (m->request) {
                memcpy(m->request, msg, len);
                m->request_len = len;
            }
            m->oscore_row = r;
            m->row_is_client = client;
            use_row(m, &r->at);
            m->status = BYTES_DEC_OK;
            return;
        }
        free(out);
        last = n >= 0 ? OSCORE_ERR_INNER : n;
    }
    if (!tried) {
        char kid[40], ctx[40];
        fail(m, BYTES_DEC_NO_ROW, BYTES_DEC_ERR_NO_ROW,
             "no oscore_contexts row has the kid %s as Sender ID or Recipient ID%s%s",
             short_hex(o.kid, o.kid_len, kid, sizeof kid),
             o.has_kid_context ? " with the ID Context " : "",
             o.has_kid_context ? short_hex(o.kid_context, o.kid_context_len, ctx, sizeof ctx) : "");
        return;
    }
    oscore_failure(m, tried, last, "request");
}

static void open_response(const struct bytes_dec_msg *req, const uint8_t *msg, size_t len,
                          struct bytes_dec_msg *m)
{
    if (!req || req->status != BYTES_DEC_OK || !req->request) {
        if (req && req->has_row)
            use_row(m, &req->row);
        fail(m, req && req->status == BYTES_DEC_FAILED ? BYTES_DEC_FAILED : BYTES_DEC_NO_ROW,
             req && req->error != BYTES_DEC_ERR_NONE ? req->error : BYTES_DEC_ERR_NO_ROW,
             "not tried: its request was not opened");
        return;
    }
    const struct keylog_oscore_row *r = req->oscore_row;
    struct oscore_params p;
    struct oscore_context c;
    struct oscore_binding b;
    oscore_params_of(r, !req->row_is_client, &p);
    long n = oscore_context_init(&c, edhoc_crypto_default(), &p);
    if (n == 0)
        n = oscore_binding_from_request(&b, req->request, req->request_len);
    uint8_t *out = n == 0 ? malloc(len) : NULL;
    if (n == 0)
        n = out ? oscore_unprotect_response(&c, &b, msg, len, out, len) : OSCORE_ERR_NOMEM;
    oscore_context_wipe(&c);
    if (n >= 0 && take_inner(m, out, (size_t)n) == 0) {
        use_row(m, &r->at);
        m->status = BYTES_DEC_OK;
        return;
    }
    free(out);
    oscore_failure(m, r, n >= 0 ? OSCORE_ERR_INNER : n, "response");
}

/* RFC 9668 Section 3.2.1: the OSCORE request of an EDHOC + OSCORE
 * request is the same message without the EDHOC option and with the
 * payload after message_3. */
static long combined_to_oscore(const struct coap_msg *cm, size_t m3_len, uint8_t *out, size_t cap)
{
    struct coap_msg plain = *cm;
    plain.option_count = 0;
    for (size_t i = 0; i < cm->option_count; i++)
        if (cm->options[i].number != COAP_OPT_EDHOC_NUMBER)
            plain.options[plain.option_count++] = cm->options[i];
    plain.payload = cm->payload + m3_len;
    plain.payload_len = cm->payload_len - m3_len;
    return edhoc_coap_msg_encode(&plain, out, cap);
}

/* ---- A capture ---- */

struct exchange_keys {
    bool have_m1;
    struct edhoc_message_1_fields f;
    const uint8_t *m1; /* into the datagrams */
    size_t m1_len;
    const struct keylog_edhoc_row *row;
};

static bool edhoc_ready(const struct exchange_keys *x, struct bytes_dec_msg *d)
{
    char g[40];
    if (!x->have_m1)
        fail(d, BYTES_DEC_NO_ROW, BYTES_DEC_ERR_NO_ROW,
             "message_1 is not in the capture: no G_X to find its edhoc_secrets row by");
    else if (!x->row)
        fail(d, BYTES_DEC_NO_ROW, BYTES_DEC_ERR_NO_ROW,
             "no edhoc_secrets row has this exchange's G_X %s",
             short_hex(x->f.g_x, x->f.g_x_len, g, sizeof g));
    return x->have_m1 && x->row;
}

static void open_message_1(const struct keylog *k, struct exchange_keys *x, const uint8_t *e,
                           size_t len, struct bytes_dec_msg *d, struct bytes_dec_exchange *out)
{
    d->status = BYTES_DEC_CLEAR;
    if (edhoc_message_1_parse(e, len, &x->f) != 0)
        return;
    x->have_m1 = true;
    x->m1 = e;
    x->m1_len = len;
    x->row = keylog_find_edhoc(k, x->f.g_x, x->f.g_x_len);
    if (x->row) {
        out->has_edhoc_row = true;
        out->edhoc_row = x->row->at;
    }
    /* EAD_1 travels in the clear; listed with the others. */
    d->ead_store = malloc(x->f.ead_len ? x->f.ead_len : 1);
    if (!d->ead_store)
        return;
    memcpy(d->ead_store, x->f.ead, x->f.ead_len);
    if (parse_ead(d->ead_store, x->f.ead_len, d->ead, &d->n_ead))
        d->n_ead = 0;
}

static void open_message(const struct keylog *k, const struct edhoc_capture_exchange *ex, size_t i,
                         const struct bytes_datagrams *ds, struct exchange_keys *x,
                         struct bytes_dec_exchange *out)
{
    const struct edhoc_capture_msg *msg = &ex->msgs[i];
    struct bytes_dec_msg *d = &out->msgs[i];
    enum edhoc_capture_msg_type t = msg->type;
    if (t == EDHOC_CAPTURE_MSG_EMPTY || t == EDHOC_CAPTURE_MSG_3_ACK ||
        t == EDHOC_CAPTURE_MSG_ERROR) {
        d->status = BYTES_DEC_CLEAR;
        return;
    }
    const struct bytes_datagram *dg = bytes_datagram_find(ds, msg->packet);
    unsigned blocks = msg->datagrams - msg->retransmissions;
    if (blocks > 1 || !dg) {
        fail(d, BYTES_DEC_FAILED, BYTES_DEC_ERR_UNAVAILABLE,
             "its body came in %u blocks (block-wise): reassembled bodies are not opened", blocks);
        return;
    }
    struct coap_msg cm;
    if (edhoc_coap_msg_parse(dg->bytes, dg->len, &cm) != 0 || msg->edhoc > cm.payload_len) {
        fail(d, BYTES_DEC_FAILED, BYTES_DEC_ERR_MALFORMED, "not a CoAP message");
        return;
    }
    /* The EDHOC message ends the payload (after CBOR true or C_R, RFC
     * 9528 A.2) except in the combined request, which it starts. */
    const uint8_t *e =
        t == EDHOC_CAPTURE_MSG_3_OSCORE ? cm.payload : cm.payload + (cm.payload_len - msg->edhoc);
    size_t elen = msg->edhoc;
    switch (t) {
    case EDHOC_CAPTURE_MSG_1: open_message_1(k, x, e, elen, d, out); break;
    case EDHOC_CAPTURE_MSG_2:
        if (edhoc_ready(x, d))
            bytes_decrypt_message_2(x->row, x->m1, x->m1_len, e, elen, d);
        break;
    case EDHOC_CAPTURE_MSG_3:
    case EDHOC_CAPTURE_MSG_4:
        if (edhoc_ready(x, d))
            decrypt_aead_message(x->row, &x->f, t == EDHOC_CAPTURE_MSG_3 ? 3 : 4, e, elen, d);
        break;
    case EDHOC_CAPTURE_MSG_3_OSCORE: {
        if (edhoc_ready(x, d))
            decrypt_aead_message(x->row, &x->f, 3, e, elen, d);
        struct bytes_dec_msg edhoc_part = *d;
        uint8_t *req = malloc(dg->len);
        long n = req ? combined_to_oscore(&cm, elen, req, dg->len) : -1;
        if (n > 0)
            open_request(k, req, (size_t)n, d);
        free(req);
        if (edhoc_part.status != BYTES_DEC_OK) {
            /* The first failure is the message's. */
            d->status = edhoc_part.status;
            d->error = edhoc_part.error;
            memcpy(d->error_text, edhoc_part.error_text, sizeof d->error_text);
            d->has_row = edhoc_part.has_row;
            d->row = edhoc_part.row;
        }
        break;
    }
    case EDHOC_CAPTURE_MSG_OSCORE_REQUEST: open_request(k, dg->bytes, dg->len, d); break;
    case EDHOC_CAPTURE_MSG_OSCORE_RESPONSE:
        open_response(msg->answers >= 0 ? &out->msgs[msg->answers] : NULL, dg->bytes, dg->len, d);
        break;
    default: d->status = BYTES_DEC_CLEAR; break;
    }
}

static int by_number(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? -1 : x > y;
}

int bytes_decrypt_capture(const char *path, const struct bytes_capture_run *run,
                          const struct keylog *k, struct bytes_decryption *out, char *why,
                          size_t cap)
{
    const struct edhoc_capture_analysis *a = run->analysis;
    memset(out, 0, sizeof *out);
    size_t n = 0;
    for (size_t i = 0; i < a->n_ex; i++)
        n += a->ex[i].n_msgs;
    unsigned *packets = malloc((n ? n : 1) * sizeof *packets);
    out->ex = calloc(a->n_ex ? a->n_ex : 1, sizeof *out->ex);
    if (!packets || !out->ex) {
        free(packets);
        free(out->ex);
        out->ex = NULL;
        snprintf(why, cap, "out of memory");
        return -1;
    }
    out->n_ex = a->n_ex;
    n = 0;
    for (size_t i = 0; i < a->n_ex; i++)
        for (size_t j = 0; j < a->ex[i].n_msgs; j++)
            packets[n++] = a->ex[i].msgs[j].packet;
    qsort(packets, n, sizeof *packets, by_number);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || packets[u - 1] != packets[i])
            packets[u++] = packets[i];
    struct bytes_datagrams ds;
    int rc = bytes_capture_datagrams(path, packets, u, &ds, why, cap);
    free(packets);
    if (rc) {
        bytes_decryption_free(out);
        return -1;
    }
    for (size_t i = 0; i < a->n_ex; i++) {
        struct exchange_keys x;
        memset(&x, 0, sizeof x);
        for (size_t j = 0; j < a->ex[i].n_msgs; j++)
            open_message(k, &a->ex[i], j, &ds, &x, &out->ex[i]);
    }
    bytes_datagrams_free(&ds);
    return 0;
}

void bytes_dec_msg_free(struct bytes_dec_msg *m)
{
    free(m->plain);
    free(m->id_cred);
    free(m->ead_store);
    free(m->inner);
    free(m->request);
    memset(m, 0, sizeof *m);
}

void bytes_decryption_free(struct bytes_decryption *d)
{
    for (size_t i = 0; i < d->n_ex; i++)
        for (size_t j = 0; j < EDHOC_CAPTURE_MAX_MESSAGES; j++)
            bytes_dec_msg_free(&d->ex[i].msgs[j]);
    free(d->ex);
    d->ex = NULL;
    d->n_ex = 0;
}
