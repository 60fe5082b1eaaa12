/*
 * builtin-run.c - `scaleprof run`: start a job with the recorder attached.
 *
 *   scaleprof run [-o DIR] [--nproc N] [--nnodes M] [--sim] [--preload LIB] [--force]
 *                 [--keep-going] -- CMD...
 *   scaleprof run --nproc_per_node P [--nnodes M --node_rank R] [--master_addr A] -- CMD...
 *
 * torchrun's spellings are taken as torchrun means them: --nproc_per_node
 * (or --nproc-per-node) is per node, so without --node_rank it starts
 * P x M ranks here (M simulated nodes, as --nnodes does); with --node_rank
 * R it starts node R's P ranks of a job of M x P (RANK R x P + i), one
 * such launcher per real node, as torchrun runs on each.
 *
 * Option parsing and the verb's messages only: the launcher (environment,
 * ranks, signals, waiting, what to run next) is launch/launch.c.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "builtin.h"
#include "launch.h"
#include "opt.h"

static void usage(FILE *f)
{
    // clang-format off
    fprintf(f,
            "usage: scaleprof run [-o DIR] [--nproc N] [--nnodes M] [--sim] [--preload LIB] [--force]\n"
            "                     [--keep-going] -- CMD...\n"
            "\n"
            "Run CMD with the scaleprof recorder attached to every process it starts.\n"
            "\n"
            "  -o, --output DIR   where traces go (default $SCALEPROF_DIR, else ./" SP_LAUNCH_DEFAULT_DIR ")\n"
            "  --nproc N          start N ranks, with RANK, LOCAL_RANK, WORLD_SIZE,\n"
            "                     LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT as torchrun does\n"
            "  --nnodes M         split the ranks over M simulated nodes (needs --sim, root)\n"
            "  --master-port P    MASTER_PORT for the ranks (default " SP_LAUNCH_DEFAULT_PORT ")\n"
            "  --sim              use the stand-in CUDA/NCCL/CUPTI libraries (no GPU needed)\n"
            "  --preload LIB      the recorder library (default: found beside scaleprof)\n"
            "  --force            record into DIR although it holds traces already (the\n"
            "                     runs then mix in one report)\n"
            "  --keep-going       when a rank fails, let the others run on (default: stop\n"
            "                     them, SIGTERM then SIGKILL after 10 s, as torchrun does)\n"
            "  --nproc_per_node P torchrun's spelling (also --nproc-per-node): P ranks per\n"
            "                     node, P x M in all with --nnodes M\n"
            "  --node_rank R      with --nnodes M (also --node-rank): start only node R's\n"
            "                     ranks (R x P .. R x P + P - 1 of M x P), one launcher per\n"
            "                     real node as torchrun; no --sim or root needed\n"
            "  --master_addr A    MASTER_ADDR for the ranks (also --master-addr,\n"
            "                     --master_port)\n"
            SP_COLOR_HELP
            "  -h, --help         this text\n"
            "\n"
            "A rank that fails is named with its pid, its signal or exit status and its last\n"
            "recorded activity; how every rank ended goes into DIR/exit-status.HOST, where\n"
            "report and hang read it.\n"
            "\n"
            "Then: scaleprof report DIR (run names the next step that works: the host's\n"
            "timeline instead when no GPU activity was recorded)\n");
    // clang-format on
}

static int parse(int argc, char **argv, struct sp_launch_opts *o)
{
    // clang-format off
    enum { OPT_NPROC = 256, OPT_NNODES, OPT_SIM, OPT_PRELOAD, OPT_PORT, OPT_FORCE, OPT_KEEP_GOING,
           OPT_PER_NODE, OPT_NODE_RANK, OPT_ADDR };
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'},     {"nproc", required_argument, 0, OPT_NPROC},
        {"nnodes", required_argument, 0, OPT_NNODES}, {"sim", no_argument, 0, OPT_SIM},
        {"preload", required_argument, 0, OPT_PRELOAD},
        {"master-port", required_argument, 0, OPT_PORT}, {"help", no_argument, 0, 'h'},
        {"force", no_argument, 0, OPT_FORCE}, {"keep-going", no_argument, 0, OPT_KEEP_GOING},
        /* torchrun's spellings, one option a line */
        {"nproc_per_node", required_argument, 0, OPT_PER_NODE}, {"nproc-per-node", required_argument, 0, OPT_PER_NODE},
        {"node_rank", required_argument, 0, OPT_NODE_RANK},     {"node-rank", required_argument, 0, OPT_NODE_RANK},
        {"master_port", required_argument, 0, OPT_PORT},
        {"master_addr", required_argument, 0, OPT_ADDR},        {"master-addr", required_argument, 0, OPT_ADDR},
        {0, 0, 0, 0},
    };
    // clang-format on
    const char *env_dir = getenv("SCALEPROF_DIR");
    *o = (struct sp_launch_opts){
        .dir = env_dir && *env_dir ? env_dir : SP_LAUNCH_DEFAULT_DIR,
        .master_port = SP_LAUNCH_DEFAULT_PORT,
        .nnodes = 1,
        .node_rank = -1,
    };
    int c;
    struct sp_opts p;
    sp_opts_init(&p, "run", longopts, NULL);
    while ((c = sp_opts_next(&p, argc, argv, "+o:h")) != -1) {
        switch (c) {
        case 'o': o->dir = optarg; break;
        case OPT_NPROC:
            if (sp_opt_int("run", "--nproc", optarg, 1, SP_LAUNCH_MAX_PROCS, &o->nproc) < 0)
                exit(SP_EXIT_USAGE);
            break;
        case OPT_NNODES:
            if (sp_opt_int("run", "--nnodes", optarg, 1, SP_LAUNCH_MAX_PROCS, &o->nnodes) < 0)
                exit(SP_EXIT_USAGE);
            break;
        case OPT_SIM: o->sim = 1; break;
        case OPT_PRELOAD: o->preload = optarg; break;
        case OPT_PORT: o->master_port = optarg; break;
        case OPT_FORCE: o->force = 1; break;
        case OPT_KEEP_GOING: o->keep_going = 1; break;
        case OPT_PER_NODE:
            if (sp_opt_int("run", "--nproc_per_node", optarg, 1, SP_LAUNCH_MAX_PROCS, &o->per_node) < 0)
                exit(SP_EXIT_USAGE);
            break;
        case OPT_NODE_RANK:
            if (sp_opt_int("run", "--node_rank", optarg, 0, SP_LAUNCH_MAX_PROCS - 1, &o->node_rank) < 0)
                exit(SP_EXIT_USAGE);
            break;
        case OPT_ADDR: o->master_addr = optarg; break;
        case 'h': usage(stdout); exit(0);
        default: exit(SP_EXIT_USAGE); /* said by sp_opts_next */
        }
    }
    o->cmd = argv + optind;
    return sp_launch_settle(o) == 0;
}

int cmd_run(int argc, char **argv)
{
    struct sp_launch_opts o;
    if (!parse(argc, argv, &o)) {
        usage(stderr);
        return SP_EXIT_USAGE;
    }
    int old = o.force ? 0 : sp_launch_traces_in(o.dir);
    if (old) {
        fprintf(stderr, "scaleprof run: %s already holds %d trace file(s) of an earlier run: a report of it "
                        "would mix the two runs.  Give another -o DIR, remove the old traces, or --force to "
                        "add to them\n",
                o.dir, old);
        return SP_EXIT_USAGE;
    }
    char outdir[PATH_MAX];
    int failed = 0;
    int worst = sp_launch_run(&o, outdir, sizeof outdir, &failed);
    if (worst < 0)
        return SP_EXIT_USAGE;
    int written = sp_launch_traces_in(outdir);
    if (worst == SP_LAUNCH_NOT_STARTED && !written) {
        /* the command never started (not found, not executable): said above */
        fprintf(stderr, "scaleprof run: %s did not start: no traces\n", o.cmd[0]);
        return worst;
    }
    if (!written) {
        fprintf(stderr, "scaleprof run: the job left no trace in %s: none of its processes made a "
                        "recorded call, and each ended within 20 ms of its start (libscaleprof(7), "
                        "\"Quiet short lives\")\n",
                outdir);
        return worst;
    }
    fprintf(stderr, "scaleprof: traces in %s\n", outdir);
    sp_launch_next_step(outdir, failed);
    return worst;
}
