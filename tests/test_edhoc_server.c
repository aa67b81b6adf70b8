/*
 * The responder engine (src/coap/edhoc_coap.c) driven with message bytes,
 * as a transport would: the crypto calls one handshake costs.
 *
 * A method 3 handshake that ends in an OSCORE context needs, on the
 * responder's side, exactly (RFC 9528 Sections 4.1, 5.3, 5.4, A.1; RFC
 * 8613 Section 3.2.1):
 *   hash        4: H(message_1), TH_2, TH_3, TH_4
 *   public key  1: G_Y from the ephemeral private key
 *   ECDH        3: G_XY, G_RX (R static), G_IY (I static)
 *   Extract     4: PRK_2e, PRK_3e2m, PRK_4e3m, and the OSCORE HKDF-Extract
 *                  of the Master Secret with the Master Salt
 *   Expand     14: KEYSTREAM_2, SALT_3e2m, MAC_2, K_3, IV_3, SALT_4e3m,
 *                  MAC_3, PRK_out, PRK_exporter, OSCORE Master Secret and
 *                  Master Salt (one PRK_exporter for both), and the OSCORE
 *                  Sender Key, Recipient Key and Common IV
 *   AEAD        1: the decryption of CIPHERTEXT_3
 * The engine once derived the OSCORE parameters twice (to decide whether
 * OSCORE follows, then to make the context) and PRK_exporter once per
 * exporter output: 19 Expand calls. A call more than the key schedule
 * needs is CPU every handshake pays.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "edhoc/coap_msg.h"
#include "edhoc/cred.h"
#include "edhoc/crypto.h"
#include "edhoc/edhoc.h"
#include "edhoc/transport.h"

/* ---- Counting crypto: every call goes to the default backend ---- */

struct counts {
    unsigned hash, extract, expand, encrypt, decrypt, keygen, public_key, ecdh, sign, verify;
};
static struct counts counted;
static const struct edhoc_crypto_ops *real_ops;

static int c_random(void *ctx, uint8_t *out, size_t len)
{
    (void)ctx;
    return real_ops->random(real_ops->rng_ctx, out, len);
}
static int c_hash(int a, const uint8_t *m, size_t l, uint8_t *o)
{
    counted.hash++;
    return real_ops->hash(a, m, l, o);
}
static int c_extract(int a, const uint8_t *s, size_t sl, const uint8_t *i, size_t il, uint8_t *p)
{
    counted.extract++;
    return real_ops->hkdf_extract(a, s, sl, i, il, p);
}
static int c_expand(int a, const uint8_t *p, size_t pl, const uint8_t *i, size_t il, uint8_t *o,
                    size_t ol)
{
    counted.expand++;
    return real_ops->hkdf_expand(a, p, pl, i, il, o, ol);
}
static int c_encrypt(int a, const uint8_t *k, const uint8_t *n, const uint8_t *ad, size_t adl,
                     const uint8_t *pt, size_t ptl, uint8_t *ct)
{
    counted.encrypt++;
    return real_ops->aead_encrypt(a, k, n, ad, adl, pt, ptl, ct);
}
static int c_decrypt(int a, const uint8_t *k, const uint8_t *n, const uint8_t *ad, size_t adl,
                     const uint8_t *ct, size_t ctl, uint8_t *pt)
{
    counted.decrypt++;
    return real_ops->aead_decrypt(a, k, n, ad, adl, ct, ctl, pt);
}
static int c_keygen(int c, bool e, uint8_t *priv, uint8_t *pub, size_t *pl)
{
    counted.keygen++;
    return real_ops->keygen(c, e, priv, pub, pl);
}
static int c_public_key(int c, bool e, const uint8_t *priv, uint8_t *pub, size_t *pl)
{
    counted.public_key++;
    return real_ops->public_key(c, e, priv, pub, pl);
}
static int c_ecdh(int c, const uint8_t *priv, const uint8_t *pub, size_t pl, uint8_t *sh)
{
    counted.ecdh++;
    return real_ops->ecdh(c, priv, pub, pl, sh);
}
static int c_sign(int c, const uint8_t *priv, const uint8_t *m, size_t ml, uint8_t *sig)
{
    counted.sign++;
    return real_ops->sign(c, priv, m, ml, sig);
}
static int c_verify(int c, const uint8_t *pub, size_t pl, const uint8_t *m, size_t ml,
                    const uint8_t *sig, size_t sl)
{
    counted.verify++;
    return real_ops->verify(c, pub, pl, m, ml, sig, sl);
}
static void c_forget(const uint8_t *k, size_t kl)
{
    if (real_ops->aead_forget)
        real_ops->aead_forget(k, kl);
}

static struct edhoc_crypto_ops counting = {
    .name = "counting",
    .random = c_random,
    .hash = c_hash,
    .hkdf_extract = c_extract,
    .hkdf_expand = c_expand,
    .aead_encrypt = c_encrypt,
    .aead_decrypt = c_decrypt,
    .keygen = c_keygen,
    .public_key = c_public_key,
    .ecdh = c_ecdh,
    .sign = c_sign,
    .verify = c_verify,
    .aead_forget = c_forget,
};

/* ---- Both sides: the RFC 9529 trace 2 credentials (method 3) ---- */

static struct edhoc_cred cred_r, cred_i;
static struct edhoc_key key_r, key_i;
static struct edhoc_cred_store store;
static const int suites[] = {2};
static struct edhoc_config cfg_r, cfg_i;

static int resolve(void *ctx, const uint8_t *id_cred, size_t len, const struct edhoc_cred **out)
{
    static struct edhoc_cred found;
    (void)ctx;
    int rc = edhoc_cred_store_resolve(&store, id_cred, len, &found);
    if (rc == 0)
        *out = &found;
    return rc;
}

static const struct edhoc_config *select_config(void *user, int method, int suite,
                                                edhoc_cred_resolver *r, void **r_ctx)
{
    (void)user;
    (void)suite;
    if (method != 3)
        return NULL;
    *r = resolve;
    *r_ctx = NULL;
    return &cfg_r;
}

static int setup(void **state)
{
    (void)state;
    real_ops = edhoc_crypto_default();
    counting.rng_ctx = NULL;
    if (edhoc_demo_trace_cred(2, 'R', &cred_r, &key_r) ||
        edhoc_demo_trace_cred(2, 'I', &cred_i, &key_i))
        return -1;
    edhoc_cred_store_init(&store);
    edhoc_demo_trust(&store);
    cfg_r.ops = &counting;
    cfg_r.suites = suites;
    cfg_r.n_suites = 1;
    cfg_r.cred = &cred_r;
    cfg_r.key = &key_r;
    cfg_i = cfg_r;
    cfg_i.ops = real_ops; /* only the responder's calls are counted */
    cfg_i.method = 3;
    cfg_i.cred = &cred_i;
    cfg_i.key = &key_i;
    return 0;
}

/* POST /.well-known/edhoc, CON, Message ID mid, with the payload. */
static size_t post_edhoc(uint16_t mid, const uint8_t *payload, size_t len, uint8_t *out, size_t cap)
{
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_POST;
    m.mid = mid;
    assert_int_equal(coap_msg_add_option(&m, 11, (const uint8_t *)".well-known", 11), 0);
    assert_int_equal(coap_msg_add_option(&m, 11, (const uint8_t *)"edhoc", 5), 0);
    m.payload = payload;
    m.payload_len = len;
    long n = coap_msg_encode(&m, out, cap);
    assert_true(n > 0);
    return (size_t)n;
}

static void test_handshake_crypto_calls(void **state)
{
    (void)state;
    struct edhoc_server_config sc = {
        .ops = &counting,
        .select = select_config,
        .max_pending = 4,
        .pending_timeout_s = 5,
    };
    struct edhoc_server *srv = edhoc_server_new(&sc);
    assert_non_null(srv);

    struct edhoc_session s_i;
    assert_int_equal(edhoc_session_init(&s_i, EDHOC_INITIATOR, &cfg_i), 0);
    static const uint8_t c_i = 0x0e;
    assert_int_equal(edhoc_session_set_conn_id(&s_i, &c_i, 1), 0);
    uint8_t m1[512], req[1024], resp[2048], m3[512];
    /* RFC 9528 Appendix A.2: message_1 is prefixed with CBOR true. */
    m1[0] = 0xf5;
    int n1 = edhoc_initiator_prepare_message_1(&s_i, m1 + 1, sizeof m1 - 1);
    assert_true(n1 > 0);

    memset(&counted, 0, sizeof counted);
    size_t rl = post_edhoc(1, m1, (size_t)n1 + 1, req, sizeof req);
    long n = edhoc_server_handle(srv, NULL, "192.0.2.1:5683", req, rl, resp, sizeof resp);
    assert_true(n > 4);
    struct coap_msg r;
    assert_int_equal(coap_msg_parse(resp, (size_t)n, &r), 0);
    assert_int_equal(r.code, 0x44); /* 2.04 with message_2 */

    struct edhoc_received rx_i;
    memset(&rx_i, 0, sizeof rx_i);
    assert_int_equal(edhoc_initiator_handle_message_2(&s_i, r.payload, r.payload_len, &rx_i,
                                                      resolve, NULL),
                     0);
    /* message_3 with C_R in front (Appendix A.2). */
    size_t c_r_len = 0;
    const uint8_t *c_r = edhoc_session_peer_conn_id(&s_i, &c_r_len);
    assert_non_null(c_r);
    long cl = edhoc_coap_cid_encode(c_r, c_r_len, m3, sizeof m3);
    assert_true(cl > 0);
    int n3 = edhoc_initiator_prepare_message_3(&s_i, m3 + cl, sizeof m3 - (size_t)cl);
    assert_true(n3 > 0);
    rl = post_edhoc(2, m3, (size_t)cl + (size_t)n3, req, sizeof req);
    n = edhoc_server_handle(srv, NULL, "192.0.2.1:5683", req, rl, resp, sizeof resp);
    assert_true(n >= 4);
    assert_int_equal(coap_msg_parse(resp, (size_t)n, &r), 0);
    assert_int_equal(r.code, 0x44); /* 2.04: message_3 accepted */
    struct edhoc_server_stats st;
    edhoc_server_get_stats(srv, &st);
    assert_int_equal(st.handshakes_ok, 1);

    print_message("responder crypto calls: hash %u, public key %u, ECDH %u, extract %u, "
                  "expand %u, AEAD decrypt %u, encrypt %u, keygen %u, sign %u, verify %u\n",
                  counted.hash, counted.public_key, counted.ecdh, counted.extract,
                  counted.expand, counted.decrypt, counted.encrypt, counted.keygen, counted.sign,
                  counted.verify);
    assert_int_equal(counted.hash, 4);
    assert_int_equal(counted.public_key + counted.keygen, 1);
    assert_int_equal(counted.ecdh, 3);
    assert_int_equal(counted.extract, 4);
    assert_int_equal(counted.expand, 14);
    assert_int_equal(counted.decrypt, 1);
    assert_int_equal(counted.encrypt, 0); /* method 3: no signature, message_2 by keystream */
    assert_int_equal(counted.sign + counted.verify, 0);
    edhoc_session_wipe(&s_i);
    edhoc_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake_crypto_calls),
    };
    return cmocka_run_group_tests_name("edhoc_server", tests, setup, NULL);
}
