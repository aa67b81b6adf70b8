/*
 * edhoc/reuseport.h - which worker a datagram belongs to, when N responder
 * workers share one UDP port through SO_REUSEPORT.
 *
 * Every worker owns the OSCORE contexts whose Recipient ID it chose (as
 * C_R) or was configured with: edhoc_state_owner() (edhoc/state.h) says
 * which, from the last byte of the Recipient ID. A classic BPF program attached to the
 * port's reuseport group (SO_ATTACH_REUSEPORT_CBPF) reads each datagram's
 * CoAP header; an OSCORE request carries its context's Recipient ID as
 * 'kid' (RFC 8613 Section 6.1: "kid ... MUST be present in requests" when
 * the context needs it, and it always does here) and goes to that worker,
 * whatever address and port it comes from (a NAT rebinding included).
 * An empty ACK or Reset goes to the worker its Message ID names
 * (edhoc_reuseport_mid_owner): it answers a message a worker sent
 * (an Observe notification, RFC 7641), whose Message ID that worker
 * picked among its own. Everything else -- message_1, message_3, pings,
 * malformed input -- gets the kernel's hash of its address and ports,
 * which keeps one peer on one worker: the worker that answered message_1
 * picks a C_R it owns, so the peer's later requests under that context
 * land there too.
 *
 * edhoc_reuseport_steer() is the same decision in C, instruction for
 * instruction, to test the program against (and to document it).
 */
#ifndef EDHOC_REUSEPORT_H
#define EDHOC_REUSEPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The program's answer for "no owner: let the kernel hash the 4-tuple"
 * (any value >= the number of sockets in the group does that). */
#define EDHOC_REUSEPORT_BY_HASH 0xffffffffu
/* Options before OSCORE (number 9) the program walks; a request with more
 * goes by hash. If-Match, Uri-Host, ETag, If-None-Match, Observe and
 * Uri-Port are the ones that can precede it. */
#define EDHOC_REUSEPORT_MAX_OPTIONS 8
#define EDHOC_REUSEPORT_MAX_WORKERS 64
/* Instructions the program can take (struct sock_filter entries). */
#define EDHOC_REUSEPORT_MAX_INSNS 1024

/* What the program returns for this UDP payload: a worker index, or
 * EDHOC_REUSEPORT_BY_HASH. A read past the end makes the kernel's
 * interpreter stop with 0; this returns 0 then as well (only malformed
 * messages get there: a well-formed one has every byte that is read). */
uint32_t edhoc_reuseport_steer(const uint8_t *msg, size_t len, unsigned count);

/* The worker an empty ACK or Reset with this Message ID goes to; a
 * worker sends confirmable and non-confirmable messages only with Message
 * IDs it owns. */
uint32_t edhoc_reuseport_mid_owner(uint16_t mid, unsigned count);

/* Write the program for count workers (2..EDHOC_REUSEPORT_MAX_WORKERS)
 * into insns (struct sock_filter layout: u16 code, u8 jt, u8 jf, u32 k),
 * at most cap entries. Returns the number written or -1. */
int edhoc_reuseport_program(unsigned count, void *insns, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
