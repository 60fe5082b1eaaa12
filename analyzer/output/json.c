/* json.c - see json.h.  Output is indented one level per nesting so that
 * people can read it too; consumers should not depend on the layout. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

void sp_json_init(struct sp_json *j, FILE *out)
{
    memset(j, 0, sizeof *j);
    j->out = out;
}

void sp_json_begin(struct sp_json *j, FILE *out)
{
    sp_json_init(j, out);
    sp_json_open(j, NULL, '{');
}

int sp_utf8_len(const unsigned char *p)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xbf;
    int n;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

void sp_json_put_string(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', out);
    while (*p) {
        unsigned char c = *p;
        int n = c >= 0x80 ? sp_utf8_len(p) : 1;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c == '\t')
            fputs("\\t", out);
        else if (c < 0x20 || c == 0x7f || n == 0)
            fprintf(out, "\\u%04x", c);
        else
            fwrite(p, 1, (size_t)n, out);
        p += n ? n : 1;
    }
    fputc('"', out);
}

static void string(FILE *out, const char *s)
{
    sp_json_put_string(out, s);
}

static void start(struct sp_json *j, const char *key)
{
    if (j->depth > 0) {
        fputs(j->count[j->depth]++ ? ",\n" : "\n", j->out);
        fprintf(j->out, "%*s", 2 * j->depth, "");
    }
    if (key) {
        string(j->out, key);
        fputs(": ", j->out);
    }
}

void sp_json_open(struct sp_json *j, const char *key, char bracket)
{
    start(j, key);
    fputc(bracket, j->out);
    if (j->depth + 1 < SP_JSON_DEPTH)
        j->count[++j->depth] = 0;
}

void sp_json_close(struct sp_json *j, char bracket)
{
    int had = j->count[j->depth];
    j->depth--;
    if (had)
        fprintf(j->out, "\n%*s", 2 * j->depth, "");
    fputc(bracket, j->out);
    if (j->depth == 0)
        fputc('\n', j->out);
}

void sp_json_str(struct sp_json *j, const char *key, const char *v)
{
    if (!v)
        return;
    start(j, key);
    string(j->out, v);
}

void sp_json_num(struct sp_json *j, const char *key, double v)
{
    start(j, key);
    if (isfinite(v))
        fprintf(j->out, "%.6g", v);
    else
        fputs("null", j->out);
}

void sp_json_int(struct sp_json *j, const char *key, long long v)
{
    start(j, key);
    fprintf(j->out, "%lld", v);
}

void sp_json_bool(struct sp_json *j, const char *key, int v)
{
    start(j, key);
    fputs(v ? "true" : "false", j->out);
}

void sp_json_null(struct sp_json *j, const char *key)
{
    start(j, key);
    fputs("null", j->out);
}

void sp_json_str_or_null(struct sp_json *j, const char *key, const char *v)
{
    if (v)
        sp_json_str(j, key, v);
    else
        sp_json_null(j, key);
}

void sp_json_comm(struct sp_json *j, const char *key, unsigned long long comm)
{
    char hex[32];
    snprintf(hex, sizeof hex, "%016llx", comm);
    sp_json_str(j, key, hex);
}

void sp_json_int_list(struct sp_json *j, const char *key, const int *v, int n)
{
    sp_json_open(j, key, '[');
    for (int i = 0; i < n; i++)
        sp_json_int(j, NULL, v[i]);
    sp_json_close(j, ']');
}

void sp_json_str_list(struct sp_json *j, const char *key, char *const *v, int n)
{
    sp_json_open(j, key, '[');
    for (int i = 0; i < n; i++)
        sp_json_str(j, NULL, v[i]);
    sp_json_close(j, ']');
}

void sp_json_num_if(struct sp_json *j, const char *key, int known, double v)
{
    if (known)
        sp_json_num(j, key, v);
    else
        sp_json_null(j, key);
}

void sp_json_str_rows(struct sp_json *j, const char *key, const char *rows, size_t stride, int n)
{
    sp_json_open(j, key, '[');
    for (int i = 0; i < n; i++)
        sp_json_str(j, NULL, rows + (size_t)i * stride);
    sp_json_close(j, ']');
}
