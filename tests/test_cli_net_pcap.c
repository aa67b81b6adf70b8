/*
 * End-to-end tests of what the initiator and coap commands record and
 * report about the link: layers and pcap files (checked against tshark),
 * wildcard addresses in captures, `simulate` framing against a live run,
 * refused air options, and `bytes --compare` on LoRaWAN.
 */
#include "cli_net_test_common.h"

/* The values of "field": N (or "field":N) in order, from the first
 * occurrence of start up to the closing bracket of that array. */
static size_t json_series(const char *out, const char *start, const char *field, long *v,
                          size_t max)
{
    const char *p = strstr(out, start);
    if (!p)
        return 0;
    const char *end = strchr(p, ']');
    char f1[64], f2[64];
    snprintf(f1, sizeof f1, "\"%s\": ", field);
    snprintf(f2, sizeof f2, "\"%s\":", field);
    size_t n = 0;
    while (n < max) {
        const char *a = strstr(p, f1), *b = strstr(p, f2);
        const char *q = a && (!b || a < b) ? a : b;
        if (!q || (end && q > end))
            break;
        size_t fl = q == a ? strlen(f1) : strlen(f2);
        v[n++] = strtol(q + fl, NULL, 10);
        p = q + fl;
    }
    return n;
}

struct tshark_pkt {
    long ip_len, ipv6_plen, udp_len, frame_len, sport, dport;
};

/* tshark's lengths of every packet of a capture (-1 for an empty field). */
static size_t tshark_lengths(const char *path, struct tshark_pkt *pk, size_t max)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "tshark -n -r %s -T fields -E separator=, -e ip.len -e ipv6.plen -e udp.length "
             "-e frame.len -e udp.srcport -e udp.dstport 2>/dev/null",
             path);
    char *out;
    if (net_sh(cmd, &out, 30) != 0) {
        free(out);
        return 0;
    }
    size_t n = 0;
    for (char *line = strtok(out, "\n"); line && n < max; line = strtok(NULL, "\n")) {
        long f[6];
        char *p = line;
        for (int k = 0; k < 6; k++) {
            char *e;
            long x = strtol(p, &e, 10);
            f[k] = e == p ? -1 : x;
            p = strchr(e, ',');
            p = p ? p + 1 : e;
        }
        pk[n++] = (struct tshark_pkt){f[0], f[1], f[2], f[3], f[4], f[5]};
    }
    free(out);
    return n;
}

static bool have_tshark(void)
{
    return system("tshark --version >/dev/null 2>&1") == 0;
}

/* One initiator run with --pcap: its JSON numbers per message against
 * tshark's for the same packets and against `edhoc-cli bytes`. */
static void check_capture_run(const struct net_proc *r, bool v6, const char *pcap)
{
    char *out;
    int rc =
        CLI_RUN(&out, 30, "initiator coap://%s:%u --json --pcap %s --link 802.15.4 --timeout 10",
                v6 ? "[::1]" : "127.0.0.1", v6 ? r->port6 : r->port, pcap);
    char *f = expect_ok_json(out, rc);
    long coap[LAYER_MSGS + 1], udp[LAYER_MSGS + 1], ip[LAYER_MSGS + 1], frames[LAYER_MSGS + 1],
        link[LAYER_MSGS + 1], dg[LAYER_MSGS + 1], ver[LAYER_MSGS + 1];
    assert_int_equal(json_series(out, "\"messages\": [", "coap_bytes", coap, 7), LAYER_MSGS);
    assert_int_equal(json_series(out, "\"messages\": [", "udp_bytes", udp, 7), LAYER_MSGS);
    assert_int_equal(json_series(out, "\"messages\": [", "ip_bytes", ip, 7), LAYER_MSGS);
    assert_int_equal(json_series(out, "\"messages\": [", "frames", frames, 7), LAYER_MSGS);
    assert_int_equal(json_series(out, "\"messages\": [", "link_bytes", link, 7), LAYER_MSGS);
    assert_int_equal(json_series(out, "\"messages\": [", "datagrams", dg, 7), LAYER_MSGS);
    assert_int_equal(json_series(out, "\"messages\": [", "ip_version", ver, 7), LAYER_MSGS);
    long sum_ip = 0;
    for (int i = 0; i < LAYER_MSGS; i++) {
        assert_int_equal(dg[i], 1);
        assert_int_equal(ver[i], v6 ? 6 : 4);
        assert_int_equal(udp[i], coap[i] + 8);
        assert_int_equal(ip[i], udp[i] + (v6 ? 40 : 20));
        sum_ip += ip[i];
    }
    /* The totals add up; the link is described. */
    long all_ip[2];
    assert_int_equal(json_series(out, "\"all\": {", "ip_bytes", all_ip, 1), 1);
    assert_int_equal(all_ip[0], sum_ip);
    /* The link as numbers, its assumptions in a member of their own. */
    assert_has(f, "link.type=\"802.15.4\"");
    assert_has(f, "link.frame_max=127");
    assert_has(f, "link.mtu=null");
    char desc[600];
    assert_true(get(f, "link.description", desc, sizeof desc));
    assert_true(strncmp(desc, "\"IEEE 802.15.4: 127-byte frames", 31) == 0);
    free(f);
    /* 6LoWPAN by hand (defaults: 25 bytes of MAC header + FCS per frame,
     * 9 bytes IPHC + NHC UDP with CoAP's uncompressible ports, 102 bytes
     * for 6LoWPAN per frame): message_1 is 64 CoAP bytes -> one frame of
     * 25 + 9 + 64 = 98 bytes, whatever the IP version on the host. */
    assert_int_equal(coap[0], 64);
    assert_int_equal(frames[0], 1);
    assert_int_equal(link[0], 98);
    /* The 140-byte OSCORE response (the /.well-known/core listing) is
     * fragmented: FRAG1 25 + 4 + 9 + 88, FRAGN 25 + 5 + 52 = 126 + 82. */
    if (coap[5] == 140) {
        assert_int_equal(frames[5], 2);
        assert_int_equal(link[5], 208);
    }
    if (!have_tshark()) {
        print_message("tshark not installed: capture comparison skipped\n");
        free(out);
        return;
    }
    /* tshark sees the same packets with the same lengths. */
    struct tshark_pkt pk[16];
    size_t np = tshark_lengths(pcap, pk, 16);
    assert_int_equal(np, LAYER_MSGS);
    uint16_t server = v6 ? r->port6 : r->port;
    for (size_t i = 0; i < np; i++) {
        /* Even packets go to the responder, odd ones come back. */
        assert_int_equal(i % 2 ? pk[i].sport : pk[i].dport, server);
        assert_int_equal(pk[i].udp_len, udp[i]);
        assert_int_equal(pk[i].frame_len, ip[i]); /* raw IP link type */
        if (v6)
            assert_int_equal(pk[i].ipv6_plen + 40, ip[i]);
        else
            assert_int_equal(pk[i].ip_len, ip[i]);
    }
    /* Its CoAP dissector decodes all six and the OSCORE dissector two. */
    char *dec;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "tshark -n -r %s -d udp.port==%u,coap -Y coap 2>/dev/null | wc -l",
             pcap, server);
    assert_int_equal(net_sh(cmd, &dec, 30), 0);
    assert_int_equal(atoi(dec), LAYER_MSGS);
    free(dec);
    snprintf(cmd, sizeof cmd, "tshark -n -r %s -d udp.port==%u,coap -Y oscore 2>/dev/null | wc -l",
             pcap, server);
    assert_int_equal(net_sh(cmd, &dec, 30), 0);
    assert_int_equal(atoi(dec), 2);
    free(dec);
    /* `edhoc-cli bytes` on the capture: the same numbers per message. */
    char *b;
    rc = CLI_RUN(&b, 30, "bytes %s --json --link 802.15.4", pcap);
    assert_int_equal(rc, 0);
    long bc[8], bu[8], bi[8], bf[8], bl[8];
    assert_int_equal(net_json_valid(b, "bytes", false), 0);
    assert_int_equal(json_series(b, "\"messages\": [", "coap_bytes", bc, 8), LAYER_MSGS);
    assert_int_equal(json_series(b, "\"messages\": [", "udp_bytes", bu, 8), LAYER_MSGS);
    assert_int_equal(json_series(b, "\"messages\": [", "ip_bytes", bi, 8), LAYER_MSGS);
    assert_int_equal(json_series(b, "\"messages\": [", "frames", bf, 8), LAYER_MSGS);
    assert_int_equal(json_series(b, "\"messages\": [", "link_bytes", bl, 8), LAYER_MSGS);
    for (int i = 0; i < LAYER_MSGS; i++) {
        assert_int_equal(bc[i], coap[i]);
        assert_int_equal(bu[i], udp[i]);
        assert_int_equal(bi[i], ip[i]);
        assert_int_equal(bf[i], frames[i]);
        assert_int_equal(bl[i], link[i]);
    }
    free(b);
    free(out);
}

/* The lines tshark prints for the packets of one initiator port. */
static char *tshark_flow(const char *pcap, long port)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd,
             "tshark -n -r %s -Y \"udp.port==%ld\" -T fields -e ip.src -e ipv6.src -e udp.srcport "
             "-e ip.dst -e ipv6.dst -e udp.dstport -e udp.length -e udp.payload 2>/dev/null",
             pcap, port);
    char *out;
    if (net_sh(cmd, &out, 30) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

static void test_layers_and_pcap(void **state)
{
    (void)state;
    struct net_proc r;
    char rpcap[300], p4[300], p6[300];
    net_path(rpcap, sizeof rpcap, "responder.pcap");
    net_path(p4, sizeof p4, "initiator4.pcap");
    net_path(p6, sizeof p6, "initiator6.pcap");
    char args[600];
    snprintf(args, sizeof args, "--listen 127.0.0.1:0 --listen [::1]:0 --pcap %s --link 802.15.4",
             rpcap);
    assert_int_equal(net_responder_start(&r, "layers", args), 0);
    check_capture_run(&r, false, p4);
    check_capture_run(&r, true, p6);
    /* SIGTERM: the responder flushes its capture and logs each handshake
     * with its bytes per layer. */
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    char *log = net_read_file(r.log);
    assert_non_null(log);
    assert_int_equal(net_count(log, "bytes=101 outcome=ok; datagrams=4 coap_bytes=168 "
                                    "udp_bytes=200 ip_bytes=280 ip=IPv4 frames=4 link_bytes=304"),
                     1);
    assert_int_equal(net_count(log, "bytes=101 outcome=ok; datagrams=4 coap_bytes=168 "
                                    "udp_bytes=200 ip_bytes=360 ip=IPv6 frames=4 link_bytes=304"),
                     1);
    free(log);
    if (!have_tshark())
        return;
    /* The responder's capture holds the same datagrams (addresses, ports,
     * payloads) as each initiator's, seen from the other end. */
    const char *caps[2] = {p4, p6};
    for (int k = 0; k < 2; k++) {
        struct tshark_pkt pk[16];
        assert_int_equal(tshark_lengths(caps[k], pk, 16), LAYER_MSGS);
        char *mine = tshark_flow(caps[k], pk[0].sport);
        char *theirs = tshark_flow(rpcap, pk[0].sport);
        assert_non_null(mine);
        assert_non_null(theirs);
        assert_int_equal(net_count(mine, "\n"), LAYER_MSGS);
        assert_string_equal(mine, theirs);
        free(mine);
        free(theirs);
    }
}

/* A responder bound to the wildcard addresses writes the address the
 * kernel used towards each peer (not 0.0.0.0 or ::), for every datagram of
 * several handshakes in a row, over both families. */
static void test_wildcard_pcap_addresses(void **state)
{
    (void)state;
    if (!have_tshark())
        skip();
    struct net_proc r;
    char rpcap[300];
    net_path(rpcap, sizeof rpcap, "wildcard.pcap");
    char args[600];
    snprintf(args, sizeof args, "--listen 0.0.0.0:0 --listen [::]:0 --pcap %s", rpcap);
    assert_int_equal(net_responder_start(&r, "wildcard", args), 0);
    for (int i = 0; i < 3; i++) {
        char *out;
        int rc = CLI_RUN(&out, 30, "initiator coap://%s:%u --method 3 --suites 2 --timeout 10",
                         i == 1 ? "[::1]" : "127.0.0.1", i == 1 ? r.port6 : r.port);
        assert_int_equal(rc, 0);
        free(out);
    }
    assert_int_equal(net_proc_stop(&r, SIGTERM, 5000), 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "tshark -n -r %s -T fields -e ip.src -e ip.dst -e ipv6.src -e ipv6.dst 2>/dev/null",
             rpcap);
    char *out;
    assert_int_equal(net_sh(cmd, &out, 30), 0);
    /* 3 handshakes x 4 datagrams + the OSCORE request and response each. */
    assert_int_equal(net_count(out, "\n"), 18);
    assert_int_equal(net_count(out, "127.0.0.1\t127.0.0.1\t\t\n"), 12);
    assert_int_equal(net_count(out, "\t\t::1\t::1\n"), 6);
    assert_null(strstr(out, "0.0.0.0"));
    free(out);
}

/* `coap --pcap`: the request and response as sent, on a bad path too. */
static void test_coap_pcap(void **state)
{
    (void)state;
    char pcap[300];
    net_path(pcap, sizeof pcap, "coap.pcap");
    char *out;
    int rc = CLI_RUN(&out, 30, "coap GET coap://127.0.0.1:%u/.well-known/core --pcap %s",
                     main_responder.port, pcap);
    free(out);
    /* Without OSCORE the resource is refused; the datagrams are still written. */
    assert_true(rc == 0 || rc == 1);
    if (have_tshark()) {
        struct tshark_pkt pk[8];
        assert_int_equal(tshark_lengths(pcap, pk, 8), 2);
        assert_int_equal(pk[0].dport, main_responder.port);
        assert_int_equal(pk[1].sport, main_responder.port);
        assert_int_equal(pk[0].ip_len, pk[0].udp_len + 20);
    }
    rc = CLI_RUN(&out, 10, "coap GET coap://127.0.0.1:%u/x --pcap /nonexistent-dir/x.pcap",
                 main_responder.port);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "--pcap"));
    free(out);
    rc = CLI_RUN(&out, 10, "initiator coap://127.0.0.1:%u --link token-ring", main_responder.port);
    assert_int_equal(rc, 2);
    free(out);
}

/* simulate's per-layer numbers (each message encoded as the A.2 framing
 * would send it) equal the ones measured on the socket for the same
 * configuration, link frames included. */
static void test_simulate_framing_matches_live(void **state)
{
    (void)state;
    char *live, *sim;
    /* A fresh responder: one with many contexts hands out longer C_R. */
    struct net_proc r;
    assert_int_equal(net_responder_start(&r, "framing", "--listen 127.0.0.1:0 --listen [::1]:0"),
                     0);
    int rc = CLI_RUN(&live, 30,
                     "initiator coap://[::1]:%u --method 3 --suites 2 --id-cred kid --json "
                     "--link 802.15.4",
                     r.port6);
    net_proc_stop(&r, SIGTERM, 5000);
    char *lf = expect_ok_json(live, rc);
    rc = CLI_RUN(&sim, 30,
                 "simulate --method 3 --suites 2 --id-cred-i kid --id-cred-r kid --json "
                 "--link 802.15.4");
    assert_int_equal(rc, 0);
    char *sf = flat(sim);
    assert_has(sf, "framed.measured=false");
    const char *fields[] = {"edhoc_bytes", "coap_bytes", "udp_bytes",
                            "ip_bytes",    "frames",     "link_bytes"};
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        /* message_1..3 and the 2.04: the first four rows of both. */
        for (int i = 0; i < 4; i++) {
            char pa[80], pb[80], a[40], b[40];
            snprintf(pa, sizeof pa, "messages.%d.%s", i, fields[k]);
            snprintf(pb, sizeof pb, "framed.messages.%d.%s", i, fields[k]);
            if (!get(lf, pa, a, sizeof a) || !get(sf, pb, b, sizeof b))
                fail_msg("%s / %s missing:%s\n%s", pa, pb, lf, sf);
            assert_string_equal(a, b);
        }
    }
    free(lf);
    free(sf);
    free(live);
    free(sim);
    rc = CLI_RUN(&sim, 10, "simulate --pcap x.pcap");
    assert_int_equal(rc, 2);
    free(sim);
}

/* The air-model options: each bad value is refused with its own message
 * and exit status 2 (a bad command line), and an option for another link
 * than the one chosen names the link it needs. */
static void test_air_options_refused(void **state)
{
    (void)state;
    static const struct {
        const char *args, *message;
    } cases[] = {
        {"bytes --compare --link lorawan --data-rate 6",
         "edhoc-cli bytes: --data-rate: expected 0..5 for eu868, got '6'"},
        {"bytes --compare --link lorawan --region us915 --data-rate 5",
         "edhoc-cli bytes: --data-rate: expected 0..4 for us915, got '5'"},
        {"bytes --compare --link lorawan --region eu433",
         "edhoc-cli bytes: --region: expected eu868 or us915, got 'eu433'"},
        {"bytes --compare --link lorawan --duty-cycle 0",
         "edhoc-cli bytes: --duty-cycle: expected 0.001..100 percent, got '0'"},
        {"bytes --compare --link ble --phy 3m",
         "edhoc-cli bytes: --phy: expected 1m or 2m, got '3m'"},
        {"bytes --compare --link ble --ble-data-length 26",
         "edhoc-cli bytes: --ble-data-length: expected 27..251 bytes, got '26'"},
        {"bytes --compare --link ble --ble-interval 8",
         "edhoc-cli bytes: --ble-interval: expected 7.5..4000 ms in steps of 1.25, got '8'"},
        {"bytes --compare --link 802.15.4 --csma-be 9",
         "edhoc-cli bytes: --csma-be: expected 0..8, got '9'"},
        {"bytes --compare --link 802.15.4 --retries 8",
         "edhoc-cli bytes: --retries: expected 0..7 (macMaxFrameRetries), got '8'"},
        {"bytes --compare --link ble --data-rate 3",
         "edhoc-cli bytes: --data-rate describes a lorawan link: give --link lorawan before it"},
        {"bytes --compare --phy 2m",
         "edhoc-cli bytes: --phy describes a ble link: give --link ble before it"},
        {"bytes --compare --link wifi",
         "edhoc-cli bytes: --link: expected one of none, 802.15.4, 802154, ble, lorawan, got "
         "'wifi'"},
        {"bytes --compare --link lorawan --radio-profile /nonexistent/radio",
         "edhoc-cli bytes: --radio-profile: '/nonexistent/radio' is neither a built-in profile "
         "(cc2538, nrf52840, sx1276) nor a readable file"},
        {"initiator coap://127.0.0.1:9 --link ble --region eu868",
         "edhoc-cli initiator: --region describes a lorawan link: give --link lorawan before it"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        int rc = CLI_RUN(&out, 30, "%s", cases[i].args);
        if (rc != 2 || !strstr(out, cases[i].message))
            fail_msg("%s: exit %d, expected 2 and \"%s\":\n%s", cases[i].args, rc, cases[i].message,
                     out);
        free(out);
    }
}

/* bytes --compare on LoRaWAN EU868 DR0 (SF12, at most 51 bytes of
 * FRMPayload, RP002): the x5chain message_2 does not fit one frame and is
 * reported as SCHC fragments. The relay records sizes only, so the CoAP
 * message of u bytes travels whole: RFC 9011 tiles of 10 bytes, ceil(u /
 * 10) of them, the last (at most 10 bytes) in the All-1 beside the 4-byte
 * RCS (1 + 4 + 10 <= 51), the others 5 to a fragment ((51 - 1) / 10):
 * ceil((tiles - 1) / 5) + 1 fragments; a message of at most 51 bytes
 * is one frame. */
static void test_compare_lorawan(void **state)
{
    (void)state;
    char *out;
    int rc = CLI_RUN(&out, 120, "bytes --compare --link lorawan --data-rate 0 --json -q");
    assert_int_equal(rc, 0);
    assert_valid(out, "bytes-compare");
    char *f = flat(out);
    char v[400];
    assert_true(get(f, "link.model", v, sizeof v));
    assert_string_equal(v, "\"lorawan\"");
    assert_true(get(f, "radio.name", v, sizeof v));
    assert_string_equal(v, "\"sx1276\"");
    assert_true(get(f, "runs.0.mode", v, sizeof v));
    assert_string_equal(v, "\"x5chain\"");
    /* message_2 comes after message_1 and, when the responder's
     * amplification limit asks for it, its 4.01 Echo challenge. */
    int k = 0;
    char path[80];
    for (; k < 8; k++) {
        snprintf(path, sizeof path, "runs.0.messages.%d.name", k);
        if (get(f, path, v, sizeof v) && !strcmp(v, "\"message_2\""))
            break;
    }
    assert_true(k < 8);
    /* x5chain's message_2 does not fit 51 bytes even with its CoAP header
     * compressed: SCHC fragments, each a frame, and fewer link bytes than
     * the datagram plus the 13 of LoRaWAN's MAC (RFC 9011 profile). */
    snprintf(path, sizeof path, "runs.0.messages.%d.udp_bytes", k);
    assert_true(get(f, path, v, sizeof v));
    long u = atol(v);
    assert_true(u > 51);
    snprintf(path, sizeof path, "runs.0.messages.%d.air.fragments", k);
    assert_true(get(f, path, v, sizeof v));
    long frags = atol(v);
    assert_true(frags >= 2);
    snprintf(path, sizeof path, "runs.0.messages.%d.frames", k);
    assert_true(get(f, path, v, sizeof v));
    assert_int_equal(atol(v), frags);
    /* static DH (kid), message_1: SCHC on the bytes the relay forwarded
     * (RFC 8724; rule 1 of docs/airtime.md, an EDHOC request): a 16-bit
     * residue (TKL 4 bits, the 1-byte token, the Message ID's 4 low bits)
     * before the 38-byte payload (0xf5 and message_1, RFC 9528 A.2): a
     * 40-byte packet, one frame of 13 (MAC) + 40 = 53 bytes. Without the
     * bytes the whole 64-byte CoAP message would travel. */
    assert_true(get(f, "runs.2.mode", v, sizeof v));
    assert_string_equal(v, "\"static_dh_kid\"");
    assert_true(get(f, "runs.2.messages.0.name", v, sizeof v));
    assert_string_equal(v, "\"message_1\"");
    assert_true(get(f, "runs.2.messages.0.air.schc_residue_bits", v, sizeof v));
    assert_int_equal(atol(v), 16);
    assert_true(get(f, "runs.2.messages.0.link_bytes", v, sizeof v));
    assert_int_equal(atol(v), 53);
    assert_true(get(f, "runs.2.messages.0.frames", v, sizeof v));
    assert_int_equal(atol(v), 1);
    /* DTLS records are not CoAP: carried whole after IPv6 + UDP, one
     * frame when they fit 51 bytes, else the fragments of RFC 9011's
     * uplink profile (10-byte tiles, 5 a window). */
    assert_true(get(f, "runs.4.mode", v, sizeof v));
    assert_string_equal(v, "\"x509\"");
    int checked = 0;
    for (k = 0; k < 12; k++) {
        snprintf(path, sizeof path, "runs.4.messages.%d.datagrams", k);
        if (!get(f, path, v, sizeof v))
            break;
        if (strcmp(v, "1"))
            continue;
        snprintf(path, sizeof path, "runs.4.messages.%d.air.schc_residue_bits", k);
        assert_true(get(f, path, v, sizeof v));
        assert_string_equal(v, "null");
        snprintf(path, sizeof path, "runs.4.messages.%d.udp_bytes", k);
        assert_true(get(f, path, v, sizeof v));
        u = atol(v);
        long tiles = (u + 9) / 10;
        frags = u <= 51 ? 0 : (tiles - 1 + 4) / 5 + 1;
        snprintf(path, sizeof path, "runs.4.messages.%d.air.fragments", k);
        assert_true(get(f, path, v, sizeof v));
        assert_int_equal(atol(v), frags);
        snprintf(path, sizeof path, "runs.4.messages.%d.frames", k);
        assert_true(get(f, path, v, sizeof v));
        assert_int_equal(atol(v), frags ? frags : 1);
        checked++;
    }
    assert_true(checked >= 4);
    free(f);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_air_options_refused, check_alive),
        cmocka_unit_test_setup(test_compare_lorawan, check_alive),
        cmocka_unit_test_setup(test_layers_and_pcap, check_alive),
        cmocka_unit_test_setup(test_coap_pcap, check_alive),
        cmocka_unit_test(test_wildcard_pcap_addresses),
        cmocka_unit_test_setup(test_simulate_framing_matches_live, check_alive),
    };
    /* One test by name (a glob): CMOCKA_TEST_FILTER=test_load_* */
    if (getenv("CMOCKA_TEST_FILTER"))
        cmocka_set_test_filter(getenv("CMOCKA_TEST_FILTER"));
    return cmocka_run_group_tests_name("cli_net_pcap", tests, setup, net_group_teardown);
}
