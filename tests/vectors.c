#include "vectors.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    for (;;) {
        if (n + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        if (got == 0)
            break;
        n += got;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* Loaded files stay cached (and reachable) for the life of the test
 * program, so repeated loads cost nothing and are not leaks. */
static struct {
    char name[128];
    struct vec_scope scope;
} loaded[16];

struct vec_scope vec_load(const char *name)
{
    for (size_t i = 0; i < sizeof loaded / sizeof loaded[0]; i++) {
        if (loaded[i].scope.begin && !strcmp(loaded[i].name, name))
            return loaded[i].scope;
    }
    const char *dir = getenv("EDHOC_VECTORS");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/vectors", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open test vectors %s", path);
    size_t len;
    char *text = read_all(f, &len);
    fclose(f);
    struct vec_scope s = {text, text + len};
    for (size_t i = 0; i < sizeof loaded / sizeof loaded[0]; i++) {
        if (!loaded[i].scope.begin) {
            snprintf(loaded[i].name, sizeof loaded[i].name, "%s", name);
            loaded[i].scope = s;
            break;
        }
    }
    return s;
}

/* Position just after `"key":` (whitespace skipped), or NULL. Only keys at
 * any depth are matched by their quoted name followed by a colon. */
static const char *find_key(struct vec_scope s, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = s.begin; p && p + klen + 2 < s.end; p++) {
        if (*p != '"' || strncmp(p + 1, key, klen) != 0 || p[1 + klen] != '"')
            continue;
        const char *q = p + klen + 2;
        while (q < s.end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
            q++;
        if (q < s.end && *q == ':') {
            q++;
            while (q < s.end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
                q++;
            return q;
        }
    }
    return NULL;
}

/* End of the JSON value starting at p (object, array, string, or scalar). */
static const char *value_end(const char *p, const char *end)
{
    if (*p == '{' || *p == '[') {
        int depth = 0;
        bool in_str = false;
        for (; p < end; p++) {
            if (in_str) {
                if (*p == '\\')
                    p++;
                else if (*p == '"')
                    in_str = false;
                continue;
            }
            if (*p == '"')
                in_str = true;
            else if (*p == '{' || *p == '[')
                depth++;
            else if (*p == '}' || *p == ']') {
                if (--depth == 0)
                    return p + 1;
            }
        }
        return end;
    }
    if (*p == '"') {
        for (p++; p < end; p++) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                return p + 1;
        }
        return end;
    }
    while (p < end && *p != ',' && *p != '}' && *p != ']')
        p++;
    return p;
}

struct vec_scope vec_object(struct vec_scope s, const char *key)
{
    const char *p = find_key(s, key);
    if (!p || *p != '{')
        fail_msg("test vector object \"%s\" not found", key);
    struct vec_scope r = {p, value_end(p, s.end)};
    return r;
}

struct vec_scope vec_array_item(struct vec_scope s, const char *key, size_t n)
{
    struct vec_scope none = {NULL, NULL};
    const char *p = find_key(s, key);
    if (!p || *p != '[')
        fail_msg("test vector array \"%s\" not found", key);
    const char *end = value_end(p, s.end);
    p++;
    size_t i = 0;
    while (p < end) {
        while (p < end && *p != '{' && *p != ']')
            p++;
        if (p >= end || *p == ']')
            return none;
        const char *e = value_end(p, end);
        if (i == n) {
            struct vec_scope r = {p, e};
            return r;
        }
        i++;
        p = e;
    }
    return none;
}

bool vec_has(struct vec_scope s, const char *key)
{
    return find_key(s, key) != NULL;
}

long hex_decode(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    while (hex[0] && hex[0] != '"') {
        if (hex[0] == ' ' || hex[0] == '\n') {
            hex++;
            continue;
        }
        if (!hex[1])
            return -1;
        unsigned v;
        if (sscanf(hex, "%2x", &v) != 1)
            return -1;
        if (n >= cap)
            return -1;
        out[n++] = (uint8_t)v;
        hex += 2;
    }
    return (long)n;
}

void hex_encode(const uint8_t *in, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * len] = '\0';
}

size_t vec_hex(struct vec_scope s, const char *key, uint8_t *out, size_t cap)
{
    const char *p = find_key(s, key);
    if (!p || *p != '"')
        fail_msg("test vector hex \"%s\" not found", key);
    long n = hex_decode(p + 1, out, cap);
    if (n < 0)
        fail_msg("test vector \"%s\" is not hex or exceeds %zu bytes", key, cap);
    return (size_t)n;
}

long vec_int(struct vec_scope s, const char *key)
{
    const char *p = find_key(s, key);
    if (!p)
        fail_msg("test vector number \"%s\" not found", key);
    return strtol(p, NULL, 10);
}

void vec_str(struct vec_scope s, const char *key, char *out, size_t cap)
{
    const char *p = find_key(s, key);
    if (!p || *p != '"')
        fail_msg("test vector string \"%s\" not found", key);
    const char *e = value_end(p, s.end) - 1;
    size_t n = (size_t)(e - p - 1);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, p + 1, n);
    out[n] = '\0';
}

int run_cli(const char *args, bool merge_stderr, char **out)
{
    const char *cli = getenv("EDHOC_CLI");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s %s%s", cli ? cli : "edhoc-cli", args,
             merge_stderr ? " 2>&1" : "");
    FILE *p = popen(cmd, "r");
    if (!p) {
        *out = strdup("");
        return -1;
    }
    *out = read_all(p, NULL);
    int st = pclose(p);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}
