/*
 * columns.h - the column layout of a compressed chunk, private to format/.
 *
 * The hot path writes events one after the other (the row layout, codec.h),
 * which is what a slot holds and what a crash leaves behind.  Before the
 * compressor hands a FULL chunk to zstd it regroups the same bytes
 * field by field: first every event's type, then, per type, the time
 * deltas of all its events side by side, then all their first fields, and
 * so on.  A compressor that sees like values together finds the repeats
 * (the same stream id, the same op, durations of the same kernel) that the
 * row layout scatters between the random low bytes of times.  The varints
 * are copied as they are: the transform neither codes nor re-codes a value,
 * so the codec memory (times from the previous event's end, DS
 * differences) means the same thing in both layouts.
 *
 * Column payload (docs/format.md, "Column layout"):
 *
 *   n          varint: events in the chunk
 *   types      n bytes, each event's type in the chunk's order
 *   ntypes     varint: types that occur
 *   table      per type, in increasing id order: the id (1 byte), k
 *              (varint: its columns, the delta then its fields in schema
 *              order), and k varints, each column's size in bytes
 *   data       the columns, in the table's order
 *
 * The length varint of each row event is dropped: the reader never needs
 * it, since a type's columns say how many fields it has.  A type with
 * more columns than this reader knows (fields appended by a newer writer)
 * keeps the extra ones unread; a type with fewer (an older writer) reads
 * 0 for the missing fields, as in the row layout; a type this reader does
 * not know is skipped with its columns unread.  Skipping any type, known
 * or not, cannot disturb another: each type's codec memory is only read
 * and written by events of that type.
 *
 * The reader decodes straight from the columns (reader.c, a block of one
 * type's events at a time): one cursor per column, each bounded by its
 * column's end, so a corrupt payload can end the chunk early but never
 * read outside it.
 */
#ifndef SP_COLUMNS_H
#define SP_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "sprof.h"

/* The most columns of any known type (nccl: delta + 17 fields), rounded
 * up; a static assertion in columns.c keeps it true. */
#define SP_MAX_COLUMNS 24
/* Type ids fit one byte. */
#define SP_TYPE_IDS 256

/* Columns of each known type: its time delta plus its fields. */
#define SP_X_ONE_COLUMN(kind, field) +1
static inline unsigned sp_columns_of(unsigned type)
{
    switch (type) {
#define SP_X_NCOL(id, NAME, name, FIELDS) \
    case id:                              \
        return 1 FIELDS(SP_X_ONE_COLUMN);
        SP_EVENTS(SP_X_NCOL)
#undef SP_X_NCOL
    default:
        return 0;
    }
}

/* Rows -> columns, in the compressor.  Writes the column payload of the
 * row chunk [rows, rows + len) to `out` and returns its size, or 0 when
 * the chunk should stay in rows: it holds an event this build cannot
 * regroup exactly (a type it does not know, an event whose length is not
 * exactly its fields), or the payload would exceed `cap`.  `out` must
 * have SP_COLUMNS_SLACK bytes of room past `cap`, and `scratch`
 * SP_COLUMNS_SCRATCH(len) bytes: the columns are built there, each in
 * room for the most it can hold, then copied behind the table.  `sb`
 * (begun by the caller, summary.h; required): the pass that copies the
 * fields also adds each event to that summary: when the result is not 0,
 * `sb` holds the chunk's summary (else it is incomplete, and the caller
 * builds it from the rows). */
struct sp_summary_build;
/* The scratch's bound.  Each column of a type with k columns holds at
 * most SP_VARINT_MAX bytes per event, and at most its events' bodies less
 * a byte for each of their k - 1 other varints; the sum over the k
 * columns, against the rows the events take (a body of at least k bytes,
 * a type and a length byte), is largest for bodies of k + 9 bytes:
 * SP_VARINT_MAX * k / (k + SP_VARINT_MAX + 1) times the rows, under 7
 * for k up to SP_MAX_COLUMNS.  Then each column's slack (a field is moved
 * 16 bytes at a time, twice that is kept) and a word for the rounding. */
#define SP_COLUMNS_COLUMN_SLACK 32
#define SP_COLUMNS_SCRATCH(len)                                                      \
    ((len) / (SP_MAX_COLUMNS + SP_VARINT_MAX + 1) * SP_VARINT_MAX * SP_MAX_COLUMNS + \
     (size_t)SP_EV_MAX * SP_MAX_COLUMNS * (SP_COLUMNS_COLUMN_SLACK + SP_WORD))
#define SP_COLUMNS_SLACK 8
size_t sp_columns_from_rows(uint8_t *out, size_t cap, const uint8_t *rows, size_t len,
                            uint8_t *scratch, struct sp_summary_build *sb);

/* The columns of one chunk, being read.  A cursor reads a column only
 * once sp_columns_check has found that it holds exactly one varint per
 * event of its type (its bytes with the high bit clear are that many, the
 * last one among them): it then never leaves its column, and needs no
 * bound.  Opening places every column inside the payload but checks the
 * varints of none; each column is checked the first time a mask lets it
 * be read, so the columns a reader never reads cost nothing.  The buffers
 * hold SP_WORD readable bytes past the payload, so a varint is read a
 * word at a time even at the end of the last column. */
struct sp_columns {
    const uint8_t *types;                     /* the type stream */
    uint32_t n, next;                         /* events, and the next one to decode */
    uint32_t count[SP_TYPE_IDS];              /* events per type id */
    uint64_t checked[SP_EV_MAX];              /* bit j: column j is fit to read */
    uint32_t size[SP_EV_MAX][SP_MAX_COLUMNS]; /* bytes of each column */
    const uint8_t *col[SP_EV_MAX][SP_MAX_COLUMNS];
    /* IO columns as version 3 wrote them, every field of every event: set
     * by a reader of an older trace after sp_columns_open (which clears
     * it).  Else a repeated IO event (codec.h) has no varint in the
     * columns of the six fields it repeats, which hold io_full varints:
     * the IO events that are not repeats; and an IO event whose result is
     * its size none in ret's, which holds io_ret.  Both are counted from
     * the path column (its marks) once it is checked (io_counted). */
    uint32_t io_plain, io_counted, io_full, io_ret;
};

/* Sets `c` up to decode the column payload [buf, buf + len), which is
 * followed by SP_WORD readable bytes.  `zeros` (as many zero bytes as the
 * payload's events, + SP_WORD) stands in for the columns an older writer
 * did not have: they read as 0.  0, or SP_E_CORRUPT when the table does
 * not describe the bytes (a column outside the payload, a type in the
 * stream without a table entry).  No column is fit to read yet: see
 * sp_columns_check. */
int sp_columns_open(struct sp_columns *c, const uint8_t *buf, size_t len, const uint8_t *zeros);

/* Makes the columns of `type` in `cols` (bit j: column j, the delta
 * being column 0) fit to read, checking those not checked before.  0, or
 * SP_E_CORRUPT when one holds the wrong number of varints. */
int sp_columns_check(struct sp_columns *c, unsigned type, uint64_t cols);

/* Out of line: a varint longer than a word (SP_E_CORRUPT past 64 bits). */
int sp_column_get_long(const uint8_t **pp, uint64_t *out);

/* The next varint of a checked column: one byte, two, three, four, else
 * the word's, else the long loop (only varints past 8 bytes).  Three
 * bytes have a case of their own: kernel and copy durations (16 us to 2
 * ms) are three bytes in every GPU event, and the word's path took twice
 * the instructions; four bytes too: a time delta of 1 to 134 ms (from
 * one NCCL call to the next, a launch after a wait) is four, and the
 * word's path took three times the instructions.  The cursor is copied
 * for the long loop alone, so that a caller's cursor can stay in a
 * register. */
#define SP_COLUMN_BYTE3_STOP 0x800000u
#define SP_COLUMN_BYTE4_STOP 0x80000000u
static inline __attribute__((always_inline)) int sp_column_get(const uint8_t **pp, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t x;
    unsigned len;
    memcpy(&x, p, sizeof x);
    if (__builtin_expect(!(x & 0x80), 1)) {
        *out = x & 0x7f;
        *pp = p + 1;
        return 0;
    }
    if (!(x & 0x8000)) {
        *out = (x & 0x7f) | ((x >> 1) & 0x3f80);
        *pp = p + 2;
        return 0;
    }
    if (!(x & SP_COLUMN_BYTE3_STOP)) {
        *out = (x & 0x7f) | ((x >> 1) & 0x3f80) | ((x >> 2) & 0x1fc000);
        *pp = p + 3;
        return 0;
    }
    if (!(x & SP_COLUMN_BYTE4_STOP)) {
        *out = (x & 0x7f) | ((x >> 1) & 0x3f80) | ((x >> 2) & 0x1fc000) | ((x >> 3) & 0xfe00000);
        *pp = p + 4;
        return 0;
    }
    *out = sp_varint_from_word(x, &len);
    if (__builtin_expect(len == 0, 0)) {
        const uint8_t *q = p;
        int rc = sp_column_get_long(&q, out);
        *pp = q;
        return rc;
    }
    *pp = p + len;
    return 0;
}

#endif
