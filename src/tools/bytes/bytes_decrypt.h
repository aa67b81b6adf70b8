/* edhoc-cli bytes CAPTURE --keylog FILE, the engine: each message of the
 * exchanges a capture analysis found, opened with the key log's rows
 * (keylog_read.h). EDHOC rows are found by G_X (message_1), OSCORE rows
 * by the kid and kid context of the OSCORE option. What a message holds
 * once decrypted (ID_CRED_R/I, EAD items, the inner CoAP request or
 * response) or why it could not be: the row tried and what failed. For
 * Wireshark before 4.6, which has no EDHOC decryption. */
#ifndef EDHOC_TOOLS_BYTES_DECRYPT_H
#define EDHOC_TOOLS_BYTES_DECRYPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bytes_capture.h"
#include "edhoc/coap_msg.h"
#include "edhoc/edhoc.h"
#include "keylog_read.h"

enum bytes_dec_status {
    BYTES_DEC_CLEAR, /* nothing encrypted in it (message_1, an error, an ACK) */
    BYTES_DEC_OK,
    BYTES_DEC_NO_ROW, /* no row of the key log names it */
    BYTES_DEC_FAILED, /* a row was tried (row) and failed (error) */
};

enum bytes_dec_error {
    BYTES_DEC_ERR_NONE,
    BYTES_DEC_ERR_NO_ROW,
    BYTES_DEC_ERR_TAG,         /* the AEAD tag does not verify under the row's keys */
    BYTES_DEC_ERR_TH_MISMATCH, /* TH_2 of the row is not this message_2's */
    BYTES_DEC_ERR_PLAINTEXT,   /* the decrypted bytes are not a PLAINTEXT_x / CoAP message */
    BYTES_DEC_ERR_MALFORMED,   /* the message itself does not parse */
    BYTES_DEC_ERR_UNAVAILABLE, /* its bytes are not in one datagram (block-wise) */
    BYTES_DEC_ERR_UNSUPPORTED, /* suite or algorithm this tool cannot open */
};

/* "no_row", "tag_mismatch", ... (docs/json/bytes.schema.json). */
const char *bytes_dec_error_name(enum bytes_dec_error e);

struct bytes_dec_option {
    uint16_t number;
    const uint8_t *value; /* into the message's inner */
    size_t len;
};

struct bytes_dec_msg {
    enum bytes_dec_status status;
    enum bytes_dec_error error;
    char error_text[256]; /* one sentence, naming the row tried */
    bool has_row;
    struct keylog_origin row; /* the row used or tried */
    uint8_t *plain;           /* heap: PLAINTEXT_x, or the inner CoAP message */
    size_t plain_len;
    /* EDHOC */
    uint8_t *id_cred; /* heap: ID_CRED_R (message_2) / ID_CRED_I (message_3) */
    size_t id_cred_len;
    bool has_c_r; /* message_2: C_R from PLAINTEXT_2 */
    uint8_t c_r[EDHOC_MAX_CONN_ID];
    size_t c_r_len;
    struct edhoc_ead_item ead[EDHOC_MAX_EAD_ITEMS]; /* values into plain or ead_store */
    size_t n_ead;
    uint8_t *ead_store; /* heap: message_1's EAD bytes */
    /* OSCORE: the inner message (for the RFC 9668 combined request,
     * besides the EDHOC fields above) */
    bool oscore;
    uint8_t *inner; /* heap: the decrypted CoAP message */
    size_t inner_len;
    uint8_t code;
    struct bytes_dec_option options[COAP_MSG_MAX_OPTIONS];
    size_t n_options;
    const uint8_t *payload; /* into inner; NULL: none */
    size_t payload_len;
    /* Private: a request's protected bytes (as plain OSCORE), kept for
     * its response, and the orientation of its row. */
    uint8_t *request;
    size_t request_len;
    const struct keylog_oscore_row *oscore_row;
    bool row_is_client;
};

struct bytes_dec_exchange {
    struct bytes_dec_msg msgs[EDHOC_CAPTURE_MAX_MESSAGES];
    bool has_edhoc_row;
    struct keylog_origin edhoc_row;
};

struct bytes_decryption {
    struct bytes_dec_exchange *ex; /* one per listed exchange of the analysis */
    size_t n_ex;
};

/* Opens what it can of every listed exchange of run (read from path,
 * which is read again for the messages' bytes). 0, or -1 with why (the
 * file cannot be read again, out of memory). */
int bytes_decrypt_capture(const char *path, const struct bytes_capture_run *run,
                          const struct keylog *k, struct bytes_decryption *out, char *why,
                          size_t cap);
void bytes_decryption_free(struct bytes_decryption *d);

/* One message alone, for known answers: message_2 (its EDHOC bytes),
 * message_1 of its exchange for TH_2, under the row. */
int bytes_decrypt_message_2(const struct keylog_edhoc_row *row, const uint8_t *message_1,
                            size_t m1_len, const uint8_t *message_2, size_t m2_len,
                            struct bytes_dec_msg *out);
void bytes_dec_msg_free(struct bytes_dec_msg *m);

/* The kind of an ID_CRED map: "kid", "x5t", "x5chain", "x5bag", "kccs",
 * "kcwt", "x5u", else "other"; *value / *value_len: the header value's
 * bytes (for kid: the kid). */
const char *bytes_id_cred_kind(const uint8_t *id_cred, size_t len, const uint8_t **value,
                               size_t *value_len);

#endif
