/*
 * model_findings.c - stragglers and the seed's triage table as findings.
 *
 * Every finding is a measured share of step time compared against a named
 * threshold (docs/analysis.md explains each choice), carries its evidence
 * as a sentence with the figures, the ranks and steps concerned, and the
 * first thing to try.  Findings are sorted by cost, their share of step
 * time, so the first one printed is the one worth fixing first.
 *
 * The straggler is the rank that arrives last most often (ties excluded in
 * model_coll.c); its cause is the component of its own step (compute,
 * memcpy, input, host, other) whose excess over the other ranks' median
 * explains at least 80% of its total excess, else "mixed".
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* idle_input share: TensorFlow's input-pipeline analyzer calls >= 20%
 * "highly input bound" and >= 5% "moderately". */
#define INPUT_LOW 0.02
#define INPUT_MODERATE 0.05
#define INPUT_HIGH 0.20
/* exposed transfer share */
#define COMM_LOW 0.05
#define COMM_MODERATE 0.10
#define COMM_HIGH 0.30
/* compute / collective time per step */
#define SMALL_MODERATE 1.0
#define SMALL_HIGH 0.5
#define SMALL_MIN_SHARE 0.05
/* straggler: last at this share of collectives; others' wait share */
#define STRAGGLER_LAST 0.5
#define STRAGGLER_LOW 0.02
#define STRAGGLER_MODERATE 0.05
#define STRAGGLER_HIGH 0.15
#define CAUSE_EXPLAINS 0.8
/* cross-host bus bandwidth / intra-host bus bandwidth */
#define CROSS_MODERATE 0.5
#define CROSS_HIGH 0.25
#define NS_PER_MS 1e6
/* a step "dips" when at least 1% of it is input wait before its first kernel */
#define INPUT_DIP 0.01
/* host CPU busy fraction called saturated */
#define CPU_SATURATED 0.9

static const char *const first_try[] = {
    "more loader workers, faster storage, caching; move preprocessing off the critical path",
    "check topology; overlap communication with computation; consider gradient accumulation",
    "raise the global batch size (adjust the learning rate, validate the loss)",
    "inspect data distribution across ranks; test that device alone",
    "verify network setup and bandwidth for the instance type",
};

static double per_step_ms(const struct sp_model *m, const struct sp_rank *r, int cat)
{
    double b[SP_CAT_N];
    sp_model_rank_breakdown(m, r, b);
    return b[cat] * sp_model_rank_step_ms(m, r);
}

static const char *straggler_cause(const struct sp_model *m, int who)
{
    static const int comps[] = {SP_CAT_COMPUTE, SP_CAT_MEMCPY, SP_CAT_IDLE_INPUT, SP_CAT_IDLE_HOST,
                                SP_CAT_IDLE_OTHER};
    static const char *const names[] = {"compute", "memcpy", "input", "host", "other"};
    enum { NCOMP = sizeof comps / sizeof comps[0] };
    double gap[NCOMP], total = 0;
    double *others = malloc(sizeof *others * (size_t)m->nranks + 1);
    if (!others)
        return "mixed";
    for (int c = 0; c < NCOMP; c++) {
        size_t n = 0;
        for (int i = 0; i < m->nranks; i++)
            if (i != who && m->ranks[i].cat)
                others[n++] = per_step_ms(m, &m->ranks[i], comps[c]);
        gap[c] = per_step_ms(m, &m->ranks[who], comps[c]) - sp_median(others, n);
        if (gap[c] > 0)
            total += gap[c];
    }
    free(others);
    int best = 0;
    for (int c = 1; c < NCOMP; c++)
        if (gap[c] > gap[best])
            best = c;
    return total > 0 && gap[best] >= CAUSE_EXPLAINS * total ? names[best] : "mixed";
}

static int cmp_straggler(const void *a, const void *b)
{
    const struct sp_straggler *x = a, *y = b;
    if (x->last_fraction != y->last_fraction)
        return x->last_fraction < y->last_fraction ? 1 : -1;
    return (x->mean_wait_ms > y->mean_wait_ms) - (x->mean_wait_ms < y->mean_wait_ms);
}

void sp_model_stragglers(struct sp_model *m)
{
    if (m->nranks < 2)
        return;
    struct sp_straggler *s = calloc((size_t)m->nranks, sizeof *s);
    if (!s)
        return;
    int n = 0;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (!r->coll_present)
            continue;
        s[n].rank = i; /* index for now */
        s[n].last_fraction = (double)r->coll_last / (double)r->coll_present;
        s[n].mean_wait_ms = r->coll_wait_ns / (double)r->coll_present / NS_PER_MS;
        n++;
    }
    qsort(s, (size_t)n, sizeof *s, cmp_straggler);
    int keep = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].last_fraction < STRAGGLER_LAST)
            continue;
        s[i].cause = straggler_cause(m, s[i].rank);
        s[i].rank = m->ranks[s[i].rank].rank;
        s[keep++] = s[i];
    }
    m->stragglers = s;
    m->nstragglers = keep;
}

/* Every rank with a breakdown: a finding that concerns all ranks lists
 * them all. */
static void set_all_ranks(const struct sp_model *m, struct sp_finding *f)
{
    f->nranks = 0;
    for (int i = 0; i < m->nranks; i++)
        if (m->ranks[i].cat)
            f->ranks[f->nranks++] = m->ranks[i].rank;
}

static struct sp_finding *add(struct sp_model *m, const char *cause, int sev, double cost, int try_idx)
{
    if (sev == SP_SEV_NONE || m->nfindings >= (int)(sizeof m->findings / sizeof m->findings[0]))
        return NULL;
    int *ranks = malloc(((size_t)m->nranks + 1) * sizeof *ranks);
    if (!ranks)
        return NULL;
    struct sp_finding *f = &m->findings[m->nfindings++];
    memset(f, 0, sizeof *f);
    f->cause = cause;
    f->severity = sev;
    f->cost = cost;
    f->first_try = first_try[try_idx];
    f->ranks = ranks;
    set_all_ranks(m, f);
    f->step_first = m->step_lo;
    f->step_last = m->step_hi - 1;
    return f;
}

static int grade(double v, double low, double moderate, double high)
{
    return v >= high ? SP_SEV_HIGH : v >= moderate ? SP_SEV_MODERATE : v >= low ? SP_SEV_LOW : SP_SEV_NONE;
}

/* The ranks whose share of category `cat` reaches `min`; all ranks when
 * none does (the finding is then about the whole job's average). */
static void ranks_over(const struct sp_model *m, int cat, double min, struct sp_finding *f)
{
    f->nranks = 0;
    for (int i = 0; i < m->nranks; i++) {
        if (!m->ranks[i].cat)
            continue;
        double b[SP_CAT_N];
        sp_model_rank_breakdown(m, &m->ranks[i], b);
        if (b[cat] >= min)
            f->ranks[f->nranks++] = m->ranks[i].rank;
    }
    if (!f->nranks)
        set_all_ranks(m, f);
}

/* Steps whose input wait comes at their start (before the first compute):
 * the seed's "periodic dips".  Counted over the finding's ranks. */
static void input_at_start(const struct sp_model *m, const struct sp_finding *f, int *dips, int *steps,
                           double *head_share)
{
    double head = 0, input = 0;
    *dips = *steps = 0;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        int concerned = 0;
        for (int x = 0; x < f->nranks; x++)
            concerned |= f->ranks[x] == r->rank;
        if (!concerned || !r->cat || !r->input_head)
            continue;
        for (int k = m->step_lo; k < m->step_hi && k < r->nsteps; k++) {
            double len = (double)(r->steps[k].end - r->steps[k].start);
            (*steps)++;
            *dips += r->input_head[k] >= INPUT_DIP * len;
            head += r->input_head[k];
            input += r->cat[k][SP_CAT_IDLE_INPUT];
        }
    }
    *head_share = input > 0 ? head / input : 0;
}

/* Appends to the evidence; never overflows. */
static void say(struct sp_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct sp_finding *f, const char *fmt, ...)
{
    size_t used = strlen(f->evidence);
    if (used + 1 >= sizeof f->evidence)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->evidence + used, sizeof f->evidence - used, fmt, ap);
    va_end(ap);
}

/* Loader workers per rank, their CPU use, the host's CPU load and the read
 * throughput: what tells a slow loader from slow storage. */
static void input_resources(const struct sp_model *m, struct sp_finding *f)
{
    int helpers = 0, lo = -1, hi = 0, sampled = 0, ncores = 0, busy_n = 0;
    double cpu = 0, busy = 0, read_ns = 0, span_ns = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        helpers += r->nhelpers;
        lo = lo < 0 || r->nhelpers < lo ? r->nhelpers : lo;
        hi = r->nhelpers > hi ? r->nhelpers : hi;
        cpu += r->helper_cpu;
        sampled += r->helper_sampled;
        if (r->machine_busy >= 0) {
            busy += r->machine_busy;
            busy_n++;
            ncores = r->ncores;
        }
        bytes += r->read_bytes;
        read_ns += (double)r->read_ns;
        span_ns += (double)(r->last_t - r->first_t);
    }
    if (!helpers)
        say(f, "; no loader worker processes: input is prepared in the training process");
    else if (lo == hi)
        say(f, "; %d loader worker process%s per rank", lo, lo == 1 ? "" : "es");
    else
        say(f, "; %d to %d loader worker processes per rank", lo, hi);
    if (m->flags_any & SP_FLAG_NO_CPU)
        say(f, "; CPU use unknown (source records no CPU samples)");
    else {
        if (sampled)
            say(f, "; each worker keeps %.0f%% of a CPU core busy", 100 * cpu / sampled);
        if (busy_n)
            say(f, "; the host's %d CPU cores are %.0f%% busy%s", ncores, 100 * busy / busy_n,
                busy / busy_n >= CPU_SATURATED ? " (saturated)" : "");
    }
    if (m->flags_any & SP_FLAG_NO_FILE_IO)
        say(f, "; file reads unknown (source records no file I/O)");
    else if (bytes && span_ns > 0)
        say(f, "; file reads: %.1f MB/s per rank over the run, %.1f MB/s while reading",
            (double)bytes / 1e6 / (span_ns / 1e9), read_ns > 0 ? (double)bytes / 1e6 / (read_ns / 1e9) : 0);
    else
        say(f, "; no file reads recorded");
}

static void input_finding(struct sp_model *m)
{
    double share = m->breakdown[SP_CAT_IDLE_INPUT];
    struct sp_finding *f = add(m, "input_pipeline", grade(share, INPUT_LOW, INPUT_MODERATE, INPUT_HIGH),
                               share, 0);
    if (!f)
        return;
    ranks_over(m, SP_CAT_IDLE_INPUT, INPUT_MODERATE, f);
    int dips, steps;
    double head;
    input_at_start(m, f, &dips, &steps, &head);
    say(f, "GPUs sat idle waiting for input %.1f%% of step time (%.2f ms of a %.2f ms step)", 100 * share,
        share * m->step_mean_ms, m->step_mean_ms);
    if (steps)
        say(f, "; %s: %d of %d steps begin with a wait for input, %.0f%% of the input wait comes before a "
               "step's first kernel", 2 * dips >= steps ? "periodic dips at step start" : "not at step start",
            dips, steps, 100 * head);
    input_resources(m, f);
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

static void communication_finding(struct sp_model *m)
{
    double share = m->breakdown[SP_CAT_COLL_TRANSFER];
    struct sp_finding *f = add(m, "communication", grade(share, COMM_LOW, COMM_MODERATE, COMM_HIGH), share, 1);
    if (!f)
        return;
    double coll = share + m->breakdown[SP_CAT_COLL_WAIT] + m->breakdown[SP_CAT_OVERLAP];
    snprintf(f->evidence, sizeof f->evidence,
             "collective transfer not hidden by compute takes %.1f%% of step time; achieved bus "
             "bandwidth %.1f GB/s; %.0f%% of collective time overlapped with compute",
             100 * share, sp_model_busbw(m, -1, NULL), coll > 0 ? 100 * m->breakdown[SP_CAT_OVERLAP] / coll : 0);
}

/* Compute per step against the collective time a larger batch would hide:
 * the transfer (exposed or overlapped) and the wait that is not a
 * straggler's doing.  Waiting for a late rank is the straggler finding;
 * counting it here would call an imbalanced run "small batch". */
static void small_batch_finding(struct sp_model *m)
{
    double comp = m->breakdown[SP_CAT_COMPUTE] + m->breakdown[SP_CAT_OVERLAP];
    double wait = m->nstragglers ? 0 : m->breakdown[SP_CAT_COLL_WAIT];
    double coll = m->breakdown[SP_CAT_COLL_TRANSFER] + wait + m->breakdown[SP_CAT_OVERLAP];
    if (coll < SMALL_MIN_SHARE || m->nranks < 2)
        return;
    double ratio = comp / coll;
    int sev = ratio < SMALL_HIGH ? SP_SEV_HIGH : ratio < SMALL_MODERATE ? SP_SEV_MODERATE : SP_SEV_NONE;
    struct sp_finding *f = add(m, "small_batch", sev, m->breakdown[SP_CAT_COLL_TRANSFER] + wait, 2);
    if (!f)
        return;
    snprintf(f->evidence, sizeof f->evidence,
             "compute per step (%.2f ms) is %.2fx the collective time per step (%.2f ms of transfer%s): each "
             "GPU's share of the batch is too small to hide communication",
             comp * m->step_mean_ms, ratio, coll * m->step_mean_ms,
             m->nstragglers ? "; waiting for the straggler is left out" : " and wait");
}

static void straggler_finding(struct sp_model *m)
{
    if (!m->nstragglers)
        return;
    const struct sp_straggler *s = &m->stragglers[0];
    double wait = 0, t = 0;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (r->rank == s->rank || !r->cat)
            continue;
        double b[SP_CAT_N];
        sp_model_rank_breakdown(m, r, b);
        wait += b[SP_CAT_COLL_WAIT];
        t += 1;
    }
    double share = t > 0 ? wait / t : 0;
    struct sp_finding *f = add(m, "straggler", grade(share, STRAGGLER_LOW, STRAGGLER_MODERATE, STRAGGLER_HIGH),
                               share, 3);
    if (!f)
        return;
    f->ranks[0] = s->rank;
    f->nranks = 1;
    snprintf(f->evidence, sizeof f->evidence,
             "rank %d arrived last at %.0f%% of collectives; the other ranks wait for it %.1f%% of "
             "step time (%.2f ms per step); its excess is explained by %s",
             s->rank, 100 * s->last_fraction, 100 * share, share * m->step_mean_ms, s->cause);
}

/* Within a host NVLink carries well over 100 GB/s of bus bandwidth on every
 * generation since V100; a network adapter carries at most its line rate
 * (a 400 Gb/s NIC: 50 GB/s).  A communicator spanning hosts that stays
 * below this is paced by the network (docs/analysis.md). */
#define CROSS_ABS_GBPS 50.0

static void cross_node_relative(struct sp_model *m, double inter, double inter_t, double intra, double intra_t)
{
    double ratio = inter / intra;
    int sev = ratio < CROSS_HIGH ? SP_SEV_HIGH : ratio < CROSS_MODERATE ? SP_SEV_MODERATE : SP_SEV_NONE;
    double cost = m->breakdown[SP_CAT_COLL_TRANSFER] * inter_t / (inter_t + intra_t);
    struct sp_finding *f = add(m, "cross_node", sev, cost, 4);
    if (!f)
        return;
    snprintf(f->evidence, sizeof f->evidence,
             "collectives spanning hosts reach %.1f GB/s bus bandwidth, %.0f%% of the %.1f GB/s "
             "within a host",
             inter, 100 * ratio, intra);
}

/* No collective within a host to compare with: judge the spanning ones
 * against what a host's own links would give, when their exposed transfer
 * matters. */
static void cross_node_absolute(struct sp_model *m, double inter)
{
    double exposed = m->breakdown[SP_CAT_COLL_TRANSFER];
    if (inter <= 0 || inter >= CROSS_ABS_GBPS || exposed < COMM_LOW)
        return;
    struct sp_finding *f = add(m, "cross_node", SP_SEV_MODERATE, exposed, 4);
    if (!f)
        return;
    snprintf(f->evidence, sizeof f->evidence,
             "every collective spans %d hosts and reaches %.1f GB/s bus bandwidth, below the %.0f GB/s "
             "that links within a host give (NVLink), while exposed transfer takes %.1f%% of step time",
             m->nhosts, inter, CROSS_ABS_GBPS, 100 * exposed);
}

static void cross_node_finding(struct sp_model *m)
{
    double inter_t, intra_t;
    double inter = sp_model_busbw(m, 1, &inter_t), intra = sp_model_busbw(m, 0, &intra_t);
    if (inter_t <= 0)
        return;
    if (intra_t > 0 && intra > 0)
        cross_node_relative(m, inter, inter_t, intra, intra_t);
    else
        cross_node_absolute(m, inter);
}

static int cmp_finding(const void *a, const void *b)
{
    const struct sp_finding *x = a, *y = b;
    return (x->cost < y->cost) - (x->cost > y->cost);
}

void sp_model_findings(struct sp_model *m)
{
    input_finding(m);
    communication_finding(m);
    small_batch_finding(m);
    straggler_finding(m);
    cross_node_finding(m);
    qsort(m->findings, (size_t)m->nfindings, sizeof m->findings[0], cmp_finding);
}
