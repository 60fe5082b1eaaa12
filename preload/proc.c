/*
 * proc.c - the process tree: fork, vfork, posix_spawn, the exec family and
 * the ways out (exit, _exit, _Exit).
 *
 * fork: the core's pthread_atfork handlers give the child its own file; the
 * interposer here only adds the parent's PROC FORK event, because only the
 * caller of fork() learns the child's pid.
 *
 * vfork stays vfork (x86-64; see "vfork" below): the system call is made
 * by a few instructions with no frame of their own, the child records
 * nothing and changes nothing of ours in the memory it borrows, and the
 * parent records PROC VFORK once the child has exec'd or exited.
 * posix_spawn, which glibc implements with its own CLONE_VFORK and internal
 * calls, is not affected and stays fast.
 *
 * exec: the trace is closed (flushed) before the exec, because a
 * successful exec replaces us without running any of our code; if the exec
 * returns, a new file is opened.  The new image, preloaded again, starts
 * its own file (<pid>.<n>.sprof, since it keeps the pid).  By default the
 * tree stays profiled: when the caller's environment lacks LD_PRELOAD or
 * a SCALEPROF_* variable we have, it is added back (SCALEPROF_FOLLOW=0
 * passes the caller's environment untouched).  The new environment is
 * built in bounded room on the stack, or in mapped scratch when larger
 * (child_env_make): after fork in a threaded process, malloc is best
 * avoided, and no alloca grows with the environment.  execv/execvp/execl* are interposed separately because glibc
 * calls its internal execve, not ours.
 *
 * exit: exit() records the status and lets atexit close the trace (other
 * atexit handlers may still do I/O worth seeing); _exit and _Exit skip
 * atexit, so they close the trace themselves - Python's DataLoader workers
 * leave through os._exit.
 *
 * prctl: a PR_SET_TSC that makes rdtsc trap turns the recorder's TSC off
 * first (clock.c); everything else passes through.
 *
 * spawn, exec and exit are generated from one table (PROC_FUNCTIONS) on
 * interpose.h's SP_REAL; a missing real exit ends the process with the
 * system call.  The parent's PROC events are written with the guard held
 * only around the event, never across fork or exec.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "interpose.h"
#include "preload.h"

extern char **environ;

#define SP_EXECL_MAX_ARGS 4096

static void emit_proc(int kind, pid_t pid, int status, const char *path)
{
    struct sp_event ev;
    sp_proc_event(&ev, kind, pid, status);
    if (path)
        ev.proc.path = sp_intern(path);
    sp_emit(&ev);
}

/* ---- fork and friends ---------------------------------------------------- */

/* The parent's PROC event for a child it made (fork, vfork, spawn). */
static void note_child(int kind, pid_t pid, const char *path)
{
    if (!sp_recording || sp_guard_held())
        return;
    int e = errno;
    (void)SP_GUARD_ENTER();
    emit_proc(kind, pid, 0, path);
    SP_GUARD_LEAVE();
    errno = e;
}

static pid_t real_fork(void)
{
    SP_REAL(fork, pid_t, (void), sp_real, return -1);
    return real();
}

SP_EXPORT pid_t fork(void)
{
    pid_t pid = real_fork();
    if (pid > 0)
        note_child(SP_PROC_FORK, pid, NULL);
    return pid;
}

static const char *self_path(void);
static int follow_children(void);

/* ---- clone ------------------------------------------------------------------ *
 *
 * A child made with clone(CLONE_VM) and no CLONE_SETTLS (a raw clone: not
 * a pthread, not vfork's, whose parent waits) runs on the calling
 * thread's thread-local storage, and with it on its slot of the trace: two
 * threads appending through one slot state made malformed chunks and lost
 * events uncounted.  Before such a clone the process is told
 * (sp_core_tls_lent): from then on every event takes the slow path, which
 * asks the kernel for the thread's id and counts the events of a thread
 * whose thread-local storage is another's as dropped (core.c).  A clone
 * made with syscall(SYS_clone, ...) is not seen. */
SP_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
    va_list ap;
    va_start(ap, arg); /* read whether passed or not, as libc's own wrapper does */
    pid_t *ptid = va_arg(ap, pid_t *);
    void *tls = va_arg(ap, void *);
    pid_t *ctid = va_arg(ap, pid_t *);
    va_end(ap);
    SP_REAL(clone, int, (int (*)(void *), void *, int, void *, ...), sp_real, return -1);
    if ((flags & CLONE_VM) && !(flags & (CLONE_SETTLS | CLONE_VFORK)))
        sp_core_tls_lent();
    return real(fn, stack, flags, arg, ptid, tls, ctid);
}

/* ---- vfork ----------------------------------------------------------------- *
 *
 * vfork stays vfork.  Run as fork, a spawn from a process with 4 GiB
 * touched cost 360-397 ms instead of 1 (the page tables copied), and a
 * vfork child's stores before its exec (errno after a failed exec, a flag)
 * no longer reached its parent.  A wrapper cannot call the real vfork and
 * return: the child would return through the wrapper's frame, and its
 * next calls overwrite that frame before the parent, resumed, returns
 * through it.  So vfork is written in assembly and makes the system call
 * itself with no frame of its own, as libc does: the return address is
 * popped into a register the kernel keeps, and pushed back after the call
 * in both processes.  Around it, in C, with the stack free:
 *
 *   - before (sp_vfork_prepare): the calling thread takes the re-entry
 *     guard for good and marks itself (sp_in_vfork).  The child runs on
 *     this thread's memory, TLS included, so nothing it calls is recorded
 *     and io.c leaves the fd table alone (its closes, dup2s and
 *     close_range are its own, not the parent's); its exec and _exit leave
 *     the trace alone (told apart by pid, core.c).  The parent's other
 *     threads record on as before.
 *   - after, in the parent only (sp_vfork_done): the guard and the mark
 *     are put back and PROC VFORK is recorded with the child's pid.  The
 *     child has exec'd or exited by then, and whatever it stored (errno)
 *     is kept.
 *
 * With a shadow stack (CET) in use, the child leaves with an indirect jump
 * instead of a return, so that it pops nothing of the stack it shares
 * with its parent (libc's vfork does the same).  Other architectures run
 * vfork as fork. */
__thread int sp_in_vfork __attribute__((tls_model("initial-exec")));

#if defined(__x86_64__)
static __thread uintptr_t t_vfork_guard __attribute__((tls_model("initial-exec")));
static __thread int t_vfork_nested __attribute__((tls_model("initial-exec")));

void sp_vfork_prepare(void);
long sp_vfork_done(long r);

void sp_vfork_prepare(void)
{
    int e = errno;
    if (follow_children())
        (void)self_path(); /* found here, not by the child (dladdr) */
    t_vfork_guard = sp_guard_frame;
    t_vfork_nested = sp_guard_nested;
    sp_guard_forever();
    sp_in_vfork = 1;
    errno = e;
}

long sp_vfork_done(long r)
{
    sp_in_vfork = 0;
    sp_guard_frame = t_vfork_guard;
    sp_guard_nested = t_vfork_nested;
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    note_child(SP_PROC_VFORK, (pid_t)r, NULL);
    return r;
}

#define SP_STR_(x) #x
#define SP_STR(x) SP_STR_(x)
// clang-format off
__asm__(".text\n"
        ".globl vfork\n"
        ".type vfork, @function\n"
        "vfork:\n"
        "    .cfi_startproc\n"
        "    endbr64\n"
        "    subq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    call sp_vfork_prepare@PLT\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    popq %rdi\n" /* the return address, kept by the kernel in rdi */
        "    .cfi_adjust_cfa_offset -8\n"
        "    .cfi_register rip, rdi\n"
        "    movl $" SP_STR(SYS_vfork) ", %eax\n"
        "    syscall\n"
        "    pushq %rdi\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    .cfi_rel_offset rip, 0\n"
        "    testq %rax, %rax\n"
        "    jnz 2f\n"
        "    xorl %esi, %esi\n" /* the child: is a shadow stack in use? */
        "    rdsspq %rsi\n"
        "    testq %rsi, %rsi\n"
        "    jnz 1f\n"
        "    ret\n"
        "1:  popq %rdi\n"
        "    jmp *%rdi\n"
        "2:  subq $8, %rsp\n" /* the parent, the child gone from our memory */
        "    .cfi_adjust_cfa_offset 8\n"
        "    movq %rax, %rdi\n"
        "    call sp_vfork_done@PLT\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    ret\n"
        "    .cfi_endproc\n"
        ".size vfork, .-vfork\n");
// clang-format on
#else
/* One child, one event: vfork is not also recorded as a fork. */
SP_EXPORT pid_t vfork(void)
{
    pid_t pid = real_fork();
    if (pid > 0)
        note_child(SP_PROC_VFORK, pid, NULL);
    return pid;
}
#endif

/* ---- keeping the tree profiled ------------------------------------------ */

static const char *self_path(void)
{
    static char path[4096];
    if (!path[0]) {
        Dl_info info;
        if (dladdr((void *)self_path, &info) && info.dli_fname)
            strncpy(path, info.dli_fname, sizeof path - 1);
    }
    return path;
}

static int follow_children(void)
{
    return sp_config()->follow;
}

static const char *env_find(char *const *envp, const char *name, size_t len)
{
    for (; envp && *envp; envp++)
        if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
            return *envp + len + 1;
    return NULL;
}

static size_t env_count(char *const *envp)
{
    size_t n = 0;
    while (envp && envp[n])
        n++;
    return n;
}

/* Does envp's LD_PRELOAD already name us? */
static int preload_has_us(const char *v, const char *self)
{
    const char *base = strrchr(self, '/');
    base = base ? base + 1 : self;
    return v && *base && strstr(v, base) != NULL;
}

/* What a child needs added to envp to stay profiled: the LD_PRELOAD
 * entry (*need_preload) and how many SCALEPROF_* variables of ours. */
static size_t env_missing(char *const *envp, int *need_preload)
{
    const char *self = self_path();
    *need_preload = self[0] && !preload_has_us(env_find(envp, "LD_PRELOAD", 10), self);
    size_t n = 0;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "SCALEPROF_", 10) != 0)
            continue;
        size_t len = (size_t)(strchr(*e, '=') ? strchr(*e, '=') - *e : 0);
        if (len && !env_find(envp, *e, len))
            n++;
    }
    return n;
}

/* Fill `out` (room for env_count(envp) + the missing variables + 2
 * entries) with envp plus what the child needs to stay profiled.  `pre`
 * receives the new LD_PRELOAD entry when one is needed. */
static char **env_with_preload(char *const *envp, char **out, char *pre, size_t pre_len, int need_preload)
{
    const char *self = self_path();
    size_t n = 0;
    const char *old = env_find(envp, "LD_PRELOAD", 10);
    for (char *const *e = envp; e && *e; e++) {
        if (need_preload && strncmp(*e, "LD_PRELOAD=", 11) == 0)
            continue;
        out[n++] = *e;
    }
    if (need_preload) {
        if (old && *old)
            snprintf(pre, pre_len, "LD_PRELOAD=%s:%s", self, old);
        else
            snprintf(pre, pre_len, "LD_PRELOAD=%s", self);
        out[n++] = pre;
    }
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "SCALEPROF_", 10) != 0)
            continue;
        size_t len = (size_t)(strchr(*e, '=') ? strchr(*e, '=') - *e : 0);
        if (len && !env_find(envp, *e, len))
            out[n++] = *e;
    }
    out[n] = NULL;
    return out;
}

/* The environment a child should get: envp itself when it already keeps
 * the child profiled (the usual case: the job's own environ) or when
 * SCALEPROF_FOLLOW=0, else a copy with what is missing added.  The copy
 * is built in room of bounded size in the caller's frame (struct
 * child_env: 2 KiB of pointers), never alloca'd to the environment's
 * size: exec with 40,000 variables from a thread with a 256 KiB stack
 * overflowed it.  A larger copy goes into scratch memory mapped for it
 * (no malloc: this runs after fork in a threaded process and in a vfork
 * child), unmapped by child_env_done when the exec returns or the spawn
 * is made.  A vfork child shares its parent's memory, where a mapping
 * would outlive a successful exec: there a large environment is passed
 * on unchanged (its program then runs unrecorded when it lacked the
 * preload). */
#define SP_ENV_ROOM 256 /* pointers in the caller's frame */
#define SP_ENV_PRE_ROOM 512

struct child_env {
    char **env;
    void *map;
    size_t map_len;
    char pre[SP_ENV_PRE_ROOM];
    char *room[SP_ENV_ROOM];
};

static void *scratch_map(size_t len)
{
    long p = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
    return p < 0 && p > -4096 ? NULL : (void *)p;
}

static void child_env_make(struct child_env *ce, char *const *envp)
{
    ce->env = (char **)envp;
    ce->map = NULL;
    if (!follow_children())
        return;
    int e = errno;
    int need_preload;
    size_t missing = env_missing(envp, &need_preload);
    if (!need_preload && !missing) {
        errno = e;
        return; /* nothing to add: envp as it is */
    }
    const char *old = env_find(envp, "LD_PRELOAD", 10);
    size_t pre_len = need_preload ? sizeof "LD_PRELOAD=" + strlen(self_path()) + 1 + (old ? strlen(old) : 0) : 1;
    size_t entries = env_count(envp) + missing + 2;
    char **out = ce->room;
    char *pre = ce->pre;
    if (entries > SP_ENV_ROOM || pre_len > sizeof ce->pre) {
        if (sp_core_in_memory_sharing_child()) {
            errno = e;
            return; /* see above: passed on unchanged */
        }
        size_t len = entries * sizeof(char *) + pre_len;
        void *map = scratch_map(len);
        if (!map) {
            errno = e;
            return;
        }
        ce->map = map;
        ce->map_len = len;
        out = map;
        pre = (char *)map + entries * sizeof(char *);
    }
    ce->env = env_with_preload(envp, out, pre, pre_len, need_preload);
    errno = e;
}

static void child_env_done(struct child_env *ce)
{
    if (ce->map) {
        int e = errno;
        syscall(SYS_munmap, ce->map, ce->map_len);
        ce->map = NULL;
        errno = e;
    }
}

/* In the interposer's frame: `env` is the environment to pass on. */
#define CHILD_ENV_DECLARE(env, envp) \
    struct child_env ce_;            \
    child_env_make(&ce_, (envp));    \
    char **env = ce_.env

/* ---- spawn, exec and the ways out: the table ---------------------------------
 *
 * Columns: shape, name, return type, parameters, arguments, the value
 * returned when the real function is missing, then the shape's own:
 *
 *   SPAWN  the program (for the PROC SPAWN event)
 *   EXEC   the program, and whether the exec can succeed (see may_exec)
 *   EXIT   what the core must do first (note the status, or close the
 *          trace: _exit and _Exit skip atexit)
 *
 * A missing exit is replaced by the system call: the process must end. */
#define PROC_FUNCTIONS(X)                                                                           \
    X(SPAWN, posix_spawn, int, (SPAWN_PARAMS), (&child, path, fa, attr, argv, env), ENOSYS, path)   \
    X(SPAWN, posix_spawnp, int, (SPAWN_PARAMS), (&child, path, fa, attr, argv, env), ENOSYS, path)  \
    X(EXEC, execve, int, (const char *path, char *const argv[], char *const envp[]),                \
      (path, argv, env), -1, path, may_exec(path))                                                  \
    X(EXEC, execvpe, int, (const char *path, char *const argv[], char *const envp[]),               \
      (path, argv, env), -1, path, 1)                                                               \
    X(EXIT, exit, void, (int status), (status), if (!sp_in_vfork) sp_core_note_exit_status(status)) \
    X(EXIT, _exit, void, (int status), (status), sp_core_shutdown(status))                          \
    X(EXIT, _Exit, void, (int status), (status), sp_core_shutdown(status))

#define SPAWN_PARAMS                                                                                   \
    pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr, \
        char *const argv[], char *const envp[]

/* posix_spawn: the child gets the environment that keeps it profiled. */
#define PROC_SHAPE_SPAWN(name, ret, params, args, errval, prog) \
    SP_EXPORT ret name params                                   \
    {                                                           \
        SP_REAL(name, ret, params, sp_real, return errval);     \
        pid_t child = 0;                                        \
        CHILD_ENV_DECLARE(env, envp);                           \
        int r = real args;                                      \
        child_env_done(&ce_);                                   \
        if (pid)                                                \
            *pid = child;                                       \
        if (r == 0)                                             \
            note_child(SP_PROC_SPAWN, child, prog);             \
        return r;                                               \
    }

/* exec: the trace is closed before (a successful exec replaces us), and
 * reopened when the exec returns.  An exec that cannot succeed is let fail
 * with the trace open. */
#define PROC_SHAPE_EXEC(name, ret, params, args, errval, prog, can_succeed)        \
    SP_EXPORT ret name params                                                      \
    {                                                                              \
        SP_REAL(name, ret, params, sp_real, return errval);                        \
        CHILD_ENV_DECLARE(env, envp);                                              \
        if (!(can_succeed)) {                                                      \
            int r_ = real args; /* fails as it would have; the trace stays open */ \
            child_env_done(&ce_);                                                  \
            return r_;                                                             \
        }                                                                          \
        sp_core_before_exec_path(prog);                                            \
        int r = real args;                                                         \
        child_env_done(&ce_);                                                      \
        sp_core_exec_failed();                                                     \
        return r;                                                                  \
    }

#define PROC_SHAPE_EXIT(name, ret, params, args, before)                      \
    SP_EXPORT ret name params                                                 \
    {                                                                         \
        SP_REAL(name, ret, params, sp_real, syscall(SYS_exit_group, status)); \
        before;                                                               \
        real args;                                                            \
        __builtin_unreachable();                                              \
    }

/* Python's subprocess and shells search PATH themselves, calling execve on
 * each candidate until one works: closing and reopening the trace around
 * every miss would leave a file per PATH entry.  An exec that cannot
 * succeed (no such file, not executable by our effective ids) is let fail
 * with the trace open.  Should one succeed after all (a race), its events
 * are still in the file's shared slots. */
static int may_exec(const char *path)
{
    return path && faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0;
}

#define PROC_DEFINE(shape, ...) PROC_SHAPE_##shape(__VA_ARGS__)
PROC_FUNCTIONS(PROC_DEFINE)

/* ---- the exec family's other names ------------------------------------------
 *
 * execv/execvp/execl* are interposed separately because glibc calls its
 * internal execve, not ours; they all end in execve or execvpe above. */

SP_EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

SP_EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

/* execl-style arguments as an argv: in room of 256 pointers in the
 * caller's frame, or in mapped scratch for more (at most
 * SP_EXECL_MAX_ARGS, else E2BIG), unmapped when the exec returns.  A
 * vfork child execl'ing more than 256 arguments leaves that mapping in
 * its parent's memory (the one case where it cannot be given back). */
#define SP_EXECL_ROOM 256

struct execl_args {
    char **argv;
    void *map;
    size_t map_len;
    char *room[SP_EXECL_ROOM];
};

/* Count the arguments after arg0 up to the NULL, then store them; 0, or
 * -1 with errno set. */
static int execl_collect(struct execl_args *a, const char *arg0, va_list ap)
{
    va_list count;
    va_copy(count, ap);
    size_t n = 1;
    if (arg0)
        while (va_arg(count, char *) && n < SP_EXECL_MAX_ARGS)
            n++;
    va_end(count);
    if (n >= SP_EXECL_MAX_ARGS) {
        errno = E2BIG;
        return -1;
    }
    a->argv = a->room;
    a->map = NULL;
    if (n + 1 > SP_EXECL_ROOM) {
        a->map_len = (n + 1) * sizeof(char *);
        a->argv = a->map = scratch_map(a->map_len);
        if (!a->map) {
            errno = ENOMEM;
            return -1;
        }
    }
    a->argv[0] = (char *)arg0;
    for (size_t i = 1; arg0 && i < n; i++)
        a->argv[i] = va_arg(ap, char *);
    a->argv[arg0 ? n : 1] = NULL;
    if (arg0)
        (void)va_arg(ap, char *); /* the NULL: execle's envp follows it */
    return 0;
}

static int execl_done(struct execl_args *a, int r)
{
    if (a->map) {
        int e = errno;
        syscall(SYS_munmap, a->map, a->map_len);
        errno = e;
    }
    return r;
}

SP_EXPORT int execl(const char *path, const char *arg, ...)
{
    struct execl_args a;
    va_list ap;
    va_start(ap, arg);
    int n = execl_collect(&a, arg, ap);
    va_end(ap);
    return n < 0 ? -1 : execl_done(&a, execve(path, a.argv, environ));
}

SP_EXPORT int execlp(const char *file, const char *arg, ...)
{
    struct execl_args a;
    va_list ap;
    va_start(ap, arg);
    int n = execl_collect(&a, arg, ap);
    va_end(ap);
    return n < 0 ? -1 : execl_done(&a, execvpe(file, a.argv, environ));
}

SP_EXPORT int execle(const char *path, const char *arg, ...)
{
    struct execl_args a;
    va_list ap;
    va_start(ap, arg);
    int n = execl_collect(&a, arg, ap);
    char *const *envp = n < 0 ? NULL : va_arg(ap, char *const *);
    va_end(ap);
    return n < 0 ? -1 : execl_done(&a, execve(path, a.argv, envp));
}

/* ---- prctl ------------------------------------------------------------------ */

/* The job's prctl: a PR_SET_TSC that makes rdtsc trap turns the
 * recorder's TSC off before the mode changes (clock.c).  Every option
 * passes through untouched, with the four arguments prctl takes (read as
 * glibc's own wrapper reads them). */
SP_EXPORT int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    if (option == PR_SET_TSC && a2 == PR_TSC_SIGSEGV)
        sp_clock_tsc_off();
    SP_REAL(prctl, int, (int, ...), sp_real, return -1);
    return real(option, a2, a3, a4, a5);
}
