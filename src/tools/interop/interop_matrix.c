/*
 * The interop matrix against a device (interop_matrix.h): the cells the
 * options make, each run as one initiator in a child process, its trace
 * files, and the order they run in.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "interop_internal.h"

const char *const interop_outcome_names[] = {"ok", "failed", "not supported", "skipped"};

const char *const interop_failure_names[] = {"",        "peer-error", "verify",
                                             "timeout", "oscore",     "failed"};

const char *const interop_unsupported_names[] = {"",          "method",   "suite",
                                                 "message_4", "combined", "framing"};

/* A problem of the run that does not stop it, told to the caller. */
static void warn(const struct interop_matrix_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(const struct interop_matrix_opts *o, const char *fmt, ...)
{
    if (!o->warn)
        return;
    char text[4400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    o->warn(o->user, text);
}

const char *interop_framing_name(enum interop_framing f)
{
    return f == INTEROP_FR_BARE ? "bare" : f == INTEROP_FR_AUTO ? "auto" : "A.2";
}

static void cell_name(struct interop_cell *c)
{
    snprintf(c->name, sizeof c->name, "m%d-s%d-%s%s%s%s", c->method, c->suite, c->id_cred,
             c->message_4 ? "-m4" : "", c->combined ? "-combined" : "",
             c->framing == INTEROP_FR_BARE ? "-bare" : "");
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

static void write_trace(const struct interop_matrix_opts *o, const struct interop_cell *c,
                        const struct child_result *r, char *const argv[])
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.txt", o->trace_dir, c->name);
    int fd = create_trace_file(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        warn(o, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    fprintf(f, "cell %s\ncommand:", c->name);
    for (int i = 1; argv[i]; i++)
        fprintf(f, " %s", argv[i]);
    fprintf(f, "\noutcome: %s\nEDHOC: %s\nOSCORE: %s\nresult: %s\n",
            interop_outcome_names[c->outcome], c->edhoc[0] ? c->edhoc : "-",
            c->oscore[0] ? c->oscore : "-", c->result);
    if (c->reason[0])
        fprintf(f, "reason: %s\n", c->reason);
    fprintf(f, "\nTrace (RFC 9529 names, initiator side):\n");
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(r->report, "trace"), i, v)
    {
        const char *name = member_str(v, "name"), *hex = member_str(v, "hex");
        size_t len = hex ? strlen(hex) : 0;
        fprintf(f, "  %s (%zu bytes) %s\n", name ? name : "?", len / 2, hex ? hex : "");
    }
    fprintf(f, "\nMessages:\n");
    json_array_foreach(json_object_get(r->report, "messages"), i, v)
    {
        const char *name = member_str(v, "name"), *from = member_str(v, "from");
        long edhoc = -1, coap = -1, dgrams = 0;
        char e[24] = "-", cb[24] = "-";
        if (member_long(v, "edhoc_bytes", &edhoc))
            snprintf(e, sizeof e, "%ld", edhoc);
        if (member_long(v, "coap_bytes", &coap))
            snprintf(cb, sizeof cb, "%ld", coap);
        member_long(v, "datagrams", &dgrams);
        fprintf(f, "  %-32s %s EDHOC %s, CoAP/UDP %s bytes, %ld datagram%s\n", name ? name : "?",
                from && !strcmp(from, "initiator") ? "I->R" : "R->I", e, cb, dgrams,
                dgrams == 1 ? "" : "s");
    }
    fprintf(f, "\nDatagrams: %s.pcap (tshark -r FILE -d udp.port==PORT,coap)\n", c->name);
    fclose(f);
}

/* A cell that is not run: why is in the reason. */
static void skip_cell(struct interop_cell *c, const char *why)
{
    cell_name(c);
    c->outcome = INTEROP_SKIPPED;
    c->failure = INTEROP_FAIL_NONE;
    c->err_code = -1;
    c->edhoc_bytes = c->coap_bytes = -1;
    snprintf(c->reason, sizeof c->reason, "%s", why);
    compose_result(c);
}

static void run_cell(const struct interop_matrix_opts *o, struct matrix_state *st,
                     struct interop_cell *c)
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
    enum interop_framing f = c->framing;
    if (f == INTEROP_FR_AUTO && st->auto_known != INTEROP_FR_AUTO)
        f = st->auto_known;
    snprintf(c->framing_used, sizeof c->framing_used, "%s",
             f == INTEROP_FR_AUTO ? "" : interop_framing_name(f));
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
    if (f == INTEROP_FR_BARE || f == INTEROP_FR_AUTO) {
        a.v[a.n++] = "--framing";
        a.v[a.n++] = f == INTEROP_FR_BARE ? "bare" : "auto";
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
            warn(o, "%s: %s", pcap_path, strerror(errno));
            a.n -= 2;
        } else {
            close(pfd);
        }
    }
    struct child_result r;
    initiator_argv_run(o, &a, f == INTEROP_FR_AUTO, &r);
    c->edhoc_bytes = c->coap_bytes = -1;
    if (!r.interrupted)
        diagnose(o, st, c, &r);
    if (r.interrupted || interop_stopped(o)) {
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
            set_text(c->reason, sizeof c->reason,
                     "tolerated deviation of the device: %s "
                     "(--tolerate)",
                     c->tolerated);
    }
    compose_result(c);
    if (!c->setup_exit)
        st->any_ran = true;
    if (c->framing == INTEROP_FR_AUTO && st->auto_known == INTEROP_FR_AUTO && c->framing_used[0] &&
        (c->edhoc_ok ||
         (c->err_code >= 0 && !c->a2_unparsed && c->unsupported != INTEROP_NS_FRAMING)))
        st->auto_known = strcmp(c->framing_used, "bare") ? INTEROP_FR_A2 : INTEROP_FR_BARE;
    if (o->trace_dir) {
        write_trace(o, c, &r, a.v);
        /* No capture written (the initiator stopped before it): no file. */
        struct stat st;
        if (lstat(pcap_path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
            unlink(pcap_path);
    }
    child_result_free(&r);
}

/* A setup error of the initiator that names something of this cell (its
 * method, suite or ID_CRED type) rather than what every cell shares (the
 * URI, a file, a --request). */
static bool setup_error_of_cell(const struct interop_cell *c)
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
static bool fatal_cell(const struct matrix_state *st, const struct interop_cell *c)
{
    return c->setup_exit && !st->any_ran && !setup_error_of_cell(c);
}

size_t interop_matrix_planned(const struct interop_matrix_opts *o)
{
    size_t per = !o->full                        ? 2
                 : o->framing == INTEROP_FR_BOTH ? 5
                 : o->framing == INTEROP_FR_BARE ? 2
                                                 : 3;
    size_t grid = (size_t)o->n_methods * (size_t)o->n_suites * (size_t)o->n_id_creds * per;
    /* The cells after the grid: the combined request and the bare framing
     * for one configuration (not with --full). */
    size_t extra =
        o->full ? 0
                : (size_t)(o->framing != INTEROP_FR_BARE) +
                      (size_t)(o->framing == INTEROP_FR_BOTH || o->framing == INTEROP_FR_AUTO);
    return grid + extra;
}

/* The variants of each configuration: message_4, combined, framing. */
struct variant {
    bool message_4, combined;
    enum interop_framing framing;
};

static const struct variant full_both[] = {{false, false, INTEROP_FR_A2},
                                           {true, false, INTEROP_FR_A2},
                                           {false, true, INTEROP_FR_A2},
                                           {false, false, INTEROP_FR_BARE},
                                           {true, false, INTEROP_FR_BARE}};
static const struct variant full_a2[] = {
    {false, false, INTEROP_FR_A2}, {true, false, INTEROP_FR_A2}, {false, true, INTEROP_FR_A2}};
static const struct variant full_auto[] = {
    {false, false, INTEROP_FR_AUTO}, {true, false, INTEROP_FR_AUTO}, {false, true, INTEROP_FR_A2}};

static void progress(const struct interop_matrix_opts *o, const struct interop_matrix *m,
                     const struct interop_cell *c, size_t failed)
{
    if (o->progress)
        o->progress(o->user, m->n + 1, m->planned, c->name, failed);
}

/* Run c, or skip it when --framing auto found that the device does not
 * take the framing the combined request needs. */
static void run_or_skip(const struct interop_matrix_opts *o, struct matrix_state *st,
                        struct interop_cell *c)
{
    if (c->combined && o->framing == INTEROP_FR_AUTO && st->auto_known == INTEROP_FR_BARE)
        skip_cell(c, "the RFC 9668 combined request goes with the A.2 framing, which the "
                     "device does not take (--framing auto found bare)");
    else
        run_cell(o, st, c);
}

/* The combined request and the bare framing for one configuration the
 * device accepts, so their failures mean what they say: the first cell
 * that was ok, else the first whose handshake completed, else one our
 * credentials can run. */
static void run_extra_cells(const struct interop_matrix_opts *o, struct matrix_state *st,
                            struct interop_matrix *m, size_t *failed)
{
    struct interop_cell *cells = m->cells;
    size_t n = m->n;
    const struct interop_cell *base = &cells[0];
    for (size_t i = 0; i < n; i++) {
        if (cells[i].outcome == INTEROP_OK && !cells[i].message_4) {
            base = &cells[i];
            break;
        }
    }
    if (base->outcome != INTEROP_OK)
        for (size_t i = 0; i < n; i++) {
            if (cells[i].edhoc_ok && !cells[i].message_4) {
                base = &cells[i];
                break;
            }
        }
    if (base->outcome == INTEROP_SKIPPED)
        for (size_t i = 0; i < n; i++) {
            if (cells[i].outcome != INTEROP_SKIPPED) {
                base = &cells[i];
                break;
            }
        }
    struct interop_cell b = *base;
    /* The combined request needs A.2; the extra bare cell is what the
     * default adds, and what auto adds once A.2 is known to work (bare
     * found by auto is covered by the cells already). */
    bool want_combined = o->framing != INTEROP_FR_BARE;
    bool want_bare = o->framing == INTEROP_FR_BOTH ||
                     (o->framing == INTEROP_FR_AUTO && st->auto_known != INTEROP_FR_BARE);
    if (o->framing == INTEROP_FR_AUTO && !want_bare)
        m->planned--;
    for (int v = 0; v < 2 && !interop_stopped(o); v++) {
        if ((v == 0 && !want_combined) || (v == 1 && !want_bare))
            continue;
        struct interop_cell *c = &cells[m->n];
        memset(c, 0, sizeof *c);
        c->method = b.method;
        c->suite = b.suite;
        snprintf(c->id_cred, sizeof c->id_cred, "%s", b.id_cred);
        c->combined = v == 0;
        c->framing = v == 0 ? INTEROP_FR_A2 : INTEROP_FR_BARE;
        cell_name(c);
        progress(o, m, c, *failed);
        run_or_skip(o, st, c);
        if (c->interrupted)
            break;
        m->n++;
        *failed += c->outcome == INTEROP_FAILED;
    }
}

int interop_matrix_run(const struct interop_matrix_opts *o, struct interop_matrix *m)
{
    memset(m, 0, sizeof *m);
    const struct variant *variants;
    struct variant plain[2] = {{false, false, INTEROP_FR_A2}, {true, false, INTEROP_FR_A2}};
    size_t per = 2;
    if (!o->full) {
        variants = plain;
        plain[0].framing = plain[1].framing =
            o->framing == INTEROP_FR_BOTH ? INTEROP_FR_A2 : o->framing;
    } else if (o->framing == INTEROP_FR_BOTH) {
        variants = full_both;
        per = 5;
    } else if (o->framing == INTEROP_FR_A2) {
        variants = full_a2;
        per = 3;
    } else if (o->framing == INTEROP_FR_AUTO) {
        variants = full_auto;
        per = 3;
    } else {
        variants = plain;
        plain[0].framing = plain[1].framing = INTEROP_FR_BARE;
    }
    size_t grid = (size_t)o->n_methods * (size_t)o->n_suites * (size_t)o->n_id_creds * per;
    m->planned = interop_matrix_planned(o);
    m->cells = calloc(m->planned + 2, sizeof *m->cells);
    if (!m->cells)
        return -1;
    struct matrix_state st;
    memset(&st, 0, sizeof st);
    for (int i = 0; i < 32; i++)
        st.suites_r_cache[i] = -2;
    st.auto_known = INTEROP_FR_AUTO;
    size_t failed = 0;
    for (size_t g = 0; g < grid && !interop_stopped(o); g++) {
        size_t v = g % per, k = g / per % (size_t)o->n_id_creds;
        size_t s = g / per / (size_t)o->n_id_creds % (size_t)o->n_suites;
        size_t mi = g / per / (size_t)o->n_id_creds / (size_t)o->n_suites;
        struct interop_cell *c = &m->cells[m->n];
        c->method = o->methods[mi];
        c->suite = o->suites[s];
        snprintf(c->id_cred, sizeof c->id_cred, "%s", o->id_creds[k]);
        c->message_4 = variants[v].message_4;
        c->combined = variants[v].combined;
        c->framing = variants[v].framing;
        cell_name(c);
        progress(o, m, c, failed);
        run_or_skip(o, &st, c);
        if (c->interrupted)
            break;
        m->n++;
        failed += c->outcome == INTEROP_FAILED;
        if (fatal_cell(&st, c)) {
            m->fatal = c;
            return 0;
        }
    }
    if (!o->full && !interop_stopped(o) && m->n > 0)
        run_extra_cells(o, &st, m, &failed);
    m->any_ran = st.any_ran;
    settle_framing(m->cells, m->n);
    summarize(o, m->cells, m->n, &m->summary);
    return 0;
}

void interop_matrix_free(struct interop_matrix *m)
{
    free(m->cells);
    m->cells = NULL;
}
