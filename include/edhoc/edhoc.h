/*
 * edhoc/edhoc.h - EDHOC (RFC 9528) protocol core, sans-I/O.
 *
 * The core never touches sockets, files or clocks. Every protocol step is one
 * function that takes the received bytes and/or writes the next message into
 * a caller buffer, and returns a byte count (>= 0) or a negative
 * EDHOC_ERR_* code.
 *
 * Objects:
 *   - struct edhoc_config: the long-lived settings of one endpoint (method,
 *     cipher suites, crypto backend, own credential, EAD, callbacks). It is
 *     owned by the application, may be shared by many sessions, and must
 *     outlive every session that points to it.
 *   - struct edhoc_session: the state of one handshake, caller-allocated,
 *     small (no credentials, no message buffers; see EDHOC_SESSION_SIZE_GOAL)
 *     and with an explicit state (enum edhoc_state).
 *   - struct edhoc_received: a transient, caller-allocated buffer that holds
 *     a decrypted PLAINTEXT_2/3/4 between "process" and "verify", and
 *     exposes what the peer sent (ID_CRED, EAD items).
 *
 * Flow (initiator I, responder R):
 *
 *   I: edhoc_session_init(&s, EDHOC_INITIATOR, &cfg); set_conn_id
 *   I: edhoc_initiator_prepare_message_1      -> message_1
 *   R: edhoc_session_init(&s, EDHOC_RESPONDER, &cfg); set_conn_id
 *   R: edhoc_responder_process_message_1      (on failure: write_error)
 *   R: edhoc_responder_prepare_message_2      -> message_2
 *   I: edhoc_initiator_process_message_2      -> rx.id_cred, rx.ead
 *      (the application resolves rx.id_cred to a trusted CRED_R)
 *   I: edhoc_initiator_verify_message_2(cred_r)
 *   I: edhoc_initiator_prepare_message_3      -> message_3; I completed
 *   R: edhoc_responder_process_message_3      -> rx.id_cred, rx.ead
 *   R: edhoc_responder_verify_message_3(cred_i); R completed
 *   R: edhoc_responder_prepare_message_4      (optional) -> message_4
 *   I: edhoc_initiator_process_message_4      (optional)
 *   both: edhoc_session_oscore / edhoc_session_export / key_update
 *
 * Failure: every function that fails with a protocol or crypto error moves
 * the session to EDHOC_STATE_ERROR and wipes its secrets; the application
 * then calls edhoc_session_write_error() to get the error message to send
 * (if any: it returns 0 when the RFC says to send none). Exceptions that
 * leave the session untouched (the call can simply be corrected and
 * repeated): EDHOC_ERR_ARG, EDHOC_ERR_STATE, EDHOC_ERR_CONN_ID_CONFLICT.
 *
 * Security: the trace callback receives every intermediate value, private
 * ephemeral keys and PRKs included, exactly as RFC 9529 prints them. It is a
 * debugging and test-vector aid; leave it NULL in production.
 */
#ifndef EDHOC_EDHOC_H
#define EDHOC_EDHOC_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "edhoc/crypto.h"
#include "edhoc/cred.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Compile-time maxima ---- */

#define EDHOC_MAX_SUITES    9    /* entries in a suite list (ours or a peer's) */
#define EDHOC_MAX_CONN_ID   8    /* bytes of C_I / C_R (OSCORE IDs stay short) */
#define EDHOC_MAX_EAD_ITEMS 8    /* EAD items received per message (padding not counted) */
#define EDHOC_MAX_EAD_SIZE  1024 /* encoded EAD_x bytes per message */
/* Largest ID_CRED_x map (an x5chain carries the whole chain). */
#define EDHOC_MAX_ID_CRED EDHOC_CRED_MAX_ID_CRED
/* Largest PLAINTEXT_2/3/4 and message: ID_CRED + signature + EAD + heads. */
#define EDHOC_MAX_PLAINTEXT (EDHOC_MAX_ID_CRED + EDHOC_CRYPTO_MAX_SIG + EDHOC_MAX_EAD_SIZE + 32)
#define EDHOC_MAX_MESSAGE                                                                          \
    (EDHOC_MAX_PLAINTEXT + EDHOC_CRYPTO_MAX_ECDH_PUB + EDHOC_CRYPTO_MAX_TAG + 16)
/* Largest error message written by this library (diagnostic text included). */
#define EDHOC_MAX_ERROR_MESSAGE 128
/* What one pending handshake may cost (the daemon prints the real size). */
#define EDHOC_SESSION_SIZE_GOAL 1024

/* ---- Error codes (negative; 0 / lengths mean success) ---- */

/* Local usage errors: the session is left unchanged. */
#define EDHOC_ERR_ARG   (-4001) /* NULL pointer, bad length, bad config */
#define EDHOC_ERR_STATE (-4002) /* function not allowed in this state / role */
#define EDHOC_ERR_CONN_ID_CONFLICT                                                                 \
    (-4003) /* R: own C_R equals the received C_I (RFC 9528 3.3.3): set another C_R and call again */
/* Local errors that abort the session. */
#define EDHOC_ERR_BUFFER          (-4004) /* the output buffer is too small */
#define EDHOC_ERR_TOO_LARGE       (-4005) /* a field exceeds a compile-time maximum */
#define EDHOC_ERR_CRYPTO          (-4006) /* the crypto backend or random source failed */
#define EDHOC_ERR_CREDENTIAL      (-4007) /* a credential/key does not fit the method and suite */
#define EDHOC_ERR_NO_COMMON_SUITE (-4008) /* I: the peer's SUITES_R has none of our suites */
/* Errors in a received message (decode / validation). */
#define EDHOC_ERR_MALFORMED (-4010) /* wrong CBOR type, structure or item count */
#define EDHOC_ERR_NOT_DETERMINISTIC                                                                \
    (-4011)                        /* non-shortest head or indefinite length (RFC 9528 3.1) */
#define EDHOC_ERR_TRAILING (-4012) /* bytes after the last item of the message/plaintext */
#define EDHOC_ERR_CONN_ID_ENCODING                                                                 \
    (-4013) /* C_x as bstr although it has an int form (RFC 9528 3.3.2) */
#define EDHOC_ERR_SUITES_ENCODING (-4014) /* SUITES_I/SUITES_R as a one-element array (5.2.2) */
#define EDHOC_ERR_ID_CRED_ENCODING                                                                 \
    (-4015) /* ID_CRED not in compact form where required (3.5.3.2) */
#define EDHOC_ERR_EPHEMERAL_LENGTH                                                                 \
    (-4016)                             /* G_X / G_Y length differs from the suite's curve (3.7) */
#define EDHOC_ERR_INVALID_POINT (-4017) /* G_X / G_Y not on the curve, or low order (9.2) */
#define EDHOC_ERR_MAC_LENGTH    (-4018) /* Signature_or_MAC has the wrong length (9.3) */
#define EDHOC_ERR_METHOD        (-4019) /* METHOD out of range or not accepted */
#define EDHOC_ERR_WRONG_SUITE                                                                      \
    (-4020) /* R: selected suite unsupported or a preferred one supported (error code 2) */
#define EDHOC_ERR_CONN_ID_EQUAL (-4021) /* I: received C_R equals our C_I (3.3.3) */
#define EDHOC_ERR_EAD_CRITICAL  (-4022) /* an unrecognized critical EAD item (3.8) */
#define EDHOC_ERR_EAD_REJECTED  (-4023) /* the application refused an EAD item */
#define EDHOC_ERR_UNSUPPORTED                                                                      \
    (-4024) /* valid but unsupported (e.g. PLAINTEXT_2 longer than one KDF output) */
/* Authentication failures. */
#define EDHOC_ERR_MAC       (-4030) /* MAC_2 / MAC_3 did not verify */
#define EDHOC_ERR_SIGNATURE (-4031) /* Signature_or_MAC_2/3 signature did not verify */
#define EDHOC_ERR_DECRYPT   (-4032) /* AEAD of message_3 / message_4 did not verify */
#define EDHOC_ERR_UNKNOWN_CREDENTIAL                                                               \
    (-4033) /* ID_CRED names no credential we have (error code 3) */
/* The peer sent an error message. */
#define EDHOC_ERR_PEER_ERROR (-4040) /* see edhoc_session_process_error() */

/* ---- Cipher suites (RFC 9528 Section 10.2) ---- */

struct edhoc_suite {
    int id;         /* 0, 1, 2, 3, 4, 5, 6, 24, 25 */
    int aead;       /* EDHOC AEAD (COSE alg) */
    int hash;       /* EDHOC hash (COSE alg) */
    int mac_len;    /* EDHOC MAC length for static DH */
    int ecdh_curve; /* COSE crv of G_X/G_Y and static DH keys */
    int sig_alg;    /* COSE signature alg (-8 EdDSA, -7 ES256, -35 ES384) */
    int sig_curve;  /* COSE crv of signature keys (6/7 for EdDSA, 1/2 for ECDSA) */
    int app_aead;   /* application AEAD (OSCORE) */
    int app_hash;   /* application hash (OSCORE HKDF) */
};

/* The parameters of a suite, or NULL when this library does not support it. */
const struct edhoc_suite *edhoc_suite_find(int id);

/* ---- EAD (RFC 9528 Section 3.8) ---- */

struct edhoc_ead_item {
    int64_t label;        /* < 0: critical; 0: padding (never delivered) */
    const uint8_t *value; /* NULL when has_value is false */
    size_t value_len;
    bool has_value;
};

/* Return values of edhoc_config.ead_receive */
#define EDHOC_EAD_PROCESSED    0 /* understood and accepted */
#define EDHOC_EAD_UNRECOGNIZED 1 /* not known: fatal if critical, ignored otherwise */
/* any negative value: refuse; the session aborts with EDHOC_ERR_EAD_REJECTED */

/* ---- Trace names ----
 * The trace callback is called with these names (RFC 9529 labels), in the
 * order the values are computed. Lower-casing the name, dropping ")",
 * turning "(" and spaces into "_" gives the key in tests/vectors/rfc9529-trace*.json.
 *   X, G_X, Y, G_Y, message_1, H(message_1), input_TH_2, TH_2, G_XY, PRK_2e,
 *   SALT_3e2m, G_RX, PRK_3e2m, context_2, MAC_2, Message_to_be_signed_2,
 *   Signature_or_MAC_2, PLAINTEXT_2, KEYSTREAM_2, CIPHERTEXT_2, message_2,
 *   input_TH_3, TH_3, SALT_4e3m, G_IY, PRK_4e3m, context_3, MAC_3,
 *   Message_to_be_signed_3, Signature_or_MAC_3, PLAINTEXT_3, A_3, K_3, IV_3,
 *   CIPHERTEXT_3, message_3, input_TH_4, TH_4, PRK_out, PRK_exporter,
 *   PLAINTEXT_4, A_4, K_4, IV_4, CIPHERTEXT_4, message_4,
 *   OSCORE Master Secret, OSCORE Master Salt (from edhoc_session_oscore),
 *   PRK_out after KeyUpdate, PRK_exporter after KeyUpdate
 *   (edhoc_session_key_update).
 */
typedef void (*edhoc_trace_fn)(void *ctx, const char *name, const uint8_t *v, size_t len);

/* ---- Deviations of deployed peers from RFC 9528 ----
 *
 * Some deployed implementations build the MAC input context_x
 * (context_2 = << C_R, ID_CRED_R, TH_2, CRED_R, ? EAD_2 >>, Section 5.3.2;
 * context_3 = << ID_CRED_I, TH_3, CRED_I, ? EAD_3 >>, Section 5.4.2)
 * differently from the RFC, so their MAC_x (and, for methods 0/2, the
 * signature over it) does not verify here. Each way is one bit:
 *
 *   EDHOC_DEV_C_BSTR          "c-bstr": a one-byte C_R that has an int form
 *       (bytes 0x00-0x17, 0x20-0x37, Section 3.3.2) is put into context_2 as
 *       a byte string (41 27 instead of 27). message_2 only: C_I is not in
 *       context_3, and TH_2 = H(G_Y, H(message_1)) covers C_I in the bytes
 *       of message_1 as sent, so no re-encoding of C_I reaches a MAC.
 *   EDHOC_DEV_KID_INT         "kid-int": an ID_CRED_x = {4: kid} with a
 *       one-byte kid that has an int form is used as {4: int} (a1 04 32
 *       instead of a1 04 41 32), i.e. the compact kid of PLAINTEXT_x
 *       (Section 3.5.3.2) turned back into a map without making it a byte
 *       string again.
 *   EDHOC_DEV_ID_CRED_COMPACT "id-cred-compact": ID_CRED_x = {4: kid} is used
 *       in its compact PLAINTEXT_x form (the kid alone, e.g. 32), which
 *       Section 3.5.3.2 reserves for PLAINTEXT_x.
 *   EDHOC_DEV_CRED_WRAP       "cred-wrap": CRED_x is used with an extra outer
 *       byte string (a CCS map wrapped in a bstr) or, when CRED_x is itself
 *       a byte string (an X.509 certificate, Section 3.5.2), without it.
 *   EDHOC_DEV_EAD_OMITTED     "ead-omitted": EAD_x is left out of context_x
 *       although message_x carries it.
 *
 * ID_CRED_x also goes into the COSE protected header of the signature
 * (methods 0/2); a deviating implementation holds one ID_CRED_x and uses it
 * in both places, so kid-int and id-cred-compact apply to both. Only
 * context_x (and that header) is affected: the transcript hashes TH_3 and
 * TH_4 follow RFC 9528 in every case (they hash PLAINTEXT_x as sent). A
 * deviation that does not apply to a message (c-bstr for message_3, or for
 * a C_R without an int form; kid-int for a kid that is not one byte with
 * an int form; ead-omitted without EAD) changes nothing. */
#define EDHOC_DEV_C_BSTR          (1u << 0)
#define EDHOC_DEV_KID_INT         (1u << 1)
#define EDHOC_DEV_ID_CRED_COMPACT (1u << 2)
#define EDHOC_DEV_CRED_WRAP       (1u << 3)
#define EDHOC_DEV_EAD_OMITTED     (1u << 4)
#define EDHOC_DEV_ALL                                                                              \
    (EDHOC_DEV_C_BSTR | EDHOC_DEV_KID_INT | EDHOC_DEV_ID_CRED_COMPACT | EDHOC_DEV_CRED_WRAP |      \
     EDHOC_DEV_EAD_OMITTED)

/* The name of one deviation bit ("c-bstr", "kid-int", "id-cred-compact",
 * "cred-wrap", "ead-omitted"), or NULL when bit is not exactly one known
 * bit. */
const char *edhoc_deviation_name(unsigned bit);

/* Parse a comma-separated list of deviation names (spaces around names are
 * ignored); "none" alone and "" give 0. Returns 0 with *mask set, or
 * EDHOC_ERR_ARG (unknown or empty name, "none" with other names; the
 * reason in why, NUL-terminated, truncated to cap; why may be NULL). */
int edhoc_deviations_parse(const char *list, unsigned *mask, char *why, size_t cap);

/* Format a mask as the list edhoc_deviations_parse reads back ("none" for
 * 0; bits without a name as a hex number). Writes a NUL-terminated string
 * into out (truncated to cap) and returns its untruncated length. */
size_t edhoc_deviations_format(unsigned mask, char *out, size_t cap);

/* ---- Configuration ---- */

enum edhoc_role {
    EDHOC_INITIATOR = 1,
    EDHOC_RESPONDER = 2,
};

struct edhoc_config {
    /* Crypto backend; its `random` also draws the ephemeral keys, so a
     * table with a pinned `random` reproduces a trace. Required. */
    const struct edhoc_crypto_ops *ops;

    /* Initiator: the method to run (0..3, RFC 9528 Section 3.2). */
    int method;
    /* Responder: bit m set = method m accepted; 0 accepts all four. */
    unsigned accept_methods;

    /* Supported cipher suites, most preferred first (initiator: order of
     * preference for SUITES_I; responder: the set it supports). Required,
     * 1..EDHOC_MAX_SUITES entries, each known to edhoc_suite_find(). */
    const int *suites;
    size_t n_suites;

    /* Own authentication credential CRED_x and private key (signature key
     * on the suite's signature curve, or static DH key on its ECDH curve,
     * as the method requires). Owned by the application. Required. */
    const struct edhoc_cred *cred;
    const struct edhoc_key *key;
    /* Own ID_CRED_x in full COSE header map form (e.g. a1 04 41 32 for
     * {4: h'32'}); the compact encoding of a lone kid is applied when it is
     * placed in PLAINTEXT_2/3. NULL: {4: cred->kid} (cred->kid_len > 0). */
    const uint8_t *id_cred;
    size_t id_cred_len;

    /* EAD items to send: ead[x] / n_ead[x] for message_x, x = 1..4
     * (index 0 unused). Padding is an item with label 0. */
    const struct edhoc_ead_item *ead[5];
    size_t n_ead[5];

    /* Received EAD items (padding excluded) are passed here one by one,
     * with message = 1..4; see EDHOC_EAD_*. NULL: every item is
     * unrecognized (critical ones abort, others are ignored). Items are
     * also listed in struct edhoc_received. */
    int (*ead_receive)(void *ctx, int message, const struct edhoc_ead_item *item);
    void *ead_ctx;

    /* Intermediate values (see "Trace names"); NULL for none. */
    edhoc_trace_fn trace;
    void *trace_ctx;

    /* OSCORE master secret / salt lengths (RFC 9528 Appendix A.1);
     * 0 = defaults (application AEAD key length / 8). */
    size_t oscore_key_len;
    size_t oscore_salt_len;

    /* EDHOC_DEV_* this side accepts from the peer (opt-in; 0 accepts
     * nothing). When the peer's Signature_or_MAC_x does not verify but
     * does under deviations that are all in this mask, the message is
     * accepted and edhoc_session_tolerated() names them. (With `emulate`
     * set, what must be in this mask is how the peer's context_x differs
     * from the one this side expected.) Each tolerated
     * variant of context_x is one more MAC value a forger may hit: with
     * all five, up to six more per message, about 3 bits off a 64-bit
     * MAC against online attacks (RFC 9528 Section 9.1); c-bstr alone
     * costs 1 bit. */
    unsigned tolerate;
    /* EDHOC_DEV_* this side commits itself, as the deployed device does: a
     * test aid, so that a real process can send and expect deviant bytes.
     * They apply to every context_x this side computes, for its own
     * message and when it verifies the peer's:
     *   c-bstr: a responder computes MAC_2 with its C_R as a byte string;
     *     an initiator verifies MAC_2 with the peer's C_R as a byte string.
     *   kid-int: own ID_CRED = {4: kid} with a one-byte kid that has an int
     *     form is used as {4: int} for MAC_x (and the signature's protected
     *     header); the peer's compact kid is rebuilt as {4: int} when
     *     verifying.
     *   id-cred-compact, cred-wrap, ead-omitted: own and peer's context_x
     *     built that way (see "Deviations" above); with both kid-int and
     *     id-cred-compact set, kid-int is used.
     * What is sent (PLAINTEXT_x, C_R, ID_CRED_x) and the transcript hashes
     * stay as RFC 9528 says. 0 in production. */
    unsigned emulate;

    /* Initiator: pad message_1 to at least this many bytes with EAD
     * padding (RFC 9528 Section 3.8.1: ead_label 0 and a random byte
     * string, two items where one cannot give the exact length), after
     * the items of ead[1]. A larger message_1 lets a responder that
     * limits what it sends to an unverified address (Section 9.7, RFC 9175
     * Section 2.4 item 3) answer with message_2 at once. 0: no padding. */
    size_t pad_message_1;
};

/* ---- Session ---- */

enum edhoc_state {
    EDHOC_STATE_START = 0, /* I: may prepare message_1; R: waits for message_1 */
    EDHOC_STATE_WAIT_M2,   /* I: message_1 sent */
    EDHOC_STATE_VERIFY_M2, /* I: message_2 decrypted; verify_message_2 next */
    EDHOC_STATE_SEND_M3,   /* I: message_2 verified; prepare_message_3 next */
    EDHOC_STATE_SEND_M2,   /* R: message_1 accepted; prepare_message_2 next */
    EDHOC_STATE_WAIT_M3,   /* R: message_2 sent */
    EDHOC_STATE_VERIFY_M3, /* R: message_3 decrypted; verify_message_3 next */
    EDHOC_STATE_COMPLETED, /* PRK_out available; message_4 may follow */
    EDHOC_STATE_ERROR,     /* aborted, secrets wiped */
};

/* One handshake, allocated by the caller (a local, a struct member, an
 * array: the library never allocates) and opaque: its layout is private
 * to the library (src/edhoc/edhoc_internal.h) and may change in any
 * release, so read it through the accessors below. What the ABI fixes is
 * its size, EDHOC_SESSION_SIZE, and an alignment of 8: the private layout
 * has room to grow in it (the library checks at build time that it
 * fits). */
#define EDHOC_SESSION_SIZE 512
struct edhoc_session;
#ifndef EDHOC_SESSION_LAYOUT_PRIVATE
struct edhoc_session {
    union {
        unsigned char bytes[EDHOC_SESSION_SIZE];
        uint64_t align_u64;
        void *align_ptr;
    } opaque;
};
#endif

/* Start a session. cfg must stay valid and unchanged while the session is
 * used. struct edhoc_config grows by fields added at its end only; the
 * macro passes the size of the layout the application was built with, so
 * a library reads no field the application does not have (a newer field
 * counts as 0) and refuses one it does not know that is set (the rule of
 * Linux's openat2). Returns 0, or EDHOC_ERR_ARG (NULL argument, bad role,
 * empty or unknown suite list, missing ops/cred/key, method outside 0..3,
 * a config smaller than the first layout, or a field this library does
 * not know set to non-zero). */
#define edhoc_session_init(s, role, cfg) edhoc_session_init_sized((s), (role), (cfg), sizeof *(cfg))
int edhoc_session_init_sized(struct edhoc_session *s, enum edhoc_role role,
                             const struct edhoc_config *cfg, size_t cfg_size);

/* Own connection identifier C_I / C_R as a byte string (0..8 bytes; a
 * one-byte value that is the encoding of an int in -24..23 is sent as that
 * int). Call before message_1 (I) or message_2 (R); when never called a
 * random one-byte identifier is chosen. Returns 0, EDHOC_ERR_ARG (too long),
 * EDHOC_ERR_STATE (the identifier was already sent). */
int edhoc_session_set_conn_id(struct edhoc_session *s, const uint8_t *cid, size_t len);

/* Use this private key for the next ephemeral key pair (X for message_1,
 * Y for message_2) instead of drawing one from ops->random. For test
 * vectors and the CLI's --ephemeral-i/-r; one call per attempt. Returns 0,
 * EDHOC_ERR_ARG (length 0 or > EDHOC_CRYPTO_MAX_PRIV), EDHOC_ERR_STATE. */
int edhoc_session_set_ephemeral(struct edhoc_session *s, const uint8_t *priv, size_t len);

/* I: suites the responder is known to support (e.g. remembered from an
 * earlier SUITES_R): prepare_message_1 selects our most preferred suite
 * among them. Returns 0, EDHOC_ERR_ARG, EDHOC_ERR_STATE (not in START),
 * EDHOC_ERR_NO_COMMON_SUITE (none of them is ours; the session is unchanged). */
int edhoc_session_set_peer_suites(struct edhoc_session *s, const int *suites, size_t n);

/* Wipe every secret and forget the session (state becomes ERROR). */
void edhoc_session_wipe(struct edhoc_session *s);

/* Accessors. */
enum edhoc_state edhoc_session_state(const struct edhoc_session *s);
int edhoc_session_method(const struct edhoc_session *s); /* -1 until known */
int edhoc_session_suite(const struct edhoc_session *s);  /* selected suite; -1 until known */
/* Own / peer connection identifier (byte-string value); NULL until known. */
const uint8_t *edhoc_session_own_conn_id(const struct edhoc_session *s, size_t *len);
const uint8_t *edhoc_session_peer_conn_id(const struct edhoc_session *s, size_t *len);
/* The error that aborted the session (0 if none). */
int edhoc_session_error(const struct edhoc_session *s);

/* Why the peer's Signature_or_MAC_2/3 did not verify. When verify_message_2
 * / verify_message_3 find a MAC_x or signature that does not verify, they
 * recompute it (before the secrets are wiped) under each deviation that
 * applies, alone and as the pair c-bstr + kid-int, and keep which one
 * makes it verify; only this bitmask and a few bytes for the text stay in
 * the session. This is a pure function of what the verify step has (TH_x,
 * PRK, the credential and ID_CRED given to verify, C_R, EAD_x): no I/O,
 * deterministic. Its cost, on failures only: up to six more MAC_x
 * computations and, for methods 0/2, as many signature verifications.
 * When this side emulates deviations, RFC 9528 as written is tried too
 * (matched 0, the text says so). */
struct edhoc_diagnosis {
    unsigned matched; /* EDHOC_DEV_* under which it verifies; 0: none found */
    int message;      /* 2 or 3 */
    /* e.g. "MAC_2 matches when C_R is the byte string h'27' instead of
     * the int -8 (0x27) in context_2 (RFC 9528 Section 3.3.2): the peer
     * deviates; --tolerate c-bstr accepts it" ("Signature_or_MAC_2
     * verifies when ..." for methods 0/2; "...; tolerated (--tolerate
     * c-bstr)" once accepted), or "MAC_2 verification failed: no known
     * deviation explains it". */
    char text[320];
};

/* Fill d with the diagnosis of this session: after a failed verify (the
 * session is in ERROR with EDHOC_ERR_MAC / EDHOC_ERR_SIGNATURE), or after a
 * verify that succeeded by tolerating a deviation. Returns 0, EDHOC_ERR_ARG,
 * or EDHOC_ERR_STATE when no Signature_or_MAC_x failed on this session
 * (d is then zeroed). Valid until the session is initialized again. */
int edhoc_session_diagnosis(const struct edhoc_session *s, struct edhoc_diagnosis *d);

/* The deviations accepted (edhoc_config.tolerate) on this handshake; 0
 * when the peer followed RFC 9528 (or nothing was verified yet). With
 * edhoc_config.emulate set: how the peer differed from what this side
 * expected. */
unsigned edhoc_session_tolerated(const struct edhoc_session *s);

/* I: the deviations edhoc_initiator_prepare_message_3 committed in
 * context_3 (MAC_3 and, for methods 0 and 1, the signature and its
 * protected header) because verify_message_2 accepted them in
 * context_2 by tolerating them: the peer builds every context_x its own
 * way, so it verifies MAC_3 the way it computed MAC_2, and an RFC 9528
 * context_3 would fail there. Only those that apply to context_3 count
 * (c-bstr never does; kid-int only for a one-byte kid of ours that has
 * an int form). 0 when message_2 needed no tolerance, before message_3,
 * and for a responder. */
unsigned edhoc_session_followed(const struct edhoc_session *s);

/* ---- What the peer sent ---- */

struct edhoc_received {
    /* ID_CRED_x of the peer in full map form (compact kid expanded to
     * {4: kid}); NULL for message_1 / message_4. */
    const uint8_t *id_cred;
    size_t id_cred_len;
    /* Received EAD items, padding removed; values point into this struct
     * (or into the caller's message_1 bytes). */
    struct edhoc_ead_item ead[EDHOC_MAX_EAD_ITEMS];
    size_t n_ead;
    /* Private: the decrypted plaintext and parse results verify needs. */
    uint8_t plaintext[EDHOC_MAX_PLAINTEXT];
    size_t plaintext_len;
    size_t sig_off, sig_len;                     /* Signature_or_MAC inside plaintext */
    size_t ead_off, ead_len;                     /* EAD_x bytes inside plaintext */
    size_t id_cred_off, id_cred_enc_len;         /* ID_CRED as encoded in plaintext */
    uint8_t id_cred_map[4 + EDHOC_CRED_MAX_KID]; /* expanded compact kid */
};

/* ---- Initiator ---- */

/* Write message_1: METHOD, SUITES_I (RFC 9528 5.2.2: our suites up to and
 * including the selected one, an int when that is our first), G_X, C_I,
 * EAD_1. The selected suite is, in order: the one learned from an error
 * code 2 (edhoc_session_process_error), our most preferred among
 * set_peer_suites, else our first. Returns the length, or EDHOC_ERR_STATE
 * (not an initiator in START), EDHOC_ERR_BUFFER, EDHOC_ERR_TOO_LARGE,
 * EDHOC_ERR_CRYPTO. */
int edhoc_initiator_prepare_message_1(struct edhoc_session *s, uint8_t *out, size_t cap);

/* Decode message_2, decrypt PLAINTEXT_2 into rx and expose ID_CRED_R and
 * EAD_2; nothing is authenticated yet. Returns 0, or EDHOC_ERR_STATE,
 * EDHOC_ERR_MALFORMED, EDHOC_ERR_NOT_DETERMINISTIC, EDHOC_ERR_TRAILING,
 * EDHOC_ERR_EPHEMERAL_LENGTH, EDHOC_ERR_INVALID_POINT,
 * EDHOC_ERR_CONN_ID_ENCODING, EDHOC_ERR_ID_CRED_ENCODING,
 * EDHOC_ERR_MAC_LENGTH, EDHOC_ERR_CONN_ID_EQUAL, EDHOC_ERR_EAD_CRITICAL,
 * EDHOC_ERR_EAD_REJECTED, EDHOC_ERR_TOO_LARGE, EDHOC_ERR_CRYPTO. */
int edhoc_initiator_process_message_2(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                      struct edhoc_received *rx);

/* Verify Signature_or_MAC_2 with the responder's credential (resolved by
 * the application from rx->id_cred; NULL = unknown). rx must be the one
 * filled by process_message_2. Returns 0, or EDHOC_ERR_STATE,
 * EDHOC_ERR_UNKNOWN_CREDENTIAL (cred_r NULL), EDHOC_ERR_CREDENTIAL (key
 * does not fit), EDHOC_ERR_MAC, EDHOC_ERR_SIGNATURE, EDHOC_ERR_INVALID_POINT
 * (static DH key), EDHOC_ERR_TOO_LARGE, EDHOC_ERR_CRYPTO. */
int edhoc_initiator_verify_message_2(struct edhoc_session *s, const struct edhoc_received *rx,
                                     const struct edhoc_cred *cred_r);

/* Write message_3; afterwards the session is COMPLETED (PRK_out derived).
 * Returns the length, or EDHOC_ERR_STATE, EDHOC_ERR_BUFFER,
 * EDHOC_ERR_TOO_LARGE, EDHOC_ERR_CREDENTIAL, EDHOC_ERR_CRYPTO. */
int edhoc_initiator_prepare_message_3(struct edhoc_session *s, uint8_t *out, size_t cap);

/* Decrypt and check message_4 (optional, once, in COMPLETED); EAD_4 in rx.
 * Returns 0, or EDHOC_ERR_STATE, EDHOC_ERR_MALFORMED,
 * EDHOC_ERR_NOT_DETERMINISTIC, EDHOC_ERR_TRAILING, EDHOC_ERR_DECRYPT,
 * EDHOC_ERR_EAD_CRITICAL, EDHOC_ERR_EAD_REJECTED, EDHOC_ERR_CRYPTO. */
int edhoc_initiator_process_message_4(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                      struct edhoc_received *rx);

/* ---- Responder ---- */

/* Decode and validate message_1, negotiate the suite (RFC 9528 5.2.3,
 * 6.3), check G_X (length, on the curve, not low order: the ephemeral key
 * pair Y/G_Y is generated here and G_XY computed), hand EAD_1 to the
 * application (rx may be NULL; when given, its EAD items point into msg).
 * Returns 0, or EDHOC_ERR_STATE, EDHOC_ERR_MALFORMED,
 * EDHOC_ERR_NOT_DETERMINISTIC, EDHOC_ERR_TRAILING, EDHOC_ERR_METHOD,
 * EDHOC_ERR_SUITES_ENCODING, EDHOC_ERR_WRONG_SUITE (send the error message:
 * edhoc_session_write_error gives ERR_CODE 2 with SUITES_R),
 * EDHOC_ERR_EPHEMERAL_LENGTH, EDHOC_ERR_INVALID_POINT,
 * EDHOC_ERR_CONN_ID_ENCODING, EDHOC_ERR_EAD_CRITICAL,
 * EDHOC_ERR_EAD_REJECTED, EDHOC_ERR_TOO_LARGE, EDHOC_ERR_CRYPTO. */
int edhoc_responder_process_message_1(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                      struct edhoc_received *rx);

/* Write message_2. Returns the length, or EDHOC_ERR_STATE,
 * EDHOC_ERR_CONN_ID_CONFLICT (own C_R equals C_I: set another one and
 * call again; the session is unchanged), EDHOC_ERR_BUFFER,
 * EDHOC_ERR_TOO_LARGE, EDHOC_ERR_CREDENTIAL, EDHOC_ERR_INVALID_POINT,
 * EDHOC_ERR_CRYPTO. */
int edhoc_responder_prepare_message_2(struct edhoc_session *s, uint8_t *out, size_t cap);

/* The length of the message_2 that edhoc_responder_prepare_message_2
 * writes with this configuration for method and suite when C_R is c_r,
 * worked out without any cryptographic operation: G_Y, PLAINTEXT_2 =
 * ( C_R, ID_CRED_R, Signature_or_MAC_2, ? EAD_2 ) and their heads all have
 * lengths known beforehand. For a server that must know how large its
 * answer to a message_1 is before it spends work on it (an amplification
 * limit, RFC 9528 Section 9.7). Returns the length, or EDHOC_ERR_ARG
 * (unknown suite or method, no credential), EDHOC_ERR_CREDENTIAL (no
 * usable ID_CRED_R), EDHOC_ERR_TOO_LARGE. */
long edhoc_responder_message_2_len(const struct edhoc_config *cfg, int method, int suite,
                                   const uint8_t *c_r, size_t c_r_len);

/* Decrypt message_3 into rx and expose ID_CRED_I and EAD_3. Returns 0, or
 * EDHOC_ERR_STATE, EDHOC_ERR_MALFORMED, EDHOC_ERR_NOT_DETERMINISTIC,
 * EDHOC_ERR_TRAILING, EDHOC_ERR_DECRYPT, EDHOC_ERR_ID_CRED_ENCODING,
 * EDHOC_ERR_MAC_LENGTH, EDHOC_ERR_EAD_CRITICAL, EDHOC_ERR_EAD_REJECTED,
 * EDHOC_ERR_TOO_LARGE, EDHOC_ERR_CRYPTO. */
int edhoc_responder_process_message_3(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                      struct edhoc_received *rx);

/* Verify Signature_or_MAC_3 with the initiator's credential (NULL =
 * unknown); afterwards the session is COMPLETED. Returns 0, or the codes
 * of edhoc_initiator_verify_message_2. */
int edhoc_responder_verify_message_3(struct edhoc_session *s, const struct edhoc_received *rx,
                                     const struct edhoc_cred *cred_i);

/* Write message_4 (optional, once, in COMPLETED). Returns the length, or
 * EDHOC_ERR_STATE, EDHOC_ERR_BUFFER, EDHOC_ERR_TOO_LARGE, EDHOC_ERR_CRYPTO. */
int edhoc_responder_prepare_message_4(struct edhoc_session *s, uint8_t *out, size_t cap);

/* ---- Convenience: process + resolve + verify in one call ---- */

/* Resolve a received ID_CRED (full map form) to a trusted credential.
 * Return 0 with *cred set, or a negative code: EDHOC_CRED_ERR_UNKNOWN /
 * EDHOC_ERR_UNKNOWN_CREDENTIAL (-> error code 3), EDHOC_CRED_ERR_UNTRUSTED,
 * EDHOC_CRED_ERR_EXPIRED, EDHOC_CRED_ERR_KEY_TYPE (-> the session fails
 * with EDHOC_ERR_CREDENTIAL, error code 1). RFC 9528 Section 6.4 forbids
 * error code 3 for an ID_CRED type the application does not support: return
 * EDHOC_CRED_ERR_FORMAT for those (-> error code 1). */
typedef int (*edhoc_cred_resolver)(void *ctx, const uint8_t *id_cred, size_t id_cred_len,
                                   const struct edhoc_cred **cred);

/* process_message_2 + resolver + verify_message_2. Same codes. */
int edhoc_initiator_handle_message_2(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                     struct edhoc_received *rx, edhoc_cred_resolver resolve,
                                     void *resolve_ctx);
/* process_message_3 + resolver + verify_message_3. Same codes. */
int edhoc_responder_handle_message_3(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                     struct edhoc_received *rx, edhoc_cred_resolver resolve,
                                     void *resolve_ctx);

/* ---- Results (state COMPLETED) ---- */

/* RFC 9528 Appendix A.1, from this endpoint's point of view. */
struct edhoc_oscore_params {
    uint8_t master_secret[EDHOC_CRYPTO_MAX_KEY];
    size_t master_secret_len;
    uint8_t master_salt[EDHOC_CRYPTO_MAX_HASH];
    size_t master_salt_len;
    uint8_t sender_id[EDHOC_MAX_CONN_ID]; /* I: C_R; R: C_I */
    size_t sender_id_len;
    uint8_t recipient_id[EDHOC_MAX_CONN_ID]; /* I: C_I; R: C_R */
    size_t recipient_id_len;
    int aead_alg; /* application AEAD (COSE) */
    int hash_alg; /* application hash (COSE) */
};

/* Returns 0, EDHOC_ERR_STATE (not COMPLETED), EDHOC_ERR_ARG, EDHOC_ERR_CRYPTO. */
int edhoc_session_oscore(const struct edhoc_session *s, struct edhoc_oscore_params *out);

/* EDHOC_Exporter(label, context, len) = EDHOC_KDF(PRK_exporter, label,
 * context, len). Returns 0, EDHOC_ERR_STATE, EDHOC_ERR_ARG (len 0 or too
 * long), EDHOC_ERR_TOO_LARGE (context), EDHOC_ERR_CRYPTO. */
int edhoc_session_export(const struct edhoc_session *s, uint64_t label, const uint8_t *context,
                         size_t context_len, uint8_t *out, size_t len);

/* EDHOC_KeyUpdate(context) (RFC 9528 Appendix H): replaces PRK_out.
 * Returns 0, EDHOC_ERR_STATE, EDHOC_ERR_TOO_LARGE, EDHOC_ERR_CRYPTO. */
int edhoc_session_key_update(struct edhoc_session *s, const uint8_t *context, size_t context_len);

/* Copy PRK_out / PRK_exporter (hash length bytes). Returns the length,
 * EDHOC_ERR_STATE, EDHOC_ERR_BUFFER, EDHOC_ERR_CRYPTO. */
int edhoc_session_prk_out(const struct edhoc_session *s, uint8_t *out, size_t cap);
int edhoc_session_prk_exporter(const struct edhoc_session *s, uint8_t *out, size_t cap);

/* ---- Error messages (RFC 9528 Section 6) ---- */

#define EDHOC_ERR_CODE_SUCCESS            0
#define EDHOC_ERR_CODE_UNSPECIFIED        1
#define EDHOC_ERR_CODE_WRONG_SUITE        2
#define EDHOC_ERR_CODE_UNKNOWN_CREDENTIAL 3

struct edhoc_error_info {
    int64_t code;     /* ERR_CODE as received (any int) */
    const char *text; /* code 1: diagnostic (NOT NUL-terminated) */
    size_t text_len;
    int suites[EDHOC_MAX_SUITES]; /* code 2: SUITES_R */
    size_t n_suites;
};

/* True when msg looks like an error message (first item an int) rather
 * than message_2/3/4 (a byte string). */
bool edhoc_message_is_error(const uint8_t *msg, size_t len);

/* Decode an error message. ERR_INFO is checked for codes 1 (tstr), 2
 * (suites) and 3 (true); for other codes it must be one well-formed item
 * and is skipped. Returns 0, or EDHOC_ERR_MALFORMED,
 * EDHOC_ERR_NOT_DETERMINISTIC, EDHOC_ERR_TRAILING,
 * EDHOC_ERR_SUITES_ENCODING, EDHOC_ERR_TOO_LARGE (more suites than
 * EDHOC_MAX_SUITES). */
int edhoc_error_message_parse(const uint8_t *msg, size_t len, struct edhoc_error_info *info);

/* Write an error message. code 1: text (may be NULL = ""); code 2: suites
 * (an int when n == 1); code 3: true. Returns the length, or EDHOC_ERR_ARG
 * (code 0, or code 2 without suites, or another code), EDHOC_ERR_BUFFER. */
int edhoc_error_message_write(uint8_t *out, size_t cap, int code, const char *text,
                              const int *suites, size_t n_suites);

/* A received error message in the session. Always aborts the session, except:
 * I in WAIT_M2 receiving code 2 with a SUITES_R that shares a suite with
 * ours: the session returns to START (ready to prepare a new message_1 with
 * the suite chosen by RFC 9528 5.2.2 / 6.3.1 and a fresh ephemeral key) and
 * 0 is returned. Otherwise returns EDHOC_ERR_PEER_ERROR (info filled),
 * EDHOC_ERR_NO_COMMON_SUITE (code 2 without a usable suite), or the
 * parse errors of edhoc_error_message_parse. info may be NULL. */
int edhoc_session_process_error(struct edhoc_session *s, const uint8_t *msg, size_t len,
                                struct edhoc_error_info *info);

/* After a failure: the error message to send for it. Returns its length;
 * 0 when none is to be sent (local usage errors, a received error message);
 * EDHOC_ERR_BUFFER. A failed message_4 is answered too (code 1, RFC 9528
 * Section 5.5.3). Code 2 carries
 * SUITES_R per RFC 9528 6.3.1, code 3 is sent for
 * EDHOC_ERR_UNKNOWN_CREDENTIAL, code 1 carries edhoc_session_error_text. */
int edhoc_session_write_error(const struct edhoc_session *s, uint8_t *out, size_t cap);

/* The ERR_CODE to send for an error code (1, 2 or 3), or 0 for none. */
int edhoc_error_code_for(int err);
/* Short text for any EDHOC_ERR_* (and the crypto/cbor/cred codes). */
const char *edhoc_strerror(int err);
/* Text naming the failed step and value, e.g. "MAC_2 verification failed",
 * "message_1: G_X has the wrong length for the suite"; "" when the session
 * has not failed. A failed MAC_x / signature that a known deviation
 * explains carries the diagnosis: "MAC_2 verification failed; MAC_2
 * matches when ..." (up to about 480 bytes); when none explains it the
 * text stays "MAC_2 verification failed" (edhoc_session_diagnosis says
 * "no known deviation explains it"). The error message sent to the peer
 * (edhoc_session_write_error) carries only the part before the diagnosis.
 * Writes a NUL-terminated string into buf (truncated to cap) and returns
 * its untruncated length. */
size_t edhoc_session_error_text(const struct edhoc_session *s, char *buf, size_t cap);

/* ---- Stand-alone parsers (validation only, no secrets; used by the
 * session functions and the fuzzers) ---- */

struct edhoc_message_1_fields {
    int method;
    int suites[EDHOC_MAX_SUITES]; /* SUITES_I, the selected one last */
    size_t n_suites;
    const uint8_t *g_x;
    size_t g_x_len;
    uint8_t c_i[EDHOC_MAX_CONN_ID]; /* byte-string value */
    size_t c_i_len;
    const uint8_t *ead; /* EAD_1 bytes (may be empty) */
    size_t ead_len;
};

/* message_1: CBOR types, deterministic encoding, method 0..3, suites
 * encoding, G_X length for the selected suite when that suite is known,
 * C_I encoding, EAD well-formed, no trailing bytes. Returns 0 or the decode
 * errors listed at edhoc_responder_process_message_1 (except suite
 * negotiation and point checks). */
int edhoc_message_1_parse(const uint8_t *msg, size_t len, struct edhoc_message_1_fields *f);

/* message_2 = bstr(G_Y || CIPHERTEXT_2) for a G_Y of g_y_len bytes.
 * Returns 0, EDHOC_ERR_MALFORMED, EDHOC_ERR_NOT_DETERMINISTIC,
 * EDHOC_ERR_TRAILING, EDHOC_ERR_EPHEMERAL_LENGTH (shorter than G_Y + 1). */
int edhoc_message_2_parse(const uint8_t *msg, size_t len, size_t g_y_len, const uint8_t **g_y,
                          const uint8_t **ciphertext, size_t *ciphertext_len);

/* message_3 / message_4 = bstr(CIPHERTEXT). Returns 0, EDHOC_ERR_MALFORMED,
 * EDHOC_ERR_NOT_DETERMINISTIC, EDHOC_ERR_TRAILING. */
int edhoc_message_3_parse(const uint8_t *msg, size_t len, const uint8_t **ct, size_t *ct_len);
int edhoc_message_4_parse(const uint8_t *msg, size_t len, const uint8_t **ct, size_t *ct_len);

/* PLAINTEXT_2 (with_conn_id) or PLAINTEXT_3 for a method and suite: C_R
 * encoding, ID_CRED (compact when a lone kid, expanded into rx), the
 * Signature_or_MAC length, EAD well-formed (items listed in rx, not
 * delivered), no trailing bytes. The plaintext is copied into rx.
 * Returns 0, EDHOC_ERR_ARG (unknown suite/method), EDHOC_ERR_MALFORMED,
 * EDHOC_ERR_NOT_DETERMINISTIC, EDHOC_ERR_TRAILING,
 * EDHOC_ERR_CONN_ID_ENCODING, EDHOC_ERR_ID_CRED_ENCODING,
 * EDHOC_ERR_MAC_LENGTH, EDHOC_ERR_TOO_LARGE. c_r/c_r_len may be NULL for
 * PLAINTEXT_3. */
int edhoc_plaintext_2_parse(const uint8_t *pt, size_t len, int method, int suite,
                            struct edhoc_received *rx, uint8_t *c_r, size_t *c_r_len);
int edhoc_plaintext_3_parse(const uint8_t *pt, size_t len, int method, int suite,
                            struct edhoc_received *rx);

/* ---- Key schedule building blocks (RFC 9528 Section 4) ---- */

/* EDHOC_KDF(PRK, label, context, length) = EDHOC_Expand(PRK, info, length)
 * with info = (label: int, context: bstr, length: uint). Returns 0,
 * EDHOC_ERR_ARG, EDHOC_ERR_TOO_LARGE (context), EDHOC_ERR_CRYPTO. */
int edhoc_kdf(const struct edhoc_crypto_ops *ops, int hash_alg, const uint8_t *prk, size_t prk_len,
              int64_t label, const uint8_t *context, size_t context_len, uint8_t *out, size_t len);

#ifdef __cplusplus
}
#endif
/* ---- Key log: the secrets a capture needs to be opened decrypted ----
 * A struct edhoc_key_log collects, from a session's trace, the values of
 * one handshake that decrypt its messages (RFC 9528 5.3-5.5): G_X (which
 * names the handshake in a capture), PRK_2e and TH_2 (KEYSTREAM_2),
 * PRK_3e2m and TH_3 (K_3, IV_3), PRK_4e3m and TH_4 (K_4, IV_4). Install
 * edhoc_key_log_trace as edhoc_config.trace with the log as trace_ctx; a
 * trace callback the application had keeps receiving every value through
 * next/next_ctx. The values are secrets: edhoc_key_log_wipe when done. */
struct edhoc_key_log {
    edhoc_trace_fn next; /* called with every traced value; may be NULL */
    void *next_ctx;
    uint8_t g_x[EDHOC_CRYPTO_MAX_HASH];
    uint8_t prk_2e[EDHOC_CRYPTO_MAX_HASH], th_2[EDHOC_CRYPTO_MAX_HASH];
    uint8_t prk_3e2m[EDHOC_CRYPTO_MAX_HASH], th_3[EDHOC_CRYPTO_MAX_HASH];
    uint8_t prk_4e3m[EDHOC_CRYPTO_MAX_HASH], th_4[EDHOC_CRYPTO_MAX_HASH];
    uint8_t len[7]; /* of each value above, in that order; 0: not seen yet */
};

void edhoc_key_log_trace(void *log, const char *name, const uint8_t *v, size_t len);

/* All seven values are known (after message_3, on both sides). */
bool edhoc_key_log_complete(const struct edhoc_key_log *log);

/* One row of Wireshark's "edhoc_secrets" table, with its newline:
 * G_X,PRK_2e,TH_2,PRK_3e2m,TH_3,PRK_4e3m,TH_4, each bare lower-case hex
 * (the UAT syntax of a bytes field). Returns the row's length, or -1 if
 * the log is not complete or cap is too small. */
long edhoc_key_log_row(const struct edhoc_key_log *log, char *out, size_t cap);

/* Forgets the values (next/next_ctx are kept for the next handshake). */
void edhoc_key_log_wipe(struct edhoc_key_log *log);

/* One row of Wireshark's OSCORE "oscore_contexts" table (Wireshark 4.0,
 * all fields quoted: Sender ID, Recipient ID, Master Secret, Master Salt,
 * ID Context as hex strings, then the algorithm's name), with its
 * newline, for the context p of this side; -1 for an AEAD the table has
 * no name for, or cap too small. */
long edhoc_key_log_oscore_row(const struct edhoc_oscore_params *p, const uint8_t *id_context,
                              size_t id_context_len, char *out, size_t cap);

#endif
