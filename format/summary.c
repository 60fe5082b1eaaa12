/*
 * summary.c - per-chunk summaries (summary.h): built from a chunk's rows
 * by the compressor and by the reader, stored as a zstd skippable frame.
 *
 * Building needs each event's start only, so the walk decodes the time
 * delta and the duration (from which the type's next event is timed) and
 * steps over the other fields by the event's length: a few instructions
 * per event on the compressor thread, off the job's threads.
 */
#include <string.h>

#include "codec.h"
#include "columns.h"
#include "summary.h"

void sp_summary_begin(struct sp_summary_build *b, uint32_t tid)
{
    memset(b, 0, sizeof *b);
    b->s.tid = tid;
    for (unsigned t = 1; t < SP_EV_MAX; t++)
        b->s.t_min[t] = UINT64_MAX; /* no event yet (summary.h) */
    sp_schema_dur_init();
}

static int rows_walk(struct sp_summary_build *b, const uint8_t *rows, size_t len)
{
    const uint8_t *p = rows, *end = rows + len;
    while (p < end && *p) {
        unsigned type = *p;
        const uint8_t *q = p + 1;
        uint64_t elen;
        if (sp_get_uvarint(&q, end, &elen) < 0 || elen > (uint64_t)(end - q))
            return SP_E_CORRUPT;
        p = q + elen;
        if (sp_codec_known(type) && sp_summary_event(b, type, q, p) < 0)
            return SP_E_CORRUPT;
    }
    return 0;
}

int sp_summary_from_rows(struct sp_summary_build *b, const uint8_t *rows, size_t len)
{
    int rc = rows_walk(b, rows, len);
    sp_summary_finish(b); /* the events before any damage */
    return rc;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, sizeof v);
    return p + sizeof v;
}

size_t sp_summary_encode(const struct sp_chunk_summary *s, uint8_t *out)
{
    uint8_t *p = out + 8; /* magic and size come last */
    p = put_u32(p, SP_SUMMARY_TAG);
    unsigned ntypes = 0, npairs = 0;
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        ntypes += (s->types >> t) & 1u;
        for (unsigned a = 1; a < SP_EV_MAX; a++)
            npairs += s->lag[a][t] != 0;
    }
    p = sp_put_uvarint(p, ntypes);
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        if (!((s->types >> t) & 1u))
            continue;
        *p++ = (uint8_t)t;
        p = sp_put_uvarint(p, s->count[t]);
        p = sp_put_uvarint(p, s->t_min[t]);
        p = sp_put_uvarint(p, s->t_max[t] - s->t_min[t]);
    }
    p = sp_put_uvarint(p, npairs);
    for (unsigned a = 1; a < SP_EV_MAX; a++)
        for (unsigned t = 1; t < SP_EV_MAX; t++)
            if (s->lag[a][t]) {
                *p++ = (uint8_t)a;
                *p++ = (uint8_t)t;
                p = sp_put_uvarint(p, s->lag[a][t]);
            }
    put_u32(out, SP_SUMMARY_MAGIC);
    put_u32(out + 4, (uint32_t)(p - out - 8));
    return (size_t)(p - out);
}

long sp_summary_decode(struct sp_chunk_summary *s, const uint8_t *p, size_t len)
{
    uint32_t magic, size, tag;
    if (len < 12)
        return 0;
    memcpy(&magic, p, 4);
    memcpy(&size, p + 4, 4);
    memcpy(&tag, p + 8, 4);
    if (magic != SP_SUMMARY_MAGIC || tag != SP_SUMMARY_TAG)
        return 0;
    if (size < 4 || size > len - 8)
        return SP_E_CORRUPT;
    const uint8_t *q = p + 12, *end = p + 8 + size;
    uint32_t tid = s->tid;
    memset(s, 0, sizeof *s);
    s->tid = tid;
    s->stored = 1;
    uint64_t n, v, span;
    if (sp_get_uvarint(&q, end, &n) < 0 || n > 255)
        return SP_E_CORRUPT;
    for (uint64_t i = 0; i < n; i++) {
        if (q >= end)
            return SP_E_CORRUPT;
        unsigned t = *q++;
        if (sp_get_uvarint(&q, end, &v) < 0 || sp_get_uvarint(&q, end, &s->t_min[0]) < 0 ||
            sp_get_uvarint(&q, end, &span) < 0)
            return SP_E_CORRUPT;
        if (t == 0 || t >= SP_EV_MAX || !sp_codec_known(t))
            continue; /* a type from a newer writer: not counted, as not read */
        s->types |= SP_TYPE_BIT(t);
        s->count[t] = v;
        s->t_min[t] = s->t_min[0];
        s->t_max[t] = s->t_min[0] + span;
        s->events += v;
    }
    s->t_min[0] = 0;
    if (sp_get_uvarint(&q, end, &n) < 0 || n > 255 * 255)
        return SP_E_CORRUPT;
    for (uint64_t i = 0; i < n; i++) {
        if (end - q < 2)
            return SP_E_CORRUPT;
        unsigned a = q[0], t = q[1];
        q += 2;
        if (sp_get_uvarint(&q, end, &v) < 0)
            return SP_E_CORRUPT;
        if (a < SP_EV_MAX && t < SP_EV_MAX && sp_codec_known(a) && sp_codec_known(t))
            s->lag[a][t] = v;
    }
    return (long)(8 + size);
}

static int columns_walk(struct sp_summary_build *b, struct sp_columns *c)
{
    const uint8_t *delta[SP_EV_MAX] = {0}, *dur[SP_EV_MAX] = {0};
    uint64_t last_end[SP_EV_MAX] = {0};
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        if (!c->count[t] || !sp_codec_known(t))
            continue;
        uint64_t want = 1;
        if (sp_schema_dur_at[t] >= 0)
            want |= UINT64_C(1) << (sp_schema_dur_at[t] + 1);
        if (sp_columns_check(c, t, want) < 0)
            return SP_E_CORRUPT;
        delta[t] = c->col[t][0];
        if (sp_schema_dur_at[t] >= 0)
            dur[t] = c->col[t][sp_schema_dur_at[t] + 1];
    }
    for (uint32_t i = 0; i < c->n; i++) {
        unsigned t = c->types[i];
        if (!delta[t])
            continue; /* a newer writer's type */
        uint64_t d, v = 0;
        if (sp_column_get(&delta[t], &d) < 0 || (dur[t] && sp_column_get(&dur[t], &v) < 0))
            return SP_E_CORRUPT;
        uint64_t start = last_end[t] + (uint64_t)sp_unzigzag(d);
        last_end[t] = start + v;
        sp_summary_add(b, t, start);
    }
    return 0;
}

int sp_summary_from_columns(struct sp_summary_build *b, struct sp_columns *c)
{
    int rc = columns_walk(b, c);
    sp_summary_finish(b);
    return rc;
}
