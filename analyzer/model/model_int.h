/*
 * model_int.h - what the passes of the model (model_*.c) share and
 * nothing else sees: the pass entry points in the order sp_model_run
 * calls them, what pass 1 keeps of each file for the passes after it
 * (struct sp_file_pass: a file's calls and markers until grouping, its
 * threads, its kernel sequence), the replay's results and its entry
 * points, the pauses and bus bandwidth factors the passes read.  The
 * helpers the analyses use too (warnings, medians, sorts, the thread
 * pool, the instance iterator) are model_util.h's.
 */
#ifndef SP_MODEL_INT_H
#define SP_MODEL_INT_H

#include "model.h"
#include "model_util.h"

/* What pass 1 keeps of a file for the passes after it alone (struct
 * sp_file_pass, below), and its parts. */
/* A recording thread as pass 1 saw it, in the order the reader streams
 * it: how many events pass 2 will classify from it, the latest time among
 * them, and its disorder - how far an event's time fell below the latest
 * time of the thread seen before it (a CUPTI buffer thread delivers GPU
 * records grouped by stream, so its times go back and forth). */
struct sp_tid_mark {
    uint32_t tid;
    int64_t last_t, max_t, lag;
    uint64_t count;
};
/* A compute kernel of a file with no step marker and no collective yet:
 * the sequence single-GPU step detection looks for a period in. */
struct sp_kernel_rec {
    uint32_t name, stream;
    int64_t start, end;
    uint64_t grid; /* threads */
};
/* A file's pass (sp_file_rec's): made by its scan or read from a summary,
 * freed with the file (sp_file_rec_free). */
struct sp_file_pass {
    /* the calls and markers: copied to the file's rank(s) when the files
     * are grouped, then freed (NULL, 0) */
    struct sp_coll_call *calls;
    size_t ncalls;
    struct sp_mark *marks;
    size_t nmarks;
    struct sp_tid_mark *tids; /* for pass 2 */
    size_t ntids;             /* classified threads */
    struct sp_kernel_rec *kseq;
    size_t nkseq;
    int kseq_full; /* the sequence reached its cap (1), was dropped for good (-1) */
};
/* f's pass; an empty one when f has none (a record built in memory, an
 * allocation that failed). */
static inline const struct sp_file_pass *sp_file_pass_of(const struct sp_file_rec *f)
{
    static const struct sp_file_pass none;
    return f->pass ? f->pass : &none;
}
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
/* After pass 2 (or what stands for it: the summaries, a graph built in
 * memory): the breakdown over the ranks and the mean and median step. */
void sp_model_summarize_steps(struct sp_model *m);
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
/* Frees m's warnings and what counts them. */
void sp_model_warnings_free(struct sp_model *m);
/* Frees what a file record owns (not the record itself). */
void sp_file_rec_free(struct sp_file_rec *f);
/* Whether [s, e) on rank r's clock meets a pause of any rank's recording
 * (the control file's stop ... start). */
int sp_model_in_pause(const struct sp_model *m, const struct sp_rank *r, int64_t s, int64_t e);
double sp_model_busbw_factor(uint32_t op, uint32_t nranks);


#endif
