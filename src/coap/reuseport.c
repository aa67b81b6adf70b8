/*
 * Steering datagrams among responder workers (see edhoc/reuseport.h).
 *
 * The program sees the UDP payload: for a reuseport group the kernel
 * pulls the UDP header before running it (net/core/sock_reuseport.c,
 * run_bpf_filter with hdr_len = sizeof(struct udphdr)). Classic BPF has
 * no backward jumps, so the walk over the CoAP options (RFC 7252 Section
 * 3.1) is unrolled, one block per option. A load past the end stops the
 * interpreter with 0; the program therefore checks the bounds before each
 * option header, the only place a well-formed message may end, and reads
 * the rest (extended delta and length, the OSCORE option's value) only
 * where a well-formed message has the bytes.
 */
#include "edhoc/reuseport.h"
#include "edhoc/server.h"

/* The engine checks worker indexes against its own copy of the limit. */
_Static_assert(EDHOC_REUSEPORT_MAX_WORKERS == EDHOC_SERVER_MAX_WORKERS,
               "the steering program and the engine count workers alike");

#include <linux/filter.h>
#include <stdbool.h>
#include <string.h>

/* ---- The decision in C ---- */

/* Reads of the interpreter: past the end, the whole program gives 0. */
struct reader {
    const uint8_t *m;
    size_t len;
    bool oob;
};

static uint32_t rd8(struct reader *r, size_t at)
{
    if (at >= r->len) {
        r->oob = true;
        return 0;
    }
    return r->m[at];
}

static uint32_t rd16(struct reader *r, size_t at)
{
    if (at + 2 > r->len || at + 2 < at) {
        r->oob = true;
        return 0;
    }
    return (uint32_t)r->m[at] << 8 | r->m[at + 1];
}

uint32_t edhoc_reuseport_steer(const uint8_t *msg, size_t len, unsigned count)
{
    if (count < 2 || count > EDHOC_REUSEPORT_MAX_WORKERS)
        return EDHOC_REUSEPORT_BY_HASH;
    struct reader r = {msg, len, false};
    if (len < 4)
        return EDHOC_REUSEPORT_BY_HASH;
    /* An empty ACK or Reset (Code 0.00, RFC 7252 Sections 4.2 and 4.3)
     * answers a confirmable or non-confirmable message of this group by
     * its Message ID, and each worker picks the Message IDs of what it
     * sends itself (edhoc_reuseport_mid_owner): the ID names the worker. */
    if (rd8(&r, 1) == 0 && (rd8(&r, 0) & 0x30) >= 0x20)
        return edhoc_reuseport_mid_owner((uint16_t)rd16(&r, 2), count);
    uint32_t tkl = rd8(&r, 0) & 0x0f;
    if (tkl > 8)
        return EDHOC_REUSEPORT_BY_HASH;
    uint32_t p = 4 + tkl, number = 0;
    for (int i = 0; i < EDHOC_REUSEPORT_MAX_OPTIONS; i++) {
        if (!(len > p))
            return EDHOC_REUSEPORT_BY_HASH;
        uint32_t head = rd8(&r, p);
        if (head == 0xff)
            return EDHOC_REUSEPORT_BY_HASH;
        uint32_t delta = head >> 4, hdr;
        if (delta == 15)
            return EDHOC_REUSEPORT_BY_HASH;
        if (delta < 13) {
            hdr = 1;
        } else if (delta == 13) {
            delta = rd8(&r, p + 1) + 13;
            hdr = 2;
        } else {
            delta = rd16(&r, p + 1) + 269;
            hdr = 3;
        }
        if (r.oob)
            return 0;
        number = (number + delta) & 0xffffffffu;
        uint32_t olen = head & 0x0f;
        if (olen == 15)
            return EDHOC_REUSEPORT_BY_HASH;
        if (olen == 13) {
            olen = rd8(&r, p + hdr) + 13;
            hdr += 1;
        } else if (olen == 14) {
            olen = rd16(&r, p + hdr) + 269;
            hdr += 2;
        }
        if (r.oob)
            return 0;
        uint32_t value = p + hdr;
        if (number == 9) {
            if (olen == 0)
                return EDHOC_REUSEPORT_BY_HASH;
            uint32_t flags = rd8(&r, value);
            if (r.oob)
                return 0;
            /* RFC 8613 Section 6.1: bits 5-7 reserved (7 for an
             * extension); k (0x08) says a kid is present. */
            if (flags & 0xe0 || !(flags & 0x08) || (flags & 0x07) > 5)
                return EDHOC_REUSEPORT_BY_HASH;
            uint32_t at = 1 + (flags & 0x07);
            if (flags & 0x10) {
                uint32_t s = rd8(&r, value + at);
                if (r.oob)
                    return 0;
                at += s + 1;
            }
            if (olen > at) {
                uint32_t last = rd8(&r, value + olen - 1);
                if (r.oob)
                    return 0;
                return last % count;
            }
            return olen == at ? 0 : EDHOC_REUSEPORT_BY_HASH;
        }
        if (number > 9)
            return EDHOC_REUSEPORT_BY_HASH;
        p = value + olen;
    }
    return EDHOC_REUSEPORT_BY_HASH;
}

uint32_t edhoc_reuseport_mid_owner(uint16_t mid, unsigned count)
{
    return count ? mid % count : 0;
}

/* ---- The same decision as a classic BPF program ----
 * Scratch memory: M[0] the option header's offset, M[1] the option
 * number so far, M[2] the value's offset, M[3] the header byte (later
 * the OSCORE flags), M[4] the value's length, M[5] the delta, M[6] the
 * header's length, M[7] the offset of the kid inside the value. */

enum { L_NONE = -1 };

struct emitter {
    struct sock_filter *out;
    size_t cap, n;
    bool overflow;
    /* Label positions and pending references (jt/jf to a label). */
    int label_at[EDHOC_REUSEPORT_MAX_OPTIONS * 16 + 32];
    struct fix {
        size_t insn;
        int jt_label, jf_label; /* L_NONE: the next instruction */
        int ja_label;           /* for BPF_JA */
    } fixes[EDHOC_REUSEPORT_MAX_INSNS];
    size_t n_fixes;
    int next_label;
};

static int new_label(struct emitter *e)
{
    int l = e->next_label++;
    if ((size_t)l >= sizeof e->label_at / sizeof e->label_at[0]) {
        e->overflow = true;
        return 0;
    }
    e->label_at[l] = -1;
    return l;
}

static void place(struct emitter *e, int label)
{
    e->label_at[label] = (int)e->n;
}

static size_t op(struct emitter *e, uint16_t code, uint32_t k)
{
    if (e->n >= e->cap) {
        e->overflow = true;
        return e->n;
    }
    e->out[e->n] = (struct sock_filter){code, 0, 0, k};
    return e->n++;
}

static void jump(struct emitter *e, uint16_t code, uint32_t k, int jt, int jf)
{
    size_t at = op(e, BPF_JMP | code, k);
    if (e->n_fixes >= sizeof e->fixes / sizeof e->fixes[0]) {
        e->overflow = true;
        return;
    }
    e->fixes[e->n_fixes++] = (struct fix){at, jt, jf, L_NONE};
}

static void ja(struct emitter *e, int label)
{
    size_t at = op(e, BPF_JMP | BPF_JA, 0);
    if (e->n_fixes >= sizeof e->fixes / sizeof e->fixes[0]) {
        e->overflow = true;
        return;
    }
    e->fixes[e->n_fixes++] = (struct fix){at, L_NONE, L_NONE, label};
}

static bool resolve(struct emitter *e)
{
    for (size_t i = 0; i < e->n_fixes; i++) {
        struct fix *f = &e->fixes[i];
        struct sock_filter *in = &e->out[f->insn];
        if (f->ja_label != L_NONE) {
            int to = e->label_at[f->ja_label];
            if (to <= (int)f->insn)
                return false;
            in->k = (uint32_t)(to - (int)f->insn - 1);
            continue;
        }
        int labels[2] = {f->jt_label, f->jf_label};
        uint8_t *fields[2] = {&in->jt, &in->jf};
        for (int j = 0; j < 2; j++) {
            if (labels[j] == L_NONE)
                continue;
            int to = e->label_at[labels[j]];
            int off = to - (int)f->insn - 1;
            if (to < 0 || off < 0 || off > 255)
                return false;
            *fields[j] = (uint8_t)off;
        }
    }
    return true;
}

#define LD_MEM(i)   op(e, BPF_LD | BPF_MEM, (i))
#define ST_MEM(i)   op(e, BPF_ST, (i))
#define STX_MEM(i)  op(e, BPF_STX, (i))
#define LD_IMM(v)   op(e, BPF_LD | BPF_IMM, (v))
#define LD_LEN()    op(e, BPF_LD | BPF_W | BPF_LEN, 0)
#define LDB_X(k)    op(e, BPF_LD | BPF_B | BPF_IND, (k))
#define LDH_X(k)    op(e, BPF_LD | BPF_H | BPF_IND, (k))
#define ALU_K(o, v) op(e, BPF_ALU | (o) | BPF_K, (v))
#define ALU_X(o)    op(e, BPF_ALU | (o) | BPF_X, 0)
#define TAX()       op(e, BPF_MISC | BPF_TAX, 0)
#define RET_K(v)    op(e, BPF_RET | BPF_K, (v))
#define RET_A()     op(e, BPF_RET | BPF_A, 0)

/* One option: X holds its header's offset on entry and the next
 * option's on the way to `next`; `fail` returns by hash, `found` goes to
 * the OSCORE value. Every conditional target is inside the block. */
static void emit_option(struct emitter *e, int next, int found)
{
    int fail = new_label(e), extd = new_label(e), extd2 = new_label(e), after_delta = new_label(e),
        extl = new_label(e), extl2 = new_label(e), after_len = new_label(e),
        is_oscore = new_label(e);
    STX_MEM(0);
    LD_LEN();
    jump(e, BPF_JGT | BPF_X, 0, L_NONE, fail); /* len > offset */
    LDB_X(0);
    jump(e, BPF_JEQ | BPF_K, 0xff, fail, L_NONE); /* payload marker: no OSCORE */
    ST_MEM(3);
    ALU_K(BPF_RSH, 4);
    jump(e, BPF_JEQ | BPF_K, 15, fail, L_NONE);
    jump(e, BPF_JGE | BPF_K, 13, extd, L_NONE);
    ST_MEM(5);
    LD_IMM(1);
    ST_MEM(6);
    ja(e, after_delta);
    place(e, extd);
    jump(e, BPF_JEQ | BPF_K, 14, extd2, L_NONE);
    LDB_X(1);
    ALU_K(BPF_ADD, 13);
    ST_MEM(5);
    LD_IMM(2);
    ST_MEM(6);
    ja(e, after_delta);
    place(e, extd2);
    LDH_X(1);
    ALU_K(BPF_ADD, 269);
    ST_MEM(5);
    LD_IMM(3);
    ST_MEM(6);
    place(e, after_delta);
    LD_MEM(5);
    TAX();
    LD_MEM(1);
    ALU_X(BPF_ADD);
    ST_MEM(1);
    LD_MEM(3);
    ALU_K(BPF_AND, 0x0f);
    jump(e, BPF_JEQ | BPF_K, 15, fail, L_NONE);
    jump(e, BPF_JGE | BPF_K, 13, extl, L_NONE);
    ST_MEM(4);
    ja(e, after_len);
    place(e, extl);
    LD_MEM(0);
    TAX();
    LD_MEM(6);
    ALU_X(BPF_ADD);
    TAX();
    LD_MEM(3);
    ALU_K(BPF_AND, 0x0f);
    jump(e, BPF_JEQ | BPF_K, 14, extl2, L_NONE);
    LDB_X(0);
    ALU_K(BPF_ADD, 13);
    ST_MEM(4);
    LD_MEM(6);
    ALU_K(BPF_ADD, 1);
    ST_MEM(6);
    ja(e, after_len);
    place(e, extl2);
    LDH_X(0);
    ALU_K(BPF_ADD, 269);
    ST_MEM(4);
    LD_MEM(6);
    ALU_K(BPF_ADD, 2);
    ST_MEM(6);
    place(e, after_len);
    LD_MEM(0);
    TAX();
    LD_MEM(6);
    ALU_X(BPF_ADD);
    ST_MEM(2);
    LD_MEM(1);
    jump(e, BPF_JEQ | BPF_K, 9, is_oscore, L_NONE);
    jump(e, BPF_JGT | BPF_K, 9, fail, L_NONE); /* options come in order: none */
    LD_MEM(4);
    TAX();
    LD_MEM(2);
    ALU_X(BPF_ADD);
    TAX();
    ja(e, next);
    place(e, fail);
    RET_K(EDHOC_REUSEPORT_BY_HASH);
    place(e, is_oscore);
    ja(e, found);
}

/* The OSCORE option's value at M[2], its length in M[4] (RFC 8613
 * Section 6.1): flags, partial IV of n bytes, with h an s byte and the
 * kid context, then the kid up to the end of the value. */
static void emit_oscore_value(struct emitter *e, unsigned count)
{
    int by_hash = new_label(e), no_ctx = new_label(e), has_kid = new_label(e),
        empty_or_bad = new_label(e);
    LD_MEM(4);
    jump(e, BPF_JEQ | BPF_K, 0, by_hash, L_NONE);
    LD_MEM(2);
    TAX();
    LDB_X(0);
    ST_MEM(3);
    ALU_K(BPF_AND, 0xe0);
    jump(e, BPF_JGT | BPF_K, 0, by_hash, L_NONE);
    LD_MEM(3);
    ALU_K(BPF_AND, 0x08);
    jump(e, BPF_JEQ | BPF_K, 0, by_hash, L_NONE);
    LD_MEM(3);
    ALU_K(BPF_AND, 0x07);
    jump(e, BPF_JGT | BPF_K, 5, by_hash, L_NONE);
    ALU_K(BPF_ADD, 1);
    ST_MEM(7);
    LD_MEM(3);
    ALU_K(BPF_AND, 0x10);
    jump(e, BPF_JEQ | BPF_K, 0, no_ctx, L_NONE);
    LD_MEM(2);
    TAX();
    LD_MEM(7);
    ALU_X(BPF_ADD);
    TAX();
    LDB_X(0); /* s */
    ALU_K(BPF_ADD, 1);
    TAX();
    LD_MEM(7);
    ALU_X(BPF_ADD);
    ST_MEM(7);
    place(e, no_ctx);
    LD_MEM(7);
    TAX();
    LD_MEM(4);
    jump(e, BPF_JGT | BPF_X, 0, has_kid, empty_or_bad);
    place(e, has_kid);
    LD_MEM(2);
    TAX();
    LD_MEM(4);
    ALU_X(BPF_ADD);
    ALU_K(BPF_SUB, 1);
    TAX();
    LDB_X(0);
    ALU_K(BPF_MOD, count);
    RET_A();
    place(e, empty_or_bad);
    /* A == X: an empty kid (worker 0); A < X: the value is too short. */
    jump(e, BPF_JEQ | BPF_X, 0, L_NONE, by_hash);
    RET_K(0);
    place(e, by_hash);
    RET_K(EDHOC_REUSEPORT_BY_HASH);
}

int edhoc_reuseport_program(unsigned count, void *insns, size_t cap)
{
    if (count < 2 || count > EDHOC_REUSEPORT_MAX_WORKERS || !insns)
        return -1;
    static struct emitter e0;
    struct emitter *e = &e0;
    memset(e, 0, sizeof *e);
    e->out = insns;
    e->cap = cap;
    int by_hash = new_label(e), found = new_label(e);
    /* The kernel's check that no scratch cell is read before it is
     * written (check_load_and_stores) lets a RET fall through into the
     * next instruction's state, so every cell is written first. */
    LD_IMM(0);
    for (uint32_t m = 0; m < 8; m++)
        ST_MEM(m);
    /* Header: 4 bytes, then a token of TKL <= 8 bytes. */
    LD_LEN();
    jump(e, BPF_JGE | BPF_K, 4, L_NONE, by_hash);
    /* Empty ACK or Reset: the worker its Message ID names. */
    int not_empty = new_label(e), by_mid = new_label(e);
    op(e, BPF_LD | BPF_B | BPF_ABS, 1);
    jump(e, BPF_JEQ | BPF_K, 0, L_NONE, not_empty);
    op(e, BPF_LD | BPF_B | BPF_ABS, 0);
    ALU_K(BPF_AND, 0x30);
    jump(e, BPF_JGE | BPF_K, 0x20, by_mid, not_empty);
    place(e, by_mid);
    op(e, BPF_LD | BPF_H | BPF_ABS, 2);
    ALU_K(BPF_MOD, count);
    RET_A();
    place(e, not_empty);
    op(e, BPF_LD | BPF_B | BPF_ABS, 0);
    ALU_K(BPF_AND, 0x0f);
    jump(e, BPF_JGT | BPF_K, 8, by_hash, L_NONE);
    ALU_K(BPF_ADD, 4);
    TAX();
    int block = new_label(e);
    ja(e, block);
    place(e, by_hash);
    RET_K(EDHOC_REUSEPORT_BY_HASH);
    for (int i = 0; i < EDHOC_REUSEPORT_MAX_OPTIONS; i++) {
        place(e, block);
        block = new_label(e);
        emit_option(e, block, found);
    }
    place(e, block);
    RET_K(EDHOC_REUSEPORT_BY_HASH);
    place(e, found);
    emit_oscore_value(e, count);
    if (e->overflow || !resolve(e))
        return -1;
    return (int)e->n;
}
