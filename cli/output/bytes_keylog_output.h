/* edhoc-cli bytes CAPTURE --keylog FILE: what each message holds once
 * opened (src/tools/bytes/bytes_decrypt.h), as text lines under its row
 * of the report and as the "decrypted" member of its JSON
 * (docs/json/bytes.schema.json). */
#ifndef CLI_BYTES_KEYLOG_OUTPUT_H
#define CLI_BYTES_KEYLOG_OUTPUT_H

#include "bytes_decrypt.h"
#include "edhoc/capture.h"
#include "json_out.h"
#include "keylog_read.h"

void bytes_keylog_print_exchange(const struct bytes_dec_exchange *d);
void bytes_keylog_print_msg(const struct edhoc_capture_msg *m, const struct bytes_dec_msg *d);

json_t *bytes_keylog_json(const struct keylog *k);
json_t *bytes_keylog_row_json(bool has_row, const struct keylog_origin *at);
json_t *bytes_keylog_msg_json(const struct edhoc_capture_msg *m, const struct bytes_dec_msg *d);

#endif
