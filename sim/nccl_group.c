/*
 * nccl_group.c: collectives and point-to-point operations, groups, and
 * their time model.
 *
 * Every call (or every ncclGroupStart/End bracket) becomes one custom
 * operation on the user's stream per stream used, reported as one NCCL
 * kernel named as NCCL 2.28 names its kernels.  When the stream worker
 * reaches it, at virtual time `arrive`, it publishes its arrival (and its
 * data, when small enough) for every operation in the batch first, then
 * waits for the peers of each; so send/recv pairs inside a group never
 * deadlock.  An operation ends at
 *
 *   end = max(arrival over its ranks) + latency + bytes * factor / bandwidth
 *
 * with nccl-tests' bus-bandwidth factors: AllReduce 2(n-1)/n of the buffer,
 * AllGather and ReduceScatter (n-1)/n of the total, Broadcast, Reduce and
 * Send/Recv 1.  The bandwidth is SIM_NET_GBPS when the communicator spans
 * more than one host, SIM_NVLINK_GBPS otherwise.  Every rank computes the
 * same end from the same arrivals, so all finish together.  A rank that
 * never arrives leaves the others waiting, as on real GPUs, until
 * ncclCommAbort.
 */
#include "nccl_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_NCCL_MAX_GROUP 4096

// clang-format off
enum sim_coll {
    SIM_ALLREDUCE, SIM_BROADCAST, SIM_REDUCE, SIM_ALLGATHER, SIM_REDUCESCATTER,
    SIM_SEND, SIM_RECV,
};

static const char *const sim_coll_names[] = {
    "allreduce", "broadcast", "reduce", "allgather", "reducescatter", "send", "recv",
};
// clang-format on

struct sim_nccl_op {
    enum sim_coll coll;
    struct sim_comm *comm;
    const void *sendbuf;
    void *recvbuf;
    size_t count; /* elements as passed by the caller */
    ncclDataType_t type;
    ncclRedOp_t redop;
    int root; /* root, or peer for send/recv */
    cudaStream_t stream;
    uint64_t seq;
    uint64_t bytes; /* size in the nccl-tests convention */
    double factor;  /* bus-bandwidth factor */
    uint64_t arrive_ns, last_arrive_ns, end_ns;
    int failed;
};

struct sim_nccl_batch {
    int nops;
    struct sim_nccl_op *ops;
    uint32_t correlation;
    uint32_t stream_id;
    int device;
    char kernel_name[96];
};

static _Thread_local int sim_group_depth;
static _Thread_local struct sim_nccl_op *sim_group_ops;
static _Thread_local int sim_group_nops, sim_group_cap;
static _Thread_local ncclResult_t sim_group_error;

size_t sim_nccl_type_size(ncclDataType_t t)
{
    // clang-format off
    switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
    // clang-format on
}

/* ------------------------------------------------------------ kernel names */

static const char *sim_type_suffix(ncclDataType_t t)
{
    static const char *const s[] = {"i8", "u8", "i32", "u32", "i64", "u64",
                                    "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2"};
    return (unsigned)t < sizeof s / sizeof s[0] ? s[t] : "f32";
}

static const char *sim_redop_name(ncclRedOp_t op)
{
    switch (op) {
    case ncclSum: return "Sum";
    case ncclProd: return "Prod";
    case ncclMax:
    case ncclMin: return "MinMax";
    case ncclAvg: return "Sum";
    default: return "PreMulSum";
    }
}

static void sim_kernel_name(const struct sim_nccl_op *op, int has_p2p, char *buf, size_t size)
{
    if (has_p2p) {
        snprintf(buf, size, "ncclDevKernel_SendRecv");
        return;
    }
    switch (op->coll) {
    case SIM_ALLREDUCE:
        snprintf(buf, size, "ncclDevKernel_AllReduce_%s_%s_RING_LL", sim_redop_name(op->redop), sim_type_suffix(op->type));
        break;
    case SIM_REDUCE:
        snprintf(buf, size, "ncclDevKernel_Reduce_%s_%s_RING_LL", sim_redop_name(op->redop), sim_type_suffix(op->type));
        break;
    case SIM_REDUCESCATTER:
        snprintf(buf, size, "ncclDevKernel_ReduceScatter_%s_%s_RING_LL", sim_redop_name(op->redop), sim_type_suffix(op->type));
        break;
    case SIM_ALLGATHER: snprintf(buf, size, "ncclDevKernel_AllGather_RING_LL"); break;
    case SIM_BROADCAST: snprintf(buf, size, "ncclDevKernel_Broadcast_RING_LL"); break;
    default: snprintf(buf, size, "ncclDevKernel_SendRecv"); break;
    }
}

/* Kernel names must outlive the records that point at them: intern them. */
static const char *sim_intern(const char *name)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char **names;
    static int nnames;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nnames; i++)
        if (strcmp(names[i], name) == 0) {
            pthread_mutex_unlock(&lock);
            return names[i];
        }
    char **n = realloc(names, (size_t)(nnames + 1) * sizeof *n);
    const char *out = "ncclDevKernel";
    if (n) {
        names = n;
        names[nnames] = strdup(name);
        out = names[nnames] ? names[nnames++] : out;
    }
    pthread_mutex_unlock(&lock);
    return out;
}

/* ------------------------------------------------------------ data */

/* Elements are handled in three classes, each through its widest type:
 * integers as 64 bits (signed ones sign-extended), floating point as
 * double.  Half, bfloat16 and fp8 have no host arithmetic here: kept as is. */
enum sim_class {
    SIM_SIGNED,
    SIM_UNSIGNED,
    SIM_FLOAT,
    SIM_OPAQUE
};

static enum sim_class sim_class_of(ncclDataType_t t)
{
    // clang-format off
    switch (t) {
    case ncclInt8: case ncclInt32: case ncclInt64: return SIM_SIGNED;
    case ncclUint8: case ncclUint32: case ncclUint64: return SIM_UNSIGNED;
    case ncclFloat32: case ncclFloat64: return SIM_FLOAT;
    default: return SIM_OPAQUE;
    }
    // clang-format on
}

/* Element I of an integer array of SIZE-byte elements, as its bits: the
 * same load and store serve signed and unsigned types of one width. */
static uint64_t sim_get_bits(const void *p, size_t i, size_t size)
{
    switch (size) {
    case 1: return ((const uint8_t *)p)[i];
    case 4: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
    }
}

static void sim_set_bits(void *p, size_t i, size_t size, uint64_t v)
{
    switch (size) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case 4: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = v; break;
    }
}

/* The same element as 64 bits: a signed one with its sign extended. */
static uint64_t sim_get_int(const void *p, size_t i, size_t size, int is_signed)
{
    unsigned unused = 64 - 8 * (unsigned)size;
    uint64_t v = sim_get_bits(p, i, size);
    return is_signed ? (uint64_t)((int64_t)(v << unused) >> unused) : v;
}

static double sim_get_f(const void *p, size_t i, ncclDataType_t t)
{
    return t == ncclFloat32 ? ((const float *)p)[i] : ((const double *)p)[i];
}

static void sim_set_f(void *p, size_t i, ncclDataType_t t, double v)
{
    if (t == ncclFloat32)
        ((float *)p)[i] = (float)v;
    else
        ((double *)p)[i] = v;
}

/* a OP b; ncclAvg sums here and divides at the end. */
static double sim_combine_f(double a, double b, ncclRedOp_t op)
{
    switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return b > a ? b : a;
    case ncclMin: return b < a ? b : a;
    default: return a + b;
    }
}

/* The same on integers (signed ones sign-extended): a sum or a product
 * is the same bits signed or not (two's complement, wrapping); max and
 * min compare as the type does. */
static uint64_t sim_combine_int(uint64_t a, uint64_t b, ncclRedOp_t op, int is_signed)
{
    int b_above = is_signed ? (int64_t)b > (int64_t)a : b > a;
    switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return b_above ? b : a;
    case ncclMin: return b_above ? a : b;
    default: return a + b;
    }
}

/* dst[i] = dst[i] OP src[i] for N elements of type T. */
static void sim_reduce_into(void *dst, const void *src, size_t n, ncclDataType_t t, ncclRedOp_t op)
{
    enum sim_class c = sim_class_of(t);
    size_t w = sim_nccl_type_size(t);
    int sgn = c == SIM_SIGNED;
    for (size_t i = 0; i < n && c != SIM_OPAQUE; i++) {
        if (c == SIM_FLOAT)
            sim_set_f(dst, i, t, sim_combine_f(sim_get_f(dst, i, t), sim_get_f(src, i, t), op));
        else
            sim_set_bits(dst, i, w, sim_combine_int(sim_get_int(dst, i, w, sgn), sim_get_int(src, i, w, sgn), op, sgn));
    }
}

/* ncclAvg: the sum divided by the number of ranks. */
static void sim_divide(void *buf, size_t n, ncclDataType_t t, int by)
{
    enum sim_class c = sim_class_of(t);
    size_t w = sim_nccl_type_size(t);
    for (size_t i = 0; i < n && c != SIM_OPAQUE; i++) {
        if (c == SIM_FLOAT)
            sim_set_f(buf, i, t, sim_get_f(buf, i, t) / by);
        else if (c == SIM_SIGNED)
            sim_set_bits(buf, i, w, (uint64_t)((int64_t)sim_get_int(buf, i, w, 1) / by));
        else
            sim_set_bits(buf, i, w, sim_get_bits(buf, i, w) / (uint64_t)by);
    }
}

/* Bytes this rank contributes to the shared segment for OP. */
static size_t sim_contribution(const struct sim_nccl_op *op)
{
    size_t es = sim_nccl_type_size(op->type);
    if (op->coll == SIM_REDUCESCATTER)
        return op->count * (size_t)op->comm->nranks * es;
    return op->count * es;
}

static int sim_moves_data(const struct sim_nccl_op *op)
{
    return sim_contribution(op) <= SIM_NCCL_DATA_MAX;
}

static void sim_publish_data(struct sim_nccl_op *op)
{
    struct sim_comm *c = op->comm;
    if (!sim_moves_data(op) || !op->sendbuf)
        return;
    if ((op->coll == SIM_BROADCAST) && c->rank != op->root)
        return;
    memcpy(sim_shm_coll_data(c, op->seq, c->rank), op->sendbuf, sim_contribution(op));
}

/* Reduces element range [FIRST, FIRST+N) of all ranks' contributions. */
static void sim_reduce_all(struct sim_nccl_op *op, size_t first, size_t n, void *out)
{
    struct sim_comm *c = op->comm;
    size_t es = sim_nccl_type_size(op->type);
    memcpy(out, sim_shm_coll_data(c, op->seq, 0) + first * es, n * es);
    for (int r = 1; r < c->nranks; r++)
        sim_reduce_into(out, sim_shm_coll_data(c, op->seq, r) + first * es, n, op->type, op->redop);
    if (op->redop == ncclAvg)
        sim_divide(out, n, op->type, c->nranks);
}

static void sim_collect_data(struct sim_nccl_op *op)
{
    struct sim_comm *c = op->comm;
    size_t es = sim_nccl_type_size(op->type), n = op->count;
    if (!sim_moves_data(op) || !op->recvbuf)
        return;
    switch (op->coll) {
    case SIM_ALLREDUCE: sim_reduce_all(op, 0, n, op->recvbuf); break;
    case SIM_REDUCE:
        if (c->rank == op->root)
            sim_reduce_all(op, 0, n, op->recvbuf);
        break;
    case SIM_REDUCESCATTER: sim_reduce_all(op, (size_t)c->rank * n, n, op->recvbuf); break;
    case SIM_BROADCAST:
        memmove(op->recvbuf, sim_shm_coll_data(c, op->seq, op->root), n * es);
        break;
    case SIM_ALLGATHER:
        for (int r = 0; r < c->nranks; r++)
            memcpy((char *)op->recvbuf + (size_t)r * n * es, sim_shm_coll_data(c, op->seq, r), n * es);
        break;
    default: break;
    }
}

/* ------------------------------------------------------------ execution */

static double sim_bandwidth(struct sim_comm *c, int cross_node)
{
    (void)c;
    return cross_node ? sim_model()->net_gbps : sim_model()->nvlink_gbps;
}

static uint64_t sim_transfer_ns(const struct sim_nccl_op *op, int cross_node)
{
    double bw = sim_bandwidth(op->comm, cross_node); /* GB/s = bytes per ns */
    return (uint64_t)(sim_model()->nccl_latency_us * SIM_NS_PER_US + (double)op->bytes * op->factor / bw);
}

static int sim_is_p2p(const struct sim_nccl_op *op) { return op->coll == SIM_SEND || op->coll == SIM_RECV; }

static void sim_op_arrive(struct sim_nccl_op *op, uint64_t t)
{
    struct sim_comm *c = op->comm;
    op->arrive_ns = t;
    if (sim_is_p2p(op)) {
        int sender = op->coll == SIM_SEND;
        int from = sender ? c->rank : op->root, to = sender ? op->root : c->rank;
        char *data = sim_shm_p2p_data(c, from, to, op->seq);
        if (sender && data && op->bytes <= c->layout.p2p_data_max && op->sendbuf)
            memcpy(data, op->sendbuf, op->bytes);
        sim_shm_p2p_arrive(sim_shm_p2p_chan(c, from, to), sender, op->seq, t);
        return;
    }
    sim_publish_data(op);
    sim_shm_arrive(c, sim_shm_coll_slot(c, op->seq), op->seq, t);
}

static int sim_op_wait(struct sim_nccl_op *op)
{
    struct sim_comm *c = op->comm;
    int cross = c->cross_node;
    op->last_arrive_ns = op->arrive_ns;
    if (sim_is_p2p(op)) {
        int sender = op->coll == SIM_SEND;
        int from = sender ? c->rank : op->root, to = sender ? op->root : c->rank;
        uint64_t peer;
        if (sim_shm_p2p_wait(c, sim_shm_p2p_chan(c, from, to), sender, op->seq, &peer) != 0)
            return -1;
        if (peer > op->last_arrive_ns)
            op->last_arrive_ns = peer;
        char *data = sim_shm_p2p_data(c, from, to, op->seq);
        if (!sender && data && op->bytes <= c->layout.p2p_data_max && op->recvbuf)
            memcpy(op->recvbuf, data, op->bytes);
        cross = sim_shm_host_hash(c, from) != sim_shm_host_hash(c, to);
    } else {
        struct sim_shm_slot *s = sim_shm_coll_slot(c, op->seq);
        if (sim_shm_wait_all(c, s, op->seq) != 0)
            return -1;
        for (int r = 0; r < c->nranks; r++)
            if (s->value[r] > op->last_arrive_ns)
                op->last_arrive_ns = s->value[r];
        sim_collect_data(op);
    }
    op->end_ns = op->last_arrive_ns + sim_transfer_ns(op, cross);
    return cross;
}

static void sim_op_truth(const struct sim_nccl_op *op, const struct sim_nccl_batch *b, int cross)
{
    struct sim_comm *c = op->comm;
    double span = (double)(op->end_ns - op->last_arrive_ns);
    double busbw = span > 0 ? (double)op->bytes * op->factor / span : 0;
    char peer[32] = "";
    if (sim_is_p2p(op))
        snprintf(peer, sizeof peer, ",\"peer\":%d", op->root);
    char line[1024];
    snprintf(line, sizeof line,
             "{\"type\":\"collective\",\"op\":\"%s\",\"comm\":\"%s\",\"seq\":%llu,\"rank\":%d,"
             "\"nranks\":%d%s,\"bytes\":%llu,\"arrive_ns\":%llu,\"last_arrive_ns\":%llu,"
             "\"end_ns\":%llu,\"cross_node\":%s,\"busbw_gbps\":%.3f,\"device\":%d,\"stream\":%u,"
             "\"correlation\":%u,\"kernel\":\"%s\"%s}",
             sim_coll_names[op->coll], c->hash_hex, (unsigned long long)op->seq, c->rank,
             c->nranks, peer, (unsigned long long)op->bytes, (unsigned long long)op->arrive_ns,
             (unsigned long long)op->last_arrive_ns, (unsigned long long)op->end_ns,
             cross ? "true" : "false", busbw, b->device, b->stream_id, b->correlation,
             b->kernel_name, op->failed ? ",\"aborted\":true" : "");
    sim_truth_line(line);
}

/* The stream worker reached the batch at virtual time START. */
static uint64_t sim_batch_run(void *arg, uint64_t start, int *failed)
{
    struct sim_nccl_batch *b = arg;
    uint64_t end = start;
    for (int i = 0; i < b->nops; i++)
        sim_op_arrive(&b->ops[i], start);
    for (int i = 0; i < b->nops; i++) {
        struct sim_nccl_op *op = &b->ops[i];
        int cross = sim_op_wait(op);
        if (cross < 0) {
            op->failed = *failed = 1;
            op->end_ns = sim_now_ns();
            atomic_store(&op->comm->async_error, ncclRemoteError);
            cross = 0;
        }
        if (op->end_ns > end)
            end = op->end_ns;
        sim_op_truth(op, b, cross);
    }
    return end;
}

static void sim_batch_release(void *arg)
{
    struct sim_nccl_batch *b = arg;
    for (int i = 0; i < b->nops; i++)
        sim_comm_unref(b->ops[i].comm);
    free(b->ops);
    free(b);
}

/* ------------------------------------------------------------ groups */

static ncclResult_t sim_group_add(const struct sim_nccl_op *op)
{
    if (sim_group_nops == sim_group_cap) {
        int cap = sim_group_cap ? 2 * sim_group_cap : 16;
        struct sim_nccl_op *n = realloc(sim_group_ops, (size_t)cap * sizeof *n);
        if (!n || cap > SIM_NCCL_MAX_GROUP)
            return sim_nccl_set_error(ncclSystemError, "too many operations in one group");
        sim_group_ops = n;
        sim_group_cap = cap;
    }
    sim_group_ops[sim_group_nops++] = *op;
    return ncclSuccess;
}

/* Launches the pending operations of stream S as one batch. */
static ncclResult_t sim_launch_stream(cudaStream_t s, int *taken)
{
    struct sim_nccl_batch *b = calloc(1, sizeof *b);
    int n = 0, has_p2p = 0;
    for (int i = 0; i < sim_group_nops; i++)
        n += !taken[i] && sim_group_ops[i].stream == s;
    b->ops = b ? calloc((size_t)n, sizeof *b->ops) : NULL;
    if (!b || !b->ops) {
        free(b);
        return sim_nccl_set_error(ncclSystemError, "out of memory");
    }
    for (int i = 0; i < sim_group_nops; i++) {
        if (taken[i] || sim_group_ops[i].stream != s)
            continue;
        taken[i] = 1;
        b->ops[b->nops] = sim_group_ops[i];
        has_p2p |= sim_is_p2p(&b->ops[b->nops]);
        b->nops++;
    }
    sim_kernel_name(&b->ops[0], has_p2p, b->kernel_name, sizeof b->kernel_name);
    b->correlation = sim_next_correlation();
    b->device = sim_stream_device(s);
    b->stream_id = sim_stream_id(s);
    struct sim_custom_op op = {
        .run = sim_batch_run,
        .release = sim_batch_release,
        .arg = b,
        .kernel_name = sim_intern(b->kernel_name),
        .correlation = b->correlation,
    };
    if (sim_stream_enqueue_custom(s, &op) != 0) {
        sim_batch_release(b);
        return sim_nccl_set_error(ncclInvalidArgument, "invalid stream");
    }
    return ncclSuccess;
}

static ncclResult_t sim_group_flush(void)
{
    ncclResult_t r = sim_group_error;
    int *taken = calloc((size_t)sim_group_nops + 1, sizeof *taken);
    for (int i = 0; taken && r == ncclSuccess && i < sim_group_nops; i++)
        if (!taken[i])
            r = sim_launch_stream(sim_group_ops[i].stream, taken);
    if (r != ncclSuccess) /* what was not launched holds references */
        for (int i = 0; i < sim_group_nops; i++)
            if (!taken || !taken[i])
                sim_comm_unref(sim_group_ops[i].comm);
    free(taken);
    sim_group_nops = 0;
    sim_group_error = ncclSuccess;
    return r;
}

ncclResult_t pncclGroupStart(void)
{
    sim_group_depth++;
    return ncclSuccess;
}

/* Communicators made by ncclCommInitRank inside a group (one thread making
 * the ranks of several devices, nccl-tests -g): they have joined, and the
 * wait for their peers happens at the outermost ncclGroupEnd, as in NCCL. */
static _Thread_local struct sim_comm **sim_group_inits;
static _Thread_local int sim_group_ninits, sim_group_init_cap;

int sim_nccl_in_group(void) { return sim_group_depth > 0; }

int sim_nccl_defer_init(struct sim_comm *c)
{
    if (sim_group_ninits == sim_group_init_cap) {
        int cap = sim_group_init_cap ? 2 * sim_group_init_cap : 8;
        struct sim_comm **n = realloc(sim_group_inits, (size_t)cap * sizeof *n);
        if (!n)
            return -1;
        sim_group_inits = n;
        sim_group_init_cap = cap;
    }
    sim_group_inits[sim_group_ninits++] = c;
    return 0;
}

static void sim_group_finish_inits(void)
{
    for (int i = 0; i < sim_group_ninits; i++)
        sim_shm_wait_joined(sim_group_inits[i]);
    sim_group_ninits = 0;
}

ncclResult_t pncclGroupEnd(void)
{
    if (sim_group_depth == 0)
        return sim_nccl_set_error(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--sim_group_depth > 0)
        return ncclSuccess;
    sim_group_finish_inits();
    return sim_group_flush();
}

/* Validates and queues one operation; outside a group it launches at once. */
static ncclResult_t sim_submit(struct sim_nccl_op *op)
{
    struct sim_comm *c = op->comm;
    if (!c)
        return sim_nccl_set_error(ncclInvalidArgument, "NULL communicator");
    if (!sim_nccl_type_size(op->type))
        return sim_nccl_set_error(ncclInvalidArgument, "invalid data type %d", (int)op->type);
    if (op->root < 0 || op->root >= c->nranks)
        return sim_nccl_set_error(ncclInvalidArgument, "invalid root/peer %d", op->root);
    if (atomic_load(&c->aborted))
        return sim_nccl_set_error(ncclInvalidUsage, "communicator was aborted");
    int n = c->nranks;
    uint64_t es = sim_nccl_type_size(op->type);
    op->bytes = op->count * es;
    switch (op->coll) {
    case SIM_ALLREDUCE: op->factor = 2.0 * (n - 1) / n; break;
    case SIM_ALLGATHER:
    case SIM_REDUCESCATTER:
        op->bytes = op->count * es * (uint64_t)n;
        op->factor = (double)(n - 1) / n;
        break;
    default: op->factor = 1; break;
    }
    if (op->coll == SIM_SEND)
        op->seq = c->send_seq[op->root]++;
    else if (op->coll == SIM_RECV)
        op->seq = c->recv_seq[op->root]++;
    else
        op->seq = c->coll_seq++;
    atomic_fetch_add(&c->refs, 1);
    ncclResult_t r = sim_group_add(op);
    if (r != ncclSuccess) {
        sim_comm_unref(c);
        sim_group_error = r;
        return r;
    }
    return sim_group_depth ? ncclSuccess : sim_group_flush();
}

static ncclResult_t sim_coll(enum sim_coll coll, const void *sendbuf, void *recvbuf, size_t count,
                             ncclDataType_t type, ncclRedOp_t redop, int root, ncclComm_t comm,
                             cudaStream_t stream)
{
    struct sim_nccl_op op = {
        .coll = coll,
        .comm = (struct sim_comm *)comm,
        .sendbuf = sendbuf,
        .recvbuf = recvbuf,
        .count = count,
        .type = type,
        .redop = redop,
        .root = root,
        .stream = stream,
    };
    return sim_submit(&op);
}

ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream)
{
    return sim_coll(SIM_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
    return sim_coll(SIM_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream)
{
    return sim_coll(SIM_BROADCAST, buff, buff, count, datatype, ncclSum, root, comm, stream);
}

ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                         cudaStream_t stream)
{
    return sim_coll(SIM_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return sim_coll(SIM_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream);
}

ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                cudaStream_t stream)
{
    return sim_coll(SIM_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream);
}

ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream)
{
    return sim_coll(SIM_SEND, sendbuff, NULL, count, datatype, ncclSum, peer, comm, stream);
}

ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream)
{
    return sim_coll(SIM_RECV, NULL, recvbuff, count, datatype, ncclSum, peer, comm, stream);
}

extern __typeof(pncclGroupStart) ncclGroupStart __attribute__((weak, alias("pncclGroupStart")));
extern __typeof(pncclGroupEnd) ncclGroupEnd __attribute__((weak, alias("pncclGroupEnd")));
extern __typeof(pncclAllReduce) ncclAllReduce __attribute__((weak, alias("pncclAllReduce")));
extern __typeof(pncclBroadcast) ncclBroadcast __attribute__((weak, alias("pncclBroadcast")));
extern __typeof(pncclBcast) ncclBcast __attribute__((weak, alias("pncclBcast")));
extern __typeof(pncclReduce) ncclReduce __attribute__((weak, alias("pncclReduce")));
extern __typeof(pncclAllGather) ncclAllGather __attribute__((weak, alias("pncclAllGather")));
extern __typeof(pncclReduceScatter) ncclReduceScatter __attribute__((weak, alias("pncclReduceScatter")));
extern __typeof(pncclSend) ncclSend __attribute__((weak, alias("pncclSend")));
extern __typeof(pncclRecv) ncclRecv __attribute__((weak, alias("pncclRecv")));
