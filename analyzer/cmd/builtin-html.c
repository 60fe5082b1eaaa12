/*
 * builtin-html.c - `scaleprof html DIR -o report.html`: the report as one
 * self-contained page with charts; with several directories, the
 * comparison (efficiency against GPU count, lost time, cost per sample).
 *
 * Option parsing and output only: the model and compare.c compute,
 * html_report.c draws.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtin.h"
#include "compare.h"
#include "html_report.h"
#include "kernels.h"
#include "model.h"
#include "model_summary.h"
#include "opt.h"
#include "seen.h"

#define VERB "html"
#define MAX_RUNS 32

/* The option table as --help prints it, one line a line. */
// clang-format off
static const char usage_text[] =
    "usage: scaleprof html DIR -o FILE [options]\n"
    "       scaleprof html DIR1 DIR2 [DIR...] -o FILE [options]\n"
    "\n"
    "Writes the report of the traces under DIR as one self-contained HTML page\n"
    "(summary, findings, charts as inline SVG; no script, nothing fetched).\n"
    "With several directories, the comparison of the runs instead.\n"
    "\n"
    "  -o, --output FILE       where to write the page (required; - for stdout)\n"
    "  --samples-per-step S    samples per GPU per step (samples/s, cost)\n"
    "  --kernels [N]           one DIR: also the top N kernels by GPU time (default\n"
    "                          10), as scaleprof report --kernels\n"
    "  --global-batch S        several DIRs: samples per step over all GPUs, the\n"
    "                          same in every run (instead of --samples-per-step)\n"
    "  --price-per-gpu-hour P  price of one GPU hour, for cost per 1k samples\n"
    SP_MODEL_OPTIONS_HELP
    SP_COLOR_HELP
    "  -h, --help              this text\n"
    "\n"
    "With several DIRs the model's options (--run to --threads) apply to every\n"
    "run, as in scaleprof compare.\n"
    "\n"
    "Exit status: 0 written, 1 nothing analyzable or the file could not be\n"
    "written, 2 usage.\n";
// clang-format on

static FILE *open_output(const char *path)
{
    return strcmp(path, "-") ? fopen(path, "w") : stdout;
}

static int finish(FILE *f, const char *path, int wrc)
{
    int crc = f == stdout ? fflush(f) : fclose(f);
    if (wrc < 0 || crc != 0) {
        fprintf(stderr, "scaleprof html: %s: could not be written (%s)\n", path, strerror(errno));
        if (f != stdout) unlink(path);
        return 1;
    }
    if (f != stdout) fprintf(stderr, "scaleprof html: wrote %s\n", path);
    return 0;
}

static int one_run(const char *dir, const struct sp_model_opts *o, const char *path, int top_kernels)
{
    struct sp_model m;
    int rc = sp_model_open(dir, o, &m);
    if (rc == 0 && sp_seen_no_gpu(VERB, &m, "the page is about GPU step time, so none was written")) {
        sp_model_free(&m);
        return 1;
    }
    if (rc == 0) rc = sp_model_run(&m, SP_STAGE_STEPS);
    if (rc == 0 && sp_opt_steps_missing(VERB, &m)) {
        sp_model_free(&m);
        return SP_EXIT_USAGE;
    }
    if (rc == 0) rc = sp_model_run(&m, SP_STAGE_FINDINGS);
    if (rc < 0) {
        sp_opt_nothing_to_analyze(VERB, &m, dir);
        sp_model_free(&m);
        return 1;
    }
    if (top_kernels && sp_model_from_summaries(&m)) {
        sp_opt_kernels_need_traces(VERB);
        sp_model_free(&m);
        return 1;
    }
    struct sp_kernels k;
    memset(&k, 0, sizeof k);
    int krc = top_kernels ? sp_kernels_analyze(&m, &k) : 0;
    sp_model_warn_all(&m, &k.warnings);
    if (krc < 0) {
        fprintf(stderr, "scaleprof html: the kernel view ran out of memory\n");
        sp_kernels_free(&k);
        sp_model_free(&m);
        return 1;
    }
    FILE *f = open_output(path);
    if (!f) {
        fprintf(stderr, "scaleprof html: %s: %s\n", path, strerror(errno));
        sp_kernels_free(&k);
        sp_model_free(&m);
        return 1;
    }
    rc = finish(f, path, sp_html_report(f, &m, top_kernels ? &k : NULL, top_kernels));
    sp_kernels_free(&k);
    sp_model_free(&m);
    return rc;
}

static int several_runs(char *const *dirs, int n, const struct sp_model_opts *o,
                        const struct sp_cmp_batch *batch, double price, const char *path)
{
    struct sp_cmp cmp;
    if (sp_compare_runs(dirs, n, o, batch, &cmp) < 0) {
        int rc = 1;
        for (int i = 0; i < cmp.n; i++) {
            const struct sp_model *m = &cmp.runs[i].m;
            if (cmp.runs[i].ok ||
                (m->nranks && sp_seen_no_gpu(VERB, m, "the comparison is per GPU, so no page was written")))
                continue;
            if (m->done >= SP_STAGE_STEPS && sp_opt_steps_missing(VERB, m))
                rc = SP_EXIT_USAGE; /* as one run's: a --steps the run does not have */
            else
                fprintf(stderr, "scaleprof html: %s: nothing to analyze\n", cmp.runs[i].dir);
        }
        sp_compare_free(&cmp);
        return rc;
    }
    FILE *f = open_output(path);
    if (!f) {
        fprintf(stderr, "scaleprof html: %s: %s\n", path, strerror(errno));
        sp_compare_free(&cmp);
        return 1;
    }
    int rc = finish(f, path, sp_html_compare(f, &cmp, price));
    sp_compare_free(&cmp);
    return rc;
}

int cmd_html(int argc, char **argv)
{
    static const struct option opts[] = {
        SP_OPT_OUTPUT, SP_OPT_SAMPLES_PER_STEP, SP_OPT_PRICE_PER_GPU_HOUR, SP_OPT_GLOBAL_BATCH,
        SP_OPT_KERNELS, SP_OPT_HELP_END};
    struct sp_model_opts o;
    const char *path = NULL;
    int c;
    char kernels_arg[64];
    argc = sp_opt_join_number(argc, argv, "--kernels", kernels_arg, sizeof kernels_arg);
    struct sp_opts p = sp_opts_model(VERB, opts, &o);
    while ((c = sp_opts_next(&p, argc, argv, "ho:")) != -1) {
        switch (c) {
        case 'o': path = optarg; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: return SP_EXIT_USAGE; /* said by sp_opts_next */
        }
    }
    int top_kernels = p.shared.top_kernels;
    struct sp_cmp_batch batch = {0, p.shared.global_batch};
    int n = argc - optind;
    if (n == 0)
        return sp_usage_error(VERB, "no trace directory given (scaleprof html DIR -o FILE)");
    if (!path) return sp_usage_error(VERB, "no output file given (-o FILE)");
    if (n > MAX_RUNS)
        return sp_usage_error(VERB, "%d runs given, at most %d can be compared at once", n,
                              MAX_RUNS);
    batch.per_gpu = o.samples_per_step;
    if (batch.per_gpu > 0 && batch.global > 0)
        return sp_usage_error(VERB, "--samples-per-step (per GPU) and --global-batch (over all GPUs) "
                                    "say the same thing two ways: give one of them");
    if (n == 1 && batch.global > 0)
        return sp_usage_error(VERB, "--global-batch is for a comparison; one run takes "
                                    "--samples-per-step (samples per GPU per step)");
    if (n > 1 && top_kernels)
        return sp_usage_error(VERB, "--kernels is the kernel view of one run (scaleprof html DIR --kernels)");
    if (n == 1) return one_run(argv[optind], &o, path, top_kernels);
    return several_runs(argv + optind, n, &o, &batch, p.shared.price, path);
}
