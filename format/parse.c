/*
 * parse.c - checked parsing of option values (see parse.h).
 *
 * strtoll/strtod do the digits; everything around them is checked here:
 * an empty string, leading blanks, trailing characters and overflow are
 * errors, never a silent 0.  Messages quote the value with unprintable
 * bytes escaped, so a value copied from a terminal shows what it held.
 */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUOTE_MAX 48 /* characters of the bad value shown in a message */

static void quote(const char *s, char *buf, size_t size)
{
    size_t o = 0;
    buf[o++] = '"';
    for (size_t i = 0; s[i] && o + 6 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i == QUOTE_MAX) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (isprint(c) && c != '"' && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
    }
    buf[o++] = '"';
    buf[o] = 0;
}

static int fail(char *err, size_t errlen, const char *s, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, const char *s, const char *fmt, ...)
{
    if (!err || !errlen)
        return -1;
    char q[QUOTE_MAX * 4 + 8];
    quote(s ? s : "", q, sizeof q);
    int k = snprintf(err, errlen, "%s ", q);
    if (k < 0 || (size_t)k >= errlen)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

/* strtoll over exactly [s, end) with nothing else allowed. */
static int whole_ll(const char *s, const char *end, long long *out)
{
    if (s == end || isspace((unsigned char)*s))
        return -1;
    char buf[32];
    size_t n = (size_t)(end - s);
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    long long v = strtoll(buf, &e, 10);
    if (errno || *e)
        return -1;
    *out = v;
    return 0;
}

int sp_parse_int(const char *s, long long lo, long long hi, long long *out, char *err, size_t errlen)
{
    long long v;
    if (!s || whole_ll(s, s + strlen(s), &v) != 0)
        return fail(err, errlen, s, "is not an integer (expected %lld..%lld)", lo, hi);
    if (v < lo || v > hi)
        return fail(err, errlen, s, "is out of range (expected %lld..%lld)", lo, hi);
    *out = v;
    return 0;
}

int sp_parse_double(const char *s, double lo, double hi, double *out, char *err, size_t errlen)
{
    char *e;
    if (!s || !*s || isspace((unsigned char)*s))
        return fail(err, errlen, s, "is not a number (expected %g..%g)", lo, hi);
    errno = 0;
    double v = strtod(s, &e);
    if (*e || errno == ERANGE || !isfinite(v))
        return fail(err, errlen, s, "is not a number (expected %g..%g)", lo, hi);
    if (v < lo || v > hi)
        return fail(err, errlen, s, "is out of range (expected %g..%g)", lo, hi);
    *out = v;
    return 0;
}

int sp_parse_range(const char *s, long long lo, long long hi, long long *a, long long *b, char *err,
                   size_t errlen)
{
    if (!s || !*s)
        return fail(err, errlen, s, "is not a range (expected A:B within %lld..%lld)", lo, hi);
    const char *colon = strchr(s, ':');
    const char *end = s + strlen(s);
    long long x = lo, y = hi;
    if (!colon) {
        if (whole_ll(s, end, &x) != 0)
            return fail(err, errlen, s, "is not a range (expected A:B within %lld..%lld)", lo, hi);
        y = x;
    } else {
        if ((colon > s && whole_ll(s, colon, &x) != 0) ||
            (colon + 1 < end && whole_ll(colon + 1, end, &y) != 0) || strchr(colon + 1, ':'))
            return fail(err, errlen, s, "is not a range (expected A:B within %lld..%lld)", lo, hi);
    }
    if (x < lo || y > hi || x > y)
        return fail(err, errlen, s, "is out of range (expected A:B with %lld <= A <= B <= %lld)", lo, hi);
    *a = x;
    *b = y;
    return 0;
}

static int cmp_ll(const void *p, const void *q)
{
    long long x = *(const long long *)p, y = *(const long long *)q;
    return (x > y) - (x < y);
}

/* Most values one list may name: a range 0-2000000000 must not allocate
 * gigabytes on a typo. */
#define LIST_MAX (1 << 20)

int sp_parse_list(const char *s, long long lo, long long hi, long long **out, size_t *n, char *err,
                  size_t errlen)
{
    if (!s || !*s)
        return fail(err, errlen, s, "is not a list (expected e.g. 0,2,4-7 within %lld..%lld)", lo, hi);
    long long *v = NULL;
    size_t nv = 0, cap = 0;
    const char *p = s;
    while (1) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        /* the dash of "4-7" is searched after the first character, so
         * that a negative bound ("-1") still reads as a number */
        const char *dash = end > p + 1 ? memchr(p + 1, '-', (size_t)(end - p - 1)) : NULL;
        long long x, y;
        int bad = dash ? (whole_ll(p, dash, &x) || whole_ll(dash + 1, end, &y)) : whole_ll(p, end, &x);
        if (!dash)
            y = x;
        if (bad) {
            free(v);
            return fail(err, errlen, s, "is not a list (expected e.g. 0,2,4-7 within %lld..%lld)", lo, hi);
        }
        if (x < lo || y > hi || x > y) {
            free(v);
            return fail(err, errlen, s, "names a value out of range (expected %lld..%lld)", lo, hi);
        }
        if ((unsigned long long)(y - x) >= LIST_MAX || nv + (size_t)(y - x) + 1 > LIST_MAX) {
            free(v);
            return fail(err, errlen, s, "names more than %d values", LIST_MAX);
        }
        for (long long k = x; k <= y; k++) {
            if (nv == cap) {
                cap = cap ? 2 * cap : 16;
                long long *nvp = realloc(v, cap * sizeof *v);
                if (!nvp) {
                    free(v);
                    return fail(err, errlen, s, "is too long a list (out of memory)");
                }
                v = nvp;
            }
            v[nv++] = k;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    qsort(v, nv, sizeof *v, cmp_ll);
    size_t u = 0;
    for (size_t i = 0; i < nv; i++)
        if (u == 0 || v[u - 1] != v[i])
            v[u++] = v[i];
    *out = v;
    *n = u;
    return 0;
}

// clang-format off
static const struct {
    const char *name;
    int64_t ns;
} units[] = {
    {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}, {"m", 60000000000LL}, {"h", 3600000000000LL},
};
// clang-format on

int sp_parse_duration(const char *s, int64_t default_unit_ns, int64_t lo_ns, int64_t hi_ns, int64_t *out_ns,
                      char *err, size_t errlen)
{
    char *e;
    if (!s || !*s || isspace((unsigned char)*s) || *s == '-')
        return fail(err, errlen, s, "is not a duration (expected e.g. 250ms, 1.5s)");
    errno = 0;
    double v = strtod(s, &e);
    if (e == s || errno == ERANGE || !isfinite(v))
        return fail(err, errlen, s, "is not a duration (expected e.g. 250ms, 1.5s)");
    int64_t unit = default_unit_ns;
    if (*e) {
        unit = 0;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (strcmp(e, units[i].name) == 0)
                unit = units[i].ns;
        if (!unit)
            return fail(err, errlen, s, "has an unknown unit (expected ns, us, ms, s, m or h)");
    }
    double ns = v * (double)unit;
    if (ns < (double)lo_ns || ns > (double)hi_ns)
        return fail(err, errlen, s, "is out of range (expected %.9g s .. %.9g s)", (double)lo_ns / 1e9,
                    (double)hi_ns / 1e9);
    /* Rounded to the nearest ns by hand: libm stays out of the preload. */
    *out_ns = (int64_t)(ns < 0 ? ns - 0.5 : ns + 0.5);
    return 0;
}

int sp_parse_choice(const char *s, const char *const *names, int n, char *err, size_t errlen)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    if (err && errlen) {
        char list[SP_PARSE_ERR];
        size_t o = 0;
        list[0] = 0;
        for (int i = 0; i < n && o < sizeof list; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", names[i]);
        fail(err, errlen, s, "is not one of: %s", list);
    }
    return -1;
}
