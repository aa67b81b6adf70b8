/*
 * edhoc/datagram_guard.h - the strict check every received datagram passes
 * before the CoAP stack sees it.
 *
 * The CoAP library below the transport parses datagrams with code of its
 * own (block-wise transfers among it) that no longer receives fixes, so
 * each UDP datagram the process receives is first checked here against
 * RFC 7252 Section 3 (message format), the option lengths of the options
 * we know and the block-wise limits of RFC 7959, and dropped unless it
 * passes. The check is sans-I/O (edhoc_datagram_check); the receive
 * functions of the process (src/coap/transport_io.c) apply it with the
 * process-wide policy and count what they refuse, per reason.
 *
 * The check judges the form of a message, not what it asks for: a request
 * announcing a body larger than we take (Size1) is well-formed and gets its
 * 4.13 from the engine; a Block1 number whose offset lies beyond the
 * largest body is refused here, since no body we take has such a block.
 */
#ifndef EDHOC_DATAGRAM_GUARD_H
#define EDHOC_DATAGRAM_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest body (request or response) assembled from blocks. */
#define EDHOC_DATAGRAM_DEFAULT_MAX_BODY 65536u
/* 1500-byte Ethernet MTU less the IPv4 and UDP headers; also the receive
 * buffer the CoAP library uses for a UDP datagram, so a longer one would
 * reach it cut short. */
#define EDHOC_DATAGRAM_DEFAULT_MAX_DATAGRAM 1472u
/* Largest UDP payload: the ceiling of max_datagram. */
#define EDHOC_DATAGRAM_LIMIT 65535u

/* Why a datagram was refused. 0 means accepted. */
enum edhoc_datagram_reason {
    EDHOC_DATAGRAM_OK = 0,
    EDHOC_DATAGRAM_TOO_SHORT,       /* shorter than the 4-byte header */
    EDHOC_DATAGRAM_TOO_LONG,        /* above max_datagram, or the reader's buffer */
    EDHOC_DATAGRAM_VERSION,         /* Ver other than 1 */
    EDHOC_DATAGRAM_TOKEN_LENGTH,    /* TKL 9..15 */
    EDHOC_DATAGRAM_TRUNCATED,       /* token, option header or value past the end */
    EDHOC_DATAGRAM_CODE_CLASS,      /* class 1, 6 or 7 */
    EDHOC_DATAGRAM_METHOD,          /* request code 0.08..0.31 */
    EDHOC_DATAGRAM_EMPTY_WITH_DATA, /* code 0.00 with a token, options or payload */
    EDHOC_DATAGRAM_TYPE_CODE,       /* NON empty, ACK carrying a request, RST not empty */
    EDHOC_DATAGRAM_OPTION_FORMAT,   /* nibble 15 in an option header (not 0xFF) */
    EDHOC_DATAGRAM_OPTION_NUMBER,   /* option numbers summing above 65535 */
    EDHOC_DATAGRAM_EMPTY_PAYLOAD,   /* payload marker followed by nothing */
    EDHOC_DATAGRAM_OPTION_LENGTH,   /* a known option's length outside its range */
    EDHOC_DATAGRAM_OPTION_REPEATED, /* second Block/Size/Observe/Content-Format/OSCORE/EDHOC */
    EDHOC_DATAGRAM_BLOCK_SIZE,      /* SZX 7: BERT, reliable transports only */
    EDHOC_DATAGRAM_BLOCK_NUMBER,    /* block offset at or beyond max_body */
    EDHOC_DATAGRAM_BLOCK_REFUSED,   /* a block option while the policy takes none */
    EDHOC_DATAGRAM_REASON_COUNT
};

struct edhoc_datagram_policy {
    /* Largest body taken block-wise; a Block1/Block2 whose NUM * size is
     * at or beyond it is refused. 0: EDHOC_DATAGRAM_DEFAULT_MAX_BODY. */
    size_t max_body;
    /* Largest datagram; 0: EDHOC_DATAGRAM_DEFAULT_MAX_DATAGRAM; values
     * above EDHOC_DATAGRAM_LIMIT count as EDHOC_DATAGRAM_LIMIT. */
    size_t max_datagram;
    /* false: any Block1/Block2 (and Q-Block1/Q-Block2, RFC 9177) option
     * refuses the datagram. */
    bool accept_block_options;
};

/* Default policy: 64 KiB bodies, 1472-byte datagrams, block options taken. */
struct edhoc_datagram_policy edhoc_datagram_policy_default(void);

/* Check one datagram (the UDP payload) against RFC 7252 Section 3 and the
 * policy (NULL: the default policy). Returns EDHOC_DATAGRAM_OK or the
 * first enum edhoc_datagram_reason found. Reads only d[0..len). */
int edhoc_datagram_check(const uint8_t *d, size_t len, const struct edhoc_datagram_policy *p);

/* Short name of a reason ("token length", "option format", ...);
 * "accepted" for 0, "unknown" outside the enum. */
const char *edhoc_datagram_reason_name(int reason);

/* ---- Process-wide: what the receive functions of the process apply ----
 * Every setter and counter may be used from any thread. */

/* The policy applied to received datagrams (NULL: back to the default). */
void edhoc_datagram_guard_set_policy(const struct edhoc_datagram_policy *p);
/* The policy in force, with defaults filled in. */
struct edhoc_datagram_policy edhoc_datagram_guard_policy(void);

/* On by default. Off only for a process whose sockets do not carry CoAP
 * over UDP (e.g. DTLS records, which are not CoAP messages and which the
 * check would refuse). */
void edhoc_datagram_guard_set_enabled(bool on);
bool edhoc_datagram_guard_enabled(void);

/* Check d with the process policy and count the outcome (one datagram
 * checked; if refused, one more for its reason). Returns the reason. */
int edhoc_datagram_guard_admit(const uint8_t *d, size_t len);
/* Count a datagram refused without edhoc_datagram_guard_admit (e.g. too
 * long for the reader's buffer, so its bytes were never seen whole). */
void edhoc_datagram_guard_count_refusal(int reason, size_t len);

struct edhoc_datagram_guard_stats {
    uint64_t checked;                                /* datagrams checked, refused ones included */
    uint64_t refused;                                /* sum of by_reason */
    uint64_t refused_bytes;                          /* their UDP payload bytes */
    uint64_t by_reason[EDHOC_DATAGRAM_REASON_COUNT]; /* index: reason; [0] is 0 */
};

/* A snapshot of the counters since the start (or the last reset). */
void edhoc_datagram_guard_stats(struct edhoc_datagram_guard_stats *out);
void edhoc_datagram_guard_reset_stats(void);

/* One line without a newline, for logs: "datagrams refused before libcoap:
 * 3 token length, 1 option format" (reasons in enum order, those never
 * seen left out), or "...: none". Returns the length snprintf would give. */
int edhoc_datagram_guard_stats_format(const struct edhoc_datagram_guard_stats *s, char *buf,
                                      size_t cap);

#ifdef __cplusplus
}
#endif

#endif
