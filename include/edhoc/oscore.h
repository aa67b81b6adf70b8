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
 * Option classes (Section 4.1): Uri-Host, Uri-Port, Proxy-Scheme and the
 * scheme://authority part of Proxy-Uri are Class U (outer); Observe is
 * both; every other option, unknown ones included (Block1/2, Size1/2,
 * Max-Age, No-Response, Echo, Request-Tag, ...), is Class E (inner), i.e.
 * Block options are end-to-end. Outer Block options added by proxies are
 * for the transport to reassemble before unprotect; received outer Class E
 * options are discarded. There are no Class I options.
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
#define OSCORE_MAX_ID 7
#define OSCORE_MAX_ID_CONTEXT 16
#define OSCORE_MAX_MASTER_SECRET 64
#define OSCORE_MAX_MASTER_SALT 64
#define OSCORE_MAX_PIV 5
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
#define OSCORE_SSN_MAX ((UINT64_C(1) << 40) - 1)
#define OSCORE_DEFAULT_REPLAY_WINDOW 32
#define OSCORE_MAX_REPLAY_WINDOW 64
#define OSCORE_ECHO_LEN 8

/* ---- Errors ---- */

#define OSCORE_ERR_INVALID (-3001)        /* bad argument or parameter */
#define OSCORE_ERR_UNSUPPORTED (-3002)    /* unknown AEAD or HKDF algorithm */
#define OSCORE_ERR_MALFORMED (-3003)      /* the CoAP message does not parse */
#define OSCORE_ERR_NOT_OSCORE (-3004)     /* unprotect: no OSCORE option / protect: already has one */
#define OSCORE_ERR_BAD_OPTION (-3005)     /* malformed OSCORE option or COSE object: 4.02 */
#define OSCORE_ERR_CONTEXT_NOT_FOUND (-3006) /* kid / kid context do not name this context: 4.01 */
#define OSCORE_ERR_REPLAY (-3007)         /* Partial IV already seen or too old: 4.01 */
#define OSCORE_ERR_DECRYPT (-3008)        /* AEAD verification failed: 4.00 */
#define OSCORE_ERR_ECHO_REQUIRED (-3009)  /* replay window unknown: answer with oscore_protect_echo_challenge() */
#define OSCORE_ERR_SSN_EXHAUSTED (-3010)  /* sender sequence number above 2^40-1: rekey */
#define OSCORE_ERR_PERSIST (-3011)        /* the store callback failed; nothing was sent */
#define OSCORE_ERR_BUFFER (-3012)         /* output buffer too small */
#define OSCORE_ERR_CRYPTO (-3013)         /* the crypto backend failed */
#define OSCORE_ERR_TOO_LARGE (-3014)      /* plaintext above oscore_context_max_plaintext() or too many options */
#define OSCORE_ERR_UNEXPECTED (-3015)     /* response not acceptable for this request (already answered, Observe mismatch) */
#define OSCORE_ERR_INNER (-3016)          /* decrypted content is not a valid CoAP message: 4.00 */
#define OSCORE_ERR_CONFIG (-3017)         /* configuration text rejected (see struct oscore_config_error) */
#define OSCORE_ERR_NOMEM (-3018)          /* no memory for the plaintext of a message above OSCORE_MAX_PLAINTEXT */

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
    int aead_alg;  /* COSE id: 10, 30, 1, 3, 24; 0 means 10 */
    int hkdf_alg;  /* hash COSE id: -16 (SHA-256) or -43 (SHA-384); 0 means -16 */
    const uint8_t *master_secret;
    size_t master_secret_len;   /* 1..OSCORE_MAX_MASTER_SECRET */
    const uint8_t *master_salt; /* NULL/0: the empty default salt */
    size_t master_salt_len;
    const uint8_t *id_context;  /* NULL: absent (nil); non-NULL: present, may be empty */
    size_t id_context_len;
    const uint8_t *sender_id;   /* may be empty; <= nonce length - 6 */
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
int oscore_context_init(struct oscore_context *c,
                        const struct edhoc_crypto_ops *crypto,
                        const struct oscore_params *p);

/* The context RFC 9528 Appendix A.1 establishes after EDHOC: master
 * secret/salt from the EDHOC exporter, Sender ID = the peer's connection
 * identifier (C_R for the Initiator, C_I for the Responder), Recipient ID =
 * the own one, the application AEAD and hash of the cipher suite, no ID
 * Context. Same returns as oscore_context_init(). */
int oscore_context_init_edhoc(struct oscore_context *c,
                              const struct edhoc_crypto_ops *crypto,
                              const uint8_t *master_secret, size_t master_secret_len,
                              const uint8_t *master_salt, size_t master_salt_len,
                              const uint8_t *sender_id, size_t sender_id_len,
                              const uint8_t *recipient_id, size_t recipient_id_len,
                              int aead_alg, int hash_alg);

/* Wipe every key and state byte. */
void oscore_context_wipe(struct oscore_context *c);

/* Ask for a durable store of a high-water mark every `ssn_freq` (K >= 1)
 * sequence numbers (Appendix B.1.1). fn NULL disables it. Returns 0 or
 * OSCORE_ERR_INVALID (K == 0). */
int oscore_context_set_persistence(struct oscore_context *c,
                                   oscore_store_ssn_fn fn, void *user,
                                   uint32_t ssn_freq);

/* Reserve sequence numbers `count` (>= 1) at a time through fn before
 * any is used; the context's sender sequence number jumps to the first
 * number of each reservation. Replaces a store callback. fn NULL disables
 * it. Returns 0 or OSCORE_ERR_INVALID (count == 0 with fn). */
int oscore_context_set_reservation(struct oscore_context *c, oscore_reserve_ssn_fn fn,
                                   void *user, uint32_t count);

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
int oscore_nonce(const struct oscore_context *c, const uint8_t *id,
                 size_t id_len, const uint8_t *piv, size_t piv_len,
                 uint8_t *nonce);

/* The AEAD additional data (Enc_structure with the external_aad of
 * Section 5.4, no Class I options). Returns its length,
 * OSCORE_ERR_BUFFER or OSCORE_ERR_INVALID. */
long oscore_aad(int aead_alg, const uint8_t *request_kid, size_t kid_len,
                const uint8_t *request_piv, size_t piv_len, uint8_t *out,
                size_t cap);

/* Partial IV of a sequence number: big-endian without leading zero bytes,
 * 0 as 0x00. Returns its length (1..5), 0 above OSCORE_SSN_MAX. */
size_t oscore_piv_encode(uint64_t ssn, uint8_t piv[OSCORE_MAX_PIV]);

/* ---- OSCORE option value (Section 6.1) ---- */

struct oscore_option {
    const uint8_t *piv;          /* NULL when absent */
    size_t piv_len;              /* 0..5 */
    bool has_kid_context;
    const uint8_t *kid_context;
    size_t kid_context_len;
    bool has_kid;
    const uint8_t *kid;
    size_t kid_len;
};

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
long oscore_protect_request(struct oscore_context *c, const uint8_t *msg,
                            size_t len, uint8_t *out, size_t cap,
                            struct oscore_binding *b);

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
long oscore_unprotect_request(struct oscore_context *c, const uint8_t *msg,
                              size_t len, uint8_t *out, size_t cap,
                              struct oscore_binding *b);

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
long oscore_protect_response(struct oscore_context *c, struct oscore_binding *b,
                             const uint8_t *msg, size_t len, bool with_piv,
                             uint8_t *out, size_t cap);

/* Client: verify and decrypt a response to the request bound in b. A
 * response with a Partial IV uses the recipient nonce, one without reuses
 * the request's. Notifications (inner Observe on an Observe registration)
 * must have Partial IVs above the notification number. cap = len always
 * suffices. Returns the inner length or OSCORE_ERR_MALFORMED,
 * OSCORE_ERR_NOT_OSCORE, OSCORE_ERR_BAD_OPTION, OSCORE_ERR_DECRYPT,
 * OSCORE_ERR_INNER, OSCORE_ERR_REPLAY (a second response to a plain
 * request, an old notification), OSCORE_ERR_UNEXPECTED (Observe in a
 * response to a non-Observe request), OSCORE_ERR_INVALID,
 * OSCORE_ERR_TOO_LARGE, OSCORE_ERR_NOMEM, OSCORE_ERR_BUFFER,
 * OSCORE_ERR_CRYPTO. */
long oscore_unprotect_response(struct oscore_context *c, struct oscore_binding *b,
                               const uint8_t *msg, size_t len, uint8_t *out,
                               size_t cap);

/* Server, after OSCORE_ERR_ECHO_REQUIRED: a protected 4.01 (Unauthorized)
 * carrying only an inner Echo option with a fresh random value, with the
 * server's own Partial IV (Appendix B.1.2). request is the received
 * protected request (its type, Message ID and token are answered). The
 * retried request carrying this Echo value is accepted and its Partial IV
 * becomes the lower edge of the replay window. Returns the length or
 * OSCORE_ERR_MALFORMED, OSCORE_ERR_INVALID, OSCORE_ERR_BUFFER,
 * OSCORE_ERR_SSN_EXHAUSTED, OSCORE_ERR_PERSIST, OSCORE_ERR_CRYPTO. */
long oscore_protect_echo_challenge(struct oscore_context *c,
                                   struct oscore_binding *b,
                                   const uint8_t *request, size_t request_len,
                                   uint8_t *out, size_t cap);

/* True while the replay window is unknown (after a resume, until an Echo
 * exchange completes). */
bool oscore_context_needs_echo(const struct oscore_context *c);

/* The unprotected error response (Sections 7.4, 8.2) for an unprotect
 * error of a request: OSCORE_ERR_BAD_OPTION -> 4.02 "Failed to decode
 * COSE", OSCORE_ERR_CONTEXT_NOT_FOUND -> 4.01 "Security context not found",
 * OSCORE_ERR_DECRYPT and OSCORE_ERR_INNER -> 4.00 "Decryption failed",
 * OSCORE_ERR_REPLAY -> 4.01 "Replay detected"; each with an Outer Max-Age
 * of 0, answering request's type (CON -> ACK, NON -> NON; a NON answer
 * needs a fresh Message ID from the transport), Message ID and token.
 * Returns the length, OSCORE_ERR_INVALID (err has no such response),
 * OSCORE_ERR_MALFORMED (request does not parse) or OSCORE_ERR_BUFFER. */
long oscore_error_response(int err, const uint8_t *request, size_t request_len,
                           uint8_t *out, size_t cap);

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
 * break_* (false only), rfc8613_b_2 (false only). Master secret, sender ID
 * and recipient ID are required. Returns 0 or OSCORE_ERR_CONFIG with err
 * filled (line number and reason). */
int oscore_config_parse(const char *text, size_t len, struct oscore_config *cfg,
                        struct oscore_config_error *err);

/* Derive the context a parsed configuration describes (persistence with
 * the configured ssn_freq is left to oscore_context_set_persistence). Same
 * returns as oscore_context_init(). */
int oscore_context_init_config(struct oscore_context *c,
                               const struct edhoc_crypto_ops *crypto,
                               const struct oscore_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
