/*
 * Captures through the edhoc-cli binary: `bytes` on a capture (its JSON
 * checked), time on air of a LoRaWAN capture with an ephemeral server, and
 * `bytes --compare` of EDHOC and DTLS runs.
 */
#include "capture_test_common.h"

/* `edhoc-cli bytes --json` output: checked against its schema
 * (docs/json/SCHEMA.schema.json, tests/json_check.py), then rewritten on
 * one line with the separators given (",", ":" or ", ", ": ") so that the
 * expectations below can name members in order. Fails the test when the
 * output is not valid. */
static void bytes_json_checked(char **out, const char *schema, bool spaced)
{
    const char *root = getenv("EDHOC_SOURCE_ROOT") ? getenv("EDHOC_SOURCE_ROOT") : ".";
    char path[512], cmd[2048];
    path_in_workdir("bytes-out.json", path, sizeof path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(*out, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "python3 %s/tests/json_check.py %s/docs/json/%s.schema.json %s >&2",
             root, root, schema, path);
    if (system(cmd) != 0)
        fail_msg("not valid against %s.schema.json:\n%s", schema, *out);
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), "
             "separators=(\"%s\", \"%s\")))' %s",
             spaced ? ", " : ",", spaced ? ": " : ":", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap + 1);
    while ((n = fread(buf + len, 1, cap - len, p)) > 0) {
        len += n;
        if (len == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    }
    buf[len] = '\0';
    assert_int_equal(pclose(p), 0);
    free(*out);
    *out = buf;
}

/* The CLI: the same numbers through `edhoc-cli bytes`, and the exit code
 * for damaged files. Skipped when $EDHOC_CLI is not set. */
static void test_cli(void **state)
{
    (void)state;
    if (!getenv("EDHOC_CLI")) {
        print_message("EDHOC_CLI not set: CLI checks skipped\n");
        skip();
    }
    char path[512], args[1200];
    write_capture("cli-sll.pcap", EDHOC_CAPTURE_DLT_LINUX_SLL, path, sizeof path, NULL);
    char *out = NULL;
    snprintf(args, sizeof args, "bytes --json '%s'", path);
    assert_int_equal(run_cli(args, false, &out), 0);
    bytes_json_checked(&out, "bytes", false);
    assert_non_null(strstr(out, "\"method\":3,\"suite\":2,\"suites_i\":[6,2]"));
    assert_non_null(strstr(out, "\"method\":3,\"suite\":2,\"suites_i\":[2]"));
    assert_non_null(strstr(out, "\"name\":\"message_1\",\"packet\":1,\"from\":\"initiator\","
                                "\"datagrams\":1,\"retransmissions\":0,\"edhoc_bytes\":39"));
    assert_non_null(strstr(out, "\"name\":\"message_2\",\"packet\":2,\"from\":\"responder\","
                                "\"datagrams\":1,\"retransmissions\":0,\"edhoc_bytes\":45"));
    assert_non_null(strstr(out, "\"name\":\"message_3\",\"packet\":3,\"from\":\"initiator\","
                                "\"datagrams\":1,\"retransmissions\":0,\"edhoc_bytes\":19"));
    assert_non_null(strstr(out, "\"edhoc_bytes\":37,"));
    /* C_R 0x27: the one-byte integer form of -8 (RFC 9528 Section 3.3.2). */
    assert_non_null(strstr(out, "\"c_r\":{\"hex\":\"27\",\"int\":-8}"));
    /* Issue 14 item 7: the inference as values, its assumption in a list
     * of its own, not "kid (inferred: 1 byte, assuming no EAD)". */
    assert_non_null(strstr(out, "\"id_cred_r\":{\"type\":\"kid\",\"bytes\":1,"
                                "\"assumptions\":[\"no_ead\"]}"));
    assert_null(strstr(out, "inferred"));
    assert_non_null(strstr(out, "\"error\":null"));
    /* The OSCORE request (message 4) and its response (5): CoAP 24 + 21,
     * UDP + 16, IPv6 + 80. */
    assert_non_null(strstr(out, "\"oscore_exchanges\":[{\"request\":4,\"response\":5,"
                                "\"totals\":{\"messages\":2,\"datagrams\":2,\"edhoc_bytes\":0,"
                                "\"coap_bytes\":45,\"udp_bytes\":61,\"ip_bytes\":141,"));
    free(out);

    snprintf(args, sizeof args, "bytes --link 802.15.4 '%s'", path);
    assert_int_equal(run_cli(args, false, &out), 0);
    assert_non_null(
        strstr(out, "method 3, suite 2 (SUITES_I 6, 2), C_I -24 (0x37), C_R -8 (0x27)"));
    assert_non_null(strstr(out, "MAC header 23"));
    free(out);

    /* Truncated: the report of what was read, a message, exit 3. */
    char bad[512];
    path_in_workdir("cli-trunc.pcap", bad, sizeof bad);
    snprintf(args, sizeof args, "head -c %ld '%s' > '%s'", file_size(path) - 7, path, bad);
    assert_int_equal(system(args), 0);
    snprintf(args, sizeof args, "bytes '%s'", bad);
    assert_int_equal(run_cli(args, true, &out), 3);
    assert_non_null(strstr(out, "truncated or corrupt"));
    assert_non_null(strstr(out, "Exchange 1"));
    free(out);
    /* Not a capture at all. */
    snprintf(args, sizeof args, "bytes '%s/vectors.h'",
             getenv("EDHOC_SOURCE_ROOT") ? getenv("EDHOC_SOURCE_ROOT") : ".");
    int rc = run_cli(args, true, &out);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "cannot read"));
    free(out);
    assert_int_equal(run_cli("bytes", true, &out), 2);
    free(out);
    assert_int_equal(run_cli("bytes --link token-ring x.pcap", true, &out), 2);
    free(out);
    assert_int_equal(run_cli("bytes --link-mtu 0 x.pcap", true, &out), 2);
    free(out);
    /* A generic 64-byte link: message_2's IPv6 packet (102 bytes) takes
     * ceil(102 / 64) = 2 frames. */
    snprintf(args, sizeof args, "bytes --json --link-mtu 64 '%s'", path);
    assert_int_equal(run_cli(args, false, &out), 0);
    bytes_json_checked(&out, "bytes", false);
    assert_non_null(strstr(out, "\"name\":\"message_2\",\"packet\":2,\"from\":\"responder\","
                                "\"datagrams\":1,\"retransmissions\":0,\"edhoc_bytes\":45,"
                                "\"coap_bytes\":54,\"udp_bytes\":62,\"ip_bytes\":102,"
                                "\"frame_bytes\":118,\"frames\":2,\"link_bytes\":102,"
                                "\"answers\":0,\"air\":null}"));
    free(out);
}

/* ---- LoRaWAN: directions from the CoAP roles, SCHC from the bytes ----
 *
 * A server on an ephemeral port (45000, neither 5683 nor 5684): RFC 7252
 * Section 2.1 makes client and server roles of the endpoints, not of the
 * ports, so the requests are uplinks (the LoRaWAN end device is the
 * client, RFC 9011 Section 5) and the responses downlinks, sent in the
 * device's RX1 window (LoRaWAN L2 1.0.4 Section 3.3.1: RECEIVE_DELAY1
 * after the uplink). Each message's figures must be those of the library
 * for the exact CoAP bytes in that direction, with the header compressed
 * by the SCHC rules (RFC 8724 Section 7, RFC 8824) rather than carried
 * whole. */

struct air_case {
    uint8_t coap[512];
    size_t len;
    bool up;
};

/* The library's figures for one message of the exchange below. */
static void expected_air(const struct edhoc_netacct_link *link, const struct air_case *c,
                         struct edhoc_netacct_layers *l)
{
    struct edhoc_netacct_dgram d = {.udp_payload = c->len,
                                    .ipv6 = true,
                                    .src_port = 40001,
                                    .dst_port = 45000,
                                    .addrs_known = true,
                                    .payload = c->coap,
                                    .dir = c->up ? EDHOC_NETACCT_DIR_UP : EDHOC_NETACCT_DIR_DOWN};
    if (!c->up) {
        d.src_port = 45000;
        d.dst_port = 40001;
    }
    assert_int_equal(inet_pton(AF_INET6, c->up ? "2001:db8::1" : "2001:db8::2", d.src_addr), 1);
    assert_int_equal(inet_pton(AF_INET6, c->up ? "2001:db8::2" : "2001:db8::1", d.dst_addr), 1);
    assert_int_equal(edhoc_netacct_datagram(link, &d, l, NULL, 0), 0);
}

/* message_1, message_2, message_3 and the empty 2.04 (RFC 9529 trace 2,
 * A.2 framing) with the server on port 45000; returns the capture's path. */
static void write_ephemeral_capture(char *path, size_t cap, struct air_case cases[4])
{
    char err[256];
    path_in_workdir("lorawan-ephemeral.pcap", path, cap);
    struct edhoc_capture *c = edhoc_capture_open(path, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    if (!c)
        fail_msg("open %s: %s", path, err);
    struct endpoint cl, sv;
    ep6(&cl, "2001:db8::1", 40001);
    ep6(&sv, "2001:db8::2", 45000);
    cases[0].len = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x5001, 1, true, 65, NULL, -1, CBOR_TRUE, 1,
                        m1, m1_len, cases[0].coap);
    cases[0].up = true;
    cases[1].len = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x5001, 1, false, 64, NULL, -1, NULL, 0,
                        m2, m2_len, cases[1].coap);
    cases[2].len = coap(COAP_TYPE_CON, COAP_CODE_POST, 0x5002, 2, true, 65, NULL, -1, C_R, 1, m3,
                        m3_len, cases[2].coap);
    cases[2].up = true;
    cases[3].len = coap(COAP_TYPE_ACK, COAP_CODE_CHANGED, 0x5002, 2, false, -1, NULL, -1, NULL, 0,
                        NULL, 0, cases[3].coap);
    struct timespec ts = {1700000000, 0};
    for (int i = 0; i < 4; i++) {
        ts.tv_sec++;
        assert_int_equal(edhoc_capture_datagram(c, cases[i].up ? SA(cl) : SA(sv),
                                                cases[i].up ? SA(sv) : SA(cl), cases[i].coap,
                                                cases[i].len, &ts),
                         0);
    }
    assert_int_equal(edhoc_capture_flush(c), 0);
    edhoc_capture_close(c);
}

static void assert_air_equal(const struct edhoc_netacct_air *a, const struct edhoc_netacct_air *b)
{
    assert_int_equal(a->tx_us, b->tx_us);
    assert_int_equal(a->rx_us, b->rx_us);
    assert_int_equal(a->peer_tx_us, b->peer_tx_us);
    assert_int_equal(a->peer_rx_us, b->peer_rx_us);
    assert_int_equal(a->link_us, b->link_us);
    assert_int_equal(a->wait_us, b->wait_us);
    assert_int_equal(a->fragments, b->fragments);
    assert_int_equal(a->schc_residue_bits, b->schc_residue_bits);
    assert_int_equal(a->schc_known, b->schc_known);
}

/* A number member in the JSON text after p (compact: "key":value). */
static double json_real_after(const char *p, const char *key)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *k = strstr(p, pat);
    if (!k)
        fail_msg("no %s in %s", key, p);
    return strtod(k + strlen(pat), NULL);
}

static void assert_close(double got, double want)
{
    double tol = 1e-9 * (want < 0 ? -want : want) + 1e-12;
    if (got - want > tol || want - got > tol)
        fail_msg("%.12g, expected %.12g", got, want);
}

static void test_lorawan_ephemeral_server(void **state)
{
    (void)state;
    char path[512];
    struct air_case cases[4];
    memset(cases, 0, sizeof cases);
    write_ephemeral_capture(path, sizeof path, cases);
    /* EU868 DR5 (SF7): every message of this exchange fits one frame of
     * N = 222 bytes (RP002-1.0.4 Table 6), so the per-message figures are
     * those of one unfragmented message each. */
    struct edhoc_netacct_link link = edhoc_netacct_link_lorawan_default();
    link.data_rate = 5;
    struct edhoc_capture_analysis *a;
    assert_int_equal(analyse(path, &link, &a, NULL), 0);
    assert_int_equal(a->n_ex, 1);
    const struct edhoc_capture_exchange *ex = &a->ex[0];
    assert_int_equal(ex->server_port, 45000);
    assert_int_equal(ex->n_msgs, 4);
    static const enum edhoc_capture_msg_type types[4] = {
        EDHOC_CAPTURE_MSG_1, EDHOC_CAPTURE_MSG_2, EDHOC_CAPTURE_MSG_3, EDHOC_CAPTURE_MSG_3_ACK};
    struct edhoc_netacct_air up, down;
    memset(&up, 0, sizeof up);
    memset(&down, 0, sizeof down);
    uint64_t ex_msg1_tx_us = ex->msgs[0].air.tx_us;
    for (int i = 0; i < 4; i++) {
        const struct edhoc_capture_msg *m = &ex->msgs[i];
        assert_int_equal(m->type, types[i]);
        assert_int_equal(m->from_initiator, cases[i].up);
        struct edhoc_netacct_layers l;
        expected_air(&link, &cases[i], &l);
        assert_int_equal(l.downlink, !cases[i].up);
        /* SCHC from the message's bytes: a residue known and the packet
         * smaller than the CoAP message (the header compressed). */
        assert_true(l.air.schc_known);
        assert_int_equal(l.link,
                         EDHOC_NETACCT_LORAWAN_MAC_OVERHEAD +
                             (size_t)edhoc_netacct_schc_packet(cases[i].coap, cases[i].len));
        assert_true(l.link - EDHOC_NETACCT_LORAWAN_MAC_OVERHEAD < cases[i].len);
        assert_int_equal(m->link_frames, 1);
        assert_int_equal(m->link_bytes, l.link);
        assert_air_equal(&m->air, &l.air);
        /* A downlink waits RECEIVE_DELAY1 (1 s) after the uplink before
         * it; an uplink does not. */
        if (cases[i].up)
            assert_true(m->air.link_us < 1000000);
        else
            assert_true(m->air.link_us >= 1000000);
        edhoc_netacct_air_add(cases[i].up ? &up : &down, &l.air);
    }
    /* The totals split the same way: uplink = the initiator's messages. */
    assert_air_equal(&ex->totals.handshake.up, &up);
    assert_air_equal(&ex->totals.handshake.down, &down);
    free(a);

    if (!getenv("EDHOC_CLI"))
        return;
    /* The CLI's per-role energy of the handshake from the same figures:
     * the initiator sends the uplinks and receives the downlinks. */
    char args[1200];
    char *out = NULL;
    snprintf(args, sizeof args, "bytes --json --link lorawan --data-rate 5 '%s'", path);
    assert_int_equal(run_cli(args, false, &out), 0);
    bytes_json_checked(&out, "bytes", false);
    struct edhoc_netacct_radio radio;
    assert_int_equal(edhoc_netacct_radio_builtin("sx1276", &radio), 0);
    struct edhoc_netacct_energy us = edhoc_netacct_energy_of(&radio, &up, true);
    struct edhoc_netacct_energy ur = edhoc_netacct_energy_of(&radio, &up, false);
    struct edhoc_netacct_energy ds = edhoc_netacct_energy_of(&radio, &down, true);
    struct edhoc_netacct_energy dr = edhoc_netacct_energy_of(&radio, &down, false);
    const char *air = strstr(out, "\"air\":{\"frames\":");
    assert_non_null(air);
    assert_close(json_real_after(air, "initiator_mj"),
                 (us.tx_j + us.rx_j + dr.tx_j + dr.rx_j) * 1e3);
    assert_close(json_real_after(air, "responder_mj"),
                 (ur.tx_j + ur.rx_j + ds.tx_j + ds.rx_j) * 1e3);
    assert_close(json_real_after(air, "link_ms"), (double)(up.link_us + down.link_us) / 1e3);
    assert_close(json_real_after(air, "air_ms"), (double)(up.tx_us + down.tx_us) / 1e3);
    /* Each message's own air figures in the JSON: message_1's on-air time
     * is its uplink frame's (the first message object's "air"). */
    const char *m1 = strstr(out, "\"name\":\"message_1\"");
    assert_non_null(m1);
    const char *m1_air = strstr(m1, "\"air\":{\"air_ms\":");
    assert_non_null(m1_air);
    assert_close(json_real_after(m1_air, "air_ms"), (double)ex_msg1_tx_us / 1e3);
    free(out);
}

/* ---- edhoc-cli bytes --compare ---- */

/* The JSON object of one run of the comparison: from its "mode" to the
 * next run (or the end). */
static const char *compare_run(const char *json, const char *mode, const char **end)
{
    char key[64];
    snprintf(key, sizeof key, "\"mode\": \"%s\"", mode);
    const char *p = strstr(json, key);
    assert_non_null(p);
    const char *e = strstr(p + 1, "{\"protocol\":");
    if (!e)
        e = p + strlen(p);
    *end = e;
    return p;
}

/* The number after "key": within [p, end); fails the test when absent. */
static long json_number_in(const char *p, const char *end, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *v = strstr(p, k);
    assert_non_null(v);
    assert_true(v < end);
    return strtol(v + strlen(k), NULL, 10);
}

/* One message object of a run, by name. */
static const char *compare_msg(const char *run, const char *end, const char *name,
                               const char **msg_end)
{
    char k[64];
    snprintf(k, sizeof k, "{\"name\": \"%s\"", name);
    const char *m = strstr(run, k);
    assert_non_null(m);
    assert_true(m < end);
    *msg_end = strchr(m, '}');
    assert_non_null(*msg_end);
    return m;
}

/* The EDHOC messages of one mode: their EDHOC sizes, each carried in a
 * bigger CoAP message, and the totals adding up. */
/* The link model's frames and bytes of one datagram of udp bytes. */
static void link_of(long udp, long *frames, long *bytes)
{
    struct edhoc_netacct_link l = edhoc_netacct_link_802154_default();
    struct edhoc_netacct_dgram d = {.udp_payload = (size_t)udp, .ipv6 = false};
    struct edhoc_netacct_layers lay;
    assert_int_equal(edhoc_netacct_datagram(&l, &d, &lay, NULL, 0), 0);
    *frames += lay.frames;
    *bytes += (long)lay.link;
}

/* echo: the responder verifies the client's address before sending a
 * message_2 over 3 times message_1 (RFC 9175 Section 2.4 item 3, RFC 9528
 * Section 9.7): message_1 is answered by 4.01 + Echo and sent again, the
 * same EDHOC message counted once in the EDHOC total and twice in UDP. */
static void check_edhoc_run(const char *json, const char *mode, long e1, long e2, long e3,
                            bool link, bool echo)
{
    const char *end, *me;
    const char *r = compare_run(json, mode, &end);
    assert_non_null(strstr(r, "\"status\": \"ok\""));
    assert_true(strstr(r, "\"status\": \"ok\"") < end);
    assert_true(strstr(r, "\"cross_checked\": true") < end);
    const char *names[3] = {"message_1", "message_2", "message_3"};
    long want[3] = {e1, e2, e3}, udp_sum = 0, frames_sum = 0, fbytes_sum = 0;
    const char *from = r;
    if (echo) {
        const char *m = compare_msg(r, end, "message_1", &me);
        assert_int_equal(json_number_in(m, me, "edhoc_bytes"), e1);
        const char *e = compare_msg(me, end, "(4.01 Echo)", &from);
        long udp1 = json_number_in(m, me, "udp_bytes"),
             udp_echo = json_number_in(e, from, "udp_bytes");
        /* At most 3 times what the unverified address sent. */
        assert_true(udp_echo <= 3 * udp1);
        udp_sum += udp1 + udp_echo;
        if (link) {
            link_of(udp1, &frames_sum, &fbytes_sum);
            link_of(udp_echo, &frames_sum, &fbytes_sum);
        }
    } else {
        assert_null(memmem(r, (size_t)(end - r), "(4.01 Echo)", 11));
    }
    for (int i = 0; i < 3; i++) {
        const char *m = compare_msg(i == 0 ? from : r, end, names[i], &me);
        assert_int_equal(json_number_in(m, me, "edhoc_bytes"), want[i]);
        long udp = json_number_in(m, me, "udp_bytes");
        /* A CoAP header (4) at least, and a POST to /.well-known/edhoc or
         * a response with a Content-Format around it. */
        assert_true(udp >= want[i] + 4);
        assert_int_equal(json_number_in(m, me, "datagrams"), 1);
        udp_sum += udp;
        if (link) {
            /* The link numbers are those of the netacct model for this
             * datagram (IPv4 loopback crossing 802.15.4 as IPv6). */
            struct edhoc_netacct_link l = edhoc_netacct_link_802154_default();
            struct edhoc_netacct_dgram d = {.udp_payload = (size_t)udp, .ipv6 = false};
            struct edhoc_netacct_layers lay;
            assert_int_equal(edhoc_netacct_datagram(&l, &d, &lay, NULL, 0), 0);
            assert_int_equal(json_number_in(m, me, "frames"), lay.frames);
            assert_int_equal(json_number_in(m, me, "link_bytes"), lay.link);
            frames_sum += lay.frames;
            fbytes_sum += (long)lay.link;
        } else {
            /* No link model: null, not a number (issue 14: null for absent). */
            assert_non_null(memmem(m, (size_t)(me - m), "\"frames\": null", 14));
        }
    }
    /* The 2.04 response to message_3 completes the handshake over CoAP. */
    const char *ack = compare_msg(r, end, "(2.04 Changed)", &me);
    long ack_udp = json_number_in(ack, me, "udp_bytes");
    assert_true(ack_udp >= 4);
    const char *hs = strstr(r, "\"handshake_total\": ");
    assert_non_null(hs);
    assert_true(hs < end);
    const char *hse = strchr(hs, '}');
    assert_int_equal(json_number_in(hs, hse, "edhoc_bytes"), e1 + e2 + e3);
    assert_int_equal(json_number_in(hs, hse, "udp_bytes"), udp_sum + ack_udp);
    assert_int_equal(json_number_in(hs, hse, "datagrams"), echo ? 6 : 4);
    if (link) {
        const char *m = compare_msg(r, end, "(2.04 Changed)", &me);
        assert_int_equal(json_number_in(hs, hse, "frames"),
                         frames_sum + json_number_in(m, me, "frames"));
        assert_int_equal(json_number_in(hs, hse, "link_bytes"),
                         fbytes_sum + json_number_in(m, me, "link_bytes"));
    }
    assert_int_equal(json_number_in(r, end, "round_trips"), echo ? 3 : 2);
    /* One OSCORE GET and its response. */
    const char *rq = strstr(r, "\"request\": ");
    assert_non_null(rq);
    assert_true(rq < end);
    assert_int_equal(json_number_in(rq, end, "datagrams"), 2);
    assert_true(json_number_in(rq, end, "udp_bytes") > 2 * 4);
}

static void check_dtls_run(const char *json, const char *mode, bool certs, bool link)
{
    const char *end;
    const char *r = compare_run(json, mode, &end);
    assert_true(strstr(r, "\"status\": \"ok\"") < end);
    const char *hs = strstr(r, "\"handshake_total\": ");
    assert_non_null(hs);
    assert_true(hs < end);
    const char *hse = strchr(hs, '}');
    long udp = json_number_in(hs, hse, "udp_bytes");
    long dgrams = json_number_in(hs, hse, "datagrams");
    /* At least ClientHello, the server's hello flight, the client's key
     * exchange + Finished and the server's Finished. */
    assert_true(dgrams >= 4);
    assert_true(udp > 0);
    if (certs)
        /* Both 293-byte certificates cross the wire. */
        assert_true(udp > 2 * 293);
    const char *f1 = strstr(r, "\"records\": \"ClientHello\"");
    assert_non_null(f1);
    assert_true(f1 < end);
    const char *cert = strstr(r, "Certificate(");
    assert_int_equal(cert && cert < end, certs);
    if (certs) {
        /* The leaf is the 293-byte demo certificate, first in the list. */
        const char *leaf = strstr(cert, ": 293");
        assert_non_null(leaf);
        assert_true(leaf < strchr(cert, ')'));
    }
    const char *fin = strstr(r, "Finished(encrypted)");
    assert_non_null(fin);
    assert_true(fin < end);
    assert_true(json_number_in(r, end, "round_trips") >= 2);
    assert_true(json_number_in(r, end, "cipher_suite") > 0);
    const char *rq = strstr(r, "\"request\": ");
    assert_non_null(rq);
    assert_true(rq < end);
    assert_int_equal(json_number_in(rq, end, "datagrams"), 2);
    if (link) {
        long frames = json_number_in(hs, hse, "frames");
        assert_true(frames >= dgrams);
        assert_true(json_number_in(hs, hse, "link_bytes") > udp);
    } else {
        assert_non_null(memmem(hs, (size_t)(hse - hs), "\"frames\": null", 14));
    }
}

static void test_compare(void **state)
{
    (void)state;
    if (!getenv("EDHOC_CLI")) {
        print_message("EDHOC_CLI not set: CLI checks skipped\n");
        skip();
    }
    char *out = NULL;
    /* What the library itself computes for the x5chain configuration with
     * one-byte connection identifiers. */
    assert_int_equal(run_cli("simulate --json --c-i 37 --c-r 27 --method 0 --suites 2 "
                             "--id-cred-i x5chain --id-cred-r x5chain",
                             false, &out),
                     0);
    assert_non_null(strstr(out, "\"handshake_bytes\": 814"));
    free(out);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(run_cli("bytes --compare --json", false, &out), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    bytes_json_checked(&out, "bytes-compare", true);
    /* Bounded: the default global timeout is 60 s. */
    assert_true(t1.tv_sec - t0.tv_sec < 60);
    check_edhoc_run(out, "x5chain", 37, 401, 376, false, true);
    check_edhoc_run(out, "x5t", 37, 115, 90, false, false);
    check_edhoc_run(out, "static_dh_kid", 37, 45, 19, false, false);
    /* The certificates named by a one-byte kid (RFC 9528 Section 3.5.3):
     * message_2 is x5t's less the 13 bytes x5t's [alg, 8-byte hash] adds
     * over a one-byte kid in ID_CRED_R (and message_3 likewise). */
    check_edhoc_run(out, "x5_kid", 37, 102, 77, false, false);
    check_dtls_run(out, "x509", true, false);
    check_dtls_run(out, "psk", false, false);
    {
        /* libcoap 4.3.1's OpenSSL backend has no raw public keys. */
        const char *end;
        const char *r = compare_run(out, "rpk", &end);
        const char *ok = strstr(r, "\"status\": \"ok\"");
        if (!ok || ok > end) {
            const char *ns = strstr(r, "\"status\": \"not supported\"");
            assert_non_null(ns);
            assert_true(ns < end);
            assert_non_null(strstr(r, "not supported by libcoap 4.3.1 with OpenSSL"));
        }
    }
    assert_null(strstr(out, "\"link\": {"));
    assert_non_null(strstr(out, "\"link\": null"));
    assert_non_null(strstr(out, "\"edhoc_x5chain\": 808, \"edhoc_by_reference\": 242, "
                                "\"edhoc_static_dh\": 101, \"tls13\": 1371, \"dtls13\": 1500"));
    assert_non_null(strstr(out, "\"method3_suite2_kid_one_suite\": [37, 45, 19]"));
    assert_non_null(
        strstr(out, "\"rfc9529_trace1\": [37, 116, 90], \"rfc9529_trace1_total\": 243"));
    free(out);

    assert_int_equal(run_cli("bytes --compare --json --link 802.15.4", false, &out), 0);
    bytes_json_checked(&out, "bytes-compare", true);
    assert_non_null(strstr(out, "\"link\": {\"model\": \"802.15.4\""));
    check_edhoc_run(out, "x5chain", 37, 401, 376, true, true);
    check_edhoc_run(out, "x5t", 37, 115, 90, true, false);
    check_edhoc_run(out, "static_dh_kid", 37, 45, 19, true, false);
    check_edhoc_run(out, "x5_kid", 37, 102, 77, true, false);
    check_dtls_run(out, "x509", true, true);
    check_dtls_run(out, "psk", false, true);
    free(out);

    /* The table: frame columns only with a link, and the published
     * figures marked as such. */
    assert_int_equal(run_cli("bytes --compare", false, &out), 0);
    assert_non_null(strstr(out, "Summary (UDP payload bytes"));
    assert_non_null(strstr(out, "37+401+376 = 814"));
    assert_non_null(strstr(out, "37+115+90 = 242"));
    assert_non_null(strstr(out, "37+45+19 = 101"));
    assert_non_null(strstr(out, "pre-RFC EDHOC draft and a paper"));
    assert_null(strstr(out, "frame bytes"));
    free(out);
    assert_int_equal(run_cli("bytes --compare --link 802.15.4", false, &out), 0);
    assert_non_null(strstr(out, "frame bytes"));
    assert_non_null(strstr(out, "Link: IEEE 802.15.4"));
    free(out);

    /* The global bound holds: with one second every run either finishes
     * or is reported as stopped by it (checked below), and the command
     * does not hang past it. The whole comparison takes about 1.5 s on an
     * idle machine, so wall time cannot tell a bound from none; what it
     * catches is an exchange left waiting with no end. The allowance is
     * measured against this machine as it is now: the same program
     * refusing a bad command line (start, parse, exit) under the same
     * load, so that a busy or sanitized run does not fail it (4 s was once
     * exceeded by a sanitized run beside other tests). */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(run_cli("bytes --compare --timeout 0", true, &out), 2);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    free(out);
    double start_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = run_cli("bytes --compare --timeout 1", true, &out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double bounded_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (bounded_s > 15.0 + 10 * start_s)
        fail_msg("bytes --compare --timeout 1 took %.2f s (a bad command line took %.2f s)",
                 bounded_s, start_s);
    if (rc != 0) {
        assert_int_equal(rc, 1);
        assert_non_null(strstr(out, "--timeout bound"));
    }
    free(out);

    /* Bad command lines: exit 2 before anything runs. */
    static const char *bad[] = {
        "bytes --compare x.pcap",
        "bytes --compare --link token-ring",
        "bytes --compare --timeout 0",
        "bytes --compare --timeout 601",
        "bytes --compare --timeout x",
        "bytes --compare --no-such-flag",
        "bytes --compare --link 802.15.4 --link-mtu 64",
        "bytes --compare --link 802.15.4 --mac-header 110",
        "bytes --compare --link-mtu 0",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run_cli(bad[i], true, &out), 2);
        assert_non_null(strstr(out, "edhoc-cli bytes:"));
        free(out);
    }
    assert_int_equal(run_cli("bytes --compare --help", false, &out), 0);
    assert_non_null(strstr(out, "edhoc-cli bytes --compare [OPTIONS]"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_lorawan_ephemeral_server),
        cmocka_unit_test(test_compare),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
