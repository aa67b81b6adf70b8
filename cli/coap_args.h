/* The values of coap's request options (coap_args.c). */
#ifndef EDHOC_CLI_COAP_ARGS_H
#define EDHOC_CLI_COAP_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "client_coap.h"
#include "options.h"

/* The request body from --payload, --payload-hex or --payload-file (a
 * file, or - for standard input), at most max_body bytes, in a buffer the
 * caller frees. Returns 0 or an exit code (the message printed). */
int cli_coap_read_payload(const char *text, const char *hex, const char *file, size_t max_body,
                          uint8_t **body, size_t *len);
/* NAME|N of --content-format and --accept. Returns 0, or -1 after
 * printing why. */
int cli_coap_content_format_arg(const struct cli_opt_parser *p, long *out);
/* HEX of --token, 0 to 8 bytes. Returns 0, or -1 after printing why. */
int cli_coap_token_arg(const struct cli_opt_parser *p, uint8_t token[8], size_t *len);
/* NUM,VALUE of --option into o (value bytes in buf). Returns 0, or -1
 * after printing why. */
int cli_coap_option_arg(const struct cli_opt_parser *p, struct client_coap_option *o, uint8_t *buf,
                        size_t cap);

#endif
