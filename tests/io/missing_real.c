/*
 * missing_real.c - a program that reaches the recorder's NCCL and CUDA
 * interposers with neither library loaded (through dlsym, as a plugin
 * loader might): the calls must fail cleanly, the way docs/preload.md
 * says (the family's error value, errno ENOSYS, one line on stderr per
 * function), never crash.  Prints "name same_error errno" per call.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <nccl.h>
#include <stdio.h>

#define CALLS 2

int main(void)
{
    ncclResult_t (*allreduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                              cudaStream_t) = (__typeof__(allreduce))dlsym(RTLD_DEFAULT, "ncclAllReduce");
    cudaError_t (*sync)(void) = (__typeof__(sync))dlsym(RTLD_DEFAULT, "cudaDeviceSynchronize");
    if (!allreduce || !sync) {
        printf("not preloaded\n");
        return 2;
    }
    for (int i = 0; i < CALLS; i++) {
        errno = 0;
        ncclResult_t r = allreduce(NULL, NULL, 1, ncclFloat, ncclSum, NULL, NULL);
        printf("ncclAllReduce %d %d\n", r == ncclSystemError, errno);
        errno = 0;
        cudaError_t c = sync();
        printf("cudaDeviceSynchronize %d %d\n", c == cudaErrorSharedObjectSymbolNotFound, errno);
    }
    return 0;
}
