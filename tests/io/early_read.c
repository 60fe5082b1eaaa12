/*
 * early_read.c - a library whose constructor reads a file ($EARLY_READ)
 * before the recorder's own constructors have run: preloaded after
 * libscaleprof.so, it is initialized first, and its read() is the
 * recorder's.  The io story 'early' checks that such a first event opens
 * the trace with everything a later one gets, the CPU sampler included.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void early_read(void)
{
    const char *path = getenv("EARLY_READ");
    if (!path)
        return;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    char buf[512];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    close(fd);
}
