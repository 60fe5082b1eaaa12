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
 * column, the second copies.  Both run in the compressor thread, off the
 * job's path; a 128 KiB chunk takes a few tens of microseconds.
 */
#include <string.h>

#include "columns.h"

_Static_assert(sizeof(struct sp_ev_nccl) / sizeof(uint64_t) + 1 <= SP_MAX_COLUMNS,
               "SP_MAX_COLUMNS must cover the widest type");

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

struct sizing {
    uint32_t n;                                 /* events */
    uint32_t count[SP_EV_MAX];                  /* events per type */
    uint32_t size[SP_EV_MAX][SP_MAX_COLUMNS];   /* bytes per column */
};

/* One event's place: its type and where its body (delta, fields) lies.
 * Returns the event's total length, 0 at the end of the chunk, or -1 when
 * the event cannot be regrouped exactly. */
static long parse_row(const uint8_t *p, const uint8_t *end, unsigned *type,
                      const uint8_t **body, const uint8_t **bend)
{
    if (p >= end || *p == 0)
        return 0;
    *type = *p;
    if (!sp_columns_of(*type))
        return -1;
    size_t lb = varint_bytes(p + 1, end);
    uint64_t len;
    const uint8_t *q = p + 1;
    if (!lb || sp_get_uvarint(&q, end, &len) < 0 || len > (uint64_t)(end - q) ||
        lb != varint_size(len))
        return -1;
    *body = q;
    *bend = q + len;
    return (long)(*bend - p);
}

/* Pass 1: every event regroupable, and each column's size. */
static int size_columns(struct sizing *s, const uint8_t *rows, size_t len)
{
    const uint8_t *p = rows, *end = rows + len;
    memset(s, 0, sizeof *s);
    for (;;) {
        unsigned type;
        const uint8_t *body, *bend;
        long n = parse_row(p, end, &type, &body, &bend);
        if (n == 0)
            return 0;
        if (n < 0)
            return -1;
        unsigned k = sp_columns_of(type);
        for (unsigned c = 0; c < k; c++) {
            size_t b = varint_bytes(body, bend);
            if (!b)
                return -1;
            s->size[type][c] += (uint32_t)b;
            body += b;
        }
        if (body != bend)
            return -1; /* bytes beyond the fields this build knows */
        s->count[type]++;
        s->n++;
        p += n;
    }
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    return sp_put_uvarint(p, v);
}

/* The part before the columns: n, the type stream is left for pass 2 to
 * fill, ntypes, the table.  Returns where the type stream starts. */
static uint8_t *put_table(uint8_t *out, const struct sizing *s, uint8_t **types)
{
    uint8_t *p = put_varint(out, s->n);
    *types = p;
    p += s->n;
    unsigned ntypes = 0;
    for (unsigned t = 1; t < SP_EV_MAX; t++)
        ntypes += s->count[t] != 0;
    p = put_varint(p, ntypes);
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        if (!s->count[t])
            continue;
        unsigned k = sp_columns_of(t);
        *p++ = (uint8_t)t;
        p = put_varint(p, k);
        for (unsigned c = 0; c < k; c++)
            p = put_varint(p, s->size[t][c]);
    }
    return p;
}

/* The payload's exact size: what put_table writes, then the columns. */
static size_t payload_size(const struct sizing *s)
{
    size_t total = varint_size(s->n) + s->n, ntypes = 0;
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        if (!s->count[t])
            continue;
        unsigned k = sp_columns_of(t);
        ntypes++;
        total += 1 + varint_size(k);
        for (unsigned c = 0; c < k; c++)
            total += varint_size(s->size[t][c]) + s->size[t][c];
    }
    return total + varint_size(ntypes);
}

size_t sp_columns_from_rows(uint8_t *out, size_t cap, const uint8_t *rows, size_t len)
{
    static __thread struct sizing s; /* 1.3 KiB: off the compressor's stack */
    if (size_columns(&s, rows, len) < 0 || s.n == 0 || payload_size(&s) > cap)
        return 0;
    uint8_t *types;
    uint8_t *data = put_table(out, &s, &types);
    uint8_t *col[SP_EV_MAX][SP_MAX_COLUMNS];
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        if (!s.count[t])
            continue;
        for (unsigned c = 0; c < sp_columns_of(t); c++) {
            col[t][c] = data;
            data += s.size[t][c];
        }
    }
    /* Pass 2: the rows were checked by pass 1; copy. */
    const uint8_t *p = rows, *end = rows + len;
    for (uint32_t i = 0; i < s.n; i++) {
        unsigned type;
        const uint8_t *body, *bend;
        long n = parse_row(p, end, &type, &body, &bend);
        *types++ = (uint8_t)type;
        unsigned k = sp_columns_of(type);
        for (unsigned c = 0; c < k; c++) {
            size_t b = varint_bytes(body, bend);
            memcpy(col[type][c], body, b);
            col[type][c] += b;
            body += b;
        }
        p += n;
    }
    return (size_t)(data - out);
}

/* ---- reading ---------------------------------------------------------------------- */

int sp_column_get_slow(struct sp_column *c, uint64_t *out)
{
    if (!c->p) {
        *out = 0;
        return 0;
    }
    return sp_get_uvarint(&c->p, c->end, out);
}

/* Reads the table entry of one type; its columns start at *data. */
static int open_type(struct sp_columns *c, const uint8_t **pp, const uint8_t *end,
                     const uint8_t **data, uint8_t *seen)
{
    const uint8_t *p = *pp;
    uint64_t k, size;
    if (p >= end)
        return SP_E_CORRUPT;
    unsigned type = *p++;
    if (type == 0 || seen[type] || sp_get_uvarint(&p, end, &k) < 0 || k > SP_MAX_COLUMNS * 16u)
        return SP_E_CORRUPT;
    seen[type] = 1;
    unsigned known = sp_columns_of(type);
    for (uint64_t i = 0; i < k; i++) {
        if (sp_get_uvarint(&p, end, &size) < 0 || size > (uint64_t)(end - *data))
            return SP_E_CORRUPT;
        /* Columns beyond what this build knows (and unknown types) are
         * passed over. */
        if (i < known)
            c->col[type][i] = (struct sp_column){*data, *data + size};
        *data += size;
    }
    *pp = p;
    return 0;
}

int sp_columns_open(struct sp_columns *c, const uint8_t *buf, size_t len)
{
    const uint8_t *p = buf, *end = buf + len;
    uint64_t n, ntypes;
    memset(c->col, 0, sizeof c->col); /* absent columns read as zeros */
    if (sp_get_uvarint(&p, end, &n) < 0 || n > (uint64_t)(end - p))
        return SP_E_CORRUPT;
    c->types = p;
    c->n = (uint32_t)n;
    c->next = 0;
    p += n;
    if (sp_get_uvarint(&p, end, &ntypes) < 0 || ntypes >= SP_TYPE_IDS)
        return SP_E_CORRUPT;
    /* The columns start after the table, which must be read to find it:
     * a first pass over the table finds its end. */
    const uint8_t *q = p;
    for (uint64_t i = 0; i < ntypes; i++) {
        uint64_t k, size;
        if (q >= end)
            return SP_E_CORRUPT;
        q++;
        if (sp_get_uvarint(&q, end, &k) < 0 || k > SP_MAX_COLUMNS * 16u)
            return SP_E_CORRUPT;
        for (uint64_t j = 0; j < k; j++)
            if (sp_get_uvarint(&q, end, &size) < 0)
                return SP_E_CORRUPT;
    }
    const uint8_t *data = q;
    uint8_t seen[SP_TYPE_IDS] = {0};
    for (uint64_t i = 0; i < ntypes; i++)
        if (open_type(c, &p, end, &data, seen) < 0)
            return SP_E_CORRUPT;
    /* Every event's type must have had a table entry. */
    for (uint32_t i = 0; i < c->n; i++)
        if (c->types[i] == 0 || !seen[c->types[i]])
            return SP_E_CORRUPT;
    return 0;
}

/* ---- back to rows (tools, tests) -------------------------------------------------- */

/* Copies the next varint of column c to p (a 0 for an absent column). */
static int copy_varint(struct sp_column *c, uint8_t **p, const uint8_t *limit)
{
    size_t b = c->p ? varint_bytes(c->p, c->end) : 1;
    if (!b || b > (size_t)(limit - *p))
        return SP_E_CORRUPT;
    if (c->p)
        memcpy(*p, c->p, b);
    else
        **p = 0;
    if (c->p)
        c->p += b;
    *p += b;
    return 0;
}

long sp_columns_to_rows(uint8_t *out, size_t cap, const uint8_t *cols, size_t len)
{
    static __thread struct sp_columns c;
    uint8_t body[SP_EVENT_MAX_BYTES];
    if (sp_columns_open(&c, cols, len) < 0)
        return SP_E_CORRUPT;
    uint8_t *o = out;
    for (uint32_t i = 0; i < c.n; i++) {
        unsigned type = c.types[i];
        unsigned k = sp_columns_of(type);
        if (!k)
            continue; /* a type this build does not know: dropped */
        uint8_t *p = body;
        for (unsigned j = 0; j < k; j++)
            if (copy_varint(&c.col[type][j], &p, body + sizeof body) < 0)
                return SP_E_CORRUPT;
        size_t n = (size_t)(p - body);
        if (1 + SP_VARINT_MAX + n > (size_t)(out + cap - o))
            return SP_E_FULL;
        *o++ = (uint8_t)type;
        o = sp_put_uvarint(o, n);
        memcpy(o, body, n);
        o += n;
    }
    return (long)(o - out);
}
