/*
 * One declaration per command: the options a command takes, in groups,
 * each with its argument and help text. The parser, `--help`, `edhoc-cli
 * help CMD` and the man page check (`edhoc-cli help --options CMD`) all
 * read the same table, so an option a command does not declare is refused
 * before anything reads it.
 *
 * Spelling rules, the same in every command: `--name value` and
 * `--name=value`; `--` ends the options; short forms for the common
 * ones (-h, -v, -q), bundled as -vv, and those a command names in its
 * short_names (coap's -N, -T, -A, -O: `-T HEX` or `-THEX`); `-v/--verbose` (repeatable),
 * `-q/--quiet`, `-h/--help` and `--version` are accepted by every command.
 */
#ifndef CLI_OPTIONS_H
#define CLI_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Identifiers every command shares; a command's own start at 1. */
enum {
    CLI_OPT_ID_EDHOC = 900, /* an option of the shared EDHOC set (edhoc_args.h) */
    CLI_OPT_ID_NET = 901,   /* --link, --link-mtu, --pcap (net_report.h) */
};

struct cli_opt {
    int id;           /* > 0; 0 ends a group's list */
    const char *name; /* long name without the dashes: "timeout" */
    const char *arg;  /* the value's name in help ("SECONDS"); NULL: a flag */
    const char *help; /* one paragraph, wrapped when printed */
};

struct cli_opt_group {
    const char *title;          /* "Request options" */
    const struct cli_opt *opts; /* ends with {0} */
};

/* An option spelling the command had before: refused with the new one. */
struct cli_opt_renamed {
    const char *old_name;    /* without dashes: "timeout-ms" */
    const char *use_instead; /* "--timeout SECONDS (decimals allowed, e.g. --timeout 0.5)" */
};

/* A command's own short spelling of one of its options. */
struct cli_opt_short {
    int id;      /* the option's id; 0 ends the list */
    char letter; /* 'N' for -N */
};

struct cli_cmd_spec {
    const char *name;        /* "coap" */
    const char *synopsis;    /* after "edhoc-cli coap ": "METHOD URI [OPTIONS]" (may hold '\n') */
    const char *description; /* paragraphs, wrapped by the author; may be NULL */
    const struct cli_opt_group *groups;      /* ends with {NULL, NULL} */
    const struct cli_opt_renamed *renamed;   /* ends with {NULL, NULL}; may be NULL */
    const char *epilogue;                    /* exit codes and notes; may be NULL */
    const struct cli_opt_short *short_names; /* ends with {0, 0}; may be NULL */
};

enum cli_opt_status {
    CLI_OPT_OPTION,     /* p->opt and (for options with a value) p->value are set */
    CLI_OPT_POSITIONAL, /* p->value is the argument */
    CLI_OPT_DONE,       /* every argument was read */
    CLI_OPT_EXIT,       /* stop and return p->exit_code (0 after --help/--version,
                          * 2 after an error, already printed) */
};

struct cli_opt_parser {
    const struct cli_cmd_spec *spec;
    int argc;
    char **argv;
    int next;               /* index of the next argument */
    const char *short_rest; /* the rest of a bundle such as -vq */
    bool options_ended;     /* after "--" */
    /* Results of the last cli_opt_next. */
    const struct cli_opt *opt;
    const char *value;
    char flag[72]; /* "--timeout": the spelling for messages and edhoc_args */
    int exit_code;
    /* The common options, counted here for the command to read. */
    int verbose;
    bool quiet;
};

/* argv[0] is the command's name; parsing starts at argv[1]. */
void cli_opt_begin(struct cli_opt_parser *p, const struct cli_cmd_spec *spec, int argc,
                   char **argv);
enum cli_opt_status cli_opt_next(struct cli_opt_parser *p);

/* Print "edhoc-cli CMD: " and the message to stderr; returns 2 (bad
 * command line) so a command can `return cli_opt_error(...)`. */
int cli_opt_error(const struct cli_opt_parser *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Value readers for the current option: each prints "edhoc-cli CMD:
 * --flag: expected ..., got '...'" and returns -1 on a bad value. */
int cli_opt_long(struct cli_opt_parser *p, long min, long max, long *out);
int cli_opt_u64(struct cli_opt_parser *p, uint64_t min, uint64_t max, uint64_t *out);
/* Seconds with decimals ("2", "0.25", "1.5"): *ms rounded to the
 * millisecond, within [min_s, max_s]. */
int cli_opt_seconds(struct cli_opt_parser *p, double min_s, double max_s, long *ms);
/* One of choices (NULL-terminated): *index. */
int cli_opt_choice(struct cli_opt_parser *p, const char *const *choices, int *index);

/* The common options may also come before the command: `edhoc-cli -q
 * --crypto sodium simulate` is `edhoc-cli simulate -q --crypto sodium`.
 * cli_opt_leading() reads argv[1..] (argv[0] the program) past -v/-vv,
 * -q, --verbose, --quiet and --crypto NAME and returns the index of the
 * first other word (the command, or -h/--help/--version; argc when none
 * is left), or -1 after printing one line naming the fix when another
 * option comes before the command (commands: the command names, for the
 * corrected command line). */
int cli_opt_leading(int argc, char **argv, const char *const *commands);
/* out (argc + 1 entries, NULL-terminated) = argv with the words
 * argv[1..command-1] moved after the command_words words from
 * argv[command] on ("bench load" is two), where the command's own parser
 * reads them; its own later options still override them. */
void cli_opt_move_leading(int argc, char **argv, int command, int command_words, char **out);

/* What --version prints, in every command: by default the program's
 * version line; main() points it to the full list of libraries
 * (cli_print_version), which the parser's own test does not link. */
extern void (*cli_opt_version_print)(FILE *f);

/* Help from the table: usage, description, groups, epilogue. */
void cli_opt_print_help(const struct cli_cmd_spec *spec, FILE *f);
/* Usage line and a pointer to --help, for a command line missing its
 * positional arguments. Returns 2. */
int cli_opt_usage_error(const struct cli_cmd_spec *spec, const char *why);
/* One line per option, "--name ARG" (the man page check reads this). */
void cli_opt_print_list(const struct cli_cmd_spec *spec, FILE *f);

#endif
