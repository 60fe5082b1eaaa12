/*
 * model_findings.c - the seed's triage table as findings, each priced by
 * the what-if replay (model_replay.c): the share of the mean step time
 * that fixing the cause alone would save.
 *
 * One table (causes[] below) gives every cause its name, its first thing
 * to try and its documentation anchor, for report and compare alike.
 * Severity follows the gain (sp_severity_of_gain); findings are ordered by
 * gain, and `healthy` means no finding gains 5% or more.  Where two
 * counterfactuals fix the same time, one finding names it: a fixed
 * straggler when fixing that rank alone recovers most of what balancing
 * every rank would (else the work is imbalanced, with no fixed culprit),
 * and a straggler whose excess is its own input only when fixing it alone
 * recovers most of what a faster input pipeline would.
 *
 * The arrival table (sp_model_stragglers: who arrives last at collectives
 * and why) stays as evidence; who is named straggler is the replay's
 * choice: the rank, or small communicator, whose fixing gains most.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"

#define STRAGGLER_LAST 0.5  /* the arrival table lists ranks last at >= half */
#define CAUSE_EXPLAINS 0.8  /* a component explaining this much of an excess names it */
#define REPORT_MIN 0.02     /* a finding is listed from this gain */
#define CULPRIT_SHARE 0.6   /* one rank recovers this much of all: it is the culprit */
#define UNEXPLAINED_MIN 0.10 /* idle nothing explains, said as a finding from here */
#define CROSS_RATIO 0.5     /* spanning bus bandwidth below half the reference */
#define NS_PER_MS 1e6
/* a step "dips" when at least 1% of it is input wait before its first kernel */
#define INPUT_DIP 0.01
/* host CPU busy fraction called saturated */
#define CPU_SATURATED 0.9
/* reads below this per rank are rendezvous and config files, not input */
#define READS_SHOWN_BYTES (64 << 10)

static const struct sp_cause_info causes[SP_CAUSE_N] = {
    [SP_CAUSE_STRAGGLER] = {"straggler", "inspect data distribution across ranks; test that device alone", "straggler"},
    [SP_CAUSE_IMBALANCE] = {"imbalance",
                            "balance work per rank: bucket samples by sequence length, pack them, or shard by cost",
                            "imbalance"},
    [SP_CAUSE_PIPELINE_STAGE] = {"pipeline_stage", "repartition layers across pipeline stages so each does the same work",
                                 "pipeline_stage"},
    [SP_CAUSE_PIPELINE_BUBBLE] = {"pipeline_bubble",
                                  "more micro-batches per step, or an interleaved (virtual-stage) schedule",
                                  "pipeline_bubble"},
    [SP_CAUSE_INPUT] = {"input_pipeline",
                        "more loader workers, faster storage, caching; move preprocessing off the critical path",
                        "input_pipeline"},
    [SP_CAUSE_HOST] = {"host_overhead",
                       "launch less often: CUDA graphs, larger or fused kernels (torch.compile), fewer synchronizations",
                       "host_overhead"},
    [SP_CAUSE_COMMUNICATION] = {"communication",
                                "check topology; overlap communication with computation; consider gradient accumulation",
                                "communication"},
    [SP_CAUSE_CROSS_NODE] = {"cross_node", "verify network setup and bandwidth for the instance type", "cross_node"},
    [SP_CAUSE_SMALL_BATCH] = {"small_batch", "raise the global batch size (adjust the learning rate, validate the loss)",
                              "small_batch"},
    [SP_CAUSE_UNEXPLAINED] = {"unexplained",
                              "sample the host during the idle gaps (perf, py-spy): the trace shows no CUDA call, input "
                              "wait or collective there",
                              "unexplained"},
    [SP_CAUSE_SCALING] = {"scaling",
                          "read each run's findings (scaleprof report DIR); raise the global batch size if compute per "
                          "step shrank",
                          "compare"},
    [SP_CAUSE_HANG] = {"hang", "see what the missing rank was doing: scaleprof hang DIR", "hang"},
};

const struct sp_cause_info *sp_cause_info(int cause)
{
    static const struct sp_cause_info unknown = {"?", "", ""};
    return cause >= 0 && cause < SP_CAUSE_N && causes[cause].name ? &causes[cause] : &unknown;
}

int sp_severity_of_gain(double gain)
{
    return gain >= SP_GAIN_HIGH ? SP_SEV_HIGH : gain >= SP_GAIN_MODERATE ? SP_SEV_MODERATE : SP_SEV_LOW;
}

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
    else if (bytes >= (uint64_t)READS_SHOWN_BYTES * (uint64_t)m->nranks && span_ns > 0)
        say(f, "; file reads: %.1f MB/s per rank over the run, %.1f MB/s while reading",
            (double)bytes / 1e6 / (span_ns / 1e9), read_ns > 0 ? (double)bytes / 1e6 / (read_ns / 1e9) : 0);
    else if (bytes)
        say(f, "; file reads: only %.0f KiB in all, so input is not read from files during the steps",
            (double)bytes / 1024);
    else
        say(f, "; no file reads recorded");
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


/* ---- findings from the replay ---- */

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static struct sp_finding *add(struct sp_model *m, int cause, double gain)
{
    if (m->nfindings >= SP_CAUSE_N)
        return NULL;
    int *ranks = malloc(((size_t)m->nranks + 1) * sizeof *ranks);
    if (!ranks)
        return NULL;
    struct sp_finding *f = &m->findings[m->nfindings++];
    memset(f, 0, sizeof *f);
    f->cause = cause;
    f->gain = gain;
    f->severity = sp_severity_of_gain(gain);
    f->step_ms_if_fixed = m->step_mean_ms * (1 - gain);
    f->ranks = ranks;
    set_all_ranks(m, f);
    f->step_first = m->step_lo + m->step_number0;
    f->step_last = m->step_hi - 1 + m->step_number0;
    return f;
}

/* "cut the mean step from 41.20 to 27.31 ms (34%)" */
static void say_gain(const struct sp_model *m, struct sp_finding *f, const char *fix)
{
    say(f, "%s would cut the mean step from %.2f to %.2f ms (%.0f%% faster)", fix, m->step_mean_ms,
        f->step_ms_if_fixed, 100 * f->gain);
}

/* Ranks whose share of category `cat` reaches `min`; all when none does. */
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

static void input_finding(struct sp_model *m, double gain)
{
    struct sp_finding *f = add(m, SP_CAUSE_INPUT, gain);
    if (!f)
        return;
    double share = m->breakdown[SP_CAT_IDLE_INPUT];
    ranks_over(m, SP_CAT_IDLE_INPUT, SP_GAIN_MODERATE, f);
    say_gain(m, f, "removing the waits for input");
    say(f, "; GPUs sat idle waiting for input %.1f%% of step time (%.2f ms of a %.2f ms step)", 100 * share,
        share * m->step_mean_ms, m->step_mean_ms);
    int dips, steps;
    double head;
    input_at_start(m, f, &dips, &steps, &head);
    if (steps)
        say(f, "; %s: %d of %d steps begin with a wait for input, %.0f%% of the input wait comes before a "
               "step's first kernel", 2 * dips >= steps ? "periodic dips at step start" : "not at step start",
            dips, steps, 100 * head);
    input_resources(m, f);
}

/* The others' wait for the set, as a share of their step time. */
static double others_wait(const struct sp_model *m, const uint8_t *set)
{
    double wait = 0;
    int n = 0;
    for (int i = 0; i < m->nranks; i++) {
        if (set[i] || !m->ranks[i].cat)
            continue;
        double b[SP_CAT_N];
        sp_model_rank_breakdown(m, &m->ranks[i], b);
        wait += b[SP_CAT_COLL_WAIT];
        n++;
    }
    return n ? wait / n : 0;
}

static void straggler_finding(struct sp_model *m, const struct sp_replay *rp, double gain, const char *cause)
{
    struct sp_finding *f = add(m, SP_CAUSE_STRAGGLER, gain);
    if (!f)
        return;
    f->nranks = 0;
    for (int i = 0; i < m->nranks; i++)
        if (rp->straggler_set[i])
            f->ranks[f->nranks++] = m->ranks[i].rank;
    char who[96];
    const struct sp_rank *one = NULL;
    for (int i = 0; f->nranks == 1 && i < m->nranks; i++)
        if (m->ranks[i].rank == f->ranks[0])
            one = &m->ranks[i];
    if (one && one->shared > 1) /* a GPU of a process that drives several */
        snprintf(who, sizeof who, "rank %d (GPU %d)", one->rank, one->device);
    else if (f->nranks == 1)
        snprintf(who, sizeof who, "rank %d", f->ranks[0]);
    else
        snprintf(who, sizeof who, "the %d ranks of one communicator", f->nranks);
    char fix[256];
    snprintf(fix, sizeof fix, "bringing %s to its peers' median time for the same work", who);
    say_gain(m, f, fix);
    say(f, "; the other ranks wait %.1f%% of step time in collectives", 100 * others_wait(m, rp->straggler_set));
    for (int i = 0; i < m->nstragglers; i++)
        if (f->nranks == 1 && m->stragglers[i].rank == f->ranks[0])
            say(f, "; it arrived last at %.0f%% of collectives", 100 * m->stragglers[i].last_fraction);
    if (cause)
        say(f, "; its excess is explained by %s", cause);
}

static void imbalance_finding(struct sp_model *m, const struct sp_replay *rp, double gain)
{
    struct sp_finding *f = add(m, SP_CAUSE_IMBALANCE, gain);
    if (!f)
        return;
    say_gain(m, f, "giving every rank the median work of each step");
    say(f, "; the slowest rank changes from step to step (no rank alone recovers more than %.0f%%); ranks wait "
           "%.1f%% of step time in collectives",
        100 * rp->gain[SP_CAUSE_STRAGGLER], 100 * m->breakdown[SP_CAT_COLL_WAIT]);
}

static void stage_finding(struct sp_model *m, const struct sp_replay *rp, double gain)
{
    struct sp_finding *f = add(m, SP_CAUSE_PIPELINE_STAGE, gain);
    if (!f)
        return;
    f->nranks = 0;
    for (int i = 0; i < m->nranks; i++)
        if (m->ranks[i].stage == rp->stage)
            f->ranks[f->nranks++] = m->ranks[i].rank;
    char fix[128];
    snprintf(fix, sizeof fix, "giving pipeline stage %d (of %d) the other stages' median GPU work", rp->stage,
             m->pipeline_stages);
    say_gain(m, f, fix);
}

static void bubble_finding(struct sp_model *m, const struct sp_replay *rp, double gain)
{
    struct sp_finding *f = add(m, SP_CAUSE_PIPELINE_BUBBLE, gain);
    if (!f)
        return;
    say_gain(m, f, "removing the pipeline's bubble (many more, smaller micro-batches)");
    say(f, "; %d stages wait %.1f%% of step time for each other in the pipeline's fill and drain%s", m->pipeline_stages,
        100 * rp->bubble_share, rp->stage >= 0 ? " once the stages are balanced" : "");
    if (m->micro_batches > 0)
        say(f, "; %d micro-batches per step now%s%s%s, %d would halve the bubble", m->micro_batches,
            m->pipeline_schedule ? " (" : "", m->pipeline_schedule ? m->pipeline_schedule : "",
            m->pipeline_schedule ? " schedule)" : "", 2 * m->micro_batches);
}

static void host_finding(struct sp_model *m, double gain)
{
    struct sp_finding *f = add(m, SP_CAUSE_HOST, gain);
    if (!f)
        return;
    ranks_over(m, SP_CAT_IDLE_HOST, SP_GAIN_MODERATE, f);
    double busy = m->breakdown[SP_CAT_COMPUTE] + m->breakdown[SP_CAT_MEMCPY];
    say_gain(m, f, "the host issuing work ahead of the GPU (no time between launches, no syncs)");
    say(f, "; the GPU waits for the host %.1f%% of step time (it launched the next work late, or blocked in "
           "a sync) and is busy only %.1f%%",
        100 * m->breakdown[SP_CAT_IDLE_HOST], 100 * busy);
}

static void communication_finding(struct sp_model *m, double gain)
{
    struct sp_finding *f = add(m, SP_CAUSE_COMMUNICATION, gain);
    if (!f)
        return;
    double share = m->breakdown[SP_CAT_COLL_TRANSFER];
    double coll = share + m->breakdown[SP_CAT_COLL_WAIT] + m->breakdown[SP_CAT_OVERLAP];
    say_gain(m, f, "hiding every transfer under compute");
    double bw = sp_model_busbw(m, -1, NULL);
    say(f, "; collective transfer not hidden by compute takes %.1f%% of step time", 100 * share);
    if (bw > 0)
        say(f, "; achieved bus bandwidth %.1f GB/s", bw);
    else
        say(f, "; bus bandwidth unknown (message sizes not recorded)");
    say(f, "; %.0f%% of collective time overlapped with compute",
        coll > 0 ? 100 * m->breakdown[SP_CAT_OVERLAP] / coll : 0);
}

static void cross_node_finding(struct sp_model *m, const struct sp_replay *rp, double gain)
{
    struct sp_finding *f = add(m, SP_CAUSE_CROSS_NODE, gain);
    if (!f)
        return;
    double intra_t, intra = sp_model_busbw(m, 0, &intra_t), inter = sp_model_busbw(m, 1, NULL);
    say_gain(m, f, "collectives spanning hosts at the bandwidth within a host");
    if (intra_t > 0 && intra > 0)
        say(f, "; collectives spanning hosts reach %.1f GB/s bus bandwidth, %.0f%% of the %.1f GB/s within a host",
            inter, 100 * rp->cross_scale, intra);
    else
        say(f, "; every collective spans %d hosts and reaches %.1f GB/s bus bandwidth, below the %.0f GB/s that "
               "links within a host give (NVLink)",
            m->nhosts, inter, inter / rp->cross_scale);
}

static void unexplained_finding(struct sp_model *m, double gain)
{
    struct sp_finding *f = add(m, SP_CAUSE_UNEXPLAINED, gain);
    if (!f)
        return;
    ranks_over(m, SP_CAT_IDLE_OTHER, UNEXPLAINED_MIN, f);
    say_gain(m, f, "removing GPU idle time nothing in the trace explains");
    say(f, "; the GPU is idle %.1f%% of step time while the host is in none of the calls the trace records "
           "(CUDA, NCCL, input reads or waits)",
        100 * m->breakdown[SP_CAT_IDLE_OTHER]);
    double busy = 0;
    int n = 0;
    for (int i = 0; i < m->nranks; i++)
        if (m->ranks[i].machine_busy >= 0) {
            busy += m->ranks[i].machine_busy;
            n++;
        }
    if (n)
        say(f, "; the host's CPUs are %.0f%% busy over the run", 100 * busy / n);
}

static int cmp_finding(const void *a, const void *b)
{
    const struct sp_finding *x = a, *y = b;
    return (x->gain < y->gain) - (x->gain > y->gain);
}

/* Without a replay (nothing to replay), each cause's gain is its own
 * share of step time: what removing it would save on one rank. */
static void shares_as_gains(const struct sp_model *m, struct sp_replay *rp)
{
    rp->gain[SP_CAUSE_INPUT] = m->breakdown[SP_CAT_IDLE_INPUT];
    rp->gain[SP_CAUSE_HOST] = m->breakdown[SP_CAT_IDLE_HOST];
    rp->gain[SP_CAUSE_UNEXPLAINED] = m->breakdown[SP_CAT_IDLE_OTHER];
    rp->gain[SP_CAUSE_COMMUNICATION] = m->breakdown[SP_CAT_COLL_TRANSFER];
}

void sp_model_findings(struct sp_model *m)
{
    struct sp_replay rp;
    if (sp_model_replay(m, &rp) < 0) {
        shares_as_gains(m, &rp);
        rp.straggler_rank = -1;
    } else {
        m->replay_step_ms = rp.base_ms;
    }
    double *g = rp.gain;
    int use[SP_CAUSE_N] = {0};
    /* one culprit, or work that moves between ranks */
    int culprit = g[SP_CAUSE_STRAGGLER] >= CULPRIT_SHARE * g[SP_CAUSE_IMBALANCE];
    const char *cause = NULL;
    if (culprit && g[SP_CAUSE_STRAGGLER] >= REPORT_MIN && rp.straggler_rank >= 0) {
        cause = straggler_cause(m, rp.straggler_rank);
        /* its own slow input, when the input pipeline is slow for all */
        if (!strcmp(cause, "input") && g[SP_CAUSE_STRAGGLER] < CULPRIT_SHARE * g[SP_CAUSE_INPUT])
            culprit = 0, g[SP_CAUSE_IMBALANCE] = 0;
    }
    use[SP_CAUSE_STRAGGLER] = culprit && rp.straggler_set && g[SP_CAUSE_STRAGGLER] >= REPORT_MIN;
    use[SP_CAUSE_IMBALANCE] = !culprit && g[SP_CAUSE_IMBALANCE] >= REPORT_MIN;
    use[SP_CAUSE_PIPELINE_STAGE] = rp.stage >= 0 && g[SP_CAUSE_PIPELINE_STAGE] >= REPORT_MIN;
    use[SP_CAUSE_PIPELINE_BUBBLE] = m->pipeline_stages > 1 && g[SP_CAUSE_PIPELINE_BUBBLE] >= REPORT_MIN;
    use[SP_CAUSE_INPUT] = g[SP_CAUSE_INPUT] >= REPORT_MIN;
    use[SP_CAUSE_HOST] = g[SP_CAUSE_HOST] >= REPORT_MIN;
    use[SP_CAUSE_COMMUNICATION] = g[SP_CAUSE_COMMUNICATION] >= REPORT_MIN;
    use[SP_CAUSE_CROSS_NODE] = rp.cross_scale > 0 && rp.cross_scale < CROSS_RATIO && g[SP_CAUSE_CROSS_NODE] >= REPORT_MIN;
    use[SP_CAUSE_UNEXPLAINED] = m->breakdown[SP_CAT_IDLE_OTHER] >= UNEXPLAINED_MIN && g[SP_CAUSE_UNEXPLAINED] >= REPORT_MIN;
    if (use[SP_CAUSE_STRAGGLER])
        straggler_finding(m, &rp, g[SP_CAUSE_STRAGGLER], cause);
    if (use[SP_CAUSE_IMBALANCE])
        imbalance_finding(m, &rp, g[SP_CAUSE_IMBALANCE]);
    if (use[SP_CAUSE_PIPELINE_STAGE])
        stage_finding(m, &rp, g[SP_CAUSE_PIPELINE_STAGE]);
    if (use[SP_CAUSE_PIPELINE_BUBBLE])
        bubble_finding(m, &rp, g[SP_CAUSE_PIPELINE_BUBBLE]);
    if (use[SP_CAUSE_INPUT])
        input_finding(m, g[SP_CAUSE_INPUT]);
    if (use[SP_CAUSE_HOST])
        host_finding(m, g[SP_CAUSE_HOST]);
    if (use[SP_CAUSE_COMMUNICATION])
        communication_finding(m, g[SP_CAUSE_COMMUNICATION]);
    if (use[SP_CAUSE_CROSS_NODE])
        cross_node_finding(m, &rp, g[SP_CAUSE_CROSS_NODE]);
    if (use[SP_CAUSE_UNEXPLAINED])
        unexplained_finding(m, g[SP_CAUSE_UNEXPLAINED]);
    for (int i = 0; i < m->nfindings; i++)
        qsort(m->findings[i].ranks, (size_t)m->findings[i].nranks, sizeof(int), cmp_int);
    qsort(m->findings, (size_t)m->nfindings, sizeof m->findings[0], cmp_finding);
    if (rp.ok && m->nfindings) {
        double ideal = sp_model_replay_ideal(m, &rp, use);
        if (ideal > 0 && rp.base_ms > 0)
            m->ideal_step_ms = m->step_mean_ms * ideal / rp.base_ms;
    }
    sp_model_replay_free(&rp);
}
