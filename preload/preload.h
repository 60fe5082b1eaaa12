/*
 * preload.h - what the interposers of libscaleprof.so share.
 *
 * core.c owns the process's single trace writer and everything about its
 * lifecycle (lazy init on the first event, configuration from the
 * environment, a new file after fork or exec, close at exit).  Every other
 * file interposes one family of calls and reports what it saw through
 * sp_emit().  The rules of principle 1 ("never harm the job") hold for all
 * of them:
 *
 *   - call the real function first-class: resolve it once with
 *     sp_real("name"), call it even when recording is off or failed;
 *   - preserve errno: save it right after the real call, restore it right
 *     before returning;
 *   - no lock, no malloc, no syscall beyond one clock read on a hot path;
 *   - re-entry: our own code may call interposed functions (our writes,
 *     dlsym allocating); wrap anything that can recurse in SP_GUARD_ENTER /
 *     SP_GUARD_LEAVE and record nothing when already inside.
 */
#ifndef SP_PRELOAD_H
#define SP_PRELOAD_H

#include <stdint.h>
#include <time.h>

#include "sprof.h"

#define SP_EXPORT __attribute__((visibility("default")))
#define SP_LIKELY(x) __builtin_expect(!!(x), 1)
#define SP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Re-entry depth of the calling thread.  initial-exec TLS: reading it never
 * calls into the dynamic loader (which could allocate). */
extern __thread int sp_guard_depth __attribute__((tls_model("initial-exec")));
#define SP_GUARD_ENTER() (sp_guard_depth++ == 0)
#define SP_GUARD_LEAVE() ((void)sp_guard_depth--)

/* Non-zero while events should be recorded: configured, enabled, not
 * failed, and inside the SCALEPROF_STEPS window.  A plain load. */
extern volatile int sp_recording;

/* The recorder's clock (clock.c): CLOCK_MONOTONIC ns, from the TSC where
 * it is invariant and calibrated, else from clock_gettime. */
struct sp_clock_seg {
    uint64_t seq; /* odd while being rewritten */
    uint64_t base_tsc, base_ns;
    uint64_t mult; /* ns per tick, times 2^32 */
};
extern struct sp_clock_seg sp_clock_segs[2];
extern volatile unsigned sp_clock_cur; /* the segment in use */
extern volatile int sp_clock_tsc;      /* 1 once the TSC is calibrated */

static inline uint64_t sp_rdtsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
#else
    return 0;
#endif
}

static inline uint64_t sp_clock_gettime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A TSC reading in ns of the current segment; 0 when the segment was
 * rewritten while read (the caller reads clock_gettime instead). */
static inline uint64_t sp_clock_from_tsc(uint64_t tsc)
{
    const struct sp_clock_seg *s =
        &sp_clock_segs[__atomic_load_n(&sp_clock_cur, __ATOMIC_ACQUIRE) & 1u];
    uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    uint64_t bt = __atomic_load_n(&s->base_tsc, __ATOMIC_RELAXED);
    uint64_t bn = __atomic_load_n(&s->base_ns, __ATOMIC_RELAXED);
    uint64_t m = __atomic_load_n(&s->mult, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (SP_UNLIKELY((seq & 1) || __atomic_load_n(&s->seq, __ATOMIC_RELAXED) != seq))
        return 0;
    /* signed: another core's TSC may read a little before the base */
    __int128 d = (__int128)(int64_t)(tsc - bt) * (__int128)m;
    return bn + (uint64_t)(int64_t)(d >> 32);
}

static inline uint64_t sp_now(void)
{
    if (SP_LIKELY(sp_clock_tsc)) {
        uint64_t ns = sp_clock_from_tsc(sp_rdtsc());
        if (SP_LIKELY(ns))
            return ns;
    }
    return sp_clock_gettime_ns();
}

/* clock.c: choose the clock (at trace open), recalibrate (background
 * thread, often: it does work at most once a second), say which in words
 * (for the header), and the calibration's figures. */
void sp_clock_init(void);
void sp_clock_tick(void);
const char *sp_clock_describe(void);
void sp_clock_stats(double *ns_per_tick, int64_t *max_err_ns, unsigned *segments);

/* Resolve the next definition of `name` (RTLD_NEXT), once per call site:
 * callers cache the result in a static.  Safe during early init. */
void *sp_real(const char *name);

/* Append an event to this process's trace.  Initializes the recorder on
 * first use (and after fork in the child).  Does nothing when not
 * recording; never blocks; preserves errno. */
void sp_emit(const struct sp_event *ev);

/* Intern a string in the process's trace; 0 when not recording. */
uint32_t sp_intern(const char *s);

/* Turn recording off for good after an internal error: one line on stderr
 * ("scaleprof: ... ; recording disabled, the job continues"). */
void sp_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr prefixed "scaleprof: ", unless SCALEPROF_QUIET=1. */
void sp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Configuration from the environment, read once at init. */
struct sp_config {
    char dir[1024];       /* SCALEPROF_DIR, default ./scaleprof-out */
    int enabled;          /* SCALEPROF_ENABLE != 0 */
    int mode;             /* SCALEPROF_MODE, default 0600 */
    long step_first;      /* SCALEPROF_STEPS=A:B, -1 when unset */
    long step_last;
    int cpu_hz;           /* SCALEPROF_CPU_HZ, default 10, 0 off */
    int cupti;            /* SCALEPROF_CUPTI != 0 */
    int quiet;            /* SCALEPROF_QUIET */
};
const struct sp_config *sp_config(void);

/* Process lifecycle, called by proc.c's interposers (and atexit/atfork). */
void sp_core_atfork_prepare(void);
void sp_core_atfork_parent(void);
void sp_core_atfork_child(void);
void sp_core_before_exec(void);     /* close (flush) the trace: exec replaces us */
void sp_core_exec_failed(void);     /* exec returned: reopen a trace */
void sp_core_shutdown(int status);  /* flush and close; idempotent */

/* Rank and world size learned late (from an NCCL communicator); the first
 * communicator of a process sets them when the environment did not. */
void sp_core_set_rank(int rank, int world_size, int device);

/* Step counting for SCALEPROF_STEPS: nvtx.c calls this at each step-marker
 * push.  Without markers there are no steps to count (docs/preload.md). */
void sp_core_step_boundary(void);

/* Called by the CUPTI part when its background flush must run before the
 * file is closed (exit, exec).  Registered by cupti.c; NULL when absent. */
extern void (*sp_core_flush_hook)(int final);

/* ---- added by the core for its own files (core.c, proc.c, io.c, cpu.c) ---- */

/* Bumped whenever this process starts a new trace file (first open, fork
 * child, reopen after a failed exec): ids cached from an older file (such
 * as interned paths) are stale when their generation differs. */
extern volatile unsigned sp_generation;

/* Always -1: the recorder holds no fd in the job's descriptor table (fd.c).
 * Kept while io.c's close/close_range/dup2 still compare against it. */
extern volatile int sp_trace_fd;

/* No longer needed (the trace has no fd the job can meet); they do nothing. */
void sp_core_yield_trace_fd(void);
void sp_core_reopen(void);

/* The exit status exit() was called with, for the PROC EXIT event written
 * by the atexit handler (main's return goes through libc's internal exit). */
void sp_core_note_exit_status(int status);

/* sp_core_before_exec naming the program, for the PROC EXEC event. */
void sp_core_before_exec_path(const char *path);

/* Pause (1) or resume (0) recording: the control file. */
void sp_core_control(int pause);

/* cpu.c: the low-rate CPU sampler and the control file, run by fd.c's
 * service thread.  sp_cpu_start makes sure that thread runs (at load, and
 * in a forked child at its first event: sp_cpu_pending); sp_cpu_period_ns
 * is the sampling period, 0 when SCALEPROF_CPU_HZ=0; sp_cpu_tick takes one
 * sample and looks at the control file. */
extern volatile int sp_cpu_pending;
void sp_cpu_start(void);
void sp_cpu_after_fork(void);
uint64_t sp_cpu_period_ns(void);
void sp_cpu_tick(void);

/* fd.c: the service thread, the only one that opens, uses and closes the
 * recorder's file descriptors, in a descriptor table of its own.
 * sp_fd_run runs fn(arg) there and waits for it (inline when called from
 * that thread); 0, or -1 when the thread cannot run (fn not called). */
typedef void (*sp_fd_work)(void *arg);
int sp_fd_run(sp_fd_work fn, void *arg);
void sp_fd_start(void);
int sp_fd_is_service_thread(void);
void sp_fd_after_fork(void);

/* io.c: fcntl(F_DUPFD...) in fd.c copied `from` to `to`. */
void sp_io_fd_copied(int from, int to);

#endif
