/*
 * percall_bench.c - what the recorder adds to one cudaLaunchKernel and one
 * ncclAllReduce, and nothing else: the calls go to stub libraries
 * (stubs.c) that return at once, so a bare call is a few ns and the
 * difference under the recorder is its own work (two clock reads, its
 * checks, the event).  preload_bench measures the same calls on the sim,
 * whose own work per call (an allocation, a lock, a worker thread to
 * wake) is most of the call and moves with the machine's load.
 *
 * Prints, as "name value" lines, medians over batches of the time per
 * call after a warm-up of WARMUP_NS (the trace open, the clock
 * calibrated): launch_ns and allreduce_ns (wall clock), launch_cpu_ns and
 * allreduce_cpu_ns (the calling thread's CPU time).
 *
 * `percall_bench launch N` and `percall_bench allreduce N` make N calls
 * after the same set-up and print nothing: percall_bench.sh counts their
 * instructions under callgrind for N and 2N.
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define BATCHES 41
#define CALLS_PER_BATCH 20000
#define WARMUP_NS 100000000ull                              /* 100 ms: past the clock's calibration */
#define STREAM ((cudaStream_t)(uintptr_t)0x7f3a5c001e00ull) /* a handle's size */

static void kernel_stub(void) {}

static ncclComm_t g_comm;
static float g_buf;

static void launch(void)
{
    dim3 grid = {1, 1, 1}, block = {1, 1, 1};
    cudaLaunchKernel((const void *)(uintptr_t)kernel_stub, grid, block, NULL, 0, STREAM);
}

static void allreduce(void)
{
    ncclAllReduce(&g_buf, &g_buf, 1, ncclFloat, ncclSum, g_comm, STREAM);
}

/* Median ns per call over BATCHES batches, on `clock`. */
static double per_call(void (*call)(void), clockid_t clock)
{
    double per[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        uint64_t t0 = bench_ns(clock);
        for (int i = 0; i < CALLS_PER_BATCH; i++)
            call();
        per[b] = (double)(bench_ns(clock) - t0) / CALLS_PER_BATCH;
    }
    return bench_median(per, BATCHES);
}

int main(int argc, char **argv)
{
    ncclUniqueId id;
    if (cudaSetDevice(0) != cudaSuccess || ncclGetUniqueId(&id) != ncclSuccess ||
        ncclCommInitRank(&g_comm, 1, id, 0) != ncclSuccess) {
        fprintf(stderr, "percall_bench: set-up failed\n");
        return 1;
    }
    if (argc == 3) {
        int is_launch = strcmp(argv[1], "launch") == 0;
        if (!is_launch && strcmp(argv[1], "allreduce") != 0)
            return 2;
        for (long i = atol(argv[2]); i > 0; i--)
            is_launch ? launch() : allreduce();
        ncclCommDestroy(g_comm);
        return 0;
    }
    for (uint64_t start = bench_ns(CLOCK_MONOTONIC); bench_ns(CLOCK_MONOTONIC) - start < WARMUP_NS;) {
        launch();
        allreduce();
    }
    printf("launch_ns %.1f\n", per_call(launch, CLOCK_MONOTONIC));
    printf("allreduce_ns %.1f\n", per_call(allreduce, CLOCK_MONOTONIC));
    printf("launch_cpu_ns %.1f\n", per_call(launch, CLOCK_THREAD_CPUTIME_ID));
    printf("allreduce_cpu_ns %.1f\n", per_call(allreduce, CLOCK_THREAD_CPUTIME_ID));
    ncclCommDestroy(g_comm);
    return 0;
}
