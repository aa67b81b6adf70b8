/*
 * Time on air and energy: the PHY timing of IEEE 802.15.4, Bluetooth LE
 * and LoRa, the LoRaWAN data-rate tables, radio profiles, and the
 * end-to-end time of messages sent one after another. Pure computation;
 * docs/airtime.md derives every figure with its source.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/netacct.h"

/* IEEE 802.15.4-2015 Section 12.3 (O-QPSK PHY, 2450 MHz band): 62.5 ksymbol/s,
 * 4 bits a symbol: 16 us a symbol, 32 us a byte. SHR = preamble 4 + SFD 1,
 * PHR 1 (Section 12.1). */
#define O_QPSK_BYTE_US 32
#define O_QPSK_SHR_PHR 6

uint64_t edhoc_netacct_802154_frame_us(size_t psdu)
{
    return (uint64_t)(O_QPSK_SHR_PHR + psdu) * O_QPSK_BYTE_US;
}

/* Bluetooth Core 5.x Vol 6 Part B Section 2.1: LL packet = preamble (1
 * octet LE 1M, 2 octets LE 2M) + access address 4 + PDU + CRC 3; data
 * channel PDU (Section 2.4) = header 2 + payload + MIC 4 when encrypted
 * and the payload is not empty (Section 5.1.3.1, Vol 6 Part E Section
 * 1). LE 1M carries 1 bit a microsecond, LE 2M 2 (Vol 6 Part A). */
uint64_t edhoc_netacct_ble_packet_us(unsigned phy, size_t payload, bool encrypted)
{
    if (phy != 1 && phy != 2)
        return 0;
    size_t bytes = (phy == 1 ? 1 : 2) + 4 + 2 + payload + (encrypted && payload ? 4 : 0) + 3;
    return (uint64_t)bytes * 8 / phy;
}

/* SX1276/77/78/79 datasheet Rev. 4 Section 4.1.1.7 (Semtech AN1200.13):
 *   Tsym = 2^SF / BW
 *   Tpreamble = (n_preamble + 4.25) * Tsym
 *   n_payload = 8 + max(ceil((8 PL - 4 SF + 28 + 16 CRC - 20 IH) /
 *                            (4 (SF - 2 DE))) * (CR + 4), 0)
 *   ToA = Tpreamble + n_payload * Tsym
 * Every supported bandwidth divides 2^SF * 10^6 into a multiple of 4 us,
 * so the quarter symbol of the preamble is exact in microseconds. */
uint64_t edhoc_netacct_lora_toa_us(size_t pl, unsigned sf, unsigned bw_hz, unsigned cr,
                                   unsigned preamble, bool implicit, bool crc, bool ldro)
{
    if (sf < 6 || sf > 12 || cr < 1 || cr > 4 || pl > 255 ||
        (bw_hz != 125000 && bw_hz != 250000 && bw_hz != 500000))
        return 0;
    uint64_t tsym = ((uint64_t)1000000 << sf) / bw_hz;
    long num = 8 * (long)pl - 4 * (long)sf + 28 + (crc ? 16 : 0) - (implicit ? 20 : 0);
    long den = 4 * ((long)sf - (ldro ? 2 : 0));
    long blocks = num > 0 ? (num + den - 1) / den : 0;
    uint64_t n_payload = 8 + (uint64_t)blocks * (cr + 4);
    return (uint64_t)preamble * tsym + tsym * 17 / 4 + n_payload * tsym;
}

/* LoRaWAN Regional Parameters RP002-1.0.x:
 *   EU863-870 "Data rate and end-device output power encoding": DR0..DR5 =
 *   SF12..SF7 at 125 kHz; "EU863-870 maximum payload size (repeater
 *   compatible)": N = 51, 51, 51, 115, 222, 222. RX1 with RX1DROffset 0
 *   answers at the uplink's data rate.
 *   US902-928: uplink DR0..DR3 = SF10..SF7 at 125 kHz, DR4 = SF8 at
 *   500 kHz, N = 11, 53, 125, 242, 242; RX1 (RX1DROffset 0) maps DR0..DR4
 *   to DR10, DR11, DR12, DR13, DR13 = SF10..SF7 at 500 kHz, N = 242 (DR8
 *   and DR9 are not reached with offset 0).
 * Low-data-rate optimisation is on when the symbol time exceeds 16 ms
 * (SX1276 datasheet Section 4.1.1.6): SF11 and SF12 at 125 kHz. */
int edhoc_netacct_lora_data_rate(enum edhoc_netacct_region region, unsigned data_rate,
                                 bool downlink, struct edhoc_netacct_lora_dr *out)
{
    static const size_t eu_n[6] = {51, 51, 51, 115, 222, 222};
    static const size_t us_n[5] = {11, 53, 125, 242, 242};
    if (!out)
        return EDHOC_NETACCT_ERR_ARG;
    memset(out, 0, sizeof *out);
    if (region == EDHOC_NETACCT_EU868) {
        if (data_rate > 5)
            return EDHOC_NETACCT_ERR_ARG;
        out->dr = data_rate;
        out->sf = 12 - data_rate;
        out->bw_hz = 125000;
        out->max_payload = eu_n[data_rate];
    } else if (region == EDHOC_NETACCT_US915) {
        if (data_rate > 4)
            return EDHOC_NETACCT_ERR_ARG;
        if (downlink) {
            out->dr = data_rate == 4 ? 13 : 10 + data_rate;
            out->sf = data_rate == 4 ? 7 : 10 - data_rate;
            out->bw_hz = 500000;
            out->max_payload = 242;
        } else {
            out->dr = data_rate;
            out->sf = data_rate == 4 ? 8 : 10 - data_rate;
            out->bw_hz = data_rate == 4 ? 500000 : 125000;
            out->max_payload = us_n[data_rate];
        }
    } else {
        return EDHOC_NETACCT_ERR_ARG;
    }
    out->ldro = ((1000000ull << out->sf) / out->bw_hz) > 16000;
    return 0;
}

/* ---- Radio profiles ---- */

/* The figures below are typical values from each datasheet as commonly
 * quoted; they were not checked against the datasheets' tables here
 * (docs/airtime.md, "Radio profiles", says what could be confirmed and
 * where). The source string of each profile, printed with every energy
 * figure, says so too; --radio-profile FILE takes measured ones. */
static const struct edhoc_netacct_radio builtin_radios[] = {
    /* TI CC2538 datasheet (SWRS096), Section 5.4 "Electrical
     * Characteristics": RX 20 mA, TX 24 mA at 0 dBm, 3 V (typical values
     * from the datasheet, not verified here); start-up charged as the
     * 802.15.4 aTurnaroundTime (12 symbols, 192 us). */
    {"cc2538", 3.0, 24.0, 20.0, 192, 192,
     "TI CC2538 datasheet SWRS096: TX 24 mA at 0 dBm, RX 20 mA, 3 V (typical, not verified "
     "here); 192 us turnaround"},
    /* Nordic nRF52840 Product Specification v1.x, radio current with
     * DC/DC at 3 V: TX 4.8 mA at 0 dBm, RX 4.6 mA at 1 Mbit/s (typical
     * values from the datasheet; a secondary summary quotes the same, the
     * specification's table not verified here); fast ramp-up 40 us. */
    {"nrf52840", 3.0, 4.8, 4.6, 40, 40,
     "Nordic nRF52840 PS v1.x: TX 4.8 mA at 0 dBm, RX 4.6 mA (DC/DC, 3 V; typical, not "
     "verified here); fast ramp-up 40 us"},
    /* Semtech SX1276 datasheet Rev. 4, Table 6 "Power Consumption
     * Specification": TX 29 mA at +13 dBm on RFO_HF, RX 10.8 mA (LnaBoost
     * off, band 1), 3.3 V (typical values from the datasheet, not verified
     * here; its feature list quotes an RX current of 9.9 mA). Start-up
     * (tens of us) is negligible beside LoRa symbols: not charged. */
    {"sx1276", 3.3, 29.0, 10.8, 0, 0,
     "Semtech SX1276 datasheet Rev. 4 Table 6: TX 29 mA at +13 dBm (RFO_HF), RX 10.8 mA, 3.3 V "
     "(typical, not verified here)"},
};

int edhoc_netacct_radio_builtin(const char *name, struct edhoc_netacct_radio *out)
{
    if (!name || !out)
        return EDHOC_NETACCT_ERR_ARG;
    for (size_t i = 0; i < sizeof builtin_radios / sizeof builtin_radios[0]; i++)
        if (!strcmp(name, builtin_radios[i].name)) {
            *out = builtin_radios[i];
            return 0;
        }
    return EDHOC_NETACCT_ERR_ARG;
}

struct edhoc_netacct_radio edhoc_netacct_radio_for(enum edhoc_netacct_link_type type)
{
    struct edhoc_netacct_radio r;
    memset(&r, 0, sizeof r);
    const char *name = type == EDHOC_NETACCT_LINK_802154    ? "cc2538"
                       : type == EDHOC_NETACCT_LINK_BLE     ? "nrf52840"
                       : type == EDHOC_NETACCT_LINK_LORAWAN ? "sx1276"
                                                            : NULL;
    if (name)
        edhoc_netacct_radio_builtin(name, &r);
    return r;
}

static bool parse_number(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi))
        return false;
    *out = v;
    return true;
}

int edhoc_netacct_radio_parse(const char *text, size_t len, struct edhoc_netacct_radio *out,
                              char *why, size_t why_cap)
{
    if (!text || !out)
        return EDHOC_NETACCT_ERR_ARG;
    struct edhoc_netacct_radio r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "file");
    bool have_v = false, have_tx = false, have_rx = false;
    size_t pos = 0;
    for (unsigned line_no = 1; pos < len; line_no++) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        char line[256];
        size_t n = end - pos;
        if (n >= sizeof line) {
            snprintf(why, why_cap, "line %u: longer than %zu characters", line_no, sizeof line - 1);
            return EDHOC_NETACCT_ERR_ARG;
        }
        memcpy(line, text + pos, n);
        line[n] = 0;
        pos = end < len ? end + 1 : end;
        if (memchr(line, 0, n)) {
            snprintf(why, why_cap, "line %u: a NUL byte", line_no);
            return EDHOC_NETACCT_ERR_ARG;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *k = line;
        while (*k == ' ' || *k == '\t' || *k == '\r')
            k++;
        size_t kl = strlen(k);
        while (kl && (k[kl - 1] == ' ' || k[kl - 1] == '\t' || k[kl - 1] == '\r'))
            k[--kl] = 0;
        if (!*k)
            continue;
        char *eq = strchr(k, '=');
        if (!eq) {
            snprintf(why, why_cap, "line %u: expected key = value", line_no);
            return EDHOC_NETACCT_ERR_ARG;
        }
        char *v = eq + 1;
        *eq = 0;
        for (size_t e = strlen(k); e && (k[e - 1] == ' ' || k[e - 1] == '\t'); e--)
            k[e - 1] = 0;
        while (*v == ' ' || *v == '\t')
            v++;
        double d = 0;
        bool ok = true;
        if (!strcmp(k, "name")) {
            snprintf(r.name, sizeof r.name, "%s", v);
        } else if (!strcmp(k, "source")) {
            snprintf(r.source, sizeof r.source, "%s", v);
        } else if (!strcmp(k, "volts")) {
            ok = have_v = parse_number(v, 0.1, 60, &d);
            r.volts = d;
        } else if (!strcmp(k, "tx_ma")) {
            ok = have_tx = parse_number(v, 0, 10000, &d);
            r.tx_ma = d;
        } else if (!strcmp(k, "rx_ma")) {
            ok = have_rx = parse_number(v, 0, 10000, &d);
            r.rx_ma = d;
        } else if (!strcmp(k, "tx_startup_us") || !strcmp(k, "rx_startup_us")) {
            ok = parse_number(v, 0, 1e7, &d) && d == (double)(unsigned)d;
            if (k[0] == 't')
                r.tx_startup_us = (unsigned)d;
            else
                r.rx_startup_us = (unsigned)d;
        } else {
            snprintf(why, why_cap,
                     "line %u: unknown key '%.40s' (name, volts, tx_ma, rx_ma, "
                     "tx_startup_us, rx_startup_us, source)",
                     line_no, k);
            return EDHOC_NETACCT_ERR_ARG;
        }
        if (!ok) {
            snprintf(why, why_cap,
                     "line %u: %s: not a number in range (volts 0.1..60, "
                     "currents 0..10000 mA, start-up 0..10000000 whole us)",
                     line_no, k);
            return EDHOC_NETACCT_ERR_ARG;
        }
    }
    if (!have_v || !have_tx || !have_rx) {
        snprintf(why, why_cap, "volts, tx_ma and rx_ma are required (missing %s)",
                 !have_v    ? "volts"
                 : !have_tx ? "tx_ma"
                            : "rx_ma");
        return EDHOC_NETACCT_ERR_ARG;
    }
    if (!r.source[0])
        snprintf(r.source, sizeof r.source, "profile file");
    *out = r;
    return 0;
}

struct edhoc_netacct_energy edhoc_netacct_energy_of(const struct edhoc_netacct_radio *r,
                                                    const struct edhoc_netacct_air *air,
                                                    bool sender)
{
    struct edhoc_netacct_energy e = {0, 0};
    if (!r || !air)
        return e;
    uint64_t tx = sender ? air->tx_us : air->peer_tx_us;
    uint64_t rx = sender ? air->rx_us : air->peer_rx_us;
    unsigned txs = sender ? air->tx_starts : air->peer_tx_starts;
    unsigned rxs = sender ? air->rx_starts : air->peer_rx_starts;
    /* E = V * I * t: volts * mA * us = 1e-9 J. */
    e.tx_j = r->volts * r->tx_ma * ((double)tx + (double)txs * r->tx_startup_us) * 1e-9;
    e.rx_j = r->volts * r->rx_ma * ((double)rx + (double)rxs * r->rx_startup_us) * 1e-9;
    return e;
}

void edhoc_netacct_air_add(struct edhoc_netacct_air *a, const struct edhoc_netacct_air *b)
{
    if (!a || !b)
        return;
    a->tx_us += b->tx_us;
    a->rx_us += b->rx_us;
    a->peer_tx_us += b->peer_tx_us;
    a->peer_rx_us += b->peer_rx_us;
    a->tx_starts += b->tx_starts;
    a->rx_starts += b->rx_starts;
    a->peer_tx_starts += b->peer_tx_starts;
    a->peer_rx_starts += b->peer_rx_starts;
    a->link_us += b->link_us;
    a->wait_us += b->wait_us;
    a->fragments += b->fragments;
    a->schc_residue_bits += b->schc_residue_bits;
    a->schc_known = a->schc_known || b->schc_known;
}

uint64_t edhoc_netacct_air_sequence(const struct edhoc_netacct_link *link,
                                    const struct edhoc_netacct_step *steps, size_t n)
{
    if (!link || !steps)
        return 0;
    uint64_t t = 0;
    uint64_t free_at[2] = {0, 0}; /* [initiator, responder]: end of the duty-cycle wait */
    for (size_t i = 0; i < n; i++) {
        if (!steps[i].air)
            continue;
        int who = steps[i].from_initiator ? 0 : 1;
        uint64_t start = t + steps[i].host_us;
        if (start < free_at[who])
            start = free_at[who];
        /* BLE: data moves only in connection events, one interval apart
         * (Core Vol 6 Part B Section 4.5.1); an answer computed after an
         * event goes in the next one. */
        if (link->type == EDHOC_NETACCT_LINK_BLE && link->ble_interval_us && i > 0) {
            uint64_t iv = link->ble_interval_us;
            start = (start + iv - 1) / iv * iv;
        }
        t = start + steps[i].air->link_us;
        free_at[who] = t + steps[i].air->wait_us;
    }
    return t;
}
