/*
 * Strict CBOR reader and deterministic writer over libcbor.
 *
 * libcbor's encoders already produce the shortest heads; its streaming
 * decoder reports one item per call without allocating, and tells us how
 * many bytes it consumed, which is what lets us detect non-shortest heads
 * (it accepts them silently).
 */
#include "edhoc/cbor.h"

#include <cbor.h>
#include <string.h>

/* ---- Writer ---- */

void edhoc_cbor_writer_init(struct edhoc_cbor_writer *w, uint8_t *buf, size_t cap)
{
    w->buf = buf;
    w->cap = buf ? cap : 0;
    w->len = 0;
    w->error = 0;
}

/* Account for n bytes produced by a libcbor encoder (0 = did not fit). */
static void writer_advance(struct edhoc_cbor_writer *w, size_t n)
{
    if (n == 0)
        w->error = EDHOC_CBOR_ERR_OVERFLOW;
    else
        w->len += n;
}

static unsigned char *writer_tail(struct edhoc_cbor_writer *w, size_t *room)
{
    /* No buffer is a buffer of size 0: report the overflow instead of
     * returning success for output that was never written. */
    if (!w->error && !w->buf)
        w->error = EDHOC_CBOR_ERR_OVERFLOW;
    if (w->error) {
        *room = 0;
        return NULL;
    }
    *room = w->cap - w->len;
    return w->buf + w->len;
}

#define WRITER_ENCODE(w, call_with_dst_room)                                                       \
    do {                                                                                           \
        size_t room;                                                                               \
        unsigned char *dst = writer_tail((w), &room);                                              \
        if (!dst)                                                                                  \
            return;                                                                                \
        writer_advance((w), call_with_dst_room);                                                   \
    } while (0)

void edhoc_cbor_put_uint(struct edhoc_cbor_writer *w, uint64_t v)
{
    WRITER_ENCODE(w, cbor_encode_uint(v, dst, room));
}

void edhoc_cbor_put_int(struct edhoc_cbor_writer *w, int64_t v)
{
    if (v >= 0)
        edhoc_cbor_put_uint(w, (uint64_t)v);
    else
        WRITER_ENCODE(w, cbor_encode_negint((uint64_t)(-(v + 1)), dst, room));
}

void edhoc_cbor_put_bstr_head(struct edhoc_cbor_writer *w, size_t n)
{
    WRITER_ENCODE(w, cbor_encode_bytestring_start(n, dst, room));
}

void edhoc_cbor_put_raw(struct edhoc_cbor_writer *w, const uint8_t *p, size_t n)
{
    if (w->error)
        return;
    if (n > w->cap - w->len) {
        w->error = EDHOC_CBOR_ERR_OVERFLOW;
        return;
    }
    if (n)
        memcpy(w->buf + w->len, p, n);
    w->len += n;
}

void edhoc_cbor_put_bstr(struct edhoc_cbor_writer *w, const uint8_t *p, size_t n)
{
    edhoc_cbor_put_bstr_head(w, n);
    edhoc_cbor_put_raw(w, p, n);
}

void edhoc_cbor_put_tstr(struct edhoc_cbor_writer *w, const char *s, size_t n)
{
    WRITER_ENCODE(w, cbor_encode_string_start(n, dst, room));
    edhoc_cbor_put_raw(w, (const uint8_t *)s, n);
}

void edhoc_cbor_put_array(struct edhoc_cbor_writer *w, size_t count)
{
    WRITER_ENCODE(w, cbor_encode_array_start(count, dst, room));
}

void edhoc_cbor_put_map(struct edhoc_cbor_writer *w, size_t pairs)
{
    WRITER_ENCODE(w, cbor_encode_map_start(pairs, dst, room));
}

void edhoc_cbor_put_tag(struct edhoc_cbor_writer *w, uint64_t tag)
{
    WRITER_ENCODE(w, cbor_encode_tag(tag, dst, room));
}

void edhoc_cbor_put_bool(struct edhoc_cbor_writer *w, bool b)
{
    WRITER_ENCODE(w, cbor_encode_bool(b, dst, room));
}

void edhoc_cbor_put_null(struct edhoc_cbor_writer *w)
{
    WRITER_ENCODE(w, cbor_encode_null(dst, room));
}

long edhoc_cbor_writer_finish(const struct edhoc_cbor_writer *w)
{
    return w->error ? w->error : (long)w->len;
}

size_t edhoc_cbor_head_len(uint64_t value)
{
    if (value < 24)
        return 1;
    if (value <= 0xff)
        return 2;
    if (value <= 0xffff)
        return 3;
    if (value <= 0xffffffffu)
        return 5;
    return 9;
}

/* ---- Reader ---- */

struct decode_ctx {
    struct edhoc_cbor_item *it;
    int error;
    bool has_argument; /* the head carries a value whose width must be shortest */
};

#define CTX(c) ((struct decode_ctx *)(c))

static void on_uint(void *c, uint64_t v)
{
    CTX(c)->it->type = EDHOC_CBOR_UINT;
    CTX(c)->it->u = v;
    CTX(c)->it->i = v <= INT64_MAX ? (int64_t)v : 0;
    CTX(c)->has_argument = true;
}
static void on_uint8(void *c, uint8_t v)
{
    on_uint(c, v);
}
static void on_uint16(void *c, uint16_t v)
{
    on_uint(c, v);
}
static void on_uint32(void *c, uint32_t v)
{
    on_uint(c, v);
}

static void on_negint(void *c, uint64_t v)
{
    CTX(c)->it->type = EDHOC_CBOR_NINT;
    CTX(c)->it->u = v;
    CTX(c)->it->i = v <= INT64_MAX ? -1 - (int64_t)v : 0;
    CTX(c)->has_argument = true;
}
static void on_negint8(void *c, uint8_t v)
{
    on_negint(c, v);
}
static void on_negint16(void *c, uint16_t v)
{
    on_negint(c, v);
}
static void on_negint32(void *c, uint32_t v)
{
    on_negint(c, v);
}

static void on_bstr(void *c, cbor_data p, size_t n)
{
    CTX(c)->it->type = EDHOC_CBOR_BSTR;
    CTX(c)->it->ptr = p;
    CTX(c)->it->len = n;
    CTX(c)->has_argument = true;
}

static void on_tstr(void *c, cbor_data p, size_t n)
{
    CTX(c)->it->type = EDHOC_CBOR_TSTR;
    CTX(c)->it->ptr = p;
    CTX(c)->it->len = n;
    CTX(c)->has_argument = true;
}

static void on_array(void *c, size_t n)
{
    CTX(c)->it->type = EDHOC_CBOR_ARRAY;
    CTX(c)->it->len = n;
    CTX(c)->has_argument = true;
}

static void on_map(void *c, size_t n)
{
    CTX(c)->it->type = EDHOC_CBOR_MAP;
    CTX(c)->it->len = n;
    CTX(c)->has_argument = true;
}

static void on_tag(void *c, uint64_t v)
{
    CTX(c)->it->type = EDHOC_CBOR_TAG;
    CTX(c)->it->u = v;
    CTX(c)->has_argument = true;
}

static void on_indefinite(void *c)
{
    CTX(c)->error = EDHOC_CBOR_ERR_INDEFINITE;
}
static void on_break(void *c)
{
    CTX(c)->error = EDHOC_CBOR_ERR_MALFORMED;
}

static void on_float(void *c, float f)
{
    (void)f;
    CTX(c)->it->type = EDHOC_CBOR_FLOAT;
}
static void on_double(void *c, double d)
{
    (void)d;
    CTX(c)->it->type = EDHOC_CBOR_FLOAT;
}
static void on_null(void *c)
{
    CTX(c)->it->type = EDHOC_CBOR_NULL;
}
static void on_undefined(void *c)
{
    CTX(c)->it->type = EDHOC_CBOR_UNDEFINED;
}
static void on_bool(void *c, bool b)
{
    CTX(c)->it->type = b ? EDHOC_CBOR_TRUE : EDHOC_CBOR_FALSE;
}

static const struct cbor_callbacks strict_callbacks = {
    .uint8 = on_uint8,
    .uint16 = on_uint16,
    .uint32 = on_uint32,
    .uint64 = on_uint,
    .negint8 = on_negint8,
    .negint16 = on_negint16,
    .negint32 = on_negint32,
    .negint64 = on_negint,
    .byte_string = on_bstr,
    .byte_string_start = on_indefinite,
    .string = on_tstr,
    .string_start = on_indefinite,
    .array_start = on_array,
    .indef_array_start = on_indefinite,
    .map_start = on_map,
    .indef_map_start = on_indefinite,
    .tag = on_tag,
    .float2 = on_float,
    .float4 = on_float,
    .float8 = on_double,
    .undefined = on_undefined,
    .null = on_null,
    .boolean = on_bool,
    .indef_break = on_break,
};

void edhoc_cbor_reader_init(struct edhoc_cbor_reader *r, const uint8_t *buf, size_t len)
{
    r->buf = buf;
    r->len = buf ? len : 0;
    r->pos = 0;
}

int edhoc_cbor_peek(const struct edhoc_cbor_reader *r, struct edhoc_cbor_item *it)
{
    memset(it, 0, sizeof *it);
    if (r->pos >= r->len)
        return EDHOC_CBOR_ERR_TRUNCATED;
    const uint8_t *start = r->buf + r->pos;
    size_t avail = r->len - r->pos;
    it->start = start;

    /* libcbor 0.8 treats simple values 0..23 (0xe0..0xf3) as errors; they
     * are well-formed CBOR, so report them as SIMPLE ourselves. */
    if (start[0] >= 0xe0 && start[0] <= 0xf3) {
        it->type = EDHOC_CBOR_SIMPLE;
        it->u = start[0] & 0x1f;
        it->head_len = 1;
        return 0;
    }
    /* Two-byte simple values below 32 are not well-formed (RFC 8949
     * Section 3.3); libcbor rejects all of them, valid or not. */
    if (start[0] == 0xf8) {
        if (avail < 2)
            return EDHOC_CBOR_ERR_TRUNCATED;
        if (start[1] < 32)
            return EDHOC_CBOR_ERR_MALFORMED;
        it->type = EDHOC_CBOR_SIMPLE;
        it->u = start[1];
        it->head_len = 2;
        return 0;
    }

    struct decode_ctx ctx = {.it = it, .error = 0, .has_argument = false};
    struct cbor_decoder_result res = cbor_stream_decode(start, avail, &strict_callbacks, &ctx);
    if (res.status == CBOR_DECODER_NEDATA)
        return EDHOC_CBOR_ERR_TRUNCATED;
    if (res.status != CBOR_DECODER_FINISHED)
        return EDHOC_CBOR_ERR_MALFORMED;
    if (ctx.error)
        return ctx.error;

    size_t content = 0;
    uint64_t argument = 0;
    switch (it->type) {
    case EDHOC_CBOR_UINT:
    case EDHOC_CBOR_NINT:
    case EDHOC_CBOR_TAG: argument = it->u; break;
    case EDHOC_CBOR_BSTR:
    case EDHOC_CBOR_TSTR:
        argument = it->len;
        content = it->len;
        break;
    case EDHOC_CBOR_ARRAY:
    case EDHOC_CBOR_MAP: argument = it->len; break;
    default: break;
    }
    it->head_len = res.read - content;
    if (ctx.has_argument && it->head_len != edhoc_cbor_head_len(argument))
        return EDHOC_CBOR_ERR_NOT_SHORTEST;
    return 0;
}

/* Bytes the item's own encoding occupies (content of strings included). */
static size_t item_size(const struct edhoc_cbor_item *it)
{
    if (it->type == EDHOC_CBOR_BSTR || it->type == EDHOC_CBOR_TSTR)
        return it->head_len + it->len;
    return it->head_len;
}

int edhoc_cbor_get(struct edhoc_cbor_reader *r, struct edhoc_cbor_item *it)
{
    int rc = edhoc_cbor_peek(r, it);
    if (rc)
        return rc;
    r->pos += item_size(it);
    return 0;
}

int edhoc_cbor_skip(struct edhoc_cbor_reader *r)
{
    /* Count of items still to consume; each item takes at least one byte, so
     * a count larger than what is left is a truncation, found without
     * recursing. */
    uint64_t pending = 1;
    size_t saved = r->pos;
    while (pending > 0) {
        struct edhoc_cbor_item it;
        int rc = edhoc_cbor_get(r, &it);
        if (rc) {
            r->pos = saved;
            return rc;
        }
        pending--;
        uint64_t add = 0;
        size_t left = edhoc_cbor_remaining(r);
        bool too_many = false;
        if (it.type == EDHOC_CBOR_ARRAY) {
            add = it.len;
        } else if (it.type == EDHOC_CBOR_MAP) {
            /* A pair count near 2^63 would wrap when doubled and look like
             * an empty map: compare before multiplying. */
            too_many = it.len > left / 2;
            add = too_many ? 0 : (uint64_t)it.len * 2;
        } else if (it.type == EDHOC_CBOR_TAG) {
            add = 1;
        }
        if (too_many || add > left || pending + add > left) {
            r->pos = saved;
            return EDHOC_CBOR_ERR_TRUNCATED;
        }
        pending += add;
    }
    return 0;
}

bool edhoc_cbor_at_end(const struct edhoc_cbor_reader *r)
{
    return r->pos >= r->len;
}

size_t edhoc_cbor_remaining(const struct edhoc_cbor_reader *r)
{
    return r->pos < r->len ? r->len - r->pos : 0;
}

/* Peek, check the type, and advance only on a match. */
static int get_typed(struct edhoc_cbor_reader *r, struct edhoc_cbor_item *it,
                     enum edhoc_cbor_type want)
{
    int rc = edhoc_cbor_peek(r, it);
    if (rc)
        return rc;
    if (it->type != want)
        return EDHOC_CBOR_ERR_TYPE;
    r->pos += item_size(it);
    return 0;
}

int edhoc_cbor_get_int(struct edhoc_cbor_reader *r, int64_t *v)
{
    struct edhoc_cbor_item it;
    int rc = edhoc_cbor_peek(r, &it);
    if (rc)
        return rc;
    if (it.type != EDHOC_CBOR_UINT && it.type != EDHOC_CBOR_NINT)
        return EDHOC_CBOR_ERR_TYPE;
    if (it.u > INT64_MAX)
        return EDHOC_CBOR_ERR_OVERFLOW;
    r->pos += it.head_len;
    *v = it.i;
    return 0;
}

int edhoc_cbor_get_uint(struct edhoc_cbor_reader *r, uint64_t *v)
{
    struct edhoc_cbor_item it;
    int rc = get_typed(r, &it, EDHOC_CBOR_UINT);
    if (!rc)
        *v = it.u;
    return rc;
}

int edhoc_cbor_get_bstr(struct edhoc_cbor_reader *r, const uint8_t **p, size_t *n)
{
    struct edhoc_cbor_item it;
    int rc = get_typed(r, &it, EDHOC_CBOR_BSTR);
    if (!rc) {
        *p = it.ptr;
        *n = it.len;
    }
    return rc;
}

int edhoc_cbor_get_tstr(struct edhoc_cbor_reader *r, const uint8_t **p, size_t *n)
{
    struct edhoc_cbor_item it;
    int rc = get_typed(r, &it, EDHOC_CBOR_TSTR);
    if (!rc) {
        *p = it.ptr;
        *n = it.len;
    }
    return rc;
}

int edhoc_cbor_get_array(struct edhoc_cbor_reader *r, size_t *count)
{
    struct edhoc_cbor_item it;
    int rc = get_typed(r, &it, EDHOC_CBOR_ARRAY);
    if (!rc)
        *count = it.len;
    return rc;
}

int edhoc_cbor_get_map(struct edhoc_cbor_reader *r, size_t *pairs)
{
    struct edhoc_cbor_item it;
    int rc = get_typed(r, &it, EDHOC_CBOR_MAP);
    if (!rc)
        *pairs = it.len;
    return rc;
}

int edhoc_cbor_check_item(const uint8_t *buf, size_t len)
{
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, buf, len);
    int rc = edhoc_cbor_skip(&r);
    if (rc)
        return rc;
    return edhoc_cbor_at_end(&r) ? 0 : EDHOC_CBOR_ERR_MALFORMED;
}

const char *edhoc_cbor_strerror(int err)
{
    switch (err) {
    case 0: return "ok";
    case EDHOC_CBOR_ERR_TRUNCATED: return "CBOR item truncated";
    case EDHOC_CBOR_ERR_NOT_SHORTEST: return "CBOR head not in shortest (deterministic) form";
    case EDHOC_CBOR_ERR_INDEFINITE: return "CBOR indefinite-length item";
    case EDHOC_CBOR_ERR_TYPE: return "unexpected CBOR type";
    case EDHOC_CBOR_ERR_MALFORMED: return "malformed CBOR";
    case EDHOC_CBOR_ERR_OVERFLOW: return "CBOR value or buffer overflow";
    case EDHOC_CBOR_ERR_DEPTH: return "CBOR nesting too deep";
    default: return "unknown CBOR error";
    }
}
