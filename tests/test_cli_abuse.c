/*
 * Hostile datagrams against a real `edhoc-cli responder` process on
 * loopback, sent as raw UDP from this process:
 *
 *  1. the two datagrams that crashed libcoap 4.3.1's block-wise code (and
 *     variants: OSCORE option, /.well-known/edhoc, NON);
 *  4. a malformed-datagram sweep (seeded random bytes, every truncation and
 *     single-byte flip of captured valid datagrams, option nibble edge
 *     cases), then per-reason probes showing the guard refused them;
 *  5. what RFC 7252 / RFC 7959 ask for some malformed requests (RST,
 *     4.00), which a silent drop does not give.
 *
 * (2. block-wise bounds: test_cli_abuse_blockwise.c; 3. the flood of
 * sources: test_cli_abuse_flood.c.)
 *
 * After each attack the responder must be alive (waitpid WNOHANG), still
 * complete a handshake and an OSCORE request (`edhoc-cli initiator
 * --request "GET /time"`), stop cleanly on SIGTERM, and its log must hold
 * no sanitizer report (in build-x-asan, $EDHOC_CLI is the sanitized
 * binary).
 */
#include "cli_abuse_test_common.h"

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

static void drain(int fd)
{
    uint8_t b[2048];
    while (recv(fd, b, sizeof b, MSG_DONTWAIT) >= 0 || errno == ECONNREFUSED)
        ;
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
            snprintf(what, sizeof what, "crash pair %s, round %d, second datagram", pairs[i].name,
                     round);
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
    uint32_t magic =
        (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    bool le = magic == 0xa1b2c3d4u || magic == 0xa1b23c4du;
    if (!le && magic != 0xd4c3b2a1u && magic != 0x4d3cb2a1u) {
        free(raw);
        return 0;
    }
#define U32(p)                                                                                     \
    (le ? (uint32_t)(p)[0] | (uint32_t)(p)[1] << 8 | (uint32_t)(p)[2] << 16 |                      \
              (uint32_t)(p)[3] << 24                                                               \
        : (uint32_t)(p)[3] | (uint32_t)(p)[2] << 8 | (uint32_t)(p)[1] << 16 |                      \
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
                    size_t ext =
                        (size_t)((dn == 13) + 2 * (dn == 14) + (ln == 13) + 2 * (ln == 14));
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
        "52010000a1a2b474696d65e0ffff", /* 11 + 269 + 65535 */
        "40010001e0fef2e00000",         /* 65535, then +269 */
        "40010001e0fef210",             /* 65535, then +1 */
        "40010001e0fef2",               /* 65535 exactly: no fault */
        "40010001d0ffd0ffd0ffe0fd00",   /* 3 x 268, then 65037 */
        /* token length 9..15 (RFC 7252 Section 3) */
        "4901000101020304050607080900",
        "4a010001010203040506070809000a",
        "4f010001010203040506070809000a0b0c0d0e0f",
        "4f01",
        /* payload marker with nothing after it (RFC 7252 Section 3) */
        "40010001ff",
        "52010001a1a2b474696d65ff",
        /* nibble 15 (reserved) */
        "40010001f0",
        "400100010f",
        "40010001bf",
        "40010001fe",
        /* extended delta/length cut short */
        "40010001d0",
        "40010001e0",
        "40010001e000",
        "400100010d",
        "400100010e00",
        "40010001dd01",
        /* a value longer than the datagram */
        "40010001b5aa",
        "400100010eff",
        "400100010dff41",
        /* version 0, 2, 3 */
        "01010001",
        "81010001",
        "c1010001",
        /* code classes 1, 6, 7 and methods 0.08, 0.31 */
        "40200001",
        "40c00001",
        "40e00001",
        "40080001",
        "401f0001",
        /* empty message with data, NON empty, RST with a code, ACK request */
        "400000010102",
        "41000001aa",
        "50000001",
        "70450001",
        "60010001",
        /* known options with lengths outside their range, repeated */
        "40010001c3010203",                         /* Content-Format, 3 bytes */
        "4002000130",                               /* Uri-Host, empty */
        "40020001d40e01020304",                     /* Block1, 4 bytes */
        "40020001d10e010100",                       /* Block1 twice */
        "40020001d10e0f",                           /* Block1 SZX 7 */
        "40020001d30efffff6",                       /* Block1 NUM 2^20-1, 1 KiB */
        "40010001d10a0f",                           /* Block2 SZX 7 */
        "40020001dd2f000102030405060708090a0b0c0d", /* Size1, 13 bytes */
        "40020001d5080000000000",                   /* EDHOC (21), 5 bytes */
        "40010001c000",                             /* Content-Format twice */
        "40010001d1ef00",                           /* Echo (252), 1 byte: no fault */
        "40010001d0ef",                             /* Echo, empty */
        "40010001920900",                           /* OSCORE, 2 bytes: no fault */
        /* shortest runts */
        "",
        "40",
        "4001",
        "400100",
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
    size_t cl =
        coap_build(c, sizeof c, T_NON, C_GET, (uint16_t)(0xC000 + k), tok, 2, o, 1, NULL, 0);
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
        fail_msg("probe %s: the malformed request was answered (%s, token %02x%02x)", pr->reason,
                 code_str(v.code), v.tok[0], v.tok[1]);
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
        {"truncated", "b574696d65"},             /* Uri-Path 5, 4 bytes */
        {"option format", "b474696d650f"},       /* length nibble 15 */
        {"option number", "b474696d65e0ffff"},   /* past 65535 */
        {"empty payload", "b474696d65ff"},       /* marker, no payload */
        {"option length", "b474696d6513000000"}, /* Content-Format 3 bytes */
        {"option repeated", "b474696d651000"},   /* Content-Format twice */
        /* A Block option's SZX 7 or NUM in a request is the engine's to
         * answer (4.00 / 4.13, RFC 7959 Sections 2.2 and 2.9.3). */
        {"unknown method", "b474696d65"}, /* 0.08 */
        {"version", "b474696d65"},        /* version 2 */
        {"too long", "b474696d65ff"},     /* 1473 bytes */
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
        static const char *const reasons[] = {"token length",    "truncated",
                                              "option format",   "option number",
                                              "empty payload",   "option length",
                                              "option repeated", "unknown method",
                                              "version",         "too long",
                                              "too short",       "reserved code class",
                                              "type and code",   "empty message with data"};
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
                     "\n  CON with %s (%s): expected RST %02x%02x%02x%02x, got %s", cases[i].what,
                     cases[i].hex, 0x70, 0, d[2], d[3], h);
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
    size_t n =
        block1_req(req, sizeof req, T_CON, 0xB001, 0xB1, "echo", 0, true, 7, NULL, filler, 1024);
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
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_libcoap_crash_pair, net_test_teardown),
        cmocka_unit_test_teardown(test_malformed_sweep, net_test_teardown),
        cmocka_unit_test_teardown(test_con_format_error_reset, net_test_teardown),
        cmocka_unit_test_teardown(test_block_szx7_bad_request, net_test_teardown),
    };
    return cmocka_run_group_tests_name("cli_abuse", tests, group_setup, net_group_teardown);
}
