/*
 * start_first.c - the cost of a process's first recorded call (the one
 * that creates its trace), with a second thread alive, as start_bench.sh
 * measures it.  Prints "first_us N" for open() of a small file and
 * "second_us N" for the next one.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void *idle(void *arg)
{
    (void)arg;
    pause();
    return NULL;
}

int main(int argc, char **argv)
{
    const char *file = argc > 1 ? argv[1] : "/etc/hostname";
    pthread_t th;
    pthread_create(&th, NULL, idle, NULL);
    usleep(1000);
    double a = now_us();
    int fd = open(file, O_RDONLY);
    double b = now_us();
    close(fd);
    double c = now_us();
    fd = open(file, O_RDONLY);
    double d = now_us();
    close(fd);
    printf("first_us %.0f\nsecond_us %.1f\n", b - a, d - c);
    return 0;
}
