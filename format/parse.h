/*
 * parse.h - checked parsing of option values and SCALEPROF_* variables.
 *
 * One helper per kind of value (integer, real, range, list, duration),
 * shared by every verb of the analyzer and by the preload, so that a bad
 * value is reported the same way everywhere: the whole string must parse
 * (no trailing garbage, no empty string, no overflow) and fall inside the
 * stated bounds.  On failure each function returns -1, leaves its outputs
 * untouched, and writes into err (when not NULL) one line without a
 * trailing newline that names the value and what was expected, e.g.
 *     "abc" is not an integer (expected 0..7)
 * The caller prefixes the option name: "--rank: \"abc\" is not ...".
 *
 * No allocation except in sp_parse_list; no locale dependence (decimal
 * point is '.'); safe to call before main (the preload's constructor).
 */
#ifndef SP_PARSE_H
#define SP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define SP_PARSE_ERR 160 /* enough for any message these functions write */

/* A base-10 integer in [lo, hi].  Returns 0 with *out set, -1 on error. */
int sp_parse_int(const char *s, long long lo, long long hi, long long *out, char *err, size_t errlen);

/* A finite real number in [lo, hi] ("0.5", "1e-3").  0 or -1. */
int sp_parse_double(const char *s, double lo, double hi, double *out, char *err, size_t errlen);

/* "A:B" with lo <= A <= B <= hi; either side may be empty, giving lo or hi
 * ("5:" is 5..hi, ":8" is lo..8).  Both ends are inclusive here; the
 * caller documents what its B means.  "A" alone is A:A.  0 or -1. */
int sp_parse_range(const char *s, long long lo, long long hi, long long *a, long long *b, char *err,
                   size_t errlen);

/* A comma-separated list of integers and inclusive ranges in [lo, hi]:
 * "0,2,4-7".  *out is malloc'd, sorted ascending, without duplicates, and
 * must be freed by the caller; *n its length (>= 1).  0 or -1 (also -1
 * when out of memory, said in err). */
int sp_parse_list(const char *s, long long lo, long long hi, long long **out, size_t *n, char *err,
                  size_t errlen);

/* A duration with a unit: ns, us, ms, s, m, h ("250ms", "1.5s"); a bare
 * number is in default_unit_ns (e.g. 1000000000 for seconds).  The result
 * is in [lo_ns, hi_ns].  0 or -1. */
int sp_parse_duration(const char *s, int64_t default_unit_ns, int64_t lo_ns, int64_t hi_ns, int64_t *out_ns,
                      char *err, size_t errlen);

/* One of names[0..n): returns its index, or -1 with err listing the
 * choices ("\"fast\" is not one of: off, on, auto"). */
int sp_parse_choice(const char *s, const char *const *names, int n, char *err, size_t errlen);

#endif
