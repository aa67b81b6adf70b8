/* Reader of edhoc-cli's own JSON reports (see json_read.h). */
#include "json_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *json_read_field(const char *obj, const char *end, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *p = strstr(obj, key);
    if (!p || (end && p >= end))
        return NULL;
    p += strlen(key);
    while (*p == ' ')
        p++;
    return p;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool json_read_string(const char *obj, const char *end, const char *name, char *out, size_t cap)
{
    if (cap)
        out[0] = '\0';
    const char *v = json_read_field(obj, end, name);
    if (!v || *v != '"')
        return false;
    v++;
    size_t n = 0;
    while (*v && *v != '"') {
        char ch = *v++;
        if (ch == '\\' && *v) {
            char e = *v++;
            switch (e) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case 'b': ch = '\b'; break;
            case 'f': ch = '\f'; break;
            case 'u': {
                int val = 0, k;
                for (k = 0; k < 4 && hex_digit(v[k]) >= 0; k++)
                    val = val * 16 + hex_digit(v[k]);
                v += k;
                ch = k == 4 && val < 0x80 ? (char)val : '?';
                break;
            }
            default: ch = e; break;
            }
        }
        if (n + 1 < cap)
            out[n++] = ch;
    }
    if (cap)
        out[n] = '\0';
    return *v == '"';
}

bool json_read_long(const char *obj, const char *end, const char *name, long *out)
{
    const char *v = json_read_field(obj, end, name);
    if (!v)
        return false;
    char *e;
    long x = strtol(v, &e, 10);
    if (e == v)
        return false;
    *out = x;
    return true;
}

bool json_read_double(const char *obj, const char *end, const char *name, double *out)
{
    const char *v = json_read_field(obj, end, name);
    if (!v)
        return false;
    char *e;
    double x = strtod(v, &e);
    if (e == v)
        return false;
    *out = x;
    return true;
}

bool json_read_next_object(const char *json, const char *name, const char **cursor,
                           const char **obj, const char **obj_end)
{
    const char *arr = json_read_field(json, NULL, name);
    if (!arr || *arr != '[')
        return false;
    const char *arr_end = strchr(arr, ']');
    if (!arr_end)
        return false;
    const char *p = *cursor ? *cursor : arr;
    const char *o = strchr(p, '{');
    if (!o || o > arr_end)
        return false;
    const char *e = strchr(o, '}');
    if (!e || e > arr_end)
        return false;
    *obj = o;
    *obj_end = e;
    *cursor = e + 1;
    return true;
}

size_t json_read_initiator_messages(const char *json, struct json_msg *out, size_t cap)
{
    size_t n = 0;
    const char *cur = NULL, *o, *e;
    while (n < cap && json_read_next_object(json, "messages", &cur, &o, &e)) {
        struct json_msg *m = &out[n++];
        memset(m, 0, sizeof *m);
        json_read_string(o, e, "name", m->name, sizeof m->name);
        const char *v = json_read_field(o, e, "from");
        m->from_initiator = v && strncmp(v, "\"initiator\"", 11) == 0;
        if (!json_read_long(o, e, "edhoc_bytes", &m->edhoc))
            m->edhoc = -1;
        if (!json_read_long(o, e, "coap_bytes", &m->coap))
            m->coap = -1;
        long d = 0;
        m->dgrams = json_read_long(o, e, "datagrams", &d) && d > 0 ? (unsigned)d : 0;
    }
    return n;
}

int json_read_int_array(const char *obj, const char *end, const char *name, int *out, size_t cap)
{
    const char *v = json_read_field(obj, end, name);
    if (!v || *v != '[')
        return -1;
    v++;
    size_t n = 0;
    for (;;) {
        while (*v == ' ')
            v++;
        if (*v == ']')
            return (int)n;
        if (n > 0) {
            if (*v != ',')
                return -1;
            v++;
            while (*v == ' ')
                v++;
        }
        char *e;
        long x = strtol(v, &e, 10);
        if (e == v || n >= cap || x < -2147483647L - 1 || x > 2147483647L)
            return -1;
        out[n++] = (int)x;
        v = e;
        if (end && v >= end)
            return -1;
    }
}
