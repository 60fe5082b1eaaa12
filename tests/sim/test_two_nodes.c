/*
 * Four ranks on two simulated nodes (simrun --nodes 2: each node in its own
 * UTS namespace, so its own host name).  An all-reduce over all four crosses
 * nodes and runs at the network's bus bandwidth (SIM_NET_GBPS, 25 GB/s);
 * the same all-reduce inside one node (a communicator split by node) runs at
 * NVLink's (300 GB/s).  Skipped (exit 77) only where UTS namespaces cannot
 * be created (not root, or unshare forbidden).
 */
#include <nccl.h>
#include <sched.h>

#include "sim_test.h"

#define NRANKS 4
#define COUNT (25u << 20) /* floats: 100 MiB, too big to move, timed only */
#define SKIP 77

static float timed_allreduce(float *buf, ncclComm_t comm, cudaStream_t s)
{
    cudaEvent_t a, b;
    SIM_CUDA(cudaEventCreate(&a));
    SIM_CUDA(cudaEventCreate(&b));
    SIM_CHECK(ncclAllReduce(buf, buf, COUNT, ncclFloat, ncclSum, comm, s) == ncclSuccess);
    SIM_CUDA(cudaEventRecord(a, s)); /* starts when all ranks are lined up */
    SIM_CHECK(ncclAllReduce(buf, buf, COUNT, ncclFloat, ncclSum, comm, s) == ncclSuccess);
    SIM_CUDA(cudaEventRecord(b, s));
    SIM_CUDA(cudaStreamSynchronize(s));
    float ms = 0;
    SIM_CUDA(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

static int rank_main(void)
{
    int rank = sim_test_env_int("RANK", -1), n = sim_test_env_int("WORLD_SIZE", 0);
    SIM_CHECK(rank >= 0 && n == NRANKS);
    char host[64];
    gethostname(host, sizeof host);
    SIM_CHECK(strcmp(host, sim_test_env_int("NODE_RANK", 0) ? "node1" : "node0") == 0);
    SIM_CUDA(cudaSetDevice(sim_test_env_int("LOCAL_RANK", 0)));
    ncclComm_t world = sim_test_comm(rank, n), node;
    SIM_CHECK(ncclCommSplit(world, sim_test_env_int("NODE_RANK", 0), rank, &node, NULL) == ncclSuccess);
    int node_size = 0;
    SIM_CHECK(ncclCommCount(node, &node_size) == ncclSuccess && node_size == 2);
    float *buf;
    SIM_CUDA(cudaMalloc((void **)&buf, (size_t)COUNT * sizeof(float)));
    cudaStream_t s;
    SIM_CUDA(cudaStreamCreate(&s));
    /* bus bytes: 2(n-1)/n of 104.9 MB; at 25 GB/s 6.29 ms, at 300 GB/s 0.35 ms */
    float across = timed_allreduce(buf, world, s), inside = timed_allreduce(buf, node, s);
    printf("rank %d on %s: across nodes %.3f ms, inside a node %.3f ms\n", rank, host, across, inside);
    /* upper bounds leave room for a host preempted between the two calls */
    SIM_CHECK(across > 6.2 && across < 15);
    SIM_CHECK(inside > 0.3 && inside < 6);
    ncclCommDestroy(node);
    ncclCommDestroy(world);
    return 0;
}

static int uts_namespaces_work(void)
{
    if (geteuid() != 0)
        return 0;
    pid_t pid = fork();
    if (pid == 0)
        _exit(unshare(CLONE_NEWUTS) == 0 ? 0 : 1);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void check_truth(const char *dir)
{
    struct sim_truth t = sim_truth_read(dir);
    int cross = 0, local = 0;
    for (int i = 0; i < t.n; i++) {
        const char *l = t.lines[i];
        if (!sim_json_has(l, "collective"))
            continue;
        double bw = sim_json_num(l, "busbw_gbps");
        if (strstr(l, "\"cross_node\":true")) {
            SIM_CHECK(sim_json_u64(l, "nranks") == 4);
            SIM_CHECK(bw > 22 && bw < 25.5);
            cross++;
        } else {
            SIM_CHECK(sim_json_u64(l, "nranks") == 2);
            SIM_CHECK(bw > 150 && bw < 301);
            local++;
        }
    }
    printf("truth: %d cross-node and %d intra-node collectives\n", cross, local);
    SIM_CHECK(cross == 8 && local == 8);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "rank"))
        return rank_main();
    if (!uts_namespaces_work()) {
        printf("skipped: UTS namespaces need root (unshare --uts)\n");
        return SKIP;
    }
    char *dir = sim_test_mkdtemp();
    SIM_CHECK(sim_test_simrun(NRANKS, "2", dir) == 0);
    check_truth(dir);
    sim_truth_remove(dir);
    printf("ok\n");
    return 0;
}
