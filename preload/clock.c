/*
 * clock.c - the recorder's clock: CLOCK_MONOTONIC nanoseconds, read from
 * the TSC where the CPU keeps it invariant.
 *
 * A recorded call reads the clock twice, and clock_gettime costs 25-35 ns
 * on the VMs we measure on, rdtsc about 10.  Where the CPU says its TSC is
 * invariant (CPUID 80000007h EDX[8], nonstop_tsc in /proc/cpuinfo: it ticks at
 * one rate in every power state and on every core), sp_now() reads the TSC
 * and converts it at once: ns = off + tsc * mult / 2^32.
 * Every time in a trace is therefore still CLOCK_MONOTONIC ns, for every
 * field and every reader, and the CUPTI timestamp callback (which must
 * return nanoseconds: CUPTI and the sim place GPU records on the host
 * clock with an offset, not a rate) returns the same clock.  Storing raw
 * ticks instead would put host and GPU times of one trace on two clocks.
 *
 * The conversion is disciplined, not fixed: a background thread (the trace
 * service thread, after each compression pass) calls sp_clock_tick(), which at most
 * once per SP_CLOCK_PERIOD_NS reads a (tsc, CLOCK_MONOTONIC) pair (the
 * narrowest of a few bracketed reads), measures the rate over everything
 * since the first pair (the error of a rate is the pairs' error over the
 * baseline, so it shrinks as the process runs), and starts a new segment
 * that begins where the current one is now (no jump) and steers the
 * difference it found to zero over the next period.  The difference to
 * CLOCK_MONOTONIC is therefore bounded by what one period's rate error and
 * one pair's error make, and does not grow with the run: the drift test
 * (tests/preload/test_clock.c) measures it.
 *
 * Until the second pair the TSC's rate is unknown, so sp_now() reads
 * clock_gettime; so it does where there is no invariant TSC (VMs that hide
 * it, other architectures), and when SCALEPROF_CLOCK=monotonic.
 * SCALEPROF_CLOCK=tsc uses the TSC even without the flags (for tests).
 * The trace header says which (TLV SP_TLV_CLOCK, shown by `scaleprof
 * dump`).  The second pair is read SP_CLOCK_FIRST_NS (5 ms) after the
 * first, and the rate refined SP_CLOCK_SECOND_NS (50 ms) after that, both
 * on the recorder's service thread (fd.c, which asks sp_clock_due() when
 * to wake): a process's first 50 ms are when it does most of its I/O
 * (imports, opening datasets), and each call read clock_gettime twice
 * while the first rate waited 50 ms.  A 5 ms rate from pairs this narrow
 * (the vDSO's clock_gettime reads the TSC itself) is within 2 ppm of a
 * 200 ms one, measured: under 0.1 us by the time the refined rate steers
 * it out.  From then on the compressor's passes keep the period.
 *
 * Hot path: one load of sp_clock_on (0: clock_gettime), rdtsc, one
 * 16-byte load of the segment (its rate and offset), a 64x64->128-bit
 * multiply.  A timed call (struct sp_span, preload.h) reads only the tick
 * at its start, and at its end the tick and the segment once: both ends
 * are converted with that one load, the start to ns and the duration with
 * its rate.  A segment is written with one 16-byte store and read with
 * one 16-byte load, which every CPU with AVX makes atomic (preload.h's
 * struct sp_clock_seg): a reader sees the old segment or the new one,
 * never half of each, so there is no sequence number to read twice and
 * nothing to retry.  Where AVX is missing (x86-64 CPUs from before 2011)
 * the clock is clock_gettime.  No lock, no system call, no allocation.
 *
 * Where rdtsc traps.  A job may turn the TSC off for itself:
 * prctl(PR_SET_TSC, PR_TSC_SIGSEGV) (record-and-replay tools, sandboxes),
 * and the next rdtsc is a SIGSEGV.  That signal is the job's, not ours to
 * catch, so the mode is tested instead: PR_GET_TSC at load (before the
 * first clock read) and before the first rdtsc of a calibration (on the
 * service thread, which inherits the mode of the thread that started
 * it), and prctl is interposed (proc.c), so that a PR_SET_TSC to PR_TSC_SIGSEGV
 * from any thread turns the TSC off for the whole process before the
 * mode changes (the mode is per thread and inherited by the threads
 * created after; one flag for all is simpler and costs only speed).  From
 * then on sp_now() reads CLOCK_MONOTONIC with the system call: the vDSO's
 * clock_gettime reads the TSC too where it is the kernel's clocksource,
 * and traps the same way.  A job that changes the mode with a raw system
 * call is not seen.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/prctl.h>

#include "preload.h"

#define SP_CLOCK_PERIOD_NS 1000000000ull /* a new segment at most every second */
#define SP_CLOCK_FIRST_NS 5000000ull     /* the first rate: 5 ms after the first pair */
#define SP_CLOCK_SECOND_NS 50000000ull   /* refined 50 ms later, then every period */
#define SP_CLOCK_EARLY_SEGMENTS 2        /* the first rate's and the refined one's */
#define SP_CLOCK_PAIR_TRIES 5
#define SP_CLOCK_MAX_SLEW 0.0005 /* steer by at most 500 ppm */

struct sp_clock_seg sp_clock_live;
volatile int sp_clock_tsc;
volatile int sp_clock_on;
volatile int sp_clock_notsc;

static struct {
    int wanted;         /* the TSC will be used once calibrated */
    const char *why;    /* the header's reason */
    uint64_t tsc0, ns0; /* the first pair */
    uint64_t last_ns;   /* CLOCK_MONOTONIC of the last pair */
    int64_t max_err;    /* largest difference found at a pair, ns */
    unsigned segments;
    double rate; /* ns per tick, measured */
} ck;

static uint64_t mono_ns(void)
{
    return sp_clock_gettime_ns();
}

static const char k_why_notsc[] = "monotonic (rdtsc traps: prctl PR_SET_TSC, PR_TSC_SIGSEGV), read with the system call";

/* No rdtsc from now on, in any thread: a segment published concurrently
 * is withdrawn by its publisher (publish() checks the flag after). */
void sp_clock_tsc_off(void)
{
    __atomic_store_n(&sp_clock_notsc, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&ck.wanted, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&sp_clock_on, 0, __ATOMIC_SEQ_CST);
    ck.why = k_why_notsc;
}

void sp_clock_check_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    int mode = 0;
    if (syscall(SYS_prctl, PR_GET_TSC, &mode, 0L, 0L, 0L) == 0 && mode == PR_TSC_SIGSEGV)
        sp_clock_tsc_off();
#endif
}


#if defined(__x86_64__)
#include <cpuid.h>
/* CPUID leaf 0x80000007, EDX bit 8: the invariant TSC, which the kernel
 * shows as nonstop_tsc (and, with it, constant_tsc) in /proc/cpuinfo.
 * An instruction, where reading /proc/cpuinfo cost every traced process
 * 30-50 us. */
static int cpu_invariant_tsc(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d))
        return 0;
    return (d >> 8) & 1;
}

/* CPUID.01H:ECX bit 28: AVX, and with it the atomic 16-byte loads and
 * stores the segment relies on (preload.h). */
static int cpu_avx(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && ((c >> 28) & 1);
}
#endif

/* A (tsc, CLOCK_MONOTONIC) pair: the TSC read between two clock reads,
 * the narrowest bracket of a few. */
static void read_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < SP_CLOCK_PAIR_TRIES; i++) {
        uint64_t a = mono_ns(), t = sp_rdtsc(), b = mono_ns();
        if (b - a < best) {
            best = b - a;
            *tsc = t;
            *ns = a + (b - a) / 2;
        }
    }
}

void sp_clock_init(void)
{
    const char *env = getenv("SCALEPROF_CLOCK");
    sp_clock_tsc = 0;
    sp_clock_on = 0;
    ck.wanted = 0;
    sp_clock_check_tsc(); /* this thread's mode is the one it was started with */
    if (sp_clock_notsc) {
        ck.why = k_why_notsc;
        return;
    }
#if defined(__x86_64__)
    if (env && !strcmp(env, "monotonic"))
        ck.why = "monotonic (SCALEPROF_CLOCK=monotonic)";
    else if (!cpu_avx())
        ck.why = "monotonic (no AVX: CPUID 01h ECX[28] clear, so no atomic 16-byte load for the TSC's conversion)";
    else if (env && !strcmp(env, "tsc"))
        ck.wanted = 1, ck.why = "tsc (SCALEPROF_CLOCK=tsc), calibrated against CLOCK_MONOTONIC";
    else if (cpu_invariant_tsc())
        ck.wanted = 1, ck.why = "tsc (invariant: CPUID 80000007h EDX[8], constant_tsc nonstop_tsc), calibrated against CLOCK_MONOTONIC";
    else
        ck.why = "monotonic (no invariant TSC: CPUID 80000007h EDX[8] clear, no nonstop_tsc)";
#else
    (void)env;
    ck.why = "monotonic (the TSC is used on x86-64 only)";
#endif
    if (ck.wanted) {
        read_pair(&ck.tsc0, &ck.ns0);
        ck.last_ns = ck.ns0;
    }
    ck.max_err = 0;
    ck.segments = 0;
}

const char *sp_clock_describe(void)
{
    return ck.why ? ck.why : "monotonic";
}

/* Publishes a segment that reads `ns` at `tsc`, with `rate` ns per tick:
 * one 16-byte store (preload.h's struct sp_clock_seg), then the TSC on. */
static void publish(uint64_t tsc, uint64_t ns, double rate)
{
    uint64_t mult = (uint64_t)(rate * 4294967296.0);
    uint64_t off = ns - (uint64_t)(((unsigned __int128)tsc * mult) >> 32);
#if defined(__x86_64__)
    typedef uint64_t sp_v2u64 __attribute__((vector_size(16)));
    sp_v2u64 v = {mult, off};
    __asm__ volatile("movdqa %1, %0"
                     : "=m"(sp_clock_live)
                     : "x"(v)
                     : "memory");
#else
    sp_clock_live = (struct sp_clock_seg){mult, off};
#endif
    __atomic_store_n(&sp_clock_on, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&sp_clock_notsc, __ATOMIC_SEQ_CST))
        __atomic_store_n(&sp_clock_on, 0, __ATOMIC_SEQ_CST); /* turned off meanwhile */
    __atomic_store_n(&ck.segments, ck.segments + 1, __ATOMIC_RELAXED);
}

/* How long after the last pair the next is due. */
static uint64_t next_wait(void)
{
    if (!sp_clock_tsc)
        return SP_CLOCK_FIRST_NS;
    unsigned segments = __atomic_load_n(&ck.segments, __ATOMIC_RELAXED);
    return segments < SP_CLOCK_EARLY_SEGMENTS ? SP_CLOCK_SECOND_NS : SP_CLOCK_PERIOD_NS;
}

/* Read by the service thread while a tick may be writing: each word is
 * read whole, and a stale one costs at most an early wake-up. */
uint64_t sp_clock_due(void)
{
    if (!ck.wanted || __atomic_load_n(&ck.segments, __ATOMIC_RELAXED) >= SP_CLOCK_EARLY_SEGMENTS)
        return UINT64_MAX; /* the compressor's passes keep the period */
    return __atomic_load_n(&ck.last_ns, __ATOMIC_RELAXED) + next_wait();
}

/* Two threads may tick (the service thread early on, the compressor);
 * one at a time does the work, the other goes on. */
static atomic_flag g_ticking = ATOMIC_FLAG_INIT;

static void tick(void)
{
    if (sp_clock_notsc)
        return;
    uint64_t now = mono_ns();
    if (now - ck.last_ns < next_wait())
        return;
    uint64_t tsc, ns;
    read_pair(&tsc, &ns);
    if (tsc <= ck.tsc0 || ns <= ck.ns0)
        return; /* a TSC that went back: keep what we have */
    ck.rate = (double)(ns - ck.ns0) / (double)(tsc - ck.tsc0);
    __atomic_store_n(&ck.last_ns, ns, __ATOMIC_RELAXED);
    if (!sp_clock_tsc) {
        publish(tsc, ns, ck.rate);
        __atomic_store_n(&sp_clock_tsc, 1, __ATOMIC_RELEASE);
        return;
    }
    /* Continue from where the current segment is now, steering the
     * difference it shows to zero over the next period. */
    uint64_t at = sp_clock_from_tsc(tsc);
    int64_t err = (int64_t)(at - ns);
    if (err > ck.max_err || -err > ck.max_err)
        ck.max_err = err < 0 ? -err : err;
    double slew = -(double)err / (double)SP_CLOCK_PERIOD_NS;
    if (slew > SP_CLOCK_MAX_SLEW)
        slew = SP_CLOCK_MAX_SLEW;
    if (slew < -SP_CLOCK_MAX_SLEW)
        slew = -SP_CLOCK_MAX_SLEW;
    publish(tsc, at, ck.rate * (1.0 + slew));
}

/* A span's end (preload.h) other than a tick: the end is clock_gettime
 * (before calibration, and once the TSC is off: no rdtsc).  A start that
 * is a tick is converted with the current segment, which still holds the
 * last calibration (turning the TSC off only clears sp_clock_on); one
 * after the end (a clock that went back) makes the call start at its
 * end, with no duration. */
struct sp_times sp_span_end_slow(uint64_t start)
{
    int e = errno; /* the interposers' fast path leaves errno alone */
    uint64_t t1 = sp_clock_gettime_ns();
    uint64_t s = start & SP_SPAN_TSC ? sp_clock_from_tsc(start) : start >> 1;
    if (s > t1)
        s = t1; /* a clock that went back */
    errno = e;
    return (struct sp_times){s, t1 - s};
}

/* In a forked child only the forking thread runs: a tick the parent's
 * compressor was in is nobody's. */
void sp_clock_after_fork(void)
{
    atomic_flag_clear(&g_ticking);
}

void sp_clock_tick(void)
{
    if (!__atomic_load_n(&ck.wanted, __ATOMIC_ACQUIRE) || atomic_flag_test_and_set_explicit(&g_ticking, memory_order_acquire))
        return;
    tick();
    atomic_flag_clear_explicit(&g_ticking, memory_order_release);
}

void sp_clock_stats(double *ns_per_tick, int64_t *max_err_ns, unsigned *segments)
{
    *ns_per_tick = ck.rate;
    *max_err_ns = ck.max_err;
    *segments = ck.segments;
}
