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
 * Sans-I/O: no sockets, no clock. Endpoints are named as the transport
 * names peers ("addr:port", "[v6]:port"). Memory is bounded: at most
 * max_endpoints entries; a new endpoint then takes the place of the
 * least recently active unverified one (or, when every entry is verified,
 * of the least recently active verified one). Forgetting an unverified
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
#define EDHOC_AMP_DEFAULT_FACTOR 3
#define EDHOC_AMP_DEFAULT_MAX_ENDPOINTS 65536
/* The longest endpoint name kept ("[" IPv6 "]:" port); longer ones are
 * cut, which can only make two endpoints share one account. */
#define EDHOC_AMP_MAX_NAME 56

struct edhoc_amp_config {
    unsigned factor;      /* at most factor x received until verified; >= 1 */
    size_t max_endpoints; /* entries kept at once (0: EDHOC_AMP_DEFAULT_MAX_ENDPOINTS) */
    uint64_t seed[2];     /* key of the table's hash: random */
};

struct edhoc_amp_stats {
    uint64_t limited;   /* answers the limit held back (replaced by a 4.01 with Echo, or
                         * by nothing) */
    uint64_t withheld;  /* of those, answered with nothing: even the 4.01 did not fit */
    uint64_t verified;  /* endpoints that became verified */
    uint64_t evicted;   /* entries dropped to make room */
    /* UDP payload bytes received from and sent to endpoints while they were
     * unverified: their ratio is the amplification an attacker got. */
    uint64_t unverified_received, unverified_sent;
    size_t endpoints, endpoints_verified; /* kept now */
    size_t bytes_per_endpoint;            /* memory of one entry */
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
/* Count an answer the limit held back; withheld: nothing went instead. */
void edhoc_amp_note_limited(struct edhoc_amp *a, bool withheld);

void edhoc_amp_get_stats(const struct edhoc_amp *a, struct edhoc_amp_stats *st);

#ifdef __cplusplus
}
#endif
#endif
