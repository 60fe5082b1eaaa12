/* bench.h - what the benchmarks share: a clock read in ns, and the median
 * of a sample (its middle value once sorted; the samples are odd in
 * number). */
#ifndef SP_BENCH_H
#define SP_BENCH_H
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t bench_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}
#endif
