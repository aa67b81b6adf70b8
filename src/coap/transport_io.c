/*
 * Every UDP datagram of the process, counted where it crosses the socket.
 *
 * libcoap 4.3.1 offers no hook on the datagrams it sends and receives
 * (retransmissions and single blocks never reach the application), so
 * this file provides send/sendmsg/recv/recvmsg for the process: each one
 * calls the C library's and reports what went over an IP datagram socket.
 * Other sockets (syslog's AF_UNIX one) pass through uncounted. The hooks
 * also get the local address (getsockname; a wildcard-bound socket's is
 * replaced by the source address the kernel routes towards the peer).
 */
#include <dlfcn.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <fcntl.h>
#include <unistd.h>

#include "edhoc/transport.h"
#include "transport_io.h"

typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef ssize_t (*recvmsg_fn)(int, struct msghdr *, int);

static edhoc_transport_datagram_fn hook;
static void *hook_user;
static edhoc_transport_datagram2_fn hook2;
static void *hook2_user;
static edhoc_transport_datagram2_fn presend;
static void *presend_user;
static struct edhoc_transport_stats stats;

void edhoc_transport_set_datagram_hook(edhoc_transport_datagram_fn fn, void *user)
{
    hook = fn;
    hook_user = user;
}

void edhoc_transport_set_datagram_hook2(edhoc_transport_datagram2_fn fn, void *user)
{
    hook2 = fn;
    hook2_user = user;
}

void edhoc_transport_set_presend_hook(edhoc_transport_datagram2_fn fn, void *user)
{
    presend = fn;
    presend_user = user;
}

void edhoc_transport_get_stats(struct edhoc_transport_stats *st)
{
    *st = stats;
}

static void *real(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

static void name_of(const struct sockaddr_storage *ss, char *buf, size_t cap)
{
    char host[INET6_ADDRSTRLEN] = "?";
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        snprintf(buf, cap, "%s:%u", host, ntohs(a->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        if (!strncmp(host, "::ffff:", 7) && strchr(host + 7, '.'))
            snprintf(buf, cap, "%s:%u", host + 7, ntohs(a->sin6_port));
        else
            snprintf(buf, cap, "[%s]:%u", host, ntohs(a->sin6_port));
    } else {
        snprintf(buf, cap, "?");
    }
}

/* An IP datagram socket? Its local family tells IP from AF_UNIX. */
static bool ip_datagram(int fd)
{
    int type = 0;
    socklen_t tl = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_DGRAM)
        return false;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl))
        return false;
    return ss.ss_family == AF_INET || ss.ss_family == AF_INET6;
}

static bool is_wildcard(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (ss->ss_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
    return false;
}

/* The address the kernel picks as source towards peer: a UDP socket
 * connected to peer learns it without sending anything. Keeps the port. */
static void resolve_wildcard(struct sockaddr_storage *local, const struct sockaddr_storage *peer)
{
    if (peer->ss_family != AF_INET && peer->ss_family != AF_INET6)
        return;
    int fd = socket(peer->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    socklen_t pl = peer->ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                               : sizeof(struct sockaddr_in6);
    if (connect(fd, (const struct sockaddr *)peer, pl) == 0 &&
        getsockname(fd, (struct sockaddr *)&got, &gl) == 0 && got.ss_family == local->ss_family) {
        if (got.ss_family == AF_INET)
            ((struct sockaddr_in *)local)->sin_addr = ((struct sockaddr_in *)&got)->sin_addr;
        else
            ((struct sockaddr_in6 *)local)->sin6_addr = ((struct sockaddr_in6 *)&got)->sin6_addr;
    }
    close(fd);
}

/* pre: the datagram is about to be sent (only the presend hook hears). */
static void report(int fd, bool sent, bool pre, const struct sockaddr *to, socklen_t to_len,
                   const struct iovec *iov, size_t n_iov, size_t total)
{
    if (pre && !presend)
        return;
    if (!ip_datagram(fd))
        return;
    if (!pre && sent) {
        stats.datagrams_sent++;
        stats.bytes_sent += total;
    } else if (!pre) {
        stats.datagrams_received++;
        stats.bytes_received += total;
    }
    if (!pre && !hook && !hook2)
        return;
    uint8_t buf[EDHOC_TRANSPORT_MAX_MESSAGE];
    size_t off = 0;
    for (size_t i = 0; i < n_iov && off < total; i++) {
        size_t n = iov[i].iov_len;
        if (n > total - off)
            n = total - off;
        if (n > sizeof buf - off)
            n = sizeof buf - off;
        memcpy(buf + off, iov[i].iov_base, n);
        off += n;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (to && to_len && to_len <= sizeof ss) {
        memcpy(&ss, to, to_len);
    } else {
        socklen_t sl = sizeof ss;
        if (getpeername(fd, (struct sockaddr *)&ss, &sl))
            ss.ss_family = AF_UNSPEC;
    }
    if (hook && !pre) {
        char peer[80];
        name_of(&ss, peer, sizeof peer);
        hook(hook_user, sent, peer, buf, off);
    }
    if (hook2 || pre) {
        struct sockaddr_storage local;
        socklen_t ll = sizeof local;
        memset(&local, 0, sizeof local);
        if (getsockname(fd, (struct sockaddr *)&local, &ll))
            local.ss_family = AF_UNSPEC;
        else if (is_wildcard(&local))
            resolve_wildcard(&local, &ss);
        if (pre)
            presend(presend_user, true, (const struct sockaddr *)&local,
                    (const struct sockaddr *)&ss, buf, off);
        else
            hook2(hook2_user, sent, (const struct sockaddr *)&local, (const struct sockaddr *)&ss,
                  buf, off);
    }
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    static send_fn f;
    if (!f)
        f = (send_fn)real("send");
    struct iovec v = {(void *)buf, len};
    if (presend)
        report(fd, true, true, NULL, 0, &v, 1, len);
    ssize_t n = f(fd, buf, len, flags);
    if (n > 0) {
        v.iov_len = (size_t)n;
        report(fd, true, false, NULL, 0, &v, 1, (size_t)n);
    }
    return n;
}

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
    static sendmsg_fn f;
    if (!f)
        f = (sendmsg_fn)real("sendmsg");
    if (presend) {
        size_t total = 0;
        for (size_t i = 0; i < m->msg_iovlen; i++)
            total += m->msg_iov[i].iov_len;
        report(fd, true, true, m->msg_name, m->msg_namelen, m->msg_iov, m->msg_iovlen, total);
    }
    ssize_t n = f(fd, m, flags);
    if (n > 0)
        report(fd, true, false, m->msg_name, m->msg_namelen, m->msg_iov, m->msg_iovlen, (size_t)n);
    return n;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    static recv_fn f;
    if (!f)
        f = (recv_fn)real("recv");
    ssize_t n = f(fd, buf, len, flags);
    if (n > 0 && !(flags & MSG_PEEK)) {
        struct iovec v = {buf, (size_t)n};
        report(fd, false, false, NULL, 0, &v, 1, (size_t)n);
    }
    return n;
}

ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
    static recvmsg_fn f;
    if (!f)
        f = (recvmsg_fn)real("recvmsg");
    ssize_t n = f(fd, m, flags);
    if (n > 0 && !(flags & MSG_PEEK))
        report(fd, false, false, m->msg_name, m->msg_namelen, m->msg_iov, m->msg_iovlen, (size_t)n);
    return n;
}

/* ---- Finding the port a port-0 endpoint was bound to ---- */

#define MAX_FD 4096
static uint8_t seen[MAX_FD / 8];

int transport_io_mark_sockets(void)
{
    memset(seen, 0, sizeof seen);
    for (int fd = 0; fd < MAX_FD; fd++) {
        if (fcntl(fd, F_GETFD) != -1 && ip_datagram(fd))
            seen[fd / 8] |= (uint8_t)(1u << (fd % 8));
    }
    return 0;
}

uint16_t transport_io_new_socket_port(int mark)
{
    (void)mark;
    for (int fd = 0; fd < MAX_FD; fd++) {
        if (seen[fd / 8] & (1u << (fd % 8)))
            continue;
        if (fcntl(fd, F_GETFD) == -1 || !ip_datagram(fd))
            continue;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl))
            continue;
        if (ss.ss_family == AF_INET)
            return ntohs(((struct sockaddr_in *)&ss)->sin_port);
        if (ss.ss_family == AF_INET6)
            return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    return 0;
}
