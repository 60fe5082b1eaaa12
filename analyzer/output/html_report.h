/*
 * html_report.h - `scaleprof html`'s page: the report (or a comparison) as
 * one self-contained HTML file whose charts are inline SVG drawn here;
 * no script, no network, no external font (docs/export.md).
 */
#ifndef SP_HTML_REPORT_H
#define SP_HTML_REPORT_H

#include <stdio.h>

#include "compare.h"
#include "kernels.h"
#include "model.h"

/* The report of one analyzed model (SP_STAGE_FINDINGS), with the top
 * top_kernels kernels of k when k is not NULL.  Returns 0, or -1 when out
 * failed. */
int sp_html_report(FILE *out, const struct sp_model *m, const struct sp_kernels *k, int top_kernels);

/* The comparison c (sp_compare_runs, which holds the batch given), with
 * the price per GPU hour for cost per sample, 0 unknown. */
int sp_html_compare(FILE *out, const struct sp_cmp *c, double price);

#endif
