/*
 * hang_out.h - `scaleprof hang`'s renderers (hang_out.c): the post-mortem
 * as text, or as the JSON document of `hang --json` (man scaleprof-hang),
 * over a finished hang analysis and the ranks that did not end well.
 * They print to stdout and change nothing.
 */
#ifndef SP_HANG_OUT_H
#define SP_HANG_OUT_H

#include "ended.h"
#include "hang.h"
#include "model.h"

void sp_hang_text(const struct sp_model *m, const struct sp_hang *h, const struct sp_ended_set *ended, int cols);
void sp_hang_json(const struct sp_model *m, const struct sp_hang *h, const struct sp_ended_set *ended);

#endif
