/*
 * builtin-report.c - `scaleprof report DIR`: one screen that says where each
 * GPU's step time went, which collectives cost what, who straggles, and
 * what to fix first; or the same numbers as JSON (docs/report-json.md).
 *
 * Option parsing and the order of things only: the numbers come from the
 * model and its analyses, the text, JSON and CSV from output/report_text.c
 * and report_json.c (report_out.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtin.h"
#include "ended.h"
#include "hang.h"
#include "host.h"
#include "host_report.h"
#include "seen.h"
#include "kernels.h"
#include "opt.h"
#include "json.h"
#include "text.h"
#include "model.h"
#include "model_summary.h"
#include "report_out.h"
#include "sprof.h"

#define VERB "report"

/* The option table as --help prints it, one line a line. */
// clang-format off
static const char usage_text[] =
    "usage: scaleprof report DIR [options]\n"
    "\n"
    "Per-step breakdown per GPU, collectives, stragglers and findings for the\n"
    "traces under DIR (searched recursively).  First, a hang, and the ranks that\n"
    "did not end well: signal or exit status (scaleprof run's DIR/exit-status.HOST),\n"
    "or a trace that ended without closing, with their last recorded activity.\n"
    "\n"
    "  --json                  print the report as JSON (docs/report-json.md)\n"
    "  --per-step              with --json: each analyzed step of each rank too\n"
    "                          (steps_detail: step time and the seven categories)\n"
    "  --csv                   print that per-step table as CSV instead\n"
    "  --rank R                show only rank R in the per-rank view and breakdown\n"
    "                          (the analysis and its findings stay over all ranks)\n"
    SP_MODEL_OPTIONS_HELP
    "  --samples-per-step S    samples per GPU per step, to print samples/s\n"
    "  --kernels [N]           also the top N kernels by GPU time over the analyzed\n"
    "                          steps (default 10): calls, mean/p50/p99, share, per\n"
    "                          rank, and the rank where each runs slowest\n"
    SP_COLOR_HELP
    "  -h, --help              this text\n"
    "\n"
    "On a terminal the bars and text fit its width (COLUMNS, else the window\n"
    "size); into a pipe or file the layout is fixed (bars of 50 characters).\n"
    "\n"
    "Exit status: 0 report printed, 1 nothing analyzable, 2 usage.\n";
// clang-format on

/* The options the text above describes (the model's are added by sp_opts_model). */
static const struct option report_options[] = {
    SP_OPT_JSON,
    {"rank", required_argument, NULL, 'r'},
    {"per-step", no_argument, NULL, 'P'},
    {"csv", no_argument, NULL, 'V'},
    SP_OPT_SAMPLES_PER_STEP,
    SP_OPT_KERNELS,
    SP_OPT_HELP_END,
};

static int has_rank(const struct sp_model *m, int rank)
{
    for (int i = 0; i < m->nranks; i++)
        if (m->ranks[i].rank == rank)
            return 1;
    return 0;
}

/* "0-3", "0,2,5", shortened with "..." */
static void rank_list(const struct sp_model *m, char *out, size_t len)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < m->nranks && used + 16 < len; i++) {
        int j = i;
        while (j + 1 < m->nranks && m->ranks[j + 1].rank == m->ranks[j].rank + 1)
            j++;
        int w = j > i ? snprintf(out + used, len - used, "%s%d-%d", used ? "," : "", m->ranks[i].rank, m->ranks[j].rank)
                      : snprintf(out + used, len - used, "%s%d", used ? "," : "", m->ranks[i].rank);
        used += (size_t)w;
        i = j;
        if (used + 16 >= len && i + 1 < m->nranks)
            snprintf(out + used, len - used, ",...");
    }
}

/* A job with no GPU record: the host-side view (analyses/host.c) in
 * place of the GPU breakdown, labelled as such. */
static int host_report(struct sp_model *m, int json, int csv)
{
    if (csv) {
        sp_seen_no_gpu(VERB, m, "the per-step table is per GPU, so there is none; without --csv the "
                                "report shows the host-side view");
        return 1;
    }
    sp_seen_no_gpu(VERB, m, "what follows is the host-side view (iterations, input wait, loader workers, "
                            "reads), with no GPU claim");
    struct sp_host h;
    int hrc = sp_host_analyze(m, &h);
    sp_model_warn_all(m, &h.warnings);
    if (hrc < 0) {
        fprintf(stderr, "scaleprof report: the host-side view ran out of memory\n");
        sp_host_free(&h);
        return 1;
    }
    if (json)
        sp_host_json(m, &h, SP_REPORT_SCHEMA_VERSION, SCALEPROF_VERSION);
    else
        sp_host_text(m, &h, sp_text_columns());
    sp_host_free(&h);
    return 0;
}

/* The one way out once the model is open: what was analyzed freed. */
static int report_end(struct sp_model *m, struct sp_hang *hang, struct sp_ended_set *ended, int rc)
{
    sp_hang_free(hang);
    sp_ended_free(ended);
    sp_model_free(m);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    struct sp_model_opts o;
    int view_rank = -1; /* --rank: what is printed, never what is analyzed (report_out.h) */
    char kernels_arg[64];
    argc = sp_opt_join_number(argc, argv, "--kernels", kernels_arg, sizeof kernels_arg);
    int json = 0, per_step = 0, csv = 0, color = sp_color_on(stdout), c;
    struct sp_opts p = sp_opts_model(VERB, report_options, &o);
    while ((c = sp_opts_next(&p, argc, argv, "h")) != -1) {
        switch (c) {
        case 'J': json = 1; break;
        case 'P': per_step = 1; break;
        case 'V': csv = 1; break;
        case 'r':
            if (sp_opt_int(VERB, "--rank", optarg, 0, INT32_MAX, &view_rank) < 0)
                return SP_EXIT_USAGE;
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: return SP_EXIT_USAGE; /* said by sp_opts_next */
        }
    }
    if (optind == argc)
        return sp_usage_error(VERB, "no trace directory given (scaleprof report DIR)");
    if (csv && json)
        return sp_usage_error(VERB, "--csv and --json are two formats; give one");
    if (per_step && !json && !csv)
        return sp_usage_error(VERB, "--per-step goes with --json (or use --csv for the same table)");
    if (optind != argc - 1)
        return sp_usage_error(VERB, "one trace directory expected, got %d (%s, %s%s); "
                                    "scaleprof compare takes several",
                              argc - optind, argv[optind],
                              argv[optind + 1], argc - optind > 2 ? ", ..." : "");
    const char *dir = argv[optind];
    int top_kernels = p.shared.top_kernels;
    struct sp_model m;
    int rc = sp_model_open(dir, &o, &m);
    if (rc == 0 && view_rank >= 0 && !has_rank(&m, view_rank)) {
        char list[256];
        rank_list(&m, list, sizeof list);
        fprintf(stderr, "scaleprof report: --rank %d: no such rank in %s (its traces hold rank%s %s)\n", view_rank,
                dir, m.nranks == 1 ? "" : "s", list);
        sp_model_free(&m);
        return SP_EXIT_USAGE;
    }
    /* a hang is looked for before the steps: it is what the report says first */
    struct sp_hang hang;
    struct sp_ended_set ended; /* the ranks that did not end well (ended.h) */
    struct sp_hang_opts ho;
    sp_hang_opts_default(&ho);
    memset(&hang, 0, sizeof hang);
    memset(&ended, 0, sizeof ended);
    if (rc == 0)
        sp_ended_analyze(&m, &ended);
    if (rc == 0) {
        int failed[64];
        sp_hang_analyze(&m, &ho, &hang);
        sp_model_warn_all(&m, &hang.warnings);
        sp_hang_mark_failed(&hang, failed, sp_ended_failed(&ended, failed, 64));
    }
    if (rc == 0 && !json && !csv)
        sp_report_text_hang(&m, &hang, sp_text_columns());
    if (rc == 0 && !json && !csv)
        sp_report_text_ended(&ended, sp_text_columns());
    /* a CPU-only job, or one whose GPU work was not seen: every number
     * below is about GPUs, so none is printed */
    if (rc == 0 && !sp_seen_gpu(&m)) {
        int hrc = host_report(&m, json, csv);
        return report_end(&m, &hang, &ended, hrc);
    }
    if (rc == 0)
        rc = sp_model_run(&m, SP_STAGE_STEPS);
    if (rc == 0 && sp_opt_steps_missing(VERB, &m)) {
        return report_end(&m, &hang, &ended, SP_EXIT_USAGE);
    }
    if (rc == 0)
        rc = sp_model_run(&m, SP_STAGE_FINDINGS);
    if (rc == 0 && m.step_mean_ms <= 0) {
        fprintf(stderr, "scaleprof report: %s: no step time was measured (the traces end before a step "
                        "completes: a job that crashed at start?)%s\n",
                dir,
                hang.nhung ? "; it appears hung: scaleprof hang DIR says where" : "");
        return report_end(&m, &hang, &ended, 1);
    }
    if (rc < 0) {
        sp_opt_nothing_to_analyze(VERB, &m, dir);
        return report_end(&m, &hang, &ended, 1);
    }
    struct sp_kernels kernels;
    memset(&kernels, 0, sizeof kernels);
    if (top_kernels && sp_model_from_summaries(&m)) {
        sp_opt_kernels_need_traces(VERB);
        return report_end(&m, &hang, &ended, 1);
    }
    int krc = top_kernels && !csv ? sp_kernels_analyze(&m, &kernels) : 0;
    sp_model_warn_all(&m, &kernels.warnings);
    if (krc < 0) {
        fprintf(stderr, "scaleprof report: the kernel view ran out of memory\n");
        sp_kernels_free(&kernels);
        return report_end(&m, &hang, &ended, 1);
    }
    if (csv)
        sp_report_csv(&m, view_rank);
    else if (json)
        sp_report_json(&m, view_rank, per_step, &hang, &ended, top_kernels ? &kernels : NULL, top_kernels);
    else
        sp_report_text(&m, view_rank, color, top_kernels ? &kernels : NULL, top_kernels);
    sp_kernels_free(&kernels);
    return report_end(&m, &hang, &ended, 0);
}
