/*
 * Per-layer accounting: UDP/IP sizes, the generic-MTU link, and IEEE
 * 802.15.4 with 6LoWPAN, each checked against a value worked out by hand
 * in the comment beside it.
 *
 * The defaults (edhoc_netacct_link_802154_default) used throughout:
 *   frame 127 bytes = MAC header 23 + FCS 2 + 102 bytes for 6LoWPAN;
 *   IPHC for link-local addresses derived from the MAC, hop limit 64,
 *   CoAP port 5683 on both sides:
 *     IPHC base 2 + addresses 0 + hop limit 0 + NHC UDP 1 + ports 4 +
 *     checksum 2 = 9 bytes of header.
 *   Fragmentation (RFC 4944): FRAG1 header 4, FRAGN 5; a fragment's payload
 *   must represent a multiple of 8 bytes of the uncompressed packet, whose
 *   IPv6 + UDP headers are 48 bytes:
 *     FRAG1 room 102 - 4 - 9 = 89 -> floor((48 + 89) / 8) * 8 - 48 = 88
 *     FRAGN room 102 - 5 = 97 -> 96.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "edhoc/netacct.h"

static struct edhoc_netacct_dgram v6(size_t payload)
{
    struct edhoc_netacct_dgram d = {
        .udp_payload = payload, .ipv6 = true, .src_port = 5683, .dst_port = 5683};
    return d;
}

struct case_802154 {
    const char *what;
    size_t payload;
    unsigned frames;
    size_t bytes;
    size_t first_frame;
    size_t last_frame;
};

/* Default link, ports 5683, header 9: one frame carries up to 102 - 9 = 93
 * bytes of CoAP message. */
static const struct case_802154 table[] = {
    /* trace 2 message_1 (39 B) + CBOR true (1) in a POST with a 2-byte
     * token: header 4 + token 2 + Uri-Path ".well-known" (1 + 11) + Uri-Path
     * "edhoc" (1 + 5) + Content-Format 65 (1 + 1) + marker 1 + 40 = 67;
     * 9 + 67 = 76 <= 102 -> 1 frame of 23 + 2 + 76 = 101. */
    {"message_1 (39 B) in a 67-byte POST", 67, 1, 101, 101, 101},
    /* single-suite message_1 (37 B): 65-byte POST -> 25 + 9 + 65 = 99. */
    {"message_1 (37 B) in a 65-byte POST", 65, 1, 99, 99, 99},
    /* message_2 (45 B) in a 2.04 with token 2, Content-Format 64 (2),
     * marker 1: 4 + 2 + 2 + 1 + 45 = 54 -> 25 + 9 + 54 = 88. */
    {"message_2 (45 B) in a 54-byte 2.04", 54, 1, 88, 88, 88},
    /* message_3 (19 B) + C_R 0x27 (1) in a POST like message_1's:
     * 4 + 2 + 12 + 6 + 2 + 1 + 20 = 47 -> 25 + 9 + 47 = 81. */
    {"message_3 (19 B) in a 47-byte POST", 47, 1, 81, 81, 81},
    /* Exactly full: 9 + 93 = 102 -> 1 frame of 127. */
    {"93 bytes: the largest unfragmented", 93, 1, 127, 127, 127},
    /* One more byte: FRAG1 25 + 4 + 9 + 88 = 126, then 94 - 88 = 6 left:
     * FRAGN 25 + 5 + 6 = 36; total 162. */
    {"94 bytes: two fragments", 94, 2, 162, 126, 36},
    /* 400 bytes: FRAG1 carries 88 (126-byte frame), 312 left = 3 * 96 + 24:
     * three FRAGN of 25 + 5 + 96 = 126 and one of 25 + 5 + 24 = 54;
     * 5 frames, 4 * 126 + 54 = 558 bytes. */
    {"400 bytes", 400, 5, 558, 126, 54},
    /* 184 = 88 + 96: FRAG1 126 + FRAGN 126 = 252, 2 frames exactly full. */
    {"184 bytes: two full fragments", 184, 2, 252, 126, 126},
    /* The RFC 4944 limit: 48 + 1999 = 2047. 1999 - 88 = 1911 = 19 * 96 + 87:
     * 1 + 19 + 1 = 21 frames, 20 * 126 + (25 + 5 + 87 = 117) = 2637. */
    {"1999 bytes: datagram_size 2047", 1999, 21, 2637, 126, 117},
};

static void test_802154_table(void **state)
{
    (void)state;
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        struct edhoc_netacct_dgram d = v6(table[i].payload);
        struct edhoc_netacct_layers l;
        size_t sizes[EDHOC_NETACCT_MAX_FRAMES];
        print_message("%s\n", table[i].what);
        assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, sizes, EDHOC_NETACCT_MAX_FRAMES), 0);
        assert_int_equal(l.lowpan_header, 9);
        assert_int_equal(l.coap, table[i].payload);
        assert_int_equal(l.udp, table[i].payload + 8);
        assert_int_equal(l.ip, table[i].payload + 48);
        assert_int_equal(l.frames, table[i].frames);
        assert_int_equal(l.link, table[i].bytes);
        assert_int_equal(l.fragmented, table[i].frames > 1);
        assert_int_equal(sizes[0], table[i].first_frame);
        assert_int_equal(sizes[l.frames - 1], table[i].last_frame);
        size_t sum = 0;
        for (unsigned k = 0; k < l.frames; k++) {
            assert_true(sizes[k] <= EDHOC_NETACCT_802154_FRAME_MAX);
            sum += sizes[k];
        }
        assert_int_equal(sum, l.link);
    }
}

static void test_802154_too_large(void **state)
{
    (void)state;
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    /* 48 + 2000 = 2048 does not fit the 11-bit datagram_size. */
    struct edhoc_netacct_dgram d = v6(2000);
    struct edhoc_netacct_layers l;
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, NULL, 0), EDHOC_NETACCT_ERR_TOO_LARGE);
}

static void test_802154_ports(void **state)
{
    (void)state;
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    struct edhoc_netacct_dgram d = v6(50);
    struct edhoc_netacct_layers l;
    /* Both ports 0xF0Bx: ports in 1 byte -> 2 + 1 + 1 + 2 = 6;
     * 25 + 6 + 50 = 81. */
    d.src_port = 0xf0b1;
    d.dst_port = 0xf0b2;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 6);
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, NULL, 0), 0);
    assert_int_equal(l.link, 81);
    /* One port 0xF0xx, the other 5683: 2 + 8 bits -> 3 bytes; header 8. */
    d.src_port = 0xf012;
    d.dst_port = 5683;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 8);
    d.src_port = 5683;
    d.dst_port = 0xf0ff;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 8);
    /* 0xF0B1 with 5683 is still only the 8-bit form. */
    d.src_port = 0xf0b1;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 8);
    /* Unknown ports (0) count as not compressible: 9. */
    d.src_port = 0;
    d.dst_port = 0;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 9);
}

static void test_802154_addresses_hop_limit(void **state)
{
    (void)state;
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    struct edhoc_netacct_dgram d = v6(100);
    struct edhoc_netacct_layers l;
    size_t sizes[8];

    /* Hop limit 63 travels inline: 9 + 1 = 10; 1 and 255 are elided. */
    link.hop_limit = 63;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 10);
    link.hop_limit = 255;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 9);
    link.hop_limit = 1;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 9);
    link.hop_limit = 64;

    /* Context-based addresses: IID from the MAC elided (9), 16-bit IID
     * (9 + 2 + 2 = 13), full 16 bytes inline (9 + 32 = 41). */
    link.src_addr = link.dst_addr = EDHOC_NETACCT_ADDR_CONTEXT_MAC;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 9);
    link.src_addr = link.dst_addr = EDHOC_NETACCT_ADDR_CONTEXT_16;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 13);
    link.src_addr = link.dst_addr = EDHOC_NETACCT_ADDR_INLINE;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 41);

    /* Global addresses with 64-bit IIDs: 9 + 8 + 8 = 25. 100 bytes:
     * 25 + 100 = 125 > 102 -> fragment. FRAG1 room 102 - 4 - 25 = 73 ->
     * floor((48 + 73) / 8) * 8 - 48 = 72: frame 25 + 4 + 25 + 72 = 126;
     * 28 left: FRAGN 25 + 5 + 28 = 58. 2 frames, 184 bytes. */
    link.src_addr = link.dst_addr = EDHOC_NETACCT_ADDR_CONTEXT_64;
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, sizes, 8), 0);
    assert_int_equal(l.lowpan_header, 25);
    assert_int_equal(l.frames, 2);
    assert_int_equal(sizes[0], 126);
    assert_int_equal(sizes[1], 58);
    assert_int_equal(l.link, 184);
}

static void set_addr(uint8_t out[16], const char *hex32)
{
    for (int i = 0; i < 16; i++) {
        unsigned v;
        sscanf(hex32 + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
}

static void test_802154_addresses_auto(void **state)
{
    (void)state;
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    link.src_addr = link.dst_addr = EDHOC_NETACCT_ADDR_AUTO;
    struct edhoc_netacct_dgram d = v6(50);
    d.addrs_known = true;
    static const struct {
        const char *src, *dst;
        long header; /* 9 + source + destination inline bytes */
    } cases[] = {
        /* fe80::/64 both: 0 + 0. */
        {"fe800000000000000211223344556677", "fe800000000000000211223344556688", 9},
        /* Global with a full IID: 8 + 8 = 25. */
        {"20010db8000000000211223344556677", "20010db8000000000211223344556688", 25},
        /* Global with the 16-bit IID form 0000:00ff:fe00:XXXX: 2 + 2. */
        {"20010db800000000000000fffe000001", "20010db800000000000000fffe000002", 13},
        /* Almost that form (0000:0000:fffe:0001): a full IID, 8 + 8. */
        {"20010db80000000000000000fffe0001", "20010db80000000000000000fffe0002", 25},
        /* Link-local source, multicast destinations: ff02::1 -> 1 byte;
         * ff05::1:3 (ffXX::00XX:XXXX) -> 4; ff05::12:3456:789a
         * (ffXX::00XX:XXXX:XXXX) -> 6; ff0e::1:2:3:4 -> 16. */
        {"fe800000000000000211223344556677", "ff020000000000000000000000000001", 10},
        {"fe800000000000000211223344556677", "ff050000000000000000000000010003", 13},
        {"fe800000000000000211223344556677", "ff05000000000000000000123456789a", 15},
        {"fe800000000000000211223344556677", "ff0e0000000000000001000200030004", 25},
        /* fe80::/10 outside fe80::/64: inline (16) + link-local (0). */
        {"fe800000000000010211223344556677", "fe800000000000000211223344556688", 25},
        /* ::1 to ::1 (a loopback capture): modelled as link-local. */
        {"00000000000000000000000000000001", "00000000000000000000000000000001", 9},
        /* IPv4-mapped: likewise. */
        {"00000000000000000000ffffc0000201", "00000000000000000000ffffc0000202", 9},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        set_addr(d.src_addr, cases[i].src);
        set_addr(d.dst_addr, cases[i].dst);
        print_message("%s -> %s\n", cases[i].src, cases[i].dst);
        assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), cases[i].header);
    }
    /* Unknown addresses, or an IPv4 datagram: the link-local default. */
    set_addr(d.src_addr, "20010db8000000000211223344556677");
    d.addrs_known = false;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 9);
    d.addrs_known = true;
    d.ipv6 = false;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), 9);
}

static void test_802154_short_mac(void **state)
{
    (void)state;
    /* Short addresses with PAN ID compression: MAC header 2 + 1 + 2 + 2 + 2
     * = 9, FCS 2 -> room 116. 400 bytes: FRAG1 room 116 - 4 - 9 = 103 ->
     * floor(151 / 8) * 8 - 48 = 96, frame 11 + 4 + 9 + 96 = 120; FRAGN room
     * 111 -> 104; 304 left = 104 + 104 + 96: frames 120, 120, 112.
     * 4 frames, 472 bytes. With a 6-byte PHY header counted: + 24 = 496. */
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    link.mac_header = 9;
    struct edhoc_netacct_dgram d = v6(400);
    struct edhoc_netacct_layers l;
    size_t sizes[8];
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, sizes, 8), 0);
    assert_int_equal(l.frames, 4);
    assert_int_equal(sizes[0], 120);
    assert_int_equal(sizes[1], 120);
    assert_int_equal(sizes[2], 120);
    assert_int_equal(sizes[3], 112);
    assert_int_equal(l.link, 472);
    link.phy_header = 6;
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, NULL, 0), 0);
    assert_int_equal(l.link, 496);

    /* Link security (21 bytes, AES-CCM-128 in RFC 4944's count) with the
     * default 23 + 2: room 127 - 46 = 81. The 54-byte message_2 response:
     * 9 + 54 = 63 -> 1 frame of 46 + 63 = 109. A 73-byte message: 82 > 81
     * -> FRAG1 room 81 - 13 = 68 -> floor(116 / 8) * 8 - 48 = 64, frame
     * 46 + 4 + 9 + 64 = 123; 9 left: 46 + 5 + 9 = 60. */
    link = edhoc_netacct_link_802154_default();
    link.security = 21;
    d = v6(54);
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, NULL, 0), 0);
    assert_int_equal(l.frames, 1);
    assert_int_equal(l.link, 109);
    d = v6(73);
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, sizes, 8), 0);
    assert_int_equal(l.frames, 2);
    assert_int_equal(sizes[0], 123);
    assert_int_equal(sizes[1], 60);
}

static void test_802154_ipv4_is_carried_as_ipv6(void **state)
{
    (void)state;
    /* A datagram seen as IPv4 on the host: IP 20 + 8 + 54 = 82, but over
     * 6LoWPAN it is the same 88-byte frame as the IPv6 one. */
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    struct edhoc_netacct_dgram d = v6(54);
    struct edhoc_netacct_layers l;
    d.ipv6 = false;
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, NULL, 0), 0);
    assert_int_equal(l.ip, 82);
    assert_int_equal(l.link, 88);
}

static void test_bad_parameters(void **state)
{
    (void)state;
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    struct edhoc_netacct_dgram d = v6(10);
    struct edhoc_netacct_layers l;
    assert_int_equal(edhoc_netacct_datagram(NULL, &d, &l, NULL, 0), EDHOC_NETACCT_ERR_ARG);
    assert_int_equal(edhoc_netacct_datagram(&link, NULL, &l, NULL, 0), EDHOC_NETACCT_ERR_ARG);
    assert_int_equal(edhoc_netacct_datagram(&link, &d, NULL, NULL, 0), EDHOC_NETACCT_ERR_ARG);
    /* A MAC header leaving 127 - 120 - 2 = 5 bytes: no room for a 9-byte
     * header, fine for nothing once fragmentation is needed. */
    link.mac_header = 120;
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, NULL, 0), EDHOC_NETACCT_ERR_ARG);
    link.mac_header = 125;
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, NULL, 0), EDHOC_NETACCT_ERR_ARG);
    link = edhoc_netacct_link_802154_default();
    link.src_addr = (enum edhoc_netacct_addr_mode)99;
    assert_int_equal(edhoc_netacct_lowpan_header(&link, &d), EDHOC_NETACCT_ERR_ARG);
    struct edhoc_netacct_link mtu = edhoc_netacct_link_mtu(0, 0);
    assert_int_equal(edhoc_netacct_datagram(&mtu, &d, &l, NULL, 0), EDHOC_NETACCT_ERR_ARG);
    /* An IP length shorter than the UDP datagram it carries. */
    struct edhoc_netacct_link none = {.type = EDHOC_NETACCT_LINK_NONE};
    d.ip_len = 17;
    assert_int_equal(edhoc_netacct_datagram(&none, &d, &l, NULL, 0), EDHOC_NETACCT_ERR_ARG);
    assert_int_equal(edhoc_netacct_lowpan_header(&none, &d), EDHOC_NETACCT_ERR_ARG);
}

static void test_ip_layers(void **state)
{
    (void)state;
    struct edhoc_netacct_link none = {.type = EDHOC_NETACCT_LINK_NONE};
    struct edhoc_netacct_dgram d = {.udp_payload = 45};
    struct edhoc_netacct_layers l;
    /* IPv4: UDP 45 + 8 = 53, IP 53 + 20 = 73. */
    assert_int_equal(edhoc_netacct_datagram(&none, &d, &l, NULL, 0), 0);
    assert_int_equal(l.coap, 45);
    assert_int_equal(l.udp, 53);
    assert_int_equal(l.ip, 73);
    assert_int_equal(l.frames, 1);
    assert_int_equal(l.link, 73);
    /* IPv6: 53 + 40 = 93. */
    d.ipv6 = true;
    assert_int_equal(edhoc_netacct_datagram(&none, &d, &l, NULL, 0), 0);
    assert_int_equal(l.ip, 93);
    /* The real size when given (an IPv4 header with 4 bytes of options). */
    d.ipv6 = false;
    d.ip_len = 77;
    assert_int_equal(edhoc_netacct_datagram(&none, &d, &l, NULL, 0), 0);
    assert_int_equal(l.ip, 77);
}

static void test_generic_mtu(void **state)
{
    (void)state;
    /* IPv6, 200-byte payload: IP 248; MTU 100 -> ceil(248 / 100) = 3
     * frames of 100, 100, 48 bytes of IP; with 14 bytes per frame:
     * 114, 114, 62 = 290. */
    struct edhoc_netacct_link link = edhoc_netacct_link_mtu(100, 14);
    struct edhoc_netacct_dgram d = v6(200);
    struct edhoc_netacct_layers l;
    size_t sizes[4];
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, sizes, 4), 0);
    assert_int_equal(l.frames, 3);
    assert_int_equal(l.link, 290);
    assert_int_equal(sizes[0], 114);
    assert_int_equal(sizes[1], 114);
    assert_int_equal(sizes[2], 62);
    assert_true(l.fragmented);
    /* MTU 248: exactly one frame. */
    link = edhoc_netacct_link_mtu(248, 0);
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, sizes, 4), 0);
    assert_int_equal(l.frames, 1);
    assert_int_equal(l.link, 248);
    assert_false(l.fragmented);
    /* A short frame_sizes array gets only what fits; the count is whole. */
    link = edhoc_netacct_link_mtu(10, 0);
    sizes[1] = 0;
    assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, sizes, 1), 0);
    assert_int_equal(l.frames, 25);
    assert_int_equal(sizes[0], 10);
    assert_int_equal(sizes[1], 0);
}

static void test_totals(void **state)
{
    (void)state;
    /* The trace 2 handshake with one suite over 802.15.4, as above:
     * message_1 37 B in a 65-byte POST (99-byte frame), message_2 45 B in
     * 54 (88), message_3 19 B in 47 (81), plus a retransmission of
     * message_3 and an empty ACK (4 bytes: 25 + 9 + 4 = 38) for OSCORE's
     * side. EDHOC 37 + 45 + 19 = 101; CoAP 65 + 54 + 47 + 47 = 213;
     * UDP 213 + 4 * 8 = 245; IPv6 245 + 4 * 40 = 405; link 99 + 88 + 81 +
     * 81 = 349. */
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    struct edhoc_netacct_summary s;
    edhoc_netacct_summary_clear(&s);
    const size_t coap[] = {65, 54, 47, 47};
    const size_t edhoc[] = {37, 45, 19, 19};
    const bool fresh[] = {true, true, true, false};
    for (int i = 0; i < 4; i++) {
        struct edhoc_netacct_dgram d = v6(coap[i]);
        struct edhoc_netacct_layers l;
        assert_int_equal(edhoc_netacct_datagram(&link, &d, &l, NULL, 0), 0);
        edhoc_netacct_summary_add(&s, EDHOC_NETACCT_KIND_HANDSHAKE, &l, edhoc[i], fresh[i]);
    }
    struct edhoc_netacct_dgram ack = v6(4);
    struct edhoc_netacct_layers l;
    assert_int_equal(edhoc_netacct_datagram(&link, &ack, &l, NULL, 0), 0);
    assert_int_equal(l.link, 38);
    edhoc_netacct_summary_add(&s, EDHOC_NETACCT_KIND_OSCORE, &l, 0, true);

    assert_int_equal(s.handshake.messages, 3);
    assert_int_equal(s.handshake.datagrams, 4);
    assert_int_equal(s.handshake.edhoc, 101);
    assert_int_equal(s.handshake.coap, 213);
    assert_int_equal(s.handshake.udp, 245);
    assert_int_equal(s.handshake.ip, 405);
    assert_int_equal(s.handshake.frames, 4);
    assert_int_equal(s.handshake.link, 349);
    assert_int_equal(s.oscore.messages, 1);
    assert_int_equal(s.oscore.link, 38);
    assert_int_equal(s.all.messages, 4);
    assert_int_equal(s.all.datagrams, 5);
    assert_int_equal(s.all.coap, 217);
    assert_int_equal(s.all.link, 387);
    assert_int_equal(s.other.datagrams, 0);

    struct edhoc_netacct_total t;
    edhoc_netacct_total_clear(&t);
    edhoc_netacct_total_merge(&t, &s.handshake);
    edhoc_netacct_total_merge(&t, &s.oscore);
    assert_memory_equal(&t, &s.all, sizeof t);
}

static void test_describe(void **state)
{
    (void)state;
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    char buf[512];
    size_t n = edhoc_netacct_link_describe(&link, buf, sizeof buf);
    assert_true(n > 0 && n < sizeof buf);
    assert_non_null(strstr(buf, "MAC header 23"));
    assert_non_null(strstr(buf, "FCS 2"));
    assert_non_null(strstr(buf, "hop limit 64 (elided)"));
    link = edhoc_netacct_link_mtu(1280, 0);
    edhoc_netacct_link_describe(&link, buf, sizeof buf);
    assert_non_null(strstr(buf, "1280"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_802154_table),
        cmocka_unit_test(test_802154_too_large),
        cmocka_unit_test(test_802154_ports),
        cmocka_unit_test(test_802154_addresses_hop_limit),
        cmocka_unit_test(test_802154_addresses_auto),
        cmocka_unit_test(test_802154_short_mac),
        cmocka_unit_test(test_802154_ipv4_is_carried_as_ipv6),
        cmocka_unit_test(test_bad_parameters),
        cmocka_unit_test(test_ip_layers),
        cmocka_unit_test(test_generic_mtu),
        cmocka_unit_test(test_totals),
        cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
