/*
 * External authorization data (RFC 9528 Section 3.8) between the
 * messages and the application's callbacks.
 */
#include <string.h>

#include "edhoc_internal.h"

int edhoc_deliver_ead(const struct edhoc_session *s, int message, const uint8_t *p, size_t len)
{
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, p, len);
    while (!edhoc_cbor_at_end(&r)) {
        struct edhoc_ead_item item;
        if (edhoc_ead_next(&r, &item))
            return EDHOC_ERR_MALFORMED; /* validated before; defensive */
        if (item.label == 0)
            continue;
        int res = EDHOC_EAD_UNRECOGNIZED;
        if (s->cfg->ead_receive)
            res = s->cfg->ead_receive(s->cfg->ead_ctx, message, &item);
        if (res < 0)
            return EDHOC_ERR_EAD_REJECTED;
        if (res == EDHOC_EAD_UNRECOGNIZED && item.label < 0)
            return EDHOC_ERR_EAD_CRITICAL;
    }
    return 0;
}

/* Own EAD_x encoded into buf. */
int edhoc_own_ead(const struct edhoc_config *c, int message, uint8_t *buf, size_t cap, size_t *len)
{
    struct edhoc_cbor_writer w;
    edhoc_cbor_writer_init(&w, buf, cap);
    if (c->ead[message])
        edhoc_ead_write(&w, c->ead[message], c->n_ead[message]);
    long n = edhoc_cbor_writer_finish(&w);
    if (n < 0)
        return EDHOC_ERR_TOO_LARGE;
    *len = (size_t)n;
    return 0;
}
