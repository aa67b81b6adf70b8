/* JSON output through jansson (see json_out.h). */
#include "json_out.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

json_t *cli_json_hex_value(const uint8_t *p, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    char *s = malloc(2 * len + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        s[2 * i] = digits[p[i] >> 4];
        s[2 * i + 1] = digits[p[i] & 15];
    }
    s[2 * len] = '\0';
    json_t *v = json_stringn(s, 2 * len);
    free(s);
    return v;
}

json_t *cli_json_real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *cli_json_int_or_null(bool present, long long v)
{
    return present ? json_integer(v) : json_null();
}

json_t *cli_json_string_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

/* Printable text: valid UTF-8 (jansson checks), no control characters but
 * tab, newline and carriage return. */
static bool printable(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') || p[i] == 0x7f)
            return false;
    }
    return true;
}

void cli_json_set_bytes(json_t *obj, const char *prefix, const uint8_t *p, size_t len)
{
    char key[64];
    snprintf(key, sizeof key, "%s_hex", prefix);
    cli_json_set(obj, key, cli_json_hex_value(p, len));
    snprintf(key, sizeof key, "%s_text", prefix);
    /* json_stringn refuses invalid UTF-8: the text is then null. */
    json_t *text = printable(p, len) ? json_stringn((const char *)p, len) : NULL;
    cli_json_set(obj, key, text ? text : json_null());
}

void cli_json_set(json_t *obj, const char *key, json_t *value)
{
    json_object_set_new(obj, key, value ? value : json_null());
}

static int print_flags(json_t *root, FILE *f, size_t flags)
{
    int rc = root ? json_dumpf(root, f, flags | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) : -1;
    if (rc == 0 && fputc('\n', f) == EOF)
        rc = -1;
    fflush(f);
    json_decref(root);
    return rc;
}

int cli_json_print(json_t *root, FILE *f)
{
    return print_flags(root, f, JSON_INDENT(2));
}

int cli_json_print_line(json_t *root, FILE *f)
{
    return print_flags(root, f, JSON_COMPACT);
}

int cli_json_write_file(json_t *root, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    json_incref(root);
    int rc = cli_json_print(root, f);
    int saved = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    errno = saved;
    return rc;
}
