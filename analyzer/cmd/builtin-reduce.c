/*
 * builtin-reduce.c - `scaleprof reduce DIR -o SUMMARY`: one process per
 * host, started by the job's own launcher (mpirun, srun, torchrun, pdsh),
 * reads the traces of its host and writes their summary: pass 1's file
 * records and, per rank, pass 2's step results (model_summary.h).  Every
 * verb that analyzes (report, compare, html, hang) reads SUMMARY as it
 * reads DIR, with the same answers.
 *
 * Which traces are a process's own, and how the processes meet once
 * through SUMMARY to agree on the steps: analyses/reduce.c.  Process I of
 * N comes from the launcher (OMPI_COMM_WORLD_RANK/SIZE, SLURM_PROCID/
 * NTASKS, RANK/WORLD_SIZE, PMI_RANK/SIZE) or --part/--parts.  This file
 * parses the options and calls sp_reduce_part.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "model.h"
#include "opt.h"
#include "reduce.h"

#define VERB "reduce"
#define MAX_PARTS 1000000
#define DEFAULT_WAIT_S 600

/* The option table as --help prints it, one line a line. */
// clang-format off
static const char usage_text[] =
    "usage: scaleprof reduce DIR -o SUMMARY [options]\n"
    "\n"
    "Run once per host through the job's launcher (mpirun, srun, torchrun,\n"
    "pdsh): each process reads its host's traces under DIR and writes\n"
    "SUMMARY/part-I.spsum, a few KB per rank and step.  Then report, compare,\n"
    "html and hang take SUMMARY in place of DIR and give the same answers.\n"
    "\n"
    "Process I of N (from OMPI_COMM_WORLD_RANK/SIZE, SLURM_PROCID/NTASKS,\n"
    "RANK/WORLD_SIZE or PMI_RANK/SIZE) reads DIR's host subdirectories J with\n"
    "J mod N = I, in name order.  SUMMARY must be one directory every\n"
    "process sees: the processes meet there once, to agree on the steps.\n"
    "\n"
    "  -o, --output SUMMARY    the summary directory (required)\n"
    "  --part I --parts N      this process's index and their number, when\n"
    "                          no launcher says (default 0 of 1)\n"
    "  --own                   DIR holds this host's traces only (a local disk):\n"
    "                          read all of it\n"
    "  --wait S                seconds to wait for the other processes (default 600)\n"
    SP_MODEL_OPTIONS_HELP
    "  -h, --help              this text\n"
    "\n"
    "The analysis of SUMMARY must be given the same --steps, --skip,\n"
    "--step-marker and --run (they shape the steps reduced).  dump, export\n"
    "and report --kernels need the events themselves: run them on DIR.\n"
    "\n"
    "Exit status: 0 written, 1 nothing to reduce, a peer missing or a write\n"
    "failed, 2 usage.\n";
// clang-format on

/* The launcher's word for this process's index and count. */
static void launcher_part(int *part, int *parts)
{
    static const char *const vars[][2] = {
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"SLURM_PROCID", "SLURM_NTASKS"},
        {"PMI_RANK", "PMI_SIZE"},
        {"RANK", "WORLD_SIZE"},
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *a = getenv(vars[i][0]), *b = getenv(vars[i][1]);
        if (a && b && *a && *b) {
            long x = strtol(a, NULL, 10), y = strtol(b, NULL, 10);
            if (y > 0 && x >= 0 && x < y && y <= MAX_PARTS) {
                *part = (int)x;
                *parts = (int)y;
                return;
            }
        }
    }
}
int cmd_reduce(int argc, char **argv)
{
    struct sp_model_opts o;
    sp_model_opts_default(&o);
    const char *out = NULL;
    int part = 0, parts = 1, part_given = 0, parts_given = 0, own_all = 0, wait_s = DEFAULT_WAIT_S;
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'},
        {"part", required_argument, 0, 'p'},
        {"parts", required_argument, 0, 'P'},
        {"own", no_argument, 0, 'O'},
        {"wait", required_argument, 0, 'w'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int c;
    struct sp_opts p;
    sp_opts_init(&p, VERB, opts, &o);
    while ((c = sp_opts_next(&p, argc, argv, "o:h")) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'p':
            if (sp_opt_int(VERB, "--part", optarg, 0, MAX_PARTS - 1, &part) < 0)
                return SP_EXIT_USAGE;
            part_given = 1;
            break;
        case 'P':
            if (sp_opt_int(VERB, "--parts", optarg, 1, MAX_PARTS, &parts) < 0)
                return SP_EXIT_USAGE;
            parts_given = 1;
            break;
        case 'O': own_all = 1; break;
        case 'w':
            if (sp_opt_int(VERB, "--wait", optarg, 0, 86400 * 7, &wait_s) < 0)
                return SP_EXIT_USAGE;
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: return SP_EXIT_USAGE; /* said by sp_opts_next */
        }
    }
    if (optind != argc - 1)
        return sp_usage_error(VERB, optind >= argc ? "give the trace directory" : "one trace directory only");
    if (!out)
        return sp_usage_error(VERB, "-o SUMMARY is required");
    if (part_given != parts_given)
        return sp_usage_error(VERB, "--part and --parts go together");
    if (!part_given)
        launcher_part(&part, &parts);
    if (part >= parts)
        return sp_usage_error(VERB, "--part %d of --parts %d: the part is 0 to %d", part, parts, parts - 1);
    const char *dir = argv[optind];
    struct sp_reduce_job job = {dir, out, part, parts, own_all, wait_s, &o};
    return sp_reduce_part(&job);
}
