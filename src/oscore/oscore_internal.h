/*
 * What the OSCORE sources share, not exported from the library:
 *   oscore_context.c    context derivation (Section 3.2), sequence-number
 *                       persistence hooks, accessors, error texts
 *   oscore_option.c     nonce, AAD, Partial IV, the OSCORE option, option
 *                       classes and the inner/outer split (Section 4.1)
 *   oscore_protect.c    sealing requests and responses, sequence-number
 *                       reservation, Echo challenges, error responses
 *   oscore_unprotect.c  opening requests and responses, the replay window
 *   oscore_b2.c         Appendix B.2; oscore_config.c context files
 */
#ifndef EDHOC_OSCORE_INTERNAL_H
#define EDHOC_OSCORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/coap_msg.h"
#include "edhoc/oscore.h"

/* struct oscore_context.flags */
#define CTX_HAS_ID_CONTEXT 0x01u
#define CTX_WINDOW_STARTED 0x02u /* at least one request accepted */
#define CTX_NEED_ECHO      0x04u /* replay window unknown (after resume) */
#define CTX_ECHO_ISSUED    0x08u /* c->echo holds the value we sent */

/* struct oscore_binding.flags */
#define BIND_VALID       0x01u
#define BIND_OBSERVE     0x02u /* the request registered an observation */
#define BIND_NONCE_USED  0x04u /* server: a response reused the request nonce */
#define BIND_ANSWERED    0x08u /* client: the (final) response was accepted */
#define BIND_HAVE_NOTIF  0x10u /* client: notification_number is set */
#define BIND_NOPIV_NOTIF 0x20u /* client: the one notification without Partial IV came */

#define MAX_OUTER_OPTS   (COAP_MSG_MAX_OPTIONS + 2)
#define MAX_INNER_OPTS   COAP_MSG_MAX_OPTIONS
#define MAX_OPTION_VALUE (1 + OSCORE_MAX_PIV + 1 + OSCORE_MAX_ID_CONTEXT + OSCORE_MAX_ID)
#define MAX_AAD          64

/* The options of a message to protect, sorted into the inner (encrypted)
 * and outer lists; values point into the message or into the buffers. */
struct oscore_split {
    struct coap_option outer[MAX_OUTER_OPTS];
    size_t n_outer;
    struct coap_option inner[MAX_INNER_OPTS];
    size_t n_inner;
    uint8_t scratch[1034]; /* percent-decoded Proxy-Uri path and query */
    size_t scratch_len;
    uint8_t proxy_uri[1034]; /* the outer Proxy-Uri: scheme://host[:port] */
};

static inline uint64_t oscore_piv_value(const uint8_t *piv, size_t len)
{
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++)
        v = v << 8 | piv[i];
    return v;
}

/* ---- oscore_option.c */

/* The single OSCORE option of a parsed message: 0, OSCORE_ERR_NOT_OSCORE,
 * OSCORE_ERR_BAD_OPTION (repeated or malformed). */
int oscore_find_option(const struct coap_msg *m, struct oscore_option *o);

/* Class U only: kept outside, never encrypted. Everything else is sent
 * Inner (Observe is also outer, handled separately), and an outer
 * instance of an option that has an E column is discarded on receipt
 * (Sections 8.2 and 8.4 step 1). */
bool oscore_is_outer_only(uint16_t number);

/* Stable insertion sort by option number (lists are short and nearly sorted). */
void oscore_sort_options(struct coap_option *opts, size_t n);

/* Append one option to list (cap entries): 0 or OSCORE_ERR_TOO_LARGE. */
int oscore_add_option(struct coap_option *list, size_t *n, size_t cap, uint16_t number,
                      const uint8_t *value, size_t len);

/* Sort the options of the original message into inner and outer lists
 * (the inner one sorted); a Proxy-Uri of a request is split into its outer
 * and inner parts (Section 4.1.3.3). */
int oscore_split_options(const struct coap_msg *m, bool is_request, struct oscore_split *s);

/* ---- oscore_unprotect.c */

/* Parse the message and its OSCORE option; common to both directions. */
int oscore_open_outer(const uint8_t *msg, size_t len, struct coap_msg *m,
                      struct oscore_option *opt);

/* ---- oscore_protect.c, oscore_unprotect.c, oscore_context.c */

/* oscore_protect_response() with a 'kid context' in the response's
 * OSCORE option (kid_context NULL: none), as response #1 of RFC 8613
 * Appendix B.2 carries R2. Same returns, and OSCORE_ERR_INVALID for a
 * kid context longer than OSCORE_MAX_ID_CONTEXT. */
long oscore_protect_response_kid_context(struct oscore_context *c, struct oscore_binding *b,
                                         const uint8_t *msg, size_t len, bool with_piv,
                                         const uint8_t *kid_context, size_t kid_context_len,
                                         uint8_t *out, size_t cap);

/* oscore_unprotect_response(), which refuses a response with a 'kid
 * context' (OSCORE_ERR_KID_CONTEXT) unless response1 is set: Appendix
 * B.2's response #1 verified with its second context. */
long oscore_unprotect_response_b2(struct oscore_context *c, struct oscore_binding *b,
                                  const uint8_t *msg, size_t len, uint8_t *out, size_t cap,
                                  bool response1);

/* oscore_context_init_config with id_context (NULL: none) in place of
 * cfg's own ID Context: the contexts of Appendix B.2. */
int oscore_context_init_config_id(struct oscore_context *c, const struct edhoc_crypto_ops *crypto,
                                  const struct oscore_config *cfg, const uint8_t *id_context,
                                  size_t id_context_len);

#endif
