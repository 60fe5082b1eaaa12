/*
 * compare.c - what `scaleprof compare` computes, shared with `scaleprof
 * html`: each run analyzed by the model, the baseline (the run with the
 * fewest GPUs), each run's kind of scaling and efficiency, and the
 * findings of the series.
 *
 * Throughput is measured, never assumed from a batch the runs may not
 * share: with --samples-per-step S (per GPU) a run of N GPUs processes
 * S x N samples per step, with --global-batch S it processes S, so its
 * samples/s is that over its step time; a fixed global batch is strong
 * scaling, a fixed per-GPU batch weak.  Without either, the kind is
 * inferred from compute per GPU and throughput counts per-GPU batches of
 * the baseline's size (N per step, or N_0 when strong).  Efficiency =
 * (thr_N / thr_0) / (N / N_0); each sample costs (N / N_0) / (thr_N /
 * thr_0) of the baseline's.  Lost time is the step-time difference to the
 * baseline split by category.
 *
 * cross_node ("fine on one node, poor on two"): a multi-host run whose
 * efficiency falls below 80% of the best single-host run's (high), or,
 * against a single-host run with collectives, whose collective transfer per
 * step at least doubled or whose bus bandwidth at least halved (moderate):
 * the link between hosts costs time even when compute still hides it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "seen.h"
#include "units.h"

#define SMALL_BATCH_COMPUTE_DROP 0.8   /* compute per step fell below 80% of baseline */
#define SMALL_BATCH_COLL_KEPT 0.9      /* while collective time stayed >= 90% */
#define CROSS_NODE_EFF_DROP 0.8        /* multi-host efficiency < 80% of the best single-host */
#define CROSS_NODE_TRANSFER_GROWTH 2.0 /* collective transfer per step doubled on more hosts */
#define CROSS_NODE_BUSBW_DROP 0.5      /* or bus bandwidth halved */
#define SCALING_POOR 0.8               /* efficiency below which speedup "shrinks" */

/* How a run's work per GPU relates to the baseline's: the same (weak
 * scaling: each GPU keeps its batch), shrunk as 1/N (strong scaling: a
 * fixed global batch split over more GPUs), or the same GPU count (an A/B
 * comparison of two configurations). */
const char *const sp_scaling_name[] = {"weak", "strong", "same_gpus"};
/* strong when compute per GPU is nearer base x N_base/N than base */
#define STRONG_NEARER 1.0

double sp_cmp_coll_ms(const struct sp_cmp_run *r)
{
    return r->cat_ms[SP_CAT_COLL_TRANSFER] + r->cat_ms[SP_CAT_COLL_WAIT] +
           r->cat_ms[SP_CAT_OVERLAP];
}

double sp_cmp_compute_ms(const struct sp_cmp_run *r)
{
    return r->cat_ms[SP_CAT_COMPUTE] + r->cat_ms[SP_CAT_OVERLAP];
}

double sp_cmp_transfer_ms(const struct sp_cmp_run *r)
{
    return r->cat_ms[SP_CAT_COLL_TRANSFER] + r->cat_ms[SP_CAT_OVERLAP];
}

/* A multi-host run against the single-host run with collectives whose
 * transfer per step is smallest: transfer grown or bus bandwidth fallen. */
static int link_finding(const struct sp_cmp_run *runs, int n, struct sp_cmp_finding *f)
{
    const struct sp_cmp_run *one = NULL;
    for (int i = 0; i < n; i++)
        if (runs[i].m.nhosts == 1 && runs[i].m.nranks > 1 && runs[i].m.ncolls &&
            (!one || sp_cmp_transfer_ms(&runs[i]) < sp_cmp_transfer_ms(one)))
            one = &runs[i];
    if (!one) return 0;
    double bw1 = sp_model_busbw(&one->m, -1, NULL);
    for (int i = 0; i < n; i++) {
        const struct sp_cmp_run *r = &runs[i];
        if (r->m.nhosts < 2 || !r->m.ncolls) continue;
        double bw = sp_model_busbw(&r->m, 1, NULL);
        int grew = sp_cmp_transfer_ms(r) >= CROSS_NODE_TRANSFER_GROWTH * sp_cmp_transfer_ms(one) &&
                   sp_cmp_transfer_ms(r) > 0;
        int fell = bw1 > 0 && bw > 0 && bw <= CROSS_NODE_BUSBW_DROP * bw1;
        if (!grew && !fell) continue;
        *f = (struct sp_cmp_finding){
            SP_CAUSE_CROSS_NODE,
            r->step_s > 0 ? (sp_cmp_transfer_ms(r) - sp_cmp_transfer_ms(one)) / (r->step_s * 1e3)
                          : 0,
            ""};
        if (f->gain < 0) f->gain = 0;
        snprintf(f->evidence, sizeof f->evidence,
                 "fine on one node, poor on %d: collective transfer per step %.2f ms on %d GPUs on "
                 "one host, "
                 "%.2f ms on %d GPUs over %d hosts; bus bandwidth %.1f GB/s within a host, %.1f "
                 "GB/s across hosts",
                 r->m.nhosts, sp_cmp_transfer_ms(one), one->m.nranks, sp_cmp_transfer_ms(r),
                 r->m.nranks, r->m.nhosts, bw1, bw);
        return 1;
    }
    return 0;
}

/* Fixed global batch: what restoring the baseline's per-GPU work would
 * give per sample.  Each GPU's compute grows k-fold back to the
 * baseline's, collectives stay: T' = T + compute (k - 1) for k times the
 * samples. */
static double small_batch_gain(const struct sp_cmp_run *r, const struct sp_cmp_run *b)
{
    double c = sp_cmp_compute_ms(r), k = c > 0 ? sp_cmp_compute_ms(b) / c : 0, t = r->step_s * 1e3;
    if (k <= 1 || t <= 0) return 0;
    double gain = 1 - (t + c * (k - 1)) / (k * t);
    return gain > 0 ? gain : 0;
}

static int series_findings(struct sp_cmp_run *runs, int n, int base, struct sp_cmp_finding *f)
{
    int nf = 0;
    const struct sp_cmp_run *b = &runs[base];
    const struct sp_cmp_run *small = NULL; /* the most GPUs whose per-GPU batch shrank */
    for (int i = 0; i < n; i++) {
        const struct sp_cmp_run *r = &runs[i];
        if (i != base && r->m.nranks > b->m.nranks &&
            sp_cmp_compute_ms(r) < SMALL_BATCH_COMPUTE_DROP * sp_cmp_compute_ms(b) &&
            sp_cmp_coll_ms(r) >= SMALL_BATCH_COLL_KEPT * sp_cmp_coll_ms(b) &&
            (!small || r->m.nranks > small->m.nranks))
            small = r;
    }
    if (small) {
        double gain = small_batch_gain(small, b);
        f[nf] = (struct sp_cmp_finding){SP_CAUSE_SMALL_BATCH, gain, ""};
        snprintf(
            f[nf++].evidence, sizeof f[0].evidence,
            "compute per step fell from %.2f ms on %d GPUs to %.2f ms on %d while collective time "
            "went from %.2f to %.2f ms: each GPU's share of the batch shrank; at the baseline's "
            "per-GPU batch each sample would take %.0f%% less time",
            sp_cmp_compute_ms(b), b->m.nranks, sp_cmp_compute_ms(small), small->m.nranks,
            sp_cmp_coll_ms(b), sp_cmp_coll_ms(small), 100 * gain);
    }
    double best_single = 0;
    for (int i = 0; i < n; i++)
        if (runs[i].m.nhosts == 1 && runs[i].scaling != SP_SCALING_AB && runs[i].eff > best_single)
            best_single = runs[i].eff;
    for (int i = 0; i < n && best_single > 0; i++) {
        const struct sp_cmp_run *r = &runs[i];
        if (r->m.nhosts > 1 && r->eff < CROSS_NODE_EFF_DROP * best_single) {
            f[nf] = (struct sp_cmp_finding){SP_CAUSE_CROSS_NODE, 1 - r->eff / best_single, ""};
            snprintf(f[nf++].evidence, sizeof f[0].evidence,
                     "on one host scaling efficiency reaches %.0f%%, on %d hosts (%d GPUs) %.0f%%; "
                     "collective "
                     "transfer is %.2f ms per step there",
                     100 * best_single, r->m.nhosts, r->m.nranks, 100 * r->eff,
                     r->cat_ms[SP_CAT_COLL_TRANSFER]);
            break;
        }
    }
    if (!nf || f[nf - 1].cause != SP_CAUSE_CROSS_NODE) nf += link_finding(runs, n, &f[nf]);
    const struct sp_cmp_run *worst = NULL;
    for (int i = 0; i < n; i++)
        if (runs[i].scaling != SP_SCALING_AB && runs[i].eff < SCALING_POOR &&
            (!worst || runs[i].eff < worst->eff))
            worst = &runs[i];
    if (worst) {
        f[nf] = (struct sp_cmp_finding){SP_CAUSE_SCALING, 1 - worst->eff, ""};
        snprintf(f[nf++].evidence, sizeof f[0].evidence,
                 "speedup shrinks as GPUs increase: %d GPUs reach %.0f%% "
                 "scaling efficiency (%s scaling)",
                 worst->m.nranks, 100 * worst->eff,
                 worst->scaling == SP_SCALING_STRONG ? "strong" : "weak");
    }
    return nf;
}

/* What compute per GPU suggests of a run against the baseline: the same
 * GPU count (A/B), strong (compute shrank as N_0/N) or weak. */
static enum sp_scaling infer_scaling(const struct sp_cmp_run *r, const struct sp_cmp_run *b)
{
    double nr = r->m.nranks, nb = b->m.nranks;
    if (r->m.nranks == b->m.nranks)
        return SP_SCALING_AB;
    double ratio = sp_cmp_compute_ms(b) > 0 ? sp_cmp_compute_ms(r) / sp_cmp_compute_ms(b) : 1;
    double d_weak = ratio > 1 ? ratio - 1 : 1 - ratio, d_strong = ratio - nb / nr;
    d_strong = d_strong < 0 ? -d_strong : d_strong;
    return d_strong < STRONG_NEARER * d_weak ? SP_SCALING_STRONG : SP_SCALING_WEAK;
}

/* A run's kind of scaling (the batch given says it; else inferred), its
 * samples per step and its throughput (see the top comment). */
static void judge_scaling(struct sp_cmp_run *r, const struct sp_cmp_run *b, const struct sp_cmp_batch *batch)
{
    double nr = r->m.nranks, nb = b->m.nranks;
    r->inferred = infer_scaling(r, b);
    r->scaling = r->inferred;
    if (r->scaling != SP_SCALING_AB && batch->global > 0)
        r->scaling = SP_SCALING_STRONG;
    else if (r->scaling != SP_SCALING_AB && batch->per_gpu > 0)
        r->scaling = SP_SCALING_WEAK;
    r->samples_per_step = batch->global > 0 ? batch->global : batch->per_gpu * nr; /* 0: neither */
    if (r->samples_per_step > 0)
        r->thr = r->samples_per_step / r->step_s;
    else /* a strong-scaled run processes the baseline's per-GPU batches, N_0 of them, per step */
        r->thr = (r->scaling == SP_SCALING_STRONG ? nb : nr) / r->step_s;
}

/* Efficiency: weak, throughput per GPU against the baseline's; strong,
 * the speedup against the growth in GPUs; A/B, the speedup alone. */
static void judge_efficiency(struct sp_cmp_run *r, const struct sp_cmp_run *b)
{
    double nr = r->m.nranks, nb = b->m.nranks;
    r->speedup = b->thr > 0 ? r->thr / b->thr : 0;
    r->eff = r->scaling == SP_SCALING_AB ? r->speedup : r->speedup / (nr / nb);
    r->cost_x = r->speedup > 0 ? (nr / nb) / r->speedup : 0;
}

static int cmp_gain(const void *a, const void *b)
{
    const struct sp_cmp_finding *x = a, *y = b;
    return (x->gain < y->gain) - (x->gain > y->gain);
}

int sp_compare_runs(char *const *dirs, int n, const struct sp_model_opts *o,
                    const struct sp_cmp_batch *batch, struct sp_cmp *c)
{
    memset(c, 0, sizeof *c);
    if (batch)
        c->batch = *batch;
    c->runs = calloc((size_t)n + 1, sizeof *c->runs);
    if (!c->runs) return -1;
    c->n = n;
    int failed = 0, base = 0;
    struct sp_cmp_run *runs = c->runs;
    for (int i = 0; i < n; i++) {
        struct sp_cmp_run *r = &runs[i];
        r->dir = dirs[i];
        if (sp_model_analyze(r->dir, o, &r->m) < 0 || r->m.step_mean_ms <= 0 || !sp_seen_gpu(&r->m)) {
            failed = 1;
            continue;
        }
        r->ok = 1;
        r->step_s = r->m.step_mean_ms / 1e3;
        for (int k = 0; k < SP_CAT_N; k++)
            r->cat_ms[k] = r->m.breakdown[k] * r->m.step_mean_ms;
        if (r->m.nranks < runs[base].m.nranks || runs[base].step_s <= 0) base = i;
    }
    c->base = base;
    if (failed) return -1;
    const struct sp_cmp_run *b = &runs[base];
    for (int i = 0; i < n; i++)
        judge_scaling(&runs[i], b, &c->batch);
    for (int i = 0; i < n; i++)
        judge_efficiency(&runs[i], b);
    runs[base].scaling = runs[base].inferred = SP_SCALING_WEAK; /* the baseline against itself */
    runs[base].eff = 1;
    c->nf = series_findings(runs, n, base, c->f);
    qsort(c->f, (size_t)c->nf, sizeof c->f[0], cmp_gain);
    return 0;
}

void sp_compare_free(struct sp_cmp *c)
{
    for (int i = 0; c->runs && i < c->n; i++)
        sp_model_free(&c->runs[i].m);
    free(c->runs);
    c->runs = NULL;
}

double sp_cmp_cost_per_step(const struct sp_cmp_run *r, double price)
{
    return price * r->m.nranks * r->step_s / SECONDS_PER_HOUR;
}

double sp_cmp_cost_per_1k(const struct sp_cmp_run *r, double price)
{
    if (price <= 0 || r->samples_per_step <= 0) return 0;
    return sp_cmp_cost_per_step(r, price) / r->samples_per_step * 1000;
}

const char *sp_cmp_throughput_unit(const struct sp_cmp *c)
{
    return c->batch.per_gpu > 0 || c->batch.global > 0 ? "samples/s" : "batches/s";
}
