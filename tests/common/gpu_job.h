/* gpu_job.h - what the small data-parallel jobs of the tests share
 * (tests/hang/hang_job.c, tests/preload/gpu_loop.c; bench/preload_bench.c
 * takes the registration entry points).  They are built without nvcc, so
 * their kernels are registered as nvcc's start-up code would (a host stub
 * and the mangled name) and launched with cudaLaunchKernel; their
 * duration follows from the grid on the stand-in runtime.  Rank 0 hands
 * the NCCL id to the others through the launcher's rendezvous directory. */
#ifndef SP_TEST_GPU_JOB_H
#define SP_TEST_GPU_JOB_H
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define GPU_JOB_RENDEZVOUS_WAIT_MS 30000
#define GPU_JOB_POLL_MS 5

/* The runtime's registration entry points, as nvcc's code calls them. */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize);

/* The jobs' two kernels: forward(float *, int) and backward(float *, int). */
static inline void forward_stub(void) {}
static inline void backward_stub(void) {}

static inline void gpu_job_register_kernels(void)
{
    void **h = __cudaRegisterFatBinary(NULL);
    __cudaRegisterFunction(h, (const char *)(uintptr_t)forward_stub, NULL, "_Z7forwardPfi", -1,
                           NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFunction(h, (const char *)(uintptr_t)backward_stub, NULL, "_Z8backwardPfi", -1,
                           NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(h);
}

static inline int gpu_job_env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

static inline void gpu_job_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Rank 0 publishes id as DIR/<job>-nccl-id (written aside, then renamed),
 * the others wait for it; job names the program in the file and in the
 * messages of a failure, which ends the process. */
static inline void gpu_job_exchange_id(const char *job, ncclUniqueId *id, int rank, int world)
{
    if (world == 1)
        return;
    const char *dir = getenv("SCALEPROF_RENDEZVOUS");
    if (!dir || !*dir)
        dir = getenv("SIM_RENDEZVOUS");
    if (!dir || !*dir) {
        fprintf(stderr, "%s: no rendezvous directory (SCALEPROF_RENDEZVOUS)\n", job);
        exit(1);
    }
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s-nccl-id", dir, job);
    if (rank == 0) {
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0) {
            fprintf(stderr, "%s: cannot publish the NCCL id in %s\n", job, dir);
            exit(1);
        }
        return;
    }
    for (int waited = 0; waited < GPU_JOB_RENDEZVOUS_WAIT_MS; waited += GPU_JOB_POLL_MS) {
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t n = fread(id, sizeof *id, 1, f);
            fclose(f);
            if (n == 1)
                return;
        }
        gpu_job_sleep_ms(GPU_JOB_POLL_MS);
    }
    fprintf(stderr, "%s: rank %d: no NCCL id from rank 0\n", job, rank);
    exit(1);
}
#endif
