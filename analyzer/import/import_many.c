/*
 * import_many.c - several Kineto traces converted in parallel (see
 * import_many.h).
 *
 * Each worker takes the next file not yet started and converts it under
 * a temporary name (sp_import_kineto_convert); the calling thread waits
 * for the files in the order given, places each output
 * (sp_import_kineto_place) and hands it to the caller as soon as it and
 * every file before it are done.  Each conversion streams in a few MiB;
 * nothing is shared between them but the next index and the done flags.
 */
#include "import_many.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct job {
    struct sp_import_done d;
    int done; /* under the pool's lock */
};

struct pool {
    struct job *jobs;
    size_t n, next;
    const struct sp_import_opts *opts;
    pthread_mutex_t lock;
    pthread_cond_t done;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
    struct pool *pool = arg;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        size_t i = pool->next < pool->n ? pool->next++ : pool->n;
        pthread_mutex_unlock(&pool->lock);
        if (i == pool->n)
            return NULL;
        struct sp_import_done *d = &pool->jobs[i].d;
        double t0 = now_s();
        d->rc = sp_import_kineto_convert(d->path, pool->opts, &d->sum, d->err, sizeof d->err);
        d->seconds = now_s() - t0;
        pthread_mutex_lock(&pool->lock);
        pool->jobs[i].done = 1;
        pthread_cond_broadcast(&pool->done);
        pthread_mutex_unlock(&pool->lock);
    }
}

int sp_import_kineto_many(char *const *paths, size_t n, int jobs, const struct sp_import_opts *opts,
                          sp_import_done_fn done, void *arg, int *threads)
{
    struct pool pool = {calloc(n ? n : 1, sizeof *pool.jobs), n, 0, opts, PTHREAD_MUTEX_INITIALIZER,
                        PTHREAD_COND_INITIALIZER};
    pthread_t tids[SP_IMPORT_JOBS_MAX];
    int started = 0, status = 0;
    if (!pool.jobs)
        return -1;
    for (size_t i = 0; i < n; i++)
        pool.jobs[i].d.path = paths[i];
    if (jobs > SP_IMPORT_JOBS_MAX)
        jobs = SP_IMPORT_JOBS_MAX;
    if ((size_t)jobs > n)
        jobs = (int)n;
    /* The calling thread places outputs; with one job it also converts. */
    for (int t = 0; t < jobs && jobs > 1; t++)
        if (!pthread_create(&tids[t], NULL, worker, &pool))
            started++;
    if (!started)
        worker(&pool);
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&pool.lock);
        while (!pool.jobs[i].done)
            pthread_cond_wait(&pool.done, &pool.lock);
        pthread_mutex_unlock(&pool.lock);
        struct sp_import_done *d = &pool.jobs[i].d;
        if (sp_import_kineto_place(&d->sum, opts, d->err, sizeof d->err)) {
            d->rc = -1;
            d->sum.events = 0; /* nothing was placed: no "imported N events" */
        }
        status |= done(d, arg);
    }
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    free(pool.jobs);
    if (threads)
        *threads = started ? started : 1;
    return status;
}

int sp_import_default_jobs(void)
{
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) ? sysconf(_SC_NPROCESSORS_ONLN) : CPU_COUNT(&set);
    if (n > SP_IMPORT_JOBS_MAX)
        return SP_IMPORT_JOBS_MAX;
    return n < 1 ? 1 : (int)n;
}
