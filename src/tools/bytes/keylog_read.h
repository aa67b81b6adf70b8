/* Reading a key log back: the rows of Wireshark's EDHOC "edhoc_secrets"
 * and OSCORE "oscore_contexts" tables that `initiator --keylog DIR`
 * writes (cli/keylog.c, edhoc_key_log_row / edhoc_key_log_oscore_row),
 * for whatever opens captures decrypted (`bytes --keylog`). Any command
 * that reads a key log uses this; none parses the rows itself. */
#ifndef EDHOC_TOOLS_KEYLOG_READ_H
#define EDHOC_TOOLS_KEYLOG_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edhoc/crypto.h"
#include "edhoc/oscore.h"

/* Where a row came from, for messages: "DIR/edhoc_secrets line 3". */
struct keylog_origin {
    const char *file; /* one of struct keylog.files */
    unsigned line;
};

/* G_X, PRK_2e, TH_2, PRK_3e2m, TH_3, PRK_4e3m, TH_4 (in that order). */
enum {
    KEYLOG_G_X,
    KEYLOG_PRK_2E,
    KEYLOG_TH_2,
    KEYLOG_PRK_3E2M,
    KEYLOG_TH_3,
    KEYLOG_PRK_4E3M,
    KEYLOG_TH_4,
    KEYLOG_EDHOC_FIELDS
};

struct keylog_edhoc_row {
    struct keylog_origin at;
    uint8_t v[KEYLOG_EDHOC_FIELDS][EDHOC_CRYPTO_MAX_HASH];
    uint8_t len[KEYLOG_EDHOC_FIELDS];
};

struct keylog_oscore_row {
    struct keylog_origin at;
    uint8_t sender_id[OSCORE_MAX_ID], recipient_id[OSCORE_MAX_ID];
    uint8_t master_secret[OSCORE_MAX_MASTER_SECRET], master_salt[OSCORE_MAX_MASTER_SALT];
    uint8_t id_context[OSCORE_MAX_ID_CONTEXT];
    size_t sender_id_len, recipient_id_len, master_secret_len, master_salt_len, id_context_len;
    int aead_alg; /* COSE id (the table names only AES-CCM-16-64-128) */
};

#define KEYLOG_MAX_FILES 2

struct keylog {
    char files[KEYLOG_MAX_FILES][4096];
    size_t n_files;
    struct keylog_edhoc_row *edhoc; /* n_edhoc rows, heap */
    size_t n_edhoc;
    struct keylog_oscore_row *oscore;
    size_t n_oscore;
};

/* Reads path: a file of either table (each row is recognized by its
 * shape: seven bare hex fields, or six quoted ones), or the directory
 * `--keylog DIR` wrote (its edhoc_secrets and oscore_contexts, either may
 * be missing but not both). Blank lines and lines starting with '#' are
 * skipped. A file is refused when it is a symbolic link, not a regular
 * file, or readable by group or others (it holds session secrets, the
 * rule of every secret file, src/pathcheck). label names the option in
 * messages ("--keylog"). 0, or -1 with one line in why naming the file
 * and line ("--keylog F line 4: field 3 (TH_2) is not hex"); the
 * struct is then empty. */
int keylog_load(struct keylog *k, const char *label, const char *path, char *why, size_t cap);

/* Wipes every value and frees the rows. */
void keylog_free(struct keylog *k);

/* The EDHOC row whose G_X is g_x, or NULL. */
const struct keylog_edhoc_row *keylog_find_edhoc(const struct keylog *k, const uint8_t *g_x,
                                                 size_t g_x_len);

#endif
