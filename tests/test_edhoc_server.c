/*
 * The responder engine (src/server/) driven with message bytes,
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
#include "edhoc/oscore.h"
#include "edhoc/state.h"
#include "edhoc/transport.h"

#include "net_test_util.h"
#include "demo_creds.h"

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
    assert_int_equal(edhoc_coap_msg_add_option(&m, 11, (const uint8_t *)".well-known", 11), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, 11, (const uint8_t *)"edhoc", 5), 0);
    m.payload = payload;
    m.payload_len = len;
    long n = edhoc_coap_msg_encode(&m, out, cap);
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
    assert_int_equal(edhoc_coap_msg_parse(resp, (size_t)n, &r), 0);
    assert_int_equal(r.code, 0x44); /* 2.04 with message_2 */

    struct edhoc_received rx_i;
    memset(&rx_i, 0, sizeof rx_i);
    assert_int_equal(
        edhoc_initiator_handle_message_2(&s_i, r.payload, r.payload_len, &rx_i, resolve, NULL), 0);
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
    assert_int_equal(edhoc_coap_msg_parse(resp, (size_t)n, &r), 0);
    assert_int_equal(r.code, 0x44); /* 2.04: message_3 accepted */
    struct edhoc_server_stats st;
    edhoc_server_get_stats(srv, &st);
    assert_int_equal(st.handshakes_ok, 1);

    print_message("responder crypto calls: hash %u, public key %u, ECDH %u, extract %u, "
                  "expand %u, AEAD decrypt %u, encrypt %u, keygen %u, sign %u, verify %u\n",
                  counted.hash, counted.public_key, counted.ecdh, counted.extract, counted.expand,
                  counted.decrypt, counted.encrypt, counted.keygen, counted.sign, counted.verify);
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

/* ---- Messages naming a handshake's C_R from elsewhere ---- */

/* The session of one initiator and its message_3 with C_R in front
 * (Appendix A.2), once message_2 is in. */
struct initiator {
    struct edhoc_session s;
    uint8_t c_r[EDHOC_MAX_CONN_ID];
    size_t c_r_len;
    uint8_t m3[512];
    size_t m3_len;
};

/* message_1 from the initiator, message_2 into it, message_3 made. The
 * answer to message_1 is in resp/resp_len (n bytes). */
static void initiator_message_1(struct initiator *in, uint8_t *m1, size_t cap, size_t *m1_len)
{
    memset(in, 0, sizeof *in);
    assert_int_equal(edhoc_session_init(&in->s, EDHOC_INITIATOR, &cfg_i), 0);
    m1[0] = 0xf5;
    int n1 = edhoc_initiator_prepare_message_1(&in->s, m1 + 1, cap - 1);
    assert_true(n1 > 0);
    *m1_len = (size_t)n1 + 1;
}

static void initiator_message_3(struct initiator *in, const uint8_t *resp, size_t n)
{
    struct coap_msg r;
    assert_int_equal(edhoc_coap_msg_parse(resp, n, &r), 0);
    assert_int_equal(r.code, 0x44); /* 2.04 with message_2 */
    struct edhoc_received rx;
    memset(&rx, 0, sizeof rx);
    assert_int_equal(
        edhoc_initiator_handle_message_2(&in->s, r.payload, r.payload_len, &rx, resolve, NULL), 0);
    const uint8_t *c_r = edhoc_session_peer_conn_id(&in->s, &in->c_r_len);
    assert_non_null(c_r);
    memcpy(in->c_r, c_r, in->c_r_len);
    long cl = edhoc_coap_cid_encode(in->c_r, in->c_r_len, in->m3, sizeof in->m3);
    assert_true(cl > 0);
    int n3 = edhoc_initiator_prepare_message_3(&in->s, in->m3 + cl, sizeof in->m3 - (size_t)cl);
    assert_true(n3 > 0);
    in->m3_len = (size_t)cl + (size_t)n3;
}

/* A handshake of the engine with peer up to message_3 (not sent). */
static void engine_handshake(struct edhoc_server *srv, const char *peer, struct initiator *in)
{
    uint8_t m1[512], req[1024], resp[2048];
    size_t m1_len;
    initiator_message_1(in, m1, sizeof m1, &m1_len);
    size_t rl = post_edhoc(1, m1, m1_len, req, sizeof req);
    long n = edhoc_server_handle(srv, NULL, peer, req, rl, resp, sizeof resp);
    assert_true(n > 4);
    initiator_message_3(in, resp, (size_t)n);
}

/* POST payload (C_R in front) to the engine from peer; the answer's code,
 * its payload into pl/pl_len when given. */
static unsigned engine_post(struct edhoc_server *srv, const char *peer, const uint8_t *payload,
                            size_t len, uint8_t *pl, size_t *pl_len)
{
    uint8_t req[1024], resp[2048];
    size_t rl = post_edhoc(7, payload, len, req, sizeof req);
    long n = edhoc_server_handle(srv, NULL, peer, req, rl, resp, sizeof resp);
    assert_true(n >= 4);
    struct coap_msg r;
    assert_int_equal(edhoc_coap_msg_parse(resp, (size_t)n, &r), 0);
    if (pl) {
        assert_true(r.payload_len <= *pl_len);
        memcpy(pl, r.payload, r.payload_len);
        *pl_len = r.payload_len;
    }
    return r.code;
}

/* C_R, then an error message (ERR_CODE 1, "x") or a message_3 of 16 bytes
 * that decrypt under no key. */
static size_t forged(const struct initiator *in, bool error, uint8_t *out, size_t cap)
{
    long cl = edhoc_coap_cid_encode(in->c_r, in->c_r_len, out, cap);
    assert_true(cl > 0 && (size_t)cl + 17 <= cap);
    size_t o = (size_t)cl;
    if (error) {
        out[o++] = 0x01;
        out[o++] = 0x61;
        out[o++] = 'x';
    } else {
        out[o++] = 0x50;
        for (int i = 0; i < 16; i++)
            out[o++] = (uint8_t)(0xa5 ^ i);
    }
    return o;
}

static size_t pending_of(const struct edhoc_server *srv)
{
    struct edhoc_server_stats st;
    edhoc_server_get_stats(srv, &st);
    return st.pending;
}

#define PEER  "192.0.2.1:5683"
#define OTHER "198.51.100.7:40000"

/* RFC 9528 Section 9.7: "An attacker can also send faked message_2,
 * message_3, message_4, or error in an attempt to trick the receiving
 * party to send an error message and abort the EDHOC session. EDHOC
 * implementations MAY evaluate if a received message is likely to have
 * been forged by an attacker and ignore it without sending an error
 * message or aborting the EDHOC session." Pending handshakes were found by
 * C_R alone, so a forged error or a junk message_3 from any address ended
 * them. From the handshake's own address, a message_3 that fails still
 * ends it with an EDHOC error (Section 5.4.3: "If any processing step
 * fails, then the Responder MUST send an EDHOC error message back ..., and
 * the EDHOC session MUST be aborted"), and an error message still ends it
 * (Section 6, the Responder's WAIT_M3 -> ABORTED of Appendix I). */
static void test_forged_messages_keep_handshake(void **state)
{
    (void)state;
    struct edhoc_server_config sc = {
        .ops = real_ops,
        .select = select_config,
        .max_pending = 8,
        .pending_timeout_s = 60,
    };
    struct edhoc_server *srv = edhoc_server_new(&sc);
    assert_non_null(srv);
    struct initiator a, b, c, d;
    uint8_t msg[64], pl[256];
    size_t pl_len;

    engine_handshake(srv, PEER, &a);
    assert_int_equal(pending_of(srv), 1);
    /* From another address: 4.03 with a diagnostic, no EDHOC error message
     * (Section 6: its sender "MUST abort the EDHOC session"). */
    pl_len = sizeof pl;
    assert_int_equal(engine_post(srv, OTHER, msg, forged(&a, true, msg, sizeof msg), pl, &pl_len),
                     0x83);
    static const char err_diag[] = "error ignored: not from the handshake's address";
    assert_int_equal(pl_len, sizeof err_diag - 1);
    assert_memory_equal(pl, err_diag, pl_len);
    pl_len = sizeof pl;
    assert_int_equal(engine_post(srv, OTHER, msg, forged(&a, false, msg, sizeof msg), pl, &pl_len),
                     0x83);
    static const char m3_diag[] = "message_3 not verified, not from the handshake's address";
    assert_int_equal(pl_len, sizeof m3_diag - 1);
    assert_memory_equal(pl, m3_diag, pl_len);
    assert_int_equal(pending_of(srv), 1);
    /* Its own message_3 still completes it. */
    assert_int_equal(engine_post(srv, PEER, a.m3, a.m3_len, NULL, NULL), 0x44);
    assert_int_equal(pending_of(srv), 0);

    /* A message_3 that verifies completes from a new address: Appendix
     * A.2 correlates by C_R, and only the initiator can make it (a NAT
     * rebinding between message_2 and message_3). */
    engine_handshake(srv, PEER, &b);
    assert_int_equal(engine_post(srv, "203.0.113.9:1234", b.m3, b.m3_len, NULL, NULL), 0x44);
    assert_int_equal(pending_of(srv), 0);

    /* From its own address a junk message_3 ends it with an EDHOC error
     * message (4.00, Content-Format 64 application/edhoc+cbor-seq, ERR_CODE
     * 1), after which its C_R names nothing. */
    engine_handshake(srv, PEER, &c);
    pl_len = sizeof pl;
    assert_int_equal(engine_post(srv, PEER, msg, forged(&c, false, msg, sizeof msg), pl, &pl_len),
                     0x80);
    struct edhoc_error_info info;
    assert_int_equal(edhoc_error_message_parse(pl, pl_len, &info), 0);
    assert_int_equal(info.code, 1);
    static const char decrypt_text[] = "message_3: CIPHERTEXT_3 did not decrypt";
    if (info.text_len != sizeof decrypt_text - 1 || memcmp(info.text, decrypt_text, info.text_len))
        fail_msg("ERR_INFO: '%.*s'", (int)info.text_len, info.text);
    assert_int_equal(pending_of(srv), 0);
    pl_len = sizeof pl;
    assert_int_equal(engine_post(srv, PEER, c.m3, c.m3_len, pl, &pl_len), 0x80);
    assert_int_equal(edhoc_error_message_parse(pl, pl_len, &info), 0);
    assert_int_equal(info.text_len, strlen("unknown C_R"));
    assert_memory_equal(info.text, "unknown C_R", info.text_len);

    /* Its own error message ends it (2.04, as before). */
    engine_handshake(srv, PEER, &d);
    assert_int_equal(engine_post(srv, PEER, msg, forged(&d, true, msg, sizeof msg), NULL, NULL),
                     0x44);
    assert_int_equal(pending_of(srv), 0);

    struct edhoc_server_stats st;
    edhoc_server_get_stats(srv, &st);
    assert_int_equal(st.handshakes_ok, 2);
    assert_int_equal(st.handshakes_failed, 2);
    edhoc_session_wipe(&a.s);
    edhoc_session_wipe(&b.s);
    edhoc_session_wipe(&c.s);
    edhoc_session_wipe(&d.s);
    edhoc_server_free(srv);
}

/* A combined request (RFC 9668) while message_4 is required is refused
 * before message_3 is read ("message_4 cannot travel in the combined
 * flow", step 4): from another address, without ending the handshake its
 * kid names. */
static void test_forged_combined_request_keeps_handshake(void **state)
{
    (void)state;
    struct edhoc_server_config sc = {
        .ops = real_ops,
        .select = select_config,
        .max_pending = 8,
        .pending_timeout_s = 60,
        .message_4 = true,
    };
    struct edhoc_server *srv = edhoc_server_new(&sc);
    assert_non_null(srv);
    struct initiator a;
    engine_handshake(srv, PEER, &a);
    /* POST, OSCORE option (9): flags 0x09 (kid present, Partial IV of one
     * byte), Partial IV 0, kid = C_R; EDHOC option (21), empty; payload a
     * byte string of 16 bytes and one byte of OSCORE ciphertext. */
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_POST;
    m.mid = 9;
    uint8_t opt[2 + EDHOC_MAX_CONN_ID] = {0x09, 0x00};
    memcpy(opt + 2, a.c_r, a.c_r_len);
    assert_int_equal(edhoc_coap_msg_add_option(&m, 9, opt, 2 + a.c_r_len), 0);
    assert_int_equal(edhoc_coap_msg_add_option(&m, 21, NULL, 0), 0);
    uint8_t payload[18] = {0x50};
    m.payload = payload;
    m.payload_len = sizeof payload;
    uint8_t req[256], resp[512];
    long rl = edhoc_coap_msg_encode(&m, req, sizeof req);
    assert_true(rl > 0);
    long n = edhoc_server_handle(srv, NULL, OTHER, req, (size_t)rl, resp, sizeof resp);
    struct coap_msg r;
    assert_true(n >= 4);
    assert_int_equal(edhoc_coap_msg_parse(resp, (size_t)n, &r), 0);
    assert_int_equal(r.code, 0x83);
    assert_int_equal(pending_of(srv), 1);
    /* From its own address: refused, and the handshake ends. */
    n = edhoc_server_handle(srv, NULL, PEER, req, (size_t)rl, resp, sizeof resp);
    assert_true(n >= 4);
    assert_int_equal(edhoc_coap_msg_parse(resp, (size_t)n, &r), 0);
    assert_int_equal(r.code, 0x80);
    assert_int_equal(pending_of(srv), 0);
    edhoc_session_wipe(&a.s);
    edhoc_server_free(srv);
}

/* ---- A sequence-number mark that cannot be stored ---- */

static char logged[16384];
static size_t logged_len;

static void capture_log(void *user, int level, const char *line)
{
    (void)user;
    (void)level;
    int n = snprintf(logged + logged_len, sizeof logged - logged_len, "%s\n", line);
    if (n > 0 && logged_len + (size_t)n < sizeof logged)
        logged_len += (size_t)n;
}

static void parse_conf(const char *text, struct oscore_config *cfg)
{
    struct oscore_config_error err;
    if (oscore_config_parse(text, strlen(text), cfg, &err))
        fail_msg("context line %u: %s", err.line, err.message);
}

/* The responder's Echo challenge after a restart (RFC 8613 Appendix
 * B.1.2) is a protected response with a Partial IV of the server's, so it
 * needs a sequence-number mark above it on disk first (Appendix B.1.1).
 * When that write fails (a full disk, the database writer gone: here the
 * writer process of the workers' state, killed) nothing protected may
 * go. It was answered "4.00 Decryption failed", which blames the client's
 * request, and logged "Echo challenge sent". It is 5.03 Service
 * Unavailable with Max-Age (RFC 7252 Section 5.9.3.4: "the number of
 * seconds after which to retry"), and the log says the challenge was not
 * sent and why, with the store's error. */
static void test_echo_challenge_mark_not_stored(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    char dir[300];
    snprintf(dir, sizeof dir, "%s/edhoc-echo-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    pid_t writer = fork();
    assert_true(writer >= 0);
    if (writer == 0) {
        close(sv[0]);
        struct edhoc_state_db *wdb = NULL;
        char why[200];
        if (edhoc_state_open(dir, &wdb, why, sizeof why))
            _exit(1);
        struct edhoc_state_server *ws = edhoc_state_server_new(wdb);
        if (!ws || edhoc_state_server_add(ws, sv[1]))
            _exit(1);
        for (;;)
            edhoc_state_server_run(ws, 1000);
    }
    close(sv[1]);
    struct edhoc_state_db *db = NULL;
    assert_int_equal(edhoc_state_connect(sv[0], &db), 0);

    struct oscore_config server_cfg, client_cfg;
    parse_conf("master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
               "master_salt,hex,\"9e7ca92223786340\"\n"
               "sender_id,hex,\"01\"\nrecipient_id,hex,\"\"\n",
               &server_cfg);
    parse_conf("master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
               "master_salt,hex,\"9e7ca92223786340\"\n"
               "sender_id,hex,\"\"\nrecipient_id,hex,\"01\"\n",
               &client_cfg);
    struct edhoc_server_config sc = {
        .ops = real_ops,
        .select = select_config,
        .max_pending = 4,
        .pending_timeout_s = 5,
        .db = db,
        .log = capture_log,
    };
    /* The first start stores the context's row; the second resumes it
     * above its mark, so its replay window is unknown (Appendix B.1.2). */
    struct edhoc_server *srv = edhoc_server_new(&sc);
    assert_non_null(srv);
    assert_int_equal(edhoc_server_add_static_context(srv, &server_cfg, "test"), 0);
    edhoc_server_free(srv);
    srv = edhoc_server_new(&sc);
    assert_non_null(srv);
    assert_int_equal(edhoc_server_add_static_context(srv, &server_cfg, "test"), 0);

    struct oscore_context client;
    assert_int_equal(oscore_context_init_config(&client, real_ops, &client_cfg), 0);
    /* CON GET, MID 0x1234, token a1b2c3, Uri-Path "time". */
    static const uint8_t get[] = {0x43, 0x01, 0x12, 0x34, 0xa1, 0xb2,
                                  0xc3, 0xb4, 't',  'i',  'm',  'e'};
    uint8_t req[256], resp[512];
    struct oscore_binding b;
    long rl = oscore_protect_request(&client, get, sizeof get, req, sizeof req, &b);
    assert_true(rl > 0);

    kill(writer, SIGKILL);
    assert_int_equal(waitpid(writer, NULL, 0), writer);
    logged_len = 0;
    logged[0] = '\0';
    long n = edhoc_server_handle(srv, NULL, PEER, req, (size_t)rl, resp, sizeof resp);
    assert_true(n >= 4);
    struct coap_msg r;
    assert_int_equal(edhoc_coap_msg_parse(resp, (size_t)n, &r), 0);
    assert_int_equal(r.code, 0xa3); /* 5.03 */
    assert_int_equal(r.type, COAP_TYPE_ACK);
    const struct coap_option *max_age = edhoc_coap_msg_find_option(&r, COAP_OPT_MAX_AGE);
    assert_non_null(max_age);
    assert_int_equal(max_age->len, 1);
    assert_int_equal(max_age->value[0], 5);
    assert_null(edhoc_coap_msg_find_option(&r, COAP_OPT_OSCORE));
    if (!strstr(logged, "cannot store the sequence number mark: cannot create, open or write "
                        "the state database\n") ||
        !strstr(logged, "OSCORE peer=" PEER ": the Echo challenge not sent: the sequence-number "
                        "mark its Partial IV needs cannot be stored (cannot create, open or "
                        "write the state database); answered 5.03 with Max-Age 5\n") ||
        strstr(logged, "Echo challenge sent"))
        fail_msg("log:\n%s", logged);

    oscore_context_wipe(&client);
    edhoc_server_free(srv);
    edhoc_state_close(db);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static int first_reports, first_error;

static void on_first_request(void *user, const struct edhoc_server_oscore_first *f)
{
    (void)user;
    first_reports++;
    first_error = f->error;
}

/* The interop record of a context's first OSCORE request (the oscore
 * callback) judges the device: a request under its kid (public: C_R) that
 * does not verify and comes from another address took the place of the
 * device's own, with the verdict "the OSCORE contexts differ". It is
 * reported only from the handshake's address. */
static void test_first_request_record_from_elsewhere(void **state)
{
    (void)state;
    struct edhoc_server_config sc = {
        .ops = real_ops,
        .select = select_config,
        .max_pending = 8,
        .pending_timeout_s = 60,
        .oscore = on_first_request,
    };
    struct edhoc_server *srv = edhoc_server_new(&sc);
    assert_non_null(srv);
    struct initiator a;
    engine_handshake(srv, PEER, &a);
    assert_int_equal(engine_post(srv, PEER, a.m3, a.m3_len, NULL, NULL), 0x44);
    /* CON GET with an OSCORE option (kid = C_R, Partial IV 0) and 9 bytes
     * of ciphertext that verify under no key (RFC 8613 Section 8.2 step 6
     * fails). */
    struct coap_msg m;
    memset(&m, 0, sizeof m);
    m.type = COAP_TYPE_CON;
    m.code = COAP_CODE_POST;
    m.mid = 11;
    uint8_t opt[2 + EDHOC_MAX_CONN_ID] = {0x09, 0x00};
    memcpy(opt + 2, a.c_r, a.c_r_len);
    assert_int_equal(edhoc_coap_msg_add_option(&m, 9, opt, 2 + a.c_r_len), 0);
    static const uint8_t junk[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    m.payload = junk;
    m.payload_len = sizeof junk;
    uint8_t req[256], resp[512];
    long rl = edhoc_coap_msg_encode(&m, req, sizeof req);
    assert_true(rl > 0);
    first_reports = 0;
    long n = edhoc_server_handle(srv, NULL, OTHER, req, (size_t)rl, resp, sizeof resp);
    assert_true(n >= 4);
    assert_int_equal(resp[1], 0x80); /* 4.00 Decryption failed, Section 8.2 */
    assert_int_equal(first_reports, 0);
    n = edhoc_server_handle(srv, NULL, PEER, req, (size_t)rl, resp, sizeof resp);
    assert_true(n >= 4);
    assert_int_equal(first_reports, 1);
    assert_int_equal(first_error, OSCORE_ERR_DECRYPT);
    edhoc_session_wipe(&a.s);
    edhoc_server_free(srv);
}

/* The same against a real responder process, as an attacker on another
 * port would do it (48 datagrams of each kind took 20 handshakes in
 * progress to 0): every one-byte C_R of int form (RFC 9528 Section 3.3.2:
 * -24..23, the 48 values a responder draws first) in front of an error
 * message and of a junk message_3, sent from one socket while 20
 * initiators, each on a port of its own, wait with message_2 in hand.
 * Then each sends its message_3: all 20 complete (2.04), and the
 * responder's log names every forged message that hit a handshake as
 * ignored. */
static void test_forged_from_elsewhere_real_responder(void **state)
{
    (void)state;
    enum { N = 20 };
    assert_int_equal(net_make_dir("srv-forged"), 0);
    static struct net_proc r;
    assert_int_equal(net_responder_start(&r, "forged", "--listen 127.0.0.1:0 --suites 2 -v"), 0);
    static struct initiator in[N];
    int fd[N];
    uint8_t m1[512], req[1024], resp[2048];
    for (int i = 0; i < N; i++) {
        fd[i] = socket(AF_INET, SOCK_DGRAM, 0);
        assert_true(fd[i] >= 0);
        size_t m1_len;
        initiator_message_1(&in[i], m1, sizeof m1, &m1_len);
        size_t rl = post_edhoc((uint16_t)(0x100 + i), m1, m1_len, req, sizeof req);
        long n = net_udp_exchange_fd(fd[i], r.port, req, rl, resp, sizeof resp, 5000);
        if (n < 4)
            fail_msg("no message_2 for initiator %d", i);
        initiator_message_3(&in[i], resp, (size_t)n);
    }
    int attacker = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(attacker >= 0);
    struct sockaddr_in to;
    memset(&to, 0, sizeof to);
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(r.port);
    uint16_t mid = 0x2000;
    for (int v = 0; v < 0x38; v++) {
        if (v >= 0x18 && v < 0x20)
            continue; /* not a whole one-byte int */
        struct initiator fake;
        memset(&fake, 0, sizeof fake);
        fake.c_r[0] = (uint8_t)v; /* the byte string h'v', sent as the int it encodes */
        fake.c_r_len = 1;
        for (int kind = 0; kind < 2; kind++) {
            uint8_t msg[64];
            size_t ml = forged(&fake, kind == 0, msg, sizeof msg);
            size_t rl = post_edhoc(mid++, msg, ml, req, sizeof req);
            assert_int_equal(sendto(attacker, req, rl, 0, (struct sockaddr *)&to, sizeof to),
                             (ssize_t)rl);
        }
    }
    /* The responder reads its one socket in order: once a request sent
     * after all of them is answered, every forged one has been handled. */
    const uint8_t get[] = {0x40, 0x01, 0x30, 0x00, 0xb4, 't', 'i', 'm', 'e'};
    int barrier = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(net_udp_exchange_fd(barrier, r.port, get, sizeof get, resp, sizeof resp, 5000) >=
                4);
    assert_int_equal(resp[1], 0x81); /* 4.01: /time needs OSCORE */
    close(barrier);
    close(attacker);
    int completed = 0;
    for (int i = 0; i < N; i++) {
        size_t rl = post_edhoc((uint16_t)(0x300 + i), in[i].m3, in[i].m3_len, req, sizeof req);
        long n = net_udp_exchange_fd(fd[i], r.port, req, rl, resp, sizeof resp, 5000);
        close(fd[i]);
        if (n >= 4 && resp[1] == 0x44)
            completed++;
        edhoc_session_wipe(&in[i].s);
    }
    assert_int_equal(net_proc_stop(&r, SIGTERM, 10000), 0);
    char *log = net_read_file(r.log);
    assert_non_null(log);
    if (completed != N) {
        fprintf(stderr, "%s\n", log);
        fail_msg("%d of %d handshakes completed after the forged messages (log above)", completed,
                 N);
    }
    /* Each of the N C_Rs in use got one forged error and one forged
     * message_3, each ignored; the other 48 - N C_Rs name no handshake. */
    if (net_count(log, "not from the address of its message_1") != 2 * N) {
        fprintf(stderr, "%s\n", log);
        fail_msg("expected %d forged messages ignored (log above)", 2 * N);
    }
    char ok[64];
    /* (handshakes_failed counts the forged datagrams that read as a bare
     * message_1: C_R 00..03 is never given, choose_c_r.) */
    snprintf(ok, sizeof ok, "stopping on signal 15: %d handshakes ok", N);
    assert_non_null(strstr(log, ok));
    free(log);
    net_remove_dir();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake_crypto_calls),
        cmocka_unit_test(test_forged_messages_keep_handshake),
        cmocka_unit_test(test_forged_combined_request_keeps_handshake),
        cmocka_unit_test(test_first_request_record_from_elsewhere),
        cmocka_unit_test(test_echo_challenge_mark_not_stored),
        cmocka_unit_test_teardown(test_forged_from_elsewhere_real_responder, net_test_teardown),
    };
    return cmocka_run_group_tests_name("edhoc_server", tests, setup, NULL);
}
