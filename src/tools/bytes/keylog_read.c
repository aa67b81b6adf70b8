/* Reading a key log (keylog_read.h). */
#include "keylog_read.h"

#include "edhoc/edhoc.h"
#include "path_check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEYLOG_MAX_FILE (16u << 20) /* far above any run's rows; a bound on what is read */

static const char *const edhoc_field_names[KEYLOG_EDHOC_FIELDS] = {
    "G_X", "PRK_2e", "TH_2", "PRK_3e2m", "TH_3", "PRK_4e3m", "TH_4"};
static const char *const oscore_field_names[6] = {"Sender ID",   "Recipient ID", "Master Secret",
                                                  "Master Salt", "ID Context",   "algorithm"};

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Hex digits [s, s+n) into out (at most cap bytes): the byte count, or -1
 * (odd count, not hex), -2 (too long). */
static long hex_field(const char *s, size_t n, uint8_t *out, size_t cap)
{
    if (n % 2)
        return -1;
    if (n / 2 > cap)
        return -2;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hex_value(s[i]), lo = hex_value(s[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return (long)(n / 2);
}

/* Splits a line at commas outside quotes: up to max fields, each without
 * its quotes (*quoted says whether it had them). The field count, or -1
 * for an unterminated quote. */
static int split_fields(char *line, char **field, size_t *len, bool *quoted, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (n == max)
            return max + 1;
        if (*p == '"') {
            char *end = strchr(p + 1, '"');
            if (!end)
                return -1;
            field[n] = p + 1;
            len[n] = (size_t)(end - p - 1);
            quoted[n] = true;
            p = end + 1;
            while (*p == ' ' || *p == '\t')
                p++;
        } else {
            field[n] = p;
            while (*p && *p != ',')
                p++;
            char *end = p;
            while (end > field[n] && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
            len[n] = (size_t)(end - field[n]);
            quoted[n] = false;
        }
        n++;
        if (*p == '\0')
            return n;
        if (*p != ',')
            return -1;
        p++;
    }
}

static int edhoc_row(struct keylog_edhoc_row *r, char **field, const size_t *len, char *msg,
                     size_t cap)
{
    for (int i = 0; i < KEYLOG_EDHOC_FIELDS; i++) {
        long n = hex_field(field[i], len[i], r->v[i], sizeof r->v[i]);
        if (n <= 0) {
            snprintf(msg, cap, "field %d (%s) is %s", i + 1, edhoc_field_names[i],
                     n == 0    ? "empty"
                     : n == -2 ? "longer than any hash of the suites"
                               : "not hex");
            return -1;
        }
        r->len[i] = (uint8_t)n;
    }
    return 0;
}

static int oscore_row(struct keylog_oscore_row *r, char **field, const size_t *len, char *msg,
                      size_t cap)
{
    uint8_t *dst[5] = {r->sender_id, r->recipient_id, r->master_secret, r->master_salt,
                       r->id_context};
    size_t dcap[5] = {sizeof r->sender_id, sizeof r->recipient_id, sizeof r->master_secret,
                      sizeof r->master_salt, sizeof r->id_context};
    size_t *dlen[5] = {&r->sender_id_len, &r->recipient_id_len, &r->master_secret_len,
                       &r->master_salt_len, &r->id_context_len};
    for (int i = 0; i < 5; i++) {
        long n = hex_field(field[i], len[i], dst[i], dcap[i]);
        if (n < 0 || (i == 2 && n == 0)) {
            snprintf(msg, cap, "field %d (%s) is %s", i + 1, oscore_field_names[i],
                     n == 0    ? "empty"
                     : n == -2 ? "too long for OSCORE"
                               : "not hex");
            return -1;
        }
        *dlen[i] = (size_t)n;
    }
    /* The names Wireshark's table gives the algorithm (4.0 knows one). */
    static const char ccm[] = "AES-CCM-16-64-128 (CCM*)";
    static const char ccm_short[] = "AES-CCM-16-64-128";
    if ((len[5] == strlen(ccm) && !strncmp(field[5], ccm, len[5])) ||
        (len[5] == strlen(ccm_short) && !strncmp(field[5], ccm_short, len[5]))) {
        r->aead_alg = EDHOC_COSE_AES_CCM_16_64_128;
        return 0;
    }
    snprintf(msg, cap, "field 6 (algorithm) is '%.*s'; the table names \"%s\" only",
             (int)(len[5] > 40 ? 40 : len[5]), field[5], ccm);
    return -1;
}

/* Room for row n: the array doubles at 4, 8, 16, ... rows. Not realloc:
 * the old copy of the secrets is wiped before it is freed. */
static int grow(void **rows, size_t n, size_t size)
{
    if (n && (n < 4 || (n & (n - 1))))
        return 0;
    size_t want = n ? 2 * n : 4;
    void *p = calloc(want, size);
    if (!p)
        return -1;
    if (n) {
        memcpy(p, *rows, n * size);
        edhoc_wipe(*rows, n * size);
    }
    free(*rows);
    *rows = p;
    return 0;
}

/* One line, NUL-terminated, without its newline. */
static int parse_line(struct keylog *k, const struct keylog_origin *at, char *line, char *msg,
                      size_t cap)
{
    size_t l = strlen(line);
    if (l && line[l - 1] == '\r')
        line[--l] = '\0';
    const char *s = line + strspn(line, " \t");
    if (*s == '\0' || *s == '#')
        return 0;
    char *field[KEYLOG_EDHOC_FIELDS];
    size_t len[KEYLOG_EDHOC_FIELDS];
    bool quoted[KEYLOG_EDHOC_FIELDS];
    int n = split_fields(line, field, len, quoted, KEYLOG_EDHOC_FIELDS);
    if (n == KEYLOG_EDHOC_FIELDS) {
        if (grow((void **)&k->edhoc, k->n_edhoc, sizeof *k->edhoc))
            goto nomem;
        struct keylog_edhoc_row *r = &k->edhoc[k->n_edhoc];
        memset(r, 0, sizeof *r);
        r->at = *at;
        if (edhoc_row(r, field, len, msg, cap)) {
            edhoc_wipe(r, sizeof *r);
            return -1;
        }
        k->n_edhoc++;
        return 0;
    }
    if (n == 6) {
        if (grow((void **)&k->oscore, k->n_oscore, sizeof *k->oscore))
            goto nomem;
        struct keylog_oscore_row *r = &k->oscore[k->n_oscore];
        memset(r, 0, sizeof *r);
        r->at = *at;
        if (oscore_row(r, field, len, msg, cap)) {
            edhoc_wipe(r, sizeof *r);
            return -1;
        }
        k->n_oscore++;
        return 0;
    }
    if (n < 0)
        snprintf(msg, cap, "a quoted field is not closed (or text follows its closing quote)");
    else
        snprintf(msg, cap,
                 "%s%d field%s: an edhoc_secrets row has 7 (G_X,PRK_2e,TH_2,PRK_3e2m,TH_3,"
                 "PRK_4e3m,TH_4), an oscore_contexts row 6 (\"Sender ID\",\"Recipient ID\","
                 "\"Master Secret\",\"Master Salt\",\"ID Context\",\"algorithm\")",
                 n > KEYLOG_EDHOC_FIELDS ? "more than " : "", n > KEYLOG_EDHOC_FIELDS ? 7 : n,
                 n == 1 ? "" : "s");
    return -1;
nomem:
    snprintf(msg, cap, "out of memory");
    return -1;
}

/* Reads one file of rows; missing_ok: a missing file adds nothing (a
 * directory holds one table only). */
static int load_file(struct keylog *k, const char *label, const char *path, bool missing_ok,
                     char *why, size_t cap)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT && missing_ok)
            return 0;
        if (errno == ELOOP)
            snprintf(why, cap,
                     "%s %s: is a symbolic link; a key log is never read through one (give the "
                     "file itself)",
                     label, path);
        else
            snprintf(why, cap, "%s %s: %s", label, path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, cap, "%s %s: not a regular file", label, path);
        close(fd);
        return -1;
    }
    if (edhoc_secret_file_check(label, path, fd, "it holds session secrets", true, why, cap)) {
        close(fd);
        return -1;
    }
    if (st.st_size > (off_t)KEYLOG_MAX_FILE) {
        snprintf(why, cap, "%s %s: larger than %u MiB, not a key log", label, path,
                 KEYLOG_MAX_FILE >> 20);
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    char *text = malloc(size + 1);
    size_t got = 0;
    while (text && got < size) {
        ssize_t r = read(fd, text + got, size - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!text || got != size) {
        snprintf(why, cap, "%s %s: %s", label, path, text ? "read failed" : "out of memory");
        free(text);
        return -1;
    }
    text[size] = '\0';
    if (k->n_files == KEYLOG_MAX_FILES) {
        free(text);
        snprintf(why, cap, "%s %s: too many files", label, path);
        return -1;
    }
    snprintf(k->files[k->n_files], sizeof k->files[0], "%s", path);
    struct keylog_origin at = {k->files[k->n_files], 0};
    k->n_files++;
    int rc = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        at.line++;
        char msg[300];
        if (parse_line(k, &at, line, msg, sizeof msg)) {
            snprintf(why, cap, "%s %s line %u: %s", label, path, at.line, msg);
            rc = -1;
            break;
        }
        line = nl ? nl + 1 : NULL;
    }
    edhoc_wipe(text, size);
    free(text);
    return rc;
}

int keylog_load(struct keylog *k, const char *label, const char *path, char *why, size_t cap)
{
    memset(k, 0, sizeof *k);
    struct stat st;
    if (lstat(path, &st) != 0) {
        snprintf(why, cap, "%s %s: %s", label, path, strerror(errno));
        return -1;
    }
    int rc;
    if (S_ISDIR(st.st_mode)) {
        char file[4200];
        snprintf(file, sizeof file, "%s/edhoc_secrets", path);
        rc = load_file(k, label, file, true, why, cap);
        snprintf(file, sizeof file, "%s/oscore_contexts", path);
        if (!rc)
            rc = load_file(k, label, file, true, why, cap);
        if (!rc && k->n_files == 0) {
            snprintf(why, cap, "%s %s: holds neither edhoc_secrets nor oscore_contexts", label,
                     path);
            rc = -1;
        }
    } else {
        rc = load_file(k, label, path, false, why, cap);
    }
    if (rc)
        keylog_free(k);
    return rc;
}

void keylog_free(struct keylog *k)
{
    if (k->edhoc)
        edhoc_wipe(k->edhoc, k->n_edhoc * sizeof *k->edhoc);
    if (k->oscore)
        edhoc_wipe(k->oscore, k->n_oscore * sizeof *k->oscore);
    free(k->edhoc);
    free(k->oscore);
    memset(k, 0, sizeof *k);
}

const struct keylog_edhoc_row *keylog_find_edhoc(const struct keylog *k, const uint8_t *g_x,
                                                 size_t g_x_len)
{
    for (size_t i = 0; i < k->n_edhoc; i++)
        if (k->edhoc[i].len[KEYLOG_G_X] == g_x_len &&
            memcmp(k->edhoc[i].v[KEYLOG_G_X], g_x, g_x_len) == 0)
            return &k->edhoc[i];
    return NULL;
}
