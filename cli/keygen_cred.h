/* What `edhoc-cli keygen` makes once its options are checked: the
 * issuer's key (and certificate) loaded, a kid no demo credential has,
 * the key pair, the credential (CCS, CWT or X.509) and its bytes as they
 * are written (PEM, hex or CBOR). cmd_keygen.c writes the files and
 * prints the report. */
#ifndef CLI_KEYGEN_CRED_H
#define CLI_KEYGEN_CRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/cred.h"

struct keygen_params {
    int curve;
    bool x509, cwt, hex, is_ca, no_ext;
    const char *subject, *ca_cert, *ca_key, *issuer_key_path, *issuer_name;
    int64_t not_before, not_after, now;
    const uint8_t *issuer_kid;
    size_t issuer_kid_len;
};

struct keygen_made {
    struct edhoc_key key, issuer_key;
    struct edhoc_cred *cred, *issuer;
    char *text;                      /* the PEM or hex written */
    uint8_t kid[EDHOC_CRED_MAX_KID]; /* given (kid_len > 0) or chosen */
    long kid_len;                    /* -1: none given (one is chosen but for X.509) */
    const void *out;                 /* the credential file's bytes */
    size_t out_len;
};

/* Allocates m's buffers; m->kid and m->kid_len are set after it. Returns 0
 * or -1 (out of memory). keygen_made_free() in either case. */
int keygen_made_init(struct keygen_made *m);

/* Makes the key and the credential of p into m. Returns CLI_EXIT_OK, or
 * CLI_EXIT_INPUT (an issuer's file) or CLI_EXIT_FAILURE with why (empty
 * when there is nothing more to say). */
int keygen_make(const struct keygen_params *p, struct keygen_made *m, char *why, size_t cap);

/* Wipes the keys and frees the buffers. */
void keygen_made_free(struct keygen_made *m);

#endif
