/* What the two files of the initiator's flow share (private to src/client). */
#ifndef EDHOC_CLIENT_INTERNAL_H
#define EDHOC_CLIENT_INTERNAL_H

#include "edhoc_client.h"

/* One row of run: edhoc is the message's bytes (edhoc_bytes long; NULL
 * with -1), kept for the JSON report; e the exchange's datagrams. */
void edhoc_client_add_row(struct edhoc_client_run *run, const char *name, char dir,
                          const uint8_t *edhoc, long edhoc_bytes, size_t coap_bytes,
                          unsigned datagrams, const struct cli_exchange *e);
/* The status of a transport error: no answer in time or unreachable is a
 * timeout, anything else a failure. */
int edhoc_client_transport_status(long rc);

#endif
