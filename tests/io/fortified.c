/*
 * fortified.c - a program built the way distributions build theirs
 * (-O2 -D_FORTIFY_SOURCE=2): its reads into a fixed-size buffer compile to
 * __read_chk and its open with run-time flags to __open64_2, not to read
 * and open.  The preload must record it all the same.
 * Usage: fortified FILE CHUNK  -> prints "bytes N calls C".
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char buf[64];
    if (argc != 3)
        return 2;
    size_t chunk = (size_t)atoi(argv[2]); /* unchecked on purpose: the fortified read checks it */
    int flags = getenv("FORTIFIED_CLOEXEC") ? O_RDONLY | O_CLOEXEC : O_RDONLY;
    int fd = open(argv[1], flags);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    long total = 0, calls = 0;
    ssize_t r;
    while ((r = read(fd, buf, chunk)) > 0) {
        total += r;
        calls++;
    }
    calls++; /* the read that returned 0 */
    close(fd);
    printf("bytes %ld calls %ld\n", total, calls);
    return 0;
}
