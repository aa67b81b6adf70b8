/*
 * OSCORE never sends two plaintexts under one (key, nonce), on any path of
 * the tool: `coap` runs one after another and at the same time, responder
 * restarts (graceful and kill -9, with an explicit and with the default
 * state directory), Observe registration and deregistration, the Echo
 * recovery; and a response to an OSCORE request that is not protected is
 * never taken for the answer.
 *
 * RFC 8613 Section 7.2: "An AEAD nonce MUST NOT be used more than once
 * per AEAD key" (the nonce is built from the Sender Sequence Number,
 * Section 5.2), and Section 7.5: an endpoint that resumes a context from
 * non-volatile memory "MUST NOT reuse a previous Sender Sequence Number
 * and MUST NOT accept previously received messages". Each scenario first
 * asserts the visible behaviour, and the pcaps of the whole program are
 * then fed to a checker (tests/nonce_check.c) that verifies every OSCORE
 * message's AEAD with the known keys and fails on two different
 * ciphertexts for one (key, nonce).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>

#include <dirent.h>

#include "net_test_util.h"
#include "nonce_check.h"

#define CLI_RUN(out, timeout_s, ...) net_cli_run(out, timeout_s, false, __VA_ARGS__)

static char client_conf[300], server_conf[300], client_state[300];

/* A static context pair of its own for each scenario (client Sender ID
 * empty, server Sender ID 01, RFC 8613 Appendix C.1.1's salt, a master
 * secret made from the name). One context served by two servers that do
 * not share their state repeats the server's nonces whatever either does,
 * so scenarios with responders of their own get contexts of their own. */
static void context_pair(const char *name)
{
    char secret[33], text[400];
    unsigned h = 2166136261u;
    for (const char *c = name; *c; c++)
        h = (h ^ (uint8_t)*c) * 16777619u;
    for (int i = 0; i < 4; i++)
        snprintf(secret + 8 * i, 9, "%08x", h * (unsigned)(i + 1) + 0x0102030u);
    snprintf(client_conf, sizeof client_conf, "%s/%s-client.conf", net_dir, name);
    snprintf(server_conf, sizeof server_conf, "%s/%s-server.conf", net_dir, name);
    snprintf(text, sizeof text,
             "master_secret,hex,\"%s\"\nmaster_salt,hex,\"9e7ca92223786340\"\n"
             "sender_id,hex,\"\"\nrecipient_id,hex,\"01\"\n",
             secret);
    net_write_file(client_conf, text, 0600);
    snprintf(text, sizeof text,
             "master_secret,hex,\"%s\"\nmaster_salt,hex,\"9e7ca92223786340\"\n"
             "sender_id,hex,\"01\"\nrecipient_id,hex,\"\"\n"
             /* Runs at the same time interleave their sequence numbers:
              * the widest window keeps the later ones from looking old
              * (RFC 8613 Section 7.4). */
             "replay_window,integer,64\n",
             secret);
    net_write_file(server_conf, text, 0600);
}

static int setup(void **state)
{
    (void)state;
    if (net_make_dir("nonce"))
        return -1;
    net_path(client_state, sizeof client_state, "client-state");
    return 0;
}

/* The numbers of "oscore_sequence_numbers": [...] in coap --json output. */
static size_t seq_numbers(const char *out, long *nums, size_t cap)
{
    const char *p = strstr(out, "\"oscore_sequence_numbers\": [");
    if (!p)
        fail_msg("no oscore_sequence_numbers in\n%s", out);
    p += strlen("\"oscore_sequence_numbers\": [");
    size_t n = 0;
    while (*p && *p != ']' && n < cap) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        nums[n++] = v;
        p = end;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return n;
}

/* A responder serving the static context, its datagrams in NAME.pcap. */
static void start_static_responder(struct net_proc *r, const char *name, const char *state_args)
{
    char args[1200], pcap[300];
    snprintf(pcap, sizeof pcap, "%s/%s.pcap", net_dir, name);
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --oscore-context %s --pcap %s %s",
             server_conf, pcap, state_args);
    assert_int_equal(net_responder_start(r, name, args), 0);
}

/* A scenario's own context pair and a responder serving it with its own
 * state directory NAME.state (extra: more responder options). */
static void start_scenario(struct net_proc *r, const char *name, const char *extra)
{
    char args[600];
    context_pair(name);
    snprintf(args, sizeof args, "--state-dir %s/%s.state %s", net_dir, name, extra);
    start_static_responder(r, name, args);
}

/* `coap GET /time` with the client context; stdout+stderr in *out. */
static int coap_get(char **out, uint16_t port, const char *extra)
{
    return CLI_RUN(out, 30,
                   "coap GET coap://127.0.0.1:%u/time --oscore-context %s --json "
                   "--state-dir %s --pcap %s/coap-%u-%ld.pcap %s",
                   port, client_conf, client_state, net_dir, port, (long)net_now_ms(),
                   extra ? extra : "");
}

/* Case 1: two runs without --seq. Before, both started at sequence number
 * 0 (OSCORE option 09 00 ...) and a correct server answered the second
 * with "4.01 Replay detected". */
static void test_coap_runs_continue(void **state)
{
    (void)state;
    static struct net_proc r;
    start_scenario(&r, "runs", "");
    char *out;
    long a[8], b[8];
    int rc = coap_get(&out, r.port, NULL);
    if (rc != 0)
        fail_msg("first run: %d\n%s", rc, out);
    size_t na = seq_numbers(out, a, 8);
    free(out);
    rc = coap_get(&out, r.port, NULL);
    if (rc != 0)
        fail_msg("second run (a reused sequence number is refused as a replay): %d\n%s", rc, out);
    size_t nb = seq_numbers(out, b, 8);
    free(out);
    assert_int_equal(na, 1);
    assert_int_equal(nb, 1);
    assert_true(b[0] > a[0]);

    /* --seq below a number already used is refused before anything is
     * sent (RFC 8613 Section 7.2). */
    rc = coap_get(&out, r.port, "--seq 0");
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "may already have been used"));
    free(out);
    /* --seq above is taken as given. */
    rc = coap_get(&out, r.port, "--seq 1000");
    if (rc != 0)
        fail_msg("--seq 1000: %d\n%s", rc, out);
    assert_int_equal(seq_numbers(out, a, 8), 1);
    assert_int_equal(a[0], 1000);
    free(out);

    /* libcoap's conf,seqfile: the seq file is kept in step with the state
     * directory (the next run from either continues above both). */
    char seqfile[300];
    net_path(seqfile, sizeof seqfile, "client.seq");
    rc = CLI_RUN(&out, 30,
                 "coap GET coap://127.0.0.1:%u/time --oscore-context %s,%s --json "
                 "--state-dir %s",
                 r.port, client_conf, seqfile, client_state);
    if (rc != 0)
        fail_msg("conf,seqfile: %d\n%s", rc, out);
    assert_int_equal(seq_numbers(out, a, 8), 1);
    assert_true(a[0] > 1000);
    free(out);
    char *num = net_read_file(seqfile);
    assert_non_null(num);
    assert_true(strtol(num, NULL, 10) > a[0]); /* libcoap's meaning: the next one to use */
    free(num);
    /* A damaged sequence-number file is refused, never guessed at. */
    net_write_file(seqfile, "12x\n", 0600);
    rc = CLI_RUN(&out, 30,
                 "coap GET coap://127.0.0.1:%u/time --oscore-context %s,%s "
                 "--state-dir %s",
                 r.port, client_conf, seqfile, client_state);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "not a sequence-number file"));
    free(out);
    /* --state-dir none without a seq file: the conf's companion CONF.seq,
     * written by every run above, still records the numbers, so the run
     * continues above them (issue 23: one record per keying material,
     * whatever files are named). */
    long before_none = a[0];
    rc = CLI_RUN(&out, 30,
                 "coap GET coap://127.0.0.1:%u/time --oscore-context %s --state-dir none "
                 "--json",
                 r.port, client_conf);
    if (rc != 0)
        fail_msg("--state-dir none: %d\n%s", rc, out);
    assert_int_equal(seq_numbers(out, a, 8), 1);
    assert_true(a[0] > before_none);
    free(out);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* Case 1, at the same time: runs sharing one context get disjoint
 * sequence numbers (the reservation happens under a lock). */
static void test_coap_parallel_runs(void **state)
{
    (void)state;
    static struct net_proc r;
    start_scenario(&r, "par", "");
    enum { RUNS = 6 };
    char cmd[8000], outs[RUNS][300];
    size_t len = 0;
    cmd[0] = '\0';
    for (int i = 0; i < RUNS; i++) {
        net_path(outs[i], sizeof outs[i], "par.out");
        snprintf(outs[i] + strlen(outs[i]), 8, ".%d", i);
        len += (size_t)snprintf(cmd + len, sizeof cmd - len,
                                "%s coap POST coap://127.0.0.1:%u/echo --payload run%d "
                                "--oscore-context %s --state-dir %s --json --repeat 3 > %s 2>&1 & ",
                                net_cli(), r.port, i, client_conf, client_state, outs[i]);
    }
    snprintf(cmd + len, sizeof cmd - len, "wait");
    char *out;
    assert_int_equal(net_sh(cmd, &out, 60), 0);
    free(out);
    long seen[RUNS * 8];
    size_t n_seen = 0;
    for (int i = 0; i < RUNS; i++) {
        char *o = net_read_file(outs[i]);
        assert_non_null(o);
        if (!strstr(o, "\"ok\": 2"))
            fail_msg("run %d:\n%s", i, o);
        long nums[8];
        size_t n = seq_numbers(o, nums, 8);
        assert_int_equal(n, 3);
        for (size_t k = 0; k < n; k++)
            seen[n_seen++] = nums[k];
        free(o);
    }
    for (size_t i = 0; i < n_seen; i++)
        for (size_t j = i + 1; j < n_seen; j++)
            if (seen[i] == seen[j])
                fail_msg("sequence number %ld used by two runs", seen[i]);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* The value of a sequence-number file (libcoap's seq_file: the next
 * number to use), -1 when absent. */
static long seq_file_value(const char *path)
{
    char *t = net_read_file(path);
    if (!t)
        return -1;
    long v = strtol(t, NULL, 10);
    free(t);
    return v;
}

/* Issue 23, 2(a): the continuation hint the initiator prints after
 * --export-oscore-conf FILE --state-dir DIR, followed verbatim (the
 * command line is taken from the output; only the program's own path is
 * put in front). It used to name FILE without DIR: coap then looked in the
 * default state directory, found nothing and sent Partial IV 0 again under
 * the key the initiator had used for its request (RFC 8613 Section 7.2:
 * "An AEAD nonce MUST NOT be used more than once per AEAD key"), which the
 * responder answered with an unprotected 4.01 "Replay detected" (Section
 * 7.4). The responder's capture goes to the nonce checker with FILE at
 * the end of this program. */
static void test_initiator_hint_followed(void **state)
{
    (void)state;
    static struct net_proc r;
    char sdir[300], args[600], conf[300], seq[320], hint_dir[300];
    net_path(sdir, sizeof sdir, "hint.state");
    net_path(conf, sizeof conf, "hint.conf");
    snprintf(seq, sizeof seq, "%s.seq", conf);
    /* Not the default state directory ($STATE_DIRECTORY = client-state). */
    net_path(hint_dir, sizeof hint_dir, "hint-client-state");
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state-dir %s --pcap %s/hint-r.pcap", sdir,
             net_dir);
    assert_int_equal(net_responder_start(&r, "hint", args), 0);
    char *out;
    int rc =
        CLI_RUN(&out, 30,
                "initiator coap://127.0.0.1:%u --request \"GET /time\" --export-oscore-conf %s "
                "--state-dir %s",
                r.port, conf, hint_dir);
    if (rc != 0)
        fail_msg("initiator: %d\n%s", rc, out);
    const char *hint = strstr(out, "  continue with: edhoc-cli ");
    if (!hint)
        fail_msg("no continuation hint in\n%s", out);
    hint += strlen("  continue with: edhoc-cli ");
    char line[1200];
    size_t n = strcspn(hint, "\n");
    assert_true(n < sizeof line);
    memcpy(line, hint, n);
    line[n] = '\0';
    /* The state directory this run recorded in is part of the hint. */
    assert_non_null(strstr(line, hint_dir));
    free(out);
    /* libcoap's seq_file: the initiator sent sequence number 0. */
    assert_int_equal(seq_file_value(seq), 1);
    rc = CLI_RUN(&out, 30, "%s", line);
    /* The hint's URI names PATH, a resource the responder does not have:
     * a protected 4.04 (exit 1) is the server accepting the request's
     * Partial IV; a reused one is refused before the resource is looked
     * up (exit 7, "Replay detected"). */
    if (rc != 1 || !strstr(out, "4.04 Not Found") || strstr(out, "Replay"))
        fail_msg("following '%s': exit %d\n%s", line, rc, out);
    free(out);
    /* The follower kept FILE.seq in step: coap-client -E FILE,FILE.seq
     * starts above what it sent. */
    assert_true(seq_file_value(seq) >= 2);
    /* Followed twice, it goes on (each run above the last). */
    rc = CLI_RUN(&out, 30, "%s --json", line);
    if (rc != 1 || strstr(out, "Replay"))
        fail_msg("following '%s' again: exit %d\n%s", line, rc, out);
    long nums[4];
    assert_int_equal(seq_numbers(out, nums, 4), 1);
    assert_true(nums[0] >= 2);
    free(out);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* Issue 23, 2(b): `coap --oscore-context CONF` and a sender that keeps
 * its numbers in CONF.seq alone (what `coap-client -E CONF,CONF.seq` does;
 * here edhoc-cli with --state-dir none and that seq file, which reads and
 * writes nothing else), in turn. coap did not write CONF.seq, so the
 * second sender started at 0 again, and coap then continued from its own
 * record only, below what the other had sent: two messages under one
 * nonce (RFC 8613 Section 7.2). Each must start above every number the
 * other used, and CONF.seq must always name the next free one. */
static void test_conf_and_seq_file_alternate(void **state)
{
    (void)state;
    static struct net_proc r;
    start_scenario(&r, "alt", "");
    char seq[320];
    snprintf(seq, sizeof seq, "%s.seq", client_conf);
    long last = -1;
    for (int round = 0; round < 4; round++) {
        char *out;
        int rc;
        if (round % 2 == 0)
            rc = CLI_RUN(&out, 30,
                         "coap GET coap://127.0.0.1:%u/time --oscore-context %s --json --pcap "
                         "%s/alt-%d.pcap",
                         r.port, client_conf, net_dir, round);
        else
            rc = CLI_RUN(&out, 30,
                         "coap GET coap://127.0.0.1:%u/time --oscore-context %s,%s --state-dir "
                         "none --json --pcap %s/alt-%d.pcap",
                         r.port, client_conf, seq, net_dir, round);
        if (rc != 0)
            fail_msg("round %d (a reused number is refused as a replay): %d\n%s", round, rc, out);
        long nums[4];
        assert_int_equal(seq_numbers(out, nums, 4), 1);
        free(out);
        if (nums[0] <= last)
            fail_msg("round %d sent sequence number %ld after %ld", round, nums[0], last);
        last = nums[0];
        assert_true(seq_file_value(seq) > last);
    }
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* A raw protected GET /time from the client context with sequence number
 * seq (the `oscore` command by hand), as datagram bytes. */
static size_t raw_request(unsigned seq, const char *coap_hex, uint8_t *msg, size_t cap)
{
    char *out;
    int rc = CLI_RUN(&out, 30, "oscore protect --context %s --role client --seq %u %s", client_conf,
                     seq, coap_hex);
    if (rc != 0)
        fail_msg("oscore protect: %d %s", rc, out);
    char hex[4096];
    size_t n = 0;
    for (const char *p = out; *p && n + 1 < sizeof hex && *p != '\n'; p++)
        if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))
            hex[n++] = *p;
    hex[n] = '\0';
    free(out);
    size_t len = 0;
    for (size_t i = 0; i + 1 < n && len < cap; i += 2) {
        unsigned v;
        sscanf(hex + i, "%2x", &v);
        msg[len++] = (uint8_t)v;
    }
    assert_true(len > 4);
    return len;
}

/* CON GET, MID 0x1234, token a1b2c3, Uri-Path "time". */
#define GET_TIME_HEX "43011234a1b2c3b474696d65"

/* Case 2: the responder with a static context and no --state-dir keeps
 * its state in the default directory. Before, it restarted with sender
 * sequence number 0 and an empty replay window: a replayed pre-restart
 * request was executed (2.04), and no Echo challenge came. */
static void test_responder_default_state(void **state)
{
    (void)state;
    static struct net_proc r;
    context_pair("dflt");
    start_static_responder(&r, "dflt", ""); /* STATE_DIRECTORY=<dir>/dflt.state */
    uint8_t old_req[512], resp[2048];
    size_t old_len = raw_request(900000, GET_TIME_HEX, old_req, sizeof old_req);
    long n = net_udp_exchange(r.port, old_req, old_len, resp, sizeof resp, 3000);
    assert_true(n > 4);
    assert_int_equal(resp[1], 0x44); /* 2.04: the outer code of an OSCORE response */
    char *out;
    int rc = coap_get(&out, r.port, "--seq 900001");
    if (rc != 0)
        fail_msg("before restart: %d\n%s", rc, out);
    free(out);
    assert_int_equal(net_proc_stop(&r, SIGKILL, 5000), 128 + SIGKILL);
    /* The same name: the same default state directory. */
    start_static_responder(&r, "dflt", "");
    /* RFC 8613 Appendix B.1.2: after a reboot the replay window is
     * unknown, so the first request gets an Echo challenge, and its retry
     * sets the window: the pre-restart request is then refused as a
     * replay (4.01, unprotected, Section 7.4) instead of executed. */
    rc = coap_get(&out, r.port, NULL);
    if (rc != 0)
        fail_msg("after restart: %d\n%s", rc, out);
    assert_non_null(strstr(out, "\"echo\": true"));
    free(out);
    n = net_udp_exchange(r.port, old_req, old_len, resp, sizeof resp, 3000);
    assert_true(n > 4);
    assert_int_equal(resp[1], 0x81);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);

    /* --state-dir none with a static context: refused, with the reason. */
    rc = CLI_RUN(&out, 30, "responder --listen 127.0.0.1:0 --oscore-context %s --state-dir none",
                 server_conf);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, "needs a state directory"));
    free(out);
}

/* Case 3: ending an observation. Before, libcoap resent the registration's
 * bytes (same Partial IV) with Observe = 1: the server refused it as a
 * replay and went on notifying. RFC 7641 Section 3.6: a client
 * deregisters with a GET carrying Observe = 1 and the registration's
 * token; RFC 8613 Section 4.1.3.5: as a new OSCORE request, so with a
 * new Partial IV. */
static void test_observe_deregistration(void **state)
{
    (void)state;
    static struct net_proc r;
    start_scenario(&r, "obs", "-v");
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "coap GET coap://127.0.0.1:%u/counter --observe 2 --oscore-context %s "
                     "--state-dir %s --json --pcap %s/obs-client.pcap",
                     r.port, client_conf, client_state, net_dir);
    if (rc != 0)
        fail_msg("observe: %d\n%s", rc, out);
    assert_non_null(strstr(out, "\"deregistered\": true"));
    long nums[8];
    size_t n = seq_numbers(out, nums, 8);
    assert_int_equal(n, 2); /* registration and deregistration */
    assert_true(nums[1] > nums[0]);
    free(out);
    net_sleep_ms(2500); /* two more periods of /counter */
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    char *log = net_read_file(r.log);
    assert_non_null(log);
    if (strstr(log, "replay"))
        fail_msg("the deregistration was taken for a replay:\n%s", log);
    assert_non_null(strstr(log, "observer deregistered"));
    free(log);
}

/* The responder stops notifying after a Reset to a notification
 * (RFC 7641 Section 3.6: "a client MAY ... reject a notification with a
 * Reset message"). */
static void test_observe_reset(void **state)
{
    (void)state;
    static struct net_proc r;
    start_scenario(&r, "rst", "-v");
    /* CON GET, token a1b2c3, Observe 0 (empty), Uri-Path "counter". */
    uint8_t reg[512], buf[2048];
    size_t len = raw_request(800000,
                             "43011234a1b2c360"
                             "57636f756e746572",
                             reg, sizeof reg);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    long n = net_udp_exchange_fd(fd, r.port, reg, len, buf, sizeof buf, 3000);
    assert_true(n > 4);
    assert_int_equal(buf[1], 0x45); /* 2.05 outer: an Observe response */
    /* The next notification (CON), answered with a Reset. */
    n = recv(fd, buf, sizeof buf, 0);
    assert_true(n > 4);
    assert_int_equal(buf[0] & 0x30, 0x00); /* CON */
    uint8_t rst[4] = {0x70, 0x00, buf[2], buf[3]};
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(r.port);
    assert_int_equal(sendto(fd, rst, 4, 0, (struct sockaddr *)&a, sizeof a), 4);
    /* Nothing more within two and a half periods. */
    struct timeval tv = {2, 500000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    n = recv(fd, buf, sizeof buf, 0);
    close(fd);
    if (n > 0)
        fail_msg("a notification after the Reset (%ld bytes, type %u)", n, (buf[0] >> 4) & 3);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* ---- Inner block-wise as an independent client sends it ----
 * Each block is a CoAP request made by hand and protected on its own with
 * `oscore protect` (RFC 8613 Section 4.1.3.4.1: "the Block options SHALL
 * be processed by OSCORE as normal Inner options"), sent from one UDP
 * socket, and each answer opened with `oscore unprotect`: nothing of our
 * client's block-wise code takes part. */

/* POST /echo, token a1b2c3d4, Block1 (num, more, 16-byte blocks), an Echo
 * option when echo_hex is given, payload 16 bytes of 'b'. */
static void block1_hex(unsigned mid, unsigned num, bool more, const char *echo_hex, char *out,
                       size_t cap)
{
    unsigned v = num << 4 | (more ? 8u : 0u);
    char echo_opt[100] = "";
    if (echo_hex) {
        size_t el = strlen(echo_hex) / 2;
        /* Echo (252) after Block1 (27): delta 225 = 13 + 0xd4. */
        snprintf(echo_opt, sizeof echo_opt, "%02xd4%s", (unsigned)(0xd0 | el), echo_hex);
    }
    /* A new Message ID each: the same one again within EXCHANGE_LIFETIME
     * is a duplicate and gets the earlier answer (RFC 7252 Section 4.5). */
    snprintf(out, cap, "4402%04xa1b2c3d4b46563686fd103%02x%sff%s", mid & 0xffff, v, echo_opt,
             "62626262626262626262626262626262");
}

static void protect_hex(unsigned seq, const char *plain, char *out, size_t cap)
{
    char *o;
    int rc = CLI_RUN(&o, 30, "oscore protect --context %s --seq %u %s", client_conf, seq, plain);
    if (rc != 0)
        fail_msg("oscore protect: %d %s", rc, o);
    size_t n = strcspn(o, "\n");
    if (n >= cap)
        fail_msg("protected request too long");
    memcpy(out, o, n);
    out[n] = '\0';
    free(o);
}

/* Send the protected request (hex), receive one answer, open it: the
 * inner message's JSON from `oscore unprotect --json`. */
static char *exchange_open(int fd, uint16_t port, const char *req_hex)
{
    uint8_t req[512], resp[2048];
    size_t n = 0;
    for (size_t i = 0; req_hex[i] && req_hex[i + 1] && n < sizeof req; i += 2) {
        unsigned v;
        sscanf(req_hex + i, "%2x", &v);
        req[n++] = (uint8_t)v;
    }
    long rn = net_udp_exchange_fd(fd, port, req, n, resp, sizeof resp, 3000);
    if (rn <= 4)
        fail_msg("no answer to %s", req_hex);
    char resp_hex[4200];
    for (long i = 0; i < rn; i++)
        snprintf(resp_hex + 2 * i, 3, "%02x", resp[i]);
    char *o;
    int rc = CLI_RUN(&o, 30, "oscore unprotect --context %s --request %s --json %s", client_conf,
                     req_hex, resp_hex);
    if (rc != 0)
        fail_msg("oscore unprotect of the answer to %s: %d %s (answer %s)", req_hex, rc, o,
                 resp_hex);
    return o;
}

static void test_inner_block1_by_hand(void **state)
{
    (void)state;
    static struct net_proc r;
    start_scenario(&r, "byhand", "");
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    char plain[300], req[700];
    /* RFC 7959 Section 2.3: each block but the last is answered 2.31
     * Continue with its Block1; the last one gets the final response,
     * here /echo's 2.04 with the whole 48-byte body. */
    static const char *const want[] = {"\"code\": \"2.31\"", "\"code\": \"2.31\"",
                                       "\"code\": \"2.04\""};
    for (unsigned k = 0; k < 3; k++) {
        block1_hex(0x100 + k, k, k < 2, NULL, plain, sizeof plain);
        protect_hex(600000 + k, plain, req, sizeof req);
        char *o = exchange_open(fd, r.port, req);
        if (!strstr(o, want[k]))
            fail_msg("block %u: %s", k, o);
        if (k == 2) {
            char body[120];
            for (int i = 0; i < 48; i++)
                memcpy(body + 2 * i, "62", 2);
            body[96] = '\0';
            assert_non_null(strstr(o, body));
            assert_non_null(
                strstr(o, "\"name\": \"Block1\",\n        \"value_hex\": \"20\"")); /* 2, M 0 */
        }
        free(o);
    }

    /* A restart in the middle of a transfer (kill -9 after block 0): the
     * next block meets the Echo challenge of RFC 8613 Appendix B.1.2, and
     * its retry with that Echo finds no transfer to continue: 4.08
     * Request Entity Incomplete (RFC 7959 Section 2.9.2). */
    block1_hex(0x110, 0, true, NULL, plain, sizeof plain);
    protect_hex(600010, plain, req, sizeof req);
    char *o = exchange_open(fd, r.port, req);
    assert_non_null(strstr(o, "\"code\": \"2.31\""));
    free(o);
    assert_int_equal(net_proc_stop(&r, SIGKILL, 5000), 128 + SIGKILL);
    char args[600], pcap[300];
    snprintf(pcap, sizeof pcap, "%s/byhand2.pcap", net_dir);
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:%u --oscore-context %s --pcap %s --state-dir %s/byhand.state",
             r.port, server_conf, pcap, net_dir);
    assert_int_equal(net_responder_start(&r, "byhand2", args), 0);
    block1_hex(0x111, 1, true, NULL, plain, sizeof plain);
    protect_hex(600011, plain, req, sizeof req);
    o = exchange_open(fd, r.port, req);
    assert_non_null(strstr(o, "\"code\": \"4.01\""));
    const char *e = strstr(o, "\"name\": \"Echo\",\n        \"value_hex\": \"");
    assert_non_null(e);
    e += strlen("\"name\": \"Echo\",\n        \"value_hex\": \"");
    char echo[80];
    size_t el = strcspn(e, "\"");
    assert_true(el > 0 && el < sizeof echo && el <= 24);
    memcpy(echo, e, el);
    echo[el] = '\0';
    free(o);
    block1_hex(0x112, 1, true, echo, plain, sizeof plain);
    protect_hex(600012, plain, req, sizeof req);
    o = exchange_open(fd, r.port, req);
    if (!strstr(o, "\"code\": \"4.08\""))
        fail_msg("continuation after the restart: %s", o);
    free(o);
    close(fd);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* A server that answers every datagram with an unprotected ACK 2.05
 * "fake", as an on-path attacker could. */
struct fake_server {
    int fd;
    uint16_t port;
    pthread_t thread;
};

static void *fake_serve(void *arg)
{
    struct fake_server *f = arg;
    uint8_t buf[2048];
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    long n = recvfrom(f->fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
    if (n < 4)
        return NULL;
    size_t tkl = buf[0] & 0x0f;
    uint8_t resp[32] = {(uint8_t)(0x60 | tkl), 0x45, buf[2], buf[3]};
    memcpy(resp + 4, buf + 4, tkl);
    size_t len = 4 + tkl;
    resp[len++] = 0xff;
    memcpy(resp + len, "fake", 4);
    len += 4;
    sendto(f->fd, resp, len, 0, (struct sockaddr *)&from, fl);
    return NULL;
}

/* Case 4: RFC 8613 Section 8.4: the client verifies the response; a 2.05
 * without the OSCORE option is not the answer to an OSCORE request. Before,
 * `coap` printed it and exited 0. */
static void test_unprotected_answer_refused(void **state)
{
    (void)state;
    struct fake_server f;
    context_pair("fake");
    f.fd = net_silent_socket(&f.port);
    assert_true(f.fd >= 0);
    struct timeval tv = {10, 0};
    setsockopt(f.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    assert_int_equal(pthread_create(&f.thread, NULL, fake_serve, &f), 0);
    char *out;
    int rc = coap_get(&out, f.port, "--timeout 5");
    pthread_join(f.thread, NULL);
    close(f.fd);
    assert_int_equal(rc, 7);
    assert_non_null(strstr(out, "the peer answered without OSCORE: 2.05 Content: fake"));
    free(out);
}

/* Restarts while a client observes: graceful (SIGTERM) and kill -9, with
 * an explicit state directory. The notifications before and after each
 * restart carry the server's Partial IVs under one key: RFC 8613
 * Appendix B.1.1 (a mark stored before use) keeps them apart, and the
 * first request after each restart goes through the Echo challenge of
 * Appendix B.1.2. The checker below proves no Partial IV repeated. */
static void test_restarts_while_observing(void **state)
{
    (void)state;
    static struct net_proc r;
    char sdir[300], args[400];
    context_pair("restart");
    net_path(sdir, sizeof sdir, "restart.state");
    snprintf(args, sizeof args, "--state-dir %s", sdir);
    const int kill_signals[] = {SIGTERM, SIGKILL};
    for (int round = 0; round < 3; round++) {
        char name[32];
        snprintf(name, sizeof name, "restart%d", round);
        start_static_responder(&r, name, args);
        char *out;
        int rc = coap_get(&out, r.port, NULL);
        if (rc != 0)
            fail_msg("round %d: %d\n%s", round, rc, out);
        if (round > 0)
            assert_non_null(strstr(out, "\"echo\": true")); /* the window was unknown */
        free(out);
        char bg[1500], obs_out[300];
        snprintf(obs_out, sizeof obs_out, "%s/%s.observe", net_dir, name);
        snprintf(bg, sizeof bg,
                 "%s coap GET coap://127.0.0.1:%u/counter --observe 100 --oscore-context %s "
                 "--state-dir %s --json --timeout 4 --pcap %s/%s-observer.pcap > %s 2>&1 &",
                 net_cli(), r.port, client_conf, client_state, net_dir, name, obs_out);
        assert_int_equal(system(bg), 0);
        net_sleep_ms(2300); /* two notifications */
        if (round < 2) {
            int sig = kill_signals[round];
            assert_int_equal(net_proc_stop(&r, sig, 5000), sig == SIGTERM ? 0 : 128 + SIGKILL);
        }
        net_sleep_ms(2000); /* the observer gives up */
        char *obs = net_read_file(obs_out);
        assert_non_null(obs);
        if (!strstr(obs, "\"piv\": 1") && !strstr(obs, "\"piv\": 2") && round == 0)
            fail_msg("round %d: no notification:\n%s", round, obs);
        free(obs);
    }
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* The RFC 9668 combined request and EDHOC-derived contexts continued by
 * `coap`: each handshake exports its context (--export-oscore-conf, with
 * the sequence numbers it used recorded), `coap` continues above them,
 * also after the responder restarted (the context comes back from its
 * state, the first request meets an Echo challenge). */
static void test_combined_and_continued(void **state)
{
    (void)state;
    static struct net_proc r;
    char sdir[300], args[600], pcap[300];
    net_path(sdir, sizeof sdir, "edhoc.state");
    net_path(pcap, sizeof pcap, "edhoc-r0.pcap");
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state-dir %s --pcap %s", sdir, pcap);
    assert_int_equal(net_responder_start(&r, "edhoc0", args), 0);
    char conf[3][300];
    for (int i = 0; i < 3; i++) {
        snprintf(conf[i], sizeof conf[i], "%s/combined-%d.conf", net_dir, i);
        char *out;
        int rc = CLI_RUN(&out, 30,
                         "initiator coap://127.0.0.1:%u --combined --request \"POST /echo c%d\" "
                         "--request \"GET /time\" --export-oscore-conf %s --pcap "
                         "%s/combined-%d.pcap --json",
                         r.port, i, conf[i], net_dir, i);
        if (rc != 0 || !strstr(out, "\"outcome\": \"ok\""))
            fail_msg("combined handshake %d: %d\n%s", i, rc, out);
        free(out);
        /* RFC 9668 Section 3.2: the combined request is the first OSCORE
         * request (sequence number 0); coap continues above both. */
        rc = CLI_RUN(&out, 30,
                     "coap GET coap://127.0.0.1:%u/time --oscore-context %s --json --pcap "
                     "%s/combined-%d-coap.pcap",
                     r.port, conf[i], net_dir, i);
        if (rc != 0)
            fail_msg("coap with the exported context %d: %d\n%s", i, rc, out);
        long nums[4];
        assert_int_equal(seq_numbers(out, nums, 4), 1);
        assert_true(nums[0] >= 2);
        free(out);
    }
    assert_int_equal(net_proc_stop(&r, SIGKILL, 5000), 128 + SIGKILL);
    net_path(pcap, sizeof pcap, "edhoc-r1.pcap");
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state-dir %s --pcap %s", sdir, pcap);
    assert_int_equal(net_responder_start(&r, "edhoc1", args), 0);
    char *out;
    int rc = CLI_RUN(&out, 30,
                     "coap POST coap://127.0.0.1:%u/echo --payload after --oscore-context %s "
                     "--json --pcap %s/combined-after.pcap",
                     r.port, conf[1], net_dir);
    if (rc != 0)
        fail_msg("after the restart: %d\n%s", rc, out);
    assert_non_null(strstr(out, "\"echo\": true"));
    free(out);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* Issue 23 item 3: a lost -wal or a restored stale .sqlite must not
 * bring back old marks (RFC 8613 Appendix B.1.1: "F MUST be set so that
 * the last Sender Sequence Number used before reboot is never larger than
 * SSN2"; docs/DESIGN.md "A store that went backwards"). The responder's
 * Echo challenge after each restart is sealed with its own Partial IV
 * (Appendix B.1.2), from its mark. Run 1 uses Partial IV 0 and stores the
 * mark 32, is killed with -9, and its -wal is deleted: before, run 2
 * came back at mark 0 and sealed another Echo challenge under Partial IV
 * 0 again (the checker below saw it). Now run 2 says what it found and
 * where the marks went, and so does run 3 after the database file is
 * replaced by a copy taken before run 1. */
static void test_lost_wal_and_stale_copy(void **state)
{
    (void)state;
    static struct net_proc r;
    char sdir[300], args[400], db[400], side[420], old[300], want[600];
    static char log_wrong[8192];
    log_wrong[0] = '\0';
    context_pair("lostwal");
    net_path(sdir, sizeof sdir, "lostwal.state");
    net_path(old, sizeof old, "lostwal-old.sqlite");
    snprintf(db, sizeof db, "%s/edhoc-cli-state.sqlite", sdir);
    snprintf(args, sizeof args, "--state-dir %s", sdir);
    for (int run = 0; run < 4; run++) {
        char name[32];
        snprintf(name, sizeof name, "lostwal%d", run);
        if (run == 2 || run == 3) {
            snprintf(side, sizeof side, "%s-wal", db);
            unlink(side);
            snprintf(side, sizeof side, "%s-shm", db);
            unlink(side);
        }
        if (run == 3) {
            char *data = NULL;
            char cmd[800];
            snprintf(cmd, sizeof cmd, "cp %s %s", old, db);
            assert_int_equal(net_sh(cmd, &data, 10), 0);
            free(data);
        }
        start_static_responder(&r, name, args);
        char *log = net_read_file(r.log);
        assert_non_null(log);
        snprintf(want, sizeof want,
                 "warning: state: %s: the database is older than its mark file (generation ", db);
        /* The ceiling: the first mark (32) plus 65536; run 2's first mark
         * above it (65568 + 32) moved it on by 65536 again. */
        char moved[200];
        snprintf(moved, sizeof moved,
                 "its -wal was lost or the file was restored from a copy; every sender "
                 "sequence-number mark moved up to %u (",
                 run == 2 ? 65568u : 131136u);
        bool said = strstr(log, want) && strstr(log, moved);
        /* Judged after the nonce check, so that a store that went back
         * shows as the reused nonces it causes. */
        if (said != (run >= 2) && !log_wrong[0])
            snprintf(log_wrong, sizeof log_wrong, "run %d: log\n%s", run, log);
        free(log);
        char *out;
        int rc = coap_get(&out, r.port, NULL);
        if (rc != 0)
            fail_msg("run %d: %d\n%s", run, rc, out);
        assert_int_equal(strstr(out, "\"echo\": true") != NULL, run > 0);
        free(out);
        if (run == 0) {
            assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
            char *data = NULL;
            char cmd[800];
            snprintf(cmd, sizeof cmd, "cp %s %s", db, old);
            assert_int_equal(net_sh(cmd, &data, 10), 0);
            free(data);
        } else {
            assert_int_equal(net_proc_stop(&r, SIGKILL, 5000), 128 + SIGKILL);
        }
    }
    struct nonce_check *nc = nonce_check_new();
    char why[512], path[400];
    assert_int_equal(nonce_check_add_context_file(nc, server_conf, why, sizeof why), 0);
    assert_int_equal(nonce_check_add_context_file(nc, client_conf, why, sizeof why), 0);
    for (int run = 0; run < 4; run++) {
        snprintf(path, sizeof path, "%s/lostwal%d.pcap", net_dir, run);
        if (nonce_check_add_pcap(nc, path, why, sizeof why))
            fprintf(stderr, "# %s\n", why); /* cut by kill -9: counts up to the cut */
    }
    const struct nonce_check_report *rep = nonce_check_report(nc);
    if (rep->n_violations) {
        nonce_check_print(nc, stderr);
        fail_msg("%zu (key, nonce) pairs sealed two different messages", rep->n_violations);
    }
    /* RFC 8613 Section 7.4: across the restarts, no request processed
     * twice (two different successes to one request). */
    if (rep->accepted_twice) {
        nonce_check_print(nc, stderr);
        fail_msg("%u requests processed twice", rep->accepted_twice);
    }
    assert_true(rep->responses >= 4);
    assert_int_equal(rep->unattributed, 0);
    nonce_check_free(nc);
    if (log_wrong[0])
        fail_msg("%s", log_wrong);
}

/* A context printed by --export-secrets and pasted into a conf file, as
 * users do: the initiator recorded the sequence numbers it sent, so coap
 * continues above them (RFC 8613 Section 7.2) without being told. */
static void test_export_secrets_continued(void **state)
{
    (void)state;
    static struct net_proc r;
    char sdir[300], args[600], pcap[300];
    net_path(sdir, sizeof sdir, "pasted.state");
    net_path(pcap, sizeof pcap, "pasted-r.pcap");
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state-dir %s --pcap %s", sdir, pcap);
    assert_int_equal(net_responder_start(&r, "pasted", args), 0);
    char *out;
    int rc =
        CLI_RUN(&out, 30,
                "initiator coap://127.0.0.1:%u --request \"GET /time\" --request \"GET /time\" "
                "--export-secrets --json --pcap %s/pasted-i.pcap",
                r.port, net_dir);
    if (rc != 0)
        fail_msg("initiator: %d\n%s", rc, out);
    char conf[300];
    net_path(conf, sizeof conf, "pasted.conf");
    net_write_exported_context(out, conf);
    free(out);
    rc = CLI_RUN(&out, 30,
                 "coap GET coap://127.0.0.1:%u/time --oscore-context %s --json --pcap "
                 "%s/pasted-coap.pcap",
                 r.port, conf, net_dir);
    if (rc != 0)
        fail_msg("coap with the pasted context: %d\n%s", rc, out);
    long nums[4];
    assert_int_equal(seq_numbers(out, nums, 4), 1);
    assert_true(nums[0] >= 2); /* the initiator sent 0 and 1 */
    free(out);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Group commit (issue 24): a new EDHOC-derived context is not waited for
 * before message_2/4 or its first OSCORE responses; its row, with its
 * first block of sequence numbers, is committed with the next batch. Here
 * the batches are held open (EDHOC_TEST_STATE_BATCH_MS) and the responder
 * is killed right after three devices' handshakes and first requests:
 * their contexts were never on disk, so after the restart each device's
 * request finds none (4.01 "Security context not found", RFC 8613
 * Section 8.2 step 2), each recovers by a new handshake, and no (key,
 * nonce) pair was used twice: the keys the responder lost are gone with
 * it, so nothing can send under them again. */
static void test_kill9_loses_newest_contexts(void **state)
{
    (void)state;
    static struct net_proc r;
    char sdir[300], args[700], pcap[300];
    net_path(sdir, sizeof sdir, "newest.state");
    net_path(pcap, sizeof pcap, "newest-r0.pcap");
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state-dir %s --pcap %s", sdir, pcap);
    setenv("EDHOC_TEST_STATE_BATCH_MS", "600000", 1);
    int started = net_responder_start(&r, "newest0", args);
    unsetenv("EDHOC_TEST_STATE_BATCH_MS");
    assert_int_equal(started, 0);
    enum { DEVICES = 3 };
    char conf[DEVICES][300];
    for (int d = 0; d < DEVICES; d++) {
        char *out;
        int rc = CLI_RUN(&out, 30,
                         "initiator coap://127.0.0.1:%u --request \"GET /time\" "
                         "--export-secrets --json --pcap %s/newest-i%d.pcap",
                         r.port, net_dir, d);
        if (rc != 0)
            fail_msg("device %d: initiator: %d\n%s", d, rc, out);
        char name[40];
        snprintf(name, sizeof name, "newest%d.conf", d);
        net_path(conf[d], sizeof conf[d], name);
        net_write_exported_context(out, conf[d]);
        free(out);
    }
    assert_int_equal(net_proc_stop(&r, SIGKILL, 5000), 128 + SIGKILL);

    net_path(pcap, sizeof pcap, "newest-r1.pcap");
    snprintf(args, sizeof args, "--listen 127.0.0.1:%u --state-dir %s --pcap %s", r.port, sdir,
             pcap);
    assert_int_equal(net_responder_start(&r, "newest1", args), 0);
    char *log = net_read_file(r.log);
    /* None of the three reached the disk. */
    if (!strstr(log, "0 stored contexts loaded"))
        fail_msg("after kill -9: %s", log);
    free(log);
    /* Every device first: a new handshake may be given the C_R (so the
     * kid) a lost context had, and a request under that kid would then
     * fail to decrypt (4.00) rather than find no context. */
    for (int d = 0; d < DEVICES; d++) {
        char *out;
        int rc = CLI_RUN(&out, 30,
                         "coap GET coap://127.0.0.1:%u/time --oscore-context %s --json --pcap "
                         "%s/newest-c%d.pcap",
                         r.port, conf[d], net_dir, d);
        if (!strstr(out, "4.01") || !strstr(out, "Security context not found"))
            fail_msg("device %d after the restart: %d\n%s", d, rc, out);
        free(out);
    }
    for (int d = 0; d < DEVICES; d++) {
        char *out;
        int rc;
        /* The device's way back: a new handshake, new keys. */
        rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --request \"GET /time\" --export-secrets "
                     "--json --pcap %s/newest-j%d.pcap",
                     r.port, net_dir, d);
        if (rc != 0 || !strstr(out, "2.05"))
            fail_msg("device %d: new handshake: %d\n%s", d, rc, out);
        char name[40], again[300];
        snprintf(name, sizeof name, "newest%d-again.conf", d);
        net_path(again, sizeof again, name);
        net_write_exported_context(out, again);
        free(out);
    }
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    /* Stopped cleanly, the responder committed the new contexts. */
    log = net_read_file(r.log);
    if (!strstr(log, "state writer: ") || strstr(log, "failed: "))
        fail_msg("%s", log);
    free(log);

    struct nonce_check *nc = nonce_check_new();
    char why[512], path[400];
    for (int d = 0; d < DEVICES; d++) {
        char again[300], name[40];
        assert_int_equal(nonce_check_add_context_file(nc, conf[d], why, sizeof why), 0);
        snprintf(name, sizeof name, "newest%d-again.conf", d);
        net_path(again, sizeof again, name);
        assert_int_equal(nonce_check_add_context_file(nc, again, why, sizeof why), 0);
    }
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/newest-r%d.pcap", net_dir, k);
        if (nonce_check_add_pcap(nc, path, why, sizeof why))
            fprintf(stderr, "# %s\n", why); /* cut by kill -9: counts up to the cut */
    }
    const struct nonce_check_report *rep = nonce_check_report(nc);
    if (rep->n_violations) {
        nonce_check_print(nc, stderr);
        fail_msg("%zu (key, nonce) pairs sealed two different messages", rep->n_violations);
    }
    /* RFC 8613 Section 7.4: across the restarts, no request processed
     * twice (two different successes to one request). */
    if (rep->accepted_twice) {
        nonce_check_print(nc, stderr);
        fail_msg("%u requests processed twice", rep->accepted_twice);
    }
    /* Both ends of three first runs and three second runs. */
    assert_true(rep->responses >= 2 * DEVICES);
    assert_int_equal(rep->unattributed, 0);
    nonce_check_free(nc);
}

/* Last: every capture this program made, both ends, every scenario above,
 * through the checker with every context file. It must have seen OSCORE
 * messages (a checker that saw nothing proves nothing) and attributed
 * them to known keys. */
static void test_zz_no_nonce_reused(void **state)
{
    (void)state;
    struct nonce_check *nc = nonce_check_new();
    assert_non_null(nc);
    char why[512];
    DIR *d = opendir(net_dir);
    assert_non_null(d);
    struct dirent *e;
    unsigned pcaps = 0, confs = 0;
    while ((e = readdir(d))) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", net_dir, e->d_name);
        if (ends_with(e->d_name, ".conf")) {
            if (nonce_check_add_context_file(nc, path, why, sizeof why))
                fail_msg("%s", why);
            confs++;
        } else if (ends_with(e->d_name, ".pcap")) {
            /* A capture cut by kill -9 still counts up to the cut. */
            if (nonce_check_add_pcap(nc, path, why, sizeof why))
                fprintf(stderr, "# %s\n", why);
            pcaps++;
        }
    }
    closedir(d);
    const struct nonce_check_report *r = nonce_check_report(nc);
    printf("# nonce check: %u captures, %u context files, %u OSCORE messages (%u requests, %u "
           "responses), %u attributed to a known key, %u unattributed, %zu distinct (key, nonce), "
           "%u repeats of one datagram, %zu violations, %u requests processed twice\n",
           pcaps, confs, r->oscore, r->requests, r->responses, r->attributed, r->unattributed,
           r->distinct_pairs, r->repeats, r->n_violations, r->accepted_twice);
    if (r->n_violations) {
        nonce_check_print(nc, stderr);
        fail_msg("%zu (key, nonce) pairs sealed two different messages", r->n_violations);
    }
    if (r->accepted_twice) {
        nonce_check_print(nc, stderr);
        fail_msg("%u requests processed twice (RFC 8613 Section 7.4)", r->accepted_twice);
    }
    assert_true(r->oscore > 50);
    assert_int_equal(r->unattributed, 0); /* every message verified under a known key */
    nonce_check_free(nc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_coap_runs_continue, net_test_teardown),
        cmocka_unit_test_teardown(test_coap_parallel_runs, net_test_teardown),
        cmocka_unit_test_teardown(test_initiator_hint_followed, net_test_teardown),
        cmocka_unit_test_teardown(test_conf_and_seq_file_alternate, net_test_teardown),
        cmocka_unit_test_teardown(test_responder_default_state, net_test_teardown),
        cmocka_unit_test_teardown(test_observe_deregistration, net_test_teardown),
        cmocka_unit_test_teardown(test_observe_reset, net_test_teardown),
        cmocka_unit_test_teardown(test_unprotected_answer_refused, net_test_teardown),
        cmocka_unit_test_teardown(test_inner_block1_by_hand, net_test_teardown),
        cmocka_unit_test_teardown(test_restarts_while_observing, net_test_teardown),
        cmocka_unit_test_teardown(test_combined_and_continued, net_test_teardown),
        cmocka_unit_test_teardown(test_lost_wal_and_stale_copy, net_test_teardown),
        cmocka_unit_test_teardown(test_export_secrets_continued, net_test_teardown),
        cmocka_unit_test_teardown(test_kill9_loses_newest_contexts, net_test_teardown),
        cmocka_unit_test_teardown(test_zz_no_nonce_reused, net_test_teardown),
    };
    return cmocka_run_group_tests(tests, setup, net_group_teardown);
}
