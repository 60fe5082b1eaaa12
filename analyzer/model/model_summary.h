/*
 * model_summary.h - per-host summaries of a trace set (scaleprof reduce):
 * what the model reads from the traces, written where the traces are, so
 * that the analysis of a job spread over many machines reads kilobytes per
 * rank-step instead of every event.
 *
 * A summary holds, for the trace files of one or more host directories,
 * pass 1's record of every file (NCCL calls matched to their kernels, step
 * markers, the recording threads, pauses, input and CPU evidence: struct
 * sp_file_rec and its arrays, as sp_model_scan leaves them) and, for each
 * rank of those hosts, what pass 2 made of its events (categories per
 * step, the replay's nodes, the evidence counters of struct sp_rank).
 * Loading summaries (sp_model_open on a directory that holds *.spsum)
 * gives the model the same file records a scan of the traces gives, so
 * the passes between (run, ranks, clocks, steps, collectives) run as they
 * run on traces; the classify pass then takes each rank's results from
 * its summary instead of reading events.  Everything after (stragglers,
 * replay, findings, the renderers) cannot tell the difference.
 *
 * Stored form (docs/scale.md): a zstd frame after the magic "SPSUMZ1\n"
 * and the length it decompresses to; inside, the magic "SPSUM01\n", the sizes of the
 * records (a summary is read back by the scaleprof build that wrote it, or
 * refused), the options pass 1 and 2 depend on (warm-up skip, --steps,
 * the step-marker pattern, --run), then length-prefixed sections.  Every
 * read is bounds-checked: a damaged summary is refused with its name and
 * the offset where it stopped making sense.
 *
 * Errors are values: functions return 0 or -1 with a warning on the model.
 */
#ifndef SP_MODEL_SUMMARY_H
#define SP_MODEL_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

#define SP_SUMMARY_SUFFIX ".spsum"

/* A growing byte buffer; err is set (and stays) when memory ran out. */
struct sp_sbuf {
    unsigned char *p;
    size_t n, cap;
    int err;
};
void sp_sbuf_free(struct sp_sbuf *b);
/* in, compressed (zstd) into out as a summary file holds it; sp_summary_read
 * takes either.  0, or -1 (out empty) when memory ran out. */
int sp_summary_pack(const struct sp_sbuf *in, struct sp_sbuf *out);

/* Whether dir directly holds *.spsum files (and so is read as summaries). */
int sp_summary_is_dir(const char *dir);

/* The summary's header: magic, record sizes and m's options. */
void sp_summary_put_header(struct sp_sbuf *b, const struct sp_model *m, const char *token);
/* Pass 1's records m->frecs[i] for which own[i] (all when own is NULL),
 * as sp_model_scan leaves them (before sp_model_group). */
void sp_summary_put_frecs(struct sp_sbuf *b, const struct sp_model *m, const uint8_t *own);
/* Pass 2's results of the ranks m->ranks[i] for which which[i]. */
void sp_summary_put_ranks(struct sp_sbuf *b, const struct sp_model *m, const uint8_t *which);

/* Reads the summary (or pass-1 part) in p[0..n): its header is checked
 * against m's options and token (NULL: any); its file records are
 * appended to m->frecs (own[] gets 1 for each when `own` is not NULL);
 * its rank results are kept for sp_summary_classified.  Returns 0, or -1
 * with a warning naming `name`. */
int sp_summary_read(struct sp_model *m, const char *name, const unsigned char *p, size_t n, const char *token,
                    uint8_t **own);
/* Sorts m->frecs by path, as a scan of the traces orders them (own[]
 * follows when not NULL); a path found twice is kept once, with a warning. */
void sp_summary_sort_frecs(struct sp_model *m, uint8_t *own);

/* For reduce, the two halves of sp_model_open around the meeting (model.c,
 * which runs the passes): pass 1 alone over this part's trace paths (taken
 * and freed), and, once every part's records are in m->frecs (sorted), the
 * rest of loading (run, ranks, warnings, clocks): m is then at
 * SP_STAGE_LOAD. */
int sp_summary_scan(struct sp_model *m, char **paths, int n);
int sp_summary_open(struct sp_model *m);

/* What sp_model_open loads in place of pass 1 (sp_model_load) when m->dir
 * holds summaries: every *.spsum under it, its file records in m->frecs. */
int sp_summary_load(struct sp_model *m);
/* The classify pass on summaries: each rank's results from its summary;
 * a rank no summary holds stays unclassified (with a warning). */
int sp_summary_classified(struct sp_model *m);
/* Whether m was loaded from summaries. */
static inline int sp_model_from_summaries(const struct sp_model *m) { return m->reduced != NULL; }
void sp_summary_free(struct sp_model *m);

/* Reads a whole file into memory (*p malloc'd).  0, or -1 with errno. */
int sp_summary_slurp(const char *path, unsigned char **p, size_t *n);

#endif
