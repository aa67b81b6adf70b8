#include "net_report.h"
#include "edhoc_client.h"
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
#include "output/json_out.h"
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

void cli_print_payload(FILE *f, const uint8_t *p, size_t len)
{
    if (!len)
        return;
    if (cli_coap_payload_printable(p, len))
        fprintf(f, "%.*s", (int)len, (const char *)p);
    else
        cli_hex_print(f, p, len);
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
            fprintf(stderr,
                    "edhoc-cli %s: --link: expected 802.15.4, ble, lorawan or none, got "
                    "'%s'\n",
                    prog, value);
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

#define H_PCAP                                                                                     \
    "write every datagram sent or received to FILE (pcap, raw IP with\n"                           \
    "the real addresses and ports)"
#define H_LINK                                                                                     \
    "also count frames, bytes, time on air and energy on IEEE 802.15.4\n"                          \
    "(6LoWPAN), Bluetooth LE (RFC 7668) or LoRaWAN (SCHC); the\n"                                  \
    "assumptions are printed with the table (docs/airtime.md)"
#define AIR_OPTS                                                                                   \
    {CLI_OPT_ID_NET, "csma-be", "N",                                                               \
     "802.15.4: backoff exponent of the mean CSMA-CA backoff (0..8,\n"                             \
     "default 3 = macMinBE)"},                                                                     \
        {CLI_OPT_ID_NET, "retries", "N",                                                           \
         "802.15.4: retransmissions assumed per frame (0..7, default 0)"},                         \
        {CLI_OPT_ID_NET, "phy", "1m|2m", "BLE: LE 1M or LE 2M PHY (default 1m)"},                  \
        {CLI_OPT_ID_NET, "ble-data-length", "N",                                                   \
         "BLE: largest link-layer payload, 27..251 (default 27)"},                                 \
        {CLI_OPT_ID_NET, "ble-interval", "MS",                                                     \
         "BLE: connection interval, 7.5..4000 ms in steps of 1.25 (default\n"                      \
         "7.5); a message waits for the next connection event"},                                   \
        {CLI_OPT_ID_NET, "ble-unencrypted", NULL,                                                  \
         "BLE: no link-layer encryption (no 4-byte MIC per PDU)"},                                 \
        {CLI_OPT_ID_NET, "region", "eu868|us915", "LoRaWAN: regional parameters (default eu868)"}, \
        {CLI_OPT_ID_NET, "data-rate", "N",                                                         \
         "LoRaWAN: uplink data rate (eu868 0..5 = SF12..SF7, us915 0..4;\n"                        \
         "default 0); downlinks use RX1 with RX1DROffset 0"},                                      \
        {CLI_OPT_ID_NET, "duty-cycle", "PCT",                                                      \
         "LoRaWAN: duty cycle per sub-band in percent (0.001..100; default\n"                      \
         "1 for eu868, 100 = none for us915)"},                                                    \
    {                                                                                              \
        CLI_OPT_ID_NET, "radio-profile", "NAME|FILE",                                              \
            "energy from cc2538, nrf52840, sx1276 or a key=value file (volts,\n"                   \
            "tx_ma, rx_ma, tx_startup_us, rx_startup_us); default by link"                         \
    }
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
            return air_error(prog, "%s: expected 0..7 (macMaxFrameRetries), got '%s'", flag, value);
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
        if (!parse_double(value, 7.5, 4000, &d) || (long)(d * 1000 + 0.5) % 1250 != 0)
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
            return air_error(prog,
                             "%s: '%s' is neither a built-in profile (cc2538, nrf52840, "
                             "sx1276) nor a readable file",
                             flag, value);
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
    fprintf(f,
            "  %s (docs/airtime.md): %u frames%s, %s on air, duty-cycle wait %s, link time %s;\n"
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
    cli_json_set(o, "ble_phy",
                 cli_json_string_or_null(ble ? (l->ble_phy == 2 ? "2m" : "1m") : NULL));
    cli_json_set(o, "ble_data_length", cli_json_int_or_null(ble, l->ble_data_length));
    cli_json_set(o, "ble_encrypted", ble ? json_boolean(l->ble_encrypted) : json_null());
    cli_json_set(o, "ble_interval_ms", ble ? json_real(l->ble_interval_us / 1e3) : json_null());
    cli_json_set(o, "region",
                 cli_json_string_or_null(
                     lora ? (l->region == EDHOC_NETACCT_US915 ? "us915" : "eu868") : NULL));
    cli_json_set(o, "data_rate", cli_json_int_or_null(lora, l->data_rate));
    cli_json_set(o, "duty_cycle_percent", lora ? json_real(l->duty_cycle_ppm / 1e4) : json_null());
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

int cli_net_capture_open(const struct cli_net_opts *o, const char *prog, struct edhoc_capture **cap)
{
    *cap = NULL;
    if (!o->pcap)
        return 0;
    char err[256] = "";
    *cap = edhoc_capture_open(o->pcap, EDHOC_CAPTURE_DLT_RAW, err, sizeof err);
    if (!*cap) {
        fprintf(stderr, "edhoc-cli %s: --pcap %s: %s\n", prog, o->pcap,
                err[0] ? err : "cannot open");
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
    const char *type = lowpan                                     ? "802.15.4"
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
    return edhoc_client_status_for_open(rc);
}
