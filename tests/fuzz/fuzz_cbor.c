/* Fuzz the strict CBOR reader: walking any input must terminate, stay in
 * bounds, and agree with check_item about well-formedness. */
#include <stddef.h>
#include <stdint.h>

#include "edhoc/cbor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct edhoc_cbor_reader r;
    edhoc_cbor_reader_init(&r, data, size);
    while (!edhoc_cbor_at_end(&r)) {
        size_t before = r.pos;
        if (edhoc_cbor_skip(&r) != 0)
            break;
        if (r.pos <= before || r.pos > size)
            __builtin_trap();
    }
    edhoc_cbor_reader_init(&r, data, size);
    struct edhoc_cbor_item it;
    while (edhoc_cbor_get(&r, &it) == 0) {
        if ((it.type == EDHOC_CBOR_BSTR || it.type == EDHOC_CBOR_TSTR) &&
            (it.ptr < data || it.ptr + it.len > data + size))
            __builtin_trap();
    }
    (void)edhoc_cbor_check_item(data, size);
    return 0;
}
