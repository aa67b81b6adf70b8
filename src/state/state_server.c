/* The writer process's end: applies every worker's records in one
 * transaction per pass and answers each once it is durable (the protocol:
 * state_rpc.h). */
#include "state_remote.h"
#include "state_rpc.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- The writer's end ---- */

#define MAX_CLIENTS 256

struct client {
    int fd;
    /* First failure among its unanswered writes, kept until its commit
     * answers it: a batch that spans a failed group commit is lost in
     * part, however its later writes fare. */
    int batch_status;
    bool batched_in_group; /* unanswered writes in the group being built */
    bool owes_answer;      /* an answer waits for the group's commit */
    struct rpc answer;
    /* With group commit on the writer's handle: the tickets of the
     * client's writes not yet answered (lo..hi; 0: none), and those the
     * owed answer waits for (until its batch commits). */
    uint64_t unanswered_lo, unanswered_hi;
    uint64_t answer_lo, answer_hi;
};

struct edhoc_state_server {
    struct edhoc_state_db *db;
    bool grouped; /* the handle has group commit (edhoc_state_group_commit) */
    struct client c[MAX_CLIENTS];
    size_t n;
    struct edhoc_state_server_stats st;
};

struct edhoc_state_server *edhoc_state_server_new(struct edhoc_state_db *db)
{
    if (!db)
        return NULL;
    struct edhoc_state_server *s = calloc(1, sizeof *s);
    if (s)
        s->db = db;
    return s;
}

void edhoc_state_server_free(struct edhoc_state_server *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        close(s->c[i].fd);
        rpc_wipe(&s->c[i].answer);
    }
    free(s);
}

int edhoc_state_server_add(struct edhoc_state_server *s, int fd)
{
    if (!s || fd < 0 || s->n >= MAX_CLIENTS)
        return EDHOC_STATE_ERR_ARG;
    s->c[s->n++] = (struct client){.fd = fd};
    return 0;
}

size_t edhoc_state_server_clients(const struct edhoc_state_server *s)
{
    return s ? s->n : 0;
}

void edhoc_state_server_get_stats(const struct edhoc_state_server *s,
                                  struct edhoc_state_server_stats *out)
{
    if (s && out)
        *out = s->st;
}

struct each_ctx {
    int fd;
    unsigned count, index;
    int status;
};

static int send_row(void *user, const struct edhoc_state_peer *p)
{
    struct each_ctx *e = user;
    if (e->count > 1 &&
        edhoc_state_owner(p->recipient_id, p->recipient_id_len, e->count) != e->index)
        return 0;
    struct rpc m = {.op = OP_ROW, .peer = *p};
    e->status = send_rpc(e->fd, &m);
    rpc_wipe(&m);
    return e->status;
}

static const uint8_t *idc_of(const struct rpc *m)
{
    return m->has_idc ? m->idc : NULL;
}

static int apply_grouped(struct edhoc_state_server *s, struct client *c, struct rpc *m);

/* Apply one request inside the open group. Writes owe their answer until
 * the commit; reads are answered now. Returns -1 when the client's socket
 * failed. */
static int apply(struct edhoc_state_server *s, struct client *c, struct rpc *m, bool *in_group)
{
    bool write = m->op == OP_PUT || m->op == OP_SSN || m->op == OP_DELETE || m->op == OP_TOUCH ||
                 m->op == OP_PRUNE;
    if (m->idc_len > EDHOC_STATE_MAX_ID_CONTEXT || m->rid_len > EDHOC_STATE_MAX_ID)
        m->op = 0; /* answered with ERR_ARG below */
    if (s->grouped)
        return apply_grouped(s, c, m);
    if ((write || m->op == OP_COMMIT) && !*in_group) {
        *in_group = edhoc_state_begin(s->db) == 0;
        s->st.groups += *in_group;
    }
    int rc = EDHOC_STATE_ERR_ARG;
    struct rpc a = {.op = OP_DONE};
    switch (m->op) {
    case OP_PUT: rc = edhoc_state_put_peer(s->db, &m->peer); break;
    case OP_SSN:
        rc = edhoc_state_store_ssn(s->db, idc_of(m), m->idc_len, m->rid, m->rid_len, m->u64);
        break;
    case OP_DELETE:
        rc = edhoc_state_delete_peer(s->db, idc_of(m), m->idc_len, m->rid, m->rid_len);
        break;
    case OP_TOUCH:
        rc = edhoc_state_touch_peer(s->db, idc_of(m), m->idc_len, m->rid, m->rid_len, m->i64);
        break;
    case OP_PRUNE: rc = edhoc_state_prune(s->db, m->i64, m->u64, &a.out1, &a.out2); break;
    case OP_COMMIT:
        rc = c->batch_status;
        c->batch_status = 0;
        c->batched_in_group = false; /* this group's commit answers them */
        break;
    case OP_GET:
        rc = edhoc_state_get_peer(s->db, idc_of(m), m->idc_len, m->rid, m->rid_len, &a.peer);
        break;
    case OP_COUNT: {
        long n = edhoc_state_count(s->db);
        rc = n < 0 ? (int)n : 0;
        a.i64 = n < 0 ? 0 : n;
        break;
    }
    case OP_EACH: {
        struct each_ctx e = {c->fd, m->owner_count, m->owner_index, 0};
        rc = edhoc_state_for_each_peer(s->db, send_row, &e);
        if (e.status)
            return -1;
        break;
    }
    default: break;
    }
    s->st.requests++;
    a.status = rc;
    if (m->flags & RPC_NO_ANSWER) {
        c->batched_in_group = true;
        /* NOT_FOUND is an answer, not a failure of the batch (a touch or
         * delete of a row another step removed). */
        if (rc && rc != EDHOC_STATE_ERR_NOT_FOUND && !c->batch_status)
            c->batch_status = rc;
        rpc_wipe(&a);
        return 0;
    }
    if (write || m->op == OP_COMMIT) {
        c->answer = a;
        c->owes_answer = true;
        rpc_wipe(&a);
        return 0;
    }
    int sent = send_rpc(c->fd, &a);
    rpc_wipe(&a);
    return sent ? -1 : 0;
}

/* With group commit on the writer's handle, across poll passes: a write
 * joins the writer thread's queue (its batch may hold every worker's
 * writes of several passes); an answer that needs durability (a mark, a
 * commit) waits, without holding up the loop, for the batch of the last
 * write it covers (answer_due). */
static int apply_grouped(struct edhoc_state_server *s, struct client *c, struct rpc *m)
{
    int rc = EDHOC_STATE_ERR_ARG;
    struct rpc a = {.op = OP_DONE};
    bool durable = false; /* the answer waits for the client's writes */
    bool write = true;
    switch (m->op) {
    case OP_PUT: rc = edhoc_state_put_peer(s->db, &m->peer); break;
    case OP_SSN: {
        uint64_t t = 0;
        rc = edhoc_state_store_ssn_async(s->db, idc_of(m), m->idc_len, m->rid, m->rid_len, m->u64,
                                         &t);
        durable = true;
        break;
    }
    case OP_DELETE:
        rc = edhoc_state_delete_peer(s->db, idc_of(m), m->idc_len, m->rid, m->rid_len);
        break;
    case OP_TOUCH:
        rc = edhoc_state_touch_peer(s->db, idc_of(m), m->idc_len, m->rid, m->rid_len, m->i64);
        break;
    case OP_PRUNE:
        rc = edhoc_state_prune(s->db, m->i64, m->u64, &a.out1, &a.out2);
        write = false;
        break;
    case OP_COMMIT:
        rc = c->batch_status;
        c->batch_status = 0;
        durable = true;
        write = false;
        break;
    case OP_GET:
        rc = edhoc_state_get_peer(s->db, idc_of(m), m->idc_len, m->rid, m->rid_len, &a.peer);
        write = false;
        break;
    case OP_COUNT: {
        long n = edhoc_state_count(s->db);
        rc = n < 0 ? (int)n : 0;
        a.i64 = n < 0 ? 0 : n;
        write = false;
        break;
    }
    case OP_EACH: {
        struct each_ctx e = {c->fd, m->owner_count, m->owner_index, 0};
        rc = edhoc_state_for_each_peer(s->db, send_row, &e);
        if (e.status)
            return -1;
        write = false;
        break;
    }
    default: write = false; break;
    }
    s->st.requests++;
    if (write && rc == 0) {
        uint64_t t = state_gc_last_ticket(s->db);
        if (t) {
            if (!c->unanswered_lo)
                c->unanswered_lo = t;
            c->unanswered_hi = t;
        }
    }
    a.status = rc;
    if (m->flags & RPC_NO_ANSWER) {
        if (rc && rc != EDHOC_STATE_ERR_NOT_FOUND && !c->batch_status)
            c->batch_status = rc;
        rpc_wipe(&a);
        return 0;
    }
    if (durable) {
        c->answer = a;
        c->owes_answer = true;
        c->answer_lo = c->unanswered_lo;
        c->answer_hi = c->unanswered_hi;
        c->unanswered_lo = c->unanswered_hi = 0;
        rpc_wipe(&a);
        return 0;
    }
    int sent = send_rpc(c->fd, &a);
    rpc_wipe(&a);
    return sent ? -1 : 0;
}

/* Send the answers whose batches are done; false when a socket failed. */
static void answer_due(struct edhoc_state_server *s, bool *failed)
{
    for (size_t i = 0; i < s->n; i++) {
        struct client *c = &s->c[i];
        if (!c->owes_answer)
            continue;
        int st = state_gc_status(s->db, c->answer_lo, c->answer_hi);
        if (st == EDHOC_STATE_PENDING)
            continue;
        c->owes_answer = false;
        if (st && c->answer.status == 0)
            c->answer.status = st;
        if (!failed[i] && send_rpc(c->fd, &c->answer))
            failed[i] = true;
        rpc_wipe(&c->answer);
    }
}

static void drop_client(struct edhoc_state_server *s, size_t i)
{
    close(s->c[i].fd);
    rpc_wipe(&s->c[i].answer);
    s->c[i] = s->c[--s->n];
}

static int run_grouped(struct edhoc_state_server *s, int timeout_ms);

int edhoc_state_server_run(struct edhoc_state_server *s, int timeout_ms)
{
    if (!s)
        return EDHOC_STATE_ERR_ARG;
    s->grouped = edhoc_state_event_fd(s->db) >= 0;
    if (s->grouped)
        return run_grouped(s, timeout_ms);
    struct pollfd pf[MAX_CLIENTS];
    for (size_t i = 0; i < s->n; i++)
        pf[i] = (struct pollfd){.fd = s->c[i].fd, .events = POLLIN};
    int ready = poll(pf, (nfds_t)s->n, timeout_ms);
    if (ready < 0)
        return errno == EINTR ? 0 : EDHOC_STATE_ERR_IO;
    if (ready == 0)
        return 0;
    bool in_group = false;
    int served = 0;
    bool failed[MAX_CLIENTS] = {false};
    /* Drain: every request waiting from every worker joins the group,
     * including those that arrive while it is being applied. */
    for (bool more = true; more;) {
        more = false;
        for (size_t i = 0; i < s->n; i++) {
            if (failed[i] || s->c[i].owes_answer)
                continue; /* its next request waits for this answer anyway */
            struct rpc m;
            ssize_t n = recv(s->c[i].fd, &m, sizeof m, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                continue;
            if (n != (ssize_t)sizeof m) {
                failed[i] = true; /* closed (0) or broken */
                continue;
            }
            more = true;
            served++;
            if (apply(s, &s->c[i], &m, &in_group))
                failed[i] = true;
            rpc_wipe(&m);
        }
    }
    int crc = 0;
    if (in_group) {
        crc = edhoc_state_commit(s->db);
        /* A statement that failed for lack of space may already have
         * rolled the transaction back (SQLite does for SQLITE_FULL), and
         * then the commit finds none: the group is lost all the same. */
        if (crc == EDHOC_STATE_ERR_ARG)
            crc = EDHOC_STATE_ERR_IO;
        s->st.commits++;
        if ((uint64_t)served > s->st.largest_group)
            s->st.largest_group = (uint64_t)served;
    }
    for (size_t i = 0; i < s->n; i++) {
        struct client *c = &s->c[i];
        /* Writes of a batch whose commit has not come yet were in the
         * group that failed: that commit must not answer success. */
        if (crc && c->batched_in_group && !c->batch_status)
            c->batch_status = crc;
        c->batched_in_group = false;
        if (!c->owes_answer)
            continue;
        c->owes_answer = false;
        if (crc && c->answer.status == 0)
            c->answer.status = crc;
        if (!failed[i] && send_rpc(c->fd, &c->answer))
            failed[i] = true;
        rpc_wipe(&c->answer);
    }
    for (size_t i = s->n; i-- > 0;) {
        if (failed[i])
            drop_client(s, i);
    }
    return served;
}

/* One poll pass with group commit: take every request waiting, hand the
 * writes to the writer thread, answer what its finished batches allow.
 * The writer's eventfd wakes the loop when a batch ends. */
static int run_grouped(struct edhoc_state_server *s, int timeout_ms)
{
    struct pollfd pf[MAX_CLIENTS + 1];
    int efd = edhoc_state_event_fd(s->db);
    for (size_t i = 0; i < s->n; i++)
        pf[i] = (struct pollfd){.fd = s->c[i].fd, .events = s->c[i].owes_answer ? 0 : POLLIN};
    pf[s->n] = (struct pollfd){.fd = efd, .events = POLLIN};
    int ready = poll(pf, (nfds_t)s->n + 1, timeout_ms);
    if (ready < 0)
        return errno == EINTR ? 0 : EDHOC_STATE_ERR_IO;
    if (pf[s->n].revents & POLLIN) {
        uint64_t v;
        if (read(efd, &v, sizeof v) < 0) {
            /* EAGAIN: another reader took it; nothing to do. */
        }
    }
    int served = 0;
    bool failed[MAX_CLIENTS] = {false};
    for (size_t i = 0; i < s->n; i++) {
        if (pf[i].revents & (POLLHUP | POLLERR) && !(pf[i].revents & POLLIN))
            failed[i] = !s->c[i].owes_answer;
    }
    for (bool more = true; more;) {
        more = false;
        for (size_t i = 0; i < s->n; i++) {
            if (failed[i] || s->c[i].owes_answer)
                continue;
            struct rpc m;
            ssize_t n = recv(s->c[i].fd, &m, sizeof m, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                continue;
            if (n != (ssize_t)sizeof m) {
                failed[i] = true; /* closed (0) or broken */
                continue;
            }
            more = true;
            served++;
            bool unused = false;
            if (apply(s, &s->c[i], &m, &unused))
                failed[i] = true;
            rpc_wipe(&m);
        }
    }
    answer_due(s, failed);
    for (size_t i = s->n; i-- > 0;) {
        if (failed[i]) {
            /* Its writes stay queued: a worker that went away loses only
             * its answers. */
            drop_client(s, i);
        }
    }
    return served;
}
