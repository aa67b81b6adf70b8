/*
 * edhoc-cli bytes CAPTURE: the bytes EDHOC and OSCORE put on the air,
 * message by message and layer by layer, read from a pcap/pcapng capture
 * (this tool's --pcap, tcpdump, tshark, a sniffer). With --compare, no
 * capture: EDHOC against DTLS 1.2 measured on loopback (bytes_compare.c).
 */
#include <stdio.h>
#include <string.h>

#include "bytes_capture.h"
#include "bytes_compare.h"
#include "bytes_decrypt.h"
#include "output/bytes_output.h"
#include "commands.h"
#include "edhoc/netacct.h"
#include "keylog_read.h"
#include "net_report.h"
#include "util.h"

enum {
    OPT_JSON = 1,
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
    OPT_TIMEOUT,
    OPT_KEYLOG,
};

static const struct cli_opt compare_opts[] = {
    {OPT_COMPARE, "compare", NULL,
     "instead of reading a capture: EDHOC against DTLS 1.2, measured on loopback (see "
     "above)"},
    {OPT_TIMEOUT, "timeout", "SECONDS",
     "with --compare: bound on the whole run (decimals allowed; 0.1..600, default 60)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt link_opts[] = {
    {OPT_LINK, "link", "802.15.4|ble|lorawan|none",
     "also count frames, bytes, time on air and energy on IEEE 802.15.4 (6LoWPAN IPHC, RFC 4944 "
     "fragmentation), Bluetooth LE (RFC 7668) or LoRaWAN (SCHC, RFC 8724/8824/9011); the "
     "assumptions are printed with the table (docs/airtime.md)"},
    {OPT_LINK_MTU, "link-mtu", "N",
     "also count frames of a generic link carrying at most N bytes "
     "of IP each"},
    {OPT_FRAME_OVERHEAD, "frame-overhead", "N",
     "bytes each frame adds on a --link-mtu link "
     "(default 0)"},
    {OPT_MAC_HEADER, "mac-header", "N",
     "802.15.4 MAC header bytes per frame (default 23: extended addresses, no PAN ID "
     "compression; 9 for short addresses)"},
    {OPT_FCS, "fcs", "N", "802.15.4 frame check sequence bytes (default 2)"},
    {OPT_SECURITY, "security", "N", "802.15.4 security header and MIC bytes per frame (default 0)"},
    {OPT_PHY, "phy-header", "N",
     "802.15.4 PHY bytes counted per frame (default 0; 6 for O-QPSK "
     "2.4 GHz)"},
    {OPT_HOP_LIMIT, "hop-limit", "N",
     "IPv6 hop limit on the 802.15.4 link (default 64; 1, 64 and "
     "255 are elided, others cost 1 byte)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt capture_opts[] = {
    {OPT_ADDR, "addr", "MODE",
     "how IPHC carries the captured addresses on the 802.15.4 link: ll (link-local, IID from "
     "the MAC, elided; default), ctx (context prefix, IID from the MAC), ctx16 (2 bytes), ctx64 "
     "(8 bytes), inline (16), auto (from each captured IPv6 address: link-local elided, global 8 "
     "or 2 bytes, multicast 1-16; IPv4 and loopback as ll)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt keylog_opts[] = {
    {OPT_KEYLOG, "keylog", "FILE",
     "open the capture's EDHOC and OSCORE messages with a key log: the directory initiator "
     "--keylog DIR wrote, or one file of its edhoc_secrets or oscore_contexts rows; each "
     "message then shows ID_CRED_R/I, EAD items and the decrypted OSCORE request or response "
     "(for Wireshark before 4.6), or which row was tried and why it failed"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt output_opts[] = {
    {OPT_JSON, "json", NULL,
     "machine-readable output (docs/json/bytes.schema.json; with --compare "
     "docs/json/bytes-compare.schema.json)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group bytes_groups[] = {
    {"Comparison", compare_opts},
    {"Link model (a capture, or --compare)", link_opts},
    {"Time and energy on the air (after --link)", cli_net_opts_air},
    {"Capture", capture_opts},
    {"Decryption (a capture)", keylog_opts},
    {"Output", output_opts},
    {NULL, NULL},
};

static const struct cli_opt_renamed bytes_renamed[] = {
    {"timeout-ms", "--timeout SECONDS with --compare (decimals allowed, e.g. --timeout 0.5)"},
    {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_bytes = {
    .name = "bytes",
    .synopsis = "CAPTURE [OPTIONS]\n       edhoc-cli bytes --compare [OPTIONS]",
    .description =
        "Reads a pcap or pcapng file (Ethernet, Linux cooked v1/v2, raw IP or loopback\n"
        "link types), finds every EDHOC exchange (CoAP POSTs to the EDHOC resource,\n"
        "Content-Formats 64/65, the RFC 9668 EDHOC option, bare message_1 recognized by\n"
        "its structure; responses matched by token and addresses) and the OSCORE traffic\n"
        "after it, and prints each message's size per layer: EDHOC message, CoAP\n"
        "message (UDP payload), UDP datagram, IP packet, captured frame, and frames and\n"
        "bytes on the modelled link. Method, suites and C_I come from message_1, C_R\n"
        "from message_3's prefix or the OSCORE kid; ID_CRED types are encrypted and are\n"
        "inferred from sizes where only one reading fits (marked \"inferred\").\n"
        "Malformed or truncated packets are reported and skipped.\n\n"
        "--compare runs, on loopback and in one run: EDHOC (method 0 suite 2 with the\n"
        "293-byte demo certificates by value, x5chain, and by reference, x5t; method 3\n"
        "suite 2 with CCS static-DH keys named by kid; C_I/C_R one byte) through this\n"
        "program's responder and initiator, and a DTLS 1.2 handshake of libcoap's\n"
        "OpenSSL backend with the same certificates, with raw public keys and with a\n"
        "PSK; each followed by one CoAP GET. Every datagram is counted by a relay\n"
        "between client and server.",
    .groups = bytes_groups,
    .renamed = bytes_renamed,
    .epilogue = "Exit codes: 0 ok (--compare: every run the libraries support succeeded); 1 a\n"
                "--compare run failed; 2 bad command line; 3 the capture cannot be opened or is\n"
                "truncated/corrupt (the packets read before the damage are still reported), or\n"
                "the --keylog file is refused or has a line that is not a row;\n"
                "130/143 --compare interrupted by SIGINT/SIGTERM (what completed is printed,\n"
                "marked partial).",
};

/* ---- A capture ---- */

static int read_capture(const char *path, const struct edhoc_netacct_link *link,
                        const struct edhoc_netacct_radio *radio, bool radio_set,
                        const char *keylog_path, bool json)
{
    struct keylog keys;
    char why[600];
    if (keylog_path && keylog_load(&keys, "--keylog", keylog_path, why, sizeof why)) {
        fprintf(stderr, "edhoc-cli bytes: %s\n", why);
        return CLI_EXIT_INPUT;
    }
    struct bytes_capture_run run;
    int rc = bytes_capture_analyse(path, link, &run, why, sizeof why);
    if (rc != BYTES_CAPTURE_OK) {
        if (rc == BYTES_CAPTURE_OPEN) {
            fprintf(stderr, "edhoc-cli bytes: cannot read %s: %s\n", path, why);
        } else if (rc == BYTES_CAPTURE_LINK) {
            fprintf(stderr,
                    "edhoc-cli bytes: %s: link type %d is not supported (Ethernet, Linux "
                    "cooked, raw IP and loopback are)\n",
                    path, run.dlt);
            /* DLT_IEEE802_15_4_WITHFCS, _NONASK_PHY, _NOFCS, _TAP */
            int dlt = run.dlt;
            if (dlt == 195 || dlt == 215 || dlt == 230 || dlt == 283)
                fprintf(stderr, "edhoc-cli bytes: 802.15.4/6LoWPAN frames are not decompressed; "
                                "capture on the border router's IP interface and use "
                                "--link 802.15.4 to model the radio side\n");
        } else {
            fprintf(stderr, "edhoc-cli bytes: %s\n", why);
        }
        if (keylog_path)
            keylog_free(&keys);
        return rc == BYTES_CAPTURE_NOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_INPUT;
    }
    struct bytes_decryption dec;
    struct bytes_report rep = {.path = path, .run = &run, .radio = *radio, .radio_set = radio_set};
    if (keylog_path) {
        if (bytes_decrypt_capture(path, &run, &keys, &dec, why, sizeof why)) {
            fprintf(stderr, "edhoc-cli bytes: %s: %s\n", path, why);
            keylog_free(&keys);
            bytes_capture_run_free(&run);
            return CLI_EXIT_INPUT;
        }
        rep.keylog = &keys;
        rep.dec = &dec;
    }
    if (json)
        bytes_print_json(&rep);
    else
        bytes_print_text(&rep);
    if (keylog_path) {
        bytes_decryption_free(&dec);
        keylog_free(&keys);
    }
    int exit_code = CLI_EXIT_OK;
    if (run.read_error[0]) {
        fprintf(stderr, "edhoc-cli bytes: %s is truncated or corrupt: %s\n", path, run.read_error);
        exit_code = CLI_EXIT_INPUT;
    }
    bytes_capture_run_free(&run);
    return exit_code;
}

/* ---- Command line ---- */

/* Where an option of one mode was given in the other. */
struct mode_use {
    const char *compare_only; /* --timeout */
    const char *capture_only; /* --addr */
    const char *needs_154;    /* --mac-header, --fcs, ... */
    const char *needs_mtu;    /* --frame-overhead */
};

int cmd_bytes(int argc, char **argv)
{
    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_bytes, argc, argv);
    struct bytes_compare_opts cmp;
    memset(&cmp, 0, sizeof cmp);
    cmp.timeout_ms = 60000;
    bool json = false, compare = false, use_154 = false;
    struct edhoc_netacct_link l154 = edhoc_netacct_link_802154_default();
    unsigned mtu = 0, overhead = 0;
    const char *path = NULL, *keylog_path = NULL;
    struct mode_use used = {0};
    static const char *const link_names[] = {"none", "802.15.4", "802154", "ble", "lorawan", NULL};
    struct edhoc_netacct_link air_link = {.type = EDHOC_NETACCT_LINK_NONE};
    struct edhoc_netacct_radio radio;
    bool radio_set = false;
    memset(&radio, 0, sizeof radio);
    for (;;) {
        enum cli_opt_status st = cli_opt_next(&p);
        if (st == CLI_OPT_DONE)
            break;
        if (st == CLI_OPT_EXIT)
            return p.exit_code;
        if (st == CLI_OPT_POSITIONAL) {
            if (path)
                return cli_opt_error(&p, "one capture file at a time (got '%s' and '%s')", path,
                                     p.value);
            path = p.value;
            continue;
        }
        long v = 0;
        int idx = 0;
        switch (p.opt->id) {
        case OPT_JSON: json = true; break;
        case OPT_COMPARE: compare = true; break;
        case OPT_TIMEOUT:
            if (cli_opt_seconds(&p, 0.1, 600, &cmp.timeout_ms))
                return CLI_EXIT_USAGE;
            used.compare_only = "--timeout";
            break;
        case OPT_LINK:
            if (cli_opt_choice(&p, link_names, &idx))
                return CLI_EXIT_USAGE;
            use_154 = idx == 1 || idx == 2;
            air_link = idx == 3   ? edhoc_netacct_link_ble_default()
                       : idx == 4 ? edhoc_netacct_link_lorawan_default()
                                  : (struct edhoc_netacct_link){.type = EDHOC_NETACCT_LINK_NONE};
            break;
        case CLI_OPT_ID_NET:
            if (cli_net_air_option("bytes", p.flag, p.value, use_154 ? &l154 : &air_link, &radio,
                                   &radio_set) < 0)
                return CLI_EXIT_USAGE;
            break;
        case OPT_LINK_MTU:
            if (cli_opt_long(&p, 1, 65535, &v))
                return CLI_EXIT_USAGE;
            mtu = (unsigned)v;
            break;
        case OPT_FRAME_OVERHEAD:
            if (cli_opt_long(&p, 0, 65535, &v))
                return CLI_EXIT_USAGE;
            overhead = (unsigned)v;
            used.needs_mtu = "--frame-overhead";
            break;
        case OPT_MAC_HEADER:
        case OPT_FCS:
        case OPT_SECURITY:
        case OPT_PHY:
        case OPT_HOP_LIMIT:
            if (cli_opt_long(&p, 0, p.opt->id == OPT_HOP_LIMIT ? 255 : 65535, &v))
                return CLI_EXIT_USAGE;
            if (p.opt->id == OPT_MAC_HEADER)
                l154.mac_header = (unsigned)v;
            else if (p.opt->id == OPT_FCS)
                l154.fcs = (unsigned)v;
            else if (p.opt->id == OPT_SECURITY)
                l154.security = (unsigned)v;
            else if (p.opt->id == OPT_PHY)
                l154.phy_header = (unsigned)v;
            else
                l154.hop_limit = (unsigned)v;
            used.needs_154 = p.opt->name;
            break;
        case OPT_KEYLOG: keylog_path = p.value; break;
        case OPT_ADDR:
            if (cli_opt_choice(&p, bytes_addr_names, &idx))
                return CLI_EXIT_USAGE;
            l154.src_addr = l154.dst_addr = bytes_addr_modes[idx];
            used.capture_only = "--addr";
            used.needs_154 = used.needs_154 ? used.needs_154 : "addr";
            break;
        }
    }
    /* An option the chosen mode would ignore is refused, with the mode it
     * belongs to. */
    if (compare && path)
        return cli_opt_error(&p, "--compare measures on loopback and reads no capture (got '%s')",
                             path);
    if (compare && keylog_path)
        return cli_opt_error(&p, "--keylog opens the messages of a capture; --compare reads none "
                                 "(leave one of them out)");
    if (compare && used.capture_only)
        return cli_opt_error(&p,
                             "%s describes the addresses of a capture; --compare runs on IPv4 "
                             "loopback, counted as link-local addresses",
                             used.capture_only);
    if (!compare && used.compare_only)
        return cli_opt_error(&p,
                             "%s bounds --compare; reading a capture is not bounded (add "
                             "--compare, or leave %s out)",
                             used.compare_only, used.compare_only);
    if (!compare && !path)
        return cli_opt_usage_error(&cli_spec_bytes, "which capture file? (or --compare)");
    if ((use_154 || air_link.type != EDHOC_NETACCT_LINK_NONE) && mtu)
        return cli_opt_error(&p, "--link and --link-mtu exclude each other");
    if (used.needs_154 && !use_154)
        return cli_opt_error(&p, "--%s describes 802.15.4 frames: add --link 802.15.4",
                             used.needs_154);
    if (used.needs_mtu && !mtu)
        return cli_opt_error(&p, "%s describes the frames of a --link-mtu link: add --link-mtu N",
                             used.needs_mtu);
    struct edhoc_netacct_link link = {.type = EDHOC_NETACCT_LINK_NONE};
    if (use_154) {
        link = l154;
        if (link.mac_header + link.fcs + link.security + 24 > EDHOC_NETACCT_802154_FRAME_MAX)
            return cli_opt_error(&p,
                                 "802.15.4 per-frame overhead %u leaves no room in 127-byte "
                                 "frames",
                                 link.mac_header + link.fcs + link.security);
    } else if (air_link.type != EDHOC_NETACCT_LINK_NONE) {
        link = air_link;
    } else if (mtu) {
        link = edhoc_netacct_link_mtu(mtu, overhead);
    }
    if (compare) {
        cmp.json = json;
        cmp.link = link;
        cmp.radio = radio;
        cmp.radio_set = radio_set;
    }
    if (compare) {
        cmp.verbose = p.verbose;
        cmp.quiet = p.quiet;
        return bytes_compare_run(&cmp);
    }
    return read_capture(path, &link, &radio, radio_set, keylog_path, json);
}
