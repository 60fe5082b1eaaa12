/*
 * opt.h - option values and usage errors for the verbs, one way for all.
 *
 * Each helper parses with format/parse.h; on a bad value it prints
 *     scaleprof VERB: --OPTION: "abc" is not an integer (expected 0..7)
 * on stderr and returns -1, and the verb exits with status 2.
 */
#ifndef SP_OPT_H
#define SP_OPT_H

#define SP_EXIT_USAGE 2

int sp_opt_int(const char *verb, const char *opt, const char *val, long long lo, long long hi, int *out);
int sp_opt_double(const char *verb, const char *opt, const char *val, double lo, double hi, double *out);
/* "A:B" with both ends included, lo <= A <= B <= hi. */
int sp_opt_range(const char *verb, const char *opt, const char *val, long long lo, long long hi, int *a, int *b);
/* Prints "scaleprof VERB: <message>" and a pointer to --help; returns
 * SP_EXIT_USAGE for the verb to return. */
int sp_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
