/*
 * kernels.h - the kernel view (`report --kernels`): which kernels take the
 * GPU time over the analyzed steps, on which rank, and where the same
 * kernel runs slowest (what a straggler's "compute" is made of).
 */
#ifndef SP_KERNELS_H
#define SP_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* One kernel name on one rank (indexed like the model's ranks). */
struct sp_kernel_rank {
    uint64_t calls;
    double ns;
};

struct sp_kernel_stat {
    char *name; /* as recorded (mangled as CUPTI gives it) */
    int nccl;   /* an NCCL kernel */
    uint64_t calls;
    double ns;                      /* summed GPU time over every rank */
    double mean_ns, p50_ns, p99_ns; /* over every call; p50/p99 nearest rank */
    struct sp_kernel_rank *ranks;   /* nranks entries */
    int slowest;                    /* rank index whose calls are longest on average;
                                 -1 when fewer than two ranks ran it */
    double slowest_x;               /* that mean over the median of the ranks' means */
};

struct sp_kernels {
    struct sp_kernel_stat *k; /* by GPU time, largest first */
    size_t n;
    double ns;       /* every kernel's time, all ranks */
    double *rank_ns; /* per rank index: its kernels' time */
    int nranks;
    struct sp_warn_list warnings; /* files that could not be read again */
};

/* Reads the GPU kernels (compute and NCCL) of every rank's own files that
 * start within the analyzed steps (m run to SP_STAGE_STEPS at least) and
 * sums them per name.  Returns 0, or -1 when memory ran out; free k with
 * sp_kernels_free either way.  Files that cannot be read again are left
 * out with a warning in k->warnings (for m: sp_model_warn_all). */
int sp_kernels_analyze(const struct sp_model *m, struct sp_kernels *k);
void sp_kernels_free(struct sp_kernels *k);

#endif
