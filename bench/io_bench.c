/*
 * io_bench.c - the cost of one intercepted read: COUNT reads of 4 KiB from
 * a file in the page cache, timed as a whole; prints the mean ns per call
 * twice: wall clock, then this thread's CPU time.  The second excludes the
 * compressor thread and time spent descheduled, so it stays meaningful on
 * a loaded machine; the first is what the job feels when a core is free
 * for the compressor.  io_bench.sh runs it with and without the preload.
 *
 * IDLE_THREADS (0 by default, at most 1) starts that many threads that
 * only sleep, before the reads: glibc's read does cancellation
 * bookkeeping once a process has a second thread, and the recorder's
 * service thread is one, so a single-threaded job pays that too when it
 * is recorded.  A training process has many threads already: with one
 * idle thread in both runs, the difference is what the recorder itself
 * adds to such a job.
 * Usage: io_bench FILE COUNT [IDLE_THREADS]   (FILE: at least 4 KiB, read in a loop)
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define READ_SIZE 4096
#define WARMUP_READS 1000
#define IDLE_THREADS_MAX 1

static double now_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One read per call, rewinding at end of file (lseek is not intercepted,
 * so it costs the same in both runs). */
static void read_loop(int fd, long count, char *buf)
{
    for (long i = 0; i < count; i++)
        if (read(fd, buf, READ_SIZE) < READ_SIZE)
            lseek(fd, 0, SEEK_SET);
}

/* A thread that exists and does nothing: it sleeps until the process
 * exits, and makes no call the recorder sees. */
static void *idle_thread(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv)
{
    static char buf[READ_SIZE];
    if (argc != 3 && argc != 4)
        return 2;
    long count = atol(argv[2]);
    int idle = argc == 4 ? atoi(argv[3]) : 0;
    if (idle < 0 || idle > IDLE_THREADS_MAX)
        return 2;
    for (int i = 0; i < idle; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle_thread, NULL) != 0) {
            fprintf(stderr, "io_bench: cannot start an idle thread\n");
            return 1;
        }
    }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0 || count <= 0) {
        perror(argv[1]);
        return 1;
    }
    read_loop(fd, WARMUP_READS, buf);
    double t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    read_loop(fd, count, buf);
    double t1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    printf("%.1f %.1f\n", (t1 - t0) / (double)count, (c1 - c0) / (double)count);
    close(fd);
    return 0;
}
