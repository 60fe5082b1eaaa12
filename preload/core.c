/*
 * core.c - the recorder core of libscaleprof.so: configuration, the
 * process's single trace writer and its lifecycle.
 *
 * Lifecycle.  Load time does only what a constructor can do safely: read
 * the configuration, register the fork and exit handlers and map the
 * shared step counter (no dlsym, which may allocate; no thread).  The
 * first sp_emit()/sp_intern() - an intercepted call - opens the trace and
 * starts the CPU sampler: creates
 * DIR/<host>/<pid>.sprof and writes the header.  One thread wins a CAS and
 * does the work; threads that lose the race wait for it, once per process
 * and bounded by SP_OPEN_WAIT_MAX_NS, rather than lose the first events.
 *
 *   UNINIT --first event--> OPENING --> READY --exit/exec--> CLOSED
 *                                   \-> OFF (disabled or failed, for good)
 *   CLOSED --exec failed--> READY (a new file)
 *   any    --fork, in the child--> READY with a new file naming the parent
 *
 * Closing while other threads append.  A thread may be inside
 * sp_writer_append() when exit() or execve() closes the writer.  Each
 * emitter announces itself in an in-flight counter, then re-checks the
 * state; the closer publishes CLOSING, then waits for the counters to drain
 * (bounded: a thread descheduled mid-append for longer than SP_DRAIN_MAX_NS
 * is ignored rather than hanging the exit).  Either the emitter sees
 * CLOSING or the closer sees the emitter - Dekker's pattern, which needs a
 * store-load barrier on both sides.  The emitter's barrier is on every
 * recorded call, so it is made asymmetric: the first SP_OWNED_SLOTS threads
 * own a counter each (a plain store, no lock prefix), and the closer, which
 * runs once, pays instead with membarrier(PRIVATE_EXPEDITED), which puts a
 * full barrier on every running thread of the process.  Where membarrier
 * is unavailable, emitters use a real fence; threads beyond the owned
 * counters share SP_INFLIGHT_STRIPES padded counters with atomic adds.
 * The emitter's side is written once, in emit.h, and inlined into the
 * interposers that record on every call: a thread with a counter of its
 * own and membarrier registered raises it, checks the state and appends
 * with no call at all (sp_emit_enter); everything else, the first event
 * that opens the trace included, is sp_emit_enter_slow's, here.  The
 * state that the fast path checks is one word, emit.h's gate, with a bit
 * for "not READY" that the closer sets after its CAS to CLOSING and
 * before its membarrier, as the pattern above needs (see "emit.h's gate").
 *
 * Files.  DIR is made absolute once, in the first process (from its cwd
 * at load), and exported so that every child writes into the same DIR
 * wherever it runs; a DIR (or cwd and DIR) longer than SP_DIR_MAX - 1
 * bytes is refused with a line, never cut.  DIR is walked a component at
 * a time from its parent's fd ("the way to DIR" below): an existing
 * symlink on the way is followed only when root's or the job's user's,
 * the components we create are created (mode 0700, or 0755 when the file
 * mode grants others read) and opened with O_NOFOLLOW, and DIR itself is
 * never a symlink.  DIR/<host> (the host name made a safe file name:
 * ".." is "_.") is created with mkdirat and opened with
 * O_NOFOLLOW|O_DIRECTORY; a symlink there, or a directory owned by someone
 * else, is refused (another user could otherwise steer our writes).  The
 * trace is created with openat on that directory's descriptor, so the
 * checked directory is the one written into.  A name already taken (pid reuse, or
 * this very process after an exec, which keeps its pid) moves on to
 * <pid>.<n>.sprof, with no bound on n.
 *
 * File descriptors.  None of the job's.  All the file work above - the
 * directories, the trace's creation, the header's reads of /proc, and the
 * close - runs on fd.c's service thread, in a descriptor table of its
 * own; the job's threads only store into the shared mapping.  So a job may
 * close, dup2 onto or reuse any number, run with a limit of 16 fds, or
 * expect open() to return the lowest free number, and never meet ours.
 *
 * Fork.  pthread_atfork's child handler abandons the inherited writer
 * (unmap only); the child's own file is made on its first event, as at
 * load, and its header's ppid names the parent.  sp_generation is bumped
 * so that ids cached by the interposers (interned paths) are known to
 * belong to the old file.  The CPU sampler thread does not survive fork;
 * it restarts on the child's first event.  The prepare handler lets an
 * open in progress finish first, so a child never inherits a half-made
 * writer.
 *
 * Quiet short lives.  A process that has recorded nothing when it exits
 * or execs still gets its file (start and exit, its place in the process
 * tree), unless it lived less than SP_QUIET_LIFE_NS: a shell's fork child
 * on its way to exec, /bin/true, `sed` in a job's script.  Those are most
 * of a fork-heavy loop's processes, and a file for each (two thread
 * handoffs, a create and a close) cost ten times the process itself.  A
 * program it execs gets its own file, whose ppid names the parent.
 *
 * Exit.  atexit, a destructor and the _exit/_Exit interposers all end in
 * sp_core_shutdown(), which is idempotent.  An _exit() from a signal
 * handler that interrupted this very thread's append does not wait for
 * that append (it cannot finish before the handler returns).  No signal handler is installed:
 * events live in MAP_SHARED slots from the moment they are appended, so a
 * SIGTERM or SIGKILL loses nothing already recorded.
 *
 * Configuration.  Every SCALEPROF_* variable goes through format/parse.h's
 * checked parsers at load; a bad value falls back to the default with one
 * line saying so (see "configuration" below).
 *
 * Also here, shared by the interposers: sp_resolve (the lookup of a real
 * function and the line when there is none, interpose.h).  The re-entry
 * guard's thread-locals are guard.c's.
 *
 * Layers.  core.c calls fd.c (its file work runs on the service thread)
 * and is called by cpu.c (the sampler emits through it); it calls neither
 * back by name.  The service thread's pass over the trace is handed to
 * fd.c as a hook (sp_fd_pass_hook, set before the first request), and the
 * sampler's start and its reset in a forked child are hooks of core.c
 * (sp_core_sampler_hooks) that cpu.c sets at load; an event that comes
 * earlier, in another library's constructor, opens the trace without the
 * sampler, which cpu.c starts when it sets the hooks.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "compress.h"
#include "emit.h"
#include "interpose.h"
#include "parse.h"
#include "preload.h"

/* Optimistic until the configuration says otherwise: the first interposed
 * call times itself and its sp_emit() opens the trace. */
volatile int sp_recording = 1;
volatile unsigned sp_generation;
uint64_t sp_generation_tag = SP_GEN_TAG_MARK; /* generation 0's */

/* A new generation, and its tag with it (preload.h). */
static void next_generation(void)
{
    sp_generation++;
    sp_generation_tag = SP_GEN_TAG_MARK | (uint64_t)(sp_generation & SP_GEN_TAG_MASK) << SP_GEN_TAG_SHIFT;
}
void (*sp_core_flush_hook)(int final);
/* cpu.c's (preload.h), set at its load; unset until then. */
void (*volatile sp_core_sampler_start)(void);
void (*volatile sp_core_sampler_fork)(void);
volatile int sp_core_sampler_pending;

/* The states (SP_CORE_*) are emit.h's, which reads them on the fast path. */

#define SP_INFLIGHT_STRIPES 64
#define SP_CACHE_LINE 64
#define SP_DRAIN_MAX_NS 200000000ull /* 200 ms */
#define SP_DRAIN_FALLBACK_US 10000
#define SP_OPEN_WAIT_MAX_NS 2000000000ull /* 2 s */
/* A process that records nothing and ends (exit or exec) sooner than this
 * after its start (load, or fork) leaves no file: see "Quiet short lives". */
#define SP_QUIET_LIFE_NS (20ull * 1000 * 1000)
#define SP_NAME_RACES 1000        /* names taken under us, one after another, before giving up */
#define SP_NAME_MAX_N 0x40000000u /* <pid>.<n>.sprof, n below this */
#define SP_DEFAULT_MODE 0600
#define SP_DEFAULT_CPU_HZ 10
#define SP_LINE_MAX 512
#define SP_CMDLINE_MAX 3800 /* leaves room for the other TLVs in the header page */
#define SP_EXIT_UNKNOWN (-1)
/* The trace under a tight RLIMIT_AS (sp_limits_as_tight): 32 slots of
 * 128 KiB and 1 MiB of strings, 5 MiB of address space in all. */
#define SP_TIGHT_SLOTS 32u
#define SP_TIGHT_STRINGS (1u << 20)

struct inflight_stripe {
    _Atomic long n;
    char pad[SP_CACHE_LINE - sizeof(long)];
};
#define SP_OWNED_SLOTS 4096 /* threads with a counter of their own */

_Atomic int sp_core_state = SP_CORE_UNINIT;
struct sp_writer *sp_core_writer;
uint64_t sp_core_gen = SP_CORE_NO_GEN;
volatile int sp_emit_detour;
_Atomic unsigned sp_emit_gate = SP_GATE_STATE;
static struct sp_config g_cfg;
static int g_cfg_loaded;
static struct inflight_stripe g_inflight[SP_OWNED_SLOTS + SP_INFLIGHT_STRIPES];
static _Atomic unsigned g_next_stripe;
static __thread unsigned t_stripe __attribute__((tls_model("initial-exec")));
static int g_membarrier_ok; /* registered for MEMBARRIER_CMD_PRIVATE_EXPEDITED */
static _Atomic int g_failed_once;
static _Atomic int g_shutdown_done;
static volatile int g_paused; /* the control file said "stop" */
static volatile int g_exit_status = SP_EXIT_UNKNOWN;
static int g_handlers_registered;
static pid_t g_self_pid;      /* this process, as of load or fork */
static uint64_t g_life_start; /* CLOCK_MONOTONIC ns at load or fork */
static pthread_key_t g_exit_key;
static struct sp_writer *g_driven; /* the writer the service thread compresses */
static int g_exit_key_ok;
static __thread unsigned t_exit_watched __attribute__((tls_model("initial-exec")));

/* ---- messages ------------------------------------------------------------ *
 *
 * Lines go to the job's fd 2.  The service thread (fd.c) has a descriptor
 * table of its own with no fd 2 in it, so a line it says is kept and
 * written by the job's thread that asked for the work, once it is done. */

#define SP_PENDING_MAX (SP_LINE_MAX + 64)
static char g_pending_line[SP_PENDING_MAX];
static _Atomic size_t g_pending_len;

static void say_line(const char *line, size_t len)
{
    if (!sp_fd_is_service_thread()) {
        syscall(SYS_write, 2, line, len);
        return;
    }
    if (atomic_load(&g_pending_len) || len > sizeof g_pending_line)
        return; /* one line at a time is plenty: the first says why */
    memcpy(g_pending_line, line, len);
    atomic_store(&g_pending_len, len);
}

/* Write what the service thread said, from the job's thread. */
static void say_pending(void)
{
    size_t len = atomic_exchange(&g_pending_len, 0);
    if (len) {
        int e = errno;
        syscall(SYS_write, 2, g_pending_line, len);
        errno = e;
    }
}

static void write_stderr_line(const char *prefix, const char *fmt, va_list ap)
{
    char line[SP_LINE_MAX];
    int n = snprintf(line, sizeof line, "%s", prefix);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    say_line(line, len);
}

void sp_log(const char *fmt, ...)
{
    if (g_cfg.quiet)
        return;
    int e = errno;
    va_list ap;
    va_start(ap, fmt);
    write_stderr_line("scaleprof: ", fmt, ap);
    va_end(ap);
    errno = e;
}

static void recompute_recording(void);
static void recompute_detour(void);
static void step_counter_map(void);
static void membarrier_register(void);
static void append_guarded(const struct sp_event *ev);
static void thread_exit_handler(void *arg);
static void close_trace(void);
static void clock_init_once(void);

/* ---- emit.h's gate --------------------------------------------------------- *
 *
 * The one word the fast path tests (emit.h): a bit for each of the state,
 * sp_recording, sp_emit_detour and sp_tls_lent, set and cleared with
 * atomic or/and so that writers of different bits never undo each other.
 * sp_recording and sp_emit_detour are written through their setters
 * below, which then make the bit say what the variable says now (read
 * again until it holds still).  The STATE bit is cleared in one place,
 * by the thread that owns OPENING, just before it stores READY; it is set
 * after every way out of READY (close_trace, a forked child).  So it is
 * never cleared after a closer has set it. */
static void gate_bit(unsigned bit, int set)
{
    if (set)
        atomic_fetch_or(&sp_emit_gate, bit);
    else
        atomic_fetch_and(&sp_emit_gate, ~bit);
}

static void set_recording(int on)
{
    sp_recording = on;
    int now;
    do {
        now = sp_recording;
        gate_bit(SP_GATE_OFF, !now);
    } while (now != sp_recording);
}

static void set_detour(int on)
{
    sp_emit_detour = on;
    int now;
    do {
        now = sp_emit_detour;
        gate_bit(SP_GATE_DETOUR, now);
    } while (now != sp_emit_detour);
}

/* The state leaves READY (or may have): the fast path stops at the gate.
 * The closer calls it after its CAS to CLOSING and before its membarrier
 * (drain_inflight): Dekker's pattern of the top comment, on the gate. */
static void gate_closed(void)
{
    gate_bit(SP_GATE_STATE, 1);
}

void sp_fail(const char *fmt, ...)
{
    int e = errno;
    set_recording(0);
    if (atomic_load(&sp_core_state) == SP_CORE_READY) {
        (void)SP_GUARD_ENTER();
        close_trace(); /* what was recorded stays readable, and closed */
        SP_GUARD_LEAVE();
    }
    atomic_store(&sp_core_state, SP_CORE_OFF);
    if (atomic_exchange(&g_failed_once, 1) == 0) {
        char msg[SP_LINE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        char line[SP_LINE_MAX + 64];
        int n = snprintf(line, sizeof line, "scaleprof: %s; recording disabled, the job continues\n", msg);
        if (n > (int)sizeof line - 1)
            n = (int)sizeof line - 1;
        say_line(line, (size_t)n);
    }
    errno = e;
}

/* ---- configuration ------------------------------------------------------- */

/* Each SCALEPROF_* variable is parsed with format/parse.h's checked
 * parsers: the whole value must parse and fall in range.  A bad value is
 * never guessed at: one line names the variable, the value and the
 * default used instead, and the job runs on with the default.  The line is
 * written even under SCALEPROF_QUIET=1 (a setting the user believes in is
 * being ignored), once per program: forked children inherit the parsed
 * configuration and say nothing. */
static void config_warn(const char *name, const char *why, const char *dflt)
{
    char line[SP_LINE_MAX];
    int n = snprintf(line, sizeof line, "scaleprof: %s: %s; using the default, %s\n", name, why, dflt);
    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1;
    syscall(SYS_write, 2, line, (size_t)n);
}

/* The variable's value, or NULL when unset or empty (an empty value is the
 * default, as the shell's VAR= means). */
static const char *env_value(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static long env_int(const char *name, long lo, long hi, long dflt)
{
    const char *v = env_value(name);
    long long x;
    char err[SP_PARSE_ERR], shown[32];
    if (!v)
        return dflt;
    if (sp_parse_int(v, lo, hi, &x, err, sizeof err) == 0)
        return (long)x;
    snprintf(shown, sizeof shown, "%ld", dflt);
    config_warn(name, err, shown);
    return dflt;
}

/* A switch: 0 or 1. */
static int env_switch(const char *name, int dflt)
{
    static const char *const values[] = {"0", "1"};
    const char *v = env_value(name);
    char err[SP_PARSE_ERR];
    if (!v)
        return dflt;
    int i = sp_parse_choice(v, values, 2, err, sizeof err);
    if (i >= 0)
        return i;
    config_warn(name, err, values[dflt]);
    return dflt;
}

/* An octal file mode, 0 to 0777 ("600", "0644"). */
#define SP_MODE_DIGITS_MAX 4
static int env_mode(const char *name, int dflt)
{
    const char *v = env_value(name);
    char why[SP_PARSE_ERR], shown[16];
    if (!v)
        return dflt;
    size_t len = strspn(v, "01234567");
    if (len && !v[len] && len <= SP_MODE_DIGITS_MAX) {
        long m = strtol(v, NULL, 8);
        if (m <= 0777)
            return (int)m;
    }
    snprintf(why, sizeof why, "\"%.60s\" is not an octal file mode (expected 0000..0777)", v);
    snprintf(shown, sizeof shown, "%04o", (unsigned)dflt);
    config_warn(name, why, shown);
    return dflt;
}

/* SCALEPROF_STEPS=A:B, both ends inclusive ("A:" from A on, "A" alone is
 * step A); unset or bad: every step.  A billion steps is beyond any job. */
#define SP_STEPS_MAX 1000000000
static void env_steps(const char *name, long *first, long *last)
{
    const char *v = env_value(name);
    long long a, b;
    char err[SP_PARSE_ERR];
    *first = *last = -1;
    if (!v)
        return;
    if (sp_parse_range(v, 0, SP_STEPS_MAX, &a, &b, err, sizeof err) == 0) {
        *first = (long)a;
        *last = (long)b;
        return;
    }
    config_warn(name, err, "every step");
}

/* A relative DIR means "from where the job was started", not from
 * wherever each process happens to be: resolve it once, here in the first
 * process, and pass the absolute path on to children through the
 * environment (the exec interposers add it back when a child's
 * environment lacks it).  Called from the constructor, before the job's
 * main() and its threads. */
static char g_dir_refused[SP_LINE_MAX]; /* why SCALEPROF_DIR is not used; said at the first event */

static void make_dir_absolute(void)
{
    if (g_cfg.dir[0] == '/')
        return;
    char cwd[SP_DIR_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
        if (errno == ERANGE || errno == ENAMETOOLONG)
            snprintf(g_dir_refused, sizeof g_dir_refused,
                     "cannot make SCALEPROF_DIR=%.200s absolute: the working directory is longer than %d bytes",
                     g_cfg.dir, SP_DIR_MAX - 1);
        return; /* an unreachable cwd (removed): relative it stays */
    }
    const char *rel = g_cfg.dir[0] == '.' && g_cfg.dir[1] == '/' ? g_cfg.dir + 2 : g_cfg.dir;
    char abs[sizeof g_cfg.dir];
    if (snprintf(abs, sizeof abs, "%s/%s", strcmp(cwd, "/") ? cwd : "", rel) >= (int)sizeof abs) {
        snprintf(g_dir_refused, sizeof g_dir_refused,
                 "cannot make SCALEPROF_DIR=%.200s absolute: with the working directory it is longer than %d bytes",
                 g_cfg.dir, SP_DIR_MAX - 1);
        return;
    }
    memcpy(g_cfg.dir, abs, sizeof abs);
    /* In place where the variable is: a shell builds its children's
     * environment from main's envp, the very array environ points to now,
     * and setenv would leave that array behind. */
    static char entry[sizeof "SCALEPROF_DIR=" + sizeof g_cfg.dir];
    snprintf(entry, sizeof entry, "SCALEPROF_DIR=%s", g_cfg.dir);
    int found = 0;
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "SCALEPROF_DIR=", sizeof "SCALEPROF_DIR=" - 1) == 0) {
            *e = entry;
            found = 1;
        }
    if (!found)
        setenv("SCALEPROF_DIR", g_cfg.dir, 1); /* the exec interposers pass it on */
}

/* The run's identity: the launcher's (scaleprof run sets it), else the
 * first process of a plain LD_PRELOAD job makes one (host, pid, time) and
 * exports it, so that every process of the job - forked, exec'd, spawned
 * (the exec interposers pass SCALEPROF_* on) - writes the same one into
 * its header, and a report never mixes two runs written into one
 * directory. */
static void run_identity(void)
{
    const char *id = getenv("SCALEPROF_RUN_ID");
    if (id && *id) {
        snprintf(g_cfg.run, sizeof g_cfg.run, "%s", id);
        return;
    }
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    snprintf(g_cfg.run, sizeof g_cfg.run, "%s-%d-%lld", host[0] ? host : "host", (int)getpid(),
             (long long)(sp_clock_read_ns(CLOCK_REALTIME) / 1000000000u));
    setenv("SCALEPROF_RUN_ID", g_cfg.run, 1);
}

static void load_config(void)
{
    if (g_cfg_loaded)
        return;
    const char *dir = env_value("SCALEPROF_DIR");
    if (dir && strlen(dir) >= sizeof g_cfg.dir) /* never cut: refused, said at the first event */
        snprintf(g_dir_refused, sizeof g_dir_refused, "SCALEPROF_DIR is %zu bytes long, longer than the %d a path may have",
                 strlen(dir), SP_DIR_MAX - 1);
    else {
        snprintf(g_cfg.dir, sizeof g_cfg.dir, "%s", dir ? dir : "./scaleprof-out");
        make_dir_absolute();
    }
    g_cfg.enabled = env_switch("SCALEPROF_ENABLE", 1);
    g_cfg.mode = env_mode("SCALEPROF_MODE", SP_DEFAULT_MODE);
    env_steps("SCALEPROF_STEPS", &g_cfg.step_first, &g_cfg.step_last);
    g_cfg.cpu_hz = (int)env_int("SCALEPROF_CPU_HZ", 0, SP_CPU_HZ_MAX, SP_DEFAULT_CPU_HZ);
    g_cfg.cupti = env_switch("SCALEPROF_CUPTI", 1);
    g_cfg.follow = env_switch("SCALEPROF_FOLLOW", 1);
    g_cfg.quiet = env_switch("SCALEPROF_QUIET", 0);
    if (g_cfg.enabled)
        run_identity();
    g_cfg_loaded = 1;
}

const struct sp_config *sp_config(void)
{
    load_config();
    return &g_cfg;
}

/* ---- the trace file -------------------------------------------------------- */

/* Directory mode from the file mode: x wherever r is granted. */
static mode_t dir_mode(void)
{
    mode_t m = (mode_t)g_cfg.mode | 0700;
    if (m & 0040)
        m |= 0010;
    if (m & 0004)
        m |= 0001;
    return m & 0755;
}

/* The service thread's fds are numbers of its own table: they must not
 * pass through io.c's interposers, whose fd table describes the job's. */
static int raw_openat(int dirfd, const char *path, int flags)
{
    return (int)syscall(SYS_openat, dirfd, path, flags, 0);
}

static void raw_close(int fd)
{
    syscall(SYS_close, fd);
}

/* ---- the way to DIR ----------------------------------------------------------- *
 *
 * DIR is walked one component at a time, each opened from its parent's
 * fd, so that what was checked is what is used, whatever the path's
 * length.  The components that exist are the user's (/scratch may well be
 * a link to /lustre/...): a symlink among them is followed only when it
 * is root's or the job's user's; one owned by another user, who could
 * point it anywhere, is refused.  From the first component that does not
 * exist on, every one is created by us (mkdirat, mode as DIR's) and
 * opened with O_NOFOLLOW, and must be a directory of the job's user: a
 * symlink raced into its place is refused.  DIR itself is never a
 * symlink (as before).  `why` receives the line's reason on failure. */

static int open_component(int at, const char *name, int follow)
{
    return raw_openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
}

static int walk_dir(const char *path, int create, char *why, size_t why_len)
{
    mode_t dmode = dir_mode();
    int fd = raw_openat(AT_FDCWD, path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int creating = 0;
    const char *p = path;
    while (fd >= 0) {
        while (*p == '/')
            p++;
        if (!*p)
            return fd;
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *rest = p + len;
        while (*rest == '/')
            rest++;
        int last = !*rest;
        char name[NAME_MAX + 1];
        if (len > NAME_MAX) {
            snprintf(why, why_len, "cannot use %.300s: a component is longer than %d bytes", path, NAME_MAX);
            break;
        }
        memcpy(name, p, len);
        name[len] = 0;
        int next = -1;
        struct stat st;
        if (!creating && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT || !create) {
                snprintf(why, why_len, "cannot use %.300s: %s", path, strerror(errno));
                break;
            }
            creating = 1;
        }
        if (!creating && S_ISLNK(st.st_mode)) {
            if (last) {
                snprintf(why, why_len, "refusing %.300s: it is a symbolic link", path);
                break;
            }
            if (st.st_uid != 0 && st.st_uid != geteuid()) {
                snprintf(why, why_len, "refusing %.300s: %.*s on the way is a symbolic link of another user (uid %u)",
                         path, (int)(p - path + (ptrdiff_t)len), path, (unsigned)st.st_uid);
                break;
            }
            next = open_component(fd, name, 1);
        } else if (!creating && !S_ISDIR(st.st_mode)) {
            snprintf(why, why_len, "cannot use %.300s: %.*s is not a directory", path,
                     (int)(p - path + (ptrdiff_t)len), path);
            break;
        } else if (!creating) {
            next = open_component(fd, name, 0);
        } else {
            if (mkdirat(fd, name, dmode) != 0 && errno != EEXIST) {
                snprintf(why, why_len, "cannot use %.300s: %s", path, strerror(errno));
                break;
            }
            next = open_component(fd, name, 0);
            struct stat made;
            if (next >= 0 && (fstat(next, &made) != 0 || made.st_uid != geteuid())) {
                raw_close(next);
                snprintf(why, why_len, "refusing %.300s: %.*s is not the job's user's", path,
                         (int)(p - path + (ptrdiff_t)len), path);
                break;
            }
        }
        if (next < 0) {
            if (errno == ELOOP || errno == ENOTDIR)
                snprintf(why, why_len, "refusing %.300s: %.*s is a symbolic link or not a directory", path,
                         (int)(p - path + (ptrdiff_t)len), path);
            else
                snprintf(why, why_len, "cannot use %.300s: %s", path, strerror(errno));
            break;
        }
        raw_close(fd);
        fd = next;
        p = rest;
    }
    if (fd >= 0)
        raw_close(fd);
    return -1;
}

int sp_core_open_dir(void)
{
    char why[SP_LINE_MAX];
    return g_dir_refused[0] ? -1 : walk_dir(g_cfg.dir, 0, why, sizeof why);
}

/* A host name as a file name: bytes other than letters, digits, '-',
 * '_' and '.' become '_', and so does a leading '.' ("..", ".", ".x"
 * would be DIR's parent, DIR itself, a hidden name).  The header keeps
 * the name as it is. */
static void host_file_name(const char *host, char *out, size_t len)
{
    size_t n = 0;
    for (; host[n] && n + 1 < len; n++) {
        char c = host[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                 c == '_' || (c == '.' && n > 0);
        out[n] = ok ? c : '_';
    }
    out[n] = 0;
    if (!n)
        snprintf(out, len, "unknown");
}

/* Open DIR/<host> as a directory we own, creating it; -1 with `why`. */
static int open_host_dir(const char *host, char *why, size_t why_len)
{
    mode_t dmode = dir_mode();
    if (g_dir_refused[0]) {
        snprintf(why, why_len, "%s", g_dir_refused);
        return -1;
    }
    int dfd = walk_dir(g_cfg.dir, 1, why, why_len);
    if (dfd < 0)
        return -1;
    if (mkdirat(dfd, host, dmode) != 0 && errno != EEXIST) {
        snprintf(why, why_len, "cannot use %.300s/%s: %s", g_cfg.dir, host, strerror(errno));
        raw_close(dfd);
        return -1;
    }
    int hfd = raw_openat(dfd, host, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    raw_close(dfd);
    if (hfd < 0) {
        if (e == ELOOP || e == ENOTDIR)
            snprintf(why, why_len, "refusing %.300s/%s: it is a symbolic link", g_cfg.dir, host);
        else
            snprintf(why, why_len, "cannot use %.300s/%s: %s", g_cfg.dir, host, strerror(e));
        return -1;
    }
    struct stat st;
    if (fstat(hfd, &st) != 0 || st.st_uid != geteuid()) {
        raw_close(hfd);
        snprintf(why, why_len, "cannot use %.300s/%s: %s", g_cfg.dir, host, strerror(EPERM));
        return -1;
    }
    return hfd;
}

static void file_name(char *out, size_t len, int n)
{
    if (n == 0)
        snprintf(out, len, "%d.sprof", (int)getpid());
    else
        snprintf(out, len, "%d.%d.sprof", (int)getpid(), n);
}

static int name_taken(int hfd, unsigned n)
{
    char name[64];
    file_name(name, sizeof name, (int)n);
    return faccessat(hfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

/* The first free name's n.  Names are taken in order (0, 1, 2, ...: a
 * process that execs itself, pids reused), so the taken ones are found
 * by doubling n, then the first free one by halving the gap: 2 log2(n)
 * probes, not n (a process that execs itself 10,000 times made 50
 * million), and no bound: <pid>.1000.sprof follows <pid>.999.sprof.  A
 * name deleted in the middle may be found and reused; creation with
 * O_EXCL keeps every file whole either way. */
static unsigned first_free_name(int hfd)
{
    if (!name_taken(hfd, 0))
        return 0;
    unsigned lo = 0, hi = 1; /* lo taken */
    while (hi < SP_NAME_MAX_N && name_taken(hfd, hi)) {
        lo = hi;
        hi *= 2;
    }
    while (hi - lo > 1) { /* lo taken, hi free (or the bound) */
        unsigned mid = lo + (hi - lo) / 2;
        if (name_taken(hfd, mid))
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/* The marker of this process group's MARKER ("disk-low", "disk-full"):
 * .<marker>.<pgid> in the host directory. */
static void disk_marker_name(char *name, size_t len, const char *marker)
{
    snprintf(name, len, ".%s.%ld", marker, (long)syscall(SYS_getpgid, 0));
}

/* Free disk is said once per process group (a shell's job, a launcher's
 * ranks), not by each of its processes: the first to find the disk low
 * creates an empty marker, <host>/.disk-low.<pgid>, with O_EXCL, and
 * says the line; the others find it there.  1: say it. */
static int disk_first_to_say(int hfd, const char *marker)
{
    char name[64];
    disk_marker_name(name, sizeof name, marker);
    int fd = (int)syscall(SYS_openat, hfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        raw_close(fd);
        return 1;
    }
    return errno != EEXIST; /* no marker to be had (no inode left): said by each */
}

/* The free space read and the new trace's blocks reserved by one process
 * of a host directory at a time: a flock on the directory, released when
 * open_trace_here closes it (or the process dies).  Without it, processes
 * starting together each read the same free space and each reserved
 * against it.  Tried for at most SP_DISK_LOCK_TRIES ms: a process stopped
 * while holding it delays the others' first event that long, no more. */
#define SP_DISK_LOCK_TRIES 100
static void disk_lock(int hfd)
{
    struct timespec ms = {0, 1000 * 1000};
    for (int i = 0; i < SP_DISK_LOCK_TRIES; i++) {
        if (syscall(SYS_flock, hfd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)
            return;
        syscall(SYS_nanosleep, &ms, NULL);
    }
}

/* Create the writer in the checked directory under the first free name;
 * `disk` is sp_limits_disk's answer (SP_DISK_LOW: a smaller trace). */
static struct sp_writer *create_writer(int hfd, const char *host, int disk, uint64_t floor, char *shown,
                                       size_t shown_len, int *err)
{
    struct sp_writer_opts opts;
    memset(&opts, 0, sizeof opts);
    opts.mode = g_cfg.mode;
    opts.background = 1;
    opts.on_pass = sp_clock_tick; /* the clock's calibration rides on each pass */
    opts.wake = sp_fd_wake;       /* compressed by the service thread: no thread of its own */
    opts.grow = 1;                /* blocks reserved as used, not 24 MiB at creation */
    opts.grow_floor = floor;      /* and never into the room left to the job (limits.c) */
    if (sp_limits_as_tight()) {
        /* RLIMIT_AS below 4 GiB: 5 MiB of mapping, not 24 (limits.c) */
        opts.slot_count = SP_TIGHT_SLOTS;
        opts.strings_size = SP_TIGHT_STRINGS;
        sp_log("address space limited (RLIMIT_AS below 4 GiB): a smaller trace (%u threads recording at once, "
               "%u KiB of names), stored uncompressed",
               SP_TIGHT_SLOTS, SP_TIGHT_STRINGS >> 10);
    }
    if (disk == SP_DISK_LOW) {
        /* little free disk (limits.c): 1.1 MiB reserved, and no more */
        opts.slot_count = SP_DISK_LOW_SLOTS;
        opts.strings_size = SP_DISK_LOW_STRINGS;
    }
    char name[64];
    /* Created by the checked directory's descriptor (openat), not by a
     * path through /proc/thread-self/fd: a lookup through a thread's fd
     * link leaves /proc entries that the kernel, when the parent reaps
     * the process, spins on for 2-5 ms (measured: a shell's wait4 for
     * each recorded child). */
    unsigned n = first_free_name(hfd);
    for (int tries = 0; tries < SP_NAME_RACES && n < SP_NAME_MAX_N; tries++, n++) {
        file_name(name, sizeof name, (int)n);
        snprintf(shown, shown_len, "%s/%s/%s", g_cfg.dir, host, name);
        struct sp_writer *w = sp_writer_create_at(hfd, name, &opts, err);
        if (w || !(*err == SP_E_IO && errno == EEXIST))
            return w;
    }
    *err = SP_E_IO;
    errno = EEXIST;
    return NULL;
}

/* Read a small /proc file with raw syscalls (no interposer, no stdio). */
static long read_proc_file(const char *path, char *buf, size_t len)
{
    long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    long n = 0, r;
    while ((size_t)n < len && (r = syscall(SYS_read, (int)fd, buf + n, len - (size_t)n)) > 0)
        n += r;
    syscall(SYS_close, (int)fd);
    return n;
}

/* The first of several launchers' variables that is set, else -1. */
static int env_rank(const char *const *names)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (v && *v) {
            char *end;
            long x = strtol(v, &end, 10);
            if (!*end && x >= 0 && x < INT32_MAX)
                return (int)x;
        }
    }
    return -1;
}

static const char *const k_rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL};
static const char *const k_local_rank_vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                                "SLURM_LOCALID", NULL};
static const char *const k_world_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL};
static const char *const k_local_world_vars[] = {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", NULL};

static void add_text_tlv(struct sp_writer *w, uint16_t id, const char *s)
{
    if (s && *s)
        sp_writer_add_tlv(w, id, s, (uint32_t)strlen(s));
}

/* The launcher variables we found, as KEY=VALUE\0 pairs. */
static void add_env_tlv(struct sp_writer *w)
{
    static const char *const *const lists[] = {k_rank_vars, k_local_rank_vars, k_world_vars, k_local_world_vars};
    char buf[1024];
    size_t used = 0;
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        for (const char *const *n = lists[i]; *n; n++) {
            const char *v = getenv(*n);
            if (!v)
                continue;
            int k = snprintf(buf + used, sizeof buf - used, "%s=%s", *n, v);
            if (k < 0 || used + (size_t)k + 1 >= sizeof buf)
                break;
            used += (size_t)k + 1;
        }
    }
    if (used)
        sp_writer_add_tlv(w, SP_TLV_ENV, buf, (uint32_t)used);
}

static void clock_pair(uint64_t *mono, uint64_t *real, uint64_t *uncertainty)
{
    uint64_t a = sp_now();
    *real = sp_clock_read_ns(CLOCK_REALTIME);
    uint64_t b = sp_now();
    *mono = a;
    *uncertainty = b - a;
}

/* ---- command lines without their secrets ----------------------------------- *
 *
 * Tokens and passwords travel on command lines (--api-token=..., curl -H
 * "Authorization: Bearer ...") and trace files are shared.  The ARGV TLV
 * keeps every argument but replaces the value of anything that names a
 * secret: "--opt=value" and "NAME=value" keep "--opt=" and "NAME=",
 * "--opt value" loses the next argument, "Header: value" keeps "Header:"
 * (also inside "--header=Authorization: ..."), "Bearer value" keeps
 * "Bearer", a URL keeps its "?token=" and "user:" but not their values.
 * A name is secret when it contains one of
 * k_secret_words, in any case; redacting a harmless "--keyboard" too is
 * the price of never missing "--key". */

static const char *const k_secret_words[] = {"token", "key", "secret", "password", "passwd",
                                             "bearer", "authorization", NULL};
static const char k_redacted[] = "<redacted>";

static int names_secret(const char *name, size_t len)
{
    for (const char *const *w = k_secret_words; *w; w++) {
        size_t wl = strlen(*w);
        for (size_t i = 0; i + wl <= len; i++)
            if (strncasecmp(name + i, *w, wl) == 0)
                return 1;
    }
    return 0;
}

static int is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Output of redact_one: bytes into out[0, cap), or failure when full. */
struct redact_out {
    char *p;
    size_t n, cap;
    int full;
};

static void put(struct redact_out *o, const char *s, size_t len)
{
    if (o->full || o->n + len > o->cap) {
        o->full = 1;
        return;
    }
    memcpy(o->p + o->n, s, len);
    o->n += len;
}

static int starts_name(const char *a, size_t i)
{
    return i == 0 || strchr("?&;=,: \t\"'", a[i - 1]) != NULL;
}

/* In a URL's authority (after "://", up to the next '/', '?' or '#'), the
 * password of "user:password@host": where it starts and ends, 0 if none. */
static int url_password(const char *a, size_t n, size_t from, size_t *start, size_t *end)
{
    size_t stop = from, at = 0, colon = 0;
    while (stop < n && a[stop] != '/' && a[stop] != '?' && a[stop] != '#')
        stop++;
    for (size_t k = from; k < stop; k++)
        if (a[k] == '@')
            at = k;
    for (size_t k = from; at && k < at && !colon; k++)
        if (a[k] == ':')
            colon = k;
    if (!at || !colon)
        return 0;
    *start = colon + 1;
    *end = at;
    return 1;
}

/* One argument, every secret value in it replaced: "--opt=value",
 * "NAME=value", "Header: value" (also inside "--header=Authorization:
 * ..."), "Bearer value", a URL's "?token=value&..." parameters and its
 * "user:password@" password.  *next_too: the argument is a bare secret
 * option ("--password"), whose value is the next argument. */
static void redact_one(const char *a, size_t n, struct redact_out *o, int *next_too)
{
    *next_too = 0;
    size_t dashes = 0;
    while (dashes < n && dashes < 2 && a[dashes] == '-')
        dashes++;
    size_t name_end = dashes;
    while (name_end < n && is_name_char(a[name_end]))
        name_end++;
    if (dashes && name_end == n && names_secret(a + dashes, n - dashes)) {
        *next_too = 1;
        put(o, a, n);
        return;
    }
    if (n >= 7 && strncasecmp(a, "bearer ", 7) == 0) {
        put(o, a, 7);
        put(o, k_redacted, sizeof k_redacted - 1);
        return;
    }
    size_t i = 0;
    while (i < n) {
        size_t ps, pe;
        if (i + 3 <= n && memcmp(a + i, "://", 3) == 0 && url_password(a, n, i + 3, &ps, &pe)) {
            put(o, a + i, ps - i);
            put(o, k_redacted, sizeof k_redacted - 1);
            i = pe; /* from the '@' on */
            continue;
        }
        if (!starts_name(a, i) || !is_name_char(a[i])) {
            put(o, a + i, 1);
            i++;
            continue;
        }
        size_t k = i;
        while (k < n && is_name_char(a[k]))
            k++;
        if (k == n || (a[k] != '=' && a[k] != ':') || !names_secret(a + i, k - i)) {
            put(o, a + i, k - i);
            i = k;
            continue;
        }
        /* a query parameter ends at the next '&' (or '#', ';'); any other
         * value runs to the end of the argument */
        int param = i > 0 && (a[i - 1] == '?' || a[i - 1] == '&' || a[i - 1] == ';');
        size_t v = k + 1;
        if (a[k] == ':' && v < n && a[v] == ' ')
            v++;
        put(o, a + i, v - i);
        put(o, k_redacted, sizeof k_redacted - 1);
        size_t end = n;
        if (param)
            for (end = v; end < n && a[end] != '&' && a[end] != '#' && a[end] != ';'; end++)
                ;
        i = end;
    }
}

/* Copy the NUL-separated argv in `in` to `out`, secrets replaced; returns
 * the bytes written (each argument NUL-terminated).  An argument that does
 * not fit ends the copy. */
static size_t redact_argv(const char *in, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    int redact_next = 0;
    for (size_t i = 0; i < len;) {
        const char *arg = in + i;
        size_t alen = strnlen(arg, len - i);
        i += alen + 1;
        struct redact_out ro = {out + o, 0, cap - o, 0};
        int next_too = 0;
        if (redact_next && arg[0] != '-') /* "--token --verbose": no value was given */
            put(&ro, k_redacted, sizeof k_redacted - 1);
        else
            redact_one(arg, alen, &ro, &next_too);
        redact_next = next_too;
        put(&ro, "", 1);
        if (ro.full)
            break;
        o += ro.n;
    }
    return o;
}

static void fill_header(struct sp_writer *w, const char *host)
{
    struct sp_file_header *h = sp_writer_header(w);
    uint64_t mono, real, unc;
    clock_pair(&mono, &real, &unc);
    h->pid = (int32_t)getpid();
    h->ppid = (int32_t)getppid();
    h->rank = env_rank(k_rank_vars);
    h->local_rank = env_rank(k_local_rank_vars);
    h->world_size = env_rank(k_world_vars);
    h->local_world_size = env_rank(k_local_world_vars);
    h->start_mono = mono;
    h->start_real = real;

    add_text_tlv(w, SP_TLV_HOST, host);
    char buf[SP_CMDLINE_MAX];
    long n = syscall(SYS_readlink, "/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = 0;
        add_text_tlv(w, SP_TLV_EXE, buf);
    }
    n = read_proc_file("/proc/self/cmdline", buf, sizeof buf);
    if (n > 0) {
        char shown[SP_CMDLINE_MAX];
        size_t m = redact_argv(buf, (size_t)n, shown, sizeof shown);
        sp_writer_add_tlv(w, SP_TLV_ARGV, shown, (uint32_t)m);
    }
    add_text_tlv(w, SP_TLV_CUDA_DEVICES, getenv("CUDA_VISIBLE_DEVICES"));
    add_text_tlv(w, SP_TLV_SOURCE, "preload");
    add_text_tlv(w, SP_TLV_RUN, g_cfg.run);
    add_text_tlv(w, SP_TLV_CLOCK, sp_clock_describe());
    add_env_tlv(w);
}

/* A CLOCK event, written even outside the step window: the analyzer needs
 * the pair at both ends of every file. */
static void emit_clock(void)
{
    struct sp_event ev;
    memset(&ev, 0, sizeof ev);
    uint64_t unc;
    ev.type = SP_EV_CLOCK;
    clock_pair(&ev.t, &ev.clock.realtime, &unc);
    ev.clock.uncertainty = unc;
    append_guarded(&ev);
}

static void emit_proc_always(int kind, int pid, int status)
{
    struct sp_event ev;
    sp_proc_event(&ev, kind, pid, status);
    append_guarded(&ev);
}

static void at_exit_handler(void)
{
    sp_core_shutdown(g_exit_status);
}

static void register_handlers_once(void)
{
    if (g_handlers_registered)
        return;
    g_handlers_registered = 1;
    pthread_atfork(sp_core_atfork_prepare, sp_core_atfork_parent, sp_core_atfork_child);
    atexit(at_exit_handler);
    g_exit_key_ok = pthread_key_create(&g_exit_key, thread_exit_handler) == 0;
}

/* The only work done at load time: the fork and exit handlers must be in
 * place before the job's threads can race to open the trace and fork.  No
 * thread is started: the service thread (and with it the CPU sampler)
 * starts with the first event, so a process that records nothing costs
 * its loader's work and little more (see "Quiet short lives").  Nothing
 * here resolves symbols through dlsym; libc's constructors have run (it is
 * our dependency). */
__attribute__((constructor)) static void core_constructor(void)
{
    sp_clock_check_tsc(); /* before the first clock read: rdtsc may trap */
    register_handlers_once();
    membarrier_register();
    sp_zc_load_refused = sp_limits_as_tight; /* no libzstd (a malloc arena) under a tight RLIMIT_AS */
    g_self_pid = (pid_t)syscall(SYS_getpid);
    g_life_start = sp_now();
    load_config();
    if (g_cfg.step_first >= 0)
        step_counter_map();
    if (!g_cfg.enabled)
        set_recording(0);
}

/* The trace's compression runs on the service thread (fd.c): no thread
 * of its own.  A slot filled by an appender wakes the service thread
 * (sp_fd_wake), which calls service_pass() then and every
 * SP_PASS_NS.  g_driven is the writer it passes over, set and cleared
 * on that thread only (the trace is created and closed there; a forked
 * child forgets its parent's). */

static char g_host_name[256]; /* this process's host directory's name, once its trace is made */

/* Said once a process group, as the free disk at creation is: the trace
 * found its file system full (WHY 1), or so nearly full that growing
 * would take the room left to the job (2).  Not said at all in a group
 * that was told at creation that the disk is low (that line says traces
 * stop there).  On the service thread (the host directory is opened
 * again, as at creation: once a process at most). */
static void say_disk_full(int why)
{
    static int said;
    if (!why || said)
        return;
    said = 1;
    char ignored[SP_LINE_MAX];
    int hfd = g_host_name[0] ? open_host_dir(g_host_name, ignored, sizeof ignored) : -1;
    if (hfd >= 0) {
        char low[64];
        disk_marker_name(low, sizeof low, "disk-low");
        struct stat st;
        int told = fstatat(hfd, low, &st, AT_SYMLINK_NOFOLLOW) == 0 || !disk_first_to_say(hfd, "disk-full");
        raw_close(hfd);
        if (told)
            return;
    }
    if (why == 2)
        sp_log("the trace's file system is nearly full (what is left is the job's): the trace grows no "
               "further, and what does not fit in it is counted as dropped");
    else
        sp_log("the trace's file system is full: what does not fit in the trace is counted as dropped");
}

static int service_pass(void)
{
    if (!g_driven)
        return 0;
    sp_writer_pass(g_driven);
    say_disk_full(sp_writer_reserve_failed(g_driven));
    return 1;
}

/* The CPU sampler's start (cpu.c: it starts the service thread when it
 * samples), once cpu.c has set its hook. */
static void start_sampler_hook(void)
{
    void (*start)(void) = sp_core_sampler_start;
    if (start)
        start();
}

/* Create this process's file, on the service thread (fd.c); the caller
 * owns the OPENING state and holds the guard.  Ends in READY or OFF. */
static void open_trace_here(void *arg)
{
    int start_sampler = *(int *)arg;
    load_config();
    if (!g_cfg.enabled) {
        set_recording(0);
        atomic_store(&sp_core_state, SP_CORE_OFF);
        return;
    }
    char host[256] = "unknown", hname[256], why[SP_LINE_MAX];
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    host_file_name(host, hname, sizeof hname);
    snprintf(g_host_name, sizeof g_host_name, "%s", hname);
    int hfd = open_host_dir(hname, why, sizeof why);
    if (hfd < 0) {
        sp_fail("%s", why);
        return;
    }
    char shown[sizeof g_cfg.dir + 320];
    int err = 0;
    clock_init_once();
    disk_lock(hfd);
    uint64_t floor;
    int disk = sp_limits_disk(hfd, why, sizeof why, &floor);
    if (disk != SP_DISK_ROOMY && !disk_first_to_say(hfd, "disk-low")) {
        why[0] = 0;
        if (disk == SP_DISK_OFF)
            atomic_store(&g_failed_once, 1); /* said by another process of the group */
    }
    if (disk == SP_DISK_OFF) {
        raw_close(hfd);
        sp_fail("%s", why);
        return;
    }
    if (disk == SP_DISK_LOW && why[0])
        sp_log("%s", why);
    sp_core_writer = create_writer(hfd, hname, disk, floor, shown, sizeof shown, &err);
    int e = errno;
    raw_close(hfd);
    if (!sp_core_writer) {
        sp_fail("cannot create a trace in %.300s/%s: %s", g_cfg.dir, hname,
                err == SP_E_IO ? strerror(e) : sp_strerror(err));
        return;
    }
    fill_header(sp_core_writer, host);
    g_driven = sp_core_writer;
    sp_core_gen = ((const struct sp_writer_head *)sp_core_writer)->gen; /* before the gate opens, below */
    next_generation();
    /* The gate opens first: only this thread (OPENING's owner) clears the
     * STATE bit, and only here, so a closer, who can set it only once the
     * state is READY, always sets it after. */
    gate_bit(SP_GATE_STATE, 0);
    atomic_store(&sp_core_state, SP_CORE_READY);
    emit_clock();
    recompute_recording();
    register_handlers_once();
    if (start_sampler)
        start_sampler_hook();
}

static void open_trace(int start_sampler)
{
    sp_fd_pass_hook = service_pass; /* before the service thread's first pass */
    if (sp_fd_run(open_trace_here, &start_sampler) != 0) {
        const char *why = sp_fd_refusal();
        if (why)
            sp_fail("%s", why);
        else
            sp_fail("no thread to create the trace from");
    }
    say_pending();
}

/* Another thread is creating the file: wait for it (once per process, a
 * few milliseconds) rather than lose the events of a job's first moments.
 * Bounded, so that a thread stuck mid-open cannot hang the job. */
static int wait_while_opening(void)
{
    uint64_t deadline = 0;
    int st;
    while ((st = atomic_load(&sp_core_state)) == SP_CORE_OPENING) {
        uint64_t now = sp_now();
        if (!deadline)
            deadline = now + SP_OPEN_WAIT_MAX_NS;
        else if (now > deadline)
            break;
        sched_yield();
    }
    return st;
}

/* Slow path of sp_emit/sp_intern: open the trace if nobody has.  Returns 1
 * when the writer is usable. */
static int ensure_open(void)
{
    int st = atomic_load(&sp_core_state);
    if (st == SP_CORE_OPENING)
        st = wait_while_opening();
    if (st == SP_CORE_UNINIT) {
        int expect = SP_CORE_UNINIT;
        if (!atomic_compare_exchange_strong(&sp_core_state, &expect, SP_CORE_OPENING))
            return wait_while_opening() == SP_CORE_READY;
        int e = errno;
        (void)SP_GUARD_ENTER();
        open_trace(1);
        SP_GUARD_LEAVE();
        errno = e;
        st = atomic_load(&sp_core_state);
    }
    return st == SP_CORE_READY;
}

/* ---- recording state --------------------------------------------------- *
 *
 * Steps are counted by the process that sees the step markers (a rank),
 * but its data-loader workers, forked from it, must follow the same
 * window.  So the counter lives in a MAP_SHARED anonymous page, mapped at
 * load time and inherited by forked children, which read the rank's count
 * live.  A process that starts counting steps itself while still on an
 * inherited page (a rank forked by its launcher) moves to a page of its
 * own first.  The counting process decides sp_recording at each boundary;
 * followers keep sp_recording on and filter in sp_emit, since nothing
 * would tell them when their parent's count moves.  Time before the
 * first marker is always recorded: a job without markers is recorded
 * whole.
 *
 * Step numbers are the markers': a step marker whose name ends in a
 * number ("step 12", "ProfilerStep#12") is that step; one without is the
 * step after the previous one, the first being step 0.  These are the
 * numbers the analyzer's report shows, so SCALEPROF_STEPS=5:8 is the
 * report's steps 5 to 8.  The page holds the step number plus one (0:
 * before the first marker).
 *
 * GPU activity and the window.  CUPTI delivers its records late, in
 * buffers, often after the window has closed; whether a record is kept
 * is decided by when the GPU ran it, never by when it arrived.  Every
 * time sp_recording turns off or on (a step boundary, the control file)
 * the time is written in g_edges (SP_EDGES_MAX of them; once full, the
 * recording stays "on" for the GPU: more is kept, never less).  A record
 * is kept when its run overlaps a stretch where recording was on, or -
 * work launched inside the window that the GPU ran only after it closed -
 * when it starts in the stretch right after one, and its correlation id
 * is at most the highest seen among records that started inside that
 * window (CUPTI numbers API calls in call order, so it was launched before
 * one of them) and above the highest among those that started before the
 * window opened.  "Seen" means delivered so far: a record delivered ahead
 * of the in-window records that would vouch for it is dropped. */

static _Atomic long g_step_local;
static _Atomic long *g_step = &g_step_local;
static int g_step_inherited; /* g_step is the page of the process we forked from */
static int g_step_counting;  /* this process has seen a step boundary */
#define SP_STEP_PAGE 4096
#define SP_EDGES_MAX 128 /* even: once full, the last edge turned recording on */
#define SP_STEP_NUMBER_DIGITS 15

static _Atomic uint64_t g_edges[SP_EDGES_MAX];
static _Atomic int g_nedges;
/* Highest correlation id among records that started in stretch i (stretch
 * 0 up to the first edge, even stretches recorded). */
static _Atomic uint64_t g_stretch_corr[SP_EDGES_MAX + 1];

static void step_counter_map(void)
{
    void *p = mmap(NULL, SP_STEP_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return; /* followers then see the count as it was at fork */
    atomic_store((_Atomic long *)p, atomic_load(g_step));
    g_step = (_Atomic long *)p;
}

static int in_step_window(void)
{
    if (g_cfg.step_first < 0)
        return 1;
    long s = atomic_load_explicit(g_step, memory_order_relaxed) - 1;
    return s < 0 || (s >= g_cfg.step_first && s <= g_cfg.step_last);
}

/* A turn of sp_recording, at time t: one edge more (see above). */
static void window_edge(uint64_t t)
{
    int n = atomic_load_explicit(&g_nedges, memory_order_relaxed);
    if (n >= SP_EDGES_MAX)
        return;
    atomic_store_explicit(&g_edges[n], t, memory_order_relaxed);
    atomic_store_explicit(&g_nedges, n + 1, memory_order_release);
}

static void recompute_recording(void)
{
    int before = sp_recording;
    set_recording(atomic_load(&sp_core_state) == SP_CORE_READY && !g_paused && (!g_step_counting || in_step_window()));
    if (before != sp_recording && atomic_load(&sp_core_state) == SP_CORE_READY)
        window_edge(sp_now());
}

/* The stretch (between edges) time t falls in. */
static int stretch_of(uint64_t t, const uint64_t *edges, int n)
{
    int i = 0;
    while (i < n && t >= edges[i])
        i++;
    return i;
}

static void corr_max(_Atomic uint64_t *m, uint64_t corr)
{
    uint64_t old = atomic_load_explicit(m, memory_order_relaxed);
    while (corr > old && !atomic_compare_exchange_weak_explicit(m, &old, corr, memory_order_relaxed, memory_order_relaxed))
        ;
}

/* Whether GPU work that ran from start to end, with this CUPTI
 * correlation id (0: none), belongs to the recording (see above). */
static int gpu_in_window(uint64_t start, uint64_t end, uint64_t corr)
{
    if (g_cfg.step_first >= 0 && !g_step_counting)
        return in_step_window(); /* a follower: its window is live only */
    int n = atomic_load_explicit(&g_nedges, memory_order_acquire);
    if (n == 0)
        return sp_recording; /* never turned: as the host side */
    uint64_t edges[SP_EDGES_MAX];
    for (int i = 0; i < n; i++)
        edges[i] = atomic_load_explicit(&g_edges[i], memory_order_relaxed);
    if (end < start)
        end = start;
    int a = stretch_of(start, edges, n), b = stretch_of(end, edges, n);
    if (corr)
        corr_max(&g_stretch_corr[a], corr);
    if (!(a & 1) || a < b)
        return 1; /* started while recording, or ran into a stretch that was */
    /* started after a window closed: launched inside it? */
    uint64_t hi = atomic_load_explicit(&g_stretch_corr[a - 1], memory_order_relaxed);
    uint64_t lo = a >= 2 ? atomic_load_explicit(&g_stretch_corr[a - 2], memory_order_relaxed) : 0;
    return corr && corr <= hi && (a < 2 || corr > lo);
}

/* The number a step marker's name ends with, else the step after prev. */
static long step_number(const char *name, long prev)
{
    size_t n = name ? strlen(name) : 0, i = n;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    if (i == n || n - i > SP_STEP_NUMBER_DIGITS)
        return prev + 1;
    long long v = strtoll(name + i, NULL, 10);
    return v < SP_STEPS_MAX ? (long)v : prev + 1;
}

void sp_core_step_boundary(const char *name)
{
    if (SP_UNLIKELY(!g_step_counting)) {
        if (g_step_inherited)
            step_counter_map();
        g_step_inherited = 0;
        g_step_counting = 1;
        recompute_detour();
    }
    int before = sp_recording;
    long step = step_number(name, atomic_load(g_step) - 1);
    atomic_store(g_step, step + 1);
    if (atomic_load(&sp_core_state) != SP_CORE_READY)
        return;
    recompute_recording();
    if (before != sp_recording)
        emit_proc_always(sp_recording ? SP_PROC_START : SP_PROC_STOP, 0, (int)step);
}

void sp_core_control(int pause)
{
    if (!!pause == g_paused || atomic_load(&sp_core_state) != SP_CORE_READY)
        return;
    g_paused = !!pause;
    recompute_recording();
    emit_proc_always(pause ? SP_PROC_STOP : SP_PROC_START, 0, 0);
}

/* ---- the hot path ---------------------------------------------------------- */

/* Index of the calling thread's counter: its own below SP_OWNED_SLOTS,
 * a shared stripe above. */
static inline __attribute__((always_inline)) unsigned my_counter(void)
{
    if (SP_UNLIKELY(t_stripe == 0)) {
        unsigned n = atomic_fetch_add(&g_next_stripe, 1);
        t_stripe = (n < SP_OWNED_SLOTS ? n : SP_OWNED_SLOTS + n % SP_INFLIGHT_STRIPES) + 1;
    }
    return t_stripe - 1;
}

static inline __attribute__((always_inline)) void inflight_enter(void)
{
    unsigned i = my_counter();
    _Atomic long *n = &g_inflight[i].n;
    if (SP_UNLIKELY(i >= SP_OWNED_SLOTS)) {
        atomic_fetch_add(n, 1);
        return;
    }
    /* Ours alone; a signal handler nesting here completes before we resume,
     * so load-then-store cannot lose its update. */
    atomic_store_explicit(n, atomic_load_explicit(n, memory_order_relaxed) + 1, memory_order_relaxed);
    if (SP_LIKELY(g_membarrier_ok))
        atomic_signal_fence(memory_order_seq_cst); /* the closer's membarrier does the rest */
    else
        atomic_thread_fence(memory_order_seq_cst);
}

static inline __attribute__((always_inline)) void inflight_leave(void)
{
    unsigned i = t_stripe - 1;
    _Atomic long *n = &g_inflight[i].n;
    if (SP_UNLIKELY(i >= SP_OWNED_SLOTS))
        atomic_fetch_sub_explicit(n, 1, memory_order_release);
    else
        atomic_store_explicit(n, atomic_load_explicit(n, memory_order_relaxed) - 1, memory_order_release);
}

static void membarrier_register(void)
{
    g_membarrier_ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* A thread that exits hands its partly filled slot to the compressor;
 * otherwise a job that keeps starting short-lived threads would hold every
 * slot in a dead thread's name and lose events. */
static void thread_exit_handler(void *arg)
{
    (void)arg;
    (void)SP_GUARD_ENTER();
    inflight_enter();
    if (atomic_load(&sp_core_state) == SP_CORE_READY)
        sp_writer_thread_exit(sp_core_writer);
    inflight_leave();
    SP_GUARD_LEAVE();
}

/* Ask for thread_exit_handler once per thread and file.  The key's value
 * lives in the thread descriptor (low keys): no allocation. */
static inline __attribute__((always_inline)) void watch_thread_exit(void)
{
    if (SP_LIKELY(t_exit_watched == sp_generation + 1) || !g_exit_key_ok)
        return;
    t_exit_watched = sp_generation + 1;
    pthread_setspecific(g_exit_key, (void *)1);
}

/* Append unless the file is closing: the in-flight count tells the closer
 * to wait for us (see the top comment). */
static inline __attribute__((always_inline)) void append_guarded(const struct sp_event *ev)
{
    watch_thread_exit();
    inflight_enter();
    if (SP_LIKELY(atomic_load_explicit(&sp_core_state, memory_order_relaxed) == SP_CORE_READY))
        sp_writer_append(sp_core_writer, ev);
    inflight_leave();
}

/* inflight_enter as an emit.h ticket: the counter raised, tagged when
 * it is a shared one. */
static sp_emit_ticket inflight_ticket(void)
{
    inflight_enter();
    unsigned i = t_stripe - 1;
    return (sp_emit_ticket)&g_inflight[i].n | (i >= SP_OWNED_SLOTS ? SP_TICKET_SHARED : 0);
}

/* ---- threads on another's thread-local storage ----------------------------- *
 *
 * A raw clone(CLONE_VM) child without CLONE_SETTLS shares its parent's
 * thread-local storage: the writer's slot state, the in-flight counter,
 * all of it (proc.c's clone).  Once the process has made one, every event
 * takes the slow path (sp_emit_detour for good), no thread gets the fast
 * path's counter any more (the lending one loses its own), and the slow
 * path compares the thread's id, from the kernel, with the one its storage
 * was first used by: the events of a thread on another's storage are
 * counted as dropped, never appended.  The cost, a gettid system call per
 * event, is paid only in such a process. */
volatile int sp_tls_lent;
static __thread pid_t t_tls_owner __attribute__((tls_model("initial-exec")));
#define SP_TLS_LENT_STRIPE SP_OWNED_SLOTS /* a shared counter: the borrower's own is its lender's */

void sp_core_tls_lent(void)
{
    if (!t_tls_owner)
        t_tls_owner = (pid_t)syscall(SYS_gettid);
    sp_inflight_mine = NULL;
    sp_tls_lent = 1;
    gate_bit(SP_GATE_LENT, 1);
    set_detour(1);
}

/* 1 when the calling thread's storage is its own. */
static int tls_is_mine(void)
{
    pid_t me = (pid_t)syscall(SYS_gettid);
    if (!t_tls_owner)
        t_tls_owner = me;
    return t_tls_owner == me;
}

/* An event of a thread on another's storage: counted, not appended. */
static void drop_borrowed(void);

int sp_guard_lent(uintptr_t frame)
{
    if (!tls_is_mine()) {
        drop_borrowed();
        return 1;
    }
    uintptr_t holder = sp_guard_frame;
    return holder && (frame < holder || sp_guard_recheck(frame));
}

static void drop_borrowed(void)
{
    int e = errno;
    _Atomic long *n = &g_inflight[SP_TLS_LENT_STRIPE].n;
    atomic_fetch_add(n, 1);
    if (atomic_load(&sp_core_state) == SP_CORE_READY)
        __atomic_add_fetch(&sp_writer_header(sp_core_writer)->events_dropped, 1, __ATOMIC_RELAXED);
    atomic_fetch_sub(n, 1);
    errno = e;
}

/* Whether events must leave emit.h's fast path for the slow one. */
static void recompute_detour(void)
{
    set_detour(sp_core_sampler_pending || (g_cfg.step_first >= 0 && !g_step_counting) || sp_tls_lent);
}

/* The slow path of emit.h's sp_emit_enter: what sp_emit_raw checks before
 * appending.  The first event opens the trace (and starts the CPU
 * sampler); a thread's first event in the process gets its counter, and
 * the fast path from then on when the counter is its own and membarrier
 * stands in for its fence. */
static sp_emit_ticket emit_enter_slow(void);

/* Preserves errno: emit.h's fast path leaves it alone, and interposers
 * rely on that (emit.h's top comment). */
sp_emit_ticket sp_emit_enter_slow(void)
{
    int e = errno;
    sp_emit_ticket ticket = emit_enter_slow();
    errno = e;
    return ticket;
}

int sp_emit_reserve_slow(uint64_t t)
{
    int e = errno;
    int ok = sp_writer_reserve_slow(sp_core_writer, t);
    errno = e;
    return ok;
}

static sp_emit_ticket emit_enter_slow(void)
{
    if (SP_UNLIKELY(sp_tls_lent) && !tls_is_mine()) {
        drop_borrowed();
        return 0;
    }
    if (SP_UNLIKELY(atomic_load_explicit(&sp_core_state, memory_order_relaxed) != SP_CORE_READY) && !ensure_open())
        return 0;
    if (SP_UNLIKELY(sp_core_sampler_pending))
        start_sampler_hook();
    recompute_detour();
    if (!sp_recording || (SP_UNLIKELY(g_cfg.step_first >= 0) && !in_step_window()))
        return 0;
    watch_thread_exit();
    unsigned i = my_counter();
    if (i < SP_OWNED_SLOTS && g_membarrier_ok && !sp_tls_lent)
        sp_inflight_mine = &g_inflight[i].n;
    sp_emit_ticket ticket = inflight_ticket();
    if (SP_UNLIKELY(atomic_load_explicit(&sp_core_state, memory_order_acquire) != SP_CORE_READY)) {
        sp_emit_leave(ticket);
        return 0;
    }
    return ticket;
}

/* emit.h's path with the writer's own append (one copy of the generic
 * encoder): for the events that are not on an interposer's hot path. */
void sp_emit_raw(const struct sp_event *ev)
{
    sp_emit_ticket ticket = sp_emit_enter();
    if (!ticket)
        return;
    sp_writer_append(sp_core_writer, ev);
    sp_emit_leave(ticket);
}

void sp_emit(const struct sp_event *ev)
{
    int e = errno;
    sp_emit_raw(ev);
    errno = e;
}

/* A GPU record from CUPTI: kept by when the GPU ran it, not by when it
 * was delivered ("GPU activity and the window" above). */
void sp_emit_gpu(const struct sp_event *ev)
{
    int e = errno;
    if ((atomic_load_explicit(&sp_core_state, memory_order_relaxed) == SP_CORE_READY || ensure_open()) &&
        gpu_in_window(ev->t, ev->t + ev->gpu.dur, ev->gpu.correlation)) {
        watch_thread_exit();
        sp_emit_ticket ticket = inflight_ticket();
        if (atomic_load_explicit(&sp_core_state, memory_order_acquire) == SP_CORE_READY)
            sp_writer_append(sp_core_writer, ev);
        sp_emit_leave(ticket);
    }
    errno = e;
}

uint32_t sp_intern(const char *s)
{
    if (SP_UNLIKELY(atomic_load_explicit(&sp_core_state, memory_order_relaxed) != SP_CORE_READY) && !ensure_open())
        return 0;
    int e = errno;
    uint32_t id = 0;
    inflight_enter();
    if (atomic_load_explicit(&sp_core_state, memory_order_relaxed) == SP_CORE_READY)
        id = sp_writer_intern(sp_core_writer, s, strlen(s));
    inflight_leave();
    errno = e;
    return id;
}

void *sp_real(const char *name)
{
    (void)SP_GUARD_ENTER();
    void *p = dlsym(RTLD_NEXT, name);
    SP_GUARD_LEAVE();
    return p;
}

void *sp_resolve(const char *name, void *(*resolve)(const char *), atomic_int *said)
{
    int e = errno;
    void *p = resolve(name);
    if (SP_UNLIKELY(!p) && !atomic_exchange(said, 1)) {
        char line[SP_LINE_MAX];
        int n = snprintf(line, sizeof line,
                         "scaleprof: %s is called but no library after libscaleprof.so defines it; "
                         "it fails with ENOSYS\n",
                         name);
        if (n > (int)sizeof line - 1)
            n = (int)sizeof line - 1;
        syscall(SYS_write, 2, line, (size_t)n);
    }
    errno = e;
    return p;
}

/* ---- closing ------------------------------------------------------------------ */

static void drain_inflight(void)
{
    uint64_t deadline = sp_now() + SP_DRAIN_MAX_NS;
    unsigned used = atomic_load(&g_next_stripe);
    unsigned owned = used < SP_OWNED_SLOTS ? used : SP_OWNED_SLOTS;
    if (g_membarrier_ok && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        usleep(SP_DRAIN_FALLBACK_US); /* cannot happen once registered; be safe anyway */
    /* An append of this very thread, interrupted by the signal handler that
     * now exits, cannot finish before we return: do not wait for it. */
    long mine = t_stripe && t_stripe - 1 < SP_OWNED_SLOTS ? atomic_load(&g_inflight[t_stripe - 1].n) : 0;
    for (;;) {
        long busy = -mine;
        for (unsigned i = 0; i < owned; i++)
            busy += atomic_load(&g_inflight[i].n);
        for (unsigned i = SP_OWNED_SLOTS; i < SP_OWNED_SLOTS + SP_INFLIGHT_STRIPES; i++)
            busy += atomic_load(&g_inflight[i].n);
        /* Our own thread may be counted when closing from inside sp_emit's
         * caller chain; it is not appending now. */
        if (busy <= 0 || sp_now() > deadline)
            return;
        sched_yield();
    }
}

/* The clock is chosen once per program: a forked child keeps its
 * parent's calibration (the TSC is the machine's), an exec starts over. */
static void clock_init_once(void)
{
    static int done;
    if (!done) {
        done = 1;
        sp_clock_init();
    }
}

/* The TSC calibration's figures, for `dump`: what the clock's
 * discipline found and corrected. */
static void add_clock_cal(struct sp_writer *w)
{
    double rate;
    int64_t err;
    unsigned segs;
    sp_clock_stats(&rate, &err, &segs);
    if (!sp_clock_tsc)
        return;
    char buf[128];
    snprintf(buf, sizeof buf, "%.6f ns per tick (%.3f GHz), %u segments, largest correction %lld ns",
             rate, rate > 0 ? 1.0 / rate : 0.0, segs, (long long)err);
    add_text_tlv(w, SP_TLV_CLOCK_CAL, buf);
}

/* The file work of a close, on the service thread that holds the fd. */
static void close_trace_here(void *arg)
{
    if (g_driven == arg)
        g_driven = NULL;
    add_clock_cal(arg);
    int r = sp_writer_close(arg);
    if (r == SP_E_FULL)
        say_disk_full(2);
    else if (r < 0)
        sp_log("closing the trace failed: %s", sp_strerror(r));
}

/* Stop appenders, flush the GPU side, close the file.  Returns with the
 * state CLOSED; safe to call when nothing is open. */
static void close_trace(void)
{
    int expect = SP_CORE_READY;
    if (!atomic_compare_exchange_strong(&sp_core_state, &expect, SP_CORE_CLOSING))
        return;
    gate_closed(); /* before drain_inflight's membarrier */
    set_recording(0);
    drain_inflight();
    struct sp_writer *w = sp_core_writer;
    sp_core_writer = NULL;
    sp_core_gen = SP_CORE_NO_GEN;
    sp_writer_thread_exit(w); /* this thread's slot: its TLS is here, not there */
    if (sp_fd_run(close_trace_here, w) != 0)
        sp_log("the trace could not be closed; what was recorded stays in it");
    say_pending();
    atomic_store(&sp_core_state, SP_CORE_CLOSED);
}

/* Events that must be in the file before it closes. */
static void final_events(int kind, int status, const char *path)
{
    if (sp_core_flush_hook)
        sp_core_flush_hook(1);
    if (atomic_load(&sp_core_state) != SP_CORE_READY)
        return;
    struct sp_event ev;
    sp_proc_event(&ev, kind, (int)getpid(), status);
    if (path)
        ev.proc.path = sp_writer_intern(sp_core_writer, path, strlen(path));
    append_guarded(&ev);
    emit_clock();
}

void sp_core_note_exit_status(int status)
{
    g_exit_status = status;
}

/* A child made with clone(CLONE_VM) - a raw vfork, some spawn helpers -
 * shares our memory until it execs: its exec or _exit must not close the
 * parent's trace.  It is told apart by its pid (g_self_pid). */
static int in_memory_sharing_child(void)
{
    return g_self_pid && (pid_t)syscall(SYS_getpid) != g_self_pid;
}

int sp_core_in_memory_sharing_child(void)
{
    return in_memory_sharing_child();
}

void sp_core_shutdown(int status)
{
    if (in_memory_sharing_child() || atomic_exchange(&g_shutdown_done, 1))
        return;
    int e = errno;
    (void)SP_GUARD_ENTER();
    /* A process that never recorded still leaves its file, so the analyzer
     * sees every member of the process tree, unless its life was short
     * and quiet (see "Quiet short lives"). */
    if (atomic_load(&sp_core_state) != SP_CORE_UNINIT || sp_now() - g_life_start >= SP_QUIET_LIFE_NS)
        ensure_open();
    if (status == SP_EXIT_UNKNOWN)
        status = g_exit_status;
    final_events(SP_PROC_EXIT, status, NULL);
    close_trace();
    SP_GUARD_LEAVE();
    errno = e;
}

void sp_core_before_exec_path(const char *path)
{
    if (in_memory_sharing_child())
        return;
    int e = errno;
    (void)SP_GUARD_ENTER();
    if (atomic_load(&sp_core_state) == SP_CORE_UNINIT && sp_now() - g_life_start >= SP_QUIET_LIFE_NS)
        ensure_open(); /* a long quiet life still leaves its file */
    if (atomic_load(&sp_core_state) == SP_CORE_READY) {
        final_events(SP_PROC_EXEC, 0, path);
        close_trace();
    }
    SP_GUARD_LEAVE();
    errno = e;
}

void sp_core_exec_failed(void)
{
    if (in_memory_sharing_child())
        return;
    int e = errno;
    int expect = SP_CORE_CLOSED;
    if (atomic_load(&g_shutdown_done) || !atomic_compare_exchange_strong(&sp_core_state, &expect, SP_CORE_OPENING)) {
        errno = e;
        return;
    }
    (void)SP_GUARD_ENTER();
    open_trace(0);
    SP_GUARD_LEAVE();
    errno = e;
}

/* ---- fork ----------------------------------------------------------------- */

/* A fork while another thread creates the file would leave the child with
 * a half-made writer: let the open finish first. */
void sp_core_atfork_prepare(void)
{
    wait_while_opening();
}

void sp_core_atfork_parent(void)
{
}

void sp_core_atfork_child(void)
{
    int e = errno;
    int st = atomic_load(&sp_core_state);
    g_self_pid = (pid_t)syscall(SYS_getpid);
    g_life_start = sp_now();
    sp_fd_after_fork();
    void (*fork_hook)(void) = sp_core_sampler_fork;
    if (fork_hook)
        fork_hook();
    sp_clock_after_fork();
    g_step_inherited = 1;
    g_step_counting = 0;
    unsigned used = atomic_load(&g_next_stripe);
    for (unsigned i = 0; i < used && i < SP_OWNED_SLOTS; i++)
        atomic_store(&g_inflight[i].n, 0);
    for (unsigned i = SP_OWNED_SLOTS; i < SP_OWNED_SLOTS + SP_INFLIGHT_STRIPES; i++)
        atomic_store(&g_inflight[i].n, 0);
    membarrier_register(); /* a registration does not survive fork */
    if (!g_membarrier_ok)
        sp_inflight_mine = NULL; /* this thread's fast path needs it */
    set_detour(1);               /* the first event sees to the sampler and steps */
    gate_closed();               /* until the child's own file is READY */
    atomic_store(&g_shutdown_done, 0);
    if (st == SP_CORE_OFF || st == SP_CORE_UNINIT) {
        errno = e; /* the child decides for itself, lazily */
        return;
    }
    g_driven = NULL; /* the child's service thread must not pass over the parent's writer */
    if (sp_core_writer)
        sp_writer_abandon(sp_core_writer); /* unmapped; its fd stayed in the parent's service table */
    sp_core_writer = NULL;
    sp_core_gen = SP_CORE_NO_GEN;
    next_generation();
    if (st == SP_CORE_CLOSED || st == SP_CORE_CLOSING) {
        atomic_store(&sp_core_state, SP_CORE_CLOSED); /* forked after exit began */
        errno = e;
        return;
    }
    atomic_store(&sp_core_state, SP_CORE_UNINIT); /* the first event opens the child's file */
    errno = e;
}

void sp_core_set_rank(int rank, int world_size, int device)
{
    (void)device;
    if (atomic_load(&sp_core_state) != SP_CORE_READY && !ensure_open())
        return;
    struct sp_file_header *h = sp_writer_header(sp_core_writer);
    if (h->rank < 0 && rank >= 0)
        __atomic_store_n(&h->rank, rank, __ATOMIC_RELAXED);
    if (h->world_size < 0 && world_size > 0)
        __atomic_store_n(&h->world_size, world_size, __ATOMIC_RELAXED);
}

__attribute__((destructor)) static void core_destructor(void)
{
    sp_core_shutdown(g_exit_status);
}
