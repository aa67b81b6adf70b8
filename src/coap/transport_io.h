/* Datagram accounting below libcoap (src/coap private). */
#ifndef EDHOC_COAP_TRANSPORT_IO_H
#define EDHOC_COAP_TRANSPORT_IO_H

#include <stdint.h>

/* Remember which UDP sockets exist now; returns an opaque mark. */
int transport_io_mark_sockets(void);
/* The local port of a UDP socket created since the mark (0 if none). */
uint16_t transport_io_new_socket_port(int mark);

#endif
