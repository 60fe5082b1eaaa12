/*
 * model_graph.h - a model built in memory instead of read from traces:
 * ranks on hosts, their steps, and each step's chain of replay nodes (its
 * NCCL kernels, then its end) with the local time before and under each,
 * as pass 2 would have measured it (model.h, struct sp_rnode and sp_loc).
 *
 * What it takes is what the what-if replay consumes, nothing more: a
 * kernel's start and end, the calls it ran (a group's sends and recvs
 * share one) with what matches them across ranks, and the local time by
 * component.  Finishing the graph runs the collectives' pass over its
 * calls (model_coll.c: instances by (communicator, sequence number) and
 * (sender, receiver, k), waits, bus bandwidth), sums each step's seven
 * categories from the nodes and leaves the model classified
 * (SP_STAGE_CLASSIFY): sp_model_run(m, SP_STAGE_FINDINGS) then finds the
 * stragglers, replays and prices the causes, and the renderers read it
 * (report's text, JSON and CSV, html), its steps "given".
 *
 * For tests that check the replay on graphs small enough to work out by
 * hand, and for an importer that knows a job's ops and local time without
 * a trace to read.  Every time is ns on one clock shared by all hosts.
 *
 * Windows, as model_classify.c measures them: a node's gap runs from the
 * end of the previous op's window (its end, or this node's arrival when
 * that came first; the step's start for the step's first node) to its
 * arrival; an op's under runs from its arrival to the end of its window.
 * What a gap's components leave of its window is unexplained idle
 * (SP_LOC_OTHER); what an under's leave of its window is the NCCL
 * kernel's own time (waiting, then moving data).  Local time larger than
 * its window is refused.
 *
 * Errors are values: -1 with a warning in the model saying what was
 * refused; the model stays safe to sp_model_free.
 */
#ifndef SP_MODEL_GRAPH_H
#define SP_MODEL_GRAPH_H

#include <stdint.h>

#include "model.h"

/* One NCCL call of an op, with what matches it across ranks. */
struct sp_graph_call {
    uint32_t op;     /* SP_NCCL_* */
    uint64_t comm;   /* communicator id, the same on every rank */
    uint32_t nranks; /* the communicator's size */
    int32_t crank;   /* this rank's place in it */
    int32_t peer;    /* send/recv: the other side's place in it */
    uint64_t seq;    /* a collective: its sequence number on comm; a send
                      * or recv: its k-th message with peer, from 1 */
    uint64_t bytes;
};

/* One op of a rank: an NCCL kernel and the calls it ran. */
struct sp_graph_op {
    int64_t a, e;          /* the kernel's start (the rank's arrival) and end */
    float gap[SP_LOC_N];   /* local time in the gap before it, by component */
    float under[SP_LOC_N]; /* local time while it ran (compute under it ...) */
    const struct sp_graph_call *calls;
    int ncalls;
};

struct sp_graph_build;

/* A new model m of nranks ranks, rank i at index i on host host[i]
 * (host NULL: every rank on host 0; hosts are numbered from 0 without a
 * hole), and the builder that fills it; NULL when out of memory or the
 * hosts are not so (m then safe to sp_model_free). */
struct sp_graph_build *sp_graph_begin(struct sp_model *m, int nranks, const int *host);
/* Opens rank's next step at start (after its previous step's end). */
int sp_graph_step(struct sp_graph_build *b, int rank, int64_t start);
/* Adds rank's next op to its open step: it starts in the step, no
 * earlier than the rank's previous op. */
int sp_graph_op(struct sp_graph_build *b, int rank, const struct sp_graph_op *op);
/* Closes rank's open step at end, with the local time in its last gap. */
int sp_graph_step_end(struct sp_graph_build *b, int rank, int64_t end, const float gap[SP_LOC_N]);
/* Matches the calls, sums the categories and frees b: every rank has the
 * same number of steps, at least one, all closed.  0, or -1 (a warning
 * in the model says why; b freed either way). */
int sp_graph_finish(struct sp_graph_build *b);
/* Frees b without finishing (an error while building). */
void sp_graph_abandon(struct sp_graph_build *b);

#endif
