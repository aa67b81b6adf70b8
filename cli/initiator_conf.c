/*
 * initiator --export-oscore-conf: the initiator's side of the derived
 * OSCORE context as a libcoap conf file for other tools, and the sequence
 * numbers the run used recorded where a follower finds them
 * (src/client/oscore_seq.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edhoc/oscore.h"
#include "initiator_output.h"
#include "oscore_seq.h"

/* A path we may (re)place: absent, or a regular file. A symbolic link is
 * refused rather than followed: the secret must land where the name says,
 * not wherever a link points. Returns 0 or -1 with why. */
static int check_out_path(const char *path, char *why, size_t cap)
{
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            snprintf(why, cap, "%s is a symbolic link: refusing to write through it", path);
            return -1;
        }
        if (!S_ISREG(st.st_mode)) {
            snprintf(why, cap, "%s exists and is not a regular file", path);
            return -1;
        }
    } else if (errno != ENOENT) {
        snprintf(why, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int cli_initiator_export_prepare(struct initiator *c, char *why, size_t cap)
{
    if (snprintf(c->seq_file, sizeof c->seq_file, "%s.seq", c->export_conf) >=
        (int)sizeof c->seq_file) {
        snprintf(why, cap, "file name too long");
        return -1;
    }
    if (check_out_path(c->export_conf, why, cap) || check_out_path(c->seq_file, why, cap))
        return -1;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", c->export_conf);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir ? 1 : 0] = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    if (access(dir, W_OK | X_OK)) {
        snprintf(why, cap, "directory %.300s: %s", dir, strerror(errno));
        return -1;
    }
    char sdwhy[300];
    if (cli_state_dir(c->state_dir_arg, c->state_dir, sizeof c->state_dir, sdwhy, sizeof sdwhy) <
        0) {
        snprintf(why, cap, "%s", sdwhy);
        return -1;
    }
    return 0;
}

/* Write text to path with mode 0600, whole or not at all: a new file
 * (O_EXCL, never an existing one or a link planted under the temporary
 * name), fsync, then rename over path (a rename replaces a link planted
 * at path meanwhile instead of following it). */
static int write_private(const char *path, const char *text, size_t len, char *why, size_t cap)
{
    if (check_out_path(path, why, cap))
        return -1;
    char tmp[PATH_MAX + 32];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        snprintf(why, cap, "%s: name too long", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(why, cap, "%.300s: %s", tmp, strerror(errno));
        return -1;
    }
    /* The umask may only have narrowed 0600; make it exact. */
    bool ok = fchmod(fd, 0600) == 0;
    for (size_t off = 0; ok && off < len;) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        off += ok ? (size_t)w : 0;
    }
    ok = ok && fsync(fd) == 0;
    int saved = errno;
    close(fd);
    if (!ok || rename(tmp, path)) {
        if (ok)
            saved = errno;
        unlink(tmp);
        snprintf(why, cap, "%s: %s", path, strerror(saved));
        return -1;
    }
    return 0;
}

/* The initiator's side of the context as a libcoap OSCORE conf in FILE,
 * and the sequence numbers this run used in FILE.seq and the state
 * directory, so that `coap-client -E FILE,FILE.seq` and `edhoc-cli coap
 * --oscore-context FILE` continue above them (RFC 8613 Section 7.2.1: a
 * nonce is never used twice with one key). The record comes first: a conf
 * without it could let a later run reuse nonces, a record without a conf
 * costs nothing. Returns 0 or -1 with why. */
int cli_initiator_export_conf(const struct initiator *c, struct edhoc_client_run *run,
                              bool write_file, char *why, size_t cap)
{
    char text[1024];
    struct oscore_config *cfg = calloc(1, sizeof *cfg);
    FILE *m = cfg ? fmemopen(text, sizeof text, "w") : NULL;
    if (!m) {
        free(cfg);
        snprintf(why, cap, "out of memory");
        return -1;
    }
    /* Unbuffered: no copy of the secret in a stdio buffer. */
    setvbuf(m, NULL, _IONBF, 0);
    cli_write_oscore_conf(m, &run->osc, "");
    long len = ftell(m);
    fclose(m);
    int rc = -1;
    struct oscore_config_error err;
    /* Parsed back by our own reader: the file is what a later run will
     * read, and the record is keyed by what that run will derive. */
    if (len <= 0 || (size_t)len >= sizeof text - 1 ||
        oscore_config_parse(text, (size_t)len, cfg, &err)) {
        snprintf(why, cap, "cannot express the context as a conf file");
        goto out;
    }
    char swhy[300];
    char dir[4096];
    const char *state_dir = c->state_dir;
    if (!write_file && !c->state_dir_arg) {
        /* --export-secrets alone: the default state directory, unless
         * --state-dir named one (resolved by the command). */
        int sd = cli_state_dir(NULL, dir, sizeof dir, swhy, sizeof swhy);
        if (sd < 0) {
            snprintf(why, cap, "cannot record the sequence numbers used: %s", swhy);
            goto out;
        }
        state_dir = dir;
    }
    /* With a conf file: FILE.seq beside it, which both printed hints read
     * (coap-client's -E FILE,FILE.seq, and coap --oscore-context FILE
     * whatever state directory it then uses). */
    if (cli_seq_note_used(state_dir, write_file ? c->export_conf : NULL, NULL, cfg, run->next_ssn,
                          swhy, sizeof swhy)) {
        snprintf(why, cap, "cannot record the sequence numbers used: %s", swhy);
        goto out;
    }
    if (!write_file) {
        rc = 0;
        goto out;
    }
    rc = write_private(c->export_conf, text, (size_t)len, why, cap);
    run->conf_written = rc == 0;
out:
    edhoc_wipe(text, sizeof text);
    edhoc_wipe(cfg, sizeof *cfg);
    free(cfg);
    return rc;
}

/* A word of a command line printed to be pasted into a shell: as is when
 * the shell would take it so, else in single quotes. */
static void print_shell_word(FILE *f, const char *w)
{
    if (w[0] && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                          "_-./,:@%+=") == strlen(w)) {
        fputs(w, f);
        return;
    }
    fputc('\'', f);
    for (const char *p = w; *p; p++) {
        if (*p == '\'')
            fputs("'\\''", f);
        else
            fputc(*p, f);
    }
    fputc('\'', f);
}

/* The hints name every record this run wrote to that the follower would
 * not find by itself: an explicit --state-dir (resolved, so that another
 * working directory finds it too). The default state directory is found
 * again in the same environment, and FILE.seq is read whatever the
 * follower's state directory is. */
void cli_initiator_print_conf(FILE *f, const struct initiator *c,
                              const struct edhoc_client_run *run)
{
    bool libcoap;
    cli_oscore_conf_hkdf(run->osc.hash_alg, &libcoap);
    const char *h = c->uri.host;
    bool v6 = strchr(h, ':') != NULL;
    fprintf(f,
            "OSCORE conf (the initiator's side, mode 0600): %s\n"
            "  next sender sequence number %llu recorded in %s%s%s\n",
            c->export_conf, (unsigned long long)run->next_ssn, c->seq_file,
            c->state_dir[0] ? " and under " : "", c->state_dir);
    fprintf(f, "  continue with: edhoc-cli coap GET coap://%s%s%s:%u/PATH --oscore-context ",
            v6 ? "[" : "", h, v6 ? "]" : "", c->uri.port);
    print_shell_word(f, c->export_conf);
    if (c->state_dir_arg) {
        fputs(" --state-dir ", f);
        print_shell_word(f, c->state_dir[0] ? c->state_dir : "none");
    }
    fputc('\n', f);
    if (libcoap) {
        /* libcoap has OSCORE (and coap-client -E) from 4.3.2 on (its
         * ChangeLog: "Support for RFC8613 (OSCORE)"), when built with it. */
        char both[2 * PATH_MAX + 2];
        snprintf(both, sizeof both, "%s,%s", c->export_conf, c->seq_file);
        fputs("  or, with libcoap 4.3.2 or later built with OSCORE (Debian 12's 4.3.1 has no "
              "-E): coap-client -E ",
              f);
        print_shell_word(f, both);
        fprintf(f, " coap://%s%s%s:%u/PATH\n", v6 ? "[" : "", h, v6 ? "]" : "", c->uri.port);
    } else {
        fprintf(f, "  (libcoap cannot use it: no hkdf_alg value for %s)\n",
                edhoc_crypto_alg_name(run->osc.hash_alg));
    }
}

void cli_initiator_record_conf(const struct initiator *c, struct edhoc_client_run *run, bool hs_ok)
{
    if (c->export_conf && hs_ok) {
        /* Even after a failed request: the context stands, and the
         * numbers sent with it must be recorded. */
        char why[400];
        if (cli_initiator_export_conf(c, run, true, why, sizeof why)) {
            if (!run->exit_code)
                edhoc_client_fail(run, CLI_EXIT_INPUT, "--export-oscore-conf %s: %s",
                                  c->export_conf, why);
            else /* the run's own failure is the one reported at the end */
                fprintf(stderr, "edhoc-cli initiator: --export-oscore-conf %s: %s\n",
                        c->export_conf, why);
        }
    }
    if (c->o.export_secrets && !c->export_conf && hs_ok && run->have_osc) {
        /* The printed context may be pasted into a conf file and used
         * again: the numbers this run sent are recorded as for
         * --export-oscore-conf, so edhoc-cli coap continues above them. */
        char why[400];
        if (cli_initiator_export_conf(c, run, false, why, sizeof why))
            fprintf(stderr,
                    "edhoc-cli initiator: --export-secrets: %s; a tool continuing this "
                    "context must start at sequence number %llu\n",
                    why, (unsigned long long)run->next_ssn);
    }
}

/* --keylog: the handshake's secrets once message_3 is made, then its
 * OSCORE context (the client engine calls these). */
void cli_initiator_keylog_edhoc(void *user)
{
    struct initiator *c = user;
    if (cli_keylog_write_edhoc(&c->keylog, &c->klog) != 0)
        fprintf(stderr, "edhoc-cli initiator: warning: --keylog %s/" CLI_KEYLOG_EDHOC_FILE ": %s\n",
                c->keylog_dir, strerror(errno));
    edhoc_key_log_wipe(&c->klog);
}

void cli_initiator_keylog_oscore(void *user, const struct edhoc_oscore_params *p)
{
    struct initiator *c = user;
    if (cli_keylog_write_oscore(&c->keylog, p) != 0)
        fprintf(stderr,
                "edhoc-cli initiator: warning: --keylog %s/" CLI_KEYLOG_OSCORE_FILE ": %s\n",
                c->keylog_dir, strerror(errno));
}
