/* fuzz_file.h - what the fuzz targets of readers that take a path share:
 * the input as a file of its own (a memfd, nothing on disk). */
#ifndef SP_FUZZ_FILE_H
#define SP_FUZZ_FILE_H
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

/* A descriptor of a file holding data[0..size), its path in path; -1 when
 * none could be made. */
static inline int fuzz_as_file(const uint8_t *data, size_t size, const char *name, char *path, size_t len)
{
    int fd = memfd_create(name, 0);
    if (fd < 0)
        return -1;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return -1;
    }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}
#endif
