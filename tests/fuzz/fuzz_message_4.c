/* libFuzzer target: message_4 decoding and decryption by the initiator. */
#include "fuzz_edhoc_common.h"

/* A completed initiator session, rebuilt once and copied per input. */
static struct edhoc_session completed;
static bool have_completed;

static void complete_once(void)
{
    if (have_completed)
        return;
    struct edhoc_session i, r;
    static uint8_t m2[EDHOC_MAX_MESSAGE], m3[EDHOC_MAX_MESSAGE];
    static struct edhoc_received rx;
    int n2 = start_pair(&i, &r, m2, sizeof m2);
    if (n2 < 0 || edhoc_initiator_process_message_2(&i, m2, (size_t)n2, &rx) ||
        edhoc_initiator_verify_message_2(&i, &rx, &cred_r))
        return;
    if (edhoc_initiator_prepare_message_3(&i, m3, sizeof m3) < 0)
        return;
    completed = i;
    have_completed = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *ct;
    size_t ct_len;
    (void)edhoc_message_4_parse(data, size, &ct, &ct_len);

    complete_once();
    if (!have_completed)
        return 0;
    struct edhoc_session i = completed;
    static struct edhoc_received rx;
    (void)edhoc_initiator_process_message_4(&i, data, size, &rx);
    return 0;
}
