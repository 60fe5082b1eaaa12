/*
 * compare_out.c - `scaleprof compare`'s table, notes, lost time, cost and
 * findings as text, and the same as JSON (compare_out.h), over a finished
 * comparison (analyses/compare.c computes every number).
 */
#include <stdio.h>

#include "compare_out.h"
#include "finding_json.h"
#include "json.h"
#include "text.h"

#define LOST_SHOWN_MS 0.005 /* smaller differences print as nothing */

static void lost_text(const struct sp_cmp_run *r, const struct sp_cmp_run *b, char *out, size_t len)
{
    double d = (r->step_s - b->step_s) * 1e3;
    int w = snprintf(out, len, "%+.2f ms per step:", d);
    const char *sep = " ";
    for (int c = 0; c < SP_CAT_EXCLUSIVE && w > 0 && (size_t)w < len; c++) {
        double x = r->cat_ms[c] - b->cat_ms[c];
        if (x > LOST_SHOWN_MS || x < -LOST_SHOWN_MS) {
            char name[64];
            snprintf(name, sizeof name, "%s", sp_model_cat_name(c));
            for (char *p = name; *p; p++)
                *p = *p == '_' ? ' ' : *p;
            w += snprintf(out + w, len - (size_t)w, "%s%+.2f %s", sep, x, name);
            sep = ", ";
        }
    }
}

static const char *gpus_word(int n)
{
    return n == 1 ? "GPU" : "GPUs";
}

/* A batch given that compute per GPU contradicts: said, not overridden
 * (the user knows the batch; the trace only suggests it). */
static void text_batch_notes(const struct sp_cmp *c, int cols)
{
    for (int i = 0; i < c->n; i++) {
        const struct sp_cmp_run *r = &c->runs[i];
        if (i == c->base || r->scaling == r->inferred || r->scaling == SP_SCALING_AB)
            continue;
        char text[512];
        if (r->inferred == SP_SCALING_STRONG)
            snprintf(text, sizeof text,
                     "%s: compute per GPU shrank as with a fixed global batch, but "
                     "--samples-per-step says each GPU keeps its batch; if the global batch is fixed, "
                     "give --global-batch (samples per step over all GPUs) instead",
                     r->dir);
        else
            snprintf(text, sizeof text,
                     "%s: compute per GPU stayed as with a fixed per-GPU batch, but "
                     "--global-batch says the global batch is fixed; if each GPU keeps its batch, give "
                     "--samples-per-step (samples per GPU) instead",
                     r->dir);
        printf("note: ");
        sp_text_wrapped(text, 6, 2, cols);
        return; /* once: the same advice for every run */
    }
}

static void json_num_or_null(struct sp_json *j, const char *key, double v)
{
    if (v > 0)
        sp_json_num(j, key, v);
    else
        sp_json_null(j, key);
}

/* A run's warnings are its report's business; compare says there are some. */
static void text_run_notes(const struct sp_cmp_run *runs, int n, int cols)
{
    for (int i = 0; i < n; i++) {
        if (!runs[i].m.nwarnings)
            continue;
        char text[1024];
        snprintf(text, sizeof text, "%s: %d warning%s (the first: %s); see scaleprof report %s", runs[i].dir,
                 runs[i].m.nwarnings, runs[i].m.nwarnings == 1 ? "" : "s", runs[i].m.warnings[0], runs[i].dir);
        printf("note: ");
        sp_text_wrapped(text, 6, 2, cols);
    }
}

void sp_compare_json(const struct sp_cmp *c, double price)
{
    const struct sp_cmp_run *runs = c->runs;
    int n = c->n, base = c->base, nf = c->nf;
    const struct sp_cmp_run *b = &runs[base];
    const struct sp_cmp_finding *f = c->f;
    int samples = c->batch.per_gpu > 0 || c->batch.global > 0;
    const char *unit = sp_cmp_throughput_unit(c);
    struct sp_json j;
    sp_json_begin(&j, stdout);
    sp_json_int(&j, "baseline", base);
    sp_json_str(&j, "throughput_unit", unit);
    sp_json_open(&j, "batch", '{');
    json_num_or_null(&j, "per_gpu", c->batch.per_gpu);
    json_num_or_null(&j, "global", c->batch.global);
    sp_json_close(&j, '}');
    sp_json_open(&j, "runs", '[');
    for (int i = 0; i < n; i++) {
        const struct sp_cmp_run *r = &runs[i];
        sp_json_open(&j, NULL, '{');
        sp_json_str(&j, "dir", r->dir);
        sp_json_int(&j, "gpus", r->m.nranks);
        sp_json_int(&j, "hosts", r->m.nhosts);
        sp_json_num(&j, "step_ms", r->m.step_mean_ms);
        sp_json_num(&j, "steps_per_s", 1 / r->step_s);
        sp_json_num(&j, "throughput", r->thr);
        json_num_or_null(&j, "samples_per_step", r->samples_per_step);
        json_num_or_null(&j, "samples_per_s", samples ? r->thr : 0);
        sp_json_num(&j, "speedup", r->speedup);
        sp_json_num(&j, "efficiency", r->eff);
        sp_json_str(&j, "scaling", i == base ? "baseline" : sp_scaling_name[r->scaling]);
        sp_json_str(&j, "inferred_scaling", i == base ? "baseline" : sp_scaling_name[r->inferred]);
        sp_json_num(&j, "cost_per_sample_x", r->cost_x);
        if (price > 0 && samples)
            sp_json_num(&j, "cost_per_1k_samples", sp_cmp_cost_per_1k(r, price));
        sp_json_open(&j, "lost_ms", '{');
        for (int k = 0; k < SP_CAT_N; k++)
            sp_json_num(&j, sp_model_cat_name(k), r->cat_ms[k] - b->cat_ms[k]);
        sp_json_close(&j, '}');
        sp_json_close(&j, '}');
    }
    sp_json_close(&j, ']');
    const struct sp_cmp_run *last = &runs[0];
    for (int i = 1; i < n; i++)
        if (runs[i].m.nranks > last->m.nranks)
            last = &runs[i];
    sp_json_open(&j, "lost", '{');
    for (int k = 0; k < SP_CAT_N; k++)
        sp_json_num(&j, sp_model_cat_name(k), last->cat_ms[k] - b->cat_ms[k]);
    sp_json_close(&j, '}');
    sp_json_open(&j, "findings", '[');
    for (int i = 0; i < nf; i++) {
        struct sp_finding one = {.cause = f[i].cause, .severity = sp_severity_of_gain(f[i].gain), .gain = f[i].gain};
        snprintf(one.evidence, sizeof one.evidence, "%s", f[i].evidence);
        sp_json_finding(&j, &one, 1);
    }
    sp_json_close(&j, ']');
    sp_json_close(&j, '}');
}

void sp_compare_text(const struct sp_cmp *c, double price)
{
    const struct sp_cmp_run *runs = c->runs;
    int n = c->n, base = c->base, nf = c->nf;
    const struct sp_cmp_run *b = &runs[base];
    const struct sp_cmp_finding *f = c->f;
    int samples = c->batch.per_gpu > 0 || c->batch.global > 0;
    int cols = sp_text_columns();
    printf("%-5s %-5s %9s", "GPUs", "hosts", "ms/step");
    if (samples)
        printf(" %12s", "samples/s");
    printf(" %8s %10s  %s\n", "speedup", "efficiency", "run");
    for (int i = 0; i < n; i++) {
        const struct sp_cmp_run *r = &runs[i];
        printf("%-5d %-5d %9.2f", r->m.nranks, r->m.nhosts, r->m.step_mean_ms);
        if (samples)
            printf(" %12.1f", r->thr);
        printf(" %7.2fx %9.0f%%  %s%s\n", r->speedup, 100 * r->eff, r->dir,
               i == base                         ? " (baseline)"
               : r->scaling == SP_SCALING_STRONG ? " (fixed global batch)"
               : r->scaling == SP_SCALING_AB     ? " (same GPUs: A/B)"
                                                 : "");
    }
    int strong = 0, ab = 0, super = 0;
    for (int i = 0; i < n; i++) {
        strong |= i != base && runs[i].scaling == SP_SCALING_STRONG;
        ab |= i != base && runs[i].scaling == SP_SCALING_AB;
        super |= i != base && runs[i].scaling != SP_SCALING_AB && runs[i].eff > 1.005;
    }
    printf("  ");
    sp_text_wrapped(samples ? "speedup: samples/s against the baseline's; efficiency: the speedup "
                              "divided by the growth in GPUs (100%: N times the GPUs give N times "
                              "the throughput)"
                            : "speedup: throughput against the baseline's, at the baseline's "
                              "per-GPU batch (none given: the kind of scaling is inferred from "
                              "compute per GPU); efficiency: the speedup divided by the growth in "
                              "GPUs (100%: N times the GPUs give N times the throughput)",
                    2, 2, cols);
    if (strong) {
        printf("  ");
        sp_text_wrapped("fixed global batch: compute per GPU shrank as 1/N, so a step does the baseline's "
                        "work and efficiency is its speedup divided by the growth in GPUs",
                        2, 2, cols);
    }
    if (ab) {
        printf("  ");
        sp_text_wrapped("same GPU count as the baseline: an A/B comparison; efficiency is the throughput "
                        "ratio (above 100%: faster than the baseline)",
                        2, 2, cols);
    }
    if (super) {
        printf("  ");
        sp_text_wrapped("above 100%: more throughput per GPU than the baseline, e.g. a per-GPU batch that "
                        "fits caches better, or a baseline slowed by something the larger run avoids; "
                        "compare the runs' reports",
                        2, 2, cols);
    }
    text_batch_notes(c, cols);
    printf("\nstep time against the baseline, by category (ms per step):\n");
    for (int i = 0; i < n; i++) {
        if (i == base)
            continue;
        char text[512];
        lost_text(&runs[i], b, text, sizeof text);
        printf("  %d %s: ", runs[i].m.nranks, gpus_word(runs[i].m.nranks));
        sp_text_wrapped(text, 4 + 5, 4, cols);
    }
    if (price > 0) {
        printf("\ncost (in the unit of --price-per-gpu-hour):\n");
        for (int i = 0; i < n; i++) {
            const struct sp_cmp_run *r = &runs[i];
            double price_x = (double)r->m.nranks / b->m.nranks;
            char text[512];
            int w;
            if (samples)
                w = snprintf(text, sizeof text, "%.3g per 1k samples; ", sp_cmp_cost_per_1k(r, price));
            else
                w = snprintf(text, sizeof text, "%.3g per step; ",
                             sp_cmp_cost_per_step(r, price));
            if (w > 0 && (size_t)w < sizeof text)
                snprintf(text + w, sizeof text - (size_t)w,
                         "%.2fx the speed at %.0fx the price per hour: each sample costs %.2fx", r->speedup,
                         price_x, r->cost_x);
            printf("  %d %s: ", r->m.nranks, gpus_word(r->m.nranks));
            sp_text_wrapped(text, 9, 4, cols);
        }
    }
    printf("\n");
    if (!nf && !ab)
        printf("scaling looks healthy across these runs.\n");
    else if (!nf)
        printf("no finding across these runs.\n");
    for (int i = 0; i < nf; i++) {
        char evidence[sizeof f[0].evidence + 2];
        snprintf(evidence, sizeof evidence, "%s.", f[i].evidence);
        const struct sp_cause_info *ci = sp_cause_info(f[i].cause);
        printf("%d. %s [%s]\n   ", i + 1, ci->name, sp_model_severity_name(sp_severity_of_gain(f[i].gain)));
        sp_text_wrapped(evidence, 3, 3, cols);
        printf("   first try: ");
        sp_text_wrapped(ci->first_try, 14, 5, cols);
    }
    text_run_notes(runs, n, cols);
}
