/*
 * host.h - the host-side view of a job that used no GPU (a training loop
 * on CPUs, a gloo job): its iterations, the time the loop blocks waiting
 * for its DataLoader workers, their CPU, the reads, and the findings that
 * need no GPU.  report prints it, labelled as such, where the GPU
 * breakdown has nothing to stand on (seen.h).
 */
#ifndef SP_HOST_H
#define SP_HOST_H

#include <stdint.h>

#include "model.h"

struct sp_host_rank {
    int rank;
    int workers;                    /* loader worker processes (helpers) */
    const char *iter_from;          /* "step markers", "loader pipe", "file reads"; NULL: none found */
    int iterations;                 /* iterations measured (after warm-up), 0 none */
    double iter_ms, iter_median_ms; /* mean and median iteration time */
    double wait_ms;                 /* mean time per iteration blocked on the loader's pipe */
    int wait_lower_bound;           /* wait_ms is the span of the reads inside next(): at least that */
    int reads_per_iter;             /* from file reads: the reads of one burst */
    double wait_total_ms;           /* over the whole run */
    double main_cpu;                /* training process: cores busy over its life, <0 unknown */
    double worker_cpu;              /* mean per worker, cores, <0 unknown */
    uint64_t read_bytes;            /* file reads of the rank's processes */
    double read_s, span_s;          /* time inside them; the rank's run */
};

struct sp_host_cpu {
    int host;         /* index into the model's hosts */
    int ncores;       /* 0 unknown */
    double job_cores; /* the job's own processes there, cores busy */
    double host_busy; /* the whole host (every user), fraction; <0 unknown */
};

struct sp_host {
    struct sp_host_rank *r;
    int nranks;
    struct sp_host_cpu *cpu;
    int ncpu;
    /* input_pipeline, host-side: the loop's wait share (of the ranks
     * whose iterations were found, mean), 0 none found */
    double input_share;
    int input_finding;     /* the share is worth a finding (>= SP_GAIN_MODERATE... low) */
    int input_lower_bound; /* some rank's wait is a lower bound (from file reads) */
    char evidence[SP_MODEL_TEXT];
    struct sp_warn_list warnings; /* files that could not be read again */
};

/* Reads the ranks' own files again (m opened: SP_STAGE_LOAD) for their
 * waits on loader pipes and builds the view.  Returns 0, or -1 when
 * memory ran out; free h with sp_host_free either way.  A file that
 * cannot be read again is a warning in h->warnings (for m:
 * sp_model_warn_all). */
int sp_host_analyze(const struct sp_model *m, struct sp_host *h);
void sp_host_free(struct sp_host *h);

#endif
