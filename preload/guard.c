/*
 * guard.c - the re-entry guard's thread-locals and its one out-of-line
 * check (preload.h describes the guard).
 *
 * A file of its own because every part of the recorder takes the guard,
 * the service thread (fd.c) included, and core.c calls fd.c: with the
 * thread-locals in core.c, fd.c would call back into the file that calls
 * it.  It uses nothing of the recorder's.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>

#include "preload.h"

__thread int sp_guard_nested __attribute__((tls_model("initial-exec")));

/* A guard that looks stale (see preload.h): kept on an alternate signal
 * stack, whose addresses say nothing about the interrupted one; otherwise
 * its holder was jumped out of, and it is dropped. */
int sp_guard_recheck(uintptr_t frame)
{
    (void)frame;
    stack_t ss;
    int e = errno;
    int on_alt = sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
    errno = e;
    if (on_alt)
        return 1;
    sp_guard_frame = 0;
    sp_guard_nested = 0;
    return 0;
}
