/* libFuzzer target: message_3 decoding and decryption by the responder. */
#include "fuzz_edhoc_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *ct;
    size_t ct_len;
    (void)edhoc_message_3_parse(data, size, &ct, &ct_len);

    struct edhoc_session i, r;
    static uint8_t m2[EDHOC_MAX_MESSAGE];
    if (start_pair(&i, &r, m2, sizeof m2) < 0)
        return 0;
    static struct edhoc_received rx;
    if (edhoc_responder_process_message_3(&r, data, size, &rx) == 0)
        (void)edhoc_responder_verify_message_3(&r, &rx, &cred_i);
    uint8_t out[EDHOC_MAX_ERROR_MESSAGE];
    (void)edhoc_session_write_error(&r, out, sizeof out);
    return 0;
}
