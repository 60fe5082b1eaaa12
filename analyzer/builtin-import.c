/*
 * builtin-import.c - `scaleprof import kineto FILE... -o DIR`: convert
 * PyTorch-profiler (Kineto) JSON traces, plain or gzip, into scaleprof
 * trace files, one per input (one per rank), so every verb works on them.
 *
 * This file is the verb only: options, one summary line per input, exit
 * status.  The reading is import_json.c, the mapping import_kineto.c.
 * A bad input does not stop the others; the status is 1 if any failed.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "builtin.h"
#include "import_kineto.h"

#define EXIT_USAGE 2
#define BYTES_PER_MB 1e6
#define KIB 1024.0
#define SUMMARY_MAX 2048

static void usage(FILE *out)
{
    fprintf(out,
            "usage: scaleprof import kineto FILE... -o DIR [--force] [--stats]\n\n"
            "Convert PyTorch profiler (Kineto) JSON traces, plain or .gz, into scaleprof\n"
            "traces: DIR/imported/<pid>.sprof, one per input, with rank and world size\n"
            "from the trace's distributedInfo.  Then: scaleprof report DIR.\n\n"
            "  -o, --output DIR  where to write (created if missing)\n"
            "  -f, --force       replace output files that exist\n"
            "      --stats       print throughput (MB/s of JSON) and peak memory\n"
            "  -q, --quiet       no summary lines\n");
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

static int import_one(const char *path, const struct sp_import_opts *opts, int quiet, int stats)
{
    static struct sp_import_summary sum; /* large: not on the stack */
    char err[2048], line[SUMMARY_MAX];
    double t0 = now_s();
    int rc = sp_import_kineto_file(path, opts, &sum, err, sizeof err);
    if (!quiet && (rc == 0 || sum.out_path[0])) {
        sp_import_format_summary(&sum, line, sizeof line);
        printf("%s -> %s: %s\n", path, sum.out_path[0] ? sum.out_path : "(nothing)", line);
    }
    if (stats)
        print_stats(&sum, now_s() - t0);
    if (rc) {
        fprintf(stderr, "scaleprof import: %s\n", err);
        if (sum.out_path[0])
            fprintf(stderr, "scaleprof import: kept the %llu events %s in %s\n",
                    (unsigned long long)sum.events,
                    sum.read.err[0] ? "before the error" : "converted", sum.out_path);
    }
    fflush(stdout);
    return rc ? 1 : 0;
}

int cmd_import(int argc, char **argv)
{
    enum { OPT_STATS = 256 };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'}, {"force", no_argument, NULL, 'f'},
        {"stats", no_argument, NULL, OPT_STATS},  {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    struct sp_import_opts opts = {NULL, 0};
    int quiet = 0, stats = 0, c;
    while ((c = getopt_long(argc, argv, "o:fqh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': opts.outdir = optarg; break;
        case 'f': opts.force = 1; break;
        case 'q': quiet = 1; break;
        case OPT_STATS: stats = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return EXIT_USAGE;
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
    int status = 0;
    for (int i = optind; i < argc; i++)
        status |= import_one(argv[i], &opts, quiet, stats);
    return status;
}
