/*
 * Time on air, SCHC and energy (src/netacct/airtime.c, schc.c), each
 * figure worked out by hand in the comment beside it from the formula the
 * code cites:
 *   LoRa (SX1276 datasheet 4.1.1.7): Tsym = 2^SF / BW; preamble (8 +
 *     4.25) Tsym; payload symbols 8 + ceil((8 PL - 4 SF + 28 + 16 CRC -
 *     20 IH) / (4 (SF - 2 DE))) * (CR + 4).
 *   IEEE 802.15.4 O-QPSK: 32 us a byte, SHR 5 + PHR 1 per PPDU.
 *   Bluetooth LE: LE 1M 8 us a byte, LE 2M 4; preamble 1/2 + access
 *     address 4 + header 2 + payload + MIC 4 + CRC 3.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "edhoc/netacct.h"

/* ---- LoRa ---- */

static void test_lora_sf7(void **state)
{
    (void)state;
    /* SF7, 125 kHz: Tsym = 128 / 125000 s = 1024 us; preamble 12.25 *
     * 1024 = 12544 us. CR 4/5 (CR = 1), explicit header (IH = 0), CRC on,
     * no LDRO: denominator 4 * 7 = 28. */
    /* PL 0: 0 - 28 + 28 + 16 = 16 -> ceil(16/28) = 1 -> 1 * 5 = 5;
     * 13 symbols = 13312; total 25856. */
    assert_int_equal(edhoc_netacct_lora_toa_us(0, 7, 125000, 1, 8, false, true, false), 25856);
    /* PL 13: 104 + 16 = 120 -> ceil(120/28) = 5 -> 25; 33 symbols =
     * 33792; 46336. */
    assert_int_equal(edhoc_netacct_lora_toa_us(13, 7, 125000, 1, 8, false, true, false), 46336);
    /* PL 51: 408 + 16 = 424 -> ceil(424/28) = 16 -> 80; 88 symbols =
     * 90112; 102656. */
    assert_int_equal(edhoc_netacct_lora_toa_us(51, 7, 125000, 1, 8, false, true, false), 102656);
    /* PL 222: 1776 + 16 = 1792 -> 1792/28 = 64 exactly -> 320; 328
     * symbols = 335872; 348416. */
    assert_int_equal(edhoc_netacct_lora_toa_us(222, 7, 125000, 1, 8, false, true, false), 348416);
}

static void test_lora_sf12_ldro(void **state)
{
    (void)state;
    /* SF12, 125 kHz: Tsym = 4096 / 125000 s = 32768 us > 16 ms, so DE = 1:
     * denominator 4 * (12 - 2) = 40. Preamble 12.25 * 32768 = 401408.
     * PL 13: 104 - 48 + 28 + 16 = 100 -> ceil(100/40) = 3 -> 15; 23
     * symbols = 753664; total 1155072 us. */
    assert_int_equal(edhoc_netacct_lora_toa_us(13, 12, 125000, 1, 8, false, true, true), 1155072);
    /* The same without LDRO: 100 / 48 -> 3 -> 23 symbols as well; PL 51:
     * 408 - 20 = 388 + 16 = 404; LDRO: ceil(404/40) = 11 -> 55 -> 63
     * symbols = 2064384 + 401408 = 2465792; without: ceil(404/48) = 9 ->
     * 45 -> 53 symbols = 1736704 + 401408 = 2138112. */
    assert_int_equal(edhoc_netacct_lora_toa_us(51, 12, 125000, 1, 8, false, true, true), 2465792);
    assert_int_equal(edhoc_netacct_lora_toa_us(51, 12, 125000, 1, 8, false, true, false), 2138112);
    /* Out of range: SF 13, bandwidth 200 kHz, CR 0. */
    assert_int_equal(edhoc_netacct_lora_toa_us(13, 13, 125000, 1, 8, false, true, false), 0);
    assert_int_equal(edhoc_netacct_lora_toa_us(13, 7, 200000, 1, 8, false, true, false), 0);
    assert_int_equal(edhoc_netacct_lora_toa_us(13, 7, 125000, 0, 8, false, true, false), 0);
}

static void test_lora_data_rates(void **state)
{
    (void)state;
    struct edhoc_netacct_lora_dr dr;
    /* RP002 EU863-870: DR0 SF12/125 N 51 (LDRO), DR3 SF9 N 115, DR5 SF7 N 222. */
    assert_int_equal(edhoc_netacct_lora_data_rate(EDHOC_NETACCT_EU868, 0, false, &dr), 0);
    assert_int_equal(dr.sf, 12);
    assert_int_equal(dr.max_payload, 51);
    assert_true(dr.ldro);
    assert_int_equal(edhoc_netacct_lora_data_rate(EDHOC_NETACCT_EU868, 3, false, &dr), 0);
    assert_int_equal(dr.sf, 9);
    assert_int_equal(dr.max_payload, 115);
    assert_false(dr.ldro);
    assert_int_equal(edhoc_netacct_lora_data_rate(EDHOC_NETACCT_EU868, 5, true, &dr), 0);
    assert_int_equal(dr.sf, 7);
    assert_int_equal(dr.max_payload, 222);
    assert_int_equal(edhoc_netacct_lora_data_rate(EDHOC_NETACCT_EU868, 6, false, &dr),
                     EDHOC_NETACCT_ERR_ARG);
    /* US902-928 uplink DR0 SF10/125 N 11; DR4 SF8/500 N 242; RX1 for DR0
     * is DR10 = SF10/500 N 242. */
    assert_int_equal(edhoc_netacct_lora_data_rate(EDHOC_NETACCT_US915, 0, false, &dr), 0);
    assert_int_equal(dr.sf, 10);
    assert_int_equal(dr.bw_hz, 125000);
    assert_int_equal(dr.max_payload, 11);
    assert_int_equal(edhoc_netacct_lora_data_rate(EDHOC_NETACCT_US915, 4, false, &dr), 0);
    assert_int_equal(dr.sf, 8);
    assert_int_equal(dr.bw_hz, 500000);
    assert_int_equal(dr.max_payload, 242);
    assert_int_equal(edhoc_netacct_lora_data_rate(EDHOC_NETACCT_US915, 0, true, &dr), 0);
    assert_int_equal(dr.dr, 10);
    assert_int_equal(dr.bw_hz, 500000);
    assert_int_equal(edhoc_netacct_lora_data_rate(EDHOC_NETACCT_US915, 5, false, &dr),
                     EDHOC_NETACCT_ERR_ARG);
}

/* ---- IEEE 802.15.4 ---- */

static void test_802154_frame_and_ack(void **state)
{
    (void)state;
    /* 127-byte PSDU: (5 + 1 + 127) * 32 = 4256 us; the Imm-Ack, MPDU 5:
     * (6 + 5) * 32 = 352 us. */
    assert_int_equal(edhoc_netacct_802154_frame_us(127), 4256);
    assert_int_equal(edhoc_netacct_802154_frame_us(5), 352);

    /* A 93-byte CoAP message fills one 127-byte frame on the default link
     * (test_netacct.c). Link time: mean backoff (2^3 - 1)/2 * 320 = 1120,
     * CCA 128, turnaround 192, frame 4256, turnaround 192, ACK 352 = 6240.
     * The sender listens during the CCA and for the ACK: 128 + 192 + 352
     * = 672; the receiver sends the ACK (352). */
    struct edhoc_netacct_link l = edhoc_netacct_link_802154_default();
    struct edhoc_netacct_dgram d = {
        .udp_payload = 93, .ipv6 = true, .src_port = 5683, .dst_port = 5683};
    struct edhoc_netacct_layers out;
    assert_int_equal(edhoc_netacct_datagram(&l, &d, &out, NULL, 0), 0);
    assert_int_equal(out.frames, 1);
    assert_int_equal(out.link, 127);
    assert_int_equal(out.air.tx_us, 4256);
    assert_int_equal(out.air.link_us, 6240);
    assert_int_equal(out.air.rx_us, 672);
    assert_int_equal(out.air.peer_tx_us, 352);
    assert_int_equal(out.air.peer_rx_us, 4256);
    assert_int_equal(out.air.wait_us, 0);

    /* One retry: the failed attempt costs backoff + CCA + turnaround +
     * frame (5696) + macAckWaitDuration 54 symbols (864) = 6560 more:
     * 12800; two transmissions 8512. BE 5: (31/2) * 320 = 4960 backoff:
     * 6240 - 1120 + 4960 = 10080. */
    l.retries = 1;
    assert_int_equal(edhoc_netacct_datagram(&l, &d, &out, NULL, 0), 0);
    assert_int_equal(out.air.link_us, 12800);
    assert_int_equal(out.air.tx_us, 8512);
    l.retries = 0;
    l.csma_be = 5;
    assert_int_equal(edhoc_netacct_datagram(&l, &d, &out, NULL, 0), 0);
    assert_int_equal(out.air.link_us, 10080);
}

/* ---- Bluetooth LE ---- */

static void test_ble_packets(void **state)
{
    (void)state;
    /* LE 1M, 27-byte payload: 1 + 4 + 2 + 27 + 3 = 37 bytes = 296 us; with
     * the MIC 41 = 328 us. 251 bytes: 261 = 2088 us; with MIC 265 = 2120
     * us. LE 2M, 251 with MIC: 2 + 4 + 2 + 251 + 4 + 3 = 266 * 4 = 1064.
     * An empty PDU never carries a MIC: LE 1M 10 * 8 = 80 us. */
    assert_int_equal(edhoc_netacct_ble_packet_us(1, 27, false), 296);
    assert_int_equal(edhoc_netacct_ble_packet_us(1, 27, true), 328);
    assert_int_equal(edhoc_netacct_ble_packet_us(1, 251, false), 2088);
    assert_int_equal(edhoc_netacct_ble_packet_us(1, 251, true), 2120);
    assert_int_equal(edhoc_netacct_ble_packet_us(2, 251, true), 1064);
    assert_int_equal(edhoc_netacct_ble_packet_us(1, 0, true), 80);
    assert_int_equal(edhoc_netacct_ble_packet_us(3, 27, true), 0);

    /* A 50-byte CoAP message, ports 5683: IPHC 9 (as on 802.15.4), K-frame
     * 4 + 2 + 9 + 50 = 65 bytes -> data length 27: PDUs of 27, 27, 11.
     * Link bytes (header 2 + payload + MIC 4): 33 + 33 + 17 = 83. Air:
     * 328 + 328 + (1+4+2+11+4+3 = 25 bytes = 200) = 856; each PDU adds
     * T_IFS + empty PDU + T_IFS = 380: link time 856 + 1140 = 1996. */
    struct edhoc_netacct_link l = edhoc_netacct_link_ble_default();
    struct edhoc_netacct_dgram d = {
        .udp_payload = 50, .ipv6 = true, .src_port = 5683, .dst_port = 5683};
    struct edhoc_netacct_layers out;
    size_t sizes[4];
    assert_int_equal(edhoc_netacct_datagram(&l, &d, &out, sizes, 4), 0);
    assert_int_equal(out.lowpan_header, 9);
    assert_int_equal(out.frames, 3);
    assert_int_equal(out.link, 83);
    assert_int_equal(sizes[2], 17);
    assert_int_equal(out.air.tx_us, 856);
    assert_int_equal(out.air.link_us, 1996);
    /* Data length 251 on LE 2M: one PDU of 65: 2 + 4 + 2 + 65 + 4 + 3 = 80
     * bytes = 320 us; empty 11 * 4 = 44; link 320 + 150 + 44 + 150 = 664. */
    l.ble_phy = 2;
    l.ble_data_length = 251;
    assert_int_equal(edhoc_netacct_datagram(&l, &d, &out, NULL, 0), 0);
    assert_int_equal(out.frames, 1);
    assert_int_equal(out.air.tx_us, 320);
    assert_int_equal(out.air.link_us, 664);
    l.ble_data_length = 26;
    assert_int_equal(edhoc_netacct_datagram(&l, &d, &out, NULL, 0), EDHOC_NETACCT_ERR_ARG);
}

/* ---- SCHC ---- */

/* RFC 9529 trace 2 message_1 (39 bytes), as RFC 9528 Appendix A.2 carries
 * it: CON POST, 1-byte token, Uri-Path ".well-known" / "edhoc",
 * Content-Format 65, payload CBOR true + message_1. */
static const uint8_t trace2_m1[39] = {0x03, 0x82, 0x06, 0x02, 0x58, 0x20, 0x8a, 0xf6, 0xf4, 0x30,
                                      0xeb, 0xe1, 0x8d, 0x34, 0x18, 0x40, 0x17, 0xa9, 0xa1, 0x1b,
                                      0xf5, 0x11, 0xc8, 0xdf, 0xf8, 0xf8, 0x34, 0x73, 0x0b, 0x96,
                                      0xc1, 0xb7, 0xc8, 0xdb, 0xca, 0x2f, 0xc3, 0xb6, 0x37};

static size_t edhoc_request(const uint8_t *msg, size_t len, bool with_true, uint8_t *out)
{
    static const uint8_t head[] = {0x41, 0x02, 0x12, 0x34, 0x7a, 0xbb, '.',  'w', 'e',
                                   'l',  'l',  '-',  'k',  'n',  'o',  'w',  'n', 0x05,
                                   'e',  'd',  'h',  'o',  'c',  0x11, 0x41, 0xff};
    size_t n = sizeof head;
    memcpy(out, head, n);
    if (with_true)
        out[n++] = 0xf5;
    memcpy(out + n, msg, len);
    return n + len;
}

static void test_schc_edhoc(void **state)
{
    (void)state;
    uint8_t m[128];
    /* 4 + token 1 + (1 + 11) + (1 + 5) + (1 + 1) + marker 1 + 40 = 66. */
    size_t len = edhoc_request(trace2_m1, sizeof trace2_m1, true, m);
    assert_int_equal(len, 66);
    unsigned rule = 99;
    size_t pl = 0;
    /* Rule 1: type and code fixed (0 bits), TKL 4 + token 8 + MID LSB 4 =
     * 16 bits; Uri-Path and Content-Format not sent. Packet: 2 + 40 = 42
     * bytes instead of 40 + 8 + 66 = 114. */
    assert_int_equal(edhoc_netacct_schc_residue(m, len, &rule, &pl), 16);
    assert_int_equal(rule, 1);
    assert_int_equal(pl, 40);
    assert_int_equal(edhoc_netacct_schc_packet(m, len), 42);

    /* message_2 (45 bytes) in ACK 2.04, token 1, Content-Format 64 (rule
     * 3): type mapping {ACK, CON} 1 bit + code mapping {2.04, 4.00} 1 bit
     * + 16 = 18 bits -> 3 bytes; packet 3 + 45 = 48. */
    uint8_t r[64] = {0x61, 0x44, 0x12, 0x34, 0x7a, 0xc1, 0x40, 0xff};
    memset(r + 8, 0x5a, 45);
    assert_int_equal(edhoc_netacct_schc_residue(r, 53, &rule, &pl), 18);
    assert_int_equal(rule, 3);
    assert_int_equal(edhoc_netacct_schc_packet(r, 53), 48);

    /* An option outside every rule (Uri-Query "a" after Content-Format):
     * no compression, rule 0: (40 + 8 + header 4 + 1 + 12 + 6 + 2 + 2 +
     * marker 1 = 76) * 8 = 608 bits, packet 76 + 40 = 116. */
    uint8_t q[140];
    memcpy(q, m, 25);
    q[25] = 0x31; /* delta 3 -> 15 Uri-Query, length 1 */
    q[26] = 'a';
    memcpy(q + 27, m + 25, len - 25);
    assert_int_equal(edhoc_netacct_schc_residue(q, len + 2, &rule, &pl), 608);
    assert_int_equal(rule, 0);
    assert_int_equal(edhoc_netacct_schc_packet(q, len + 2), 116);

    /* Not CoAP: version 0, a marker with no payload, an option running
     * past the end, token length 9. */
    static const uint8_t v0[] = {0x01, 0x02, 0, 0};
    static const uint8_t marker[] = {0x40, 0x02, 0, 0, 0xff};
    static const uint8_t past[] = {0x40, 0x02, 0, 0, 0xb5, 'e'};
    static const uint8_t tkl9[] = {0x49, 0x02, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(edhoc_netacct_schc_residue(v0, sizeof v0, &rule, &pl), EDHOC_NETACCT_ERR_ARG);
    assert_int_equal(edhoc_netacct_schc_residue(marker, sizeof marker, &rule, &pl),
                     EDHOC_NETACCT_ERR_ARG);
    assert_int_equal(edhoc_netacct_schc_residue(past, sizeof past, &rule, &pl),
                     EDHOC_NETACCT_ERR_ARG);
    assert_int_equal(edhoc_netacct_schc_residue(tkl9, sizeof tkl9, &rule, &pl),
                     EDHOC_NETACCT_ERR_ARG);
}

static void test_schc_oscore(void **state)
{
    (void)state;
    /* RFC 8613 Appendix C.4, the protected request: CON POST, token
     * 0x00003974 (4 bytes), Uri-Host "localhost", OSCORE 0x0914, 13 bytes
     * of ciphertext. Rule 7: type {CON, NON} 1 + code {POST, FETCH} 1 +
     * TKL 4 + token 32 + MID 4 + Uri-Host (4 + 72) + OSCORE (4 + 16) = 138
     * bits -> 18 bytes; packet 18 + 13 = 31 (the CoAP message is 35). */
    static const uint8_t req[] = {0x44, 0x02, 0x5d, 0x1f, 0x00, 0x00, 0x39, 0x74, 0x39,
                                  0x6c, 0x6f, 0x63, 0x61, 0x6c, 0x68, 0x6f, 0x73, 0x74,
                                  0x62, 0x09, 0x14, 0xff, 0x61, 0x2f, 0x10, 0x92, 0xf1,
                                  0x77, 0x6f, 0x1c, 0x16, 0x68, 0xb3, 0x82, 0x5e};
    unsigned rule;
    size_t pl;
    assert_int_equal(edhoc_netacct_schc_residue(req, sizeof req, &rule, &pl), 138);
    assert_int_equal(rule, 7);
    assert_int_equal(pl, 13);
    assert_int_equal(edhoc_netacct_schc_packet(req, sizeof req), 31);
    /* C.7, the protected response: ACK 2.04, same token, OSCORE option
     * empty, 22 bytes. Rule 8: 1 + 1 + 4 + 32 + 4 + OSCORE length 0 (4) =
     * 46 bits -> 6 bytes; packet 6 + 22 = 28 (CoAP 32). */
    static const uint8_t resp[] = {0x64, 0x44, 0x5d, 0x1f, 0x00, 0x00, 0x39, 0x74, 0x90, 0xff, 0xdb,
                                   0xaa, 0xd1, 0xe9, 0xa7, 0xe7, 0xb2, 0xa8, 0x13, 0xd3, 0xc3, 0x15,
                                   0x24, 0x37, 0x83, 0x03, 0xcd, 0xaf, 0xae, 0x11, 0x91, 0x06};
    assert_int_equal(edhoc_netacct_schc_residue(resp, sizeof resp, &rule, &pl), 46);
    assert_int_equal(rule, 8);
    assert_int_equal(edhoc_netacct_schc_packet(resp, sizeof resp), 28);
}

static void test_schc_fragments(void **state)
{
    (void)state;
    size_t s[16];
    /* 300 bytes, N 51 (EU868 DR0): 30 tiles of 10, the last one 10 bytes
     * fits the All-1 (1 + 4 + 10 = 15). Regular fragments carry (51 - 1) /
     * 10 = 5 tiles: 29 tiles -> 6 fragments (5 of 51, then 4 tiles = 41),
     * plus the All-1: 7. */
    assert_int_equal(edhoc_netacct_schc_fragments(300, 51, s, 16), 7);
    assert_int_equal(s[0], 51);
    assert_int_equal(s[5], 41);
    assert_int_equal(s[6], 15);
    /* 42 bytes, N 11 (US915 DR0): tiles 10, 10, 10, 10, 2; one tile a
     * fragment; the 2-byte tile fits the All-1 (1 + 4 + 2 = 7): 4 + 1 = 5. */
    assert_int_equal(edhoc_netacct_schc_fragments(42, 11, s, 16), 5);
    assert_int_equal(s[3], 11);
    assert_int_equal(s[4], 7);
    /* 40 bytes, N 11: the last tile is 10, 15 > 11, so it takes a regular
     * fragment too: 4 + an All-1 of RCS only (5). */
    assert_int_equal(edhoc_netacct_schc_fragments(40, 11, s, 16), 5);
    assert_int_equal(s[4], 5);
    /* N 10 leaves no room for a tile. */
    assert_int_equal(edhoc_netacct_schc_fragments(40, 10, s, 16), 0);
}

static void test_lorawan_datagrams(void **state)
{
    (void)state;
    uint8_t m[128];
    size_t len = edhoc_request(trace2_m1, sizeof trace2_m1, true, m);
    struct edhoc_netacct_link l = edhoc_netacct_link_lorawan_default();
    struct edhoc_netacct_dgram d = {
        .udp_payload = len, .ipv6 = true, .payload = m, .dir = EDHOC_NETACCT_DIR_UP};
    struct edhoc_netacct_layers out;
    /* EU868 DR0: SCHC packet 42 <= 51: one frame, PHYPayload 13 + 42 = 55.
     * SF12 LDRO CRC: 440 - 48 + 28 + 16 = 436 -> ceil(436/40) = 11 -> 55;
     * 63 symbols: 2064384 + 401408 = 2465792 us. Duty cycle 1 %: wait
     * 99 * ToA = 244113408 us. */
    assert_int_equal(edhoc_netacct_datagram(&l, &d, &out, NULL, 0), 0);
    assert_int_equal(out.frames, 1);
    assert_int_equal(out.link, 55);
    assert_false(out.fragmented);
    assert_true(out.air.schc_known);
    assert_int_equal(out.air.schc_residue_bits, 16);
    assert_int_equal(out.air.tx_us, 2465792);
    assert_int_equal(out.air.link_us, 2465792);
    assert_int_equal(out.air.wait_us, 244113408ull);

    /* US915 DR0 (N 11): the message does not fit one frame: 5 SCHC
     * fragments (test_schc_fragments), PHYPayloads 4 * 24 + 20 = 116. */
    l.region = EDHOC_NETACCT_US915;
    l.duty_cycle_ppm = 1000000;
    assert_int_equal(edhoc_netacct_datagram(&l, &d, &out, NULL, 0), 0);
    assert_int_equal(out.frames, 5);
    assert_true(out.fragmented);
    assert_int_equal(out.air.fragments, 5);
    assert_int_equal(out.link, 116);

    /* Downlink on EU868 DR5 (SF7): the same message, RX1 1 s after the
     * uplink: PL 55 without CRC: 440 - 28 + 28 = 440 -> ceil(440/28) = 16
     * -> 80; 88 symbols = 90112 + 12544 = 102656; link time 1 s + that. */
    l = edhoc_netacct_link_lorawan_default();
    l.data_rate = 5;
    d.dir = EDHOC_NETACCT_DIR_DOWN;
    assert_int_equal(edhoc_netacct_datagram(&l, &d, &out, NULL, 0), 0);
    assert_true(out.downlink);
    assert_int_equal(out.air.tx_us, 102656);
    assert_int_equal(out.air.link_us, 1000000 + 102656);
}

/* ---- Energy and sequences ---- */

static void test_energy(void **state)
{
    (void)state;
    struct edhoc_netacct_radio r;
    assert_int_equal(edhoc_netacct_radio_builtin("cc2538", &r), 0);
    struct edhoc_netacct_link l = edhoc_netacct_link_802154_default();
    struct edhoc_netacct_dgram d = {
        .udp_payload = 93, .ipv6 = true, .src_port = 5683, .dst_port = 5683};
    struct edhoc_netacct_layers out;
    assert_int_equal(edhoc_netacct_datagram(&l, &d, &out, NULL, 0), 0);
    /* Sender: TX 3 V * 24 mA * (4256 + 192 start-up) us = 320.256 uJ; RX
     * 3 V * 20 mA * (672 + 192) us = 51.84 uJ. Receiver: TX the ACK 3 * 24
     * * (352 + 192) = 39.168 uJ; RX the frame 3 * 20 * 4256 = 255.36 uJ
     * (already listening: no start-up). */
    struct edhoc_netacct_energy s = edhoc_netacct_energy_of(&r, &out.air, true);
    struct edhoc_netacct_energy p = edhoc_netacct_energy_of(&r, &out.air, false);
    assert_float_equal(s.tx_j, 320.256e-6, 1e-12);
    assert_float_equal(s.rx_j, 51.84e-6, 1e-12);
    assert_float_equal(p.tx_j, 39.168e-6, 1e-12);
    assert_float_equal(p.rx_j, 255.36e-6, 1e-12);
    assert_int_equal(edhoc_netacct_radio_builtin("cc2420", &r), EDHOC_NETACCT_ERR_ARG);
}

static void test_radio_parse(void **state)
{
    (void)state;
    struct edhoc_netacct_radio r;
    char why[160];
    static const char good[] = "# a board\nname = myboard\nvolts = 3.3\ntx_ma = 12.5\n"
                               "rx_ma=6 # datasheet table 4\ntx_startup_us = 100\n";
    assert_int_equal(edhoc_netacct_radio_parse(good, strlen(good), &r, why, sizeof why), 0);
    assert_string_equal(r.name, "myboard");
    assert_float_equal(r.volts, 3.3, 1e-9);
    assert_float_equal(r.tx_ma, 12.5, 1e-9);
    assert_float_equal(r.rx_ma, 6, 1e-9);
    assert_int_equal(r.tx_startup_us, 100);
    static const char missing[] = "volts = 3\ntx_ma = 1\n";
    assert_int_equal(edhoc_netacct_radio_parse(missing, strlen(missing), &r, why, sizeof why),
                     EDHOC_NETACCT_ERR_ARG);
    assert_string_equal(why, "volts, tx_ma and rx_ma are required (missing rx_ma)");
    static const char unknown[] = "volts = 3\npower = 1\n";
    assert_int_equal(edhoc_netacct_radio_parse(unknown, strlen(unknown), &r, why, sizeof why),
                     EDHOC_NETACCT_ERR_ARG);
    assert_non_null(strstr(why, "line 2: unknown key 'power'"));
    static const char bad[] = "volts = -3\n";
    assert_int_equal(edhoc_netacct_radio_parse(bad, strlen(bad), &r, why, sizeof why),
                     EDHOC_NETACCT_ERR_ARG);
    assert_non_null(strstr(why, "line 1: volts: not a number in range"));
}

static void test_sequence(void **state)
{
    (void)state;
    /* LoRaWAN EU868 DR0: message_1 uplink (ToA a, wait 99 a), message_2
     * downlink (1 s + b), message_3 uplink: it may leave only 100 a after
     * message_1 started, so the handshake ends at 100 a + c. */
    struct edhoc_netacct_link l = edhoc_netacct_link_lorawan_default();
    struct edhoc_netacct_air a = {.link_us = 2465792, .wait_us = 99ull * 2465792};
    struct edhoc_netacct_air b = {.link_us = 1000000 + 2000000, .wait_us = 99ull * 2000000};
    struct edhoc_netacct_air c = {.link_us = 1500000, .wait_us = 99ull * 1500000};
    struct edhoc_netacct_step steps[] = {{&a, true, 0}, {&b, false, 0}, {&c, true, 0}};
    assert_int_equal(edhoc_netacct_air_sequence(&l, steps, 3), 100ull * 2465792 + 1500000);
    /* BLE, 7.5 ms interval: each message waits for the next connection
     * event: 0 + 1996 -> 7500 + 664 -> 15000 + 1996 = 16996. */
    l = edhoc_netacct_link_ble_default();
    struct edhoc_netacct_air x = {.link_us = 1996}, y = {.link_us = 664};
    struct edhoc_netacct_step ble[] = {{&x, true, 0}, {&y, false, 0}, {&x, true, 0}};
    assert_int_equal(edhoc_netacct_air_sequence(&l, ble, 3), 16996);
    /* Host time pushes a message into a later event: 1996 + 7000 = 8996
     * -> 15000 + 664. */
    ble[1].host_us = 7000;
    assert_int_equal(edhoc_netacct_air_sequence(&l, ble, 2), 15664);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lora_sf7),          cmocka_unit_test(test_lora_sf12_ldro),
        cmocka_unit_test(test_lora_data_rates),   cmocka_unit_test(test_802154_frame_and_ack),
        cmocka_unit_test(test_ble_packets),       cmocka_unit_test(test_schc_edhoc),
        cmocka_unit_test(test_schc_oscore),       cmocka_unit_test(test_schc_fragments),
        cmocka_unit_test(test_lorawan_datagrams), cmocka_unit_test(test_energy),
        cmocka_unit_test(test_radio_parse),       cmocka_unit_test(test_sequence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
