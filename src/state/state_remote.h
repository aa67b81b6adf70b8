/* The state database reached through one writer process (state_remote.c);
 * private to src/state. */
#ifndef EDHOC_STATE_REMOTE_H
#define EDHOC_STATE_REMOTE_H

#include "edhoc/state.h"

struct state_remote;

void state_remote_free(struct state_remote *r);
int state_remote_put_peer(struct state_remote *r, const struct edhoc_state_peer *p);
int state_remote_store_ssn(struct state_remote *r, const uint8_t *idc, size_t idc_len,
                           const uint8_t *rid, size_t rid_len, uint64_t mark);
int state_remote_delete_peer(struct state_remote *r, const uint8_t *idc, size_t idc_len,
                             const uint8_t *rid, size_t rid_len);
int state_remote_touch_peer(struct state_remote *r, const uint8_t *idc, size_t idc_len,
                            const uint8_t *rid, size_t rid_len, int64_t last_used);
int state_remote_get_peer(struct state_remote *r, const uint8_t *idc, size_t idc_len,
                          const uint8_t *rid, size_t rid_len, struct edhoc_state_peer *out);
int state_remote_for_each_peer(struct state_remote *r, unsigned owner_count, unsigned owner_index,
                               int (*fn)(void *ctx, const struct edhoc_state_peer *p), void *ctx);
int state_remote_prune(struct state_remote *r, int64_t used_before, uint64_t keep,
                       uint64_t *expired, uint64_t *evicted);
long state_remote_count(struct state_remote *r);
int state_remote_begin(struct state_remote *r);
int state_remote_commit(struct state_remote *r);
int state_remote_group(struct state_remote *r);
bool state_remote_is_grouped(const struct state_remote *r);
int state_remote_flush(struct state_remote *r);

/* Group commit of the writer's handle, for the writer's end: the ticket of
 * the last item queued (0: none, or no group commit), and the state of the
 * items lo..hi (0 committed, EDHOC_STATE_PENDING, or the error of a batch
 * that failed). */
uint64_t state_gc_last_ticket(struct edhoc_state_db *db);
int state_gc_status(struct edhoc_state_db *db, uint64_t lo, uint64_t hi);

#endif
