/*
 * edhoc/amplification.h - what a server may still send to a peer whose
 * address it has not verified.
 *
 * An attacker can put a victim's address in the source of a request and
 * let the server's larger answer hit the victim (RFC 9175 Section 2.4
 * item 3; RFC 9528 Section 9.7 for message_1). The account below keeps,
 * per endpoint (IP address and port: RFC 9175 asks for the reachability
 * check "only once per endpoint"), the bytes received from it and sent to
 * it, and whether its address is verified. Until it is, a server sends it
 * at most `factor` times what it received ("don't send more than three
 * times the number of bytes received until the peer's address is
 * confirmed", RFC 9175 Section 2.4 item 3, after RFC 9000 Section 8).
 * Bytes are UDP payload bytes (the CoAP message), as the server reads and
 * writes them.
 *
 * Sans-I/O: no sockets; the pressure meter below is given the time.
 * Endpoints are named as the transport names peers ("addr:port",
 * "[v6]:port"). Memory is bounded: at most max_endpoints entries; a new
 * endpoint then takes the place of the least recently active one of the
 * lowest trust present (unverified, then reachable, then authenticated:
 * see enum edhoc_amp_trust). Forgetting an unverified
 * endpoint forgets what it received and what it was sent alike, so the
 * bound holds across the entries it ever had. Lookups hash the name with
 * a keyed hash (seed), so that nobody can pick addresses that collide.
 */
#ifndef EDHOC_AMPLIFICATION_H
#define EDHOC_AMPLIFICATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* RFC 9175 Section 2.4 item 3, citing RFC 9000 Section 8. */
#define EDHOC_AMP_DEFAULT_FACTOR        3
#define EDHOC_AMP_DEFAULT_MAX_ENDPOINTS 65536
/* The longest endpoint name kept ("[" IPv6 "]:" port); longer ones are
 * cut, which can only make two endpoints share one account. */
#define EDHOC_AMP_MAX_NAME 56
/* Message_1 per second from unverified endpoints above which the server
 * is under pressure (edhoc_amp_message_1_pressure). A message_1 costs the
 * responder about 0.2 ms of CPU (an ephemeral key, a shared secret, a MAC
 * or signature): 500 a second from addresses nobody verified is a tenth
 * of a core, far above what new devices legitimately bring, and a flood
 * of 5000 a second crosses it within a tenth of a second. */
#define EDHOC_AMP_DEFAULT_PRESSURE_RATE 500

/* What an endpoint has proved, lowest first. Pending handshakes and
 * accounts are evicted lowest first (RFC 9528 Section 9.7: the Echo option
 * "does not protect against a distributed denial-of-service attack made
 * by real, potentially compromised, clients", so an address that only
 * answered an Echo ranks below a peer that completed EDHOC or sent a
 * verified OSCORE request). */
enum edhoc_amp_trust {
    EDHOC_AMP_UNVERIFIED = 0,    /* nothing: its address may be spoofed */
    EDHOC_AMP_REACHABLE = 1,     /* an Echo round trip: it receives at its address */
    EDHOC_AMP_AUTHENTICATED = 2, /* a completed handshake or a verified OSCORE request */
};
#define EDHOC_AMP_TRUST_LEVELS 3

struct edhoc_amp_config {
    unsigned factor;      /* at most factor x received until verified; >= 1 */
    size_t max_endpoints; /* entries kept at once (0: EDHOC_AMP_DEFAULT_MAX_ENDPOINTS) */
    uint64_t seed[2];     /* key of the table's hash: random */
    /* Load-triggered address verification (edhoc_amp_message_1_pressure):
     * message_1 per second from unverified endpoints above which every one
     * of them is challenged; 0: off (only the byte limit applies). */
    unsigned pressure_rate;
};

struct edhoc_amp_stats {
    uint64_t limited;  /* answers the limit held back (replaced by a 4.01 with Echo, or
                         * by nothing) */
    uint64_t withheld; /* of those, answered with nothing: even the 4.01 did not fit */
    uint64_t verified; /* endpoints that became verified */
    uint64_t evicted;  /* entries dropped to make room */
    /* UDP payload bytes received from and sent to endpoints while they were
     * unverified: their ratio is the amplification an attacker got. */
    uint64_t unverified_received, unverified_sent;
    size_t endpoints, endpoints_verified; /* kept now */
    size_t bytes_per_endpoint;            /* memory of one entry */
    /* Load-triggered verification: message_1s from unverified endpoints
     * answered with 4.01 + Echo because the server was under pressure,
     * and how often pressure began. */
    uint64_t pressure_challenges, pressure_periods;
    /* message_1s of reachable endpoints refused under pressure beyond
     * pressure_rate a second (edhoc_amp_admit_reachable). */
    uint64_t pressure_refused;
    uint64_t authenticated;         /* endpoints that became authenticated */
    size_t endpoints_authenticated; /* kept now */
    /* Pending handshakes evicted, by the trust of their endpoint, and new
     * ones refused because every pending one ranked above them. */
    uint64_t pending_evicted[EDHOC_AMP_TRUST_LEVELS];
    uint64_t pending_refused;
};

struct edhoc_amp;

/* NULL: out of memory or factor 0 (no limit: keep no account). */
struct edhoc_amp *edhoc_amp_new(const struct edhoc_amp_config *cfg);
void edhoc_amp_free(struct edhoc_amp *a);
unsigned edhoc_amp_factor(const struct edhoc_amp *a);

/* A datagram of `bytes` arrived from endpoint. */
void edhoc_amp_received(struct edhoc_amp *a, const char *endpoint, size_t bytes);
/* What endpoint may still be sent: SIZE_MAX once verified, else
 * factor x received - sent (0 for an endpoint not seen). */
size_t edhoc_amp_budget(const struct edhoc_amp *a, const char *endpoint);
/* A datagram of `bytes` went to endpoint. */
void edhoc_amp_sent(struct edhoc_amp *a, const char *endpoint, size_t bytes);
/* The endpoint proved it receives at its address (an Echo round trip,
 * or a request that verified under an OSCORE context established with
 * it): no limit from now on. */
void edhoc_amp_verify(struct edhoc_amp *a, const char *endpoint);
bool edhoc_amp_is_verified(const struct edhoc_amp *a, const char *endpoint);
/* The endpoint completed a handshake or sent a request that verified under
 * an OSCORE context: verified, and ranked above addresses that only
 * answered an Echo. */
void edhoc_amp_authenticate(struct edhoc_amp *a, const char *endpoint);
/* Its trust (EDHOC_AMP_UNVERIFIED for an endpoint not kept, or a NULL a). */
enum edhoc_amp_trust edhoc_amp_trust(const struct edhoc_amp *a, const char *endpoint);

/* A message_1 from an unverified endpoint arrived at now_ms, with
 * `pending` of `max_pending` handshake slots taken: whether the server is
 * under pressure, so that this message_1 is to be answered with 4.01 +
 * Echo before any crypto or slot is spent on it (RFC 9528 Section 9.7).
 * Pressure is either of, both O(1):
 *   - the rate of such message_1s over the last second (two one-second
 *     counts, the older weighted by how much of it is still inside the
 *     window) above pressure_rate: they cost CPU whether or not slots are
 *     left;
 *   - the pending table full: the new handshake would push out one in
 *     progress, which an address nobody verified must not be able to do.
 * false when pressure_rate is 0. Counts the challenge when true. */
bool edhoc_amp_message_1_pressure(struct edhoc_amp *a, uint64_t now_ms, size_t pending,
                                  size_t max_pending);
/* A message_1 from an endpoint that is verified but not authenticated
 * (EDHOC_AMP_REACHABLE): whether to start its handshake. RFC 9528 Section
 * 9.7: the Echo option "does not protect against a distributed
 * denial-of-service attack made by real, potentially compromised,
 * clients" -- 200 hosts that answer the Echo and abandon after message_2
 * at 5000 message_1 a second took all of a core. Under pressure (as
 * above, without counting this message_1) at most pressure_rate such
 * handshakes start over the last second; the rest are refused (false:
 * the caller answers 5.03 with Max-Age, no crypto, no slot), which keeps
 * the CPU for authenticated peers. true when not under pressure, or
 * pressure_rate is 0. */
bool edhoc_amp_admit_reachable(struct edhoc_amp *a, uint64_t now_ms, size_t pending,
                               size_t max_pending);
/* A pending handshake of an endpoint of this trust was evicted; a new one
 * was refused (every pending one ranked above it). */
void edhoc_amp_note_pending_evicted(struct edhoc_amp *a, enum edhoc_amp_trust trust);
void edhoc_amp_note_pending_refused(struct edhoc_amp *a);
/* Count an answer the limit held back; withheld: nothing went instead. */
void edhoc_amp_note_limited(struct edhoc_amp *a, bool withheld);

void edhoc_amp_get_stats(const struct edhoc_amp *a, struct edhoc_amp_stats *st);

#ifdef __cplusplus
}
#endif
#endif
