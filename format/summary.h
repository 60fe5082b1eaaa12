/*
 * summary.h - per-chunk summaries, private to format/.
 *
 * At a chunk's seal the compressor walks its events once for their times
 * (no field but the duration is decoded) and stores, ahead of the chunk's
 * zstd frame and inside the same frame payload, a zstd *skippable frame*
 * holding the chunk's summary (struct sp_chunk_summary, sprof.h): events
 * per type, the earliest and latest start per type, and per pair of types
 * (a, b) how far an event of b started before the latest start of an a
 * seen earlier in the chunk.  zstd steps over skippable frames when it
 * decompresses, so a reader that knows nothing of summaries reads the
 * frame exactly as before; one that does can tell what a chunk holds
 * without decompressing it.
 *
 * Stored form (docs/format.md, "Chunk summaries"), all varints LEB128:
 *
 *   u32 SP_SUMMARY_MAGIC   a zstd skippable-frame magic
 *   u32 size               bytes that follow (zstd's rule)
 *   u32 SP_SUMMARY_TAG     "SPCS", so other skippable frames are told apart
 *   ntypes                 varint, then per type in increasing id:
 *                          id (1 byte), count, t_min, t_max - t_min
 *   npairs                 varint, then per pair: a (1 byte), b (1 byte), lag
 *
 * A summary that does not parse is ignored (the reader computes its own).
 */
#ifndef SP_SUMMARY_H
#define SP_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "sprof.h"

#define SP_SUMMARY_MAGIC 0x184D2A53u /* zstd skippable frame, 0x184D2A5? */
#define SP_SUMMARY_TAG 0x53435053u   /* "SPCS" */
/* Room for the largest summary: every type and every pair at full width. */
#define SP_SUMMARY_MAX (12 + 10 + SP_EV_MAX * 31 + 10 + SP_EV_MAX * SP_EV_MAX * 12)

/* A summary being built, in chunk order.  A type's t_max so far is the
 * latest start of that type before the next event, which is what the
 * pair lags are measured from.  While it is built, a type with no event
 * yet has t_min UINT64_MAX and t_max 0, so that each event only takes
 * the least and the most of its start and those (no test of whether its
 * type was seen); sp_summary_finish then sets `types` from the counts
 * and the absent types' t_min back to 0. */
struct sp_summary_build {
    struct sp_chunk_summary s;
    uint64_t latest;              /* latest start so far, any type */
    uint64_t last_end[SP_EV_MAX]; /* per type, where its last event ended (the codec's end[]) */
};

/* Per type, the position of its DUR field among its fields, -1 when it
 * has none (schema.c: filled by sp_schema_dur_init, which
 * sp_summary_begin calls; the schema's, so that the column transform
 * and the summaries both read it from below). */
extern int sp_schema_dur_at[SP_EV_MAX];
void sp_schema_dur_init(void);

void sp_summary_begin(struct sp_summary_build *b, uint32_t tid);

/* Places one event of a known type starting at t, the next in chunk
 * order, in the summary's times, without counting it (the column
 * transform counts each type's events in its first pass and sets the
 * counts once, sp_summary_set_counts). */
static inline void sp_summary_place(struct sp_summary_build *b, unsigned type, uint64_t t)
{
    struct sp_chunk_summary *s = &b->s;
    if (t < s->t_min[type])
        s->t_min[type] = t;
    if (t >= b->latest) { /* most events: nothing started after them yet */
        b->latest = t;
        s->t_max[type] = t;
        return;
    }
    /* A type not seen yet has t_max 0, never after t. */
    for (unsigned a = 1; a < SP_EV_MAX; a++)
        if (s->t_max[a] > t && s->t_max[a] - t > s->lag[a][type])
            s->lag[a][type] = s->t_max[a] - t;
    if (t > s->t_max[type])
        s->t_max[type] = t;
}

/* Adds one event of a known type starting at t, the next in chunk order. */
static inline void sp_summary_add(struct sp_summary_build *b, unsigned type, uint64_t t)
{
    b->s.count[type]++;
    b->s.events++;
    sp_summary_place(b, type, t);
}

/* The summary of the events added, ready to be read or encoded: its
 * types, and t_min 0 for the others.  sp_summary_from_rows and
 * sp_summary_from_columns call it; so does the column transform. */
static inline void sp_summary_finish(struct sp_summary_build *b)
{
    struct sp_chunk_summary *s = &b->s;
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        if (s->count[t])
            s->types |= SP_TYPE_BIT(t);
        else
            s->t_min[t] = 0;
    }
}

/* The summary's counts: count[t] events of each type, whatever was
 * counted before (events placed with sp_summary_place, or added). */
static inline void sp_summary_set_counts(struct sp_summary_build *b, const uint32_t count[SP_EV_MAX])
{
    b->s.events = 0;
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        b->s.count[t] = count[t];
        b->s.events += count[t];
    }
}

/* Adds the event of a known `type` whose body (delta, then fields) is
 * [q, bend), the next in chunk order: its delta and duration are
 * decoded, nothing else.  0, or SP_E_CORRUPT.  The row walk below and
 * the column transform's first pass (columns.c) both call it, so that
 * the compressor walks a chunk's rows once for both. */
static inline int sp_summary_event(struct sp_summary_build *b, unsigned type, const uint8_t *q,
                                   const uint8_t *bend)
{
    uint64_t delta, v = 0;
    if (sp_get_uvarint(&q, bend, &delta) < 0)
        return SP_E_CORRUPT;
    uint64_t t = b->last_end[type] + (uint64_t)sp_unzigzag(delta);
    int at = sp_schema_dur_at[type];
    for (int i = 0; i <= at; i++) {
        if (q >= bend) { /* a missing field reads as 0 */
            v = 0;
            break;
        }
        if (sp_get_uvarint(&q, bend, &v) < 0)
            return SP_E_CORRUPT;
    }
    b->last_end[type] = t + (at >= 0 ? v : 0);
    sp_summary_add(b, type, t);
    return 0;
}

/* The summary of the row chunk [rows, rows + len): times only.  Stops at
 * padding or at a malformed event (the events before it are counted).
 * Returns 0, or SP_E_CORRUPT when it stopped at damage. */
int sp_summary_from_rows(struct sp_summary_build *b, const uint8_t *rows, size_t len);

/* The same from an open column chunk, checking the columns it reads (the
 * delta and the duration of each type).  0, or SP_E_CORRUPT. */
struct sp_columns;
int sp_summary_from_columns(struct sp_summary_build *b, struct sp_columns *c);

/* Stores s as a skippable frame at out (room for SP_SUMMARY_MAX bytes);
 * returns the bytes written. */
size_t sp_summary_encode(const struct sp_chunk_summary *s, uint8_t *out);

/* Reads a stored summary at the start of a frame payload [p, p + len).
 * Returns the skippable frame's size in bytes when one is there and
 * parses (s filled, its tid left as set by the caller), 0 when the payload
 * does not start with one, SP_E_CORRUPT when it starts with one that does
 * not parse. */
long sp_summary_decode(struct sp_chunk_summary *s, const uint8_t *p, size_t len);

#endif
