/*
 * What the client engine shows of its messages beyond the datagrams the
 * transport's hook reports: the plain (inner) CoAP message of each OSCORE
 * request before it is protected and of each response once verified, which
 * never cross the socket, and each EDHOC message as the flow sends or reads
 * it, which block-wise may split over several datagrams. The program prints
 * them (edhoc-cli -v); the engine only hands them on. Process-wide, as the
 * transport's datagram hook is.
 */
#ifndef EDHOC_CLIENT_TRACE_H
#define EDHOC_CLIENT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct client_trace_hooks {
    /* sent: a request before protection; else a verified response. */
    void (*inner)(void *user, bool sent, const uint8_t *msg, size_t len);
    /* name: "message_1" .. "message_4", "error"; sent: by this client. */
    void (*edhoc)(void *user, const char *name, bool sent, const uint8_t *msg, size_t len);
    void *user;
};

/* NULL removes them. */
void client_trace_set(const struct client_trace_hooks *h);

void client_trace_inner(bool sent, const uint8_t *msg, size_t len);
void client_trace_edhoc(const char *name, bool sent, const uint8_t *msg, size_t len);

#endif
