/*
 * The responder's credentials: --cred/--key pairs (or the built-in demo
 * set with --demo) and --trust, loaded and reloaded (SIGHUP), and the
 * configuration the engine asks for each message_1 (by method and the
 * selected suite).
 */
#ifndef CLI_RESPONDER_CREDS_H
#define CLI_RESPONDER_CREDS_H

#include <stdbool.h>
#include <stddef.h>

#include "edhoc_args.h"

#define MAX_CREDS   8
#define N_SUITE_IDS 9

struct interop_log;

/* Every suite the library has, in the order a responder offers them. */
extern const int responder_known_suites[N_SUITE_IDS];

/* One usable configuration: a credential for a method, with the suites it
 * serves. */
struct ident {
    bool ready;
    struct cli_side side;
    int suites[EDHOC_MAX_SUITES];
    /* The options side's configuration was set up from: its EAD items and
     * EAD callback context point into them, so they live as long as it. */
    struct cli_edhoc_opts opts;
};

struct responder {
    struct cli_edhoc_opts o;
    const char *cred_paths[MAX_CREDS], *key_paths[MAX_CREDS];
    size_t n_cred_paths, n_key_paths;
    /* Loaded credentials (explicit mode). */
    struct edhoc_cred *creds;
    struct edhoc_key *keys;
    size_t n_creds;
    struct edhoc_cred_store *trust;
    bool demo;
    /* explicit: [cred][method]; demo: [method][suite index] */
    struct ident *idents;
    size_t n_idents;
    int supported[EDHOC_MAX_SUITES];
    size_t n_supported;
    /* Per method, every supported suite some credential serves: what each
     * configuration of that method accepts and what error code 2 lists
     * (RFC 9528 Section 6.3), whichever credential answers. Worked out
     * on the first message_1 of the method after a (re)load. */
    int method_suites[4][EDHOC_MAX_SUITES];
    size_t n_method_suites[4];
    bool method_suites_known[4];
    struct interop_log *ilog; /* --interop-log: every configuration traces into it */
};

/* Load (or reload) credentials and trust. Returns 0 or a CLI exit code
 * (the reason logged). */
int responder_creds_load(struct responder *r);
/* The engine's select callback (edhoc_server_config.select, user r). */
const struct edhoc_config *responder_creds_select(void *user, int m, int suite,
                                                  edhoc_cred_resolver *resolve, void **resolve_ctx);
/* Everything loaded wiped and freed; r itself stays. */
void responder_creds_free(struct responder *r);

#endif
