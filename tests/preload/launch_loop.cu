// launch_loop.cu - an nvcc-built job for the preload tests: kernels
// launched with <<<>>> (CUDA 13 compiles them to __cudaGetKernel +
// __cudaLaunchKernel, bound as versioned symbols name@libcudart.so.13), a
// one-rank NCCL all-reduce and a stream synchronization per step.  The
// recorder must see every launch although it defines the names unversioned.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nccl.h>

#include "one_rank.h"

#define STEPS 5
#define KERNELS_PER_STEP 4
#define COUNT 1024

__global__ void scale(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= 2.0f;
}

#define CHECK(x)                                                  \
    do {                                                          \
        if ((x) != 0) {                                           \
            std::fprintf(stderr, "launch_loop: %s failed\n", #x); \
            return 1;                                             \
        }                                                         \
    } while (0)

int main()
{
    ncclComm_t comm;
    cudaStream_t s;
    const char *failed = one_rank_setup(&comm, &s);
    if (failed) {
        std::fprintf(stderr, "launch_loop: %s failed\n", failed);
        return 1;
    }
    float *x;
    CHECK(cudaMalloc(&x, COUNT * sizeof(float)));
    for (int step = 0; step < STEPS; step++) {
        for (int k = 0; k < KERNELS_PER_STEP; k++)
            scale<<<COUNT / 256, 256, 0, s>>>(x, COUNT);
        CHECK(cudaGetLastError());
        CHECK(ncclAllReduce(x, x, COUNT, ncclFloat, ncclSum, comm, s));
        CHECK(cudaStreamSynchronize(s));
    }
    CHECK(ncclCommDestroy(comm));
    std::printf("launch_loop: %d steps\n", STEPS);
    return 0;
}
