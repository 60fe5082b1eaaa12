/*
 * builtin-import.c - `scaleprof import kineto FILE... -o DIR`: convert
 * PyTorch-profiler (Kineto) JSON traces, plain or gzip, into scaleprof
 * trace files, one per input (one per rank), so every verb works on them.
 *
 * This file is the verb only: options, one summary line per input, exit
 * status, and the threads.  The reading is import_json.c, the mapping
 * import_kineto.c.  A bad input does not stop the others; the status is 1
 * if any failed.
 *
 * Files are converted in parallel, one thread per file up to the number
 * of CPUs (or -j): each thread takes the next file not yet started and
 * writes its output under a temporary name.  This thread then places the
 * outputs and prints the summary lines in the order of the arguments, as
 * each one is done, so the outputs, the lines and the status are those of
 * converting the files one after the other.  Each conversion streams in a
 * few MiB; nothing is shared between them.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "builtin.h"
#include "import_kineto.h"
#include "opt.h"
#include "parse.h"

#define EXIT_USAGE 2
#define BYTES_PER_MB 1e6
#define KIB 1024.0
#define SUMMARY_MAX 2048
#define ERR_MAX 2048
#define JOBS_MAX 256

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

/* One input: its conversion's result, filled by a worker. */
struct import_job {
    const char *path;
    struct sp_import_summary sum;
    char err[ERR_MAX];
    int rc;
    double seconds;
    int done;
};

struct import_pool {
    struct import_job *jobs;
    size_t n, next;
    const struct sp_import_opts *opts;
    pthread_mutex_t lock;
    pthread_cond_t done;
};

static void *import_worker(void *arg)
{
    struct import_pool *pool = arg;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        size_t i = pool->next < pool->n ? pool->next++ : pool->n;
        pthread_mutex_unlock(&pool->lock);
        if (i == pool->n)
            return NULL;
        struct import_job *job = &pool->jobs[i];
        double t0 = now_s();
        job->rc = sp_import_kineto_convert(job->path, pool->opts, &job->sum, job->err, sizeof job->err);
        job->seconds = now_s() - t0;
        pthread_mutex_lock(&pool->lock);
        job->done = 1;
        pthread_cond_broadcast(&pool->done);
        pthread_mutex_unlock(&pool->lock);
    }
}

/* Place one converted input and say what became of it; returns 0 or 1. */
static int finish_one(struct import_job *job, const struct sp_import_opts *opts, int quiet, int stats)
{
    struct sp_import_summary *sum = &job->sum;
    char line[SUMMARY_MAX];
    if (sp_import_kineto_place(sum, opts, job->err, sizeof job->err)) {
        job->rc = -1;
        sum->events = 0; /* nothing was placed: no "imported N events" */
    }
    if (!quiet && (job->rc == 0 || sum->out_path[0])) {
        sp_import_format_summary(sum, line, sizeof line);
        printf("%s -> %s: %s\n", job->path, sum->out_path[0] ? sum->out_path : "(nothing)", line);
    }
    if (stats)
        print_stats(sum, job->seconds);
    if (job->rc) {
        fprintf(stderr, "scaleprof import: %s\n", job->err);
        if (sum->out_path[0])
            fprintf(stderr, "scaleprof import: kept the %llu events %s in %s\n",
                    (unsigned long long)sum->events,
                    sum->read.err[0] ? "before the error" : "converted", sum->out_path);
    }
    fflush(stdout);
    return job->rc ? 1 : 0;
}

/* The CPUs this process may run on (its affinity, as taskset or a
 * container's cpuset leave it), else those online. */
static int default_jobs(void)
{
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) ? sysconf(_SC_NPROCESSORS_ONLN) : CPU_COUNT(&set);
    if (n > JOBS_MAX)
        return JOBS_MAX;
    return n < 1 ? 1 : (int)n;
}

/* Convert paths[0..n) on up to `jobs` threads; outputs placed and lines
 * printed in order.  Returns the exit status. */
static int import_all(char **paths, size_t n, int jobs, const struct sp_import_opts *opts, int quiet,
                      int stats)
{
    struct import_pool pool = {calloc(n, sizeof *pool.jobs), n, 0, opts,
                               PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
    pthread_t threads[JOBS_MAX];
    int started = 0, status = 0;
    double t0 = now_s();
    if (!pool.jobs) {
        fprintf(stderr, "scaleprof import: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        pool.jobs[i].path = paths[i];
    if ((size_t)jobs > n)
        jobs = (int)n;
    /* This thread places outputs; with one job it also converts. */
    for (int t = 0; t < jobs && jobs > 1; t++)
        if (!pthread_create(&threads[t], NULL, import_worker, &pool))
            started++;
    if (!started)
        import_worker(&pool);
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&pool.lock);
        while (!pool.jobs[i].done)
            pthread_cond_wait(&pool.done, &pool.lock);
        pthread_mutex_unlock(&pool.lock);
        status |= finish_one(&pool.jobs[i], opts, quiet, stats);
        bytes += pool.jobs[i].sum.read.bytes;
    }
    for (int t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
    if (stats && n > 1) {
        struct rusage ru;
        double seconds = now_s() - t0, mb = (double)bytes / BYTES_PER_MB;
        getrusage(RUSAGE_SELF, &ru);
        printf("stats: %zu files, %.1f MB of JSON in %.2f s = %.1f MB/s on %d thread%s, peak RSS %.1f MiB\n",
               n, mb, seconds, seconds > 0 ? mb / seconds : 0.0, started ? started : 1,
               started > 1 ? "s" : "", (double)ru.ru_maxrss / KIB);
    }
    free(pool.jobs);
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
    int quiet = 0, stats = 0, jobs = default_jobs(), c;
    long long n;
    char perr[SP_PARSE_ERR];
    struct sp_opts p;
    sp_opts_init(&p, "import", longopts, NULL);
    while ((c = sp_opts_next(&p, argc, argv, "o:fqj:h")) != -1) {
        switch (c) {
        case 'o': opts.outdir = optarg; break;
        case 'j':
            if (sp_parse_int(optarg, 1, JOBS_MAX, &n, perr, sizeof perr)) {
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
