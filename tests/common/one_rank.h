/* one_rank.h - a job of one rank on device 0, as the single-rank jobs
 * start (tests/preload/launch_loop.cu, bench/preload_bench.c): its NCCL
 * communicator of one (a fresh id) and a stream.  C and C++ alike. */
#ifndef SP_TEST_ONE_RANK_H
#define SP_TEST_ONE_RANK_H
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stddef.h>

/* NULL, or the name of the call that failed. */
static inline const char *one_rank_setup(ncclComm_t *comm, cudaStream_t *s)
{
    ncclUniqueId id;
    if (cudaSetDevice(0) != cudaSuccess)
        return "cudaSetDevice";
    if (ncclGetUniqueId(&id) != ncclSuccess)
        return "ncclGetUniqueId";
    if (ncclCommInitRank(comm, 1, id, 0) != ncclSuccess)
        return "ncclCommInitRank";
    if (cudaStreamCreate(s) != cudaSuccess)
        return "cudaStreamCreate";
    return NULL;
}
#endif
