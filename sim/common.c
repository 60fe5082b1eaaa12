/*
 * common.c: the clock, environment and hashing helpers of sim_common.h.
 *
 * All simulated time is CLOCK_MONOTONIC nanoseconds.  Waiting is always done
 * against absolute deadlines (clock_nanosleep with TIMER_ABSTIME), so that a
 * worker that wakes late does not push the following operations later: the
 * error of one sleep never accumulates into the next.
 */
#include "sim_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t sim_clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * SIM_NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t sim_now_ns(void) { return sim_clock_ns(CLOCK_MONOTONIC); }

uint64_t sim_realtime_ns(void) { return sim_clock_ns(CLOCK_REALTIME); }

/* A deadline already past returns at once, without the system call: on a
 * virtual machine even an expired clock_nanosleep programs a timer, tens of
 * microseconds each, and a stream of short kernels (whose ends the worker
 * reaches late) would otherwise fall behind its own model. */
void sim_sleep_until(uint64_t deadline_ns)
{
    if (sim_now_ns() >= deadline_ns)
        return;
    struct timespec ts = {
        .tv_sec = (time_t)(deadline_ns / SIM_NS_PER_S),
        .tv_nsec = (long)(deadline_ns % SIM_NS_PER_S),
    };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

double sim_env_double(const char *name, double fallback)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return fallback;
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v > 0))
        return fallback;
    return v;
}

uint64_t sim_hash64(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void sim_host_name(char *buf, size_t size)
{
    if (gethostname(buf, size) != 0 || !buf[0])
        snprintf(buf, size, "unknown");
    buf[size - 1] = '\0';
}

void sim_unsupported(const char *lib, const char *name)
{
    fprintf(stderr, "sim(%s): %s is not supported by the simulator\n", lib, name);
}
