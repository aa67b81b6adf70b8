/* Printing what --keylog opened (bytes_keylog_output.h). */
#include "bytes_keylog_output.h"

#include <stdio.h>
#include <string.h>

#include "edhoc/coap_msg.h"

static bool option_is_text(uint16_t n)
{
    return edhoc_coap_option_format(n) == EDHOC_COAP_FORMAT_STRING;
}

static bool option_is_uint(uint16_t n)
{
    return edhoc_coap_option_format(n) == EDHOC_COAP_FORMAT_UINT;
}

static unsigned long option_uint(const struct bytes_dec_option *o)
{
    unsigned long v = 0;
    for (size_t i = 0; i < o->len && i < sizeof v; i++)
        v = v << 8 | o->value[i];
    return v;
}

static bool printable(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((p[i] < 0x20 && p[i] != '\n' && p[i] != '\t' && p[i] != '\r') || p[i] >= 0x7f)
            return false;
    return true;
}

static void print_hex(const uint8_t *v, size_t len, size_t max)
{
    printf("h'");
    for (size_t i = 0; i < len && i < max; i++)
        printf("%02x", v[i]);
    printf("%s'", len > max ? "..." : "");
}

static int ead_number(enum edhoc_capture_msg_type t)
{
    switch (t) {
    case EDHOC_CAPTURE_MSG_1: return 1;
    case EDHOC_CAPTURE_MSG_2: return 2;
    case EDHOC_CAPTURE_MSG_3:
    case EDHOC_CAPTURE_MSG_3_OSCORE: return 3;
    case EDHOC_CAPTURE_MSG_4: return 4;
    default: return 0;
    }
}

static const char *id_cred_name(enum edhoc_capture_msg_type t)
{
    return t == EDHOC_CAPTURE_MSG_2 ? "ID_CRED_R" : "ID_CRED_I";
}

void bytes_keylog_print_exchange(const struct bytes_dec_exchange *d)
{
    if (d->has_edhoc_row)
        printf("  key log: %s line %u (by G_X)\n", d->edhoc_row.file, d->edhoc_row.line);
    else
        printf("  key log: no edhoc_secrets row has this exchange's G_X\n");
}

void bytes_keylog_print_msg(const struct edhoc_capture_msg *m, const struct bytes_dec_msg *d)
{
    if (d->status == BYTES_DEC_NO_ROW || d->status == BYTES_DEC_FAILED) {
        printf("      not decrypted: %s\n", d->error_text);
        if (!d->oscore)
            return;
    }
    if (d->id_cred_len) {
        const uint8_t *v;
        size_t vl;
        const char *kind = bytes_id_cred_kind(d->id_cred, d->id_cred_len, &v, &vl);
        printf("      %s: %s ", id_cred_name(m->type), kind);
        print_hex(v, vl, 24);
        printf(" (%zu bytes: ", d->id_cred_len);
        print_hex(d->id_cred, d->id_cred_len, 24);
        printf(")\n");
    }
    if (d->has_c_r) {
        printf("      C_R: ");
        print_hex(d->c_r, d->c_r_len, 8);
        printf("\n");
    }
    for (size_t i = 0; i < d->n_ead; i++) {
        printf("      EAD_%d: label %lld%s", ead_number(m->type), (long long)d->ead[i].label,
               d->ead[i].label < 0 ? " (critical)" : "");
        if (d->ead[i].has_value) {
            printf(", value ");
            print_hex(d->ead[i].value, d->ead[i].value_len, 32);
        }
        printf("\n");
    }
    if (d->oscore) {
        printf("      inner %s: %u.%02u", m->from_initiator ? "request" : "response", d->code >> 5,
               d->code & 31);
        for (size_t i = 0; i < d->n_options; i++) {
            const struct bytes_dec_option *o = &d->options[i];
            const char *name = edhoc_coap_option_name(o->number);
            if (name)
                printf(", %s: ", name);
            else
                printf(", option %u: ", o->number);
            if (option_is_text(o->number))
                printf("%.*s", (int)o->len, (const char *)o->value);
            else if (option_is_uint(o->number))
                printf("%lu", option_uint(o));
            else
                print_hex(o->value, o->len, 32);
        }
        if (d->payload && printable(d->payload, d->payload_len))
            printf(", payload \"%.*s\"\n", (int)d->payload_len, (const char *)d->payload);
        else if (d->payload) {
            printf(", payload ");
            print_hex(d->payload, d->payload_len, 64);
            printf("\n");
        } else {
            printf(", no payload\n");
        }
    }
    if (d->status == BYTES_DEC_OK && d->has_row)
        printf("      (opened with %s line %u)\n", d->row.file, d->row.line);
}

json_t *bytes_keylog_json(const struct keylog *k)
{
    json_t *o = json_object();
    json_t *files = json_array();
    for (size_t i = 0; i < k->n_files; i++)
        json_array_append_new(files, json_string(k->files[i]));
    cli_json_set(o, "files", files);
    cli_json_set(o, "edhoc_rows", json_integer((json_int_t)k->n_edhoc));
    cli_json_set(o, "oscore_rows", json_integer((json_int_t)k->n_oscore));
    return o;
}

json_t *bytes_keylog_row_json(bool has_row, const struct keylog_origin *at)
{
    if (!has_row)
        return json_null();
    json_t *o = json_object();
    cli_json_set(o, "file", json_string(at->file));
    cli_json_set(o, "line", json_integer(at->line));
    return o;
}

static json_t *inner_json(const struct bytes_dec_msg *d)
{
    if (!d->oscore)
        return json_null();
    json_t *o = json_object();
    char code[8];
    snprintf(code, sizeof code, "%u.%02u", d->code >> 5, d->code & 31);
    cli_json_set(o, "code", json_string(code));
    json_t *opts = json_array();
    for (size_t i = 0; i < d->n_options; i++) {
        const struct bytes_dec_option *op = &d->options[i];
        json_t *j = json_object();
        cli_json_set(j, "number", json_integer(op->number));
        cli_json_set(j, "name", cli_json_string_or_null(edhoc_coap_option_name(op->number)));
        cli_json_set(j, "value_hex", cli_json_hex_value(op->value, op->len));
        cli_json_set(j, "value_uint",
                     option_is_uint(op->number) && op->len <= 4
                         ? json_integer((json_int_t)option_uint(op))
                         : json_null());
        json_array_append_new(opts, j);
    }
    cli_json_set(o, "options", opts);
    if (d->payload) {
        cli_json_set_bytes(o, "payload", d->payload, d->payload_len);
    } else {
        cli_json_set(o, "payload_hex", json_null());
        cli_json_set(o, "payload_text", json_null());
    }
    return o;
}

json_t *bytes_keylog_msg_json(const struct edhoc_capture_msg *m, const struct bytes_dec_msg *d)
{
    static const char *const status[] = {
        [BYTES_DEC_CLEAR] = "clear",
        [BYTES_DEC_OK] = "ok",
        [BYTES_DEC_NO_ROW] = "no_row",
        [BYTES_DEC_FAILED] = "failed",
    };
    json_t *o = json_object();
    cli_json_set(o, "status", json_string(status[d->status]));
    cli_json_set(o, "key_row", bytes_keylog_row_json(d->has_row, &d->row));
    bool failed = d->status == BYTES_DEC_NO_ROW || d->status == BYTES_DEC_FAILED;
    cli_json_set(o, "error", failed ? json_string(bytes_dec_error_name(d->error)) : json_null());
    cli_json_set(o, "error_text", failed ? json_string(d->error_text) : json_null());
    if (d->id_cred_len) {
        json_t *ic = json_object();
        const uint8_t *v;
        size_t vl;
        cli_json_set(ic, "type",
                     json_string(bytes_id_cred_kind(d->id_cred, d->id_cred_len, &v, &vl)));
        cli_json_set(ic, "value_hex", cli_json_hex_value(v, vl));
        cli_json_set(ic, "hex", cli_json_hex_value(d->id_cred, d->id_cred_len));
        cli_json_set(o, "id_cred", ic);
    } else {
        cli_json_set(o, "id_cred", json_null());
    }
    cli_json_set(o, "c_r_hex", d->has_c_r ? cli_json_hex_value(d->c_r, d->c_r_len) : json_null());
    json_t *ead = json_array();
    for (size_t i = 0; i < d->n_ead; i++) {
        json_t *e = json_object();
        cli_json_set(e, "message", json_integer(ead_number(m->type)));
        cli_json_set(e, "label", json_integer((json_int_t)d->ead[i].label));
        cli_json_set(e, "critical", json_boolean(d->ead[i].label < 0));
        cli_json_set(e, "value_hex",
                     d->ead[i].has_value ? cli_json_hex_value(d->ead[i].value, d->ead[i].value_len)
                                         : json_null());
        json_array_append_new(ead, e);
    }
    cli_json_set(o, "ead", ead);
    cli_json_set(o, "inner", inner_json(d));
    return o;
}
