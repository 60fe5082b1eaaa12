/*
 * gen_trace.c - writes a directory of per-rank traces for a described
 * training scenario, and the exact breakdown that the analyzer should find:
 * a ground truth by construction.
 *
 * The timeline is laid out segment by segment on one global clock, so
 * every category's time is known without measuring anything.  Each step of
 * each rank runs, in order:
 *
 *   input wait (poll on a pipe)      -> idle_input
 *   host sync (cudaStreamSynchronize) -> idle_host
 *   H2D copy                          -> memcpy
 *   then for each of K collectives:
 *     compute chunk (kernels back to back, launches under them) -> compute
 *     allreduce on the global communicator: a rank's NCCL kernel starts
 *     when its chunk ends and ends at (last arrival + transfer), so its
 *     wait is (last arrival - its arrival) -> collective_wait/_transfer
 *     optionally a per-host allreduce (--intra-coll), nobody waits
 *   tail gap                          -> idle_other
 *
 * All ranks leave each collective together, so every rank's step has the
 * same length.  Hosts get different monotonic bases and realtime pairs that
 * are off by --clock-error-us per host, so the analyzer must refine clocks
 * from collective ends.  Optional: NVTX step markers, a straggler (extra
 * compute or input on one rank), a missing rank, a truncated file, one
 * DataLoader-like helper process per rank (--helper: no rank in its
 * header) or N of them that inherit the rank in their header as forked
 * workers do (--helpers N), many kernels per step (bench), no collectives
 * at all (--no-nccl: a single-GPU job whose steps show only in its
 * kernel-name sequence; every kernel position of a step has its own name),
 * GPU records written by a separate thread S steps late, grouped by
 * stream as a CUPTI buffer delivers them (--gpu-thread-lag S), gradient
 * buckets all of one size (--equal-buckets: every collective of a step is
 * the same), headers that name no rank (--no-rank: a job started
 * without a launcher; with --no-nccl nothing else names one either),
 * kernels that differ only in their thread count (--one-kernel-name with
 * --grid-per-layer: each position of a step has its own grid), and a
 * batch that grows over the run (--ramp F: step k's compute times
 * 1 + F k / (steps - 1)), and evaluation passes between training
 * steps (--eval-every N --eval-ms X: after every N-th step, X ms of
 * forward kernels and a metric all-reduce of 8 bytes; in no step of the
 * truth, counted as "evals"), a small metric all-reduce after the
 * first compute chunk of every step (--step-metric: the loss), and a rank
 * whose recording stops halfway
 * through the run while its file stays whole (--short-rank R).
 * A worker (--helper, --helpers) reads a file every 5 ms, or every
 * --helper-read-us X (an input-heavy trace: many read events per step).
 * The H2D copy moves --copy-bytes from pageable host memory, or pinned
 * with --copy-pinned (the memory kinds CUPTI gives).  --bad-time R writes
 * one event of rank R (its third step's first marker) at 9e18 ns, as
 * damage would: a time far outside its trace's own span.  --no-gpu writes the
 * same job as a CPU-only one would be recorded: markers, input waits and
 * the helpers, but no CUDA call, NCCL call or GPU record (a gloo job).
 *
 * The truth (JSON, --truth FILE) covers steps [skip, steps): breakdown as
 * fractions of step time, per-collective transfer and mean wait, step time,
 * and the straggler.
 */
#include <getopt.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sprof.h"

#define MS 1000000.0
#define US 1000.0
#define GLOBAL_START (5.0 * 1e9)
#define REALTIME_EPOCH 1700000000000000000LL
#define HOST_MONO_STEP 1000000000000LL /* each host's monotonic clock starts elsewhere */
#define GLOBAL_COMM 0xC0FFEEull
#define INTRA_COMM_BASE 0x1000ull
#define PAIR_COMM_BASE 0x2000ull /* --pair-colls: neighbouring hosts h, h+1 */
#define SLOW_HOST_FACTOR 4.0     /* --slow-host: its pairs' transfers take this much longer */
#define COMPUTE_STREAM 7
#define COPY_STREAM 8
#define NCCL_STREAM 9
#define LAUNCH_NS 2000
#define GRID_STEP 4096 /* threads of a kernel, per position with --grid-per-layer */
#define NCCL_CALL_NS 15000
#define MAX_RANKS 16384
#define MAX_KERNEL_NAMES 8192
#define HELPER_CPU_CORES 0.5 /* a worker's CPU use, in cores */
#define HELPER_CPU_EVERY (100 * MS)
#define HOST_BUSY_PERMILLE 950
#define HOST_CORES 8
#define LAG_SLOT_SIZE 1024 /* small chunks, so host frames reach the file in step order */
#define OPT_NO_GPU 1000    /* long-only options: codes past every letter */
#define OPT_HELPER_READ 1001
#define OPT_BAD_TIME 1002
#define OPT_RUN_ID 1003
#define OPT_FAR_SEQ 1004
#define BAD_TIME_NS 9000000000000000000ull
#define BAD_TIME_STEP 2
struct scenario {
    const char *out, *truth;
    int ranks, hosts, steps, colls, kernels, markers, intra, skip, helper, helpers, no_nccl, gpu_lag;
    int pair_colls, slow_host; /* --pair-colls, --slow-host H (-1: none) */
    int equal_buckets, no_rank, one_name, pause_step, grid_per_layer, eval_every, step_metric;
    double ramp, eval_ms;
    double compute, input, sync, memcpy, tail, transfer, inter_transfer, jitter, clock_err_us;
    uint64_t bytes;
    int slow_rank, missing_rank, truncate_rank, short_rank;
    double slow_compute, slow_input;
};

struct rank_out {
    struct sp_writer *w;
    int64_t mono_base;
    uint32_t name_step, *name_kernel;
    uint64_t seq_global, seq_intra, seq_pair[2];
    double cat[8]; /* truth accumulated over steps in view */
};

static struct rank_out *R;
/* The writer keeps one open chunk per thread and writer, so the timeline is
 * replayed once per rank, emitting only that rank's events (emit_rank), and
 * once before that without emitting to add up the truth (collect_truth).
 * The first pass lays out every rank and records on a tape each time that
 * depends on more than one rank (a collective's last arrival, a step's
 * end); a rank's own pass computes only its own times and reads the rest
 * back from the tape, so generating N ranks costs N rank timelines, not N
 * passes over all ranks. */
static int emit_rank = -1, collect_truth, no_gpu;
static struct {
    double *v;
    size_t n, cap, at;
} tape;

/* The first pass: v is recorded and returned; a rank's pass: the value
 * the first pass recorded at the same point is returned. */
static double tape_sync(double v)
{
    if (!collect_truth)
        return tape.at < tape.n ? tape.v[tape.at++] : v;
    if (tape.n == tape.cap) {
        tape.cap = tape.cap ? 2 * tape.cap : 4096;
        tape.v = realloc(tape.v, tape.cap * sizeof *tape.v);
        if (!tape.v)
            exit(1);
    }
    return tape.v[tape.n++] = v;
}

/* The ranks a pass lays out: all in the first, the emitted one after. */
static int pass_lo(int n)
{
    (void)n;
    return collect_truth ? 0 : emit_rank;
}

static int pass_hi(int n)
{
    return collect_truth ? n : emit_rank + 1;
}

/* --gpu-thread-lag: GPU records wait here, tagged with their step, until a
 * separate "CUPTI" thread writes them, S steps later, grouped by stream. */
struct pending {
    struct sp_event ev;
    int step;
};
static struct {
    struct pending *v;
    size_t n, cap;
} lagq;
static int cur_step;
static struct {
    pthread_t th;
    sem_t go, done;
    struct sp_writer *w;
    struct pending *batch;
    size_t n;
    int quit;
} gput;

static void *gpu_thread(void *arg)
{
    (void)arg;
    for (;;) {
        sem_wait(&gput.go);
        if (gput.quit)
            return NULL;
        for (size_t i = 0; i < gput.n; i++)
            sp_writer_append(gput.w, &gput.batch[i].ev);
        sp_writer_thread_exit(gput.w); /* the batch becomes a frame now */
        sem_post(&gput.done);
    }
}

static int cmp_stream_time(const void *a, const void *b)
{
    const struct pending *x = a, *y = b;
    if (x->ev.gpu.stream != y->ev.gpu.stream)
        return x->ev.gpu.stream < y->ev.gpu.stream ? -1 : 1;
    return (x->ev.t > y->ev.t) - (x->ev.t < y->ev.t);
}

/* Hand every queued record of a step <= upto to the GPU thread. */
static void deliver_gpu(int upto)
{
    size_t n = 0;
    while (n < lagq.n && lagq.v[n].step <= upto)
        n++;
    if (!n)
        return;
    qsort(lagq.v, n, sizeof *lagq.v, cmp_stream_time);
    gput.batch = lagq.v;
    gput.n = n;
    sem_post(&gput.go);
    sem_wait(&gput.done);
    memmove(lagq.v, lagq.v + n, (lagq.n - n) * sizeof *lagq.v);
    lagq.n -= n;
}

static void queue_gpu(const struct sp_event *ev)
{
    if (lagq.n == lagq.cap) {
        lagq.cap = lagq.cap ? 2 * lagq.cap : 1024;
        lagq.v = realloc(lagq.v, lagq.cap * sizeof *lagq.v);
        if (!lagq.v)
            exit(1);
    }
    lagq.v[lagq.n++] = (struct pending){*ev, cur_step};
}

/* Deterministic per (step, rank), so that every replay sees the same run. */
static double jitter(double j, int k, int r)
{
    uint64_t x = (uint64_t)k * 0x9E3779B97F4A7C15ull ^ ((uint64_t)r + 1) * 0xC2B2AE3D27D4EB4Full;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return 1 + j * (((double)(x >> 11) / (double)(1ull << 53)) * 2 - 1);
}

static int host_of(const struct scenario *s, int r)
{
    return r / ((s->ranks + s->hosts - 1) / s->hosts);
}

static int host_first(const struct scenario *s, int h)
{
    int per = (s->ranks + s->hosts - 1) / s->hosts, f = h * per;
    return f < s->ranks ? f : s->ranks;
}

static int per_host(const struct scenario *s, int h)
{
    return host_first(s, h + 1) - host_first(s, h);
}

static int short_rank = -1, short_after = -1; /* --short-rank: its recording stops early */
static double helper_read_every = 5 * MS;     /* --helper-read-us: a worker's reads, one per period */
static int bad_time_rank = -1, bad_time_done; /* --bad-time: one event far out of its trace's span */
static int pid_base = 1000;                   /* --pid-base: rank r's process is pid_base + r */
static const char *run_id;                    /* --run-id: the run's identity in every header (none by default) */

static void emit(int r, struct sp_event *ev, double global_t)
{
    if (r != emit_rank || !R[r].w)
        return;
    if (no_gpu && (ev->type == SP_EV_GPU || ev->type == SP_EV_CUDA || ev->type == SP_EV_NCCL))
        return;
    if (r == short_rank && cur_step >= short_after)
        return;
    ev->t = (uint64_t)((int64_t)global_t + R[r].mono_base);
    if (r == bad_time_rank && ev->type == SP_EV_MARKER && cur_step == BAD_TIME_STEP && !bad_time_done) {
        ev->t = BAD_TIME_NS;
        bad_time_done = 1;
    }
    if (gput.w && ev->type == SP_EV_GPU)
        queue_gpu(ev);
    else
        sp_writer_append(R[r].w, ev);
}

static void emit_marker(int r, int kind, double t)
{
    struct sp_event ev = {.type = SP_EV_MARKER};
    ev.marker.kind = (uint64_t)kind;
    ev.marker.name = R[r].name_step;
    ev.marker.depth = kind == SP_MARK_PUSH ? 1 : 1;
    emit(r, &ev, t);
}

static void emit_wait(int r, double t, double dur)
{
    struct sp_event ev = {.type = SP_EV_WAIT};
    ev.wait.dur = (uint64_t)dur;
    ev.wait.op = SP_WAIT_POLL;
    ev.wait.nfds = 1;
    ev.wait.ret = 1;
    ev.wait.timeout_ms = -1;
    ev.wait.fd_kind = SP_FD_PIPE;
    emit(r, &ev, t);
}

static void emit_cuda(int r, int api, double t, double dur)
{
    struct sp_event ev = {.type = SP_EV_CUDA};
    ev.cuda.dur = (uint64_t)dur;
    ev.cuda.api = (uint64_t)api;
    ev.cuda.stream = COMPUTE_STREAM;
    emit(r, &ev, t);
}

static uint64_t copy_bytes;
static int copy_pinned;

static void emit_gpu(int r, int kind, double t, double dur, uint64_t stream)
{
    struct sp_event ev = {.type = SP_EV_GPU};
    ev.gpu.dur = (uint64_t)dur;
    ev.gpu.kind = (uint64_t)kind;
    ev.gpu.stream = stream;
    ev.gpu.name = 0;
    ev.gpu.copy_kind = kind == SP_GPU_MEMCPY ? SP_COPY_H2D : 0;
    if (kind == SP_GPU_MEMCPY) {
        ev.gpu.bytes = copy_bytes;
        ev.gpu.src_mem = copy_pinned ? SP_MEM_PINNED : SP_MEM_PAGEABLE;
        ev.gpu.dst_mem = SP_MEM_DEVICE;
    }
    emit(r, &ev, t);
}

/* --far-seq R: rank R numbers its collectives from FAR_SEQ_BASE on, as a
 * recorder whose counter was damaged might (the others from 1) */
#define FAR_SEQ_BASE (UINT64_MAX - 1000)
static int far_seq_rank = -1;

static void emit_nccl(int r, uint64_t comm, uint64_t seq, int nranks, int crank, uint64_t bytes,
                      double arrive, double end)
{
    struct sp_event ev = {.type = SP_EV_NCCL};
    ev.nccl.dur = NCCL_CALL_NS;
    ev.nccl.comm = comm;
    ev.nccl.seq = r == far_seq_rank ? FAR_SEQ_BASE + seq : seq;
    ev.nccl.op = SP_NCCL_ALLREDUCE;
    ev.nccl.count = bytes / 4;
    ev.nccl.bytes = bytes;
    ev.nccl.peer = -1;
    ev.nccl.stream = NCCL_STREAM;
    ev.nccl.nranks = (uint64_t)nranks;
    ev.nccl.rank = crank;
    emit(r, &ev, arrive);
    emit_gpu(r, SP_GPU_NCCL_KERNEL, arrive, end - arrive, NCCL_STREAM);
}

/* Chunk j of a step's compute: kernels named by their position. */
static void emit_compute(const struct scenario *s, int r, int j, double t, double dur)
{
    int n = s->kernels > 0 ? s->kernels : 1;
    double k = dur / n;
    for (int i = 0; i < n; i++) {
        emit_cuda(r, SP_CUDA_LAUNCH, t + i * k, k < LAUNCH_NS ? k : LAUNCH_NS);
        if (r != emit_rank || !R[r].w)
            continue;
        struct sp_event ev = {.type = SP_EV_GPU};
        ev.gpu.dur = (uint64_t)k;
        ev.gpu.kind = SP_GPU_KERNEL;
        ev.gpu.stream = COMPUTE_STREAM;
        ev.gpu.name = R[r].name_kernel[s->one_name ? 0 : (j * n + i) % MAX_KERNEL_NAMES];
        /* threads: one size for every kernel, or each position its own
         * (layers of different widths) */
        ev.gpu.grid = s->grid_per_layer ? (uint64_t)(j * n + i + 1) * GRID_STEP : GRID_STEP;
        emit(r, &ev, t + i * k);
    }
}

#define PAUSE_MS 2000.0 /* --pause-after-step: recording off this long */
#define EVAL_BYTES 8ull /* --eval-every, --step-metric: the metric all-reduce */
#define EVAL_TRANSFER (0.05 * MS)

struct truth_coll {
    uint64_t comm, bytes;
    int nranks;
    double transfer, wait;
    long n;
};
static struct truth_coll *tcoll;
static int ntcoll, captcoll;
/* (comm, bytes) -> index + 1 in tcoll, open addressing (a per-host
 * communicator on each of thousands of hosts makes many) */
static int *tc_slot;
static size_t tc_cap;

static size_t tc_hash(uint64_t comm, uint64_t bytes)
{
    uint64_t x = comm * 0x9E3779B97F4A7C15ull ^ bytes * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(x ^ x >> 31);
}

static void tc_rehash(void)
{
    free(tc_slot);
    tc_cap = tc_cap ? 2 * tc_cap : 256;
    tc_slot = calloc(tc_cap, sizeof *tc_slot);
    if (!tc_slot)
        exit(1);
    for (int i = 0; i < ntcoll; i++) {
        size_t h = tc_hash(tcoll[i].comm, tcoll[i].bytes) & (tc_cap - 1);
        while (tc_slot[h])
            h = (h + 1) & (tc_cap - 1);
        tc_slot[h] = i + 1;
    }
}

static struct truth_coll *tc(uint64_t comm, uint64_t bytes, int nranks)
{
    if (2 * ((size_t)ntcoll + 1) > tc_cap)
        tc_rehash();
    size_t h = tc_hash(comm, bytes) & (tc_cap - 1);
    for (; tc_slot[h]; h = (h + 1) & (tc_cap - 1))
        if (tcoll[tc_slot[h] - 1].comm == comm && tcoll[tc_slot[h] - 1].bytes == bytes)
            return &tcoll[tc_slot[h] - 1];
    if (ntcoll == captcoll) {
        captcoll = captcoll ? 2 * captcoll : 64;
        tcoll = realloc(tcoll, (size_t)captcoll * sizeof *tcoll);
        if (!tcoll)
            exit(1);
    }
    tc_slot[h] = ntcoll + 1;
    tcoll[ntcoll] = (struct truth_coll){comm, bytes, nranks, 0, 0, 0};
    return &tcoll[ntcoll++];
}

/* Per rank: where its timeline stands in the step, and its compute. */
static double *step_t, *step_c;

/* One step of every rank of the pass from global time T; returns the
 * step's end. */
static double run_step(const struct scenario *s, int k, double T, int in_view)
{
    in_view = in_view && collect_truth;
    int n = s->ranks, lo = pass_lo(n), hi = pass_hi(n);
    double *t = step_t, *c = step_c;
    for (int r = lo; r < hi; r++) {
        if (s->markers)
            emit_marker(r, SP_MARK_PUSH, T);
        double in = s->input + (r == s->slow_rank ? s->slow_input : 0);
        if (in > 0)
            emit_wait(r, T, in);
        if (s->sync > 0)
            emit_cuda(r, SP_CUDA_STREAM_SYNC, T + in, s->sync);
        if (s->memcpy > 0)
            emit_gpu(r, SP_GPU_MEMCPY, T + in + s->sync, s->memcpy, COPY_STREAM);
        t[r] = T + in + s->sync + s->memcpy;
        c[r] = (s->compute + (r == s->slow_rank ? s->slow_compute : 0)) * jitter(s->jitter, k, r);
        if (s->ramp > 0 && s->steps > 1)
            c[r] *= 1 + s->ramp * k / (s->steps - 1); /* the batch grows over the run */
        if (in_view) {
            R[r].cat[4] += in;
            R[r].cat[5] += s->sync;
            R[r].cat[1] += s->memcpy;
        }
    }
    double transfer = s->hosts > 1 ? s->inter_transfer : s->transfer;
    for (int j = 0; j < s->colls; j++) {
        double last = 0;
        for (int r = lo; r < hi; r++) {
            double chunk = c[r] / s->colls;
            emit_compute(s, r, j, t[r], chunk);
            t[r] += chunk;
            if (in_view)
                R[r].cat[0] += chunk;
            if (t[r] > last)
                last = t[r];
        }
        if (s->no_nccl)
            continue;
        last = tape_sync(last);
        if (j == 0 && s->step_metric) {
            /* the loss all-reduced after the forward pass, every step */
            double mend = last + EVAL_TRANSFER;
            for (int r = lo; r < hi; r++) {
                emit_nccl(r, GLOBAL_COMM, ++R[r].seq_global, n, r, EVAL_BYTES, t[r], mend);
                if (in_view) {
                    R[r].cat[3] += last - t[r];
                    R[r].cat[2] += EVAL_TRANSFER;
                }
                t[r] = mend;
            }
            last = mend;
        }
        /* gradient buckets differ in size, as DDP's often do */
        uint64_t bytes = s->equal_buckets ? s->bytes : s->bytes >> j;
        double end = last + transfer, wsum = 0;
        for (int r = lo; r < hi; r++) {
            emit_nccl(r, GLOBAL_COMM, ++R[r].seq_global, n, r, bytes, t[r], end);
            if (in_view) {
                R[r].cat[3] += last - t[r];
                R[r].cat[2] += transfer;
            }
            wsum += last - t[r];
            t[r] = end;
        }
        if (in_view) {
            struct truth_coll *x = tc(GLOBAL_COMM, bytes, n);
            x->transfer += transfer;
            x->wait += wsum / n;
            x->n++;
        }
        /* each pair of neighbouring hosts all-reduces over its ranks, one
         * pair after another; a pair with the slow host moves its data at a
         * quarter of the speed.  A pair's ranks: the lower host's, then the
         * higher's (communicator rank order) */
        for (int p = 0; s->pair_colls && s->hosts > 2 && p < s->hosts; p++) {
            int a = p, b = (p + 1) % s->hosts, members = per_host(s, a) + per_host(s, b);
            int hl = a < b ? a : b, hh = a < b ? b : a;
            double tr = s->inter_transfer * (a == s->slow_host || b == s->slow_host ? SLOW_HOST_FACTOR : 1);
            double plast = 0;
            for (int side = 0; side < 2; side++) {
                int h = side ? hh : hl, f = host_first(s, h), e = f + per_host(s, h);
                for (int r = f > lo ? f : lo; r < e && r < hi; r++)
                    if (t[r] > plast)
                        plast = t[r];
            }
            plast = tape_sync(plast);
            for (int side = 0; side < 2; side++) {
                int h = side ? hh : hl, f = host_first(s, h), e = f + per_host(s, h);
                int before = side ? per_host(s, hl) : 0; /* communicator ranks before this host's */
                for (int r = f > lo ? f : lo; r < e && r < hi; r++) {
                    int which = h == a ? 0 : 1; /* a rank is in two pairs */
                    emit_nccl(r, PAIR_COMM_BASE + (uint64_t)p, ++R[r].seq_pair[which], members, before + r - f,
                              bytes, t[r], plast + tr);
                    if (in_view) {
                        R[r].cat[3] += plast - t[r];
                        R[r].cat[2] += tr;
                    }
                    t[r] = plast + tr;
                }
            }
        }
        if (s->intra) {
            for (int r = lo; r < hi; r++) {
                int h = host_of(s, r), first = host_first(s, h);
                emit_nccl(r, INTRA_COMM_BASE + (uint64_t)h, ++R[r].seq_intra, per_host(s, h), r - first,
                          bytes, t[r], t[r] + s->transfer);
                if (in_view) {
                    R[r].cat[2] += s->transfer;
                    if (r == first) {
                        struct truth_coll *x = tc(INTRA_COMM_BASE + (uint64_t)h, bytes, per_host(s, h));
                        x->transfer += s->transfer;
                        x->n++;
                    }
                }
                t[r] += s->transfer;
            }
        }
    }
    double end = t[lo] + s->tail;
    for (int r = lo + 1; r < hi; r++)
        if (t[r] + s->tail > end)
            end = t[r] + s->tail; /* --no-nccl: nothing holds the ranks together */
    end = tape_sync(end);
    for (int r = lo; r < hi; r++) {
        if (in_view)
            R[r].cat[6] += end - t[r];
        if (s->markers)
            emit_marker(r, SP_MARK_POP, end);
    }
    return end;
}


/* An evaluation pass between two training steps, from global time T:
 * forward kernels only (the first chunk's names), then one small
 * all-reduce of the metric on the global communicator; no gradients.
 * Returns its end. */
static double run_eval(const struct scenario *s, double T)
{
    double last = T;
    for (int r = pass_lo(s->ranks); r < pass_hi(s->ranks); r++) {
        emit_compute(s, r, 0, T, s->eval_ms);
        if (T + s->eval_ms > last)
            last = T + s->eval_ms;
    }
    if (s->no_nccl)
        return last;
    for (int r = pass_lo(s->ranks); r < pass_hi(s->ranks); r++)
        emit_nccl(r, GLOBAL_COMM, ++R[r].seq_global, s->ranks, r, EVAL_BYTES, T + s->eval_ms,
                  last + EVAL_TRANSFER);
    return last + EVAL_TRANSFER;
}

static int open_rank(const struct scenario *s, int r)
{
    char dir[4096], path[4200];
    int h = host_of(s, r);
    snprintf(dir, sizeof dir, "%s/host%d", s->out, h);
    mkdir(s->out, 0755);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/%d.sprof", dir, pid_base + r);
    unlink(path);
    struct sp_writer_opts o = {
        .slot_count = 8,
        .strings_size = 1 << 18,
        .background = 0,
        .slot_size = s->gpu_lag ? LAG_SLOT_SIZE : 0,
    };
    int err = 0;
    R[r].mono_base = HOST_MONO_STEP * (h + 1) + 12345 * h;
    if (r == s->missing_rank)
        return 0;
    R[r].w = sp_writer_create(path, &o, &err);
    if (!R[r].w) {
        fprintf(stderr, "gen_trace: %s: %s\n", path, sp_strerror(err));
        return -1;
    }
    struct sp_file_header *hd = sp_writer_header(R[r].w);
    hd->pid = pid_base + r;
    hd->ppid = 1;
    hd->rank = s->no_rank ? -1 : r;
    hd->local_rank = s->no_rank ? -1 : r - h * ((s->ranks + s->hosts - 1) / s->hosts);
    hd->world_size = s->no_rank ? -1 : s->ranks;
    hd->local_world_size = s->no_rank ? -1 : per_host(s, h);
    hd->start_mono = (uint64_t)(R[r].mono_base + (int64_t)GLOBAL_START);
    hd->start_real = (uint64_t)(REALTIME_EPOCH + (int64_t)GLOBAL_START + (int64_t)(h * s->clock_err_us * US));
    char host[64];
    snprintf(host, sizeof host, "host%d", h);
    sp_writer_add_tlv(R[r].w, SP_TLV_HOST, host, (uint32_t)strlen(host));
    sp_writer_add_tlv(R[r].w, SP_TLV_SOURCE, "preload", 7);
    if (run_id)
        sp_writer_add_tlv(R[r].w, SP_TLV_RUN, run_id, (uint32_t)strlen(run_id));
    R[r].name_step = sp_writer_intern(R[r].w, "train_step", 10);
    int names = s->colls * (s->kernels > 0 ? s->kernels : 1);
    names = names < MAX_KERNEL_NAMES ? names : MAX_KERNEL_NAMES;
    R[r].name_kernel = calloc(MAX_KERNEL_NAMES, sizeof *R[r].name_kernel);
    if (!R[r].name_kernel)
        return -1;
    for (int i = 0; i < names; i++) {
        char name[64];
        int len = snprintf(name, sizeof name, "void layer%d_kernel%d<float>()", i / (s->kernels > 0 ? s->kernels : 1),
                           i % (s->kernels > 0 ? s->kernels : 1));
        R[r].name_kernel[i] = sp_writer_intern(R[r].w, name, (size_t)len);
    }
    if (s->gpu_lag) {
        gput.w = R[r].w;
        gput.quit = 0;
        sem_init(&gput.go, 0, 0);
        sem_init(&gput.done, 0, 0);
        if (pthread_create(&gput.th, NULL, gpu_thread, NULL) != 0)
            return -1;
    }
    return 0;
}

/* A DataLoader-like worker: its parent is the rank's process; its file
 * reads must not count as the rank's own input wait.  With `inherit` its
 * header carries the rank, as a worker forked from the rank does. */
static void write_helper(const struct scenario *s, int r, int idx, int inherit, double t0, double t1)
{
    char path[4200];
    int pid = 5000 + r * 16 + idx;
    snprintf(path, sizeof path, "%s/host%d/%d.sprof", s->out, host_of(s, r), pid);
    unlink(path);
    struct sp_writer_opts o = {.slot_count = 4, .strings_size = 1 << 12, .background = 0};
    int err;
    struct sp_writer *w = sp_writer_create(path, &o, &err);
    if (!w)
        return;
    struct sp_file_header *hd = sp_writer_header(w);
    hd->pid = pid;
    hd->ppid = pid_base + r;
    hd->rank = inherit && !s->no_rank ? r : -1;
    hd->world_size = inherit && !s->no_rank ? s->ranks : -1;
    hd->start_mono = (uint64_t)(R[r].mono_base + (int64_t)GLOBAL_START);
    hd->start_real = (uint64_t)(REALTIME_EPOCH + (int64_t)GLOBAL_START);
    char host[64];
    snprintf(host, sizeof host, "host%d", host_of(s, r));
    sp_writer_add_tlv(w, SP_TLV_HOST, host, (uint32_t)strlen(host));
    double next_cpu = t0;
    for (double t = t0; t < t1; t += helper_read_every) {
        struct sp_event ev = {.type = SP_EV_IO};
        ev.t = (uint64_t)((int64_t)t + R[r].mono_base);
        ev.io.dur = (uint64_t)(0.8 * helper_read_every); /* busy reading 80% of the time */
        ev.io.op = SP_IO_READ;
        ev.io.fd_kind = SP_FD_FILE;
        ev.io.ret = 4096;
        sp_writer_append(w, &ev);
        if (t >= next_cpu) {
            struct sp_event c = {.type = SP_EV_CPU};
            c.t = ev.t;
            c.cpu.user_ns = (uint64_t)((t - t0) * HELPER_CPU_CORES);
            c.cpu.busy_permille = HOST_BUSY_PERMILLE;
            c.cpu.ncores = HOST_CORES;
            c.cpu.threads = 1;
            sp_writer_append(w, &c);
            next_cpu += HELPER_CPU_EVERY;
        }
    }
    sp_writer_close(w);
}

static void truncate_file(const struct scenario *s, int r)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/host%d/%d.sprof", s->out, host_of(s, r), pid_base + r);
    struct stat st;
    if (stat(path, &st) == 0 && truncate(path, st.st_size * 6 / 10) != 0)
        perror(path);
}

static void write_truth(const struct scenario *s, double step_ms)
{
    FILE *f = fopen(s->truth, "w");
    if (!f)
        return;
    double tot[8] = {0}, all = 0;
    for (int r = 0; r < s->ranks; r++)
        for (int c = 0; c < 7; c++) {
            tot[c] += R[r].cat[c];
            all += R[r].cat[c];
        }
    static const char *names[] = {"compute", "memcpy", "collective_transfer", "collective_wait",
                                  "idle_input", "idle_host", "idle_other"};
    fprintf(f, "{\"ranks\": %d, \"hosts\": %d, \"steps\": %d, \"skip\": %d, \"step_ms\": %.6f,\n"
               " \"steps_per_s\": %.6f, \"samples_scale\": %d,\n \"breakdown\": {",
            s->ranks, s->hosts, s->steps, s->skip, step_ms, 1000 / step_ms, s->ranks);
    for (int c = 0; c < 7; c++)
        fprintf(f, "%s\"%s\": %.6f", c ? ", " : "", names[c], tot[c] / all);
    fprintf(f, "},\n \"per_rank\": [");
    for (int r = 0; r < s->ranks; r++) {
        double a = 0;
        for (int c = 0; c < 7; c++)
            a += R[r].cat[c];
        fprintf(f, "%s{\"rank\": %d, \"breakdown\": {", r ? ", " : "", r);
        for (int c = 0; c < 7; c++)
            fprintf(f, "%s\"%s\": %.6f", c ? ", " : "", names[c], R[r].cat[c] / a);
        fprintf(f, "}}");
    }
    fprintf(f, "],\n \"collectives\": [");
    for (int i = 0; i < ntcoll; i++)
        fprintf(f, "%s{\"comm\": \"%llx\", \"bytes\": %llu, \"nranks\": %d, \"calls\": %ld, \"transfer_ms\": %.6f, \"wait_ms\": %.6f}",
                i ? ", " : "", (unsigned long long)tcoll[i].comm, (unsigned long long)tcoll[i].bytes, tcoll[i].nranks, tcoll[i].n,
                tcoll[i].transfer / tcoll[i].n / MS, tcoll[i].wait / tcoll[i].n / MS);
    fprintf(f, "],\n \"straggler\": %d, \"missing_rank\": %d, \"evals\": %d}\n", s->slow_rank,
            s->missing_rank, s->eval_every > 0 ? (s->steps - 1) / s->eval_every : 0);
    fclose(f);
}

static const char usage[] =
    "usage: gen_trace OUTDIR [--ranks N] [--hosts H] [--steps S] [--skip N] [--colls K]\n"
    "  [--compute-ms X] [--input-ms X] [--sync-ms X] [--memcpy-ms X] [--tail-ms X]\n"
    "  [--transfer-ms X] [--inter-transfer-ms X] [--intra-coll] [--bytes B] [--kernels N]\n"
    "  [--jitter F] [--clock-error-us U] [--markers] [--helper] [--slow-rank R]\n"
    "  [--slow-compute-ms X] [--slow-input-ms X] [--missing-rank R] [--truncate-rank R]\n"
    "  [--helpers N] [--no-nccl] [--gpu-thread-lag S] [--equal-buckets] [--no-rank]\n"
    "  [--one-kernel-name] [--grid-per-layer] [--ramp F] [--pause-after-step K]\n"
    "  [--eval-every N --eval-ms X] [--short-rank R] [--bad-time R] [--step-metric] [--copy-bytes N] [--copy-pinned]\n"
    "  [--pid-base N] [--run-id ID] [--no-gpu] [--pair-colls [--slow-host H]] [--helper-read-us X]\n"
    "  [--far-seq R]\n"
    "  [--truth FILE]\n";

int main(int argc, char **argv)
{
    // clang-format off
    struct scenario s = {.ranks = 4, .hosts = 1, .steps = 20, .colls = 2, .kernels = 4, .skip = 3,
                         .compute = 10, .tail = 0.3, .transfer = 2, .inter_transfer = -1, .slow_host = -1,
                         .jitter = 0.02, .clock_err_us = 300, .bytes = 64u << 20,
                         .slow_rank = -1, .missing_rank = -1, .truncate_rank = -1};
    static const struct option opts[] = {
        {"ranks", 1, 0, 'n'}, {"hosts", 1, 0, 'H'}, {"steps", 1, 0, 's'}, {"skip", 1, 0, 'k'},
        {"colls", 1, 0, 'K'}, {"compute-ms", 1, 0, 'c'}, {"input-ms", 1, 0, 'i'},
        {"sync-ms", 1, 0, 'y'}, {"memcpy-ms", 1, 0, 'm'}, {"tail-ms", 1, 0, 'T'},
        {"transfer-ms", 1, 0, 't'}, {"inter-transfer-ms", 1, 0, 'x'}, {"intra-coll", 0, 0, 'I'},
        {"bytes", 1, 0, 'b'}, {"kernels", 1, 0, 'N'}, {"jitter", 1, 0, 'j'},
        {"clock-error-us", 1, 0, 'e'}, {"markers", 0, 0, 'M'}, {"helper", 0, 0, 'P'},
        {"slow-rank", 1, 0, 'S'}, {"slow-compute-ms", 1, 0, 'C'}, {"slow-input-ms", 1, 0, 'D'},
        {"missing-rank", 1, 0, 'X'}, {"truncate-rank", 1, 0, 'R'}, {"truth", 1, 0, 'o'},
        {"helpers", 1, 0, 'W'}, {"no-nccl", 0, 0, 'Z'}, {"gpu-thread-lag", 1, 0, 'L'},
        {"equal-buckets", 0, 0, 'E'}, {"no-rank", 0, 0, 'U'}, {"one-kernel-name", 0, 0, 'O'},
        {"pause-after-step", 1, 0, 'Q'}, {"copy-bytes", 1, 0, 'Y'}, {"copy-pinned", 0, 0, 'V'},
        {"grid-per-layer", 0, 0, 'G'}, {"ramp", 1, 0, 'A'},
        {"eval-every", 1, 0, 'F'}, {"eval-ms", 1, 0, 'v'}, {"short-rank", 1, 0, 'h'},
        {"step-metric", 0, 0, 'g'}, {"pid-base", 1, 0, 'J'}, {"pair-colls", 0, 0, 'p'},
        {"slow-host", 1, 0, 'q'},
        {"no-gpu", 0, 0, OPT_NO_GPU}, {"helper-read-us", 1, 0, OPT_HELPER_READ},
        {"bad-time", 1, 0, OPT_BAD_TIME}, {"run-id", 1, 0, OPT_RUN_ID},
        {"far-seq", 1, 0, OPT_FAR_SEQ},
        {0, 0, 0, 0},
    };
    // clang-format on
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'n': s.ranks = atoi(optarg); break;
        case 'H': s.hosts = atoi(optarg); break;
        case 's': s.steps = atoi(optarg); break;
        case 'k': s.skip = atoi(optarg); break;
        case 'K': s.colls = atoi(optarg); break;
        case 'c': s.compute = atof(optarg); break;
        case 'i': s.input = atof(optarg); break;
        case 'y': s.sync = atof(optarg); break;
        case 'm': s.memcpy = atof(optarg); break;
        case 'T': s.tail = atof(optarg); break;
        case 't': s.transfer = atof(optarg); break;
        case 'x': s.inter_transfer = atof(optarg); break;
        case 'I': s.intra = 1; break;
        case 'b': s.bytes = strtoull(optarg, NULL, 0); break;
        case 'N': s.kernels = atoi(optarg); break;
        case 'j': s.jitter = atof(optarg); break;
        case 'e': s.clock_err_us = atof(optarg); break;
        case 'M': s.markers = 1; break;
        case 'P': s.helper = 1; break;
        case 'S': s.slow_rank = atoi(optarg); break;
        case 'C': s.slow_compute = atof(optarg); break;
        case 'D': s.slow_input = atof(optarg); break;
        case 'X': s.missing_rank = atoi(optarg); break;
        case 'R': s.truncate_rank = atoi(optarg); break;
        case 'o': s.truth = optarg; break;
        case 'W': s.helpers = atoi(optarg); break;
        case 'Z': s.no_nccl = 1; break;
        case 'L': s.gpu_lag = atoi(optarg); break;
        case 'E': s.equal_buckets = 1; break;
        case 'O': s.one_name = 1; break;
        case 'Q': s.pause_step = atoi(optarg) + 1; break;
        case 'U': s.no_rank = 1; break;
        case 'Y': copy_bytes = strtoull(optarg, NULL, 0); break;
        case 'V': copy_pinned = 1; break;
        case 'G': s.grid_per_layer = 1; break;
        case 'A': s.ramp = atof(optarg); break;
        case 'F': s.eval_every = atoi(optarg); break;
        case 'v': s.eval_ms = atof(optarg); break;
        case 'h': short_rank = atoi(optarg); break;
        case 'g': s.step_metric = 1; break;
        case 'J': pid_base = atoi(optarg); break;
        case 'p': s.pair_colls = 1; break;
        case 'q': s.slow_host = atoi(optarg); break;
        case OPT_NO_GPU: no_gpu = 1; break;
        case OPT_HELPER_READ: helper_read_every = atof(optarg) * US; break;
        case OPT_BAD_TIME: bad_time_rank = atoi(optarg); break;
        case OPT_RUN_ID: run_id = optarg; break;
        case OPT_FAR_SEQ: far_seq_rank = atoi(optarg); break;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind != argc - 1 || s.ranks < 1 || s.ranks > MAX_RANKS || s.hosts < 1 || s.colls < 1) {
        fputs(usage, stderr);
        return 2;
    }
    s.out = argv[optind];
    R = calloc((size_t)s.ranks, sizeof *R);
    step_t = calloc((size_t)s.ranks, sizeof *step_t);
    step_c = calloc((size_t)s.ranks, sizeof *step_c);
    if (!R || !step_t || !step_c) {
        fputs("gen_trace: out of memory\n", stderr);
        return 1;
    }
    short_after = s.steps / 2;
    if (s.inter_transfer < 0)
        s.inter_transfer = s.transfer;
    s.compute *= MS, s.input *= MS, s.sync *= MS, s.memcpy *= MS, s.tail *= MS, s.transfer *= MS;
    s.inter_transfer *= MS, s.slow_compute *= MS, s.slow_input *= MS, s.eval_ms *= MS;
    double t0 = GLOBAL_START + 1 * MS, first = 0, T = 0, step_ms, eval_in_view = 0;
    for (emit_rank = -1; emit_rank < s.ranks; emit_rank++) {
        collect_truth = emit_rank < 0;
        if (emit_rank >= 0 && open_rank(&s, emit_rank) < 0)
            return 1;
        for (int r = pass_lo(s.ranks); r < pass_hi(s.ranks); r++)
            R[r].seq_global = R[r].seq_intra = R[r].seq_pair[0] = R[r].seq_pair[1] = 0;
        tape.at = 0;
        T = t0;
        for (int k = 0; k < s.steps; k++) {
            if (k == s.skip)
                first = T;
            cur_step = k;
            if (gput.w)
                deliver_gpu(k - s.gpu_lag);
            T = run_step(&s, k, T, k >= s.skip);
            if (s.eval_every > 0 && (k + 1) % s.eval_every == 0 && k + 1 < s.steps) {
                double e = run_eval(&s, T);
                if (k >= s.skip && collect_truth)
                    eval_in_view += e - T; /* between steps: in none of them */
                T = e;
            }
            if (s.pause_step && k == s.pause_step - 1) {
                /* recording paused through the control file, for PAUSE_MS */
                for (int r = pass_lo(s.ranks); r < pass_hi(s.ranks); r++) {
                    struct sp_event ev = {.type = SP_EV_PROC};
                    ev.proc.kind = SP_PROC_STOP;
                    emit(r, &ev, T + 0.01 * MS * r);
                    ev.proc.kind = SP_PROC_START;
                    emit(r, &ev, T + PAUSE_MS * MS);
                }
                T += PAUSE_MS * MS;
            }
        }
        if (gput.w) {
            deliver_gpu(s.steps);
            gput.quit = 1;
            sem_post(&gput.go);
            pthread_join(gput.th, NULL);
            gput.w = NULL;
        }
        if (emit_rank >= 0 && R[emit_rank].w) {
            sp_writer_close(R[emit_rank].w);
            R[emit_rank].w = NULL;
        }
        if (emit_rank >= 0) {
            free(R[emit_rank].name_kernel);
            R[emit_rank].name_kernel = NULL;
        }
        if (emit_rank >= 0 && emit_rank != s.missing_rank) {
            if (s.helper)
                write_helper(&s, emit_rank, 0, 0, t0, T);
            for (int i = 0; i < s.helpers; i++)
                write_helper(&s, emit_rank, 1 + i, 1, t0, T);
        }
    }
    step_ms = (T - first - eval_in_view) / (s.steps - s.skip) / MS;
    if (s.truncate_rank >= 0)
        truncate_file(&s, s.truncate_rank);
    if (s.truth)
        write_truth(&s, step_ms);
    return 0;
}
