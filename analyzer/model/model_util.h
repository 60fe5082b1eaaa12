/*
 * model_util.h - the helpers of model_util.c and the model's passes that
 * an analysis over a finished model may use beside model.h: warnings (the
 * passes' into the model; an analysis, which takes the model const, keeps
 * its own in a list for its caller) and progress, a rank's clock in global
 * time, whether a trace is still being written, the thread pool, medians,
 * sorts (stable by key pairs, or none when in order), and the iterator
 * over collective instances.  The passes' own entry points are
 * model_int.h's, which no analysis or output includes.
 */
#ifndef SP_MODEL_UTIL_H
#define SP_MODEL_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

void sp_model_warn(struct sp_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A warning of an analysis over a const model, into its list (model.h,
 * struct sp_warn_list) for its caller to add to the model. */
void sp_warn_list_add(struct sp_warn_list *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Progress on stderr: at most once a second on a terminal (one line
 * rewritten with \r), at most every 5 s otherwise; done == total ends it. */
void sp_model_progress(const struct sp_model *m, const char *what, int done, int total);
/* Whether a live process on this machine still maps f's trace (a running
 * writer maps its file; nothing else does). */
int sp_model_file_open(const struct sp_file_rec *f);
/* A time on r's clock on the common axis: its host's offset added (none
 * before the clocks are aligned).  Inline: the passes over collective
 * calls ask it twice a call, and a call cost more than the add. */
static inline int64_t sp_model_global(const struct sp_model *m, const struct sp_rank *r, int64_t t)
{
    return t + (m->host_offset ? m->host_offset[r->host] : 0);
}
/* The CPU cores f's process used on average over its recording (its CPU
 * time over the span between its first and last samples); -1 unknown. */
double sp_file_cores(const struct sp_file_rec *f);
/* Run fn(i, arg) for i in [0, n) on the model's thread pool. */
void sp_model_parallel(const struct sp_model *m, int n, void (*fn)(int i, void *arg), void *arg);
double sp_median(double *v, size_t n); /* sorts v */
/* The same median of values that are not NaN, without sorting: v is
 * reordered (quickselect, linear on average). */
double sp_median_select(double *v, size_t n);
/* One collective instance: the calls of every rank that reached (comm, seq). */
struct sp_coll_ref {
    int r;
    size_t c;
}; /* rank index, call index */
typedef void (*sp_instance_fn)(struct sp_model *m, const struct sp_coll_ref *refs, size_t n, void *arg);
void sp_model_each_instance(struct sp_model *m, sp_instance_fn fn, void *arg);
/* A pair of keys to order by: a communicator and a sequence number. */
struct sp_pair_key {
    uint64_t a, b;
};
/* place[i] = where item i goes when k[0..n) is ordered by (a, b), items
 * of equal keys kept in their given order (what a stable sort gives):
 * one pass that numbers the distinct pairs, a sort of those alone, and a
 * counting sort.  The calls of a job share a few thousand (communicator,
 * sequence) pairs, so this is linear where a comparison sort of every
 * call is not, and moving item i to place[i] reads the items in order.
 * -1: no memory. */
int sp_pair_places(const struct sp_pair_key *k, size_t n, uint32_t *place);
/* sp_pair_places, and in *runs (malloc'd, *nruns of them) how many items
 * each distinct pair has, in order: the runs of equal keys that place[]
 * lays out one after another.  -1: no memory (*runs NULL). */
int sp_pair_runs(const struct sp_pair_key *k, size_t n, uint32_t *place, uint32_t **runs, size_t *nruns);
/* The n items of `size` bytes at base sorted by their keys k, a stable
 * sort (sp_pair_places, then each item moved to its place through a
 * copy).  -1 (items left as they were): no memory. */
int sp_sort_by_pairs(void *base, size_t size, size_t n, const struct sp_pair_key *k);
/* The same order in a new array (malloc'd; base left as it is), for a
 * caller that can take it in base's stead: no copy back.  NULL: no
 * memory. */
void *sp_sorted_by_pairs(const void *base, size_t size, size_t n, const struct sp_pair_key *k);
/* qsort, but nothing done when base is in order already (a job's records
 * mostly come in order: the check is one pass, the sort many). */
void sp_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));


/* The k-th smallest of v[0..n) (reorders v), n > 0: Hoare's selection,
 * linear on average.  With no NaN the k-th smallest is one value, whichever
 * way it is found.  Defined once per element type (double for the step
 * search, float for the replay's peer groups). */
#define SP_KTH_DEFINE(name, T)               \
    static T name(T *v, size_t n, size_t k)  \
    {                                        \
        size_t lo = 0, hi = n - 1;           \
        while (lo < hi) {                    \
            T pivot = v[lo + (hi - lo) / 2]; \
            size_t i = lo, j = hi;           \
            while (i <= j) {                 \
                while (v[i] < pivot)         \
                    i++;                     \
                while (v[j] > pivot)         \
                    j--;                     \
                if (i <= j) {                \
                    T t = v[i];              \
                    v[i] = v[j];             \
                    v[j] = t;                \
                    i++;                     \
                    if (j == 0)              \
                        break;               \
                    j--;                     \
                }                            \
            }                                \
            if (k <= j)                      \
                hi = j;                      \
            else if (k >= i)                 \
                lo = i;                      \
            else                             \
                return v[k];                 \
        }                                    \
        return v[k];                         \
    }

#endif
