/*
 * Per-layer byte accounting of datagrams: IP, UDP and the link below,
 * with IEEE 802.15.4 + 6LoWPAN (RFC 4944 fragmentation, RFC 6282 IPHC and
 * NHC UDP) modelled exactly enough to count frames and bytes.
 */
#include <stdio.h>
#include <string.h>

#include "edhoc/netacct.h"

/* RFC 4944 Section 5.3: the first fragment header is 4 bytes, the later
 * ones 5 (they add datagram_offset); offsets count 8-byte units of the
 * uncompressed datagram, and datagram_size has 11 bits. */
#define FRAG1_HEADER 4
#define FRAGN_HEADER 5
#define FRAG_UNIT 8
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
    case EDHOC_NETACCT_ADDR_CONTEXT_MAC:
        return 0;
    case EDHOC_NETACCT_ADDR_CONTEXT_16:
        return 2;
    case EDHOC_NETACCT_ADDR_CONTEXT_64:
        return 8;
    case EDHOC_NETACCT_ADDR_INLINE:
        return 16;
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
    if (!link || !d || link->type != EDHOC_NETACCT_LINK_802154)
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

int edhoc_netacct_datagram(const struct edhoc_netacct_link *link,
                           const struct edhoc_netacct_dgram *d,
                           struct edhoc_netacct_layers *out,
                           size_t *frame_sizes, size_t cap)
{
    if (!link || !d || !out)
        return EDHOC_NETACCT_ERR_ARG;
    memset(out, 0, sizeof *out);
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
    case EDHOC_NETACCT_LINK_802154:
        return account_802154(link, d, out, frame_sizes, cap);
    }
    return EDHOC_NETACCT_ERR_ARG;
}

static const char *addr_mode_name(enum edhoc_netacct_addr_mode m)
{
    switch (m) {
    case EDHOC_NETACCT_ADDR_LINK_LOCAL_MAC:
        return "link-local from MAC (elided)";
    case EDHOC_NETACCT_ADDR_CONTEXT_MAC:
        return "context prefix + IID from MAC (elided)";
    case EDHOC_NETACCT_ADDR_CONTEXT_16:
        return "context prefix + 16-bit IID (2 B)";
    case EDHOC_NETACCT_ADDR_CONTEXT_64:
        return "context prefix + 64-bit IID (8 B)";
    case EDHOC_NETACCT_ADDR_INLINE:
        return "inline (16 B)";
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
        break;
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
