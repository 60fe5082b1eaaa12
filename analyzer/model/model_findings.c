/*
 * model_findings.c - the seed's triage table as findings, each priced by
 * the what-if replay (model_replay.c): the share of the mean step time
 * that fixing the cause alone would save.
 *
 * The cause table (causes.c) gives every cause its name, its first things
 * to try and its documentation anchor, for report and compare alike, and
 * names the rule (sp_rule_*, when not the listing minimum) and the
 * evidence writer (sp_evidence_*) defined here; sp_model_findings walks
 * the table, and decides alone between findings that fix the same time.
 * Severity follows the gain (sp_severity_of_gain); findings are ordered by
 * gain (equal gains in the table's order), and `healthy` means no finding
 * gains 5% or more.  Where two
 * counterfactuals fix the same time, one finding names it: a fixed
 * straggler (a rank, or a set of ranks) when fixing it recovers most of
 * what balancing every rank would (else the work is imbalanced, with no
 * fixed culprit), and a straggler whose excess is its own input, host or
 * unexplained idle is one finding with that cause: the straggler when it
 * is slow in every step, else the cause's finding, which says whom it
 * makes the straggler.  Evidence quotes the figures of the ranks a
 * finding names.  Gains the replay's check cannot back are withheld.
 *
 * The arrival table (sp_model_stragglers: who arrives last at collectives
 * and why) stays as evidence; who is named straggler is the replay's
 * choice: the rank, or small communicator, whose fixing gains most.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "text.h"
#include "units.h"

#define STRAGGLER_LAST 0.5      /* the arrival table lists ranks last at >= half */
#define CAUSE_EXPLAINS 0.8      /* a component explaining this much of an excess names it */
#define REPORT_MIN 0.02         /* a finding is listed from this gain */
#define CULPRIT_SHARE 0.6       /* one rank recovers this much of all: it is the culprit */
#define UNEXPLAINED_MIN 0.10    /* idle nothing explains, said as a finding from here */
#define CROSS_RATIO 0.5         /* spanning bus bandwidth below half the reference */
#define CROSS_FAR 0.25          /* ... below a quarter: listed whatever its gain */
#define SP_MAX_SAY_RANKS 16     /* ranks a sentence lists */
#define CHECK_IDEAL_SLACK 0.005 /* share of the step the ideal may lag the best single fix by (rounding) */
/* a step "dips" when at least 1% of it is input wait before its first kernel */
#define INPUT_DIP 0.01
/* host CPU busy fraction called saturated */
#define CPU_SATURATED 0.9
#define OTHERS_SHOWN 0.10 /* the host's load beyond the job's, said when this much */
/* reads below this per rank are rendezvous and config files, not input */
#define READS_SHOWN_BYTES (64 << 10)


#define COPIES_SHOWN 3 /* (direction, memory) groups named in the evidence */

int sp_severity_of_gain(double gain)
{
    if (gain >= SP_GAIN_HIGH)
        return SP_SEV_HIGH;
    return gain >= SP_GAIN_MODERATE ? SP_SEV_MODERATE : SP_SEV_LOW;
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

const char *sp_model_straggler_cause(const struct sp_model *m, int i)
{
    return i >= 0 && i < m->nranks && m->nranks > 1 ? straggler_cause(m, i) : "mixed";
}

/* Whether every rank of the straggler set is slow in every step. */
static int steady_set(const struct sp_model *m, const struct sp_replay *rp)
{
    int n = 0;
    for (int i = 0; rp->steady && i < m->nranks; i++)
        if (rp->straggler_set[i]) {
            if (!rp->steady[i])
                return 0;
            n++;
        }
    return n > 0;
}

/* The cause of a set's excess: its members' when they agree, else "mixed". */
static const char *set_cause(const struct sp_model *m, const uint8_t *set)
{
    const char *cause = NULL;
    for (int i = 0; i < m->nranks; i++) {
        if (!set[i])
            continue;
        const char *c = straggler_cause(m, i);
        if (cause && strcmp(cause, c))
            return "mixed";
        cause = c;
    }
    return cause ? cause : "mixed";
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

double sp_model_job_cores(const struct sp_model *m, int host, int *ncores)
{
    double cores = -1;
    *ncores = 0;
    for (int i = 0; i < m->nfrecs; i++) {
        const struct sp_file_rec *f = &m->frecs[i];
        if (!f->ok || f->rank < 0 || host < 0 || host >= m->nhosts || strcmp(f->host, m->hosts[host]))
            continue;
        double c = sp_file_cores(f);
        if (c < 0)
            continue;
        cores = (cores < 0 ? 0 : cores) + c;
        if (f->cpu.ncores)
            *ncores = (int)f->cpu.ncores;
    }
    return cores;
}

/* The job's own CPU use on its busiest host, and that host's whole load,
 * as the evidence says them: "the job's processes keep 4.0 of the host's
 * 8 CPU cores busy (50%); the host as a whole is 95% busy (saturated:
 * other processes hold the rest)". */
static void say_job_cpu(const struct sp_model *m, struct sp_finding *f)
{
    int best = -1, best_cores = 0;
    double best_job = -1;
    for (int h = 0; h < m->nhosts; h++) {
        int ncores;
        double job = sp_model_job_cores(m, h, &ncores);
        if (job >= 0 && ncores > 0 && (best < 0 || job / ncores > best_job / best_cores)) {
            best = h;
            best_job = job;
            best_cores = ncores;
        }
    }
    double busy = -1;
    for (int i = 0; i < m->nranks; i++)
        if (m->ranks[i].host == best && m->ranks[i].machine_busy >= 0)
            busy = m->ranks[i].machine_busy;
    if (best < 0)
        return;
    double share = best_job / best_cores;
    say(f, "; the job's processes keep %.1f of %s%d CPU cores busy (%.0f%%%s)", best_job,
        m->nhosts > 1 ? "its busiest host's " : "the host's ", best_cores, 100 * share,
        share >= CPU_SATURATED ? ", saturated" : "");
    if (busy >= 0 && busy - share >= OTHERS_SHOWN)
        say(f, "; the host as a whole is %.0f%% busy%s", 100 * busy,
            busy >= CPU_SATURATED ? " (saturated: other processes hold the rest)" : "");
}

/* Loader workers per rank, their CPU use, the job's CPU load and the read
 * throughput: what tells a slow loader from slow storage. */
static void input_resources(const struct sp_model *m, struct sp_finding *f)
{
    int helpers = 0, lo = -1, hi = 0, sampled = 0;
    double cpu = 0, read_ns = 0, span_ns = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        helpers += r->nhelpers;
        lo = lo < 0 || r->nhelpers < lo ? r->nhelpers : lo;
        hi = r->nhelpers > hi ? r->nhelpers : hi;
        cpu += r->helper_cpu;
        sampled += r->helper_sampled;
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
        say_job_cpu(m, f);
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
    f->first_try = m->causes[cause].first_try;
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

static int names_rank(const struct sp_finding *f, int rank)
{
    for (int x = 0; x < f->nranks; x++)
        if (f->ranks[x] == rank)
            return 1;
    return 0;
}

/* Category cat on the finding's ranks: its share of their step time and
 * their mean step (ms), and "rank 2's GPU" / "the GPUs of ranks 0,3" /
 * "GPUs" (all ranks) for the sentence that quotes it. */
static double named_share(const struct sp_model *m, const struct sp_finding *f, int cat, double *step_ms,
                          char *who, size_t len)
{
    double t = 0, total = 0;
    int n = 0, analyzed = 0;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (!r->cat)
            continue;
        analyzed++;
        if (!names_rank(f, r->rank))
            continue;
        double b[SP_CAT_N], ms = sp_model_rank_step_ms(m, r);
        sp_model_rank_breakdown(m, r, b);
        t += b[cat] * ms;
        total += ms;
        n++;
    }
    *step_ms = n ? total / n : m->step_mean_ms;
    if (n == analyzed || !n) {
        snprintf(who, len, "GPUs");
        return n ? t / total : m->breakdown[cat];
    }
    if (n == 1) {
        snprintf(who, len, "rank %d's GPU", f->ranks[0]);
    } else {
        size_t used = (size_t)snprintf(who, len, "the GPUs of ranks ");
        for (int x = 0; x < f->nranks && used < len; x++)
            used += (size_t)snprintf(who + used, len - used, "%s%d", x ? "," : "", f->ranks[x]);
    }
    return total > 0 ? t / total : 0;
}

/* Whether named_share's subject is one GPU (the verb's number). */
static int one_gpu(const char *who, const struct sp_finding *f)
{
    return f->nranks == 1 && strcmp(who, "GPUs") != 0;
}

/* The evidence of a category's time: the ranks it costs min of their step
 * or more, who they are (into who, as named_share's) and the share of
 * step time it takes them, *step their mean step (ms); then what fixing
 * it would gain. */
static double category_evidence(const struct sp_model *m, struct sp_finding *f, int cat, double min, const char *fix,
                                char *who, size_t len, double *step)
{
    ranks_over(m, cat, min, f);
    double share = named_share(m, f, cat, step, who, len);
    say_gain(m, f, fix);
    return share;
}

void sp_evidence_input(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    (void)rp;
    char who[96];
    double step, share = category_evidence(m, f, SP_CAT_IDLE_INPUT, SP_GAIN_MODERATE, "removing the waits for input",
                                           who, sizeof who, &step);
    say(f, "; %s sat idle waiting for input %.1f%% of step time (%.2f ms of a %.2f ms step%s)", who, 100 * share,
        share * step, step, f->nranks == 1 ? "" : " on average");
    int dips, steps;
    double head;
    input_at_start(m, f, &dips, &steps, &head);
    if (steps)
        say(f, "; %s: %d of %d steps begin with a wait for input, %.0f%% of the input wait comes before a "
               "step's first kernel",
            2 * dips >= steps ? "periodic dips at step start" : "not at step start",
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

/* What a straggler's excess is made of (straggler_cause's names) and the
 * category that measures it; the first thing to try for each is the
 * straggler's row of the cause table (its tries). */
static const struct {
    const char *cause;
    int cat;
    const char *what;
} excess_causes[] = {
    {"compute", SP_CAT_COMPUTE, "compute on the GPU"},
    {"memcpy", SP_CAT_MEMCPY, "copies"},
    {"input", SP_CAT_IDLE_INPUT, "waiting for input"},
    {"host", SP_CAT_IDLE_HOST, "the GPU waiting for the host"},
    {"other", SP_CAT_IDLE_OTHER, "GPU idle time nothing in the trace explains"},
};

static int excess_cause(const char *cause)
{
    for (int k = 0; cause && k < (int)(sizeof excess_causes / sizeof excess_causes[0]); k++)
        if (!strcmp(cause, excess_causes[k].cause))
            return k;
    return -1;
}

/* Category cat on rank index who, ms per step, and the median of the
 * other ranks'. */
static void rank_vs_others(const struct sp_model *m, int who, int cat, double *own, double *others_med)
{
    double *v = malloc(sizeof *v * ((size_t)m->nranks + 1));
    size_t n = 0;
    for (int i = 0; v && i < m->nranks; i++)
        if (i != who && m->ranks[i].cat)
            v[n++] = per_step_ms(m, &m->ranks[i], cat);
    *own = per_step_ms(m, &m->ranks[who], cat);
    *others_med = v ? sp_median(v, n) : 0;
    free(v);
}

/* "rank 5", "ranks 1 and 5", "ranks 2, 3 and 6" */
static void rank_list(const struct sp_finding *f, char *out, size_t len)
{
    size_t used = (size_t)snprintf(out, len, f->nranks == 1 ? "rank " : "ranks ");
    for (int x = 0; x < f->nranks && used < len; x++)
        used += (size_t)snprintf(out + used, len - used, "%s%d",
                                 x == 0 ? "" : (x == f->nranks - 1 ? " and " : ", "),
                                 f->ranks[x]);
}

void sp_evidence_straggler(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    const char *cause = set_cause(m, rp->straggler_set);
    double gain = f->gain;
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
    else if (f->nranks == 1 || rp->straggler_consistent)
        rank_list(f, who, sizeof who);
    else
        snprintf(who, sizeof who, "the %d ranks of one communicator", f->nranks);
    char fix[256];
    snprintf(fix, sizeof fix, "bringing %s to %s peers' median time for the same work", who,
             f->nranks == 1 ? "its" : "their");
    say_gain(m, f, fix);
    say(f, "; the other ranks wait %.1f%% of step time in collectives", 100 * others_wait(m, rp->straggler_set));
    if (rp->straggler_consistent && rp->excess_ms && rp->alone) {
        say(f, "; %s are slow in every analyzed step, each beyond its peers' median by", who);
        for (int i = 0, k = 0; i < m->nranks; i++)
            if (rp->straggler_set[i])
                say(f, "%s %.2f ms per step (rank %d)", k++ ? "," : "", rp->excess_ms[i], m->ranks[i].rank);
        say(f, "; fixing one alone would save");
        f->rank_gains = malloc(sizeof *f->rank_gains * (size_t)f->nranks);
        for (int i = 0, k = 0; i < m->nranks; i++)
            if (rp->straggler_set[i]) {
                double one_gain = rp->alone[i] > 0 ? rp->alone[i] : 0;
                if (f->rank_gains)
                    f->rank_gains[k] = one_gain;
                say(f, "%s %.0f%% (rank %d)", k++ ? "," : "", 100 * one_gain, m->ranks[i].rank);
            }
        say(f, ", %s together %.0f%%", f->nranks == 2 ? "both" : "all", 100 * gain);
    }
    for (int i = 0; i < m->nstragglers; i++) {
        if (!names_rank(f, m->stragglers[i].rank))
            continue;
        if (f->nranks == 1)
            say(f, "; it arrived last at %.0f%% of collectives", 100 * m->stragglers[i].last_fraction);
        else
            say(f, "; rank %d arrived last at %.0f%% of collectives", m->stragglers[i].rank,
                100 * m->stragglers[i].last_fraction);
    }
    int k = excess_cause(cause);
    if (k >= 0 && f->nranks == 1 && rp->straggler_rank >= 0) {
        double own, med;
        rank_vs_others(m, rp->straggler_rank, excess_causes[k].cat, &own, &med);
        say(f, "; its excess is %s: %.2f ms per step against a median of %.2f ms on the other ranks",
            excess_causes[k].what, own, med);
    } else if (cause && strcmp(cause, "mixed")) {
        say(f, "; their excess is %s", k >= 0 ? excess_causes[k].what : cause);
    }
    if (sp_cause_try(&m->causes[SP_CAUSE_STRAGGLER], cause))
        f->first_try = sp_cause_try(&m->causes[SP_CAUSE_STRAGGLER], cause);
}

/* Per analyzed step, the rank with the most local time (everything but
 * waiting in and moving data of collectives): the one the others wait
 * for.  *top gets the rank slowest most often, *top_steps how often;
 * returns how many different ranks were slowest at some step. */
static int slowest_ranks(const struct sp_model *m, int *top, int *top_steps, int *steps)
{
    int *count = calloc((size_t)m->nranks + 1, sizeof *count), distinct = 0;
    *top = -1;
    *top_steps = *steps = 0;
    if (!count)
        return 0;
    for (int k = m->step_lo; k < m->step_hi; k++) {
        int best = -1;
        double best_t = 0;
        for (int i = 0; i < m->nranks; i++) {
            const struct sp_rank *r = &m->ranks[i];
            if (!r->cat || k >= r->nsteps)
                continue;
            double t = 0;
            for (int c = 0; c < SP_CAT_EXCLUSIVE; c++)
                if (c != SP_CAT_COLL_WAIT && c != SP_CAT_COLL_TRANSFER)
                    t += r->cat[k][c];
            if (best < 0 || t > best_t)
                best = i, best_t = t;
        }
        if (best < 0)
            continue;
        (*steps)++;
        distinct += count[best]++ == 0;
        if (*top < 0 || count[best] > count[*top])
            *top = best;
    }
    if (*top >= 0) {
        *top_steps = count[*top];
        *top = m->ranks[*top].rank;
    }
    free(count);
    return distinct;
}

void sp_evidence_imbalance(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    say_gain(m, f, "giving every rank the median work of each step");
    int top, top_steps, steps, distinct = slowest_ranks(m, &top, &top_steps, &steps);
    if (distinct > 1 && top_steps < steps)
        say(f, "; the slowest rank changes from step to step (%d different ranks over %d steps, none slowest in "
               "more than %d)",
            distinct, steps, top_steps);
    else if (top >= 0)
        say(f, "; rank %d is the slowest in %d of %d steps", top, top_steps, steps);
    say(f, "; no rank or set of ranks alone recovers more than %.0f%%; ranks wait %.1f%% of step time in "
           "collectives",
        100 * rp->gain[SP_CAUSE_STRAGGLER], 100 * m->breakdown[SP_CAT_COLL_WAIT]);
}

void sp_evidence_pipeline_stage(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    f->nranks = 0;
    for (int i = 0; i < m->nranks; i++)
        if (m->ranks[i].stage == rp->stage)
            f->ranks[f->nranks++] = m->ranks[i].rank;
    char fix[128];
    snprintf(fix, sizeof fix, "giving pipeline stage %d (of %d) the other stages' median GPU work", rp->stage,
             m->pipeline_stages);
    say_gain(m, f, fix);
}

void sp_evidence_pipeline_bubble(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    say_gain(m, f, "removing the pipeline's bubble (many more, smaller micro-batches)");
    say(f, "; %d stages wait %.1f%% of step time for each other in the pipeline's fill and drain", m->pipeline_stages,
        100 * rp->bubble_share);
    /* the balanced pipeline's wait: a slow rank's or stage's is not bubble */
    say(f, " once every rank does its peers' median work");
    if (rp->stage >= 0)
        say(f, " and stage %d the other stages' median", rp->stage);
    if (m->micro_batches > 0)
        say(f, "; %d micro-batches per step now%s%s%s, %d would halve the bubble", m->micro_batches,
            m->pipeline_schedule ? " (" : "", m->pipeline_schedule ? m->pipeline_schedule : "",
            m->pipeline_schedule ? " schedule)" : "", 2 * m->micro_batches);
}

/* A rank's share of its step time spent in `per_step` (ns per step). */
static double rank_share(const struct sp_model *m, const struct sp_rank *r, const double *per_step)
{
    double part = 0, len = 0;
    for (int k = m->step_lo; per_step && k < m->step_hi && k < r->nsteps; k++) {
        part += per_step[k];
        len += (double)(r->steps[k].end - r->steps[k].start);
    }
    return len > 0 ? part / len : 0;
}

/* The ranks whose share of `per_step` (a field of sp_rank) reaches min,
 * the most concerned one into *top. */
static void ranks_by_share(const struct sp_model *m, size_t field, double min, struct sp_finding *f, int *top)
{
    double best = -1;
    f->nranks = 0;
    *top = -1;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        double share = rank_share(m, r, *(double *const *)((const char *)r + field));
        if (share > best) {
            best = share;
            *top = i;
        }
        if (share >= min)
            f->ranks[f->nranks++] = r->rank;
    }
    if (!f->nranks && *top >= 0)
        f->ranks[f->nranks++] = m->ranks[*top].rank;
}

#define PART_MIN 0.02 /* a rank is named when the part costs it this share of its step */

/* The evidence of one of idle_host's parts (field, as ranks_by_share's):
 * the ranks it costs PART_MIN or more, then what fixing it would gain;
 * the rank it costs most, NULL when none. */
static const struct sp_rank *part_evidence(const struct sp_model *m, struct sp_finding *f, size_t field,
                                           const char *fix)
{
    int top;
    ranks_by_share(m, field, PART_MIN, f, &top);
    say_gain(m, f, fix);
    return top < 0 ? NULL : &m->ranks[top];
}

/* A rank's idle_host share less its parts of their own (host_sync,
 * file_writes, launch_api): the host's own work, the sync ending a step. */
static double host_rest_share(const struct sp_model *m, const struct sp_rank *r)
{
    double b[SP_CAT_N];
    sp_model_rank_breakdown(m, r, b);
    double rest = b[SP_CAT_IDLE_HOST] - rank_share(m, r, r->sync_idle) - rank_share(m, r, r->write_idle) -
                  rank_share(m, r, r->launch_idle);
    return rest > 0 ? rest : 0;
}

void sp_evidence_host(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    (void)rp;
    f->nranks = 0;
    for (int i = 0; i < m->nranks; i++)
        if (m->ranks[i].cat && host_rest_share(m, &m->ranks[i]) >= SP_GAIN_MODERATE)
            f->ranks[f->nranks++] = m->ranks[i].rank;
    if (!f->nranks)
        set_all_ranks(m, f);
    char who[96];
    double step, rest = 0;
    int n = 0;
    for (int i = 0; i < m->nranks; i++)
        if (m->ranks[i].cat && names_rank(f, m->ranks[i].rank)) {
            rest += host_rest_share(m, &m->ranks[i]);
            n++;
        }
    double busy = named_share(m, f, SP_CAT_COMPUTE, &step, who, sizeof who) +
                  named_share(m, f, SP_CAT_MEMCPY, &step, who, sizeof who);
    say_gain(m, f, "the host issuing work ahead of the GPU (no time between launches, none after the step's "
                   "last sync)");
    say(f, "; %s %s for the host's own work between CUDA calls or the sync ending the step %.1f%% of step time "
           "and %s busy only %.1f%%",
        who, one_gpu(who, f) ? "waits" : "wait", n ? 100 * rest / n : 0, one_gpu(who, f) ? "is" : "are", 100 * busy);
}


void sp_evidence_host_sync(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    (void)rp;
    const struct sp_rank *r = part_evidence(m, f, offsetof(struct sp_rank, sync_idle),
                                            "the host issuing work ahead of the GPU across the synchronizations inside the step");
    if (!r)
        return;
    say(f, "; on rank %d the GPU waits %.1f%% of step time after a synchronization inside the step, for the "
           "host's next call",
        r->rank, 100 * rank_share(m, r, r->sync_idle));
    int steps = m->step_hi - m->step_lo;
    double part_ns = 0;
    for (int k = m->step_lo; k < m->step_hi && k < r->nsteps; k++)
        part_ns += r->sync_idle[k];
    if (r->sync_site[0] && steps > 0) {
        /* the call sites are those of the syncs' recorded stacks; a copy
         * that blocked (to pageable memory) carries none */
        double share = part_ns > 0 ? r->sync_site_ns / part_ns : 0;
        say(f, "; %s the sync called at %s (%.1f calls and %.2f ms of GPU idle per step, %.0f%% of it)",
            share >= 0.5 ? "most of it after" : "of the syncs with a recorded call site, most after", r->sync_site,
            (double)r->sync_site_calls / steps, r->sync_site_ns / steps / NS_PER_MS, 100 * share);
        if (share < 0.5)
            say(f, "; the rest after calls with no recorded call site (a copy to or from pageable memory, which "
                   "blocks like a sync)");
    }
}

#define LAUNCH_RANKS_SAID 4 /* ranks the launch_api evidence gives figures for */

void sp_evidence_launch_api(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    (void)rp;
    part_evidence(m, f, offsetof(struct sp_rank, launch_idle),
                  "launch calls that return at once (the GPU idle inside none of them)");
    int steps = m->step_hi - m->step_lo, said = 0;
    for (int i = 0; steps > 0 && i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (!r->cat || !names_rank(f, r->rank))
            continue;
        if (said == LAUNCH_RANKS_SAID) {
            say(f, "; ...");
            break;
        }
        say(f, "; rank %d: %.0f launches per step, %.1f us inside each on average, its GPU waiting inside launch "
               "calls %.1f%% of step time",
            r->rank, (double)r->launches / steps, r->launches ? (double)r->launch_ns / r->launches / 1e3 : 0,
            100 * rank_share(m, r, r->launch_idle));
        said++;
    }
}

/* "every 4th step (steps 3, 7, 11)", or the steps alone when irregular. */
static void say_write_steps(const struct sp_model *m, const struct sp_rank *r, struct sp_finding *f)
{
    int hit[8], nhit = 0, total = 0, period = 0, regular = 1;
    for (int k = m->step_lo; k < m->step_hi && k < r->nsteps; k++) {
        double len = (double)(r->steps[k].end - r->steps[k].start);
        if (r->write_idle[k] < PART_MIN * len)
            continue;
        if (total && period == 0)
            period = k - hit[0];
        else if (total >= 2 && k - hit[nhit - 1] != period)
            regular = 0;
        if (nhit < (int)(sizeof hit / sizeof hit[0]))
            hit[nhit++] = k;
        total++;
    }
    if (!total)
        return;
    if (total >= 2 && regular && period > 1)
        say(f, " in %d of %d steps, every %d%s step (steps", total, m->step_hi - m->step_lo, period,
            period == 2 ? "nd" : (period == 3 ? "rd" : "th"));
    else
        say(f, " in %d of %d steps (steps", total, m->step_hi - m->step_lo);
    for (int i = 0; i < nhit; i++)
        say(f, "%s %d", i ? "," : "", hit[i] + m->step_number0);
    say(f, "%s)", total > nhit ? ", ..." : "");
}

void sp_evidence_file_writes(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    (void)rp;
    const struct sp_rank *r = part_evidence(m, f, offsetof(struct sp_rank, write_idle), "file writes off the training thread");
    if (!r)
        return;
    say(f, "; rank %d blocks in file writes with its GPU idle %.1f%% of its step time", r->rank,
        100 * rank_share(m, r, r->write_idle));
    say_write_steps(m, r, f);
    char b[32];
    sp_text_bytes(r->write_bytes, b, sizeof b);
    say(f, "; it wrote %s in %llu calls taking %.1f ms", b, (unsigned long long)r->writes, r->write_ns / NS_PER_MS);
    if (r->write_ns > 0)
        say(f, " (%.0f MB/s)", (double)r->write_bytes / ((double)r->write_ns / 1e9) / 1e6);
    if (r->flushes)
        say(f, " and flushed them %llu times (fsync/fdatasync) taking %.1f ms", (unsigned long long)r->flushes,
            r->flush_ns / NS_PER_MS);
}

/* The collective (communicator, op, size) whose transfers take most time,
 * spanning hosts or not (spans -1: either); NULL when none moved data. */
static const struct sp_coll_summary *costliest_transfer(const struct sp_model *m, int spans)
{
    const struct sp_coll_summary *best = NULL;
    for (size_t i = 0; i < m->ncolls; i++) {
        const struct sp_coll_summary *c = &m->colls[i];
        if ((spans >= 0 && c->spans_hosts != spans) || c->transfer_ms <= 0)
            continue;
        if (!best || c->calls * c->transfer_ms > best->calls * best->transfer_ms)
            best = c;
    }
    return best;
}

/* Into f->ranks: the ranks that called on communicator comm; the hosts
 * they are on into *nhosts. */
static void ranks_of_comm(const struct sp_model *m, uint64_t comm, struct sp_finding *f, int *nhosts)
{
    f->nranks = 0;
    *nhosts = 0;
    uint8_t *host_seen = calloc((size_t)m->nhosts + 1, 1);
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        for (size_t c = 0; c < r->ncalls; c++)
            if (r->calls[c].comm == comm) {
                f->ranks[f->nranks++] = r->rank;
                if (host_seen && r->host >= 0 && r->host < m->nhosts && !host_seen[r->host]) {
                    host_seen[r->host] = 1;
                    (*nhosts)++;
                }
                break;
            }
    }
    free(host_seen);
    if (!f->nranks)
        set_all_ranks(m, f);
}

/* "communicator 3f2a... (ranks 0-7 on 2 hosts): allreduce of 16.0 MiB, 4
 * calls per step, 1.20 ms of transfer each at 12.3 GB/s bus bandwidth",
 * and the other communicators' bandwidth beside it. */
static void say_communicator(const struct sp_model *m, struct sp_finding *f, const struct sp_coll_summary *c)
{
    char bytes[32], who[128];
    sp_text_bytes(c->bytes, bytes, sizeof bytes);
    int nhosts = 0;
    struct sp_finding members = {.ranks = malloc(((size_t)m->nranks + 1) * sizeof(int))};
    if (!members.ranks)
        return;
    ranks_of_comm(m, c->comm, &members, &nhosts);
    if (members.nranks == m->nranks)
        snprintf(who, sizeof who, "all %d ranks", members.nranks);
    else if (members.nranks <= SP_MAX_SAY_RANKS)
        rank_list(&members, who, sizeof who);
    else
        snprintf(who, sizeof who, "%d ranks", members.nranks);
    free(members.ranks);
    int steps = m->step_hi - m->step_lo;
    double all = 0;
    for (size_t i = 0; i < m->ncolls; i++)
        all += m->colls[i].calls * m->colls[i].transfer_ms;
    say(f, "; the largest part of the transfer time (%.0f%%) is on communicator %016llx (%s on %d host%s): %s of "
           "%s, %.1f calls per step, %.2f ms of transfer each",
        all > 0 ? 100 * c->calls * c->transfer_ms / all : 0, (unsigned long long)c->comm, who, nhosts,
        nhosts == 1 ? "" : "s", sp_text_nccl_op(c->op), bytes, steps > 0 ? (double)c->calls / steps : 0,
        c->transfer_ms);
    if (c->busbw_gbps > 0)
        say(f, " at %.1f GB/s bus bandwidth", c->busbw_gbps);
    /* the job's other communicators, for comparison */
    double t = 0, moved = 0;
    for (size_t i = 0; i < m->ncolls; i++) {
        const struct sp_coll_summary *o = &m->colls[i];
        if (o->comm == c->comm || o->busbw_gbps <= 0 || o->transfer_ms <= 0)
            continue;
        t += o->calls * o->transfer_ms;
        moved += o->calls * o->transfer_ms * o->busbw_gbps;
    }
    if (t > 0 && c->busbw_gbps > 0)
        say(f, ", against %.1f GB/s on the job's other communicators", moved / t);
}

void sp_evidence_communication(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    const struct sp_coll_summary *top = costliest_transfer(m, -1);
    double share = m->breakdown[SP_CAT_COLL_TRANSFER];
    double coll = share + m->breakdown[SP_CAT_COLL_WAIT] + m->breakdown[SP_CAT_OVERLAP];
    say_gain(m, f, "hiding every transfer under compute");
    double bw = sp_model_busbw(m, -1, NULL);
    say(f, "; collective transfer not hidden by compute takes %.1f%% of step time", 100 * share);
    if (rp->ok)
        say(f, "; moving data takes %.1f%% of the step on its longest path (the most hiding it can save)",
            100 * rp->path_transfer_share);
    if (bw > 0)
        say(f, "; achieved bus bandwidth %.1f GB/s", bw);
    else
        say(f, "; bus bandwidth unknown (message sizes not recorded)");
    say(f, "; %.0f%% of collective time overlapped with compute",
        coll > 0 ? 100 * m->breakdown[SP_CAT_OVERLAP] / coll : 0);
    if (top)
        say_communicator(m, f, top);
}

#define HOSTS_MASKED 64     /* hosts a communicator's host set is kept for */
#define SLOW_HOST_RATIO 0.5 /* a host whose spanning links reach under half the others' */

/* Which host's links are slow: per host, the transfer-weighted bus
 * bandwidth of the collectives spanning hosts that include it, against
 * those that do not.  Only collectives on different host sets can tell
 * hosts apart (one communicator over every host cannot): -1 then, *told
 * 0.  Else the host whose own is below SLOW_HOST_RATIO of the rest, or -1. */
static int slow_host(const struct sp_model *m, double *own_gbps, double *rest_gbps, int *told)
{
    *told = 0;
    if (m->nhosts < 3 || m->nhosts > HOSTS_MASKED)
        return -1;
    uint64_t *mask = calloc(m->ncolls + 1, sizeof *mask);
    if (!mask)
        return -1;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        for (size_t c = 0; c < r->ncalls; c++)
            for (size_t k = 0; k < m->ncolls; k++)
                if (m->colls[k].comm == r->calls[c].comm && r->host >= 0 && r->host < HOSTS_MASKED)
                    mask[k] |= 1ull << r->host;
    }
    uint64_t first = 0;
    for (size_t k = 0; k < m->ncolls; k++)
        if (m->colls[k].spans_hosts && m->colls[k].busbw_gbps > 0) {
            if (!first)
                first = mask[k];
            else if (mask[k] != first)
                *told = 1;
        }
    int best = -1;
    for (int h = 0; *told && h < m->nhosts; h++) {
        double in_t = 0, in_b = 0, out_t = 0, out_b = 0;
        for (size_t k = 0; k < m->ncolls; k++) {
            const struct sp_coll_summary *c = &m->colls[k];
            if (!c->spans_hosts || c->busbw_gbps <= 0)
                continue;
            double t = c->calls * c->transfer_ms;
            if (mask[k] >> h & 1)
                in_t += t, in_b += t * c->busbw_gbps;
            else
                out_t += t, out_b += t * c->busbw_gbps;
        }
        if (in_t <= 0 || out_t <= 0)
            continue;
        double own = in_b / in_t, rest = out_b / out_t;
        if (own < SLOW_HOST_RATIO * rest && (best < 0 || own / rest < *own_gbps / *rest_gbps)) {
            best = h;
            *own_gbps = own;
            *rest_gbps = rest;
        }
    }
    free(mask);
    return best;
}

void sp_evidence_cross_node(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    double intra_t, intra = sp_model_busbw(m, 0, &intra_t), inter = sp_model_busbw(m, 1, NULL);
    const struct sp_coll_summary *top = costliest_transfer(m, 1);
    say_gain(m, f, "collectives spanning hosts at the bandwidth within a host");
    if (intra_t > 0 && intra > 0)
        say(f, "; collectives spanning hosts reach %.1f GB/s bus bandwidth, %.0f%% of the %.1f GB/s within a host",
            inter, 100 * rp->cross_scale, intra);
    else
        say(f, "; no collective runs within a host, and those spanning hosts reach %.1f GB/s bus bandwidth, below "
               "the %.0f GB/s that links within a host give (NVLink)",
            inter, inter / rp->cross_scale);
    if (f->gain < REPORT_MIN)
        say(f, "; this run pays little for it (the exposed transfer of those collectives is a small part of the "
               "step), but every collective spanning hosts runs at that rate");
    if (top)
        say_communicator(m, f, top);
    double own = 0, rest = 0;
    int told, h = slow_host(m, &own, &rest, &told);
    if (h >= 0) {
        f->nranks = 0;
        for (int i = 0; i < m->nranks; i++)
            if (m->ranks[i].cat && m->ranks[i].host == h)
                f->ranks[f->nranks++] = m->ranks[i].rank;
        if (!f->nranks)
            set_all_ranks(m, f);
        say(f, "; the slow links are host %s's: collectives spanning hosts that include it reach %.1f GB/s, "
               "those without it %.1f GB/s",
            m->hosts[h], own, rest);
    } else if (!told && m->nhosts > 2) {
        say(f, "; every collective spanning hosts includes the same %d hosts, so which host's link is slow cannot "
               "be told from these traces (nccl-tests between two hosts at a time can)",
            m->nhosts);
    }
}

void sp_evidence_unexplained(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    (void)rp;
    char who[96];
    double step, other = category_evidence(m, f, SP_CAT_IDLE_OTHER, UNEXPLAINED_MIN,
                                           "removing GPU idle time nothing in the trace explains", who, sizeof who, &step);
    say(f, "; %s %s idle %.1f%% of step time while the host is in none of the calls the trace records "
           "(CUDA, NCCL, input reads or waits)",
        who, one_gpu(who, f) ? "is" : "are", 100 * other);
    if (!(m->flags_any & SP_FLAG_NO_CPU))
        say_job_cpu(m, f);
}

static const char *copy_dir_text(int dir)
{
    static const char *const names[SP_COPY_DIRS] = {
        [SP_COPY_UNKNOWN] = "copies of unknown direction",
        [SP_COPY_H2D] = "host to device",
        [SP_COPY_D2H] = "device to host",
        [SP_COPY_D2D] = "device to device",
        [SP_COPY_H2H] = "host to host",
    };
    return names[dir];
}

static const char *mem_text(int dir, int mem)
{
    if (dir == SP_COPY_D2D)
        return "";
    switch (mem) {
    case SP_MEM_PAGEABLE: return " from pageable memory";
    case SP_MEM_PINNED: return " from pinned memory";
    case SP_MEM_MANAGED: return " from managed memory";
    case SP_MEM_UNKNOWN: return " (pageable or pinned: not recorded)";
    default: return "";
    }
}

/* Direction, host memory, bytes, bandwidth and overlap of the copies of
 * the finding's ranks, the groups with the most GPU time first; and the
 * first thing to try for the group that weighs most. */
static void memcpy_evidence(const struct sp_model *m, struct sp_finding *f)
{
    struct sp_copy_stat sum[SP_COPY_DIRS][SP_MEM_KINDS];
    memset(sum, 0, sizeof sum);
    double copy_ns = 0, exposed_ns = 0, step_ns = 0;
    int steps = 0;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        int concerned = 0;
        for (int x = 0; x < f->nranks; x++)
            concerned |= f->ranks[x] == r->rank;
        if (!concerned || !r->cat)
            continue;
        for (int d = 0; d < SP_COPY_DIRS; d++)
            for (int k = 0; k < SP_MEM_KINDS; k++) {
                sum[d][k].count += r->copies[d][k].count;
                sum[d][k].bytes += r->copies[d][k].bytes;
                sum[d][k].ns += r->copies[d][k].ns;
            }
        copy_ns += r->copy_ns;
        for (int k = m->step_lo; k < m->step_hi && k < r->nsteps; k++, steps++) {
            exposed_ns += r->cat[k][SP_CAT_MEMCPY];
            step_ns += (double)(r->steps[k].end - r->steps[k].start);
        }
    }
    if (steps && step_ns > 0)
        say(f, "; copies and memsets run while no kernel does %.1f%% of step time (%.2f ms of a %.2f ms step)",
            100 * exposed_ns / step_ns, exposed_ns / steps / NS_PER_MS, step_ns / steps / NS_PER_MS);
    int top_dir = -1, top_mem = 0;
    for (int shown = 0; shown < COPIES_SHOWN; shown++) {
        int bd = -1, bk = 0;
        for (int d = 0; d < SP_COPY_DIRS; d++)
            for (int k = 0; k < SP_MEM_KINDS; k++)
                if (sum[d][k].count && sum[d][k].ns > 0 && (bd < 0 || sum[d][k].ns > sum[bd][bk].ns))
                    bd = d, bk = k;
        if (bd < 0)
            break;
        const struct sp_copy_stat *c = &sum[bd][bk];
        if (top_dir < 0)
            top_dir = bd, top_mem = bk;
        double per = steps ? (double)c->count / steps : 0;
        say(f, "; %s%s: %.1f MiB per step per rank in %.3g cop%s, %.2f ms at %.2f GB/s", copy_dir_text(bd),
            mem_text(bd, bk), steps ? (double)c->bytes / steps / (1 << 20) : 0, per, per == 1 ? "y" : "ies",
            steps ? (double)c->ns / steps / NS_PER_MS : 0, (double)c->bytes / (double)c->ns);
        sum[bd][bk].count = 0;
    }
    if (top_dir < 0)
        say(f, "; no copy recorded (the time is memsets)");
    if (copy_ns > 0)
        say(f, "; %.0f%% of copy time overlapped with compute", 100 * (1 - exposed_ns / copy_ns));
    if (top_dir == SP_COPY_D2D)
        f->first_try = sp_cause_try(&m->causes[SP_CAUSE_MEMCPY], "device");
    else if (top_dir >= 0 && top_mem == SP_MEM_PINNED)
        f->first_try = sp_cause_try(&m->causes[SP_CAUSE_MEMCPY], "pinned");
}

void sp_evidence_memcpy(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f)
{
    (void)rp;
    ranks_over(m, SP_CAT_MEMCPY, SP_GAIN_MODERATE, f);
    say_gain(m, f, "overlapping every copy with compute");
    memcpy_evidence(m, f);
}

/* A cause whose time on some ranks makes them the straggler (the one
 * finding for both): their figure for it, what fixing them alone would
 * save, and the others' wait for them. */
static void say_straggler_made(const struct sp_model *m, const struct sp_replay *rp, struct sp_finding *f, int cat)
{
    char who[96];
    struct sp_finding set = {.ranks = (int[SP_MAX_SAY_RANKS]){0}};
    for (int i = 0; i < m->nranks && set.nranks < SP_MAX_SAY_RANKS; i++)
        if (rp->straggler_set[i])
            set.ranks[set.nranks++] = m->ranks[i].rank;
    rank_list(&set, who, sizeof who);
    say(f, "; it makes %s the straggler", who);
    if (rp->straggler_rank >= 0) {
        double own, med;
        rank_vs_others(m, rp->straggler_rank, cat, &own, &med);
        say(f, " (%.2f ms per step against a median of %.2f ms on the other ranks)", own, med);
    }
    say(f, ": fixing %s alone would save %.0f%%, and the other ranks wait %.1f%% of step time in collectives for "
           "%s",
        set.nranks == 1 ? "it" : "them", 100 * rp->gain[SP_CAUSE_STRAGGLER], 100 * others_wait(m, rp->straggler_set),
        set.nranks == 1 ? "it" : "them");
}

/* The replay's check (sp_model_replay_check): a gain it cannot back is
 * not listed, and the report says so.  When the unchanged replay does not
 * give back the recorded times, no replayed gain is backed. */
static void withhold_unbacked(struct sp_model *m, const struct sp_replay *rp, int *use)
{
    struct sp_whatif_check *ck = &m->check;
    sp_model_replay_check(m, rp, ck);
    if (!ck->done)
        return;
    char names[256] = "";
    size_t used = 0;
    for (int c = 0; c < SP_CAUSE_N; c++) {
        if (!use[c] || (ck->replay_ok && ck->bound_ok[c]))
            continue;
        use[c] = 0;
        ck->withheld |= 1u << c;
        int w = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", m->causes[c].name);
        if (w > 0 && (size_t)w < sizeof names - used)
            used += (size_t)w;
    }
    if (!ck->replay_ok)
        sp_model_warn(m, "the what-if replay does not reproduce the recorded steps (off by up to %.1f%% of the "
                         "mean step, %d nodes not placed): gains withheld%s%s",
                      ck->replay_error_pct, ck->unplaced, used ? " for " : "", names);
    for (int c = 0; c < SP_CAUSE_N; c++)
        if (ck->replay_ok && !ck->bound_ok[c])
            sp_model_warn(m, "the what-if replay fails its check: fixing %s would save %.2f ms per step, more "
                             "than its %.2f ms on the critical path%s",
                          m->causes[c].name, ck->saved_ms[c], ck->bound_ms[c],
                          ck->withheld & (1u << c) ? ": its gain is withheld" : "");
}

/* All found causes fixed together must save at least what the best one
 * alone does; otherwise the ideal is withheld. */
static int check_ideal(struct sp_model *m, const struct sp_replay *rp, const int *use, double ideal)
{
    struct sp_whatif_check *ck = &m->check;
    double best = 0;
    for (int c = 0; c < SP_CAUSE_N; c++)
        if (use[c] && rp->gain[c] > 0 && (best == 0 || rp->base_ms * (1 - rp->gain[c]) < best))
            best = rp->base_ms * (1 - rp->gain[c]);
    ck->best_ms = best;
    ck->ideal_ms = ideal;
    ck->ideal_ok = ideal > 0 && (best == 0 || ideal <= best + CHECK_IDEAL_SLACK * rp->base_ms);
    if (ideal > 0 && !ck->ideal_ok) {
        ck->ok = 0;
        sp_model_warn(m, "the what-if replay fails its check: all found causes fixed give %.2f ms per step, "
                         "slower than the best one alone (%.2f ms): the combined gain is withheld",
                      ideal, best);
    }
    return ck->ideal_ok;
}

/* By gain, largest first; equal gains in the cause table's order. */
static int cmp_finding(const void *a, const void *b)
{
    const struct sp_finding *x = a, *y = b;
    if (x->gain != y->gain)
        return (x->gain < y->gain) - (x->gain > y->gain);
    return (x->cause > y->cause) - (x->cause < y->cause);
}

/* The category that measures a cause on a rank (its row's measured_by,
 * else its whole's); -1 none. */
static int cause_cat(const struct sp_model *m, int cause)
{
    const struct sp_cause_info *ci = &m->causes[cause];
    uint32_t bits = ci->measured_by || ci->part_of >= SP_CAUSE_N ? ci->measured_by : m->causes[ci->part_of].measured_by;
    for (int c = 0; c < SP_CAT_N; c++)
        if (bits & 1u << c)
            return c;
    return -1;
}

/* Without a replay (nothing to replay), each cause's gain is its own
 * share of step time: what removing it would save on one rank. */
static void shares_as_gains(const struct sp_model *m, struct sp_replay *rp)
{
    for (int c = 0; c < SP_CAUSE_N; c++)
        if (m->causes[c].measured_by)
            rp->gain[c] = m->breakdown[cause_cat(m, c)];
}

/* ---- the rules of the cause table (causes.c: reported) ---- */

int sp_rule_straggler(const struct sp_model *m, const struct sp_replay *rp, int cause)
{
    (void)m;
    return rp->straggler_set && rp->gain[cause] >= REPORT_MIN;
}

int sp_rule_pipeline_stage(const struct sp_model *m, const struct sp_replay *rp, int cause)
{
    (void)m;
    return rp->stage >= 0 && rp->gain[cause] >= REPORT_MIN;
}

int sp_rule_pipeline_bubble(const struct sp_model *m, const struct sp_replay *rp, int cause)
{
    return m->pipeline_stages > 1 && rp->gain[cause] >= REPORT_MIN;
}

/* A link far slower than those within a host is a finding even where
 * this run pays little for it (said so, priced as it is). */
int sp_rule_cross_node(const struct sp_model *m, const struct sp_replay *rp, int cause)
{
    (void)m;
    return rp->cross_scale > 0 && rp->cross_scale < CROSS_RATIO &&
           (rp->gain[cause] >= REPORT_MIN || rp->cross_scale <= CROSS_FAR);
}

int sp_rule_unexplained(const struct sp_model *m, const struct sp_replay *rp, int cause)
{
    return m->breakdown[SP_CAT_IDLE_OTHER] >= UNEXPLAINED_MIN && rp->gain[cause] >= REPORT_MIN;
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
    int held_by = -1; /* the cause whose finding also says it makes the straggler */
    if (culprit && g[SP_CAUSE_STRAGGLER] >= REPORT_MIN && rp.straggler_set) {
        cause = set_cause(m, rp.straggler_set);
        /* its own slow input, when the input pipeline is slow for all */
        if (!strcmp(cause, "input") && g[SP_CAUSE_STRAGGLER] < CULPRIT_SHARE * g[SP_CAUSE_INPUT])
            culprit = 0, g[SP_CAUSE_IMBALANCE] = 0, cause = NULL;
    }
    /* each cause by its row's rule; a cause with no evidence writer is no
     * finding of one run (compare's and hang's) */
    for (int c = 0; c < SP_CAUSE_N; c++) {
        const struct sp_cause_info *ci = &m->causes[c];
        use[c] = ci->evidence && (ci->reported ? ci->reported(m, &rp, c) : g[c] >= REPORT_MIN);
    }
    use[culprit ? SP_CAUSE_IMBALANCE : SP_CAUSE_STRAGGLER] = 0;
    /* One finding per cause: a straggler whose excess is its input (host,
     * unexplained idle: a row's `excess`) is that time, named once.  The
     * cause's finding holds it when removing the cause everywhere saves
     * clearly more (the straggler's excess is part of it) or when the
     * straggler is not slow in every step (the cause comes and goes:
     * loaders out of phase); else the straggler, a fixed culprit, with
     * that cause. */
    for (int c = 0; use[SP_CAUSE_STRAGGLER] && cause && c < SP_CAUSE_N; c++) {
        const char *excess = m->causes[c].excess;
        if (!excess)
            continue;
        /* a cause whose time comes in parts (the host's): the part that gains most is it */
        int best = c;
        for (int p = 0; p < SP_CAUSE_N; p++)
            if (m->causes[p].part_of == c && use[p] && (!use[best] || g[p] > g[best]))
                best = p;
        if (strcmp(cause, excess) || !use[best])
            continue;
        if (g[best] >= g[SP_CAUSE_STRAGGLER] + SP_GAIN_MODERATE || !steady_set(m, &rp))
            use[SP_CAUSE_STRAGGLER] = 0, held_by = best;
        else
            use[best] = 0;
    }
    if (rp.ok)
        withhold_unbacked(m, &rp, use);
    for (int c = 0; c < SP_CAUSE_N; c++) {
        struct sp_finding *f = use[c] ? add(m, c, g[c]) : NULL;
        if (f)
            m->causes[c].evidence(m, &rp, f);
    }
    for (int i = 0; held_by >= 0 && i < m->nfindings; i++)
        if (m->findings[i].cause == held_by)
            say_straggler_made(m, &rp, &m->findings[i], cause_cat(m, held_by));
    for (int i = 0; i < m->nfindings; i++)
        qsort(m->findings[i].ranks, (size_t)m->findings[i].nranks, sizeof(int), cmp_int);
    qsort(m->findings, (size_t)m->nfindings, sizeof m->findings[0], cmp_finding);
    if (rp.ok && m->nfindings) {
        double ideal = sp_model_replay_ideal(m, &rp, use);
        if (check_ideal(m, &rp, use, ideal) && rp.base_ms > 0)
            m->ideal_step_ms = m->step_mean_ms * ideal / rp.base_ms;
    }
    /* the results stay for the outputs (export --whatif), not the graph */
    sp_model_replay_keep(&rp);
    m->replay = malloc(sizeof *m->replay);
    if (m->replay)
        *m->replay = rp;
    else
        sp_model_replay_free(&rp);
}
