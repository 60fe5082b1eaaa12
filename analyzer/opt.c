/* opt.c - see opt.h.
 *
 * The model's options are one table (model_options) that sp_opts_init
 * appends to a verb's own, so that every verb takes them under the same
 * names with the same checks; sp_opts_next consumes them into the verb's
 * struct sp_model_opts and hands the verb only its own.  Exact names:
 * getopt_long matches any unambiguous prefix and says which entry it took
 * (longindex), so the word it read is compared with that entry's name.
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

#include <regex.h>

#include "alloc.h"
#include "model.h"
#include "parse.h"

#define NEAR_MAX 3
#define WORD_MAX 64 /* longer words are never a slip of a known name */
#define MAX_SKIP 1000000
#define MAX_THREADS 256
#define REGEX_ERR 128

/* The model's options: the values getopt_long returns for them lie above
 * any a verb uses (letters, and enums from 256). */
enum {
    MOPT_RUN = 0x4000,
    MOPT_STEPS,
    MOPT_SKIP,
    MOPT_STEP_MARKER,
    MOPT_THREADS,
};
static const struct option model_options[] = {
    {"run", required_argument, NULL, MOPT_RUN},
    {"steps", required_argument, NULL, MOPT_STEPS},
    {"skip", required_argument, NULL, MOPT_SKIP},
    {"step-marker", required_argument, NULL, MOPT_STEP_MARKER},
    {"threads", required_argument, NULL, MOPT_THREADS},
};

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
    char begun[512];
    int nbegun = 0;
    size_t used = 0;
    for (const struct option *o = opts; o->name && n < sizeof names / sizeof names[0]; o++) {
        if (!strcmp(o->name, name) && o->has_arg == required_argument)
            return sp_usage_error(verb, "--%s needs a value", name);
        if (!strcmp(o->name, name) && o->has_arg == no_argument && arg[2 + len] == '=')
            return sp_usage_error(verb, "--%s takes no value", name);
        names[n++] = o->name;
        if (*name && !strncmp(o->name, name, strlen(name)) && used < sizeof begun) {
            used += (size_t)snprintf(begun + used, sizeof begun - used, "%s--%s", nbegun ? " or " : "", o->name);
            nbegun++;
        }
    }
    if (nbegun)
        return sp_usage_error(verb, "option --%s is unknown; did you mean %s? (options are not abbreviated)", name,
                              begun);
    const char *near = sp_opt_nearest(name, names, n);
    if (near)
        return sp_usage_error(verb, "option --%s is unknown; did you mean --%s?", name, near);
    return sp_usage_error(verb, "option --%s is unknown", name);
}

void sp_opts_init(struct sp_opts *p, const char *verb, const struct option *own, struct sp_model_opts *model)
{
    size_t n = 0, max = sizeof p->table / sizeof p->table[0] - 1;
    p->verb = verb;
    p->model = model;
    for (const struct option *o = own; o->name && n < max; o++)
        p->table[n++] = *o;
    p->nown = (int)n;
    for (size_t i = 0; model && i < sizeof model_options / sizeof model_options[0] && n < max; i++)
        p->table[n++] = model_options[i];
    p->table[n] = (struct option){NULL, 0, NULL, 0};
    p->shared = (struct sp_shared_opts){0, 0, 0};
    optind = 1;
    opterr = 0;
}

struct sp_opts sp_opts_model(const char *verb, const struct option *own, struct sp_model_opts *model)
{
    struct sp_opts p;
    sp_model_opts_default(model);
    model->progress = 1;
    sp_opts_init(&p, verb, own, model);
    return p;
}

static int step_marker(const char *verb, const char *re_text)
{
    regex_t re;
    int rc = regcomp(&re, re_text, REG_EXTENDED | REG_ICASE | REG_NOSUB);
    if (rc == REG_ESPACE) {
        sp_alloc_lost(); /* no memory to compile it: not a bad pattern (main says so) */
        return -1;
    }
    if (rc != 0) {
        char msg[REGEX_ERR];
        regerror(rc, &re, msg, sizeof msg);
        sp_usage_error(verb, "--step-marker: \"%s\" is not an extended regular expression: %s", re_text, msg);
        return -1;
    }
    regfree(&re);
    return 0;
}

/* A shared option (opt.h) of p's verb into p: 1 taken, 0 when c is none,
 * -1 when its value is bad (said). */
static int take_shared_option(struct sp_opts *p, int c, const char *arg)
{
    struct sp_shared_opts *s = &p->shared;
    int rc;
    switch (c) {
    case SP_SHARED_SAMPLES:
        rc = sp_opt_double(p->verb, "--samples-per-step", arg, 1e-9, 1e12, &p->model->samples_per_step);
        break;
    case SP_SHARED_GLOBAL_BATCH:
        rc = sp_opt_double(p->verb, "--global-batch", arg, 1e-9, 1e15, &s->global_batch);
        break;
    case SP_SHARED_PRICE:
        rc = sp_opt_double(p->verb, "--price-per-gpu-hour", arg, 0, 1e9, &s->price);
        break;
    case SP_SHARED_KERNELS:
        s->top_kernels = SP_TOP_KERNELS;
        rc = arg ? sp_opt_int(p->verb, "--kernels", arg, 1, INT32_MAX, &s->top_kernels) : 0;
        break;
    default: return 0;
    }
    return rc < 0 ? -1 : 1;
}

/* One of the model's options into o; 0, or -1 when its value is bad
 * (said). */
static int take_model_option(const char *verb, int c, const char *arg, struct sp_model_opts *o)
{
    switch (c) {
    case MOPT_RUN:
        if (!*arg) {
            sp_usage_error(verb, "--run: \"\" is not a run ID (dump's header line \"run\" gives a trace's)");
            return -1;
        }
        o->run = arg;
        return 0;
    case MOPT_STEPS: return sp_opt_steps(verb, arg, &o->step_first, &o->step_last);
    case MOPT_SKIP: return sp_opt_int(verb, "--skip", arg, 0, MAX_SKIP, &o->skip);
    case MOPT_STEP_MARKER:
        if (step_marker(verb, arg) < 0)
            return -1;
        o->step_marker = arg;
        return 0;
    case MOPT_THREADS: return sp_opt_int(verb, "--threads", arg, 1, MAX_THREADS, &o->threads);
    default: return -1;
    }
}

/* The word on the command line that gave the long option getopt_long
 * just returned: argv[optind - 1], or the one before it when the value
 * was the next word. */
static const char *long_word(const struct option *o, int argc, char **argv)
{
    if (optind < 1 || optind > argc)
        return NULL;
    if (o->has_arg == required_argument && optind >= 2 && optarg == argv[optind - 1])
        return argv[optind - 2];
    return argv[optind - 1];
}

int sp_opts_next(struct sp_opts *p, int argc, char **argv, const char *shortopts)
{
    for (;;) {
        int li = -1;
        int c = getopt_long(argc, argv, shortopts, p->table, &li);
        if (c == -1)
            return -1;
        if (c == '?' || c == ':') {
            const char *w = optind >= 1 && optind <= argc ? argv[optind - 1] : NULL;
            if (w && strncmp(w, "--", 2) && optopt)
                sp_usage_error(p->verb, "option -%c is unknown or needs a value", optopt);
            else
                sp_opt_unknown(p->verb, p->table, w);
            return '?';
        }
        if (li >= 0) {
            const char *w = long_word(&p->table[li], argc, argv);
            if (!w || strncmp(w, "--", 2) || strcspn(w + 2, "=") != strlen(p->table[li].name)) {
                sp_opt_unknown(p->verb, p->table, w);
                return '?';
            }
        }
        if (li < p->nown) {
            int shared = take_shared_option(p, c, optarg);
            if (shared == 0)
                return c;
            if (shared < 0)
                return '?';
            continue;
        }
        if (take_model_option(p->verb, c, optarg, p->model) < 0)
            return '?';
    }
}

void sp_opt_nothing_to_analyze(const char *verb, const struct sp_model *m, const char *dir)
{
    for (int i = 0; i < m->nwarnings; i++)
        fprintf(stderr, "scaleprof %s: %s\n", verb, m->warnings[i]);
    fprintf(stderr, "scaleprof %s: nothing to analyze in %s\n", verb, dir);
}

void sp_opt_kernels_need_traces(const char *verb)
{
    fprintf(stderr, "scaleprof %s: --kernels needs every kernel's name and time, which summaries (scaleprof "
                    "reduce) do not hold: run it on the traces\n",
            verb);
}

int sp_opt_steps_missing(const char *verb, const struct sp_model *m)
{
    const struct sp_model_opts *o = &m->opts;
    if (o->step_first < 0 || (o->step_first < m->steps_total + m->step_number0 && o->step_last > m->step_number0))
        return 0;
    if (m->steps_total > 0)
        fprintf(stderr, "scaleprof %s: --steps %d:%d: %s has steps %d-%d only\n", verb, o->step_first,
                o->step_last - 1, m->dir, m->step_number0, m->step_number0 + m->steps_total - 1);
    else
        fprintf(stderr, "scaleprof %s: --steps %d:%d: no step found in %s\n", verb, o->step_first,
                o->step_last - 1, m->dir);
    return 1;
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
