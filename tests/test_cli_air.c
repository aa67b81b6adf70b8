/*
 * Time on air and energy in `edhoc-cli simulate --link` and `edhoc-cli
 * initiator --link` (docs/airtime.md): every figure the commands print is
 * checked against the netacct library's functions for the exact messages
 * (the CoAP bytes rebuilt here from the EDHOC messages of the report), and
 * a few against values worked out by hand from the standards. No timing is
 * asserted: host times are read from the same report and only added.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>

#include "edhoc/netacct.h"
#include "net_test_util.h"

static struct net_proc responder;

static int setup(void **state)
{
    (void)state;
    if (net_make_dir("air"))
        return -1;
    return net_responder_start(&responder, "air", "--listen 127.0.0.1:0");
}

/* ---- Reading the reports ---- */

/* The JSON document of a command's output, validated against its schema
 * (RFC-independent: the report's own contract, docs/json/). */
static json_t *run_json(const char *schema, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static json_t *run_json(const char *schema, const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char *out = NULL;
    int rc = net_cli_run(&out, 60, true, "%s", args);
    if (rc != 0)
        fail_msg("edhoc-cli %s: exit %d:\n%s", args, rc, out);
    if (net_json_valid(out, schema, false))
        fail_msg("edhoc-cli %s: not valid against %s.schema.json", args, schema);
    json_error_t err;
    json_t *root = json_loads(out, 0, &err);
    if (!root)
        fail_msg("edhoc-cli %s: %s:\n%s", args, err.text, out);
    free(out);
    return root;
}

/* A member by a path of keys and array indexes ("framed.messages.2.air"). */
static json_t *at(json_t *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && o;
         k = strtok_r(NULL, ".", &save)) {
        if (json_is_array(o))
            o = json_array_get(o, strtoul(k, NULL, 10));
        else
            o = json_object_get(o, k);
    }
    if (!o)
        fail_msg("no member %s", path);
    return o;
}

static double num(json_t *o, const char *path)
{
    json_t *v = at(o, path);
    if (!json_is_number(v))
        fail_msg("%s is not a number", path);
    return json_number_value(v);
}

static long long integer(json_t *o, const char *path)
{
    json_t *v = at(o, path);
    if (!json_is_integer(v))
        fail_msg("%s is not an integer", path);
    return json_integer_value(v);
}

/* Equal to the library's value up to the last digits of a double (the
 * report prints what it computed with the same operations; the tolerance
 * only covers a different order of additions). */
static void assert_close(double got, double want, const char *what)
{
    double tol = 1e-9 * (want < 0 ? -want : want) + 1e-9;
    if (got - want > tol || want - got > tol)
        fail_msg("%s: %.12g, expected %.12g", what, got, want);
}

static size_t hex_decode(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = strlen(hex) / 2;
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return n;
}

/* ---- The A.2 framing, by hand (RFC 7252 Section 3, RFC 9528 A.2) ----
 *
 * Request: Ver 1, CON, TKL 1 (0x41), POST (0x02), Message ID 1, token 01;
 * Uri-Path ".well-known" (delta 11, length 11: 0xbb), Uri-Path "edhoc"
 * (0x05), Content-Format 65 (delta 1, length 1: 0x11 0x41), marker 0xff,
 * then CBOR true (message_1) or C_R and the EDHOC message.
 * Response: ACK (0x61), 2.04 (0x44), Message ID 1, token 01,
 * Content-Format 64 (delta 12, length 1: 0xc1 0x40), marker, message; the
 * empty 2.04 answering message_3: the 5-byte header and token alone. */

static size_t a2_request(const uint8_t *prefix, size_t prefix_len, const uint8_t *msg, size_t len,
                         uint8_t *out)
{
    static const uint8_t head[] = {0x41, 0x02, 0x00, 0x01, 0x01, 0xbb, '.',  'w', 'e',
                                   'l',  'l',  '-',  'k',  'n',  'o',  'w',  'n', 0x05,
                                   'e',  'd',  'h',  'o',  'c',  0x11, 0x41, 0xff};
    memcpy(out, head, sizeof head);
    memcpy(out + sizeof head, prefix, prefix_len);
    memcpy(out + sizeof head + prefix_len, msg, len);
    return sizeof head + prefix_len + len;
}

static size_t a2_response(const uint8_t *msg, size_t len, uint8_t *out)
{
    static const uint8_t head[] = {0x61, 0x44, 0x00, 0x01, 0x01, 0xc1, 0x40, 0xff};
    if (!msg) {
        memcpy(out, head, 5);
        return 5;
    }
    memcpy(out, head, sizeof head);
    memcpy(out + sizeof head, msg, len);
    return sizeof head + len;
}

struct framed_case {
    uint8_t coap[512];
    size_t len;
    bool from_initiator;
    struct edhoc_netacct_layers l;
};

/* simulate's message_1..3 (from its report's hex) and the empty 2.04,
 * framed by hand, and their layers on link from the library. simulate
 * sends from an unknown client port (0) to 5683 over IPv6. */
static void framed_cases(json_t *root, const struct edhoc_netacct_link *link,
                         struct framed_case c[4])
{
    static const uint8_t cbor_true = 0xf5, c_r = 0x27; /* --c-r 27: C_R h'27' = -8 */
    uint8_t msg[512];
    for (int i = 0; i < 3; i++) {
        char path[64];
        snprintf(path, sizeof path, "messages.%d.hex", i);
        size_t n = hex_decode(json_string_value(at(root, path)), msg, sizeof msg);
        if (i == 0)
            c[i].len = a2_request(&cbor_true, 1, msg, n, c[i].coap);
        else if (i == 1)
            c[i].len = a2_response(msg, n, c[i].coap);
        else
            c[i].len = a2_request(&c_r, 1, msg, n, c[i].coap);
        c[i].from_initiator = i != 1;
    }
    c[3].len = a2_response(NULL, 0, c[3].coap);
    c[3].from_initiator = false;
    for (int i = 0; i < 4; i++) {
        struct edhoc_netacct_dgram d = {.udp_payload = c[i].len,
                                        .ipv6 = true,
                                        .src_port = c[i].from_initiator ? 0 : 5683,
                                        .dst_port = c[i].from_initiator ? 5683 : 0,
                                        .payload = c[i].coap,
                                        .dir = c[i].from_initiator ? EDHOC_NETACCT_DIR_UP
                                                                   : EDHOC_NETACCT_DIR_DOWN};
        assert_int_equal(edhoc_netacct_datagram(link, &d, &c[i].l, NULL, 0), 0);
    }
}

/* One message's "air" object against the library's figures. */
static void check_air(json_t *air, const struct edhoc_netacct_radio *r,
                      const struct edhoc_netacct_air *a)
{
    struct edhoc_netacct_energy s = edhoc_netacct_energy_of(r, a, true);
    struct edhoc_netacct_energy p = edhoc_netacct_energy_of(r, a, false);
    assert_close(num(air, "air_ms"), (double)a->tx_us / 1e3, "air_ms");
    assert_close(num(air, "link_ms"), (double)a->link_us / 1e3, "link_ms");
    assert_close(num(air, "wait_ms"), (double)a->wait_us / 1e3, "wait_ms");
    assert_int_equal(integer(air, "fragments"), a->fragments);
    if (a->schc_known)
        assert_int_equal(integer(air, "schc_residue_bits"), a->schc_residue_bits);
    else
        assert_true(json_is_null(at(air, "schc_residue_bits")));
    assert_close(num(air, "sender_mj"), (s.tx_j + s.rx_j) * 1e3, "sender_mj");
    assert_close(num(air, "receiver_mj"), (p.tx_j + p.rx_j) * 1e3, "receiver_mj");
}

/* The simulate report's framed messages and handshake air against the
 * library's figures for the framed bytes; returns the end-to-end time the
 * library gives for the sequence (host time excluded), microseconds. */
static uint64_t check_simulate(json_t *root, const struct edhoc_netacct_link *link,
                               const char *radio_name, struct framed_case c[4])
{
    struct edhoc_netacct_radio radio;
    assert_int_equal(edhoc_netacct_radio_builtin(radio_name, &radio), 0);
    assert_string_equal(json_string_value(at(root, "framed.radio.name")), radio_name);
    framed_cases(root, link, c);
    struct edhoc_netacct_step steps[4];
    uint64_t air_us = 0, wait_us = 0, link_us = 0;
    unsigned frames = 0;
    double e_i = 0, e_r = 0;
    for (int i = 0; i < 4; i++) {
        char path[64];
        snprintf(path, sizeof path, "framed.messages.%d", i);
        json_t *m = at(root, path);
        assert_string_equal(json_string_value(at(m, "from")),
                            c[i].from_initiator ? "initiator" : "responder");
        assert_int_equal(integer(m, "coap_bytes"), c[i].len);
        assert_int_equal(integer(m, "frames"), c[i].l.frames);
        assert_int_equal(integer(m, "link_bytes"), c[i].l.link);
        check_air(at(m, "air"), &radio, &c[i].l.air);
        steps[i] = (struct edhoc_netacct_step){&c[i].l.air, c[i].from_initiator, 0};
        air_us += c[i].l.air.tx_us;
        wait_us += c[i].l.air.wait_us;
        link_us += c[i].l.air.link_us;
        frames += c[i].l.frames;
        struct edhoc_netacct_energy s = edhoc_netacct_energy_of(&radio, &c[i].l.air, true);
        struct edhoc_netacct_energy p = edhoc_netacct_energy_of(&radio, &c[i].l.air, false);
        *(c[i].from_initiator ? &e_i : &e_r) += (s.tx_j + s.rx_j) * 1e3;
        *(c[i].from_initiator ? &e_r : &e_i) += (p.tx_j + p.rx_j) * 1e3;
    }
    assert_int_equal(json_array_size(at(root, "framed.messages")), 4);
    json_t *hs = at(root, "framed.air");
    assert_int_equal(integer(hs, "frames"), frames);
    assert_close(num(hs, "air_ms"), (double)air_us / 1e3, "handshake air_ms");
    assert_close(num(hs, "wait_ms"), (double)wait_us / 1e3, "handshake wait_ms");
    assert_close(num(hs, "link_ms"), (double)link_us / 1e3, "handshake link_ms");
    assert_close(num(hs, "initiator_mj"), e_i, "initiator_mj");
    assert_close(num(hs, "responder_mj"), e_r, "responder_mj");
    /* The host time is the crypto time measured in the run, as reported. */
    assert_close(num(hs, "host_ms"), num(root, "crypto_ms"), "host_ms");
    uint64_t seq = edhoc_netacct_air_sequence(link, steps, 4);
    uint64_t host_us = (uint64_t)(num(hs, "host_ms") * 1000 + 0.5);
    assert_close(num(hs, "end_to_end_ms"), (double)(seq + host_us) / 1e3, "end_to_end_ms");
    return seq;
}

#define SIM_ARGS "simulate --method 3 --suites 2 --id-cred-i kid --id-cred-r kid --c-i 37 --c-r 27"

/* LoRaWAN EU868 DR0 (SF12/125 kHz), the default of --link lorawan. */
static void test_simulate_lorawan(void **state)
{
    (void)state;
    json_t *root = run_json("simulate", SIM_ARGS " --link lorawan --json");
    assert_string_equal(json_string_value(at(root, "framed.link.type")), "lorawan");
    struct edhoc_netacct_link link = edhoc_netacct_link_lorawan_default();
    struct framed_case c[4];
    check_simulate(root, &link, "sx1276", c);
    /* By hand. message_3: CoAP 46 bytes (26 of header, options and marker,
     * C_R 1, message_3 19); SCHC rule 1 (docs/airtime.md) leaves TKL 4 +
     * token 8 + Message ID LSB 4 = 16 bits (RFC 8824 Section 5: the other
     * fields are known to the rule), padded to 2 bytes (RFC 8724 Section
     * 7.2), + payload 20 = 22; + MAC overhead 13 (LoRaWAN 1.0.4 Section
     * 4: MHDR 1, FHDR 7, FPort 1, MIC 4) = a 35-byte PHY payload. */
    assert_int_equal(c[2].len, 46);
    assert_int_equal(c[2].l.air.schc_residue_bits, 16);
    assert_int_equal(integer(root, "framed.messages.2.link_bytes"), 35);
    /* Its time on air (SX1276 datasheet Section 4.1.1.7): Tsym = 2^12 /
     * 125 kHz = 32.768 ms; preamble (8 + 4.25) Tsym = 401.408 ms; payload
     * symbols 8 + ceil((8 * 35 - 4 * 12 + 28 + 16) / (4 * (12 - 2))) * 5
     * = 8 + 7 * 5 = 43 (uplink CRC on, low-data-rate optimisation on):
     * 1409.024 ms; 1810.432 ms in all. */
    assert_close(num(root, "framed.messages.2.air.air_ms"), 1810.432, "message_3 air_ms");
    /* The empty 2.04: 5 bytes, rule 5: type 1 bit of 2, code 2 bits of 4,
     * TKL 4, token 8, MID 4 = 19 bits -> 3 bytes, + 13 = 16; a downlink
     * (no CRC, RFC 9011 Section 5 / LoRaWAN: downlinks carry no payload
     * CRC): 8 + ceil((128 - 48 + 28) / 40) * 5 = 23 symbols, 753.664 ms +
     * 401.408 = 1155.072 ms; sent RECEIVE_DELAY1 (1 s) after the uplink:
     * link time 2155.072 ms; then the 1 % duty cycle keeps the gateway
     * off that sub-band for 1155.072 * 99 = 114352.128 ms. */
    assert_int_equal(integer(root, "framed.messages.3.link_bytes"), 16);
    assert_int_equal(integer(root, "framed.messages.3.air.schc_residue_bits"), 19);
    assert_close(num(root, "framed.messages.3.air.air_ms"), 1155.072, "2.04 air_ms");
    assert_close(num(root, "framed.messages.3.air.link_ms"), 2155.072, "2.04 link_ms");
    assert_close(num(root, "framed.messages.3.air.wait_ms"), 114352.128, "2.04 wait_ms");
    /* Energy E = V I t (sx1276 profile: 3.3 V, TX 29 mA, RX 10.8 mA, no
     * start-up charged): the gateway sends, 3.3 * 29 * 1.155072 = 110.5404
     * mJ; the device receives, 3.3 * 10.8 * 1.155072 = 41.1668 mJ. */
    assert_close(num(root, "framed.messages.3.air.sender_mj"), 3.3 * 29 * 1.155072, "2.04 TX");
    assert_close(num(root, "framed.messages.3.air.receiver_mj"), 3.3 * 10.8 * 1.155072, "2.04 RX");
    json_decref(root);

    /* An x5chain message_2 does not fit DR0's 51 bytes (RP002-1.0.4 Table
     * 6): it goes as SCHC fragments (RFC 9011 Section 5.6), counted. */
    root = run_json("simulate", "simulate --method 0 --suites 2 --id-cred-i x5chain "
                                "--id-cred-r x5chain --link lorawan --json");
    long long frags = integer(root, "framed.messages.1.air.fragments");
    assert_true(frags > 1);
    assert_int_equal(integer(root, "framed.messages.1.frames"), frags);
    assert_true(integer(root, "framed.air.fragments") >= frags);
    json_decref(root);
}

/* Bluetooth LE, LE 2M, data length 251, a 50 ms connection interval. */
static void test_simulate_ble(void **state)
{
    (void)state;
    json_t *root = run_json("simulate", SIM_ARGS " --link ble --phy 2m --ble-data-length 251 "
                                                 "--ble-interval 50 --radio-profile nrf52840 "
                                                 "--json");
    assert_string_equal(json_string_value(at(root, "framed.link.air.ble_phy")), "2m");
    struct edhoc_netacct_link link = edhoc_netacct_link_ble_default();
    link.ble_phy = 2;
    link.ble_data_length = 251;
    link.ble_interval_us = 50000;
    struct framed_case c[4];
    uint64_t seq = check_simulate(root, &link, "nrf52840", c);
    /* Every message fits one PDU of 251 bytes, and each takes far less
     * than an interval: data moves only in connection events (Core 5.x
     * Vol 6 Part B Section 4.5.1), so message k starts at event k (k *
     * 50 ms) and the sequence ends 150 ms + the 2.04's link time. */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(c[i].l.frames, 1);
        assert_true(c[i].l.air.link_us < 50000);
    }
    assert_int_equal(seq, 150000 + c[3].l.air.link_us);
    /* One PDU on LE 2M (Core Vol 6 Part B Section 2.1): preamble 2 +
     * access address 4 + header 2 + payload + MIC 4 + CRC 3 bytes at 4 us a
     * byte, answered T_IFS 150 us later by an empty PDU (2 + 4 + 2 + 3 =
     * 11 bytes, 44 us), then T_IFS again. */
    size_t payload = c[3].l.link - 2 - 4; /* link bytes: header 2 + payload + MIC 4 */
    assert_int_equal(c[3].l.air.tx_us, (2 + 4 + 2 + payload + 4 + 3) * 4);
    assert_int_equal(c[3].l.air.link_us, c[3].l.air.tx_us + 150 + 44 + 150);
    json_decref(root);
}

/* Without a time model the air members are null (schema: null for no
 * --link and --link-mtu). */
static void test_simulate_no_air(void **state)
{
    (void)state;
    json_t *root = run_json("simulate", SIM_ARGS " --link-mtu 80 --json");
    assert_true(json_is_null(at(root, "framed.air")));
    assert_true(json_is_null(at(root, "framed.radio")));
    assert_true(json_is_null(at(root, "framed.messages.0.air")));
    json_decref(root);
    /* --radio-profile after --link keeps the link chosen. */
    char path[300];
    net_path(path, sizeof path, "radio.txt");
    net_write_file(path, "name = test\nvolts = 2\ntx_ma = 10\nrx_ma = 5\n", 0600);
    root = run_json("simulate", SIM_ARGS " --link 802.15.4 --radio-profile %s --json", path);
    assert_string_equal(json_string_value(at(root, "framed.link.type")), "802.15.4");
    assert_string_equal(json_string_value(at(root, "framed.radio.name")), "test");
    /* message_1's sender: 2 V * 10 mA * its time on air (no start-up in
     * this profile, no acknowledgement listening counted at TX). */
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    struct framed_case c[4];
    framed_cases(root, &link, c);
    struct edhoc_netacct_radio r = {.volts = 2, .tx_ma = 10, .rx_ma = 5};
    check_air(at(root, "framed.messages.0.air"), &r, &c[0].l.air);
    json_decref(root);
}

/* The local port range: the client's port is unknown to the test; it is
 * not compressible by 6LoWPAN NHC (RFC 6282 Section 4.3.3: only
 * 0xF000..0xF0FF) when the kernel never hands out such a port. */
static bool client_ports_incompressible(void)
{
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    unsigned lo = 0, hi = 65535;
    if (f) {
        if (fscanf(f, "%u %u", &lo, &hi) != 2)
            hi = 65535;
        fclose(f);
    }
    return hi < 0xF000;
}

/* initiator --link 802.15.4 against a real responder: the rows of one
 * datagram each, checked by hand and against the library. */
static void test_initiator_802154(void **state)
{
    (void)state;
    if (!client_ports_incompressible() || responder.port >= 0xF000) {
        print_message("ports may be NHC-compressible here: skipped\n");
        skip();
    }
    json_t *root = run_json("initiator",
                            "initiator coap://127.0.0.1:%u --method 3 --suites 2 "
                            "--id-cred kid --link 802.15.4 --json",
                            responder.port);
    assert_string_equal(json_string_value(at(root, "outcome")), "ok");
    assert_string_equal(json_string_value(at(root, "radio.name")), "cc2538");
    struct edhoc_netacct_radio radio;
    assert_int_equal(edhoc_netacct_radio_builtin("cc2538", &radio), 0);
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    json_t *msgs = at(root, "messages");
    size_t checked = 0;
    uint64_t link_us = 0;
    double e_i = 0, e_r = 0;
    bool all_single = true;
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        bool from_i = !strcmp(json_string_value(at(m, "from")), "initiator");
        bool oscore = !strncmp(json_string_value(at(m, "name")), "OSCORE", 6);
        if (integer(m, "datagrams") != 1) {
            all_single &= oscore;
            continue;
        }
        size_t coap = (size_t)integer(m, "coap_bytes");
        struct edhoc_netacct_dgram d = {.udp_payload = coap,
                                        .ipv6 = false,
                                        .src_port = from_i ? 40000 : responder.port,
                                        .dst_port = from_i ? responder.port : 40000};
        struct edhoc_netacct_layers l;
        assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, NULL, 0), 0);
        assert_int_equal(integer(m, "frames"), l.frames);
        assert_int_equal(integer(m, "link_bytes"), l.link);
        check_air(at(m, "air"), &radio, &l.air);
        if (!oscore) {
            link_us += l.air.link_us;
            struct edhoc_netacct_energy s = edhoc_netacct_energy_of(&radio, &l.air, true);
            struct edhoc_netacct_energy p = edhoc_netacct_energy_of(&radio, &l.air, false);
            *(from_i ? &e_i : &e_r) += (s.tx_j + s.rx_j) * 1e3;
            *(from_i ? &e_r : &e_i) += (p.tx_j + p.rx_j) * 1e3;
        }
        if (coap + 34 <= EDHOC_NETACCT_802154_FRAME_MAX) {
            /* By hand: MAC header 23 + FCS 2 + IPHC 2 (RFC 6282: TF, hop
             * limit 64 and link-local addresses elided) + NHC UDP 7 (1 +
             * ports 4 + checksum 2) = 34 bytes around the CoAP message.
             * On air (IEEE 802.15.4-2015 Section 12.3, O-QPSK 2.4 GHz):
             * (SHR 5 + PHR 1 + PSDU) * 32 us; link time adds the mean
             * backoff 3.5 * 320 us, CCA 128, turnaround 192 twice and the
             * 11-byte Imm-Ack 352 us: 1984 us. */
            assert_int_equal(l.frames, 1);
            assert_int_equal(integer(m, "link_bytes"), coap + 34);
            double air_ms = (double)(6 + 34 + coap) * 32 / 1000;
            assert_close(num(m, "air.air_ms"), air_ms, "air_ms by hand");
            assert_close(num(m, "air.link_ms"), air_ms + 1.984, "link_ms by hand");
            assert_close(num(m, "air.wait_ms"), 0, "no duty cycle");
        }
        checked++;
    }
    assert_true(checked >= 4); /* message_1..3 and the 2.04 at least */
    json_t *hs = at(root, "air");
    if (all_single) {
        assert_close(num(hs, "link_ms"), (double)link_us / 1e3, "handshake link_ms");
        assert_close(num(hs, "initiator_mj"), e_i, "initiator_mj");
        assert_close(num(hs, "responder_mj"), e_r, "responder_mj");
    }
    /* No duty cycle, no connection events: end to end is the link time
     * plus the handshake time measured by the initiator (its report's). */
    assert_close(num(hs, "host_ms"), num(root, "handshake_ms"), "host_ms");
    uint64_t host_us = (uint64_t)(num(hs, "host_ms") * 1000 + 0.5);
    assert_close(num(hs, "end_to_end_ms"), num(hs, "link_ms") + (double)host_us / 1e3,
                 "end_to_end_ms");
    json_decref(root);
}

/* initiator --link lorawan: the same figures per direction (the initiator
 * is the end device: its messages uplinks, the responder's downlinks sent
 * RECEIVE_DELAY1 after them). */
static void test_initiator_lorawan(void **state)
{
    (void)state;
    json_t *root = run_json("initiator",
                            "initiator coap://127.0.0.1:%u --method 3 --suites 2 "
                            "--id-cred kid --link lorawan --data-rate 5 --json",
                            responder.port);
    json_t *msgs = at(root, "messages");
    unsigned up = 0, down = 0;
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        if (integer(m, "datagrams") != 1)
            continue;
        bool from_i = !strcmp(json_string_value(at(m, "from")), "initiator");
        /* SCHC works on the bytes sent and received: a residue known. */
        assert_true(json_is_integer(at(m, "air.schc_residue_bits")));
        if (from_i) {
            assert_true(num(m, "air.link_ms") < 1000);
            up++;
        } else {
            assert_true(num(m, "air.link_ms") >= 1000);
            down++;
        }
    }
    assert_true(up >= 2 && down >= 2);
    json_decref(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simulate_lorawan),  cmocka_unit_test(test_simulate_ble),
        cmocka_unit_test(test_simulate_no_air),   cmocka_unit_test(test_initiator_802154),
        cmocka_unit_test(test_initiator_lorawan),
    };
    return cmocka_run_group_tests_name("cli_air", tests, setup, net_group_teardown);
}
