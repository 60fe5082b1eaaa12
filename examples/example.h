/*
 * example.h - what the example programs (ddp_train, shapes, multigpu)
 * share: their fatal errors, the checks of every CUDA and NCCL call, the
 * monotonic clock, option parsing, the kernel that stands for a layer's
 * work, the launcher's rank variables, the host-side truth
 * they log with EXAMPLE_TRUTH=FILE, whole reads and writes of pipes and
 * files, and the rendezvous through which rank 0 hands the NCCL id to the
 * other processes.
 *
 * Each program sets example_name (how its messages begin) first, and
 * g_rank once it knows its rank (-1: a program whose messages name no
 * rank).  Everything is static (inline: a program need not use it all),
 * but for the kernel, which nvcc registers by its name: each program is
 * one file.
 */
#ifndef EXAMPLE_H
#define EXAMPLE_H

#include <cuda_runtime.h>
#include <nccl.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXAMPLE_NS_PER_S 1000000000ull
#define RENDEZVOUS_TIMEOUT_S 120
#define RENDEZVOUS_POLL_US 2000

static const char *example_name;
static int g_rank;
static int example_usage_status; /* a bad option's exit status; 0: as die's */
static int truth_fd = -1;

/* ---------------------------------------------------------------- errors */

static inline void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (g_rank >= 0)
        fprintf(stderr, "%s[rank %d]: ", example_name, g_rank);
    else
        fprintf(stderr, "%s: ", example_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

#define CUDA_CHECK(call)                                                                    \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess)                                                              \
            die("%s failed: %s (%s)", #call, cudaGetErrorString(e_), cudaGetErrorName(e_)); \
    } while (0)

#define NCCL_CHECK(call)                                         \
    do {                                                         \
        ncclResult_t r_ = (call);                                \
        if (r_ != ncclSuccess)                                   \
            die("%s failed: %s", #call, ncclGetErrorString(r_)); \
    } while (0)

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * EXAMPLE_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* The long option of opts whose value is c, for messages about it; NULL
 * for none. */
static inline const char *option_name(const struct option *opts, int c)
{
    for (const struct option *o = opts; o->name; o++)
        if (o->val == c)
            return o->name;
    return NULL;
}

/* Synthetic work: ITERS multiply-adds per thread on the activation buffer
 * ACT of N floats.  Its duration follows the thread count (on the sim,
 * SIM_THREADS_PER_US), so a launch's grid sets its time. */
__global__ void busy_kernel(float *act, unsigned n, int iters, float scale)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = act[i % n];
    for (int k = 0; k < iters; k++)
        v = v * scale + 1e-3f;
    if (v == 12345.0f) /* keeps the loop; never true in practice */
        act[i % n] = v;
}

/* getopt_long over opts (short options: -h alone): the next option's value,
 * -1 after the last, and in *name its long name for parse_number. */
static inline int next_option(int argc, char **argv, const struct option *opts, const char **name)
{
    int c = getopt_long(argc, argv, "h", opts, NULL);
    *name = option_name(opts, c);
    return c;
}

/* The value of option --name, a number in [min, max]; any other ends the
 * program: "NAME: --name: ..." and example_usage_status, or as die. */
static inline double parse_number(const char *name, const char *s, double min, double max)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < min || v > max) {
        if (!example_usage_status)
            die("--%s: '%s' is not a number in [%g, %g]", name, s, min, max);
        fprintf(stderr, "%s: --%s: '%s' is not a number in [%g, %g]\n", example_name, name, s, min, max);
        exit(example_usage_status);
    }
    return v;
}

/* A launcher's variable (RANK, WORLD_SIZE...), fallback when unset. */
static inline int env_int(const char *name, int fallback)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return fallback;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < 0)
        die("%s='%s' is not a non-negative integer", name, s);
    return (int)v;
}

/* $TMPDIR/<example_name>_data, where the dataset goes by default: outside
 * the working directory, so that running an example leaves nothing in a
 * source tree. */
static inline const char *default_data_dir(void)
{
    static char dir[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/%s_data", tmp && *tmp ? tmp : "/tmp", example_name);
    return dir;
}

static inline int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --------------------------------------------------------- host truth */

static inline void truth_open(void)
{
    const char *path = getenv("EXAMPLE_TRUTH");
    if (!path || !*path)
        return;
    truth_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (truth_fd < 0)
        die("EXAMPLE_TRUTH=%s: %s", path, strerror(errno));
}

/* One JSON line, one write(): O_APPEND keeps the lines of all ranks whole. */
static inline void truth_line(const char *line, int n)
{
    if (truth_fd >= 0 && write(truth_fd, line, (size_t)n) != n)
        die("EXAMPLE_TRUTH: short write: %s", strerror(errno));
}

static inline void truth_interval(const char *type, int step, uint64_t start, uint64_t end)
{
    if (truth_fd < 0)
        return;
    char line[256];
    int n = snprintf(line, sizeof line,
                     "{\"type\":\"%s\",\"rank\":%d,\"pid\":%d,\"step\":%d,"
                     "\"start_ns\":%llu,\"end_ns\":%llu}\n",
                     type, g_rank, (int)getpid(), step, (unsigned long long)start,
                     (unsigned long long)end);
    truth_line(line, n);
}

/* ------------------------------------------------------ whole transfers */

/* All n bytes of p written to fd, or read from it: 0, or -1 on an error
 * or the end of the file. */
static inline int transfer_all(int fd, unsigned char *p, size_t n, int writing)
{
    while (n > 0) {
        ssize_t done = writing ? write(fd, p, n) : read(fd, p, n);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0)
            return -1;
        p += done;
        n -= (size_t)done;
    }
    return 0;
}

static inline int write_all(int fd, const void *p, size_t n)
{
    return transfer_all(fd, (unsigned char *)(uintptr_t)p, n, 1);
}

static inline int read_all(int fd, void *p, size_t n) { return transfer_all(fd, (unsigned char *)p, n, 0); }

/* ------------------------------------------------------------- dataset */

/* The dataset in dir: nfiles files (path_of(i)) of file_kb KiB of
 * pseudo-random bytes from seed.  A missing one is written under a
 * private name and renamed into place, so that ranks making the dataset
 * at once never read a partial file. */
static inline void make_dataset_files(const char *dir, void (*path_of)(char *, size_t, const char *, int),
                                      int nfiles, int file_kb, unsigned seed)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        die("cannot create %s: %s", dir, strerror(errno));
    for (int i = 0; i < nfiles; i++) {
        char path[4096], tmp[4200];
        path_of(path, sizeof path, dir, i);
        if (access(path, R_OK) == 0)
            continue;
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            die("cannot create %s: %s", tmp, strerror(errno));
        unsigned char block[1024];
        unsigned x = seed * 2654435761u + (unsigned)i;
        for (int kb = 0; kb < file_kb; kb++) {
            for (size_t b = 0; b < sizeof block; b++) {
                x = x * 1664525u + 1013904223u;
                block[b] = (unsigned char)(x >> 24);
            }
            if (write(fd, block, sizeof block) != (ssize_t)sizeof block)
                die("cannot write %s: %s", tmp, strerror(errno));
        }
        if (close(fd) != 0 || rename(tmp, path) != 0)
            die("cannot finish %s: %s", path, strerror(errno));
    }
}

/* Reads bytes of a batch into buf with read() calls, from the dataset's
 * files (path_of(i), nfiles of file_bytes each) from file first on, so
 * that consecutive batches come from different files. */
static inline void read_files(const char *dir, void (*path_of)(char *, size_t, const char *, int), int nfiles,
                              size_t file_bytes, uint64_t first, unsigned char *buf, size_t bytes)
{
    size_t done = 0;
    uint64_t file = first;
    while (done < bytes) {
        char path[4096];
        path_of(path, sizeof path, dir, (int)file);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            die("cannot open %s: %s", path, strerror(errno));
        size_t want = bytes - done < file_bytes ? bytes - done : file_bytes;
        while (want > 0) {
            ssize_t n = read(fd, buf + done, want);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                die("cannot read %s: %s", path, n < 0 ? strerror(errno) : "end of file");
            done += (size_t)n;
            want -= (size_t)n;
        }
        close(fd);
        file = (file + 1) % (uint64_t)nfiles;
    }
}

/* ---------------------------------------------------------- rendezvous */

/* given (the program's --rendezvous, or NULL), else the launcher's. */
static inline const char *rendezvous_dir(const char *given)
{
    if (given)
        return given;
    const char *d = getenv("SCALEPROF_RENDEZVOUS");
    if (d && *d)
        return d;
    d = getenv("SIM_RENDEZVOUS");
    return d && *d ? d : NULL;
}

/* The NCCL id of the job's world communicator: rank 0 makes it and
 * publishes it as DIR/nccl-id (written aside, then renamed), the others
 * wait for it.  option names the program's own option for DIR in the
 * message when there is none ("" when it has none). */
static inline ncclUniqueId exchange_unique_id(int rank, int world, const char *given, const char *option)
{
    ncclUniqueId id;
    if (world == 1) {
        NCCL_CHECK(ncclGetUniqueId(&id));
        return id;
    }
    const char *dir = rendezvous_dir(given);
    if (!dir)
        die("WORLD_SIZE=%d needs %s$SCALEPROF_RENDEZVOUS or $SIM_RENDEZVOUS", world, option);
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/nccl-id", dir);
    if (rank == 0) {
        NCCL_CHECK(ncclGetUniqueId(&id));
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write_all(fd, &id, sizeof id) != 0 || close(fd) != 0 ||
            rename(tmp, path) != 0)
            die("cannot publish the NCCL id at %s: %s", path, strerror(errno));
        return id;
    }
    uint64_t deadline = now_ns() + RENDEZVOUS_TIMEOUT_S * EXAMPLE_NS_PER_S;
    for (;;) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            int ok = read_all(fd, &id, sizeof id) == 0;
            close(fd);
            if (ok)
                return id;
        }
        if (now_ns() > deadline)
            die("no NCCL id at %s after %d s: is rank 0 running?", path, RENDEZVOUS_TIMEOUT_S);
        usleep(RENDEZVOUS_POLL_US);
    }
}

#endif
