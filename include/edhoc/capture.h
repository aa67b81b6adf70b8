/*
 * edhoc/capture.h - pcap captures of CoAP traffic: writing every datagram
 * with real IP and UDP headers, reading captures back, and finding the
 * EDHOC exchanges (and the OSCORE traffic after them) in what was read.
 *
 * Three layers, usable on their own:
 *   - the writer (libpcap's dump files; no privileges needed) synthesizes
 *     IPv4/IPv6 + UDP headers with correct lengths and checksums around
 *     each datagram, on a raw-IP, Ethernet, Linux-cooked (v1/v2) or
 *     loopback link, so Wireshark's CoAP/OSCORE dissectors decode it;
 *   - the packet parser (edhoc_capture_packet_parse) takes one captured
 *     frame of a link type and returns the UDP datagram in it; it never
 *     reads outside the frame and is what the fuzzer drives;
 *   - the analysis (struct edhoc_capture_analysis) is sans-I/O: fed with
 *     parsed packets, it recognizes EDHOC over CoAP (RFC 9528 Appendix A.2,
 *     the bare framing of older devices, the RFC 9668 EDHOC option),
 *     matches requests and responses by token and addresses, decodes
 *     method, suites and connection identifiers, and counts every message
 *     at every layer with edhoc/netacct.h.
 *
 * Errors are negative EDHOC_CAPTURE_ERR_* codes.
 */
#ifndef EDHOC_CAPTURE_H
#define EDHOC_CAPTURE_H

/* struct timespec under -std=c99 as well: POSIX has <sched.h> define it,
 * while <time.h> declares it only from C11 on or with a POSIX feature
 * macro. */
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "edhoc/netacct.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EDHOC_CAPTURE_ERR_ARG       (-7101) /* NULL pointer, bad length or address family */
#define EDHOC_CAPTURE_ERR_OPEN      (-7102) /* the file cannot be opened / is not a capture */
#define EDHOC_CAPTURE_ERR_READ      (-7103) /* the capture file is truncated or corrupt */
#define EDHOC_CAPTURE_ERR_WRITE     (-7104) /* writing the capture failed */
#define EDHOC_CAPTURE_ERR_LINK      (-7105) /* a link type this code does not decode */
#define EDHOC_CAPTURE_ERR_NOT_IP    (-7106) /* a frame not carrying IPv4/IPv6 (ARP, ...) */
#define EDHOC_CAPTURE_ERR_NOT_UDP   (-7107) /* an IP packet not carrying UDP */
#define EDHOC_CAPTURE_ERR_FRAGMENT  (-7108) /* an IP fragment (not reassembled) */
#define EDHOC_CAPTURE_ERR_MALFORMED (-7109) /* inconsistent header fields */
#define EDHOC_CAPTURE_ERR_TRUNCATED (-7110) /* the frame was cut short (snap length) */
#define EDHOC_CAPTURE_ERR_TOO_LARGE (-7111) /* a datagram larger than the writer handles */

/* A short English text for an EDHOC_CAPTURE_ERR_* code. */
const char *edhoc_capture_strerror(int err);

/* Link types, as libpcap's DLT_* values (pcap/dlt.h). */
#define EDHOC_CAPTURE_DLT_NULL       0   /* BSD loopback, host-order AF */
#define EDHOC_CAPTURE_DLT_EN10MB     1   /* Ethernet */
#define EDHOC_CAPTURE_DLT_RAW        12  /* raw IP (LINKTYPE_RAW 101 in files) */
#define EDHOC_CAPTURE_DLT_RAW_ALT    14  /* raw IP on some BSDs */
#define EDHOC_CAPTURE_DLT_LOOP       108 /* OpenBSD loopback, network-order AF */
#define EDHOC_CAPTURE_DLT_LINUX_SLL  113
#define EDHOC_CAPTURE_DLT_IPV4       228
#define EDHOC_CAPTURE_DLT_IPV6       229
#define EDHOC_CAPTURE_DLT_LINUX_SLL2 276

/* Largest UDP payload the writer accepts (an IPv4 datagram's limit). */
#define EDHOC_CAPTURE_MAX_PAYLOAD 65507

/* ---- Writing ---- */

struct edhoc_capture;

/* Create (truncate) a pcap file at path with the given link type
 * (EDHOC_CAPTURE_DLT_RAW, _EN10MB, _LINUX_SLL, _LINUX_SLL2, _NULL or
 * _LOOP) and nanosecond timestamps. The file is mode 0600 whatever the
 * umask (an existing one is set to it); a symbolic link or anything but a
 * regular file at path is refused, never written through. On failure
 * returns NULL and, when err is not NULL, writes a message there. */
struct edhoc_capture *edhoc_capture_open(const char *path, int dlt, char *err, size_t err_cap);

/* Append one UDP datagram from src to dst (both AF_INET or both
 * AF_INET6, with ports; IPv4-mapped IPv6 addresses are written as IPv4)
 * carrying len payload bytes, stamped ts (NULL: the current time).
 * Returns 0, EDHOC_CAPTURE_ERR_ARG (NULL, mixed or other families),
 * EDHOC_CAPTURE_ERR_TOO_LARGE (len > EDHOC_CAPTURE_MAX_PAYLOAD) or
 * EDHOC_CAPTURE_ERR_WRITE. Not thread-safe: one writer per thread or a
 * lock around it. */
int edhoc_capture_datagram(struct edhoc_capture *cap, const struct sockaddr *src,
                           const struct sockaddr *dst, const uint8_t *payload, size_t len,
                           const struct timespec *ts);

/* The same from this process's point of view: sent (local -> peer) or
 * received (peer -> local). Same return values. */
int edhoc_capture_datagram_dir(struct edhoc_capture *cap, bool sent, const struct sockaddr *local,
                               const struct sockaddr *peer, const uint8_t *payload, size_t len,
                               const struct timespec *ts);

/* Parse "192.0.2.1:5683" or "[2001:db8::1]:5683" (the form the
 * transport's datagram hook names peers in) into an AF_INET/AF_INET6
 * sockaddr with its port. Returns 0 or EDHOC_CAPTURE_ERR_ARG. */
int edhoc_capture_endpoint_parse(const char *text, struct sockaddr_storage *out);

/* Flush buffered packets to the file. Returns 0 or EDHOC_CAPTURE_ERR_WRITE. */
int edhoc_capture_flush(struct edhoc_capture *cap);

/* Flush and close; NULL is accepted. */
void edhoc_capture_close(struct edhoc_capture *cap);

/* Build the frame edhoc_capture_datagram would write (link header, IP,
 * UDP with checksum, payload) into out. Returns its length, or
 * EDHOC_CAPTURE_ERR_ARG, EDHOC_CAPTURE_ERR_LINK, EDHOC_CAPTURE_ERR_TOO_LARGE
 * (also when cap is too small). */
long edhoc_capture_frame_build(int dlt, const struct sockaddr *src, const struct sockaddr *dst,
                               const uint8_t *payload, size_t len, uint8_t *out, size_t cap);

/* ---- Parsing one captured frame ---- */

struct edhoc_capture_packet {
    int ip_version;           /* 4 or 6 */
    uint8_t src[16], dst[16]; /* IPv4 addresses in the first 4 bytes */
    uint16_t src_port, dst_port;
    size_t frame_len;       /* the frame's length on the wire (as recorded) */
    size_t ip_len;          /* IPv4 Total Length / 40 + IPv6 Payload Length */
    size_t udp_len;         /* UDP Length field */
    const uint8_t *payload; /* the UDP payload, inside the frame */
    size_t payload_len;
};

/* Decode a frame of link type dlt (caplen bytes present of wire_len):
 * link header, IPv4 (options skipped) or IPv6 (Hop-by-Hop, Routing and
 * Destination Options headers skipped), UDP. Returns 0, or
 * EDHOC_CAPTURE_ERR_ARG, EDHOC_CAPTURE_ERR_LINK, EDHOC_CAPTURE_ERR_NOT_IP,
 * EDHOC_CAPTURE_ERR_NOT_UDP, EDHOC_CAPTURE_ERR_FRAGMENT,
 * EDHOC_CAPTURE_ERR_MALFORMED, EDHOC_CAPTURE_ERR_TRUNCATED. */
int edhoc_capture_packet_parse(int dlt, const uint8_t *frame, size_t caplen, size_t wire_len,
                               struct edhoc_capture_packet *p);

/* ---- Reading a capture file (pcap or pcapng, through libpcap) ---- */

struct edhoc_capture_reader;

/* Open path. On failure returns NULL and writes libpcap's reason to err. */
struct edhoc_capture_reader *edhoc_capture_reader_open(const char *path, char *err, size_t err_cap);
/* The DLT_* link type of the packets. */
int edhoc_capture_reader_dlt(const struct edhoc_capture_reader *r);
/* The next frame: 1 with *frame (valid until the next call), its lengths
 * and time; 0 at the end of the file; EDHOC_CAPTURE_ERR_READ when the file
 * is truncated or corrupt (edhoc_capture_reader_error says how). */
int edhoc_capture_reader_next(struct edhoc_capture_reader *r, const uint8_t **frame, size_t *caplen,
                              size_t *wire_len, struct timespec *ts);
const char *edhoc_capture_reader_error(const struct edhoc_capture_reader *r);
void edhoc_capture_reader_close(struct edhoc_capture_reader *r);

/* ---- EDHOC exchanges in a capture ---- */

#define EDHOC_CAPTURE_MAX_EXCHANGES 64
#define EDHOC_CAPTURE_MAX_MESSAGES  48 /* per exchange; more are counted, not listed */
#define EDHOC_CAPTURE_MAX_ISSUES    64
#define EDHOC_CAPTURE_MAX_CID       8
#define EDHOC_CAPTURE_MAX_SUITES    9
#define EDHOC_CAPTURE_MAX_BODY      4096 /* a block-wise body reassembled */

enum edhoc_capture_msg_type {
    EDHOC_CAPTURE_MSG_1 = 1,
    EDHOC_CAPTURE_MSG_2,
    EDHOC_CAPTURE_MSG_3,
    EDHOC_CAPTURE_MSG_4,
    EDHOC_CAPTURE_MSG_ERROR,    /* an EDHOC error message */
    EDHOC_CAPTURE_MSG_3_ACK,    /* the 2.04 to message_3 without message_4 */
    EDHOC_CAPTURE_MSG_3_OSCORE, /* RFC 9668 EDHOC + OSCORE request */
    EDHOC_CAPTURE_MSG_OSCORE_REQUEST,
    EDHOC_CAPTURE_MSG_OSCORE_RESPONSE,
    EDHOC_CAPTURE_MSG_EMPTY, /* empty ACK / RST */
};

/* "message_1", ..., "OSCORE request". */
const char *edhoc_capture_msg_type_name(enum edhoc_capture_msg_type t);

struct edhoc_capture_msg {
    enum edhoc_capture_msg_type type;
    unsigned packet; /* 1-based packet number of its first datagram */
    bool from_initiator;
    struct timespec ts;
    size_t edhoc;       /* EDHOC message bytes (message_3 alone in a combined request) */
    unsigned datagrams; /* blocks and retransmissions included */
    unsigned retransmissions;
    size_t frame, coap, udp, ip; /* summed over its datagrams */
    unsigned link_frames;        /* on the modelled link */
    size_t link_bytes;
    /* Its datagrams' time and energy figures on the modelled link (zero
     * without a time model): air time, link time, duty-cycle wait,
     * fragments, SCHC residue. */
    struct edhoc_netacct_air air;
    int answers; /* a response: index (in msgs) of its request; else -1 */
    /* Private: correlation. */
    uint8_t token[8];
    uint8_t token_len;
    uint16_t mid;
    bool complete; /* last block seen */
};

struct edhoc_capture_exchange {
    int ip_version;
    uint8_t client[16], server[16];
    uint16_t client_port, server_port;
    int method;                           /* -1 unknown */
    int suites[EDHOC_CAPTURE_MAX_SUITES]; /* SUITES_I, the selected one last */
    size_t n_suites;
    uint8_t c_i[EDHOC_CAPTURE_MAX_CID], c_r[EDHOC_CAPTURE_MAX_CID];
    size_t c_i_len, c_r_len;
    bool c_r_known;
    const char *framing; /* "RFC 9528 A.2", "bare", "RFC 9668 combined" */
    /* ID_CRED types are encrypted: inferred from sizes where the size
     * admits one reading, assuming no EAD ("kid (inferred)"), else a
     * range. */
    char id_cred_r[112], id_cred_i[112];
    int error_code; /* ERR_CODE of an EDHOC error, -1 none */
    bool completed; /* message_3 (or the combined request) seen */
    struct edhoc_capture_msg msgs[EDHOC_CAPTURE_MAX_MESSAGES];
    size_t n_msgs;
    unsigned msgs_dropped;
    struct edhoc_netacct_summary totals;
    /* Private: ciphertext lengths the ID_CRED inference works from. */
    size_t ct2_len, ct3_len;
};

/* Private: one block-wise body (RFC 7959) being reassembled. */
struct edhoc_capture_assembly {
    bool used, request;
    int ip_version;
    uint8_t from[16], to[16];
    uint16_t from_port, to_port;
    unsigned packet;
    struct timespec ts;
    /* The first block's request view (flags derived from its options). */
    uint8_t code, token_len;
    uint8_t token[8];
    uint16_t mid;
    int content_format;
    bool edhoc_path, has_oscore, has_edhoc_option;
    uint8_t kid[EDHOC_CAPTURE_MAX_CID];
    size_t kid_len;
    /* Responses: the exchange and request message they answer. */
    int ex, req_msg;
    uint8_t body[EDHOC_CAPTURE_MAX_BODY];
    size_t body_len;
    size_t frame;
    struct edhoc_netacct_total acc;
};

#define EDHOC_CAPTURE_MAX_ASSEMBLIES 8

struct edhoc_capture_issue {
    unsigned packet;
    char text[96];
};

struct edhoc_capture_analysis {
    struct edhoc_netacct_link link;
    unsigned packets;   /* frames seen */
    unsigned udp;       /* UDP datagrams decoded */
    unsigned coap;      /* of which parsed as CoAP */
    unsigned skipped;   /* malformed, truncated or undecodable, reported */
    unsigned ignored;   /* not IP/UDP/CoAP-related (ARP, DNS, ...) */
    unsigned unmatched; /* CoAP not belonging to an EDHOC exchange */
    struct edhoc_capture_exchange ex[EDHOC_CAPTURE_MAX_EXCHANGES];
    size_t n_ex;
    /* When the table is full the oldest exchange makes room: it leaves the
     * listing but stays in the totals. */
    unsigned ex_evicted;
    unsigned ex_evicted_completed, ex_evicted_failed;
    struct edhoc_capture_issue issues[EDHOC_CAPTURE_MAX_ISSUES];
    size_t n_issues;
    unsigned issues_dropped;
    struct edhoc_netacct_summary totals; /* over all exchanges */
    /* Private */
    struct edhoc_capture_assembly asm_[EDHOC_CAPTURE_MAX_ASSEMBLIES];
};

/* Start an analysis counting link frames on link (NULL: no link layer).
 * The struct is large (heap-allocate it). */
void edhoc_capture_analysis_init(struct edhoc_capture_analysis *a,
                                 const struct edhoc_netacct_link *link);

/* Feed one frame (packet numbers count from 1): parses it, records an
 * issue for malformed or truncated frames, and charges EDHOC and OSCORE
 * datagrams to their exchange. Never fails. */
void edhoc_capture_analysis_frame(struct edhoc_capture_analysis *a, unsigned packet, int dlt,
                                  const uint8_t *frame, size_t caplen, size_t wire_len,
                                  const struct timespec *ts);

/* Feed one already parsed datagram. */
void edhoc_capture_analysis_packet(struct edhoc_capture_analysis *a, unsigned packet,
                                   const struct edhoc_capture_packet *p, const struct timespec *ts);

/* Record a problem found for a packet (printed with the report). */
void edhoc_capture_analysis_issue(struct edhoc_capture_analysis *a, unsigned packet,
                                  const char *text);

/* True when the exchange ended in an EDHOC error message. */
bool edhoc_capture_exchange_failed(const struct edhoc_capture_exchange *ex);

/* "Ethernet", "Linux cooked v2", ... for the link types the parser
 * decodes; NULL for others. */
const char *edhoc_capture_dlt_name(int dlt);

/* A connection identifier value as text: "-24 (0x37)" for the integer
 * form, "h'0102'" for a byte string. Returns the length written. */
size_t edhoc_capture_cid_format(const uint8_t *v, size_t len, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
