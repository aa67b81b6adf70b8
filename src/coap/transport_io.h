/* Datagram accounting below libcoap (src/coap private). */
#ifndef EDHOC_COAP_TRANSPORT_IO_H
#define EDHOC_COAP_TRANSPORT_IO_H

#include <stdbool.h>
#include <stdint.h>

/* Remember which UDP sockets exist now; returns an opaque mark. */
int transport_io_mark_sockets(void);
/* The local port of a UDP socket created since the mark (0 if none). */
uint16_t transport_io_new_socket_port(int mark);

/* Sockets bound from now on join a reuseport group of count workers as
 * worker number worker (count <= 1: stop): worker 0 binds alone and opens
 * the port to the group, worker 1 attaches the steering program. */
void transport_io_reuseport(unsigned count, unsigned worker);
/* errno of the first setsockopt that failed since transport_io_reuseport
 * (0: none). */
int transport_io_reuseport_error(void);

#endif
