/*
 * Four ranks all-reduce; rank 2 arrives 30 ms late (its step has 30 ms more
 * GPU work).  Ranks 0, 1 and 3 wait for it: their all-reduce takes 30 ms
 * measured with events, the ground truth shows each of them arriving 30 ms
 * before the last arrival, and all four end at the same instant.  The sum is really computed across the
 * processes, and the NCCL kernel records span arrival to completion.
 */
#include <nccl.h>

#include "sim_test.h"

#define NRANKS 4
#define LATE_RANK 2
#define LATE_MS 30.0
#define COUNT 4096
#define BLOCKER_MS 20            /* keeps the streams busy while the hosts queue */
#define WARMUP_COUNT (64u << 20) /* floats: 256 MiB, timed, not moved */

static int rank_main(void)
{
    int rank = sim_test_env_int("RANK", -1), n = sim_test_env_int("WORLD_SIZE", 0);
    SIM_CHECK(rank >= 0 && n == NRANKS);
    SIM_CUDA(cudaSetDevice(sim_test_env_int("LOCAL_RANK", 0)));
    sim_test_register_kernels();
    ncclComm_t comm = sim_test_comm(rank, n);
    int count = 0, me = -1;
    SIM_CHECK(ncclCommCount(comm, &count) == ncclSuccess && count == n);
    SIM_CHECK(ncclCommUserRank(comm, &me) == ncclSuccess && me == rank);

    float *buf;
    SIM_CUDA(cudaMalloc((void **)&buf, COUNT * sizeof(float)));
    float host[COUNT];
    for (int i = 0; i < COUNT; i++)
        host[i] = (float)(rank + 1) * (float)(i + 1);
    SIM_CUDA(cudaMemcpy(buf, host, sizeof host, cudaMemcpyHostToDevice));
    float *big;
    SIM_CUDA(cudaMalloc((void **)&big, WARMUP_COUNT * sizeof(float)));
    cudaStream_t s;
    SIM_CUDA(cudaStreamCreate(&s));
    /* warm-up: lines the ranks up.  It is big (1.3 ms of transfer) and all
     * that follows is queued at once, so the ranks' streams leave it together
     * even if a loaded host is a little late queueing the rest. */
    SIM_CHECK(ncclAllReduce(buf, buf, COUNT, ncclFloat, ncclSum, comm, s) == ncclSuccess);
    SIM_CHECK(ncclAllReduce(big, big, WARMUP_COUNT, ncclFloat, ncclSum, comm, s) == ncclSuccess);
    cudaEvent_t a, b;
    SIM_CUDA(cudaEventCreate(&a));
    SIM_CUDA(cudaEventCreate(&b));
    SIM_CUDA(sim_test_kernel_ms(BLOCKER_MS, s));
    if (rank == LATE_RANK) /* a slow step: 30 ms more work before the all-reduce */
        SIM_CUDA(sim_test_kernel_ms(LATE_MS, s));
    SIM_CUDA(cudaEventRecord(a, s));
    SIM_CHECK(ncclAllReduce(buf, buf, COUNT, ncclFloat, ncclSum, comm, s) == ncclSuccess);
    SIM_CUDA(cudaEventRecord(b, s));
    SIM_CUDA(cudaStreamSynchronize(s));
    float ms = 0;
    SIM_CUDA(cudaEventElapsedTime(&ms, a, b));
    printf("rank %d: all-reduce took %.3f ms\n", rank, ms);
    if (rank == LATE_RANK)
        SIM_CHECK(ms < 0.1);
    else
        SIM_CHECK(ms > LATE_MS - 1 && ms < LATE_MS + 1);

    SIM_CUDA(cudaMemcpy(host, buf, sizeof host, cudaMemcpyDeviceToHost));
    float sum = 0;
    for (int r = 0; r < n; r++)
        sum += (float)(r + 1);
    for (int i = 0; i < COUNT; i++) /* warm-up sums to sum*(i+1) everywhere, then n times that */
        SIM_CHECK(host[i] == (float)n * sum * (float)(i + 1));
    SIM_CHECK(ncclCommDestroy(comm) == ncclSuccess);
    return 0;
}

static void check_truth(const char *dir)
{
    struct sim_truth t = sim_truth_read(dir);
    int found = 0;
    uint64_t end = 0;
    for (int i = 0; i < t.n; i++) {
        const char *l = t.lines[i];
        if (!sim_json_has(l, "collective") || sim_json_u64(l, "seq") != 2)
            continue;
        int rank = (int)sim_json_u64(l, "rank");
        double wait_ms = (double)(sim_json_u64(l, "last_arrive_ns") - sim_json_u64(l, "arrive_ns")) / 1e6;
        printf("truth: rank %d waited %.3f ms\n", rank, wait_ms);
        if (rank == LATE_RANK)
            SIM_CHECK(wait_ms == 0);
        else
            SIM_CHECK(wait_ms > LATE_MS - 1 && wait_ms < LATE_MS + 1);
        if (end)
            SIM_CHECK(sim_json_u64(l, "end_ns") == end);
        end = sim_json_u64(l, "end_ns");
        SIM_CHECK(strstr(l, "\"cross_node\":false"));
        /* the NCCL kernel on this rank's stream spans arrival to end */
        uint64_t corr = sim_json_u64(l, "correlation");
        int kernel = 0;
        for (int j = 0; j < t.n; j++) {
            const char *k = t.lines[j];
            if (!sim_json_has(k, "kernel") || sim_json_u64(k, "correlation") != corr ||
                !strstr(k, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"))
                continue;
            if (sim_json_u64(k, "start_ns") == sim_json_u64(l, "arrive_ns") &&
                sim_json_u64(k, "end_ns") == end)
                kernel++;
        }
        SIM_CHECK(kernel >= 1);
        found++;
    }
    SIM_CHECK(found == NRANKS);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "rank"))
        return rank_main();
    char *dir = sim_test_mkdtemp();
    int rc = sim_test_simrun(NRANKS, NULL, dir);
    SIM_CHECK(rc == 0);
    check_truth(dir);
    sim_truth_remove(dir);
    printf("ok\n");
    return 0;
}
