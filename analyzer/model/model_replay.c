/*
 * model_replay.c - what-if: the recorded job replayed with one cause
 * removed, so that every finding is priced by the step time it would save.
 *
 * The model (after "Understanding Stragglers in Large Model Training Using
 * What-if Analysis", OSDI'25) is a dependency graph built from what pass 2
 * measured, never from configuration.  Each rank is a chain of nodes
 * (model.h, struct sp_rnode): its NCCL kernels in order - a group's sends
 * and recvs share one - and the end of each step.  Between two nodes the
 * rank spends local time (GPU busy, input, host, unexplained idle, by
 * sp_loc); waiting in NCCL kernels and moving their data are not local.
 * Replaying a node:
 *   arrival a' = max(E' + off - (gap - gap'), a'_prev + under'_prev + gap')
 * (primes: replayed, or under the counterfactual).  The second term is
 * the rank's local work, which goes on while an op runs (overlap).  The
 * first is the ends the node waited for: each op is waited for by the
 * first later node of its rank that started at or after its recorded end
 * (the op after it on its stream; after a communicate call whose send and
 * recv ran concurrently on their own streams, the first op after the
 * compute that waited for both), E' is the latest replayed end among the
 * ops a node waited for and off its recorded distance from the latest
 * recorded one, less the local time the counterfactual takes off the gap.
 * An op that started while an earlier one ran did not wait for it: it
 * arrives while that one is pending.  Under and gap of consecutive nodes
 * tile the step, so local time is conserved whatever the counterfactual
 * moves, and a step's end waits for every op that ended before it.
 * An instance (a collective matched by (comm, seq), a send with its recv
 * by (comm, sender, receiver, k)) completes at its last participant's
 * arrival.  A node is synchronized at the latest last arrival of its
 * instances (a group's pairs all end when the latest has) and leaves at
 * that time plus what it took after its synchronization point in the
 * recording (the transfer, as model_coll.c classified it).  Replayed
 * without change the graph gives back the recorded times exactly; the
 * counterfactuals change durations and let the graph move everything else:
 *   straggler       a rank's (or a small communicator's, or the ranks slow
 *                   in every step together) local time set to the median
 *                   of its peers for the same op in the same step
 *   imbalance       every rank's local time (input aside) at the per-step
 *                   median: work that varies, no fixed culprit
 *   pipeline_stage  one stage's GPU work scaled to the other stages' median
 *   pipeline_bubble the balanced pipeline's fill-and-drain wait removed (the
 *                   limit of many more micro-batches of the same work):
 *                   balanced is the slowest stage at the others' median
 *                   and every rank at its peers' (as for imbalance)
 *   input_pipeline  waits for input removed
 *   host_overhead   the host's own time before launches and the sync that
 *                   ends the step removed: issued ahead of the GPU, launches
 *                   overlap its work (a launch into an idle stream also
 *                   costs more: it wakes it)
 *   launch_api      the launch calls an idle GPU waited through removed
 *                   (launches that cost what they should, or one graph
 *                   launch for many)
 *   host_sync       the GPU's wait for the host after each sync inside the
 *                   step removed (the host issues ahead across it)
 *   file_writes     the host's time blocked in file writes and flushes
 *                   with the GPU idle removed (an asynchronous checkpoint)
 *   communication   transfers hidden (what full overlap would give), every
 *                   synchronization kept; at most the transfer on the
 *                   recorded longest paths (the base replay follows them)
 *   cross_node      transfers spanning hosts at the intra-host bandwidth
 *   unexplained     idle nothing on the host explains, removed
 *   memcpy          copies (and memsets) while no kernel ran removed: what
 *                   prefetching them under compute would give
 * Each is the cf of its cause's row in the cause table (causes.c), one
 * sp_counterfactual here: how it is priced, and how its fix, as priced,
 * is added to a counterfactual, which the ideal (every found cause fixed
 * together), the check and export's what-if timeline replay; the causes
 * that drop local time share sp_cf_drop, their row naming the part.
 * The gain of each is 1 - T'/T, T the replayed mean step time.  Peers of a
 * node are the nodes of other ranks with the same key: a collective's
 * communicator class and its index among the rank's calls on it in the
 * step, a p2p op's pipeline stage, op and the rank's p2p calls before it
 * in the step, a step end's stage.
 *
 * Cost: one replay is linear in nodes (a few per step per rank, never
 * events); the gates are found once per graph (a binary search per
 * node); the straggler search replays once per candidate: at most
 * MAX_TRIED ranks and MAX_TRIED small communicators, MAX_SET - 1 sets of
 * ranks slow in every step and each member of a winning set alone (15
 * replays at most, whatever the number of ranks).  Nothing searches over
 * ranks per node.  At thousands of ranks cache misses, not instructions,
 * set a replay's cost, so what a replay reads of a node sits in one
 * record, and the records lie in the order the replay reads them: what a
 * replay does next never depends on a time (a node arrives once the ends
 * it waits for are final, an instance completes at its last arrival), so
 * the walk is worked out once per graph from the counts alone
 * (walk_order), the nodes are placed in its order, and every replay
 * follows it in memory order without the counts (run_follow: struct
 * fnode, struct fstate).  A graph whose walk would have to force an
 * instance (steps cut differently on two ranks) places its nodes step by
 * step (build_perm) and each replay walks on its own (advance, complete:
 * struct gnode, struct nstate).
 *
 * The replay checks itself (sp_model_replay_check): replayed unchanged it
 * must give back each rank's recorded mean step, and no cause may save
 * more than its own time on the critical path, bounded per peer group.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "model_int.h"
#include "units.h"

#define NO_WAIT 0.005 /* collective wait share below which no rank holds up another */
#define MAX_TRIED 4   /* straggler candidates replayed: the ranks, then groups, with most excess */

#define MAX_SET 4 /* ranks slow in every step priced together, at most */

/* A large peer group keeps, per window and component, its values around
 * the median in order (struct graph's win): the median of the peers
 * outside a fixed set of up to WIN_R of its members is read off them
 * instead of gathering every peer again for each counterfactual. */
#define WIN_R 16
#define WIN_N (2 * WIN_R + 2)     /* values kept: sorted positions n/2 - WIN_R - 1 .. n/2 + WIN_R */
#define WIN_MIN_PEERS (4 * WIN_N) /* smaller groups gather their peers (few) */

#define NZ_UNDER 8 /* struct graph's nz: where the under's bits start */
_Static_assert(SP_LOC_N <= NZ_UNDER, "a node's components fit its nz bits");
#define CONSISTENT_MIN 0.02 /* a rank slow in every step: its excess in each, share of the mean step */

/* ---- the graph ---- */

/* A participant: its rank, its node (index in the rank's chain, and its
 * place in the node states: the walk reads that without a lookup in
 * perm, which would cost a cache miss per participant), and its tail.
 * Whether it is its node's last instance to complete (the walk) is the
 * sign bit of node, an index that is never negative.  20 bytes, not 24
 * (packed: tail on a 4-byte boundary): the participants are kept to the
 * end of a report, at the top of its heap. */
struct part {
    int32_t r, node;
    uint32_t at;
    int64_t tail;
} __attribute__((packed, aligned(4)));
_Static_assert(sizeof(struct part) == 20, "a participant is 20 bytes");
#define PART_FINAL INT32_MIN /* in node: the walk's last instance of the node */
struct inst {
    int32_t first, n;
    int64_t last;
    uint8_t spans, p2p;
    uint8_t pair; /* a send and its recv */
    uint8_t sends;
    uint8_t scan; /* walked: a participant's node is in more instances (struct fnode's dur_inst) */
};

/* Per flat node, what the replay's walk reads of it, in one place (the
 * walk goes from rank to rank, and a node's fields spread over many arrays
 * would cost a cache miss each): its recorded duration, its gate (struct
 * graph; the waiter as its place in gn, -1 none), its gap's local time as
 * recorded, its first call in cinst (a node of one call: that call's
 * instance itself, as cinst holds it, which spares the walk a cache miss
 * per node), how many calls, in how many instances it takes part (the
 * same in every replay: counted once, not by a pass over the instances per
 * replay), and the place of its rank's next node (UINT32_MAX: none), where
 * the walk goes on to: read here, not in perm, it costs no cache miss of
 * its own and can be asked for ahead. */
struct gnode {
    int64_t dur, gate_off;
    double rec_gap;
    int32_t waiter;
    uint32_t gate_n, cinst_at;
    uint32_t next;
    uint16_t ncalls, nparts;
};

/* A node in one replay, in one place as struct gnode: replayed arrival
 * and end; latest replayed last arrival of its instances; the latest
 * replayed end among the ends it waits for; its gap's and its under's
 * local time under the counterfactual; ends it waits for still to come;
 * its instances not yet complete; whether its end is final.  One cache
 * line each (NSTATE_ALIGN): a node's state never spans two. */
#define NSTATE_ALIGN 64
struct nstate {
    _Alignas(NSTATE_ALIGN) int64_t arr;
    int64_t end, sync, gate_max;
    double gap, under;
    uint32_t gate_left;
    uint16_t pending;
    uint8_t done;
};
_Static_assert(sizeof(struct nstate) == NSTATE_ALIGN, "a node's state is one cache line");

/* On a graph the walk placed (struct graph's walked), what a replay that
 * follows the walk (run_follow) reads of a node, in one record in place
 * of struct gnode, struct nstate and rec_under: its gate (FNODE_UNGATED
 * when it waits for no end), its local time as recorded, its waiter, its
 * rank and whether it takes part in an instance (FNODE_PARTS); and either
 * its duration, when it is in no instance (its end is then its arrival
 * plus that: 0 for a step end), or else the one instance it takes part
 * in, if one only (its arrival then moves the instance's last arrival,
 * struct graph's ilast, and an instance whose participants all do is
 * completed without reading their arrivals again), else FNODE_NO_INST.
 * Which components it has are apart, in place order (struct graph's fz).
 * 40 bytes, not 48: the duration and the instance are never both read,
 * and the records are the largest array a replay reads (a page fault
 * per 4 KiB of them). */
struct fnode {
    int64_t gate_off;
    int64_t dur_inst; /* rank_parts & FNODE_PARTS: the instance, else the duration */
    double rec_gap, rec_under;
    int32_t waiter;
    uint32_t rank_parts; /* the rank, and FNODE_PARTS */
};
#define FNODE_UNGATED INT64_MIN         /* gate_off of a node no end gates (a gated one's is a difference of times) */
#define FNODE_PARTS (UINT32_C(1) << 31) /* a rank index is an int: its sign bit is free */
#define FNODE_NO_INST INT64_C(-1)
_Static_assert(sizeof(struct fnode) == 40, "a follow record is 40 bytes");

/* A node in a replay that follows the walk: its arrival and end.  Its
 * gap's and under's local time when the counterfactual changes them are
 * apart (struct flocal, read only then: the others are fnode's), and so
 * is the latest end among those it waits for (struct graph's gmax, which
 * holds its latest synchronization once it has arrived, when asked for:
 * REPLAY_WAIT, REPLAY_CRITICAL).  Two arrays of 16 bytes a node, not one
 * of 32: each fits a hole the graph's build left in the heap, where the
 * one did not and was placed on top. */
struct fstate {
    int64_t arr, end;
};
/* A node's gap's and under's local time under the counterfactual (in a
 * replay that changes none, the critical path's times at its arrival and
 * end, struct follow_cp). */
struct flocal {
    double gap, under;
};
/* local_times() writes a gap's and an under's local time side by side */
_Static_assert(offsetof(struct nstate, under) == offsetof(struct nstate, gap) + sizeof(double), "under after gap");
_Static_assert(offsetof(struct flocal, under) == offsetof(struct flocal, gap) + sizeof(double), "under after gap");

/* What the walk reads and counts of a flat node, in one record (the walk
 * goes from rank to rank, and a node's fields spread over five arrays cost
 * a cache miss each): its waiter (flat, -1 none), ends it waits for still
 * to come, its instances not yet complete, its calls and the first one's
 * place in cinst (a node of one call: that call's instance itself). */
struct wnode {
    int32_t waiter;
    uint32_t gate_left;
    uint32_t call;
    uint16_t ncalls, pending;
};

struct graph {
    struct sp_model *m;
    struct inst *insts;
    struct part *parts;
    size_t ninsts;
    size_t *node_base; /* per rank: offset of its nodes in the flat arrays */
    size_t *call_base; /* per rank: offset of its calls in cinst */
    int32_t *cinst;    /* per call: its inst, packed (read at every node); a walked
                          graph's goes once its records are made */
    struct gnode *gn;
    /* per flat node: its place in the records and a replay's node states
     * (fn and fs, or gn and ns).  The walk completes an instance by
     * visiting its participants rank after rank, and each then goes on to
     * its next node: placed in the order the walk meets them (walk_order),
     * or else step by step, the k-th node of the step of every rank side
     * by side (build_perm), those visits walk memory in order instead of
     * jumping a rank's chain length each */
    uint32_t *perm;
    size_t total;       /* nodes over all ranks */
    uint32_t *peers;    /* flat node ids grouped by (step, key) */
    int32_t *peer_rank; /* the rank index of each of peers[] */
    uint32_t max_peers; /* the largest group */
    uint32_t *gid;      /* per flat node: its group, in order of peers[] */
    uint32_t ngroups;
    /* per group: where it starts in peers[] (and [ngroups]: total), so
     * its size is the difference with the next.  A few thousand groups,
     * in cache: per node only its group is kept (a group's first and size
     * per node were two more arrays of a value per node, written out of
     * order and read through gid's neighbour) */
    uint32_t *group_first;
    /* per group, window (gap, under) and component: the median over the
     * group, computed at the first replay that wants it (imbalance) */
    float (*gmed)[2][SP_LOC_N];
    float (*gmed_early)[2][SP_LOC_N]; /* the same, from gather_groups, until asked */
    /* per group of at least WIN_MIN_PEERS: where its WIN_N sorted values
     * of each window and component start in win (UINT32_MAX: none kept),
     * built before the first counterfactual that fixes ranks */
    uint32_t *win_at;
    float *win;
    int64_t *start; /* per rank: global start of the first analyzed step */
    int nsteps;
    /* the ends each node waited for (gates): per flat node, the later node
     * of its rank that started first after its recorded end (-1: none);
     * how many nodes name it so; and its recorded arrival minus the latest
     * recorded end among them */
    int32_t *waiter;
    uint32_t *gate_n;
    int64_t *gate_off;
    /* per flat node, while the graph is built: in how many instances it
     * takes part (gn's nparts); the walk's record (struct wnode), made
     * rank by rank with the gates, while the rank's nodes are in cache
     * (walk_order reading them would take a cache miss per node) */
    uint16_t *nparts;
    struct wnode *wn;
    /* while the graph is built: rank_gates' prefix maxima of arrivals, and
     * rank_steps' nodes per step (by_step: every rank's in step order;
     * step_top: the last step seen) for build_peers */
    int64_t *gate_pm;
    size_t *step_at;
    int by_step;
    uint32_t step_top;
    /* per place in gn: the under's local time as recorded (0 for a step
     * end), what a replay that changes no local time of the node reads */
    double *rec_under;
    /* per flat node: which local-time components it has, bit c for its
     * gap's component c and bit NZ_UNDER + c for its under's.  A
     * counterfactual that only removes components leaves a node without
     * them at its recorded local time (its sum without a zero term is the
     * same sum), so it need not be worked out again */
    uint16_t *nz;
    uint32_t nz_all; /* every node's nz together: the components some node has */
    /* the base replay's per rank last replayed end and nodes placed, for
     * sp_model_replay_check (the same replay, not run again) */
    int64_t *base_last;
    size_t base_placed;
    /* the node states, one replay after another: allocated once, so that
     * a dozen replays do not map and clear their pages a dozen times */
    struct nstate *ns;
    void *ns_mem; /* ns as allocated (ns is aligned in it); walked: fs */
    /* The walk, worked out once (walk_order).  What a replay does next
     * never depends on a time: a node arrives once the ends it waits for
     * are final, an instance completes at its last arrival, each a count
     * of events reaching zero, so every replay of the graph can take the
     * same steps in the same order, whatever its counterfactual.  When
     * that walk places every node without forcing an instance (walked),
     * the nodes are placed in the order it meets them (perm), and every
     * replay follows it (run_follow): arrivals in place order, the
     * instances completed in between, without the counts and with its
     * reads of the nodes in memory order. */
    struct comp *comps; /* every instance's completion, in order */
    size_t ncomps;
    int walked;
    /* walked: per place the follow record and state, and the latest end
     * among those it waits for, which each arrival reads and puts back to
     * INT64_MIN, so every replay finds them so without a pass over the
     * nodes (gn, ns and rec_under are then not made).  Once a node has
     * arrived no end is waited for by it any more: a replay that asks for
     * the synchronizations keeps its node's there (run_follow's sync),
     * and puts them back after (no array of its own at the peak) */
    struct fnode *fn;
    /* per place: its node's components (nz; no under's for a step end,
     * which has none); in fn's block, after its records (allocated apart,
     * it took a piece of the hole that a replay's states then no longer
     * fitted, and they went on top of the heap) */
    uint16_t *fz;
    struct fstate *fs;
    struct flocal *fl;
    int64_t *gmax;
    /* walked: per instance its last arrival so far and the first node to
     * reach it (the critical path's who), put back to INT64_MIN as it
     * completes, as gmax */
    int64_t *ilast;
    uint32_t *iwho;
};

/* An instance's completion in the walk, after how many arrivals. */
struct comp {
    uint32_t inst, after;
};

/* ---- a counterfactual ---- */

struct cf {
    const uint8_t *fix;      /* per rank index: local time to the peers' median */
    int fix_n;               /* how many ranks fix holds */
    int imbalance;           /* every rank to the per-step median, input aside */
    const float *busy_scale; /* per rank index, NULL: 1 */
    uint32_t drop;           /* sp_loc components removed (bit per component) */
    double transfer;         /* transfer scale: 1 as recorded, 0 hidden */
    double cross;            /* transfer scale of instances spanning hosts */
    /* with fix: per group, the median of the peers outside the fixed set
     * (window, component), worked out at the first node of the group that
     * asks (with_fix_medians); NULL: each node works it out */
    double (*fmed)[2][SP_LOC_N];
    uint8_t *fmed_have; /* per group, bit per window */
    /* the balanced pipeline's wait taken off the replayed step (the ideal
     * with pipeline_bubble; no duration changes, so the walk never reads
     * it and a node-by-node replay cannot draw it) */
    int bubble;
};

struct result {
    double step_ms;    /* mean over ranks of the replayed step */
    double wait_share; /* replayed time waiting in NCCL kernels / all */
    /* when asked: transfer on each rank's longest path to its end, per
     * step, mean over ranks */
    double path_transfer_ms;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

SP_KTH_DEFINE(kth_f, float)

static double median_f(float *v, size_t n)
{
    if (n == 0)
        return 0;
    double hi = kth_f(v, n, n / 2);
    return n % 2 ? hi : 0.5 * ((double)kth_f(v, n, n / 2 - 1) + hi);
}

static const struct sp_rnode *node_at(const struct graph *g, uint32_t flat, int *rank)
{
    int a = 0, b = g->m->nranks;
    while (b - a > 1) { /* last rank whose base <= flat */
        int mid = (a + b) / 2;
        if (g->node_base[mid] <= flat)
            a = mid;
        else
            b = mid;
    }
    *rank = a;
    return &g->m->ranks[a].nodes[flat - g->node_base[a]];
}

/* The rank of a node a few ranks after *r's (a group's nodes come in flat
 * order, most often of ranks next to each other): *r moved to the last
 * rank whose base <= flat, as node_at finds it; 0 when that is farther
 * than RANK_STEPS ranks (node_at then searches: 10 steps at 1024 ranks). */
#define RANK_STEPS 8
static int rank_after(const struct graph *g, uint32_t flat, int *r)
{
    for (int i = 0; i < RANK_STEPS; i++) {
        if (*r + 1 >= g->m->nranks || g->node_base[*r + 1] > flat)
            return 1;
        ++*r;
    }
    return *r + 1 >= g->m->nranks || g->node_base[*r + 1] > flat;
}

/* The p-th node of a peer group (an index into peers[]). */
/* How many nodes group id holds (its peers[] run). */
static inline uint32_t group_n(const struct graph *g, uint32_t id)
{
    return g->group_first[id + 1] - g->group_first[id];
}

static inline const struct sp_rnode *peer_node(const struct graph *g, uint32_t p)
{
    int r = g->peer_rank[p];
    return &g->m->ranks[r].nodes[g->peers[p] - g->node_base[r]];
}

/* The key of each node: what op it is, comparable across ranks. */
struct keyrec {
    uint64_t key;
    uint32_t step, flat;
};

static int cmp_keyrec(const void *a, const void *b)
{
    const struct keyrec *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->flat > y->flat) - (x->flat < y->flat);
}

/* A communicator's class: communicators of the same size whose first call
 * is the same op of the same size, called as often in the first step, are
 * one kind (the tensor-parallel groups of a job); a data-parallel
 * communicator of the same size is another. */
static uint64_t class_from(const struct sp_rank *r, size_t c)
{
    const struct sp_coll_call *x = &r->calls[c];
    uint64_t in_step = 0;
    uint16_t step = r->nodes[x->node].step;
    for (size_t d = c; d < r->ncalls; d++)
        if (r->calls[d].comm == x->comm && r->calls[d].node >= 0)
            in_step += r->nodes[r->calls[d].node].step == step;
    return mix(mix(mix(x->nranks, x->op), x->bytes), in_step);
}

static uint64_t comm_class(const struct sp_model *m, uint64_t comm)
{
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        for (size_t c = 0; c < r->ncalls; c++)
            if (r->calls[c].comm == comm && r->calls[c].node >= 0)
                return class_from(r, c);
    }
    return comm;
}

/* comm_class() of each communicator, worked out once for the whole graph
 * (it scans every rank's calls): open addressing on the id. */
struct class_memo {
    uint64_t *comm, *cls;
    uint8_t *used;
    size_t cap, n; /* cap a power of 2, or 0 */
};

static int memo_grow(struct class_memo *cm)
{
    size_t cap = cm->cap ? 2 * cm->cap : 64;
    uint64_t *comm = malloc(cap * sizeof *comm), *cls = malloc(cap * sizeof *cls);
    uint8_t *used = calloc(cap, 1);
    if (!comm || !cls || !used) {
        free(comm);
        free(cls);
        free(used);
        return -1;
    }
    for (size_t i = 0; i < cm->cap; i++) {
        if (!cm->used[i])
            continue;
        size_t j = mix(cm->comm[i], 0) & (cap - 1);
        while (used[j])
            j = (j + 1) & (cap - 1);
        used[j] = 1;
        comm[j] = cm->comm[i];
        cls[j] = cm->cls[i];
    }
    free(cm->comm);
    free(cm->cls);
    free(cm->used);
    cm->comm = comm;
    cm->cls = cls;
    cm->used = used;
    cm->cap = cap;
    return 0;
}

static uint64_t class_of(struct class_memo *cm, const struct sp_model *m, uint64_t comm)
{
    size_t i = 0;
    if (cm->cap) {
        for (i = mix(comm, 0) & (cm->cap - 1); cm->used[i]; i = (i + 1) & (cm->cap - 1))
            if (cm->comm[i] == comm)
                return cm->cls[i];
    }
    uint64_t cls = comm_class(m, comm);
    if (2 * (cm->n + 1) > cm->cap) {
        if (memo_grow(cm) < 0)
            return cls; /* no memory: asked again next time */
        for (i = mix(comm, 0) & (cm->cap - 1); cm->used[i]; i = (i + 1) & (cm->cap - 1))
            ;
    }
    cm->used[i] = 1;
    cm->comm[i] = comm;
    cm->cls[i] = cls;
    cm->n++;
    return cls;
}

/* Every communicator's class in one sweep over the calls, each from its
 * first call as comm_class() finds it (rank by rank, call by call): asked
 * one by one, each would scan the ranks before the first that calls on
 * it, and a job with a communicator per host would pay ranks x hosts. */
#define MEMO_SEEN 8 /* memo_fill: communicators remembered per rank */
static void memo_fill(struct class_memo *cm, const struct sp_model *m)
{
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        /* the communicators this rank has called on so far (all in the
         * memo): a rank's calls cycle through a few, and a look at these
         * costs less than the hash and probe per call */
        uint64_t seen[MEMO_SEEN];
        int nseen = 0, next_out = 0;
        for (size_t c = 0; c < r->ncalls; c++) {
            uint64_t comm = r->calls[c].comm;
            if (r->calls[c].node < 0)
                continue;
            int known = 0;
            for (int s = 0; s < nseen && !known; s++)
                known = seen[s] == comm;
            if (known)
                continue;
            if (nseen < MEMO_SEEN) {
                seen[nseen++] = comm;
            } else { /* more than that: the oldest one replaced */
                seen[next_out] = comm;
                next_out = (next_out + 1) % MEMO_SEEN;
            }
            size_t j = 0;
            int found = 0;
            if (cm->cap)
                for (j = mix(comm, 0) & (cm->cap - 1); cm->used[j]; j = (j + 1) & (cm->cap - 1))
                    if (cm->comm[j] == comm) {
                        found = 1;
                        break;
                    }
            if (found)
                continue;
            if (2 * (cm->n + 1) > cm->cap) {
                if (memo_grow(cm) < 0)
                    return; /* the rest asked one by one */
                for (j = mix(comm, 0) & (cm->cap - 1); cm->used[j]; j = (j + 1) & (cm->cap - 1))
                    ;
            }
            cm->used[j] = 1;
            cm->comm[j] = comm;
            cm->cls[j] = class_from(r, c);
            cm->n++;
        }
    }
}

static void memo_free(struct class_memo *cm)
{
    free(cm->comm);
    free(cm->cls);
    free(cm->used);
}

#define MAX_COMMS 64
struct comm_count {
    uint64_t comm, cls;
    uint32_t n;
    /* the key's hash of (class, op, stage) for the last op seen on the
     * communicator (UINT32_MAX: none yet): a communicator's calls are
     * mostly one op, and the two mixes are then made once */
    uint32_t op;
    uint64_t op_h;
};

static uint64_t node_key(const struct sp_model *m, const struct sp_rank *r, const struct sp_rnode *n,
                         struct comm_count *cc, int *ncc, uint32_t *p2p_idx, struct class_memo *memo)
{
    if (!n->ncalls)
        return mix(0xe4d, (uint64_t)(r->stage + 1));
    const struct sp_coll_call *c = &r->calls[n->call];
    if (sp_op_is_p2p(c->op)) {
        /* in a pipeline, the stage and its first op; elsewhere (an
         * all-to-all, a ring) the ops with each peer's distance from the
         * rank, in any order: every rank of an all-to-all has the same;
         * then how many p2p calls the rank made before it in the step.
         * Calls, not nodes: a send and a recv of one communicate call are
         * one node on a rank where they ended together (it arrived last in
         * both pairs) and two on its peer, and counting nodes would put
         * every later op of the step out of step with its peers'. */
        uint64_t h = mix(0x929, (uint64_t)(r->stage + 1)), set = 0;
        for (uint32_t i = 0; i < n->ncalls; i++) {
            const struct sp_coll_call *x = &r->calls[n->call + i];
            if (r->stage >= 0) {
                if (!i)
                    h = mix(h, x->op);
                continue;
            }
            int64_t d = x->peer;
            if (x->peer >= 0 && x->crank >= 0 && x->nranks > 0)
                d = ((int64_t)x->peer - x->crank + x->nranks) % x->nranks;
            set += mix(x->op, (uint64_t)d);
        }
        uint64_t k = mix(mix(h, set), *p2p_idx);
        *p2p_idx += n->ncalls;
        return k;
    }
    int i = 0;
    while (i < *ncc && cc[i].comm != c->comm)
        i++;
    if (i == *ncc) {
        if (*ncc == MAX_COMMS)
            return mix(c->comm, c->seq);
        cc[i] = (struct comm_count){c->comm, class_of(memo, m, c->comm), 0, UINT32_MAX, 0};
        (*ncc)++;
    }
    /* in a pipeline a collective's peers are the ranks of the same stage */
    if (cc[i].op != c->op) {
        cc[i].op = c->op;
        cc[i].op_h = mix(mix(cc[i].cls, c->op), (uint64_t)(r->stage + 1));
    }
    return mix(cc[i].op_h, cc[i].n++);
}

/* Scratch of group_keys, grown as needed. */
struct peer_scratch {
    struct sp_pair_key *pk;
    uint32_t *place, *grp;
    size_t cap;
};

/* The peer groups of k[from..to), the keys of one step (or of all, by
 * (step, key)), in flat order: a group per distinct (step, key), in that
 * order, its nodes in flat order (as a stable sort would lay them out).
 * The keys are not moved: each node goes straight to its place in peers[]
 * (sp_pair_runs), its rank found by walking the ranks along (the keys
 * come in flat order).  Without memory for that, the keys are sorted and
 * the groups read off them. */
static void group_keys(struct graph *g, struct keyrec *k, size_t from, size_t to, struct peer_scratch *ps)
{
    size_t cnt = to - from;
    if (!cnt)
        return;
    if (cnt > ps->cap) {
        size_t cap = cnt > 2 * ps->cap ? cnt : 2 * ps->cap;
        void *a = realloc(ps->pk, cap * sizeof *ps->pk);
        ps->pk = a ? a : ps->pk;
        void *b = a ? realloc(ps->place, cap * sizeof *ps->place) : NULL;
        ps->place = b ? b : ps->place;
        void *c = b ? realloc(ps->grp, cap * sizeof *ps->grp) : NULL;
        ps->grp = c ? c : ps->grp;
        if (c)
            ps->cap = cap;
    }
    uint32_t *runs = NULL;
    size_t nruns = 0;
    if (cnt <= ps->cap) {
        for (size_t i = 0; i < cnt; i++)
            ps->pk[i] = (struct sp_pair_key){k[from + i].step, k[from + i].key};
        if (sp_pair_runs(ps->pk, cnt, ps->place, &runs, &nruns) < 0)
            runs = NULL;
    }
    if (runs) {
        uint32_t base = (uint32_t)g->ngroups, pos = 0;
        for (size_t r = 0; r < nruns; r++) {
            if (runs[r] > g->max_peers)
                g->max_peers = runs[r];
            g->group_first[g->ngroups++] = (uint32_t)from + pos;
            for (uint32_t x = 0; x < runs[r]; x++)
                ps->grp[pos + x] = base + (uint32_t)r;
            pos += runs[r];
        }
        free(runs);
        /* in locals: the stores below are of 32-bit integers, which the
         * compiler must take to maybe alias the rank count */
        int r = 0, nranks = g->m->nranks;
        const size_t *base_of = g->node_base;
        const uint32_t *place = ps->place, *grp = ps->grp;
        uint32_t *peers = g->peers + from, *gid = g->gid;
        int32_t *peer_rank = g->peer_rank + from;
        for (size_t i = 0; i < cnt; i++) {
            uint32_t flat = k[from + i].flat, x = place[i];
            while (r + 1 < nranks && base_of[r + 1] <= flat)
                r++;
            peers[x] = flat;
            peer_rank[x] = r;
            gid[flat] = grp[x];
        }
        return;
    }
    qsort(k + from, cnt, sizeof *k, cmp_keyrec);
    for (size_t a = from; a < to;) {
        size_t b = a;
        while (b < to && k[b].step == k[a].step && k[b].key == k[a].key)
            b++;
        if (b - a > g->max_peers)
            g->max_peers = (uint32_t)(b - a);
        int r = 0;
        for (size_t x = a; x < b; x++) {
            if (x == a || !rank_after(g, k[x].flat, &r))
                node_at(g, k[x].flat, &r);
            g->peers[x] = k[x].flat;
            g->peer_rank[x] = r;
            g->gid[k[x].flat] = g->ngroups;
        }
        g->group_first[g->ngroups++] = (uint32_t)a;
        a = b;
    }
}

/* Rank r's nodes counted per step, for build_peers, and whether they come
 * in step order (a node's step is 16 bits, and only the steps up to the
 * last one seen are read): in the pass over the rank that finds its gates,
 * while its nodes are in cache. */
static void rank_steps(struct graph *g, int r)
{
    const struct sp_rank *rk = &g->m->ranks[r];
    for (size_t j = 0; g->step_at && g->by_step && j < rk->nnodes; j++) {
        uint16_t st = rk->nodes[j].step;
        if (j && st < rk->nodes[j - 1].step)
            g->by_step = 0;
        if (st > g->step_top)
            g->step_top = st;
        g->step_at[st + 1]++;
    }
}

static int build_peers(struct graph *g)
{
    struct sp_model *m = g->m;
    struct keyrec *k = malloc((g->total + 1) * sizeof *k);
    g->peers = malloc((g->total + 1) * sizeof *g->peers);
    /* room for a group per node; only the groups' entries are touched */
    g->group_first = malloc((g->total + 1) * sizeof *g->group_first);
    g->peer_rank = malloc((g->total + 1) * sizeof *g->peer_rank);
    g->gid = malloc((g->total + 1) * sizeof *g->gid);
    if (!k || !g->peers || !g->group_first || !g->peer_rank || !g->gid) {
        free(k);
        return -1;
    }
    /* Keys per rank and step, each step's run of a rank keyed in order (a
     * collective's key counts its calls on the communicator in the step).
     * When every rank's nodes come in step order (they are built so), each
     * step's keys are placed together, rank after rank, and each step's
     * are grouped alone: the same groups as for all at once, without
     * scratch as large as the job.  The nodes are read rank after rank, in
     * memory order (step after step would jump from rank to rank, a cache
     * miss per node and per call at thousands of ranks). */
    /* per step, where its keys go next (by_step), then where they end:
     * counted rank by rank while the instances were built (rank_steps) */
    size_t *at = g->step_at;
    int by_step = at != NULL && g->by_step;
    uint32_t top = g->step_top;
    for (uint32_t st = 0; by_step && st <= top; st++)
        at[st + 1] += at[st];
    size_t n = 0;
    struct class_memo memo = {0};
    memo_fill(&memo, m);
    for (int i = 0; i < m->nranks; i++) {
        struct sp_rank *r = &m->ranks[i];
        struct comm_count cc[MAX_COMMS];
        int ncc = 0, step = -1;
        uint32_t p2p_idx = 0;
        for (size_t j = 0; j < r->nnodes; j++) {
            struct sp_rnode *nd = &r->nodes[j];
            if (nd->step != step) {
                step = nd->step;
                ncc = 0;
                p2p_idx = 0;
            }
            uint64_t key = node_key(m, r, nd, cc, &ncc, &p2p_idx, &memo);
            nd->key = (uint32_t)key;
            k[by_step ? at[nd->step]++ : n] = (struct keyrec){key, nd->step, (uint32_t)(g->node_base[i] + j)};
            n++;
        }
    }
    memo_free(&memo);
    /* at[st] is now where step st's keys end; each step's keys are
     * grouped alone (all of them at once when the nodes were not in step
     * order) */
    struct peer_scratch ps = {0};
    for (uint32_t st = 0; by_step && st <= top; st++)
        group_keys(g, k, st ? at[st - 1] : 0, at[st], &ps);
    if (!by_step)
        group_keys(g, k, 0, n, &ps);
    free(at);
    g->step_at = NULL;
    free(ps.pk);
    free(ps.place);
    free(ps.grp);
    g->group_first[g->ngroups] = (uint32_t)n;
    free(k);
    return 0;
}

/* Which node waited for each node's end.  In the recording a node that
 * started after an op of its rank had ended may have waited for it (the
 * op before it on its stream, or the compute stream's wait for every op of
 * a communicate call); one that started while the op ran did not.  Each
 * node is waited for by the first later node that started at or after its
 * end: the node-to-node order is kept, and ops that ran concurrently (a
 * send and a recv of one call on their own streams) are not ordered.
 * Arrivals come in time order within a rank (calls are sorted by start),
 * so a binary search over the prefix maximum of arrivals finds it. */
static int gates_alloc(struct graph *g)
{
    g->waiter = malloc((g->total + 1) * sizeof *g->waiter);
    g->gate_n = calloc(g->total + 1, sizeof *g->gate_n);
    g->gate_off = malloc((g->total + 1) * sizeof *g->gate_off);
    g->gate_pm = malloc((g->total + 1) * sizeof *g->gate_pm);
    g->wn = malloc((g->total + 1) * sizeof *g->wn);
    return g->waiter && g->gate_n && g->gate_off && g->gate_pm && g->wn ? 0 : -1;
}

/* Rank r's gates and its nodes' walk records (gates_alloc made their
 * arrays; the participants are counted and cinst is filled). */
static void rank_gates(struct graph *g, int r)
{
    /* a rank's part of pm is read only while its waiters are found; it
     * then holds the latest end each of its nodes waited for */
    int64_t *pm = g->gate_pm, *latest = pm;
    const struct sp_rank *rk = &g->m->ranks[r];
    size_t base = g->node_base[r], n = rk->nnodes;
    for (size_t j = 0; j < n; j++)
        pm[base + j] = j && pm[base + j - 1] > rk->nodes[j].a ? pm[base + j - 1] : rk->nodes[j].a;
    for (size_t j = 0; j < n; j++) {
        int64_t e = rk->nodes[j].e;
        /* the first k > j with pm[k] >= e: mostly a node or two on
         * (ops in turn), so bounded by steps doubling from j + 1 before
         * the binary search, which then has a few to halve, not the
         * rest of the rank */
        size_t lo = j + 1, hi = n, step = 1;
        while (lo + step < n && pm[base + lo + step - 1] < e) {
            lo += step;
            step *= 2;
        }
        if (lo + step < n)
            hi = lo + step;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (pm[base + mid] >= e)
                hi = mid;
            else
                lo = mid + 1;
        }
        g->waiter[base + j] = lo < n && rk->nodes[lo].a >= e ? (int32_t)(base + lo) : -1;
    }
    for (size_t j = 0; j < n; j++)
        latest[base + j] = INT64_MIN;
    for (size_t j = 0; j < n; j++) {
        int32_t w = g->waiter[base + j];
        if (w < 0)
            continue;
        g->gate_n[w]++;
        /* the time between two steps (a pause of the recording) is no
         * step's: a gate into the next step counts from its start */
        int64_t e = rk->nodes[j].e;
        const struct sp_rnode *wn = &rk->nodes[(size_t)w - base];
        size_t ws = (size_t)g->m->step_lo + wn->step;
        if (wn->step != rk->nodes[j].step && ws < (size_t)rk->nsteps) {
            int64_t from = sp_model_global(g->m, rk, rk->steps[ws].start);
            e = from > e ? from : e;
        }
        if (e > latest[w])
            latest[w] = e;
    }
    /* a node's waiter is a later node of its rank: the rank's counts are final */
    for (size_t j = 0; j < n; j++) {
        const struct sp_rnode *nd = &rk->nodes[j];
        size_t f = base + j;
        uint32_t call = (uint32_t)(g->call_base[r] + nd->call);
        g->gate_off[f] = g->gate_n[f] ? nd->a - latest[f] : 0;
        g->wn[f] = (struct wnode){g->waiter[f], g->gate_n[f], nd->ncalls == 1 ? (uint32_t)g->cinst[call] : call,
                                  nd->ncalls, g->nparts[f]};
    }
}

static int cmp_part(const void *a, const void *b)
{
    const struct part *x = a, *y = b;
    return (x->r > y->r) - (x->r < y->r);
}

/* What build_instances reads of a call after its first pass: its node
 * (-1: none, or no instance), and whether it is a p2p call, a send.  A
 * call's record is 112 bytes, and each pass over them all streamed the
 * whole table (360 MB at 1024 ranks x 100 steps). */
struct ccall {
    int32_t node;
    uint8_t p2p, send;
};

/* The instances and their participants, and each call's instance in
 * cinst (allocated by the caller).  A participant's at is its flat node
 * until the nodes are placed (graph_build). */
static int build_instances(struct graph *g)
{
    struct sp_model *m = g->m;
    g->ninsts = m->coll_instances;
    g->insts = calloc(g->ninsts + 1, sizeof *g->insts);
    int32_t *fill = calloc(g->ninsts + 1, sizeof *fill);
    g->nparts = calloc(g->total + 1, sizeof *g->nparts);
    size_t ncalls = 0;
    for (int i = 0; i < m->nranks; i++)
        ncalls += m->ranks[i].ncalls;
    struct ccall *cc = malloc((ncalls + 1) * sizeof *cc);
    if (!g->insts || !fill || !g->nparts || !cc) {
        free(fill);
        free(cc);
        return -1;
    }
    /* the participants counted, and cinst and cc filled, in one pass over
     * the calls */
    for (int i = 0; i < m->nranks; i++)
        for (size_t c = 0; c < m->ranks[i].ncalls; c++) {
            const struct sp_coll_call *x = &m->ranks[i].calls[c];
            int part = x->node >= 0 && x->inst >= 0 && (size_t)x->inst < g->ninsts;
            g->cinst[g->call_base[i] + c] = x->inst;
            cc[g->call_base[i] + c] = (struct ccall){part ? x->node : -1, (uint8_t)sp_op_is_p2p(x->op),
                                                     x->op == SP_NCCL_SEND};
            if (part)
                g->insts[x->inst].n++;
        }
    int32_t off = 0;
    for (size_t t = 0; t < g->ninsts; t++) {
        g->insts[t].first = off;
        off += g->insts[t].n;
        g->insts[t].last = INT64_MIN;
    }
    if (!(g->parts = malloc(((size_t)off + 1) * sizeof *g->parts))) {
        free(fill);
        free(cc);
        return -1;
    }
    for (int i = 0; i < m->nranks; i++) {
        struct sp_rank *r = &m->ranks[i];
        for (size_t c = 0; c < r->ncalls; c++) {
            const struct ccall *x = &cc[g->call_base[i] + c];
            if (x->node < 0)
                continue;
            int32_t t = g->cinst[g->call_base[i] + c];
            struct inst *in = &g->insts[t];
            const struct sp_rnode *nd = &r->nodes[x->node];
            size_t flat = g->node_base[i] + (size_t)x->node;
            g->parts[in->first + fill[t]++] = (struct part){i, x->node, (uint32_t)flat, 0};
            g->nparts[flat]++;
            if (nd->a > in->last)
                in->last = nd->a;
            in->p2p = x->p2p;
            in->sends += x->send;
        }
    }
    /* a node's synchronization point: the latest last arrival over its
     * instances (a group's pairs end together, when the latest has); then
     * each participant's tail, its recorded end past that point.  Both
     * rank after rank (one rank's calls read twice while in cache), in
     * the order the participants were placed: the nodes and their sync
     * points are read in memory order (instance after instance, each
     * participant was a cache miss at thousands of ranks), and a
     * participant's place is found again by counting. */
    int64_t *sync = malloc((g->total + 1) * sizeof *sync);
    if (!sync || gates_alloc(g) < 0) {
        free(fill);
        free(cc);
        free(sync);
        return -1;
    }
    for (size_t f = 0; f < g->total; f++)
        sync[f] = INT64_MIN;
    memset(fill, 0, (g->ninsts + 1) * sizeof *fill);
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        const struct ccall *rc = &cc[g->call_base[i]];
        const int32_t *ri = &g->cinst[g->call_base[i]];
        for (size_t c = 0; c < r->ncalls; c++) {
            if (rc[c].node < 0)
                continue;
            size_t flat = g->node_base[i] + (size_t)rc[c].node;
            if (g->insts[ri[c]].last > sync[flat])
                sync[flat] = g->insts[ri[c]].last;
        }
        for (size_t c = 0; c < r->ncalls; c++) {
            if (rc[c].node < 0)
                continue;
            int64_t e = r->nodes[rc[c].node].e, s = sync[g->node_base[i] + (size_t)rc[c].node];
            g->parts[g->insts[ri[c]].first + fill[ri[c]]++].tail = e - s > 0 ? e - s : 0;
        }
        /* the rank's gates and its nodes per step, while its nodes are in
         * cache (a pass of their own read every node record again: a
         * third of a gigabyte at 1024 ranks x 100 steps) */
        rank_gates(g, i);
        rank_steps(g, i);
    }
    free(g->gate_pm);
    g->gate_pm = NULL;
    free(fill);
    free(cc);
    for (size_t t = 0; t < g->ninsts; t++) {
        struct inst *in = &g->insts[t];
        int sorted = 1; /* filled rank after rank: already in order */
        for (int32_t p = 1; sorted && p < in->n; p++)
            sorted = g->parts[in->first + p - 1].r <= g->parts[in->first + p].r;
        if (!sorted)
            qsort(g->parts + in->first, (size_t)in->n, sizeof *g->parts, cmp_part);
        in->pair = in->p2p && in->n == 2 && in->sends == 1;
        for (int32_t p = 0; p < in->n; p++)
            in->spans |= m->ranks[g->parts[in->first + p].r].host != m->ranks[g->parts[in->first].r].host;
    }
    free(sync);
    return 0;
}

struct walk {
    struct graph *g;
    struct wnode *wn;    /* per flat node */
    int32_t *need;       /* per instance: participants still to arrive */
    size_t *cur;         /* per rank: its next node to arrive */
    uint32_t *queue, nq; /* last in, first out, as run_replay_nodes' */
    uint32_t narr;
    int twice; /* a rank takes part twice in one instance */
};

static void walk_advance(struct walk *wk, int r)
{
    struct graph *g = wk->g;
    size_t base = g->node_base[r], n = g->m->ranks[r].nnodes;
    while (wk->cur[r] < n) {
        size_t j = wk->cur[r], f = base + j;
        const struct wnode *x = &wk->wn[f];
        if (x->gate_left)
            return;
        g->perm[f] = wk->narr++;
        wk->cur[r] = j + 1;
        for (uint32_t c = 0; c < x->ncalls; c++) {
            int32_t in = x->ncalls == 1 ? (int32_t)x->call : g->cinst[x->call + c];
            if (in >= 0 && (size_t)in < g->ninsts && --wk->need[in] == 0)
                wk->queue[wk->nq++] = (uint32_t)in;
        }
        if (!x->pending && x->waiter >= 0)
            wk->wn[x->waiter].gate_left--;
    }
}

static void walk_complete(struct walk *wk, uint32_t in_idx)
{
    struct graph *g = wk->g;
    const struct inst *in = &g->insts[in_idx];
    g->comps[g->ncomps++] = (struct comp){in_idx, wk->narr};
    for (int32_t p = 0; p < in->n; p++) {
        struct part *pt = &g->parts[in->first + p];
        struct wnode *x = &wk->wn[pt->at];
        wk->twice |= p && pt[-1].r == pt->r;
        if (!x->pending || --x->pending)
            continue;
        pt->node |= PART_FINAL;
        int32_t w = x->waiter;
        if (w >= 0 && --wk->wn[w].gate_left == 0 && (size_t)w == g->node_base[pt->r] + wk->cur[pt->r])
            walk_advance(wk, pt->r);
    }
}

/* The walk every replay takes (struct graph's walked), from the counts
 * alone: run_replay_nodes' advance, node_done and complete without the
 * times, in their order (the first arrival of the latest and the first of
 * the latest ends a node waits for, which the critical path follows, are
 * then the same), over flat nodes, a rank's nodes side by side (the walk
 * keeps each rank's few in cache).  Sets g->perm to the order of arrival,
 * g->comps, each participant's final and g->walked; 0 when the walk
 * would have to force an instance (steps cut differently on two ranks:
 * build_perm then places the nodes, and every replay walks on its own),
 * -1 out of memory. */
static int walk_order(struct graph *g)
{
    struct walk wk = {.g = g};
    size_t nr = (size_t)g->m->nranks;
    g->perm = malloc((g->total + 1) * sizeof *g->perm);
    g->comps = malloc((g->ninsts + 1) * sizeof *g->comps);
    wk.wn = g->wn; /* made with the gates (rank_gates) */
    g->wn = NULL;
    wk.need = malloc((g->ninsts + 1) * sizeof *wk.need);
    wk.cur = calloc(nr + 1, sizeof *wk.cur);
    wk.queue = malloc((g->ninsts + 1) * sizeof *wk.queue);
    int rc = -1;
    if (!g->perm || !g->comps || !wk.wn || !wk.need || !wk.cur || !wk.queue)
        goto out;
    for (size_t t = 0; t < g->ninsts; t++)
        wk.need[t] = g->insts[t].n;
    for (int r = 0; r < g->m->nranks; r++)
        walk_advance(&wk, r);
    while (wk.nq)
        walk_complete(&wk, wk.queue[--wk.nq]);
    /* every node arrived and every instance completed: nothing was left
     * for a replay to force.  (A rank twice in one instance would take its
     * steps after the instance in a different order than advance() takes
     * them, in the middle of it: such a graph walks on its own.) */
    g->walked = wk.narr == g->total && !wk.twice;
    for (size_t t = 0; g->walked && t < g->ninsts; t++)
        g->walked = wk.need[t] == 0;
    rc = g->walked;
out:
    if (rc <= 0) {
        free(g->perm);
        free(g->comps);
        g->perm = NULL;
        g->comps = NULL;
        g->ncomps = 0;
        g->walked = 0;
    }
    free(wk.wn);
    free(wk.need);
    free(wk.cur);
    free(wk.queue);
    return rc;
}

static void graph_free(struct graph *g)
{
    free(g->nparts);
    free(g->wn);
    free(g->waiter);
    free(g->gate_n);
    free(g->gate_off);
    free(g->gate_pm);
    free(g->step_at);
    free(g->peer_rank);
    free(g->gid);
    free(g->gmed);
    free(g->gmed_early);
    free(g->win_at);
    free(g->win);
    free(g->insts);
    free(g->parts);
    free(g->node_base);
    free(g->call_base);
    free(g->cinst);
    free(g->gn);
    free(g->perm);
    free(g->peers);
    free(g->group_first);
    free(g->start);
    free(g->rec_under);
    free(g->nz);
    free(g->base_last);
    free(g->ns_mem);
    free(g->fl);
    free(g->gmax);
    free(g->comps);
    free(g->fn); /* fz with it */
    free(g->ilast);
    free(g->iwho);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Below this many values sort_f sorts by insertion. */
#define SORT_SMALL 16

/* v ascending, as qsort with cmp_float puts it (a float's place does not
 * depend on the order it came in, equal values being the same value),
 * without a call per comparison: Hoare's partition around the middle
 * value (equal values go to both sides, so a run of them halves), the
 * smaller side first, small ranges by insertion.  Values that do not
 * compare (NaN) leave the order to qsort. */
static void sort_f(float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isnan(v[i])) {
            qsort(v, n, sizeof *v, cmp_float);
            return;
        }
    while (n > SORT_SMALL) {
        float pivot = v[n / 2];
        size_t i = 0, j = n - 1;
        for (;;) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i >= j)
                break;
            float t = v[i];
            v[i++] = v[j];
            v[j--] = t;
        }
        /* [0, j] and [j + 1, n): every value of the first at most every one of the second */
        size_t left = j + 1;
        if (left < n - left) {
            sort_f(v, left);
            v += left;
            n -= left;
        } else {
            sort_f(v + left, n - left);
            n = left;
        }
    }
    for (size_t i = 1; i < n; i++) {
        float x = v[i];
        size_t k = i;
        for (; k > 0 && v[k - 1] > x; k--)
            v[k] = v[k - 1];
        v[k] = x;
    }
}

static float node_total(const struct sp_rnode *n)
{
    float t = 0;
    for (int c = 0; c < SP_LOC_N; c++)
        t += n->gap[c] + n->under[c];
    return t;
}

/* A peer group's values, each peer read once (at thousands of ranks a
 * cache miss each): window w's component c at vals + (w * SP_LOC_N + c) * n,
 * and per peer its total and its step. */
#define GATHER_AHEAD 8 /* gather_group: peers asked for this many ahead */

static void gather_group(const struct graph *g, size_t a, uint32_t n, float *vals, float *tot, uint16_t *step)
{
    for (uint32_t p = 0; p < n; p++) {
        if (p + GATHER_AHEAD < n) { /* a peer's node record is two cache lines, each a miss */
            const struct sp_rnode *on = peer_node(g, (uint32_t)a + p + GATHER_AHEAD);
            __builtin_prefetch(on->gap);
            __builtin_prefetch(&on->step);
        }
        const struct sp_rnode *pn = peer_node(g, (uint32_t)a + p);
        for (int c = 0; c < SP_LOC_N; c++) {
            vals[(size_t)c * n + p] = pn->gap[c];
            vals[(size_t)(SP_LOC_N + c) * n + p] = pn->under[c];
        }
        if (tot)
            tot[p] = node_total(pn);
        if (step)
            step[p] = pn->step;
    }
}

/* A rank's excess: the sum over its nodes of its local time beyond the
 * median of its peers' (itself left out) for the same node; by_step (when
 * not NULL) gets it per rank and step, by_step[rank * nsteps + step].  Only a rank
 * with an excess can gain by being brought to its peers, so the straggler
 * search replays the ranks (and groups) with the largest.  Per group the
 * totals (tot, the group's in order; sorted: scratch) are sorted once;
 * the median without one member is then read off the sorted list. */
static void group_excess(const struct graph *g, size_t a, uint32_t n, const float *tot, const uint16_t *step,
                         float *sorted, double *excess, double *by_step)
{
    memcpy(sorted, tot, n * sizeof *sorted);
    int nan = 0; /* totals that do not compare: sorted by qsort, searched as such */
    for (uint32_t p = 0; p < n; p++)
        nan |= isnan(tot[p]);
    /* The n - 1 others of a member: sorted[j] for j < i, sorted[j + 1]
     * from i on, i its place in the sorted totals (the first not below
     * it, itself one of them).  Their median reads the sorted totals at
     * hi and hi + 1 (and lo, when n - 1 is even), by whether those lie
     * before i: in totals that all compare, whether the value there is
     * below the member's.  So those two or three values, selected (every
     * value before hi is at most the one there, every value after it at
     * least), are all a member needs: no sort, no search (a binary search
     * per member mispredicted half its steps). */
    size_t m1 = n - 1, hi = m1 / 2, lo = hi - 1;
    float at_hi = 0, after_hi = 0, at_lo = 0;
    if (!nan) {
        at_hi = kth_f(sorted, n, hi);
        after_hi = sorted[hi + 1];
        for (size_t j = hi + 2; j < n; j++)
            after_hi = sorted[j] < after_hi ? sorted[j] : after_hi;
        if (m1 % 2 == 0) {
            at_lo = sorted[0];
            for (size_t j = 1; j < hi; j++)
                at_lo = sorted[j] > at_lo ? sorted[j] : at_lo;
        }
    } else {
        sort_f(sorted, n);
    }
    for (uint32_t p = 0; p < n; p++) {
        float own = tot[p];
        double med_hi, med;
        if (!nan) {
            med_hi = at_hi < own ? at_hi : after_hi;
            med = m1 % 2 ? med_hi : 0.5 * ((at_lo < own ? at_lo : at_hi) + med_hi);
        } else {
            size_t i = 0, hi_i = n - 1;
            while (i < hi_i) {
                size_t mid = i + (hi_i - i) / 2;
                if (sorted[mid] < own)
                    i = mid + 1;
                else
                    hi_i = mid;
            }
            med_hi = hi < i ? sorted[hi] : sorted[hi + 1];
            med = m1 % 2 ? med_hi : 0.5 * ((lo < i ? sorted[lo] : sorted[lo + 1]) + med_hi);
        }
        excess[g->peer_rank[a + p]] += own - med;
        int st = step[p];
        if (by_step && st < g->nsteps)
            by_step[(size_t)g->peer_rank[a + p] * (size_t)g->nsteps + (size_t)st] += own - med;
    }
}

/* A group's medians per window and component (vals as gather_group
 * leaves them; reordered). */
static void group_median_of(float *vals, uint32_t n, float (*out)[SP_LOC_N])
{
    for (int w = 0; w < 2; w++)
        for (int c = 0; c < SP_LOC_N; c++)
            out[w][c] = (float)median_f(vals + (size_t)(w * SP_LOC_N + c) * n, n);
}

/* The group medians for imbalance, once (vals: scratch for 2 x SP_LOC_N
 * times the largest group): those gather_groups worked out, else each
 * group's peers read now.  The bubble reads their presence as "imbalance
 * priced", so they are set here only. */
static void group_medians(struct graph *g, float *vals)
{
    if (g->gmed)
        return;
    if (g->gmed_early) {
        g->gmed = g->gmed_early;
        g->gmed_early = NULL;
        return;
    }
    if (!(g->gmed = malloc(((size_t)g->ngroups + 1) * sizeof *g->gmed)))
        return;
    for (uint32_t id = 0; id < g->ngroups; id++) {
        uint32_t n = group_n(g, id);
        gather_group(g, g->group_first[id], n, vals, NULL, NULL);
        group_median_of(vals, n, g->gmed[id]);
    }
}

/* g->win_at and room in g->win for each large group's kept values; 0
 * when there is none (no memory). */
static int plan_windows(struct graph *g)
{
    if (!(g->win_at = malloc(((size_t)g->ngroups + 1) * sizeof *g->win_at)))
        return 0;
    size_t nwin = 0;
    for (uint32_t id = 0; id < g->ngroups; id++) {
        uint32_t n = group_n(g, id);
        g->win_at[id] = n >= WIN_MIN_PEERS ? (uint32_t)(nwin++ * 2 * SP_LOC_N * WIN_N) : UINT32_MAX;
    }
    if (nwin * 2 * SP_LOC_N * WIN_N >= UINT32_MAX || !(g->win = malloc((nwin * 2 * SP_LOC_N * WIN_N + 1) * sizeof *g->win))) {
        free(g->win_at);
        g->win_at = NULL;
        return 0;
    }
    return 1;
}

/* Whether the n values are one value, bit for bit (so -0 and 0, which
 * compare equal, are not: their order in a selection is its own). */
static int all_same(const float *v, size_t n)
{
    uint32_t first, x, diff = 0;
    memcpy(&first, v, sizeof first);
    for (size_t i = 1; i < n; i++) {
        memcpy(&x, v + i, sizeof x);
        diff |= x ^ first;
    }
    return diff == 0;
}

/* One large group's kept values (vals as gather_group leaves them;
 * reordered): per window and component the values at sorted positions
 * lo .. lo + WIN_N - 1, found by two selections (the first leaves every
 * value from lo on at or after it) and put in order. */
static void fill_window(struct graph *g, uint32_t n, uint32_t at, float *vals)
{
    size_t lo = n / 2 - WIN_R - 1;
    for (int wc = 0; wc < 2 * SP_LOC_N; wc++) {
        float *v = vals + (size_t)wc * n, *out = g->win + at + (size_t)wc * WIN_N;
        if (all_same(v, n)) { /* a component no peer has (0 everywhere): no selection */
            for (int i = 0; i < WIN_N; i++)
                out[i] = v[0];
            continue;
        }
        kth_f(v, n, lo);
        kth_f(v + lo, n - lo, WIN_N - 1);
        for (int i = 0; i < WIN_N; i++) { /* insertion: WIN_N values */
            float x = v[lo + (size_t)i];
            int j = i;
            for (; j > 0 && out[j - 1] > x; j--)
                out[j] = out[j - 1];
            out[j] = x;
        }
    }
}

/* A large group's medians per window and component, off its kept values
 * (median_f's arithmetic: the values at sorted positions n / 2 and
 * n / 2 - 1 lie among them). */
static void window_median_of(const struct graph *g, uint32_t n, uint32_t at, float (*out)[SP_LOC_N])
{
    size_t mid = n / 2 - (n / 2 - WIN_R - 1); /* n / 2's place among the kept values */
    for (int w = 0; w < 2; w++)
        for (int c = 0; c < SP_LOC_N; c++) {
            const float *k = g->win + at + (size_t)(w * SP_LOC_N + c) * WIN_N;
            double hi = k[mid];
            out[w][c] = (float)(n % 2 ? hi : 0.5 * ((double)k[mid - 1] + hi));
        }
}

/* g->win_at and g->win (vals: scratch as for group_medians), unless
 * gather_groups made them. */
static void build_windows(struct graph *g, float *vals)
{
    if (g->win_at || !plan_windows(g))
        return;
    for (uint32_t id = 0; id < g->ngroups; id++) {
        uint32_t n = group_n(g, id), at = g->win_at[id];
        if (at != UINT32_MAX) {
            gather_group(g, g->group_first[id], n, vals, NULL, NULL);
            fill_window(g, n, at, vals);
        }
    }
}

/* What the counterfactuals over peer groups need, from one read of every
 * group (three reads of every node before, each a cache miss per node at
 * thousands of ranks): each rank's excess (group_excess; excess and
 * by_step zeroed here), the large groups' kept values (build_windows) and
 * every group's medians (kept aside for group_medians).  A part whose
 * memory is missing is left to its own pass.  -1: no scratch, nothing done. */
static int gather_groups(struct graph *g, double *excess, double *by_step)
{
    const struct sp_model *m = g->m;
    size_t np = (size_t)g->max_peers + 1;
    float *vals = malloc(np * (2 * SP_LOC_N + 2) * sizeof *vals);
    uint16_t *step = malloc(np * sizeof *step);
    if (!vals || !step) {
        free(vals);
        free(step);
        return -1;
    }
    float *tot = vals + np * 2 * SP_LOC_N, *sorted = tot + np;
    for (int r = 0; r < m->nranks; r++)
        excess[r] = 0;
    for (size_t x = 0; by_step && x < (size_t)m->nranks * (size_t)g->nsteps; x++)
        by_step[x] = 0;
    int win = !g->win_at && plan_windows(g);
    if (!g->gmed && !g->gmed_early)
        g->gmed_early = malloc(((size_t)g->ngroups + 1) * sizeof *g->gmed_early);
    for (uint32_t id = 0; id < g->ngroups; id++) {
        uint32_t n = group_n(g, id);
        size_t a = g->group_first[id];
        gather_group(g, a, n, vals, tot, step);
        if (n >= 2)
            group_excess(g, a, n, tot, step, sorted, excess, by_step);
        if (win && g->win_at[id] != UINT32_MAX) {
            fill_window(g, n, g->win_at[id], vals);
            if (g->gmed_early)
                window_median_of(g, n, g->win_at[id], g->gmed_early[id]);
        } else if (g->gmed_early) {
            group_median_of(vals, n, g->gmed_early[id]);
        }
    }
    free(vals);
    free(step);
    return 0;
}

/* The medians of window `under` of flat's group over the peers outside
 * cf's fixed set, from the group's kept values: the fixed members' own
 * values are taken out of them (those below or above only counted), and
 * the median positions of the others then fall inside.  0 (nothing
 * written) when the group keeps none, holds more than WIN_R fixed
 * members, or the positions fall outside: the caller gathers the peers. */
static int window_medians(const struct graph *g, const struct cf *cf, uint32_t flat, int under, double *v)
{
    uint32_t id = g->gid[flat];
    if (!g->win_at || g->win_at[id] == UINT32_MAX)
        return 0;
    uint32_t first = g->group_first[id], n = group_n(g, id), k = 0;
    float own[WIN_R][SP_LOC_N];
    for (uint32_t p = 0; p < n; p++)
        if (cf->fix[g->peer_rank[first + p]]) {
            if (k == WIN_R)
                return 0;
            const struct sp_rnode *pn = peer_node(g, first + p);
            memcpy(own[k++], under ? pn->under : pn->gap, sizeof own[0]);
        }
    size_t m = n - k, lo = n / 2 - WIN_R - 1;
    if (m == 0)
        return 0;
    double out[SP_LOC_N];
    for (int c = 0; c < SP_LOC_N; c++) {
        const float *s = g->win + g->win_at[id] + (size_t)(under * SP_LOC_N + c) * WIN_N;
        float rem[WIN_N];
        int nrem = WIN_N;
        size_t below = 0;
        memcpy(rem, s, sizeof rem);
        for (uint32_t f = 0; f < k; f++) {
            float x = own[f][c];
            if (x < s[0]) {
                below++;
                continue;
            }
            if (x > s[WIN_N - 1])
                continue;
            int i = 0;
            while (i < nrem && rem[i] != x)
                i++;
            if (i == nrem)
                return 0; /* its copies in view taken by other members: which side is unknown */
            memmove(rem + i, rem + i + 1, (size_t)(nrem - i - 1) * sizeof *rem);
            nrem--;
        }
        /* the others' sorted positions m/2 (and m/2 - 1) in rem: lo - below of them lie before it */
        size_t t = m / 2, before = lo - below;
        if (t < before || t - before >= (size_t)nrem || (m % 2 == 0 && t - before < 1))
            return 0;
        double hi = rem[t - before];
        out[c] = m % 2 ? hi : 0.5 * ((double)rem[t - before - 1] + hi);
    }
    memcpy(v, out, sizeof out);
    return 1;
}

/* g->perm: flat nodes in the order (step, index among the rank's nodes of
 * the step, rank).  When that would cost more than a few passes over the
 * nodes (ranks whose steps hold very different numbers of nodes, nodes
 * out of step order), the flat order itself. */
#define PERM_PASSES 4
static int build_perm(struct graph *g)
{
    const struct sp_model *m = g->m;
    g->perm = malloc((g->total + 1) * sizeof *g->perm);
    uint32_t *cnt = calloc((size_t)g->nsteps + 1, sizeof *cnt);
    int ok = g->perm && cnt;
    /* per step, the most nodes any rank has in it */
    for (int r = 0; ok && r < m->nranks; r++) {
        const struct sp_rank *rk = &m->ranks[r];
        size_t j = 0;
        for (int st = 0; ok && st < g->nsteps; st++) {
            uint32_t n = 0;
            while (j < rk->nnodes && rk->nodes[j].step == st)
                j++, n++;
            if (n > cnt[st])
                cnt[st] = n;
        }
        ok = j == rk->nnodes; /* every node in a step, in step order */
    }
    size_t cost = 0, nslots = 0;
    for (int st = 0; ok && st < g->nsteps; st++) {
        cost += (size_t)cnt[st] * (size_t)m->nranks;
        nslots += cnt[st];
    }
    ok = ok && cost <= PERM_PASSES * (g->total + 1);
    /* The place of a rank's k-th node of step st: the nodes of the (step,
     * k) before it, then those of the ranks before it.  Worked out rank
     * after rank, each rank's nodes in memory order (step after step
     * across the ranks was a cache miss per node): per (step, k), first
     * how many ranks have a k-th node, then where its next one goes. */
    size_t *first = ok ? calloc(nslots + 1, sizeof *first) : NULL;
    size_t *slot = ok ? malloc(((size_t)g->nsteps + 1) * sizeof *slot) : NULL;
    ok = ok && first && slot;
    for (size_t st = 0, x = 0; ok && st < (size_t)g->nsteps; st++) {
        slot[st] = x; /* step st's (step, k) entries start here */
        x += cnt[st];
    }
    for (int r = 0; ok && r < m->nranks; r++) {
        const struct sp_rank *rk = &m->ranks[r];
        for (size_t j = 0, k = 0; j < rk->nnodes; j++) {
            k = j && rk->nodes[j].step == rk->nodes[j - 1].step ? k + 1 : 0;
            first[slot[rk->nodes[j].step] + k]++;
        }
    }
    size_t at = 0;
    for (int st = 0; ok && st < g->nsteps; st++)
        for (uint32_t k = 0; k < cnt[st]; k++) {
            size_t n = first[slot[st] + k];
            first[slot[st] + k] = at;
            at += n;
        }
    for (int r = 0; ok && r < m->nranks; r++) {
        const struct sp_rank *rk = &m->ranks[r];
        for (size_t j = 0, k = 0; j < rk->nnodes; j++) {
            k = j && rk->nodes[j].step == rk->nodes[j - 1].step ? k + 1 : 0;
            g->perm[g->node_base[r] + j] = (uint32_t)first[slot[rk->nodes[j].step] + k]++;
        }
    }
    free(first);
    free(slot);
    ok = ok && at == g->total;
    for (size_t f = 0; !ok && g->perm && f < g->total; f++)
        g->perm[f] = (uint32_t)f;
    free(cnt);
    return g->perm ? 0 : -1;
}

/* A flat node's place in gn and in the node states. */
static inline uint32_t PM(const struct graph *g, size_t flat)
{
    return g->perm[flat];
}

/* A window's local time as recorded: local_time under `recorded` (no
 * fixed rank, no scale, nothing dropped), summed in the same order, so
 * the same double, without its tests per node. */
static inline double recorded_sum(const float *own)
{
    /* written out: a loop of eight was not unrolled, and its counting
     * cost as much as the adds (each node's two sums, graph_build) */
    _Static_assert(SP_LOC_N == 8, "recorded_sum adds every component, in order");
    double t = 0;
    t += (double)own[0];
    t += (double)own[1];
    t += (double)own[2];
    t += (double)own[3];
    t += (double)own[4];
    t += (double)own[5];
    t += (double)own[6];
    t += (double)own[7];
    return t;
}

/* A walked graph's participants laid out instance after instance in the
 * order the walk completes them, so that a replay reads them in memory
 * order (in the instances' order, a host's few were a cache miss each). */
static int parts_by_walk(struct graph *g)
{
    size_t nparts = 0;
    for (size_t t = 0; t < g->ninsts; t++)
        nparts += (size_t)g->insts[t].n;
    struct part *np = malloc((nparts + 1) * sizeof *np);
    if (!np)
        return -1;
    int32_t off = 0;
    for (size_t k = 0; k < g->ncomps; k++) {
        struct inst *in = &g->insts[g->comps[k].inst];
        memcpy(np + off, g->parts + in->first, (size_t)in->n * sizeof *np);
        in->first = off;
        off += in->n;
    }
    free(g->parts);
    g->parts = np;
    return 0;
}

#define PLACE_AHEAD 8 /* graph_build: records asked for this many nodes ahead */

/* Node flat's components (struct graph's nz), kept, and added to nz_all. */
static uint16_t node_nz(struct graph *g, const struct sp_rnode *nd, uint32_t flat)
{
    uint16_t z = 0;
#ifdef __SSE2__
    /* four components a compare, their signs gathered: a float compared
     * unequal to zero as != does (a NaN is nonzero, -0 is not) */
    _Static_assert(SP_LOC_N == 8 && NZ_UNDER == 8, "two vectors of four per sum, a byte of bits each");
    const __m128 zero = _mm_setzero_ps();
    int gap = _mm_movemask_ps(_mm_cmpneq_ps(_mm_loadu_ps(nd->gap), zero)) |
              _mm_movemask_ps(_mm_cmpneq_ps(_mm_loadu_ps(nd->gap + 4), zero)) << 4;
    int under = _mm_movemask_ps(_mm_cmpneq_ps(_mm_loadu_ps(nd->under), zero)) |
                _mm_movemask_ps(_mm_cmpneq_ps(_mm_loadu_ps(nd->under + 4), zero)) << 4;
    z = (uint16_t)(gap | under << NZ_UNDER);
#else
    for (int c = 0; c < SP_LOC_N; c++)
        z |= (uint16_t)((nd->gap[c] != 0) << c | (nd->under[c] != 0) << (NZ_UNDER + c));
#endif
    g->nz[flat] = z;
    g->nz_all |= z;
    return z;
}

/* The records of a graph the walk did not place (gn, rec_under), and the
 * node states its replays walk with (ns). */
static int graph_nodes(struct graph *g)
{
    const struct sp_model *m = g->m;
    if (!(g->gn = malloc((g->total + 1) * sizeof *g->gn)) ||
        !(g->rec_under = malloc((g->total + 1) * sizeof *g->rec_under)) ||
        !(g->ns_mem = malloc((g->total + 1) * sizeof *g->ns + NSTATE_ALIGN - 1)))
        return -1;
    g->ns = (struct nstate *)(((uintptr_t)g->ns_mem + NSTATE_ALIGN - 1) & ~(uintptr_t)(NSTATE_ALIGN - 1));
    for (int i = 0; i < m->nranks; i++)
        for (size_t j = 0; j < m->ranks[i].nnodes; j++) {
            const struct sp_rnode *nd = &m->ranks[i].nodes[j];
            uint32_t flat = (uint32_t)(g->node_base[i] + j);
            struct gnode *x = &g->gn[g->perm[flat]];
            x->dur = nd->e - nd->a;
            x->gate_off = g->gate_off[flat];
            x->rec_gap = recorded_sum(nd->gap);
            g->rec_under[g->perm[flat]] = nd->ncalls ? recorded_sum(nd->under) : 0;
            node_nz(g, nd, flat);
            x->waiter = g->waiter[flat] >= 0 ? (int32_t)g->perm[g->waiter[flat]] : -1;
            x->gate_n = g->gate_n[flat];
            x->cinst_at = nd->ncalls == 1 ? (uint32_t)g->cinst[g->call_base[i] + nd->call]
                                          : (uint32_t)(g->call_base[i] + nd->call);
            x->ncalls = nd->ncalls;
            x->nparts = g->nparts[flat];
            x->next = j + 1 < m->ranks[i].nnodes ? g->perm[flat + 1] : UINT32_MAX;
        }
    return 0;
}

/* A walked graph's replays' follow states and latest gates (fs, gmax;
 * the latter at INT64_MIN), and its instances' last arrivals (ilast, at
 * INT64_MIN) and first nodes (iwho).  Made once graph_build has freed
 * what only the records are made from: their pages are then the first
 * reused (made with the records, they came on top of those, and the
 * heap's high-water mark of a report was theirs). */
static int graph_follow_states(struct graph *g)
{
    if (!(g->ns_mem = malloc((g->total + 1) * sizeof *g->fs)) || !(g->fl = malloc((g->total + 1) * sizeof *g->fl)) ||
        !(g->gmax = malloc((g->total + 1) * sizeof *g->gmax)) ||
        !(g->ilast = malloc((g->ninsts + 1) * sizeof *g->ilast)) ||
        !(g->iwho = malloc((g->ninsts + 1) * sizeof *g->iwho)))
        return -1;
    for (size_t t = 0; t < g->ninsts; t++)
        g->ilast[t] = INT64_MIN;
    g->fs = g->ns_mem;
    for (size_t w = 0; w < g->total; w++)
        g->gmax[w] = INT64_MIN;
    return 0;
}

/* The follow records of a walked graph (fn). */
static int graph_follow_nodes(struct graph *g)
{
    const struct sp_model *m = g->m;
    if (!(g->fn = malloc((g->total + 1) * (sizeof *g->fn + sizeof *g->fz))))
        return -1;
    g->fz = (uint16_t *)(g->fn + g->total + 1);
    for (int i = 0; i < m->nranks; i++)
        for (size_t j = 0; j < m->ranks[i].nnodes; j++) {
            const struct sp_rnode *nd = &m->ranks[i].nodes[j];
            uint32_t flat = (uint32_t)(g->node_base[i] + j);
            /* a rank's nodes lie a wave of the walk apart (a cache miss
             * each): the record a few nodes on is asked for now */
            if (flat + PLACE_AHEAD < g->total) {
                __builtin_prefetch(&g->fn[g->perm[flat + PLACE_AHEAD]], 1);
                __builtin_prefetch(&g->fz[g->perm[flat + PLACE_AHEAD]], 1);
            }
            uint16_t z = node_nz(g, nd, flat);
            int64_t own_end = nd->ncalls ? nd->e - nd->a : 0; /* a step end ends at its arrival */
            uint32_t inst = UINT32_MAX;
            for (uint32_t c = 0; c < nd->ncalls && g->nparts[flat]; c++) {
                int32_t in = g->cinst[g->call_base[i] + nd->call + c];
                if (in < 0 || (size_t)in >= g->ninsts)
                    continue;
                if (nd->ncalls == 1 && g->nparts[flat] == 1)
                    inst = (uint32_t)in;
                else /* more than one: its instances read their arrivals at the end */
                    g->insts[in].scan = 1;
            }
            g->fn[g->perm[flat]] = (struct fnode){
                .gate_off = g->gate_n[flat] ? g->gate_off[flat] : FNODE_UNGATED,
                .dur_inst = !g->nparts[flat] ? own_end : inst == UINT32_MAX ? FNODE_NO_INST
                                                                            : (int64_t)inst,
                .rec_gap = recorded_sum(nd->gap),
                .rec_under = nd->ncalls ? recorded_sum(nd->under) : 0,
                .waiter = g->waiter[flat] >= 0 ? (int32_t)g->perm[g->waiter[flat]] : -1,
                .rank_parts = (uint32_t)i | (g->nparts[flat] ? FNODE_PARTS : 0)};
            g->fz[g->perm[flat]] = nd->ncalls ? z : (uint16_t)(z & ((1u << NZ_UNDER) - 1));
        }
    return 0;
}

/* Fills g; on failure (out of memory, no analyzed step) returns -1 and
 * leaves g safe to graph_free. */
static int graph_build(struct sp_model *m, struct graph *g)
{
    memset(g, 0, sizeof *g);
    g->m = m;
    g->nsteps = m->step_hi - m->step_lo;
    g->node_base = calloc((size_t)m->nranks + 1, sizeof *g->node_base);
    g->start = calloc((size_t)m->nranks + 1, sizeof *g->start);
    g->call_base = calloc((size_t)m->nranks + 1, sizeof *g->call_base);
    if (!g->node_base || !g->start || !g->call_base || g->nsteps <= 0)
        return -1;
    size_t ncalls = 0;
    for (int i = 0; i < m->nranks; i++) {
        struct sp_rank *r = &m->ranks[i];
        g->node_base[i] = g->total;
        g->total += r->nnodes;
        g->call_base[i] = ncalls;
        ncalls += r->ncalls;
        if (r->nnodes && r->nsteps > m->step_lo)
            g->start[i] = sp_model_global(m, r, r->steps[m->step_lo].start);
    }
    if (!(g->cinst = malloc((ncalls + 1) * sizeof *g->cinst)))
        return -1;
    /* the nodes placed in the walk's order, else step by step; then each
     * participant's place */
    /* the gates and the peers' step counts are made rank by rank with the
     * instances' tails (rank_gates, rank_steps) */
    g->step_at = calloc((size_t)UINT16_MAX + 2, sizeof *g->step_at);
    g->by_step = g->step_at != NULL;
    int walked = build_instances(g) < 0 ? -1 : walk_order(g);
    if (walked < 0 || (!walked && build_perm(g) < 0))
        return -1;
    for (size_t t = 0; t < g->ninsts; t++)
        for (int32_t p = 0; p < g->insts[t].n; p++)
            g->parts[g->insts[t].first + p].at = g->perm[g->parts[g->insts[t].first + p].at];
    if (g->walked && parts_by_walk(g) < 0)
        return -1;
    sp_model_find_stages(m);
    if (build_peers(g) < 0)
        return -1;
    if (!(g->nz = malloc((g->total + 1) * sizeof *g->nz)))
        return -1;
    if (g->walked ? graph_follow_nodes(g) < 0 : graph_nodes(g) < 0)
        return -1;
    /* the gates and the counts of participants live on in the records */
    free(g->nparts);
    g->nparts = NULL;
    free(g->waiter);
    free(g->gate_n);
    free(g->gate_off);
    g->waiter = NULL;
    g->gate_n = NULL;
    g->gate_off = NULL;
    if (g->walked) { /* the calls' instances live on in fnode's inst and the participants */
        free(g->cinst);
        g->cinst = NULL;
    }
    return g->walked ? graph_follow_states(g) : 0;
}

/* ---- one replay ---- */

/* llround, inline (the walk rounds twice per node; libm's is a call): x
 * less its truncation is exact, so comparing that with a half rounds as
 * llround does, halves away from zero.  x is a time in ns, far inside
 * int64_t. */
static inline int64_t round_ns(double x)
{
    int64_t i = (int64_t)x;
    double f = x - (double)i;
    return f >= 0.5 ? i + 1 : f <= -0.5 ? i - 1
                                        : i;
}

struct rstate {
    int64_t a;    /* the replayed arrival of the rank's last node */
    double under; /* its local time while it ran */
};

/* Local time of one window of a node under the counterfactual (vals:
 * scratch for SP_LOC_N times the largest peer group). */
static double local_time(const struct graph *g, const struct cf *cf, int rank, uint32_t flat, int under,
                         float *vals)
{
    const struct sp_rnode *nd = &g->m->ranks[rank].nodes[flat - g->node_base[rank]];
    const float *own = under ? nd->under : nd->gap;
    int fixed = cf->fix && cf->fix[rank];
    double v[SP_LOC_N];
    for (int c = 0; c < SP_LOC_N; c++)
        v[c] = own[c];
    if (fixed && group_n(g, g->gid[flat]) > 1 && cf->fmed && (cf->fmed_have[g->gid[flat]] >> under & 1)) {
        for (int c = 0; c < SP_LOC_N; c++)
            if (!isnan(cf->fmed[g->gid[flat]][under][c]))
                v[c] = cf->fmed[g->gid[flat]][under][c];
    } else if (fixed && group_n(g, g->gid[flat]) > 1 && window_medians(g, cf, flat, under, v)) {
        for (int c = 0; cf->fmed && c < SP_LOC_N; c++)
            cf->fmed[g->gid[flat]][under][c] = v[c];
        if (cf->fmed)
            cf->fmed_have[g->gid[flat]] |= (uint8_t)(1u << under);
    } else if (fixed && group_n(g, g->gid[flat]) > 1) {
        /* the median of the peers outside the fixed set, the same for
         * every member of the group: kept when there is room (NaN: no peer
         * outside, the node keeps its own) */
        uint32_t first = g->group_first[g->gid[flat]], n = group_n(g, g->gid[flat]);
        size_t k = 0; /* each peer read once: component c's values at vals + c * n */
        for (uint32_t p = 0; p < n; p++)
            if (!cf->fix[g->peer_rank[first + p]]) {
                const struct sp_rnode *pn = peer_node(g, first + p);
                const float *pv = under ? pn->under : pn->gap;
                for (int c = 0; c < SP_LOC_N; c++)
                    vals[(size_t)c * n + k] = pv[c];
                k++;
            }
        for (int c = 0; c < SP_LOC_N; c++) {
            if (k)
                v[c] = median_f(vals + (size_t)c * n, k);
            if (cf->fmed)
                cf->fmed[g->gid[flat]][under][c] = k ? v[c] : NAN;
        }
        if (cf->fmed)
            cf->fmed_have[g->gid[flat]] |= (uint8_t)(1u << under);
    } else if (cf->imbalance && g->gmed && group_n(g, g->gid[flat]) > 1) {
        for (int c = 0; c < SP_LOC_N; c++)
            if (c != SP_LOC_INPUT) /* each rank keeps its own input */
                v[c] = g->gmed[g->gid[flat]][under][c];
    }
    if (cf->busy_scale) {
        v[SP_LOC_BUSY] *= cf->busy_scale[rank];
        v[SP_LOC_COPY] *= cf->busy_scale[rank]; /* a stage's copies go with its work */
    }
    double t = 0;
    for (int c = 0; c < SP_LOC_N; c++)
        if (!(cf->drop & (1u << c)))
            t += v[c];
    return t;
}

/* local_time() of a window under a counterfactual that only removes
 * components (drop), on a rank it does not fix: the same sum in the same
 * order, without local_time's tests and call per node.  A removed
 * component adds +0, which leaves every sum the loop can reach as it was
 * (it starts at +0, and a sum of doubles becomes -0 only from -0 + -0). */
static inline double dropped_sum(const float *own, uint32_t drop)
{
    /* written out, as recorded_sum: a loop of eight is not unrolled */
    _Static_assert(SP_LOC_N == 8, "dropped_sum adds every component kept, in order");
    double t = 0;
    t += drop & 1u << 0 ? 0.0 : (double)own[0];
    t += drop & 1u << 1 ? 0.0 : (double)own[1];
    t += drop & 1u << 2 ? 0.0 : (double)own[2];
    t += drop & 1u << 3 ? 0.0 : (double)own[3];
    t += drop & 1u << 4 ? 0.0 : (double)own[4];
    t += drop & 1u << 5 ? 0.0 : (double)own[5];
    t += drop & 1u << 6 ? 0.0 : (double)own[6];
    t += drop & 1u << 7 ? 0.0 : (double)own[7];
    return t;
}

/* cf, with room for its fixed set's medians per group when it fixes ranks
 * (*copy is then what to use, and with_fix_free releases it). */
static const struct cf *with_fix_medians(const struct graph *g, const struct cf *cf, struct cf *copy)
{
    if (!cf->fix || cf->fmed)
        return cf;
    *copy = *cf;
    copy->fmed = malloc(((size_t)g->ngroups + 1) * sizeof *copy->fmed);
    copy->fmed_have = calloc((size_t)g->ngroups + 1, 1);
    if (!copy->fmed || !copy->fmed_have) {
        free(copy->fmed);
        free(copy->fmed_have);
        copy->fmed = NULL;
        copy->fmed_have = NULL;
    }
    return copy;
}

static void with_fix_free(const struct cf *orig, struct cf *copy)
{
    if (orig->fix && !orig->fmed) {
        free(copy->fmed);
        free(copy->fmed_have);
    }
}

struct replay {
    const struct graph *g;
    const struct cf *cf;
    size_t *cur;       /* per rank: next node to arrive */
    uint32_t *next_at; /* per rank: that node's place (UINT32_MAX: none) */
    size_t *lo;        /* per rank: no node before it still pending */
    struct rstate *st; /* per rank: the last node that arrived */
    struct nstate *ns; /* per flat node (in gn's order) */
    int32_t *need;     /* per instance: participants still to arrive */
    int64_t *last;     /* per instance: replayed last arrival */
    size_t *queue;
    size_t nq;
    size_t ndone; /* nodes with their final end */
    float *vals;  /* scratch for the peers' medians */
    /* the critical path, when asked: per node (by place, as ns), the
     * transfer on the longest path to its arrival and to its end, and
     * whether its end came from moving data after its synchronization
     * point; per instance, the node that arrived last; per node, the node
     * whose end set its gate (places too) */
    double *cp_arr, *cp_end;
    uint8_t *cp_moved;
    uint32_t *who, *gate_who;
};

/* The node at place `at` of rank r has its final end: the critical
 * path's transfer, and the node that waited for it is one end nearer to
 * arriving.  1 when that node is rank r's next and waits for nothing
 * more. */
static int node_done(struct replay *rp, int r, uint32_t at)
{
    const struct graph *g = rp->g;
    struct nstate *ns = &rp->ns[at];
    rp->ndone += !ns->done;
    ns->done = 1;
    if (rp->cp_end && rp->cp_moved[at]) {
        /* the path's transfer: what of it the rank's own work under the
         * op leaves exposed (collective_transfer, not overlap) */
        double from = (double)ns->arr + ns->under;
        double sync = (double)ns->sync;
        double exposed = (double)ns->end - (from > sync ? from : sync);
        rp->cp_end[at] += exposed > 0 ? exposed : 0;
    }
    int32_t w = g->gn[at].waiter;
    if (w < 0)
        return 0;
    struct nstate *wn = &rp->ns[w];
    if (ns->end > wn->gate_max) {
        wn->gate_max = ns->end;
        if (rp->gate_who)
            rp->gate_who[w] = at;
    }
    return --wn->gate_left == 0 && rp->next_at[r] == (uint32_t)w;
}

/* Replays rank r's nodes up to the next one that waits for the end of an
 * op still pending.  Ops that started while an earlier op ran arrive
 * without waiting for it; the rank's local time runs from arrival to
 * arrival, so it is conserved whatever the counterfactual moves. */
static void advance(struct replay *rp, int r)
{
    const struct graph *g = rp->g;
    const struct sp_rank *rk = &g->m->ranks[r];
    while (rp->cur[r] < rk->nnodes) {
        size_t j = rp->cur[r];
        uint32_t flat = (uint32_t)(g->node_base[r] + j);
        uint32_t at = rp->next_at[r];
        const struct gnode *nd = &g->gn[at];
        struct nstate *ns = &rp->ns[at];
        if (ns->gate_left)
            return;
        struct rstate *s = &rp->st[r];
        double gap = ns->gap;
        double by_local = (double)s->a + s->under + gap, by_gate = by_local;
        if (nd->gate_n) {
            /* its recorded distance from the latest end it waited for,
             * less the local time the counterfactual takes off its gap */
            double off = (double)nd->gate_off + gap - nd->rec_gap;
            by_gate = (double)ns->gate_max + (off > 0 ? off : 0);
        }
        int64_t a = round_ns(by_gate > by_local ? by_gate : by_local);
        ns->arr = a;
        if (rp->cp_arr && by_gate > by_local)
            rp->cp_arr[at] = rp->cp_end[rp->gate_who[at]];
        else if (rp->cp_arr) /* a rank's first node starts the path */
            rp->cp_arr[at] = j ? rp->cp_arr[PM(g, flat - 1)] : 0;
        s->a = a;
        s->under = ns->under;
        rp->cur[r] = j + 1;
        rp->next_at[r] = nd->next;
        for (uint32_t c = 0; c < nd->ncalls; c++) {
            int32_t in = nd->ncalls == 1 ? (int32_t)nd->cinst_at : g->cinst[nd->cinst_at + c];
            if (in < 0 || (size_t)in >= g->ninsts)
                continue;
            if (rp->need[in] <= 0) {
                /* completed without this rank (forced): it leaves when it
                 * would have, had it been last */
                int64_t e = (a > rp->last[in] ? a : rp->last[in]) + nd->dur;
                if (e > ns->end) {
                    ns->end = e;
                    if (rp->cp_end) { /* no transfer of its own counted */
                        rp->cp_end[at] = rp->cp_arr[at];
                        rp->cp_moved[at] = 0;
                    }
                }
                ns->pending--;
                continue;
            }
            if (a > rp->last[in]) {
                rp->last[in] = a;
                if (rp->who)
                    rp->who[in] = at;
            }
            if (--rp->need[in] == 0)
                rp->queue[rp->nq++] = (size_t)in;
        }
        if (!nd->ncalls || !ns->pending) {
            if (ns->end == INT64_MIN) {
                ns->end = a + (nd->ncalls ? nd->dur : 0);
                if (rp->cp_end)
                    rp->cp_end[at] = rp->cp_arr[at];
            }
            node_done(rp, r, at); /* the loop goes on to its waiter */
        }
    }
}

/* An instance's last participant arrived: each participant's node is
 * synchronized no earlier than that, and ends its own transfer (its
 * recorded end - its recorded synchronization point) after the latest of
 * its instances.  The participants' states, their waiters' (the nodes
 * their ranks go on to) and those waiters' own (where the ranks' walk
 * stops) lie a rank's chain apart in memory: each is asked for a few
 * participants ahead, the next one's place read off the one before, so
 * that the cache misses overlap instead of each waiting for the one
 * before. */
#define COMPLETE_AHEAD 16
static void complete(struct replay *rp, size_t in_idx)
{
    const struct graph *g = rp->g;
    const struct inst *in = &g->insts[in_idx];
    double scale = in->spans ? rp->cf->cross * rp->cf->transfer : rp->cf->transfer;
    const struct part *parts = &g->parts[in->first];
    /* the first participants' states, which nothing asked for ahead (all
     * of a small instance's: one host's ranks), are asked for together */
    for (int32_t p = 0; p < in->n && p < COMPLETE_AHEAD; p++) {
        __builtin_prefetch(&rp->ns[parts[p].at], 1);
        __builtin_prefetch(&g->gn[parts[p].at]);
    }
    for (int32_t p = 0; p < in->n; p++) {
        if (p + COMPLETE_AHEAD < in->n) {
            uint32_t ahead = parts[p + COMPLETE_AHEAD].at;
            __builtin_prefetch(&rp->ns[ahead], 1);
            __builtin_prefetch(&g->gn[ahead]);
        }
        if (p + COMPLETE_AHEAD * 3 / 4 < in->n) {
            int32_t w = g->gn[parts[p + COMPLETE_AHEAD * 3 / 4].at].waiter;
            if (w >= 0) {
                __builtin_prefetch(&rp->ns[w], 1);
                __builtin_prefetch(&g->gn[w]);
            }
        }
        if (p + COMPLETE_AHEAD / 2 < in->n) {
            int32_t w = g->gn[parts[p + COMPLETE_AHEAD / 2].at].waiter;
            if (w >= 0) {
                uint32_t next = g->gn[w].next;
                if (next != UINT32_MAX) {
                    __builtin_prefetch(&rp->ns[next], 1);
                    __builtin_prefetch(&g->gn[next]);
                }
                if ((w = g->gn[w].waiter) >= 0)
                    __builtin_prefetch(&rp->ns[w]);
            }
        }
        if (p + COMPLETE_AHEAD / 4 < in->n) {
            int32_t w = g->gn[parts[p + COMPLETE_AHEAD / 4].at].waiter;
            uint32_t next = w >= 0 ? g->gn[w].next : UINT32_MAX;
            if (next != UINT32_MAX && (next = g->gn[next].next) != UINT32_MAX) {
                __builtin_prefetch(&rp->ns[next], 1);
                __builtin_prefetch(&g->gn[next]);
            }
        }
        const struct part *pt = &parts[p];
        uint32_t at = pt->at;
        int64_t tail = round_ns((double)pt->tail * scale), e = rp->last[in_idx] + tail;
        struct nstate *ns = &rp->ns[at];
        if (ns->arr == INT64_MIN)
            continue; /* forced before this participant arrived */
        if (e > ns->end) {
            ns->end = e;
            if (rp->cp_end) { /* the path comes from the last arrival, then moves the data */
                rp->cp_end[at] = rp->cp_arr[rp->who[in_idx]];
                rp->cp_moved[at] = 1;
            }
        }
        if (rp->last[in_idx] > ns->sync)
            ns->sync = rp->last[in_idx];
        if (ns->pending && --ns->pending == 0 && node_done(rp, pt->r, at))
            advance(rp, pt->r);
    }
}

/* A rank waits on an instance some participant never reaches (steps cut
 * differently, ops in a different order on two ranks): of the instances
 * the ranks' oldest pending nodes wait on, the one recorded first is
 * completed with the arrivals it has.  (Each rank's oldest only, so that
 * a force costs the ranks, not the nodes pending.) */
static int force_one(struct replay *rp)
{
    const struct graph *g = rp->g;
    size_t best = SIZE_MAX;
    if (rp->ndone == g->total)
        return 0; /* nothing pending: the usual end, found without a pass over the nodes */
    for (int r = 0; r < g->m->nranks; r++) {
        const struct sp_rank *rk = &g->m->ranks[r];
        size_t base = g->node_base[r];
        while (rp->lo[r] < rp->cur[r] && rp->ns[PM(g, base + rp->lo[r])].done)
            rp->lo[r]++;
        if (rp->lo[r] == rp->cur[r])
            continue;
        const struct sp_rnode *nd = &rk->nodes[rp->lo[r]];
        for (uint32_t c = 0; c < nd->ncalls; c++) {
            int32_t in = g->cinst[g->call_base[r] + nd->call + c];
            if (in >= 0 && (size_t)in < g->ninsts && rp->need[in] > 0 &&
                (best == SIZE_MAX || g->insts[in].last < g->insts[best].last))
                best = (size_t)in;
        }
    }
    if (best == SIZE_MAX)
        return 0;
    rp->need[best] = 0;
    complete(rp, best);
    return 1;
}

/* One node's wait (arrival a to synchronization point s) added to a
 * rank's union of waits, `cover` the end of the union so far; nothing
 * for a node without both times or without a wait. */
static inline void wait_add(double *wait, int64_t *cover, int64_t a, int64_t s)
{
    if (a == INT64_MIN || s == INT64_MIN || s <= a)
        return;
    int64_t from = a > *cover ? a : *cover;
    if (s > from)
        *wait += (double)(s - from);
    if (s > *cover)
        *cover = s;
}

/* Time rank r spent waiting for peers: the union of its nodes' waits
 * (arrival to synchronization point), which overlap when its ops ran
 * concurrently.  Arrivals come in order. */
static double rank_wait(const struct replay *rp, int r)
{
    const struct graph *g = rp->g;
    double wait = 0;
    int64_t cover = INT64_MIN;
    for (size_t j = 0; j < g->m->ranks[r].nnodes; j++) {
        size_t flat = g->node_base[r] + j;
        wait_add(&wait, &cover, rp->ns[PM(g, flat)].arr, rp->ns[PM(g, flat)].sync);
    }
    return wait;
}

/* What a replay works out beyond the mean step (struct result): the
 * transfer on the longest paths, the share of time waiting (each a pass
 * over every node, so only when asked). */
enum { REPLAY_CRITICAL = 1,
       REPLAY_WAIT = 2 };

/* Every node's local time under cf that differs from the recorded one,
 * into gap0[place * stride] (its gap's) and the double after it (its
 * under's), in one pass in memory order: of every node when more than
 * components change (imbalance, a stage scaled), of the fixed ranks'
 * nodes, and of the nodes that have a component cf removes (struct
 * graph's nz); a node left alone keeps its recorded local time. */
static void local_times(const struct graph *g, const struct cf *cf, double *gap0, size_t stride, float *vals)
{
    const struct sp_model *m = g->m;
    int by_drop = !cf->imbalance && !cf->busy_scale; /* plain, or components removed */
    for (int r = 0; r < m->nranks; r++) {
        int all = !by_drop || (cf->fix && cf->fix[r]);
        for (size_t j = 0; (all || cf->drop) && j < m->ranks[r].nnodes; j++) {
            uint32_t flat = (uint32_t)(g->node_base[r] + j);
            double *x = gap0 + (size_t)PM(g, flat) * stride;
            if (all) {
                x[0] = local_time(g, cf, r, flat, 0, vals);
                x[1] = m->ranks[r].nodes[j].ncalls ? local_time(g, cf, r, flat, 1, vals) : 0;
                continue;
            }
            uint32_t z = g->nz[flat];
            const struct sp_rnode *nd = &m->ranks[r].nodes[j];
            if (z & cf->drop)
                x[0] = dropped_sum(nd->gap, cf->drop);
            if (z >> NZ_UNDER & cf->drop && nd->ncalls)
                x[1] = dropped_sum(nd->under, cf->drop);
        }
    }
}

/* What a replay that follows the walk reads of cf per node: whether every
 * node's local time changes, which ranks' do (NULL: none), and the
 * components removed (gap's, then under's bits as in nz). */
struct follow_cf {
    int all;
    const uint8_t *fix;
    uint32_t drop;
};

/* The critical path in a replay that follows the walk (struct replay's
 * cp_*, who and gate_who, by place), with what working it out needs:
 * per node its latest synchronization, per rank the place of its node
 * that arrived last (UINT32_MAX: none yet).  And per rank the latest of
 * its nodes' final ends, when last is not NULL (the base replay's,
 * struct graph's base_last: taken as each end is final, not in a pass
 * over every node's record and state after the replay). */
struct follow_cp {
    double *arr, *end; /* a place's every `stride` doubles */
    size_t stride;
    uint8_t *moved;
    uint32_t *who, *gate_who, *prev;
    int64_t *last;
};
/* The path's time at place w's arrival and at its end. */
static inline double *cp_arr(const struct follow_cp *cp, uint32_t w)
{
    return cp->arr + (size_t)w * cp->stride;
}
static inline double *cp_end(const struct follow_cp *cp, uint32_t w)
{
    return cp->end + (size_t)w * cp->stride;
}

static inline int fnode_rank(const struct fnode *nd)
{
    return (int)(nd->rank_parts & ~FNODE_PARTS);
}

/* Node w's local time under its op (its under's), as its arrival read it. */
static inline double follow_under(const struct graph *g, const struct follow_cf *fc, uint32_t w)
{
    const struct fnode *nd = &g->fn[w];
    int own = fc->all || (fc->fix && fc->fix[fnode_rank(nd)]);
    return own || g->fz[w] >> NZ_UNDER & fc->drop ? g->fl[w].under : nd->rec_under;
}

/* Node w's end is final, with the critical path (node_done()): the
 * transfer its rank's work under it leaves exposed, and its waiter's
 * latest gate, the first of the latest ends naming whose it is. */
static void follow_done(const struct graph *g, const struct follow_cf *fc, const struct follow_cp *cp,
                        const int64_t *sync, uint32_t w)
{
    const struct fstate *x = &g->fs[w];
    if (cp->moved[w]) {
        double from = (double)x->arr + follow_under(g, fc, w);
        double at_sync = (double)sync[w];
        double exposed = (double)x->end - (from > at_sync ? from : at_sync);
        *cp_end(cp, w) += exposed > 0 ? exposed : 0;
    }
    int32_t waiter = g->fn[w].waiter;
    if (waiter >= 0 && x->end > g->gmax[waiter]) {
        g->gmax[waiter] = x->end;
        cp->gate_who[waiter] = w;
    }
    int r = fnode_rank(&g->fn[w]);
    if (cp->last && x->end > cp->last[r])
        cp->last[r] = x->end;
}

/* The node at place w arrives, as advance() works it out: the ends it
 * waits for are final (the walk met them first).  A node in no instance
 * ends at once, and its waiter's latest gate moves. */
static inline __attribute__((always_inline)) void
follow_arrive(const struct graph *g, const struct follow_cf *fc, struct rstate *st, uint32_t w, int64_t *sync,
              const struct follow_cp *cp, int owns)
{
    const struct fnode *nd = &g->fn[w];
    struct fstate *x = &g->fs[w];
    int rank = fnode_rank(nd);
    struct rstate *s = &st[rank];
    int own = owns && (fc->all || (fc->fix && fc->fix[rank]));
    uint16_t nz = g->fz[w];
    double gap = own || nz & fc->drop ? g->fl[w].gap : nd->rec_gap;
    double under = own || nz >> NZ_UNDER & fc->drop ? g->fl[w].under : nd->rec_under;
    double by_local = (double)s->a + s->under + gap, by_gate = by_local;
    if (nd->gate_off != FNODE_UNGATED) {
        double off = (double)nd->gate_off + gap - nd->rec_gap;
        by_gate = (double)g->gmax[w] + (off > 0 ? off : 0);
        g->gmax[w] = INT64_MIN; /* as the next replay wants it */
    }
    int64_t a = round_ns(by_gate > by_local ? by_gate : by_local);
    x->arr = a;
    s->a = a;
    s->under = under;
    if (sync)
        sync[w] = INT64_MIN;
    if (cp) { /* a rank's first node starts the path */
        uint32_t prev = cp->prev[rank];
        double from_rank = prev == UINT32_MAX ? 0 : *cp_arr(cp, prev);
        *cp_arr(cp, w) = by_gate > by_local ? *cp_end(cp, cp->gate_who[w]) : from_rank;
        cp->prev[rank] = w;
        cp->moved[w] = 0;
    }
    if (nd->rank_parts & FNODE_PARTS) {
        x->end = INT64_MIN;
        /* the first of the latest, as advance() keeps who (nothing
         * above reads the instance's) */
        if (nd->dur_inst != FNODE_NO_INST && a > g->ilast[nd->dur_inst]) {
            g->ilast[nd->dur_inst] = a;
            g->iwho[nd->dur_inst] = w;
        }
    } else {
        int64_t e = a + nd->dur_inst;
        x->end = e;
        if (cp) {
            *cp_end(cp, w) = *cp_arr(cp, w);
            follow_done(g, fc, cp, sync, w);
        } else if (nd->waiter >= 0 && e > g->gmax[nd->waiter]) {
            g->gmax[nd->waiter] = e;
        }
    }
}

#define EXACT_NS (INT64_C(1) << 53) /* a time this long or shorter is a double exactly */

/* Instance in_idx completes, as complete() works it out: every participant
 * has arrived, so its last arrival is theirs (and the first of them to
 * arrive at it, the one with the least place, for the critical path):
 * kept as they arrived, or read now when one of them is in more
 * instances.  A node's end is the latest of its instances'; without the
 * critical path each raise of it raises its waiter's latest gate (the
 * largest of all is that of the final ends), with it the final end does,
 * in the order node_done() would. */
static inline __attribute__((always_inline)) void
follow_complete(const struct graph *g, const struct follow_cf *fc, const struct cf *cf, size_t in_idx, int64_t *sync,
                const struct follow_cp *cp)
{
    const struct inst *in = &g->insts[in_idx];
    const struct part *parts = &g->parts[in->first];
    double scale = in->spans ? cf->cross * cf->transfer : cf->transfer;
    struct fstate *fs = g->fs;
    int64_t last = g->ilast[in_idx];
    uint32_t who = g->iwho[in_idx];
    g->ilast[in_idx] = INT64_MIN; /* as the next replay wants it */
    for (int32_t p = 0; in->scan && p < in->n; p++) {
        int64_t a = fs[parts[p].at].arr;
        if (a > last || (a == last && parts[p].at < who)) {
            last = a;
            who = parts[p].at;
        }
    }
    for (int32_t p = 0; p < in->n; p++) {
        uint32_t at = parts[p].at;
        /* a transfer kept as recorded is its own rounding */
        int64_t tail = parts[p].tail;
        int64_t e = last + (scale == 1 && tail <= EXACT_NS ? tail : round_ns((double)tail * scale));
        if (cp) {
            if (e > fs[at].end) { /* the path comes from the last arrival, then moves the data */
                fs[at].end = e;
                *cp_end(cp, at) = *cp_arr(cp, who);
                cp->moved[at] = 1;
            }
        } else if (e > fs[at].end) {
            fs[at].end = e;
            int32_t w = g->fn[at].waiter;
            if (w >= 0 && e > g->gmax[w])
                g->gmax[w] = e;
        }
        if (sync && last > sync[at])
            sync[at] = last;
        if (cp && parts[p].node < 0) /* PART_FINAL */
            follow_done(g, fc, cp, sync, at);
    }
}

/* The arrivals in place order, the completions in between; owns 0: no
 * node's local time changes as a whole (fc has no fixed rank and not
 * all), only by the components removed. */
static inline __attribute__((always_inline)) void
follow_walk(const struct graph *g, const struct follow_cf *fc, const struct cf *cf, struct rstate *st, int64_t *sync,
            const struct follow_cp *cp, int owns)
{
    uint32_t w = 0;
    for (size_t k = 0; k <= g->ncomps; k++) {
        size_t until = k < g->ncomps ? g->comps[k].after : g->total;
        for (; w < until; w++)
            follow_arrive(g, fc, st, w, sync, cp, owns);
        if (k < g->ncomps)
            follow_complete(g, fc, cf, g->comps[k].inst, sync, cp);
    }
}

/* rank_wait() in a replay that follows the walk (sync: per place). */
static double follow_wait(const struct graph *g, const int64_t *sync, int r)
{
    double wait = 0;
    int64_t cover = INT64_MIN;
    for (size_t j = 0; j < g->m->ranks[r].nnodes; j++) {
        uint32_t at = PM(g, g->node_base[r] + j);
        wait_add(&wait, &cover, g->fs[at].arr, sync[at]);
    }
    return wait;
}

/* A replay's result from its ranks' sums (end of the last node less the
 * start, the critical path's transfer, the waits) over the n ranks
 * counted: -1 when none was. */
static int set_result(struct result *res, const struct graph *g, int n, double sum, double path, double wait)
{
    res->step_ms = n ? sum / n / g->nsteps / NS_PER_MS : 0;
    res->path_transfer_ms = n ? path / n / g->nsteps / NS_PER_MS : 0;
    res->wait_share = sum > 0 ? wait / sum : 0;
    return n ? 0 : -1;
}

/* The replay of cf on a walked graph (run_replay_nodes' arguments): the
 * arrivals in place order, the completions in between. */
static int run_follow(const struct graph *g, const struct cf *cf, struct result *res, sp_replay_node_fn fn, void *arg,
                      unsigned want)
{
    const struct sp_model *m = g->m;
    int critical = (want & REPLAY_CRITICAL) != 0;
    struct rstate *st = malloc(((size_t)m->nranks + 1) * sizeof *st);
    float *vals = malloc(((size_t)g->max_peers + 1) * SP_LOC_N * sizeof *vals);
    int64_t *sync = want & (REPLAY_WAIT | REPLAY_CRITICAL) ? g->gmax : NULL; /* struct graph's gmax */
    struct follow_cp c = {0}, *cp = NULL;
    /* A replay that changes no node's local time neither writes nor reads
     * its nodes' struct flocal (local_times, follow_arrive): the
     * path's times take their place there (the replay of the recording
     * is the one that asks for the path; two arrays of a double per node
     * at the peak of a report), else arrays of their own. */
    int in_fl = !cf->imbalance && !cf->busy_scale && !cf->fix && !cf->drop;
    if (critical && in_fl) {
        c.arr = &g->fl[0].gap;
        c.end = &g->fl[0].under;
        c.stride = sizeof *g->fl / sizeof(double);
    } else if (critical) {
        c.arr = malloc((g->total + 1) * sizeof *c.arr);
        c.end = malloc((g->total + 1) * sizeof *c.end);
        c.stride = 1;
    }
    if (critical) {
        c.moved = malloc(g->total + 1);
        c.who = NULL; /* read off the participants */
        c.gate_who = malloc((g->total + 1) * sizeof *c.gate_who);
        c.prev = malloc(((size_t)m->nranks + 1) * sizeof *c.prev);
        c.last = g->base_last; /* the base replay's (the one that asks for the path) */
        cp = &c;
    }
    int rc = -1;
    if (!st || !vals ||
        (critical && (!c.arr || !c.end || !c.moved || !c.gate_who || !c.prev)))
        goto out;
    int by_drop = !cf->imbalance && !cf->busy_scale;
    struct follow_cf fc = {!by_drop, cf->fix, cf->drop};
    local_times(g, cf, &g->fl[0].gap, sizeof *g->fl / sizeof(double), vals);
    for (int r = 0; r < m->nranks; r++) {
        st[r] = (struct rstate){g->start[r], 0};
        if (cp)
            c.prev[r] = UINT32_MAX;
        if (cp && c.last)
            c.last[r] = INT64_MIN;
    }
    /* the walk made for what this replay asks (constant arguments: each
     * its own loop, without the tests for the rest per node) */
    if (cp)
        follow_walk(g, &fc, cf, st, sync, cp, 1);
    else if (sync)
        follow_walk(g, &fc, cf, st, sync, NULL, 1);
    else if (fc.all || fc.fix)
        follow_walk(g, &fc, cf, st, NULL, NULL, 1);
    else /* plain, or components removed: no node's own local time changes */
        follow_walk(g, &fc, cf, st, NULL, NULL, 0);
    double sum = 0, wait = 0, path = 0;
    int n = 0;
    for (int r = 0; r < m->nranks; r++) {
        const struct sp_rank *rk = &m->ranks[r];
        if (!rk->nnodes)
            continue;
        uint32_t lastw = PM(g, g->node_base[r] + rk->nnodes - 1);
        sum += (double)(g->fs[lastw].end - g->start[r]);
        if (want & REPLAY_WAIT)
            wait += follow_wait(g, sync, r);
        if (cp)
            path += *cp_end(&c, lastw);
        n++;
    }
    for (size_t w = 0; sync && w < g->total; w++)
        sync[w] = INT64_MIN; /* gmax, as the next replay wants it */
    rc = set_result(res, g, n, sum, path, wait);
    for (int r = 0; fn && r < m->nranks; r++)
        for (size_t j = 0; j < m->ranks[r].nnodes; j++) {
            const struct fstate *x = &g->fs[PM(g, g->node_base[r] + j)];
            if (x->arr != INT64_MIN && x->end != INT64_MIN)
                fn(arg, r, j, x->arr, x->end);
        }
out:
    free(st);
    free(vals);
    if (!in_fl) {
        free(c.arr);
        free(c.end);
    }
    free(c.moved);
    free(c.gate_who);
    free(c.prev);
    return rc;
}

/* The replay; fn (when not NULL) is given every node it placed: rank
 * index, node index, replayed arrival and end. */
static int run_replay_nodes(const struct graph *g, const struct cf *cf, struct result *res, sp_replay_node_fn fn,
                            void *arg, unsigned want)
{
    int critical = (want & REPLAY_CRITICAL) != 0;
    struct sp_model *m = g->m;
    struct cf fcopy;
    const struct cf *orig = cf;
    cf = with_fix_medians(g, orig, &fcopy);
    if (g->walked) {
        int frc = run_follow(g, cf, res, fn, arg, want);
        with_fix_free(orig, &fcopy);
        return frc;
    }
    struct replay rp = {.g = g, .cf = cf};
    rp.cur = calloc((size_t)m->nranks + 1, sizeof *rp.cur);
    rp.next_at = malloc(((size_t)m->nranks + 1) * sizeof *rp.next_at);
    rp.lo = calloc((size_t)m->nranks + 1, sizeof *rp.lo);
    rp.st = calloc((size_t)m->nranks + 1, sizeof *rp.st);
    rp.ns = g->ns;
    rp.need = malloc((g->ninsts + 1) * sizeof *rp.need);
    rp.last = malloc((g->ninsts + 1) * sizeof *rp.last);
    rp.queue = malloc((g->ninsts + 1) * sizeof *rp.queue);
    rp.vals = malloc(((size_t)g->max_peers + 1) * SP_LOC_N * sizeof *rp.vals);
    if (critical) {
        rp.cp_arr = malloc((g->total + 1) * sizeof *rp.cp_arr);
        rp.cp_end = malloc((g->total + 1) * sizeof *rp.cp_end);
        rp.cp_moved = calloc(g->total + 1, 1);
        rp.who = malloc((g->ninsts + 1) * sizeof *rp.who);
        rp.gate_who = malloc((g->total + 1) * sizeof *rp.gate_who);
    }
    int rc = -1;
    if (critical && (!rp.cp_arr || !rp.cp_end || !rp.cp_moved || !rp.who || !rp.gate_who))
        goto out;
    if (!rp.cur || !rp.next_at || !rp.lo || !rp.st || !rp.ns || !rp.need || !rp.last || !rp.queue || !rp.vals)
        goto out;
    /* every node's local time under cf, in one pass in memory order; a
     * counterfactual that changes only the fixed ranks' local time, or
     * removes components, copies the recorded one of every node it leaves
     * alone (struct graph's nz) */
    int by_drop = !cf->imbalance && !cf->busy_scale; /* plain, or components removed */
    for (size_t f = 0; f < g->total; f++) {
        /* f is a place in ns and gn (both in replay order) */
        struct nstate *ns = &rp.ns[f];
        ns->arr = ns->end = ns->sync = ns->gate_max = INT64_MIN;
        ns->gate_left = g->gn[f].gate_n;
        ns->pending = g->gn[f].nparts;
        ns->done = 0;
        if (by_drop) {
            ns->gap = g->gn[f].rec_gap;
            ns->under = g->rec_under[f];
        }
    }
    local_times(g, cf, &rp.ns[0].gap, sizeof *rp.ns / sizeof(double), rp.vals);
    for (size_t t = 0; t < g->ninsts; t++) {
        rp.need[t] = g->insts[t].n;
        rp.last[t] = INT64_MIN;
    }
    for (int r = 0; r < m->nranks; r++)
        rp.st[r] = (struct rstate){g->start[r], 0};
    for (int r = 0; r < m->nranks; r++)
        rp.next_at[r] = m->ranks[r].nnodes ? PM(g, g->node_base[r]) : UINT32_MAX;
    for (int r = 0; r < m->nranks; r++)
        advance(&rp, r);
    for (;;) {
        while (rp.nq)
            complete(&rp, rp.queue[--rp.nq]);
        if (!force_one(&rp))
            break;
    }
    double sum = 0, wait = 0, path = 0;
    int n = 0;
    for (int r = 0; r < m->nranks; r++) {
        const struct sp_rank *rk = &m->ranks[r];
        size_t lastf = g->node_base[r] + rk->nnodes - 1;
        if (!rk->nnodes || rp.cur[r] < rk->nnodes || !rp.ns[PM(g, lastf)].done)
            continue; /* a rank stuck for good is left out */
        sum += (double)(rp.ns[PM(g, lastf)].end - g->start[r]);
        if (want & REPLAY_WAIT)
            wait += rank_wait(&rp, r);
        if (rp.cp_end)
            path += rp.cp_end[PM(g, lastf)];
        n++;
    }
    rc = set_result(res, g, n, sum, path, wait);
    for (int r = 0; fn && r < m->nranks; r++)
        for (size_t j = 0; j < m->ranks[r].nnodes; j++) {
            size_t flat = g->node_base[r] + j;
            if (rp.ns[PM(g, flat)].arr != INT64_MIN && rp.ns[PM(g, flat)].end != INT64_MIN)
                fn(arg, r, j, rp.ns[PM(g, flat)].arr, rp.ns[PM(g, flat)].end);
        }
out:
    free(rp.cur);
    free(rp.next_at);
    free(rp.lo);
    free(rp.st);
    free(rp.need);
    free(rp.last);
    free(rp.queue);
    free(rp.vals);
    free(rp.cp_arr);
    free(rp.cp_end);
    free(rp.cp_moved);
    free(rp.who);
    free(rp.gate_who);
    with_fix_free(orig, &fcopy);
    return rc;
}

static int run_replay(const struct graph *g, const struct cf *cf, struct result *res, unsigned want)
{
    return run_replay_nodes(g, cf, res, NULL, NULL, want);
}

/* ---- the counterfactuals the findings need ---- */

static const struct cf recorded = {.transfer = 1, .cross = 1};

static double gain_of(const struct graph *g, const struct cf *cf, double base_ms, double *step_ms)
{
    struct result r;
    if (base_ms <= 0 || run_replay(g, cf, &r, 0) < 0) {
        *step_ms = 0;
        return 0;
    }
    *step_ms = r.step_ms;
    double gain = 1 - r.step_ms / base_ms;
    return gain > 0 ? gain : 0;
}

/* Small communicators (tensor-parallel groups and the like): the ranks
 * that called on each, as candidate straggler groups: sets[k * nranks + i]. */
#define MAX_GROUPS 16
static int group_candidates(const struct sp_model *m, uint8_t *sets)
{
    uint64_t seen[MAX_GROUPS];
    int n = 0;
    for (int i = 0; i < m->nranks; i++)
        for (size_t c = 0; c < m->ranks[i].ncalls; c++) {
            const struct sp_coll_call *x = &m->ranks[i].calls[c];
            if (sp_op_is_p2p(x->op) || x->nranks < 2 || (int)x->nranks >= m->nranks)
                continue;
            int k = 0;
            while (k < n && seen[k] != x->comm)
                k++;
            if (k == n) {
                if (n == MAX_GROUPS)
                    continue;
                seen[n++] = x->comm;
            }
            sets[(size_t)k * (size_t)m->nranks + (size_t)i] = 1;
        }
    return n;
}

/* Ranks of consistent excess: each beyond its peers' median by at least
 * CONSISTENT_MIN of the mean step in every analyzed step (slow every step,
 * not now and then), ordered by total excess, largest first; at most
 * MAX_SET.  Several fixed stragglers hold each other's peers back, so only
 * fixing them together shows what they cost. */
static int consistent_ranks(const struct graph *g, const double *excess, const double *by_step, double step_ms,
                            int *out)
{
    int n = 0;
    double bar = CONSISTENT_MIN * step_ms * NS_PER_MS;
    for (int r = 0; r < g->m->nranks; r++) {
        int every = g->nsteps > 0 && excess[r] > 0;
        for (int s = 0; every && s < g->nsteps; s++)
            every = by_step[(size_t)r * (size_t)g->nsteps + (size_t)s] >= bar;
        if (!every)
            continue;
        int pos = n;
        while (pos > 0 && excess[r] > excess[out[pos - 1]])
            pos--;
        if (pos >= MAX_SET)
            continue;
        for (int k = n < MAX_SET ? n : MAX_SET - 1; k > pos; k--)
            out[k] = out[k - 1];
        out[pos] = r;
        if (n < MAX_SET)
            n++;
    }
    return n;
}

/* Mean GPU work per step of each pipeline stage's ranks; scale[i] then
 * puts stage s at the median of the others (1 elsewhere).  0 when stage s
 * is not slower than that median. */
static int stage_scale(const struct sp_model *m, int s, float *scale)
{
    int ns = m->pipeline_stages;
    double *busy = calloc((size_t)ns + 1, sizeof *busy), *others = calloc((size_t)ns + 1, sizeof *others);
    int *cnt = calloc((size_t)ns + 1, sizeof *cnt), ok = 0;
    if (busy && others && cnt) {
        for (int i = 0; i < m->nranks; i++) {
            const struct sp_rank *r = &m->ranks[i];
            if (r->stage < 0 || r->stage >= ns)
                continue;
            for (size_t j = 0; j < r->nnodes; j++)
                busy[r->stage] += r->nodes[j].gap[SP_LOC_BUSY] + r->nodes[j].under[SP_LOC_BUSY] +
                                  r->nodes[j].gap[SP_LOC_COPY] + r->nodes[j].under[SP_LOC_COPY];
            cnt[r->stage]++;
        }
        int no = 0;
        for (int t = 0; t < ns; t++)
            if (t != s && cnt[t])
                others[no++] = busy[t] / cnt[t];
        double med = sp_median(others, (size_t)no), mine = cnt[s] ? busy[s] / cnt[s] : 0;
        ok = no > 0 && mine > med && mine > 0;
        for (int i = 0; i < m->nranks; i++)
            scale[i] = ok && m->ranks[i].stage == s ? (float)(med / mine) : 1.0f;
    }
    free(busy);
    free(others);
    free(cnt);
    return ok;
}

/* Within a host NVLink carries well over 100 GB/s of bus bandwidth on every
 * generation since V100; a network adapter at most its line rate (a 400
 * Gb/s NIC: 50 GB/s).  With no collective within a host to compare with,
 * spanning collectives are judged against this. */
#define CROSS_ABS_GBPS 50.0

static double cross_scale(const struct sp_model *m)
{
    double inter_t, intra_t;
    double inter = sp_model_busbw(m, 1, &inter_t), intra = sp_model_busbw(m, 0, &intra_t);
    if (inter_t <= 0 || inter <= 0)
        return 0;
    double ref = intra_t > 0 && intra > 0 ? intra : CROSS_ABS_GBPS;
    return inter < ref ? inter / ref : 0;
}

void sp_model_replay_keep(struct sp_replay *rp)
{
    if (rp->graph) {
        graph_free(rp->graph);
        free(rp->graph);
        rp->graph = NULL;
    }
}

void sp_model_replay_free(struct sp_replay *rp)
{
    free(rp->straggler_set);
    rp->straggler_set = NULL;
    free(rp->alone);
    rp->alone = NULL;
    free(rp->excess_ms);
    rp->excess_ms = NULL;
    free(rp->steady);
    rp->steady = NULL;
    sp_model_replay_keep(rp);
}

/* After the base replay, what sp_model_replay_check reads of it: per rank
 * the latest replayed end of its nodes placed (g->base_last, INT64_MIN
 * none), and how many were placed.  A walked graph's replay places every
 * node (the walk met them all, and completed every instance), and took
 * each rank's latest end as it went (struct follow_cp's last); else rank
 * by rank. */
static void base_ends(struct graph *g)
{
    if (g->walked) {
        g->base_placed = g->total;
        return;
    }
    for (int i = 0; i < g->m->nranks; i++)
        g->base_last[i] = INT64_MIN;
    g->base_placed = 0;
    for (int r = 0; r < g->m->nranks; r++)
        for (size_t j = 0; j < g->m->ranks[r].nnodes; j++) {
            const struct nstate *x = &g->ns[PM(g, g->node_base[r] + j)];
            if (x->arr == INT64_MIN || x->end == INT64_MIN)
                continue;
            if (x->end > g->base_last[r])
                g->base_last[r] = x->end;
            g->base_placed++;
        }
}

/* ---- each cause's counterfactual (the cause table's cf) ---- */

/* What pricing the causes shares: the graph, the base replay, the
 * straggler candidates and buffers.  Each cause's price writes its
 * out->gain and out->ms (and what it chose: the straggler set, the
 * stage); the causes are priced in the table's order, so that the bubble
 * comes after the stage and the imbalance it balances with. */
struct pricing {
    struct sp_model *m;
    struct graph *g;
    struct sp_replay *out;
    double b;                 /* the base replay's mean step, ms */
    int waits;                /* some rank waits for another: fixing ranks can gain */
    uint32_t present;         /* the local-time components some node has */
    uint8_t *fix, *sets;      /* a set of ranks; the small communicators' (group_candidates) */
    float *scale;             /* per rank index, for busy_scale */
    double *excess;           /* per rank index: local time beyond its peers'; NULL: not worked out */
    int cons[MAX_SET], ncons; /* the ranks slow in every step (consistent_ranks) */
};

/* How the replay prices a cause and removes it once priced: price puts
 * the gain of fixing it alone into p->out; apply adds its fix, as priced,
 * to cf (the ideal adds every found cause's to one) and returns 0 when
 * this run has no fix of it to replay node by node (sp_model_replay_nodes,
 * the check).  scale is apply's buffer, a float per rank. */
struct sp_counterfactual {
    void (*price)(struct pricing *p, int cause);
    int (*apply)(const struct sp_model *m, const struct sp_replay *rp, int cause, struct cf *cf, float *scale);
};

/* The price of a cause whose fix is one counterfactual: its own apply
 * replayed alone (nothing priced when this run has no fix of it). */
static void price_alone(struct pricing *p, int cause)
{
    struct cf cf = recorded;
    if (p->m->causes[cause].cf->apply(p->m, p->out, cause, &cf, p->scale))
        p->out->gain[cause] = gain_of(p->g, &cf, p->b, &p->out->ms[cause]);
}

/* straggler: a rank's (or a set's) local time at its peers' median: each
 * rank alone, then each small communicator's ranks, then the ranks slow
 * in every step together.  Where no rank waits for another, none can gain. */
static void price_straggler(struct pricing *p, int cause)
{
    struct sp_model *m = p->m;
    struct sp_replay *out = p->out;
    size_t nr = (size_t)m->nranks;
    uint8_t *fix = p->fix;
    double *excess = p->excess, b = p->b, ms;
    struct cf cf;
    for (int t = 0; p->waits && excess && t < MAX_TRIED; t++) {
        int i = -1; /* the untried rank with the largest excess */
        for (int r = 0; r < m->nranks; r++)
            if (m->ranks[r].nnodes && excess[r] > 0 && (i < 0 || excess[r] > excess[i]))
                i = r;
        if (i < 0)
            break;
        excess[i] = -excess[i] - 1; /* tried; stays comparable for the groups below */
        memset(fix, 0, nr);
        fix[i] = 1;
        cf = recorded;
        cf.fix = fix;
        cf.fix_n = 1;
        double gain = gain_of(p->g, &cf, b, &ms);
        if (out->alone)
            out->alone[i] = gain;
        if (gain > out->gain[cause]) {
            out->gain[cause] = gain;
            out->ms[cause] = ms;
            memcpy(out->straggler_set, fix, nr);
            out->straggler_rank = i;
        }
    }
    int ng = p->waits && excess ? group_candidates(m, p->sets) : 0;
    double gsum[MAX_GROUPS];
    for (int k = 0; k < ng; k++) { /* the members' excess, tried ones included */
        gsum[k] = 0;
        for (size_t i = 0; i < nr; i++)
            if (p->sets[(size_t)k * nr + i])
                gsum[k] += excess[i] < 0 ? -excess[i] - 1 : excess[i];
    }
    for (int t = 0; t < ng && t < MAX_TRIED; t++) {
        int k = -1;
        for (int x = 0; x < ng; x++)
            if (gsum[x] > 0 && (k < 0 || gsum[x] > gsum[k]))
                k = x;
        if (k < 0)
            break;
        gsum[k] = 0;
        cf = recorded;
        cf.fix = p->sets + (size_t)k * nr;
        for (size_t i = 0; i < nr; i++)
            cf.fix_n += cf.fix[i];
        double gain = gain_of(p->g, &cf, b, &ms);
        /* a group is named only when fixing all of it clearly beats its best member */
        if (gain > out->gain[cause] + SP_GAIN_MODERATE / 2) {
            out->gain[cause] = gain;
            out->ms[cause] = ms;
            memcpy(out->straggler_set, cf.fix, nr);
            out->straggler_rank = -1;
        }
    }
    /* the ranks slow in every step: the two with most excess together,
     * then three, ...; a set is named only when it clearly beats the best
     * candidate before it, and then each member is priced alone too */
    for (int k = 2; k <= p->ncons; k++) {
        memset(fix, 0, nr);
        for (int x = 0; x < k; x++)
            fix[p->cons[x]] = 1;
        cf = recorded;
        cf.fix = fix;
        cf.fix_n = k;
        double gain = gain_of(p->g, &cf, b, &ms);
        if (gain > out->gain[cause] + SP_GAIN_MODERATE / 2) {
            out->gain[cause] = gain;
            out->ms[cause] = ms;
            memcpy(out->straggler_set, fix, nr);
            out->straggler_rank = -1;
            out->straggler_consistent = 1;
        }
    }
    for (size_t i = 0; out->straggler_consistent && out->alone && i < nr; i++) {
        if (!out->straggler_set[i] || out->alone[i] >= 0)
            continue;
        memset(fix, 0, nr);
        fix[i] = 1;
        cf = recorded;
        cf.fix = fix;
        cf.fix_n = 1;
        out->alone[i] = gain_of(p->g, &cf, b, &ms);
    }
}

static int apply_straggler(const struct sp_model *m, const struct sp_replay *rp, int cause, struct cf *cf,
                           float *scale)
{
    (void)cause;
    (void)scale;
    if (!rp->straggler_set)
        return 0;
    cf->fix = rp->straggler_set;
    for (int i = 0; i < m->nranks; i++)
        cf->fix_n += rp->straggler_set[i];
    return 1;
}

/* imbalance: every rank's local time (input aside) at the per-step
 * median; whoever replays it works the medians out on its graph first */
static int apply_imbalance(const struct sp_model *m, const struct sp_replay *rp, int cause, struct cf *cf,
                           float *scale)
{
    (void)m, (void)rp, (void)cause, (void)scale;
    cf->imbalance = 1;
    return 1;
}

static void price_imbalance(struct pricing *p, int cause)
{
    if (!p->waits)
        return;
    float *buf = malloc(((size_t)p->g->max_peers + 1) * 2 * SP_LOC_N * sizeof *buf);
    if (buf)
        group_medians(p->g, buf);
    free(buf);
    price_alone(p, cause);
}

/* pipeline_stage: the slowest stage at the others' median GPU work */
static void price_pipeline_stage(struct pricing *p, int cause)
{
    struct sp_model *m = p->m;
    double ms;
    for (int s = 0; m->pipeline_stages > 1 && s < m->pipeline_stages; s++) {
        if (!stage_scale(m, s, p->scale))
            continue;
        struct cf cf = recorded;
        cf.busy_scale = p->scale;
        double gain = gain_of(p->g, &cf, p->b, &ms);
        if (gain > p->out->gain[cause]) {
            p->out->gain[cause] = gain;
            p->out->ms[cause] = ms;
            p->out->stage = s;
        }
    }
}

static int apply_pipeline_stage(const struct sp_model *m, const struct sp_replay *rp, int cause, struct cf *cf,
                                float *scale)
{
    (void)cause;
    if (rp->stage < 0 || !stage_scale(m, rp->stage, scale))
        return 0;
    cf->busy_scale = scale;
    return 1;
}

/* pipeline_bubble: the bubble of the pipeline balanced (the slowest stage
 * at the others' median, as priced, and every rank at its peers' median:
 * a straggler fixed, work that moves from rank to rank evened out): the
 * stages' wait for each other in fill and drain, which many more
 * micro-batches of the same total work shrink towards nothing (twice as
 * many halve it).  A straggler's peers wait for it too, and more
 * micro-batches would not take that wait away. */
static void price_pipeline_bubble(struct pricing *p, int cause)
{
    if (p->m->pipeline_stages <= 1)
        return;
    struct cf cf = recorded;
    apply_pipeline_stage(p->m, p->out, SP_CAUSE_PIPELINE_STAGE, &cf, p->scale);
    cf.imbalance = p->g->gmed != NULL;
    struct result bal;
    if (run_replay(p->g, &cf, &bal, REPLAY_WAIT) == 0 && bal.step_ms > 0) {
        p->out->bubble_share = bal.wait_share;
        double saved = bal.wait_share * bal.step_ms;
        p->out->gain[cause] = saved / p->b;
        p->out->ms[cause] = p->b - saved;
    }
}

/* the bubble is a share of the replayed step, not a duration: the ideal
 * takes it off, nothing replays it node by node */
static int apply_pipeline_bubble(const struct sp_model *m, const struct sp_replay *rp, int cause, struct cf *cf,
                                 float *scale)
{
    (void)m, (void)rp, (void)cause, (void)scale;
    cf->bubble = 1;
    return 0;
}

/* A drop of the local time the row names (input, host, its parts,
 * unexplained, copies).  A component no node has takes nothing off any
 * node: the replay would give back the base one exactly (no gain), so it
 * is not run. */
static void price_drop(struct pricing *p, int cause)
{
    uint32_t drop = p->m->causes[cause].drop;
    if (!drop)
        return;
    if (!(p->present & drop)) {
        p->out->gain[cause] = 0;
        p->out->ms[cause] = p->b;
        return;
    }
    price_alone(p, cause);
}

static int apply_drop(const struct sp_model *m, const struct sp_replay *rp, int cause, struct cf *cf, float *scale)
{
    (void)rp, (void)scale;
    cf->drop |= m->causes[cause].drop;
    return m->causes[cause].drop != 0;
}

/* communication: every transfer hidden, every synchronization kept (a
 * collective or a recv still ends at its last arrival); the gain is at
 * most the transfer on the recorded longest paths */
static int apply_transfer(const struct sp_model *m, const struct sp_replay *rp, int cause, struct cf *cf,
                          float *scale)
{
    (void)m, (void)rp, (void)cause, (void)scale;
    cf->transfer = 0;
    return 1;
}

static void price_transfer(struct pricing *p, int cause)
{
    struct sp_replay *out = p->out;
    price_alone(p, cause);
    if (out->gain[cause] > out->path_transfer_share) {
        out->gain[cause] = out->path_transfer_share;
        out->ms[cause] = p->b * (1 - out->path_transfer_share);
    }
}

/* cross_node: transfers spanning hosts at the intra-host bandwidth */
static int apply_cross_node(const struct sp_model *m, const struct sp_replay *rp, int cause, struct cf *cf,
                            float *scale)
{
    (void)m, (void)cause, (void)scale;
    if (rp->cross_scale <= 0)
        return 0;
    cf->cross = rp->cross_scale;
    return 1;
}

const struct sp_counterfactual sp_cf_straggler = {price_straggler, apply_straggler};
const struct sp_counterfactual sp_cf_imbalance = {price_imbalance, apply_imbalance};
const struct sp_counterfactual sp_cf_pipeline_stage = {price_pipeline_stage, apply_pipeline_stage};
const struct sp_counterfactual sp_cf_pipeline_bubble = {price_pipeline_bubble, apply_pipeline_bubble};
const struct sp_counterfactual sp_cf_drop = {price_drop, apply_drop};
const struct sp_counterfactual sp_cf_transfer = {price_transfer, apply_transfer};
const struct sp_counterfactual sp_cf_cross_node = {price_alone, apply_cross_node};

int sp_model_replay(struct sp_model *m, struct sp_replay *out)
{
    memset(out, 0, sizeof *out);
    out->straggler_rank = -1;
    out->stage = -1;
    struct graph *gp = calloc(1, sizeof *gp);
    if (!gp)
        return -1;
    out->graph = gp;
    struct graph g = {0}; /* freed whole when an allocation before graph_build fails */
    size_t nr = (size_t)m->nranks;
    uint8_t *fix = calloc(nr + 1, 1), *sets = calloc((size_t)MAX_GROUPS * nr + 1, 1);
    float *scale = malloc((nr + 1) * sizeof *scale);
    out->straggler_set = calloc(nr + 1, 1);
    struct result base;
    if (!fix || !sets || !scale || !out->straggler_set || graph_build(m, &g) < 0 || !g.total ||
        !(g.base_last = malloc(((size_t)m->nranks + 1) * sizeof *g.base_last)) ||
        run_replay_nodes(&g, &recorded, &base, NULL, NULL, REPLAY_CRITICAL) < 0 || base.step_ms <= 0) {
        graph_free(&g);
        free(fix);
        free(sets);
        free(scale);
        return -1;
    }
    base_ends(&g);
    int waits = m->breakdown[SP_CAT_COLL_WAIT] >= NO_WAIT;
    double *excess = calloc(nr + 1, sizeof *excess);
    double *by_step = calloc(nr * (size_t)g.nsteps + 1, sizeof *by_step);
    struct pricing p = {.m = m, .g = &g, .out = out, .b = base.step_ms, .waits = waits};
    p.fix = fix, p.sets = sets, p.scale = scale, p.excess = excess;
    out->alone = malloc((nr + 1) * sizeof *out->alone);
    out->excess_ms = calloc(nr + 1, sizeof *out->excess_ms);
    if (waits && excess && by_step && gather_groups(&g, excess, by_step) == 0)
        p.ncons = consistent_ranks(&g, excess, by_step, base.step_ms, p.cons);
    out->steady = calloc(nr + 1, 1);
    for (int k = 0; out->steady && k < p.ncons; k++)
        out->steady[p.cons[k]] = 1;
    for (size_t i = 0; i < nr; i++) {
        if (out->alone)
            out->alone[i] = -1;
        if (out->excess_ms && excess)
            out->excess_ms[i] = excess[i] / g.nsteps / NS_PER_MS;
    }
    free(by_step);
    out->ok = 1;
    out->base_ms = base.step_ms;
    out->cross_scale = cross_scale(m);
    out->path_transfer_share = base.path_transfer_ms / base.step_ms;
    p.present = (g.nz_all | g.nz_all >> NZ_UNDER) & ((1u << NZ_UNDER) - 1);

    if (waits) { /* the fixed sets' medians read the large groups' kept values */
        float *buf = malloc(((size_t)g.max_peers + 1) * 2 * SP_LOC_N * sizeof *buf);
        if (buf)
            build_windows(&g, buf);
        free(buf);
    }
    for (int c = 0; c < SP_CAUSE_N; c++) {
        const struct sp_counterfactual *cf = m->causes[c].cf;
        if (cf && cf->price)
            cf->price(&p, c);
    }
    free(excess);
    *gp = g; /* kept for sp_model_replay_ideal */
    free(fix);
    free(sets);
    free(scale);
    return 0;
}

double sp_model_replay_ideal(struct sp_model *m, const struct sp_replay *rp, const int *use)
{
    struct graph *gp = rp->graph;
    float *scale = malloc(((size_t)m->nranks + 1) * sizeof *scale);
    if (!rp->ok || !gp || !scale) {
        free(scale);
        return 0;
    }
    struct cf cf = recorded; /* every found cause's fix, as each was priced */
    for (int c = 0; c < SP_CAUSE_N; c++) {
        const struct sp_counterfactual *d = m->causes[c].cf;
        if (use[c] && d)
            d->apply(m, rp, c, &cf, scale);
    }
    if (cf.imbalance) {
        float *buf = malloc(((size_t)gp->max_peers + 1) * 2 * SP_LOC_N * sizeof *buf);
        if (buf)
            group_medians(gp, buf);
        free(buf);
    }
    struct result r;
    double ms = run_replay(gp, &cf, &r, cf.bubble ? REPLAY_WAIT : 0) == 0 ? r.step_ms : 0;
    if (ms > 0 && cf.bubble)
        ms -= r.wait_share * ms;
    free(scale);
    return ms;
}

static int cause_cf(struct sp_model *m, const struct sp_replay *rp, int cause, struct cf *cf, float *scale);

int sp_model_replay_nodes(struct sp_model *m, const struct sp_replay *rp, int cause, sp_replay_node_fn fn,
                          void *arg)
{
    struct graph g;
    float *scale = malloc(((size_t)m->nranks + 1) * sizeof *scale);
    if (!rp->ok || !scale || graph_build(m, &g) < 0) {
        graph_free(&g);
        free(scale);
        return -1;
    }
    struct cf cf = recorded;
    int ok = cause == SP_CAUSE_N || cause_cf(m, rp, cause, &cf, scale);
    if (ok && cf.imbalance) { /* the per-step medians the counterfactual reads */
        float *buf = malloc(((size_t)g.max_peers + 1) * 2 * SP_LOC_N * sizeof *buf);
        if (buf)
            group_medians(&g, buf);
        free(buf);
    }
    struct result r;
    int rc = ok ? run_replay_nodes(&g, &cf, &r, fn, arg, 0) : -1;
    free(scale);
    graph_free(&g);
    return rc;
}

/* ---- the replay's check of itself ---- */

#define CHECK_REPLAY_PCT 1.0 /* the unchanged replay within this % of the mean step */
#define CHECK_SLACK 0.005    /* share of the step a saving may pass its bound by (rounding) */

/* The largest difference between a rank's replayed mean step and its
 * recorded one, ns (the recorded steps in view: a pause of the recording
 * between two of them is no step time). */
static double rank_step_dev(const struct graph *g, const int64_t *last)
{
    double dev = 0;
    for (int r = 0; r < g->m->nranks; r++) {
        const struct sp_rank *rk = &g->m->ranks[r];
        if (!rk->nnodes || !rk->cat || last[r] == INT64_MIN)
            continue;
        double rep = (double)(last[r] - g->start[r]) / g->nsteps;
        double rec = sp_model_rank_step_ms(g->m, rk) * NS_PER_MS;
        if (fabs(rep - rec) > dev)
            dev = fabs(rep - rec);
    }
    return dev;
}

/* The counterfactual that prices cause as sp_model_replay did (its row's
 * apply); 0 when it has none to replay node by node (pipeline_bubble is a
 * share of the balanced replay's wait; scaling, hang: no replay). */
static int cause_cf(struct sp_model *m, const struct sp_replay *rp, int cause, struct cf *cf, float *scale)
{
    const struct sp_counterfactual *d = m->causes[cause].cf;
    *cf = recorded;
    return d && d->apply(m, rp, cause, cf, scale);
}

/* A peer group's largest cuts (critical_bound). */
struct group_cut {
    double local, tail;
};

#define CUT_AHEAD 16 /* critical_bound: participants' groups asked for this many ahead */

/* A cause's own time on the critical path, ms per step: what its fix
 * takes off the local time and transfers of the nodes.  Whichever path
 * through the graph sets a rank's step, it meets a peer group (the same
 * op of the same step on every rank) at one instance, where it takes the
 * local time of one member and the transfer of one (the last to arrive
 * and the one it leaves through), so the sum over groups of the largest
 * local cut plus the largest transfer cut bounds the cut of any path, and
 * a rank's step cannot shrink by more than the cut of the path that set
 * it.  A group that holds k ops of one rank (two communicators of one
 * class) counts k times.  Linear in nodes (a fixed rank's medians aside). */
static double critical_bound(const struct graph *g, const struct cf *cf, struct group_cut *gcut, const uint32_t *gk,
                             float *vals)
{
    const struct sp_model *m = g->m;
    /* a counterfactual that keeps every transfer cuts no tail, one that
     * removes no component and moves no rank cuts no local time: those
     * cuts are 0 for every node, and neither worked out nor read */
    int tails = cf->transfer != 1 || cf->cross != 1;
    int by_drop = !cf->imbalance && !cf->busy_scale; /* as in run_replay_nodes */
    int locals = !by_drop || cf->fix || cf->drop;
    /* per group, its largest local cut and tail cut, none below 0: each
     * node's folded into its group as it is worked out, the nodes in
     * memory order and the participants instance after instance (the
     * groups, a few thousand, stay in cache; a value per node read again
     * group by group was a cache miss per node) */
    for (uint32_t q = 0; q < g->ngroups; q++)
        gcut[q] = (struct group_cut){0, 0};
    /* the instances in the order their participants lie (a walked graph's
     * are the walk's, parts_by_walk: an instance with none is in no list) */
    size_t ntodo = g->walked ? g->ncomps : g->ninsts, nparts = 0;
    for (size_t t = 0; tails && t < g->ninsts; t++)
        nparts += (size_t)g->insts[t].n;
    for (size_t k = 0; tails && k < ntodo; k++) {
        const struct inst *in = &g->insts[g->walked ? g->comps[k].inst : k];
        double scale = in->spans ? cf->cross * cf->transfer : cf->transfer;
        for (int32_t p = 0; p < in->n; p++) {
            size_t i = (size_t)in->first + (size_t)p;
            const struct part *pt = &g->parts[i];
            /* so the participants are read in memory order, but their
             * nodes' groups lie a rank's nodes apart (a cache miss each):
             * the group a few participants on is asked for now */
            if (i + CUT_AHEAD < nparts)
                __builtin_prefetch(&g->gid[g->node_base[pt[CUT_AHEAD].r] + (size_t)(pt[CUT_AHEAD].node & INT32_MAX)]);
            size_t flat = g->node_base[pt->r] + (size_t)(pt->node & INT32_MAX);
            double cut = (double)pt->tail * (1 - scale), *to = &gcut[g->gid[flat]].tail;
            if (cut > *to)
                *to = cut;
        }
    }
    for (int r = 0; locals && r < m->nranks; r++) {
        int all = !by_drop || (cf->fix && cf->fix[r]);
        for (size_t j = 0; j < m->ranks[r].nnodes; j++) {
            uint32_t flat = (uint32_t)(g->node_base[r] + j);
            uint32_t z = all ? 0 : g->nz[flat];
            /* a node without a removed component keeps its local time; the
             * recorded one is summed again from the node local_time reads
             * (the same sum graph_build made, without a cache miss per
             * node in the records, placed in the walk's order) */
            double cut = 0;
            const struct sp_rnode *nd = &m->ranks[r].nodes[j];
            if (all) {
                cut = recorded_sum(nd->gap) - local_time(g, cf, r, flat, 0, vals);
                if (nd->ncalls)
                    cut += recorded_sum(nd->under) - local_time(g, cf, r, flat, 1, vals);
            } else {
                if (z & cf->drop)
                    cut = recorded_sum(nd->gap) - dropped_sum(nd->gap, cf->drop);
                if (z >> NZ_UNDER & cf->drop && nd->ncalls)
                    cut += recorded_sum(nd->under) - dropped_sum(nd->under, cf->drop);
            }
            double *to = &gcut[g->gid[flat]].local;
            if (cut > *to)
                *to = cut;
        }
    }
    double bound = 0;
    for (uint32_t q = 0; q < g->ngroups; q++)
        bound += gk[q] * (gcut[q].local + gcut[q].tail);
    return bound / g->nsteps / NS_PER_MS;
}

/* Per group (in the order of peers[]), how many of its ops the rank with
 * most of them has: at least 1.  The same for every counterfactual. */
static void group_multiplicity(const struct graph *g, uint32_t *gk, uint32_t *per_rank)
{
    for (int r = 0; r < g->m->nranks; r++)
        per_rank[r] = 0;
    for (uint32_t q = 0; q < g->ngroups; q++) {
        uint32_t n = group_n(g, q), k = 1;
        size_t a = g->group_first[q];
        for (uint32_t p = 0; p < n; p++)
            if (++per_rank[g->peer_rank[a + p]] > k)
                k = per_rank[g->peer_rank[a + p]];
        for (uint32_t p = 0; p < n; p++)
            per_rank[g->peer_rank[a + p]] = 0;
        gk[q] = k;
    }
}

int sp_model_replay_check(struct sp_model *m, const struct sp_replay *rp, struct sp_whatif_check *out)
{
    memset(out, 0, sizeof *out);
    for (int c = 0; c < SP_CAUSE_N; c++) {
        out->bound_ms[c] = -1;
        out->bound_ok[c] = 1;
    }
    struct graph *g = rp->graph;
    if (!rp->ok || !g || rp->base_ms <= 0 || m->step_mean_ms <= 0)
        return 0;
    out->done = 1;
    /* the unchanged replay is the base one (sp_model_replay kept its ends) */
    out->unplaced = (int)(g->total - g->base_placed);
    out->replay_error_pct = 100 * rank_step_dev(g, g->base_last) / (m->step_mean_ms * NS_PER_MS);
    out->step_error_pct = 100 * fabs(rp->base_ms - m->step_mean_ms) / m->step_mean_ms;
    out->replay_ok = out->replay_error_pct <= CHECK_REPLAY_PCT && out->step_error_pct <= CHECK_REPLAY_PCT;
    out->ok = out->replay_ok;
    struct group_cut *gcut = malloc(((size_t)g->ngroups + 1) * sizeof *gcut);
    uint32_t *gk = malloc(((size_t)g->ngroups + 1) * sizeof *gk);
    float *vals = malloc(((size_t)g->max_peers + 1) * SP_LOC_N * sizeof *vals);
    float *scale = malloc(((size_t)m->nranks + 1) * sizeof *scale);
    uint32_t *per_rank = malloc(((size_t)m->nranks + 1) * sizeof *per_rank);
    if (gk && per_rank)
        group_multiplicity(g, gk, per_rank);
    for (int c = 0; gcut && gk && vals && scale && per_rank && c < SP_CAUSE_N; c++) {
        struct cf cf;
        if (rp->gain[c] <= 0 || !cause_cf(m, rp, c, &cf, scale))
            continue;
        out->saved_ms[c] = rp->base_ms - rp->ms[c];
        struct cf fcopy;
        const struct cf *use = with_fix_medians(g, &cf, &fcopy);
        out->bound_ms[c] = critical_bound(g, use, gcut, gk, vals);
        with_fix_free(&cf, &fcopy);
        out->bound_ok[c] = out->saved_ms[c] <= out->bound_ms[c] + CHECK_SLACK * rp->base_ms;
        out->ok &= out->bound_ok[c];
    }
    free(gcut);
    free(gk);
    free(vals);
    free(scale);
    free(per_rank);
    return out->ok;
}
