/*
 * load --flood-sources: message_1s from many source addresses that never
 * send message_3, while the peers run their handshakes beside them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "edhoc/coap_msg.h"
#include "load_internal.h"

static struct in_addr flood_source(size_t i)
{
    struct in_addr a;
    a.s_addr = htonl((127u << 24 | 1u << 16) + 1u + (uint32_t)i); /* 127.1.0.1 + i */
    return a;
}

/* The socket and FLOOD_TEMPLATES message_1 requests (each its own C_I
 * and ephemeral key) sent over and over with a new Message ID: the
 * responder's cost per message_1 does not depend on its being new, and
 * the generator's is a sendmsg. Returns 0, or -1 with why in error. */
int load_flood_open(struct load_run *r, char *error, size_t cap)
{
    struct load_flood *f = &r->flood;
    f->fd = -1;
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *ai = NULL;
    const char *host = strcmp(r->host, "localhost") ? r->host : "127.0.0.1";
    if (getaddrinfo(host, NULL, &hints, &ai) || !ai) {
        snprintf(error, cap,
                 "--flood-sources: '%s' is not an IPv4 address of this "
                 "host (the flood's sources are 127.1.0.1 and up)",
                 r->host);
        return -1;
    }
    memcpy(&f->dst, ai->ai_addr, sizeof f->dst);
    freeaddrinfo(ai);
    f->dst.sin_port = htons(r->port);
    if ((ntohl(f->dst.sin_addr.s_addr) >> 24) != 127) {
        snprintf(error, cap,
                 "--flood-sources floods a loopback responder only "
                 "(127.0.0.0/8 or localhost), not %s",
                 r->host);
        return -1;
    }
    f->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int on = 1;
    struct sockaddr_in any = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (f->fd < 0 || setsockopt(f->fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof on) ||
        bind(f->fd, (struct sockaddr *)&any, sizeof any)) {
        snprintf(error, cap, "--flood-sources: cannot open the flood socket: %s", strerror(errno));
        return -1;
    }
    int buf = 4 << 20;
    setsockopt(f->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    setsockopt(f->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    for (size_t k = 0; k < FLOOD_TEMPLATES; k++) {
        struct edhoc_session s;
        uint8_t c_i[3] = {0x7f, 0xf1, (uint8_t)k}; /* apart from the peers' 0x80.. */
        int rc = edhoc_session_init(&s, EDHOC_INITIATOR, r->cfg);
        if (!rc)
            rc = edhoc_session_set_conn_id(&s, c_i, sizeof c_i);
        int n = rc ? rc : edhoc_initiator_prepare_message_1(&s, r->msg + 1, sizeof r->msg - 1);
        edhoc_session_wipe(&s);
        if (n < 0) {
            snprintf(error, cap, "--flood-sources: message_1: %s", edhoc_strerror(n));
            return -1;
        }
        r->msg[0] = 0xf5; /* CBOR true: message_1 follows (RFC 9528 A.2) */
        long cn = load_request(COAP_CODE_POST, EDHOC_COAP_WELL_KNOWN, EDHOC_COAP_CF_CID_EDHOC,
                               r->msg, (size_t)n + 1, f->tmpl[k], sizeof f->tmpl[k]);
        if (cn < 5) {
            snprintf(error, cap, "--flood-sources: cannot build message_1");
            return -1;
        }
        f->tmpl_len[k] = (size_t)cn;
    }
    return 0;
}

static void flood_sendto(struct load_flood *f, const uint8_t *msg, size_t len, struct in_addr src)
{
    struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
    union {
        char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
        struct cmsghdr align;
    } c;
    memset(&c, 0, sizeof c);
    struct msghdr mh = {.msg_name = &f->dst,
                        .msg_namelen = sizeof f->dst,
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = c.buf,
                        .msg_controllen = sizeof c.buf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = IPPROTO_IP;
    cm->cmsg_type = IP_PKTINFO;
    cm->cmsg_len = CMSG_LEN(sizeof(struct in_pktinfo));
    struct in_pktinfo pi;
    memset(&pi, 0, sizeof pi);
    pi.ipi_spec_dst = src; /* the datagram's source address */
    memcpy(CMSG_DATA(cm), &pi, sizeof pi);
    if (sendmsg(f->fd, &mh, 0) < 0)
        f->send_errors++;
}

/* The message_1s due by now at --flood-rate, each from the next source
 * in turn, with a fresh Message ID (a repeated one would be a
 * retransmission to the responder's CoAP layer). */
void load_flood_send_due(struct load_flood *f, uint64_t now)
{
    if (!f->active)
        return;
    uint64_t due = (uint64_t)((double)(now - f->started_ns) / 1e9 * f->rate);
    for (unsigned k = 0; f->sent < due && k < FLOOD_BATCH; k++) {
        size_t t = (size_t)(f->sent % FLOOD_TEMPLATES);
        uint8_t *m = f->tmpl[t];
        f->mid++;
        m[2] = (uint8_t)(f->mid >> 8);
        m[3] = (uint8_t)f->mid;
        flood_sendto(f, m, f->tmpl_len[t], flood_source((size_t)(f->sent % f->sources)));
        f->sent++;
    }
}

/* Count what the responder answered the flood; with --flood-answer-echo,
 * resend a challenged message_1 with its Echo (the source proves its
 * address, then abandons the handshake after message_2). */
void load_flood_receive(struct load_run *r)
{
    struct load_flood *f = &r->flood;
    for (int k = 0; k < FLOOD_BATCH; k++) {
        struct iovec iov = {.iov_base = r->resp, .iov_len = sizeof r->resp};
        union {
            char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
            struct cmsghdr align;
        } c;
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf};
        ssize_t n = recvmsg(f->fd, &mh, 0);
        if (n < 0)
            return;
        struct coap_msg m;
        if (edhoc_coap_msg_parse(r->resp, (size_t)n, &m)) {
            f->answered_other++;
            continue;
        }
        const struct coap_option *echo =
            m.code == COAP_CODE_UNAUTHORIZED ? edhoc_coap_msg_find_option(&m, COAP_OPT_ECHO) : NULL;
        if (m.code == COAP_CODE_CHANGED) {
            f->answered_message_2++;
        } else if (echo) {
            f->answered_echo++;
            struct in_addr src = {0};
            for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
                    struct in_pktinfo pi;
                    memcpy(&pi, CMSG_DATA(cm), sizeof pi);
                    src = pi.ipi_addr; /* the source this answer went to */
                }
            }
            if (f->answer_echo && src.s_addr && f->active) {
                size_t t = (size_t)(f->echo_resent % FLOOD_TEMPLATES);
                long en = load_coap_with_echo(f->tmpl[t], f->tmpl_len[t], echo->value, echo->len,
                                              r->coap, sizeof r->coap);
                if (en > 4) {
                    f->mid++;
                    r->coap[2] = (uint8_t)(f->mid >> 8);
                    r->coap[3] = (uint8_t)f->mid;
                    flood_sendto(f, r->coap, (size_t)en, src);
                    f->echo_resent++;
                }
            }
        } else {
            f->answered_other++;
        }
    }
}
