/*
 * EDHOC options shared by simulate, initiator and responder: parsing the
 * flags, and turning them into a ready edhoc_config per side (credential,
 * key, ID_CRED, trust store, connection identifiers, ephemeral keys, EAD).
 */
#ifndef CLI_EDHOC_ARGS_H
#define CLI_EDHOC_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "edhoc/cred.h"
#include "edhoc/edhoc.h"
#include "options.h"

#define CLI_SIDE_I       0
#define CLI_SIDE_R       1
#define CLI_MAX_ATTEMPTS 4 /* message_1 attempts (suite negotiation) */
#define CLI_MAX_EAD      8 /* EAD items per message given on the command line */
#define CLI_MAX_TRUST    8

/* Per-side settings as given on the command line. */
struct cli_side_opts {
    const char *cred_path;
    const char *key_path;
    /* The side suffix as the user spelled it ("" for --cred, "-i" for
     * --cred-i), so that messages name options the command accepts. */
    char flag_suffix[3];
    int id_cred_type;                /* enum edhoc_id_cred_type; 0 = default */
    uint8_t kid[EDHOC_CRED_MAX_KID]; /* --kid: names the own credential (kid_len 0: none) */
    size_t kid_len;
    uint8_t c_id[CLI_MAX_ATTEMPTS][EDHOC_MAX_CONN_ID];
    size_t c_id_len[CLI_MAX_ATTEMPTS];
    size_t n_c_id; /* 0 = chosen by the library */
    const char *ephemeral_path;
    /* Deviations of the peer this side accepts (--tolerate) and commits
     * itself as a test aid (--emulate): EDHOC_DEV_* bits. */
    unsigned tolerate, emulate;
};

struct cli_edhoc_opts {
    int method;
    int suites[EDHOC_MAX_SUITES]; /* initiator, in order of preference */
    size_t n_suites;
    int suites_r[EDHOC_MAX_SUITES]; /* responder's supported suites */
    size_t n_suites_r;              /* 0 = all suites the library has */
    unsigned accept_methods;        /* responder: bit per method; 0 = all */
    struct cli_side_opts side[2];
    const char *trust_paths[CLI_MAX_TRUST];
    size_t n_trust;
    bool message_4;
    struct edhoc_ead_item ead[5][CLI_MAX_EAD];
    size_t n_ead[5];
    uint8_t ead_values[2048]; /* storage of the EAD values above */
    size_t ead_values_used;
    int64_t ead_accept[CLI_MAX_EAD]; /* labels both sides understand */
    size_t n_ead_accept;
    bool trace;
    bool json;
    bool export_secrets;
};

/* A side ready to run: everything edhoc_config points to lives here. */
struct cli_side {
    int role; /* CLI_SIDE_I / CLI_SIDE_R */
    struct edhoc_cred cred;
    struct edhoc_key key;
    uint8_t id_cred[EDHOC_MAX_ID_CRED];
    size_t id_cred_len;
    struct edhoc_cred_store *store; /* heap: large */
    struct edhoc_config cfg;
    uint8_t ephemerals[CLI_MAX_ATTEMPTS][EDHOC_CRYPTO_MAX_PRIV];
    size_t ephemeral_len[CLI_MAX_ATTEMPTS];
    size_t n_ephemerals;
    const char *cred_origin;    /* "file ...", "built-in ..." */
    struct edhoc_cred resolved; /* the peer credential last resolved */
    int resolve_error;          /* why the last resolution failed (EDHOC_CRED_ERR_*), 0 */
};

void cli_edhoc_opts_init(struct cli_edhoc_opts *o);

/* Try one option. For simulate, per-side flags carry -i / -r suffixes
 * (--cred-i); for a one-sided command (own_side >= 0) the unsuffixed form
 * (--cred) names own_side. Returns 1 (consumed, and *used_value tells
 * whether value was used), 0 (not an EDHOC option), or -1 after printing an
 * error. value may be NULL when the option is last. */
int cli_edhoc_parse_option(struct cli_edhoc_opts *o, int own_side, const char *name,
                           const char *value, bool *used_value);

/* Read and parse an OSCORE context file (libcoap's keyword,encoding,value
 * format). It holds the master secret, so it gets the checks of a private
 * key file: a regular file, no permission for group or others, owned by
 * the user running or root, in a directory others cannot write (unless
 * sticky); checked on the descriptor that is read; the text is wiped.
 * prog and option name the command line in messages ("coap",
 * "--oscore-context"). Returns 0 (the caller wipes *cfg), or
 * CLI_EXIT_INPUT after printing why and the fix. */
struct oscore_config;
int cli_oscore_context_load(const char *prog, const char *option, const char *path,
                            struct oscore_config *cfg);

/* The shared EDHOC options each command declares (options.h tables; every
 * entry has the id CLI_OPT_ID_EDHOC): only what the command uses. */
struct cli_opt;
struct cli_opt_parser;
extern const struct cli_opt cli_edhoc_opts_simulate[];
extern const struct cli_opt cli_edhoc_opts_initiator[];
extern const struct cli_opt cli_edhoc_opts_responder[];
extern const struct cli_opt cli_edhoc_opts_load[];
/* Take the parser's current option (id CLI_OPT_ID_EDHOC) for own_side
 * (-1: simulate, options carry -i/-r). Returns 0, or -1 after printing
 * why the value is bad. */
int cli_edhoc_take(struct cli_edhoc_opts *o, int own_side, const struct cli_opt_parser *p);
/* What a command using the built-in demo credentials should tell users
 * (for its help epilogue). */
#define CLI_EDHOC_DEMO_NOTE                                                                        \
    "Without credential options the built-in demo credentials are used: the RFC 9529 trace 1\n"    \
    "(method 0, suite 0, x5t) and trace 2 (method 3, suite 2, kid) credentials, and otherwise\n"   \
    "certificates from a demo CA / CCS static-DH keys for the suite's curves. Their private\n"     \
    "keys are published: they prove nothing about who is talking."

/* Suite the exchange is expected to settle on (the initiator's most
 * preferred suite the responder supports), to choose default credentials. */
int cli_edhoc_expected_suite(const struct cli_edhoc_opts *o);

/* Build side `role`: load or pick the credential and key, ID_CRED, trust
 * store (the --trust files; without any, the built-in demo set when this
 * side uses demo credentials, which cli_edhoc_side_trust_peer puts behind
 * the peer's credential), ephemeral keys, EAD, config. Prints a one-line
 * error and returns a CLI exit code on failure, 0 on success. */
int cli_edhoc_side_setup(const struct cli_edhoc_opts *o, int role, struct cli_side *side);
/* Add the peer's credential to side's trust store (simulate's default:
 * each side trusts the other's configured credential), ahead of the
 * built-in demo set: a kid both have resolves to the peer's. */
int cli_edhoc_side_trust_peer(struct cli_side *side, const struct edhoc_cred *peer);
void cli_edhoc_side_free(struct cli_side *side);

/* Resolver over side->store for edhoc_*_handle_message_*; ctx is the
 * struct cli_side. */
int cli_edhoc_resolve(void *ctx, const uint8_t *id_cred, size_t id_cred_len,
                      const struct edhoc_cred **cred);

/* EAD receive callback: labels in o->ead_accept are processed, others
 * unrecognized. ctx is the struct cli_edhoc_opts. */
int cli_edhoc_ead_receive(void *ctx, int message, const struct edhoc_ead_item *item);

/* The hkdf_alg of libcoap's OSCORE conf (coap-oscore-conf(5)) for an
 * application hash: -10, COSE "direct+HKDF-SHA-256", for SHA-256 (libcoap
 * refuses the hash id -16). Other hashes have no value libcoap takes: their
 * COSE hash id (-43 for SHA-384), which our reader takes, and *libcoap
 * false. */
int cli_oscore_conf_hkdf(int hash_alg, bool *libcoap);

/* The OSCORE context as a JSON object, in the terms another tool takes it:
 * master_secret and master_salt (null unless secrets), sender_id,
 * recipient_id, aead_alg, hkdf_alg as cli_oscore_conf_hkdf gives it,
 * libcoap (whether libcoap can take that hkdf_alg), sender_next_seq and
 * recipient_next_seq, the next Sender Sequence Number of each side (< 0:
 * not known, null). */
json_t *cli_oscore_json(const struct edhoc_oscore_params *p, bool secrets, long long sender_next,
                        long long recipient_next);

/* p's side of the context as libcoap's OSCORE conf: master_secret,
 * master_salt, sender_id, recipient_id (hex), aead_alg, hkdf_alg,
 * replay_window, each line after prefix; no id_context (an EDHOC-derived
 * context has none, RFC 9528 Appendix A.1); a comment line first when
 * libcoap cannot take the hkdf_alg. */
void cli_write_oscore_conf(FILE *f, const struct edhoc_oscore_params *p, const char *prefix);

/* Exit code for an EDHOC/credential error (cli/util.h). */
int cli_exit_for_edhoc_error(int err);

const char *cli_id_cred_type_name(int type);
/* Type of an encoded ID_CRED map (enum edhoc_id_cred_type), 0 if unreadable. */
int cli_id_cred_type_of(const uint8_t *id_cred, size_t len);
const char *cli_method_name(int method);

#endif
