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

#define EDHOC_NETACCT_ERR_ARG (-7001)       /* NULL pointer or a parameter out of range */
#define EDHOC_NETACCT_ERR_TOO_LARGE (-7002) /* the datagram cannot cross this link (e.g. an
                                               IPv6 packet over 2047 bytes for RFC 4944) */

/* aMaxPHYPacketSize of IEEE 802.15.4 (2006): the largest PSDU (MAC frame). */
#define EDHOC_NETACCT_802154_FRAME_MAX 127
/* Upper bound on the frames one datagram can need here: RFC 4944 limits
 * datagram_size to 2047 bytes and every fragment carries at least 8. */
#define EDHOC_NETACCT_MAX_FRAMES 256

#define EDHOC_NETACCT_UDP_HEADER 8
#define EDHOC_NETACCT_IPV4_HEADER 20
#define EDHOC_NETACCT_IPV6_HEADER 40

enum edhoc_netacct_link_type {
    EDHOC_NETACCT_LINK_NONE = 0,
    EDHOC_NETACCT_LINK_MTU,
    EDHOC_NETACCT_LINK_802154,
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
};

/* One datagram as it crossed a socket. */
struct edhoc_netacct_dgram {
    size_t udp_payload;  /* CoAP message bytes */
    bool ipv6;           /* false: IPv4 */
    /* The IP packet's real size when known (IPv4 options or IPv6 extension
     * headers included); 0: 20 / 40 bytes of header plus UDP. */
    size_t ip_len;
    /* Ports when known (0 = unknown: counted as not compressible). */
    uint16_t src_port, dst_port;
    /* IPv6 addresses when known (for EDHOC_NETACCT_ADDR_AUTO). */
    bool addrs_known;
    uint8_t src_addr[16], dst_addr[16];
};

struct edhoc_netacct_layers {
    size_t coap;          /* UDP payload */
    size_t udp;           /* coap + 8 */
    size_t ip;            /* the IP packet */
    unsigned frames;      /* link frames (1 for LINK_NONE) */
    size_t link;          /* bytes of those frames (ip for LINK_NONE) */
    size_t lowpan_header; /* 802.15.4: IPHC + NHC UDP bytes (0 otherwise) */
    bool fragmented;      /* 802.15.4: RFC 4944 fragmentation used */
};

/* IEEE 802.15.4 with the defaults documented at struct edhoc_netacct_link. */
struct edhoc_netacct_link edhoc_netacct_link_802154_default(void);
/* A generic link carrying at most mtu bytes of IP per frame. */
struct edhoc_netacct_link edhoc_netacct_link_mtu(unsigned mtu, unsigned frame_overhead);

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
                           const struct edhoc_netacct_dgram *d,
                           struct edhoc_netacct_layers *out,
                           size_t *frame_sizes, size_t cap);

/* A one-line description of the link and its assumptions, for the report
 * ("IEEE 802.15.4: 127-byte frames, MAC header 23 + FCS 2, ..."). Returns
 * the length written (snprintf rules). */
size_t edhoc_netacct_link_describe(const struct edhoc_netacct_link *link, char *buf, size_t cap);

/* ---- Totals ---- */

struct edhoc_netacct_total {
    unsigned messages;   /* logical messages (e.g. message_2) */
    unsigned datagrams;  /* datagrams, retransmissions and blocks included */
    size_t edhoc;        /* EDHOC message bytes (0 for non-EDHOC messages) */
    size_t coap, udp, ip;
    unsigned frames;
    size_t link;
};

/* What a total is for: a handshake's messages, OSCORE requests/responses,
 * and everything. */
enum edhoc_netacct_kind {
    EDHOC_NETACCT_KIND_HANDSHAKE = 0,
    EDHOC_NETACCT_KIND_OSCORE,
    EDHOC_NETACCT_KIND_OTHER,   /* ACKs, plain CoAP */
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
