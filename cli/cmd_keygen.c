/* edhoc-cli keygen: create a credential (CCS or X.509) and its private key. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "edhoc/cred.h"
#include "commands.h"
#include "util.h"

static void keygen_usage(FILE *out)
{
    fprintf(out,
        "usage: edhoc-cli keygen --type ccs|x509 (--curve CURVE | --suite N --use sign|dh)\n"
        "                        --out-cred FILE --out-key FILE [options]\n"
        "\n"
        "Creates a key pair and a credential for it: a CCS (CWT Claims Set with a\n"
        "COSE_Key, RFC 8392) or an X.509 certificate. The private key is written as\n"
        "PKCS#8 PEM with mode 0600.\n"
        "\n"
        "  --type ccs|x509        credential type\n"
        "  --curve CURVE          P-256, P-384, Ed25519, Ed448, X25519 or X448\n"
        "  --suite N --use U      the curve a cipher suite needs for signing (sign)\n"
        "                         or for static Diffie-Hellman (dh)\n"
        "  --kid HEX              CCS key identifier (default: one random byte that\n"
        "                         EDHOC sends as a one-byte integer, never the kid of a\n"
        "                         built-in demo credential, which would collide with it)\n"
        "  --subject NAME         CCS 'sub' claim / certificate CN\n"
        "  --ca-cert FILE --ca-key FILE\n"
        "                         sign the certificate with this CA (default:\n"
        "                         self-signed). X25519 and X448 keys cannot sign, so\n"
        "                         their certificates always need a CA.\n"
        "  --ca                   make a CA certificate (to sign others)\n"
        "  --no-extensions        a leaf certificate without X.509v3 extensions\n"
        "                         (smallest size on the wire)\n"
        "  --days N               validity from now (default 365)\n"
        "  --not-before DATE --not-after DATE\n"
        "                         explicit validity, YYYY-MM-DD[THH:MM:SSZ] (UTC)\n"
        "  --out-cred FILE        credential (- for standard output; the report then goes to\n"
        "                         standard error): CCS as CBOR (or --hex), certificate(s)\n"
        "                         as PEM, leaf first, then intermediate CAs\n"
        "  --out-key FILE         private key, PKCS#8 PEM, mode 0600\n"
        "  --hex                  write a CCS as hex text instead of binary CBOR\n"
        "  --force                replace existing output files\n"
        "\n"
        "Exit codes: 0 ok, 2 usage, 3 unusable input file (e.g. a CA key readable\n"
        "by others), 1 failure.\n");
}

static int parse_curve(const char *s)
{
    static const struct { const char *name; int curve; } names[] = {
        {"P-256", EDHOC_COSE_CRV_P256}, {"P256", EDHOC_COSE_CRV_P256},
        {"P-384", EDHOC_COSE_CRV_P384}, {"P384", EDHOC_COSE_CRV_P384},
        {"X25519", EDHOC_COSE_CRV_X25519}, {"X448", EDHOC_COSE_CRV_X448},
        {"Ed25519", EDHOC_COSE_CRV_ED25519}, {"Ed448", EDHOC_COSE_CRV_ED448},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcasecmp(s, names[i].name))
            return names[i].curve;
    return 0;
}

static const char *curve_name(int curve)
{
    switch (curve) {
    case EDHOC_COSE_CRV_P256: return "P-256";
    case EDHOC_COSE_CRV_P384: return "P-384";
    case EDHOC_COSE_CRV_X25519: return "X25519";
    case EDHOC_COSE_CRV_X448: return "X448";
    case EDHOC_COSE_CRV_ED25519: return "Ed25519";
    case EDHOC_COSE_CRV_ED448: return "Ed448";
    default: return "?";
    }
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

int cmd_keygen(int argc, char **argv)
{
    enum { OPT_TYPE = 1, OPT_CURVE, OPT_SUITE, OPT_USE, OPT_KID, OPT_SUBJECT, OPT_CA_CERT,
           OPT_CA_KEY, OPT_CA, OPT_DAYS, OPT_NOT_BEFORE, OPT_NOT_AFTER, OPT_OUT_CRED,
           OPT_OUT_KEY, OPT_HEX, OPT_FORCE, OPT_NO_EXT, OPT_HELP };
    static const struct option opts[] = {
        {"type", required_argument, NULL, OPT_TYPE},
        {"curve", required_argument, NULL, OPT_CURVE},
        {"suite", required_argument, NULL, OPT_SUITE},
        {"use", required_argument, NULL, OPT_USE},
        {"kid", required_argument, NULL, OPT_KID},
        {"subject", required_argument, NULL, OPT_SUBJECT},
        {"ca-cert", required_argument, NULL, OPT_CA_CERT},
        {"ca-key", required_argument, NULL, OPT_CA_KEY},
        {"ca", no_argument, NULL, OPT_CA},
        {"days", required_argument, NULL, OPT_DAYS},
        {"not-before", required_argument, NULL, OPT_NOT_BEFORE},
        {"not-after", required_argument, NULL, OPT_NOT_AFTER},
        {"out-cred", required_argument, NULL, OPT_OUT_CRED},
        {"out-key", required_argument, NULL, OPT_OUT_KEY},
        {"hex", no_argument, NULL, OPT_HEX},
        {"force", no_argument, NULL, OPT_FORCE},
        {"no-extensions", no_argument, NULL, OPT_NO_EXT},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    const char *type = NULL, *use = NULL, *subject = NULL, *ca_cert = NULL, *ca_key = NULL;
    const char *out_cred = NULL, *out_key = NULL, *kid_hex = NULL;
    const char *not_before_s = NULL, *not_after_s = NULL;
    int curve = 0, suite = -1;
    long days = 365;
    bool is_ca = false, hex = false, force = false, no_ext = false;

    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case OPT_TYPE: type = optarg; break;
        case OPT_CURVE:
            curve = parse_curve(optarg);
            if (!curve) {
                fprintf(stderr, "edhoc-cli keygen: unknown curve '%s' (P-256, P-384, Ed25519, "
                                "Ed448, X25519, X448)\n", optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case OPT_SUITE: {
            char *end;
            suite = (int)strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0') {
                fprintf(stderr, "edhoc-cli keygen: --suite needs a number\n");
                return CLI_EXIT_USAGE;
            }
            break;
        }
        case OPT_USE: use = optarg; break;
        case OPT_KID: kid_hex = optarg; break;
        case OPT_SUBJECT: subject = optarg; break;
        case OPT_CA_CERT: ca_cert = optarg; break;
        case OPT_CA_KEY: ca_key = optarg; break;
        case OPT_CA: is_ca = true; break;
        case OPT_DAYS: {
            char *end;
            days = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || days < 1 || days > 36500) {
                fprintf(stderr, "edhoc-cli keygen: --days needs a number of days (1..36500)\n");
                return CLI_EXIT_USAGE;
            }
            break;
        }
        case OPT_NOT_BEFORE: not_before_s = optarg; break;
        case OPT_NOT_AFTER: not_after_s = optarg; break;
        case OPT_OUT_CRED: out_cred = optarg; break;
        case OPT_OUT_KEY: out_key = optarg; break;
        case OPT_HEX: hex = true; break;
        case OPT_FORCE: force = true; break;
        case OPT_NO_EXT: no_ext = true; break;
        case OPT_HELP: keygen_usage(stdout); return CLI_EXIT_OK;
        default:
            fprintf(stderr, "edhoc-cli keygen: unknown or incomplete option '%s'\n",
                    argv[optind - 1]);
            keygen_usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "edhoc-cli keygen: unexpected argument '%s'\n", argv[optind]);
        return CLI_EXIT_USAGE;
    }

    bool x509;
    if (type && !strcmp(type, "ccs")) {
        x509 = false;
    } else if (type && !strcmp(type, "x509")) {
        x509 = true;
    } else {
        fprintf(stderr, "edhoc-cli keygen: --type ccs or --type x509 is required\n");
        return CLI_EXIT_USAGE;
    }
    if (suite >= 0) {
        if (curve) {
            fprintf(stderr, "edhoc-cli keygen: give --curve or --suite/--use, not both\n");
            return CLI_EXIT_USAGE;
        }
        if (!use || (strcmp(use, "sign") && strcmp(use, "dh"))) {
            fprintf(stderr, "edhoc-cli keygen: --suite needs --use sign or --use dh\n");
            return CLI_EXIT_USAGE;
        }
        /* Method 0 makes both sides sign, method 3 makes both use DH. */
        curve = edhoc_cred_auth_curve(strcmp(use, "sign") ? 3 : 0, true, suite, NULL);
        if (curve < 0) {
            fprintf(stderr, "edhoc-cli keygen: unknown cipher suite %d (0-6, 24, 25)\n", suite);
            return CLI_EXIT_USAGE;
        }
    } else if (use) {
        fprintf(stderr, "edhoc-cli keygen: --use goes with --suite\n");
        return CLI_EXIT_USAGE;
    }
    if (!curve) {
        fprintf(stderr, "edhoc-cli keygen: --curve (or --suite and --use) is required\n");
        return CLI_EXIT_USAGE;
    }
    if (!out_cred || !out_key) {
        fprintf(stderr, "edhoc-cli keygen: --out-cred and --out-key are required\n");
        return CLI_EXIT_USAGE;
    }
    if (x509 && kid_hex) {
        fprintf(stderr, "edhoc-cli keygen: a certificate has no place for a kid; X.509 peers "
                        "are named by x5t or x5chain (--kid is for --type ccs)\n");
        return CLI_EXIT_USAGE;
    }
    if (no_ext && is_ca) {
        fprintf(stderr, "edhoc-cli keygen: a CA certificate needs its extensions\n");
        return CLI_EXIT_USAGE;
    }
    if (!x509 && (ca_cert || ca_key || is_ca || no_ext || not_before_s || not_after_s)) {
        fprintf(stderr, "edhoc-cli keygen: --ca, --ca-cert, --ca-key and validity options "
                        "are for --type x509\n");
        return CLI_EXIT_USAGE;
    }
    if (!ca_cert != !ca_key) {
        fprintf(stderr, "edhoc-cli keygen: --ca-cert and --ca-key go together\n");
        return CLI_EXIT_USAGE;
    }
    bool dh_only = curve == EDHOC_COSE_CRV_X25519 || curve == EDHOC_COSE_CRV_X448;
    if (x509 && dh_only && !ca_cert) {
        fprintf(stderr, "edhoc-cli keygen: an %s key cannot sign, so it cannot self-sign its "
                        "certificate: give --ca-cert and --ca-key of a CA to sign it\n",
                curve_name(curve));
        return CLI_EXIT_USAGE;
    }
    if (x509 && dh_only && is_ca) {
        fprintf(stderr, "edhoc-cli keygen: an %s key cannot sign, so it cannot be a CA\n",
                curve_name(curve));
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

    uint8_t kid[EDHOC_CRED_MAX_KID];
    long kid_len = -1;
    if (kid_hex) {
        kid_len = cli_hex_decode(kid_hex, kid, sizeof kid);
        if (kid_len < 1) {
            fprintf(stderr, "edhoc-cli keygen: --kid needs 1 to %d bytes of hex\n",
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
    struct edhoc_key key, issuer_key;
    struct edhoc_cred *cred = calloc(1, sizeof *cred);
    struct edhoc_cred *issuer = calloc(1, sizeof *issuer);
    char *text = malloc(4 * EDHOC_CRED_MAX_DATA);
    memset(&key, 0, sizeof key);
    memset(&issuer_key, 0, sizeof issuer_key);
    if (!cred || !issuer || !text)
        goto out;

    if (ca_cert) {
        int e = edhoc_cred_load_file(issuer, ca_cert, why, sizeof why);
        if (e == 0 && issuer->type != EDHOC_CRED_X509) {
            e = EDHOC_CRED_ERR_FORMAT;
            snprintf(why, sizeof why, "%s: not an X.509 certificate", ca_cert);
        }
        if (e == 0)
            e = edhoc_key_load_file(&issuer_key, ca_key, issuer->curve, why, sizeof why);
        if (e == 0 && edhoc_key_check_cred(&issuer_key, issuer) != 0) {
            e = EDHOC_CRED_ERR_KEY_TYPE;
            snprintf(why, sizeof why, "%s is not the private key of %s", ca_key, ca_cert);
        }
        if (e != 0) {
            fprintf(stderr, "edhoc-cli keygen: %s\n", why);
            rc = CLI_EXIT_INPUT;
            goto out;
        }
    }

    if (edhoc_key_generate(&key, curve) != 0) {
        fprintf(stderr, "edhoc-cli keygen: key generation failed\n");
        goto out;
    }
    if (kid_len < 0) {
        /* One byte that EDHOC can send as a one-byte CBOR integer
         * (0x00..0x17 and 0x20..0x37), none of the built-in demo
         * credentials' kids (kid collisions): the demo trust is loaded
         * first, so a kid it holds would name the demo credential, and a
         * handshake with the new one would fail (MAC_3 verification). */
        uint8_t demo[64], free_kids[48];
        size_t n_demo = edhoc_demo_kids(demo, sizeof demo), n_free = 0;
        if (n_demo == 0 || n_demo > sizeof demo) {
            fprintf(stderr, "edhoc-cli keygen: cannot list the demo credentials' kids\n");
            goto out;
        }
        for (unsigned v = 0; v < 0x38; v++) {
            if (v >= 0x18 && v < 0x20)
                continue;
            if (!memchr(demo, (int)v, n_demo))
                free_kids[n_free++] = (uint8_t)v;
        }
        uint8_t r = 0;
        if (n_free == 0) {
            fprintf(stderr, "edhoc-cli keygen: every one-byte kid is a demo credential's: "
                            "give --kid\n");
            goto out;
        }
        if (getrandom(&r, 1, 0) != 1) {
            fprintf(stderr, "edhoc-cli keygen: no random bytes for the kid\n");
            goto out;
        }
        kid[0] = free_kids[r % n_free]; /* the slight bias does not matter */
        kid_len = 1;
    }

    int e;
    if (x509) {
        struct edhoc_x509_params p = {
            .subject_cn = subject ? subject : (is_ca ? "edhoc-cli CA" : "edhoc-cli device"),
            .not_before = not_before,
            .not_after = not_after,
            .is_ca = is_ca,
            .issuer = ca_cert ? issuer : NULL,
            .issuer_key = ca_cert ? &issuer_key : NULL,
            .no_extensions = no_ext,
        };
        e = edhoc_x509_create(cred, &key, &p);
    } else {
        uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
        size_t pub_len;
        e = edhoc_key_public(&key, pub, &pub_len);
        if (e == 0)
            e = edhoc_cred_build_ccs(cred, curve, pub, pub_len, kid, (size_t)kid_len,
                                     subject ? subject : "edhoc-cli device");
    }
    if (e != 0) {
        fprintf(stderr, "edhoc-cli keygen: cannot create the credential: %s\n",
                edhoc_cred_strerror(e));
        goto out;
    }

    size_t text_len;
    const void *cred_out;
    size_t cred_out_len;
    if (x509) {
        if (edhoc_x509_to_pem(cred, text, 4 * EDHOC_CRED_MAX_DATA, &text_len) != 0)
            goto out;
        cred_out = text;
        cred_out_len = text_len;
    } else if (hex) {
        for (size_t i = 0; i < cred->cred_len; i++)
            sprintf(text + 2 * i, "%02x", cred->cred[i]);
        text[2 * cred->cred_len] = '\n';
        cred_out = text;
        cred_out_len = 2 * cred->cred_len + 1;
    } else {
        cred_out = cred->cred;
        cred_out_len = cred->cred_len;
    }
    if (edhoc_key_write_file(&key, out_key, force, why, sizeof why) != 0) {
        fprintf(stderr, "edhoc-cli keygen: %s\n", why);
        goto out;
    }
    if (write_public_file(out_cred, cred_out, cred_out_len, force) != 0) {
        unlink(out_key); /* a key without its credential is of no use */
        goto out;
    }

    /* With --out-cred - the credential is standard output: the report
     * goes to standard error. */
    FILE *report = to_stdout ? stderr : stdout;
    fprintf(report, "type:        %s%s\n", x509 ? "X.509 certificate" : "CCS (CWT Claims Set)",
           x509 ? (is_ca ? " (CA)" : "") : "");
    fprintf(report, "curve:       %s (%s)\n", curve_name(curve),
           dh_only ? "static Diffie-Hellman" :
           (curve == EDHOC_COSE_CRV_ED25519 || curve == EDHOC_COSE_CRV_ED448)
               ? "signature" : "signature or static Diffie-Hellman");
    if (!x509) {
        fprintf(report, "kid:         ");
        cli_hex_print(report, kid, (size_t)kid_len);
        fprintf(report, "\n");
    }
    fprintf(report, "subject:     %s\n", subject ? subject :
           (x509 ? (is_ca ? "edhoc-cli CA" : "edhoc-cli device") : "edhoc-cli device"));
    if (x509) {
        fprintf(report, "issuer:      %s\n", ca_cert ? ca_cert : "self-signed");
        char nb[32], na[32];
        time_t tnb = (time_t)not_before, tna = (time_t)not_after;
        strftime(nb, sizeof nb, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tnb));
        strftime(na, sizeof na, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tna));
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
           x509 ? "PEM" : (hex ? "CCS as hex" : "CCS as CBOR"), cred_out_len);
    fprintf(report, "wrote %s (PKCS#8 PEM private key, mode 0600)\n", out_key);
    rc = CLI_EXIT_OK;
out:
    edhoc_wipe(&key, sizeof key);
    edhoc_wipe(&issuer_key, sizeof issuer_key);
    free(cred);
    free(issuer);
    free(text);
    return rc;
}
