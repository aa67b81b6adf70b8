/*
 * Credential and key files: format detection, reading with a permission
 * check for private keys, writing keys with mode 0600, and trust files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edhoc/cred.h"
#include "cred_internal.h"
#include "path_check.h"

#define CRED_FILE_MAX (64 * 1024)

static bool is_text(const uint8_t *d, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (d[i] == 0 || d[i] >= 0x80)
            return false;
    return true;
}

#define PEM_KID_TAG "EDHOC-kid:"

/* Does the line [p, end) start with s? */
static bool line_starts(const uint8_t *p, const uint8_t *end, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(end - p) >= n && memcmp(p, s, n) == 0;
}

int cred_pem_kids(const uint8_t *pem, size_t len, uint8_t (*kids)[EDHOC_CRED_MAX_KID],
                  size_t *kid_lens, size_t max)
{
    size_t n = 0;
    long pending = -1; /* length of a kid waiting for its certificate */
    uint8_t kid[EDHOC_CRED_MAX_KID];
    bool in_block = false;
    const uint8_t *p = pem, *text_end = pem + len;
    while (p < text_end) {
        const uint8_t *eol = memchr(p, '\n', (size_t)(text_end - p));
        const uint8_t *end = eol ? eol : text_end;
        if (line_starts(p, end, "-----BEGIN ")) {
            /* PEM_read_bio_X509 reads these two labels; a kid waits
             * across other blocks for the next certificate. */
            bool cert = line_starts(p, end, "-----BEGIN CERTIFICATE-----") ||
                        line_starts(p, end, "-----BEGIN X509 CERTIFICATE-----");
            if (cert) {
                if (n < max) {
                    kid_lens[n] = pending > 0 ? (size_t)pending : 0;
                    if (pending > 0)
                        memcpy(kids[n], kid, (size_t)pending);
                }
                n++;
                pending = -1;
            }
            in_block = true;
        } else if (line_starts(p, end, "-----END ")) {
            in_block = false;
        } else if (!in_block && line_starts(p, end, PEM_KID_TAG)) {
            const uint8_t *v = p + strlen(PEM_KID_TAG);
            /* The annotation is explanatory text outside the blocks (RFC
             * 7468 Section 5.2), which other PEM readers skip. */
            long kl = cred_hex_decode(v, (size_t)(end - v), kid, sizeof kid);
            if (kl < 1 || pending >= 0)
                return EDHOC_CRED_ERR_FORMAT; /* bad hex, or two kids for one certificate */
            pending = kl;
        }
        p = eol ? eol + 1 : text_end;
    }
    if (pending >= 0)
        return EDHOC_CRED_ERR_FORMAT; /* a kid that names no certificate */
    return (int)n;
}

int edhoc_cred_parse(struct edhoc_cred *cred, const uint8_t *data, size_t len)
{
    memset(cred, 0, sizeof *cred);
    if (!data || len == 0)
        return EDHOC_CRED_ERR_FORMAT;
    if (is_text(data, len)) {
        /* PEM, or the hex of a CCS / DER certificate. */
        struct edhoc_cred tmp;
        if (edhoc_cred_from_x509(&tmp, data, len) == 0) {
            uint8_t kids[1][EDHOC_CRED_MAX_KID];
            size_t kid_lens[1] = {0};
            if (cred_pem_kids(data, len, kids, kid_lens, 1) < 0)
                return EDHOC_CRED_ERR_FORMAT;
            edhoc_cred_copy(cred, &tmp);
            edhoc_cred_set_kid(cred, kids[0], kid_lens[0]); /* the leaf's */
            return 0;
        }
        if (len / 2 > EDHOC_CRED_MAX_DATA + 64)
            return EDHOC_CRED_ERR_TOO_LARGE;
        uint8_t *raw = malloc(len / 2 + 1);
        if (!raw)
            return EDHOC_CRED_ERR_TOO_LARGE;
        long n = cred_hex_decode(data, len, raw, len / 2 + 1);
        int rc = n > 0 && !is_text(raw, (size_t)n) ? edhoc_cred_parse(cred, raw, (size_t)n)
                                                   : EDHOC_CRED_ERR_FORMAT;
        free(raw);
        return rc;
    }
    /* A DER certificate starts with a SEQUENCE (0x30); a CCS is a map
     * (major type 5, 0xa0..0xbf), a CWT (COSE_Sign1) an array of four
     * (0x84). */
    if (data[0] == 0x30)
        return edhoc_cred_from_x509(cred, data, len);
    if (data[0] == 0x84)
        return edhoc_cred_from_cwt(cred, data, len);
    return edhoc_cred_from_ccs(cred, data, len);
}

int cred_read_file(const char *path, size_t max, bool private_key, uint8_t **data, size_t *len,
                   char *why, size_t why_cap)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cred_why(why, why_cap, "%s: cannot open: %s", path, strerror(errno));
        return EDHOC_CRED_ERR_FILE;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        cred_why(why, why_cap, "%s: not a regular file", path);
        close(fd);
        return EDHOC_CRED_ERR_FILE;
    }
    if (private_key && (st.st_mode & 077) != 0) {
        cred_why(why, why_cap,
                 "%s: private key file is accessible by group or others (mode %03o); "
                 "fix it with: chmod 600 %s",
                 path, (unsigned)(st.st_mode & 0777), path);
        close(fd);
        return EDHOC_CRED_ERR_PERMISSIONS;
    }
    /* As OpenSSH asks of private keys: owned by the user who runs us (or
     * root), and in a directory where nobody else can put another file
     * in its place (group/others may write only with the sticky bit). */
    if (private_key && st.st_uid != geteuid() && st.st_uid != 0) {
        cred_why(why, why_cap,
                 "%s: private key file is owned by uid %u, not by the user running (uid %u) "
                 "or root; fix it with: chown %u %s",
                 path, (unsigned)st.st_uid, (unsigned)geteuid(), (unsigned)geteuid(), path);
        close(fd);
        return EDHOC_CRED_ERR_PERMISSIONS;
    }
    if (private_key && edhoc_secret_parents_check("", path, "key", why, why_cap) != 0) {
        close(fd);
        return EDHOC_CRED_ERR_PERMISSIONS;
    }
    if ((uint64_t)st.st_size > max) {
        cred_why(why, why_cap, "%s: larger than %zu bytes", path, max);
        close(fd);
        return EDHOC_CRED_ERR_TOO_LARGE;
    }
    uint8_t *buf = malloc(max + 1);
    if (!buf) {
        close(fd);
        return EDHOC_CRED_ERR_TOO_LARGE;
    }
    size_t n = 0;
    for (;;) {
        ssize_t got = read(fd, buf + n, max + 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            cred_why(why, why_cap, "%s: read error: %s", path, strerror(errno));
            edhoc_wipe(buf, n);
            free(buf);
            close(fd);
            return EDHOC_CRED_ERR_FILE;
        }
        if (got == 0)
            break;
        n += (size_t)got;
        if (n > max) {
            cred_why(why, why_cap, "%s: larger than %zu bytes", path, max);
            edhoc_wipe(buf, n);
            free(buf);
            close(fd);
            return EDHOC_CRED_ERR_TOO_LARGE;
        }
    }
    close(fd);
    buf[n] = '\0'; /* text formats may use string functions */
    *data = buf;
    *len = n;
    return 0;
}

int edhoc_key_load_file(struct edhoc_key *key, const char *path, int curve_hint, char *why,
                        size_t why_cap)
{
    uint8_t *data;
    size_t len;
    memset(key, 0, sizeof *key);
    int rc = cred_read_file(path, CRED_FILE_MAX, true, &data, &len, why, why_cap);
    if (rc != 0)
        return rc;
    rc = edhoc_key_parse(key, data, len, curve_hint);
    if (rc != 0)
        cred_why(why, why_cap, "%s: not a private key (PKCS#8 PEM or hex) of a supported curve%s",
                 path, curve_hint ? " matching the credential" : "");
    edhoc_wipe(data, len);
    free(data);
    return rc;
}

int edhoc_key_write_file(const struct edhoc_key *key, const char *path, bool overwrite, char *why,
                         size_t why_cap)
{
    char pem[1024];
    size_t len;
    int rc = edhoc_key_to_pem(key, pem, sizeof pem, &len);
    if (rc != 0) {
        cred_why(why, why_cap, "%s: cannot encode the key", path);
        return rc;
    }
    /* A fresh file: an existing one could carry wider permissions or be a
     * link somewhere else, and O_EXCL refuses both. */
    if (overwrite && unlink(path) != 0 && errno != ENOENT) {
        cred_why(why, why_cap, "%s: cannot replace: %s", path, strerror(errno));
        edhoc_wipe(pem, sizeof pem);
        return EDHOC_CRED_ERR_FILE;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        cred_why(why, why_cap, "%s: cannot create: %s", path, strerror(errno));
        edhoc_wipe(pem, sizeof pem);
        return EDHOC_CRED_ERR_FILE;
    }
    rc = 0;
    if (fchmod(fd, 0600) != 0 || write(fd, pem, len) != (ssize_t)len) {
        cred_why(why, why_cap, "%s: write error: %s", path, strerror(errno));
        rc = EDHOC_CRED_ERR_FILE;
    }
    if (close(fd) != 0 && rc == 0) {
        cred_why(why, why_cap, "%s: write error: %s", path, strerror(errno));
        rc = EDHOC_CRED_ERR_FILE;
    }
    edhoc_wipe(pem, sizeof pem);
    return rc;
}

int edhoc_cred_load_file(struct edhoc_cred *cred, const char *path, char *why, size_t why_cap)
{
    uint8_t *data;
    size_t len;
    memset(cred, 0, sizeof *cred);
    int rc = cred_read_file(path, CRED_FILE_MAX, false, &data, &len, why, why_cap);
    if (rc != 0)
        return rc;
    rc = edhoc_cred_parse(cred, data, len);
    if (rc != 0)
        cred_why(why, why_cap, "%s: not a credential (CCS as CBOR or hex, X.509 as PEM or DER): %s",
                 path, edhoc_cred_strerror(rc));
    free(data);
    return rc;
}

/* One certificate of a trust file: CAs become anchors, others peers. */
static int add_cert(struct edhoc_cred_store *store, const uint8_t *der, size_t len,
                    const uint8_t *kid, size_t kid_len)
{
    struct cred_x509_info info;
    size_t used;
    if (cred_x509_inspect(der, len, &used, &info) != 0 || used != len)
        return EDHOC_CRED_ERR_FORMAT;
    struct edhoc_cred *c = malloc(sizeof *c);
    if (!c)
        return EDHOC_CRED_ERR_TOO_LARGE;
    const uint8_t *certs[1] = {der};
    int rc = edhoc_cred_from_der_chain(c, certs, &len, 1);
    if (rc == 0)
        rc = edhoc_cred_set_kid(c, kid, kid_len);
    if (rc == 0)
        rc = info.is_ca ? edhoc_cred_store_add_anchor(store, c)
                        : edhoc_cred_store_add_cred(store, c);
    free(c);
    return rc;
}

int edhoc_cred_store_add_file(struct edhoc_cred_store *store, const char *path, char *why,
                              size_t why_cap)
{
    uint8_t *data;
    size_t len;
    int rc = cred_read_file(path, CRED_FILE_MAX, false, &data, &len, why, why_cap);
    if (rc != 0)
        return rc;
    if (is_text(data, len) && strstr((const char *)data, "-----BEGIN")) {
        /* PEM: may hold more certificates than one chain. */
        enum { MAX_FILE_CERTS = EDHOC_CRED_STORE_MAX_CREDS + EDHOC_CRED_STORE_MAX_ANCHORS };
        size_t lens[MAX_FILE_CERTS], kid_lens[MAX_FILE_CERTS] = {0};
        uint8_t kids[MAX_FILE_CERTS][EDHOC_CRED_MAX_KID];
        uint8_t *der = malloc(CRED_FILE_MAX);
        rc = der ? cred_pem_to_der(data, len, der, CRED_FILE_MAX, lens, MAX_FILE_CERTS)
                 : EDHOC_CRED_ERR_TOO_LARGE;
        /* "EDHOC-kid:" lines name the certificate that follows them. */
        int n_blocks = rc >= 0 ? cred_pem_kids(data, len, kids, kid_lens, MAX_FILE_CERTS) : 0;
        if (rc >= 0 && n_blocks != rc)
            rc = EDHOC_CRED_ERR_FORMAT;
        size_t off = 0;
        for (int i = 0; i < rc; i++) {
            int r = add_cert(store, der + off, lens[i], kids[i], kid_lens[i]);
            off += lens[i];
            if (r != 0) {
                rc = r;
                break;
            }
        }
        if (rc < 0)
            cred_why(why, why_cap, "%s: cannot use as trust: %s", path, edhoc_cred_strerror(rc));
        free(der);
        free(data);
        return rc < 0 ? rc : 0;
    }
    struct edhoc_cred *c = malloc(sizeof *c);
    if (!c) {
        free(data);
        return EDHOC_CRED_ERR_TOO_LARGE;
    }
    rc = edhoc_cred_parse(c, data, len);
    if (rc == 0 && c->type == EDHOC_CRED_X509) {
        /* Every certificate of the file on its own. */
        for (size_t i = 0; i < c->n_certs && rc == 0; i++)
            rc = add_cert(store, c->certs[i], c->cert_lens[i], c->kid, i == 0 ? c->kid_len : 0);
    } else if (rc == 0) {
        rc = edhoc_cred_store_add_cred(store, c);
    }
    if (rc != 0)
        cred_why(why, why_cap, "%s: cannot use as trust: %s", path, edhoc_cred_strerror(rc));
    free(c);
    free(data);
    return rc;
}
