#include "dgram_log.h"

#include <stdio.h>
#include <string.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include "edhoc/capture.h"
#include "edhoc/transport.h"

static uint16_t port_of(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)a)->sin_port);
    if (a->sa_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
    return 0;
}

/* IPv6 on the wire: an AF_INET6 peer that is not an IPv4-mapped address. */
static bool over_ipv6(const struct sockaddr *peer)
{
    return peer->sa_family == AF_INET6 &&
           !IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)peer)->sin6_addr);
}

int cli_net_layers(const struct edhoc_netacct_link *link, size_t len, bool ipv6, uint16_t src_port,
                   uint16_t dst_port, struct edhoc_netacct_layers *out)
{
    struct edhoc_netacct_dgram d = {
        .udp_payload = len, .ipv6 = ipv6, .src_port = src_port, .dst_port = dst_port};
    if (edhoc_netacct_datagram(link, &d, out, NULL, 0) == 0)
        return 0;
    memset(out, 0, sizeof *out);
    out->coap = len;
    out->udp = len + EDHOC_NETACCT_UDP_HEADER;
    out->ip = out->udp + (ipv6 ? EDHOC_NETACCT_IPV6_HEADER : EDHOC_NETACCT_IPV4_HEADER);
    return -1;
}

int cli_net_layers_msg(const struct edhoc_netacct_link *link, const uint8_t *msg, size_t len,
                       bool ipv6, uint16_t src_port, uint16_t dst_port, bool from_client,
                       struct edhoc_netacct_layers *out)
{
    struct edhoc_netacct_dgram d = {.udp_payload = len,
                                    .ipv6 = ipv6,
                                    .src_port = src_port,
                                    .dst_port = dst_port,
                                    .payload = msg,
                                    .dir = from_client ? EDHOC_NETACCT_DIR_UP
                                                       : EDHOC_NETACCT_DIR_DOWN};
    if (edhoc_netacct_datagram(link, &d, out, NULL, 0) == 0)
        return 0;
    memset(out, 0, sizeof *out);
    out->coap = len;
    out->udp = len + EDHOC_NETACCT_UDP_HEADER;
    out->ip = out->udp + (ipv6 ? EDHOC_NETACCT_IPV6_HEADER : EDHOC_NETACCT_IPV4_HEADER);
    return -1;
}

static void on_datagram(void *user, bool sent, const struct sockaddr *local,
                        const struct sockaddr *peer, const uint8_t *payload, size_t len)
{
    struct cli_dgram_log *log = user;
    if (log->capture &&
        edhoc_capture_datagram_dir(log->capture, sent, local, peer, payload, len, NULL))
        log->capture_errors++;
    if (log->current < 0)
        return;
    bool v6 = over_ipv6(peer);
    struct edhoc_netacct_layers l;
    uint16_t lp = port_of(local), pp = port_of(peer);
    /* This process is the client: what it sends goes up. */
    if (cli_net_layers_msg(&log->link, payload, len, v6, sent ? lp : pp, sent ? pp : lp, sent, &l))
        log->link_errors++;
    struct cli_exchange *e = &log->ex[log->current];
    e->ipv6 = v6;
    if (sent) {
        if (!e->dgrams_sent)
            e->first_sent = len;
        e->dgrams_sent++;
        e->bytes_sent += len;
        edhoc_netacct_total_add(&e->sent_layers, &l, 0, e->dgrams_sent == 1);
    } else {
        if (!e->dgrams_received)
            e->first_received = len;
        e->dgrams_received++;
        e->bytes_received += len;
        edhoc_netacct_total_add(&e->received_layers, &l, 0, e->dgrams_received == 1);
    }
}

void cli_dgram_log_start(struct cli_dgram_log *log)
{
    memset(log, 0, sizeof *log);
    log->current = -1;
    edhoc_transport_set_datagram_hook2(on_datagram, log);
}

int cli_dgram_log_begin(struct cli_dgram_log *log, const char *name)
{
    if (log->n >= CLI_MAX_EXCHANGES) {
        log->current = -1;
        return -1;
    }
    struct cli_exchange *e = &log->ex[log->n];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    log->current = (int)log->n++;
    return log->current;
}

void cli_dgram_log_stop(struct cli_dgram_log *log)
{
    log->current = -1;
    edhoc_transport_set_datagram_hook2(NULL, NULL);
}
