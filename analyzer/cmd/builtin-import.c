/*
 * builtin-import.c - `scaleprof import kineto FILE... -o DIR`: convert
 * PyTorch-profiler (Kineto) JSON traces, plain or gzip, into scaleprof
 * trace files, one per input (one per rank), so every verb works on them.
 *
 * This file is the verb only: options, one summary line per input (in
 * the order of the arguments, as each is done), --stats, the exit status.
 * The files are converted in parallel by import_many.c, one thread per
 * file up to the number of CPUs (or -j); the reading is import_json.c,
 * the mapping import_kineto.c.  A bad input does not stop the others;
 * the status is 1 if any failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "builtin.h"
#include "import_kineto.h"
#include "import_many.h"
#include "opt.h"
#include "parse.h"

#define EXIT_USAGE 2
#define BYTES_PER_MB 1e6
#define KIB 1024.0
#define SUMMARY_MAX 2048

static void usage(FILE *out)
{
    fprintf(out,
            "usage: scaleprof import kineto FILE... -o DIR [--force] [--stats] [--jobs N]\n\n"
            "Convert PyTorch profiler (Kineto) JSON traces, plain or .gz, into scaleprof\n"
            "traces: DIR/imported/<pid>.sprof, one per input, with rank and world size\n"
            "from the trace's distributedInfo.  Then: scaleprof report DIR.\n\n"
            "  -o, --output DIR  where to write (created if missing)\n"
            "  -f, --force       replace output files that exist\n"
            "      --stats       print throughput (MB/s of JSON) and peak memory\n"
            "  -j, --jobs N      convert N files at a time (default: one per CPU)\n"
            "  -q, --quiet       no summary lines\n" SP_COLOR_HELP);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_stats(const struct sp_import_summary *sum, double seconds)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double mb = (double)sum->read.bytes / BYTES_PER_MB;
    printf("stats: %.1f MB of JSON in %.2f s = %.1f MB/s, peak RSS %.1f MiB\n", mb, seconds,
           seconds > 0 ? mb / seconds : 0.0, (double)ru.ru_maxrss / KIB);
}

/* What the verb keeps across the inputs for --stats. */
struct import_run {
    int quiet, stats;
    uint64_t bytes;
};

/* Say what became of one placed input; returns 0 or 1 (the status). */
static int finish_one(const struct sp_import_done *d, void *arg)
{
    struct import_run *run = arg;
    const struct sp_import_summary *sum = &d->sum;
    char line[SUMMARY_MAX];
    if (!run->quiet && (d->rc == 0 || sum->out_path[0])) {
        sp_import_format_summary(sum, line, sizeof line);
        printf("%s -> %s: %s\n", d->path, sum->out_path[0] ? sum->out_path : "(nothing)", line);
    }
    if (run->stats)
        print_stats(sum, d->seconds);
    if (d->rc) {
        fprintf(stderr, "scaleprof import: %s\n", d->err);
        if (sum->out_path[0])
            fprintf(stderr, "scaleprof import: kept the %llu events %s in %s\n",
                    (unsigned long long)sum->events,
                    sum->read.err[0] ? "before the error" : "converted", sum->out_path);
    }
    fflush(stdout);
    run->bytes += sum->read.bytes;
    return d->rc ? 1 : 0;
}

/* Convert paths[0..n) on up to `jobs` threads, with a line for each in
 * order and, with --stats and several files, one for them all.  Returns
 * the exit status. */
static int import_all(char **paths, size_t n, int jobs, const struct sp_import_opts *opts, int quiet,
                      int stats)
{
    struct import_run run = {quiet, stats, 0};
    int threads = 1;
    double t0 = now_s();
    int status = sp_import_kineto_many(paths, n, jobs, opts, finish_one, &run, &threads);
    if (status < 0) {
        fprintf(stderr, "scaleprof import: out of memory\n");
        return 1;
    }
    if (stats && n > 1) {
        struct rusage ru;
        double seconds = now_s() - t0, mb = (double)run.bytes / BYTES_PER_MB;
        getrusage(RUSAGE_SELF, &ru);
        printf("stats: %zu files, %.1f MB of JSON in %.2f s = %.1f MB/s on %d thread%s, peak RSS %.1f MiB\n",
               n, mb, seconds, seconds > 0 ? mb / seconds : 0.0, threads, threads > 1 ? "s" : "",
               (double)ru.ru_maxrss / KIB);
    }
    return status;
}

int cmd_import(int argc, char **argv)
{
    enum { OPT_STATS = 256 };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'f'},
        {"stats", no_argument, NULL, OPT_STATS},
        {"quiet", no_argument, NULL, 'q'},
        {"jobs", required_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct sp_import_opts opts = {NULL, 0};
    int quiet = 0, stats = 0, jobs = sp_import_default_jobs(), c;
    long long n;
    char perr[SP_PARSE_ERR];
    struct sp_opts p;
    sp_opts_init(&p, "import", longopts, NULL);
    while ((c = sp_opts_next(&p, argc, argv, "o:fqj:h")) != -1) {
        switch (c) {
        case 'o': opts.outdir = optarg; break;
        case 'j':
            if (sp_parse_int(optarg, 1, SP_IMPORT_JOBS_MAX, &n, perr, sizeof perr)) {
                fprintf(stderr, "scaleprof import: --jobs: %s\n", perr);
                return EXIT_USAGE;
            }
            jobs = (int)n;
            break;
        case 'f': opts.force = 1; break;
        case 'q': quiet = 1; break;
        case OPT_STATS: stats = 1; break;
        case 'h': usage(stdout); return 0;
        default: return EXIT_USAGE; /* said by sp_opts_next */
        }
    }
    if (optind >= argc || strcmp(argv[optind], "kineto")) {
        fprintf(stderr, "scaleprof import: the first argument names the format; only 'kineto' is known\n");
        usage(stderr);
        return EXIT_USAGE;
    }
    optind++;
    if (optind >= argc || !opts.outdir) {
        fprintf(stderr, "scaleprof import: %s\n", optind >= argc ? "no input files" : "no output directory (-o DIR)");
        usage(stderr);
        return EXIT_USAGE;
    }
    return import_all(argv + optind, (size_t)(argc - optind), jobs, &opts, quiet, stats);
}
