/* The key log (include/edhoc/edhoc.h, "Key log"): the values that open a
 * capture of a handshake decrypted, in the syntax of Wireshark's tables.
 * Collected from the trace because the session keeps only the latest
 * PRK and TH (PRK_2e becomes PRK_3e2m, TH_2 becomes TH_3, ...). */
#include "edhoc/edhoc.h"

#include <string.h>

static const char *const key_log_names[7] = {"G_X",  "PRK_2e",   "TH_2", "PRK_3e2m",
                                             "TH_3", "PRK_4e3m", "TH_4"};

static uint8_t *key_log_slot(struct edhoc_key_log *log, size_t i)
{
    uint8_t *slots[7] = {log->g_x,  log->prk_2e,   log->th_2, log->prk_3e2m,
                         log->th_3, log->prk_4e3m, log->th_4};
    return slots[i];
}

void edhoc_key_log_trace(void *ctx, const char *name, const uint8_t *v, size_t len)
{
    struct edhoc_key_log *log = ctx;
    for (size_t i = 0; i < 7; i++) {
        if (strcmp(name, key_log_names[i]) != 0 || len > EDHOC_CRYPTO_MAX_HASH || len == 0)
            continue;
        /* G_X starts a handshake: what an earlier one left is dropped, so
         * a row never mixes two handshakes. */
        if (i == 0)
            edhoc_key_log_wipe(log);
        memcpy(key_log_slot(log, i), v, len);
        log->len[i] = (uint8_t)len;
        break;
    }
    if (log->next)
        log->next(log->next_ctx, name, v, len);
}

bool edhoc_key_log_complete(const struct edhoc_key_log *log)
{
    for (size_t i = 0; i < 7; i++)
        if (!log->len[i])
            return false;
    return true;
}

static char *put_hex(char *p, const uint8_t *v, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        *p++ = digits[v[i] >> 4];
        *p++ = digits[v[i] & 15];
    }
    return p;
}

long edhoc_key_log_row(const struct edhoc_key_log *log, char *out, size_t cap)
{
    if (!edhoc_key_log_complete(log))
        return -1;
    size_t need = 1; /* the newline */
    for (size_t i = 0; i < 7; i++)
        need += 2u * log->len[i] + (i ? 1 : 0);
    if (need + 1 > cap)
        return -1;
    char *p = out;
    struct edhoc_key_log *l = (struct edhoc_key_log *)log; /* key_log_slot only reads */
    for (size_t i = 0; i < 7; i++) {
        if (i)
            *p++ = ',';
        p = put_hex(p, key_log_slot(l, i), log->len[i]);
    }
    *p++ = '\n';
    *p = '\0';
    return (long)(p - out);
}

void edhoc_key_log_wipe(struct edhoc_key_log *log)
{
    edhoc_trace_fn next = log->next;
    void *next_ctx = log->next_ctx;
    edhoc_wipe(log, sizeof *log);
    log->next = next;
    log->next_ctx = next_ctx;
}

static char *put_quoted_hex(char *p, const uint8_t *v, size_t len)
{
    *p++ = '"';
    p = put_hex(p, v, len);
    *p++ = '"';
    return p;
}

long edhoc_key_log_oscore_row(const struct edhoc_oscore_params *o, const uint8_t *id_context,
                              size_t id_context_len, char *out, size_t cap)
{
    /* Wireshark 4.0's packet-oscore.c names one algorithm in its table,
     * the OSCORE mandatory one (RFC 8613 Section 3.2): COSE 10. */
    const char *alg;
    if (o->aead_alg == EDHOC_COSE_AES_CCM_16_64_128)
        alg = "AES-CCM-16-64-128 (CCM*)";
    else
        return -1;
    size_t need = 2 * (o->sender_id_len + o->recipient_id_len + o->master_secret_len +
                       o->master_salt_len + id_context_len) +
                  5 * 3 + strlen(alg) + 2 + 2;
    if (need + 1 > cap)
        return -1;
    char *p = out;
    p = put_quoted_hex(p, o->sender_id, o->sender_id_len);
    *p++ = ',';
    p = put_quoted_hex(p, o->recipient_id, o->recipient_id_len);
    *p++ = ',';
    p = put_quoted_hex(p, o->master_secret, o->master_secret_len);
    *p++ = ',';
    p = put_quoted_hex(p, o->master_salt, o->master_salt_len);
    *p++ = ',';
    p = put_quoted_hex(p, id_context, id_context_len);
    *p++ = ',';
    *p++ = '"';
    size_t al = strlen(alg);
    memcpy(p, alg, al);
    p += al;
    *p++ = '"';
    *p++ = '\n';
    *p = '\0';
    return (long)(p - out);
}
