/*
 * traceset.h - the trace set: the files of one job, found under a
 * directory, and the one loop that feeds a file's events to a pass.
 *
 * Every analysis reads traces through sp_trace_feed, in the manner of
 * perf's session feeding its tools: a pass says which event types it reads
 * (the reader steps over the rest without decoding them), sets field masks
 * when the file opens, and is given each event through a struct sp_tool of
 * callbacks.  Pass 1 (model_load.c), pass 2 (model_classify.c), the
 * hang post-mortem's own pass, the host and kernel views, export and dump
 * are such passes.
 *
 * Errors are values: functions return 0 or a negative SP_E_* code and
 * never abort.
 */
#ifndef SP_TRACESET_H
#define SP_TRACESET_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "sprof.h"

/* How often (events) a pass's `every` callback runs. */
#define SP_PASS_EVERY 4096
/* Events taken from the reader at a time (sp_reader_next_refs): those
 * decoded already, without a call per event. */
#define SP_FEED_BATCH 64

struct sp_pass {
    uint64_t types;      /* SP_TYPE_BIT()s to read; 0 reads every type */
    struct sp_tool tool; /* fed each event read (NULL callbacks skip) */
    /* After the file opened, before any event: set field masks here.
     * Non-zero skips the file (sp_trace_feed returns it). */
    int (*open)(void *ctx, struct sp_reader *r);
    /* Every SP_PASS_EVERY events (or every_events, a power of two, when
     * set) and once at the end (may change masks). */
    void (*every)(void *ctx, struct sp_reader *r);
    uint32_t every_events;
    /* After the last event, with the reader still open (its diagnostics,
     * statistics). */
    void (*close)(void *ctx, struct sp_reader *r);
    /* When set, after a batch's events went to the tool: how many (n, not
     * 0) and the latest time among them, all of thread tid (a batch is
     * one chunk's, and a chunk one thread's); a batch in which `every`
     * runs gives each event on its own, before `every` sees it. */
    void (*batch)(void *ctx, uint32_t tid, uint64_t n, int64_t max_t);
};

/* The times a trace's events may have: a window around its own span, from
 * a day before its start (header start_mono) to a day after its close
 * (end_mono), or a year after its start when it was never closed or its
 * close is not after its start (a trace written on another clock).  An
 * event outside it - a time of 9e18 ns, say - is damage: sp_trace_feed
 * leaves it out and counts it in the reader's diagnostics, which name the
 * file (traceset.c).  *lo and *span: the window is [lo, lo + span]. */
void sp_trace_window(const struct sp_reader *r, uint64_t *lo, uint64_t *span);
/* The diagnostic line for `n` events outside the window, the first at t. */
void sp_trace_note_bad_times(struct sp_reader *r, uint64_t n, uint64_t t, uint64_t lo, uint64_t span);

/* Opens the trace at path and feeds it to the pass.  Returns 0 when the
 * file was read to its end (damage inside is reported through
 * sp_reader_diag in `close`), a tool's non-zero return when it stopped
 * the stream, the open callback's non-zero return, or the negative SP_E_*
 * of sp_reader_open (*err_out gets it too when not NULL).
 *
 * Inline, so that a pass given as a constant (pass 1's, pass 2's) has its
 * callbacks called directly and inlined: the loop costs what a loop
 * written for the pass would. */
static inline __attribute__((always_inline)) int sp_trace_feed(const char *path, const struct sp_pass *p,
                                                               void *ctx, int *err_out)
{
    int err = 0;
    struct sp_reader *r = sp_reader_open(path, &err);
    if (err_out)
        *err_out = r ? 0 : err;
    if (!r && err == SP_E_NOMEM)
        sp_alloc_lost();
    if (!r)
        return err < 0 ? err : SP_E_IO;
    if (p->types)
        sp_reader_set_types(r, (uint32_t)p->types);
    int rc = p->open ? p->open(ctx, r) : 0;
    if (rc) {
        sp_reader_close(r);
        return rc;
    }
    const struct sp_event *evs[SP_FEED_BATCH];
    size_t got;
    uint64_t n = 0, lo, span, bad = 0, bad_t = 0;
    const uint64_t every_mask = (p->every_events ? p->every_events : SP_PASS_EVERY) - 1;
    sp_trace_window(r, &lo, &span);
    while (!rc && (got = sp_reader_next_refs(r, evs, SP_FEED_BATCH))) {
        /* A batch that cannot reach the next `every` (nearly all of them)
         * counts its events at its end, not one by one: the same loop
         * without the count and its test. */
        if (!p->every || (n & every_mask) + got <= every_mask) {
            const uint64_t bad_before = bad;
            int64_t max_t = INT64_MIN;
            for (size_t i = 0; i < got; i++) {
                const struct sp_event *ev = evs[i];
                if (__builtin_expect(ev->t - lo > span, 0)) {
                    if (!bad++)
                        bad_t = ev->t;
                    continue;
                }
                if (p->batch && (int64_t)ev->t > max_t)
                    max_t = (int64_t)ev->t;
                if ((rc = sp_tool_dispatch(&p->tool, ctx, r, ev)) != 0)
                    break;
            }
            uint64_t good = got - (bad - bad_before);
            n += good;
            if (p->batch && good && !rc)
                p->batch(ctx, evs[0]->tid, good, max_t);
            continue;
        }
        for (size_t i = 0; i < got; i++) {
            const struct sp_event *ev = evs[i];
            if (__builtin_expect(ev->t - lo > span, 0)) { /* damage: never reaches a pass */
                if (!bad++)
                    bad_t = ev->t;
                continue;
            }
            if ((rc = sp_tool_dispatch(&p->tool, ctx, r, ev)) != 0)
                break;
            if (p->batch)
                p->batch(ctx, ev->tid, 1, (int64_t)ev->t);
            if ((++n & every_mask) == 0)
                p->every(ctx, r);
        }
    }
    if (bad)
        sp_trace_note_bad_times(r, bad, bad_t, lo, span);
    if (p->every && !rc)
        p->every(ctx, r);
    if (p->close)
        p->close(ctx, r);
    sp_reader_close(r);
    return rc;
}

/* The *.sprof files under dir, recursively, sorted by path.  Directories
 * are entered once each (by device and inode, so links that loop are
 * harmless) and at most SP_TRACE_MAX_DEPTH deep.  *paths is malloc'd, each
 * path too; free with sp_trace_paths_free.  Returns the count (0 none), or
 * a negative SP_E_* when dir cannot be opened (*why says why, static). */
#define SP_TRACE_MAX_DEPTH 32
int sp_trace_find(const char *dir, char ***paths, const char **why);
void sp_trace_paths_free(char **paths, int n);

#endif
