/* opt.c - see opt.h. */
#include "opt.h"

#include <stdarg.h>
#include <stdio.h>

#include "parse.h"

static int bad(const char *verb, const char *opt, const char *err)
{
    fprintf(stderr, "scaleprof %s: %s: %s\n", verb, opt, err);
    return -1;
}

int sp_opt_int(const char *verb, const char *opt, const char *val, long long lo, long long hi, int *out)
{
    char err[SP_PARSE_ERR];
    long long v;
    if (sp_parse_int(val, lo, hi, &v, err, sizeof err) < 0)
        return bad(verb, opt, err);
    *out = (int)v;
    return 0;
}

int sp_opt_double(const char *verb, const char *opt, const char *val, double lo, double hi, double *out)
{
    char err[SP_PARSE_ERR];
    if (sp_parse_double(val, lo, hi, out, err, sizeof err) < 0)
        return bad(verb, opt, err);
    return 0;
}

int sp_opt_range(const char *verb, const char *opt, const char *val, long long lo, long long hi, int *a, int *b)
{
    char err[SP_PARSE_ERR];
    long long x, y;
    if (sp_parse_range(val, lo, hi, &x, &y, err, sizeof err) < 0)
        return bad(verb, opt, err);
    *a = (int)x;
    *b = (int)y;
    return 0;
}

int sp_usage_error(const char *verb, const char *fmt, ...)
{
    fprintf(stderr, "scaleprof %s: ", verb);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(scaleprof %s --help for the options)\n", verb);
    return SP_EXIT_USAGE;
}
