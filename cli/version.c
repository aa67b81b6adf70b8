/*
 * `edhoc-cli --version`: the program's version, then the libraries it runs
 * with, as `curl --version` does: a bug report then names the OpenSSL or
 * libcoap that was really loaded, not the one the package was built
 * against. Each version is the library's own run-time answer where it has
 * a function for it; libcbor has none, so its line is the version of the
 * headers it was built with.
 */
#include "version.h"

#include <cbor.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <pcap/pcap.h>
#include <sodium.h>
#include <sqlite3.h>
#include <string.h>

#include "edhoc/transport.h"
#include "edhoc/version.h"
#include "util.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

/* "libpcap version 1.10.3 (with TPACKET_V3)" -> "1.10.3" */
static void pcap_number(char *out, size_t cap)
{
    const char *v = pcap_lib_version();
    static const char prefix[] = "libpcap version ";
    if (!strncmp(v, prefix, sizeof prefix - 1))
        v += sizeof prefix - 1;
    size_t n = strcspn(v, " ");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), v);
}

void cli_print_version(FILE *f)
{
    char pcap[64];
    pcap_number(pcap, sizeof pcap);
    fprintf(f, "edhoc-cli %s\n", EDHOC_CLI_VERSION);
    fprintf(f,
            "libedhoc/%s libcoap/%s OpenSSL/%s libsodium/%s libcbor/%s jansson/%s SQLite/%s "
            "libpcap/%s\n",
            edhoc_version(), edhoc_transport_libcoap_version(),
            OpenSSL_version(OPENSSL_VERSION_STRING), sodium_version_string(),
            STR(CBOR_MAJOR_VERSION) "." STR(CBOR_MINOR_VERSION) "." STR(CBOR_PATCH_VERSION),
            jansson_version_str(), sqlite3_libversion(), pcap);
}
