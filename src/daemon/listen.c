#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "listen.h"

int cli_listen_resolve(const char *spec, char *out, size_t cap, char *why, size_t why_cap)
{
    char host[256];
    const char *port = NULL;
    size_t hl;
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || (close[1] && close[1] != ':')) {
            snprintf(why, why_cap,
                     "--listen %s: an IPv6 address goes in brackets, followed by "
                     "an optional :PORT (e.g. [::1]:5683)",
                     spec);
            return -1;
        }
        hl = (size_t)(close - spec - 1);
        if (hl >= sizeof host)
            hl = sizeof host - 1;
        memcpy(host, spec + 1, hl);
        host[hl] = '\0';
        if (close[1] == ':')
            port = close + 2;
    } else {
        const char *colon = strchr(spec, ':');
        if (colon && strchr(colon + 1, ':')) {
            snprintf(why, why_cap,
                     "--listen %s: an IPv6 address goes in brackets, as in a URI "
                     "(e.g. [%s] or [::1]:5683)",
                     spec, spec);
            return -1;
        }
        hl = colon ? (size_t)(colon - spec) : strlen(spec);
        if (hl >= sizeof host)
            hl = sizeof host - 1;
        memcpy(host, spec, hl);
        host[hl] = '\0';
        if (colon)
            port = colon + 1;
    }
    if (!host[0]) {
        snprintf(why, why_cap, "--listen %s: no host (every address: [::] or 0.0.0.0)", spec);
        return -1;
    }
    long port_n = 5683;
    if (port) {
        char *end = NULL;
        errno = 0;
        port_n = strtol(port, &end, 10);
        if (errno || end == port || *end || port_n < 0 || port_n > 65535) {
            snprintf(why, why_cap, "--listen %s: the port must be 0..65535", spec);
            return -1;
        }
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_DGRAM;
    hints.ai_protocol = IPPROTO_UDP;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(why, why_cap, "--listen %s: cannot resolve '%s': %s", spec, host,
                 rc ? gai_strerror(rc) : "no address");
        if (res)
            freeaddrinfo(res);
        return -1;
    }
    char addr[NI_MAXHOST];
    rc = getnameinfo(res->ai_addr, res->ai_addrlen, addr, sizeof addr, NULL, 0, NI_NUMERICHOST);
    bool v6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    if (rc != 0) {
        snprintf(why, why_cap, "--listen %s: %s", spec, gai_strerror(rc));
        return -1;
    }
    snprintf(out, cap, v6 ? "[%s]:%ld" : "%s:%ld", addr, port_n);
    return 0;
}
