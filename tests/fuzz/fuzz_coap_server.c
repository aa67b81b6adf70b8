/*
 * The responder engine on arbitrary datagrams: EDHOC over CoAP (A.2, bare,
 * combined), OSCORE requests for a static context, plain requests. The
 * first input byte picks one of four peer addresses (bare framing
 * correlates by address); timers advance one second per input so pending
 * handshakes expire. Must never crash, hang or leak.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "edhoc/cred.h"
#include "edhoc/edhoc.h"
#include "edhoc/oscore.h"
#include "edhoc/transport.h"

static struct edhoc_cred cred;
static struct edhoc_key key;
static struct edhoc_cred_store store;
static struct edhoc_config cfg;
static const int suites[] = {2, 0};
static struct edhoc_server *srv;
static uint64_t now_ms;

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
    return &cfg;
}

static void setup(void)
{
    edhoc_demo_trace_cred(2, 'R', &cred, &key);
    edhoc_cred_store_init(&store);
    edhoc_demo_trust(&store);
    cfg.ops = edhoc_crypto_openssl();
    cfg.suites = suites;
    cfg.n_suites = 2;
    cfg.cred = &cred;
    cfg.key = &key;
    struct edhoc_server_config sc = {
        .ops = edhoc_crypto_openssl(),
        .select = select_config,
        .max_pending = 4,
        .pending_timeout_s = 5,
    };
    srv = edhoc_server_new(&sc);
    static const char conf[] = "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                               "sender_id,hex,\"01\"\nrecipient_id,hex,\"\"\n";
    struct oscore_config oc;
    struct oscore_config_error err;
    if (oscore_config_parse(conf, sizeof conf - 1, &oc, &err) == 0)
        edhoc_server_add_static_context(srv, &oc, "fuzz");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t out[EDHOC_TRANSPORT_MAX_MESSAGE];
    if (!srv)
        setup();
    if (!srv || size < 1)
        return 0;
    char peer[32];
    snprintf(peer, sizeof peer, "192.0.2.%u:5683", data[0] & 3);
    long n = edhoc_server_handle(srv, NULL, peer, data + 1, size - 1, out, sizeof out);
    if (n > (long)sizeof out)
        __builtin_trap();
    now_ms += 1000;
    edhoc_server_tick(srv, now_ms);
    return 0;
}
