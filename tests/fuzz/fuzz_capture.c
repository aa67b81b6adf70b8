/*
 * libFuzzer target: the capture packet parser and the EDHOC analysis fed
 * with what it returns.
 *
 * Input: one byte choosing the link type (low bits) and the modelled
 * link (high bits), then frames, each as a 2-byte
 * big-endian length and that many bytes (a short last frame is taken as
 * is). Several frames per input let the fuzzer reach the request/response
 * matching, retransmission and block-wise state, not only single-packet
 * decoding. Each frame is also parsed as if cut by a snap length.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/capture.h"

static const int link_types[] = {
    EDHOC_CAPTURE_DLT_RAW,        EDHOC_CAPTURE_DLT_EN10MB, EDHOC_CAPTURE_DLT_LINUX_SLL,
    EDHOC_CAPTURE_DLT_LINUX_SLL2, EDHOC_CAPTURE_DLT_NULL,   EDHOC_CAPTURE_DLT_LOOP,
    EDHOC_CAPTURE_DLT_IPV4,       EDHOC_CAPTURE_DLT_IPV6,
};

#define MAX_FRAMES 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct edhoc_capture_analysis *a;
    if (!a) {
        a = malloc(sizeof *a);
        if (!a)
            return 0;
    }
    if (size < 1)
        return 0;
    int dlt = link_types[data[0] % (sizeof link_types / sizeof link_types[0])];
    /* Bit 7: model 802.15.4; bit 6: with IPHC addresses from the packets. */
    struct edhoc_netacct_link link = edhoc_netacct_link_802154_default();
    if (data[0] & 0x40)
        link.src_addr = link.dst_addr = EDHOC_NETACCT_ADDR_AUTO;
    edhoc_capture_analysis_init(a, (data[0] & 0x80) ? &link : NULL);

    size_t pos = 1;
    for (unsigned n = 1; n <= MAX_FRAMES && pos < size; n++) {
        size_t len = size - pos;
        if (len >= 2) {
            size_t want = (size_t)data[pos] << 8 | data[pos + 1];
            pos += 2;
            len = size - pos;
            if (want < len)
                len = want;
        } else {
            pos = size;
            break;
        }
        /* A heap copy of exactly len bytes, so any read past the frame is
         * caught by AddressSanitizer. */
        uint8_t *frame = malloc(len ? len : 1);
        if (!frame)
            return 0;
        memcpy(frame, data + pos, len);
        struct edhoc_capture_packet p;
        (void)edhoc_capture_packet_parse(dlt, frame, len / 2, len, &p);
        struct timespec ts = {(time_t)n, 0};
        edhoc_capture_analysis_frame(a, n, dlt, frame, len, len, &ts);
        free(frame);
        pos += len;
    }
    return 0;
}
