/*
 * The deviations of deployed implementations from RFC 9528 in context_x
 * and ID_CRED_x: their names (and the lists of them options take), how
 * each changes context_x, and the text of the diagnosis of a
 * Signature_or_MAC_x that did not verify.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "edhoc_internal.h"

/* ---- deviation names ---- */

static const struct {
    unsigned bit;
    const char *name;
} deviation_names[] = {
    {EDHOC_DEV_C_BSTR, "c-bstr"},
    {EDHOC_DEV_KID_INT, "kid-int"},
    {EDHOC_DEV_ID_CRED_COMPACT, "id-cred-compact"},
    {EDHOC_DEV_CRED_WRAP, "cred-wrap"},
    {EDHOC_DEV_EAD_OMITTED, "ead-omitted"},
};
#define N_DEVIATIONS (sizeof deviation_names / sizeof deviation_names[0])

const char *edhoc_deviation_name(unsigned bit)
{
    for (size_t i = 0; i < N_DEVIATIONS; i++)
        if (deviation_names[i].bit == bit)
            return deviation_names[i].name;
    return NULL;
}

/* The reason a list was refused, when the caller asked for one. */
static void set_why(char *why, size_t cap, const char *text)
{
    if (why && cap)
        snprintf(why, cap, "%s", text);
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

int edhoc_deviations_parse(const char *list, unsigned *mask, char *why, size_t cap)
{
    if (why && cap)
        why[0] = '\0';
    if (!list || !mask) {
        set_why(why, cap, "no deviation list given");
        return EDHOC_ERR_ARG;
    }
    unsigned m = 0;
    size_t n_names = 0;
    bool saw_none = false;
    const char *p = list;
    /* "" (and only spaces) means none, like "none". */
    while (is_space(*p))
        p++;
    if (*p == '\0') {
        *mask = 0;
        return 0;
    }
    for (;;) {
        const char *start = p, *end = p;
        while (*end && *end != ',')
            end++;
        const char *e = end;
        while (start < e && is_space(*start))
            start++;
        while (e > start && is_space(e[-1]))
            e--;
        size_t len = (size_t)(e - start);
        if (len == 0) {
            set_why(why, cap, "empty name in the deviation list");
            return EDHOC_ERR_ARG;
        }
        unsigned bit = 0;
        if (len == 4 && memcmp(start, "none", 4) == 0) {
            saw_none = true;
        } else {
            for (size_t i = 0; i < N_DEVIATIONS; i++)
                if (strlen(deviation_names[i].name) == len &&
                    memcmp(deviation_names[i].name, start, len) == 0)
                    bit = deviation_names[i].bit;
            if (!bit) {
                if (why && cap)
                    snprintf(why, cap,
                             "unknown deviation \"%.*s\" (known: c-bstr, kid-int, "
                             "id-cred-compact, cred-wrap, ead-omitted, or none)",
                             len > 64 ? 64 : (int)len, start);
                return EDHOC_ERR_ARG;
            }
        }
        m |= bit;
        n_names++;
        if (*end == '\0')
            break;
        p = end + 1;
    }
    if (saw_none && n_names > 1) {
        set_why(why, cap, "\"none\" cannot be combined with other deviations");
        return EDHOC_ERR_ARG;
    }
    *mask = m;
    return 0;
}

size_t edhoc_deviations_format(unsigned mask, char *out, size_t cap)
{
    char tmp[128];
    size_t n = 0;
    tmp[0] = '\0';
    if (mask == 0) {
        n = (size_t)snprintf(tmp, sizeof tmp, "none");
    } else {
        for (size_t i = 0; i < N_DEVIATIONS; i++)
            if (mask & deviation_names[i].bit)
                n += (size_t)snprintf(tmp + n, sizeof tmp - n, "%s%s", n ? "," : "",
                                      deviation_names[i].name);
        unsigned unknown = mask & ~(unsigned)EDHOC_DEV_ALL;
        if (unknown)
            n += (size_t)snprintf(tmp + n, sizeof tmp - n, "%s0x%x", n ? "," : "", unknown);
    }
    if (out && cap) {
        size_t c = n < cap - 1 ? n : cap - 1;
        memcpy(out, tmp, c);
        out[c] = '\0';
    }
    return n;
}

/* ---- the deviation model ---- */

/* Whether CRED_x is one CBOR byte string (an X.509 certificate, RFC 9528
 * Section 3.5.2); *content is what it wraps. */
bool edhoc_cred_is_bstr(const uint8_t *cred, size_t len, const uint8_t **content,
                        size_t *content_len)
{
    struct edhoc_cbor_reader r;
    struct edhoc_cbor_item it;
    edhoc_cbor_reader_init(&r, cred, len);
    if (edhoc_cbor_get(&r, &it) || it.type != EDHOC_CBOR_BSTR || !edhoc_cbor_at_end(&r))
        return false;
    *content = it.ptr;
    *content_len = it.len;
    return true;
}

/* The deviations that change anything for this context (see edhoc.h):
 * the others would recompute the same bytes. */
unsigned edhoc_deviations_applicable(const struct edhoc_context_in *rfc)
{
    unsigned m = EDHOC_DEV_CRED_WRAP;
    const uint8_t *kid;
    size_t kid_len;
    if (rfc->c_r && rfc->c_r_len == 1 && edhoc_is_one_byte_int(rfc->c_r[0]))
        m |= EDHOC_DEV_C_BSTR;
    if (edhoc_lone_kid(rfc->id_cred, rfc->id_cred_len, &kid, &kid_len)) {
        m |= EDHOC_DEV_ID_CRED_COMPACT;
        if (kid_len == 1 && edhoc_is_one_byte_int(kid[0]))
            m |= EDHOC_DEV_KID_INT;
    }
    if (rfc->ead_len)
        m |= EDHOC_DEV_EAD_OMITTED;
    return m;
}

/* out = rfc with the deviations of mask applied. mask must be within
 * edhoc_deviations_applicable(rfc), without both kid-int and id-cred-compact. */
void edhoc_context_deviate(const struct edhoc_context_in *rfc, unsigned mask,
                           struct edhoc_context_in *out)
{
    *out = *rfc;
    out->c_r_bstr = (mask & EDHOC_DEV_C_BSTR) != 0;
    const uint8_t *kid;
    size_t kid_len;
    if ((mask & (EDHOC_DEV_KID_INT | EDHOC_DEV_ID_CRED_COMPACT)) &&
        edhoc_lone_kid(rfc->id_cred, rfc->id_cred_len, &kid, &kid_len)) {
        struct edhoc_cbor_writer w;
        edhoc_cbor_writer_init(&w, out->id_buf, sizeof out->id_buf);
        if (mask & EDHOC_DEV_KID_INT) {
            /* {4: int}: the one-byte kid is its own int encoding */
            edhoc_cbor_put_map(&w, 1);
            edhoc_cbor_put_uint(&w, 4);
            edhoc_cbor_put_raw(&w, kid, 1);
        } else {
            edhoc_put_bstr_id(&w, kid, kid_len);
        }
        long n = edhoc_cbor_writer_finish(&w);
        if (n > 0) {
            out->id_cred = out->id_buf;
            out->id_cred_len = (size_t)n;
        }
    }
    if (mask & EDHOC_DEV_CRED_WRAP) {
        const uint8_t *inner;
        size_t inner_len;
        if (edhoc_cred_is_bstr(rfc->cred, rfc->cred_len, &inner, &inner_len)) {
            out->cred = inner;
            out->cred_len = inner_len;
        } else {
            out->cred_wrapped = true;
        }
    }
    if (mask & EDHOC_DEV_EAD_OMITTED)
        out->ead_len = 0;
}

/* ---- the diagnosis text ---- */

/* Appends to a fixed buffer; what does not fit is dropped, the string
 * stays terminated. */
struct text_out {
    char *p;
    size_t cap, n;
};

static void text_add(struct text_out *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void text_add(struct text_out *t, const char *fmt, ...)
{
    if (t->n + 1 >= t->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->p + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        t->n += (size_t)k < t->cap - t->n ? (size_t)k : t->cap - t->n - 1;
}

/* One deviation as the text describes it: what the peer put into
 * context_x instead of what RFC 9528 says. Kept short: the pair c-bstr +
 * kid-int with a signature must fit struct edhoc_diagnosis.text. */
static void deviation_clause(const struct edhoc_session *s, unsigned bit, struct text_out *t)
{
    uint8_t info = s->dev_info;
    int msg = (info & EDHOC_DI_M3) ? 3 : 2;
    char x = msg == 3 ? 'I' : 'R';
    /* With a signature, ID_CRED_x is in its protected header as well. */
    const char *also = (info & EDHOC_DI_SIG) ? " and the protected header" : "";
    uint8_t kid = s->dev_kid;
    bool have_kid = (info & EDHOC_DI_KID) != 0;
    switch (bit) {
    case EDHOC_DEV_C_BSTR: {
        /* Only the initiator verifies MAC_2: C_R is its peer's identifier. */
        uint8_t c_r = s->role == EDHOC_INITIATOR ? s->peer_cid[0] : s->own_cid[0];
        text_add(t,
                 "C_R is the byte string h'%02x' instead of the int %d (0x%02x) in context_2 "
                 "(RFC 9528 Section 3.3.2)",
                 c_r, edhoc_one_byte_int_value(c_r), c_r);
        break;
    }
    case EDHOC_DEV_KID_INT:
        if (have_kid)
            text_add(t,
                     "ID_CRED_%c is {4: %d} instead of {4: h'%02x'} in context_%d%s (RFC 9528 "
                     "Section 3.5.3.2)",
                     x, edhoc_one_byte_int_value(kid), kid, msg, also);
        else
            text_add(t,
                     "ID_CRED_%c is {4: int} instead of {4: bstr} in context_%d%s (RFC 9528 "
                     "Section 3.5.3.2)",
                     x, msg, also);
        break;
    case EDHOC_DEV_ID_CRED_COMPACT:
        if (have_kid && edhoc_is_one_byte_int(kid))
            text_add(t,
                     "ID_CRED_%c is its compact form (the int %d) instead of {4: h'%02x'} in "
                     "context_%d%s (RFC 9528 Section 3.5.3.2)",
                     x, edhoc_one_byte_int_value(kid), kid, msg, also);
        else if (have_kid)
            text_add(t,
                     "ID_CRED_%c is its compact form (h'%02x') instead of {4: h'%02x'} in "
                     "context_%d%s (RFC 9528 Section 3.5.3.2)",
                     x, kid, kid, msg, also);
        else
            text_add(t,
                     "ID_CRED_%c is its compact form (the kid alone) instead of {4: kid} in "
                     "context_%d%s (RFC 9528 Section 3.5.3.2)",
                     x, msg, also);
        break;
    case EDHOC_DEV_CRED_WRAP:
        text_add(t, "CRED_%c is %s in context_%d (RFC 9528 Section 3.5.2)", x,
                 (info & EDHOC_DI_CRED_BSTR) ? "used without its byte string head"
                                             : "wrapped in an extra byte string",
                 msg);
        break;
    case EDHOC_DEV_EAD_OMITTED:
        text_add(t,
                 "EAD_%d is left out of context_%d although message_%d carries it (RFC 9528 "
                 "Section %s)",
                 msg, msg, msg, msg == 3 ? "5.4.2" : "5.3.2");
        break;
    default: break;
    }
}

/* The text of struct edhoc_diagnosis (the session has DI_DONE). */
void edhoc_diagnosis_text(const struct edhoc_session *s, char *buf, size_t cap)
{
    struct text_out t = {buf, cap, 0};
    if (cap)
        buf[0] = '\0';
    uint8_t info = s->dev_info;
    int msg = (info & EDHOC_DI_M3) ? 3 : 2;
    bool sig = (info & EDHOC_DI_SIG) != 0;
    const char *what = sig ? "Signature_or_MAC" : "MAC";
    const char *verb = sig ? "verifies" : "matches";
    char names[128];
    if (!(info & EDHOC_DI_MATCH)) {
        text_add(&t, "%s_%d verification failed: no known deviation explains it", what, msg);
        return;
    }
    if (s->dev_found == 0) {
        edhoc_deviations_format(s->dev_own, names, sizeof names);
        text_add(&t,
                 "%s_%d %s under RFC 9528 as written: the peer does not deviate, this side "
                 "emulates %s (a test aid)",
                 what, msg, verb, names);
        if (s->dev_tolerated)
            text_add(&t, "; tolerated (--tolerate %s)", names);
        return;
    }
    text_add(&t, "%s_%d %s when ", what, msg, verb);
    bool first = true;
    for (unsigned bit = 1; bit & EDHOC_DEV_ALL; bit <<= 1) {
        if (!(s->dev_found & bit))
            continue;
        if (!first)
            text_add(&t, " and ");
        deviation_clause(s, bit, &t);
        first = false;
    }
    /* What this side would have to tolerate: how the peer differs from
     * what it expected (the peer's deviations, unless it emulates some). */
    edhoc_deviations_format((unsigned)(s->dev_found ^ s->dev_own), names, sizeof names);
    if (s->dev_tolerated)
        text_add(&t, ": the peer deviates; tolerated (--tolerate %s)", names);
    else
        text_add(&t, ": the peer deviates; --tolerate %s accepts it", names);
}

int edhoc_session_diagnosis(const struct edhoc_session *s, struct edhoc_diagnosis *d)
{
    if (!s || !d)
        return EDHOC_ERR_ARG;
    memset(d, 0, sizeof *d);
    if (!(s->dev_info & EDHOC_DI_DONE))
        return EDHOC_ERR_STATE;
    d->matched = (s->dev_info & EDHOC_DI_MATCH) ? s->dev_found : 0;
    d->message = (s->dev_info & EDHOC_DI_M3) ? 3 : 2;
    edhoc_diagnosis_text(s, d->text, sizeof d->text);
    return 0;
}

unsigned edhoc_session_tolerated(const struct edhoc_session *s)
{
    return s ? s->dev_tolerated : 0;
}

unsigned edhoc_session_followed(const struct edhoc_session *s)
{
    return s ? s->dev_followed : 0;
}
