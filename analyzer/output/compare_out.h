/*
 * compare_out.h - `scaleprof compare`'s renderers (compare_out.c) over a
 * finished comparison (analyses/compare.h): the text screen, or the JSON
 * document (man scaleprof-compare lists its fields).  price is --price-
 * per-gpu-hour, 0 when not given.  They print to stdout and change
 * nothing.
 */
#ifndef SP_COMPARE_OUT_H
#define SP_COMPARE_OUT_H

#include "compare.h"

void sp_compare_text(const struct sp_cmp *c, double price);
void sp_compare_json(const struct sp_cmp *c, double price);

#endif
