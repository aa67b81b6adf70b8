/*
 * The A.2 framing of a simulated exchange (simulate.h): simulate has no
 * datagrams, so each message is put into the CoAP message RFC 9528
 * Appendix A.2 would send, encoded here rather than estimated.
 */
#include <string.h>

#include "edhoc/coap_msg.h"
#include "edhoc/transport.h"
#include "simulate.h"

/* The CoAP message carrying one EDHOC message (m NULL: the empty 2.04
 * answering message_3); its length or -1. */
static long frame_message(const struct simulate_recorded *m, const struct simulate_run *run,
                          uint8_t *out, size_t cap)
{
    static const uint8_t token = 0x01;
    static uint8_t cf_req = 65, cf_resp = 64;
    uint8_t payload[EDHOC_MAX_MESSAGE + EDHOC_MAX_CONN_ID + 2];
    size_t pl = 0;
    struct coap_msg c;
    memset(&c, 0, sizeof c);
    c.token_len = 1;
    c.token[0] = token;
    c.mid = 1;
    if (!m) {
        /* RFC 9528 Appendix A.2: the responder answers message_3 with a
         * 2.04 that carries no payload when there is no message_4. */
        c.type = COAP_TYPE_ACK;
        c.code = COAP_CODE_CHANGED;
        long n = edhoc_coap_msg_encode(&c, out, cap);
        return n < 0 ? -1 : n;
    }
    if (m->sender == 'I') {
        c.type = COAP_TYPE_CON;
        c.code = COAP_CODE_POST;
        edhoc_coap_msg_add_option(&c, COAP_OPT_URI_PATH, (const uint8_t *)".well-known", 11);
        edhoc_coap_msg_add_option(&c, COAP_OPT_URI_PATH, (const uint8_t *)"edhoc", 5);
        edhoc_coap_msg_add_option(&c, COAP_OPT_CONTENT_FORMAT, &cf_req, 1);
        if (!strcmp(m->name, "message_1")) {
            payload[pl++] = 0xf5;
        } else {
            long n = edhoc_coap_cid_encode(run->c_r, run->c_r_len, payload, sizeof payload);
            if (n < 0)
                return -1;
            pl = (size_t)n;
        }
    } else {
        c.type = COAP_TYPE_ACK;
        c.code = strcmp(m->name, "error") ? COAP_CODE_CHANGED : COAP_CODE_BAD_REQUEST;
        edhoc_coap_msg_add_option(&c, COAP_OPT_CONTENT_FORMAT, &cf_resp, 1);
    }
    if (pl + m->len > sizeof payload)
        return -1;
    memcpy(payload + pl, m->bytes, m->len);
    c.payload = payload;
    c.payload_len = pl + m->len;
    long n = edhoc_coap_msg_encode(&c, out, cap);
    return n < 0 ? -1 : n;
}

static int put(struct simulate_framed *f, const char *name, char from, long edhoc,
               const struct simulate_recorded *m, const struct simulate_run *run)
{
    long cl = frame_message(m, run, f->coap, sizeof f->coap);
    if (cl < 0)
        return -1;
    f->name = name;
    f->from = from;
    f->edhoc = edhoc;
    f->coap_len = (size_t)cl;
    return 0;
}

size_t simulate_frame_run(const struct simulate_run *run, struct simulate_framed *out, size_t max)
{
    if (run->err)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < run->n_msgs && n + 2 <= max; i++) {
        const struct simulate_recorded *m = &run->msgs[i];
        if (put(&out[n], m->name, m->sender, (long)m->len, m, run))
            return 0;
        n++;
        bool last = i + 1 == run->n_msgs;
        if (!strcmp(m->name, "message_3") && (last || strcmp(run->msgs[i + 1].name, "message_4"))) {
            /* header 4 + token 1 */
            if (put(&out[n], "(2.04 Changed)", 'R', -1, NULL, run))
                return 0;
            n++;
        }
    }
    return n;
}
