/*
 * The state database written by one process for several: the responder's
 * workers send their writes over a SOCK_SEQPACKET socket to the process
 * holding the database, which applies every request waiting from every
 * worker in one transaction and answers each once that transaction is on
 * disk (group commit). A sequence-number mark is durable when the call
 * that stores it returns, as with a local database: a worker never uses a
 * sequence number above a mark the writer has not synced (RFC 8613
 * Appendix B.1.1). With many workers storing marks at once, one sync
 * covers them all instead of one each.
 *
 * Between edhoc_state_begin and edhoc_state_commit a worker's writes go
 * without waiting for an answer; the commit waits for all of them, so one
 * pass of the engine (a context and the ones it evicts) still costs one
 * round trip and at most one sync. Reads are answered at once, from the
 * writer's connection (they see the writes of the open group).
 *
 * Both ends run the same binary, so a record is the struct as it is in
 * memory; it may hold a master secret and is wiped after use.
 */
#ifndef EDHOC_STATE_RPC_H
#define EDHOC_STATE_RPC_H

#include "edhoc/state.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

enum rpc_op {
    OP_PUT = 1,
    OP_SSN,
    OP_DELETE,
    OP_TOUCH,
    OP_GET,
    OP_EACH,
    OP_PRUNE,
    OP_COUNT,
    OP_COMMIT,
    /* Answers. */
    OP_DONE,
    OP_ROW,
};

struct rpc {
    uint32_t op;
    int32_t status;
    uint32_t flags;
    uint8_t has_idc, idc_len, rid_len;
    uint8_t idc[EDHOC_STATE_MAX_ID_CONTEXT];
    uint8_t rid[EDHOC_STATE_MAX_ID];
    int64_t i64;
    uint64_t u64;
    uint64_t out1, out2;
    uint32_t owner_count, owner_index;
    struct edhoc_state_peer peer;
};

#define RPC_NO_ANSWER 1u /* a write inside begin/commit: answered by the commit */

static inline void rpc_wipe(struct rpc *m)
{
    volatile uint8_t *p = (volatile uint8_t *)m;
    for (size_t i = 0; i < sizeof *m; i++)
        p[i] = 0;
}

static inline int send_rpc(int fd, const struct rpc *m)
{
    for (;;) {
        ssize_t n = send(fd, m, sizeof *m, MSG_NOSIGNAL);
        if (n == (ssize_t)sizeof *m)
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        return EDHOC_STATE_ERR_IO;
    }
}

static inline int recv_rpc(int fd, struct rpc *m)
{
    for (;;) {
        ssize_t n = recv(fd, m, sizeof *m, 0);
        if (n == (ssize_t)sizeof *m)
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        return EDHOC_STATE_ERR_IO;
    }
}

#endif
