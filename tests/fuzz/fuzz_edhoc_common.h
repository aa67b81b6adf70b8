/*
 * Shared by the EDHOC message fuzz targets: a deterministic method 3 /
 * suite 2 initiator and responder (RFC 9529 trace 2 keys and ephemeral
 * keys), so every input meets the same session state.
 */
#ifndef FUZZ_EDHOC_COMMON_H
#define FUZZ_EDHOC_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "edhoc/edhoc.h"

static const uint8_t sk_i[32] = {0xfb, 0x13, 0xad, 0xeb, 0x65, 0x18, 0xce, 0xe5, 0xf8, 0x84, 0x17,
                                 0x66, 0x08, 0x41, 0x14, 0x2e, 0x83, 0x0a, 0x81, 0xfe, 0x33, 0x43,
                                 0x80, 0xa9, 0x53, 0x40, 0x6a, 0x13, 0x05, 0xe8, 0x70, 0x6b};
static const uint8_t sk_r[32] = {0x72, 0xcc, 0x47, 0x61, 0xdb, 0xd4, 0xc7, 0x8f, 0x75, 0x89, 0x31,
                                 0xaa, 0x58, 0x9d, 0x34, 0x8d, 0x1e, 0xf8, 0x74, 0xa7, 0xe3, 0x03,
                                 0xed, 0xe2, 0xf1, 0x40, 0xdc, 0xf3, 0xe6, 0xaa, 0x4a, 0xac};
static const uint8_t eph_x[32] = {0x36, 0x8e, 0xc1, 0xf6, 0x9a, 0xeb, 0x65, 0x9b, 0xa3, 0x7d, 0x5a,
                                  0x8d, 0x45, 0xb2, 0x1b, 0xdc, 0x02, 0x99, 0xdc, 0xea, 0xa8, 0xef,
                                  0x23, 0x5f, 0x3c, 0xa4, 0x2c, 0xe3, 0x53, 0x0f, 0x95, 0x25};
static const uint8_t eph_y[32] = {0xe2, 0xf4, 0x12, 0x67, 0x77, 0x20, 0x5e, 0x85, 0x3b, 0x43, 0x7d,
                                  0x6e, 0xac, 0xa1, 0xe1, 0xf7, 0x53, 0xcd, 0xcc, 0x3e, 0x2c, 0x69,
                                  0xfa, 0x88, 0x4b, 0x0a, 0x1a, 0x64, 0x09, 0x77, 0xe4, 0x18};

static struct edhoc_cred cred_i, cred_r;
static struct edhoc_key key_i, key_r;
static const int suites[] = {2};
static struct edhoc_config cfg_i, cfg_r;

static void make_side(struct edhoc_cred *c, struct edhoc_key *k, const uint8_t *sk, uint8_t kid)
{
    const struct edhoc_crypto_ops *ops = edhoc_crypto_openssl();
    memset(c, 0, sizeof *c);
    memset(k, 0, sizeof *k);
    k->curve = EDHOC_COSE_CRV_P256;
    k->priv_len = 32;
    memcpy(k->priv, sk, 32);
    c->type = EDHOC_CRED_CCS;
    c->curve = EDHOC_COSE_CRV_P256;
    ops->public_key(EDHOC_COSE_CRV_P256, false, sk, c->pub, &c->pub_len);
    /* CRED_x only has to be one CBOR item for the core */
    c->data[0] = 0xa1;
    c->data[1] = 0x01;
    c->data[2] = 0x41;
    c->data[3] = kid;
    c->data_len = 4;
    c->cred = c->data;
    c->cred_len = 4;
    c->kid[0] = kid;
    c->kid_len = 1;
}

__attribute__((unused)) static void setup_configs(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    make_side(&cred_i, &key_i, sk_i, 0x2b);
    make_side(&cred_r, &key_r, sk_r, 0x32);
    cfg_i.ops = edhoc_crypto_openssl();
    cfg_i.method = 3;
    cfg_i.suites = suites;
    cfg_i.n_suites = 1;
    cfg_i.cred = &cred_i;
    cfg_i.key = &key_i;
    cfg_r = cfg_i;
    cfg_r.cred = &cred_r;
    cfg_r.key = &key_r;
}

/* Both sessions up to (and including) message_2 being produced. */
__attribute__((unused)) static int start_pair(struct edhoc_session *i, struct edhoc_session *r,
                                              uint8_t *m2, size_t cap)
{
    static const uint8_t c_i = 0x37, c_r = 0x27;
    uint8_t m1[128];
    setup_configs();
    if (edhoc_session_init(i, EDHOC_INITIATOR, &cfg_i) ||
        edhoc_session_init(r, EDHOC_RESPONDER, &cfg_r))
        return -1;
    edhoc_session_set_conn_id(i, &c_i, 1);
    edhoc_session_set_conn_id(r, &c_r, 1);
    edhoc_session_set_ephemeral(i, eph_x, 32);
    edhoc_session_set_ephemeral(r, eph_y, 32);
    int n1 = edhoc_initiator_prepare_message_1(i, m1, sizeof m1);
    if (n1 < 0 || edhoc_responder_process_message_1(r, m1, (size_t)n1, NULL))
        return -1;
    return edhoc_responder_prepare_message_2(r, m2, cap);
}

#endif
