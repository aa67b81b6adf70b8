#include "util.h"

#include <ctype.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

static int hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

long cli_hex_decode(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    if (hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X'))
        hex += 2;
    while (*hex) {
        if (isspace((unsigned char)*hex)) {
            hex++;
            continue;
        }
        int hi = hex_value((unsigned char)hex[0]);
        int lo = hex[1] ? hex_value((unsigned char)hex[1]) : -1;
        if (hi < 0 || lo < 0 || n >= cap)
            return -1;
        out[n++] = (uint8_t)(hi << 4 | lo);
        hex += 2;
    }
    return (long)n;
}

void cli_hex_print(FILE *f, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        fprintf(f, "%02x", p[i]);
}

uint8_t *cli_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        errno = ENOMEM;
        return NULL;
    }
    for (;;) {
        if (n + 1 >= cap) {
            uint8_t *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                errno = ENOMEM;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        if (got == 0)
            break;
        n += got;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
        errno = EIO;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        if (len)
            *len = n;
    }
    return buf;
}

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

int cli_parse_int_list(const char *s, int *out, int cap)
{
    int n = 0;
    while (*s) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < -65536 || v > 65536 || n >= cap)
            return -1;
        out[n++] = (int)v;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

bool cli_split_option(const char *arg, const char *next, char *name, size_t cap, const char **value)
{
    const char *eq = strchr(arg, '=');
    if (eq) {
        snprintf(name, cap, "%.*s", (int)(eq - arg), arg);
        *value = eq + 1;
        return true;
    }
    snprintf(name, cap, "%s", arg);
    *value = next;
    return false;
}

uint64_t cli_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cli_addr_normalize(const struct sockaddr *in, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof *out);
    if (in->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)in;
        if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
            struct sockaddr_in *o = (struct sockaddr_in *)out;
            o->sin_family = AF_INET;
            o->sin_port = a->sin6_port;
            memcpy(&o->sin_addr, a->sin6_addr.s6_addr + 12, 4);
            return;
        }
        struct sockaddr_in6 *o = (struct sockaddr_in6 *)out;
        o->sin6_family = AF_INET6;
        o->sin6_port = a->sin6_port;
        o->sin6_addr = a->sin6_addr;
    } else if (in->sa_family == AF_INET) {
        memcpy(out, in, sizeof(struct sockaddr_in));
    }
}

bool cli_addr_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return false;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
    }
    return false;
}

void cli_no_core_dumps(void)
{
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    prctl(PR_SET_DUMPABLE, 0);
}

int cli_write_output(const char *prog, const char *path, const uint8_t *p, size_t n)
{
    bool to_stdout = strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "wb");
    bool ok = f != NULL && (n == 0 || fwrite(p, 1, n, f) == n);
    int saved = errno;
    /* Closed whatever happened (a failed write used to keep the file). */
    if (f && !to_stdout && fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    } else if (to_stdout && fflush(stdout) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        fprintf(stderr, "edhoc-cli %s: --output %s: %s\n", prog, path, strerror(saved));
        return -1;
    }
    return 0;
}
