/*
 * fd.c - the recorder's service thread, which owns every file descriptor
 * the recorder ever uses, in a descriptor table of its own.
 *
 * Why.  A job owns its descriptor numbers: "exec 512>out" in bash, a dup2
 * onto any number, open() after close(1) returning 1, a limit of 16 fds,
 * a daemon closing everything it did not open.  Any number the recorder
 * holds, even for a moment, is one the job can meet: its close closes our
 * file, its dup2 lands on it, its next open gets the number we took, or
 * the number we hold is the one it expected.  Moving our fds high only
 * made the meeting rarer (and growing the job's fd table past 64 entries
 * from a second thread costs an RCU grace period: 10-30 ms).
 *
 * So nothing of ours lives in the job's table.  One thread per process
 * ("scaleprof") starts by unsharing its descriptor table and closing
 * everything in the copy (close_range(CLOSE_RANGE_UNSHARE), which copies
 * nothing it would close).  Every descriptor the recorder opens - the
 * trace directory, the trace itself, /proc files, the control file - is
 * opened by this thread, in its table, and the trace's chunks are
 * compressed and written by it too (no compressor thread: the writer's
 * opts.wake calls sp_fd_wake when a slot fills, and the loop below runs a
 * pass then and every SP_PASS_NS: core.c's pass, sp_fd_pass_hook).  One thread per
 * recorded process, with a stack of SP_SERVICE_STACK plus TLS.  The job's
 * threads touch the trace only through the MAP_SHARED mapping, which is
 * process-wide.  Closing our copy of a job's descriptor
 * cannot release the job's POSIX locks: those belong to the job's table.
 *
 * The job's threads hand file work to this thread with sp_fd_run(): one
 * request at a time in a mailbox (a futex word each way), run to
 * completion while the caller waits.  That happens when a trace is
 * created or closed (first event, exec, exit), never on a hot path.  The
 * first request does not wait for the thread to start: it is posted with
 * the thread's creation and served right after the thread has its table
 * (or refused, when it could not start), so creating a trace is one
 * wake-up each way.  For a request, the thread runs on the requester's
 * CPU (pin_service_here), which the requester's wait leaves free.
 * Loading a library (libunwind for call sites) is a job instead
 * (sp_fd_job_run): the caller waits for it only so long, because it may
 * hold the dynamic loader's lock itself (a CUDA call from a library's
 * constructor) and the thread's dlopen would then wait for the caller.
 * Either kind of work, and the compressor's nudges, bump one wake-up
 * word the thread sleeps on.  Between requests the thread sleeps on the mailbox with the CPU
 * sampler's period as timeout and takes a sample when it expires
 * (cpu.c's sp_fd_tick_hook); in a trace's first 50 ms it also wakes for the clock's first
 * calibration (clock.c, sp_clock_due).  It runs with every signal blocked and with the re-entry guard
 * held, so nothing it does is recorded as the job's I/O.  It does not
 * survive fork: sp_fd_after_fork() forgets it in the child, whose first
 * request starts the child's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <linux/close_range.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

#define SP_NS_PER_SEC 1000000000ull
#define SP_BOX_WAIT_MAX_NS 2000000000ull /* a mailbox held this long is stuck: give up */
#define SP_CLOSE_LOOP_MAX 65536          /* fallback close loop bound (no close_range) */
#define SP_CLOCK_RETRY_NS 1000000ull     /* the clock's ticks here, at most this often */
/* The service thread's own stack (its TLS comes on top): it creates and
 * closes traces (a few 4 KiB path buffers), samples /proc and loads
 * libraries (libunwind, libcupti: the loader and their constructors run
 * here). */
#define SP_SERVICE_STACK (512u << 10)
#define SP_PASS_NS 20000000ull /* a compression pass at least this often while a trace is open */
#define SP_REFUSAL_MAX 512
/* g_box_done once the thread has failed to start: no request is served
 * (requests are counted from 1 and never reach it). */
#define SP_BOX_REFUSED UINT32_MAX

enum { SVC_NONE,
       SVC_STARTING,
       SVC_READY,
       SVC_FAILED };

static _Atomic uint32_t g_svc_state = SVC_NONE; /* futex word while STARTING */
static _Atomic int g_box_taken;
static sp_fd_work g_box_fn;
static void *g_box_arg;
static _Atomic uint32_t g_box_posted;    /* futex: bumped by a requester */
static _Atomic uint32_t g_box_done;      /* futex: set to the request served */
static _Atomic uint32_t g_wake;          /* futex: bumped by anyone with work for the thread */
static struct sp_fd_job *_Atomic g_jobs; /* posted jobs, a stack */
#define SP_JOBS_MAX 8
static struct sp_fd_job *g_known_jobs[SP_JOBS_MAX]; /* every job ever posted, for fork */
static _Atomic unsigned g_njobs;
static __thread int t_service __attribute__((tls_model("initial-exec")));
/* The thread's id and the CPUs it may run on, for the handoff below. */
static _Atomic pid_t g_svc_tid;
static cpu_set_t g_svc_mask;
static int g_svc_mask_ok;
static _Atomic int g_svc_pinned;       /* the thread runs on one CPU until it has served a request */
static char g_refusal[SP_REFUSAL_MAX]; /* why the thread ended at its start (limits.c), "" when it did not */

/* The loop's work for the files above (hooks: fd.c calls none of them by
 * name, so that they may call it): the trace's compression pass, set by
 * core.c before its first request (0 when there is no trace to pass
 * over), and the CPU sampler's tick, set by cpu.c with its period before
 * it starts the thread. */
int (*volatile sp_fd_pass_hook)(void);
void (*volatile sp_fd_tick_hook)(void);
volatile uint64_t sp_fd_tick_period_ns;

static long futex_wait(_Atomic uint32_t *w, uint32_t seen, const struct timespec *timeout)
{
    return syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, seen, timeout, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Give this thread a descriptor table of its own, empty.  Returns 0, or
 * -1 when the kernel cannot (then the recorder must hold no fd at all). */
static int private_fd_table(void)
{
    if (syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE) == 0) return 0;
    if (syscall(SYS_unshare, CLONE_FILES) != 0) return -1;
    /* Kernels before 5.9: the copy holds the job's fds; close ours of them. */
    if (syscall(SYS_close_range, 0u, ~0u, 0) == 0) return 0;
    struct rlimit rl;
    long top = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < SP_CLOSE_LOOP_MAX
                   ? (long)rl.rlim_cur
                   : SP_CLOSE_LOOP_MAX;
    for (long fd = 0; fd < top; fd++)
        syscall(SYS_close, (int)fd);
    return 0;
}

/* ---- the recorder's thread stacks ----------------------------------------------
 *
 * Small and explicit: the libc default is 8 MiB of address space per
 * thread (RLIMIT_AS counts it; ulimit -v jobs felt 16 MiB of ours).  glibc
 * carves the thread's static TLS out of the stack size asked for, and a
 * job's libraries may hold much of it, so their TLS segments are added on
 * top (dl_iterate_phdr: every PT_TLS loaded, an upper bound), with room
 * for libc's surplus. */
#define SP_TLS_SURPLUS (64u << 10)
#define SP_STACK_PAGE 4096u

static int add_tls(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_TLS)
            *(size_t *)data += info->dlpi_phdr[i].p_memsz + info->dlpi_phdr[i].p_align;
    return 0;
}

size_t sp_fd_thread_stack(size_t want)
{
    size_t tls = 0;
    dl_iterate_phdr(add_tls, &tls);
    size_t n = want + tls + SP_TLS_SURPLUS;
    if (n < (size_t)PTHREAD_STACK_MIN)
        n = (size_t)PTHREAD_STACK_MIN;
    return (n + SP_STACK_PAGE - 1) / SP_STACK_PAGE * SP_STACK_PAGE;
}

static uint64_t next_tick(uint64_t now, uint64_t period)
{
    return period ? now + period : UINT64_MAX;
}

static void wake_service(void)
{
    atomic_fetch_add(&g_wake, 1);
    futex_wake_all(&g_wake);
}

void sp_fd_wake(void)
{
    int e = errno;
    wake_service();
    errno = e;
}

/* Runs every posted job; 1 when there was one. */
static int run_jobs(void)
{
    struct sp_fd_job *j = atomic_exchange(&g_jobs, NULL);
    if (!j)
        return 0;
    while (j) {
        struct sp_fd_job *next = j->next;
        j->fn(j->arg);
        atomic_store(&j->state, SP_JOB_DONE);
        futex_wake_all(&j->state);
        j = next;
    }
    return 1;
}

/* The handoff of a request.  A thread that posts a request sleeps until
 * it is served, so its CPU is the one that is free; a woken thread is
 * queued where the scheduler puts it, which on a loaded machine is often
 * another CPU's queue, behind other processes: measured, 5 ms between
 * the wake-up and the first system call of the service thread at a short
 * process's exit (load average 7 on 2 cores).  So the requester puts the
 * service thread on its own CPU before waking it, and the thread takes
 * back the CPUs it had once it has served the request.  Best effort: a
 * refusal (a cpuset, a seccomp filter) leaves the scheduler's choice. */
static void pin_service_here(void)
{
    pid_t tid = atomic_load(&g_svc_tid);
    int cpu = sched_getcpu();
    if (!tid || cpu < 0 || cpu >= CPU_SETSIZE || !g_svc_mask_ok)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    atomic_store(&g_svc_pinned, 1);
    if (syscall(SYS_sched_setaffinity, tid, sizeof one, &one) != 0)
        atomic_store(&g_svc_pinned, 0);
}

static void unpin_service(void)
{
    if (atomic_exchange(&g_svc_pinned, 0))
        syscall(SYS_sched_setaffinity, 0, sizeof g_svc_mask, &g_svc_mask);
}

/* The thread will not serve: whoever waits for it to start, or for a
 * request posted while it was starting, is told so. */
static void service_failed(void)
{
    atomic_store(&g_svc_state, SVC_FAILED);
    futex_wake_all(&g_svc_state);
    atomic_store(&g_box_done, SP_BOX_REFUSED);
    futex_wake_all(&g_box_done);
}

static void *service_main(void *arg)
{
    (void)arg;
    sp_guard_forever(); /* nothing this thread does is the job's I/O */
    t_service = 1;
    atomic_store(&g_svc_tid, (pid_t)syscall(SYS_gettid));
    pthread_setname_np(pthread_self(), "scaleprof");
    int ok = private_fd_table() == 0;
    /* Too near a limit on tasks, the thread is one the job may need:
     * it ends at once, and the process is not recorded (limits.c). */
    if (ok && sp_limits_near(g_refusal, sizeof g_refusal))
        ok = 0;
    if (!ok) {
        service_failed();
        return NULL;
    }
    atomic_store(&g_svc_state, SVC_READY);
    futex_wake_all(&g_svc_state);
    void (*tick)(void) = NULL;
    uint64_t period = 0;
    uint64_t due = UINT64_MAX;
    uint64_t clock_ticked = 0;
    uint64_t pass_due = UINT64_MAX;
    uint32_t served = 0, passed = 0;
    for (;;) {
        uint32_t seen = atomic_load(&g_wake);
        uint32_t posted = atomic_load(&g_box_posted);
        if (posted != served) {
            g_box_fn(g_box_arg);
            unpin_service();
            served = posted;
            atomic_store(&g_box_done, served);
            futex_wake_all(&g_box_done);
            continue;
        }
        if (run_jobs())
            continue;
        uint64_t now = sp_now();
        if (seen != passed || now >= pass_due) {
            /* the trace's compression: woken by a filled slot, or its period */
            passed = seen;
            int (*pass)(void) = sp_fd_pass_hook;
            pass_due = pass && pass() ? now + SP_PASS_NS : UINT64_MAX;
            continue;
        }
        if (tick != sp_fd_tick_hook) { /* the sampler's, set once (cpu.c) */
            tick = sp_fd_tick_hook;
            period = tick ? sp_fd_tick_period_ns : 0;
            due = next_tick(now, period);
        }
        if (now >= due) {
            tick();
            due = next_tick(due, period);
            if (due <= now) /* fell behind (a stopped process): no burst of samples */
                due = next_tick(now, period);
            continue;
        }
        /* The clock's first calibration (clock.c), at most once a
         * millisecond whatever it answers. */
        uint64_t wake = sp_clock_due();
        if (wake != UINT64_MAX && wake < clock_ticked + SP_CLOCK_RETRY_NS)
            wake = clock_ticked + SP_CLOCK_RETRY_NS;
        if (now >= wake) {
            clock_ticked = now;
            sp_clock_tick();
            continue;
        }
        if (due < wake)
            wake = due;
        if (pass_due < wake)
            wake = pass_due;
        uint64_t left = wake - now;
        struct timespec ts = {(time_t)(left / SP_NS_PER_SEC), (long)(left % SP_NS_PER_SEC)};
        futex_wait(&g_wake, seen, wake == UINT64_MAX ? NULL : &ts);
    }
    return NULL;
}

/* Start the thread once per process (again in a forked child); when
 * `wait`, until it has its own table.  1 when it serves (or, not waiting,
 * when it is starting). */
static int service_start(int wait, int pin)
{
    uint32_t st = atomic_load(&g_svc_state);
    if (st == SVC_NONE) {
        uint32_t expect = SVC_NONE;
        if (atomic_compare_exchange_strong(&g_svc_state, &expect, SVC_STARTING)) {
            int e = errno;
            sigset_t all, old;
            sigfillset(&all);
            pthread_sigmask(SIG_SETMASK, &all, &old);
            pthread_attr_t attr;
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            pthread_attr_setstacksize(&attr, sp_fd_thread_stack(SP_SERVICE_STACK));
            /* Started on this CPU, which the request's wait leaves free
             * (see pin_service_here); the CPUs it would have had are
             * restored after the request. */
            g_svc_mask_ok = sched_getaffinity(0, sizeof g_svc_mask, &g_svc_mask) == 0;
            int cpu = sched_getcpu();
            if (pin && g_svc_mask_ok && cpu >= 0 && cpu < CPU_SETSIZE) {
                cpu_set_t one;
                CPU_ZERO(&one);
                CPU_SET(cpu, &one);
                if (pthread_attr_setaffinity_np(&attr, sizeof one, &one) == 0)
                    atomic_store(&g_svc_pinned, 1);
            }
            pthread_t th;
            int r = pthread_create(&th, &attr, service_main, NULL);
            if (r != 0) { /* a size this libc refuses: its default (and no pinning) */
                atomic_store(&g_svc_pinned, 0);
                pthread_attr_setstacksize(&attr, 0);
                pthread_attr_destroy(&attr);
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                r = pthread_create(&th, &attr, service_main, NULL);
            }
            pthread_attr_destroy(&attr);
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            if (r != 0) {
                snprintf(g_refusal, sizeof g_refusal, "cannot start the recorder's thread (%s)", strerror(r));
                service_failed();
            }
            errno = e;
        }
    }
    while (wait && (st = atomic_load(&g_svc_state)) == SVC_STARTING)
        futex_wait(&g_svc_state, SVC_STARTING, NULL);
    st = atomic_load(&g_svc_state);
    return st == SVC_READY || (!wait && st == SVC_STARTING);
}

/* At load: the thread starts while the job goes on (nothing waits for it
 * until the first request). */
void sp_fd_start(void)
{
    service_start(0, 0);
}

static void post_job(struct sp_fd_job *job)
{
    unsigned k = atomic_fetch_add(&g_njobs, 1);
    if (k < SP_JOBS_MAX)
        g_known_jobs[k] = job;
    else
        atomic_store(&g_njobs, SP_JOBS_MAX);
    job->next = atomic_load(&g_jobs);
    while (!atomic_compare_exchange_weak(&g_jobs, &job->next, job))
        ;
    wake_service();
}

void sp_fd_later(struct sp_fd_job *job)
{
    uint32_t st = atomic_load(&job->state);
    while (st != SP_JOB_POSTED) {
        if (atomic_compare_exchange_weak(&job->state, &st, SP_JOB_POSTED)) {
            post_job(job);
            return;
        }
    }
}

int sp_fd_job_run(struct sp_fd_job *job, uint64_t max_ns)
{
    if (t_service) {
        if (atomic_load(&job->state) != SP_JOB_DONE) {
            job->fn(job->arg);
            atomic_store(&job->state, SP_JOB_DONE);
        }
        return 1;
    }
    int e = errno;
    uint32_t st = atomic_load(&job->state);
    if (st == SP_JOB_IDLE) {
        if (!service_start(1, 0)) {
            errno = e;
            return 0;
        }
        uint32_t expect = SP_JOB_IDLE;
        if (atomic_compare_exchange_strong(&job->state, &expect, SP_JOB_POSTED))
            post_job(job);
    }
    uint64_t deadline = sp_now() + max_ns;
    while ((st = atomic_load(&job->state)) == SP_JOB_POSTED) {
        uint64_t now = sp_now();
        if (now >= deadline)
            break;
        uint64_t left = deadline - now;
        struct timespec ts = {(time_t)(left / SP_NS_PER_SEC), (long)(left % SP_NS_PER_SEC)};
        futex_wait(&job->state, SP_JOB_POSTED, &ts);
    }
    errno = e;
    return st == SP_JOB_DONE;
}

const char *sp_fd_refusal(void)
{
    return atomic_load(&g_svc_state) == SVC_FAILED && g_refusal[0] ? g_refusal : NULL;
}

int sp_fd_is_service_thread(void)
{
    return t_service;
}

int sp_fd_run(sp_fd_work fn, void *arg)
{
    if (t_service) {
        fn(arg);
        return 0;
    }
    int e = errno;
    if (atomic_load(&g_svc_state) == SVC_FAILED) {
        errno = e;
        return -1;
    }
    /* One request at a time.  A holder that never lets go (a signal
     * handler asking while its own thread holds the box) is given up on. */
    uint64_t deadline = 0;
    int expect = 0;
    while (!atomic_compare_exchange_weak(&g_box_taken, &expect, 1)) {
        expect = 0;
        uint64_t now = sp_now();
        if (!deadline)
            deadline = now + SP_BOX_WAIT_MAX_NS;
        else if (now > deadline) {
            errno = e;
            return -1;
        }
        sched_yield();
    }
    if (atomic_load(&g_svc_state) == SVC_READY)
        pin_service_here(); /* before the post: the thread cannot serve it unpinned */
    g_box_fn = fn;
    g_box_arg = arg;
    uint32_t mine = atomic_fetch_add(&g_box_posted, 1) + 1;
    /* Posted before the thread is started, not after it is ready: the
     * thread serves it as soon as it has its table, and a process's first
     * request (its trace's creation) costs one handoff each way instead
     * of two.  On a loaded machine each handoff is a wake-up that may
     * wait milliseconds for a core. */
    if (!service_start(0, 1)) {
        atomic_store(&g_box_taken, 0);
        errno = e;
        return -1;
    }
    wake_service();
    uint32_t done;
    while ((done = atomic_load(&g_box_done)) != mine) {
        if (done == SP_BOX_REFUSED) { /* the thread did not start: nobody will serve it */
            atomic_store(&g_box_taken, 0);
            errno = e;
            return -1;
        }
        futex_wait(&g_box_done, done, NULL);
    }
    atomic_store(&g_box_taken, 0);
    errno = e;
    return 0;
}

void sp_fd_after_fork(void)
{
    g_refusal[0] = 0;
    /* The thread, its table and any request in flight stayed in the parent. */
    atomic_store(&g_svc_state, SVC_NONE);
    atomic_store(&g_box_taken, 0);
    atomic_store(&g_box_posted, 0);
    atomic_store(&g_box_done, 0);
    atomic_store(&g_wake, 0);
    /* A job the parent's thread had not finished is not done here. */
    atomic_store(&g_jobs, NULL);
    unsigned n = atomic_load(&g_njobs);
    for (unsigned i = 0; i < n && i < SP_JOBS_MAX; i++) {
        uint32_t posted = SP_JOB_POSTED;
        atomic_compare_exchange_strong(&g_known_jobs[i]->state, &posted, SP_JOB_IDLE);
    }
}
