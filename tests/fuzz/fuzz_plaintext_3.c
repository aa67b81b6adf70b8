/* libFuzzer target: PLAINTEXT_3 decoding. The first byte picks the method
 * and cipher suite, the rest is the plaintext. */
#include <stddef.h>
#include <stdint.h>

#include "edhoc/edhoc.h"

static const int suite_ids[] = {0, 1, 2, 3, 4, 5, 6, 24, 25};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int method = data[0] & 3;
    int suite = suite_ids[(data[0] >> 2) % 9];
    static struct edhoc_received rx;

    (void)edhoc_plaintext_3_parse(data + 1, size - 1, method, suite, &rx);
    return 0;
}
