/*
 * End-to-end tests of the responder's bounded state (issue #15, "Bounded
 * state with a policy" and "Constant-time lookups"): --max-contexts evicts
 * the least recently used context, whose peer then gets 4.01 "Security
 * context not found" (RFC 8613 Section 8.2 step 2) and runs EDHOC again;
 * --context-lifetime expires idle contexts; both hold in the state
 * directory across a restart (rows deleted with their marks, at most N
 * loaded, the most recently used); static contexts stay; a full pending
 * table still serves a legitimate handshake (A.2 by C_R, bare framing by
 * address), and C_R goes to two bytes only when every one-byte value is
 * taken. Counts come from the SIGUSR1 stats line; the state file is read
 * with the sqlite3 program when it is installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <time.h>

#include "net_test_util.h"
#include "vectors.h"

#define CLI_RUN(out, timeout_s, ...) net_cli_run(out, timeout_s, false, __VA_ARGS__)

static bool have_sqlite3;

static int setup(void **state)
{
    (void)state;
    char *out = NULL;
    have_sqlite3 = net_sh("command -v sqlite3", &out, 10) == 0;
    free(out);
    if (!have_sqlite3)
        fprintf(stderr, "# sqlite3 not installed: the state file is checked through the "
                        "responder's log only\n");
    return net_make_dir("limits");
}

/* ---- Helpers ---- */

/* A handshake as `edhoc-cli initiator` runs it, the client's side of the
 * new context written to DIR/name (libcoap format). Returns its sender ID
 * (= our C_R, the responder's Recipient ID) in hex into rid. */
static void establish(uint16_t port, const char *name, char *rid, size_t rid_cap)
{
    char conf[300], *out;
    net_path(conf, sizeof conf, name);
    int rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --request none --json "
                     "--export-secrets --export-oscore-conf %s",
                     port, conf);
    if (rc != 0 || !strstr(out, "\"outcome\": \"ok\""))
        fail_msg("initiator %s failed (%d):\n%s", name, rc, out);
    net_json_str(out, "sender_id", rid, rid_cap);
    free(out);
}

/* `coap GET /time` with the context in DIR/name. Returns the CoAP code
 * ("2.05", "4.01", ...) of the last response into code; out kept for more
 * checks (free it). */
static int get_time(uint16_t port, const char *name, char *code, size_t cap, char **out)
{
    char conf[300];
    net_path(conf, sizeof conf, name);
    int rc = CLI_RUN(out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s --json", port,
                     conf);
    const char *last = NULL;
    for (const char *p = *out; (p = strstr(p, "\"code\": \"")); p++)
        last = p;
    snprintf(code, cap, "none");
    if (last)
        net_json_str(last, "code", code, cap);
    return rc;
}

/* RFC 8613 Section 8.2 step 2: a context the server no longer has is
 * "Security context not found", 4.01, not protected. */
static void expect_not_found(uint16_t port, const char *name)
{
    char code[16], *out;
    get_time(port, name, code, sizeof code, &out);
    if (strcmp(code, "4.01") || !strstr(out, "Security context not found") ||
        !strstr(out, "\"oscore\": false"))
        fail_msg("%s: expected 4.01 Security context not found, got %s:\n%s", name, code, out);
    free(out);
}

static void expect_content(uint16_t port, const char *name)
{
    char code[16], *out;
    int rc = get_time(port, name, code, sizeof code, &out);
    if (rc != 0 || strcmp(code, "2.05") || !strstr(out, "\"oscore\": true"))
        fail_msg("%s: expected 2.05 under OSCORE, got %s (%d):\n%s", name, code, rc, out);
    free(out);
}

/* Ask the responder for its counts (SIGUSR1) and return its line about
 * contexts and handshakes (other lines may follow it). */
static char *stats_line(struct net_proc *r)
{
    char *log = net_read_file(r->log);
    int before = log ? net_count(log, "SIGUSR1: contexts=") : 0;
    free(log);
    kill(r->pid, SIGUSR1);
    for (uint64_t end = net_now_ms() + 10000; net_now_ms() < end; net_sleep_ms(20)) {
        log = net_read_file(r->log);
        if (log && net_count(log, "SIGUSR1: contexts=") > before) {
            const char *last = log;
            for (const char *p = log; (p = strstr(p, "SIGUSR1: contexts=")); p++)
                last = p;
            size_t n = strcspn(last, "\n");
            char *line = strndup(last, n);
            free(log);
            return line;
        }
        free(log);
    }
    fail_msg("no SIGUSR1 stats line in %s", r->log);
    return NULL;
}

/* The value of "name=" in a stats line. */
static long stat_value(const char *line, const char *name)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", name);
    const char *p = strstr(line, pat);
    if (!p)
        fail_msg("no %s in: %s", name, line);
    return strtol(p + strlen(pat), NULL, 10);
}

static void expect_stat(struct net_proc *r, const char *name, long want)
{
    char *line = stats_line(r);
    long got = stat_value(line, name);
    if (got != want)
        fail_msg("%s: %ld, expected %ld: %s", name, got, want, line);
    free(line);
}

/* The EDHOC-derived rows of the state file as "rid,rid,..." (lowercase
 * hex, sorted), or NULL without the sqlite3 program. */
static char *stored_rids(const char *state_dir)
{
    if (!have_sqlite3)
        return NULL;
    char cmd[600], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "sqlite3 -readonly %s/edhoc-cli-state.sqlite \"SELECT group_concat(r) FROM (SELECT "
             "lower(hex(recipient_id)) AS r FROM peer WHERE method >= 0 ORDER BY r)\"",
             state_dir);
    if (net_sh(cmd, &out, 30) != 0)
        fail_msg("sqlite3: %s", out);
    out[strcspn(out, "\n")] = '\0';
    return out;
}

/* The responder writes its state in batches (group commit, issue 24):
 * a deletion reaches the file with the next batch, some milliseconds
 * after the context went; polled for up to 10 s. */
static void expect_rows(const char *state_dir, const char *want)
{
    char *got = stored_rids(state_dir);
    for (int i = 0; i < 100 && got && strcmp(got, want); i++) {
        free(got);
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
        got = stored_rids(state_dir);
    }
    if (got && strcmp(got, want))
        fail_msg("stored contexts %s, expected %s", got, want);
    free(got);
}

/* "a,b" sorted, for expect_rows. */
static void sorted_pair(const char *a, const char *b, char *out, size_t cap)
{
    snprintf(out, cap, "%s,%s", strcmp(a, b) < 0 ? a : b, strcmp(a, b) < 0 ? b : a);
}

/* ---- --max-contexts: least recently used ---- */

/* Issue #15: "--max-contexts N with least-recently-used eviction (an
 * evicted peer gets "Security context not found" and re-runs EDHOC, as
 * RFC 8613 expects)". With N = 2: A, then B; A is used (A becomes the most
 * recent); C arrives and B goes, not A. B's request is answered 4.01
 * Security context not found (RFC 8613 Section 8.2 step 2); A and C still
 * work; B runs EDHOC again and is served, and then A is the least recently
 * used one. The rows follow (deleted with their marks). */
static void test_lru_eviction(void **state)
{
    (void)state;
    char sdir[300], args[600];
    net_path(sdir, sizeof sdir, "lru.state");
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 -v --state-dir %s --max-contexts 2", sdir);
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "lru", args), 0);
    char a[20], b[20], c[20], b2[20], want[64];
    establish(r.port, "a.conf", a, sizeof a);
    establish(r.port, "b.conf", b, sizeof b);
    expect_content(r.port, "a.conf");
    expect_stat(&r, "contexts_evicted", 0);
    establish(r.port, "c.conf", c, sizeof c);
    expect_not_found(r.port, "b.conf");
    expect_content(r.port, "a.conf");
    expect_content(r.port, "c.conf");
    char *line = stats_line(&r);
    assert_int_equal(stat_value(line, "contexts"), 2);
    assert_int_equal(stat_value(line, "contexts_evicted"), 1);
    assert_int_equal(stat_value(line, "contexts_expired"), 0);
    assert_non_null(strstr(line, "(max 2)"));
    free(line);
    char *log = net_read_file(r.log);
    char evicted[80];
    snprintf(evicted, sizeof evicted, "context kid=%s evicted (max contexts 2 reached", b);
    assert_non_null(strstr(log, evicted));
    free(log);
    sorted_pair(a, c, want, sizeof want);
    expect_rows(sdir, want);

    /* B's initiator runs EDHOC again: a new context, and A (used before C)
     * is now the least recently used. */
    establish(r.port, "b2.conf", b2, sizeof b2);
    expect_content(r.port, "b2.conf");
    expect_content(r.port, "c.conf");
    expect_not_found(r.port, "a.conf");
    expect_stat(&r, "contexts_evicted", 2);
    sorted_pair(b2, c, want, sizeof want);
    expect_rows(sdir, want);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);

    /* The deletions were made as the contexts went: the restart finds the
     * two it had, prunes nothing, and loads both. */
    assert_int_equal(net_responder_start(&r, "lru2", args), 0);
    log = net_read_file(r.log);
    assert_non_null(strstr(log, "2 stored contexts loaded"));
    assert_null(strstr(log, "beyond max contexts"));
    free(log);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* Issue #15: "a restart loads at most N (the most recently used)". Four
 * contexts under --max-contexts 4, used in the order C, D, B, A; a restart
 * with --max-contexts 2 keeps B and A (the two most recently used) and
 * deletes the rows of C and D with their marks. A and B resume (an Echo
 * exchange first, RFC 8613 Appendix B.1.2), C gets 4.01. */
static void test_restart_keeps_most_recent(void **state)
{
    (void)state;
    char sdir[300], args[600];
    net_path(sdir, sizeof sdir, "recent.state");
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --state-dir %s --max-contexts 4", sdir);
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "recent", args), 0);
    char a[20], b[20], c[20], d[20], want[64];
    establish(r.port, "ra.conf", a, sizeof a);
    establish(r.port, "rb.conf", b, sizeof b);
    establish(r.port, "rc.conf", c, sizeof c);
    establish(r.port, "rd.conf", d, sizeof d);
    expect_content(r.port, "rc.conf");
    expect_content(r.port, "rd.conf");
    expect_content(r.port, "rb.conf");
    expect_content(r.port, "ra.conf");
    expect_stat(&r, "contexts", 4);
    /* SIGTERM stores when each was last used. */
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);

    snprintf(args, sizeof args, "--listen 127.0.0.1:0 -v --state-dir %s --max-contexts 2", sdir);
    assert_int_equal(net_responder_start(&r, "recent2", args), 0);
    char *log = net_read_file(r.log);
    assert_non_null(strstr(log, "0 stored contexts idle for longer than the context lifetime "
                                "and 2 beyond max contexts 2 deleted"));
    assert_non_null(strstr(log, "2 stored contexts loaded"));
    free(log);
    sorted_pair(a, b, want, sizeof want);
    expect_rows(sdir, want);
    expect_stat(&r, "contexts_evicted", 2);
    char code[16], *out;
    int rc = get_time(r.port, "ra.conf", code, sizeof code, &out);
    if (rc != 0 || strcmp(code, "2.05") || !strstr(out, "\"echo\": true"))
        fail_msg("A after the restart: %s (%d)\n%s", code, rc, out);
    free(out);
    expect_content(r.port, "rb.conf");
    expect_not_found(r.port, "rc.conf");
    expect_not_found(r.port, "rd.conf");
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* ---- --context-lifetime: idle expiry ---- */

/* Issue #15: "--context-lifetime (idle expiry)", applied to the SQLite
 * store as well. A is left idle past a 2 s lifetime and goes (4.01 for
 * its next request, RFC 8613 Section 8.2 step 2); C, just established, is
 * served. Stopped with C idle and restarted after its lifetime has passed,
 * the responder deletes C's row at start and loads nothing. */
static void test_idle_expiry_and_restart(void **state)
{
    (void)state;
    char sdir[300], args[600];
    net_path(sdir, sizeof sdir, "idle.state");
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 -v --state-dir %s --context-lifetime 2",
             sdir);
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "idle", args), 0);
    char a[20], c[20];
    establish(r.port, "ia.conf", a, sizeof a);
    expect_content(r.port, "ia.conf");
    net_sleep_ms(3000);
    establish(r.port, "ic.conf", c, sizeof c);
    expect_content(r.port, "ic.conf");
    expect_not_found(r.port, "ia.conf");
    char *line = stats_line(&r);
    assert_int_equal(stat_value(line, "contexts_expired"), 1);
    assert_int_equal(stat_value(line, "contexts_evicted"), 0);
    assert_int_equal(stat_value(line, "contexts"), 1);
    free(line);
    char *log = net_read_file(r.log);
    char expired[80];
    snprintf(expired, sizeof expired, "context kid=%s expired: no verified request for", a);
    assert_non_null(strstr(log, expired));
    free(log);
    expect_rows(sdir, c);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);

    net_sleep_ms(2500);
    assert_int_equal(net_responder_start(&r, "idle2", args), 0);
    log = net_read_file(r.log);
    assert_non_null(strstr(log, "1 stored context idle for longer than the context lifetime and "
                                "0 beyond max contexts"));
    assert_non_null(strstr(log, "0 stored contexts loaded"));
    free(log);
    expect_rows(sdir, "");
    expect_stat(&r, "contexts_expired", 1);
    expect_not_found(r.port, "ic.conf");
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* ---- Static contexts ---- */

/* Static contexts (--oscore-context) are configured, not established:
 * never evicted or expired, and not counted against --max-contexts (the
 * responder's documented policy). With --max-contexts 1 and a short
 * lifetime, two handshakes and a pause leave the static one serving. */
static void test_static_contexts_stay(void **state)
{
    (void)state;
    char srv[300], cl[300], sdir[300], args[900];
    /* RFC 8613 Appendix C.1's keying material, server and client views. */
    net_path(srv, sizeof srv, "static-srv.conf");
    net_write_file(srv,
                   "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                   "master_salt,hex,\"9e7ca92223786340\"\nsender_id,hex,\"01\"\n"
                   "recipient_id,hex,\"\"\n",
                   0600);
    net_path(cl, sizeof cl, "static-cl.conf");
    net_write_file(cl,
                   "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                   "master_salt,hex,\"9e7ca92223786340\"\nsender_id,hex,\"\"\n"
                   "recipient_id,hex,\"01\"\n",
                   0600);
    net_path(sdir, sizeof sdir, "static.state");
    snprintf(args, sizeof args,
             "--listen 127.0.0.1:0 --state-dir %s --oscore-context %s --max-contexts 1 "
             "--context-lifetime 1",
             sdir, srv);
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "static", args), 0);
    char a[20], b[20];
    establish(r.port, "sa.conf", a, sizeof a);
    establish(r.port, "sb.conf", b, sizeof b);
    expect_not_found(r.port, "sa.conf");
    expect_content(r.port, "static-cl.conf");
    net_sleep_ms(2000);
    expect_content(r.port, "static-cl.conf");
    expect_not_found(r.port, "sb.conf");
    char *line = stats_line(&r);
    assert_int_equal(stat_value(line, "contexts"), 1); /* the static one */
    assert_int_equal(stat_value(line, "contexts_evicted"), 1);
    assert_int_equal(stat_value(line, "contexts_expired"), 1);
    free(line);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* ---- A full pending table ---- */

/* POST /.well-known/edhoc carrying message_1 of RFC 9529 trace 2 (method
 * 3, SUITES_I [6, 2]) with C_I replaced by the 2-byte string i: A.2
 * (true prefix, Content-Format 65) or bare (the message alone). */
static size_t flood_message_1(uint8_t *out, uint16_t i, bool bare)
{
    struct vec_scope v = vec_load("rfc9529-trace2.json");
    uint8_t m1[128];
    size_t n = vec_hex(v, "message_1", m1, sizeof m1);
    m1[n - 1] = 0x42; /* C_I: h'hhll' instead of -24 */
    m1[n++] = (uint8_t)(i >> 8);
    m1[n++] = (uint8_t)i;
    size_t o = 0;
    out[o++] = 0x42; /* CON, token length 2 */
    out[o++] = 0x02; /* POST */
    out[o++] = (uint8_t)(i >> 8);
    out[o++] = (uint8_t)i;
    out[o++] = (uint8_t)(i >> 8);
    out[o++] = (uint8_t)i;
    out[o++] = 0xbb; /* Uri-Path (11), 11 bytes */
    memcpy(out + o, ".well-known", 11);
    o += 11;
    out[o++] = 0x05;
    memcpy(out + o, "edhoc", 5);
    o += 5;
    if (!bare) {
        out[o++] = 0x11; /* Content-Format (12): application/cid-edhoc+cbor-seq */
        out[o++] = 65;
    }
    out[o++] = 0xff;
    if (!bare)
        out[o++] = 0xf5;
    memcpy(out + o, m1, n);
    return o + n;
}

/* count message_1s, each from its own socket (its own address and port,
 * so its own bare-framing peer), none followed by message_3: every one
 * is answered with code (0x44: message_2 in a 2.04, leaving a handshake
 * in progress; 0x81: 4.01 + Echo, leaving nothing). */
static void flood_code(uint16_t port, uint16_t first, int count, bool bare, uint8_t code)
{
    for (int k = 0; k < count; k++) {
        uint8_t msg[256], resp[1024];
        size_t len = flood_message_1(msg, (uint16_t)(first + k), bare);
        long n = net_udp_exchange(port, msg, len, resp, sizeof resp, 5000);
        if (n < 4 || resp[1] != code)
            fail_msg("message_1 %d: no 0x%02x (%ld bytes, code 0x%02x)", k, code, n,
                     n >= 2 ? resp[1] : 0);
    }
}

static void flood(uint16_t port, uint16_t first, int count, bool bare)
{
    flood_code(port, first, count, bare, 0x44);
}

/* Issue #15: "lookups under a full pending table". --max-pending 16,
 * filled with A.2 message_1s from 16 sources; 16 more sources (bare) find
 * the table full: under that pressure an unverified address gets 4.01 +
 * Echo and no slot (RFC 9528 Section 9.7: the Echo option "forces the
 * CoAP client to demonstrate reachability at its apparent network
 * address"), so nothing is evicted by them. Legitimate initiators still
 * complete: A.2 (one Echo round trip, then its handshake takes the oldest
 * unverified one's slot; its message_3 found by C_R) and bare (found by
 * its address; the table has room again), each with an OSCORE request
 * after. */
static void test_full_pending_table(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "pending",
                                         "--listen 127.0.0.1:0 --state-dir none --suites 2 "
                                         "--max-pending 16"),
                     0);
    flood(r.port, 0x100, 16, false);
    char *line = stats_line(&r);
    assert_int_equal(stat_value(line, "pending"), 16);
    assert_int_equal(stat_value(line, "pending_evicted"), 0);
    free(line);
    flood_code(r.port, 0x200, 16, true, 0x81);
    line = stats_line(&r);
    assert_int_equal(stat_value(line, "pending"), 16);
    assert_int_equal(stat_value(line, "pending_evicted"), 0);
    free(line);

    char *out;
    int rc =
        CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request \"GET /time\" --json", r.port);
    if (rc != 0 || !strstr(out, "\"outcome\": \"ok\"") || !strstr(out, "\"code\": \"2.05\""))
        fail_msg("A.2 initiator under a full pending table: %d\n%s", rc, out);
    free(out);
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --framing bare --request \"GET /time\" --json",
                 r.port);
    if (rc != 0 || !strstr(out, "\"outcome\": \"ok\"") || !strstr(out, "\"code\": \"2.05\""))
        fail_msg("bare initiator under a full pending table: %d\n%s", rc, out);
    free(out);
    line = stats_line(&r);
    /* The A.2 message_1 (after its Echo) evicted the oldest flood
     * handshake; once it completed its slot was free for the bare one. */
    assert_int_equal(stat_value(line, "pending_evicted"), 1);
    assert_int_equal(stat_value(line, "handshakes_ok"), 2);
    assert_int_equal(stat_value(line, "pending"), 15);
    free(line);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* RFC 9528 Section 3.3 leaves C_R to the responder; the responder picks a
 * one-byte int-form value (0x04-0x17, 0x20-0x37: 44 of them) first,
 * distinct from every C_R in use. 60 handshakes in progress take all 44
 * and 16 two-byte ones: the next handshake gets a free two-byte C_R at
 * once (issue #15: "the free-C_R search ... O(1) expected"), and once the
 * flood expired (--handshake-timeout 1) one byte again. */
static void test_c_r_when_one_byte_space_taken(void **state)
{
    (void)state;
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "c-r",
                                         "--listen 127.0.0.1:0 --state-dir none --suites 2 "
                                         "--max-pending 100 --handshake-timeout 1"),
                     0);
    flood(r.port, 0x300, 60, false);
    char *out, sid[20];
    int rc = CLI_RUN(&out, 30,
                     "initiator coap://127.0.0.1:%u --request \"GET /time\" --json "
                     "--export-secrets",
                     r.port);
    if (rc != 0 || !strstr(out, "\"code\": \"2.05\""))
        fail_msg("initiator with the one-byte C_Rs taken: %d\n%s", rc, out);
    net_json_str(out, "sender_id", sid, sizeof sid); /* the initiator's Sender ID = C_R */
    free(out);
    assert_int_equal(strlen(sid), 4);
    net_sleep_ms(2500);
    expect_stat(&r, "pending", 0);
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --request \"GET /time\" --json "
                 "--export-secrets",
                 r.port);
    if (rc != 0 || !strstr(out, "\"code\": \"2.05\""))
        fail_msg("initiator after the flood expired: %d\n%s", rc, out);
    net_json_str(out, "sender_id", sid, sizeof sid);
    free(out);
    assert_int_equal(strlen(sid), 2);
    expect_stat(&r, "pending_expired", 60);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
}

/* ---- The command line ---- */

static void test_limit_options_refused(void **state)
{
    (void)state;
    static const struct {
        const char *args, *msg;
    } cases[] = {
        {"--max-contexts 0", "--max-contexts: expected an integer from 1 to 100000000"},
        {"--max-contexts x", "--max-contexts: expected an integer"},
        {"--context-lifetime 0", "--context-lifetime: expected seconds from 0.1 to 3.1536e+08"},
        {"--context-lifetime 1e3", "--context-lifetime: expected seconds"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        int rc = CLI_RUN(&out, 30, "responder --demo --listen 127.0.0.1:0 --state-dir none %s",
                         cases[i].args);
        if (rc != 2 || !strstr(out, cases[i].msg))
            fail_msg("%s: %d\n%s", cases[i].args, rc, out);
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_lru_eviction, net_test_teardown),
        cmocka_unit_test_teardown(test_restart_keeps_most_recent, net_test_teardown),
        cmocka_unit_test_teardown(test_idle_expiry_and_restart, net_test_teardown),
        cmocka_unit_test_teardown(test_static_contexts_stay, net_test_teardown),
        cmocka_unit_test_teardown(test_full_pending_table, net_test_teardown),
        cmocka_unit_test_teardown(test_c_r_when_one_byte_space_taken, net_test_teardown),
        cmocka_unit_test_teardown(test_limit_options_refused, net_test_teardown),
    };
    return cmocka_run_group_tests(tests, setup, net_group_teardown);
}
