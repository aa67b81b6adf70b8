/*
 * The responder's static OSCORE contexts (--oscore-context): each locked
 * on the host before anything serves, then handed to the engine.
 */
#ifndef CLI_RESPONDER_STATIC_H
#define CLI_RESPONDER_STATIC_H

#include <stddef.h>

#define MAX_STATIC 16

struct edhoc_server;

/* A static context's nonces are unique only if one process on the host
 * serves it, whatever state directory or copy of the file each is
 * given: lock its keying material before anything serves (the workers
 * inherit the locks; they go with the process).
 * Returns 0 or a CLI exit code (the reason logged). */
int responder_static_lock(const char *const *paths, size_t n, const char *state_dir);
/* One context to the engine (served counts those this worker owns).
 * Returns 0 or a CLI exit code (the reason logged). */
int responder_static_load(struct edhoc_server *srv, const char *path, size_t *served);

#endif
