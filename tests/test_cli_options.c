/*
 * The option parser every command uses (cli/options.c): spellings,
 * values, refusals with their exact messages, and help from the table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "options.h"

enum { OPT_TIMEOUT = 1, OPT_JSON, OPT_COUNT, OPT_MODE, OPT_SEQ };

static const struct cli_opt opts[] = {
    {OPT_TIMEOUT, "timeout", "SECONDS", "give up after SECONDS"},
    {OPT_JSON, "json", NULL, "machine-readable output"},
    {OPT_COUNT, "count", "N", "how many"},
    {OPT_MODE, "mode", "MODE", "one of fast, slow"},
    {OPT_SEQ, "seq", "N",
     "a sequence number with a help text long enough to be wrapped at the "
     "end of the line, twice over, so that wrapping is seen to happen"},
    {0, NULL, NULL, NULL},
};
static const struct cli_opt_group groups[] = {{"Test", opts}, {NULL, NULL}};
static const struct cli_opt_renamed renamed[] = {
    {"timeout-ms", "--timeout SECONDS"},
    {NULL, NULL},
};
static const struct cli_cmd_spec spec = {
    .name = "demo",
    .synopsis = "ARG [OPTIONS]",
    .description = "A test command.",
    .groups = groups,
    .renamed = renamed,
    .epilogue = "Exit codes: none.",
};

/* stderr of the parser, captured in a temporary file. */
static char err_text[4096];
static int saved_err = -1;
static FILE *err_file;

static void capture_begin(void)
{
    fflush(stderr);
    err_file = tmpfile();
    saved_err = dup(2);
    dup2(fileno(err_file), 2);
}

static void capture_end(void)
{
    fflush(stderr);
    dup2(saved_err, 2);
    close(saved_err);
    rewind(err_file);
    size_t n = fread(err_text, 1, sizeof err_text - 1, err_file);
    err_text[n] = '\0';
    fclose(err_file);
}

/* Parse argv (NULL-terminated, after the command name); returns the
 * status of the first non-option result and leaves the parser in *p. */
static enum cli_opt_status parse(struct cli_opt_parser *p, char **args)
{
    static char *argv[32];
    int argc = 0;
    argv[argc++] = "demo";
    while (*args)
        argv[argc++] = *args++;
    cli_opt_begin(p, &spec, argc, argv);
    capture_begin();
    enum cli_opt_status st = cli_opt_next(p);
    capture_end();
    return st;
}

static void test_both_spellings(void **state)
{
    (void)state;
    struct cli_opt_parser p;
    long ms = 0;
    assert_int_equal(parse(&p, (char *[]){"--timeout", "2.5", NULL}), CLI_OPT_OPTION);
    assert_int_equal(p.opt->id, OPT_TIMEOUT);
    assert_int_equal(cli_opt_seconds(&p, 0.001, 3600, &ms), 0);
    assert_int_equal(ms, 2500);
    assert_int_equal(parse(&p, (char *[]){"--timeout=0.25", NULL}), CLI_OPT_OPTION);
    assert_string_equal(p.value, "0.25");
    assert_int_equal(cli_opt_seconds(&p, 0.001, 3600, &ms), 0);
    assert_int_equal(ms, 250);
    /* A value may start with '-' (a negative EAD label, say). */
    assert_int_equal(parse(&p, (char *[]){"--count", "-3", NULL}), CLI_OPT_OPTION);
    assert_string_equal(p.value, "-3");
}

static void test_positional_and_double_dash(void **state)
{
    (void)state;
    struct cli_opt_parser p;
    char *argv[] = {"demo", "x", "--json", "--", "--json", "-", NULL};
    cli_opt_begin(&p, &spec, 6, argv);
    assert_int_equal(cli_opt_next(&p), CLI_OPT_POSITIONAL);
    assert_string_equal(p.value, "x");
    assert_int_equal(cli_opt_next(&p), CLI_OPT_OPTION);
    assert_int_equal(p.opt->id, OPT_JSON);
    assert_int_equal(cli_opt_next(&p), CLI_OPT_POSITIONAL);
    assert_string_equal(p.value, "--json");
    assert_int_equal(cli_opt_next(&p), CLI_OPT_POSITIONAL);
    assert_string_equal(p.value, "-");
    assert_int_equal(cli_opt_next(&p), CLI_OPT_DONE);
}

static void test_common_options(void **state)
{
    (void)state;
    struct cli_opt_parser p;
    char *argv[] = {"demo", "-vv", "--verbose", "--json", NULL};
    cli_opt_begin(&p, &spec, 4, argv);
    assert_int_equal(cli_opt_next(&p), CLI_OPT_OPTION);
    assert_int_equal(p.opt->id, OPT_JSON);
    assert_int_equal(p.verbose, 3);
    assert_false(p.quiet);
    char *argv2[] = {"demo", "-v", "-q", NULL};
    cli_opt_begin(&p, &spec, 3, argv2);
    assert_int_equal(cli_opt_next(&p), CLI_OPT_DONE);
    assert_true(p.quiet);
    assert_int_equal(p.verbose, 0);
}

static void test_refusals(void **state)
{
    (void)state;
    struct cli_opt_parser p;
    assert_int_equal(parse(&p, (char *[]){"--bogus", NULL}), CLI_OPT_EXIT);
    assert_int_equal(p.exit_code, 2);
    assert_string_equal(err_text,
                        "edhoc-cli demo: unknown option '--bogus' (see edhoc-cli demo --help)\n");
    assert_int_equal(parse(&p, (char *[]){"--timout", "3", NULL}), CLI_OPT_EXIT);
    assert_non_null(strstr(err_text, "did you mean --timeout?"));
    assert_int_equal(parse(&p, (char *[]){"--timeout-ms", "3", NULL}), CLI_OPT_EXIT);
    assert_string_equal(
        err_text, "edhoc-cli demo: --timeout-ms is no longer an option: use --timeout SECONDS\n");
    assert_int_equal(parse(&p, (char *[]){"--json=1", NULL}), CLI_OPT_EXIT);
    assert_string_equal(err_text, "edhoc-cli demo: --json takes no value (got '1')\n");
    assert_int_equal(parse(&p, (char *[]){"--count", NULL}), CLI_OPT_EXIT);
    assert_string_equal(err_text, "edhoc-cli demo: --count needs a value (N)\n");
    assert_int_equal(parse(&p, (char *[]){"-x", NULL}), CLI_OPT_EXIT);
    assert_non_null(strstr(err_text, "unknown option '-x'"));
}

static void test_values(void **state)
{
    (void)state;
    struct cli_opt_parser p;
    long v = 0, ms = 0;
    uint64_t u = 0;
    int idx = -1;
    const char *bad_seconds[] = {"abc", "1e3", "nan", "inf", "-1", "0x10", "", "4000", "0"};
    for (size_t i = 0; i < sizeof bad_seconds / sizeof bad_seconds[0]; i++) {
        char arg[32];
        snprintf(arg, sizeof arg, "--timeout=%s", bad_seconds[i]);
        assert_int_equal(parse(&p, (char *[]){arg, NULL}), CLI_OPT_OPTION);
        capture_begin();
        assert_int_equal(cli_opt_seconds(&p, 0.001, 3600, &ms), -1);
        capture_end();
        assert_non_null(strstr(err_text, "--timeout: expected seconds from 0.001 to 3600"));
    }
    assert_int_equal(parse(&p, (char *[]){"--count", "12x", NULL}), CLI_OPT_OPTION);
    capture_begin();
    assert_int_equal(cli_opt_long(&p, 1, 10, &v), -1);
    capture_end();
    assert_string_equal(err_text,
                        "edhoc-cli demo: --count: expected an integer from 1 to 10, got '12x'\n");
    assert_int_equal(parse(&p, (char *[]){"--count", "10", NULL}), CLI_OPT_OPTION);
    assert_int_equal(cli_opt_long(&p, 1, 10, &v), 0);
    assert_int_equal(v, 10);
    assert_int_equal(parse(&p, (char *[]){"--seq", "-1", NULL}), CLI_OPT_OPTION);
    capture_begin();
    assert_int_equal(cli_opt_u64(&p, 0, 100, &u), -1);
    capture_end();
    assert_int_equal(parse(&p, (char *[]){"--seq", "1099511627775", NULL}), CLI_OPT_OPTION);
    assert_int_equal(cli_opt_u64(&p, 0, 1099511627775ull, &u), 0);
    assert_true(u == 1099511627775ull);
    static const char *const modes[] = {"fast", "slow", NULL};
    assert_int_equal(parse(&p, (char *[]){"--mode", "slow", NULL}), CLI_OPT_OPTION);
    assert_int_equal(cli_opt_choice(&p, modes, &idx), 0);
    assert_int_equal(idx, 1);
    assert_int_equal(parse(&p, (char *[]){"--mode", "fastest", NULL}), CLI_OPT_OPTION);
    capture_begin();
    assert_int_equal(cli_opt_choice(&p, modes, &idx), -1);
    capture_end();
    assert_string_equal(err_text,
                        "edhoc-cli demo: --mode: expected one of fast, slow, got 'fastest'\n");
}

/* issue #18: `--crypto openssl|sodium|auto` on every command, with the
 * EDHOC_CRYPTO environment variable as its default; the option sets the
 * variable (which edhoc_crypto_default() reads), a bad name is refused. */
static void test_crypto_option(void **state)
{
    (void)state;
    struct cli_opt_parser p;
    unsetenv("EDHOC_CRYPTO");
    assert_int_equal(parse(&p, (char *[]){"--crypto", "sodium", "--json", NULL}), CLI_OPT_OPTION);
    assert_int_equal(p.opt->id, OPT_JSON);
    assert_string_equal(getenv("EDHOC_CRYPTO"), "sodium");
    assert_int_equal(parse(&p, (char *[]){"--crypto=openssl", NULL}), CLI_OPT_DONE);
    assert_string_equal(getenv("EDHOC_CRYPTO"), "openssl");
    assert_int_equal(parse(&p, (char *[]){"--crypto", "gnutls", NULL}), CLI_OPT_EXIT);
    assert_int_equal(p.exit_code, 2);
    assert_string_equal(
        err_text, "edhoc-cli demo: --crypto: expected openssl, sodium or auto, got 'gnutls'\n");
    assert_string_equal(getenv("EDHOC_CRYPTO"), "openssl");
    /* A set variable naming no backend is refused at the end of the line. */
    setenv("EDHOC_CRYPTO", "fastest", 1);
    assert_int_equal(parse(&p, (char *[]){NULL}), CLI_OPT_EXIT);
    assert_int_equal(p.exit_code, 2);
    assert_non_null(strstr(err_text, "EDHOC_CRYPTO: expected openssl, sodium or auto"));
    /* ... unless the option overrides it. */
    assert_int_equal(parse(&p, (char *[]){"--crypto", "auto", NULL}), CLI_OPT_DONE);
    assert_string_equal(getenv("EDHOC_CRYPTO"), "auto");
    unsetenv("EDHOC_CRYPTO");
    assert_int_equal(parse(&p, (char *[]){NULL}), CLI_OPT_DONE);
}

static void test_help_from_table(void **state)
{
    (void)state;
    char buf[8192];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    cli_opt_print_help(&spec, f);
    fclose(f);
    assert_non_null(strstr(buf, "usage: edhoc-cli demo ARG [OPTIONS]\n"));
    assert_non_null(strstr(buf, "\nTest:\n  --timeout SECONDS       give up after SECONDS\n"));
    assert_non_null(strstr(buf, "  -v, --verbose"));
    assert_non_null(strstr(buf, "  --version"));
    assert_non_null(strstr(buf, "Exit codes: none."));
    /* Every line fits 80 columns: long help texts are wrapped. */
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        assert_true(strlen(line) < 80);
    f = fmemopen(buf, sizeof buf, "w");
    cli_opt_print_list(&spec, f);
    fclose(f);
    assert_non_null(strstr(buf, "--timeout SECONDS\n--json\n--count N\n"));
    assert_non_null(strstr(buf, "--crypto openssl|sodium|auto\n"));
}

/* issue #26: the common options (every command takes them, options.h:
 * "-v/--verbose, -q/--quiet, -h/--help and --version are accepted by every
 * command", and --crypto) before the command mean what they mean after its
 * name; any other option there is refused with one line giving the
 * corrected command line. */
static const char *const command_names[] = {"simulate", "bench", "load", "help", NULL};

static int leading(char **args)
{
    int argc = 0;
    while (args[argc])
        argc++;
    capture_begin();
    int r = cli_opt_leading(argc, args, command_names);
    capture_end();
    return r;
}

static void test_leading_common_options(void **state)
{
    (void)state;
    assert_int_equal(leading((char *[]){"edhoc-cli", "simulate", "--json", NULL}), 1);
    assert_int_equal(leading((char *[]){"edhoc-cli", "--crypto", "sodium", "simulate", NULL}), 3);
    assert_int_equal(leading((char *[]){"edhoc-cli", "-vv", "-q", "--crypto=auto", "--verbose",
                                        "--quiet", "simulate", NULL}),
                     6);
    assert_string_equal(err_text, "");
    /* --help and --version are answered by the program itself. */
    assert_int_equal(leading((char *[]){"edhoc-cli", "-q", "--version", NULL}), 2);
    assert_int_equal(leading((char *[]){"edhoc-cli", "-v", "-h", NULL}), 2);
    /* Nothing after them: the caller prints the usage. */
    assert_int_equal(leading((char *[]){"edhoc-cli", "-q", NULL}), 2);

    assert_int_equal(
        leading((char *[]){"edhoc-cli", "--json", "-q", "simulate", "--method", "3", NULL}), -1);
    assert_string_equal(err_text, "edhoc-cli: put --json after the command: edhoc-cli simulate "
                                  "--json -q --method 3\n");
    assert_int_equal(leading((char *[]){"edhoc-cli", "-x", NULL}), -1);
    assert_string_equal(err_text, "edhoc-cli: -x goes after the command (edhoc-cli COMMAND -x; "
                                  "edhoc-cli --help lists the commands)\n");
    /* "--crypto simulate": the command is not a backend's name. */
    assert_int_equal(leading((char *[]){"edhoc-cli", "--crypto", "simulate", NULL}), -1);
    assert_string_equal(err_text, "edhoc-cli: --crypto needs a value (openssl|sodium|auto)\n");
    assert_int_equal(leading((char *[]){"edhoc-cli", "--crypto", NULL}), -1);

    /* Moved right after the command's name(s), so that the command's own
     * options, read later, override them (-q then -v: verbose). */
    char *moved[16];
    char *argv[] = {"edhoc-cli", "-q", "--crypto", "sodium", "bench", "load", "URI", "-v", NULL};
    cli_opt_move_leading(8, argv, 4, 2, moved);
    const char *want[] = {"edhoc-cli", "bench", "load", "-q", "--crypto", "sodium", "URI", "-v"};
    for (int i = 0; i < 8; i++)
        assert_string_equal(moved[i], want[i]);
    assert_null(moved[8]);
}

/* The same through the program: the value reaches the command's parser
 * (which names itself and checks it), and a misplaced option costs one
 * line instead of the usage. Skipped when the binary is not built. */
static void test_leading_options_end_to_end(void **state)
{
    (void)state;
    const char *cli = getenv("EDHOC_CLI");
    if (!cli || access(cli, X_OK) != 0)
        skip();
    char cmd[1024], out[4096];
    struct {
        const char *args;
        int status;
        const char *output;
    } cases[] = {
        {"--crypto gnutls simulate", 2,
         "edhoc-cli simulate: --crypto: expected openssl, sodium or auto, got 'gnutls'\n"},
        {"--json simulate", 2,
         "edhoc-cli: put --json after the command: edhoc-cli simulate --json\n"},
        {"-q --crypto sodium simulate --method 3 >/dev/null", 0, ""},
        {"-q --crypto=openssl bench load --bogus", 2,
         "edhoc-cli load: unknown option '--bogus' (see edhoc-cli load --help)\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s %s 2>&1", cli, cases[i].args);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        size_t n = fread(out, 1, sizeof out - 1, p);
        out[n] = '\0';
        int st = pclose(p);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != cases[i].status || strcmp(out, cases[i].output))
            fail_msg("edhoc-cli %s: status %d, output '%s'", cases[i].args,
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_spellings),
        cmocka_unit_test(test_positional_and_double_dash),
        cmocka_unit_test(test_common_options),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_help_from_table),
        cmocka_unit_test(test_crypto_option),
        cmocka_unit_test(test_leading_common_options),
        cmocka_unit_test(test_leading_options_end_to_end),
    };
    return cmocka_run_group_tests_name("cli_options", tests, NULL, NULL);
}
