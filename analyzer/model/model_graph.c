/*
 * model_graph.c - a model built in memory (model_graph.h): the ranks'
 * steps, calls and replay nodes as the load, steps and classify passes
 * would leave them, so that the passes after them run unchanged.
 *
 * The builder keeps, per rank, where its open step is and the window of
 * its last op, so that each node's gap window is known when it is added
 * (what its components leave is unexplained idle, SP_LOC_OTHER) and the
 * op before it can be held to its under window.  Nodes are written as
 * model_classify.c's build_nodes writes them: an op's calls are the
 * rank's calls [call, call + ncalls), each naming its node; the step's
 * end is a node of no call at the step's end; steps are numbered from the
 * first analyzed (every step is: no warm-up is skipped in a graph).
 *
 * Finishing matches the calls with the collectives' pass (keys, instances,
 * waits, summaries) and then sums each step's categories from its nodes:
 * a node's local time by component (compute, memcpy, input, the host's
 * parts, unexplained), an op's kernel time outside its local time split
 * at its wait (collective_wait up to its synchronization point,
 * collective_transfer after) and the compute under it as overlap.  What
 * the categories of a step add up to is the step's length, as in pass 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model_graph.h"
#include "model_int.h"

/* Float components against integer windows: a sum may pass its window by
 * this share (and a nanosecond) before it is refused as too large. */
#define LOCAL_SLACK 1e-6
/* a rank's nodes, calls and steps: room for this many at first */
#define GRAPH_FIRST 8

struct rank_build {
    int open;         /* a step is open */
    int64_t start;    /* its start */
    int have_op;      /* the open step has an op so far */
    int64_t prev_a;   /* the last op's arrival ... */
    int64_t prev_e;   /* ... and its end, within the step */
    size_t prev_node; /* its node */
    size_t nodes_cap, calls_cap, steps_cap;
};

struct sp_graph_build {
    struct sp_model *m;
    struct rank_build *rb;
};

static double sum_of(const float v[SP_LOC_N])
{
    double s = 0;
    for (int c = 0; c < SP_LOC_N; c++)
        s += v[c];
    return s;
}

static int fits(const float v[SP_LOC_N], int64_t window)
{
    for (int c = 0; c < SP_LOC_N; c++)
        if (!(v[c] >= 0))
            return 0; /* negative or NaN */
    return sum_of(v) <= (double)window * (1 + LOCAL_SLACK) + 1;
}

struct sp_graph_build *sp_graph_begin(struct sp_model *m, int nranks, const int *host)
{
    memset(m, 0, sizeof *m);
    sp_model_opts_default(&m->opts);
    m->opts.skip = 0; /* the steps given are the steps analyzed */
    m->dir = "";
    snprintf(m->source, sizeof m->source, "graph");
    m->detected_by = "given";
    m->causes = sp_cause_table();
    if (nranks < 1)
        return NULL;
    int nhosts = 1;
    for (int i = 0; host && i < nranks; i++) {
        if (host[i] < 0 || host[i] >= nranks)
            return NULL;
        if (host[i] + 1 > nhosts)
            nhosts = host[i] + 1;
    }
    for (int h = 0; host && h < nhosts; h++) { /* numbered without a hole */
        int used = 0;
        for (int i = 0; i < nranks; i++)
            used |= host[i] == h;
        if (!used)
            return NULL;
    }
    struct sp_graph_build *b = calloc(1, sizeof *b);
    m->ranks = calloc((size_t)nranks, sizeof *m->ranks);
    m->hosts = calloc((size_t)nhosts, sizeof *m->hosts);
    m->host_offset = calloc((size_t)nhosts, sizeof *m->host_offset);
    if (b)
        b->rb = calloc((size_t)nranks, sizeof *b->rb);
    if (!b || !b->rb || !m->ranks || !m->hosts || !m->host_offset) {
        if (b)
            free(b->rb);
        free(b);
        return NULL;
    }
    b->m = m;
    m->nranks = m->world_size = m->rank_procs = m->gpus = nranks;
    m->nhosts = nhosts;
    for (int h = 0; h < nhosts; h++)
        snprintf(m->hosts[h], sizeof m->hosts[h], "host%d", h);
    for (int i = 0; i < nranks; i++) {
        struct sp_rank *r = &m->ranks[i];
        r->rank = i;
        r->host = host ? host[i] : 0;
        r->device = -1;
        r->shared = 1;
        r->stage = -1;
        r->machine_busy = -1;
    }
    m->done = SP_STAGE_LOAD;
    return b;
}

static int refuse(struct sp_graph_build *b, int rank, const char *what)
{
    sp_model_warn(b->m, "graph: rank %d: %s", rank, what);
    return -1;
}

static int rank_ok(const struct sp_graph_build *b, int rank)
{
    return b && rank >= 0 && rank < b->m->nranks;
}

/* The build state of `rank`'s open step, or NULL (refused: `what` says
 * why) when the rank is out of range or has no step open. */
static struct rank_build *open_step(struct sp_graph_build *b, int rank, const char *what)
{
    if (!rank_ok(b, rank))
        return NULL;
    if (!b->rb[rank].open) {
        refuse(b, rank, what);
        return NULL;
    }
    return &b->rb[rank];
}

int sp_graph_step(struct sp_graph_build *b, int rank, int64_t start)
{
    if (!rank_ok(b, rank))
        return -1;
    struct sp_rank *r = &b->m->ranks[rank];
    struct rank_build *rb = &b->rb[rank];
    if (rb->open)
        return refuse(b, rank, "a step opened while one is open");
    if (r->nsteps && start < r->steps[r->nsteps - 1].end)
        return refuse(b, rank, "a step opened before the previous one ended");
    if (r->nsteps >= UINT16_MAX)
        return refuse(b, rank, "too many steps");
    rb->open = 1;
    rb->start = start;
    rb->have_op = 0;
    return 0;
}

/* The end of the last op's window when the next node arrives at a: its
 * end, or a itself when that came first, never before the op's arrival. */
static int64_t window_cut(const struct rank_build *rb, int64_t a)
{
    int64_t cut = rb->prev_e < a ? rb->prev_e : a;
    return cut < rb->prev_a ? rb->prev_a : cut;
}

/* A new node at a with its gap: the last op held to its under window,
 * the gap to its own, whose rest is unexplained idle. */
static struct sp_rnode *add_node(struct sp_graph_build *b, int rank, int64_t a, const float gap[SP_LOC_N])
{
    struct sp_rank *r = &b->m->ranks[rank];
    struct rank_build *rb = &b->rb[rank];
    int64_t from = rb->start;
    if (rb->have_op) {
        from = window_cut(rb, a);
        if (!fits(r->nodes[rb->prev_node].under, from - rb->prev_a)) {
            refuse(b, rank, "an op's local time is longer than it ran before the next node");
            return NULL;
        }
    }
    if (!fits(gap, a - from)) {
        refuse(b, rank, "a gap's local time is longer than the gap");
        return NULL;
    }
    struct sp_rnode *nodes = sp_grow(r->nodes, r->nnodes, &rb->nodes_cap, sizeof *r->nodes, GRAPH_FIRST);
    if (!nodes)
        return NULL;
    r->nodes = nodes;
    struct sp_rnode *n = &r->nodes[r->nnodes++];
    memset(n, 0, sizeof *n);
    memcpy(n->gap, gap, sizeof n->gap);
    double rest = (double)(a - from) - sum_of(gap);
    n->gap[SP_LOC_OTHER] += rest > 0 ? (float)rest : 0;
    n->step = (uint16_t)r->nsteps;
    n->a = n->e = a;
    return n;
}

int sp_graph_op(struct sp_graph_build *b, int rank, const struct sp_graph_op *op)
{
    struct rank_build *rb = open_step(b, rank, "an op outside a step");
    if (!rb)
        return -1;
    struct sp_rank *r = &b->m->ranks[rank];
    if (op->a < rb->start || op->e < op->a || (rb->have_op && op->a < rb->prev_a))
        return refuse(b, rank, "an op before its step, before the previous op, or ending before it starts");
    if (op->ncalls < 1 || op->ncalls > UINT16_MAX || r->ncalls + (size_t)op->ncalls > UINT32_MAX)
        return refuse(b, rank, "an op without a call, or more calls than a node can name");
    struct sp_coll_call *calls = sp_grow_to(r->calls, r->ncalls + (size_t)op->ncalls, &rb->calls_cap, sizeof *r->calls, GRAPH_FIRST);
    if (!calls)
        return -1;
    r->calls = calls;
    struct sp_rnode *n = add_node(b, rank, op->a, op->gap);
    if (!n)
        return -1;
    n->e = op->e;
    memcpy(n->under, op->under, sizeof n->under);
    n->call = (uint32_t)r->ncalls;
    n->ncalls = (uint16_t)op->ncalls;
    for (int i = 0; i < op->ncalls; i++) {
        const struct sp_graph_call *g = &op->calls[i];
        int p2p = sp_op_is_p2p(g->op);
        r->calls[r->ncalls++] = (struct sp_coll_call){
            .comm = g->comm,
            .seq = g->seq,
            .bytes = g->bytes,
            .op = g->op,
            .nranks = g->nranks,
            .crank = g->crank,
            .peer = p2p ? g->peer : -1,
            .peer_seq = p2p ? (uint32_t)g->seq : 0,
            .inst = -1,
            .node = (int32_t)(r->nnodes - 1),
            .host_t = op->a,
            .start = op->a,
            .end = op->e,
            .timing = SP_TIMING_GPU,
            .device = -1,
        };
    }
    rb->have_op = 1;
    rb->prev_a = op->a;
    rb->prev_e = op->e;
    rb->prev_node = r->nnodes - 1;
    return 0;
}

int sp_graph_step_end(struct sp_graph_build *b, int rank, int64_t end, const float gap[SP_LOC_N])
{
    struct rank_build *rb = open_step(b, rank, "a step closed that is not open");
    if (!rb)
        return -1;
    struct sp_rank *r = &b->m->ranks[rank];
    if (end <= rb->start || (rb->have_op && end <= rb->prev_a))
        return refuse(b, rank, "a step that ends before it starts or before its last op");
    if (rb->have_op && rb->prev_e > end)
        rb->prev_e = end; /* an op's window ends with its step */
    struct sp_span *steps = sp_grow(r->steps, (size_t)r->nsteps, &rb->steps_cap, sizeof *r->steps, GRAPH_FIRST);
    if (!steps)
        return -1;
    r->steps = steps;
    if (!add_node(b, rank, end, gap))
        return -1;
    r->steps[r->nsteps++] = (struct sp_span){rb->start, end};
    rb->open = 0;
    return 0;
}

void sp_graph_abandon(struct sp_graph_build *b)
{
    if (!b)
        return;
    free(b->rb);
    free(b);
}

/* The category a component of local time is classified as. */
static int cat_of(int loc)
{
    switch (loc) {
    case SP_LOC_BUSY:
        return SP_CAT_COMPUTE;
    case SP_LOC_COPY:
        return SP_CAT_MEMCPY;
    case SP_LOC_INPUT:
        return SP_CAT_IDLE_INPUT;
    case SP_LOC_OTHER:
        return SP_CAT_IDLE_OTHER;
    default: /* the host's parts */
        return SP_CAT_IDLE_HOST;
    }
}

static void add_local(const float v[SP_LOC_N], double *cat, double *wr, double *sy, double *la)
{
    for (int c = 0; c < SP_LOC_N; c++)
        cat[cat_of(c)] += v[c];
    *wr += v[SP_LOC_WRITE];
    *sy += v[SP_LOC_SYNC];
    *la += v[SP_LOC_LAUNCH];
}

/* Rank r's categories and per-step host parts from its nodes (the calls'
 * waits matched). */
static int categorize(struct sp_rank *r)
{
    size_t ns = (size_t)r->nsteps;
    r->cat = calloc(ns, sizeof *r->cat);
    r->input_head = calloc(ns, sizeof *r->input_head);
    r->write_idle = calloc(ns, sizeof *r->write_idle);
    r->sync_idle = calloc(ns, sizeof *r->sync_idle);
    r->launch_idle = calloc(ns, sizeof *r->launch_idle);
    if (!r->cat || !r->input_head || !r->write_idle || !r->sync_idle || !r->launch_idle)
        return -1;
    int computed = 0; /* the step's compute has begun (its input before it is the head) */
    for (size_t j = 0; j < r->nnodes; j++) {
        const struct sp_rnode *n = &r->nodes[j];
        size_t k = n->step;
        double *cat = r->cat[k];
        if (!j || r->nodes[j - 1].step != n->step)
            computed = 0;
        add_local(n->gap, cat, &r->write_idle[k], &r->sync_idle[k], &r->launch_idle[k]);
        if (!computed)
            r->input_head[k] += n->gap[SP_LOC_INPUT];
        computed |= n->gap[SP_LOC_BUSY] > 0;
        if (!n->ncalls)
            continue;
        add_local(n->under, cat, &r->write_idle[k], &r->sync_idle[k], &r->launch_idle[k]);
        if (!computed)
            r->input_head[k] += n->under[SP_LOC_INPUT];
        computed |= n->under[SP_LOC_BUSY] > 0;
        cat[SP_CAT_OVERLAP] += n->under[SP_LOC_BUSY];
        /* the kernel's own time in its window: waiting, then moving data */
        const struct sp_rnode *next = &r->nodes[j + 1]; /* a step ends every chain */
        int64_t end = n->e < next->a ? n->e : next->a;
        double own = (double)(end - n->a) - sum_of(n->under);
        double wait = (double)r->calls[n->call].wait;
        if (own < 0)
            own = 0;
        wait = wait < own ? wait : own;
        cat[SP_CAT_COLL_WAIT] += wait;
        cat[SP_CAT_COLL_TRANSFER] += own - wait;
    }
    return 0;
}

int sp_graph_finish(struct sp_graph_build *b)
{
    if (!b)
        return -1;
    struct sp_model *m = b->m;
    int rc = 0, nsteps = m->ranks[0].nsteps;
    for (int i = 0; rc == 0 && i < m->nranks; i++) {
        if (b->rb[i].open)
            rc = refuse(b, i, "a step left open");
        else if (m->ranks[i].nsteps != nsteps || !nsteps)
            rc = refuse(b, i, "a number of steps unlike rank 0's, or none");
    }
    sp_graph_abandon(b);
    if (rc < 0)
        return -1;
    m->steps_total = nsteps;
    m->step_lo = 0;
    m->step_hi = nsteps;
    for (int i = 0; i < m->nranks; i++) {
        struct sp_rank *r = &m->ranks[i];
        r->first_t = r->steps[0].start;
        r->last_t = r->steps[r->nsteps - 1].end;
    }
    m->done = SP_STAGE_STEPS;
    sp_model_match_collectives(m);
    m->done = SP_STAGE_COLLECTIVES;
    for (int i = 0; i < m->nranks; i++)
        if (categorize(&m->ranks[i]) < 0)
            return -1;
    sp_model_summarize_steps(m);
    m->done = SP_STAGE_CLASSIFY;
    return 0;
}
