/*
 * multigpu.cu - one process driving several GPUs, the two ways nccl-tests
 * does it, around a small data-parallel step.
 *
 *   --pattern group   (nccl-tests -g N) one thread drives every device: it
 *                     launches each device's kernels after cudaSetDevice,
 *                     then issues the all-reduces of all devices inside one
 *                     ncclGroupStart/ncclGroupEnd
 *   --pattern threads (nccl-tests -t N) one thread per device, each with
 *                     its own stream and communicator rank
 *
 * Communicators come from ncclCommInitAll (--init all, the default with
 * --pattern group), or from ncclGroupStart + ncclCommInitRank per device
 * (--init group), or, with threads, from ncclCommInitRank in each thread.
 * Rank r drives device (r + --device-offset) % N, so a rank is not always
 * its device's number.  Each step, per device: a forward and a backward
 * kernel, two gradient all-reduces of different sizes, a stream sync.
 * --slow-device D makes device D's kernels --slow-factor times longer (or
 * --slow-rank R those of rank R): the other ranks then wait for it in
 * every all-reduce.
 *
 * Started several times by a launcher (RANK, WORLD_SIZE, LOCAL_RANK as
 * torchrun sets them, and a rendezvous directory in $SCALEPROF_RENDEZVOUS
 * or $SIM_RENDEZVOUS), process p holds ranks p*N .. p*N+N-1 of one
 * communicator and drives devices LOCAL_RANK*N .. LOCAL_RANK*N+N-1 (as
 * nccl-tests under MPI with -g N); process 0 publishes the NCCL id.
 *
 * The program knows nothing of any profiler; every CUDA and NCCL call is
 * checked and a failure ends it with a message and status 1.
 */
#include <cuda_runtime.h>
#include <nccl.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "example.h"

#define MAX_GPUS 64
#define THREADS_PER_BLOCK 256
#define BWD_WORK_RATIO 2 /* backward costs twice the forward */
#define BYTES_PER_MB (1024.0 * 1024.0)
#define BUCKET_A_SHARE 0.625 /* the first bucket's share of the gradient */
#define ACT_ELEMS 4096

/* The options, each at its default (the rest 0). */
struct options {
    int gpus = 4, steps = 10, threads, init_all = 1, device_offset, slow_device = -1, slow_rank = -1;
    int procs, proc, local_proc; /* from the launcher: WORLD_SIZE, RANK, LOCAL_RANK */
    double layer_kthreads = 2000, grad_mb = 24, slow_factor = 1;
};

/* What one rank owns: its device, stream, communicator and buffers. */
struct rank_state {
    const struct options *o;
    int rank, device;
    cudaStream_t stream;
    ncclComm_t comm;
    ncclUniqueId id;
    float *act, *grad;
    size_t elems_a, elems_b;
};

static void usage(void)
{
    fputs("usage: multigpu [options]\n"
          "  --gpus N             devices driven by this process (4)\n"
          "  --pattern group|threads  one thread and group calls, or a thread per device (group)\n"
          "  --init all|group     ncclCommInitAll, or GroupStart + CommInitRank per device (all)\n"
          "  --steps N            training steps (10)\n"
          "  --layer-kthreads N   GPU threads of the forward kernel, in thousands (2000)\n"
          "  --grad-mb X          gradient all-reduced per step, MiB (24)\n"
          "  --device-offset K    rank r drives device (r + K) % N (0)\n"
          "  --slow-device D --slow-factor F  device D's kernels take F times longer\n"
          "  --slow-rank R        rank R's kernels take F times longer\n",
          stderr);
    exit(2);
}

static void parse_options(int argc, char **argv, struct options *o)
{
    // clang-format off
    static const struct option long_opts[] = {
        {"gpus", required_argument, 0, 'g'},      {"pattern", required_argument, 0, 'p'},
        {"init", required_argument, 0, 'i'},      {"steps", required_argument, 0, 's'},
        {"layer-kthreads", required_argument, 0, 'k'}, {"grad-mb", required_argument, 0, 'm'},
        {"device-offset", required_argument, 0, 'o'}, {"slow-device", required_argument, 0, 'd'},
        {"slow-factor", required_argument, 0, 'f'}, {"slow-rank", required_argument, 0, 'r'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    // clang-format on
    *o = options();
    int c;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'g': o->gpus = (int)parse_number("gpus", optarg, 1, MAX_GPUS); break;
        case 'p':
            if (strcmp(optarg, "group") && strcmp(optarg, "threads"))
                die("--pattern: 'group' or 'threads', not '%s'", optarg);
            o->threads = !strcmp(optarg, "threads");
            break;
        case 'i':
            if (strcmp(optarg, "all") && strcmp(optarg, "group"))
                die("--init: 'all' or 'group', not '%s'", optarg);
            o->init_all = !strcmp(optarg, "all");
            break;
        case 's': o->steps = (int)parse_number("steps", optarg, 1, 1e6); break;
        case 'k': o->layer_kthreads = parse_number("layer-kthreads", optarg, 1, 1e6); break;
        case 'm': o->grad_mb = parse_number("grad-mb", optarg, 0.01, 4096); break;
        case 'o': o->device_offset = (int)parse_number("device-offset", optarg, 0, MAX_GPUS); break;
        case 'd': o->slow_device = (int)parse_number("slow-device", optarg, 0, MAX_GPUS - 1); break;
        case 'f': o->slow_factor = parse_number("slow-factor", optarg, 1, 100); break;
        case 'r': o->slow_rank = (int)parse_number("slow-rank", optarg, 0, 1 << 20); break;
        default: usage();
        }
    }
    if (optind < argc)
        usage();
    o->procs = env_int("WORLD_SIZE", 1);
    o->proc = env_int("RANK", 0);
    o->local_proc = env_int("LOCAL_RANK", 0);
    if (o->procs < 1 || o->proc < 0 || o->proc >= o->procs || o->local_proc < 0)
        die("bad RANK %d / WORLD_SIZE %d", o->proc, o->procs);
    if (o->procs > 1 && o->init_all && !o->threads)
        die("ncclCommInitAll makes the ranks of one process only: use --init group");
}

/* Synthetic work: its duration follows the thread count. */
__global__ void layer_kernel(float *act, unsigned n, float scale)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = act[i % n] * scale + 1e-3f;
    if (v == 12345.0f) /* never true in practice */
        act[i % n] = v;
}

static void launch_layer(const struct rank_state *s, double kthreads)
{
    int slow = s->device == s->o->slow_device || s->rank == s->o->slow_rank;
    double scale = slow ? s->o->slow_factor : 1.0;
    double blocks = kthreads * 1000.0 * scale / THREADS_PER_BLOCK;
    unsigned grid = blocks < 1 ? 1u : (unsigned)blocks;
    layer_kernel<<<grid, THREADS_PER_BLOCK, 0, s->stream>>>(s->act, ACT_ELEMS, 0.999f);
    CUDA_CHECK(cudaGetLastError());
}

/* Device memory and the stream, made on the rank's device. */
static void setup_rank(struct rank_state *s)
{
    CUDA_CHECK(cudaSetDevice(s->device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    size_t elems = (size_t)(s->o->grad_mb * BYTES_PER_MB / sizeof(float));
    s->elems_a = (size_t)((double)elems * BUCKET_A_SHARE);
    s->elems_b = elems - s->elems_a;
    CUDA_CHECK(cudaMalloc((void **)&s->act, ACT_ELEMS * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&s->grad, elems * sizeof(float)));
    CUDA_CHECK(cudaMemsetAsync(s->grad, 0, elems * sizeof(float), s->stream));
}

static void compute(const struct rank_state *s)
{
    launch_layer(s, s->o->layer_kthreads);
    launch_layer(s, s->o->layer_kthreads * BWD_WORK_RATIO);
}

static void all_reduce(const struct rank_state *s, int bucket)
{
    float *buf = bucket ? s->grad + s->elems_a : s->grad;
    size_t n = bucket ? s->elems_b : s->elems_a;
    NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, s->comm, s->stream));
}

/* ---------------------------------------------- one thread, every device */

static void run_group(const struct options *o, struct rank_state *rs)
{
    int n = o->gpus;
    for (int r = 0; r < n; r++)
        setup_rank(&rs[r]);
    if (o->init_all) {
        ncclComm_t comms[MAX_GPUS];
        int devs[MAX_GPUS];
        for (int r = 0; r < n; r++)
            devs[r] = rs[r].device;
        NCCL_CHECK(ncclCommInitAll(comms, n, devs));
        for (int r = 0; r < n; r++)
            rs[r].comm = comms[r];
    } else {
        ncclUniqueId id = exchange_unique_id(o->proc, o->procs, NULL, "");
        NCCL_CHECK(ncclGroupStart());
        for (int r = 0; r < n; r++) {
            CUDA_CHECK(cudaSetDevice(rs[r].device));
            NCCL_CHECK(ncclCommInitRank(&rs[r].comm, n * o->procs, id, rs[r].rank));
        }
        NCCL_CHECK(ncclGroupEnd());
    }
    for (int step = 0; step < o->steps; step++) {
        for (int r = 0; r < n; r++) {
            CUDA_CHECK(cudaSetDevice(rs[r].device));
            compute(&rs[r]);
        }
        for (int bucket = 0; bucket < 2; bucket++) {
            NCCL_CHECK(ncclGroupStart());
            for (int r = 0; r < n; r++)
                all_reduce(&rs[r], bucket);
            NCCL_CHECK(ncclGroupEnd());
        }
        for (int r = 0; r < n; r++) {
            CUDA_CHECK(cudaSetDevice(rs[r].device));
            CUDA_CHECK(cudaStreamSynchronize(rs[r].stream));
        }
    }
    for (int r = 0; r < n; r++)
        NCCL_CHECK(ncclCommDestroy(rs[r].comm));
}

/* ---------------------------------------------- a thread per device */

static void *rank_thread(void *arg)
{
    struct rank_state *s = (struct rank_state *)arg;
    setup_rank(s);
    NCCL_CHECK(ncclCommInitRank(&s->comm, s->o->gpus * s->o->procs, s->id, s->rank));
    for (int step = 0; step < s->o->steps; step++) {
        compute(s);
        all_reduce(s, 0);
        all_reduce(s, 1);
        CUDA_CHECK(cudaStreamSynchronize(s->stream));
    }
    NCCL_CHECK(ncclCommDestroy(s->comm));
    return NULL;
}

static void run_threads(const struct options *o, struct rank_state *rs)
{
    ncclUniqueId id = exchange_unique_id(o->proc, o->procs, NULL, "");
    pthread_t tids[MAX_GPUS];
    for (int r = 0; r < o->gpus; r++) {
        rs[r].id = id;
        if (pthread_create(&tids[r], NULL, rank_thread, &rs[r]) != 0)
            die("cannot start the thread of rank %d", r);
    }
    for (int r = 0; r < o->gpus; r++)
        pthread_join(tids[r], NULL);
}

int main(int argc, char **argv)
{
    example_name = "multigpu";
    g_rank = -1; /* one process, several ranks: its messages name none */
    struct options o;
    parse_options(argc, argv, &o);
    int have = 0;
    CUDA_CHECK(cudaGetDeviceCount(&have));
    int first = o.local_proc * o.gpus;
    if (have < first + o.gpus)
        die("%d GPUs asked for from device %d, %d present", o.gpus, first, have);
    struct rank_state rs[MAX_GPUS];
    memset(rs, 0, sizeof rs);
    for (int r = 0; r < o.gpus; r++) {
        rs[r].o = &o;
        rs[r].rank = o.proc * o.gpus + r;
        rs[r].device = first + (r + o.device_offset) % o.gpus;
    }
    if (o.threads)
        run_threads(&o, rs);
    else
        run_group(&o, rs);
    if (o.proc == 0)
        printf("multigpu: %d ranks on %d GPUs in %d process%s (%s), %d steps\n", o.gpus * o.procs,
               o.gpus * o.procs, o.procs, o.procs == 1 ? "" : "es",
               o.threads ? "a thread per GPU" : "group calls", o.steps);
    return 0;
}
