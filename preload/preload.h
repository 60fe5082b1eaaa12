/*
 * preload.h - what the interposers of libscaleprof.so share.
 *
 * core.c owns the process's single trace writer and everything about its
 * lifecycle (lazy init on the first event, configuration from the
 * environment, a new file after fork or exec, close at exit); fd.c runs
 * the recorder's service thread, which does its file work; clock.c,
 * limits.c and intern.c are what they name.  Every other file interposes
 * one family of calls and reports what it saw through sp_emit().  The
 * rules of principle 1 ("never harm the job") hold for all of them:
 *
 *   - call the real function first-class: resolve it once with
 *     sp_real("name"), call it even when recording is off or failed;
 *   - preserve errno: save it right after the real call, restore it right
 *     before returning;
 *   - no lock, no malloc, no syscall beyond one clock read on a hot path;
 *   - re-entry: our own code may call interposed functions (our writes,
 *     dlsym allocating); wrap anything that can recurse in SP_GUARD_ENTER /
 *     SP_GUARD_LEAVE and record nothing while sp_guard_held().
 *
 * How a real function is found, and what happens when it is missing, is
 * written once, in interpose.h.
 */
#ifndef SP_PRELOAD_H
#define SP_PRELOAD_H

#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "append.h" /* sp_writer_tls: the guard lives in it */
#include "sprof.h"

/* Everything declared here is the library's own: hidden, so that its
 * variables are read directly, not through the GOT. */
#pragma GCC visibility push(hidden)

#define SP_EXPORT __attribute__((visibility("default")))
#define SP_LIKELY(x) __builtin_expect(!!(x), 1)
#define SP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The re-entry guard.  One word per thread: 0 when free, else the stack
 * address (the caller's frame, __builtin_dwarf_cfa) of the function that
 * took it, plus a count of the holders nested inside that one.
 * initial-exec TLS: reading it never calls into the dynamic loader (which
 * could allocate).
 *
 * The guard must survive a job that leaves a guarded call without
 * returning: alarm() + siglongjmp out of a blocking call, the usual way to
 * put a timeout on it.  The interposer's epilogue never runs, and a plain
 * counter would stay set, silencing the thread for good.  So a set guard is
 * believed only while the frame that took it can still be live: anything
 * running inside it on the same stack is deeper (a lower address, stacks
 * grow down), so a call made at or above that frame's address comes after
 * the holder was jumped out of, and the guard is dropped (sp_guard_recheck).
 * The one exception is a signal handler on an alternate stack
 * (sigaltstack), whose addresses say nothing about the interrupted stack:
 * there the guard is kept.  The hot path pays nothing for this: the frame
 * is compared only when the guard is set.
 *
 * A call made after such a jump from a frame deeper than the lost holder's
 * still sees the guard as held, until the thread's next interposed call
 * from that level or above (a training loop makes one every iteration).
 * io.c and proc.c never hold the guard across the real call, only around
 * their own recording, so a jump out of a blocking read, poll or recv
 * never leaves it set; the GPU side must hold it across (NCCL's own
 * runtime calls are not the job's) and relies on the frame check. */
/* The guard's frame is the writer's thread-local slot state's host word
 * (format/append.h): the fast path of a recorded call reads it, the
 * in-flight counter (emit.h) and the slot from one thread-pointer offset. */
#define sp_guard_frame (sp_writer_tls.host_word)
extern __thread int sp_guard_nested __attribute__((tls_model("initial-exec")));

/* Threads of our own (CPU sampler, CUPTI's flusher) hold the guard for
 * their whole life: no frame is above this one. */
#define SP_GUARD_FOREVER UINTPTR_MAX

/* Out of line, rare: the guard looks stale from `frame`; keep it when on
 * an alternate signal stack, else drop it.  Returns 1 when still held. */
int sp_guard_recheck(uintptr_t frame);

#define SP_FRAME() ((uintptr_t)__builtin_dwarf_cfa())

/* Non-zero once the process has made a child that runs on a thread's
 * thread-local storage, the guard included (proc.c's clone, core.c):
 * every guard check is then sp_guard_lent's, which says "held" to a
 * thread on another's storage and counts its call as a dropped event, so
 * it neither records nor touches its lender's guard. */
extern volatile int sp_tls_lent;
int sp_guard_lent(uintptr_t frame);

/* Is the calling thread inside scaleprof (or inside a real call whose
 * nested calls are not the job's)?  A stale guard is dropped here. */
static inline __attribute__((always_inline)) int sp_guard_held(void)
{
    uintptr_t holder = sp_guard_frame;
    if (SP_LIKELY(holder == 0) && SP_LIKELY(!sp_tls_lent))
        return 0;
    uintptr_t frame = SP_FRAME();
    if (SP_UNLIKELY(sp_tls_lent))
        return sp_guard_lent(frame);
    return SP_LIKELY(frame < holder) || sp_guard_recheck(frame);
}

/* Take the guard; 1 when this is the outermost holder. */
static inline __attribute__((always_inline)) int sp_guard_enter(void)
{
    uintptr_t frame = SP_FRAME();
    if (SP_LIKELY(sp_guard_frame == 0) || (frame >= sp_guard_frame && !sp_guard_recheck(frame))) {
        sp_guard_frame = frame;
        return 1;
    }
    sp_guard_nested++;
    return 0;
}

static inline __attribute__((always_inline)) void sp_guard_leave(void)
{
    if (sp_guard_nested > 0)
        sp_guard_nested--;
    else
        sp_guard_frame = 0;
}

/* The cheap pair for an interposer that has just seen sp_guard_held() == 0
 * and ran none of our code since (only the real call, whose nested guards
 * are balanced): it is the outermost holder.  A guard a signal handler
 * left behind in between is replaced. */
static inline __attribute__((always_inline)) void sp_guard_take(void)
{
    sp_guard_frame = SP_FRAME(); /* free means nothing nested: no count to reset */
}

static inline __attribute__((always_inline)) void sp_guard_drop(void)
{
    sp_guard_frame = 0;
}

/* A thread of ours: guarded for good. */
static inline void sp_guard_forever(void)
{
    sp_guard_frame = SP_GUARD_FOREVER;
}

#define SP_GUARD_ENTER() sp_guard_enter()
#define SP_GUARD_LEAVE() sp_guard_leave()

/* Non-zero while events should be recorded: configured, enabled, not
 * failed, and inside the SCALEPROF_STEPS window.  A plain load. */
extern volatile int sp_recording;

/* The recorder's clock (clock.c): CLOCK_MONOTONIC ns, from the TSC where
 * it is invariant and calibrated, else from clock_gettime.
 *
 * A segment converts a tick: ns = off + tsc * mult / 2^32, modulo 2^64
 * (mult: ns per tick, times 2^32).  It is two words, 16-aligned, written
 * with one 16-byte store and read with one 16-byte load (MOVDQA), which
 * Intel and AMD both guarantee to be single-copy atomic on every CPU that
 * reports AVX (CPUID.01H:ECX[28]; Intel SDM vol. 3A 9.1.1, AMD APM vol. 2
 * 7.3.2, for aligned accesses to cacheable memory): a reader sees the old
 * segment or the new one whole, with no sequence number to check and no
 * retry.  So the TSC is the clock only on a CPU with AVX (clock.c). */
struct sp_clock_seg {
    uint64_t mult, off;
} __attribute__((aligned(16)));
/* The current segment; never cleared once written (a tick read before
 * the TSC was turned off is still converted with it). */
extern struct sp_clock_seg sp_clock_live;
extern volatile int sp_clock_tsc; /* 1 once the TSC is calibrated */
/* 1 while the TSC is the clock: calibrated, on a CPU with AVX, and rdtsc
 * not turned off; the one load that decides between rdtsc and
 * clock_gettime. */
extern volatile int sp_clock_on;
/* 1 when rdtsc may trap in this process (prctl(PR_SET_TSC,
 * PR_TSC_SIGSEGV) by the job, or inherited): no rdtsc from then on, and
 * the clock is read with the system call, since the vDSO's clock_gettime
 * reads the TSC itself where the TSC is the kernel's clocksource. */
extern volatile int sp_clock_notsc;

static inline uint64_t sp_rdtsc(void)
{
#if defined(__x86_64__)
    /* 64-bit outputs: rdtsc clears the registers' upper halves, so the
     * low half needs no zero extension of its own */
    uint64_t lo, hi;
    __asm__ __volatile__("rdtsc"
                         : "=a"(lo), "=d"(hi));
    return hi << 32 | lo;
#elif defined(__i386__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc"
                         : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
#else
    return 0;
#endif
}

/* clock_gettime(id), through the system call when rdtsc traps. */
static inline uint64_t sp_clock_read_ns(clockid_t id)
{
    struct timespec ts;
    if (SP_UNLIKELY(sp_clock_notsc))
        syscall(SYS_clock_gettime, id, &ts);
    else
        clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t sp_clock_gettime_ns(void)
{
    return sp_clock_read_ns(CLOCK_MONOTONIC);
}

/* The current segment, read whole (see struct sp_clock_seg): only where
 * sp_clock_on was seen set, so on a CPU with AVX (and SSE4.1's pextrq). */
static inline __attribute__((always_inline)) struct sp_clock_seg sp_clock_load(void)
{
    struct sp_clock_seg s;
#if defined(__x86_64__)
    typedef uint64_t sp_v2u64 __attribute__((vector_size(16)));
    sp_v2u64 v;
    __asm__ volatile("movdqa %3, %2\n\t"
                     "movq %2, %0\n\t"
                     "pextrq $1, %2, %1"
                     : "=r"(s.mult), "=r"(s.off), "=&x"(v)
                     : "m"(sp_clock_live));
#else
    /* never read: the TSC is the clock only on x86-64 */
    s.mult = __atomic_load_n(&sp_clock_live.mult, __ATOMIC_RELAXED);
    s.off = __atomic_load_n(&sp_clock_live.off, __ATOMIC_RELAXED);
#endif
    return s;
}

/* ns of `tsc` with segment s: one unsigned 64x64->128-bit multiply. */
static inline __attribute__((always_inline)) uint64_t sp_clock_apply(struct sp_clock_seg s, uint64_t tsc)
{
    return s.off + (uint64_t)(((unsigned __int128)tsc * s.mult) >> 32);
}

/* A TSC reading in ns of the current segment. */
static inline uint64_t sp_clock_from_tsc(uint64_t tsc)
{
    return sp_clock_apply(sp_clock_load(), tsc);
}

static inline __attribute__((always_inline)) int sp_clock_uses_tsc(void)
{
    return __atomic_load_n(&sp_clock_on, __ATOMIC_ACQUIRE) != 0;
}

static inline __attribute__((always_inline)) uint64_t sp_now(void)
{
    if (SP_LIKELY(sp_clock_uses_tsc())) {
        uint64_t tsc = sp_rdtsc();
        return sp_clock_apply(sp_clock_load(), tsc);
    }
    return sp_clock_gettime_ns();
}

/* A timed call, read as two ticks and converted once.  Its start is only
 * a rdtsc (or clock_gettime before the TSC is calibrated, and where it is
 * not the clock); its end reads the tick, then the current segment once
 * (one 16-byte load), and converts the start with it and the duration
 * with its rate, and one word is kept across the real call.  A segment
 * published during the call converts a start read before it, which it
 * continues (clock.c: each segment begins where the last one is at its
 * tick, with a rate at most SP_CLOCK_MAX_SLEW apart: 0.05% of the call's
 * duration).  Each call reads its own start: the time between two calls
 * is the job's, never the call's.
 *
 * The word: the start's tick with bit 0 set (a tick's worth of error at
 * most), or its clock_gettime ns shifted left by one (bit 0 clear; ns
 * since boot stay below 2^63 for 292 years). */
struct sp_span {
    uint64_t v;
};
#define SP_SPAN_TSC 1u

static inline __attribute__((always_inline)) void sp_span_begin(struct sp_span *sp)
{
    if (SP_LIKELY(sp_clock_uses_tsc()))
        sp->v = sp_rdtsc() | SP_SPAN_TSC;
    else
        sp->v = sp_clock_gettime_ns() << 1;
}

/* A timed call's start (ns) and duration: two words, returned in
 * registers (an out-parameter would keep them in memory on the hot path). */
struct sp_times {
    uint64_t t0, dur;
};

/* sp_span_end when the start or the end is not a tick: a clock_gettime
 * start (the TSC not calibrated yet), or the TSC turned off during the
 * call (clock.c, out of line). */
struct sp_times sp_span_end_slow(uint64_t start);

/* A call that started at tick `start` and ended at tick `tsc1`, read
 * before segment s was loaded, as its start (ns) and duration.  The
 * duration is 0 for a clock that went back (another core's TSC a little
 * behind). */
static inline __attribute__((always_inline)) struct sp_times sp_span_convert(struct sp_clock_seg s, uint64_t start,
                                                                             uint64_t tsc1)
{
    int64_t d = (int64_t)(tsc1 - start);
    return (struct sp_times){sp_clock_apply(s, start), d > 0 ? (uint64_t)(((unsigned __int128)(uint64_t)d * s.mult) >> 32) : 0};
}

/* The call's start (ns) and duration, read right after the real call.  No
 * rdtsc once the TSC may trap (sp_clock_on is clear from then on). */
static inline __attribute__((always_inline)) struct sp_times sp_span_end(struct sp_span sp)
{
    if (SP_LIKELY(sp.v & SP_SPAN_TSC) && SP_LIKELY(sp_clock_uses_tsc())) {
        uint64_t tsc1 = sp_rdtsc();
        return sp_span_convert(sp_clock_load(), sp.v, tsc1);
    }
    return sp_span_end_slow(sp.v);
}

/* clock.c: choose the clock (at trace open), recalibrate (background
 * thread, often: it does work at most once a second), say which in words
 * (for the header), and the calibration's figures. */
void sp_clock_init(void);
void sp_clock_tick(void);
/* Asks the kernel whether rdtsc traps for the calling thread (PR_GET_TSC)
 * and, when it does, turns the TSC off for the process (sp_clock_notsc).
 * At load, before the first clock read, and in sp_clock_init before the
 * first rdtsc. */
void sp_clock_check_tsc(void);
/* No rdtsc from now on, in any thread (proc.c's prctl, before the job's
 * PR_SET_TSC to PR_TSC_SIGSEGV). */
void sp_clock_tsc_off(void);
/* When (CLOCK_MONOTONIC ns) the clock wants sp_clock_tick() from the
 * service thread while it is first calibrated; UINT64_MAX once the
 * compressor's passes suffice, or when the TSC is not used. */
uint64_t sp_clock_due(void);
void sp_clock_after_fork(void);
const char *sp_clock_describe(void);
void sp_clock_stats(double *ns_per_tick, int64_t *max_err_ns, unsigned *segments);

/* Resolve the next definition of `name` (RTLD_NEXT), once per call site:
 * callers cache the result in a static.  Safe during early init. */
void *sp_real(const char *name);

/* Append an event to this process's trace.  Initializes the recorder on
 * first use (and after fork in the child).  Does nothing when not
 * recording; never blocks; preserves errno. */
void sp_emit(const struct sp_event *ev);

/* sp_emit for an interposer that sets errno itself right after (to what
 * the real call left): the same, without saving errno twice per call. */
void sp_emit_raw(const struct sp_event *ev);

/* The head of an event built on a hot path; its type's member is then
 * assigned whole from a compound literal, which clears only that member
 * (a memset would clear the whole union). */
static inline __attribute__((always_inline)) void sp_event_head(struct sp_event *ev, int type, uint64_t t)
{
    ev->type = (uint8_t)type;
    ev->tid = 0;
    ev->t = t;
}

/* A PROC event of `kind` about `pid`, now (its path, when any, is the
 * caller's to add). */
static inline void sp_proc_event(struct sp_event *ev, int kind, int pid, int status)
{
    memset(ev, 0, sizeof *ev);
    ev->type = SP_EV_PROC;
    ev->t = sp_now();
    ev->proc.kind = (uint64_t)kind;
    ev->proc.pid = pid;
    ev->proc.status = status;
}

/* Intern a string in the process's trace; 0 when not recording. */
uint32_t sp_intern(const char *s);

/* Turn recording off for good after an internal error: one line on stderr
 * ("scaleprof: ... ; recording disabled, the job continues"). */
void sp_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr prefixed "scaleprof: ", unless SCALEPROF_QUIET=1. */
void sp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The longest SCALEPROF_DIR used, with its NUL (PATH_MAX): a longer one,
 * or one that cannot be made absolute within it, is refused with a line. */
#define SP_DIR_MAX 4096

/* Configuration from the environment, read once at init (a bad value:
 * one line on stderr, the default used; see core.c). */
struct sp_config {
    char dir[SP_DIR_MAX]; /* SCALEPROF_DIR made absolute, default ./scaleprof-out */
    int enabled;          /* SCALEPROF_ENABLE: 0 or 1 (default) */
    int mode;             /* SCALEPROF_MODE, octal, default 0600 */
    long step_first;      /* SCALEPROF_STEPS=A:B, B included; -1 when unset */
    long step_last;
    int cpu_hz;   /* SCALEPROF_CPU_HZ, 0..SP_CPU_HZ_MAX, default 10, 0 off */
    int cupti;    /* SCALEPROF_CUPTI: 0 or 1 (default) */
    int follow;   /* SCALEPROF_FOLLOW: 0 or 1 (default) */
    int quiet;    /* SCALEPROF_QUIET: 0 (default) or 1 */
    char run[64]; /* SCALEPROF_RUN_ID, else made by the job's first process */
};
#define SP_CPU_HZ_MAX 1000 /* samples a second at most */
const struct sp_config *sp_config(void);

/* Process lifecycle, called by proc.c's interposers (and atexit/atfork). */
void sp_core_atfork_prepare(void);
void sp_core_atfork_parent(void);
void sp_core_atfork_child(void);
/* Close (flush) the trace: exec replaces us.  path names the program, for
 * the PROC EXEC event. */
void sp_core_before_exec_path(const char *path);
void sp_core_exec_failed(void);    /* exec returned: reopen a trace */
void sp_core_shutdown(int status); /* flush and close; idempotent */
/* 1 in a child that shares our memory (vfork, clone(CLONE_VM)) until it
 * execs: it must change nothing the parent would see. */
int sp_core_in_memory_sharing_child(void);
/* SCALEPROF_DIR opened (as core.c opens it for the trace: no symlink of
 * another user's followed, none at all below what exists), without
 * creating anything; an fd of the calling (service) thread's table, or -1. */
int sp_core_open_dir(void);
/* 1 in a vfork child (set by proc.c's vfork on the thread whose memory,
 * TLS included, the child borrows; the parent's other threads see 0):
 * nothing of the recorder's shared state (io.c's fd table) is changed. */
extern __thread int sp_in_vfork __attribute__((tls_model("initial-exec")));

/* Rank and world size learned late (from an NCCL communicator); the first
 * communicator of a process sets them when the environment did not. */
void sp_core_set_rank(int rank, int world_size, int device);

/* Step counting for SCALEPROF_STEPS: nvtx.c calls this at each step-marker
 * push, with the marker's name (its number, when it ends in one, is the
 * step's).  Without markers there are no steps to count (docs/preload.md). */
void sp_core_step_boundary(const char *name);

/* sp_emit for CUPTI's GPU records: inside or outside the step window by
 * when the GPU ran the work, not by when the record arrives (core.c). */
void sp_emit_gpu(const struct sp_event *ev);

/* Called by the CUPTI part when its background flush must run before the
 * file is closed (exit, exec).  Registered by cupti.c; NULL when absent. */
extern void (*sp_core_flush_hook)(int final);

/* ---- added by the core for its own files (core.c, proc.c, io.c, cpu.c) ---- */

/* Bumped whenever this process starts a new trace file (first open, fork
 * child, reopen after a failed exec): ids cached from an older file (such
 * as interned paths) are stale when their generation differs. */
extern volatile unsigned sp_generation;

/* The current generation as a tag a table can keep in its entries
 * (io.c's fd table): SP_GEN_TAG_MARK set, so that no zero entry matches,
 * and sp_generation's low 16 bits from bit SP_GEN_TAG_SHIFT up.  Made
 * again by core.c right after each change of sp_generation; an aligned
 * word read whole (a reader racing with the change sees the old tag, and
 * an entry of the new generation does not match it: the reader's slow
 * path decides).  Plain, not volatile: the reads' fast path compares an
 * entry with it in one instruction. */
extern uint64_t sp_generation_tag;
#define SP_GEN_TAG_MARK (1ull << 32)
#define SP_GEN_TAG_SHIFT 48
#define SP_GEN_TAG_MASK 0xffffull

/* The exit status exit() was called with, for the PROC EXIT event written
 * by the atexit handler (main's return goes through libc's internal exit). */
void sp_core_note_exit_status(int status);

/* Pause (1) or resume (0) recording: the control file. */
void sp_core_control(int pause);

/* cpu.c: the low-rate CPU sampler and the control file, run by fd.c's
 * service thread.  sp_cpu_start makes sure that thread runs and ticks (at
 * the trace's opening, and in a forked child at its first event:
 * sp_core_sampler_pending); sp_cpu_period_ns is the sampling period, 0
 * when SCALEPROF_CPU_HZ=0; sp_cpu_tick takes one sample and looks at the
 * control file.  core.c reaches the start and the fork reset through its
 * hooks, which cpu.c sets at load (NULL until then). */
extern void (*volatile sp_core_sampler_start)(void);
extern void (*volatile sp_core_sampler_fork)(void);
extern volatile int sp_core_sampler_pending;
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
/* A job: work (loading a library) the caller may stop waiting for.  Static
 * storage; run once per process (again in a forked child if it had not
 * finished).  sp_fd_job_run posts it if it is not posted yet and waits at
 * most max_ns: 1 once it has run. */
enum { SP_JOB_IDLE,
       SP_JOB_POSTED,
       SP_JOB_DONE };
struct sp_fd_job {
    sp_fd_work fn;
    void *arg;
    _Atomic uint32_t state;
    struct sp_fd_job *next;
};
int sp_fd_job_run(struct sp_fd_job *job, uint64_t max_ns);
/* Posts the job again (even one that ran) without waiting: the service
 * thread runs it after the request it is serving, if any. */
void sp_fd_later(struct sp_fd_job *job);
void sp_fd_start(void);
/* A recorder thread's stack size: `want` for its own use plus room for the
 * static TLS of every library loaded (glibc carves it out of the stack). */
size_t sp_fd_thread_stack(size_t want);
/* Wake the service thread for a compression pass (a slot filled): an
 * atomic add and a futex wake, safe from any thread and signal handler. */
void sp_fd_wake(void);
/* The service loop's hooks (fd.c calls no file above it by name): one
 * compression pass over the trace, 0 when there is none (core.c's, set
 * before its first request); the CPU sampler's tick and its period
 * (cpu.c's, the period stored first). */
extern int (*volatile sp_fd_pass_hook)(void);
extern void (*volatile sp_fd_tick_hook)(void);
extern volatile uint64_t sp_fd_tick_period_ns;
int sp_fd_is_service_thread(void);
/* Why the service thread ended at its start, too near a limit on tasks
 * (the line to say), or NULL. */
const char *sp_fd_refusal(void);
/* The calling thread is about to make a child that shares its
 * thread-local storage (proc.c's clone): events from then on go the slow
 * way, where a thread on another's storage is told apart (core.c). */
void sp_core_tls_lent(void);
/* On the service thread, at its start: 1, with the reason in `why`, when
 * the process's tasks are above half of a pids cgroup's pids.max or of
 * RLIMIT_NPROC (limits.c). */
int sp_limits_near(char *why, size_t size);
/* 1 while RLIMIT_AS is below 4 GiB: the recorder takes less address
 * space - a smaller trace mapping and fd-name table, no library loaded
 * on its thread (limits.c; docs/reliability.md, "The footprint budget"). */
int sp_limits_as_tight(void);
/* Free space on the trace directory's file system (dfd), at the trace's
 * creation (limits.c): SP_DISK_ROOMY, SP_DISK_LOW (a smaller trace:
 * SP_DISK_LOW_SLOTS slots, SP_DISK_LOW_STRINGS of names) or SP_DISK_OFF
 * (not recorded); the line to say in `why` for the last two. */
#define SP_DISK_ROOMY 0
#define SP_DISK_LOW 1
#define SP_DISK_OFF 2
#define SP_DISK_LOW_SLOTS 8u
#define SP_DISK_LOW_STRINGS (128u << 10)
/* Blocks a new trace reserves: the header page, the first 256 KiB of
 * names and 32 slots of 128 KiB (format/writer.c's opts.grow); the
 * smaller one reserves all its 8 slots and 128 KiB of names. */
#define SP_DISK_FULL_RES (4096ull + (256ull << 10) + 32ull * (128ull << 10))
#define SP_DISK_LOW_RES (4096ull + SP_DISK_LOW_STRINGS + SP_DISK_LOW_SLOTS * (128ull << 10))
int sp_limits_disk(int dfd, char *why, size_t size, uint64_t *floor);
void sp_fd_after_fork(void);

/* io.c: fcntl(F_DUPFD...) in fcntl.c copied `from` to `to`. */
void sp_io_fd_copied(int from, int to);

#pragma GCC visibility pop

#endif
