/* What the files of the interop matrix share (not for the command line). */
#ifndef EDHOC_TOOLS_INTEROP_INTERNAL_H
#define EDHOC_TOOLS_INTEROP_INTERNAL_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "interop_matrix.h"

/* What the matrix learnt so far. */
struct matrix_state {
    int suites_r_cache[32];
    /* --framing auto: the framing the device answered in (A2 or BARE),
     * AUTO while not known; later cells use it directly instead of
     * probing A.2 again. */
    enum interop_framing auto_known;
    bool any_ran; /* some cell got past the initiator's setup */
};

/* ---- One initiator run in a child process, bounded (interop_child.c) ---- */

struct child_result {
    bool killed;        /* our bound ran out */
    bool interrupted;   /* we were asked to stop (SIGINT/SIGTERM): the child was stopped */
    int exit_code;      /* -1: died by a signal */
    char *out;          /* stdout (the --json report) */
    json_t *report;     /* out parsed, when it is a JSON object; else NULL */
    char err_line[300]; /* the last line of stderr */
    long ms;
};

/* The argv of one `edhoc-cli initiator` run against the device: the
 * options every run has, then those of the run, then the user's
 * pass-through options. */
struct initiator_argv {
    char *v[INTEROP_MAX_PASS + 24];
    int n;
    char method[8], timeout[48];
};

void initiator_argv_start(const struct interop_matrix_opts *o, int method, const char *suites,
                          struct initiator_argv *a);
/* Add the pass-through options and run it, bounded by the timeout (twice
 * that with --framing auto, which may run a second handshake). */
void initiator_argv_run(const struct interop_matrix_opts *o, struct initiator_argv *a, bool twice,
                        struct child_result *r);
void child_result_free(struct child_result *r);

bool interop_stopped(const struct interop_matrix_opts *o);

/* The initiator's --json report, read with a JSON parser: members are
 * looked up in the object they belong to, so a key of a nested object
 * (an "outcome" inside "responses") or text inside a string never stands
 * for a top-level member. Absent values are null or missing: both read as
 * "not there". */
static inline const char *member_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* An integer member; false when absent, null or not an integer. */
static inline bool member_long(const json_t *obj, const char *key, long *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        return false;
    *out = (long)json_integer_value(v);
    return true;
}

/* ---- Texts of a cell ---- */

static inline void set_text(char *dst, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void set_text(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
}

/* Append ", more" style text to a cell's reason. */
static inline void add_text(char *dst, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void add_text(char *dst, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(dst);
    if (len + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + len, cap - len, fmt, ap);
    va_end(ap);
}

static inline bool is_bare(const struct interop_cell *c)
{
    return c->framing_used[0] ? !strcmp(c->framing_used, "bare") : c->framing == INTEROP_FR_BARE;
}

static inline void set_unsupported(struct interop_cell *c, enum interop_unsupported what)
{
    c->outcome = INTEROP_NOT_SUPPORTED;
    c->failure = INTEROP_FAIL_NONE;
    c->unsupported = what;
}

/* ---- Diagnosis (interop_diagnose.c) ---- */

/* How the cell ended, from the initiator's run r; may probe the device
 * once more for its SUITES_R. */
void diagnose(const struct interop_matrix_opts *o, struct matrix_state *st, struct interop_cell *c,
              const struct child_result *r);
/* The one-line result of a cell from its outcome and texts. */
void compose_result(struct interop_cell *c);

/* ---- Summary (interop_summary.c) ---- */

void settle_framing(struct interop_cell *cells, size_t n);
void summarize(const struct interop_matrix_opts *o, const struct interop_cell *cells, size_t n,
               struct interop_summary *s);

#endif
