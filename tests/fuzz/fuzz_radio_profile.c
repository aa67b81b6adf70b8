/*
 * Fuzz the radio profile parser (--radio-profile FILE, src/netacct/
 * airtime.c): any text is either refused with a reason (a NUL-terminated
 * line within the buffer) or gives a profile whose figures are inside the
 * documented ranges, with the same result twice; the energy computed from
 * an accepted profile is finite and not negative.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "edhoc/netacct.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct edhoc_netacct_radio r, r2;
    char why[128], why2[128];
    memset(why, 0x55, sizeof why);
    int rc = edhoc_netacct_radio_parse(text, size, &r, why, sizeof why);
    int rc2 = edhoc_netacct_radio_parse(text, size, &r2, why2, sizeof why2);
    if (rc != rc2)
        __builtin_trap();
    if (rc != 0) {
        if (rc != EDHOC_NETACCT_ERR_ARG || !memchr(why, 0, sizeof why) || strcmp(why, why2))
            __builtin_trap();
        return 0;
    }
    if (!(r.volts >= 0.1 && r.volts <= 60) || !(r.tx_ma >= 0 && r.tx_ma <= 10000) ||
        !(r.rx_ma >= 0 && r.rx_ma <= 10000) || r.tx_startup_us > 10000000 ||
        r.rx_startup_us > 10000000)
        __builtin_trap();
    if (!memchr(r.name, 0, sizeof r.name) || !memchr(r.source, 0, sizeof r.source))
        __builtin_trap();
    if (memcmp(&r, &r2, sizeof r))
        __builtin_trap();
    struct edhoc_netacct_air air = {.tx_us = 1000000,
                                    .rx_us = 500000,
                                    .peer_tx_us = 250000,
                                    .peer_rx_us = 1000000,
                                    .tx_starts = 2,
                                    .rx_starts = 1,
                                    .peer_tx_starts = 1,
                                    .peer_rx_starts = 2};
    for (int sender = 0; sender < 2; sender++) {
        struct edhoc_netacct_energy e = edhoc_netacct_energy_of(&r, &air, sender != 0);
        if (!isfinite(e.tx_j) || !isfinite(e.rx_j) || e.tx_j < 0 || e.rx_j < 0)
            __builtin_trap();
    }
    return 0;
}
