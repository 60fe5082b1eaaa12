/* opt.c - see opt.h.
 *
 * "Did you mean": the nearest name by optimal string alignment distance
 * (insertions, deletions, substitutions and swaps of neighbours, one
 * each), accepted up to a third of the word's length (at least 1, at most
 * NEAR_MAX): "reprot" finds "report", "frobnicate" finds nothing. */
#include "opt.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"

#define NEAR_MAX 3
#define WORD_MAX 64 /* longer words are never a slip of a known name */

static int color_mode; /* 0 auto, 1 always, -1 never */

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

int sp_opt_steps(const char *verb, const char *val, int *first, int *end)
{
    int a, b;
    if (sp_opt_range(verb, "--steps", val, 0, INT32_MAX - 1, &a, &b) < 0)
        return -1;
    *first = a;
    *end = b + 1;
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

static int min3(int a, int b, int c)
{
    int m = a < b ? a : b;
    return m < c ? m : c;
}

/* Optimal string alignment distance of a and b, both under WORD_MAX. */
static int distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    static int d[WORD_MAX + 1][WORD_MAX + 1];
    for (int i = 0; i <= la; i++)
        d[i][0] = i;
    for (int j = 0; j <= lb; j++)
        d[0][j] = j;
    for (int i = 1; i <= la; i++)
        for (int j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < d[i][j])
                d[i][j] = d[i - 2][j - 2] + 1;
        }
    return d[la][lb];
}

const char *sp_opt_nearest(const char *word, const char *const *names, size_t n)
{
    size_t len = strlen(word);
    if (!len || len >= WORD_MAX)
        return NULL;
    int limit = (int)len / 3;
    if (limit < 1)
        limit = 1;
    if (limit > NEAR_MAX)
        limit = NEAR_MAX;
    const char *best = NULL;
    int best_d = limit + 1;
    for (size_t i = 0; i < n; i++) {
        if (strlen(names[i]) >= WORD_MAX)
            continue;
        int dist = distance(word, names[i]);
        if (dist < best_d) {
            best_d = dist;
            best = names[i];
        }
    }
    return best;
}

int sp_opt_unknown(const char *verb, const struct option *opts, const char *arg)
{
    if (!arg || strncmp(arg, "--", 2))
        return sp_usage_error(verb, "option %s is unknown or needs a value", arg ? arg : "?");
    char name[WORD_MAX];
    size_t len = strcspn(arg + 2, "=");
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), arg + 2);
    const char *names[256];
    size_t n = 0;
    for (const struct option *o = opts; o->name && n < sizeof names / sizeof names[0]; o++) {
        if (!strcmp(o->name, name) && o->has_arg == required_argument)
            return sp_usage_error(verb, "--%s needs a value", name);
        names[n++] = o->name;
    }
    const char *near = sp_opt_nearest(name, names, n);
    if (near)
        return sp_usage_error(verb, "option --%s is unknown; did you mean --%s?", name, near);
    return sp_usage_error(verb, "option --%s is unknown", name);
}

int sp_opt_join_number(int argc, char **argv, const char *opt, char *buf, size_t len)
{
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--"))
            return argc;
        const char *v = argv[i + 1];
        if (strcmp(argv[i], opt) || !*v || strspn(v, "0123456789") != strlen(v))
            continue;
        snprintf(buf, len, "%s=%s", opt, v);
        argv[i] = buf;
        for (int j = i + 1; j < argc; j++)
            argv[j] = argv[j + 1];
        return argc - 1;
    }
    return argc;
}

int sp_opt_take_color(const char *verb, int *argc, char **argv, int operands_end)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--") || (operands_end && a[0] != '-')) {
            while (i < *argc)
                argv[out++] = argv[i++];
            break;
        }
        if (!strcmp(a, "--no-color")) {
            color_mode = -1;
        } else if (!strcmp(a, "--color")) {
            color_mode = 1;
        } else if (!strncmp(a, "--color=", 8)) {
            const char *when = a + 8;
            if (!strcmp(when, "always"))
                color_mode = 1;
            else if (!strcmp(when, "never"))
                color_mode = -1;
            else if (!strcmp(when, "auto"))
                color_mode = 0;
            else
                return sp_usage_error(verb, "--color=%s: WHEN is always, never or auto", when);
        } else {
            argv[out++] = argv[i];
        }
    }
    argv[out] = NULL;
    *argc = out;
    return 0;
}

int sp_color_on(FILE *f)
{
    if (color_mode)
        return color_mode > 0;
    return isatty(fileno(f)) && !getenv("NO_COLOR");
}
