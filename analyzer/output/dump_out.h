/*
 * dump_out.h - `scaleprof dump`'s renderers (dump_out.c): a trace file's
 * header, its events one a line, its totals, as text or JSON lines.
 */
#ifndef SP_DUMP_OUT_H
#define SP_DUMP_OUT_H

#include <stdio.h>

#include "sprof.h"

/* The header of the file at path: "# " lines, or a {"type":"header"} line. */
void sp_dump_header(FILE *out, const char *path, const struct sp_file_info *in, int json);
/* One event on a line: every field by name, strings resolved, enums named. */
void sp_dump_event(FILE *out, const struct sp_reader *r, const struct sp_event *ev, int json);
/* The text dump's last line: what the reader read and what it skipped. */
void sp_dump_totals(FILE *out, const struct sp_reader_stats *st);
/* The damage the reader skipped in the file at path, a line each on
 * stderr ("scaleprof dump: PATH: ..."), so that stdout stays parseable. */
void sp_dump_damage(const char *path, const struct sp_reader *r);

#endif
