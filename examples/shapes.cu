/*
 * shapes.cu - training jobs in the shapes that make scaling go wrong in
 * less obvious ways than ddp_train's, each with one flag that removes its
 * cause, so that the same job can be run as it is and fixed and the two
 * step times compared.
 *
 *   --shape dp        data parallel: forward, backward, then the gradient
 *                     buckets all-reduced back to back after the backward
 *                     pass (never overlapped); equal or unequal buckets;
 *                     slow ranks (--slow-rank R[:F], repeatable), or work
 *                     drawn per step and rank from a seeded distribution
 *                     (--imbalance S: variable sequence lengths) that
 *                     --balance evens out to each step's mean
 *   --shape pipeline  one pipeline stage per rank, GPipe schedule over
 *                     ncclSend/ncclRecv: every micro-batch's forward
 *                     (activations to the next stage), then every
 *                     backward (gradients to the previous one), then a
 *                     gradient-norm all-reduce over all stages; more
 *                     --micro-batches at the same total work shrink the
 *                     fill and drain; one stage can be slow; --1f1b runs
 *                     the one-forward-one-backward schedule instead (after
 *                     S-1-s warm-up forwards, stage s alternates a forward
 *                     and a backward, then drains the backwards); --pp-dp N
 *                     runs N copies of the pipeline side by side (ranks
 *                     d*S .. d*S+S-1 are copy d's stages), each stage's
 *                     gradients all-reduced over its N copies: no
 *                     collective then spans every rank; --interleave V
 *                     gives each rank V model chunks, looped (the ranks
 *                     form a ring)
 *   --shape tpdp      tensor parallel groups of --tp ranks (all-reduce after
 *                     every layer, inside the group) times data parallel
 *                     across groups (gradient all-reduce at the end); one
 *                     group can be slow (--slow-group)
 *   --shape launch    thousands of tiny kernels per step, the host spending
 *                     --host-us between launches (a launch-bound host)
 *   --shape alltoall  mixture-of-experts layers: each layer computes, then
 *                     dispatches tokens to every other rank (grouped
 *                     ncclSend/ncclRecv inside ncclGroupStart/End, an
 *                     all-to-all), computes its experts on the tokens it
 *                     received, and sends the results back the same way;
 *                     one hot rank (--hot-rank) receives --hot-factor times
 *                     the tokens and its experts compute as much longer
 *   --shape 1f1b      one pipeline stage per rank, the one-forward-one-
 *                     backward schedule over ncclSend/ncclRecv: warm-up
 *                     forwards, then a steady state whose send of
 *                     activations and receive of gradients (and the other
 *                     way) share one group, then cool-down backwards; one
 *                     stage can be slow
 *   --shape loader    one loader process per rank reading batches from files
 *                     (real read() calls); rank r's batch takes
 *                     --loader-slow-ms on the steps s with s % WORLD_SIZE
 *                     == r, --loader-ms on the others, so the loaders take
 *                     turns at being late.  By default a batch is asked for
 *                     when its step begins (no prefetch: every late batch
 *                     delays its step); --prefetch 1 asks for the next
 *                     batch as soon as the current one is taken
 *   --shape copy      each step copies a batch of --batch-mb from host memory
 *                     to the GPU, then computes on it.  By default the host
 *                     buffer is pageable (malloc) and the copy is issued on
 *                     the compute stream, so the step waits for it; --pinned
 *                     takes the buffer from cudaMallocHost (the same copy,
 *                     faster, still in line with compute); --prefetch 1
 *                     copies the next step's batch on a side stream while
 *                     this step computes (double-buffered, an event orders
 *                     the compute after its batch arrived)
 *
 * GPU work is given in milliseconds at the simulator's default kernel speed
 * (1000 threads per microsecond): a kernel of X ms has X * 10^6 threads.
 * On a real GPU the same grids take whatever they take.
 *
 * Every rank brackets each step with an NVTX range "step N" and, with
 * EXAMPLE_TRUTH=FILE, appends JSON lines (one write() each, O_APPEND) of its
 * step boundaries, its input waits and the work factor it drew, host
 * CLOCK_MONOTONIC ns: the job's own truth.  Every CUDA and NCCL call is
 * checked; a failure ends the program with a message and status 1, a bad
 * flag with status 2.  Rank 0 prints each step's time and the mean after
 * the first --skip steps.  The program knows nothing of any profiler.
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

#define NS_PER_US 1000ull
#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define BYTES_PER_KB 1024ull
#define BYTES_PER_MB (1024ull * 1024ull)
/* 250 threads a block: at the sim's 1000 threads per microsecond, a whole
 * number of microseconds is a whole number of blocks. */
#define THREADS_PER_BLOCK 250
#define THREADS_PER_MS 1.0e6
#define ACT_ELEMS (1u << 20)
#define NORM_ELEMS 1024 /* the pipeline's gradient-norm all-reduce */
#define OPT_MS 0.2      /* the optimizer kernel */
#define FWD_KERNELS 2   /* dp, loader: forward kernels per step */
#define MAX_BUCKETS 64
#define DATA_FILES 8
#define DATA_FILE_KB 1024

#define MAX_SLOW 8 /* --slow-rank given at most this many times */

enum shape {
    SHAPE_DP,
    SHAPE_PIPELINE,
    SHAPE_TPDP,
    SHAPE_LAUNCH,
    SHAPE_LOADER,
    SHAPE_COPY,
    SHAPE_ALLTOALL,
    SHAPE_1F1B
};
static const char *const shape_names[] = {"dp", "pipeline", "tpdp", "launch", "loader", "copy", "alltoall", "1f1b"};
#define COPY_BUFFERS 2 /* copy --prefetch: one batch in use, the next arriving */

/* The options, each at its default (the rest 0). */
struct options {
    enum shape shape = (enum shape)(-1);
    int steps = 10, skip = 3;
    double work_ms = 20; /* GPU work per step per rank (per stage for pipeline) */
    double grad_mb = 16;
    int buckets = 4;
    int unequal; /* bucket b holds 2^b parts of the gradient */
    int nslow;   /* --slow-rank given this many times */
    int slow_rank[MAX_SLOW];
    double slow_rank_factor[MAX_SLOW]; /* 0: --slow-factor */
    int slow_group = -1;
    double slow_factor = 1;
    double imbalance;     /* per-step work factor drawn from [1-S, 1+S] */
    int balance;          /* every rank does the step's mean work */
    int micro = 4;        /* pipeline micro-batches per step */
    int one_f_one_b;      /* pipeline: 1F1B schedule instead of GPipe */
    int pp_dp = 1;        /* pipeline: data-parallel replicas of the whole pipeline */
    int slow_stage = -1;  /* pipeline: this stage's ranks in every copy are slow */
    int interleave = 1;   /* pipeline: model chunks per rank (virtual stages), 1 none */
    double act_kb = 1024; /* pipeline activations per step, split over them */
    int tp = 2, layers = 4;
    double tp_kb = 1024;   /* tpdp: bytes of each per-layer all-reduce */
    double token_kb = 64;  /* alltoall: tokens one rank sends another per layer */
    int hot_rank = -1;     /* alltoall: the rank that receives more tokens */
    double hot_factor = 1; /* ... this many times the others' */
    int kernels = 2000;    /* launch: kernels per step */
    double kernel_us = 4, host_us = 40;
    int host_sleep; /* launch: the host work sleeps instead of spinning */
    double loader_ms = 2, loader_slow_ms = 30;
    int prefetch;
    int read_kb = 64;
    double batch_mb = 4; /* copy: bytes copied to the GPU per step */
    int pinned;          /* copy: the host buffer is pinned (cudaMallocHost) */
    int kernel_iters = 16;
    int markers = 1;
    int mid_sync;        /* dp: the loss read back (.item()) after the forward */
    int no_nccl;         /* one GPU and no communicator: no collective at all */
    double step_host_ms; /* dp: host work per step (logging, Python) */
    int ckpt_every;      /* dp: a checkpoint every N steps (0: none) */
    double ckpt_mb = 64;
    int ckpt_rank;
    unsigned seed = 1;
    const char *data_dir = default_data_dir();
    const char *rendezvous;
};

struct rank_env {
    int rank, world;
};

struct gpu {
    cudaStream_t stream;
    float *act, *grad, *norm, *tp_buf, *send_buf, *recv_buf;
    float *a2a_send, *a2a_recv; /* alltoall: one slot per peer */
    size_t a2a_slot;            /* elements in a slot (the hot rank's share) */
    unsigned char *pinned, *input_dev;
    /* copy: host batches (pageable or pinned), their device buffers, the
     * side stream that prefetches and the events that say a batch arrived */
    unsigned char *batch_host[COPY_BUFFERS], *batch_dev[COPY_BUFFERS];
    size_t batch_bytes;
    cudaStream_t copy_stream;
    cudaEvent_t batch_ready[COPY_BUFFERS];
    size_t grad_elems, tp_elems, p2p_elems, input_bytes;
    size_t bucket_off[MAX_BUCKETS + 1];
    ncclComm_t world, tp, dp;
};

/* ---------------------------------------------------------------- time */

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / NS_PER_S), (long)(ns % NS_PER_S)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Host work that keeps the CPU busy until the wall clock has moved by NS,
 * as an interpreter between two kernel launches does. */
static void spin_ns(uint64_t ns)
{
    uint64_t until = now_ns() + ns;
    while (now_ns() < until)
        ;
}

/* ------------------------------------------------------------- options */

static void usage(FILE *to)
{
    fprintf(to,
            "usage: shapes --shape dp|pipeline|tpdp|launch|loader|copy|alltoall|1f1b [options]\n"
            "common:\n"
            "  --steps N             steps (10); --skip N steps left out of the mean (3)\n"
            "  --work-ms X           GPU work per step and rank, ms at 1000 threads/us (20)\n"
            "  --grad-mb X           gradients all-reduced per step, MiB (16)\n"
            "  --slow-rank R --slow-factor F   rank R's kernels take F times longer\n"
            "  --slow-rank R:F       rank R's kernels take F times longer; repeatable\n"
            "                        (up to 8 ranks), each R without :F at --slow-factor\n"
            "  --kernel-iters N      arithmetic per GPU thread (real GPUs only) (16)\n"
            "  --no-markers          no NVTX range per step\n"
            "  --no-nccl             one GPU and no communicator (WORLD_SIZE 1; dp, launch, copy)\n"
            "  --rendezvous DIR      where rank 0 publishes the NCCL id\n"
            "                        (default $SCALEPROF_RENDEZVOUS, then $SIM_RENDEZVOUS)\n"
            "dp:\n"
            "  --buckets N           gradient buckets, all-reduced after the backward pass (4)\n"
            "  --unequal             bucket b holds 2^b parts of the gradient\n"
            "  --imbalance S         each step each rank's work is drawn from [1-S, 1+S] (0)\n"
            "  --balance             every rank does the mean of the step's draws\n"
            "  --seed N              seed of the draws and the dataset (1)\n"
            "  --step-host-ms X      host work per step after the forward is launched (0)\n"
            "  --mid-sync            read the loss back (a blocking copy, like .item()) after\n"
            "                        the forward, before that host work and the backward\n"
            "  --ckpt-every N        every Nth step, --ckpt-rank writes a checkpoint (0: never)\n"
            "  --ckpt-mb X           checkpoint size, MiB, written and fsynced in --data (64)\n"
            "  --ckpt-rank R         the rank that writes it (0)\n"
            "pipeline and 1f1b (one stage per rank):\n"
            "  --micro-batches M     micro-batches per step, same total work (4)\n"
            "  --act-kb X            activations per step, KiB, split over them (1024)\n"
            "  --1f1b                one-forward-one-backward schedule instead of GPipe\n"
            "  --pp-dp N             N data-parallel copies of the pipeline, WORLD_SIZE/N stages\n"
            "                        each; a stage's gradients (--grad-mb) all-reduced over its\n"
            "                        copies instead of the gradient norm over every rank (1)\n"
            "  --slow-stage S        stage S's kernels take --slow-factor times longer, in every copy\n"
            "  --interleave V        V model chunks per rank (virtual stages), looped: the last\n"
            "                        rank's chunk c feeds rank 0's chunk c+1; micro-batches a\n"
            "                        multiple of the stages (1)\n"
            "tpdp:\n"
            "  --tp N                ranks per tensor-parallel group (2)\n"
            "  --layers N            layers, each with an all-reduce in its group (4)\n"
            "  --tp-kb X             bytes of each per-layer all-reduce, KiB (1024)\n"
            "  --slow-group G        group G's kernels take --slow-factor times longer\n"
            "alltoall (also --layers):\n"
            "  --token-kb X          tokens each rank sends each other rank per layer, KiB (64)\n"
            "  --hot-rank R          the rank that receives --hot-factor times the tokens\n"
            "  --hot-factor F        ... and computes its experts F times longer (1)\n"
            "launch:\n"
            "  --kernels N           kernels per step (2000)\n"
            "  --kernel-us X         each kernel's GPU time (4)\n"
            "  --host-us X           host work before each launch (40)\n"
            "  --host-sleep          that host time is slept, not spent on the CPU\n"
            "loader:\n"
            "  --loader-ms X         time to prepare a batch (2)\n"
            "  --loader-slow-ms X    the same on this rank's late steps (30)\n"
            "  --prefetch N          batches asked for ahead, 0 or 1 (0)\n"
            "  --read-kb N           bytes read from files per batch (64)\n"
            "  --data DIR            dataset directory, created if missing ($TMPDIR/shapes_data)\n"
            "copy (each step's batch copied host to GPU, then computed on):\n"
            "  --batch-mb X          batch copied per step, MiB (4)\n"
            "  --pinned              the host batch is pinned memory (default: pageable)\n"
            "  --prefetch N          1: the next batch is copied on a side stream during\n"
            "                        this step's compute (default 0: in line, before it)\n"
            "environment: RANK, WORLD_SIZE, LOCAL_RANK; EXAMPLE_TRUTH=FILE logs host-side facts\n");
}

// clang-format off
enum {
    OPT_SHAPE = 256, OPT_STEPS, OPT_SKIP, OPT_WORK, OPT_GRAD, OPT_BUCKETS, OPT_UNEQUAL,
    OPT_SLOW_RANK, OPT_SLOW_GROUP, OPT_SLOW_FACTOR, OPT_IMBALANCE, OPT_BALANCE, OPT_MICRO,
    OPT_ACT, OPT_TP, OPT_LAYERS, OPT_TP_KB, OPT_KERNELS, OPT_KERNEL_US, OPT_HOST_US, OPT_HOST_SLEEP,
    OPT_LOADER_MS, OPT_LOADER_SLOW, OPT_PREFETCH, OPT_READ_KB, OPT_ITERS, OPT_NO_MARKERS, OPT_SEED,
    OPT_DATA, OPT_RENDEZVOUS, OPT_NO_NCCL, OPT_MID_SYNC, OPT_STEP_HOST, OPT_CKPT_EVERY, OPT_CKPT_MB,
    OPT_CKPT_RANK, OPT_BATCH_MB, OPT_PINNED, OPT_TOKEN_KB, OPT_HOT_RANK, OPT_HOT_FACTOR, OPT_1F1B, OPT_PP_DP,
    OPT_SLOW_STAGE, OPT_INTERLEAVE, OPT_HELP,
};
// clang-format on

static const struct option long_opts[] = {
    {"shape", required_argument, 0, OPT_SHAPE},
    {"steps", required_argument, 0, OPT_STEPS},
    {"skip", required_argument, 0, OPT_SKIP},
    {"work-ms", required_argument, 0, OPT_WORK},
    {"grad-mb", required_argument, 0, OPT_GRAD},
    {"buckets", required_argument, 0, OPT_BUCKETS},
    {"unequal", no_argument, 0, OPT_UNEQUAL},
    {"slow-rank", required_argument, 0, OPT_SLOW_RANK},
    {"slow-group", required_argument, 0, OPT_SLOW_GROUP},
    {"slow-factor", required_argument, 0, OPT_SLOW_FACTOR},
    {"imbalance", required_argument, 0, OPT_IMBALANCE},
    {"balance", no_argument, 0, OPT_BALANCE},
    {"micro-batches", required_argument, 0, OPT_MICRO},
    {"1f1b", no_argument, 0, OPT_1F1B},
    {"pp-dp", required_argument, 0, OPT_PP_DP},
    {"slow-stage", required_argument, 0, OPT_SLOW_STAGE},
    {"interleave", required_argument, 0, OPT_INTERLEAVE},
    {"act-kb", required_argument, 0, OPT_ACT},
    {"tp", required_argument, 0, OPT_TP},
    {"layers", required_argument, 0, OPT_LAYERS},
    {"tp-kb", required_argument, 0, OPT_TP_KB},
    {"kernels", required_argument, 0, OPT_KERNELS},
    {"kernel-us", required_argument, 0, OPT_KERNEL_US},
    {"host-us", required_argument, 0, OPT_HOST_US},
    {"host-sleep", no_argument, 0, OPT_HOST_SLEEP},
    {"loader-ms", required_argument, 0, OPT_LOADER_MS},
    {"loader-slow-ms", required_argument, 0, OPT_LOADER_SLOW},
    {"prefetch", required_argument, 0, OPT_PREFETCH},
    {"read-kb", required_argument, 0, OPT_READ_KB},
    {"kernel-iters", required_argument, 0, OPT_ITERS},
    {"no-markers", no_argument, 0, OPT_NO_MARKERS},
    {"seed", required_argument, 0, OPT_SEED},
    {"data", required_argument, 0, OPT_DATA},
    {"rendezvous", required_argument, 0, OPT_RENDEZVOUS},
    {"mid-sync", no_argument, 0, OPT_MID_SYNC},
    {"no-nccl", no_argument, 0, OPT_NO_NCCL},
    {"step-host-ms", required_argument, 0, OPT_STEP_HOST},
    {"ckpt-every", required_argument, 0, OPT_CKPT_EVERY},
    {"ckpt-mb", required_argument, 0, OPT_CKPT_MB},
    {"ckpt-rank", required_argument, 0, OPT_CKPT_RANK},
    {"batch-mb", required_argument, 0, OPT_BATCH_MB},
    {"pinned", no_argument, 0, OPT_PINNED},
    {"token-kb", required_argument, 0, OPT_TOKEN_KB},
    {"hot-rank", required_argument, 0, OPT_HOT_RANK},
    {"hot-factor", required_argument, 0, OPT_HOT_FACTOR},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

/* --slow-rank R or R:F, appended to the list of slow ranks. */
static void parse_slow_rank(const char *name, const char *arg, struct options *o)
{
    if (o->nslow == MAX_SLOW) {
        fprintf(stderr, "shapes: --%s: at most %d slow ranks\n", name, MAX_SLOW);
        exit(2);
    }
    char rank[32];
    const char *colon = strchr(arg, ':');
    size_t len = colon ? (size_t)(colon - arg) : strlen(arg);
    if (len >= sizeof rank)
        len = sizeof rank - 1;
    memcpy(rank, arg, len);
    rank[len] = 0;
    o->slow_rank[o->nslow] = (int)parse_number(name, rank, 0, 1 << 20);
    o->slow_rank_factor[o->nslow] = colon ? parse_number(name, colon + 1, 0.01, 1000) : 0;
    o->nslow++;
}

static void parse_options(int argc, char **argv, struct options *o)
{
    *o = options();
    int c;
    const char *n;
    while ((c = next_option(argc, argv, long_opts, &n)) != -1) {
        switch (c) {
        case OPT_SHAPE: {
            int found = -1;
            for (int i = 0; i < (int)(sizeof shape_names / sizeof *shape_names); i++)
                if (strcmp(optarg, shape_names[i]) == 0)
                    found = i;
            if (found < 0) {
                fprintf(stderr, "shapes: --shape: '%s' is not one of dp, pipeline, tpdp, "
                                "launch, loader, copy, alltoall, 1f1b\n",
                        optarg);
                exit(2);
            }
            o->shape = (enum shape)found;
            break;
        }
        case OPT_STEPS: o->steps = (int)parse_number(n, optarg, 1, 1e6); break;
        case OPT_SKIP: o->skip = (int)parse_number(n, optarg, 0, 1e6); break;
        case OPT_WORK: o->work_ms = parse_number(n, optarg, 0.001, 1e5); break;
        case OPT_GRAD: o->grad_mb = parse_number(n, optarg, 0.001, 1 << 16); break;
        case OPT_BUCKETS: o->buckets = (int)parse_number(n, optarg, 1, MAX_BUCKETS); break;
        case OPT_UNEQUAL: o->unequal = 1; break;
        case OPT_SLOW_RANK: parse_slow_rank(n, optarg, o); break;
        case OPT_SLOW_GROUP: o->slow_group = (int)parse_number(n, optarg, 0, 1 << 20); break;
        case OPT_SLOW_FACTOR: o->slow_factor = parse_number(n, optarg, 0.01, 1000); break;
        case OPT_IMBALANCE: o->imbalance = parse_number(n, optarg, 0, 0.95); break;
        case OPT_BALANCE: o->balance = 1; break;
        case OPT_MICRO: o->micro = (int)parse_number(n, optarg, 1, 4096); break;
        case OPT_1F1B: o->one_f_one_b = 1; break;
        case OPT_PP_DP: o->pp_dp = (int)parse_number(n, optarg, 1, 1024); break;
        case OPT_SLOW_STAGE: o->slow_stage = (int)parse_number(n, optarg, 0, 1024); break;
        case OPT_INTERLEAVE: o->interleave = (int)parse_number(n, optarg, 1, 64); break;
        case OPT_ACT: o->act_kb = parse_number(n, optarg, 1, 1 << 20); break;
        case OPT_TP: o->tp = (int)parse_number(n, optarg, 1, 1024); break;
        case OPT_LAYERS: o->layers = (int)parse_number(n, optarg, 1, 4096); break;
        case OPT_TP_KB: o->tp_kb = parse_number(n, optarg, 1, 1 << 20); break;
        case OPT_KERNELS: o->kernels = (int)parse_number(n, optarg, 1, 1e6); break;
        case OPT_KERNEL_US: o->kernel_us = parse_number(n, optarg, 0.001, 1e6); break;
        case OPT_HOST_SLEEP: o->host_sleep = 1; break;
        case OPT_HOST_US: o->host_us = parse_number(n, optarg, 0, 1e6); break;
        case OPT_LOADER_MS: o->loader_ms = parse_number(n, optarg, 0, 1e5); break;
        case OPT_LOADER_SLOW: o->loader_slow_ms = parse_number(n, optarg, 0, 1e5); break;
        case OPT_PREFETCH: o->prefetch = (int)parse_number(n, optarg, 0, 1); break;
        case OPT_READ_KB: o->read_kb = (int)parse_number(n, optarg, 1, 1 << 20); break;
        case OPT_ITERS: o->kernel_iters = (int)parse_number(n, optarg, 1, 1e6); break;
        case OPT_NO_MARKERS: o->markers = 0; break;
        case OPT_SEED: o->seed = (unsigned)parse_number(n, optarg, 0, 4294967295.0); break;
        case OPT_DATA: o->data_dir = optarg; break;
        case OPT_TOKEN_KB: o->token_kb = parse_number(n, optarg, 1, 1 << 20); break;
        case OPT_HOT_RANK: o->hot_rank = (int)parse_number(n, optarg, 0, 1 << 20); break;
        case OPT_HOT_FACTOR: o->hot_factor = parse_number(n, optarg, 0.01, 1000); break;
        case OPT_RENDEZVOUS: o->rendezvous = optarg; break;
        case OPT_MID_SYNC: o->mid_sync = 1; break;
        case OPT_NO_NCCL: o->no_nccl = 1; break;
        case OPT_STEP_HOST: o->step_host_ms = parse_number(n, optarg, 0, 1e5); break;
        case OPT_CKPT_EVERY: o->ckpt_every = (int)parse_number(n, optarg, 0, 1e6); break;
        case OPT_CKPT_MB: o->ckpt_mb = parse_number(n, optarg, 0.001, 1 << 16); break;
        case OPT_CKPT_RANK: o->ckpt_rank = (int)parse_number(n, optarg, 0, 1 << 20); break;
        case OPT_BATCH_MB: o->batch_mb = parse_number(n, optarg, 0.001, 1 << 14); break;
        case OPT_PINNED: o->pinned = 1; break;
        case OPT_HELP:
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "shapes: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        exit(2);
    }
    if ((int)o->shape < 0) {
        fprintf(stderr, "shapes: --shape is required\n");
        usage(stderr);
        exit(2);
    }
}

/* ---------------------------------------------------------- host truth */

/* launch: per step, the time spent inside the launch calls and the host
 * work between them. */
static void truth_launch(int step, uint64_t calls_ns, uint64_t host_ns)
{
    char line[200];
    int n = snprintf(line, sizeof line,
                     "{\"type\":\"launch\",\"rank\":%d,\"step\":%d,\"calls_ns\":%llu,"
                     "\"host_ns\":%llu}\n",
                     g_rank, step, (unsigned long long)calls_ns,
                     (unsigned long long)host_ns);
    truth_line(line, n);
}

static void truth_work(int step, double factor)
{
    char line[160];
    int n = snprintf(line, sizeof line,
                     "{\"type\":\"work\",\"rank\":%d,\"step\":%d,\"factor\":%.6f}\n", g_rank,
                     step, factor);
    truth_line(line, n);
}

/* ----------------------------------------------------------- kernels */

/* A kernel of MS milliseconds at the sim's default speed. */
static void launch_ms(const struct options *o, struct gpu *g, double ms)
{
    double blocks = ms * THREADS_PER_MS / THREADS_PER_BLOCK + 0.5;
    unsigned grid = blocks < 1 ? 1u : (unsigned)blocks;
    busy_kernel<<<grid, THREADS_PER_BLOCK, 0, g->stream>>>(g->act, ACT_ELEMS, o->kernel_iters, 0.999f);
    CUDA_CHECK(cudaGetLastError());
}

/* ------------------------------------------------------------ loader */

static void data_file_path(char *buf, size_t size, const char *dir, int i)
{
    snprintf(buf, size, "%s/part-%02d.bin", dir, i);
}

static void make_dataset(const struct options *o)
{
    make_dataset_files(o->data_dir, data_file_path, DATA_FILES, DATA_FILE_KB, o->seed);
}

/* Batch INDEX: BYTES read with read() calls, one file after another. */
static void read_batch(const struct options *o, int rank, uint64_t index, unsigned char *buf,
                       size_t bytes)
{
    read_files(o->data_dir, data_file_path, DATA_FILES, (size_t)DATA_FILE_KB * BYTES_PER_KB,
               (index * 3 + (uint64_t)rank) % DATA_FILES, buf, bytes);
}

/* Rank R's loader is late on the steps whose turn is R's. */
static double loader_cost_ms(const struct options *o, const struct rank_env *r, uint64_t index)
{
    return (int)(index % (uint64_t)r->world) == r->rank ? o->loader_slow_ms : o->loader_ms;
}

struct loader {
    pid_t pid;
    int req_fd;  /* trainer -> worker: the index of the batch wanted */
    int data_fd; /* worker -> trainer: header + batch */
};

struct batch_header {
    uint64_t index, bytes;
};

/* The worker prepares a batch when asked: read from files, then the
 * decode/augment cost (slept).  It leaves with _exit when the trainer
 * closes its request pipe. */
static void worker_main(const struct options *o, const struct rank_env *r, int req, int out)
{
    size_t bytes = (size_t)o->read_kb * BYTES_PER_KB;
    unsigned char *buf = (unsigned char *)malloc(bytes);
    if (!buf)
        _exit(1);
    signal(SIGPIPE, SIG_IGN);
    uint64_t index;
    while (read_all(req, &index, sizeof index) == 0) {
        read_batch(o, r->rank, index, buf, bytes);
        sleep_ns((uint64_t)(loader_cost_ms(o, r, index) * NS_PER_MS));
        struct batch_header h = {index, bytes};
        if (write_all(out, &h, sizeof h) != 0 || write_all(out, buf, bytes) != 0)
            _exit(0);
    }
    _exit(0);
}

/* Forked after the communicator is up, as frameworks build their loaders
 * after process-group init; the worker never touches CUDA. */
static void loader_start(struct loader *l, const struct options *o, const struct rank_env *r)
{
    int req[2], data[2];
    if (pipe(req) != 0 || pipe(data) != 0)
        die("pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        close(req[1]);
        close(data[0]);
        worker_main(o, r, req[0], data[1]);
    }
    close(req[0]);
    close(data[1]);
    l->pid = pid;
    l->req_fd = req[1];
    l->data_fd = data[0];
}

static void loader_request(struct loader *l, uint64_t index)
{
    if (write_all(l->req_fd, &index, sizeof index) != 0)
        die("loader worker is gone: %s", strerror(errno));
}

static void loader_take(struct loader *l, uint64_t index, unsigned char *buf, size_t bytes)
{
    struct batch_header h;
    if (read_all(l->data_fd, &h, sizeof h) != 0 || h.index != index || h.bytes != bytes ||
        read_all(l->data_fd, buf, bytes) != 0)
        die("loader worker sent no batch %llu", (unsigned long long)index);
}

static void loader_stop(struct loader *l)
{
    close(l->req_fd);
    close(l->data_fd);
    int status;
    while (waitpid(l->pid, &status, 0) < 0 && errno == EINTR)
        ;
}

/* ------------------------------------------------------------ GPU side */

static double rank_scale(const struct options *o, const struct rank_env *r)
{
    for (int i = 0; i < o->nslow; i++)
        if (r->rank == o->slow_rank[i])
            return o->slow_rank_factor[i] > 0 ? o->slow_rank_factor[i] : o->slow_factor;
    if (o->shape == SHAPE_TPDP && o->slow_group >= 0 && r->rank / o->tp == o->slow_group)
        return o->slow_factor;
    if (o->shape == SHAPE_PIPELINE && o->slow_stage >= 0 && r->rank % (r->world / o->pp_dp) == o->slow_stage)
        return o->slow_factor;
    return 1.0;
}

/* A uniform draw in [0, 1) from (seed, step, rank): splitmix64. */
static double draw(unsigned seed, int step, int rank)
{
    uint64_t z = (uint64_t)seed * 0x9E3779B97F4A7C15ull + (uint64_t)step * 0xBF58476D1CE4E5B9ull +
                 (uint64_t)rank * 0x94D049BB133111EBull + 0x2545F4914F6CDD1Dull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

/* This rank's work factor at STEP: its draw, or with --balance the mean of
 * every rank's draw (each rank can compute all of them). */
static double work_factor(const struct options *o, const struct rank_env *r, int step)
{
    if (o->imbalance <= 0)
        return 1.0;
    if (!o->balance)
        return 1.0 + o->imbalance * (2.0 * draw(o->seed, step, r->rank) - 1.0);
    double sum = 0;
    for (int k = 0; k < r->world; k++)
        sum += 1.0 + o->imbalance * (2.0 * draw(o->seed, step, k) - 1.0);
    return sum / r->world;
}

static size_t round_down(size_t v, size_t m)
{
    return v - v % m;
}

/* copy: the host batches come from malloc (pageable) or cudaMallocHost
 * (pinned); each is touched once so that its pages exist before the first
 * step, as a loader's output buffer would. */
static void copy_setup(struct gpu *g, const struct options *o)
{
    g->batch_bytes = (size_t)(o->batch_mb * BYTES_PER_MB);
    if (g->batch_bytes == 0)
        g->batch_bytes = 1;
    int buffers = o->prefetch ? COPY_BUFFERS : 1;
    for (int b = 0; b < buffers; b++) {
        if (o->pinned)
            CUDA_CHECK(cudaMallocHost((void **)&g->batch_host[b], g->batch_bytes));
        else if (!(g->batch_host[b] = (unsigned char *)malloc(g->batch_bytes)))
            die("out of memory for a %zu-byte batch", g->batch_bytes);
        memset(g->batch_host[b], b + 1, g->batch_bytes);
        CUDA_CHECK(cudaMalloc((void **)&g->batch_dev[b], g->batch_bytes));
        CUDA_CHECK(cudaEventCreateWithFlags(&g->batch_ready[b], cudaEventDisableTiming));
    }
    if (o->prefetch)
        CUDA_CHECK(cudaStreamCreateWithFlags(&g->copy_stream, cudaStreamNonBlocking));
}

static void copy_teardown(struct gpu *g, const struct options *o)
{
    for (int b = 0; b < COPY_BUFFERS; b++) {
        if (!g->batch_dev[b])
            continue;
        if (o->pinned)
            CUDA_CHECK(cudaFreeHost(g->batch_host[b]));
        else
            free(g->batch_host[b]);
        CUDA_CHECK(cudaFree(g->batch_dev[b]));
        CUDA_CHECK(cudaEventDestroy(g->batch_ready[b]));
    }
    if (g->copy_stream)
        CUDA_CHECK(cudaStreamDestroy(g->copy_stream));
}

/* copy, prefetching: batch STEP goes to buffer STEP % 2 on the side stream;
 * the compute of that step waits for its event.  The buffer it overwrites
 * held batch STEP - 2, whose step has ended (each step ends with a sync of
 * the compute stream). */
static void copy_prefetch(struct gpu *g, int step)
{
    int b = step % COPY_BUFFERS;
    CUDA_CHECK(cudaMemcpyAsync(g->batch_dev[b], g->batch_host[b], g->batch_bytes,
                               cudaMemcpyHostToDevice, g->copy_stream));
    CUDA_CHECK(cudaEventRecord(g->batch_ready[b], g->copy_stream));
}

static void gpu_setup(struct gpu *g, const struct options *o, const struct rank_env *r)
{
    int devices = 0;
    CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (devices < 1)
        die("no CUDA device");
    CUDA_CHECK(cudaSetDevice(env_int("LOCAL_RANK", r->rank) % devices));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMalloc((void **)&g->act, ACT_ELEMS * sizeof(float)));
    CUDA_CHECK(cudaMemset(g->act, 0, ACT_ELEMS * sizeof(float)));

    g->grad_elems = round_down((size_t)(o->grad_mb * BYTES_PER_MB / sizeof(float)), 64);
    if (g->grad_elems == 0)
        g->grad_elems = 64;
    CUDA_CHECK(cudaMalloc((void **)&g->grad, g->grad_elems * sizeof(float)));
    CUDA_CHECK(cudaMemset(g->grad, 0, g->grad_elems * sizeof(float)));
    /* bucket b: equal parts, or 2^b parts of 2^K - 1 */
    double parts = o->unequal ? (double)((1ull << o->buckets) - 1) : (double)o->buckets;
    double acc = 0;
    g->bucket_off[0] = 0;
    for (int b = 0; b < o->buckets; b++) {
        acc += o->unequal ? (double)(1ull << b) : 1.0;
        g->bucket_off[b + 1] = b + 1 == o->buckets
                                   ? g->grad_elems
                                   : round_down((size_t)(g->grad_elems * acc / parts), 16);
        if (g->bucket_off[b + 1] <= g->bucket_off[b])
            die("--grad-mb too small for %d buckets", o->buckets);
    }
    CUDA_CHECK(cudaMalloc((void **)&g->norm, NORM_ELEMS * sizeof(float)));
    CUDA_CHECK(cudaMemset(g->norm, 0, NORM_ELEMS * sizeof(float)));

    if (o->shape == SHAPE_PIPELINE || o->shape == SHAPE_1F1B) {
        g->p2p_elems = (size_t)(o->act_kb * BYTES_PER_KB / sizeof(float) / o->micro);
        if (g->p2p_elems == 0)
            g->p2p_elems = 1;
        CUDA_CHECK(cudaMalloc((void **)&g->send_buf, g->p2p_elems * sizeof(float)));
        CUDA_CHECK(cudaMalloc((void **)&g->recv_buf, g->p2p_elems * sizeof(float)));
        CUDA_CHECK(cudaMemset(g->send_buf, 0, g->p2p_elems * sizeof(float)));
    }
    if (o->shape == SHAPE_ALLTOALL) {
        size_t base = (size_t)(o->token_kb * BYTES_PER_KB / sizeof(float));
        double most = o->hot_factor > 1 ? o->hot_factor : 1;
        g->a2a_slot = (size_t)((double)(base ? base : 1) * most + 0.5);
        size_t all = g->a2a_slot * (size_t)r->world;
        CUDA_CHECK(cudaMalloc((void **)&g->a2a_send, all * sizeof(float)));
        CUDA_CHECK(cudaMalloc((void **)&g->a2a_recv, all * sizeof(float)));
        CUDA_CHECK(cudaMemset(g->a2a_send, 0, all * sizeof(float)));
    }
    if (o->shape == SHAPE_TPDP) {
        g->tp_elems = (size_t)(o->tp_kb * BYTES_PER_KB / sizeof(float));
        if (g->tp_elems == 0)
            g->tp_elems = 1;
        CUDA_CHECK(cudaMalloc((void **)&g->tp_buf, g->tp_elems * sizeof(float)));
        CUDA_CHECK(cudaMemset(g->tp_buf, 0, g->tp_elems * sizeof(float)));
    }
    if (o->shape == SHAPE_LOADER) {
        g->input_bytes = (size_t)o->read_kb * BYTES_PER_KB;
        CUDA_CHECK(cudaMallocHost((void **)&g->pinned, g->input_bytes));
        CUDA_CHECK(cudaMalloc((void **)&g->input_dev, g->input_bytes));
    }
    if (o->shape == SHAPE_COPY)
        copy_setup(g, o);

    if (o->no_nccl)
        return; /* a job of one GPU with no communicator */
    ncclUniqueId id = exchange_unique_id(r->rank, r->world, o->rendezvous, "a rendezvous directory: --rendezvous DIR, ");
    NCCL_CHECK(ncclCommInitRank(&g->world, r->world, id, r->rank));
    if (o->shape == SHAPE_TPDP) {
        if (r->world % o->tp != 0)
            die("WORLD_SIZE=%d is not a multiple of --tp %d", r->world, o->tp);
        /* group g = ranks g*tp .. g*tp+tp-1; data parallel across groups
         * joins the ranks with the same place in their group */
        NCCL_CHECK(ncclCommSplit(g->world, r->rank / o->tp, r->rank, &g->tp, NULL));
        NCCL_CHECK(ncclCommSplit(g->world, r->rank % o->tp, r->rank, &g->dp, NULL));
    }
    if (o->shape == SHAPE_PIPELINE && o->pp_dp > 1) {
        if (r->world % o->pp_dp != 0 || r->world / o->pp_dp < 2)
            die("WORLD_SIZE=%d is not --pp-dp %d copies of 2 or more stages", r->world, o->pp_dp);
        /* a stage's copies: the ranks with the same place in their pipeline */
        NCCL_CHECK(ncclCommSplit(g->world, r->rank % (r->world / o->pp_dp), r->rank, &g->dp, NULL));
    }
}

static void gpu_teardown(struct gpu *g, const struct options *o)
{
    if (o->shape == SHAPE_TPDP) {
        NCCL_CHECK(ncclCommDestroy(g->tp));
        NCCL_CHECK(ncclCommDestroy(g->dp));
    }
    if (o->shape == SHAPE_PIPELINE && o->pp_dp > 1)
        NCCL_CHECK(ncclCommDestroy(g->dp));
    if (g->world)
        NCCL_CHECK(ncclCommDestroy(g->world));
    CUDA_CHECK(cudaFree(g->act));
    CUDA_CHECK(cudaFree(g->grad));
    CUDA_CHECK(cudaFree(g->norm));
    if (g->send_buf) {
        CUDA_CHECK(cudaFree(g->send_buf));
        CUDA_CHECK(cudaFree(g->recv_buf));
    }
    if (g->tp_buf)
        CUDA_CHECK(cudaFree(g->tp_buf));
    if (g->a2a_send) {
        CUDA_CHECK(cudaFree(g->a2a_send));
        CUDA_CHECK(cudaFree(g->a2a_recv));
    }
    if (g->pinned) {
        CUDA_CHECK(cudaFreeHost(g->pinned));
        CUDA_CHECK(cudaFree(g->input_dev));
    }
    if (o->shape == SHAPE_COPY)
        copy_teardown(g, o);
    CUDA_CHECK(cudaStreamDestroy(g->stream));
}

static void allreduce(struct gpu *g, float *buf, size_t elems, ncclComm_t comm)
{
    if (!comm)
        return; /* --no-nccl: one GPU, nothing to reduce with */
    NCCL_CHECK(ncclAllReduce(buf, buf, elems, ncclFloat, ncclSum, comm, g->stream));
}

/* dp (and loader): forward, backward, then every bucket's all-reduce back
 * to back on the same stream, then the optimizer.  The host's own work of
 * the step (--step-host-ms) comes after the forward is launched, so the GPU
 * hides it - unless the loss is read back first (--mid-sync): then the
 * host waits for the forward, and the GPU for the host. */
static void step_dp(const struct options *o, struct gpu *g, double scale, int step)
{
    double fwd = o->work_ms * scale / 3.0, bwd = 2.0 * o->work_ms * scale / 3.0;
    for (int k = 0; k < FWD_KERNELS; k++)
        launch_ms(o, g, fwd / FWD_KERNELS);
    if (o->mid_sync) {
        float loss;
        uint64_t t0 = now_ns();
        /* as .item() does it: a copy on the compute stream, then its sync */
        CUDA_CHECK(cudaMemcpyAsync(&loss, g->norm, sizeof loss, cudaMemcpyDeviceToHost, g->stream));
        CUDA_CHECK(cudaStreamSynchronize(g->stream));
        truth_interval("mid_sync", step, t0, now_ns());
    }
    if (o->step_host_ms > 0) {
        uint64_t t0 = now_ns();
        sleep_ns((uint64_t)(o->step_host_ms * NS_PER_MS)); /* slept: the sim shares the CPUs */
        truth_interval("step_host", step, t0, now_ns());
    }
    for (int b = 0; b < o->buckets; b++) {
        double share = (double)(g->bucket_off[b + 1] - g->bucket_off[b]) / g->grad_elems;
        launch_ms(o, g, bwd * share);
    }
    for (int b = 0; b < o->buckets; b++)
        allreduce(g, g->grad + g->bucket_off[b], g->bucket_off[b + 1] - g->bucket_off[b],
                  g->world);
    launch_ms(o, g, OPT_MS * scale);
}

/* pipeline, GPipe: all forwards (receive activations from the previous
 * stage, compute, send to the next), then all backwards in reverse order
 * (gradients the other way), then the gradient norm over every stage. */
/* 1F1B's p2p: activations from the previous stage and to the next,
 * gradients from the next and to the previous; none past either end.  A
 * send and a recv issued together form one NCCL group, as a 1F1B
 * schedule must (each blocking alone, neighbours would wait on each
 * other). */
enum {
    RECV_FWD = 1,
    SEND_FWD = 2,
    RECV_BWD = 4,
    SEND_BWD = 8
};

/* This rank's stage and the last stage of its pipeline copy. */
static int pipe_stage(const struct options *o, const struct rank_env *r, int *last)
{
    int stages = r->world / o->pp_dp;
    *last = stages - 1;
    return r->rank % stages;
}

/* The end of a pipeline step: the gradient norm over every rank, or, with
 * copies of the pipeline, each stage's gradients over its copies. */
static void pipe_reduce(const struct options *o, struct gpu *g)
{
    if (o->pp_dp > 1)
        allreduce(g, g->grad, g->grad_elems, g->dp);
    else
        allreduce(g, g->norm, NORM_ELEMS, g->world);
}

static void pipe_p2p(const struct options *o, const struct rank_env *r, struct gpu *g, int what)
{
    int last, s = pipe_stage(o, r, &last), me = r->rank;
    int group = (what & (what - 1)) != 0; /* a send with a recv */
    if (group)
        NCCL_CHECK(ncclGroupStart());
    if ((what & RECV_FWD) && s > 0)
        NCCL_CHECK(ncclRecv(g->recv_buf, g->p2p_elems, ncclFloat, me - 1, g->world, g->stream));
    if ((what & SEND_FWD) && s < last)
        NCCL_CHECK(ncclSend(g->send_buf, g->p2p_elems, ncclFloat, me + 1, g->world, g->stream));
    if ((what & RECV_BWD) && s < last)
        NCCL_CHECK(ncclRecv(g->recv_buf, g->p2p_elems, ncclFloat, me + 1, g->world, g->stream));
    if ((what & SEND_BWD) && s > 0)
        NCCL_CHECK(ncclSend(g->send_buf, g->p2p_elems, ncclFloat, me - 1, g->world, g->stream));
    if (group)
        NCCL_CHECK(ncclGroupEnd());
}

/* pipeline, 1F1B: stage s runs min(S-1-s, M) warm-up forwards, then
 * alternates one forward and one backward while forwards remain, then
 * drains the remaining backwards; then the gradient norm over every
 * stage. */
static void step_pipeline_1f1b(const struct options *o, const struct rank_env *r, struct gpu *g,
                               double scale)
{
    double fwd = o->work_ms * scale / 3.0 / o->micro;
    double bwd = 2.0 * o->work_ms * scale / 3.0 / o->micro;
    int last, stage = pipe_stage(o, r, &last), warm = last - stage;
    if (warm > o->micro)
        warm = o->micro;
    int steady = o->micro - warm;
    for (int i = 0; i < warm; i++) {
        pipe_p2p(o, r, g, RECV_FWD);
        launch_ms(o, g, fwd);
        pipe_p2p(o, r, g, SEND_FWD);
    }
    if (steady > 0)
        pipe_p2p(o, r, g, RECV_FWD);
    for (int i = 0; i < steady; i++) {
        launch_ms(o, g, fwd);
        pipe_p2p(o, r, g, SEND_FWD | RECV_BWD);
        launch_ms(o, g, bwd);
        pipe_p2p(o, r, g, i == steady - 1 ? SEND_BWD : SEND_BWD | RECV_FWD);
    }
    for (int i = 0; i < warm; i++) {
        pipe_p2p(o, r, g, RECV_BWD);
        launch_ms(o, g, bwd);
        pipe_p2p(o, r, g, SEND_BWD);
    }
    pipe_reduce(o, g);
    launch_ms(o, g, OPT_MS * scale);
}

/* pipeline, interleaved (V chunks per rank): virtual stage c*S + s is
 * rank s's chunk c.  Micro-batches go in groups of S: a group's forwards
 * through chunk 0, then chunk 1 (the last rank feeding rank 0), ..., then
 * the next group; then the backwards the other way (S-sized groups keep
 * the ring from filling up: each rank holds at most one message in
 * flight).  After each unit its output goes out together with the next
 * unit's input coming in (one NCCL group), as interleaved schedules must,
 * the ranks forming a ring. */
static int loop_chunk(int u, int S, int V, int backward)
{
    int c = (u % (S * V)) / S;
    return backward ? V - 1 - c : c;
}

static void pipe_loop(const struct options *o, const struct rank_env *r, struct gpu *g, double ms,
                      int backward)
{
    int last, s = pipe_stage(o, r, &last), S = last + 1, V = o->interleave, U = V * o->micro;
    int next = r->rank + (s == last ? -last : 1), prev = r->rank + (s == 0 ? last : -1);
    if (backward) {
        int t = next;
        next = prev;
        prev = t;
    }
    /* virtual stage of unit u; input wanted unless first, output unless last */
    for (int u = -1; u < U; u++) {
        if (u >= 0)
            launch_ms(o, g, ms);
        int vs = u < 0 ? 0 : loop_chunk(u, S, V, backward) * S + s;
        int vsn = loop_chunk(u + 1, S, V, backward) * S + s;
        int send = u >= 0 && (backward ? vs > 0 : vs < V * S - 1);
        int recv = u + 1 < U && (backward ? vsn < V * S - 1 : vsn > 0);
        if (send && recv)
            NCCL_CHECK(ncclGroupStart());
        if (send)
            NCCL_CHECK(ncclSend(g->send_buf, g->p2p_elems, ncclFloat, next, g->world, g->stream));
        if (recv)
            NCCL_CHECK(ncclRecv(g->recv_buf, g->p2p_elems, ncclFloat, prev, g->world, g->stream));
        if (send && recv)
            NCCL_CHECK(ncclGroupEnd());
    }
}

static void step_pipeline(const struct options *o, const struct rank_env *r, struct gpu *g,
                          double scale)
{
    if (o->interleave > 1) {
        double units = (double)o->micro * o->interleave;
        pipe_loop(o, r, g, o->work_ms * scale / 3.0 / units, 0);
        pipe_loop(o, r, g, 2.0 * o->work_ms * scale / 3.0 / units, 1);
        pipe_reduce(o, g);
        launch_ms(o, g, OPT_MS * scale);
        return;
    }
    if (o->one_f_one_b) {
        step_pipeline_1f1b(o, r, g, scale);
        return;
    }
    double fwd = o->work_ms * scale / 3.0 / o->micro;
    double bwd = 2.0 * o->work_ms * scale / 3.0 / o->micro;
    for (int m = 0; m < o->micro; m++) {
        pipe_p2p(o, r, g, RECV_FWD);
        launch_ms(o, g, fwd);
        pipe_p2p(o, r, g, SEND_FWD);
    }
    for (int m = o->micro - 1; m >= 0; m--) {
        pipe_p2p(o, r, g, RECV_BWD);
        launch_ms(o, g, bwd);
        pipe_p2p(o, r, g, SEND_BWD);
    }
    pipe_reduce(o, g);
    launch_ms(o, g, OPT_MS * scale);
}

/* 1f1b: the schedule of one-forward-one-backward pipelines.  Stage s
 * runs min(S-s-1, M) warm-up forwards; in the steady state each forward
 * hands its activations on in the same group as it takes the gradients
 * of an earlier micro-batch back, and each backward hands its gradients
 * back in the same group as it takes the next micro-batch's activations;
 * the cool-down runs the remaining backwards. */
static void p2p_group(struct gpu *g, int send_to, int recv_from)
{
    if (send_to < 0 && recv_from < 0)
        return;
    NCCL_CHECK(ncclGroupStart());
    if (send_to >= 0)
        NCCL_CHECK(ncclSend(g->send_buf, g->p2p_elems, ncclFloat, send_to, g->world, g->stream));
    if (recv_from >= 0)
        NCCL_CHECK(ncclRecv(g->recv_buf, g->p2p_elems, ncclFloat, recv_from, g->world, g->stream));
    NCCL_CHECK(ncclGroupEnd());
}

static void step_1f1b(const struct options *o, const struct rank_env *r, struct gpu *g, double scale)
{
    int s = r->rank, last = r->world - 1;
    int prev = s > 0 ? s - 1 : -1, next = s < last ? s + 1 : -1;
    double fwd = o->work_ms * scale / 3.0 / o->micro;
    double bwd = 2.0 * o->work_ms * scale / 3.0 / o->micro;
    int warm = last - s < o->micro ? last - s : o->micro, steady = o->micro - warm;
    for (int m = 0; m < warm; m++) {
        p2p_group(g, -1, prev);
        launch_ms(o, g, fwd);
        p2p_group(g, next, -1);
    }
    if (steady > 0)
        p2p_group(g, -1, prev);
    for (int m = 0; m < steady; m++) {
        launch_ms(o, g, fwd);
        p2p_group(g, next, next); /* activations on, gradients back */
        launch_ms(o, g, bwd);
        p2p_group(g, prev, m + 1 < steady ? prev : -1);
    }
    for (int m = 0; m < warm; m++) {
        p2p_group(g, -1, next);
        launch_ms(o, g, bwd);
        p2p_group(g, prev, -1);
    }
    allreduce(g, g->norm, NORM_ELEMS, g->world);
    launch_ms(o, g, OPT_MS * scale);
}

/* alltoall: tokens from rank `from` to rank `to` in one layer: the hot
 * rank is sent --hot-factor times the others' share. */
static size_t tokens_to(const struct options *o, const struct gpu *g, int to)
{
    size_t base = (size_t)(o->token_kb * BYTES_PER_KB / sizeof(float));
    if (!base)
        base = 1;
    size_t n = to == o->hot_rank ? (size_t)((double)base * o->hot_factor + 0.5) : base;
    return n < g->a2a_slot ? (n ? n : 1) : g->a2a_slot;
}

/* One all-to-all as MoE layers write it: a send to and a receive from
 * every other rank in one group.  Dispatch sends each rank its tokens;
 * combine returns to each rank the results for the tokens it sent. */
static void all_to_all(const struct options *o, const struct rank_env *r, struct gpu *g, int combine)
{
    NCCL_CHECK(ncclGroupStart());
    for (int p = 0; p < r->world; p++) {
        if (p == r->rank)
            continue;
        size_t out = combine ? tokens_to(o, g, r->rank) : tokens_to(o, g, p);
        size_t in = combine ? tokens_to(o, g, p) : tokens_to(o, g, r->rank);
        NCCL_CHECK(ncclSend(g->a2a_send + (size_t)p * g->a2a_slot, out, ncclFloat, p, g->world,
                            g->stream));
        NCCL_CHECK(ncclRecv(g->a2a_recv + (size_t)p * g->a2a_slot, in, ncclFloat, p, g->world,
                            g->stream));
    }
    NCCL_CHECK(ncclGroupEnd());
}

/* alltoall: each layer's dense part (half the layer's work), the dispatch,
 * the experts on the tokens received (the other half, times --hot-factor
 * on the hot rank), the combine; then the gradient norm over all ranks. */
static void step_alltoall(const struct options *o, const struct rank_env *r, struct gpu *g,
                          double scale)
{
    double dense = o->work_ms * scale / 2.0 / o->layers;
    double experts = dense * (r->rank == o->hot_rank ? o->hot_factor : 1.0);
    for (int l = 0; l < o->layers; l++) {
        launch_ms(o, g, dense);
        all_to_all(o, r, g, 0);
        launch_ms(o, g, experts);
        all_to_all(o, r, g, 1);
    }
    allreduce(g, g->norm, NORM_ELEMS, g->world);
    launch_ms(o, g, OPT_MS * scale);
}

/* tpdp: every layer's kernel followed by its all-reduce inside the
 * tensor-parallel group, forward then backward, then the gradients across
 * groups. */
static void step_tpdp(const struct options *o, struct gpu *g, double scale)
{
    double fwd = o->work_ms * scale / 3.0 / o->layers;
    double bwd = 2.0 * o->work_ms * scale / 3.0 / o->layers;
    for (int l = 0; l < o->layers; l++) {
        launch_ms(o, g, fwd);
        allreduce(g, g->tp_buf, g->tp_elems, g->tp);
    }
    for (int l = 0; l < o->layers; l++) {
        launch_ms(o, g, bwd);
        allreduce(g, g->tp_buf, g->tp_elems, g->tp);
    }
    allreduce(g, g->grad, g->grad_elems, g->dp);
    launch_ms(o, g, OPT_MS * scale);
}

/* launch: host work before every tiny kernel, then a small all-reduce.
 * Logs how long the launch calls themselves took and how long the host
 * worked between them. */
static void step_launch(const struct options *o, struct gpu *g, double scale, int step)
{
    uint64_t host = (uint64_t)(o->host_us * NS_PER_US), calls = 0, worked = 0;
    for (int k = 0; k < o->kernels; k++) {
        uint64_t t0 = now_ns();
        if (host && o->host_sleep)
            sleep_ns(host);
        else if (host)
            spin_ns(host);
        uint64_t t1 = now_ns();
        launch_ms(o, g, o->kernel_us * scale / 1000.0);
        uint64_t t2 = now_ns();
        worked += t1 - t0;
        calls += t2 - t1;
    }
    allreduce(g, g->grad, g->grad_elems, g->world);
    truth_launch(step, calls, worked);
}

/* copy: the step's batch to the GPU, then the data-parallel step on it.
 * In line, the copy is issued on the compute stream (from pageable memory
 * the call returns only when the copy is done, as CUDA's does); with
 * prefetch the step waits for the batch copied during the last step and
 * starts the next one's copy before computing. */
static void step_copy(const struct options *o, struct gpu *g, double scale, int step)
{
    if (!o->prefetch) {
        CUDA_CHECK(cudaMemcpyAsync(g->batch_dev[0], g->batch_host[0], g->batch_bytes,
                                   cudaMemcpyHostToDevice, g->stream));
    } else {
        CUDA_CHECK(cudaStreamWaitEvent(g->stream, g->batch_ready[step % COPY_BUFFERS], 0));
        if (step + 1 < o->steps)
            copy_prefetch(g, step + 1);
    }
    step_dp(o, g, scale, step);
}

/* --------------------------------------------------------------- main */

/* A synchronous checkpoint, as torch.save + os.fsync from the training
 * loop write it: --ckpt-mb MiB in 1 MiB writes, then the flush. */
static void checkpoint(const struct options *o, const struct rank_env *r, int step)
{
    static unsigned char chunk[BYTES_PER_MB];
    char path[4096];
    if (mkdir(o->data_dir, 0755) != 0 && errno != EEXIST)
        die("cannot create %s: %s", o->data_dir, strerror(errno));
    snprintf(path, sizeof path, "%s/ckpt-%d.bin", o->data_dir, r->rank);
    uint64_t t0 = now_ns();
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0)
        die("cannot create %s: %s", path, strerror(errno));
    memset(chunk, step & 0xff, sizeof chunk);
    size_t left = (size_t)(o->ckpt_mb * BYTES_PER_MB);
    while (left) {
        size_t n = left < sizeof chunk ? left : sizeof chunk;
        if (write_all(fd, chunk, n) != 0)
            die("cannot write %s: %s", path, strerror(errno));
        left -= n;
    }
    if (fsync(fd) != 0 || close(fd) != 0)
        die("cannot flush %s: %s", path, strerror(errno));
    truth_interval("checkpoint", step, t0, now_ns());
}

int main(int argc, char **argv)
{
    example_name = "shapes";
    example_usage_status = 2;
    struct options o;
    struct rank_env r;
    r.rank = env_int("RANK", 0);
    r.world = env_int("WORLD_SIZE", 1);
    g_rank = r.rank;
    parse_options(argc, argv, &o);
    if (r.world < 1 || r.rank >= r.world)
        die("RANK=%d is not below WORLD_SIZE=%d", r.rank, r.world);
    if (o.no_nccl && (r.world != 1 || (o.shape != SHAPE_DP && o.shape != SHAPE_LAUNCH && o.shape != SHAPE_COPY)))
        die("--no-nccl is for one GPU (WORLD_SIZE=1) and --shape dp, launch or copy");
    if ((o.shape == SHAPE_PIPELINE || o.shape == SHAPE_1F1B) && r.world < 2)
        die("--shape %s needs at least 2 ranks (one stage each)", shape_names[o.shape]);
    if (o.shape == SHAPE_ALLTOALL && r.world < 2)
        die("--shape alltoall needs at least 2 ranks");
    if (o.shape == SHAPE_PIPELINE && o.interleave > 1 && o.micro % (r.world / o.pp_dp) != 0)
        die("--interleave needs --micro-batches a multiple of the stages (%d)", r.world / o.pp_dp);
    truth_open();
    if (o.shape == SHAPE_LOADER)
        make_dataset(&o);

    struct gpu g;
    memset(&g, 0, sizeof g);
    gpu_setup(&g, &o, &r);
    struct loader l;
    memset(&l, 0, sizeof l);
    if (o.shape == SHAPE_LOADER) {
        loader_start(&l, &o, &r);
        if (o.prefetch)
            loader_request(&l, 0);
    }
    if (o.shape == SHAPE_COPY && o.prefetch)
        copy_prefetch(&g, 0);
    double scale = rank_scale(&o, &r);
    double *step_ms = (double *)calloc((size_t)o.steps, sizeof(double));
    if (!step_ms)
        die("out of memory");

    for (int step = 0; step < o.steps; step++) {
        char name[32];
        snprintf(name, sizeof name, "step %d", step);
        uint64_t t0 = now_ns();
        if (o.markers)
            nvtxRangePushA(name);
        double factor = work_factor(&o, &r, step);
        if (o.imbalance > 0)
            truth_work(step, factor);
        switch (o.shape) {
        case SHAPE_DP: step_dp(&o, &g, scale * factor, step); break;
        case SHAPE_PIPELINE: step_pipeline(&o, &r, &g, scale); break;
        case SHAPE_TPDP: step_tpdp(&o, &g, scale); break;
        case SHAPE_ALLTOALL: step_alltoall(&o, &r, &g, scale); break;
        case SHAPE_1F1B: step_1f1b(&o, &r, &g, scale); break;
        case SHAPE_LAUNCH: step_launch(&o, &g, scale, step); break;
        case SHAPE_COPY: step_copy(&o, &g, scale, step); break;
        case SHAPE_LOADER: {
            if (!o.prefetch)
                loader_request(&l, (uint64_t)step);
            loader_take(&l, (uint64_t)step, g.pinned, g.input_bytes);
            uint64_t t_in = now_ns();
            truth_interval("input_wait", step, t0, t_in);
            if (o.prefetch && step + 1 < o.steps)
                loader_request(&l, (uint64_t)step + 1);
            CUDA_CHECK(cudaMemcpyAsync(g.input_dev, g.pinned, g.input_bytes,
                                       cudaMemcpyHostToDevice, g.stream));
            step_dp(&o, &g, scale, step);
            break;
        }
        }
        CUDA_CHECK(cudaStreamSynchronize(g.stream));
        if (o.ckpt_every && (step + 1) % o.ckpt_every == 0 && r.rank == o.ckpt_rank)
            checkpoint(&o, &r, step);
        if (o.markers)
            nvtxRangePop();
        uint64_t t1 = now_ns();
        truth_interval("step", step, t0, t1);
        step_ms[step] = (double)(t1 - t0) / NS_PER_MS;
    }

    /* A barrier before teardown, as jobs end: no rank starts tearing down
     * (and competing for the CPU) while another is still in its last step. */
    allreduce(&g, g.norm, 1, g.world);
    CUDA_CHECK(cudaStreamSynchronize(g.stream));
    if (o.shape == SHAPE_LOADER)
        loader_stop(&l);
    gpu_teardown(&g, &o);
    if (r.rank == 0) {
        printf("shapes: --shape %s, rank 0 of %d\n", shape_names[o.shape], r.world);
        double sum = 0;
        int kept = 0;
        for (int i = 0; i < o.steps; i++) {
            printf("step %d: %.2f ms\n", i, step_ms[i]);
            if (i >= o.skip) {
                sum += step_ms[i];
                kept++;
            }
        }
        qsort(step_ms, (size_t)o.steps, sizeof(double), compare_double);
        if (kept)
            printf("mean step after %d: %.2f ms, ", o.skip, sum / kept);
        printf("median step %.2f ms\n", step_ms[o.steps / 2]);
    }
    free(step_ms);
    if (truth_fd >= 0)
        close(truth_fd);
    return 0;
}
