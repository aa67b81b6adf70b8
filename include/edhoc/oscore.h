/*
 * edhoc/oscore.h - OSCORE (RFC 8613) on plain CoAP message bytes.
 *
 * Sans-I/O: every function takes CoAP-over-UDP messages as bytes and writes
 * into caller buffers; nothing here touches sockets, files or clocks. The
 * transport maps these bytes onto its own PDUs.
 *
 * Objects:
 *   struct oscore_context  one security context (common, sender and
 *                          recipient parts), fixed size, no heap. Derived
 *                          once; protect/unprotect never re-derive.
 *   struct oscore_binding  what one request leaves behind for its
 *                          response(s) (request kid and Partial IV, Observe
 *                          state). The caller keeps it with the Token.
 *
 * Memory: contexts and bindings never allocate. Protect and unprotect seal
 * and open the plaintext in a stack buffer up to OSCORE_MAX_PLAINTEXT
 * bytes, above it in a heap buffer freed (wiped first) before they return;
 * messages up to OSCORE_MAX_MESSAGE bytes of plaintext are handled.
 *
 * Flow (client):  oscore_protect_request -> ... -> oscore_unprotect_response
 * Flow (server):  oscore_unprotect_request -> ... -> oscore_protect_response
 *
 * Option classes (Section 4.1, Figure 5; oscore_option_class()): Uri-Host,
 * Uri-Port, Proxy-Scheme and the scheme://host[:port] part of Proxy-Uri
 * are Class U (outer); Observe is both; every other option, unknown ones
 * included (Block1/2, Size1/2, Max-Age, No-Response, Echo, Request-Tag,
 * ...), is sent as Class E (inner), i.e. Block options are end-to-end.
 * Outer Block options added by proxies are for the transport to reassemble
 * before unprotect; received outer Class E options are discarded. RFC 8613
 * defines no Class I option ("There are currently no Class I options
 * defined", Section 4), so the external_aad's options field is always
 * empty.
 *
 * Appendix B.2 (a new ID Context from random values when an endpoint lost
 * its mutable state): struct oscore_b2_client / oscore_b2_server, pure
 * functions over message bytes and the immutable inputs of struct
 * oscore_config; see docs/oscore-b2.md.
 *
 * Errors are negative OSCORE_ERR_* codes. oscore_error_response() builds
 * the unprotected CoAP error response RFC 8613 Sections 7.4 and 8.2 call
 * for, for the codes that have one.
 */
#ifndef EDHOC_OSCORE_H
#define EDHOC_OSCORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "edhoc/crypto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Bounds ---- */

/* Sender/Recipient ID: nonce length - 6 (7 for CCM, 6 for GCM/ChaCha). */
#define OSCORE_MAX_ID            7
#define OSCORE_MAX_ID_CONTEXT    16
#define OSCORE_MAX_MASTER_SECRET 64
#define OSCORE_MAX_MASTER_SALT   64
#define OSCORE_MAX_PIV           5
/* Size of the fast path, not a limit: a plaintext (inner code, Class E
 * options, payload) of at most this many bytes is sealed and opened in a
 * buffer on the stack, with no allocation per message; a larger one, up to
 * OSCORE_MAX_MESSAGE, in a heap buffer of its own size, wiped before it is
 * freed. Callers that hold one unprotected message in OSCORE_MAX_PLAINTEXT
 * + 64 bytes still work, but are then limited by their own buffer
 * (OSCORE_ERR_BUFFER): size buffers with OSCORE_MAX_OVERHEAD instead. */
#define OSCORE_MAX_PLAINTEXT 2048
/* The largest body the project reassembles or serves block-wise
 * (EDHOC_BW_MAX_BODY_LIMIT of edhoc/blockwise.h, the largest --max-body):
 * such a body, reassembled before unprotecting (RFC 8613 Sections 4.1.3.4.2
 * and 8.2 step 1), must still be one OSCORE message. */
#define OSCORE_MAX_BODY (1u << 20)
/* The largest plaintext protect and unprotect accept: a body of
 * OSCORE_MAX_BODY plus 8 KiB for the code byte and the inner options.
 * Above it (or above the AEAD's own limit, see
 * oscore_context_max_plaintext()) they return OSCORE_ERR_TOO_LARGE before
 * allocating anything. */
#define OSCORE_MAX_MESSAGE (OSCORE_MAX_BODY + 8192u)
/* Buffer sizing: protecting a message of len bytes gives at most
 * len + OSCORE_MAX_OVERHEAD bytes (tag, OSCORE option, the code byte and
 * payload marker both parts carry, Observe in both parts, option headers
 * growing when the options are split, Proxy-Uri split into Uri-Path/
 * Uri-Query); unprotecting never gives more bytes than the protected
 * message has. */
#define OSCORE_MAX_OVERHEAD 256
/* Largest Sender Sequence Number (RFC 8613 Section 7.2.1). */
#define OSCORE_SSN_MAX               ((UINT64_C(1) << 40) - 1)
#define OSCORE_DEFAULT_REPLAY_WINDOW 32
#define OSCORE_MAX_REPLAY_WINDOW     64
#define OSCORE_ECHO_LEN              8

/* ---- Errors ---- */

#define OSCORE_ERR_INVALID           (-3001) /* bad argument or parameter */
#define OSCORE_ERR_UNSUPPORTED       (-3002) /* unknown AEAD or HKDF algorithm */
#define OSCORE_ERR_MALFORMED         (-3003) /* the CoAP message does not parse */
#define OSCORE_ERR_NOT_OSCORE        (-3004) /* unprotect: no OSCORE option / protect: already has one */
#define OSCORE_ERR_BAD_OPTION        (-3005) /* malformed OSCORE option or COSE object: 4.02 */
#define OSCORE_ERR_CONTEXT_NOT_FOUND (-3006) /* kid / kid context do not name this context: 4.01 */
#define OSCORE_ERR_REPLAY            (-3007) /* Partial IV already seen or too old: 4.01 */
#define OSCORE_ERR_DECRYPT           (-3008) /* AEAD verification failed: 4.00 */
#define OSCORE_ERR_ECHO_REQUIRED                                                                   \
    (-3009) /* replay window unknown: answer with oscore_protect_echo_challenge() */
#define OSCORE_ERR_SSN_EXHAUSTED (-3010) /* sender sequence number above 2^40-1: rekey */
#define OSCORE_ERR_PERSIST       (-3011) /* the store callback failed; nothing was sent */
#define OSCORE_ERR_BUFFER        (-3012) /* output buffer too small */
#define OSCORE_ERR_CRYPTO        (-3013) /* the crypto backend failed */
#define OSCORE_ERR_TOO_LARGE                                                                       \
    (-3014) /* plaintext above oscore_context_max_plaintext() or too many options */
#define OSCORE_ERR_UNEXPECTED                                                                      \
    (-3015) /* response not acceptable for this request (already answered, Observe mismatch) */
#define OSCORE_ERR_INNER  (-3016) /* decrypted content is not a valid CoAP message: 4.00 */
#define OSCORE_ERR_CONFIG (-3017) /* configuration text rejected (see struct oscore_config_error) */
#define OSCORE_ERR_NOMEM                                                                           \
    (-3018) /* no memory for the plaintext of a message above OSCORE_MAX_PLAINTEXT */
#define OSCORE_ERR_KID_CONTEXT                                                                     \
    (-3019) /* B.2: kid context missing, empty, or not an R value this step expects */
#define OSCORE_ERR_ID_CONTEXT_TOO_LONG                                                             \
    (-3020)                     /* B.2: R2 || ID1 or R2 || R3 above OSCORE_MAX_ID_CONTEXT */
#define OSCORE_ERR_BUSY (-3021) /* B.2: every slot for a pending R2 is taken: 5.03 */

/* Human-readable text of an OSCORE_ERR_* (or COAP_MSG_ERR_*) code. */
const char *oscore_strerror(int err);

/* ---- Security context ---- */

/* Called before a Sender Sequence Number at or above the last stored mark
 * is used: the application must durably store `mark` (every SSN used so far
 * is below it) and return 0 only once it is stored. A non-zero return makes
 * protect fail with OSCORE_ERR_PERSIST. */
typedef int (*oscore_store_ssn_fn)(void *user, uint64_t mark);

/* Called instead of oscore_store_ssn_fn when the context is shared by
 * several processes (a static context used by one client run after
 * another, or by runs at the same time): durably reserve `count` sequence
 * numbers starting at or above `next` that no other user of the context
 * was or will be given, write the first into *first and return 0. A
 * non-zero return, or *first below `next`, makes protect fail with
 * OSCORE_ERR_PERSIST. */
typedef int (*oscore_reserve_ssn_fn)(void *user, uint64_t next, uint64_t count, uint64_t *first);

/* Input parameters of RFC 8613 Section 3.2. Pointers are only read during
 * oscore_context_init(). */
struct oscore_params {
    int aead_alg; /* COSE id: 10, 30, 1, 3, 24; 0 means 10 */
    int hkdf_alg; /* hash COSE id: -16 (SHA-256) or -43 (SHA-384); 0 means -16 */
    const uint8_t *master_secret;
    size_t master_secret_len;   /* 1..OSCORE_MAX_MASTER_SECRET */
    const uint8_t *master_salt; /* NULL/0: the empty default salt */
    size_t master_salt_len;
    const uint8_t *id_context; /* NULL: absent (nil); non-NULL: present, may be empty */
    size_t id_context_len;
    const uint8_t *sender_id; /* may be empty; <= nonce length - 6 */
    size_t sender_id_len;
    const uint8_t *recipient_id;
    size_t recipient_id_len;
    unsigned replay_window; /* 1..64; 0 means 32 */
};

/* One OSCORE security context. Fixed size (see README / tests for the
 * number), no pointers to caller memory except the crypto table and the
 * persistence callback's user pointer. Treat the fields as private. */
struct oscore_context {
    const struct edhoc_crypto_ops *crypto;
    oscore_store_ssn_fn store_ssn;
    oscore_reserve_ssn_fn reserve_ssn;
    void *store_user;
    uint64_t ssn;         /* next Sender Sequence Number */
    uint64_t ssn_stored;  /* every SSN below this may be used without a store */
    uint64_t window_top;  /* highest Partial IV accepted */
    uint64_t window_bits; /* bit i set: window_top - i was accepted */
    uint32_t ssn_freq;    /* K of Appendix B.1.1 */
    int16_t aead_alg;
    uint8_t key_len, nonce_len, tag_len, window_size;
    uint8_t flags;
    uint8_t sender_id_len, recipient_id_len, id_context_len;
    uint8_t sender_id[OSCORE_MAX_ID];
    uint8_t recipient_id[OSCORE_MAX_ID];
    uint8_t id_context[OSCORE_MAX_ID_CONTEXT];
    uint8_t echo[OSCORE_ECHO_LEN];
    uint8_t common_iv[EDHOC_CRYPTO_MAX_NONCE];
    uint8_t sender_key[EDHOC_CRYPTO_MAX_KEY];
    uint8_t recipient_key[EDHOC_CRYPTO_MAX_KEY];
};

/* Derive a context (RFC 8613 Section 3.2.1): Sender Key, Recipient Key and
 * Common IV with HKDF(salt, secret, info, L), L the key / nonce length of
 * the AEAD. SSN starts at 0 and the replay window is empty (accepts any
 * first Partial IV). Returns 0, OSCORE_ERR_INVALID (NULL, lengths, IDs too
 * long for the nonce, window out of range), OSCORE_ERR_UNSUPPORTED
 * (algorithm), OSCORE_ERR_CRYPTO. On error *c is wiped. */
int oscore_context_init(struct oscore_context *c, const struct edhoc_crypto_ops *crypto,
                        const struct oscore_params *p);

/* The context RFC 9528 Appendix A.1 establishes after EDHOC: master
 * secret/salt from the EDHOC exporter, Sender ID = the peer's connection
 * identifier (C_R for the Initiator, C_I for the Responder), Recipient ID =
 * the own one, the application AEAD and hash of the cipher suite, no ID
 * Context. Same returns as oscore_context_init(). */
int oscore_context_init_edhoc(struct oscore_context *c, const struct edhoc_crypto_ops *crypto,
                              const uint8_t *master_secret, size_t master_secret_len,
                              const uint8_t *master_salt, size_t master_salt_len,
                              const uint8_t *sender_id, size_t sender_id_len,
                              const uint8_t *recipient_id, size_t recipient_id_len, int aead_alg,
                              int hash_alg);

/* Wipe every key and state byte. */
void oscore_context_wipe(struct oscore_context *c);

/* Ask for a durable store of a high-water mark every `ssn_freq` (K >= 1)
 * sequence numbers (Appendix B.1.1). fn NULL disables it. Returns 0 or
 * OSCORE_ERR_INVALID (K == 0). */
int oscore_context_set_persistence(struct oscore_context *c, oscore_store_ssn_fn fn, void *user,
                                   uint32_t ssn_freq);

/* Reserve sequence numbers `count` (>= 1) at a time through fn before
 * any is used; the context's sender sequence number jumps to the first
 * number of each reservation. Replaces a store callback. fn NULL disables
 * it. Returns 0 or OSCORE_ERR_INVALID (count == 0 with fn). */
int oscore_context_set_reservation(struct oscore_context *c, oscore_reserve_ssn_fn fn, void *user,
                                   uint32_t count);

/* After a restart: continue from the last stored mark (every SSN used
 * before the restart is below it, so no nonce repeats), and forget the
 * replay window so that the first request is answered with an Echo
 * challenge (Appendix B.1.2). Returns 0 or OSCORE_ERR_SSN_EXHAUSTED
 * (mark above 2^40 - 1 + 1; the context is then left exhausted, so that
 * it cannot send even if the error is ignored). */
int oscore_context_resume(struct oscore_context *c, uint64_t stored_mark);

/* Move the Sender Sequence Number forward to ssn (tools and tests; never
 * backwards, which would reuse nonces). Returns 0, OSCORE_ERR_INVALID
 * (ssn below the current one) or OSCORE_ERR_SSN_EXHAUSTED. */
int oscore_context_set_ssn(struct oscore_context *c, uint64_t ssn);

/* The next Sender Sequence Number. */
uint64_t oscore_context_ssn(const struct oscore_context *c);

/* The largest plaintext (inner code, Class E options, payload) this
 * context protects or unprotects: OSCORE_MAX_MESSAGE, or 65535 bytes for
 * AES-CCM-16-64-128 and AES-CCM-16-128-128, whose 13-byte nonce leaves two
 * bytes for CCM's length field (RFC 3610 Section 2: l(m) < 2^(8L)). A
 * block-wise sender keeps each inner message below this. */
size_t oscore_context_max_plaintext(const struct oscore_context *c);

/* Derived values, for tests and inspection: sender key, recipient key
 * (key_len bytes), common IV (nonce_len bytes). */
size_t oscore_context_sender_key(const struct oscore_context *c, const uint8_t **key);
size_t oscore_context_recipient_key(const struct oscore_context *c, const uint8_t **key);
size_t oscore_context_common_iv(const struct oscore_context *c, const uint8_t **iv);

/* ---- Building blocks (exposed for tests and tools) ---- */

/* The AEAD nonce of RFC 8613 Section 5.2 for ID_PIV id and Partial IV piv
 * (1..5 bytes), nonce_len bytes into nonce. Returns 0 or OSCORE_ERR_INVALID
 * (id longer than nonce_len - 6, piv longer than 5). */
int oscore_nonce(const struct oscore_context *c, const uint8_t *id, size_t id_len,
                 const uint8_t *piv, size_t piv_len, uint8_t *nonce);

/* The AEAD additional data (Enc_structure with the external_aad of
 * Section 5.4, no Class I options). Returns its length,
 * OSCORE_ERR_BUFFER or OSCORE_ERR_INVALID. */
long oscore_aad(int aead_alg, const uint8_t *request_kid, size_t kid_len,
                const uint8_t *request_piv, size_t piv_len, uint8_t *out, size_t cap);

/* Partial IV of a sequence number: big-endian without leading zero bytes,
 * 0 as 0x00. Returns its length (1..5), 0 above OSCORE_SSN_MAX. */
size_t oscore_piv_encode(uint64_t ssn, uint8_t piv[OSCORE_MAX_PIV]);

/* ---- OSCORE option value (Section 6.1) ---- */

struct oscore_option {
    const uint8_t *piv; /* NULL when absent */
    size_t piv_len;     /* 0..5 */
    bool has_kid_context;
    const uint8_t *kid_context;
    size_t kid_context_len;
    bool has_kid;
    const uint8_t *kid;
    size_t kid_len;
};

/* ---- Option classes (Section 4.1, Figure 5) ---- */

#define OSCORE_CLASS_E 0x1u /* encrypted and integrity protected (Inner) */
#define OSCORE_CLASS_I 0x2u /* integrity protected only (Outer, in the AAD) */
#define OSCORE_CLASS_U 0x4u /* unprotected (Outer) */

/* The classes an option may take (OR of OSCORE_CLASS_*): Figure 5 for the
 * options it lists, RFC 9175 Sections 2.2.1 and 3.2.1 for Echo and
 * Request-Tag (E and U), and Class E for every other option ("Options
 * that are unknown or for which OSCORE processing is not defined SHALL be
 * processed as Class E", Section 4.1). No option is Class I. An option
 * that is both E and U is sent Inner (only Observe is also copied outer). */
unsigned oscore_option_class(uint16_t number);

/* Parse an OSCORE option value; pointers refer into v. Returns 0 or
 * OSCORE_ERR_BAD_OPTION (reserved bits or n = 6/7, truncated Partial IV or
 * kid context, a lone 0x00 flag byte). */
int oscore_option_parse(const uint8_t *v, size_t len, struct oscore_option *o);

/* Encode an option value. Returns its length, OSCORE_ERR_BUFFER or
 * OSCORE_ERR_INVALID (piv_len > 5, kid context > 255). */
long oscore_option_encode(const struct oscore_option *o, uint8_t *out, size_t cap);

/* Find and parse the OSCORE option of a whole CoAP message, e.g. to pick
 * the context by kid / kid context before unprotecting. Returns 0,
 * OSCORE_ERR_MALFORMED, OSCORE_ERR_NOT_OSCORE or OSCORE_ERR_BAD_OPTION. */
int oscore_message_option(const uint8_t *msg, size_t len, struct oscore_option *o);

/* ---- Protect / unprotect ---- */

/* Per-request state linking a request to its response(s) (Section 7.1,
 * 8): request kid and Partial IV for the AAD and the nonce, and for
 * Observe the notification number (Section 7.4.1). Filled by
 * oscore_protect_request (client) and oscore_unprotect_request (server);
 * keep it as long as responses may come. */
struct oscore_binding {
    uint64_t notification_number;
    uint8_t kid[OSCORE_MAX_ID];
    uint8_t kid_len;
    uint8_t piv[OSCORE_MAX_PIV];
    uint8_t piv_len;
    uint8_t flags; /* private */
};

/* Client: rebuild the binding of a request this endpoint protected earlier
 * from its protected bytes (kid, Partial IV, Observe registration), e.g.
 * when the binding was not kept or a tool only has the bytes. It verifies
 * nothing: only use it for own requests. Returns 0, OSCORE_ERR_MALFORMED,
 * OSCORE_ERR_NOT_OSCORE or OSCORE_ERR_BAD_OPTION (no Partial IV or kid,
 * kid longer than OSCORE_MAX_ID). */
int oscore_binding_from_request(struct oscore_binding *b, const uint8_t *protected_request,
                                size_t len);

/* Client: protect a CoAP request (whole message bytes) with the next
 * Sender Sequence Number. Class E options and the payload are encrypted,
 * Uri-Host, Uri-Port, Proxy-Scheme stay outer, Proxy-Uri is split (its
 * path and query become inner), Observe is both inner and outer (outer
 * code then FETCH, else POST). out needs at most len + OSCORE_MAX_OVERHEAD
 * bytes. Returns the protected length or OSCORE_ERR_MALFORMED,
 * OSCORE_ERR_INVALID (not a request, an Observe value longer than the 3
 * bytes of RFC 7641 Section 2), OSCORE_ERR_NOT_OSCORE (it already has an
 * OSCORE option), OSCORE_ERR_TOO_LARGE (plaintext above
 * oscore_context_max_plaintext(), too many options), OSCORE_ERR_NOMEM,
 * OSCORE_ERR_BUFFER, OSCORE_ERR_SSN_EXHAUSTED, OSCORE_ERR_PERSIST,
 * OSCORE_ERR_CRYPTO. The SSN is consumed only on success. */
long oscore_protect_request(struct oscore_context *c, const uint8_t *msg, size_t len, uint8_t *out,
                            size_t cap, struct oscore_binding *b);

/* Server: verify and decrypt an OSCORE request; out receives the inner
 * CoAP request (outer header and token, inner code, Uri-Host/Uri-Port/
 * Proxy-Scheme/Proxy-Uri from outside, the inner options, the payload);
 * cap = len always suffices. Returns its length or OSCORE_ERR_MALFORMED,
 * OSCORE_ERR_NOT_OSCORE, OSCORE_ERR_BAD_OPTION (also: no Partial IV or
 * kid, no payload), OSCORE_ERR_CONTEXT_NOT_FOUND, OSCORE_ERR_REPLAY,
 * OSCORE_ERR_DECRYPT, OSCORE_ERR_INNER, OSCORE_ERR_ECHO_REQUIRED (after a
 * resume; b is filled for oscore_protect_echo_challenge),
 * OSCORE_ERR_TOO_LARGE (ciphertext longer than
 * oscore_context_max_plaintext() + tag, checked before decrypting),
 * OSCORE_ERR_NOMEM, OSCORE_ERR_BUFFER, OSCORE_ERR_CRYPTO. The replay
 * window changes only when the request is accepted. */
long oscore_unprotect_request(struct oscore_context *c, const uint8_t *msg, size_t len,
                              uint8_t *out, size_t cap, struct oscore_binding *b);

/* Server: protect a response to the request bound in b. with_piv: use a
 * new Partial IV from the Sender Sequence Number (as in RFC 8613 C.8); else
 * reuse the request's nonce (C.7), which is allowed once per request: later
 * responses (Observe notifications) always get their own Partial IV. With
 * Observe the inner Observe is empty, the outer one keeps the value and the
 * outer code is 2.05, else 2.04. out needs at most len + OSCORE_MAX_OVERHEAD
 * bytes. Returns the length or OSCORE_ERR_MALFORMED, OSCORE_ERR_INVALID
 * (code not 2.xx-5.xx, bad binding), OSCORE_ERR_NOT_OSCORE,
 * OSCORE_ERR_TOO_LARGE, OSCORE_ERR_NOMEM, OSCORE_ERR_BUFFER,
 * OSCORE_ERR_SSN_EXHAUSTED, OSCORE_ERR_PERSIST, OSCORE_ERR_CRYPTO. */
long oscore_protect_response(struct oscore_context *c, struct oscore_binding *b, const uint8_t *msg,
                             size_t len, bool with_piv, uint8_t *out, size_t cap);

/* Client: verify and decrypt a response to the request bound in b. A
 * response with a Partial IV uses the recipient nonce, one without reuses
 * the request's. Notifications (inner Observe on an Observe registration)
 * must have Partial IVs above the notification number. cap = len always
 * suffices. Returns the inner length or OSCORE_ERR_MALFORMED,
 * OSCORE_ERR_NOT_OSCORE, OSCORE_ERR_BAD_OPTION, OSCORE_ERR_DECRYPT,
 * OSCORE_ERR_KID_CONTEXT (the response carries a 'kid context': it is
 * response #1 of Appendix B.2, for oscore_b2_client_response1()),
 * OSCORE_ERR_INNER, OSCORE_ERR_REPLAY (a second response to a plain
 * request, an old notification), OSCORE_ERR_UNEXPECTED (Observe in a
 * response to a non-Observe request), OSCORE_ERR_INVALID,
 * OSCORE_ERR_TOO_LARGE, OSCORE_ERR_NOMEM, OSCORE_ERR_BUFFER,
 * OSCORE_ERR_CRYPTO. */
long oscore_unprotect_response(struct oscore_context *c, struct oscore_binding *b,
                               const uint8_t *msg, size_t len, uint8_t *out, size_t cap);

/* Server, after OSCORE_ERR_ECHO_REQUIRED: a protected 4.01 (Unauthorized)
 * carrying only an inner Echo option with a fresh random value, with the
 * server's own Partial IV (Appendix B.1.2). request is the received
 * protected request (its type, Message ID and token are answered). The
 * retried request carrying this Echo value is accepted and its Partial IV
 * becomes the lower edge of the replay window. Returns the length or
 * OSCORE_ERR_MALFORMED, OSCORE_ERR_INVALID, OSCORE_ERR_BUFFER,
 * OSCORE_ERR_SSN_EXHAUSTED, OSCORE_ERR_PERSIST, OSCORE_ERR_CRYPTO. */
long oscore_protect_echo_challenge(struct oscore_context *c, struct oscore_binding *b,
                                   const uint8_t *request, size_t request_len, uint8_t *out,
                                   size_t cap);

/* True while the replay window is unknown (after a resume, until an Echo
 * exchange completes). */
bool oscore_context_needs_echo(const struct oscore_context *c);

/* The unprotected error response (Sections 7.4, 8.2) for an unprotect
 * error of a request: OSCORE_ERR_BAD_OPTION -> 4.02 "Failed to decode
 * COSE", OSCORE_ERR_CONTEXT_NOT_FOUND -> 4.01 "Security context not found",
 * OSCORE_ERR_DECRYPT and OSCORE_ERR_INNER -> 4.00 "Decryption failed",
 * OSCORE_ERR_REPLAY -> 4.01 "Replay detected", OSCORE_ERR_KID_CONTEXT and
 * OSCORE_ERR_ID_CONTEXT_TOO_LONG -> 4.01 "Security context not found",
 * OSCORE_ERR_BUSY -> 5.03 (Appendix B.2.1); each with an Outer Max-Age
 * of 0, answering request's type (CON -> ACK, NON -> NON; a NON answer
 * needs a fresh Message ID from the transport), Message ID and token.
 * Returns the length, OSCORE_ERR_INVALID (err has no such response),
 * OSCORE_ERR_MALFORMED (request does not parse) or OSCORE_ERR_BUFFER. */
long oscore_error_response(int err, const uint8_t *request, size_t request_len, uint8_t *out,
                           size_t cap);

/* ---- Static configuration (libcoap coap-oscore-conf(5) text) ---- */

struct oscore_config {
    uint8_t master_secret[OSCORE_MAX_MASTER_SECRET];
    size_t master_secret_len;
    uint8_t master_salt[OSCORE_MAX_MASTER_SALT];
    size_t master_salt_len;
    uint8_t id_context[OSCORE_MAX_ID_CONTEXT];
    size_t id_context_len;
    uint8_t sender_id[OSCORE_MAX_ID];
    size_t sender_id_len;
    uint8_t recipient_id[OSCORE_MAX_ID];
    size_t recipient_id_len;
    bool has_master_secret, has_master_salt, has_id_context;
    bool has_sender_id, has_recipient_id;
    int aead_alg;           /* COSE id (default 10) */
    int hkdf_alg;           /* hash COSE id (-16 or -43); default -16 */
    unsigned replay_window; /* default 32 */
    uint32_t ssn_freq;      /* default 1 */
    bool rfc8613_b2;        /* rfc8613_b_2,bool,true: the server may run Appendix B.2 */
};

struct oscore_config_error {
    unsigned line; /* 1-based; 0 when the error is not tied to a line */
    char message[120];
};

/* Parse libcoap's OSCORE configuration format: `keyword,encoding,value`
 * lines (encodings ascii, hex, integer, text, bool; values optionally in
 * double quotes), '#' comment lines, empty lines, and complex_sender /
 * complex_recipient blocks between single quotes. Keywords: master_secret,
 * master_salt, id_context, sender_id, recipient_id, aead_alg (integer or a
 * COSE name such as "AES-CCM-16-64-128"), hkdf_alg (-10 or
 * "direct+HKDF-SHA-256" = HKDF SHA-256, -16/-43 or "HKDF-SHA-256"/
 * "HKDF-SHA-384"), replay_window (1..64), ssn_freq (>= 1), and the accepted
 * but inactive rfc8613_b_1_2, silent_server, last_seq, sliding_window,
 * break_* (false only), and rfc8613_b_2 (sets rfc8613_b2). Master secret, sender ID
 * and recipient ID are required. Returns 0 or OSCORE_ERR_CONFIG with err
 * filled (line number and reason). */
int oscore_config_parse(const char *text, size_t len, struct oscore_config *cfg,
                        struct oscore_config_error *err);

/* Derive the context a parsed configuration describes (persistence with
 * the configured ssn_freq is left to oscore_context_set_persistence). Same
 * returns as oscore_context_init(). */
int oscore_context_init_config(struct oscore_context *c, const struct edhoc_crypto_ops *crypto,
                               const struct oscore_config *cfg);

/* ---- Appendix B.2: security context derived multiple times ---- */

/* Length of the random values R1, R2 and R3 this side draws by default:
 * "typically, at least 8 bytes long" (Appendix B.2). */
#define OSCORE_B2_NONCE_LEN 8
/* Response #1 values a server keeps per context at a time (B.2.1: "The
 * server needs to handle the case when the maximum number of cached R2s
 * is reached"; it answers 5.03 then), and how long each stays valid. */
#define OSCORE_B2_MAX_PENDING 4
#define OSCORE_B2_PENDING_MS  60000u

/* Client side. The state moves only forward, and only on success:
 *   IDLE --start--> SENT_R1 (optional step 1: request #1 under ID1 = R1)
 *   IDLE or SENT_R1 --response1--> SENT_R3 (step 3: response #1 verified
 *        under ID2 = R2 || ID1, request #2 goes under ID3 = R2 || R3)
 *   SENT_R3 --response2--> DONE (step 5: response #2 verified; ID3 is now
 *        the context with this server, the others are deleted) */
enum oscore_b2_client_state {
    OSCORE_B2_CLIENT_IDLE = 0,
    OSCORE_B2_CLIENT_SENT_R1,
    OSCORE_B2_CLIENT_SENT_R3,
    OSCORE_B2_CLIENT_DONE,
};

struct oscore_b2_client {
    enum oscore_b2_client_state state;
    uint8_t r_len;  /* R1 and R3 length */
    uint8_t r2_len; /* after step 3 */
    uint8_t id_context_len;
    uint8_t r2[OSCORE_MAX_ID_CONTEXT];
    uint8_t id_context[OSCORE_MAX_ID_CONTEXT]; /* ID1 = R1 after step 1, ID3 after step 3 */
};

/* Reset to IDLE; r_len: length of R1 / R3 (1..OSCORE_MAX_ID_CONTEXT - 1,
 * 0 means OSCORE_B2_NONCE_LEN). Returns 0 or OSCORE_ERR_INVALID. */
int oscore_b2_client_init(struct oscore_b2_client *st, size_t r_len);

/* Step 1 (optional, the client initiates): draw R1 and derive into *first
 * the context with ID Context = ID1 = R1 and cfg's other input
 * parameters; protect request #1 with it (oscore_protect_request sends R1
 * as 'kid context'). Returns 0, OSCORE_ERR_UNEXPECTED (state not IDLE),
 * OSCORE_ERR_INVALID, OSCORE_ERR_CRYPTO, or what oscore_context_init()
 * returns. */
int oscore_b2_client_start(struct oscore_b2_client *st, const struct edhoc_crypto_ops *crypto,
                           const struct oscore_config *cfg, struct oscore_context *first);

/* True when a response carries a 'kid context': by Appendix B.2 only
 * response #1 does, so the server asks for step 3. */
bool oscore_b2_is_response1(const uint8_t *response, size_t len);

/* Step 3: response #1 to the request bound in b, which was protected with
 * current (ID Context ID1: the configured one, or R1 after step 1). Takes
 * R2 from the response's 'kid context', verifies and decrypts the response
 * with ID Context ID2 = R2 || ID1 into out (an inner 4.01 is required:
 * the server did not perform request #1), draws R3 and derives into *next
 * the context with ID3 = R2 || R3, which protects request #2 (and sends
 * ID3 as 'kid context'). Returns the inner length, or
 * OSCORE_ERR_KID_CONTEXT (no or an empty 'kid context'),
 * OSCORE_ERR_ID_CONTEXT_TOO_LONG (R2 || ID1 or R2 || R3 longer than
 * OSCORE_MAX_ID_CONTEXT), OSCORE_ERR_REPLAY (a response #1 after step 3
 * already ran, or b already answered), OSCORE_ERR_UNEXPECTED (state DONE,
 * or the inner code is not 4.01), and the errors of
 * oscore_unprotect_response(). Nothing changes on error. */
long oscore_b2_client_response1(struct oscore_b2_client *st, const struct edhoc_crypto_ops *crypto,
                                const struct oscore_config *cfg,
                                const struct oscore_context *current, struct oscore_binding *b,
                                const uint8_t *response, size_t len, uint8_t *out, size_t cap,
                                struct oscore_context *next);

/* Step 5: response #2 to request #2 (protected with next, bound in b).
 * Returns the inner length (state DONE: next replaces the previous
 * context), OSCORE_ERR_KID_CONTEXT (it carries a 'kid context': the
 * server started another run, which this one does not follow),
 * OSCORE_ERR_REPLAY (state already DONE), OSCORE_ERR_UNEXPECTED (step 3
 * has not run), or the errors of oscore_unprotect_response(). */
long oscore_b2_client_response2(struct oscore_b2_client *st, struct oscore_context *next,
                                struct oscore_binding *b, const uint8_t *response, size_t len,
                                uint8_t *out, size_t cap);

/* Server side, per set of immutable input parameters (one Recipient ID):
 * the R2 values sent in responses #1 and not yet used, and the last R2
 * that completed a run (a request #2 with it again is a replay). */
struct oscore_b2_server {
    uint8_t r_len;   /* R2 length */
    uint8_t pending; /* bit i: r2[i] was sent and not used */
    bool has_done;
    uint64_t issued_ms[OSCORE_B2_MAX_PENDING];
    uint8_t r2[OSCORE_B2_MAX_PENDING][OSCORE_MAX_ID_CONTEXT];
    uint8_t done_r2[OSCORE_MAX_ID_CONTEXT];
};

/* Reset (no R2 pending); r_len: R2 length (1..OSCORE_MAX_ID_CONTEXT - 1,
 * 0 means OSCORE_B2_NONCE_LEN). Returns 0 or OSCORE_ERR_INVALID. */
int oscore_b2_server_init(struct oscore_b2_server *st, size_t r_len);

/* True when request carries a 'kid context' that starts with an R2 this
 * server sent less than OSCORE_B2_PENDING_MS before now_ms: it is request
 * #2 (step 4), for oscore_b2_server_request2(). */
bool oscore_b2_server_is_request2(const struct oscore_b2_server *st, const uint8_t *request,
                                  size_t len, uint64_t now_ms);

/* Step 2: a request for which the server has no valid context (lost
 * replay window or Sender Sequence Number, or a 'kid context' it does not
 * know). ID1 = the request's 'kid context' (else cfg's ID Context, else
 * none); verifies the request with the context of ID1 and cfg's inputs
 * (the inner request is discarded: it is not performed), draws R2, and
 * writes into out a 4.01 (Unauthorized) protected with ID Context ID2 =
 * R2 || ID1, with R2 as its 'kid context'. R2 stays pending for
 * OSCORE_B2_PENDING_MS. now_ms: any monotonic clock in milliseconds.
 * Returns the response length, or OSCORE_ERR_CONTEXT_NOT_FOUND (kid is
 * not cfg's Recipient ID), OSCORE_ERR_ID_CONTEXT_TOO_LONG (R2 || ID1),
 * OSCORE_ERR_BUSY (OSCORE_B2_MAX_PENDING runs pending: answer 5.03, see
 * oscore_error_response), the errors of oscore_unprotect_request(),
 * OSCORE_ERR_BUFFER, OSCORE_ERR_NOMEM, OSCORE_ERR_CRYPTO. */
long oscore_b2_server_request1(struct oscore_b2_server *st, const struct edhoc_crypto_ops *crypto,
                               const struct oscore_config *cfg, const uint8_t *request, size_t len,
                               uint64_t now_ms, uint8_t *out, size_t cap);

/* Step 4: request #2, whose 'kid context' ID3 starts with a pending R2.
 * Derives into *next the context with ID Context ID3 and cfg's inputs and
 * unprotects the request with it (out, b as oscore_unprotect_request).
 * On success every pending R2 is dropped, next is the context to use with
 * this client from now on (it replaces the previous one; answer with
 * oscore_protect_response(next, b, ...)), and the inner length is
 * returned. Errors: OSCORE_ERR_KID_CONTEXT (no 'kid context', or it does
 * not start with a pending R2, or holds nothing after it),
 * OSCORE_ERR_REPLAY (it starts with the R2 of the run that completed),
 * OSCORE_ERR_CONTEXT_NOT_FOUND (kid), and those of
 * oscore_unprotect_request(); on error pending R2s stay and *next is wiped. */
long oscore_b2_server_request2(struct oscore_b2_server *st, const struct edhoc_crypto_ops *crypto,
                               const struct oscore_config *cfg, const uint8_t *request, size_t len,
                               uint64_t now_ms, struct oscore_context *next, uint8_t *out,
                               size_t cap, struct oscore_binding *b);

/* The ID Context of a context (NULL when it has none), for callers that
 * key contexts by it. */
const uint8_t *oscore_context_id_context(const struct oscore_context *c, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
