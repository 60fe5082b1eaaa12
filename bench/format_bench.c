/*
 * format_bench.c - what recording costs: nanoseconds per append on the
 * job's thread, and bytes per event on disk, for a realistic mix.
 *
 * The mix is one training step after another: a step marker pair, a
 * data-loader read, kernel launches (cuda_api, with CUPTI correlation ids)
 * of the same kernels in the same order every step, an all-reduce per
 * bucket of launches, then the GPU's records of the step's kernels, which
 * CUPTI delivers in a batch after the launches.  Host times advance with a
 * few hundred ns of jitter; each kernel runs about as long every time
 * (1.5% jitter).  The events are generated into
 * a ring before timing, so the timed loop is appends only.
 *
 * Output, plain lines (the figures the format aims at: at most 4 bytes per
 * event compressed, at most 20 ns per append; docs/format.md, "Cost", has
 * the measured ones):
 *   events: 1048576
 *   bytes/event: 5.54         (frames only: what the trace costs on disk)
 *   bytes/event file: 5.55    (whole file as allocated on disk)
 *   ns/append 1 thread: 25.0  (median of 5 runs; appending thread's CPU time)
 *   ns/append 4 threads: 30.0 (median of 5 runs of the median thread)
 *   ns/event read back: 45.0  (the reader streaming the file: CPU time
 *                              per event, median of 5)
 *   ns/event read back, gpu+nccl+marker only: 20.0 (the same, asking the
 *                              reader for three types: ns per event in
 *                              the file, delivered or skipped)
 *   start us: create 40.0 first append 6.0 close 60.0 total 110.0 fd 512
 *                             (what a trace costs a short process: a fresh
 *                              writer with the preload's defaults, one
 *                              event, close; medians of START_ROUNDS, wall
 *                              clock, since page faults and system calls are
 *                              the cost; fd: the descriptor it got)
 *
 * Usage: format_bench [EVENTS] [--level N] [--slot-size BYTES] [--callgrind]
 * --callgrind: one single-threaded pass and no timing, for
 * bench/format_callgrind.sh.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "sprof.h"
#include "xorshift.h"

#define DEFAULT_EVENTS (1u << 20)
#define RING 65536u
#define RUNS 5
#define THREADS 4
#define KERNEL_NAMES 48
#define LAUNCHES_PER_STEP 200
#define LAUNCHES_PER_BUCKET 25
#define LAUNCH_JITTER_NS 256 /* host-side noise of a launch */
#define KERNEL_JITTER_DIV 64 /* a kernel's run time varies ~1.5% */
#define GPU_TICK_NS 32       /* GPU timestamps (globaltimer) advance in 32 ns steps */
#define DEFAULT_SLOT_SIZE (128u * 1024u)
#define SLOT_COUNT 512u

static struct sp_event ring[RING];

/* CPU time of the appending thread: what recording costs the job's thread,
 * and a figure that survives a loaded machine better than wall time. */
#define APPEND_CLOCK CLOCK_THREAD_CPUTIME_ID

static uint32_t rng_state = 2463534242u;
static uint32_t rnd(uint32_t n) { return xorshift_below(&rng_state, n); }

struct gen {
    uint64_t t, gpu_t, corr, seq, offset;
    uint32_t n, launch;
    uint32_t names[KERNEL_NAMES], path, step_name;
    uint32_t kernel_ns[KERNEL_NAMES];       /* each kernel's typical duration */
    uint8_t order[LAUNCHES_PER_STEP];       /* a step launches the same kernels */
    struct sp_event gpu[LAUNCHES_PER_STEP]; /* the step's kernel records */
    uint32_t ngpu;
};

static struct sp_event *next_slot(struct gen *g)
{
    struct sp_event *e = &ring[g->n++];
    memset(e, 0, sizeof *e);
    return e;
}

static void gen_launch(struct gen *g)
{
    uint32_t k = g->order[g->launch++ % LAUNCHES_PER_STEP];
    struct sp_event *e = next_slot(g);
    e->type = SP_EV_CUDA;
    e->t = g->t;
    e->cuda.dur = 2500 + rnd(LAUNCH_JITTER_NS);
    e->cuda.api = SP_CUDA_LAUNCH;
    e->cuda.stream = 7;
    e->cuda.correlation = ++g->corr;
    e->cuda.name = g->names[k];
    g->t += e->cuda.dur + 300 + rnd(LAUNCH_JITTER_NS);
    struct sp_event *k_ev = &g->gpu[g->ngpu++];
    memset(k_ev, 0, sizeof *k_ev);
    k_ev->type = SP_EV_GPU;
    if (g->gpu_t < g->t)
        g->gpu_t = g->t + 4000;
    k_ev->t = g->gpu_t / GPU_TICK_NS * GPU_TICK_NS;
    k_ev->gpu.dur = (g->kernel_ns[k] + rnd(g->kernel_ns[k] / KERNEL_JITTER_DIV + 1)) / GPU_TICK_NS * GPU_TICK_NS;
    k_ev->gpu.kind = SP_GPU_KERNEL;
    k_ev->gpu.stream = 7;
    k_ev->gpu.name = g->names[k];
    k_ev->gpu.correlation = g->corr;
    k_ev->gpu.grid = 65536u << (k % 6);
    g->gpu_t += k_ev->gpu.dur + 1000 + rnd(2000);
}

static void gen_allreduce(struct gen *g)
{
    struct sp_event *e = next_slot(g);
    e->type = SP_EV_NCCL;
    e->t = g->t;
    e->nccl.dur = 8000 + rnd(LAUNCH_JITTER_NS * 4);
    e->nccl.comm = 0x5eed1234abcdull;
    e->nccl.seq = ++g->seq;
    e->nccl.op = SP_NCCL_ALLREDUCE;
    e->nccl.count = 6553600;
    e->nccl.datatype = 7;
    e->nccl.bytes = 26214400;
    e->nccl.peer = -1;
    e->nccl.stream = 9;
    e->nccl.nranks = 8;
    e->nccl.rank = 3;
    e->nccl.correlation = ++g->corr;
    g->t += e->nccl.dur + 500;
}

static void gen_read(struct gen *g)
{
    struct sp_event *e = next_slot(g);
    e->type = SP_EV_IO;
    e->t = g->t;
    e->io.dur = 30000 + rnd(20000);
    e->io.op = SP_IO_READ;
    e->io.fd = 23;
    e->io.fd_kind = SP_FD_PIPE;
    e->io.path = g->path;
    e->io.bytes = 1u << 20;
    e->io.ret = 1 << 20;
    e->io.offset = g->offset;
    g->offset += 1u << 20;
    g->t += e->io.dur + 1000;
}

static void gen_marker(struct gen *g, uint32_t kind)
{
    struct sp_event *e = next_slot(g);
    e->type = SP_EV_MARKER;
    e->t = g->t;
    e->marker.kind = kind;
    e->marker.name = g->step_name;
    e->marker.depth = kind == SP_MARK_PUSH ? 1 : 0;
    g->t += 200;
}

/* CUPTI hands kernel records over in buffers, after the launches: the
 * step's records follow its host events, as the recorder sees them. */
static void flush_gpu_records(struct gen *g)
{
    for (uint32_t i = 0; i < g->ngpu && g->n < RING; i++)
        ring[g->n++] = g->gpu[i];
    g->ngpu = 0;
}

/* Fills the ring with whole steps (a partial last step is fine). */
static void generate(struct sp_writer *w)
{
    struct gen g = {.t = 1000000000ull};
    char name[64];
    for (int i = 0; i < KERNEL_NAMES; i++) {
        snprintf(name, sizeof name, "_ZN7cutlass6KernelINS_4gemm6kernel%dEEEvNT_6ParamsE", i);
        g.names[i] = sp_writer_intern(w, name, strlen(name));
    }
    for (int i = 0; i < KERNEL_NAMES; i++)
        g.kernel_ns[i] = 5000 + rnd(400000);
    for (int i = 0; i < LAUNCHES_PER_STEP; i++)
        g.order[i] = (uint8_t)rnd(KERNEL_NAMES);
    g.path = sp_writer_intern(w, "pipe:[4177]", 11);
    g.step_name = sp_writer_intern(w, "ProfilerStep#", 13);
    while (g.n + 2 * LAUNCHES_PER_STEP + LAUNCHES_PER_STEP / LAUNCHES_PER_BUCKET + 8 < RING) {
        gen_marker(&g, SP_MARK_PUSH);
        gen_read(&g);
        for (int l = 0; l < LAUNCHES_PER_STEP; l++) {
            gen_launch(&g);
            if (l % LAUNCHES_PER_BUCKET == LAUNCHES_PER_BUCKET - 1)
                gen_allreduce(&g);
        }
        gen_marker(&g, SP_MARK_POP);
        flush_gpu_records(&g);
    }
    while (g.n < RING)
        gen_marker(&g, SP_MARK_INSTANT);
}

struct job {
    struct sp_writer *w;
    uint64_t events, refused;
    double ns_per_append;
};

/* Appends straight from the ring: the timed loop is the append and nothing
 * else.  Times restart at each pass over the ring (one backward jump per
 * RING events, which costs the compression nothing measurable). */
static void *append_events(void *arg)
{
    struct job *j = arg;
    uint64_t t0 = bench_ns(APPEND_CLOCK);
    for (uint64_t i = 0; i < j->events; i++)
        j->refused += sp_writer_append(j->w, &ring[i % RING]) != 0;
    j->ns_per_append = (double)(bench_ns(APPEND_CLOCK) - t0) / (double)j->events;
    sp_writer_thread_exit(j->w);
    return NULL;
}

/* ---- start cost ------------------------------------------------------------ */

#define START_ROUNDS 200
#define NS_PER_US 1000.0

/* ns as doubles: exact below 2^53 */
static double median_us(const uint64_t *v, int n)
{
    double d[START_ROUNDS];
    for (int i = 0; i < n; i++)
        d[i] = (double)v[i];
    return bench_median(d, n) / NS_PER_US;
}

/* A short process's whole trace: create, one event, close. */
static void start_cost(const char *dir)
{
    static uint64_t create[START_ROUNDS], append[START_ROUNDS], close_[START_ROUNDS],
        total[START_ROUNDS];
    char path[4200];
    int fd = -1;
    for (int i = 0; i < START_ROUNDS; i++) {
        snprintf(path, sizeof path, "%s/start-%d.sprof", dir, i);
        int err;
        uint64_t t0 = bench_ns(CLOCK_MONOTONIC);
        struct sp_writer *w = sp_writer_create(path, NULL, &err);
        if (!w) {
            fprintf(stderr, "format_bench: %s: %s\n", path, sp_strerror(err));
            exit(1);
        }
        uint64_t t1 = bench_ns(CLOCK_MONOTONIC);
        struct sp_event ev = {.type = SP_EV_PROC, .t = t1};
        ev.proc.kind = SP_PROC_START;
        sp_writer_append(w, &ev);
        uint64_t t2 = bench_ns(CLOCK_MONOTONIC);
        fd = sp_writer_fd(w);
        sp_writer_close(w);
        uint64_t t3 = bench_ns(CLOCK_MONOTONIC);
        create[i] = t1 - t0;
        append[i] = t2 - t1;
        close_[i] = t3 - t2;
        total[i] = t3 - t0;
        unlink(path);
    }
    printf("start us: create %.1f first append %.1f close %.1f total %.1f fd %d\n",
           median_us(create, START_ROUNDS), median_us(append, START_ROUNDS),
           median_us(close_, START_ROUNDS), median_us(total, START_ROUNDS), fd);
}

struct result {
    double ns, read_ns, masked_read_ns;
    uint64_t file_bytes, disk_bytes, frame_bytes, refused;
};

static uint32_t slot_size = DEFAULT_SLOT_SIZE;
/* 0: the appending thread compresses each full slot itself, so its CPU
 * time holds the compressor's work too (the compression figures). */
static int background = 1;

/* The analyzer's typical question: the GPU's records, the collectives and
 * the step markers, not every launch. */
#define TYPICAL_MASK (SP_TYPE_BIT(SP_EV_GPU) | SP_TYPE_BIT(SP_EV_NCCL) | SP_TYPE_BIT(SP_EV_MARKER))

/* The analyzer's side: CPU ns per event in the file (delivered or
 * skipped) to stream the trace back, asking for the types in `mask`. */
static double read_back_ns(const char *path, uint32_t mask, uint64_t in_file)
{
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    if (!r)
        return 0;
    sp_reader_set_types(r, mask);
    struct sp_event ev;
    uint64_t n = 0, t0 = bench_ns(APPEND_CLOCK);
    while (sp_reader_next(r, &ev))
        n++;
    double ns = n ? (double)(bench_ns(APPEND_CLOCK) - t0) / (double)in_file : 0;
    sp_reader_close(r);
    return ns;
}

/* Named apart so that bench/format_callgrind.sh can count each. */
static __attribute__((noinline)) double read_all_types(const char *path, uint64_t events)
{
    return read_back_ns(path, SP_TYPES_ALL, events);
}

static __attribute__((noinline)) double read_typical_types(const char *path, uint64_t events)
{
    return read_back_ns(path, TYPICAL_MASK, events);
}

static struct result run_once(const char *dir, int run, int threads, uint64_t events, int level)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/bench-%d-%d.sprof", dir, threads, run);
    struct sp_writer_opts o = {
        .slot_size = slot_size,
        .slot_count = SLOT_COUNT,
        .zstd_level = level,
        .background = background,
    };
    int err;
    struct sp_writer *w = sp_writer_create(path, &o, &err);
    if (!w) {
        fprintf(stderr, "format_bench: %s: %s\n", path, sp_strerror(err));
        exit(1);
    }
    generate(w);
    uint64_t frames_offset = sp_writer_header(w)->frames_offset;
    struct job jobs[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < threads; i++) {
        jobs[i] = (struct job){w, events / (uint64_t)threads, 0, 0};
        pthread_create(&th[i], NULL, append_events, &jobs[i]);
    }
    struct result r = {0};
    double per_thread[THREADS];
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        per_thread[i] = jobs[i].ns_per_append;
        r.refused += jobs[i].refused;
    }
    qsort(per_thread, (size_t)threads, sizeof per_thread[0], bench_cmp_double);
    r.ns = per_thread[threads / 2];
    sp_writer_close(w);
    struct stat st;
    stat(path, &st);
    r.file_bytes = (uint64_t)st.st_size;
    r.disk_bytes = (uint64_t)st.st_blocks * 512u;
    /* a trace compacted at close has its frames elsewhere: the header says */
    struct sp_file_header closed;
    FILE *hf = fopen(path, "rb");
    if (hf && fread(&closed, sizeof closed, 1, hf) == 1)
        frames_offset = closed.frames_offset;
    if (hf)
        fclose(hf);
    r.frame_bytes = r.file_bytes > frames_offset ? r.file_bytes - frames_offset : 0;
    r.read_ns = read_all_types(path, events);
    r.masked_read_ns = read_typical_types(path, events);
    unlink(path);
    return r;
}

static double median_of(struct result *rs, int n, size_t field)
{
    double v[RUNS];
    for (int i = 0; i < n; i++)
        memcpy(&v[i], (const char *)&rs[i] + field, sizeof v[i]);
    qsort(v, (size_t)n, sizeof v[0], bench_cmp_double);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    uint64_t events = DEFAULT_EVENTS;
    int level = 0, callgrind = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--level") && i + 1 < argc)
            level = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--slot-size") && i + 1 < argc)
            slot_size = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--callgrind"))
            callgrind = 1;
        else
            events = strtoull(argv[i], NULL, 10);
    }
    const char *tmp = getenv("TMPDIR");
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s/sprof-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dirbuf)) {
        perror("mkdtemp");
        return 1;
    }
    if (callgrind) {
        struct result r = run_once(dirbuf, 0, 1, events, level);
        printf("events: %llu refused: %llu\n", (unsigned long long)events,
               (unsigned long long)r.refused);
        rmdir(dirbuf);
        return 0;
    }
    struct result one[RUNS], four[RUNS], inl[RUNS];
    for (int i = 0; i < RUNS; i++) { /* alternating, so that load hits both */
        one[i] = run_once(dirbuf, i, 1, events, level);
        background = 0;
        inl[i] = run_once(dirbuf, i, 1, events, level);
        background = 1;
    }
    for (int i = 0; i < RUNS; i++)
        four[i] = run_once(dirbuf, i, THREADS, events, level);
    printf("events: %llu\n", (unsigned long long)events);
    printf("bytes/event: %.2f\n", (double)one[0].frame_bytes / (double)events);
    printf("bytes/event file: %.2f\n", (double)one[0].disk_bytes / (double)events);
    printf("bytes/event apparent file size: %.2f\n", (double)one[0].file_bytes / (double)events);
    printf("ns/append 1 thread: %.1f\n", median_of(one, RUNS, offsetof(struct result, ns)));
    printf("ns/append %d threads: %.1f\n", THREADS,
           median_of(four, RUNS, offsetof(struct result, ns)));
    printf("ns/event read back: %.1f\n", median_of(one, RUNS, offsetof(struct result, read_ns)));
    printf("ns/event read back, gpu+nccl+marker only: %.1f\n",
           median_of(one, RUNS, offsetof(struct result, masked_read_ns)));
    /* The compressor's work per event: the same appends with the
     * compression done inline, less the appends alone. */
    double cns = median_of(inl, RUNS, offsetof(struct result, ns)) -
                 median_of(one, RUNS, offsetof(struct result, ns));
    if (cns > 0) {
        printf("compressor ns/event: %.1f\n", cns);
        printf("compressor MB/s of trace written: %.1f\n",
               (double)one[0].frame_bytes / (double)events / cns * 1e3);
        printf("compressor share of a core at 1M events/s: %.1f%%\n", cns / 10.0);
    }
    uint64_t refused = 0;
    for (int i = 0; i < RUNS; i++)
        refused += one[i].refused + four[i].refused;
    printf("refused appends (all runs): %llu\n", (unsigned long long)refused);
    start_cost(dirbuf);
    rmdir(dirbuf);
    return 0;
}
