/*
 * stubs.c - CUDA runtime, NCCL and CUPTI functions that do nothing, for
 * percall_bench: the recorder's interposers in front of real functions
 * that cost a few instructions, so that what a call costs under the
 * recorder is what the recorder adds.  Built three times, once per
 * library (STUB_CUDART, STUB_NCCL, STUB_CUPTI), under the libraries'
 * own names; the recorder finds the CUPTI one through SCALEPROF_CUPTI_LIB,
 * attaches to it as to the real one (so collectives take the path they
 * take under CUPTI, not the CUDA-event fallback), and gets no records.
 * Not a simulator: sim/ is that.  Nothing here is used by the tests.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STUB __attribute__((visibility("default")))

#ifdef STUB_CUDART
#include <cuda_runtime_api.h>

static __thread int stub_device;

STUB cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shared,
                                  cudaStream_t stream)
{
    (void)func, (void)grid, (void)block, (void)args, (void)shared, (void)stream;
    return cudaSuccess;
}

STUB cudaError_t cudaGetDevice(int *device)
{
    *device = stub_device;
    return cudaSuccess;
}

STUB cudaError_t cudaSetDevice(int device)
{
    stub_device = device;
    return cudaSuccess;
}
#endif

#ifdef STUB_NCCL
#include <nccl.h>

struct ncclComm {
    int nranks, rank;
};

STUB ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    memset(id, 0x5a, sizeof *id);
    return ncclSuccess;
}

STUB ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    (void)id;
    *comm = calloc(1, sizeof **comm);
    if (!*comm)
        return ncclSystemError;
    (*comm)->nranks = nranks;
    (*comm)->rank = rank;
    return ncclSuccess;
}

STUB ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    free(comm);
    return ncclSuccess;
}

STUB ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    *count = comm->nranks;
    return ncclSuccess;
}

STUB ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    *rank = comm->rank;
    return ncclSuccess;
}

STUB ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    (void)comm;
    *device = 0;
    return ncclSuccess;
}

STUB ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    (void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)op, (void)comm, (void)stream;
    return ncclSuccess;
}
#endif

#ifdef STUB_CUPTI
/* CUPTI's signatures, by value: CUptiResult is an int, 0 success; no
 * record is ever delivered (next_record: CUPTI_ERROR_MAX_LIMIT_REACHED). */
STUB int cuptiActivityRegisterTimestampCallback(void *fn)
{
    (void)fn;
    return 0;
}

STUB int cuptiActivityRegisterCallbacks(void *requested, void *completed)
{
    (void)requested, (void)completed;
    return 0;
}

STUB int cuptiActivityEnable(int kind)
{
    (void)kind;
    return 0;
}

STUB int cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, void **record)
{
    (void)buffer, (void)valid, (void)record;
    return 12;
}

STUB int cuptiActivityGetNumDroppedRecords(void *ctx, uint32_t stream, size_t *dropped)
{
    (void)ctx, (void)stream;
    *dropped = 0;
    return 0;
}

STUB int cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    return 0;
}

STUB int cuptiSubscribe(void **subscriber, void *callback, void *userdata)
{
    (void)callback, (void)userdata;
    *subscriber = (void *)subscriber;
    return 0;
}

STUB int cuptiUnsubscribe(void *subscriber)
{
    (void)subscriber;
    return 0;
}
#endif
