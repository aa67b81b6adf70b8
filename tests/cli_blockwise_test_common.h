/* What the end-to-end tests of block-wise transfers through the real
 * binary share: the request bodies (byte i is 'a' + i % 26) written once
 * per program, static OSCORE context pairs, one `coap` transfer and its
 * checks, and the capture of a transfer read back (pcap, raw IP, UDP,
 * CoAP options) to check the blocks on the wire (RFC 7959). */
#ifndef CLI_BLOCKWISE_TEST_COMMON_H
#define CLI_BLOCKWISE_TEST_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "net_test_util.h"

/* Each CLI run is bounded twice: by its own --timeout and by timeout(1). */
#define RUN_TIMEOUT_S   40
#define CLI_TIMEOUT_OPT "--timeout 20"

#define CLI_RUN(out, ...) net_cli_run(out, RUN_TIMEOUT_S, false, __VA_ARGS__)
#define N_SIZES           (sizeof sizes / sizeof sizes[0])
#define N_BS              (sizeof bsizes / sizeof bsizes[0])

#define BIG_MAX_BODY   65536
#define SMALL_MAX_BODY 4096

/* ---- the datagrams of a capture ---------------------------------------- */

#define OPT_ETAG   4
#define OPT_OSCORE 9
#define OPT_BLOCK2 23
#define OPT_BLOCK1 27
#define OPT_SIZE2  28
#define OPT_SIZE1  60

/* Wireshark's OSCORE table row (uat:oscore_contexts): "Sender ID",
 * "Recipient ID", "Master Secret", "Master Salt", "ID Context",
 * "Algorithm", from the client's side (the dissector picks the row whose
 * Sender ID is the request's kid); see tests/test_cli_tshark.c. */
#define WS_SECRET "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
#define WS_ROW(secret)                                                                             \
    "\"c7\",\"07\",\"" secret "\",\"9e7ca92223786340\",\"\",\"AES-CCM-16-64-128 (CCM*)\""

static const size_t sizes[] = {0, 1, 1023, 1024, 1025, 3000, 20000, 65536};

/* ---- small helpers ---------------------------------------------------- */

/* Append a line to a bounded report of problems (collected so that one
 * failing cell of a matrix does not hide the others). A failing matrix can
 * have thousands of lines, and a CI log keeps only its start and its end:
 * so each transfer (report_begin .. report_end) keeps at most
 * REPORT_PER_ITEM lines of its own, and the report opens with one line
 * per failing transfer, naming it and its first problem. */
#define REPORT_PER_ITEM 4

struct report {
    char text[16384];
    size_t len;
    unsigned problems;
    char summary[4096];
    size_t summary_len;
    unsigned items_failed;
    /* the transfer being checked: its name, problems, first problem */
    char item[160];
    unsigned item_problems;
    char item_first[240];
};

static inline void report_append(char *buf, size_t cap, size_t *len, const char *fmt, va_list ap)
{
    if (*len + 2 >= cap)
        return;
    int n = vsnprintf(buf + *len, cap - *len - 1, fmt, ap);
    if (n > 0)
        *len += (size_t)n < cap - *len - 1 ? (size_t)n : cap - *len - 2;
    buf[(*len)++] = '\n';
    buf[*len] = '\0';
}

static inline void report_printf(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline void report_printf(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report_append(buf, cap, len, fmt, ap);
    va_end(ap);
}

static void report_add(struct report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void report_add(struct report *r, const char *fmt, ...)
{
    r->problems++;
    va_list ap;
    if (r->item[0] && r->item_problems++ == 0) {
        va_start(ap, fmt);
        vsnprintf(r->item_first, sizeof r->item_first, fmt, ap);
        va_end(ap);
        for (char *c = r->item_first; *c; c++)
            if (*c == '\n')
                *c = ' ';
    }
    if (r->item[0] && r->item_problems > REPORT_PER_ITEM)
        return;
    va_start(ap, fmt);
    report_append(r->text, sizeof r->text, &r->len, fmt, ap);
    va_end(ap);
}

/* The checks of one transfer begin: its problems are counted apart. */
static inline void report_begin(struct report *r, const char *item)
{
    snprintf(r->item, sizeof r->item, "%s", item);
    r->item_problems = 0;
    r->item_first[0] = '\0';
}

/* ... and end: a failing transfer gets its line in the summary. */
static inline void report_end(struct report *r)
{
    if (r->item_problems) {
        r->items_failed++;
        if (r->item_problems > REPORT_PER_ITEM)
            report_printf(r->text, sizeof r->text, &r->len, "%s: %u more problem(s) not listed",
                          r->item, r->item_problems - REPORT_PER_ITEM);
        report_printf(r->summary, sizeof r->summary, &r->summary_len,
                      "  %s: %u problem(s), first: %s", r->item, r->item_problems, r->item_first);
    }
    r->item[0] = '\0';
}

/* cmocka cuts long failure messages: the whole report goes to stderr,
 * its summary first; the failure message names the first failing
 * transfer, so that even a cut log says what failed. */
static inline void report_check(const struct report *r, const char *what)
{
    if (!r->problems)
        return;
    fprintf(stderr, "%s: %u problem(s) in %u transfer(s)%s:\n%s", what, r->problems,
            r->items_failed, r->items_failed ? ", one line each" : "", r->summary);
    fprintf(stderr, "%s: the problems%s:\n%s", what,
            r->len + 2 >= sizeof r->text ? " (the first ones)" : "", r->text);
    fail_msg("%s: %u problem(s), listed above; the first: %.300s", what, r->problems,
             r->summary_len ? r->summary : r->text);
}

/* The whole of a binary file (malloc'd, *len set); NULL if it cannot be
 * opened. */
static inline uint8_t *read_bin(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    *len = 0;
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n;
    uint8_t *b = malloc(cap);
    while (b && (n = fread(b + *len, 1, cap - *len, f)) > 0) {
        *len += n;
        if (*len == cap) {
            uint8_t *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
    }
    fclose(f);
    return b;
}

/* The deterministic request body of size n (different bytes for each
 * size and each position, every byte value occurring). */
static inline uint8_t *make_body(size_t n)
{
    uint8_t *b = malloc(n ? n : 1);
    uint32_t x = 2463534242u ^ (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b[i] = (uint8_t)(x >> 11);
    }
    return b;
}

/* What GET /bytes?n=N serves: byte i is 'a' + i % 26. */
static inline uint8_t *make_pattern(size_t n)
{
    uint8_t *b = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)('a' + i % 26);
    return b;
}

static inline void body_path(char *out, size_t cap, size_t n)
{
    char name[64];
    snprintf(name, sizeof name, "body-%zu.bin", n);
    net_path(out, cap, name);
}

/* A static OSCORE context pair (libcoap conf format): the client's Sender
 * ID is client_sid, the server's srv_sid, the master secret made from
 * seed, RFC 8613 Appendix C.1.1's salt. Each responder gets a pair of its
 * own: two servers with one context would repeat each other's nonces. */
static inline void context_pair(const char *name, const char *client_sid, const char *srv_sid,
                                const char *secret, char *client_conf, char *server_conf,
                                size_t cap)
{
    char text[400], fname[64];
    snprintf(fname, sizeof fname, "%s-client.conf", name);
    net_path(client_conf, cap, fname);
    snprintf(fname, sizeof fname, "%s-server.conf", name);
    net_path(server_conf, cap, fname);
    snprintf(text, sizeof text,
             "master_secret,hex,\"%s\"\nmaster_salt,hex,\"9e7ca92223786340\"\n"
             "sender_id,hex,\"%s\"\nrecipient_id,hex,\"%s\"\n",
             secret, client_sid, srv_sid);
    net_write_file(client_conf, text, 0600);
    snprintf(text, sizeof text,
             "master_secret,hex,\"%s\"\nmaster_salt,hex,\"9e7ca92223786340\"\n"
             "sender_id,hex,\"%s\"\nrecipient_id,hex,\"%s\"\n",
             secret, srv_sid, client_sid);
    net_write_file(server_conf, text, 0600);
}

static inline size_t ceil_div(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

static inline int szx_of(unsigned bs)
{
    int s = 0;
    while ((16u << s) < bs)
        s++;
    return s;
}

/* The number after "key": in s, or -1. */
static inline long json_num(const char *s, const char *key)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(s, pat);
    return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

struct blk {
    bool present;
    unsigned num, m, szx;
};

struct dgram {
    unsigned frame; /* 1-based, as tshark counts */
    bool to_server;
    uint8_t type, code;
    uint16_t mid;
    bool oscore, duplicate;
    struct blk b1, b2;
    long size1, size2;
    uint8_t etag[8];
    size_t etag_len;
    const uint8_t *payload;
    size_t payload_len;
};

struct capture {
    uint8_t *buf;
    size_t len;
    struct dgram *d;
    size_t n;
};

static inline uint32_t rd32(const uint8_t *p, bool swap)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return swap ? __builtin_bswap32(v) : v;
}

/* CoAP (RFC 7252 Section 3) of one UDP payload into d; -1 if malformed. */
static inline int parse_coap(const uint8_t *p, size_t n, struct dgram *d)
{
    if (n < 4 || (p[0] >> 6) != 1)
        return -1;
    d->type = (p[0] >> 4) & 3;
    size_t tkl = p[0] & 15;
    d->code = p[1];
    d->mid = (uint16_t)(p[2] << 8 | p[3]);
    size_t i = 4 + tkl;
    if (tkl > 8 || i > n)
        return -1;
    unsigned opt = 0;
    d->size1 = d->size2 = -1;
    while (i < n && p[i] != 0xff) {
        unsigned delta = p[i] >> 4, len = p[i] & 15;
        i++;
        if (delta == 13) {
            if (i >= n)
                return -1;
            delta = 13u + p[i++];
        } else if (delta == 14) {
            if (i + 1 >= n)
                return -1;
            delta = 269u + (unsigned)(p[i] << 8 | p[i + 1]);
            i += 2;
        } else if (delta == 15) {
            return -1;
        }
        if (len == 13) {
            if (i >= n)
                return -1;
            len = 13u + p[i++];
        } else if (len == 14) {
            if (i + 1 >= n)
                return -1;
            len = 269u + (unsigned)(p[i] << 8 | p[i + 1]);
            i += 2;
        } else if (len == 15) {
            return -1;
        }
        if (i + len > n)
            return -1;
        opt += delta;
        uint32_t v = 0;
        for (unsigned k = 0; k < len && k < 4; k++)
            v = v << 8 | p[i + k];
        struct blk *b = opt == OPT_BLOCK1 ? &d->b1 : opt == OPT_BLOCK2 ? &d->b2 : NULL;
        if (b) {
            b->present = true;
            b->num = v >> 4;
            b->m = (v >> 3) & 1;
            b->szx = v & 7;
        }
        if (opt == OPT_SIZE1)
            d->size1 = (long)v;
        if (opt == OPT_SIZE2)
            d->size2 = (long)v;
        if (opt == OPT_OSCORE)
            d->oscore = true;
        if (opt == OPT_ETAG && len <= 8) {
            memcpy(d->etag, p + i, len);
            d->etag_len = len;
        }
        i += len;
    }
    if (i < n) { /* payload marker */
        d->payload = p + i + 1;
        d->payload_len = n - i - 1;
        if (d->payload_len == 0)
            return -1; /* a marker without payload is malformed (RFC 7252 3) */
    }
    return 0;
}

/* Read a pcap written by edhoc-cli --pcap (raw IP) or any pcap of
 * Ethernet-less IPv4: every UDP datagram to or from server_port. A second
 * datagram with the direction and Message ID of an earlier one (a
 * retransmission or its repeated answer) is marked duplicate. */
static inline void capture_read(const char *path, uint16_t server_port, struct capture *c)
{
    memset(c, 0, sizeof *c);
    c->buf = read_bin(path, &c->len);
    if (!c->buf)
        fail_msg("cannot read the capture %s", path);
    if (c->len < 24)
        fail_msg("%s: not a pcap file (%zu bytes)", path, c->len);
    uint32_t magic = rd32(c->buf, false);
    bool swap = false;
    if (magic == 0xa1b2c3d4u || magic == 0xa1b23c4du)
        swap = false;
    else if (magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u)
        swap = true;
    else
        fail_msg("%s: not a pcap file (magic %08x)", path, magic);
    uint32_t linktype = rd32(c->buf + 20, swap);
    if (linktype != 101 && linktype != 228 && linktype != 12 && linktype != 14)
        fail_msg("%s: link type %u, expected raw IP", path, linktype);
    size_t cap = 256;
    c->d = calloc(cap, sizeof *c->d);
    unsigned frame = 0;
    for (size_t off = 24; off + 16 <= c->len;) {
        uint32_t incl = rd32(c->buf + off + 8, swap);
        const uint8_t *pkt = c->buf + off + 16;
        off += 16 + incl;
        frame++;
        if (off > c->len)
            fail_msg("%s: truncated record %u", path, frame);
        if (incl < 28 || (pkt[0] >> 4) != 4 || pkt[9] != 17)
            continue; /* only IPv4 UDP is sent on 127.0.0.1 */
        size_t ihl = (size_t)(pkt[0] & 15) * 4;
        if (ihl + 8 > incl)
            continue;
        const uint8_t *udp = pkt + ihl;
        uint16_t sport = (uint16_t)(udp[0] << 8 | udp[1]);
        uint16_t dport = (uint16_t)(udp[2] << 8 | udp[3]);
        if (sport != server_port && dport != server_port)
            continue;
        if (c->n == cap) {
            cap *= 2;
            c->d = realloc(c->d, cap * sizeof *c->d);
        }
        struct dgram *d = &c->d[c->n];
        memset(d, 0, sizeof *d);
        d->frame = frame;
        d->to_server = dport == server_port;
        if (parse_coap(udp + 8, incl - ihl - 8, d))
            fail_msg("%s: frame %u is not a well-formed CoAP message", path, frame);
        for (size_t k = 0; k < c->n; k++) {
            if (c->d[k].to_server == d->to_server && c->d[k].mid == d->mid && d->code != 0) {
                d->duplicate = true;
                break;
            }
        }
        c->n++;
    }
}

/* What the wire held when a check of it failed, into the report, one line
 * per datagram: the first and last few, and every one out of the ordinary
 * run of a transfer (a duplicate, a Reset, an empty message, a message
 * from the server that is not a piggybacked answer, a code other than
 * 0.01/0.02, 2.04, 2.05 and 2.31), at most max lines in all. */
static inline bool capture_unusual(const struct dgram *d)
{
    if (d->duplicate || d->type == 3 || d->code == 0)
        return true;
    if (d->to_server)
        return d->type != 0 || (d->code != 1 && d->code != 2);
    return d->type != 2 || (d->code != 68 && d->code != 69 && d->code != 95);
}

static inline void capture_dump(struct report *r, const struct capture *c, size_t max)
{
    static const char *const types[] = {"CON", "NON", "ACK", "RST"};
    size_t shown = 0, skipped = 0;
    for (size_t k = 0; k < c->n; k++) {
        const struct dgram *d = &c->d[k];
        bool edge = k < 6 || k + 4 >= c->n;
        if (shown >= max || (!edge && !capture_unusual(d))) {
            skipped++;
            continue;
        }
        if (skipped)
            report_printf(r->text, sizeof r->text, &r->len, "    (%zu ordinary datagrams)",
                          skipped);
        skipped = 0;
        shown++;
        report_printf(r->text, sizeof r->text, &r->len,
                      "    frame %u %s %s %u.%02u MID %u%s%s B1 %s%u/%u/%u B2 %s%u/%u/%u %zu bytes",
                      d->frame, d->to_server ? "->" : "<-", types[d->type & 3], d->code >> 5,
                      d->code & 31, d->mid, d->duplicate ? " (duplicate)" : "",
                      d->oscore ? " OSCORE" : "", d->b1.present ? "" : "-", d->b1.num, d->b1.m,
                      d->b1.szx, d->b2.present ? "" : "-", d->b2.num, d->b2.m, d->b2.szx,
                      d->payload_len);
    }
    if (skipped)
        report_printf(r->text, sizeof r->text, &r->len, "    (%zu more datagrams, %zu in all)",
                      skipped, c->n);
}

static inline void capture_free(struct capture *c)
{
    free(c->buf);
    free(c->d);
    memset(c, 0, sizeof *c);
}

/* Check one descriptive block sequence (the Block1 blocks of a request
 * body, or the Block2 blocks of a response body) against the whole body:
 * RFC 7959 Section 2.2: "NUM: Block Number ... Block number 0 indicates
 * the first block of a body"; "M: More Flag ... if unset, indicates that
 * the payload in this message is the last block in the body"; "SZX ...
 * the actual block size is then 2**(SZX + 4)"; in descriptive use every
 * block but the last carries exactly that many bytes (only the last, M
 * unset, may be shorter). Put together, the blocks are the body. */
static inline void check_blocks(struct report *r, const char *what,
                                const struct dgram *const *blocks, size_t count,
                                const uint8_t *body, size_t n, unsigned bs)
{
    size_t want = ceil_div(n, bs);
    if (count != want) {
        report_add(r, "%s: %zu blocks on the wire, expected ceil(%zu/%u) = %zu", what, count, n, bs,
                   want);
        return;
    }
    size_t off = 0;
    for (size_t k = 0; k < count; k++) {
        const struct dgram *d = blocks[k];
        const struct blk *b = d->to_server ? &d->b1 : &d->b2;
        bool last = k + 1 == count;
        size_t len = last ? n - off : bs;
        if (b->num != k || b->szx != (unsigned)szx_of(bs) || b->m != (last ? 0u : 1u))
            report_add(r, "%s: frame %u block NUM %u M %u SZX %u, expected NUM %zu M %d SZX %d",
                       what, d->frame, b->num, b->m, b->szx, k, last ? 0 : 1, szx_of(bs));
        else if (d->payload_len != len)
            report_add(r, "%s: frame %u block %zu carries %zu bytes, expected %zu", what, d->frame,
                       k, d->payload_len, len);
        else if (len && memcmp(d->payload, body + off, len))
            report_add(r, "%s: frame %u block %zu differs from bytes %zu..%zu of the body", what,
                       d->frame, k, off, off + len - 1);
        off += len;
    }
}

/* ---- one transfer with `edhoc-cli coap` -------------------------------- */

struct xfer {
    int rc;
    char *out;     /* stdout and stderr of the run */
    uint8_t *body; /* the --output file, NULL if it was not written */
    size_t body_len;
};

static inline void xfer_free(struct xfer *x)
{
    free(x->out);
    free(x->body);
    memset(x, 0, sizeof *x);
}

/* POST /echo with the body of n bytes (post) or GET /bytes?n=N, client
 * block size bs, under OSCORE with conf (or unprotected), with --pcap when
 * pcap is set; extra: more options. */
static inline void transfer(struct xfer *x, bool post, uint16_t port, size_t n, unsigned bs,
                            const char *conf, const char *pcap, const char *extra)
{
    char in[300], outp[300], opts[1200];
    body_path(in, sizeof in, n);
    net_path(outp, sizeof outp, "received.bin");
    unlink(outp);
    if (pcap)
        unlink(pcap);
    snprintf(opts, sizeof opts, "--output %s --block-size %u --json " CLI_TIMEOUT_OPT "%s%s%s%s %s",
             outp, bs, conf ? " --oscore-context " : "", conf ? conf : "", pcap ? " --pcap " : "",
             pcap ? pcap : "", extra ? extra : "");
    memset(x, 0, sizeof *x);
    if (post)
        x->rc = CLI_RUN(&x->out, "coap POST coap://127.0.0.1:%u/echo --payload-file %s %s", port,
                        in, opts);
    else
        x->rc = CLI_RUN(&x->out, "coap GET \"coap://127.0.0.1:%u/bytes?n=%zu\" %s", port, n, opts);
    x->body = read_bin(outp, &x->body_len);
}

/* The request bodies, and one byte above the small limit. */
static inline int write_bodies(void)
{
    static const size_t extra[] = {SMALL_MAX_BODY, SMALL_MAX_BODY + 1, BIG_MAX_BODY + 1};
    for (size_t i = 0; i < N_SIZES + sizeof extra / sizeof extra[0]; i++) {
        size_t n = i < N_SIZES ? sizes[i] : extra[i - N_SIZES];
        char p[300];
        body_path(p, sizeof p, n);
        uint8_t *b = make_body(n);
        FILE *f = fopen(p, "wb");
        if (!f || (n && fwrite(b, 1, n, f) != n) || fclose(f)) {
            free(b);
            return -1;
        }
        free(b);
    }
    return 0;
}

#endif /* CLI_BLOCKWISE_TEST_COMMON_H */
