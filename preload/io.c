/*
 * io.c - file, pipe and socket input, and the waits of the poll family.
 *
 * What the analyzer needs from here is "the host was waiting on input":
 * a training process blocked reading its data loader's pipe or socket, or
 * polling it, and loader workers reading files.  So every read-like call
 * becomes an IO event (duration, op, fd, fd kind, path, return value,
 * bytes asked, offset, errno) and every poll-like call a WAIT event.
 * Writes (write, pwrite, writev, fwrite) and flushes (fsync, fdatasync)
 * are recorded on pipes and sockets (a loader worker blocked pushing a
 * batch into a full queue) and on regular files (a checkpoint written and
 * flushed from the training loop); on terminals and devices they cost one
 * table lookup and are not recorded.
 *
 * The fd table.  A static array indexed by fd (SP_FD_TABLE entries; higher
 * fds are "unknown kind, no path") holds one 64-bit word per fd: the
 * interned path id, the trace generation it was interned in, the fd's kind
 * and two flags (classified, excluded).  It is written with relaxed atomic
 * stores at open/close/dup and read with one relaxed load per call: no
 * lock, no allocation.  The kind comes from one fstat at open; fds we did
 * not see opened (inherited pipes, sockets) are classified by one fstat at
 * first use and cached.
 *
 * Paths across fork.  A forked child writes a new file with a new string
 * arena, so a path id whose generation is not the current one means
 * nothing there - yet data-loader workers typically read a file their
 * parent opened (an archive, an HDF5 or LMDB file).  So at open the path is
 * also copied into a private name arena of ours (anonymous memory, hence
 * inherited by the child), and the first event on a stale entry interns the
 * name again in the current file.  The arena is append-only; once full,
 * stale entries simply lose their path.
 *
 * Path ids are cached by path (see path_id), so that files opened every
 * epoch are interned once, not once per open.
 *
 * Excluded paths (/proc, /sys, /dev, shared libraries - names ending in
 * .so or containing .so. - and the prefixes in SCALEPROF_IO_EXCLUDE,
 * colon-separated) are tracked in the table but produce no events.
 *
 * A recorded call's event is encoded straight into the thread's slot
 * (emit.h): inlined into each interposer of the read and write shapes,
 * whose op and constant arguments then cost nothing, and into wait_leave
 * for the waits.  A read or a write calls nothing but the real function
 * on its usual path (see "the reads' and writes' fast path"): anything
 * rarer is a tail call to an out-of-line copy of the same steps.
 *
 * The interposers are generated from one table (IO_FUNCTIONS, below):
 * each function is listed once with its parameters, its error value and
 * the shape of its body (a read, a wait, an open, a close, a dup, an
 * mmap), and each shape is written once, on interpose.h's SP_REAL (one
 * resolution, one policy for a missing real function).  Every interposer
 * calls the real function first-class and returns its result and errno
 * untouched; nothing is recorded when recording is off or when the call
 * comes from inside scaleprof (the re-entry guard).  The guard is taken
 * only after the real call, around our own recording, never across it:
 * nothing the real function calls is ours, and a job that siglongjmps out
 * of a blocking read (alarm-based timeouts) must leave nothing set.  The
 * fortified entry points (__read_chk, __open_2, ...) are interposed too:
 * binaries built with _FORTIFY_SOURCE call them instead of read and open
 * (libpython imports __open64_2, for one).
 */
#undef _FORTIFY_SOURCE
/* Both the plain and the 64-bit names are defined here: without this, the
 * headers would rename open to open64 and the two would collide. */
#undef _FILE_OFFSET_BITS
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <dirent.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "emit.h"
#include "interpose.h"
#include "preload.h"

#undef fread_unlocked /* macros under -O2; we define the functions */
#undef fwrite_unlocked

#define SP_FD_TABLE 65536
/* An entry: the path id in bits 0-31, the flags in 32 and 33, the kind in
 * 40-47, the generation's low 16 bits on top (a shift makes the value
 * fd_entry_current compares with, no mask). */
#define FD_PATH_MASK 0xffffffffull
#define FD_CLASSIFIED (1ull << 32)
#define FD_EXCLUDED (1ull << 33)
#define FD_KIND_SHIFT 40
#define FD_KIND_MASK 0xffull
#define FD_GEN_SHIFT 48
#define FD_GEN_MASK 0xffffull
#define SP_EXCLUDE_MAX 1024

/* ---- the fd table ------------------------------------------------------- */

static _Atomic uint64_t g_fds[SP_FD_TABLE];
static _Atomic uint32_t g_fd_name[SP_FD_TABLE]; /* offset in g_names, 0: none */

#define SP_NAME_ARENA_FULL (16u << 20)
#define SP_NAME_ARENA_TIGHT (1u << 20) /* under a tight RLIMIT_AS (sp_limits_as_tight) */
static char *_Atomic g_names;
static uint32_t g_names_size;             /* set by the mapping's winner, after g_names */
static _Atomic uint32_t g_names_used = 1; /* offset 0 means "no name" */

static char *name_arena(void)
{
    char *a = atomic_load_explicit(&g_names, memory_order_acquire);
    if (SP_LIKELY(a))
        return a;
    uint32_t size = sp_limits_as_tight() ? SP_NAME_ARENA_TIGHT : SP_NAME_ARENA_FULL;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    char *expect = NULL;
    if (!atomic_compare_exchange_strong(&g_names, &expect, (char *)p)) {
        munmap(p, size);
        return expect;
    }
    __atomic_store_n(&g_names_size, size, __ATOMIC_RELEASE); /* 0 until then: no name kept */
    return p;
}

/* Keep a copy of fd's path for re-interning after fork. */
static void name_save(int fd, const char *path)
{
    char *arena = name_arena();
    size_t len = strlen(path) + 1;
    uint32_t off = 0;
    uint32_t size = __atomic_load_n(&g_names_size, __ATOMIC_ACQUIRE);
    if (arena && len < size) {
        off = atomic_fetch_add(&g_names_used, (uint32_t)len);
        if ((uint64_t)off + len <= size)
            memcpy(arena + off, path, len);
        else
            off = 0;
    }
    atomic_store_explicit(&g_fd_name[fd], off, memory_order_relaxed);
}

static int fd_in_table(int fd)
{
    return fd >= 0 && fd < SP_FD_TABLE;
}

static int kind_of_mode(mode_t m)
{
    if (S_ISREG(m))
        return SP_FD_FILE;
    if (S_ISFIFO(m))
        return SP_FD_PIPE;
    if (S_ISSOCK(m))
        return SP_FD_SOCKET;
    if (S_ISCHR(m) || S_ISBLK(m))
        return SP_FD_DEVICE;
    return SP_FD_OTHER;
}

static int kind_of_fd(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? kind_of_mode(st.st_mode) : SP_FD_UNKNOWN;
}

static uint64_t fd_pack(uint32_t path, int kind, int excluded)
{
    return (uint64_t)path | ((uint64_t)(sp_generation & FD_GEN_MASK) << FD_GEN_SHIFT) |
           ((uint64_t)kind << FD_KIND_SHIFT) | FD_CLASSIFIED | (excluded ? FD_EXCLUDED : 0);
}

/* First sight of an fd we did not see opened: its kind, remembered. */
static __attribute__((noinline)) uint64_t fd_classify(int fd)
{
    uint64_t e = fd_pack(0, kind_of_fd(fd), 0);
    atomic_store_explicit(&g_fds[fd], e, memory_order_relaxed);
    return e;
}

/* The fd's entry, classifying it on first sight. */
static inline __attribute__((always_inline)) uint64_t fd_entry(int fd)
{
    if (!fd_in_table(fd))
        return 0;
    uint64_t e = atomic_load_explicit(&g_fds[fd], memory_order_relaxed);
    if (SP_UNLIKELY(!(e & FD_CLASSIFIED)))
        e = fd_classify(fd);
    return e;
}

static int entry_kind(uint64_t e)
{
    return (int)((e >> FD_KIND_SHIFT) & FD_KIND_MASK);
}

static uint32_t path_id(const char *path);

/* The path id of fd's entry e in the current file: interned again from
 * the name arena when e was made for an older file (before a fork). */
static uint32_t entry_path_stale(int fd, uint64_t e);

static inline uint32_t entry_path(int fd, uint64_t e)
{
    if (SP_LIKELY(((e >> FD_GEN_SHIFT) & FD_GEN_MASK) == (sp_generation & FD_GEN_MASK)))
        return (uint32_t)(e & FD_PATH_MASK);
    return entry_path_stale(fd, e);
}

static uint32_t entry_path_stale(int fd, uint64_t e)
{
    if (!fd_in_table(fd) || !(e & FD_CLASSIFIED))
        return 0;
    uint32_t off = atomic_load_explicit(&g_fd_name[fd], memory_order_relaxed);
    char *arena = atomic_load(&g_names);
    uint32_t id = off && arena ? path_id(arena + off) : 0;
    uint64_t fresh = fd_pack(id, entry_kind(e), (e & FD_EXCLUDED) != 0);
    atomic_compare_exchange_strong(&g_fds[fd], &e, fresh);
    return id;
}

/* The recorded read's one test of its fd's entry: in the table,
 * classified, not excluded, its path interned in the current file.  1
 * with *e set when so; the rest (a first sight, a path from before a
 * fork, an excluded path, an fd past the table) is fd_entry_other's.
 * The entry's flag and generation bits are core.c's generation tag
 * (preload.h), so the masked entry is compared with the tag itself: one
 * compare with memory. */
#define FD_CURRENT_MASK (FD_CLASSIFIED | FD_EXCLUDED | FD_GEN_MASK << FD_GEN_SHIFT)
_Static_assert(FD_CLASSIFIED == SP_GEN_TAG_MARK && FD_GEN_SHIFT == SP_GEN_TAG_SHIFT && FD_GEN_MASK == SP_GEN_TAG_MASK,
               "an fd entry's classified bit and generation are the generation tag's");

static inline __attribute__((always_inline)) int fd_entry_current(int fd, uint64_t *e)
{
    /* indexed by the sign-extended fd, which the event needs too: a
     * negative one is past the table as well */
    uint64_t i = (uint64_t)(int64_t)fd;
    *e = SP_LIKELY(i < SP_FD_TABLE) ? atomic_load_explicit(&g_fds[i], memory_order_relaxed) : 0;
    return (*e & FD_CURRENT_MASK) == sp_generation_tag;
}

static void fd_forget(int fd)
{
    if (SP_UNLIKELY(sp_in_vfork))
        return; /* a vfork child's closes are not its parent's */
    if (fd_in_table(fd)) {
        atomic_store_explicit(&g_fds[fd], 0, memory_order_relaxed);
        atomic_store_explicit(&g_fd_name[fd], 0, memory_order_relaxed);
    }
}

static void fd_copy(int from, int to)
{
    if (!fd_in_table(to) || SP_UNLIKELY(sp_in_vfork))
        return;
    int known = fd_in_table(from);
    atomic_store_explicit(&g_fds[to], known ? atomic_load(&g_fds[from]) : 0, memory_order_relaxed);
    atomic_store_explicit(&g_fd_name[to], known ? atomic_load(&g_fd_name[from]) : 0, memory_order_relaxed);
}

/* fcntl(F_DUPFD, F_DUPFD_CLOEXEC), interposed in fcntl.c, is a dup too. */
void sp_io_fd_copied(int from, int to)
{
    fd_copy(from, to);
}

/* ---- path ids ------------------------------------------------------------------
 *
 * A data loader opens the same files every epoch; interning the path at
 * each open would fill the trace's string arena (and then lose paths) in a
 * long run.  So ids are cached by path in a fixed, lock-free table: one
 * 64-bit word per bucket holding a tag from the path's hash, the trace
 * generation and the id, stored and loaded whole.  A racing store leaves
 * one valid entry or the other; a stale generation (after fork) misses.
 * With a 24-bit tag over 2^16 buckets, a false hit needs a 40-bit hash
 * collision. */
#define SP_PATH_CACHE (1u << 16)
#define SP_PATH_PROBES 4
#define PC_ID_MASK 0xffffffffull
#define PC_GEN_SHIFT 32
#define PC_GEN_MASK 0xffull
#define PC_TAG_SHIFT 40

static _Atomic uint64_t g_path_cache[SP_PATH_CACHE];

static uint64_t path_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint32_t path_id(const char *path)
{
    uint64_t h = path_hash(path);
    uint64_t tag = (h >> PC_TAG_SHIFT) | 1; /* never 0: 0 is an empty bucket */
    uint64_t gen = sp_generation & PC_GEN_MASK;
    unsigned b = (unsigned)h & (SP_PATH_CACHE - 1);
    for (unsigned i = 0; i < SP_PATH_PROBES; i++) {
        uint64_t e = atomic_load_explicit(&g_path_cache[(b + i) & (SP_PATH_CACHE - 1)], memory_order_relaxed);
        if (e >> PC_TAG_SHIFT == tag && ((e >> PC_GEN_SHIFT) & PC_GEN_MASK) == gen)
            return (uint32_t)(e & PC_ID_MASK);
    }
    uint32_t id = sp_intern(path);
    if (!id)
        return 0;
    gen = sp_generation & PC_GEN_MASK; /* the first intern may have opened the trace */
    /* Evict round-robin within the probe window: cheap, and good enough. */
    unsigned victim = (b + (unsigned)(h >> 20) % SP_PATH_PROBES) & (SP_PATH_CACHE - 1);
    for (unsigned i = 0; i < SP_PATH_PROBES; i++) {
        unsigned k = (b + i) & (SP_PATH_CACHE - 1);
        uint64_t e = atomic_load_explicit(&g_path_cache[k], memory_order_relaxed);
        if (!e || ((e >> PC_GEN_SHIFT) & PC_GEN_MASK) != gen) {
            victim = k;
            break;
        }
    }
    atomic_store_explicit(&g_path_cache[victim], tag << PC_TAG_SHIFT | gen << PC_GEN_SHIFT | id,
                          memory_order_relaxed);
    return id;
}

/* ---- path filter ----------------------------------------------------------- */

static char g_exclude[SP_EXCLUDE_MAX]; /* "prefix\0prefix\0\0" */
static _Atomic int g_exclude_loaded;

static void load_excludes(void)
{
    static const char builtin[] = "/proc/\0/sys/\0/dev/\0";
    memcpy(g_exclude, builtin, sizeof builtin);
    size_t used = sizeof builtin - 1;
    const char *v = getenv("SCALEPROF_IO_EXCLUDE");
    for (; v && *v; v++) {
        const char *end = strchr(v, ':');
        size_t len = end ? (size_t)(end - v) : strlen(v);
        if (len && used + len + 2 < sizeof g_exclude) {
            memcpy(g_exclude + used, v, len);
            used += len;
            g_exclude[used++] = 0;
        }
        if (!end)
            break;
        v = end;
    }
    g_exclude[used] = 0;
}

static int is_shared_library(const char *path)
{
    size_t n = strlen(path);
    return (n >= 3 && strcmp(path + n - 3, ".so") == 0) || strstr(path, ".so.") != NULL;
}

static int path_excluded(const char *path)
{
    if (!atomic_load_explicit(&g_exclude_loaded, memory_order_acquire)) {
        load_excludes();
        atomic_store_explicit(&g_exclude_loaded, 1, memory_order_release);
    }
    if (strcmp(path, "/proc") == 0 || strcmp(path, "/sys") == 0 || strcmp(path, "/dev") == 0)
        return 1;
    for (const char *p = g_exclude; *p; p += strlen(p) + 1)
        if (strncmp(path, p, strlen(p)) == 0)
            return 1;
    return is_shared_library(path);
}

/* ---- recording ------------------------------------------------------------ */

struct io_call {
    struct sp_span span; /* its start, converted at its end (preload.h) */
};

/* Start timing a call; 0 when it must pass through unrecorded.  The guard
 * is not held across the real call (nothing the real function calls is
 * interposed by us), only around our own recording after it (take/drop:
 * io_enter has just seen it free): so a job that siglongjmps out of a
 * blocking read or poll leaves nothing set. */
static inline __attribute__((always_inline)) int io_enter(struct io_call *c)
{
    if (SP_UNLIKELY(!sp_recording) || sp_guard_held())
        return 0;
    sp_span_begin(&c->span);
    return 1;
}

/* Inlined into its callers: ten arguments would otherwise go through the
 * stack on every recorded call.  `path` is the entry's path id, however
 * the caller found it (emit_io, emit_io_current). */
static inline __attribute__((always_inline)) void emit_io_path(uint64_t t0, uint64_t t1, int op, int fd,
                                                               uint64_t entry, uint32_t path, int64_t ret,
                                                               uint64_t bytes, uint64_t offset, int err)
{
    struct sp_event ev;
    sp_event_head(&ev, SP_EV_IO, t0);
    ev.io = (struct sp_ev_io){
        .dur = t1 - t0,
        .op = (uint64_t)op,
        .fd = fd,
        .fd_kind = (uint64_t)entry_kind(entry),
        .path = path,
        .ret = ret,
        .bytes = bytes,
        .offset = offset,
        .err = ret < 0 ? (uint64_t)err : 0,
    };
    sp_emit_inline(&ev); /* every caller restores errno next */
}

static inline __attribute__((always_inline)) void emit_io(uint64_t t0, uint64_t t1, int op, int fd, uint64_t entry,
                                                          int64_t ret, uint64_t bytes, uint64_t offset, int err)
{
    emit_io_path(t0, t1, op, fd, entry, entry_path(fd, entry), ret, bytes, offset, err);
}

/* emit_io for an entry whose path is the current file's (fd_entry_current,
 * fd_entry_other): the path is the entry's low word. */
static inline __attribute__((always_inline)) void emit_io_current(uint64_t t0, uint64_t t1, int op, int fd,
                                                                  uint64_t entry, int64_t ret, uint64_t bytes,
                                                                  uint64_t offset, int err)
{
    emit_io_path(t0, t1, op, fd, entry, (uint32_t)(entry & FD_PATH_MASK), ret, bytes, offset, err);
}

/* emit_io, once, for the opens and closes: they are not worth a copy of
 * the encoder each. */
static __attribute__((noinline)) void emit_io_once(uint64_t t0, uint64_t t1, int op, int fd, uint64_t entry,
                                                   int64_t ret, uint64_t bytes, uint64_t offset, int err)
{
    emit_io(t0, t1, op, fd, entry, ret, bytes, offset, err);
}

/* io_leave's end for an fd whose entry is not current (fd_entry_current):
 * seen for the first time, its path interned before a fork, excluded, or
 * past the table.  Out of line, so that the fast path calls nothing
 * between the clock and the encoder.  Preserves errno (io_leave's fast
 * path does not touch it): the fstat of a first sight and the interning
 * of a path may change it. */
static __attribute__((noinline)) void io_leave_other(uint64_t t0, uint64_t t1, int op, int fd, int64_t ret,
                                                     uint64_t bytes, uint64_t offset, int err)
{
    int saved = errno;
    uint64_t e = fd_entry(fd);
    if (!(e & FD_EXCLUDED))
        emit_io_once(t0, t1, op, fd, e, ret, bytes, offset, err);
    errno = saved;
}

/* End a timed call on `fd`: record it unless the fd is excluded.  errno is
 * read only when the call failed (the event's err), and never written: the
 * fast path below cannot change it, and every out-of-line step it may take
 * (the clock's, io_leave_other, emit.h's slow enter and reserve) restores
 * it itself, so the job sees errno as the real call left it.  Inlined into
 * each interposer, whose op and constant arguments then cost nothing. */
static inline __attribute__((always_inline)) void io_leave(struct io_call *c, int op, int fd, int64_t ret,
                                                           uint64_t bytes, uint64_t offset)
{
    int err = SP_UNLIKELY(ret < 0) ? errno : 0;
    struct sp_times tm = sp_span_end(c->span);
    uint64_t e;
    sp_guard_take();
    if (SP_LIKELY(fd_entry_current(fd, &e)))
        emit_io_current(tm.t0, tm.t0 + tm.dur, op, fd, e, ret, bytes, offset, err);
    else
        io_leave_other(tm.t0, tm.t0 + tm.dur, op, fd, ret, bytes, offset, err);
    sp_guard_drop();
}

/* ---- the reads' and writes' fast path ---------------------------------------- *
 *
 * A read or a write interposer is two functions (IO_FAST_SHAPE): the
 * exported one does only what needs no call - io_enter_fast's checks,
 * the real call, io_finish_fast - and hands everything else to
 * io_slow_NAME (before the real call) or io_finish_slow (after it), out of
 * line, by tail calls.  Any call on the path besides the real one (an
 * fd's first fstat, the trace's opening, a new slot, the clock's slow
 * path, a failed call's errno) would make the compiler keep every value
 * it needs in callee-saved registers, pushed and popped on every call;
 * this way the exported function keeps three across the real call (the
 * start, the fd, the bytes asked).  The event and its bytes are the same
 * either way. */

/* io_enter without a call: emit.h's gate open (so recording is on and no
 * thread runs on another's storage: SP_GATE_LENT), the guard free, the
 * TSC the clock.  0 sends the call to its slow
 * path, which decides in full (a call while not recording passes through
 * there).  The start is the bare tick: the fast end converts it as it is,
 * and IO_SLOW_SPAN marks it a tick for io_finish_slow. */
static inline __attribute__((always_inline)) int io_enter_fast(struct io_call *c)
{
    if (SP_UNLIKELY(atomic_load_explicit(&sp_emit_gate, memory_order_relaxed) != 0) ||
        SP_UNLIKELY(sp_guard_frame != 0) ||
        SP_UNLIKELY(!sp_clock_uses_tsc()))
        return 0;
    c->span.v = sp_rdtsc();
    return 1;
}

/* io_enter_fast's call as io_finish_slow takes it: a span (preload.h). */
#define IO_SLOW_SPAN(c) ((struct io_call){{(c).span.v | SP_SPAN_TSC}})

/* io_leave for a call that succeeded on an fd whose entry is current,
 * when emit.h's fast path takes the event and the TSC is still the clock:
 * 1 once recorded; 0, having done nothing, for io_finish_slow.  The end's
 * tick is read first, as io_leave reads it. */
static inline __attribute__((always_inline)) int io_finish_fast(struct io_call c, int op, int fd, int64_t ret,
                                                                uint64_t bytes, uint64_t offset)
{
#ifdef SP_EMIT_OUTLINE
    /* Builds with the sanitizers (emit.h): one copy of the encoder, in
     * io_finish_slow's path. */
    (void)c, (void)op, (void)fd, (void)ret, (void)bytes, (void)offset;
    return 0;
#endif
    if (SP_UNLIKELY(!sp_clock_uses_tsc()))
        return 0;
    uint64_t tsc1 = sp_rdtsc();
    uint64_t e;
    if (SP_UNLIKELY(ret < 0) || SP_UNLIKELY(!fd_entry_current(fd, &e)))
        return 0;
    sp_guard_take(); /* before the slot's check: no handler's event fills it under us */
    _Atomic long *inflight = sp_emit_try_fast();
    if (SP_UNLIKELY(!inflight)) {
        sp_guard_drop();
        return 0;
    }
    struct sp_times tm = sp_span_convert(sp_clock_load(), c.span.v, tsc1);
    struct sp_event ev;
    sp_event_head(&ev, SP_EV_IO, tm.t0);
    ev.io = (struct sp_ev_io){
        .dur = tm.dur,
        .op = (uint64_t)op,
        .fd = fd,
        .fd_kind = (uint64_t)entry_kind(e),
        .path = (uint32_t)(e & FD_PATH_MASK),
        .ret = ret,
        .bytes = bytes,
        .offset = offset,
        .err = 0,
    };
    sp_writer_put(&ev);
    sp_emit_leave_own(inflight);
    sp_guard_drop();
    return 1;
}

/* An op and an fd in one argument: io_finish_slow's six fit in registers,
 * which its callers' tail calls need. */
#define IO_OP_FD(op, fd) ((uint64_t)(op) << 32 | (uint32_t)(fd))

/* io_leave, out of line, for what io_finish_fast leaves: returns `r`, the
 * real call's result, for its callers' tail calls.  Preserves errno. */
static __attribute__((noinline)) int64_t io_finish_slow(struct io_call c, int64_t r, int64_t ret, uint64_t op_fd,
                                                        uint64_t bytes, uint64_t offset)
{
    int saved = errno;
    int op = (int)(op_fd >> 32), fd = (int)(uint32_t)op_fd;
    struct sp_times tm = sp_span_end(c.span);
    sp_guard_take();
    uint64_t e = fd_entry(fd);
    if (!(e & FD_EXCLUDED))
        emit_io_once(tm.t0, tm.t0 + tm.dur, op, fd, e, ret, bytes, offset, ret < 0 ? saved : 0);
    sp_guard_drop();
    errno = saved;
    return r;
}

/* After a successful open: remember the fd, and record the open. */
static void io_leave_open(struct io_call *c, int err, int op, int fd, const char *path)
{
    struct sp_times tm = sp_span_end(c->span);
    uint64_t t0 = tm.t0, t1 = tm.t0 + tm.dur;
    sp_guard_take();
    if (fd >= 0 && path) {
        int excluded = path_excluded(path);
        uint32_t id = excluded ? 0 : path_id(path);
        uint64_t e = fd_pack(id, kind_of_fd(fd), excluded);
        if (fd_in_table(fd)) {
            atomic_store_explicit(&g_fds[fd], e, memory_order_relaxed);
            if (!excluded)
                name_save(fd, path);
        }
        if (!excluded)
            emit_io_once(t0, t1, op, fd, e, fd, 0, 0, err);
    } else if (path && !path_excluded(path)) {
        /* A failed open: the path is worth seeing (ENOENT on a dataset). */
        uint64_t e = fd_pack(path_id(path), SP_FD_UNKNOWN, 0);
        emit_io_once(t0, t1, op, fd, e, fd, 0, 0, err);
    }
    sp_guard_drop();
    errno = err;
}

/* After the real call of the open family: record it, or, when not
 * recording, only keep the fd table right (a number reused from a closed
 * fd must not keep the old path).  Leaves errno as the real call did. */
static void open_done(struct io_call *c, int recording, int op, int fd, const char *path)
{
    int err = errno;
    if (recording)
        io_leave_open(c, err, op, fd, path);
    else
        fd_forget(fd);
    errno = err;
}

/* The end of a close: the fd's entry `e` was taken before the real call.
 * A stream without an fd (fmemopen) closing fine is no I/O worth a line. */
static void close_done(struct io_call *c, int recording, int fd, uint64_t e, int r)
{
    int err = errno;
    if (recording && !(e & FD_EXCLUDED) && (fd >= 0 || r < 0)) {
        struct sp_times tm = sp_span_end(c->span);
        sp_guard_take();
        emit_io_once(tm.t0, tm.t0 + tm.dur, SP_IO_CLOSE, fd, e, r, 0, 0, err);
        sp_guard_drop();
    }
    errno = err;
}

static void wait_leave(struct io_call *c, int err, int op, uint64_t nfds, int64_t ret, int64_t timeout_ms,
                       int first_fd)
{
    struct sp_times tm = sp_span_end(c->span);
    sp_guard_take();
    struct sp_event ev;
    sp_event_head(&ev, SP_EV_WAIT, tm.t0);
    ev.wait = (struct sp_ev_wait){
        .dur = tm.dur,
        .op = (uint64_t)op,
        .nfds = nfds,
        .ret = ret,
        .timeout_ms = timeout_ms,
        .fd_kind = first_fd >= 0 ? (uint64_t)entry_kind(fd_entry(first_fd)) : SP_FD_UNKNOWN,
    };
    sp_emit_inline(&ev);
    sp_guard_drop();
    errno = err;
}

/* ---- what the table's columns compute -------------------------------------- */

static uint64_t iov_bytes(const struct iovec *iov, int n)
{
    uint64_t sum = 0;
    for (int i = 0; i < n && iov; i++)
        sum += iov[i].iov_len;
    return sum;
}

static uint64_t msg_bytes(const struct msghdr *msg)
{
    return msg ? iov_bytes(msg->msg_iov, (int)msg->msg_iovlen) : 0;
}

static int stream_fd(FILE *fp)
{
    return fp ? fileno(fp) : -1;
}

static int64_t timespec_ms(const struct timespec *ts)
{
    return ts ? (int64_t)ts->tv_sec * 1000 + ts->tv_nsec / 1000000 : -1;
}

static int64_t timeval_ms(const struct timeval *tv)
{
    return tv ? (int64_t)tv->tv_sec * 1000 + tv->tv_usec / 1000 : -1;
}

static int first_fd_in(int nfds, const fd_set *set)
{
    for (int fd = 0; set && fd < nfds && fd < FD_SETSIZE; fd++)
        if (FD_ISSET(fd, set))
            return fd;
    return -1;
}

/* The mode argument of open/openat, present with O_CREAT or O_TMPFILE;
 * `last` is the last named parameter (flags). */
#define OPEN_MODE(last)                                        \
    mode_t mode = 0;                                           \
    if (((last)&O_CREAT) || ((last)&O_TMPFILE) == O_TMPFILE) { \
        va_list ap;                                            \
        va_start(ap, last);                                    \
        mode = (mode_t)va_arg(ap, int);                        \
        va_end(ap);                                            \
    }
#define NO_PROLOGUE (void)0

/* Writes matter where they can block: on a consumer (pipes, sockets: a
 * loader worker pushing into a full queue) or on storage (regular files: a
 * checkpoint written and flushed from the training loop).  Terminals and
 * devices are left alone. */
static int write_worth_recording(int fd)
{
    int k = entry_kind(fd_entry(fd));
    return k == SP_FD_PIPE || k == SP_FD_SOCKET || k == SP_FD_FILE;
}

/* write_worth_recording without a call: the fd classified already and of
 * a kind worth it.  0 sends the write to its slow path, which decides. */
static inline __attribute__((always_inline)) int write_fast_ok(int fd)
{
    uint64_t e = (unsigned)fd < SP_FD_TABLE ? atomic_load_explicit(&g_fds[fd], memory_order_relaxed) : 0;
    int k = entry_kind(e);
    return (e & FD_CLASSIFIED) && (k == SP_FD_PIPE || k == SP_FD_SOCKET || k == SP_FD_FILE);
}

static void dup_done(int fd, int to, int r)
{
    int e = errno;
    if (r >= 0 && fd != to)
        fd_copy(fd, to);
    errno = e;
}

/* ---- the table -----------------------------------------------------------------
 *
 * Every function of the family, once.  Columns: shape, name, return type,
 * parameters, arguments passed on, error value when the real function is
 * missing, then the shape's own:
 *
 *   READ   op, fd, bytes returned (from the result r), bytes asked, offset
 *   WRITE  the same, recorded only on files, pipes and sockets
 *   WAIT   op, number of fds, timeout in ms, first fd (both computed before
 *          the call: select rewrites its sets and its timeout)
 *   OPEN   op, prologue (OPEN_MODE for the variadic ones), fd of the result r
 *   CLOSE  fd
 *   DUP    the target fd (-1 for dup)
 *   MMAP   (none)
 *
 * The fortified entry points (__read_chk, __open_2, ...) are listed beside
 * their plain names: binaries built with _FORTIFY_SOURCE call them. */
#define IO_FUNCTIONS(X)                                                                                   \
    X(READ, read, ssize_t, (int fd, void *buf, size_t n), (fd, buf, n), -1,                               \
      SP_IO_READ, fd, r, n, 0)                                                                            \
    X(READ, __read_chk, ssize_t, (int fd, void *buf, size_t n, size_t buflen), (fd, buf, n, buflen),      \
      -1, SP_IO_READ, fd, r, n, 0)                                                                        \
    X(READ, pread, ssize_t, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off), -1,              \
      SP_IO_PREAD, fd, r, n, off)                                                                         \
    X(READ, pread64, ssize_t, (int fd, void *buf, size_t n, off64_t off), (fd, buf, n, off), -1,          \
      SP_IO_PREAD, fd, r, n, off)                                                                         \
    X(READ, __pread_chk, ssize_t, (int fd, void *buf, size_t n, off_t off, size_t buflen),                \
      (fd, buf, n, off, buflen), -1, SP_IO_PREAD, fd, r, n, off)                                          \
    X(READ, __pread64_chk, ssize_t, (int fd, void *buf, size_t n, off64_t off, size_t buflen),            \
      (fd, buf, n, off, buflen), -1, SP_IO_PREAD, fd, r, n, off)                                          \
    X(READ, readv, ssize_t, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), -1,               \
      SP_IO_READV, fd, r, iov_bytes(iov, cnt), 0)                                                         \
    X(READ, preadv, ssize_t, (int fd, const struct iovec *iov, int cnt, off_t off),                       \
      (fd, iov, cnt, off), -1, SP_IO_PREADV, fd, r, iov_bytes(iov, cnt), off)                             \
    X(READ, preadv64, ssize_t, (int fd, const struct iovec *iov, int cnt, off64_t off),                   \
      (fd, iov, cnt, off), -1, SP_IO_PREADV, fd, r, iov_bytes(iov, cnt), off)                             \
    X(READ, preadv2, ssize_t, (int fd, const struct iovec *iov, int cnt, off_t off, int flags),           \
      (fd, iov, cnt, off, flags), -1, SP_IO_PREADV, fd, r, iov_bytes(iov, cnt), off)                      \
    X(READ, preadv64v2, ssize_t, (int fd, const struct iovec *iov, int cnt, off64_t off, int flags),      \
      (fd, iov, cnt, off, flags), -1, SP_IO_PREADV, fd, r, iov_bytes(iov, cnt), off)                      \
    /* fread's result is items; the event carries bytes, like read's */                                   \
    X(READ, fread, size_t, (void *ptr, size_t size, size_t n, FILE *fp), (ptr, size, n, fp), 0,           \
      SP_IO_FREAD, stream_fd(fp), r *size, size *n, 0)                                                    \
    X(READ, fread_unlocked, size_t, (void *ptr, size_t size, size_t n, FILE *fp), (ptr, size, n, fp),     \
      0, SP_IO_FREAD, stream_fd(fp), r *size, size *n, 0)                                                 \
    X(READ, __fread_chk, size_t, (void *ptr, size_t ptrlen, size_t size, size_t n, FILE *fp),             \
      (ptr, ptrlen, size, n, fp), 0, SP_IO_FREAD, stream_fd(fp), r *size, size *n, 0)                     \
    X(READ, recv, ssize_t, (int fd, void *buf, size_t n, int flags), (fd, buf, n, flags), -1,             \
      SP_IO_RECV, fd, r, n, 0)                                                                            \
    X(READ, recvfrom, ssize_t,                                                                            \
      (int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *alen),                   \
      (fd, buf, n, flags, addr, alen), -1, SP_IO_RECV, fd, r, n, 0)                                       \
    X(READ, recvmsg, ssize_t, (int fd, struct msghdr *msg, int flags), (fd, msg, flags), -1,              \
      SP_IO_RECV, fd, r, msg_bytes(msg), 0)                                                               \
    X(WRITE, write, ssize_t, (int fd, const void *buf, size_t n), (fd, buf, n), -1, SP_IO_WRITE, fd, r,   \
      n, 0)                                                                                               \
    X(WRITE, pwrite, ssize_t, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), -1,      \
      SP_IO_PWRITE, fd, r, n, off)                                                                        \
    X(WRITE, pwrite64, ssize_t, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off), -1,  \
      SP_IO_PWRITE, fd, r, n, off)                                                                        \
    X(WRITE, writev, ssize_t, (int fd, const struct iovec *iov, int cnt), (fd, iov, cnt), -1,             \
      SP_IO_WRITEV, fd, r, iov_bytes(iov, cnt), 0)                                                        \
    X(WRITE, pwritev, ssize_t, (int fd, const struct iovec *iov, int cnt, off_t off),                     \
      (fd, iov, cnt, off), -1, SP_IO_PWRITE, fd, r, iov_bytes(iov, cnt), off)                             \
    X(WRITE, pwritev64, ssize_t, (int fd, const struct iovec *iov, int cnt, off64_t off),                 \
      (fd, iov, cnt, off), -1, SP_IO_PWRITE, fd, r, iov_bytes(iov, cnt), off)                             \
    X(WRITE, fwrite, size_t, (const void *ptr, size_t size, size_t n, FILE *fp), (ptr, size, n, fp), 0,   \
      SP_IO_FWRITE, stream_fd(fp), r *size, size *n, 0)                                                   \
    X(WRITE, fwrite_unlocked, size_t, (const void *ptr, size_t size, size_t n, FILE *fp),                 \
      (ptr, size, n, fp), 0, SP_IO_FWRITE, stream_fd(fp), r *size, size *n, 0)                            \
    X(WRITE, fsync, int, (int fd), (fd), -1, SP_IO_FSYNC, fd, r, 0, 0)                                    \
    X(WRITE, fdatasync, int, (int fd), (fd), -1, SP_IO_FDATASYNC, fd, r, 0, 0)                            \
    X(WAIT, poll, int, (struct pollfd * fds, nfds_t n, int timeout), (fds, n, timeout), -1,               \
      SP_WAIT_POLL, n, timeout, n ? fds[0].fd : -1)                                                       \
    X(WAIT, __poll_chk, int, (struct pollfd * fds, nfds_t n, int timeout, size_t fdslen),                 \
      (fds, n, timeout, fdslen), -1, SP_WAIT_POLL, n, timeout, n ? fds[0].fd : -1)                        \
    X(WAIT, ppoll, int, (struct pollfd * fds, nfds_t n, const struct timespec *ts, const sigset_t *mask), \
      (fds, n, ts, mask), -1, SP_WAIT_PPOLL, n, timespec_ms(ts), n ? fds[0].fd : -1)                      \
    X(WAIT, select, int, (int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv),              \
      (nfds, rd, wr, ex, tv), -1, SP_WAIT_SELECT, nfds, timeval_ms(tv), first_fd_in(nfds, rd))            \
    X(WAIT, pselect, int,                                                                                 \
      (int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts, const sigset_t *mask),    \
      (nfds, rd, wr, ex, ts, mask), -1, SP_WAIT_PSELECT, nfds, timespec_ms(ts), first_fd_in(nfds, rd))    \
    X(WAIT, epoll_wait, int, (int epfd, struct epoll_event *evs, int max, int timeout),                   \
      (epfd, evs, max, timeout), -1, SP_WAIT_EPOLL, max > 0 ? max : 0, timeout, -1)                       \
    X(WAIT, epoll_pwait, int,                                                                             \
      (int epfd, struct epoll_event *evs, int max, int timeout, const sigset_t *mask),                    \
      (epfd, evs, max, timeout, mask), -1, SP_WAIT_EPOLL, max > 0 ? max : 0, timeout, -1)                 \
    X(OPEN, open, int, (const char *path, int flags, ...), (path, flags, mode), -1,                       \
      SP_IO_OPEN, OPEN_MODE(flags), r)                                                                    \
    X(OPEN, open64, int, (const char *path, int flags, ...), (path, flags, mode), -1,                     \
      SP_IO_OPEN, OPEN_MODE(flags), r)                                                                    \
    X(OPEN, openat, int, (int dirfd, const char *path, int flags, ...), (dirfd, path, flags, mode),       \
      -1, SP_IO_OPEN, OPEN_MODE(flags), r)                                                                \
    X(OPEN, openat64, int, (int dirfd, const char *path, int flags, ...),                                 \
      (dirfd, path, flags, mode), -1, SP_IO_OPEN, OPEN_MODE(flags), r)                                    \
    /* the fortified opens have no mode: they refuse O_CREAT without one */                               \
    X(OPEN, __open_2, int, (const char *path, int flags), (path, flags), -1, SP_IO_OPEN,                  \
      NO_PROLOGUE, r)                                                                                     \
    X(OPEN, __open64_2, int, (const char *path, int flags), (path, flags), -1, SP_IO_OPEN,                \
      NO_PROLOGUE, r)                                                                                     \
    X(OPEN, __openat_2, int, (int dirfd, const char *path, int flags), (dirfd, path, flags), -1,          \
      SP_IO_OPEN, NO_PROLOGUE, r)                                                                         \
    X(OPEN, __openat64_2, int, (int dirfd, const char *path, int flags), (dirfd, path, flags), -1,        \
      SP_IO_OPEN, NO_PROLOGUE, r)                                                                         \
    X(OPEN, fopen, FILE *, (const char *path, const char *mode), (path, mode), NULL, SP_IO_FOPEN,         \
      NO_PROLOGUE, stream_fd(r))                                                                          \
    X(OPEN, fopen64, FILE *, (const char *path, const char *mode), (path, mode), NULL,                    \
      SP_IO_FOPEN, NO_PROLOGUE, stream_fd(r))                                                             \
    X(CLOSE, close, int, (int fd), (fd), -1, fd)                                                          \
    X(CLOSE, fclose, int, (FILE * fp), (fp), EOF, stream_fd(fp))                                          \
    X(DUP, dup, int, (int fd), (fd), -1, -1)                                                              \
    X(DUP, dup2, int, (int fd, int to), (fd, to), -1, to)                                                 \
    X(DUP, dup3, int, (int fd, int to, int flags), (fd, to, flags), -1, to)                               \
    X(MMAP, mmap, void *, (void *addr, size_t len, int prot, int flags, int fd, off_t off),               \
      (addr, len, prot, flags, fd, off), MAP_FAILED)                                                      \
    X(MMAP, mmap64, void *, (void *addr, size_t len, int prot, int flags, int fd, off64_t off),           \
      (addr, len, prot, flags, fd, off), MAP_FAILED)

/* The fortified names have no prototype in the headers once _FORTIFY_SOURCE
 * is off. */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
size_t __fread_chk(void *ptr, size_t ptrlen, size_t size, size_t n, FILE *fp);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

/* ---- the shapes ------------------------------------------------------------------ */

#define IO_REAL(name, ret, params, errval) SP_REAL(name, ret, params, sp_real, return errval)

/* What the timed shapes open with: the real function, and straight to it
 * when not recording (`pass`: the shape's own reason to pass through). */
#define IO_TIMED_PROLOGUE(name, ret, params, args, errval, pass) \
    IO_REAL(name, ret, params, errval);                          \
    struct io_call c;                                            \
    if ((pass) || !io_enter(&c))                                 \
    return real args

/* A read or a write (see "the reads' and writes' fast path"): `pass`, the
 * shape's reason to pass through, decided in full by the slow function;
 * `fast_ok`, its test without a call, by the exported one.  The fd, the
 * bytes asked and the offset are computed before the real call (they are
 * arguments, or read from them), the result after. */
#define IO_FAST_SHAPE(name, ret, params, args, errval, op, fd_, result, asked, off, pass, fast_ok)        \
    static ret(*io_real_##name) params;                                                                   \
    static __attribute__((noinline)) ret io_slow_##name params                                            \
    {                                                                                                     \
        IO_REAL(name, ret, params, errval);                                                               \
        if (__atomic_load_n(&io_real_##name, __ATOMIC_RELAXED) != real) /* shared: stored once */         \
            __atomic_store_n(&io_real_##name, real, __ATOMIC_RELAXED);                                    \
        struct io_call c;                                                                                 \
        if ((pass) || !io_enter(&c))                                                                      \
            return real args;                                                                             \
        int fd_at_ = (fd_);                                                                               \
        uint64_t asked_ = (asked), off_ = (uint64_t)(off);                                                \
        ret r = real args;                                                                                \
        return (ret)io_finish_slow(c, (int64_t)r, (int64_t)(result), IO_OP_FD(op, fd_at_), asked_, off_); \
    }                                                                                                     \
    SP_EXPORT ret name params                                                                             \
    {                                                                                                     \
        ret(*real) params = __atomic_load_n(&io_real_##name, __ATOMIC_RELAXED);                           \
        struct io_call c;                                                                                 \
        if (SP_UNLIKELY(!real) || SP_UNLIKELY(!(fast_ok)) || SP_UNLIKELY(!io_enter_fast(&c)))             \
            return io_slow_##name args;                                                                   \
        int fd_at_ = (fd_);                                                                               \
        uint64_t asked_ = (asked), off_ = (uint64_t)(off);                                                \
        ret r = real args;                                                                                \
        if (SP_LIKELY(io_finish_fast(c, op, fd_at_, (int64_t)(result), asked_, off_)))                    \
            return r;                                                                                     \
        return (ret)io_finish_slow(IO_SLOW_SPAN(c), (int64_t)r, (int64_t)(result), IO_OP_FD(op, fd_at_),  \
                                   asked_, off_);                                                         \
    }

/* A write: recorded on the kinds of fd it can block on (write_worth_recording). */
#define IO_SHAPE_WRITE(name, ret, params, args, errval, op, fd_, result, asked, off) \
    IO_FAST_SHAPE(name, ret, params, args, errval, op, fd_, result, asked, off,      \
                  !write_worth_recording(fd_), write_fast_ok(fd_))

#define IO_SHAPE_READ(name, ret, params, args, errval, op, fd_, result, asked, off) \
    IO_FAST_SHAPE(name, ret, params, args, errval, op, fd_, result, asked, off, 0, 1)

#define IO_SHAPE_WAIT(name, ret, params, args, errval, op, nfds, timeout_ms, first_fd) \
    SP_EXPORT ret name params                                                          \
    {                                                                                  \
        IO_TIMED_PROLOGUE(name, ret, params, args, errval, 0);                         \
        int64_t timeout_ = (timeout_ms);                                               \
        int first_ = (first_fd);                                                       \
        ret r = real args;                                                             \
        wait_leave(&c, errno, op, (uint64_t)(nfds), r, timeout_, first_);              \
        return r;                                                                      \
    }

#define IO_SHAPE_OPEN(name, ret, params, args, errval, op, prologue, fd_of_r) \
    SP_EXPORT ret name params                                                 \
    {                                                                         \
        IO_REAL(name, ret, params, errval);                                   \
        prologue;                                                             \
        struct io_call c;                                                     \
        int recording = io_enter(&c);                                         \
        ret r = real args;                                                    \
        open_done(&c, recording, op, fd_of_r, path);                          \
        return r;                                                             \
    }

#define IO_SHAPE_CLOSE(name, ret, params, args, errval, fd_expr) \
    SP_EXPORT ret name params                                    \
    {                                                            \
        IO_REAL(name, ret, params, errval);                      \
        int fd_ = (fd_expr);                                     \
        struct io_call c;                                        \
        int recording = io_enter(&c);                            \
        uint64_t e = recording ? fd_entry(fd_) : 0;              \
        fd_forget(fd_);                                          \
        ret r = real args;                                       \
        close_done(&c, recording, fd_, e, r);                    \
        return r;                                                \
    }

#define IO_SHAPE_DUP(name, ret, params, args, errval, to_) \
    SP_EXPORT ret name params                              \
    {                                                      \
        IO_REAL(name, ret, params, errval);                \
        ret r = real args;                                 \
        dup_done(fd, (to_) < 0 ? r : (to_), r);            \
        return r;                                          \
    }

/* mmap of a file: bytes mapped (accesses to the mapping are not seen). */
#define IO_SHAPE_MMAP(name, ret, params, args, errval)                                         \
    SP_EXPORT ret name params                                                                  \
    {                                                                                          \
        IO_TIMED_PROLOGUE(name, ret, params, args, errval, (flags & MAP_ANONYMOUS) || fd < 0); \
        ret r = real args;                                                                     \
        io_leave(&c, SP_IO_MMAP, fd, r == MAP_FAILED ? -1 : 0, len, (uint64_t)off);            \
        return r;                                                                              \
    }

#define IO_DEFINE(shape, ...) IO_SHAPE_##shape(__VA_ARGS__)
IO_FUNCTIONS(IO_DEFINE)

/* ---- the rest, each its own shape ------------------------------------------------ */

SP_EXPORT int creat(const char *path, mode_t mode)
{
    return open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

SP_EXPORT int creat64(const char *path, mode_t mode)
{
    return open64(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

/* close_range and closefrom (Python's os.closerange, daemons, children
 * before exec): the fds closed leave the fd table. */
static void forget_range(unsigned first, unsigned last)
{
    for (unsigned fd = first; fd <= last && fd < SP_FD_TABLE; fd++)
        fd_forget((int)fd);
}

SP_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    IO_REAL(close_range, int, (unsigned first, unsigned last, int flags), -1);
    int r = real(first, last, flags);
    int e = errno;
    if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC))
        forget_range(first, last);
    errno = e;
    return r;
}

/* close() every fd from `first` on, as listed in /proc/self/fd: glibc's
 * own fallback for kernels without close_range (before 5.9, still common
 * under containers with a newer glibc).  Raw getdents64 into a stack
 * buffer, no malloc: closefrom is what a child runs between fork and exec.
 * Our close() keeps the fd table right.  The
 * listing changes as fds close, so it is read again from the start until
 * a pass closes nothing. */
#define SP_DIRENT_BUF 1024

static void close_each_from(unsigned first)
{
    int dfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    char buf[SP_DIRENT_BUF] __attribute__((aligned(8)));
    int closed;
    do {
        closed = 0;
        long n;
        while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
            for (long off = 0; off < n;) {
                const struct dirent64 *d = (const struct dirent64 *)(const void *)(buf + off);
                off += d->d_reclen;
                char *end;
                long fd = strtol(d->d_name, &end, 10);
                if (*end || end == d->d_name || fd < (long)first || fd == dfd)
                    continue;
                close((int)fd);
                closed = 1;
            }
        }
    } while (closed && syscall(SYS_lseek, dfd, 0L, SEEK_SET) == 0);
    syscall(SYS_close, dfd);
}

SP_EXPORT void closefrom(int lowfd)
{
    /* glibc's closefrom is close_range(lowfd, ~0U, 0) with a fallback;
     * ours must fall back too, or the job's fds stay open. */
    unsigned first = lowfd < 0 ? 0 : (unsigned)lowfd;
    int e = errno;
    if (close_range(first, ~0U, 0) != 0)
        close_each_from(first);
    errno = e;
}
