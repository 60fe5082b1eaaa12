/*
 * import_many.h - several Kineto traces converted at once: one thread per
 * file up to a number of jobs, the outputs placed and reported in the
 * order the files were given, so that outputs, messages and status are
 * those of converting them one after the other (two inputs of one pid
 * included).
 */
#ifndef SP_IMPORT_MANY_H
#define SP_IMPORT_MANY_H

#include <stddef.h>

#include "import_kineto.h"

#define SP_IMPORT_ERR_MAX 2048
#define SP_IMPORT_JOBS_MAX 256

/* One input's conversion, as its caller sees it once it is placed. */
struct sp_import_done {
    const char *path;
    struct sp_import_summary sum;
    char err[SP_IMPORT_ERR_MAX]; /* the message when rc != 0 */
    int rc;                      /* 0, or -1 (converted in part or not at all, or not placed) */
    double seconds;              /* the conversion's wall time */
};

/* Called on the calling thread for each input, in the order of paths,
 * once its output is placed; its return values are or'ed together. */
typedef int (*sp_import_done_fn)(const struct sp_import_done *d, void *arg);

/* Convert paths[0..n) on up to `jobs` threads (1 to SP_IMPORT_JOBS_MAX;
 * the calling thread converts when none can be started), place each
 * output (sp_import_kineto_place) and call done(d, arg) for it.  Returns
 * the or of done's returns, or -1 when out of memory before anything was
 * converted; *threads (may be NULL) receives how many threads
 * converted. */
int sp_import_kineto_many(char *const *paths, size_t n, int jobs, const struct sp_import_opts *opts,
                          sp_import_done_fn done, void *arg, int *threads);

/* The CPUs this process may run on (its affinity, as taskset or a
 * container's cpuset leave it), else those online; 1 to
 * SP_IMPORT_JOBS_MAX. */
int sp_import_default_jobs(void);

#endif
