/*
 * alloc.c - one place that knows an allocation failed.
 *
 * The analyzer makes a few hundred allocations in as many places, and
 * where one fails it goes on with less (a finding without its medians, a
 * step without its breakdown) rather than crash.  Going on is right; going
 * on in silence is not: a figure computed without part of its data is a
 * wrong figure.  So the scaleprof executable is linked with the linker's
 * --wrap for the allocators the analyzer and the trace reader call
 * (malloc, calloc, realloc, strdup, asprintf, vasprintf: analyzer/
 * meson.build): every call from their code comes here first, goes on to
 * libc, and a null answer is remembered.
 * main() asks sp_alloc_failed() when the verb returns: a verb that lost
 * an allocation exits with SP_EXIT_NOMEM and says that its output cannot
 * be trusted, whatever it printed (tests/analyzer/alloc_fail.py fails
 * allocations one by one and holds it to that).
 *
 * Allocations inside libc (stdio buffers, opendir, regexec) and inside the
 * shared libraries the analyzer uses (libzstd, yajl, zlib) are not seen
 * here; their failures come back as errors from those calls, and where
 * the error says "no memory" (ENOMEM, REG_ESPACE, SP_E_NOMEM) the caller
 * says so with sp_alloc_lost().
 */
#include <malloc.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
char *__real_strdup(const char *s);
int __real_vasprintf(char **out, const char *fmt, va_list ap);

void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
char *__wrap_strdup(const char *s);
int __wrap_vasprintf(char **out, const char *fmt, va_list ap);
int __wrap_asprintf(char **out, const char *fmt, ...);

static atomic_int failed;

/* The analyzer allocates arrays of hundreds of megabytes at thousands of
 * ranks (a value per call or per replay node: the instance passes, the
 * peer keys, the replay's graph), frees them and allocates the next.
 * glibc maps every block above its mmap threshold (dynamic, at most 32
 * MiB) afresh and unmaps it when freed, so each page of each such array
 * faults and is cleared again: 580k page faults and a sixth of the CPU in
 * the kernel for a 1024-rank report of 16 collectives a step.  Blocks up
 * to LARGE_IN_HEAP come from the heap instead, whose top is given back
 * only past as much free: freed pages are reused (40% fewer faults, the
 * peak 1-3% higher). */
#define LARGE_IN_HEAP (1 << 30)

void sp_alloc_tune(void)
{
    mallopt(M_MMAP_THRESHOLD, LARGE_IN_HEAP);
    mallopt(M_TRIM_THRESHOLD, LARGE_IN_HEAP);
}

static void *seen(void *p, int wanted)
{
    if (!p && wanted)
        sp_alloc_lost();
    return p;
}

/* glibc answers a request for 0 bytes with a pointer too (callers that
 * test for NULL count on it); only realloc(p, 0) frees and gives NULL. */
void *__wrap_malloc(size_t size)
{
    return seen(__real_malloc(size), 1);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return seen(__real_calloc(n, size), 1);
}

void *__wrap_realloc(void *p, size_t size)
{
    return seen(__real_realloc(p, size), size != 0 || !p);
}

char *__wrap_strdup(const char *s)
{
    return seen(__real_strdup(s), 1);
}

int __wrap_vasprintf(char **out, const char *fmt, va_list ap)
{
    int n = __real_vasprintf(out, fmt, ap);
    if (n < 0)
        sp_alloc_lost();
    return n;
}

int __wrap_asprintf(char **out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = __wrap_vasprintf(out, fmt, ap);
    va_end(ap);
    return n;
}

void sp_alloc_lost(void)
{
    atomic_store_explicit(&failed, 1, memory_order_relaxed);
}

int sp_alloc_failed(void)
{
    return atomic_load_explicit(&failed, memory_order_relaxed);
}
