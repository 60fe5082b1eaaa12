/*
 * cpu.c - the low-rate CPU sampler and the control file.
 *
 * One thread per process wakes SCALEPROF_CPU_HZ times a second (default
 * 10) and records a CPU event: the process's user and system time
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
 * The thread is started at load time (and in a forked child, at its first
 * event), with every signal blocked
 * (a job's signals must reach the job's threads), and holds the re-entry
 * guard for its whole life so that its own reads of /proc are never
 * recorded as the job's I/O.  It does not survive fork: the child's first
 * event starts the child's own (sp_cpu_pending).  It is detached and never
 * joined; at exit the core's state check stops its events.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

#define SP_NS_PER_SEC 1000000000ull
#define SP_NS_PER_US 1000ull
#define SP_PERMILLE 1000ull
#define SP_PROC_STAT_MAX 4096
#define SP_CONTROL_MAX 64
#define SP_THREADS_FIELD 20 /* num_threads in /proc/self/stat */

volatile int sp_cpu_pending;
static _Atomic int g_started;

struct machine_ticks {
    unsigned long long busy, total;
};

/* File descriptors.  A single-threaded job may rely on open() returning
 * the lowest free number (close(1) then open() to redirect stdout); a
 * thread of ours opening files at the same moment would steal it.  So the
 * two /proc files are opened once, moved above SP_HIGH_FD and re-read with
 * pread; the control file is only stat'ed each tick and opened when it
 * changed. */
#define SP_HIGH_FD 512

enum { PROC_STAT, PROC_SELF_STAT, PROC_FILES };
static const char *const k_proc_paths[PROC_FILES] = {"/proc/stat", "/proc/self/stat"};
static int g_proc_fd[PROC_FILES] = {-1, -1};

static int open_high(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fd >= SP_HIGH_FD)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, SP_HIGH_FD);
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

static long read_at_start(int fd, char *buf, size_t len)
{
    long n = fd < 0 ? -1 : pread(fd, buf, len - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    return n;
}

static long read_proc(int which, char *buf, size_t len)
{
    if (g_proc_fd[which] < 0)
        g_proc_fd[which] = open_high(k_proc_paths[which]);
    long n = read_at_start(g_proc_fd[which], buf, len);
    if (n < 0 && g_proc_fd[which] >= 0) { /* the job closed it: reopen next time */
        close(g_proc_fd[which]);
        g_proc_fd[which] = -1;
    }
    return n;
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

static void poll_control(const char *dir, struct control_seen *seen)
{
    char path[sizeof ((struct sp_config *)0)->dir + 16], buf[SP_CONTROL_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/control", dir);
    if (stat(path, &st) != 0 || !control_changed(&st, seen))
        return;
    int fd = open_high(path);
    long n = read_at_start(fd, buf, sizeof buf);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return;
    if (strncmp(buf, "stop", 4) == 0)
        sp_core_control(1);
    else if (strncmp(buf, "start", 5) == 0)
        sp_core_control(0);
}

static void *sampler_main(void *arg)
{
    (void)arg;
    sp_guard_forever(); /* nothing this thread does is the job's I/O */
    const struct sp_config *cfg = sp_config();
    unsigned ncores = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    int hz = cfg->cpu_hz > SP_CPU_HZ_MAX ? SP_CPU_HZ_MAX : cfg->cpu_hz;
    uint64_t period = SP_NS_PER_SEC / (uint64_t)hz;
    struct timespec ts = {(time_t)(period / SP_NS_PER_SEC), (long)(period % SP_NS_PER_SEC)};
    struct machine_ticks prev = {0, 0};
    struct control_seen seen;
    memset(&seen, 0, sizeof seen);
    for (;;) {
        /* Sleep first: the job's own first intercepted call, in its own
         * thread, usually opens the trace; only a job that makes none in
         * its first period has it opened from here. */
        clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
        poll_control(cfg->dir, &seen);
        if (sp_recording)
            sample(&prev, ncores);
    }
    return NULL;
}

void sp_cpu_start(void)
{
    sp_cpu_pending = 0;
    const struct sp_config *cfg = sp_config();
    if (cfg->cpu_hz <= 0 || atomic_exchange(&g_started, 1))
        return;
    int e = errno;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    int r = pthread_create(&th, &attr, sampler_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r != 0)
        sp_log("CPU sampler not started: %s", strerror(r));
    errno = e;
}

void sp_cpu_after_fork(void)
{
    atomic_store(&g_started, 0);
    sp_cpu_pending = 1;
    /* /proc/self/stat was opened as the parent's: reopen it. */
    if (g_proc_fd[PROC_SELF_STAT] >= 0)
        syscall(SYS_close, g_proc_fd[PROC_SELF_STAT]);
    g_proc_fd[PROC_SELF_STAT] = -1;
}
