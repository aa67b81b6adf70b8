/*
 * End-to-end tests of `edhoc-cli coap` and the OSCORE contexts a handshake
 * leaves: static OSCORE contexts with Observe (RFC 8613, RFC 7641),
 * unprotected answers refused (or allowed) through a rewriting relay, also
 * under interop load, and the exported OSCORE configuration.
 */
#include "cli_net_test_common.h"

static void test_coap_static_context(void **state)
{
    (void)state;
    char srv[300], cl[300];
    net_path(srv, sizeof srv, "srv.conf");
    net_path(cl, sizeof cl, "client.conf");
    net_write_file(srv,
                   "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                   "master_salt,hex,\"9e7ca92223786340\"\n"
                   "sender_id,hex,\"01\"\nrecipient_id,hex,\"\"\n",
                   0600);
    net_write_file(cl,
                   "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                   "master_salt,hex,\"9e7ca92223786340\"\n"
                   "sender_id,hex,\"\"\nrecipient_id,hex,\"01\"\n",
                   0600);
    static struct net_proc r;
    char args[600];
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --oscore-context %s", srv);
    assert_int_equal(net_responder_start(&r, "static", args), 0);
    char *out;
    /* Unprotected: 4.01. */
    int rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time", r.port);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "4.01 Unauthorized"));
    free(out);
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s", r.port, cl);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "2.05 Content (OSCORE)"));
    free(out);
    /* A second run continues above the first one's sequence numbers (they
     * are kept in the state directory): answered, not a replay
     * (RFC 8613 Section 7.2). */
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s", r.port, cl);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "2.05 Content (OSCORE)"));
    free(out);
    rc = CLI_RUN(
        &out, 30,
        "coap POST coap://127.0.0.1:%u/echo --payload hi --oscore-context %s --seq 50 --json",
        r.port, cl);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(
        out, "\"code\": \"2.04\",\n      \"code_name\": \"Changed\",\n      \"oscore\": true"));
    assert_non_null(strstr(out, "\"payload_text\": \"hi\""));
    free(out);
    /* Observe: three notifications of /counter, each with its own Partial IV. */
    rc = CLI_RUN(&out, 30,
                 "coap GET coap://127.0.0.1:%u/counter --observe 3 --oscore-context %s --seq 60 "
                 "--json --timeout 15",
                 r.port, cl);
    if (rc != 0)
        fail_msg("observe: %d\n%s", rc, out);
    assert_int_equal(
        net_count(out,
                  "\"code\": \"2.05\",\n      \"code_name\": \"Content\",\n      \"oscore\": true"),
        3);
    free(out);
    /* A wrong key: the server cannot decrypt, the client sees an OSCORE error. */
    char bad[300];
    net_path(bad, sizeof bad, "bad.conf");
    net_write_file(bad,
                   "master_secret,hex,\"ff02030405060708090a0b0c0d0e0f10\"\n"
                   "sender_id,hex,\"\"\nrecipient_id,hex,\"01\"\n",
                   0600);
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s --seq 40", r.port,
                 bad);
    assert_int_equal(rc, 7);
    assert_non_null(strstr(out, "4.00"));
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);
}

/* --allow-unprotected: the same resources without OSCORE (a CoAP-only
 * device test, a like-for-like baseline); unknown paths stay 4.04, EDHOC
 * and OSCORE keep working beside it. */
static void test_allow_unprotected(void **state)
{
    (void)state;
    struct net_proc r;
    assert_int_equal(net_responder_start(&r, "plain", "--listen 127.0.0.1:0 --allow-unprotected"),
                     0);
    char *out;
    int rc = CLI_RUN(&out, 30, "coap POST coap://127.0.0.1:%u/echo --payload hello --json", r.port);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(
        out, "\"code\": \"2.04\",\n      \"code_name\": \"Changed\",\n      \"oscore\": false"));
    assert_non_null(strstr(out, "\"payload_text\": \"hello\""));
    free(out);
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/.well-known/core", r.port);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "2.05 Content"));
    assert_non_null(strstr(out, "</.well-known/edhoc>"));
    free(out);
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/nothing", r.port);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "4.04"));
    free(out);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --method 3 --suites 2 --timeout 10",
                 r.port);
    assert_int_equal(rc, 0);
    free(out);
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    char *log = net_read_file(r.log);
    assert_non_null(strstr(log, "--allow-unprotected: the resources answer requests without"));
    free(log);
}

/* ---- An on-path attacker: a UDP relay that tampers with OSCORE answers ----
 *
 * The relay stands between the clients and a real responder: every client
 * address gets its own upstream socket (the responder sees distinct peers),
 * every datagram is passed on, except the responder's answers that carry
 * an OSCORE option (the protected answers to OSCORE requests), which are
 * replaced as the mode says. Nothing of EDHOC is faked: the handshake is
 * real, so the client holds a real context when the forged answer comes. */

enum relay_mode {
    RELAY_UNPROTECTED, /* an unprotected answer: same type, Message ID, token */
    RELAY_SWAP,        /* the second protected answer replaced by the first */
};

struct relay_cfg {
    enum relay_mode mode;
    uint8_t code;        /* RELAY_UNPROTECTED: the forged answer's code */
    const char *payload; /* and its payload (NULL: none) */
};

/* Whether a CoAP message carries option 9 (OSCORE). */
static bool relay_has_oscore(const uint8_t *m, size_t len)
{
    if (len < 4 || (size_t)(4 + (m[0] & 0x0f)) > len)
        return false;
    size_t p = 4 + (m[0] & 0x0f);
    unsigned num = 0;
    while (p < len && m[p] != 0xff) {
        unsigned v[2] = {m[p] >> 4, m[p] & 0x0f};
        p++;
        for (int k = 0; k < 2; k++) {
            if (v[k] == 13) {
                if (p >= len)
                    return false;
                v[k] = 13u + m[p++];
            } else if (v[k] == 14) {
                if (p + 1 >= len)
                    return false;
                v[k] = 269u + (unsigned)(m[p] << 8 | m[p + 1]);
                p += 2;
            } else if (v[k] == 15) {
                return false;
            }
        }
        num += v[0];
        if (num == 9)
            return true;
        p += v[1];
    }
    return false;
}

/* The server's answers as the relay configuration changes them: every
 * OSCORE response replaced by an unprotected one, or the second by the
 * first one's protected bytes (an answer bound to another request). */
struct relay_state {
    const struct relay_cfg *cfg;
    uint8_t first[4096];
    size_t first_len;
    bool have_first;
};

static size_t relay_rewrite(void *user, uint8_t *buf, size_t len, size_t cap)
{
    struct relay_state *st = user;
    const struct relay_cfg *cfg = st->cfg;
    if (len < 4)
        return len;
    size_t head = 4 + (buf[0] & 0x0f); /* header and token */
    if (head > len || !relay_has_oscore(buf, len))
        return len;
    if (cfg->mode == RELAY_UNPROTECTED) {
        buf[1] = cfg->code;
        size_t n = head;
        size_t pl = cfg->payload ? strlen(cfg->payload) : 0;
        if (pl && n + 1 + pl <= cap) {
            buf[n++] = 0xff;
            memcpy(buf + n, cfg->payload, pl);
            n += pl;
        }
        return n;
    }
    if (!st->have_first) {
        st->first_len = len - head;
        memcpy(st->first, buf + head, st->first_len);
        st->have_first = true;
        return len;
    }
    if (head + st->first_len > cap)
        return len;
    memcpy(buf + head, st->first, st->first_len);
    return head + st->first_len;
}

/* Start a relay towards 127.0.0.1:upstream in a child process; p->port is
 * where clients send. Returns 0 or -1. */
static int relay_start(struct net_proc *p, uint16_t upstream, const struct relay_cfg *cfg)
{
    static struct relay_state st;
    memset(&st, 0, sizeof st);
    st.cfg = cfg;
    struct net_relay_hooks h = {.to_client = relay_rewrite, .user = &st};
    return net_relay_start(p, upstream, &h);
}

/* A fresh scratch state directory in $STATE_DIRECTORY for the CLI runs of
 * a test (they inherit it; responders get their own from
 * net_responder_start), so that nothing lands in the user's. */
static void use_state_dir(const char *name)
{
    char d[300];
    net_path(d, sizeof d, name);
    mkdir(d, 0700);
    setenv("STATE_DIRECTORY", d, 1);
}

/* A response to an OSCORE request that carries no OSCORE option is not
 * the answer. RFC 8613 Section 2: "A successful response to a request with
 * the OSCORE option SHALL contain the OSCORE option."; Section 8.4 has the
 * client verify the response before anything of it is used, and
 * Section 5.1 (on an unprotected error): "since the error is unprotected,
 * it may have been spoofed and the real response blocked by an on-path
 * attacker." So the relay's forged 2.05 must fail the run (exit 7), and a
 * forged OSCORE error is an error still, named with its diagnostic. Before,
 * the initiator did exit 7 but called the forged 2.05 "refused" and dropped
 * the payload; `load` counted it among "OSCORE unprotect" errors and
 * `interop` blamed a security context the peer did not find. */
static void test_unprotected_answer_refused(void **state)
{
    (void)state;
    use_state_dir("state-unprot");
    static struct net_proc r, relay;
    assert_int_equal(net_responder_start(&r, "unprot", "--listen 127.0.0.1:0"), 0);
    struct relay_cfg cfg = {RELAY_UNPROTECTED, 0x45, "fake"};
    assert_int_equal(relay_start(&relay, r.port, &cfg), 0);
    char *out;
    int rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request \"GET /time\" --json",
                     relay.port);
    if (rc != 7 || !strstr(out, "the peer answered without OSCORE: 2.05 Content: fake"))
        fail_msg("forged 2.05 accepted or misreported (exit %d):\n%s", rc, out);
    assert_valid(out, "initiator");
    char *f = flat(out);
    assert_has(f, "outcome=\"failed\"");
    assert_has(f, "responses=[]");
    free(f);
    free(out);
    /* The RFC 9668 combined request: the same. */
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --combined --request \"GET /time\"",
                 relay.port);
    if (rc != 7 || !strstr(out, "the peer answered without OSCORE: 2.05 Content: fake"))
        fail_msg("combined: forged 2.05 accepted or misreported (exit %d):\n%s", rc, out);
    free(out);
    net_proc_stop(&relay, SIGKILL, 2000);
    /* A forged (or real) "Replay detected": an error, named, with a hint. */
    struct relay_cfg replay = {RELAY_UNPROTECTED, 0x81, "Replay detected"};
    assert_int_equal(relay_start(&relay, r.port, &replay), 0);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --request \"GET /time\"", relay.port);
    if (rc != 7 ||
        !strstr(out, "the peer answered without OSCORE: 4.01 Unauthorized: Replay detected") ||
        !strstr(out, "another state directory"))
        fail_msg("replay: exit %d:\n%s", rc, out);
    free(out);
    net_proc_stop(&relay, SIGKILL, 2000);
    /* A protected answer bound to another request (the first answer, sent
     * again for the second request): its AAD names the first request's
     * Partial IV (RFC 8613 Section 5.4), so verification fails. */
    struct relay_cfg swap = {RELAY_SWAP, 0, NULL};
    assert_int_equal(relay_start(&relay, r.port, &swap), 0);
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --request \"POST /echo one\" "
                 "--request \"POST /echo two\" --json",
                 relay.port);
    if (rc != 7 || !strstr(out, "POST /echo two: OSCORE"))
        fail_msg("swapped answer: exit %d:\n%s", rc, out);
    assert_valid(out, "initiator");
    f = flat(out);
    char v[200];
    assert_false(response_field(f, "POST /echo two", "code", v, sizeof v));
    /* The first answer, where it belongs, was taken. */
    assert_true(response_field(f, "POST /echo one", "payload_text", v, sizeof v));
    assert_string_equal(v, "\"one\"");
    free(f);
    free(out);
    net_proc_stop(&relay, SIGKILL, 2000);
    net_proc_stop(&r, SIGTERM, 5000);
    use_state_dir("client-state"); /* back to the run's own (net_make_dir) */
}

/* The same forgery against `load` (counted apart as failures) and
 * `interop` (the cell fails, saying why). */
static void test_unprotected_answer_load_interop(void **state)
{
    (void)state;
    use_state_dir("state-unprot2");
    static struct net_proc r, relay;
    assert_int_equal(net_responder_start(&r, "unprot2", "--listen 127.0.0.1:0"), 0);
    struct relay_cfg cfg = {RELAY_UNPROTECTED, 0x44, NULL};
    assert_int_equal(relay_start(&relay, r.port, &cfg), 0);
    char *out;
    int rc = CLI_RUN(&out, 60,
                     "load coap://127.0.0.1:%u --peers 2 --handshakes 4 --requests-per-peer 2 "
                     "--json",
                     relay.port);
    assert_valid(out, "load");
    char *f = flat(out);
    /* Every request was answered without OSCORE: none succeeded; the
     * failures name the cause with a word, the answers table says what
     * came back (2.04, unprotected) rather than claiming OSCORE. */
    if (!strstr(f, ".cause=\"no_oscore\""))
        fail_msg("load (exit %d) did not report the unprotected answers:\n%s", rc, out);
    assert_has(f, "tables.0.rows.0.requests=0");
    assert_has(f, "tables.2.name=\"load_answers\"");
    assert_has(f, "tables.2.rows.0.requests=\"OSCORE\"");
    assert_has(f, "tables.2.rows.0.response=\"unprotected\"");
    assert_has(f, "tables.2.rows.0.code=\"2.04\"");
    free(f);
    free(out);
    rc = CLI_RUN(&out, 60,
                 "interop coap://127.0.0.1:%u --methods 3 --suites 2 --id-creds kid --json",
                 relay.port);
    if (rc != 1 || !strstr(out, "the peer answered without OSCORE: 2.04 Changed") ||
        !strstr(out, "\"failure\": \"oscore\"") ||
        !strstr(out, "the peer answered without OSCORE with a success code") ||
        net_json_valid(out, "interop", false))
        fail_msg("interop: exit %d:\n%s", rc, out);
    free(out);
    net_proc_stop(&relay, SIGKILL, 2000);
    net_proc_stop(&r, SIGTERM, 5000);
    use_state_dir("client-state"); /* back to the run's own (net_make_dir) */
}

/* ---- --export-oscore-conf: a context other tools continue ---- */

/* The numbers of "key": [a, b, ...] (at most max). */
static size_t json_numbers(const char *out, const char *key, long *v, size_t max)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": [", key);
    const char *p = strstr(out, pat);
    if (!p)
        return 0;
    p += strlen(pat);
    size_t n = 0;
    while (n < max && *p && *p != ']') {
        char *e;
        long x = strtol(p, &e, 10);
        if (e == p)
            break;
        v[n++] = x;
        p = e + strspn(e, ", ");
    }
    return n;
}

static unsigned long long read_seq_file(const char *path)
{
    char *t = net_read_file(path);
    if (!t)
        fail_msg("no %s", path);
    char *end;
    unsigned long long v = strtoull(t, &end, 10);
    if (end == t || strcmp(end, "\n"))
        fail_msg("%s is not one decimal number and a newline: '%s'", path, t);
    free(t);
    return v;
}

static void assert_mode_0600(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    if ((st.st_mode & 07777) != 0600)
        fail_msg("%s has mode %o, expected 600", path, (unsigned)(st.st_mode & 07777));
}

static void test_export_oscore_conf(void **state)
{
    (void)state;
    use_state_dir("state-export");
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "export", "--listen 127.0.0.1:0"), 0);
    char conf[300], seq[320];
    net_path(conf, sizeof conf, "exported.conf");
    snprintf(seq, sizeof seq, "%s.seq", conf);
    char *out;
    int rc =
        CLI_RUN(&out, 30,
                "initiator coap://127.0.0.1:%u --request \"GET /time\" --request \"POST /echo x\" "
                "--export-secrets --export-oscore-conf %s --json",
                r.port, conf);
    char *f = expect_ok_json(out, rc);
    /* JSON in libcoap's terms, with our next sequence number and the
     * responder's stated as unknown. */
    assert_has(f, "oscore.aead_alg=10");
    assert_has(f, "oscore.hkdf_alg=-10");
    assert_has(f, "oscore.libcoap=true");
    assert_has(f, "oscore.sender_next_seq=2");
    assert_has(f, "oscore.recipient_next_seq=null");
    char ms[80], salt[40], sid[20], rid[20], v[100];
    assert_true(get(f, "oscore.master_secret", v, sizeof v));
    snprintf(ms, sizeof ms, "%.*s", (int)strlen(v) - 2, v + 1);
    assert_true(get(f, "oscore.master_salt", v, sizeof v));
    snprintf(salt, sizeof salt, "%.*s", (int)strlen(v) - 2, v + 1);
    assert_true(get(f, "oscore.sender_id", v, sizeof v));
    snprintf(sid, sizeof sid, "%.*s", (int)strlen(v) - 2, v + 1);
    assert_true(get(f, "oscore.recipient_id", v, sizeof v));
    snprintf(rid, sizeof rid, "%.*s", (int)strlen(v) - 2, v + 1);
    char want[600];
    snprintf(want, sizeof want, "oscore_conf.file=\"%s\"", conf);
    assert_has(f, want);
    snprintf(want, sizeof want, "oscore_conf.seq_file=\"%s\"", seq);
    assert_has(f, want);
    assert_has(f, "oscore_conf.next_seq=2");
    assert_has(f, "oscore_conf.libcoap=true");
    free(f);
    free(out);
    /* The file: 0600, exactly libcoap's keywords and values, no id_context
     * (RFC 9528 Appendix A.1 derives none). */
    assert_mode_0600(conf);
    char *text = net_read_file(conf);
    snprintf(want, sizeof want,
             "master_secret,hex,\"%s\"\nmaster_salt,hex,\"%s\"\nsender_id,hex,\"%s\"\n"
             "recipient_id,hex,\"%s\"\naead_alg,integer,10\nhkdf_alg,integer,-10\n"
             "replay_window,integer,32\n",
             ms, salt, sid, rid);
    assert_string_equal(text, want);
    free(text);
    /* libcoap's seq_file: the next sequence number after the two requests. */
    assert_mode_0600(seq);
    assert_int_equal(read_seq_file(seq), 2);
    /* Our own reader takes the file. */
    rc =
        CLI_RUN(&out, 30,
                "oscore protect --context %s --role client --seq 2 43011234a1b2c3b474696d65", conf);
    if (rc != 0)
        fail_msg("oscore protect --context %s: exit %d\n%s", conf, rc, out);
    free(out);
    /* A later static-context run continues above the numbers the initiator
     * used: the responder, which saw 0 and 1, answers (a reuse would be
     * "Replay detected"). */
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s --json", r.port,
                 conf);
    if (rc != 0 ||
        !strstr(out,
                "\"code\": \"2.05\",\n      \"code_name\": \"Content\",\n      \"oscore\": true"))
        fail_msg("coap --oscore-context %s: exit %d\n%s", conf, rc, out);
    long used[8];
    size_t n_used = json_numbers(out, "oscore_sequence_numbers", used, 8);
    if (n_used < 1 || used[0] < 2)
        fail_msg("coap used sequence numbers below 2:\n%s", out);
    free(out);
    /* libcoap's spelling, conf and seq_file: further up again. */
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s,%s --json",
                 r.port, conf, seq);
    if (rc != 0 ||
        !strstr(out,
                "\"code\": \"2.05\",\n      \"code_name\": \"Content\",\n      \"oscore\": true"))
        fail_msg("coap --oscore-context %s,%s: exit %d\n%s", conf, seq, rc, out);
    long used2[8];
    assert_true(json_numbers(out, "oscore_sequence_numbers", used2, 8) >= 1);
    assert_true(used2[0] > used[0]);
    free(out);
    assert_true(read_seq_file(seq) > (unsigned long long)used2[0]);

    /* Text output; an existing file readable by others is replaced by one
     * with mode 0600. */
    char conf2[300];
    net_path(conf2, sizeof conf2, "exported2.conf");
    net_write_file(conf2, "old\n", 0644);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --export-secrets --export-oscore-conf %s",
                 r.port, conf2);
    if (rc != 0)
        fail_msg("initiator (text): exit %d\n%s", rc, out);
    assert_non_null(strstr(out, "next sender sequence number: initiator 1; responder: its own "
                                "state"));
    assert_non_null(strstr(out, "    hkdf_alg,integer,-10\n"));
    assert_non_null(strstr(out, "OSCORE conf (the initiator's side, mode 0600): "));
    assert_non_null(strstr(out, "coap-client -E "));
    free(out);
    assert_mode_0600(conf2);
    text = net_read_file(conf2);
    assert_non_null(strstr(text, "hkdf_alg,integer,-10\n"));
    assert_null(strstr(text, "old"));
    free(text);

    /* A symbolic link is refused before anything is sent; its target is
     * left alone. */
    char victim[300], link[300];
    net_path(victim, sizeof victim, "victim");
    net_path(link, sizeof link, "link.conf");
    net_write_file(victim, "untouched\n", 0644);
    assert_int_equal(symlink(victim, link), 0);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --export-oscore-conf %s", r.port, link);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "symbolic link"));
    assert_null(strstr(out, "message_1"));
    free(out);
    text = net_read_file(victim);
    assert_string_equal(text, "untouched\n");
    free(text);

    /* --state-dir none: FILE.seq alone. */
    char conf3[300], seq3[320];
    net_path(conf3, sizeof conf3, "nostate.conf");
    snprintf(seq3, sizeof seq3, "%s.seq", conf3);
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --export-oscore-conf %s --state-dir none --json "
                 "--request \"GET /time\" --request \"GET /time\" --request \"GET /time\"",
                 r.port, conf3);
    f = expect_ok_json(out, rc);
    assert_has(f, "oscore_conf.state_dir=null");
    assert_has(f, "oscore_conf.next_seq=3");
    /* Without --export-secrets the secrets stay out of the report. */
    assert_has(f, "oscore.master_secret=null");
    assert_has(f, "oscore.master_salt=null");
    free(f);
    free(out);
    assert_int_equal(read_seq_file(seq3), 3);
    rc = CLI_RUN(&out, 30, "initiator coap://127.0.0.1:%u --state-dir none", r.port);
    assert_int_equal(rc, 2);
    free(out);

    /* A SHA-384 suite: no libcoap value; the id our reader takes, said so. */
    char conf4[300];
    net_path(conf4, sizeof conf4, "sha384.conf");
    rc = CLI_RUN(&out, 30,
                 "initiator coap://127.0.0.1:%u --suites 24 --export-oscore-conf %s --json", r.port,
                 conf4);
    f = expect_ok_json(out, rc);
    assert_has(f, "oscore.hkdf_alg=-43");
    assert_has(f, "oscore.libcoap=false");
    assert_has(f, "oscore_conf.libcoap=false");
    free(f);
    free(out);
    text = net_read_file(conf4);
    assert_non_null(text);
    assert_true(text[0] == '#');
    assert_non_null(strstr(text, "libcoap has no value for it"));
    assert_non_null(strstr(text, "\nhkdf_alg,integer,-43\n"));
    free(text);
    rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/time --oscore-context %s", r.port, conf4);
    if (rc != 0)
        fail_msg("coap with the SHA-384 context: exit %d\n%s", rc, out);
    free(out);

    /* --help documents the option and the exit codes. */
    rc = CLI_RUN(&out, 30, "initiator --help");
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "--export-oscore-conf FILE"));
    assert_non_null(strstr(out, "the peer answered without"));
    free(out);
    net_proc_stop(&r, SIGTERM, 5000);
    use_state_dir("client-state"); /* back to the run's own (net_make_dir) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_coap_static_context, check_alive),
        cmocka_unit_test(test_allow_unprotected),
        cmocka_unit_test_setup(test_unprotected_answer_refused, check_alive),
        cmocka_unit_test_setup(test_unprotected_answer_load_interop, check_alive),
        cmocka_unit_test_setup(test_export_oscore_conf, check_alive),
    };
    /* One test by name (a glob): CMOCKA_TEST_FILTER=test_load_* */
    if (getenv("CMOCKA_TEST_FILTER"))
        cmocka_set_test_filter(getenv("CMOCKA_TEST_FILTER"));
    return cmocka_run_group_tests_name("cli_net_coap", tests, setup, net_group_teardown);
}
