/*
 * hang_job.c - a data-parallel loop that can hang or desync on purpose,
 * for `scaleprof hang` (tests/hang).
 *
 * Each rank (RANK / WORLD_SIZE / LOCAL_RANK from the launcher) runs steps
 * of a copy, a forward and a backward kernel, one all-reduce of its
 * gradient and a stream sync.  The step's all-reduce is the
 * communicator's collective number `step`.
 *
 *   --steps N            steps (default 20)
 *   --hang-rank R        rank R, at step --hang-at K, launches its kernels
 *   --hang-at K          and then blocks in its own code (sleeps) instead of
 *                        calling all-reduce #K; the others wait in #K
 *   --crash-rank R       rank R, at step --crash-at K, exits with status 3
 *   --crash-at K         after its launches instead of calling all-reduce #K
 *   --crash-signal S     ... and dies of signal S (11: SIGSEGV) instead of
 *                        exiting
 *   --desync-rank R      rank R calls all-gather instead of all-reduce at
 *   --desync-at K        step K (same buffers, a quarter of the elements)
 *   --state-dir DIR      each rank writes DIR/pid.<rank>; the blocking rank
 *                        writes DIR/blocked as it starts its last step, the
 *                        exiting one DIR/crashed
 *
 * Like tests/preload/gpu_loop.c, kernels are registered as nvcc would
 * (host stub and mangled name) and launched with cudaLaunchKernel; their
 * duration follows from the grid on the stand-in runtime (the two share
 * tests/common/gpu_job.h).
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_job.h"

#define THREADS_PER_BLOCK 1000
#define BLOCKS 1000 /* 1 ms per kernel on the stand-in runtime */
#define COUNT 65536

#define CALL(expr)                                                    \
    do {                                                              \
        int rc_ = (int)(expr);                                        \
        if (rc_ != 0) {                                               \
            fprintf(stderr, "hang_job: %s failed: %d\n", #expr, rc_); \
            exit(1);                                                  \
        }                                                             \
    } while (0)

static void write_state(const char *dir, const char *name, long value)
{
    if (!dir) return;
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f) {
        fprintf(f, "%ld\n", value);
        fclose(f);
        rename(tmp, path);
    }
}

static void launch(void (*stub)(void), int blocks, cudaStream_t s)
{
    dim3 grid = {(unsigned)blocks, 1, 1}, block = {THREADS_PER_BLOCK, 1, 1};
    CALL(cudaLaunchKernel((const void *)(uintptr_t)stub, grid, block, NULL, 0, s));
}

int main(int argc, char **argv)
{
    int steps = 20, hang_rank = -1, hang_at = -1, desync_rank = -1, desync_at = -1, crash_rank = -1,
        crash_at = -1, crash_signal = 0;
    const char *state = NULL;
    /* every option but --state-dir takes a number */
    const struct {
        const char *name;
        int *value;
    } numbers[] = {
        {"--steps", &steps},
        {"--hang-rank", &hang_rank},
        {"--hang-at", &hang_at},
        {"--crash-rank", &crash_rank},
        {"--crash-at", &crash_at},
        {"--crash-signal", &crash_signal},
        {"--desync-rank", &desync_rank},
        {"--desync-at", &desync_at},
    };
    for (int i = 1; i < argc; i++) {
        size_t n = 0;
        while (n < sizeof numbers / sizeof numbers[0] && strcmp(argv[i], numbers[n].name))
            n++;
        if (n < sizeof numbers / sizeof numbers[0] && i + 1 < argc)
            *numbers[n].value = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--state-dir") && i + 1 < argc)
            state = argv[++i];
        else {
            fprintf(stderr, "hang_job: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    int rank = gpu_job_env_int("RANK", 0), world = gpu_job_env_int("WORLD_SIZE", 1);
    char name[32];
    snprintf(name, sizeof name, "pid.%d", rank);
    write_state(state, name, (long)getpid());
    gpu_job_register_kernels();
    CALL(cudaSetDevice(gpu_job_env_int("LOCAL_RANK", 0)));

    ncclUniqueId id;
    if (rank == 0) CALL(ncclGetUniqueId(&id));
    gpu_job_exchange_id("hang_job", &id, rank, world);
    ncclComm_t comm;
    CALL(ncclCommInitRank(&comm, world, id, rank));
    cudaStream_t s;
    CALL(cudaStreamCreate(&s));
    float *grad;
    size_t bytes = (size_t)COUNT * sizeof(float);
    /* room for an all-gather of a quarter of the elements from every rank */
    size_t room = bytes * (world > 4 ? (size_t)world : 4);
    CALL(cudaMalloc((void **)&grad, room));
    float *host = calloc(1, bytes);
    if (!host) return 1;

    for (int step = 1; step <= steps; step++) {
        int blocks_here = rank == hang_rank && step == hang_at;
        if (blocks_here)
            write_state(state, "blocked",
                        step); /* before the step's launches: they stay its last calls */
        for (int i = 0; i < COUNT; i++)
            host[i] = (float)(rank + step);
        CALL(cudaMemcpyAsync(grad, host, bytes, cudaMemcpyHostToDevice, s));
        launch(forward_stub, BLOCKS, s);
        launch(backward_stub, BLOCKS * 2, s);
        if (blocks_here) {
            /* a bug in the job's own code: it never reaches the collective */
            for (;;)
                sleep(1);
        }
        if (rank == crash_rank && step == crash_at) {
            fprintf(stderr, "hang_job: rank %d: giving up at step %d\n", rank, step);
            write_state(state, "crashed", step);
            if (crash_signal > 0) {
                signal(crash_signal, SIG_DFL);
                raise(crash_signal);
            }
            exit(3);
        }
        if (rank == desync_rank && step == desync_at)
            CALL(ncclAllGather(grad, grad + COUNT, COUNT / 4, ncclFloat, comm, s));
        else
            CALL(ncclAllReduce(grad, grad, COUNT, ncclFloat, ncclSum, comm, s));
        CALL(cudaStreamSynchronize(s));
    }
    CALL(cudaDeviceSynchronize());
    CALL(ncclCommDestroy(comm));
    if (rank == 0) printf("hang_job: %d steps done\n", steps);
    free(host);
    return 0;
}
