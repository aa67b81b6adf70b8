/*
 * The coap command's output (coap_report.h).
 */
#include "coap_report.h"

#include <string.h>

#include "coap_request.h"
#include "edhoc/oscore.h"
#include "output/json_out.h"
#include "net_report.h"
#include "util.h"

void coap_report_begin(struct coap_report *rep, bool json, const char *output_path)
{
    rep->root = NULL;
    rep->responses = NULL;
    rep->output_path = output_path;
    if (json) {
        rep->root = json_object();
        rep->responses = json_array();
        json_object_set(rep->root, "responses", rep->responses);
    }
}

void coap_report_notice(void *user, const char *line)
{
    (void)user;
    fprintf(stderr, "edhoc-cli coap: %s\n", line);
}

int coap_report_response(void *user, const struct client_coap_response *ri, const uint8_t *pl,
                         size_t pll)
{
    struct coap_report *rep = user;
    const char *output_path = ri->output ? rep->output_path : NULL;
    char cn[48];
    int rc = 0;
    if (output_path)
        rc = cli_write_output("coap", output_path, pl, pll);
    cli_coap_code_name(ri->code, cn, sizeof cn);
    if (rep->root) {
        json_t *r = json_object();
        /* "2.05 Content": the code, then the registry's name apart. */
        char *space = strchr(cn, ' ');
        if (space)
            *space = '\0';
        cli_json_set(r, "code", json_string(cn));
        cli_json_set(r, "code_name", cli_json_string_or_null(space ? space + 1 : NULL));
        cli_json_set(r, "oscore", json_boolean(ri->protected_resp));
        cli_json_set(r, "content_format",
                     cli_json_int_or_null(ri->content_format >= 0, ri->content_format));
        cli_json_set(r, "bytes", json_integer(ri->bytes));
        cli_json_set(r, "piv", cli_json_int_or_null(ri->piv >= 0, ri->piv));
        cli_json_set(r, "echo", json_boolean(ri->echo));
        cli_json_set(r, "echo_challenge_piv",
                     cli_json_int_or_null(ri->echo_piv >= 0, ri->echo_piv));
        cli_json_set(r, "block1_blocks",
                     cli_json_int_or_null(ri->block1_blocks >= 0, ri->block1_blocks));
        cli_json_set(r, "block2_blocks",
                     cli_json_int_or_null(ri->block2_blocks >= 0, ri->block2_blocks));
        cli_json_set(r, "payload_bytes", json_integer((json_int_t)pll));
        /* No payload (or one written to --output): null, not "". */
        if (output_path || pll == 0) {
            cli_json_set(r, "payload_hex", json_null());
            cli_json_set(r, "payload_text", json_null());
        } else {
            cli_json_set_bytes(r, "payload", pl, pll);
        }
        cli_json_set(r, "output", cli_json_string_or_null(output_path));
        json_array_append_new(rep->responses, r);
        return rc;
    }
    printf("%s%s%s", cn, ri->oscore ? (ri->protected_resp ? " (OSCORE)" : " (unprotected)") : "",
           ri->echo ? " after an Echo challenge" : "");
    if (output_path)
        printf(": %zu bytes written to %s", pll, output_path);
    else if (pll) {
        printf(": ");
        cli_print_payload(stdout, pl, pll);
    }
    printf("\n");
    fflush(stdout);
    return rc;
}

void coap_report_unsent(const char *error, const struct oscore_context *ctx)
{
    json_t *root = json_object();
    cli_json_set(root, "responses", json_array());
    cli_json_set(root, "repeat", json_null());
    cli_json_set(root, "deregistered", json_null());
    cli_json_set(root, "oscore_sequence_numbers", ctx ? json_array() : json_null());
    cli_json_set(root, "oscore_requests_protected", cli_json_int_or_null(ctx != NULL, 0));
    cli_json_set(root, "next_sequence_number",
                 cli_json_int_or_null(ctx != NULL, ctx ? (long long)oscore_context_ssn(ctx) : 0));
    cli_json_set(root, "oscore_b2", json_null());
    cli_json_set(root, "error", json_string(error));
    cli_json_set(root, "partial", json_false());
    /* cli_json_print takes the reference. */
    if (cli_json_print(root, stdout))
        fprintf(stderr, "edhoc-cli coap: standard output: write error\n");
}

void coap_report_repeat(struct coap_report *rep, const struct client_coap_run *r)
{
    if (!r->repeat_done)
        return;
    double secs = r->repeat_seconds;
    if (rep->root) {
        json_t *jr = json_object();
        cli_json_set(jr, "requests", json_integer(r->repeat_sent));
        cli_json_set(jr, "ok", json_integer(r->repeat_ok));
        cli_json_set(jr, "seconds", cli_json_real_or_null(secs));
        cli_json_set(jr, "requests_per_second",
                     secs > 0 ? cli_json_real_or_null((double)r->repeat_ok / secs) : json_null());
        cli_json_set(rep->root, "repeat", jr);
    } else {
        printf("Repeat: %ld requests after the first, %ld ok in %.3f s: %.1f requests/s\n",
               r->repeat_sent, r->repeat_ok, secs, secs > 0 ? (double)r->repeat_ok / secs : 0.0);
    }
}

void coap_report_finish(struct coap_report *rep, const struct client_coap_run *r, bool partial)
{
    if (!rep->root)
        return;
    const struct client_b2_follow *follow = &r->follow;
    json_decref(rep->responses);
    if (!json_object_get(rep->root, "repeat"))
        cli_json_set(rep->root, "repeat", json_null());
    cli_json_set(rep->root, "deregistered",
                 r->deregistered == 1 ? json_null() : json_boolean(r->deregistered == 0));
    /* What this run used, so that a script can tell runs apart. */
    json_t *used = json_null();
    if (r->ctx) {
        used = json_array();
        for (size_t i = 0; i < r->seqs.n; i++)
            json_array_append_new(used, json_integer((json_int_t)r->seqs.first[i]));
    }
    cli_json_set(rep->root, "oscore_sequence_numbers", used);
    cli_json_set(rep->root, "oscore_requests_protected",
                 cli_json_int_or_null(r->ctx != NULL, (long long)r->seqs.total));
    cli_json_set(
        rep->root, "next_sequence_number",
        cli_json_int_or_null(r->ctx != NULL, r->ctx ? (long long)oscore_context_ssn(r->ctx) : 0));
    json_t *b2 = json_null();
    if (follow->started) {
        b2 = json_object();
        cli_json_set(b2, "r2_hex", cli_json_hex_value(follow->st.r2, follow->st.r2_len));
        cli_json_set(b2, "previous_id_context_hex",
                     follow->has_id1 ? cli_json_hex_value(follow->id1, follow->id1_len)
                                     : json_null());
        cli_json_set(b2, "id_context_hex",
                     cli_json_hex_value(follow->st.id_context, follow->st.id_context_len));
        cli_json_set(b2, "completed", json_boolean(follow->completed));
    }
    cli_json_set(rep->root, "oscore_b2", b2);
    cli_json_set(rep->root, "error", cli_json_string_or_null(r->error));
    cli_json_set(rep->root, "partial", json_boolean(partial));
    if (cli_json_print(rep->root, stdout))
        fprintf(stderr, "edhoc-cli coap: standard output: write error\n");
    rep->root = NULL;
}
