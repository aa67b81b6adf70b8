/*
 * CoAP requests as the client sends them and responses as it reads them,
 * on message bytes (the codec of src/oscore): the helpers the initiator's
 * flow, the OSCORE exchanges and the commands (initiator, coap, load)
 * share, under the names the commands have always called.
 */
#ifndef EDHOC_CLIENT_COAP_H
#define EDHOC_CLIENT_COAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CoAP method code for GET/POST/PUT/DELETE/FETCH/PATCH/IPATCH, or -1. */
int cli_coap_method(const char *name);

/* A request message (CON, Message ID and token left to the transport).
 * cf < 0: no Content-Format; observe < 0: no Observe. Returns the length
 * or -1. */
long cli_coap_build_request(uint8_t code, const char *path, const char *query, int cf,
                            const uint8_t *payload, size_t payload_len, long observe, uint8_t *out,
                            size_t cap);

/* An option the user added to the request (-O NUM,VALUE). */
struct client_coap_option {
    uint16_t number;
    const uint8_t *value;
    size_t len;
};

/* The request msg with Accept (accept < 0: none) and the options extra
 * added, each after those of a number not above its own (RFC 7252
 * Section 3.1), in place. Returns the new length or -1. */
long cli_coap_add_options(uint8_t *msg, long len, size_t cap, long accept,
                          const struct client_coap_option *extra, size_t n_extra);

/* "2.05 Content", "4.01 Unauthorized", ... */
const char *cli_coap_code_name(uint8_t code, char *buf, size_t cap);

/* Response code, Content-Format (-1 none), payload of a message. Returns 0
 * or -1 when it does not parse. */
int cli_coap_response_view(const uint8_t *msg, size_t len, uint8_t *code, int *cf,
                           const uint8_t **payload, size_t *payload_len);

/* Whether a payload reads as text (printable, newlines and tabs). */
bool cli_coap_payload_printable(const uint8_t *p, size_t len);

/* The plain request req with an Echo option of this value (replacing any).
 * Returns the length or -1. */
long cli_coap_with_echo(const uint8_t *req, size_t len, const uint8_t *echo, size_t echo_len,
                        uint8_t *out, size_t cap);

/* Why an answer to an OSCORE request that carries no OSCORE option (msg,
 * the whole CoAP message) is not the answer, as one line: "the peer
 * answered without OSCORE: CODE[: DIAGNOSTIC PAYLOAD]", with a hint for
 * "Replay detected". Whatever its code it proves nothing: a successful
 * response to an OSCORE request carries the OSCORE option (RFC 8613
 * Section 2), and an unprotected one may come from anyone on the path. */
void cli_unprotected_answer_text(const uint8_t *msg, size_t len, char *out, size_t cap);

#endif
