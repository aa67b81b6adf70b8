/*
 * Decoding and validation of received EDHOC messages and plaintexts, and
 * the encodings shared with the writers
 * (connection identifiers, compact ID_CRED, EAD).
 *
 * Everything here is strict: RFC 9528 Section 3.1 requires deterministic
 * CBOR, and a received message that an honest peer could not have produced
 * is rejected with the code naming the reason (RFC 9529 Section 4).
 */
#include <limits.h>
#include <string.h>

#include "edhoc_internal.h"

int edhoc_map_cbor_err(int cbor_err)
{
    switch (cbor_err) {
    case 0: return 0;
    case EDHOC_CBOR_ERR_NOT_SHORTEST:
    case EDHOC_CBOR_ERR_INDEFINITE: return EDHOC_ERR_NOT_DETERMINISTIC;
    default: return EDHOC_ERR_MALFORMED;
    }
}

/* Next item, with CBOR errors mapped. */
static int read_item(struct edhoc_cbor_reader *r, struct edhoc_cbor_item *it)
{
    return edhoc_map_cbor_err(edhoc_cbor_get(r, it));
}

static bool is_int(const struct edhoc_cbor_item *it)
{
    return it->type == EDHOC_CBOR_UINT || it->type == EDHOC_CBOR_NINT;
}

/* Next item, which must be an integer. */
static int next_int(struct edhoc_cbor_reader *r, struct edhoc_cbor_item *it)
{
    int rc = read_item(r, it);
    if (rc)
        return rc;
    return is_int(it) ? 0 : EDHOC_ERR_MALFORMED;
}

/* Integer value that fits int64 (UINT above INT64_MAX or NINT below
 * INT64_MIN cannot be an EDHOC label or code we handle). */
static int int_value(const struct edhoc_cbor_item *it, int64_t *v)
{
    if (!is_int(it))
        return EDHOC_ERR_MALFORMED;
    if (it->u > (uint64_t)INT64_MAX)
        return EDHOC_ERR_TOO_LARGE;
    *v = it->i;
    return 0;
}

void edhoc_put_bstr_id(struct edhoc_cbor_writer *w, const uint8_t *id, size_t len)
{
    if (len == 1 && edhoc_is_one_byte_int(id[0]))
        edhoc_cbor_put_raw(w, id, 1);
    else
        edhoc_cbor_put_bstr(w, id, len);
}

int edhoc_get_bstr_id(struct edhoc_cbor_reader *r, uint8_t *out, size_t cap, size_t *len,
                      int bad_enc)
{
    struct edhoc_cbor_item it;
    int rc = read_item(r, &it);
    if (rc)
        return rc;
    if (is_int(&it)) {
        /* Only the one-byte ints stand for byte strings (Section 3.3.2). */
        if (it.head_len != 1)
            return EDHOC_ERR_MALFORMED;
        if (cap < 1)
            return EDHOC_ERR_TOO_LARGE;
        out[0] = it.start[0];
        *len = 1;
        return 0;
    }
    if (it.type != EDHOC_CBOR_BSTR)
        return EDHOC_ERR_MALFORMED;
    if (it.len == 1 && edhoc_is_one_byte_int(it.ptr[0]))
        return bad_enc;
    if (it.len > cap)
        return EDHOC_ERR_TOO_LARGE;
    if (it.len)
        memcpy(out, it.ptr, it.len);
    *len = it.len;
    return 0;
}

int edhoc_ead_next(struct edhoc_cbor_reader *r, struct edhoc_ead_item *item)
{
    struct edhoc_cbor_item it;
    int64_t label;
    int rc = read_item(r, &it);
    if (rc)
        return rc;
    rc = int_value(&it, &label);
    if (rc)
        return rc == EDHOC_ERR_TOO_LARGE ? EDHOC_ERR_MALFORMED : rc;
    *item = (struct edhoc_ead_item){.label = label};
    if (!edhoc_cbor_at_end(r)) {
        struct edhoc_cbor_item v;
        rc = edhoc_map_cbor_err(edhoc_cbor_peek(r, &v));
        if (rc)
            return rc;
        if (v.type == EDHOC_CBOR_BSTR) {
            (void)edhoc_cbor_get(r, &v);
            item->value = v.ptr;
            item->value_len = v.len;
            item->has_value = true;
        }
    }
    return 0;
}

int edhoc_ead_parse(const uint8_t *p, size_t len, struct edhoc_received *rx)
{
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, p, len);
    size_t n = 0;
    while (!edhoc_cbor_at_end(&r)) {
        struct edhoc_ead_item item;
        int rc = edhoc_ead_next(&r, &item);
        if (rc)
            return rc;
        if (item.label == 0)
            continue; /* padding: ignored (Section 3.8.1) */
        if (n >= EDHOC_MAX_EAD_ITEMS)
            return EDHOC_ERR_TOO_LARGE;
        if (rx)
            rx->ead[n] = item;
        n++;
    }
    if (rx)
        rx->n_ead = n;
    return 0;
}

void edhoc_ead_write(struct edhoc_cbor_writer *w, const struct edhoc_ead_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        edhoc_cbor_put_int(w, items[i].label);
        if (items[i].has_value)
            edhoc_cbor_put_bstr(w, items[i].value, items[i].value_len);
    }
}

bool edhoc_lone_kid(const uint8_t *map, size_t len, const uint8_t **kid, size_t *kid_len)
{
    struct edhoc_cbor_reader r;
    struct edhoc_cbor_item it;
    edhoc_cbor_reader_init(&r, map, len);
    if (edhoc_cbor_get(&r, &it) || it.type != EDHOC_CBOR_MAP || it.len != 1)
        return false;
    if (edhoc_cbor_get(&r, &it) || it.type != EDHOC_CBOR_UINT || it.u != 4)
        return false;
    if (edhoc_cbor_get(&r, &it) || it.type != EDHOC_CBOR_BSTR || !edhoc_cbor_at_end(&r))
        return false;
    *kid = it.ptr;
    *kid_len = it.len;
    return true;
}

void edhoc_put_id_cred_kid(struct edhoc_cbor_writer *w, const uint8_t *kid, size_t len)
{
    edhoc_cbor_put_map(w, 1);
    edhoc_cbor_put_uint(w, 4);
    edhoc_cbor_put_bstr(w, kid, len);
}

void edhoc_put_id_cred_compact(struct edhoc_cbor_writer *w, const uint8_t *map, size_t len)
{
    const uint8_t *kid;
    size_t kid_len;
    if (edhoc_lone_kid(map, len, &kid, &kid_len))
        edhoc_put_bstr_id(w, kid, kid_len);
    else
        edhoc_cbor_put_raw(w, map, len);
}

/* suites = [2* int] / int. Values outside int range are kept as INT_MIN
 * (a suite nobody supports). */
static int get_suites(struct edhoc_cbor_reader *r, int *out, size_t *n)
{
    struct edhoc_cbor_item it;
    int rc = read_item(r, &it);
    if (rc)
        return rc;
    size_t count = 1;
    bool array = false;
    if (it.type == EDHOC_CBOR_ARRAY) {
        if (it.len == 1)
            return EDHOC_ERR_SUITES_ENCODING;
        if (it.len == 0)
            return EDHOC_ERR_MALFORMED;
        if (it.len > EDHOC_MAX_SUITES)
            return EDHOC_ERR_TOO_LARGE;
        count = it.len;
        array = true;
    } else if (!is_int(&it)) {
        return EDHOC_ERR_MALFORMED;
    }
    for (size_t i = 0; i < count; i++) {
        if (array) {
            rc = next_int(r, &it);
            if (rc)
                return rc;
        }
        if (it.u > (uint64_t)INT_MAX)
            out[i] = INT_MIN;
        else
            out[i] = (int)it.i;
    }
    *n = count;
    return 0;
}

int edhoc_message_1_parse(const uint8_t *msg, size_t len, struct edhoc_message_1_fields *f)
{
    if (!msg || !f)
        return EDHOC_ERR_ARG;
    memset(f, 0, sizeof *f);
    struct edhoc_cbor_reader r;
    struct edhoc_cbor_item it;
    edhoc_cbor_reader_init(&r, msg, len);

    int rc = next_int(&r, &it);
    if (rc)
        return rc;
    if (it.type != EDHOC_CBOR_UINT || it.u > 3)
        return EDHOC_ERR_METHOD;
    f->method = (int)it.u;

    rc = get_suites(&r, f->suites, &f->n_suites);
    if (rc)
        return rc;

    rc = read_item(&r, &it);
    if (rc)
        return rc;
    if (it.type != EDHOC_CBOR_BSTR)
        return EDHOC_ERR_MALFORMED;
    const struct edhoc_suite *sel = edhoc_suite_find(f->suites[f->n_suites - 1]);
    if (it.len > EDHOC_CRYPTO_MAX_ECDH_PUB ||
        (sel && it.len != edhoc_crypto_ecdh_pub_len(sel->ecdh_curve)))
        return EDHOC_ERR_EPHEMERAL_LENGTH;
    f->g_x = it.ptr;
    f->g_x_len = it.len;

    rc = edhoc_get_bstr_id(&r, f->c_i, sizeof f->c_i, &f->c_i_len, EDHOC_ERR_CONN_ID_ENCODING);
    if (rc)
        return rc;

    f->ead = msg + r.pos;
    f->ead_len = len - r.pos;
    if (f->ead_len > EDHOC_MAX_EAD_SIZE)
        return EDHOC_ERR_TOO_LARGE;
    /* EAD items are the only thing allowed after C_I: anything else there
     * is an item that does not belong to message_1. */
    rc = edhoc_ead_parse(f->ead, f->ead_len, NULL);
    if (rc == EDHOC_ERR_MALFORMED)
        return EDHOC_ERR_TRAILING;
    return rc;
}

/* A message that is exactly one bstr. */
static int single_bstr(const uint8_t *msg, size_t len, const uint8_t **p, size_t *n)
{
    if (!msg || !p || !n)
        return EDHOC_ERR_ARG;
    struct edhoc_cbor_reader r;
    struct edhoc_cbor_item it;
    edhoc_cbor_reader_init(&r, msg, len);
    int rc = read_item(&r, &it);
    if (rc)
        return rc;
    if (it.type != EDHOC_CBOR_BSTR)
        return EDHOC_ERR_MALFORMED;
    if (!edhoc_cbor_at_end(&r))
        return EDHOC_ERR_TRAILING;
    *p = it.ptr;
    *n = it.len;
    return 0;
}

int edhoc_message_2_parse(const uint8_t *msg, size_t len, size_t g_y_len, const uint8_t **g_y,
                          const uint8_t **ciphertext, size_t *ciphertext_len)
{
    const uint8_t *p;
    size_t n;
    if (!g_y || !ciphertext || !ciphertext_len)
        return EDHOC_ERR_ARG;
    int rc = single_bstr(msg, len, &p, &n);
    if (rc)
        return rc;
    if (n <= g_y_len)
        return EDHOC_ERR_EPHEMERAL_LENGTH;
    *g_y = p;
    *ciphertext = p + g_y_len;
    *ciphertext_len = n - g_y_len;
    return 0;
}

int edhoc_message_3_parse(const uint8_t *msg, size_t len, const uint8_t **ct, size_t *ct_len)
{
    return single_bstr(msg, len, ct, ct_len);
}

int edhoc_message_4_parse(const uint8_t *msg, size_t len, const uint8_t **ct, size_t *ct_len)
{
    return single_bstr(msg, len, ct, ct_len);
}

/* Length Signature_or_MAC must have: the MAC length for a static DH
 * sender, the signature length of the suite's algorithm otherwise. */
static size_t sig_or_mac_len(const struct edhoc_suite *su, bool static_dh)
{
    return static_dh ? (size_t)su->mac_len : edhoc_crypto_sig_len(su->sig_curve);
}

/* Shared body of PLAINTEXT_2 / PLAINTEXT_3. */
static int plaintext_parse(const uint8_t *pt, size_t len, int method, int suite, bool with_cid,
                           struct edhoc_received *rx, uint8_t *c_r, size_t *c_r_len)
{
    const struct edhoc_suite *su = edhoc_suite_find(suite);
    if (!pt || !rx || !su || method < 0 || method > 3)
        return EDHOC_ERR_ARG;
    if (len > sizeof rx->plaintext)
        return EDHOC_ERR_TOO_LARGE;
    if (pt != rx->plaintext)
        memmove(rx->plaintext, pt, len);
    rx->plaintext_len = len;
    rx->id_cred = NULL;
    rx->id_cred_len = 0;
    rx->n_ead = 0;

    struct edhoc_cbor_reader r;
    struct edhoc_cbor_item it;
    edhoc_cbor_reader_init(&r, rx->plaintext, len);
    int rc;

    if (with_cid) {
        uint8_t tmp[EDHOC_MAX_CONN_ID];
        size_t tmp_len = 0;
        rc = edhoc_get_bstr_id(&r, tmp, sizeof tmp, &tmp_len, EDHOC_ERR_CONN_ID_ENCODING);
        if (rc)
            return rc;
        if (c_r && c_r_len) {
            memcpy(c_r, tmp, tmp_len);
            *c_r_len = tmp_len;
        }
    }

    /* ID_CRED_x: a map, or the compact form of a lone kid. */
    rx->id_cred_off = r.pos;
    rc = edhoc_map_cbor_err(edhoc_cbor_peek(&r, &it));
    if (rc)
        return rc;
    if (it.type == EDHOC_CBOR_MAP) {
        size_t start = r.pos;
        rc = edhoc_map_cbor_err(edhoc_cbor_skip(&r));
        if (rc)
            return rc;
        const uint8_t *kid;
        size_t kid_len;
        if (it.len == 0)
            return EDHOC_ERR_MALFORMED;
        if (edhoc_lone_kid(rx->plaintext + start, r.pos - start, &kid, &kid_len))
            return EDHOC_ERR_ID_CRED_ENCODING;
        /* A map with the single label 4 (kid) is a malformed kid if not a
         * bstr; either way it is not a valid full-form ID_CRED. */
        if (it.len == 1) {
            struct edhoc_cbor_reader k;
            struct edhoc_cbor_item key;
            edhoc_cbor_reader_init(&k, rx->plaintext + start + it.head_len,
                                   r.pos - start - it.head_len);
            if (!edhoc_cbor_get(&k, &key) && key.type == EDHOC_CBOR_UINT && key.u == 4)
                return EDHOC_ERR_MALFORMED;
        }
        rx->id_cred = rx->plaintext + start;
        rx->id_cred_len = r.pos - start;
    } else if (it.type == EDHOC_CBOR_BSTR || is_int(&it)) {
        uint8_t kid[EDHOC_CRED_MAX_KID];
        size_t kid_len = 0;
        rc = edhoc_get_bstr_id(&r, kid, sizeof kid, &kid_len, EDHOC_ERR_ID_CRED_ENCODING);
        if (rc)
            return rc;
        struct edhoc_cbor_writer w;
        edhoc_cbor_writer_init(&w, rx->id_cred_map, sizeof rx->id_cred_map);
        edhoc_put_id_cred_kid(&w, kid, kid_len);
        long n = edhoc_cbor_writer_finish(&w);
        if (n < 0)
            return EDHOC_ERR_TOO_LARGE;
        rx->id_cred = rx->id_cred_map;
        rx->id_cred_len = (size_t)n;
    } else {
        return EDHOC_ERR_MALFORMED;
    }
    rx->id_cred_enc_len = r.pos - rx->id_cred_off;

    /* Signature_or_MAC_x */
    rc = read_item(&r, &it);
    if (rc)
        return rc;
    if (it.type != EDHOC_CBOR_BSTR)
        return EDHOC_ERR_MALFORMED;
    bool static_dh = edhoc_static_dh_sender(method, with_cid ? 2 : 3);
    if (it.len != sig_or_mac_len(su, static_dh))
        return EDHOC_ERR_MAC_LENGTH;
    rx->sig_off = (size_t)(it.ptr - rx->plaintext);
    rx->sig_len = it.len;

    rx->ead_off = r.pos;
    rx->ead_len = len - r.pos;
    if (rx->ead_len > EDHOC_MAX_EAD_SIZE)
        return EDHOC_ERR_TOO_LARGE;
    rc = edhoc_ead_parse(rx->plaintext + rx->ead_off, rx->ead_len, rx);
    if (rc == EDHOC_ERR_MALFORMED)
        return EDHOC_ERR_TRAILING;
    return rc;
}

int edhoc_plaintext_2_parse(const uint8_t *pt, size_t len, int method, int suite,
                            struct edhoc_received *rx, uint8_t *c_r, size_t *c_r_len)
{
    return plaintext_parse(pt, len, method, suite, true, rx, c_r, c_r_len);
}

int edhoc_plaintext_3_parse(const uint8_t *pt, size_t len, int method, int suite,
                            struct edhoc_received *rx)
{
    return plaintext_parse(pt, len, method, suite, false, rx, NULL, NULL);
}

/* ---- Error messages ---- */

bool edhoc_message_is_error(const uint8_t *msg, size_t len)
{
    struct edhoc_cbor_reader r;
    struct edhoc_cbor_item it;
    edhoc_cbor_reader_init(&r, msg, len);
    if (!msg || edhoc_cbor_peek(&r, &it))
        return false;
    return is_int(&it);
}

int edhoc_error_message_parse(const uint8_t *msg, size_t len, struct edhoc_error_info *info)
{
    if (!msg || !info)
        return EDHOC_ERR_ARG;
    memset(info, 0, sizeof *info);
    struct edhoc_cbor_reader r;
    struct edhoc_cbor_item it;
    edhoc_cbor_reader_init(&r, msg, len);
    int rc = next_int(&r, &it);
    if (rc)
        return rc;
    if (int_value(&it, &info->code))
        return EDHOC_ERR_MALFORMED;
    if (edhoc_cbor_at_end(&r))
        return EDHOC_ERR_MALFORMED; /* ERR_INFO is not optional */
    switch (info->code) {
    case EDHOC_ERR_CODE_UNSPECIFIED:
        rc = read_item(&r, &it);
        if (rc)
            return rc;
        if (it.type != EDHOC_CBOR_TSTR)
            return EDHOC_ERR_MALFORMED;
        info->text = (const char *)it.ptr;
        info->text_len = it.len;
        break;
    case EDHOC_ERR_CODE_WRONG_SUITE:
        rc = get_suites(&r, info->suites, &info->n_suites);
        if (rc)
            return rc;
        break;
    case EDHOC_ERR_CODE_UNKNOWN_CREDENTIAL:
        rc = read_item(&r, &it);
        if (rc)
            return rc;
        if (it.type != EDHOC_CBOR_TRUE)
            return EDHOC_ERR_MALFORMED;
        break;
    default:
        rc = edhoc_map_cbor_err(edhoc_cbor_skip(&r));
        if (rc)
            return rc;
        break;
    }
    if (!edhoc_cbor_at_end(&r))
        return EDHOC_ERR_TRAILING;
    return 0;
}

int edhoc_error_message_write(uint8_t *out, size_t cap, int code, const char *text,
                              const int *suites_r, size_t n_suites)
{
    if (!out && cap)
        return EDHOC_ERR_ARG;
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, out, cap);
    switch (code) {
    case EDHOC_ERR_CODE_UNSPECIFIED:
        edhoc_cbor_put_int(&w, code);
        if (!text)
            text = "";
        edhoc_cbor_put_tstr(&w, text, strlen(text));
        break;
    case EDHOC_ERR_CODE_WRONG_SUITE:
        if (!suites_r || n_suites == 0 || n_suites > EDHOC_MAX_SUITES)
            return EDHOC_ERR_ARG;
        edhoc_cbor_put_int(&w, code);
        if (n_suites > 1)
            edhoc_cbor_put_array(&w, n_suites);
        for (size_t i = 0; i < n_suites; i++)
            edhoc_cbor_put_int(&w, suites_r[i]);
        break;
    case EDHOC_ERR_CODE_UNKNOWN_CREDENTIAL:
        edhoc_cbor_put_int(&w, code);
        edhoc_cbor_put_bool(&w, true);
        break;
    default: return EDHOC_ERR_ARG;
    }
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_ERR_BUFFER;
    return (int)n;
}

int edhoc_error_code_for(int err)
{
    switch (err) {
    case 0:
    case EDHOC_ERR_ARG:
    case EDHOC_ERR_STATE:
    case EDHOC_ERR_CONN_ID_CONFLICT:
    case EDHOC_ERR_PEER_ERROR: return 0;
    case EDHOC_ERR_WRONG_SUITE: return EDHOC_ERR_CODE_WRONG_SUITE;
    case EDHOC_ERR_UNKNOWN_CREDENTIAL:
    case EDHOC_CRED_ERR_UNKNOWN: return EDHOC_ERR_CODE_UNKNOWN_CREDENTIAL;
    default: return EDHOC_ERR_CODE_UNSPECIFIED;
    }
}

const char *edhoc_strerror(int err)
{
    switch (err) {
    case 0: return "success";
    case EDHOC_ERR_ARG: return "invalid argument";
    case EDHOC_ERR_STATE: return "not allowed in the session's state";
    case EDHOC_ERR_CONN_ID_CONFLICT: return "own connection identifier equals the peer's";
    case EDHOC_ERR_BUFFER: return "output buffer too small";
    case EDHOC_ERR_TOO_LARGE: return "field exceeds an implementation limit";
    case EDHOC_ERR_CRYPTO: return "cryptographic operation failed";
    case EDHOC_ERR_CREDENTIAL: return "credential or key does not fit the method and cipher suite";
    case EDHOC_ERR_NO_COMMON_SUITE: return "no cipher suite in common";
    case EDHOC_ERR_MALFORMED: return "malformed message";
    case EDHOC_ERR_NOT_DETERMINISTIC: return "CBOR encoding not deterministic";
    case EDHOC_ERR_TRAILING: return "unexpected data after the message";
    case EDHOC_ERR_CONN_ID_ENCODING:
        return "connection identifier not in its integer representation";
    case EDHOC_ERR_SUITES_ENCODING: return "single cipher suite encoded as an array";
    case EDHOC_ERR_ID_CRED_ENCODING: return "ID_CRED not in compact encoding";
    case EDHOC_ERR_EPHEMERAL_LENGTH:
        return "ephemeral public key has the wrong length for the cipher suite";
    case EDHOC_ERR_INVALID_POINT: return "invalid public key (not on the curve or low order)";
    case EDHOC_ERR_MAC_LENGTH: return "Signature_or_MAC has the wrong length";
    case EDHOC_ERR_METHOD: return "method not supported";
    case EDHOC_ERR_WRONG_SUITE: return "wrong selected cipher suite";
    case EDHOC_ERR_CONN_ID_EQUAL: return "C_R equals C_I";
    case EDHOC_ERR_EAD_CRITICAL: return "unrecognized critical EAD item";
    case EDHOC_ERR_EAD_REJECTED: return "EAD item rejected";
    case EDHOC_ERR_UNSUPPORTED: return "not supported";
    case EDHOC_ERR_MAC: return "MAC verification failed";
    case EDHOC_ERR_SIGNATURE: return "signature verification failed";
    case EDHOC_ERR_DECRYPT: return "decryption failed";
    case EDHOC_ERR_UNKNOWN_CREDENTIAL: return "unknown credential referenced";
    case EDHOC_ERR_PEER_ERROR: return "peer sent an error message";
    case EDHOC_CRYPTO_ERR_UNSUPPORTED: return "algorithm not supported by the crypto backend";
    case EDHOC_CRYPTO_ERR_INVALID: return "invalid key or length";
    case EDHOC_CRYPTO_ERR_AUTH: return "authentication failed";
    case EDHOC_CRYPTO_ERR_BACKEND: return "crypto backend failure";
    case EDHOC_CRYPTO_ERR_RANDOM: return "random source failed";
    case EDHOC_CRED_ERR_FORMAT: return "credential format not recognized";
    case EDHOC_CRED_ERR_UNKNOWN: return "unknown credential referenced";
    case EDHOC_CRED_ERR_UNTRUSTED: return "credential not trusted";
    case EDHOC_CRED_ERR_EXPIRED: return "certificate expired or not yet valid";
    case EDHOC_CRED_ERR_KEY_TYPE: return "credential key type does not fit";
    default:
        if (err <= -2001 && err >= -2007)
            return edhoc_cbor_strerror(err);
        return "unknown error";
    }
}
