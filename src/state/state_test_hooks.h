/*
 * What the state module's tests reach past the public API for: states
 * that a real run only reaches by timing (a writer thread starved on a
 * busy host), made deterministic.
 */
#ifndef EDHOC_STATE_TEST_HOOKS_H
#define EDHOC_STATE_TEST_HOOKS_H

#include <stdbool.h>

struct edhoc_state_db;

/* While held, the writer thread of db's group commit takes no batch, as
 * a nice-19 thread on a core busy with other work would not soon: only
 * callers that wait commit (each what it waits for and what was queued
 * before it). No-op on a handle without group commit. */
void state_gc_hold_writer(struct edhoc_state_db *db, bool hold);

#endif
