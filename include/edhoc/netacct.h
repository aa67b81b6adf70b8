/*
 * edhoc/netacct.h - bytes on the air per layer, for one datagram at a time.
 *
 * A sans-I/O calculator: given a UDP datagram as it crossed a socket (its
 * payload length, the IP version, and the addresses and ports when known)
 * it gives the size of the CoAP message, the UDP datagram, the IP packet
 * and, for a chosen link, the number of link frames and the bytes they
 * occupy. The same numbers feed the live reports and the capture analysis,
 * so a message is never re-estimated from the size the code expects.
 *
 * Links:
 *   - EDHOC_NETACCT_LINK_NONE: stop at the IP layer (one "frame" = the IP
 *     packet itself).
 *   - EDHOC_NETACCT_LINK_MTU: a generic link of MTU N: the IP packet is cut
 *     into ceil(ip / N) pieces of at most N bytes, each carried with a
 *     fixed per-frame overhead (0 unless set).
 *   - EDHOC_NETACCT_LINK_802154: IEEE 802.15.4 with 6LoWPAN. The datagram
 *     crosses the link as IPv6 whatever version it used on the capture
 *     host (6LoWPAN carries IPv6 only), compressed with IPHC (RFC 6282)
 *     and NHC UDP, and fragmented per RFC 4944 when it does not fit one
 *     frame. See struct edhoc_netacct_link for every assumption.
 *   - EDHOC_NETACCT_LINK_BLE: Bluetooth LE, IPv6 over BLE (RFC 7668):
 *     IPHC as on 802.15.4, one L2CAP K-frame per IPv6 packet, cut into
 *     link-layer data PDUs of at most the data length.
 *   - EDHOC_NETACCT_LINK_LORAWAN: LoRaWAN class A with SCHC (RFC 8724,
 *     RFC 8824, RFC 9011): IPv6, UDP and the CoAP header compressed by the
 *     rule set of edhoc_netacct_schc_residue(), SCHC fragmentation when the
 *     compressed packet exceeds the data rate's maximum payload.
 *
 * Every link also has a time and energy model (edhoc_netacct_air): the
 * time the frames take on the air, acknowledgements, turnaround, backoff,
 * the duty-cycle wait, and from a radio profile the energy each side
 * spends. docs/airtime.md derives every figure.
 *
 * Errors are negative EDHOC_NETACCT_ERR_* codes.
 */
#ifndef EDHOC_NETACCT_H
#define EDHOC_NETACCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EDHOC_NETACCT_ERR_ARG (-7001) /* NULL pointer or a parameter out of range */
#define EDHOC_NETACCT_ERR_TOO_LARGE                                                                \
    (-7002) /* the datagram cannot cross this link (e.g. an
                                               IPv6 packet over 2047 bytes for RFC 4944) */

/* aMaxPHYPacketSize of IEEE 802.15.4 (2006): the largest PSDU (MAC frame). */
#define EDHOC_NETACCT_802154_FRAME_MAX 127
/* Upper bound on the frames one datagram can need here: RFC 4944 limits
 * datagram_size to 2047 bytes and every fragment carries at least 8. */
#define EDHOC_NETACCT_MAX_FRAMES 256

#define EDHOC_NETACCT_UDP_HEADER  8
#define EDHOC_NETACCT_IPV4_HEADER 20
#define EDHOC_NETACCT_IPV6_HEADER 40

enum edhoc_netacct_link_type {
    EDHOC_NETACCT_LINK_NONE = 0,
    EDHOC_NETACCT_LINK_MTU,
    EDHOC_NETACCT_LINK_802154,
    EDHOC_NETACCT_LINK_BLE,
    EDHOC_NETACCT_LINK_LORAWAN,
};

/* LoRaWAN regional parameters (LoRa Alliance RP002-1.0.x). */
enum edhoc_netacct_region {
    EDHOC_NETACCT_EU868 = 0, /* EU863-870: DR0-DR5 = SF12..SF7 at 125 kHz */
    EDHOC_NETACCT_US915,     /* US902-928: uplink DR0-DR3 = SF10..SF7 at 125 kHz, DR4 SF8
                                at 500 kHz; downlink (RX1) DR10..DR13 at 500 kHz */
};

/* Which way a datagram crosses the link. Initiator and responder are the
 * CoAP client and server (RFC 9528 Appendix A.2 forward flow); on LoRaWAN
 * the client is the end device (uplink), the server is behind the network
 * server (downlink, sent in the device's RX1 window). */
enum edhoc_netacct_dir {
    EDHOC_NETACCT_DIR_AUTO = 0, /* from the ports: source port 5683/5684 (a CoAP server) is
                                   downlink, anything else uplink */
    EDHOC_NETACCT_DIR_UP,       /* client (end device) -> server */
    EDHOC_NETACCT_DIR_DOWN,     /* server -> client */
};

/* How IPHC carries one IPv6 address (RFC 6282 Section 3.1.1, SAC/SAM and
 * DAC/DAM for unicast). */
enum edhoc_netacct_addr_mode {
    /* fe80::/64 with the IID derived from the 802.15.4 MAC address
     * (SAC=0, SAM=11): 0 bytes inline. The usual case on one link. */
    EDHOC_NETACCT_ADDR_LINK_LOCAL_MAC = 0,
    /* Prefix from a shared context (SAC=1), IID derived from the MAC
     * address (SAM=11): 0 bytes inline. */
    EDHOC_NETACCT_ADDR_CONTEXT_MAC,
    /* Prefix from a shared context (SAC=1), 16-bit short IID
     * 0000:00ff:fe00:XXXX (SAM=10): 2 bytes inline. */
    EDHOC_NETACCT_ADDR_CONTEXT_16,
    /* Prefix from a shared context (SAC=1), full 64-bit IID inline
     * (SAM=01): 8 bytes. A global address of a node behind a border router
     * whose IID is not derived from the MAC. */
    EDHOC_NETACCT_ADDR_CONTEXT_64,
    /* No context (SAC=0, SAM=00): the full 16 bytes inline. */
    EDHOC_NETACCT_ADDR_INLINE,
    /* From the datagram's own IPv6 address when it is known
     * (edhoc_netacct_dgram.addrs_known), else as LINK_LOCAL_MAC:
     *   fe80::/64 (link-local): elided (IID taken to be the one derived
     *     from the MAC address, short or extended);
     *   other unicast (global, ULA): context prefix + 16-bit IID (2 bytes)
     *     when the IID has the form 0000:00ff:fe00:XXXX, else context
     *     prefix + 64-bit IID (8 bytes);
     *   multicast (destination only, M=1): ff02::00XX 1 byte,
     *     ffXX::00XX:XXXX 4 bytes, ffXX::00XX:XXXX:XXXX 6 bytes, else 16;
     *   ::1, ::, IPv4-mapped and IPv4 datagrams carry no address that
     *     means anything on a radio link: as LINK_LOCAL_MAC. */
    EDHOC_NETACCT_ADDR_AUTO,
};

struct edhoc_netacct_link {
    enum edhoc_netacct_link_type type;
    /* LINK_MTU: the largest piece of the IP packet one frame carries
     * (>= 1), and the bytes each frame adds around it. */
    unsigned mtu;
    unsigned frame_overhead;
    /* LINK_802154 (edhoc_netacct_link_802154_default() fills these):
     * mac_header: MAC header bytes per frame. Default 23: frame control 2,
     *   sequence number 1, destination PAN 2, destination extended address
     *   8, source PAN 2, source extended address 8 (no PAN ID compression;
     *   the maximum RFC 4944 Section 1 counts). Short addresses with PAN ID
     *   compression would be 9.
     * fcs: frame check sequence, 2.
     * security: auxiliary security header + MIC per frame, 0 (no link
     *   security; RFC 4944 counts 21 for AES-CCM-128).
     * phy_header: bytes before the PSDU counted in "bytes" (preamble 4,
     *   SFD 1, PHR 1 = 6 on the 2.4 GHz O-QPSK PHY); default 0, so bytes
     *   are MAC frame (PSDU) bytes.
     * src_addr, dst_addr: how IPHC carries each address (default
     *   LINK_LOCAL_MAC, fully elided).
     * hop_limit: 1, 64 and 255 are compressed (HLIM 01/10/11), any other
     *   value travels inline (1 byte). Default 64.
     * Traffic class and flow label are 0 and elided (TF=11); the context
     *   identifier is 0 (CID=0, no extra byte); UDP uses NHC (RFC 6282
     *   Section 4.3) with the checksum carried (C=0, 2 bytes) and ports
     *   compressed when they allow: both in 0xF0B0..0xF0BF -> 1 byte, one
     *   in 0xF000..0xF0FF -> 3 bytes, else 4 (CoAP's 5683 is not
     *   compressible). */
    unsigned mac_header;
    unsigned fcs;
    unsigned security;
    unsigned phy_header;
    enum edhoc_netacct_addr_mode src_addr, dst_addr;
    unsigned hop_limit;
    /* LINK_802154 air model (2.4 GHz O-QPSK, 250 kbit/s):
     * csma_be: backoff exponent of the mean unslotted CSMA-CA backoff
     *   (default 3 = macMinBE): (2^BE - 1) / 2 unit backoff periods.
     * retries: transmissions after the first, each waiting
     *   macAckWaitDuration for an acknowledgement that does not come
     *   (default 0: every frame acknowledged at the first attempt). */
    unsigned csma_be;
    unsigned retries;
    /* LINK_BLE (edhoc_netacct_link_ble_default() fills these; IPHC fields
     * above apply, addresses elided as derived from the device address):
     * ble_phy: 1 (LE 1M) or 2 (LE 2M), Mbit/s.
     * ble_data_length: largest LL payload, 27..251 (default 27).
     * ble_encrypted: a 4-byte MIC in every non-empty PDU (default true).
     * ble_interval_us: connection interval, 7500..4000000 (default 7500). */
    unsigned ble_phy;
    unsigned ble_data_length;
    bool ble_encrypted;
    unsigned ble_interval_us;
    /* LINK_LORAWAN (edhoc_netacct_link_lorawan_default() fills these):
     * region, data_rate: the uplink data rate (EU868 0..5, US915 0..4);
     *   the downlink uses RX1 with RX1DROffset 0.
     * duty_cycle_ppm: the transmitter's duty cycle in its sub-band, parts
     *   per million (default 10000 = 1 %; 1000000 = no limit).
     * rx1_delay_ms, rx2_delay_ms: RECEIVE_DELAY1/2 (default 1000, 2000).
     * preamble: programmed preamble symbols (default 8). */
    enum edhoc_netacct_region region;
    unsigned data_rate;
    unsigned duty_cycle_ppm;
    unsigned rx1_delay_ms, rx2_delay_ms;
    unsigned preamble;
};

/* One datagram as it crossed a socket. */
struct edhoc_netacct_dgram {
    size_t udp_payload; /* CoAP message bytes */
    bool ipv6;          /* false: IPv4 */
    /* The IP packet's real size when known (IPv4 options or IPv6 extension
     * headers included); 0: 20 / 40 bytes of header plus UDP. */
    size_t ip_len;
    /* Ports when known (0 = unknown: counted as not compressible). */
    uint16_t src_port, dst_port;
    /* IPv6 addresses when known (for EDHOC_NETACCT_ADDR_AUTO). */
    bool addrs_known;
    uint8_t src_addr[16], dst_addr[16];
    /* The CoAP message itself when known (udp_payload bytes): SCHC on
     * LoRaWAN compresses its header by the rule set; NULL: the CoAP
     * message is counted whole (IPv6 and UDP compressed away only). */
    const uint8_t *payload;
    enum edhoc_netacct_dir dir;
};

/* Time and energy of one datagram (or a sum of them) on a link's air,
 * from the point of view of its sender and its receiver. Microseconds. */
struct edhoc_netacct_air {
    uint64_t tx_us;      /* sender transmitting the data frames (retries included) */
    uint64_t rx_us;      /* sender receiving acknowledgements / listening for them */
    uint64_t peer_tx_us; /* receiver transmitting acknowledgements (802.15.4 ACK, BLE
                            empty PDUs, LoRaWAN SCHC ACK uplinks for a fragmented
                            downlink) */
    uint64_t peer_rx_us; /* receiver receiving the data frames */
    unsigned tx_starts;  /* sender radio starts to transmit / receive (ramp-ups) */
    unsigned rx_starts;
    unsigned peer_tx_starts, peer_rx_starts;
    uint64_t link_us;         /* from the start of the first frame to the end of the last
                            frame's acknowledgement: air, backoff, turnaround,
                            inter-frame spaces, waits between fragments (and, on a
                            LoRaWAN downlink, RECEIVE_DELAY1 before it) */
    uint64_t wait_us;         /* duty-cycle wait after the last frame before the sender may
                            transmit again in that sub-band */
    unsigned fragments;       /* LoRaWAN: SCHC fragments (0: not fragmented) */
    size_t schc_residue_bits; /* LoRaWAN: compression residue of the headers */
    bool schc_known;          /* the residue comes from the CoAP message's bytes */
};

struct edhoc_netacct_layers {
    size_t coap;                  /* UDP payload */
    size_t udp;                   /* coap + 8 */
    size_t ip;                    /* the IP packet */
    unsigned frames;              /* link frames (1 for LINK_NONE) */
    size_t link;                  /* bytes of those frames (ip for LINK_NONE) */
    size_t lowpan_header;         /* 802.15.4, BLE: IPHC + NHC UDP bytes (0 otherwise) */
    bool fragmented;              /* 802.15.4: RFC 4944 fragmentation used; LoRaWAN: SCHC
                             fragmentation used */
    bool downlink;                /* the direction it was counted in */
    struct edhoc_netacct_air air; /* zero for LINK_NONE and LINK_MTU */
};

/* IEEE 802.15.4 with the defaults documented at struct edhoc_netacct_link. */
struct edhoc_netacct_link edhoc_netacct_link_802154_default(void);
/* A generic link carrying at most mtu bytes of IP per frame. */
struct edhoc_netacct_link edhoc_netacct_link_mtu(unsigned mtu, unsigned frame_overhead);
/* Bluetooth LE, LE 1M, data length 27, encrypted, 7.5 ms interval. */
struct edhoc_netacct_link edhoc_netacct_link_ble_default(void);
/* LoRaWAN EU868 DR0 (SF12), 1 % duty cycle, RX1 1 s, RX2 2 s, preamble 8. */
struct edhoc_netacct_link edhoc_netacct_link_lorawan_default(void);

/* Bytes IPHC + NHC UDP take for this datagram on an 802.15.4 link.
 * Returns the count, or EDHOC_NETACCT_ERR_ARG. */
long edhoc_netacct_lowpan_header(const struct edhoc_netacct_link *link,
                                 const struct edhoc_netacct_dgram *d);

/* Account one datagram on a link. When frame_sizes is not NULL the size of
 * each frame (link bytes) is written there, up to cap entries (out->frames
 * is always the full count). Returns 0, EDHOC_NETACCT_ERR_ARG (NULL link/d/
 * out, an MTU of 0, 802.15.4 headers leaving no room for 8 bytes of
 * payload) or EDHOC_NETACCT_ERR_TOO_LARGE (RFC 4944 datagram_size > 2047). */
int edhoc_netacct_datagram(const struct edhoc_netacct_link *link,
                           const struct edhoc_netacct_dgram *d, struct edhoc_netacct_layers *out,
                           size_t *frame_sizes, size_t cap);

/* A one-line description of the link and its assumptions, for the report
 * ("IEEE 802.15.4: 127-byte frames, MAC header 23 + FCS 2, ..."). Returns
 * the length written (snprintf rules). */
size_t edhoc_netacct_link_describe(const struct edhoc_netacct_link *link, char *buf, size_t cap);

/* ---- Time on air (src/netacct/airtime.c) ---- */

/* IEEE 802.15.4-2015 O-QPSK 2.4 GHz: one PPDU of psdu bytes (SHR 5 + PHR 1
 * + PSDU, 32 us a byte). */
uint64_t edhoc_netacct_802154_frame_us(size_t psdu);
/* Bluetooth LE: one LL packet with payload bytes (0: an empty PDU) on
 * phy 1 or 2 (LE 1M/LE 2M): preamble 1/2 + access address 4 + header 2 +
 * payload + MIC 4 (encrypted, payload > 0) + CRC 3. 0 for a bad phy. */
uint64_t edhoc_netacct_ble_packet_us(unsigned phy, size_t payload, bool encrypted);
/* Semtech LoRa time on air (SX1276 datasheet 4.1.1.7, AN1200.13) of a PHY
 * payload of pl bytes: spreading factor sf 6..12, bandwidth bw_hz
 * (125000, 250000, 500000), coding rate 4/(4 + cr) with cr 1..4, preamble
 * symbols, explicit header when !implicit, crc, low-data-rate optimisation
 * when ldro. 0 for out-of-range parameters. */
uint64_t edhoc_netacct_lora_toa_us(size_t pl, unsigned sf, unsigned bw_hz, unsigned cr,
                                   unsigned preamble, bool implicit, bool crc, bool ldro);

/* One LoRaWAN data rate. */
struct edhoc_netacct_lora_dr {
    unsigned dr; /* its number in the region (downlink: the RX1 one) */
    unsigned sf, bw_hz;
    size_t max_payload; /* N: largest FRMPayload without FOpts (RP002, repeater-compatible) */
    bool ldro;          /* symbol time above 16 ms */
};
/* The uplink (downlink false) data rate of the link, or the RX1 downlink
 * one. Returns 0 or EDHOC_NETACCT_ERR_ARG (data rate not defined). */
int edhoc_netacct_lora_data_rate(enum edhoc_netacct_region region, unsigned data_rate,
                                 bool downlink, struct edhoc_netacct_lora_dr *out);
/* The LoRaWAN MAC overhead counted around every FRMPayload: MHDR 1 +
 * FHDR 7 (DevAddr 4, FCtrl 1, FCnt 2, no FOpts) + FPort 1 + MIC 4. */
#define EDHOC_NETACCT_LORAWAN_MAC_OVERHEAD 13

/* SCHC (RFC 8724) compression of a CoAP message's IPv6 + UDP + CoAP
 * header by this library's rule set (docs/airtime.md): returns the
 * residue in bits (RuleID excluded: RFC 9011 carries it in FPort) and
 * writes the rule chosen to *rule (0: the no-compression rule, the whole
 * IPv6 + UDP + CoAP header as residue) and the payload bytes after the
 * payload marker to *payload_len. EDHOC_NETACCT_ERR_ARG for a message
 * that is not CoAP. */
long edhoc_netacct_schc_residue(const uint8_t *coap, size_t len, unsigned *rule,
                                size_t *payload_len);
/* The bytes of the SCHC packet after the RuleID (residue padded to a byte,
 * RFC 8724 Section 7.2, + payload), i.e. the FRMPayload of an
 * unfragmented message. coap NULL: len bytes of CoAP carried whole (only
 * IPv6 and UDP compressed). */
long edhoc_netacct_schc_packet(const uint8_t *coap, size_t len);
/* SCHC fragmentation (RFC 9011 Section 5.6.1 profile, ACK-on-Error:
 * 1-byte header, 10-byte tiles, 4-byte RCS in the All-1) of a packet of
 * len bytes into FRMPayloads of at most max_payload: the fragment count
 * and, when sizes is not NULL, each FRMPayload size (up to cap). 0 for
 * max_payload < 11. */
unsigned edhoc_netacct_schc_fragments(size_t len, size_t max_payload, size_t *sizes, size_t cap);

/* ---- Energy (src/netacct/airtime.c) ---- */

struct edhoc_netacct_radio {
    char name[40];
    double volts;
    double tx_ma, rx_ma;                   /* current transmitting / receiving */
    unsigned tx_startup_us, rx_startup_us; /* ramp-up before each transmission/reception,
                                              charged at the tx/rx current */
    char source[200];                      /* where the figures come from */
};
/* A built-in profile by name ("cc2538", "nrf52840", "sx1276"); 0 or
 * EDHOC_NETACCT_ERR_ARG. */
int edhoc_netacct_radio_builtin(const char *name, struct edhoc_netacct_radio *out);
/* The built-in profile for a link type (802.15.4 cc2538, BLE nrf52840,
 * LoRaWAN sx1276); NONE and MTU get a zero profile. */
struct edhoc_netacct_radio edhoc_netacct_radio_for(enum edhoc_netacct_link_type type);
/* A profile from text: lines "key = value" (name, volts, tx_ma, rx_ma,
 * tx_startup_us, rx_startup_us, source), '#' comments. Returns 0, or
 * EDHOC_NETACCT_ERR_ARG with why (line number and reason). */
int edhoc_netacct_radio_parse(const char *text, size_t len, struct edhoc_netacct_radio *out,
                              char *why, size_t why_cap);

struct edhoc_netacct_energy {
    double tx_j, rx_j; /* joules spent transmitting / receiving */
};
/* The energy of the sender (sender true) or of the receiver of air. */
struct edhoc_netacct_energy edhoc_netacct_energy_of(const struct edhoc_netacct_radio *r,
                                                    const struct edhoc_netacct_air *air,
                                                    bool sender);

/* a += b. */
void edhoc_netacct_air_add(struct edhoc_netacct_air *a, const struct edhoc_netacct_air *b);

/* One message of an exchange, in order. */
struct edhoc_netacct_step {
    const struct edhoc_netacct_air *air;
    bool from_initiator;
    uint64_t host_us; /* processing time before it is sent (0: none measured) */
};
/* End-to-end time of messages sent one after another on the link: each
 * starts when the previous one is acknowledged (plus its host time), not
 * before its sender's duty-cycle wait has passed, and on BLE at the next
 * connection event (one message per interval and direction). */
uint64_t edhoc_netacct_air_sequence(const struct edhoc_netacct_link *link,
                                    const struct edhoc_netacct_step *steps, size_t n);

/* ---- Totals ---- */

struct edhoc_netacct_total {
    unsigned messages;  /* logical messages (e.g. message_2) */
    unsigned datagrams; /* datagrams, retransmissions and blocks included */
    size_t edhoc;       /* EDHOC message bytes (0 for non-EDHOC messages) */
    size_t coap, udp, ip;
    unsigned frames;
    size_t link;
    /* Air by direction (uplink: client -> server), for the energy per
     * role (the initiator is the client). */
    struct edhoc_netacct_air up, down;
};

/* What a total is for: a handshake's messages, OSCORE requests/responses,
 * and everything. */
enum edhoc_netacct_kind {
    EDHOC_NETACCT_KIND_HANDSHAKE = 0,
    EDHOC_NETACCT_KIND_OSCORE,
    EDHOC_NETACCT_KIND_OTHER, /* ACKs, plain CoAP */
};

struct edhoc_netacct_summary {
    struct edhoc_netacct_total handshake, oscore, other, all;
};

void edhoc_netacct_total_clear(struct edhoc_netacct_total *t);
/* Add one datagram's layers; edhoc_bytes is the EDHOC message it carries
 * (0 for none), new_message false for a retransmission or a later block
 * of a message already counted. */
void edhoc_netacct_total_add(struct edhoc_netacct_total *t, const struct edhoc_netacct_layers *l,
                             size_t edhoc_bytes, bool new_message);
/* t += u. */
void edhoc_netacct_total_merge(struct edhoc_netacct_total *t, const struct edhoc_netacct_total *u);

void edhoc_netacct_summary_clear(struct edhoc_netacct_summary *s);
/* Charge a datagram to its kind's total and to "all". */
void edhoc_netacct_summary_add(struct edhoc_netacct_summary *s, enum edhoc_netacct_kind kind,
                               const struct edhoc_netacct_layers *l, size_t edhoc_bytes,
                               bool new_message);

#ifdef __cplusplus
}
#endif
#endif
