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

static void string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
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

void sp_json_comm(struct sp_json *j, const char *key, unsigned long long comm)
{
    char hex[32];
    snprintf(hex, sizeof hex, "%016llx", comm);
    sp_json_str(j, key, hex);
}
