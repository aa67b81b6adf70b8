/*
 * Block-wise transfer end to end, through the real binary: bodies of every
 * size that matters (0, 1, around one block, several blocks, many blocks,
 * exactly the largest allowed) in both directions, unprotected (outer
 * Block1/Block2, RFC 7959) and under OSCORE (inner Block1/Block2, RFC 8613
 * Section 4.1.3.4.1), at block sizes 16, 64, 256 and 1024; the limits
 * (4.13 from the responder, the client's own --max-body); an EDHOC
 * handshake whose message_2 and message_3 carry a two-certificate x5chain
 * over 64-byte blocks; and Wireshark's own dissector decrypting an OSCORE
 * transfer with inner blocks.
 *
 * Every transfer's body is compared byte for byte with what was sent (the
 * --output file against the --payload-file, or against the /bytes?n=N
 * pattern: byte i is 'a' + i % 26). Unprotected transfers are also
 * captured (coap --pcap) and the datagrams read back here (pcap, raw IP,
 * UDP, CoAP options): the blocks on the wire must be numbered, sized and
 * flagged as RFC 7959 says, and put together they must be the body.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "net_test_util.h"

/* Each CLI run is bounded twice: by its own --timeout and by timeout(1). */
#define RUN_TIMEOUT_S 40
#define CLI_TIMEOUT_OPT "--timeout 20"

#define CLI_RUN(out, ...) net_cli_run(out, RUN_TIMEOUT_S, false, __VA_ARGS__)

static const size_t sizes[] = {0, 1, 1023, 1024, 1025, 3000, 20000, 65536};
#define N_SIZES (sizeof sizes / sizeof sizes[0])
static const unsigned bsizes[] = {16, 64, 256, 1024};
#define N_BS (sizeof bsizes / sizeof bsizes[0])

#define BIG_MAX_BODY 65536
#define SMALL_MAX_BODY 4096

/* Responders shared by the tests: per block size one unprotected
 * (--allow-unprotected) and one serving a static OSCORE context of its
 * own (no --allow-unprotected, so an unprotected answer cannot pass for a
 * protected one), all with --max-body 65536; and one of each kind with
 * --max-body 4096. */
static struct net_proc plain_r[N_BS], osc_r[N_BS], plain_small, osc_small;
static char osc_client_conf[N_BS][300], small_client_conf[300];

/* ---- small helpers ---------------------------------------------------- */

/* Append a line to a bounded report of problems (collected so that one
 * failing cell of a matrix does not hide the others). */
struct report {
    char text[16384];
    size_t len;
    unsigned problems;
};

static void report_add(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report_add(struct report *r, const char *fmt, ...)
{
    r->problems++;
    if (r->len + 2 >= sizeof r->text)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->text + r->len, sizeof r->text - r->len - 1, fmt, ap);
    va_end(ap);
    if (n > 0)
        r->len += (size_t)n < sizeof r->text - r->len - 1 ? (size_t)n : sizeof r->text - r->len - 2;
    r->text[r->len++] = '\n';
    r->text[r->len] = '\0';
}

/* cmocka cuts long failure messages: the whole report goes to stderr. */
static void report_check(const struct report *r, const char *what)
{
    if (!r->problems)
        return;
    fprintf(stderr, "%s: %u problem(s)%s:\n%s", what, r->problems,
            r->len + 2 >= sizeof r->text ? " (the first ones)" : "", r->text);
    fail_msg("%s: %u problem(s), listed above", what, r->problems);
}

/* The whole of a binary file (malloc'd, *len set); NULL if it cannot be
 * opened. */
static uint8_t *read_bin(const char *path, size_t *len)
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
static uint8_t *make_body(size_t n)
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
static uint8_t *make_pattern(size_t n)
{
    uint8_t *b = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)('a' + i % 26);
    return b;
}

static void body_path(char *out, size_t cap, size_t n)
{
    char name[64];
    snprintf(name, sizeof name, "body-%zu.bin", n);
    net_path(out, cap, name);
}

/* A static OSCORE context pair (libcoap conf format): the client's Sender
 * ID is client_sid, the server's srv_sid, the master secret made from
 * seed, RFC 8613 Appendix C.1.1's salt. Each responder gets a pair of its
 * own: two servers with one context would repeat each other's nonces. */
static void context_pair(const char *name, const char *client_sid, const char *srv_sid,
                         const char *secret, char *client_conf, char *server_conf, size_t cap)
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

static size_t ceil_div(size_t a, size_t b)
{
    return (a + b - 1) / b;
}

static int szx_of(unsigned bs)
{
    int s = 0;
    while ((16u << s) < bs)
        s++;
    return s;
}

/* The number after "key": in s, or -1. */
static long json_num(const char *s, const char *key)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(s, pat);
    return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* ---- the datagrams of a capture ---------------------------------------- */

#define OPT_ETAG 4
#define OPT_OSCORE 9
#define OPT_BLOCK2 23
#define OPT_BLOCK1 27
#define OPT_SIZE2 28
#define OPT_SIZE1 60

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

static uint32_t rd32(const uint8_t *p, bool swap)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return swap ? __builtin_bswap32(v) : v;
}

/* CoAP (RFC 7252 Section 3) of one UDP payload into d; -1 if malformed. */
static int parse_coap(const uint8_t *p, size_t n, struct dgram *d)
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
static void capture_read(const char *path, uint16_t server_port, struct capture *c)
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

static void capture_free(struct capture *c)
{
    free(c->buf);
    free(c->d);
    memset(c, 0, sizeof *c);
}

/* The answer to request d (same Message ID, other direction), or NULL. */
static const struct dgram *answer_to(const struct capture *c, const struct dgram *d)
{
    for (size_t k = 0; k < c->n; k++) {
        if (!c->d[k].to_server && !c->d[k].duplicate && c->d[k].mid == d->mid)
            return &c->d[k];
    }
    return NULL;
}

/* Check one descriptive block sequence (the Block1 blocks of a request
 * body, or the Block2 blocks of a response body) against the whole body:
 * RFC 7959 Section 2.2: "NUM: Block Number ... Block number 0 indicates
 * the first block of a body"; "M: More Flag ... if unset, indicates that
 * the payload in this message is the last block in the body"; "SZX ...
 * the actual block size is then 2**(SZX + 4)"; in descriptive use every
 * block but the last carries exactly that many bytes (only the last, M
 * unset, may be shorter). Put together, the blocks are the body. */
static void check_blocks(struct report *r, const char *what, const struct dgram *const *blocks,
                         size_t count, const uint8_t *body, size_t n, unsigned bs)
{
    size_t want = ceil_div(n, bs);
    if (count != want) {
        report_add(r, "%s: %zu blocks on the wire, expected ceil(%zu/%u) = %zu", what, count, n,
                   bs, want);
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
            report_add(r, "%s: frame %u block %zu carries %zu bytes, expected %zu", what,
                       d->frame, k, d->payload_len, len);
        else if (len && memcmp(d->payload, body + off, len))
            report_add(r, "%s: frame %u block %zu differs from bytes %zu..%zu of the body", what,
                       d->frame, k, off, off + len - 1);
        off += len;
    }
}

/* The datagrams of one unprotected transfer, checked against RFC 7959:
 * POST /echo of body (n bytes) or GET /bytes?n=N (expect: the pattern),
 * the client cutting requests at cbs, the server responses at sbs. */
static void check_plain_wire(struct report *r, const char *what, const struct capture *c,
                             bool post, const uint8_t *body, const uint8_t *expect, size_t n,
                             unsigned cbs, unsigned sbs)
{
    const struct dgram **b1 = calloc(c->n + 1, sizeof *b1), **b2 = calloc(c->n + 1, sizeof *b2);
    size_t n1 = 0, n2 = 0, follow = 0;
    const struct dgram *first = NULL, *final = NULL;
    char w[200];
    for (size_t k = 0; k < c->n; k++) {
        const struct dgram *d = &c->d[k];
        if (d->duplicate || d->code == 0)
            continue;
        if (d->oscore)
            report_add(r, "%s: frame %u has an OSCORE option in an unprotected transfer", what,
                       d->frame);
        if (d->to_server) {
            if (!first)
                first = d;
            if (d->b1.present)
                b1[n1++] = d;
            /* RFC 7959 Section 2.4: the client asks for the further
             * blocks of a response with Block2 NUM 1, 2, ... in order. */
            if (d->b2.present && d->b2.num > 0) {
                follow++;
                if (d->b2.num != follow)
                    report_add(r, "%s: frame %u asks for Block2 NUM %u, expected %zu", what,
                               d->frame, d->b2.num, follow);
            }
        } else {
            if (d->b2.present)
                b2[n2++] = d;
            if (d->code >> 5 == 2 && d->code != 95)
                final = d;
        }
    }
    if (!first || !final) {
        report_add(r, "%s: no request or no final 2.xx response in the capture", what);
        goto out;
    }
    if (post && n > cbs) {
        snprintf(w, sizeof w, "%s request", what);
        check_blocks(r, w, b1, n1, body, n, cbs);
        /* RFC 7959 Section 4: Size1 "in a request carrying a Block1
         * Option, to indicate the current estimate the client has of the
         * total size of the resource representation": if sent, it is n. */
        if (n1 && b1[0]->size1 >= 0 && (size_t)b1[0]->size1 != n)
            report_add(r, "%s: Size1 %ld in the first Block1 request, body %zu", what,
                       b1[0]->size1, n);
        /* The responder handles the body atomically (it reassembles it
         * before /echo sees it), so each block but the last is answered
         * with 2.31 (Continue), which (RFC 7959 Section 2.9.1) "indicates
         * that the transfer of this block of the request body was
         * successful"; Section 2.3: the response's Block1 option names the
         * block it acknowledges. The last block gets the final response. */
        for (size_t k = 0; k < n1; k++) {
            const struct dgram *a = answer_to(c, b1[k]);
            bool last = k + 1 == n1;
            if (!a)
                report_add(r, "%s: no answer to Block1 block %zu (frame %u)", what, k,
                           b1[k]->frame);
            else if ((last && (a->code >> 5 != 2 || a->code == 95)) || (!last && a->code != 95))
                report_add(r, "%s: answer to Block1 block %zu is %u.%02u, expected %s", what, k,
                           a->code >> 5, a->code & 31, last ? "2.04" : "2.31 Continue");
            else if (!a->b1.present || a->b1.num != b1[k]->b1.num)
                report_add(r, "%s: answer to Block1 block %zu does not carry Block1 NUM %zu",
                           what, k, k);
        }
    } else if (n1) {
        report_add(r, "%s: %zu Block1 requests for a body of %zu bytes at block size %u", what,
                   n1, post ? n : 0, cbs);
    } else if (post && (first->payload_len != n ||
                        (n && memcmp(first->payload, body, n)))) {
        report_add(r, "%s: the single request carries %zu bytes, not the %zu of the body", what,
                   first->payload_len, n);
    }
    if (n > sbs) {
        snprintf(w, sizeof w, "%s response", what);
        check_blocks(r, w, b2, n2, expect, n, sbs);
        if (follow + 1 != n2)
            report_add(r, "%s: %zu Block2 follow-up requests for %zu blocks", what, follow, n2);
        /* RFC 7959 Section 4: Size2 in a response "indicates the current
         * estimate the server has of the total size": if sent, it is n. */
        if (n2 && b2[0]->size2 >= 0 && (size_t)b2[0]->size2 != n)
            report_add(r, "%s: Size2 %ld in the first Block2 response, body %zu", what,
                       b2[0]->size2, n);
        /* RFC 7959 Section 2.4: the blocks of one representation; an ETag
         * the server gives identifies it, so it cannot change midway. */
        for (size_t k = 1; k < n2; k++) {
            if (b2[k]->etag_len != b2[0]->etag_len ||
                memcmp(b2[k]->etag, b2[0]->etag, b2[0]->etag_len)) {
                report_add(r, "%s: the ETag changes between Block2 blocks 0 and %zu", what, k);
                break;
            }
        }
    } else if (n2) {
        report_add(r, "%s: %zu Block2 responses for a body of %zu bytes at block size %u", what,
                   n2, n, sbs);
    } else if (final->payload_len != n || (n && memcmp(final->payload, expect, n))) {
        report_add(r, "%s: the single response carries %zu bytes, not the %zu expected", what,
                   final->payload_len, n);
    }
out:
    free(b1);
    free(b2);
}

/* ---- one transfer with `edhoc-cli coap` -------------------------------- */

struct xfer {
    int rc;
    char *out;     /* stdout and stderr of the run */
    uint8_t *body; /* the --output file, NULL if it was not written */
    size_t body_len;
};

static void xfer_free(struct xfer *x)
{
    free(x->out);
    free(x->body);
    memset(x, 0, sizeof *x);
}

/* POST /echo with the body of n bytes (post) or GET /bytes?n=N, client
 * block size bs, under OSCORE with conf (or unprotected), with --pcap when
 * pcap is set; extra: more options. */
static void transfer(struct xfer *x, bool post, uint16_t port, size_t n, unsigned bs,
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

/* The expected number of OSCORE requests of one transfer: RFC 8613
 * Section 4.1.3.4.1, every block is its own OSCORE message, and Section
 * 7.2.1 / 8.1: each request is protected with the next sender sequence
 * number. POST: ceil(n/cbs) Block1 blocks (one request if the body fits),
 * then a request for each further Block2 block; GET: one request per
 * Block2 block. An Echo challenge (RFC 8613 Appendix B.1.2) adds one. */
static size_t expected_oscore_requests(bool post, size_t n, unsigned cbs, unsigned sbs)
{
    size_t req = post && n > cbs ? ceil_div(n, cbs) : 1;
    if (n > sbs)
        req += ceil_div(n, sbs) - 1;
    return req;
}

/* One transfer that must succeed, with every check; problems into r. */
static void transfer_ok(struct report *r, bool oscore, bool post, uint16_t port, size_t n,
                        unsigned cbs, unsigned sbs, const char *conf)
{
    char what[160], pcap[300];
    snprintf(what, sizeof what, "%s %s %zu bytes, client block %u, server block %u",
             oscore ? "OSCORE" : "unprotected", post ? "POST /echo" : "GET /bytes", n, cbs, sbs);
    net_path(pcap, sizeof pcap, "transfer.pcap");
    struct xfer x;
    uint64_t t0 = net_now_ms();
    transfer(&x, post, port, n, cbs, oscore ? conf : NULL, oscore ? NULL : pcap, NULL);
    uint64_t ms = net_now_ms() - t0;
    if (ms > 1000)
        print_message("slow: %s took %llu ms\n", what, (unsigned long long)ms);
    uint8_t *want = post ? make_body(n) : make_pattern(n);
    const char *code = post ? "\"code\": \"2.04\"" : "\"code\": \"2.05\"";
    if (x.rc != 0 || !strstr(x.out, code)) {
        /* RFC 7959 Section 2.3/2.4: the whole body, block by block, ends
         * in the one final response of the request. */
        report_add(r, "%s: exit %d, expected 0 and %s:\n%.600s", what, x.rc, code, x.out);
        goto out;
    }
    /* The body as received: exactly what was sent (POST /echo returns the
     * request body) or the /bytes pattern, byte for byte. */
    if (!x.body)
        report_add(r, "%s: no --output file", what);
    else if (x.body_len != n || (n && memcmp(x.body, want, n))) {
        size_t k = 0;
        while (k < n && k < x.body_len && x.body[k] == want[k])
            k++;
        report_add(r, "%s: --output holds %zu bytes, first difference at byte %zu", what,
                   x.body_len, k);
    }
    if (json_num(x.out, "payload_bytes") != (long)n)
        report_add(r, "%s: \"payload_bytes\" %ld", what, json_num(x.out, "payload_bytes"));
    if (oscore) {
        /* RFC 8613 Section 8.4: the response to an OSCORE request is
         * verified; an unprotected one is not the answer. */
        if (!strstr(x.out, "\"oscore\": true"))
            report_add(r, "%s: the response was not OSCORE-protected:\n%.400s", what, x.out);
        long got = json_num(x.out, "oscore_requests_protected");
        size_t exp = expected_oscore_requests(post, n, cbs, sbs);
        if (strstr(x.out, "\"echo\": true"))
            exp++;
        if (got != (long)exp)
            report_add(r, "%s: %ld OSCORE requests protected, expected %zu (one per block)", what,
                       got, exp);
    } else {
        struct capture c;
        capture_read(pcap, port, &c);
        check_plain_wire(r, what, &c, post, want, want, n, cbs, sbs);
        capture_free(&c);
    }
out:
    free(want);
    xfer_free(&x);
}

/* ---- setup ------------------------------------------------------------- */

static int start(struct net_proc *p, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int start(struct net_proc *p, const char *name, const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return net_responder_start(p, name, args);
}

static int group_setup(void **state)
{
    (void)state;
    if (net_make_dir("blockwise"))
        return -1;
    /* The request bodies, and one byte above the small limit. */
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
    char server_conf[300], name[64], secret[40];
    for (size_t i = 0; i < N_BS; i++) {
        snprintf(name, sizeof name, "plain%u", bsizes[i]);
        if (start(&plain_r[i], name,
                  "--listen 127.0.0.1:0 --allow-unprotected --state-dir none --block-size %u "
                  "--max-body %d",
                  bsizes[i], BIG_MAX_BODY))
            return -1;
        snprintf(name, sizeof name, "osc%u", bsizes[i]);
        snprintf(secret, sizeof secret, "0102030405060708090a0b0c0d0e%04x", bsizes[i]);
        context_pair(name, "c1", "01", secret, osc_client_conf[i], server_conf, sizeof server_conf);
        if (start(&osc_r[i], name,
                  "--listen 127.0.0.1:0 --oscore-context %s --state-dir %s/%s.state "
                  "--block-size %u --max-body %d",
                  server_conf, net_dir, name, bsizes[i], BIG_MAX_BODY))
            return -1;
    }
    if (start(&plain_small, "plainsmall",
              "--listen 127.0.0.1:0 --allow-unprotected --state-dir none --block-size 64 "
              "--max-body %d",
              SMALL_MAX_BODY))
        return -1;
    context_pair("oscsmall", "c2", "02", "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf", small_client_conf,
                 server_conf, sizeof server_conf);
    return start(&osc_small, "oscsmall",
                 "--listen 127.0.0.1:0 --oscore-context %s --state-dir %s/oscsmall.state "
                 "--block-size 64 --max-body %d",
                 server_conf, net_dir, SMALL_MAX_BODY);
}

/* Before each test: the shared responders are still up. */
static int check_alive(void **state)
{
    (void)state;
    struct net_proc *all[] = {&plain_r[0], &plain_r[1], &plain_r[2], &plain_r[3], &osc_r[0],
                              &osc_r[1],   &osc_r[2],   &osc_r[3],   &plain_small, &osc_small};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (!all[i]->pid || kill(all[i]->pid, 0) != 0) {
            char *log = net_read_file(all[i]->log);
            fprintf(stderr, "a shared responder died; its log:\n%s\n", log ? log : "");
            free(log);
            return -1;
        }
    }
    return 0;
}

/* ---- 1. every size, both directions, every block size ------------------ */

/* The matrix of one mode: every size in both directions at every block
 * size (the client's and the responder's the same). */
static void matrix(bool oscore)
{
    struct report r = {0};
    uint64_t t0 = net_now_ms();
    size_t count = 0;
    for (size_t b = 0; b < N_BS; b++) {
        struct net_proc *p = oscore ? &osc_r[b] : &plain_r[b];
        for (size_t i = 0; i < N_SIZES; i++) {
            /* Under OSCORE, no transfer of more than 512 blocks each way
             * (20000 and 65536 bytes in 16-byte blocks, 65536 in 64-byte
             * ones): `coap` reserves its sequence numbers three at a time,
             * each reservation a durable write (temporary file, fsync,
             * rename), so 65536 bytes in 16-byte blocks (8192 requests)
             * take seconds, more on a busy disk. Every size still goes at
             * two block sizes at least, every block size with 3000 bytes
             * at least. */
            if (oscore && sizes[i] / bsizes[b] > 512)
                continue;
            count += 2;
            transfer_ok(&r, oscore, true, p->port, sizes[i], bsizes[b], bsizes[b],
                        osc_client_conf[b]);
            transfer_ok(&r, oscore, false, p->port, sizes[i], bsizes[b], bsizes[b],
                        osc_client_conf[b]);
        }
    }
    print_message("%s matrix: %zu transfers in %llu ms\n", oscore ? "OSCORE" : "unprotected",
                  count, (unsigned long long)(net_now_ms() - t0));
    report_check(&r, oscore ? "OSCORE matrix" : "unprotected matrix");
}

static void test_matrix_unprotected(void **state)
{
    (void)state;
    matrix(false);
}

static void test_matrix_oscore(void **state)
{
    (void)state;
    matrix(true);
}

/* The client and the responder with different block sizes: the client
 * cuts the request body at its size, the responder the response body at
 * its own (RFC 7959 Section 2.3: the size of a Block1 transfer is the
 * client's choice, the server "may" ask for smaller blocks; Section 2.4:
 * the server picks the Block2 size when the client did not ask for one).
 * Also the request body from standard input (--payload-file -). */
static void test_mixed_block_sizes(void **state)
{
    (void)state;
    struct report r = {0};
    static const struct {
        size_t n;
        unsigned cb, sb; /* indexes into bsizes */
    } cells[] = {{3000, 0, 3}, {3000, 3, 0}, {20000, 1, 2}, {1025, 2, 1}, {65536, 3, 1}};
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        unsigned cbs = bsizes[cells[i].cb], sbs = bsizes[cells[i].sb];
        transfer_ok(&r, false, true, plain_r[cells[i].sb].port, cells[i].n, cbs, sbs, NULL);
        transfer_ok(&r, true, true, osc_r[cells[i].sb].port, cells[i].n, cbs, sbs,
                    osc_client_conf[cells[i].sb]);
        transfer_ok(&r, true, false, osc_r[cells[i].sb].port, cells[i].n, cbs, sbs,
                    osc_client_conf[cells[i].sb]);
    }
    /* --payload-file -: the body read from standard input. */
    char in[300], outp[300];
    body_path(in, sizeof in, 20000);
    net_path(outp, sizeof outp, "stdin-echo.bin");
    for (int o = 0; o < 2; o++) {
        char *out;
        unlink(outp);
        int rc = CLI_RUN(&out,
                         "coap POST coap://127.0.0.1:%u/echo --payload-file - --output %s "
                         "--block-size 64 " CLI_TIMEOUT_OPT " %s%s < %s",
                         o ? osc_r[1].port : plain_r[1].port, outp,
                         o ? "--oscore-context " : "", o ? osc_client_conf[1] : "", in);
        size_t len;
        uint8_t *got = read_bin(outp, &len), *want = make_body(20000);
        if (rc != 0 || !got || len != 20000 || memcmp(got, want, 20000))
            report_add(&r, "%s POST /echo of 20000 bytes from stdin: exit %d, %zu bytes back:\n%s",
                       o ? "OSCORE" : "unprotected", rc, got ? len : 0, out);
        free(got);
        free(want);
        free(out);
    }
    report_check(&r, "mixed block sizes");
}

/* ---- 2. limits ---------------------------------------------------------- */

/* Whether a run that failed left a body behind: the --output file must be
 * absent or empty, or at least hold no part of what was being sent. */
static bool partial_body(const struct xfer *x, const uint8_t *body, size_t n)
{
    if (!x->body || x->body_len == 0)
        return false;
    size_t k = x->body_len < n ? x->body_len : n;
    return memcmp(x->body, body, k < 8 ? k : 8) == 0;
}

/* The responder's --max-body: a body of exactly the limit goes through, one
 * byte more gets 4.13, whatever the block size. */
static void server_limit(bool oscore)
{
    struct report r = {0};
    struct net_proc *p = oscore ? &osc_small : &plain_small;
    const char *conf = oscore ? small_client_conf : NULL;
    char pcap[300];
    net_path(pcap, sizeof pcap, "limit.pcap");

    /* Exactly --max-body: accepted both ways (the limit is inclusive:
     * "largest body reassembled or served", responder --help). */
    transfer_ok(&r, oscore, true, p->port, SMALL_MAX_BODY, 64, 64, conf);
    transfer_ok(&r, oscore, false, p->port, SMALL_MAX_BODY, 256, 64, conf);

    uint8_t *big = make_body(SMALL_MAX_BODY + 1);
    for (size_t b = 0; b < N_BS; b++) {
        struct xfer x;
        char what[120];
        snprintf(what, sizeof what, "%s POST of %d bytes at block size %u",
                 oscore ? "OSCORE" : "unprotected", SMALL_MAX_BODY + 1, bsizes[b]);
        transfer(&x, true, p->port, SMALL_MAX_BODY + 1, bsizes[b], conf, oscore ? NULL : pcap,
                 NULL);
        /* RFC 7959 Section 2.9.3: 4.13 (Request Entity Too Large) "can be
         * returned at any time during a Block1 transfer to indicate that
         * the server does not currently have the resources to store
         * blocks"; the client's exit code for a 4.xx is 1 (coap --help). */
        if (x.rc != 1 || !strstr(x.out, "\"code\": \"4.13\""))
            report_add(&r, "%s: exit %d, expected 1 with 4.13:\n%.600s", what, x.rc, x.out);
        /* ... and the client never presents a part of the body as the
         * answer. */
        if (partial_body(&x, big, SMALL_MAX_BODY + 1))
            report_add(&r, "%s: --output holds %zu bytes of the body", what, x.body_len);
        /* RFC 8613 Section 8.3: the server's application answer, 4.13 too,
         * is protected. */
        if (oscore && !strstr(x.out, "\"oscore\": true"))
            report_add(&r, "%s: the 4.13 was not OSCORE-protected", what);
        if (!oscore) {
            struct capture c;
            capture_read(pcap, p->port, &c);
            const struct dgram *e = NULL;
            bool after = false;
            for (size_t k = 0; k < c.n; k++) {
                if (!c.d[k].to_server && c.d[k].code == (4 << 5 | 13))
                    e = &c.d[k];
                else if (e && c.d[k].to_server && c.d[k].b1.present && !c.d[k].duplicate)
                    after = true;
            }
            /* RFC 7252 Section 5.9.2.9 (which RFC 7959 Section 2.9.3
             * refers to): the 4.13 "SHOULD include a Size1 Option ... to
             * indicate the maximum size of request entity the server is
             * able and willing to handle". */
            if (!e)
                report_add(&r, "%s: no 4.13 on the wire", what);
            else if (e->size1 != SMALL_MAX_BODY)
                report_add(&r, "%s: the 4.13 carries Size1 %ld, expected %d", what, e->size1,
                           SMALL_MAX_BODY);
            /* A 4.13 is the final response of the request: no further
             * Block1 block of that body follows it. */
            if (after)
                report_add(&r, "%s: Block1 blocks were sent after the 4.13", what);
            capture_free(&c);
        }
        xfer_free(&x);
    }
    free(big);

    /* GET /bytes?n=N above the responder's --max-body: "largest body ...
     * served ...; above it: 4.13" (responder --help); nothing of the
     * pattern is written as if it were the answer. */
    struct xfer x;
    uint8_t *pat = make_pattern(SMALL_MAX_BODY + 1);
    transfer(&x, false, p->port, SMALL_MAX_BODY + 1, 64, conf, NULL, NULL);
    if (x.rc != 1 || !strstr(x.out, "\"code\": \"4.13\""))
        report_add(&r, "GET /bytes?n=%d: exit %d, expected 1 with 4.13:\n%.600s",
                   SMALL_MAX_BODY + 1, x.rc, x.out);
    if (partial_body(&x, pat, SMALL_MAX_BODY + 1))
        report_add(&r, "GET /bytes?n=%d: --output holds %zu bytes of the pattern",
                   SMALL_MAX_BODY + 1, x.body_len);
    xfer_free(&x);
    free(pat);

    /* The same one byte above --max-body 65536 (the responders of the
     * matrix, which took exactly 65536 bytes): 4.13 both ways. The client
     * is allowed more (--max-body 1048576) so that only the responder
     * refuses. */
    struct net_proc *bigr = oscore ? &osc_r[3] : &plain_r[3];
    const char *bigconf = oscore ? osc_client_conf[3] : NULL;
    uint8_t *body = make_body(BIG_MAX_BODY + 1);
    pat = make_pattern(BIG_MAX_BODY + 1);
    for (int post = 0; post < 2; post++) {
        transfer(&x, post, bigr->port, BIG_MAX_BODY + 1, 1024, bigconf, NULL,
                 "--max-body 1048576");
        if (x.rc != 1 || !strstr(x.out, "\"code\": \"4.13\"") ||
            partial_body(&x, post ? body : pat, BIG_MAX_BODY + 1))
            report_add(&r, "%s of %d bytes to a responder with --max-body %d: exit %d, --output "
                           "%zu bytes (expected 1, 4.13, no body):\n%.600s",
                       post ? "POST /echo" : "GET /bytes", BIG_MAX_BODY + 1, BIG_MAX_BODY, x.rc,
                       x.body ? x.body_len : 0, x.out);
        xfer_free(&x);
    }
    free(body);
    free(pat);
    report_check(&r, oscore ? "OSCORE responder --max-body" : "unprotected responder --max-body");
}

static void test_server_max_body_unprotected(void **state)
{
    (void)state;
    server_limit(false);
}

static void test_server_max_body_oscore(void **state)
{
    (void)state;
    server_limit(true);
}

/* The client's own --max-body: a response body above it is refused (exit
 * status not 0, nothing of it in --output); exactly the limit is fine; a
 * request body above it is not even sent. The responder serves up to
 * 65536 bytes here, so only the client can refuse. */
static void client_limit(bool oscore)
{
    struct report r = {0};
    size_t b = 1; /* the responders with 64-byte blocks */
    struct net_proc *p = oscore ? &osc_r[b] : &plain_r[b];
    const char *conf = oscore ? osc_client_conf[b] : NULL;
    char lim[64];
    snprintf(lim, sizeof lim, "--max-body %d", SMALL_MAX_BODY);
    const char *mode = oscore ? "OSCORE" : "unprotected";

    struct xfer x;
    uint8_t *pat = make_pattern(20000);
    /* Exactly the client's limit: accepted. */
    transfer(&x, false, p->port, SMALL_MAX_BODY, 64, conf, NULL, lim);
    if (x.rc != 0 || x.body_len != SMALL_MAX_BODY || !x.body || memcmp(x.body, pat, x.body_len))
        report_add(&r, "%s GET /bytes?n=%d with %s: exit %d, %zu bytes:\n%.400s", mode,
                   SMALL_MAX_BODY, lim, x.rc, x.body_len, x.out);
    xfer_free(&x);

    /* Above it (a block above, and far above): refused. coap --help:
     * "--max-body N  largest request or response body"; a failed
     * transfer is not an answer ("Never a part of the body as if it were
     * the answer"), so neither exit 0 nor the body in --output. */
    static const size_t over[] = {SMALL_MAX_BODY + 1, 5000, 20000};
    for (size_t i = 0; i < sizeof over / sizeof over[0]; i++) {
        for (size_t k = 0; k < 2; k++) {
            unsigned bs = k ? 1024 : 64;
            transfer(&x, false, p->port, over[i], bs, conf, NULL, lim);
            if (x.rc == 0 || partial_body(&x, pat, over[i]))
                report_add(&r,
                           "%s GET /bytes?n=%zu with %s, block size %u: exit %d, --output "
                           "%zu bytes (expected a non-zero exit and no body):\n%.400s",
                           mode, over[i], lim, bs, x.rc, x.body ? x.body_len : 0, x.out);
            xfer_free(&x);
        }
    }
    free(pat);

    /* A request body above the client's limit: refused before anything is
     * sent (exit 2, "larger than --max-body"). */
    char in[300], outp[300], *out;
    body_path(in, sizeof in, SMALL_MAX_BODY + 1);
    net_path(outp, sizeof outp, "not-sent.bin");
    unlink(outp);
    int rc = CLI_RUN(&out,
                     "coap POST coap://127.0.0.1:%u/echo --payload-file %s --output %s %s "
                     CLI_TIMEOUT_OPT " %s%s",
                     p->port, in, outp, lim, conf ? "--oscore-context " : "", conf ? conf : "");
    if (rc != 2 || !strstr(out, "larger than --max-body") || access(outp, F_OK) == 0)
        report_add(&r, "%s POST of %d bytes with %s: exit %d (expected 2):\n%s", mode,
                   SMALL_MAX_BODY + 1, lim, rc, out);
    free(out);
    report_check(&r, oscore ? "OSCORE client --max-body" : "unprotected client --max-body");
}

static void test_client_max_body_oscore(void **state)
{
    (void)state;
    client_limit(true);
}

/* Without --oscore-context the transport gathers the Block2 body: it must
 * stop at coap's --max-body too (it used to take its own default of
 * 65536 bytes, so GET /bytes?n=5000 with --max-body 4096 exited 0). */
static void test_client_max_body_unprotected(void **state)
{
    (void)state;
    client_limit(false);
}

/* Under OSCORE the blocks are inner (RFC 8613 Section
 * 4.1.3.4.1: "The sending CoAP endpoint MAY fragment a CoAP message as
 * defined in [RFC7959] before the message is processed by OSCORE. In this
 * case, the Block options SHALL be processed by OSCORE as normal Inner
 * options"); Outer Block options are what "Proxies MAY" add (Section
 * 4.1.3.4.2), and the responder itself only cuts an OSCORE response on
 * the outside when it cannot fit one PDU (src/coap/transport.c). The
 * client must not cut an inner Block1 request again in outer blocks
 * although its ciphertext is larger than --block-size (it once did: twice
 * the datagrams, and 2.31 answers to the outer blocks unprotected). */
static void test_oscore_blocks_are_inner_only(void **state)
{
    (void)state;
    struct report r = {0};
    char pcap[300];
    net_path(pcap, sizeof pcap, "inner.pcap");
    for (size_t b = 0; b < N_BS; b++) {
        for (int post = 1; post >= 0; post--) {
            size_t n = 3000;
            char what[120];
            snprintf(what, sizeof what, "OSCORE %s %zu bytes at block size %u",
                     post ? "POST /echo" : "GET /bytes", n, bsizes[b]);
            struct xfer x;
            transfer(&x, post, osc_r[b].port, n, bsizes[b], osc_client_conf[b], pcap, NULL);
            if (x.rc != 0) {
                report_add(&r, "%s: exit %d:\n%.400s", what, x.rc, x.out);
                xfer_free(&x);
                continue;
            }
            struct capture c;
            capture_read(pcap, osc_r[b].port, &c);
            size_t requests = 0;
            unsigned outer = 0, plain = 0;
            for (size_t k = 0; k < c.n; k++) {
                const struct dgram *d = &c.d[k];
                if (d->code == 0)
                    continue; /* an empty ACK carries nothing to protect */
                if (d->to_server && !d->duplicate)
                    requests++;
                /* Every request and every response of the transfer is an
                 * OSCORE message (RFC 8613 Section 8.1, 8.3) ... */
                if (!d->oscore && plain++ < 3)
                    report_add(&r, "%s: frame %u (%u.%02u) is not an OSCORE message", what,
                               d->frame, d->code >> 5, d->code & 31);
                /* ... and no Block option is outside the ciphertext. */
                if ((d->b1.present || d->b2.present) && outer++ < 3)
                    report_add(&r, "%s: frame %u carries an outer Block%d option (NUM %u)", what,
                               d->frame, d->b1.present ? 1 : 2,
                               d->b1.present ? d->b1.num : d->b2.num);
            }
            /* One datagram per inner block: as many requests on the wire as
             * requests protected. */
            size_t exp = expected_oscore_requests(post, n, bsizes[b], bsizes[b]);
            if (requests != exp)
                report_add(&r, "%s: %zu request datagrams, expected %zu (one per inner block)",
                           what, requests, exp);
            capture_free(&c);
            xfer_free(&x);
        }
    }
    report_check(&r, "OSCORE block-wise on the wire");
}

/* ---- 3. EDHOC with a two-certificate x5chain over 64-byte blocks ------- */

static int keygen(const char *args)
{
    char *out;
    int rc = CLI_RUN(&out, "keygen %s", args);
    if (rc != 0)
        fprintf(stderr, "keygen %s: exit %d\n%s\n", args, rc, out);
    free(out);
    return rc;
}

/* The "hex" of trace item name in the initiator's --json --trace output
 * (malloc'd), or NULL. */
static char *trace_hex(const char *json, const char *name)
{
    char pat[80];
    char *compact = net_json_compact(json);
    snprintf(pat, sizeof pat, "{\"name\":\"%s\",\"hex\":\"", name);
    const char *p = strstr(compact, pat);
    const char *e = p ? strchr(p + strlen(pat), '"') : NULL;
    char *hex = e ? strndup(p + strlen(pat), (size_t)(e - p - strlen(pat))) : NULL;
    free(compact);
    return hex;
}

static size_t unhex(const char *h, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; h[0] && h[1] && n < cap; h += 2) {
        unsigned v;
        if (sscanf(h, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
    }
    return n;
}

/* "edhoc_bytes" of message name in the initiator's JSON, or -1. */
static long message_bytes(const char *json, const char *name)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"name\": \"%s\",", name);
    const char *p = strstr(json, pat);
    return p ? json_num(p, "edhoc_bytes") : -1;
}

static void test_edhoc_x5chain_64(void **state)
{
    (void)state;
    /* A root CA, an intermediate CA it signs, and one P-256 leaf per side
     * signed by the intermediate: each credential file is leaf +
     * intermediate, so each ID_CRED x5chain carries two certificates.
     * (The built-in demo x5chain is a single certificate.) */
    char pki[300], a[1600];
    net_path(pki, sizeof pki, "pki");
    mkdir(pki, 0700);
    snprintf(a, sizeof a,
             "--type x509 --suite 2 --use sign --ca --subject bw-root --out-cred %s/root.pem "
             "--out-key %s/root.key --force",
             pki, pki);
    assert_int_equal(keygen(a), 0);
    snprintf(a, sizeof a,
             "--type x509 --suite 2 --use sign --ca --subject bw-inter --ca-cert %s/root.pem "
             "--ca-key %s/root.key --out-cred %s/inter.pem --out-key %s/inter.key --force",
             pki, pki, pki, pki);
    assert_int_equal(keygen(a), 0);
    for (int i = 0; i < 2; i++) {
        const char *w = i ? "r" : "i";
        snprintf(a, sizeof a,
                 "--type x509 --suite 2 --use dh --subject bw-%s --ca-cert %s/inter.pem "
                 "--ca-key %s/inter.key --out-cred %s/%s.pem --out-key %s/%s.key --force",
                 w, pki, pki, pki, w, pki, w);
        assert_int_equal(keygen(a), 0);
    }
    static struct net_proc r;
    snprintf(a, sizeof a,
             "--listen 127.0.0.1:0 --state-dir none --cred %s/r.pem --key %s/r.key "
             "--trust %s/root.pem --id-cred x5chain --block-size 64",
             pki, pki, pki);
    assert_int_equal(net_responder_start(&r, "x5chain", a), 0);

    struct report rep = {0};
    char pcap[300];
    net_path(pcap, sizeof pcap, "x5chain.pcap");
    for (int method = 0; method <= 3; method += 3) {
        unlink(pcap);
        char *out;
        /* Method 3 authenticates with the static DH keys of the leaves,
         * method 0 signs with them (P-256 serves both). */
        int rc = net_cli_run(&out, RUN_TIMEOUT_S, true,
                             "initiator coap://127.0.0.1:%u --method %d --suites 2 --cred %s/i.pem "
                             "--key %s/i.key --trust %s/root.pem --id-cred x5chain "
                             "--block-size 64 --request \"POST /echo x5chain\" --json --trace "
                             "--pcap %s " CLI_TIMEOUT_OPT,
                             r.port, method, pki, pki, pki, pcap);
        if (rc != 0 || !strstr(out, "\"outcome\": \"ok\"")) {
            report_add(&rep, "method %d: initiator exit %d:\n%.2000s", method, rc, out);
            free(out);
            continue;
        }
        if (!strstr(out, "\"id_cred_i\": \"x5chain\"") || !strstr(out, "\"id_cred_r\": \"x5chain\""))
            report_add(&rep, "method %d: ID_CRED_I/ID_CRED_R not x5chain", method);
        /* RFC 9360 Section 2: x5chain "If multiple certificates are
         * conveyed, a CBOR array of byte strings is used": ID_CRED_R =
         * {33: [cert, cert]} (a1 18 21 82) right after C_R in PLAINTEXT_2,
         * ID_CRED_I at the start of PLAINTEXT_3 (RFC 9528 Sections 5.3.2,
         * 5.4.2). */
        char *pt2 = trace_hex(out, "PLAINTEXT_2"), *pt3 = trace_hex(out, "PLAINTEXT_3");
        char *m3hex = trace_hex(out, "message_3");
        if (!pt2 || !pt3 || !m3hex)
            report_add(&rep, "method %d: PLAINTEXT_2, PLAINTEXT_3 or message_3 not in the trace",
                       method);
        else {
            char head[17];
            snprintf(head, sizeof head, "%s", pt2);
            if (!strstr(head, "a1182182"))
                report_add(&rep, "method %d: ID_CRED_R is not a two-certificate x5chain: %.40s",
                           method, pt2);
            if (strncmp(pt3, "a1182182", 8))
                report_add(&rep, "method %d: ID_CRED_I is not a two-certificate x5chain: %.40s",
                           method, pt3);
        }
        if (!strstr(out, "\"payload_text\": \"x5chain\""))
            report_add(&rep, "method %d: the OSCORE request after the handshake was not echoed",
                       method);

        /* The datagrams: message_2 came in Block2 blocks of 64 bytes,
         * message_3 went in Block1 blocks of 64 bytes (RFC 9528 Appendix
         * A.2 carries EDHOC messages as CoAP payloads, so RFC 7959 applies
         * to them like to any body). */
        long m2 = message_bytes(out, "message_2"), m3 = message_bytes(out, "message_3");
        struct capture c;
        capture_read(pcap, r.port, &c);
        const struct dgram **b1 = calloc(c.n + 1, sizeof *b1), **b2 = calloc(c.n + 1, sizeof *b2);
        size_t n1 = 0, n2 = 0;
        for (size_t k = 0; k < c.n; k++) {
            if (c.d[k].duplicate)
                continue;
            if (c.d[k].to_server && c.d[k].b1.present)
                b1[n1++] = &c.d[k];
            if (!c.d[k].to_server && c.d[k].b2.present)
                b2[n2++] = &c.d[k];
        }
        /* message_2 (a response body) reassembled from its Block2 blocks. */
        uint8_t *m2body = malloc((size_t)(m2 > 0 ? m2 : 1));
        size_t off = 0;
        for (size_t k = 0; k < n2 && m2 > 0; k++) {
            size_t l = b2[k]->payload_len;
            if (off + l > (size_t)m2)
                break;
            memcpy(m2body + off, b2[k]->payload, l);
            off += l;
        }
        char what[80];
        snprintf(what, sizeof what, "method %d message_2 (%ld bytes)", method, m2);
        if (m2 <= 64 * 2)
            report_add(&rep, "%s: not several 64-byte blocks long", what);
        else if (n2 < 2)
            report_add(&rep, "%s: in %zu Block2 datagrams", what, n2);
        else
            check_blocks(&rep, what, b2, n2, m2body, (size_t)m2, 64);
        if (off != (size_t)m2)
            report_add(&rep, "%s: the Block2 blocks hold %zu bytes", what, off);
        /* And what they hold is message_2: it ends with CIPHERTEXT_2 =
         * PLAINTEXT_2 XOR KEYSTREAM_2 (RFC 9528 Section 5.3.2), computed
         * here from the trace. */
        char *ks2 = trace_hex(out, "KEYSTREAM_2");
        size_t ctlen = pt2 ? strlen(pt2) / 2 : 0;
        uint8_t *ct = malloc(ctlen + 1), *ks = malloc(ctlen + 1);
        if (!ks2 || !pt2 || strlen(ks2) != strlen(pt2) || ctlen + 2 > off ||
            unhex(pt2, ct, ctlen) != ctlen || unhex(ks2, ks, ctlen) != ctlen) {
            report_add(&rep, "%s: no PLAINTEXT_2 / KEYSTREAM_2 of its size in the trace", what);
        } else {
            for (size_t k = 0; k < ctlen; k++)
                ct[k] ^= ks[k];
            if (memcmp(m2body + off - ctlen, ct, ctlen))
                report_add(&rep, "%s: its Block2 blocks do not end with CIPHERTEXT_2", what);
        }
        free(ct);
        free(ks);
        free(ks2);
        free(m2body);
        /* message_3 (a request body: C_R, then message_3, Appendix A.2)
         * reassembled from its Block1 blocks ends with message_3 as the
         * trace shows it. */
        size_t m3len = m3hex ? strlen(m3hex) / 2 : 0;
        uint8_t *m3want = malloc(m3len + 1);
        unhex(m3hex ? m3hex : "", m3want, m3len);
        size_t total = 0;
        for (size_t k = 0; k < n1; k++)
            total += b1[k]->payload_len;
        uint8_t *m3body = malloc(total + 1);
        off = 0;
        for (size_t k = 0; k < n1; k++) {
            memcpy(m3body + off, b1[k]->payload, b1[k]->payload_len);
            off += b1[k]->payload_len;
        }
        snprintf(what, sizeof what, "method %d message_3 (%ld bytes)", method, m3);
        if (m3 <= 64 * 2 || (size_t)m3 != m3len)
            report_add(&rep, "%s: not several 64-byte blocks long (trace %zu bytes)", what, m3len);
        else if (n1 < 2)
            report_add(&rep, "%s: in %zu Block1 datagrams", what, n1);
        else if (total < m3len || total > m3len + 5 ||
                 memcmp(m3body + total - m3len, m3want, m3len))
            report_add(&rep, "%s: the %zu bytes of its Block1 blocks do not end with message_3",
                       what, total);
        else
            check_blocks(&rep, what, b1, n1, m3body, total, 64);
        print_message("method %d: message_2 %ld bytes in %zu Block2 datagrams, message_3 %ld "
                      "bytes in %zu Block1 datagrams\n",
                      method, m2, n2, m3, n1);
        free(m3body);
        free(m3want);
        free(b1);
        free(b2);
        capture_free(&c);
        free(pt2);
        free(pt3);
        free(m3hex);
        free(out);
    }
    net_proc_stop(&r, SIGTERM, 5000);
    report_check(&rep, "EDHOC x5chain over 64-byte blocks");
}

/* ---- 4. Wireshark decrypts the inner blocks ---------------------------- */

static const char *tshark_skip;

/* Wireshark's OSCORE table row (uat:oscore_contexts): "Sender ID",
 * "Recipient ID", "Master Secret", "Master Salt", "ID Context",
 * "Algorithm", from the client's side (the dissector picks the row whose
 * Sender ID is the request's kid); see tests/test_cli_tshark.c. */
#define WS_SECRET "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
#define WS_ROW(secret)                                                                           \
    "\"c7\",\"07\",\"" secret "\",\"9e7ca92223786340\",\"\",\"AES-CCM-16-64-128 (CCM*)\""

/* Split a tab-separated tshark line into at most max fields (in place). */
static size_t split_tabs(char *line, char **f, size_t max)
{
    size_t n = 0;
    f[n++] = line;
    for (char *p = line; *p && n < max; p++) {
        if (*p == '\t') {
            *p = '\0';
            f[n++] = p + 1;
        }
    }
    for (size_t i = n; i < max; i++)
        f[i] = "";
    return n;
}

/* The index-th comma-separated number of list (or -1). */
static long nth(const char *list, size_t index)
{
    const char *p = list;
    for (size_t i = 0; i < index && p; i++) {
        p = strchr(p, ',');
        if (p)
            p++;
    }
    return p && *p ? strtol(p, NULL, 10) : -1;
}

/* The inner Block1 or Block2 (which = 1 or 2) of a decrypted message from
 * tshark's oscore.opt.* fields (names "#2: Block2", numbers in the order
 * of the Block options). */
static bool inner_block(char *const *f, int which, struct blk *b)
{
    const char *names = f[5];
    size_t idx = 0;
    for (const char *p = names; p && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        bool is1 = memmem(p, l, "Block1", 6) != NULL, is2 = memmem(p, l, "Block2", 6) != NULL;
        if ((which == 1 && is1) || (which == 2 && is2)) {
            b->present = true;
            b->num = (unsigned)nth(f[6], idx);
            b->m = (unsigned)nth(f[7], idx);
            b->szx = (unsigned)nth(f[8], idx);
            return true;
        }
        if (is1 || is2)
            idx++;
        p = e ? e + 1 : NULL;
    }
    return false;
}

/* Run argv (bounded by timeout(1)), stdout and stderr into *out. Returns
 * the exit status or -1. */
static int run_argv(char *const argv[], unsigned timeout_s, char **out)
{
    char log[300], secs[16];
    net_path(log, sizeof log, "argv.out");
    unlink(log);
    snprintf(secs, sizeof secs, "%u", timeout_s);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        char *args[40] = {"timeout", "-k", "2", secs};
        size_t n = 4;
        for (size_t i = 0; argv[i] && n < 39; i++)
            args[n++] = argv[i];
        args[n] = NULL;
        execvp("timeout", args);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        st = -1;
    *out = net_read_file(log);
    if (!*out)
        *out = strdup("");
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* tshark on pcap (CoAP on port) with one OSCORE context row; fields:
 * frame, udp.dstport, coap.code, outer option names, oscore.tag, inner
 * option names, inner block NUM / M / SZX, expert messages. */
static int run_tshark(char **out, const char *pcap, uint16_t port, const char *row)
{
    char decode_as[64], uat[512];
    snprintf(decode_as, sizeof decode_as, "udp.port==%u,coap", port);
    snprintf(uat, sizeof uat, "uat:oscore_contexts:%s", row);
    char *argv[] = {"tshark", "-n", "-r", (char *)pcap, "-d", decode_as, "-o", uat,
                    "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
                    "-e", "frame.number", "-e", "udp.dstport", "-e", "coap.code",
                    "-e", "coap.opt.name", "-e", "oscore.tag", "-e", "oscore.opt.name",
                    "-e", "oscore.opt.block_number", "-e", "oscore.opt.block_mflag",
                    "-e", "oscore.opt.block_size", "-e", "_ws.expert.message", NULL};
    return run_argv(argv, 60, out);
}

/* Dissect pcap with row; report what is wrong with the OSCORE transfer:
 * each datagram an OSCORE message that tshark decrypts and verifies, no
 * outer Block option, the inner Block1 blocks (requests) and Block2
 * blocks (responses) numbered 0.. at SZX of bs with M set on all but the
 * last, want1/want2 of them. Returns how many datagrams decrypted. */
static size_t tshark_check(struct report *r, const char *what, const char *pcap, uint16_t port,
                           const char *row, unsigned bs, size_t want1, size_t want2)
{
    char *out;
    int rc = run_tshark(&out, pcap, port, row);
    if (rc != 0) {
        report_add(r, "%s: tshark exit %d:\n%.1000s", what, rc, out);
        free(out);
        return 0;
    }
    size_t decrypted = 0, n1 = 0, n2 = 0, frames = 0;
    size_t unprotected = 0, outer = 0, undecrypted = 0; /* the first 3 of each are listed */
    bool last1 = false, last2 = false;
    for (char *line = out; line && *line;) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = '\0';
        char *f[10];
        if (!strncmp(line, "Running as user", 15) || split_tabs(line, f, 10) < 5)
            goto next;
        long dport = strtol(f[1], NULL, 10), code = strtol(f[2], NULL, 10);
        if (code == 0)
            goto next; /* an empty ACK */
        frames++;
        bool request = dport == port;
        /* RFC 8613 Section 4.1.3.4.1: the Block options are Class E, so
         * no outer Block option; Sections 8.1/8.3: every message of the
         * exchange is protected; the dissector verified the tag
         * (oscore.tag is shown only then) and raised no expert item such
         * as "Authentication tag check failed". */
        if ((strstr(f[3], "Block1") || strstr(f[3], "Block2")) && outer++ < 3)
            report_add(r, "%s: frame %s carries outer Block options (%s)", what, f[0], f[3]);
        if (!strstr(f[3], "OSCORE")) {
            if (unprotected++ < 3)
                report_add(r, "%s: frame %s (code %ld.%02ld) is not an OSCORE message", what,
                           f[0], code >> 5, code & 31);
            goto next;
        }
        if (strlen(f[4]) != 16 || f[9][0]) {
            if (undecrypted++ < 3)
                report_add(r, "%s: frame %s not decrypted by tshark: tag '%s', expert '%s'",
                           what, f[0], f[4], f[9]);
            goto next;
        }
        decrypted++;
        struct blk b = {0};
        if (request && inner_block(f, 1, &b)) {
            bool last = b.m == 0;
            if (b.num != n1 || b.szx != (unsigned)szx_of(bs) || last1)
                report_add(r, "%s: frame %s inner Block1 NUM %u M %u SZX %u, expected NUM %zu "
                              "SZX %d",
                           what, f[0], b.num, b.m, b.szx, n1, szx_of(bs));
            last1 = last;
            n1++;
        }
        memset(&b, 0, sizeof b);
        if (!request && inner_block(f, 2, &b)) {
            bool last = b.m == 0;
            if (b.num != n2 || b.szx != (unsigned)szx_of(bs) || last2)
                report_add(r, "%s: frame %s inner Block2 NUM %u M %u SZX %u, expected NUM %zu "
                              "SZX %d",
                           what, f[0], b.num, b.m, b.szx, n2, szx_of(bs));
            last2 = last;
            n2++;
        }
    next:
        line = eol ? eol + 1 : NULL;
    }
    if (n1 != want1 || (want1 && !last1))
        report_add(r, "%s: %zu decrypted inner Block1 blocks (last M=0: %s), expected %zu", what,
                   n1, last1 ? "yes" : "no", want1);
    if (n2 != want2 || (want2 && !last2))
        report_add(r, "%s: %zu decrypted inner Block2 blocks (last M=0: %s), expected %zu", what,
                   n2, last2 ? "yes" : "no", want2);
    if (!frames)
        report_add(r, "%s: tshark shows no CoAP datagram", what);
    if (unprotected + outer + undecrypted)
        report_add(r, "%s: of %zu datagrams, %zu not OSCORE, %zu with outer Block options, %zu "
                      "OSCORE ones not decrypted and verified by tshark",
                   what, frames, unprotected, outer, undecrypted);
    free(out);
    return decrypted;
}

/* One OSCORE transfer at --block-size 256 against a responder with
 * --block-size 256, captured by `coap --pcap`, then dissected by tshark
 * with the right context (everything decrypts, inner blocks as expected)
 * and with one bit of the master secret flipped (nothing decrypts: the
 * check can fail). */
static void tshark_transfer(bool post)
{
    if (tshark_skip) {
        print_message("skipped: %s\n", tshark_skip);
        skip();
    }
    char client_conf[300], server_conf[300], args[1024], pcap[300];
    const char *name = post ? "wspost" : "wsget";
    context_pair(name, "c7", "07", WS_SECRET, client_conf, server_conf, sizeof client_conf);
    static struct net_proc r;
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:0 --oscore-context %s --state-dir %s/%s.state --block-size 256",
             server_conf, net_dir, name);
    assert_int_equal(net_responder_start(&r, name, args), 0);
    net_path(pcap, sizeof pcap, post ? "ws-post.pcap" : "ws-get.pcap");
    struct report rep = {0};
    struct xfer x;
    size_t n = 3000;
    transfer(&x, post, r.port, n, 256, client_conf, pcap, NULL);
    uint8_t *want = post ? make_body(n) : make_pattern(n);
    if (x.rc != 0 || !x.body || x.body_len != n || memcmp(x.body, want, n))
        report_add(&rep, "the transfer itself failed: exit %d:\n%.600s", x.rc, x.out);
    free(want);
    xfer_free(&x);
    net_proc_stop(&r, SIGTERM, 5000);

    char what[80];
    snprintf(what, sizeof what, "OSCORE %s of %zu bytes, 256-byte blocks",
             post ? "POST /echo" : "GET /bytes", n);
    size_t blocks = ceil_div(n, 256);
    size_t ok = tshark_check(&rep, what, pcap, r.port, WS_ROW(WS_SECRET), 256, post ? blocks : 0,
                             blocks);
    print_message("%s: %zu datagrams decrypted by tshark\n", what, ok);

    /* Control: the last bit of the master secret flipped: tshark decrypts
     * nothing and says why, so the assertions above can fail. */
    char *out;
    run_tshark(&out, pcap, r.port, WS_ROW("0f1e2d3c4b5a69788796a5b4c3d2e1f1"));
    bool refused = strstr(out, "Authentication tag check failed") != NULL;
    size_t good = 0;
    for (char *line = out; line && *line;) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = '\0';
        char *f[10];
        if (strncmp(line, "Running as user", 15) && split_tabs(line, f, 10) >= 5 && strlen(f[4]))
            good++;
        line = eol ? eol + 1 : NULL;
    }
    if (good)
        report_add(&rep, "control: %zu datagrams verified with a wrong master secret", good);
    if (!refused)
        report_add(&rep, "control: no \"Authentication tag check failed\" with a wrong secret");
    free(out);
    report_check(&rep, what);
}

/* Inner Block2 only (GET /bytes?n=3000). */
static void test_tshark_inner_block2(void **state)
{
    (void)state;
    tshark_transfer(false);
}

/* Inner Block1 and Block2 (POST /echo of 3000 bytes), each OSCORE message
 * in one datagram: a client that also cut them in outer Block1 blocks sent
 * pieces tshark could not verify alone. */
static void test_tshark_inner_block1_and_block2(void **state)
{
    (void)state;
    tshark_transfer(true);
}

/* initiator --request with a body from --payload-file and the answer's
 * body in --output: after a real handshake, under the EDHOC-derived
 * context, in inner blocks (RFC 8613 Section 4.1.3.4.1). */
static void test_initiator_payload_file_output(void **state)
{
    (void)state;
    char in[300], out_path[300];
    body_path(in, sizeof in, 20000);
    net_path(out_path, sizeof out_path, "initiator.out");
    unlink(out_path);
    char *out;
    int rc = net_cli_run(&out, 40, false,
                         "initiator coap://127.0.0.1:%u --request \"POST /echo\" --payload-file %s "
                         "--output %s --block-size 64 --timeout 20",
                         plain_r[0].port, in, out_path);
    if (rc != 0)
        fail_msg("initiator: %d\n%.2000s", rc, out);
    free(out);
    char *a = net_read_file(in), *b = net_read_file(out_path);
    assert_non_null(a);
    assert_non_null(b);
    struct stat sa, sb;
    assert_int_equal(stat(in, &sa), 0);
    assert_int_equal(stat(out_path, &sb), 0);
    assert_int_equal(sa.st_size, 20000);
    assert_int_equal(sb.st_size, 20000);
    assert_memory_equal(a, b, 20000); /* /echo returns the body it got */
    free(a);
    free(b);
}

int main(void)
{
    if (system("command -v tshark >/dev/null 2>&1"))
        tshark_skip = "tshark not installed";
    uint64_t t0 = net_now_ms();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_matrix_unprotected, check_alive),
        cmocka_unit_test_setup(test_matrix_oscore, check_alive),
        cmocka_unit_test_setup(test_mixed_block_sizes, check_alive),
        cmocka_unit_test_setup(test_server_max_body_unprotected, check_alive),
        cmocka_unit_test_setup(test_server_max_body_oscore, check_alive),
        cmocka_unit_test_setup(test_client_max_body_oscore, check_alive),
        cmocka_unit_test_setup(test_client_max_body_unprotected, check_alive),
        cmocka_unit_test_setup(test_oscore_blocks_are_inner_only, check_alive),
        cmocka_unit_test_setup(test_edhoc_x5chain_64, check_alive),
        cmocka_unit_test_setup(test_tshark_inner_block2, check_alive),
        cmocka_unit_test_setup(test_tshark_inner_block1_and_block2, check_alive),
        cmocka_unit_test_setup(test_initiator_payload_file_output, check_alive),
    };
    int failed = cmocka_run_group_tests_name("cli_blockwise", tests, group_setup,
                                             net_group_teardown);
    fprintf(stderr, "cli_blockwise: %llu ms\n", (unsigned long long)(net_now_ms() - t0));
    return failed;
}
