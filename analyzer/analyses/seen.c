/*
 * seen.c - what the traces saw, and the one sentence each verb says when
 * they saw no GPU.
 *
 * The step breakdown, the findings and their gains are shares of GPU time:
 * with no GPU record anywhere every one of them would be a claim the data
 * cannot back ("the GPU is idle 83% of the step" of a job that had none).
 * So report, compare and html refuse such a trace set, and export writes
 * its host timeline without them, all with the words below, so that a
 * user who meets the refusal in one verb recognises it in the next.
 */
#include <stdio.h>

#include "seen.h"

int sp_seen_gpu(const struct sp_model *m)
{
    return m->gpu_events > 0;
}

void sp_seen_no_gpu_text(const struct sp_model *m, char *out, size_t len)
{
    if (m->api_events > 0) { /* the job used the GPU: its activity was lost */
        snprintf(out, len,
                 "no GPU activity was recorded in any of its %d rank(s) (%d file(s)), though they hold %llu "
                 "CUDA and NCCL call(s): the job used its GPUs, but their activity records (CUPTI) did not "
                 "reach the traces (CUPTI held by another tool, disabled with SCALEPROF_CUPTI=0, or lost)",
                 m->nranks, m->nfrecs, (unsigned long long)m->api_events);
        return;
    }
    snprintf(out, len,
             "no GPU activity was recorded in any of its %d rank(s) (%d file(s)): a job that ran on "
             "CPUs only, or whose CUDA work the recorder did not see (CUPTI held by another tool, a "
             "static CUDA runtime)",
             m->nranks, m->nfrecs);
}

int sp_seen_no_gpu(const char *verb, const struct sp_model *m, const char *consequence)
{
    if (sp_seen_gpu(m))
        return 0;
    char why[512];
    sp_seen_no_gpu_text(m, why, sizeof why);
    fprintf(stderr, "scaleprof %s: %s: %s; %s\n", verb, m->dir, why, consequence);
    return 1;
}
