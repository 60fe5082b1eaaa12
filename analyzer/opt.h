/*
 * opt.h - option values and usage errors for the verbs, one way for all.
 *
 * Each helper parses with format/parse.h; on a bad value it prints
 *     scaleprof VERB: --OPTION: "abc" is not an integer (expected 0..7)
 * on stderr and returns -1, and the verb exits with status 2.
 */
#ifndef SP_OPT_H
#define SP_OPT_H

#include <stddef.h>
#include <stdio.h>

#define SP_EXIT_USAGE 2

int sp_opt_int(const char *verb, const char *opt, const char *val, long long lo, long long hi, int *out);
int sp_opt_double(const char *verb, const char *opt, const char *val, double lo, double hi, double *out);
/* "A:B" with both ends included, lo <= A <= B <= hi. */
int sp_opt_range(const char *verb, const char *opt, const char *val, long long lo, long long hi, int *a, int *b);
/* --steps A:B, as the model takes it: *first = A, *end = B + 1 (its end
 * is exclusive). */
int sp_opt_steps(const char *verb, const char *val, int *first, int *end);
/* Prints "scaleprof VERB: <message>" and a pointer to --help; returns
 * SP_EXIT_USAGE for the verb to return. */
int sp_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An option getopt_long (opterr 0) did not take, arg being the word it
 * stopped at (argv[optind - 1]): "--rank needs a value" when it names an
 * option of opts that takes one, else "option --x is unknown; did you mean
 * --y?" with the nearest name of opts.  Returns SP_EXIT_USAGE. */
struct option;
int sp_opt_unknown(const char *verb, const struct option *opts, const char *arg);

/* The name of names[0..n) nearest to word (edit distance, a swap of two
 * neighbours counting one), when near enough to be a typing slip; NULL
 * otherwise.  For "did you mean". */
const char *sp_opt_nearest(const char *word, const char *const *names, size_t n);

/* `OPT N` (N a separate word of digits) joined into `OPT=N` in buf, for
 * an option whose value is optional: getopt takes one only after "=", and
 * N would otherwise read as an operand.  Returns the new argc. */
int sp_opt_join_number(int argc, char **argv, const char *opt, char *buf, size_t len);

/* Colour, the same for every verb: --color[=always|never|auto] and
 * --no-color are taken out of argv (up to "--", and with operands_end up
 * to the first operand, for a verb whose operands are a command) before
 * the verb parses the rest.  Returns 0, or SP_EXIT_USAGE for a bad WHEN
 * (said on stderr).  sp_color_on says whether to colour what goes to f:
 * always, never, or (auto) when f is a terminal and NO_COLOR is unset. */
int sp_opt_take_color(const char *verb, int *argc, char **argv, int operands_end);
int sp_color_on(FILE *f);
#define SP_COLOR_HELP "  --color[=WHEN], --no-color  colour always (WHEN: always, never, auto) or never;\n" \
                      "                          by default on a terminal unless NO_COLOR is set\n"

#endif
