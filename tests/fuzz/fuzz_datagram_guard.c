/*
 * Fuzz the strict datagram check every received datagram passes before
 * the CoAP stack: any input must get an answer from the reason list,
 * the same one twice, without reading outside the input. A looser policy
 * never refuses what a stricter one accepted, and refusing block options
 * can only add "block refused". The counters and their log line are
 * driven too.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "edhoc/datagram_guard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int r = edhoc_datagram_check(data, size, NULL);
    if (r < EDHOC_DATAGRAM_OK || r >= EDHOC_DATAGRAM_REASON_COUNT)
        __builtin_trap();
    if (edhoc_datagram_check(data, size, NULL) != r)
        __builtin_trap();

    struct edhoc_datagram_policy loose = {
        .max_body = SIZE_MAX, .max_datagram = EDHOC_DATAGRAM_LIMIT, .accept_block_options = true};
    int r_loose = edhoc_datagram_check(data, size, &loose);
    if (r == EDHOC_DATAGRAM_OK && r_loose != EDHOC_DATAGRAM_OK)
        __builtin_trap();

    struct edhoc_datagram_policy no_blocks = edhoc_datagram_policy_default();
    no_blocks.accept_block_options = false;
    int r_strict = edhoc_datagram_check(data, size, &no_blocks);
    if (r == EDHOC_DATAGRAM_OK && r_strict != EDHOC_DATAGRAM_OK &&
        r_strict != EDHOC_DATAGRAM_BLOCK_REFUSED)
        __builtin_trap();
    if (r_strict == EDHOC_DATAGRAM_OK && r != EDHOC_DATAGRAM_OK)
        __builtin_trap();

    if (edhoc_datagram_guard_admit(data, size) != r)
        __builtin_trap();
    struct edhoc_datagram_guard_stats s;
    edhoc_datagram_guard_stats(&s);
    char line[48];
    int n = edhoc_datagram_guard_stats_format(&s, line, sizeof line);
    size_t kept = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (n < 0 || strlen(line) != kept)
        __builtin_trap();
    return 0;
}
