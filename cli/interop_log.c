/* The responder's interop log, its warnings in the daemon's log (see
 * interop_log.h). */
#include "interop_log.h"

#include "daemon.h"

int interop_log_open(struct interop_log **log, const char *dir, long max_files, char *why,
                     size_t why_cap)
{
    return interop_log_create(log, dir, max_files, cli_log_line, NULL, why, why_cap);
}
