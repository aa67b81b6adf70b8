/* Fuzz unprotect with fixed contexts (RFC 8613 C.1): arbitrary bytes as a
 * request to the server and as a response to the client's C.4 request must
 * be refused or accepted without crashing or leaking. The same bytes, when
 * they form a CoAP request or response, are also protected and unprotected
 * again, which must give back the original message. Every result must keep
 * the sizing rules of oscore.h: protect adds at most OSCORE_MAX_OVERHEAD
 * bytes, unprotect never returns more bytes than it was given. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/oscore.h"

static const uint8_t secret[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t salt[8] = {0x9e, 0x7c, 0xa9, 0x22, 0x23, 0x78, 0x63, 0x40};
static const uint8_t id_server[1] = {0x01};
/* RFC 8613 C.4 protected request (client sender ID empty, SSN 20) */
static const uint8_t c4[] = {0x44, 0x02, 0x5d, 0x1f, 0x00, 0x00, 0x39, 0x74, 0x39, 0x6c, 0x6f, 0x63,
                             0x61, 0x6c, 0x68, 0x6f, 0x73, 0x74, 0x62, 0x09, 0x14, 0xff, 0x61, 0x2f,
                             0x10, 0x92, 0xf1, 0x77, 0x6f, 0x1c, 0x16, 0x68, 0xb3, 0x82, 0x5e};

static struct oscore_context client0, server0;
static struct oscore_binding c4_binding;
static int ready;

static void setup(void)
{
    if (oscore_context_init_edhoc(&client0, edhoc_crypto_openssl(), secret, 16, salt, 8, NULL, 0,
                                  id_server, 1, EDHOC_COSE_AES_CCM_16_64_128,
                                  EDHOC_COSE_SHA256) != 0 ||
        oscore_context_init_edhoc(&server0, edhoc_crypto_openssl(), secret, 16, salt, 8, id_server,
                                  1, NULL, 0, EDHOC_COSE_AES_CCM_16_64_128,
                                  EDHOC_COSE_SHA256) != 0 ||
        oscore_binding_from_request(&c4_binding, c4, sizeof c4) != 0)
        __builtin_trap();
    ready = 1;
}

static void check_len(long n, size_t cap)
{
    if (n > (long)cap)
        __builtin_trap();
}

static void check_protected(long n, size_t in_len)
{
    if (n > 0 && (size_t)n > in_len + OSCORE_MAX_OVERHEAD)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready)
        setup();
    static uint8_t out[4096], back[4096];
    struct oscore_context client = client0, server = server0;
    struct oscore_binding b, cb = c4_binding;

    long n = oscore_unprotect_request(&server, data, size, out, sizeof out, &b);
    check_len(n, sizeof out);
    check_len(n, size);
    if (n < 0) {
        uint8_t err[300];
        check_len(oscore_error_response((int)n, data, size, err, sizeof err), sizeof err);
    }
    n = oscore_unprotect_response(&client, &cb, data, size, out, sizeof out);
    check_len(n, sizeof out);
    check_len(n, size);

    /* protect -> unprotect gives the original message back */
    struct coap_msg m;
    if (edhoc_coap_msg_parse(data, size, &m) != 0 || m.code == COAP_CODE_EMPTY)
        return 0;
    bool split = edhoc_coap_msg_find_option(&m, COAP_OPT_PROXY_URI) != NULL;
    if (edhoc_coap_code_is_request(m.code)) {
        client = client0;
        server = server0;
        n = oscore_protect_request(&client, data, size, out, sizeof out, &cb);
        check_len(n, sizeof out);
        check_protected(n, size);
        if (n > 0) {
            long k = oscore_unprotect_request(&server, out, (size_t)n, back, sizeof back, &b);
            if (k < 0 || (!split && ((size_t)k != size || memcmp(back, data, size) != 0)))
                __builtin_trap();
        }
    } else {
        client = client0;
        server = server0;
        if (oscore_unprotect_request(&server, c4, sizeof c4, back, sizeof back, &b) < 0)
            __builtin_trap();
        cb = c4_binding;
        n = oscore_protect_response(&server, &b, data, size, size & 1, out, sizeof out);
        check_len(n, sizeof out);
        check_protected(n, size);
        bool observe = edhoc_coap_msg_find_option(&m, COAP_OPT_OBSERVE) != NULL;
        if (n > 0 && !observe) {
            long k = oscore_unprotect_response(&client, &cb, out, (size_t)n, back, sizeof back);
            if (k < 0 || (size_t)k != size || memcmp(back, data, size) != 0)
                __builtin_trap();
        }
    }
    return 0;
}
