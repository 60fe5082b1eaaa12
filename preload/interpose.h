/*
 * interpose.h - how an interposer finds the function it stands in front of,
 * and what it does when there is none.
 *
 * Each family (io.c, proc.c, cuda.c, nccl.c) lists its functions once, in
 * an X-macro table: name, return type, parameters, the arguments passed on,
 * the family's error value, and the shape of the body (a read, a wait, a
 * launch, a collective...).  Each shape is written once, on top of SP_REAL
 * below, so the resolution, the missing-function policy, the re-entry
 * guard, errno and the event are the same in every interposer of a shape.
 *
 * Resolution.  The real function is looked up on first use with the
 * family's resolver (sp_real: dlsym(RTLD_NEXT); NCCL's also tries the
 * pnccl alias) and cached in a static of the interposer: a relaxed load on
 * every later call, no lock.  Two threads racing on the first call both
 * resolve and store the same pointer.
 *
 * A missing real function (no library after ours defines it: a program
 * that reaches our ncclAllReduce through dlsym without libnccl loaded, a
 * libc too old for close_range) is one policy for every family: the call
 * fails with errno = ENOSYS and the family's error value (-1, NULL,
 * MAP_FAILED, cudaErrorSharedObjectSymbolNotFound, ncclSystemError), and
 * one line on stderr, once per function, says which one.  Nothing is
 * recorded for it.  The lookup is retried on each call, so a library that
 * a job dlopens later is found.
 */
#ifndef SP_INTERPOSE_H
#define SP_INTERPOSE_H

#include <errno.h>
#include <stdatomic.h>

#include "preload.h"

/* resolve(name); when NULL, one line on stderr the first time for this
 * `said` flag.  Preserves errno. */
void *sp_resolve(const char *name, void *(*resolve)(const char *), atomic_int *said);

/* Declares `real`, the real `name`, of the function pointer type ptrtype,
 * resolved with `resolve`; when there is none, sets errno = ENOSYS and
 * runs on_missing (a return of the family's error value). */
#define SP_REAL_AS(name, ptrtype, resolve, on_missing)                              \
    static __typeof__(ptrtype) sp_real_##name;                                      \
    static atomic_int sp_missing_##name;                                            \
    __typeof__(ptrtype) real = __atomic_load_n(&sp_real_##name, __ATOMIC_RELAXED);  \
    if (SP_UNLIKELY(!real)) {                                                       \
        real = (__typeof__(ptrtype))sp_resolve(#name, resolve, &sp_missing_##name); \
        if (SP_UNLIKELY(!real)) {                                                   \
            errno = ENOSYS;                                                         \
            on_missing;                                                             \
        }                                                                           \
        __atomic_store_n(&sp_real_##name, real, __ATOMIC_RELAXED);                  \
    }

/* The same, from a table's return type and parameter list. */
#define SP_REAL(name, ret, params, resolve, on_missing) SP_REAL_AS(name, ret(*) params, resolve, on_missing)

/* Strip one level of parentheses from a table column: SP_UNPAREN (a, b) */
#define SP_UNPAREN(...) __VA_ARGS__

#endif
