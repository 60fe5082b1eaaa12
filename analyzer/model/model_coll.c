/*
 * model_coll.c - collectives matched across ranks by (communicator,
 * sequence number), never by position, and what each instance cost.
 *
 * Per instance: each rank's arrival is the GPU start of its NCCL kernel
 * (host enter when no GPU timing exists), on the common time axis.  The
 * last arrival is when the data can start to move, so a rank's wait is
 * (last arrival - its arrival) and the transfer is (end - last arrival).
 * Ends are not perfectly simultaneous, so transfer takes the minimum over
 * ranks of (end - last arrival): the rank that left first bounds how long
 * moving the data can have taken.  A rank's wait is stored on its call so
 * that classification can split the kernel at (start + wait).
 *
 * Sends and receives are matched per (sender, receiver, k-th message),
 * but a group (ncclGroupStart/End) runs all its calls as one kernel on
 * each rank, which ends when the last of them has: its calls carry the
 * kernel's start and end.  So a rank's synchronization point for such a
 * kernel is the latest last arrival over all its pairs (in an all-to-all,
 * the latest rank of all), its wait (that - its arrival) and the transfer
 * (end - that) are the kernel's, and every call of the kernel stores that
 * wait.  A pair's own last arrival would leave a third rank's lateness in
 * the transfer of every pair that waited for it.  In the arrival table a
 * p2p kernel counts when it both sends and receives (an exchange, where
 * either side can hold the other up); a lone send or receive is a
 * hand-off along a pipeline, where the receiver waiting for its sender is
 * the schedule, not a late rank.
 *
 * An instance with fewer participants than the communicator's size is
 * counted as incomplete and reported, not hidden.  Bus bandwidth uses the
 * nccl-tests factors (sp_model_busbw_factor); allgather's recorded bytes
 * are per rank, so its total size is bytes x nranks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model_int.h"
#include "units.h"

#define TIE_NS 20000.0               /* arrivals closer than 20 us are a tie: nobody was last */
#define END_SPREAD_MIN_NS 1e6        /* ends of one collective this far apart ... */
#define END_SPREAD_SHARE 0.5         /* ... and half its shortest kernel: not one instance */
#define PAUSE_MARGIN_NS 1000000000LL /* a control-file poll apart, and then some */

/* Per instance, from the first pass: the last arrival, the latest arrival
 * of the others (INT64_MIN when none), and how many arrived last. */
struct inst_arrivals {
    int64_t last, second;
    uint32_t nlast, n;
};
struct coll_pass {
    struct inst_arrivals *in;
    size_t cap;
    int failed; /* out of memory: p2p waits stay per pair, out of the arrival table */
    /* the summaries by (comm, op, bytes): open addressing, a summary's
     * index + 1 per slot (0: empty), nslot a power of two (0: none, the
     * summaries are searched in turn).  A job with a communicator per host
     * has hundreds of summaries, and the instances of one communicator
     * cycle through its sizes */
    uint32_t *slot;
    size_t nslot;
    /* the instance being measured, a member a call (NULL, none yet) */
    struct member *mb;
    size_t mb_cap;
};

/* What an instance's passes read of a member, found once: its call, and
 * its arrival, end and host on the common axis.  Each pass found them
 * again (a rank's record, its host's offset: a few cache lines a call). */
struct member {
    struct sp_coll_call *c;
    int64_t a, e;
    int host;
};

#define SUMMARY_SLOTS_MIN 64

static size_t summary_hash(uint64_t comm, uint32_t op, uint64_t bytes, size_t nslot)
{
    uint64_t h = comm * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 29) ^ bytes) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 31) ^ op) * 0x94D049BB133111EBull;
    return (size_t)(h ^ (h >> 32)) & (nslot - 1);
}

static void summary_slot_put(struct coll_pass *cp, const struct sp_coll_summary *s, size_t idx)
{
    size_t at = summary_hash(s->comm, s->op, s->bytes, cp->nslot);
    while (cp->slot[at])
        at = (at + 1) & (cp->nslot - 1);
    cp->slot[at] = (uint32_t)idx + 1;
}

/* Room in the table for one summary more (the table kept at most half
 * full); without memory the table is dropped and the summaries searched. */
static void summary_slots_fit(struct coll_pass *cp, const struct sp_model *m)
{
    if (2 * (m->ncolls + 1) <= cp->nslot || (!cp->slot && cp->nslot))
        return;
    size_t n = cp->nslot ? 2 * cp->nslot : SUMMARY_SLOTS_MIN;
    while (2 * (m->ncolls + 1) > n)
        n *= 2;
    free(cp->slot);
    cp->slot = n <= UINT32_MAX ? calloc(n, sizeof *cp->slot) : NULL;
    cp->nslot = cp->slot ? n : 1; /* 1 with no table: never tried again */
    for (size_t i = 0; cp->slot && i < m->ncolls; i++)
        summary_slot_put(cp, &m->colls[i], i);
}

/* p2p keys: the k-th message between a sender and a receiver on a
 * communicator.  The recorder numbers them (peer_seq); in traces older
 * than that field they are counted here, on each side in the order the
 * host issued them (NCCL matches a pair's sends and recvs in that order). */
struct p2p_ord {
    uint64_t comm;
    int32_t dir, peer;
    int64_t t;
    size_t c;
};

static int cmp_p2p(const void *a, const void *b)
{
    const struct p2p_ord *x = a, *y = b;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    if (x->dir != y->dir)
        return x->dir - y->dir;
    if (x->peer != y->peer)
        return x->peer - y->peer;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->c > y->c) - (x->c < y->c);
}

/* Numbers r's calls for matching; returns how many are p2p. */
static size_t assign_keys(struct sp_rank *r, uint32_t rank_index)
{
    struct p2p_ord *o = malloc((r->ncalls + 1) * sizeof *o);
    size_t n = 0, p2p = 0;
    for (size_t c = 0; c < r->ncalls; c++) {
        struct sp_coll_call *x = &r->calls[c];
        x->key = x->seq;
        p2p += sp_op_is_p2p(x->op);
        if (sp_op_is_p2p(x->op) && o)
            o[n++] = (struct p2p_ord){x->comm, (int32_t)x->op, x->peer, x->host_t, c};
    }
    if (o && n)
        qsort(o, n, sizeof *o, cmp_p2p);
    uint64_t k = 0;
    for (size_t i = 0; i < n; i++) {
        k = i && o[i].comm == o[i - 1].comm && o[i].dir == o[i - 1].dir && o[i].peer == o[i - 1].peer ? k + 1 : 1;
        struct sp_coll_call *x = &r->calls[o[i].c];
        uint32_t me = (uint32_t)x->crank, peer = (uint32_t)x->peer;
        uint64_t nth = x->peer_seq ? x->peer_seq : k;
        if (x->peer < 0) /* peer unknown (an imported SendRecv kernel): nothing to pair it with */
            x->key = sp_p2p_key(rank_index, SP_P2P_NO_PEER, nth);
        else
            x->key = x->op == SP_NCCL_SEND ? sp_p2p_key(me, peer, nth) : sp_p2p_key(peer, me, nth);
    }
    free(o);
    return p2p;
}

void sp_model_each_instance(struct sp_model *m, sp_instance_fn fn, void *arg)
{
    size_t total = 0;
    for (int i = 0; i < m->nranks; i++)
        total += m->ranks[i].ncalls;
    /* the calls by (comm, seq), each instance's by rank (the calls come
     * rank after rank, and the order keeps that) */
    struct sp_pair_key *k = malloc((total + 1) * sizeof *k);
    struct sp_coll_ref *refs = malloc((total + 1) * sizeof *refs);
    uint32_t *place = malloc((total + 1) * sizeof *place), *runs = NULL;
    size_t n = 0, nruns = 0;
    for (int i = 0; k && i < m->nranks; i++)
        for (size_t c = 0; c < m->ranks[i].ncalls; c++)
            k[n++] = (struct sp_pair_key){m->ranks[i].calls[c].comm, m->ranks[i].calls[c].key};
    /* the instances are the runs of equal keys, their lengths told by
     * sp_pair_runs (not found by comparing a copy of the keys placed in
     * order: 16 bytes a call written out of order, and read again) */
    int ok = k && refs && place && sp_pair_runs(k, n, place, &runs, &nruns) == 0;
    size_t x = 0;
    for (int i = 0; ok && i < m->nranks; i++)
        for (size_t c = 0; c < m->ranks[i].ncalls; c++, x++)
            refs[place[x]] = (struct sp_coll_ref){i, c};
    for (size_t r = 0, a = 0; ok && r < nruns; a += runs[r++])
        fn(m, refs + a, runs[r], arg);
    free(k);
    free(runs);
    free(refs);
    free(place);
}

static struct sp_coll_call *call_of(struct sp_model *m, const struct sp_coll_ref *x)
{
    return &m->ranks[x->r].calls[x->c];
}

/* Whether the instance falls in the steps in view, judged on its first rank. */
static int in_view(struct sp_model *m, const struct sp_coll_ref *x)
{
    const struct sp_rank *r = &m->ranks[x->r];
    if (!r->nsteps || m->step_hi <= m->step_lo)
        return 1;
    int64_t t = call_of(m, x)->start;
    int last = m->step_hi < r->nsteps ? m->step_hi : r->nsteps;
    return last > m->step_lo && t >= r->steps[m->step_lo].start && t < r->steps[last - 1].end;
}

/* The summary of c's (comm, op, bytes), added when none: found in cp's
 * table (cp NULL or without one: searched for). */
static struct sp_coll_summary *summary_for(struct sp_model *m, const struct sp_coll_call *c, struct coll_pass *cp)
{
    if (cp)
        summary_slots_fit(cp, m);
    if (cp && cp->slot) {
        for (size_t at = summary_hash(c->comm, c->op, c->bytes, cp->nslot); cp->slot[at];
             at = (at + 1) & (cp->nslot - 1)) {
            struct sp_coll_summary *s = &m->colls[cp->slot[at] - 1];
            if (s->comm == c->comm && s->op == c->op && s->bytes == c->bytes)
                return s;
        }
    } else {
        for (size_t i = 0; i < m->ncolls; i++) {
            struct sp_coll_summary *s = &m->colls[i];
            if (s->comm == c->comm && s->op == c->op && s->bytes == c->bytes)
                return s;
        }
    }
    void *p = realloc(m->colls, (m->ncolls + 1) * sizeof *m->colls);
    if (!p)
        return NULL;
    m->colls = p;
    struct sp_coll_summary *s = &m->colls[m->ncolls++];
    memset(s, 0, sizeof *s);
    s->comm = c->comm;
    s->op = c->op;
    s->bytes = c->bytes;
    s->nranks = c->nranks;
    if (cp && cp->slot)
        summary_slot_put(cp, s, m->ncolls - 1);
    return s;
}

static void add_to_summary(struct sp_model *m, const struct sp_coll_call *c, double transfer,
                           double mean_wait, int complete, int spans, struct coll_pass *cp)
{
    struct sp_coll_summary *s = summary_for(m, c, cp);
    if (!s)
        return;
    s->calls++;
    s->transfer_ms += transfer / NS_PER_MS;
    s->wait_ms += mean_wait / NS_PER_MS;
    s->spans_hosts |= spans;
    if (!complete)
        s->missing++;
}

/* Whether an instance's ends (spread: the latest less the earliest, on
 * the common axis) are too far apart for one collective whose shortest
 * kernel took `shortest'. */
static int ends_far_apart(const struct sp_model *m, int64_t spread_ns, int64_t shortest)
{
    double spread = END_SPREAD_SHARE * (double)shortest;
    double bar = END_SPREAD_MIN_NS > spread ? END_SPREAD_MIN_NS : spread;
    if (bar < 20e3 * m->skew_us) /* 20x the residual clock skew, in ns */
        bar = 20e3 * m->skew_us;
    return (double)spread_ns > bar;
}

static void keep_arrivals(struct coll_pass *cp, uint64_t idx, int64_t last, int64_t second, size_t nlast,
                          size_t n)
{
    if (!cp->failed && idx < cp->cap)
        cp->in[idx] = (struct inst_arrivals){last, second, (uint32_t)nlast, (uint32_t)n};
}

static double tie_ns(const struct sp_model *m)
{
    return TIE_NS > 2e3 * m->skew_us ? TIE_NS : 2e3 * m->skew_us;
}

/* The fields of a call an instance's passes read and write (op to
 * matched: bytes 32-97 of the 104), asked for ahead: an instance's calls
 * lie on as many ranks, a cache miss or two each, and the first pass
 * would wait for each in turn. */
#define CALL_AHEAD 8
static void want_call(struct sp_model *m, const struct sp_coll_ref *x)
{
    const struct sp_coll_call *c = call_of(m, x);
    __builtin_prefetch(&c->op, 1);
    __builtin_prefetch(&c->matched, 1);
}

/* Room in cp for the members of an instance of n; -1: no memory. */
static int members_fit(struct coll_pass *cp, size_t n)
{
    if (n <= cp->mb_cap) /* also n = 0 with nothing allocated yet */
        return 0;
    struct member *p = sp_grow_to(cp->mb, n, &cp->mb_cap, sizeof *p, 64);
    if (!p)
        return -1;
    cp->mb = p;
    return 0;
}

static void measure_instance(struct sp_model *m, const struct sp_coll_ref *refs, size_t n, void *arg)
{
    struct coll_pass *cp = arg;
    if (members_fit(cp, n) < 0) /* as without memory for the matching: not measured */
        return;
    struct member *mb = cp->mb;
    for (size_t i = 0; i < n && i < CALL_AHEAD; i++)
        want_call(m, &refs[i]);
    /* the ranks and the hosts' offsets in locals: the stores below (a
     * member's call pointer, a call's matched byte) could otherwise alias
     * m's fields, which the compiler would then load again per member */
    struct sp_rank *ranks = m->ranks;
    const int64_t *off = m->host_offset;
    int64_t last = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (i + CALL_AHEAD < n)
            want_call(m, &refs[i + CALL_AHEAD]);
        const struct sp_rank *r = &ranks[refs[i].r];
        struct sp_coll_call *c = &r->calls[refs[i].c];
        int64_t shift = off ? off[r->host] : 0; /* sp_model_global */
        int64_t a = c->start + shift;
        mb[i] = (struct member){c, a, c->end + shift, r->host};
        if (!i || a > last)
            last = a;
    }
    struct sp_coll_call *c0 = mb[0].c;
    int p2p = sp_op_is_p2p(c0->op);
    int complete = p2p ? n >= 2 : n >= c0->nranks;
    /* a p2p call's wait, the transfer and the arrival table wait for its
     * kernel's other pairs (p2p_sync, summarize_p2p), and a p2p call is
     * one of its kernel's pairs: the kernel, not the pair, is the
     * synchronization point (sync_kernel).  A collective in view counts
     * on each of its ranks in the pass below. */
    int counted = !p2p && in_view(m, &refs[0]);
    int32_t inst = (int32_t)m->coll_instances;
    int64_t transfer = -1, lo = INT64_MAX, hi = INT64_MIN, shortest = INT64_MAX;
    int host0 = mb[0].host, spans = 0;
    double wait_sum = 0;
    size_t nlast = 0, late_idx = 0;
    int64_t second = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        struct sp_coll_call *c = mb[i].c;
        int64_t a = mb[i].a;
        int64_t end = mb[i].e;
        int64_t tr = end - last > 0 ? end - last : 0;
        if (transfer < 0 || tr < transfer)
            transfer = tr;
        int64_t w = last - a, dur = c->end - c->start;
        int64_t wait = w < dur ? w : dur;
        c->wait = wait < 0 ? 0 : wait;
        c->matched = (uint8_t)complete;
        c->inst = inst;
        wait_sum += (double)(last - a);
        spans |= mb[i].host != host0;
        if (a == last) {
            nlast++;
            late_idx = i;
        } else if (a > second) {
            second = a;
        }
        /* for ends_far_apart */
        lo = end < lo ? end : lo;
        hi = end > hi ? end : hi;
        shortest = dur < shortest ? dur : shortest;
        if (counted) {
            struct sp_rank *r = &ranks[refs[i].r];
            r->coll_present++;
            r->coll_wait_ns += (double)(last - a);
        }
    }
    /* A blocking collective's kernels end together on every rank: ends far
     * apart mean the calls were paired wrongly (imported collectives
     * without sequence numbers, numbered by their order on a stream, on a
     * sampled trace).  Their wait is not believed. */
    if (!p2p && n >= 2 && ends_far_apart(m, hi - lo, shortest)) {
        for (size_t i = 0; i < n; i++)
            mb[i].c->wait = 0;
        wait_sum = 0;
        nlast = 0;
        m->coll_doubtful++;
    }
    keep_arrivals(cp, m->coll_instances, last, second, nlast, n);
    m->coll_instances++;
    if (!complete)
        m->coll_instances_incomplete++;
    if (p2p && !cp->failed)
        return;
    if (!p2p && !counted) /* not in view */
        return;
    if (p2p && !in_view(m, &refs[0]))
        return;
    /* a rank that stopped recording a moment before the others (the
     * control file is read by each process in turn) misses the last calls
     * before a pause: not a rank that never arrived */
    if (!complete && sp_model_in_pause(m, &m->ranks[refs[0].r], c0->start - PAUSE_MARGIN_NS, c0->end + PAUSE_MARGIN_NS))
        complete = 1;
    add_to_summary(m, c0, (double)transfer, wait_sum / (double)n, complete, spans, cp);
    if (p2p)
        return;
    double tol = tie_ns(m);
    if (n > 1 && nlast == 1 && (second == INT64_MIN || (double)(last - second) > tol))
        m->ranks[refs[late_idx].r].coll_last++;
}

/* The calls of one kernel: from calls[c], those with its start and end
 * (a group's calls share both; as model_classify.c builds its nodes). */
static size_t kernel_end(const struct sp_rank *r, size_t c)
{
    const struct sp_coll_call *x = &r->calls[c];
    size_t j = c + 1;
    if (x->timing == SP_TIMING_HOST)
        return j;
    while (j < r->ncalls && r->calls[j].start == x->start && r->calls[j].end == x->end &&
           r->calls[j].timing != SP_TIMING_HOST)
        j++;
    return j;
}

/* One kernel's p2p calls [c, e) on rank i: its synchronization point is
 * the latest last arrival over its pairs; every p2p call of it waits
 * until then.  An exchange (sends and receives) enters the arrival table. */
static void sync_kernel(struct sp_model *m, const struct coll_pass *cp, int i, size_t c, size_t e)
{
    struct sp_rank *r = &m->ranks[i];
    int64_t a = sp_model_global(m, r, r->calls[c].start), sync = a;
    int sends = 0, recvs = 0, last = 1, complete = 0;
    double tol = tie_ns(m);
    for (size_t j = c; j < e; j++) {
        const struct sp_coll_call *x = &r->calls[j];
        if (!sp_op_is_p2p(x->op) || x->inst < 0 || (uint64_t)x->inst >= m->coll_instances)
            continue;
        const struct inst_arrivals *in = &cp->in[x->inst];
        sync = in->last > sync ? in->last : sync;
        sends += x->op == SP_NCCL_SEND;
        recvs += x->op == SP_NCCL_RECV;
        complete |= in->n >= 2;
        /* last here: alone, and clear of everyone else in every pair */
        if (in->n < 2 || in->last != a || in->nlast != 1 ||
            (in->second != INT64_MIN && (double)(a - in->second) <= tol))
            last = 0;
    }
    for (size_t j = c; j < e; j++) {
        struct sp_coll_call *x = &r->calls[j];
        if (!sp_op_is_p2p(x->op) || x->inst < 0)
            continue;
        int64_t w = sync - a, dur = x->end - x->start;
        x->wait = w < 0 ? 0 : (w < dur ? w : dur);
    }
    struct sp_coll_ref ref = {i, c};
    if (!sends || !recvs || !complete || !in_view(m, &ref))
        return;
    r->coll_present++;
    r->coll_wait_ns += (double)(sync - a);
    r->coll_last += (uint64_t)last;
}

static void p2p_sync(struct sp_model *m, const struct coll_pass *cp)
{
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        for (size_t c = 0; c < r->ncalls;) {
            size_t e = kernel_end(r, c);
            int any = 0;
            for (size_t j = c; j < e; j++)
                any |= sp_op_is_p2p(r->calls[j].op);
            if (any)
                sync_kernel(m, cp, i, c, e);
            c = e;
        }
    }
}

/* A p2p instance's cost once each side's wait is its kernel's: the
 * transfer is the least, over its sides, of (end - the kernel's
 * synchronization point). */
static void summarize_p2p(struct sp_model *m, const struct sp_coll_ref *refs, size_t n, void *arg)
{
    struct coll_pass *cp = arg;
    const struct sp_coll_call *c0 = call_of(m, &refs[0]);
    if (!sp_op_is_p2p(c0->op) || !in_view(m, &refs[0]))
        return;
    int64_t transfer = -1;
    double wait_sum = 0;
    int host0 = m->ranks[refs[0].r].host, spans = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sp_coll_call *c = call_of(m, &refs[i]);
        int64_t tr = c->end - c->start - c->wait;
        tr = tr > 0 ? tr : 0;
        if (transfer < 0 || tr < transfer)
            transfer = tr;
        wait_sum += (double)c->wait;
        spans |= m->ranks[refs[i].r].host != host0;
    }
    int complete = n >= 2;
    if (!complete && sp_model_in_pause(m, &m->ranks[refs[0].r], c0->start - PAUSE_MARGIN_NS, c0->end + PAUSE_MARGIN_NS))
        complete = 1;
    add_to_summary(m, c0, (double)transfer, wait_sum / (double)n, complete, spans, cp);
}

static void finish_summaries(struct sp_model *m)
{
    for (size_t i = 0; i < m->ncolls; i++) {
        struct sp_coll_summary *s = &m->colls[i];
        if (!s->calls)
            continue;
        s->transfer_ms /= (double)s->calls;
        s->wait_ms /= (double)s->calls;
        double bytes = (double)s->bytes * (s->op == SP_NCCL_ALLGATHER ? s->nranks : 1);
        double t_ns = s->transfer_ms * NS_PER_MS;
        s->busbw_gbps = t_ns > 0 ? bytes / t_ns * sp_model_busbw_factor(s->op, s->nranks) : 0;
        if (s->missing)
            sp_model_warn(m, "communicator %016llx: %llu of %llu %s calls were not reached by every "
                             "rank (a rank is missing or its trace ends early)",
                          (unsigned long long)s->comm, (unsigned long long)s->missing,
                          (unsigned long long)s->calls,
                          s->op == SP_NCCL_ALLREDUCE ? "allreduce"
                                                     : (sp_op_is_p2p(s->op) ? "send/recv" : "collective"));
    }
}

static int cmp_cost(const void *a, const void *b)
{
    const struct sp_coll_summary *x = a, *y = b;
    double cx = x->calls * (x->transfer_ms + x->wait_ms), cy = y->calls * (y->transfer_ms + y->wait_ms);
    return (cx < cy) - (cx > cy);
}

void sp_model_match_collectives(struct sp_model *m)
{
    size_t p2p = 0;
    for (int i = 0; i < m->nranks; i++)
        p2p += assign_keys(&m->ranks[i], (uint32_t)i);
    struct coll_pass cp = {0};
    for (int i = 0; i < m->nranks; i++) /* at most one instance per call */
        cp.cap += m->ranks[i].ncalls;
    cp.in = malloc((cp.cap + 1) * sizeof *cp.in);
    cp.failed = !cp.in;
    sp_model_each_instance(m, measure_instance, &cp);
    /* a p2p call's wait and its instance's summary wait for the first
     * pass; without p2p calls neither pass has anything to do (a pass over
     * every call, and a second grouping of them into instances) */
    if (!cp.failed && p2p) {
        p2p_sync(m, &cp);
        sp_model_each_instance(m, summarize_p2p, &cp);
    }
    free(cp.in);
    free(cp.slot);
    free(cp.mb);
    if (m->coll_doubtful)
        sp_model_warn(m, "%llu collective instance(s) end far apart on their ranks (a blocking collective ends "
                         "together everywhere): the calls were likely paired wrongly (collectives without "
                         "sequence numbers, numbered by their order on a stream, in a sampled trace), so no "
                         "wait or late rank is drawn from them",
                      (unsigned long long)m->coll_doubtful);
    finish_summaries(m);
    if (m->ncolls)
        qsort(m->colls, m->ncolls, sizeof *m->colls, cmp_cost);
}

/* ---- bus bandwidth ---- */

/* nccl-tests' bus bandwidth factors: what each rank's link carries. */
double sp_model_busbw_factor(uint32_t op, uint32_t nranks)
{
    double n = nranks ? nranks : 1;
    switch (op) {
    case SP_NCCL_ALLREDUCE:
        return 2 * (n - 1) / n;
    case SP_NCCL_ALLGATHER:
    case SP_NCCL_REDUCESCATTER:
    case SP_NCCL_ALLTOALL:
        return (n - 1) / n;
    default:
        return 1;
    }
}

double sp_model_busbw(const struct sp_model *m, int spans, double *transfer_ms)
{
    double bw = 0, w = 0, tr = 0;
    for (size_t i = 0; i < m->ncolls; i++) {
        const struct sp_coll_summary *c = &m->colls[i];
        if (spans >= 0 && c->spans_hosts != spans)
            continue;
        double t = c->calls * c->transfer_ms;
        bw += c->busbw_gbps * t;
        w += t;
        tr += t;
    }
    if (transfer_ms)
        *transfer_ms = tr;
    return w > 0 ? bw / w : 0;
}
