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
 * Two passes over the rows: the first checks every event and sizes every
 * column (and adds the event to the chunk's summary, summary.h, so that
 * the compressor walks the rows once for both), the second copies.  Both run in the compressor thread, off the
 * job's path; a 128 KiB chunk takes a few tens of microseconds.
 */
#include <stdlib.h>
#include <string.h>

#include "columns.h"
#include "summary.h"

_Static_assert(sizeof(struct sp_ev_nccl) / sizeof(uint64_t) + 1 <= SP_MAX_COLUMNS,
               "SP_MAX_COLUMNS must cover the widest type");
/* The encoder stores varints a word at a time: the longest event (type,
 * two length bytes, every column at its longest) plus a word's overrun
 * fits the room the writer leaves for one event. */
_Static_assert(3 + SP_MAX_COLUMNS * SP_VARINT_MAX + SP_WORD <= SP_EVENT_MAX_BYTES,
               "SP_EVENT_MAX_BYTES must cover the longest event and a word");

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

/* What pass 1 learns.  Offsets are from the start of the rows. */
struct plan {
    uint32_t n;                /* events */
    uint32_t count[SP_EV_MAX]; /* events per type */
    uint32_t first[SP_EV_MAX]; /* where each type's events start in the grouped arrays */
    size_t data;               /* bytes of all columns: the sum of the bodies */
    uint32_t *body;            /* per event, in chunk order: its body's offset */
    uint32_t *cur, *end;       /* grouped by type: each body's cursor and end */
};

/* Pass 1: every event of a known type with a canonical length; the type
 * stream goes to `types`.  0, or -1 when the chunk must stay in rows. */
static int plan_events(struct plan *pl, const uint8_t *rows, size_t len, uint8_t *types,
                       uint32_t max_events, struct sp_summary_build *sb)
{
    const uint8_t *p = rows, *end = rows + len;
    while (p < end && *p != 0) {
        unsigned type = *p;
        uint64_t blen;
        const uint8_t *q = p + 1;
        if (!sp_columns_of(type) || pl->n == max_events)
            return -1;
        if (sp_get_uvarint(&q, end, &blen) < 0 || blen > (uint64_t)(end - q) ||
            (size_t)(q - p - 1) != varint_size(blen) || blen == 0)
            return -1;
        if (sb && sp_summary_event(sb, type, q, q + blen) < 0)
            return -1;
        types[pl->n] = (uint8_t)type;
        pl->cur[pl->n] = (uint32_t)(q + blen - rows); /* its end, for now */
        pl->body[pl->n++] = (uint32_t)(q - rows);
        pl->count[type]++;
        pl->data += blen;
        p = q + blen;
    }
    /* Grouped arrays: each type's bodies in chunk order (a counting sort). */
    uint32_t at = 0;
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        pl->first[t] = at;
        at += pl->count[t];
    }
    uint32_t fill[SP_EV_MAX];
    memcpy(fill, pl->first, sizeof fill);
    for (uint32_t i = 0; i < pl->n; i++) /* cur[] held the ends, in chunk order */
        pl->end[fill[types[i]]++] = pl->cur[i];
    memcpy(fill, pl->first, sizeof fill);
    for (uint32_t i = 0; i < pl->n; i++)
        pl->cur[fill[types[i]]++] = pl->body[i];
    return 0;
}

/* One field the word path cannot take (near the rows' end, or longer
 * than a word): copied byte by byte, within its event.  The output's new
 * end, or NULL when the field is not a varint within its event. */
static __attribute__((noinline)) uint8_t *copy_field_slow(const uint8_t *rows, uint32_t o, uint32_t end,
                                                          uint8_t *d, const uint8_t *dlimit, uint32_t *cur)
{
    if (o >= end)
        return NULL;
    size_t b = varint_bytes(rows + o, rows + end);
    if (!b || d + b > dlimit)
        return NULL;
    memcpy(d, rows + o, b);
    *cur = o + (uint32_t)b;
    return d + b;
}

/* One field of the checked loop (copy_type): event i's next varint to d.
 * The output's new end, or NULL when the chunk must stay in rows. */
static inline uint8_t *copy_field_checked(const uint8_t *rows, uint32_t *cur, const uint32_t *end, uint32_t i,
                                          uint64_t word_ok, uint8_t *d, const uint8_t *dlimit)
{
    uint32_t o = cur[i];
    if (__builtin_expect(o <= word_ok, 1)) {
        uint64_t x;
        memcpy(&x, rows + o, sizeof x);
        uint64_t stops = ~x & SP_CONT_BITS;
        if (__builtin_expect(stops != 0, 1)) {
            uint32_t b = (uint32_t)__builtin_ctzll(stops) / 8 + 1;
            if (__builtin_expect(d + b > dlimit, 0))
                return NULL; /* more than the bodies hold: fields past an event */
            memcpy(d, &x, sizeof x);
            cur[i] = o + b;
            return d + b;
        }
    }
    return copy_field_slow(rows, o, end[i], d, dlimit, &cur[i]);
}

/* Pass 2, one type: column after column, every event's next varint.  A
 * word is stored for each (up to SP_WORD bytes past the column's end,
 * which the next column or the slack overwrites).  Returns the end of
 * the type's data, with each column's size in `size`, or NULL when an
 * event's bytes are not exactly its fields.
 *
 * The common field (a varint of up to SP_WORD bytes, a word's read from
 * the rows' end) is a load, a count of its bytes and a store, with no
 * check against its event's end: an event whose fields run past its end
 * leaves its cursor past its end for good (cursors only grow), which the
 * check after the last column refuses, as it refuses bytes left over;
 * meanwhile `dlimit` (the end of all the bodies' bytes) keeps the
 * stores within the output. */
static uint8_t *copy_type(const struct plan *pl, unsigned t, const uint8_t *rows, size_t len,
                          uint8_t *d, const uint8_t *dlimit, uint32_t *size)
{
    uint32_t *cur = pl->cur + pl->first[t], *end = pl->end + pl->first[t];
    uint32_t count = pl->count[t];
    unsigned k = sp_columns_of(t);
    /* A word can be read at o when o <= word_ok (none when len < SP_WORD). */
    const uint64_t word_ok = len >= SP_WORD ? len - SP_WORD : 0;
    const int words = len >= SP_WORD;
    /* Events [0, safe) may be read a word at a time in every column:
     * their bodies start far enough from the rows' end (a cursor moves at
     * most SP_VARINT_MAX bytes a column; bodies are in chunk order, so
     * only a few last events are left out). */
    uint32_t safe = count;
    while (safe > 0 && (uint64_t)cur[safe - 1] + (uint64_t)k * SP_VARINT_MAX > word_ok)
        safe--;
    for (unsigned c = 0; c < k && words; c++) {
        uint8_t *start = d;
        uint32_t i = 0;
        /* In runs of as many events as the output has room for a word
         * each: no field then needs either check of the loop below (which
         * would refuse nothing there). */
        while (i < safe) {
            size_t room = (size_t)(dlimit - d);
            size_t fit = room >= 2 * SP_WORD ? (room - SP_WORD) / SP_WORD : 0;
            if (!fit)
                break;
            uint32_t stop = safe - i < fit ? safe : i + (uint32_t)fit;
            for (; i < stop; i++) {
                uint32_t o = cur[i];
                uint64_t x;
                memcpy(&x, rows + o, sizeof x);
                uint64_t stops = ~x & SP_CONT_BITS;
                if (__builtin_expect(stops == 0, 0))
                    break;
                uint32_t b = (uint32_t)__builtin_ctzll(stops) / 8 + 1;
                memcpy(d, &x, sizeof x);
                d += b;
                cur[i] = o + b;
            }
            if (i < stop) { /* longer than a word (a 64-bit hash): checked, then a new run */
                d = copy_field_checked(rows, cur, end, i++, word_ok, d, dlimit);
                if (!d)
                    return NULL;
            }
        }
        for (; i < count; i++) {
            d = copy_field_checked(rows, cur, end, i, word_ok, d, dlimit);
            if (!d)
                return NULL;
        }
        size[c] = (uint32_t)(d - start);
    }
    for (unsigned c = 0; c < k && !words; c++) { /* rows shorter than a word */
        uint8_t *start = d;
        for (uint32_t i = 0; i < count && d; i++)
            d = copy_field_slow(rows, cur[i], end[i], d, dlimit, &cur[i]);
        if (!d)
            return NULL;
        size[c] = (uint32_t)(d - start);
    }
    for (uint32_t i = 0; i < count; i++)
        if (cur[i] != end[i])
            return NULL; /* bytes beyond the fields this build knows, or fields past the event */
    return d;
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

/* Layout while building: the type stream at out + SP_VARINT_MAX (n's
 * varint is not known yet), the columns after room for the largest
 * table; both move down once n and the table are written. */
size_t sp_columns_from_rows(uint8_t *out, size_t cap, const uint8_t *rows, size_t len,
                            uint32_t *scratch, struct sp_summary_build *sb)
{
    uint32_t max_events = (uint32_t)(len / SP_COLUMNS_MIN_EVENT + 1);
    struct plan pl = {.body = scratch, .cur = scratch + max_events, .end = scratch + 2 * (size_t)max_events};
    uint8_t *types = out + SP_VARINT_MAX;
    if (len + SP_VARINT_MAX > cap || plan_events(&pl, rows, len, types, max_events, sb) < 0 ||
        pl.n == 0)
        return 0;
    size_t head = SP_VARINT_MAX + pl.n + table_bound(&pl, len);
    if (head + pl.data > cap)
        return 0;
    static __thread uint32_t size[SP_EV_MAX][SP_MAX_COLUMNS];
    uint8_t *data = out + head, *d = data;
    for (unsigned t = 1; t < SP_EV_MAX && d; t++)
        if (pl.count[t])
            d = copy_type(&pl, t, rows, len, d, data + pl.data, size[t]);
    if (!d)
        return 0;
    /* n, the type stream and the table, then the columns right after. */
    uint8_t *p = sp_put_uvarint(out, pl.n);
    memmove(p, types, pl.n);
    p = put_table(p + pl.n, &pl, (const uint32_t(*)[SP_MAX_COLUMNS])size);
    memmove(p, data, (size_t)(d - data));
    return (size_t)(p - out) + (size_t)(d - data);
}

/* ---- reading ---------------------------------------------------------------------- */

int sp_column_get_long(const uint8_t **pp, uint64_t *out)
{
    /* The column's check guarantees a last byte within it: the loop stops
     * there, or at SP_VARINT_MAX bytes. */
    return sp_get_uvarint_long(pp, *pp + SP_VARINT_MAX, out);
}

/* Varints in [p, end): its bytes with the high bit clear. */
static uint64_t count_varints(const uint8_t *p, const uint8_t *end)
{
    uint64_t n = 0;
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

/* A column fit for unchecked reading: `count` varints, the last ending
 * with the column. */
static int column_ok(const uint8_t *p, uint64_t size, uint32_t count)
{
    if (size == 0)
        return count == 0;
    return p[size - 1] < 0x80 && count_varints(p, p + size) == count;
}

/* The table: per type its id, k, and k column sizes; columns follow the
 * table in its order.  Columns this build knows are placed and kept,
 * their varints unchecked until read (sp_columns_check); the others (a
 * newer writer's) are passed over. */
static int open_table(struct sp_columns *c, const uint8_t *p, const uint8_t *end,
                      uint64_t ntypes, const uint8_t *zeros)
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
    for (unsigned t = 1; t < SP_TYPE_IDS; t++)
        if (c->count[t] && !seen[t])
            return SP_E_CORRUPT; /* a type in the stream without columns */
    return 0;
}

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
    count_types(c->count, p, c->n);
    if (c->count[0])
        return SP_E_CORRUPT;
    p += n;
    if (sp_get_uvarint(&p, end, &ntypes) < 0 || ntypes >= SP_TYPE_IDS)
        return SP_E_CORRUPT;
    return open_table(c, p, end, ntypes, zeros);
}

int sp_columns_check(struct sp_columns *c, unsigned type, uint64_t cols)
{
    if (type >= SP_EV_MAX || !c->count[type])
        return 0; /* not in this chunk: nothing will be read */
    unsigned k = sp_columns_of(type);
    uint64_t todo = cols & ~c->checked[type];
    for (unsigned j = 0; j < k && todo >> j; j++)
        if ((todo >> j) & 1 && !column_ok(c->col[type][j], c->size[type][j], c->count[type]))
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
        for (unsigned j = 0; j < k && rc == 0; j++)
            rc = copy_varint(&c.col[type][j], &p, body + sizeof body);
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
