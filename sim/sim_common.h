/*
 * sim_common.h: helpers shared by the three simulated libraries (libcudart,
 * libnccl, libcupti), compiled into a small static library and linked into
 * each.  They are stateless on purpose: every shared library gets its own
 * copy, so nothing here may keep process-wide state that two copies would
 * disagree about (the clock and the environment are the same for all).
 */
#ifndef SIM_COMMON_H
#define SIM_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define SIM_NS_PER_US 1000ull
#define SIM_NS_PER_MS 1000000ull
#define SIM_NS_PER_S 1000000000ull

/* CLOCK_MONOTONIC now, in nanoseconds: the simulated timeline's clock. */
uint64_t sim_now_ns(void);

/* CLOCK_REALTIME now, in nanoseconds. */
uint64_t sim_realtime_ns(void);

/* Sleeps until the absolute CLOCK_MONOTONIC deadline (restarts on EINTR). */
void sim_sleep_until(uint64_t deadline_ns);

/* The environment variable NAME as a positive number, or FALLBACK when it
 * is unset, empty, not a number or not positive. */
double sim_env_double(const char *name, double fallback);

/* FNV-1a 64-bit hash of LEN bytes. */
uint64_t sim_hash64(const void *data, size_t len);

/* The host name (gethostname), "unknown" on failure; BUF has SIZE bytes. */
void sim_host_name(char *buf, size_t size);

/* Prints one line "sim: NAME is not supported by the simulator" on stderr. */
void sim_unsupported(const char *lib, const char *name);

/* An entry point of library lib the sim does not implement: it takes no
 * arguments (the caller owns them in the x86-64 calling convention), says
 * so, and returns err. */
#define SIM_UNSUPPORTED_ENTRY(lib, name, err) \
    int name(void);                           \
    int name(void)                            \
    {                                         \
        sim_unsupported(lib, #name);          \
        return err;                           \
    }

#endif
