/* xorshift.h - the pseudo-random numbers of the format tests and of
 * bench/format_bench.c: Marsaglia's 32-bit xorshift (shifts 13, 17, 5),
 * seeded by the caller, so that a run's events are the same every time. */
#ifndef SP_TEST_XORSHIFT_H
#define SP_TEST_XORSHIFT_H
#include <stdint.h>

/* A number below N from the generator at *STATE (never 0), which it advances. */
static inline uint32_t xorshift_below(uint32_t *state, uint32_t n)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x % n;
}
#endif
