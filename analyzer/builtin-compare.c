/*
 * builtin-compare.c - `scaleprof compare DIR1 DIR2 ...`: scaling efficiency
 * across runs of the same job on different GPU counts, where the lost time
 * went, and what each sample costs.
 *
 * Each directory is analyzed by the model.  The baseline is the run with
 * the fewest GPUs.  Global throughput is gpus / step time (x samples per
 * GPU per step when given), so efficiency = (thr_N / thr_0) / (N / N_0).
 * Lost time is the step-time difference to the baseline split by category.
 *
 * cross_node ("fine on one node, poor on two"): a multi-host run whose
 * efficiency falls below 80% of the best single-host run's (high), or,
 * against a single-host run with collectives, whose collective transfer per
 * step at least doubled or whose bus bandwidth at least halved (moderate):
 * the link between hosts costs time even when compute still hides it.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "opt.h"
#include "json.h"
#include "text.h"
#include "model.h"

#define VERB "compare"
#define MAX_RUNS 32
#define SMALL_BATCH_COMPUTE_DROP 0.8  /* compute per step fell below 80% of baseline */
#define SMALL_BATCH_COLL_KEPT 0.9     /* while collective time stayed >= 90% */
#define CROSS_NODE_EFF_DROP 0.8       /* multi-host efficiency < 80% of the best single-host */
#define CROSS_NODE_TRANSFER_GROWTH 2.0 /* collective transfer per step doubled on more hosts */
#define CROSS_NODE_BUSBW_DROP 0.5     /* or bus bandwidth halved */
#define SCALING_POOR 0.8              /* efficiency below which speedup "shrinks" */
#define SECONDS_PER_HOUR 3600.0
#define LOST_SHOWN_MS 0.005           /* smaller differences print as nothing */

static const char usage_text[] =
    "usage: scaleprof compare DIR1 DIR2 [DIR...] [options]\n"
    "\n"
    "Scaling efficiency across runs (same job, same per-GPU batch, different\n"
    "GPU counts), where the lost step time went, and cost per sample.\n"
    "\n"
    "  --json                   print the comparison as JSON\n"
    "  --samples-per-step S     samples per GPU per step (for samples/s)\n"
    "  --price-per-gpu-hour P   price of one GPU hour, for cost per 1k samples\n"
    "  --skip N                 warm-up steps to drop in every run (default 3)\n"
    "  -h, --help               this text\n"
    "\n"
    "Exit status: 0 comparison printed, 1 a run had nothing analyzable, 2 usage.\n";

/* How a run's work per GPU relates to the baseline's: the same (weak
 * scaling: each GPU keeps its batch), shrunk as 1/N (strong scaling: a
 * fixed global batch split over more GPUs), or the same GPU count (an A/B
 * comparison of two configurations). */
enum scaling { SCALING_WEAK, SCALING_STRONG, SCALING_AB };
static const char *const scaling_name[] = {"weak", "strong", "same_gpus"};
/* strong when compute per GPU is nearer base x N_base/N than base */
#define STRONG_NEARER 1.0

struct run {
    const char *dir;
    struct sp_model m;
    double step_s, thr, eff, cat_ms[SP_CAT_N];
    enum scaling scaling;
};

#define MAX_CMP_FINDINGS 4
struct cmp_finding {
    int cause;        /* enum sp_cause */
    double gain;      /* share of the worse run's time per sample a fix would save */
    char evidence[512];
};

static double coll_ms(const struct run *r)
{
    return r->cat_ms[SP_CAT_COLL_TRANSFER] + r->cat_ms[SP_CAT_COLL_WAIT] + r->cat_ms[SP_CAT_OVERLAP];
}

static double compute_ms(const struct run *r)
{
    return r->cat_ms[SP_CAT_COMPUTE] + r->cat_ms[SP_CAT_OVERLAP];
}

static double transfer_ms(const struct run *r)
{
    return r->cat_ms[SP_CAT_COLL_TRANSFER] + r->cat_ms[SP_CAT_OVERLAP];
}

/* A multi-host run against the single-host run with collectives whose
 * transfer per step is smallest: transfer grown or bus bandwidth fallen. */
static int link_finding(const struct run *runs, int n, struct cmp_finding *f)
{
    const struct run *one = NULL;
    for (int i = 0; i < n; i++)
        if (runs[i].m.nhosts == 1 && runs[i].m.nranks > 1 && runs[i].m.ncolls &&
            (!one || transfer_ms(&runs[i]) < transfer_ms(one)))
            one = &runs[i];
    if (!one)
        return 0;
    double bw1 = sp_model_busbw(&one->m, -1, NULL);
    for (int i = 0; i < n; i++) {
        const struct run *r = &runs[i];
        if (r->m.nhosts < 2 || !r->m.ncolls)
            continue;
        double bw = sp_model_busbw(&r->m, 1, NULL);
        int grew = transfer_ms(r) >= CROSS_NODE_TRANSFER_GROWTH * transfer_ms(one) && transfer_ms(r) > 0;
        int fell = bw1 > 0 && bw > 0 && bw <= CROSS_NODE_BUSBW_DROP * bw1;
        if (!grew && !fell)
            continue;
        *f = (struct cmp_finding){SP_CAUSE_CROSS_NODE, r->step_s > 0 ? (transfer_ms(r) - transfer_ms(one)) / (r->step_s * 1e3) : 0, ""};
        if (f->gain < 0)
            f->gain = 0;
        snprintf(f->evidence, sizeof f->evidence,
                 "fine on one node, poor on %d: collective transfer per step %.2f ms on %d GPUs on one host, "
                 "%.2f ms on %d GPUs over %d hosts; bus bandwidth %.1f GB/s within a host, %.1f GB/s across hosts",
                 r->m.nhosts, transfer_ms(one), one->m.nranks, transfer_ms(r), r->m.nranks, r->m.nhosts, bw1, bw);
        return 1;
    }
    return 0;
}

/* Fixed global batch: what restoring the baseline's per-GPU work would
 * give per sample.  Each GPU's compute grows k-fold back to the
 * baseline's, collectives stay: T' = T + compute (k - 1) for k times the
 * samples. */
static double small_batch_gain(const struct run *r, const struct run *b)
{
    double c = compute_ms(r), k = c > 0 ? compute_ms(b) / c : 0, t = r->step_s * 1e3;
    if (k <= 1 || t <= 0)
        return 0;
    double gain = 1 - (t + c * (k - 1)) / (k * t);
    return gain > 0 ? gain : 0;
}

static int series_findings(struct run *runs, int n, int base, struct cmp_finding *f)
{
    int nf = 0;
    const struct run *b = &runs[base];
    const struct run *small = NULL; /* the most GPUs whose per-GPU batch shrank */
    for (int i = 0; i < n; i++) {
        const struct run *r = &runs[i];
        if (i != base && r->m.nranks > b->m.nranks && compute_ms(r) < SMALL_BATCH_COMPUTE_DROP * compute_ms(b) &&
            coll_ms(r) >= SMALL_BATCH_COLL_KEPT * coll_ms(b) && (!small || r->m.nranks > small->m.nranks))
            small = r;
    }
    if (small) {
        double gain = small_batch_gain(small, b);
        f[nf] = (struct cmp_finding){SP_CAUSE_SMALL_BATCH, gain, ""};
        snprintf(f[nf++].evidence, sizeof f[0].evidence,
                 "compute per step fell from %.2f ms on %d GPUs to %.2f ms on %d while collective time "
                 "went from %.2f to %.2f ms: each GPU's share of the batch shrank; at the baseline's "
                 "per-GPU batch each sample would take %.0f%% less time",
                 compute_ms(b), b->m.nranks, compute_ms(small), small->m.nranks, coll_ms(b), coll_ms(small),
                 100 * gain);
    }
    double best_single = 0;
    for (int i = 0; i < n; i++)
        if (runs[i].m.nhosts == 1 && runs[i].scaling != SCALING_AB && runs[i].eff > best_single)
            best_single = runs[i].eff;
    for (int i = 0; i < n && best_single > 0; i++) {
        const struct run *r = &runs[i];
        if (r->m.nhosts > 1 && r->eff < CROSS_NODE_EFF_DROP * best_single) {
            f[nf] = (struct cmp_finding){SP_CAUSE_CROSS_NODE, 1 - r->eff / best_single, ""};
            snprintf(f[nf++].evidence, sizeof f[0].evidence,
                     "on one host scaling efficiency reaches %.0f%%, on %d hosts (%d GPUs) %.0f%%; collective "
                     "transfer is %.2f ms per step there",
                     100 * best_single, r->m.nhosts, r->m.nranks, 100 * r->eff, r->cat_ms[SP_CAT_COLL_TRANSFER]);
            break;
        }
    }
    if (!nf || f[nf - 1].cause != SP_CAUSE_CROSS_NODE)
        nf += link_finding(runs, n, &f[nf]);
    const struct run *worst = NULL;
    for (int i = 0; i < n; i++)
        if (runs[i].scaling != SCALING_AB && runs[i].eff < SCALING_POOR && (!worst || runs[i].eff < worst->eff))
            worst = &runs[i];
    if (worst) {
        f[nf] = (struct cmp_finding){SP_CAUSE_SCALING, 1 - worst->eff, ""};
        snprintf(f[nf++].evidence, sizeof f[0].evidence, "speedup shrinks as GPUs increase: %d GPUs reach %.0f%% "
                 "scaling efficiency (%s scaling)", worst->m.nranks, 100 * worst->eff,
                 worst->scaling == SCALING_STRONG ? "strong" : "weak");
    }
    return nf;
}

/* Which kind of comparison a run is against the baseline (see enum
 * scaling), and its efficiency: weak, throughput per GPU against the
 * baseline's; strong, the speedup against the growth in GPUs; A/B, the
 * speedup alone. */
static void judge_scaling(struct run *r, const struct run *b, double samples)
{
    double nr = r->m.nranks, nb = b->m.nranks;
    if (r->m.nranks == b->m.nranks) {
        r->scaling = SCALING_AB;
    } else {
        double ratio = compute_ms(b) > 0 ? compute_ms(r) / compute_ms(b) : 1;
        double d_weak = ratio > 1 ? ratio - 1 : 1 - ratio, d_strong = ratio - nb / nr;
        d_strong = d_strong < 0 ? -d_strong : d_strong;
        r->scaling = d_strong < STRONG_NEARER * d_weak ? SCALING_STRONG : SCALING_WEAK;
    }
    /* global throughput: a strong-scaled run processes the baseline's batch per step */
    double gpus_of_work = r->scaling == SCALING_STRONG ? nb : nr;
    r->thr = gpus_of_work / r->step_s * (samples > 0 ? samples : 1);
    double base_thr = nb / b->step_s * (samples > 0 ? samples : 1);
    r->eff = r->scaling == SCALING_AB ? r->thr / base_thr : (r->thr / base_thr) / (nr / nb);
}

static int cmp_gain(const void *a, const void *b)
{
    const struct cmp_finding *x = a, *y = b;
    return (x->gain < y->gain) - (x->gain > y->gain);
}

static void lost_text(const struct run *r, const struct run *b, char *out, size_t len)
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

/* A run's warnings are its report's business; compare says there are some. */
static void text_run_notes(const struct run *runs, int n, int cols)
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

int cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'J'}, {"samples-per-step", required_argument, NULL, 'S'},
        {"price-per-gpu-hour", required_argument, NULL, 'P'}, {"skip", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    struct sp_model_opts o;
    sp_model_opts_default(&o);
    o.progress = 1;
    int json = 0, c;
    double price = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'J': json = 1; break;
        case 'S':
            if (sp_opt_double(VERB, "--samples-per-step", optarg, 1e-9, 1e12, &o.samples_per_step) < 0)
                return SP_EXIT_USAGE;
            break;
        case 'P':
            if (sp_opt_double(VERB, "--price-per-gpu-hour", optarg, 0, 1e9, &price) < 0)
                return SP_EXIT_USAGE;
            break;
        case 'k':
            if (sp_opt_int(VERB, "--skip", optarg, 0, 1000000, &o.skip) < 0)
                return SP_EXIT_USAGE;
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        default:
            return sp_usage_error(VERB, "option %s is unknown or needs a value", argv[optind - 1]);
        }
    }
    int n = argc - optind;
    if (n < 2)
        return sp_usage_error(VERB, "%s: compare needs at least two runs (scaleprof report DIR reads one)",
                              n ? argv[optind] : "no run given");
    if (n > MAX_RUNS)
        return sp_usage_error(VERB, "%d runs given, at most %d can be compared at once", n, MAX_RUNS);
    struct run *runs = calloc((size_t)n, sizeof *runs);
    if (!runs)
        return 1;
    int failed = 0, base = 0;
    for (int i = 0; i < n; i++) {
        struct run *r = &runs[i];
        r->dir = argv[optind + i];
        if (sp_model_analyze(r->dir, &o, &r->m) < 0 || r->m.step_mean_ms <= 0 || !r->m.gpu_events) {
            const char *why = r->m.nwarnings ? r->m.warnings[0] : "no step time measured";
            if (r->m.nranks && !r->m.gpu_events)
                why = "no GPU activity recorded (a CPU-only job, or CUDA work the recorder did not see)";
            fprintf(stderr, "scaleprof compare: %s: nothing to analyze: %s\n", r->dir, why);
            failed = 1;
            continue;
        }
        r->step_s = r->m.step_mean_ms / 1e3;
        for (int k = 0; k < SP_CAT_N; k++)
            r->cat_ms[k] = r->m.breakdown[k] * r->m.step_mean_ms;
        if (r->m.nranks < runs[base].m.nranks || runs[base].step_s <= 0)
            base = i;
    }
    if (failed) {
        for (int i = 0; i < n; i++)
            sp_model_free(&runs[i].m);
        free(runs);
        return 1;
    }
    const struct run *b = &runs[base];
    for (int i = 0; i < n; i++)
        judge_scaling(&runs[i], b, o.samples_per_step);
    runs[base].scaling = SCALING_WEAK; /* the baseline against itself */
    runs[base].eff = 1;
    struct cmp_finding f[MAX_CMP_FINDINGS + 1];
    int nf = series_findings(runs, n, base, f);
    qsort(f, (size_t)nf, sizeof f[0], cmp_gain);
    const char *unit = o.samples_per_step > 0 ? "samples/s" : "GPU-steps/s";
    if (json) {
        struct sp_json j;
        sp_json_init(&j, stdout);
        sp_json_open(&j, NULL, '{');
        sp_json_int(&j, "baseline", base);
        sp_json_str(&j, "throughput_unit", unit);
        sp_json_open(&j, "runs", '[');
        for (int i = 0; i < n; i++) {
            const struct run *r = &runs[i];
            sp_json_open(&j, NULL, '{');
            sp_json_str(&j, "dir", r->dir);
            sp_json_int(&j, "gpus", r->m.nranks);
            sp_json_int(&j, "hosts", r->m.nhosts);
            sp_json_num(&j, "step_ms", r->m.step_mean_ms);
            sp_json_num(&j, "steps_per_s", 1 / r->step_s);
            sp_json_num(&j, "throughput", r->thr);
            sp_json_num(&j, "efficiency", r->eff);
            sp_json_str(&j, "scaling", i == base ? "baseline" : scaling_name[r->scaling]);
            if (price > 0 && o.samples_per_step > 0)
                sp_json_num(&j, "cost_per_1k_samples", price * r->m.nranks * r->step_s / SECONDS_PER_HOUR /
                                                           (o.samples_per_step * r->m.nranks) * 1000);
            sp_json_open(&j, "lost_ms", '{');
            for (int k = 0; k < SP_CAT_N; k++)
                sp_json_num(&j, sp_model_cat_name(k), r->cat_ms[k] - b->cat_ms[k]);
            sp_json_close(&j, '}');
            sp_json_close(&j, '}');
        }
        sp_json_close(&j, ']');
        const struct run *last = &runs[0];
        for (int i = 1; i < n; i++)
            if (runs[i].m.nranks > last->m.nranks)
                last = &runs[i];
        sp_json_open(&j, "lost", '{');
        for (int k = 0; k < SP_CAT_N; k++)
            sp_json_num(&j, sp_model_cat_name(k), last->cat_ms[k] - b->cat_ms[k]);
        sp_json_close(&j, '}');
        sp_json_open(&j, "findings", '[');
        for (int i = 0; i < nf; i++) {
            const struct sp_cause_info *ci = sp_cause_info(f[i].cause);
            sp_json_open(&j, NULL, '{');
            sp_json_str(&j, "cause", ci->name);
            sp_json_str(&j, "severity", sp_model_severity_name(sp_severity_of_gain(f[i].gain)));
            sp_json_num(&j, "gain", f[i].gain);
            sp_json_str(&j, "evidence", f[i].evidence);
            sp_json_str(&j, "first_try", ci->first_try);
            sp_json_close(&j, '}');
        }
        sp_json_close(&j, ']');
        sp_json_close(&j, '}');
    } else {
        int cols = sp_text_columns();
        printf("%-5s %-5s %9s %14s %10s  %s\n", "GPUs", "hosts", "ms/step", unit, "efficiency", "run");
        for (int i = 0; i < n; i++) {
            const struct run *r = &runs[i];
            printf("%-5d %-5d %9.2f %14.1f %9.0f%%  %s%s\n", r->m.nranks, r->m.nhosts, r->m.step_mean_ms, r->thr,
                   100 * r->eff, r->dir,
                   i == base ? " (baseline)" : r->scaling == SCALING_STRONG ? " (fixed global batch)"
                                             : r->scaling == SCALING_AB   ? " (same GPUs: A/B)" : "");
        }
        int strong = 0, ab = 0, super = 0;
        for (int i = 0; i < n; i++) {
            strong |= i != base && runs[i].scaling == SCALING_STRONG;
            ab |= i != base && runs[i].scaling == SCALING_AB;
            super |= i != base && runs[i].scaling != SCALING_AB && runs[i].eff > 1.005;
        }
        printf("  ");
        sp_text_wrapped("efficiency: the speedup over the baseline divided by the growth in GPUs "
                        "(100%: N times the GPUs give N times the throughput)", 2, 2, cols);
        if (strong) {
            printf("  ");
            sp_text_wrapped("fixed global batch: compute per GPU shrank as 1/N, so a step does the baseline's "
                            "work and efficiency is its speedup divided by the growth in GPUs", 2, 2, cols);
        }
        if (ab) {
            printf("  ");
            sp_text_wrapped("same GPU count as the baseline: an A/B comparison; efficiency is the throughput "
                            "ratio (above 100%: faster than the baseline)", 2, 2, cols);
        }
        if (super) {
            printf("  ");
            sp_text_wrapped("above 100%: more throughput per GPU than the baseline, e.g. a per-GPU batch that "
                            "fits caches better, or a baseline slowed by something the larger run avoids; "
                            "compare the runs' reports", 2, 2, cols);
        }
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
                const struct run *r = &runs[i];
                double speed = b->step_s / r->step_s * 1; /* steps per time, same per-GPU batch */
                double gthr = speed * r->m.nranks / b->m.nranks;
                double price_x = (double)r->m.nranks / b->m.nranks;
                char text[512];
                int w;
                if (o.samples_per_step > 0)
                    w = snprintf(text, sizeof text, "%.3g per 1k samples; ",
                                 price * r->step_s / SECONDS_PER_HOUR / o.samples_per_step * 1000);
                else
                    w = snprintf(text, sizeof text, "%.3g per step; ",
                                 price * r->m.nranks * r->step_s / SECONDS_PER_HOUR);
                if (w > 0 && (size_t)w < sizeof text)
                    snprintf(text + w, sizeof text - (size_t)w,
                             "%.1fx the speed at %.0fx the price per hour: each sample costs %.2fx", gthr, price_x,
                             price_x / gthr);
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
    for (int i = 0; i < n; i++)
        sp_model_free(&runs[i].m);
    free(runs);
    return 0;
}
