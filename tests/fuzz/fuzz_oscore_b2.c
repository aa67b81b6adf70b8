/* Fuzz RFC 8613 Appendix B.2 in both roles: arbitrary bytes as response #1
 * to a client's request #1, as request #1 to a server that lost its
 * context, and as request #2 to a server with R2 values pending. Nothing
 * may crash; a refusal leaves the client's state as it was; lengths stay
 * within the buffers and the sizing rules of oscore.h. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/oscore.h"

static const char client_text[] = "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                                  "master_salt,hex,\"9e7ca92223786340\"\n"
                                  "id_context,hex,\"0017a2d3\"\n"
                                  "sender_id,hex,\"\"\nrecipient_id,hex,\"01\"\n";
static const char server_text[] = "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                                  "master_salt,hex,\"9e7ca92223786340\"\n"
                                  "id_context,hex,\"0017a2d3\"\n"
                                  "sender_id,hex,\"01\"\nrecipient_id,hex,\"\"\n";

static struct oscore_config ccfg, scfg;
static struct oscore_context client0;
static struct oscore_binding request1;
static struct oscore_b2_server pending0;
static int ready;

static void setup(void)
{
    struct oscore_config_error err;
    const struct edhoc_crypto_ops *crypto = edhoc_crypto_openssl();
    if (oscore_config_parse(client_text, strlen(client_text), &ccfg, &err) ||
        oscore_config_parse(server_text, strlen(server_text), &scfg, &err) ||
        oscore_context_init_config(&client0, crypto, &ccfg))
        __builtin_trap();
    /* A GET /x as request #1, and a server that answered it (one R2
     * pending at time 0). */
    static const uint8_t get[] = {0x40, 0x01, 0x00, 0x01, 0xb1, 'x'};
    uint8_t prot[256], resp[256];
    long n = oscore_protect_request(&client0, get, sizeof get, prot, sizeof prot, &request1);
    if (n <= 0 || oscore_b2_server_init(&pending0, 0) ||
        oscore_b2_server_request1(&pending0, crypto, &scfg, prot, (size_t)n, 0, resp,
                                  sizeof resp) <= 0)
        __builtin_trap();
    ready = 1;
}

static void check(long n, size_t cap)
{
    if (n > (long)cap)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready)
        setup();
    const struct edhoc_crypto_ops *crypto = edhoc_crypto_openssl();
    static uint8_t out[4096];

    /* Client, step 3. */
    struct oscore_b2_client st;
    if (oscore_b2_client_init(&st, 0))
        __builtin_trap();
    struct oscore_binding b = request1;
    struct oscore_context next;
    (void)oscore_b2_is_response1(data, size);
    long n = oscore_b2_client_response1(&st, crypto, &ccfg, &client0, &b, data, size, out,
                                        sizeof out, &next);
    check(n, sizeof out);
    if (n < 0 && st.state != OSCORE_B2_CLIENT_IDLE)
        __builtin_trap();
    if (n > 0) {
        if ((size_t)n > size || st.state != OSCORE_B2_CLIENT_SENT_R3)
            __builtin_trap();
        long m = oscore_b2_client_response2(&st, &next, &b, data, size, out, sizeof out);
        check(m, sizeof out);
        oscore_context_wipe(&next);
    }

    /* Server, step 2: answers fit OSCORE_MAX_OVERHEAD over an empty 4.01. */
    struct oscore_b2_server srv = pending0;
    n = oscore_b2_server_request1(&srv, crypto, &scfg, data, size, 1, out, sizeof out);
    check(n, sizeof out);
    if (n > 0 && (size_t)n > 4 + COAP_MSG_MAX_TOKEN + OSCORE_MAX_OVERHEAD)
        __builtin_trap();

    /* Server, step 4. */
    srv = pending0;
    struct oscore_binding sb;
    bool second = oscore_b2_server_is_request2(&srv, data, size, 1);
    n = oscore_b2_server_request2(&srv, crypto, &scfg, data, size, 1, &next, out, sizeof out, &sb);
    check(n, sizeof out);
    if (n > 0) {
        if (!second || (size_t)n > size || srv.pending != 0)
            __builtin_trap();
        oscore_context_wipe(&next);
    } else if (srv.pending != pending0.pending) {
        __builtin_trap(); /* a refused request #2 keeps the pending R2s */
    }
    return 0;
}
