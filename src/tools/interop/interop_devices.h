/*
 * What the devices that connected to `edhoc-cli responder --interop-log
 * DIR` tried as initiators, folded from DIR/handshakes.jsonl
 * (interop_log.h): per device (peer host) one row per combination it
 * tried (method, SUITES_I offered -> selected, ID_CRED_I type, message_4,
 * framing / combined request), with attempts, successes, how the last
 * attempt ended and why, and the trace and pcap of the last failure; then
 * what the device supports, in the words of the initiator-side matrix.
 * Printing it is the caller's (`edhoc-cli interop --report DIR`).
 */
#ifndef EDHOC_TOOLS_INTEROP_DEVICES_H
#define EDHOC_TOOLS_INTEROP_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/edhoc.h"

#define INTEROP_DEVICE_MAX_ID_CREDS 8  /* distinct ID_CRED_I listed per device */
#define INTEROP_DEVICE_ID_CRED_HEX  64 /* hex digits of each shown */

struct interop_device_row {
    int method; /* -1: not known (null in the log) */
    int suites_i[EDHOC_MAX_SUITES];
    int n_suites_i;
    int suite;        /* -1: not known */
    char id_cred[12]; /* type, "-" when message_3 was not read */
    bool message_4;
    char framing[8];
    bool combined;
    long attempts, ok;
    /* The last attempt. */
    uint64_t last_id;
    char outcome[16];
    long err_code; /* -1: none */
    int suites_r[EDHOC_MAX_SUITES];
    int n_suites_r;
    char result[400];
    char reason[700];
    long edhoc_bytes, ms; /* -1: not in the record */
    /* The files of the last failure. */
    char fail_trace[32], fail_pcap[32];
};

/* An ID_CRED_I a device used: its type and the first
 * INTEROP_DEVICE_ID_CRED_HEX hex digits of its encoding. */
struct interop_device_id_cred {
    char type[16];
    char hex[INTEROP_DEVICE_ID_CRED_HEX + 1];
    bool truncated;
};

struct interop_device {
    char host[80];
    struct interop_device_id_cred id_creds[INTEROP_DEVICE_MAX_ID_CREDS];
    int n_id_creds;
    struct interop_device_row *rows;
    size_t n_rows, cap_rows;
};

struct interop_device_attempt;

struct interop_devices {
    const char *dir;
    struct interop_device *devices;
    size_t n_devices, cap_devices;
    size_t handshakes; /* handshake records read */
    size_t skipped;    /* unusable lines */
    /* Each unusable line, named ("PATH line N: why, skipped"); NULL: none. */
    void (*warn)(void *user, const char *text);
    void *user;
    /* Where each handshake went, for its OSCORE line. */
    struct interop_device_attempt *attempts;
    size_t n_attempts, cap_attempts;
};

/* Read DIR's log into r (dir, warn and user set by the caller, the rest
 * zero). Returns 0; or -1 with why ("no such directory", "cannot read
 * PATH: ...") when DIR or its log cannot be read. Free r with
 * interop_devices_free either way. */
int interop_devices_read(struct interop_devices *r, char *why, size_t why_cap);

void interop_devices_free(struct interop_devices *r);

/* What worked with one device (a combination counts once an attempt of it
 * ended well). */
struct interop_device_summary {
    bool method[4];
    int suites[EDHOC_MAX_SUITES * 4];
    int n_suites;
    char id_creds[8][12];
    int n_id_creds;
    int m4_tried, m4_ok, comb_tried, comb_ok;
    bool a2_ok, bare_ok;
    size_t ok, failed;
};

void interop_device_summarize(const struct interop_device *d, struct interop_device_summary *s);

#endif
