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
 *
 * The same receive functions (and recvfrom, which the CoAP library does
 * not call but others in the process may) first put every datagram of an
 * IP datagram socket through the strict check of edhoc/datagram_guard.h:
 * the CoAP library's own parsing and block-wise code receive no fixes, so
 * nothing reaches it that the check refused. A refused datagram is
 * dropped, counted per reason, and otherwise treated as if it had never
 * arrived: the call goes on to the next queued datagram, or fails with
 * EAGAIN on a non-blocking socket when none is left.
 */
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <linux/filter.h>

#include "edhoc/datagram_guard.h"
#include "edhoc/reuseport.h"
#include "edhoc/transport.h"
#include "transport_io.h"

typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef ssize_t (*recvmsg_fn)(int, struct msghdr *, int);
typedef ssize_t (*recvfrom_fn)(int, void *, size_t, int, struct sockaddr *, socklen_t *);

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

/* ---- What each descriptor is, cached ----
 * Asking the kernel on every datagram (SO_TYPE, getsockname, and for a
 * wildcard-bound socket a connect()ed probe socket) cost a responder
 * under load about a tenth of its CPU. A socket's type never changes and
 * its local address only with bind() or connect(), so both are kept per
 * descriptor and forgotten when a socket is created on that number, or
 * the descriptor is closed, replaced (dup2/dup3), bound or connected. The CoAP stack runs on one thread per process
 * (libcoap 4.3.1 is not thread-safe), so the cache needs no lock. */

#define FD_CACHE_MAX 4096

enum fd_kind { FD_UNKNOWN = 0, FD_OTHER, FD_IP_DGRAM };

struct fd_info {
    uint8_t kind;              /* enum fd_kind */
    bool wildcard;             /* bound to 0.0.0.0 or :: */
    struct sockaddr_in6 local; /* an AF_INET address fits in it */
};

static struct fd_info fd_cache[FD_CACHE_MAX];

static void fd_forget(int fd)
{
    if (fd >= 0 && fd < FD_CACHE_MAX)
        fd_cache[fd].kind = FD_UNKNOWN;
}

static bool is_wildcard(const struct sockaddr_storage *ss);

/* Kind and local address of fd, from the cache or the kernel. NULL for
 * a descriptor that is not an IP datagram socket. */
static const struct fd_info *fd_lookup(int fd, struct fd_info *scratch)
{
    struct fd_info *e = fd >= 0 && fd < FD_CACHE_MAX ? &fd_cache[fd] : scratch;
    if (e == scratch || e->kind == FD_UNKNOWN) {
        memset(e, 0, sizeof *e);
        e->kind = FD_OTHER;
        int type = 0;
        socklen_t tl = sizeof type;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_DGRAM &&
            getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
            (ss.ss_family == AF_INET || ss.ss_family == AF_INET6)) {
            e->kind = FD_IP_DGRAM;
            e->wildcard = is_wildcard(&ss);
            memcpy(&e->local, &ss,
                   ss.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof e->local);
        }
    }
    return e->kind == FD_IP_DGRAM ? e : NULL;
}

/* An IP datagram socket? Its local family tells IP from AF_UNIX. */
static bool ip_datagram(int fd)
{
    struct fd_info scratch;
    return fd_lookup(fd, &scratch) != NULL;
}

typedef int (*close_fn)(int);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);
typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

static void *real(const char *name);

typedef int (*socket_fn)(int, int, int);

/* A new socket may reuse the number of a descriptor closed behind our
 * back (inside the C library, e.g. by syslog): start afresh. */
int socket(int domain, int type, int protocol)
{
    static socket_fn f;
    if (!f)
        f = (socket_fn)real("socket");
    int fd = f(domain, type, protocol);
    fd_forget(fd);
    return fd;
}

int close(int fd)
{
    static close_fn f;
    if (!f)
        f = (close_fn)real("close");
    fd_forget(fd);
    return f(fd);
}

int dup2(int oldfd, int newfd)
{
    static dup2_fn f;
    if (!f)
        f = (dup2_fn)real("dup2");
    fd_forget(newfd);
    return f(oldfd, newfd);
}

int dup3(int oldfd, int newfd, int flags)
{
    static dup3_fn f;
    if (!f)
        f = (dup3_fn)real("dup3");
    fd_forget(newfd);
    return f(oldfd, newfd, flags);
}

/* Every IP datagram socket of the process is bound without SO_REUSEADDR:
 * libcoap sets it on its endpoints, and on Linux two UDP sockets that both
 * carry it may hold one port. A second responder on a busy --listen port
 * then starts silently and takes the datagrams meant for the first, and
 * bind() to port 0 may even hand out a port in use (seen in the test suite
 * with ten responders side by side). Without it, a port in use is
 * EADDRINUSE, as the user expects.
 *
 * While a worker opens its endpoints (transport_io_reuseport), its sockets
 * join their port's reuseport group, in worker order:
 *   - worker 0 binds like a single process (so the port is its own, never
 *     shared with another program), then sets SO_REUSEPORT, which lets the
 *     later workers' binds join it (the kernel checks the flag of the bound
 *     socket at each later bind and makes it index 0 of the group);
 *   - workers 1.. set SO_REUSEPORT before bind() and join, in the order
 *     the supervisor starts them; worker 1 attaches the steering program
 *     (edhoc/reuseport.h) to the group, which exists from its bind on.
 * libcoap creates and binds the socket in one call, so this wrapper is the
 * one place where options can be set around bind(). */
static unsigned reuseport_count;
static unsigned reuseport_worker;
static int reuseport_error;

static void reuseport_fail(int err)
{
    if (!reuseport_error)
        reuseport_error = err;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    static bind_fn f;
    if (!f)
        f = (bind_fn)real("bind");
    int type = 0;
    socklen_t tl = sizeof type;
    bool ip_dgram = addr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6) &&
                    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_DGRAM;
    bool join = ip_dgram && reuseport_count > 1;
    int zero = 0, one = 1;
    if (ip_dgram)
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &zero, sizeof zero);
    if (join && reuseport_worker > 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one))
        reuseport_fail(errno);
    int rc = f(fd, addr, len);
    int saved = errno;
    fd_forget(fd);
    if (rc == 0 && join && reuseport_worker == 0 &&
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one))
        reuseport_fail(errno);
    if (rc == 0 && join && reuseport_worker == 1) {
        struct sock_filter prog[EDHOC_REUSEPORT_MAX_INSNS];
        int n = edhoc_reuseport_program(reuseport_count, prog, EDHOC_REUSEPORT_MAX_INSNS);
        struct sock_fprog fp = {.len = (unsigned short)(n > 0 ? n : 0), .filter = prog};
        if (n <= 0 || setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fp, sizeof fp))
            reuseport_fail(n <= 0 ? EINVAL : errno);
    }
    errno = saved;
    return rc;
}

/* The group this process serves in, kept after its binds (which the
 * ones above are for): what a datagram read later is checked against. */
static unsigned steered_count, steered_worker;

void transport_io_reuseport(unsigned count, unsigned worker)
{
    reuseport_count = count;
    reuseport_worker = worker;
    reuseport_error = 0;
    if (count > 1) {
        steered_count = count;
        steered_worker = worker;
    }
}

int transport_io_reuseport_error(void)
{
    return reuseport_error;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    static connect_fn f;
    if (!f)
        f = (connect_fn)real("connect");
    int rc = f(fd, addr, len);
    fd_forget(fd);
    return rc;
}

static bool is_wildcard(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (ss->ss_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
    return false;
}

/* Source addresses the kernel chose towards recent peer addresses (for
 * wildcard-bound sockets), so that a probe socket is made once per peer
 * address and family every few seconds rather than once per datagram. */
#define ROUTE_CACHE_SIZE  256
#define ROUTE_CACHE_TTL_S 5

struct route_entry {
    bool used;
    sa_family_t family;
    time_t when;
    uint8_t peer_addr[16];
    uint8_t source_addr[16];
};

static struct route_entry route_cache[ROUTE_CACHE_SIZE];

static size_t addr_bytes(const struct sockaddr_storage *ss, const uint8_t **p)
{
    if (ss->ss_family == AF_INET) {
        *p = (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr;
        return 4;
    }
    *p = (const uint8_t *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
    return 16;
}

static struct route_entry *route_slot(const struct sockaddr_storage *peer)
{
    const uint8_t *a;
    size_t n = addr_bytes(peer, &a);
    uint32_t h = 2166136261u ^ peer->ss_family;
    for (size_t i = 0; i < n; i++)
        h = (h ^ a[i]) * 16777619u;
    return &route_cache[h % ROUTE_CACHE_SIZE];
}

/* The address the kernel picks as source towards peer: a UDP socket
 * connected to peer learns it without sending anything. Keeps the port. */
static void resolve_wildcard(struct sockaddr_storage *local, const struct sockaddr_storage *peer)
{
    if (peer->ss_family != AF_INET && peer->ss_family != AF_INET6)
        return;
    if (local->ss_family != peer->ss_family)
        return; /* a dual-stack socket: the kernel's probe would answer in the wrong family */
    const uint8_t *pa, *la;
    size_t n = addr_bytes(peer, &pa);
    addr_bytes(local, &la);
    struct route_entry *r = route_slot(peer);
    time_t now = time(NULL);
    if (r->used && r->family == peer->ss_family && !memcmp(r->peer_addr, pa, n) &&
        now - r->when < ROUTE_CACHE_TTL_S && now >= r->when) {
        memcpy((uint8_t *)la, r->source_addr, n);
        return;
    }
    int fd = socket(peer->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    socklen_t pl =
        peer->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
    if (connect(fd, (const struct sockaddr *)peer, pl) == 0 &&
        getsockname(fd, (struct sockaddr *)&got, &gl) == 0 && got.ss_family == local->ss_family) {
        if (got.ss_family == AF_INET)
            ((struct sockaddr_in *)local)->sin_addr = ((struct sockaddr_in *)&got)->sin_addr;
        else
            ((struct sockaddr_in6 *)local)->sin6_addr = ((struct sockaddr_in6 *)&got)->sin6_addr;
        r->used = true;
        r->family = peer->ss_family;
        r->when = now;
        memcpy(r->peer_addr, pa, n);
        memcpy(r->source_addr, la, n);
    }
    close(fd);
}

/* pre: the datagram is about to be sent (only the presend hook hears). */
static void report(int fd, bool sent, bool pre, const struct sockaddr *to, socklen_t to_len,
                   const struct iovec *iov, size_t n_iov, size_t total)
{
    if (pre && !presend)
        return;
    struct fd_info scratch;
    const struct fd_info *info = fd_lookup(fd, &scratch);
    if (!info)
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
        memset(&local, 0, sizeof local);
        memcpy(&local, &info->local, sizeof info->local);
        if (info->wildcard)
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

/* ---- The strict check on received datagrams ----
 * Two ways to read a datagram under the check:
 *  - directly into the caller's buffer (the CoAP library's reads: one
 *    buffer, no MSG_PEEK), with MSG_TRUNC so that the kernel tells the
 *    datagram's real length; a datagram longer than the buffer arrived
 *    cut short, so it is refused unseen as too long;
 *  - looking first, for reads the direct way cannot check (MSG_PEEK, a
 *    buffer in pieces, or none at all): the datagram is peeked at into
 *    scratch space, and only if accepted is the caller's own call made,
 *    which then finds that same datagram first in the queue (the receive
 *    path of a socket has one reader); a refused one is taken off the
 *    queue with a zero-length read, which on a datagram socket discards
 *    the whole datagram.
 * A non-blocking read that meets a long run of refused datagrams returns
 * EAGAIN after GUARD_DROPS_PER_CALL of them, so that a flood cannot hold
 * the event loop in one call: the socket stays readable and the loop
 * comes back to it after its timers. A blocking read waits on, as it
 * would had the datagrams never come. */

#define GUARD_DROPS_PER_CALL 64

/* Room for the largest UDP payload, plus one byte. */
static _Thread_local uint8_t guard_scratch[EDHOC_DATAGRAM_LIMIT + 1];

static bool guarded(int fd, int flags)
{
    /* MSG_ERRQUEUE reads the socket's error queue (our own datagrams that
     * met an ICMP error), not a received datagram. */
    return !(flags & MSG_ERRQUEUE) && edhoc_datagram_guard_enabled() && ip_datagram(fd);
}

static bool reads_without_waiting(int fd, int flags)
{
    if (flags & MSG_DONTWAIT)
        return true;
    int fl = fcntl(fd, F_GETFL);
    return fl != -1 && (fl & O_NONBLOCK);
}

static size_t iov_capacity(const struct msghdr *m)
{
    size_t total = 0;
    for (size_t i = 0; i < (size_t)m->msg_iovlen; i++) {
        if (m->msg_iov[i].iov_len > SIZE_MAX - total)
            return SIZE_MAX;
        total += m->msg_iov[i].iov_len;
    }
    return total;
}

/* Take the datagram at the head of the queue off it, unread. */
static void discard_head(recvmsg_fn real_recvmsg, int fd)
{
    uint8_t unused;
    struct iovec v = {&unused, 0};
    struct msghdr none = {.msg_iov = &v, .msg_iovlen = 1};
    (void)real_recvmsg(fd, &none, MSG_DONTWAIT);
}

/* RFC 7252 Section 4.2: a Confirmable message the recipient cannot
 * process ("a message format error" among the cases) is rejected with a
 * matching Reset, not ignored, so the sender stops retransmitting. A
 * Reset is 4 bytes, never more than what came, so it amplifies nothing.
 * name NULL: the socket is connected to the sender. */
static void reject_confirmable(int fd, const uint8_t *d, size_t n, const void *name,
                               socklen_t namelen)
{
    if (n < 4 || (d[0] & 0xf0) != 0x40) /* version 1, type CON */
        return;
    typedef ssize_t (*sendto_fn)(int, const void *, size_t, int, const struct sockaddr *,
                                 socklen_t);
    static sendto_fn real_sendto;
    if (!real_sendto)
        real_sendto = (sendto_fn)real("sendto");
    const uint8_t rst[4] = {0x70, 0x00, d[2], d[3]};
    if (real_sendto)
        (void)real_sendto(fd, rst, sizeof rst, MSG_DONTWAIT, name, name ? namelen : 0);
}

/* A datagram the steering program gives another worker reached this
 * one only because it came before the group was whole (workers bind one
 * after the other, the program is attached by worker 1's bind): once it
 * is, the program sends every such datagram to its owner. Answering it
 * here would say "Security context not found" for a context its owner
 * holds; dropped unanswered, it comes back as a retransmission, steered
 * right. Read before any other check of ours (the caller's guard ran). */
static bool belongs_to_another_worker(const uint8_t *d, size_t n)
{
    if (steered_count < 2)
        return false;
    uint32_t owner = edhoc_reuseport_steer(d, n, steered_count);
    return owner < steered_count && owner != steered_worker;
}

/* One checked datagram: the real call's result for an accepted one, or
 * -2 after dropping a refused one (errno untouched). */
static ssize_t read_checked_once(recvmsg_fn real_recvmsg, int fd, struct msghdr *m, int flags)
{
    size_t capacity = iov_capacity(m);
    bool look_first = (flags & MSG_PEEK) || capacity == 0 || m->msg_iovlen != 1;
    if (!look_first) {
        ssize_t n = real_recvmsg(fd, m, flags | MSG_TRUNC);
        if (n < 0)
            return n;
        const uint8_t *d = m->msg_iov[0].iov_base;
        if ((size_t)n > capacity) {
            edhoc_datagram_guard_count_refusal(EDHOC_DATAGRAM_TOO_LONG, (size_t)n);
            reject_confirmable(fd, d, capacity, m->msg_name, m->msg_namelen);
            return -2;
        }
        if (edhoc_datagram_guard_admit(d, (size_t)n) != EDHOC_DATAGRAM_OK) {
            reject_confirmable(fd, d, (size_t)n, m->msg_name, m->msg_namelen);
            return -2;
        }
        if (belongs_to_another_worker(d, (size_t)n))
            return -2;
        return n;
    }
    struct iovec v = {guard_scratch, sizeof guard_scratch};
    struct sockaddr_storage from;
    struct msghdr look = {
        .msg_iov = &v, .msg_iovlen = 1, .msg_name = &from, .msg_namelen = sizeof from};
    ssize_t n = real_recvmsg(fd, &look, (flags & ~MSG_CMSG_CLOEXEC) | MSG_PEEK | MSG_TRUNC);
    if (n < 0)
        return n;
    int reason;
    if ((size_t)n > sizeof guard_scratch) {
        reason = EDHOC_DATAGRAM_TOO_LONG;
        edhoc_datagram_guard_count_refusal(reason, (size_t)n);
    } else {
        reason = edhoc_datagram_guard_admit(guard_scratch, (size_t)n);
    }
    if (reason != EDHOC_DATAGRAM_OK) {
        discard_head(real_recvmsg, fd);
        reject_confirmable(fd, guard_scratch, (size_t)n > sizeof guard_scratch ? 4 : (size_t)n,
                           look.msg_namelen ? &from : NULL, look.msg_namelen);
        return -2;
    }
    if (belongs_to_another_worker(guard_scratch, (size_t)n)) {
        discard_head(real_recvmsg, fd);
        return -2;
    }
    return real_recvmsg(fd, m, flags);
}

/* recvmsg under the check: a refused datagram is dropped and the next one
 * read, as if the refused one had never arrived. */
static ssize_t read_checked(recvmsg_fn real_recvmsg, int fd, struct msghdr *m, int flags)
{
    /* The kernel writes back how much of the name and control buffers it
     * used; each new attempt gets the caller's sizes again. */
    socklen_t name_cap = m->msg_namelen;
    size_t control_cap = m->msg_controllen;
    for (unsigned dropped = 0;; dropped++) {
        if (dropped && dropped % GUARD_DROPS_PER_CALL == 0 && reads_without_waiting(fd, flags)) {
            errno = EAGAIN;
            return -1;
        }
        m->msg_namelen = name_cap;
        m->msg_controllen = control_cap;
        ssize_t n = read_checked_once(real_recvmsg, fd, m, flags);
        if (n != -2)
            return n;
    }
}

static recvmsg_fn real_recvmsg_fn(void)
{
    static recvmsg_fn f;
    if (!f)
        f = (recvmsg_fn)real("recvmsg");
    return f;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    static recv_fn f;
    if (!f)
        f = (recv_fn)real("recv");
    ssize_t n;
    if (guarded(fd, flags)) {
        struct iovec v = {buf, len};
        struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
        n = read_checked(real_recvmsg_fn(), fd, &m, flags);
    } else {
        n = f(fd, buf, len, flags);
    }
    if (n > 0 && !(flags & MSG_PEEK)) {
        struct iovec v = {buf, (size_t)n < len ? (size_t)n : len};
        report(fd, false, false, NULL, 0, &v, 1, v.iov_len);
    }
    return n;
}

ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
    recvmsg_fn f = real_recvmsg_fn();
    ssize_t n = guarded(fd, flags) ? read_checked(f, fd, m, flags) : f(fd, m, flags);
    if (n > 0 && !(flags & MSG_PEEK))
        report(fd, false, false, m->msg_name, m->msg_namelen, m->msg_iov, m->msg_iovlen, (size_t)n);
    return n;
}

/* recvfrom is checked but not counted: the byte accounting follows the
 * CoAP library's datagrams, and it reads with recv and recvmsg only. */
ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
                 socklen_t *from_len)
{
    static recvfrom_fn f;
    if (!f)
        f = (recvfrom_fn)real("recvfrom");
    if (!guarded(fd, flags))
        return f(fd, buf, len, flags, from, from_len);
    struct iovec v = {buf, len};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
    if (from && from_len) {
        m.msg_name = from;
        m.msg_namelen = *from_len;
    }
    ssize_t n = read_checked(real_recvmsg_fn(), fd, &m, flags);
    if (n >= 0 && from && from_len)
        *from_len = m.msg_namelen;
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
