/*
 * OSCORE (RFC 8613) replay protection and sequence numbers: the replay
 * window (Section 7.4), the sequence-number limit, persistence of the mark
 * across a crash at any point and reservations shared by several users
 * (Appendix B.1.1), Echo recovery of the window (Appendix B.1.2).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/oscore.h"
#include "vectors.h"

#include "oscore_test_common.h"

/* ---- replay ---- */
static void test_replay_rejected(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    uint8_t req[BUF], preq[8][BUF], out[BUF], err[BUF];
    long plen[8];
    size_t req_len = sample_request(req, 3);
    struct oscore_binding b;
    for (int i = 0; i < 8; i++) {
        plen[i] = oscore_protect_request(&cli, req, req_len, preq[i], BUF, &b);
        assert_true(plen[i] > 0);
    }
    for (int i = 0; i < 8; i++)
        assert_true(oscore_unprotect_request(&srv, preq[i], (size_t)plen[i], out, sizeof out, &b) >
                    0);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(
            oscore_unprotect_request(&srv, preq[i], (size_t)plen[i], out, sizeof out, &b),
            OSCORE_ERR_REPLAY);
    }
    /* 4.01 "Replay detected", ACK to the CON, Max-Age 0 */
    long e = oscore_error_response(OSCORE_ERR_REPLAY, preq[0], (size_t)plen[0], err, sizeof err);
    static const uint8_t want[] = {0x62, 0x81, 0x12, 0x34, 0xa1, 0xb2, 0xd0, 0x01,
                                   0xff, 'R',  'e',  'p',  'l',  'a',  'y',  ' ',
                                   'd',  'e',  't',  'e',  'c',  't',  'e',  'd'};
    assert_int_equal(e, sizeof want);
    assert_memory_equal(err, want, sizeof want);
}

/* Section 8.2 step 6: the window moves only after a request decrypted. A
 * forgery with a far-ahead Partial IV, or a tampered copy of a real
 * request, must leave it where it was. */
static void test_failed_unprotect_keeps_window(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    uint8_t req[BUF], preq[BUF], bad[BUF], out[BUF];
    size_t req_len = sample_request(req, 4);
    struct oscore_binding cb, sb;
    long n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &cb);
    assert_true(n > 0);

    /* CON POST, token a1b2, OSCORE {PIV 1000, kid 01}, 12 bytes of noise */
    static const uint8_t forged[] = {0x42, 0x02, 0x12, 0x34, 0xa1, 0xb2, 0x94, 0x0a,
                                     0x03, 0xe8, 0x01, 0xff, 1,    2,    3,    4,
                                     5,    6,    7,    8,    9,    10,   11,   12};
    assert_int_equal(oscore_unprotect_request(&srv, forged, sizeof forged, out, sizeof out, &sb),
                     OSCORE_ERR_DECRYPT);
    memcpy(bad, preq, (size_t)n);
    bad[n - 1] ^= 0x01; /* last tag byte */
    assert_int_equal(oscore_unprotect_request(&srv, bad, (size_t)n, out, sizeof out, &sb),
                     OSCORE_ERR_DECRYPT);
    /* Sequence number 0 is still fresh: neither failure touched the window. */
    assert_int_equal(oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb),
                     (long)req_len);
    assert_int_equal(oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb),
                     OSCORE_ERR_REPLAY);
}

/* A stored mark beyond 2^40 (a damaged store) is refused, and a caller
 * that ignores the refusal still cannot send from sequence number 0 again,
 * which would repeat nonces used before the restart. */
static void test_resume_past_limit_leaves_context_exhausted(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    assert_int_equal(oscore_context_resume(&cli, OSCORE_SSN_MAX + 2), OSCORE_ERR_SSN_EXHAUSTED);
    assert_true(oscore_context_ssn(&cli) > OSCORE_SSN_MAX);
    assert_true(oscore_context_needs_echo(&cli));
    uint8_t req[BUF], out[BUF];
    size_t req_len = sample_request(req, 0);
    struct oscore_binding b;
    assert_int_equal(oscore_protect_request(&cli, req, req_len, out, sizeof out, &b),
                     OSCORE_ERR_SSN_EXHAUSTED);
    /* the limit itself is still a valid mark */
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    assert_int_equal(oscore_context_resume(&cli, OSCORE_SSN_MAX), 0);
    assert_true(oscore_protect_request(&cli, req, req_len, out, sizeof out, &b) > 0);
    assert_int_equal(oscore_protect_request(&cli, req, req_len, out, sizeof out, &b),
                     OSCORE_ERR_SSN_EXHAUSTED);
}

/* Deliver requests with the given sequence numbers, compare to a model:
 * accepted iff never seen and within 32 of the highest seen so far. */
static void test_window_slides(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    enum { N = 120 };
    static uint8_t preq[N][96];
    long plen[N];
    uint8_t req[BUF], out[BUF];
    size_t req_len = sample_request(req, 0);
    struct oscore_binding b;
    for (int i = 0; i < N; i++) {
        plen[i] = oscore_protect_request(&cli, req, req_len, preq[i], sizeof preq[i], &b);
        assert_true(plen[i] > 0);
    }
    static const int order[] = {5,  3,   3,  10, 7,   40, 8,  9,  9,   39, 41,  41, 0,
                                72, 40,  41, 42, 71,  73, 70, 50, 45,  44, 100, 68, 69,
                                99, 101, 67, 1,  119, 88, 87, 86, 119, 90, 118, 0,  117};
    bool seen[N] = {false};
    int top = -1;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        int s = order[k];
        bool expect = !seen[s] && (top < 0 || s > top || top - s < 32);
        long m = oscore_unprotect_request(&srv, preq[s], (size_t)plen[s], out, sizeof out, &b);
        if (expect) {
            if (m <= 0)
                fail_msg("sequence number %d (step %zu) refused: %ld", s, k, m);
            seen[s] = true;
            if (s > top)
                top = s;
        } else if (m != OSCORE_ERR_REPLAY) {
            fail_msg("sequence number %d (step %zu) not refused as replay: %ld", s, k, m);
        }
    }

    /* a window of 4 */
    static const uint8_t ms[16] = {7};
    static const uint8_t a[1] = {0xa}, bb[1] = {0xb};
    struct oscore_params p = {.master_secret = ms,
                              .master_secret_len = 16,
                              .sender_id = a,
                              .sender_id_len = 1,
                              .recipient_id = bb,
                              .recipient_id_len = 1,
                              .replay_window = 4};
    assert_int_equal(oscore_context_init(&cli, test_backend(), &p), 0);
    p.sender_id = bb;
    p.recipient_id = a;
    assert_int_equal(oscore_context_init(&srv, test_backend(), &p), 0);
    for (int i = 0; i < 10; i++)
        plen[i] = oscore_protect_request(&cli, req, req_len, preq[i], sizeof preq[i], &b);
    assert_true(oscore_unprotect_request(&srv, preq[9], (size_t)plen[9], out, sizeof out, &b) > 0);
    assert_true(oscore_unprotect_request(&srv, preq[6], (size_t)plen[6], out, sizeof out, &b) > 0);
    assert_int_equal(oscore_unprotect_request(&srv, preq[5], (size_t)plen[5], out, sizeof out, &b),
                     OSCORE_ERR_REPLAY);
}

/* ---- sequence number limit ---- */
static void test_ssn_limit(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    uint8_t req[BUF], preq[BUF], out[BUF];
    size_t req_len = sample_request(req, 0);
    struct oscore_binding b, sb;
    assert_int_equal(oscore_context_set_ssn(&cli, OSCORE_SSN_MAX + 1), OSCORE_ERR_SSN_EXHAUSTED);
    assert_int_equal(oscore_context_set_ssn(&cli, OSCORE_SSN_MAX - 1), 0);
    assert_int_equal(oscore_context_set_ssn(&cli, 5), OSCORE_ERR_INVALID); /* never backwards */
    long n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b);
    assert_true(n > 0);
    n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b);
    assert_true(n > 0);
    struct oscore_option opt;
    assert_int_equal(oscore_message_option(preq, (size_t)n, &opt), 0);
    assert_int_equal(opt.piv_len, 5);
    assert_memory_equal(opt.piv, "\xff\xff\xff\xff\xff", 5);
    assert_true(oscore_unprotect_request(&srv, preq, (size_t)n, out, sizeof out, &sb) > 0);
    assert_int_equal(oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b),
                     OSCORE_ERR_SSN_EXHAUSTED);
    assert_int_equal(oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b),
                     OSCORE_ERR_SSN_EXHAUSTED);
    /* the server's responses with Partial IV are bound by the same limit,
     * those reusing the request nonce are not */
    assert_int_equal(oscore_context_set_ssn(&srv, OSCORE_SSN_MAX), 0);
    uint8_t resp[BUF];
    size_t resp_len = sample_response(resp, (const uint8_t *)"x", 1, false, 0);
    struct oscore_binding sb2 = sb;
    assert_true(oscore_protect_response(&srv, &sb2, resp, resp_len, true, preq, sizeof preq) > 0);
    sb2 = sb;
    assert_int_equal(oscore_protect_response(&srv, &sb2, resp, resp_len, true, preq, sizeof preq),
                     OSCORE_ERR_SSN_EXHAUSTED);
    assert_true(oscore_protect_response(&srv, &sb2, resp, resp_len, false, preq, sizeof preq) > 0);
    uint8_t piv[OSCORE_MAX_PIV];
    assert_int_equal(oscore_piv_encode(OSCORE_SSN_MAX + 1, piv), 0);
}

/* ---- persistence ---- */
struct flash {
    uint64_t mark;
    unsigned writes;
    bool fail;
};

static int store_mark(void *user, uint64_t mark)
{
    struct flash *f = user;
    if (f->fail)
        return -1;
    f->mark = mark;
    f->writes++;
    return 0;
}

static void test_persistence_crash_anywhere(void **state)
{
    (void)state;
    enum { K = 5 };
    uint8_t req[BUF], preq[BUF];
    size_t req_len = sample_request(req, 0);
    struct oscore_binding b;
    /* Crash after every number of sent messages over three store periods,
     * then restart from what was stored. */
    for (unsigned crash_after = 0; crash_after <= 3 * K + 1; crash_after++) {
        struct oscore_context cli, srv;
        make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
        struct flash f = {0};
        assert_int_equal(oscore_context_set_persistence(&cli, store_mark, &f, K), 0);
        long max_used = -1;
        for (unsigned i = 0; i < crash_after; i++) {
            uint64_t ssn = oscore_context_ssn(&cli);
            assert_true(oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b) > 0);
            max_used = (long)ssn;
        }
        /* stores happen once per K messages */
        assert_int_equal(f.writes, (crash_after + K - 1) / K);
        oscore_context_wipe(&cli); /* the crash */

        struct oscore_context again, srv2;
        make_pair(&again, &srv2, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
        assert_int_equal(oscore_context_set_persistence(&again, store_mark, &f, K), 0);
        assert_int_equal(oscore_context_resume(&again, f.mark), 0);
        long n = oscore_protect_request(&again, req, req_len, preq, sizeof preq, &b);
        assert_true(n > 0);
        struct oscore_option opt;
        assert_int_equal(oscore_message_option(preq, (size_t)n, &opt), 0);
        uint64_t next = 0;
        for (size_t i = 0; i < opt.piv_len; i++)
            next = next << 8 | opt.piv[i];
        if ((long)next <= max_used)
            fail_msg("crash after %u: reused sequence number %llu (max used %ld)", crash_after,
                     (unsigned long long)next, max_used);
        /* the restart stored a new mark before using anything */
        assert_true(f.mark > next);
    }

    /* a failing store stops the message and consumes nothing */
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    struct flash f = {.fail = true};
    assert_int_equal(oscore_context_set_persistence(&cli, store_mark, &f, K), 0);
    assert_int_equal(oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b),
                     OSCORE_ERR_PERSIST);
    assert_int_equal(oscore_context_ssn(&cli), 0);
    f.fail = false;
    assert_true(oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &b) > 0);
    assert_int_equal(f.mark, K);
    assert_int_equal(oscore_context_set_persistence(&cli, store_mark, &f, 0), OSCORE_ERR_INVALID);
}

/* Two users of one context (two runs of a client): a shared counter
 * that hands out disjoint ranges, the way the CLI's locked file does. */
struct shared_counter {
    uint64_t next_free;
    unsigned calls;
    bool fail, go_back;
};

static int reserve_range(void *user, uint64_t next, uint64_t count, uint64_t *first)
{
    struct shared_counter *sc = user;
    if (sc->fail)
        return -1;
    sc->calls++;
    uint64_t start = sc->next_free > next ? sc->next_free : next;
    *first = sc->go_back ? next - 1 : start;
    sc->next_free = start + count;
    return 0;
}

static uint64_t piv_of(const uint8_t *msg, size_t len)
{
    struct oscore_option opt;
    assert_int_equal(oscore_message_option(msg, len, &opt), 0);
    uint64_t v = 0;
    for (size_t i = 0; i < opt.piv_len; i++)
        v = v << 8 | opt.piv[i];
    return v;
}

/* RFC 8613 Section 7.2: a Sender Sequence Number is never used twice
 * for one Sender Context, also when two processes share it: the second
 * one's reservations start above the first one's, and the first one
 * jumps past the second's when its own range runs out. */
static void test_reservation_shared_context(void **state)
{
    (void)state;
    uint8_t req[BUF], p1[BUF], p2[BUF];
    size_t req_len = sample_request(req, 0);
    struct oscore_binding b;
    struct oscore_context a, a_srv, c, c_srv;
    make_pair(&a, &a_srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    make_pair(&c, &c_srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    struct shared_counter sc = {0};
    assert_int_equal(oscore_context_set_reservation(&a, reserve_range, &sc, 3), 0);
    assert_int_equal(oscore_context_set_reservation(&c, reserve_range, &sc, 3), 0);
    uint64_t used[12];
    size_t n_used = 0;
    for (int round = 0; round < 4; round++) {
        for (int k = 0; k < 2; k++) {
            long n = oscore_protect_request(&a, req, req_len, p1, sizeof p1, &b);
            assert_true(n > 0);
            used[n_used++] = piv_of(p1, (size_t)n);
        }
        long n = oscore_protect_request(&c, req, req_len, p2, sizeof p2, &b);
        assert_true(n > 0);
        used[n_used++] = piv_of(p2, (size_t)n);
    }
    for (size_t i = 0; i < n_used; i++)
        for (size_t j = i + 1; j < n_used; j++)
            if (used[i] == used[j])
                fail_msg("sequence number %llu used twice", (unsigned long long)used[i]);
    /* a: 0,1 then 2 is its own, then a new range above c's: 6,7 ... */
    assert_int_equal(used[0], 0);
    assert_int_equal(used[1], 1);
    assert_int_equal(used[2], 3); /* c's first range starts above a's */
    assert_int_equal(used[3], 2);
    assert_int_equal(used[4], 6); /* a's second range starts above c's */
    /* Reservation failures stop the message and consume nothing. */
    uint64_t before = oscore_context_ssn(&a);
    sc.fail = true;
    while (oscore_context_ssn(&a) == before && before < 100) {
        long n = oscore_protect_request(&a, req, req_len, p1, sizeof p1, &b);
        if (n == OSCORE_ERR_PERSIST)
            break;
        assert_true(n > 0);
        before = oscore_context_ssn(&a);
    }
    assert_int_equal(oscore_protect_request(&a, req, req_len, p1, sizeof p1, &b),
                     OSCORE_ERR_PERSIST);
    assert_int_equal(oscore_context_ssn(&a), before);
    /* A reservation that would go back is refused as a failure. */
    sc.fail = false;
    sc.go_back = true;
    assert_int_equal(oscore_protect_request(&a, req, req_len, p1, sizeof p1, &b),
                     OSCORE_ERR_PERSIST);
    assert_int_equal(oscore_context_set_reservation(&a, reserve_range, &sc, 0), OSCORE_ERR_INVALID);
    oscore_context_wipe(&a);
    oscore_context_wipe(&c);
    oscore_context_wipe(&a_srv);
    oscore_context_wipe(&c_srv);
}

/* ---- Echo recovery (Appendix B.1.2) ---- */
static size_t add_echo(const uint8_t *req, size_t req_len, const uint8_t *echo, size_t echo_len,
                       uint8_t *out)
{
    struct coap_msg m;
    assert_int_equal(edhoc_coap_msg_parse(req, req_len, &m), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_ECHO, echo, echo_len), 0);
    long n = edhoc_coap_msg_encode(&m, out, BUF);
    assert_true(n > 0);
    return (size_t)n;
}

static void test_echo_recovery(void **state)
{
    (void)state;
    struct oscore_context cli, srv;
    make_pair(&cli, &srv, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    struct flash sf = {0};
    assert_int_equal(oscore_context_set_persistence(&srv, store_mark, &sf, 10), 0);
    uint8_t req[BUF], old[4][BUF], preq[BUF], out[BUF], presp[BUF], echoreq[BUF];
    long oldlen[4];
    size_t req_len = sample_request(req, 2);
    struct oscore_binding cb, sb;
    for (int i = 0; i < 4; i++) {
        oldlen[i] = oscore_protect_request(&cli, req, req_len, old[i], BUF, &cb);
        assert_true(
            oscore_unprotect_request(&srv, old[i], (size_t)oldlen[i], out, sizeof out, &sb) > 0);
        uint8_t resp[BUF];
        size_t resp_len = sample_response(resp, (const uint8_t *)"ok", 2, false, 0);
        assert_true(oscore_protect_response(&srv, &sb, resp, resp_len, true, presp, sizeof presp) >
                    0);
    }
    assert_int_equal(oscore_context_ssn(&srv), 4);
    assert_false(oscore_context_needs_echo(&srv));

    /* server restart */
    struct oscore_context srv2, unused;
    make_pair(&unused, &srv2, EDHOC_COSE_AES_CCM_16_64_128, EDHOC_COSE_SHA256);
    assert_int_equal(oscore_context_set_persistence(&srv2, store_mark, &sf, 10), 0);
    assert_int_equal(oscore_context_resume(&srv2, sf.mark), 0);
    assert_true(oscore_context_needs_echo(&srv2));

    /* an old request is not processed: Echo first */
    assert_int_equal(
        oscore_unprotect_request(&srv2, old[3], (size_t)oldlen[3], out, sizeof out, &sb),
        OSCORE_ERR_ECHO_REQUIRED);
    /* a forged one is still a decryption failure, not a challenge */
    memcpy(preq, old[3], (size_t)oldlen[3]);
    preq[oldlen[3] - 1] ^= 1;
    assert_int_equal(oscore_unprotect_request(&srv2, preq, (size_t)oldlen[3], out, sizeof out, &sb),
                     OSCORE_ERR_DECRYPT);

    /* new request -> 4.01 with Echo, protected with the server's Partial IV */
    long n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &cb);
    assert_int_equal(oscore_unprotect_request(&srv2, preq, (size_t)n, out, sizeof out, &sb),
                     OSCORE_ERR_ECHO_REQUIRED);
    long k = oscore_protect_echo_challenge(&srv2, &sb, preq, (size_t)n, presp, sizeof presp);
    assert_true(k > 0);
    struct oscore_option opt;
    assert_int_equal(oscore_message_option(presp, (size_t)k, &opt), 0);
    assert_true(opt.piv_len > 0);
    assert_true(oscore_context_ssn(&srv2) > 4); /* resumed above every used one */
    long j = oscore_unprotect_response(&cli, &cb, presp, (size_t)k, out, sizeof out);
    assert_true(j > 0);
    struct coap_msg inner;
    assert_int_equal(edhoc_coap_msg_parse(out, (size_t)j, &inner), 0);
    assert_int_equal(inner.code, COAP_CODE_UNAUTHORIZED);
    assert_int_equal(inner.option_count, 1);
    assert_int_equal(inner.options[0].number, COAP_OPT_ECHO);
    assert_null(inner.payload);
    uint8_t echo[OSCORE_ECHO_LEN];
    assert_int_equal(inner.options[0].len, OSCORE_ECHO_LEN);
    memcpy(echo, inner.options[0].value, OSCORE_ECHO_LEN);

    /* a retry with a wrong Echo value is challenged again */
    uint8_t wrong[OSCORE_ECHO_LEN];
    memcpy(wrong, echo, sizeof wrong);
    wrong[0] ^= 1;
    size_t elen = add_echo(req, req_len, wrong, sizeof wrong, echoreq);
    n = oscore_protect_request(&cli, echoreq, elen, preq, sizeof preq, &cb);
    assert_int_equal(oscore_unprotect_request(&srv2, preq, (size_t)n, out, sizeof out, &sb),
                     OSCORE_ERR_ECHO_REQUIRED);

    /* the retry carrying the Echo value is accepted */
    elen = add_echo(req, req_len, echo, sizeof echo, echoreq);
    n = oscore_protect_request(&cli, echoreq, elen, preq, sizeof preq, &cb);
    assert_int_equal(oscore_unprotect_request(&srv2, preq, (size_t)n, out, sizeof out, &sb),
                     (long)elen);
    assert_memory_equal(out, echoreq, elen);
    assert_false(oscore_context_needs_echo(&srv2));

    /* replays from before the restart, and of the challenged ones, are refused */
    for (int i = 0; i < 4; i++)
        assert_int_equal(
            oscore_unprotect_request(&srv2, old[i], (size_t)oldlen[i], out, sizeof out, &sb),
            OSCORE_ERR_REPLAY);
    assert_int_equal(oscore_unprotect_request(&srv2, preq, (size_t)n, out, sizeof out, &sb),
                     OSCORE_ERR_REPLAY);
    /* and normal traffic continues */
    n = oscore_protect_request(&cli, req, req_len, preq, sizeof preq, &cb);
    assert_int_equal(oscore_unprotect_request(&srv2, preq, (size_t)n, out, sizeof out, &sb),
                     (long)req_len);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_rejected),
        cmocka_unit_test(test_window_slides),
        cmocka_unit_test(test_ssn_limit),
        cmocka_unit_test(test_persistence_crash_anywhere),
        cmocka_unit_test(test_reservation_shared_context),
        cmocka_unit_test(test_echo_recovery),
        cmocka_unit_test(test_failed_unprotect_keeps_window),
        cmocka_unit_test(test_resume_past_limit_leaves_context_exhausted),
    };
    int failed = cmocka_run_group_tests_name("openssl", tests, setup, NULL);
    test_backend = edhoc_crypto_sodium;
    test_backend = edhoc_crypto_auto;
    return failed;
}
