/*
 * test_isolation.c - the recorder lives inside the job and must stay out of
 * its way:
 *   - the preload interposes open, write, close, mmap... in the same
 *     process; the writer's own file work must not go through them (it
 *     would record itself, or recurse).  This test defines those functions
 *     itself, as the preload does, and counts the calls the writer makes
 *     while it creates, fills, compresses and closes a trace: none;
 *   - the job's signals (SIGINT, SIGTERM, SIGCHLD, SIGUSR1...) must never
 *     be delivered to the compressor thread: it blocks them all.
 */
/* Every name below must be its own symbol, not an alias made by the
 * large-file redirections of the C library's headers. */
#undef _FILE_OFFSET_BITS
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "testutil.h"

static volatile int counting;
static int calls;

#define COUNT() (counting ? (void)__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) : (void)0)

/* Interposers, forwarding with raw system calls like a preload would. */
int open(const char *path, int flags, ...);
int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int mode = va_arg(ap, int);
    va_end(ap);
    COUNT();
    return (int)syscall(SYS_openat, -100, path, flags, mode);
}
int openat(int dir, const char *path, int flags, ...);
int openat(int dir, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int mode = va_arg(ap, int);
    va_end(ap);
    COUNT();
    return (int)syscall(SYS_openat, dir, path, flags, mode);
}
ssize_t write(int fd, const void *buf, size_t n)
{
    COUNT();
    return syscall(SYS_write, fd, buf, n);
}
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    COUNT();
    return syscall(SYS_pwrite64, fd, buf, n, off);
}
int close(int fd)
{
    COUNT();
    return (int)syscall(SYS_close, fd);
}
int ftruncate(int fd, off_t len)
{
    COUNT();
    return (int)syscall(SYS_ftruncate, fd, len);
}
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    COUNT();
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}
/* The large-file names: the same functions under a second symbol each
 * (off_t is 64 bits here). */
int open64(const char *path, int flags, ...) __attribute__((alias("open")));
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) __attribute__((alias("pwrite")));
int ftruncate64(int fd, off_t len) __attribute__((alias("ftruncate")));
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) __attribute__((alias("mmap")));

static void writer_makes_no_interposable_calls(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/quiet.sprof", dir);
    struct sp_writer_opts o = {.slot_size = 4096, .slot_count = 8, .background = 1, .flush_interval_ms = 1};
    int err;
    counting = 1;
    struct sp_writer *w = sp_writer_create(path, &o, &err);
    CHECK(w, "create: %s", sp_strerror(err));
    struct sp_event ev = {.type = SP_EV_IO};
    int accepted = 0;
    for (int i = 0; i < 20000; i++) {
        ev.t = (uint64_t)i * 100;
        ev.io.offset = (uint64_t)i;
        accepted += sp_writer_append(w, &ev) == 0;
    }
    int rc = sp_writer_close(w);
    counting = 0;
    CHECK(rc == 0, "close: %s", sp_strerror(rc));
    CHECK(calls == 0, "the writer called %d interposable functions", calls);
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    CHECK(sp_reader_stats(r)->frames == 0, "stats start empty");
    int n = 0;
    while (sp_reader_next(r, &ev))
        n++;
    CHECK(sp_reader_stats(r)->frames > 1, "the trace went through several frames");
    sp_reader_close(r);
    CHECK(n >= accepted && accepted > 0, "all %d accepted events written: %d", accepted, n);
    printf("ok: creating, compressing and closing a trace made no interposable call\n");
}

/* The blocked-signal mask of the thread named `name`, from /proc. */
static int blocked_mask(const char *name, unsigned long long *mask)
{
    DIR *d = opendir("/proc/self/task");
    CHECK(d, "/proc/self/task");
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[300], comm[64] = "";
        snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(p, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
        if (strcmp(comm, name))
            continue;
        snprintf(p, sizeof p, "/proc/self/task/%s/status", e->d_name);
        f = fopen(p, "r");
        char line[256];
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "SigBlk: %llx", mask) == 1)
                found = 1;
        if (f)
            fclose(f);
    }
    closedir(d);
    return found;
}

static void compressor_blocks_job_signals(const char *dir)
{
    char path[4200];
    struct sp_writer *w = test_writer(dir, "signals.sprof", NULL, path, sizeof path);
    unsigned long long mask = 0;
    int found = 0;
    for (int tries = 0; tries < 100 && !found; tries++) {
        found = blocked_mask("scaleprof-zstd", &mask);
        if (!found)
            usleep(1000); /* the thread names itself when it starts */
    }
    CHECK(found, "the compressor thread is named scaleprof-zstd");
    const int sigs[] = {SIGINT, SIGTERM, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        CHECK(mask & (1ull << (sigs[i] - 1)), "signal %d blocked (mask %llx)", sigs[i], mask);
    CHECK(sp_writer_close(w) == 0, "close");
    printf("ok: the compressor thread blocks the job's signals (mask %llx)\n", mask);
}

int main(void)
{
    static void (*const tests[])(const char *) = {writer_makes_no_interposable_calls, compressor_blocks_job_signals, NULL};
    return tmpdir_run(tests);
}
