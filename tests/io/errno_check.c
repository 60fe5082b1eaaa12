/*
 * errno_check.c - every interposed I/O call in a situation whose result is
 * defined (a bad fd, a missing file, an interrupted read, an empty
 * non-blocking pipe, a short read at end of file, a scatter read), printing
 * what it returned, errno, and the bytes it produced; and calls that
 * succeed, printing errno after them (a call that succeeds leaves errno as
 * the program set it, the first recorded ones, on which the trace opens,
 * included).  Run with and without the preload, the two outputs must be
 * identical: the preload changes no result.  Fd numbers are never printed
 * (the preload holds its trace open, so numbers shift).  Usage:
 * errno_check DIR (a scratch directory).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#define CONTENT "0123456789"
#define CONTENT_LEN 10
#define INTERRUPT_AFTER_US 100000

int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
size_t __fread_chk(void *ptr, size_t ptrlen, size_t size, size_t n, FILE *fp);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);

static const char *err_name(int e)
{
    switch (e) {
    case 0: return "0";
    case EBADF: return "EBADF";
    case ENOENT: return "ENOENT";
    case EINTR: return "EINTR";
    case EAGAIN: return "EAGAIN";
    case ENOTSOCK: return "ENOTSOCK";
    case EINVAL: return "EINVAL";
    case EDOM: return "EDOM";
    default: return "other";
    }
}

/* ret, errno when it failed, and the bytes read when it succeeded. */
static void show(const char *what, long ret, const char *buf)
{
    int e = errno;
    printf("%-14s ret=%ld errno=%s", what, ret, ret < 0 ? err_name(e) : "-");
    if (buf && ret > 0)
        printf(" data=%.*s", (int)ret, buf);
    printf("\n");
}

static void show_fd(const char *what, int fd)
{
    int e = errno;
    printf("%-14s %s errno=%s\n", what, fd >= 0 ? "fd" : "-1", fd >= 0 ? "-" : err_name(e));
    if (fd >= 0)
        close(fd);
}

/* errno set to EDOM, then `call`, which succeeds: its result, and errno
 * after it (EDOM, untouched, in both runs). */
#define KEPT(what, call)                                                  \
    do {                                                                  \
        errno = EDOM;                                                     \
        long r_ = (long)(call);                                           \
        int e_ = errno;                                                   \
        printf("%-14s ret=%ld errno-after=%s\n", what, r_, err_name(e_)); \
    } while (0)

/* The program's first I/O calls (the trace opens on the first one
 * recorded): a pipe's fds, which the preload did not see opened (their
 * first use classifies them), written and read twice each. */
static void pipe_successes_keep_errno(void)
{
    int p[2];
    char buf[8];
    if (pipe(p) != 0) {
        perror("pipe");
        exit(1);
    }
    KEPT("kept-write1", write(p[1], "abcd", 4));
    KEPT("kept-write2", write(p[1], "efgh", 4));
    KEPT("kept-read1", read(p[0], buf, 4));
    KEPT("kept-read2", read(p[0], buf, 4));
    close(p[0]);
    close(p[1]);
}

/* A file's reads: the first after its open, the next ones, a pread. */
static void file_successes_keep_errno(const char *file)
{
    char buf[8];
    int fd = open(file, O_RDONLY);
    KEPT("kept-file1", read(fd, buf, 4));
    KEPT("kept-file2", read(fd, buf, 4));
    KEPT("kept-pread", pread(fd, buf, 4, 2));
    close(fd);
}

static void on_alarm(int sig)
{
    (void)sig;
}

static void opens(const char *dir, const char *file)
{
    char missing[4096];
    snprintf(missing, sizeof missing, "%s/no/such/file", dir);
    show_fd("open-enoent", open(missing, O_RDONLY));
    show_fd("open64-enoent", open64(missing, O_RDONLY));
    show_fd("openat-enoent", openat(AT_FDCWD, missing, O_RDONLY));
    show_fd("openat64", openat64(AT_FDCWD, file, O_RDONLY));
    show_fd("__open_2", __open_2(file, O_RDONLY));
    show_fd("__open64_2", __open64_2(missing, O_RDONLY));
    show_fd("__openat_2", __openat_2(AT_FDCWD, file, O_RDONLY));
    show_fd("__openat64_2", __openat64_2(AT_FDCWD, missing, O_RDONLY));
    show_fd("creat-enoent", creat(missing, 0600));
    show_fd("creat64-enoent", creat64(missing, 0600));
    errno = 0;
    FILE *fp = fopen(missing, "r");
    show("fopen-enoent", fp ? 0 : -1, NULL);
    fp = fopen64(missing, "r");
    show("fopen64-enoent", fp ? 0 : -1, NULL);
}

static void reads(const char *file)
{
    char buf[64];
    int fd = open(file, O_RDONLY);
    show("read-4", read(fd, buf, 4), buf);
    show("read-partial", read(fd, buf, sizeof buf), buf);
    show("read-eof", read(fd, buf, sizeof buf), buf);
    show("read-ebadf", read(-1, buf, 4), NULL);
    show("__read_chk", (lseek(fd, 0, SEEK_SET), __read_chk(fd, buf, 3, sizeof buf)), buf);
    show("pread-short", pread(fd, buf, 10, 8), buf);
    show("pread64", pread64(fd, buf, 4, 2), buf);
    show("__pread_chk", __pread_chk(fd, buf, 4, 5, sizeof buf), buf);
    show("__pread64_chk", __pread64_chk(fd, buf, 4, 6, sizeof buf), buf);
    show("pread-ebadf", pread(-1, buf, 4, 0), NULL);

    char a[3], b[3], c[3];
    struct iovec iov[3] = {{a, 3}, {b, 3}, {c, 3}};
    lseek(fd, 0, SEEK_SET);
    long r = readv(fd, iov, 3);
    snprintf(buf, sizeof buf, "%.3s|%.3s|%.3s", a, b, c);
    show("readv-scatter", r, r > 0 ? buf : NULL);
    show("preadv", preadv(fd, iov, 3, 4), a);
    show("preadv64", preadv64(fd, iov, 2, 7), a);
    show("preadv2", preadv2(fd, iov, 1, 1, 0), a);
    show("preadv64v2", preadv64v2(fd, iov, 1, 2, 0), a);
    show("readv-ebadf", readv(-1, iov, 3), NULL);
    show("close", close(fd), NULL);
    show("close-ebadf", close(fd), NULL);
}

static void stdio_reads(const char *file)
{
    char buf[64];
    FILE *fp = fopen(file, "r");
    size_t n = fread(buf, 1, 4, fp);
    show("fread-4", (long)n, buf);
    n = fread(buf, 1, sizeof buf, fp);
    show("fread-partial", (long)n, buf);
    printf("%-14s eof=%d\n", "feof", feof(fp) != 0);
    rewind(fp);
    /* Parenthesized: under -O2 the fread_unlocked macro is inlined and never
     * reaches libc (nor us); programs calling the function are recorded. */
    show("fread_unlocked", (long)(fread_unlocked)(buf, 2, 3, fp), buf);
    show("__fread_chk", (long)__fread_chk(buf, sizeof buf, 1, 2, fp), buf);
    show("fclose", fclose(fp), NULL);
    FILE *fp64 = fopen64(file, "r");
    show("fread-64", (long)fread(buf, 1, 3, fp64), buf);
    fclose(fp64);
}

static void pipes_and_sockets(void)
{
    char buf[64];
    int p[2];
    if (pipe(p) != 0)
        return;
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    show("read-eagain", read(p[0], buf, 4), NULL);
    fcntl(p[0], F_SETFL, 0);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: the read must fail */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, INTERRUPT_AFTER_US}};
    setitimer(ITIMER_REAL, &it, NULL);
    show("read-eintr", read(p[0], buf, 4), NULL);

    show("write-pipe", write(p[1], "abc", 3), NULL);
    struct pollfd pfd = {p[0], POLLIN, 0};
    show("poll-ready", poll(&pfd, 1, 1000), NULL);
    printf("%-14s revents=%d\n", "poll-revents", pfd.revents);
    show("__poll_chk", __poll_chk(&pfd, 1, 0, sizeof pfd), NULL);
    struct timespec zero = {0, 0};
    show("ppoll", ppoll(&pfd, 1, &zero, NULL), NULL);
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    struct timeval tv = {0, 0};
    show("select", select(p[0] + 1, &rd, NULL, NULL, &tv), NULL);
    FD_ZERO(&rd);
    FD_SET(p[0], &rd);
    show("pselect", pselect(p[0] + 1, &rd, NULL, NULL, &zero, NULL), NULL);
    show("read-pipe", read(p[0], buf, sizeof buf), buf);
    show("poll-empty", poll(&pfd, 1, 0), NULL);
    show("recv-enotsock", recv(p[0], buf, 4, 0), NULL);
    show("write-ebadf", write(-1, "x", 1), NULL);
    close(p[0]);
    close(p[1]);

    int s[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0)
        return;
    show("recv-eagain", recv(s[0], buf, 4, MSG_DONTWAIT), NULL);
    show("write-socket", write(s[1], "hello", 5), NULL);
    show("recv", recv(s[0], buf, 2, 0), buf);
    show("recvfrom", recvfrom(s[0], buf, 2, 0, NULL, NULL), buf);
    struct iovec iov = {buf, sizeof buf};
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    show("recvmsg", recvmsg(s[0], &msg, 0), buf);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = s[0]};
    epoll_ctl(ep, EPOLL_CTL_ADD, s[0], &ev);
    show("epoll_wait", epoll_wait(ep, &ev, 1, 0), NULL);
    show("epoll_pwait", epoll_pwait(-1, &ev, 1, 0, NULL), NULL);
    close(ep);
    close(s[0]);
    close(s[1]);
}

static void maps_and_dups(const char *file)
{
    int fd = open(file, O_RDONLY);
    void *m = mmap(NULL, CONTENT_LEN, PROT_READ, MAP_PRIVATE, fd, 0);
    printf("%-14s ok=%d first=%c\n", "mmap", m != MAP_FAILED, m != MAP_FAILED ? *(char *)m : '-');
    munmap(m, CONTENT_LEN);
    m = mmap64(NULL, CONTENT_LEN, PROT_READ, MAP_PRIVATE, -1, 0);
    printf("%-14s failed=%d errno=%s\n", "mmap64-ebadf", m == MAP_FAILED, err_name(errno));
    int d = dup(fd);
    show_fd("dup", d);
    show_fd("dup-ebadf", dup(-1));
    int high = 900;
    printf("%-14s ret=%d\n", "dup2", dup2(fd, high) == high);
    char c;
    show("read-dup2", read(high, &c, 1), &c);
    printf("%-14s ret=%d\n", "dup3", dup3(fd, high, O_CLOEXEC) == high);
    close(high);
    close(fd);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: errno_check DIR\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    pipe_successes_keep_errno();
    char file[4096];
    snprintf(file, sizeof file, "%s/content.txt", argv[1]);
    FILE *fp = fopen(file, "w");
    if (!fp || fwrite(CONTENT, 1, CONTENT_LEN, fp) != CONTENT_LEN || fclose(fp) != 0) {
        perror(file);
        return 1;
    }
    file_successes_keep_errno(file);
    opens(argv[1], file);
    reads(file);
    stdio_reads(file);
    pipes_and_sockets();
    maps_and_dups(file);
    return 0;
}
