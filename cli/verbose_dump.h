/*
 * -v / -vv of the client commands (coap, initiator): every CoAP message
 * the process sends or receives, one line each on standard error, read
 * from the transport's datagram hook (so retransmissions and single
 * blocks show too) and from the client engine's trace hooks (the inner
 * message of OSCORE, the EDHOC messages). Standard output is never
 * touched: scripts parse it.
 */
#ifndef EDHOC_CLI_VERBOSE_DUMP_H
#define EDHOC_CLI_VERBOSE_DUMP_H

/* level 1: a line per message (direction, type, code, Message ID, token,
 * options, payload length; under OSCORE the inner code and options too);
 * 2: also a hex dump of each datagram and each EDHOC message with its
 * CBOR items decoded. level 0 does nothing. prog names the lines
 * ("coap"). Installs process-wide hooks until cli_verbose_stop. */
void cli_verbose_start(const char *prog, int level);
void cli_verbose_stop(void);

#endif
