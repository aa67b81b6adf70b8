/* Functions shared by the OSCORE sources, not exported from the library. */
#ifndef EDHOC_OSCORE_INTERNAL_H
#define EDHOC_OSCORE_INTERNAL_H

#include "edhoc/oscore.h"

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
