/* The state writer's figures, published by the responder in its state
 * directory (DIR/EDHOC_STATE_STATS_FILE, replaced every second) for
 * `edhoc-cli load` and for anyone watching group commit work. */
#ifndef CLI_STATE_STATS_H
#define CLI_STATE_STATS_H

#include "edhoc/state.h"

#include <stdbool.h>
#include <sys/types.h>

/* The responder's group commit (edhoc_state_group_commit): a batch
 * closes at 512 rows, 50 ms after its first, or at once when someone waits
 * for it. Nothing on the hot path waits (marks are queued a block ahead,
 * new contexts need not be durable), so the window only bounds what a
 * crash can lose: measured per handshake on one core (docs/DESIGN.md,
 * "Group commit"), the writer thread costs about 18 us at 10 ms, 11 us
 * at 25 ms and 8.5 us at 50 ms, against about 205 us of handshake. */
#define CLI_STATE_BATCH_ROWS 512
#define CLI_STATE_BATCH_MS   50
/* The lease of a context in the fleet's store, renewed with each
 * reservation: another responder may take an idle one without a
 * takeover once it ran out. */
#define CLI_FLEET_LEASE_MS 30000

#define EDHOC_STATE_STATS_FILE "edhoc-cli-state.stats"

struct cli_state_stats {
    long pid;        /* the process that writes the database */
    double uptime_s; /* since group commit started */
    struct edhoc_state_writer_stats w;
    /* A responder of a fleet (--state postgresql://...): its store's
     * round trips and contexts put, and its handshakes, instead of a
     * writer's commits (w stays zero); the round trips of serving OSCORE
     * requests (all but the puts) and the OSCORE requests answered. */
    bool fleet;
    uint64_t round_trips, rows_put, handshakes, serving_round_trips, oscore_requests;
};

/* Write DIR/EDHOC_STATE_STATS_FILE (0600, through a temporary file and a
 * rename, never fsync'ed: statistics never cost a synchronous write).
 * Returns 0 or -1 (errno). */
int cli_state_stats_publish(const char *dir, const struct cli_state_stats *s);

/* Read one; false when absent or not one of ours. */
bool cli_state_stats_read(const char *path, struct cli_state_stats *s);

#endif
