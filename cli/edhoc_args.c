#include "edhoc_args.h"
#include "options.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edhoc/oscore.h"
#include "output/json_out.h"
#include "path_check.h"
#include "util.h"
#include "demo_creds.h"

static const int all_suites[] = {0, 1, 2, 3, 4, 5, 6, 24, 25};

void cli_edhoc_opts_init(struct cli_edhoc_opts *o)
{
    memset(o, 0, sizeof *o);
    o->method = 3;
    o->suites[0] = 2;
    o->n_suites = 1;
}

const char *cli_id_cred_type_name(int type)
{
    switch (type) {
    case EDHOC_ID_CRED_KID: return "kid";
    case EDHOC_ID_CRED_KCCS: return "kccs";
    case EDHOC_ID_CRED_X5T: return "x5t";
    case EDHOC_ID_CRED_X5CHAIN: return "x5chain";
    case EDHOC_ID_CRED_X5BAG: return "x5bag";
    case EDHOC_ID_CRED_KCWT: return "kcwt";
    default: return "?";
    }
}

const char *cli_method_name(int method)
{
    static const char *names[] = {"signature / signature", "signature / static DH",
                                  "static DH / signature", "static DH / static DH"};
    return method >= 0 && method <= 3 ? names[method] : "?";
}

int cli_id_cred_type_of(const uint8_t *id_cred, size_t len)
{
    struct edhoc_id_cred parsed;
    if (edhoc_id_cred_parse(id_cred, len, &parsed) != 0)
        return 0;
    return (int)parsed.type;
}

static int parse_id_cred_type(const char *s)
{
    if (!strcmp(s, "kid"))
        return EDHOC_ID_CRED_KID;
    if (!strcmp(s, "kccs"))
        return EDHOC_ID_CRED_KCCS;
    if (!strcmp(s, "x5t"))
        return EDHOC_ID_CRED_X5T;
    if (!strcmp(s, "x5chain"))
        return EDHOC_ID_CRED_X5CHAIN;
    if (!strcmp(s, "x5bag"))
        return EDHOC_ID_CRED_X5BAG;
    if (!strcmp(s, "kcwt"))
        return EDHOC_ID_CRED_KCWT;
    return -1;
}

static int parse_suites(const char *flag, const char *value, int *out, size_t *n)
{
    int tmp[EDHOC_MAX_SUITES];
    int count = cli_parse_int_list(value, tmp, EDHOC_MAX_SUITES);
    if (count <= 0) {
        fprintf(stderr,
                "edhoc-cli: %s: expected a comma-separated list of cipher suites, got '%s'\n", flag,
                value);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        if (!edhoc_suite_find(tmp[i])) {
            fprintf(stderr,
                    "edhoc-cli: %s: cipher suite %d is not supported (supported: 0, 1, 2, 3, 4, 5, "
                    "6, 24, 25)\n",
                    flag, tmp[i]);
            return -1;
        }
        for (int j = 0; j < i; j++) {
            if (tmp[j] == tmp[i]) {
                fprintf(stderr, "edhoc-cli: %s: cipher suite %d listed twice\n", flag, tmp[i]);
                return -1;
            }
        }
        out[i] = tmp[i];
    }
    *n = (size_t)count;
    return 0;
}

/* "HEX[,HEX...]": one connection identifier per message_1 attempt. */
static int parse_conn_ids(const char *flag, const char *value, struct cli_side_opts *side)
{
    char buf[256];
    if (strlen(value) >= sizeof buf) {
        fprintf(stderr, "edhoc-cli: %s: value too long\n", flag);
        return -1;
    }
    strcpy(buf, value);
    size_t n = 0;
    char *save = NULL;
    char *p = buf;
    /* strtok would skip an empty identifier; split by hand. */
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (n >= CLI_MAX_ATTEMPTS) {
            fprintf(stderr, "edhoc-cli: %s: at most %d identifiers\n", flag, CLI_MAX_ATTEMPTS);
            return -1;
        }
        long len = cli_hex_decode(p, side->c_id[n], EDHOC_MAX_CONN_ID);
        if (len < 0) {
            fprintf(stderr, "edhoc-cli: %s: '%s' is not hex of at most %d bytes\n", flag, p,
                    EDHOC_MAX_CONN_ID);
            return -1;
        }
        side->c_id_len[n++] = (size_t)len;
        if (!comma)
            break;
        p = comma + 1;
    }
    (void)save;
    side->n_c_id = n;
    return 0;
}

/* "LABEL[:HEX]" */
static int parse_ead(const char *flag, const char *value, struct cli_edhoc_opts *o, int msg)
{
    if (o->n_ead[msg] >= CLI_MAX_EAD) {
        fprintf(stderr, "edhoc-cli: %s: at most %d items\n", flag, CLI_MAX_EAD);
        return -1;
    }
    char *end;
    errno = 0;
    long long label = strtoll(value, &end, 10);
    if (end == value || errno || (*end && *end != ':')) {
        fprintf(stderr, "edhoc-cli: %s: expected LABEL or LABEL:HEX, got '%s'\n", flag, value);
        return -1;
    }
    struct edhoc_ead_item *item = &o->ead[msg][o->n_ead[msg]];
    memset(item, 0, sizeof *item);
    item->label = label;
    if (*end == ':') {
        uint8_t *v = o->ead_values + o->ead_values_used;
        long len = cli_hex_decode(end + 1, v, sizeof o->ead_values - o->ead_values_used);
        if (len < 0) {
            fprintf(
                stderr,
                "edhoc-cli: %s: value of '%s' is not hex (or all EAD values exceed %zu bytes)\n",
                flag, value, sizeof o->ead_values);
            return -1;
        }
        o->ead_values_used += (size_t)len;
        item->value = v;
        item->value_len = (size_t)len;
        item->has_value = true;
    }
    o->n_ead[msg]++;
    return 0;
}

/* Split "--cred-i" into base "cred" and side; unsuffixed names map to
 * own_side. Returns the side or -1 when the flag has no side. */
static int flag_side(const char *name, int own_side, char *base, size_t cap)
{
    size_t len = strlen(name);
    if (len + 1 > cap)
        return -2;
    strcpy(base, name);
    if (len > 2 && base[len - 2] == '-' && (base[len - 1] == 'i' || base[len - 1] == 'r')) {
        int side = base[len - 1] == 'i' ? CLI_SIDE_I : CLI_SIDE_R;
        base[len - 2] = '\0';
        return side;
    }
    return own_side;
}

int cli_edhoc_parse_option(struct cli_edhoc_opts *o, int own_side, const char *name,
                           const char *value, bool *used_value)
{
    *used_value = false;
    char base[64];
    int side = flag_side(name, own_side, base, sizeof base);

    /* Flags without a value. */
    if (!strcmp(name, "--message-4")) {
        o->message_4 = true;
        return 1;
    }
    if (!strcmp(name, "--trace")) {
        o->trace = true;
        return 1;
    }
    if (!strcmp(name, "--json")) {
        o->json = true;
        return 1;
    }
    if (!strcmp(name, "--export-secrets")) {
        o->export_secrets = true;
        return 1;
    }

    static const char *const valued[] = {
        "--method",     "--suites",  "--suites-r",  "--trust",   "--cred",  "--key",   "--id-cred",
        "--c-i",        "--c-r",     "--ephemeral", "--ead-1",   "--ead-2", "--ead-3", "--ead-4",
        "--ead-accept", "--methods", "--tolerate",  "--emulate", "--kid"};
    bool known = false;
    for (size_t i = 0; i < sizeof valued / sizeof valued[0]; i++) {
        if (!strcmp(name, valued[i]) || !strcmp(base, valued[i]))
            known = true;
    }
    if (!known)
        return 0;
    if (!value) {
        fprintf(stderr, "edhoc-cli: %s needs a value\n", name);
        return -1;
    }
    *used_value = true;

    if (!strcmp(name, "--method")) {
        char *end;
        long m = strtol(value, &end, 10);
        if (*end || end == value || m < 0 || m > 3) {
            fprintf(stderr, "edhoc-cli: --method: expected 0, 1, 2 or 3, got '%s'\n", value);
            return -1;
        }
        o->method = (int)m;
        return 1;
    }
    if (!strcmp(name, "--methods")) {
        int list[4];
        int n = cli_parse_int_list(value, list, 4);
        if (n <= 0) {
            fprintf(stderr, "edhoc-cli: --methods: expected a list of 0..3, got '%s'\n", value);
            return -1;
        }
        o->accept_methods = 0;
        for (int i = 0; i < n; i++) {
            if (list[i] < 0 || list[i] > 3) {
                fprintf(stderr, "edhoc-cli: --methods: %d is not a method (0..3)\n", list[i]);
                return -1;
            }
            o->accept_methods |= 1u << list[i];
        }
        return 1;
    }
    if (!strcmp(name, "--suites")) {
        /* A one-sided responder's --suites is its supported set. */
        if (own_side == CLI_SIDE_R)
            return parse_suites(name, value, o->suites_r, &o->n_suites_r) ? -1 : 1;
        return parse_suites(name, value, o->suites, &o->n_suites) ? -1 : 1;
    }
    if (!strcmp(name, "--suites-r"))
        return parse_suites(name, value, o->suites_r, &o->n_suites_r) ? -1 : 1;
    if (!strcmp(name, "--trust")) {
        if (o->n_trust >= CLI_MAX_TRUST) {
            fprintf(stderr, "edhoc-cli: --trust: at most %d files\n", CLI_MAX_TRUST);
            return -1;
        }
        o->trust_paths[o->n_trust++] = value;
        return 1;
    }
    if (!strcmp(base, "--ead")) {
        /* not reached: --ead-N handled below (their suffix is a digit) */
        return 0;
    }
    if (!strncmp(name, "--ead-", 6) && name[6] >= '1' && name[6] <= '4' && !name[7])
        return parse_ead(name, value, o, name[6] - '0') ? -1 : 1;
    if (!strcmp(name, "--ead-accept")) {
        char *end;
        long long label = strtoll(value, &end, 10);
        if (*end || end == value || o->n_ead_accept >= CLI_MAX_EAD) {
            fprintf(stderr, "edhoc-cli: --ead-accept: expected an EAD label, got '%s'\n", value);
            return -1;
        }
        o->ead_accept[o->n_ead_accept++] = label;
        return 1;
    }
    if (!strcmp(name, "--c-i"))
        return parse_conn_ids(name, value, &o->side[CLI_SIDE_I]) ? -1 : 1;
    if (!strcmp(name, "--c-r"))
        return parse_conn_ids(name, value, &o->side[CLI_SIDE_R]) ? -1 : 1;

    if (side < 0) {
        fprintf(stderr, "edhoc-cli: %s: say which side (%s-i or %s-r)\n", name, name, name);
        return -1;
    }
    struct cli_side_opts *so = &o->side[side];
    /* How this command spells the side's options (--cred, or --cred-i on
     * a command that sets both sides), for the messages that name them. */
    snprintf(so->flag_suffix, sizeof so->flag_suffix, "%s", name + strlen(base));
    if (!strcmp(base, "--cred") || !strcmp(base, "--key")) {
        if (!strcmp(base, "--cred"))
            so->cred_path = value;
        else
            so->key_path = value;
        return 1;
    }
    if (!strcmp(base, "--ephemeral")) {
        so->ephemeral_path = value;
        return 1;
    }
    if (!strcmp(base, "--tolerate") || !strcmp(base, "--emulate")) {
        unsigned mask = 0;
        char why[160];
        if (edhoc_deviations_parse(value, &mask, why, sizeof why)) {
            fprintf(stderr,
                    "edhoc-cli: %s: %s (known: c-bstr, kid-int, id-cred-compact, "
                    "cred-wrap, ead-omitted)\n",
                    name, why);
            return -1;
        }
        if (!strcmp(base, "--tolerate"))
            so->tolerate = mask;
        else
            so->emulate = mask;
        return 1;
    }
    if (!strcmp(base, "--id-cred")) {
        int t = parse_id_cred_type(value);
        if (t < 0) {
            fprintf(stderr,
                    "edhoc-cli: %s: expected kid, kccs, kcwt, x5t, x5chain or x5bag, got '%s'\n",
                    name, value);
            return -1;
        }
        so->id_cred_type = t;
        return 1;
    }
    if (!strcmp(base, "--kid")) {
        long n = cli_hex_decode(value, so->kid, sizeof so->kid);
        if (n < 1) {
            fprintf(stderr, "edhoc-cli: %s: expected 1 to %d bytes of hex, got '%s'\n", name,
                    EDHOC_CRED_MAX_KID, value);
            return -1;
        }
        so->kid_len = (size_t)n;
        return 1;
    }
    *used_value = false;
    return 0;
}

/* ---- Option tables: one entry per spelling a command takes. ---- */

#define E        CLI_OPT_ID_EDHOC
#define H_METHOD "authentication method 0..3 (default 3)"
#define H_SUITES "cipher suites, most preferred first (default 2)"
#define H_CRED                                                                                     \
    "own credential: CCS or CWT (CBOR or hex), or X.509 (PEM/DER, chain\n"                         \
    "leaf first)"
#define H_KID                                                                                      \
    "key identifier of the own credential, hex (any type: replaces a CCS's or\n"                   \
    "CWT's, names a certificate); sent as a one-byte integer when it has one"
#define H_KEY                                                                                      \
    "private key: PEM (PKCS#8) or raw hex; refused if group/others can read it,\n"                 \
    "if another user owns it, or if its directory is writable by others"
#define H_TRUST                                                                                    \
    "CA certificates or credentials to accept (repeatable); when given,\n"                         \
    "the built-in demo set is not trusted at all"
#define H_ID_CRED                                                                                  \
    "how ID_CRED names the credential: kid, kccs, kcwt, x5t, x5chain,\n"                           \
    "x5bag (default: kid for a CCS or CWT, x5t for a certificate)"
#define H_EPHEMERAL                                                                                \
    "raw ephemeral private keys, hex, one per line, one per attempt\n"                             \
    "(a test aid: reproduces a trace)"
#define H_TOLERATE                                                                                 \
    "accept these deviations of the peer from RFC 9528 (named by the\n"                            \
    "diagnosis of a failed MAC/signature: c-bstr, kid-int,\n"                                      \
    "id-cred-compact, cred-wrap, ead-omitted); the report says so on\n"                            \
    "every handshake it affected; an initiator's message_3 then\n"                                 \
    "follows a deviation message_2 showed, as such a device expects"
#define H_EMULATE    "test aid: commit these deviations, as the devices that have them do"
#define H_EAD        "EAD item (label < 0 is critical; repeatable)"
#define H_EAD_ACCEPT "an EAD label the receiving side understands (repeatable)"
#define H_TRACE      "print every intermediate value with its RFC 9529 name"
#define H_JSON       "machine-readable output (docs/json.md)"
#define H_EXPORT                                                                                   \
    "include the derived OSCORE context (secrets!) in the output:\n"                               \
    "hkdf_alg as libcoap's OSCORE conf takes it (-10 for SHA-256) and the\n"                       \
    "next sender sequence numbers (null where the peer's is not known); the\n"                     \
    "initiator records the numbers it sent in the state directory"

const struct cli_opt cli_edhoc_opts_simulate[] = {
    {E, "method", "N", H_METHOD},
    {E, "suites", "LIST", "initiator's " H_SUITES},
    {E, "suites-r", "LIST", "responder's supported cipher suites (default: all)"},
    {E, "methods", "LIST", "methods the responder accepts (default: all)"},
    {E, "cred-i", "FILE", "initiator's " H_CRED},
    {E, "cred-r", "FILE", "responder's " H_CRED},
    {E, "key-i", "FILE", "initiator's " H_KEY},
    {E, "key-r", "FILE", "responder's " H_KEY},
    {E, "kid-i", "HEX", "initiator's " H_KID},
    {E, "kid-r", "HEX", "responder's " H_KID},
    {E, "trust", "FILE", H_TRUST "; default: each side trusts the other's\ncredential"},
    {E, "id-cred-i", "TYPE", "initiator: " H_ID_CRED},
    {E, "id-cred-r", "TYPE", "responder: " H_ID_CRED},
    {E, "c-i", "HEX[,HEX...]", "C_I byte string, one per message_1 attempt (2d is sent as -14)"},
    {E, "c-r", "HEX", "C_R byte string"},
    {E, "ephemeral-i", "FILE", "initiator's " H_EPHEMERAL},
    {E, "ephemeral-r", "FILE", "responder's " H_EPHEMERAL},
    {E, "message-4", NULL, "send / expect message_4"},
    {E, "tolerate-i", "LIST", "initiator: " H_TOLERATE},
    {E, "tolerate-r", "LIST", "responder: " H_TOLERATE},
    {E, "emulate-i", "LIST", "initiator: " H_EMULATE},
    {E, "emulate-r", "LIST", "responder: " H_EMULATE},
    {E, "ead-1", "LABEL[:HEX]", H_EAD " in message_1"},
    {E, "ead-2", "LABEL[:HEX]", H_EAD " in message_2"},
    {E, "ead-3", "LABEL[:HEX]", H_EAD " in message_3"},
    {E, "ead-4", "LABEL[:HEX]", H_EAD " in message_4"},
    {E, "ead-accept", "LABEL", H_EAD_ACCEPT},
    {E, "trace", NULL, H_TRACE},
    {E, "json", NULL, H_JSON},
    {E, "export-secrets", NULL, H_EXPORT},
    {0, NULL, NULL, NULL},
};

const struct cli_opt cli_edhoc_opts_initiator[] = {
    {E, "method", "N", H_METHOD},
    {E, "suites", "LIST", H_SUITES},
    {E, "cred", "FILE", H_CRED},
    {E, "key", "FILE", H_KEY},
    {E, "kid", "HEX", H_KID},
    {E, "trust", "FILE", H_TRUST "; default: the built-in demo credentials"},
    {E, "id-cred", "TYPE", H_ID_CRED},
    {E, "c-i", "HEX[,HEX...]", "C_I byte string, one per message_1 attempt (2d is sent as -14)"},
    {E, "ephemeral", "FILE", H_EPHEMERAL},
    {E, "message-4", NULL, "expect message_4"},
    {E, "tolerate", "LIST", H_TOLERATE},
    {E, "emulate", "LIST", H_EMULATE},
    {E, "ead-1", "LABEL[:HEX]", H_EAD " in message_1"},
    {E, "ead-3", "LABEL[:HEX]", H_EAD " in message_3"},
    {E, "ead-accept", "LABEL", H_EAD_ACCEPT},
    {E, "trace", NULL, H_TRACE},
    {E, "json", NULL, H_JSON},
    {E, "export-secrets", NULL, H_EXPORT},
    {0, NULL, NULL, NULL},
};

const struct cli_opt cli_edhoc_opts_responder[] = {
    {E, "suites", "LIST", "supported cipher suites (default: all the library has)"},
    {E, "methods", "LIST", "methods accepted, e.g. 0,3 (default: all)"},
    {E, "cred", "FILE", H_CRED " (repeatable with\n--key: one identity per credential)"},
    {E, "key", "FILE", H_KEY},
    {E, "kid", "HEX", H_KID " (with one --cred)"},
    {E, "trust", "FILE", H_TRUST},
    {E, "id-cred", "TYPE", H_ID_CRED},
    {E, "c-r", "HEX", "C_R byte string (default: chosen per handshake)"},
    {E, "message-4", NULL, "send message_4"},
    {E, "tolerate", "LIST", H_TOLERATE},
    {E, "emulate", "LIST", H_EMULATE},
    {E, "ead-2", "LABEL[:HEX]", H_EAD " in message_2"},
    {E, "ead-4", "LABEL[:HEX]", H_EAD " in message_4"},
    {E, "ead-accept", "LABEL", H_EAD_ACCEPT},
    {0, NULL, NULL, NULL},
};

const struct cli_opt cli_edhoc_opts_load[] = {
    {E, "method", "N", H_METHOD},
    {E, "suites", "LIST", H_SUITES},
    {E, "cred", "FILE", H_CRED},
    {E, "key", "FILE", H_KEY},
    {E, "kid", "HEX", H_KID},
    {E, "trust", "FILE", H_TRUST "; default: the built-in demo credentials"},
    {E, "id-cred", "TYPE", H_ID_CRED},
    {E, "message-4", NULL, "expect message_4"},
    {E, "tolerate", "LIST", H_TOLERATE},
    {E, "emulate", "LIST", H_EMULATE},
    {E, "ead-1", "LABEL[:HEX]", H_EAD " in message_1"},
    {E, "ead-3", "LABEL[:HEX]", H_EAD " in message_3"},
    {E, "ead-accept", "LABEL", H_EAD_ACCEPT},
    {0, NULL, NULL, NULL},
};
#undef E

int cli_edhoc_take(struct cli_edhoc_opts *o, int own_side, const struct cli_opt_parser *p)
{
    bool used = false;
    int rc = cli_edhoc_parse_option(o, own_side, p->flag, p->value, &used);
    if (rc == 0) /* a table entry this parser does not know: a bug, said as one */
        return cli_opt_error(p, "%s: not handled (internal error)", p->flag), -1;
    return rc < 0 ? -1 : 0;
}

int cli_edhoc_expected_suite(const struct cli_edhoc_opts *o)
{
    if (o->n_suites_r == 0)
        return o->suites[0];
    for (size_t i = 0; i < o->n_suites; i++) {
        for (size_t j = 0; j < o->n_suites_r; j++) {
            if (o->suites[i] == o->suites_r[j])
                return o->suites[i];
        }
    }
    return o->suites[0];
}

/* Built-in credential for this side, method and suite. */
static int pick_demo_cred(const struct cli_edhoc_opts *o, int role, int suite,
                          struct cli_side *side)
{
    bool initiator = role == CLI_SIDE_I;
    char r = initiator ? 'I' : 'R';
    bool for_dh = false;
    int curve = edhoc_cred_auth_curve(o->method, initiator, suite, &for_dh);
    if (curve < 0) {
        fprintf(stderr, "edhoc-cli: no key type for method %d suite %d\n", o->method, suite);
        return CLI_EXIT_USAGE;
    }
    int idt = o->side[role].id_cred_type;
    int rc;
    if (idt == EDHOC_ID_CRED_KCWT) {
        /* Named as the command spells them: --cred on initiator and
         * responder, --cred-i / --cred-r on simulate. */
        const char *sfx = o->side[role].flag_suffix;
        fprintf(stderr,
                "edhoc-cli: --id-cred%s kcwt: there is no built-in CWT; make one with "
                "keygen --type cwt and give it with --cred%s and --key%s\n",
                sfx, sfx, sfx);
        return CLI_EXIT_USAGE;
    }
    if (for_dh && suite == 2 &&
        (idt == 0 || idt == EDHOC_ID_CRED_KID || idt == EDHOC_ID_CRED_KCCS)) {
        rc = edhoc_demo_trace_cred(2, r, &side->cred, &side->key);
        side->cred_origin = "built-in RFC 9529 trace 2 CCS";
    } else if (!for_dh && suite == 0 && (idt == 0 || idt == EDHOC_ID_CRED_X5T)) {
        rc = edhoc_demo_trace_cred(1, r, &side->cred, &side->key);
        side->cred_origin = "built-in RFC 9529 trace 1 certificate";
    } else if (!for_dh && curve == EDHOC_COSE_CRV_P256 && idt != EDHOC_ID_CRED_KCCS) {
        rc = edhoc_demo_cred_293(r, &side->cred, &side->key);
        side->cred_origin = "built-in 293-byte P-256 demo certificate";
    } else {
        /* Certificates for x5t/x5chain, a CCS for kccs, else the usual kind
         * (certificates for signature keys, CCS for static DH keys). */
        enum edhoc_cred_type type = 0;
        if (idt == EDHOC_ID_CRED_X5T || idt == EDHOC_ID_CRED_X5CHAIN || idt == EDHOC_ID_CRED_X5BAG)
            type = EDHOC_CRED_X509;
        else if (idt == EDHOC_ID_CRED_KCCS)
            type = EDHOC_CRED_CCS;
        rc = edhoc_demo_cred_typed(r, curve, for_dh, type, &side->cred, &side->key);
        bool x509 = rc == 0 && side->cred.type == EDHOC_CRED_X509;
        side->cred_origin = for_dh ? (x509 ? "built-in demo certificate (static DH key)"
                                           : "built-in demo CCS (static DH)")
                                   : (x509 ? "built-in demo certificate" : "built-in demo CCS");
    }
    if (rc) {
        fprintf(stderr, "edhoc-cli: no built-in %s credential for %s of method %d suite %d: %s\n",
                for_dh ? "static DH" : "signature", initiator ? "the initiator" : "the responder",
                o->method, suite, edhoc_cred_strerror(rc));
        return CLI_EXIT_INPUT;
    }
    return 0;
}

static int load_ephemerals(const char *path, struct cli_side *side)
{
    size_t len;
    char *text = (char *)cli_read_file(path, &len);
    if (!text) {
        fprintf(stderr, "edhoc-cli: cannot read ephemeral key file %s: %s\n", path,
                strerror(errno));
        return CLI_EXIT_INPUT;
    }
    char *save = NULL;
    int line_no = 0;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        char *p = line;
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (!*p || *p == '#')
            continue;
        char *e = p + strlen(p);
        while (e > p && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            *--e = '\0';
        if (side->n_ephemerals >= CLI_MAX_ATTEMPTS) {
            fprintf(stderr, "edhoc-cli: %s: at most %d ephemeral keys\n", path, CLI_MAX_ATTEMPTS);
            free(text);
            return CLI_EXIT_INPUT;
        }
        long n = cli_hex_decode(p, side->ephemerals[side->n_ephemerals], EDHOC_CRYPTO_MAX_PRIV);
        if (n <= 0) {
            fprintf(stderr, "edhoc-cli: %s line %d: not a hex private key\n", path, line_no);
            edhoc_wipe(text, len);
            free(text);
            return CLI_EXIT_INPUT;
        }
        side->ephemeral_len[side->n_ephemerals++] = (size_t)n;
    }
    edhoc_wipe(text, len);
    free(text);
    if (side->n_ephemerals == 0) {
        fprintf(stderr, "edhoc-cli: %s: no ephemeral key in the file\n", path);
        return CLI_EXIT_INPUT;
    }
    return 0;
}

int cli_edhoc_side_setup(const struct cli_edhoc_opts *o, int role, struct cli_side *side)
{
    const struct cli_side_opts *so = &o->side[role];
    const char *who = role == CLI_SIDE_I ? "initiator" : "responder";
    char why[512] = "";
    int rc;

    memset(side, 0, sizeof *side);
    side->role = role;
    side->store = calloc(1, sizeof *side->store);
    if (!side->store) {
        fprintf(stderr, "edhoc-cli: out of memory\n");
        return CLI_EXIT_INTERNAL;
    }
    edhoc_cred_store_init(side->store);

    int suite = cli_edhoc_expected_suite(o);
    bool demo = !so->cred_path && !so->key_path;
    if (demo) {
        rc = pick_demo_cred(o, role, suite, side);
        if (rc)
            return rc;
    } else {
        if (!so->cred_path || !so->key_path) {
            /* In the spelling the command took (--cred, or --cred-i on a
             * command that sets both sides). */
            fprintf(stderr,
                    "edhoc-cli: the %s needs both --cred%s and --key%s (%s%s given alone)\n", who,
                    so->flag_suffix, so->flag_suffix, so->cred_path ? "--cred" : "--key",
                    so->flag_suffix);
            return CLI_EXIT_USAGE;
        }
        rc = edhoc_cred_load_file(&side->cred, so->cred_path, why, sizeof why);
        if (rc) {
            fprintf(stderr, "edhoc-cli: %s credential: %s\n", who,
                    why[0] ? why : edhoc_cred_strerror(rc));
            return CLI_EXIT_INPUT;
        }
        rc = edhoc_key_load_file(&side->key, so->key_path, side->cred.curve, why, sizeof why);
        if (rc) {
            fprintf(stderr, "edhoc-cli: %s key: %s\n", who, why[0] ? why : edhoc_cred_strerror(rc));
            return CLI_EXIT_INPUT;
        }
        rc = edhoc_key_check_cred(&side->key, &side->cred);
        if (rc) {
            fprintf(stderr, "edhoc-cli: %s key %s does not belong to credential %s\n", who,
                    so->key_path, so->cred_path);
            return CLI_EXIT_INPUT;
        }
        side->cred_origin = so->cred_path;
    }
    rc = edhoc_cred_check_key_type(&side->cred, o->method, role == CLI_SIDE_I, suite);
    if (rc) {
        bool for_dh = false;
        int want = edhoc_cred_auth_curve(o->method, role == CLI_SIDE_I, suite, &for_dh);
        fprintf(
            stderr,
            "edhoc-cli: the %s credential has a %s key, but method %d suite %d needs a %s %s key\n",
            who, edhoc_crypto_curve_name(side->cred.curve), o->method, suite,
            want > 0 ? edhoc_crypto_curve_name(want) : "?", for_dh ? "static DH" : "signature");
        return CLI_EXIT_INPUT;
    }

    /* --kid names any credential, a certificate too (RFC 9528 Section
     * 3.5.3: a kid may identify any authentication credential). */
    if (so->kid_len)
        edhoc_cred_set_kid(&side->cred, so->kid, so->kid_len);
    int idt = so->id_cred_type;
    if (idt == 0)
        idt = side->cred.type == EDHOC_CRED_X509 ? EDHOC_ID_CRED_X5T : EDHOC_ID_CRED_KID;
    rc = edhoc_id_cred_encode(&side->cred, (enum edhoc_id_cred_type)idt, 0, side->id_cred,
                              sizeof side->id_cred, &side->id_cred_len);
    if (rc) {
        const char *kind = side->cred.type == EDHOC_CRED_X509  ? "X.509"
                           : side->cred.type == EDHOC_CRED_CWT ? "CWT"
                                                               : "CCS";
        /* The kid option as this command spells it, like --cred's
         * (--kid, or --kid-i where a command sets both sides). */
        char kid_hint[64];
        snprintf(kid_hint, sizeof kid_hint, "it has no kid (give one with --kid%s)",
                 so->flag_suffix);
        fprintf(stderr, "edhoc-cli: %s: cannot name this %s credential by %s: %s\n", who, kind,
                cli_id_cred_type_name(idt),
                idt == EDHOC_ID_CRED_KID ? kid_hint : edhoc_cred_strerror(rc));
        return CLI_EXIT_INPUT;
    }

    for (size_t i = 0; i < o->n_trust; i++) {
        rc = edhoc_cred_store_add_file(side->store, o->trust_paths[i], why, sizeof why);
        if (rc) {
            fprintf(stderr, "edhoc-cli: --trust: %s\n", why[0] ? why : edhoc_cred_strerror(rc));
            return CLI_EXIT_INPUT;
        }
    }
    if (o->n_trust == 0 && demo)
        edhoc_demo_trust(side->store);

    if (so->ephemeral_path) {
        rc = load_ephemerals(so->ephemeral_path, side);
        if (rc)
            return rc;
    }

    struct edhoc_config *cfg = &side->cfg;
    cfg->ops = edhoc_crypto_default();
    cfg->tolerate = so->tolerate;
    cfg->emulate = so->emulate;
    cfg->method = o->method;
    cfg->accept_methods = o->accept_methods;
    if (role == CLI_SIDE_I) {
        cfg->suites = o->suites;
        cfg->n_suites = o->n_suites;
    } else if (o->n_suites_r) {
        cfg->suites = o->suites_r;
        cfg->n_suites = o->n_suites_r;
    } else {
        cfg->suites = all_suites;
        cfg->n_suites = sizeof all_suites / sizeof all_suites[0];
    }
    cfg->cred = &side->cred;
    cfg->key = &side->key;
    cfg->id_cred = side->id_cred;
    cfg->id_cred_len = side->id_cred_len;
    /* Initiator sends EAD_1 and EAD_3, responder EAD_2 and EAD_4. */
    for (int m = 1; m <= 4; m++) {
        bool mine = (m % 2 == 1) == (role == CLI_SIDE_I);
        if (mine && o->n_ead[m]) {
            cfg->ead[m] = o->ead[m];
            cfg->n_ead[m] = o->n_ead[m];
        }
    }
    cfg->ead_receive = cli_edhoc_ead_receive;
    cfg->ead_ctx = (void *)o;
    return 0;
}

int cli_edhoc_side_trust_peer(struct cli_side *side, const struct edhoc_cred *peer)
{
    const struct edhoc_cred_store *old = side->store;
    for (size_t i = 0; i < old->n_creds; i++) {
        if (edhoc_cred_equal(&old->creds[i], peer))
            return 0;
    }
    /* The first credential with a matching kid wins a lookup: the peer's
     * goes before the demo set already there, so that a kid both have
     * (a keygen --kid that a demo credential also uses) names the peer
     * the command line gave. The store is rebuilt with it first. */
    struct edhoc_cred_store *store = calloc(1, sizeof *store);
    if (!store) {
        fprintf(stderr, "edhoc-cli: out of memory\n");
        return CLI_EXIT_INTERNAL;
    }
    edhoc_cred_store_init(store);
    store->now = old->now;
    int rc = edhoc_cred_store_add_cred(store, peer);
    for (size_t i = 0; !rc && i < old->n_creds; i++)
        rc = edhoc_cred_store_add_cred(store, &old->creds[i]);
    for (size_t i = 0; !rc && i < old->n_anchors; i++)
        rc = edhoc_cred_store_add_anchor(store, &old->anchors[i]);
    if (rc) {
        free(store);
        fprintf(stderr, "edhoc-cli: trust store full\n");
        return CLI_EXIT_INTERNAL;
    }
    free(side->store);
    side->store = store;
    return 0;
}

void cli_edhoc_side_free(struct cli_side *side)
{
    edhoc_wipe(&side->key, sizeof side->key);
    edhoc_wipe(side->ephemerals, sizeof side->ephemerals);
    free(side->store);
    side->store = NULL;
}

int cli_edhoc_resolve(void *ctx, const uint8_t *id_cred, size_t id_cred_len,
                      const struct edhoc_cred **cred)
{
    struct cli_side *side = ctx;
    int rc = edhoc_cred_store_resolve(side->store, id_cred, id_cred_len, &side->resolved);
    side->resolve_error = rc;
    if (rc == 0)
        *cred = &side->resolved;
    return rc;
}

int cli_edhoc_ead_receive(void *ctx, int message, const struct edhoc_ead_item *item)
{
    const struct cli_edhoc_opts *o = ctx;
    (void)message;
    for (size_t i = 0; i < o->n_ead_accept; i++) {
        if (o->ead_accept[i] == item->label)
            return EDHOC_EAD_PROCESSED;
    }
    return EDHOC_EAD_UNRECOGNIZED;
}

int cli_exit_for_edhoc_error(int err)
{
    switch (err) {
    case EDHOC_ERR_MAC:
    case EDHOC_ERR_SIGNATURE:
    case EDHOC_ERR_DECRYPT:
    case EDHOC_ERR_UNKNOWN_CREDENTIAL:
    case EDHOC_ERR_CREDENTIAL:
    case EDHOC_CRED_ERR_UNKNOWN:
    case EDHOC_CRED_ERR_UNTRUSTED:
    case EDHOC_CRED_ERR_EXPIRED:
    case EDHOC_CRED_ERR_KEY_TYPE:
    case EDHOC_CRED_ERR_CHAIN_LOOP:
    case EDHOC_CRED_ERR_CHAIN_DEPTH:
    case EDHOC_CRED_ERR_AMBIGUOUS: return CLI_EXIT_VERIFY;
    case EDHOC_ERR_PEER_ERROR:
    case EDHOC_ERR_NO_COMMON_SUITE:
    case EDHOC_ERR_WRONG_SUITE: return CLI_EXIT_PEER_ERROR;
    default: return CLI_EXIT_FAILURE;
    }
}

int cli_oscore_conf_hkdf(int hash_alg, bool *libcoap)
{
    /* libcoap's conf names the HKDF by COSE algorithm ("direct+HKDF-SHA-256"
     * is -10) and refuses the hash id -16; there is no such value it knows
     * for SHA-384, so that one keeps the id our reader takes. */
    *libcoap = hash_alg == EDHOC_COSE_SHA256;
    return hash_alg == EDHOC_COSE_SHA256 ? -10 : hash_alg;
}

json_t *cli_oscore_json(const struct edhoc_oscore_params *p, bool secrets, long long sender_next,
                        long long recipient_next)
{
    json_t *o = json_object();
    cli_json_set(o, "master_secret",
                 secrets ? cli_json_hex_value(p->master_secret, p->master_secret_len)
                         : json_null());
    cli_json_set(o, "master_salt",
                 secrets ? cli_json_hex_value(p->master_salt, p->master_salt_len) : json_null());
    cli_json_set(o, "sender_id", cli_json_hex_value(p->sender_id, p->sender_id_len));
    cli_json_set(o, "recipient_id", cli_json_hex_value(p->recipient_id, p->recipient_id_len));
    bool libcoap;
    int hkdf = cli_oscore_conf_hkdf(p->hash_alg, &libcoap);
    cli_json_set(o, "aead_alg", json_integer(p->aead_alg));
    cli_json_set(o, "hkdf_alg", json_integer(hkdf));
    cli_json_set(o, "libcoap", json_boolean(libcoap));
    cli_json_set(o, "sender_next_seq", cli_json_int_or_null(sender_next >= 0, sender_next));
    cli_json_set(o, "recipient_next_seq",
                 cli_json_int_or_null(recipient_next >= 0, recipient_next));
    return o;
}

void cli_write_oscore_conf(FILE *f, const struct edhoc_oscore_params *p, const char *prefix)
{
    bool libcoap;
    int hkdf = cli_oscore_conf_hkdf(p->hash_alg, &libcoap);
    if (!libcoap)
        fprintf(f,
                "%s# hkdf_alg %d (HKDF with %s): libcoap has no value for it and cannot use "
                "this context; edhoc-cli reads it\n",
                prefix, hkdf, edhoc_crypto_alg_name(p->hash_alg));
    fprintf(f, "%smaster_secret,hex,\"", prefix);
    cli_hex_print(f, p->master_secret, p->master_secret_len);
    fprintf(f, "\"\n%smaster_salt,hex,\"", prefix);
    cli_hex_print(f, p->master_salt, p->master_salt_len);
    fprintf(f, "\"\n%ssender_id,hex,\"", prefix);
    cli_hex_print(f, p->sender_id, p->sender_id_len);
    fprintf(f, "\"\n%srecipient_id,hex,\"", prefix);
    cli_hex_print(f, p->recipient_id, p->recipient_id_len);
    fprintf(f, "\"\n%saead_alg,integer,%d\n%shkdf_alg,integer,%d\n%sreplay_window,integer,%d\n",
            prefix, p->aead_alg, prefix, hkdf, prefix, OSCORE_DEFAULT_REPLAY_WINDOW);
}

#define MAX_CONTEXT_FILE (64 * 1024)

/* Read and parse an OSCORE context file (libcoap's format). It holds the
 * master secret, so it gets the checks a private key file gets
 * (src/cred/keyfile.c, as OpenSSH asks of its keys): a regular file, no
 * permission for group or others, owned by the user running or root, and
 * in a directory nobody else can write (unless sticky), where another
 * file could be put in its place. The checks run on the descriptor that
 * is read. prog and option name the command line in messages ("coap",
 * "--oscore-context"). Returns 0 (the caller wipes *cfg), or
 * CLI_EXIT_INPUT after printing why and the fix. */
int cli_oscore_context_load(const char *prog, const char *option, const char *path,
                            struct oscore_config *cfg)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "edhoc-cli %s: %s %s: cannot read: %s\n", prog, option, path,
                strerror(errno));
        return CLI_EXIT_INPUT;
    }
    char why[1024];
    if (edhoc_secret_file_check(option, path, fd, "the context holds a master secret", true, why,
                                sizeof why) != 0 ||
        edhoc_secret_parents_check(option, path, "context", why, sizeof why) != 0) {
        fprintf(stderr, "edhoc-cli %s: %s\n", prog, why);
        close(fd);
        return CLI_EXIT_INPUT;
    }
    char *text = malloc(MAX_CONTEXT_FILE + 1);
    size_t len = 0;
    bool failed = text == NULL;
    while (!failed && len <= MAX_CONTEXT_FILE) {
        ssize_t got = read(fd, text + len, MAX_CONTEXT_FILE + 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            failed = true;
        if (got <= 0)
            break;
        len += (size_t)got;
    }
    int saved_errno = errno;
    close(fd);
    if (failed || len > MAX_CONTEXT_FILE) {
        fprintf(stderr, "edhoc-cli %s: %s %s: %s\n", prog, option, path,
                failed ? strerror(saved_errno) : "larger than 64 KiB: not a context file");
        if (text) {
            edhoc_wipe(text, len);
            free(text);
        }
        return CLI_EXIT_INPUT;
    }
    struct oscore_config_error err;
    memset(&err, 0, sizeof err);
    int rc = oscore_config_parse(text, len, cfg, &err);
    edhoc_wipe(text, len);
    free(text);
    if (rc) {
        if (err.line)
            fprintf(stderr, "edhoc-cli %s: %s %s:%u: %s\n", prog, option, path, err.line,
                    err.message);
        else
            fprintf(stderr, "edhoc-cli %s: %s %s: %s\n", prog, option, path, err.message);
        edhoc_wipe(cfg, sizeof *cfg);
        return CLI_EXIT_INPUT;
    }
    return 0;
}
