/*
 * Reading captures: libpcap for the file formats (pcap, pcapng), and a
 * bounds-checked decoder of link, IP and UDP headers for each frame.
 */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_internal.h"
#include "edhoc/capture.h"

#define IPV6_NH_HOP_BY_HOP   0
#define IPV6_NH_ROUTING      43
#define IPV6_NH_FRAGMENT     44
#define IPV6_NH_DEST_OPTS    60
#define MAX_IPV6_EXT_HEADERS 8
#define MAX_VLAN_TAGS        2

/* The address families BSD-style loopback headers use for IPv4 / IPv6
 * across systems (Linux, BSDs, Darwin). */
static int loop_af_version(uint32_t af)
{
    switch (af) {
    case 2: return 4;
    case 10:
    case 24:
    case 28:
    case 30: return 6;
    }
    return 0;
}

static int ethertype_version(uint16_t t)
{
    return t == ETHERTYPE_IPV4 ? 4 : t == ETHERTYPE_IPV6 ? 6 : 0;
}

/* Locate the IP packet in the frame; *version 0 when unknown from the
 * link header (raw IP: taken from the first nibble). */
static int link_strip(int dlt, const uint8_t *f, size_t caplen, size_t *off, int *version)
{
    *version = 0;
    switch (dlt) {
    case EDHOC_CAPTURE_DLT_RAW:
    case EDHOC_CAPTURE_DLT_RAW_ALT: *off = 0; return 0;
    case EDHOC_CAPTURE_DLT_IPV4:
    case EDHOC_CAPTURE_DLT_IPV6:
        *off = 0;
        *version = dlt == EDHOC_CAPTURE_DLT_IPV4 ? 4 : 6;
        return 0;
    case EDHOC_CAPTURE_DLT_EN10MB: {
        if (caplen < 14)
            return EDHOC_CAPTURE_ERR_TRUNCATED;
        size_t o = 12;
        uint16_t t = capture_get16(f + o);
        for (int i = 0; i < MAX_VLAN_TAGS && (t == 0x8100 || t == 0x88a8); i++) {
            o += 4;
            if (caplen < o + 2)
                return EDHOC_CAPTURE_ERR_TRUNCATED;
            t = capture_get16(f + o);
        }
        *off = o + 2;
        *version = ethertype_version(t);
        return *version ? 0 : EDHOC_CAPTURE_ERR_NOT_IP;
    }
    case EDHOC_CAPTURE_DLT_LINUX_SLL:
        if (caplen < 16)
            return EDHOC_CAPTURE_ERR_TRUNCATED;
        *off = 16;
        *version = ethertype_version(capture_get16(f + 14));
        return *version ? 0 : EDHOC_CAPTURE_ERR_NOT_IP;
    case EDHOC_CAPTURE_DLT_LINUX_SLL2:
        if (caplen < 20)
            return EDHOC_CAPTURE_ERR_TRUNCATED;
        *off = 20;
        *version = ethertype_version(capture_get16(f));
        return *version ? 0 : EDHOC_CAPTURE_ERR_NOT_IP;
    case EDHOC_CAPTURE_DLT_NULL:
    case EDHOC_CAPTURE_DLT_LOOP: {
        if (caplen < 4)
            return EDHOC_CAPTURE_ERR_TRUNCATED;
        uint32_t be = capture_get32(f);
        uint32_t le = (uint32_t)f[3] << 24 | (uint32_t)f[2] << 16 | (uint32_t)f[1] << 8 | f[0];
        /* DLT_NULL is in the capturing host's byte order, which may not
         * be ours: accept either. */
        *version = loop_af_version(be);
        if (!*version && dlt == EDHOC_CAPTURE_DLT_NULL)
            *version = loop_af_version(le);
        *off = 4;
        return *version ? 0 : EDHOC_CAPTURE_ERR_NOT_IP;
    }
    }
    return EDHOC_CAPTURE_ERR_LINK;
}

/* Distinguish a frame cut by the snap length from one whose headers lie. */
static int short_frame(size_t caplen, size_t wire_len)
{
    return caplen < wire_len ? EDHOC_CAPTURE_ERR_TRUNCATED : EDHOC_CAPTURE_ERR_MALFORMED;
}

int edhoc_capture_packet_parse(int dlt, const uint8_t *f, size_t caplen, size_t wire_len,
                               struct edhoc_capture_packet *p)
{
    if (!f || !p || caplen > wire_len)
        return EDHOC_CAPTURE_ERR_ARG;
    memset(p, 0, sizeof *p);
    p->frame_len = wire_len;
    size_t off;
    int version;
    int rc = link_strip(dlt, f, caplen, &off, &version);
    if (rc)
        return rc;
    if (caplen <= off)
        return short_frame(caplen, wire_len);
    const uint8_t *ip = f + off;
    size_t avail = caplen - off;     /* bytes present */
    size_t on_wire = wire_len - off; /* bytes the packet had */
    int nibble = ip[0] >> 4;
    if (version == 0)
        version = nibble;
    if (version != 4 && version != 6)
        return EDHOC_CAPTURE_ERR_NOT_IP;
    if (nibble != version)
        return EDHOC_CAPTURE_ERR_MALFORMED;
    p->ip_version = version;

    size_t udp_off, ip_len;
    if (version == 4) {
        if (avail < 20)
            return short_frame(caplen, wire_len);
        size_t ihl = (size_t)(ip[0] & 0x0f) * 4;
        ip_len = capture_get16(ip + 2);
        if (ihl < 20 || ip_len < ihl)
            return EDHOC_CAPTURE_ERR_MALFORMED;
        if (ip_len > on_wire)
            return EDHOC_CAPTURE_ERR_MALFORMED;
        if (avail < ihl)
            return EDHOC_CAPTURE_ERR_TRUNCATED;
        uint16_t frag = capture_get16(ip + 6);
        memcpy(p->src, ip + 12, 4);
        memcpy(p->dst, ip + 16, 4);
        if ((frag & 0x2000) || (frag & 0x1fff))
            return EDHOC_CAPTURE_ERR_FRAGMENT;
        if (ip[9] != IPPROTO_UDP_NUM)
            return EDHOC_CAPTURE_ERR_NOT_UDP;
        udp_off = ihl;
    } else {
        if (avail < 40)
            return short_frame(caplen, wire_len);
        size_t plen = capture_get16(ip + 4);
        if (plen == 0) /* a jumbogram: not on any link carrying CoAP */
            return EDHOC_CAPTURE_ERR_MALFORMED;
        ip_len = 40 + plen;
        if (ip_len > on_wire)
            return EDHOC_CAPTURE_ERR_MALFORMED;
        memcpy(p->src, ip + 8, 16);
        memcpy(p->dst, ip + 24, 16);
        uint8_t nh = ip[6];
        size_t o = 40;
        for (int i = 0;; i++) {
            if (nh == IPPROTO_UDP_NUM)
                break;
            if (nh == IPV6_NH_FRAGMENT)
                return EDHOC_CAPTURE_ERR_FRAGMENT;
            if ((nh != IPV6_NH_HOP_BY_HOP && nh != IPV6_NH_ROUTING && nh != IPV6_NH_DEST_OPTS) ||
                i == MAX_IPV6_EXT_HEADERS)
                return EDHOC_CAPTURE_ERR_NOT_UDP;
            if (o + 2 > ip_len)
                return EDHOC_CAPTURE_ERR_MALFORMED;
            if (o + 2 > avail)
                return EDHOC_CAPTURE_ERR_TRUNCATED;
            size_t ext = ((size_t)ip[o + 1] + 1) * 8;
            nh = ip[o];
            o += ext;
        }
        udp_off = o;
    }
    p->ip_len = ip_len;
    if (udp_off + 8 > ip_len)
        return EDHOC_CAPTURE_ERR_MALFORMED;
    if (udp_off + 8 > avail)
        return EDHOC_CAPTURE_ERR_TRUNCATED;
    const uint8_t *udp = ip + udp_off;
    p->src_port = capture_get16(udp);
    p->dst_port = capture_get16(udp + 2);
    size_t udp_len = capture_get16(udp + 4);
    if (udp_len < 8 || udp_off + udp_len > ip_len)
        return EDHOC_CAPTURE_ERR_MALFORMED;
    p->udp_len = udp_len;
    if (udp_off + udp_len > avail)
        return EDHOC_CAPTURE_ERR_TRUNCATED;
    p->payload = udp + 8;
    p->payload_len = udp_len - 8;
    return 0;
}

struct edhoc_capture_reader {
    pcap_t *p;
    int dlt;
    char err[PCAP_ERRBUF_SIZE + 64];
};

struct edhoc_capture_reader *edhoc_capture_reader_open(const char *path, char *err, size_t err_cap)
{
    char perr[PCAP_ERRBUF_SIZE];
    perr[0] = '\0';
    if (!path) {
        if (err && err_cap)
            snprintf(err, err_cap, "no file name");
        return NULL;
    }
    struct edhoc_capture_reader *r = calloc(1, sizeof *r);
    if (!r) {
        if (err && err_cap)
            snprintf(err, err_cap, "out of memory");
        return NULL;
    }
    r->p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, perr);
    if (!r->p) {
        if (err && err_cap)
            snprintf(err, err_cap, "%s", perr[0] ? perr : "not a capture file");
        free(r);
        return NULL;
    }
    r->dlt = pcap_datalink(r->p);
    return r;
}

int edhoc_capture_reader_dlt(const struct edhoc_capture_reader *r)
{
    return r ? r->dlt : -1;
}

int edhoc_capture_reader_next(struct edhoc_capture_reader *r, const uint8_t **frame, size_t *caplen,
                              size_t *wire_len, struct timespec *ts)
{
    if (!r || !frame || !caplen || !wire_len)
        return EDHOC_CAPTURE_ERR_ARG;
    struct pcap_pkthdr *h;
    const u_char *data;
    int rc = pcap_next_ex(r->p, &h, &data);
    if (rc == 1) {
        *frame = data;
        *caplen = h->caplen;
        /* A record claiming fewer bytes on the wire than it holds is
         * corrupt; keep lengths consistent for the parser. */
        *wire_len = h->len < h->caplen ? h->caplen : h->len;
        if (ts) {
            ts->tv_sec = h->ts.tv_sec;
            ts->tv_nsec = h->ts.tv_usec;
        }
        return 1;
    }
    if (rc == PCAP_ERROR_BREAK)
        return 0;
    snprintf(r->err, sizeof r->err, "%s", pcap_geterr(r->p));
    return EDHOC_CAPTURE_ERR_READ;
}

const char *edhoc_capture_reader_error(const struct edhoc_capture_reader *r)
{
    return r && r->err[0] ? r->err : "";
}

void edhoc_capture_reader_close(struct edhoc_capture_reader *r)
{
    if (!r)
        return;
    pcap_close(r->p);
    free(r);
}
