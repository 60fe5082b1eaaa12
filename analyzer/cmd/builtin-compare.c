/*
 * builtin-compare.c - `scaleprof compare DIR1 DIR2 ...`: scaling efficiency
 * across runs of the same job on different GPU counts, where the lost time
 * went, and what each sample costs.
 *
 * Option parsing only: compare.c analyzes the runs and computes the
 * comparison (baseline, efficiency, lost time, findings), which `scaleprof
 * html` draws from the same functions; output/compare_out.c prints it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "compare.h"
#include "compare_out.h"
#include "model.h"
#include "opt.h"
#include "seen.h"
#include "text.h"

#define VERB "compare"
#define MAX_RUNS 32

/* The option table as --help prints it, one line a line. */
// clang-format off
static const char usage_text[] =
    "usage: scaleprof compare DIR1 DIR2 [DIR...] [options]\n"
    "\n"
    "Scaling efficiency across runs (same job, different GPU counts), where\n"
    "the lost step time went, and cost per sample.\n"
    "\n"
    "  --json                  print the comparison as JSON\n"
    "  --samples-per-step S    samples per GPU per step, the same in every run\n"
    "                          (a fixed per-GPU batch): samples/s and cost\n"
    "  --global-batch S        samples per step over all GPUs, the same in every\n"
    "                          run (a fixed global batch); instead of the above\n"
    "  --price-per-gpu-hour P  price of one GPU hour, for cost per 1k samples\n"
    SP_MODEL_OPTIONS_HELP
    SP_COLOR_HELP
    "  -h, --help              this text\n"
    "\n"
    "The model's options (--run to --threads) apply to every run: --steps A:B\n"
    "compares the same steps of each, which each run must have.\n"
    "\n"
    "Without a batch the kind of scaling is inferred from compute per GPU and\n"
    "the table gives the speedup only.  Columns: man scaleprof-compare.\n"
    "\n"
    "Exit status: 0 comparison printed, 1 a run had nothing analyzable, 2 usage.\n";
// clang-format on

int cmd_compare(int argc, char **argv)
{
    static const struct option opts[] = {
        SP_OPT_JSON, SP_OPT_SAMPLES_PER_STEP, SP_OPT_GLOBAL_BATCH, SP_OPT_PRICE_PER_GPU_HOUR, SP_OPT_HELP_END};
    struct sp_model_opts o;
    int json = 0, c;
    struct sp_opts p = sp_opts_model(VERB, opts, &o);
    while ((c = sp_opts_next(&p, argc, argv, "h")) != -1) {
        switch (c) {
        case 'J': json = 1; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: return SP_EXIT_USAGE; /* said by sp_opts_next */
        }
    }
    double price = p.shared.price;
    struct sp_cmp_batch batch = {0, p.shared.global_batch};
    int n = argc - optind;
    batch.per_gpu = o.samples_per_step;
    if (batch.per_gpu > 0 && batch.global > 0)
        return sp_usage_error(VERB, "--samples-per-step (per GPU) and --global-batch (over all GPUs) say the "
                                    "same thing two ways: give one of them");
    if (n < 2)
        return sp_usage_error(VERB, "%s: compare needs at least two runs (scaleprof report DIR reads one)",
                              n ? argv[optind] : "no run given");
    if (n > MAX_RUNS)
        return sp_usage_error(VERB, "%d runs given, at most %d can be compared at once", n, MAX_RUNS);
    struct sp_cmp cmp;
    if (sp_compare_runs(argv + optind, n, &o, &batch, &cmp) < 0) {
        int rc = 1;
        for (int i = 0; i < cmp.n; i++)
            if (!cmp.runs[i].ok) {
                const struct sp_model *m = &cmp.runs[i].m;
                if (m->nranks && sp_seen_no_gpu(VERB, m, "efficiency and cost are per GPU, so there "
                                                         "is nothing to compare"))
                    continue;
                if (m->done >= SP_STAGE_STEPS && sp_opt_steps_missing(VERB, m)) {
                    rc = SP_EXIT_USAGE; /* as report's: a --steps the run does not have */
                    continue;
                }
                const char *why = m->nwarnings ? m->warnings[0] : "no step time measured";
                fprintf(stderr, "scaleprof compare: %s: nothing to analyze: %s\n", cmp.runs[i].dir, why);
            }
        sp_compare_free(&cmp);
        return rc;
    }
    if (json)
        sp_compare_json(&cmp, price);
    else
        sp_compare_text(&cmp, price);
    sp_compare_free(&cmp);
    return 0;
}
