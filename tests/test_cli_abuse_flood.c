/*
 * Hostile datagrams against a real `edhoc-cli responder` process on
 * loopback, 3: 10,000 source ports each opening a Block1 transfer (RFC
 * 7959): the responder's memory stays under a bound computed from its
 * documented limits, and it still serves a handshake and an OSCORE request
 * afterwards, stops cleanly on SIGTERM, with no sanitizer report.
 */
#include "cli_abuse_test_common.h"

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
        cmocka_unit_test_teardown(test_many_sources, net_test_teardown),
    };
    return cmocka_run_group_tests_name("cli_abuse_flood", tests, group_setup, net_group_teardown);
}
