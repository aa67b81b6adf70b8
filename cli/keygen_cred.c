/* The key pair and credential of `edhoc-cli keygen` (keygen_cred.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "demo_creds.h"
#include "edhoc/crypto.h"
#include "keygen_cred.h"
#include "util.h"

int keygen_made_init(struct keygen_made *m)
{
    memset(m, 0, sizeof *m);
    m->kid_len = -1;
    m->cred = calloc(1, sizeof *m->cred);
    m->issuer = calloc(1, sizeof *m->issuer);
    m->text = malloc(4 * EDHOC_CRED_MAX_DATA);
    return m->cred && m->issuer && m->text ? 0 : -1;
}

void keygen_made_free(struct keygen_made *m)
{
    edhoc_wipe(&m->key, sizeof m->key);
    edhoc_wipe(&m->issuer_key, sizeof m->issuer_key);
    free(m->cred);
    free(m->issuer);
    free(m->text);
    m->cred = m->issuer = NULL;
    m->text = NULL;
}

/* The CWT issuer's key, or the CA's certificate and key. */
static int load_issuer(const struct keygen_params *p, struct keygen_made *m, char *why, size_t cap)
{
    if (p->cwt) {
        /* The issuer key's file names its curve (PKCS#8 PEM), so no hint. */
        int e = edhoc_key_load_file(&m->issuer_key, p->issuer_key_path, 0, why, cap);
        if (e == 0 && (m->issuer_key.curve == EDHOC_COSE_CRV_X25519 ||
                       m->issuer_key.curve == EDHOC_COSE_CRV_X448)) {
            e = EDHOC_CRED_ERR_KEY_TYPE;
            snprintf(why, cap,
                     "%s: an %s key cannot sign a CWT (Ed25519, Ed448, P-256 "
                     "or P-384)",
                     p->issuer_key_path, edhoc_crypto_curve_name(m->issuer_key.curve));
        }
        if (e != 0)
            return CLI_EXIT_INPUT;
    }
    if (p->ca_cert) {
        int e = edhoc_cred_load_file(m->issuer, p->ca_cert, why, cap);
        if (e == 0 && m->issuer->type != EDHOC_CRED_X509) {
            e = EDHOC_CRED_ERR_FORMAT;
            snprintf(why, cap, "%s: not an X.509 certificate", p->ca_cert);
        }
        if (e == 0)
            e = edhoc_key_load_file(&m->issuer_key, p->ca_key, m->issuer->curve, why, cap);
        if (e == 0 && edhoc_key_check_cred(&m->issuer_key, m->issuer) != 0) {
            e = EDHOC_CRED_ERR_KEY_TYPE;
            snprintf(why, cap, "%s is not the private key of %s", p->ca_key, p->ca_cert);
        }
        if (e != 0)
            return CLI_EXIT_INPUT;
    }
    return CLI_EXIT_OK;
}

/* One byte that EDHOC can send as a one-byte CBOR integer (0x00..0x17 and
 * 0x20..0x37), none of the built-in demo credentials' kids (kid
 * collisions): the demo trust is loaded first, so a kid it holds would
 * name the demo credential, and a handshake with the new one would fail
 * (MAC_3 verification). */
static int pick_kid(struct keygen_made *m, char *why, size_t cap)
{
    uint8_t demo[64], free_kids[48];
    size_t n_demo = edhoc_demo_kids(demo, sizeof demo), n_free = 0;
    if (n_demo == 0 || n_demo > sizeof demo) {
        snprintf(why, cap, "cannot list the demo credentials' kids");
        return -1;
    }
    for (unsigned v = 0; v < 0x38; v++) {
        if (v >= 0x18 && v < 0x20)
            continue;
        if (!memchr(demo, (int)v, n_demo))
            free_kids[n_free++] = (uint8_t)v;
    }
    uint8_t r = 0;
    if (n_free == 0) {
        snprintf(why, cap, "every one-byte kid is a demo credential's: give --kid");
        return -1;
    }
    if (getrandom(&r, 1, 0) != 1) {
        snprintf(why, cap, "no random bytes for the kid");
        return -1;
    }
    m->kid[0] = free_kids[r % n_free]; /* the slight bias does not matter */
    m->kid_len = 1;
    return 0;
}

static int create(const struct keygen_params *p, struct keygen_made *m)
{
    int e;
    if (p->x509) {
        struct edhoc_x509_params xp = {
            .subject_cn =
                p->subject ? p->subject : (p->is_ca ? "edhoc-cli CA" : "edhoc-cli device"),
            .not_before = p->not_before,
            .not_after = p->not_after,
            .is_ca = p->is_ca,
            .issuer = p->ca_cert ? m->issuer : NULL,
            .issuer_key = p->ca_cert ? &m->issuer_key : NULL,
            .no_extensions = p->no_ext,
        };
        e = edhoc_x509_create(m->cred, &m->key, &xp);
        if (e == 0 && m->kid_len > 0)
            e = edhoc_cred_set_kid(m->cred, m->kid, (size_t)m->kid_len);
    } else if (p->cwt) {
        uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
        size_t pub_len;
        e = edhoc_key_public(&m->key, pub, &pub_len);
        struct edhoc_cwt_params cp = {
            .curve = p->curve,
            .pub = pub,
            .pub_len = pub_len,
            .kid = m->kid,
            .kid_len = (size_t)m->kid_len,
            .subject = p->subject ? p->subject : "edhoc-cli device",
            .issuer_name = p->issuer_name,
            .not_before = p->not_before,
            .not_after = p->not_after,
            .issued_at = p->now,
            .issuer_key = &m->issuer_key,
            .issuer_kid = p->issuer_kid,
            .issuer_kid_len = p->issuer_kid_len,
        };
        if (e == 0)
            e = edhoc_cwt_create(m->cred, &cp);
    } else {
        uint8_t pub[EDHOC_CRYPTO_MAX_PUB];
        size_t pub_len;
        e = edhoc_key_public(&m->key, pub, &pub_len);
        if (e == 0)
            e = edhoc_cred_build_ccs(m->cred, p->curve, pub, pub_len, m->kid, (size_t)m->kid_len,
                                     p->subject ? p->subject : "edhoc-cli device");
    }
    return e;
}

/* The credential file's bytes: PEM (a kid before the block), hex or CBOR. */
static int encode(const struct keygen_params *p, struct keygen_made *m)
{
    struct edhoc_cred *cred = m->cred;
    char *text = m->text;
    size_t text_len;
    if (p->x509) {
        /* A kid goes before the leaf's block as PEM explanatory text (RFC
         * 7468 Section 5.2), where other PEM readers skip it. */
        size_t head = 0;
        if (m->kid_len > 0) {
            head = (size_t)snprintf(text, 64, "EDHOC-kid: ");
            for (long i = 0; i < m->kid_len; i++)
                head += (size_t)snprintf(text + head, 4, "%02x", m->kid[i]);
            text[head++] = '\n';
        }
        if (edhoc_x509_to_pem(cred, text + head, 4 * EDHOC_CRED_MAX_DATA - head, &text_len) != 0)
            return -1;
        m->out = text;
        m->out_len = head + text_len;
    } else if (p->hex) {
        for (size_t i = 0; i < cred->cred_len; i++)
            sprintf(text + 2 * i, "%02x", cred->cred[i]);
        text[2 * cred->cred_len] = '\n';
        m->out = text;
        m->out_len = 2 * cred->cred_len + 1;
    } else {
        m->out = cred->cred;
        m->out_len = cred->cred_len;
    }
    return 0;
}

int keygen_make(const struct keygen_params *p, struct keygen_made *m, char *why, size_t cap)
{
    why[0] = '\0';
    int rc = load_issuer(p, m, why, cap);
    if (rc)
        return rc;
    if (edhoc_key_generate(&m->key, p->curve) != 0) {
        snprintf(why, cap, "key generation failed");
        return CLI_EXIT_FAILURE;
    }
    if (m->kid_len < 0 && !p->x509 && pick_kid(m, why, cap))
        return CLI_EXIT_FAILURE;
    int e = create(p, m);
    if (e != 0) {
        snprintf(why, cap, "cannot create the credential: %s", edhoc_cred_strerror(e));
        return CLI_EXIT_FAILURE;
    }
    return encode(p, m) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}
