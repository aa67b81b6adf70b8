/*
 * Built-in demo credentials (src/demo/demo_creds.c, from data/demo/): the
 * RFC 9529 trace credentials and a small demo PKI, so that `edhoc-cli
 * simulate`, `responder --demo` and the tests run without provisioning.
 * Their private keys are published, so they are linked into the CLI and
 * the tests only, never into the installed libedhoc, and this header is
 * not installed.
 */
#ifndef EDHOC_DEMO_CREDS_H
#define EDHOC_DEMO_CREDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/cred.h"

/* Demo X.509 certificates are valid 2024-01-01 .. 2099-12-31 and signed by
 * a demo P-256 CA (edhoc_demo_trust adds it). Every demo credential
 * carries a one-byte kid, unique among them (so kid lookups work) and sent
 * as a one-byte CBOR integer. Initiator kids (responder: + 0x20):
 *                    P-256  P-384  Ed25519/X25519  Ed448/X448
 *   X.509 signature   01     02        06             07
 *   CCS signature     03     04        05             08
 *   CCS static DH     09     0a        0c             0d
 *   X.509 static DH   0e     0f        13             14
 *   chain 10, 293-byte certificate 11, expired 17 (initiator only);
 *   trace 2 keeps its own kids 2b (I) and 32 (R); trace 1 has none.
 * All functions: role 'I' or 'R'; key may be NULL. Return 0 or
 * EDHOC_CRED_ERR_UNKNOWN (no such demo credential). */

/* Signature key (for_dh false: curve 6 Ed25519, 7 Ed448, 1 ES256, 2 ES384)
 * or static DH key (for_dh true: curve 4 X25519, 1 P-256, 2 P-384,
 * 5 X448) as the given type: EDHOC_CRED_X509 (a leaf signed by the demo
 * CA) or EDHOC_CRED_CCS (with sub and kid); type 0 picks the default,
 * X.509 for signature keys and CCS for static DH keys. */
int edhoc_demo_cred_typed(char role, int curve, bool for_dh, enum edhoc_cred_type type,
                          struct edhoc_cred *cred, struct edhoc_key *key);
/* = edhoc_demo_cred_typed(role, curve, for_dh, 0, cred, key) */
int edhoc_demo_cred(char role, int curve, bool for_dh, struct edhoc_cred *cred,
                    struct edhoc_key *key);
/* RFC 9529 trace 1 (X.509, Ed25519 signature keys sk_i/sk_r) or trace 2
 * (CCS, P-256 static DH keys). */
int edhoc_demo_trace_cred(int trace, char role, struct edhoc_cred *cred, struct edhoc_key *key);
/* P-256 leaf + intermediate CA (n_certs 2), for x5chain with a chain. */
int edhoc_demo_chain_cred(char role, struct edhoc_cred *cred, struct edhoc_key *key);
/* P-256 certificates of exactly 293 bytes DER signed by the demo CA. */
int edhoc_demo_cred_293(char role, struct edhoc_cred *cred, struct edhoc_key *key);
/* A P-256 certificate signed by the demo CA that expired in 2024
 * (role ignored: one certificate). */
int edhoc_demo_expired_cred(struct edhoc_cred *cred, struct edhoc_key *key);
/* The demo CA certificate itself. */
int edhoc_demo_ca(struct edhoc_cred *cred);
/* Add the demo CA as an anchor and every demo credential above (except
 * the expired one, which must be refused) as a configured credential.
 * Returns 0 or EDHOC_CRED_ERR_TOO_LARGE. */
int edhoc_demo_trust(struct edhoc_cred_store *store);
/* The one-byte kids of every demo credential above (the expired one
 * included), so that a new credential can avoid them: a kid the demo trust
 * already holds names the demo credential, not the new one. Writes up to
 * cap of them to out and returns how many there are (cap 0 counts them);
 * 0 if out of memory. */
size_t edhoc_demo_kids(uint8_t *out, size_t cap);

#endif
