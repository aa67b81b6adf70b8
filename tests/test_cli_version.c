/*
 * `edhoc-cli --version` names the libraries the program runs with, as
 * `curl --version` does (issue #26): the expected line is built here from
 * the libraries' own run-time functions (libcbor has none: its headers'
 * version), in the same process environment, so a wrong or stale version
 * in the program's output fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cbor.h>
#include <coap3/coap.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <pcap/pcap.h>
#include <sodium.h>
#include <sqlite3.h>

#include "edhoc/version.h"
#include "net_test_util.h"

static char expected[1024];

static void build_expected(void)
{
    const char *coap = coap_package_version(); /* "libcoap 4.3.1" */
    if (!strncmp(coap, "libcoap ", 8))
        coap += 8;
    char pcap[64];
    const char *p = pcap_lib_version(); /* "libpcap version 1.10.3 (...)" */
    if (!strncmp(p, "libpcap version ", 16))
        p += 16;
    snprintf(pcap, sizeof pcap, "%.*s", (int)strcspn(p, " "), p);
    snprintf(expected, sizeof expected,
             "edhoc-cli %s\n"
             "libedhoc/%s libcoap/%s OpenSSL/%s libsodium/%s libcbor/%d.%d.%d jansson/%s "
             "SQLite/%s libpcap/%s\n",
             EDHOC_VERSION_STRING, EDHOC_VERSION_STRING, coap,
             OpenSSL_version(OPENSSL_VERSION_STRING), sodium_version_string(), CBOR_MAJOR_VERSION,
             CBOR_MINOR_VERSION, CBOR_PATCH_VERSION, jansson_version_str(), sqlite3_libversion(),
             pcap);
}

/* The program's own --version and every command's (the common options,
 * docs/edhoc-cli.1 COMMON OPTIONS: "--version ... in every command") print
 * the same two lines on standard output and exit 0. */
static void test_version_lists_libraries(void **state)
{
    (void)state;
    build_expected();
    static const char *const lines[] = {
        "--version", "version", "simulate --version", "coap --version", "bench load --version",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        char *out = NULL;
        int rc = net_cli_run(&out, 30, true, "%s", lines[i]);
        if (rc != 0 || strcmp(out, expected) != 0)
            fail_msg("edhoc-cli %s: exit %d, printed\n%s\nwant\n%s", lines[i], rc, out, expected);
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_lists_libraries),
    };
    return cmocka_run_group_tests_name("cli_version", tests, NULL, NULL);
}
