/*
 * test_clock.c - the recorder's clock reads CLOCK_MONOTONIC from the TSC
 * without drifting from it, and falls back to clock_gettime when told to
 * or when the CPU has no invariant TSC.
 *
 * The drift bound (1 us per minute) is checked on a shorter run, and this
 * is why that suffices: the clock's discipline (preload/clock.c) does not
 * keep a fixed rate whose error would add up over the minute; every
 * period it measures the difference to CLOCK_MONOTONIC and steers it to
 * zero, with a rate measured over the whole run so far.  The difference
 * at any instant is therefore what one period can make, whatever the run's
 * length, and the drift between any two instants (a minute apart or not)
 * is at most the spread of those differences.  A run of several periods
 * whose differences all lie within a 1 us band has a drift below 1 us over
 * any interval, a minute included.  (A line fitted through a few seconds
 * of a bounded saw-tooth has a slope, but it does not extrapolate: the
 * next period steers back.)
 *
 * Each comparison brackets sp_now() between two clock_gettime reads and
 * keeps only narrow brackets (a preempted one says nothing).
 *
 * A timed call's span (preload.h: a tick at the start, both ends
 * converted at the end) must say where the call lay on CLOCK_MONOTONIC
 * and how long it took: with the TSC, with clock_gettime, and when the
 * TSC is turned off while the call runs (its end is clock_gettime then).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "preload.h"
#include "testutil.h" /* tests/format's CHECK */

#define RUN_NS 3500000000ull /* three and a half calibration periods */
#define TICK_NS 20000000ull  /* the compressor's pass interval */
#define BRACKET_MAX_NS 3000
#define BOUND_NS 1000.0                 /* 1 us */
#define SP_TEST_SETTLE_NS 1100000000ull /* past the first period: the first rate is from 50 ms */
#define SPAN_CALL_NS 2000000ull         /* the timed "call": a 2 ms sleep */
#define SPAN_SLACK_NS 2000.0            /* the clock's bound plus a rounding */

static uint64_t mono(void)
{
    return sp_clock_gettime_ns();
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

/* sp_now() minus CLOCK_MONOTONIC at the same instant; 0 with *ok = 0
 * when no narrow bracket was had. */
static double difference(int *ok)
{
    for (int i = 0; i < 20; i++) {
        uint64_t a = mono(), t = sp_now(), b = mono();
        if (b - a <= BRACKET_MAX_NS) {
            *ok = 1;
            return (double)(int64_t)(t - (a + (b - a) / 2));
        }
    }
    *ok = 0;
    return 0;
}

/* /proc/cpuinfo's first flags line has `flag` (" name"). */
static int cpuinfo_has_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int yes = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "flags", 5)) {
            yes = strstr(line, flag) != NULL;
            break;
        }
    if (f)
        fclose(f);
    return yes;
}

/* The TSC is the clock where it is invariant and the CPU has AVX (the
 * segment's 16-byte loads, preload.h). */
static int cpuinfo_has_invariant_tsc(void)
{
    return cpuinfo_has_flag(" constant_tsc") && cpuinfo_has_flag(" nonstop_tsc") && cpuinfo_has_flag(" avx");
}

/* A span around a sleep lies within the clock_gettime reads around it,
 * and lasts the sleep at least.  turn_off: the TSC is turned off after the
 * span's start, as a job's prctl(PR_SET_TSC) on another thread would. */
static void span_brackets_a_call(const char *what, int turn_off)
{
    uint64_t a = mono();
    struct sp_span sp;
    sp_span_begin(&sp);
    if (turn_off)
        sp_clock_tsc_off();
    sleep_ns(SPAN_CALL_NS);
    struct sp_times tm = sp_span_end(sp);
    uint64_t b = mono();
    double early = (double)(int64_t)(a - tm.t0), late = (double)(int64_t)(tm.t0 + tm.dur - b);
    printf("span (%s): started %.0f ns after the bracket's start, lasted %.0f ns of %.0f\n", what, -early,
           (double)tm.dur, (double)(b - a));
    CHECK(early < SPAN_SLACK_NS, "%s: the span starts %.0f ns before the call", what, early);
    CHECK(late < SPAN_SLACK_NS, "%s: the span ends %.0f ns after the call", what, late);
    CHECK(tm.dur + SPAN_SLACK_NS >= SPAN_CALL_NS, "%s: a %llu ns call lasted %llu ns", what,
          (unsigned long long)SPAN_CALL_NS, (unsigned long long)tm.dur);
}

/* A segment that reads bn at tick bt (as clock.c publishes it) converts
 * a tick before bt (a call that began before the segment converting it
 * was published) backwards, as one after it forwards; so with ticks
 * whose product with the rate passes 2^64 (years of uptime), and with an
 * offset below zero (a TSC that counted before CLOCK_MONOTONIC began). */
static void ticks_around_a_segment(void)
{
    const uint64_t k = 3000000000ull;
    const uint64_t m = (uint64_t)(0.3 * 4294967296.0); /* 0.3 ns a tick */
    const uint64_t ticks[] = {1000000000000ull, 1ull << 62, 9000000000000000000ull};
    const uint64_t nss[] = {500000000000ull, 1000000000ull, 123456789ull};
    for (int i = 0; i < 3; i++) {
        uint64_t bt = ticks[i], bn = nss[i];
        struct sp_clock_seg s = {m, bn - (uint64_t)(((unsigned __int128)bt * m) >> 32)};
        double at = (double)(int64_t)(sp_clock_apply(s, bt) - bn);
        double after = (double)(int64_t)(sp_clock_apply(s, bt + k) - bn);
        double before = (double)(int64_t)(sp_clock_apply(s, bt - k) - bn);
        CHECK(at == 0, "tick %llu: the segment's own tick reads %.0f ns off", (unsigned long long)bt, at);
        CHECK(after > 0.9e9 - 2 && after < 0.9e9 + 2, "3e9 ticks after: %.0f ns", after);
        CHECK(before > -0.9e9 - 2 && before < -0.9e9 + 2, "3e9 ticks before: %.0f ns", before);
    }
}

static void tsc_tracks_monotonic(void)
{
#if defined(__x86_64__)
    setenv("SCALEPROF_CLOCK", "tsc", 1);
    sp_clock_init();
    if (!cpuinfo_has_flag(" avx")) {
        /* forcing the TSC cannot override the atomicity its segment needs */
        CHECK(strstr(sp_clock_describe(), "no AVX") != NULL, "forced without AVX: %s", sp_clock_describe());
        printf("tsc: no AVX on this CPU: %s\n", sp_clock_describe());
        return;
    }
    CHECK(!strncmp(sp_clock_describe(), "tsc", 3), "forced: %s", sp_clock_describe());
    uint64_t start = mono();
    double n = 0, worst = 0, lo = 1e18, hi = -1e18;
    while (mono() - start < RUN_NS) {
        sp_clock_tick();
        int ok;
        double d = difference(&ok);
        if (ok && sp_clock_tsc && mono() - start > SP_TEST_SETTLE_NS) {
            n++;
            lo = d < lo ? d : lo;
            hi = d > hi ? d : hi;
            if (d > worst || -d > worst)
                worst = d < 0 ? -d : d;
        }
        sleep_ns(TICK_NS);
    }
    CHECK(sp_clock_tsc, "the TSC was never calibrated");
    CHECK(n > 50, "too few narrow brackets (%.0f): machine too loaded", n);
    double rate;
    int64_t corr;
    unsigned segs;
    sp_clock_stats(&rate, &corr, &segs);
    printf("tsc: %.0f samples over %.1f s, differences to CLOCK_MONOTONIC within [%.0f, %.0f] ns "
           "(bracket error included); %.4f ns per tick, %u segments, largest correction %lld ns\n",
           n, (double)RUN_NS / 1e9, lo, hi, rate, segs, (long long)corr);
    CHECK(worst < BOUND_NS, "sp_now() was %.0f ns from CLOCK_MONOTONIC", worst);
    CHECK(hi - lo < BOUND_NS, "the difference moved by %.0f ns: a drift", hi - lo);
    CHECK(segs >= 3, "the discipline ran %u times", segs);
    span_brackets_a_call("tsc", 0);
    /* last: the TSC stays off for the process */
    span_brackets_a_call("tsc turned off during the call", 1);
    CHECK(sp_clock_notsc && !sp_clock_on, "the TSC is still the clock");
#else
    printf("tsc: not this architecture, skipped\n");
#endif
}

static void fallback_is_clock_gettime(void)
{
    setenv("SCALEPROF_CLOCK", "monotonic", 1);
    sp_clock_init();
    CHECK(!strncmp(sp_clock_describe(), "monotonic", 9), "%s", sp_clock_describe());
    for (int i = 0; i < 5; i++) {
        sp_clock_tick();
        sleep_ns(TICK_NS * 3);
    }
    CHECK(!sp_clock_tsc, "the fallback uses the TSC");
    uint64_t a = mono(), t = sp_now(), b = mono();
    CHECK(a <= t && t <= b, "fallback reads CLOCK_MONOTONIC");
    span_brackets_a_call("clock_gettime", 0);
    printf("fallback: %s\n", sp_clock_describe());
}

static void detection_follows_cpuinfo(void)
{
    unsetenv("SCALEPROF_CLOCK");
    sp_clock_init();
    int tsc = !strncmp(sp_clock_describe(), "tsc", 3);
#if defined(__x86_64__)
    CHECK(tsc == cpuinfo_has_invariant_tsc(), "chose %s, cpuinfo says %d", sp_clock_describe(),
          cpuinfo_has_invariant_tsc());
#else
    CHECK(!tsc, "no TSC here");
#endif
    printf("this machine: %s\n", sp_clock_describe());
}

int main(void)
{
    ticks_around_a_segment();
    detection_follows_cpuinfo();
    fallback_is_clock_gettime();
    tsc_tracks_monotonic();
    return 0;
}
