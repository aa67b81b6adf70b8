/* What the tests of hostile datagrams against a real `edhoc-cli responder`
 * share: CoAP messages built and parsed by hand (RFC 7252 Section 3), raw
 * UDP from this process, a responder per test and the checks after each
 * attack (alive, still serving a handshake and an OSCORE request, clean
 * stop on SIGTERM, no sanitizer report in its log). */
#ifndef CLI_ABUSE_TEST_COMMON_H
#define CLI_ABUSE_TEST_COMMON_H

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

#define KiB           1024L
#define MiB           (1024L * 1024L)
#define CODE(c, d)    ((uint8_t)((c) << 5 | (d)))
#define C_GET         CODE(0, 1)
#define C_POST        CODE(0, 2)
#define C_CONTINUE    CODE(2, 31)
#define C_BAD_REQUEST CODE(4, 0)
#define C_INCOMPLETE  CODE(4, 8)
#define C_TOO_LARGE   CODE(4, 13)
#define C_UNAVAILABLE CODE(5, 3)

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
#define FLOOD_BATCH   64

/* The sweep's sender: datagrams go round-robin from a few source ports;
 * every SWEEP_WINDOW of them a CON GET /time from a port of its own is a
 * barrier: the responder reads one socket in order, so the ACK to it
 * means everything before was read, and no datagram is lost to a full
 * receive buffer. (Not a CON ping: libcoap 4.3.1 answers only every other
 * ping of a session with the RST of RFC 7252 Section 4.3.) */
#define SWEEP_PORTS  8
#define SWEEP_WINDOW 32

/* The responder under test is the sanitized binary (build-x-asan, or the
 * suite's EDHOC_TEST_SANITIZED=1): slower, and its memory is counted
 * differently. */
static inline bool sanitized(void)
{
    return BUILT_SANITIZED || getenv("EDHOC_TEST_SANITIZED");
}

/* ---------------------------------------------------------------------
 * CoAP messages by hand (RFC 7252 Section 3)
 * ------------------------------------------------------------------- */

enum { T_CON = 0, T_NON = 1, T_ACK = 2, T_RST = 3 };

enum {
    O_OSCORE = 9,
    O_URI_PATH = 11,
    O_CONTENT_FORMAT = 12,
    O_MAX_AGE = 14,
    O_URI_QUERY = 15,
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

static inline size_t put_ext(uint8_t *out, unsigned v, unsigned *nibble)
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
static inline size_t coap_build(uint8_t *out, size_t cap, unsigned type, uint8_t code, uint16_t mid,
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
static inline size_t uint_val(uint32_t v, uint8_t out[4])
{
    size_t n = v > 0xFFFFFF ? 4 : v > 0xFFFF ? 3 : v > 0xFF ? 2 : v ? 1 : 0;
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    return n;
}

/* Block option value (RFC 7959 Section 2.2): NUM << 4 | M << 3 | SZX. */
static inline size_t block_val(uint32_t num, bool more, unsigned szx, uint8_t out[4])
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

static inline bool coap_parse(const uint8_t *d, size_t len, struct coap_view *v)
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

static inline const struct opt *view_opt(const struct coap_view *v, unsigned num)
{
    for (size_t i = 0; i < v->n_opts; i++)
        if (v->opts[i].num == num)
            return &v->opts[i];
    return NULL;
}

static inline bool view_uint(const struct coap_view *v, unsigned num, uint32_t *out)
{
    const struct opt *o = view_opt(v, num);
    if (!o || o->len > 4)
        return false;
    *out = 0;
    for (size_t i = 0; i < o->len; i++)
        *out = *out << 8 | o->val[i];
    return true;
}

static inline const char *code_str(uint8_t code)
{
    static _Thread_local char s[8];
    snprintf(s, sizeof s, "%u.%02u", code >> 5, code & 31);
    return s;
}

static inline void hexdump(char *out, size_t cap, const uint8_t *d, size_t len)
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

static inline int udp_open(uint16_t *port)
{
    uint16_t p = 0;
    int fd = net_silent_socket(&p);
    if (port)
        *port = p;
    return fd;
}

static inline void send_to(int fd, uint16_t port, const uint8_t *m, size_t len)
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
static inline long recv_wait(int fd, uint8_t *buf, size_t cap, unsigned timeout_ms)
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

static inline unsigned answer_ms(void)
{
    return sanitized() ? 2500 : 1000;
}

/* Send a request and wait for its answer (same MID for CON, same token for
 * NON), resending the same bytes as a CoAP retransmission would (RFC 7252
 * Section 4.2) up to 4 times: a loaded host may drop a datagram, and a
 * retransmission is answered like the original. Returns the answer's
 * length, or -1 when none came. */
static inline long exchange(int fd, uint16_t port, const uint8_t *req, size_t len, uint8_t *resp,
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

static inline int group_setup(void **state)
{
    (void)state;
    cli = net_cli();
    printf("# responder binary: %s%s\n", cli, sanitized() ? " (sanitized)" : "");
    return net_make_dir("abuse");
}

/* `responder --listen 127.0.0.1:0 EXTRA`; libcoap writes its own log lines
 * (with -v) to stdout, kept in NAME.out beside NAME.log. */
static inline void start(struct net_proc *p, const char *name, const char *extra)
{
    char args[1024], out[300];
    net_path(out, sizeof out, name);
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 %s >>%s.out", extra ? extra : "", out);
    if (net_responder_start(p, name, args) != 0)
        fail_msg("responder %s did not start", name);
}

/* Alive: the process has not exited (waitpid WNOHANG). */
static inline void assert_alive(struct net_proc *p, const char *after)
{
    int st = 0;
    pid_t r = p->pid ? waitpid(p->pid, &st, WNOHANG) : -1;
    if (r == 0)
        return;
    char *log = net_read_file(p->log);
    if (r == p->pid)
        p->pid = 0;
    fail_msg("the responder died after %s (%s %d); its log:\n%s", after,
             r == -1           ? "not started"
             : WIFSIGNALED(st) ? "signal"
                               : "exit",
             WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), log ? log : "");
}

/* Sanitizer reports fail the test wherever they appear (ASan aborts,
 * UBSan may go on after printing). */
static inline void assert_log_clean(struct net_proc *p)
{
    char *log = net_read_file(p->log);
    static const char *const bad[] = {"ERROR: AddressSanitizer",
                                      "runtime error:", "ERROR: LeakSanitizer",
                                      "ERROR: UndefinedBehaviorSanitizer"};
    for (size_t i = 0; log && i < sizeof bad / sizeof bad[0]; i++) {
        if (strstr(log, bad[i]))
            fail_msg("sanitizer report (%s) in the responder's log %s:\n%s", bad[i], p->log, log);
    }
    free(log);
}

/* The responder still does its job: a full EDHOC handshake (RFC 9528) and
 * an OSCORE-protected request (RFC 8613) on the context it derived. */
static inline void assert_serves(struct net_proc *p, const char *after)
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
static inline void finish(struct net_proc *p, const char *after)
{
    assert_serves(p, after);
    int rc = net_proc_stop(p, SIGTERM, sanitized() ? 30000 : 10000);
    if (rc != 0) {
        char *log = net_read_file(p->log);
        fail_msg("responder exit status %d on SIGTERM after %s:\n%s", rc, after, log ? log : "");
    }
    assert_log_clean(p);
}

/* A Block1 request: POST /PATH, Block1 (num, more, szx), optional Size1,
 * payload. */
static inline size_t block1_req(uint8_t *out, size_t cap, unsigned type, uint16_t mid, uint8_t tok,
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
static inline void expect_code(int fd, uint16_t port, const uint8_t *req, size_t len, uint8_t *resp,
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
        fail_msg("%s: answered %s, expected %s (request %s..., answer %s)", what, code_str(v->code),
                 code_str(code), hex, rh);
    }
}

static inline void expect_block1(const struct coap_view *v, uint32_t num, bool more,
                                 const char *what)
{
    uint32_t b = 0;
    if (!view_uint(v, O_BLOCK1, &b))
        fail_msg("%s: no Block1 option in the answer", what);
    if (b >> 4 != num || ((b & 8) != 0) != more)
        fail_msg("%s: Block1 NUM %u M %u, expected NUM %u M %u", what, b >> 4, (b >> 3) & 1, num,
                 more);
}

static uint8_t filler[1024];

static inline void init_filler(void)
{
    for (size_t i = 0; i < sizeof filler; i++)
        filler[i] = (uint8_t)('a' + i % 26);
}

#endif /* CLI_ABUSE_TEST_COMMON_H */
