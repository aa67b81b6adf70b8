/* edhoc-cli keygen: create a credential (CCS, CWT or X.509) and its private key
 * (the options and their checks, the files, the report; the key and the
 * credential are made in keygen_cred.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "edhoc/cred.h"
#include "edhoc/crypto.h"
#include "commands.h"
#include "output/json_out.h"
#include "keygen_cred.h"
#include "path_check.h"
#include "util.h"

enum {
    OPT_TYPE = 1,
    OPT_CURVE,
    OPT_SUITE,
    OPT_USE,
    OPT_KID,
    OPT_SUBJECT,
    OPT_CA_CERT,
    OPT_CA_KEY,
    OPT_CA,
    OPT_NO_EXT,
    OPT_DAYS,
    OPT_NOT_BEFORE,
    OPT_NOT_AFTER,
    OPT_ISSUER_KEY,
    OPT_ISSUER_KID,
    OPT_ISSUER_NAME,
    OPT_OUT_CRED,
    OPT_OUT_KEY,
    OPT_HEX,
    OPT_FORCE,
    OPT_JSON,
};

static const struct cli_opt key_opts[] = {
    {OPT_TYPE, "type", "ccs|x509|cwt",
     "credential type (required): a CCS, an X.509 certificate, or a CWT (a CCS\n"
     "signed by an issuer, RFC 8392)"},
    {OPT_CURVE, "curve", "CURVE", "P-256, P-384, Ed25519, Ed448, X25519 or X448"},
    {OPT_SUITE, "suite", "N",
     "instead of --curve: the curve cipher suite N needs for signing or for static\n"
     "Diffie-Hellman, as --use says"},
    {OPT_USE, "use", "sign|dh", "with --suite: sign (methods 0 to 2) or dh (methods 1 to 3)"},
    {OPT_KID, "kid", "HEX",
     "key identifier. CCS and CWT: the COSE_Key kid (default: one random byte\n"
     "that EDHOC sends as a one-byte integer, never the kid of a built-in demo\n"
     "credential, which would collide with it). Certificate: written as an\n"
     "\"EDHOC-kid: HEX\" line before the PEM block, which --cred and --trust read\n"
     "(default: none)"},
    {OPT_SUBJECT, "subject", "NAME", "CCS 'sub' claim / certificate common name"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt x509_opts[] = {
    {OPT_CA_CERT, "ca-cert", "FILE",
     "sign the certificate with this CA (with --ca-key; default: self-signed).\n"
     "X25519 and X448 keys cannot sign, so their certificates always need a CA"},
    {OPT_CA_KEY, "ca-key", "FILE",
     "the CA's private key (refused when group or others can read it)"},
    {OPT_CA, "ca", NULL, "make a CA certificate, to sign others with"},
    {OPT_NO_EXT, "no-extensions", NULL,
     "a leaf certificate without X.509v3 extensions (smallest on the wire)"},
    {OPT_DAYS, "days", "N",
     "validity from now, in days (1..36500, default 365; also\n"
     "for --type cwt)"},
    {OPT_NOT_BEFORE, "not-before", "DATE", "start of validity, YYYY-MM-DD[THH:MM:SSZ] (UTC)"},
    {OPT_NOT_AFTER, "not-after", "DATE", "end of validity, YYYY-MM-DD[THH:MM:SSZ] (UTC)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt cwt_opts[] = {
    {OPT_ISSUER_KEY, "issuer-key", "FILE",
     "the issuer's private key (required for --type cwt; a keygen-made key file,\n"
     "Ed25519, Ed448, P-256 or P-384), which signs the CWT; peers verify it with\n"
     "the issuer's credential in their --trust"},
    {OPT_ISSUER_KID, "issuer-kid", "HEX",
     "kid of the issuer key, put in the CWT's protected header: peers look the\n"
     "issuer up by it (default: none, every trusted key of the curve is tried)"},
    {OPT_ISSUER_NAME, "issuer", "NAME", "the CWT 'iss' claim (default: none)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt output_opts[] = {
    {OPT_OUT_CRED, "out-cred", "FILE",
     "credential (required; - for standard output, the report then goes to\n"
     "standard error): a CCS or CWT as CBOR (or --hex), certificates as PEM,\n"
     "leaf first, then intermediate CAs"},
    {OPT_OUT_KEY, "out-key", "FILE",
     "private key (required), PKCS#8 PEM, in a new file of mode 0600"},
    {OPT_HEX, "hex", NULL, "write a CCS or CWT as hex text instead of binary CBOR"},
    {OPT_FORCE, "force", NULL, "replace existing output files"},
    {OPT_JSON, "json", NULL,
     "the report as one JSON object on standard output (docs/json/keygen.schema.json)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group keygen_groups[] = {
    {"Key and credential", key_opts},
    {"Certificates (--type x509)", x509_opts},
    {"CWT (--type cwt; validity with --days, --not-before, --not-after)", cwt_opts},
    {"Output", output_opts},
    {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_keygen = {
    .name = "keygen",
    .synopsis = "--type ccs|x509|cwt (--curve CURVE | --suite N --use sign|dh)\n"
                "                        --out-cred FILE --out-key FILE [OPTIONS]",
    .description = "Creates a key pair and a credential for it: a CCS (CWT Claims Set with a\n"
                   "COSE_Key, RFC 8392), an X.509 certificate, or a CWT (the claims set signed\n"
                   "by an issuer key as a COSE_Sign1). The private key is written as\n"
                   "PKCS#8 PEM into a new file of mode 0600 (never through a symbolic link), and\n"
                   "not into a directory others can write, where the key would be refused when\n"
                   "loaded.",
    .groups = keygen_groups,
    .epilogue = "Exit codes: 0 ok; 1 failure; 2 bad command line; 3 unusable input file or\n"
                "output directory (e.g. a CA key readable by others).",
};

static int parse_curve(const char *s)
{
    static const struct {
        const char *name;
        int curve;
    } names[] = {
        {"P-256", EDHOC_COSE_CRV_P256},      {"P256", EDHOC_COSE_CRV_P256},
        {"P-384", EDHOC_COSE_CRV_P384},      {"P384", EDHOC_COSE_CRV_P384},
        {"X25519", EDHOC_COSE_CRV_X25519},   {"X448", EDHOC_COSE_CRV_X448},
        {"Ed25519", EDHOC_COSE_CRV_ED25519}, {"Ed448", EDHOC_COSE_CRV_ED448},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(s, names[i].name))
            return names[i].curve;
    return 0;
}

/* "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM:SSZ" as UTC. */
static bool parse_date(const char *s, int64_t *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(s, "%Y-%m-%d", &tm);
    if (!end)
        return false;
    if (*end == 'T' || *end == ' ') {
        end = strptime(end + 1, "%H:%M:%S", &tm);
        if (!end)
            return false;
        if (*end == 'Z')
            end++;
    }
    if (*end != '\0')
        return false;
    *out = (int64_t)timegm(&tm);
    return true;
}

static int write_public_file(const char *path, const void *data, size_t len, bool force)
{
    if (!strcmp(path, "-")) {
        bool ok = fwrite(data, 1, len, stdout) == len && fflush(stdout) == 0;
        if (!ok)
            fprintf(stderr, "edhoc-cli keygen: standard output: write error\n");
        return ok ? 0 : -1;
    }
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        fprintf(stderr, "edhoc-cli keygen: %s: cannot create: %s%s\n", path, strerror(errno),
                errno == EEXIST ? " (use --force to replace it)" : "");
        return -1;
    }
    bool ok = write(fd, data, len) == (ssize_t)len;
    if (close(fd) != 0)
        ok = false;
    if (!ok)
        fprintf(stderr, "edhoc-cli keygen: %s: write error\n", path);
    return ok ? 0 : -1;
}

/* A private key written where others can write could be replaced, and
 * every loader refuses it there (the rules of src/cred/keyfile.c, as
 * OpenSSH has them): say so before a key is made. Returns 0, or -1 after
 * saying why. */
static int key_directory_check(const char *key_path)
{
    /* The loader's own rule (src/cred/keyfile.c), so a key made here is
     * one the loader takes. */
    char why[1024];
    if (edhoc_secret_parents_check("--out-key", key_path, "key", why, sizeof why) == 0)
        return 0;
    fprintf(stderr, "edhoc-cli keygen: %s; the key would be refused when loaded\n", why);
    return -1;
}

int cmd_keygen(int argc, char **argv)
{
    /* The private key it makes. */
    cli_no_core_dumps();
    static const char *const types[] = {"ccs", "x509", "cwt", NULL};
    static const char *const uses[] = {"sign", "dh", NULL};
    const char *subject = NULL, *ca_cert = NULL, *ca_key = NULL;
    const char *out_cred = NULL, *out_key = NULL, *kid_hex = NULL;
    const char *not_before_s = NULL, *not_after_s = NULL;
    const char *issuer_key_path = NULL, *issuer_kid_hex = NULL, *issuer_name = NULL;
    int curve = 0, type = -1, use = -1;
    long suite = -1, days = 365;
    bool is_ca = false, hex = false, force = false, no_ext = false, json = false;
    bool days_given = false, suite_given = false;

    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_keygen, argc, argv);
    for (enum cli_opt_status st; (st = cli_opt_next(&p)) != CLI_OPT_DONE;) {
        if (st == CLI_OPT_EXIT)
            return p.exit_code;
        if (st == CLI_OPT_POSITIONAL)
            return cli_opt_error(&p, "unexpected argument '%s' (keygen takes options only)",
                                 p.value);
        int bad = 0;
        switch (p.opt->id) {
        case OPT_TYPE: bad = cli_opt_choice(&p, types, &type); break;
        case OPT_CURVE:
            curve = parse_curve(p.value);
            if (!curve)
                return cli_opt_error(&p,
                                     "--curve: unknown curve '%s' (P-256, P-384, Ed25519, "
                                     "Ed448, X25519, X448)",
                                     p.value);
            break;
        case OPT_SUITE:
            bad = cli_opt_long(&p, -65536, 65535, &suite);
            suite_given = true;
            break;
        case OPT_USE: bad = cli_opt_choice(&p, uses, &use); break;
        case OPT_KID: kid_hex = p.value; break;
        case OPT_SUBJECT: subject = p.value; break;
        case OPT_CA_CERT: ca_cert = p.value; break;
        case OPT_CA_KEY: ca_key = p.value; break;
        case OPT_CA: is_ca = true; break;
        case OPT_NO_EXT: no_ext = true; break;
        case OPT_DAYS:
            bad = cli_opt_long(&p, 1, 36500, &days);
            days_given = true;
            break;
        case OPT_NOT_BEFORE: not_before_s = p.value; break;
        case OPT_NOT_AFTER: not_after_s = p.value; break;
        case OPT_ISSUER_KEY: issuer_key_path = p.value; break;
        case OPT_ISSUER_KID: issuer_kid_hex = p.value; break;
        case OPT_ISSUER_NAME: issuer_name = p.value; break;
        case OPT_OUT_CRED: out_cred = p.value; break;
        case OPT_OUT_KEY: out_key = p.value; break;
        case OPT_HEX: hex = true; break;
        case OPT_FORCE: force = true; break;
        case OPT_JSON: json = true; break;
        }
        if (bad)
            return CLI_EXIT_USAGE;
    }

    if (type < 0)
        return cli_opt_usage_error(&cli_spec_keygen,
                                   "--type ccs, --type x509 or --type cwt is required");
    bool x509 = type == 1, cwt = type == 2;
    if (suite_given) {
        if (curve)
            return cli_opt_error(&p, "give --curve or --suite/--use, not both");
        if (use < 0)
            return cli_opt_error(&p, "--suite needs --use sign or --use dh");
        /* Method 0 makes both sides sign, method 3 makes both use DH. */
        curve = edhoc_cred_auth_curve(use == 1 ? 3 : 0, true, (int)suite, NULL);
        if (curve < 0)
            return cli_opt_error(&p, "--suite: unknown cipher suite %ld (0-6, 24, 25)", suite);
    } else if (use >= 0) {
        return cli_opt_error(&p, "--use goes with --suite");
    }
    if (!curve)
        return cli_opt_usage_error(&cli_spec_keygen, "--curve (or --suite and --use) is required");
    if (!out_cred || !out_key)
        return cli_opt_usage_error(&cli_spec_keygen, "--out-cred and --out-key are required");
    if (cwt && !issuer_key_path)
        return cli_opt_error(&p, "--type cwt needs --issuer-key FILE: a CWT is signed by its "
                                 "issuer");
    if (!cwt && (issuer_key_path || issuer_kid_hex || issuer_name))
        return cli_opt_error(&p, "--issuer-key, --issuer-kid and --issuer are for --type cwt");
    if (x509 && hex)
        return cli_opt_error(&p,
                             "--hex writes a CCS or CWT as hex; certificates are written as PEM");
    if (no_ext && is_ca)
        return cli_opt_error(&p, "a CA certificate needs its extensions");
    if (days_given && not_after_s)
        return cli_opt_error(&p, "give --days or --not-after, not both");
    if (json && !strcmp(out_cred, "-"))
        return cli_opt_error(&p, "--json and --out-cred -: both would go to standard output");
    if (!x509 && (ca_cert || ca_key || is_ca || no_ext))
        return cli_opt_error(&p, "--ca, --ca-cert, --ca-key and --no-extensions are for --type "
                                 "x509");
    if (!x509 && !cwt && (days_given || not_before_s || not_after_s))
        return cli_opt_error(&p, "the validity options (--days, --not-before, --not-after) are "
                                 "for --type x509 and --type cwt: a CCS has no validity");
    if (!ca_cert != !ca_key)
        return cli_opt_error(&p, "--ca-cert and --ca-key go together");
    bool dh_only = curve == EDHOC_COSE_CRV_X25519 || curve == EDHOC_COSE_CRV_X448;
    if (x509 && dh_only && !ca_cert) {
        fprintf(stderr,
                "edhoc-cli keygen: an %s key cannot sign, so it cannot self-sign its "
                "certificate: give --ca-cert and --ca-key of a CA to sign it\n",
                edhoc_crypto_curve_name(curve));
        return CLI_EXIT_USAGE;
    }
    if (x509 && dh_only && is_ca) {
        fprintf(stderr, "edhoc-cli keygen: an %s key cannot sign, so it cannot be a CA\n",
                edhoc_crypto_curve_name(curve));
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(out_key, "-")) {
        fprintf(stderr, "edhoc-cli keygen: --out-key -: a private key goes to a file created "
                        "with mode 0600, never to standard output\n");
        return CLI_EXIT_USAGE;
    }
    bool to_stdout = !strcmp(out_cred, "-");
    if (!force && ((!to_stdout && access(out_cred, F_OK) == 0) || access(out_key, F_OK) == 0)) {
        fprintf(stderr, "edhoc-cli keygen: %s exists (use --force to replace it)\n",
                access(out_cred, F_OK) == 0 ? out_cred : out_key);
        return CLI_EXIT_USAGE;
    }
    if (key_directory_check(out_key))
        return CLI_EXIT_INPUT;

    uint8_t kid[EDHOC_CRED_MAX_KID], issuer_kid[EDHOC_CRED_MAX_KID];
    long kid_len = -1, issuer_kid_len = 0;
    if (kid_hex) {
        kid_len = cli_hex_decode(kid_hex, kid, sizeof kid);
        if (kid_len < 1) {
            fprintf(stderr, "edhoc-cli keygen: --kid needs 1 to %d bytes of hex\n",
                    EDHOC_CRED_MAX_KID);
            return CLI_EXIT_USAGE;
        }
    }
    if (issuer_kid_hex) {
        issuer_kid_len = cli_hex_decode(issuer_kid_hex, issuer_kid, sizeof issuer_kid);
        if (issuer_kid_len < 1) {
            fprintf(stderr, "edhoc-cli keygen: --issuer-kid needs 1 to %d bytes of hex\n",
                    EDHOC_CRED_MAX_KID);
            return CLI_EXIT_USAGE;
        }
    }

    int64_t now = (int64_t)time(NULL);
    int64_t not_before = now - 60, not_after = now + (int64_t)days * 86400;
    if ((not_before_s && !parse_date(not_before_s, &not_before)) ||
        (not_after_s && !parse_date(not_after_s, &not_after)) || not_after <= not_before) {
        fprintf(stderr, "edhoc-cli keygen: bad validity (dates as YYYY-MM-DD or "
                        "YYYY-MM-DDTHH:MM:SSZ, not-after later than not-before)\n");
        return CLI_EXIT_USAGE;
    }

    int rc = CLI_EXIT_FAILURE;
    char why[512] = "";
    struct keygen_made made;
    if (keygen_made_init(&made))
        goto out;
    if (kid_len > 0) {
        memcpy(made.kid, kid, (size_t)kid_len);
        made.kid_len = kid_len;
    }
    struct keygen_params kp = {
        .curve = curve,
        .x509 = x509,
        .cwt = cwt,
        .hex = hex,
        .is_ca = is_ca,
        .no_ext = no_ext,
        .subject = subject,
        .ca_cert = ca_cert,
        .ca_key = ca_key,
        .issuer_key_path = issuer_key_path,
        .issuer_name = issuer_name,
        .not_before = not_before,
        .not_after = not_after,
        .now = now,
        .issuer_kid = issuer_kid,
        .issuer_kid_len = (size_t)issuer_kid_len,
    };
    rc = keygen_make(&kp, &made, why, sizeof why);
    if (rc) {
        if (why[0])
            fprintf(stderr, "edhoc-cli keygen: %s\n", why);
        goto out;
    }
    rc = CLI_EXIT_FAILURE;
    /* The kid chosen, when none was given. */
    kid_len = made.kid_len;
    memcpy(kid, made.kid, sizeof kid);
    const struct edhoc_cred *cred = made.cred;
    const void *cred_out = made.out;
    size_t cred_out_len = made.out_len;

    if (edhoc_key_write_file(&made.key, out_key, force, why, sizeof why) != 0) {
        fprintf(stderr, "edhoc-cli keygen: %s\n", why);
        goto out;
    }
    if (write_public_file(out_cred, cred_out, cred_out_len, force) != 0) {
        unlink(out_key); /* a key without its credential is of no use */
        goto out;
    }

    const char *usage = dh_only ? "static_dh"
                        : (curve == EDHOC_COSE_CRV_ED25519 || curve == EDHOC_COSE_CRV_ED448)
                            ? "signature"
                            : "signature_or_static_dh";
    const char *subject_used =
        subject ? subject : (x509 && is_ca ? "edhoc-cli CA" : "edhoc-cli device");
    const char *format = x509  ? "pem"
                         : cwt ? (hex ? "cwt_hex" : "cwt_cbor")
                               : (hex ? "ccs_hex" : "ccs_cbor");
    const char *type_word = x509 ? "x509" : cwt ? "cwt" : "ccs";
    char nb[32] = "", na[32] = "";
    if (x509 || cwt) {
        time_t tnb = (time_t)not_before, tna = (time_t)not_after;
        strftime(nb, sizeof nb, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tnb));
        strftime(na, sizeof na, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tna));
    }
    if (json) {
        json_t *root = json_object();
        cli_json_set(root, "type", json_string(type_word));
        cli_json_set(root, "ca", json_boolean(x509 && is_ca));
        cli_json_set(root, "curve", json_string(edhoc_crypto_curve_name(curve)));
        cli_json_set(root, "key_use", json_string(usage));
        cli_json_set(root, "kid_hex",
                     kid_len > 0 ? cli_json_hex_value(kid, (size_t)kid_len) : json_null());
        cli_json_set(root, "subject", json_string(subject_used));
        cli_json_set(root, "self_signed", x509 ? json_boolean(!ca_cert) : json_null());
        cli_json_set(root, "issuer_file",
                     x509  ? cli_json_string_or_null(ca_cert)
                     : cwt ? json_string(issuer_key_path)
                           : json_null());
        cli_json_set(root, "issuer_kid_hex",
                     issuer_kid_len > 0 ? cli_json_hex_value(issuer_kid, (size_t)issuer_kid_len)
                                        : json_null());
        cli_json_set(root, "not_before", x509 || cwt ? json_string(nb) : json_null());
        cli_json_set(root, "not_after", x509 || cwt ? json_string(na) : json_null());
        cli_json_set(root, "certificate_bytes",
                     cli_json_int_or_null(x509, x509 ? (long long)cred->cert_lens[0] : 0));
        cli_json_set(root, "intermediate_certificates",
                     cli_json_int_or_null(x509, x509 ? (long long)cred->n_certs - 1 : 0));
        cli_json_set(root, "public_key_hex", cli_json_hex_value(cred->pub, cred->pub_len));
        cli_json_set(root, "credential_file", json_string(out_cred));
        cli_json_set(root, "credential_format", json_string(format));
        cli_json_set(root, "credential_bytes", json_integer((json_int_t)cred_out_len));
        cli_json_set(root, "key_file", json_string(out_key));
        if (cli_json_print(root, stdout)) {
            fprintf(stderr, "edhoc-cli keygen: standard output: write error\n");
            goto out;
        }
        rc = CLI_EXIT_OK;
        goto out;
    }

    /* With --out-cred - the credential is standard output: the report
     * goes to standard error. */
    FILE *report = to_stdout ? stderr : stdout;
    fprintf(report, "type:        %s%s\n",
            x509  ? "X.509 certificate"
            : cwt ? "CWT (signed claims set)"
                  : "CCS (CWT Claims Set)",
            x509 ? (is_ca ? " (CA)" : "") : "");
    fprintf(report, "curve:       %s (%s)\n", edhoc_crypto_curve_name(curve),
            dh_only ? "static Diffie-Hellman"
            : (curve == EDHOC_COSE_CRV_ED25519 || curve == EDHOC_COSE_CRV_ED448)
                ? "signature"
                : "signature or static Diffie-Hellman");
    if (kid_len > 0) {
        fprintf(report, "kid:         ");
        cli_hex_print(report, kid, (size_t)kid_len);
        fprintf(report, "\n");
    }
    fprintf(report, "subject:     %s\n", subject_used);
    if (cwt) {
        fprintf(report, "issuer:      %s", issuer_key_path);
        if (issuer_kid_len > 0) {
            fprintf(report, " (kid ");
            cli_hex_print(report, issuer_kid, (size_t)issuer_kid_len);
            fprintf(report, ")");
        }
        fprintf(report, "\nvalidity:    %s .. %s\n", nb, na);
    }
    if (x509) {
        fprintf(report, "issuer:      %s\n", ca_cert ? ca_cert : "self-signed");
        fprintf(report, "validity:    %s .. %s\n", nb, na);
        fprintf(report, "certificate: %zu bytes DER", cred->cert_lens[0]);
        if (cred->n_certs > 1)
            fprintf(report, " (+%zu intermediate certificate%s in the file)", cred->n_certs - 1,
                    cred->n_certs > 2 ? "s" : "");
        fprintf(report, "\n");
    }
    fprintf(report, "public key:  ");
    cli_hex_print(report, cred->pub, cred->pub_len);
    fprintf(report, "\n");
    fprintf(report, "wrote %s (%s, %zu bytes)\n", out_cred,
            x509  ? "PEM"
            : cwt ? (hex ? "CWT as hex" : "CWT as CBOR")
                  : (hex ? "CCS as hex" : "CCS as CBOR"),
            cred_out_len);
    fprintf(report, "wrote %s (PKCS#8 PEM private key, mode 0600)\n", out_key);
    rc = CLI_EXIT_OK;
out:
    keygen_made_free(&made);
    return rc;
}
