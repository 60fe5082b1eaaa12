/*
 * model_pipeline.c - the pipeline, if any: which stage each rank is, and
 * how many micro-batches a step carries, from the point-to-point traffic
 * alone, never from configuration.
 *
 * Ranks that exchange sends and recvs form chains; a chain's stage 0 is
 * the end whose first p2p op is a send (the forward pass starts there).
 * Stages are distances along the chain.  A rank with more than two p2p
 * neighbours (an all-to-all by p2p) means no chain: no stages.  One ring
 * of ranks with two neighbours each is a looped (interleaved) pipeline:
 * its last stage feeds the first stage's next model chunk (ring_stages).
 *
 * The micro-batches are stage 0's sends in a step; the schedule is read
 * from where its first recv (the first gradient back) falls among them:
 * after all of them, GPipe; after S of them (S stages), 1F1B; a ring's
 * micro-batches are what stage 0 sends on less what it takes back from
 * the last stage (ring_schedule).
 */
#include <stdlib.h>

#include "model_int.h"

/* The two ranks of each matched send/recv pair in the analyzed steps:
 * pair[2 * t], pair[2 * t + 1] for instance t, -1 when t is not one. */
static int32_t *p2p_pairs(const struct sp_model *m, size_t ninst)
{
    int32_t *pair = malloc((2 * ninst + 1) * sizeof *pair);
    uint8_t *n = calloc(ninst + 1, 1), *sends = calloc(ninst + 1, 1), *p2p = calloc(ninst + 1, 1);
    if (!pair || !n || !sends || !p2p) {
        free(pair);
        pair = NULL;
        goto out;
    }
    for (size_t t = 0; t < 2 * ninst; t++)
        pair[t] = -1;
    for (int i = 0; i < m->nranks; i++)
        for (size_t c = 0; c < m->ranks[i].ncalls; c++) {
            const struct sp_coll_call *x = &m->ranks[i].calls[c];
            if (x->node < 0 || x->inst < 0 || (size_t)x->inst >= ninst)
                continue;
            size_t t = (size_t)x->inst;
            if (n[t] < 2)
                pair[2 * t + n[t]] = i;
            if (n[t] < UINT8_MAX)
                n[t]++;
            p2p[t] = (uint8_t)sp_op_is_p2p(x->op);
            sends[t] += sends[t] < UINT8_MAX && x->op == SP_NCCL_SEND;
        }
    for (size_t t = 0; t < ninst; t++)
        if (!p2p[t] || n[t] != 2 || sends[t] != 1)
            pair[2 * t] = pair[2 * t + 1] = -1;
out:
    free(n);
    free(sends);
    free(p2p);
    return pair;
}

/* The schedule from stage 0's order: GPipe runs every forward before the
 * first backward, so all M sends precede the first gradient; 1F1B starts
 * backwards after S-1 warm-up forwards (its first gradient arrives after
 * S sends).  With M <= S-1 the two orders are one. */
static const char *schedule_of(int micro, int sends_before_recv, int stages)
{
    if (micro < 2 || sends_before_recv < 1)
        return NULL;
    if (sends_before_recv >= micro)
        return "GPipe";
    return sends_before_recv <= stages ? "1F1B" : NULL;
}

/* The rank on the other side of call x's send/recv pair, -1 unknown. */
static int partner(const int32_t *pair, size_t ninst, int self, const struct sp_coll_call *x)
{
    if (x->inst < 0 || (size_t)x->inst >= ninst || pair[2 * x->inst] < 0)
        return -1;
    return pair[2 * x->inst] == self ? pair[2 * x->inst + 1] : pair[2 * x->inst];
}

/* The rank's first p2p call in the analyzed steps, NULL when none. */
static const struct sp_coll_call *first_p2p(const struct sp_rank *r)
{
    for (size_t j = 0; j < r->nnodes; j++)
        if (r->nodes[j].ncalls && sp_op_is_p2p(r->calls[r->nodes[j].call].op))
            return &r->calls[r->nodes[j].call];
    return NULL;
}

/* An interleaved schedule (virtual stages) loops: the last stage feeds
 * the first stage's next model chunk, so the p2p neighbours form one ring
 * (every rank of it two neighbours, at least three ranks).  Stage 0 is
 * the one rank of the ring whose first p2p op is a send, and the stages
 * follow the way that send goes.  Returns 1 and the stages when the
 * traffic is such a ring, else 0 (nothing assigned). */
static int ring_stages(struct sp_model *m, const int *nb, const int *deg, const int32_t *pair, size_t ninst,
                       int *stages)
{
    int start = -1, members = 0;
    for (int i = 0; i < m->nranks; i++) {
        if (deg[i] == 1)
            return 0; /* an end: a chain */
        if (deg[i] != 2)
            continue;
        members++;
        const struct sp_coll_call *x = first_p2p(&m->ranks[i]);
        if (x && x->op == SP_NCCL_SEND) {
            if (start >= 0)
                return 0; /* two forward passes start: not one pipeline */
            start = i;
        }
    }
    if (start < 0 || members < 3)
        return 0;
    int cur = partner(pair, ninst, start, first_p2p(&m->ranks[start])), prev = start, s = 1;
    if (cur < 0)
        return 0;
    m->ranks[start].stage = 0;
    while (cur != start && cur >= 0 && m->ranks[cur].stage < 0) {
        m->ranks[cur].stage = s++;
        int next = nb[2 * cur] != prev ? nb[2 * cur] : nb[2 * cur + 1];
        prev = cur;
        cur = next;
    }
    if (cur != start || s != members) {
        for (int i = 0; i < m->nranks; i++)
            m->ranks[i].stage = -1;
        return 0;
    }
    *stages = s;
    return 1;
}

/* Micro-batches of a looped pipeline, from stage 0 (rank i) in the first
 * analyzed step: it sends every chunk's forward of every micro-batch to
 * stage 1 (V M) and takes the forward of chunks 1.. from the last stage
 * ((V - 1) M), so M is the difference. */
static void ring_schedule(struct sp_model *m, int i, const int32_t *pair, size_t ninst)
{
    const struct sp_rank *r = &m->ranks[i];
    int to_next = 0, from_last = 0;
    for (size_t j = 0; j < r->nnodes && r->nodes[j].step == 0; j++)
        for (uint32_t c = 0; c < r->nodes[j].ncalls; c++) {
            const struct sp_coll_call *x = &r->calls[r->nodes[j].call + c];
            int other = partner(pair, ninst, i, x);
            if (other < 0)
                continue;
            to_next += x->op == SP_NCCL_SEND && m->ranks[other].stage == 1;
            from_last += x->op == SP_NCCL_RECV && m->ranks[other].stage == m->pipeline_stages - 1;
        }
    int micro = to_next - from_last;
    if (micro > 0 && to_next % micro == 0 && to_next / micro >= 2) {
        m->micro_batches = micro;
        m->pipeline_schedule = "interleaved";
    }
}

void sp_model_find_stages(struct sp_model *m)
{
    int n = m->nranks;
    size_t ninst = m->coll_instances;
    int *nb = malloc(sizeof *nb * (size_t)(2 * n + 1)); /* up to two neighbours each */
    int *deg = calloc((size_t)n + 1, sizeof *deg);
    int32_t *pair = p2p_pairs(m, ninst);
    for (int i = 0; i < n; i++)
        m->ranks[i].stage = -1;
    m->pipeline_stages = m->micro_batches = 0;
    m->pipeline_schedule = NULL;
    if (!nb || !deg || !pair)
        goto out;
    int chain = 1;
    for (size_t t = 0; t < ninst && chain; t++) {
        int a = pair[2 * t], b = pair[2 * t + 1];
        if (a < 0 || b < 0 || a == b)
            continue; /* a send and its recv, on two ranks */
        if (a > b) {
            int x = a;
            a = b;
            b = x;
        }
        int known = 0;
        for (int d = 0; d < deg[a]; d++)
            known |= nb[2 * a + d] == b;
        if (known)
            continue;
        if (deg[a] == 2 || deg[b] == 2) {
            chain = 0; /* not a chain (a ring, all-to-all by p2p): no stages */
            break;
        }
        nb[2 * a + deg[a]++] = b;
        nb[2 * b + deg[b]++] = a;
    }
    int stages = 0, ring = chain && ring_stages(m, nb, deg, pair, ninst, &stages);
    for (int i = 0; chain && !ring && i < n; i++) {
        if (deg[i] != 1 || m->ranks[i].stage >= 0)
            continue;
        /* an end: is its first p2p op a send? */
        const struct sp_rank *r = &m->ranks[i];
        int first_send = 0;
        for (size_t j = 0; j < r->nnodes; j++)
            if (r->nodes[j].ncalls && sp_op_is_p2p(r->calls[r->nodes[j].call].op)) {
                first_send = r->calls[r->nodes[j].call].op == SP_NCCL_SEND;
                break;
            }
        if (!first_send)
            continue;
        int prev = -1, cur = i, s = 0;
        while (cur >= 0 && m->ranks[cur].stage < 0) {
            m->ranks[cur].stage = s++;
            int next = -1;
            for (int d = 0; d < deg[cur]; d++)
                if (nb[2 * cur + d] != prev)
                    next = nb[2 * cur + d];
            prev = cur;
            cur = next;
        }
        if (s > stages)
            stages = s;
    }
    m->pipeline_stages = stages > 1 ? stages : 0;
    if (!m->pipeline_stages)
        for (int i = 0; i < n; i++)
            m->ranks[i].stage = -1;
    /* micro-batches: sends of a stage-0 rank in the first analyzed step;
     * the schedule: how many of them precede its first recv (the first
     * gradient back) */
    for (int i = 0; m->pipeline_stages && i < n; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (r->stage != 0)
            continue;
        if (ring) {
            ring_schedule(m, i, pair, ninst);
            break;
        }
        int before = -1;
        for (size_t j = 0; j < r->nnodes && r->nodes[j].step == 0; j++)
            for (uint32_t c = 0; c < r->nodes[j].ncalls; c++) {
                uint32_t op = r->calls[r->nodes[j].call + c].op;
                if (op == SP_NCCL_RECV && before < 0)
                    before = m->micro_batches;
                m->micro_batches += op == SP_NCCL_SEND;
            }
        m->pipeline_schedule = schedule_of(m->micro_batches, before, m->pipeline_stages);
        break;
    }
out:
    free(nb);
    free(deg);
    free(pair);
}
