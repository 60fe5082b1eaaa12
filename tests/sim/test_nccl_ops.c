/*
 * The NCCL operations of two ranks really move data across processes:
 * broadcast, reduce, all-gather, reduce-scatter, and a send/recv exchange
 * inside a group (which must not deadlock); integers reduce in their own
 * type (signed max and min, unsigned wrap-around, a truncated average).  A rank whose peer never comes
 * hangs like on a GPU, until ncclCommAbort releases it.  Versions, error
 * strings and unsupported calls answer as NCCL does.
 */
#include <nccl.h>

#include "sim_test.h"

#define N 64

static void fill(float *dev, float base)
{
    float h[2 * N];
    for (int i = 0; i < 2 * N; i++)
        h[i] = base + (float)i;
    SIM_CUDA(cudaMemcpy(dev, h, sizeof h, cudaMemcpyHostToDevice));
}

static void get(float *host, const float *dev, int n)
{
    SIM_CUDA(cudaMemcpy(host, dev, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
}

static void data_moves(ncclComm_t comm, int rank, cudaStream_t s)
{
    float *a, *b, h[2 * N];
    SIM_CUDA(cudaMalloc((void **)&a, 2 * N * sizeof(float)));
    SIM_CUDA(cudaMalloc((void **)&b, 2 * N * sizeof(float)));

    fill(a, (float)(100 * rank)); /* rank r holds 100r + i */
    SIM_CHECK(ncclBroadcast(a, b, N, ncclFloat, 1, comm, s) == ncclSuccess);
    SIM_CUDA(cudaStreamSynchronize(s));
    get(h, b, N);
    SIM_CHECK(h[5] == 105);

    SIM_CHECK(ncclReduce(a, b, N, ncclFloat, ncclMax, 0, comm, s) == ncclSuccess);
    SIM_CUDA(cudaStreamSynchronize(s));
    get(h, b, N);
    if (rank == 0)
        SIM_CHECK(h[3] == 103);

    SIM_CHECK(ncclAllGather(a, b, N, ncclFloat, comm, s) == ncclSuccess);
    SIM_CUDA(cudaStreamSynchronize(s));
    get(h, b, 2 * N);
    SIM_CHECK(h[1] == 1 && h[N + 1] == 101);

    SIM_CHECK(ncclReduceScatter(a, b, N, ncclFloat, ncclSum, comm, s) == ncclSuccess);
    SIM_CUDA(cudaStreamSynchronize(s));
    get(h, b, N);
    SIM_CHECK(h[0] == (float)(100 + 2 * (rank * N)));

    int peer = 1 - rank;
    SIM_CHECK(ncclGroupStart() == ncclSuccess);
    SIM_CHECK(ncclSend(a, N, ncclFloat, peer, comm, s) == ncclSuccess);
    SIM_CHECK(ncclRecv(b, N, ncclFloat, peer, comm, s) == ncclSuccess);
    SIM_CHECK(ncclGroupEnd() == ncclSuccess);
    SIM_CUDA(cudaStreamSynchronize(s));
    get(h, b, N);
    SIM_CHECK(h[7] == (float)(100 * peer + 7));
}

/* One element of each rank all-reduced by OP as type T (SIZE bytes). */
static int64_t reduce_pair(ncclComm_t comm, cudaStream_t s, ncclDataType_t t, size_t size, ncclRedOp_t op,
                           int64_t mine)
{
    unsigned char *d, h[sizeof(int64_t)];
    SIM_CUDA(cudaMalloc((void **)&d, size));
    memcpy(h, &mine, size); /* the low bytes: the value in the narrower type */
    SIM_CUDA(cudaMemcpy(d, h, size, cudaMemcpyHostToDevice));
    SIM_CHECK(ncclAllReduce(d, d, 1, t, op, comm, s) == ncclSuccess);
    SIM_CUDA(cudaStreamSynchronize(s));
    SIM_CUDA(cudaMemcpy(h, d, size, cudaMemcpyDeviceToHost));
    SIM_CUDA(cudaFree(d));
    switch (size) {
    case 1: return t == ncclInt8 ? (int8_t)h[0] : h[0];
    case 4: {
        int32_t v;
        memcpy(&v, h, sizeof v);
        return t == ncclInt32 ? v : (int64_t)(uint32_t)v;
    }
    default: {
        int64_t v;
        memcpy(&v, h, sizeof v);
        return v;
    }
    }
}

/* Integers reduce in their own type: signed ones compare below zero,
 * unsigned ones wrap, an average divides as C does. */
static void integers_keep_their_type(ncclComm_t comm, int rank, cudaStream_t s)
{
    int64_t i8 = rank ? 5 : -3;
    SIM_CHECK(reduce_pair(comm, s, ncclInt8, 1, ncclMax, i8) == 5);
    SIM_CHECK(reduce_pair(comm, s, ncclInt8, 1, ncclMin, i8) == -3);
    SIM_CHECK(reduce_pair(comm, s, ncclInt8, 1, ncclSum, i8) == 2);
    int64_t u8 = rank ? 10 : 250;
    SIM_CHECK(reduce_pair(comm, s, ncclUint8, 1, ncclMax, u8) == 250);
    SIM_CHECK(reduce_pair(comm, s, ncclUint8, 1, ncclMin, u8) == 10);
    SIM_CHECK(reduce_pair(comm, s, ncclUint8, 1, ncclSum, u8) == 4); /* 260 mod 256 */
    int64_t i32 = rank ? 2 : -7;
    SIM_CHECK(reduce_pair(comm, s, ncclInt32, 4, ncclAvg, i32) == -2);
    SIM_CHECK(reduce_pair(comm, s, ncclInt32, 4, ncclProd, i32) == -14);
    SIM_CHECK(reduce_pair(comm, s, ncclUint32, 4, ncclMax, rank ? 1 : 0xfffffff0) == 0xfffffff0);
    int64_t i64 = rank ? -(INT64_C(1) << 40) : 1;
    SIM_CHECK(reduce_pair(comm, s, ncclInt64, 8, ncclMin, i64) == -(INT64_C(1) << 40));
    SIM_CHECK(reduce_pair(comm, s, ncclUint64, 8, ncclMax, i64) == -(INT64_C(1) << 40));
}

static void abort_releases_a_hang(ncclComm_t comm, int rank, cudaStream_t s)
{
    float *a;
    SIM_CUDA(cudaMalloc((void **)&a, N * sizeof(float)));
    if (rank == 1) /* never joins this all-reduce */
        return;
    SIM_CHECK(ncclAllReduce(a, a, N, ncclFloat, ncclSum, comm, s) == ncclSuccess);
    sim_test_sleep_ms(50);
    SIM_CHECK(cudaStreamQuery(s) == cudaErrorNotReady); /* hanging, as on a GPU */
    uint64_t t0 = sim_test_now_ns();
    SIM_CHECK(ncclCommAbort(comm) == ncclSuccess);
    SIM_CUDA(cudaStreamSynchronize(s));
    double ms = (double)(sim_test_now_ns() - t0) / 1e6;
    printf("abort released the stream after %.1f ms\n", ms);
    SIM_CHECK(ms < 200);
}

static void api_answers(void)
{
    int v = 0;
    SIM_CHECK(ncclGetVersion(&v) == ncclSuccess && v >= 22800 && v < 22900);
    SIM_CHECK(strcmp(ncclGetErrorString(ncclInvalidUsage), "") != 0);
    SIM_CHECK(ncclAlltoAll(NULL, NULL, 0, ncclFloat, NULL, NULL) == ncclInvalidUsage);
    SIM_CHECK(ncclGroupEnd() == ncclInvalidUsage);
}

static int rank_main(void)
{
    int rank = sim_test_env_int("RANK", -1), n = sim_test_env_int("WORLD_SIZE", 0);
    SIM_CHECK(n == 2);
    SIM_CUDA(cudaSetDevice(rank));
    ncclComm_t comm = sim_test_comm(rank, n);
    int dev = -1;
    SIM_CHECK(ncclCommCuDevice(comm, &dev) == ncclSuccess && dev == rank);
    cudaStream_t s;
    SIM_CUDA(cudaStreamCreate(&s));
    api_answers();
    data_moves(comm, rank, s);
    integers_keep_their_type(comm, rank, s);
    abort_releases_a_hang(comm, rank, s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "rank"))
        return rank_main();
    char *dir = sim_test_mkdtemp();
    SIM_CHECK(sim_test_simrun(2, NULL, dir) == 0);
    struct sim_truth t = sim_truth_read(dir);
    int aborted = 0;
    for (int i = 0; i < t.n; i++)
        aborted += strstr(t.lines[i], "\"aborted\":true") != NULL;
    SIM_CHECK(aborted == 1);
    sim_truth_remove(dir);
    printf("ok\n");
    return 0;
}
