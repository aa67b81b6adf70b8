/*
 * The engine of `edhoc-cli simulate`: an initiator and a responder run in
 * one process, no network. It records every message and, on request, every
 * traced value, times the handshakes and their crypto calls, runs
 * EDHOC_KeyUpdate and frames the messages as RFC 9528 Appendix A.2 would
 * send them. The program builds both sides (credentials, trust) and
 * prints what the engine returns.
 */
#ifndef EDHOC_TOOLS_SIMULATE_H
#define EDHOC_TOOLS_SIMULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/crypto.h"
#include "edhoc/edhoc.h"

#define SIMULATE_MAX_ATTEMPTS 4 /* message_1 attempts (suite negotiation) */
#define SIMULATE_MAX_RECORDED 16
#define SIMULATE_MAX_CONTEXT  256 /* the KeyUpdate context */
#define SIMULATE_MAX_FRAMED   (SIMULATE_MAX_RECORDED + 4)

/* One side as the program built it: its config (the engine sets its ops
 * and trace members), the resolver's context and where the resolver puts
 * why a lookup failed, and the per-attempt inputs of the command line
 * (the n-th identifier / ephemeral key for the n-th attempt, the last one
 * repeating). */
struct simulate_side {
    struct edhoc_config *cfg;
    void *resolve_ctx;
    int *resolve_error; /* EDHOC_CRED_ERR_* of the last lookup, 0 none */
    const uint8_t (*c_id)[EDHOC_MAX_CONN_ID];
    const size_t *c_id_len;
    size_t n_c_id;
    const uint8_t (*ephemerals)[EDHOC_CRYPTO_MAX_PRIV];
    const size_t *ephemeral_len;
    size_t n_ephemerals;
};

struct simulate_recorded {
    const char *name; /* message_1 .. message_4, error */
    char sender;      /* 'I' or 'R' */
    uint8_t *bytes;
    size_t len;
};

struct simulate_trace_entry {
    char side;
    char name[40];
    uint8_t *value;
    size_t len;
};

struct simulate_key_update {
    bool done;
    bool sides_agree; /* PRK_out before and after, PRK_exporter and OSCORE after */
    uint8_t context[SIMULATE_MAX_CONTEXT];
    size_t context_len;
    uint8_t prk_out_before[EDHOC_CRYPTO_MAX_HASH];
    uint8_t prk_out_after[EDHOC_CRYPTO_MAX_HASH];
    uint8_t prk_exporter_after[EDHOC_CRYPTO_MAX_HASH];
    size_t prk_len;
    struct edhoc_oscore_params oscore_i, oscore_r; /* from the new PRK_out */
};

/* One handshake as it went. */
struct simulate_run {
    struct simulate_recorded msgs[SIMULATE_MAX_RECORDED];
    size_t n_msgs;
    struct simulate_trace_entry *trace;
    size_t n_trace, cap_trace;
    int attempts;
    int err;                            /* EDHOC_ERR_* that ended the run, 0 on success */
    char failed_side;                   /* 'I' / 'R' */
    char why[256];                      /* the failing side's error text */
    struct edhoc_error_info peer_error; /* when an error message was received */
    bool have_peer_error;
    char peer_error_text[128];
    struct edhoc_oscore_params oscore_i, oscore_r;
    uint8_t c_r[EDHOC_MAX_CONN_ID]; /* for the A.2 framing of message_3 */
    size_t c_r_len;
    bool have_oscore; /* false: the suite has no OSCORE context, why in no_oscore */
    char no_oscore[320];
    size_t rx_ead_count[5];
    struct simulate_key_update ku;
};

struct simulate_timing {
    double handshake_ms; /* median */
    double min_ms;
    double crypto_ms; /* median run's time inside crypto calls */
    unsigned crypto_calls;
    int runs;     /* handshakes timed */
    bool partial; /* --repeat stopped by the interruption check */
};

struct simulate_settings {
    struct simulate_side i, r;
    edhoc_cred_resolver resolve;
    const int *suites; /* the initiator's, for the no-common-suite text */
    size_t n_suites;
    bool message_4;
    bool trace;  /* record the traced values of the reported run */
    long repeat; /* handshakes, >= 1; the first is the reported one */
    /* EDHOC_KeyUpdate (RFC 9528 Appendix H) after the reported run. */
    bool key_update;
    uint8_t ku_context[SIMULATE_MAX_CONTEXT];
    size_t ku_context_len;
    /* Whether the suite has no OSCORE context (why in why). */
    bool (*oscore_unavailable)(int suite, char *why, size_t cap);
    /* After the KeyUpdate of the reported run, both sessions still open
     * (the program's own derivations: EDHOC_Exporter); 0 or an EDHOC_ERR_*. */
    int (*after_handshake)(void *ctx, const struct edhoc_session *s_i,
                           const struct edhoc_session *s_r);
    void *after_ctx;
    /* When key_log is set, the initiator's values of every handshake are
     * collected in it and on_established is called after each completed
     * one, outside the timed part. */
    struct edhoc_key_log *key_log;
    void (*on_established)(void *ctx, const struct edhoc_key_log *log,
                           const struct simulate_run *run);
    void *established_ctx;
    int (*interrupted)(void);                        /* may be NULL */
    void (*progress)(void *ctx, long done, long of); /* may be NULL */
    void *progress_ctx;
};

struct simulate_result {
    struct simulate_run run; /* the reported (first) run */
    struct simulate_timing timing;
    int suite;        /* of the last message_1, -1 none */
    int later_err;    /* a later --repeat run that failed */
    long later_index; /* its number, from 1 */
    char later_why[256];
};

/* Runs the handshakes; the result is filled even when one failed (see
 * run.err and later_err). 0, or TOOLS_ERR_INTERNAL (out of memory). */
int simulate_run(const struct simulate_settings *s, struct simulate_result *out);

/* Wipes the secrets and frees what the run holds. */
void simulate_run_free(struct simulate_run *run);

/* The initiator's context a and the responder's b are two sides of one. */
bool simulate_oscore_params_match(const struct edhoc_oscore_params *a,
                                  const struct edhoc_oscore_params *b);

/* Both sides derived the same OSCORE context. */
bool simulate_oscore_contexts_match(const struct simulate_run *run);

/* All bytes sent; message_1..3 of the final attempt (the handshake proper). */
size_t simulate_total_bytes(const struct simulate_run *run);
size_t simulate_handshake_bytes(const struct simulate_run *run);

/* ---- The A.2 framing (simulate_frame.c) ----
 *
 * Each message put into the CoAP message RFC 9528 Appendix A.2 would send
 * (encoded, not estimated): requests CON POST with a 1-byte token,
 * Uri-Path .well-known/edhoc, Content-Format 65 and the CBOR true
 * (message_1) or C_R prefix; responses ACK 2.04 Changed (4.00 for an error
 * message) with the 1-byte token and Content-Format 64; the empty 2.04
 * answering message_3 when there is no message_4. */
struct simulate_framed {
    const char *name;
    char from;
    long edhoc; /* -1: no EDHOC message (the empty 2.04) */
    uint8_t coap[EDHOC_MAX_MESSAGE + 64];
    size_t coap_len;
};

/* Every recorded message framed; returns the count (0 when a message
 * cannot be framed or the handshake failed: C_R is then unknown). */
size_t simulate_frame_run(const struct simulate_run *run, struct simulate_framed *out, size_t max);

#endif
