/*
 * reduce.h - one part of `scaleprof reduce` (reduce.c): this process's
 * traces read, the parts met once through the summary directory, and
 * out/part-I.spsum written.  What a part's traces are and how the parts
 * meet: reduce.c's opening comment.
 */
#ifndef SP_REDUCE_H
#define SP_REDUCE_H

#include "model.h"

struct sp_reduce_job {
    const char *dir; /* the traces (DIR) */
    const char *out; /* the summary directory every part sees (-o) */
    int part, parts; /* this process's index of parts (0 <= part < parts) */
    int own_all;     /* --own: all of DIR is this part's */
    int wait_s;      /* how long to wait for the other parts */
    const struct sp_model_opts *opts;
};

/* Returns the verb's exit status: 0 written, 1 nothing to reduce, a part
 * missing or a write failed (each said on stderr). */
int sp_reduce_part(const struct sp_reduce_job *job);

#endif
