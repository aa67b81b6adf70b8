/* libFuzzer target: message_2 decoding, decryption and verification by the initiator. */
#include "fuzz_edhoc_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *g_y, *ct;
    size_t ct_len;
    (void)edhoc_message_2_parse(data, size, 32, &g_y, &ct, &ct_len);

    struct edhoc_session i, r;
    static uint8_t m2[EDHOC_MAX_MESSAGE];
    if (start_pair(&i, &r, m2, sizeof m2) < 0)
        return 0;
    static struct edhoc_received rx;
    if (edhoc_initiator_process_message_2(&i, data, size, &rx) == 0 &&
        edhoc_initiator_verify_message_2(&i, &rx, &cred_r) == 0) {
        static uint8_t m3[EDHOC_MAX_MESSAGE];
        (void)edhoc_initiator_prepare_message_3(&i, m3, sizeof m3);
    }
    uint8_t out[EDHOC_MAX_ERROR_MESSAGE];
    (void)edhoc_session_write_error(&i, out, sizeof out);
    return 0;
}
