/*
 * builtin-export.c - `scaleprof export DIR -o FILE`: the timeline of a
 * trace set for ui.perfetto.dev (and, as JSON, chrome://tracing), with
 * the analysis on it (wait and transfer of every collective, the late
 * rank, steps, findings, and with --whatif the replay with one cause
 * removed).
 *
 * Option parsing only: export_file.c opens FILE (gzip'd when it ends in
 * .gz) and says what went into it, export_perfetto.c writes Perfetto's
 * protobuf trace (the default), export_trace.c the JSON (--format json);
 * the model gives the numbers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtin.h"
#include "export_trace.h"
#include "model.h"
#include "model_summary.h"
#include "opt.h"
#include "parse.h"
#include "seen.h"
#include "text.h"

#define VERB "export"
#define USAGE_COLUMN 26 /* where usage_text's option descriptions start */
#define USAGE_WIDTH 78  /* and the column they stay within */

/* The option table as --help prints it, one line a line, in two parts
 * around the causes --whatif takes. */
// clang-format off
static const char usage_text[] =
    "usage: scaleprof export DIR -o FILE [options]\n"
    "\n"
    "Writes the timeline of the traces under DIR as a Perfetto trace (protobuf,\n"
    "for ui.perfetto.dev) or as Chrome Trace Event JSON: a process group per\n"
    "rank with its steps, NCCL ops split into wait and transfer (arrows from\n"
    "the last rank to arrive), GPU streams, host threads, file I/O and waits,\n"
    "loader workers, and the findings.  Past 64 ranks x 100 steps the Perfetto\n"
    "trace is a summary: every rank's steps with their categories, and the\n"
    "ranks the findings name in full.  FILE ending in .gz is gzip-compressed;\n"
    "- is standard output.\n"
    "\n"
    "  -o, --output FILE       where to write the timeline (required)\n"
    "  --format FMT            perfetto (default, e.g. FILE.pftrace) or json (the\n"
    "                          Chrome Trace Event format, always in full; the\n"
    "                          default when FILE ends in .json or .json.gz)\n"
    "  --full                  every rank in full detail, whatever the size\n"
    "  --summary               the summary timeline, whatever the size\n"
    "  --ranks LIST            only these ranks, e.g. 0,3,8-15\n"
    "  --whatif CAUSE          beside each rank, the replayed timeline with CAUSE\n";
/* (the causes --whatif takes are the cause table's: whatif_usage) */
static const char usage_tail[] =
    SP_MODEL_OPTIONS_HELP
    SP_COLOR_HELP
    "  -h, --help              this text\n"
    "\n"
    "With --steps A:B the timeline holds those steps only, the ones analyzed.\n"
    "\n"
    "Exit status: 0 written, 1 nothing analyzable or the file could not be\n"
    "written, 2 usage.\n";
// clang-format on

/* The causes --whatif takes, in the cause table's order (sp_export_whatif_cause),
 * wrapped in the option column of usage_text. */
static void whatif_usage(void)
{
    char names[512], text[600];
    sp_export_whatif_cause(NULL, names, sizeof names);
    snprintf(text, sizeof text, "removed (%s; none: replayed as is)", names);
    printf("%*s", USAGE_COLUMN, "");
    sp_text_wrapped(text, USAGE_COLUMN, USAGE_COLUMN, USAGE_WIDTH);
}

int cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {
        SP_OPT_OUTPUT,
        {"ranks", required_argument, NULL, 'R'},
        {"whatif", required_argument, NULL, 'W'},
        {"format", required_argument, NULL, 'F'},
        {"full", no_argument, NULL, 'U'},
        {"summary", no_argument, NULL, 'S'},
        SP_OPT_HELP_END,
    };
    struct sp_model_opts o;
    struct sp_export_opts eo = {.step_first = -1, .step_last = -1, .whatif = -1};
    int json = -1; /* -1: from FILE's name */
    const char *path = NULL;
    long long *ranks = NULL;
    int c, rc = SP_EXIT_USAGE;
    struct sp_opts p = sp_opts_model(VERB, opts, &o);
    while ((c = sp_opts_next(&p, argc, argv, "ho:")) != -1) {
        switch (c) {
        case 'o':
            path = optarg;
            break;
        case 'R': {
            char err[256];
            size_t n;
            free(ranks);
            ranks = NULL;
            if (sp_parse_list(optarg, 0, INT32_MAX, &ranks, &n, err, sizeof err) < 0) {
                rc = sp_usage_error(VERB, "--ranks: %s", err);
                goto out;
            }
            eo.ranks = ranks;
            eo.nranks = n;
            break;
        }
        case 'W': {
            char names[512];
            eo.whatif = sp_export_whatif_cause(optarg, names, sizeof names);
            if (eo.whatif < 0) {
                rc = sp_usage_error(
                    VERB, "--whatif: \"%s\" is not a cause the replay can remove (%s, or none)",
                    optarg, names);
                goto out;
            }
            break;
        }
        case 'F':
            if (!strcmp(optarg, "json") || !strcmp(optarg, "perfetto")) {
                json = optarg[0] == 'j';
                break;
            }
            rc = sp_usage_error(VERB, "--format: \"%s\" is not a format (perfetto or json)", optarg);
            goto out;
        case 'U':
        case 'S':
            if (eo.detail && eo.detail != (c == 'U' ? SP_EXPORT_FULL : SP_EXPORT_SUMMARY)) {
                rc = sp_usage_error(VERB, "--full and --summary exclude each other");
                goto out;
            }
            eo.detail = c == 'U' ? SP_EXPORT_FULL : SP_EXPORT_SUMMARY;
            break;
        case 'h':
            fputs(usage_text, stdout);
            whatif_usage();
            fputs(usage_tail, stdout);
            rc = 0;
            goto out;
        default: /* said by sp_opts_next */
            goto out;
        }
    }
    if (o.step_first >= 0) { /* the timeline's steps are the analyzed ones, its end included */
        eo.step_first = o.step_first;
        eo.step_last = o.step_last - 1;
    }
    if (optind == argc) {
        rc = sp_usage_error(VERB, "no trace directory given (scaleprof export DIR -o FILE)");
        goto out;
    }
    if (optind != argc - 1) {
        rc = sp_usage_error(VERB, "one trace directory expected, got %d", argc - optind);
        goto out;
    }
    if (json < 0) json = path && sp_export_path_is_json(path);
    if (json && eo.detail) {
        rc = sp_usage_error(VERB, "--%s: the JSON timeline is always in full (the summary is "
                                  "Perfetto's)",
                            eo.detail == SP_EXPORT_FULL ? "full" : "summary");
        goto out;
    }
    if (!path) {
        rc = sp_usage_error(VERB, "no output file given (-o FILE; FILE.gz to compress)");
        goto out;
    }
    const char *dir = argv[optind];
    if (sp_summary_is_dir(dir)) { /* scaleprof reduce's: no events to draw */
        fprintf(stderr, "scaleprof export: %s holds summaries (scaleprof reduce): the timeline needs the "
                        "events themselves; export the traces of the hosts or ranks to look at\n",
                dir);
        rc = 1;
        goto out;
    }
    struct sp_model m;
    int mrc = sp_model_open(dir, &o, &m);
    if (mrc == 0 && eo.whatif >= 0 &&
        sp_seen_no_gpu(VERB, &m, "the what-if replay is of GPU time, so there is nothing to replay")) {
        sp_model_free(&m);
        rc = 1;
        goto out;
    }
    /* the model keeps the counterfactual's nodes for the timeline, so
     * that the output only draws them */
    if (mrc == 0 && eo.whatif >= 0) sp_model_keep_whatif(&m, eo.whatif);
    if (mrc == 0)
        eo.host_only = sp_seen_no_gpu(VERB, &m, "the timeline holds the host's events and steps only: no "
                                                "breakdown, no finding");
    if (mrc == 0) mrc = sp_model_run(&m, SP_STAGE_STEPS);
    if (mrc == 0 && sp_opt_steps_missing(VERB, &m)) {
        sp_model_free(&m);
        goto out;
    }
    if (mrc == 0 && eo.ranks) {
        size_t found = 0;
        for (size_t i = 0; i < eo.nranks; i++)
            for (int k = 0; k < m.nranks; k++)
                found += m.ranks[k].rank == eo.ranks[i];
        if (!found) {
            fprintf(stderr, "scaleprof export: --ranks: none of these ranks is in %s (it has %d)\n",
                    dir, m.nranks);
            sp_model_free(&m);
            goto out;
        }
    }
    if (mrc == 0) mrc = sp_model_run(&m, SP_STAGE_FINDINGS);
    if (mrc < 0 && m.nranks == 0) {
        for (int i = 0; i < m.nwarnings; i++)
            fprintf(stderr, "scaleprof export: %s\n", m.warnings[i]);
        fprintf(stderr, "scaleprof export: nothing to export in %s\n", dir);
        sp_model_free(&m);
        rc = 1;
        goto out;
    }
    struct sp_export_done done;
    if (sp_export_write(&m, &eo, dir, path, json, &done) < 0) {
        rc = 1;
    } else {
        sp_model_warn_all(&m, &done.st.warnings); /* what the timeline left out, counted as the model's */
        rc = sp_export_say(&m, &eo, path, json, &done);
        sp_warn_list_free(&done.st.warnings);
    }
    sp_model_free(&m);
out:
    free(ranks);
    return rc;
}
