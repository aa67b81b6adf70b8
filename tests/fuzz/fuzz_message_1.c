/* libFuzzer target: message_1 decoding and the responder processing it. */
#include "fuzz_edhoc_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct edhoc_message_1_fields f;
    (void)edhoc_message_1_parse(data, size, &f);

    static const int more[] = {2, 0, 24};
    setup_configs();
    struct edhoc_config c = cfg_r;
    c.suites = more;
    c.n_suites = 3;
    static struct edhoc_received rx;
    struct edhoc_session r;
    if (edhoc_session_init(&r, EDHOC_RESPONDER, &c))
        return 0;
    edhoc_session_set_ephemeral(&r, eph_y, 32);
    uint8_t out[EDHOC_MAX_ERROR_MESSAGE];
    if (edhoc_responder_process_message_1(&r, data, size, &rx) == 0) {
        static uint8_t m2[EDHOC_MAX_MESSAGE];
        (void)edhoc_responder_prepare_message_2(&r, m2, sizeof m2);
    } else {
        (void)edhoc_session_write_error(&r, out, sizeof out);
    }
    return 0;
}
