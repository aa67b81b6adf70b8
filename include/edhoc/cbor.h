/*
 * edhoc/cbor.h - the small CBOR subset EDHOC and OSCORE need, over libcbor.
 *
 * Writer: encodes into a caller buffer with the deterministic (shortest)
 * encoding of RFC 8949 Section 4.2.1. Errors are sticky: write everything,
 * then check edhoc_cbor_writer_finish() once.
 *
 * Reader: decodes one data item head at a time from a caller buffer, with no
 * allocation. It is strict, because EDHOC requires deterministic CBOR
 * (RFC 9528 Section 3.1) and RFC 9529 Section 4.3 lists messages that must be
 * rejected for a non-shortest head: any non-shortest integer or length,
 * indefinite length, or truncation is an error.
 */
#ifndef EDHOC_CBOR_H
#define EDHOC_CBOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EDHOC_CBOR_ERR_TRUNCATED    (-2001) /* the item runs past the buffer */
#define EDHOC_CBOR_ERR_NOT_SHORTEST (-2002) /* head not in deterministic form */
#define EDHOC_CBOR_ERR_INDEFINITE   (-2003) /* indefinite length item */
#define EDHOC_CBOR_ERR_TYPE         (-2004) /* the item is not of the type asked */
#define EDHOC_CBOR_ERR_MALFORMED    (-2005) /* reserved additional info, bad simple */
#define EDHOC_CBOR_ERR_OVERFLOW     (-2006) /* writer: buffer too small; reader: value out of range */
#define EDHOC_CBOR_ERR_DEPTH        (-2007) /* reserved: nesting limits of callers */

/* ---- Writer ---- */

struct edhoc_cbor_writer {
    uint8_t *buf;
    size_t cap;
    size_t len;
    int error; /* 0 or the first EDHOC_CBOR_ERR_* */
};

void edhoc_cbor_writer_init(struct edhoc_cbor_writer *w, uint8_t *buf, size_t cap);
void edhoc_cbor_put_uint(struct edhoc_cbor_writer *w, uint64_t v);
void edhoc_cbor_put_int(struct edhoc_cbor_writer *w, int64_t v);
void edhoc_cbor_put_bstr(struct edhoc_cbor_writer *w, const uint8_t *p, size_t n);
void edhoc_cbor_put_bstr_head(struct edhoc_cbor_writer *w,
                              size_t n); /* caller writes n bytes next */
void edhoc_cbor_put_tstr(struct edhoc_cbor_writer *w, const char *s, size_t n);
void edhoc_cbor_put_array(struct edhoc_cbor_writer *w, size_t count);
void edhoc_cbor_put_map(struct edhoc_cbor_writer *w, size_t pairs);
void edhoc_cbor_put_tag(struct edhoc_cbor_writer *w, uint64_t tag);
void edhoc_cbor_put_bool(struct edhoc_cbor_writer *w, bool b);
void edhoc_cbor_put_null(struct edhoc_cbor_writer *w);
void edhoc_cbor_put_raw(struct edhoc_cbor_writer *w, const uint8_t *p,
                        size_t n); /* already-encoded bytes */
/* Returns the encoded length, or the writer's error (negative). */
long edhoc_cbor_writer_finish(const struct edhoc_cbor_writer *w);

/* Size of the head of a byte string / integer of this length / value. */
size_t edhoc_cbor_head_len(uint64_t value);

/* ---- Reader ---- */

enum edhoc_cbor_type {
    EDHOC_CBOR_UINT,  /* major 0: value in .u */
    EDHOC_CBOR_NINT,  /* major 1: value in .i (.u holds -1 - value) */
    EDHOC_CBOR_BSTR,  /* major 2: .ptr, .len */
    EDHOC_CBOR_TSTR,  /* major 3: .ptr, .len */
    EDHOC_CBOR_ARRAY, /* major 4: .len elements follow */
    EDHOC_CBOR_MAP,   /* major 5: .len pairs follow */
    EDHOC_CBOR_TAG,   /* major 6: .u is the tag, the tagged item follows */
    EDHOC_CBOR_FALSE,
    EDHOC_CBOR_TRUE,
    EDHOC_CBOR_NULL,
    EDHOC_CBOR_UNDEFINED,
    EDHOC_CBOR_SIMPLE, /* other simple values: .u */
    EDHOC_CBOR_FLOAT,  /* any float (EDHOC never uses them) */
};

struct edhoc_cbor_item {
    enum edhoc_cbor_type type;
    uint64_t u;           /* UINT value, NINT raw (-1-u), TAG number, SIMPLE value */
    int64_t i;            /* UINT/NINT as signed when it fits (else .u only) */
    const uint8_t *ptr;   /* BSTR/TSTR content */
    size_t len;           /* BSTR/TSTR length, ARRAY elements, MAP pairs */
    const uint8_t *start; /* first byte of the item's encoding */
    size_t head_len;      /* bytes of the head (for strings: without content) */
};

struct edhoc_cbor_reader {
    const uint8_t *buf;
    size_t len;
    size_t pos;
};

void edhoc_cbor_reader_init(struct edhoc_cbor_reader *r, const uint8_t *buf, size_t len);
/* Decode the next head (strings with their content) and advance past it.
 * Arrays/maps/tags: only the head is consumed; their content follows. */
int edhoc_cbor_get(struct edhoc_cbor_reader *r, struct edhoc_cbor_item *it);
/* Same without advancing. */
int edhoc_cbor_peek(const struct edhoc_cbor_reader *r, struct edhoc_cbor_item *it);
/* Skip one complete data item, nested content included. It counts the
 * items still owed instead of recursing, so nesting depth costs no stack,
 * and a count larger than the bytes left is EDHOC_CBOR_ERR_TRUNCATED at
 * once. */
int edhoc_cbor_skip(struct edhoc_cbor_reader *r);
bool edhoc_cbor_at_end(const struct edhoc_cbor_reader *r);
size_t edhoc_cbor_remaining(const struct edhoc_cbor_reader *r);

/* Typed getters: EDHOC_CBOR_ERR_TYPE when the next item is of another type
 * (the reader does not advance then). */
int edhoc_cbor_get_int(struct edhoc_cbor_reader *r, int64_t *v); /* uint or nint */
int edhoc_cbor_get_uint(struct edhoc_cbor_reader *r, uint64_t *v);
int edhoc_cbor_get_bstr(struct edhoc_cbor_reader *r, const uint8_t **p, size_t *n);
int edhoc_cbor_get_tstr(struct edhoc_cbor_reader *r, const uint8_t **p, size_t *n);
int edhoc_cbor_get_array(struct edhoc_cbor_reader *r, size_t *count);
int edhoc_cbor_get_map(struct edhoc_cbor_reader *r, size_t *pairs);

/* A well-formed, deterministic single item spanning exactly [buf, buf+len). */
int edhoc_cbor_check_item(const uint8_t *buf, size_t len);

/* Human-readable name of an EDHOC_CBOR_ERR_* code. */
const char *edhoc_cbor_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
