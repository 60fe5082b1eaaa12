/*
 * compare.h - the comparison of several runs of one job (different GPU
 * counts, or an A/B pair), computed once for `scaleprof compare` and
 * `scaleprof html`: efficiency against the baseline, lost time by
 * category, the series' findings (compare.c says how).
 */
#ifndef SP_COMPARE_H
#define SP_COMPARE_H

#include "model.h"

/* How a run's work per GPU relates to the baseline's: the same (weak
 * scaling), shrunk as 1/N (strong: a fixed global batch), or the same GPU
 * count (A/B).  sp_scaling_name gives "weak", "strong", "same_gpus". */
enum sp_scaling { SP_SCALING_WEAK,
                  SP_SCALING_STRONG,
                  SP_SCALING_AB };
extern const char *const sp_scaling_name[];

struct sp_cmp_run {
    const char *dir;
    int ok; /* analyzed */
    struct sp_model m;
    double step_s, thr, eff, cat_ms[SP_CAT_N]; /* cat_ms: ms per step by category */
    /* samples per step over all its GPUs (0: no batch given), the
     * throughput against the baseline's, each sample's cost against the
     * baseline's (price per hour x GPUs / speedup) */
    double samples_per_step, speedup, cost_x;
    enum sp_scaling scaling;
    enum sp_scaling inferred; /* what compute per GPU suggests, whatever the batch given */
};

/* What the user said of the batch: samples per GPU per step (the same
 * in every run: a fixed per-GPU batch), or samples per step over all GPUs
 * (a fixed global batch); 0 each when neither was given, and then the
 * kind of scaling is inferred from compute per GPU. */
struct sp_cmp_batch {
    double per_gpu, global;
};

#define SP_CMP_MAX_FINDINGS 4
struct sp_cmp_finding {
    int cause;   /* enum sp_cause */
    double gain; /* share of the worse run's time per sample a fix would save */
    char evidence[512];
};

struct sp_cmp {
    struct sp_cmp_run *runs;
    int n, base; /* base: the baseline's index */
    struct sp_cmp_batch batch;
    struct sp_cmp_finding f[SP_CMP_MAX_FINDINGS + 1];
    int nf; /* by gain, largest first */
};

/* Analyzes the n runs under dirs with o and compares them at the batch
 * given (NULL: none).  Throughput is samples/s when a batch is given,
 * else per-GPU batches of the baseline's size per second.  Returns 0, or
 * -1 when a run had nothing to analyze (its ok is 0) or memory ran out.
 * Free c with sp_compare_free either way. */
int sp_compare_runs(char *const *dirs, int n, const struct sp_model_opts *o,
                    const struct sp_cmp_batch *batch, struct sp_cmp *c);
void sp_compare_free(struct sp_cmp *c);

/* Collective time (transfer, wait, overlap), compute (with overlap) and
 * transfer (with overlap) of a run, ms per step. */
double sp_cmp_coll_ms(const struct sp_cmp_run *r);
double sp_cmp_compute_ms(const struct sp_cmp_run *r);
double sp_cmp_transfer_ms(const struct sp_cmp_run *r);

/* Cost per 1000 samples at price per GPU hour: price x GPUs x step time
 * / the run's samples per step (0 when the price or the batch is
 * unknown).  Each sample's cost against the baseline's is r->cost_x. */
double sp_cmp_cost_per_1k(const struct sp_cmp_run *r, double price);
/* The same per step over all the run's GPUs (price x GPUs x step time). */
double sp_cmp_cost_per_step(const struct sp_cmp_run *r, double price);
/* "samples/s", or "batches/s" (per-GPU batches of the baseline's size)
 * when no batch was given: the unit of every run's thr. */
const char *sp_cmp_throughput_unit(const struct sp_cmp *c);

#endif
