/*
 * edhoc-cli bytes CAPTURE: the bytes EDHOC and OSCORE put on the air,
 * message by message and layer by layer, read from a pcap/pcapng capture
 * (this tool's --pcap, tcpdump, tshark, a sniffer).
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bytes_compare.h"
#include "commands.h"
#include "edhoc/capture.h"
#include "edhoc/netacct.h"
#include "util.h"

static void bytes_usage(FILE *out)
{
    fprintf(out,
        "usage: edhoc-cli bytes [options] CAPTURE\n"
        "\n"
        "Reads a pcap or pcapng file (Ethernet, Linux cooked v1/v2, raw IP or loopback\n"
        "link types), finds every EDHOC exchange (CoAP POSTs to the EDHOC resource,\n"
        "Content-Formats 64/65, the RFC 9668 EDHOC option, bare message_1 recognized by\n"
        "its structure; responses matched by token and addresses) and the OSCORE traffic\n"
        "after it, and prints each message's size per layer: EDHOC message, CoAP\n"
        "message (UDP payload), UDP datagram, IP packet, captured frame, and frames and\n"
        "bytes on the modelled link. Method, suites and C_I come from message_1, C_R\n"
        "from message_3's prefix or the OSCORE kid; ID_CRED types are encrypted and are\n"
        "inferred from sizes where only one reading fits (marked \"inferred\").\n"
        "Malformed or truncated packets are reported and skipped.\n"
        "\n"
        "  --json               machine-readable output\n"
        "  --link TYPE          none (default) or 802.15.4\n"
        "  --link-mtu N         a generic link carrying at most N bytes of IP per frame\n"
        "  --frame-overhead N   bytes each frame adds on a --link-mtu link (default 0)\n"
        "  802.15.4 assumptions (defaults in brackets):\n"
        "  --mac-header N       MAC header bytes per frame [23: extended addresses,\n"
        "                       no PAN ID compression; 9 for short addresses]\n"
        "  --fcs N              frame check sequence [2]\n"
        "  --security N         link security header + MIC per frame [0]\n"
        "  --phy-header N       PHY bytes counted per frame [0; 6 for O-QPSK 2.4 GHz]\n"
        "  --addr MODE          how IPHC carries both addresses: ll (link-local, IID\n"
        "                       from the MAC, elided) [ll], ctx (context prefix, IID from\n"
        "                       the MAC), ctx16 (2 bytes), ctx64 (8 bytes), inline (16),\n"
        "                       auto (from each captured IPv6 address: link-local elided,\n"
        "                       global 8 or 2 bytes, multicast 1-16; IPv4/loopback as ll)\n"
        "  --hop-limit N        [64; 1, 64 and 255 are elided, others cost 1 byte]\n"
        "  --compare            EDHOC (x5chain, x5t, static DH) vs DTLS 1.2 (libcoap,\n"
        "                       OpenSSL) measured on loopback in one run; takes no\n"
        "                       CAPTURE (see edhoc-cli bytes --compare --help)\n"
        "\n"
        "Exit codes: 0 ok, 2 usage, 3 the file cannot be opened or is truncated/corrupt\n"
        "(the packets read before the damage are still reported).\n");
}

enum {
    OPT_JSON = 1000,
    OPT_LINK,
    OPT_LINK_MTU,
    OPT_FRAME_OVERHEAD,
    OPT_MAC_HEADER,
    OPT_FCS,
    OPT_SECURITY,
    OPT_PHY,
    OPT_ADDR,
    OPT_HOP_LIMIT,
    OPT_COMPARE,
    OPT_HELP,
};

static bool parse_uint(const char *s, unsigned max, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || v > max || s[0] == '-')
        return false;
    *out = (unsigned)v;
    return true;
}

static bool parse_addr_mode(const char *s, enum edhoc_netacct_addr_mode *m)
{
    static const struct {
        const char *name;
        enum edhoc_netacct_addr_mode mode;
    } modes[] = {
        {"ll", EDHOC_NETACCT_ADDR_LINK_LOCAL_MAC},  {"ctx", EDHOC_NETACCT_ADDR_CONTEXT_MAC},
        {"ctx16", EDHOC_NETACCT_ADDR_CONTEXT_16},   {"ctx64", EDHOC_NETACCT_ADDR_CONTEXT_64},
        {"inline", EDHOC_NETACCT_ADDR_INLINE},      {"auto", EDHOC_NETACCT_ADDR_AUTO},
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(s, modes[i].name) == 0) {
            *m = modes[i].mode;
            return true;
        }
    return false;
}

static void format_endpoint(int version, const uint8_t *addr, uint16_t port, char *buf,
                            size_t cap)
{
    char a[INET6_ADDRSTRLEN];
    if (!inet_ntop(version == 6 ? AF_INET6 : AF_INET, addr, a, sizeof a))
        snprintf(a, sizeof a, "?");
    if (version == 6)
        snprintf(buf, cap, "[%s]:%u", a, port);
    else
        snprintf(buf, cap, "%s:%u", a, port);
}

static const char *outcome(const struct edhoc_capture_exchange *ex)
{
    if (edhoc_capture_exchange_failed(ex))
        return "failed";
    return ex->completed ? "completed" : "incomplete";
}

/* Milliseconds from the first to the last handshake message (0 when
 * fewer than two). */
static double handshake_ms(const struct edhoc_capture_exchange *ex)
{
    const struct timespec *first = NULL, *last = NULL;
    for (size_t i = 0; i < ex->n_msgs; i++) {
        enum edhoc_capture_msg_type t = ex->msgs[i].type;
        if (t == EDHOC_CAPTURE_MSG_OSCORE_REQUEST || t == EDHOC_CAPTURE_MSG_OSCORE_RESPONSE ||
            t == EDHOC_CAPTURE_MSG_EMPTY)
            continue;
        if (!first)
            first = &ex->msgs[i].ts;
        last = &ex->msgs[i].ts;
    }
    if (!first || first == last)
        return 0;
    return (double)(last->tv_sec - first->tv_sec) * 1e3 +
           (double)(last->tv_nsec - first->tv_nsec) / 1e6;
}

static void suites_text(const struct edhoc_capture_exchange *ex, char *buf, size_t cap)
{
    size_t w = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ex->n_suites && w < cap; i++)
        w += (size_t)snprintf(buf + w, cap - w, "%s%d", i ? ", " : "", ex->suites[i]);
}

/* ---- Text ---- */

static void print_row(const char *name, unsigned packet, const char *dir, unsigned dgrams,
                      const char *edhoc, size_t coap, size_t udp, size_t ip, const char *frame,
                      bool link, unsigned link_frames, size_t link_bytes)
{
    char pkt[16];
    if (packet)
        snprintf(pkt, sizeof pkt, "%u", packet);
    else
        pkt[0] = '\0';
    printf("  %-20s %5s %-4s %6u %6s %6zu %6zu %6zu %6s", name, pkt, dir, dgrams, edhoc, coap, udp,
           ip, frame);
    if (link)
        printf(" %7u %7zu", link_frames, link_bytes);
    printf("\n");
}

/* An OSCORE request with its response, as one total. */
static bool oscore_pair(const struct edhoc_capture_exchange *ex, size_t resp,
                        struct edhoc_netacct_total *t)
{
    const struct edhoc_capture_msg *r = &ex->msgs[resp];
    if (r->type != EDHOC_CAPTURE_MSG_OSCORE_RESPONSE || r->answers < 0)
        return false;
    const struct edhoc_capture_msg *q = &ex->msgs[r->answers];
    if (q->type != EDHOC_CAPTURE_MSG_OSCORE_REQUEST)
        return false; /* the response to a combined request belongs to the handshake row */
    edhoc_netacct_total_clear(t);
    t->messages = 2;
    t->datagrams = q->datagrams + r->datagrams;
    t->coap = q->coap + r->coap;
    t->udp = q->udp + r->udp;
    t->ip = q->ip + r->ip;
    t->frames = q->link_frames + r->link_frames;
    t->link = q->link_bytes + r->link_bytes;
    return true;
}

static void print_total(const char *name, const struct edhoc_netacct_total *t, bool link,
                        bool show_edhoc)
{
    char e[24];
    snprintf(e, sizeof e, "%zu", t->edhoc);
    print_row(name, 0, "", t->datagrams, show_edhoc ? e : "-", t->coap, t->udp, t->ip, "", link,
              t->frames, t->link);
}

static void print_text(const char *path, int dlt, const struct edhoc_capture_analysis *a,
                       const char *read_error)
{
    bool link = a->link.type != EDHOC_NETACCT_LINK_NONE;
    char desc[512];
    edhoc_netacct_link_describe(&a->link, desc, sizeof desc);
    printf("Capture %s (%s, link type %d): %u packets, %u UDP datagrams, %u CoAP messages\n",
           path, edhoc_capture_dlt_name(dlt) ? edhoc_capture_dlt_name(dlt) : "?", dlt, a->packets,
           a->udp, a->coap);
    if (link)
        printf("Link model: %s\n", desc);
    unsigned done = 0, failed = 0;
    for (size_t i = 0; i < a->n_ex; i++) {
        const struct edhoc_capture_exchange *ex = &a->ex[i];
        char cl[64], sv[64], suites[64], ci[40], cr[40];
        format_endpoint(ex->ip_version, ex->client, ex->client_port, cl, sizeof cl);
        format_endpoint(ex->ip_version, ex->server, ex->server_port, sv, sizeof sv);
        suites_text(ex, suites, sizeof suites);
        edhoc_capture_cid_format(ex->c_i, ex->c_i_len, ci, sizeof ci);
        if (ex->c_r_known)
            edhoc_capture_cid_format(ex->c_r, ex->c_r_len, cr, sizeof cr);
        else
            snprintf(cr, sizeof cr, "unknown (encrypted in message_2)");
        const char *oc = outcome(ex);
        if (strcmp(oc, "completed") == 0)
            done++;
        else if (strcmp(oc, "failed") == 0)
            failed++;

        printf("\nExchange %zu: initiator %s -> responder %s (IPv%d), framing %s\n", i + 1, cl, sv,
               ex->ip_version, ex->framing);
        printf("  method %d, suite %d (SUITES_I %s), C_I %s, C_R %s\n", ex->method,
               ex->n_suites ? ex->suites[ex->n_suites - 1] : -1, suites, ci, cr);
        printf("  ID_CRED_R: %s\n  ID_CRED_I: %s\n", ex->id_cred_r[0] ? ex->id_cred_r : "unknown",
               ex->id_cred_i[0] ? ex->id_cred_i : "unknown");
        if (ex->error_code != -1)
            printf("  outcome: %s (EDHOC error, ERR_CODE %d)", oc, ex->error_code);
        else
            printf("  outcome: %s", oc);
        printf(", handshake messages spanning %.3f ms\n", handshake_ms(ex));
        printf("  %-20s %5s %-4s %6s %6s %6s %6s %6s %6s", "message", "pkt", "dir", "dgrams",
               "EDHOC", "CoAP", "UDP", "IP", "frame");
        if (link)
            printf(" %7s %7s", "frames", "bytes");
        printf("\n");
        for (size_t k = 0; k < ex->n_msgs; k++) {
            const struct edhoc_capture_msg *m = &ex->msgs[k];
            char e[24], fr[24];
            bool is_edhoc = m->type <= EDHOC_CAPTURE_MSG_ERROR || m->type == EDHOC_CAPTURE_MSG_3_OSCORE;
            snprintf(e, sizeof e, is_edhoc ? "%zu" : "-", m->edhoc);
            snprintf(fr, sizeof fr, "%zu", m->frame);
            print_row(edhoc_capture_msg_type_name(m->type), m->packet,
                      m->from_initiator ? "I>R" : "R>I", m->datagrams, e, m->coap, m->udp, m->ip,
                      fr, link, m->link_frames, m->link_bytes);
        }
        if (ex->msgs_dropped)
            printf("  (%u more messages not listed; counted in the totals)\n", ex->msgs_dropped);
        print_total("handshake total", &ex->totals.handshake, link, true);
        unsigned pair = 0;
        for (size_t k = 0; k < ex->n_msgs; k++) {
            struct edhoc_netacct_total t;
            char name[40];
            if (!oscore_pair(ex, k, &t))
                continue;
            snprintf(name, sizeof name, "OSCORE exchange %u", ++pair);
            print_total(name, &t, link, false);
        }
        if (ex->totals.oscore.datagrams)
            print_total("OSCORE total", &ex->totals.oscore, link, false);
        if (ex->totals.other.datagrams)
            print_total("other (ACK/RST)", &ex->totals.other, link, false);
        print_total("exchange total", &ex->totals.all, link, true);
    }
    size_t total = a->n_ex + a->ex_evicted;
    done += a->ex_evicted_completed;
    failed += a->ex_evicted_failed;
    printf("\nSummary: %zu EDHOC exchange(s): %u completed, %u failed, %zu incomplete\n", total,
           done, failed, total - done - failed);
    if (a->ex_evicted)
        printf("  (the first %u are not listed above; they are in the totals)\n", a->ex_evicted);
    if (a->n_ex) {
        printf("  %-20s %5s %-4s %6s %6s %6s %6s %6s %6s", "", "", "", "dgrams", "EDHOC", "CoAP",
               "UDP", "IP", "");
        if (link)
            printf(" %7s %7s", "frames", "bytes");
        printf("\n");
        print_total("all handshakes", &a->totals.handshake, link, true);
        print_total("all OSCORE", &a->totals.oscore, link, false);
        print_total("everything", &a->totals.all, link, true);
    }
    printf("  other traffic: %u CoAP message(s) outside EDHOC exchanges, %u packet(s) ignored "
           "(not CoAP/UDP/IP), %u skipped\n",
           a->unmatched, a->ignored, a->skipped);
    if (a->n_issues) {
        printf("\nIssues:\n");
        for (size_t i = 0; i < a->n_issues; i++)
            printf("  packet %u: %s\n", a->issues[i].packet, a->issues[i].text);
        if (a->issues_dropped)
            printf("  (%u more)\n", a->issues_dropped);
    }
    if (read_error)
        printf("\nThe capture file is damaged after packet %u: %s\n", a->packets, read_error);
}

/* ---- JSON ---- */

static void json_total(const char *name, const struct edhoc_netacct_total *t, bool comma)
{
    printf("\"%s\":{\"messages\":%u,\"datagrams\":%u,\"edhoc\":%zu,\"coap\":%zu,\"udp\":%zu,"
           "\"ip\":%zu,\"link_frames\":%u,\"link_bytes\":%zu}%s",
           name, t->messages, t->datagrams, t->edhoc, t->coap, t->udp, t->ip, t->frames, t->link,
           comma ? "," : "");
}

static void json_cid(const uint8_t *v, size_t len)
{
    char buf[40];
    edhoc_capture_cid_format(v, len, buf, sizeof buf);
    printf("{\"hex\":");
    cli_json_hex(stdout, v, len);
    printf(",\"text\":");
    cli_json_string(stdout, buf);
    printf("}");
}

static void print_json(const char *path, int dlt, const struct edhoc_capture_analysis *a,
                       const char *read_error)
{
    char desc[512];
    edhoc_netacct_link_describe(&a->link, desc, sizeof desc);
    printf("{\"file\":");
    cli_json_string(stdout, path);
    printf(",\"link_type\":%d,\"link_type_name\":", dlt);
    cli_json_string(stdout, edhoc_capture_dlt_name(dlt) ? edhoc_capture_dlt_name(dlt) : "?");
    printf(",\"link\":{\"model\":\"%s\",\"description\":",
           a->link.type == EDHOC_NETACCT_LINK_802154 ? "802.15.4"
           : a->link.type == EDHOC_NETACCT_LINK_MTU  ? "mtu"
                                                     : "none");
    cli_json_string(stdout, desc);
    printf("},\"packets\":%u,\"udp\":%u,\"coap\":%u,\"exchanges\":[", a->packets, a->udp, a->coap);
    for (size_t i = 0; i < a->n_ex; i++) {
        const struct edhoc_capture_exchange *ex = &a->ex[i];
        char cl[64], sv[64];
        format_endpoint(ex->ip_version, ex->client, ex->client_port, cl, sizeof cl);
        format_endpoint(ex->ip_version, ex->server, ex->server_port, sv, sizeof sv);
        printf("%s{\"initiator\":\"%s\",\"responder\":\"%s\",\"ip_version\":%d,\"framing\":\"%s\","
               "\"outcome\":\"%s\",\"method\":%d,\"suite\":%d,\"suites_i\":[",
               i ? "," : "", cl, sv, ex->ip_version, ex->framing, outcome(ex), ex->method,
               ex->n_suites ? ex->suites[ex->n_suites - 1] : -1);
        for (size_t k = 0; k < ex->n_suites; k++)
            printf("%s%d", k ? "," : "", ex->suites[k]);
        printf("],\"c_i\":");
        json_cid(ex->c_i, ex->c_i_len);
        printf(",\"c_r\":");
        if (ex->c_r_known)
            json_cid(ex->c_r, ex->c_r_len);
        else
            printf("null");
        printf(",\"id_cred_r\":");
        cli_json_string(stdout, ex->id_cred_r[0] ? ex->id_cred_r : "unknown");
        printf(",\"id_cred_i\":");
        cli_json_string(stdout, ex->id_cred_i[0] ? ex->id_cred_i : "unknown");
        if (ex->error_code != -1)
            printf(",\"error_code\":%d", ex->error_code);
        printf(",\"handshake_ms\":%.3f", handshake_ms(ex));
        printf(",\"messages\":[");
        for (size_t k = 0; k < ex->n_msgs; k++) {
            const struct edhoc_capture_msg *m = &ex->msgs[k];
            printf("%s{\"name\":\"%s\",\"packet\":%u,\"from\":\"%s\",\"datagrams\":%u,"
                   "\"retransmissions\":%u,\"edhoc\":%zu,\"coap\":%zu,\"udp\":%zu,\"ip\":%zu,"
                   "\"frame\":%zu,\"link_frames\":%u,\"link_bytes\":%zu,\"answers\":%d}",
                   k ? "," : "", edhoc_capture_msg_type_name(m->type), m->packet,
                   m->from_initiator ? "initiator" : "responder", m->datagrams,
                   m->retransmissions, m->edhoc, m->coap, m->udp, m->ip, m->frame, m->link_frames,
                   m->link_bytes, m->answers);
        }
        printf("],\"oscore_exchanges\":[");
        bool first = true;
        for (size_t k = 0; k < ex->n_msgs; k++) {
            struct edhoc_netacct_total t;
            if (!oscore_pair(ex, k, &t))
                continue;
            printf("%s{\"request\":%d,\"response\":%zu,", first ? "" : ",", ex->msgs[k].answers,
                   k);
            json_total("totals", &t, false);
            printf("}");
            first = false;
        }
        printf("],\"totals\":{");
        json_total("handshake", &ex->totals.handshake, true);
        json_total("oscore", &ex->totals.oscore, true);
        json_total("other", &ex->totals.other, true);
        json_total("all", &ex->totals.all, false);
        printf("}}");
    }
    printf("],\"exchanges_not_listed\":%u,\"summary\":{", a->ex_evicted);
    json_total("handshake", &a->totals.handshake, true);
    json_total("oscore", &a->totals.oscore, true);
    json_total("other", &a->totals.other, true);
    json_total("all", &a->totals.all, true);
    printf("\"unmatched\":%u,\"ignored\":%u,\"skipped\":%u},\"issues\":[", a->unmatched,
           a->ignored, a->skipped);
    for (size_t i = 0; i < a->n_issues; i++) {
        printf("%s{\"packet\":%u,\"text\":", i ? "," : "", a->issues[i].packet);
        cli_json_string(stdout, a->issues[i].text);
        printf("}");
    }
    printf("],\"error\":");
    if (read_error)
        cli_json_string(stdout, read_error);
    else
        printf("null");
    printf("}\n");
}

int cmd_bytes(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"link", required_argument, NULL, OPT_LINK},
        {"link-mtu", required_argument, NULL, OPT_LINK_MTU},
        {"frame-overhead", required_argument, NULL, OPT_FRAME_OVERHEAD},
        {"mac-header", required_argument, NULL, OPT_MAC_HEADER},
        {"fcs", required_argument, NULL, OPT_FCS},
        {"security", required_argument, NULL, OPT_SECURITY},
        {"phy-header", required_argument, NULL, OPT_PHY},
        {"addr", required_argument, NULL, OPT_ADDR},
        {"hop-limit", required_argument, NULL, OPT_HOP_LIMIT},
        {"compare", no_argument, NULL, OPT_COMPARE},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    /* --compare is a different command on the same name: it parses its
     * own options. */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--compare") == 0)
            return cmd_bytes_compare(argc, argv);
    }
    bool json = false;
    struct edhoc_netacct_link l154 = edhoc_netacct_link_802154_default();
    struct edhoc_netacct_link link = {.type = EDHOC_NETACCT_LINK_NONE};
    unsigned mtu = 0, overhead = 0;
    bool use_154 = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        unsigned v;
        switch (c) {
        case OPT_JSON: json = true; break;
        case OPT_LINK:
            if (strcmp(optarg, "802.15.4") == 0 || strcmp(optarg, "802154") == 0)
                use_154 = true;
            else if (strcmp(optarg, "none") == 0)
                use_154 = false;
            else {
                fprintf(stderr, "edhoc-cli bytes: unknown link '%s' (none, 802.15.4)\n", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case OPT_LINK_MTU:
        case OPT_FRAME_OVERHEAD:
        case OPT_MAC_HEADER:
        case OPT_FCS:
        case OPT_SECURITY:
        case OPT_PHY:
        case OPT_HOP_LIMIT:
            if (!parse_uint(optarg, c == OPT_HOP_LIMIT ? 255 : 65535, &v) ||
                (c == OPT_LINK_MTU && v == 0)) {
                fprintf(stderr, "edhoc-cli bytes: bad number '%s' for %s\n", optarg,
                        argv[optind - 1]);
                return CLI_EXIT_USAGE;
            }
            if (c == OPT_LINK_MTU) mtu = v;
            else if (c == OPT_FRAME_OVERHEAD) overhead = v;
            else if (c == OPT_MAC_HEADER) l154.mac_header = v;
            else if (c == OPT_FCS) l154.fcs = v;
            else if (c == OPT_SECURITY) l154.security = v;
            else if (c == OPT_PHY) l154.phy_header = v;
            else l154.hop_limit = v;
            break;
        case OPT_ADDR:
            if (!parse_addr_mode(optarg, &l154.src_addr)) {
                fprintf(stderr, "edhoc-cli bytes: unknown address mode '%s' (ll, ctx, ctx16, "
                                "ctx64, inline, auto)\n", optarg);
                return CLI_EXIT_USAGE;
            }
            l154.dst_addr = l154.src_addr;
            break;
        case OPT_COMPARE: /* an abbreviation such as --comp */
            return cmd_bytes_compare(argc, argv);
        case OPT_HELP: bytes_usage(stdout); return CLI_EXIT_OK;
        default:
            fprintf(stderr, "edhoc-cli bytes: unknown option '%s'\n", argv[optind - 1]);
            bytes_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "edhoc-cli bytes: expected exactly one capture file\n");
        bytes_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (use_154 && mtu) {
        fprintf(stderr, "edhoc-cli bytes: --link 802.15.4 and --link-mtu exclude each other\n");
        return CLI_EXIT_USAGE;
    }
    if (use_154) {
        link = l154;
        if (link.mac_header + link.fcs + link.security + 24 > EDHOC_NETACCT_802154_FRAME_MAX) {
            fprintf(stderr, "edhoc-cli bytes: 802.15.4 per-frame overhead %u leaves no room in "
                            "127-byte frames\n", link.mac_header + link.fcs + link.security);
            return CLI_EXIT_USAGE;
        }
    } else if (mtu) {
        link = edhoc_netacct_link_mtu(mtu, overhead);
    }

    const char *path = argv[optind];
    char err[512];
    struct edhoc_capture_reader *r = edhoc_capture_reader_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "edhoc-cli bytes: cannot read %s: %s\n", path, err);
        return CLI_EXIT_INPUT;
    }
    int dlt = edhoc_capture_reader_dlt(r);
    struct edhoc_capture_analysis *a = malloc(sizeof *a);
    if (!a) {
        edhoc_capture_reader_close(r);
        fprintf(stderr, "edhoc-cli bytes: out of memory\n");
        return CLI_EXIT_INTERNAL;
    }
    edhoc_capture_analysis_init(a, &link);
    const char *read_error = NULL;
    char read_error_buf[512];
    bool link_ok = true;
    {
        /* An undecodable link type makes every packet unreadable: say so
         * once instead of once per packet. */
        struct edhoc_capture_packet probe;
        uint8_t empty[1] = {0};
        if (edhoc_capture_packet_parse(dlt, empty, 0, 0, &probe) == EDHOC_CAPTURE_ERR_LINK)
            link_ok = false;
    }
    if (!link_ok) {
        fprintf(stderr, "edhoc-cli bytes: %s: link type %d is not supported (Ethernet, Linux "
                        "cooked, raw IP and loopback are)\n", path, dlt);
        /* DLT_IEEE802_15_4_WITHFCS, _NONASK_PHY, _NOFCS, _TAP */
        if (dlt == 195 || dlt == 215 || dlt == 230 || dlt == 283)
            fprintf(stderr, "edhoc-cli bytes: 802.15.4/6LoWPAN frames are not decompressed; "
                            "capture on the border router's IP interface and use "
                            "--link 802.15.4 to model the radio side\n");
        edhoc_capture_reader_close(r);
        free(a);
        return CLI_EXIT_INPUT;
    }
    for (unsigned n = 1;; n++) {
        const uint8_t *frame;
        size_t caplen, wire;
        struct timespec ts;
        int rc = edhoc_capture_reader_next(r, &frame, &caplen, &wire, &ts);
        if (rc == 0)
            break;
        if (rc < 0) {
            snprintf(read_error_buf, sizeof read_error_buf, "%s",
                     edhoc_capture_reader_error(r)[0] ? edhoc_capture_reader_error(r)
                                                      : edhoc_capture_strerror(rc));
            read_error = read_error_buf;
            break;
        }
        edhoc_capture_analysis_frame(a, n, dlt, frame, caplen, wire, &ts);
    }
    edhoc_capture_reader_close(r);
    if (json)
        print_json(path, dlt, a, read_error);
    else
        print_text(path, dlt, a, read_error);
    free(a);
    if (read_error) {
        fprintf(stderr, "edhoc-cli bytes: %s is truncated or corrupt: %s\n", path, read_error);
        return CLI_EXIT_INPUT;
    }
    return CLI_EXIT_OK;
}
