/*
 * no_close_range.c - a kernel older than 5.9 as a library: close_range
 * fails with ENOSYS.  Preloaded after libscaleprof.so, it is the "real"
 * close_range the recorder finds, so a test can see what closefrom does
 * where the system call is missing (containers with a new glibc on an
 * old host kernel).
 */
#include <errno.h>
#include <unistd.h>

int close_range(unsigned first, unsigned last, int flags)
{
    (void)first, (void)last, (void)flags;
    errno = ENOSYS;
    return -1;
}
