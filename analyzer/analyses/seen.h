/*
 * seen.h - what the traces saw (GPU activity, ranks, files), asked once
 * for every verb: a verb whose output is about GPUs (report, compare,
 * html; export's breakdown and findings) refuses a trace set with no GPU
 * record, and all of them say why in the same words.
 */
#ifndef SP_SEEN_H
#define SP_SEEN_H

#include <stddef.h>

#include "model.h"

/* 1 when the traces of m (opened: SP_STAGE_LOAD or later) hold GPU
 * activity of some rank, the ground every GPU claim stands on. */
int sp_seen_gpu(const struct sp_model *m);

/* Why there is no GPU claim to make, for a trace set sp_seen_gpu refuses:
 * "no GPU activity was recorded in any of its N rank(s) (F file(s)): a
 * job that ran on CPUs only, or ..."; when the traces hold CUDA or NCCL
 * calls, it says the GPUs' records were lost instead.  Always
 * NUL-terminated. */
void sp_seen_no_gpu_text(const struct sp_model *m, char *out, size_t len);

/* For a verb about to make GPU claims: 0 when m has GPU activity;
 * otherwise prints "scaleprof VERB: DIR: <the text above>; <consequence>"
 * on stderr and returns 1, the verbs' "nothing analyzable" status, for a
 * verb that refuses (consequence says what it does instead). */
int sp_seen_no_gpu(const char *verb, const struct sp_model *m, const char *consequence);

#endif
