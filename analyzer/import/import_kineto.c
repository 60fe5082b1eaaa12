/*
 * import_kineto.c - the mapping from Kineto events to scaleprof events, and
 * the life of one output file.
 *
 * Each Kineto event is looked at once, as the JSON reader delivers it, and
 * becomes zero, one or two scaleprof events:
 *
 *   kernel              -> gpu kernel (or nccl_kernel + a synthesized nccl
 *                          event when the name is NCCL's)
 *   gpu_memcpy          -> gpu memcpy, direction from the name
 *   gpu_memset          -> gpu memset
 *   cuda_runtime/driver -> cuda (launches, syncs, copies; others skipped)
 *   ProfilerStep#N      -> marker range (the analyzer's step boundaries)
 *   DataLoader __next__ -> wait, op dataloader (the host waited for input)
 *   anything else       -> skipped, counted by category (a send's or recv's
 *                          record_param_comms op is read for its peer first)
 *
 * Older Kineto versions spell the categories Kernel, Memcpy, Memset,
 * Runtime, Operator; both spellings are accepted.  PyTorch's profiler
 * without Kineto writes a bare array of events with no category at all
 * (and "pid": "CPU functions"): an event with no category is a host
 * event, so its ProfilerStep and DataLoader ranges are taken by name.
 *
 * A trace of which nothing maps (operators only, or no event) is an
 * error naming what was skipped, and leaves no output: an empty trace in
 * DIR would make every verb say less clearly what is missing.
 *
 * Time stays on the trace's own clock, converted to integer ns: a Kineto
 * trace is one process's view, so only its internal order matters; the
 * header's (start_mono, start_real) pair places it on the wall clock when
 * the trace says where its zero is (baseTimeNanoseconds).
 *
 * The output is written to a temporary name in DIR/<host>/ and renamed to
 * <pid>.sprof once the trace's pid is known; a failed import still leaves
 * a closed, readable file with the events before the failure.  Memory is
 * bounded: a fixed intern cache, whose size is the bound on distinct names
 * (a name past it is written as no name, 0), and a fixed table of
 * communicators, the bound on them (the collectives of one more are not
 * written: a report over 300k process groups took two minutes), and a
 * fixed table of the peers that send/recv cpu ops name, by External id
 * (allocated at the first; past it a kernel names no peer, and says so).
 */
#include "import_kineto.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sprof.h"
#include "units.h"

#define INTERN_SLOTS 65536                  /* power of two; 1 MiB of cache */
#define INTERN_FILL_MAX SP_IMPORT_NAMES_MAX /* 3/4 of the slots */
#define COMMS_MAX SP_IMPORT_COMMS_MAX
#define EPOCH_2000_NS (946684800ull * (uint64_t)NS_PER_S)
#define IMPORT_SLOT_COUNT 8                       /* single thread, compression inline */
#define IMPORT_STRINGS_BYTES SP_IMPORT_NAME_BYTES /* fixed file overhead */
#define P2P_LINK_SLOTS (1u << 17)                 /* power of two; 2 MiB, allocated at the first p2p cpu op */
#define P2P_LINK_FILL_MAX (P2P_LINK_SLOTS / 4 * 3)
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

/* Kineto writes a trace by class, not by time: every host-side op first,
 * then runtime calls and GPU activity.  The analyzer expects each
 * recording thread's events in time order, so each class (lane) is written
 * as a logical thread of its own (sp_writer_append_as, tid LANE_TID_BASE +
 * lane), in one pass over the input; within a class Kineto's order is
 * time order, up to the GPU record lag the analyzer measures per thread.
 * All GPU activity shares one lane: the NCCL event synthesized from a
 * kernel goes with it, and a per-stream split would change nothing the
 * analyzer keys on. */
enum lane {
    LANE_HOST_RANGES,
    LANE_CUDA,
    LANE_GPU,
    LANES
};
#define LANE_TID_BASE 1 /* tids 1, 2, 3: never 0, which reads as "no thread" */

struct intern_slot {
    uint64_t hash; /* 0: empty */
    uint32_t id;
};

struct comm_seq {
    uint64_t comm, last; /* last: the collectives' sequence number */
    uint64_t last_p2p;   /* sends and receives, numbered apart (PyTorch does) */
};

/* A record_param_comms cpu op of a send or recv: its External id, which its
 * kernel carries too, and the peer it names (a rank of the group). */
struct p2p_link {
    uint64_t ext_plus1; /* 0: empty */
    int64_t peer;
};

struct importer {
    struct sp_writer *w;
    struct sp_import_summary *sum;
    struct intern_slot *interned;
    size_t interned_n;
    struct comm_seq comms[COMMS_MAX];
    size_t ncomms;
    struct p2p_link *links; /* NULL until a p2p cpu op names its peer */
    size_t nlinks;
    int64_t main_pid;
    uint64_t offset; /* byte of the JSON text where the current event began */
    int lane;        /* the lane of the event being written */
    int have_time;
    uint64_t min_t, max_end;
};

/* ---- small pure mappings ---------------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

static int cat_is(const char *cat, const char *modern, const char *legacy)
{
    return !strcmp(cat, modern) || (legacy && !strcmp(cat, legacy));
}

static int starts_with(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

int sp_import_copy_kind(const char *name)
{
    // clang-format off
    static const struct { const char *tag; int kind; } tags[] = {
        {"HtoD", SP_COPY_H2D}, {"DtoH", SP_COPY_D2H}, {"DtoD", SP_COPY_D2D},
        {"HtoH", SP_COPY_H2H}, {"PtoP", SP_COPY_D2D},
    };
    // clang-format on
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
        if (strstr(name, tags[i].tag))
            return tags[i].kind;
    return SP_COPY_UNKNOWN;
}

/* One side of Kineto's "(Pageable -> Device)". */
static int mem_kind_word(const char *w, size_t n)
{
    // clang-format off
    static const struct { const char *word; int kind; } words[] = {
        {"Pageable", SP_MEM_PAGEABLE}, {"Pinned", SP_MEM_PINNED}, {"Device", SP_MEM_DEVICE},
        {"Managed", SP_MEM_MANAGED},   {"Array", SP_MEM_OTHER},
    };
    // clang-format on
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strlen(words[i].word) == n && !strncmp(w, words[i].word, n))
            return words[i].kind;
    return SP_MEM_UNKNOWN;
}

void sp_import_mem_kinds(const char *name, int *src, int *dst)
{
    *src = *dst = SP_MEM_UNKNOWN;
    const char *open = strchr(name, '('), *arrow = open ? strstr(open, " -> ") : NULL;
    const char *close = arrow ? strchr(arrow, ')') : NULL;
    if (!close)
        return;
    *src = mem_kind_word(open + 1, (size_t)(arrow - open - 1));
    *dst = mem_kind_word(arrow + 4, (size_t)(close - arrow - 4));
}

int sp_import_cuda_api(const char *name)
{
    /* Order matters: the first prefix that matches wins. */
    // clang-format off
    static const struct { const char *prefix; int api; } apis[] = {
        {"cudaLaunchKernel", SP_CUDA_LAUNCH}, {"cudaLaunchCooperativeKernel", SP_CUDA_LAUNCH},
        {"cuLaunchKernel", SP_CUDA_LAUNCH}, {"cuLaunchCooperativeKernel", SP_CUDA_LAUNCH},
        {"__cudaLaunchKernel", SP_CUDA_LAUNCH},
        {"cudaGraphLaunch", SP_CUDA_GRAPH_LAUNCH}, {"cuGraphLaunch", SP_CUDA_GRAPH_LAUNCH},
        {"cudaDeviceSynchronize", SP_CUDA_DEVICE_SYNC}, {"cuCtxSynchronize", SP_CUDA_DEVICE_SYNC},
        {"cudaStreamSynchronize", SP_CUDA_STREAM_SYNC}, {"cuStreamSynchronize", SP_CUDA_STREAM_SYNC},
        {"cudaEventSynchronize", SP_CUDA_EVENT_SYNC}, {"cuEventSynchronize", SP_CUDA_EVENT_SYNC},
        {"cudaStreamWaitEvent", SP_CUDA_STREAM_WAIT_EVENT}, {"cuStreamWaitEvent", SP_CUDA_STREAM_WAIT_EVENT},
        {"cudaMemsetAsync", SP_CUDA_MEMSET}, {"cudaMemset", SP_CUDA_MEMSET}, {"cuMemset", SP_CUDA_MEMSET},
        {"cudaSetDevice", SP_CUDA_SET_DEVICE},
        {"cudaMalloc", SP_CUDA_MALLOC}, {"cuMemAlloc", SP_CUDA_MALLOC},
        {"cudaFree", SP_CUDA_FREE}, {"cuMemFree", SP_CUDA_FREE},
    };
    // clang-format on
    for (size_t i = 0; i < sizeof apis / sizeof apis[0]; i++)
        if (starts_with(name, apis[i].prefix))
            return apis[i].api;
    if (starts_with(name, "cudaMemcpy") || starts_with(name, "cuMemcpy"))
        return strstr(name, "Async") ? SP_CUDA_MEMCPY_ASYNC : SP_CUDA_MEMCPY;
    return 0;
}

int sp_import_is_nccl_kernel(const char *name)
{
    return starts_with(name, "ncclKernel_") || starts_with(name, "ncclDevKernel_");
}

/* Lower-case letters and digits only: "_all_gather_base" -> "allgatherbase". */
static void squash(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s && n + 1 < cap; s++) {
        char c = *s;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
            out[n++] = c;
    }
    out[n] = 0;
}

/* First word that names an operation, in the squashed text. */
static int op_from_text(const char *squashed)
{
    // clang-format off
    static const struct { const char *word; int op; } ops[] = {
        {"allreduce", SP_NCCL_ALLREDUCE}, {"reducescatter", SP_NCCL_REDUCESCATTER},
        {"allgather", SP_NCCL_ALLGATHER}, {"alltoall", SP_NCCL_ALLTOALL},
        {"broadcast", SP_NCCL_BROADCAST}, {"sendrecv", SP_NCCL_SEND},
        {"send", SP_NCCL_SEND}, {"recv", SP_NCCL_RECV}, {"reduce", SP_NCCL_REDUCE},
    };
    // clang-format on
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strstr(squashed, ops[i].word))
            return ops[i].op;
    return 0;
}

int sp_import_nccl_op(const char *collective, const char *kernel_name)
{
    char buf[SP_KINETO_SHORT_MAX];
    if (collective && *collective) {
        squash(collective, buf, sizeof buf);
        int op = op_from_text(buf);
        if (op)
            return op;
    }
    /* ncclKernel_AllReduce_RING_LL_Sum_float: the word after the prefix. */
    const char *p = strchr(kernel_name, '_');
    if (!p)
        return 0;
    size_t n = strcspn(p + 1, "_(");
    char word[SP_KINETO_SHORT_MAX];
    snprintf(word, sizeof word, "%.*s", (int)n, p + 1);
    squash(word, buf, sizeof buf);
    return op_from_text(buf);
}

int sp_import_dtype(const char *dtype, unsigned *size)
{
    /* PyTorch's scalar type names as Kineto writes them; the sizes are the
     * format's table (sp_nccl_dtype_size). */
    // clang-format off
    static const struct { const char *name; enum sp_nccl_dtype nccl; } types[] = {
        {"Float", SP_DTYPE_FLOAT32}, {"Half", SP_DTYPE_FLOAT16}, {"BFloat16", SP_DTYPE_BFLOAT16},
        {"Double", SP_DTYPE_FLOAT64}, {"Long", SP_DTYPE_INT64}, {"Int", SP_DTYPE_INT32},
        {"Char", SP_DTYPE_INT8}, {"Byte", SP_DTYPE_UINT8}, {"Bool", SP_DTYPE_UINT8},
        {"Float8_e4m3fn", SP_DTYPE_FP8E4M3}, {"Float8_e5m2", SP_DTYPE_FP8E5M2},
    };
    // clang-format on
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(dtype, types[i].name)) {
            *size = sp_nccl_dtype_size(types[i].nccl);
            return types[i].nccl;
        }
    *size = 0;
    return -1;
}

static int is_dataloader_wait(const char *name)
{
    return strstr(name, "DataLoader") && strstr(name, "__next__");
}

/* ---- writing ------------------------------------------------------------------ */

static void over_bound(struct importer *im, enum sp_import_bound b)
{
    if (!im->sum->bounds[b].n++)
        im->sum->bounds[b].offset = im->offset;
}

static uint32_t intern(struct importer *im, const char *s, size_t len)
{
    uint64_t h = fnv1a(FNV_OFFSET, s, len) | 1; /* never 0: 0 marks empty */
    size_t i = h & (INTERN_SLOTS - 1);
    while (im->interned[i].hash) {
        if (im->interned[i].hash == h)
            return im->interned[i].id;
        i = (i + 1) & (INTERN_SLOTS - 1);
    }
    uint32_t id = im->interned_n < INTERN_FILL_MAX ? sp_writer_intern(im->w, s, len) : 0;
    if (!id) {
        over_bound(im, SP_BOUND_NAMES);
        return 0;
    }
    im->interned[i].hash = h;
    im->interned[i].id = id;
    im->interned_n++;
    return id;
}

static void append(struct importer *im, const struct sp_event *ev, uint64_t dur)
{
    if (sp_writer_append_as(im->w, ev, (uint32_t)(LANE_TID_BASE + im->lane))) {
        im->sum->dropped++;
        return;
    }
    im->sum->events++;
    uint64_t end = ev->t + dur;
    if (!im->have_time || ev->t < im->min_t)
        im->min_t = ev->t;
    if (!im->have_time || end > im->max_end)
        im->max_end = end;
    im->have_time = 1;
}

static void count_skipped(struct sp_import_summary *sum, const struct sp_kineto_event *k)
{
    const int last = SP_IMPORT_SKIP_KINDS - 1; /* the "other" bucket */
    char what[32];
    if (k->cat[0])
        snprintf(what, sizeof what, "%.31s", k->cat);
    else
        snprintf(what, sizeof what, "ph:%.7s", k->ph[0] ? k->ph : "?");
    sum->skipped_total++;
    for (int i = 0; i < last; i++) {
        if (!sum->skipped[i].cat[0])
            snprintf(sum->skipped[i].cat, sizeof sum->skipped[i].cat, "%s", what);
        if (!strcmp(sum->skipped[i].cat, what)) {
            sum->skipped[i].n++;
            return;
        }
    }
    snprintf(sum->skipped[last].cat, sizeof sum->skipped[last].cat, "other");
    sum->skipped[last].n++;
}

static uint64_t event_time(const struct sp_kineto_event *k)
{
    return k->ts_ns > 0 ? (uint64_t)k->ts_ns : 0;
}

static uint64_t event_dur(const struct sp_kineto_event *k)
{
    return k->dur_ns > 0 ? (uint64_t)k->dur_ns : 0;
}

static struct sp_event new_event(int type, const struct sp_kineto_event *k)
{
    struct sp_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = (uint8_t)type;
    ev.tid = k->tid > 0 ? (uint32_t)k->tid : 0;
    ev.t = event_time(k);
    return ev;
}

static uint64_t total_threads(const struct sp_kineto_event *k)
{
    if (!k->grid_n || !k->block_n)
        return 0;
    uint64_t n = 1;
    for (int i = 0; i < k->grid_n; i++)
        n *= k->grid[i];
    for (int i = 0; i < k->block_n; i++)
        n *= k->block[i];
    return n;
}

static int64_t gpu_device(const struct sp_kineto_event *k)
{
    return k->device >= 0 ? k->device : k->pid; /* GPU rows use the device as pid */
}

static void write_gpu(struct importer *im, const struct sp_kineto_event *k, int kind)
{
    struct sp_event ev = new_event(SP_EV_GPU, k);
    ev.gpu.dur = event_dur(k);
    ev.gpu.kind = (uint64_t)kind;
    ev.gpu.device = gpu_device(k);
    ev.gpu.stream = k->stream > 0 ? (uint64_t)k->stream : 0;
    ev.gpu.correlation = k->correlation > 0 ? (uint64_t)k->correlation : 0;
    ev.gpu.name = intern(im, k->name, k->name_len);
    if (kind == SP_GPU_MEMCPY) {
        int src, dst;
        ev.gpu.copy_kind = (uint64_t)sp_import_copy_kind(k->name);
        sp_import_mem_kinds(k->name, &src, &dst);
        ev.gpu.src_mem = (uint64_t)src;
        ev.gpu.dst_mem = (uint64_t)dst;
    }
    if (kind == SP_GPU_MEMCPY || kind == SP_GPU_MEMSET)
        ev.gpu.bytes = k->bytes;
    else
        ev.gpu.grid = total_threads(k);
    append(im, &ev, ev.gpu.dur);
}

/* The communicator: the process group's name is the same on every rank;
 * without it the NCCL stream number is the best shared identity a trace
 * offers (PyTorch creates one stream per communicator, in the same order
 * on every rank). */
static uint64_t comm_id(const struct sp_kineto_event *k)
{
    char key[SP_KINETO_SHORT_MAX + 32];
    int n = k->has_pg_name ? snprintf(key, sizeof key, "pg:%s", k->pg_name)
                           : snprintf(key, sizeof key, "stream:%lld", (long long)k->stream);
    return fnv1a(FNV_OFFSET, key, (size_t)n) | 1;
}

/* Next sequence number on `comm`: the trace's "Seq" when it has one,
 * else a count of this communicator's kernels in trace order. */
/* The communicator's sequence counter, added when there is room; NULL
 * past SP_IMPORT_COMMS_MAX communicators. */
static struct comm_seq *comm_entry(struct importer *im, uint64_t comm)
{
    for (size_t i = 0; i < im->ncomms; i++)
        if (im->comms[i].comm == comm)
            return &im->comms[i];
    if (im->ncomms == COMMS_MAX)
        return NULL;
    struct comm_seq *c = &im->comms[im->ncomms++];
    c->comm = comm;
    c->last = c->last_p2p = 0;
    return c;
}

/* The peer of a send or recv as a rank of its process group: PyTorch
 * writes the peer's global rank ("Dst Rank" on a send, "Src Rank" on a
 * recv) beside the group's ranks; -1 when the trace does not say. */
static int64_t p2p_peer(const struct sp_kineto_event *k, const struct sp_kineto_meta *meta, int op)
{
    int64_t global = op == SP_NCCL_SEND ? k->dst_rank : (op == SP_NCCL_RECV ? k->src_rank : -1);
    if (global < 0)
        return -1;
    int64_t index = sp_kineto_group_index(k, global);
    if (index >= 0)
        return index;
    /* no ranks listed: only a group of the whole world says who it is */
    if (!k->group_n && !k->group_elided && k->group_size > 0 && k->group_size == meta->world_size)
        return global;
    return -1;
}

/* The peer a send's or recv's cpu op names: "Dst Rank"/"Src Rank" when
 * the profiler wrote them, else "Rank", which for a send or recv is the
 * peer's rank in the group. */
static int64_t cpu_op_peer(const struct sp_kineto_event *k, const struct sp_kineto_meta *meta, int op)
{
    int64_t peer = p2p_peer(k, meta, op);
    if (peer < 0 && k->rank_arg >= 0 && (k->group_size <= 0 || k->rank_arg < k->group_size))
        peer = k->rank_arg;
    return peer;
}

static struct p2p_link *link_slot(struct p2p_link *links, int64_t ext)
{
    uint64_t key = (uint64_t)ext + 1; /* ext >= 0: never 0, never overflows */
    size_t i = (size_t)(fnv1a(FNV_OFFSET, &key, sizeof key) & (P2P_LINK_SLOTS - 1));
    while (links[i].ext_plus1 && links[i].ext_plus1 != key)
        i = (i + 1) & (P2P_LINK_SLOTS - 1);
    return &links[i];
}

/* Kineto writes the host ops before the GPU activity, so a kernel that
 * lacks its peer (older Kineto copies no Src/Dst Rank onto kernels) finds
 * it here by the External id of the cpu op that launched it. */
static void note_p2p_cpu_op(struct importer *im, const struct sp_kineto_event *k, const struct sp_kineto_meta *meta)
{
    if (k->external_id < 0 || strcmp(k->name, "record_param_comms"))
        return;
    int op = sp_import_nccl_op(k->collective, "");
    if (op != SP_NCCL_SEND && op != SP_NCCL_RECV)
        return;
    int64_t peer = cpu_op_peer(k, meta, op);
    if (peer < 0 || im->nlinks >= P2P_LINK_FILL_MAX)
        return; /* past the table: its kernel is counted as naming no peer */
    if (!im->links && !(im->links = calloc(P2P_LINK_SLOTS, sizeof *im->links)))
        return;
    struct p2p_link *l = link_slot(im->links, k->external_id);
    if (!l->ext_plus1)
        im->nlinks++;
    *l = (struct p2p_link){(uint64_t)k->external_id + 1, peer};
}

static int64_t linked_peer(const struct importer *im, const struct sp_kineto_event *k)
{
    if (!im->links || k->external_id < 0)
        return -1;
    const struct p2p_link *l = link_slot(im->links, k->external_id);
    return l->ext_plus1 ? l->peer : -1;
}

static void write_nccl(struct importer *im, const struct sp_kineto_event *k, const struct sp_kineto_meta *meta)
{
    struct sp_event ev = new_event(SP_EV_NCCL, k);
    unsigned size = 0;
    int dtype = sp_import_dtype(k->dtype, &size);
    ev.nccl.dur = 0; /* the trace has no host-side call to time */
    ev.nccl.comm = comm_id(k);
    struct comm_seq *c = comm_entry(im, ev.nccl.comm);
    if (!c) {
        over_bound(im, SP_BOUND_COMMS);
        return;
    }
    int op = sp_import_nccl_op(k->collective, k->name);
    int p2p = op == SP_NCCL_SEND || op == SP_NCCL_RECV;
    /* args "Seq" when the trace has it, else this communicator's count.
     * PyTorch counts a group's sends and receives apart from its
     * collectives, each rank its own: a p2p "Seq" is not shared with the
     * peer (the analyzer pairs p2p by sender, receiver and their k-th
     * message) and must not move the collectives' count. */
    if (p2p) {
        c->last_p2p = k->has_seq ? k->seq : c->last_p2p + 1;
        ev.nccl.seq = c->last_p2p;
    } else {
        c->last = k->has_seq ? k->seq : c->last + 1;
        ev.nccl.seq = c->last;
    }
    ev.nccl.op = (uint64_t)op;
    ev.nccl.count = k->in_nelems;
    ev.nccl.datatype = dtype >= 0 ? (uint64_t)dtype : SP_DTYPE_UNKNOWN;
    ev.nccl.bytes = k->in_nelems * size;
    ev.nccl.peer = p2p ? p2p_peer(k, meta, op) : -1;
    if (p2p && ev.nccl.peer < 0)
        ev.nccl.peer = linked_peer(im, k);
    ev.nccl.stream = k->stream > 0 ? (uint64_t)k->stream : 0;
    ev.nccl.nranks = k->group_size > 0 ? (uint64_t)k->group_size : 0;
    ev.nccl.rank = k->pg_rank >= 0                                            ? k->pg_rank
                   : (k->group_size > 0 && k->group_size == meta->world_size) ? meta->rank
                                                                              : -1;
    ev.nccl.correlation = k->correlation > 0 ? (uint64_t)k->correlation : 0;
    ev.nccl.gpu_start = event_time(k);
    ev.nccl.gpu_dur = event_dur(k);
    ev.nccl.device = gpu_device(k);
    im->sum->nccl++;
    if (p2p && ev.nccl.peer < 0)
        im->sum->p2p_no_peer++;
    append(im, &ev, 0);
}

static void write_cuda(struct importer *im, const struct sp_kineto_event *k, int api)
{
    struct sp_event ev = new_event(SP_EV_CUDA, k);
    ev.cuda.dur = event_dur(k);
    ev.cuda.api = (uint64_t)api;
    ev.cuda.correlation = k->correlation > 0 ? (uint64_t)k->correlation : 0;
    ev.cuda.device = k->device;
    ev.cuda.stream = k->stream > 0 ? (uint64_t)k->stream : 0;
    append(im, &ev, ev.cuda.dur);
}

static void write_step(struct importer *im, const struct sp_kineto_event *k)
{
    struct sp_event ev = new_event(SP_EV_MARKER, k);
    ev.marker.dur = event_dur(k);
    ev.marker.kind = SP_MARK_RANGE;
    ev.marker.name = intern(im, k->name, k->name_len);
    append(im, &ev, ev.marker.dur);
}

static void write_dataloader(struct importer *im, const struct sp_kineto_event *k)
{
    struct sp_event ev = new_event(SP_EV_WAIT, k);
    ev.wait.dur = event_dur(k);
    ev.wait.op = SP_WAIT_DATALOADER;
    ev.wait.timeout_ms = -1;
    ev.wait.fd_kind = SP_FD_UNKNOWN;
    append(im, &ev, ev.wait.dur);
}

static int is_host_category(const char *cat)
{
    return cat_is(cat, "cpu_op", "Operator") || cat_is(cat, "user_annotation", NULL) ||
           cat_is(cat, "cuda_runtime", "Runtime") || cat_is(cat, "python_function", NULL) ||
           cat_is(cat, "cuda_driver", NULL);
}

/* A complete event with no category: the host's ranges as PyTorch's
 * profiler without Kineto writes them (Kineto's own uncategorized events
 * are metadata, instants and flows, never "X"). */
static int is_uncategorized_range(const struct sp_kineto_event *k)
{
    return !k->cat[0] && !strcmp(k->ph, "X");
}

/* Which lane a Kineto event belongs to, or -1 when it is not mapped. */
static int classify(const struct sp_kineto_event *k)
{
    const char *cat = k->cat;
    if (strcmp(k->ph, "X") || !k->has_ts)
        return -1;
    if (cat_is(cat, "kernel", "Kernel") || cat_is(cat, "gpu_memcpy", "Memcpy") ||
        cat_is(cat, "gpu_memset", "Memset"))
        return LANE_GPU;
    if (cat_is(cat, "cuda_runtime", "Runtime") || cat_is(cat, "cuda_driver", NULL))
        return sp_import_cuda_api(k->name) ? LANE_CUDA : -1;
    if ((is_host_category(cat) || is_uncategorized_range(k)) &&
        (starts_with(k->name, "ProfilerStep#") || is_dataloader_wait(k->name)))
        return LANE_HOST_RANGES;
    return -1;
}

static void write_mapped(struct importer *im, const struct sp_kineto_event *k, const struct sp_kineto_meta *meta)
{
    const char *cat = k->cat;
    if (cat_is(cat, "kernel", "Kernel")) {
        int nccl = sp_import_is_nccl_kernel(k->name);
        write_gpu(im, k, nccl ? SP_GPU_NCCL_KERNEL : SP_GPU_KERNEL);
        im->sum->kernels++;
        if (nccl)
            write_nccl(im, k, meta);
    } else if (cat_is(cat, "gpu_memcpy", "Memcpy")) {
        write_gpu(im, k, SP_GPU_MEMCPY);
        im->sum->memcpy++;
    } else if (cat_is(cat, "gpu_memset", "Memset")) {
        write_gpu(im, k, SP_GPU_MEMSET);
        im->sum->memset++;
    } else if (im->lane == LANE_CUDA) {
        write_cuda(im, k, sp_import_cuda_api(k->name));
        im->sum->cuda++;
    } else if (starts_with(k->name, "ProfilerStep#")) {
        write_step(im, k);
        im->sum->steps++;
    } else {
        write_dataloader(im, k);
        im->sum->dataloader++;
    }
}

static int on_event(void *ctx, const struct sp_kineto_event *k, const struct sp_kineto_meta *meta)
{
    struct importer *im = ctx;
    int lane = classify(k);
    im->offset = k->offset;
    if (im->main_pid < 0 && k->pid >= 0 && (is_host_category(k->cat) || is_uncategorized_range(k)))
        im->main_pid = k->pid;
    if (lane < 0) {
        if (k->collective[0] && cat_is(k->cat, "cpu_op", "Operator"))
            note_p2p_cpu_op(im, k, meta);
        count_skipped(im->sum, k);
        return 0;
    }
    im->lane = lane;
    write_mapped(im, k, meta);
    return 0;
}

/* ---- the output file ------------------------------------------------------------ */

static int make_dir(const char *path, char *err, size_t errlen)
{
    if (mkdir(path, 0755) && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static struct sp_writer *create_output(const char *tmp, char *err, size_t errlen)
{
    struct sp_writer_opts o;
    memset(&o, 0, sizeof o);
    o.background = 0; /* one thread: compress inline when a slot fills */
    o.slot_count = IMPORT_SLOT_COUNT;
    o.strings_size = IMPORT_STRINGS_BYTES;
    o.mode = 0644;
    int e = 0;
    struct sp_writer *w = sp_writer_create(tmp, &o, &e);
    if (!w) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, sp_strerror(e));
        return NULL;
    }
    static const char source[] = "import:kineto";
    sp_writer_add_tlv(w, SP_TLV_SOURCE, source, sizeof source - 1);
    sp_writer_add_tlv(w, SP_TLV_HOST, SP_IMPORT_HOST, sizeof SP_IMPORT_HOST - 1);
    return w;
}

/* The (mono, real) pair at start and end, on the trace's clock. */
struct clocks {
    uint64_t start_mono, start_real, end_mono, end_real;
};

static struct clocks trace_clocks(const struct importer *im, const struct sp_kineto_meta *meta)
{
    struct clocks c = {im->min_t, 0, im->max_end, 0};
    if (meta->has_base) {
        c.start_real = meta->base_ns + c.start_mono;
        c.end_real = meta->base_ns + c.end_mono;
    } else if (c.start_mono > EPOCH_2000_NS) {
        /* Older Kineto wrote wall-clock microseconds. */
        c.start_real = c.start_mono;
        c.end_real = c.end_mono;
    }
    return c;
}

static void fill_header(struct sp_writer *w, const struct importer *im, const struct sp_kineto_meta *meta,
                        const struct clocks *c)
{
    struct sp_file_header *h = sp_writer_header(w);
    h->pid = (int32_t)(im->main_pid >= 0 ? im->main_pid : 0);
    h->ppid = 0;
    /* PyTorch writes distributedInfo whenever torch.distributed is
     * initialized: without it the job was a single process, rank 0 of 1. */
    h->rank = (int32_t)(meta->has_dist ? meta->rank : 0);
    h->world_size = (int32_t)(meta->has_dist ? meta->world_size : 1);
    h->local_rank = -1;
    h->local_world_size = -1;
    h->start_mono = c->start_mono;
    h->start_real = c->start_real;
    h->flags |= SP_FLAG_IMPORTED | SP_FLAG_NO_FILE_IO | SP_FLAG_NO_CPU;
    /* The end pair is the trace's too, not the importing machine's. */
    sp_writer_set_end_clocks(w, c->end_mono, c->end_real);
}

static int place_output(const char *tmp, const char *final, int force, char *err, size_t errlen)
{
    if (!force && access(final, F_OK) == 0) {
        snprintf(err, errlen, "%s exists (use --force to replace it)", final);
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, final)) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, final, strerror(errno));
        return -1;
    }
    return 0;
}

/* Rank and world size as the header can hold them: 0 <= rank < world_size
 * <= SP_IMPORT_RANKS_MAX, or both unknown (-1). */
static void bound_ranks(struct importer *im, struct sp_kineto_meta *meta)
{
    int64_t r = meta->rank, n = meta->world_size;
    if (!meta->has_dist || (r == -1 && n == -1) ||
        (n >= 1 && n <= SP_IMPORT_RANKS_MAX && r >= 0 && r < n))
        return;
    im->offset = meta->dist_offset;
    over_bound(im, SP_BOUND_RANKS);
    meta->rank = meta->world_size = -1;
}

static int finish_output(struct importer *im, const char *tmp, const char *hostdir, char *err,
                         size_t errlen)
{
    struct sp_import_summary *sum = im->sum;
    bound_ranks(im, &sum->meta);
    struct clocks c = trace_clocks(im, &sum->meta);
    fill_header(im->w, im, &sum->meta, &c);
    int rc = sp_writer_close(im->w);
    im->w = NULL;
    if (rc) {
        snprintf(err, errlen, "cannot close %s: %s", tmp, sp_strerror(rc));
        return -1;
    }
    sum->pid = im->main_pid >= 0 ? im->main_pid : 0;
    snprintf(sum->out_path, sizeof sum->out_path, "%s/%lld.sprof", hostdir, (long long)sum->pid);
    snprintf(sum->tmp_path, sizeof sum->tmp_path, "%s", tmp);
    return 0;
}

/* The rank an existing trace holds, -2 when it cannot be read. */
static int trace_rank(const char *path)
{
    int err = 0;
    struct sp_reader *r = sp_reader_open(path, &err);
    if (!r)
        return -2;
    int rank = sp_reader_info(r)->hdr.rank;
    sp_reader_close(r);
    return rank;
}

/* Two ranks may share a pid (nodes, containers): a trace of another rank
 * at <pid>.sprof is never replaced, --force or not; this one goes to
 * <pid>.r<rank>.sprof (or <pid>.<n>.sprof when that is taken too). */
static int other_rank_name(struct sp_import_summary *sum)
{
    char base[sizeof sum->out_path];
    size_t l = strlen(sum->out_path);
    if (l < 6 || l >= sizeof base)
        return -1;
    memcpy(base, sum->out_path, l - 6); /* without ".sprof" */
    base[l - 6] = 0;
    for (int n = 0; n < 1000; n++) {
        char next[sizeof sum->out_path + 32];
        int mine = trace_rank(sum->tmp_path);
        if (n == 0 && mine >= 0)
            snprintf(next, sizeof next, "%s.r%d.sprof", base, mine);
        else
            snprintf(next, sizeof next, "%s.%d.sprof", base, n + 1);
        if (strlen(next) >= sizeof sum->out_path)
            return -1;
        int held = access(next, F_OK) == 0 ? trace_rank(next) : -3;
        if (held == -3 || held == mine) {
            snprintf(sum->out_path, sizeof sum->out_path, "%s", next);
            return held == -3 ? 0 : 1; /* 1: the same rank's file: replace with --force only */
        }
    }
    return -1;
}

int sp_import_kineto_place(struct sp_import_summary *sum, const struct sp_import_opts *opts, char *err,
                           size_t errlen)
{
    if (!sum->tmp_path[0])
        return 0;
    int force = opts->force;
    if (access(sum->out_path, F_OK) == 0) {
        /* the ranks as the headers say (the converted one's included) */
        int held = trace_rank(sum->out_path), mine = trace_rank(sum->tmp_path);
        if (held != mine) { /* the same rank: a re-import */
            char was[sizeof sum->out_path];
            snprintf(was, sizeof was, "%s", sum->out_path);
            int same = other_rank_name(sum);
            if (same < 0) {
                snprintf(err, errlen, "%s holds another rank's trace and no other name is free", was);
                unlink(sum->tmp_path);
                sum->tmp_path[0] = 0;
                sum->out_path[0] = 0;
                return -1;
            }
            if (same == 0)
                force = 1; /* a fresh name: nothing to replace */
        }
    }
    int rc = place_output(sum->tmp_path, sum->out_path, force, err, errlen);
    if (rc)
        sum->out_path[0] = 0; /* nothing was written there */
    sum->tmp_path[0] = 0;
    return rc;
}

/* Append to err one message per bound passed; returns how many. */
static int format_bounds(const struct sp_import_summary *sum, const char *in, char *err, size_t errlen)
{
    int n = 0;
    for (int b = 0; b < SP_BOUNDS; b++) {
        unsigned long long count = (unsigned long long)sum->bounds[b].n;
        char line[256];
        if (!count)
            continue;
        if (b == SP_BOUND_NAMES)
            snprintf(line, sizeof line,
                     "more than %d distinct names (or %u bytes of them): %llu events written without their name",
                     SP_IMPORT_NAMES_MAX, SP_IMPORT_NAME_BYTES, count);
        else if (b == SP_BOUND_COMMS)
            snprintf(line, sizeof line,
                     "more than %d communicators (process groups): %llu collectives not written (their kernels are)",
                     SP_IMPORT_COMMS_MAX, count);
        else
            snprintf(line, sizeof line,
                     "distributedInfo not within 0 <= rank < world_size <= %d: rank and world size written as unknown",
                     SP_IMPORT_RANKS_MAX);
        size_t used = strlen(err);
        snprintf(err + used, errlen - used, "%s%s: input bound: %s, the first at byte %llu", used ? "; " : "", in,
                 line, (unsigned long long)sum->bounds[b].offset);
        n++;
    }
    return n;
}

int sp_import_kineto_file(const char *in, const struct sp_import_opts *opts,
                          struct sp_import_summary *sum, char *err, size_t errlen)
{
    int rc = sp_import_kineto_convert(in, opts, sum, err, errlen);
    if (sp_import_kineto_place(sum, opts, err, errlen))
        return -1;
    return rc;
}

/* The reason for a trace of which no event maps; returns -1. */
static int nothing_imported(const struct sp_import_summary *sum, const char *in, char *err, size_t errlen)
{
    if (!sum->read.events) {
        snprintf(err, errlen, "%s: nothing could be imported: the trace holds no event", in);
        return -1;
    }
    size_t n = (size_t)snprintf(err, errlen,
                                "%s: nothing could be imported: %llu trace event%s read, none a GPU kernel, "
                                "copy or memset, a CUDA runtime call, a ProfilerStep#N range or a DataLoader "
                                "__next__ wait",
                                in, (unsigned long long)sum->read.events, sum->read.events == 1 ? "" : "s");
    for (int i = 0; i < SP_IMPORT_SKIP_KINDS && sum->skipped[i].n && n < errlen; i++)
        n += (size_t)snprintf(err + n, errlen - n, "%s %llu %s", i ? "," : " (skipped:",
                              (unsigned long long)sum->skipped[i].n, sum->skipped[i].cat);
    if (sum->skipped_total && n < errlen)
        snprintf(err + n, errlen - n, ")");
    return -1;
}

int sp_import_kineto_convert(const char *in, const struct sp_import_opts *opts,
                             struct sp_import_summary *sum, char *err, size_t errlen)
{
    static unsigned serial; /* atomic: conversions run in parallel */
    char hostdir[4096], tmp[4096 + 64];
    struct importer im;
    memset(sum, 0, sizeof *sum);
    memset(&im, 0, sizeof im);
    im.sum = sum;
    im.main_pid = -1;
    err[0] = 0;
    if (access(in, R_OK)) { /* before any output exists */
        snprintf(err, errlen, "%s: cannot open: %s", in, strerror(errno));
        return -1;
    }
    snprintf(hostdir, sizeof hostdir, "%s/%s", opts->outdir, SP_IMPORT_HOST);
    if (make_dir(opts->outdir, err, errlen) || make_dir(hostdir, err, errlen))
        return -1;
    snprintf(tmp, sizeof tmp, "%s/.import-%d-%u.tmp", hostdir, (int)getpid(),
             __atomic_fetch_add(&serial, 1, __ATOMIC_RELAXED));
    unlink(tmp); /* a leftover of a crashed import with our pid */
    im.interned = calloc(INTERN_SLOTS, sizeof *im.interned);
    if (!im.interned) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    im.w = create_output(tmp, err, errlen);
    if (!im.w) {
        free(im.interned);
        return -1;
    }
    int read_rc = sp_kineto_read(in, on_event, &im, &sum->meta, &sum->read);
    int rc, nothing = !read_rc && sum->meta.saw_trace_events && !sum->events;
    if (!sum->meta.saw_trace_events || nothing) {
        /* Not a Kineto trace, or nothing in it maps: nothing worth keeping. */
        sp_writer_close(im.w);
        unlink(tmp);
        rc = nothing ? nothing_imported(sum, in, err, errlen) : 0;
    } else {
        rc = finish_output(&im, tmp, hostdir, err, errlen);
    }
    free(im.interned);
    free(im.links);
    if (rc)
        return -1;
    if (read_rc)
        snprintf(err, errlen, "%s", sum->read.err);
    return format_bounds(sum, in, err, errlen) || read_rc ? -1 : 0;
}

void sp_import_format_summary(const struct sp_import_summary *s, char *buf, size_t len)
{
    size_t n = 0;
#define PUT(...) (n += (size_t)snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__))
    PUT("imported %llu events: %llu kernels (%llu nccl), %llu memcpy, %llu memset, %llu cuda, "
        "%llu steps, %llu dataloader",
        (unsigned long long)s->events, (unsigned long long)s->kernels, (unsigned long long)s->nccl,
        (unsigned long long)s->memcpy, (unsigned long long)s->memset, (unsigned long long)s->cuda,
        (unsigned long long)s->steps, (unsigned long long)s->dataloader);
    if (s->dropped)
        PUT(", %llu dropped", (unsigned long long)s->dropped);
    if (s->p2p_no_peer)
        PUT("; %llu send/recv without their peer (no Src/Dst Rank on the kernel or its record_param_comms)",
            (unsigned long long)s->p2p_no_peer);
    if (s->skipped_total) {
        PUT("; skipped");
        for (int i = 0; i < SP_IMPORT_SKIP_KINDS && s->skipped[i].n; i++)
            PUT("%s %llu %s", i ? "," : "", (unsigned long long)s->skipped[i].n, s->skipped[i].cat);
    }
#undef PUT
}
