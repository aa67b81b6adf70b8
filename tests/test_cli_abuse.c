/*
 * Hostile datagrams against a real `edhoc-cli responder` process on
 * loopback, sent as raw UDP from this process:
 *
 *  1. the two datagrams that crashed libcoap 4.3.1's block-wise code (and
 *     variants: OSCORE option, /.well-known/edhoc, NON);
 *  2. block-wise bounds of our own engine (RFC 7959): Size1 = 2^32-1,
 *     bodies past --max-body in order and by a far block number, blocks
 *     out of order, duplicate blocks, an abandoned transfer;
 *  3. 10,000 source ports each opening a Block1 transfer: the responder's
 *     memory stays under a bound computed from its documented limits;
 *  4. a malformed-datagram sweep (seeded random bytes, every truncation and
 *     single-byte flip of captured valid datagrams, option nibble edge
 *     cases), then per-reason probes showing the guard refused them;
 *  5. what RFC 7252 / RFC 7959 ask for some malformed requests (RST,
 *     4.00), which a silent drop does not give.
 *
 * After each attack the responder must be alive (waitpid WNOHANG), still
 * complete a handshake and an OSCORE request (`edhoc-cli initiator
 * --request "GET /time"`), stop cleanly on SIGTERM, and its log must hold
 * no sanitizer report (in build-x-asan, $EDHOC_CLI is the sanitized
 * binary).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <poll.h>
#include <sys/resource.h>

#include "net_test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define BUILT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BUILT_SANITIZED 1
#endif
#endif
#ifndef BUILT_SANITIZED
#define BUILT_SANITIZED 0
#endif

/* The responder under test is the sanitized binary (build-x-asan, or the
 * suite's EDHOC_TEST_SANITIZED=1): slower, and its memory is counted
 * differently. */
static bool sanitized(void)
{
    return BUILT_SANITIZED || getenv("EDHOC_TEST_SANITIZED");
}

#define KiB 1024L
#define MiB (1024L * 1024L)

/* ---------------------------------------------------------------------
 * CoAP messages by hand (RFC 7252 Section 3)
 * ------------------------------------------------------------------- */

enum { T_CON = 0, T_NON = 1, T_ACK = 2, T_RST = 3 };
#define CODE(c, d) ((uint8_t)((c) << 5 | (d)))
#define C_GET CODE(0, 1)
#define C_POST CODE(0, 2)
#define C_CONTINUE CODE(2, 31)
#define C_BAD_REQUEST CODE(4, 0)
#define C_INCOMPLETE CODE(4, 8)
#define C_TOO_LARGE CODE(4, 13)
#define C_UNAVAILABLE CODE(5, 3)

enum {
    O_OSCORE = 9,
    O_URI_PATH = 11,
    O_CONTENT_FORMAT = 12,
    O_MAX_AGE = 14,
    O_BLOCK2 = 23,
    O_BLOCK1 = 27,
    O_SIZE2 = 28,
    O_SIZE1 = 60,
};

struct opt {
    unsigned num;
    const uint8_t *val;
    size_t len;
};

static size_t put_ext(uint8_t *out, unsigned v, unsigned *nibble)
{
    if (v < 13) {
        *nibble = v;
        return 0;
    }
    if (v < 269) {
        *nibble = 13;
        out[0] = (uint8_t)(v - 13);
        return 1;
    }
    *nibble = 14;
    out[0] = (uint8_t)((v - 269) >> 8);
    out[1] = (uint8_t)(v - 269);
    return 2;
}

/* A message; options must be given in ascending order. */
static size_t coap_build(uint8_t *out, size_t cap, unsigned type, uint8_t code, uint16_t mid,
                         const uint8_t *tok, size_t tkl, const struct opt *o, size_t n,
                         const uint8_t *pl, size_t pl_len)
{
    size_t need = 4 + tkl + pl_len + 1;
    for (size_t i = 0; i < n; i++)
        need += 5 + o[i].len;
    assert_true(need <= cap && tkl <= 8);
    size_t p = 0;
    out[p++] = (uint8_t)(0x40 | type << 4 | tkl);
    out[p++] = code;
    out[p++] = (uint8_t)(mid >> 8);
    out[p++] = (uint8_t)mid;
    memcpy(out + p, tok, tkl);
    p += tkl;
    unsigned last = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(o[i].num >= last);
        uint8_t ext[4];
        unsigned dn, ln;
        size_t de = put_ext(ext, o[i].num - last, &dn);
        size_t le = put_ext(ext + de, (unsigned)o[i].len, &ln);
        out[p++] = (uint8_t)(dn << 4 | ln);
        memcpy(out + p, ext, de + le);
        p += de + le;
        memcpy(out + p, o[i].val, o[i].len);
        p += o[i].len;
        last = o[i].num;
    }
    if (pl_len) {
        out[p++] = 0xFF;
        memcpy(out + p, pl, pl_len);
        p += pl_len;
    }
    return p;
}

/* Shortest uint option value (RFC 7252 Section 3.2). */
static size_t uint_val(uint32_t v, uint8_t out[4])
{
    size_t n = v > 0xFFFFFF ? 4 : v > 0xFFFF ? 3 : v > 0xFF ? 2 : v ? 1 : 0;
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    return n;
}

/* Block option value (RFC 7959 Section 2.2): NUM << 4 | M << 3 | SZX. */
static size_t block_val(uint32_t num, bool more, unsigned szx, uint8_t out[4])
{
    return uint_val(num << 4 | (more ? 8u : 0u) | szx, out);
}

struct coap_view {
    unsigned type, tkl;
    uint8_t code;
    uint16_t mid;
    uint8_t tok[8];
    const uint8_t *payload;
    size_t pl_len;
    size_t n_opts;
    struct opt opts[48];
};

static bool coap_parse(const uint8_t *d, size_t len, struct coap_view *v)
{
    memset(v, 0, sizeof *v);
    if (len < 4 || d[0] >> 6 != 1 || (d[0] & 15) > 8 || len < 4u + (d[0] & 15u))
        return false;
    v->type = d[0] >> 4 & 3;
    v->tkl = d[0] & 15;
    v->code = d[1];
    v->mid = (uint16_t)(d[2] << 8 | d[3]);
    memcpy(v->tok, d + 4, v->tkl);
    size_t p = 4 + v->tkl;
    unsigned num = 0;
    while (p < len) {
        if (d[p] == 0xFF) {
            v->payload = d + p + 1;
            v->pl_len = len - p - 1;
            return v->pl_len > 0;
        }
        unsigned dn = d[p] >> 4, ln = d[p] & 15, val[2] = {dn, ln};
        p++;
        for (int k = 0; k < 2; k++) {
            if (val[k] == 15)
                return false;
            if (val[k] == 13) {
                if (p + 1 > len)
                    return false;
                val[k] = 13u + d[p++];
            } else if (val[k] == 14) {
                if (p + 2 > len)
                    return false;
                val[k] = 269u + ((unsigned)d[p] << 8 | d[p + 1]);
                p += 2;
            }
        }
        num += val[0];
        if (val[1] > len - p || v->n_opts >= sizeof v->opts / sizeof v->opts[0])
            return false;
        v->opts[v->n_opts++] = (struct opt){num, d + p, val[1]};
        p += val[1];
    }
    return true;
}

static const struct opt *view_opt(const struct coap_view *v, unsigned num)
{
    for (size_t i = 0; i < v->n_opts; i++)
        if (v->opts[i].num == num)
            return &v->opts[i];
    return NULL;
}

static bool view_uint(const struct coap_view *v, unsigned num, uint32_t *out)
{
    const struct opt *o = view_opt(v, num);
    if (!o || o->len > 4)
        return false;
    *out = 0;
    for (size_t i = 0; i < o->len; i++)
        *out = *out << 8 | o->val[i];
    return true;
}

static const char *code_str(uint8_t code)
{
    static _Thread_local char s[8];
    snprintf(s, sizeof s, "%u.%02u", code >> 5, code & 31);
    return s;
}

static long hex_decode_local(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = strlen(hex);
    if (n % 2 || n / 2 > cap)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    return (long)(n / 2);
}

static void hexdump(char *out, size_t cap, const uint8_t *d, size_t len)
{
    size_t p = 0;
    for (size_t i = 0; i < len && p + 3 < cap; i++)
        p += (size_t)snprintf(out + p, cap - p, "%02x", d[i]);
    if (p < cap)
        out[p] = '\0';
}

/* ---------------------------------------------------------------------
 * Sockets
 * ------------------------------------------------------------------- */

static int udp_open(uint16_t *port)
{
    uint16_t p = 0;
    int fd = net_silent_socket(&p);
    if (port)
        *port = p;
    return fd;
}

static void send_to(int fd, uint16_t port, const uint8_t *m, size_t len)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    /* A refused send (ICMP from an earlier datagram, ENOBUFS) changes
     * nothing for the responder; the checks below tell what arrived. */
    (void)sendto(fd, m, len, 0, (struct sockaddr *)&a, sizeof a);
}

/* One datagram within timeout_ms, or -1. */
static long recv_wait(int fd, uint8_t *buf, size_t cap, unsigned timeout_ms)
{
    struct pollfd pf = {fd, POLLIN, 0};
    uint64_t end = net_now_ms() + timeout_ms;
    for (;;) {
        uint64_t now = net_now_ms();
        if (now >= end)
            return -1;
        int r = poll(&pf, 1, (int)(end - now));
        if (r > 0) {
            ssize_t n = recv(fd, buf, cap, MSG_DONTWAIT);
            if (n >= 0)
                return n;
            if (errno != EAGAIN && errno != ECONNREFUSED)
                return -1;
        } else if (r < 0 && errno != EINTR) {
            return -1;
        }
    }
}

static void drain(int fd)
{
    uint8_t b[2048];
    while (recv(fd, b, sizeof b, MSG_DONTWAIT) >= 0 || errno == ECONNREFUSED)
        ;
}

static unsigned answer_ms(void)
{
    return sanitized() ? 2500 : 1000;
}

/* Send a request and wait for its answer (same MID for CON, same token for
 * NON), resending the same bytes as a CoAP retransmission would (RFC 7252
 * Section 4.2) up to 4 times: a loaded host may drop a datagram, and a
 * retransmission is answered like the original. Returns the answer's
 * length, or -1 when none came. */
static long exchange(int fd, uint16_t port, const uint8_t *req, size_t len, uint8_t *resp,
                     size_t cap)
{
    struct coap_view rq;
    bool parsed = coap_parse(req, len, &rq);
    for (int attempt = 0; attempt < 4; attempt++) {
        send_to(fd, port, req, len);
        uint64_t end = net_now_ms() + answer_ms();
        for (;;) {
            uint64_t now = net_now_ms();
            if (now >= end)
                break;
            long n = recv_wait(fd, resp, cap, (unsigned)(end - now));
            if (n < 0)
                break;
            struct coap_view v;
            if (!parsed || !coap_parse(resp, (size_t)n, &v))
                return n;
            bool match = rq.type == T_CON ? v.mid == rq.mid
                                          : v.tkl == rq.tkl && !memcmp(v.tok, rq.tok, rq.tkl);
            if (match)
                return n;
        }
    }
    return -1;
}

/* ---------------------------------------------------------------------
 * The responder under test
 * ------------------------------------------------------------------- */

static const char *cli;

static int group_setup(void **state)
{
    (void)state;
    cli = net_cli();
    printf("# responder binary: %s%s\n", cli, sanitized() ? " (sanitized)" : "");
    return net_make_dir("abuse");
}

/* `responder --listen 127.0.0.1:0 EXTRA`; libcoap writes its own log lines
 * (with -v) to stdout, kept in NAME.out beside NAME.log. */
static void start(struct net_proc *p, const char *name, const char *extra)
{
    char args[1024], out[300];
    net_path(out, sizeof out, name);
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 %s >>%s.out", extra ? extra : "", out);
    if (net_responder_start(p, name, args) != 0)
        fail_msg("responder %s did not start", name);
}

/* Alive: the process has not exited (waitpid WNOHANG). */
static void assert_alive(struct net_proc *p, const char *after)
{
    int st = 0;
    pid_t r = p->pid ? waitpid(p->pid, &st, WNOHANG) : -1;
    if (r == 0)
        return;
    char *log = net_read_file(p->log);
    if (r == p->pid)
        p->pid = 0;
    fail_msg("the responder died after %s (%s %d); its log:\n%s", after,
             r == -1 ? "not started" : WIFSIGNALED(st) ? "signal" : "exit",
             WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), log ? log : "");
}

/* Sanitizer reports fail the test wherever they appear (ASan aborts,
 * UBSan may go on after printing). */
static void assert_log_clean(struct net_proc *p)
{
    char *log = net_read_file(p->log);
    static const char *const bad[] = {"ERROR: AddressSanitizer", "runtime error:",
                                      "ERROR: LeakSanitizer", "ERROR: UndefinedBehaviorSanitizer"};
    for (size_t i = 0; log && i < sizeof bad / sizeof bad[0]; i++) {
        if (strstr(log, bad[i]))
            fail_msg("sanitizer report (%s) in the responder's log %s:\n%s", bad[i], p->log, log);
    }
    free(log);
}

/* The responder still does its job: a full EDHOC handshake (RFC 9528) and
 * an OSCORE-protected request (RFC 8613) on the context it derived. */
static void assert_serves(struct net_proc *p, const char *after)
{
    assert_alive(p, after);
    char *out = NULL;
    int rc = net_cli_run(&out, sanitized() ? 120 : 30, false,
                         "initiator coap://127.0.0.1:%u --request \"GET /time\"", p->port);
    if (rc != 0 || !strstr(out, "Outcome: ok") || !strstr(out, "GET /time -> 2.05")) {
        char *log = net_read_file(p->log);
        fail_msg("after %s: initiator exit %d:\n%s\nresponder log:\n%s", after, rc, out,
                 log ? log : "");
    }
    free(out);
    assert_log_clean(p);
}

/* Serves, then stops on SIGTERM with exit 0 ("0 stopped by a signal"), and
 * nothing in its log from the sanitizers (LeakSanitizer reports at exit). */
static void finish(struct net_proc *p, const char *after)
{
    assert_serves(p, after);
    int rc = net_proc_stop(p, SIGTERM, sanitized() ? 30000 : 10000);
    if (rc != 0) {
        char *log = net_read_file(p->log);
        fail_msg("responder exit status %d on SIGTERM after %s:\n%s", rc, after, log ? log : "");
    }
    assert_log_clean(p);
}

static long vm_rss_kib(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *s = net_read_file(path);
    long kib = -1;
    const char *l = s ? strstr(s, "VmRSS:") : NULL;
    if (l)
        kib = strtol(l + 6, NULL, 10);
    free(s);
    return kib;
}

/* A Block1 request: POST /PATH, Block1 (num, more, szx), optional Size1,
 * payload. */
static size_t block1_req(uint8_t *out, size_t cap, unsigned type, uint16_t mid, uint8_t tok,
                         const char *path, uint32_t num, bool more, unsigned szx,
                         const uint32_t *size1, const uint8_t *pl, size_t pl_len)
{
    uint8_t b1[4], s1[4];
    struct opt o[4];
    size_t n = 0;
    o[n++] = (struct opt){O_URI_PATH, (const uint8_t *)path, strlen(path)};
    o[n++] = (struct opt){O_BLOCK1, b1, block_val(num, more, szx, b1)};
    if (size1)
        o[n++] = (struct opt){O_SIZE1, s1, uint_val(*size1, s1)};
    uint8_t t = tok;
    return coap_build(out, cap, type, C_POST, mid, &t, 1, o, n, pl, pl_len);
}

/* Expect an answer with `code`; returns its view (resp must outlive it). */
static void expect_code(int fd, uint16_t port, const uint8_t *req, size_t len, uint8_t *resp,
                        size_t cap, uint8_t code, struct coap_view *v, const char *what)
{
    long n = exchange(fd, port, req, len, resp, cap);
    char hex[200];
    hexdump(hex, sizeof hex, req, len < 60 ? len : 60);
    if (n < 0)
        fail_msg("%s: no answer to %s...", what, hex);
    if (!coap_parse(resp, (size_t)n, v))
        fail_msg("%s: unparsable answer", what);
    if (v->code != code) {
        char rh[200];
        hexdump(rh, sizeof rh, resp, (size_t)n < 60 ? (size_t)n : 60);
        fail_msg("%s: answered %s, expected %s (request %s..., answer %s)", what,
                 code_str(v->code), code_str(code), hex, rh);
    }
}

static void expect_block1(const struct coap_view *v, uint32_t num, bool more, const char *what)
{
    uint32_t b = 0;
    if (!view_uint(v, O_BLOCK1, &b))
        fail_msg("%s: no Block1 option in the answer", what);
    if (b >> 4 != num || ((b & 8) != 0) != more)
        fail_msg("%s: Block1 NUM %u M %u, expected NUM %u M %u", what, b >> 4, (b >> 3) & 1, num,
                 more);
}

static uint8_t filler[1024];

static void init_filler(void)
{
    for (size_t i = 0; i < sizeof filler; i++)
        filler[i] = (uint8_t)('a' + i % 26);
}

/* =====================================================================
 * 1. The datagram pair that crashed libcoap 4.3.1's block-wise code
 * =================================================================== */

static void test_libcoap_crash_pair(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "crash", "");
    static const char wk[] = "bb2e77656c6c2d6b6e6f776e056564686f63"; /* .well-known, edhoc */
    /* The reported bytes, then variants: an OSCORE option in front of the
     * block (the engine reassembles outer blocks before OSCORE, RFC 8613
     * Section 4.1.3.4.2), the EDHOC resource, and NON. */
    struct {
        const char *name, *first_hdr, *first_opts, *second_hdr, *second_opts;
    } pairs[] = {
        {"reported (POST /x)", "4102000101", "b178d10308", "4102000202", "b178d10300"},
        {"with an OSCORE option", "4102000101", "920900d10508", "4102000202", "920900d10500"},
        {"on /.well-known/edhoc", "4102000101", NULL, "4102000202", NULL},
        {"NON", "5102000101", "b178d10308", "5102000202", "b178d10300"},
    };
    uint16_t mid = 0x100;
    for (int round = 0; round < 2; round++) {
        /* Round 0: each pair from a new source port; round 1: all pairs
         * from one port, one after the other, so state stacks up. */
        int shared = round == 1 ? udp_open(NULL) : -1;
        for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
            int fd = round == 0 ? udp_open(NULL) : shared;
            assert_true(fd >= 0);
            char h1[200], h2[200];
            if (pairs[i].first_opts) {
                snprintf(h1, sizeof h1, "%s%sff%s", pairs[i].first_hdr, pairs[i].first_opts,
                         "41414141414141414141414141414141");
                snprintf(h2, sizeof h2, "%s%sff42", pairs[i].second_hdr, pairs[i].second_opts);
            } else {
                snprintf(h1, sizeof h1, "%s%sd10308ff%s", pairs[i].first_hdr, wk,
                         "41414141414141414141414141414141");
                snprintf(h2, sizeof h2, "%s%sd10300ff42", pairs[i].second_hdr, wk);
            }
            uint8_t d1[128], d2[128], resp[1500];
            long l1 = hex_decode_local(h1, d1, sizeof d1), l2 = hex_decode_local(h2, d2, sizeof d2);
            assert_true(l1 > 0 && l2 > 0);
            /* Fresh Message IDs per send in round 1: the same MID from the
             * same port would only be answered from the dedup cache. */
            if (round == 1) {
                d1[2] = (uint8_t)(mid >> 8), d1[3] = (uint8_t)mid, mid++;
                d2[2] = (uint8_t)(mid >> 8), d2[3] = (uint8_t)mid, mid++;
            }
            struct coap_view v;
            char what[160];
            snprintf(what, sizeof what, "crash pair %s, round %d, first datagram", pairs[i].name,
                     round);
            /* RFC 7959 Section 2.9.1: 2.31 (Continue) "indicates that
             * the transfer of this block of the request body was
             * successful and that the server encourages sending further
             * blocks"; its Block1 acknowledges block 0 with M=1. */
            expect_code(fd, r.port, d1, (size_t)l1, resp, sizeof resp, C_CONTINUE, &v, what);
            expect_block1(&v, 0, true, what);
            assert_alive(&r, what);
            snprintf(what, sizeof what, "crash pair %s, round %d, second datagram",
                     pairs[i].name, round);
            /* The second datagram is block 0 again with M=0: a new,
             * complete one-block body (edhoc/blockwise.h: "NUM 0 restarts
             * the transfer"). It gets a final response, not a crash: any
             * code but 2.31, with the request's token, carrying Block1
             * with the last NUM and M=0 (RFC 7959 Section 2.3: in a
             * response Block1 "indicates what block number is being
             * acknowledged"). */
            long n = exchange(fd, r.port, d2, (size_t)l2, resp, sizeof resp);
            if (n < 0)
                fail_msg("%s: no answer", what);
            assert_true(coap_parse(resp, (size_t)n, &v));
            if (v.code == C_CONTINUE || v.code >> 5 < 2)
                fail_msg("%s: answered %s, expected a final response", what, code_str(v.code));
            assert_int_equal(v.tkl, 1);
            assert_int_equal(v.tok[0], d2[4]);
            expect_block1(&v, 0, false, what);
            assert_alive(&r, what);
            if (round == 0)
                close(fd);
        }
        if (shared >= 0)
            close(shared);
    }
    finish(&r, "the libcoap crash pair");
}

/* =====================================================================
 * 2. Block-wise bounds (RFC 7959)
 * =================================================================== */

/* Size1 = 2^32-1 on block 0: RFC 7959 Section 4, Size1 "in a request
 * carrying a Block1 Option, to indicate the current estimate the client
 * has of the total size of the resource representation"; and "in a 4.13
 * response, to indicate the maximum size that would have been
 * acceptable" (Section 2.9.3: 4.13 "accompanied by a Size1 Option").
 * Answered on block 0 itself, before any block is kept. */
static void check_size1_refused(uint16_t port, uint32_t max_body, const char *what)
{
    int fd = udp_open(NULL);
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    uint32_t huge = 0xFFFFFFFFu, s1 = 0;
    size_t n = block1_req(req, sizeof req, T_CON, 0x2001, 0x21, "echo", 0, true, 0, &huge,
                          filler, 16);
    expect_code(fd, port, req, n, resp, sizeof resp, C_TOO_LARGE, &v, what);
    if (!view_uint(&v, O_SIZE1, &s1))
        fail_msg("%s: 4.13 without Size1", what);
    assert_int_equal(s1, max_body);
    close(fd);
}

static void test_size1_huge(void **state)
{
    (void)state;
    struct net_proc r, small;
    start(&r, "size1", "--allow-unprotected");
    /* The default --max-body is 65536. */
    check_size1_refused(r.port, 65536, "Size1 2^32-1, default --max-body");
    start(&small, "size1-small", "--allow-unprotected --max-body 4096");
    /* Size1 in the 4.13 is the configured limit, not a constant. */
    check_size1_refused(small.port, 4096, "Size1 2^32-1, --max-body 4096");
    /* Size1 one above the limit is refused too, Size1 = the limit is
     * not: the bound is exact. */
    {
        int fd = udp_open(NULL);
        uint8_t req[1500], resp[1500];
        struct coap_view v;
        uint32_t s1 = 4097;
        size_t n = block1_req(req, sizeof req, T_CON, 0x2101, 0x22, "echo", 0, true, 0, &s1,
                              filler, 16);
        expect_code(fd, small.port, req, n, resp, sizeof resp, C_TOO_LARGE, &v,
                    "Size1 4097 with --max-body 4096");
        s1 = 4096;
        n = block1_req(req, sizeof req, T_CON, 0x2102, 0x23, "echo", 0, true, 0, &s1, filler, 16);
        expect_code(fd, small.port, req, n, resp, sizeof resp, C_CONTINUE, &v,
                    "Size1 4096 with --max-body 4096");
        close(fd);
    }
    finish(&small, "Size1 2^32-1");
    finish(&r, "Size1 2^32-1");
}

/* A body sent in order, in 1 KiB blocks, growing past max_body: every
 * block up to the limit is 2.31, the first block past it is 4.13 with
 * Size1 = max_body (RFC 7959 Section 2.9.3 "allows the server to return
 * this response code at any time during a Block1 transfer to indicate
 * that it does not currently have the resources to store blocks"), not
 * silence. */
static void send_body_past_limit(uint16_t port, uint32_t max_body, const char *what)
{
    int fd = udp_open(NULL);
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    uint32_t blocks = max_body / 1024;
    for (uint32_t num = 0; num < blocks; num++) {
        size_t n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x3000 + num), 0x31, "echo",
                              num, true, 6, NULL, filler, 1024);
        char w[160];
        snprintf(w, sizeof w, "%s: block %u", what, num);
        expect_code(fd, port, req, n, resp, sizeof resp, C_CONTINUE, &v, w);
        expect_block1(&v, num, true, w);
    }
    size_t n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x3000 + blocks), 0x31, "echo",
                          blocks, true, 6, NULL, filler, 1024);
    char w[160];
    snprintf(w, sizeof w, "%s: block %u, the first past max_body %u", what, blocks, max_body);
    expect_code(fd, port, req, n, resp, sizeof resp, C_TOO_LARGE, &v, w);
    uint32_t s1 = 0;
    if (!view_uint(&v, O_SIZE1, &s1) || s1 != max_body)
        fail_msg("%s: 4.13 without Size1 = %u", w, max_body);
    close(fd);
}

static void test_body_past_max_body(void **state)
{
    (void)state;
    struct net_proc small, deflt;
    start(&small, "past-small", "--allow-unprotected --max-body 4096");
    send_body_past_limit(small.port, 4096, "--max-body 4096");
    finish(&small, "a body past --max-body 4096");
    start(&deflt, "past-default", "--allow-unprotected");
    send_body_past_limit(deflt.port, 65536, "default --max-body 65536");
    finish(&deflt, "a body past the default --max-body");
}

/* --max-body above the default: a body of 80 KiB in order is taken whole
 * (the option promises bodies up to N: "largest body reassembled or
 * served"), /echo answers 2.04 with Size2 = 81920 (RFC 7959 Section 4:
 * Size2 in a Block2 response gives the whole size). */
static void test_max_body_above_default(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "big-body", "--allow-unprotected --max-body 131072");
    int fd = udp_open(NULL);
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    const uint32_t blocks = 80;
    for (uint32_t num = 0; num < blocks; num++) {
        bool more = num + 1 < blocks;
        size_t n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x4000 + num), 0x41, "echo",
                              num, more, 6, NULL, filler, 1024);
        char w[160];
        snprintf(w, sizeof w, "--max-body 131072: block %u of an 80 KiB body", num);
        long len = exchange(fd, r.port, req, n, resp, sizeof resp);
        if (len < 0)
            fail_msg("%s: no answer (the largest body --max-body allows is refused silently)", w);
        assert_true(coap_parse(resp, (size_t)len, &v));
        if (more) {
            if (v.code != C_CONTINUE)
                fail_msg("%s: answered %s, expected 2.31", w, code_str(v.code));
            expect_block1(&v, num, true, w);
        } else {
            uint32_t size2 = 0;
            if (v.code != CODE(2, 4) || !view_uint(&v, O_SIZE2, &size2) || size2 != blocks * 1024)
                fail_msg("%s: answered %s (Size2 %u), expected 2.04 with Size2 %u", w,
                         code_str(v.code), size2, blocks * 1024);
        }
    }
    close(fd);
    finish(&r, "an 80 KiB body with --max-body 131072");
}

/* A claimed 4 GiB body by block number, from a port with no transfer:
 * NUM 1000 of 1 KiB blocks (1000 KiB, past --max-body 65536 but below
 * the 1 MiB any --max-body may allow) and NUM 2^20-1 (1 GiB, the largest
 * offset Block1 can name; with Size1 2^32-1 the body claimed is 4 GiB).
 * No body above max_body is taken: 4.13 (RFC 7959 Section 2.9.3) at once,
 * with Size1 = max_body. */
static void far_block(uint16_t port, uint32_t num, bool with_size1, const char *what)
{
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    uint32_t huge = 0xFFFFFFFFu, s1 = 0;
    int fd = udp_open(NULL);
    size_t n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x5000 + (num & 0xFF)), 0x51,
                          "echo", num, true, 6, with_size1 ? &huge : NULL, filler, 1024);
    expect_code(fd, port, req, n, resp, sizeof resp, C_TOO_LARGE, &v, what);
    if (!view_uint(&v, O_SIZE1, &s1) || s1 != 65536)
        fail_msg("%s: 4.13 without Size1 65536", what);
    close(fd);
}

static void test_far_block_number(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "far-num", "--allow-unprotected");
    far_block(r.port, 1000, false, "Block1 NUM 1000 (1 KiB blocks)");
    far_block(r.port, 1000, true, "Block1 NUM 1000 (1 KiB blocks) with Size1 2^32-1");
    assert_alive(&r, "block 1000");
    far_block(r.port, 0xFFFFF, false, "Block1 NUM 2^20-1 (1 KiB blocks)");
    far_block(r.port, 0xFFFFF, true, "Block1 NUM 2^20-1 (1 KiB blocks) with Size1 2^32-1");
    finish(&r, "a far block number");
}

static void test_out_of_order(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "order", "--allow-unprotected");
    int fd = udp_open(NULL);
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    size_t n = block1_req(req, sizeof req, T_CON, 0x6001, 0x61, "echo", 0, true, 6, NULL, filler,
                          1024);
    expect_code(fd, r.port, req, n, resp, sizeof resp, C_CONTINUE, &v, "block 0");
    /* RFC 7959 Section 2.9.2: 4.08 "indicates that the server has not
     * received the blocks of the request body that it needs to proceed.
     * The client has not sent all blocks, not sent them in the order
     * required by the server, or has sent them long enough ago that the
     * server has already discarded them." Block 2 after block 0: */
    n = block1_req(req, sizeof req, T_CON, 0x6002, 0x61, "echo", 2, true, 6, NULL, filler, 1024);
    expect_code(fd, r.port, req, n, resp, sizeof resp, C_INCOMPLETE, &v, "block 2 after block 0");
    /* "... has not sent all blocks": a continuation from a port with no
     * transfer. */
    int fd2 = udp_open(NULL);
    n = block1_req(req, sizeof req, T_CON, 0x6003, 0x62, "echo", 1, false, 6, NULL, filler, 1024);
    expect_code(fd2, r.port, req, n, resp, sizeof resp, C_INCOMPLETE, &v,
                "block 1 without a transfer");
    /* A smaller block size in the middle changes the offsets: block 3 of
     * 256 bytes after block 0 of 1 KiB is offset 768, not 1024. */
    n = block1_req(req, sizeof req, T_CON, 0x6004, 0x63, "echo", 0, true, 6, NULL, filler, 1024);
    expect_code(fd2, r.port, req, n, resp, sizeof resp, C_CONTINUE, &v, "block 0 (1 KiB)");
    n = block1_req(req, sizeof req, T_CON, 0x6005, 0x63, "echo", 3, true, 4, NULL, filler, 256);
    expect_code(fd2, r.port, req, n, resp, sizeof resp, C_INCOMPLETE, &v,
                "block 3 of 256 bytes (offset 768) after block 0 of 1 KiB");
    /* NUM 0 starts again (edhoc/blockwise.h) and the body completes;
     * Size2 (RFC 7959 Section 4: "the current estimate the server has of
     * the total size") is 1024 + 10. */
    n = block1_req(req, sizeof req, T_CON, 0x6006, 0x61, "echo", 0, true, 6, NULL, filler, 1024);
    expect_code(fd, r.port, req, n, resp, sizeof resp, C_CONTINUE, &v, "block 0 again");
    n = block1_req(req, sizeof req, T_CON, 0x6007, 0x61, "echo", 1, false, 6, NULL, filler, 10);
    expect_code(fd, r.port, req, n, resp, sizeof resp, CODE(2, 4), &v, "block 1 (last)");
    uint32_t size2 = 0;
    assert_true(view_uint(&v, O_SIZE2, &size2));
    assert_int_equal(size2, 1034);
    close(fd);
    close(fd2);
    finish(&r, "blocks out of order");
}

static void test_duplicate_blocks(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "dup", "--allow-unprotected");
    int fd = udp_open(NULL);
    uint8_t req[1500], resp[1500], first[1500];
    struct coap_view v;
    size_t n = block1_req(req, sizeof req, T_CON, 0x7001, 0x71, "echo", 0, true, 6, NULL, filler,
                          1024);
    expect_code(fd, r.port, req, n, resp, sizeof resp, C_CONTINUE, &v, "block 0");
    n = block1_req(req, sizeof req, T_CON, 0x7002, 0x71, "echo", 1, true, 6, NULL, filler, 1024);
    long l1 = exchange(fd, r.port, req, n, first, sizeof first);
    assert_true(l1 > 0);
    assert_true(coap_parse(first, (size_t)l1, &v));
    assert_int_equal(v.code, C_CONTINUE);
    /* A retransmission (same Message ID) gets the same answer (RFC 7252
     * Section 4.5: "The recipient SHOULD acknowledge each duplicate copy
     * of a Confirmable message using the same Acknowledgement"). */
    long l2 = exchange(fd, r.port, req, n, resp, sizeof resp);
    assert_int_equal(l2, l1);
    assert_memory_equal(resp, first, (size_t)l1);
    /* The same block again in a new message (a client that lost the
     * 2.31 and sent the block anew): edhoc/blockwise.h "a repeated last
     * block is answered again": 2.31 for block 1 once more, without
     * taking the bytes twice. */
    for (int k = 0; k < 3; k++) {
        n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x7003 + k), 0x71, "echo", 1, true, 6,
                       NULL, filler, 1024);
        expect_code(fd, r.port, req, n, resp, sizeof resp, C_CONTINUE, &v, "block 1 again");
        expect_block1(&v, 1, true, "block 1 again");
    }
    n = block1_req(req, sizeof req, T_CON, 0x7010, 0x71, "echo", 2, false, 6, NULL, filler, 100);
    expect_code(fd, r.port, req, n, resp, sizeof resp, CODE(2, 4), &v, "block 2 (last)");
    /* The echoed body is 1024 + 1024 + 100 bytes: the duplicates were not
     * appended (Size2, RFC 7959 Section 4, is the whole body's size). */
    uint32_t size2 = 0;
    assert_true(view_uint(&v, O_SIZE2, &size2));
    assert_int_equal(size2, 2148);
    close(fd);
    finish(&r, "duplicate blocks");
}

static void test_abandoned_transfer(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "abandon", "--allow-unprotected");
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    /* Half of an 8 KiB body (Size1 8192), then nothing more. */
    int fd = udp_open(NULL);
    uint32_t s1 = 8192;
    for (uint32_t num = 0; num < 4; num++) {
        size_t n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x8000 + num), 0x81, "echo",
                              num, true, 6, num ? NULL : &s1, filler, 1024);
        expect_code(fd, r.port, req, n, resp, sizeof resp, C_CONTINUE, &v, "half a body");
    }
    /* The same port can still ask for something else. */
    {
        uint8_t tok = 0x82;
        struct opt o[] = {{O_URI_PATH, (const uint8_t *)"time", 4}};
        size_t n = coap_build(req, sizeof req, T_CON, C_GET, 0x8100, &tok, 1, o, 1, NULL, 0);
        expect_code(fd, r.port, req, n, resp, sizeof resp, CODE(2, 5), &v,
                    "GET /time from the port that abandoned a body");
    }
    close(fd);
    /* Another peer completes a body of its own. */
    int fd2 = udp_open(NULL);
    for (uint32_t num = 0; num < 3; num++) {
        size_t n = block1_req(req, sizeof req, T_CON, (uint16_t)(0x8200 + num), 0x83, "echo",
                              num, num < 2, 6, NULL, filler, num < 2 ? 1024 : 7);
        expect_code(fd2, r.port, req, n, resp, sizeof resp, num < 2 ? C_CONTINUE : CODE(2, 4), &v,
                    "another peer's body");
    }
    uint32_t size2 = 0;
    assert_true(view_uint(&v, O_SIZE2, &size2));
    assert_int_equal(size2, 2055);
    close(fd2);
    finish(&r, "an abandoned transfer");
}

/* =====================================================================
 * 3. 10,000 source ports, each opening a Block1 transfer
 * =================================================================== */

/* What the responder may hold after any number of sources, from its
 * documented limits:
 *   transfers   256 at most (edhoc_bw_limits.max_transfers), their bytes
 *               4 MiB at most (max_bytes), plus a record each (key, peer
 *               name, timestamps): counted at 1 KiB;
 *   sessions    512 idle libcoap sessions at most (--max-sessions); a
 *               coap_session_t of libcoap 4.3.1 with its buffers costs
 *               about 540 bytes of RSS (measured: 10,000 sessions without
 *               the cap grew RSS by 5.4 MB), counted at 1 KiB;
 *   slack       2 MiB for the allocator (arenas, fragmentation, the
 *               responses in flight).
 * Under ASan every allocation carries redzones and shadow memory: twice
 * the per-item costs, 4 MiB of slack and the 1 MiB quarantine the
 * responder is given here. Once the caps are reached (a few hundred sources),
 * further sources cost nothing lasting: between 5,000 and 10,000 sources
 * RSS may grow by 1 MiB (1.5 MiB sanitized) at most, where 5,000 more
 * uncapped sessions would take 2.6 MiB (3.5 MiB sanitized, measured). */
#define FLOOD_SOURCES 10000
#define FLOOD_BATCH 64

static long flood_bound_kib(void)
{
    long per = sanitized() ? 2 : 1;
    long transfers = 4 * MiB + 256 * 1 * KiB;
    long sessions = 512L * 1 * KiB;
    long slack = sanitized() ? 5 * MiB : 2 * MiB;
    return (per * (transfers + sessions) + slack) / KiB;
}

static long plateau_bound_kib(void)
{
    return sanitized() ? 1536 : 1024;
}

static void test_many_sources(void **state)
{
    (void)state;
    /* Under ASan, freed memory sits in a quarantine (256 MiB by default)
     * and would show as growth; a small one keeps RSS comparable. */
    char *old_asan = getenv("ASAN_OPTIONS") ? strdup(getenv("ASAN_OPTIONS")) : NULL;
    char asan[512];
    snprintf(asan, sizeof asan, "%s%squarantine_size_mb=1:thread_local_quarantine_size_kb=64",
             old_asan ? old_asan : "", old_asan && *old_asan ? ":" : "");
    setenv("ASAN_OPTIONS", asan, 1);
    struct net_proc r;
    start(&r, "flood", "--allow-unprotected");
    if (old_asan)
        setenv("ASAN_OPTIONS", old_asan, 1);
    else
        unsetenv("ASAN_OPTIONS");
    free(old_asan);

    /* Warm up: one handshake and request, so that what the first ones
     * allocate once is in the baseline. */
    assert_serves(&r, "start");
    long before = vm_rss_kib(r.pid), middle = -1;
    assert_true(before > 0);

    static uint8_t seen[65536 / 8];
    memset(seen, 0, sizeof seen);
    unsigned sources = 0, c231 = 0, c503 = 0, c503_no_age = 0, other = 0, none = 0;
    uint8_t req[1500], resp[1500];
    uint64_t t0 = net_now_ms();
    while (sources < FLOOD_SOURCES) {
        int fds[FLOOD_BATCH];
        size_t nfd = 0;
        unsigned tries = 0;
        /* A closed port still counts as a source for libcoap's session
         * table: ports are not reused within the run. */
        while (nfd < FLOOD_BATCH && sources + nfd < FLOOD_SOURCES && tries++ < 100000) {
            uint16_t port = 0;
            int fd = udp_open(&port);
            if (fd < 0)
                fail_msg("socket: %s", strerror(errno));
            if (seen[port / 8] & (1u << (port % 8))) {
                close(fd);
                continue;
            }
            seen[port / 8] |= (uint8_t)(1u << (port % 8));
            fds[nfd++] = fd;
        }
        assert_true(nfd > 0);
        for (size_t i = 0; i < nfd; i++) {
            uint16_t mid = (uint16_t)(sources + i);
            size_t n = block1_req(req, sizeof req, T_CON, mid, 0x90, "echo", 0, true, 6, NULL,
                                  filler, 1024);
            send_to(fds[i], r.port, req, n);
        }
        for (size_t i = 0; i < nfd; i++) {
            long n = recv_wait(fds[i], resp, sizeof resp, answer_ms());
            struct coap_view v;
            if (n < 0 || !coap_parse(resp, (size_t)n, &v)) {
                none++;
            } else if (v.code == C_CONTINUE) {
                c231++;
            } else if (v.code == C_UNAVAILABLE) {
                uint32_t age;
                c503++;
                c503_no_age += !view_uint(&v, O_MAX_AGE, &age);
            } else {
                other++;
            }
            close(fds[i]);
        }
        sources += (unsigned)nfd;
        if (middle < 0 && sources >= FLOOD_SOURCES / 2)
            middle = vm_rss_kib(r.pid);
    }
    long after = vm_rss_kib(r.pid);
    printf("# %u sources in %llu ms: %u x 2.31, %u x 5.03, %u other, %u unanswered\n", sources,
           (unsigned long long)(net_now_ms() - t0), c231, c503, other, none);
    printf("# responder VmRSS: before %ld KiB, after %u sources %ld KiB, after %u sources %ld "
           "KiB; bound before + %ld KiB, growth between %u and %u sources at most %ld KiB\n",
           before, sources / 2, middle, sources, after, flood_bound_kib(), sources / 2, sources,
           plateau_bound_kib());
    fflush(stdout);
    assert_alive(&r, "10,000 sources");
    /* The flood reached the responder: nearly every source was answered
     * (1% may be lost on a loaded host). */
    assert_true(c231 + c503 + other >= FLOOD_SOURCES * 99 / 100);
    /* edhoc/blockwise.h: at most 256 incomplete transfers (all peers); the
     * rest get "5.03 Service Unavailable with Max-Age" (RFC 7252 Section
     * 5.9.3.4: 5.03 "with a Max-Age Option in place of the "Retry-After"
     * header field to indicate the number of seconds after which to
     * retry"). */
    assert_true(c231 >= 1 && c231 <= 256);
    assert_int_equal(other, 0);
    assert_int_equal(c503_no_age, 0);
    /* The memory bound stated above. */
    if (after - before > flood_bound_kib())
        fail_msg("VmRSS grew by %ld KiB, above the bound of %ld KiB", after - before,
                 flood_bound_kib());
    if (after - middle > plateau_bound_kib())
        fail_msg("VmRSS grew by %ld KiB between %u and %u sources (caps reached): above %ld KiB",
                 after - middle, sources / 2, sources, plateau_bound_kib());

    /* With the transfer slots taken, a legitimate block-wise client gets
     * 5.03 + Max-Age until the abandoned transfers expire (247 s): shown,
     * not asserted (a documented bound, not a failure). */
    {
        int fd = udp_open(NULL);
        size_t n = block1_req(req, sizeof req, T_CON, 0x9F00, 0x9F, "echo", 0, true, 6, NULL,
                              filler, 1024);
        long l = exchange(fd, r.port, req, n, resp, sizeof resp);
        struct coap_view v;
        uint32_t age = 0;
        if (l > 0 && coap_parse(resp, (size_t)l, &v)) {
            view_uint(&v, O_MAX_AGE, &age);
            printf("# a new Block1 client after the flood: %s (Max-Age %u)\n", code_str(v.code),
                   age);
        }
        close(fd);
    }
    finish(&r, "10,000 sources");
}

/* =====================================================================
 * 4. Malformed datagrams
 * =================================================================== */

/* UDP payloads towards the responder's port in a pcap written by
 * `--pcap` (LINKTYPE_RAW IPv4, or Ethernet / BSD loopback / Linux SLL). */
struct dgram {
    uint8_t *d;
    size_t len;
};

static size_t pcap_requests(const char *path, uint16_t to_port, struct dgram *out, size_t cap)
{
    char *raw = NULL;
    size_t len = 0;
    {
        FILE *f = fopen(path, "rb");
        if (!f)
            return 0;
        fseek(f, 0, SEEK_END);
        len = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        raw = malloc(len ? len : 1);
        if (fread(raw, 1, len, f) != len)
            len = 0;
        fclose(f);
    }
    const uint8_t *b = (const uint8_t *)raw;
    size_t count = 0;
    if (len < 24) {
        free(raw);
        return 0;
    }
    uint32_t magic = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                     (uint32_t)b[3] << 24;
    bool le = magic == 0xa1b2c3d4u || magic == 0xa1b23c4du;
    if (!le && magic != 0xd4c3b2a1u && magic != 0x4d3cb2a1u) {
        free(raw);
        return 0;
    }
#define U32(p) (le ? (uint32_t)(p)[0] | (uint32_t)(p)[1] << 8 | (uint32_t)(p)[2] << 16 | \
                         (uint32_t)(p)[3] << 24                                            \
                   : (uint32_t)(p)[3] | (uint32_t)(p)[2] << 8 | (uint32_t)(p)[1] << 16 | \
                         (uint32_t)(p)[0] << 24)
    uint32_t link = U32(b + 20);
    size_t off = 24;
    while (off + 16 <= len && count < cap) {
        uint32_t incl = U32(b + off + 8);
        off += 16;
        if (incl > len - off)
            break;
        const uint8_t *pk = b + off;
        size_t pl = incl;
        off += incl;
        size_t skip = link == 1 ? 14 : link == 0 ? 4 : link == 113 ? 16 : 0;
        if (pl < skip + 28)
            continue;
        pk += skip, pl -= skip;
        if (pk[0] >> 4 != 4 || pk[9] != 17)
            continue;
        size_t ihl = (size_t)(pk[0] & 15) * 4;
        if (pl < ihl + 8)
            continue;
        const uint8_t *udp = pk + ihl;
        uint16_t dport = (uint16_t)(udp[2] << 8 | udp[3]);
        size_t ulen = (size_t)(udp[4] << 8 | udp[5]);
        if (dport != to_port || ulen < 8 || ulen > pl - ihl)
            continue;
        out[count].len = ulen - 8;
        out[count].d = malloc(ulen - 8 ? ulen - 8 : 1);
        memcpy(out[count].d, udp + 8, ulen - 8);
        count++;
    }
#undef U32
    free(raw);
    return count;
}

/* The sweep's sender: datagrams go round-robin from a few source ports;
 * every SWEEP_WINDOW of them a CON GET /time from a port of its own is a
 * barrier: the responder reads one socket in order, so the ACK to it
 * means everything before was read, and no datagram is lost to a full
 * receive buffer. (Not a CON ping: libcoap 4.3.1 answers only every other
 * ping of a session with the RST of RFC 7252 Section 4.3.) */
#define SWEEP_PORTS 8
#define SWEEP_WINDOW 32

struct sweep {
    struct net_proc *r;
    int fds[SWEEP_PORTS];
    int barrier;
    uint16_t barrier_mid;
    size_t sent, in_window, barriers;
    uint16_t mid;
};

static void sweep_barrier(struct sweep *s)
{
    uint8_t req[32], resp[256];
    uint8_t tok = 0xBA;
    struct opt o[] = {{O_URI_PATH, (const uint8_t *)"time", 4}};
    size_t n = coap_build(req, sizeof req, T_CON, C_GET, s->barrier_mid++, &tok, 1, o, 1, NULL, 0);
    /* RFC 7252 Section 4.2: a CON request is acknowledged (here with the
     * 4.01 of a resource that needs OSCORE, piggybacked). */
    long got = exchange(s->barrier, s->r->port, req, n, resp, sizeof resp);
    if (got < 0) {
        assert_alive(s->r, "part of the malformed-datagram sweep");
        fail_msg("the responder stopped answering after %zu sweep datagrams", s->sent);
    }
    for (size_t i = 0; i < SWEEP_PORTS; i++)
        drain(s->fds[i]);
    s->in_window = 0;
    s->barriers++;
}

static void sweep_send(struct sweep *s, const uint8_t *d, size_t len)
{
    send_to(s->fds[s->sent % SWEEP_PORTS], s->r->port, d, len);
    s->sent++;
    if (++s->in_window == SWEEP_WINDOW)
        sweep_barrier(s);
}

/* A mutated copy of a valid datagram gets a fresh Message ID unless the
 * mutation is in it, so that it is not answered from a duplicate cache
 * (RFC 7252 Section 4.5) without being processed. */
static void sweep_send_mutant(struct sweep *s, uint8_t *d, size_t len, size_t pos)
{
    uint8_t save[2] = {0, 0};
    bool set = len >= 4 && (pos < 2 || pos > 3);
    if (set) {
        memcpy(save, d + 2, 2);
        d[2] = (uint8_t)(s->mid >> 8);
        d[3] = (uint8_t)s->mid;
        s->mid++;
    }
    sweep_send(s, d, len);
    if (set)
        memcpy(d + 2, save, 2);
}

static uint64_t rng_state;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Option headers with every delta nibble and length nibble (RFC 7252
 * Section 3.1: 13 and 14 take 1 and 2 more bytes, 15 is reserved), their
 * extension bytes at 0x00, 0xFF, or missing, after a valid GET /time
 * header; with values present, short, or absent. */
static void sweep_nibbles(struct sweep *s)
{
    static const uint8_t fills[] = {0x00, 0xFF, 0x7F};
    uint8_t d[600];
    for (unsigned dn = 0; dn < 16; dn++) {
        for (unsigned ln = 0; ln < 16; ln++) {
            for (size_t f = 0; f < sizeof fills; f++) {
                for (int tail = 0; tail < 3; tail++) {
                    size_t p = 0;
                    d[p++] = 0x52; /* NON, TKL 2 */
                    d[p++] = C_GET;
                    d[p++] = (uint8_t)(s->mid >> 8);
                    d[p++] = (uint8_t)s->mid++;
                    d[p++] = 0xA5;
                    d[p++] = 0x5A;
                    d[p++] = 0xB4; /* Uri-Path "time" */
                    memcpy(d + p, "time", 4);
                    p += 4;
                    d[p++] = (uint8_t)(dn << 4 | ln);
                    size_t ext = (size_t)((dn == 13) + 2 * (dn == 14) + (ln == 13) + 2 * (ln == 14));
                    /* tail 0: extension bytes and a value of the length the
                     * nibbles give (capped); 1: the header cut after its
                     * first byte; 2: extension bytes, then a payload
                     * marker and nothing after it. */
                    if (tail == 1) {
                        sweep_send(s, d, p);
                        continue;
                    }
                    for (size_t k = 0; k < ext; k++)
                        d[p++] = fills[f];
                    if (tail == 2) {
                        d[p++] = 0xFF;
                        sweep_send(s, d, p);
                        continue;
                    }
                    size_t vlen = ln < 13 ? ln : ln == 13 ? 13u + fills[f] : 269u;
                    for (size_t k = 0; k < vlen && p < sizeof d - 8; k++)
                        d[p++] = (uint8_t)('0' + k % 10);
                    sweep_send(s, d, p);
                }
            }
        }
    }
}

/* Edge cases one by one: each with the reason the guard has for it. */
static void sweep_edges(struct sweep *s)
{
    static const char *const hex[] = {
        /* option number overflow past 65535 (RFC 7252 Section 12.2: 16 bits) */
        "52010000a1a2b474696d65e0ffff",     /* 11 + 269 + 65535 */
        "40010001e0fef2e00000",             /* 65535, then +269 */
        "40010001e0fef210",                 /* 65535, then +1 */
        "40010001e0fef2",                   /* 65535 exactly: no fault */
        "40010001d0ffd0ffd0ffe0fd00",       /* 3 x 268, then 65037 */
        /* token length 9..15 (RFC 7252 Section 3) */
        "4901000101020304050607080900",
        "4a010001010203040506070809000a",
        "4f010001010203040506070809000a0b0c0d0e0f",
        "4f01",
        /* payload marker with nothing after it (RFC 7252 Section 3) */
        "40010001ff",
        "52010001a1a2b474696d65ff",
        /* nibble 15 (reserved) */
        "40010001f0", "400100010f", "40010001bf", "40010001fe",
        /* extended delta/length cut short */
        "40010001d0", "40010001e0", "40010001e000", "400100010d", "400100010e00", "40010001dd01",
        /* a value longer than the datagram */
        "40010001b5aa", "400100010eff", "400100010dff41",
        /* version 0, 2, 3 */
        "01010001", "81010001", "c1010001",
        /* code classes 1, 6, 7 and methods 0.08, 0.31 */
        "40200001", "40c00001", "40e00001", "40080001", "401f0001",
        /* empty message with data, NON empty, RST with a code, ACK request */
        "400000010102", "41000001aa", "50000001", "70450001", "60010001",
        /* known options with lengths outside their range, repeated */
        "40010001c3010203",                 /* Content-Format, 3 bytes */
        "4002000130",                       /* Uri-Host, empty */
        "40020001d40e01020304",             /* Block1, 4 bytes */
        "40020001d10e010100",               /* Block1 twice */
        "40020001d10e0f",                   /* Block1 SZX 7 */
        "40020001d30efffff6",               /* Block1 NUM 2^20-1, 1 KiB */
        "40010001d10a0f",                   /* Block2 SZX 7 */
        "40020001dd2f000102030405060708090a0b0c0d", /* Size1, 13 bytes */
        "40020001d5080000000000",           /* EDHOC (21), 5 bytes */
        "40010001c000",                     /* Content-Format twice */
        "40010001d1ef00",                   /* Echo (252), 1 byte: no fault */
        "40010001d0ef",                     /* Echo, empty */
        "40010001920900",                   /* OSCORE, 2 bytes: no fault */
        /* shortest runts */
        "", "40", "4001", "400100",
    };
    uint8_t d[128];
    for (size_t i = 0; i < sizeof hex / sizeof hex[0]; i++) {
        long n = hex_decode_local(hex[i], d, sizeof d);
        assert_true(n >= 0);
        sweep_send(s, d, (size_t)n);
    }
    /* Datagrams above the 1472-byte limit, up to the largest UDP payload. */
    static uint8_t big[65507];
    memset(big, 0x41, sizeof big);
    big[0] = 0x50, big[1] = C_POST, big[2] = 0, big[3] = 1, big[4] = 0xFF;
    static const size_t sizes[] = {1473, 1500, 2048, 9000, 65507};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        sweep_send(s, big, sizes[i]);
}

/* NON GET /time with one fault, then the same request without it from the
 * same port: the responder reads in order, so if the faulty one had been
 * answered its answer would come first. RFC 7252 Section 4.3: "Rejecting
 * a Non-confirmable message MAY involve sending a matching Reset message,
 * and apart from that the message is silently ignored." */
struct probe {
    const char *reason; /* the guard's name for it */
    const char *hex;    /* after the 4-byte header and the 2-byte token */
};

static void probe_refused(struct net_proc *r, const struct probe *pr, unsigned k)
{
    int fd = udp_open(NULL);
    uint8_t d[2048], resp[1500];
    size_t p = 0;
    bool long_tkl = !strcmp(pr->reason, "token length");
    d[p++] = long_tkl ? 0x59 : 0x52;
    d[p++] = !strcmp(pr->reason, "unknown method") ? CODE(0, 8) : C_GET;
    d[p++] = 0xE0, d[p++] = (uint8_t)k;
    d[p++] = 0xE0, d[p++] = (uint8_t)k;
    for (int i = 0; long_tkl && i < 7; i++)
        d[p++] = 0xEE;
    if (!strcmp(pr->reason, "version"))
        d[0] = (uint8_t)(0x80 | (d[0] & 0x3F));
    long n = hex_decode_local(pr->hex, d + p, sizeof d - p);
    assert_true(n >= 0);
    p += (size_t)n;
    if (!strcmp(pr->reason, "too long")) {
        memset(d + p, 0x41, 1473 - p);
        p = 1473;
    }
    send_to(fd, r->port, d, p);
    /* the control: the same GET without the fault, token C0 k;
     * answered 4.01 (the resources need OSCORE unless the responder
     * runs with --allow-unprotected) */
    uint8_t c[32], tok[2] = {0xC0, (uint8_t)k};
    struct opt o[] = {{O_URI_PATH, (const uint8_t *)"time", 4}};
    size_t cl = coap_build(c, sizeof c, T_NON, C_GET, (uint16_t)(0xC000 + k), tok, 2, o, 1,
                           NULL, 0);
    send_to(fd, r->port, c, cl);
    struct coap_view v;
    for (int resent = 0;;) {
        long got = recv_wait(fd, resp, sizeof resp, answer_ms());
        if (got < 0 && resent++ < 3) {
            send_to(fd, r->port, c, cl); /* lost on a loaded host: again */
            continue;
        }
        if (got < 0)
            fail_msg("probe %s: the control request got no answer", pr->reason);
        /* A Reset is the one answer 4.3 allows for the faulty one. */
        if (got == 4 && resp[0] >> 4 == (4 | T_RST) && resp[1] == 0)
            continue;
        if (!coap_parse(resp, (size_t)got, &v))
            fail_msg("probe %s: unparsable answer", pr->reason);
        break;
    }
    if (v.tkl != 2 || v.tok[0] != 0xC0 || v.tok[1] != (uint8_t)k)
        fail_msg("probe %s: the malformed request was answered (%s, token %02x%02x)",
                 pr->reason, code_str(v.code), v.tok[0], v.tok[1]);
    close(fd);
}

static void test_malformed_sweep(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "sweep", "-v");
    char pcap[300];
    net_path(pcap, sizeof pcap, "sweep-capture.pcap");
    /* Valid datagrams to mutate: a real exchange with this responder,
     * captured (message_1 in A.2 framing, message_3, an OSCORE request on
     * a context it holds), then a Block1 block and a ping built here. */
    char *out = NULL;
    int rc = net_cli_run(&out, sanitized() ? 120 : 30, false,
                         "initiator coap://127.0.0.1:%u --request \"GET /time\" --pcap %s", r.port,
                         pcap);
    if (rc != 0)
        fail_msg("capture run failed (%d):\n%s", rc, out);
    free(out);
    struct dgram caps[16];
    size_t n_caps = pcap_requests(pcap, r.port, caps, 16);
    struct dgram valid[8];
    size_t n_valid = 0;
    int have_m1 = 0, have_m3 = 0, have_osc = 0;
    for (size_t i = 0; i < n_caps; i++) {
        struct coap_view v;
        if (!coap_parse(caps[i].d, caps[i].len, &v) || v.code >> 5 != 0 || !v.code)
            continue;
        bool osc = view_opt(&v, O_OSCORE) != NULL;
        bool m1 = !osc && v.pl_len && v.payload[0] == 0xF5; /* A.2: CBOR true, message_1 */
        if ((m1 && !have_m1++) || (osc && !have_osc++) || (!m1 && !osc && !have_m3++))
            valid[n_valid++] = caps[i];
    }
    if (!have_m1 || !have_osc || !have_m3)
        fail_msg("capture %s: message_1 %d, message_3 %d, OSCORE request %d", pcap, have_m1,
                 have_m3, have_osc);
    uint8_t blk[128], ping[4] = {0x40, 0x00, 0x12, 0x34};
    uint32_t s1 = 200;
    size_t blk_len =
        block1_req(blk, sizeof blk, T_CON, 0x1234, 0x77, "echo", 0, true, 2, &s1, filler, 64);
    valid[n_valid++] = (struct dgram){blk, blk_len};
    valid[n_valid++] = (struct dgram){ping, sizeof ping};

    struct sweep s;
    memset(&s, 0, sizeof s);
    s.r = &r;
    s.mid = 0x8000;
    s.barrier_mid = 1;
    for (size_t i = 0; i < SWEEP_PORTS; i++)
        s.fds[i] = udp_open(NULL);
    s.barrier = udp_open(NULL);
    uint64_t t0 = net_now_ms();

    /* Every truncation and every single-byte flip of each valid datagram
     * (all 8 one-bit flips and the complement). */
    static const uint8_t flips_all[] = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xFF};
    const uint8_t *flips = flips_all;
    size_t n_flips = sizeof flips_all;
    size_t mutants = 0;
    for (size_t i = 0; i < n_valid; i++) {
        uint8_t d[1500];
        memcpy(d, valid[i].d, valid[i].len);
        for (size_t cut = 0; cut < valid[i].len; cut++, mutants++)
            sweep_send_mutant(&s, d, cut, cut);
        for (size_t pos = 0; pos < valid[i].len; pos++) {
            for (size_t f = 0; f < n_flips; f++, mutants++) {
                d[pos] ^= flips[f];
                sweep_send_mutant(&s, d, valid[i].len, pos);
                d[pos] ^= flips[f];
            }
        }
    }
    size_t after_mutants = s.sent;
    sweep_nibbles(&s);
    size_t after_nibbles = s.sent;
    sweep_edges(&s);
    size_t after_edges = s.sent;
    /* Seeded random datagrams: half all random, half with a CoAP
     * version-1 header and token length 0..8 so they reach the options. */
    const uint64_t seed = 0x9E3779B97F4A7C15ull;
    rng_state = seed;
    /* The whole sweep takes well under a second even under the
     * sanitizers (most datagrams end in the guard): nothing is shrunk. */
    const size_t n_random = 5000;
    for (size_t i = 0; i < n_random; i++) {
        uint8_t d[300];
        size_t len = (size_t)(rng() % sizeof d);
        for (size_t k = 0; k < len; k++)
            d[k] = (uint8_t)rng();
        if (i % 2 && len >= 1)
            d[0] = (uint8_t)(0x40 | (rng() % 2) << 4 | rng() % 9);
        if (i % 4 == 1 && len >= 2)
            d[1] = (uint8_t)(rng() % 8); /* a method */
        sweep_send(&s, d, len);
    }
    sweep_barrier(&s);
    printf("# sweep: %zu datagrams (%zu truncations/flips of %zu valid ones, %zu option-nibble "
           "cases, %zu edge cases, %zu random, seed %#llx) in %llu ms, %zu barriers\n",
           s.sent, after_mutants, n_valid, after_nibbles - after_mutants,
           after_edges - after_nibbles, n_random, (unsigned long long)seed,
           (unsigned long long)(net_now_ms() - t0), s.barriers);
    fflush(stdout);
    assert_int_equal(mutants, after_mutants);
    assert_alive(&r, "the malformed-datagram sweep");

    /* Each kind of fault refused before anything answers it. */
    static const struct probe probes[] = {
        {"token length", "b474696d65"},
        {"truncated", "b574696d65"},                     /* Uri-Path 5, 4 bytes */
        {"option format", "b474696d650f"},               /* length nibble 15 */
        {"option number", "b474696d65e0ffff"},           /* past 65535 */
        {"empty payload", "b474696d65ff"},               /* marker, no payload */
        {"option length", "b474696d6513000000"},         /* Content-Format 3 bytes */
        {"option repeated", "b474696d651000"},           /* Content-Format twice */
        /* A Block option's SZX 7 or NUM in a request is the engine's to
         * answer (4.00 / 4.13, RFC 7959 Sections 2.2 and 2.9.3). */
        {"unknown method", "b474696d65"},                /* 0.08 */
        {"version", "b474696d65"},                       /* version 2 */
        {"too long", "b474696d65ff"},                    /* 1473 bytes */
    };
    for (unsigned k = 0; k < sizeof probes / sizeof probes[0]; k++)
        probe_refused(&r, &probes[k], k);

    for (size_t i = 0; i < SWEEP_PORTS; i++)
        close(s.fds[i]);
    close(s.barrier);
    finish(&r, "the malformed-datagram sweep");
    for (size_t i = 0; i < n_caps; i++)
        free(caps[i].d);

    /* The guard's counters, if the responder logs them at exit
     * ("datagrams refused before libcoap: 3 token length, ..."). */
    char *log = net_read_file(r.log);
    const char *line = log ? strstr(log, "datagrams refused before libcoap:") : NULL;
    if (!line) {
        printf("# the responder does not log the guard's counters at exit: by-reason refusal "
               "shown by the probes above only\n");
    } else {
        static const char *const reasons[] = {
            "token length",  "truncated",      "option format", "option number",
            "empty payload", "option length",  "option repeated",
            "unknown method", "version",       "too long",
            "too short",     "reserved code class", "type and code", "empty message with data"};
        const char *eol = strchr(line, '\n');
        size_t ll = eol ? (size_t)(eol - line) : strlen(line);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)ll, line);
        printf("# %s\n", buf);
        for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
            /* "N reason" with N > 0 */
            const char *at = strstr(buf, reasons[i]);
            long count = 0;
            if (at && at - buf >= 2) {
                const char *q = at - 2;
                while (q > buf && q[-1] >= '0' && q[-1] <= '9')
                    q--;
                count = strtol(q, NULL, 10);
            }
            if (count <= 0)
                fail_msg("the sweep sent datagrams refused for \"%s\", the counters say: %s",
                         reasons[i], buf);
        }
    }
    free(log);
}

/* =====================================================================
 * 5. What the RFCs ask for some malformed requests
 * =================================================================== */

/* RFC 7252 Section 4.2: "A recipient MUST either (a) acknowledge a
 * Confirmable message with an Acknowledgement message or (b) reject the
 * message if the recipient lacks context to process the message properly,
 * including situations where the message ... has a message format error.
 * Rejecting a Confirmable message is effected by sending a matching Reset
 * message". A CON whose header (version, type, MID) is readable but whose
 * rest is malformed gets an RST with its Message ID. */
static void test_con_format_error_reset(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "rst", "");
    static const struct {
        const char *what, *hex;
    } cases[] = {
        {"token length 9", "49010a0101020304050607080900"},
        {"option length nibble 15", "41010a0201b474696d650f"},
        {"payload marker with nothing after it", "41010a0301b474696d65ff"},
        {"option number past 65535", "41010a0401b474696d65e0ffff"},
        {"option value past the end", "41010a0501b574696d65"},
    };
    char report[2048] = "";
    size_t bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int fd = udp_open(NULL);
        uint8_t d[64], resp[256];
        long n = hex_decode_local(cases[i].hex, d, sizeof d);
        assert_true(n >= 4);
        /* Sent twice at most (a retransmission is rejected alike). */
        long got = -1;
        for (int attempt = 0; attempt < 2 && got < 0; attempt++) {
            send_to(fd, r.port, d, (size_t)n);
            got = recv_wait(fd, resp, sizeof resp, answer_ms());
        }
        if (got != 4 || resp[0] >> 4 != (4 | T_RST) || resp[1] != 0 || resp[2] != d[2] ||
            resp[3] != d[3]) {
            char h[80] = "nothing";
            if (got > 0)
                hexdump(h, sizeof h, resp, (size_t)got < 32 ? (size_t)got : 32);
            size_t l = strlen(report);
            snprintf(report + l, sizeof report - l,
                     "\n  CON with %s (%s): expected RST %02x%02x%02x%02x, got %s",
                     cases[i].what, cases[i].hex, 0x70, 0, d[2], d[3], h);
            bad++;
        }
        close(fd);
        assert_alive(&r, cases[i].what);
    }
    if (bad)
        fail_msg("%zu of %zu malformed CON requests not rejected with a Reset:%s", bad,
                 sizeof cases / sizeof cases[0], report);
    finish(&r, "malformed CON requests");
}

/* RFC 7959 Section 2.2: "The value 7 for SZX (which would indicate a block
 * size of 2048) is reserved, i.e., MUST NOT be sent and MUST lead to a
 * 4.00 Bad Request response code upon reception in a request." */
static void test_block_szx7_bad_request(void **state)
{
    (void)state;
    struct net_proc r;
    start(&r, "szx7", "--allow-unprotected");
    uint8_t req[1500], resp[1500];
    struct coap_view v;
    int fd = udp_open(NULL);
    size_t n = block1_req(req, sizeof req, T_CON, 0xB001, 0xB1, "echo", 0, true, 7, NULL, filler,
                          1024);
    expect_code(fd, r.port, req, n, resp, sizeof resp, C_BAD_REQUEST, &v, "Block1 SZX 7");
    uint8_t b2[1] = {0x07}, tok = 0xB2;
    struct opt o[] = {{O_URI_PATH, (const uint8_t *)"time", 4}, {O_BLOCK2, b2, 1}};
    n = coap_build(req, sizeof req, T_CON, C_GET, 0xB002, &tok, 1, o, 2, NULL, 0);
    expect_code(fd, r.port, req, n, resp, sizeof resp, C_BAD_REQUEST, &v, "Block2 SZX 7");
    close(fd);
    finish(&r, "SZX 7");
}

int main(void)
{
    init_filler();
    /* A process start of the sanitized responder holds many descriptors
     * for a moment; the flood keeps at most FLOOD_BATCH + a few open. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        printf("# open file limit %llu (the flood keeps %d sockets open at most)\n",
               (unsigned long long)rl.rlim_cur, FLOOD_BATCH);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_libcoap_crash_pair, net_test_teardown),
        cmocka_unit_test_teardown(test_size1_huge, net_test_teardown),
        cmocka_unit_test_teardown(test_body_past_max_body, net_test_teardown),
        cmocka_unit_test_teardown(test_max_body_above_default, net_test_teardown),
        cmocka_unit_test_teardown(test_far_block_number, net_test_teardown),
        cmocka_unit_test_teardown(test_out_of_order, net_test_teardown),
        cmocka_unit_test_teardown(test_duplicate_blocks, net_test_teardown),
        cmocka_unit_test_teardown(test_abandoned_transfer, net_test_teardown),
        cmocka_unit_test_teardown(test_many_sources, net_test_teardown),
        cmocka_unit_test_teardown(test_malformed_sweep, net_test_teardown),
        cmocka_unit_test_teardown(test_con_format_error_reset, net_test_teardown),
        cmocka_unit_test_teardown(test_block_szx7_bad_request, net_test_teardown),
    };
    return cmocka_run_group_tests_name("cli_abuse", tests, group_setup, net_group_teardown);
}
