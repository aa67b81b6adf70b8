/*
 * A responder fleet on one PostgreSQL store (responder --state
 * postgresql://...): three responders on 127.0.0.1, 127.0.0.2 and
 * 127.0.0.3 sharing one database of a private cluster (tests/pg_cluster.h),
 * devices that run EDHOC with the first and then send their OSCORE
 * requests to all three in turn, as a UDP balancer would spread them.
 *
 * What each expectation comes from:
 *   - RFC 8613 Section 7.2: "An AEAD nonce MUST NOT be used more than once
 *     per AEAD key": the nonce checker (tests/nonce_check.c) runs over the
 *     captures of every responder and every device, and finds no (key,
 *     nonce) pair that sealed two different messages, although three
 *     processes on three addresses sent under each device's keys;
 *   - RFC 8613 Appendix B.1.2: a responder that takes a context over has
 *     no replay window for it, so its first answer is a 4.01 with an Echo
 *     option (RFC 9175 Section 2.4) and the device's retry with the echoed
 *     value gets the 2.05;
 *   - a responder killed with kill -9 loses nothing but its memory: its
 *     devices go on with the others, whose reservations in the store are
 *     above every number the dead one was given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <time.h>

#include "edhoc/capture.h"
#include "net_test_util.h"
#include "nonce_check.h"
#include "pg_cluster.h"

#define CLI_RUN(out, timeout_s, ...) net_cli_run(out, timeout_s, false, __VA_ARGS__)

static struct pg_cluster cluster;
static char store[900]; /* the responders' --state */

enum { RESPONDERS = 3, DEVICES = 2 };
static struct net_proc resp[RESPONDERS];
static char device_conf[DEVICES][300];

static int group_setup(void **state)
{
    (void)state;
    if (net_make_dir("fleet"))
        return -1;
    if (pg_cluster_init(&cluster) != 0 || pg_cluster_start(&cluster) != 0 ||
        pg_cluster_create_db(&cluster, "fleet") != 0) {
        fprintf(stderr, "test_cli_fleet: %s\n", cluster.why);
        pg_cluster_destroy(&cluster);
        return -1;
    }
    /* libpq's URI form, the server on its Unix socket directory. */
    snprintf(store, sizeof store, "postgresql:///fleet?host=%s&port=%d&user=%s", cluster.dir,
             PG_CLUSTER_PORT, PG_CLUSTER_SUPERUSER);
    return 0;
}

/* Before each test: a test that failed while the server was stopped left
 * it so, and the next ones would fail for that alone. */
static int server_running(void **state)
{
    (void)state;
    if (cluster.pid <= 0 && pg_cluster_start(&cluster) != 0) {
        fprintf(stderr, "test_cli_fleet: %s\n", cluster.why);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    net_group_teardown(state);
    pg_cluster_destroy(&cluster);
    return 0;
}

/* Rows leased to the process pid (its owner name is "HOST:PID"). */
static long owned_rows(long pid)
{
    char ci[900], q[200];
    pg_cluster_conninfo(&cluster, "fleet", ci, sizeof ci);
    snprintf(q, sizeof q, "SELECT count(*) FROM edhoc_contexts WHERE owner LIKE '%%:%ld'", pid);
    PGconn *c = PQconnectdb(ci);
    PGresult *r = PQexec(c, q);
    long n = PQresultStatus(r) == PGRES_TUPLES_OK ? atol(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    PQfinish(c);
    return n;
}

static void wait_owned_rows(long pid, long n)
{
    uint64_t deadline = net_now_ms() + 30000;
    long have;
    while ((have = owned_rows(pid)) < n) {
        if (net_now_ms() > deadline)
            fail_msg("%ld of %ld contexts of pid %ld in the store after 30 s", have, n, pid);
        net_sleep_ms(20);
    }
}

static void start_responder(int i)
{
    char args[1400], name[20];
    snprintf(name, sizeof name, "r%d", i);
    snprintf(args, sizeof args, "--listen 127.0.0.%d:0 --state '%s' --pcap %s/r%d.pcap", i + 1,
             store, net_dir, i);
    if (net_responder_start(&resp[i], name, args) != 0) {
        char *log = net_read_file(resp[i].log);
        fail_msg("responder %d did not start:\n%s", i, log ? log : "");
    }
}

/* EDHOC with responder r; the device's context file written to conf. */
static void device_handshake(struct net_proc *r, int addr, const char *name, char *conf, size_t cap)
{
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.%d:%u --request \"GET /time\" --export-secrets "
                     "--json --pcap %s/%s-edhoc.pcap",
                     addr, r->port, net_dir, name);
    if (rc != 0 || !strstr(out, "2.05"))
        fail_msg("%s: EDHOC: %d\n%s", name, rc, out);
    char file[60];
    snprintf(file, sizeof file, "%s.conf", name);
    net_path(conf, cap, file);
    net_write_exported_context(out, conf);
    free(out);
}

/* `load` against 127.0.0.ADDR:port in the background for seconds, its
 * output in DIR/NAME.out and its exit code in DIR/NAME.rc once done. */
static void load_start(const char *name, int addr, unsigned port, unsigned seconds)
{
    char line[1400], *out;
    snprintf(line, sizeof line,
             "(%s load coap://127.0.0.%d:%u --peers 4 --duration %u --requests-per-peer 2 "
             "--timeout 2 --method 3 --suites 2 >%s/%s.out 2>&1; echo $? >%s/%s.rc) "
             ">/dev/null 2>&1 &",
             net_cli(), addr, port, seconds, net_dir, name, net_dir, name);
    assert_int_equal(net_sh(line, &out, 10), 0);
    free(out);
}

/* The output of the load started as name, once it exited 0 (a test fails
 * otherwise, or when it has not ended within a minute). */
static char *load_wait(const char *name)
{
    char rc_path[400], out_path[400];
    snprintf(rc_path, sizeof rc_path, "%s/%s.rc", net_dir, name);
    snprintf(out_path, sizeof out_path, "%s/%s.out", net_dir, name);
    char *rc_text = NULL;
    uint64_t until = net_now_ms() + 60000;
    while (!(rc_text = net_read_file(rc_path)) && net_now_ms() < until)
        net_sleep_ms(100);
    char *lo = net_read_file(out_path);
    if (!rc_text || atoi(rc_text) != 0 || !lo)
        fail_msg("load %s: exit %s\n%s", name, rc_text ? rc_text : "(none)", lo ? lo : "");
    free(rc_text);
    return lo;
}

/* The handshakes of a load's table row. */
static int load_handshakes(const char *lo)
{
    const char *row = strstr(lo, "| coap://127.0.0.");
    int peers = 0, handshakes = 0;
    double seconds = 0;
    if (!row || sscanf(row, "| coap://127.0.0.%*d:%*u | %d | %lf | %d |", &peers, &seconds,
                       &handshakes) != 3)
        fail_msg("no load row:\n%s", lo);
    return handshakes;
}

/* A datagram anybody can send: an OSCORE request naming device d's kid
 * (its Sender ID, in clear in every request it sends) with a Partial IV
 * and a ciphertext that no key made, to responder i. Returns the CoAP
 * code of the answer, or -1. */
static int forged_request(int d, int i)
{
    char *conf = net_read_file(device_conf[d]);
    assert_non_null(conf);
    const char *at = strstr(conf, "sender_id,hex,\"");
    assert_non_null(at);
    at += strlen("sender_id,hex,\"");
    uint8_t kid[8];
    size_t kid_len = 0;
    while (kid_len < sizeof kid && sscanf(at + 2 * kid_len, "%2hhx", &kid[kid_len]) == 1)
        kid_len++;
    free(conf);
    /* CON POST, Message ID 0x7777, no token; OSCORE option (9): flags
     * 0x09 (kid present, a 1-byte Partial IV), Partial IV 0x40, the kid
     * (RFC 8613 Section 6.1); then 24 bytes of "ciphertext". */
    uint8_t msg[64] = {0x40, 0x02, 0x77, 0x77, (uint8_t)(0x90 | (kid_len + 2)), 0x09, 0x40};
    size_t len = 7;
    memcpy(msg + len, kid, kid_len);
    len += kid_len;
    msg[len++] = 0xff;
    for (int k = 0; k < 24; k++)
        msg[len++] = (uint8_t)(0xa5 ^ k);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(resp[i].port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK + (uint32_t)i);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    uint8_t answer[512];
    long n = -1;
    if (sendto(fd, msg, len, 0, (struct sockaddr *)&a, sizeof a) == (ssize_t)len)
        n = recv(fd, answer, sizeof answer, 0);
    close(fd);
    return n >= 4 ? answer[1] : -1;
}

/* One OSCORE GET /time of device d to responder i; returns the output. */
static char *device_get(int d, int i, int round)
{
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "coap GET coap://127.0.0.%d:%u/time --oscore-context %s --json "
                     "--pcap %s/d%d-r%d-%d.pcap",
                     i + 1, resp[i].port, device_conf[d], net_dir, d, i, round);
    if (rc != 0 || !strstr(out, "2.05"))
        fail_msg("device %d to responder %d (round %d): exit %d\n%s", d, i, round, rc, out);
    return out;
}

static void test_devices_served_by_every_responder(void **state)
{
    (void)state;
    for (int i = 0; i < RESPONDERS; i++)
        start_responder(i);
    char *log = net_read_file(resp[0].log);
    assert_non_null(strstr(log, "the fleet's PostgreSQL store"));
    free(log);

    /* EDHOC with the first responder; the keys exported for the device's
     * later requests (its sequence numbers in the client state directory,
     * above the initiator's own request). */
    for (int d = 0; d < DEVICES; d++) {
        char name[20];
        snprintf(name, sizeof name, "device%d", d);
        device_handshake(&resp[0], 1, name, device_conf[d], sizeof device_conf[d]);
    }

    wait_owned_rows(resp[0].pid, DEVICES);
    /* A forged request naming a device's kid reaches the other two: each
     * reads the context from the store, cannot decrypt (RFC 8613 Section
     * 8.2 step 6: "MAY respond with a 4.00 (Bad Request)"), and takes
     * nothing: the context stays the first responder's (before, the read
     * took the lease, so anyone who saw a kid could move a device's
     * context between responders at will). */
    for (int i = 1; i < RESPONDERS; i++)
        assert_int_equal(forged_request(0, i), 0x80); /* 4.00 */
    assert_int_equal(owned_rows(resp[0].pid), DEVICES);
    /* Round robin over the three: each request reaches a responder that
     * does not hold the context (the responder that last served it has
     * it), which takes it from the store, with an Echo round trip (RFC
     * 8613 Appendix B.1.2). */
    for (int round = 0; round < 2; round++) {
        for (int i = 1; i <= RESPONDERS; i++) {
            for (int d = 0; d < DEVICES; d++) {
                char *out = device_get(d, i % RESPONDERS, round);
                if (!strstr(out, "\"echo\": true"))
                    fail_msg("device %d: request to responder %d had no Echo round trip "
                             "(a context taken over has no replay window):\n%s",
                             d, i % RESPONDERS, out);
                free(out);
            }
        }
    }
    /* One responder at a time: each request above moved its context, and
     * the responder it left heard of it from the store (its copy dropped
     * at its next request), so that each of the second round took the
     * context from the store again. */
    for (int i = 0; i < RESPONDERS; i++) {
        log = net_read_file(resp[i].log);
        if (net_count(log, "taken from the postgresql store") != 2 * DEVICES)
            fail_msg("responder %d: %d contexts taken from the store, not %d", i,
                     net_count(log, "taken from the postgresql store"), 2 * DEVICES);
        free(log);
    }

    /* The first is killed mid-load (its own handshakes and requests
     * going on): its devices go on with the other two. */
    long rows_before = owned_rows(resp[0].pid);
    load_start("kill-load", 1, resp[0].port, 4);
    wait_owned_rows(resp[0].pid, rows_before + 2);
    assert_int_equal(net_proc_stop(&resp[0], SIGKILL, 5000), 128 + SIGKILL);
    for (int round = 2; round < 4; round++) {
        for (int i = 1; i < RESPONDERS; i++) {
            for (int d = 0; d < DEVICES; d++)
                free(device_get(d, i, round));
        }
    }
    for (int i = 1; i < RESPONDERS; i++)
        assert_int_equal(net_proc_stop(&resp[i], SIGTERM, 5000), 0);
    /* The load lost its responder: its handshakes before the kill
     * completed, the rest timed out (not a failure of the load). */
    char *lo = load_wait("kill-load");
    assert_true(load_handshakes(lo) > 0);
    free(lo);

    /* Every capture of both ends through the checker. */
    struct nonce_check *nc = nonce_check_new();
    char why[512];
    for (int d = 0; d < DEVICES; d++)
        assert_int_equal(nonce_check_add_context_file(nc, device_conf[d], why, sizeof why), 0);
    DIR *dir = opendir(net_dir);
    assert_non_null(dir);
    unsigned captures = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".pcap"))
            continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", net_dir, e->d_name);
        if (nonce_check_add_pcap(nc, path, why, sizeof why))
            fprintf(stderr, "# %s\n", why); /* r0.pcap, cut by kill -9 */
        captures++;
    }
    closedir(dir);
    const struct nonce_check_report *rep = nonce_check_report(nc);
    if (rep->n_violations) {
        nonce_check_print(nc, stderr);
        fail_msg("%zu (key, nonce) pairs sealed two different messages", rep->n_violations);
    }
    /* RFC 8613 Section 7.4: no request processed by two responders (or
     * twice by one): two different successes to one request. */
    if (rep->accepted_twice) {
        nonce_check_print(nc, stderr);
        fail_msg("%u requests processed twice", rep->accepted_twice);
    }
    /* It saw the exchanges: each device's requests of six rounds to two or
     * three responders, and their answers, from both ends. */
    assert_true(captures >= RESPONDERS + DEVICES);
    assert_true(rep->responses >= 2 * DEVICES * (3 + 3 + 2 + 2));
    /* Unattributed: the forged requests, one in each capture of the two
     * that got one (no key opens them; their 4.00 answers are not OSCORE
     * messages), and the load's traffic in the first one's (keys nobody
     * exported, and its answers cut off by the kill); nothing malformed
     * or in fragments. */
    assert_true(rep->no_key >= RESPONDERS - 1);
    assert_int_equal(rep->malformed, 0);
    assert_int_equal(rep->unattributed, rep->no_key + rep->no_request);
    nonce_check_free(nc);
}

static int conf_get(char **out, const struct net_proc *r, int addr, const char *conf)
{
    return CLI_RUN(out, 30, "coap GET coap://127.0.0.%d:%u/time --oscore-context %s --json", addr,
                   r->port, conf);
}

/* The last datagram sent to port in the capture at path (the request a
 * client's run ended with), into out; returns its length. */
static size_t last_request_in(const char *path, uint16_t port, uint8_t *out, size_t cap)
{
    char err[256];
    struct edhoc_capture_reader *r = edhoc_capture_reader_open(path, err, sizeof err);
    if (!r)
        fail_msg("%s: %s", path, err);
    const uint8_t *frame;
    size_t caplen, wire_len, len = 0;
    struct timespec ts;
    while (edhoc_capture_reader_next(r, &frame, &caplen, &wire_len, &ts) == 1) {
        struct edhoc_capture_packet p;
        if (edhoc_capture_packet_parse(edhoc_capture_reader_dlt(r), frame, caplen, wire_len, &p) ||
            p.dst_port != port || p.payload_len > cap)
            continue;
        memcpy(out, p.payload, p.payload_len);
        len = p.payload_len;
    }
    edhoc_capture_reader_close(r);
    if (!len)
        fail_msg("%s: no datagram to port %u", path, port);
    return len;
}

/* The nonce checker over the captures named (files in net_dir) with the
 * devices' contexts (their files): a test fails on any (key, nonce) pair
 * that sealed two different messages (RFC 8613 Section 7.2.1). Returns
 * how many responses it attributed. */
static unsigned check_nonces(const char *const *confs, size_t n_confs, const char *const *files,
                             size_t n_files)
{
    struct nonce_check *nc = nonce_check_new();
    char why[512], path[600];
    for (size_t i = 0; i < n_confs; i++)
        if (nonce_check_add_context_file(nc, confs[i], why, sizeof why))
            fail_msg("%s: %s", confs[i], why);
    for (size_t i = 0; i < n_files; i++) {
        snprintf(path, sizeof path, "%s/%s", net_dir, files[i]);
        if (nonce_check_add_pcap(nc, path, why, sizeof why))
            fail_msg("%s: %s", path, why);
    }
    const struct nonce_check_report *rep = nonce_check_report(nc);
    if (rep->n_violations) {
        nonce_check_print(nc, stderr);
        fail_msg("%zu (key, nonce) pairs sealed two different messages", rep->n_violations);
    }
    /* RFC 8613 Section 7.4: no request processed by two responders (or
     * twice by one): two different successes to one request. */
    if (rep->accepted_twice) {
        nonce_check_print(nc, stderr);
        fail_msg("%u requests processed twice", rep->accepted_twice);
    }
    unsigned responses = rep->responses;
    nonce_check_free(nc);
    return responses;
}

/* Whether this run of responder r (its log is appended to across tests)
 * dropped a copy at a takeover notice. */
static bool logged_notice(const struct net_proc *r)
{
    char *log = net_read_file(r->log), head[64];
    snprintf(head, sizeof head, "edhoc-cli[%ld] notice: OSCORE: context kid=", (long)r->pid);
    bool found = false;
    for (const char *at = log; at && !found && (at = strstr(at, head)) != NULL; at++) {
        const char *eol = strchr(at, '\n');
        const char *n = strstr(at, "(the store's notice)");
        found = n && (!eol || n < eol);
    }
    free(log);
    return found;
}

/* A device's context moves from responder 0 to responder 1 (Echo round
 * trip); its last request, which 1 accepted and answered, is replayed to
 * 0, which still holds its copy. RFC 8613 Section 7.4: a request is
 * processed at most once. The takeover's notice from the store reached 0
 * first: 0 dropped its copy, read the context from the store, and
 * answers the replay as any request of a context without a replay window
 * (Appendix B.1.2): 4.01 with an Echo challenge, which a replay cannot
 * answer. Before, 0 found out only at its next reservation, and answered
 * the replay 2.05: processed twice. And RFC 8613 Section 7.2.1's nonce
 * rule holds across both: every response has the responder's own
 * Partial IV, from blocks no two responders share (before those, both
 * answered under the request's nonce with two different payloads). */
static void test_replay_to_the_stale_owner(void **state)
{
    (void)state;
    start_responder(0);
    start_responder(1);
    char conf[300], path[600];
    device_handshake(&resp[0], 1, "stale", conf, sizeof conf);
    wait_owned_rows(resp[0].pid, 1);
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "coap GET coap://127.0.0.1:%u/time --oscore-context %s --json --pcap "
                     "%s/stale-at-0.pcap",
                     resp[0].port, conf, net_dir);
    if (rc != 0 || !strstr(out, "2.05"))
        fail_msg("served by responder 0: %d\n%s", rc, out);
    free(out);
    rc = CLI_RUN(&out, 30,
                 "coap GET coap://127.0.0.2:%u/time --oscore-context %s --json --pcap "
                 "%s/stale-at-1.pcap",
                 resp[1].port, conf, net_dir);
    if (rc != 0 || !strstr(out, "\"echo\": true"))
        fail_msg("taken over by responder 1 (with an Echo round trip): %d\n%s", rc, out);
    free(out);
    /* Responder 0 hears of the takeover without a request of its own
     * (its tick reads the store's notices): its copy is gone before the
     * replay comes. */
    uint64_t deadline = net_now_ms() + 10000;
    for (;;) {
        bool heard = logged_notice(&resp[0]);
        if (heard)
            break;
        if (net_now_ms() > deadline)
            fail_msg("responder 0 did not hear of the takeover within 10 s");
        net_sleep_ms(20);
    }
    uint8_t req[1500], answer[1500];
    snprintf(path, sizeof path, "%s/stale-at-1.pcap", net_dir);
    size_t len = last_request_in(path, resp[1].port, req, sizeof req);
    /* /time answers by the second: wait for the next one, so that the two
     * answers differ (the same plaintext twice would hide a reuse). */
    time_t t0 = time(NULL);
    while (time(NULL) == t0)
        net_sleep_ms(20);
    long n = net_udp_exchange(resp[0].port, req, len, answer, sizeof answer, 10000);
    /* Protected (2.04 outside, RFC 8613 Section 4.2); inside, the Echo
     * challenge, not the resource's answer. */
    assert_true(n >= 4);
    assert_int_equal(answer[1], 0x44);
    char req_hex[3001], answer_hex[3001];
    for (size_t i = 0; i < len; i++)
        snprintf(req_hex + 2 * i, 3, "%02x", req[i]);
    for (long i = 0; i < n; i++)
        snprintf(answer_hex + 2 * i, 3, "%02x", answer[i]);
    rc = CLI_RUN(&out, 30, "oscore unprotect --context %s --request %s --json %s", conf, req_hex,
                 answer_hex);
    if (rc != 0 || !strstr(out, "\"code\": \"4.01\"") || !strstr(out, "Echo"))
        fail_msg("the replay to the old owner: not a 4.01 Echo challenge (processed twice?): "
                 "%d\n%s",
                 rc, out);
    free(out);
    for (int i = 0; i < 2; i++)
        assert_int_equal(net_proc_stop(&resp[i], SIGTERM, 5000), 0);

    const char *confs[] = {conf};
    const char *files[] = {"r0.pcap", "r1.pcap", "stale-edhoc.pcap", "stale-at-0.pcap",
                           "stale-at-1.pcap"};
    /* It saw both answers to the replayed request: 0's in r0.pcap. */
    assert_true(check_nonces(confs, 1, files, 5) >= 5);
}

/* Two responders race for one context: each round, the device's request
 * goes to both at once (two processes, the one context file; the
 * client's sequence-number record gives each its own numbers), so that
 * each responder takes the context from the other, often both at the
 * same moment: each reads the row, and only the first compare-and-set on
 * the mark wins; the other drops its copy and answers 5.03 with Max-Age
 * 0, "the number of seconds after which to retry" (RFC 7252 Section
 * 5.9.3.4), or, having dropped it at the other's notice, challenges the
 * request again with Echo (RFC 8613 Appendix B.1.2), which this client
 * answers once. Whatever the interleaving, over both responders'
 * captures: no (key, nonce) pair twice (RFC 8613 Section 7.2.1), no
 * request processed twice (Section 7.4); every answer one of those;
 * most requests served. */
#define RACE_ROUNDS 500

static void test_two_responders_race(void **state)
{
    (void)state;
    static struct net_proc a, b;
    char args[1400], conf[300], line[3000], *out;
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state '%s' --pcap %s/race-a.pcap", store,
             net_dir);
    assert_int_equal(net_responder_start(&a, "race-a", args), 0);
    snprintf(args, sizeof args, "--listen 127.0.0.2:0 --state '%s' --pcap %s/race-b.pcap", store,
             net_dir);
    assert_int_equal(net_responder_start(&b, "race-b", args), 0);
    device_handshake(&a, 1, "race-dev", conf, sizeof conf);
    wait_owned_rows(a.pid, 1);
    snprintf(line, sizeof line,
             "i=0; while [ $i -lt %d ]; do "
             "%s coap GET coap://127.0.0.1:%u/time --oscore-context %s --json --timeout 10 "
             ">>%s/race-a.out 2>/dev/null & "
             "%s coap GET coap://127.0.0.2:%u/time --oscore-context %s --json --timeout 10 "
             ">>%s/race-b.out 2>/dev/null & "
             "wait; i=$((i+1)); done",
             RACE_ROUNDS, net_cli(), a.port, conf, net_dir, net_cli(), b.port, conf, net_dir);
    assert_int_equal(net_sh(line, &out, 600), 0);
    free(out);
    assert_int_equal(net_proc_stop(&a, SIGTERM, 5000), 0);
    assert_int_equal(net_proc_stop(&b, SIGTERM, 5000), 0);

    int served = 0, refused = 0, challenged = 0, runs = 0;
    const char *names[] = {"race-a.out", "race-b.out"};
    for (int i = 0; i < 2; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", net_dir, names[i]);
        char *o = net_read_file(path);
        assert_non_null(o);
        /* One JSON document per run, each naming its final code. */
        for (char *at = o; (at = strstr(at, "\"code\": \"")) != NULL; at += 9) {
            const char *code = at + 9;
            runs++;
            if (!strncmp(code, "2.05", 4))
                served++;
            else if (!strncmp(code, "5.03", 4))
                refused++;
            else if (!strncmp(code, "4.01", 4))
                challenged++;
            else
                fail_msg("%s: an answer the race does not explain: %.40s", names[i], code);
        }
        free(o);
    }
    printf("# %d requests raced: %d served, %d 5.03 (lost the takeover), %d Echo challenged "
           "again\n",
           runs, served, refused, challenged);
    assert_true(runs >= 2 * RACE_ROUNDS);
    assert_true(served >= RACE_ROUNDS);
    char *log = net_read_file(a.log);
    int taken = net_count(log, "taken over by another responder");
    free(log);
    log = net_read_file(b.log);
    taken += net_count(log, "taken over by another responder");
    free(log);
    printf("# copies dropped at a takeover: %d\n", taken);
    assert_true(taken >= RACE_ROUNDS);
    const char *confs[] = {conf};
    const char *files[] = {"race-a.pcap", "race-b.pcap"};
    assert_true(check_nonces(confs, 1, files, 2) >= (unsigned)served);
}

/* The store stopped under a running fleet and under load, then started
 * again. What is
 * in memory goes on (a response takes a number of the block reserved
 * before: a context's first 256 came with its put); what would need
 * the store gets 5.03 with Max-Age ("the number of seconds after which to
 * retry", RFC 7252 Section 5.9.3.4), not an error that blames the device
 * (not 4.01 "Security context not found", which would send it to a new
 * handshake that cannot be kept either); each responder says once that
 * the store is out of reach and once that it answers again, and serves as
 * before without being restarted. */
static void test_store_restarted(void **state)
{
    (void)state;
    static struct net_proc a, b;
    char args[1400], conf[300], conf2[300];
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state '%s' --pcap %s/down-a.pcap", store,
             net_dir);
    assert_int_equal(net_responder_start(&a, "down-a", args), 0);
    snprintf(args, sizeof args, "--listen 127.0.0.2:0 --state '%s' --pcap %s/down-b.pcap", store,
             net_dir);
    assert_int_equal(net_responder_start(&b, "down-b", args), 0);
    device_handshake(&a, 1, "down-dev", conf, sizeof conf);
    wait_owned_rows(a.pid, 1);

    /* Load on responder a across the stop and the restart. */
    char *out;
    load_start("down-load", 1, a.port, 15);
    long rows_before = owned_rows(a.pid);
    wait_owned_rows(a.pid, rows_before + 2); /* the load's first handshakes */

    if (pg_cluster_stop(&cluster) != 0)
        fail_msg("%s", cluster.why);
    int rc = conf_get(&out, &a, 1, conf);
    if (rc != 0 || !strstr(out, "2.05"))
        fail_msg("the context in memory, store stopped: %d\n%s", rc, out);
    free(out);
    rc = conf_get(&out, &b, 2, conf);
    if (!strstr(out, "5.03") || strstr(out, "Security context not found"))
        fail_msg("a context not in memory, store stopped: %d\n%s", rc, out);
    free(out);
    /* New handshakes: the responder learns that the store is gone from
     * the first context's put, which its writer makes after message_3 was
     * answered (nothing waits for a new context's row: lost, it costs the
     * device a new handshake, never a nonce); from then on message_3, and
     * within Max-Age message_1, get 5.03. */
    bool refused = false;
    for (int k = 0; k < 20 && !refused; k++) {
        rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request \"GET /time\"", a.port);
        refused = rc != 0 && strstr(out, "5.03");
        if (rc != 0 && !refused)
            fail_msg("a new handshake, store stopped: %d\n%s", rc, out);
        free(out);
    }
    if (!refused)
        fail_msg("20 handshakes with the store stopped, none refused with 5.03");

    if (pg_cluster_start(&cluster) != 0)
        fail_msg("%s", cluster.why);
    /* Back by themselves: each responder's next call reconnects. The
     * device retries as Max-Age says; here, until it is served. */
    uint64_t deadline = net_now_ms() + 60000;
    for (;;) {
        rc = conf_get(&out, &b, 2, conf);
        bool ok = rc == 0 && strstr(out, "2.05");
        if (ok || net_now_ms() > deadline) {
            if (!ok)
                fail_msg("not served after the store came back: %d\n%s", rc, out);
            free(out);
            break;
        }
        free(out);
        net_sleep_ms(250);
    }
    /* The lookup that served it was a round trip the store answered: the
     * transition is in b's log before that answer left, not only once
     * the retry time (Max-Age 5) has passed. Without it, a responder whose
     * next call came just before that time (and whose last was a failed
     * write at exit) never said the store was back. */
    {
        char *log = net_read_file(b.log);
        if (net_count(log, "store answers again") != 1)
            fail_msg("responder b served a context from the store and did not say it answers "
                     "again");
        free(log);
    }
    for (;;) {
        rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request \"GET /time\"", a.port);
        bool ok = rc == 0 && strstr(out, "2.05");
        free(out);
        if (ok)
            break;
        if (net_now_ms() > deadline)
            fail_msg("no handshake after the store came back");
        net_sleep_ms(250);
    }
    long before = owned_rows(a.pid);
    device_handshake(&a, 1, "down-dev2", conf2, sizeof conf2);
    wait_owned_rows(a.pid, before + 1);
    rc = conf_get(&out, &b, 2, conf2);
    if (rc != 0 || !strstr(out, "2.05"))
        fail_msg("a context made after the restart, on the other responder: %d\n%s", rc, out);
    free(out);
    assert_int_equal(net_proc_stop(&a, SIGTERM, 5000), 0);
    assert_int_equal(net_proc_stop(&b, SIGTERM, 5000), 0);
    struct net_proc *both[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        char *log = net_read_file(both[i]->log);
        if (net_count(log, "store is out of reach (") != 1 ||
            net_count(log, "store answers again") != 1) {
            /* The log's state lines only: the whole log is longer than a
             * failure message holds. */
            for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n"))
                if (strstr(line, "state:") || strstr(line, "store"))
                    fprintf(stderr, "# responder %d: %s\n", i, line);
            fail_msg("responder %d: each transition once (its state lines above)", i);
        }
        /* b stored nothing while the store was out of reach (it only
         * looked contexts up): its exit has no failed write to report.
         * Once, every responder that had found the store out of reach
         * said so at exit, whatever its writer had done. */
        if (both[i] == &b && strstr(log, "a batch of writes failed"))
            fail_msg("responder b reported a failed write at exit, with none failed");
        free(log);
    }
    /* The load ran through it: handshakes completed, new ones refused
     * with 5.03 while the store was down, and every OSCORE request
     * answered 2.04 under OSCORE: the contexts in memory went on, none was
     * lost (a lost one is 4.01). */
    char *lo = load_wait("down-load");
    assert_true(load_handshakes(lo) > 0);
    if (!strstr(lo, "| coap_error | 5.03 | ") || !strstr(lo, "| OSCORE | OSCORE | 2.04 | ") ||
        strstr(lo, "| OSCORE | OSCORE | 4.") || strstr(lo, "| OSCORE | plain"))
        fail_msg("load across the restart:\n%s", lo);
    free(lo);
    /* Both responders' captures: the two devices' requests before, during
     * and after the restart, and every answer. */
    const char *confs[] = {conf, conf2};
    const char *files[] = {"down-a.pcap", "down-b.pcap"};
    assert_true(check_nonces(confs, 2, files, 2) >= 5);
}

/* load --vs against a default (SQLite) responder and a fleet's: the rows
 * say which is which (from each responder's figures), the fleet's row
 * has the store's round trips per handshake (at most one: its puts are
 * batched) and per OSCORE request (none on a cache hit: a context's first
 * block of 256 numbers came with its put), and the fleet's targets are
 * printed. */
static void test_load_vs_fleet(void **state)
{
    (void)state;
    static struct net_proc s, f;
    char args[1400];
    assert_int_equal(net_responder_start(&s, "vs-sqlite", "--listen 127.0.0.1:0"), 0);
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state '%s'", store);
    assert_int_equal(net_responder_start(&f, "vs-fleet", args), 0);
    char *out;
    int rc = CLI_RUN(&out, 120,
                     "load coap://127.0.0.1:%u --vs coap://127.0.0.1:%u --rounds 1 --peers 2 "
                     "--duration 1 --requests-per-peer 2 --method 3 --suites 2 --timeout 15",
                     s.port, f.port);
    assert_int_equal(net_proc_stop(&s, SIGTERM, 5000), 0);
    assert_int_equal(net_proc_stop(&f, SIGTERM, 5000), 0);
    if (rc != 0)
        fail_msg("load --vs: %d\n%s", rc, out);
    char want[200];
    snprintf(want, sizeof want, "| coap://127.0.0.1:%u | postgresql | ", f.port);
    const char *row = strstr(out, want);
    if (!row)
        fail_msg("no postgresql row:\n%s", out);
    /* The last cell of the row: round trips per handshake. */
    char line[600];
    size_t len = strcspn(row, "\n");
    snprintf(line, sizeof line, "%.*s", (int)len, row);
    char *cells[16], *save = NULL;
    int n = 0;
    for (char *c = strtok_r(line, "|", &save); c && n < 16; c = strtok_r(NULL, "|", &save))
        cells[n++] = c;
    if (n != 12)
        fail_msg("%d cells in the postgresql row:\n%s", n, out);
    double rt = atof(cells[10]);
    if (!(rt > 0 && rt <= 1))
        fail_msg("round trips per handshake '%s':\n%s", cells[10], out);
    if (strcmp(cells[11], " 0.0000 "))
        fail_msg("round trips per OSCORE request '%s':\n%s", cells[11], out);
    snprintf(want, sizeof want, "| coap://127.0.0.1:%u | default | ", s.port);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "| default / postgresql | "));
    assert_non_null(strstr(out, "Targets (issue 27): postgresql / default (SQLite)"));
    assert_non_null(strstr(out, "per OSCORE request on a cache hit 0.0000 (0 but a reservation "
                                "per 256 responses): met."));
    assert_null(strstr(out, "Targets (issue 24)"));
    free(out);
}

/* --daemon detaches after the store was opened: the child opens its own
 * connections and writer (a connection is never shared by two
 * processes), serves handshakes whose contexts reach the store, and
 * stops on SIGTERM. */
static void test_daemon_on_the_store(void **state)
{
    (void)state;
    char pidfile[300], ready[300];
    net_path(pidfile, sizeof pidfile, "fleetd.pid");
    net_path(ready, sizeof ready, "fleetd.ready");
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "responder --demo --listen 127.0.0.1:0 --daemon --pidfile %s --ready-file %s "
                     "--state \"%s\"",
                     pidfile, ready, store);
    if (rc != 0)
        fail_msg("responder --daemon: %d\n%s", rc, out);
    free(out);
    pid_t pid;
    unsigned port;
    net_wait_daemon(pidfile, ready, 30000, &pid, &port);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request \"GET /time\"", port);
    if (rc != 0 || !strstr(out, "2.05"))
        fail_msg("initiator against the daemon: %d\n%s", rc, out);
    free(out);
    /* Put by the detached process, under its own name. */
    wait_owned_rows(pid, 1);
    net_stop_daemon(pid, 30000);
}

/* The rows owned by the workers of supervisor pid (its children). */
static long workers_rows(long pid, int *n_workers)
{
    char path[100];
    snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", pid, pid);
    char *kids = net_read_file(path);
    long rows = 0;
    *n_workers = 0;
    for (char *t = kids ? strtok(kids, " \n") : NULL; t; t = strtok(NULL, " \n")) {
        long r = owned_rows(atol(t));
        if (r > 0)
            rows += r;
        ++*n_workers;
    }
    free(kids);
    return rows;
}

/* responder --workers 2 on the fleet's store: each worker is a member of
 * the fleet of its own (the supervisor checks the store and leaves it).
 * Devices run EDHOC with it (each with the worker its address hashes
 * to; the C_R's last byte names that worker, RFC 9528 Section 3.3 lets
 * the responder choose C_R), are served by it (the kid steers each
 * request to the worker holding the context: no Echo), then by another
 * responder (a takeover, with Echo: RFC 8613 Appendix B.1.2), then by it
 * again: the worker heard of the takeover from the store, dropped its
 * copy and takes the context back, Echo again. No (key, nonce) twice, no
 * request processed twice, over every capture. */
static void test_workers_on_the_store(void **state)
{
    (void)state;
    enum { N = 4 };
    static struct net_proc w, r;
    char args[1400], conf[N][300], name[40];
    snprintf(args, sizeof args, "--workers 2 --listen 127.0.0.1:0 --state '%s'", store);
    assert_int_equal(net_responder_start(&w, "wk", args), 0);
    snprintf(args, sizeof args, "--listen 127.0.0.2:0 --state '%s'", store);
    assert_int_equal(net_responder_start(&r, "wk-other", args), 0);
    for (int d = 0; d < N; d++) {
        snprintf(name, sizeof name, "wk-dev%d", d);
        device_handshake(&w, 1, name, conf[d], sizeof conf[d]);
    }
    int n_workers = 0;
    uint64_t deadline = net_now_ms() + 30000;
    while (workers_rows(w.pid, &n_workers) < N) {
        if (net_now_ms() > deadline) {
            char *log = net_read_file(w.log);
            fail_msg("the workers' contexts not in the store after 30 s (%d workers):\n%s",
                     n_workers, log);
        }
        net_sleep_ms(20);
    }
    assert_int_equal(n_workers, 2);
    static const struct {
        int addr;
        bool echo;
    } steps[] = {{1, false}, {2, true}, {1, true}};
    for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
        for (int d = 0; d < N; d++) {
            char *out;
            const struct net_proc *to = steps[k].addr == 1 ? &w : &r;
            int rc = CLI_RUN(&out, 30,
                             "coap GET coap://127.0.0.%d:%u/time --oscore-context %s --json "
                             "--pcap %s/wk-%d-%zu.pcap",
                             steps[k].addr, to->port, conf[d], net_dir, d, k);
            if (rc != 0 || !strstr(out, "2.05") ||
                (strstr(out, "\"echo\": true") != NULL) != steps[k].echo)
                fail_msg("device %d, step %zu (to 127.0.0.%d, Echo %s): %d\n%s", d, k,
                         steps[k].addr, steps[k].echo ? "expected" : "not expected", rc, out);
            free(out);
        }
    }
    assert_int_equal(net_proc_stop(&w, SIGTERM, 5000), 0);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    char *log = net_read_file(w.log);
    assert_int_equal(net_count(log, "state: the fleet's PostgreSQL store, as"), 1);
    assert_int_equal(net_count(log, "state: worker on the fleet's store as"), 2);
    if (net_count(log, "(the store's notice)") != N ||
        net_count(log, "taken from the postgresql store") != N)
        fail_msg("the workers: %d copies dropped at a notice, %d taken back (want %d each)",
                 net_count(log, "(the store's notice)"),
                 net_count(log, "taken from the postgresql store"), N);
    free(log);
    const char *confs[N];
    for (int d = 0; d < N; d++)
        confs[d] = conf[d];
    char files[N * 4][40];
    const char *fp[N * 4];
    size_t nf = 0;
    for (int d = 0; d < N; d++) {
        snprintf(files[nf], sizeof files[nf], "wk-dev%d-edhoc.pcap", d);
        fp[nf] = files[nf];
        nf++;
        for (size_t k = 0; k < 3; k++) {
            snprintf(files[nf], sizeof files[nf], "wk-%d-%zu.pcap", d, k);
            fp[nf] = files[nf];
            nf++;
        }
    }
    assert_true(check_nonces(confs, N, fp, nf) >= 3 * N);
}

/* (net_sh runs the line inside single quotes: double ones here.) */
/* What cannot work on a shared store is refused before anything starts,
 * each with the reason (exit 2, the usage contract of edhoc-cli(1)). */
static void test_refused_combinations(void **state)
{
    (void)state;
    char *out;
    int rc =
        CLI_RUN(&out, 30, "responder --demo --state \"%s\" --state-dir %s/x --listen 127.0.0.1:0",
                store, net_dir);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--state and --state-dir name the store twice"));
    free(out);
    rc = CLI_RUN(&out, 30, "responder --demo --state mysql://db --listen 127.0.0.1:0");
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "expected sqlite:DIR or a PostgreSQL"));
    free(out);
    /* A store out of reach, in libpq's key=value form: the responder does
     * not start (exit 3), and says which store and why. */
    rc = CLI_RUN(&out, 30,
                 "responder --demo --state \"host=%s/nowhere port=%d dbname=fleet\" "
                 "--listen 127.0.0.1:0",
                 net_dir, PG_CLUSTER_PORT);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "state: the PostgreSQL store"));
    free(out);
    /* A password on the command line: accepted, with a warning that
     * names the better places (libpq's password and service files). */
    rc = CLI_RUN(&out, 30,
                 "responder --demo --state \"postgresql://edhoc:secret@/fleet?host=%s/nowhere\" "
                 "--listen 127.0.0.1:0",
                 net_dir);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "warning: state: the PostgreSQL connection string holds a "
                                "password"));
    assert_non_null(strstr(out, "PGPASSFILE"));
    free(out);
    /* A static context (RFC 8613 Appendix B.2's kind, configured from a
     * file) on the fleet's store: refused. Its file is the authority on
     * its keys, and a responder without that file could not verify a
     * takeover of it; it belongs to the responder configured with it. */
    char conf[300];
    net_path(conf, sizeof conf, "static-fleet.conf");
    net_write_file(conf,
                   "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                   "master_salt,hex,\"9e7ca92223786340\"\n"
                   "sender_id,hex,\"01\"\nrecipient_id,hex,\"\"\n",
                   0600);
    rc = CLI_RUN(&out, 30,
                 "responder --demo --state \"%s\" --oscore-context %s --listen 127.0.0.1:0", store,
                 conf);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "--oscore-context with a PostgreSQL --state"));
    assert_non_null(strstr(out, "serve it from a responder with --state-dir"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_devices_served_by_every_responder, server_running,
                                        net_test_teardown),
        cmocka_unit_test_setup_teardown(test_replay_to_the_stale_owner, server_running,
                                        net_test_teardown),
        cmocka_unit_test_setup_teardown(test_two_responders_race, server_running,
                                        net_test_teardown),
        cmocka_unit_test_setup_teardown(test_store_restarted, server_running, net_test_teardown),
        cmocka_unit_test_setup_teardown(test_load_vs_fleet, server_running, net_test_teardown),
        cmocka_unit_test_setup_teardown(test_daemon_on_the_store, server_running,
                                        net_test_teardown),
        cmocka_unit_test_setup_teardown(test_workers_on_the_store, server_running,
                                        net_test_teardown),
        cmocka_unit_test_setup_teardown(test_refused_combinations, server_running,
                                        net_test_teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
