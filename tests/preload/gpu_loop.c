/*
 * gpu_loop.c - the job the preload tests profile: a small data-parallel
 * training loop written against the CUDA runtime, NCCL and NVTX APIs.
 *
 * Each rank (RANK / WORLD_SIZE / LOCAL_RANK from the launcher) copies a
 * batch to the device, runs a forward and a backward kernel, all-reduces
 * its gradient with the other ranks, waits for its stream and copies the
 * result back.  Steps and phases are NVTX ranges ("step N", "forward",
 * "backward") through the header-only NVTX v3, so markers reach the
 * profiler only through NVTX's injection interface.  Rank 0 prints one
 * line per step with the all-reduced sum: the job's own output, which must
 * not change when it is profiled.
 *
 * A C program has no nvcc, so kernels are registered the way nvcc's
 * generated code registers them (__cudaRegisterFunction: host stub and
 * mangled name) and launched with cudaLaunchKernel.  Kernel time follows
 * from the grid size on the stand-in runtime.  That, and the NCCL id's
 * rendezvous, are tests/common/gpu_job.h, shared with tests/hang's job.
 *
 * Options:
 *   --steps N          steps to run (default 10)
 *   --count N          floats all-reduced per step (default 65536)
 *   --blocks N         blocks of 1000 threads per kernel (default 2000)
 *   --subscribe-cupti  subscribe to CUPTI before anything else, as another
 *                      profiling tool would
 *   --split            also split the ranks into two halves (color rank % 2)
 *                      and all-reduce within each half every step
 *   --check-errno      set errno to a sentinel before every CUDA/NCCL call
 *                      and count the calls after which it changed; prints
 *                      "errno changed by N calls"
 *   --pipeline M       also, each step, pass M micro-batches down a pipeline
 *                      of the ranks: rank i receives from i-1 and sends to
 *                      i+1.  Even micro-batches go in one ncclGroupStart/End
 *                      with two messages each way (activation and a
 *                      smaller side buffer), odd ones as single ungrouped
 *                      calls (recv first, then send).  Every message's size
 *                      depends on its step, micro-batch and slot, so a
 *                      wrong pairing shows as a size mismatch.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_job.h"

#define ERRNO_SENTINEL 4242
#define THREADS_PER_BLOCK 1000
#define CUPTI_OK 0

static int check_errno;
static long errno_changes;

#define CALL(expr)                                                    \
    do {                                                              \
        if (check_errno)                                              \
            errno = ERRNO_SENTINEL;                                   \
        int rc_ = (int)(expr);                                        \
        if (check_errno && errno != ERRNO_SENTINEL)                   \
            errno_changes++;                                          \
        if (rc_ != 0) {                                               \
            fprintf(stderr, "gpu_loop: %s failed: %d\n", #expr, rc_); \
            exit(1);                                                  \
        }                                                             \
    } while (0)

/* What another profiling tool does first: take the CUPTI subscriber. */
static void subscribe_cupti(void)
{
    void *lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
    int (*subscribe)(void **, void *, void *) =
        lib ? (int (*)(void **, void *, void *))dlsym(lib, "cuptiSubscribe") : NULL;
    void *sub;
    if (!subscribe || subscribe(&sub, NULL, NULL) != CUPTI_OK) {
        fprintf(stderr, "gpu_loop: could not subscribe to CUPTI\n");
        exit(1);
    }
}

/* Elements in the message (step, micro-batch, slot): all different. */
static size_t pipe_count(int step, int micro, int slot)
{
    return (size_t)(1000 + 100 * step + 10 * micro + slot);
}

#define PIPE_MAX_COUNT 100000

static void pipeline(int step, int micro, int rank, int world, float *buf, ncclComm_t comm, cudaStream_t s)
{
    int prev = rank - 1, next = rank + 1 < world ? rank + 1 : -1;
    for (int m = 0; m < micro; m++) {
        if (m % 2 == 0) {
            CALL(ncclGroupStart());
            for (int slot = 0; slot < 2; slot++) {
                if (prev >= 0)
                    CALL(ncclRecv(buf, pipe_count(step, m, slot), ncclFloat, prev, comm, s));
                if (next >= 0)
                    CALL(ncclSend(buf, pipe_count(step, m, slot), ncclFloat, next, comm, s));
            }
            CALL(ncclGroupEnd());
        } else {
            if (prev >= 0)
                CALL(ncclRecv(buf, pipe_count(step, m, 0), ncclFloat, prev, comm, s));
            if (next >= 0)
                CALL(ncclSend(buf, pipe_count(step, m, 0), ncclFloat, next, comm, s));
        }
    }
}

static void launch(void (*stub)(void), int blocks, cudaStream_t s)
{
    dim3 grid = {(unsigned)blocks, 1, 1}, block = {THREADS_PER_BLOCK, 1, 1};
    CALL(cudaLaunchKernel((const void *)(uintptr_t)stub, grid, block, NULL, 0, s));
}

int main(int argc, char **argv)
{
    int steps = 10, count = 65536, blocks = 2000, split = 0, micro = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--count") && i + 1 < argc)
            count = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--blocks") && i + 1 < argc)
            blocks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--subscribe-cupti"))
            subscribe_cupti();
        else if (!strcmp(argv[i], "--split"))
            split = 1;
        else if (!strcmp(argv[i], "--pipeline") && i + 1 < argc)
            micro = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--check-errno"))
            check_errno = 1;
        else {
            fprintf(stderr, "gpu_loop: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    int rank = gpu_job_env_int("RANK", 0), world = gpu_job_env_int("WORLD_SIZE", 1);
    gpu_job_register_kernels();
    CALL(cudaSetDevice(gpu_job_env_int("LOCAL_RANK", 0)));

    ncclUniqueId id;
    if (rank == 0)
        CALL(ncclGetUniqueId(&id));
    gpu_job_exchange_id("gpu_loop", &id, rank, world);
    ncclComm_t comm;
    CALL(ncclCommInitRank(&comm, world, id, rank));

    ncclComm_t half = NULL;
    if (split)
        CALL(ncclCommSplit(comm, rank % 2, rank, &half, NULL));

    cudaStream_t s;
    CALL(cudaStreamCreate(&s));
    float *grad;
    size_t bytes = (size_t)count * sizeof(float);
    CALL(cudaMalloc((void **)&grad, bytes));
    float *pipe_buf = NULL;
    if (micro)
        CALL(cudaMalloc((void **)&pipe_buf, PIPE_MAX_COUNT * sizeof(float)));
    float *host = malloc(bytes);
    if (!host)
        return 1;

    for (int step = 1; step <= steps; step++) {
        char name[32];
        snprintf(name, sizeof name, "step %d", step);
        nvtxRangePushA(name);
        for (int i = 0; i < count; i++)
            host[i] = (float)((rank + 1) * step) + (float)(i % 7);
        CALL(cudaMemcpyAsync(grad, host, bytes, cudaMemcpyHostToDevice, s));
        nvtxRangePushA("forward");
        launch(forward_stub, blocks, s);
        nvtxRangePop();
        nvtxRangePushA("backward");
        launch(backward_stub, blocks * 2, s);
        nvtxRangePop();
        CALL(ncclAllReduce(grad, grad, (size_t)count, ncclFloat, ncclSum, comm, s));
        if (half)
            CALL(ncclAllReduce(grad, grad, (size_t)count, ncclFloat, ncclSum, half, s));
        if (micro)
            pipeline(step, micro, rank, world, pipe_buf, comm, s);
        CALL(cudaStreamSynchronize(s));
        CALL(cudaMemcpy(host, grad, bytes, cudaMemcpyDeviceToHost));
        nvtxRangePop();
        double sum = 0;
        for (int i = 0; i < count; i++)
            sum += host[i];
        if (rank == 0)
            printf("step %d sum %.1f\n", step, sum);
    }
    CALL(cudaDeviceSynchronize());
    if (half)
        CALL(ncclCommDestroy(half));
    CALL(ncclCommDestroy(comm));
    if (check_errno)
        printf("rank %d: errno changed by %ld calls\n", rank, errno_changes);
    free(host);
    return 0;
}
