/*
 * edhoc-cli interop URI: a device test matrix with us as the initiator.
 * Every cell (method x suite x ID_CRED type x message_4, plus the RFC 9668
 * combined request and the bare framing) is one run of `edhoc-cli
 * initiator` in a child process, bounded in time, so a crashed or silent
 * device costs a timeout per cell and never hangs the tool. The child's
 * --json report is read back and split in two: how EDHOC ended, and how
 * the OSCORE request after it ended, so that a device that does only part
 * of the job (EDHOC without OSCORE resources, no message_4, one framing)
 * shows what it does. Every cell is ok, failed, not supported (the device
 * said so) or skipped (not possible with our credentials), with a reason
 * that names the most likely causes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "edhoc/edhoc.h"
#include "interop_report.h"
#include "json_out.h"
#include "progress.h"
#include "util.h"
#include "path_check.h"

#define MAX_LIST 16
#define MAX_PASS 48      /* pass-through argv entries (credentials, requests) */
#define MAX_CELLS 1024
#define MAX_OUTPUT (1u << 20) /* the child's --json report, bounded */
#define KILL_GRACE_MS 2000    /* beyond --timeout before the child is killed */
#define DEFAULT_REQUEST "GET /.well-known/core"

enum outcome {
    OUT_OK,
    OUT_FAILED,
    OUT_NOT_SUPPORTED, /* the device said it does not do this */
    OUT_SKIPPED,       /* we could not run it (our credentials, our options) */
};

static const char *const outcome_names[] = {"ok", "failed", "not supported", "skipped"};

/* How a failed cell failed, as the initiator's exit code tells it. */
enum failure { FAIL_NONE, FAIL_PEER_ERROR, FAIL_VERIFY, FAIL_TIMEOUT, FAIL_OSCORE, FAIL_OTHER };

static const char *const failure_names[] = {"", "peer-error", "verify", "timeout", "oscore",
                                            "failed"};

/* What a "not supported" cell says the device does not do. */
enum unsupported { NS_NONE, NS_METHOD, NS_SUITE, NS_M4, NS_COMBINED, NS_FRAMING };

/* --framing: the framing of a cell as asked. FR_BOTH (the default) is a
 * matrix mode only: A.2 cells plus the bare variant. */
enum framing { FR_A2, FR_BARE, FR_AUTO, FR_BOTH };

struct cell {
    int method, suite;
    char id_cred[12];
    bool message_4, combined;
    enum framing framing;   /* as asked: FR_A2, FR_BARE or FR_AUTO */
    char framing_used[8];   /* "A.2", "bare" as the initiator ran it; "" not known */
    char name[64];
    enum outcome outcome;
    enum failure failure;
    enum unsupported unsupported;
    bool edhoc_ok;         /* the handshake completed */
    bool a2_unparsed;      /* the device could not parse our A.2 message_1 */
    long err_code;         /* the peer's ERR_CODE, -1: none (null in JSON) */
    char edhoc[240];       /* "ok" or how EDHOC ended; "" when not run */
    char oscore[240];      /* "ok" or how the request ended; "" when not reached */
    char result[500];      /* both in one line */
    char reason[700];      /* the likely causes */
    char tolerated[120];   /* deviations of the device the initiator tolerated, "a, b" */
    long edhoc_bytes, coap_bytes; /* the initiator's totals; -1: not reported (null) */
    long ms;
    bool interrupted;      /* SIGINT/SIGTERM came while it ran: left out of the matrix */
    int setup_exit;        /* the initiator refused its command line before sending */
    char setup_text[300];
};

struct opts {
    const char *uri;
    int methods[MAX_LIST], suites[MAX_LIST];
    int n_methods, n_suites;
    char id_creds[MAX_LIST][12];
    int n_id_creds;
    long timeout_ms;       /* --timeout, per cell */
    bool full, json;
    int verbose;
    bool quiet;
    enum framing framing;
    const char *trace_dir;
    const char *json_out;
    const char *pass[MAX_PASS];
    int n_pass;
    const char *cred_path;
    const char *request;   /* the first --request, NULL: the default */
    bool request_none;     /* --request none: EDHOC only */
};

/* What the matrix learnt so far. */
struct matrix_state {
    int suites_r_cache[32];
    /* --framing auto: the framing the device answered in (FR_A2 or
     * FR_BARE), FR_AUTO while not known; later cells use it directly
     * instead of probing A.2 again. */
    enum framing auto_known;
    bool any_ran; /* some cell got past the initiator's setup */
};

struct child_result {
    bool killed;      /* our bound ran out */
    bool interrupted; /* we were asked to stop (SIGINT/SIGTERM): the child was stopped */
    int exit_code;    /* -1: died by a signal */
    char *out;        /* stdout (the --json report) */
    json_t *report;   /* out parsed, when it is a JSON object; else NULL */
    char err_line[300]; /* the last line of stderr */
    long ms;
};

static uint64_t now_ms(void)
{
    return cli_now_ns() / 1000000u;
}

/* ---- The initiator's --json report, read with a JSON parser ----
 *
 * Members are looked up in the object they belong to, so a key of a
 * nested object (an "outcome" inside "responses") or text inside a string
 * never stands for a top-level member. Absent values are null or missing:
 * both read as "not there". */

static const char *member_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* An integer member; false when absent, null or not an integer. */
static bool member_long(const json_t *obj, const char *key, long *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        return false;
    *out = (long)json_integer_value(v);
    return true;
}

static void child_result_free(struct child_result *r)
{
    free(r->out);
    json_decref(r->report);
    r->out = NULL;
    r->report = NULL;
}

/* ---- One child process, bounded ---- */

static void append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 8192;
        while (*len + n + 1 > nc)
            nc *= 2;
        if (nc > MAX_OUTPUT + 1)
            return;
        char *b = realloc(*buf, nc);
        if (!b)
            return;
        *buf = b;
        *cap = nc;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    (*buf)[*len] = '\0';
}

static void run_child(char *const argv[], long bound_ms, struct child_result *r)
{
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
    int out_p[2], err_p[2];
    if (pipe2(out_p, O_CLOEXEC))
        return;
    if (pipe2(err_p, O_CLOEXEC)) {
        close(out_p[0]);
        close(out_p[1]);
        return;
    }
    uint64_t t0 = now_ms();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        /* A cell never outlives the matrix, even if we are killed. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(out_p[1], 1);
        dup2(err_p[1], 2);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(out_p[1]);
    close(err_p[1]);
    if (pid < 0) {
        close(out_p[0]);
        close(err_p[0]);
        snprintf(r->err_line, sizeof r->err_line, "cannot start the initiator: %s",
                 strerror(errno));
        return;
    }
    char *err = NULL;
    size_t out_len = 0, out_cap = 0, err_len = 0, err_cap = 0;
    struct pollfd pf[2] = {{out_p[0], POLLIN, 0}, {err_p[0], POLLIN, 0}};
    int open_fds = 2;
    uint64_t deadline = t0 + (uint64_t)bound_ms;
    while (open_fds > 0) {
        uint64_t now = now_ms();
        if (cli_interrupted()) {
            r->interrupted = true;
            break;
        }
        if (now >= deadline) {
            r->killed = true;
            break;
        }
        int n = poll(pf, 2, (int)(deadline - now));
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2 && n > 0; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[4096];
            ssize_t got = read(pf[i].fd, buf, sizeof buf);
            if (got <= 0) {
                close(pf[i].fd);
                pf[i].fd = -1;
                open_fds--;
            } else if (i == 0) {
                append(&r->out, &out_len, &out_cap, buf, (size_t)got);
            } else {
                append(&err, &err_len, &err_cap, buf, (size_t)got);
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (pf[i].fd >= 0)
            close(pf[i].fd);
    int status = 0;
    if (r->interrupted) {
        /* Let the initiator end its exchange; it is killed if it does not
         * within the grace period. */
        kill(pid, SIGTERM);
        uint64_t end = now_ms() + KILL_GRACE_MS;
        pid_t w;
        while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now_ms() < end) {
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
        }
        if (w == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
    } else if (r->killed) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    } else {
        /* Both pipes closed: the child is exiting; wait for it, bounded. */
        pid_t w;
        while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now_ms() < deadline) {
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
        }
        if (w == 0) {
            r->killed = true;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
    }
    if (!r->killed && WIFEXITED(status))
        r->exit_code = WEXITSTATUS(status);
    r->ms = (long)(now_ms() - t0);
    if (r->out) {
        json_t *rep = json_loads(r->out, 0, NULL);
        if (json_is_object(rep))
            r->report = rep;
        else
            json_decref(rep);
    }
    if (err) {
        while (err_len && (err[err_len - 1] == '\n' || err[err_len - 1] == '\r'))
            err[--err_len] = '\0';
        const char *nl = strrchr(err, '\n');
        const char *line = nl ? nl + 1 : err;
        static const char *const prefixes[] = {"edhoc-cli initiator: ", "edhoc-cli: ",
                                               "initiator: "};
        for (size_t i = 0; i < 3; i++)
            if (!strncmp(line, prefixes[i], strlen(prefixes[i])))
                line += strlen(prefixes[i]);
        snprintf(r->err_line, sizeof r->err_line, "%s", line);
        free(err);
    }
}

/* ---- Diagnosis ---- */

static void set_text(char *dst, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_text(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
}

/* Append ", more" style text to a cell's reason. */
static void add_text(char *dst, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_text(char *dst, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(dst);
    if (len + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + len, cap - len, fmt, ap);
    va_end(ap);
}

static bool is_bare(const struct cell *c)
{
    return c->framing_used[0] ? !strcmp(c->framing_used, "bare") : c->framing == FR_BARE;
}

static void set_unsupported(struct cell *c, enum unsupported what)
{
    c->outcome = OUT_NOT_SUPPORTED;
    c->failure = FAIL_NONE;
    c->unsupported = what;
}

/* The step named in "message_2 verification failed: <step>" and similar. */
static const char *after_colon(const char *text)
{
    const char *p = strstr(text, "failed: ");
    if (p)
        return p + 8;
    p = strchr(text, ':');
    return p ? p + 2 : text;
}

/* Our own verification of the peer's message failed: name the inputs of
 * that computation the peer most likely encoded differently. */
static void diagnose_verify(struct cell *c, const char *text)
{
    const char *step = after_colon(text);
    set_text(c->edhoc, sizeof c->edhoc, "our verification failed: %s", step);
    const char *why;
    if (strstr(step, "Signature_or_MAC_2"))
        why = c->method == 0 || c->method == 2
                  ? "the peer's signature over TH_2, CRED_R, EAD_2 differs: check the peer's "
                    "CRED_R bytes (the exact credential encoding it signs), ID_CRED_R, C_R "
                    "encoding, EAD_2 and that its signing key matches its credential"
                  : "MAC_2 mismatch: the peer's TH_2 or context_2 differs - check its C_R "
                    "encoding, ID_CRED_R / CRED_R bytes, EAD_2";
    else if (strstr(step, "MAC_2"))
        why = "MAC_2 mismatch: the peer's TH_2 or context_2 differs - check its C_R encoding "
              "(int vs byte string), ID_CRED_R / CRED_R bytes (kid as integer vs byte string), "
              "EAD_2, and the static DH key (G_RX) of its credential";
    else if (strstr(step, "unknown credential"))
        why = "the peer's credential (ID_CRED_R) is not in our trust: add it with --trust, or "
              "check how the peer names it (kid as integer vs byte string, x5t hash algorithm, "
              "kccs encoding)";
    else if (strstr(step, "CIPHERTEXT_2") || strstr(step, "decrypt"))
        why = "KEYSTREAM_2 / PRK_2e differ: check the peer's G_XY, TH_2 (hash of G_Y and "
              "H(message_1)) and the suite's hash and curve";
    else if (strstr(step, "message_4"))
        why = "message_4 did not verify: check the peer's PRK_4e3m, TH_4 (includes message_3 "
              "plaintext and CRED_I) and EAD_4";
    else if (strstr(step, "G_Y"))
        why = "the peer's ephemeral key G_Y has the wrong length or is not on the suite's curve: "
              "wrong suite parameters";
    else if (strstr(step, "untrusted") || strstr(step, "expired") || strstr(step, "certificate"))
        why = "the peer's certificate does not chain to our trust anchors (--trust) or is "
              "outside its validity period";
    else if (strstr(step, "EAD"))
        why = "missing or extra EAD: the peer sent a critical EAD item we do not understand "
              "(--ead-accept)";
    else if (strstr(step, "encoding") || strstr(step, "CBOR") || strstr(step, "malformed") ||
             strstr(step, "deterministic") || strstr(step, "trailing"))
        why = "the peer's message is not deterministic CBOR as RFC 9528 3.1 requires: check its "
              "encoder (integer/byte string forms, lengths, trailing bytes)";
    else
        why = "compare the trace (--trace-dir) with the device's log line by line";
    set_text(c->reason, sizeof c->reason, "%s", why);
}

/* The ERR_CODE and diagnostic in an initiator's failure text ("... ERR_CODE
 * 1: method not supported"). */
static bool parse_err_code(const char *text, long *code, char *diag, size_t cap)
{
    const char *p = strstr(text, "ERR_CODE ");
    if (!p)
        return false;
    char *e;
    long v = strtol(p + 9, &e, 10);
    if (e == p + 9)
        return false;
    *code = v;
    diag[0] = '\0';
    if (e[0] == ':' && e[1] == ' ')
        snprintf(diag, cap, "%s", e + 2);
    return true;
}

/* The peer could not parse our message_1: what a device that knows only
 * the bare framing answers to an A.2 one (its CBOR `true` is no METHOD). */
static bool unparsed_message_1(long code, const char *diag)
{
    return code == 1 && strstr(diag, "message_1") &&
           (strstr(diag, "malformed") || strstr(diag, "parse") || strstr(diag, "decode"));
}

/* RFC 9528 has no error code for an unsupported method: ERR_CODE 1 with a
 * text that says so ("method not supported", "unsupported method 0"). */
static bool method_refused(const char *diag)
{
    return strcasestr(diag, "method") && !strstr(diag, "MAC") && !strstr(diag, "Signature") &&
           !strcasestr(diag, "verif");
}

/* The cell ended with the peer's EDHOC error ERR_CODE code. */
static void peer_error(struct cell *c, long code, const char *diag, const char *text)
{
    c->err_code = code;
    c->outcome = OUT_FAILED;
    c->failure = FAIL_PEER_ERROR;
    set_text(c->edhoc, sizeof c->edhoc, "EDHOC error %ld from the peer%s%s", code,
             diag[0] ? ": " : "", diag);
    char *why = c->reason;
    size_t cap = sizeof c->reason;
    if (code == 1 && c->combined && strstr(diag, "message_4")) {
        set_unsupported(c, NS_COMBINED);
        set_text(why, cap, "the peer requires message_4, which the RFC 9668 combined request "
                 "cannot carry");
    } else if (code == 1 && c->combined &&
               (strcasestr(diag, "combined") || strcasestr(diag, "EDHOC option"))) {
        set_unsupported(c, NS_COMBINED);
        set_text(why, cap, "the device refuses the RFC 9668 combined request (\"%s\")", diag);
    } else if (code == 1 && is_bare(c) && strstr(diag, "C_R")) {
        set_unsupported(c, NS_FRAMING);
        set_text(why, cap, "the peer does not take the bare framing: it read our bare message_1 "
                 "as a C_R-prefixed message_3 (\"%s\"); use the RFC 9528 A.2 framing with it",
                 diag);
    } else if (!is_bare(c) && unparsed_message_1(code, diag)) {
        /* Not supported once the bare framing is seen to work (the
         * matrix decides at the end); a broken encoder otherwise. */
        c->a2_unparsed = true;
        set_text(why, cap, "the peer could not parse our message_1 (\"%s\"): if the bare "
                 "framing works, it does not take the A.2 framing (CBOR true before message_1, "
                 "C_R before message_3)", diag);
    } else if (code == 1 && method_refused(diag)) {
        set_unsupported(c, NS_METHOD);
        set_text(why, cap, "method %d not supported by the peer", c->method);
    } else if (code == 1 && (strstr(diag, "MAC") || strstr(diag, "Signature") ||
                             strstr(diag, "verif"))) {
        set_text(why, cap, "the peer could not verify message_3: check our CRED_I as the peer "
                 "stores it (the exact bytes hashed into TH_3), ID_CRED_I (kid as integer vs "
                 "byte string), EAD_3");
    } else if (code == 1) {
        set_text(why, cap, "the peer refused%s%s", diag[0] ? ": " : "", diag);
    } else if (code == 3) {
        set_text(why, cap, "the peer does not know our credential (ID_CRED_I by %s): add our "
                 "credential to its trust, or name it another way (--id-creds)", c->id_cred);
    } else {
        set_text(why, cap, "ERR_CODE %ld is not defined by RFC 9528", code);
    }
    if (strstr(text, "message_3"))
        add_text(why, cap, " (after message_3)");
    else if (strstr(text, "combined"))
        add_text(why, cap, " (after the combined request)");
}

/* The argv of one `edhoc-cli initiator` run against the device: the
 * options every run has, then those of the run, then the user's
 * pass-through options. */
struct initiator_argv {
    char *v[MAX_PASS + 24];
    int n;
    char method[8], timeout[48];
};

static void initiator_argv_start(const struct opts *o, int method, const char *suites,
                                 struct initiator_argv *a)
{
    snprintf(a->method, sizeof a->method, "%d", method);
    /* Whole seconds as such, others with their milliseconds. */
    if (o->timeout_ms % 1000 == 0)
        snprintf(a->timeout, sizeof a->timeout, "%ld", o->timeout_ms / 1000);
    else
        snprintf(a->timeout, sizeof a->timeout, "%ld.%03ld", o->timeout_ms / 1000,
                 o->timeout_ms % 1000);
    a->n = 0;
    a->v[a->n++] = "edhoc-cli";
    a->v[a->n++] = "initiator";
    a->v[a->n++] = (char *)o->uri;
    a->v[a->n++] = "--json";
    a->v[a->n++] = "--method";
    a->v[a->n++] = a->method;
    a->v[a->n++] = "--suites";
    a->v[a->n++] = (char *)suites;
    a->v[a->n++] = "--timeout";
    a->v[a->n++] = a->timeout;
}

/* Add the pass-through options and run it, bounded by --timeout (twice
 * that with --framing auto, which may run a second handshake). */
static void initiator_argv_run(const struct opts *o, struct initiator_argv *a, bool twice,
                               struct child_result *r)
{
    for (int i = 0; i < o->n_pass; i++)
        a->v[a->n++] = (char *)o->pass[i];
    a->v[a->n] = NULL;
    run_child(a->v, o->timeout_ms * (twice ? 2 : 1) + KILL_GRACE_MS, r);
}

/* The cipher suites the peer offers in SUITES_R: ask the initiator to start
 * with the refused suite and fall back to any other, then see which one it
 * settled on (our most preferred among SUITES_R). Returns -1 if unknown. */
static int probe_suites_r(const struct opts *o, int refused, int method, bool bare)
{
    /* Not 25: no OSCORE context can follow it (RFC 8613 Section 3.2.1),
     * so an initiator with requests to send refuses to offer it. */
    static const int known[] = {0, 1, 2, 3, 4, 5, 6, 24};
    char list[64];
    int n = snprintf(list, sizeof list, "%d", refused);
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i] != refused)
            n += snprintf(list + n, sizeof list - (size_t)n, ",%d", known[i]);
    struct initiator_argv a;
    initiator_argv_start(o, method, list, &a);
    if (bare) {
        a.v[a.n++] = "--framing";
        a.v[a.n++] = "bare";
    }
    struct child_result r;
    initiator_argv_run(o, &a, false, &r);
    long suite = -1, attempts = 0;
    if (r.report) {
        member_long(r.report, "suite", &suite);
        member_long(r.report, "attempts", &attempts);
    }
    child_result_free(&r);
    return attempts >= 2 && suite >= 0 && suite != refused ? (int)suite : -1;
}

/* The peer refused the suite with error code 2 (RFC 9528 6.3): the suite
 * is not supported; SUITES_R says which ones are. */
static void suite_refused(const struct opts *o, struct matrix_state *st, struct cell *c,
                          const json_t *rep, const char *diag)
{
    set_unsupported(c, NS_SUITE);
    c->err_code = 2;
    set_text(c->edhoc, sizeof c->edhoc, "EDHOC error 2 from the peer: %s",
             diag[0] ? diag : "wrong selected cipher suite");
    /* The initiator's report names the SUITES_R it received; only an
     * initiator that does not probes the peer once more. */
    const json_t *suites_r = rep ? json_object_get(rep, "suites_r") : NULL;
    if (json_is_array(suites_r) && json_array_size(suites_r) > 0) {
        char list[80];
        size_t w = 0, i;
        const json_t *v;
        json_array_foreach(suites_r, i, v) {
            if (json_is_integer(v) && w < sizeof list)
                w += (size_t)snprintf(list + w, sizeof list - w, "%s%lld", w ? ", " : "",
                                      (long long)json_integer_value(v));
        }
        set_text(c->reason, sizeof c->reason,
                 "suite %d not supported by the peer: SUITES_R = %s (the suites it offers)",
                 c->suite, list);
        return;
    }
    int sr = st->suites_r_cache[c->suite & 31];
    if (sr == -2)
        sr = st->suites_r_cache[c->suite & 31] =
            probe_suites_r(o, c->suite, c->method, is_bare(c));
    if (sr >= 0)
        set_text(c->reason, sizeof c->reason,
                 "suite %d not supported by the peer: SUITES_R = %d (our most preferred suite "
                 "among those it offers)", c->suite, sr);
    else
        set_text(c->reason, sizeof c->reason,
                 "suite %d not supported by the peer: SUITES_R names none of the suites we have",
                 c->suite);
}

/* The request a failure text of the initiator starts with ("GET /x: ..."):
 * one of our --request values, else the text before the first ": ". */
static const char *failed_request(const struct opts *o, const char *text, char *buf, size_t cap)
{
    for (int i = 0; i + 1 < o->n_pass; i += 2) {
        size_t len = strlen(o->pass[i + 1]);
        if (!strcmp(o->pass[i], "--request") && !strncmp(text, o->pass[i + 1], len) &&
            text[len] == ':') {
            snprintf(buf, cap, "%s", o->pass[i + 1]);
            return text + len + (text[len + 1] == ' ' ? 2 : 1);
        }
    }
    const char *p = strstr(text, ": ");
    snprintf(buf, cap, "%.*s", p ? (int)(p - text) : 0, text);
    return p ? p + 2 : text;
}

/* The handshake completed, the OSCORE request after it did not. */
static void oscore_failure(const struct opts *o, struct cell *c, int exit_code,
                           const char *text)
{
    c->outcome = OUT_FAILED;
    c->failure = exit_code == CLI_EXIT_TIMEOUT ? FAIL_TIMEOUT
                 : exit_code == CLI_EXIT_OSCORE ? FAIL_OSCORE
                                                : FAIL_OTHER;
    char req[200];
    const char *rest = failed_request(o, text, req, sizeof req);
    bool edhoc_only_hint = false;
    if (exit_code == CLI_EXIT_TIMEOUT) {
        set_text(c->oscore, sizeof c->oscore, "no answer to %s", req[0] ? req : "the request");
        set_text(c->reason, sizeof c->reason,
                 "the handshake completed, the OSCORE request got no answer: the device may have "
                 "no OSCORE resource there, drop requests it cannot decrypt, or not find the "
                 "context (Recipient ID = our C_R)");
        edhoc_only_hint = true;
    } else {
        set_text(c->oscore, sizeof c->oscore, "%s", rest);
        if (strstr(text, "without OSCORE: 2."))
            /* RFC 8613 Section 2: a successful answer carries the option. */
            set_text(c->reason, sizeof c->reason,
                     "the peer answered without OSCORE with a success code: it does not protect "
                     "that resource%s, or something on the path replaced its protected answer; "
                     "an unprotected answer to an OSCORE request proves nothing",
                     c->combined ? " (or ignored the RFC 9668 combined request)" : "");
        else if (strstr(text, "Replay detected"))
            set_text(c->reason, sizeof c->reason,
                     "the peer answered without OSCORE: Replay detected, for a context that had "
                     "just been derived: it may still hold an older context under the same "
                     "Recipient ID (our C_R) and check our sequence numbers against it");
        else if (strstr(text, "without OSCORE: 4.00") || strstr(text, "Decryption failed"))
            set_text(c->reason, sizeof c->reason,
                     "the peer answered without OSCORE: it could not decrypt our request, the "
                     "OSCORE contexts differ: check its EDHOC_Exporter (master secret/salt from "
                     "PRK_out), Sender/Recipient IDs (= C_R/C_I) and the suite's AEAD and hash");
        else if (strstr(text, "without OSCORE: 4.02")) {
            set_text(c->reason, sizeof c->reason,
                     "the peer answered without OSCORE: it could not decode our OSCORE option "
                     "or COSE object, or does not know the option at all (4.02 Bad Option)");
            edhoc_only_hint = true;
        } else if (strstr(text, "without OSCORE")) {
            set_text(c->reason, sizeof c->reason,
                     "the peer answered without OSCORE: it did not find the security context "
                     "(Recipient ID = our C_R) or does not protect that resource");
            edhoc_only_hint = true;
        } else if (exit_code == CLI_EXIT_OSCORE)
            set_text(c->reason, sizeof c->reason,
                     "the OSCORE contexts differ: check the peer's EDHOC_Exporter (master "
                     "secret/salt from PRK_out), Sender/Recipient IDs (= C_R/C_I) and the "
                     "suite's AEAD and hash");
        else
            set_text(c->reason, sizeof c->reason, "see the trace (--trace-dir)");
    }
    if (edhoc_only_hint && !c->combined)
        add_text(c->reason, sizeof c->reason,
                 "; a device that does EDHOC only: run interop with --request none");
    if (is_bare(c) && !c->message_4)
        add_text(c->reason, sizeof c->reason,
                 " (the bare framing has no answer to message_3: that the device accepted it "
                 "is not confirmed)");
}

/* Whether the handshake completed, from the initiator's report: its
 * handshake time is set once EDHOC is done, and the OSCORE requests only
 * go out after it (a protected answer to the combined request proves the
 * device took message_3, RFC 9668 Section 3.3.1). */
static bool handshake_completed(const struct cell *c, const json_t *rep)
{
    if (!rep)
        return false;
    const json_t *hs = json_object_get(rep, "handshake_ms");
    if (json_is_number(hs) && json_number_value(hs) > 0)
        return true;
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(rep, "messages"), i, m) {
        const char *name = member_str(m, "name"), *from = member_str(m, "from");
        if (!name || !from)
            continue;
        bool from_initiator = !strcmp(from, "initiator");
        if (from_initiator && !strncmp(name, "OSCORE request", 14))
            return true;
        if (c->combined && !from_initiator && !strcmp(name, "OSCORE response 1"))
            return true;
    }
    return false;
}

/* The initiator's "tolerated": ["c-bstr", "kid-int"] as "c-bstr, kid-int";
 * absent (an initiator without --tolerate) or empty: "". */
static void read_tolerated(const json_t *rep, char *dst, size_t cap)
{
    dst[0] = '\0';
    size_t n = 0, i;
    const json_t *v;
    json_array_foreach(json_object_get(rep, "tolerated"), i, v) {
        /* Names are tokens (c-bstr, kid-int); anything else is not ours. */
        const char *name = json_string_value(v);
        if (name && name[strcspn(name, ", \t\r\n\"")] == '\0' && n < cap)
            n += (size_t)snprintf(dst + n, cap - n, "%s%s", n ? ", " : "", name);
    }
}

static void compose_result(struct cell *c)
{
    if (c->outcome == OUT_SKIPPED)
        set_text(c->result, sizeof c->result, "skipped");
    else if (c->outcome == OUT_OK)
        set_text(c->result, sizeof c->result, "ok");
    else if (c->edhoc_ok)
        set_text(c->result, sizeof c->result, "EDHOC ok, OSCORE: %s", c->oscore);
    else if (c->outcome == OUT_NOT_SUPPORTED)
        set_text(c->result, sizeof c->result, "not supported: %s", c->edhoc);
    else
        set_text(c->result, sizeof c->result, "%s", c->edhoc);
}

static void diagnose(const struct opts *o, struct matrix_state *st, struct cell *c,
                     const struct child_result *r)
{
    char text[400] = "", diag[200] = "", outcome[16] = "";
    long code = -1;
    int exit_code = r->exit_code;
    const json_t *out = r->report;
    c->err_code = -1;
    c->outcome = OUT_FAILED;
    c->failure = FAIL_OTHER;
    c->unsupported = NS_NONE;
    c->edhoc_ok = c->a2_unparsed = false;
    c->edhoc[0] = c->oscore[0] = c->reason[0] = '\0';
    char a2_failure[400] = "";
    if (out) {
        const json_t *e = json_object_get(out, "error");
        if (json_is_object(e)) {
            const char *v;
            if ((v = member_str(e, "text")))
                snprintf(text, sizeof text, "%s", v);
            if ((v = member_str(e, "diagnostic")))
                snprintf(diag, sizeof diag, "%s", v);
            member_long(e, "err_code", &code);
        }
        const char *v;
        if ((v = member_str(out, "outcome")))
            snprintf(outcome, sizeof outcome, "%s", v);
        member_long(out, "total_edhoc_bytes", &c->edhoc_bytes);
        member_long(out, "total_coap_bytes", &c->coap_bytes);
        const char *fr = member_str(out, "framing");
        if (fr && (!strcmp(fr, "A.2") || !strcmp(fr, "bare")))
            snprintf(c->framing_used, sizeof c->framing_used, "%s", fr);
        if ((v = member_str(out, "framing_a2_failure")))
            snprintf(a2_failure, sizeof a2_failure, "%s", v);
        read_tolerated(out, c->tolerated, sizeof c->tolerated);
    }
    if (!text[0])
        snprintf(text, sizeof text, "%s",
                 r->err_line[0] ? r->err_line : "the initiator's report is unreadable");
    if (r->killed) {
        c->failure = FAIL_TIMEOUT;
        set_text(c->edhoc, sizeof c->edhoc, "timeout");
        set_text(c->reason, sizeof c->reason,
                 "the initiator did not finish within %.3g s: the device is silent or stuck",
                 (double)(o->timeout_ms + KILL_GRACE_MS) / 1000.0);
        return;
    }
    size_t sent = out ? json_array_size(json_object_get(out, "messages")) : 0;
    if ((exit_code == CLI_EXIT_USAGE || exit_code == CLI_EXIT_INPUT) && sent == 0) {
        /* Refused before anything was sent: our credentials or options
         * cannot make this cell (the caller tells a cell of its own from
         * a command line no cell can run). */
        c->setup_exit = exit_code;
        snprintf(c->setup_text, sizeof c->setup_text, "%.*s", (int)sizeof c->setup_text - 1,
                 text);
        c->outcome = OUT_SKIPPED;
        c->failure = FAIL_NONE;
        set_text(c->reason, sizeof c->reason, "not possible with our credentials or options: %s",
                 text);
        return;
    }
    if (handshake_completed(c, out)) {
        c->edhoc_ok = true;
        set_text(c->edhoc, sizeof c->edhoc, "ok");
        const json_t *first = json_array_get(json_object_get(out, "responses"), 0);
        const char *first_code = member_str(first, "code");
        /* The initiator exits 1 on a protected 4.xx/5.xx (the request
         * failed); OSCORE worked, which is what the cell is about. */
        bool protected_error = exit_code == CLI_EXIT_FAILURE && first_code &&
                               (first_code[0] == '4' || first_code[0] == '5');
        if ((exit_code == CLI_EXIT_OK && !strcmp(outcome, "ok")) || protected_error) {
            c->outcome = OUT_OK;
            c->failure = FAIL_NONE;
            const json_t *r0 = json_array_get(json_object_get(out, "responses"), 0);
            const char *rc = member_str(r0, "code"), *rname = member_str(r0, "code_name");
            if (o->request_none)
                set_text(c->oscore, sizeof c->oscore, "not asked (--request none)");
            else if (rc && rc[0] && rc[0] != '2')
                set_text(c->oscore, sizeof c->oscore, "ok (a protected %s%s%s)", rc,
                         rname ? " " : "", rname ? rname : "");
            else
                set_text(c->oscore, sizeof c->oscore, "ok");
        } else if (exit_code == CLI_EXIT_OK) {
            set_text(c->oscore, sizeof c->oscore, "the initiator's report is unreadable");
        } else {
            oscore_failure(o, c, exit_code, text);
        }
        return;
    }
    /* --framing auto: A.2 got no message_2, bare was tried next. When the
     * device answered the A.2 message_1 with an EDHOC error it understood
     * (not a parse error), it speaks A.2 and that error is the answer. */
    long a2_code = -1;
    char a2_diag[200];
    if (a2_failure[0] && parse_err_code(a2_failure, &a2_code, a2_diag, sizeof a2_diag) &&
        !unparsed_message_1(a2_code, a2_diag)) {
        snprintf(text, sizeof text, "%s", a2_failure);
        snprintf(diag, sizeof diag, "%s", a2_diag);
        code = a2_code;
        exit_code = CLI_EXIT_PEER_ERROR;
        snprintf(c->framing_used, sizeof c->framing_used, "A.2");
        out = NULL; /* the rest of the report is the bare attempt's */
        a2_failure[0] = '\0';
    }
    switch (exit_code) {
    case CLI_EXIT_PEER_ERROR:
        if (code == 2 || strstr(text, "cipher suite in common") ||
            strstr(text, "no common cipher suite")) {
            suite_refused(o, st, c, out, diag);
        } else if (code >= 0) {
            peer_error(c, code, diag, text);
        } else {
            c->failure = FAIL_PEER_ERROR;
            set_text(c->edhoc, sizeof c->edhoc, "EDHOC error from the peer: %s", text);
            set_text(c->reason, sizeof c->reason, "the peer's error message could not be parsed");
        }
        break;
    case CLI_EXIT_VERIFY:
        c->failure = FAIL_VERIFY;
        diagnose_verify(c, text);
        if (out) {
            /* The initiator's own finding on a MAC failure comes first:
             * it tried the encodings devices are known to get wrong. */
            const char *d = member_str(out, "diagnosis");
            if (d && d[0]) {
                char generic[sizeof c->reason];
                snprintf(generic, sizeof generic, "%s", c->reason);
                set_text(c->reason, sizeof c->reason, "%s; %s", d, generic);
            }
        }
        break;
    case CLI_EXIT_TIMEOUT:
        c->failure = FAIL_TIMEOUT;
        set_text(c->edhoc, sizeof c->edhoc, "timeout");
        if (strstr(text, "message_3") && is_bare(c))
            set_text(c->reason, sizeof c->reason, "%s: the peer did not answer message_3 in "
                     "the bare framing", text);
        else if (strstr(text, "message_3"))
            set_text(c->reason, sizeof c->reason, "%s: the peer may have failed to verify "
                     "message_3 silently, or does not answer it", text);
        else if (strstr(text, "message_1") && strstr(text, "timeout"))
            set_text(c->reason, sizeof c->reason, "%s: the device is silent - not running, "
                     "another port or path, or it drops message_1 (check its log for a parse "
                     "error)", text);
        else
            set_text(c->reason, sizeof c->reason, "%s", text[0] ? text : "no answer in time");
        break;
    case CLI_EXIT_OSCORE:
        if (c->combined && strstr(text, "without OSCORE: 4.02")) {
            /* RFC 9668 Section 3.1: the EDHOC option is critical, so a
             * server that does not know it answers 4.02 (RFC 7252 5.4.1). */
            set_unsupported(c, NS_COMBINED);
            set_text(c->edhoc, sizeof c->edhoc, "%s", text);
            set_text(c->reason, sizeof c->reason,
                     "the device does not take the RFC 9668 combined request: 4.02 Bad Option "
                     "is the answer to a critical option it does not know (the EDHOC option)");
        } else {
            /* The reasons of an OSCORE failure, but the handshake was not
             * seen to complete (the combined request carried message_3):
             * the EDHOC column tells it. */
            oscore_failure(o, c, exit_code, text);
            set_text(c->edhoc, sizeof c->edhoc, "%s", text);
            c->oscore[0] = '\0';
        }
        break;
    case CLI_EXIT_USAGE:
    case CLI_EXIT_INPUT:
        c->failure = FAIL_OTHER;
        set_text(c->edhoc, sizeof c->edhoc, "failed: %s", text);
        break;
    default:
        c->failure = FAIL_OTHER;
        if (exit_code < 0)
            set_text(c->edhoc, sizeof c->edhoc, "failed: the initiator crashed");
        else
            set_text(c->edhoc, sizeof c->edhoc, "failed: %s", text);
        if (strstr(text, "message_4 expected")) {
            /* RFC 9528 Section 5.5: message_4 is optional. */
            set_unsupported(c, NS_M4);
            set_text(c->edhoc, sizeof c->edhoc, "no message_4: the peer answered message_3 "
                     "with an empty 2.04");
            set_text(c->reason, sizeof c->reason, "the peer does not send message_4 (optional, "
                     "RFC 9528 Section 5.5)");
        } else if (strstr(text, "4.15") || strstr(text, "Content-Format")) {
            set_unsupported(c, NS_FRAMING);
            set_text(c->reason, sizeof c->reason,
                     "the peer refused the Content-Format: it does not take the %s framing",
                     is_bare(c) ? "bare" : "A.2");
        } else if (strstr(text, "4.04") || strstr(text, "Not Found"))
            set_text(c->reason, sizeof c->reason, "no EDHOC resource at that path");
        else if (is_bare(c))
            set_text(c->reason, sizeof c->reason,
                     "the peer may not accept the bare framing (messages without the A.2 "
                     "prefixes)");
        else
            set_text(c->reason, sizeof c->reason, "see the trace (--trace-dir)");
        break;
    }
    if (a2_failure[0])
        add_text(c->reason, sizeof c->reason, " (--framing auto: A.2 first: %s)", a2_failure);
}

/* ---- Cells ---- */

static const char *framing_name(enum framing f)
{
    return f == FR_BARE ? "bare" : f == FR_AUTO ? "auto" : "A.2";
}

static void cell_name(struct cell *c)
{
    snprintf(c->name, sizeof c->name, "m%d-s%d-%s%s%s%s", c->method, c->suite, c->id_cred,
             c->message_4 ? "-m4" : "", c->combined ? "-combined" : "",
             c->framing == FR_BARE ? "-bare" : "");
}

/* --trace-dir holds session secrets (each trace has the ephemeral private
 * key, PRK_out and the OSCORE master secret; each capture the datagrams):
 * secrets readable by others, unless the directory is ours alone and every
 * file in it is 0600. A missing directory is created 0700 whatever the
 * umask; an existing one is used only if it is a real directory (not a
 * symbolic link) owned by us that group and others cannot access, else it
 * is refused with the fix. Returns 0 or -1 after printing why. */
static int prepare_trace_dir(const char *dir)
{
    bool created = mkdir(dir, 0700) == 0;
    if (!created && errno != EEXIST) {
        fprintf(stderr, "edhoc-cli interop: --trace-dir %s: %s\n", dir, strerror(errno));
        return -1;
    }
    /* The rules of every directory of secrets (path_check.h). */
    char why[8500];
    if (edhoc_secret_dir_check("--trace-dir", dir, "the traces hold session secrets", created,
                               why, sizeof why)) {
        fprintf(stderr, "edhoc-cli interop: %s\n", why);
        return -1;
    }
    return 0;
}

/* A file of --trace-dir, mode 0600 before anything is written to it (a
 * file left by an earlier run is truncated and tightened); a symbolic link
 * is refused. Returns the descriptor or -1 with errno. */
static int create_trace_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    struct stat st;
    int e = 0;
    if (fstat(fd, &st) != 0 || fchmod(fd, 0600) != 0)
        e = errno;
    else if (!S_ISREG(st.st_mode))
        e = EINVAL;
    if (e) {
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static void write_trace(const struct opts *o, const struct cell *c, const struct child_result *r,
                        char *const argv[])
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.txt", o->trace_dir, c->name);
    int fd = create_trace_file(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        fprintf(stderr, "edhoc-cli interop: %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    fprintf(f, "cell %s\ncommand:", c->name);
    for (int i = 1; argv[i]; i++)
        fprintf(f, " %s", argv[i]);
    fprintf(f, "\noutcome: %s\nEDHOC: %s\nOSCORE: %s\nresult: %s\n", outcome_names[c->outcome],
            c->edhoc[0] ? c->edhoc : "-", c->oscore[0] ? c->oscore : "-", c->result);
    if (c->reason[0])
        fprintf(f, "reason: %s\n", c->reason);
    fprintf(f, "\nTrace (RFC 9529 names, initiator side):\n");
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(r->report, "trace"), i, v) {
        const char *name = member_str(v, "name"), *hex = member_str(v, "hex");
        size_t len = hex ? strlen(hex) : 0;
        fprintf(f, "  %s (%zu bytes) %s\n", name ? name : "?", len / 2, hex ? hex : "");
    }
    fprintf(f, "\nMessages:\n");
    json_array_foreach(json_object_get(r->report, "messages"), i, v) {
        const char *name = member_str(v, "name"), *from = member_str(v, "from");
        long edhoc = -1, coap = -1, dgrams = 0;
        char e[24] = "-", cb[24] = "-";
        if (member_long(v, "edhoc_bytes", &edhoc))
            snprintf(e, sizeof e, "%ld", edhoc);
        if (member_long(v, "coap_bytes", &coap))
            snprintf(cb, sizeof cb, "%ld", coap);
        member_long(v, "datagrams", &dgrams);
        fprintf(f, "  %-32s %s EDHOC %s, CoAP/UDP %s bytes, %ld datagram%s\n",
                name ? name : "?", from && !strcmp(from, "initiator") ? "I->R" : "R->I", e, cb,
                dgrams, dgrams == 1 ? "" : "s");
    }
    fprintf(f, "\nDatagrams: %s.pcap (tshark -r FILE -d udp.port==PORT,coap)\n", c->name);
    fclose(f);
}

/* A cell that is not run: why is in the reason. */
static void skip_cell(struct cell *c, const char *why)
{
    cell_name(c);
    c->outcome = OUT_SKIPPED;
    c->failure = FAIL_NONE;
    c->err_code = -1;
    c->edhoc_bytes = c->coap_bytes = -1;
    snprintf(c->reason, sizeof c->reason, "%s", why);
    compose_result(c);
}

static void run_cell(const struct opts *o, struct matrix_state *st, struct cell *c)
{
    cell_name(c);
    if (c->combined && o->request_none) {
        skip_cell(c, "--request none: the RFC 9668 combined request carries message_3 in an "
                     "OSCORE request");
        return;
    }
    if (c->suite == 25 && !o->request_none) {
        skip_cell(c, "suite 25 has no OSCORE context (RFC 8613 Section 3.2.1 has no HKDF for "
                     "SHAKE256): add --request none for its EDHOC-only cells");
        return;
    }
    /* --framing auto: once the device has answered in one framing, the
     * cells that follow use it instead of probing again. */
    enum framing f = c->framing;
    if (f == FR_AUTO && st->auto_known != FR_AUTO)
        f = st->auto_known;
    snprintf(c->framing_used, sizeof c->framing_used, "%s", f == FR_AUTO ? "" : framing_name(f));
    char suite_s[8];
    snprintf(suite_s, sizeof suite_s, "%d", c->suite);
    struct initiator_argv a;
    initiator_argv_start(o, c->method, suite_s, &a);
    a.v[a.n++] = "--id-cred";
    a.v[a.n++] = c->id_cred;
    if (c->message_4)
        a.v[a.n++] = "--message-4";
    if (c->combined)
        a.v[a.n++] = "--combined";
    if (f == FR_BARE || f == FR_AUTO) {
        a.v[a.n++] = "--framing";
        a.v[a.n++] = f == FR_BARE ? "bare" : "auto";
    }
    char pcap_path[4200];
    if (o->trace_dir) {
        a.v[a.n++] = "--trace";
        snprintf(pcap_path, sizeof pcap_path, "%s/%s.pcap", o->trace_dir, c->name);
        a.v[a.n++] = "--pcap";
        a.v[a.n++] = pcap_path;
        /* The initiator's capture writer opens the file with fopen(), which
         * would make it 0666 minus the umask: made 0600 here first, the
         * writer truncates it and keeps the mode. */
        int pfd = create_trace_file(pcap_path);
        if (pfd < 0) {
            fprintf(stderr, "edhoc-cli interop: %s: %s\n", pcap_path, strerror(errno));
            a.n -= 2;
        } else {
            close(pfd);
        }
    }
    struct child_result r;
    initiator_argv_run(o, &a, f == FR_AUTO, &r);
    c->edhoc_bytes = c->coap_bytes = -1;
    if (!r.interrupted)
        diagnose(o, st, c, &r);
    if (r.interrupted || cli_interrupted()) {
        /* Cut short (the initiator, or a probe of the diagnosis, was
         * stopped): nothing of it is reported, and its capture goes. */
        c->interrupted = true;
        if (o->trace_dir)
            unlink(pcap_path);
        child_result_free(&r);
        return;
    }
    c->ms = r.ms;
    if (c->tolerated[0]) {
        /* The initiator accepted a known deviation of the device
         * (--tolerate): the cell says which, whatever its outcome. */
        if (c->reason[0])
            add_text(c->reason, sizeof c->reason, "; tolerated deviation of the device: %s",
                     c->tolerated);
        else
            set_text(c->reason, sizeof c->reason, "tolerated deviation of the device: %s "
                     "(--tolerate)", c->tolerated);
    }
    compose_result(c);
    if (!c->setup_exit)
        st->any_ran = true;
    if (c->framing == FR_AUTO && st->auto_known == FR_AUTO && c->framing_used[0] &&
        (c->edhoc_ok || (c->err_code >= 0 && !c->a2_unparsed && c->unsupported != NS_FRAMING)))
        st->auto_known = strcmp(c->framing_used, "bare") ? FR_A2 : FR_BARE;
    if (o->trace_dir) {
        write_trace(o, c, &r, a.v);
        /* No capture written (the initiator stopped before it): no file. */
        struct stat st;
        if (lstat(pcap_path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
            unlink(pcap_path);
    }
    child_result_free(&r);
}

/* A.2 cells the device could not parse, when the bare framing worked
 * with it and A.2 never did: the device does not take the A.2 framing. */
static void settle_framing(struct cell *cells, size_t n)
{
    bool a2_ok = false, bare_ok = false;
    for (size_t i = 0; i < n; i++) {
        if (cells[i].edhoc_ok && is_bare(&cells[i]))
            bare_ok = true;
        else if (cells[i].edhoc_ok)
            a2_ok = true;
    }
    if (a2_ok || !bare_ok)
        return;
    for (size_t i = 0; i < n; i++) {
        struct cell *c = &cells[i];
        if (c->outcome != OUT_FAILED || !c->a2_unparsed)
            continue;
        set_unsupported(c, NS_FRAMING);
        set_text(c->reason, sizeof c->reason,
                 "the peer does not take the A.2 framing (CBOR true before message_1, C_R before "
                 "message_3): it could not parse our message_1, and the bare framing works with "
                 "it");
        compose_result(c);
    }
}

/* ---- Output ---- */

static void md_cell(FILE *f, const char *s)
{
    /* '|' would split the Markdown cell. */
    for (; *s; s++)
        fputc(*s == '|' ? '/' : *s, f);
}

static const char *variant_name(const struct cell *c)
{
    if (c->combined)
        return "A.2 combined";
    return c->framing_used[0] ? c->framing_used : framing_name(c->framing);
}

/* What worked in some dimension. */
struct support {
    bool method[4], id_cred[MAX_LIST], a2, bare;
    int suites[MAX_LIST];
    int n_suites;
    size_t cells;
};

struct summary {
    size_t ok, failed, not_supported, skipped;
    struct support edhoc, oscore; /* handshakes completed; OSCORE answered as well */
    int m4_ok, m4_ns, m4_tried, comb_ok, comb_ns, comb_tried;
    /* What the device said it does not do (and nothing of it worked). */
    bool ns_method[4], ns_a2, ns_bare;
    int ns_suites[MAX_LIST];
    int n_ns_suites;
};

static void add_int(int *v, int *n, int x)
{
    for (int k = 0; k < *n; k++)
        if (v[k] == x)
            return;
    if (*n < MAX_LIST)
        v[(*n)++] = x;
}

static void support_add(const struct opts *o, struct support *s, const struct cell *c)
{
    s->cells++;
    if (c->method >= 0 && c->method < 4)
        s->method[c->method] = true;
    for (int k = 0; k < o->n_id_creds; k++)
        if (!strcmp(o->id_creds[k], c->id_cred))
            s->id_cred[k] = true;
    add_int(s->suites, &s->n_suites, c->suite);
    if (is_bare(c))
        s->bare = true;
    else
        s->a2 = true;
}

static void summarize(const struct opts *o, const struct cell *cells, size_t n, struct summary *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < n; i++) {
        const struct cell *c = &cells[i];
        switch (c->outcome) {
        case OUT_OK: s->ok++; break;
        case OUT_FAILED: s->failed++; break;
        case OUT_NOT_SUPPORTED: s->not_supported++; break;
        case OUT_SKIPPED: s->skipped++; break;
        }
        /* A variant counts as tried only where the device said something
         * about it or its plain twin completed the handshake: otherwise
         * the failure says nothing about the variant. */
        bool twin_ok = false;
        for (size_t j = 0; j < n; j++) {
            const struct cell *t = &cells[j];
            if (t->method == c->method && t->suite == c->suite &&
                !strcmp(t->id_cred, c->id_cred) && !t->message_4 && !t->combined &&
                (c->combined ? !is_bare(t) : t->framing == c->framing) && t->edhoc_ok)
                twin_ok = true;
        }
        /* A cell that ended for another reason (skipped, a method, suite
         * or framing refused) says nothing about its variant either. */
        if (c->outcome == OUT_SKIPPED || c->unsupported != NS_NONE)
            twin_ok = false;
        if (c->message_4 && (c->edhoc_ok || twin_ok || c->unsupported == NS_M4)) {
            s->m4_tried++;
            s->m4_ok += c->edhoc_ok;
            s->m4_ns += c->unsupported == NS_M4;
        }
        if (c->combined && (c->edhoc_ok || twin_ok || c->unsupported == NS_COMBINED)) {
            s->comb_tried++;
            s->comb_ok += c->edhoc_ok;
            s->comb_ns += c->unsupported == NS_COMBINED;
        }
        if (c->unsupported == NS_METHOD && c->method >= 0 && c->method < 4)
            s->ns_method[c->method] = true;
        if (c->unsupported == NS_SUITE)
            add_int(s->ns_suites, &s->n_ns_suites, c->suite);
        if (c->unsupported == NS_FRAMING) {
            if (is_bare(c))
                s->ns_bare = true;
            else
                s->ns_a2 = true;
        }
        if (c->edhoc_ok)
            support_add(o, &s->edhoc, c);
        if (c->outcome == OUT_OK && !o->request_none)
            support_add(o, &s->oscore, c);
    }
    /* What worked in some cell is not "not supported" for the summary. */
    for (int m = 0; m < 4; m++)
        s->ns_method[m] &= !s->edhoc.method[m];
    int k = 0;
    for (int i = 0; i < s->n_ns_suites; i++) {
        bool worked = false;
        for (int j = 0; j < s->edhoc.n_suites; j++)
            worked |= s->edhoc.suites[j] == s->ns_suites[i];
        if (!worked)
            s->ns_suites[k++] = s->ns_suites[i];
    }
    s->n_ns_suites = k;
    s->ns_a2 &= !s->edhoc.a2;
    s->ns_bare &= !s->edhoc.bare;
}

static const char *support(int ok, int not_supported, int tried)
{
    return tried == 0 ? "not tested" : ok ? "yes" : not_supported ? "not supported" : "no";
}

static const char *request_name(const struct opts *o)
{
    return o->request ? o->request : DEFAULT_REQUEST;
}

/* "methods: 0 3", "suites: 2", ... of one support set. */
static void print_support(const struct opts *o, const struct support *s,
                          const struct summary *ns)
{
    int any = 0;
    printf("  methods:");
    for (int m = 0; m < 4; m++)
        if (s->method[m])
            any = printf(" %d", m);
    printf("%s", any ? "" : " none");
    if (ns) {
        any = 0;
        for (int m = 0; m < 4; m++)
            if (ns->ns_method[m])
                any = printf("%s%d", any ? " " : " (not supported: ", m);
        printf("%s", any ? ")" : "");
    }
    printf("\n  suites:");
    for (int k = 0; k < s->n_suites; k++)
        printf(" %d", s->suites[k]);
    printf("%s", s->n_suites ? "" : " none");
    if (ns && ns->n_ns_suites) {
        for (int k = 0; k < ns->n_ns_suites; k++)
            printf("%s%d", k ? " " : " (not supported: ", ns->ns_suites[k]);
        printf(")");
    }
    printf("\n  ID_CRED types:");
    any = 0;
    for (int k = 0; k < o->n_id_creds; k++)
        if (s->id_cred[k])
            any = printf(" %s", o->id_creds[k]);
    printf("%s\n", any ? "" : " none");
}

static void print_framings(const struct support *s, const struct summary *ns)
{
    printf("  framings:%s%s%s", s->a2 ? " A.2" : "", s->bare ? " bare" : "",
           s->a2 || s->bare ? "" : " none");
    if (ns && (ns->ns_a2 || ns->ns_bare))
        printf(" (not supported: %s%s%s)", ns->ns_a2 ? "A.2" : "",
               ns->ns_a2 && ns->ns_bare ? " " : "", ns->ns_bare ? "bare" : "");
    printf("\n");
}

static void print_table(const struct opts *o, const struct cell *cells, size_t n,
                        const struct summary *s, size_t planned)
{
    printf("EDHOC interop matrix against %s (each cell bounded by %g s)\n\n", o->uri,
           (double)o->timeout_ms / 1000.0);
    if (cli_interrupted())
        printf("interrupted: partial results (%zu of %zu cells completed)\n\n", n, planned);
    printf("| # | method | suite | ID_CRED | message_4 | framing | outcome | EDHOC | OSCORE | "
           "reason | EDHOC bytes | CoAP bytes | ms |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        const struct cell *c = &cells[i];
        printf("| %zu | %d | %d | %s | %s | %s | %s | ", i + 1, c->method, c->suite, c->id_cred,
               c->message_4 ? "yes" : "no", variant_name(c), outcome_names[c->outcome]);
        md_cell(stdout, c->edhoc[0] ? c->edhoc : "-");
        printf(" | ");
        md_cell(stdout, c->oscore[0] ? c->oscore : "-");
        printf(" | ");
        md_cell(stdout, c->reason[0] ? c->reason : "-");
        char eb[24] = "-", cb[24] = "-";
        if (c->edhoc_bytes >= 0)
            snprintf(eb, sizeof eb, "%ld", c->edhoc_bytes);
        if (c->coap_bytes >= 0)
            snprintf(cb, sizeof cb, "%ld", c->coap_bytes);
        printf(" | %s | %s | %ld |\n", eb, cb, c->ms);
    }
    printf("\nSummary: %zu ok, %zu failed, %zu not supported, %zu skipped of %zu cells\n", s->ok,
           s->failed, s->not_supported, s->skipped, n);
    printf("EDHOC: the handshake completed in %zu cell%s; the device supports:\n",
           s->edhoc.cells, s->edhoc.cells == 1 ? "" : "s");
    print_support(o, &s->edhoc, s);
    printf("  message_4: %s\n  combined request (RFC 9668): %s\n",
           support(s->m4_ok, s->m4_ns, s->m4_tried),
           support(s->comb_ok, s->comb_ns, s->comb_tried));
    print_framings(&s->edhoc, s);
    if (o->request_none) {
        printf("OSCORE: not tested (--request none: EDHOC only)\n");
    } else if (s->oscore.cells) {
        printf("OSCORE: a protected answer to %s in %zu of those; with:\n", request_name(o),
               s->oscore.cells);
        print_support(o, &s->oscore, NULL);
        print_framings(&s->oscore, NULL);
    } else if (s->edhoc.cells) {
        printf("OSCORE: no protected answer to %s after any completed handshake (a device that "
               "does EDHOC only: --request none)\n", request_name(o));
    } else {
        printf("OSCORE: not reached (no handshake completed)\n");
    }
    if (o->trace_dir)
        printf("Traces: %s/<cell>.txt, datagrams: %s/<cell>.pcap\n", o->trace_dir, o->trace_dir);
}

/* ---- JSON (docs/json/interop.schema.json) ---- */

static json_t *json_int_list(const int *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

static json_t *json_framings(bool a2, bool bare)
{
    json_t *a = json_array();
    if (a2)
        json_array_append_new(a, json_string("A.2"));
    if (bare)
        json_array_append_new(a, json_string("bare"));
    return a;
}

static void json_support(json_t *obj, const struct opts *o, const struct support *s)
{
    cli_json_set(obj, "cells", json_integer((json_int_t)s->cells));
    json_t *methods = json_array();
    for (int m = 0; m < 4; m++)
        if (s->method[m])
            json_array_append_new(methods, json_integer(m));
    cli_json_set(obj, "methods", methods);
    cli_json_set(obj, "suites", json_int_list(s->suites, s->n_suites));
    json_t *ids = json_array();
    for (int k = 0; k < o->n_id_creds; k++)
        if (s->id_cred[k])
            json_array_append_new(ids, json_string(o->id_creds[k]));
    cli_json_set(obj, "id_creds", ids);
    cli_json_set(obj, "framings", json_framings(s->a2, s->bare));
}

static json_t *json_cell(const struct cell *c)
{
    static const char *const unsupported_names[] = {"", "method", "suite", "message_4",
                                                    "combined", "framing"};
    json_t *j = json_object();
    cli_json_set(j, "cell", json_string(c->name));
    cli_json_set(j, "method", json_integer(c->method));
    cli_json_set(j, "suite", json_integer(c->suite));
    cli_json_set(j, "id_cred", json_string(c->id_cred));
    cli_json_set(j, "message_4", json_boolean(c->message_4));
    cli_json_set(j, "framing",
                 json_string(c->framing_used[0] ? c->framing_used : framing_name(c->framing)));
    cli_json_set(j, "combined", json_boolean(c->combined));
    cli_json_set(j, "outcome", json_string(outcome_names[c->outcome]));
    cli_json_set(j, "failure", c->outcome == OUT_FAILED ? json_string(failure_names[c->failure])
                                                        : json_null());
    cli_json_set(j, "unsupported", c->unsupported != NS_NONE
                                       ? json_string(unsupported_names[c->unsupported])
                                       : json_null());
    cli_json_set(j, "edhoc_completed", json_boolean(c->edhoc_ok));
    cli_json_set(j, "err_code", cli_json_int_or_null(c->err_code >= 0, c->err_code));
    cli_json_set(j, "edhoc_bytes", cli_json_int_or_null(c->edhoc_bytes >= 0, c->edhoc_bytes));
    cli_json_set(j, "coap_bytes", cli_json_int_or_null(c->coap_bytes >= 0, c->coap_bytes));
    cli_json_set(j, "ms", json_integer(c->ms));
    /* "a, b" back into a list. */
    json_t *tol = json_array();
    for (const char *p = c->tolerated; *p;) {
        size_t len = strcspn(p, ",");
        json_array_append_new(tol, json_stringn(p, len));
        p += len;
        while (*p == ',' || *p == ' ')
            p++;
    }
    cli_json_set(j, "tolerated", tol);
    /* The explanations, for a person: how each stage ended and why. */
    cli_json_set(j, "edhoc", cli_json_string_or_null(c->edhoc[0] ? c->edhoc : NULL));
    cli_json_set(j, "oscore", cli_json_string_or_null(c->oscore[0] ? c->oscore : NULL));
    cli_json_set(j, "result", json_string(c->result));
    cli_json_set(j, "reason", cli_json_string_or_null(c->reason[0] ? c->reason : NULL));
    return j;
}

static json_t *matrix_json(const struct opts *o, const struct cell *cells, size_t n,
                           const struct summary *s, size_t planned)
{
    json_t *root = json_object();
    cli_json_set(root, "uri", json_string(o->uri));
    cli_json_set(root, "timeout_s", json_real((double)o->timeout_ms / 1000.0));
    cli_json_set(root, "framing", json_string(o->framing == FR_BOTH ? "both"
                                              : o->framing == FR_A2 ? "a2"
                                                                    : framing_name(o->framing)));
    cli_json_set(root, "request", o->request_none ? json_null() : json_string(request_name(o)));
    cli_json_set(root, "partial", json_boolean(cli_interrupted() != 0));
    cli_json_set(root, "cells_planned", json_integer((json_int_t)planned));
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_cell(&cells[i]));
    cli_json_set(root, "cells", arr);
    json_t *sum = json_object();
    cli_json_set(sum, "ok", json_integer((json_int_t)s->ok));
    cli_json_set(sum, "failed", json_integer((json_int_t)s->failed));
    cli_json_set(sum, "not_supported", json_integer((json_int_t)s->not_supported));
    cli_json_set(sum, "skipped", json_integer((json_int_t)s->skipped));
    json_t *edhoc = json_object();
    json_support(edhoc, o, &s->edhoc);
    cli_json_set(edhoc, "message_4", json_string(support(s->m4_ok, s->m4_ns, s->m4_tried)));
    cli_json_set(edhoc, "combined", json_string(support(s->comb_ok, s->comb_ns, s->comb_tried)));
    json_t *ns = json_object();
    json_t *ns_methods = json_array();
    for (int m = 0; m < 4; m++)
        if (s->ns_method[m])
            json_array_append_new(ns_methods, json_integer(m));
    cli_json_set(ns, "methods", ns_methods);
    cli_json_set(ns, "suites", json_int_list(s->ns_suites, s->n_ns_suites));
    cli_json_set(ns, "framings", json_framings(s->ns_a2, s->ns_bare));
    cli_json_set(edhoc, "not_supported", ns);
    cli_json_set(sum, "edhoc", edhoc);
    json_t *oscore = json_object();
    cli_json_set(oscore, "tested", json_boolean(!o->request_none));
    json_support(oscore, o, &s->oscore);
    cli_json_set(sum, "oscore", oscore);
    cli_json_set(root, "summary", sum);
    return root;
}

/* ---- Command line ---- */

enum {
    OPT_METHODS = 1,
    OPT_SUITES,
    OPT_ID_CREDS,
    OPT_FRAMING,
    OPT_FULL,
    OPT_TIMEOUT,
    OPT_REQUEST,
    OPT_TOLERATE,
    OPT_CRED,
    OPT_KEY,
    OPT_TRUST,
    OPT_TRACE_DIR,
    OPT_REPORT,
    OPT_JSON,
    OPT_JSON_OUT,
};

static const struct cli_opt matrix_opts[] = {
    {OPT_METHODS, "methods", "LIST", "methods to try (default 0,1,2,3)"},
    {OPT_SUITES, "suites", "LIST", "cipher suites to try (default 0,2)"},
    {OPT_ID_CREDS, "id-creds", "LIST",
     "ID_CRED types to try: kid, kccs, kcwt, x5t, x5chain, x5bag (default kid,x5t; with\n"
     "--cred: kid,kccs for a CCS, kcwt,kid for a CWT, x5t,x5chain,x5bag for a certificate)"},
    {OPT_FRAMING, "framing", "a2|bare|auto",
     "the framing of the cells: a2 (RFC 9528 Appendix A.2) or bare only; auto: each cell tries "
     "A.2, then bare, and once the device answered in one, the cells use it. Default: A.2 "
     "cells, plus the bare framing once"},
    {OPT_FULL, "full", NULL,
     "the combined request and the bare framing (with and without message_4) for every cell; "
     "by default they run once, for the first configuration that worked"},
    {OPT_TIMEOUT, "timeout", "SECONDS",
     "bound on each cell (decimals allowed; 0.1..600, default 5; a cell that does not finish 2 "
     "s after it is a timeout; twice SECONDS while --framing auto probes)"},
    {OPT_REQUEST, "request", "'METHOD PATH [PAYLOAD]'|none",
     "the OSCORE request of every cell (default 'GET /.well-known/core'; repeatable); none: "
     "EDHOC only, for devices without OSCORE resources"},
    {OPT_TOLERATE, "tolerate", "LIST",
     "deviations of the device the initiator accepts (passed to every cell as they are; see "
     "edhoc-cli initiator --help)"},
    {OPT_TRACE_DIR, "trace-dir", "DIR",
     "keep each cell's RFC 9529-style trace in DIR/<cell>.txt and every datagram of the cell "
     "in DIR/<cell>.pcap (session secrets: DIR is made 0700, its files 0600; an existing DIR "
     "that group or others can access is refused)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt cred_opts[] = {
    {OPT_CRED, "cred", "FILE", "our credential (as for the initiator; default: the demo ones)"},
    {OPT_KEY, "key", "FILE", "the private key of --cred"},
    {OPT_TRUST, "trust", "FILE", "the devices' credentials or trust anchors we accept"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt report_opts[] = {
    {OPT_REPORT, "report", "DIR",
     "instead of testing a device: the matrix of what the devices that connected to "
     "edhoc-cli responder --interop-log DIR tried as initiators, read from "
     "DIR/" INTEROP_LOG_FILE " (takes only --json and --json-out)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt output_opts[] = {
    {OPT_JSON, "json", NULL,
     "machine-readable output (docs/json/interop.schema.json; with --report "
     "docs/json/interop-report.schema.json)"},
    {OPT_JSON_OUT, "json-out", "FILE", "also write that JSON to FILE (with the table on stdout)"},
    {0, NULL, NULL, NULL},
};

static const struct cli_opt_group interop_groups[] = {
    {"Matrix (edhoc-cli interop URI)", matrix_opts},
    {"Our credentials (passed to every cell)", cred_opts},
    {"Report (the devices as initiators)", report_opts},
    {"Output", output_opts},
    {NULL, NULL},
};

static const struct cli_opt_renamed interop_renamed[] = {
    {"timeout-ms", "--timeout SECONDS (decimals allowed, e.g. --timeout 0.5)"},
    {"handshake-timeout", "--timeout SECONDS (each cell's bound; decimals allowed)"},
    {NULL, NULL},
};

const struct cli_cmd_spec cli_spec_interop = {
    .name = "interop",
    .synopsis = "URI [OPTIONS]\n       edhoc-cli interop --report DIR [--json] [--json-out FILE]",
    .description =
        "Runs a test matrix against an EDHOC responder (the device) with us as the\n"
        "initiator: methods x cipher suites x ID_CRED types, each with and without\n"
        "message_4, plus the RFC 9668 combined request and the bare framing. Each cell\n"
        "is one `edhoc-cli initiator` run (handshake, then one OSCORE request). Prints a\n"
        "table with how EDHOC and the OSCORE request of every cell ended and the likely\n"
        "causes, then a summary of what the device supports for EDHOC (even when OSCORE\n"
        "fails) and what worked with OSCORE.\n\n"
        "Every cell has an EDHOC result (ok, EDHOC error N from the peer, our\n"
        "verification failed, timeout, ...) and, once the handshake completed, an OSCORE\n"
        "result (ok, no answer to the request, an answer without OSCORE, whatever its\n"
        "code, ...). Its outcome is one of:\n"
        "  ok             EDHOC completed and the request got a protected answer (or\n"
        "                 --request none)\n"
        "  failed         EDHOC or the OSCORE request failed\n"
        "  not supported  the device said it does not do it: a method it refuses (EDHOC\n"
        "                 error 1), a suite it refuses (error 2 with SUITES_R), no\n"
        "                 message_4 (an empty 2.04 to message_3), the combined request\n"
        "                 refused (4.02 or an error saying so), a framing it cannot read\n"
        "  skipped        not possible with our credentials (e.g. a key that does not\n"
        "                 fit the suite's curve), or the combined request with\n"
        "                 --request none\n\n"
        "--report DIR: the other direction, the devices as initiators. Reads\n"
        "DIR/" INTEROP_LOG_FILE ", written by `edhoc-cli responder --interop-log DIR`, and\n"
        "prints per device (peer host) the combinations it tried (method, SUITES_I\n"
        "offered -> selected, ID_CRED_I type, message_4, framing / combined request),\n"
        "with attempts, successes, how the last attempt ended and the likely causes, and\n"
        "the trace / pcap of its last failure; then what the device supports. Unusable\n"
        "lines (truncated, not a record) are named on stderr and skipped.\n\n"
        "Progress: one line rewritten on a terminal; nothing when standard error is not\n"
        "a terminal, unless -v. SIGINT or SIGTERM stops the matrix: the cell that was\n"
        "running is stopped and left out, and what completed is printed, marked partial.",
    .groups = interop_groups,
    .renamed = interop_renamed,
    .epilogue =
        "Exit codes: 0 no cell failed (not supported and skipped cells do not count);\n"
        "1 some cell failed; 2 bad command line (also when the initiator refuses the\n"
        "options every cell shares); 3 the trace directory or the --json-out file cannot\n"
        "be used, or no cell could be run with our credentials; 10 internal error;\n"
        "130/143 interrupted by SIGINT/SIGTERM (the completed cells are printed).\n"
        "With --report: 0 the last attempt of every combination ended well; 1 some did\n"
        "not; 3 DIR or its log cannot be read, or --json-out not written.",
};

static bool parse_list(const struct cli_opt_parser *p, int *out, int *n, int lo, int hi)
{
    int k = cli_parse_int_list(p->value, out, MAX_LIST);
    if (k <= 0) {
        cli_opt_error(p, "%s: expected a comma-separated list of integers, got '%s'", p->flag,
                      p->value);
        return false;
    }
    for (int i = 0; i < k; i++) {
        if (out[i] < lo || out[i] > hi) {
            cli_opt_error(p, "%s: %d is out of range %d..%d", p->flag, out[i], lo, hi);
            return false;
        }
    }
    *n = k;
    return true;
}

static bool parse_id_creds(const char *v, struct opts *o)
{
    o->n_id_creds = 0;
    const char *p = v;
    while (*p) {
        size_t len = strcspn(p, ",");
        static const char *const types[] = {"kid", "kccs", "kcwt", "x5t", "x5chain", "x5bag"};
        bool known = false;
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (len == strlen(types[i]) && !strncmp(p, types[i], len))
                known = true;
        if (!known || o->n_id_creds >= MAX_LIST) {
            fprintf(stderr, "edhoc-cli interop: --id-creds: expected kid, kccs, kcwt, x5t, x5chain "
                            "or x5bag\n");
            return false;
        }
        snprintf(o->id_creds[o->n_id_creds++], sizeof o->id_creds[0], "%.*s", (int)len, p);
        p += len;
        if (*p == ',')
            p++;
    }
    return o->n_id_creds > 0;
}

/* With our own credential file, the ID_CRED types it can be named by. */
static void default_id_creds(struct opts *o)
{
    bool cert = false, cwt = false;
    if (o->cred_path) {
        size_t len = 0;
        uint8_t *d = cli_read_file(o->cred_path, &len);
        /* PEM (perhaps after an "EDHOC-kid:" line) or DER: a certificate;
         * a CBOR array of four: a CWT. */
        cert = d && ((len > 10 && (!memcmp(d, "-----BEGIN", 10) || !memcmp(d, "EDHOC-kid:", 10))) ||
                     (len > 0 && d[0] == 0x30));
        cwt = d && len > 0 && d[0] == 0x84;
        free(d);
        parse_id_creds(cert ? "x5t,x5chain,x5bag" : cwt ? "kcwt,kid" : "kid,kccs", o);
    } else {
        parse_id_creds("kid,x5t", o);
    }
}

/* A setup error of the initiator that names something of this cell (its
 * method, suite or ID_CRED type) rather than what every cell shares (the
 * URI, a file, a --request). */
static bool setup_error_of_cell(const struct cell *c)
{
    char m[24], s[24];
    snprintf(m, sizeof m, "method %d", c->method);
    snprintf(s, sizeof s, "suite %d", c->suite);
    return strstr(c->setup_text, m) || strstr(c->setup_text, s) ||
           strstr(c->setup_text, "cannot name");
}

/* Whether to go on after a cell: a command line the initiator refuses
 * before any cell got past its setup, for something no cell changes, stops
 * the matrix (every cell would say the same). */
static bool fatal_cell(const struct matrix_state *st, const struct cell *c)
{
    return c->setup_exit && !st->any_ran && !setup_error_of_cell(c);
}

/* Print (and write to --json-out) the matrix; returns the exit code. */
static int report_matrix(const struct opts *o, struct cell *cells, size_t n, size_t planned,
                         bool any_ran)
{
    settle_framing(cells, n);
    if (!any_ran && !cli_interrupted()) {
        /* Every cell was refused by the initiator before it sent anything:
         * nothing of the device was tested. */
        fprintf(stderr, "edhoc-cli interop: no cell could be run with these credentials and "
                        "options (see the reasons)\n");
    }
    struct summary sum;
    summarize(o, cells, n, &sum);
    json_t *root = o->json || o->json_out ? matrix_json(o, cells, n, &sum, planned) : NULL;
    if (o->json) {
        json_incref(root);
        cli_json_print(root, stdout);
    } else {
        print_table(o, cells, n, &sum, planned);
    }
    int rc = sum.failed ? CLI_EXIT_FAILURE : any_ran ? CLI_EXIT_OK : CLI_EXIT_INPUT;
    if (o->json_out) {
        FILE *f = fopen(o->json_out, "w");
        json_incref(root);
        if (f) {
            if (cli_json_print(root, f) || fclose(f))
                f = NULL;
        } else {
            json_decref(root);
        }
        if (!f) {
            fprintf(stderr, "edhoc-cli interop: --json-out %s: %s\n", o->json_out,
                    strerror(errno));
            rc = CLI_EXIT_INPUT;
        }
    }
    json_decref(root);
    if (cli_interrupted()) {
        if (!o->quiet)
            fprintf(stderr, "edhoc-cli interop: interrupted: partial results (%zu of %zu cells)\n",
                    n, planned);
        return cli_interrupt_exit_code();
    }
    return rc;
}

int cmd_interop(int argc, char **argv)
{
    /* Our private keys, and the secrets of each cell's handshake. */
    cli_no_core_dumps();
    struct opts o;
    memset(&o, 0, sizeof o);
    o.timeout_ms = 5000;
    o.framing = FR_BOTH;
    static const int def_methods[] = {0, 1, 2, 3}, def_suites[] = {0, 2};
    static const char *const framings[] = {"a2", "A.2", "bare", "auto", NULL};
    static const enum framing framing_of[] = {FR_A2, FR_A2, FR_BARE, FR_AUTO};
    bool have_methods = false, have_suites = false;
    const char *report_dir = NULL;
    /* An option of the matrix given with --report, named in the refusal. */
    const char *matrix_only = NULL;
    struct cli_opt_parser p;
    cli_opt_begin(&p, &cli_spec_interop, argc, argv);
    for (;;) {
        enum cli_opt_status st = cli_opt_next(&p);
        if (st == CLI_OPT_DONE)
            break;
        if (st == CLI_OPT_EXIT)
            return p.exit_code;
        if (st == CLI_OPT_POSITIONAL) {
            if (o.uri)
                return cli_opt_error(&p, "one device at a time (got '%s' and '%s')", o.uri,
                                     p.value);
            o.uri = p.value;
            continue;
        }
        int id = p.opt->id, idx = 0;
        if (id != OPT_REPORT && id != OPT_JSON && id != OPT_JSON_OUT && !matrix_only)
            matrix_only = p.opt->name;
        switch (id) {
        case OPT_METHODS:
            if (!parse_list(&p, o.methods, &o.n_methods, 0, 3))
                return CLI_EXIT_USAGE;
            have_methods = true;
            break;
        case OPT_SUITES:
            if (!parse_list(&p, o.suites, &o.n_suites, 0, 31))
                return CLI_EXIT_USAGE;
            have_suites = true;
            break;
        case OPT_ID_CREDS:
            if (!parse_id_creds(p.value, &o))
                return CLI_EXIT_USAGE;
            break;
        case OPT_FRAMING:
            if (cli_opt_choice(&p, framings, &idx))
                return CLI_EXIT_USAGE;
            o.framing = framing_of[idx];
            break;
        case OPT_FULL: o.full = true; break;
        case OPT_TIMEOUT:
            if (cli_opt_seconds(&p, 0.1, 600, &o.timeout_ms))
                return CLI_EXIT_USAGE;
            break;
        case OPT_TRACE_DIR: o.trace_dir = p.value; break;
        case OPT_REPORT: report_dir = p.value; break;
        case OPT_JSON: o.json = true; break;
        case OPT_JSON_OUT: o.json_out = p.value; break;
        case OPT_REQUEST:
        case OPT_TOLERATE:
        case OPT_CRED:
        case OPT_KEY:
        case OPT_TRUST:
            /* The initiator's own options: passed to every cell as they
             * are, checked by the initiator. */
            if (o.n_pass + 2 > MAX_PASS)
                return cli_opt_error(&p, "too many options");
            o.pass[o.n_pass++] = id == OPT_REQUEST    ? "--request"
                                 : id == OPT_TOLERATE ? "--tolerate"
                                 : id == OPT_CRED     ? "--cred"
                                 : id == OPT_KEY      ? "--key"
                                                      : "--trust";
            o.pass[o.n_pass++] = p.value;
            if (id == OPT_CRED)
                o.cred_path = p.value;
            if (id == OPT_REQUEST) {
                if (!strcmp(p.value, "none"))
                    o.request_none = true;
                else if (!o.request)
                    o.request = p.value;
            }
            break;
        }
    }
    if (report_dir) {
        /* The other direction reads a log: nothing of the matrix applies. */
        if (o.uri)
            return cli_opt_error(&p, "--report reads the log of a responder and tests no device "
                                     "(got '%s'; run them separately)", o.uri);
        if (matrix_only)
            return cli_opt_error(&p, "--%s applies to the matrix against a device (edhoc-cli "
                                     "interop URI), not to --report", matrix_only);
        struct interop_report_opts ro = {report_dir, o.json, o.json_out};
        return interop_report_run(&ro);
    }
    if (!o.uri)
        return cli_opt_usage_error(&cli_spec_interop, "which device? (a coap:// URI, or --report "
                                                      "DIR)");
    if (strncmp(o.uri, "coap://", 7) != 0)
        return cli_opt_error(&p, "expected a coap:// URI, got '%s'", o.uri);
    if (o.request_none && o.request)
        return cli_opt_error(&p, "--request none cannot go with other requests");
    o.verbose = p.verbose;
    o.quiet = p.quiet;
    if (!have_methods) {
        memcpy(o.methods, def_methods, sizeof def_methods);
        o.n_methods = 4;
    }
    if (!have_suites) {
        memcpy(o.suites, def_suites, sizeof def_suites);
        o.n_suites = 2;
    }
    if (!o.n_id_creds)
        default_id_creds(&o);
    if (o.trace_dir && prepare_trace_dir(o.trace_dir) != 0)
        return CLI_EXIT_INPUT;

    /* The variants of each configuration: message_4, combined, framing. */
    struct variant {
        bool message_4, combined;
        enum framing framing;
    };
    static const struct variant full_both[] = {{false, false, FR_A2}, {true, false, FR_A2},
                                               {false, true, FR_A2},  {false, false, FR_BARE},
                                               {true, false, FR_BARE}};
    static const struct variant full_a2[] = {{false, false, FR_A2}, {true, false, FR_A2},
                                             {false, true, FR_A2}};
    static const struct variant full_auto[] = {{false, false, FR_AUTO}, {true, false, FR_AUTO},
                                               {false, true, FR_A2}};
    struct variant plain[2] = {{false, false, FR_A2}, {true, false, FR_A2}};
    const struct variant *variants = plain;
    size_t per = 2;
    if (!o.full) {
        plain[0].framing = plain[1].framing = o.framing == FR_BOTH ? FR_A2 : o.framing;
    } else if (o.framing == FR_BOTH) {
        variants = full_both;
        per = 5;
    } else if (o.framing == FR_A2) {
        variants = full_a2;
        per = 3;
    } else if (o.framing == FR_AUTO) {
        variants = full_auto;
        per = 3;
    } else {
        plain[0].framing = plain[1].framing = FR_BARE;
    }
    size_t grid = (size_t)o.n_methods * (size_t)o.n_suites * (size_t)o.n_id_creds * per;
    /* The cells after the grid: the combined request and the bare framing
     * for one configuration (not with --full). */
    size_t extra = o.full ? 0 : (size_t)(o.framing != FR_BARE) + (size_t)(o.framing == FR_BOTH ||
                                                                          o.framing == FR_AUTO);
    size_t planned = grid + extra;
    if (planned > MAX_CELLS)
        return cli_opt_error(&p, "at most %d cells (this matrix has %zu); narrow it", MAX_CELLS,
                             planned);
    struct cell *cells = calloc(planned + 2, sizeof *cells);
    if (!cells)
        return CLI_EXIT_INTERNAL;
    struct matrix_state st;
    memset(&st, 0, sizeof st);
    for (int i = 0; i < 32; i++)
        st.suites_r_cache[i] = -2;
    st.auto_known = FR_AUTO;
    /* SIGINT/SIGTERM: the running cell is stopped and left out, and the
     * matrix of the cells that completed is printed (issue 14, item 9). */
    cli_interrupt_catch();
    struct cli_progress pr;
    cli_progress_begin(&pr, "interop", o.verbose, o.quiet);
    size_t n = 0, failed = 0;
    for (size_t g = 0; g < grid && !cli_interrupted(); g++) {
        size_t v = g % per, k = g / per % (size_t)o.n_id_creds;
        size_t s = g / per / (size_t)o.n_id_creds % (size_t)o.n_suites;
        size_t m = g / per / (size_t)o.n_id_creds / (size_t)o.n_suites;
        struct cell *c = &cells[n];
        c->method = o.methods[m];
        c->suite = o.suites[s];
        snprintf(c->id_cred, sizeof c->id_cred, "%s", o.id_creds[k]);
        c->message_4 = variants[v].message_4;
        c->combined = variants[v].combined;
        c->framing = variants[v].framing;
        cell_name(c);
        cli_progress_update(&pr, "cell %zu of %zu: %s (%zu failed so far)", n + 1, planned,
                            c->name, failed);
        if (c->combined && o.framing == FR_AUTO && st.auto_known == FR_BARE)
            skip_cell(c, "the RFC 9668 combined request goes with the A.2 framing, which the "
                         "device does not take (--framing auto found bare)");
        else
            run_cell(&o, &st, c);
        if (c->interrupted)
            break;
        n++;
        failed += c->outcome == OUT_FAILED;
        if (fatal_cell(&st, c)) {
            cli_progress_end(&pr);
            fprintf(stderr, "edhoc-cli interop: %s\n", c->setup_text);
            int rc = c->setup_exit;
            free(cells);
            return rc;
        }
    }
    if (!o.full && !cli_interrupted() && n > 0) {
        /* The combined request and the bare framing for one configuration
         * the device accepts, so their failures mean what they say: the
         * first cell that was ok, else the first whose handshake
         * completed, else one our credentials can run. */
        const struct cell *base = &cells[0];
        for (size_t i = 0; i < n; i++) {
            if (cells[i].outcome == OUT_OK && !cells[i].message_4) {
                base = &cells[i];
                break;
            }
        }
        if (base->outcome != OUT_OK)
            for (size_t i = 0; i < n; i++) {
                if (cells[i].edhoc_ok && !cells[i].message_4) {
                    base = &cells[i];
                    break;
                }
            }
        if (base->outcome == OUT_SKIPPED)
            for (size_t i = 0; i < n; i++) {
                if (cells[i].outcome != OUT_SKIPPED) {
                    base = &cells[i];
                    break;
                }
            }
        struct cell b = *base;
        /* The combined request needs A.2; the extra bare cell is what
         * the default adds, and what auto adds once A.2 is known to
         * work (bare found by auto is covered by the cells already). */
        bool want_combined = o.framing != FR_BARE;
        bool want_bare = o.framing == FR_BOTH || (o.framing == FR_AUTO && st.auto_known != FR_BARE);
        if (o.framing == FR_AUTO && !want_bare)
            planned--;
        for (int v = 0; v < 2 && !cli_interrupted(); v++) {
            if ((v == 0 && !want_combined) || (v == 1 && !want_bare))
                continue;
            struct cell *c = &cells[n];
            memset(c, 0, sizeof *c);
            c->method = b.method;
            c->suite = b.suite;
            snprintf(c->id_cred, sizeof c->id_cred, "%s", b.id_cred);
            c->combined = v == 0;
            c->framing = v == 0 ? FR_A2 : FR_BARE;
            cell_name(c);
            cli_progress_update(&pr, "cell %zu of %zu: %s (%zu failed so far)", n + 1, planned,
                                c->name, failed);
            if (c->combined && o.framing == FR_AUTO && st.auto_known == FR_BARE)
                skip_cell(c, "the RFC 9668 combined request goes with the A.2 framing, which the "
                             "device does not take (--framing auto found bare)");
            else
                run_cell(&o, &st, c);
            if (c->interrupted)
                break;
            n++;
            failed += c->outcome == OUT_FAILED;
        }
    }
    cli_progress_end(&pr);
    int rc = report_matrix(&o, cells, n, planned, st.any_ran);
    free(cells);
    return rc;
}
