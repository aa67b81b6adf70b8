#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "commands.h"
#include "daemon.h"
#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/netacct.h"
#include "edhoc/transport.h"
#include "interop_log.h"
#include "responder_acct.h"
#include "util.h"

/* ---- Bytes per layer of each handshake, and --pcap ----
 *
 * Every datagram is charged to its peer (address and port). The server
 * logs a handshake while it handles the last request of it, before the
 * response exists, so handshake lines are held until the next datagram is
 * about to be sent (the transport's presend hook), and printed then, with
 * the peer's datagrams: from its A.2 message_1 (a POST whose payload
 * starts with CBOR true) or, in the bare framing, from the previous
 * handshake line of that peer, to that response (message_4 or the 2.04;
 * its first block when block-wise) included. Printing before the send
 * keeps the log ahead of what the peer sees. Lines without a response
 * (timeouts, a bare message_3 left unanswered) are printed when the
 * transport returns, with the datagrams so far. */

#define ACCT_PEERS 256
#define ACCT_LINES 32

struct peer_acct {
    bool used;
    struct sockaddr_storage addr;
    uint64_t last_use;
    struct edhoc_netacct_total tot;
    bool ipv6;
    bool absorb_next_sent; /* already counted on a printed line */
};

struct held_line {
    int level;
    struct sockaddr_storage peer;
    bool peer_known;
    char text[600];
};

struct responder_acct {
    struct edhoc_netacct_link link;
    struct edhoc_capture *cap;
    unsigned capture_errors;
    struct peer_acct peers[ACCT_PEERS];
    uint64_t uses;
    struct held_line held[ACCT_LINES];
    size_t n_held;
    struct interop_log *ilog;
    /* Handshake lines are printed at this log level (notice: failures),
     * so the bytes per peer they report are counted. */
    bool count_bytes;
};

/* The table is set-associative: a peer's address picks one set of
 * ACCT_WAYS entries, so a datagram costs a look at four entries rather
 * than a scan of all of them (that scan showed in profiles under load). */
#define ACCT_WAYS 4

static size_t acct_set_of(const struct sockaddr_storage *k)
{
    const uint8_t *b = (const uint8_t *)k;
    size_t n = k->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return (size_t)(h % (ACCT_PEERS / ACCT_WAYS)) * ACCT_WAYS;
}

/* The peer's entry; a new one replaces the least recently used of its set. */
static struct peer_acct *peer_acct_get(struct responder_acct *a, const struct sockaddr_storage *k,
                                       bool create)
{
    size_t first = acct_set_of(k);
    struct peer_acct *lru = &a->peers[first];
    for (size_t i = first; i < first + ACCT_WAYS; i++) {
        struct peer_acct *p = &a->peers[i];
        if (p->used && cli_addr_equal(&p->addr, k)) {
            p->last_use = ++a->uses;
            return p;
        }
        if (!p->used || (lru->used && p->last_use < lru->last_use))
            lru = p;
    }
    if (!create)
        return NULL;
    memset(lru, 0, sizeof *lru);
    lru->used = true;
    lru->addr = *k;
    lru->last_use = ++a->uses;
    return lru;
}

static bool is_a2_message_1(const uint8_t *payload, size_t len)
{
    struct coap_msg m;
    return edhoc_coap_msg_parse(payload, len, &m) == 0 && m.code == COAP_CODE_POST &&
           m.payload_len > 0 && m.payload[0] == 0xf5;
}

static void datagram_layers(struct responder_acct *a, bool sent, const struct sockaddr *local,
                            const struct sockaddr_storage *k, size_t len,
                            struct edhoc_netacct_layers *l)
{
    struct sockaddr_storage lk;
    cli_addr_normalize(local, &lk);
    uint16_t lport = lk.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&lk)->sin_port)
                                             : ntohs(((struct sockaddr_in6 *)&lk)->sin6_port);
    uint16_t pport = k->ss_family == AF_INET ? ntohs(((const struct sockaddr_in *)k)->sin_port)
                                             : ntohs(((const struct sockaddr_in6 *)k)->sin6_port);
    cli_net_layers(&a->link, len, k->ss_family == AF_INET6, sent ? lport : pport,
                   sent ? pport : lport, l);
}

static void on_datagram(void *user, bool sent, const struct sockaddr *local,
                        const struct sockaddr *peer, const uint8_t *payload, size_t len)
{
    struct responder_acct *a = user;
    if (a->cap && edhoc_capture_datagram_dir(a->cap, sent, local, peer, payload, len, NULL))
        a->capture_errors++;
    if (a->ilog)
        interop_log_datagram(a->ilog, sent, local, peer, payload, len);
    if (!a->count_bytes)
        return;
    struct sockaddr_storage k;
    cli_addr_normalize(peer, &k);
    if (k.ss_family != AF_INET && k.ss_family != AF_INET6)
        return;
    struct peer_acct *p = peer_acct_get(a, &k, true);
    if (sent && p->absorb_next_sent) {
        p->absorb_next_sent = false;
        return;
    }
    if (!sent && is_a2_message_1(payload, len))
        edhoc_netacct_total_clear(&p->tot);
    struct edhoc_netacct_layers l;
    datagram_layers(a, sent, local, &k, len, &l);
    p->ipv6 = k.ss_family == AF_INET6;
    edhoc_netacct_total_add(&p->tot, &l, 0, true);
}

static void held_print(struct responder_acct *a, size_t i, struct peer_acct *p)
{
    struct held_line *h = &a->held[i];
    char line[900];
    if (p) {
        int n = snprintf(line, sizeof line,
                         "%s; datagrams=%u coap_bytes=%zu udp_bytes=%zu ip_bytes=%zu ip=%s",
                         h->text, p->tot.datagrams, p->tot.coap, p->tot.udp, p->tot.ip,
                         p->ipv6 ? "IPv6" : "IPv4");
        if (a->link.type != EDHOC_NETACCT_LINK_NONE && n > 0 && (size_t)n < sizeof line)
            snprintf(line + n, sizeof line - (size_t)n, " frames=%u link_bytes=%zu", p->tot.frames,
                     p->tot.link);
        edhoc_netacct_total_clear(&p->tot);
    } else {
        snprintf(line, sizeof line, "%s", h->text);
    }
    cli_log_line(NULL, h->level, line);
}

/* A datagram about to leave: every held line is printed now, so the log
 * stays ahead of what any peer sees; the lines of its peer count it. */
static void on_presend(void *user, bool sent, const struct sockaddr *local,
                       const struct sockaddr *peer, const uint8_t *payload, size_t len)
{
    struct responder_acct *a = user;
    (void)payload;
    struct sockaddr_storage k;
    cli_addr_normalize(peer, &k);
    for (size_t i = 0; i < a->n_held; i++) {
        struct held_line *h = &a->held[i];
        struct peer_acct *p = h->peer_known ? peer_acct_get(a, &h->peer, false) : NULL;
        if (p && cli_addr_equal(&h->peer, &k) && !p->absorb_next_sent) {
            struct edhoc_netacct_layers l;
            datagram_layers(a, sent, local, &k, len, &l);
            p->ipv6 = k.ss_family == AF_INET6;
            edhoc_netacct_total_add(&p->tot, &l, 0, true);
            p->absorb_next_sent = true;
        }
        held_print(a, i, p);
    }
    a->n_held = 0;
}

void responder_acct_flush(struct responder_acct *a)
{
    for (size_t i = 0; i < a->n_held; i++) {
        struct held_line *h = &a->held[i];
        held_print(a, i, h->peer_known ? peer_acct_get(a, &h->peer, false) : NULL);
    }
    a->n_held = 0;
    if (a->cap)
        edhoc_capture_flush(a->cap);
}

void responder_acct_log(void *user, int level, const char *line)
{
    struct responder_acct *a = user;
    static const char tag[] = "handshake peer=";
    if (strncmp(line, tag, sizeof tag - 1) != 0) {
        cli_log_line(NULL, level, line);
        return;
    }
    if (a->n_held == ACCT_LINES)
        responder_acct_flush(a);
    struct held_line *h = &a->held[a->n_held++];
    h->level = level;
    snprintf(h->text, sizeof h->text, "%s", line);
    char peer[100];
    size_t n = strcspn(line + sizeof tag - 1, " ");
    snprintf(peer, sizeof peer, "%.*s", (int)(n < sizeof peer ? n : sizeof peer - 1),
             line + sizeof tag - 1);
    struct sockaddr_storage ss;
    h->peer_known = edhoc_capture_endpoint_parse(peer, &ss) == 0;
    if (h->peer_known)
        cli_addr_normalize((const struct sockaddr *)&ss, &h->peer);
}

int responder_acct_open(const struct cli_net_opts *net, struct interop_log *ilog,
                        struct responder_acct **out)
{
    struct responder_acct *a = calloc(1, sizeof *a);
    *out = NULL;
    if (!a)
        return CLI_EXIT_INTERNAL;
    a->link = net->link;
    a->ilog = ilog;
    a->count_bytes = cli_log_threshold() >= LOG_NOTICE;
    if (cli_net_capture_open(net, "responder", &a->cap)) {
        free(a);
        return CLI_EXIT_INPUT;
    }
    edhoc_transport_set_datagram_hook2(on_datagram, a);
    edhoc_transport_set_presend_hook(on_presend, a);
    *out = a;
    return 0;
}

void responder_acct_close(struct responder_acct *a)
{
    edhoc_transport_set_datagram_hook2(NULL, NULL);
    edhoc_transport_set_presend_hook(NULL, NULL);
    if (!a)
        return;
    edhoc_capture_close(a->cap);
    free(a);
}
