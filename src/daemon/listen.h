/*
 * --listen HOST[:PORT] to the numeric address the transport binds.
 */
#ifndef CLI_LISTEN_H
#define CLI_LISTEN_H

#include <stddef.h>

/* --listen HOST[:PORT], the host as a URI gives it (RFC 3986 Section
 * 3.2.2): a name, an IPv4 address, or an IPv6 address in brackets; no port
 * is CoAP's 5683 (RFC 7252 Section 6.1). A name is resolved once, here, to
 * the first address getaddrinfo gives. out: the numeric ADDR:PORT or
 * [ADDR]:PORT the transport binds. Returns 0, or -1 with why. */
int cli_listen_resolve(const char *spec, char *out, size_t cap, char *why, size_t why_cap);

#endif
