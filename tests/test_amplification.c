/*
 * The responder's amplification account (edhoc/amplification.h) alone:
 * the budget per endpoint, verification, bounded memory with eviction of
 * the least recently active unverified endpoints first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "edhoc/amplification.h"

static struct edhoc_amp *make(unsigned factor, size_t max)
{
    struct edhoc_amp_config cfg = {.factor = factor,
                                   .max_endpoints = max,
                                   .seed = {0x0123456789abcdefULL, 0xfedcba9876543210ULL}};
    struct edhoc_amp *a = edhoc_amp_new(&cfg);
    assert_non_null(a);
    return a;
}

/* RFC 9175 Section 2.4 item 3: "don't send more than three times the
 * number of bytes received until the peer's address is confirmed", the
 * factor being "the ratio between the size of the request and the total
 * size of the response(s)": the budget is what is left of 3 x everything
 * received. */
static void test_budget(void **state)
{
    (void)state;
    struct edhoc_amp *a = make(3, 0);
    assert_int_equal(edhoc_amp_factor(a), 3);
    /* An endpoint never heard from may be sent nothing. */
    assert_int_equal(edhoc_amp_budget(a, "192.0.2.1:5683"), 0);
    edhoc_amp_received(a, "192.0.2.1:5683", 64);
    assert_int_equal(edhoc_amp_budget(a, "192.0.2.1:5683"), 192);
    edhoc_amp_sent(a, "192.0.2.1:5683", 150);
    assert_int_equal(edhoc_amp_budget(a, "192.0.2.1:5683"), 42);
    edhoc_amp_received(a, "192.0.2.1:5683", 20);
    assert_int_equal(edhoc_amp_budget(a, "192.0.2.1:5683"), 102);
    edhoc_amp_sent(a, "192.0.2.1:5683", 200); /* over: nothing left, never negative */
    assert_int_equal(edhoc_amp_budget(a, "192.0.2.1:5683"), 0);
    /* "This needs to be done only once per endpoint": another port of the
     * same address is another endpoint with its own account. */
    assert_int_equal(edhoc_amp_budget(a, "192.0.2.1:5684"), 0);
    assert_false(edhoc_amp_is_verified(a, "192.0.2.1:5684"));
    /* Verified: no limit. */
    edhoc_amp_verify(a, "192.0.2.1:5683");
    assert_true(edhoc_amp_is_verified(a, "192.0.2.1:5683"));
    assert_int_equal(edhoc_amp_budget(a, "192.0.2.1:5683"), SIZE_MAX);
    edhoc_amp_sent(a, "192.0.2.1:5683", 100000);
    assert_int_equal(edhoc_amp_budget(a, "192.0.2.1:5683"), SIZE_MAX);

    edhoc_amp_note_limited(a, false);
    edhoc_amp_note_limited(a, true);
    struct edhoc_amp_stats st;
    edhoc_amp_get_stats(a, &st);
    assert_int_equal(st.limited, 2);
    assert_int_equal(st.withheld, 1);
    assert_int_equal(st.verified, 1);
    assert_int_equal(st.endpoints, 1);
    assert_int_equal(st.endpoints_verified, 1);
    /* Bytes while unverified: 84 in, 350 out; after verification not. */
    assert_int_equal(st.unverified_received, 84);
    assert_int_equal(st.unverified_sent, 350);
    assert_true(st.bytes_per_endpoint > 0 && st.bytes_per_endpoint < 128);
    edhoc_amp_free(a);

    /* Factor 1 and large counts saturate instead of wrapping. */
    a = make(1, 4);
    edhoc_amp_received(a, "[2001:db8::1]:40000", SIZE_MAX);
    edhoc_amp_received(a, "[2001:db8::1]:40000", SIZE_MAX);
    assert_true(edhoc_amp_budget(a, "[2001:db8::1]:40000") >= SIZE_MAX / 2);
    edhoc_amp_free(a);

    /* Factor 0 means no limit: no account at all. */
    struct edhoc_amp_config off = {.factor = 0};
    assert_null(edhoc_amp_new(&off));
    assert_int_equal(edhoc_amp_budget(NULL, "x"), SIZE_MAX);
}

/* Bounded memory: a full table makes room by forgetting the least
 * recently active unverified endpoint; verified ones stay while any
 * unverified one is left. A forgotten endpoint starts from nothing, so
 * it is never sent more than factor x what it sent in either life. */
static void test_eviction(void **state)
{
    (void)state;
    struct edhoc_amp *a = make(3, 4);
    edhoc_amp_received(a, "10.0.0.1:1", 10);
    edhoc_amp_received(a, "10.0.0.2:1", 10);
    edhoc_amp_verify(a, "10.0.0.2:1");
    edhoc_amp_received(a, "10.0.0.3:1", 10);
    edhoc_amp_received(a, "10.0.0.4:1", 10);
    edhoc_amp_received(a, "10.0.0.1:1", 1);  /* 1 is now more recent than 3 */
    edhoc_amp_received(a, "10.0.0.5:1", 10); /* full: 3 goes */
    assert_int_equal(edhoc_amp_budget(a, "10.0.0.3:1"), 0);
    assert_int_equal(edhoc_amp_budget(a, "10.0.0.1:1"), 33);
    assert_int_equal(edhoc_amp_budget(a, "10.0.0.5:1"), 30);
    assert_true(edhoc_amp_is_verified(a, "10.0.0.2:1"));
    /* A flood of new endpoints churns through the unverified entries only. */
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "198.51.100.%d:%d", i % 250, 1000 + i);
        edhoc_amp_received(a, name, 60);
    }
    assert_true(edhoc_amp_is_verified(a, "10.0.0.2:1"));
    struct edhoc_amp_stats st;
    edhoc_amp_get_stats(a, &st);
    assert_int_equal(st.endpoints, 4);
    assert_int_equal(st.endpoints_verified, 1);
    assert_int_equal(st.evicted, 1001);
    /* All verified: the least recently active verified one makes room. */
    edhoc_amp_free(a);
    a = make(3, 2);
    edhoc_amp_verify(a, "10.0.0.1:1");
    edhoc_amp_verify(a, "10.0.0.2:1");
    edhoc_amp_received(a, "10.0.0.1:1", 5);
    edhoc_amp_received(a, "10.0.0.3:1", 5);
    assert_true(edhoc_amp_is_verified(a, "10.0.0.1:1"));
    assert_false(edhoc_amp_is_verified(a, "10.0.0.2:1"));
    assert_int_equal(edhoc_amp_budget(a, "10.0.0.3:1"), 15);
    edhoc_amp_free(a);
}

/* Many endpoints, each found again with its own counts (chains of the
 * keyed hash hold every entry; removal keeps the others reachable). */
static void test_many_endpoints(void **state)
{
    (void)state;
    enum { N = 20000 };
    struct edhoc_amp *a = make(3, N);
    char name[64];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "[2001:db8::%x]:%d", i, 5683 + i % 7);
        edhoc_amp_received(a, name, (size_t)(i % 100) + 1);
        if (i % 3 == 0)
            edhoc_amp_verify(a, name);
    }
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "[2001:db8::%x]:%d", i, 5683 + i % 7);
        if (i % 3 == 0)
            assert_int_equal(edhoc_amp_budget(a, name), SIZE_MAX);
        else
            assert_int_equal(edhoc_amp_budget(a, name), 3 * ((size_t)(i % 100) + 1));
    }
    /* N more: every unverified one is replaced, the verified ones stay. */
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "203.0.113.%d:%d", i % 256, i);
        edhoc_amp_received(a, name, 7);
    }
    struct edhoc_amp_stats st;
    edhoc_amp_get_stats(a, &st);
    assert_int_equal(st.endpoints, N);
    assert_int_equal(st.endpoints_verified, (N + 2) / 3);
    for (int i = 0; i < N; i += 3) {
        snprintf(name, sizeof name, "[2001:db8::%x]:%d", i, 5683 + i % 7);
        assert_true(edhoc_amp_is_verified(a, name));
    }
    snprintf(name, sizeof name, "203.0.113.%d:%d", (N - 1) % 256, N - 1);
    assert_int_equal(edhoc_amp_budget(a, name), 21);
    edhoc_amp_free(a);
}

/* Trust levels (RFC 9528 Section 9.7: the Echo option "does not protect
 * against a distributed denial-of-service attack made by real,
 * potentially compromised, clients"): an Echo round trip makes an
 * endpoint reachable, a completed handshake or verified OSCORE request
 * authenticated (and verified, if it was not). A full table forgets the
 * lowest level first: unverified, then reachable, then authenticated. */
static void test_trust_levels(void **state)
{
    (void)state;
    struct edhoc_amp *a = make(3, 3);
    assert_int_equal(edhoc_amp_trust(a, "10.0.0.1:1"), EDHOC_AMP_UNVERIFIED);
    assert_int_equal(edhoc_amp_trust(NULL, "10.0.0.1:1"), EDHOC_AMP_UNVERIFIED);
    edhoc_amp_received(a, "10.0.0.1:1", 40);
    edhoc_amp_verify(a, "10.0.0.1:1");
    assert_int_equal(edhoc_amp_trust(a, "10.0.0.1:1"), EDHOC_AMP_REACHABLE);
    edhoc_amp_authenticate(a, "10.0.0.1:1");
    assert_int_equal(edhoc_amp_trust(a, "10.0.0.1:1"), EDHOC_AMP_AUTHENTICATED);
    assert_int_equal(edhoc_amp_budget(a, "10.0.0.1:1"), SIZE_MAX);
    /* Never seen before: verified and authenticated at once. */
    edhoc_amp_authenticate(a, "10.0.0.2:1");
    assert_true(edhoc_amp_is_verified(a, "10.0.0.2:1"));
    /* Verifying again keeps the higher level. */
    edhoc_amp_verify(a, "10.0.0.2:1");
    assert_int_equal(edhoc_amp_trust(a, "10.0.0.2:1"), EDHOC_AMP_AUTHENTICATED);
    struct edhoc_amp_stats st;
    edhoc_amp_get_stats(a, &st);
    assert_int_equal(st.verified, 2);
    assert_int_equal(st.authenticated, 2);
    assert_int_equal(st.endpoints_authenticated, 2);
    /* Full with 2 authenticated and 1 reachable: the reachable one goes. */
    edhoc_amp_verify(a, "10.0.0.3:1");
    edhoc_amp_received(a, "10.0.0.4:1", 10);
    assert_int_equal(edhoc_amp_trust(a, "10.0.0.3:1"), EDHOC_AMP_UNVERIFIED);
    /* Then the unverified newcomer before any authenticated one. */
    edhoc_amp_verify(a, "10.0.0.5:1");
    assert_int_equal(edhoc_amp_budget(a, "10.0.0.4:1"), 0);
    assert_int_equal(edhoc_amp_trust(a, "10.0.0.1:1"), EDHOC_AMP_AUTHENTICATED);
    assert_int_equal(edhoc_amp_trust(a, "10.0.0.2:1"), EDHOC_AMP_AUTHENTICATED);
    /* Only authenticated and reachable left: 5 (reachable) goes first. */
    edhoc_amp_authenticate(a, "10.0.0.6:1");
    assert_int_equal(edhoc_amp_trust(a, "10.0.0.5:1"), EDHOC_AMP_UNVERIFIED);
    assert_int_equal(edhoc_amp_trust(a, "10.0.0.1:1"), EDHOC_AMP_AUTHENTICATED);
    /* All authenticated: the least recently active one (1). */
    edhoc_amp_received(a, "10.0.0.7:1", 1);
    assert_int_equal(edhoc_amp_trust(a, "10.0.0.1:1"), EDHOC_AMP_UNVERIFIED);
    assert_int_equal(edhoc_amp_trust(a, "10.0.0.2:1"), EDHOC_AMP_AUTHENTICATED);
    edhoc_amp_get_stats(a, &st);
    assert_int_equal(st.endpoints, 3);
    assert_int_equal(st.endpoints_authenticated, 2);
    edhoc_amp_free(a);
}

static struct edhoc_amp *make_pressure(unsigned rate)
{
    struct edhoc_amp_config cfg = {
        .factor = 3, .max_endpoints = 16, .pressure_rate = rate, .seed = {1, 2}};
    struct edhoc_amp *a = edhoc_amp_new(&cfg);
    assert_non_null(a);
    return a;
}

/* Issue 15, "Load-triggered address verification": pressure is the rate
 * of message_1s from unverified endpoints over the last second above
 * pressure_rate (the second before weighted by how much of it the window
 * still covers), or the pending table full. Times are given: no clock. */
static void test_pressure_meter(void **state)
{
    (void)state;
    struct edhoc_amp *a = make_pressure(3);
    /* 1, 2, 3 in one second: not above 3. The 4th is. */
    assert_false(edhoc_amp_message_1_pressure(a, 10000, 0, 10));
    assert_false(edhoc_amp_message_1_pressure(a, 10100, 0, 10));
    assert_false(edhoc_amp_message_1_pressure(a, 10200, 0, 10));
    assert_true(edhoc_amp_message_1_pressure(a, 10300, 0, 10));
    /* Half-way into the next second: 4 x 0.5 + 1 = 3, not above 3. */
    assert_false(edhoc_amp_message_1_pressure(a, 11500, 0, 10));
    /* 100 ms later: 4 x 0.4 + 2 = 3.6. */
    assert_true(edhoc_amp_message_1_pressure(a, 11600, 0, 10));
    /* Seconds later the window is empty. */
    assert_false(edhoc_amp_message_1_pressure(a, 20000, 0, 10));
    /* A full pending table is pressure whatever the rate. */
    assert_true(edhoc_amp_message_1_pressure(a, 30000, 10, 10));
    assert_false(edhoc_amp_message_1_pressure(a, 30001, 9, 10));
    struct edhoc_amp_stats st;
    edhoc_amp_get_stats(a, &st);
    assert_int_equal(st.pressure_challenges, 3);
    assert_int_equal(st.pressure_periods, 3);
    edhoc_amp_free(a);
    /* pressure_rate 0: off, even with the table full. */
    a = make_pressure(0);
    assert_false(edhoc_amp_message_1_pressure(a, 1000, 10, 10));
    assert_true(edhoc_amp_admit_reachable(a, 1000, 10, 10));
    edhoc_amp_free(a);
    assert_false(edhoc_amp_message_1_pressure(NULL, 1000, 10, 10));
}

/* Under pressure, endpoints verified by Echo alone start at most
 * pressure_rate handshakes over the last second between them (RFC 9528
 * Section 9.7: Echo "does not protect against a distributed
 * denial-of-service attack made by real, potentially compromised,
 * clients"); without pressure every one starts. */
static void test_admit_reachable(void **state)
{
    (void)state;
    struct edhoc_amp *a = make_pressure(2);
    for (int i = 0; i < 10; i++)
        assert_true(edhoc_amp_admit_reachable(a, 5000 + (uint64_t)i, 3, 10)); /* no pressure */
    assert_true(edhoc_amp_admit_reachable(a, 6000, 10, 10));
    assert_true(edhoc_amp_admit_reachable(a, 6001, 10, 10));
    assert_false(edhoc_amp_admit_reachable(a, 6002, 10, 10));
    assert_false(edhoc_amp_admit_reachable(a, 6999, 10, 10));
    /* 7600: 2 x 0.4 = 0.8 over the last second, room; then 1.8, room;
     * then 2.8. */
    assert_true(edhoc_amp_admit_reachable(a, 7600, 10, 10));
    assert_true(edhoc_amp_admit_reachable(a, 7601, 10, 10));
    assert_false(edhoc_amp_admit_reachable(a, 7602, 10, 10));
    assert_true(edhoc_amp_admit_reachable(a, 9000, 10, 10));
    struct edhoc_amp_stats st;
    edhoc_amp_get_stats(a, &st);
    assert_int_equal(st.pressure_refused, 3);
    edhoc_amp_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget),         cmocka_unit_test(test_eviction),
        cmocka_unit_test(test_many_endpoints), cmocka_unit_test(test_trust_levels),
        cmocka_unit_test(test_pressure_meter), cmocka_unit_test(test_admit_reachable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
