/*
 * Per-layer byte accounting of datagrams: IP, UDP and the link below,
 * with IEEE 802.15.4 + 6LoWPAN (RFC 4944 fragmentation, RFC 6282 IPHC and
 * NHC UDP) modelled exactly enough to count frames and bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/netacct.h"

/* RFC 4944 Section 5.3: the first fragment header is 4 bytes, the later
 * ones 5 (they add datagram_offset); offsets count 8-byte units of the
 * uncompressed datagram, and datagram_size has 11 bits. */
#define FRAG1_HEADER      4
#define FRAGN_HEADER      5
#define FRAG_UNIT         8
#define FRAG_DATAGRAM_MAX 2047

struct edhoc_netacct_link edhoc_netacct_link_802154_default(void)
{
    struct edhoc_netacct_link l;
    memset(&l, 0, sizeof l);
    l.type = EDHOC_NETACCT_LINK_802154;
    l.mac_header = 23;
    l.fcs = 2;
    l.security = 0;
    l.phy_header = 0;
    l.src_addr = EDHOC_NETACCT_ADDR_LINK_LOCAL_MAC;
    l.dst_addr = EDHOC_NETACCT_ADDR_LINK_LOCAL_MAC;
    l.hop_limit = 64;
    /* IEEE 802.15.4-2015 Table 8-94: macMinBE default 3; retries beyond
     * the first attempt are a what-if (macMaxFrameRetries allows 0..7). */
    l.csma_be = 3;
    l.retries = 0;
    return l;
}

struct edhoc_netacct_link edhoc_netacct_link_ble_default(void)
{
    struct edhoc_netacct_link l;
    memset(&l, 0, sizeof l);
    l.type = EDHOC_NETACCT_LINK_BLE;
    /* RFC 7668 Section 3.2.2: link-local addresses from the Bluetooth
     * device address, elided by IPHC; hop limit 64 elided. */
    l.src_addr = EDHOC_NETACCT_ADDR_LINK_LOCAL_MAC;
    l.dst_addr = EDHOC_NETACCT_ADDR_LINK_LOCAL_MAC;
    l.hop_limit = 64;
    l.ble_phy = 1;
    l.ble_data_length = 27;   /* the Core 4.0/4.1 LL payload, every device supports it */
    l.ble_encrypted = true;   /* RFC 7668 Section 3.2.1 requires link-layer security */
    l.ble_interval_us = 7500; /* the shortest interval (Core Vol 6 Part B 4.5.1) */
    return l;
}

struct edhoc_netacct_link edhoc_netacct_link_lorawan_default(void)
{
    struct edhoc_netacct_link l;
    memset(&l, 0, sizeof l);
    l.type = EDHOC_NETACCT_LINK_LORAWAN;
    l.region = EDHOC_NETACCT_EU868;
    l.data_rate = 0;
    l.duty_cycle_ppm = 10000; /* ETSI EN 300 220 sub-band g1 (868.0-868.6 MHz): 1 % */
    l.rx1_delay_ms = 1000;    /* RP002: RECEIVE_DELAY1 1 s, RECEIVE_DELAY2 2 s */
    l.rx2_delay_ms = 2000;
    l.preamble = 8; /* LoRaWAN: 8 programmed preamble symbols */
    return l;
}

struct edhoc_netacct_link edhoc_netacct_link_mtu(unsigned mtu, unsigned frame_overhead)
{
    struct edhoc_netacct_link l;
    memset(&l, 0, sizeof l);
    l.type = EDHOC_NETACCT_LINK_MTU;
    l.mtu = mtu;
    l.frame_overhead = frame_overhead;
    return l;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* RFC 6282 Section 3.1.1 for a known address. */
static long auto_inline_bytes(const uint8_t a[16], bool dst)
{
    if (a[0] == 0xff) {
        if (!dst)
            return 16; /* a multicast source is not valid IPv6; count it whole */
        /* DAM=11: ff02::00XX; DAM=10: ffXX::00XX:XXXX; DAM=01:
         * ffXX::00XX:XXXX:XXXX. */
        if (a[1] == 0x02 && all_zero(a + 2, 13))
            return 1;
        if (all_zero(a + 2, 11))
            return 4;
        if (all_zero(a + 2, 9))
            return 6;
        return 16;
    }
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
        return all_zero(a + 2, 6) ? 0 : 16; /* fe80::/64, else fe80::/10 inline */
    /* ::, ::1, ::ffff:a.b.c.d: not radio addresses; model the usual case. */
    if (all_zero(a, 10) && ((a[10] == 0 && a[11] == 0) || (a[10] == 0xff && a[11] == 0xff)))
        return 0;
    static const uint8_t short_iid[6] = {0, 0, 0, 0xff, 0xfe, 0};
    return memcmp(a + 8, short_iid, 6) == 0 ? 2 : 8;
}

static long addr_inline_bytes(enum edhoc_netacct_addr_mode m)
{
    switch (m) {
    case EDHOC_NETACCT_ADDR_AUTO:
    case EDHOC_NETACCT_ADDR_LINK_LOCAL_MAC:
    case EDHOC_NETACCT_ADDR_CONTEXT_MAC: return 0;
    case EDHOC_NETACCT_ADDR_CONTEXT_16: return 2;
    case EDHOC_NETACCT_ADDR_CONTEXT_64: return 8;
    case EDHOC_NETACCT_ADDR_INLINE: return 16;
    }
    return -1;
}

static bool port_4bit(uint16_t p)
{
    return (p & 0xfff0) == 0xf0b0;
}

static bool port_8bit(uint16_t p)
{
    return (p & 0xff00) == 0xf000;
}

/* RFC 6282 Section 4.3.3: P=11 when both ports are 0xF0Bx, P=01/10 when
 * one of them is 0xF0xx, else both inline. */
static long udp_ports_bytes(uint16_t src, uint16_t dst)
{
    if (port_4bit(src) && port_4bit(dst))
        return 1;
    if (port_8bit(src) || port_8bit(dst))
        return 3;
    return 4;
}

long edhoc_netacct_lowpan_header(const struct edhoc_netacct_link *link,
                                 const struct edhoc_netacct_dgram *d)
{
    if (!link || !d ||
        (link->type != EDHOC_NETACCT_LINK_802154 && link->type != EDHOC_NETACCT_LINK_BLE))
        return EDHOC_NETACCT_ERR_ARG;
    bool known = d->addrs_known && d->ipv6;
    long src = link->src_addr == EDHOC_NETACCT_ADDR_AUTO && known
                   ? auto_inline_bytes(d->src_addr, false)
                   : addr_inline_bytes(link->src_addr);
    long dst = link->dst_addr == EDHOC_NETACCT_ADDR_AUTO && known
                   ? auto_inline_bytes(d->dst_addr, true)
                   : addr_inline_bytes(link->dst_addr);
    if (src < 0 || dst < 0)
        return EDHOC_NETACCT_ERR_ARG;
    /* IPHC base (2 bytes, TF=11, NH=1, CID=0) + hop limit when not one of
     * the three compressible values + addresses. */
    long n = 2;
    if (link->hop_limit != 1 && link->hop_limit != 64 && link->hop_limit != 255)
        n += 1;
    n += src + dst;
    /* NHC UDP header byte + ports + checksum (carried; length elided). */
    n += 1 + udp_ports_bytes(d->src_port, d->dst_port) + 2;
    return n;
}

static int account_802154(const struct edhoc_netacct_link *link,
                          const struct edhoc_netacct_dgram *d, struct edhoc_netacct_layers *out,
                          size_t *frame_sizes, size_t cap)
{
    long h = edhoc_netacct_lowpan_header(link, d);
    if (h < 0)
        return (int)h;
    size_t per_frame = (size_t)link->mac_header + link->security + link->fcs;
    if (per_frame >= EDHOC_NETACCT_802154_FRAME_MAX)
        return EDHOC_NETACCT_ERR_ARG;
    size_t room = EDHOC_NETACCT_802154_FRAME_MAX - per_frame;
    size_t overhead = per_frame + link->phy_header;
    size_t payload = d->udp_payload;
    out->lowpan_header = (size_t)h;

    if ((size_t)h + payload <= room) {
        out->frames = 1;
        out->link = overhead + (size_t)h + payload;
        out->fragmented = false;
        if (frame_sizes && cap > 0)
            frame_sizes[0] = out->link;
        return 0;
    }

    /* Fragment the compressed packet. datagram_size and the offsets refer
     * to the uncompressed IPv6 packet (RFC 6282 Section 2), so the first
     * fragment carries the compressed headers and as much payload as keeps
     * the uncompressed length it stands for a multiple of 8. */
    const size_t uncompressed_headers = EDHOC_NETACCT_IPV6_HEADER + EDHOC_NETACCT_UDP_HEADER;
    if (uncompressed_headers + payload > FRAG_DATAGRAM_MAX)
        return EDHOC_NETACCT_ERR_TOO_LARGE;
    if (room < FRAG1_HEADER + (size_t)h + FRAG_UNIT || room < FRAGN_HEADER + FRAG_UNIT)
        return EDHOC_NETACCT_ERR_ARG;
    size_t r1 = room - FRAG1_HEADER - (size_t)h;
    size_t first = (uncompressed_headers + r1) / FRAG_UNIT * FRAG_UNIT - uncompressed_headers;
    size_t chunk = (room - FRAGN_HEADER) / FRAG_UNIT * FRAG_UNIT;
    if (first == 0 || first >= payload)
        return EDHOC_NETACCT_ERR_ARG;

    size_t n = 0, total = 0;
    size_t sz = overhead + FRAG1_HEADER + (size_t)h + first;
    if (frame_sizes && n < cap)
        frame_sizes[n] = sz;
    n++;
    total += sz;
    for (size_t left = payload - first; left > 0;) {
        size_t take = left < chunk ? left : chunk;
        sz = overhead + FRAGN_HEADER + take;
        if (frame_sizes && n < cap)
            frame_sizes[n] = sz;
        n++;
        total += sz;
        left -= take;
    }
    out->frames = (unsigned)n;
    out->link = total;
    out->fragmented = true;
    return 0;
}

/* ---- Time on air per link (formulas in airtime.c and docs/airtime.md) ---- */

static bool is_downlink(const struct edhoc_netacct_dgram *d)
{
    if (d->dir != EDHOC_NETACCT_DIR_AUTO)
        return d->dir == EDHOC_NETACCT_DIR_DOWN;
    return d->src_port == 5683 || d->src_port == 5684;
}

/* IEEE 802.15.4-2015, 2.4 GHz O-QPSK, unslotted CSMA-CA (Section 6.2.5.1)
 * and acknowledged frames (Section 6.7.4.2):
 *   each attempt: mean backoff (2^BE - 1)/2 * aUnitBackoffPeriod (20
 *   symbols), one CCA (8 symbols, Section 12.3.3 / phyCcaDuration), RX-to-TX
 *   turnaround aTurnaroundTime (12 symbols, Section 11.3), the PPDU;
 *   success: aTurnaroundTime, then the 5-byte Imm-Ack MPDU (11 bytes on
 *   air); a failed attempt waits macAckWaitDuration = aUnitBackoffPeriod +
 *   aTurnaroundTime + phySHRDuration + 6 * phySymbolsPerOctet = 20 + 12 +
 *   10 + 12 = 54 symbols.
 * 16 us a symbol. */
#define SYM_US          16
#define UNIT_BACKOFF_US (20 * SYM_US)
#define CCA_US          (8 * SYM_US)
#define TURNAROUND_US   (12 * SYM_US)
#define ACK_WAIT_US     (54 * SYM_US)
#define ACK_MPDU        5

static void air_802154(const struct edhoc_netacct_link *link, const size_t *frame_sizes,
                       unsigned frames, struct edhoc_netacct_air *a)
{
    memset(a, 0, sizeof *a);
    unsigned be = link->csma_be > 8 ? 8 : link->csma_be;
    uint64_t backoff = (((uint64_t)1 << be) - 1) * UNIT_BACKOFF_US / 2;
    uint64_t ack = edhoc_netacct_802154_frame_us(ACK_MPDU);
    for (unsigned i = 0; i < frames; i++) {
        size_t psdu = frame_sizes[i] - link->phy_header;
        uint64_t ppdu = edhoc_netacct_802154_frame_us(psdu);
        uint64_t attempt = backoff + CCA_US + TURNAROUND_US + ppdu;
        unsigned attempts = 1 + link->retries;
        a->tx_us += attempts * ppdu;
        a->peer_rx_us += attempts * ppdu;
        /* The sender listens during each CCA, then for the ACK. */
        a->rx_us += attempts * CCA_US + link->retries * ACK_WAIT_US + TURNAROUND_US + ack;
        a->peer_tx_us += ack;
        a->tx_starts += attempts;
        a->rx_starts += attempts;
        a->peer_tx_starts += 1;
        a->link_us += link->retries * (attempt + ACK_WAIT_US) + attempt + TURNAROUND_US + ack;
    }
}

/* Bluetooth LE, IPv6 over BLE (RFC 7668): the IPHC-compressed packet is one
 * L2CAP SDU on an LE credit-based channel: a K-frame with the basic header
 * (length 2, channel ID 2) and the 2-byte SDU length (Core Vol 3 Part A
 * Section 3.4.3), MPS assumed large enough for one K-frame; the link layer
 * fragments it into data PDUs of at most the data length (Vol 6 Part B
 * Section 2.4, LLID continuation). Each PDU is answered by the peer's
 * empty PDU T_IFS = 150 us later (Vol 6 Part B Section 4.1.1). */
#define BLE_L2CAP_HEADER 4
#define BLE_SDU_LENGTH   2
#define BLE_LL_HEADER    2
#define BLE_MIC          4
#define BLE_T_IFS_US     150

static int account_ble(const struct edhoc_netacct_link *link, const struct edhoc_netacct_dgram *d,
                       struct edhoc_netacct_layers *out, size_t *frame_sizes, size_t cap)
{
    long h = edhoc_netacct_lowpan_header(link, d);
    if (h < 0)
        return (int)h;
    if ((link->ble_phy != 1 && link->ble_phy != 2) || link->ble_data_length < 27 ||
        link->ble_data_length > 251)
        return EDHOC_NETACCT_ERR_ARG;
    out->lowpan_header = (size_t)h;
    size_t kframe = BLE_L2CAP_HEADER + BLE_SDU_LENGTH + (size_t)h + d->udp_payload;
    size_t dl = link->ble_data_length;
    size_t n = (kframe + dl - 1) / dl;
    struct edhoc_netacct_air *a = &out->air;
    uint64_t empty = edhoc_netacct_ble_packet_us(link->ble_phy, 0, link->ble_encrypted);
    size_t left = kframe;
    for (size_t i = 0; i < n; i++) {
        size_t take = left < dl ? left : dl;
        left -= take;
        size_t pdu = BLE_LL_HEADER + take + (link->ble_encrypted ? BLE_MIC : 0);
        if (frame_sizes && i < cap)
            frame_sizes[i] = pdu;
        out->link += pdu;
        uint64_t pkt = edhoc_netacct_ble_packet_us(link->ble_phy, take, link->ble_encrypted);
        a->tx_us += pkt;
        a->peer_rx_us += pkt;
        a->rx_us += empty;
        a->peer_tx_us += empty;
        a->link_us += pkt + BLE_T_IFS_US + empty + BLE_T_IFS_US;
    }
    a->tx_starts = a->rx_starts = a->peer_tx_starts = a->peer_rx_starts = (unsigned)n;
    out->frames = (unsigned)n;
    out->fragmented = n > 1;
    return 0;
}

/* The duty-cycle wait after a transmission of toa: ToA * (1/dc - 1)
 * (ETSI EN 300 220 as RP002 applies it per sub-band). */
static uint64_t duty_wait_us(const struct edhoc_netacct_link *link, uint64_t toa)
{
    if (!link->duty_cycle_ppm || link->duty_cycle_ppm >= 1000000)
        return 0;
    return toa * (1000000 - link->duty_cycle_ppm) / link->duty_cycle_ppm;
}

static uint64_t lora_frame_us(const struct edhoc_netacct_link *link,
                              const struct edhoc_netacct_lora_dr *dr, size_t phy_payload,
                              bool downlink)
{
    /* LoRaWAN L2 1.0.4 Section 3.2 / 4: coding rate 4/5, explicit header;
     * the PHY payload CRC only on uplinks. */
    return edhoc_netacct_lora_toa_us(phy_payload, dr->sf, dr->bw_hz, 1, link->preamble, false,
                                     !downlink, dr->ldro);
}

/* A SCHC ACK (RFC 9011 Section 5.6: W and C bits padded to one byte),
 * FRMPayload 1 byte. */
#define SCHC_ACK_BYTES     1
#define LORAWAN_FRAMES_MAX 300

static int account_lorawan(const struct edhoc_netacct_link *link,
                           const struct edhoc_netacct_dgram *d, struct edhoc_netacct_layers *out,
                           size_t *frame_sizes, size_t cap)
{
    bool down = out->downlink;
    struct edhoc_netacct_lora_dr dr, other;
    if (edhoc_netacct_lora_data_rate(link->region, link->data_rate, down, &dr) ||
        edhoc_netacct_lora_data_rate(link->region, link->data_rate, !down, &other) ||
        link->preamble < 6 || link->preamble > 65535)
        return EDHOC_NETACCT_ERR_ARG;
    struct edhoc_netacct_air *a = &out->air;
    long packet = edhoc_netacct_schc_packet(d->payload, d->udp_payload);
    if (d->payload) {
        unsigned rule;
        size_t pl;
        long bits = edhoc_netacct_schc_residue(d->payload, d->udp_payload, &rule, &pl);
        if (bits >= 0) {
            a->schc_residue_bits = (size_t)bits;
            a->schc_known = true;
        }
    }
    size_t sizes[LORAWAN_FRAMES_MAX];
    unsigned n;
    if ((size_t)packet <= dr.max_payload) {
        n = 1;
        sizes[0] = (size_t)packet;
    } else {
        n = edhoc_netacct_schc_fragments((size_t)packet, dr.max_payload, sizes, LORAWAN_FRAMES_MAX);
        if (n == 0 || n > LORAWAN_FRAMES_MAX)
            return EDHOC_NETACCT_ERR_TOO_LARGE;
        out->fragmented = true;
        a->fragments = n;
    }
    /* The other side's SCHC ACK frame, in its own direction. */
    uint64_t ack =
        lora_frame_us(link, &other, EDHOC_NETACCT_LORAWAN_MAC_OVERHEAD + SCHC_ACK_BYTES, !down);
    uint64_t rx1 = (uint64_t)link->rx1_delay_ms * 1000, rx2 = (uint64_t)link->rx2_delay_ms * 1000;
    uint64_t prev_wait = 0;
    for (unsigned i = 0; i < n; i++) {
        size_t phy = EDHOC_NETACCT_LORAWAN_MAC_OVERHEAD + sizes[i];
        if (frame_sizes && i < cap)
            frame_sizes[i] = phy;
        out->link += phy;
        uint64_t toa = lora_frame_us(link, &dr, phy, down);
        a->tx_us += toa;
        a->peer_rx_us += toa;
        a->tx_starts++;
        a->peer_rx_starts++;
        if (down) {
            /* Class A: a downlink leaves only in RX1, RECEIVE_DELAY1 after
             * an uplink; each further fragment (ACK-Always downlink, RFC
             * 9011 Section 5.6.2) follows the device's SCHC ACK uplink, and
             * not before the gateway's own duty-cycle wait has passed. */
            uint64_t gap = rx1;
            if (i > 0) {
                gap = ack + rx1;
                if (gap < prev_wait)
                    gap = prev_wait;
                a->peer_tx_us += ack;
                a->peer_tx_starts++;
                a->rx_us += ack;
                a->rx_starts++;
            }
            a->link_us += gap + toa;
        } else {
            /* Uplink fragments: after each frame the device keeps RX1 and
             * RX2 (RECEIVE_DELAY2) before it may send again, and waits its
             * duty cycle. */
            if (i > 0)
                a->link_us += prev_wait > rx2 ? prev_wait : rx2;
            a->link_us += toa;
        }
        prev_wait = duty_wait_us(link, toa);
    }
    if (!down && n > 1) {
        /* ACK-on-Error: the network answers the All-1 with a SCHC ACK in
         * RX1. */
        a->link_us += rx1 + ack;
        a->peer_tx_us += ack;
        a->peer_tx_starts++;
        a->rx_us += ack;
        a->rx_starts++;
    }
    a->wait_us = prev_wait;
    out->frames = n;
    return 0;
}

int edhoc_netacct_datagram(const struct edhoc_netacct_link *link,
                           const struct edhoc_netacct_dgram *d, struct edhoc_netacct_layers *out,
                           size_t *frame_sizes, size_t cap)
{
    if (!link || !d || !out)
        return EDHOC_NETACCT_ERR_ARG;
    memset(out, 0, sizeof *out);
    out->downlink = is_downlink(d);
    out->coap = d->udp_payload;
    out->udp = d->udp_payload + EDHOC_NETACCT_UDP_HEADER;
    if (d->ip_len) {
        if (d->ip_len < out->udp)
            return EDHOC_NETACCT_ERR_ARG;
        out->ip = d->ip_len;
    } else {
        out->ip = out->udp + (d->ipv6 ? EDHOC_NETACCT_IPV6_HEADER : EDHOC_NETACCT_IPV4_HEADER);
    }

    switch (link->type) {
    case EDHOC_NETACCT_LINK_NONE:
        out->frames = 1;
        out->link = out->ip;
        if (frame_sizes && cap > 0)
            frame_sizes[0] = out->link;
        return 0;
    case EDHOC_NETACCT_LINK_MTU: {
        if (link->mtu == 0)
            return EDHOC_NETACCT_ERR_ARG;
        size_t n = (out->ip + link->mtu - 1) / link->mtu;
        out->frames = (unsigned)n;
        out->link = out->ip + n * link->frame_overhead;
        out->fragmented = n > 1;
        size_t left = out->ip;
        for (size_t i = 0; frame_sizes && i < n && i < cap; i++) {
            size_t take = left < link->mtu ? left : link->mtu;
            frame_sizes[i] = take + link->frame_overhead;
            left -= take;
        }
        return 0;
    }
    case EDHOC_NETACCT_LINK_802154: {
        size_t *fs = malloc(EDHOC_NETACCT_MAX_FRAMES * sizeof *fs);
        if (!fs)
            return EDHOC_NETACCT_ERR_ARG;
        int rc = account_802154(link, d, out, fs, EDHOC_NETACCT_MAX_FRAMES);
        if (rc == 0) {
            air_802154(link, fs, out->frames, &out->air);
            for (size_t i = 0; frame_sizes && i < cap && i < out->frames; i++)
                frame_sizes[i] = fs[i];
        }
        free(fs);
        return rc;
    }
    case EDHOC_NETACCT_LINK_BLE: return account_ble(link, d, out, frame_sizes, cap);
    case EDHOC_NETACCT_LINK_LORAWAN: return account_lorawan(link, d, out, frame_sizes, cap);
    }
    return EDHOC_NETACCT_ERR_ARG;
}

static const char *addr_mode_name(enum edhoc_netacct_addr_mode m)
{
    switch (m) {
    case EDHOC_NETACCT_ADDR_LINK_LOCAL_MAC: return "link-local from MAC (elided)";
    case EDHOC_NETACCT_ADDR_CONTEXT_MAC: return "context prefix + IID from MAC (elided)";
    case EDHOC_NETACCT_ADDR_CONTEXT_16: return "context prefix + 16-bit IID (2 B)";
    case EDHOC_NETACCT_ADDR_CONTEXT_64: return "context prefix + 64-bit IID (8 B)";
    case EDHOC_NETACCT_ADDR_INLINE: return "inline (16 B)";
    case EDHOC_NETACCT_ADDR_AUTO:
        return "from the address (link-local elided, global 8 B, multicast 1-16 B)";
    }
    return "?";
}

size_t edhoc_netacct_link_describe(const struct edhoc_netacct_link *link, char *buf, size_t cap)
{
    int n = 0;
    if (!link || !buf)
        return 0;
    switch (link->type) {
    case EDHOC_NETACCT_LINK_NONE:
        n = snprintf(buf, cap, "no link layer: IP packets as counted on the host");
        break;
    case EDHOC_NETACCT_LINK_MTU:
        n = snprintf(buf, cap,
                     "generic link: IP packet cut into pieces of at most %u bytes, %u bytes of "
                     "overhead per frame",
                     link->mtu, link->frame_overhead);
        break;
    case EDHOC_NETACCT_LINK_802154:
        n = snprintf(buf, cap,
                     "IEEE 802.15.4: %d-byte frames, MAC header %u + security %u + FCS %u "
                     "(+ PHY %u counted); 6LoWPAN IPHC (RFC 6282) as IPv6: TF elided, hop "
                     "limit %u%s, source %s, destination %s, NHC UDP with checksum carried and "
                     "ports compressed only in 0xF0xx/0xF0Bx; RFC 4944 fragmentation (FRAG1 4, "
                     "FRAGN 5 bytes, 8-byte offsets)",
                     EDHOC_NETACCT_802154_FRAME_MAX, link->mac_header, link->security, link->fcs,
                     link->phy_header, link->hop_limit,
                     (link->hop_limit == 1 || link->hop_limit == 64 || link->hop_limit == 255)
                         ? " (elided)"
                         : " (inline)",
                     addr_mode_name(link->src_addr), addr_mode_name(link->dst_addr));
        if (n >= 0 && (size_t)n < cap) {
            int m = snprintf(buf + n, cap - (size_t)n,
                             "; air: O-QPSK 32 us/byte + SHR/PHR 6, CSMA-CA mean backoff BE "
                             "%u + CCA, turnaround 192 us, ACK 11 B, %u retr%s",
                             link->csma_be, link->retries, link->retries == 1 ? "y" : "ies");
            n = m < 0 ? m : n + m;
        }
        break;
    case EDHOC_NETACCT_LINK_BLE:
        n = snprintf(buf, cap,
                     "Bluetooth LE %s PHY, data length %u, %s; IPv6 over BLE (RFC 7668): IPHC "
                     "(link-local addresses from the device address elided, hop limit %u, NHC "
                     "UDP with checksum), L2CAP K-frame header 4 + SDU length 2; LL PDU header 2 "
                     "+ payload%s, packet adds preamble %u + access address 4 + CRC 3; each PDU "
                     "answered by an empty PDU after T_IFS 150 us; connection interval %u.%03u ms",
                     link->ble_phy == 2 ? "LE 2M" : "LE 1M", link->ble_data_length,
                     link->ble_encrypted ? "encrypted (MIC 4)" : "unencrypted", link->hop_limit,
                     link->ble_encrypted ? " + MIC 4" : "", link->ble_phy == 2 ? 2u : 1u,
                     link->ble_interval_us / 1000, link->ble_interval_us % 1000);
        break;
    case EDHOC_NETACCT_LINK_LORAWAN: {
        struct edhoc_netacct_lora_dr up, down;
        if (edhoc_netacct_lora_data_rate(link->region, link->data_rate, false, &up) ||
            edhoc_netacct_lora_data_rate(link->region, link->data_rate, true, &down)) {
            n = snprintf(buf, cap, "LoRaWAN: data rate %u not defined in the region",
                         link->data_rate);
            break;
        }
        n = snprintf(buf, cap,
                     "LoRaWAN class A %s: uplink DR%u (SF%u/%u kHz, max FRMPayload %zu), downlink "
                     "RX1 DR%u (SF%u/%u kHz, max %zu); CR 4/5, preamble %u, explicit header, CRC "
                     "on uplink only, low-data-rate optimisation above 16 ms symbols; MAC "
                     "overhead 13 (MHDR 1, FHDR 7, FPort 1 = SCHC RuleID, MIC 4); SCHC (RFC 8724/"
                     "8824/9011) rule set of docs/airtime.md, fragments of the RFC 9011 uplink "
                     "profile (1-byte header, 10-byte tiles, RCS 4) beyond the maximum; duty "
                     "cycle %u.%02u %% per sub-band; RX1 %u ms, RX2 %u ms",
                     link->region == EDHOC_NETACCT_US915 ? "US915" : "EU868", up.dr, up.sf,
                     up.bw_hz / 1000, up.max_payload, down.dr, down.sf, down.bw_hz / 1000,
                     down.max_payload, link->preamble, link->duty_cycle_ppm / 10000,
                     link->duty_cycle_ppm % 10000 / 100, link->rx1_delay_ms, link->rx2_delay_ms);
        break;
    }
    }
    if (n < 0)
        return 0;
    return (size_t)n;
}

void edhoc_netacct_total_clear(struct edhoc_netacct_total *t)
{
    if (t)
        memset(t, 0, sizeof *t);
}

void edhoc_netacct_total_add(struct edhoc_netacct_total *t, const struct edhoc_netacct_layers *l,
                             size_t edhoc_bytes, bool new_message)
{
    if (!t || !l)
        return;
    if (new_message) {
        t->messages++;
        t->edhoc += edhoc_bytes;
    }
    t->datagrams++;
    edhoc_netacct_air_add(l->downlink ? &t->down : &t->up, &l->air);
    t->coap += l->coap;
    t->udp += l->udp;
    t->ip += l->ip;
    t->frames += l->frames;
    t->link += l->link;
}

void edhoc_netacct_total_merge(struct edhoc_netacct_total *t, const struct edhoc_netacct_total *u)
{
    if (!t || !u)
        return;
    t->messages += u->messages;
    t->datagrams += u->datagrams;
    edhoc_netacct_air_add(&t->up, &u->up);
    edhoc_netacct_air_add(&t->down, &u->down);
    t->edhoc += u->edhoc;
    t->coap += u->coap;
    t->udp += u->udp;
    t->ip += u->ip;
    t->frames += u->frames;
    t->link += u->link;
}

void edhoc_netacct_summary_clear(struct edhoc_netacct_summary *s)
{
    if (s)
        memset(s, 0, sizeof *s);
}

void edhoc_netacct_summary_add(struct edhoc_netacct_summary *s, enum edhoc_netacct_kind kind,
                               const struct edhoc_netacct_layers *l, size_t edhoc_bytes,
                               bool new_message)
{
    if (!s || !l)
        return;
    struct edhoc_netacct_total *t = kind == EDHOC_NETACCT_KIND_HANDSHAKE ? &s->handshake
                                    : kind == EDHOC_NETACCT_KIND_OSCORE  ? &s->oscore
                                                                         : &s->other;
    edhoc_netacct_total_add(t, l, edhoc_bytes, new_message);
    edhoc_netacct_total_add(&s->all, l, edhoc_bytes, new_message);
}
