/*
 * ddp_train.cu - a synthetic data-parallel training loop, written against the
 * real CUDA runtime and NCCL APIs, whose every cost is a knob.
 *
 * Each rank runs the loop a data-parallel job runs:
 *
 *   input   read a batch from files on disk (real read() calls), either in
 *           the main process or in forked loader workers that hand batches
 *           over pipes, round-robin, like a framework's data loader
 *   H2D     cudaMemcpyAsync from pinned memory onto the compute stream
 *   fwd     FWD_LAYERS kernels whose grid is proportional to the batch
 *   bwd     one kernel per gradient bucket (twice the forward work in all)
 *   comm    ncclAllReduce per bucket: after the whole backward, or, with
 *           --overlap, on a second stream as soon as its bucket is ready;
 *           --hierarchical reduces in two levels as hybrid-sharded jobs do:
 *           reduce-scatter within the node, all-reduce of each shard across
 *           nodes, all-gather within the node (communicators split by node)
 *   opt     an optimizer kernel once every bucket is reduced
 *   sync    cudaStreamSynchronize: the step ends when the GPU is done
 *
 * The knobs reproduce the usual reasons why N GPUs are not N times faster:
 * few slow loader workers, large unoverlapped gradients, a small per-GPU
 * batch, one slow device or one rank with more data to read.  The program
 * knows nothing of any profiler; it runs on real GPUs and on any stand-in
 * library with the same ABI.
 *
 * Invariants: every CUDA and NCCL call is checked and a failure ends the
 * program with a message and a non-zero status; rank 0 prints the summary;
 * with EXAMPLE_TRUTH=FILE each rank appends its own host-side facts (step
 * boundaries and the intervals it waited for input, CLOCK_MONOTONIC ns) as
 * JSON lines, one write() per line so concurrent ranks never interleave.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "example.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define BYTES_PER_KB 1024ull
#define BYTES_PER_MB (1024ull * 1024ull)
#define THREADS_PER_BLOCK 256
#define FWD_LAYERS 4
#define BWD_WORK_RATIO 2        /* backward costs twice the forward */
#define OPT_ELEMS_PER_THREAD 64 /* the optimizer is a grid-stride loop */
#define DATA_FILES 16           /* files in the synthetic dataset */
#define DATA_FILE_KB 1024       /* size of each */
#define ACT_ELEMS (1u << 20)    /* activation buffer the kernels touch */
#define MAX_WORKERS 64
#define MAX_BUCKETS 256

/* The options, each at its default (the rest 0). */
struct options {
    int steps = 10;
    int batch = 32;            /* samples per GPU per step */
    int layer_kthreads = 64;   /* GPU threads per sample per forward layer, x1000 */
    int kernel_iters = 64;     /* arithmetic per GPU thread (real GPUs only) */
    int workers = 2;           /* loader processes; 0 = read in the main process */
    double worker_cost_ms = 1; /* CPU time per batch spent preparing it */
    int worker_busy;           /* burn the CPU (1) or sleep (0) for that cost */
    int read_kb = 256;         /* bytes read from disk per batch */
    double grad_mb = 16;       /* gradient size reduced every step */
    int buckets = 4;
    int overlap;
    int hierarchical;
    int slow_rank = -1;
    double slow_factor = 1;
    int uneven_rank = -1;
    double uneven_factor = 1;
    int markers = 1;
    unsigned seed = 1;
    const char *data_dir = default_data_dir();
    const char *rendezvous;
};

struct rank_env {
    int rank, world, local_rank, local_world;
};

/* One batch as a loader hands it to the trainer. */
struct batch_header {
    uint64_t index;
    uint64_t bytes;
};

struct loader {
    int workers;
    pid_t pids[MAX_WORKERS];
    int fds[MAX_WORKERS]; /* read ends, one pipe per worker */
};

struct gpu_state {
    cudaStream_t compute, comm;
    float *act, *grad;
    size_t grad_elems;
    unsigned char *pinned, *input_dev;
    size_t input_cap;
    cudaEvent_t bucket_ready[MAX_BUCKETS];
    cudaEvent_t comm_done;
    cudaEvent_t ar_start[MAX_BUCKETS], ar_end[MAX_BUCKETS];
    ncclComm_t comm_world;
    ncclComm_t comm_node;  /* --hierarchical: the ranks of this node */
    ncclComm_t comm_cross; /* --hierarchical: same local rank on every node */
    int node_rank, node_size;
};

/* ------------------------------------------------------------- options */

static void usage(FILE *to)
{
    fprintf(to,
            "usage: ddp_train [options]\n"
            "  --steps N            training steps (10)\n"
            "  --batch N            samples per GPU per step (32)\n"
            "  --layer-kthreads N   GPU threads per sample per layer, in thousands (64)\n"
            "  --kernel-iters N     arithmetic per GPU thread (64)\n"
            "  --workers N          loader worker processes, 0 = main process (2)\n"
            "  --worker-cost-ms X   CPU time to prepare one batch (1)\n"
            "  --worker-busy        burn the CPU for that time instead of sleeping\n"
            "  --read-kb N          bytes read from disk per batch, KiB (256)\n"
            "  --grad-mb X          gradient size all-reduced per step, MiB (16)\n"
            "  --buckets N          gradient buckets (4)\n"
            "  --overlap            all-reduce each bucket during the backward pass\n"
            "  --hierarchical       reduce within each node, then across nodes\n"
            "  --slow-rank R --slow-factor F     rank R's kernels take F times longer\n"
            "  --uneven-rank R --uneven-factor F rank R's input batches are F times larger\n"
            "  --markers | --no-markers          NVTX range per step (on)\n"
            "  --seed N             dataset contents (1)\n"
            "  --data DIR           dataset directory, created if missing ($TMPDIR/ddp_train_data)\n"
            "  --rendezvous DIR     where rank 0 publishes the NCCL id\n"
            "                       (default $SCALEPROF_RENDEZVOUS, then $SIM_RENDEZVOUS)\n"
            "environment: RANK, WORLD_SIZE, LOCAL_RANK; EXAMPLE_TRUTH=FILE logs host-side facts\n");
}

// clang-format off
enum {
    OPT_STEPS = 256, OPT_BATCH, OPT_LAYER_KTHREADS, OPT_KERNEL_ITERS, OPT_WORKERS,
    OPT_WORKER_COST, OPT_WORKER_BUSY, OPT_READ_KB, OPT_GRAD_MB, OPT_BUCKETS, OPT_OVERLAP,
    OPT_HIERARCHICAL,
    OPT_SLOW_RANK, OPT_SLOW_FACTOR, OPT_UNEVEN_RANK, OPT_UNEVEN_FACTOR, OPT_MARKERS,
    OPT_NO_MARKERS, OPT_SEED, OPT_DATA, OPT_RENDEZVOUS, OPT_HELP,
};
// clang-format on

static const struct option long_opts[] = {
    {"steps", required_argument, 0, OPT_STEPS},
    {"batch", required_argument, 0, OPT_BATCH},
    {"layer-kthreads", required_argument, 0, OPT_LAYER_KTHREADS},
    {"kernel-iters", required_argument, 0, OPT_KERNEL_ITERS},
    {"workers", required_argument, 0, OPT_WORKERS},
    {"worker-cost-ms", required_argument, 0, OPT_WORKER_COST},
    {"worker-busy", no_argument, 0, OPT_WORKER_BUSY},
    {"read-kb", required_argument, 0, OPT_READ_KB},
    {"grad-mb", required_argument, 0, OPT_GRAD_MB},
    {"buckets", required_argument, 0, OPT_BUCKETS},
    {"overlap", no_argument, 0, OPT_OVERLAP},
    {"hierarchical", no_argument, 0, OPT_HIERARCHICAL},
    {"slow-rank", required_argument, 0, OPT_SLOW_RANK},
    {"slow-factor", required_argument, 0, OPT_SLOW_FACTOR},
    {"uneven-rank", required_argument, 0, OPT_UNEVEN_RANK},
    {"uneven-factor", required_argument, 0, OPT_UNEVEN_FACTOR},
    {"markers", no_argument, 0, OPT_MARKERS},
    {"no-markers", no_argument, 0, OPT_NO_MARKERS},
    {"seed", required_argument, 0, OPT_SEED},
    {"data", required_argument, 0, OPT_DATA},
    {"rendezvous", required_argument, 0, OPT_RENDEZVOUS},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

static void parse_options(int argc, char **argv, struct options *o)
{
    *o = options();
    int c;
    const char *n;
    while ((c = next_option(argc, argv, long_opts, &n)) != -1) {
        switch (c) {
        case OPT_STEPS: o->steps = (int)parse_number(n, optarg, 1, 1e6); break;
        case OPT_BATCH: o->batch = (int)parse_number(n, optarg, 1, 1e6); break;
        case OPT_LAYER_KTHREADS: o->layer_kthreads = (int)parse_number(n, optarg, 1, 1e6); break;
        case OPT_KERNEL_ITERS: o->kernel_iters = (int)parse_number(n, optarg, 1, 1e6); break;
        case OPT_WORKERS: o->workers = (int)parse_number(n, optarg, 0, MAX_WORKERS); break;
        case OPT_WORKER_COST: o->worker_cost_ms = parse_number(n, optarg, 0, 1e5); break;
        case OPT_WORKER_BUSY: o->worker_busy = 1; break;
        case OPT_READ_KB: o->read_kb = (int)parse_number(n, optarg, 1, 1 << 20); break;
        case OPT_GRAD_MB: o->grad_mb = parse_number(n, optarg, 0.001, 1 << 16); break;
        case OPT_BUCKETS: o->buckets = (int)parse_number(n, optarg, 1, MAX_BUCKETS); break;
        case OPT_OVERLAP: o->overlap = 1; break;
        case OPT_HIERARCHICAL: o->hierarchical = 1; break;
        case OPT_SLOW_RANK: o->slow_rank = (int)parse_number(n, optarg, 0, 1 << 20); break;
        case OPT_SLOW_FACTOR: o->slow_factor = parse_number(n, optarg, 0.01, 1000); break;
        case OPT_UNEVEN_RANK: o->uneven_rank = (int)parse_number(n, optarg, 0, 1 << 20); break;
        case OPT_UNEVEN_FACTOR: o->uneven_factor = parse_number(n, optarg, 0.01, 1000); break;
        case OPT_MARKERS: o->markers = 1; break;
        case OPT_NO_MARKERS: o->markers = 0; break;
        case OPT_SEED: o->seed = (unsigned)parse_number(n, optarg, 0, 4294967295.0); break;
        case OPT_DATA: o->data_dir = optarg; break;
        case OPT_RENDEZVOUS: o->rendezvous = optarg; break;
        case OPT_HELP:
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind < argc) {
        usage(stderr);
        die("unexpected argument '%s'", argv[optind]);
    }
}

static struct rank_env read_rank_env(void)
{
    struct rank_env r;
    r.rank = env_int("RANK", 0);
    r.world = env_int("WORLD_SIZE", 1);
    r.local_rank = env_int("LOCAL_RANK", r.rank);
    r.local_world = env_int("LOCAL_WORLD_SIZE", r.world);
    if (r.world < 1 || r.rank >= r.world)
        die("RANK=%d is not below WORLD_SIZE=%d", r.rank, r.world);
    if (r.local_world < 1 || r.world % r.local_world != 0)
        die("WORLD_SIZE=%d is not a multiple of LOCAL_WORLD_SIZE=%d", r.world, r.local_world);
    return r;
}

/* ------------------------------------------------------------ dataset */

static void data_file_path(char *buf, size_t size, const char *dir, int i)
{
    snprintf(buf, size, "%s/shard-%03d.bin", dir, i);
}

static void make_dataset(const struct options *o)
{
    make_dataset_files(o->data_dir, data_file_path, DATA_FILES, DATA_FILE_KB, o->seed);
}

static size_t batch_bytes(const struct options *o, int rank)
{
    double f = rank == o->uneven_rank ? o->uneven_factor : 1.0;
    return (size_t)((double)o->read_kb * BYTES_PER_KB * f);
}

/* Reads BYTES of batch INDEX into BUF with read() calls, walking the shards
 * so that consecutive batches come from different files. */
static void read_batch(const struct options *o, int rank, uint64_t index, unsigned char *buf,
                       size_t bytes)
{
    read_files(o->data_dir, data_file_path, DATA_FILES, (size_t)DATA_FILE_KB * BYTES_PER_KB,
               (index * 7 + (uint64_t)rank) % DATA_FILES, buf, bytes);
}

/* The per-batch CPU cost of decoding and augmenting: burnt or slept. */
static void prepare_batch(const struct options *o, int rank, unsigned char *buf, size_t bytes)
{
    double f = rank == o->uneven_rank ? o->uneven_factor : 1.0;
    uint64_t cost = (uint64_t)(o->worker_cost_ms * f * NS_PER_MS);
    if (!o->worker_busy) {
        struct timespec ts = {(time_t)(cost / NS_PER_S), (long)(cost % NS_PER_S)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        return;
    }
    uint64_t until = now_ns() + cost;
    volatile unsigned sum = 0;
    while (now_ns() < until)
        for (size_t i = 0; i < bytes; i += 4096)
            sum += buf[i];
}

/* ------------------------------------------------------------- loader */

/* A worker makes batches W, W+workers, ... and writes each to its pipe; the
 * pipe's capacity is its prefetch.  It leaves with _exit, as framework
 * workers do, when the trainer closes the pipe. */
static void worker_main(const struct options *o, int rank, int w, int fd)
{
    size_t bytes = batch_bytes(o, rank);
    unsigned char *buf = (unsigned char *)malloc(bytes);
    if (!buf)
        _exit(1);
    signal(SIGPIPE, SIG_IGN);
    for (uint64_t i = (uint64_t)w; i < (uint64_t)o->steps; i += (uint64_t)o->workers) {
        read_batch(o, rank, i, buf, bytes);
        prepare_batch(o, rank, buf, bytes);
        struct batch_header h = {i, bytes};
        if (write_all(fd, &h, sizeof h) != 0 || write_all(fd, buf, bytes) != 0)
            _exit(0);
    }
    _exit(0);
}

/* Forks the workers once the communicator is up, as frameworks build their
 * loaders after process-group init: every rank's loader then starts at the
 * same moment, and only the pace of the workers, not the ranks' start-up
 * order, decides who waits.  The workers inherit CUDA state but never use
 * it (CUDA does not survive fork in the child); they leave with _exit. */
static void loader_start(struct loader *l, const struct options *o, int rank)
{
    l->workers = o->workers;
    fflush(NULL);
    for (int w = 0; w < l->workers; w++) {
        int p[2];
        if (pipe(p) != 0)
            die("pipe: %s", strerror(errno));
        pid_t pid = fork();
        if (pid < 0)
            die("fork: %s", strerror(errno));
        if (pid == 0) {
            close(p[0]);
            for (int k = 0; k < w; k++)
                close(l->fds[k]);
            worker_main(o, rank, w, p[1]);
        }
        close(p[1]);
        l->pids[w] = pid;
        l->fds[w] = p[0];
    }
}

static void loader_next(struct loader *l, const struct options *o, int rank, uint64_t index,
                        unsigned char *buf, size_t bytes)
{
    if (l->workers == 0) {
        read_batch(o, rank, index, buf, bytes);
        prepare_batch(o, rank, buf, bytes);
        return;
    }
    int fd = l->fds[index % (uint64_t)l->workers];
    struct batch_header h;
    if (read_all(fd, &h, sizeof h) != 0 || h.index != index || h.bytes != bytes ||
        read_all(fd, buf, bytes) != 0)
        die("loader worker %d sent no batch %llu", (int)(index % (uint64_t)l->workers),
            (unsigned long long)index);
}

static void loader_stop(struct loader *l)
{
    for (int w = 0; w < l->workers; w++)
        close(l->fds[w]);
    for (int w = 0; w < l->workers; w++) {
        int status;
        while (waitpid(l->pids[w], &status, 0) < 0 && errno == EINTR)
            ;
    }
}

/* ------------------------------------------------------------ kernels */

__global__ void sgd_kernel(float *grad, size_t n, float lr)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        grad[i] -= lr * grad[i];
}

static unsigned blocks_for(double threads)
{
    double b = threads / THREADS_PER_BLOCK;
    return b < 1 ? 1u : (unsigned)b;
}

static double compute_scale(const struct options *o, int rank)
{
    return rank == o->slow_rank ? o->slow_factor : 1.0;
}

static void launch_layer(const struct options *o, const struct gpu_state *g, double threads)
{
    busy_kernel<<<blocks_for(threads), THREADS_PER_BLOCK, 0, g->compute>>>(
        g->act, ACT_ELEMS, o->kernel_iters, 0.999f);
    CUDA_CHECK(cudaGetLastError());
}

/* ------------------------------------------------------------ GPU side */

/* Nodes are consecutive blocks of LOCAL_WORLD_SIZE ranks, as launchers
 * number them. */
static void split_by_node(struct gpu_state *g, const struct rank_env *r)
{
    int node = r->rank / r->local_world;
    NCCL_CHECK(ncclCommSplit(g->comm_world, node, r->rank, &g->comm_node, NULL));
    NCCL_CHECK(ncclCommSplit(g->comm_world, r->rank % r->local_world, r->rank, &g->comm_cross,
                             NULL));
    NCCL_CHECK(ncclCommUserRank(g->comm_node, &g->node_rank));
    NCCL_CHECK(ncclCommCount(g->comm_node, &g->node_size));
}

static void gpu_setup(struct gpu_state *g, const struct options *o, const struct rank_env *r)
{
    int devices = 0;
    CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (devices < 1)
        die("no CUDA device");
    CUDA_CHECK(cudaSetDevice(r->local_rank % devices));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g->compute, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g->comm, cudaStreamNonBlocking));
    g->grad_elems = (size_t)(o->grad_mb * BYTES_PER_MB / sizeof(float));
    /* every bucket splits evenly into one shard per rank of a node */
    g->grad_elems -= g->grad_elems % ((size_t)o->buckets * (size_t)r->local_world);
    if (g->grad_elems == 0)
        die("--grad-mb too small for %d buckets", o->buckets);
    CUDA_CHECK(cudaMalloc((void **)&g->act, ACT_ELEMS * sizeof(float)));
    CUDA_CHECK(cudaMemset(g->act, 0, ACT_ELEMS * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&g->grad, g->grad_elems * sizeof(float)));
    CUDA_CHECK(cudaMemset(g->grad, 0, g->grad_elems * sizeof(float)));
    g->input_cap = batch_bytes(o, r->rank);
    CUDA_CHECK(cudaMallocHost((void **)&g->pinned, g->input_cap));
    CUDA_CHECK(cudaMalloc((void **)&g->input_dev, g->input_cap));
    for (int b = 0; b < o->buckets; b++) {
        CUDA_CHECK(cudaEventCreateWithFlags(&g->bucket_ready[b], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreate(&g->ar_start[b]));
        CUDA_CHECK(cudaEventCreate(&g->ar_end[b]));
    }
    CUDA_CHECK(cudaEventCreateWithFlags(&g->comm_done, cudaEventDisableTiming));
    ncclUniqueId id = exchange_unique_id(r->rank, r->world, o->rendezvous, "a rendezvous directory: --rendezvous DIR, ");
    NCCL_CHECK(ncclCommInitRank(&g->comm_world, r->world, id, r->rank));
    if (o->hierarchical)
        split_by_node(g, r);
}

static void gpu_teardown(struct gpu_state *g, const struct options *o)
{
    if (o->hierarchical) {
        NCCL_CHECK(ncclCommDestroy(g->comm_node));
        NCCL_CHECK(ncclCommDestroy(g->comm_cross));
    }
    NCCL_CHECK(ncclCommDestroy(g->comm_world));
    for (int b = 0; b < o->buckets; b++) {
        CUDA_CHECK(cudaEventDestroy(g->bucket_ready[b]));
        CUDA_CHECK(cudaEventDestroy(g->ar_start[b]));
        CUDA_CHECK(cudaEventDestroy(g->ar_end[b]));
    }
    CUDA_CHECK(cudaEventDestroy(g->comm_done));
    CUDA_CHECK(cudaFree(g->act));
    CUDA_CHECK(cudaFree(g->grad));
    CUDA_CHECK(cudaFree(g->input_dev));
    CUDA_CHECK(cudaFreeHost(g->pinned));
    CUDA_CHECK(cudaStreamDestroy(g->compute));
    CUDA_CHECK(cudaStreamDestroy(g->comm));
}

/* All-reduces bucket B on the comm stream once backward bucket READY is
 * done (B itself when overlapping, the last one otherwise), timed with CUDA
 * events. */
static void allreduce_bucket(const struct options *o, struct gpu_state *g, int b, int ready)
{
    size_t per = g->grad_elems / (size_t)o->buckets;
    CUDA_CHECK(cudaStreamWaitEvent(g->comm, g->bucket_ready[ready], 0));
    CUDA_CHECK(cudaEventRecord(g->ar_start[b], g->comm));
    float *buf = g->grad + per * (size_t)b;
    if (o->hierarchical) {
        /* in place: this rank's shard is at offset node_rank * shard */
        size_t shard = per / (size_t)g->node_size;
        float *mine = buf + shard * (size_t)g->node_rank;
        NCCL_CHECK(ncclReduceScatter(buf, mine, shard, ncclFloat, ncclSum, g->comm_node,
                                     g->comm));
        NCCL_CHECK(ncclAllReduce(mine, mine, shard, ncclFloat, ncclSum, g->comm_cross, g->comm));
        NCCL_CHECK(ncclAllGather(mine, buf, shard, ncclFloat, g->comm_node, g->comm));
    } else {
        NCCL_CHECK(ncclAllReduce(buf, buf, per, ncclFloat, ncclSum, g->comm_world, g->comm));
    }
    CUDA_CHECK(cudaEventRecord(g->ar_end[b], g->comm));
}

/* Forward, backward by bucket, all-reduce, optimizer: one step's GPU work. */
static void enqueue_step(const struct options *o, struct gpu_state *g, int rank, size_t bytes)
{
    CUDA_CHECK(cudaMemcpyAsync(g->input_dev, g->pinned, bytes, cudaMemcpyHostToDevice,
                               g->compute));
    double layer = (double)o->batch * o->layer_kthreads * 1000.0 * compute_scale(o, rank);
    for (int l = 0; l < FWD_LAYERS; l++)
        launch_layer(o, g, layer);
    double bucket_threads = layer * FWD_LAYERS * BWD_WORK_RATIO / o->buckets;
    for (int b = 0; b < o->buckets; b++) {
        launch_layer(o, g, bucket_threads);
        CUDA_CHECK(cudaEventRecord(g->bucket_ready[b], g->compute));
        if (o->overlap)
            allreduce_bucket(o, g, b, b);
    }
    if (!o->overlap)
        for (int b = 0; b < o->buckets; b++)
            allreduce_bucket(o, g, b, o->buckets - 1);
    CUDA_CHECK(cudaEventRecord(g->comm_done, g->comm));
    CUDA_CHECK(cudaStreamWaitEvent(g->compute, g->comm_done, 0));
    size_t opt_threads = g->grad_elems / OPT_ELEMS_PER_THREAD;
    sgd_kernel<<<blocks_for((double)opt_threads), THREADS_PER_BLOCK, 0, g->compute>>>(
        g->grad, g->grad_elems, 1e-3f);
    CUDA_CHECK(cudaGetLastError());
}

static double allreduce_ms(const struct options *o, struct gpu_state *g)
{
    double total = 0;
    for (int b = 0; b < o->buckets; b++) {
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, g->ar_start[b], g->ar_end[b]));
        total += ms;
    }
    return total;
}

/* --------------------------------------------------------------- main */

struct run_stats {
    double *step_ms;
    double allreduce_ms;
    double input_wait_ms;
};

static void run_steps(const struct options *o, const struct rank_env *r, struct loader *l,
                      struct gpu_state *g, struct run_stats *s)
{
    size_t bytes = batch_bytes(o, r->rank);
    for (int step = 0; step < o->steps; step++) {
        char name[32];
        snprintf(name, sizeof name, "step %d", step);
        uint64_t t0 = now_ns();
        if (o->markers)
            nvtxRangePushA(name);
        loader_next(l, o, r->rank, (uint64_t)step, g->pinned, bytes);
        uint64_t t_input = now_ns();
        truth_interval("input_wait", step, t0, t_input);
        enqueue_step(o, g, r->rank, bytes);
        CUDA_CHECK(cudaStreamSynchronize(g->compute));
        if (o->markers)
            nvtxRangePop();
        uint64_t t1 = now_ns();
        truth_interval("step", step, t0, t1);
        s->step_ms[step] = (double)(t1 - t0) / NS_PER_MS;
        s->input_wait_ms += (double)(t_input - t0) / NS_PER_MS;
        s->allreduce_ms += allreduce_ms(o, g);
    }
}

static void print_summary(const struct options *o, const struct rank_env *r,
                          const struct run_stats *s)
{
    printf("ddp_train: rank %d of %d, batch %d per GPU, %d workers, grad %.1f MiB in %d "
           "buckets%s%s\n",
           r->rank, r->world, o->batch, o->workers, o->grad_mb, o->buckets,
           o->overlap ? ", overlapped" : "", o->hierarchical ? ", hierarchical" : "");
    for (int i = 0; i < o->steps; i++)
        printf("step %d: %.2f ms\n", i, s->step_ms[i]);
    double *sorted = (double *)malloc(sizeof(double) * (size_t)o->steps);
    if (!sorted)
        die("out of memory");
    memcpy(sorted, s->step_ms, sizeof(double) * (size_t)o->steps);
    qsort(sorted, (size_t)o->steps, sizeof(double), compare_double);
    double median = sorted[o->steps / 2];
    free(sorted);
    printf("median step: %.2f ms, throughput %.1f samples/s over %d GPUs\n", median,
           median > 0 ? 1000.0 * o->batch * r->world / median : 0.0, r->world);
    printf("input wait: %.2f ms total; allreduce (CUDA events): %.2f ms total, %.3f ms/step\n",
           s->input_wait_ms, s->allreduce_ms, s->allreduce_ms / o->steps);
}

int main(int argc, char **argv)
{
    example_name = "ddp_train";
    struct options o;
    struct rank_env r = read_rank_env();
    g_rank = r.rank;
    parse_options(argc, argv, &o);
    truth_open();
    make_dataset(&o);

    struct gpu_state g;
    memset(&g, 0, sizeof g);
    gpu_setup(&g, &o, &r);

    struct loader l;
    memset(&l, 0, sizeof l);
    loader_start(&l, &o, r.rank);

    struct run_stats s;
    memset(&s, 0, sizeof s);
    s.step_ms = (double *)calloc((size_t)o.steps, sizeof(double));
    if (!s.step_ms)
        die("out of memory");
    run_steps(&o, &r, &l, &g, &s);

    loader_stop(&l);
    gpu_teardown(&g, &o);
    if (r.rank == 0)
        print_summary(&o, &r, &s);
    free(s.step_ms);
    if (truth_fd >= 0)
        close(truth_fd);
    return 0;
}
