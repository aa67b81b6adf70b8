/*
 * What the coap command prints: each response as text or as a member of
 * --json's "responses", the --repeat figures, and the JSON report of the
 * run as a whole (docs/json/coap.schema.json).
 */
#ifndef CLI_COAP_REPORT_H
#define CLI_COAP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct client_coap_response;
struct client_coap_run;
struct oscore_context;

/* NULL root: text output. */
struct coap_report {
    json_t *root;
    json_t *responses;
    const char *output_path; /* --output FILE, or NULL */
};

void coap_report_begin(struct coap_report *rep, bool json, const char *output_path);
/* The engine's hooks (user: the struct coap_report). One response: a
 * member of "responses" or a text line; with --output the body goes to
 * that file and the line says how many bytes. Returns 0 or -1 (the file
 * could not be written). */
int coap_report_response(void *user, const struct client_coap_response *ri, const uint8_t *pl,
                         size_t pll);
void coap_report_notice(void *user, const char *line);
/* --json when nothing could be sent (the host name does not resolve):
 * the report of a run without responses, so that a script reads every
 * failure the same way. */
void coap_report_unsent(const char *error, const struct oscore_context *ctx);
/* The --repeat figures, when the run has them (text: one line now). */
void coap_report_repeat(struct coap_report *rep, const struct client_coap_run *r);
/* The JSON report of the run (nothing for text output); frees it. */
void coap_report_finish(struct coap_report *rep, const struct client_coap_run *r, bool partial);

#endif
