/*
 * nccl.c - the NCCL API: every collective, point-to-point and group call,
 * and the communicator lifecycle.
 *
 * Identity.  The analyzer matches one collective across ranks by
 * (communicator id, sequence number), never by position.  A communicator's
 * id is a 64-bit hash of its ncclUniqueId bytes, which every rank passes to
 * init, so every rank computes the same id without talking to the others.
 * A split communicator has no unique id of its own: its id hashes (parent
 * id, color, how many splits the parent has done).  ncclCommSplit is
 * collective over the parent, so that count is the same on every rank; the
 * key differs per rank and is deliberately left out.
 *
 * Sequence numbers.  Every collective on a communicator (allreduce,
 * broadcast, reduce, allgather, reducescatter, alltoall) takes the next
 * number of one shared per-communicator counter, from 1.  NCCL requires all
 * ranks to issue collectives on a communicator in the same order, so the
 * numbers agree across ranks.  Send and recv are not ordered across ranks
 * that way; their seq counts on a second counter of their own.  What pairs
 * them is peer_seq: NCCL delivers the messages between two ranks in issue
 * order, so each communicator keeps, per peer, how many messages this rank
 * sent to it and received from it (struct peer_counts, an array sized by
 * the rank count when the communicator is made: one relaxed atomic add per
 * call, no lock).  The send (comm, rank, peer, k) and the recv (comm, peer,
 * rank, k) are the two ends of one message.  Group start/end carry no
 * communicator (seq 0).
 *
 * The collectives and point-to-point calls are generated from one table
 * (NCCL_FUNCTIONS); the lifecycle and group calls, each different, are
 * written out, all on interpose.h's SP_REAL with nccl_resolve (the next
 * ncclX, else NCCL's pncclX alias).  A collective is the hot path: the
 * communicator lookup, the numbering, the call timed as a span (two
 * ticks and one conversion, preload.h) and the event,
 * encoded straight into the thread's slot (emit.h), are inlined into each
 * interposer of the table, where the op and what follows from it (the
 * bytes formula, the counter, a collective's peer) are constants.
 *
 * The communicator table maps an ncclComm_t to its identity.  It is a fixed
 * open-addressing array: inserts (communicator creation, rare) take a
 * spinlock; lookups on the collective path take none - an entry's fields
 * are written before its key is published with release order.  A
 * destroyed communicator keeps its entry (its address may be reused by a
 * new one, whose insert then overwrites the entry).
 *
 * GPU time without CUPTI.  When cupti.c cannot record activity it raises
 * sp_cupti_fallback; from then on each collective is bracketed by two
 * CUDA events recorded on its stream (no synchronization), taken from a
 * pool created once.  Completed pairs are drained at later NCCL calls and
 * at cupti.c's flush (through sp_cupti_drain_hook, set with the pool);
 * each becomes a GPU event of kind SP_GPU_NCCL_KERNEL named "nccl:<op>",
 * whose `correlation` equals the `correlation` of the NCCL event that
 * launched it.  GPU start times are placed on the host clock
 * through an anchor event per device, recorded on an idle private stream
 * and synchronized at a known host time (re-anchored every second so the
 * float milliseconds of cudaEventElapsedTime keep sub-microsecond
 * precision).  Inside ncclGroupStart/End the kernels run at the outermost
 * GroupEnd, so the end events of grouped calls are recorded after it.
 *
 * `bytes` is the size of the call's send buffer (docs/preload-gpu.md):
 * allreduce, broadcast, reduce, send: count x size; allgather: sendcount x
 * size (one rank's share); reducescatter: recvcount x size x nranks;
 * alltoall: count x size x nranks; recv: count x size received.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "emit.h"
#include "interpose.h"
#include "intern.h"
#include "preload.h"
#include "sp_gpu.h"

#define COMM_TABLE_SIZE 1024 /* communicators alive at once, power of two */
#define HASH_SEED 0xcbf29ce484222325ull
#define HASH_PRIME 0x100000001b3ull

/* ---- resolving the real NCCL --------------------------------------------- */

/* NCCL exports weak ncclX and strong pncclX aliases: the next ncclX when
 * there is one, else the profiling alias. */
static void *nccl_resolve(const char *name)
{
    void *fn = sp_real(name);
    if (!fn) {
        char alias[64];
        snprintf(alias, sizeof alias, "p%s", name);
        fn = sp_real(alias);
    }
    return fn;
}

/* The real NCCL function; a missing one fails the call with
 * ncclSystemError (interpose.h).  Declares `real` and `entry_errno`, the
 * caller's errno, which the real call gets back. */
#define NCCL_REAL(name)      \
    int entry_errno = errno; \
    SP_REAL_AS(name, __typeof__(&name), nccl_resolve, return ncclSystemError)

/* Run CALL (the real function) with the caller's errno and our guard held,
 * so nothing it calls back into is recorded; declares `res` (its result) and
 * `saved` (the errno it left, to restore after our own recording).  NCCL
 * calls are recorded whatever the guard says, so the guard is simply taken
 * for this frame and the previous holder, if any, put back after. */
#define CALL_GUARDED(res, saved, CALL)  \
    uintptr_t holder_ = sp_guard_frame; \
    sp_guard_take();                    \
    errno = entry_errno;                \
    ncclResult_t res = CALL;            \
    int saved = errno;                  \
    sp_guard_frame = holder_

/* ---- identity -------------------------------------------------------------- */

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= HASH_PRIME;
    }
    return h;
}

/* Final mix so that ids spread over all 64 bits, and never 0 (0 = none). */
static uint64_t hash_finish(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h ? h : 1;
}

/* Per-peer message counters of a communicator, for peer_seq: the k-th
 * send to a peer pairs with that peer's k-th recv from us (NCCL matches
 * point-to-point operations between two ranks in issue order).  Sized by
 * the communicator's rank count, made once, published with one pointer. */
struct peer_counts {
    int n;                      /* ranks in the communicator */
    atomic_uint_fast64_t seq[]; /* [0, n): sent to each peer; [n, 2n): received from each */
};

struct comm_entry {
    _Atomic(uintptr_t) key; /* the ncclComm_t, 0 when free */
    uint64_t id;
    atomic_uint_fast64_t coll_seq;
    atomic_uint_fast64_t p2p_seq;
    atomic_uint_fast64_t splits;
    struct peer_counts *_Atomic peers; /* NULL until the rank count is known */
    int nranks, rank, device;
};

static struct peer_counts *peer_counts_new(int n)
{
    if (n <= 0)
        return NULL;
    struct peer_counts *p = calloc(1, sizeof *p + 2 * (size_t)n * sizeof p->seq[0]);
    if (p)
        p->n = n;
    return p;
}

static struct comm_entry comm_table[COMM_TABLE_SIZE];
static atomic_flag comm_insert_lock = ATOMIC_FLAG_INIT;
static atomic_int comm_table_full_logged;

static size_t comm_slot(uintptr_t key)
{
    return (size_t)((key >> 4) * 0x9e3779b97f4a7c15ull >> 54) & (COMM_TABLE_SIZE - 1);
}

static inline struct comm_entry *comm_lookup(ncclComm_t comm)
{
    uintptr_t key = (uintptr_t)comm;
    size_t i = comm_slot(key);
    for (size_t n = 0; n < COMM_TABLE_SIZE; n++, i = (i + 1) & (COMM_TABLE_SIZE - 1)) {
        uintptr_t k = atomic_load_explicit(&comm_table[i].key, memory_order_acquire);
        if (k == key)
            return &comm_table[i];
        if (k == 0)
            return NULL;
    }
    return NULL;
}

static struct comm_entry *comm_insert(ncclComm_t comm, uint64_t id, int nranks, int rank, int device)
{
    uintptr_t key = (uintptr_t)comm;
    struct comm_entry *e = NULL;
    struct peer_counts *fresh = peer_counts_new(nranks), *old = NULL; /* allocated outside the lock */
    while (atomic_flag_test_and_set_explicit(&comm_insert_lock, memory_order_acquire))
        ;
    size_t i = comm_slot(key);
    for (size_t n = 0; n < COMM_TABLE_SIZE; n++, i = (i + 1) & (COMM_TABLE_SIZE - 1)) {
        uintptr_t k = atomic_load_explicit(&comm_table[i].key, memory_order_relaxed);
        if (k == key || k == 0) {
            e = &comm_table[i];
            break;
        }
    }
    if (e) {
        e->id = id;
        atomic_store_explicit(&e->coll_seq, 0, memory_order_relaxed);
        atomic_store_explicit(&e->p2p_seq, 0, memory_order_relaxed);
        atomic_store_explicit(&e->splits, 0, memory_order_relaxed);
        /* an address reused by a new communicator: the old one is destroyed */
        old = atomic_exchange_explicit(&e->peers, fresh, memory_order_acq_rel);
        fresh = NULL;
        e->nranks = nranks;
        e->rank = rank;
        e->device = device;
        atomic_store_explicit(&e->key, key, memory_order_release);
    }
    atomic_flag_clear_explicit(&comm_insert_lock, memory_order_release);
    free(old);
    free(fresh);
    if (!e && !atomic_exchange(&comm_table_full_logged, 1))
        sp_log("more than %d NCCL communicators: later ones are recorded without identity",
               COMM_TABLE_SIZE);
    return e;
}

/* ---- what a communicator knows about itself ---------------------------- */

struct comm_facts {
    int nranks, rank, device;
};

/* One of NCCL's int-valued queries of a communicator (ours, not the
 * job's: nothing is interposed); 1 with *v set when it answered. */
static int comm_int(void *_Atomic *cache, const char *name, ncclComm_t comm, int *v)
{
    void *fn = atomic_load_explicit(cache, memory_order_relaxed);
    if (!fn) {
        fn = nccl_resolve(name);
        atomic_store_explicit(cache, fn, memory_order_relaxed);
    }
    return fn && ((ncclResult_t(*)(ncclComm_t, int *))fn)(comm, v) == ncclSuccess;
}

/* Ask NCCL for size, rank and device; keep the caller's guesses where a
 * query fails (a non-blocking init may still be in progress). */
static struct comm_facts comm_query(ncclComm_t comm, int nranks, int rank)
{
    struct comm_facts f = {nranks, rank, sp_gpu_current_device()};
    if (!comm)
        return f;
    int v;
    static void *_Atomic count_fn, *_Atomic rank_fn, *_Atomic device_fn;
    if (comm_int(&count_fn, "ncclCommCount", comm, &v))
        f.nranks = v;
    if (comm_int(&rank_fn, "ncclCommUserRank", comm, &v))
        f.rank = v;
    if (comm_int(&device_fn, "ncclCommCuDevice", comm, &v))
        f.device = v;
    return f;
}

static void emit_comm(uint64_t t0, enum sp_comm_kind kind, uint64_t id, struct comm_facts f,
                      uint64_t parent, int color, int key, ncclResult_t res)
{
    struct sp_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = SP_EV_COMM;
    ev.t = t0;
    ev.comm.dur = sp_now() - t0;
    ev.comm.kind = kind;
    ev.comm.comm = id;
    ev.comm.nranks = (uint64_t)(f.nranks > 0 ? f.nranks : 0);
    ev.comm.rank = f.rank;
    ev.comm.device = f.device;
    ev.comm.parent = parent;
    ev.comm.color = color;
    ev.comm.key = key;
    ev.comm.result = res;
    sp_emit_raw(&ev); /* the interposer restores errno next */
}

static atomic_int rank_reported;

/* Record a new communicator and, for the process's first one, tell the
 * core its rank when the environment did not. */
static void comm_created(uint64_t t0, enum sp_comm_kind kind, ncclComm_t comm, uint64_t id,
                         int nranks, int rank, uint64_t parent, int color, int key, ncclResult_t res)
{
    struct comm_facts f = comm_query(res == ncclSuccess || res == ncclInProgress ? comm : NULL,
                                     nranks, rank);
    if (comm && (res == ncclSuccess || res == ncclInProgress))
        comm_insert(comm, id, f.nranks, f.rank, f.device);
    if (res == ncclSuccess && kind == SP_COMM_INIT && !atomic_exchange(&rank_reported, 1))
        sp_core_set_rank(f.rank, f.nranks, f.device);
    if (sp_recording)
        emit_comm(t0, kind, id, f, parent, color, key, res);
}

static void comm_ended(uint64_t t0, enum sp_comm_kind kind, ncclComm_t comm, ncclResult_t res)
{
    struct comm_entry *e = comm_lookup(comm);
    struct comm_facts f = {e ? e->nranks : 0, e ? e->rank : -1, e ? e->device : -1};
    if (sp_recording)
        emit_comm(t0, kind, e ? e->id : 0, f, 0, 0, 0, res);
}

static uint64_t unique_id_hash(const ncclUniqueId *uid)
{
    return hash_finish(hash_bytes(HASH_SEED, uid->internal, sizeof uid->internal));
}

/* ---- lifecycle interposers ----------------------------------------------- */

SP_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    NCCL_REAL(ncclCommInitRank);
    sp_cupti_ensure();
    uint64_t t0 = sp_now();
    CALL_GUARDED(res, saved, real(comm, nranks, commId, rank));
    comm_created(t0, SP_COMM_INIT, comm ? *comm : NULL, unique_id_hash(&commId), nranks, rank, 0,
                 0, 0, res);
    errno = saved;
    return res;
}

SP_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                              int rank, ncclConfig_t *config)
{
    NCCL_REAL(ncclCommInitRankConfig);
    sp_cupti_ensure();
    uint64_t t0 = sp_now();
    CALL_GUARDED(res, saved, real(comm, nranks, commId, rank, config));
    comm_created(t0, SP_COMM_INIT, comm ? *comm : NULL, unique_id_hash(&commId), nranks, rank, 0,
                 0, 0, res);
    errno = saved;
    return res;
}

SP_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank,
                                                int nId, ncclUniqueId *commIds,
                                                ncclConfig_t *config)
{
    NCCL_REAL(ncclCommInitRankScalable);
    sp_cupti_ensure();
    uint64_t t0 = sp_now();
    CALL_GUARDED(res, saved, real(newcomm, nranks, myrank, nId, commIds, config));
    uint64_t h = HASH_SEED;
    for (int i = 0; commIds && i < nId; i++)
        h = hash_bytes(h, commIds[i].internal, sizeof commIds[i].internal);
    comm_created(t0, SP_COMM_INIT, newcomm ? *newcomm : NULL, hash_finish(h), nranks, myrank, 0,
                 0, 0, res);
    errno = saved;
    return res;
}

/* One process drives all `ndev` devices: the ranks share this process, so
 * the id only needs to be unique within it. */
SP_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
    NCCL_REAL(ncclCommInitAll);
    sp_cupti_ensure();
    uint64_t t0 = sp_now();
    CALL_GUARDED(res, saved, real(comm, ndev, devlist));
    static atomic_uint_fast64_t init_all_calls;
    uint64_t nth = atomic_fetch_add(&init_all_calls, 1) + 1;
    pid_t pid = getpid();
    uint64_t h = hash_bytes(HASH_SEED, "initall", 7);
    h = hash_bytes(h, &pid, sizeof pid);
    h = hash_finish(hash_bytes(h, &nth, sizeof nth));
    for (int i = 0; comm && i < ndev; i++)
        comm_created(t0, SP_COMM_INIT, comm[i], h, ndev, i, 0, 0, 0, res);
    errno = saved;
    return res;
}

SP_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                     ncclConfig_t *config)
{
    NCCL_REAL(ncclCommSplit);
    uint64_t t0 = sp_now();
    CALL_GUARDED(res, saved, real(comm, color, key, newcomm, config));
    struct comm_entry *parent = comm_lookup(comm);
    uint64_t parent_id = parent ? parent->id : 0;
    uint64_t nth = parent ? atomic_fetch_add(&parent->splits, 1) + 1 : 0;
    uint64_t h = hash_bytes(HASH_SEED, "split", 5);
    h = hash_bytes(h, &parent_id, sizeof parent_id);
    h = hash_bytes(h, &color, sizeof color);
    h = hash_finish(hash_bytes(h, &nth, sizeof nth));
    /* NCCL_SPLIT_NOCOLOR ranks get no communicator */
    ncclComm_t made = (newcomm && color != NCCL_SPLIT_NOCOLOR) ? *newcomm : NULL;
    comm_created(t0, SP_COMM_SPLIT, made, made ? h : 0, 0, -1, parent_id, color, key, res);
    errno = saved;
    return res;
}

#define LIFECYCLE_END(fn, kind)                \
    SP_EXPORT ncclResult_t fn(ncclComm_t comm) \
    {                                          \
        NCCL_REAL(fn);                         \
        uint64_t t0 = sp_now();                \
        CALL_GUARDED(res, saved, real(comm));  \
        comm_ended(t0, kind, comm, res);       \
        errno = saved;                         \
        return res;                            \
    }
LIFECYCLE_END(ncclCommFinalize, SP_COMM_FINALIZE)
LIFECYCLE_END(ncclCommDestroy, SP_COMM_DESTROY)
LIFECYCLE_END(ncclCommAbort, SP_COMM_ABORT)

/* ---- GPU timing with CUDA events (fallback) ------------------------------ */

#define EVT_POOL 1024    /* event pairs in flight at once */
#define EVT_GROUP_MAX 64 /* grouped calls awaiting their GroupEnd */
#define MAX_DEVICES 64
#define REANCHOR_NS 1000000000ull /* keep float ms of elapsed time precise */
#define NS_PER_MS 1e6
#define FINAL_DRAIN_TRIES 200 /* x 1 ms: how long exit waits for the last */
#define FINAL_DRAIN_SLEEP_US 1000

struct cuda_fns {
    cudaError_t (*event_create)(cudaEvent_t *, unsigned);
    cudaError_t (*event_record)(cudaEvent_t, cudaStream_t);
    cudaError_t (*event_query)(cudaEvent_t);
    cudaError_t (*event_sync)(cudaEvent_t);
    cudaError_t (*elapsed)(float *, cudaEvent_t, cudaEvent_t);
    cudaError_t (*stream_create)(cudaStream_t *, unsigned);
    cudaError_t (*get_device)(int *);
};

/* A pending pair: taken from the ring under the lock, filled by the issuing
 * thread, drained under the lock.  FREE -> ISSUED -> RECORDED -> FREE; a
 * pair whose end could not be recorded goes back to FREE and is skipped.
 * The lock is the one exception to "no lock on a hot path": it is taken
 * only in fallback mode, for a few instructions plus the drain. */
enum { PAIR_FREE,
       PAIR_ISSUED,
       PAIR_RECORDED };
struct evt_pair {
    atomic_int state;
    cudaEvent_t start, end;
    uint64_t correlation, stream;
    int op, device;
};

struct anchor {
    cudaEvent_t ev;
    uint64_t host_ns;
    int valid;
};

static struct {
    atomic_int state; /* 0 not tried, 1 ready, -1 unusable */
    atomic_flag setup_lock;
    atomic_flag lock; /* pool head/tail, anchors: fallback mode only */
    struct cuda_fns fn;
    struct evt_pair pairs[EVT_POOL];
    uint64_t head, tail; /* next pair to issue, next to drain */
    atomic_uint_fast64_t next_correlation;
    struct anchor anchors[MAX_DEVICES];
    cudaStream_t anchor_stream[MAX_DEVICES];
} evt = {.setup_lock = ATOMIC_FLAG_INIT, .lock = ATOMIC_FLAG_INIT};

static int evt_resolve(void)
{
    struct cuda_fns *f = &evt.fn;
    f->event_create = (__typeof__(f->event_create))sp_real("cudaEventCreateWithFlags");
    f->event_record = (__typeof__(f->event_record))sp_real("cudaEventRecord");
    f->event_query = (__typeof__(f->event_query))sp_real("cudaEventQuery");
    f->event_sync = (__typeof__(f->event_sync))sp_real("cudaEventSynchronize");
    f->elapsed = (__typeof__(f->elapsed))sp_real("cudaEventElapsedTime");
    f->stream_create = (__typeof__(f->stream_create))sp_real("cudaStreamCreateWithFlags");
    f->get_device = (__typeof__(f->get_device))sp_real("cudaGetDevice");
    return f->event_create && f->event_record && f->event_query && f->event_sync &&
           f->elapsed && f->stream_create && f->get_device;
}

static void evt_drain(int final);

/* Create the pool once, on the first collective after timing was wanted. */
static int evt_ready(void)
{
    int s = atomic_load_explicit(&evt.state, memory_order_acquire);
    if (SP_LIKELY(s != 0))
        return s > 0;
    if (atomic_flag_test_and_set(&evt.setup_lock))
        return 0; /* another thread is setting up: this call goes untimed */
    int ok = evt_resolve();
    for (int i = 0; ok && i < EVT_POOL; i++)
        ok = evt.fn.event_create(&evt.pairs[i].start, cudaEventDefault) == cudaSuccess &&
             evt.fn.event_create(&evt.pairs[i].end, cudaEventDefault) == cudaSuccess;
    if (ok)
        atomic_store(&sp_cupti_drain_hook, evt_drain);
    else
        sp_log("CUDA events unavailable: collectives are recorded without GPU durations");
    atomic_store_explicit(&evt.state, ok ? 1 : -1, memory_order_release);
    return ok;
}

/* Put GPU time on the host clock for `device`: an event recorded on an idle
 * private stream completes right away; its host time is the middle of the
 * record..synchronize window.  Called under evt.lock. */
static struct anchor *anchor_for(int device, uint64_t near_ns)
{
    if (device < 0 || device >= MAX_DEVICES)
        return NULL;
    struct anchor *a = &evt.anchors[device];
    if (a->valid && near_ns - a->host_ns < REANCHOR_NS)
        return a;
    int cur = -1;
    if (evt.fn.get_device(&cur) != cudaSuccess || cur != device)
        return a->valid ? a : NULL; /* the anchor must be made on its device */
    if (!a->valid) {
        if (evt.fn.stream_create(&evt.anchor_stream[device], cudaStreamNonBlocking) != cudaSuccess ||
            evt.fn.event_create(&a->ev, cudaEventDefault) != cudaSuccess)
            return NULL;
    }
    uint64_t t0 = sp_now();
    if (evt.fn.event_record(a->ev, evt.anchor_stream[device]) != cudaSuccess ||
        evt.fn.event_sync(a->ev) != cudaSuccess)
        return a->valid ? a : NULL;
    a->host_ns = t0 + (sp_now() - t0) / 2;
    a->valid = 1;
    return a;
}

static const char *const op_gpu_names[SP_NCCL_OP_MAX] = {
    [SP_NCCL_ALLREDUCE] = "nccl:allreduce",
    [SP_NCCL_BROADCAST] = "nccl:broadcast",
    [SP_NCCL_REDUCE] = "nccl:reduce",
    [SP_NCCL_ALLGATHER] = "nccl:allgather",
    [SP_NCCL_REDUCESCATTER] = "nccl:reducescatter",
    [SP_NCCL_SEND] = "nccl:send",
    [SP_NCCL_RECV] = "nccl:recv",
    [SP_NCCL_ALLTOALL] = "nccl:alltoall",
    [SP_NCCL_GATHER] = "nccl:gather",
    [SP_NCCL_SCATTER] = "nccl:scatter",
};

static void emit_pair(struct evt_pair *p, struct anchor *a)
{
    float dur_ms = 0, from_anchor_ms = 0;
    if (evt.fn.elapsed(&dur_ms, p->start, p->end) != cudaSuccess ||
        evt.fn.elapsed(&from_anchor_ms, a->ev, p->start) != cudaSuccess)
        return;
    struct sp_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = SP_EV_GPU;
    ev.t = (uint64_t)((double)a->host_ns + (double)from_anchor_ms * NS_PER_MS);
    ev.gpu.dur = (uint64_t)((double)dur_ms * NS_PER_MS);
    ev.gpu.kind = SP_GPU_NCCL_KERNEL;
    ev.gpu.device = p->device;
    ev.gpu.stream = p->stream;
    ev.gpu.name = sp_intern_name(op_gpu_names[p->op]);
    ev.gpu.correlation = p->correlation;
    sp_emit(&ev);
}

static void evt_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&evt.lock, memory_order_acquire))
        ;
}

static void evt_unlock(void)
{
    atomic_flag_clear_explicit(&evt.lock, memory_order_release);
}

/* Drain completed pairs in issue order, stopping at the first unfinished
 * one (work on a stream completes in order; pairs on other streams wait for
 * the next drain).  Never waits except at `final`. */
static void evt_drain(int final)
{
    if (atomic_load_explicit(&evt.state, memory_order_acquire) <= 0)
        return;
    int tries = final ? FINAL_DRAIN_TRIES : 0;
    evt_lock();
    while (evt.tail < evt.head) {
        struct evt_pair *p = &evt.pairs[evt.tail % EVT_POOL];
        int st = atomic_load_explicit(&p->state, memory_order_acquire);
        if (st == PAIR_RECORDED && evt.fn.event_query(p->end) == cudaSuccess) {
            struct anchor *a = anchor_for(p->device, sp_now());
            if (a)
                emit_pair(p, a);
        } else if (st != PAIR_FREE) {
            if (tries-- <= 0)
                break;
            usleep(FINAL_DRAIN_SLEEP_US);
            continue;
        }
        atomic_store_explicit(&p->state, PAIR_FREE, memory_order_release);
        evt.tail++;
    }
    evt_unlock();
}

/* Grouped calls whose end event waits for the outermost GroupEnd. */
static __thread int group_depth __attribute__((tls_model("initial-exec")));
static __thread struct evt_pair *group_pending[EVT_GROUP_MAX] __attribute__((tls_model("initial-exec")));
static __thread int group_npending __attribute__((tls_model("initial-exec")));

/* Take a pair and record its start event, before the real call.  NULL when
 * timing is off or the pool is exhausted (that call goes untimed). */
static __attribute__((noinline)) struct evt_pair *evt_begin_timed(int op, cudaStream_t stream, int device)
{
    if (!evt_ready())
        return NULL;
    evt_drain(0);
    if (group_depth > 0 && group_npending >= EVT_GROUP_MAX)
        return NULL;
    evt_lock();
    struct evt_pair *p = NULL;
    if (evt.head - evt.tail < EVT_POOL) {
        p = &evt.pairs[evt.head % EVT_POOL];
        atomic_store_explicit(&p->state, PAIR_ISSUED, memory_order_relaxed);
        evt.head++;
    }
    evt_unlock();
    if (!p)
        return NULL; /* every pair in flight: this call goes untimed */
    p->correlation = SP_OWN_CORRELATION_BIT | (atomic_fetch_add(&evt.next_correlation, 1) + 1);
    p->stream = (uint64_t)(uintptr_t)stream;
    p->op = op;
    p->device = device;
    if (evt.fn.event_record(p->start, stream) != cudaSuccess) {
        p->correlation = 0;
        atomic_store_explicit(&p->state, PAIR_FREE, memory_order_release);
        return NULL;
    }
    return p;
}

static inline __attribute__((always_inline)) struct evt_pair *evt_begin(int op, cudaStream_t stream, int device)
{
    if (SP_LIKELY(!atomic_load_explicit(&sp_cupti_fallback, memory_order_relaxed)))
        return NULL;
    return evt_begin_timed(op, stream, device);
}

static void evt_record_end(struct evt_pair *p, cudaStream_t stream)
{
    if (evt.fn.event_record(p->end, stream) == cudaSuccess)
        atomic_store_explicit(&p->state, PAIR_RECORDED, memory_order_release);
    else
        atomic_store_explicit(&p->state, PAIR_FREE, memory_order_release);
}

/* After the real call: outside a group the kernel is enqueued now; inside
 * one it is enqueued at the outermost GroupEnd. */
static __attribute__((noinline)) void evt_end_timed(struct evt_pair *p, cudaStream_t stream)
{
    if (group_depth > 0)
        group_pending[group_npending++] = p;
    else
        evt_record_end(p, stream);
}

static inline __attribute__((always_inline)) void evt_end(struct evt_pair *p, cudaStream_t stream)
{
    if (SP_UNLIKELY(p != NULL))
        evt_end_timed(p, stream);
}

static void evt_group_closed(void)
{
    for (int i = 0; i < group_npending; i++)
        evt_record_end(group_pending[i], (cudaStream_t)(uintptr_t)group_pending[i]->stream);
    group_npending = 0;
}

/* ---- collectives and point-to-point -------------------------------------- */

/* What one call is about, gathered before the real call. */
struct call {
    struct sp_span span; /* its start, converted at its end (preload.h) */
    enum sp_nccl_op op;
    size_t count;
    ncclDataType_t dtype;
    int peer;
    ncclComm_t comm;
    cudaStream_t stream;
    struct comm_entry *entry;
    uint64_t seq;
    struct evt_pair *pair;
};

static int is_p2p(enum sp_nccl_op op)
{
    return op == SP_NCCL_SEND || op == SP_NCCL_RECV;
}

/* The communicator's per-peer counters, made at the first send or recv
 * when init could not tell the rank count (a split still in progress).
 * Once per communicator; a thread that loses the race frees its copy. */
static struct peer_counts *peer_counts_late(struct comm_entry *e, ncclComm_t comm)
{
    static void *_Atomic count_fn;
    int n = e->nranks;
    if (n <= 0 && !comm_int(&count_fn, "ncclCommCount", comm, &n))
        return NULL;
    struct peer_counts *p = peer_counts_new(n), *expect = NULL;
    if (p && !atomic_compare_exchange_strong(&e->peers, &expect, p)) {
        free(p);
        p = expect;
    }
    return p;
}

/* peer_seq of a send or recv that NCCL accepted: the k-th message this rank
 * sent to (received from) `peer` on this communicator, from 1.  One relaxed
 * atomic add on the hot path, no lock.  0 when the peer is out of range. */
static uint64_t peer_seq_next(struct comm_entry *e, ncclComm_t comm, enum sp_nccl_op op, int peer)
{
    struct peer_counts *p = atomic_load_explicit(&e->peers, memory_order_acquire);
    if (SP_UNLIKELY(!p))
        p = peer_counts_late(e, comm);
    if (!p || peer < 0 || peer >= p->n)
        return 0;
    size_t i = (size_t)(op == SP_NCCL_RECV ? p->n : 0) + (size_t)peer;
    return atomic_fetch_add_explicit(&p->seq[i], 1, memory_order_relaxed) + 1;
}

/* call_begin and call_end are inlined into each interposer of the table,
 * where the op (and with it the bytes formula, the peer of the
 * collectives, the counter that numbers the call) is a constant. */
static inline __attribute__((always_inline)) void call_begin(struct call *c)
{
    sp_cupti_ensure();
    c->entry = comm_lookup(c->comm);
    c->seq = 0;
    if (c->entry)
        c->seq = atomic_fetch_add_explicit(is_p2p(c->op) ? &c->entry->p2p_seq : &c->entry->coll_seq,
                                           1, memory_order_relaxed) +
                 1;
    int device = c->entry ? c->entry->device : sp_gpu_current_device();
    c->pair = evt_begin(c->op, c->stream, device);
    sp_span_begin(&c->span);
}

static uint64_t call_bytes(const struct call *c, int nranks)
{
    uint64_t b = (uint64_t)c->count * sp_nccl_dtype_size((uint64_t)c->dtype); /* NCCL's codes: format/sprof.h */
    /* The send buffer holds one piece per rank (scatter: on the root). */
    if (c->op == SP_NCCL_REDUCESCATTER || c->op == SP_NCCL_ALLTOALL || c->op == SP_NCCL_SCATTER)
        b *= (uint64_t)(nranks > 0 ? nranks : 1);
    return b;
}

/* The peer_seq of a send or recv once NCCL answered: counted whether or
 * not we record (the window may open later), and only for calls NCCL took
 * (a refused send is never received). */
static uint64_t p2p_done(const struct call *c, ncclResult_t res)
{
    if (!c->entry || (res != ncclSuccess && res != ncclInProgress))
        return 0;
    return peer_seq_next(c->entry, c->comm, c->op, c->peer);
}

static inline __attribute__((always_inline)) void call_end(struct call *c, ncclResult_t res, uint64_t peer_seq)
{
    struct sp_times tm = sp_span_end(c->span);
    evt_end(c->pair, c->stream);
    struct comm_entry *e = c->entry;
    if (!sp_recording)
        return;
    /* sp_event_head, not memset: this runs on every collective. */
    struct sp_event ev;
    sp_event_head(&ev, SP_EV_NCCL, tm.t0);
    ev.nccl = (struct sp_ev_nccl){
        .dur = tm.dur,
        .comm = e ? e->id : 0,
        .seq = c->seq,
        .op = c->op,
        .count = c->count,
        .datatype = (uint64_t)c->dtype,
        .bytes = call_bytes(c, e ? e->nranks : 0),
        .peer = c->peer,
        .stream = (uint64_t)(uintptr_t)c->stream,
        .group_depth = (uint64_t)group_depth,
        .result = res,
        .nranks = (uint64_t)(e && e->nranks > 0 ? e->nranks : 0),
        .rank = e ? e->rank : -1,
        .correlation = c->pair ? c->pair->correlation : 0,
        .device = e ? e->device : sp_gpu_current_device(),
        .peer_seq = peer_seq,
    };
    sp_emit_inline(&ev); /* the interposer restores errno next */
}

/* ---- the table -------------------------------------------------------------
 *
 * Every collective and point-to-point call, once.  Columns: name,
 * parameters, arguments passed on, then the event's op, element count,
 * datatype and peer (root or peer rank, -1 when none).  Every one has
 * parameters named comm and stream.  gather/scatter are rooted: every rank
 * sends `count` elements to the root, or the root `count` to each rank. */
#define SEND_PARAMS const void *sendbuff, void *recvbuff
#define NCCL_FUNCTIONS(X)                                                                                   \
    X(ncclAllReduce,                                                                                        \
      (SEND_PARAMS, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,                 \
       cudaStream_t stream),                                                                                \
      (sendbuff, recvbuff, count, datatype, op, comm, stream), SP_NCCL_ALLREDUCE, count, datatype, -1)      \
    X(ncclBroadcast,                                                                                        \
      (SEND_PARAMS, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,                       \
       cudaStream_t stream),                                                                                \
      (sendbuff, recvbuff, count, datatype, root, comm, stream), SP_NCCL_BROADCAST, count, datatype, root)  \
    X(ncclBcast,                                                                                            \
      (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream),  \
      (buff, count, datatype, root, comm, stream), SP_NCCL_BROADCAST, count, datatype, root)                \
    X(ncclReduce,                                                                                           \
      (SEND_PARAMS, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,       \
       cudaStream_t stream),                                                                                \
      (sendbuff, recvbuff, count, datatype, op, root, comm, stream), SP_NCCL_REDUCE, count, datatype, root) \
    X(ncclAllGather,                                                                                        \
      (SEND_PARAMS, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream),       \
      (sendbuff, recvbuff, sendcount, datatype, comm, stream), SP_NCCL_ALLGATHER, sendcount, datatype, -1)  \
    X(ncclReduceScatter,                                                                                    \
      (SEND_PARAMS, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,             \
       cudaStream_t stream),                                                                                \
      (sendbuff, recvbuff, recvcount, datatype, op, comm, stream), SP_NCCL_REDUCESCATTER, recvcount,        \
      datatype, -1)                                                                                         \
    X(ncclAlltoAll,                                                                                         \
      (SEND_PARAMS, size_t count, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream),           \
      (sendbuff, recvbuff, count, datatype, comm, stream), SP_NCCL_ALLTOALL, count, datatype, -1)           \
    X(ncclGather,                                                                                           \
      (SEND_PARAMS, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,                       \
       cudaStream_t stream),                                                                                \
      (sendbuff, recvbuff, count, datatype, root, comm, stream), SP_NCCL_GATHER, count, datatype, root)     \
    X(ncclScatter,                                                                                          \
      (SEND_PARAMS, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,                       \
       cudaStream_t stream),                                                                                \
      (sendbuff, recvbuff, count, datatype, root, comm, stream), SP_NCCL_SCATTER, count, datatype, root)    \
    X(ncclSend,                                                                                             \
      (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,              \
       cudaStream_t stream),                                                                                \
      (sendbuff, count, datatype, peer, comm, stream), SP_NCCL_SEND, count, datatype, peer)                 \
    X(ncclRecv,                                                                                             \
      (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,                    \
       cudaStream_t stream),                                                                                \
      (recvbuff, count, datatype, peer, comm, stream), SP_NCCL_RECV, count, datatype, peer)

/* The one body: identity, timing, the real call with the guard held (the
 * runtime calls NCCL makes are not the job's), the event. */
#define NCCL_DEFINE(name, params, fwd, OP, COUNT, DTYPE, PEER)                                                    \
    SP_EXPORT ncclResult_t name params                                                                            \
    {                                                                                                             \
        NCCL_REAL(name);                                                                                          \
        struct call c = {.op = OP, .count = COUNT, .dtype = DTYPE, .peer = PEER, .comm = comm, .stream = stream}; \
        call_begin(&c);                                                                                           \
        CALL_GUARDED(res, saved, real fwd);                                                                       \
        call_end(&c, res, is_p2p(OP) ? p2p_done(&c, res) : 0); /* OP is a constant */                             \
        errno = saved;                                                                                            \
        return res;                                                                                               \
    }
NCCL_FUNCTIONS(NCCL_DEFINE)

/* ---- groups ----------------------------------------------------------------- */

static void emit_group(uint64_t t0, enum sp_nccl_op op, int depth, ncclResult_t res)
{
    if (!sp_recording)
        return;
    struct sp_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = SP_EV_NCCL;
    ev.t = t0;
    ev.nccl.dur = sp_now() - t0;
    ev.nccl.op = op;
    ev.nccl.peer = -1;
    ev.nccl.group_depth = (uint64_t)depth;
    ev.nccl.result = res;
    ev.nccl.rank = -1;
    ev.nccl.device = sp_gpu_current_device();
    sp_emit_raw(&ev); /* the interposer restores errno next */
}

SP_EXPORT ncclResult_t ncclGroupStart(void)
{
    NCCL_REAL(ncclGroupStart);
    uint64_t t0 = sp_now();
    int depth = group_depth;
    CALL_GUARDED(res, saved, real());
    if (res == ncclSuccess)
        group_depth++;
    emit_group(t0, SP_NCCL_GROUP_START, depth, res);
    errno = saved;
    return res;
}

SP_EXPORT ncclResult_t ncclGroupEnd(void)
{
    NCCL_REAL(ncclGroupEnd);
    uint64_t t0 = sp_now();
    if (group_depth > 0)
        group_depth--;
    int depth = group_depth;
    CALL_GUARDED(res, saved, real());
    if (depth == 0)
        evt_group_closed();
    emit_group(t0, SP_NCCL_GROUP_END, depth, res);
    errno = saved;
    return res;
}
