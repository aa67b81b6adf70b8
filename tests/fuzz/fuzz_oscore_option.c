/* Fuzz the OSCORE option value parser and the CoAP message codec: any input
 * must parse or be refused without reading out of bounds, a parsed option
 * value must re-encode to exactly the input (the format has one encoding
 * per value), and so must a parsed CoAP message. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "edhoc/coap_msg.h"
#include "edhoc/oscore.h"

static void within(const uint8_t *p, size_t n, const uint8_t *data, size_t size)
{
    if (n && (p < data || p + n > data + size))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct oscore_option o;
    if (oscore_option_parse(data, size, &o) == 0) {
        within(o.piv, o.piv_len, data, size);
        within(o.kid, o.kid_len, data, size);
        within(o.kid_context, o.kid_context_len, data, size);
        if (o.piv_len > OSCORE_MAX_PIV)
            __builtin_trap();
        static uint8_t enc[70000];
        long n = oscore_option_encode(&o, enc, sizeof enc);
        if (n < 0 || (size_t)n != size || (size && memcmp(enc, data, size) != 0))
            __builtin_trap();
    }

    struct coap_msg m;
    if (edhoc_coap_msg_parse(data, size, &m) == 0) {
        static uint8_t enc[70000];
        long n = edhoc_coap_msg_encode(&m, enc, sizeof enc);
        if (n < 0 || (size_t)n != size || memcmp(enc, data, size) != 0)
            __builtin_trap();
        for (size_t i = 0; i < m.option_count; i++)
            within(m.options[i].value, m.options[i].len, data, size);
        within(m.payload, m.payload_len, data, size);
    }
    (void)oscore_message_option(data, size, &o);
    return 0;
}
