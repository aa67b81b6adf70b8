/*
 * The interop matrix against a device (`edhoc-cli interop URI`), with us
 * as the initiator. Every cell (method x suite x ID_CRED type x message_4,
 * plus the RFC 9668 combined request and the bare framing) is one run of
 * the program's own `initiator` command in a child process, bounded in
 * time, so a crashed or silent device costs a timeout per cell and never
 * hangs the matrix. The child's --json report is read back and split in
 * two: how EDHOC ended, and how the OSCORE request after it ended, so that
 * a device that does only part of the job (EDHOC without OSCORE
 * resources, no message_4, one framing) shows what it does. Every cell is
 * ok, failed, not supported (the device said so) or skipped (not possible
 * with our credentials), with a reason that names the most likely causes.
 *
 * The engine returns the cells and their summary; printing them (the
 * table, the JSON of docs/json/interop.schema.json) is the caller's.
 */
#ifndef EDHOC_TOOLS_INTEROP_MATRIX_H
#define EDHOC_TOOLS_INTEROP_MATRIX_H

#include <stdbool.h>
#include <stddef.h>

#define INTEROP_MAX_LIST        16
#define INTEROP_MAX_PASS        48 /* pass-through argv entries (credentials, requests) */
#define INTEROP_MAX_CELLS       1024
#define INTEROP_KILL_GRACE_MS   2000 /* beyond the timeout before a cell is killed */
#define INTEROP_DEFAULT_REQUEST "GET /.well-known/core"

/* The exit codes of the initiator that the diagnosis tells apart (the man
 * page's EXIT STATUS; the command line checks they are its own). */
enum interop_initiator_exit {
    INTEROP_EXIT_OK = 0,
    INTEROP_EXIT_FAILURE = 1,
    INTEROP_EXIT_USAGE = 2,
    INTEROP_EXIT_INPUT = 3,
    INTEROP_EXIT_PEER_ERROR = 4,
    INTEROP_EXIT_VERIFY = 5,
    INTEROP_EXIT_TIMEOUT = 6,
    INTEROP_EXIT_OSCORE = 7,
};

enum interop_outcome {
    INTEROP_OK,
    INTEROP_FAILED,
    INTEROP_NOT_SUPPORTED, /* the device said it does not do this */
    INTEROP_SKIPPED,       /* we could not run it (our credentials, our options) */
};

/* "ok", "failed", "not supported", "skipped". */
extern const char *const interop_outcome_names[];

/* How a failed cell failed, as the initiator's exit code tells it. */
enum interop_failure {
    INTEROP_FAIL_NONE,
    INTEROP_FAIL_PEER_ERROR,
    INTEROP_FAIL_VERIFY,
    INTEROP_FAIL_TIMEOUT,
    INTEROP_FAIL_OSCORE,
    INTEROP_FAIL_OTHER
};

/* "", "peer-error", "verify", "timeout", "oscore", "failed". */
extern const char *const interop_failure_names[];

/* What a "not supported" cell says the device does not do. */
enum interop_unsupported {
    INTEROP_NS_NONE,
    INTEROP_NS_METHOD,
    INTEROP_NS_SUITE,
    INTEROP_NS_M4,
    INTEROP_NS_COMBINED,
    INTEROP_NS_FRAMING
};

/* "", "method", "suite", "message_4", "combined", "framing". */
extern const char *const interop_unsupported_names[];

/* The framing of a cell as asked. INTEROP_FR_BOTH (the default) is a
 * matrix mode only: A.2 cells plus the bare variant. */
enum interop_framing { INTEROP_FR_A2, INTEROP_FR_BARE, INTEROP_FR_AUTO, INTEROP_FR_BOTH };

/* "A.2", "bare", "auto" (INTEROP_FR_BOTH: "A.2"). */
const char *interop_framing_name(enum interop_framing f);

struct interop_cell {
    int method, suite;
    char id_cred[12];
    bool message_4, combined;
    enum interop_framing framing; /* as asked: A2, BARE or AUTO */
    char framing_used[8];         /* "A.2", "bare" as the initiator ran it; "" not known */
    char name[64];
    enum interop_outcome outcome;
    enum interop_failure failure;
    enum interop_unsupported unsupported;
    bool edhoc_ok;                /* the handshake completed */
    bool a2_unparsed;             /* the device could not parse our A.2 message_1 */
    long err_code;                /* the peer's ERR_CODE, -1: none (null in JSON) */
    char edhoc[240];              /* "ok" or how EDHOC ended; "" when not run */
    char oscore[240];             /* "ok" or how the request ended; "" when not reached */
    char result[500];             /* both in one line */
    char reason[700];             /* the likely causes */
    char tolerated[120];          /* deviations of the device the initiator tolerated, "a, b" */
    long edhoc_bytes, coap_bytes; /* the initiator's totals; -1: not reported (null) */
    long ms;
    bool interrupted; /* the run was stopped while it ran: left out of the matrix */
    int setup_exit;   /* the initiator refused its command line before sending */
    char setup_text[300];
};

struct interop_matrix_opts {
    const char *uri;
    int methods[INTEROP_MAX_LIST], suites[INTEROP_MAX_LIST];
    int n_methods, n_suites;
    char id_creds[INTEROP_MAX_LIST][12];
    int n_id_creds;
    long timeout_ms; /* per cell */
    bool full;       /* every variant for every configuration */
    enum interop_framing framing;
    const char *trace_dir;              /* NULL: no traces; else a directory fit for secrets */
    const char *pass[INTEROP_MAX_PASS]; /* the initiator's options, passed to every cell */
    int n_pass;
    const char *request; /* the first --request, NULL: the default */
    bool request_none;   /* --request none: EDHOC only */
    /* Nonzero once the run is to stop (a signal came): the running cell
     * is stopped and left out. NULL: never. */
    int (*interrupted)(void);
    /* Before each cell: its number (from 1), the cells planned, its name
     * and the cells failed so far. NULL: none. */
    void (*progress)(void *user, size_t number, size_t planned, const char *name, size_t failed);
    /* A problem that does not stop the run (a trace file not written). */
    void (*warn)(void *user, const char *text);
    void *user;
};

/* What worked in some dimension. */
struct interop_support {
    bool method[4], id_cred[INTEROP_MAX_LIST], a2, bare;
    int suites[INTEROP_MAX_LIST];
    int n_suites;
    size_t cells;
};

struct interop_summary {
    size_t ok, failed, not_supported, skipped;
    struct interop_support edhoc, oscore; /* handshakes completed; OSCORE answered as well */
    int m4_ok, m4_ns, m4_tried, comb_ok, comb_ns, comb_tried;
    /* What the device said it does not do (and nothing of it worked). */
    bool ns_method[4], ns_a2, ns_bare;
    int ns_suites[INTEROP_MAX_LIST];
    int n_ns_suites;
};

struct interop_matrix {
    struct interop_cell *cells;
    size_t n, planned; /* cells completed, cells planned */
    bool any_ran;      /* some cell got past the initiator's setup */
    /* The matrix stopped at this cell: a command line the initiator
     * refuses, for something no cell changes (its setup_exit and
     * setup_text say what); NULL otherwise. */
    const struct interop_cell *fatal;
    struct interop_summary summary; /* of the n cells (not when fatal) */
};

/* The cells the options make (at most INTEROP_MAX_CELLS may run). */
size_t interop_matrix_planned(const struct interop_matrix_opts *o);

/* Run the matrix. Returns 0 (m filled in; free it with
 * interop_matrix_free), or -1 when out of memory. */
int interop_matrix_run(const struct interop_matrix_opts *o, struct interop_matrix *m);

void interop_matrix_free(struct interop_matrix *m);

/* "yes", "no", "not supported" or "not tested" for a variant. */
const char *interop_support_text(int ok, int not_supported, int tried);

#endif
