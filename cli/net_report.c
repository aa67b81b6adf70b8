#include "net_report.h"
#include "options.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include "edhoc/blockwise.h"
#include "edhoc/capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/transport.h"
#include "json_out.h"
#include "util.h"

int cli_uri_parse(const char *uri, struct cli_uri *u)
{
    memset(u, 0, sizeof *u);
    u->port = 5683;
    const char *p = uri;
    if (!strncmp(p, "coap://", 7)) {
        p += 7;
    } else if (strstr(p, "://")) {
        fprintf(stderr, "edhoc-cli: %s: only coap:// URIs are supported\n", uri);
        return -1;
    }
    const char *host_end;
    if (*p == '[') {
        const char *rb = strchr(p, ']');
        if (!rb) {
            fprintf(stderr, "edhoc-cli: %s: unterminated IPv6 address\n", uri);
            return -1;
        }
        if ((size_t)(rb - p - 1) >= sizeof u->host)
            return -1;
        memcpy(u->host, p + 1, (size_t)(rb - p - 1));
        host_end = rb + 1;
    } else {
        host_end = p + strcspn(p, ":/?");
        if ((size_t)(host_end - p) >= sizeof u->host)
            return -1;
        memcpy(u->host, p, (size_t)(host_end - p));
    }
    if (!u->host[0]) {
        fprintf(stderr, "edhoc-cli: %s: no host\n", uri);
        return -1;
    }
    p = host_end;
    if (*p == ':') {
        char *end;
        long port = strtol(p + 1, &end, 10);
        if (end == p + 1 || port < 1 || port > 65535) {
            fprintf(stderr, "edhoc-cli: %s: bad port\n", uri);
            return -1;
        }
        u->port = (uint16_t)port;
        p = end;
    }
    if (*p == '/') {
        size_t n = strcspn(p, "?");
        if (n >= sizeof u->path)
            return -1;
        memcpy(u->path, p, n);
        p += n;
    }
    if (*p == '?') {
        if (strlen(p + 1) >= sizeof u->query)
            return -1;
        strcpy(u->query, p + 1);
    } else if (*p) {
        fprintf(stderr, "edhoc-cli: %s: cannot parse the URI\n", uri);
        return -1;
    }
    return 0;
}

int cli_coap_method(const char *name)
{
    static const struct {
        const char *n;
        int code;
    } m[] = {{"GET", 1}, {"POST", 2}, {"PUT", 3}, {"DELETE", 4}, {"FETCH", 5}, {"PATCH", 6},
             {"IPATCH", 7}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        if (!strcasecmp(name, m[i].n))
            return m[i].code;
    }
    return -1;
}

long cli_coap_build_request(uint8_t code, const char *path, const char *query, int cf,
                            const uint8_t *payload, size_t payload_len, long observe, uint8_t *out,
                            size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = code;
    uint8_t obs[4], cfv[4];
    if (observe >= 0 && edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, obs,
                                            edhoc_coap_uint_encode((uint32_t)observe, obs)))
        return -1;
    /* Segments point into path / query themselves (kept alive by the caller). */
    const char *s = path ? path : "";
    while (*s) {
        if (*s == '/') {
            s++;
            continue;
        }
        size_t n = strcspn(s, "/");
        if (edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)s, n))
            return -1;
        s += n;
    }
    if (cf >= 0 && edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cfv,
                                       edhoc_coap_uint_encode((uint32_t)cf, cfv)))
        return -1;
    s = query ? query : "";
    while (*s) {
        size_t n = strcspn(s, "&");
        if (n && edhoc_coap_msg_add_option(&m, COAP_OPT_URI_QUERY, (const uint8_t *)s, n))
            return -1;
        s += n;
        if (*s == '&')
            s++;
    }
    m.payload = payload_len ? payload : NULL;
    m.payload_len = payload_len;
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

const char *cli_coap_code_name(uint8_t code, char *buf, size_t cap)
{
    static const struct {
        uint8_t code;
        const char *name;
    } names[] = {{0x41, "Created"}, {0x42, "Deleted"}, {0x43, "Valid"}, {0x44, "Changed"},
                 {0x45, "Content"}, {0x5f, "Continue"}, {0x80, "Bad Request"},
                 {0x81, "Unauthorized"}, {0x82, "Bad Option"}, {0x83, "Forbidden"},
                 {0x84, "Not Found"}, {0x85, "Method Not Allowed"}, {0x86, "Not Acceptable"},
                 {0x88, "Request Entity Incomplete"}, {0x8d, "Request Entity Too Large"},
                 {0x8f, "Unsupported Content-Format"}, {0xa0, "Internal Server Error"},
                 {0xa1, "Not Implemented"}, {0xa3, "Service Unavailable"}};
    const char *name = "";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (names[i].code == code)
            name = names[i].name;
    }
    snprintf(buf, cap, "%d.%02d%s%s", code >> 5, code & 31, name[0] ? " " : "", name);
    return buf;
}

int cli_coap_response_view(const uint8_t *msg, size_t len, uint8_t *code, int *cf,
                           const uint8_t **payload, size_t *payload_len)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, len, &m))
        return -1;
    *code = m.code;
    *cf = -1;
    const struct coap_option *o = edhoc_coap_msg_find_option(&m, COAP_OPT_CONTENT_FORMAT);
    uint32_t v;
    if (o && !edhoc_coap_option_uint(o, &v))
        *cf = (int)v;
    *payload = m.payload;
    *payload_len = m.payload_len;
    return 0;
}

static bool printable(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (!isprint(p[i]) && p[i] != '\n' && p[i] != '\t' && p[i] != '\r')
            return false;
    }
    return true;
}

void cli_print_payload(FILE *f, const uint8_t *p, size_t len)
{
    if (!len)
        return;
    if (printable(p, len))
        fprintf(f, "%.*s", (int)len, (const char *)p);
    else
        cli_hex_print(f, p, len);
}

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

int cli_net_layers(const struct edhoc_netacct_link *link, size_t len, bool ipv6,
                   uint16_t src_port, uint16_t dst_port, struct edhoc_netacct_layers *out)
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
    struct edhoc_netacct_dgram d = {
        .udp_payload = len, .ipv6 = ipv6, .src_port = src_port, .dst_port = dst_port,
        .payload = msg, .dir = from_client ? EDHOC_NETACCT_DIR_UP : EDHOC_NETACCT_DIR_DOWN};
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
    if (cli_net_layers_msg(&log->link, payload, len, v6, sent ? lp : pp, sent ? pp : lp, sent,
                           &l))
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

/* name/value as given on the command line. Returns 1 (ours; *used says
 * whether value was taken), 0 (not ours) or -1 after printing why. */
static int cli_net_parse_option(struct cli_net_opts *o, const char *prog, const char *name,
                                const char *value, bool *used)
{
    *used = false;
    bool link = !strcmp(name, "--link"), mtu = !strcmp(name, "--link-mtu"),
         pcap = !strcmp(name, "--pcap");
    if (!link && !mtu && !pcap) {
        int rc = cli_net_air_option(prog, name, value, &o->link, &o->radio, &o->radio_set);
        *used = rc > 0;
        return rc;
    }
    if (!value) {
        fprintf(stderr, "edhoc-cli %s: %s needs a value\n", prog, name);
        return -1;
    }
    *used = true;
    if (pcap) {
        o->pcap = value;
    } else if (link) {
        if (!strcmp(value, "802.15.4") || !strcasecmp(value, "802154") ||
            !strcasecmp(value, "ieee802.15.4"))
            o->link = edhoc_netacct_link_802154_default();
        else if (!strcasecmp(value, "ble"))
            o->link = edhoc_netacct_link_ble_default();
        else if (!strcasecmp(value, "lorawan"))
            o->link = edhoc_netacct_link_lorawan_default();
        else if (!strcasecmp(value, "none"))
            o->link.type = EDHOC_NETACCT_LINK_NONE;
        else {
            fprintf(stderr, "edhoc-cli %s: --link: expected 802.15.4, ble, lorawan or none, got "
                            "'%s'\n", prog, value);
            return -1;
        }
    } else {
        char *end;
        long v = strtol(value, &end, 10);
        if (*end || end == value || v < 1 || v > 65535) {
            fprintf(stderr, "edhoc-cli %s: --link-mtu: expected 1..65535 bytes\n", prog);
            return -1;
        }
        o->link = edhoc_netacct_link_mtu((unsigned)v, 0);
    }
    return 1;
}

#define H_PCAP "write every datagram sent or received to FILE (pcap, raw IP with\n" \
               "the real addresses and ports)"
#define H_LINK                                                                            \
    "also count frames, bytes, time on air and energy on IEEE 802.15.4\n"                \
    "(6LoWPAN), Bluetooth LE (RFC 7668) or LoRaWAN (SCHC); the\n"                      \
    "assumptions are printed with the table (docs/airtime.md)"
#define AIR_OPTS                                                                          \
    {CLI_OPT_ID_NET, "csma-be", "N",                                                      \
     "802.15.4: backoff exponent of the mean CSMA-CA backoff (0..8,\n"                  \
     "default 3 = macMinBE)"},                                                             \
    {CLI_OPT_ID_NET, "retries", "N",                                                      \
     "802.15.4: retransmissions assumed per frame (0..7, default 0)"},                     \
    {CLI_OPT_ID_NET, "phy", "1m|2m", "BLE: LE 1M or LE 2M PHY (default 1m)"},              \
    {CLI_OPT_ID_NET, "ble-data-length", "N",                                              \
     "BLE: largest link-layer payload, 27..251 (default 27)"},                             \
    {CLI_OPT_ID_NET, "ble-interval", "MS",                                                \
     "BLE: connection interval, 7.5..4000 ms in steps of 1.25 (default\n"               \
     "7.5); a message waits for the next connection event"},                               \
    {CLI_OPT_ID_NET, "ble-unencrypted", NULL,                                             \
     "BLE: no link-layer encryption (no 4-byte MIC per PDU)"},                             \
    {CLI_OPT_ID_NET, "region", "eu868|us915", "LoRaWAN: regional parameters (default eu868)"}, \
    {CLI_OPT_ID_NET, "data-rate", "N",                                                    \
     "LoRaWAN: uplink data rate (eu868 0..5 = SF12..SF7, us915 0..4;\n"                \
     "default 0); downlinks use RX1 with RX1DROffset 0"},                                  \
    {CLI_OPT_ID_NET, "duty-cycle", "PCT",                                                 \
     "LoRaWAN: duty cycle per sub-band in percent (0.001..100; default\n"               \
     "1 for eu868, 100 = none for us915)"},                                                \
    {CLI_OPT_ID_NET, "radio-profile", "NAME|FILE",                                        \
     "energy from cc2538, nrf52840, sx1276 or a key=value file (volts,\n"               \
     "tx_ma, rx_ma, tx_startup_us, rx_startup_us); default by link"}
const struct cli_opt cli_net_opts_link[] = {
    {CLI_OPT_ID_NET, "link", "802.15.4|ble|lorawan|none", H_LINK},
    {CLI_OPT_ID_NET, "link-mtu", "N", "also count frames of a link carrying N bytes of IP each"},
    AIR_OPTS,
    {CLI_OPT_ID_NET, "pcap", "FILE", H_PCAP},
    {0, NULL, NULL, NULL},
};
const struct cli_opt cli_net_opts_link_air[] = {
    {CLI_OPT_ID_NET, "link", "802.15.4|ble|lorawan|none", H_LINK},
    {CLI_OPT_ID_NET, "link-mtu", "N", "also count frames of a link carrying N bytes of IP each"},
    AIR_OPTS,
    {0, NULL, NULL, NULL},
};
const struct cli_opt cli_net_opts_air[] = {
    AIR_OPTS,
    {0, NULL, NULL, NULL},
};

static bool parse_double(const char *v, double lo, double hi, double *out)
{
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !(d >= lo && d <= hi))
        return false;
    *out = d;
    return true;
}

static bool parse_ulong(const char *v, unsigned long lo, unsigned long hi, unsigned long *out)
{
    char *end;
    if (!*v || *v == '-' || *v == '+')
        return false;
    unsigned long n = strtoul(v, &end, 10);
    if (*end || n < lo || n > hi)
        return false;
    *out = n;
    return true;
}

static int air_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int air_error(const char *prog, const char *fmt, ...)
{
    fprintf(stderr, "edhoc-cli %s: ", prog);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return -1;
}

int cli_net_air_option(const char *prog, const char *flag, const char *value,
                       struct edhoc_netacct_link *link, struct edhoc_netacct_radio *radio,
                       bool *radio_set)
{
    static const struct {
        const char *flag;
        enum edhoc_netacct_link_type type; /* NONE: any link */
        const char *link_name;
    } opts[] = {
        {"--csma-be", EDHOC_NETACCT_LINK_802154, "802.15.4"},
        {"--retries", EDHOC_NETACCT_LINK_802154, "802.15.4"},
        {"--phy", EDHOC_NETACCT_LINK_BLE, "ble"},
        {"--ble-data-length", EDHOC_NETACCT_LINK_BLE, "ble"},
        {"--ble-interval", EDHOC_NETACCT_LINK_BLE, "ble"},
        {"--ble-unencrypted", EDHOC_NETACCT_LINK_BLE, "ble"},
        {"--region", EDHOC_NETACCT_LINK_LORAWAN, "lorawan"},
        {"--data-rate", EDHOC_NETACCT_LINK_LORAWAN, "lorawan"},
        {"--duty-cycle", EDHOC_NETACCT_LINK_LORAWAN, "lorawan"},
        {"--radio-profile", EDHOC_NETACCT_LINK_NONE, NULL},
    };
    size_t k = 0;
    while (k < sizeof opts / sizeof opts[0] && strcmp(flag, opts[k].flag))
        k++;
    if (k == sizeof opts / sizeof opts[0])
        return 0;
    bool is_flag = !strcmp(flag, "--ble-unencrypted");
    if (!is_flag && !value)
        return air_error(prog, "%s needs a value", flag);
    if (opts[k].type != EDHOC_NETACCT_LINK_NONE && link->type != opts[k].type)
        return air_error(prog, "%s describes a %s link: give --link %s before it", flag,
                         opts[k].link_name, opts[k].link_name);
    unsigned long n = 0;
    double d = 0;
    if (!strcmp(flag, "--csma-be")) {
        if (!parse_ulong(value, 0, 8, &n))
            return air_error(prog, "%s: expected 0..8, got '%s'", flag, value);
        link->csma_be = (unsigned)n;
    } else if (!strcmp(flag, "--retries")) {
        if (!parse_ulong(value, 0, 7, &n))
            return air_error(prog, "%s: expected 0..7 (macMaxFrameRetries), got '%s'", flag,
                             value);
        link->retries = (unsigned)n;
    } else if (!strcmp(flag, "--phy")) {
        if (strcasecmp(value, "1m") && strcasecmp(value, "2m"))
            return air_error(prog, "%s: expected 1m or 2m, got '%s'", flag, value);
        link->ble_phy = value[0] == '2' ? 2 : 1;
    } else if (!strcmp(flag, "--ble-data-length")) {
        if (!parse_ulong(value, 27, 251, &n))
            return air_error(prog, "%s: expected 27..251 bytes, got '%s'", flag, value);
        link->ble_data_length = (unsigned)n;
    } else if (!strcmp(flag, "--ble-interval")) {
        /* Core Vol 6 Part B 4.5.1: connInterval = 1.25 ms * (6..3200). */
        if (!parse_double(value, 7.5, 4000, &d) ||
            (long)(d * 1000 + 0.5) % 1250 != 0)
            return air_error(prog, "%s: expected 7.5..4000 ms in steps of 1.25, got '%s'", flag,
                             value);
        link->ble_interval_us = (unsigned)(d * 1000 + 0.5);
    } else if (!strcmp(flag, "--ble-unencrypted")) {
        link->ble_encrypted = false;
    } else if (!strcmp(flag, "--region")) {
        if (!strcasecmp(value, "eu868")) {
            link->region = EDHOC_NETACCT_EU868;
        } else if (!strcasecmp(value, "us915")) {
            link->region = EDHOC_NETACCT_US915;
            /* FCC rules limit dwell time, not duty cycle: no wait unless
             * --duty-cycle asks for one. */
            if (link->duty_cycle_ppm == 10000)
                link->duty_cycle_ppm = 1000000;
        } else {
            return air_error(prog, "%s: expected eu868 or us915, got '%s'", flag, value);
        }
        if (link->region == EDHOC_NETACCT_US915 && link->data_rate > 4)
            return air_error(prog, "--data-rate %u is not an us915 uplink data rate (0..4)",
                             link->data_rate);
    } else if (!strcmp(flag, "--data-rate")) {
        unsigned long max = link->region == EDHOC_NETACCT_US915 ? 4 : 5;
        if (!parse_ulong(value, 0, max, &n))
            return air_error(prog, "%s: expected 0..%lu for %s, got '%s'", flag, max,
                             link->region == EDHOC_NETACCT_US915 ? "us915" : "eu868", value);
        link->data_rate = (unsigned)n;
    } else if (!strcmp(flag, "--duty-cycle")) {
        if (!parse_double(value, 0.001, 100, &d))
            return air_error(prog, "%s: expected 0.001..100 percent, got '%s'", flag, value);
        link->duty_cycle_ppm = (unsigned)(d * 10000 + 0.5);
    } else {
        if (edhoc_netacct_radio_builtin(value, radio) == 0) {
            *radio_set = true;
            return 1;
        }
        size_t len = 0;
        uint8_t *text = cli_read_file(value, &len);
        if (!text)
            return air_error(prog, "%s: '%s' is neither a built-in profile (cc2538, nrf52840, "
                             "sx1276) nor a readable file", flag, value);
        char why[200] = "";
        int rc = edhoc_netacct_radio_parse((const char *)text, len, radio, why, sizeof why);
        free(text);
        if (rc)
            return air_error(prog, "%s %s: %s", flag, value, why);
        *radio_set = true;
    }
    return 1;
}

struct edhoc_netacct_radio cli_net_radio(const struct edhoc_netacct_link *link,
                                         const struct edhoc_netacct_radio *radio, bool set)
{
    if (set && radio)
        return *radio;
    return edhoc_netacct_radio_for(link->type);
}

const char *cli_air_time(uint64_t us, char *buf, size_t cap)
{
    if (us < 1000000)
        snprintf(buf, cap, "%.3f ms", (double)us / 1e3);
    else if (us < 600000000ull)
        snprintf(buf, cap, "%.3f s", (double)us / 1e6);
    else
        snprintf(buf, cap, "%.1f min", (double)us / 6e7);
    return buf;
}

void cli_air_summary_print(FILE *f, const struct cli_air_summary *s,
                           const struct edhoc_netacct_radio *radio, const char *heading,
                           const char *subject, const char *host_what)
{
    char a1[24], a2[24], a3[24], a4[24], a5[24];
    char host[160] = " (host time not measured: the handshake did not complete)";
    if (s->host_ms >= 0)
        snprintf(host, sizeof host, " + host %s (%s)",
                 cli_air_time((uint64_t)(s->host_ms * 1000 + 0.5), a5, sizeof a5), host_what);
    fprintf(f, "  %s (docs/airtime.md): %u frames%s, %s on air, duty-cycle wait %s, link time %s;\n"
               "  end-to-end %s = %s one after another on the link%s;\n"
               "  energy initiator %.3f mJ, responder %.3f mJ, radio %s (%s)\n",
            heading, s->frames, s->fragments ? " (SCHC fragments among them)" : "",
            cli_air_time(s->air_us, a1, sizeof a1), cli_air_time(s->wait_us, a2, sizeof a2),
            cli_air_time(s->link_us, a3, sizeof a3), cli_air_time(s->e2e_us, a4, sizeof a4),
            subject, host, s->initiator_mj, s->responder_mj, radio->name, radio->source);
}

static json_t *ms_json(uint64_t us)
{
    return json_real((double)us / 1e3);
}

json_t *cli_net_air_params_json(const struct edhoc_netacct_link *l)
{
    bool f154 = l->type == EDHOC_NETACCT_LINK_802154, ble = l->type == EDHOC_NETACCT_LINK_BLE,
         lora = l->type == EDHOC_NETACCT_LINK_LORAWAN;
    json_t *o = json_object();
    cli_json_set(o, "csma_be", cli_json_int_or_null(f154, l->csma_be));
    cli_json_set(o, "retries", cli_json_int_or_null(f154, l->retries));
    cli_json_set(o, "ble_phy", cli_json_string_or_null(ble ? (l->ble_phy == 2 ? "2m" : "1m")
                                                          : NULL));
    cli_json_set(o, "ble_data_length", cli_json_int_or_null(ble, l->ble_data_length));
    cli_json_set(o, "ble_encrypted", ble ? json_boolean(l->ble_encrypted) : json_null());
    cli_json_set(o, "ble_interval_ms", ble ? json_real(l->ble_interval_us / 1e3) : json_null());
    cli_json_set(o, "region", cli_json_string_or_null(
                                  lora ? (l->region == EDHOC_NETACCT_US915 ? "us915" : "eu868")
                                       : NULL));
    cli_json_set(o, "data_rate", cli_json_int_or_null(lora, l->data_rate));
    cli_json_set(o, "duty_cycle_percent",
                 lora ? json_real(l->duty_cycle_ppm / 1e4) : json_null());
    cli_json_set(o, "rx1_delay_ms", cli_json_int_or_null(lora, l->rx1_delay_ms));
    cli_json_set(o, "rx2_delay_ms", cli_json_int_or_null(lora, l->rx2_delay_ms));
    cli_json_set(o, "preamble", cli_json_int_or_null(lora, l->preamble));
    return o;
}

json_t *cli_net_radio_json(const struct edhoc_netacct_radio *r)
{
    json_t *o = json_object();
    cli_json_set(o, "name", json_string(r->name));
    cli_json_set(o, "volts", json_real(r->volts));
    cli_json_set(o, "tx_ma", json_real(r->tx_ma));
    cli_json_set(o, "rx_ma", json_real(r->rx_ma));
    cli_json_set(o, "tx_startup_us", json_integer(r->tx_startup_us));
    cli_json_set(o, "rx_startup_us", json_integer(r->rx_startup_us));
    cli_json_set(o, "source", json_string(r->source));
    return o;
}

json_t *cli_net_air_json(const struct edhoc_netacct_radio *r, const struct edhoc_netacct_air *a)
{
    struct edhoc_netacct_energy s = edhoc_netacct_energy_of(r, a, true);
    struct edhoc_netacct_energy p = edhoc_netacct_energy_of(r, a, false);
    json_t *o = json_object();
    cli_json_set(o, "air_ms", ms_json(a->tx_us));
    cli_json_set(o, "link_ms", ms_json(a->link_us));
    cli_json_set(o, "wait_ms", ms_json(a->wait_us));
    cli_json_set(o, "fragments", json_integer(a->fragments));
    cli_json_set(o, "schc_residue_bits",
                 cli_json_int_or_null(a->schc_known, (long long)a->schc_residue_bits));
    cli_json_set(o, "sender_mj", json_real((s.tx_j + s.rx_j) * 1e3));
    cli_json_set(o, "receiver_mj", json_real((p.tx_j + p.rx_j) * 1e3));
    return o;
}

void cli_air_summary_add(struct cli_air_summary *s, const struct edhoc_netacct_radio *r,
                         const struct edhoc_netacct_air *a, unsigned frames, bool from_initiator)
{
    struct edhoc_netacct_energy snd = edhoc_netacct_energy_of(r, a, true);
    struct edhoc_netacct_energy rcv = edhoc_netacct_energy_of(r, a, false);
    double es = (snd.tx_j + snd.rx_j) * 1e3, er = (rcv.tx_j + rcv.rx_j) * 1e3;
    s->initiator_mj += from_initiator ? es : er;
    s->responder_mj += from_initiator ? er : es;
    s->air_us += a->tx_us;
    s->wait_us += a->wait_us;
    s->frames += frames;
    s->fragments += a->fragments;
}

json_t *cli_air_summary_json(const struct cli_air_summary *s)
{
    json_t *o = json_object();
    cli_json_set(o, "frames", json_integer(s->frames));
    cli_json_set(o, "fragments", json_integer(s->fragments));
    cli_json_set(o, "air_ms", ms_json(s->air_us));
    cli_json_set(o, "wait_ms", ms_json(s->wait_us));
    cli_json_set(o, "link_ms", ms_json(s->link_us));
    cli_json_set(o, "host_ms", s->host_ms >= 0 ? json_real(s->host_ms) : json_null());
    cli_json_set(o, "end_to_end_ms", ms_json(s->e2e_us));
    cli_json_set(o, "initiator_mj", json_real(s->initiator_mj));
    cli_json_set(o, "responder_mj", json_real(s->responder_mj));
    return o;
}
const struct cli_opt cli_net_opts_pcap[] = {
    {CLI_OPT_ID_NET, "pcap", "FILE", H_PCAP},
    {0, NULL, NULL, NULL},
};

int cli_net_take(struct cli_net_opts *o, const struct cli_opt_parser *p)
{
    bool used = false;
    int rc = cli_net_parse_option(o, p->spec->name, p->flag, p->value, &used);
    return rc > 0 ? 0 : -1;
}

int cli_net_capture_open(const struct cli_net_opts *o, const char *prog,
                         struct edhoc_capture **cap)
{
    *cap = NULL;
    if (!o->pcap)
        return 0;
    char err[256] = "";
    *cap = edhoc_capture_open(o->pcap, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    if (!*cap) {
        fprintf(stderr, "edhoc-cli %s: --pcap %s: %s\n", prog, o->pcap, err[0] ? err : "cannot open");
        return -1;
    }
    return 0;
}

json_t *cli_net_total_json(const struct edhoc_netacct_total *t, bool link)
{
    json_t *o = json_object();
    cli_json_set(o, "messages", json_integer(t->messages));
    cli_json_set(o, "datagrams", json_integer(t->datagrams));
    cli_json_set(o, "edhoc_bytes", json_integer((json_int_t)t->edhoc));
    cli_json_set(o, "coap_bytes", json_integer((json_int_t)t->coap));
    cli_json_set(o, "udp_bytes", json_integer((json_int_t)t->udp));
    cli_json_set(o, "ip_bytes", json_integer((json_int_t)t->ip));
    cli_json_set(o, "frames", cli_json_int_or_null(link, t->frames));
    cli_json_set(o, "link_bytes", cli_json_int_or_null(link, (long long)t->link));
    return o;
}

json_t *cli_net_link_json(const struct edhoc_netacct_link *link)
{
    if (link->type == EDHOC_NETACCT_LINK_NONE)
        return json_null();
    bool lowpan = link->type == EDHOC_NETACCT_LINK_802154;
    const char *type = lowpan ? "802.15.4"
                       : link->type == EDHOC_NETACCT_LINK_BLE     ? "ble"
                       : link->type == EDHOC_NETACCT_LINK_LORAWAN ? "lorawan"
                                                                  : "mtu";
    bool mtu = link->type == EDHOC_NETACCT_LINK_MTU;
    json_t *o = json_object();
    cli_json_set(o, "type", json_string(type));
    cli_json_set(o, "mtu", cli_json_int_or_null(mtu, link->mtu));
    cli_json_set(o, "frame_overhead", cli_json_int_or_null(mtu, link->frame_overhead));
    cli_json_set(o, "frame_max", cli_json_int_or_null(lowpan, EDHOC_NETACCT_802154_FRAME_MAX));
    cli_json_set(o, "mac_header", cli_json_int_or_null(lowpan, link->mac_header));
    cli_json_set(o, "security", cli_json_int_or_null(lowpan, link->security));
    cli_json_set(o, "fcs", cli_json_int_or_null(lowpan, link->fcs));
    cli_json_set(o, "phy_header", cli_json_int_or_null(lowpan, link->phy_header));
    cli_json_set(o, "hop_limit", cli_json_int_or_null(lowpan, link->hop_limit));
    cli_json_set(o, "air", cli_net_air_params_json(link));
    char desc[1024];
    edhoc_netacct_link_describe(link, desc, sizeof desc);
    cli_json_set(o, "description", json_string(desc));
    return o;
}

int cli_exit_for_client_open(int rc)
{
    return rc == EDHOC_TRANSPORT_ERR_RESOLVE || rc == EDHOC_TRANSPORT_ERR_UNREACHABLE
               ? CLI_EXIT_TIMEOUT
               : rc == EDHOC_TRANSPORT_ERR_ARG ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
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

#include "edhoc/oscore.h"

/* Add an Echo option to a plain request. */
long cli_coap_with_echo(const uint8_t *req, size_t len, const uint8_t *echo, size_t echo_len,
                      uint8_t *out, size_t cap)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(req, len, &m))
        return -1;
    for (size_t i = 0; i < m.option_count; i++) {
        if (m.options[i].number == COAP_OPT_ECHO) {
            m.options[i].value = echo;
            m.options[i].len = (uint16_t)echo_len;
            long n = edhoc_coap_msg_encode(&m, out, cap);
            return n < 0 ? -1 : n;
        }
    }
    if (edhoc_coap_msg_add_option(&m, COAP_OPT_ECHO, echo, echo_len))
        return -1;
    long n = edhoc_coap_msg_encode(&m, out, cap);
    return n < 0 ? -1 : n;
}

void cli_unprotected_answer_text(const uint8_t *msg, size_t len, char *out, size_t cap)
{
    uint8_t code = 0;
    int cf;
    const uint8_t *pl = NULL;
    size_t pll = 0;
    char cn[48];
    if (!msg || cli_coap_response_view(msg, len, &code, &cf, &pl, &pll)) {
        snprintf(out, cap, "the peer answered without OSCORE (an unreadable CoAP message)");
        return;
    }
    int n = snprintf(out, cap, "the peer answered without OSCORE: %s",
                     cli_coap_code_name(code, cn, sizeof cn));
    if (n < 0 || (size_t)n >= cap || !pll)
        return;
    /* The diagnostic payload of the OSCORE errors (RFC 8613 Section 8.2)
     * is short text; anything else is shown in part, as hex. */
    size_t room = cap - (size_t)n;
    if (printable(pl, pll))
        snprintf(out + n, room, ": %.*s%s", (int)(pll > 120 ? 120 : pll), (const char *)pl,
                 pll > 120 ? "..." : "");
    else {
        size_t k = pll > 24 ? 24 : pll;
        int w = snprintf(out + n, room, ": payload ");
        for (size_t i = 0; w > 0 && (size_t)(n + w) + 3 < cap && i < k; i++)
            w += snprintf(out + n + w, cap - (size_t)(n + w), "%02x", pl[i]);
        if (k < pll && w > 0 && (size_t)(n + w) + 4 < cap)
            snprintf(out + n + w, cap - (size_t)(n + w), "...");
    }
    if (pll == 15 && !memcmp(pl, "Replay detected", 15)) {
        size_t used = strlen(out);
        snprintf(out + used, cap - used,
                 " (the server has seen this sequence number: the context was used elsewhere, "
                 "by another tool or with another state directory)");
    }
}

static long piv_value(const uint8_t *msg, size_t len)
{
    struct oscore_option oo;
    if (oscore_message_option(msg, len, &oo) || !oo.piv)
        return -1;
    long v = 0;
    for (size_t i = 0; i < oo.piv_len; i++)
        v = v << 8 | oo.piv[i];
    return v;
}

/* One OSCORE request (with its Echo retry) and its response. */
static int exchange_one(struct edhoc_transport *t, struct oscore_context *ctx, const uint8_t *req,
                        size_t req_len, uint8_t *out, size_t cap, uint64_t deadline,
                        struct cli_dgram_log *log, const char *log_name,
                        const struct cli_oscore_xfer *x, struct cli_oscore_result *r)
{
    uint8_t *prot = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    uint8_t *resp = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    uint8_t *again = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    int rc = -1;
    if (!prot || !resp || !again) {
        r->oscore_err = OSCORE_ERR_BUFFER;
        goto out;
    }
    const uint8_t *cur = req;
    size_t cur_len = req_len;
    for (int attempt = 1; attempt <= 2; attempt++) {
        r->attempts = attempt;
        struct oscore_binding b;
        long pn = oscore_protect_request(ctx, cur, cur_len, prot, EDHOC_TRANSPORT_MAX_MESSAGE, &b);
        if (pn < 0) {
            r->oscore_err = (int)pn;
            goto out;
        }
        r->request_bytes = (size_t)pn;
        r->requests++;
        if (x && x->sent)
            x->sent(x->user, &b);
        if (log && log_name) {
            char name[40];
            snprintf(name, sizeof name, "%s%s", log_name, attempt > 1 ? " (Echo)" : "");
            cli_dgram_log_begin(log, name);
        }
        uint64_t now = cli_now_ns();
        int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000);
        long rn = edhoc_transport_client_request(t, prot, (size_t)pn, resp,
                                                 EDHOC_TRANSPORT_MAX_MESSAGE, left);
        if (rn < 0) {
            r->transport_err = (int)rn;
            goto out;
        }
        r->response_bytes = (size_t)rn;
        struct coap_msg outer;
        if (edhoc_coap_msg_parse(resp, (size_t)rn, &outer)) {
            r->oscore_err = OSCORE_ERR_MALFORMED;
            goto out;
        }
        if (!edhoc_coap_msg_find_option(&outer, COAP_OPT_OSCORE)) {
            r->unprotected_error = true;
            r->unprotected_code = outer.code;
            long n = (size_t)rn <= cap ? rn : -1;
            if (n > 0)
                memcpy(out, resp, (size_t)rn);
            r->response_len = n;
            goto out;
        }
        long un = oscore_unprotect_response(ctx, &b, resp, (size_t)rn, out, cap);
        if (un < 0) {
            r->oscore_err = (int)un;
            goto out;
        }
        r->response_len = un;
        r->response_piv = piv_value(resp, (size_t)rn);
        struct coap_msg inner;
        if (attempt == 1 && !edhoc_coap_msg_parse(out, (size_t)un, &inner) &&
            inner.code == COAP_CODE_UNAUTHORIZED) {
            const struct coap_option *echo = edhoc_coap_msg_find_option(&inner, COAP_OPT_ECHO);
            if (echo && echo->len <= 40) {
                r->echo_piv = r->response_piv;
                uint8_t ev[40];
                memcpy(ev, echo->value, echo->len);
                long an = cli_coap_with_echo(req, req_len, ev, echo->len, again, EDHOC_TRANSPORT_MAX_MESSAGE);
                if (an < 0) {
                    r->oscore_err = OSCORE_ERR_TOO_LARGE;
                    goto out;
                }
                cur = again;
                cur_len = (size_t)an;
                continue;
            }
        }
        rc = 0;
        break;
    }
out:
    free(prot);
    free(resp);
    free(again);
    return rc;
}

/* The Block option `number` of a message, if any. */
static bool inner_block(const uint8_t *msg, size_t len, uint16_t number, struct edhoc_block *b)
{
    struct coap_msg m;
    if (edhoc_coap_msg_parse(msg, len, &m))
        return false;
    const struct coap_option *o = edhoc_coap_msg_find_option(&m, number);
    return o && edhoc_block_parse(o->value, o->len, b) == 0;
}

int cli_oscore_exchange_bw(struct edhoc_transport *t, struct oscore_context *ctx,
                           const uint8_t *req, size_t req_len, uint8_t *out, size_t cap,
                           int timeout_ms, struct cli_dgram_log *log, const char *log_name,
                           const struct cli_oscore_xfer *x, struct cli_oscore_result *r)
{
    memset(r, 0, sizeof *r);
    r->echo_piv = r->response_piv = -1;
    uint64_t deadline = cli_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    unsigned bs = x && x->block_size ? x->block_size : 1024;
    int szx = edhoc_block_szx(bs);
    struct coap_msg m;
    if (szx < 0 || edhoc_coap_msg_parse(req, req_len, &m)) {
        r->oscore_err = OSCORE_ERR_MALFORMED;
        return -1;
    }
    uint8_t *blk = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    uint8_t *part = malloc(EDHOC_TRANSPORT_MAX_MESSAGE);
    struct edhoc_bw_collect c;
    edhoc_bw_collect_init(&c, x && x->max_body ? x->max_body : cap > 1024 ? cap - 1024 : cap);
    int rc = -1;
    if (!blk || !part) {
        r->oscore_err = OSCORE_ERR_BUFFER;
        goto out;
    }
    if (m.payload_len > bs) {
        /* RFC 7959 Section 2.5, inside OSCORE: one block per request, the
         * next one after the server's 2.31 Continue. */
        uint32_t num = 0;
        unsigned cur_szx = (unsigned)szx;
        for (;;) {
            long bl = edhoc_bw_request_block(req, req_len, cur_szx, num, blk,
                                             EDHOC_TRANSPORT_MAX_MESSAGE);
            if (bl <= 0) {
                r->bw_err = bl < 0 ? (int)bl : EDHOC_BW_ERR_ORDER;
                goto out;
            }
            if (exchange_one(t, ctx, blk, (size_t)bl, out, cap, deadline, log, log_name, x, r))
                goto out;
            r->block1_blocks++;
            struct edhoc_block b;
            if (r->response_len > 1 && out[1] == COAP_CODE(2, 31) &&
                inner_block(out, (size_t)r->response_len, COAP_OPT_BLOCK1, &b)) {
                size_t done = (size_t)(num + 1) * edhoc_block_size(cur_szx);
                if (b.szx < cur_szx)
                    cur_szx = b.szx; /* the server asks for smaller blocks */
                num = (uint32_t)(done / edhoc_block_size(cur_szx));
                if (done >= m.payload_len) {
                    r->bw_err = EDHOC_BW_ERR_ORDER; /* Continue after the last block */
                    goto out;
                }
                continue;
            }
            break;
        }
    } else if (exchange_one(t, ctx, req, req_len, out, cap, deadline, log, log_name, x, r)) {
        goto out;
    }
    struct edhoc_block b2;
    if (!inner_block(out, (size_t)r->response_len, COAP_OPT_BLOCK2, &b2) ||
        (!b2.more && b2.num == 0)) {
        rc = 0;
        goto out;
    }
    /* RFC 7959 Section 2.4: ask for the next block until M = 0. */
    int cr = edhoc_bw_collect_add(&c, out, (size_t)r->response_len);
    r->block2_blocks = 1;
    while (cr == 1) {
        long nl = edhoc_bw_request_next(req, req_len, c.szx, c.next_num, blk,
                                        EDHOC_TRANSPORT_MAX_MESSAGE);
        if (nl <= 0) {
            cr = nl < 0 ? (int)nl : EDHOC_BW_ERR_MALFORMED;
            break;
        }
        if (exchange_one(t, ctx, blk, (size_t)nl, part, EDHOC_TRANSPORT_MAX_MESSAGE, deadline,
                         log, log_name, x, r))
            goto out;
        r->block2_blocks++;
        cr = edhoc_bw_collect_add(&c, part, (size_t)r->response_len);
    }
    if (cr < 0) {
        r->bw_err = cr;
        goto out;
    }
    /* The last block's header and options around the whole body. */
    long wl = edhoc_bw_collect_message(&c, part, (size_t)r->response_len, out, cap);
    if (wl < 0) {
        r->bw_err = (int)wl;
        goto out;
    }
    r->response_len = wl;
    rc = 0;
out:
    if (log)
        log->current = -1;
    edhoc_bw_collect_free(&c);
    free(blk);
    free(part);
    return rc;
}

int cli_oscore_exchange(struct edhoc_transport *t, struct oscore_context *ctx, const uint8_t *req,
                        size_t req_len, uint8_t *out, size_t cap, int timeout_ms,
                        struct cli_dgram_log *log, const char *log_name,
                        struct cli_oscore_result *r)
{
    return cli_oscore_exchange_bw(t, ctx, req, req_len, out, cap, timeout_ms, log, log_name, NULL,
                                  r);
}

