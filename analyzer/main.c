/*
 * main.c - the `scaleprof` command: dispatch to one verb per file
 * (builtin-<verb>.c), in the manner of perf.
 *
 * Every verb takes its own options and prints its own --help; this file
 * only knows their names and one line about each, takes the options every
 * verb shares (--color, --no-color) out of argv before the verb sees it,
 * and answers a mistyped verb with the nearest name.
 */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "builtin.h"
#include "opt.h"

struct verb {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct verb verbs[] = {
    {"run", cmd_run, "run a job under the profiler (torchrun-style launcher, --sim for no GPU)"},
    {"report", cmd_report, "per-step breakdown per GPU, collectives, stragglers and findings"},
    {"compare", cmd_compare, "scaling efficiency across runs and where the time went"},
    {"hang", cmd_hang, "post-mortem of a hung or crashed job: the collective, who never arrived, why"},
    {"import", cmd_import, "convert PyTorch profiler (Kineto) traces to scaleprof traces"},
    {"export", cmd_export, "the timeline for ui.perfetto.dev / chrome://tracing, with the analysis on it"},
    {"reduce", cmd_reduce, "per-host summaries of the traces, run through the job's launcher (mpirun, srun)"},
    {"html", cmd_html, "one self-contained HTML page of the report (or of a comparison)"},
    {"dump", cmd_dump, "print a trace file's header and events (text or JSON lines)"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: scaleprof [-V|--version] [-h|--help] VERB [ARGS]\n\n"
                 "Why did N GPUs not give N times the throughput? Verbs:\n");
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        fprintf(out, "  %-9s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(out, "\n'scaleprof help VERB', 'scaleprof VERB --help' or 'man scaleprof-VERB' for each verb.\n");
}

/* A verb that lost an allocation says so and exits SP_EXIT_NOMEM, whatever
 * it printed: a figure computed without part of its data is not to be
 * trusted (alloc.c).  run keeps the job's status (its own summary line is
 * what may be short). */
static int after_verb(const char *verb, int rc, int keep_status)
{
    if (!sp_alloc_failed())
        return rc;
    fflush(stdout);
    fprintf(stderr, "scaleprof %s: out of memory: what was printed or written may be incomplete or wrong; "
                    "run it again with more memory\n",
            verb);
    return keep_status ? rc : SP_EXIT_NOMEM;
}

int main(int argc, char **argv)
{
    sp_alloc_tune();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "help") && argc > 2) {
        /* scaleprof help VERB: the verb's own --help */
        for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
            if (!strcmp(argv[2], verbs[i].name)) {
                char *args[] = {argv[2], "--help", NULL};
                return verbs[i].fn(2, args);
            }
        fprintf(stderr, "scaleprof: help: unknown verb '%s'\n", argv[2]);
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("scaleprof %s\n", SCALEPROF_VERSION);
        return 0;
    }
    const char *names[sizeof verbs / sizeof verbs[0]];
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        names[i] = verbs[i].name;
        if (strcmp(argv[1], verbs[i].name))
            continue;
        int vargc = argc - 1;
        /* run's operands are the job's command: its options are not ours */
        if (sp_opt_take_color(verbs[i].name, &vargc, argv + 1, verbs[i].fn == cmd_run))
            return SP_EXIT_USAGE;
        return after_verb(verbs[i].name, verbs[i].fn(vargc, argv + 1), verbs[i].fn == cmd_run);
    }
    const char *near = sp_opt_nearest(argv[1], names, sizeof names / sizeof names[0]);
    if (near) {
        fprintf(stderr, "scaleprof: unknown verb '%s'; did you mean '%s'?\n", argv[1], near);
        return SP_EXIT_USAGE;
    }
    fprintf(stderr, "scaleprof: unknown verb '%s'\n", argv[1]);
    usage(stderr);
    return SP_EXIT_USAGE;
}
