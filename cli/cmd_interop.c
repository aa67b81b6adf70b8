/*
 * edhoc-cli interop URI: a device test matrix with us as the initiator.
 * Every cell (method x suite x ID_CRED type x message_4, plus the RFC 9668
 * combined request and the bare framing) is one run of `edhoc-cli
 * initiator` in a child process, bounded in time, so a crashed or silent
 * device costs a timeout per cell and never hangs the tool. The child's
 * --json report is read back and every failure is turned into a reason
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

enum outcome {
    OUT_OK,
    OUT_PEER_ERROR,
    OUT_VERIFY,
    OUT_TIMEOUT,
    OUT_OSCORE,
    OUT_FAILED,
    OUT_SKIPPED,
};

static const char *const outcome_names[] = {"ok", "peer-error", "verify", "timeout",
                                            "oscore", "failed", "skipped"};

struct cell {
    int method, suite;
    char id_cred[12];
    bool message_4, combined, bare;
    char name[64];
    enum outcome outcome;
    long err_code; /* the peer's ERR_CODE, -1: none */
    char result[240];  /* the outcome in words */
    char reason[480];  /* the likely causes */
    long edhoc_bytes, coap_bytes;
    long ms;
    int fatal; /* the initiator refused its command line: stop the matrix */
};

struct opts {
    const char *uri;
    int methods[MAX_LIST], suites[MAX_LIST];
    int n_methods, n_suites;
    char id_creds[MAX_LIST][12];
    int n_id_creds;
    long timeout_s;
    bool full, json;
    const char *trace_dir;
    const char *json_out;
    const char *pass[MAX_PASS];
    int n_pass;
    bool have_cred;
    const char *cred_path;
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
    set_text(c->result, sizeof c->result, "our verification failed: %s", step);
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

static const char *peer_error_reason(long code, const char *diag, const struct cell *c,
                                     char *buf, size_t cap)
{
    if (code == 1 && diag && strstr(diag, "message_4") && c->combined) {
        snprintf(buf, cap, "the peer requires message_4, which the RFC 9668 combined request "
                 "cannot carry");
    } else if (code == 1 && c->bare && diag && strstr(diag, "C_R")) {
        snprintf(buf, cap, "the peer does not take the bare framing: it read our bare message_1 "
                 "as a C_R-prefixed message_3 (\"%s\"); use the RFC 9528 A.2 framing with it",
                 diag);
    } else if (code == 1 && !c->bare && diag && strstr(diag, "message_1") &&
               strstr(diag, "malformed")) {
        snprintf(buf, cap, "the peer could not parse our message_1 (\"%s\"): if the bare "
                 "framing works, it does not take the A.2 framing (CBOR true before message_1, "
                 "C_R before message_3)", diag);
    } else if (code == 1 && diag && strstr(diag, "method")) {
        snprintf(buf, cap, "method %d not supported by the peer", c->method);
    } else if (code == 1 && diag && (strstr(diag, "MAC") || strstr(diag, "Signature") ||
                                     strstr(diag, "verif"))) {
        snprintf(buf, cap, "the peer could not verify message_3: check our CRED_I as the peer "
                 "stores it (the exact bytes hashed into TH_3), ID_CRED_I (kid as integer vs "
                 "byte string), EAD_3");
    } else if (code == 1) {
        snprintf(buf, cap, "the peer refused%s%s", diag && *diag ? ": " : "", diag ? diag : "");
    } else if (code == 3) {
        snprintf(buf, cap, "the peer does not know our credential (ID_CRED_I by %s): add our "
                 "credential to its trust, or name it another way (--id-creds)", c->id_cred);
    } else {
        snprintf(buf, cap, "ERR_CODE %ld is not defined by RFC 9528", code);
    }
    return buf;
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

/* Add the pass-through options and run it, bounded by --timeout. */
static void initiator_argv_run(const struct opts *o, struct initiator_argv *a,
                               struct child_result *r)
{
    for (int i = 0; i < o->n_pass; i++)
        a->v[a->n++] = (char *)o->pass[i];
    a->v[a->n] = NULL;
    run_child(a->v, o->timeout_s * 1000 + KILL_GRACE_MS, r);
}

/* The cipher suites the peer offers in SUITES_R: ask the initiator to start
 * with the refused suite and fall back to any other, then see which one it
 * settled on (our most preferred among SUITES_R). Returns -1 if unknown. */
static int probe_suites_r(const struct opts *o, int refused, int method)
{
    static const int known[] = {0, 1, 2, 3, 4, 5, 6, 24, 25};
    char list[64];
    int n = snprintf(list, sizeof list, "%d", refused);
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i] != refused)
            n += snprintf(list + n, sizeof list - (size_t)n, ",%d", known[i]);
    struct initiator_argv a;
    initiator_argv_start(o, method, list, &a);
    struct child_result r;
    initiator_argv_run(o, &a, &r);
    long suite = -1, attempts = 0;
    if (r.out) {
        json_read_long(r.out, NULL, "suite", &suite);
        json_read_long(r.out, NULL, "attempts", &attempts);
    }
    free(r.out);
    return attempts >= 2 && suite >= 0 && suite != refused ? (int)suite : -1;
}

static void diagnose(const struct opts *o, struct cell *c, const struct child_result *r,
                     int *suites_r_cache)
{
    char text[400] = "", diag[200] = "";
    long code = -1;
    if (r->out) {
        const char *e = json_read_field(r->out, NULL, "error");
        if (e) {
            json_read_string(e, NULL, "text", text, sizeof text);
            json_read_string(e, NULL, "diagnostic", diag, sizeof diag);
            json_read_long(e, NULL, "err_code", &code);
        }
        json_read_long(r->out, NULL, "total_edhoc_bytes", &c->edhoc_bytes);
        json_read_long(r->out, NULL, "total_coap_bytes", &c->coap_bytes);
    }
    if (!text[0])
        snprintf(text, sizeof text, "%s", r->err_line);
    c->err_code = -1;
    if (r->killed) {
        c->outcome = OUT_TIMEOUT;
        set_text(c->result, sizeof c->result, "timeout");
        set_text(c->reason, sizeof c->reason,
                 "the initiator did not finish within %ld s: the device is silent or stuck",
                 o->timeout_s + KILL_GRACE_MS / 1000);
        return;
    }
    switch (r->exit_code) {
    case CLI_EXIT_OK: {
        char outcome[16] = "";
        if (r->out)
            json_read_string(r->out, NULL, "outcome", outcome, sizeof outcome);
        if (!strcmp(outcome, "ok")) {
            c->outcome = OUT_OK;
            set_text(c->result, sizeof c->result, "ok");
            c->reason[0] = '\0';
        } else {
            c->outcome = OUT_FAILED;
            set_text(c->result, sizeof c->result, "failed: the initiator's report is unreadable");
        }
        return;
    }
    case CLI_EXIT_PEER_ERROR: {
        c->outcome = OUT_PEER_ERROR;
        bool suite_refused = strstr(text, "cipher suite in common") || code == 2;
        if (suite_refused) {
            c->err_code = 2;
            set_text(c->result, sizeof c->result, "EDHOC error 2 from the peer: %s",
                     diag[0] ? diag : "wrong selected cipher suite");
            /* The initiator's report names the SUITES_R it received; only
             * an initiator that does not probes the peer once more. */
            int suites_r[EDHOC_MAX_SUITES];
            int n_r = r->out ? json_read_int_array(r->out, NULL, "suites_r", suites_r,
                                                   EDHOC_MAX_SUITES)
                             : -1;
            if (n_r > 0) {
                char list[80];
                size_t w = 0;
                for (int i = 0; i < n_r && w < sizeof list; i++)
                    w += (size_t)snprintf(list + w, sizeof list - w, "%s%d", i ? ", " : "",
                                          suites_r[i]);
                set_text(c->reason, sizeof c->reason,
                         "suite %d not supported by the peer: SUITES_R = %s (the suites it "
                         "offers)", c->suite, list);
                return;
            }
            int sr = suites_r_cache[c->suite & 31];
            if (sr == -2)
                sr = suites_r_cache[c->suite & 31] = probe_suites_r(o, c->suite, c->method);
            if (sr >= 0)
                set_text(c->reason, sizeof c->reason,
                         "suite %d not supported by the peer: SUITES_R = %d (our most preferred "
                         "suite among those it offers)", c->suite, sr);
            else
                set_text(c->reason, sizeof c->reason,
                         "suite %d not supported by the peer: SUITES_R names none of the suites "
                         "we have", c->suite);
            return;
        }
        if (code >= 0) {
            c->err_code = code;
            char buf[400];
            set_text(c->result, sizeof c->result, "EDHOC error %ld from the peer%s%s", code,
                     diag[0] ? ": " : "", diag);
            const char *when = strstr(text, "message_3") ? " (after message_3)"
                               : strstr(text, "combined") ? " (after the combined request)"
                                                          : "";
            set_text(c->reason, sizeof c->reason, "%s%s",
                     peer_error_reason(code, diag, c, buf, sizeof buf), when);
            return;
        }
        set_text(c->result, sizeof c->result, "EDHOC error from the peer: %s", text);
        set_text(c->reason, sizeof c->reason, "the peer's error message could not be parsed");
        return;
    }
    case CLI_EXIT_VERIFY:
        c->outcome = OUT_VERIFY;
        diagnose_verify(c, text);
        return;
    case CLI_EXIT_TIMEOUT:
        c->outcome = OUT_TIMEOUT;
        set_text(c->result, sizeof c->result, "timeout");
        if (strstr(text, "message_3") && c->bare)
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
        return;
    case CLI_EXIT_OSCORE:
        c->outcome = OUT_OSCORE;
        set_text(c->result, sizeof c->result, "OSCORE failure: %s", text);
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
        else if (strstr(text, "without OSCORE: 4.02"))
            set_text(c->reason, sizeof c->reason,
                     "the peer answered without OSCORE: it could not decode our OSCORE option "
                     "or COSE object (4.02 Bad Option)");
        else if (strstr(text, "without OSCORE"))
            set_text(c->reason, sizeof c->reason,
                     "the peer answered without OSCORE: it did not find the security context "
                     "(Recipient ID = our C_R%s) or does not protect that resource",
                     c->combined ? "; or it does not support the RFC 9668 combined request" : "");
        else
            set_text(c->reason, sizeof c->reason,
                     "the OSCORE contexts differ: check the peer's EDHOC_Exporter (master "
                     "secret/salt from PRK_out), Sender/Recipient IDs (= C_R/C_I) and the "
                     "suite's AEAD and hash");
        return;
    case CLI_EXIT_USAGE:
    case CLI_EXIT_INPUT:
        if (strstr(text, "cannot name") || strstr(text, "does not fit")) {
            c->outcome = OUT_SKIPPED;
            set_text(c->result, sizeof c->result, "skipped");
            set_text(c->reason, sizeof c->reason, "not possible with our credentials: %s", text);
        } else {
            /* The same command line fails for every cell. */
            c->outcome = OUT_FAILED;
            c->fatal = r->exit_code;
            set_text(c->result, sizeof c->result, "failed: %s", text);
            c->reason[0] = '\0';
        }
        return;
    default:
        c->outcome = OUT_FAILED;
        if (r->exit_code < 0)
            set_text(c->result, sizeof c->result, "failed: the initiator crashed");
        else
            set_text(c->result, sizeof c->result, "failed: %s", text);
        if (strstr(text, "message_4 expected"))
            set_text(c->reason, sizeof c->reason, "the peer does not send message_4");
        else if (strstr(text, "4.04") || strstr(text, "Not Found"))
            set_text(c->reason, sizeof c->reason, "no EDHOC resource at that path");
        else if (strstr(text, "4.15") || strstr(text, "Content-Format"))
            set_text(c->reason, sizeof c->reason,
                     "the peer refused the Content-Format: it expects the other framing");
        else if (c->bare)
            set_text(c->reason, sizeof c->reason,
                     "the peer may not accept the bare framing (messages without the A.2 "
                     "prefixes)");
        else
            set_text(c->reason, sizeof c->reason, "see the trace (--trace-dir)");
        return;
    }
}

/* ---- Cells ---- */

static void cell_name(struct cell *c)
{
    snprintf(c->name, sizeof c->name, "m%d-s%d-%s%s%s%s", c->method, c->suite, c->id_cred,
             c->message_4 ? "-m4" : "", c->combined ? "-combined" : "", c->bare ? "-bare" : "");
}

static void write_trace(const struct opts *o, const struct cell *c, const struct child_result *r,
                        char *const argv[])
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.txt", o->trace_dir, c->name);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "edhoc-cli interop: %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(f, "cell %s\ncommand:", c->name);
    for (int i = 1; argv[i]; i++)
        fprintf(f, " %s", argv[i]);
    fprintf(f, "\noutcome: %s\n", c->result);
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

static void run_cell(const struct opts *o, struct cell *c, int *suites_r_cache)
{
    cell_name(c);
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
    if (c->bare) {
        a.v[a.n++] = "--framing";
        a.v[a.n++] = "bare";
    }
    char pcap_path[4200];
    if (o->trace_dir) {
        a.v[a.n++] = "--trace";
        snprintf(pcap_path, sizeof pcap_path, "%s/%s.pcap", o->trace_dir, c->name);
        a.v[a.n++] = "--pcap";
        a.v[a.n++] = pcap_path;
    }
    struct child_result r;
    initiator_argv_run(o, &a, &r);
    c->edhoc_bytes = c->coap_bytes = 0;
    diagnose(o, c, &r, suites_r_cache);
    c->ms = r.ms;
    if (o->trace_dir)
        write_trace(o, c, &r, a.v);
    free(r.out);
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
    return c->bare ? "bare" : c->combined ? "A.2 combined" : "A.2";
}

struct summary {
    bool method[4], id_cred_seen[MAX_LIST];
    int suites_ok[MAX_LIST];
    int n_suites_ok;
    int m4_ok, m4_tried, comb_ok, comb_tried, bare_ok, a2_ok;
    size_t ok, failed, skipped;
};

static void summarize(const struct opts *o, const struct cell *cells, size_t n, struct summary *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < n; i++) {
        const struct cell *c = &cells[i];
        bool ok = c->outcome == OUT_OK;
        if (c->outcome == OUT_SKIPPED)
            s->skipped++;
        else if (ok)
            s->ok++;
        else
            s->failed++;
        /* A variant counts as refused only where its plain twin worked:
         * otherwise the failure says nothing about the variant. */
        bool twin_ok = false;
        for (size_t j = 0; j < n; j++) {
            const struct cell *t = &cells[j];
            if (t->method == c->method && t->suite == c->suite &&
                !strcmp(t->id_cred, c->id_cred) && !t->message_4 && !t->combined && !t->bare)
                twin_ok = t->outcome == OUT_OK;
        }
        if (c->message_4 && (ok || twin_ok)) {
            s->m4_tried++;
            s->m4_ok += ok;
        }
        if (c->combined && (ok || twin_ok)) {
            s->comb_tried++;
            s->comb_ok += ok;
        }
        if (c->bare)
            s->bare_ok += ok;
        else
            s->a2_ok += ok;
        if (!ok)
            continue;
        if (c->method >= 0 && c->method < 4)
            s->method[c->method] = true;
        for (int k = 0; k < o->n_id_creds; k++)
            if (!strcmp(o->id_creds[k], c->id_cred))
                s->id_cred_seen[k] = true;
        bool have = false;
        for (int k = 0; k < s->n_suites_ok; k++)
            have |= s->suites_ok[k] == c->suite;
        if (!have && s->n_suites_ok < MAX_LIST)
            s->suites_ok[s->n_suites_ok++] = c->suite;
    }
}

static const char *support(int ok, int tried)
{
    return tried == 0 ? "not tested" : ok ? "yes" : "no";
}

static void print_table(const struct opts *o, const struct cell *cells, size_t n,
                        const struct summary *s)
{
    printf("EDHOC interop matrix against %s (each cell bounded by %ld s)\n\n", o->uri,
           o->timeout_s);
    printf("| # | method | suite | ID_CRED | message_4 | framing | outcome | reason | EDHOC bytes "
           "| CoAP bytes | ms |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        const struct cell *c = &cells[i];
        printf("| %zu | %d | %d | %s | %s | %s | ", i + 1, c->method, c->suite, c->id_cred,
               c->message_4 ? "yes" : "no", variant_name(c));
        md_cell(stdout, c->result);
        printf(" | ");
        md_cell(stdout, c->reason[0] ? c->reason : "-");
        printf(" | %ld | %ld | %ld |\n", c->edhoc_bytes, c->coap_bytes, c->ms);
    }
    printf("\nSummary: %zu ok, %zu failed, %zu skipped of %zu cells\n", s->ok, s->failed,
           s->skipped, n);
    printf("The device supports:\n  methods:");
    int any = 0;
    for (int m = 0; m < 4; m++)
        if (s->method[m])
            any = printf(" %d", m);
    printf("%s\n  suites:", any ? "" : " none");
    for (int k = 0; k < s->n_suites_ok; k++)
        printf(" %d", s->suites_ok[k]);
    printf("%s\n  ID_CRED types:", s->n_suites_ok ? "" : " none");
    any = 0;
    for (int k = 0; k < o->n_id_creds; k++)
        if (s->id_cred_seen[k])
            any = printf(" %s", o->id_creds[k]);
    printf("%s\n  message_4: %s\n  combined request (RFC 9668): %s\n  framings:%s%s%s\n",
           any ? "" : " none", support(s->m4_ok, s->m4_tried), support(s->comb_ok, s->comb_tried),
           s->a2_ok ? " A.2" : "", s->bare_ok ? " bare" : "",
           s->a2_ok || s->bare_ok ? "" : " none");
    if (o->trace_dir)
        printf("Traces: %s/<cell>.txt, datagrams: %s/<cell>.pcap\n", o->trace_dir, o->trace_dir);
}

static void print_json(FILE *f, const struct opts *o, const struct cell *cells, size_t n,
                       const struct summary *s)
{
    fprintf(f, "{\n  \"uri\": ");
    cli_json_string(f, o->uri);
    fprintf(f, ",\n  \"timeout_s\": %ld,\n  \"cells\": [", o->timeout_s);
    for (size_t i = 0; i < n; i++) {
        const struct cell *c = &cells[i];
        fprintf(f, "%s\n    {\"cell\": \"%s\", \"method\": %d, \"suite\": %d, \"id_cred\": \"%s\", "
                   "\"message_4\": %s, \"framing\": \"%s\", \"combined\": %s, \"outcome\": \"%s\", "
                   "\"err_code\": %ld, \"result\": ",
                i ? "," : "", c->name, c->method, c->suite, c->id_cred,
                c->message_4 ? "true" : "false", c->bare ? "bare" : "A.2",
                c->combined ? "true" : "false", outcome_names[c->outcome], c->err_code);
        cli_json_string(f, c->result);
        fprintf(f, ", \"reason\": ");
        cli_json_string(f, c->reason);
        fprintf(f, ", \"edhoc_bytes\": %ld, \"coap_bytes\": %ld, \"ms\": %ld}", c->edhoc_bytes,
                c->coap_bytes, c->ms);
    }
    fprintf(f, "\n  ],\n  \"summary\": {\"ok\": %zu, \"failed\": %zu, \"skipped\": %zu, "
               "\"methods\": [", s->ok, s->failed, s->skipped);
    int k2 = 0;
    for (int m = 0; m < 4; m++)
        if (s->method[m])
            fprintf(f, "%s%d", k2++ ? ", " : "", m);
    fprintf(f, "], \"suites\": [");
    for (int k = 0; k < s->n_suites_ok; k++)
        fprintf(f, "%s%d", k ? ", " : "", s->suites_ok[k]);
    fprintf(f, "], \"id_creds\": [");
    k2 = 0;
    for (int k = 0; k < o->n_id_creds; k++)
        if (s->id_cred_seen[k])
            fprintf(f, "%s\"%s\"", k2++ ? ", " : "", o->id_creds[k]);
    fprintf(f, "], \"message_4\": \"%s\", \"combined\": \"%s\", \"framings\": [%s%s%s]}\n}\n",
            support(s->m4_ok, s->m4_tried), support(s->comb_ok, s->comb_tried),
            s->a2_ok ? "\"A.2\"" : "", s->a2_ok && s->bare_ok ? ", " : "",
            s->bare_ok ? "\"bare\"" : "");
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
            "table with the outcome and the likely causes of every failure, then a summary\n"
            "of what the device supports.\n\n"
            "Options:\n"
            "  --methods LIST          methods to try (default 0,1,2,3)\n"
            "  --suites LIST           cipher suites to try (default 0,2)\n"
            "  --id-creds LIST         ID_CRED types to try: kid, kccs, x5t, x5chain (default\n"
            "                          kid,x5t; with --cred: kid,kccs for a CCS, x5t,x5chain\n"
            "                          for a certificate)\n"
            "  --full                  the combined request and the bare framing (with and\n"
            "                          without message_4) for every cell; by default they run\n"
            "                          once, for the first configuration that worked\n"
            "  --timeout S             bound on each cell (default 5 s; a cell that does not\n"
            "                          finish 2 s after it is a timeout)\n"
            "  --request 'METHOD PATH [PAYLOAD]'  the OSCORE request of every cell\n"
            "                          (default 'GET /.well-known/core')\n"
            "  --cred FILE --key FILE --trust FILE  our credentials (as for the initiator)\n"
            "  --trace-dir DIR         keep each cell's RFC 9529-style trace in DIR/<cell>.txt\n"
            "                          and every datagram of the cell in DIR/<cell>.pcap\n"
            "  --json                  machine-readable output (the same cells and summary)\n"
            "  --json-out FILE         also write that JSON to FILE (with the table on stdout)\n"
            "  -h, --help              this text\n\n"
            "Outcomes: ok; EDHOC error N from the peer; our verification failed; timeout;\n"
            "OSCORE failure (also an OSCORE request answered without OSCORE, whatever its\n"
            "code); failed (anything else); skipped (not possible with our credentials).\n"
            "Exit codes: 0 every cell ok or skipped; 1 some cell failed; 2 bad command line;\n"
            "3 the trace directory or the --json-out file cannot be used; 10 internal error.\n\n"
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

int cmd_interop(int argc, char **argv)
{
    struct opts o;
    memset(&o, 0, sizeof o);
    o.timeout_s = 5;
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
        static const char *const with_value[] = {"--methods", "--suites", "--id-creds",
                                                 "--timeout", "--request", "--cred", "--key",
                                                 "--trust", "--trace-dir", "--json-out"};
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
        } else if (!strcmp(arg, "--trace-dir")) {
            o.trace_dir = v;
        } else if (!strcmp(arg, "--json-out")) {
            o.json_out = v;
        } else {
            if (o.n_pass + 2 > MAX_PASS) {
                fprintf(stderr, "edhoc-cli interop: too many options\n");
                return CLI_EXIT_USAGE;
            }
            o.pass[o.n_pass++] = arg;
            o.pass[o.n_pass++] = v;
            if (!strcmp(arg, "--cred"))
                o.cred_path = v;
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
    if (o.trace_dir && mkdir(o.trace_dir, 0755) && errno != EEXIST) {
        fprintf(stderr, "edhoc-cli interop: --trace-dir %s: %s\n", o.trace_dir, strerror(errno));
        return CLI_EXIT_INPUT;
    }

    size_t per = o.full ? 5 : 2;
    size_t cap = (size_t)o.n_methods * (size_t)o.n_suites * (size_t)o.n_id_creds * per + 2;
    if (cap > MAX_CELLS) {
        fprintf(stderr, "edhoc-cli interop: at most %d cells; narrow the matrix\n", MAX_CELLS);
        return CLI_EXIT_USAGE;
    }
    struct cell *cells = calloc(cap, sizeof *cells);
    if (!cells)
        return CLI_EXIT_INTERNAL;
    int suites_r_cache[32];
    for (int i = 0; i < 32; i++)
        suites_r_cache[i] = -2;
    /* Variants: message_4, combined, bare. */
    static const bool variants[5][3] = {
        {false, false, false}, {true, false, false}, {false, true, false},
        {false, false, true},  {true, false, true},
    };
    size_t n = 0;
    for (int m = 0; m < o.n_methods; m++)
        for (int s = 0; s < o.n_suites; s++)
            for (int k = 0; k < o.n_id_creds; k++)
                for (size_t v = 0; v < per; v++) {
                    struct cell *c = &cells[n++];
                    c->method = o.methods[m];
                    c->suite = o.suites[s];
                    snprintf(c->id_cred, sizeof c->id_cred, "%s", o.id_creds[k]);
                    c->message_4 = variants[v][0];
                    c->combined = variants[v][1];
                    c->bare = variants[v][2];
                    run_cell(&o, c, suites_r_cache);
                    if (c->fatal) {
                        fprintf(stderr, "edhoc-cli interop: %s\n", c->result + 8);
                        int rc = c->fatal;
                        free(cells);
                        return rc;
                    }
                    if (!o.json)
                        fprintf(stderr, "edhoc-cli interop: %s: %s\n", c->name, c->result);
                }
    if (!o.full) {
        /* The combined request and the bare framing for one configuration
         * the device accepts, so their failures mean what they say. */
        const struct cell *base = &cells[0];
        for (size_t i = 0; i < n; i++) {
            if (cells[i].outcome == OUT_OK && !cells[i].message_4) {
                base = &cells[i];
                break;
            }
        }
        struct cell b = *base;
        for (int v = 2; v <= 3; v++) {
            struct cell *c = &cells[n++];
            memset(c, 0, sizeof *c);
            c->method = b.method;
            c->suite = b.suite;
            snprintf(c->id_cred, sizeof c->id_cred, "%s", b.id_cred);
            c->combined = variants[v][1];
            c->bare = variants[v][2];
            run_cell(&o, c, suites_r_cache);
            if (!o.json)
                fprintf(stderr, "edhoc-cli interop: %s: %s\n", c->name, c->result);
        }
    }
    struct summary sum;
    summarize(&o, cells, n, &sum);
    if (o.json)
        print_json(stdout, &o, cells, n, &sum);
    else
        print_table(&o, cells, n, &sum);
    int rc = sum.failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
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
