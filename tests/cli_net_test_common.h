/* What the end-to-end tests of the initiator and coap commands against
 * real `edhoc-cli responder` processes on loopback share: the main
 * responder each program starts in its group set-up (and checks between
 * tests), and reading the JSON the commands print. */
#ifndef CLI_NET_TEST_COMMON_H
#define CLI_NET_TEST_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <poll.h>

#include "net_test_util.h"
#include "vectors.h"

/* edhoc-cli ARGS, bounded in time. */
#define CLI_RUN(out, timeout_s, ...) net_cli_run(out, timeout_s, false, __VA_ARGS__)

#define assert_has(f, line)                                                                        \
    do {                                                                                           \
        if (!has(f, line))                                                                         \
            fail_msg("no line '%s' in:%s", line, f);                                               \
    } while (0)

/* ---- Per-layer accounting and --pcap ---- */

#define LAYER_MSGS 6 /* message_1..3, the 2.04, OSCORE request and response */

static struct net_proc main_responder;
static const char *cli;

static inline int setup(void **state)
{
    (void)state;
    cli = net_cli();
    if (net_make_dir("net"))
        return -1;
    return net_responder_start(&main_responder, "main", "--listen 127.0.0.1:0 --listen [::1]:0 -v");
}

/* Between tests: the main responder must still be up. */
static inline int check_alive(void **state)
{
    (void)state;
    if (main_responder.pid && kill(main_responder.pid, 0) == 0)
        return 0;
    fprintf(stderr, "the main responder died\n");
    return -1;
}

/* ---- Reading the JSON reports ----
 *
 * The output of a command run with --json (standard error may be mixed
 * in: lines before the document and after it) is read with Python's json
 * module and flattened into one line per value, "PATH=VALUE" with PATH the
 * keys and array indexes joined by '.' and VALUE the value as JSON
 * (objects and arrays too, on one line), e.g. "messages.0.edhoc_bytes=37",
 * "suites_r=[2]". An assertion then names a value by its path, whatever
 * the layout of the document. */

static const char flat_py[] = "import json, sys\n"
                              "lines = open(sys.argv[1]).read().split('\\n')\n"
                              "start = next(i for i, l in enumerate(lines) if l.startswith('{'))\n"
                              "doc, _ = json.JSONDecoder().raw_decode('\\n'.join(lines[start:]))\n"
                              "out = []\n"
                              "def walk(path, v):\n"
                              "    if path:\n"
                              "        out.append(path + '=' + json.dumps(v))\n"
                              "    items = v.items() if isinstance(v, dict) else enumerate(v) if "
                              "isinstance(v, list) else []\n"
                              "    for k, x in items:\n"
                              "        walk(path + '.' + str(k) if path else str(k), x)\n"
                              "walk('', doc)\n"
                              "print('\\n' + '\\n'.join(out))\n";

/* The flattened document (starts and ends with a newline); the test fails
 * when the output holds no JSON document. */
static inline char *flat(const char *out)
{
    char py[300], in[300], cmd[800];
    net_path(py, sizeof py, "flat.py");
    net_path(in, sizeof in, "flat.in");
    net_write_file(py, flat_py, 0600);
    net_write_file(in, out, 0600);
    snprintf(cmd, sizeof cmd, "python3 %s %s", py, in);
    char *f;
    if (net_sh(cmd, &f, 30) != 0)
        fail_msg("no JSON document in:\n%s\n%s", out, f);
    return f;
}

/* Whether the flattened document has the line "PATH=VALUE". */
static inline bool has(const char *f, const char *line)
{
    char pat[1024];
    snprintf(pat, sizeof pat, "\n%s\n", line);
    return strstr(f, pat) != NULL;
}

/* The value at path (as JSON text) into val; false when absent. */
/* Not inline: inlined into callers that free what they searched, the
 * compiler warns of a dangling pointer on paths that never take it. */
__attribute__((noinline, unused)) static bool get(const char *f, const char *path, char *val,
                                                  size_t cap)
{
    char pat[300];
    snprintf(pat, sizeof pat, "\n%s=", path);
    const char *p = strstr(f, pat);
    if (!p)
        return false;
    p += strlen(pat);
    size_t n = strcspn(p, "\n");
    snprintf(val, cap, "%.*s", (int)n, p);
    return true;
}

/* The index of the nth element of array whose member key is value (JSON
 * text, e.g. "\"message_1\""), or -1. */
static inline int index_of(const char *f, const char *array, const char *key, const char *value,
                           int nth)
{
    for (int i = 0; i < 1000; i++) {
        char path[200], v[600];
        snprintf(path, sizeof path, "%s.%d.%s", array, i, key);
        if (!get(f, path, v, sizeof v))
            return -1;
        if (!strcmp(v, value) && nth-- == 0)
            return i;
    }
    return -1;
}

/* The response to the --request given as request: its member field as
 * JSON text into val; false when there is none. */
static inline bool response_field(const char *f, const char *request, const char *field, char *val,
                                  size_t cap)
{
    char q[300], path[200];
    snprintf(q, sizeof q, "\"%s\"", request);
    int i = index_of(f, "responses", "request", q, 0);
    snprintf(path, sizeof path, "responses.%d.%s", i, field);
    return i >= 0 && get(f, path, val, cap);
}

/* The JSON document of a command's output (standard error lines around
 * it dropped), for the schema check. Not inline: inlined under the
 * sanitizers, the compiler warns of a null %s on paths that never take it. */
__attribute__((noinline, unused)) static char *json_doc(const char *out)
{
    const char *start = out[0] == '{' ? out : strstr(out, "\n{");
    if (!start)
        fail_msg("no JSON document in:\n%s", out);
    if (start != out)
        start++;
    const char *end = strstr(start, "\n}\n");
    size_t n = end ? (size_t)(end - start) + 3 : strlen(start);
    char *doc = malloc(n + 1);
    memcpy(doc, start, n);
    doc[n] = '\0';
    return doc;
}

/* The output holds a document the schema of command accepts. */
static inline void assert_valid(const char *out, const char *command)
{
    char *doc = json_doc(out);
    if (net_json_valid(doc, command, false))
        fail_msg("%s --json does not match docs/json/%s.schema.json", command, command);
    free(doc);
}

/* A successful initiator run; its report, valid and flattened. */
static inline char *expect_ok_json(const char *out, int rc)
{
    if (rc != 0)
        fail_msg("initiator failed (exit %d):\n%s", rc, out);
    assert_valid(out, "initiator");
    char *f = flat(out);
    assert_has(f, "outcome=\"ok\"");
    return f;
}

#endif /* CLI_NET_TEST_COMMON_H */
