/* Table-driven option parser and help (see options.h). */
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The options every command takes; the parser handles them itself. */
enum {
    COMMON_HELP = -1,
    COMMON_VERSION = -2,
    COMMON_VERBOSE = -3,
    COMMON_QUIET = -4,
    COMMON_CRYPTO = -5,
};

/* The values of --crypto and of EDHOC_CRYPTO (edhoc_crypto_by_name). */
static const char *const crypto_choices[] = {"openssl", "sodium", "auto", NULL};

static const struct cli_opt common_opts[] = {
    {COMMON_VERBOSE, "verbose", NULL, "more detail on standard error (repeatable: -vv)"},
    {COMMON_QUIET, "quiet", NULL, "only errors on standard error (no progress, no notes)"},
    {COMMON_HELP, "help", NULL, "this text"},
    {COMMON_VERSION, "version", NULL, "print the version and exit"},
    {COMMON_CRYPTO, "crypto", "openssl|sodium|auto",
     "the crypto library: OpenSSL alone, libsodium (with OpenSSL for what it lacks), or "
     "each operation from the faster of the two (default: the EDHOC_CRYPTO environment "
     "variable, else auto); no wire byte depends on it"},
    {0, NULL, NULL, NULL},
};

static void print_version_line(FILE *f)
{
    fprintf(f, "edhoc-cli %s\n", EDHOC_CLI_VERSION);
}

void (*cli_opt_version_print)(FILE *f) = print_version_line;

static char common_short_of(const struct cli_opt *o)
{
    switch (o->id) {
    case COMMON_VERBOSE: return 'v';
    case COMMON_QUIET: return 'q';
    case COMMON_HELP: return 'h';
    default: return 0;
    }
}

/* The short letter of o (a common option, or one of spec's own), or 0. */
static char short_of(const struct cli_cmd_spec *spec, const struct cli_opt *o)
{
    char s = common_short_of(o);
    if (s || !spec || !spec->short_names)
        return s;
    for (const struct cli_opt_short *sn = spec->short_names; sn->id; sn++)
        if (sn->id == o->id)
            return sn->letter;
    return 0;
}

/* The command's own option spelt -c, or NULL. */
static const struct cli_opt *command_short(const struct cli_cmd_spec *spec, char c)
{
    for (const struct cli_opt_group *g = spec->groups; g && g->title; g++)
        for (const struct cli_opt *o = g->opts; o->id; o++)
            if (short_of(spec, o) == c && !common_short_of(o))
                return o;
    return NULL;
}

void cli_opt_begin(struct cli_opt_parser *p, const struct cli_cmd_spec *spec, int argc, char **argv)
{
    memset(p, 0, sizeof *p);
    p->spec = spec;
    p->argc = argc;
    p->argv = argv;
    p->next = 1;
}

int cli_opt_error(const struct cli_opt_parser *p, const char *fmt, ...)
{
    fprintf(stderr, "edhoc-cli %s: ", p->spec->name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_USAGE;
}

static const struct cli_opt *find_long(const struct cli_cmd_spec *spec, const char *name,
                                       size_t len)
{
    for (const struct cli_opt_group *g = spec->groups; g && g->title; g++) {
        for (const struct cli_opt *o = g->opts; o->id; o++) {
            if (strlen(o->name) == len && !strncmp(o->name, name, len))
                return o;
        }
    }
    for (const struct cli_opt *o = common_opts; o->id; o++) {
        if (strlen(o->name) == len && !strncmp(o->name, name, len))
            return o;
    }
    return NULL;
}

/* Edit distance of two short strings (for "did you mean"). */
static size_t distance(const char *a, size_t la, const char *b)
{
    size_t lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    size_t row[41];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static const char *closest(const struct cli_cmd_spec *spec, const char *name, size_t len)
{
    const char *best = NULL;
    size_t best_d = 3; /* at most two edits away */
    for (const struct cli_opt_group *g = spec->groups; g && g->title; g++) {
        for (const struct cli_opt *o = g->opts; o->id; o++) {
            size_t d = distance(name, len, o->name);
            if (d < best_d) {
                best_d = d;
                best = o->name;
            }
        }
    }
    return best;
}

static enum cli_opt_status fail(struct cli_opt_parser *p)
{
    p->exit_code = CLI_EXIT_USAGE;
    return CLI_OPT_EXIT;
}

/* Handle a common option; CLI_OPT_OPTION means "not common, go on". */
static enum cli_opt_status take_common(struct cli_opt_parser *p, const struct cli_opt *o)
{
    switch (o->id) {
    case COMMON_HELP:
        cli_opt_print_help(p->spec, stdout);
        p->exit_code = 0;
        return CLI_OPT_EXIT;
    case COMMON_VERSION:
        cli_opt_version_print(stdout);
        p->exit_code = 0;
        return CLI_OPT_EXIT;
    case COMMON_VERBOSE:
        p->verbose++;
        p->quiet = false;
        return CLI_OPT_POSITIONAL; /* sentinel: consumed, read the next one */
    case COMMON_QUIET:
        p->quiet = true;
        p->verbose = 0;
        return CLI_OPT_POSITIONAL;
    default: return CLI_OPT_OPTION;
    }
}

static bool crypto_name_known(const char *name)
{
    for (size_t i = 0; crypto_choices[i]; i++)
        if (!strcmp(name, crypto_choices[i]))
            return true;
    return false;
}

/* --crypto NAME: the process's choice goes into EDHOC_CRYPTO, which
 * edhoc_crypto_default() reads wherever a command builds its ops table
 * (and which the processes a command starts inherit). */
static enum cli_opt_status take_crypto(struct cli_opt_parser *p)
{
    if (!crypto_name_known(p->value)) {
        cli_opt_error(p, "%s: expected openssl, sodium or auto, got '%s'", p->flag, p->value);
        return fail(p);
    }
    if (setenv("EDHOC_CRYPTO", p->value, 1) != 0) {
        cli_opt_error(p, "%s: cannot set EDHOC_CRYPTO", p->flag);
        return fail(p);
    }
    return cli_opt_next(p);
}

/* At the end of the command line: a set EDHOC_CRYPTO must name a backend,
 * rather than silently meaning the default. */
static enum cli_opt_status check_crypto_env(struct cli_opt_parser *p)
{
    const char *env = getenv("EDHOC_CRYPTO");
    if (env && *env && !crypto_name_known(env)) {
        cli_opt_error(p, "EDHOC_CRYPTO: expected openssl, sodium or auto, got '%s'", env);
        return fail(p);
    }
    return CLI_OPT_DONE;
}

static enum cli_opt_status next_short(struct cli_opt_parser *p)
{
    char c = *p->short_rest++;
    if (!*p->short_rest)
        p->short_rest = NULL;
    const struct cli_opt *own = c ? command_short(p->spec, c) : NULL;
    if (own) {
        snprintf(p->flag, sizeof p->flag, "-%c", c);
        p->opt = own;
        if (own->arg) {
            /* -THEX or -T HEX: the rest of the word is the value. */
            if (p->short_rest) {
                p->value = p->short_rest;
                p->short_rest = NULL;
            } else if (p->next < p->argc) {
                p->value = p->argv[p->next++];
            } else {
                cli_opt_error(p, "-%c needs a value (%s)", c, own->arg);
                return fail(p);
            }
        }
        return CLI_OPT_OPTION;
    }
    for (const struct cli_opt *o = common_opts; o->id; o++) {
        if (common_short_of(o) == c) {
            snprintf(p->flag, sizeof p->flag, "-%c", c);
            enum cli_opt_status st = take_common(p, o);
            return st == CLI_OPT_POSITIONAL ? cli_opt_next(p) : st;
        }
    }
    cli_opt_error(p,
                  "unknown option '-%c' (the short options are -h, -v and -q; see "
                  "edhoc-cli %s --help)",
                  c, p->spec->name);
    return fail(p);
}

enum cli_opt_status cli_opt_next(struct cli_opt_parser *p)
{
    p->opt = NULL;
    p->value = NULL;
    p->flag[0] = '\0';
    if (p->short_rest)
        return next_short(p);
    if (p->next >= p->argc)
        return check_crypto_env(p);
    const char *a = p->argv[p->next++];
    if (p->options_ended || a[0] != '-' || !a[1]) {
        /* "-" alone is a positional argument (standard input). */
        p->value = a;
        return CLI_OPT_POSITIONAL;
    }
    if (a[1] != '-') {
        /* A negative number is a positional argument, not a bundle. */
        if (a[1] >= '0' && a[1] <= '9') {
            p->value = a;
            return CLI_OPT_POSITIONAL;
        }
        p->short_rest = a + 1;
        return next_short(p);
    }
    if (!a[2]) {
        p->options_ended = true;
        return cli_opt_next(p);
    }
    const char *name = a + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    snprintf(p->flag, sizeof p->flag, "--%.*s", (int)(len < 64 ? len : 64), name);
    const struct cli_opt *o = find_long(p->spec, name, len);
    if (!o) {
        for (const struct cli_opt_renamed *r = p->spec->renamed; r && r->old_name; r++) {
            if (strlen(r->old_name) == len && !strncmp(r->old_name, name, len)) {
                cli_opt_error(p, "%s is no longer an option: use %s", p->flag, r->use_instead);
                return fail(p);
            }
        }
        const char *near = closest(p->spec, name, len);
        if (near)
            cli_opt_error(p, "unknown option '%s' (did you mean --%s? see edhoc-cli %s --help)",
                          p->flag, near, p->spec->name);
        else
            cli_opt_error(p, "unknown option '%s' (see edhoc-cli %s --help)", p->flag,
                          p->spec->name);
        return fail(p);
    }
    if (!o->arg) {
        if (eq) {
            cli_opt_error(p, "%s takes no value (got '%s')", p->flag, eq + 1);
            return fail(p);
        }
        enum cli_opt_status st = take_common(p, o);
        if (st == CLI_OPT_POSITIONAL)
            return cli_opt_next(p);
        if (st == CLI_OPT_EXIT)
            return st;
        p->opt = o;
        return CLI_OPT_OPTION;
    }
    if (eq) {
        p->value = eq + 1;
    } else {
        if (p->next >= p->argc) {
            cli_opt_error(p, "%s needs a value (%s)", p->flag, o->arg);
            return fail(p);
        }
        p->value = p->argv[p->next++];
    }
    p->opt = o;
    if (o->id == COMMON_CRYPTO)
        return take_crypto(p);
    return CLI_OPT_OPTION;
}

static bool is_command(const char *word, const char *const *commands)
{
    for (size_t i = 0; commands[i]; i++)
        if (!strcmp(word, commands[i]))
            return true;
    return false;
}

/* "-v", "-vvq": a bundle of the short common options that take no value. */
static bool verbosity_bundle(const char *a)
{
    if (a[0] != '-' || !a[1])
        return false;
    for (const char *c = a + 1; *c; c++)
        if (*c != 'v' && *c != 'q')
            return false;
    return true;
}

int cli_opt_leading(int argc, char **argv, const char *const *commands)
{
    int i = 1;
    while (i < argc) {
        const char *a = argv[i];
        if (!strcmp(a, "--verbose") || !strcmp(a, "--quiet") || verbosity_bundle(a) ||
            !strncmp(a, "--crypto=", 9)) {
            i++;
            continue;
        }
        if (!strcmp(a, "--crypto")) {
            if (i + 1 >= argc || is_command(argv[i + 1], commands)) {
                fprintf(stderr, "edhoc-cli: --crypto needs a value (openssl|sodium|auto)\n");
                return -1;
            }
            i += 2;
            continue;
        }
        if (a[0] != '-' || !strcmp(a, "-h") || !strcmp(a, "--help") || !strcmp(a, "--version"))
            return i;
        /* An option of a command: the command's parser knows its value,
         * this one does not, so name the corrected command line. */
        int cmd = i + 1;
        while (cmd < argc && !is_command(argv[cmd], commands))
            cmd++;
        if (cmd >= argc) {
            fprintf(stderr,
                    "edhoc-cli: %s goes after the command (edhoc-cli COMMAND %s; "
                    "edhoc-cli --help lists the commands)\n",
                    a, a);
            return -1;
        }
        char fixed[512];
        size_t used = (size_t)snprintf(fixed, sizeof fixed, "edhoc-cli %s", argv[cmd]);
        for (int k = 1; k < argc && used < sizeof fixed; k++) {
            if (k != cmd)
                used += (size_t)snprintf(fixed + used, sizeof fixed - used, " %s", argv[k]);
        }
        if (used >= sizeof fixed)
            memcpy(fixed + sizeof fixed - 4, "...", 4);
        fprintf(stderr, "edhoc-cli: put %s after the command: %s\n", a, fixed);
        return -1;
    }
    return argc;
}

void cli_opt_move_leading(int argc, char **argv, int command, int command_words, char **out)
{
    int n = 0;
    out[n++] = argv[0];
    for (int k = 0; k < command_words && command + k < argc; k++)
        out[n++] = argv[command + k];
    for (int k = 1; k < command; k++)
        out[n++] = argv[k];
    for (int k = command + command_words; k < argc; k++)
        out[n++] = argv[k];
    out[n] = NULL;
}

int cli_opt_long(struct cli_opt_parser *p, long min, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(p->value, &end, 10);
    if (errno || end == p->value || *end || v < min || v > max) {
        cli_opt_error(p, "%s: expected an integer from %ld to %ld, got '%s'", p->flag, min, max,
                      p->value);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_opt_u64(struct cli_opt_parser *p, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(p->value, &end, 10);
    if (errno || end == p->value || *end || p->value[0] == '-' || v < min || v > max) {
        cli_opt_error(p, "%s: expected an integer from %llu to %llu, got '%s'", p->flag,
                      (unsigned long long)min, (unsigned long long)max, p->value);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_opt_seconds(struct cli_opt_parser *p, double min_s, double max_s, long *ms)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(p->value, &end);
    /* Digits and one point only: no exponents, hex, inf or nan. */
    bool plain = end != p->value && !*end;
    for (const char *c = p->value; plain && *c; c++)
        plain = (*c >= '0' && *c <= '9') || *c == '.';
    if (!plain || errno || !isfinite(v) || v < min_s || v > max_s) {
        cli_opt_error(p,
                      "%s: expected seconds from %g to %g (decimals allowed, e.g. 0.5), got '%s'",
                      p->flag, min_s, max_s, p->value);
        return -1;
    }
    *ms = lround(v * 1000.0);
    return 0;
}

int cli_opt_choice(struct cli_opt_parser *p, const char *const *choices, int *index)
{
    for (int i = 0; choices[i]; i++) {
        if (!strcmp(p->value, choices[i])) {
            *index = i;
            return 0;
        }
    }
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; choices[i] && used < sizeof list; i++)
        used +=
            (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", choices[i]);
    cli_opt_error(p, "%s: expected one of %s, got '%s'", p->flag, list, p->value);
    return -1;
}

/* Help column of the option texts. */
#define HELP_COL   26
#define HELP_WIDTH 79

static void print_opt(FILE *f, const struct cli_cmd_spec *spec, const struct cli_opt *o)
{
    char left[96];
    char s = short_of(spec, o);
    if (s)
        snprintf(left, sizeof left, "-%c, --%s%s%s", s, o->name, o->arg ? " " : "",
                 o->arg ? o->arg : "");
    else
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
    size_t col = strlen(left) + 2;
    fprintf(f, "  %s", left);
    if (col >= HELP_COL) {
        fputc('\n', f);
        col = 0;
    }
    /* Words wrapped at HELP_WIDTH ('\n' in the text counts as a space). */
    const char *h = o->help ? o->help : "";
    bool line_empty = true;
    while (*h) {
        if (*h == ' ' || *h == '\n') {
            h++;
            continue;
        }
        size_t w = strcspn(h, " \n");
        if (!line_empty && col + 1 + w > HELP_WIDTH) {
            fputc('\n', f);
            col = 0;
            line_empty = true;
        }
        if (col < HELP_COL) {
            fprintf(f, "%*s", (int)(HELP_COL - col), "");
            col = HELP_COL;
        } else if (!line_empty) {
            fputc(' ', f);
            col++;
        }
        fwrite(h, 1, w, f);
        col += w;
        line_empty = false;
        h += w;
    }
    fputc('\n', f);
}

void cli_opt_print_help(const struct cli_cmd_spec *spec, FILE *f)
{
    fprintf(f, "usage: edhoc-cli %s %s\n", spec->name, spec->synopsis);
    if (spec->description)
        fprintf(f, "\n%s\n", spec->description);
    for (const struct cli_opt_group *g = spec->groups; g && g->title; g++) {
        fprintf(f, "\n%s:\n", g->title);
        for (const struct cli_opt *o = g->opts; o->id; o++)
            print_opt(f, spec, o);
    }
    fprintf(f, "\nCommon options (every command; --opt=value and --opt value both work):\n");
    for (const struct cli_opt *o = common_opts; o->id; o++)
        print_opt(f, spec, o);
    if (spec->epilogue)
        fprintf(f, "\n%s\n", spec->epilogue);
}

int cli_opt_usage_error(const struct cli_cmd_spec *spec, const char *why)
{
    fprintf(stderr,
            "edhoc-cli %s: %s\nusage: edhoc-cli %s %s\n(edhoc-cli %s --help lists the options)\n",
            spec->name, why, spec->name, spec->synopsis, spec->name);
    return CLI_EXIT_USAGE;
}

void cli_opt_print_list(const struct cli_cmd_spec *spec, FILE *f)
{
    for (const struct cli_opt_group *g = spec->groups; g && g->title; g++) {
        for (const struct cli_opt *o = g->opts; o->id; o++) {
            fprintf(f, "--%s%s%s\n", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
            /* The short spelling on a line of its own: "-T HEX --token". */
            char s = common_short_of(o) ? 0 : short_of(spec, o);
            if (s)
                fprintf(f, "-%c%s%s --%s\n", s, o->arg ? " " : "", o->arg ? o->arg : "", o->name);
        }
    }
    for (const struct cli_opt *o = common_opts; o->id; o++)
        fprintf(f, "--%s%s%s\n", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}
