/*
 * Writing captures: every datagram wrapped in a synthesized link header,
 * IPv4 or IPv6 header and UDP header (lengths and checksums correct), and
 * appended to a libpcap dump file.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture_internal.h"
#include "edhoc/capture.h"

struct edhoc_capture {
    pcap_t *dead;
    pcap_dumper_t *dump;
    int dlt;
    uint16_t ipv4_id;
    uint8_t frame[EDHOC_CAPTURE_MAX_PAYLOAD + 128];
};

uint32_t capture_csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    size_t i = 0;
    for (; i + 1 < len; i += 2)
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (i < len)
        sum += (uint32_t)p[i] << 8;
    return sum;
}

uint16_t capture_csum_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

const char *edhoc_capture_strerror(int err)
{
    switch (err) {
    case 0: return "success";
    case EDHOC_CAPTURE_ERR_ARG: return "invalid argument";
    case EDHOC_CAPTURE_ERR_OPEN: return "cannot open the capture file";
    case EDHOC_CAPTURE_ERR_READ: return "the capture file is truncated or corrupt";
    case EDHOC_CAPTURE_ERR_WRITE: return "cannot write the capture file";
    case EDHOC_CAPTURE_ERR_LINK: return "unsupported link type";
    case EDHOC_CAPTURE_ERR_NOT_IP: return "not an IP packet";
    case EDHOC_CAPTURE_ERR_NOT_UDP: return "not a UDP datagram";
    case EDHOC_CAPTURE_ERR_FRAGMENT: return "IP fragment (not reassembled)";
    case EDHOC_CAPTURE_ERR_MALFORMED: return "malformed header";
    case EDHOC_CAPTURE_ERR_TRUNCATED: return "packet truncated";
    case EDHOC_CAPTURE_ERR_TOO_LARGE: return "datagram too large";
    }
    return "unknown error";
}

/* A locally administered MAC address made from the IP address, so each
 * host keeps one address across the capture. */
static void mac_for(const struct sockaddr *sa, uint8_t mac[6])
{
    const uint8_t *a;
    size_t n;
    if (sa->sa_family == AF_INET) {
        a = (const uint8_t *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
        n = 4;
    } else {
        a = (const uint8_t *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        n = 16;
    }
    mac[0] = 0x02;
    mac[1] = 0x00;
    memcpy(mac + 2, a + n - 4, 4);
}

static size_t link_header(int dlt, const struct sockaddr *src, const struct sockaddr *dst, bool v6,
                          uint8_t *out)
{
    uint16_t ethertype = v6 ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4;
    uint32_t af = v6 ? LOOP_AF_INET6_BSD : LOOP_AF_INET;
    uint8_t smac[6], dmac[6];
    mac_for(src, smac);
    mac_for(dst, dmac);
    switch (dlt) {
    case EDHOC_CAPTURE_DLT_RAW: return 0;
    case EDHOC_CAPTURE_DLT_EN10MB:
        memcpy(out, dmac, 6);
        memcpy(out + 6, smac, 6);
        capture_put16(out + 12, ethertype);
        return 14;
    case EDHOC_CAPTURE_DLT_LINUX_SLL:
        /* Packet type 4 ("sent by us"), ARPHRD_ETHER (1), the sender's
         * 6-byte address padded to 8, then the protocol. */
        capture_put16(out, 4);
        capture_put16(out + 2, 1);
        capture_put16(out + 4, 6);
        memset(out + 6, 0, 8);
        memcpy(out + 6, smac, 6);
        capture_put16(out + 14, ethertype);
        return 16;
    case EDHOC_CAPTURE_DLT_LINUX_SLL2:
        capture_put16(out, ethertype);
        capture_put16(out + 2, 0);
        capture_put32(out + 4, 1); /* interface index */
        capture_put16(out + 8, 1); /* ARPHRD_ETHER */
        out[10] = 4;               /* outgoing */
        out[11] = 6;
        memset(out + 12, 0, 8);
        memcpy(out + 12, smac, 6);
        return 20;
    case EDHOC_CAPTURE_DLT_NULL:
        memcpy(out, &af, 4); /* host byte order, as the link type defines */
        return 4;
    case EDHOC_CAPTURE_DLT_LOOP: capture_put32(out, af); return 4;
    }
    return (size_t)-1;
}

/* A dual-stack socket names IPv4 peers as ::ffff:a.b.c.d: write those as
 * IPv4, so both ends of a datagram have one family. */
static const struct sockaddr *unmap(const struct sockaddr *sa, struct sockaddr_in *tmp)
{
    if (sa->sa_family != AF_INET6)
        return sa;
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)sa;
    if (!IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
        return sa;
    memset(tmp, 0, sizeof *tmp);
    tmp->sin_family = AF_INET;
    tmp->sin_port = s6->sin6_port;
    memcpy(&tmp->sin_addr, s6->sin6_addr.s6_addr + 12, 4);
    return (const struct sockaddr *)tmp;
}

long edhoc_capture_frame_build(int dlt, const struct sockaddr *src, const struct sockaddr *dst,
                               const uint8_t *payload, size_t len, uint8_t *out, size_t cap)
{
    if (!src || !dst || !out || (!payload && len))
        return EDHOC_CAPTURE_ERR_ARG;
    struct sockaddr_in src4, dst4;
    src = unmap(src, &src4);
    dst = unmap(dst, &dst4);
    if (src->sa_family != dst->sa_family ||
        (src->sa_family != AF_INET && src->sa_family != AF_INET6))
        return EDHOC_CAPTURE_ERR_ARG;
    if (len > EDHOC_CAPTURE_MAX_PAYLOAD)
        return EDHOC_CAPTURE_ERR_TOO_LARGE;
    bool v6 = src->sa_family == AF_INET6;
    uint8_t lh[32];
    size_t lhl = link_header(dlt, src, dst, v6, lh);
    if (lhl == (size_t)-1)
        return EDHOC_CAPTURE_ERR_LINK;
    size_t iphl = v6 ? 40 : 20;
    size_t total = lhl + iphl + 8 + len;
    if (total > cap)
        return EDHOC_CAPTURE_ERR_TOO_LARGE;

    memcpy(out, lh, lhl);
    uint8_t *ip = out + lhl;
    uint8_t *udp = ip + iphl;
    size_t udp_len = 8 + len;
    const uint8_t *sa, *da;
    uint16_t sp, dp;
    uint32_t sum;
    if (v6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)src;
        const struct sockaddr_in6 *d6 = (const struct sockaddr_in6 *)(const void *)dst;
        sa = s6->sin6_addr.s6_addr;
        da = d6->sin6_addr.s6_addr;
        sp = ntohs(s6->sin6_port);
        dp = ntohs(d6->sin6_port);
        capture_put32(ip, 0x60000000u);
        capture_put16(ip + 4, (uint16_t)udp_len);
        ip[6] = IPPROTO_UDP_NUM;
        ip[7] = 64;
        memcpy(ip + 8, sa, 16);
        memcpy(ip + 24, da, 16);
        /* Pseudo-header: addresses, upper-layer length, next header. */
        sum = capture_csum_add(0, ip + 8, 32);
        sum += (uint32_t)udp_len;
        sum += IPPROTO_UDP_NUM;
    } else {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)src;
        const struct sockaddr_in *d4 = (const struct sockaddr_in *)(const void *)dst;
        sa = (const uint8_t *)&s4->sin_addr;
        da = (const uint8_t *)&d4->sin_addr;
        sp = ntohs(s4->sin_port);
        dp = ntohs(d4->sin_port);
        ip[0] = 0x45;
        ip[1] = 0;
        capture_put16(ip + 2, (uint16_t)(20 + udp_len));
        capture_put16(ip + 4, 0);
        capture_put16(ip + 6, 0x4000); /* DF: a datagram as a socket sends it */
        ip[8] = 64;
        ip[9] = IPPROTO_UDP_NUM;
        capture_put16(ip + 10, 0);
        memcpy(ip + 12, sa, 4);
        memcpy(ip + 16, da, 4);
        capture_put16(ip + 10, capture_csum_fold(capture_csum_add(0, ip, 20)));
        sum = capture_csum_add(0, ip + 12, 8);
        sum += IPPROTO_UDP_NUM;
        sum += (uint32_t)udp_len;
    }
    capture_put16(udp, sp);
    capture_put16(udp + 2, dp);
    capture_put16(udp + 4, (uint16_t)udp_len);
    capture_put16(udp + 6, 0);
    if (len)
        memcpy(udp + 8, payload, len);
    sum = capture_csum_add(sum, udp, udp_len);
    uint16_t c = capture_csum_fold(sum);
    /* 0 means "no checksum" in UDP; an all-ones result is sent instead. */
    capture_put16(udp + 6, c ? c : 0xffff);
    return (long)total;
}

struct edhoc_capture *edhoc_capture_open(const char *path, int dlt, char *err, size_t err_cap)
{
    uint8_t probe[32];
    struct sockaddr_in a = {.sin_family = AF_INET};
    if (!path || link_header(dlt, (struct sockaddr *)&a, (struct sockaddr *)&a, false, probe) ==
                     (size_t)-1) {
        if (err && err_cap)
            snprintf(err, err_cap, "%s", path ? "unsupported link type" : "no file name");
        return NULL;
    }
    struct edhoc_capture *cap = calloc(1, sizeof *cap);
    if (!cap) {
        if (err && err_cap)
            snprintf(err, err_cap, "out of memory");
        return NULL;
    }
    cap->dlt = dlt;
    cap->dead = pcap_open_dead_with_tstamp_precision(dlt, 65535, PCAP_TSTAMP_PRECISION_NANO);
    if (!cap->dead) {
        if (err && err_cap)
            snprintf(err, err_cap, "libpcap refused link type %d", dlt);
        free(cap);
        return NULL;
    }
    /* A capture holds every datagram's bytes, addresses and ports (and,
     * of a handshake, what an eavesdropper needs to follow it): only the
     * user writing it reads it, whatever the umask (pcap_dump_open would
     * create it 0666 & ~umask), and a symbolic link planted at path is
     * refused rather than followed to a file of ours. Truncated only once
     * it is known to be a regular file of ours (O_NONBLOCK: opening a FIFO
     * planted there does not wait for a reader). */
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    struct stat st;
    const char *why = NULL;
    if (fd < 0)
        why = errno == ELOOP   ? "a symbolic link: refused (give the path of a regular file)"
              : errno == ENXIO ? "not a regular file" /* a FIFO without a reader */
                               : strerror(errno);
    else if (fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (fchmod(fd, 0600) != 0 || ftruncate(fd, 0) != 0)
        why = strerror(errno);
    FILE *f = why ? NULL : fdopen(fd, "wb");
    if (!f) {
        if (err && err_cap)
            snprintf(err, err_cap, "%s", why ? why : strerror(errno));
        if (fd >= 0)
            close(fd);
        pcap_close(cap->dead);
        free(cap);
        return NULL;
    }
    cap->dump = pcap_dump_fopen(cap->dead, f);
    if (!cap->dump) {
        if (err && err_cap)
            snprintf(err, err_cap, "%s", pcap_geterr(cap->dead));
        fclose(f);
        pcap_close(cap->dead);
        free(cap);
        return NULL;
    }
    return cap;
}

int edhoc_capture_datagram(struct edhoc_capture *cap, const struct sockaddr *src,
                           const struct sockaddr *dst, const uint8_t *payload, size_t len,
                           const struct timespec *ts)
{
    if (!cap)
        return EDHOC_CAPTURE_ERR_ARG;
    long n =
        edhoc_capture_frame_build(cap->dlt, src, dst, payload, len, cap->frame, sizeof cap->frame);
    if (n < 0)
        return (int)n;
    struct timespec now;
    if (!ts) {
        clock_gettime(CLOCK_REALTIME, &now);
        ts = &now;
    }
    struct pcap_pkthdr h;
    memset(&h, 0, sizeof h);
    h.ts.tv_sec = ts->tv_sec;
    h.ts.tv_usec = ts->tv_nsec; /* nanosecond precision: this field holds ns */
    h.caplen = (bpf_u_int32)n;
    h.len = (bpf_u_int32)n;
    pcap_dump((u_char *)cap->dump, &h, cap->frame);
    if (ferror(pcap_dump_file(cap->dump)))
        return EDHOC_CAPTURE_ERR_WRITE;
    return 0;
}

int edhoc_capture_datagram_dir(struct edhoc_capture *cap, bool sent, const struct sockaddr *local,
                               const struct sockaddr *peer, const uint8_t *payload, size_t len,
                               const struct timespec *ts)
{
    return sent ? edhoc_capture_datagram(cap, local, peer, payload, len, ts)
                : edhoc_capture_datagram(cap, peer, local, payload, len, ts);
}

int edhoc_capture_endpoint_parse(const char *text, struct sockaddr_storage *out)
{
    if (!text || !out)
        return EDHOC_CAPTURE_ERR_ARG;
    memset(out, 0, sizeof *out);
    char host[INET6_ADDRSTRLEN + 1];
    const char *port;
    size_t n;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close || close[1] != ':')
            return EDHOC_CAPTURE_ERR_ARG;
        n = (size_t)(close - text - 1);
        if (n >= sizeof host)
            return EDHOC_CAPTURE_ERR_ARG;
        memcpy(host, text + 1, n);
        port = close + 2;
    } else {
        const char *colon = strrchr(text, ':');
        if (!colon || strchr(text, ':') != colon)
            return EDHOC_CAPTURE_ERR_ARG;
        n = (size_t)(colon - text);
        if (n >= sizeof host)
            return EDHOC_CAPTURE_ERR_ARG;
        memcpy(host, text, n);
        port = colon + 1;
    }
    host[n] = '\0';
    char *end;
    unsigned long p = strtoul(port, &end, 10);
    if (!*port || *end || p > 65535 || port[0] == '-' || port[0] == '+')
        return EDHOC_CAPTURE_ERR_ARG;
    struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)out;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)out;
    if (text[0] != '[' && inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)p);
        return 0;
    }
    if (text[0] == '[' && inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)p);
        return 0;
    }
    memset(out, 0, sizeof *out);
    return EDHOC_CAPTURE_ERR_ARG;
}

int edhoc_capture_flush(struct edhoc_capture *cap)
{
    if (!cap)
        return EDHOC_CAPTURE_ERR_ARG;
    return pcap_dump_flush(cap->dump) == 0 ? 0 : EDHOC_CAPTURE_ERR_WRITE;
}

void edhoc_capture_close(struct edhoc_capture *cap)
{
    if (!cap)
        return;
    pcap_dump_close(cap->dump);
    pcap_close(cap->dead);
    free(cap);
}
