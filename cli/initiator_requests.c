/*
 * The initiator's --request specifications as plain CoAP requests, and the
 * --payload-file payload they take (initiator_output.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "edhoc/blockwise.h"
#include "initiator_output.h"

/* --payload-file: the payload of every --request given without one. */
static uint8_t *file_payload;
static size_t file_payload_len;

/* "METHOD PATH [PAYLOAD]" -> a plain request. */
long cli_initiator_build_request(const char *spec, uint8_t *out, size_t cap, char *err,
                                 size_t errcap)
{
    char m[16], path[512];
    const char *sp = strchr(spec, ' ');
    if (!sp || (size_t)(sp - spec) >= sizeof m) {
        snprintf(err, errcap, "--request '%s': expected 'METHOD PATH [PAYLOAD]'", spec);
        return -1;
    }
    memcpy(m, spec, (size_t)(sp - spec));
    m[sp - spec] = '\0';
    while (*sp == ' ')
        sp++;
    size_t pl = strcspn(sp, " ");
    if (pl == 0 || pl >= sizeof path) {
        snprintf(err, errcap, "--request '%s': no path", spec);
        return -1;
    }
    memcpy(path, sp, pl);
    path[pl] = '\0';
    const char *payload = sp + pl;
    if (*payload == ' ')
        payload++;
    int code = cli_coap_method(m);
    if (code < 0) {
        snprintf(err, errcap, "--request '%s': unknown method %s", spec, m);
        return -1;
    }
    char *q = strchr(path, '?');
    const char *query = "";
    if (q) {
        *q = '\0';
        query = q + 1;
    }
    const uint8_t *body = (const uint8_t *)payload;
    size_t body_len = strlen(payload);
    if (!body_len && file_payload) {
        body = file_payload;
        body_len = file_payload_len;
    }
    long n = cli_coap_build_request((uint8_t)code, path, query, body_len ? 0 : -1, body, body_len,
                                    -1, out, cap);
    if (n < 0)
        snprintf(err, errcap, "--request '%s': cannot encode", spec);
    return n;
}

int cli_initiator_read_payload_file(const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "edhoc-cli initiator: --payload-file %s: %s\n", path, strerror(errno));
        return -1;
    }
    free(file_payload);
    file_payload = malloc(EDHOC_BW_DEFAULT_MAX_BODY + 1);
    size_t n = file_payload ? fread(file_payload, 1, EDHOC_BW_DEFAULT_MAX_BODY + 1, f) : 0;
    bool bad = !file_payload || ferror(f) || n > EDHOC_BW_DEFAULT_MAX_BODY;
    if (f != stdin)
        fclose(f);
    if (bad) {
        fprintf(stderr, "edhoc-cli initiator: --payload-file %s: %s\n", path,
                file_payload ? "unreadable or above 65536 bytes" : "out of memory");
        free(file_payload);
        file_payload = NULL;
        return -1;
    }
    file_payload_len = n;
    return 0;
}

void cli_initiator_payload_free(void)
{
    free(file_payload);
    file_payload = NULL;
    file_payload_len = 0;
}
