/*
 * The workers' steering decision (src/coap/reuseport.c): its statement
 * in C against the classic BPF program the kernel runs, in libpcap's
 * interpreter (the instruction set and the "a load past the end returns
 * 0" rule are the kernel's). Any datagram on which they disagree would
 * reach a worker the C code does not expect; any answer that is neither
 * a worker index nor "by hash" would be a bug of both.
 *
 * Input: one byte choosing the number of workers (2..64), then the UDP
 * payload.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <linux/filter.h>
#include <pcap/bpf.h>

#include "edhoc/reuseport.h"

static struct sock_filter programs[EDHOC_REUSEPORT_MAX_WORKERS + 1][EDHOC_REUSEPORT_MAX_INSNS];
static int lengths[EDHOC_REUSEPORT_MAX_WORKERS + 1];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned count = 2 + data[0] % (EDHOC_REUSEPORT_MAX_WORKERS - 1);
    if (!lengths[count]) {
        lengths[count] = edhoc_reuseport_program(count, programs[count], EDHOC_REUSEPORT_MAX_INSNS);
        if (lengths[count] <= 0)
            abort();
    }
    const uint8_t *msg = data + 1;
    size_t len = size - 1;
    uint32_t c = edhoc_reuseport_steer(msg, len, count);
    uint32_t b = bpf_filter((const struct bpf_insn *)programs[count], msg, (u_int)len, (u_int)len);
    if (c != b)
        abort();
    if (c != EDHOC_REUSEPORT_BY_HASH && c >= count)
        abort();
    return 0;
}
