/* libFuzzer: the CWT credential parser (kcwt, RFC 9528 Section 3.5.3.1),
 * its signature check, and the store's kcwt lookup. A CWT is read before
 * its signature is checked, so any input must give 0 or a documented
 * error, and what parses must be self-consistent. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/cred.h"
#include "demo_creds.h"

#define FUZZ_TIME 1735689600 /* 2025-01-01: fixed, so runs are reproducible */

static struct edhoc_cred *a, *b;
static struct edhoc_cred_store *store;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!a) {
        a = malloc(sizeof *a);
        b = malloc(sizeof *b);
        store = malloc(sizeof *store);
        if (!a || !b || !store)
            abort();
        edhoc_cred_store_init(store);
        edhoc_cred_store_set_time(store, FUZZ_TIME);
        if (edhoc_demo_trust(store) != 0) /* CCS keys that may act as issuers */
            abort();
    }
    int rc = edhoc_cred_from_cwt(a, data, size);
    if (rc != 0 && rc != EDHOC_CRED_ERR_FORMAT && rc != EDHOC_CRED_ERR_TOO_LARGE)
        abort();
    if (rc == 0) {
        /* CRED_x is exactly the input (the untagged CWT). */
        if (a->type != EDHOC_CRED_CWT || a->cred_len != size || memcmp(a->cred, data, size) != 0)
            abort();
        if (a->kid_len > EDHOC_CRED_MAX_KID || a->pub_len == 0 || !a->has_validity ||
            a->not_before > a->not_after)
            abort();
        int alg;
        const uint8_t *ikid;
        size_t ikid_len;
        if (edhoc_cwt_issuer(a, &alg, &ikid, &ikid_len) != 0 || ikid_len > EDHOC_CRED_MAX_KID ||
            (ikid && (ikid < a->cred || ikid + ikid_len > a->cred + a->cred_len)))
            abort();
        /* Any key may be tried: a mismatch is "untrusted", never more. */
        int v = edhoc_cwt_verify(a, a->curve, a->pub, a->pub_len);
        if (v != 0 && v != EDHOC_CRED_ERR_UNTRUSTED)
            abort();
        /* As kcwt it survives the ID_CRED round trip and the store. */
        uint8_t map[EDHOC_CRED_MAX_ID_CRED];
        size_t ml;
        struct edhoc_id_cred id;
        if (edhoc_id_cred_encode(a, EDHOC_ID_CRED_KCWT, 0, map, sizeof map, &ml) != 0 ||
            edhoc_id_cred_parse(map, ml, &id) != 0 || id.type != EDHOC_ID_CRED_KCWT ||
            id.cwt_len != size || memcmp(id.cwt, data, size) != 0)
            abort();
        rc = edhoc_cred_store_resolve(store, map, ml, b);
        if (rc != 0 && rc != EDHOC_CRED_ERR_UNTRUSTED && rc != EDHOC_CRED_ERR_EXPIRED)
            abort();
        if (rc == 0 && !edhoc_cred_equal(a, b))
            abort();
    }
    rc = edhoc_cred_parse(b, data, size);
    if (rc != 0 && rc != EDHOC_CRED_ERR_FORMAT && rc != EDHOC_CRED_ERR_TOO_LARGE)
        abort();
    return 0;
}
