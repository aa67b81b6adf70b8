/* The helpers of oscore_test_common.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "edhoc/coap_msg.h"
#include "edhoc/crypto.h"
#include "edhoc/oscore.h"
#include "vectors.h"

#include "oscore_test_common.h"

const struct edhoc_crypto_ops *(*test_backend)(void) = edhoc_crypto_openssl;

struct vec_scope appc, trace2;

void ctx_from_vector(struct oscore_context *c, const char *name)
{
    struct vec_scope v = vec_object(appc, name);
    uint8_t ms[64], salt[64], sid[8], rid[8], idc[16];
    size_t ms_len = vec_hex(v, "master_secret", ms, sizeof ms);
    size_t salt_len = vec_has(v, "master_salt") ? vec_hex(v, "master_salt", salt, sizeof salt) : 0;
    size_t sid_len = vec_hex(v, "sender_id", sid, sizeof sid);
    size_t rid_len = vec_hex(v, "recipient_id", rid, sizeof rid);
    bool has_idc = vec_has(v, "id_context");
    size_t idc_len = has_idc ? vec_hex(v, "id_context", idc, sizeof idc) : 0;
    struct oscore_params p = {
        .aead_alg = EDHOC_COSE_AES_CCM_16_64_128,
        .hkdf_alg = EDHOC_COSE_SHA256,
        .master_secret = ms,
        .master_secret_len = ms_len,
        .master_salt = salt_len ? salt : NULL,
        .master_salt_len = salt_len,
        .id_context = has_idc ? idc : NULL,
        .id_context_len = idc_len,
        .sender_id = sid,
        .sender_id_len = sid_len,
        .recipient_id = rid,
        .recipient_id_len = rid_len,
    };
    assert_int_equal(oscore_context_init(c, test_backend(), &p), 0);
}

void assert_vec_bytes(struct vec_scope v, const char *key, const uint8_t *got, size_t got_len)
{
    uint8_t want[BUF];
    size_t n = vec_hex(v, key, want, sizeof want);
    if (n != got_len || memcmp(want, got, n) != 0) {
        char hex[2 * BUF + 1];
        hex_encode(got, got_len, hex);
        fail_msg("%s differs: got %s", key, hex);
    }
}

void make_pair(struct oscore_context *cli, struct oscore_context *srv, int aead, int hash)
{
    static const uint8_t ms[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
    static const uint8_t salt[8] = {0x9e, 0x7c, 0xa9, 0x22, 0x23, 0x78, 0x63, 0x40};
    static const uint8_t a[1] = {0x01}, b[2] = {0x02, 0x03};
    struct oscore_params p = {
        .aead_alg = aead,
        .hkdf_alg = hash,
        .master_secret = ms,
        .master_secret_len = sizeof ms,
        .master_salt = salt,
        .master_salt_len = sizeof salt,
        .sender_id = a,
        .sender_id_len = 1,
        .recipient_id = b,
        .recipient_id_len = 2,
    };
    assert_int_equal(oscore_context_init(cli, test_backend(), &p), 0);
    p.sender_id = b;
    p.sender_id_len = 2;
    p.recipient_id = a;
    p.recipient_id_len = 1;
    assert_int_equal(oscore_context_init(srv, test_backend(), &p), 0);
}

size_t sample_request(uint8_t *out, size_t payload_len)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = payload_len ? COAP_CODE_POST : COAP_CODE_GET;
    m.mid = 0x1234;
    m.token_len = 2;
    m.token[0] = 0xa1;
    m.token[1] = 0xb2;
    static uint8_t payload[1200];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7 + 1);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)"sensor", 6),
                     0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_URI_PATH, (const uint8_t *)"temp", 4),
                     0);
    assert_int_equal(
        edhoc_coap_msg_add_option(&m, COAP_OPT_URI_HOST, (const uint8_t *)"example.com", 11), 0);
    assert_int_equal(
        edhoc_coap_msg_add_option(&m, COAP_OPT_URI_QUERY, (const uint8_t *)"unit=c", 6), 0);
    m.payload = payload_len ? payload : NULL;
    m.payload_len = payload_len;
    long n = edhoc_coap_msg_encode(&m, out, BUF);
    assert_true(n > 0);
    return (size_t)n;
}

size_t sample_response(uint8_t *out, const uint8_t *payload, size_t payload_len, bool observe,
                       uint32_t obs_value)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_ACK;
    m.code = COAP_CODE_CONTENT;
    m.mid = 0x1234;
    m.token_len = 2;
    m.token[0] = 0xa1;
    m.token[1] = 0xb2;
    uint8_t cf[1] = {0};
    uint8_t ov[4];
    size_t ovl = edhoc_coap_uint_encode(obs_value, ov);
    assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_CONTENT_FORMAT, cf, 1), 0);
    if (observe)
        assert_int_equal(edhoc_coap_msg_add_option(&m, COAP_OPT_OBSERVE, ov, ovl), 0);
    m.payload = payload;
    m.payload_len = payload_len;
    long n = edhoc_coap_msg_encode(&m, out, BUF);
    assert_true(n > 0);
    return (size_t)n;
}

int setup(void **state)
{
    (void)state;
    /* Once: main runs the group once per backend. */
    static bool loaded;
    if (!loaded) {
        appc = vec_load("rfc8613-appendix-c.json");
        trace2 = vec_load("rfc9529-trace2.json");
        loaded = true;
    }
    return 0;
}
