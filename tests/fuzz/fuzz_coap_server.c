/*
 * The responder engine on arbitrary datagrams: EDHOC over CoAP (A.2, bare,
 * combined), OSCORE requests for a static context, plain requests. The
 * first input byte picks one of four peer addresses (bare framing
 * correlates by address); timers advance one second per input so pending
 * handshakes expire. The interop record callbacks read every field of
 * what they are given, and the trace asks which handshake it belongs to.
 * Each datagram takes the responder's path: the datagram guard, the
 * outer block-wise engine, the engine, the cut of the answer into blocks.
 * Must never crash, hang or leak.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edhoc/blockwise.h"
#include "edhoc/cred.h"
#include "edhoc/datagram_guard.h"
#include "edhoc/edhoc.h"
#include "edhoc/oscore.h"
#include "edhoc/state.h"
#include "edhoc/transport.h"
#include "demo_creds.h"

static struct edhoc_cred cred;
static struct edhoc_key key;
static struct edhoc_cred_store store;
static struct edhoc_config cfg;
static const int suites[] = {2, 0};
static struct edhoc_server *srv; /* the one handling the current input */
static struct edhoc_server *servers[2];
/* Static contexts need a state database: one per server (a state
 * directory has one user at a time), removed at exit. */
static struct edhoc_state_db *dbs[2];
static char db_dirs[2][64];
static uint64_t now_ms;
static struct edhoc_bw_server *outer; /* the transport's outer block-wise engine */
static volatile size_t sink;          /* keeps the reads below */

static size_t text_len(const char *s)
{
    return s ? strlen(s) : 0;
}

static void on_record(void *user, const struct edhoc_server_handshake *hs)
{
    (void)user;
    size_t sum = (size_t)hs->id + text_len(hs->peer) + text_len(hs->id_cred_i_type) +
                 text_len(hs->id_cred_r_type) + text_len(hs->step) + text_len(hs->error_text) +
                 text_len(hs->peer_diagnostic) + text_len(hs->causes);
    for (size_t i = 0; i < hs->id_cred_i_len; i++)
        sum += hs->id_cred_i[i];
    for (size_t i = 0; i < hs->id_cred_i_sent_len; i++)
        sum += hs->id_cred_i_sent[i];
    for (size_t i = 0; i < hs->cred_i_len; i++)
        sum += hs->cred_i[i];
    for (size_t i = 0; i < hs->n_suites_i && i < EDHOC_MAX_SUITES; i++)
        sum += (size_t)hs->suites_i[i];
    for (size_t i = 0; i < hs->n_suites_r && i < EDHOC_MAX_SUITES; i++)
        sum += (size_t)hs->suites_r[i];
    if (hs->c_i_len > EDHOC_MAX_CONN_ID || hs->c_r_len > EDHOC_MAX_CONN_ID ||
        hs->n_suites_i > EDHOC_MAX_SUITES || hs->n_suites_r > EDHOC_MAX_SUITES)
        __builtin_trap();
    sink += sum;
}

static void on_oscore(void *user, const struct edhoc_server_oscore_first *first)
{
    (void)user;
    sink += (size_t)first->handshake + text_len(first->peer) + text_len(first->text);
}

static void on_trace(void *ctx, const char *name, const uint8_t *v, size_t len)
{
    (void)ctx;
    const char *peer = NULL;
    uint64_t id = srv ? edhoc_server_current_handshake(srv, &peer) : 0;
    sink += (size_t)id + text_len(peer) + text_len(name) + (len ? v[len - 1] : 0);
}

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

static void remove_state(void)
{
    edhoc_bw_server_free(outer);
    outer = NULL;
    for (int i = 0; i < 2; i++) {
        if (!db_dirs[i][0])
            continue;
        edhoc_server_free(servers[i]);
        servers[i] = NULL;
        edhoc_state_close(dbs[i]);
        static const char *const files[] = {EDHOC_STATE_FILE, EDHOC_STATE_FILE "-wal",
                                            EDHOC_STATE_FILE "-shm"};
        for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
            char path[128];
            snprintf(path, sizeof path, "%s/%s", db_dirs[i], files[k]);
            unlink(path);
        }
        rmdir(db_dirs[i]);
    }
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
    cfg.trace = on_trace;
    struct edhoc_server_config sc = {
        .ops = edhoc_crypto_openssl(),
        .select = select_config,
        .max_pending = 4,
        .pending_timeout_s = 5,
        .record = on_record,
        .oscore = on_oscore,
    };
    static const char conf[] = "master_secret,hex,\"0102030405060708090a0b0c0d0e0f10\"\n"
                               "sender_id,hex,\"01\"\nrecipient_id,hex,\"\"\n";
    /* The second server serves the resources unprotected too and takes
     * the bare framing only. */
    atexit(remove_state);
    for (int i = 0; i < 2; i++) {
        sc.serve_unprotected = i == 1;
        sc.framings = i == 1 ? 1u << EDHOC_FRAMING_BARE : 0;
        snprintf(db_dirs[i], sizeof db_dirs[i], "/tmp/fuzz-coap-server-XXXXXX");
        if (!mkdtemp(db_dirs[i]) || edhoc_state_open(db_dirs[i], &dbs[i], NULL, 0) != 0)
            __builtin_trap();
        sc.db = dbs[i];
        servers[i] = edhoc_server_new(&sc);
        struct oscore_config oc;
        struct oscore_config_error err;
        if (servers[i] && oscore_config_parse(conf, sizeof conf - 1, &oc, &err) == 0)
            edhoc_server_add_static_context(servers[i], &oc, "fuzz");
    }
    srv = servers[0];
    struct edhoc_bw_limits limits = {.max_body = 4096, .max_transfers = 8, .max_bytes = 65536};
    outer = edhoc_bw_server_new(&limits);
    if (!outer)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t out[EDHOC_TRANSPORT_MAX_MESSAGE];
    static uint8_t blk[EDHOC_TRANSPORT_MAX_MESSAGE];
    if (!srv)
        setup();
    if (size < 1)
        return 0;
    srv = servers[(data[0] >> 2) & 1];
    if (!srv)
        return 0;
    char peer[32];
    snprintf(peer, sizeof peer, "192.0.2.%u:5683", data[0] & 3);
    /* The path of a datagram in the responder: the guard, the outer
     * block-wise engine, the engine, the engine's cut of the answer. */
    const uint8_t *msg = data + 1;
    size_t len = size - 1;
    if (edhoc_datagram_check(msg, len, NULL) != 0)
        return 0;
    uint8_t *whole = NULL;
    size_t whole_len = 0, reply_len = 0;
    int verdict = edhoc_bw_server_request(outer, peer, msg, len, now_ms, &whole, &whole_len, blk,
                                          sizeof blk, &reply_len);
    if (verdict == EDHOC_BW_REPLY && reply_len > sizeof blk)
        __builtin_trap();
    if (verdict == EDHOC_BW_PASS || verdict == EDHOC_BW_WHOLE) {
        const uint8_t *req = whole ? whole : msg;
        size_t req_len = whole ? whole_len : len;
        long n = edhoc_server_handle(srv, NULL, peer, req, req_len, out, sizeof out);
        if (n > (long)sizeof out)
            __builtin_trap();
        if (n > 0 && edhoc_bw_server_response(outer, peer, req, req_len, out, (size_t)n, 64, now_ms,
                                              blk, sizeof blk) > (long)sizeof blk)
            __builtin_trap();
    }
    free(whole);
    now_ms += 1000;
    edhoc_server_tick(srv, now_ms);
    edhoc_bw_server_expire(outer, now_ms);
    return 0;
}
