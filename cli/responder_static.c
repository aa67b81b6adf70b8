#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "commands.h"
#include "context_lock.h"
#include "daemon.h"
#include "edhoc/state.h"
#include "edhoc/transport.h"
#include "edhoc_args.h"
#include "oscore_seq.h"
#include "responder_static.h"
#include "util.h"

int responder_static_lock(const char *const *paths, size_t n, const char *state_dir)
{
    char lock_dir[PATH_MAX], why[2 * PATH_MAX + 400] = "";
    if (cli_lock_dir(lock_dir, sizeof lock_dir, why, sizeof why)) {
        cli_log(LOG_ERR, "%s", why);
        return CLI_EXIT_INPUT;
    }
    char ids[MAX_STATIC][33];
    for (size_t i = 0; i < n; i++) {
        struct oscore_config cfg;
        int rc = cli_oscore_context_load("responder", "--oscore-context", paths[i], &cfg);
        if (rc) {
            return rc;
        }
        rc = cli_oscore_material_id(&cfg, ids[i]);
        for (size_t j = 0; rc == 0 && j < i; j++) {
            if (strcmp(ids[i], ids[j]))
                continue;
            cli_log(LOG_ERR,
                    "--oscore-context %s has the sender key of --oscore-context %s (same "
                    "master secret and salt, ID Context and Sender ID): their nonces would "
                    "collide; RFC 8613 Section 3.3: \"the quartet (Master Secret, Master "
                    "Salt, ID Context, Sender ID) MUST be unique\"",
                    paths[i], paths[j]);
            rc = -1;
        }
        if (rc) {
            edhoc_wipe(&cfg, sizeof cfg);
            return CLI_EXIT_INPUT;
        }
        int lock_fd = -1;
        rc = cli_context_lock(lock_dir, &cfg, paths[i], state_dir, &lock_fd, why, sizeof why);
        edhoc_wipe(&cfg, sizeof cfg);
        if (rc) {
            cli_log(LOG_ERR, "%s", why);
            return CLI_EXIT_INPUT;
        }
    }
    return 0;
}

int responder_static_load(struct edhoc_server *srv, const char *path, size_t *served)
{
    struct oscore_config cfg;
    int rc = cli_oscore_context_load("responder", "--oscore-context", path, &cfg);
    if (rc)
        return rc;
    rc = edhoc_server_add_static_context(srv, &cfg, path);
    edhoc_wipe(&cfg, sizeof cfg);
    if (rc == EDHOC_SERVER_NOT_OWNED)
        return 0; /* another worker serves it */
    if (rc == 0)
        (*served)++;
    if (rc) {
        cli_log(LOG_ERR, "--oscore-context %s: %s", path,
                rc == OSCORE_ERR_INVALID    ? "recipient ID already in use or invalid"
                : rc <= -5000 && rc > -5100 ? edhoc_state_strerror(rc)
                                            : oscore_strerror(rc));
        return CLI_EXIT_INPUT;
    }
    return 0;
}
