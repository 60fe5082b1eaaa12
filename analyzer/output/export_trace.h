/*
 * export_trace.h - the timeline of a trace set, as Perfetto's protobuf
 * trace (the default; export_perfetto.c) or Chrome Trace Event JSON
 * (export_trace.c), which ui.perfetto.dev and chrome://tracing open
 * (docs/export.md).
 *
 * The model gives the structure (ranks, steps, collectives split into
 * wait and transfer, findings, the what-if replay it kept); the events
 * come from the traces, one rank at a time through sp_trace_feed, written
 * as they are read: memory holds the model, never the timeline.  Both
 * formats are one walk (export_walk.c) over a const model.
 */
#ifndef SP_EXPORT_TRACE_H
#define SP_EXPORT_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "model.h"

enum sp_export_format { SP_EXPORT_PERFETTO,
                        SP_EXPORT_JSON };
/* How much of each rank the Perfetto timeline holds: AUTO is the summary
 * past what a viewer holds (export_perfetto.c), FULL everything. */
enum sp_export_detail { SP_EXPORT_AUTO,
                        SP_EXPORT_SUMMARY,
                        SP_EXPORT_FULL };

struct sp_export_opts {
    int step_first, step_last; /* step numbers as report prints them, both
                                  included; -1: every step */
    const long long *ranks;    /* ranks to write, ascending; NULL: all */
    size_t nranks;
    int whatif;    /* enum sp_cause replayed beside, -1 none */
    int host_only; /* no GPU was seen: steps without their breakdown, no
                      finding (every one is a share of GPU time) */
    int detail;    /* enum sp_export_detail (Perfetto only: the JSON is full) */
};

struct sp_export_stats {
    uint64_t events; /* trace events written */
    uint64_t slices; /* timeline entries written in all */
    uint64_t flows;
    int ranks;
    int whatif_ok;    /* the what-if groups were written */
    int summary;      /* Perfetto: the summary timeline was chosen */
    int detailed;     /* Perfetto: ranks written in full */
    uint64_t dropped; /* Perfetto: packets left out (past the packet size) */
    /* what the timeline left out, for the verb to add to the model's
     * warnings (sp_model_warn_all): the what-if the model did not keep,
     * the traces that could not be read again */
    struct sp_warn_list warnings;
};

/* The bytes the timeline would take, from pass 1's event counts and the
 * window: what the verb compares with its warning threshold. */
double sp_export_estimate(const struct sp_model *m, const struct sp_export_opts *o);

/* Writes the timeline of m (run to SP_STAGE_FINDINGS, and for a what-if
 * asked to keep it first: sp_model_keep_whatif(m, o->whatif)) to out.
 * Returns 0, or -1 when out failed (errno set); unreadable traces are
 * skipped.  st (when not NULL) receives what was written and what was
 * left out (its warnings: the caller frees them, sp_warn_list_free). */
int sp_export_trace(const struct sp_model *m, const struct sp_export_opts *o, FILE *out,
                    struct sp_export_stats *st);

/* The same timeline as Perfetto's protobuf trace (a Trace of
 * TracePackets), in full or as the summary (o->detail).  Returns 0, or -1
 * when out failed or memory ran out. */
int sp_export_perfetto(const struct sp_model *m, const struct sp_export_opts *o, FILE *out,
                       struct sp_export_stats *st);
/* The bytes of the full Perfetto timeline, from pass 1's counts. */
double sp_export_perfetto_estimate(const struct sp_model *m, const struct sp_export_opts *o);

/* The cause named by a what-if option ("input_pipeline", ...), or -1 when
 * the replay cannot remove it; names (when not NULL) lists the valid ones. */
int sp_export_whatif_cause(const char *name, char *names, size_t len);

/* What sp_export_write did: whether the timeline could not be written
 * (and why: errno), and what went in. */
struct sp_export_done {
    int failed, err;
    struct sp_export_stats st;
};

/* export_file.c: writes m's timeline to path (stdout for "-", gzip'd
 * when it ends in .gz; the JSON when json, else the protobuf), with a note
 * first when it will be too large for a viewer; dir names the traces in
 * that note.  -1 when path cannot be opened (said on stderr), else 0 with
 * *d filled (a timeline that could not be written is removed).  The verb
 * then adds d->st.warnings to the model's and calls sp_export_say. */
int sp_export_write(const struct sp_model *m, const struct sp_export_opts *o, const char *dir, const char *path,
                    int json, struct sp_export_done *d);
/* Says on stderr the model's warnings, then what went in (or that path
 * could not be written).  Returns the verb's exit status (1: not
 * written, nothing left at path). */
int sp_export_say(const struct sp_model *m, const struct sp_export_opts *o, const char *path, int json,
                  const struct sp_export_done *d);
/* Whether an output path asks for gzip (.gz) or for the JSON (.json,
 * .json.gz) */
int sp_export_path_is_gz(const char *path);
int sp_export_path_is_json(const char *path);

#endif
