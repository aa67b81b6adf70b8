/*
 * Fuzz the SCHC compression of CoAP messages (src/netacct/schc.c) and the
 * LoRaWAN accounting built on it: any input is either refused as not CoAP
 * or gets a residue from one rule, the same twice, a SCHC packet no larger
 * than the residue and the payload allow, and fragments that each fit the
 * data rate's payload and together carry the packet. The whole datagram
 * path (edhoc_netacct_datagram on LoRaWAN with the bytes) runs on it too.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "edhoc/netacct.h"

/* RFC 9011 Section 5.6.1: tiles of 10 bytes, a 1-byte fragment header,
 * the 4-byte RCS in the All-1. */
#define TILE 10
#define RCS  4

static void check_fragments(size_t packet, size_t max_payload)
{
    size_t sizes[EDHOC_NETACCT_MAX_FRAMES];
    unsigned n =
        edhoc_netacct_schc_fragments(packet, max_payload, sizes, sizeof sizes / sizeof sizes[0]);
    if (max_payload < 11) {
        if (n != 0)
            __builtin_trap();
        return;
    }
    size_t carried = 0;
    for (unsigned i = 0; i < n && i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i] > max_payload || sizes[i] < 2)
            __builtin_trap();
        carried += sizes[i] - 1; /* the fragment header */
    }
    /* Every byte of the packet travels, plus the RCS and at most a tile
     * of padding. */
    if (n && n <= sizeof sizes / sizeof sizes[0] &&
        (carried < packet + RCS || carried > packet + RCS + TILE))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned rule = 99;
    size_t payload = SIZE_MAX;
    long bits = edhoc_netacct_schc_residue(data, size, &rule, &payload);
    unsigned rule2 = 98;
    size_t payload2 = 0;
    if (edhoc_netacct_schc_residue(data, size, &rule2, &payload2) != bits)
        __builtin_trap();
    long packet = edhoc_netacct_schc_packet(data, size);
    if (bits < 0) {
        if (bits != EDHOC_NETACCT_ERR_ARG || packet != (long)size)
            __builtin_trap();
    } else {
        if (rule > 9 || rule2 != rule || payload > size || payload2 != payload)
            __builtin_trap();
        if (packet != (bits + 7) / 8 + (long)payload)
            __builtin_trap();
        /* Rule 0 carries IPv6 + UDP + the CoAP header whole. */
        if (rule == 0 && (size_t)bits != 8 * (EDHOC_NETACCT_IPV6_HEADER + EDHOC_NETACCT_UDP_HEADER +
                                              size - payload))
            __builtin_trap();
    }
    if (edhoc_netacct_schc_packet(NULL, size) != (long)size)
        __builtin_trap();
    static const size_t max_payloads[] = {0, 10, 11, 51, 115, 222, 242};
    for (size_t i = 0; i < sizeof max_payloads / sizeof max_payloads[0]; i++)
        check_fragments((size_t)packet, max_payloads[i]);

    /* The datagram on LoRaWAN, each region and a few data rates, both
     * directions: a result or a refusal, never more frames than the bound. */
    for (int region = 0; region < 2; region++) {
        for (unsigned dr = 0; dr <= 4; dr += 2) {
            struct edhoc_netacct_link link = edhoc_netacct_link_lorawan_default();
            link.region = region ? EDHOC_NETACCT_US915 : EDHOC_NETACCT_EU868;
            link.data_rate = dr;
            for (int up = 0; up < 2; up++) {
                struct edhoc_netacct_dgram d = {.udp_payload = size,
                                                .ipv6 = true,
                                                .src_port = up ? 40000 : 5683,
                                                .dst_port = up ? 5683 : 40000,
                                                .payload = data,
                                                .dir = up ? EDHOC_NETACCT_DIR_UP
                                                          : EDHOC_NETACCT_DIR_DOWN};
                struct edhoc_netacct_layers l;
                size_t frames[8];
                int rc = edhoc_netacct_datagram(&link, &d, &l, frames, 8);
                if (rc == 0 && (l.frames == 0 || l.frames > EDHOC_NETACCT_MAX_FRAMES ||
                                l.coap != size || l.downlink == (up != 0)))
                    __builtin_trap();
                if (rc != 0 && rc != EDHOC_NETACCT_ERR_ARG && rc != EDHOC_NETACCT_ERR_TOO_LARGE)
                    __builtin_trap();
            }
        }
    }
    return 0;
}
