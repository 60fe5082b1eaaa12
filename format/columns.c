/*
 * columns.c - the column layout of compressed chunks: the compressor's
 * transform from rows, and the reader's setup of one cursor per column.
 * columns.h describes the layout and why it exists.
 *
 * The transform is exact or it does not happen: it copies each event's
 * varints into their columns without decoding them, and it refuses (the
 * chunk is then compressed in rows, as version 2 did) any chunk holding
 * an event it could not give back byte for byte: a type this build does
 * not know, or an event whose length is not exactly its varints.  The
 * events a reader decodes are therefore the same from both layouts.
 *
 * Two passes over the rows: the first checks every event's type and
 * length and counts each type's events and bytes, which bound each
 * column (the scratch then holds every column in room for its bound);
 * the second walks the events in chunk order, each type's fields copied
 * by a straight line of word loads and stores generated from the schema
 * (no field's boundary is found twice, no per-event cursor is kept), and
 * adds each event to the chunk's summary (summary.h) with the delta and
 * duration it has just passed.  An IO event is the one type whose
 * varints are not its columns in order: since version 4 its path comes
 * first, and a repeat (codec.h) has three or four varints, which go to
 * the columns of its delta, dur, path and (unless it is its size) ret.  Both passes run in the
 * compressor thread, off the job's path; a 128 KiB chunk takes a few
 * tens of microseconds.
 */
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "columns.h"
#include "summary.h"

_Static_assert(sizeof(struct sp_ev_nccl) / sizeof(uint64_t) + 1 <= SP_MAX_COLUMNS,
               "SP_MAX_COLUMNS must cover the widest type");
/* The encoder stores varints a word at a time: the longest event (type,
 * two length bytes, every column at its longest) plus a word's overrun
 * fits the room the writer leaves for one event. */
_Static_assert(3 + SP_MAX_COLUMNS * SP_VARINT_MAX + SP_WORD <= SP_EVENT_MAX_BYTES,
               "SP_EVENT_MAX_BYTES must cover the longest event and a word");
/* Pass 2 reads an event's length in one or two varint bytes. */
_Static_assert(SP_MAX_COLUMNS *SP_VARINT_MAX < 1 << 14, "a body's length must fit two varint bytes");

/* Bytes of the varint at p, bounded by end; 0 when it runs past end or
 * past SP_VARINT_MAX bytes. */
static size_t varint_bytes(const uint8_t *p, const uint8_t *end)
{
    for (size_t i = 0; i < SP_VARINT_MAX && p + i < end; i++)
        if (p[i] < 0x80)
            return i + 1;
    return 0;
}

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* What the first pass learns.  Offsets are from the start of the rows. */
struct plan {
    uint32_t n;                /* events */
    uint32_t count[SP_EV_MAX]; /* events per type */
    size_t bytes[SP_EV_MAX];   /* the bodies' bytes per type: its columns' sum */
    size_t data;               /* bytes of all columns: the sum of the bodies */
};

/* An event's length of more than one byte at p + 1: its value in *blen
 * and its bytes in *lb.  0, or -1 when it is not a canonical varint. */
static __attribute__((noinline)) int long_length(const uint8_t *p, const uint8_t *end, uint64_t *blen,
                                                 size_t *lb)
{
    const uint8_t *q = p + 1;
    if (sp_get_uvarint(&q, end, blen) < 0 || (size_t)(q - p - 1) != varint_size(*blen))
        return -1;
    *lb = (size_t)(q - p - 1);
    return 0;
}

/* Per type id, for pass 1 (a load each, where sp_columns_of is a
 * switch): the fewest varints an event of the type holds, 0 for a type
 * this build does not know (all its columns, but a repeated IO event,
 * codec.h, only its delta, dur and path); and one more than the bytes a
 * body may hold beyond that many (up to SP_VARINT_MAX per column), 0 for
 * a type this build does not know, so that one unsigned compare,
 * blen - least >= body_span, refuses a body too short, too long or of an
 * unknown type (padding, type 0, included). */
#define IO_REPEAT_VARINTS 3
#define SP_X_LEAST(id, NAME, name, FIELDS) (id == SP_EV_IO ? IO_REPEAT_VARINTS : 1 FIELDS(SP_X_ONE_COLUMN))
#define SP_X_LEAST_OF(id, NAME, name, FIELDS) [id] = SP_X_LEAST(id, NAME, name, FIELDS),
#define SP_X_SPAN_OF(id, NAME, name, FIELDS) \
    [id] = (1 FIELDS(SP_X_ONE_COLUMN)) * SP_VARINT_MAX - SP_X_LEAST(id, NAME, name, FIELDS) + 1,
static const uint8_t least_varints[SP_TYPE_IDS] = {SP_EVENTS(SP_X_LEAST_OF)};
static const uint8_t body_span[SP_TYPE_IDS] = {SP_EVENTS(SP_X_SPAN_OF)};
#undef SP_X_SPAN_OF
#undef SP_X_LEAST_OF
#undef SP_X_LEAST
_Static_assert(SP_MAX_COLUMNS *SP_VARINT_MAX <= UINT8_MAX, "a body's span fits a byte");
/* IO columns (column c: field c - 1, the delta's 0), in the order of an
 * IO event's body (codec.h): path, with the repeat's mark, first. */
#define IO_COL_PATH 5
static const uint8_t io_body_columns[] = {0, 1, IO_COL_PATH, 2, 3, 4, 6, 7, 8, 9};
/* The columns a repeat leaves out (bit c: column c): op, fd, fd_kind,
 * bytes, offset, err; and ret's, which an event whose result is its
 * size leaves out. */
#define IO_REPEATED_COLUMNS 0x39cu
#define IO_COL_RET 6
/* The IO columns an event leaves out, by the marks of its path varint's
 * first byte. */
static inline uint32_t io_left_out(unsigned first)
{
    return ((first & SP_IO_REPEAT) ? IO_REPEATED_COLUMNS : 0) | ((first & SP_IO_RET_BYTES) ? 1u << IO_COL_RET : 0);
}
_Static_assert(sizeof io_body_columns == 1 SP_FIELDS_IO(SP_X_ONE_COLUMN), "an IO body's order names every column");

/* Where pass 1's fast loop stops: an event with a one-byte length
 * (SP_ONE_BYTE_LIMIT - 1 bytes of body at most) that starts before it
 * ends before the rows do. */
#define PLAN_REACH (1 + SP_ONE_BYTE_LIMIT)
/* Pass 1's per-type tally in one word: events above, bytes below (a
 * chunk's bytes fit 32 bits, and so does its count of events). */
#define TALLY_EVENT (UINT64_C(1) << 32)

/* Pass 1: every event of a known type with a canonical length; the type
 * stream goes to `types`.  0, or -1 when the chunk must stay in rows.
 * One branch per event in the common case (a one-byte length, a body of
 * least_varints to k * SP_VARINT_MAX bytes, an event that starts
 * PLAN_REACH bytes or more before the rows' end, so it ends within them);
 * the rest (the rows' last events, long bodies, padding, anything
 * refused) by the careful loop after it. */
static int plan_events(struct plan *pl, const uint8_t *rows, size_t len, uint8_t *types)
{
    const uint8_t *p = rows, *end = rows + len;
    const uint8_t *fast_end = len > PLAN_REACH ? end - PLAN_REACH : rows;
    uint64_t tally[SP_EV_MAX] = {0};
    uint32_t n = 0;
    while (p < fast_end) {
        unsigned type = p[0];
        size_t blen = p[1];
        if (__builtin_expect(blen >= SP_ONE_BYTE_LIMIT || blen - least_varints[type] >= body_span[type], 0))
            break;
        types[n++] = (uint8_t)type;
        tally[type] += TALLY_EVENT | blen;
        p += 2 + blen;
    }
    while (p < end && *p != 0) {
        unsigned type = *p;
        uint64_t blen;
        size_t lb = 1;
        if (end - p > 2 && p[1] < SP_ONE_BYTE_LIMIT)
            blen = p[1]; /* one byte: canonical */
        else if (long_length(p, end, &blen, &lb) < 0)
            return -1;
        const uint8_t *q = p + 1 + lb;
        /* A body shorter or longer than its varints can be is not copied:
         * refused here, so that column_bound holds for the events before
         * it and pass 2 reads every length in one or two bytes. */
        if (blen - least_varints[type] >= body_span[type] || blen > (uint64_t)(end - q))
            return -1;
        types[n++] = (uint8_t)type;
        tally[type] += TALLY_EVENT | blen;
        p = q + blen;
    }
    pl->n = n;
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        pl->count[t] = (uint32_t)(tally[t] / TALLY_EVENT);
        pl->bytes[t] = (uint32_t)tally[t];
        pl->data += pl->bytes[t];
    }
    return 0;
}

/* The most bytes one column of type t can hold: each event gives it at
 * most SP_VARINT_MAX bytes, and at most its body less one byte for
 * each of its other varints (least_varints - 1 at the fewest). */
static size_t column_bound(const struct plan *pl, unsigned t)
{
    size_t n = pl->count[t], least = least_varints[t];
    size_t by_body = pl->bytes[t] - (least - 1) * n; /* every body has `least` varints or more (pass 2) */
    size_t by_varint = n * SP_VARINT_MAX;
    return by_body < by_varint ? by_body : by_varint;
}

/* Bodies shorter than this are copied by the mask path (copy_event_*):
 * one bit per byte of a 64-bit mask, and bit 63 a sentinel. */
#define MASK_BODY 63
_Static_assert(MASK_BODY <= SP_ONE_BYTE_LIMIT, "a two-byte length must take the slow path");
/* Bytes of a field moved at once: any varint (SP_VARINT_MAX). */
#define FIELD_MOVE 16

/* Bit i set where byte i of [q, q + blen) ends a varint (its high bit
 * clear), for blen < MASK_BODY; reads up to 64 bytes from q. */
static inline __attribute__((always_inline)) uint64_t stop_mask(const uint8_t *q, size_t blen)
{
    uint64_t cont;
#ifdef __SSE2__
    cont = (uint32_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)q));
    if (blen > 16) {
        cont |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(q + 16))) << 16;
        if (blen > 32) {
            cont |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(q + 32))) << 32;
            cont |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(q + 48))) << 48;
        }
    }
#else
    cont = 0;
    for (size_t i = 0; i < blen; i += SP_WORD) { /* the high bits of a word gathered by a multiply */
        uint64_t x;
        memcpy(&x, q + i, sizeof x);
        cont |= (((x & SP_CONT_BITS) >> 7) * 0x0102040810204080ull >> 56) << i;
    }
#endif
    return ~cont & ((UINT64_C(1) << blen) - 1);
}

/* Whether the body of blen bytes whose varint ends are m holds a run of
 * more than SP_VARINT_MAX - 1 bytes continued (a varint longer than any:
 * refused, as the byte-by-byte copy refuses it).  Runs of 2, 4, 8, then
 * two runs of 8 two bytes apart: 10. */
static inline __attribute__((always_inline)) int longer_than_varint(uint64_t m, size_t blen)
{
    uint64_t c = ~m & ((UINT64_C(1) << blen) - 1);
    c &= c >> 1;
    c &= c >> 2;
    c &= c >> 4;
    c &= c >> 2;
    return c != 0;
}

/* The value of the varint of b bytes at q (the delta and the duration,
 * for the summary). */
static inline __attribute__((always_inline)) uint64_t field_value(const uint8_t *q, size_t b)
{
    uint64_t x;
    memcpy(&x, q, sizeof x);
    if (__builtin_expect(b == 1, 1))
        return x & 0x7f;
    if (b == 2)
        return (x & 0x7f) | ((x >> 1) & 0x3f80);
    unsigned len;
    uint64_t v = sp_varint_from_word(x, &len);
    if (len == 0)
        sp_get_uvarint_long(&q, q + SP_VARINT_MAX, &v);
    return v;
}

/* Pass 2, per type: one event's varints, each to its column (col[c] is
 * column c's cursor), the delta and the duration decoded for the
 * summary.  Generated from the schema, so each type's copy is a straight
 * line.  Where each varint ends comes from one mask of the body's bytes,
 * not from the varint before it: the loads and stores of an event's
 * fields do not wait on each other (a chain through each field's length
 * made a copy with fewer instructions slower than the column-by-column
 * one).  Each field moves FIELD_MOVE bytes (the column's room has that
 * slack).  The event's end when its body, shorter than MASK_BODY, is
 * exactly its varints, else NULL (a missing varint ends at the sentinel,
 * past the body).  The caller makes sure that 64 + FIELD_MOVE bytes can
 * be read from the body's start. */
#define CT_VALUE_U(v)
#define CT_VALUE_S(v)
#define CT_VALUE_D(v)
#define CT_VALUE_DS(v)
#define CT_VALUE_STR(v)
#define CT_VALUE_DUR(v) v = field_value(q + at, end - at);
#define CT_COPY(value)                                                             \
    {                                                                              \
        size_t end = (unsigned)__builtin_ctzll(m | UINT64_C(1) << MASK_BODY) + 1u; \
        m &= m - 1;                                                                \
        memcpy(*col, q + at, FIELD_MOVE);                                          \
        value;                                                                     \
        *col++ += end - at;                                                        \
        at = end;                                                                  \
    }
#define CT_X_FIELD(kind, field) CT_COPY(CT_VALUE_##kind(dur))
/* The end of an event copied: the summary given its time, and the event's
 * end, or NULL when its bytes were not exactly its varints. */
#define CT_DONE(id)                                               \
    if (at != blen)                                               \
        return NULL;                                              \
    uint64_t t = sb->last_end[id] + (uint64_t)sp_unzigzag(delta); \
    sb->last_end[id] = t + dur;                                   \
    sp_summary_place(sb, id, t);                                  \
    return q + at;

/* CT_COPY to column c, the body's fields being out of the columns' order. */
#define CT_COPY_TO(c, value)                                                       \
    {                                                                              \
        size_t end = (unsigned)__builtin_ctzll(m | UINT64_C(1) << MASK_BODY) + 1u; \
        m &= m - 1;                                                                \
        memcpy(col[c], q + at, FIELD_MOVE);                                        \
        value;                                                                     \
        col[c] += end - at;                                                        \
        at = end;                                                                  \
    }

/* An IO event (codec.h's repeats): delta, dur and path; then ret alone
 * for a repeat, or the seven other fields, ret left out when its result
 * is its size.  The marks are the low bits of the path varint's first
 * byte. */
static inline __attribute__((always_inline)) const uint8_t *copy_event_io_v4(const uint8_t *q, size_t blen,
                                                                             uint8_t **col,
                                                                             struct sp_summary_build *sb)
{
    uint64_t m = stop_mask(q, blen), delta, dur;
    size_t at = 0;
    /* At least three varints (a repeat's): none longer than blen - 2. */
    if (blen > IO_REPEAT_VARINTS + SP_VARINT_MAX - 1 && __builtin_expect(longer_than_varint(m, blen), 0))
        return NULL;
    CT_COPY_TO(0, delta = field_value(q, end))
    CT_COPY_TO(1, dur = field_value(q + at, end - at))
    unsigned marks = q[at];
    CT_COPY_TO(IO_COL_PATH, )
    /* Straight lines, the columns constants (a loop over the body's
     * order tested each column and ran slower on format_bench's mix). */
    if (__builtin_expect(!(marks & SP_IO_REPEAT), 0)) {
        CT_COPY_TO(2, ) /* op */
        CT_COPY_TO(3, ) /* fd */
        CT_COPY_TO(4, ) /* fd_kind */
        if (!(marks & SP_IO_RET_BYTES))
            CT_COPY_TO(IO_COL_RET, )
        CT_COPY_TO(7, ) /* bytes */
        CT_COPY_TO(8, ) /* offset */
        CT_COPY_TO(9, ) /* err */
    } else if (__builtin_expect(!(marks & SP_IO_RET_BYTES), 0)) {
        CT_COPY_TO(IO_COL_RET, )
    }
    CT_DONE(SP_EV_IO)
}
#undef CT_COPY_TO

#define CT_X_TYPE(id, NAME, name, FIELDS)                                          \
    static inline __attribute__((always_inline)) const uint8_t *copy_event_##name( \
        const uint8_t *q, size_t blen, uint8_t **col, struct sp_summary_build *sb) \
    {                                                                              \
        if (id == SP_EV_IO)                                                        \
            return copy_event_io_v4(q, blen, col, sb);                             \
        uint64_t m = stop_mask(q, blen), delta, dur = 0;                           \
        size_t at = 0;                                                             \
        /* k varints in blen bytes: none longer than blen - (k - 1) */             \
        if (blen > (1 FIELDS(SP_X_ONE_COLUMN)) + SP_VARINT_MAX - 1 &&              \
            __builtin_expect(longer_than_varint(m, blen), 0))                      \
            return NULL;                                                           \
        CT_COPY(delta = field_value(q, end))                                       \
        FIELDS(CT_X_FIELD)                                                         \
        CT_DONE(id)                                                                \
    }
SP_EVENTS(CT_X_TYPE)
#undef CT_X_TYPE
#undef CT_X_FIELD
#undef CT_DONE
#undef CT_COPY

/* The same for an event near the rows' end, where the mask cannot be
 * read, or with a longer body: byte by byte, any type. */
static const uint8_t *copy_event_slow(unsigned type, const uint8_t *q, const uint8_t *bend, uint8_t **col,
                                      struct sp_summary_build *sb)
{
    const uint8_t *body = q;
    uint32_t skip = 0; /* columns this event leaves out: a repeated IO event's */
    for (unsigned i = 0, k = sp_columns_of(type); i < k; i++) {
        unsigned c = type == SP_EV_IO ? io_body_columns[i] : i;
        if ((skip >> c) & 1)
            continue;
        size_t b = q < bend ? varint_bytes(q, bend) : 0;
        if (!b)
            return NULL;
        if (type == SP_EV_IO && c == IO_COL_PATH)
            skip = io_left_out(*q);
        memcpy(col[c], q, b);
        col[c] += b;
        q += b;
    }
    if (q != bend || sp_summary_event(sb, type, body, bend) < 0)
        return NULL;
    return q;
}

/* The bytes before the columns, beyond the type stream, at most. */
static size_t table_bound(const struct plan *pl, size_t len)
{
    size_t bound = varint_size(SP_EV_MAX);
    for (unsigned t = 1; t < SP_EV_MAX; t++)
        if (pl->count[t])
            bound += 1 + varint_size(SP_MAX_COLUMNS) + sp_columns_of(t) * varint_size(len);
    return bound;
}

static uint8_t *put_table(uint8_t *p, const struct plan *pl,
                          const uint32_t size[SP_EV_MAX][SP_MAX_COLUMNS])
{
    unsigned ntypes = 0;
    for (unsigned t = 1; t < SP_EV_MAX; t++)
        ntypes += pl->count[t] != 0;
    p = sp_put_uvarint(p, ntypes);
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        if (!pl->count[t])
            continue;
        unsigned k = sp_columns_of(t);
        *p++ = (uint8_t)t;
        p = sp_put_uvarint(p, k);
        for (unsigned c = 0; c < k; c++)
            p = sp_put_uvarint(p, size[t][c]);
    }
    return p;
}

/* Each column's room in the scratch: its bound and SP_COLUMNS_COLUMN_SLACK,
 * for the bytes moved past a field (FIELD_MOVE at most, also for an
 * event refused mid-way: it moves one field more to each column). */
_Static_assert(SP_COLUMNS_COLUMN_SLACK >= 2 * FIELD_MOVE, "a column's slack must cover a field's move");
/* The mask path reads up to this far past a body's start (a missing
 * varint's field moved from the sentinel). */
#define MASK_REACH (64 + FIELD_MOVE)

/* Pass 2: the events in chunk order, each varint to its column in the
 * scratch, the summary built on the way.  0, or -1 when an event's bytes
 * are not exactly its varints. */
static int copy_events(const uint8_t *rows, size_t len, const uint8_t *types, uint32_t n,
                       uint8_t *col[SP_EV_MAX][SP_MAX_COLUMNS], struct sp_summary_build *sb)
{
    const uint8_t *p = rows;
    const uint8_t *fast_end = len > MASK_REACH ? rows + len - MASK_REACH : rows;
    for (uint32_t i = 0; i < n; i++) {
        unsigned type = types[i];
        size_t blen = p[1];
        const uint8_t *q = p + 2;
        /* One test for the common case: a two-byte length is a body
         * longer than MASK_BODY too. */
        if (__builtin_expect(q >= fast_end || blen >= MASK_BODY, 0)) {
            if (blen >= SP_ONE_BYTE_LIMIT) { /* canonical, two bytes (pass 1) */
                blen = (blen & 0x7f) | (size_t)p[2] << 7;
                q++;
            }
            p = copy_event_slow(type, q, q + blen, col[type], sb);
        } else
            switch (type) {
#define CT_X_CASE(id, NAME, name, FIELDS)              \
    case id:                                           \
        p = copy_event_##name(q, blen, col[type], sb); \
        break;
                SP_EVENTS(CT_X_CASE)
#undef CT_X_CASE
            default: /* pass 1 refused every type without a case */
                __builtin_unreachable();
            }
        if (!p)
            return -1;
    }
    return 0;
}

/* Layout while building: the type stream at out + SP_VARINT_MAX (n's
 * varint is not known yet), the columns in the scratch, each in room for
 * its bound; then n, the stream and the table are written, and the
 * columns copied after them. */
size_t sp_columns_from_rows(uint8_t *out, size_t cap, const uint8_t *rows, size_t len,
                            uint8_t *scratch, struct sp_summary_build *sb)
{
    struct plan pl = {0};
    uint8_t *types = out + SP_VARINT_MAX;
    if (len + SP_VARINT_MAX > cap || plan_events(&pl, rows, len, types) < 0 || pl.n == 0)
        return 0;
    size_t head = SP_VARINT_MAX + pl.n + table_bound(&pl, len);
    if (head + pl.data > cap)
        return 0;
    uint8_t *col[SP_EV_MAX][SP_MAX_COLUMNS], *start[SP_EV_MAX][SP_MAX_COLUMNS];
    size_t at = 0;
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        if (!pl.count[t])
            continue;
        size_t room = column_bound(&pl, t) + SP_COLUMNS_COLUMN_SLACK;
        for (unsigned c = 0, k = sp_columns_of(t); c < k; c++, at += room)
            start[t][c] = col[t][c] = scratch + at;
    }
    if (at > SP_COLUMNS_SCRATCH(len) || copy_events(rows, len, types, pl.n, col, sb) < 0)
        return 0;
    sp_summary_set_counts(sb, pl.count); /* placed, not counted, by pass 2 (counted by copy_event_slow's) */
    sp_summary_finish(sb);
    static __thread uint32_t size[SP_EV_MAX][SP_MAX_COLUMNS];
    for (unsigned t = 1; t < SP_EV_MAX; t++)
        for (unsigned c = 0, k = pl.count[t] ? sp_columns_of(t) : 0; c < k; c++)
            size[t][c] = (uint32_t)(col[t][c] - start[t][c]);
    /* n, the type stream and the table, then the columns. */
    uint8_t *p = sp_put_uvarint(out, pl.n);
    memmove(p, types, pl.n);
    p = put_table(p + pl.n, &pl, (const uint32_t(*)[SP_MAX_COLUMNS])size);
    for (unsigned t = 1; t < SP_EV_MAX; t++)
        for (unsigned c = 0, k = pl.count[t] ? sp_columns_of(t) : 0; c < k; c++) {
            memcpy(p, start[t][c], size[t][c]);
            p += size[t][c];
        }
    return (size_t)(p - out);
}

/* ---- reading ---------------------------------------------------------------------- */

int sp_column_get_long(const uint8_t **pp, uint64_t *out)
{
    /* The column's check guarantees a last byte within it: the loop stops
     * there, or at SP_VARINT_MAX bytes. */
    return sp_get_uvarint_long(pp, *pp + SP_VARINT_MAX, out);
}

#ifdef __SSE2__
/* 16-byte vectors counted into one vector of byte tallies before they are
 * summed: each tally can take this many (two per step) without wrapping. */
#define COUNT_STEPS_MAX 127
#endif

/* Varints in [p, end): its bytes with the high bit clear. */
static uint64_t count_varints(const uint8_t *p, const uint8_t *end)
{
    uint64_t n = 0;
#ifdef __SSE2__
    /* A byte with its high bit clear is not below 0 as a signed byte: the
     * compare gives -1 there, subtracted into the byte's tally; the
     * tallies are summed by the sum of absolute differences from 0.  32
     * bytes take about ten instructions (a word of 8 took eight). */
    const __m128i minus_one = _mm_set1_epi8(-1);
    while (end - p >= 32) {
        size_t steps = (size_t)(end - p) / 32;
        if (steps > COUNT_STEPS_MAX)
            steps = COUNT_STEPS_MAX;
        __m128i tally = _mm_setzero_si128();
        for (size_t i = 0; i < steps; i++, p += 32) {
            __m128i a = _mm_loadu_si128((const __m128i *)p), b = _mm_loadu_si128((const __m128i *)(p + 16));
            tally = _mm_sub_epi8(tally, _mm_cmpgt_epi8(a, minus_one));
            tally = _mm_sub_epi8(tally, _mm_cmpgt_epi8(b, minus_one));
        }
        uint64_t sums[2];
        _mm_storeu_si128((__m128i *)sums, _mm_sad_epu8(tally, _mm_setzero_si128()));
        n += sums[0] + sums[1];
    }
#endif
    for (; end - p >= SP_WORD; p += SP_WORD) {
        uint64_t x;
        memcpy(&x, p, sizeof x);
        /* One per last byte, summed across the word by a multiply (no
         * popcount instruction in the baseline x86-64 target). */
        n += ((~x & SP_CONT_BITS) >> 7) * 0x0101010101010101ull >> 56;
    }
    for (; p < end; p++)
        n += *p < 0x80;
    return n;
}

/* Whether no byte of [p, end) has its high bit set: its bytes are then
 * as many one-byte varints.  The bytes are or'ed together, 32 at a time,
 * where counting took twice the instructions. */
static int all_one_byte(const uint8_t *p, const uint8_t *end)
{
    uint64_t high = 0;
#ifdef __SSE2__
    __m128i any = _mm_setzero_si128();
    for (; end - p >= 32; p += 32)
        any = _mm_or_si128(any, _mm_or_si128(_mm_loadu_si128((const __m128i *)p),
                                             _mm_loadu_si128((const __m128i *)(p + 16))));
    high = (uint64_t)_mm_movemask_epi8(any);
#endif
    for (; end - p >= SP_WORD; p += SP_WORD) {
        uint64_t x;
        memcpy(&x, p, sizeof x);
        high |= x & SP_CONT_BITS;
    }
    for (; p < end; p++)
        high |= *p & 0x80;
    return !high;
}

/* A column fit for unchecked reading: `count` varints, the last ending
 * with the column.  A column of as many bytes as varints (most are: a
 * kind, a stream, a small difference) holds them exactly when every
 * byte is one. */
static int column_ok(const uint8_t *p, uint64_t size, uint32_t count)
{
    if (size == 0)
        return count == 0;
    if (size == count)
        return all_one_byte(p, p + size);
    return p[size - 1] < 0x80 && count_varints(p, p + size) == count;
}

/* The table: per type its id, k, and k column sizes; columns follow the
 * table in its order.  Columns this build knows are placed and kept,
 * their varints unchecked until read (sp_columns_check); the others (a
 * newer writer's) are passed over. */
static int open_table(struct sp_columns *c, const uint8_t *p, const uint8_t *end,
                      uint64_t ntypes, const uint8_t *zeros, uint8_t *ids)
{
    const uint8_t *q = p;
    uint64_t k, size;
    for (uint64_t i = 0; i < ntypes; i++) { /* first, where the table ends */
        if (q >= end)
            return SP_E_CORRUPT;
        q++;
        if (sp_get_uvarint(&q, end, &k) < 0 || k > SP_TYPE_IDS)
            return SP_E_CORRUPT;
        for (uint64_t j = 0; j < k; j++)
            if (sp_get_uvarint(&q, end, &size) < 0)
                return SP_E_CORRUPT;
    }
    const uint8_t *data = q;
    uint8_t seen[SP_TYPE_IDS] = {0};
    for (uint64_t i = 0; i < ntypes; i++) {
        unsigned type = *p++;
        if (type == 0 || seen[type] || sp_get_uvarint(&p, end, &k) < 0)
            return SP_E_CORRUPT;
        seen[type] = 1;
        ids[i] = (uint8_t)type;
        unsigned known = sp_columns_of(type);
        for (uint64_t j = 0; j < k; j++) {
            if (sp_get_uvarint(&p, end, &size) < 0 || size > (uint64_t)(end - data))
                return SP_E_CORRUPT;
            if (j < known) {
                c->col[type][j] = data;
                c->size[type][j] = (uint32_t)size;
            }
            data += size;
        }
        if (known) /* an older writer's missing columns read 0: nothing to check */
            c->checked[type] = k >= known ? 0 : ~((UINT64_C(1) << k) - 1);
        for (uint64_t j = k; j < known; j++)
            c->col[type][j] = zeros;
    }
    return 0;
}

#ifdef __SSE2__
/* The table's types counted four at a time, 16 bytes of the stream at a
 * time: a compare per type, subtracted into that type's byte tallies,
 * which are summed (sum of absolute differences from 0) before any can
 * wrap.  A stream of a few types (a kernel-heavy chunk has four or five)
 * costs under one instruction a byte; a table of more types than
 * COUNT_TYPES_VEC is counted by count_types. */
#define COUNT_TYPES_VEC 8
#define COUNT_LANE_MAX 255

static inline uint32_t tally_sum(__m128i tally)
{
    uint64_t sums[2];
    _mm_storeu_si128((__m128i *)sums, _mm_sad_epu8(tally, _mm_setzero_si128()));
    return (uint32_t)(sums[0] + sums[1]);
}

/* count[ids[j]] += events of that type among the first n / 16 * 16 bytes
 * at p, for j < 4 (ids padded with 0, which is never a table's type);
 * returns the bytes counted. */
static uint32_t count_four_types(uint32_t *count, const uint8_t *p, uint32_t n, const uint8_t ids[4])
{
    const __m128i w0 = _mm_set1_epi8((char)ids[0]), w1 = _mm_set1_epi8((char)ids[1]);
    const __m128i w2 = _mm_set1_epi8((char)ids[2]), w3 = _mm_set1_epi8((char)ids[3]);
    uint32_t i = 0;
    while (n - i >= 16) {
        uint32_t steps = (n - i) / 16;
        if (steps > COUNT_LANE_MAX)
            steps = COUNT_LANE_MAX;
        __m128i t0 = _mm_setzero_si128(), t1 = t0, t2 = t0, t3 = t0;
        for (uint32_t k = 0; k < steps; k++, i += 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)(p + i));
            t0 = _mm_sub_epi8(t0, _mm_cmpeq_epi8(x, w0));
            t1 = _mm_sub_epi8(t1, _mm_cmpeq_epi8(x, w1));
            t2 = _mm_sub_epi8(t2, _mm_cmpeq_epi8(x, w2));
            t3 = _mm_sub_epi8(t3, _mm_cmpeq_epi8(x, w3));
        }
        count[ids[0]] += tally_sum(t0);
        count[ids[1]] += tally_sum(t1);
        count[ids[2]] += tally_sum(t2);
        count[ids[3]] += tally_sum(t3);
    }
    return i;
}
#endif

/* count[t] += events of type t in the type stream.  A long stream is
 * counted in four tallies, summed at the end: the types of neighbouring
 * events then land in different tallies, and an increment does not wait
 * for the previous one of the same type to be stored. */
static void count_types(uint32_t *count, const uint8_t *p, uint32_t n)
{
    uint32_t i = 0;
    if (n >= 1024) {
        uint32_t tally[4][SP_TYPE_IDS];
        memset(tally, 0, sizeof tally);
        for (; i + 4 <= n; i += 4) {
            tally[0][p[i]]++;
            tally[1][p[i + 1]]++;
            tally[2][p[i + 2]]++;
            tally[3][p[i + 3]]++;
        }
        for (unsigned t = 0; t < SP_TYPE_IDS; t++)
            count[t] += tally[0][t] + tally[1][t] + tally[2][t] + tally[3][t];
    }
    for (; i < n; i++)
        count[p[i]]++;
}

int sp_columns_open(struct sp_columns *c, const uint8_t *buf, size_t len, const uint8_t *zeros)
{
    const uint8_t *p = buf, *end = buf + len;
    uint64_t n, ntypes;
    memset(c->count, 0, sizeof c->count);
    if (sp_get_uvarint(&p, end, &n) < 0 || n > (uint64_t)(end - p))
        return SP_E_CORRUPT;
    c->types = p;
    c->n = (uint32_t)n;
    c->next = 0;
    c->io_plain = c->io_counted = 0;
    const uint8_t *types = p;
    p += n;
    uint8_t ids[SP_TYPE_IDS] = {0};
    if (sp_get_uvarint(&p, end, &ntypes) < 0 || ntypes >= SP_TYPE_IDS ||
        open_table(c, p, end, ntypes, zeros, ids) < 0)
        return SP_E_CORRUPT;
    uint32_t from = 0;
#ifdef __SSE2__
    if (ntypes <= COUNT_TYPES_VEC) {
        from = count_four_types(c->count, types, c->n, ids);
        if (ntypes > 4)
            count_four_types(c->count, types, c->n, ids + 4);
    }
#endif
    count_types(c->count, types + from, c->n - from);
    /* Every event's type has columns: the table's types account for the
     * whole stream (type 0, or one without columns, would not). */
    uint64_t counted = 0;
    for (uint64_t i = 0; i < ntypes; i++)
        counted += c->count[ids[i]];
    return counted == c->n ? 0 : SP_E_CORRUPT;
}

/* Of the IO events of a checked path column (n varints at p, each with
 * the marks): those that are not repeats (*full) and those that hold
 * their ret (*ret). */
static void io_count_marks(const uint8_t *p, uint32_t n, uint32_t *full, uint32_t *ret)
{
    uint32_t f = 0, r = 0;
    for (uint32_t i = 0; i < n; i++) {
        f += !(*p & SP_IO_REPEAT);
        r += !(*p & SP_IO_RET_BYTES);
        while (*p++ & 0x80)
            ;
    }
    *full = f;
    *ret = r;
}

int sp_columns_check(struct sp_columns *c, unsigned type, uint64_t cols)
{
    if (type >= SP_EV_MAX || !c->count[type])
        return 0; /* not in this chunk: nothing will be read */
    unsigned k = sp_columns_of(type);
    uint64_t todo = cols & ~c->checked[type];
    uint32_t count = c->count[type], repeated = 0;
    if (type == SP_EV_IO && !c->io_plain && (cols & (IO_REPEATED_COLUMNS | 1u << IO_COL_RET))) {
        /* Which events repeat is in the path column: checked first. */
        if (!c->io_counted) {
            if (!((c->checked[type] >> IO_COL_PATH) & 1) &&
                !column_ok(c->col[type][IO_COL_PATH], c->size[type][IO_COL_PATH], count))
                return SP_E_CORRUPT;
            c->checked[type] |= UINT64_C(1) << IO_COL_PATH;
            todo &= ~(UINT64_C(1) << IO_COL_PATH);
            io_count_marks(c->col[type][IO_COL_PATH], count, &c->io_full, &c->io_ret);
            c->io_counted = 1;
        }
        repeated = IO_REPEATED_COLUMNS;
    }
    for (unsigned j = 0; j < k && todo >> j; j++)
        if ((todo >> j) & 1 &&
            !column_ok(c->col[type][j], c->size[type][j],
                       (repeated >> j) & 1 ? c->io_full : (repeated && j == IO_COL_RET ? c->io_ret : count)))
            return SP_E_CORRUPT;
    c->checked[type] |= todo;
    return 0;
}

/* ---- back to rows (tools, tests) -------------------------------------------------- */

/* Copies the next varint of a checked column to p. */
static int copy_varint(const uint8_t **col, uint8_t **p, const uint8_t *limit)
{
    const uint8_t *start = *col;
    uint64_t v;
    if (sp_column_get(col, &v) < 0 || *col - start > limit - *p)
        return SP_E_CORRUPT;
    memcpy(*p, start, (size_t)(*col - start));
    *p += *col - start;
    return 0;
}

long sp_columns_to_rows(uint8_t *out, size_t cap, const uint8_t *cols, size_t len)
{
    static __thread struct sp_columns c;
    uint8_t body[SP_EVENT_MAX_BYTES];
    /* Room for the word reads past the end, and zeros for absent columns. */
    uint8_t *copy = calloc(1, len + SP_WORD), *zeros = calloc(1, len + SP_WORD);
    long rc = copy && zeros ? 0 : SP_E_NOMEM;
    if (rc == 0) {
        memcpy(copy, cols, len);
        rc = sp_columns_open(&c, copy, len, zeros) < 0 ? SP_E_CORRUPT : 0;
    }
    for (unsigned t = 1; rc == 0 && t < SP_EV_MAX; t++)
        rc = sp_columns_check(&c, t, UINT64_MAX);
    uint8_t *o = out;
    for (uint32_t i = 0; rc == 0 && i < c.n; i++) {
        unsigned type = c.types[i];
        unsigned k = sp_columns_of(type);
        if (!k)
            continue; /* a type this build does not know: dropped */
        uint8_t *p = body;
        uint32_t skip = 0; /* a repeated IO event's missing columns */
        for (unsigned f = 0; f < k && rc == 0; f++) {
            unsigned j = type == SP_EV_IO ? io_body_columns[f] : f;
            if ((skip >> j) & 1)
                continue;
            if (type == SP_EV_IO && j == IO_COL_PATH)
                skip = io_left_out(*c.col[type][j]);
            rc = copy_varint(&c.col[type][j], &p, body + sizeof body);
        }
        size_t n = (size_t)(p - body);
        if (rc == 0 && 1 + SP_VARINT_MAX + n > (size_t)(out + cap - o))
            rc = SP_E_FULL;
        if (rc < 0)
            break;
        *o++ = (uint8_t)type;
        o = sp_put_uvarint(o, n);
        memcpy(o, body, n);
        o += n;
    }
    free(copy);
    free(zeros);
    return rc < 0 ? rc : (long)(o - out);
}
