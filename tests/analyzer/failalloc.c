/*
 * failalloc.c - an LD_PRELOAD shim that fails one allocation: the Nth call
 * to malloc, calloc or realloc in the process (counted from the first,
 * whatever thread, libc's own included) returns NULL with ENOMEM.
 *
 *   FAILALLOC_N=N       the call to fail (0 or unset: none)
 *   FAILALLOC_COUNT=F   at exit, write the number of calls made to F
 *   FAILALLOC_TRACE=1   print the failed call's stack on stderr (to find
 *                       the caller that went on without saying), and the
 *                       stack of a SIGSEGV or SIGABRT that follows
 *
 * For tests/analyzer/alloc_fail.py: the analyzer either answers as it
 * does with all its memory or says that it ran out, never in between.
 * The real allocators are glibc's __libc_* entry points (no dlsym, which
 * allocates itself).
 */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);

static void on_crash(int sig)
{
    void *frames[32];
    backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

static atomic_ulong calls;
static unsigned long fail_at;
static int trace;

__attribute__((constructor)) static void failalloc_init(void)
{
    const char *n = getenv("FAILALLOC_N");
    fail_at = n ? strtoul(n, NULL, 10) : 0;
    trace = getenv("FAILALLOC_TRACE") != NULL;
    if (trace) {
        void *warm[2];
        backtrace(warm, 2); /* loads what backtrace needs now, not at the failing call */
        signal(SIGSEGV, on_crash);
        signal(SIGABRT, on_crash);
    }
}

__attribute__((destructor)) static void failalloc_fini(void)
{
    const char *path = getenv("FAILALLOC_COUNT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "%lu\n", (unsigned long)atomic_load(&calls));
        fclose(f);
    }
}

static int fails(void)
{
    unsigned long k = atomic_fetch_add(&calls, 1) + 1;
    if (fail_at && k == fail_at) {
        if (trace) {
            void *frames[32];
            backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
        }
        errno = ENOMEM;
        return 1;
    }
    return 0;
}

void *malloc(size_t size)
{
    return fails() ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    return fails() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    return fails() ? NULL : __libc_realloc(p, size);
}
