#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
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
    while (buf) {
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

void cli_json_hex(FILE *f, const uint8_t *p, size_t len)
{
    fputc('"', f);
    cli_hex_print(f, p, len);
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

bool cli_split_option(const char *arg, const char *next, char *name, size_t cap,
                      const char **value)
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
