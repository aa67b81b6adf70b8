#include "client_trace.h"

static struct client_trace_hooks hooks;

void client_trace_set(const struct client_trace_hooks *h)
{
    if (h)
        hooks = *h;
    else
        hooks = (struct client_trace_hooks){0};
}

void client_trace_inner(bool sent, const uint8_t *msg, size_t len)
{
    if (hooks.inner)
        hooks.inner(hooks.user, sent, msg, len);
}

void client_trace_edhoc(const char *name, bool sent, const uint8_t *msg, size_t len)
{
    if (hooks.edhoc)
        hooks.edhoc(hooks.user, name, sent, msg, len);
}
