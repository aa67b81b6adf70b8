/* edhoc-cli bytes --compare: EDHOC (three credential modes) against a DTLS
 * 1.2 handshake of libcoap's OpenSSL backend, measured on loopback in one
 * run. */
#ifndef CLI_BYTES_COMPARE_H
#define CLI_BYTES_COMPARE_H

/* argv as given to `edhoc-cli bytes` (argv[0] is "bytes"), containing
 * --compare. Returns the process exit code: 0 every run that the library
 * supports succeeded, 1 a run failed, 2 bad command line. */
int cmd_bytes_compare(int argc, char **argv);

#endif
