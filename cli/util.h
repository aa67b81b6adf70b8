/* Helpers shared by the subcommands: exit codes, hex, files, JSON output. */
#ifndef CLI_UTIL_H
#define CLI_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EDHOC_CLI_VERSION "0.1.0"

/* Exit codes shared by every subcommand (documented in --help). */
enum cli_exit {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILURE = 1,    /* the operation failed (verification, decryption, ...) */
    CLI_EXIT_USAGE = 2,      /* bad command line */
    CLI_EXIT_INPUT = 3,      /* an input file or value could not be used */
    CLI_EXIT_PEER_ERROR = 4, /* the peer sent an EDHOC error message */
    CLI_EXIT_VERIFY = 5,     /* MAC/signature/credential verification failed */
    CLI_EXIT_TIMEOUT = 6,    /* no answer in time */
    CLI_EXIT_OSCORE = 7,     /* OSCORE protect/unprotect failed */
    CLI_EXIT_INTERNAL = 10,
};

/* Decode hex (whitespace and an optional "0x" ignored). Returns the length
 * or -1 when not hex or longer than cap. */
long cli_hex_decode(const char *hex, uint8_t *out, size_t cap);
/* Print len bytes as lowercase hex (no separators). */
void cli_hex_print(FILE *f, const uint8_t *p, size_t len);
/* Read a whole file (binary). Returns malloc'd bytes (NUL-terminated for
 * convenience) or NULL with errno set. */
uint8_t *cli_read_file(const char *path, size_t *len);
/* --output PATH ("-": standard output): the n bytes at p, exactly. 0, or
 * -1 after "edhoc-cli PROG: --output PATH: why" on standard error. */
int cli_write_output(const char *prog, const char *path, const uint8_t *p, size_t n);
/* Write s as a JSON string literal (with quotes). */
void cli_json_string(FILE *f, const char *s);
/* Parse a comma-separated list of integers into out; returns the count or
 * -1 on a bad list. */
int cli_parse_int_list(const char *s, int *out, int cap);
/* Split a "--name=value" or "--name" argument: name (NUL-terminated,
 * truncated to cap) and *value (the text after '=', else next, which may be
 * NULL). Returns true when the value came after '=' (so the caller must not
 * consume the next argument for it). */
bool cli_split_option(const char *arg, const char *next, char *name, size_t cap,
                      const char **value);
/* For a process that holds private keys or master secrets: no core file
 * (RLIMIT_CORE 0, also for the programs it runs) and not dumpable, which
 * also keeps other users' debuggers out and makes /proc/PID root's. Call
 * first thing; a child after execve is dumpable again and calls it
 * itself. */
void cli_no_core_dumps(void);
/* Monotonic time in nanoseconds. */
uint64_t cli_now_ns(void);

/* A peer's socket address as one key whatever socket it came in on: an
 * IPv4-mapped IPv6 address becomes IPv4 (port kept), everything else
 * unused is zero. out is a struct sockaddr_storage. */
struct sockaddr;
struct sockaddr_storage;
void cli_addr_normalize(const struct sockaddr *in, struct sockaddr_storage *out);
/* Same family, address and port (of normalized addresses). */
bool cli_addr_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b);

#endif
