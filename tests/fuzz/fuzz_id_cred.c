/* libFuzzer: the ID_CRED map parser and the credential store behind it.
 * Any input must give 0 or one of the documented errors; a resolved
 * credential must be self-consistent. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/cred.h"
#include "demo_creds.h"

#define FUZZ_TIME 1735689600 /* 2025-01-01: fixed, so runs are reproducible */

static struct edhoc_cred_store *store;
static struct edhoc_cred *out;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!store) {
        store = malloc(sizeof *store);
        out = malloc(sizeof *out);
        if (!store || !out)
            abort();
        edhoc_cred_store_init(store);
        edhoc_cred_store_set_time(store, FUZZ_TIME);
        if (edhoc_demo_trust(store) != 0)
            abort();
    }

    struct edhoc_id_cred id;
    int prc = edhoc_id_cred_parse(data, size, &id);
    if (prc != 0 && prc != EDHOC_CRED_ERR_FORMAT)
        abort();
    if (prc == 0) {
        /* Pointers stay inside the input. */
        const uint8_t *end = data + size;
        if (id.type == EDHOC_ID_CRED_KID && (id.kid < data || id.kid + id.kid_len > end))
            abort();
        if (id.ccs && (id.ccs < data || id.ccs + id.ccs_len > end))
            abort();
        if (id.cwt && (id.cwt < data || id.cwt + id.cwt_len > end))
            abort();
        if (id.x5t_hash && (id.x5t_hash < data || id.x5t_hash + id.x5t_hash_len > end))
            abort();
        /* The entry used is one that was there. */
        if (!(id.labels & EDHOC_ID_CRED_LABEL_BIT(id.type)) || id.n_certs > EDHOC_CRED_MAX_BAG)
            abort();
        for (size_t i = 0; i < id.n_certs; i++)
            if (id.certs[i] < data || id.certs[i] + id.cert_lens[i] > end)
                abort();
    }

    int rc = edhoc_cred_store_resolve(store, data, size, out);
    switch (rc) {
    case 0:
        if (prc != 0 || out->cred_len == 0 || out->cred_len > EDHOC_CRED_MAX_DATA ||
            out->pub_len == 0 || out->pub_len > EDHOC_CRYPTO_MAX_PUB)
            abort();
        /* What resolved can be named again. */
        {
            uint8_t map[EDHOC_CRED_MAX_ID_CRED];
            size_t ml;
            enum edhoc_id_cred_type t = out->type == EDHOC_CRED_CCS   ? EDHOC_ID_CRED_KCCS
                                        : out->type == EDHOC_CRED_CWT ? EDHOC_ID_CRED_KCWT
                                                                      : EDHOC_ID_CRED_X5CHAIN;
            if (edhoc_id_cred_encode(out, t, 0, map, sizeof map, &ml) != 0)
                abort();
        }
        break;
    case EDHOC_CRED_ERR_FORMAT:
    case EDHOC_CRED_ERR_UNKNOWN:
    case EDHOC_CRED_ERR_UNTRUSTED:
    case EDHOC_CRED_ERR_EXPIRED:
    case EDHOC_CRED_ERR_CHAIN_LOOP:
    case EDHOC_CRED_ERR_CHAIN_DEPTH:
    case EDHOC_CRED_ERR_AMBIGUOUS:
        if (prc != 0 && rc != EDHOC_CRED_ERR_FORMAT)
            abort();
        break;
    default: abort();
    }
    return 0;
}
