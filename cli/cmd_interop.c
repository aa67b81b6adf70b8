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
#include "interop_log.h"
#include "json_read.h"
#include "util.h"

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
    long err_code;         /* the peer's ERR_CODE, -1: none */
    char edhoc[240];       /* "ok" or how EDHOC ended; "" when not run */
    char oscore[240];      /* "ok" or how the request ended; "" when not reached */
    char result[500];      /* both in one line */
    char reason[700];      /* the likely causes */
    char tolerated[120];   /* deviations of the device the initiator tolerated, "a, b" */
    long edhoc_bytes, coap_bytes;
    long ms;
    int setup_exit;        /* the initiator refused its command line before sending */
    char setup_text[300];
};

struct opts {
    const char *uri;
    int methods[MAX_LIST], suites[MAX_LIST];
    int n_methods, n_suites;
    char id_creds[MAX_LIST][12];
    int n_id_creds;
    long timeout_s;
    bool full, json;
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
    int exit_code;    /* -1: died by a signal */
    char *out;        /* stdout (the --json report) */
    char err_line[300]; /* the last line of stderr */
    long ms;
};

static uint64_t now_ms(void)
{
    return cli_now_ns() / 1000000u;
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
    if (r->killed) {
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
    char method[8], timeout[16];
};

static void initiator_argv_start(const struct opts *o, int method, const char *suites,
                                 struct initiator_argv *a)
{
    snprintf(a->method, sizeof a->method, "%d", method);
    snprintf(a->timeout, sizeof a->timeout, "%ld", o->timeout_s);
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
    run_child(a->v, o->timeout_s * 1000 * (twice ? 2 : 1) + KILL_GRACE_MS, r);
}

/* The cipher suites the peer offers in SUITES_R: ask the initiator to start
 * with the refused suite and fall back to any other, then see which one it
 * settled on (our most preferred among SUITES_R). Returns -1 if unknown. */
static int probe_suites_r(const struct opts *o, int refused, int method, bool bare)
{
    static const int known[] = {0, 1, 2, 3, 4, 5, 6, 24, 25};
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
    if (r.out) {
        json_read_long(r.out, NULL, "suite", &suite);
        json_read_long(r.out, NULL, "attempts", &attempts);
    }
    free(r.out);
    return attempts >= 2 && suite >= 0 && suite != refused ? (int)suite : -1;
}

/* The peer refused the suite with error code 2 (RFC 9528 6.3): the suite
 * is not supported; SUITES_R says which ones are. */
static void suite_refused(const struct opts *o, struct matrix_state *st, struct cell *c,
                          const char *out, const char *diag)
{
    set_unsupported(c, NS_SUITE);
    c->err_code = 2;
    set_text(c->edhoc, sizeof c->edhoc, "EDHOC error 2 from the peer: %s",
             diag[0] ? diag : "wrong selected cipher suite");
    /* The initiator's report names the SUITES_R it received; only an
     * initiator that does not probes the peer once more. */
    int suites_r[EDHOC_MAX_SUITES];
    int n_r = out ? json_read_int_array(out, NULL, "suites_r", suites_r, EDHOC_MAX_SUITES) : -1;
    if (n_r > 0) {
        char list[80];
        size_t w = 0;
        for (int i = 0; i < n_r && w < sizeof list; i++)
            w += (size_t)snprintf(list + w, sizeof list - w, "%s%d", i ? ", " : "", suites_r[i]);
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
static bool handshake_completed(const struct cell *c, const char *out)
{
    if (!out)
        return false;
    double hs_ms = 0;
    if (json_read_double(out, NULL, "handshake_ms", &hs_ms) && hs_ms > 0)
        return true;
    struct json_msg m[32];
    size_t n = json_read_initiator_messages(out, m, 32);
    for (size_t i = 0; i < n; i++) {
        if (m[i].from_initiator && !strncmp(m[i].name, "OSCORE request", 14))
            return true;
        if (c->combined && !m[i].from_initiator && !strcmp(m[i].name, "OSCORE response 1"))
            return true;
    }
    return false;
}

/* The initiator's "tolerated": ["c-bstr", "kid-int"] as "c-bstr, kid-int";
 * absent (an initiator without --tolerate) or empty: "". */
static void read_tolerated(const char *out, char *dst, size_t cap)
{
    dst[0] = '\0';
    const char *v = out ? json_read_field(out, NULL, "tolerated") : NULL;
    if (!v || *v != '[')
        return;
    /* Names are tokens (c-bstr, kid-int): quotes and white space go. */
    size_t n = 0;
    for (v++; *v && *v != ']' && n + 3 < cap; v++) {
        if (*v == ',')
            n += (size_t)snprintf(dst + n, cap - n, ", ");
        else if (*v != '"' && *v != ' ' && *v != '\n' && *v != '\t' && *v != '\r')
            dst[n++] = *v;
    }
    dst[n] = '\0';
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
    const char *out = r->out && r->out[0] == '{' ? r->out : NULL;
    c->err_code = -1;
    c->outcome = OUT_FAILED;
    c->failure = FAIL_OTHER;
    c->unsupported = NS_NONE;
    c->edhoc_ok = c->a2_unparsed = false;
    c->edhoc[0] = c->oscore[0] = c->reason[0] = '\0';
    char a2_failure[400] = "";
    if (out) {
        const char *e = json_read_field(out, NULL, "error");
        if (e && *e == '{') {
            json_read_string(e, NULL, "text", text, sizeof text);
            json_read_string(e, NULL, "diagnostic", diag, sizeof diag);
            json_read_long(e, NULL, "err_code", &code);
        }
        json_read_string(out, NULL, "outcome", outcome, sizeof outcome);
        json_read_long(out, NULL, "total_edhoc_bytes", &c->edhoc_bytes);
        json_read_long(out, NULL, "total_coap_bytes", &c->coap_bytes);
        char fr[8];
        if (json_read_string(out, NULL, "framing", fr, sizeof fr))
            snprintf(c->framing_used, sizeof c->framing_used, "%s", fr);
        json_read_string(out, NULL, "framing_a2_failure", a2_failure, sizeof a2_failure);
        read_tolerated(out, c->tolerated, sizeof c->tolerated);
    }
    if (!text[0])
        snprintf(text, sizeof text, "%s",
                 r->err_line[0] ? r->err_line : "the initiator's report is unreadable");
    if (r->killed) {
        c->failure = FAIL_TIMEOUT;
        set_text(c->edhoc, sizeof c->edhoc, "timeout");
        set_text(c->reason, sizeof c->reason,
                 "the initiator did not finish within %ld s: the device is silent or stuck",
                 o->timeout_s + KILL_GRACE_MS / 1000);
        return;
    }
    size_t sent = 0;
    if (out) {
        struct json_msg m[1];
        sent = json_read_initiator_messages(out, m, 1);
    }
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
        if (exit_code == CLI_EXIT_OK && !strcmp(outcome, "ok")) {
            c->outcome = OUT_OK;
            c->failure = FAIL_NONE;
            char rc[48] = "";
            const char *resp = json_read_field(out, NULL, "responses");
            if (o->request_none)
                set_text(c->oscore, sizeof c->oscore, "not asked (--request none)");
            else if (resp && json_read_string(resp, NULL, "code", rc, sizeof rc) && rc[0] &&
                     rc[0] != '2')
                set_text(c->oscore, sizeof c->oscore, "ok (a protected %s)", rc);
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
            char d[300];
            if (json_read_string(out, NULL, "diagnosis", d, sizeof d) && d[0]) {
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
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        bool link = errno == ELOOP || (errno == ENOTDIR && lstat(dir, &st) == 0 &&
                                       S_ISLNK(st.st_mode));
        fprintf(stderr, "edhoc-cli interop: --trace-dir %s: %s\n", dir,
                link ? "a symbolic link; give the directory itself" :
                errno == ENOTDIR ? "not a directory" : strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    /* Created by us: the umask may have taken bits away, never added. */
    if (created && fchmod(fd, 0700) == 0)
        st.st_mode = (st.st_mode & ~(mode_t)07777) | 0700;
    close(fd);
    if (st.st_uid != geteuid()) {
        fprintf(stderr, "edhoc-cli interop: --trace-dir %s: owned by another user; the traces "
                        "hold session secrets: give a directory of your own\n", dir);
        return -1;
    }
    if (st.st_mode & 077) {
        fprintf(stderr, "edhoc-cli interop: --trace-dir %s: group or others can access it "
                        "(mode %04o) and the traces hold session secrets: chmod 700 %s, or "
                        "give a new directory\n", dir, (unsigned)(st.st_mode & 07777), dir);
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
    const char *cur = NULL, *ob, *oe;
    while (r->out && json_read_next_object(r->out, "trace", &cur, &ob, &oe)) {
        char name[64];
        json_read_string(ob, oe, "name", name, sizeof name);
        const char *hex = json_read_field(ob, oe, "hex");
        size_t len = 0;
        if (hex && *hex == '"') {
            hex++;
            while (hex + len < oe && hex[len] != '"')
                len++;
        }
        fprintf(f, "  %s (%zu bytes) %.*s\n", name, len / 2, (int)len, hex ? hex : "");
    }
    fprintf(f, "\nMessages:\n");
    struct json_msg m[32];
    size_t n = r->out ? json_read_initiator_messages(r->out, m, 32) : 0;
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %-32s %s EDHOC %ld, CoAP/UDP %ld bytes, %u datagram%s\n", m[i].name,
                m[i].from_initiator ? "I->R" : "R->I", m[i].edhoc, m[i].coap, m[i].dgrams,
                m[i].dgrams == 1 ? "" : "s");
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
    c->edhoc_bytes = c->coap_bytes = 0;
    diagnose(o, st, c, &r);
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
    free(r.out);
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
                        const struct summary *s)
{
    printf("EDHOC interop matrix against %s (each cell bounded by %ld s)\n\n", o->uri,
           o->timeout_s);
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
        printf(" | %ld | %ld | %ld |\n", c->edhoc_bytes, c->coap_bytes, c->ms);
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

static void json_support(FILE *f, const struct opts *o, const struct support *s)
{
    fprintf(f, "\"cells\": %zu, \"methods\": [", s->cells);
    int k2 = 0;
    for (int m = 0; m < 4; m++)
        if (s->method[m])
            fprintf(f, "%s%d", k2++ ? ", " : "", m);
    fprintf(f, "], \"suites\": [");
    for (int k = 0; k < s->n_suites; k++)
        fprintf(f, "%s%d", k ? ", " : "", s->suites[k]);
    fprintf(f, "], \"id_creds\": [");
    k2 = 0;
    for (int k = 0; k < o->n_id_creds; k++)
        if (s->id_cred[k])
            fprintf(f, "%s\"%s\"", k2++ ? ", " : "", o->id_creds[k]);
    fprintf(f, "], \"framings\": [%s%s%s]", s->a2 ? "\"A.2\"" : "",
            s->a2 && s->bare ? ", " : "", s->bare ? "\"bare\"" : "");
}

static void print_json(FILE *f, const struct opts *o, const struct cell *cells, size_t n,
                       const struct summary *s)
{
    static const char *const unsupported_names[] = {"", "method", "suite", "message_4",
                                                    "combined", "framing"};
    fprintf(f, "{\n  \"uri\": ");
    cli_json_string(f, o->uri);
    fprintf(f, ",\n  \"timeout_s\": %ld,\n  \"framing\": \"%s\",\n  \"request\": ", o->timeout_s,
            o->framing == FR_BOTH ? "both" : o->framing == FR_A2 ? "a2" : framing_name(o->framing));
    if (o->request_none)
        fputs("null", f);
    else
        cli_json_string(f, request_name(o));
    fprintf(f, ",\n  \"cells\": [");
    for (size_t i = 0; i < n; i++) {
        const struct cell *c = &cells[i];
        fprintf(f, "%s\n    {\"cell\": \"%s\", \"method\": %d, \"suite\": %d, \"id_cred\": \"%s\", "
                   "\"message_4\": %s, \"framing\": \"%s\", \"combined\": %s, \"outcome\": \"%s\", "
                   "\"failure\": ",
                i ? "," : "", c->name, c->method, c->suite, c->id_cred,
                c->message_4 ? "true" : "false",
                c->framing_used[0] ? c->framing_used : framing_name(c->framing),
                c->combined ? "true" : "false", outcome_names[c->outcome]);
        if (c->outcome == OUT_FAILED)
            fprintf(f, "\"%s\"", failure_names[c->failure]);
        else
            fputs("null", f);
        fputs(", \"unsupported\": ", f);
        if (c->unsupported != NS_NONE)
            fprintf(f, "\"%s\"", unsupported_names[c->unsupported]);
        else
            fputs("null", f);
        fprintf(f, ", \"err_code\": %ld, \"edhoc_bytes\": %ld, \"coap_bytes\": %ld, \"ms\": %ld, "
                   "\"tolerated\": [",
                c->err_code, c->edhoc_bytes, c->coap_bytes, c->ms);
        /* "a, b" back into a list. */
        for (const char *p = c->tolerated; *p;) {
            size_t len = strcspn(p, ",");
            fprintf(f, "%s\"%.*s\"", p == c->tolerated ? "" : ", ", (int)len, p);
            p += len;
            while (*p == ',' || *p == ' ')
                p++;
        }
        /* Free texts last: a reader that looks keys up never meets one
         * inside a text. */
        fputs("], \"edhoc\": ", f);
        if (c->edhoc[0])
            cli_json_string(f, c->edhoc);
        else
            fputs("null", f);
        fputs(", \"oscore\": ", f);
        if (c->oscore[0])
            cli_json_string(f, c->oscore);
        else
            fputs("null", f);
        fprintf(f, ", \"result\": ");
        cli_json_string(f, c->result);
        fprintf(f, ", \"reason\": ");
        cli_json_string(f, c->reason);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"summary\": {\"ok\": %zu, \"failed\": %zu, \"not_supported\": %zu, "
               "\"skipped\": %zu,\n    \"edhoc\": {",
            s->ok, s->failed, s->not_supported, s->skipped);
    json_support(f, o, &s->edhoc);
    fprintf(f, ", \"message_4\": \"%s\", \"combined\": \"%s\",\n      \"not_supported\": "
               "{\"methods\": [",
            support(s->m4_ok, s->m4_ns, s->m4_tried),
            support(s->comb_ok, s->comb_ns, s->comb_tried));
    int k2 = 0;
    for (int m = 0; m < 4; m++)
        if (s->ns_method[m])
            fprintf(f, "%s%d", k2++ ? ", " : "", m);
    fprintf(f, "], \"suites\": [");
    for (int k = 0; k < s->n_ns_suites; k++)
        fprintf(f, "%s%d", k ? ", " : "", s->ns_suites[k]);
    fprintf(f, "], \"framings\": [%s%s%s]}},\n    \"oscore\": {\"tested\": %s, ",
            s->ns_a2 ? "\"A.2\"" : "", s->ns_a2 && s->ns_bare ? ", " : "",
            s->ns_bare ? "\"bare\"" : "", o->request_none ? "false" : "true");
    json_support(f, o, &s->oscore);
    fprintf(f, "}}\n}\n");
}

/* ---- Command line ---- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: edhoc-cli interop URI [OPTIONS]\n"
            "       edhoc-cli interop --report DIR [--json] [--json-out FILE]\n\n"
            "Runs a test matrix against an EDHOC responder (the device) with us as the\n"
            "initiator: methods x cipher suites x ID_CRED types, each with and without\n"
            "message_4, plus the RFC 9668 combined request and the bare framing. Each cell\n"
            "is one `edhoc-cli initiator` run (handshake, then one OSCORE request). Prints a\n"
            "table with how EDHOC and the OSCORE request of every cell ended and the likely\n"
            "causes, then a summary of what the device supports for EDHOC (even when OSCORE\n"
            "fails) and what worked with OSCORE.\n\n"
            "Options:\n"
            "  --methods LIST          methods to try (default 0,1,2,3)\n"
            "  --suites LIST           cipher suites to try (default 0,2)\n"
            "  --id-creds LIST         ID_CRED types to try: kid, kccs, x5t, x5chain (default\n"
            "                          kid,x5t; with --cred: kid,kccs for a CCS, x5t,x5chain\n"
            "                          for a certificate)\n"
            "  --framing a2|bare|auto  the framing of the cells: a2 (RFC 9528 Appendix A.2)\n"
            "                          or bare only; auto: each cell tries A.2, then bare,\n"
            "                          and once the device answered in one, the cells use\n"
            "                          it. Default: A.2 cells, plus the bare framing once\n"
            "  --full                  the combined request and the bare framing (with and\n"
            "                          without message_4) for every cell; by default they run\n"
            "                          once, for the first configuration that worked\n"
            "  --timeout S             bound on each cell (default 5 s; a cell that does not\n"
            "                          finish 2 s after it is a timeout; twice S while\n"
            "                          --framing auto probes)\n"
            "  --request 'METHOD PATH [PAYLOAD]'  the OSCORE request of every cell\n"
            "                          (default 'GET /.well-known/core'); 'none': EDHOC only,\n"
            "                          for devices without OSCORE resources\n"
            "  --tolerate LIST         deviations of the device the initiator accepts (passed\n"
            "                          to every cell as they are; see `initiator --help`)\n"
            "  --cred FILE --key FILE --trust FILE  our credentials (as for the initiator)\n"
            "  --trace-dir DIR         keep each cell's RFC 9529-style trace in DIR/<cell>.txt\n"
            "                          and every datagram of the cell in DIR/<cell>.pcap\n"
            "                          (secrets: DIR is made 0700, its files 0600; an existing\n"
            "                          DIR that group or others can access is refused)\n"
            "  --json                  machine-readable output (the same cells and summary)\n"
            "  --json-out FILE         also write that JSON to FILE (with the table on stdout)\n"
            "  -h, --help              this text\n\n"
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
            "                 --request none\n"
            "Exit codes: 0 no cell failed (not supported and skipped cells do not count);\n"
            "1 some cell failed; 2 bad command line (also when the initiator refuses the\n"
            "options every cell shares); 3 the trace directory or the --json-out file cannot\n"
            "be used, or no cell could be run with our credentials; 10 internal error.\n\n"
            "--report DIR: the other direction, the devices as initiators: the matrix of what\n"
            "the devices that connected to `edhoc-cli responder --interop-log DIR` tried and\n"
            "how each attempt ended (see `edhoc-cli interop --report DIR --help`).\n");
}

static bool parse_list(const char *name, const char *v, int *out, int *n, int lo, int hi)
{
    int k = cli_parse_int_list(v, out, MAX_LIST);
    if (k <= 0) {
        fprintf(stderr, "edhoc-cli interop: %s: expected a comma-separated list\n", name);
        return false;
    }
    for (int i = 0; i < k; i++) {
        if (out[i] < lo || out[i] > hi) {
            fprintf(stderr, "edhoc-cli interop: %s: %d is out of range %d..%d\n", name, out[i],
                    lo, hi);
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
        static const char *const types[] = {"kid", "kccs", "x5t", "x5chain"};
        bool known = false;
        for (size_t i = 0; i < 4; i++)
            if (len == strlen(types[i]) && !strncmp(p, types[i], len))
                known = true;
        if (!known || o->n_id_creds >= MAX_LIST) {
            fprintf(stderr, "edhoc-cli interop: --id-creds: expected kid, kccs, x5t or x5chain\n");
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
    bool cert = false;
    if (o->cred_path) {
        size_t len = 0;
        uint8_t *d = cli_read_file(o->cred_path, &len);
        cert = d && ((len > 10 && !memcmp(d, "-----BEGIN", 10)) || (len > 0 && d[0] == 0x30));
        free(d);
        parse_id_creds(cert ? "x5t,x5chain" : "kid,kccs", o);
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

static void progress(const struct opts *o, const struct cell *c)
{
    if (!o->json)
        fprintf(stderr, "edhoc-cli interop: %s: %s\n", c->name, c->result);
}

int cmd_interop(int argc, char **argv)
{
    struct opts o;
    memset(&o, 0, sizeof o);
    o.timeout_s = 5;
    o.framing = FR_BOTH;
    static const int def_methods[] = {0, 1, 2, 3}, def_suites[] = {0, 2};
    bool have_methods = false, have_suites = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (!strcmp(arg, "--full")) {
            o.full = true;
            continue;
        }
        if (!strcmp(arg, "--json")) {
            o.json = true;
            continue;
        }
        if (!strcmp(arg, "--report"))
            return interop_report_main(argc, argv);
        if (strncmp(arg, "--", 2) != 0) {
            if (o.uri) {
                fprintf(stderr, "edhoc-cli interop: unexpected argument '%s'\n", arg);
                return CLI_EXIT_USAGE;
            }
            o.uri = arg;
            continue;
        }
        static const char *const with_value[] = {
            "--methods", "--suites", "--id-creds", "--timeout",   "--request", "--cred",
            "--key",     "--trust",  "--trace-dir", "--json-out", "--framing", "--tolerate"};
        bool known = false;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            known |= !strcmp(arg, with_value[k]);
        if (!known) {
            fprintf(stderr, "edhoc-cli interop: unknown option '%s' (see --help)\n", arg);
            return CLI_EXIT_USAGE;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "edhoc-cli interop: %s needs a value\n", arg);
            return CLI_EXIT_USAGE;
        }
        const char *v = argv[++i];
        if (!strcmp(arg, "--methods")) {
            if (!parse_list(arg, v, o.methods, &o.n_methods, 0, 3))
                return CLI_EXIT_USAGE;
            have_methods = true;
        } else if (!strcmp(arg, "--suites")) {
            if (!parse_list(arg, v, o.suites, &o.n_suites, 0, 31))
                return CLI_EXIT_USAGE;
            have_suites = true;
        } else if (!strcmp(arg, "--id-creds")) {
            if (!parse_id_creds(v, &o))
                return CLI_EXIT_USAGE;
        } else if (!strcmp(arg, "--timeout")) {
            char *end;
            o.timeout_s = strtol(v, &end, 10);
            if (*end || end == v || o.timeout_s < 1 || o.timeout_s > 600) {
                fprintf(stderr, "edhoc-cli interop: --timeout: 1..600 seconds\n");
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(arg, "--framing")) {
            if (!strcasecmp(v, "a2") || !strcasecmp(v, "a.2"))
                o.framing = FR_A2;
            else if (!strcasecmp(v, "bare"))
                o.framing = FR_BARE;
            else if (!strcasecmp(v, "auto"))
                o.framing = FR_AUTO;
            else {
                fprintf(stderr, "edhoc-cli interop: --framing: a2, bare or auto\n");
                return CLI_EXIT_USAGE;
            }
        } else if (!strcmp(arg, "--trace-dir")) {
            o.trace_dir = v;
        } else if (!strcmp(arg, "--json-out")) {
            o.json_out = v;
        } else {
            /* The initiator's own options (--tolerate among them): passed
             * to every cell as they are, checked by the initiator. */
            if (o.n_pass + 2 > MAX_PASS) {
                fprintf(stderr, "edhoc-cli interop: too many options\n");
                return CLI_EXIT_USAGE;
            }
            o.pass[o.n_pass++] = arg;
            o.pass[o.n_pass++] = v;
            if (!strcmp(arg, "--cred"))
                o.cred_path = v;
            if (!strcmp(arg, "--request")) {
                if (!strcmp(v, "none"))
                    o.request_none = true;
                else if (!o.request)
                    o.request = v;
            }
        }
    }
    if (!o.uri) {
        fprintf(stderr, "edhoc-cli interop: which device? (edhoc-cli interop URI, see --help)\n");
        return CLI_EXIT_USAGE;
    }
    if (strncmp(o.uri, "coap://", 7) != 0) {
        fprintf(stderr, "edhoc-cli interop: expected a coap:// URI\n");
        return CLI_EXIT_USAGE;
    }
    if (o.request_none && o.request) {
        fprintf(stderr, "edhoc-cli interop: --request none cannot go with other requests\n");
        return CLI_EXIT_USAGE;
    }
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
    size_t cap = (size_t)o.n_methods * (size_t)o.n_suites * (size_t)o.n_id_creds * per + 2;
    if (cap > MAX_CELLS) {
        fprintf(stderr, "edhoc-cli interop: at most %d cells; narrow the matrix\n", MAX_CELLS);
        return CLI_EXIT_USAGE;
    }
    struct cell *cells = calloc(cap, sizeof *cells);
    if (!cells)
        return CLI_EXIT_INTERNAL;
    struct matrix_state st;
    memset(&st, 0, sizeof st);
    for (int i = 0; i < 32; i++)
        st.suites_r_cache[i] = -2;
    st.auto_known = FR_AUTO;
    size_t n = 0;
    for (int m = 0; m < o.n_methods; m++)
        for (int s = 0; s < o.n_suites; s++)
            for (int k = 0; k < o.n_id_creds; k++)
                for (size_t v = 0; v < per; v++) {
                    struct cell *c = &cells[n++];
                    c->method = o.methods[m];
                    c->suite = o.suites[s];
                    snprintf(c->id_cred, sizeof c->id_cred, "%s", o.id_creds[k]);
                    c->message_4 = variants[v].message_4;
                    c->combined = variants[v].combined;
                    c->framing = variants[v].framing;
                    if (c->combined && o.framing == FR_AUTO && st.auto_known == FR_BARE)
                        skip_cell(c, "the RFC 9668 combined request goes with the A.2 framing, "
                                     "which the device does not take (--framing auto found "
                                     "bare)");
                    else
                        run_cell(&o, &st, c);
                    if (fatal_cell(&st, c)) {
                        fprintf(stderr, "edhoc-cli interop: %s\n", c->setup_text);
                        int rc = c->setup_exit;
                        free(cells);
                        return rc;
                    }
                    progress(&o, c);
                }
    if (!o.full) {
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
        for (int v = 0; v < 2; v++) {
            if ((v == 0 && !want_combined) || (v == 1 && !want_bare))
                continue;
            struct cell *c = &cells[n++];
            memset(c, 0, sizeof *c);
            c->method = b.method;
            c->suite = b.suite;
            snprintf(c->id_cred, sizeof c->id_cred, "%s", b.id_cred);
            c->combined = v == 0;
            c->framing = v == 0 ? FR_A2 : FR_BARE;
            if (c->combined && o.framing == FR_AUTO && st.auto_known == FR_BARE)
                skip_cell(c, "the RFC 9668 combined request goes with the A.2 framing, which the "
                             "device does not take (--framing auto found bare)");
            else
                run_cell(&o, &st, c);
            progress(&o, c);
        }
    }
    settle_framing(cells, n);
    if (!st.any_ran) {
        /* Every cell was refused by the initiator before it sent anything:
         * nothing of the device was tested. */
        fprintf(stderr, "edhoc-cli interop: no cell could be run with these credentials and "
                        "options (see the reasons)\n");
    }
    struct summary sum;
    summarize(&o, cells, n, &sum);
    if (o.json)
        print_json(stdout, &o, cells, n, &sum);
    else
        print_table(&o, cells, n, &sum);
    int rc = sum.failed ? CLI_EXIT_FAILURE : st.any_ran ? CLI_EXIT_OK : CLI_EXIT_INPUT;
    if (o.json_out) {
        FILE *f = fopen(o.json_out, "w");
        if (f) {
            print_json(f, &o, cells, n, &sum);
            if (fclose(f))
                f = NULL;
        }
        if (!f) {
            fprintf(stderr, "edhoc-cli interop: --json-out %s: %s\n", o.json_out, strerror(errno));
            rc = CLI_EXIT_INPUT;
        }
    }
    free(cells);
    return rc;
}
