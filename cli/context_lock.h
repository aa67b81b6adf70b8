/*
 * One process per static OSCORE context on the host: a responder holds an
 * flock on LOCK_DIR/<material id>.lock for every --oscore-context it
 * serves, so a second responder given the same keying material (another
 * state directory, another copy of the file) is refused instead of
 * repeating the first one's nonces (RFC 8613 Section 7.5: "MUST NOT reuse
 * a previous Sender Sequence Number").
 */
#ifndef CLI_CONTEXT_LOCK_H
#define CLI_CONTEXT_LOCK_H

#include <stddef.h>

#include "edhoc/oscore.h"

/* The host-wide lock directory: $EDHOC_LOCK_DIR, else /run/edhoc-cli for
 * root, else $XDG_RUNTIME_DIR/edhoc-cli, else /tmp/edhoc-cli-UID; created
 * 0700 and checked as a directory of secrets. Returns 0 or -1 with why. */
int cli_lock_dir(char *out, size_t cap, char *why, size_t why_cap);

/* Lock cfg's keying material for this process (and its children) until
 * exit: *fd keeps the lock. The lock file names the holder (pid, context
 * file, state directory), which a refusal quotes. Returns 0 or -1 with
 * why. */
int cli_context_lock(const char *lock_dir, const struct oscore_config *cfg, const char *conf_path,
                     const char *state_dir, int *fd, char *why, size_t why_cap);

#endif
