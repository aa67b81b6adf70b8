/* What the two files of the PostgreSQL store share (state_pg.c: the
 * connection, statements, schema; state_pg_ctx.c: the contexts and their
 * leases); private to src/state. */
#ifndef EDHOC_STATE_PG_INTERNAL_H
#define EDHOC_STATE_PG_INTERNAL_H

#include "state_pg.h"

#include <libpq-fe.h>

struct edhoc_state_pg {
    PGconn *conn;
    char owner[EDHOC_STATE_PG_MAX_OWNER + 1];
    int64_t lease_ms;
    char warning[256];
    char error[512];
    struct edhoc_state_pg_stats stats;
    struct edhoc_state_peer row; /* what for_each hands to its callback */
    bool iterating;
    /* LISTEN on TAKEOVER_CHANNEL (edhoc_state_pg_listen): issued again on
     * every new connection, whose number listen_gen counts (what was
     * notified while no connection listened is lost). */
    bool listening, listen_missing;
    bool reset_needed; /* the last statement lost the connection */
    uint64_t listen_gen;
};

/* Where a takeover is announced (take_over's NOTIFY), to every responder
 * of the database. */
#define TAKEOVER_CHANNEL "edhoc_takeover"

/* Statements carry at most this many contexts (params: 14 per row + 3). */
#define PUT_BATCH 128

#define NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"
#define KEY_WHERE                                                                                  \
    "has_id_context = $1::boolean AND id_context = $2::bytea AND recipient_id = $3::bytea"
#define PEER_COLS                                                                                  \
    "recipient_id, sender_id, has_id_context, id_context, master_secret, master_salt, aead_alg, "  \
    "hkdf_alg, ssn_mark, peer, created, method, suite, last_used"

struct params {
    const char **v;
    int *len;
    int *fmt;
    char (*num)[24];
    int n, cap;
};

void state_pg_wipe(void *p, size_t n);
int state_pg_params_init(struct params *ps, int cap);
void state_pg_params_free(struct params *ps);
void state_pg_add_bytes(struct params *ps, const uint8_t *b, size_t n);
void state_pg_add_text(struct params *ps, const char *s);
void state_pg_add_int(struct params *ps, int64_t x);
/* $1-$3 of every statement on one context. */
void state_pg_add_key(struct params *ps, const uint8_t *idc, size_t idc_len, const uint8_t *rid,
                      size_t rid_len);
bool state_pg_key_ok(const uint8_t *idc, size_t idc_len, const uint8_t *rid, size_t rid_len);
/* One statement, one round trip (retry: once more on a new connection). */
int state_pg_run(struct edhoc_state_pg *db, const char *sql, const struct params *ps, bool retry,
                 PGresult **out);
/* PQclear after wiping every value (results hold secrets). */
void state_pg_clear_result(PGresult *res);
uint64_t state_pg_affected(const PGresult *res);
bool state_pg_get_int(const PGresult *res, int r, int c, int64_t *out);
/* Columns col..col+13 in the order of PEER_COLS. */
int state_pg_row_to_peer(const PGresult *res, int r, int col, struct edhoc_state_peer *p);

#endif
