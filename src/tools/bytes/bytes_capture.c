/* Reading a capture for edhoc-cli bytes (bytes_capture.h). */
#include "bytes_capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bytes_capture_analyse(const char *path, const struct edhoc_netacct_link *link,
                          struct bytes_capture_run *run, char *why, size_t cap)
{
    memset(run, 0, sizeof *run);
    char err[512];
    struct edhoc_capture_reader *r = edhoc_capture_reader_open(path, err, sizeof err);
    if (!r) {
        snprintf(why, cap, "%s", err);
        return BYTES_CAPTURE_OPEN;
    }
    run->dlt = edhoc_capture_reader_dlt(r);
    /* An undecodable link type makes every packet unreadable: the caller
     * says so once instead of once per packet. */
    struct edhoc_capture_packet probe;
    uint8_t empty[1] = {0};
    if (edhoc_capture_packet_parse(run->dlt, empty, 0, 0, &probe) == EDHOC_CAPTURE_ERR_LINK) {
        edhoc_capture_reader_close(r);
        snprintf(why, cap, "link type %d is not supported", run->dlt);
        return BYTES_CAPTURE_LINK;
    }
    run->analysis = malloc(sizeof *run->analysis);
    if (!run->analysis) {
        edhoc_capture_reader_close(r);
        snprintf(why, cap, "out of memory");
        return BYTES_CAPTURE_NOMEM;
    }
    edhoc_capture_analysis_init(run->analysis, link);
    for (unsigned n = 1;; n++) {
        const uint8_t *frame;
        size_t caplen, wire;
        struct timespec ts;
        int rc = edhoc_capture_reader_next(r, &frame, &caplen, &wire, &ts);
        if (rc == 0)
            break;
        if (rc < 0) {
            snprintf(run->read_error, sizeof run->read_error, "%s",
                     edhoc_capture_reader_error(r)[0] ? edhoc_capture_reader_error(r)
                                                      : edhoc_capture_strerror(rc));
            break;
        }
        edhoc_capture_analysis_frame(run->analysis, n, run->dlt, frame, caplen, wire, &ts);
    }
    edhoc_capture_reader_close(r);
    return BYTES_CAPTURE_OK;
}

void bytes_capture_run_free(struct bytes_capture_run *run)
{
    free(run->analysis);
    run->analysis = NULL;
}

int bytes_capture_datagrams(const char *path, const unsigned *packets, size_t n,
                            struct bytes_datagrams *out, char *why, size_t cap)
{
    out->n = 0;
    out->d = n ? calloc(n, sizeof *out->d) : NULL;
    if (n && !out->d) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        out->d[i].packet = packets[i];
    out->n = n;
    if (!n)
        return 0;
    char err[512];
    struct edhoc_capture_reader *r = edhoc_capture_reader_open(path, err, sizeof err);
    if (!r) {
        snprintf(why, cap, "%s (read again for decryption)", err);
        bytes_datagrams_free(out);
        return -1;
    }
    int dlt = edhoc_capture_reader_dlt(r);
    size_t next = 0;
    for (unsigned pkt = 1; next < n; pkt++) {
        const uint8_t *frame;
        size_t caplen, wire;
        struct timespec ts;
        if (edhoc_capture_reader_next(r, &frame, &caplen, &wire, &ts) <= 0)
            break;
        if (pkt != out->d[next].packet)
            continue;
        struct edhoc_capture_packet p;
        if (edhoc_capture_packet_parse(dlt, frame, caplen, wire, &p) == 0) {
            out->d[next].bytes = malloc(p.payload_len ? p.payload_len : 1);
            if (!out->d[next].bytes) {
                edhoc_capture_reader_close(r);
                bytes_datagrams_free(out);
                snprintf(why, cap, "out of memory");
                return -1;
            }
            memcpy(out->d[next].bytes, p.payload, p.payload_len);
            out->d[next].len = p.payload_len;
        }
        next++;
    }
    edhoc_capture_reader_close(r);
    return 0;
}

const struct bytes_datagram *bytes_datagram_find(const struct bytes_datagrams *ds, unsigned packet)
{
    size_t lo = 0, hi = ds->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ds->d[mid].packet < packet)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < ds->n && ds->d[lo].packet == packet && ds->d[lo].bytes)
        return &ds->d[lo];
    return NULL;
}

void bytes_datagrams_free(struct bytes_datagrams *ds)
{
    for (size_t i = 0; i < ds->n; i++)
        free(ds->d[i].bytes);
    free(ds->d);
    ds->d = NULL;
    ds->n = 0;
}
