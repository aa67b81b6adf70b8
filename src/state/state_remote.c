/* A worker's handle on the state database: its calls become records to
 * the writer process (the protocol: state_rpc.h). */
#include "state_remote.h"
#include "state_rpc.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- The worker's end ---- */

struct state_remote {
    int fd;
    bool batching;
    bool grouped; /* edhoc_state_group_commit: writes never wait for an answer */
};

struct state_remote *state_remote_new(int fd);

struct state_remote *state_remote_new(int fd)
{
    struct state_remote *r = calloc(1, sizeof *r);
    if (r)
        r->fd = fd;
    return r;
}

void state_remote_free(struct state_remote *r)
{
    if (!r)
        return;
    close(r->fd);
    free(r);
}

static void set_key(struct rpc *m, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                    size_t rid_len)
{
    m->has_idc = idc != NULL;
    m->idc_len = (uint8_t)idc_len;
    if (idc && idc_len)
        memcpy(m->idc, idc, idc_len);
    m->rid_len = (uint8_t)rid_len;
    if (rid_len)
        memcpy(m->rid, rid, rid_len);
}

/* Send m; unless it is a batched write, wait for its answer (left in m). */
static int call(struct state_remote *r, struct rpc *m, bool write)
{
    /* A mark is answered once durable, grouped or not. */
    if (write && (r->batching || (r->grouped && m->op != OP_SSN)))
        m->flags |= RPC_NO_ANSWER;
    int rc = send_rpc(r->fd, m);
    if (rc || (m->flags & RPC_NO_ANSWER)) {
        rpc_wipe(m);
        return rc;
    }
    rc = recv_rpc(r->fd, m);
    int status = rc ? rc : m->status;
    return status;
}

int state_remote_put_peer(struct state_remote *r, const struct edhoc_state_peer *p)
{
    struct rpc m = {.op = OP_PUT, .peer = *p};
    int rc = call(r, &m, true);
    rpc_wipe(&m);
    return rc;
}

int state_remote_store_ssn(struct state_remote *r, const uint8_t *idc, size_t idc_len,
                           const uint8_t *rid, size_t rid_len, uint64_t mark)
{
    struct rpc m = {.op = OP_SSN, .u64 = mark};
    set_key(&m, idc, idc_len, rid, rid_len);
    return call(r, &m, true);
}

int state_remote_delete_peer(struct state_remote *r, const uint8_t *idc, size_t idc_len,
                             const uint8_t *rid, size_t rid_len)
{
    struct rpc m = {.op = OP_DELETE};
    set_key(&m, idc, idc_len, rid, rid_len);
    return call(r, &m, true);
}

int state_remote_touch_peer(struct state_remote *r, const uint8_t *idc, size_t idc_len,
                            const uint8_t *rid, size_t rid_len, int64_t last_used)
{
    struct rpc m = {.op = OP_TOUCH, .i64 = last_used};
    set_key(&m, idc, idc_len, rid, rid_len);
    return call(r, &m, true);
}

int state_remote_get_peer(struct state_remote *r, const uint8_t *idc, size_t idc_len,
                          const uint8_t *rid, size_t rid_len, struct edhoc_state_peer *out)
{
    struct rpc m = {.op = OP_GET};
    set_key(&m, idc, idc_len, rid, rid_len);
    int rc = call(r, &m, false);
    if (rc == 0 && out)
        *out = m.peer;
    rpc_wipe(&m);
    return rc;
}

int state_remote_for_each_peer(struct state_remote *r, unsigned owner_count, unsigned owner_index,
                               int (*fn)(void *ctx, const struct edhoc_state_peer *p), void *ctx)
{
    struct rpc m = {.op = OP_EACH, .owner_count = owner_count, .owner_index = owner_index};
    int rc = send_rpc(r->fd, &m);
    int result = 0;
    /* Read every row even after fn stops, to keep the stream in step. */
    while (rc == 0 && (rc = recv_rpc(r->fd, &m)) == 0 && m.op == OP_ROW) {
        if (result == 0)
            result = fn(ctx, &m.peer);
    }
    int status = rc ? rc : m.status;
    rpc_wipe(&m);
    return result ? result : status;
}

int state_remote_prune(struct state_remote *r, int64_t used_before, uint64_t keep,
                       uint64_t *expired, uint64_t *evicted)
{
    struct rpc m = {.op = OP_PRUNE, .i64 = used_before, .u64 = keep};
    int rc = call(r, &m, false);
    if (expired)
        *expired = rc ? 0 : m.out1;
    if (evicted)
        *evicted = rc ? 0 : m.out2;
    return rc;
}

long state_remote_count(struct state_remote *r)
{
    struct rpc m = {.op = OP_COUNT};
    int rc = call(r, &m, false);
    return rc ? rc : (long)m.i64;
}

int state_remote_begin(struct state_remote *r)
{
    if (r->batching)
        return EDHOC_STATE_ERR_ARG;
    r->batching = true;
    return 0;
}

int state_remote_group(struct state_remote *r)
{
    if (r->grouped)
        return EDHOC_STATE_ERR_ARG;
    r->grouped = true;
    return 0;
}

bool state_remote_is_grouped(const struct state_remote *r)
{
    return r->grouped;
}

/* A commit outside begin: answered once every write sent before it is
 * durable, with the first failure among them. */
int state_remote_flush(struct state_remote *r)
{
    if (r->batching)
        return EDHOC_STATE_ERR_ARG;
    struct rpc m = {.op = OP_COMMIT};
    return call(r, &m, false);
}

int state_remote_commit(struct state_remote *r)
{
    if (!r->batching)
        return EDHOC_STATE_ERR_ARG;
    r->batching = false;
    struct rpc m = {.op = OP_COMMIT};
    return call(r, &m, false);
}
