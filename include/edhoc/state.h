/*
 * edhoc/state.h - durable state of a responder (or any long-lived peer):
 * established OSCORE contexts and their sender-sequence-number high-water
 * marks, in one SQLite database under a state directory.
 *
 * The OSCORE module asks, through its persistence callback, that a mark be
 * stored *before* sequence numbers up to it are used (RFC 8613 Appendix
 * B.1.1); edhoc_state_store_ssn() returns only once the mark is durable,
 * so after any crash -- kill -9 included -- a restarted process resumes
 * above every sequence number it ever used.
 *
 * All functions return 0 or a negative EDHOC_STATE_ERR_* code; `why`
 * arguments (may be NULL) receive a one-line message naming the file and
 * the problem.
 */
#ifndef EDHOC_STATE_H
#define EDHOC_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EDHOC_STATE_ERR_IO (-5001)       /* cannot create/open/write the database */
#define EDHOC_STATE_ERR_FOREIGN (-5002)  /* the file is not an edhoc-cli state database */
#define EDHOC_STATE_ERR_CORRUPT (-5003)  /* the database is damaged */
#define EDHOC_STATE_ERR_VERSION (-5004)  /* written by a newer schema version */
#define EDHOC_STATE_ERR_NOT_FOUND (-5005)
#define EDHOC_STATE_ERR_ARG (-5006)

#define EDHOC_STATE_SCHEMA_VERSION 1
#define EDHOC_STATE_FILE "edhoc-cli-state.sqlite"

#define EDHOC_STATE_MAX_ID 8
#define EDHOC_STATE_MAX_SECRET 32
#define EDHOC_STATE_MAX_SALT 64
#define EDHOC_STATE_MAX_ID_CONTEXT 16

/* One established OSCORE context, as the responder stores it. The key is
 * the recipient ID (the ID the peer uses as kid in its requests). */
struct edhoc_state_peer {
    uint8_t recipient_id[EDHOC_STATE_MAX_ID];
    size_t recipient_id_len;
    uint8_t sender_id[EDHOC_STATE_MAX_ID];
    size_t sender_id_len;
    uint8_t id_context[EDHOC_STATE_MAX_ID_CONTEXT];
    size_t id_context_len;
    uint8_t master_secret[EDHOC_STATE_MAX_SECRET];
    size_t master_secret_len;
    uint8_t master_salt[EDHOC_STATE_MAX_SALT];
    size_t master_salt_len;
    int aead_alg;          /* COSE */
    int hkdf_alg;          /* COSE hash (-16 / -43) */
    uint64_t ssn_mark;     /* no sender sequence number >= this was used */
    char peer[64];         /* "addr:port" of the peer when established (informational) */
    int64_t created;       /* Unix seconds */
    int method, suite;     /* of the EDHOC run that produced it; -1 for static contexts */
};

struct edhoc_state_db;

/* Open or create DIR/EDHOC_STATE_FILE (DIR is created with mode 0700 if
 * missing; the file is created 0600). An existing file that is not an
 * edhoc-cli database, or is corrupt, or has a newer schema, is refused and
 * left untouched. Returns 0, EDHOC_STATE_ERR_IO, _FOREIGN, _CORRUPT,
 * _VERSION. */
int edhoc_state_open(const char *dir, struct edhoc_state_db **db, char *why, size_t why_cap);
void edhoc_state_close(struct edhoc_state_db *db);

/* Insert or replace the context keyed by p->recipient_id (durable on
 * return). Returns 0, EDHOC_STATE_ERR_IO, EDHOC_STATE_ERR_ARG. */
int edhoc_state_put_peer(struct edhoc_state_db *db, const struct edhoc_state_peer *p);

/* Durably record that sequence numbers below `mark` may be used by the
 * context with this recipient ID (never lowers a stored mark). Suitable as
 * the body of the OSCORE persistence callback. Returns 0,
 * EDHOC_STATE_ERR_IO, EDHOC_STATE_ERR_NOT_FOUND. */
int edhoc_state_store_ssn(struct edhoc_state_db *db, const uint8_t *recipient_id, size_t len,
                          uint64_t mark);

/* Remove a context. Returns 0, EDHOC_STATE_ERR_IO, EDHOC_STATE_ERR_NOT_FOUND. */
int edhoc_state_delete_peer(struct edhoc_state_db *db, const uint8_t *recipient_id, size_t len);

/* Call fn for every stored context (stops early and returns fn's value if
 * it is non-zero). Returns 0, EDHOC_STATE_ERR_IO, EDHOC_STATE_ERR_CORRUPT,
 * or fn's value. */
int edhoc_state_for_each_peer(struct edhoc_state_db *db,
                              int (*fn)(void *ctx, const struct edhoc_state_peer *p), void *ctx);

/* Number of stored contexts (or a negative error). */
long edhoc_state_count(struct edhoc_state_db *db);

const char *edhoc_state_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
