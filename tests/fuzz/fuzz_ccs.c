/* libFuzzer: the CCS (CWT Claims Set) parser, plus the auto-detecting
 * credential parser that hands binary input to it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/cred.h"

static struct edhoc_cred *a, *b;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!a) {
        a = malloc(sizeof *a);
        b = malloc(sizeof *b);
        if (!a || !b)
            abort();
    }
    int rc = edhoc_cred_from_ccs(a, data, size);
    if (rc != 0 && rc != EDHOC_CRED_ERR_FORMAT && rc != EDHOC_CRED_ERR_TOO_LARGE)
        abort();
    if (rc == 0) {
        /* CRED_x is exactly the input; the key has its curve's length. */
        if (a->type != EDHOC_CRED_CCS || a->cred_len != size || memcmp(a->cred, data, size) != 0)
            abort();
        if (a->kid_len > EDHOC_CRED_MAX_KID || a->pub_len == 0)
            abort();
        /* A CCS rebuilt from the parsed key parses to the same key. */
        if (edhoc_cred_build_ccs(b, a->curve, a->pub, a->pub_len, a->kid, a->kid_len, "x") != 0)
            abort();
        if (b->curve != a->curve || b->pub_len != a->pub_len ||
            memcmp(b->pub, a->pub, a->pub_len) != 0)
            abort();
        /* And as kccs it survives the ID_CRED round trip. */
        uint8_t map[EDHOC_CRED_MAX_ID_CRED];
        size_t ml;
        struct edhoc_id_cred id;
        if (edhoc_id_cred_encode(a, EDHOC_ID_CRED_KCCS, 0, map, sizeof map, &ml) != 0 ||
            edhoc_id_cred_parse(map, ml, &id) != 0 || id.ccs_len != size ||
            memcmp(id.ccs, data, size) != 0)
            abort();
    }
    rc = edhoc_cred_parse(b, data, size);
    if (rc != 0 && rc != EDHOC_CRED_ERR_FORMAT && rc != EDHOC_CRED_ERR_TOO_LARGE)
        abort();
    return 0;
}
