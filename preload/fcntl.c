/*
 * fcntl.c - fcntl and fcntl64, for the two commands that copy a
 * descriptor.
 *
 * F_DUPFD and F_DUPFD_CLOEXEC are the dup family too (a shell saves an
 * fd with them: `exec 512>out`): the copy is told to io.c so that the new
 * number keeps its kind and path in the trace.  Every other command is
 * passed on untouched.
 */
/* Both fcntl and fcntl64 are defined here: without this, the headers
 * would rename one to the other. */
#undef _FILE_OFFSET_BITS
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

static int is_dup_cmd(int cmd)
{
    return cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC;
}

/* The argument is an int or a pointer depending on cmd; passing it on as a
 * long keeps every bit of either, as glibc's own wrapper does. */
static int fcntl_common(int (*real)(int, int, ...), int fd, int cmd, long arg)
{
    if (SP_UNLIKELY(!real)) /* while dlsym resolves it (it may call fcntl itself) */
        return (int)syscall(SYS_fcntl, fd, cmd, arg);
    int r = real(fd, cmd, arg);
    if (is_dup_cmd(cmd) && r >= 0) {
        int e = errno;
        sp_io_fd_copied(fd, r);
        errno = e;
    }
    return r;
}

SP_EXPORT int fcntl(int fd, int cmd, ...)
{
    static int (*real)(int, int, ...);
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);
    va_end(ap);
    if (SP_UNLIKELY(!real) && !sp_guard_held()) real = (int (*)(int, int, ...))sp_real("fcntl");
    return fcntl_common(real, fd, cmd, arg);
}

SP_EXPORT int fcntl64(int fd, int cmd, ...)
{
    static int (*real)(int, int, ...);
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);
    va_end(ap);
    if (SP_UNLIKELY(!real) && !sp_guard_held()) real = (int (*)(int, int, ...))sp_real("fcntl64");
    return fcntl_common(real, fd, cmd, arg);
}
