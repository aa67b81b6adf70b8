/*
 * OSCORE context files (src/oscore/oscore_config.c): the configuration
 * parser, and a failure that leaves no secret in the error text.
 */
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

/* ---- configuration ---- */
static void test_config_parse(void **state)
{
    (void)state;
    const char *text = "# C.1 client\n"
                       "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                       "master_salt,hex,\"9e7ca92223786340\"\r\n"
                       "\n"
                       "sender_id,hex,\"\"\n"
                       "recipient_id,hex,01\n"
                       "replay_window,integer,30\n"
                       "aead_alg,text,\"AES-CCM-16-64-128\"\n"
                       "hkdf_alg,integer,-10\n"
                       "ssn_freq,integer,8\n"
                       "rfc8613_b_1_2,bool,true\n";
    struct oscore_config cfg;
    struct oscore_config_error err;
    assert_int_equal(oscore_config_parse(text, strlen(text), &cfg, &err), 0);
    assert_int_equal(cfg.master_secret_len, 16);
    assert_int_equal(cfg.sender_id_len, 0);
    assert_int_equal(cfg.recipient_id_len, 1);
    assert_int_equal(cfg.replay_window, 30);
    assert_int_equal(cfg.ssn_freq, 8);
    assert_int_equal(cfg.aead_alg, 10);
    assert_int_equal(cfg.hkdf_alg, EDHOC_COSE_SHA256);
    struct oscore_context c;
    assert_int_equal(oscore_context_init_config(&c, test_backend(), &cfg), 0);
    const uint8_t *p;
    oscore_context_sender_key(&c, &p);
    uint8_t want[16];
    vec_hex(vec_object(appc, "C.1.1"), "sender_key", want, sizeof want);
    assert_memory_equal(p, want, 16);

    /* libcoap's example files (ascii IDs, complex recipient) */
    const char *complex = "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                          "sender_id,ascii,\"client\"\n"
                          "aead_alg,integer,30\n"
                          "hkdf_alg,text,\"HKDF-SHA-384\"\n"
                          "complex_recipient,config,'\n"
                          "# Recipient ID\n"
                          "recipient_id,ascii,\"server\"\n"
                          "silent_server,bool,true\n"
                          "'\n";
    assert_int_equal(oscore_config_parse(complex, strlen(complex), &cfg, &err), 0);
    assert_int_equal(cfg.recipient_id_len, 6);
    assert_memory_equal(cfg.recipient_id, "server", 6);
    assert_int_equal(cfg.aead_alg, 30);
    assert_int_equal(cfg.hkdf_alg, EDHOC_COSE_SHA384);

    static const struct {
        const char *text;
        unsigned line;
        const char *word; /* in the message */
    } bad[] = {
        {"master_secret,hex,0102\nsender_id,hex,01\nrecipient_id,hex,0\n", 3, "odd"},
        {"master_secret,hex,01zz\n", 1, "not hex"},
        {"# c\nmaster_secret,hex,01\nbogus,hex,01\n", 3, "unknown keyword"},
        {"master_secret,base64,01\n", 1, "unknown encoding"},
        {"master_secret\n", 1, "keyword,encoding,value"},
        {"master_secret,integer,5\n", 1, "hex or ascii"},
        {"master_secret,hex,01\nreplay_window,integer,100\n", 2, "out of range"},
        {"master_secret,hex,01\nreplay_window,integer,3x\n", 2, "not an integer"},
        {"master_secret,hex,01\naead_alg,text,\"AES-XYZ\"\n", 2, "unsupported"},
        {"master_secret,hex,01\naead_alg,integer,99\n", 2, "unsupported"},
        {"master_secret,hex,01\nhkdf_alg,integer,-11\n", 2, "unsupported"},
        {"master_secret,hex,01\nsender_id,hex,0102030405060708\n", 2, "longer"},
        {"master_secret,hex,01\nrecipient_id,hex,01\nrecipient_id,hex,02\n", 3,
         "second recipient_id"},
        {"master_secret,hex,01\nbreak_sender_key,bool,true\n", 2, "only false"},
        {"master_secret,hex,01\nrfc8613_b_2,bool,maybe\n", 2, "true or false"},
        {"master_secret,hex,01\nsilent_server,bool,maybe\n", 2, "true or false"},
        {"master_secret,hex,01\ncomplex_sender,config,'\nsender_id,hex,01\n", 2, "not closed"},
        {"master_secret,hex,01\n'\n", 2, "closing"},
        {"master_secret,hex,01\nsender_id,hex,01\n", 0, "recipient_id missing"},
        {"sender_id,hex,01\nrecipient_id,hex,02\n", 0, "master_secret missing"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = oscore_config_parse(bad[i].text, strlen(bad[i].text), &cfg, &err);
        if (rc != OSCORE_ERR_CONFIG || err.line != bad[i].line || !strstr(err.message, bad[i].word))
            fail_msg("config %zu: rc %d line %u '%s'", i, rc, err.line, err.message);
    }
}

/* A configuration refused on a late line must not leave the master secret
 * it already read in the caller's struct, and an error about a secret's
 * encoding must not quote the secret. */
static void test_config_failure_leaves_no_secret(void **state)
{
    (void)state;
    struct oscore_config cfg;
    struct oscore_config_error err;
    static const char late[] = "master_secret,hex,0102030405060708\n"
                               "sender_id,hex,01\nrecipient_id,hex,02\nbogus,hex,01\n";
    memset(&cfg, 0xee, sizeof cfg);
    assert_int_equal(oscore_config_parse(late, strlen(late), &cfg, &err), OSCORE_ERR_CONFIG);
    assert_int_equal(err.line, 4);
    static const uint8_t zero[sizeof cfg.master_secret] = {0};
    assert_memory_equal(cfg.master_secret, zero, sizeof cfg.master_secret);
    assert_int_equal(cfg.master_secret_len, 0);

    static const char bad_hex[] = "master_secret,hex,c0ffee0badc0de0fzz\n";
    assert_int_equal(oscore_config_parse(bad_hex, strlen(bad_hex), &cfg, &err), OSCORE_ERR_CONFIG);
    assert_non_null(strstr(err.message, "not hex"));
    assert_null(strstr(err.message, "c0ffee"));
    assert_non_null(strstr(err.message, "digit 17"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_parse),
        cmocka_unit_test(test_config_failure_leaves_no_secret),
    };
    int failed = cmocka_run_group_tests_name("openssl", tests, setup, NULL);
    test_backend = edhoc_crypto_sodium;
    test_backend = edhoc_crypto_auto;
    return failed;
}
