/*
 * cpu.c - the low-rate CPU sampler and the control file.
 *
 * SCALEPROF_CPU_HZ times a second (default 10) a CPU event is recorded: the process's user and system time
 * (getrusage), the machine's busy fraction since the previous sample (from
 * /proc/stat deltas), the online core count and the process's thread
 * count.  That is what the input_pipeline finding needs to say "the loader
 * workers' CPUs are saturated".
 *
 * The same wake-up looks at $SCALEPROF_DIR/control: a file containing "stop"
 * pauses recording, "start" resumes it, so a long job can be recorded for
 * a while without restarting it.  Signals would have been simpler but they
 * belong to the job.
 *
 * Both run on fd.c's service thread, which wakes at the sampling period:
 * started with the process's first event or its second thread (in a
 * forked child too), not at load, so that a short process that records
 * nothing starts no thread; a single-threaded process that computes
 * without one intercepted call is not sampled (docs/preload.md, "Quiet
 * short lives").  That
 * thread has a descriptor table of its own, so the /proc files stay open
 * there between samples and the control file is opened there: no number
 * of the job's is ever taken, even for a moment, and nothing the job
 * closes or dup2()s can reach ours.  It holds the re-entry guard, so its
 * reads of /proc are never recorded as the job's I/O.
 *
 * The control file is obeyed only when it is a regular file owned by the
 * job's user and writable by nobody else; it is looked up in the trace
 * directory opened once without following symlinks, never followed when
 * it is a link, and opened non-blocking (a FIFO put there cannot stall
 * the sampler).  It is read only when its size or mtime changed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "emit.h"
#include "interpose.h"
#include "preload.h"

#define SP_NS_PER_SEC 1000000000ull
#define SP_NS_PER_US 1000ull
#define SP_PERMILLE 1000ull
#define SP_PROC_STAT_MAX 4096
#define SP_CONTROL_MAX 64
#define SP_THREADS_FIELD 20 /* num_threads in /proc/self/stat */

struct machine_ticks {
    unsigned long long busy, total;
};

enum { PROC_STAT,
       PROC_SELF_STAT,
       PROC_FILES };
static const char *const k_proc_paths[PROC_FILES] = {"/proc/stat", "/proc/self/stat"};
/* In the service thread's own table (fd.c): the job never sees them. */
static int g_proc_fd[PROC_FILES] = {-1, -1};
static int g_dir_fd = -1; /* SCALEPROF_DIR, for the control file */

/* Raw system calls: these fds are numbers of the service thread's own
 * table, and io.c's interposers keep a table of the job's. */
static int raw_openat(int dirfd, const char *path, int flags)
{
    return (int)syscall(SYS_openat, dirfd, path, flags, 0);
}

static long read_at_start(int fd, char *buf, size_t len)
{
    long n = fd < 0 ? -1 : syscall(SYS_pread64, fd, buf, len - 1, 0L);
    buf[n > 0 ? n : 0] = 0;
    return n;
}

static long read_proc(int which, char *buf, size_t len)
{
    if (g_proc_fd[which] < 0)
        g_proc_fd[which] = raw_openat(AT_FDCWD, k_proc_paths[which], O_RDONLY | O_CLOEXEC);
    return read_at_start(g_proc_fd[which], buf, len);
}

/* The "cpu" line of /proc/stat: busy = total - idle - iowait. */
static int read_machine_ticks(struct machine_ticks *t)
{
    char buf[SP_PROC_STAT_MAX];
    if (read_proc(PROC_STAT, buf, sizeof buf) <= 0)
        return -1;
    unsigned long long v[8] = {0};
    if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
               &v[6], &v[7]) < 4)
        return -1;
    t->total = 0;
    for (int i = 0; i < 8; i++)
        t->total += v[i];
    t->busy = t->total - v[3] - v[4];
    return 0;
}

static unsigned count_threads(void)
{
    char buf[SP_PROC_STAT_MAX];
    if (read_proc(PROC_SELF_STAT, buf, sizeof buf) <= 0)
        return 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    /* Field 3 (state) follows ") "; walk to field SP_THREADS_FIELD. */
    int field = 2;
    while (*p && field < SP_THREADS_FIELD) {
        if (*p == ' ')
            field++;
        p++;
    }
    return (unsigned)strtoul(p, NULL, 10);
}

static uint64_t timeval_ns(struct timeval tv)
{
    return (uint64_t)tv.tv_sec * SP_NS_PER_SEC + (uint64_t)tv.tv_usec * SP_NS_PER_US;
}

static void sample(struct machine_ticks *prev, unsigned ncores)
{
    struct rusage ru;
    struct machine_ticks now;
    struct sp_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = SP_EV_CPU;
    ev.t = sp_now();
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        ev.cpu.user_ns = timeval_ns(ru.ru_utime);
        ev.cpu.sys_ns = timeval_ns(ru.ru_stime);
    }
    if (read_machine_ticks(&now) == 0) {
        unsigned long long dt = now.total - prev->total;
        if (prev->total && dt)
            ev.cpu.busy_permille = (now.busy - prev->busy) * SP_PERMILLE / dt;
        *prev = now;
    }
    ev.cpu.ncores = ncores;
    ev.cpu.threads = count_threads();
    sp_emit(&ev);
}

/* The control file's identity when last read: a change means a new word. */
struct control_seen {
    dev_t dev;
    ino_t ino;
    struct timespec mtime;
    off_t size;
};

static int control_changed(const struct stat *st, struct control_seen *seen)
{
    if (st->st_dev == seen->dev && st->st_ino == seen->ino && st->st_size == seen->size &&
        st->st_mtim.tv_sec == seen->mtime.tv_sec && st->st_mtim.tv_nsec == seen->mtime.tv_nsec)
        return 0;
    *seen = (struct control_seen){st->st_dev, st->st_ino, st->st_mtim, st->st_size};
    return 1;
}

/* Who may steer the recording: the job's user alone. */
static int control_trusted(const struct stat *st)
{
    return S_ISREG(st->st_mode) && st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

static void poll_control(const char *dir, struct control_seen *seen)
{
    char buf[SP_CONTROL_MAX];
    struct stat st;
    (void)dir;
    if (g_dir_fd < 0)
        g_dir_fd = sp_core_open_dir(); /* walked as the trace's way is (core.c) */
    if (g_dir_fd < 0 || fstatat(g_dir_fd, "control", &st, AT_SYMLINK_NOFOLLOW) != 0 || !control_trusted(&st) ||
        !control_changed(&st, seen))
        return;
    int fd = raw_openat(g_dir_fd, "control", O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat opened;
    long n = -1;
    /* The name may have been swapped between the two looks. */
    if (fstat(fd, &opened) == 0 && opened.st_ino == st.st_ino && opened.st_dev == st.st_dev &&
        control_trusted(&opened))
        n = read_at_start(fd, buf, sizeof buf);
    syscall(SYS_close, fd);
    if (n <= 0)
        return;
    if (strncmp(buf, "stop", 4) == 0)
        sp_core_control(1);
    else if (strncmp(buf, "start", 5) == 0)
        sp_core_control(0);
}

/* The service thread's state between ticks. */
static struct machine_ticks g_prev;
static struct control_seen g_seen;
static unsigned g_ncores;

uint64_t sp_cpu_period_ns(void)
{
    const struct sp_config *cfg = sp_config();
    if (cfg->cpu_hz <= 0)
        return 0;
    int hz = cfg->cpu_hz > SP_CPU_HZ_MAX ? SP_CPU_HZ_MAX : cfg->cpu_hz;
    return SP_NS_PER_SEC / (uint64_t)hz;
}

/* One wake-up of the service thread: the job's own first intercepted call
 * usually opens the trace; only a job that makes none in its first period
 * has it opened from here. */
void sp_cpu_tick(void)
{
    if (!g_ncores)
        g_ncores = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    poll_control(sp_config()->dir, &g_seen);
    if (sp_recording)
        sample(&g_prev, g_ncores);
}

void sp_cpu_start(void)
{
    sp_core_sampler_pending = 0;
    uint64_t period = sp_cpu_period_ns();
    if (!period)
        return;
    if (!sp_fd_tick_hook) {
        sp_fd_tick_period_ns = period;
        __atomic_store_n(&sp_fd_tick_hook, sp_cpu_tick, __ATOMIC_RELEASE);
    }
    sp_fd_start();
}

/* A second thread is the other sign of a process worth sampling (a pool
 * burning cores before its first recorded call): the sampler starts with
 * it, as with the first event.  Our own threads are made under the guard
 * and start nothing. */
SP_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    SP_REAL(pthread_create, int, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *), sp_real,
            return EAGAIN);
    int r = real(th, attr, fn, arg);
    if (r == 0 && !sp_guard_held() && sp_config()->enabled) {
        int e = errno;
        sp_cpu_start();
        errno = e;
    }
    return r;
}

void sp_cpu_after_fork(void)
{
    sp_core_sampler_pending = 1;
    /* The parent's service thread and its descriptor table stayed behind:
     * these numbers mean nothing here (closing them would close the
     * child's own files). */
    g_proc_fd[PROC_STAT] = g_proc_fd[PROC_SELF_STAT] = -1;
    g_dir_fd = -1;
    memset(&g_prev, 0, sizeof g_prev);
    memset(&g_seen, 0, sizeof g_seen);
}

/* core.c starts the sampler and resets it in a forked child through these
 * hooks (it calls no function of this file by name: this file calls it).
 * Set at load, before the job's own code runs; an event of a library's
 * constructor that came earlier opened the trace without the sampler,
 * which starts here. */
__attribute__((constructor)) static void cpu_constructor(void)
{
    sp_core_sampler_fork = sp_cpu_after_fork;
    __atomic_store_n(&sp_core_sampler_start, sp_cpu_start, __ATOMIC_RELEASE);
    if (atomic_load(&sp_core_state) == SP_CORE_READY)
        sp_cpu_start();
}
