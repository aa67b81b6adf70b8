/* libFuzzer target: EDHOC error messages, parsed alone and by a session
 * waiting for message_2 (which may restart after error code 2). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "edhoc/edhoc.h"

static int fixed_random(void *ctx, uint8_t *out, size_t len)
{
    (void)ctx;
    memset(out, 0x5a, len);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct edhoc_error_info info;
    (void)edhoc_error_message_parse(data, size, &info);
    (void)edhoc_message_is_error(data, size);

    static struct edhoc_crypto_ops ops;
    static struct edhoc_cred cred;
    static struct edhoc_key key = {.curve = EDHOC_COSE_CRV_X25519, .priv_len = 32};
    static const int suites[] = {0, 2, 6};
    ops = *edhoc_crypto_openssl();
    ops.random = fixed_random;
    cred.cred = cred.data;
    cred.cred_len = 1;
    cred.data[0] = 0xa0;
    cred.kid_len = 1;
    struct edhoc_config c = {
        .ops = &ops, .method = 3, .suites = suites, .n_suites = 3, .cred = &cred, .key = &key};
    struct edhoc_session s;
    if (edhoc_session_init(&s, EDHOC_INITIATOR, &c))
        return 0;
    uint8_t m1[128];
    if (edhoc_initiator_prepare_message_1(&s, m1, sizeof m1) < 0)
        return 0;
    if (edhoc_session_process_error(&s, data, size, &info) == 0)
        (void)edhoc_initiator_prepare_message_1(&s, m1, sizeof m1);
    return 0;
}
