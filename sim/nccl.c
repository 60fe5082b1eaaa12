/*
 * nccl.c: communicators of the simulated libnccl.so.2, and the library's
 * errors and version.
 *
 * Ranks are processes, or devices of one process: ncclCommInitAll, one
 * thread per device, or ncclCommInitRank per device inside a group (the
 * join is immediate there; the wait for the peers is at the outermost
 * ncclGroupEnd, nccl_group.c).
 * ncclGetUniqueId makes 128 random bytes; the application passes them to
 * every rank, which joins the shared segment named after their hash and,
 * like real NCCL, blocks in init until all nranks have joined.  The hash in
 * hex is the communicator's identity in the ground truth.  ncclCommSplit
 * exchanges (color, key) through the parent and derives the child's id from
 * the parent's hash, the split count and the color, so all members agree
 * without talking further.
 *
 * A communicator is reference counted: queued operations hold it, so
 * destroying or aborting it while work is pending is safe.  Abort makes
 * pending waits give up within SIM_SHM_POLL_NS.  As real NCCL, the library
 * exports strong pncclX symbols and weak ncclX aliases.
 */
#include "nccl_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

static _Thread_local char sim_last_error[256];

ncclResult_t sim_nccl_set_error(ncclResult_t r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sim_last_error, sizeof sim_last_error, fmt, ap);
    va_end(ap);
    return r;
}

static ncclResult_t sim_nccl_unsupported(const char *name)
{
    sim_unsupported("nccl", name);
    return sim_nccl_set_error(ncclInvalidUsage, "%s is not supported by the simulator", name);
}

ncclResult_t pncclGetVersion(int *version)
{
    if (!version)
        return ncclInvalidArgument;
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t pncclGetUniqueId(ncclUniqueId *uniqueId)
{
    if (!uniqueId)
        return sim_nccl_set_error(ncclInvalidArgument, "NULL uniqueId");
    size_t got = 0;
    while (got < sizeof uniqueId->internal) {
        ssize_t n = getrandom(uniqueId->internal + got, sizeof uniqueId->internal - got, 0);
        if (n <= 0) { /* fall back on time and pid: unique enough on one machine */
            uint64_t seed = sim_now_ns() ^ ((uint64_t)getpid() << 32);
            for (size_t i = got; i < sizeof uniqueId->internal; i++, seed = seed * 6364136223846793005ull + 1)
                uniqueId->internal[i] = (char)(seed >> 56);
            break;
        }
        got += (size_t)n;
    }
    return ncclSuccess;
}

/* ------------------------------------------------------------ lifetime */

static struct sim_comm *sim_comm_new(const ncclUniqueId *id, int nranks, int rank, int device)
{
    struct sim_comm *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->send_seq = calloc((size_t)nranks, sizeof *c->send_seq);
    c->recv_seq = calloc((size_t)nranks, sizeof *c->recv_seq);
    if (!c->send_seq || !c->recv_seq) {
        free(c->send_seq);
        free(c->recv_seq);
        free(c);
        return NULL;
    }
    c->id = *id;
    c->hash = sim_hash64(id->internal, sizeof id->internal);
    snprintf(c->hash_hex, sizeof c->hash_hex, "%016llx", (unsigned long long)c->hash);
    c->nranks = nranks;
    c->rank = rank;
    c->device = device;
    atomic_store(&c->refs, 1);
    return c;
}

void sim_comm_unref(struct sim_comm *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    sim_shm_release(c);
    free(c->send_seq);
    free(c->recv_seq);
    free(c);
}

static ncclResult_t sim_check_rank(int nranks, int rank)
{
    if (nranks < 1 || nranks > SIM_NCCL_MAX_RANKS)
        return sim_nccl_set_error(ncclInvalidArgument, "invalid nranks %d", nranks);
    if (rank < 0 || rank >= nranks)
        return sim_nccl_set_error(ncclInvalidArgument, "invalid rank %d of %d", rank, nranks);
    return ncclSuccess;
}

/* Creates and joins, without waiting for the others. */
static ncclResult_t sim_comm_join(struct sim_comm **out, const ncclUniqueId *id, int nranks,
                                  int rank, int device)
{
    ncclResult_t r = sim_check_rank(nranks, rank);
    if (r != ncclSuccess)
        return r;
    struct sim_comm *c = sim_comm_new(id, nranks, rank, device);
    if (!c)
        return sim_nccl_set_error(ncclSystemError, "out of memory");
    if (sim_shm_join(c) != 0) {
        sim_comm_unref(c);
        return sim_nccl_set_error(ncclInvalidUsage, "cannot join the communicator's shared memory "
                                                    "(nranks differ between ranks, or /dev/shm is unavailable)");
    }
    *out = c;
    return ncclSuccess;
}

static ncclResult_t sim_comm_init(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    if (!comm)
        return sim_nccl_set_error(ncclInvalidArgument, "NULL comm");
    int device = 0;
    cudaGetDevice(&device);
    struct sim_comm *c;
    ncclResult_t r = sim_comm_join(&c, &id, nranks, rank, device);
    if (r != ncclSuccess)
        return r;
    if (sim_nccl_in_group()) { /* the peers may be made by this thread next */
        if (sim_nccl_defer_init(c) != 0) {
            sim_comm_unref(c);
            return sim_nccl_set_error(ncclSystemError, "out of memory");
        }
    } else {
        sim_shm_wait_joined(c);
    }
    *comm = (ncclComm_t)c;
    return ncclSuccess;
}

ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return sim_comm_init(comm, nranks, commId, rank);
}

ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t *config)
{
    (void)config;
    return sim_comm_init(comm, nranks, commId, rank);
}

ncclResult_t pncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    if (!comms || ndev < 1)
        return sim_nccl_set_error(ncclInvalidArgument, "invalid arguments to ncclCommInitAll");
    ncclUniqueId id;
    pncclGetUniqueId(&id);
    for (int i = 0; i < ndev; i++) {
        struct sim_comm *c;
        ncclResult_t r = sim_comm_join(&c, &id, ndev, i, devlist ? devlist[i] : i);
        if (r != ncclSuccess)
            return r;
        comms[i] = (ncclComm_t)c;
    }
    for (int i = 0; i < ndev; i++)
        sim_shm_wait_joined((struct sim_comm *)comms[i]);
    return ncclSuccess;
}

/* Members of COLOR ordered by (key, parent rank): returns my new rank and
 * the new size in *N. */
static int sim_split_rank(const uint64_t *info, int nranks, int me, int *n)
{
    int32_t color = (int32_t)(info[me] >> 32), key = (int32_t)(uint32_t)info[me];
    int rank = 0;
    *n = 0;
    for (int r = 0; r < nranks; r++) {
        int32_t rc = (int32_t)(info[r] >> 32), rk = (int32_t)(uint32_t)info[r];
        if (rc != color)
            continue;
        (*n)++;
        if (rk < key || (rk == key && r < me))
            rank++;
    }
    return rank;
}

static void sim_split_id(const struct sim_comm *parent, uint64_t split, int color, ncclUniqueId *id)
{
    uint64_t seed[3] = {parent->hash, split, (uint64_t)(uint32_t)color};
    uint64_t h = sim_hash64(seed, sizeof seed);
    for (size_t i = 0; i < sizeof id->internal; i += sizeof h) {
        h = sim_hash64(&h, sizeof h) ^ i;
        memcpy(id->internal + i, &h, sizeof h);
    }
}

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                            ncclConfig_t *config)
{
    (void)config;
    struct sim_comm *c = (struct sim_comm *)comm;
    if (!c || !newcomm)
        return sim_nccl_set_error(ncclInvalidArgument, "NULL argument to ncclCommSplit");
    uint64_t *info = calloc((size_t)c->nranks, sizeof *info);
    if (!info)
        return sim_nccl_set_error(ncclSystemError, "out of memory");
    uint64_t mine = ((uint64_t)(uint32_t)color << 32) | (uint32_t)key;
    uint64_t split = c->split_seq++;
    if (sim_shm_exchange(c, mine, info) != 0) {
        free(info);
        return sim_nccl_set_error(ncclInvalidUsage, "communicator was aborted");
    }
    int n, rank = sim_split_rank(info, c->nranks, c->rank, &n);
    free(info);
    *newcomm = NULL;
    if (color == NCCL_SPLIT_NOCOLOR)
        return ncclSuccess;
    ncclUniqueId id;
    sim_split_id(c, split, color, &id);
    struct sim_comm *nc;
    ncclResult_t r = sim_comm_join(&nc, &id, n, rank, c->device);
    if (r != ncclSuccess)
        return r;
    sim_shm_wait_joined(nc);
    *newcomm = (ncclComm_t)nc;
    return ncclSuccess;
}

ncclResult_t pncclCommFinalize(ncclComm_t comm)
{
    if (!comm)
        return sim_nccl_set_error(ncclInvalidArgument, "NULL comm");
    sim_truth_flush();
    return ncclSuccess;
}

ncclResult_t pncclCommDestroy(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess;
    sim_truth_flush();
    sim_comm_unref((struct sim_comm *)comm);
    return ncclSuccess;
}

ncclResult_t pncclCommAbort(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess;
    struct sim_comm *c = (struct sim_comm *)comm;
    atomic_store(&c->aborted, 1);
    sim_truth_flush();
    sim_comm_unref(c);
    return ncclSuccess;
}

/* ------------------------------------------------------------ queries */

ncclResult_t pncclCommCount(const ncclComm_t comm, int *count)
{
    if (!comm || !count)
        return sim_nccl_set_error(ncclInvalidArgument, "NULL argument");
    *count = ((struct sim_comm *)comm)->nranks;
    return ncclSuccess;
}

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!comm || !rank)
        return sim_nccl_set_error(ncclInvalidArgument, "NULL argument");
    *rank = ((struct sim_comm *)comm)->rank;
    return ncclSuccess;
}

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device)
{
    if (!comm || !device)
        return sim_nccl_set_error(ncclInvalidArgument, "NULL argument");
    *device = ((struct sim_comm *)comm)->device;
    return ncclSuccess;
}

ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    if (!comm || !asyncError)
        return sim_nccl_set_error(ncclInvalidArgument, "NULL argument");
    *asyncError = (ncclResult_t)atomic_load(&((struct sim_comm *)comm)->async_error);
    return ncclSuccess;
}

const char *pncclGetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

const char *pncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return sim_last_error;
}

/* ------------------------------------------------------------ memory */

ncclResult_t pncclMemAlloc(void **ptr, size_t size)
{
    return cudaMalloc(ptr, size) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

ncclResult_t pncclMemFree(void *ptr)
{
    return cudaFree(ptr) == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    (void)comm, (void)size;
    if (handle)
        *handle = buff;
    return ncclSuccess;
}

ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle)
{
    (void)comm, (void)handle;
    return ncclSuccess;
}

/* ------------------------------------------------------------ not modelled */

ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
    (void)comm, (void)revokeFlags;
    return sim_nccl_unsupported("ncclCommRevoke");
}

ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                             ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
    (void)comm, (void)excludeRanksList, (void)excludeRanksCount, (void)newcomm, (void)config;
    (void)shrinkFlags;
    return sim_nccl_unsupported("ncclCommShrink");
}

ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId *commIds, ncclConfig_t *config)
{
    (void)nId, (void)config;
    if (!commIds)
        return sim_nccl_set_error(ncclInvalidArgument, "NULL commIds");
    return sim_comm_init(newcomm, nranks, commIds[0], myrank);
}

ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
                                     int winFlags)
{
    (void)comm, (void)buff, (void)size, (void)win, (void)winFlags;
    return sim_nccl_unsupported("ncclCommWindowRegister");
}

ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    (void)comm, (void)win;
    return sim_nccl_unsupported("ncclCommWindowDeregister");
}

ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm)
{
    (void)op, (void)scalar, (void)datatype, (void)residence, (void)comm;
    return sim_nccl_unsupported("ncclRedOpCreatePreMulSum");
}

ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    (void)op, (void)comm;
    return sim_nccl_unsupported("ncclRedOpDestroy");
}

ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    (void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)comm, (void)stream;
    return sim_nccl_unsupported("ncclAlltoAll");
}

ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    (void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)root, (void)comm, (void)stream;
    return sim_nccl_unsupported("ncclGather");
}

ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    (void)sendbuff, (void)recvbuff, (void)count, (void)datatype, (void)root, (void)comm, (void)stream;
    return sim_nccl_unsupported("ncclScatter");
}

ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    (void)simInfo;
    return sim_nccl_unsupported("ncclGroupSimulateEnd");
}

#define SIM_NCCL_WEAK(name) extern __typeof(p##name) name __attribute__((weak, alias("p" #name)))
SIM_NCCL_WEAK(ncclGetVersion);
SIM_NCCL_WEAK(ncclGetUniqueId);
SIM_NCCL_WEAK(ncclCommInitRank);
SIM_NCCL_WEAK(ncclCommInitRankConfig);
SIM_NCCL_WEAK(ncclCommInitAll);
SIM_NCCL_WEAK(ncclCommSplit);
SIM_NCCL_WEAK(ncclCommFinalize);
SIM_NCCL_WEAK(ncclCommDestroy);
SIM_NCCL_WEAK(ncclCommAbort);
SIM_NCCL_WEAK(ncclCommCount);
SIM_NCCL_WEAK(ncclCommUserRank);
SIM_NCCL_WEAK(ncclCommCuDevice);
SIM_NCCL_WEAK(ncclCommGetAsyncError);
SIM_NCCL_WEAK(ncclGetErrorString);
SIM_NCCL_WEAK(ncclGetLastError);
SIM_NCCL_WEAK(ncclMemAlloc);
SIM_NCCL_WEAK(ncclMemFree);
SIM_NCCL_WEAK(ncclCommRegister);
SIM_NCCL_WEAK(ncclCommDeregister);
SIM_NCCL_WEAK(ncclCommRevoke);
SIM_NCCL_WEAK(ncclCommShrink);
SIM_NCCL_WEAK(ncclCommInitRankScalable);
SIM_NCCL_WEAK(ncclCommWindowRegister);
SIM_NCCL_WEAK(ncclCommWindowDeregister);
SIM_NCCL_WEAK(ncclRedOpCreatePreMulSum);
SIM_NCCL_WEAK(ncclRedOpDestroy);
SIM_NCCL_WEAK(ncclAlltoAll);
SIM_NCCL_WEAK(ncclGather);
SIM_NCCL_WEAK(ncclScatter);
SIM_NCCL_WEAK(ncclGroupSimulateEnd);
