/*
 * model_int.h - what the passes of the model (model_*.c) share and the
 * verbs do not see: the pass entry points in the order sp_model_run calls
 * them, the helpers of model_util.c (warnings, medians, the thread pool),
 * the instance iterator, the replay's results.
 */
#ifndef SP_MODEL_INT_H
#define SP_MODEL_INT_H

#include "model.h"

void sp_model_warn(struct sp_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Pass 1 over the *.sprof files under m->dir: m->frecs as read, not yet
 * grouped (sp_model_open groups them, or the summaries' records). */
int sp_model_load(struct sp_model *m);
/* Pass 1 alone over the given trace paths (taken, freed by the model):
 * m->frecs as read, not yet grouped (scaleprof reduce writes them out). */
int sp_model_scan(struct sp_model *m, char **paths, int n);
/* The rest of loading over m->frecs: the run, ranks, warnings. */
int sp_model_group(struct sp_model *m);
/* Classify's last step (warnings, whether any rank has a step), shared
 * with the summaries' stand-in for pass 2 (model_summary.c). */
int sp_model_classify_done(struct sp_model *m);
void sp_model_align_clocks(struct sp_model *m);
int sp_model_find_steps(struct sp_model *m);
void sp_model_match_collectives(struct sp_model *m);
void sp_model_stragglers(struct sp_model *m);
int sp_model_classify(struct sp_model *m);
/* The event types pass 2 classifies; pass 1 counts exactly these per
 * thread, so that pass 2 knows when a thread can add nothing more. */
#define SP_MODEL_CLASSIFIED_TYPES                                               \
    (SP_TYPE_BIT(SP_EV_GPU) | SP_TYPE_BIT(SP_EV_CUDA) | SP_TYPE_BIT(SP_EV_IO) | \
     SP_TYPE_BIT(SP_EV_WAIT))
static inline int sp_model_classified_type(int type)
{
    return type > 0 && type < (int)SP_TYPE_MASK_BITS &&
           (SP_MODEL_CLASSIFIED_TYPES & SP_TYPE_BIT(type)) != 0;
}
/* Progress on stderr: at most once a second on a terminal (one line
 * rewritten with \r), at most every 5 s otherwise; done == total ends it. */
void sp_model_progress(const struct sp_model *m, const char *what, int done, int total);
/* The pipeline (model_pipeline.c): each rank's stage (-1 when the job is
 * not pipelined), m->pipeline_stages and m->micro_batches, from the p2p
 * sends and recvs matched in the analyzed steps. */
void sp_model_find_stages(struct sp_model *m);
/* What-if replay (model_replay.c): the gain of fixing each cause alone. */
struct sp_replay {
    int ok;
    double base_ms;          /* mean step of the replay as recorded */
    double gain[SP_CAUSE_N]; /* share of base_ms saved, 0 when not measured */
    double ms[SP_CAUSE_N];   /* the mean step then */
    uint8_t *straggler_set;  /* per rank index: the straggler (or group) fixed */
    int straggler_rank;      /* its rank index when one rank, else -1 */
    int stage;               /* the slowest pipeline stage fixed, -1 none */
    double bubble_share;     /* waiting share of the balanced pipeline */
    double cross_scale;      /* spanning bus bandwidth / intra-host, 0 n/a */
    void *graph;             /* the replay's graph, kept for the ideal */
    /* transfer on the recorded longest paths / base_ms: the most hiding
     * transfers can gain */
    double path_transfer_share;

    int straggler_consistent; /* the set is of ranks slow in every step */
    double *alone;            /* per rank index: gain of fixing it alone, <0 not replayed */
    double *excess_ms;        /* per rank index: local time per step beyond its peers' median */
    uint8_t *steady;          /* per rank index: slow in every step (consistent_ranks) */
};
/* Replays the analyzed steps once as recorded and once per counterfactual.
 * Returns 0, or -1 when there is nothing to replay (out->ok is 0).  Free
 * with sp_model_replay_free. */
int sp_model_replay(struct sp_model *m, struct sp_replay *out);
void sp_model_replay_free(struct sp_replay *rp);
/* Frees what only the replay's own runs need (its graph), keeping the
 * results: what the model holds after the findings (m->replay). */
void sp_model_replay_keep(struct sp_replay *rp);
/* The mean step with the causes use[cause] != 0 removed together; 0 unknown. */
double sp_model_replay_ideal(struct sp_model *m, const struct sp_replay *rp, const int *use);
/* The replay's check of itself (struct sp_whatif_check): the unchanged
 * replay against the recorded node times, and each cause's saving (gain >
 * 0) against its own time on the critical path.  The ideal's part is the
 * caller's (it chooses the causes).  Fills out; returns out->ok. */
int sp_model_replay_check(struct sp_model *m, const struct sp_replay *rp, struct sp_whatif_check *out);
/* One counterfactual replayed node by node: the cause's fix as its
 * finding prices it (SP_CAUSE_N: the job as recorded), with fn given each
 * node the replay placed (rank index, node index in the rank's nodes,
 * replayed arrival and end in global ns).  Returns 0, or -1 when the
 * replay cannot remove that cause (pipeline_bubble, scaling, ...; a
 * cross_node or pipeline_stage fix that does not apply) or replays
 * nothing. */
typedef void (*sp_replay_node_fn)(void *arg, int rank, size_t node, int64_t a, int64_t e);
int sp_model_replay_nodes(struct sp_model *m, const struct sp_replay *rp, int cause, sp_replay_node_fn fn,
                          void *arg);
void sp_model_findings(struct sp_model *m);
/* Whether a live process on this machine still maps f's trace (a running
 * writer maps its file; nothing else does). */
int sp_model_file_open(const struct sp_file_rec *f);
int64_t sp_model_global(const struct sp_model *m, const struct sp_rank *r, int64_t t);
/* Frees what a file record owns (not the record itself). */
void sp_file_rec_free(struct sp_file_rec *f);
/* Whether [s, e) on rank r's clock meets a pause of any rank's recording
 * (the control file's stop ... start). */
int sp_model_in_pause(const struct sp_model *m, const struct sp_rank *r, int64_t s, int64_t e);
double sp_model_busbw_factor(uint32_t op, uint32_t nranks);
/* Run fn(i, arg) for i in [0, n) on the model's thread pool. */
void sp_model_parallel(const struct sp_model *m, int n, void (*fn)(int i, void *arg), void *arg);
double sp_median(double *v, size_t n); /* sorts v */
/* The same median of values that are not NaN, without sorting: v is
 * reordered (quickselect, linear on average). */
double sp_median_select(double *v, size_t n);
/* One collective instance: the calls of every rank that reached (comm, seq). */
struct sp_coll_ref {
    int r;
    size_t c;
}; /* rank index, call index */
typedef void (*sp_instance_fn)(struct sp_model *m, const struct sp_coll_ref *refs, size_t n, void *arg);
void sp_model_each_instance(struct sp_model *m, sp_instance_fn fn, void *arg);
/* A pair of keys to order by: a communicator and a sequence number. */
struct sp_pair_key {
    uint64_t a, b;
};
/* place[i] = where item i goes when k[0..n) is ordered by (a, b), items
 * of equal keys kept in their given order (what a stable sort gives):
 * one pass that numbers the distinct pairs, a sort of those alone, and a
 * counting sort.  The calls of a job share a few thousand (communicator,
 * sequence) pairs, so this is linear where a comparison sort of every
 * call is not, and moving item i to place[i] reads the items in order.
 * -1: no memory. */
int sp_pair_places(const struct sp_pair_key *k, size_t n, uint32_t *place);
/* The n items of `size` bytes at base sorted by their keys k, a stable
 * sort (sp_pair_places, then each item moved to its place through a
 * copy).  -1 (items left as they were): no memory. */
int sp_sort_by_pairs(void *base, size_t size, size_t n, const struct sp_pair_key *k);
/* qsort, but nothing done when base is in order already (a job's records
 * mostly come in order: the check is one pass, the sort many). */
void sp_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));


/* The k-th smallest of v[0..n) (reorders v), n > 0: Hoare's selection,
 * linear on average.  With no NaN the k-th smallest is one value, whichever
 * way it is found.  Defined once per element type (double for the step
 * search, float for the replay's peer groups). */
#define SP_KTH_DEFINE(name, T)               \
    static T name(T *v, size_t n, size_t k)  \
    {                                        \
        size_t lo = 0, hi = n - 1;           \
        while (lo < hi) {                    \
            T pivot = v[lo + (hi - lo) / 2]; \
            size_t i = lo, j = hi;           \
            while (i <= j) {                 \
                while (v[i] < pivot)         \
                    i++;                     \
                while (v[j] > pivot)         \
                    j--;                     \
                if (i <= j) {                \
                    T t = v[i];              \
                    v[i] = v[j];             \
                    v[j] = t;                \
                    i++;                     \
                    if (j == 0)              \
                        break;               \
                    j--;                     \
                }                            \
            }                                \
            if (k <= j)                      \
                hi = j;                      \
            else if (k >= i)                 \
                lo = i;                      \
            else                             \
                return v[k];                 \
        }                                    \
        return v[k];                         \
    }

#endif
