/* edhoc-cli bytes CAPTURE, the engine: a capture file read through the
 * capture library's analysis (src/capture), and the datagrams of the
 * messages it found read back for decryption. Results only; the command
 * (cli/cmd_bytes.c, cli/output/bytes_output.c) prints them. */
#ifndef EDHOC_TOOLS_BYTES_CAPTURE_H
#define EDHOC_TOOLS_BYTES_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "edhoc/capture.h"

enum bytes_capture_status {
    BYTES_CAPTURE_OK = 0,
    BYTES_CAPTURE_OPEN = -1, /* not readable as pcap/pcapng (why says libpcap's reason) */
    BYTES_CAPTURE_LINK = -2, /* a link type the parser does not decode */
    BYTES_CAPTURE_NOMEM = -3,
};

struct bytes_capture_run {
    int dlt;
    struct edhoc_capture_analysis *analysis; /* heap */
    /* Non-empty: the file is damaged after analysis->packets packets
     * (what was read before is in the analysis). */
    char read_error[512];
};

/* Reads every frame of path into an analysis on link (NULL: none).
 * BYTES_CAPTURE_OK (read_error may be set), or an error with why. */
int bytes_capture_analyse(const char *path, const struct edhoc_netacct_link *link,
                          struct bytes_capture_run *run, char *why, size_t cap);
void bytes_capture_run_free(struct bytes_capture_run *run);

/* The UDP payloads (CoAP messages) of chosen packets. */
struct bytes_datagram {
    unsigned packet;
    uint8_t *bytes; /* heap; NULL: not found again in the file */
    size_t len;
};
struct bytes_datagrams {
    struct bytes_datagram *d; /* sorted by packet */
    size_t n;
};

/* Reads path again and keeps the payloads of the n packets numbered in
 * packets (ascending, no duplicates). 0, or -1 with why (the file cannot
 * be opened again, out of memory). */
int bytes_capture_datagrams(const char *path, const unsigned *packets, size_t n,
                            struct bytes_datagrams *out, char *why, size_t cap);
/* The payload of packet, or NULL. */
const struct bytes_datagram *bytes_datagram_find(const struct bytes_datagrams *ds, unsigned packet);
void bytes_datagrams_free(struct bytes_datagrams *ds);

#endif
