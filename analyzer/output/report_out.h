/*
 * report_out.h - the renderers of `scaleprof report` over a finished
 * model: the text screen (report_text.c), the JSON document
 * (docs/report-json.md) and the per-step CSV (report_json.c).  They print
 * to stdout and change nothing; cmd/builtin-report.c parses the options,
 * runs the model and the analyses (hang, ended, kernels) and calls them.
 *
 * view_rank (--rank R, -1 for all) narrows what is printed per rank, never
 * what is analyzed: the model always sees every rank, so findings, gains
 * and the "all" line are those of the whole job.
 */
#ifndef SP_REPORT_OUT_H
#define SP_REPORT_OUT_H

#include "ended.h"
#include "hang.h"
#include "kernels.h"
#include "model.h"

/* 2: findings carry gain and step_ms_if_fixed, `whatif`, comm ids padded;
 * 3: `stragglers` are the straggler finding's ranks, the arrival table is
 * `last_arrivals`, `view` says which rank --rank shows */
#define SP_REPORT_SCHEMA_VERSION 3

/* The first lines of a report on a job that hung or desynced, and on one
 * whose ranks did not all end well; nothing when there is none. */
void sp_report_text_hang(const struct sp_model *m, const struct sp_hang *h, int cols);
void sp_report_text_ended(const struct sp_ended_set *s, int cols);
/* The screen after those lines; kernels only when top_kernels > 0. */
void sp_report_text(const struct sp_model *m, int view_rank, int color, const struct sp_kernels *kernels,
                    int top_kernels);
/* The whole JSON document; kernels NULL without --kernels. */
void sp_report_json(const struct sp_model *m, int view_rank, int per_step, const struct sp_hang *h,
                    const struct sp_ended_set *ended, const struct sp_kernels *kernels, int top_kernels);
void sp_report_csv(const struct sp_model *m, int view_rank);

/* A rank with steps in the view. */
static inline int sp_report_shown(int view_rank, const struct sp_rank *r)
{
    return (view_rank < 0 || r->rank == view_rank) && r->cat;
}

/* Healthy: no finding would save 5% or more of the step (never said when
 * the replay's check withheld a gain: what it would save is unknown). */
static inline int sp_report_healthy(const struct sp_model *m)
{
    if (m->check.withheld)
        return 0;
    for (int i = 0; i < m->nfindings; i++)
        if (m->findings[i].severity > SP_SEV_LOW)
            return 0;
    return 1;
}

/* Whether finding f names the rank. */
static inline int sp_finding_names(const struct sp_finding *f, int rank)
{
    for (int x = 0; x < f->nranks; x++)
        if (f->ranks[x] == rank)
            return 1;
    return 0;
}

#endif
